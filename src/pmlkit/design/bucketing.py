"""Bucketing help: propose a coarsening of a many-category column, chosen by the utility it
actually achieves.

:func:`propose_coarsening` tries "the ``k`` most frequent categories, the rest merged into
one ``other`` category" for several ``k``. For each it designs the mechanism on the
coarsened counts (:func:`~pmlkit.design.design_from_samples`, same eps, delta and set), and
measures the utility of the whole release, coarsening then mechanism, on the ORIGINAL
column's estimate: the composed matrix ``V[x, :] = W[c(x), :]`` (``c`` the coarsening), its
mutual information with the original column, or its accuracy ``P[Y = X]`` (a merged
category is never "correct" for its members). The best ``k`` wins; every candidate's
utility, time and certified gap are reported.

The guarantee of a coarsened release is the one stated by the design (on the coarsened
column's distribution): coarsening is a deterministic function of the input, so the PML of
the composition w.r.t. the original column equals that of the mechanism w.r.t. the
coarsened one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from ..estimation import EmpiricalDistribution

__all__ = ["CoarseningCandidate", "CoarseningProposal", "propose_coarsening"]

#: Label of the merged category.
OTHER = "other"


@dataclass(frozen=True)
class CoarseningCandidate:
    """One candidate: keep the ``k`` most frequent categories (``kept``), merge the rest.

    Examples
    --------
    See :func:`propose_coarsening`; each tried ``k`` gives one candidate:

    >>> from pmlkit.design.bucketing import propose_coarsening
    >>> samples = ["a"] * 500 + ["b"] * 300 + ["c"] * 100 + ["d"] * 60 + ["e"] * 40
    >>> prop = propose_coarsening(samples, 1.0, 1e-3, ks=[2, 5], utility="accuracy")
    >>> first = prop.candidates[0]
    >>> first.k, first.kept
    (2, ('a', 'b'))
    """

    k: int
    kept: tuple[Any, ...]
    utility: float
    optimality_gap: float | None
    seconds: float


@dataclass(frozen=True)
class CoarseningProposal:
    """The candidates tried and the best one (largest utility on the original column).

    Examples
    --------
    >>> from pmlkit.design.bucketing import propose_coarsening
    >>> samples = ["a"] * 500 + ["b"] * 300 + ["c"] * 100 + ["d"] * 60 + ["e"] * 40
    >>> prop = propose_coarsening(samples, 1.0, 1e-3, ks=[2, 5], utility="accuracy")
    >>> [c.k for c in prop.candidates], prop.best.k
    ([2, 5], 2)
    """

    utility: str
    candidates: tuple[CoarseningCandidate, ...]
    best: CoarseningCandidate

    def __str__(self) -> str:
        lines = [f"coarsening by {self.utility} on the original column (k kept + '{OTHER}'):"]
        for c in self.candidates:
            gap = "n/a" if c.optimality_gap is None else f"{c.optimality_gap:.2g}"
            mark = "  <- best" if c is self.best else ""
            lines.append(f"  k = {c.k:3d}: utility {c.utility:.5g} (design gap {gap}, "
                         f"{c.seconds:.1f} s){mark}")
        return "\n".join(lines)


def propose_coarsening(samples: ArrayLike | EmpiricalDistribution, eps: float,
                       delta: float, *,
                       ks: Sequence[int] | None = None, utility: str = "mutual_information",
                       confidence: str = "l1", max_seconds: float | None = 20.0
                       ) -> CoarseningProposal:
    """Try top-``k`` + ``other`` coarsenings and pick ``k`` by achieved utility.

    ``samples``: the column (or an :class:`~pmlkit.estimation.EmpiricalDistribution`).
    ``ks``: the ``k`` to try (default ``2, 4, 8, 12, 16, ...`` below the number of
    categories, and all categories); ``k = N`` keeps every category (no coarsening).
    ``utility``: ``"mutual_information"`` or ``"accuracy"``. ``max_seconds``: budget of
    each design.

    Examples
    --------
    At eps = 1 the accuracy ``P[Y = X]`` of the whole release is the same whether the
    three rare categories (20% of the rows) are kept or merged into ``other``; on ties
    the coarser release wins:

    >>> from pmlkit.design.bucketing import propose_coarsening
    >>> samples = ["a"] * 500 + ["b"] * 300 + ["c"] * 100 + ["d"] * 60 + ["e"] * 40
    >>> prop = propose_coarsening(samples, 1.0, 1e-3, ks=[2, 5], utility="accuracy")
    >>> [round(c.utility, 3) for c in prop.candidates], prop.best.k
    ([0.8, 0.8], 2)
    """
    from .._validation import check_delta, check_eps
    from ..errors import ValidationError
    from ..estimation import EmpiricalDistribution, empirical_distribution
    from ..utility import mutual_information
    from .pipeline import design_from_samples

    eps = check_eps(eps)
    delta = check_delta(delta)
    if utility not in ("mutual_information", "accuracy"):
        raise ValidationError(
            f"utility must be 'mutual_information' or 'accuracy', got {utility!r}")
    est = samples if isinstance(samples, EmpiricalDistribution) \
        else empirical_distribution(samples)
    n = int(est.n)
    counts = np.asarray(est.counts, dtype=np.float64)
    cats = list(est.categories)
    order = np.argsort(-counts, kind="stable")
    if ks is None:
        ks = sorted({k for k in (2, 4, 8, 12, 16, 24, 32) if k < n} | {n})
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1 or ks[-1] > n:
        raise ValidationError(f"ks must be integers in [1, {n}] (the number of categories), "
                              f"got {list(ks)}")
    p = counts / counts.sum()
    out = []
    for k in ks:
        kept = order[:k] if k < n else order
        rest = order[k:] if k < n else order[:0]
        if k < n and rest.size == 1:  # merging one category changes nothing
            kept, rest = order, order[:0]
        ccounts = list(counts[kept]) + ([float(counts[rest].sum())] if rest.size else [])
        ccats = [cats[i] for i in kept] + ([OTHER] if rest.size else [])
        if len(ccats) < 2:
            continue
        t0 = time.perf_counter()
        res = design_from_samples(EmpiricalDistribution.from_counts(ccounts, ccats), eps,
                                  delta, utility=utility, confidence=confidence,
                                  max_seconds=max_seconds)
        w = np.asarray(res.mechanism.matrix)
        # composed release on the original categories: row x is the row of its bucket
        row = np.empty(n, dtype=np.int64)
        row[kept] = np.arange(kept.size)
        row[rest] = kept.size
        v = w[row]
        if utility == "mutual_information":
            u = float(mutual_information(v, p))
        else:
            labels = list(res.mechanism.output_labels)
            u = 0.0
            for x in kept:
                if cats[x] in labels:
                    u += p[x] * v[x, labels.index(cats[x])]
        out.append(CoarseningCandidate(int(len(ccats) - (1 if rest.size else 0)),
                                       tuple(cats[i] for i in kept), float(u),
                                       res.optimality_gap, time.perf_counter() - t0))
    best = max(out, key=lambda c: (c.utility, -c.k))
    return CoarseningProposal(utility, tuple(out), best)
