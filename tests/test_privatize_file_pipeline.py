"""The file pipeline (read, privatised, written and hashed batch by batch on the calling
thread) keeps every promise of the earlier serial release.

* A seeded run releases exactly what the previous, serial release did: the CSV and TSV
  outputs byte for byte and the Parquet values (the Parquet metadata holds a salted seed
  commitment, different on every run), on quoted, CRLF, byte-order-mark and missing-value
  files, in small batches and in one; and the CSV output equals an independent one: the
  input rows (Python's ``csv`` module) with the column replaced by the in-memory release of
  the whole column under the same seed (one random stream in row order).
* The hashing file's digest and size are those of the bytes given, also when the caller
  reuses its buffer at once; a disk error is raised in the caller.
* A run that fails late (an unknown label, text that is not UTF-8, a full disk) or is
  terminated (SIGTERM) leaves no file and no thread behind, and exits with 143 (not a
  crash).
* Text that is not UTF-8 is refused as the parser refused it (the check by ASCII scan
  agrees with Python's decoder on every cell).
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit.errors import DataError
from pmlkit.io import check_utf8_text
from pmlkit.privatization import files as F
from pmlkit.privatization._publish import HashingFile, discard

LABELS = ("Female", "Male", "Non,binary", 'q"t', "日本")
_RAW = {"Female": "Female", "Male": "Male", "Non,binary": '"Non,binary"', 'q"t': '"q""t"',
        "日本": "日本"}
_CELLS = ["plain", '"a,b"', '"say ""hi"""', "  pad  ", "NA", "", "é", "日本語😀", "007"]


def _body(n: int, seed: int, nl: str = "\n", quoted: bool = False,
          missing: bool = False) -> str:
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        sx = _RAW[LABELS[int(g.integers(0, 5 if quoted else 2))]]
        if missing and i % 17 == 3:
            sx = ""
        a = _CELLS[int(g.integers(len(_CELLS)))]
        c = _CELLS[int(g.integers(len(_CELLS)))]
        rows.append(f"{a},{sx},{i},{c}{nl}")
    return f"a,sex,i,c{nl}" + "".join(rows)


def _cases(folder: Path) -> list[tuple[str, Path, dict, tuple[str, ...]]]:
    out: list[tuple[str, Path, dict, tuple[str, ...]]] = []
    f = folder / "plain.csv"
    f.write_text(_body(5000, 1), encoding="utf-8")
    out.append(("plain", f, {}, LABELS[:2]))
    f = folder / "quoted.csv"
    f.write_text(_body(5000, 2, quoted=True), encoding="utf-8")
    out.append(("quoted", f, {}, LABELS))
    f = folder / "crlf_bom.csv"
    f.write_bytes(b"\xef\xbb\xbf" + _body(5000, 3, nl="\r\n", quoted=True).encode())
    out.append(("crlf_bom", f, {}, LABELS))
    f = folder / "missing.csv"
    f.write_text(_body(5000, 4, missing=True), encoding="utf-8")
    out.append(("missing_keep", f, {"missing": "keep"}, LABELS[:2]))
    out.append(("missing_category", f, {"missing": "category"}, (*LABELS[:2], "(missing)")))
    out.append(("into", folder / "quoted.csv", {"into": "sex_p", "keep_raw": True}, LABELS))
    return out


def _mech(labels: tuple[str, ...]) -> pmlkit.Mechanism:
    g = np.random.default_rng(len(labels))
    return pmlkit.Mechanism(g.dirichlet(np.ones(len(labels)), size=len(labels)), labels,
                            labels)


def release_digests(folder: Path) -> dict[str, str]:
    """Digest of every seeded output: the bytes of CSV/TSV outputs, the values (column
    names and cells, not the metadata) of Parquet outputs."""
    res = {}
    for name, src, kw, labels in _cases(folder):
        for batch in (700, 1 << 20):
            for ext in ("csv", "tsv", "parquet"):
                dst = folder / f"out_{name}_{batch}.{ext}"
                pmlkit.privatize_file(_mech(labels), src, dst, "sex", rng=7,
                                      batch_rows=batch, manifest=False, **kw)
                data = dst.read_bytes() if ext != "parquet" else json.dumps(
                    pq.read_table(dst).to_pydict(), ensure_ascii=False).encode()
                res[f"{name}/{batch}/{ext}"] = hashlib.sha256(data).hexdigest()[:16]
    return res


