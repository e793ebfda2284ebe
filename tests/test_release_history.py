"""Release history that cannot be laundered (issue 32, cases 3 and 4).

Every output ``privatize_file`` writes carries its release record where the next pass reads
it (CSV: the manifest beside it; Parquet: its key-value metadata), bound to the released
content by digests. A second pass over any pmlkit output treats the earlier columns as part
of the release; a record on data it does not describe is refused. ``release_leakage``
matches mechanisms by their input labels.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit import L1Ball, Mechanism, leakage_capacity
from pmlkit.cli.main import main
from pmlkit.errors import DataError, PMLError, ValidationError
from pmlkit.privatization.files import previous_privatization, privatize_file

RR = np.array([[0.8, 0.2], [0.2, 0.8]])


def certified(labels: tuple[str, str]) -> Mechanism:
    ball = L1Ball([0.5, 0.5], 0.1)
    return Mechanism(RR, labels, labels, uncertainty_set=ball.to_dict(),
                     certified_eps=leakage_capacity(RR, ball))


A = certified(("x", "y"))
B = certified(("u", "v"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rows = ["id,a,b"] + [f"{i},{p},{q}" for i, (p, q) in enumerate(itertools.islice(
        itertools.cycle([("x", "u"), ("x", "v"), ("y", "u")]), 60))]
    path = tmp_path / "data.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def manual_digest(values: list[str | None]) -> str:
    """The canonical digest of the module docstring, written out by hand."""
    rows = len(values).to_bytes(8, "little")
    texts = [(v or "").encode() for v in values]
    lengths = b"".join(len(t).to_bytes(4, "little") for t in texts)
    return hashlib.sha256(b"pmlkit-column-v1" + rows + hashlib.sha256(lengths).digest()
                          + hashlib.sha256(b"".join(texts)).digest()).hexdigest()


# -- case 3: a second pass over a CSV output ----------------------------------------------

def test_second_csv_pass_needs_the_joint_guarantee(data: Path) -> None:
    """Case 3: a second pass over a CSV output (manifest beside it) released another
    column with no joint guarantee and no warning."""
    first = data.with_name("first.csv")
    privatize_file(A, data, first, "a", rng=np.random.default_rng(0))
    second = data.with_name("second.csv")
    with pytest.raises(DataError, match="earlier pass") as err:
        privatize_file(B, first, second, "b", rng=np.random.default_rng(1))
    assert "\n" not in str(err.value) and not second.exists()
    # a renamed copy with its manifest renamed along is still recognised
    copy = data.with_name("copy.csv")
    shutil.copy(first, copy)
    shutil.copy(first.with_name("first.csv.pmlkit.json"), copy.with_name("copy.csv.pmlkit.json"))
    with pytest.raises(DataError, match="earlier pass"):
        privatize_file(B, copy, second, "b", rng=np.random.default_rng(1))
    # privatising a again is a repeated release
    with pytest.raises(DataError, match="already privatised by an earlier pass"):
        privatize_file(A, first, second, "a", rng=np.random.default_rng(1))
    # waived explicitly: released, and the record lists both columns
    privatize_file(B, first, second, "b", rng=np.random.default_rng(1),
                   no_joint_guarantee=True)
    man = json.loads(second.with_name("second.csv.pmlkit.json").read_text())
    assert set(man["privatized"]) == {"a", "b"}
    assert man["previous_passes"][0]["columns"] == ["a"]
    assert set(man["released_content"]["sha256"]) == {"a", "b"}
    # the third pass sees both
    rec = previous_privatization(second)
    assert rec is not None and set(rec["privatized"]) == {"a", "b"}


def test_second_csv_pass_through_the_cli_needs_the_joint_guarantee(
        data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    A.save(data.with_name("a.json"))
    B.save(data.with_name("b.json"))
    first = data.with_name("first.csv")
    assert run(capsys, "privatize", "--mechanism", str(data.with_name("a.json")), "--input",
               str(data), "--column", "a", "--output", str(first))[0] == 0
    second = data.with_name("second.csv")
    base = ["privatize", "--mechanism", str(data.with_name("b.json")), "--input",
            str(first), "--column", "b", "--output", str(second)]
    code, _, err = run(capsys, *base)
    assert code != 0 and err.count("\n") == 1 and "no joint guarantee" in err
    assert not second.exists()
    code, _, err = run(capsys, *base, "--no-joint-guarantee")
    assert code == 0, err
    man = json.loads(second.with_name("second.csv.pmlkit.json").read_text())
    assert set(man["privatized"]) == {"a", "b"} and man["joint_guarantee"] is None


@pytest.mark.parametrize("engine,group,batch", [("pyarrow", 7, 5), ("auto", 10, 10)])
def test_parquet_binding_is_the_canonical_digest_of_the_released_columns(
        data: Path, engine: str, group: int, batch: int) -> None:
    src = data.with_name("in.parquet")
    pq.write_table(pa.table({"id": list(range(60)), "a": ["x", "y", "x"] * 20,
                             "b": ["u", "v", "u"] * 20}), src, row_group_size=group)
    out = data.with_name("out.parquet")
    privatize_file(A, src, out, "a", into="a_private", keep_raw=True,
                   rng=np.random.default_rng(0), engine=engine, batch_rows=batch)
    binding = json.loads(pq.read_metadata(out).metadata[b"pmlkit-content"])
    released = pq.read_table(out).column("a_private").to_pylist()
    assert binding["rows"] == 60
    assert binding["sha256"] == {"a_private": manual_digest(released)}
    man = json.loads(data.with_name("out.parquet.pmlkit.json").read_text())
    assert man["released_content"] == binding and man["writer"] == "pyarrow"


def test_grafted_parquet_record_is_refused(data: Path) -> None:
    """Case 3: a Parquet file with a grafted "column a was privatised" record was trusted,
    and the next output's record then listed the raw column a as privatised."""
    src = data.with_name("in.parquet")
    raw = pa.table({"a": ["x", "y", "x"] * 20, "b": ["u", "v", "u"] * 20})
    pq.write_table(raw, src)
    out = data.with_name("out.parquet")
    privatize_file(A, src, out, "a", rng=np.random.default_rng(0))
    kv = pq.read_metadata(out).metadata
    record, binding = kv[b"pmlkit"], kv[b"pmlkit-content"]
    # 1) the record alone grafted on the raw data (no binding)
    g1 = data.with_name("g1.parquet")
    pq.write_table(raw.replace_schema_metadata({b"pmlkit": record}), g1)
    # 2) the record and its binding copied onto the raw data: the digest does not match
    g2 = data.with_name("g2.parquet")
    pq.write_table(raw.replace_schema_metadata({b"pmlkit": record,
                                                b"pmlkit-content": binding}), g2)
    # 3) the real output with its record edited to also name the raw column b
    doc = json.loads(record)
    doc["privatized"]["b"] = {**doc["privatized"]["a"], "column": "b"}
    g3 = data.with_name("g3.parquet")
    pq.write_table(pq.read_table(out).replace_schema_metadata(
        {b"pmlkit": json.dumps(doc).encode(), b"pmlkit-content": binding}), g3)
    # 4) the real output with its binding (and the record) but one released value changed
    t = pq.read_table(out)
    a = t.column("a").to_pylist()
    a[0] = "y" if a[0] == "x" else "x"
    g4 = data.with_name("g4.parquet")
    pq.write_table(t.set_column(0, "a", pa.array(a)).replace_schema_metadata(
        {b"pmlkit": record, b"pmlkit-content": binding}), g4)
    # 5) a record with a key twice
    g5 = data.with_name("g5.parquet")
    twice = record[:-1] + b', "privatized": {}}'
    pq.write_table(raw.replace_schema_metadata({b"pmlkit": twice,
                                                b"pmlkit-content": binding}), g5)
    for i, g in enumerate((g1, g2, g3, g4, g5), 1):
        target = data.with_name(f"next{i}.parquet")
        with pytest.raises(DataError) as err:
            privatize_file(B, g, target, "b", rng=np.random.default_rng(1),
                           no_joint_guarantee=True)
        assert "\n" not in str(err.value) and "refus" in str(err.value), i
        assert not target.exists()
    # the honest output still releases, and its record lists a and b
    nxt = data.with_name("next.parquet")
    privatize_file(B, out, nxt, "b", rng=np.random.default_rng(1), no_joint_guarantee=True)
    rec = previous_privatization(nxt)
    assert rec is not None and set(rec["privatized"]) == {"a", "b"}


