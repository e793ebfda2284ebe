"""Attacks on the compiled string paths and the lean file paths, through public interfaces.

The label matching of Arrow text (a perfect hash over the first 16 bytes, one word for
labels of at most 8 bytes, verification on every byte), the string outputs written word by
word, the text labels of a CSV column matched by plain comparisons and the polars Parquet
engine must all give exactly what the plain definitions give:

* a record's input index is a dictionary lookup of its text among the labels (a prefix,
  an extension, a record longer than every label, a null: not a label, refused);
* every released string is, byte for byte, an output label of the mechanism, of the
  input's own type; under one seed the outputs are those of the integer-code path;
* a file's untouched cells keep their bytes; its privatised column holds only labels; a
  refused file leaves nothing behind; both Parquet engines write the same table and the
  manifest's digest is that of the published bytes.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import pmlkit
from labelgen import as_list, load_kernels
from pmlkit import Mechanism
from pmlkit.errors import DataError, ValidationError

pl = pytest.importorskip("polars")
pq = pytest.importorskip("pyarrow.parquet")

#: records per array: above the size at which the compiled string kernels take over
N = 4600


@pytest.fixture(autouse=True, scope="module")
def _kernels_loaded() -> None:
    load_kernels()


# --------------------------------------------------------------------------------------
# label families built against a hash over the first 16 bytes and one-word keys
# --------------------------------------------------------------------------------------

FAMILIES: dict[str, list[str]] = {
    # every length around the 8/12/16-byte word and view boundaries, and the empty label
    "lengths": ["a" * m for m in (0, 1, 7, 8, 9, 12, 13, 16, 17, 24, 33)],
    # embedded and trailing NULs (a zero-padded word cannot tell "a" from "a\0")
    "nuls": ["", "\x00", "\x00\x00", "a", "a\x00", "a\x00\x00", "\x00a", "a\x00b"],
    # prefixes and extensions of one another across the 8- and 16-byte boundaries
    "prefixes": ["abcdefg", "abcdefgh", "abcdefghi", "abcdefghijkl", "abcdefghijklm",
                 "abcdefghijklmnop", "abcdefghijklmnopq", "abcdefghijklmnopqr"],
    # multi-byte UTF-8 straddling the word boundaries
    "unicode": ["é", "日本", "日本語", "😀", "é" * 4, "é" * 5, "x" * 7 + "é", "日" * 6],
    # 5000 eight-byte labels differing in one or two bytes (one-word keys, k up to 5000)
    "k5000": [f"{i:08d}" for i in range(5000)],
    # 300 labels with one length and the same first 16 bytes: only bytes 17.. differ
    "same16": ["P" * 16 + f"{i:03d}" for i in range(300)],
    # 2000 twelve-byte labels (inlined in string views, two words)
    "k2000": [f"lab{i:09d}" for i in range(2000)],
}

TYPES = {"string": pa.string(), "large_string": pa.large_string(),
         "string_view": pa.string_view()}


def _misses(labels: list[str]) -> list[str]:
    """Values that are no label: prefixes, extensions (a NUL, a byte), a changed last
    byte, and records longer than every label that share their first and last bytes."""
    s = set(labels)
    longest = max(len(lab) for lab in labels)
    out: list[str] = []
    for lab in labels[:6] + labels[-3:]:
        cands = [lab + "\x00", lab + "x", lab[:-1], lab[:-1] + chr(ord(lab[-1]) ^ 1)
                 if lab else "\x01", (lab[:1] or "a") + "q" * (longest + 3) + lab[-1:],
                 lab * 3 if lab else "\x00" * 17]
        out += [c for c in cands if c not in s]
    return list(dict.fromkeys(out))


def _values(labels: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [labels[int(i)] for i in rng.integers(len(labels), size=n)]


def _perm_mechanism(labels: list[str], outputs: list[str] | None = None,
                    seed: int = 0) -> tuple[Mechanism, dict[str, str]]:
    """A deterministic mechanism: label i -> output ``outputs[perm[i]]``; the released
    value shows the encoding exactly. Returns the mapping as a dict (the oracle)."""
    n = len(labels)
    outs = list(labels) if outputs is None else list(outputs)
    perm = np.random.default_rng(seed).permutation(n)
    w = np.zeros((n, n))
    w[np.arange(n), perm] = 1.0
    return (Mechanism(w, tuple(labels), tuple(outs)),
            {lab: outs[int(perm[i])] for i, lab in enumerate(labels)})


def _coarse_mechanism(labels: list[str], key: Any) -> tuple[Mechanism, dict[str, str]]:
    """A deterministic mechanism: label i -> output ``str(key(i))`` (fewer outputs)."""
    outs = sorted({str(key(i)) for i in range(len(labels))})
    col = {o: j for j, o in enumerate(outs)}
    w = np.zeros((len(labels), len(outs)))
    for i in range(len(labels)):
        w[i, col[str(key(i))]] = 1.0
    return (Mechanism(w, tuple(labels), tuple(outs)),
            {lab: str(key(i)) for i, lab in enumerate(labels)})


_MECHS: dict[str, list[tuple[Mechanism, dict[str, str]]]] = {}


def _family_mechanisms(fam: str) -> list[tuple[Mechanism, dict[str, str]]]:
    """Mechanisms whose releases together show every record's label index exactly: a
    permutation, or for thousands of labels (a dense k x k matrix is slow to build) two
    coarse maps, ``i % 100`` and ``i // 50``, which together determine ``i``."""
    if fam not in _MECHS:
        labels = FAMILIES[fam]
        if len(labels) <= 1000:
            _MECHS[fam] = [_perm_mechanism(labels)]
        else:
            _MECHS[fam] = [_coarse_mechanism(labels, lambda i: i % 100),
                           _coarse_mechanism(labels, lambda i: i // 50)]
    return _MECHS[fam]


def _exact_buffers(values: list[str | None], typ: Any) -> Any:
    """An Arrow text array built from buffers of exactly the data's size (no padding: the
    last record ends on the last byte of the buffer), offsets starting at 5."""
    raw = [b"" if v is None else v.encode() for v in values]
    data = b"\xff" * 5 + b"".join(raw)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in raw])]) + 5
    offsets = offsets.astype(np.int64 if typ == pa.large_string() else np.int32)
    valid = None
    if any(v is None for v in values):
        bits = np.packbits(np.array([v is not None for v in values]), bitorder="little")
        valid = pa.py_buffer(bits.tobytes())
    arr = pa.Array.from_buffers(typ, len(values), [valid, pa.py_buffer(offsets.tobytes()),
                                                   pa.py_buffer(data)])
    arr.validate(full=True)
    return arr


