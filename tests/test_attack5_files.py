"""Attacks on file privatisation (reading, writing and hashing threads).

* Under one research seed the released file holds, cell for cell (Python's ``csv``
  module), the input's untouched cells and, in the privatised column, the in-memory release
  of that column under the same seed (one word of the stream per row, a kept missing cell
  included): on quoted cells with commas and quotes, CRLF lines
  with a byte-order mark, missing values kept, rows of several KB, multibyte UTF-8, a
  single row with or without its newline. Parquet outputs hold the same values.
* The manifest's SHA-256 is that of the published bytes (recomputed here).
* A file that fails late (an unknown label in its last rows, text that is not UTF-8 after
  many valid blocks) leaves nothing in the output folder, raises one clear error naming the
  problem, and leaves no thread running.
* A run stopped by SIGTERM or SIGINT at a random moment either finished (the output and
  a manifest whose digest matches it; a signal after the commit may still set the exit
  code) or failed and left nothing at all: no output, no temporary file, no manifest.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit.errors import DataError

LABELS = ["Female", "Male"]


def _mech() -> pmlkit.Mechanism:
    return pmlkit.Mechanism(np.array([[0.7, 0.3], [0.4, 0.6]]), LABELS, LABELS)


def _rows(n: int, seed: int, *, quoted: bool = False, wide: int = 0, multibyte: bool = False,
          missing: bool = False) -> list[list[str]]:
    g = np.random.default_rng(seed)
    out = []
    for i in range(n):
        sx = LABELS[int(g.integers(2))]
        if missing and i % 11 == 5:
            sx = ""
        a = f'x,{i}"q' if quoted and i % 5 == 0 else str(i)
        c = ("é日本😀" * 3 if multibyte else "c") + "W" * wide
        out.append([a, sx, c])
    return out


def _write_csv(path: Path, rows: list[list[str]], *, newline: str = "\n", bom: bool = False,
               last_newline: bool = True) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=newline)
    w.writerow(["a", "sex", "c"])
    w.writerows(rows)
    text = buf.getvalue()
    if not last_newline:
        text = text[:-len(newline)]
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def _read_rows(path: Path) -> list[list[str]]:
    csv.field_size_limit(1 << 26)
    text = path.read_bytes().decode("utf-8-sig")
    return list(csv.reader(io.StringIO(text, newline="")))


def _sha_ok(dst: Path) -> bool:
    manifest = Path(str(dst) + ".pmlkit.json")
    digest = hashlib.sha256(dst.read_bytes()).hexdigest()
    return digest in json.dumps(json.loads(manifest.read_text()))


CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    # name: (rows kwargs, file kwargs, privatize_file kwargs)
    "quoted_crlf_bom": ({"n": 30000, "quoted": True}, {"newline": "\r\n", "bom": True}, {}),
    "missing_keep": ({"n": 20000, "missing": True}, {}, {"missing": "keep"}),
    "wide_rows": ({"n": 400, "wide": 6000}, {}, {}),
    "multibyte": ({"n": 30000, "multibyte": True}, {}, {}),
    "one_row": ({"n": 1}, {}, {}),
    "one_row_no_newline": ({"n": 1}, {"last_newline": False}, {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeded_release_is_the_column_release(tmp_path: Path, name: str) -> None:
    rkw, fkw, pkw = CASES[name]
    rows = _rows(seed=len(name), **rkw)
    src = tmp_path / "in.csv"
    _write_csv(src, rows, **fkw)
    col = [r[1] for r in rows]
    # one word of the stream per row, a kept missing cell included (it stays empty)
    released = pmlkit.privatize(_mech(), [v or LABELS[0] for v in col], rng=5)
    expected = [v and r for v, r in zip(col, released, strict=True)]
    for ext in ("csv", "parquet"):
        dst = tmp_path / f"out.{ext}"
        pmlkit.privatize_file(_mech(), src, dst, "sex", rng=5, **pkw)
        assert _sha_ok(dst)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            ["in.csv", f"out.{ext}", f"out.{ext}.pmlkit.json"])
        if ext == "csv":
            got = _read_rows(dst)
            assert got[0] == ["a", "sex", "c"]
            assert [r[0] for r in got[1:]] == [r[0] for r in rows]
            assert [r[2] for r in got[1:]] == [r[2] for r in rows]
            assert [r[1] for r in got[1:]] == expected
        else:
            t = pq.read_table(dst)
            got_sex = [("" if v is None else v) for v in t.column("sex").to_pylist()]
            assert got_sex == expected
            assert [str(v) for v in t.column("a").to_pylist()] == [r[0] for r in rows]
        dst.unlink()
        Path(str(dst) + ".pmlkit.json").unlink()


def _other_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t is not threading.main_thread()
                  and t.name.startswith("pmlkit"))


@pytest.mark.parametrize("src_ext", ["csv", "parquet"])
@pytest.mark.parametrize("dst_ext", ["csv", "parquet", "tsv"])
def test_late_unknown_label_leaves_nothing(tmp_path: Path, src_ext: str, dst_ext: str) -> None:
    n = 400_000
    g = np.random.default_rng(1)
    sex = np.array(LABELS, dtype=object)[g.integers(0, 2, n)]
    sex[n - 7] = "Other"
    t = pa.table({"a": pa.array(np.arange(n)), "sex": pa.array(sex.tolist()),
                  "c": pa.array(["é,x"] * n)})
    src = tmp_path / f"in.{src_ext}"
    if src_ext == "csv":
        pacsv.write_csv(t, src)
    else:
        pq.write_table(t, src, row_group_size=50_000)
    out = tmp_path / "out"
    out.mkdir()
    before = _other_threads()
    with pytest.raises(DataError) as err:
        pmlkit.privatize_file(_mech(), src, out / f"o.{dst_ext}", "sex", rng=1)
    msg = str(err.value)
    assert "'Other'" in msg and "\n" not in msg
    assert list(out.iterdir()) == []
    deadline = time.monotonic() + 5
    while _other_threads() != before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _other_threads() == before


def test_late_invalid_utf8_leaves_nothing(tmp_path: Path) -> None:
    rows = _rows(300_000, 3)
    src = tmp_path / "in.csv"
    _write_csv(src, rows)
    with open(src, "ab") as f:
        f.write(b"9,Male,\xc3(\n")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DataError) as err:
        pmlkit.privatize_file(_mech(), src, out / "o.csv", "sex", rng=1)
    assert "UTF" in str(err.value) and "\n" not in str(err.value)
    assert list(out.iterdir()) == []


_RUN = """
import signal, sys, numpy as np, pmlkit
# SIGINT raises KeyboardInterrupt also when pytest runs as a background job (the shell
# starts it with SIGINT ignored, and a child inherits that; Python then installs no handler)
signal.signal(signal.SIGINT, signal.default_int_handler)
m = pmlkit.Mechanism(np.array([[0.7, 0.3], [0.4, 0.6]]), ["Female", "Male"],
                     ["Female", "Male"])
