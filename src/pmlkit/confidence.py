"""Confidence sets for the true distribution: counts + delta -> uncertainty set.

The paper (Sections 2 and 4.4) turns m samples into the l1-ball of Theorem 2 [Thm weissman] with the
distribution-free radius of Section 4.4 [eq. betastar]. That ball is valid but loose: it grows with
``N log 2`` and ignores how skewed the estimate is. pmlkit goes beyond the paper with other
sets that contain the true distribution P with probability at least ``1 - delta`` over the
estimation sample (the set's *coverage*). Each method cites its coverage theorem in the
returned ``description``:

================  ========================================================================
``"l1"``          the paper's ball ``B_beta*(p_hat)`` (Theorem 2 [Thm weissman] with ``phi >= 2``,
                  Section 4.4 [eq. betastar]); the default, to reproduce the paper.
``"box-cp"``      exact Clopper-Pearson intervals per category, Bonferroni over the N
                  categories (N = 2: one interval for P(x1) fixes both coordinates).
``"box-kl"``      KL-Chernoff intervals ``{q : m kl(p_hat_i || q) <= log(2N/delta)}``
                  per category, same Bonferroni rule.
``"box-lower"``   one-sided exact lower bounds only (the upper bounds follow from the
                  simplex): Bonferroni over N one-sided Clopper-Pearson bounds for N > 2;
                  for N = 2 one exact lower confidence bound on ``min(P(x1), P(x2))``
                  (folded binomial). Made for the Laplace calibration, which needs only a
                  lower bound on ``p_min``.
``"l1-kappa"``    the distribution-dependent Weissman ball (Theorem 2 [Thm weissman] with
                  ``phi(kappa_P)``): ``delta_a`` buys an upper bound on ``kappa_P``,
                  ``delta - delta_a`` the ball; much smaller for skewed P.
``"l1-box"``      the paper's ball at ``delta/2`` intersected with the Clopper-Pearson box
                  at ``delta/2`` (:class:`L1BoxSet`): close to the better of the two for
                  every mechanism. Listed in :data:`METHODS` once :mod:`pmlkit.sets`
                  registers the ``"l1_box"`` kind (so mechanism files can reload it).
``"auto"``        every candidate at ``delta / k`` and the smallest by a stated criterion
                  (or a caller's score): valid because of the union bound over the k.
================  ========================================================================

The worst-case machinery (:mod:`pmlkit.worstcase`) is exact over every set returned here
(``L1Ball`` and ``Box`` of :mod:`pmlkit.sets`).

Which is tighter where (measured in ``benchmarks/bench_confidence.py`` and the
``tighter_sets`` figure): the boxes beat the ball for every N, most for small m, small
delta and large N (the ball pays ``N log 2``; Bonferroni pays only ``log N``). For the
binary Laplace mechanism ``"box-lower"`` is the tightest (it spends all of delta on the
one side that matters). ``"l1-kappa"`` beats ``"l1"`` only when one category clearly
holds more than half of the mass (it pays half of delta for the kappa bound).

All computations are vectorised over batches of count vectors (the ``batch_*``
functions), which the coverage audit uses to simulate thousands of samples at once.

The method is chosen with ``confidence=`` (:func:`confidence_set`); it was called
``method=`` before release 0.2, and that spelling still works for one release with a
:class:`DeprecationWarning`.

References
----------
- L. Grosse, S. Saeidian, T. J. Oechtering, M. Skoglund, "Privacy Mechanism Design
  based on Empirical Distributions", Theorem 2 and Section 4.4 (the ``"l1"`` ball).
- T. Weissman, E. Ordentlich, G. Seroussi, S. Verdu, M. J. Weinberger, "Inequalities
  for the L1 deviation of the empirical distribution", Hewlett-Packard Labs technical
  report, 2003, Theorem 1.
- C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits illustrated
  in the case of the binomial", Biometrika 26(4), 1934.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._deprecation import renamed_parameter
from ._validation import check_delta, check_real, fmt, readonly
from .errors import ValidationError
from .sets import SET_KINDS, Box, L1Ball, L1BoxSet, UncertaintySet

if TYPE_CHECKING:
    from .estimation import EmpiricalDistribution

_FloatArray = NDArray[np.float64]

__all__ = [
    "METHODS",
    "ConfidenceSet",
    "L1BoxSet",
    "box_cp_set",
    "box_kl_set",
    "box_lower_set",
    "confidence_set",
    "l1_box_set",
    "l1_kappa_set",
    "l1_set",
]

def _l1_box_registered() -> bool:
    """Whether :func:`pmlkit.sets.set_from_dict` knows the ``"l1_box"`` kind (then
    ``"l1-box"`` joins :data:`METHODS`; mechanism files carrying it can be reloaded)."""
    return "l1_box" in SET_KINDS


#: Candidates of ``"auto"`` when the caller names none (every other listed method).
AUTO_CANDIDATES: tuple[str, ...] = (
    "l1", "box-cp", "box-kl", "box-lower", "l1-kappa",
    *(("l1-box",) if _l1_box_registered() else ()))

#: Names listed for :func:`confidence_set`'s ``confidence`` (also accepted: ``"l1-box"``, listed
#: once its set kind is registered in :mod:`pmlkit.sets`).
METHODS: tuple[str, ...] = (*AUTO_CANDIDATES, "auto")

#: Default share of delta that ``"l1-kappa"`` spends on the upper bound on kappa_P.
KAPPA_SPLIT = 0.5

_BISECT_STEPS = 80


@dataclass(frozen=True)
class ConfidenceSet:
    """A set that contains the true distribution with probability ``>= 1 - delta``.

    Attributes
    ----------
    set
        The :class:`pmlkit.sets.UncertaintySet` (``L1Ball`` or ``Box``).
    method
        The method name (one of :data:`METHODS`).
    delta
        The failure probability over the estimation sample: ``P[P_true not in set] <= delta``.
    m
        Number of samples the counts hold.
    n
        Alphabet size N.
    description
        The construction and the coverage theorem it relies on.
    p_hat
        The empirical distribution ``counts / m`` (read-only).
    details
        Method-specific numbers (radius, delta split, chosen candidate, ...), JSON-ready.

    Examples
    --------
    30 of 100 samples in the first category; the paper's ball at ``delta = 0.05``:

    >>> cs = confidence_set([30, 70], 0.05)
    >>> cs.method, cs.delta, cs.m, cs.n, cs.p_hat
    ('l1', 0.05, 100, 2, array([0.3, 0.7]))
    >>> round(cs.set.radius, 4)  # sqrt(2/100 (log 2 - log 0.05))
    0.2716
    >>> sorted(cs.to_dict())
    ['delta', 'description', 'details', 'm', 'method', 'n', 'p_hat', 'set']
    """

    set: UncertaintySet
    method: str
    delta: float
    m: int
    n: int
    description: str
    p_hat: NDArray[np.float64] = field(repr=False)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (the set via its own ``to_dict``)."""
        return {
            "method": self.method,
            "delta": self.delta,
            "m": self.m,
            "n": self.n,
            "description": self.description,
            "p_hat": [float(x) for x in self.p_hat],
            "details": dict(self.details),
            "set": self.set.to_dict(),
        }


