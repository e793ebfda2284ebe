"""(eps, delta) tail statements that survive post-processing, for any N x M channel.

The formulas live in :mod:`pmlkit.envelope` (their one owner: the Markov bound
:func:`~pmlkit.envelope.maximal_leakage_delta`, the fractional-knapsack bounds
:func:`~pmlkit.envelope.postprocessing_delta` and
:func:`~pmlkit.envelope.postprocessing_delta_over_set`, their inverse
:func:`~pmlkit.envelope.envelope_bound`, and the channel's own tail
:func:`~pmlkit.envelope.tail_probability`); this module keeps the names it has always
exported, for the numeric designers and for existing code.

``L(y) = exp pml(y) = max_x W[x, y] / P_Y(y)``. A tail statement ``P[pml(Y) > eps] <=
delta`` about ``Y`` does not in general hold for a post-processing ``Z`` of ``Y`` (merging
outputs can raise it, e.g. from 0.17 to 1: the example of ``docs/numeric.md``). Two bounds
that do, for every post-processing ``Z`` (deterministic or randomised):

1. **Maximal leakage (Markov).** ``P[pml(Z) > t] <= exp(ML(X -> Y) - t)``
   (:func:`maximal_leakage_delta`), for every prior at once.
2. **The fractional-knapsack bound** (tighter, for one prior or a set;
   :func:`postprocessing_delta`, :func:`postprocessing_delta_over_set`). It is ``>=`` the
   tail of ``Y`` itself and ``<=`` the Markov bound.

Examples
--------
>>> from pmlkit.numeric.tails import postprocessing_delta
>>> from pmlkit.envelope import postprocessing_delta as owner
>>> postprocessing_delta is owner
True
"""

from __future__ import annotations

from numpy.typing import ArrayLike

from .._validation import check_eps
from ..envelope import (
    knapsack_mass,
    maximal_leakage_delta,
    postprocessing_delta,
    postprocessing_delta_over_set,
)

__all__ = ["knapsack_mass", "maximal_leakage_delta", "postprocessing_delta",
           "postprocessing_delta_over_set", "tail_probability"]


def tail_probability(mechanism: ArrayLike, prior: ArrayLike, eps: float) -> float:
    """``P_{Y ~ P_Y}[pml(Y) > eps]`` of the channel itself (NOT post-processing-robust):
    :func:`pmlkit.envelope.tail_probability` with the threshold named ``eps`` (``>= 0``).

    Examples
    --------
    >>> w = [[0.003, 0.18, 0.809, 0.008], [0.127, 0.014, 0.842, 0.017]]
    >>> round(tail_probability(w, [0.5, 0.5], 0.0758), 4)
    0.1745
    """
    from ..envelope import tail_probability as owner

    return owner(mechanism, prior, check_eps(eps))
