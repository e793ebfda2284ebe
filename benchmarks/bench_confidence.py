"""Benchmark of pmlkit.confidence: utility gains and certified eps of the tighter
sets against the paper's l1-ball, and the time to build each set.

Run: ``.venv/bin/python benchmarks/bench_confidence.py [--iterations 100] [--seed 0]``

Prints
1. the Adult Laplace experiment (eps = log 2, delta = 1e-9): mean MI per set and its
   relative gain over the paper's ball, for m in {100, 300, 1000, 3000, 10000}, twice: the
   exact MI of the released channel under the whole column, and the paper's plug-in MI
   on the m rows (biased by about +1/(2m) nats for every set alike);
2. the certified eps of two fixed designs (k-ary randomized response at eps0 = 2, the
   fixed-prior optimum for p_hat at eps = log 4) for N = 20, m = 10^4 at delta = 1e-6
   under each set (uniform and skewed estimates);
3. the time per ``confidence_set`` call for each method (N = 2, 20, 1000), as ratios to
   ``"l1"`` measured in the same run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from pmlkit.confidence import METHODS, confidence_set
from pmlkit.experiments import tighter_sets as T


def adult_table(iterations: int, seed: int, data: Path | None) -> pd.DataFrame:
    """The figure's own Adult rows (data: ``--data``, else PMLKIT_DATA, as the loader
    finds it; ``make bench`` sets it)."""
    return pd.DataFrame(T.adult_rows(iterations, seed, data, progress=False))


def timing() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    out = []
    for n in (2, 20, 1000):
        counts = rng.multinomial(10 * n * 100, rng.dirichlet(np.ones(n)))
        per = {}
        for method in (*METHODS, "l1-box"):
            reps = 20 if method != "auto" else 5
            t0 = time.perf_counter()
            for _ in range(reps):
                confidence_set(counts, 1e-6, confidence=method)
            per[method] = (time.perf_counter() - t0) / reps
        for method, t in per.items():
            out.append({"n": n, "method": method, "ms": 1e3 * t, "ratio_to_l1": t / per["l1"]})
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=None)
    args = ap.parse_args()
    pd.set_option("display.width", 200)

    lap = adult_table(args.iterations, args.seed, args.data)
    lap["kind"] = "adult_laplace"
    for values, what in (("mi_channel_mean", "exact MI of the released channel under the "
                          "whole column"),
                         ("mi_mean", "the paper's plug-in MI on the m rows")):
        mi = lap.pivot_table(index=["feature", "m"], columns="set", values=values)
        print(f"== Adult Laplace, eps = log 2, delta = 1e-9, {args.iterations} iterations: "
              f"mean {what} (nats)")
        print(mi.round(5).to_string())
        gains = T.mi_gains(lap, values)
        print(f"== relative gain over the paper's l1-ball, {what}")
        print((100 * gains).round(1).astype(str).add("%").to_string())
        valid = [c for c in gains.columns if c not in ("l1", "ldp")]
        best = gains[valid].max(axis=1)
        print("best valid set per (feature, m):")
        for idx, v in best.items():
            print(f"  {idx[0]:7s} m={idx[1]:6d}: +{100 * v:.1f}% "
                  f"({gains.loc[idx, valid].idxmax()})")

    cert = pd.DataFrame(T.certified_rows())
    sel = cert[(cert["n"] == 20) & (cert["m"] == 10_000)]
    print(f"== certified eps, N = 20, m = 10^4, delta = 1e-6: k-RR (eps0 = {T.RR_EPS:g}) and "
          f"the fixed-prior optimum for p_hat (accuracy, eps = {T.OPT_EPS:.4g})")
    print(sel.pivot_table(index=["mechanism", "p_hat_kind"], columns="set",
                          values="eps_certified").round(4).to_string())

    print("== time per confidence_set call (same run; ratio to 'l1')")
    print(timing().pivot_table(index="method", columns="n", values=["ms", "ratio_to_l1"])
          .round(2).to_string())


if __name__ == "__main__":
    main()
