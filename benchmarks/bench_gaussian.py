"""Benchmark: the exact Gaussian (eps, delta) tradeoff against the paper's method.

The paper (Section "gauss", caption of Figure "gaussexample") computes
``delta_1(eps) = sup_{P in B_beta(p_hat)} P_Y(E_eps(P))`` by exhaustive grid search over the
ball with numerical integration. This script runs, in one process, a 200-point curve

- exact: :func:`pmlkit.additive.gaussian_tradeoff` (closed-form violation probability,
  bracketed golden-section maximisation over the ball, vectorised over eps);
- paper: a grid of 2001 distributions over the ball and, per distribution and eps,
  ``scipy.integrate.quad`` of the density of Y over the violation set. (The set's two
  half-lines are located with the closed-form thresholds, which only makes the baseline
  faster than a numerical search for them would.)

and reports the speed ratio (target >= 100x) and the largest difference of the curves'
delta (target <= 1e-6). Usage::

    python benchmarks/bench_gaussian.py [--points 200] [--grid 2001] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from scipy import integrate

from pmlkit import l1_radius
from pmlkit.additive import gaussian_tradeoff, gaussian_violation_thresholds


def paper_delta1(sigma: float, q_hat: float, beta: float, eps: np.ndarray,
                 grid: int) -> np.ndarray:
    """Exhaustive grid over P(+1) in the ball, quad per distribution (the paper's method)."""
    qs = np.linspace(max(q_hat - beta / 2, 0.0), min(q_hat + beta / 2, 1.0), grid)
    c = 1.0 / (sigma * math.sqrt(2.0 * math.pi))
    two_s2 = 2.0 * sigma * sigma
    out = np.zeros(eps.size)
    for k, e in enumerate(eps):
        best = 0.0
        for q in qs:
            r = 1.0 - q

            def f_y(y: float, q: float = q, r: float = r) -> float:
                return c * (q * math.exp(-(y - 1.0) ** 2 / two_s2)
                            + r * math.exp(-(y + 1.0) ** 2 / two_s2))

            t_pos, t_neg = gaussian_violation_thresholds(sigma, (r, q), float(e))
            mass = 0.0
            if math.isfinite(t_pos):
                mass += integrate.quad(f_y, t_pos, math.inf, epsabs=1e-13, epsrel=1e-10)[0]
            if math.isfinite(t_neg):
                mass += integrate.quad(f_y, -math.inf, -t_neg, epsabs=1e-13, epsrel=1e-10)[0]
            best = max(best, mass)
        out[k] = best
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=200, help="eps values on the curve")
    ap.add_argument("--grid", type=int, default=2001, help="distributions in the paper grid")
    ap.add_argument("--sigma", type=float, default=1.5)
    ap.add_argument("--p-hat", type=float, default=0.5, help="estimate of P(+1)")
    ap.add_argument("--m", type=int, default=1000)
    ap.add_argument("--delta2", type=float, default=1e-6)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    eps = np.linspace(0.005, 1.0, args.points)
    beta = l1_radius(args.delta2, m=args.m, n=2)
    gaussian_tradeoff(args.sigma, args.p_hat, args.m, args.delta2, eps[:3])  # warm imports

    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        _, ex_delta = gaussian_tradeoff(args.sigma, args.p_hat, args.m, args.delta2, eps,
                                        method="paper")
    t_exact = (time.perf_counter() - t0) / reps

    t0 = time.perf_counter()
    d1 = paper_delta1(args.sigma, args.p_hat, beta, eps, args.grid)
    paper_delta = d1 + args.delta2 - d1 * args.delta2
    t_paper = time.perf_counter() - t0

    diff = np.abs(ex_delta - paper_delta)
    res = {
        "points": args.points, "grid": args.grid, "sigma": args.sigma, "p_hat": args.p_hat,
        "m": args.m, "delta2": args.delta2, "beta": beta,
        "seconds_exact": t_exact, "seconds_paper": t_paper,
        "speed_ratio": t_paper / t_exact,
        "max_abs_delta_difference": float(diff.max()),
        "exact_minus_paper_min": float((ex_delta - paper_delta).min()),
        "targets": {"speed_ratio": ">= 100", "max_abs_delta_difference": "<= 1e-6"},
    }
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"Gaussian tradeoff, {args.points} eps points, sigma={args.sigma}, "
          f"p_hat(+1)={args.p_hat}, m={args.m}, delta2={args.delta2:g}, beta={beta:.6g}")
    print(f"  exact (closed form + golden section): {t_exact * 1e3:10.2f} ms "
          f"(mean of {reps})")
    print(f"  paper ({args.grid}-point grid + quad):  {t_paper * 1e3:10.2f} ms")
    print(f"  speed ratio paper/exact: {res['speed_ratio']:.0f}x (target >= 100x)")
    print(f"  largest |delta_exact - delta_paper|: {res['max_abs_delta_difference']:.3e} "
          f"(target <= 1e-6); min(exact - paper) = {res['exact_minus_paper_min']:.3e} "
          "(>= 0 up to rounding: the exact sup is never below the grid)")


if __name__ == "__main__":
    main()
