"""(eps, delta) tail statements that survive post-processing, for any N x M channel.

``L(y) = exp pml(y) = max_x W[x, y] / P_Y(y)``. A tail statement ``P[pml(Y) > eps] <=
delta`` about ``Y`` does not in general hold for a post-processing ``Z`` of ``Y`` (merging
outputs can raise it, e.g. from 0.17 to 1: the example of ``docs/numeric.md``). Two bounds
that do, for every post-processing ``Z`` (deterministic or randomised, kernel ``K``):

1. **Maximal leakage (Markov).** ``E_Z[exp pml(Z)] = sum_z max_x P(z|x) = exp ML(X -> Z)
   <= exp ML(X -> Y)``, so ``P[pml(Z) > t] <= exp(ML(X -> Y) - t)``
   (:func:`maximal_leakage_delta`). It does not depend on the prior: it holds for every
   distribution of any uncertainty set at once.
2. **The fractional-knapsack bound** (tighter, for one prior). ``P(z|x)/P_Z(z)`` is the
   ``P_Y``-weighted average of ``W[x, y]/P_Y(y)`` over ``y`` (weights ``P_Y(y) K[y, z]``), so
   ``exp pml(z)`` is at most the same average of ``L(y)``. Let ``a(y) = P(Z in E | Y = y)``
   for the event ``E = {pml(Z) > t}``; every ``z`` in ``E`` has average above ``e^t``, hence
   ``sum_y a(y) P_Y(y) (L(y) - e^t) >= 0``, and ``P(Z in E) = sum_y a(y) P_Y(y)``. The
   largest value of that over ``a in [0, 1]^M`` is a fractional knapsack: take every ``y``
   with ``L(y) >= e^t``, then the others in decreasing ``L`` until the surplus is spent
   (:func:`postprocessing_delta`). It is ``>=`` the tail of ``Y`` itself (``a`` = the
   indicator of ``L > e^t``) and ``<=`` the Markov bound.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_distribution, as_mechanism, check_eps, check_prior_matches
from ..leakage import maximal_leakage
from ..leakage import pml as pml_of
from ..sets import UncertaintySet

__all__ = ["knapsack_mass", "maximal_leakage_delta", "postprocessing_delta",
           "postprocessing_delta_over_set", "tail_probability"]


def tail_probability(mechanism: ArrayLike, prior: ArrayLike, eps: float) -> float:
    """``P_{Y ~ P_Y}[pml(Y) > eps]`` of the channel itself (NOT post-processing-robust).

    Examples
    --------
    >>> w = [[0.003, 0.18, 0.809, 0.008], [0.127, 0.014, 0.842, 0.017]]
    >>> round(tail_probability(w, [0.5, 0.5], 0.0758), 4)
    0.1745
    """
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    e = check_eps(eps)
    py = p @ w
    v = pml_of(w, p)
    live = py > 0
    return float(np.minimum(py[live & (v > e)].sum(), 1.0))


def maximal_leakage_delta(mechanism: ArrayLike, eps: float) -> float:
    """``min(1, exp(ML(X -> Y) - eps))``: a bound on ``P[pml(g(Y)) > eps]`` for every
    post-processing ``g`` and every prior (module docstring, bound 1).

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
    docstring, bound 2). Never below :func:`tail_probability`, never above
    :func:`maximal_leakage_delta`.

    Examples
    --------
    The counterexample of ``docs/numeric.md``: the tail of ``Y`` is 0.1745, merging outputs
    0 and 2 makes it 1, and the bound (which covers every merge) says 1:

    >>> w = [[0.003, 0.18, 0.809, 0.008], [0.127, 0.014, 0.842, 0.017]]
    >>> postprocessing_delta(w, [0.5, 0.5], 0.0758)
    1.0
    """
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    e = check_eps(eps)
    py = p @ w
    live = py > 0
    return knapsack_mass(py[live], w.max(axis=0)[live] / py[live], e)


def knapsack_mass(caps: ArrayLike, ratio: ArrayLike, eps: float) -> float:
    """``max sum_y s_y`` over ``0 <= s_y <= caps_y`` with ``sum_y s_y (ratio_y - e^eps) >= 0``
    (the fractional knapsack of the module docstring), capped at 1.

    Take every ``y`` with ``ratio_y >= e^eps`` whole, then the others by decreasing ratio
    until the surplus is spent.

    Examples
    --------
    Ratio 3 on mass 0.1 pays for mass 0.2 at ratio 0 when ``e^eps = 1``:

    >>> round(knapsack_mass([0.1, 0.5], [3.0, 0.0], 0.0), 12)
    0.3
    """
    q = np.asarray(caps, dtype=np.float64)
    r = np.asarray(ratio, dtype=np.float64)
    e = check_eps(eps)
    thr = math.exp(min(e, 700.0))
    gain = q * (r - thr)
    pos = gain >= 0
    surplus = float(gain[pos].sum())
    mass = float(q[pos].sum())
    order = np.argsort(-r[~pos], kind="stable")
    cost = -gain[~pos][order]  # > 0
    qq = q[~pos][order]
    if cost.size and surplus > 0:
        cum = np.cumsum(cost)
        full = int(np.searchsorted(cum, surplus, side="right"))
        mass += float(qq[:full].sum())
        left = surplus - (float(cum[full - 1]) if full > 0 else 0.0)
        if full < cost.size and left > 0:
            mass += float(qq[full]) * left / float(cost[full])
    # an upper bound: round against the guarantee (the sums above carry relative errors
    # of a few ulps per term)
    return min(mass * (1.0 + 1e-12), 1.0)


def postprocessing_delta_over_set(mechanism: ArrayLike, uncertainty_set: UncertaintySet,
                                  eps: float) -> float:
    """A bound on ``sup_{Q in set} sup_g P_Q[pml_Q(g(Y)) > eps]``: the smaller of the Markov
    bound and a knapsack over the set.

    For every ``Q`` in the set, ``L_Q(y) <= Lmax(y) = exp`` (the worst case of output ``y``
    over the set, :func:`pmlkit.worstcase.column_values`) and ``P_Q(y) <= hi(y) =
    max_{Q in set} Q . W[:, y]``. The event's mass ``s(y) = a(y) P_Q(y)`` then satisfies
    ``sum_y s(y) (Lmax(y) - e^eps) >= 0`` with ``0 <= s(y) <= hi(y)``, so its total is at
    most :func:`knapsack_mass` ``(hi, Lmax, eps)``. Where every output's worst case is
    ``<= eps`` (a pure eps-PML guarantee over the set) the bound is 0.

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
    from ..worstcase import check_uncertainty_set, column_values

    w = as_mechanism(mechanism)
    uset = check_uncertainty_set(uncertainty_set, w.shape[0])
    e = check_eps(eps)
    with np.errstate(over="ignore"):
        lmax = np.exp(column_values(w, uset))
    hi = uset.max_linear(w)
    live = (hi > 0) & (w.max(axis=0) > 0)
    if np.isinf(lmax[live]).any():
        return maximal_leakage_delta(w, e)
    return min(knapsack_mass(hi[live], lmax[live], e), maximal_leakage_delta(w, e))
