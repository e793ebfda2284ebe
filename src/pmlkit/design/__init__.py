"""Optimal privacy mechanisms under distribution uncertainty (math §5).

- baselines: :func:`randomized_response`, :func:`identity_mechanism`, the fixed-prior
  closed forms :func:`extremal_high_privacy`, :func:`extremal_binary`, :func:`k_singular`
  (:func:`extremal_mechanism` picks the one that applies);
- :func:`optimal_binary`: Thm optimalbinary (binary data, l1 uncertainty);
- :func:`robust_polytope` (Prop. LCCP) and :func:`exact_polytope` (any radius, boxes,
  vertex sets): the robust polytope as linear constraints;
- :func:`optimal_mechanism`, :func:`optimal_mechanism_for_set`: exact optimal designs for
  linear utilities (the polytope LP, solved by column generation over the output columns:
  hundreds of categories in seconds, :mod:`pmlkit.design.linear`) and sub-convex ones
  (column generation over the extreme rays, :mod:`pmlkit.design.colgen`);
- :func:`design_from_samples`: samples -> set -> certified mechanism + :class:`Guarantee`.

Every designer certifies what it returns with :func:`pmlkit.worstcase.leakage_capacity`
(:func:`certify`: a matrix and a set in, a certified :class:`~pmlkit.Mechanism` out).
"""

from __future__ import annotations

from ._common import certify
from .baselines import (
    extremal_binary,
    extremal_high_privacy,
    extremal_mechanism,
    identity_mechanism,
    k_singular,
    randomized_response,
)
from .binary import optimal_binary
from .guarantee import DesignResult, Guarantee
from .maxmin import maxmin_mechanism
from .pipeline import design_from_samples, optimal_mechanism, optimal_mechanism_for_set
from .polytope import MechanismPolytope, eps_prime, exact_polytope, robust_polytope
from .subconvex import MAX_EXACT_N

__all__ = [
    "MAX_EXACT_N",
    "DesignResult",
    "Guarantee",
    "MechanismPolytope",
    "certify",
    "design_from_samples",
    "eps_prime",
    "exact_polytope",
    "extremal_binary",
    "extremal_high_privacy",
    "extremal_mechanism",
    "identity_mechanism",
    "k_singular",
    "maxmin_mechanism",
    "optimal_binary",
    "optimal_mechanism",
    "optimal_mechanism_for_set",
    "randomized_response",
    "robust_polytope",
]
