"""Shared-background alias cells against per-row tables, side by side in one process.

Run: ``.venv/bin/python benchmarks/bench_background.py [--rows N] [--repeat R]
[--threads T] [--ks 4,1000]``.

For k-ary randomized response (eps = 1) on ``k`` labels and ``N`` uniform records, the
time of :meth:`pmlkit.sampler.AliasSampler.draw` (one secure 64-bit word per record; the
numpy draw, the only one) from

* ``shared``: the sampler as built (shared background cells where they apply:
  :func:`pmlkit.sampler.background_tables`);
* ``per-row``: the same matrix with the shared cells switched off (the per-row Walker
  tables every mechanism used before);
* ``limit``: one AES-CTR uniform per record plus one gather from a k-entry table (as
  ``bench_throughput.py``).

The three are timed one after the other within each repetition (so all see the same load
on a shared machine); printed: the best and the median of ``--repeat`` repetitions in ms,
and the draw's rate as a fraction of the limit's (best over best, median over median).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_throughput import krr, limit_fn


def one_k(k: int, n: int, repeat: int, threads: int) -> str:
    """The table's line for ``k`` labels."""
    from pmlkit import sampler as sampler_mod
    from pmlkit.rng import resolve_rng
    from pmlkit.sampler import AliasSampler

    w = krr(k)
    shared = AliasSampler(w)
    saved = sampler_mod._BACKGROUND_ROW_SHARE
    sampler_mod._BACKGROUND_ROW_SHARE = 1 << 40  # no row part small enough: per-row
    try:
        per_row = AliasSampler(w)
    finally:
        sampler_mod._BACKGROUND_ROW_SHARE = saved
    codes = np.random.default_rng(k).integers(0, k, n)
    out = np.empty(n, dtype=np.intp)
    gen = resolve_rng(None).generator
    fns: dict[str, Callable[[], object]] = {
        "shared": lambda: shared.draw(codes, gen, out=out),
        "per-row": lambda: per_row.draw(codes, gen, out=out),
        "limit": limit_fn(k, n, threads)}
    for fn in fns.values():  # warm-up (kernels, tables)
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    best = {name: min(v) for name, v in times.items()}
    med = {name: statistics.median(v) for name, v in times.items()}
    bg = shared.background
    cells = "per-row" if bg is None else f"K={bg[0]},E={bg[1]}"
    col = {name: f"{best[name] * 1e3:6.1f} / {med[name] * 1e3:6.1f}" for name in fns}
    rat = {name: f"{best['limit'] / best[name]:.2f} / {med['limit'] / med[name]:.2f}"
           for name in ("shared", "per-row")}
    return (f"{k:>5} {cells:>14} {col['shared']:>15} {col['per-row']:>15} "
            f"{col['limit']:>15} {rat['shared']:>13} {rat['per-row']:>14}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ks", default="4,1000")
    args = ap.parse_args()
    os.environ["PMLKIT_THREADS"] = str(args.threads)

    engine = "numpy"
    print(f"uptime: {os.popen('uptime').read().strip()}")
    print(f"draw of {args.rows:,} records, k-RR eps = 1; {engine}; PMLKIT_THREADS="
          f"{args.threads}; ms (best / median of {args.repeat}); rate / limit rate")
    print(f"{'k':>5} {'cells':>14} {'shared':>15} {'per-row':>15} {'limit':>15} "
          f"{'shared/limit':>13} {'per-row/limit':>14}")
    # a throwaway round first: in a fresh process the first table's limit measured 2-4x
    # slower over all its repetitions (k = 4 first: 186-217 ms; after k = 1000: 48; a
    # throwaway k = 2 did not help)
    one_k(1000, args.rows, 1, args.threads)
    for k in [int(v) for v in args.ks.split(",")]:
        print(one_k(k, args.rows, args.repeat, args.threads), flush=True)
    print(f"uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