# --------------------------------------------------------------------------- validation

def _as_counts(counts: ArrayLike | EmpiricalDistribution) -> NDArray[np.int64]:
    """Counts validated by :meth:`EmpiricalDistribution.from_counts`, plus ``N >= 2``."""
    from .estimation import EmpiricalDistribution

    if isinstance(counts, EmpiricalDistribution):
        c = np.asarray(counts.counts, dtype=np.int64)
    else:
        c = np.asarray(EmpiricalDistribution.from_counts(counts).counts, dtype=np.int64)
    if c.size < 2:
        raise ValidationError(
            f"counts must have at least 2 categories (an alphabet of size N >= 2), "
            f"got {c.size}: {fmt(c)}")
    return c


# ------------------------------------------------------------------ binomial primitives

def clopper_pearson_lower(k: ArrayLike, m: ArrayLike, alpha: ArrayLike) -> _FloatArray:
    """One-sided exact (Clopper-Pearson) lower bound: ``P_q[X >= k] = alpha`` for
    ``X ~ Bin(m, q)``, i.e. the ``alpha`` quantile of ``Beta(k, m - k + 1)``; 0 for k = 0.

    ``P[P_i < lower] <= alpha`` for every true ``P_i`` (Clopper and Pearson, 1934).

    Examples
    --------
    The lower end of scipy's exact two-sided 95% interval is the one-sided bound at 2.5%:

    >>> from scipy.stats import binomtest
    >>> lo = clopper_pearson_lower(30, 100, 0.025)
    >>> round(float(lo), 6), round(binomtest(30, 100).proportion_ci(0.95, "exact").low, 6)
    (0.212406, 0.212406)
    """
    from scipy.special import betaincinv

    kk = np.asarray(k, dtype=np.float64)
    mm = np.broadcast_to(np.asarray(m, dtype=np.float64), kk.shape)
    aa = np.broadcast_to(np.asarray(alpha, dtype=np.float64), kk.shape)
    with np.errstate(invalid="ignore"):
        q = betaincinv(np.maximum(kk, 1.0), mm - kk + 1.0, aa)
    return cast(_FloatArray, np.where(kk <= 0, 0.0, np.clip(q, 0.0, 1.0)))


@overload
def clopper_pearson_upper(k: float, m: float, alpha: float) -> float: ...
@overload
def clopper_pearson_upper(k: ArrayLike, m: ArrayLike, alpha: ArrayLike) -> _FloatArray: ...
def clopper_pearson_upper(k: ArrayLike, m: ArrayLike, alpha: ArrayLike) -> float | _FloatArray:
    """One-sided exact (Clopper-Pearson) upper bound at level ``1 - alpha`` for ``k``
    successes out of ``m``: ``u`` with ``P_u[X <= k] = alpha`` for ``X ~ Bin(m, u)``, i.e.
    ``1 - clopper_pearson_lower(m - k, m, alpha)`` by symmetry (``1`` when ``k >= m``,
    including ``m = 0``). ``P[P_i > upper] <= alpha`` for every true ``P_i``.

    The one implementation of the bound: the confidence sets use it vectorised, the audit
    for its reported upper bounds. Scalars in, a float out; arrays in, an array out.

    Examples
    --------
    >>> from scipy.stats import binomtest
    >>> round(clopper_pearson_upper(30, 100, 0.025), 6)
    0.399815
    >>> round(binomtest(30, 100).proportion_ci(0.95, "exact").high, 6)
    0.399815
    >>> clopper_pearson_upper([0, 0], 10, [0.05, 0.5]).round(4)  # 1 - alpha^(1/10) at k = 0
    array([0.2589, 0.067 ])
    """
    scalar = np.ndim(k) == 0 and np.ndim(m) == 0 and np.ndim(alpha) == 0
    kk = np.asarray(k, dtype=np.float64)
    out = 1.0 - clopper_pearson_lower(np.asarray(m, dtype=np.float64) - kk, m, alpha)
    return float(out) if scalar else out


