"""The default release path of this tree against another source tree, side by side.

Run: ``.venv/bin/python benchmarks/bench_release_paths.py --old-src /path/to/old/src
[--rows N] [--repeat R] [--rounds R] [--ks 2,16,1000] [--kinds int64,categorical,...]``.

For every label kind (``int64`` numpy, pandas ``categorical``, pandas
``string[pyarrow]``, ``pa.Array`` of strings, ``polars`` String, ``object`` strings)
and every k (k-ary randomized response at eps = 1, input labels uniform), each source
tree privatises the same column in its own fresh process (one throwaway call of 1000
records, then the best of ``--repeat`` timed calls, secure default randomness, the
output freed after the clock stops). The two trees are run one after the other for each
(kind, k), so both see the same load, and with ``--rounds R`` that pair is run R times
(old, new, old, new, ...). Printed: ms per call for each tree (the median over the
rounds of each round's best wall time, and the CPU time of the process over that call,
all threads) and new/old, the median over the rounds of each round's ratio of wall
times (the speed of the new tree relative to the old: above 1 is faster). On a shared
machine the wall times swing with the load of others; the CPU times much less (the
older tree's path ran a second thread, whose CPU time is counted too).

A tree that has compiled release kernels (older trees; this one has none) uses them when
numba is installed. The path of a plain ``pip install pmlkit`` (no numba) is compared
with ``PMLKIT_NO_NUMBA=1`` in the environment, which both trees' children inherit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import gc, json, sys, time
import numpy as np
kind, k, n, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
import pmlkit
w = np.full((k, k), 1.0) + (np.e - 1.0) * np.eye(k)
w /= w.sum(axis=1, keepdims=True)
names = tuple(f"label{i}" for i in range(k))
x = np.random.default_rng(0).integers(0, k, n)
if kind == "int64":
    mech, values = pmlkit.Mechanism(w), x
else:
    mech = pmlkit.Mechanism(w, names, names)
    pool = np.array(names, dtype=object)
    if kind == "object":
        values = pool[x]
    elif kind == "categorical":
        import pandas as pd
        values = pd.Series(pd.Categorical.from_codes(x, categories=list(names)))
    elif kind == "pandas-arrow":
        import pandas as pd
        values = pd.Series(pool[x], dtype="string[pyarrow]")
    elif kind == "pa.Array":
        import pyarrow as pa
        values = pa.array(pool[x], type=pa.string())
    elif kind == "polars":
        import polars as pl
        values = pl.Series("s", pool[x], dtype=pl.String)
    else:
        raise SystemExit(f"unknown kind {kind}")
pmlkit.privatize(mech, values[:1000])
best, cpu = float("inf"), float("inf")
for _ in range(repeat):
    gc.collect()
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = pmlkit.privatize(mech, values)
    best = min(best, time.perf_counter() - t0)
    cpu = min(cpu, time.process_time() - c0)
    del out
print(json.dumps({"ms": best * 1e3, "cpu_ms": cpu * 1e3}))
"""

KINDS = ["int64", "categorical", "pandas-arrow", "pa.Array", "polars", "object"]


def run(src: str, kind: str, k: int, n: int, repeat: int) -> tuple[float, float]:
    """(best wall ms, least CPU ms) of ``repeat`` calls in a fresh process."""
    env = {**os.environ, "PYTHONPATH": src}
    proc = subprocess.run([sys.executable, "-c", _CHILD, kind, str(k), str(n),
                           str(repeat)], capture_output=True, text=True, env=env,
                          check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(got["ms"]), float(got["cpu_ms"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-src", required=True, help="the other tree's src folder")
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ks", default="2,16,1000")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--new-src", default=None,
                    help="the new tree's src folder (default: this checkout's)")
    args = ap.parse_args()
    new_src = args.new_src or str(Path(__file__).resolve().parents[1] / "src")
    print(f"privatize(), {args.rows:,} records, best of {args.repeat} per round, median "
          f"of {args.rounds} round(s); ms per call")
    print(f"{'kind':>13} {'k':>5} {'old ms':>9} {'new ms':>9} {'old cpu':>9} "
          f"{'new cpu':>9} {'new/old speed':>14} {'(min-max)':>11}")
    for kind in args.kinds.split(","):
        for k in (int(v) for v in args.ks.split(",")):
            olds, news = [], []
            for _ in range(args.rounds):
                olds.append(run(args.old_src, kind, k, args.rows, args.repeat))
                news.append(run(new_src, kind, k, args.rows, args.repeat))
            ratios = [o[0] / n[0] for o, n in zip(olds, news, strict=True)]
            med = statistics.median
            print(f"{kind:>13} {k:>5} {med(o[0] for o in olds):9.1f} "
                  f"{med(n[0] for n in news):9.1f} {med(o[1] for o in olds):9.1f} "
                  f"{med(n[1] for n in news):9.1f} {med(ratios):14.2f} "
                  f"{min(ratios):5.2f}-{max(ratios):<5.2f}", flush=True)


if __name__ == "__main__":
    main()
