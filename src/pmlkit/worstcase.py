"""Exact worst-case PML over an uncertainty set (Definition 5 [Def. localcap], Definition 6
[Def. leakagesensitivity]).

Beyond the paper: the paper bounds the local leakage capacity and
sensitivity over an l1-ball in closed form (Theorem 4 [Thm l1gamma], valid for ``beta < 2 p_min``);
here they are computed exactly for any :class:`pmlkit.sets.UncertaintySet` from the exact
``min_{Q in set} Q . W[:, j]`` of each column (a fractional-knapsack greedy for balls and
boxes, a max over vertices for vertex sets), with no assumption on the radius.

The examples below use ``W = [[0.8, 0.2], [0.3, 0.7]]`` and the l1-ball of radius 0.2
around ``(0.5, 0.5)``: the worst prior moves 0.1 of mass towards the row that makes an
output least likely, so ``min_Q Q . W[:, 0] = 0.4*0.8 + 0.6*0.3 = 0.5`` and
``min_Q Q . W[:, 1] = 0.6*0.2 + 0.4*0.7 = 0.4``.

References
----------
- L. Grosse, S. Saeidian, T. J. Oechtering, M. Skoglund, "Privacy Mechanism Design
  based on Empirical Distributions", Definitions 5 and 6 (local leakage capacity and
  sensitivity), Theorem 4 (their closed-form bound over an l1-ball).
"""

from __future__ import annotations

import math
from typing import Protocol, TypeAlias, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import (
    as_distribution,
    as_mechanism,
    check_eps,
    check_prior_matches,
    exceeds,
    surely_exceeds,
)
from .errors import ValidationError
from .leakage import eps_min
from .sets import UncertaintySet

__all__ = ["CERTIFY_TOL", "certified_bound", "certifies", "leakage_capacity",
           "leakage_sensitivity", "refutes", "worst_case_distribution"]

#: The design margin, in nats: designers aim at ``eps - CERTIFY_TOL`` (or at ``eps`` and
#: then at ``eps - CERTIFY_TOL`` should that fail) so that the row rescaling of LP solutions
#: (``~2e-10``, see :mod:`pmlkit.design`) keeps the result below ``eps``. A design is
#: certified only by :func:`certifies`: its computed worst case must be below ``eps`` by
#: more than its rounding margin (never above it by any tolerance). The audits and the
#: joint release still use it as an allowed excess of a measured eps over a claim. The
#: recorded ``certified_eps`` is the computed worst case itself, never rounded down.
CERTIFY_TOL = 1e-9

#: Absolute rounding margin of one column's computed leakage ``log(top) - log(qmin)``, in
#: units of ``2^-48``, per unit of ``|log top| + |log qmin| + N + 1`` (see :func:`certifies`).
_ABS_ULPS = 2.0**-48


class _HasSet(Protocol):
    """An object carrying an uncertainty set, such as :class:`pmlkit.confidence.ConfidenceSet`."""

    @property
    def set(self) -> UncertaintySet: ...


#: What an ``uncertainty_set`` argument may be: a set, or an object holding one in ``.set``.
UncertaintySetLike: TypeAlias = UncertaintySet | _HasSet


def check_uncertainty_set(uncertainty_set: object, n: int, *,
                          inputs: str = "mechanism has {n} rows (inputs)") -> UncertaintySet:
    """The one check of an ``uncertainty_set`` argument: an :class:`UncertaintySet` (or a
    :class:`pmlkit.confidence.ConfidenceSet`, unwrapped) over ``n`` categories. ``inputs``
    describes the mechanism's side in the mismatch message (``{n}`` is replaced)."""
    inner = getattr(uncertainty_set, "set", None)  # a pmlkit.confidence.ConfidenceSet
    if not isinstance(uncertainty_set, UncertaintySet) and isinstance(inner, UncertaintySet):
        uncertainty_set = inner
    if not isinstance(uncertainty_set, UncertaintySet):
        raise ValidationError(
            "uncertainty_set must be a pmlkit.sets.UncertaintySet (L1Ball, Box, VertexSet), "
            f"got {type(uncertainty_set).__name__}; for a single prior use eps_min")
    if uncertainty_set.n != n:
        raise ValidationError(
            f"uncertainty_set is over {uncertainty_set.n} categories but "
            f"{inputs.format(n=n)}; they must match")
    return uncertainty_set


