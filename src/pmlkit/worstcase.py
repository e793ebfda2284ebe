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

from ._validation import as_distribution, as_mechanism, check_prior_matches
from .errors import ValidationError
from .leakage import eps_min
from .sets import UncertaintySet

__all__ = ["CERTIFY_TOL", "leakage_capacity", "leakage_sensitivity",
           "worst_case_distribution"]

#: Allowed excess of a certified eps over its target, in nats: the single certification
#: tolerance of pmlkit, used by the designers, by :meth:`pmlkit.Mechanism.load` (which
#: recomputes the worst case of a file) and by the audits. A mechanism is accepted only if
#: its exact worst case over the set is ``<= eps + CERTIFY_TOL``, i.e. every likelihood ratio
#: is within a factor ``e^(eps + 1e-9)``, which is ``e^eps (1 + 1e-9)``: far below any
#: statistical meaning, far above the rounding error of the worst-case computation itself
#: (relative ``~1e-15``; the exact minima of :mod:`pmlkit.sets` are summed from
#: non-negative terms and bounds are never tightened by rounding). It absorbs the row
#: rescaling of LP solutions (``~2e-10``, see :mod:`pmlkit.design`). The recorded
#: ``certified_eps`` is the computed worst case itself, never rounded down to the target.
CERTIFY_TOL = 1e-9


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
    top = w.max(axis=0)
    possible = uset._support_mask()
    live = top > 0 if possible is None else (w[possible] > 0).any(axis=0)
    qmin = uset._min_linear(w)
    if live.all() and (qmin > 0).all():  # the common case, without masks
        return cast(NDArray[np.float64], np.log(top) - np.log(qmin))
    vals = np.full(w.shape[1], -np.inf)
    dead_min = live & (qmin <= 0)
    ok = live & ~dead_min
    vals[ok] = np.log(top[ok]) - np.log(qmin[ok])
    vals[dead_min] = np.inf
    return vals


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
