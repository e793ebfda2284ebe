"""Bucketing help: propose a coarsening of a many-category column, chosen by the utility its
release actually achieves.

A *coarsening* keeps the ``k`` most frequent categories of the column and merges the rest
into one category ``other``; the release is "coarsen, then apply a mechanism ``W`` designed
on the merged column". Written on the ORIGINAL alphabet it is the mechanism
``V[x, :] = W[g(x), :]`` (``g`` maps a category to its group): merged categories share one
row. That is the mechanism pmlkit releases (:func:`design_coarsened`), and the one whose
utility :func:`propose_coarsening` reports for each candidate ``k``.

**Which set the merged design is made over.** The guarantee of the release is stated,
and certified, over the ORIGINAL column's confidence set ``S`` (built from the sample at
level ``delta``). The PML of ``V`` under a
distribution ``Q`` of the original column depends on ``Q`` only through its merged
distribution ``A Q`` (``(A Q)(G) = sum_{x in G} Q(x)``): ``P_V(y) = sum_G (A Q)(G) W[G, y]``
and the rows of ``V`` are those of ``W``. So ``V`` is eps-PML for every ``Q`` in ``S`` iff
``W`` is eps-PML for every distribution of the image ``A S`` (:func:`merged_set`), and the
merged design is made over ``A S``: certified over ``S`` on the original alphabet, and
for mutual information the best any mechanism that factors through the merge can have.

A smaller set would not be valid. The merged column's own confidence set (e.g. the l1-ball
of the Weissman radius for ``k + 1`` categories, smaller than the one for ``N``) holds the
true merged distribution with probability ``1 - delta`` only for a merge fixed before the
sample is seen; here the kept categories and ``k`` are chosen from the same sample, and a
statement valid for every merge that could have been chosen is a statement about the
original column, which is what ``S`` is.

Utilities are measured on the ORIGINAL column's estimate ``p_hat``: mutual information
``I(X; Y)`` of ``V`` (which equals ``I(G; Y)`` of ``W`` under the merged estimate: ``Y``
depends on ``X`` only through its group) or the accuracy ``P[Y = X]`` (a merged category is
never "correct" for its members, its rows count 0). The accuracy design itself maximises the
merged column's accuracy, where ``other`` released for a merged row counts as correct: the
output ``other`` then means "one of the merged categories", and the accuracy reported is
the release's, without that term.

Coarsening never raises the utility the original column's set allows: a coarsened release
is one of the mechanisms certified over ``S``. What it buys is a smaller design (a large
alphabet within the time budget, or a certified optimum where the full design stops with
a gap) and a release a person can read; :func:`propose_coarsening` shows what each ``k``
costs and, on ties, prefers the coarser release.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    from ..estimation import EmpiricalDistribution
    from ..sets import UncertaintySet
    from .guarantee import DesignResult

__all__ = ["CoarseningCandidate", "CoarseningProposal", "design_coarsened", "merged_set",
           "propose_coarsening"]

#: Label of the merged category.
OTHER = "other"

#: Candidates whose utilities differ by at most this (relative) are tied (the designs are
#: optimal to solver tolerance); the coarsest of the tied candidates is chosen.
TIE_TOL = 1e-9

#: Utilities a coarsening is measured (and designed) with.
COARSEN_UTILITIES = ("mutual_information", "accuracy")


@dataclass(frozen=True)
class CoarseningCandidate:
    """One candidate: keep the ``k`` most frequent categories (``kept``), merge the rest.

    ``utility`` is the utility of the released mechanism (``result.mechanism``, on the
    original labels, certified over the original column's set) on the original column's
    estimate; ``optimality_gap`` is the certified relative gap of the design over the merged
    column (0: optimal to solver tolerance); ``seconds`` the time of its design.
    ``result`` is the :class:`~pmlkit.design.DesignResult` of the release itself (what
    :func:`design_coarsened` returns for this ``k``).

    Examples
    --------
    See :func:`propose_coarsening`; each tried ``k`` gives one candidate:

    >>> from pmlkit.design.bucketing import propose_coarsening
    >>> samples = ["a"] * 500 + ["b"] * 300 + ["c"] * 100 + ["d"] * 60 + ["e"] * 40
    >>> prop = propose_coarsening(samples, 1.0, 1e-3, ks=[2, 5], utility="accuracy")
    >>> first = prop.candidates[0]
    >>> first.k, first.kept
    (2, ('a', 'b'))
    >>> first.utility == first.result.guarantee.utility_value
    True
    """

    k: int
    kept: tuple[Any, ...]
    utility: float
    optimality_gap: float | None
    seconds: float
    result: DesignResult | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``k``, ``kept``, ``utility``, ``optimality_gap``, ``seconds``.

        Examples
        --------
        >>> CoarseningCandidate(2, ("a", "b"), 0.5, 0.0, 1.25).to_dict()["kept"]
        ['a', 'b']
        """
        from .._validation import to_jsonable

        return {"k": self.k, "kept": to_jsonable(list(self.kept)),
                "utility": self.utility, "optimality_gap": self.optimality_gap,
                "seconds": self.seconds}


@dataclass(frozen=True)
class CoarseningProposal:
    """The candidates tried and the best one (largest released utility; on ties, within
    :data:`TIE_TOL` relative, the coarser: smaller ``k``).

    Examples
    --------
    >>> from pmlkit.design.bucketing import propose_coarsening
    >>> samples = ["a"] * 500 + ["b"] * 300 + ["c"] * 100 + ["d"] * 60 + ["e"] * 40
    >>> prop = propose_coarsening(samples, 1.0, 1e-3, ks=[2, 5], utility="accuracy")
    >>> [c.k for c in prop.candidates], prop.best.k
    ([2, 5], 2)
    >>> prop.to_dict()["best"]
    2
    """

    utility: str
    candidates: tuple[CoarseningCandidate, ...]
    best: CoarseningCandidate

    def __str__(self) -> str:
        lines = [f"coarsening by {self.utility} of the release on the original column "
                 f"(k kept + '{OTHER}'; each designed and certified over the original "
                 "column's set):"]
        for c in self.candidates:
            gap = "n/a" if c.optimality_gap is None else f"{c.optimality_gap:.2g}"
            mark = "  <- best" if c is self.best else ""
            lines.append(f"  k = {c.k:3d}: utility {c.utility:.6g} (design gap {gap}, "
                         f"{c.seconds:.1f} s){mark}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the utility's name, every candidate (:meth:`CoarseningCandidate.to_dict`)
        and the best ``k``.

        Examples
        --------
        See :class:`CoarseningProposal`.
        """
        return {"utility": self.utility,
                "candidates": [c.to_dict() for c in self.candidates], "best": self.best.k}


def _check_groups(groups: ArrayLike, n: int) -> tuple[NDArray[np.intp], int]:
    from .._validation import fmt
    from ..errors import ValidationError

    try:
        g = np.asarray(groups)
    except (TypeError, ValueError):
        g = np.asarray([None], dtype=object)
    ok = g.ndim == 1 and g.size == n and (g.dtype.kind in "iu" or (
        g.dtype.kind == "f" and bool(np.all(np.isfinite(g))) and bool(np.all(g == np.round(g)))))
    if not ok or (g.size and int(g.min()) < 0):
        raise ValidationError(
            f"groups must be {n} integers >= 0 (the group of each of the set's {n} "
            f"categories), got {fmt(groups)}")
    gi = g.astype(np.intp)
    k = int(gi.max()) + 1
    sizes = np.bincount(gi, minlength=k)
    if (sizes == 0).any():
        raise ValidationError(
            f"groups must use every group number from 0 to {k - 1} (no empty group), got "
            f"{fmt(groups)} (group {int(np.flatnonzero(sizes == 0)[0])} is empty)")
    return gi, k


def merged_set(uncertainty_set: UncertaintySet, groups: ArrayLike) -> UncertaintySet:
    """The image ``A S = {A Q : Q in S}`` of a set of distributions under a merge of
    categories, exactly (``(A Q)(G) = sum_{x : groups[x] = G} Q(x)``).

    Parameters
    ----------
    uncertainty_set
        An :class:`~pmlkit.sets.L1Ball`, :class:`~pmlkit.sets.Box`,
        :class:`~pmlkit.sets.L1BoxSet` or :class:`~pmlkit.sets.VertexSet` on ``N``
        categories.
    groups
        ``N`` integers: the group of each category; every group ``0 .. K-1`` non-empty.

    Returns
    -------
    UncertaintySet
        The image on ``K`` categories, of the same kind:

        - l1-ball ``B_beta(c)``: the ball ``B_beta(A c)`` of the same radius;
        - box ``{lo <= Q <= hi}`` (with the simplex): the box with the summed bounds
          ``[lo(G), hi(G)]`` (capped at 1);
        - ball and box ``{||Q - c||_1 <= beta, lo <= Q <= hi}``: ``B_beta(A c)`` with the
          summed bounds;
        - convex hull of vertices: the hull of the merged vertices (``A`` is linear).

        A merged bound that is a sum of two or more floats is widened outwards by a few
        units in the last place, so rounding can only make the image larger.

    Notes
    -----
    Proof for the first three kinds (the box alone is the case ``beta = inf``, the ball
    alone the box ``0 <= Q <= 1``). Let ``S = {Q in simplex : ||Q - c||_1 <= beta,
    lo <= Q <= hi}`` with ``c`` a distribution in the box, and ``T`` the same set on the
    groups with ``A c``, ``lo(G)``, ``hi(G)``.

    ``A S`` is in ``T``: ``A Q`` is a distribution, ``lo(G) <= (A Q)(G) <= hi(G)`` by
    summing the coordinate bounds over ``G``, and by the triangle inequality
    ``||A Q - A c||_1 = sum_G |sum_{x in G} (Q(x) - c(x))| <= ||Q - c||_1 <= beta``.

    ``T`` is in ``A S``: take ``R`` in ``T``; build ``Q`` group by group. If
    ``R(G) >= c(G)``, ``Q_G = c_G + t (hi_G - c_G)`` with ``t = (R(G) - c(G)) / (hi(G) -
    c(G))`` in ``[0, 1]`` (``t = 0`` when ``hi(G) = c(G)``, then ``R(G) = c(G)``); else the
    same towards ``lo_G``. Then ``Q_G`` is in ``[lo_G, hi_G]`` (between ``c_G`` and a
    bound), sums to ``R(G)``, and every coordinate moves in the same direction, so
    ``||Q_G - c_G||_1 = |R(G) - c(G)|``. Hence ``Q >= 0``, ``sum Q = sum R = 1``,
    ``||Q - c||_1 = ||R - A c||_1 <= beta``: ``Q`` is in ``S`` and ``A Q = R``.

    Examples
    --------
    Merging the last two of three categories: the ball keeps its radius, the box sums its
    bounds:

    >>> from pmlkit.sets import Box, L1Ball
    >>> ball = merged_set(L1Ball([0.5, 0.3, 0.2], 0.2), [0, 1, 1])
    >>> ball.center.round(12).tolist(), ball.radius
    ([0.5, 0.5], 0.2)
    >>> box = merged_set(Box([0.4, 0.2, 0.1], [0.6, 0.4, 0.3]), [0, 1, 1])
    >>> box.lower.round(12).tolist(), box.upper.round(12).tolist()
    ([0.4, 0.3], [0.6, 0.7])
    """
    from .._validation import fmt
    from ..errors import ValidationError
    from ..sets import Box, L1Ball, L1BoxSet, UncertaintySet, VertexSet

    if not isinstance(uncertainty_set, UncertaintySet):
        raise ValidationError(
            f"uncertainty_set must be a pmlkit.sets set, got {fmt(uncertainty_set)}")
    g, k = _check_groups(groups, uncertainty_set.n)
    sizes = np.bincount(g, minlength=k)
    ulp = np.finfo(np.float64).eps
    # widen a sum of several floats outwards (a single term is exact)
    slack = np.where(sizes > 1, 4.0 * ulp * sizes, 0.0)

    def sums(v: Any) -> NDArray[np.float64]:
        return np.bincount(g, weights=np.asarray(v, dtype=np.float64),
                           minlength=k).astype(np.float64)

    def bounds(lo: Any, hi: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return (np.clip(sums(lo) - slack, 0.0, 1.0), np.clip(sums(hi) + slack, 0.0, 1.0))

    def center(c: Any) -> NDArray[np.float64]:
        s = sums(c)
        return np.asarray(s / s.sum(), dtype=np.float64)

    if isinstance(uncertainty_set, L1BoxSet):
        lo, hi = bounds(uncertainty_set.lower, uncertainty_set.upper)
        return L1BoxSet(center(uncertainty_set.center), uncertainty_set.radius, lo, hi)
    if isinstance(uncertainty_set, L1Ball):
        return L1Ball(center(uncertainty_set.center), uncertainty_set.radius)
    if isinstance(uncertainty_set, Box):
        lo, hi = bounds(uncertainty_set.lower, uncertainty_set.upper)
        return Box(lo, hi)
    if isinstance(uncertainty_set, VertexSet):
        v = np.asarray(uncertainty_set.vertices)
        merged = np.zeros((v.shape[0], k))
        np.add.at(merged.T, g, v.T)
        return VertexSet(merged / merged.sum(axis=1, keepdims=True))
    raise ValidationError(
        "uncertainty_set must be an L1Ball, Box, L1BoxSet or VertexSet (sets whose image "
        f"under a merge is computed exactly), got {type(uncertainty_set).__name__}")


def _estimate(samples: Any, categories: Sequence[Any] | None,
              missing: str) -> EmpiricalDistribution:
    from .pipeline import estimate_for_design

    return estimate_for_design(samples, categories=categories, missing=missing)


def _check_utility(utility: Any) -> str:
    from .._validation import fmt
    from ..errors import ValidationError

    if not isinstance(utility, str) or utility not in COARSEN_UTILITIES:
        raise ValidationError(
            f"utility must be 'mutual_information' or 'accuracy', got {fmt(utility)}")
    return utility


def _effective_k(k: int, n: int) -> int:
    """Merging a single category (or none) changes nothing: that is ``k = N``."""
    return n if k >= n - 1 else k


def _released_utility(v: NDArray[np.float64], p: NDArray[np.float64], utility: str,
                      in_labels: Sequence[Any], out_labels: Sequence[Any],
                      kept: NDArray[np.intp]) -> float:
    """The utility of the release ``v`` (original inputs) on the original estimate ``p``."""
    from ..utility import mutual_information

    if utility == "mutual_information":
        return float(mutual_information(v, p))
    col = {lab: j for j, lab in enumerate(out_labels)}
    idx = [(int(x), col[in_labels[x]]) for x in kept if in_labels[x] in col]
    if not idx:
        return 0.0
    xs, js = np.array(idx).T
    return float(np.sum(p[xs] * v[xs, js]))


def design_coarsened(samples: ArrayLike | EmpiricalDistribution, eps: float, delta: float,
                     k: int, *, utility: str = "mutual_information",
                     confidence: str = "l1", categories: Sequence[Any] | None = None,
                     missing: str = "error", max_seconds: float | None = None,
                     max_work: float | None = 60.0) -> DesignResult:
    """The release "keep the ``k`` most frequent categories, merge the rest into
    ``other``, then a mechanism designed on the merged column", as a certified mechanism on
    the ORIGINAL labels.

    1. The confidence set ``S`` of the original column (``confidence=``, as in
       :func:`~pmlkit.design.design_from_samples`: ``"l1"`` the paper's ball, or any
       :func:`pmlkit.confidence.confidence_set` method) at level ``delta``.
    2. The merged mechanism ``W`` is designed over the image ``A S`` (:func:`merged_set`:
       exact for every set those methods build) with the merged estimate as prior.
    3. The release ``V[x, :] = W[g(x), :]`` (merged categories share a row) is certified
       over ``S`` itself (:func:`pmlkit.worstcase.leakage_capacity`): its PML under ``Q``
       depends on ``Q`` only through ``A Q``, so this equals ``W``'s worst case over
       ``A S``. The guarantee is the (eps, delta)-PML statement of the original column.

    The utility recorded (``result.guarantee.utility_value``) is that of ``V`` on the
    original estimate (module docstring); the optimality gap is the design's over the
    merged column (for mutual information ``I(X; Y) = I(G; Y)``, so the gap bounds the
    loss against every mechanism that factors through this merge; for accuracy it is the
    merged column's accuracy, which counts ``other`` as correct). ``k >= N - 1`` is no
    merge at all (``k = N``). The order of "most frequent" is the counts', ties broken by
    the categories' order.

    Parameters
    ----------
    samples
        The column, or an :class:`~pmlkit.estimation.EmpiricalDistribution`.
    eps, delta
        The target (eps, delta)-PML guarantee.
    k
        Number of categories kept, ``1 <= k <= N``.
    utility
        ``"mutual_information"`` or ``"accuracy"``.
    confidence
        The original column's confidence set (see above).
    categories
        The full list of labels (unseen ones count 0), as in ``design_from_samples``.
    missing
        What a missing sample is, as in ``design_from_samples``: ``"error"`` (refused),
        ``"category"`` (the label ``"(missing)"``, kept or merged like any category) or
        ``"keep"`` (left out of the estimate).
    max_work, max_seconds
        Work budget (counted: deterministic) and outer time cap of the merged design, as in
        :func:`~pmlkit.design.optimal_mechanism`.

    Returns
    -------
    DesignResult
        The mechanism (inputs: the original categories; its parameters record the
        ``coarsening`` as ``[category, merged label]`` pairs) and its guarantee.

    Raises
    ------
    DataError
        When a category kept is itself named ``other`` (the merged category would be
        confused with it).

    Examples
    --------
    Keep the two most frequent of five categories at eps = 1: the three rare ones share a
    row, and the guarantee is stated over the original column's l1-ball (radius for
    ``N = 5``):

    >>> import numpy as np
    >>> from pmlkit import l1_radius
    >>> from pmlkit.design.bucketing import design_coarsened
    >>> samples = ["a"] * 500 + ["b"] * 300 + ["c"] * 100 + ["d"] * 60 + ["e"] * 40
    >>> res = design_coarsened(samples, 1.0, 1e-3, 2, utility="accuracy")
    >>> w = np.asarray(res.mechanism.matrix)
    >>> res.mechanism.input_labels, bool((w[2] == w[3]).all() and (w[3] == w[4]).all())
    (('a', 'b', 'c', 'd', 'e'), True)
    >>> g = res.guarantee
    >>> g.n, g.beta == l1_radius(1e-3, m=1000, n=5), g.certified_eps <= 1.0 + 1e-9
    (5, True, True)
    >>> round(g.utility_value, 3)  # P[Y = X] on the original column: 0.5 + 0.3 kept
    0.8
    """
    from .._validation import check_count, check_delta, check_eps
    from ..confidence import confidence_set
    from ..errors import DataError, PMLWarning, ValidationError
    from ..sets import L1Ball
    from ..utility import mutual_information
    from ._common import certify
    from .baselines import randomized_response
    from .guarantee import DesignResult
    from .pipeline import optimal_mechanism_for_set

    eps = check_eps(eps)
    delta = check_delta(delta)
    utility = _check_utility(utility)
    if not isinstance(confidence, str):
        raise ValidationError(f"confidence must be a method name, got {confidence!r}")
    est = _estimate(samples, categories, missing)
    n = int(est.n)
    k = check_count(k, "k", minimum=1)
    if k > n:
        raise ValidationError(f"k must be in [1, {n}] (the number of categories), got {k}")
    k = _effective_k(k, n)
    counts = np.asarray(est.counts, dtype=np.float64)
    cats = list(est.categories)
    p = counts / counts.sum()
    order = np.argsort(-counts, kind="stable")
    kept, merged = order[:k], order[k:]
    coarse_labels: list[Any] = [cats[i] for i in kept] + ([OTHER] if merged.size else [])
    if merged.size and OTHER in coarse_labels[:-1]:
        raise DataError(f"the column already has a category {OTHER!r}; the merged "
                        "categories would be confused with it (rename it first)")
    groups = np.empty(n, dtype=np.intp)
    groups[kept] = np.arange(kept.size)
    groups[merged] = kept.size
    cs = confidence_set(est.counts, delta, confidence=confidence)
    uset = cs.set
    image = merged_set(uset, groups)
    # the merged estimate; a set with a center is centred on it exactly (the exact
    # mutual-information pricing over an l1-ball needs the center to be the prior)
    coarse_p = np.asarray(getattr(image, "center", np.bincount(groups, weights=p)))
    what = f"{k} kept + {OTHER!r}" if merged.size else f"all {n} kept"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PMLWarning)
        coarse = optimal_mechanism_for_set(image, eps, prior=coarse_p, utility=utility,
                                           labels=coarse_labels, max_seconds=max_seconds,
                                           max_work=max_work)
    for wrn in caught:  # say which candidate a design warning is about
        if issubclass(wrn.category, PMLWarning):
            text = str(wrn.message).replace("optimal_mechanism_for_set",
                                            f"design_coarsened ({what})")
            warnings.warn(text, wrn.category, stacklevel=2)
        else:
            warnings.warn_explicit(wrn.message, wrn.category, wrn.filename, wrn.lineno)
    w = np.asarray(coarse.matrix, dtype=np.float64)[groups]
    out_labels = list(coarse.output_labels)
    value = _released_utility(w, p, utility, cats, out_labels, kept)
    prov = coarse.provenance
    params: dict[str, Any] = dict(prov.details)
    params.update(
        eps=eps, beta=float(uset.radius) if isinstance(uset, L1Ball) else None,
        utility=utility, utility_value=value,
        optimality=f"{prov.optimality} on the coarsening ({what})",
        optimality_gap=prov.optimality_gap, method=prov.method,
        delta=delta, m=int(est.m), confidence=confidence, prior=p.tolist(),
        coarsening=[[cats[i], coarse_labels[groups[i]]] for i in range(n)])
    statement = (f"{cs.description}; the release is the design on the merged column "
                 f"({what}), certified over this set on the original alphabet")
    mech = certify(w, uset, eps, designer="design_coarsened", parameters=params,
                   input_labels=cats, output_labels=out_labels, basis="sample",
                   statement=statement)
    rr = np.asarray(randomized_response(n, eps).matrix)
    u_rr = float(p @ np.diag(rr)) if utility == "accuracy" \
        else float(mutual_information(rr, p))
    return DesignResult.from_mechanism(mech, categories=tuple(cats),
                                       utility_randomized_response=u_rr)


def propose_coarsening(samples: ArrayLike | EmpiricalDistribution, eps: float,
                       delta: float, *,
                       ks: Sequence[int] | None = None, utility: str = "mutual_information",
                       confidence: str = "l1", missing: str = "error",
                       max_seconds: float | None = None, max_work: float | None = 20.0
                       ) -> CoarseningProposal:
    """Try top-``k`` + ``other`` coarsenings and pick ``k`` by the utility of the release.

    Every candidate is the release itself (:func:`design_coarsened`): designed over the
    image of the ORIGINAL column's confidence set under its merge, certified over that
    set, its utility measured on the original column's estimate. So the utility shown for
    a ``k`` is the utility of the mechanism released for that ``k``
    (``candidate.result``), and the best ``k`` is the best release.

    ``samples``: the column (or an :class:`~pmlkit.estimation.EmpiricalDistribution`).
    ``ks``: the ``k`` to try (default ``2, 4, 8, 12, 16, 24, 32`` below the number of
    categories, and all categories); ``k >= N - 1`` keeps every category (no coarsening;
    tried once). ``utility``: ``"mutual_information"`` or ``"accuracy"``.
    ``confidence``: the original column's set, any method of
    :func:`pmlkit.confidence.confidence_set`. ``missing``: what a missing sample is
    (:func:`design_coarsened`). ``max_work``, ``max_seconds``: work budget (counted:
    the proposal does not depend on the machine's load) and outer time cap of each design.

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
    from .._validation import check_delta, check_eps, fmt
    from ..errors import ValidationError

    eps = check_eps(eps)
    delta = check_delta(delta)
    utility = _check_utility(utility)
    est = _estimate(samples, None, missing)
    n = int(est.n)
    if ks is None:
        ks = sorted({k for k in (2, 4, 8, 12, 16, 24, 32) if k < n} | {n})
    try:
        tried = sorted({int(k) for k in ks})
        bad = any(int(k) != k for k in ks)
    except (TypeError, ValueError):
        tried, bad = [], True
    if bad or not tried or tried[0] < 1 or tried[-1] > n:
        raise ValidationError(f"ks must be integers in [1, {n}] (the number of categories), "
                              f"got {fmt(ks)}")
    effective = sorted({_effective_k(k, n) for k in tried})
    out = []
    for k in effective:
        t0 = time.perf_counter()
        res = design_coarsened(est, eps, delta, k, utility=utility, confidence=confidence,
                               max_seconds=max_seconds, max_work=max_work)
        u = res.guarantee.utility_value
        assert not math.isnan(u)
        order = np.argsort(-np.asarray(est.counts, dtype=np.float64), kind="stable")
        kept = tuple(est.categories[i] for i in order[:k])
        out.append(CoarseningCandidate(k, kept, float(u), res.optimality_gap,
                                       time.perf_counter() - t0, res))
    top = max(c.utility for c in out)
    ties = [c for c in out if c.utility >= top - TIE_TOL * max(abs(top), 1e-3)]
    best = min(ties, key=lambda c: c.k)
    return CoarseningProposal(utility, tuple(out), best)