def _container(layout: str, values: list[Any], typ: Any) -> Any:
    if layout == "plain":
        return pa.array(values, type=typ)
    if layout == "sliced":  # offset 3 into an array whose hidden ends are not labels
        return pa.array(["\x02pad"] * 3 + values + ["\x02pad"] * 2, type=typ).slice(
            3, len(values))
    if layout == "chunked":  # empty chunks around two chunks both above the threshold
        h = len(values) // 2
        return pa.chunked_array([pa.array([], type=typ), pa.array(values[:h], type=typ),
                                 pa.array([], type=typ), pa.array(values[h:], type=typ)],
                                type=typ)
    if layout == "exact":
        if typ == pa.string_view():
            return pa.array(values, type=typ)
        return _exact_buffers(values, typ)
    raise AssertionError(layout)


@pytest.mark.parametrize("layout", ["plain", "sliced", "chunked", "exact"])
@pytest.mark.parametrize("typ", list(TYPES))
@pytest.mark.parametrize("fam", list(FAMILIES))
def test_arrow_text_encodes_as_a_dict_lookup(fam: str, typ: str, layout: str) -> None:
    """Every record gets the output of its own label (dict lookup), the output keeps the
    input's Arrow type, its length and its chunk layout kind."""
    values = _values(FAMILIES[fam], N, seed=len(fam))
    arr = _container(layout, values, TYPES[typ])
    for mech, mapping in _family_mechanisms(fam):
        out = pmlkit.privatize(mech, arr, rng=0)
        assert type(out) is type(arr) and out.type == TYPES[typ]
        got = out.to_pylist()
        want = [mapping[v] for v in values]
        bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
        assert not bad, (bad[:5], [(values[i], got[i], want[i]) for i in bad[:3]])


@pytest.mark.parametrize("typ", list(TYPES))
@pytest.mark.parametrize("fam", list(FAMILIES))
def test_arrow_text_near_misses_refused(fam: str, typ: str) -> None:
    """A value that is no label is refused wherever it sits: first record, last record
    (the end of the data buffer, in exactly sized buffers too), among many labels."""
    mech = _family_mechanisms(fam)[0][0]
    base = _values(FAMILIES[fam], N, seed=1)
    for miss in _misses(FAMILIES[fam]):
        for pos in (0, N - 1):
            values = list(base)
            values[pos] = miss
            layouts = ("plain", "exact") if pos == N - 1 else ("plain",)
            for layout in layouts:
                arr = _container(layout, values, TYPES[typ])
                with pytest.raises(DataError, match="not an input label"):
                    pmlkit.privatize(mech, arr, rng=0)


@pytest.mark.parametrize("typ", list(TYPES))
def test_arrow_nulls_refused_even_when_empty_is_a_label(typ: str) -> None:
    """A null record (empty in the data buffer, its validity bit at an odd offset) is a
    missing value, never the label "" nor label 0: refused as missing."""
    labels = ["", "a", "b" * 9, "c" * 17]
    mech, _ = _perm_mechanism(labels)
    for pos in (0, 7, 4097, N - 1):
        values: list[str | None] = list(_values(labels, N, seed=pos))
        values[pos] = None
        padded = pa.array([None, "a", None, *values, "", None], type=TYPES[typ])
        for arr in (padded.slice(3, N), pa.array(values, type=TYPES[typ])):
            with pytest.raises(DataError, match="null/missing"):
                pmlkit.privatize(mech, arr, rng=0)
        if typ != "string_view":
            with pytest.raises(DataError, match="null/missing"):
                pmlkit.privatize(mech, _exact_buffers(values, TYPES[typ]), rng=0)


def test_forged_string_view_padding_is_not_trusted() -> None:
    """Views whose inline bytes past the length hold garbage: only the length's bytes
    count ("F" + garbage is "F"; a view of length 2 whose first byte is "F" is no label)."""
    mech, mapping = _perm_mechanism(["F", "M", "FF"])
    n = N
    views = np.zeros((n, 2), dtype="<u8")
    rng = np.random.default_rng(3)
    is_f = rng.random(n) < 0.5
    garbage = rng.integers(0, 2**63, size=n, dtype=np.uint64) << np.uint64(8)
    words = [np.frombuffer(x.ljust(8, b"\0"), dtype="<u8")[0] for x in (b"F", b"M")]
    first = np.where(is_f, words[0], words[1]) | garbage  # bytes 0..7 of the string
    views[:, 0] = np.uint64(1) | (first << np.uint64(32))
    views[:, 1] = (first >> np.uint64(32)) | (garbage << np.uint64(7))
    arr = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views.tobytes())])
    assert arr.to_pylist() == ["F" if f else "M" for f in is_f]
    got = pmlkit.privatize(mech, arr, rng=0).to_pylist()
    assert got == [mapping["F" if f else "M"] for f in is_f]
    fx = (first[5] & ~np.uint64(0xFF00)) | np.uint64(ord("x") << 8)  # "F" + "x" + garbage
    views[5, 0] = np.uint64(2) | (fx << np.uint64(32))  # two bytes: "Fx" (or "Mx")
    views[5, 1] = (fx >> np.uint64(32)) | (views[5, 1] & ~np.uint64(0xFFFFFFFF))
    bad = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views.tobytes())])
    assert bad.to_pylist()[5] not in mapping
    # (a record that is no label: the general path validates the array first, and Arrow
    # calls non-zero padding invalid)
    with pytest.raises(DataError, match="not a valid Arrow string_view array"):
        pmlkit.privatize(mech, bad, rng=0)


# --------------------------------------------------------------------------------------
# outputs: labels byte for byte, the input's type, the integer path's values
# --------------------------------------------------------------------------------------

_IN_LABELS = ["lo", "mid", "hi", "x" * 9, "y" * 17, "é", ""]
#: output labels of every length 0..40, NULs, multi-byte text
_OUT_LABELS = ["", "\x00", "a", "a\x00", "1234567", "12345678", "123456789", "日本語",
               "é" * 6, "z" * 12, "z" * 13, "q" * 16, "q" * 17, "w" * 40, "o\x00\x00k"]


def _rr(k: int, m: int, seed: int) -> np.ndarray:
    w = np.random.default_rng(seed).random((k, m)) + 0.05
    return np.asarray(w / w.sum(axis=1, keepdims=True))


def _string_inputs(kind: str, values: list[str]) -> Any:
    if kind in TYPES:
        return pa.array(values, type=TYPES[kind])
    if kind == "chunked_large":
        return pa.chunked_array([pa.array(values[:4100], type=pa.large_string()),
                                 pa.array([], type=pa.large_string()),
                                 pa.array(values[4100:], type=pa.large_string())])
    if kind == "pandas_pyarrow":
        return pd.Series(values, dtype="string[pyarrow]")
    if kind == "pandas_python":
        return pd.Series(values, dtype="string[python]")
    if kind == "polars_string":
        return pl.Series("s", values, dtype=pl.String)
    if kind == "polars_categorical":
        return pl.Series("s", values, dtype=pl.Categorical)
    if kind == "polars_enum":
        return pl.Series("s", values, dtype=pl.Enum([*_IN_LABELS, "unused"]))
    if kind == "object":
        a = np.empty(len(values), dtype=object)
        a[:] = values
        return a
    if kind == "list":
        return list(values)
    raise AssertionError(kind)


