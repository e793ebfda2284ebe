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

__all__ = ["maximal_leakage_delta", "postprocessing_delta", "tail_probability"]


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
    top = w.max(axis=0)[live]
    q = py[live]
    ratio = top / q
    thr = math.exp(min(e, 700.0))
    gain = top - thr * q  # a(y) P_Y(y) (L(y) - e^t) per unit a
    pos = gain >= 0
    surplus = float(gain[pos].sum())
    mass = float(q[pos].sum())
    order = np.argsort(-ratio[~pos], kind="stable")
    cost = -gain[~pos][order]  # > 0
    qq = q[~pos][order]
    if cost.size:
        cum = np.cumsum(cost)
        full = int(np.searchsorted(cum, surplus, side="right"))
        mass += float(qq[:full].sum())
        left = surplus - (float(cum[full - 1]) if full > 0 else 0.0)
        if full < cost.size and left > 0:
            mass += float(qq[full]) * left / float(cost[full])
    return min(mass, 1.0)