def _binary_kl(p: _FloatArray, q: _FloatArray) -> _FloatArray:
    """``kl(p || q) = p log(p/q) + (1-p) log((1-p)/(1-q))`` (inf where undefined)."""
    from scipy.special import xlogy

    with np.errstate(divide="ignore", invalid="ignore"):
        return cast(_FloatArray,
                    xlogy(p, p) - xlogy(p, q) + xlogy(1 - p, 1 - p) - xlogy(1 - p, 1 - q))


def _kl_bounds(p: _FloatArray, level: _FloatArray) -> tuple[_FloatArray, _FloatArray]:
    """Inverse binary KL: the interval ``{q : kl(p || q) <= level}`` (vectorised bisection).

    Returns ``(lower, upper)``, each rounded outwards (the bisection keeps the end that
    lies outside the interval), so the returned interval contains the exact one."""
    p = np.asarray(p, dtype=np.float64)
    level = np.broadcast_to(np.asarray(level, dtype=np.float64), p.shape)
    # upper end: largest q in [p, 1] with kl <= level; kl increases in q there
    inside, outside = p.copy(), np.ones_like(p)
    for _ in range(_BISECT_STEPS):  # fixed number of vectorised halvings, not a record loop
        mid = 0.5 * (inside + outside)
        ok = _binary_kl(p, mid) <= level
        inside = np.where(ok, mid, inside)
        outside = np.where(ok, outside, mid)
    upper = np.where(_binary_kl(p, np.ones_like(p)) <= level, 1.0, outside)
    inside, outside = p.copy(), np.zeros_like(p)
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (inside + outside)
        ok = _binary_kl(p, mid) <= level
        inside = np.where(ok, mid, inside)
        outside = np.where(ok, outside, mid)
    lower = np.where(_binary_kl(p, np.zeros_like(p)) <= level, 0.0, outside)
    return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)


def _folded_lower(t: NDArray[Any], m: NDArray[Any], delta: float) -> _FloatArray:
    """Exact lower confidence bound on ``tau = min(P(x1), P(x2))`` from ``T = min(X, m - X)``.

    ``G(tau, t) = P_tau[T >= t] = P[t <= X <= m - t]`` (``X ~ Bin(m, tau)``) increases in
    ``tau`` on ``[0, 1/2]``: its derivative is ``m C(m-1, t-1) [tau^(t-1) (1-tau)^(m-t) -
    tau^(m-t) (1-tau)^(t-1)] >= 0`` for ``t <= m/2``. The bound is
    ``L(t) = inf{tau in [0, 1/2] : G(tau, t) > delta}`` (``L(0) = 0``; ``1/2`` if no such
    tau). L is non-decreasing in t, so ``{L(T) > tau} = {T >= t0}`` for some ``t0`` with
    ``G(tau, t0) <= delta``: ``P[L(T) > tau] <= delta`` for every P. The bisection
    returns a value ``<= L(t)`` (conservative)."""
    from scipy.special import betainc

    t = np.asarray(t, dtype=np.float64)
    m = np.broadcast_to(np.asarray(m, dtype=np.float64), t.shape)
    tt = np.maximum(t, 1.0)

    def g(tau: _FloatArray) -> _FloatArray:
        # P[X >= t] - P[X >= m - t + 1]
        return cast(_FloatArray, betainc(tt, m - tt + 1.0, tau) - betainc(m - tt + 1.0, tt, tau))

    below, above = np.zeros_like(t), np.full_like(t, 0.5)
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (below + above)
        small = g(mid) <= delta
        below = np.where(small, mid, below)
        above = np.where(small, above, mid)
    out = np.where(g(np.full_like(t, 0.5)) <= delta, 0.5, below)
    return cast(_FloatArray, np.where(t <= 0, 0.0, out))


# --------------------------------------------------------------- batched constructions

