"""Benchmark: guarantees for releasing several columns of each record (pmlkit.joint).

1. Exact joint guarantee (worst case of the product mechanism over the confidence set on
   the joint alphabet) for Adult's (sex, race, income), (native-country, education, sex)
   and, for scale, (native-country, education, race) (42 x 16 x 5 = 3,360 tuples), from the
   training file, with every column through eps = 1 randomized response; with the time,
   the per-column values (and their sum, which is not a guarantee) and the chain-rule
   bound from the marginal sets.
2. Joint design against naive per-column designs: the naive release designs each column
   at eps / k; its certified joint guarantee eps* is computed exactly; then
   :func:`pmlkit.design_joint` is run with target eps*, and the utilities are compared at
   the same certified joint guarantee (summed per-column mutual information, and the
   mutual information between the record and the released tuple).

3. How often per-column eps fail to add up: random correlated two-column data sets
   (3 x 3 joint distributions from Dirichlet(0.5), each column through a random 3 x 3
   mechanism with Dirichlet(1) rows): the fraction where the pair's exact PML exceeds the
   sum of the per-column values, and the largest excess (needs no data).

Missing native-country values (``?`` in the file) are kept as their own label ``"?"``.
Sections 1 and 2 need the UCI Adult training file (``PMLKIT_DATA``) and are skipped
cleanly without it.

Run: ``PMLKIT_DATA=<folder> .venv/bin/python benchmarks/bench_joint.py``.
"""

from __future__ import annotations

import math
import sys
import time
import warnings

import numpy as np

import pmlkit as pk
from pmlkit.errors import DataError, PMLWarning


def load() -> object | None:
    from pmlkit.datasets import load_adult

    try:
        df = load_adult(split="data")
    except DataError as exc:
        print(f"skipped: {exc}")
        return None
    return df.fillna({"native-country": "?"})


def rr_for(df, col: str, eps: float) -> pk.Mechanism:
    cats = sorted(df[col].unique().tolist())
    w = np.asarray(pk.randomized_response(len(cats), eps).matrix)
    return pk.Mechanism(w, tuple(cats), tuple(cats))


def bench_exact(df) -> None:
    print("1. exact joint guarantee, eps = 1 randomized response per column, delta = 1e-6")
    print(f"{'columns':36} {'N':>6} {'conf':>6} {'joint eps':>10} {'sec':>6} "
          f"{'per-column':>22} {'sum':>6} {'bound':>7} {'sec':>6}")
    for cols in (("sex", "race", "income"), ("native-country", "education", "sex"),
                 ("native-country", "education", "race")):
        mechs = [rr_for(df, c, 1.0) for c in cols]
        for conf in ("l1", "box-cp"):
            t0 = time.perf_counter()
            g = pk.joint_guarantee(mechs, df, 1e-6, columns=list(cols), confidence=conf)
            dt = time.perf_counter() - t0
            t0 = time.perf_counter()
            b = pk.marginal_bound(mechs, df, 1e-6, columns=list(cols), confidence=conf)
            db = time.perf_counter() - t0
            per = "/".join(f"{e:.3f}" for e in g.column_eps)
            print(f"{','.join(cols):36} {g.n:>6} {conf:>6} {g.certified_eps:>10.4f} "
                  f"{dt:>6.2f} {per:>22} {g.sum_of_column_eps:>6.3f} "
                  f"{b.certified_eps:>7.3f} {db:>6.2f}")


def naive(df, cols, eps: float, delta: float):
    from pmlkit.design import design_from_samples

    mechs, mi = [], 0.0
    for c in cols:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PMLWarning)
            r = design_from_samples(df[c].to_numpy(), eps / len(cols), delta)
        mechs.append(r.mechanism)
        mi += r.guarantee.utility_value
    return mechs, mi


def joint_mi(mechs, df, cols) -> float:
    prod = pk.product_mechanism(*mechs)
    import pandas as pd

    codes = [pd.Index(list(m.input_labels), dtype=object).get_indexer(
        df[c].to_numpy(dtype=object)) for m, c in zip(mechs, cols, strict=True)]
    assert all((c >= 0).all() for c in codes)
    flat = np.ravel_multi_index(tuple(codes), prod.input_sizes)
    p = np.bincount(flat, minlength=prod.n_inputs) / len(df)
    return float(pk.mutual_information(prod.matrix, p))


def bench_design(df) -> None:
    delta = 1e-6
    print("\n2. joint design vs naive per-column designs at eps/k, same certified joint eps")
    print(f"{'columns':22} {'eps':>4} {'naive joint eps*':>16} {'naive sum MI':>12} "
          f"{'design mode':>15} {'split':>18} {'cert':>7} {'sum MI':>7} {'I(X;Y)':>7} "
          f"{'naive I(X;Y)':>12} {'sec':>6}")
    for cols, eps in ((("sex", "income"), 1.0), (("sex", "income"), 2.0),
                      (("sex", "race", "income"), 2.0)):
        mechs, mi = naive(df, cols, eps, delta)
        g = pk.joint_guarantee(mechs, df, delta, columns=list(cols))
        target = g.certified_eps
        n_mi = joint_mi(mechs, df, cols)
        for mode in ("per-column", "joint"):
            n_joint = math.prod(len(m.input_labels) for m in mechs)
            if mode == "joint" and n_joint > pk.joint.JOINT_DESIGN_MAX_N:
                continue
            t0 = time.perf_counter()
            res = pk.design_joint(df, target, delta, columns=list(cols), mode=mode)
            dt = time.perf_counter() - t0
            split = "/".join(f"{e:.3f}" for e in res.split) or "-"
            summed = res.utility if mode == "per-column" else float("nan")
            print(f"{','.join(cols):22} {eps:>4.1f} {target:>16.4f} {mi:>12.4f} "
                  f"{res.mode:>15} {split:>18} {res.guarantee.certified_eps:>7.4f} "
                  f"{summed:>7.4f} {res.joint_mutual_information or float('nan'):>7.4f} "
                  f"{n_mi:>12.4f} {dt:>6.1f}")


def bench_random(trials: int = 3000) -> None:
    rng = np.random.default_rng(2026)
    exceeded, worst = 0, 0.0
    t0 = time.perf_counter()
    for _ in range(trials):
        p = rng.dirichlet(np.full(9, 0.5)).reshape(3, 3)
        wa, wb = rng.dirichlet(np.ones(3), size=3), rng.dirichlet(np.ones(3), size=3)
        joint = pk.joint_leakage([wa, wb], p)
        total = pk.eps_min(wa, p.sum(axis=1)) + pk.eps_min(wb, p.sum(axis=0))
        exceeded += joint > total + 1e-12
        worst = max(worst, joint - total)
    dt = time.perf_counter() - t0
    print(f"\n3. random correlated 3 x 3 data sets: the pair exceeds the sum of per-column "
          f"eps in {exceeded}/{trials} = {exceeded / trials:.1%} of cases, by up to "
          f"{worst:.3f} nats ({dt:.1f} s)")


def main() -> int:
    df = load()
    if df is not None:
        bench_exact(df)
        bench_design(df)
    bench_random()
    return 0


if __name__ == "__main__":
    sys.exit(main())
