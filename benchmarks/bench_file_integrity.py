"""Throughput of the exact file pipeline. Run:
``.venv/bin/python benchmarks/bench_file_integrity.py [--csv-rows N] [--parquet-rows N]``.

In one run, on this machine, for a CSV file and a Parquet file (columns: an integer id,
the sensitive ``sex``, a zip code with leading zeros and a free-text note):

* ``pmlkit``: :func:`pmlkit.privatization.privatize_file` in place on ``sex`` (every
  other column read as text / with its schema, written exactly; SHA-256 of the output;
  no-replace publishing; manifest), secure randomness;
* ``pyarrow copy``: the same file read and written by pyarrow alone (streamed, CSV with
  pyarrow's writer, Parquet with the same codec), i.e. the cost of touching the bytes;
* ``--old-src DIR`` (optional): the same ``privatize_file`` call with the ``pmlkit``
  package found in ``DIR`` (e.g. an export of an earlier commit's ``src``), in a child
  process.

Prints seconds (best of ``--repeat``), rows/s and the ratio pmlkit / pyarrow copy. Data
are written to a temporary folder and deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def make_data(folder: Path, rows: int, kind: str) -> Path:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    g = np.random.default_rng(0)
    path = folder / f"data.{kind}"
    writer = None
    step = 1 << 20
    for start in range(0, rows, step):
        n = min(step, rows - start)
        t = pa.table({
            "id": pa.array(np.arange(start, start + n)),
            "sex": pa.array(np.where(g.random(n) < 0.33, "Female", "Male")),
            "zip": pa.array(np.char.zfill(g.integers(0, 99999, n).astype(str), 5)),
            "note": pa.array(np.where(g.random(n) < 0.01, "NA", "ok")),
        })
        if writer is None:
            writer = (pq.ParquetWriter(path, t.schema) if kind == "parquet" else
                      pacsv.CSVWriter(path, t.schema,
                                      write_options=pacsv.WriteOptions(quoting_style="none")))
        writer.write_table(t)
    assert writer is not None
    writer.close()
    return path


def pyarrow_copy(src: Path, dst: Path) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if src.suffix == ".parquet":
        with pq.ParquetFile(src) as pf:
            with pq.ParquetWriter(dst, pf.schema_arrow) as w:
                for b in pf.iter_batches(batch_size=1 << 20):
                    w.write_batch(b)
        return
    names = None
    with pacsv.open_csv(src, read_options=pacsv.ReadOptions(block_size=64 << 20)) as r:
        names = r.schema.names
        with pacsv.CSVWriter(dst, r.schema) as w:
            for b in r:
                w.write_batch(b)
    del names, pa


PMLKIT_RUN = """
import os, sys, time, numpy as np
from pmlkit import Mechanism
from pmlkit.privatization import privatize_file
m = Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("Female", "Male"), ("Female", "Male"))
best = float("inf")
for i in range(int(sys.argv[3])):  # best of several calls in one process (warm imports)
    for p in (sys.argv[2], sys.argv[2] + ".pmlkit.json"):
        if os.path.exists(p):
            os.remove(p)
    t = time.perf_counter()
    privatize_file(m, sys.argv[1], sys.argv[2], "sex")
    best = min(best, time.perf_counter() - t)
print(best)
"""


def time_pmlkit(src: Path, dst: Path, pythonpath: str | None, repeat: int) -> float:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([sys.executable, "-c", PMLKIT_RUN, str(src), str(dst), str(repeat)],
                         env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def clean(folder: Path) -> None:
    for p in folder.iterdir():
        if p.name.startswith(("out", ".out")):
            p.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv-rows", type=int, default=10**7)
    ap.add_argument("--parquet-rows", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--old-src", default=None, help="a folder holding an older pmlkit "
                    "package (e.g. `git archive <commit> src | tar -x`), timed as 'old'")
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        for kind, rows in (("csv", args.csv_rows), ("parquet", args.parquet_rows)):
            if rows <= 0:  # skipped
                continue
            src = make_data(folder, rows, kind)
            row = {"rows": rows, "bytes": src.stat().st_size}
            best: dict[str, float] = {}
            for _ in range(args.repeat):
                clean(folder)
                t = time.perf_counter()
                pyarrow_copy(src, folder / f"out.{kind}")
                best["pyarrow copy"] = min(best.get("pyarrow copy", 1e300),
                                           time.perf_counter() - t)
            clean(folder)
            best["pmlkit"] = time_pmlkit(src, folder / f"out.{kind}", None, args.repeat)
            if args.old_src:
                clean(folder)
                best["old"] = time_pmlkit(src, folder / f"out.{kind}", args.old_src,
                                          args.repeat)
            src.unlink()
            clean(folder)
            row.update({k: round(v, 3) for k, v in best.items()})
            row["pmlkit rows/s"] = round(rows / best["pmlkit"])
            row["ratio pmlkit/pyarrow copy"] = round(best["pmlkit"] / best["pyarrow copy"], 3)
            if "old" in best:
                row["ratio pmlkit/old"] = round(best["pmlkit"] / best["old"], 3)
            results[kind] = row
            print(kind, json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