def _tighten(lo: _FloatArray, hi: _FloatArray, p_hat: _FloatArray
             ) -> tuple[_FloatArray, _FloatArray]:
    """Exact coordinate bounds of ``box ∩ simplex`` (rows of a batch): the same set.

    ``lo_i' = max(lo_i, 1 - sum_{j != i} hi_j)``, ``hi_i' = min(hi_i, 1 - sum_{j != i} lo_j)``.
    Every box built here contains ``p_hat`` (exact arithmetic), so ``lo' <= p_hat <= hi'``
    is enforced against rounding only (at most a few ulps). The simplex terms are rounded
    sums: they are loosened by a bound on their rounding error (lower bounds down, upper
    bounds up), so that rounding never makes the set smaller than the exact intersection
    (a raised tiny lower bound would under-state the worst case of a mechanism)."""
    n = lo.shape[-1]
    s_lo = lo.sum(axis=-1, keepdims=True)
    s_hi = hi.sum(axis=-1, keepdims=True)
    ulp = float(np.finfo(np.float64).eps)
    slack_hi = 2.0 * (n + 4) * ulp * np.maximum(s_hi, 1.0)
    slack_lo = 2.0 * (n + 4) * ulp * np.maximum(s_lo, 1.0)
    lo2 = np.minimum(np.maximum(lo, 1.0 - (s_hi - hi) - slack_hi), p_hat)
    hi2 = np.maximum(np.minimum(hi, 1.0 - (s_lo - lo) + slack_lo), p_hat)
    return np.clip(lo2, 0.0, 1.0), np.clip(hi2, 0.0, 1.0)


# The batch functions below are the vectorised cores of the sets (one row of counts per
# trial, no validation): the public set builders and the audit's coverage study call them.

def batch_l1(counts: NDArray[Any], delta: float) -> _FloatArray:
    """Radius of ``"l1"`` for each row of ``counts`` (all rows share it for equal m)."""
    from .estimation import l1_radius

    m = counts.sum(axis=-1)
    n = counts.shape[-1]
    return cast(_FloatArray, np.array([l1_radius(delta, m=int(mm), n=n) for mm in np.unique(m)])[
        np.searchsorted(np.unique(m), m)])


def batch_box_cp(counts: NDArray[Any], delta: float) -> tuple[_FloatArray, _FloatArray]:
    """``"box-cp"``: two-sided CP at ``delta/N`` per category (``delta/(2N)`` per tail);
    N = 2: one interval for P(x1) at ``delta`` (``delta/2`` per tail), mirrored."""
    m = counts.sum(axis=-1, keepdims=True)
    n = counts.shape[-1]
    if n == 2:
        a = clopper_pearson_lower(counts[..., :1], m, delta / 2)
        b = clopper_pearson_upper(counts[..., :1], m, delta / 2)
        return (np.concatenate([a, 1.0 - b], axis=-1),
                np.concatenate([b, 1.0 - a], axis=-1))
    tail = delta / (2 * n)
    return _tighten(clopper_pearson_lower(counts, m, tail),
                    clopper_pearson_upper(counts, m, tail), counts / m)


def batch_box_kl(counts: NDArray[Any], delta: float) -> tuple[_FloatArray, _FloatArray]:
    """``"box-kl"``: ``{q : m kl(p_hat_i || q) <= log(2N/delta)}`` per category; N = 2: one
    interval for P(x1) with ``log(2/delta)``, mirrored."""
    m = counts.sum(axis=-1, keepdims=True).astype(np.float64)
    n = counts.shape[-1]
    if n == 2:
        lo1, hi1 = _kl_bounds(counts[..., :1] / m, (math.log(2) - math.log(delta)) / m)
        return (np.concatenate([lo1, 1.0 - hi1], axis=-1),
                np.concatenate([hi1, 1.0 - lo1], axis=-1))
    lo, hi = _kl_bounds(counts / m, (math.log(2 * n) - math.log(delta)) / m)
    return _tighten(lo, hi, counts / m)


def batch_box_lower(counts: NDArray[Any], delta: float) -> tuple[_FloatArray, _FloatArray]:
    """``"box-lower"``: lower bounds only; the upper bounds are implied by the simplex."""
    m = counts.sum(axis=-1, keepdims=True)
    n = counts.shape[-1]
    if n == 2:
        t = np.minimum(counts[..., :1], m - counts[..., :1])
        # capped at p_hat_min (only binds for delta near 1): a superset, still valid, that
        # always contains the estimate
        low = np.minimum(_folded_lower(t, m, delta), t / m)
        return (np.concatenate([low, low], axis=-1),
                np.concatenate([1.0 - low, 1.0 - low], axis=-1))
    lo = clopper_pearson_lower(counts, m, delta / n)
    return _tighten(lo, np.ones_like(lo), counts / m)


def batch_kappa_upper(counts: NDArray[Any], delta_a: float) -> _FloatArray:
    """Upper bound on ``kappa_P`` valid with probability ``>= 1 - delta_a``.

    For any Q and any category i, every subset A either contains i (then
    ``1 - Q(A) <= 1 - Q_i``) or not (then ``Q(A) <= 1 - Q_i``), so
    ``kappa_Q <= min(1/2, 1 - max_i Q_i)``. With one-sided CP lower bounds ``lo_i`` at
    ``delta_a / N`` each (Bonferroni), ``max_i P_i >= max_i lo_i`` with probability
    ``>= 1 - delta_a``, hence ``kappa_P <= min(1/2, 1 - max_i lo_i)``."""
    m = counts.sum(axis=-1, keepdims=True)
    lo = clopper_pearson_lower(counts, m, delta_a / counts.shape[-1])
    return cast(_FloatArray, np.minimum(0.5, 1.0 - lo.max(axis=-1)))


