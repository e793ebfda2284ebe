"""Throughput of ``pmlkit.privatize`` by label kind and alphabet size, in one run.

(``bench_throughput.py`` reports the same table, timed interleaved, with the file
benchmark; this script is kept for its ``--compare`` mode against another version.)

Run: ``.venv/bin/python benchmarks/bench_label_kinds.py [--rows N] [--repeat R]``.
To compare with another version of pmlkit, run the same script with that version first
on ``PYTHONPATH`` (for example a ``git worktree`` of an older commit).

For k = 2, 4, 50, 1000 (k-ary randomized response at eps = 1, input labels uniform),
records/s of ``privatize(mech, values)`` with the secure default randomness, end to end
(one call, including the per-call set-up) for the label kinds

* ``int64``: a numpy int64 array of labels 0..k-1;
* ``object str``: a numpy object array of Python strings;
* ``arrow str``: a pandas Series of Arrow-backed strings (``string[pyarrow]``);
* ``pa.Array``: a pyarrow string Array;
* ``categorical``: a pandas categorical Series;
* ``polars str``: a polars String Series;
* ``polars cat``: a polars Categorical Series;

and, as the machine's limit, the rate of drawing one AES-CTR uniform per record (the
secure generator pmlkit uses) plus one gather from a k-entry table. Each kind's rate is
also given as a fraction of the int64 rate, and the int64 rate as a fraction of the
limit. Times are the best of ``--repeat`` runs (wall clock). A kind the installed version
cannot privatise is reported as ``n/a``.

``--compare SRC`` puts another version side by side: for every k the script runs itself
once with ``SRC`` (a ``src`` folder, e.g. of a ``git worktree`` of an older commit) first
on ``PYTHONPATH`` and once with this checkout's, one after the other, so both see the same
load on a shared machine.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

from bench_throughput import label_values, limit_fn  # the same kinds and limit


def best_time(fn: Callable[[], Any], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def limit_rate(k: int, n: int, repeat: int) -> float:
    """One secure uniform per record and one gather from a k-entry table."""
    return n / best_time(limit_fn(k, n), repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--ks", default="2,4,50,1000")
    ap.add_argument("--compare", default=None, help="src folder of another version")
    ap.add_argument("--no-header", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.compare:
        import os
        import subprocess
        import sys
        from pathlib import Path

        here = str(Path(__file__).resolve().parents[1] / "src")
        for i, k in enumerate(args.ks.split(",")):
            for label, src in (("old", args.compare), ("new", here)):
                env = dict(os.environ, PYTHONPATH=src)
                cmd = [sys.executable, __file__, "--rows", str(args.rows), "--repeat",
                       str(args.repeat), "--ks", k] + (["--no-header"] if i else [])
                res = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                     check=True)
                lines = res.stdout.splitlines()
                if i == 0:
                    print(f"[{label}] " + "\n".join(lines[:-1]))
                print(f"[{label}] {lines[-1]}", flush=True)
        return
    import pmlkit

    n = args.rows
    kinds = ["int64", "object str", "arrow str", "pa.Array", "categorical", "polars str",
             "polars cat"]
    if not args.no_header:
        print(f"pmlkit from {pmlkit.__file__}; {n:,} records, best of {args.repeat}; "
              "M rec/s")
        print(f"{'k':>5} " + " ".join(f"{k:>12}" for k in kinds) + f" {'limit':>8} "
              f"{'int/limit':>9} {'min kind/int':>12}")
    for k in (int(x) for x in args.ks.split(",")):
        values = label_values(k, n)
        rates = {}
        for kind, (mech, vals) in values.items():
            try:
                pmlkit.privatize(mech, vals[:1000])  # warm-up, and checks support
            except Exception:  # this version does not take this container
                rates[kind] = float("nan")
                continue
            def call(m: Any = mech, v: Any = vals) -> None:
                pmlkit.privatize(m, v)

            rates[kind] = n / best_time(call, args.repeat)
        lim = limit_rate(k, n, args.repeat)
        finite = [r for r in rates.values() if not math.isnan(r)]
        print(f"{k:>5} " + " ".join(
            f"{'n/a' if math.isnan(r) else f'{r / 1e6:.1f}':>12}" for r in rates.values())
            + f" {lim / 1e6:>8.1f} {rates['int64'] / lim:>9.2f} "
            f"{min(finite) / rates['int64']:>12.2f}", flush=True)


if __name__ == "__main__":
    main()