def column_values(w: NDArray[np.float64], uset: UncertaintySet) -> NDArray[np.float64]:
    """The worst case of each output column over a set (the building block of
    :func:`leakage_capacity` and of the joint bounds of :mod:`pmlkit.joint`).

    ``w`` must already be validated (row-stochastic float64). Per column: ``sup_Q log(max_i
    W[i,j] / Q_Y[j])``; ``-inf`` for columns that no Q in the set can produce, ``inf`` for
    columns whose ``min_Q Q_Y[j]`` is 0 but not their max. A column ``j`` can occur (``max_Q
    Q . W[:, j] > 0``) iff ``W[x, j] > 0`` for some ``x`` with ``max_Q Q(x) > 0`` (exact
    ``coordinate_bounds``)."""
    return _column_parts(w, uset)[0]


def _column_parts(w: NDArray[np.float64], uset: UncertaintySet
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(values, top, qmin)`` of :func:`column_values`. A column whose entries are all
    equal leaks exactly 0 (``Q . W[:, j] = W[0, j]`` for every distribution ``Q``); its
    value is set to ``0.0`` exactly rather than computed with rounding."""
    top = w.max(axis=0)
    possible = uset._support_mask()
    live = top > 0 if possible is None else (w[possible] > 0).any(axis=0)
    qmin = uset._min_linear(w)
    flat = top == w.min(axis=0)
    if live.all() and (qmin > 0).all():  # the common case, without masks
        vals = np.log(top) - np.log(qmin)
        vals[flat] = 0.0
        return cast(NDArray[np.float64], vals), top, qmin
    vals = np.full(w.shape[1], -np.inf)
    dead_min = live & (qmin <= 0)
    ok = live & ~dead_min
    vals[ok] = np.log(top[ok]) - np.log(qmin[ok])
    vals[ok & flat] = 0.0
    vals[dead_min] = np.inf
    return vals, top, qmin


def _margins(w: NDArray[np.float64], uset: UncertaintySet
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each column's computed leakage and its absolute rounding margin (see
    :func:`certifies`)."""
    vals, top, qmin = _column_parts(w, uset)
    with np.errstate(divide="ignore"):
        logs = np.abs(np.log(top)) + np.abs(np.log(np.maximum(qmin, 0.0)))
    logs = np.where(np.isfinite(logs), logs, 0.0)
    margin = np.where(vals == 0.0, 0.0, _ABS_ULPS * (logs + w.shape[0] + 1.0))
    return vals, margin


def certified_bound(mechanism: ArrayLike, uncertainty_set: UncertaintySetLike) -> float:
    """The smallest float eps that :func:`certifies` accepts for the matrix over the set: an
    upper bound on its exact worst case, the computed one raised by its rounding margin
    (``inf`` when the worst case is infinite). What a mechanism that states its own worst
    case (the identity, a fixed matrix) may promise.

    Examples
    --------
    >>> import math
    >>> from pmlkit.sets import L1Ball
    >>> W = [[0.75, 0.25], [0.25, 0.75]]
    >>> b = certified_bound(W, L1Ball([0.5, 0.5], 2.0))
    >>> math.log(3) < b < math.log(3) + 1e-12, certifies(W, L1Ball([0.5, 0.5], 2.0), b)
    (True, True)
    """
    from ._validation import safe_upper

    w = as_mechanism(mechanism)
    uset = check_uncertainty_set(uncertainty_set, w.shape[0])
    vals, margin = _margins(w, uset)
    live = np.flatnonzero(vals > -np.inf)
    return max([0.0] + [safe_upper(float(vals[j]), absolute=float(margin[j])) for j in live])


def certifies(mechanism: ArrayLike, uncertainty_set: UncertaintySetLike,
              eps: float) -> bool:
    """Whether the exact worst case of the (float) matrix over the set is ``<= eps``, with
    rounding counted against the certificate.

    Every column's computed leakage ``v = log(top) - log(qmin)`` (:func:`leakage_capacity`)
    must be below ``eps`` by more than its rounding margin
    (:func:`pmlkit._validation.exceeds` with ``rel = 2^-44`` and
    ``absolute = 2^-48 (|log top| + |log qmin| + N + 1)``): a value within rounding of
    ``eps`` does not certify it. The margin bounds the error with a factor of about 16 to
    spare: ``top`` is an entry (exact), ``qmin`` a sum of ``N`` non-negative products
    (relative error at most ``(N + 1) 2^-53``, which ``log`` turns into an absolute one), each
    ``log`` is within an ulp of its result (``2^-52 |log x|``) and the subtraction adds
    ``2^-53 |v|``. A column with all entries equal leaks exactly 0 and needs no margin; a
    column no distribution of the set produces is ignored; an infinite value never
    certifies.

    Examples
    --------
    Randomized response with ``e^eps = 3`` leaks ``log 3`` under every prior: it does not
    certify the float ``log 3`` (a tie), it does certify anything safely above it.

    >>> import math
    >>> from pmlkit.sets import L1Ball
    >>> W = [[0.75, 0.25], [0.25, 0.75]]
    >>> ball = L1Ball([0.5, 0.5], 2.0)
    >>> certifies(W, ball, math.log(3)), certifies(W, ball, math.log(3) + 1e-12)
    (False, True)
    >>> certifies([[0.5, 0.5], [0.5, 0.5]], ball, 0.0)    # constant columns: exactly 0
    True
    """
    w = as_mechanism(mechanism)
    uset = check_uncertainty_set(uncertainty_set, w.shape[0])
    e = check_eps(eps)
    vals, margin = _margins(w, uset)
    return not bool(np.any(exceeds(vals, e, absolute=margin)))


def refutes(mechanism: ArrayLike, uncertainty_set: UncertaintySetLike, eps: float) -> bool:
    """Whether the exact worst case of the (float) matrix over the set is certainly above
    ``eps``: some column's computed leakage exceeds ``eps`` by more than the rounding margin
    of :func:`certifies` (counted in the value's favour here). The check of a promise
    someone else computed (a mechanism file): a value within rounding of ``eps`` neither
    certifies nor refutes it, and a promise that is refuted is false whatever rounding did.
    An infinite or NaN leakage of a column the set can produce refutes every ``eps``.

    Examples
    --------
    >>> import math
    >>> from pmlkit.sets import L1Ball
    >>> W = [[0.75, 0.25], [0.25, 0.75]]
    >>> ball = L1Ball([0.5, 0.5], 2.0)
    >>> refutes(W, ball, math.log(3)), refutes(W, ball, math.log(3) - 1e-12)
    (False, True)
    """
    w = as_mechanism(mechanism)
    uset = check_uncertainty_set(uncertainty_set, w.shape[0])
    e = check_eps(eps)
    vals, margin = _margins(w, uset)
    live = vals > -np.inf
    return bool(np.any(live & np.asarray(surely_exceeds(vals, e, absolute=margin)))
                or np.any(np.isnan(vals)))


def leakage_capacity(mechanism: ArrayLike, uncertainty_set: UncertaintySetLike) -> float:
    """Exact local leakage capacity ``C(W, P) = sup_{Q in P} eps_min(W, Q)`` (Definition 5
    [Def. localcap]).

    ``C = max_j [ log max_i W[i, j] - log min_{Q in P} Q . W[:, j] ]`` over the columns ``j``
    that some ``Q`` in the set gives positive probability (``max_Q Q . W[:, j] > 0``).

    Returns ``inf`` when such a column also has ``min_Q Q . W[:, j] = 0``: on the segment
    from a ``Q_0`` with ``Q_0 W[:, j] = 0`` to a ``Q_1`` with ``Q_1 W[:, j] > 0`` (inside the
    convex set) ``Q_Y(j) -> 0`` while staying positive, so ``pml(y_j)`` is unbounded; the
    supremum is not attained.

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    uncertainty_set
        :class:`pmlkit.sets.L1Ball`, :class:`~pmlkit.sets.Box` or
        :class:`~pmlkit.sets.VertexSet` over ``N`` categories, or a
        ``pmlkit.confidence.ConfidenceSet`` (its ``.set`` is used). For one prior use
        :func:`pmlkit.eps_min`.

    Examples
    --------
    ``max(log(0.8 / 0.5), log(0.7 / 0.4)) = log 1.75``, above ``eps_min`` at the centre
    (``log(0.7 / 0.45) = 0.4418``):

    >>> from pmlkit.sets import L1Ball
    >>> W = [[0.8, 0.2], [0.3, 0.7]]
    >>> round(leakage_capacity(W, L1Ball([0.5, 0.5], 0.2)), 4)
    0.5596
    """
    w = as_mechanism(mechanism)
    uset = check_uncertainty_set(uncertainty_set, w.shape[0])
    vals = column_values(w, uset)
    best = float(vals.max())
    return math.inf if best == math.inf else max(0.0, best)


def leakage_sensitivity(mechanism: ArrayLike, prior: ArrayLike,
                        uncertainty_set: UncertaintySetLike) -> float:
    """Exact local leakage sensitivity (Definition 6 [Def. leakagesensitivity]).

    ``S_p(W, P) = sup_{Q in P} eps_min(W, Q) - eps_min(W, p) = C(W, P) - eps_min(W, p)``.

    Raises
    ------
    ValidationError
        When ``prior`` is not in the set (tolerance ``1e-9``): the definition needs
        ``p in P``.

    Examples
    --------
    ``log(0.7 / 0.4) - log(0.7 / 0.45) = log 1.125``:

    >>> from pmlkit.sets import L1Ball
    >>> W = [[0.8, 0.2], [0.3, 0.7]]
    >>> round(leakage_sensitivity(W, [0.5, 0.5], L1Ball([0.5, 0.5], 0.2)), 4)
    0.1178
    """
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    uset = check_uncertainty_set(uncertainty_set, w.shape[0])
    if not uset.contains(p):
        raise ValidationError(
            f"prior must lie in the uncertainty set (Def. leakagesensitivity needs p in P), "
            f"got prior {p.tolist()!r} outside {uset!r}")
    cap = leakage_capacity(w, uset)
    if math.isinf(cap):
        return math.inf
    return max(0.0, cap - eps_min(w, p))


def worst_case_distribution(mechanism: ArrayLike,
                            uncertainty_set: UncertaintySetLike) -> NDArray[np.float64]:
    """A distribution ``Q*`` in the set attaining the capacity: ``eps_min(W, Q*) = C(W, P)``.

    ``Q*`` minimises ``Q . W[:, j*]`` for the column ``j*`` achieving the maximum in
    :func:`leakage_capacity`. When the capacity is ``inf`` the supremum is not attained and
    ``Q*`` is the limit point, a ``Q`` in the set with ``Q_Y(j*) = 0``.

    Examples
    --------
    The second output is the most revealing; it is rarest under ``Q* = (0.6, 0.4)``:

    >>> from pmlkit.leakage import eps_min
    >>> from pmlkit.sets import L1Ball
    >>> W = [[0.8, 0.2], [0.3, 0.7]]
    >>> q = worst_case_distribution(W, L1Ball([0.5, 0.5], 0.2))
    >>> q.round(6), round(eps_min(W, q), 4)
    (array([0.6, 0.4]), 0.5596)
    """
    w = as_mechanism(mechanism)
    uset = check_uncertainty_set(uncertainty_set, w.shape[0])
    vals = column_values(w, uset)
    j = int(np.argmax(vals))
    return cast(NDArray[np.float64], uset.argmin_linear(w[:, [j]])[0])