def batch_l1_kappa(counts: NDArray[Any], delta: float, split: float = KAPPA_SPLIT
                    ) -> tuple[_FloatArray, _FloatArray]:
    """Radius of ``"l1-kappa"`` per row and the kappa upper bound used."""
    from .estimation import log_num_subsets, phi, weissman_radius

    m = counts.sum(axis=-1).astype(np.float64)
    n = counts.shape[-1]
    k_up = batch_kappa_upper(counts, split * delta)
    # log((1 - split) delta) as a sum: the product underflows for subnormal delta
    log_term = log_num_subsets(n) - math.log1p(-split) - math.log(delta)
    return weissman_radius(log_term, m, phi(k_up)), k_up


# ----------------------------------------------------------------------- public sets

def _result(c: NDArray[Any], uset: UncertaintySet, method: str, delta: float, description: str,
            details: dict[str, Any]) -> ConfidenceSet:
    m = int(c.sum())
    return ConfidenceSet(set=uset, method=method, delta=delta, m=m, n=int(c.size),
                         description=description, p_hat=readonly(c / m), details=details)


def _box(lo: _FloatArray, hi: _FloatArray) -> UncertaintySet:
    return Box(lo, hi)


def l1_set(counts: ArrayLike | EmpiricalDistribution, delta: float) -> ConfidenceSet:
    """The paper's l1-ball around the empirical distribution (Theorem 2 [Thm weissman], Section
    4.4 [eq. betastar]).

    ``B = {Q in simplex : ||Q - p_hat||_1 <= beta*}`` with
    ``beta* = sqrt(2/m (log(2^N - 2) - log delta))`` (:func:`pmlkit.estimation.l1_radius`).

    Coverage: Weissman et al. (2003, Thm 1) give
    ``P[||P - p_hat||_1 >= beta] <= (2^N - 2) exp(-m phi(kappa_P) beta^2 / 4)`` and
    ``phi(kappa_P) >= 2`` for every P, so ``P[P not in B] <= delta`` whatever P is.

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Theorem 2 and Section 4.4.

    Examples
    --------
    ``beta* = sqrt(2/100 (log(2^2 - 2) - log 0.05))``:

    >>> cs = l1_set([30, 70], 0.05)
    >>> round(cs.set.radius, 6), round(math.sqrt(0.02 * (math.log(2) - math.log(0.05))), 6)
    (0.27162, 0.27162)
    >>> lo, hi = cs.set.coordinate_bounds()
    >>> lo.round(4), hi.round(4)  # p_hat -+ beta*/2
    (array([0.1642, 0.5642]), array([0.4358, 0.8358]))
    """
    from .estimation import l1_radius

    c = _as_counts(counts)
    d = check_delta(delta)
    m, n = int(c.sum()), int(c.size)
    beta = float(l1_radius(d, m=m, n=n))
    return _result(
        c, L1Ball(c / m, beta), "l1", d,
        f"l1-ball of radius beta*={beta:.6g} around the empirical distribution "
        f"(m={m}, N={n}); coverage 1-delta by Weissman et al. (2003) Thm 1 with "
        "phi(kappa)>=2 (paper: Theorem 2 and Section 4.4)",
        {"radius": beta})


def box_cp_set(counts: ArrayLike | EmpiricalDistribution, delta: float) -> ConfidenceSet:
    """Box of simultaneous exact Clopper-Pearson intervals (beyond the paper).

    For N > 2: per category i the two-sided exact interval for ``P_i`` from
    ``X_i ~ Bin(m, P_i)`` at level ``delta / N`` (``lo_i`` = ``delta/(2N)`` quantile of
    ``Beta(k_i, m-k_i+1)``, ``hi_i`` = ``1 - delta/(2N)`` quantile of ``Beta(k_i+1, m-k_i)``).
    For N = 2 one interval for ``P(x1)`` at level delta fixes both coordinates
    (``P(x2) = 1 - P(x1)``): no split.

    Coverage: each one-sided CP bound fails with probability ``<= delta/(2N)`` (Clopper and
    Pearson, 1934); the union bound over the 2N tails (2 for N = 2) gives ``<= delta``.
    The box is stored with its exact coordinate bounds over the simplex; it contains
    ``p_hat``, so it meets the simplex.

    Examples
    --------
    With two categories the box is scipy's exact 95% interval for ``P(x1)``, mirrored:

    >>> from scipy.stats import binomtest
    >>> cs = box_cp_set([30, 70], 0.05)
    >>> cs.set.lower.round(4), cs.set.upper.round(4)
    (array([0.2124, 0.6002]), array([0.3998, 0.7876]))
    >>> ci = binomtest(30, 100).proportion_ci(0.95, "exact")
    >>> round(ci.low, 4), round(ci.high, 4)
    (0.2124, 0.3998)
    """
    c = _as_counts(counts)
    d = check_delta(delta)
    lo, hi = batch_box_cp(c[None, :], d)
    n = c.size
    split = "one interval for P(x1), no split (N=2)" if n == 2 else \
        f"Bonferroni: delta/N={d / n:.3g} per category"
    return _result(
        c, _box(lo[0], hi[0]), "box-cp", d,
        f"box of exact Clopper-Pearson intervals ({split}); coverage 1-delta by the "
        "Clopper-Pearson (1934) exact binomial bound and the union bound (beyond the paper)",
        {"lower": lo[0].tolist(), "upper": hi[0].tolist()})


