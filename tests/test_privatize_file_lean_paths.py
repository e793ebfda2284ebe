"""The lean file paths (no pandas, labels matched per dictionary entry or by polars)
release exactly what the general paths release.

* A text dictionary's entries are matched against the labels in Python: the input
  indices equal a brute-force lookup of every row's text, and a row holding anything
  but a label hands the chunk to the encoder (which counts every problem).
* A text chunk's input indices found by one comparison per label, or by the rows'
  lengths and one comparison of the bytes (labels of distinct UTF-8 lengths), equal a
  brute-force lookup, on sliced chunks and lookalike values.
* The Arrow arrays built from buffers equal ``pyarrow.array`` of the same values.
* The polars engine matches text labels by a strict Enum cast and gathers the released
  labels as polars strings: under one seed it releases what the pyarrow engine releases,
  on labels that only look alike (decomposed accents, trailing spaces, the empty
  string), and it refuses unknown or missing values with the pyarrow engine's message.
* Privatising a CSV file, or a Parquet file with the polars engine, with text labels
  does not import pandas (about 0.3 s in a fresh process); the output is hashed as it is
  written by either engine.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit.errors import DataError
from pmlkit.io import text_array, text_scalar
from pmlkit.privatization import files as F
from pmlkit.sampler import Encoder

#: labels that only look alike: a decomposed accent, a trailing space, the empty string
LABELS = ("F", "M", "é", "F ", "", "a,b", 'q"t', "日本")
#: text that is not a label although it looks like one
NOT_LABELS = ("e\u0301", "f", " F", "M\n", "\x00", "日")


@st.composite
def dictionary_chunks(draw: st.DrawFn) -> pa.Array:
    pool = draw(st.lists(st.sampled_from(LABELS + NOT_LABELS), min_size=1, max_size=6,
                         unique=True))
    n = draw(st.integers(0, 40))
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))
    itype = draw(st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64()]))
    vtype = draw(st.sampled_from([pa.string(), pa.large_string()]))
    arr = pa.DictionaryArray.from_arrays(pa.array(idx, type=itype),
                                         pa.array(pool, type=vtype))
    lo = draw(st.integers(0, n))
    return arr.slice(lo, draw(st.integers(0, n - lo)))


@settings(max_examples=80, deadline=None)
@given(dictionary_chunks())
def test_dictionary_codes_equal_a_brute_force_lookup(arr: pa.Array) -> None:
    values = arr.to_pylist()
    enc = Encoder(LABELS)
    got = F._dictionary_codes(enc, arr)
    if all(v in LABELS for v in values):
        assert got is not None
        assert got.tolist() == [LABELS.index(v) for v in values]
    else:
        assert got is None  # the encoder then sees the chunk and counts the problems
    assert not enc.failed  # nothing is counted here


def test_dictionary_codes_leave_other_chunks_to_the_encoder() -> None:
    enc = Encoder(LABELS)
    with_null = pa.DictionaryArray.from_arrays(pa.array([0, None], pa.int32()),
                                               pa.array(["F"]))
    assert F._dictionary_codes(enc, with_null) is None
    assert F._dictionary_codes(enc, pa.array(["F", "M"])) is None  # not a dictionary
    ints = Encoder((1, 2))
    as_ints = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array([1, 2]))
    assert F._dictionary_codes(ints, as_ints) is None
    unsigned = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.uint8()),
                                              pa.array(["F", "M"]))
    assert F._dictionary_codes(enc, unsigned) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=12), st.sampled_from(["s", "l"]))
def test_text_array_equals_pyarrow_array(values: list[str], kind: str) -> None:
    typ = pa.string() if kind == "s" else pa.large_string()
    try:
        expected = pa.array(values, type=typ)
    except (pa.ArrowException, UnicodeEncodeError) as exc:  # lone surrogates
        with pytest.raises(type(exc)):
            text_array(values, typ)
        return
    got = text_array(values, typ)
    assert got.type == typ and got.equals(expected)
    for v in values[:3]:
        assert text_scalar(v, typ).equals(pa.scalar(v, type=typ))
    assert text_scalar(None, typ).equals(pa.scalar(None, type=typ))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), max_size=70), st.integers(0, 9))
def test_masks_and_indices_equal_pyarrow(mask: list[bool], lo: int) -> None:
    m = np.array(mask, dtype=bool)
    assert F._mask_array(m).equals(pa.array(m))
    sliced = pa.array(m).slice(min(lo, len(m)))
    assert F._mask_numpy(sliced).tolist() == mask[min(lo, len(m)):]
    idx = np.arange(len(mask), dtype=np.intp)[::-1]
    assert F._index_array(idx).equals(pa.array(idx, type=pa.int64()))


def _mech(labels: tuple[str, ...] = LABELS) -> pmlkit.Mechanism:
    g = np.random.default_rng(5)
    w = g.dirichlet(np.ones(len(labels)), size=len(labels))
    return pmlkit.Mechanism(w, labels, labels)


def _parquet(path: Path, sex: list[str | None], row_group: int = 500) -> Path:
    n = len(sex)
    table = pa.table({"id": pa.array(np.arange(n)), "sex": pa.array(sex, pa.string()),
                      "x": pa.array(np.linspace(0, 1, n))})
    pq.write_table(table, path, row_group_size=row_group, compression="snappy")
    return path


#: label sets matched by an Enum cast (8 labels) and by one comparison per label (3, 1)
LABEL_SETS = [LABELS, ("é", "", "F "), ("F ",)]


@pytest.mark.parametrize("labels", LABEL_SETS)
def test_polars_engine_releases_what_pyarrow_releases_on_lookalike_labels(tmp_path, labels):
    pytest.importorskip("polars")
    g = np.random.default_rng(2)
    sex = [labels[i] for i in g.integers(0, len(labels), 4000)]
    src = _parquet(tmp_path / "in.parquet", sex)
    outs = {}
    for engine in ("pyarrow", "polars"):
        out = tmp_path / f"{engine}.parquet"
        rep = F.privatize_file(_mech(labels), src, out, "sex", rng=11, engine=engine,
                               batch_rows=700)
        doc = json.loads(Path(str(out) + ".pmlkit.json").read_text())
        assert doc["writer"] == engine
        data = out.read_bytes()  # the digest is that of the published bytes
        assert (doc["data"]["sha256"], doc["data"]["bytes"]) == (
            hashlib.sha256(data).hexdigest(), len(data))
        outs[engine] = pq.read_table(out)
        assert rep.rows == 4000
    assert outs["polars"].equals(outs["pyarrow"])
    assert set(outs["polars"].column("sex").to_pylist()) <= set(labels)
    assert outs["polars"].column("id").equals(pq.read_table(src).column("id"))


@pytest.mark.parametrize("labels", LABEL_SETS[:2])
@pytest.mark.parametrize("bad", ["e\u0301", None])
def test_polars_engine_refuses_like_pyarrow(tmp_path, bad, labels):
    """An unknown value (a decomposed accent is not the label ``é``) or a missing value
    in a late chunk: both engines refuse with the same message and leave nothing."""
    pytest.importorskip("polars")
    sex: list[str | None] = [labels[i % len(labels)] for i in range(3000)]
    sex[2500] = bad
    sex[2900] = bad
    src = _parquet(tmp_path / "in.parquet", sex, row_group=300)  # chunks of 400 span groups
    messages = []
    for engine in ("pyarrow", "polars"):
        out = tmp_path / f"{engine}.parquet"
        with pytest.raises(DataError) as info:
            F.privatize_file(_mech(labels), src, out, "sex", rng=1, engine=engine,
                             batch_rows=400)
        messages.append(str(info.value))
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]
    assert messages[0] == messages[1]
    assert "2" in messages[0]  # both rows counted


_NO_PANDAS = textwrap.dedent("""
    import sys
    import numpy as np
    import pmlkit
    from pmlkit.privatization import privatize_file
    src, dst, engine = sys.argv[1], sys.argv[2], sys.argv[3]
    m = pmlkit.Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("F", "M"), ("F", "M"))
    privatize_file(m, src, dst, "sex", engine=engine, batch_rows=1000)
    print("pandas" in sys.modules, "pyarrow.compute" in sys.modules)
