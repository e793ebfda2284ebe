"""Benchmark: numeric columns of Adult released with a PML guarantee (issue 34).

Adult ``age`` (grid 18:90:1, N = 73) and ``hours-per-week`` (1:99:1, N = 99); eps in
{0.5, 1, 2}; delta = 1e-6 for the uncertainty set built from a 10% reference sample; the
other 90% of the rows are released (simulated with the mechanism's matrix and numpy's
Generator: this is a study of utility, not a release). For each mechanism:

- ``mae``: mean ``|Y - X|`` over the released rows (X on the grid);
- ``mean_err``, ``median_err``: absolute error of the estimated mean / median of the
  released rows' true values (EM on the grid, :mod:`pmlkit.numeric.estimate`);
- ``design_s``: design time (seconds).

Mechanisms: the rounded, clamped Gaussian calibrated to a post-processing-robust
(eps, 1e-6) over the set; pmlkit's best design (:func:`pmlkit.numeric.design.design_numeric`, the
ordinal LP for ``E|X - Y|``), the PML-calibrated clamped discrete Laplace, and eps-LDP
Laplace at the same eps (OpenDP / diffprivlib when installed, else the written-out formula:
``X + Laplace((upper - lower)/eps)``, clipped to the range, which is post-processing; its
mean is estimated by the unclipped sample mean, unbiased, and its median by EM on the
rounded, clipped channel).

Run: ``PMLKIT_DATA=... .venv/bin/python benchmarks/bench_numeric.py [--seed S]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pmlkit.confidence import confidence_set
from pmlkit.datasets import load_adult
from pmlkit.numeric.design import calibrated_gaussian_mechanism, design_numeric
from pmlkit.numeric.estimate import estimate_numeric_counts
from pmlkit.numeric.grid import NumericGrid

COLUMNS = {"age": NumericGrid(18, 90, 1), "hours-per-week": NumericGrid(1, 99, 1)}
EPS = (0.5, 1.0, 2.0)
DELTA = 1e-6


def release(w: np.ndarray, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Output codes drawn row by row from ``w[codes]`` (inverse CDF, vectorised)."""
    cum = np.cumsum(w, axis=1)
    cum[:, -1] = 1.0
    u = rng.random(codes.size)
    out = np.empty(codes.size, dtype=np.int64)
    for i in np.unique(codes):  # a loop over the N grid points, not over records
        sel = codes == i
        out[sel] = np.searchsorted(cum[i], u[sel], side="right")
    return np.minimum(out, w.shape[1] - 1)


def ldp_laplace_channel(n: int, scale_steps: float) -> np.ndarray:
    """Continuous Laplace noise rounded to the nearest grid point and clipped: N x N."""
    from scipy.stats import laplace

    k = np.arange(n)
    edges = np.concatenate(([-np.inf], k[:-1] + 0.5, [np.inf]))
    cdf = laplace.cdf(edges[None, :], loc=k[:, None], scale=scale_steps)
    w = np.diff(cdf, axis=1)
    return np.asarray(w / w.sum(axis=1, keepdims=True))


def median_of(x: np.ndarray, values: np.ndarray) -> float:
    """The smallest grid value with CDF >= 1/2 of codes ``x``."""
    c = np.bincount(x, minlength=values.size).cumsum() / x.size
    return float(values[np.argmax(c >= 0.5)])


def run(seed: int) -> list[dict[str, object]]:
    df = load_adult()
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for col, grid in COLUMNS.items():
        vals = df[col].to_numpy()
        vals = vals[~np.isnan(vals.astype(float))].astype(np.int64)
        perm = rng.permutation(vals.size)
        m = vals.size // 10
        ref, rel = vals[perm[:m]], vals[perm[m:]]
        enc = grid.encode(ref)
        counts = np.bincount(enc.codes, minlength=grid.n)
        cs = confidence_set(counts, DELTA)
        x = np.asarray(grid.values, dtype=np.float64)
        codes = grid.encode(rel).codes
        true_mean = float(x[codes].mean())
        true_median = median_of(codes, x)
        for eps in EPS:
            t0 = time.perf_counter()
            d = design_numeric(grid, cs, eps, utility="abs")
            total = time.perf_counter() - t0
            cands = {"pmlkit best": (d.best, d.seconds["ordinal_lp"]
                                     if d.best is d.candidates["ordinal_lp"] else total),
                     "PML discrete Laplace": (d.candidates["discrete_laplace"],
                                              d.seconds["discrete_laplace"])}
            t0 = time.perf_counter()
            gm = calibrated_gaussian_mechanism(grid, cs, eps, delta=DELTA)
            cands["PML Gaussian (eps, 1e-6)"] = (gm, time.perf_counter() - t0)
            for name, (mech, secs) in cands.items():
                w = np.asarray(mech)
                out = release(w, codes, rng)
                est = estimate_numeric_counts(np.bincount(out, minlength=grid.n), mech)
                assert not isinstance(est, list)
                rows.append({"column": col, "eps": eps, "mechanism": name,
                             "certified_eps": mech.certified_eps,
                             "mae": float(np.abs(x[out] - x[codes]).mean()),
                             "mean_err": abs(est.mean - true_mean) if est.identified
                             else abs(float(est.distribution @ x) - true_mean),
                             "median_err": abs(est.quantiles[0.5] - true_median),
                             "design_s": secs})
            # eps-LDP Laplace (written-out formula; sensitivity = the range)
            span = float(x[-1] - x[0])
            b = span / eps
            y = x[codes] + rng.laplace(0.0, b, codes.size)
            yc = np.clip(y, x[0], x[-1])
            wl = ldp_laplace_channel(grid.n, b / grid.step_value)
            yk = grid.encode(yc).codes
            est = estimate_numeric_counts(np.bincount(yk, minlength=grid.n), wl, points=x)
            assert not isinstance(est, list)
            rows.append({"column": col, "eps": eps, "mechanism": "eps-LDP Laplace",
                         "certified_eps": eps, "mae": float(np.abs(yc - x[codes]).mean()),
                         "mean_err": abs(float(y.mean()) - true_mean),
                         "median_err": abs(est.quantiles[0.5] - true_median),
                         "design_s": 0.0})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=34)
    args = ap.parse_args()
    rows = run(args.seed)
    print("| column | eps | mechanism | certified eps | MAE | mean err | median err | "
          "design s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['column']} | {r['eps']} | {r['mechanism']} | {r['certified_eps']:.4f} | "
              f"{r['mae']:.3f} | {r['mean_err']:.3f} | {r['median_err']:.1f} | "
              f"{r['design_s']:.2f} |")
    for col in COLUMNS:
        best = next(r for r in rows if r["column"] == col and r["eps"] == 1.0
                    and r["mechanism"] == "pmlkit best")
        ldp = next(r for r in rows if r["column"] == col and r["eps"] == 1.0
                   and r["mechanism"] == "eps-LDP Laplace")
        print(f"{col}: MAE ratio pmlkit best / eps-LDP Laplace at eps = 1: "
              f"{float(best['mae']) / float(ldp['mae']):.3f}")


if __name__ == "__main__":
    main()