def box_kl_set(counts: ArrayLike | EmpiricalDistribution, delta: float) -> ConfidenceSet:
    """Box of simultaneous KL (Chernoff) intervals (beyond the paper).

    Per category ``{q : m kl(p_hat_i || q) <= log(2N / delta)}`` with the binary
    ``kl(a || b) = a log(a/b) + (1-a) log((1-a)/(1-b))``, inverted exactly by vectorised
    bisection (rounded outwards). N = 2: one interval for ``P(x1)`` with ``log(2/delta)``.

    Coverage: the Chernoff bound ``P[p_hat_i >= a] <= exp(-m kl(a || P_i))`` for
    ``a >= P_i`` (and its mirror) makes each one-sided bound fail with probability
    ``<= delta/(2N)``; the union bound over the 2N tails (2 for N = 2) gives ``<= delta``.

    Examples
    --------
    Both ends of the interval for ``P(x1)`` sit on the level ``log(2 / 0.05)``:

    >>> from scipy.special import rel_entr
    >>> cs = box_kl_set([30, 70], 0.05)
    >>> lo, hi = float(cs.set.lower[0]), float(cs.set.upper[0])
    >>> round(lo, 4), round(hi, 4)
    (0.1872, 0.432)
    >>> kl = lambda q: float(rel_entr(0.3, q) + rel_entr(0.7, 1 - q))
    >>> round(100 * kl(lo), 6), round(100 * kl(hi), 6), round(math.log(40), 6)
    (3.688879, 3.688879, 3.688879)
    """
    c = _as_counts(counts)
    d = check_delta(delta)
    lo, hi = batch_box_kl(c[None, :], d)
    n = c.size
    level = math.log(2 / d) if n == 2 else math.log(2 * n / d)
    return _result(
        c, _box(lo[0], hi[0]), "box-kl", d,
        f"box of KL-Chernoff intervals m*kl(p_hat_i||q) <= {level:.6g} "
        f"({'one interval for P(x1), N=2' if n == 2 else 'Bonferroni over N categories'}); "
        "coverage 1-delta by the Chernoff bound and the union bound (beyond the paper)",
        {"lower": lo[0].tolist(), "upper": hi[0].tolist(), "kl_level": level})


def box_lower_set(counts: ArrayLike | EmpiricalDistribution, delta: float) -> ConfidenceSet:
    """Lower bounds only: ``{Q in simplex : Q_i >= lo_i}`` (beyond the paper).

    N > 2: ``lo_i`` is the one-sided exact (Clopper-Pearson) lower bound at ``delta / N``
    (Bonferroni); each fails with probability ``<= delta/N``, so all hold with
    probability ``>= 1 - delta``. The upper bounds ``1 - sum_{j != i} lo_j`` are implied.

    N = 2: one exact lower confidence bound L on ``p_min = min(P(x1), P(x2))`` from the
    folded binomial ``T = min(X, m - X)``: ``L(t) = inf{tau <= 1/2 : P_tau[t <= X <= m-t] >
    delta}``; ``P[p_min < L] <= delta`` for every P because ``P_tau[t <= X <= m-t]``
    increases in ``tau`` on ``[0, 1/2]`` (proof in ``_folded_lower``). The set is the box
    ``L <= Q_i <= 1 - L``. This is what the Laplace calibration needs (a lower bound on
    ``p_min``, Proposition 3 [Prop. Laplaceleakage]) and it is slightly tighter than a one-sided
    CP bound
    at the full delta.

    Examples
    --------
    All of delta goes to the lower side, so the bound on ``p_min`` beats the lower end of
    the two-sided box (0.2124):

    >>> cs = box_lower_set([30, 70], 0.05)
    >>> cs.set.lower.round(4), cs.set.upper.round(4)
    (array([0.2249, 0.2249]), array([0.7751, 0.7751]))
    """
    c = _as_counts(counts)
    d = check_delta(delta)
    lo, hi = batch_box_lower(c[None, :], d)
    desc = ("exact lower confidence bound on p_min from the folded binomial min(X, m-X) "
            "(N=2)") if c.size == 2 else (
        "one-sided exact Clopper-Pearson lower bounds at delta/N per category (Bonferroni), "
        "upper bounds implied by the simplex")
    return _result(
        c, _box(lo[0], hi[0]), "box-lower", d,
        f"{desc}; coverage 1-delta by the exact binomial tail and the union bound "
        "(beyond the paper)",
        {"lower": lo[0].tolist(), "upper": hi[0].tolist()})