def test_grafted_csv_manifest_is_refused(data: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    first = data.with_name("first.csv")
    privatize_file(A, data, first, "a", rng=np.random.default_rng(0))
    manifest = first.with_name("first.csv.pmlkit.json").read_text()
    # the manifest of the output put beside the raw data
    raw = data.with_name("raw.csv")
    shutil.copy(data, raw)
    raw.with_name("raw.csv.pmlkit.json").write_text(manifest)
    with pytest.raises(DataError, match="digest mismatch"):
        privatize_file(B, raw, data.with_name("o.csv"), "b", no_joint_guarantee=True)
    # the CLI prints one line
    B.save(data.with_name("b.json"))
    code, _, err = run(capsys, "privatize", "--mechanism", str(data.with_name("b.json")),
                       "--input", str(raw), "--column", "b", "--output",
                       str(data.with_name("o.csv")), "--no-joint-guarantee")
    assert code == 1 and err.count("\n") == 1 and "digest mismatch" in err
    # a manifest whose binding was removed
    doc = json.loads(manifest)
    del doc["released_content"]
    first.with_name("first.csv.pmlkit.json").write_text(json.dumps(doc))
    with pytest.raises(DataError, match="not bound to its content"):
        privatize_file(B, first, data.with_name("o.csv"), "b", no_joint_guarantee=True)


def test_joint_guarantee_must_cover_the_earlier_columns(data: Path) -> None:
    first = data.with_name("first.csv")
    privatize_file(A, data, first, "a", rng=np.random.default_rng(0))
    from pmlkit.joint import joint_guarantee

    # a valid joint guarantee, but of column b alone (a one-column product)
    only_b = joint_guarantee([B], {"b": B.input_labels * 50}, 1e-6)
    with pytest.raises(ValidationError, match="earlier pass"):
        privatize_file(B, first, data.with_name("o.csv"), "b", joint_guarantee=only_b)


def test_joint_guarantee_refused_after_an_earlier_repeated_release(data: Path) -> None:
    """A column released twice by earlier passes (--into with --keep-raw, then
    --allow-repeat; or in place twice) was certified by a later joint guarantee as if it
    had been released once: the record's first mechanism alone entered the product."""
    from pmlkit.joint import joint_guarantee

    ref = {"a": ["x", "x", "y"] * 40, "b": ["u", "v", "u"] * 40}
    g = joint_guarantee([A, B], ref, 1e-6)
    rng = np.random.default_rng
    # a -> a1 (raw a kept), then a -> a2 again (raw a dropped): a is released twice
    first, second = data.with_name("first.csv"), data.with_name("second.csv")
    privatize_file(A, data, first, "a", into="a1", keep_raw=True, rng=rng(0))
    privatize_file(A, first, second, "a", into="a2", keep_raw=False, repeat=True,
                   rng=rng(1))
    with pytest.raises(DataError, match="repeated release"):
        privatize_file(B, second, data.with_name("o.csv"), "b", joint_guarantee=g,
                       rng=rng(2))
    assert not data.with_name("o.csv").exists()
    # in place twice: the second pass replaces the entry, the passes still show both
    one, two = data.with_name("one.csv"), data.with_name("two.csv")
    privatize_file(A, data, one, "a", rng=rng(0))
    privatize_file(A, one, two, "a", repeat=True, rng=rng(1))
    with pytest.raises(DataError, match="repeated release"):
        privatize_file(B, two, data.with_name("p.csv"), "b", joint_guarantee=g, rng=rng(2))
    # this pass repeating an earlier column is refused with a joint guarantee too
    with pytest.raises(DataError, match="repeated release"):
        privatize_file({"a": A, "b": B}, one, data.with_name("q.csv"), ["a", "b"],
                       joint_guarantee=g, repeat=True, rng=rng(2))
    # a joint guarantee of columns released once each still passes
    privatize_file(B, one, data.with_name("r.csv"), "b", joint_guarantee=g, rng=rng(2))
    assert previous_privatization(data.with_name("r.csv"))["joint_guarantee"] is not None
    # a record (written by hand, or by pmlkit before this check) that states a joint
    # guarantee over a column it shows released twice is refused when read
    man = data.with_name("r.csv.pmlkit.json")
    doc = json.loads(man.read_text())
    doc["previous_passes"].append({**doc["previous_passes"][0]})
    man.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="'a' was released more than once"):
        previous_privatization(data.with_name("r.csv"))


