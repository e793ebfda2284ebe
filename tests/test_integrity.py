"""Pinned regressions: data in, data out. Each test reproduces a way the file pipeline used
to lose or alter data (duplicate names, re-typed or erased untouched cells, replaced
outputs, races, partial runs, signals, formats) and checks it no longer does."""

from __future__ import annotations

import bz2
import errno
import gzip
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit import Mechanism
from pmlkit.cli.main import main
from pmlkit.errors import DataError, ValidationError
from pmlkit.privatization import privatize_file

_W = np.array([[0.8, 0.2], [0.3, 0.7]])
_BALL = pmlkit.L1Ball([0.33, 0.67], 0.05)  # certified: uncertified files need --allow-uncertified
SEX = Mechanism(_W, ("Female", "Male"), ("Female", "Male"), uncertainty_set=_BALL.to_dict(),
                certified_eps=pmlkit.leakage_capacity(_W, _BALL))
NULL_WORDS = ["NA", "NULL", "null", "nan", "NaN", "N/A", "n/a", "#N/A", "-nan"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# 1. duplicate column names ------------------------------------------------------------

def test_duplicate_csv_header_is_refused(tmp_path):
    (tmp_path / "d.csv").write_text("id,sex,sex\n1,Male,Female\n")
    with pytest.raises(DataError, match=r"column name 'sex' appears 2 times"):
        privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.csv", "sex")
    assert listing(tmp_path) == ["d.csv"]


def test_duplicate_parquet_fields_are_refused(tmp_path):
    t = pa.Table.from_arrays([pa.array(["Male"]), pa.array(["Female"])], names=["sex", "sex"])
    pq.write_table(t, tmp_path / "d.parquet")
    with pytest.raises(DataError, match=r"column name 'sex' appears 2 times"):
        privatize_file(SEX, tmp_path / "d.parquet", tmp_path / "o.parquet", "sex")


def test_duplicate_names_refused_by_dask_engine(tmp_path):
    pytest.importorskip("distributed")
    from pmlkit.privatization._dask import privatize_file_dask

    (tmp_path / "d.csv").write_text("id,sex,sex\n1,Male,Female\n")
    with pytest.raises(DataError, match=r"column name 'sex' appears 2 times"):
        privatize_file_dask(SEX, tmp_path / "d.csv", tmp_path / "out", "sex")
    assert listing(tmp_path) == ["d.csv"]


def test_duplicate_names_refused_in_memory():
    df = pd.DataFrame([["Male", "Female"]], columns=["sex", "sex"])
    with pytest.raises(DataError, match="appears 2 times"):
        pmlkit.privatize(SEX, df, columns="sex")


def test_into_an_existing_column_refused_in_memory():
    df = pd.DataFrame({"sex": ["Male"], "keep": ["precious"]})
    with pytest.raises(DataError, match="into column 'keep' already exists"):
        pmlkit.privatize(SEX, df, columns="sex", into="keep")
    assert df["keep"].tolist() == ["precious"]


# 2. untouched cells -------------------------------------------------------------------

def test_null_words_survive_csv_and_parquet(tmp_path):
    rows = ["surname,country,sex"] + [f"{w},{w},Male" for w in NULL_WORDS]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.csv", "sex")
    privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.parquet", "sex")
    text = (tmp_path / "o.csv").read_text().splitlines()
    assert [line.rsplit(",", 1)[0] for line in text] == [r.rsplit(",", 1)[0] for r in rows]
    t = pq.read_table(tmp_path / "o.parquet")
    assert t.column("surname").to_pylist() == NULL_WORDS
    assert t.column("country").null_count == 0


def test_csv_to_parquet_keeps_text_as_text(tmp_path):
    (tmp_path / "d.csv").write_text(
        "zip,id,x,sex\n01234,12345678901234567890,1e400,Male\n"
        "00000,98765432109876543210123,-0,Female\n")
    privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.parquet", "sex")
    t = pq.read_table(tmp_path / "o.parquet")
    assert t.schema.field("zip").type == pa.string()
    assert t.column("zip").to_pylist() == ["01234", "00000"]
    assert t.column("id").to_pylist() == ["12345678901234567890", "98765432109876543210123"]
    assert t.column("x").to_pylist() == ["1e400", "-0"]


def test_parquet_keeps_pandas_metadata_types_and_codec(tmp_path):
    df = pd.DataFrame({"sex": ["Male", "Female", "Male"],
                       "n": pd.array([1, None, 3], dtype="Int16"),
                       "big": np.array([2**62, -(2**62), 7], dtype=np.int64),
                       "f": [np.inf, -0.0, np.nan]},
                      index=pd.RangeIndex(10, 16, 2))
    df.to_parquet(tmp_path / "d.parquet", compression="zstd")
    privatize_file(SEX, tmp_path / "d.parquet", tmp_path / "o.parquet", "sex")
    src, out = pq.read_table(tmp_path / "d.parquet"), pq.read_table(tmp_path / "o.parquet")
    assert out.schema.remove_metadata() == src.schema.remove_metadata()
    assert out.schema.metadata[b"pandas"] == src.schema.metadata[b"pandas"]
    for c in ("n", "big", "f"):
        assert out.column(c).equals(src.column(c))
    back = pd.read_parquet(tmp_path / "o.parquet")
    assert back.index.equals(df.index) and str(back["n"].dtype) == "Int16"
    md = pq.ParquetFile(tmp_path / "o.parquet").metadata.row_group(0)
    assert {md.column(j).compression for j in range(md.num_columns)} == {"ZSTD"}


def test_names_adult_leaves_untouched_cells_alone(tmp_path, adult_dir):
    code = main(["privatize", "--mechanism", str(_save(tmp_path)), "--input",
                 str(adult_dir / "adult.data"), "--names", "adult", "--column", "sex",
                 "--output", str(tmp_path / "a.csv"), "--seed", "1"])
    assert code == 0
    src = (adult_dir / "adult.data").read_text().splitlines()
    src = [line for line in src if line.strip()]
    out = (tmp_path / "a.csv").read_text().splitlines()[1:]  # a header line is added
    assert len(out) == len(src) == 32561
    k = 9  # sex
    changed = sum(a.split(",")[:k] + a.split(",")[k + 1:] != b.split(",")[:k] +
                  b.split(",")[k + 1:] for a, b in zip(src, out, strict=True))
    assert changed == 0


def _save(tmp_path: Path, mech: Mechanism = SEX) -> Path:
    p = tmp_path / "m.json"
    mech.save(p)
    return p


# 3. overwrite destroys unrelated data -------------------------------------------------

def test_dask_overwrite_never_deletes_a_foreign_folder(tmp_path):
    pytest.importorskip("distributed")
    from pmlkit.privatization._dask import privatize_file_dask

    (tmp_path / "d.csv").write_text("sex\nMale\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "thesis.tex").write_text("years of work")
    with pytest.raises(DataError, match="not a previous pmlkit output"):
        privatize_file_dask(SEX, tmp_path / "d.csv", docs, "sex", overwrite=True)
    assert (docs / "thesis.tex").read_text() == "years of work"


def test_dask_overwrite_replaces_its_own_previous_output(tmp_path):
    distributed = pytest.importorskip("distributed")
    from pmlkit.privatization._dask import privatize_file_dask

    n = 4000
    pd.DataFrame({"id": np.arange(n), "sex": ["Male", "Female"] * (n // 2)}).to_csv(
        tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    man = tmp_path / "out.pmlkit.json"

    def parts() -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(out.iterdir())}

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        kw = {"block_bytes": 8192, "scheduler": cluster.scheduler_address}
        privatize_file_dask(SEX, tmp_path / "d.csv", out, "sex", rng=1, **kw)
        first, first_man = parts(), man.read_text()
        assert len(first) > 1
        # without overwrite: refused, nothing touched
        with pytest.raises(DataError, match="already exists"):
            privatize_file_dask(SEX, tmp_path / "d.csv", out, "sex", rng=2, **kw)
        assert parts() == first and man.read_text() == first_man
        # with overwrite: the folder and its manifest are the new release's, whole
        privatize_file_dask(SEX, tmp_path / "d.csv", out, "sex", rng=2, overwrite=True,
                            **kw)
    second = parts()
    assert second != first
    doc = json.loads(man.read_text())
    assert {p["file"]: p["sha256"] for p in doc["data"]["parts"]} == second
    released = pd.concat([pq.read_table(out / name).to_pandas() for name in second])
    assert released["id"].tolist() == [str(i) for i in range(n)]  # (CSV text, in order)
    # nothing left beside it: no moved-aside old folder, no temporary folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "out", "out.pmlkit.json"]


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"),
                                     KeyboardInterrupt()])
def test_dask_failed_overwrite_keeps_the_previous_output(tmp_path, monkeypatch, failure):
    # the previous folder was removed as soon as the new one was in place; when the
    # manifest then failed, the new folder was removed too: no data at all, and the old
    # manifest left describing parts that no longer existed
    distributed = pytest.importorskip("distributed")
    import pmlkit.privatization._publish as publish
    from pmlkit.privatization._dask import privatize_file_dask

    pd.DataFrame({"id": np.arange(2000), "sex": ["Male", "Female"] * 1000}).to_csv(
        tmp_path / "d.csv", index=False)
    out = tmp_path / "out"

    def snapshot() -> dict[str, bytes]:
        return {str(p.relative_to(tmp_path)): p.read_bytes()
                for p in sorted(tmp_path.rglob("*")) if p.is_file()}

    def fail(*a, **k):
        raise failure

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        kw = {"block_bytes": 8192, "scheduler": cluster.scheduler_address}
        privatize_file_dask(SEX, tmp_path / "d.csv", out, "sex", rng=1, **kw)
        before = snapshot()
        monkeypatch.setattr(publish, "commit", fail)
        with pytest.raises(DataError if isinstance(failure, OSError) else KeyboardInterrupt):
            privatize_file_dask(SEX, tmp_path / "d.csv", out, "sex", rng=2, overwrite=True,
                                **kw)
    assert snapshot() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "out", "out.pmlkit.json"]


def test_dask_previous_output_that_cannot_be_put_back_is_kept_and_named(tmp_path,
                                                                         monkeypatch):
    """When this run's folder cannot be removed after a failed publish, the previous
    output is moved to a name no later run removes (a hidden temporary name is cleared
    as a killed run's leftover) and the error says where it is."""
    import shutil

    from pmlkit.privatization import _dask

    out, tmp = tmp_path / "out", tmp_path / "new"
    out.mkdir()
    (out / "part.0.csv").write_text("old\n")
    tmp.mkdir()
    (tmp / "part.0.csv").write_text("new\n")
    monkeypatch.setattr(shutil, "rmtree", lambda *a, **k: None)  # the removal fails

    def then() -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(DataError, match="previous output could not be put back: it is "
                                        "kept at") as info:
        _dask._publish_folder(tmp, out, overwrite=True, then=then)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("out.previous-")]
    assert len(kept) == 1 and str(kept[0]) in str(info.value)
    assert (kept[0] / "part.0.csv").read_text() == "old\n"