pmlkit.privatize_file(m, sys.argv[1], sys.argv[2], "sex", rng=3)
"""


def _big_inputs(folder: Path, n: int) -> dict[str, Path]:
    g = np.random.default_rng(0)
    t = pa.table({"a": pa.array(g.integers(0, 10**9, n)),
                  "sex": pa.array(np.array(LABELS)[g.integers(0, 2, n)]),
                  "c": pa.array(np.array(["x", "é日", "q,w"])[g.integers(0, 3, n)])})
    out = {"csv": folder / "big.csv", "parquet": folder / "big.parquet"}
    pacsv.write_csv(t, out["csv"])
    pq.write_table(t, out["parquet"])
    return out


def _env() -> dict[str, str]:
    src = str(Path(pmlkit.__file__).resolve().parents[1])
    return dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))


def _outcome_ok(rc: int, folder: Path, dst: Path) -> bool:
    """All or nothing: the published output with its manifest (also when the signal came
    after the commit, as the interpreter shut down: the exit code is then the signal's),
    or, after a failure, nothing at all."""
    names = sorted(p.name for p in folder.iterdir())
    if names == sorted([dst.name, dst.name + ".pmlkit.json"]):
        return _sha_ok(dst)
    return rc != 0 and names == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_at_random_moments_leaves_all_or_nothing(tmp_path: Path, sig: int) -> None:
    inputs = _big_inputs(tmp_path, 300_000)
    g = np.random.default_rng(int(sig))
    for it in range(3):
        src_ext = ("csv", "parquet")[it % 2]
        dst_ext = ("csv", "tsv", "parquet")[it % 3]
        folder = tmp_path / f"run{it}"
        folder.mkdir()
        dst = folder / f"out.{dst_ext}"
        proc = subprocess.Popen([sys.executable, "-c", _RUN, str(inputs[src_ext]), str(dst)],
                                env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # after the start-up: while reading, privatising or writing
        start = time.monotonic()
        while not any(folder.iterdir()) and proc.poll() is None \
                and time.monotonic() - start < 30:
            time.sleep(0.002)
        time.sleep(float(g.uniform(0.0, 0.3)))
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # a hang
            proc.kill()
            proc.communicate()
            pytest.fail(f"{src_ext}->{dst_ext}: no exit 60 s after the signal")
        assert _outcome_ok(proc.returncode, folder, dst), (
            src_ext, dst_ext, proc.returncode, sorted(p.name for p in folder.iterdir()),
            err.decode()[-800:])


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_a_row_of_several_megabytes_is_released(tmp_path: Path, ext: str) -> None:
    # one cell of 3 MB (a document kept in a CSV): the release reads it as it reads any
    # row, whatever the size of the blocks it parses the file in
    big = "x" * 3_000_000
    rows = [[str(i), LABELS[i % 2], big if i == 3 else "c"] for i in range(10)]
    src = tmp_path / "in.csv"
    _write_csv(src, rows)
    dst = tmp_path / f"out.{ext}"
    pmlkit.privatize_file(_mech(), src, dst, "sex", rng=2)
    assert _sha_ok(dst)
    if ext == "csv":
        got = _read_rows(dst)
        assert [r[2] for r in got[1:]] == [r[2] for r in rows]
    else:
        assert pq.read_table(dst).column("c").to_pylist() == [r[2] for r in rows]