def _type_of(x: Any) -> Any:
    if isinstance(x, pa.Array | pa.ChunkedArray):
        return (type(x), x.type)
    if isinstance(x, pl.Series):
        return (type(x), x.dtype == pl.String, x.dtype == pl.Categorical,
                isinstance(x.dtype, pl.Enum))
    if isinstance(x, pd.Series):
        return (type(x), str(x.dtype))
    if isinstance(x, np.ndarray):
        return (type(x), x.dtype)
    return type(x)


STRING_KINDS = [*TYPES, "chunked_large", "pandas_pyarrow", "pandas_python",
                "polars_string", "polars_categorical", "polars_enum", "object", "list"]


@pytest.mark.parametrize("outs", ["short", "mixed"])
@pytest.mark.parametrize("kind", STRING_KINDS)
def test_string_outputs_are_labels_of_the_integer_release(kind: str, outs: str) -> None:
    """Under one seed a string container releases, position by position, the output
    label of the integer-code release (the seed contract); every released string is an
    output label byte for byte (compared as UTF-8 bytes); the container keeps its type,
    name and length and has no nulls."""
    out_labels = _OUT_LABELS[:7] if outs == "short" else _OUT_LABELS
    k, m = len(_IN_LABELS), len(out_labels)
    w = _rr(k, m, seed=m)
    n = 70_000 if kind in ("object", "list") else 9000  # (object outputs: a bulk take)
    codes = np.random.default_rng(4).integers(k, size=n)
    values = [_IN_LABELS[int(c)] for c in codes]
    ref = np.asarray(pmlkit.privatize(Mechanism(w), codes, rng=21))
    want = [out_labels[int(j)] for j in ref]
    mech = Mechanism(w, tuple(_IN_LABELS), tuple(out_labels))
    x = _string_inputs(kind, values)
    out = pmlkit.privatize(mech, x, rng=21)
    got = as_list(out)
    assert len(got) == n and None not in got
    allowed = {lab.encode() for lab in out_labels}
    assert all(isinstance(g, str) and g.encode() in allowed for g in got)
    bad = [i for i in range(n) if got[i] != want[i]]
    assert not bad, (bad[:5], [(got[i], want[i]) for i in bad[:3]])
    if kind != "list":
        if isinstance(x, pl.Series | pd.Series):
            assert out.name == x.name
        if kind.startswith("polars_categorical") or kind == "polars_enum":
            assert isinstance(out, pl.Series)
        else:
            assert _type_of(out) == _type_of(x)


def _freeze(x: Any) -> list[Any]:
    return as_list(x)


def _scribble(x: Any) -> None:
    """Overwrite every writable buffer a release handed out."""
    if isinstance(x, np.ndarray) and x.flags.writeable:
        x[:] = x[::-1].copy()
        return
    if isinstance(x, pd.Series):
        try:
            x.iloc[:] = x.iloc[0]
        except (TypeError, ValueError):
            pass
        return
    if isinstance(x, pl.Series):
        _scribble(x.to_arrow())  # (zero copy where polars allows it)
        x.scatter(np.arange(len(x)), "scribbled")  # in place (copy on write if shared)
        return
    arrays = x.chunks if isinstance(x, pa.ChunkedArray) else [x]
    for a in arrays:
        for buf in a.buffers():
            if buf is not None and buf.is_mutable and buf.size:
                view = np.frombuffer(buf, dtype=np.uint8)
                if view.flags.writeable:
                    view[:] = 0x41


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view",
                                  "pandas_pyarrow", "object", "polars_string"])
def test_mutating_a_release_does_not_change_the_next(kind: str) -> None:
    """Releases share no mutable memory: scribbling over every writable buffer of a first
    release leaves a second release under the same seed equal to the first as it was."""
    mech = Mechanism(_rr(len(_IN_LABELS), len(_OUT_LABELS), seed=5), tuple(_IN_LABELS),
                     tuple(_OUT_LABELS))
    values = _values(_IN_LABELS, 70_000, seed=6)
    x = _string_inputs(kind, values)
    first = pmlkit.privatize(mech, x, rng=8)
    kept = _freeze(first)
    _scribble(first)
    second = pmlkit.privatize(mech, x, rng=8)
    assert _freeze(second) == kept
    _scribble(second)
    third = pmlkit.privatize(mech, _string_inputs(kind, values), rng=8)
    assert _freeze(third) == kept
    assert as_list(x) == values  # the input itself is never written


def test_text_containers_release_the_integer_path() -> None:
    """Text containers release the same values under one seed (the integer path's)."""
    k, m = 40, 40
    labels = [f"v{i:0{1 + i % 13}d}" for i in range(k)]  # 2..14 bytes
    w = _rr(k, m, seed=9)
    codes = np.random.default_rng(10).integers(k, size=300_000)
    ref = np.asarray(pmlkit.privatize(Mechanism(w), codes, rng=13))
    mech = Mechanism(w, tuple(labels), tuple(labels))
    want = [labels[int(j)] for j in ref]
    values = [labels[int(c)] for c in codes]
    arrs = [pa.array(values, type=t) for t in TYPES.values()]
    arrs.append(pl.Series("s", values, dtype=pl.String))
    for a in arrs:
        assert as_list(pmlkit.privatize(mech, a, rng=13)) == want


# --------------------------------------------------------------------------------------
# CSV: untouched cells byte for byte, labels only, nothing left behind on refusal
# --------------------------------------------------------------------------------------

#: raw cells of the untouched columns (quotes, empties, null markers, numbers)
_OTHER = ["x", '"a,b"', "", '""', "NA", "null", "NaN", "007", "-0", '"say ""hi"""',
          "日本", "F", '"M"', "  sp  "]
#: raw text of the privatised column's cells and the label each one is
_LABEL_CELLS = {"F": "F", '"F"': "F", "M": "M", '"M"': "M", '"a,b"': "a,b",
                '"q""x"': 'q"x', "1": "1", '"1"': "1", "日本": "日本"}
_FILE_LABELS = ["F", "M", "a,b", 'q"x', "1", "日本"]  # six: the few-labels path


def _csv_rows(n: int, seed: int, cells: dict[str, str]) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(seed)
    raws = list(cells)
    return [(_OTHER[int(rng.integers(len(_OTHER)))], raws[int(rng.integers(len(raws)))],
             _OTHER[int(rng.integers(len(_OTHER)))]) for _ in range(n)]