""")


@pytest.mark.parametrize("fmt,engine", [("csv", "pyarrow"), ("parquet", "polars")])
def test_text_labels_do_not_import_pandas(tmp_path, fmt, engine):
    """pyarrow.array and pyarrow.scalar on Python objects import pandas (~0.3 s); a CSV
    file is privatised without importing pyarrow.compute either (45-70 ms)."""
    if engine == "polars":
        pytest.importorskip("polars")
    rows = [("F", "M")[i % 3 == 0] for i in range(5000)]
    if fmt == "csv":
        src = tmp_path / "in.csv"
        src.write_text("id,sex\n" + "".join(f"{i},{s}\n" for i, s in enumerate(rows)))
    else:
        src = _parquet(tmp_path / "in.parquet", list(rows))
    dst = tmp_path / f"out.{fmt}"
    proc = subprocess.run([sys.executable, "-c", _NO_PANDAS, str(src), str(dst), engine],
                          capture_output=True, text=True, check=True)
    pandas, compute = proc.stdout.split()
    assert pandas == "False"
    if fmt == "csv":
        assert compute == "False"
    assert dst.exists()


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(LABELS + NOT_LABELS + ("Female", "Male", "Femal", "Mal")),
                max_size=40),
       st.sampled_from([LABELS[:1], LABELS[:3], LABELS[2:8],
                        # labels of distinct byte lengths: matched by length, then bytes
                        ("Female", "Male"), ("", "F ", "a,b", "日本"), ("é", "e\u0301x")]),
       st.booleans(), st.integers(0, 3))
def test_equality_codes_equal_a_brute_force_lookup(values, labels, wide, lo) -> None:
    arr = pa.array(values, type=pa.large_string() if wide else pa.string())
    arr = arr.slice(min(lo, len(values)))  # a chunk that does not start at offset 0
    values = values[min(lo, len(values)):]
    got = F._equality_codes(labels, arr)
    if all(v in labels for v in values):
        assert got is not None and got.tolist() == [labels.index(v) for v in values]
    else:
        assert got is None
    with_null = pa.array([*values, None], type=arr.type)
    assert F._equality_codes(labels, with_null) is None


def _csv(path: Path, cells: list[str]) -> Path:
    path.write_text("id,sex,c\n" + "".join(f"{i},{v},x{i % 7}\n" for i, v in
                                          enumerate(cells)))
    return path


@pytest.mark.parametrize("case", ["plain", "empty_label_null_marker", "empty_label_kept",
                                  "unknown_and_missing"])
def test_csv_comparison_path_equals_the_general_path(tmp_path, monkeypatch, case):
    """Under one seed the in-place CSV column released by one comparison per label equals
    the general path's release (the dictionary read, policy and encoder), byte for byte,
    or both refuse with the same message; a label that is a null marker (the empty
    cell, by default) keeps the general path, so the empty cell is missing, not a label."""
    from pmlkit.io import CsvOptions

    labels = ("F", "M", "") if case.startswith("empty") else ("F", "M", "X")
    g = np.random.default_rng(4)
    cells = [labels[i] for i in g.integers(0, len(labels), 3000)]
    if case == "unknown_and_missing":
        cells[2500] = cells[2900] = "Nope"
        cells[100] = ""
    csv = CsvOptions(null_values=("NA",)) if case == "empty_label_kept" else None
    src = _csv(tmp_path / "in.csv", cells)
    results = []
    for equality in (6, 0):  # 0: no column qualifies, the general path
        monkeypatch.setattr(F, "_EQUALITY_LABELS", equality)
        out = tmp_path / f"out{equality}.csv"
        try:
            F.privatize_file(_mech(labels), src, out, "sex", rng=3, batch_rows=700, csv=csv,
                             manifest=False)
            results.append(out.read_bytes())
        except DataError as exc:
            results.append(str(exc))
            assert not out.exists()
    assert results[0] == results[1]
    if case == "empty_label_null_marker":
        assert "missing" in results[0]  # an empty cell is missing, not the label ""
    elif case == "unknown_and_missing":
        assert "'Nope'" in results[0] and "2" in results[0]
    else:
        assert isinstance(results[0], bytes)
        lines = results[0].decode().splitlines()
        assert [ln.split(",")[0] for ln in lines[1:]] == [str(i) for i in range(3000)]


_KERNELS = textwrap.dedent("""
    import hashlib, sys
    import numpy as np
    import pmlkit
    from pmlkit.privatization import privatize_file
    src, dst, unknown = sys.argv[1], sys.argv[2], sys.argv[3]
    m = pmlkit.Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("F", "M"), ("F", "M"))
    privatize_file(m, src, dst, "sex", engine="polars", batch_rows=1 << 17, rng=7,
                   unknown_as=None if unknown == "-" else unknown, manifest=False)
    loaded = ["numba" in sys.modules, "pyarrow.compute" in sys.modules]
    import pyarrow.parquet as pq
    released = "".join(pq.read_table(dst).column("sex").to_pylist())
    print(*loaded, "-", hashlib.sha256(released.encode()).hexdigest())
""")


def test_polars_engine_imports_neither_numba_nor_arrow_compute(tmp_path):
    """The polars engine matching the labels itself loads no numba (the release path has
    no compiled code) and imports no pyarrow.compute (no null among the released labels);
    the released values are those of the encoder-matched run (an ``unknown_as`` policy)."""
    pytest.importorskip("polars")
    rows = [("F", "M")[i % 3 == 0] for i in range(300_000)]
    src = _parquet(tmp_path / "in.parquet", rows, row_group=1 << 17)
    runs = {}
    for name, unknown in [("polars", "-"), ("encoder", "F")]:
        dst = tmp_path / f"out_{name}.parquet"
        proc = subprocess.run([sys.executable, "-c", _KERNELS, str(src), str(dst), unknown],
                              capture_output=True, text=True, check=True)
        runs[name] = proc.stdout.split()
    assert runs["polars"][:2] == ["False", "False"]
    assert runs["encoder"][0] == "False"
    assert runs["polars"][3] == runs["encoder"][3]