# 4. races, partial runs, signals, OS errors -------------------------------------------

@pytest.fixture
def big_csv(tmp_path):
    g = np.random.default_rng(0)
    n = 100_000
    df = pd.DataFrame({"id": np.arange(n), "sex": np.where(g.random(n) < 0.4, "Female",
                                                           "Male")})
    df.to_csv(tmp_path / "big.csv", index=False)
    return tmp_path / "big.csv"


def _manifest_matches(out: Path) -> bool:
    man = json.loads(out.with_name(out.name + ".pmlkit.json").read_text())
    return man["data"]["sha256"] == sha(out)


def test_two_concurrent_runs_one_wins(tmp_path, big_csv):
    for trial in range(2):
        out = tmp_path / f"o{trial}.parquet"
        results: list[object] = [None, None]

        def go(i: int, out: Path = out, results: list[object] = results) -> None:
            try:
                privatize_file(SEX, big_csv, out, "sex", rng=i if i else None,
                               batch_rows=50_000)
                results[i] = "ok"
            except DataError as exc:
                results[i] = str(exc)

        threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results.count("ok") == 1, results
        assert any("already exists" in str(r) for r in results)
        assert _manifest_matches(out)
    # with --overwrite both may succeed, but data and manifest always belong together
    out = tmp_path / "o0.parquet"
    threads = [threading.Thread(target=lambda: _quiet(privatize_file, SEX, big_csv, out, "sex",
                                                      overwrite=True)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _manifest_matches(out)
    assert not [p for p in tmp_path.iterdir() if ".pmlkit-" in p.name]


def _quiet(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except DataError:
        pass


def test_multi_file_run_is_all_or_nothing(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("sex\nMale\n")
    (tmp_path / "in" / "b.csv").write_text("sex\nMartian\n")
    with pytest.raises(DataError, match="Martian"):
        privatize_file(SEX, str(tmp_path / "in" / "*.csv"), tmp_path / "out", "sex")
    assert not (tmp_path / "out").exists()  # (the folder the run made goes with it)
    # a failure while publishing the second output removes the first again
    (tmp_path / "in" / "b.csv").write_text("sex\nFemale\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "b.csv").write_text("someone else's")
    with pytest.raises(DataError, match="already exists"):
        privatize_file(SEX, str(tmp_path / "in" / "*.csv"), tmp_path / "out", "sex")
    assert listing(tmp_path / "out") == ["b.csv"]


def test_failed_overwrite_puts_the_replaced_files_back(tmp_path, monkeypatch):
    # --overwrite replaced the previous output, then failed on its manifest (disk full,
    # or a folder at the manifest's name): the undo removed the new output, and the
    # previous one was gone, its manifest left behind describing nothing
    import pmlkit.privatization._publish as publish

    (tmp_path / "d.csv").write_text("sex\nMale\n")
    out = tmp_path / "o.csv"
    privatize_file(SEX, tmp_path / "d.csv", out, "sex")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    real_write = Path.write_text

    def full(self, *a, **k):
        if self.name.startswith(".o.csv.pmlkit.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, *a, **k)

    monkeypatch.setattr(publish.Path, "write_text", full)
    with pytest.raises(DataError, match="no space left"):
        privatize_file(SEX, tmp_path / "d.csv", out, "sex", overwrite=True)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    # a folder where the manifest goes: refused, the previous output kept
    (tmp_path / "o.csv.pmlkit.json").unlink()
    (tmp_path / "o.csv.pmlkit.json").mkdir()
    with pytest.raises(DataError, match="is a folder"):
        privatize_file(SEX, tmp_path / "d.csv", out, "sex", overwrite=True)
    assert out.read_bytes() == before["o.csv"]
    assert listing(tmp_path) == ["d.csv", "o.csv", "o.csv.pmlkit.json"]
    # several outputs: the first one's previous version comes back too
    (tmp_path / "in").mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / "in" / name).write_text("sex\nFemale\n")
    privatize_file(SEX, str(tmp_path / "in" / "*.csv"), tmp_path / "out", "sex")
    old = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    (tmp_path / "out" / "b.csv.pmlkit.json").unlink()
    (tmp_path / "out" / "b.csv.pmlkit.json").mkdir()
    with pytest.raises(DataError, match="is a folder"):
        privatize_file(SEX, str(tmp_path / "in" / "*.csv"), tmp_path / "out", "sex",
                       overwrite=True)
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()
            if p.is_file()} == {k: v for k, v in old.items() if k != "b.csv.pmlkit.json"}
    assert listing(tmp_path / "out") == sorted(old)


def test_failed_overwrite_puts_a_replaced_symbolic_link_back(tmp_path):
    """An output that is a symbolic link is replaced by the file (the link's target is
    never written through); when the publish then fails, the link itself comes back (it
    was unlinked)."""
    (tmp_path / "d.csv").write_text("sex\nMale\n")
    (tmp_path / "prev.csv").write_text("sex\nFemale\n")
    out = tmp_path / "o.csv"
    out.symlink_to("prev.csv")
    (tmp_path / "o.csv.pmlkit.json").mkdir()  # the manifest cannot be written
    with pytest.raises(DataError, match="is a folder"):
        privatize_file(SEX, tmp_path / "d.csv", out, "sex", overwrite=True)
    assert out.is_symlink() and os.readlink(out) == "prev.csv"
    assert (tmp_path / "prev.csv").read_text() == "sex\nFemale\n"
    assert listing(tmp_path) == ["d.csv", "o.csv", "o.csv.pmlkit.json", "prev.csv"]


def test_unwritable_output_is_one_clear_line(tmp_path, capsys, monkeypatch):
    import pmlkit.privatization._publish as publish

    (tmp_path / "d.csv").write_text("sex\nMale\n")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(publish.os, "link", full)
    code, _, err = run(capsys, "privatize", "--mechanism", _save(tmp_path), "--input",
                       tmp_path / "d.csv", "--column", "sex", "--output", tmp_path / "o.csv")
    assert code == 1 and err.count("\n") == 1
    assert "no space left" in err and "internal error" not in err
    assert listing(tmp_path) == ["d.csv", "m.json"]
    monkeypatch.undo()
    code, _, err = run(capsys, "privatize", "--mechanism", _save(tmp_path), "--input",
                       tmp_path / "d.csv", "--column", "sex", "--output",
                       tmp_path / "nope" / "o.csv")
    assert code == 1 and err.count("\n") == 1 and "internal error" not in err


def _wait_for_temp(folder: Path, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Until a hidden temporary file appears in ``folder`` (or the process ends)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        if any(n.startswith(".") for n in listing(folder)):
            return
        time.sleep(0.01)


# (SIGINT given its default handler: a pytest run as a background job starts with SIGINT
# ignored, which the child would inherit and keep)
SCRIPT = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
          "from pmlkit.cli.main import main; sys.exit(main(sys.argv[1:]))")


def test_signals_leave_no_partial_output(tmp_path, big_csv):
    mech = _save(tmp_path)
    before = sha(big_csv)
    out = tmp_path / "out.parquet"
    args = [sys.executable, "-c", SCRIPT, "privatize", "--mechanism", str(mech), "--input",
            str(big_csv), "--column", "sex", "--output", str(out), "--batch-rows", "10000",
            "--overwrite"]
    rnd = random.Random(12)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        proc = subprocess.Popen(args, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        _wait_for_temp(tmp_path, proc)  # the run is writing: kill it at a random point
        time.sleep(rnd.uniform(0.0, 0.3))
        proc.send_signal(sig)
        proc.wait(timeout=60)
        names = listing(tmp_path)
        assert not [n for n in names if n.startswith(".")], (sig, names)  # no temp files
        if "out.parquet" in names:  # finished before the signal: complete and paired
            assert _manifest_matches(out)
        assert sha(big_csv) == before
    # SIGKILL cannot be caught: the next run recognises and removes the leftovers
    proc = subprocess.Popen(args, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    _wait_for_temp(tmp_path, proc)
    proc.kill()
    proc.wait(timeout=60)
    fake = tmp_path / f".out.parquet.pmlkit-{proc.pid}-deadbeef.tmp"
    fake.write_bytes(b"partial")  # as if the kill had come mid-write
    assert subprocess.run(args, capture_output=True).returncode == 0
    assert not [n for n in listing(tmp_path) if n.startswith(".")]
    assert _manifest_matches(out) and sha(big_csv) == before


# 6. formats ---------------------------------------------------------------------------

def test_compressed_csv_out_and_in(tmp_path):
    (tmp_path / "d.csv").write_text("id,sex\n007,Male\n008,Female\n")
    privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.csv.gz", "sex")
    privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.csv.bz2", "sex")
    text = gzip.decompress((tmp_path / "o.csv.gz").read_bytes()).decode()
    assert text.startswith("id,sex\n007,") and bz2.decompress(
        (tmp_path / "o.csv.bz2").read_bytes()).decode().startswith("id,sex\n007,")
    # the CSV output is read with its manifest: privatising sex again is a repeated release
    privatize_file(SEX, tmp_path / "o.csv.gz", tmp_path / "again.csv", "sex", repeat=True)
    assert (tmp_path / "again.csv").read_text().splitlines()[1].startswith("007,")


def test_tsv_by_extension_and_minimal_quoting(tmp_path):
    (tmp_path / "d.tsv").write_text("id\tnote\tsex\n1\ta,b\tMale\n2\tx\tFemale\n")
    privatize_file(SEX, tmp_path / "d.tsv", tmp_path / "o.tsv", "sex")
    lines = (tmp_path / "o.tsv").read_text().splitlines()
    assert lines[0] == "id\tnote\tsex" and lines[1].startswith("1\ta,b\t")
    privatize_file(SEX, tmp_path / "d.tsv", tmp_path / "o.csv", "sex")
    assert (tmp_path / "o.csv").read_text().splitlines()[1].startswith('1,"a,b",')


def test_dask_engine_missing_names_the_extra(tmp_path, monkeypatch):
    from pmlkit.privatization._dask import privatize_file_dask

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(DataError, match=r"pmlkit\[dask\]"):
        privatize_file_dask(SEX, tmp_path / "d.csv", tmp_path / "out", "sex")


# manifest for the analyst --------------------------------------------------------------

def test_manifest_and_parquet_metadata_carry_the_mechanism(tmp_path):
    (tmp_path / "d.csv").write_text("sex,age\nMale,30\nFemale,40\n")
    privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.parquet", "sex", into="sex_p",
                   keep_raw=True)
    man = json.loads((tmp_path / "o.parquet.pmlkit.json").read_text())
    meta = json.loads(pq.read_schema(tmp_path / "o.parquet").metadata[b"pmlkit"])
    for doc in (man, meta):
        entry = doc["privatized"]["sex_p"]
        assert entry["column"] == "sex"
        assert Mechanism.from_dict(entry["mechanism"]).matrix.tolist() == SEX.matrix.tolist()
        assert entry["mechanism_sha256"] == SEX.to_dict()["sha256"]
    assert man["data"]["sha256"] == sha(tmp_path / "o.parquet")


# missing values and unknown labels at privatisation ------------------------------------

def test_missing_policies(tmp_path):
    (tmp_path / "d.csv").write_text("id,sex\n1,Male\n2,\n3,Female\n")
    with pytest.raises(DataError, match="1 row holds a null"):
        privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.csv", "sex")
    privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.parquet", "sex", missing="keep")
    got = pq.read_table(tmp_path / "o.parquet").column("sex").to_pylist()
    assert got[1] is None and got[0] in ("Male", "Female")
    cat = Mechanism(np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]),
                    ("(missing)", "Female", "Male"), ("(missing)", "Female", "Male"))
    privatize_file(cat, tmp_path / "d.csv", tmp_path / "c.parquet", "sex",
                   missing="category", rng=0)
    assert len(pq.read_table(tmp_path / "c.parquet")) == 3
    with pytest.raises(ValidationError, match="'\\(missing\\)'"):
        privatize_file(SEX, tmp_path / "d.csv", tmp_path / "x.csv", "sex", missing="category")


def test_unknown_label_mapping_is_explicit_and_recorded(tmp_path):
    (tmp_path / "d.csv").write_text("sex\nMale\nIceland\nIceland\nFemale\n")
    with pytest.raises(DataError, match="'Iceland' appears in 2 rows"):
        privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.csv", "sex")
    rep = privatize_file(SEX, tmp_path / "d.csv", tmp_path / "o.csv", "sex",
                         unknown_as="Female")
    man = json.loads((tmp_path / "o.csv.pmlkit.json").read_text())
    assert man["privatized"]["sex"]["unknown_as"] == "Female"
    # how many rows were mapped is a count of the raw input: the caller's, not published
    assert rep.input_counts["sex"] == {"unknown_mapped_rows": 2}
    assert "unknown_mapped_rows" not in man["privatized"]["sex"]


# design: --output guard, categories, missing values, size guard ----------------------------

@pytest.fixture
def ref_csv(tmp_path):
    rows = ["sex,country"] + ["Male,NO"] * 60 + ["Female,SE"] * 40 + [",SE"] * 5
    (tmp_path / "ref.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "ref.csv"


DESIGN = ("design", "--column", "sex", "--epsilon", "1.0", "--delta", "1e-3")


def test_design_out_never_replaces_reference_or_foreign_file(tmp_path, capsys, ref_csv):
    before = ref_csv.read_bytes()
    code, _, err = run(capsys, *DESIGN, "--reference", ref_csv, "--output", ref_csv,
                       "--overwrite", "--missing", "keep")
    assert code == 1 and "is the --reference file" in err and ref_csv.read_bytes() == before
    (tmp_path / "notes.json").write_text('{"mine": true}')
    code, _, err = run(capsys, *DESIGN, "--reference", ref_csv, "--output",
                       tmp_path / "notes.json", "--overwrite", "--missing", "keep")
    assert code == 1 and "not a pmlkit mechanism file" in err
    assert (tmp_path / "notes.json").read_text() == '{"mine": true}'
    # a previous mechanism may be replaced with --overwrite
    assert run(capsys, *DESIGN, "--reference", ref_csv, "--output", tmp_path / "m.json",
               "--missing", "keep")[0] == 0
    assert run(capsys, *DESIGN, "--reference", ref_csv, "--output", tmp_path / "m.json",
               "--missing", "keep", "--overwrite")[0] == 0


def test_design_missing_and_categories(tmp_path, capsys, ref_csv):
    code, _, err = run(capsys, *DESIGN, "--reference", ref_csv, "--output", tmp_path / "a.json")
    assert code == 1 and "5 null" in err and "--missing category" in err
    code, _, err = run(capsys, *DESIGN, "--reference", ref_csv, "--output",
                         tmp_path / "c.json", "--missing", "category",
                         "--categories", "Female,Male,Other", "--json")
    assert code == 0, err
    labels = Mechanism.load(tmp_path / "c.json").input_labels
    assert labels == ("Female", "Male", "Other", "(missing)")
    (tmp_path / "cats.txt").write_text("Female\nMale\n\nIceland\n")
    code, _, err = run(capsys, *DESIGN, "--reference", ref_csv, "--output", tmp_path / "f.json",
                       "--missing", "keep", "--categories", f"@{tmp_path / 'cats.txt'}")
    assert code == 0, err
    assert Mechanism.load(tmp_path / "f.json").input_labels == ("Female", "Male", "Iceland")
    # the designed mechanism privatises the missing category and the unseen label
    (tmp_path / "d.csv").write_text("sex\nMale\n\nFemale\n")
    code, _, err = run(capsys, "privatize", "--mechanism", tmp_path / "c.json", "--input",
                       tmp_path / "d.csv", "--column", "sex", "--missing", "category",
                       "--output", tmp_path / "o.csv")
    assert code == 0, err


def test_design_refuses_an_id_like_column_quickly(tmp_path, capsys):
    n = 7378
    (tmp_path / "ids.csv").write_text("id\n" + "\n".join(str(i) for i in range(n)) + "\n")
    t0 = time.perf_counter()
    code, _, err = run(capsys, *DESIGN[:2], "id", *DESIGN[3:], "--reference",
                       tmp_path / "ids.csv", "--output", tmp_path / "m.json")
    assert time.perf_counter() - t0 < 10
    assert code == 1 and "7378 distinct values" in err and "--categories" in err
    assert err.count("\n") == 1 and not (tmp_path / "m.json").exists()


def test_cli_privatize_missing_keep_and_unknown_as(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("id,sex\n1,Male\n2,?\n3,Iceland\n")
    code, _, err = run(capsys, "privatize", "--mechanism", _save(tmp_path), "--input",
                       tmp_path / "d.csv", "--column", "sex", "--na", "?", "--missing", "keep",
                       "--unknown-as", "Female", "--output", tmp_path / "o.csv")
    assert code == 0, err
    lines = (tmp_path / "o.csv").read_text().splitlines()
    assert lines[2] == "2,"  # kept missing
    code, _, err = run(capsys, "privatize", "--mechanism", _save(tmp_path), "--input",
                       tmp_path / "d.csv", "--column", "sex", "--unknown-as", "Martian",
                       "--output", tmp_path / "x.csv")
    assert code == 2 and "--unknown-as" in err


def test_parquet_compression_can_be_chosen(tmp_path, capsys):
    pd.DataFrame({"sex": ["Male", "Female"], "x": [1, 2]}).to_parquet(
        tmp_path / "d.parquet", compression="snappy")
    code, _, err = run(capsys, "privatize", "--mechanism", _save(tmp_path), "--input",
                       tmp_path / "d.parquet", "--column", "sex", "--compression", "gzip",
                       "--output", tmp_path / "o.parquet")
    assert code == 0, err
    md = pq.ParquetFile(tmp_path / "o.parquet").metadata.row_group(0)
    assert {md.column(j).compression for j in range(md.num_columns)} == {"GZIP"}
    with pytest.raises(ValidationError, match="compression applies to Parquet"):
        privatize_file(SEX, tmp_path / "d.parquet", tmp_path / "o.csv", "sex",
                       compression="gzip")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_csv_lines_end_alike_where_pyarrow_cannot_set_the_line_end(tmp_path, monkeypatch,
                                                                   newline):
    """pyarrow before 26 has no ``eol`` write option: the CSV writer then writes the
    batch through its general path, with the same bytes (line ends included)."""
    import pyarrow.csv as pacsv

    from pmlkit._csv_text import CsvLayout, CsvTextWriter

    rows = ["007", "8", "9"], ["Male", "Female", "Male"]
    batch = pa.record_batch([pa.array(rows[0]), pa.array(rows[1])], names=["id", "sex"])
    lines = "".join(f"{a},{b}{newline}" for a, b in zip(*rows, strict=True))
    want = ("id,sex" + newline + lines).encode()

    def written() -> bytes:
        path = tmp_path / "o.csv"
        with open(path, "wb") as sink:
            CsvTextWriter(sink, ["id", "sex"], layout=CsvLayout(newline=newline)).write(batch)
        return path.read_bytes()

    assert written() == want
    real = pacsv.WriteOptions

    def old_options(**kw):
        if "eol" in kw:
            raise TypeError("__init__() got an unexpected keyword argument 'eol'")
        return real(**kw)

    monkeypatch.setattr(pacsv, "WriteOptions", old_options)
    assert written() == want


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_quoted_line_breaks_across_read_blocks_are_released(tmp_path, newline):
    """A valid CSV whose quoted fields hold line breaks (comments, addresses) was refused
    once one of them fell across a read block of pyarrow's parser ("out of sync with
    chunker"); every cell now comes back, byte for byte."""
    from pmlkit.privatization import privatize_file

    keep = Mechanism(np.eye(2), ("a", "b"), ("a", "b"))
    lines = ["id,c,note"] + [
        f'{i},{"ab"[i % 2]},' + (f'"line {i}{newline}second, line"' if i % 2 else "x")
        for i in range(120_000)]
    raw = (newline.join(lines) + newline).encode()
    (tmp_path / "in.csv").write_bytes(raw)
    for rows in (1000, 65_536):
        out = tmp_path / f"out{rows}.csv"
        rep = privatize_file(keep, tmp_path / "in.csv", out, "c", rng=0, batch_rows=rows)
        assert rep.rows == 120_000
        assert out.read_bytes() == raw