def _csv_bytes(rows: list[tuple[str, str, str]], nl: str, bom: bool, last_nl: bool) -> bytes:
    text = nl.join(["a,sex,c", *(",".join(r) for r in rows)]) + (nl if last_nl else "")
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode()


def _output_lines(data: bytes, nl: str) -> list[str]:
    text = data.decode().removeprefix("\ufeff")
    lines = text.split(nl)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@pytest.mark.parametrize("layout", ["lf", "crlf_bom", "no_last_newline", "gzip"])
def test_csv_few_text_labels_keep_untouched_bytes(tmp_path: Path, layout: str) -> None:
    """Six text labels (quoted and unquoted, one with a comma, one with a quote, one
    that looks like a number): every untouched cell keeps its text exactly (empty,
    quoted, null-marker look-alikes; quotes are written only where CSV needs them), line
    ends and the byte-order mark are the input's, and the privatised cells are, under one
    seed, the in-memory release of the column's labels."""
    nl = "\r\n" if "crlf" in layout else "\n"
    rows = _csv_rows(30_000, seed=3, cells=_LABEL_CELLS)
    data = _csv_bytes(rows, nl, bom="bom" in layout, last_nl=layout != "no_last_newline")
    suffix = ".csv.gz" if layout == "gzip" else ".csv"
    src, dst = tmp_path / f"in{suffix}", tmp_path / f"out{suffix}"
    src.write_bytes(gzip.compress(data) if layout == "gzip" else data)
    w = _rr(6, 6, seed=2)
    mech = Mechanism(w, tuple(_FILE_LABELS), tuple(_FILE_LABELS))
    pmlkit.privatize_file(mech, src, dst, "sex", rng=17, batch_rows=7_000)
    out = dst.read_bytes()
    if layout == "gzip":
        out = gzip.decompress(out)
    assert out.startswith(b"\xef\xbb\xbf") == ("bom" in layout)
    lines = _output_lines(out, nl)
    assert len(lines) == len(rows) + 1 and lines[0] == "a,sex,c"
    labels_in = [_LABEL_CELLS[r[1]] for r in rows]
    want = as_list(pmlkit.privatize(mech, labels_in, rng=17))
    for i, (line, row) in enumerate(zip(lines[1:], rows, strict=True)):
        a, _, c = next(csv.reader(io.StringIO(",".join(row))))
        assert "\r" not in line and "\n" not in line  # one line ending, the input's
        assert next(csv.reader(io.StringIO(line))) == [a, want[i], c], (i, line, row)


@pytest.mark.parametrize("case", ["unknown_last", "missing_middle", "padded_label",
                                  "quoted_padding", "null_marker_label"])
def test_csv_refusals_leave_nothing_behind(tmp_path: Path, case: str) -> None:
    """A value that is no label (a padded or quoted-padded label, an unknown value in the
    last row after many batches) or a missing one (an empty cell, a label that the
    options declare a null marker) refuses the whole file and leaves the directory as it
    was."""
    from pmlkit.io import CsvOptions

    rows = _csv_rows(25_000, seed=4, cells={"F": "F", "M": "M"})
    opts = None
    if case == "unknown_last":
        rows[-1] = (rows[-1][0], "Q", rows[-1][2])
    elif case == "missing_middle":
        rows[12_345] = (rows[12_345][0], "", rows[12_345][2])
    elif case == "padded_label":
        rows[100] = (rows[100][0], " F", rows[100][2])
    elif case == "quoted_padding":
        rows[20_000] = (rows[20_000][0], '"M "', rows[20_000][2])
    else:
        opts = CsvOptions(null_values=("M",))
    src = tmp_path / "in.csv"
    src.write_bytes(_csv_bytes(rows, "\n", bom=False, last_nl=True))
    before = sorted(p.name for p in tmp_path.iterdir())
    mech, _ = _perm_mechanism(["F", "M"])
    with pytest.raises(DataError):
        pmlkit.privatize_file(mech, src, tmp_path / "out.csv", "sex", rng=0,
                              batch_rows=4_000, csv=opts)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_csv_header_longer_than_64_kib(tmp_path: Path) -> None:
    """A header of about 90 KiB is read in full (columns listed, column found, cells
    kept)."""
    from pmlkit.io import list_columns

    names = [f"column_{i:05d}_" + "n" * 40 for i in range(1600)]
    header = ",".join([*names, "sex"])
    assert len(header) > 1 << 16
    body = "".join(f"{','.join(str(j) for j in range(i, i + 1600))},{'FM'[i % 2]}\n"
                   for i in range(40))
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(header + "\n" + body)
    assert list_columns(src) == [*names, "sex"]
    mech, mapping = _perm_mechanism(["F", "M"], ["yes", "no"])
    pmlkit.privatize_file(mech, src, dst, "sex", rng=0)
    rows_in = list(csv.reader(io.StringIO(src.read_text())))
    rows_out = list(csv.reader(io.StringIO(dst.read_text())))
    assert rows_out[0] == rows_in[0]
    assert [r[:-1] for r in rows_out] == [r[:-1] for r in rows_in]
    assert [r[-1] for r in rows_out[1:]] == [mapping[r[-1]] for r in rows_in[1:]]


# --------------------------------------------------------------------------------------
# Parquet: the polars engine writes what the pyarrow engine writes
# --------------------------------------------------------------------------------------

_PQ_LABELS = {
    "two": ["F", "M"],
    "six": ["", "\x00", "a\x00", "é", "日本", "x" * 20],
    "nine": [f"L{i}" for i in range(8)] + ["\x00"],  # more than six: the Enum cast
}


def _parquet(path: Path, labels: list[str], n: int, seed: int,
             bad: str | None = None) -> list[str]:
    rng = np.random.default_rng(seed)
    vals = [labels[int(i)] for i in rng.integers(len(labels), size=n)]
    if bad is not None:
        vals[n - 3] = bad
    t = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                  "sex": pa.array(vals, type=pa.string()),
                  "f": pa.array(rng.random(n))},
                 metadata={b"origin": b"attack"})
    pq.write_table(t, path, row_group_size=30_000, compression="zstd")
    return vals


def _manifest_digest(dst: Path) -> None:
    doc = json.loads(Path(f"{dst}.pmlkit.json").read_text())
    data = dst.read_bytes()
    found = json.dumps(doc)
    assert hashlib.sha256(data).hexdigest() in found
    assert str(len(data)) in found


