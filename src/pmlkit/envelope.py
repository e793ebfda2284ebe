"""Tail guarantees that survive post-processing: the PML envelope of a mechanism.

A tail statement ``P_{Y ~ P_Y}[pml(Y) > t] <= delta`` about the released ``Y`` need not hold
for a function ``Z`` of ``Y``: merging outputs can move probability mass into the set where
the leakage exceeds ``t`` (binary uniform ``X``, ``W = [[.003, .18, .809, .008], [.127,
.014, .842, .017]]``, ``t = 0.0758``: ``P[pml(Y) > t] = 0.1745`` and, after merging outputs
0 and 2, ``P[pml(Z) > t] = 1``). The *envelope* at ``delta`` is the tail level that holds
for every post-processing at once::

    envelope(delta) = inf { t : P[pml(Z) > t] <= delta  for every Z = f(Y, noise) }.

Write ``F(t) = sup_Z P[pml(Z) > t]``; then ``envelope(delta) = inf {t : F(t) <= delta}``.

**Deterministic merges.** A deterministic ``Z = f(Y)`` is a partition of the outputs; for
one partition with blocks of leakage ``l_B`` and mass ``m_B`` sorted by decreasing ``l``, the
smallest ``t`` with ``P[pml > t] <= delta`` is ``l`` of the first block at which the
cumulative mass exceeds ``delta``. The envelope over deterministic merges is the largest of
these over all partitions (Bell(M) of them: exhaustive up to :data:`MAX_MERGE_OUTPUTS`).

**Randomised post-processing (the exact object).** Deterministic merges do not suffice: an
output whose leakage is below ``t`` may be split between two groups each of which can
absorb only part of it and stay above ``t``. Every post-processing ``Z`` gives columns
``v_z = W k_z`` with ``k_z >= 0``, ``sum_z k_z = 1``, and ``pml(z) > t`` iff
``max_x v_z(x) > e^t P_Y . k_z``. The outcomes exceeding ``t`` through the same row ``x``
can be merged without changing that (the condition ``v(x) > e^t q . k`` is preserved by
sums), so ``N`` groups suffice and ``F(t)`` is the value of the linear program

    max  sum_x q . k_x   over  k_x >= 0,  sum_x k_x <= 1 (per output),
                              sum_y k_x[y] (W[x, y] - e^t q_y) >= 0  (per row x),

up to its boundary (the LP counts groups at leakage exactly ``t``, which changes ``F`` only
at its jumps and not the infimum). The envelope never exceeds ``eps_min(W, p)``: a pure
guarantee survives post-processing (a merged column's largest ratio is at most the largest
of its parts'). When every output leaks exactly ``eps_min`` (binary randomized response at
the uniform prior; the extremal mechanisms of the high-privacy regime, whose columns are
all tight) the envelope is ``eps_min`` for every ``delta < 1``. ``F`` is non-increasing in
``t`` (the feasible set shrinks), so the envelope is found by bisection on ``t``, one LP
(HiGHS) per step.

**A bound valid everywhere.** For any post-processing ``Z``,
``E_Z[exp pml(Z)] = sum_z max_x P(z | x) = exp ML(X -> Z) <= exp ML(X -> Y)`` (maximal
leakage cannot grow under post-processing), so by Markov's inequality
``P[pml(Z) > t] <= exp(ML - t)`` (:func:`maximal_leakage_delta`): ``ML + log(1/delta)``
bounds the envelope. It does not depend on the prior.

**The fractional-knapsack bound** (tighter, one prior or a set, any alphabet size). Write
``L(y) = exp pml(y) = max_x W[x, y] / P_Y(y)``. ``P(z|x) / P_Z(z)`` is the
``P_Y``-weighted average of ``W[x, y] / P_Y(y)`` over ``y`` (weights ``P_Y(y) K[y, z]``),
so ``exp pml(z)`` is at most the same average of ``L(y)``. With ``a(y) = P(pml(Z) > t |
Y = y)``, every such ``z`` has average above ``e^t``, hence ``sum_y a(y) P_Y(y) (L(y) -
e^t) >= 0`` and ``P[pml(Z) > t] = sum_y a(y) P_Y(y)``: a fractional knapsack
(:func:`knapsack_mass`, :func:`postprocessing_delta`). Over a set, ``L(y)`` is replaced by
its worst case ``Lmax(y)`` and ``P_Y(y)`` by its largest value ``hi(y)`` over the set
(:func:`postprocessing_delta_over_set`). Its inverse has a closed form
(:func:`knapsack_level`): sorting the outputs by decreasing ``L``, the knapsack value is
at most ``delta`` exactly when ``e^t`` is at least the ``P_Y``-average of ``L`` over the
top ``delta`` of the mass, so the envelope is at most

    log( (1/delta) int_0^delta L*(s) ds ),   L* the decreasing rearrangement of L,

the logarithm of the conditional mean of ``exp pml(Y)`` over its worst ``delta`` of mass
(never above ``ML + log(1/delta)``, since that mean is at most ``E[exp pml] / delta``).

**Per-row knapsacks.** The outcomes leaking more than ``t`` through row ``x`` (``P(z|x) >
e^t P_Z(z)``) form a group; with ``a_x(y)`` the probability that ``Y = y`` is mapped into
it, ``sum_y a_x(y) P_Y(y) (W[x, y] / P_Y(y) - e^t) >= 0``, so its mass is at most the
knapsack of the items ``(P_Y(y), W[x, y] / P_Y(y))``, and ``P[pml(Z) > t]`` at most the sum
over rows (the exact LP above with its shared capacity ``sum_x k_x <= 1`` dropped). It is
tighter than the pooled knapsack when the rows' outputs differ (a binary channel at a
skewed prior: the pooled knapsack lets one row's surplus pay for the other row's
outputs), looser when many rows share the same fillers; the level is found by bisection.
:func:`envelope_bound` returns the smallest of the three bounds, for a prior or a set, and
says which ("fractional knapsack" for either knapsack); it needs one sort per row, so it
serves alphabets far beyond the LP (the Gaussian's grid release,
:meth:`pmlkit.additive.GaussianMechanism.envelope`).

Beyond the papers: the LP characterisation of the exact envelope over randomised
post-processing and the exhaustive deterministic value are derived here (the bodies of
Saeidian, Pinzon and Palamidessi, "Information Leakage Envelopes", arXiv 2605.21185, were
not available to this implementation; only its abstract).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import (
    as_distribution,
    as_mechanism,
    check_delta,
    check_eps,
    check_prior_matches,
    fmt,
    safe_upper,
    up_text,
)
from .errors import PMLError, ValidationError
from .leakage import maximal_leakage, pml
from .sets import UncertaintySet

__all__ = [
    "MAX_MERGE_OUTPUTS",
    "EnvelopeBound",
    "LeakageEnvelope",
    "envelope_bound",
    "envelope_bounds",
    "gaussian_envelope_bound",
    "knapsack_level",
    "knapsack_mass",
    "leakage_envelope",
    "maximal_leakage_delta",
    "merge_tail_probability",
    "postprocessing_delta",
    "postprocessing_delta_over_set",
    "tail_probability",
    "worst_tail_probability",
]

#: Largest output alphabet whose set partitions are enumerated (Bell(10) = 115,975).
MAX_MERGE_OUTPUTS = 10

# bisection stops when the bracket is this narrow (nats); the upper end is returned
_T_TOL = 1e-11
# an LP value above delta - _LP_SLACK counts as a violation (rounds against the guarantee)
_LP_SLACK = 1e-10


def _inputs(mechanism: ArrayLike, prior: ArrayLike
            ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    return w, p


def tail_probability(mechanism: ArrayLike, prior: ArrayLike, t: float) -> float:
    """``P_{Y ~ P_Y}[pml(Y) > t]``: the probability that the released output leaks more than
    ``t`` nats (no post-processing).

    Examples
    --------
    The counterexample of the module docstring, before merging:

    >>> W = [[.003, .18, .809, .008], [.127, .014, .842, .017]]
    >>> round(tail_probability(W, [0.5, 0.5], 0.0758), 4)
    0.1745
    """
    w, p = _inputs(mechanism, prior)
    t = _check_t(t)
    ell = pml(w, p)
    q = p @ w
    return float(min(1.0, q[np.nan_to_num(ell, nan=-np.inf) > t].sum()))


def _check_t(t: float) -> float:
    try:
        v = float(t)
    except (TypeError, ValueError):
        raise ValidationError(f"t must be a real number, got {fmt(t)}") from None
    if not math.isfinite(v):
        raise ValidationError(f"t must be finite, got {fmt(t)}")
    return v


def _partitions(m: int) -> NDArray[np.int64]:
    """Every set partition of ``range(m)`` as a restricted growth string (one row each)."""
    rgs = np.zeros((1, 1), dtype=np.int64)
    top = np.zeros(1, dtype=np.int64)  # largest block index used so far
    for _ in range(1, m):
        reps = top + 2  # a new entry may join blocks 0..top or open block top + 1
        idx = np.repeat(np.arange(rgs.shape[0]), reps)
        starts = np.cumsum(reps) - reps
        new = np.arange(idx.size) - np.repeat(starts, reps)
        rgs = np.concatenate([rgs[idx], new[:, None]], axis=1)
        top = np.maximum(top[idx], new)
    return rgs


def _merge_blocks(w: NDArray[np.float64], p: NDArray[np.float64], rgs: NDArray[np.int64]
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Leakage and mass of every block of every partition (``(C, M)`` each; empty blocks
    get leakage ``-inf`` and mass 0)."""
    m = w.shape[1]
    onehot = (rgs[:, :, None] == np.arange(m)[None, None, :]).astype(np.float64)
    blocks = np.einsum("xy,cyb->cxb", w, onehot)  # (C, N, M)
    mass = np.einsum("x,cxb->cb", p, blocks)
    top = blocks.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ell = np.where(mass > 0, np.log(top) - np.log(mass), -np.inf)
    return ell, mass


