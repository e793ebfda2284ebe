"""Benchmark (issue 35): the default data release on Adult, against the MI-optimal design
and k-ary randomized response calibrated to the same guarantee.

For each Adult column (``sex``, ``race``, ``education``, ``native-country``) and the pair
``occupation x sex`` released as one column on the tuple alphabet (what
``pmlkit joint design --mode joint`` designs: ``design_from_samples`` on the tuples; the
default ``--mode auto`` picks per-column designs above 12 tuples, which this benchmark does
not measure), rows with a missing value in the column(s) are left out, a seeded 10% random
sample is the reference and the other 90% are released. At the same (eps, delta) = (1,
1e-6) guarantee over the same l1-ball (the reference's ``design_from_samples`` set) three
mechanisms are compared:

- **default**: ``design_from_samples(..., estimable=True)`` (what ``pmlkit design`` does
  by default: mutual information, replaced by the estimation design when it merges
  categories); outputs published as column values (``pmlkit.utility.publish_assignment``);
- **MI-optimal**: ``design_from_samples(..., estimable=False)`` (the default utility);
- **k-RR**: k-ary randomized response at the largest LDP level whose exact worst case over
  the set is ``<= eps`` (bisection, 40 halvings, each step certified with
  ``pmlkit.leakage_capacity``).

Per mechanism: rank of the matrix and whether the distribution is identified (rank = N),
the accuracy ``P[released value = true value]`` measured on the released rows (one seeded
release, ``mechanism.apply(values, rng=seed)``), the L1 and squared-L2 error of
``pmlkit.estimate_distribution(released, mechanism, intervals=False)`` against the
empirical distribution of the released rows' true values ("bounds only" when the design
is not identified: the library then returns NaN estimates and the analyst gets bounds,
not a number), the share of released values outside the column's domain (an estimation
design with more outputs than values publishes its surplus outputs under merged names),
and the design time (seconds, wall clock on a shared machine; the default's includes the
MI design it tries first). All mechanisms release the same rows with the same seed. Every
design uses the default work budget (``max_work``, as ``pmlkit design --max-work``).
The L1 error of the reference sample's own estimate (what the data holder knows before
any release) is printed for scale.

Run: ``PMLKIT_DATA=<folder with adult.data> python benchmarks/bench_table_release.py``
(``--columns sex,race`` for some columns). Skips cleanly without the data.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

import numpy as np

import pmlkit as pk
from pmlkit.design.baselines import randomized_response
from pmlkit.design.estimation import mechanism_rank
from pmlkit.errors import PMLWarning
from pmlkit.sets import set_from_dict

EPS, DELTA, SEED = 1.0, 1e-6, 35
COLUMNS = ("sex", "race", "education", "native-country", "occupation x sex")


def _krr(n: int, eps: float) -> np.ndarray:
    return np.asarray(randomized_response(n, eps).matrix)


def calibrated_krr(n: int, eps: float, uset: Any) -> tuple[np.ndarray, float]:
    """k-RR at the largest LDP level whose worst case over ``uset`` is ``<= eps``."""
    lo, hi = eps, 40.0
    if pk.leakage_capacity(_krr(n, hi), uset) <= eps:
        return _krr(n, hi), hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if pk.leakage_capacity(_krr(n, mid), uset) <= eps:
            lo = mid
        else:
            hi = mid
    return _krr(n, lo), lo


def column_values(df: Any, name: str) -> np.ndarray:
    """The column's values as strings, rows with a missing value left out; a pair
    ``"a x b"`` as the tuple ``"a | b"``."""
    parts = [p.strip() for p in name.split(" x ")]
    sub = df[parts].dropna()
    vals = sub[parts[0]].astype(str)
    for p in parts[1:]:
        vals = vals + " | " + sub[p].astype(str)
    return np.asarray(vals.to_numpy(dtype=object), dtype=object)


def run_mechanism(mech: Any, released_true: np.ndarray, p_true: np.ndarray,
                  cats: list[Any], seed: int) -> dict[str, Any]:
    w = np.asarray(mech.matrix)
    rank = mechanism_rank(w)
    out = np.asarray(mech.apply(released_true, rng=seed), dtype=object)
    acc = float(np.mean(out == released_true))
    outside = float(np.mean(~np.isin(out, np.asarray(cats, dtype=object))))
    r = pk.estimate_distribution(out, mech, intervals=False)
    order = [list(r.categories).index(c) for c in cats]
    est = np.asarray(r.estimate)[order]
    row: dict[str, Any] = {"N": w.shape[0], "M": w.shape[1], "rank": rank,
                           "identified": bool(r.identified), "accuracy": acc,
                           "outside": outside}
    if r.identified and np.all(np.isfinite(est)):
        row["l1"] = float(np.abs(est - p_true).sum())
        row["l2"] = float(((est - p_true) ** 2).sum())
    else:
        row["l1"] = row["l2"] = None
        row["identified_categories"] = int(np.sum(r.identified_categories))
    return row


def bench_column(df: Any, name: str) -> list[dict[str, Any]]:
    vals = column_values(df, name)
    rng = np.random.default_rng(SEED)
    is_ref = np.zeros(vals.size, dtype=bool)
    is_ref[rng.choice(vals.size, size=vals.size // 10, replace=False)] = True
    ref, rel = vals[is_ref], vals[~is_ref]
    rows: list[dict[str, Any]] = []
    designs: dict[str, Any] = {}
    times: dict[str, float] = {}
    for label, estimable in (("MI-optimal", False), ("default (estimable)", True)):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PMLWarning)
            res = pk.design_from_samples(ref, EPS, DELTA, estimable=estimable)
        times[label] = time.perf_counter() - t0
        designs[label] = res
    g = designs["MI-optimal"].guarantee
    cats = list(designs["MI-optimal"].mechanism.input_labels)
    assert cats == list(designs["default (estimable)"].mechanism.input_labels)
    uset = set_from_dict(dict(g.set))
    p_ref = np.asarray(g.estimate)
    t0 = time.perf_counter()
    w_rr, e_rr = calibrated_krr(len(cats), EPS, uset)
    times["k-RR"] = time.perf_counter() - t0
    rr = pk.Mechanism(w_rr, cats, cats)
    mechs = {k: designs[k].mechanism for k in ("default (estimable)", "MI-optimal")}
    mechs["k-RR"] = rr
    # the released rows' true distribution, in the order of the categories
    index = {c: i for i, c in enumerate(cats)}
    codes = np.fromiter((index.get(v, -1) for v in rel), dtype=np.int64, count=rel.size)
    keep = codes >= 0  # a released value the reference never saw cannot be released
    rel, codes = rel[keep], codes[keep]
    p_true = np.bincount(codes, minlength=len(cats)) / codes.size
    for label, mech in mechs.items():
        cap = pk.leakage_capacity(np.asarray(mech.matrix), uset)
        assert cap <= EPS + 1e-9, (name, label, cap)
        row = run_mechanism(mech, rel, p_true, cats, seed=SEED)
        row.update(column=name, mechanism=label, seconds=times[label],
                   worst_case=float(cap), n_released=int(rel.size),
                   n_unseen=int((~keep).sum()), m=int(ref.size),
                   ref_l1=float(np.abs(p_ref - p_true).sum()))
        if label == "k-RR":
            row["method"] = f"k-RR at eps_LDP = {e_rr:.4f}"
        else:
            row["method"] = str(mech.parameters.get("method", ""))
        rows.append(row)
    return rows


def _fmt_err(row: dict[str, Any]) -> tuple[str, str]:
    if row["l1"] is None:
        s = f"bounds only ({row['identified_categories']}/{row['N']} identified)"
        return s, s
    return f"{row['l1']:.4f}", f"{row['l2']:.2e}"


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| column | N | m / released | mechanism | rank (identified) | P[released = true]"
          " | outside domain | L1 error | L2^2 error | worst case | design s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        l1, l2 = _fmt_err(r)
        ident = "yes" if r["identified"] else "no"
        print(f"| {r['column']} | {r['N']} | {r['m']} / {r['n_released']} | "
              f"{r['mechanism']} | {r['rank']} ({ident}) | {r['accuracy']:.4f} | "
              f"{r['outside']:.4f} | {l1} | "
              f"{l2} | {r['worst_case']:.4f} | {r['seconds']:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--columns", default=",".join(COLUMNS),
                    help="comma-separated; a pair as 'a x b'")
    args = ap.parse_args()
    data = os.environ.get("PMLKIT_DATA")
    if not data or not os.path.isfile(os.path.join(data, "adult.data")):
        print("skipped: set PMLKIT_DATA to a folder holding adult.data")
        return
    from pmlkit.datasets import load_adult

    df = load_adult(data)
    with warnings.catch_warnings():  # warm-up: imports and compiled kernels, not timed
        warnings.simplefilter("ignore", PMLWarning)
        pk.design_from_samples(["a"] * 60 + ["b"] * 30 + ["c"] * 10, EPS, DELTA,
                               estimable=True)
    rows: list[dict[str, Any]] = []
    for name in (c.strip() for c in args.columns.split(",")):
        col_rows = bench_column(df, name)
        for r in col_rows:
            l1, _ = _fmt_err(r)
            print(f"{name}: {r['mechanism']}: rank {r['rank']}/{r['N']}, accuracy "
                  f"{r['accuracy']:.4f}, L1 {l1}, {r['seconds']:.1f} s, {r['method']}; "
                  f"reference-only L1 {r['ref_l1']:.4f}", flush=True)
        rows += col_rows
    print()
    print(f"eps = {EPS}, delta = {DELTA}, 10% reference (seed {SEED}), the rest released "
          f"(one release per mechanism, seed {SEED}); rows left out of the release because "
          "the reference never saw their value: "
          + ", ".join(f"{r['column']} {r['n_unseen']}" for r in rows[::3]))
    print_table(rows)


if __name__ == "__main__":
    main()