@pytest.mark.parametrize("into", [None, "released"])
@pytest.mark.parametrize("fam", list(_PQ_LABELS))
def test_polars_engine_writes_the_pyarrow_engines_table(tmp_path: Path, fam: str,
                                                         into: str | None) -> None:
    """Same rows in the same order (and row groups, in place), same schema with
    field and file metadata, same codecs, the released column only labels (the in-memory
    release under one seed), and each manifest's SHA-256 that of the file's bytes
    (recomputed here)."""
    labels = _PQ_LABELS[fam]
    src = tmp_path / "in.parquet"
    vals = _parquet(src, labels, 70_000, seed=len(fam))
    mech = Mechanism(_rr(len(labels), len(labels), seed=1), tuple(labels), tuple(labels))
    tables, groups = {}, {}
    for engine in ("pyarrow", "auto"):
        dst = tmp_path / f"out_{engine}.parquet"
        pmlkit.privatize_file(mech, src, dst, "sex", into=into, keep_raw=True, rng=23,
                              engine=engine)
        _manifest_digest(dst)
        tables[engine] = pq.read_table(dst)
        md = pq.read_metadata(dst)
        codecs = {md.row_group(g).column(c).compression for g in range(md.num_row_groups)
                  for c in range(md.num_columns)}
        assert codecs == {"ZSTD"}
        groups[engine] = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
    if into is None:  # (with a new column the pyarrow engine writes other row groups)
        assert groups["pyarrow"] == groups["auto"]
    a, b = tables["pyarrow"], tables["auto"]
    assert a.schema.equals(b.schema, check_metadata=False)
    assert [f.metadata for f in a.schema] == [f.metadata for f in b.schema]
    meta_a, meta_b = dict(a.schema.metadata), dict(b.schema.metadata)
    doc_a, doc_b = json.loads(meta_a.pop(b"pmlkit")), json.loads(meta_b.pop(b"pmlkit"))
    assert meta_a == meta_b and meta_a[b"origin"] == b"attack"
    doc_a.pop("rng")  # a salted commitment to the seed: differs by design
    doc_b.pop("rng")
    assert doc_a == doc_b
    assert a.equals(b)
    col = into or "sex"
    assert a.column(col).to_pylist() == as_list(pmlkit.privatize(mech, vals, rng=23))
    assert a.column("id").to_pylist() == list(range(70_000))
    if into is not None:
        assert a.column("sex").to_pylist() == vals


@pytest.mark.parametrize("engine", ["pyarrow", "auto"])
@pytest.mark.parametrize("fam", ["two", "nine"])
def test_parquet_refusals_same_for_both_engines(tmp_path: Path, fam: str,
                                                engine: str) -> None:
    """An unknown value near the end (after written row groups) and a null are refused by
    every engine alike, and nothing is left behind."""
    labels = _PQ_LABELS[fam]
    mech, _ = _perm_mechanism(labels)
    for bad in ("Q", labels[0] + "\x00"):
        src = tmp_path / "in.parquet"
        _parquet(src, labels, 70_000, seed=2, bad=bad)
        before = sorted(p.name for p in tmp_path.iterdir())
        with pytest.raises(DataError, match="not an input label"):
            pmlkit.privatize_file(mech, src, tmp_path / "out.parquet", "sex", rng=0,
                                  engine=engine, batch_rows=30_000)
        assert sorted(p.name for p in tmp_path.iterdir()) == before
    src = tmp_path / "nulls.parquet"
    t = pa.table({"sex": pa.array([labels[0]] * 40_000 + [None] + [labels[-1]] * 9,
                                  type=pa.string())})
    pq.write_table(t, src)
    with pytest.raises(DataError, match="null/missing"):
        pmlkit.privatize_file(mech, src, tmp_path / "out2.parquet", "sex", rng=0,
                              engine=engine)
    assert not (tmp_path / "out2.parquet").exists()


# --------------------------------------------------------------------------------------
# more edges: empty data buffers, large remapped tables, the dictionary path of CSV
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("typ", ["string", "large_string", "string_view"])
def test_all_empty_records(typ: str) -> None:
    """Records that are all the empty string (a data buffer of size 0):
    the label "" when it is one, refused when it is not."""
    n = N
    mech, mapping = _perm_mechanism(["", "a", "b" * 9], ["x", "", "yy"])
    arrs = [pa.array([""] * n, type=TYPES[typ])]
    if typ != "string_view":
        dt = np.int64 if typ == "large_string" else np.int32
        off = pa.py_buffer(np.zeros(n + 1, dtype=dt).tobytes())
        arrs.append(pa.Array.from_buffers(TYPES[typ], n, [None, off, pa.py_buffer(b"")]))
    for arr in arrs:
        assert pmlkit.privatize(mech, arr, rng=0).to_pylist() == [mapping[""]] * n
        with pytest.raises(DataError, match="not an input label"):
            pmlkit.privatize(_perm_mechanism(["a", "b" * 9])[0], arr, rng=0)


@pytest.mark.parametrize("kind", ["pandas_category", "arrow_dictionary", "polars_enum",
                                  "object"])
def test_k1000_remapped_categories_follow_the_integer_release(kind: str) -> None:
    """1000 labels whose container lists them in another order (categories, Arrow
    dictionary, Enum): every record gets the integer release's output under one seed,
    twice in a row with two different orders (tables reordered per order)."""
    k = 1000
    labels = [f"c{i:04d}" for i in range(k)]
    w = _rr(k, 50, seed=12)
    codes = np.random.default_rng(14).integers(k, size=1 << 17)
    ref = np.asarray(pmlkit.privatize(Mechanism(w), codes, rng=31))
    mech = Mechanism(w, tuple(labels), tuple(range(50)))
    values = [labels[int(c)] for c in codes]
    for order_seed in (1, 2):
        order = [labels[int(i)] for i in np.random.default_rng(order_seed).permutation(k)]
        if kind == "pandas_category":
            x: Any = pd.Series(pd.Categorical(values, categories=order))
        elif kind == "arrow_dictionary":
            pos = {lab: i for i, lab in enumerate(order)}
            x = pa.DictionaryArray.from_arrays(
                pa.array(np.array([pos[v] for v in values], dtype=np.int32)),
                pa.array(order))
        elif kind == "polars_enum":
            x = pl.Series("s", values, dtype=pl.Enum(order))
        else:
            x = _string_inputs("object", values)
        got = np.asarray(as_list(pmlkit.privatize(mech, x, rng=31)), dtype=np.int64)
        assert np.array_equal(got, ref), int(np.count_nonzero(got != ref))