#: :func:`release_digests` as computed by the serial release this pipeline replaced
SERIAL_RELEASE = {
    "crlf_bom/1048576/csv": "da5e8448a5f00fb2",
    "crlf_bom/1048576/parquet": "abccbc46f8aa8489",
    "crlf_bom/1048576/tsv": "600141d3c1770e8b",
    "crlf_bom/700/csv": "da5e8448a5f00fb2",
    "crlf_bom/700/parquet": "abccbc46f8aa8489",
    "crlf_bom/700/tsv": "600141d3c1770e8b",
    "into/1048576/csv": "6007b00ef21300f2",
    "into/1048576/parquet": "2fe3bf724c089f8e",
    "into/1048576/tsv": "3f5b5b8f4286667e",
    "into/700/csv": "6007b00ef21300f2",
    "into/700/parquet": "2fe3bf724c089f8e",
    "into/700/tsv": "3f5b5b8f4286667e",
    "missing_category/1048576/csv": "1dad788b521182cc",
    "missing_category/1048576/parquet": "cfc3225ecc3f358f",
    "missing_category/1048576/tsv": "05bd08c21ed34932",
    "missing_category/700/csv": "1dad788b521182cc",
    "missing_category/700/parquet": "cfc3225ecc3f358f",
    "missing_category/700/tsv": "05bd08c21ed34932",
    "missing_keep/1048576/csv": "2529dc60a8495d08",
    "missing_keep/1048576/parquet": "858ebffe81c29d65",
    "missing_keep/1048576/tsv": "d6a894b1e769fdc4",
    "missing_keep/700/csv": "2529dc60a8495d08",
    "missing_keep/700/parquet": "858ebffe81c29d65",
    "missing_keep/700/tsv": "d6a894b1e769fdc4",
    "plain/1048576/csv": "9d3a043faa09f733",
    "plain/1048576/parquet": "26d5db417167af97",
    "plain/1048576/tsv": "d7ca84caf32cb3e9",
    "plain/700/csv": "9d3a043faa09f733",
    "plain/700/parquet": "26d5db417167af97",
    "plain/700/tsv": "d7ca84caf32cb3e9",
    "quoted/1048576/csv": "7887a05b7d6e8a77",
    "quoted/1048576/parquet": "6678081443a06303",
    "quoted/1048576/tsv": "3f0f111c98dde32f",
    "quoted/700/csv": "7887a05b7d6e8a77",
    "quoted/700/parquet": "6678081443a06303",
    "quoted/700/tsv": "3f0f111c98dde32f",
}


def test_seeded_release_is_the_serial_release(tmp_path):
    got = release_digests(tmp_path)
    assert got == SERIAL_RELEASE


@pytest.mark.parametrize("name", ["quoted", "crlf_bom", "plain"])
def test_seeded_csv_equals_the_in_memory_release_written_by_csv(tmp_path, name):
    case = {c[0]: c for c in _cases(tmp_path)}[name]
    _, src, _, labels = case
    raw = src.read_bytes()
    bom = raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode("utf-8").removeprefix("\ufeff")
    newline = "\r\n" if "\r\n" in text else "\n"
    rows = list(csv.reader(io.StringIO(text, newline="")))
    released = pmlkit.privatize(_mech(labels), np.array([r[1] for r in rows[1:]], object),
                                rng=7)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=newline, quoting=csv.QUOTE_MINIMAL)
    w.writerow(rows[0])
    for r, v in zip(rows[1:], released, strict=True):
        w.writerow([r[0], v, *r[2:]])
    expected = (b"\xef\xbb\xbf" if bom else b"") + buf.getvalue().encode("utf-8")
    out = tmp_path / "out.csv"
    F.privatize_file(_mech(labels), src, out, "sex", rng=7, batch_rows=333, manifest=False)
    assert out.read_bytes() == expected


def _threads() -> set[str]:
    """The file pipeline's threads still alive (the sampler's own pool threads are not
    counted: they outlive a release on purpose)."""
    ours = {"pmlkit-read", "pmlkit-write", "pmlkit-hash"}
    return {t.name for t in threading.enumerate() if t.name in ours}


def test_hashing_file_hashes_the_bytes_given(tmp_path):
    """Also when the caller reuses its buffer at once."""
    g = np.random.default_rng(4)
    pieces = [g.bytes(int(n)) for n in g.integers(0, 300_000, 60)]
    f = HashingFile(tmp_path / "bg.bin")
    reused = bytearray(300_000)
    for i, p in enumerate(pieces):
        reused[:len(p)] = p
        view = memoryview(reused)[:len(p)]
        # a memoryview, or an Arrow buffer over the same memory (pyarrow's CSV writer
        # hands over one buffer it formats every slice into)
        assert f.write(view if i % 2 else pa.py_buffer(view)) == len(p)
        reused[:len(p)] = b"\x00" * len(p)  # the caller reuses its buffer at once
    whole = b"".join(pieces)
    assert f.finish() == (hashlib.sha256(whole).hexdigest(), len(whole))
    assert (tmp_path / "bg.bin").read_bytes() == whole
    assert _threads() == set()