# -- case 4: release_leakage matches mechanisms by their labels -----------------------------

def brute_force_pml(ws: list[np.ndarray], p: np.ndarray) -> float:
    """max over output sequences y of log(max_x prod_r W_r[x, y_r] / P(y))."""
    best = -math.inf
    for ys in itertools.product(*(range(w.shape[1]) for w in ws)):
        col = np.prod([w[:, y] for w, y in zip(ws, ys, strict=True)], axis=0)
        best = max(best, math.log(col.max() / float(p @ col)))
    return best


def test_release_leakage_matches_rows_by_input_label() -> None:
    """Case 4: a copy of a mechanism with its labels in another order gave 1.172 where the
    truth is 1.355."""
    rng = np.random.default_rng(5)
    w = rng.dirichlet(np.ones(3), size=3)
    m = Mechanism(w, ("a", "b", "c"), ("0", "1", "2"))
    perm = [2, 0, 1]
    shuffled = Mechanism(w[perm], tuple(m.input_labels[i] for i in perm), m.output_labels)
    p = np.array([0.5, 0.3, 0.2])  # in m's label order
    truth = brute_force_pml([w, w], p)  # the same mechanism twice, rows aligned by hand
    positional = brute_force_pml([w, w[perm]], p)
    assert abs(truth - positional) > 1e-3  # the test can tell the two apart
    got = pmlkit.release_leakage([m, shuffled], p)
    assert got == pytest.approx(truth, rel=1e-9, abs=1e-12)
    # the shuffled one first: the prior follows its label order
    p2 = p[perm]
    assert pmlkit.release_leakage([shuffled, m], p2) == pytest.approx(truth, rel=1e-9)