@pytest.mark.parametrize("into", [None, "released"])
def test_csv_many_text_labels_and_csv_to_parquet(tmp_path: Path, into: str | None) -> None:
    """Nine text labels (the dictionary path: entries matched among the labels), written
    to CSV and to Parquet: the released cells are the in-memory release under one seed,
    untouched cells keep their text, the Parquet columns are text."""
    labels = ["F", "M", "a,b", 'q"x', "1", "日本", "", "\x00z", "NaN"]
    raw = {"F": "F", "M": "M", '"a,b"': "a,b", '"q""x"': 'q"x', "1": "1", "日本": "日本",
           '"\x00z"': "\x00z", "NaN": "NaN", '"NaN"': "NaN", '"F"': "F"}
    rows = _csv_rows(20_000, seed=8, cells=raw)
    src = tmp_path / "in.csv"
    src.write_bytes(_csv_bytes(rows, "\n", bom=False, last_nl=True))
    mech = Mechanism(_rr(9, 9, seed=3), tuple(labels), tuple(labels))
    from pmlkit.io import CsvOptions

    opts = CsvOptions(null_values=())  # nothing is missing: "" is the label ""
    want = as_list(pmlkit.privatize(mech, [raw[r[1]] for r in rows], rng=5))
    cells_in = [next(csv.reader(io.StringIO(",".join(r)))) for r in rows]
    pmlkit.privatize_file(mech, src, tmp_path / "out.csv", "sex", into=into, rng=5,
                          batch_rows=3_000, csv=opts, keep_raw=True)
    out = list(csv.reader(io.StringIO((tmp_path / "out.csv").read_text(), newline="")))
    assert len(out) == len(rows) + 1
    for i, (got, cin) in enumerate(zip(out[1:], cells_in, strict=True)):
        exp = [cin[0], want[i], cin[2]] if into is None else [*cin, want[i]]
        assert got == exp, (i, got, exp)
    pmlkit.privatize_file(mech, src, tmp_path / "out.parquet", "sex", into=into, rng=5,
                          batch_rows=3_000, csv=opts, keep_raw=True)
    t = pq.read_table(tmp_path / "out.parquet")
    assert all(f.type == pa.string() for f in t.schema)
    assert t.column(into or "sex").to_pylist() == want
    assert t.column("a").to_pylist() == [c[0] for c in cells_in]


@pytest.mark.parametrize("kind", ["polars_string", "object", "list"])
def test_output_label_utf8_cannot_encode_is_released_or_refused_cleanly(kind: str) -> None:
    """An output label that UTF-8 cannot encode (a lone surrogate): the release either
    holds exactly the output labels or is refused by a pmlkit error, never by a raw
    UnicodeEncodeError from a fast path's buffers."""
    from pmlkit.errors import PMLError

    w = np.array([[0.7, 0.3], [0.3, 0.7]])
    mech = Mechanism(w, ("F", "M"), ("ok", "\ud800"))
    values = ["F", "M"] * 35_000
    try:
        out = pmlkit.privatize(mech, _string_inputs(kind, values), rng=1)
    except PMLError:
        return
    got = as_list(out)
    assert len(got) == len(values) and set(got) <= {"ok", "\ud800"}


@pytest.mark.parametrize("layout", ["few", "many"])
def test_csv_refusal_counts_every_bad_row_across_batches(tmp_path: Path, layout: str) -> None:
    """Unknown values in three different batches (the others all labels): the message
    counts all three, whichever matching path each batch took, and nothing is written."""
    labels = ["F", "M"] if layout == "few" else [f"L{i}" for i in range(9)]
    rows = _csv_rows(25_000, seed=9, cells={lab: lab for lab in labels})
    for r in (10, 9_000, 24_999):
        rows[r] = (rows[r][0], "Q", rows[r][2])
    src = tmp_path / "in.csv"
    src.write_bytes(_csv_bytes(rows, "\n", bom=False, last_nl=True))
    mech, _ = _perm_mechanism(labels)
    with pytest.raises(DataError, match=r"'Q' appears in 3 rows"):
        pmlkit.privatize_file(mech, src, tmp_path / "out.csv", "sex", rng=0,
                              batch_rows=4_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_csv_two_privatised_columns(tmp_path: Path) -> None:
    """Two columns privatised at once (one with the few-labels path, one with nine
    labels; one in place, one into a new column): each cell gets its own label's output
    (deterministic mechanisms), untouched cells keep their text."""
    few, many = ["F", "M", 'q"x'], [f"L{i}" for i in range(9)]
    m_few, map_few = _perm_mechanism(few, ["yes", "no", "maybe"])
    m_many, map_many = _perm_mechanism(many, [f"o{i}" for i in range(9)], seed=3)
    rng = np.random.default_rng(11)
    lines = ["sex,x,grade"]
    cells = []
    for _ in range(12_000):
        a, b = few[int(rng.integers(3))], many[int(rng.integers(9))]
        x = _OTHER[int(rng.integers(len(_OTHER)))]
        raw_a = '"q""x"' if a == 'q"x' else a
        lines.append(f"{raw_a},{x},{b}")
        cells.append((a, next(csv.reader(io.StringIO(x))) if x else [""], b))
    src = tmp_path / "in.csv"
    src.write_text("\n".join(lines) + "\n")
    pmlkit.privatize_file({"sex": m_few, "grade": m_many}, src, tmp_path / "out.csv",
                          ["sex", "grade"], into=["sex", "grade_p"], keep_raw=True, rng=0,
                          batch_rows=5_000)
    out = list(csv.reader(io.StringIO((tmp_path / "out.csv").read_text(), newline="")))
    assert out[0] == ["sex", "x", "grade", "grade_p"]
    for i, (row, (a, xs, b)) in enumerate(zip(out[1:], cells, strict=True)):
        assert row == [map_few[a], *xs, b, map_many[b]], (i, row)


@pytest.mark.parametrize(("missing", "unknown_as", "fam"),
                         [("keep", None, "two"), ("keep", "M", "two"), ("keep", None, "nine"),
                          ("error", "L3", "nine"), ("keep", "L3", "nine")])
def test_parquet_engines_agree_under_policies(tmp_path: Path, missing: str,
                                              unknown_as: str | None, fam: str) -> None:
    """Nulls kept and unknown values mapped: both engines write the same table, nulls
    where the input had them, and only labels elsewhere."""
    labels = _PQ_LABELS[fam]
    n = 60_000
    rng = np.random.default_rng(4)
    vals: list[str | None] = [labels[int(i)] for i in rng.integers(len(labels), size=n)]
    nulls = [7, 30_001, n - 1] if missing == "keep" else []
    for i in nulls:
        vals[i] = None
    if unknown_as is not None:
        vals[12] = vals[45_000] = "unknown!"
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"sex": pa.array(vals, type=pa.string()),
                             "i": pa.array(np.arange(n))}), src, row_group_size=12_000)
    mech = Mechanism(_rr(len(labels), len(labels), seed=6), tuple(labels), tuple(labels))
    got = {}
    for engine in ("pyarrow", "auto"):
        dst = tmp_path / f"{engine}.parquet"
        pmlkit.privatize_file(mech, src, dst, "sex", rng=3, engine=engine, missing=missing,
                              unknown_as=unknown_as, batch_rows=16_000)
        _manifest_digest(dst)
        got[engine] = pq.read_table(dst)
    a, b = got["pyarrow"], got["auto"]
    assert a.equals(b)
    out = a.column("sex").to_pylist()
    assert [i for i, v in enumerate(out) if v is None] == nulls
    assert {v for v in out if v is not None} <= set(labels)


