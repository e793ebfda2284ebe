"""Benchmark: the analyst's side (pmlkit.inference).

1. Coverage sweep of the 95% intervals (profile likelihood + empirical likelihood;
   identified set for merged inputs) by simulation: k-ary randomized response, the
   MI-optimal design and the estimation design, N from 2 to 20, n from 100 to 10^5.
   Prints the minimum over categories of the per-category coverage, the Monte Carlo
   standard error and the seconds per estimate.
2. Adult columns (sex, race, education, native-country): at the same (eps, delta)-PML
   guarantee, the mean squared error ``E ||P_hat - P||_2^2`` of the maximum-likelihood
   estimate from n = 10^4 released rows, for
   - k-RR calibrated to the guarantee: the largest LDP parameter whose exact worst-case
     PML over the design's uncertainty set (the l1-ball of ``design_from_samples``) is
     ``<= eps``;
   - the MI-optimal design of ``design_from_samples`` (same set, same eps);
   - the estimation design, ``design_from_samples(..., utility=EstimationError(n))``
     (exact extreme rays for N <= 12, and for every N PML randomized response refined by
     a local search over the square eps-PML polytope; the better one, certified).
   Each MSE is a Monte Carlo mean with its standard error; the ratios carry theirs (delta
   method, independent replications). The asymptotic ``tr C / n`` (no Monte Carlo error)
   is printed below each row.
   P is the empirical distribution of adult.data (the reference sample the designs use);
   released counts are drawn as Multinomial(n, W^T P). When a design merges inputs the
   MSE is that of the EM point (one maximiser; the library reports the identified set).
   Skips cleanly without the data (PMLKIT_DATA).

Run: ``PMLKIT_DATA=<folder with adult.data> .venv/bin/python benchmarks/bench_estimate.py``
(``--quick`` for fewer replications; ``--part 1`` or ``--part 2`` for one part).
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings

import numpy as np

import pmlkit as pk
from pmlkit.design.baselines import randomized_response
from pmlkit.design.estimation import EstimationError, estimation_mse
from pmlkit.errors import PMLWarning
from pmlkit.inference import _em, estimate_from_counts


def krr(n: int, eps: float) -> np.ndarray:
    return np.asarray(randomized_response(n, eps).matrix)


def coverage(w: np.ndarray, p: np.ndarray, n: int, reps: int, seed: int
             ) -> tuple[float, float, float, bool]:
    rng = np.random.default_rng(seed)
    hits = np.zeros(w.shape[0])
    t0 = time.perf_counter()
    ident = True
    for c in rng.multinomial(n, p @ w, size=reps):
        r = estimate_from_counts(c, w)
        ident = r.identified
        hits += (r.lower <= p) & (p <= r.upper)
    cov = hits / reps
    return float(cov.min()), float(cov.mean()), (time.perf_counter() - t0) / reps, ident


def part1(quick: bool) -> None:
    print("1. coverage of 95% intervals (min / mean over categories), Monte Carlo")
    print(f"{'design':>10} {'N':>3} {'n':>7} {'reps':>5} {'min cov':>8} {'mean cov':>9} "
          f"{'MC se':>6} {'s/est':>7} {'identified':>10}")
    base_reps = 60 if quick else 200
    for n_cat in (2, 5, 10, 20):
        rng = np.random.default_rng(n_cat)
        # a true distribution with some categories near the boundary
        p = rng.dirichlet(np.full(n_cat, 0.7))
        designs = [("k-RR", krr(n_cat, 1.0))]
        if n_cat <= 10:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PMLWarning)
                designs.append(("MI-opt", np.asarray(pk.optimal_mechanism(p, 1.0))))
            designs.append(("est", np.asarray(pk.optimal_mechanism(
                p, 1.0, utility="estimation").matrix)))
        for name, w in designs:
            for n in (100, 1000, 10_000, 100_000):
                reps = base_reps if n_cat <= 10 else base_reps // 2
                lo, mean, sec, ident = coverage(w, p, n, reps, seed=n)
                se = math.sqrt(0.95 * 0.05 / reps)
                print(f"{name:>10} {n_cat:>3} {n:>7} {reps:>5} {lo:>8.3f} {mean:>9.3f} "
                      f"{se:>6.3f} {sec:>7.3f} {ident!s:>10}", flush=True)


def calibrated_krr(n_cat: int, eps: float, uset: object) -> tuple[np.ndarray, float]:
    """k-RR with the largest LDP parameter whose worst case over ``uset`` is <= eps."""
    lo, hi = eps, 50.0
    if pk.leakage_capacity(krr(n_cat, hi), uset) <= eps:
        return krr(n_cat, hi), hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if pk.leakage_capacity(krr(n_cat, mid), uset) <= eps:
            lo = mid
        else:
            hi = mid
    return krr(n_cat, lo), lo


def mse(w: np.ndarray, p: np.ndarray, n: int, reps: int, seed: int
        ) -> tuple[float, float]:
    """Monte Carlo ``E ||P_hat - P||^2`` of the MLE and its standard error.

    A square invertible ``W`` whose inversion lands in the simplex has the inversion as
    its MLE (the likelihood's unconstrained maximum is feasible), computed for all
    replications at once; every other replication runs the EM."""
    rng = np.random.default_rng(seed)
    cs = rng.multinomial(n, p @ w, size=reps).astype(float)
    est = np.full((reps, p.size), np.nan)
    if w.shape[0] == w.shape[1] and np.linalg.matrix_rank(w) == w.shape[0]:
        inv = np.linalg.solve(w.T, (cs / n).T).T
        ok = np.all(inv >= 0, axis=1)
        est[ok] = inv[ok]
    for r in np.flatnonzero(np.isnan(est[:, 0])):
        # 1e-9 nats per record: far below the Monte Carlo error of the MSE; merged designs
        # converge slowly, so the EM is capped (the MSE of a non-identified design is that
        # of one EM point anyway)
        est[r], _, _ = _em(w, cs[r], 1e-9, 20_000)
    err = np.sum((est - p) ** 2, axis=1)
    return float(err.mean()), float(err.std(ddof=1) / math.sqrt(reps))


def part2(quick: bool, columns: tuple[str, ...] = ("sex", "race", "education",
                                                   "native-country")) -> None:
    data = os.environ.get("PMLKIT_DATA")
    if not data or not os.path.isfile(os.path.join(data, "adult.data")):
        print("\n2. skipped: set PMLKIT_DATA to a folder holding adult.data")
        return
    from pmlkit.datasets import load_adult
    from pmlkit.sets import set_from_dict

    df = load_adult(data)
    eps, delta, n = 1.0, 1e-6, 10_000
    # replications per column: enough for a ratio standard error of about 1-2%
    reps_of = {"sex": 20_000, "race": 4000, "education": 1500, "native-country": 300}
    print(f"\n2. Adult: MSE of the MLE from n = {n} released rows, eps = {eps}, "
          f"delta = {delta}; Monte Carlo mean +- standard error")
    print(f"{'column':>15} {'N':>3} {'reps':>6} {'k-RR eps_LDP':>12} {'MSE k-RR':>10} "
          f"{'MSE MI-opt':>11} {'MSE est':>10} {'MI/k-RR':>14} {'est/k-RR':>14} "
          f"{'MI rank':>7} {'est rank':>8} {'est design s':>12}")
    for col in columns:
        reps = reps_of[col] // (10 if quick else 1)
        values = df[col].dropna().astype(str).to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PMLWarning)
            res = pk.design_from_samples(values, eps, delta)
        g = res.guarantee
        p = np.asarray(g.estimate)
        uset = set_from_dict(dict(g.set))
        w_mi = np.asarray(res.mechanism.matrix)
        w_rr, e_rr = calibrated_krr(p.size, eps, uset)
        m_rr, s_rr = mse(w_rr, p, n, reps, seed=1)
        m_mi, s_mi = mse(w_mi, p, n, reps, seed=2)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PMLWarning)
            est = pk.design_from_samples(values, eps, delta, utility=EstimationError(n))
        dt = time.perf_counter() - t0
        w_est = np.asarray(est.mechanism.matrix)
        assert est.mechanism.certified_eps <= eps + 1e-9
        assert pk.leakage_capacity(w_est, uset) <= eps + 1e-9
        m_est, s_est = mse(w_est, p, n, reps, seed=3)

        def ratio(a: float, sa: float, b: float, sb: float) -> str:
            r = a / b
            return f"{r:.3f}+-{r * math.hypot(sa / a, sb / b):.3f}"

        print(f"{col:>15} {p.size:>3} {reps:>6} {e_rr:>12.4f} {m_rr:>10.3e} {m_mi:>11.3e} "
              f"{m_est:>10.3e} {ratio(m_mi, s_mi, m_rr, s_rr):>14} "
              f"{ratio(m_est, s_est, m_rr, s_rr):>14} "
              f"{np.linalg.matrix_rank(w_mi):>7} {np.linalg.matrix_rank(w_est):>8} "
              f"{dt:>12.1f}", flush=True)
        asym = [estimation_mse(w, p, n) for w in (w_rr, w_mi, w_est)]
        print(f"{'':>15} asymptotic tr C / n: k-RR {asym[0]:.3e}, MI-opt {asym[1]:.3e}, "
              f"est {asym[2]:.3e}; est/k-RR {asym[2] / asym[0]:.3f} "
              f"({est.mechanism.parameters['method']})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", type=int, choices=(1, 2), default=None)
    ap.add_argument("--columns", default="sex,race,education,native-country",
                    help="Adult columns of part 2, comma-separated")
    args = ap.parse_args()
    if args.part in (None, 1):
        part1(args.quick)
    if args.part in (None, 2):
        part2(args.quick, tuple(args.columns.split(",")))


if __name__ == "__main__":
    main()