def l1_kappa_set(counts: ArrayLike | EmpiricalDistribution, delta: float, *,
                 split: float = KAPPA_SPLIT) -> ConfidenceSet:
    """Distribution-dependent Weissman ball (Theorem 2 [Thm weissman] with ``phi(kappa_P)``).

    ``delta_a = split * delta`` buys ``kappa_up = min(1/2, 1 - max_i lo_i)`` with one-sided
    Clopper-Pearson lower bounds ``lo_i`` at ``delta_a / N`` (so ``kappa_P <= kappa_up``
    with probability ``>= 1 - delta_a``: any subset A either contains the largest category
    or not); ``delta_b = delta - delta_a`` sets the radius
    ``beta = 2 sqrt((log(2^N - 2) - log delta_b) / (m phi(kappa_up)))``.

    Coverage: ``phi`` is decreasing on ``[0, 1/2]``, so on the event
    ``kappa_P <= kappa_up`` Theorem 2 [Thm weissman] gives
    ``P[||P - p_hat||_1 >= beta] <= delta_b``;
    the union bound gives total failure ``<= delta_a + delta_b = delta``. Equal to the
    paper's ball at ``delta_b`` when the data are not skewed (``kappa_up = 1/2``), much
    smaller when one category clearly holds more than half of the mass.

    Examples
    --------
    95 of 100 samples in one category: ``kappa_P <= 0.123`` buys a smaller ball than the
    paper's (radius 0.2716 at the same delta):

    >>> cs = l1_kappa_set([95, 5], 0.05)
    >>> round(cs.details["kappa_upper"], 4), round(cs.set.radius, 4)
    (0.1228, 0.2593)
    >>> round(l1_set([95, 5], 0.05).set.radius, 4)
    0.2716
    """
    c = _as_counts(counts)
    d = check_delta(delta)
    s = check_real(split, "split", low=0.0, high=1.0, low_open=True, high_open=True)
    radius, k_up = batch_l1_kappa(c[None, :], d, s)
    m = int(c.sum())
    beta, ku = float(radius[0]), float(k_up[0])
    return _result(
        c, L1Ball(c / m, beta), "l1-kappa", d,
        f"distribution-dependent l1-ball of radius {beta:.6g}: kappa_P <= {ku:.6g} with "
        f"probability 1-{s:g}*delta (one-sided Clopper-Pearson, Bonferroni), then Weissman "
        f"et al. (2003) Thm 1 with phi(kappa_up) at {1 - s:g}*delta; coverage 1-delta by the "
        "union bound (paper: Theorem 2; beyond the paper)",
        {"radius": beta, "kappa_upper": ku, "split": s})


def l1_box_set(counts: ArrayLike | EmpiricalDistribution, delta: float, *,
               split: float = 0.5) -> ConfidenceSet:
    """The paper's ball intersected with the Clopper-Pearson box (beyond the paper).

    ``B_beta(p_hat) ∩ {lo <= Q <= hi}`` with ``beta = beta*((1 - split) delta)``
    (:func:`l1_set`) and the box of :func:`box_cp_set` at ``split * delta``.

    Coverage: the ball misses with probability ``<= (1 - split) delta`` (Theorem 2 [Thm weissman]),
    the box with ``<= split * delta`` (Clopper-Pearson, Bonferroni); the union bound gives
    ``<= delta`` for the intersection. The ball bounds every subset sum
    (``||P - p_hat||_1 = 2 max_A (P(A) - p_hat(A))``), the box every single coordinate,
    so the intersection is close to the better of the two for every mechanism: boxes win
    for mechanisms driven by single small probabilities (k-ary randomized response),
    the ball for mechanisms whose columns cover many inputs (fixed-prior optima).

    The set kind ``"l1_box"`` (:class:`L1BoxSet`) must be registered in
    :func:`pmlkit.sets.set_from_dict` for mechanism files that carry it to reload; until
    then ``"l1-box"`` is usable from Python but not listed in :data:`METHODS`.

    Examples
    --------
    Each coordinate range is inside both the ball's (at ``delta/2``) and the box's:

    >>> cs = l1_box_set([30, 70], 0.05)
    >>> type(cs.set).__name__, cs.set.kind
    ('L1BoxSet', 'l1_box')
    >>> lo, hi = cs.set.coordinate_bounds()
    >>> lo.round(4), hi.round(4)
    (array([0.2015, 0.5862]), array([0.4138, 0.7985]))
    """
    from .estimation import l1_radius

    c = _as_counts(counts)
    d = check_delta(delta)
    s = check_real(split, "split", low=0.0, high=1.0, low_open=True, high_open=True)
    m, n = int(c.sum()), int(c.size)
    beta = float(l1_radius((1.0 - s) * d, m=m, n=n))
    lo, hi = batch_box_cp(c[None, :], s * d)
    uset = L1BoxSet(c / m, beta, lo[0], hi[0])
    return _result(
        c, uset, "l1-box", d,
        f"intersection of the l1-ball of radius {beta:.6g} (Weissman et al. 2003 Thm 1 with "
        f"phi>=2 at {1 - s:g}*delta; paper: Theorem 2) and the exact Clopper-Pearson box "
        f"at {s:g}*delta (Bonferroni); coverage 1-delta by the union bound (beyond the paper)",
        {"radius": beta, "lower": lo[0].tolist(), "upper": hi[0].tolist(), "split": s})


def _default_score(uset: UncertaintySet) -> float:
    lo, hi = uset.coordinate_bounds()
    return float(np.sum(np.asarray(hi) - np.asarray(lo)))