def _quantile_per_row(ell: NDArray[np.float64], mass: NDArray[np.float64], delta: float
                      ) -> NDArray[np.float64]:
    """Per row, the smallest ``t`` with ``sum_{ell > t} mass <= delta``: sorting by
    decreasing leakage, the leakage of the first block at which the cumulative mass
    exceeds ``delta``."""
    order = np.argsort(-ell, axis=1, kind="stable")
    ls = np.take_along_axis(ell, order, axis=1)
    cm = np.cumsum(np.take_along_axis(mass, order, axis=1), axis=1)
    first = np.argmax(cm > delta, axis=1)
    return np.asarray(np.maximum(ls[np.arange(ls.shape[0]), first], 0.0))


def merge_tail_probability(mechanism: ArrayLike, prior: ArrayLike, t: float) -> float:
    """``max_f P[pml(f(Y)) > t]`` over every deterministic merge ``f`` of the outputs
    (exhaustive over the set partitions; at most :data:`MAX_MERGE_OUTPUTS` outputs).

    Examples
    --------
    Merging outputs 0 and 2 of the counterexample puts every output above ``t``:

    >>> W = [[.003, .18, .809, .008], [.127, .014, .842, .017]]
    >>> round(merge_tail_probability(W, [0.5, 0.5], 0.0758), 4)
    1.0
    """
    w, p = _inputs(mechanism, prior)
    t = _check_t(t)
    _check_merge_size(w.shape[1])
    best = 0.0
    for rgs in _partition_chunks(w.shape[1]):
        ell, mass = _merge_blocks(w, p, rgs)
        best = max(best, float(np.where(ell > t, mass, 0.0).sum(axis=1).max()))
    return min(best, 1.0)