class _FullDisk:
    def __init__(self, real, limit):
        self.real, self.limit, self.written, self.closed = real, limit, 0, False

    def write(self, data):
        self.written += len(data)
        if self.written > self.limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.real.write(data)

    def flush(self):
        self.real.flush()

    def fileno(self):
        return self.real.fileno()

    def close(self):
        self.closed = True
        self.real.close()


def test_long_rows_are_written_and_hashed_exactly(tmp_path):
    """Rows of ~3 KB: pyarrow's CSV writer formats 1024-row slices of more than 1 MiB
    into one reused buffer, handed over past the sink's 1 MiB buffer."""
    g = np.random.default_rng(8)
    long = ["".join(g.choice(list("abcdefgh"), 3000)) for _ in range(7)]
    lines = ["id,sex,text\n"] + [f"{i},{'FM'[i % 3 == 0]},{long[i % 7]}\n" for i in range(3000)]
    src = tmp_path / "in.csv"
    src.write_text("".join(lines))
    out = tmp_path / "out.csv"
    F.privatize_file(SWAP, src, out, "sex", batch_rows=2500)
    want = ["id,sex,text\n"] + [f"{i},{'MF'[i % 3 == 0]},{long[i % 7]}\n" for i in range(3000)]
    data = out.read_bytes()
    assert data == "".join(want).encode()
    doc = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    assert doc["data"] == {"file": "out.csv", "sha256": hashlib.sha256(data).hexdigest(),
                           "bytes": len(data)}


@pytest.mark.parametrize("names", [["a,b", 'q"t', "sex", "", "d"], ["sex"], ["x\ty", "sex"]])
def test_header_is_written_as_csv_writes_it(tmp_path, names):
    """The header, written in Python, follows the cells' rule: Python's csv module writes
    the same line (quotes only around a delimiter, a quote or an empty one-column name)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(names)
    w.writerow(["x" if n != "sex" else "F" for n in names])
    src = tmp_path / "in.csv"
    src.write_text(buf.getvalue(), encoding="utf-8")
    out = tmp_path / "out.csv"
    F.privatize_file(SWAP, src, out, "sex", manifest=False)
    head = out.read_bytes().split(b"\n")[0].decode()
    assert head == buf.getvalue().split("\n")[0]


def test_disk_error_reaches_the_caller(tmp_path):
    f = HashingFile(tmp_path / "full.bin")
    f._fh = _FullDisk(f._fh, 1_000_000)
    with pytest.raises(OSError, match="No space"):
        for _ in range(10_000):  # the error stops the writer long before the end
            f.write(b"x" * 100_000)
    f.close()
    assert f.closed and _threads() == set()


def _csv(path: Path, n: int, bad_row: int | None = None, bad: bytes = b"Nope") -> Path:
    lines = [b"id,sex,c\n"] + [b"%d,%s,x%d\n" % (i, (b"F", b"M")[i % 3 == 0], i % 7)
                               for i in range(n)]
    if bad_row is not None:
        lines[bad_row + 1] = b"%d,%s,x\n" % (bad_row, bad)
    path.write_bytes(b"".join(lines))
    return path


SWAP = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("F", "M"), ("F", "M"))


@pytest.mark.parametrize("bad,match", [
    (b"Nope", "'Nope'"),
    (b"M\xff", r"column 'sex' holds text that is not valid UTF-8 \(data row 54322"),
])
def test_late_failure_leaves_no_file_and_no_thread(tmp_path, bad, match):
    src = _csv(tmp_path / "in.csv", 60_000, bad_row=54_321, bad=bad)
    for name in ("out.csv", "out.parquet"):
        with pytest.raises(DataError, match=match):
            F.privatize_file(SWAP, src, tmp_path / name, "sex", batch_rows=1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
    assert _threads() == set()


def test_untouched_cell_not_utf8_is_refused_by_column_and_row(tmp_path):
    src = tmp_path / "in.csv"
    src.write_bytes(b"id,sex,c\n1,F,ok\n2,M,b\xc3(d\n")
    with pytest.raises(DataError, match=r"column 'c' .* not valid UTF-8 \(data row 2"):
        F.privatize_file(SWAP, src, tmp_path / "o.csv", "sex")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_full_disk_half_way_leaves_nothing(tmp_path, monkeypatch):
    src = _csv(tmp_path / "in.csv", 200_000)
    real = HashingFile.__init__

    def init(self, path):
        real(self, path)
        self._fh = _FullDisk(self._fh, 300_000)

    monkeypatch.setattr(HashingFile, "__init__", init)
    for name in ("out.csv", "out.parquet"):
        with pytest.raises(DataError, match="no space left"):
            F.privatize_file(SWAP, src, tmp_path / name, "sex", batch_rows=5000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
    assert _threads() == set()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=6), min_size=1, max_size=12), st.integers(0, 3))
def test_utf8_check_agrees_with_python_decoding(cells, lo):
    """Cells of random bytes (a multi-byte character split over two cells among them):
    refused exactly when some cell of the batch is not UTF-8 for Python's decoder."""
    offsets = np.cumsum([0] + [len(c) for c in cells]).astype(np.int32)
    arr = pa.Array.from_buffers(pa.string(), len(cells), [
        None, pa.py_buffer(offsets), pa.py_buffer(b"".join(cells))]).slice(min(lo, len(cells)))
    kept = cells[min(lo, len(cells)):]

    def valid(b: bytes) -> bool:
        try:
            b.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    batch = pa.record_batch([arr], names=["c"])
    if all(valid(c) for c in kept):
        check_utf8_text(batch, "x.csv")
    else:
        first = next(i for i, c in enumerate(kept) if not valid(c))
        with pytest.raises(DataError, match=rf"data row {first + 1},"):
            check_utf8_text(batch, "x.csv")