def auto_set(counts: ArrayLike | EmpiricalDistribution, delta: float, *,
             candidates: Sequence[str] | None = None,
             score: Callable[[UncertaintySet], float] | None = None) -> ConfidenceSet:
    """The best of k candidate sets, each computed at ``delta / k``.

    Choosing a set after seeing the data is valid only with delta split over the
    candidates: ``P[P not in chosen] <= P[P outside some candidate] <= k * delta/k``
    (union bound). The choice minimises ``score(set)``; by default the total width of the
    exact coordinate bounds, ``sum_i (hi_i - lo_i)`` from ``set.coordinate_bounds()``.
    A caller may pass, e.g., the certified eps of a fixed mechanism
    (``lambda s: leakage_capacity(W, s)``).

    Examples
    --------
    >>> cs = auto_set([30, 70], 0.05, candidates=["l1", "box-cp"])
    >>> cs.details["chosen"], cs.details["delta_each"]
    ('box-cp', 0.025)
    """
    c = _as_counts(counts)
    d = check_delta(delta)
    names = AUTO_CANDIDATES if candidates is None else tuple(candidates)
    bad = [x for x in names if x not in _BUILDERS or x == "auto"]
    if not names or bad:
        raise ValidationError(
            f"candidates must be a non-empty list of {', '.join(AUTO_CANDIDATES)}, "
            f"got {fmt(list(names))}")
    if len(set(names)) != len(names):
        raise ValidationError(f"candidates must be distinct, got {fmt(list(names))}")
    scorer = _default_score if score is None else score
    k = len(names)
    built = [_BUILDERS[x](c, d / k) for x in names]
    scores = []
    for name, cs in zip(names, built, strict=True):
        v = scorer(cs.set)
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise ValidationError(
                f"score must return a real number, got {fmt(v)} for candidate {name!r}"
            ) from None
        if math.isnan(v):
            raise ValidationError(f"score returned NaN for candidate {name!r}")
        scores.append(v)
    best = int(np.argmin(scores))
    chosen = built[best]
    criterion = "caller's score" if score is not None else \
        "smallest total coordinate width sum_i (hi_i - lo_i)"
    return _result(
        c, chosen.set, "auto", d,
        f"auto: {k} candidates ({', '.join(names)}) each at delta/{k}={d / k:.3g}, chose "
        f"{names[best]!r} by {criterion}; valid by the union bound over the {k} candidates. "
        f"Chosen: {chosen.description}",
        {"chosen": names[best], "candidates": list(names),
         "scores": dict(zip(names, scores, strict=True)), "delta_each": d / k,
         "chosen_details": chosen.details})


_BUILDERS: dict[str, Callable[..., ConfidenceSet]] = {
    "l1": l1_set,
    "box-cp": box_cp_set,
    "box-kl": box_kl_set,
    "box-lower": box_lower_set,
    "l1-kappa": l1_kappa_set,
    "l1-box": l1_box_set,
    "auto": auto_set,
}


@renamed_parameter(version="0.2", method="confidence")
def confidence_set(counts: ArrayLike | EmpiricalDistribution, delta: float, *,
                   confidence: str = "l1", **options: Any) -> ConfidenceSet:
    """A set containing the true distribution with probability ``>= 1 - delta``.

    Parameters
    ----------
    counts
        Category counts (1-D, integers >= 0, at least 2 categories, at least 1 sample),
        or an :class:`pmlkit.estimation.EmpiricalDistribution`.
    delta
        Failure probability in ``(0, 1]`` over the estimation sample.
    confidence
        The method, one of :data:`METHODS`: ``"l1"`` (the paper's ball, Theorem 2 [Thm weissman],
        Section 4.4 [eq. betastar]), ``"box-cp"``, ``"box-kl"``, ``"box-lower"``, ``"l1-kappa"``,
        ``"l1-box"``, ``"auto"``; see the module docstring and each ``*_set`` function for
        the coverage theorem. Called ``method`` before release 0.2 (still accepted for
        one release, with a :class:`DeprecationWarning`).
    **options
        Passed to the method: ``split`` for ``"l1-kappa"`` and ``"l1-box"``;
        ``candidates`` and ``score`` for ``"auto"``.

    Returns
    -------
    ConfidenceSet

    Examples
    --------
    The same 100 samples under the paper's ball and under the exact binomial box: the
    box pins ``P(x1)`` far more tightly (width 0.19 against 0.27):

    >>> ball = confidence_set([30, 70], 0.05)
    >>> box = confidence_set([30, 70], 0.05, confidence="box-cp")
    >>> for cs in (ball, box):
    ...     lo, hi = cs.set.coordinate_bounds()
    ...     print(cs.method, round(float(hi[0] - lo[0]), 4))
    l1 0.2716
    box-cp 0.1874
    """
    method = confidence
    if not isinstance(method, str) or method not in _BUILDERS:
        raise ValidationError(
            f"confidence must be one of {', '.join(METHODS)}"
            + ("" if "l1-box" in METHODS else " (or l1-box)") + f", got {fmt(method)}")
    allowed = {"l1-kappa": {"split"}, "l1-box": {"split"},
               "auto": {"candidates", "score"}}.get(method, set())
    extra = sorted(set(options) - allowed)
    if extra:
        raise ValidationError(
            f"confidence {method!r} takes no option {', '.join(extra)}"
            + (f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""))
    return _BUILDERS[method](counts, delta, **options)
