"""Benchmark: how tight the cheap post-processing level is, and what it costs.

For random mechanisms (2-3 inputs, 2-7 outputs, ``delta`` in ``[0.02, 0.7]``, seed 2026)
this compares :func:`pmlkit.envelope.envelope_bound` (pooled and per-row knapsacks,
maximal leakage; one sort) with the exact envelope :func:`pmlkit.leakage_envelope`
(bisection over an LP), and times the bound on the binary Gaussian's grid release
(``GaussianMechanism.envelope``, ~10^5 outputs). It prints the number of cases where the
bound equals the exact value (within ``1e-7``), the largest excess, and the timings; the
numbers quoted in ``docs/envelope.md`` come from this script. Usage::

    python benchmarks/bench_envelope_bound.py [--cases 150] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from pmlkit.additive import GaussianMechanism
from pmlkit.envelope import envelope_bound, leakage_envelope


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    excess = []
    t_bound = t_exact = 0.0
    for _ in range(args.cases):
        n = int(rng.integers(2, 4))
        m = int(rng.integers(2, 8))
        delta = float(rng.uniform(0.02, 0.7))
        w = rng.dirichlet(np.full(m, 0.6), size=n)
        p = rng.dirichlet(np.ones(n))
        t0 = time.perf_counter()
        b = envelope_bound(w, p, delta).eps
        t1 = time.perf_counter()
        e = leakage_envelope(w, p, delta).eps
        t2 = time.perf_counter()
        t_bound += t1 - t0
        t_exact += t2 - t1
        excess.append(b - e)
    ex = np.array(excess)
    mech = GaussianMechanism.from_scale(2.0, eps=1.0, over=[0.5, 0.5])
    t0 = time.perf_counter()
    env = mech.envelope()
    t_gauss = time.perf_counter() - t0
    out = {"cases": args.cases, "equal_within_1e-7": int((np.abs(ex) < 1e-7).sum()),
           "largest_excess": float(ex.max()), "median_excess": float(np.median(ex)),
           "seconds_bound": t_bound, "seconds_exact": t_exact,
           "gaussian_grid_envelope": env.eps, "gaussian_grid_seconds": t_gauss}
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>24}: {v}")


if __name__ == "__main__":
    main()
