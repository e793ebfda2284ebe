"""Benchmark: optimal mechanism design (pmlkit.design).

1. Linear-utility (accuracy) robust design for N = 50, 100, 200: Prop. LCCP's 2NM form
   (beta < 2 p_min) and the exact dual form (beta > 2 p_min, zero counts allowed).
2. Sub-convex (mutual information) exact robust design for N = 4, 8, 10, 12
   (target: N = 12 within 60 s).
3. Utility gain (mutual information, nats) of the exact robust design over the paper's
   fixed-prior design at eps' (eq. LPsubset), and over eps-LDP randomized response:
   on the Adult features (sex, income) for m = 100, 1000, 10000 (first m rows of a seeded
   shuffle), delta = 1e-6, eps = log 2 and eps = 0.1; and on random priors.

Run: ``.venv/bin/python benchmarks/bench_design.py``.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

import pmlkit as pk
from pmlkit.datasets import adult_cache_dir
from pmlkit.design import design_from_samples, eps_prime, optimal_mechanism
from pmlkit.errors import PMLWarning
from pmlkit.estimation import EmpiricalDistribution

ROOT = Path(__file__).resolve().parents[1]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench_linear() -> None:
    print("1. linear utility (accuracy), robust design, HiGHS")
    print(f"{'N':>5} {'form':>26} {'beta':>8} {'seconds':>9} {'certified':>10} {'accuracy':>9}")
    for n in (50, 100, 200):
        rng = np.random.default_rng(n)
        p = rng.dirichlet(np.full(n, 5.0))
        for form, beta in (("Prop. LCCP (2NM)", 1.5 * p.min()), ("exact dual (b > 2p_min)", 0.2)):
            m, dt = timed(lambda p=p, beta=beta: optimal_mechanism(p, 1.0, beta=beta,
                                                                   utility="accuracy"))
            acc = float(p @ np.diag(m.matrix))
            print(f"{n:>5} {form:>26} {beta:>8.4f} {dt:>9.2f} {m.certified_eps:>10.6f} "
                  f"{acc:>9.4f}")


def bench_subconvex() -> None:
    print("\n2. sub-convex (mutual information), exact robust design (extreme-ray LP)")
    print(f"{'N':>5} {'case':>28} {'rays':>8} {'seconds':>9} {'I (nats)':>9} "
          f"{'eps design':>11}")
    for n in (4, 8, 10, 12):
        rng = np.random.default_rng(n)
        p = rng.dirichlet(np.full(n, 5.0))
        for case, beta in (("beta = p_min (2-level rays)", p.min()),
                           ("beta = 0.3 > 2 p_min (3-level)", 0.3)):
            m, dt = timed(lambda p=p, beta=beta: optimal_mechanism(p, 0.5, beta=beta))
            rays = m.parameters["method"].split("(")[1].split()[0]
            print(f"{n:>5} {case:>28} {rays:>8} {dt:>9.2f} "
                  f"{m.parameters['utility_value']:>9.5f} {m.parameters['design_eps']:>11.6g}")


def adult_counts(path: Path) -> tuple[list[str], np.ndarray]:
    """(sex, income) of every complete row of adult.data (columns 9 and 14)."""
    rows = []
    for line in path.read_text().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) < 15:
            continue
        rows.append(f"{parts[9]}|{parts[14].rstrip('.')}")
    return rows, np.array(rows)


def gain_row(label: str, emp: EmpiricalDistribution, eps: float, delta: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PMLWarning)
        r = design_from_samples(emp, eps, delta)
    g = r.guarantee
    ue = g.utility_eps_prime_design
    ratio = "n/a" if not ue else f"{g.utility_value / ue:.3g}x"
    ue_txt = "none(eps'<0)" if ue is None else f"{ue:.5f}"
    exact = "exact" if g.optimality == "exact" else "lower bnd"
    print(f"{label:>12} {eps:>6.3f} {g.beta:>7.4f} {g.eps_prime:>8.4f} {g.utility_value:>9.5f} "
          f"{exact:>9} {ue_txt:>12} {ratio:>8} {g.utility_randomized_response:>9.5f}")


def bench_gain() -> None:
    print("\n3. mutual information (nats) at p_hat: exact robust design vs eps' design vs RR")
    head = (f"{'data':>12} {'eps':>6} {'beta':>7} {'eps_prime':>8} {'robust':>9} {'':>9} "
            f"{'eps_design':>12} {'ratio':>8} {'RR':>9}")
    data = Path(os.environ.get("PMLKIT_DATA") or adult_cache_dir())
    path = data / "adult.data"
    if path.is_file():
        _, rows = adult_counts(path)
        rng = np.random.default_rng(0)
        rows = rows[rng.permutation(rows.size)]
        print(f"Adult (sex, income), N = 4, delta = 1e-6, {rows.size} rows")
        print(head)
        for m in (100, 1000, 10000):
            emp = pk.empirical_distribution(rows[:m])
            for eps in (math.log(2), 0.1):
                gain_row(f"adult m={m}", emp, eps, 1e-6)
    else:
        print(f"(Adult data not found at {path}; skipped)")
    print("random priors (Dirichlet(2), N = 6), counts m = 20000, delta = 1e-6")
    print(head)
    for seed in range(4):
        rng = np.random.default_rng(100 + seed)
        p = rng.dirichlet(np.full(6, 2.0))
        counts = rng.multinomial(20000, p)
        emp = EmpiricalDistribution.from_counts(counts)
        for eps in (0.1, 0.3, math.log(2)):
            gain_row(f"rand#{seed}", emp, eps, 1e-6)
    print("direct (prior known up to beta; beta < 2 p_min): exact robust vs eps' design")
    for p, eps, beta in (([0.4, 0.3, 0.2, 0.1], 0.1, 0.1), ([0.4, 0.3, 0.2, 0.1], 0.05, 0.05),
                         ([0.25] * 4, 0.3, 0.1), ([0.5, 0.3, 0.2], 0.3, 0.1)):
        p = np.array(p)
        a = optimal_mechanism(p, eps, beta=beta).parameters["utility_value"]
        f = optimal_mechanism(p, eps_prime(eps, beta)).parameters["utility_value"]
        print(f"  p={p.tolist()} eps={eps} beta={beta}: robust {a:.5f}, eps' design {f:.5f} "
              f"({a / f:.3g}x)")


if __name__ == "__main__":
    optimal_mechanism([0.5, 0.5], 0.5, beta=0.1)  # warm-up: imports scipy, HiGHS
    bench_subconvex()
    bench_linear()
    bench_gain()