def test_concurrent_orders_and_copies_of_a_large_mechanism() -> None:
    """One 500 x 500 mechanism released from four threads at once, each with its own
    category order, then pickled and deep-copied after its large tables were built:
    every release is the integer release under its seed."""
    import copy
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    k = 500
    labels = [f"c{i:04d}" for i in range(k)]
    w = _rr(k, k, seed=15)
    codes = np.random.default_rng(16).integers(k, size=1 << 17)
    plain = Mechanism(w)
    ref = {s: np.asarray(pmlkit.privatize(plain, codes, rng=s)) for s in range(4)}
    mech = Mechanism(w, tuple(labels), tuple(range(k)))
    values = [labels[int(c)] for c in codes]

    def one(s: int) -> bool:
        order = [labels[int(i)] for i in np.random.default_rng(s).permutation(k)]
        x = pd.Series(pd.Categorical(values, categories=order))
        got = np.asarray(as_list(pmlkit.privatize(mech, x, rng=s)), dtype=np.int64)
        return bool(np.array_equal(got, ref[s]))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(one, range(4)))
    for twin in (pickle.loads(pickle.dumps(mech)), copy.deepcopy(mech)):
        got = np.asarray(as_list(pmlkit.privatize(twin, pa.array(values), rng=2)))
        assert np.array_equal(got.astype(np.int64), ref[2])


def test_polars_lazy_and_frames_with_text_columns() -> None:
    """A DataFrame and a LazyFrame with a text column released into a new one, other
    columns untouched: the DataFrame's values are the Series release under one seed; the
    LazyFrame's (drawn per batch from child streams) are labels."""
    labels = ["lo", "mid", "hi" * 7]
    mech = Mechanism(_rr(3, 3, seed=7), tuple(labels), tuple(labels))
    n = 9_000
    a = _values(labels, n, seed=1)
    df = pl.DataFrame({"a": a, "id": list(range(n))})
    want = as_list(pmlkit.privatize(mech, pl.Series("a", a), rng=4))
    eager = pmlkit.privatize(mech, df, columns="a", into="a_p", rng=4)
    lazy = pmlkit.privatize(mech, df.lazy(), columns="a", into="a_p", rng=4).collect()
    for out in (eager, lazy):
        assert out.columns == ["a", "id", "a_p"]
        assert out["a"].to_list() == a and out["id"].to_list() == list(range(n))
        assert out["a_p"].dtype == pl.String and set(out["a_p"].to_list()) <= set(labels)
    assert eager["a_p"].to_list() == want


@pytest.mark.parametrize("layout", ["plain", "sliced", "chunked"])
@pytest.mark.parametrize("fam", ["lengths", "nuls", "prefixes", "unicode", "same16"])
def test_polars_text_encodes_as_a_dict_lookup(fam: str, layout: str) -> None:
    """polars String Series (sliced into a longer one, or in chunks) encode as a dict
    lookup and come back as String Series of the same name."""
    values = _values(FAMILIES[fam], N, seed=3)
    s = pl.Series("v", values, dtype=pl.String)
    if layout == "sliced":
        s = pl.Series("v", ["\x02pad"] * 5 + values + ["\x02pad"], dtype=pl.String).slice(
            5, N)
    elif layout == "chunked":
        s = pl.concat([pl.Series("v", values[:4200], dtype=pl.String),
                       pl.Series("v", [], dtype=pl.String),
                       pl.Series("v", values[4200:], dtype=pl.String)], rechunk=False)
    for mech, mapping in _family_mechanisms(fam):
        out = pmlkit.privatize(mech, s, rng=0)
        assert isinstance(out, pl.Series) and out.name == "v" and out.dtype == pl.String
        assert out.to_list() == [mapping[v] for v in values]


def test_csv_strip_whitespace_and_into_with_few_labels(tmp_path: Path) -> None:
    """Few text labels with whitespace stripping (padded cells are their labels) and a
    release into a new column: the released cells are the in-memory release of the
    stripped labels under one seed; the source column keeps its padded text."""
    from pmlkit.io import CsvOptions

    raw = {"F": "F", " F": "F", "M  ": "M", '" M "': "M", "\tF": "F"}
    rows = _csv_rows(20_000, seed=12, cells=raw)
    src = tmp_path / "in.csv"
    src.write_bytes(_csv_bytes(rows, "\n", bom=False, last_nl=True))
    mech = Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("F", "M"), ("F", "M"))
    want = as_list(pmlkit.privatize(mech, [raw[r[1]] for r in rows], rng=9))
    pmlkit.privatize_file(mech, src, tmp_path / "out.csv", "sex", into="sex_p", rng=9,
                          csv=CsvOptions(strip_whitespace=True), batch_rows=6_000,
                          keep_raw=True)
    out = list(csv.reader(io.StringIO((tmp_path / "out.csv").read_text(), newline="")))
    cells_in = [next(csv.reader(io.StringIO(",".join(r)))) for r in rows]
    assert out[0] == ["a", "sex", "c", "sex_p"]
    assert [r[:3] for r in out[1:]] == cells_in
    assert [r[3] for r in out[1:]] == want


@pytest.mark.parametrize("header", ["ascii_65535", "utf8_straddles_65536",
                                    "one_column_65536", "crlf_65534"])
def test_csv_header_around_64_kib(tmp_path: Path, header: str) -> None:
    """Headers ending just before, on and after a 64 KiB block boundary, one of them with
    a two-byte character across it: every column name read in full."""
    from pmlkit.io import list_columns

    first, nl = {"ascii_65535": ("a" * 65535, "\n"),
                 "utf8_straddles_65536": ("a" + "é" * 32767, "\n"),
                 "one_column_65536": ("b" * 65536, "\n"),
                 "crlf_65534": ("c" * 65534, "\r\n")}[header]
    names = [first] if header == "one_column_65536" else [first, "sex"]
    src = tmp_path / "in.csv"
    src.write_text(",".join(names) + nl + ",".join(["1", "F"][:len(names)]) + nl,
                   newline="")
    assert list_columns(src) == names


_ALPHABET = ["a", "b", "\x00", "é", "日", "😀"]


def _label_sets() -> Any:
    from hypothesis import strategies as st

    text = st.lists(st.sampled_from(_ALPHABET), max_size=20).map("".join)
    return st.lists(text, min_size=1, max_size=12, unique=True)