def _check_merge_size(m: int) -> None:
    if m > MAX_MERGE_OUTPUTS:
        raise ValidationError(
            f"mechanism has {m} outputs; exhaustive merges are enumerated for at most "
            f"{MAX_MERGE_OUTPUTS} outputs (use worst_tail_probability / leakage_envelope's "
            "exact LP value, which covers every post-processing)")


def _partition_chunks(m: int, size: int = 8192) -> list[NDArray[np.int64]]:
    rgs = _partitions(m)
    return [rgs[i:i + size] for i in range(0, rgs.shape[0], size)]


def _lp_tail(w: NDArray[np.float64], p: NDArray[np.float64], t: float) -> float:
    """``sup_Z P[pml(Z) >= t]`` over every (randomised) post-processing: the LP of the
    module docstring."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    q = p @ w
    used = q > 0
    w = w[:, used]
    q = q[used]
    n, m = w.shape
    nv = n * m  # k[x, y] at x * m + y
    c = -np.tile(q, n)
    # capacity: sum_x k[x, y] <= 1
    rows_c = np.tile(np.arange(m), n)
    cols = np.arange(nv)
    # per row x: -sum_y k[x, y] (W[x, y] - e^t q_y) <= 0
    a2 = -(w - math.exp(t) * q[None, :])
    # scale each row's constraint to unit size: HiGHS' feasibility tolerance is absolute
    scale = np.abs(a2).max(axis=1, keepdims=True)
    a = (a2 / np.where(scale > 0, scale, 1.0)).ravel()
    rows_x = m + np.repeat(np.arange(n), m)
    A = coo_matrix((np.concatenate([np.ones(nv), a]),
                    (np.concatenate([rows_c, rows_x]), np.concatenate([cols, cols]))),
                   shape=(m + n, nv)).tocsr()
    b = np.concatenate([np.ones(m), np.zeros(n)])
    res = linprog(c, A_ub=A, b_ub=b, bounds=(0.0, 1.0), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10,
                           "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:  # pragma: no cover - k = 0 is feasible and the LP is bounded
        raise PMLError(f"envelope LP failed (HiGHS status {res.status}): {res.message}")
    return float(min(1.0, max(0.0, -res.fun)))


def worst_tail_probability(mechanism: ArrayLike, prior: ArrayLike, t: float) -> float:
    """``sup_Z P[pml(Z) >= t]`` over every post-processing ``Z`` of the output, randomised
    ones included (the LP of the module docstring, HiGHS). It is at least
    :func:`merge_tail_probability` and at most ``exp(ML - t)``.

    Examples
    --------
    >>> W = [[.003, .18, .809, .008], [.127, .014, .842, .017]]
    >>> round(worst_tail_probability(W, [0.5, 0.5], 0.0758), 4)
    1.0
    """
    w, p = _inputs(mechanism, prior)
    return _lp_tail(w, p, _check_t(t))


@dataclass(frozen=True)
class LeakageEnvelope:
    """The envelope of a mechanism at a prior and ``delta`` (see the module docstring).

    Attributes
    ----------
    delta
        The tail probability.
    eps
        The envelope over every post-processing, randomised ones included (bisection over
        the LP, to ``~1e-10`` nats, rounded up): for every ``Z``,
        ``P[pml(Z) > eps] <= delta``.
    merges
        The envelope over deterministic merges of the outputs, exact (exhaustive over the
        set partitions); ``None`` above :data:`MAX_MERGE_OUTPUTS` outputs.
    ml_bound
        ``ML(X -> Y) + log(1/delta)``: valid for every post-processing, never below ``eps``.
    no_post_processing
        The smallest ``t`` with ``P[pml(Y) > t] <= delta`` for ``Y`` itself: the tail
        statement that does NOT survive post-processing.

    Examples
    --------
    >>> env = leakage_envelope([[0.8, 0.2], [0.3, 0.7]], [0.5, 0.5], 0.5)
    >>> round(env.eps, 4), round(env.merges, 4), env.survives_post_processing
    (0.3747, 0.3747, True)
    """

    delta: float
    eps: float
    merges: float | None
    ml_bound: float
    no_post_processing: float

    @property
    def survives_post_processing(self) -> bool:
        """Whether the plain tail level of ``Y`` already holds for every post-processing
        (``no_post_processing >= eps``)."""
        return self.no_post_processing >= self.eps - 1e-9

    def __str__(self) -> str:
        merges = "n/a" if self.merges is None else f"{self.merges:.6g}"
        return (f"PML envelope at delta = {self.delta:g}: {up_text(self.eps)} nats for every "
                f"post-processing (deterministic merges: {merges}; bound ML + log(1/delta) "
                f"= {up_text(self.ml_bound)}); the output itself: "
                f"{up_text(self.no_post_processing)}"
                + ("" if self.survives_post_processing else
                   " (this tail statement does not survive post-processing)"))

    def to_dict(self) -> dict[str, float | bool | None]:
        """JSON-ready fields."""
        return {"delta": self.delta, "eps": self.eps, "merges": self.merges,
                "ml_bound": self.ml_bound, "no_post_processing": self.no_post_processing,
                "survives_post_processing": self.survives_post_processing}


def leakage_envelope(mechanism: ArrayLike, prior: ArrayLike, delta: float) -> LeakageEnvelope:
    """The PML envelope at ``delta``: the smallest ``t`` such that every post-processing
    ``Z`` of the output has ``P[pml(Z) > t] <= delta`` (module docstring).

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    prior
        Length-``N`` probability vector.
    delta
        In ``(0, 1]``; at ``delta = 1`` every value is 0 (leakage is never negative).

    Returns
    -------
    LeakageEnvelope
        ``eps`` (every post-processing), ``merges`` (deterministic merges, exact for at
        most :data:`MAX_MERGE_OUTPUTS` outputs), ``ml_bound`` and the plain tail level.

    Examples
    --------
    The counterexample of the module docstring at ``delta = 0.2``: the output itself leaks
    more than 0.0198 nats with probability at most 0.2, a deterministic merge of outputs
    raises that level to 0.0879, and a randomised post-processing (splitting a little of the
    large output 2 between two groups) to 0.5581:

    >>> W = [[.003, .18, .809, .008], [.127, .014, .842, .017]]
    >>> env = leakage_envelope(W, [0.5, 0.5], 0.2)
    >>> round(env.no_post_processing, 4), round(env.merges, 4), round(env.eps, 4)
    (0.0198, 0.0879, 0.5581)
    >>> env.survives_post_processing, env.eps <= env.ml_bound
    (False, True)
    """
    w, p = _inputs(mechanism, prior)
    delta = check_delta(delta)
    ml = maximal_leakage(w)
    bound = ml + math.log(1.0 / delta)
    q = p @ w
    ell = np.nan_to_num(pml(w, p), nan=-np.inf)
    if delta >= 1.0:
        return LeakageEnvelope(delta, 0.0, 0.0 if w.shape[1] <= MAX_MERGE_OUTPUTS else None,
                               bound, 0.0)
    plain = float(_quantile_per_row(ell[None, :], q[None, :], delta)[0])
    merges: float | None = None
    if w.shape[1] <= MAX_MERGE_OUTPUTS:
        merges = 0.0
        for rgs in _partition_chunks(w.shape[1]):
            e, mass = _merge_blocks(w, p, rgs)
            merges = max(merges, float(_quantile_per_row(e, mass, delta).max()))
    lo = max(merges if merges is not None else 0.0, plain) - 2 * _T_TOL
    # a pure guarantee survives post-processing: no Z leaks more than eps_min anywhere
    top = float(ell.max())
    hi = min(bound, top)
    lo = max(min(lo, hi), 0.0)
    while hi - lo > _T_TOL:
        mid = 0.5 * (lo + hi)
        if _lp_tail(w, p, mid) > delta - _LP_SLACK:
            lo = mid
        else:
            hi = mid
    eps = min(max(hi, merges if merges is not None else 0.0, plain), bound, top)
    return LeakageEnvelope(delta, float(eps), merges, float(bound), plain)


def gaussian_envelope_bound(sigma: float, delta: float) -> float:
    """``ML + log(1/delta)`` for the Gaussian mechanism on binary data, ``Y = X + G`` with
    ``X in {-1, +1}`` and ``G ~ N(0, sigma^2)``: a tail level that holds for every
    post-processing of the (continuous) output, whatever the prior.

    ``exp ML = int max_x f(y | x) dy = 2 Phi(1/sigma)`` (for ``y > 0`` the larger density is
    the one centred at ``+1``, whose mass on ``y > 0`` is ``Phi(1/sigma)``; symmetric for
    ``y < 0``). A release on a grid is a matrix: :func:`leakage_envelope` gives its exact
    envelope.

    Examples
    --------
    At ``sigma = 1``, ``2 Phi(1) = 1.6827`` and with ``delta = 1e-6``:

    >>> round(gaussian_envelope_bound(1.0, 1e-6), 4)
    14.3358
    """
    from statistics import NormalDist

    try:
        s = float(sigma)
    except (TypeError, ValueError):
        raise ValidationError(f"sigma must be a positive number, got {fmt(sigma)}") from None
    if not (math.isfinite(s) and s > 0):
        raise ValidationError(f"sigma must be positive and finite, got {fmt(sigma)}")
    delta = check_delta(delta)
    return math.log(2.0 * NormalDist().cdf(1.0 / s)) + math.log(1.0 / delta)


# ------------------------------------------------------------------ bounds for any alphabet

#: Unit roundoff of float64.
_U = 2.0**-53


def maximal_leakage_delta(mechanism: ArrayLike, eps: float) -> float:
    """``min(1, exp(ML(X -> Y) - eps))``: a bound on ``P[pml(g(Y)) > eps]`` for every
    post-processing ``g`` and every prior (Markov's inequality, module docstring).

    Also importable from :mod:`pmlkit.numeric.tails` (its first home).

    Examples
    --------
    >>> round(maximal_leakage_delta([[0.75, 0.25], [0.25, 0.75]], 1.0), 6)  # 1.5 / e
    0.551819
    """
    e = check_eps(eps)
    ml = float(maximal_leakage(mechanism))
    return min(1.0, math.exp(ml - e)) if ml - e < 700 else 1.0


def postprocessing_delta(mechanism: ArrayLike, prior: ArrayLike, eps: float) -> float:
    """The fractional-knapsack bound on ``sup_g P[pml(g(Y)) > eps]`` for one prior (module
    docstring: the smaller of the pooled and the per-row knapsacks). Never below
    :func:`tail_probability`, never above :func:`maximal_leakage_delta`; at least the exact
    :func:`worst_tail_probability`.

    Also importable from :mod:`pmlkit.numeric.tails` (its first home).

    Examples
    --------
    The counterexample of the module docstring: the tail of ``Y`` is 0.1745, merging
    outputs 0 and 2 makes it 1, and the bound (which covers every merge) says 1:

    >>> w = [[0.003, 0.18, 0.809, 0.008], [0.127, 0.014, 0.842, 0.017]]
    >>> postprocessing_delta(w, [0.5, 0.5], 0.0758)
    1.0
    """
    w, p = _inputs(mechanism, prior)
    e = check_eps(eps)
    caps, ratio = _prior_items(w, p)
    rcaps, rows = _prior_rows(w, p)
    return min(_Items(caps, ratio).mass(e), _RowItems(rcaps, rows).mass(e))


def _prior_items(w: NDArray[np.float64], p: NDArray[np.float64]
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(P_Y(y), L(y))`` of the outputs that can occur."""
    caps, rows = _prior_rows(w, p)
    return caps, rows.max(axis=0)


def _prior_rows(w: NDArray[np.float64], p: NDArray[np.float64]
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(P_Y(y), W[x, y] / P_Y(y))`` of the outputs that can occur (``N x M'``).

    ``W[x, y] / P_Y(y) <= 1 / P(x)`` (``P_Y(y) >= P(x) W[x, y]``): applied exactly, it keeps
    columns of subnormal probabilities from reading a ratio their rounding made up."""
    py = p @ w
    live = py > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rows = np.minimum(w[:, live] / py[live], 1.0 / p[:, None])
    return py[live], np.nan_to_num(rows, nan=0.0)


def _set_parts(w: NDArray[np.float64], uset: UncertaintySet
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(hi(y), Lmax(y), W[x, y] / min_Q Q . W[:, y])`` over a set, for the outputs some
    distribution of it can produce (``hi(y) = max_Q Q . W[:, y] > 0``); ``Lmax`` is the
    largest of the row ratios. Every ratio is capped by the exact ``1 / min_Q Q(x)``
    (``Q . W[:, y] >= Q(x) W[x, y]``), which also bounds columns whose smallest probability
    over the set underflows to 0 (``inf`` only when ``min_Q Q(x) = 0`` too)."""
    hi = uset.max_linear(w)
    live = (hi > 0) & (w.max(axis=0) > 0)
    qmin = uset.min_linear(w)[live]
    lows, _ = uset.coordinate_bounds()
    wl = w[:, live]
    with np.errstate(divide="ignore", invalid="ignore"):
        rows = np.where(wl > 0, wl / qmin, 0.0)
        rows = np.minimum(rows, 1.0 / np.asarray(lows, dtype=np.float64)[:, None])
    rows = np.nan_to_num(rows, nan=0.0)
    return (np.asarray(hi[live], dtype=np.float64), rows.max(axis=0),
            np.asarray(rows, dtype=np.float64))


class _Items:
    """Items ``(cap, ratio)`` with ``cap > 0`` sorted by decreasing ratio, with prefix sums:
    the one implementation of the fractional knapsack (:func:`knapsack_mass`) and of its
    inverse (:func:`knapsack_level`), so that many thresholds cost one sort.

    With the items sorted, the running average ``avg(k) = sum_{j <= k} q_j r_j / sum_{j <= k}
    q_j`` does not increase, and a prefix keeps a non-negative surplus ``sum q_j (r_j -
    e^t)`` exactly while ``avg(k) >= e^t``: the knapsack takes the items before the first
    ``k`` with ``avg(k) < e^t`` whole and that one in part (one ``searchsorted`` per
    threshold, vectorised)."""

    def __init__(self, caps: NDArray[np.float64], ratio: NDArray[np.float64]) -> None:
        keep = caps > 0
        order = np.argsort(-ratio[keep], kind="stable")
        self.q = caps[keep][order]
        self.r = ratio[keep][order]
        self.cum_q = np.cumsum(self.q)
        with np.errstate(invalid="ignore"):
            self.cum_r = np.cumsum(self.q * self.r)
        # relative error of a running sum of k terms: at most about k ulps; counted 4x
        self.err = 4.0 * (self.q.size + 2) * _U
        with np.errstate(invalid="ignore", divide="ignore"):
            avg = self.cum_r / self.cum_q
        # non-increasing in exact arithmetic; enforce it against rounding for searchsorted
        self.neg_avg = -np.minimum.accumulate(avg) if avg.size else avg
        # first item whose ratio is not finite (size: none), for level()
        bad = np.flatnonzero(~np.isfinite(self.r))
        self.first_bad = int(bad[0]) if bad.size else int(self.r.size)

    def mass_many(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        """``max sum s_y`` over ``0 <= s_y <= q_y``, ``sum s_y (r_y - e^t) >= 0`` for each
        ``t``; an upper bound (rounding counted against the guarantee), capped at 1."""
        t = np.asarray(t, dtype=np.float64)
        if self.q.size == 0:
            return np.zeros(t.shape)
        if math.isinf(self.r[0]):
            return np.full(t.shape, min(1.0, float(self.cum_q[-1])))
        thr = np.exp(np.minimum(t, 700.0))
        size = self.q.size
        k = np.searchsorted(self.neg_avg, -thr, side="right")  # first prefix below e^t
        full = k >= size
        kk = np.minimum(k, size - 1)
        prev = np.maximum(kk - 1, 0)
        before_q = np.where(kk > 0, self.cum_q[prev], 0.0)
        before_r = np.where(kk > 0, self.cum_r[prev], 0.0)
        surplus = np.maximum(before_r - thr * before_q, 0.0)
        slack = self.err * (before_r + thr * before_q)
        denom = thr - self.r[kk]
        with np.errstate(divide="ignore", invalid="ignore"):
            part = np.where(denom > 0, (surplus + slack) / denom, np.inf)
        mass = np.where(full, self.cum_q[-1], before_q + np.minimum(self.q[kk], part))
        out = np.where(mass > 0, np.minimum(mass * (1.0 + self.err) + 1e-300, 1.0), 0.0)
        return np.asarray(out, dtype=np.float64)

    def mass(self, t: float) -> float:
        """:meth:`mass_many` at one threshold."""
        return float(self.mass_many(np.array([t]))[0])

    def level(self, delta: float) -> float:
        """The smallest ``t >= 0`` with ``mass(t') <= delta`` for all ``t' > t`` (rounded up)."""
        if self.q.size == 0:
            return 0.0
        if delta == 0.0:
            top = float(self.r[0])
            return safe_upper(math.log(top)) if top > 1.0 else 0.0
        if float(self.cum_q[-1]) <= delta:
            return 0.0
        k = int(np.searchsorted(self.cum_q, delta, side="left"))  # first cum_q >= delta
        if k >= self.first_bad:  # some ratio among the first k + 1 is not finite
            return math.inf
        before_q = float(self.cum_q[k - 1]) if k > 0 else 0.0
        before_r = float(self.cum_r[k - 1]) if k > 0 else 0.0
        mean = (before_r + max(delta - before_q, 0.0) * float(self.r[k])) / delta
        if mean <= 1.0:
            return 0.0
        return safe_upper(math.log(mean) + math.log1p(self.err))


class _RowItems:
    """The per-row knapsacks of the module docstring: the outcomes of a post-processing
    that leak more than ``t`` through row ``x`` (``P(z | x) > e^t P_Z(z)``) form a group
    whose mass is at most :meth:`_Items.mass` of the items ``(P_Y(y), W[x, y] / P_Y(y))``;
    the total is at most the sum over rows (the LP's shared capacity dropped)."""

    def __init__(self, caps: NDArray[np.float64], rows: NDArray[np.float64]) -> None:
        self.rows = [_Items(caps, r) for r in rows]

    def mass_many(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        total = np.zeros(np.shape(t))
        for it in self.rows:
            total = total + it.mass_many(t)
        return np.asarray(np.minimum(total, 1.0), dtype=np.float64)

    def mass(self, t: float) -> float:
        return float(self.mass_many(np.array([t]))[0])

    def levels(self, deltas: NDArray[np.float64]) -> NDArray[np.float64]:
        """Per ``delta``: the smallest ``t`` (to ``~1e-12`` relative, rounded up) with
        ``mass(t') <= delta`` for ``t' > t``, by a bisection vectorised over ``deltas``;
        ``delta = 0``: the largest ratio."""
        d = np.asarray(deltas, dtype=np.float64)
        if not self.rows:
            return np.zeros(d.shape)
        n = len(self.rows)
        # each row's mass is <= delta / n above its own level there: a valid upper end
        hi = np.array([max(it.level(float(x) / n) for it in self.rows) for x in d])
        lo = np.zeros(d.shape)
        work = (d > 0) & np.isfinite(hi) & (hi > 0)
        done0 = work & (self.mass_many(lo) <= d)
        hi = np.where(done0, 0.0, hi)
        work &= ~done0
        for _ in range(80):
            if not work.any():
                break
            mid = 0.5 * (lo + hi)
            viol = self.mass_many(mid) > d
            lo = np.where(work & viol, mid, lo)
            hi = np.where(work & ~viol, mid, hi)
            work &= hi - lo > 1e-12 * np.maximum(1.0, hi)
        return np.array([safe_upper(float(x)) if x > 0 else 0.0 for x in hi])

    def level(self, delta: float) -> float:
        return float(self.levels(np.array([delta]))[0])


def _items(caps: ArrayLike, ratio: ArrayLike) -> _Items:
    q = np.asarray(caps, dtype=np.float64).ravel()
    r = np.asarray(ratio, dtype=np.float64).ravel()
    if q.shape != r.shape:
        raise ValidationError(
            f"caps and ratio must have the same length, got {q.size} and {r.size}")
    bad_q = ~(np.isfinite(q) & (q >= 0))
    if bad_q.any():
        raise ValidationError(
            f"caps must be finite and >= 0, got {fmt(float(q[bad_q][0]))} at index "
            f"{int(np.argmax(bad_q))}")
    bad_r = np.isnan(r) | (r < 0)
    if bad_r.any():
        raise ValidationError(
            f"ratio must be >= 0 (inf allowed), got {fmt(float(r[bad_r][0]))} at index "
            f"{int(np.argmax(bad_r))}")
    return _Items(q, r)


def knapsack_mass(caps: ArrayLike, ratio: ArrayLike, eps: float) -> float:
    """``max sum_y s_y`` over ``0 <= s_y <= caps_y`` with ``sum_y s_y (ratio_y - e^eps) >= 0``
    (the fractional knapsack of the module docstring), capped at 1.

    Take every ``y`` with ``ratio_y >= e^eps`` whole, then the others by decreasing ratio
    until the surplus is spent. Rounded up (an upper bound). Also importable from
    :mod:`pmlkit.numeric.tails`.

    Examples
    --------
    Ratio 3 on mass 0.1 pays for mass 0.2 at ratio 0 when ``e^eps = 1``:

    >>> round(knapsack_mass([0.1, 0.5], [3.0, 0.0], 0.0), 12)
    0.3
    """
    e = check_eps(eps)
    return _items(caps, ratio).mass(e)


def knapsack_level(caps: ArrayLike, ratio: ArrayLike, delta: float) -> float:
    """The inverse of :func:`knapsack_mass`: the smallest ``t >= 0`` with
    ``knapsack_mass(caps, ratio, t') <= delta`` for every ``t' > t``,

        t = log( (1/delta) sum of ratio * caps over the top delta of caps ),

    taking the ``y`` by decreasing ``ratio`` and the last one fractionally (module
    docstring); ``0`` when ``sum(caps) <= delta``. ``delta = 0`` gives the largest ratio
    of an item with positive cap (the pure worst case). Rounded up.

    Parameters
    ----------
    caps
        Non-negative masses (``P_Y``, or their largest values over a set).
    ratio
        Non-negative ratios ``exp pml`` (``inf`` allowed: then the level is ``inf``).
    delta
        In ``[0, 1]``.

    Examples
    --------
    Mass 0.1 at ratio 3 and 0.9 at ratio 1/3: the top 0.2 of the mass averages
    ``(0.1 * 3 + 0.1 / 3) / 0.2 = 5/3``:

    >>> t = knapsack_level([0.1, 0.9], [3.0, 1 / 3], 0.2)
    >>> round(t, 9), round(math.log(5 / 3), 9)
    (0.510825624, 0.510825624)
    >>> knapsack_mass([0.1, 0.9], [3.0, 1 / 3], t + 1e-9) <= 0.2
    True
    """
    d = check_delta(delta, allow_zero=True)
    return _items(caps, ratio).level(d)


def postprocessing_delta_over_set(mechanism: ArrayLike, uncertainty_set: UncertaintySet,
                                  eps: float) -> float:
    """A bound on ``sup_{Q in set} sup_g P_Q[pml_Q(g(Y)) > eps]``: the smaller of the Markov
    bound and a knapsack over the set.

    For every ``Q`` in the set, ``L_Q(y) <= Lmax(y) = exp`` (the worst case of output ``y``
    over the set, :func:`pmlkit.worstcase.column_values`) and ``P_Q(y) <= hi(y) =
    max_{Q in set} Q . W[:, y]``. The event's mass ``s(y) = a(y) P_Q(y)`` then satisfies
    ``sum_y s(y) (Lmax(y) - e^eps) >= 0`` with ``0 <= s(y) <= hi(y)``, so its total is at
    most :func:`knapsack_mass` ``(hi, Lmax, eps)``; the per-row knapsacks (module docstring)
    over the set use the items ``(hi(y), W[x, y] / min_Q Q . W[:, y])``, and the smallest of
    the three bounds is returned. Where every output's worst case is
    ``<= eps`` (a pure eps-PML guarantee over the set) the bound is 0. Also importable from
    :mod:`pmlkit.numeric.tails`.

    Examples
    --------
    >>> from pmlkit.sets import L1Ball
    >>> w = [[0.75, 0.25], [0.25, 0.75]]
    >>> ball = L1Ball([0.5, 0.5], 0.2)   # the worst case of each output is log(0.75/0.45)
    >>> round(postprocessing_delta_over_set(w, ball, 0.5), 4)   # Markov: 1.5 e^-0.5
    0.9098
    >>> postprocessing_delta_over_set(w, ball, 0.52)   # above the pure worst case 0.5108
    0.0
    """
    from .worstcase import check_uncertainty_set

    w = as_mechanism(mechanism)
    uset = check_uncertainty_set(uncertainty_set, w.shape[0])
    e = check_eps(eps)
    hi, lmax, rows = _set_parts(w, uset)
    return min(_Items(hi, lmax).mass(e), _RowItems(hi, rows).mass(e),
               maximal_leakage_delta(w, e))


@dataclass(frozen=True)
class EnvelopeBound:
    """A post-processing-robust tail level, valid for every post-processing and every prior
    of the set it was computed over (:func:`envelope_bound`).

    Attributes
    ----------
    delta
        The tail probability.
    eps
        ``min(knapsack, ml_bound)``: for every post-processing ``Z`` and every prior of the
        set, ``P[pml(Z) > eps] <= delta``.
    method
        Which bound gave ``eps``: ``"fractional knapsack"`` or ``"maximal leakage
        (Markov)"`` (``"pure worst case (delta = 0)"`` at ``delta = 0``).
    knapsack
        The smaller of the pooled knapsack level (:func:`knapsack_level` of the outputs)
        and the per-row knapsacks' level (module docstring); ``inf`` when some output's
        worst case is infinite.
    ml_bound
        ``ML(X -> Y) + log(1/delta)`` (``inf`` at ``delta = 0``), prior-free.
    stated_eps
        The eps of a plain tail statement ``P[pml(Y) > stated_eps] <= delta`` that was
        checked, or ``None``.
    survives_post_processing
        For a checked statement: ``True`` when pmlkit certifies that it holds for every
        post-processing (the knapsack or Markov bound at ``stated_eps`` is at most
        ``delta``); ``False`` when it cannot (which for a statement whose ``delta`` is
        the exact tail probability of the output, with mass just below ``stated_eps``,
        means some post-processing does break it). ``None`` when nothing was checked.

    Examples
    --------
    >>> b = envelope_bound([[0.75, 0.25], [0.25, 0.75]], [0.5, 0.5], 0.1, eps=0.5)
    >>> round(b.eps, 4), b.method, b.survives_post_processing   # log 1.5 < 0.5
    (0.4055, 'fractional knapsack', True)
    """

    delta: float
    eps: float
    method: str
    knapsack: float
    ml_bound: float
    stated_eps: float | None = None
    survives_post_processing: bool | None = None

    def __str__(self) -> str:
        head = (f"post-processing envelope at delta = {self.delta:.6g}: <= {up_text(self.eps)} "
                f"nats ({self.method}; for every post-processing)")
        if self.stated_eps is None:
            return head
        verdict = ("survives post-processing" if self.survives_post_processing else
                   "is NOT certified to survive post-processing")
        return (f"{head}; the tail statement P[pml > {self.stated_eps:.6g}] <= "
                f"{self.delta:.6g} {verdict}")

    def to_dict(self) -> dict[str, float | str | bool | None]:
        """JSON-ready fields (``inf`` as the string ``"inf"``).

        Examples
        --------
        >>> d = envelope_bound([[1.0, 0.0], [0.0, 1.0]], [0.5, 0.5], 0.5).to_dict()
        >>> round(d["eps"], 9), d["method"]          # releasing X: log 2
        (0.693147181, 'fractional knapsack')
        """
        def num(x: float | None) -> float | str | None:
            return "inf" if x is not None and math.isinf(x) else x
        return {"delta": self.delta, "eps": num(self.eps), "method": self.method,
                "knapsack": num(self.knapsack), "ml_bound": num(self.ml_bound),
                "stated_eps": self.stated_eps,
                "survives_post_processing": self.survives_post_processing}


def envelope_bound(mechanism: ArrayLike, over: ArrayLike | UncertaintySet, delta: float, *,
                   eps: float | None = None) -> EnvelopeBound:
    """A level that every post-processing of the output exceeds with probability at most
    ``delta``, for one prior or every prior of a set: the smaller of the fractional-knapsack
    level and ``ML + log(1/delta)`` (module docstring). One sort of the outputs, so it
    serves any alphabet size; for one prior and a small alphabet :func:`leakage_envelope`
    gives the exact envelope (never above this bound).

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    over
        A prior (length ``N``) or a :class:`pmlkit.sets.UncertaintySet`.
    delta
        In ``[0, 1]``; ``0`` gives the pure worst case.
    eps
        Optional: the eps of a plain tail statement ``P[pml(Y) > eps] <= delta`` to check
        (``survives_post_processing``).

    Returns
    -------
    EnvelopeBound

    Examples
    --------
    The counterexample of the module docstring at ``delta = 0.2``: the exact envelope is
    0.5581 (:func:`leakage_envelope`). The outputs sorted by ``L = max_x W / P_Y`` are
    1.9538 (mass 0.065), 1.8557 (0.097), 1.36 (0.0125) and 1.0200 (0.8255); the top 0.2 of
    the mass averages ``(0.127 + 0.18 + 0.017 + 0.0255 * 1.0200) / 0.2 = 1.75``, a pooled
    knapsack level of ``log 1.75 = 0.5596``; the per-row knapsacks give 0.5581 (here the
    exact value), and the Markov level is ``log 1.166 + log 5 = 1.763``. The output's own
    tail statement at 0.0198 does not survive:

    >>> W = [[.003, .18, .809, .008], [.127, .014, .842, .017]]
    >>> b = envelope_bound(W, [0.5, 0.5], 0.2, eps=0.0198)
    >>> round(b.eps, 4), round(b.ml_bound, 4), b.survives_post_processing
    (0.5581, 1.763, False)
    >>> round(knapsack_level([0.065, 0.097, 0.8255, 0.0125], [1.9538, 1.8557, 1.02, 1.36],
    ...                      0.2), 4)
    0.5596
    >>> abs(b.eps - leakage_envelope(W, [0.5, 0.5], 0.2).eps) < 1e-9   # LP's margin 2e-10
    True
    """
    e = None if eps is None else [eps]
    return envelope_bounds(mechanism, over, [delta], eps=e)[0]


def envelope_bounds(mechanism: ArrayLike, over: ArrayLike | UncertaintySet, delta: ArrayLike,
                    *, eps: ArrayLike | None = None) -> tuple[EnvelopeBound, ...]:
    """:func:`envelope_bound` for many ``delta`` (and stated ``eps``) at once: the outputs
    are sorted once (a Gaussian grid release has ~10^5 of them).

    Parameters
    ----------
    mechanism, over
        As for :func:`envelope_bound`.
    delta
        1-D array of values in ``[0, 1]``.
    eps
        ``None`` or a 1-D array of the same length (each ``>= 0``).

    Examples
    --------
    >>> W = [[.003, .18, .809, .008], [.127, .014, .842, .017]]
    >>> [round(b.eps, 4) for b in envelope_bounds(W, [0.5, 0.5], [0.2, 1.0])]
    [0.5581, 0.0]
    """
    from .worstcase import check_uncertainty_set

    w = as_mechanism(mechanism)
    ds = np.atleast_1d(np.asarray(delta, dtype=np.float64))
    if ds.ndim != 1:
        raise ValidationError(f"delta must be a scalar or a 1-D array, got shape {ds.shape}")
    dl = [check_delta(float(x), allow_zero=True) for x in ds]
    es: list[float] | None = None
    if eps is not None:
        ea = np.atleast_1d(np.asarray(eps, dtype=np.float64))
        if ea.shape != ds.shape:
            raise ValidationError(
                f"eps must have the length of delta ({ds.size}), got shape {ea.shape}")
        es = [check_eps(float(x)) for x in ea]
    if isinstance(over, UncertaintySet):
        uset = check_uncertainty_set(over, w.shape[0])
        caps, ratio, rows = _set_parts(w, uset)
        rcaps = caps
    else:
        p = as_distribution(over, "over")
        check_prior_matches(w, p, pname="over")
        caps, ratio = _prior_items(w, p)
        rcaps, rows = _prior_rows(w, p)
    items = _Items(caps, ratio)
    per_row = _RowItems(rcaps, rows)
    ml = float(maximal_leakage(w))
    out = []
    row_levels = per_row.levels(np.array(dl))
    row_mass = (per_row.mass_many(np.array(es)) if es is not None else None)
    pooled_mass = (items.mass_many(np.array(es)) if es is not None else None)
    for k, d in enumerate(dl):
        knap = min(items.level(d), float(row_levels[k]))
        mlb = safe_upper(ml + math.log(1.0 / d)) if d > 0 else math.inf
        level, method = ((knap, "fractional knapsack") if knap <= mlb
                         else (mlb, "maximal leakage (Markov)"))
        if d == 0.0:
            method = "pure worst case (delta = 0)"
        stated: float | None = None
        survives: bool | None = None
        if es is not None:
            stated = es[k]
            markov = min(1.0, math.exp(ml - stated)) if ml - stated < 700 else 1.0
            assert row_mass is not None and pooled_mass is not None
            tail = min(float(pooled_mass[k]), float(row_mass[k]), markov)
            survives = bool(tail <= d)
        out.append(EnvelopeBound(delta=d, eps=float(level), method=method,
                                 knapsack=float(knap), ml_bound=float(mlb),
                                 stated_eps=stated, survives_post_processing=survives))
    return tuple(out)
