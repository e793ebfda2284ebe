"""Guarantees under a probability floor: c-interior PML and the Dobrushin coefficient.

A prior is *c-interior* when every mass is at least ``c`` (``0 <= c <= 1/N``). The worst
PML of a mechanism over all c-interior priors is the worst case over the box
``{Q : Q >= c, sum Q = 1}`` (each mass is then also at most ``1 - (N - 1) c``)::

    interior_eps(W, c) = max_y log( max_x W[x, y] / min_{Q >= c} Q . W[:, y] ).

The inner minimum puts ``c`` on every row and the remaining ``1 - N c`` on the row where
the column is smallest: ``c sum_x W[x, y] + (1 - N c) min_x W[x, y]``. At ``c = 0`` the
ratio is ``max / min`` of each column, the local-DP eps; at ``c = 1/N`` it is the PML at
the uniform prior. The worst case is computed by the exact box worst case of
:func:`pmlkit.worstcase.leakage_capacity` (no second copy of the formula).

The Dobrushin coefficient ``eta(W) = max_{x, x'} TV(W[x], W[x'])`` (total variation
between two rows) is the contraction coefficient of the total variation distance:
``TV(P W, Q W) <= eta(W) TV(P, Q)`` for all ``P, Q``, with equality for point masses on
the maximising pair of rows.

More generally, the hockey-stick divergence ``E_gamma(P || Q) = sum_y (P(y) - gamma Q(y))_+``
(``gamma >= 1``; ``gamma = 1`` is total variation) contracts by
``eta_gamma(W) = max_{x, x'} E_gamma(W[x] || W[x'])`` (:func:`hockey_stick_coefficient`;
derivation in ``docs/interior.md``), again attained by point masses.

For binary inputs the c-interior constraint of an output ``(a, b)`` with ``a >= b`` reads
``a <= e^eps (c a + (1 - c) b)``: c-interior eps-PML is LDP at
``eps' = log( e^eps (1 - c) / (1 - c e^eps) )`` (no constraint when ``c e^eps >= 1``), so the
largest Dobrushin coefficient is ``(e^eps' - 1) / (e^eps' + 1)``, attained by randomized
response at ``eps'`` (:func:`binary_interior_extremal`).

For any number of inputs the largest contraction coefficient of a mechanism within a
c-interior budget is a small LP (:func:`interior_contraction_bound`): the constraint on
each output column is a convex cone, so the outputs where one row exceeds ``gamma`` times
the other can be merged into one column ``u`` and the rest into ``1 - u`` without changing
``E_gamma`` of that pair of rows; the best mechanism has two outputs, and
``eta_gamma* = max u_0 - gamma u_1`` over ``u in [0, 1]^N`` with both ``u`` and ``1 - u``
in the cone (``N^2`` linear constraints each). It returns the attaining mechanism.

**Sample sizes** (:func:`distinguishing_samples`). To tell two input distributions ``P``
and ``Q`` apart from ``n`` released values with type I plus type II error at most
``alpha``: no test does it with ``n < (1 - alpha) / TV(P W, Q W)`` (``TV`` of ``n``-fold
products is at most ``n`` times that of one), and the likelihood-ratio test does it once
``BC(P W, Q W)^n <= alpha`` (``BC = sum_y sqrt(P_Y(y) Q_Y(y))``, the Bhattacharyya
coefficient: ``min(p^n, q^n) <= sqrt(p^n q^n)``). Through the contraction coefficient,
``TV(P W, Q W) <= eta TV(P, Q)``, the necessary number holds for *every* mechanism with
coefficient at most ``eta``: with :func:`interior_contraction_bound`, for every
mechanism within a c-interior budget.

Beyond the papers: the bodies of Grosse et al. (c-interior PML, arXiv 2601.09498 and
2609.28297) were not available here (abstracts only); the statements above are derived in
``docs/interior.md`` and none of those papers' numbers has been compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_distribution, as_mechanism, check_count, check_eps, fmt
from .errors import PMLError, ValidationError

__all__ = ["SampleSizePlan", "binary_interior_extremal", "distinguishing_samples",
           "dobrushin_coefficient", "hockey_stick_coefficient", "interior_contraction_bound",
           "interior_eps"]


def interior_eps(mechanism: ArrayLike, c: float) -> float:
    """The worst ``eps_min(W, P)`` over every prior ``P`` with all masses ``>= c``.

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    c
        The floor, ``0 <= c <= 1/N``. ``c = 0`` gives the local-DP eps
        (:func:`pmlkit.leakage.ldp_epsilon`, ``inf`` when a column mixes zeros and positive
        entries); ``c = 1/N`` the PML at the uniform prior.

    Examples
    --------
    ``W = [[0.8, 0.2], [0.3, 0.7]]`` at ``c = 0.1``: the first column's worst output
    probability is ``0.1 * 1.1 + 0.8 * 0.3 = 0.35`` and the second's
    ``0.1 * 0.9 + 0.8 * 0.2 = 0.25``, so the worst eps is ``log(0.7 / 0.25)``:

    >>> W = [[0.8, 0.2], [0.3, 0.7]]
    >>> round(interior_eps(W, 0.1), 6), round(math.log(0.7 / 0.25), 6)
    (1.029619, 1.029619)
    >>> from pmlkit.leakage import ldp_epsilon
    >>> interior_eps(W, 0.0) == ldp_epsilon(W)
    True
    """
    from .leakage import ldp_epsilon
    from .sets import Box
    from .worstcase import leakage_capacity

    w = as_mechanism(mechanism)
    n = w.shape[0]
    cv = _check_floor(c, n)
    if cv == 0.0:
        return ldp_epsilon(w)
    lower = np.full(n, cv)
    upper = np.full(n, min(1.0, 1.0 - (n - 1) * cv))
    upper = np.maximum(upper, lower)
    return float(leakage_capacity(w, Box(lower, upper)))


def dobrushin_coefficient(mechanism: ArrayLike) -> float:
    """``eta(W) = max_{x, x'} (1/2) sum_y |W[x, y] - W[x', y]|``: the largest total
    variation between two rows, the contraction coefficient of total variation.

    Examples
    --------
    Binary randomized response ``[[3/4, 1/4], [1/4, 3/4]]`` contracts by ``1/2``
    (``(e^eps - 1) / (e^eps + 1)`` at ``e^eps = 3``):

    >>> dobrushin_coefficient([[0.75, 0.25], [0.25, 0.75]])
    0.5
    """
    w = as_mechanism(mechanism)
    diff = np.abs(w[:, None, :] - w[None, :, :]).sum(axis=2)
    return float(0.5 * diff.max())


def hockey_stick_coefficient(mechanism: ArrayLike, gamma: float) -> float:
    """``eta_gamma(W) = max_{x, x'} sum_y (W[x, y] - gamma W[x', y])_+``: the contraction
    coefficient of the hockey-stick divergence ``E_gamma`` (``gamma >= 1``), attained by
    point masses on the maximising pair of rows.

    Examples
    --------
    Randomized response ``[[3/4, 1/4], [1/4, 3/4]]`` at ``gamma = 2``: ``3/4 - 2/4``:

    >>> hockey_stick_coefficient([[0.75, 0.25], [0.25, 0.75]], 2.0)
    0.25
    """
    w = as_mechanism(mechanism)
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise ValidationError(f"gamma must be a number >= 1, got {fmt(gamma)}") from None
    if not (math.isfinite(g) and g >= 1.0):
        raise ValidationError(f"gamma must be finite and >= 1, got {fmt(gamma)}")
    diff = np.maximum(w[:, None, :] - g * w[None, :, :], 0.0).sum(axis=2)
    return float(diff.max())


def binary_interior_extremal(eps: float, c: float) -> tuple[float, np.ndarray]:
    """For binary inputs: the largest Dobrushin coefficient of a mechanism whose
    :func:`interior_eps` at floor ``c`` is at most ``eps``, and randomized response
    attaining it (module docstring).

    Returns
    -------
    (float, numpy.ndarray)
        ``(e^eps' - 1) / (e^eps' + 1)`` with ``eps' = log(e^eps (1 - c) / (1 - c e^eps))``,
        and the ``2 x 2`` randomized response at ``eps'`` (the identity, coefficient 1,
        when ``c e^eps >= 1``).

    Examples
    --------
    At ``c = 0`` it is the LDP bound ``(e^eps - 1) / (e^eps + 1)``:

    >>> eta, w = binary_interior_extremal(math.log(3), 0.0)
    >>> round(eta, 6), w.round(4).tolist()
    (0.5, [[0.75, 0.25], [0.25, 0.75]])

    With a floor ``c = 0.2``, ``e^eps' = 3 * 0.8 / (1 - 0.6) = 6`` and the coefficient is
    ``5/7``; the attaining mechanism's c-interior eps is exactly ``log 3``:

    >>> eta, w = binary_interior_extremal(math.log(3), 0.2)
    >>> round(eta, 6), round(interior_eps(w, 0.2), 6) == round(math.log(3), 6)
    (0.714286, True)
    """
    from ._validation import check_eps

    e = check_eps(eps)
    try:
        cv = float(c)
    except (TypeError, ValueError):
        raise ValidationError(f"c must be in [0, 1/2], got {fmt(c)}") from None
    if not (math.isfinite(cv) and 0.0 <= cv <= 0.5):
        raise ValidationError(f"c must be in [0, 1/2] for binary inputs, got {fmt(c)}")
    ee = math.exp(min(e, 700.0))
    if cv * ee >= 1.0:
        return 1.0, np.eye(2)
    r = ee * (1.0 - cv) / (1.0 - cv * ee)  # e^eps'
    keep = r / (1.0 + r)
    w = np.array([[keep, 1.0 - keep], [1.0 - keep, keep]])
    return float((r - 1.0) / (r + 1.0)), w


def _check_floor(c: float, n: int) -> float:
    try:
        cv = float(c)
    except (TypeError, ValueError):
        raise ValidationError(f"c must be a real number in [0, 1/N], got {fmt(c)}") from None
    if not (math.isfinite(cv) and 0.0 <= cv <= 1.0 / n + 1e-15):
        raise ValidationError(
            f"c must be in [0, 1/N] = [0, {1.0 / n:.6g}] for N = {n} inputs, got {fmt(c)}")
    return min(cv, 1.0 / n)


def interior_contraction_bound(n: int, eps: float, c: float, *, gamma: float = 1.0
                               ) -> tuple[float, np.ndarray]:
    """The largest hockey-stick contraction coefficient ``eta_gamma`` (Dobrushin at
    ``gamma = 1``) of any mechanism on ``n`` inputs whose :func:`interior_eps` at floor
    ``c`` is at most ``eps``, and a two-output mechanism attaining it (module docstring).

    The LP ``max u_0 - gamma u_1`` over ``u in [0, 1]^n`` with, for every pair ``x, x'``,
    ``u_x <= e^eps (c sum u + (1 - n c) u_x')`` and the same for ``1 - u`` (HiGHS). The
    returned mechanism ``[u, 1 - u]`` is checked with :func:`interior_eps` and, if the LP's
    tolerance put it over budget, mixed with a constant column until it is within it; the
    returned coefficient is the LP optimum rounded up by ``1e-9`` (a bound for every
    mechanism in the budget, at least the returned mechanism's own coefficient).

    Parameters
    ----------
    n
        Number of inputs, ``>= 2``.
    eps
        The c-interior budget, ``>= 0``.
    c
        The floor, ``0 <= c <= 1/n`` (``0``: local DP).
    gamma
        ``>= 1``; ``1`` gives the Dobrushin coefficient.

    Examples
    --------
    For two inputs it is the closed form of :func:`binary_interior_extremal`
    (``5/7`` at ``eps = log 3``, ``c = 0.2``); with three inputs and ``c = 0`` it is the
    LDP value ``(e^eps - 1) / (e^eps + 1) = 1/2``:

    >>> eta, w = interior_contraction_bound(2, math.log(3), 0.2)
    >>> round(eta, 6), round(dobrushin_coefficient(w), 6)
    (0.714286, 0.714286)
    >>> eta, w = interior_contraction_bound(3, math.log(3), 0.0)
    >>> round(eta, 6), interior_eps(w, 0.0) <= math.log(3)
    (0.5, True)
    """
    from scipy.optimize import linprog

    nn = check_count(n, "n", minimum=2)
    e = check_eps(eps)
    cv = _check_floor(c, nn)
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise ValidationError(f"gamma must be a number >= 1, got {fmt(gamma)}") from None
    if not (math.isfinite(g) and g >= 1.0):
        raise ValidationError(f"gamma must be finite and >= 1, got {fmt(gamma)}")
    ee = math.exp(min(e, 700.0))
    rows = []
    rhs = []
    for x in range(nn):
        for xp in range(nn):
            a = -ee * cv * np.ones(nn)
            a[x] += 1.0
            a[xp] -= ee * (1.0 - nn * cv)
            rows.append(a)          # u in the cone
            rhs.append(0.0)
            rows.append(-a)         # 1 - u in the cone
            rhs.append(ee - 1.0)
    cost = np.zeros(nn)
    cost[0], cost[1] = -1.0, g
    res = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(0.0, 1.0)] * nn,
                  method="highs")
    if res.status != 0:  # pragma: no cover - u = 0 is feasible and the LP is bounded
        raise PMLError(f"contraction LP failed (HiGHS status {res.status}): {res.message}")
    u = np.clip(np.asarray(res.x, dtype=np.float64), 0.0, 1.0)
    w = np.column_stack([u, 1.0 - u])
    lam = 0.0
    while interior_eps(w, cv) > e and lam < 1.0:  # LP tolerance: pull towards constant
        lam = max(2.0 * lam, 1e-12)
        w = (1.0 - lam) * np.column_stack([u, 1.0 - u]) + lam * 0.5
    bound = min(1.0, float(-res.fun) + 1e-9)
    return bound, w


@dataclass(frozen=True)
class SampleSizePlan:
    """How many released values it takes to tell two input distributions apart
    (:func:`distinguishing_samples`).

    Attributes
    ----------
    error
        The target: type I plus type II error at most ``error``.
    tv_inputs, tv_outputs
        ``TV(P, Q)`` and ``TV(P W, Q W)``.
    bhattacharyya
        ``BC(P W, Q W) = sum_y sqrt(P_Y(y) Q_Y(y))``.
    necessary
        ``ceil((1 - error) / TV(P W, Q W))``: no test on fewer released values reaches
        ``error`` (``None`` when ``TV = 0``: no number does).
    sufficient
        ``ceil(log(error) / log BC)``: the likelihood-ratio test on that many values
        reaches ``error`` (``None`` when ``BC = 1``).
    eta
        The contraction coefficient used for ``necessary_any`` (the mechanism's own
        Dobrushin coefficient unless given).
    necessary_any
        ``ceil((1 - error) / (eta TV(P, Q)))``: no test reaches ``error`` on fewer values
        of *any* mechanism whose Dobrushin coefficient is at most ``eta`` (e.g. every
        mechanism within a c-interior budget, :func:`interior_contraction_bound`).

    Examples
    --------
    >>> plan = distinguishing_samples([[0.75, 0.25], [0.25, 0.75]], [0.6, 0.4], [0.4, 0.6],
    ...                               0.1)
    >>> round(plan.tv_outputs, 6), plan.necessary, plan.sufficient
    (0.1, 9, 459)
    """

    error: float
    tv_inputs: float
    tv_outputs: float
    bhattacharyya: float
    necessary: int | None
    sufficient: int | None
    eta: float
    necessary_any: int | None


def distinguishing_samples(mechanism: ArrayLike, p: ArrayLike, q: ArrayLike, error: float,
                           *, eta: float | None = None) -> SampleSizePlan:
    """Released values needed to tell ``P`` from ``Q`` (inputs through ``mechanism``) with
    type I plus type II error at most ``error`` (module docstring).

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    p, q
        The two input distributions (length ``N``).
    error
        In ``(0, 1)``: the largest acceptable sum of the two error probabilities.
    eta
        A contraction coefficient in ``[0, 1]`` for ``necessary_any`` (default: the
        mechanism's :func:`dobrushin_coefficient`); pass
        :func:`interior_contraction_bound`'s to plan for every mechanism in a budget.

    Examples
    --------
    Randomized response ``[[3/4, 1/4], [1/4, 3/4]]`` halves the distance between
    ``(0.6, 0.4)`` and ``(0.4, 0.6)``: ``TV = 0.2`` becomes 0.1, so at least
    ``0.9 / 0.1 = 9`` values are needed for a total error of 0.1; the likelihood-ratio
    test needs at most ``ceil(log 0.1 / log BC) = 459`` (``BC = 2 sqrt(.55 * .45) =
    0.994987``):

    >>> plan = distinguishing_samples([[0.75, 0.25], [0.25, 0.75]], [0.6, 0.4], [0.4, 0.6],
    ...                               0.1)
    >>> plan.necessary, plan.sufficient, plan.necessary_any
    (9, 459, 9)
    """
    from ._validation import check_delta, check_prior_matches

    w = as_mechanism(mechanism)
    pp = as_distribution(p, "p")
    qq = as_distribution(q, "q")
    check_prior_matches(w, pp, pname="p")
    check_prior_matches(w, qq, pname="q")
    err = check_delta(error, "error", allow_one=False)
    eta_v = dobrushin_coefficient(w) if eta is None else _check_unit(eta, "eta")
    py, qy = pp @ w, qq @ w
    tv_in = 0.5 * float(np.abs(pp - qq).sum())
    tv_out = 0.5 * float(np.abs(py - qy).sum())
    bc = min(1.0, float(np.sqrt(py * qy).sum()))

    def up(x: float) -> int:  # a necessary number is never overstated by rounding
        return math.ceil(x * (1.0 - 1e-12))

    necessary = up((1.0 - err) / tv_out) if tv_out > 0 else None
    sufficient = (max(1, math.ceil(math.log(err) / math.log(bc) * (1.0 + 1e-12)))
                  if bc < 1.0 else None)
    any_ = up((1.0 - err) / (eta_v * tv_in)) if eta_v * tv_in > 0 else None
    return SampleSizePlan(error=err, tv_inputs=tv_in, tv_outputs=tv_out, bhattacharyya=bc,
                          necessary=necessary, sufficient=sufficient, eta=eta_v,
                          necessary_any=any_)


def _check_unit(x: float, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValidationError(f"{name} must be a number in [0, 1], got {fmt(x)}") from None
    if not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ValidationError(f"{name} must be in [0, 1], got {fmt(x)}")
    return v
