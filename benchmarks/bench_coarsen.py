"""Benchmark: coarsening candidates, the utility shown against the utility released.

For each candidate ``k`` of :func:`pmlkit.propose_coarsening` (top-``k`` + ``other``) the
table gives, side by side in one run:

- ``former``: what the former proposal showed, the merged column designed over its OWN
  Weissman l1-ball (radius for ``k + 1`` categories, which the released guarantee does not
  cover), composed with the merge and measured on the original estimate;
- ``released``: what is shown now, the utility of the mechanism actually written (merged
  design over the image of the ORIGINAL column's set, certified over that set);
- the certified eps of the released mechanism over the original set, the design time and
  the certified optimality gap.

Columns: a geometric column (ratio 0.85, N = 24, m = 10^4) and, with the data, Adult's
native-country (42 values with '?') and occupation (15); delta = 1e-6, eps = log 2.

Run: ``.venv/bin/python benchmarks/bench_coarsen.py [max_work] [utility] [confidence]``
(default 10 s per design, ``mutual_information``, ``l1``; the ``former`` column exists
for ``l1`` only). Set ``PMLKIT_DATA`` to the folder holding ``adult.data`` for the Adult
rows.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from pmlkit.design import design_from_samples
from pmlkit.design.bucketing import propose_coarsening
from pmlkit.errors import PMLWarning
from pmlkit.estimation import EmpiricalDistribution
from pmlkit.utility import mutual_information

DELTA, EPS = 1e-6, math.log(2)


def columns() -> list[tuple[str, EmpiricalDistribution]]:
    p = 0.85 ** np.arange(24)
    counts = np.maximum(np.round(10_000 * p / p.sum()), 1.0)
    out = [("geometric N=24", EmpiricalDistribution.from_counts(
        counts, [f"c{i}" for i in range(24)]))]
    try:
        from pmlkit.datasets import load_adult

        df = load_adult()
    except Exception as exc:  # the data are optional here
        print(f"(Adult rows skipped: {exc})")
        return out
    for col in ("native-country", "occupation"):
        values = df[col].astype(object).where(df[col].notna(), "?")
        vc = values.value_counts(sort=False)
        out.append((f"adult {col} N={vc.size}",
                    EmpiricalDistribution.from_counts(vc.to_numpy(), list(vc.index))))
    return out


def former(est: EmpiricalDistribution, k: int, utility: str, secs: float) -> float:
    """The former candidate: the merged column's own l1-ball, composed and measured on the
    original estimate."""
    counts = np.asarray(est.counts, dtype=float)
    n = counts.size
    order = np.argsort(-counts, kind="stable")
    kept, rest = order[:k], order[k:]
    cc = list(counts[kept]) + ([counts[rest].sum()] if rest.size else [])
    labels = [est.categories[i] for i in kept] + (["other"] if rest.size else [])
    res = design_from_samples(EmpiricalDistribution.from_counts(cc, labels), EPS, DELTA,
                              utility=utility, max_work=secs)
    w = np.asarray(res.mechanism.matrix)
    row = np.empty(n, dtype=int)
    row[kept] = np.arange(kept.size)
    row[rest] = kept.size
    v = w[row]
    p = counts / counts.sum()
    if utility == "mutual_information":
        return float(mutual_information(v, p))
    outs = list(res.mechanism.output_labels)
    return float(sum(p[x] * v[x, outs.index(est.categories[x])] for x in kept
                     if est.categories[x] in outs))


def main() -> None:
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    utility = sys.argv[2] if len(sys.argv) > 2 else "mutual_information"
    confidence = sys.argv[3] if len(sys.argv) > 3 else "l1"
    print(f"eps = log 2, delta = {DELTA:g}, utility {utility}, confidence {confidence}, "
          f"{secs:g} s per design")
    print(f"{'column':28s} {'k':>3s} {'former':>9s} {'released':>9s} {'cert eps':>9s} "
          f"{'gap':>8s} {'time s':>7s}")
    for name, est in columns():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PMLWarning)
            prop = propose_coarsening(est, EPS, DELTA, utility=utility,
                                      confidence=confidence, max_work=secs)
            for c in prop.candidates:
                old = former(est, c.k, utility, secs) if confidence == "l1" else math.nan
                assert c.result is not None
                cert = c.result.guarantee.certified_eps
                gap = "n/a" if c.optimality_gap is None else f"{c.optimality_gap:.2g}"
                mark = " <- best" if c is prop.best else ""
                print(f"{name:28s} {c.k:3d} {old:9.5f} {c.utility:9.5f} {cert:9.6f} "
                      f"{gap:>8s} {c.seconds:7.2f}{mark}")


if __name__ == "__main__":
    main()