_RUN = ("import sys, numpy as np, pmlkit; "
        "m = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ('F', 'M'), ('F', 'M')); "
        "pmlkit.privatize_file(m, sys.argv[1], sys.argv[2], 'sex', batch_rows=2000)")


@pytest.mark.parametrize("name,sig", [("out.csv", "SIGTERM"), ("out.parquet", "SIGTERM"),
                                      ("out.csv", "SIGINT")])
def test_signal_mid_run_exits_cleanly(tmp_path, name, sig):
    """SIGTERM (or SIGINT) while the pipeline's threads run: the run exits with 143
    (SystemExit; SIGINT: KeyboardInterrupt, -2), not a crash or a hang, and leaves
    neither output nor temporary file."""
    src = _csv(tmp_path / "in.csv", 1_500_000)
    dst = tmp_path / name
    # SIGINT restored to its default in the child: a shell without job control starts
    # background commands with SIGINT ignored, and Python then installs no handler for it
    proc = subprocess.Popen([sys.executable, "-c", _RUN, str(src), str(dst)],
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    sent = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            temps = [p for p in tmp_path.iterdir() if p.name.startswith(f".{name}")]
            if any(p.exists() and p.stat().st_size > 0 for p in temps):
                proc.send_signal(getattr(signal, sig))
                sent = True
                break
            time.sleep(0.002)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not sent:
        pytest.skip("the run finished before it could be interrupted")
    assert code == (128 + signal.SIGTERM if sig == "SIGTERM" else -signal.SIGINT)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


@pytest.mark.parametrize("cell_bytes", [200_000, 3_000_000])
def test_a_row_longer_than_a_parser_block_is_released_as_one_pass_would(tmp_path,
                                                                         cell_bytes):
    """CSV is parsed in small blocks (a small read-ahead); a row longer than a block (here
    a cell of 3 MB against ~1 MiB blocks, and one of 200 kB against the 64 kB blocks of
    ``batch_rows=1000``) makes the file privatised again in larger blocks from the same
    random state: the output is the rows (Python's ``csv`` module) with the column
    replaced by the in-memory release of the whole column under the same seed, and no
    temporary file is left behind."""
    rows = [["id", "sex", "doc"]]
    g = np.random.default_rng(cell_bytes)
    for i in range(3000):
        doc = "x" * cell_bytes if i == 2100 else f"d{i}"
        rows.append([str(i), LABELS[int(g.integers(0, 2))], doc])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    src = tmp_path / "in.csv"
    src.write_text(buf.getvalue(), encoding="utf-8")
    mech = _mech(LABELS[:2])
    released = pmlkit.privatize(mech, np.array([r[1] for r in rows[1:]], object), rng=11)
    want = io.StringIO()
    w = csv.writer(want, lineterminator="\n")
    w.writerow(rows[0])
    for r, v in zip(rows[1:], released, strict=True):
        w.writerow([r[0], v, r[2]])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.csv"
    F.privatize_file(mech, src, out, "sex", rng=11, batch_rows=1000, manifest=False)
    assert out.read_bytes() == want.getvalue().encode("utf-8")
    assert [p.name for p in out_dir.iterdir()] == ["out.csv"]


def test_cleanup_after_a_failed_write_survives_a_second_interrupt(tmp_path):
    """Ctrl-C during a polars write: polars raises KeyboardInterrupt and Python's handler
    raises another one during the clean-up. Every step (closing the writer, the hashing
    file, removing the temporary output) is still done."""
    tmp = tmp_path / ".out.csv.tmp"
    tmp.write_bytes(b"half written")
    done: list[str] = []

    def once(name: str):
        hit = [False]

        def step() -> None:
            if not hit[0]:
                hit[0] = True
                raise KeyboardInterrupt
            done.append(name)
        return step

    class Hashed:
        close = staticmethod(once("hash"))

    discard(Hashed(), tmp, once("writer"), once("sink"))
    assert done == ["writer", "sink", "hash"]
    assert not tmp.exists()