def test_random_label_sets_encode_as_a_dict_lookup() -> None:
    """Random label sets over an alphabet of NULs and 1- to 4-byte characters, lengths
    0..20 characters (up to 80 bytes), with values that are labels or near misses built
    from them (a character added, dropped or changed): each container refuses exactly
    when some value is no label, and otherwise releases each label's own output."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=40, deadline=None)
    @given(_label_sets(), st.integers(0, 2**32 - 1), st.sampled_from(list(TYPES)))
    def run(labels: list[str], seed: int, typ: str) -> None:
        rng = np.random.default_rng(seed)
        mech, mapping = _perm_mechanism(labels, seed=seed % 7)
        values = [labels[int(i)] for i in rng.integers(len(labels), size=N)]
        out = pmlkit.privatize(mech, pa.array(values, type=TYPES[typ]), rng=0)
        assert out.to_pylist() == [mapping[v] for v in values]
        lab = labels[int(rng.integers(len(labels)))]
        ch = _ALPHABET[int(rng.integers(len(_ALPHABET)))]
        cut = int(rng.integers(len(lab) + 1))
        for miss in (lab[:cut] + ch + lab[cut:], lab[:cut] + lab[cut + 1:],
                     lab[:cut] + ch + lab[cut + 1:]):
            vals = list(values)
            vals[int(rng.integers(N))] = miss
            arr = pa.array(vals, type=TYPES[typ])
            if miss in mapping:
                assert pmlkit.privatize(mech, arr, rng=0).to_pylist() == [
                    mapping[v] for v in vals]
            else:
                with pytest.raises(DataError, match="not an input label"):
                    pmlkit.privatize(mech, arr, rng=0)

    run()


@pytest.mark.parametrize("dtype", ["str", "string[pyarrow]", "string[python]", "large",
                                   "view", "category"])
def test_pandas_text_dtypes_keep_index_name_and_values(dtype: str) -> None:
    """pandas text Series of every storage, with a reversed index and a name: the index,
    the name and (but for Arrow string_view storage) the dtype are kept, and the values
    are the integer release's labels under one seed."""
    labels = ["lo", "mid", "h" * 13]
    outs = ["x", "y" * 9, ""]
    w = _rr(3, 3, seed=7)
    n = 70_000
    codes = np.arange(n) % 3
    ref = np.asarray(pmlkit.privatize(Mechanism(w), codes, rng=2))
    mech = Mechanism(w, tuple(labels), tuple(outs))
    dt: Any = {"large": pd.ArrowDtype(pa.large_string()),
               "view": pd.ArrowDtype(pa.string_view())}.get(dtype, dtype)
    s = pd.Series([labels[int(c)] for c in codes], dtype=dt, index=np.arange(n)[::-1],
                  name="n")
    out = pmlkit.privatize(mech, s, rng=2)
    assert out.name == "n" and out.index.equals(s.index)
    if dtype == "category":  # categories: the output labels
        assert isinstance(out.dtype, pd.CategoricalDtype)
        assert list(out.dtype.categories) == outs
    elif dtype != "view":  # (main returns the str dtype for string_view storage)
        assert out.dtype == s.dtype
    assert out.tolist() == [outs[int(j)] for j in ref]


def test_csv_labels_with_line_breaks_and_spaces(tmp_path: Path) -> None:
    """Text labels holding a line break, a CRLF or edge spaces (matched on the plain text,
    no stripping): each record's cell reads back as its label's output (line breaks, edge
    spaces and the empty label included), other columns keep their text."""
    labels = ["a\nb", "c\r\nd", " F", "M "]
    outs = ["x\ny", "", " z ", "w"]
    raw = {'"a\nb"': "a\nb", '"c\r\nd"': "c\r\nd", " F": " F", "M ": "M ", '" F"': " F"}
    mech, mapping = _perm_mechanism(labels, outs, seed=2)
    rows = _csv_rows(12_000, seed=13, cells=raw)
    src = tmp_path / "in.csv"
    src.write_bytes(_csv_bytes(rows, "\n", bom=False, last_nl=True))
    pmlkit.privatize_file(mech, src, tmp_path / "out.csv", "sex", rng=0, batch_rows=5_000)
    out = list(csv.reader(io.StringIO((tmp_path / "out.csv").read_text(), newline="")))
    cells_in = [next(csv.reader(io.StringIO(",".join(r), newline=""))) for r in rows]
    assert len(out) == len(rows) + 1
    for i, (got, cin) in enumerate(zip(out[1:], cells_in, strict=True)):
        assert got == [cin[0], mapping[cin[1]], cin[2]], (i, got, cin)


@pytest.mark.parametrize("kind", ["pa.Array", "chunked", "pandas string[pyarrow]", "csv",
                                  "parquet"])
def test_output_label_utf8_cannot_encode_is_refused_before_anything_is_written(
        tmp_path: Path, kind: str) -> None:
    """Arrow text, pandas Arrow strings and files cannot hold a lone surrogate: the release
    is refused by a ValidationError naming the label (not a raw UnicodeEncodeError from
    pyarrow half-way), and a file run leaves the folder as it was."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    mech = Mechanism(np.array([[0.7, 0.3], [0.3, 0.7]]), ("F", "M"), ("ok", "\ud800"))
    values = ["F", "M"] * 50
    with pytest.raises(ValidationError, match=r"output label '\\ud800' cannot be encoded"):
        if kind == "pa.Array":
            pmlkit.privatize(mech, pa.array(values), rng=1)
        elif kind == "chunked":
            pmlkit.privatize(mech, pa.chunked_array([values[:30], values[30:]]), rng=1)
        elif kind == "pandas string[pyarrow]":
            pmlkit.privatize(mech, pd.Series(values, dtype="string[pyarrow]"), rng=1)
        elif kind == "csv":
            (tmp_path / "in.csv").write_text("sex\n" + "\n".join(values) + "\n")
            pmlkit.privatize_file(mech, tmp_path / "in.csv", tmp_path / "out.csv", "sex",
                                  rng=1)
        else:
            pq.write_table(pa.table({"sex": values}), tmp_path / "in.parquet")
            pmlkit.privatize_file(mech, tmp_path / "in.parquet", tmp_path / "out.parquet",
                                  "sex", rng=1)
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["in.csv"], ["in.parquet"])


def test_object_output_take_gives_the_integer_release() -> None:
    """Object outputs of a bulk release give the labels of the integer-code release,
    position by position."""
    k, n = len(_IN_LABELS), 70_000
    w = _rr(k, k, seed=2)
    codes = np.random.default_rng(8).integers(k, size=n)
    ref = np.asarray(pmlkit.privatize(Mechanism(w), codes, rng=5))
    mech = Mechanism(w, tuple(_IN_LABELS), tuple(_OUT_LABELS[:k]))
    values = np.array([_IN_LABELS[int(c)] for c in codes], dtype=object)
    out = pmlkit.privatize(mech, values, rng=5)
    assert out.dtype == object and out.shape == (n,)
    assert out.tolist() == [_OUT_LABELS[int(j)] for j in ref]