def test_release_leakage_refuses_mismatched_labels() -> None:
    w = np.array([[0.7, 0.3], [0.4, 0.6]])
    m = Mechanism(w, ("a", "b"), ("0", "1"))
    other = Mechanism(w, ("a", "c"), ("0", "1"))
    with pytest.raises(ValidationError, match="input labels"):
        pmlkit.release_leakage([m, other], [0.5, 0.5])
    swapped = Mechanism(w[::-1], ("b", "a"), ("0", "1"))
    with pytest.raises(PMLError, match="has input labels"):
        pmlkit.release_leakage([m, swapped, w], [0.5, 0.5])


# -- the Dask folder output ------------------------------------------------------------------

@pytest.fixture(scope="module")
def scheduler():  # type: ignore[no-untyped-def]
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    yield cluster.scheduler_address
    cluster.close()


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_dask_folder_parts_carry_their_record(data: Path, scheduler: str, ext: str) -> None:
    from pmlkit.privatization._dask import privatize_file_dask

    out = data.with_name(f"out.{ext}") if ext == "csv" else data.with_name("out")
    privatize_file_dask(A, data, out, "a", rng=0, scheduler=scheduler, block_bytes=200)
    parts = sorted(out.glob(f"part-*.{ext}"))
    assert len(parts) > 1
    man = json.loads(out.with_name(out.name + ".pmlkit.json").read_text())
    for entry in man["data"]["parts"]:  # each part bound to its own released values
        part = out / entry["file"]
        values = (pq.read_table(part).column("a").to_pylist() if ext == "parquet" else
                  [ln.split(",")[1] for ln in part.read_text().splitlines()[1:]])
        assert entry["released_content"]["sha256"] == {"a": manual_digest(values)}
    # a second pass over a part, or over every part, needs the joint guarantee
    with pytest.raises(DataError, match="earlier pass"):
        privatize_file(B, parts[0], data.with_name(f"p.{ext}"), "b")
    with pytest.raises(DataError, match="earlier pass"):
        privatize_file(B, str(out / f"part-*.{ext}"), data.with_name("many"), "b")
    privatize_file(B, parts[0], data.with_name(f"p.{ext}"), "b", no_joint_guarantee=True)
    rec = previous_privatization(data.with_name(f"p.{ext}"))
    assert rec is not None and set(rec["privatized"]) == {"a", "b"}
    # raw data put in the folder in place of a part is not believed to be released
    if ext == "csv":
        shutil.copy(data, parts[0])
    else:
        import pyarrow.csv as pacsv

        pq.write_table(pacsv.read_csv(data), parts[0])
    with pytest.raises(DataError, match="refus"):
        privatize_file(B, parts[0], data.with_name(f"q.{ext}"), "b", no_joint_guarantee=True)


def test_converted_output_with_its_manifest_is_recognised(data: Path) -> None:
    """A CSV output converted to Parquet by pandas, its manifest moved along: the digests
    do not depend on the format, so the record is still checked and believed."""
    import pandas as pd

    first = data.with_name("first.csv")
    privatize_file(A, data, first, "a", rng=np.random.default_rng(0))
    conv = data.with_name("conv.parquet")
    pd.read_csv(first, dtype=str, keep_default_na=False).to_parquet(conv, index=False)
    shutil.copy(first.with_name("first.csv.pmlkit.json"),
                conv.with_name("conv.parquet.pmlkit.json"))
    with pytest.raises(DataError, match="earlier pass"):
        privatize_file(B, conv, data.with_name("o.parquet"), "b")
    # and the same conversion of the raw data with that manifest is refused
    raw = data.with_name("raw.parquet")
    pd.read_csv(data, dtype=str, keep_default_na=False).to_parquet(raw, index=False)
    shutil.copy(first.with_name("first.csv.pmlkit.json"),
                raw.with_name("raw.parquet.pmlkit.json"))
    with pytest.raises(DataError, match="digest mismatch"):
        privatize_file(B, raw, data.with_name("o.parquet"), "b", no_joint_guarantee=True)
