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

Missing native-country values (``?`` in the file) are kept as their own label ``"?"``.
Needs the UCI Adult training file (``PMLKIT_DATA``); skips cleanly without it.

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
            r = design_from_samples(df[c].to_numpy(), eps / len(cols), delta,
                                    allow_fallback=True)
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


def main() -> int:
    df = load()
    if df is None:
        return 0
    bench_exact(df)
    bench_design(df)
    return 0


if __name__ == "__main__":
    sys.exit(main())
