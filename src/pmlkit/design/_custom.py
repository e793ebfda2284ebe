"""The design for a utility object (private to :mod:`pmlkit.design`): a ``utility=`` with
``value(w, p)`` and ``design_matrix(rays, p)``, such as
:class:`pmlkit.design.estimation.EstimationError`, designed over the enumerated extreme
rays and, when it has ``design_over_set``, over square mechanisms of any size; with values
published, its candidates are compared as released (:mod:`pmlkit.design._publish`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..errors import PMLError, PMLWarning
from ._candidates import (
    Utility,
    certifies_over,
    exact_rays,
    fallback_design,
    fixed_prior_subconvex,
)
from ._common import closed_form_eps, solve_certified
from ._publish import published_candidates
from .polytope import eps_prime
from .subconvex import MAX_EXACT_N

__all__ = ["FW_STEP_RATE", "custom_design"]

#: Work units of one Frank-Wolfe step of the estimation design's local search, per variable
#: of its LP (``N^2`` and the worst-case rows).
FW_STEP_RATE = 2.5e-4


def custom_design(uset: Any, p: np.ndarray, eps: float, util: Utility, *, designer: str,
                   max_work: float, max_seconds: float = math.inf,
                   publish_values: bool = False) -> tuple[np.ndarray, float, str]:
    """Design for a utility object (``value`` and ``design_matrix`` over candidate rays)
    over the enumerated extreme rays (``N <= MAX_EXACT_N``); a utility object that also
    has ``design_over_set`` (the estimation error) is designed by it as well (any N and
    set kind) and the better certified matrix is kept. Otherwise, beyond
    ``MAX_EXACT_N``, the best certified candidate (with a warning).

    With ``publish_values`` every candidate is compared as it will be released: one with
    more outputs than inputs by its published channel (:func:`_published_candidate`)."""
    import time

    n = p.size
    from .estimation import LOCAL_MAX_ITER

    deadline = time.monotonic() + max_seconds
    steps_budget = LOCAL_MAX_ITER
    if math.isfinite(max_work):
        # the local searches' steps from the work budget (counted, so deterministic)
        from .linear import mechanism_polytope

        nv = mechanism_polytope(uset, eps, n_outputs=n).n_vars
        steps_budget = max(1, int(max_work / (FW_STEP_RATE * nv)))
    rays_fn = exact_rays(uset, p) if n <= MAX_EXACT_N else None
    cands: list[tuple[float, np.ndarray, float, str]] = []
    if rays_fn is not None:
        nrays = [0]

        def build(e: float) -> np.ndarray:
            rays = rays_fn(e)
            nrays[0] = rays.shape[1]
            return np.asarray(util.custom.design_matrix(rays, p))

        w, ed = solve_certified(build, uset, eps, what=designer)
        cands.append((util.value(w, p), w, ed, f"{util.name} over the extreme rays "
                      f"({nrays[0]} candidate rays, HiGHS)"))
        from ..sets import L1Ball

        if isinstance(uset, L1Ball) and uset.radius > 0:
            # the paper's fixed-prior design at eps' is certified over the ball: a
            # candidate too (the Frank-Wolfe above stops at a relative gap)
            ep = eps_prime(closed_form_eps(eps, p.size), uset.radius)
            if ep >= 0:
                w_ep = fixed_prior_subconvex(np.asarray(uset.center), p, ep, util)
                if w_ep is not None and certifies_over(w_ep, uset, eps):
                    cands.append((util.value(w_ep, p), w_ep, eps,
                                  f"{util.name} over the fixed-prior extreme rays at "
                                  f"eps' = {ep:.6g} (HiGHS)"))
    over_set = getattr(util.custom, "design_over_set", None)
    if over_set is not None:
        import inspect

        kwargs: dict[str, Any] = {"deadline": deadline}
        if "max_steps" in inspect.signature(over_set).parameters and math.isfinite(max_work):
            kwargs["max_steps"] = steps_budget

        def build_set(e: float) -> np.ndarray:
            return np.asarray(over_set(uset, p, e, **kwargs))

        try:
            w, ed = solve_certified(build_set, uset, eps, what=designer)
        except PMLError:
            if not cands:
                raise
        else:
            steps = getattr(util.custom, "last_steps", None)
            start = getattr(util.custom, "last_start", "") or "PML randomized response"
            cands.append((util.value(w, p), w, ed,
                          f"{util.name}: {start} refined by a local "
                          f"search over the square eps-PML polytope ({steps} Frank-Wolfe "
                          "steps, HiGHS)"))
    if publish_values and cands:
        cands = published_candidates(cands, uset, p, eps, util, deadline=deadline,
                                      max_steps=steps_budget)
    if cands:
        cands.sort(key=lambda c: -c[0])
        return cands[0][1], cands[0][2], cands[0][3]
    w, method = fallback_design(uset, p, eps, util)
    why = f"N > {MAX_EXACT_N}" if n > MAX_EXACT_N else "no exact rays for this set kind"
    warnings.warn(f"{designer}: no exact optimum for utility {util.name!r} ({why}); "
                  f"returning the best certified candidate: {method}", PMLWarning,
                  stacklevel=4)
    return w, eps, method
