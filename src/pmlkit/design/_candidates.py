"""The designers' shared parts (private to :mod:`pmlkit.design`): the parsed ``utility=``
argument, the exact candidate rays of a set, the fixed-prior sub-convex optimum, the
certification test and the best certified fallback. :mod:`pmlkit.design.pipeline` (the
front doors) and :mod:`pmlkit.design._custom` (utility objects) build on them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ValidationError
from ._common import closed_form_eps, solve_certified
from .baselines import extremal_mechanism, randomized_response
from .linear import gain_matrix, linear_design_matrix
from .polytope import eps_prime
from .subconvex import (
    MAX_EXACT_N,
    fixed_prior_rays,
    l1_ball_rays,
    ray_lp_matrix,
    ray_values,
    three_level_rays,
)

__all__ = ["BISECT_STEPS", "TIE_MIX", "ThreeLevel", "Utility", "certifies_over", "exact_rays",
           "fallback_design", "fixed_prior_subconvex", "ray_count"]

BISECT_STEPS = 24


class Utility:
    """A parsed ``utility=`` argument."""

    def __init__(self, utility: Any, n: int) -> None:
        self.gain: np.ndarray | None = None
        self.mu: str | Callable[..., Any] | None = None
        # an object with value(w, p) and design_matrix(rays, p), e.g. EstimationError
        self.custom: Any = None
        if hasattr(utility, "design_matrix") and hasattr(utility, "value"):
            self.custom, self.name = utility, str(getattr(utility, "name", "custom"))
        elif isinstance(utility, str):
            if utility == "mutual_information":
                self.mu, self.name = utility, utility
            elif utility == "accuracy":
                self.gain, self.name = np.eye(n), utility
            elif utility == "estimation":
                from .estimation import EstimationError

                self.custom = EstimationError()
                self.name = self.custom.name
            else:
                raise ValidationError(
                    "utility must be 'mutual_information', 'accuracy', 'estimation', an "
                    "N x M gain array or a callable mu(column, prior), got "
                    f"{utility!r}")
        elif callable(utility):
            self.mu = utility
            self.name = getattr(utility, "__name__", "callable")
        else:
            self.gain = gain_matrix(utility, n)
            self.name = "linear gain"

    @property
    def linear(self) -> bool:
        return self.gain is not None

    def value(self, w: np.ndarray, p: np.ndarray) -> float:
        if self.custom is not None:
            return float(self.custom.value(w, p))
        if self.gain is not None:
            if self.gain.shape != w.shape:
                return math.nan
            return float(p @ (self.gain * w).sum(axis=1))
        assert self.mu is not None
        return float(np.sum(ray_values(w, p, self.mu)))


def exact_rays(uset: Any, p: np.ndarray) -> Callable[[float], np.ndarray] | None:
    """The candidate-ray generator for an exact sub-convex design over ``uset``, or
    ``None`` (vertex sets): fixed prior -> :func:`fixed_prior_rays` (``N 2^(N-1)``);
    l1-ball with ``beta <= 2 p_min`` -> :func:`l1_ball_rays` (``~N 2^N``); any other l1-ball
    or a box -> :func:`three_level_rays` (``3^N``)."""
    from ..sets import Box, L1Ball, L1BoxSet

    if isinstance(uset, L1Ball):
        c = np.asarray(uset.center, dtype=np.float64)
        r = float(uset.radius)
        if r == 0:
            return lambda e: fixed_prior_rays(c, e)
        if r <= 2 * float(c.min()):
            return lambda e: l1_ball_rays(c, e, r)
        return ThreeLevel(uset, None)
    if isinstance(uset, Box | L1BoxSet):
        return ThreeLevel(uset, p if uset.contains(p) else None)
    return None


class ThreeLevel:
    """``e -> three_level_rays(uset, e, q0)``, also generated in chunks that a budget can
    stop (:meth:`chunked`)."""

    def __init__(self, uset: Any, q0: np.ndarray | None) -> None:
        from ..sets import Box, L1Ball

        self.uset, self.q0 = uset, q0
        self.aggregated = isinstance(uset, L1Ball | Box)

    def __call__(self, e: float) -> np.ndarray:
        return three_level_rays(self.uset, e, self.q0)

    def chunked(self, e: float, stop: Callable[[int], bool]) -> np.ndarray | None:
        from .subconvex import three_level_rays_until

        return three_level_rays_until(self.uset, e, self.q0, stop)


def fixed_prior_subconvex(c: np.ndarray, p: np.ndarray, eps: float, util: Utility
                           ) -> np.ndarray | None:
    """Exact fixed-prior (at ``c``) sub-convex optimum at ``eps``, or ``None`` if N is too
    large and no closed form applies. Not certified here."""
    if c.size <= MAX_EXACT_N:
        rays = fixed_prior_rays(c, eps)
        if util.custom is not None:
            return np.asarray(util.custom.design_matrix(rays, p))
        return ray_lp_matrix(rays, ray_values(rays, p, util.mu))  # type: ignore[arg-type]
    if np.array_equal(c, p):
        closed = extremal_mechanism(c, eps)
        if closed is not None and closed.guarantee is not None \
                and closed.guarantee.eps <= eps:
            return np.asarray(closed.matrix)
    return None


#: Weight of the constant mechanism mixed into a fixed closed form whose worst case ties
#: eps (see :func:`_subconvex`).
TIE_MIX = 1e-9


def certifies_over(w: np.ndarray, uset: Any, eps: float) -> bool:
    """Whether ``w``'s worst case over the set is safely below eps
    (:func:`pmlkit.worstcase.certifies`: rounding counts against it)."""
    from ..worstcase import certifies

    return certifies(w, uset, eps)


def fallback_design(uset: Any, p: np.ndarray, eps: float, util: Utility
              ) -> tuple[np.ndarray, str]:
    """Best certified candidate (see the module docstring) and its description."""
    from ..sets import L1Ball

    cands: list[tuple[float, np.ndarray, str]] = []
    w, _ = solve_certified(lambda e: linear_design_matrix(uset, p, eps=e, gain="accuracy"),
                           uset, eps, what="linear-utility LP")
    cands.append((util.value(w, p), w, "linear-utility LP (accuracy) over the exact set"))
    center = np.asarray(uset.center) if isinstance(uset, L1Ball) else p
    lo = 0.0
    if isinstance(uset, L1Ball):
        # tight at eps over the ball: built a rounding margin below it
        ep = eps_prime(closed_form_eps(eps, p.size), uset.radius)
        if ep >= 0:
            w_ep = fixed_prior_subconvex(center, p, ep, util)
            if w_ep is not None and certifies_over(w_ep, uset, eps):
                cands.append((util.value(w_ep, p), w_ep,
                               f"fixed-prior design at eps' = {ep:.6g}"))
                lo = ep
    if p.size <= MAX_EXACT_N:
        hi = eps
        best = None
        for _ in range(BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            w_mid = fixed_prior_subconvex(center, p, mid, util)
            assert w_mid is not None
            if certifies_over(w_mid, uset, eps):
                lo, best = mid, w_mid
            else:
                hi = mid
        if best is not None:
            cands.append((util.value(best, p), best,
                          f"fixed-prior design at eps'' = {lo:.6g} (largest whose worst case "
                          "over the set is <= eps, bisection)"))
    if util.custom is not None:
        # randomized response at the largest LDP level whose worst case over the set is
        # <= eps (bisection): full rank, so it identifies P when the others do not
        lo_rr, hi_rr = eps, max(eps, 1.0) * 32.0
        for _ in range(BISECT_STEPS):
            mid = 0.5 * (lo_rr + hi_rr)
            if certifies_over(np.asarray(randomized_response(p.size, mid).matrix), uset, eps):
                lo_rr = mid
            else:
                hi_rr = mid
        w = np.asarray(randomized_response(p.size, lo_rr).matrix)
        cands.append((util.value(w, p), w, f"randomized response at LDP eps {lo_rr:.6g} "
                      "(largest whose worst case over the set is <= eps, bisection)"))
    cands.sort(key=lambda c: -c[0])
    return cands[0][1], cands[0][2]


def ray_count(uset: Any, n: int) -> float:
    """How many candidate rays :func:`exact_rays` would generate (``inf``: none)."""
    from ..sets import Box, L1Ball, L1BoxSet

    if isinstance(uset, L1Ball):
        c = np.asarray(uset.center, dtype=np.float64)
        r = float(uset.radius)
        if r == 0:
            return n * 2.0 ** (n - 1)
        if r <= 2 * float(c.min()):
            return (n + 1) * 2.0 ** n
        return 3.0 ** n
    if isinstance(uset, Box | L1BoxSet):
        return 3.0 ** n
    return math.inf
