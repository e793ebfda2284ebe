"""Benchmark: exact leakage capacity over an l1-ball (pmlkit.leakage_capacity).

1. A random 2000 x 2000 mechanism (target < 0.5 s), three radii; a box and the
   ball-box intersection for comparison.
2. In one run, N = M = 50: the exact greedy against one scipy HiGHS LP per column over the
   simplex intersected with the ball (target ratio >= 1000x).

Run: ``.venv/bin/python benchmarks/bench_capacity.py``.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.optimize import linprog

import pmlkit as pk


def best_of(fn, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def lp_capacity(w: np.ndarray, p: np.ndarray, beta: float) -> float:
    """Capacity with one HiGHS LP per column: min Q.w, Q >= 0, sum Q = 1, |Q - p| <= s,
    sum s <= beta."""
    n = p.size
    eye = np.eye(n)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
    b_ub = np.concatenate((p, -p, [beta]))
    a_eq = np.concatenate((np.ones(n), np.zeros(n)))[None, :]
    best = -math.inf
    for j in range(w.shape[1]):
        res = linprog(np.concatenate((w[:, j], np.zeros(n))), A_ub=a_ub, b_ub=b_ub,
                      A_eq=a_eq, b_eq=[1.0], bounds=(0, None), method="highs")
        best = max(best, math.log(w[:, j].max()) - math.log(res.fun))
    return best


def mechanism(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    w = rng.random((n, m)) + 0.01
    return w / w.sum(axis=1, keepdims=True)


def main() -> None:
    rng = np.random.default_rng(0)
    n = 2000
    w = mechanism(rng, n, n)
    p = rng.dirichlet(np.ones(n))
    for beta in (0.01, 0.1, 1.0):
        ball = pk.L1Ball(p, beta)
        pk.leakage_capacity(w, ball)  # warm-up
        t = best_of(lambda ball=ball: pk.leakage_capacity(w, ball), 5)
        print(f"capacity over l1-ball, {n}x{n}, beta={beta}: {t:.3f} s (target < 0.5 s)")
    box = pk.Box(np.clip(p - 0.001, 0, 1), np.clip(p + 0.001, 0, 1))
    t = best_of(lambda: pk.leakage_capacity(w, box), 3)
    print(f"capacity over a box, {n}x{n}: {t:.3f} s")
    from pmlkit.sets import L1BoxSet

    both = L1BoxSet(p, 0.1, box.lower, box.upper)
    t_both = best_of(lambda: pk.leakage_capacity(w, both), 3)
    print(f"capacity over ball (beta=0.1) and box together, {n}x{n}: {t_both:.3f} s "
          f"({t_both / t:.1f}x the box)")

    n = 50
    w = mechanism(rng, n, n)
    p = rng.dirichlet(np.ones(n))
    beta = 0.2
    ball = pk.L1Ball(p, beta)
    exact = pk.leakage_capacity(w, ball)
    ref = lp_capacity(w, p, beta)
    t_greedy = best_of(lambda: pk.leakage_capacity(w, ball), 200)
    t_lp = best_of(lambda: lp_capacity(w, p, beta), 3)
    print(f"N = M = {n}: greedy {t_greedy * 1e6:.0f} us, HiGHS LP per column "
          f"{t_lp * 1e3:.1f} ms, ratio {t_lp / t_greedy:.0f}x (target >= 1000x); "
          f"values {exact:.12f} vs {ref:.12f}")


if __name__ == "__main__":
    main()
