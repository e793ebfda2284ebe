"""Optimal mechanisms for linear utilities: one LP over the robust polytope (HiGHS).

A linear utility is an expected gain ``U(W, p) = sum_i p_i sum_j g[i, j] W[i, j]``; the
identity gain is ``P[Y = X]`` ("accuracy"), ``g = -(1 - I)`` is minus the Hamming
distortion. Over a polytope of mechanisms its maximum is attained at a vertex and found
exactly by an LP.

The LP is built sparsely (``O(N M)`` non-zeros, see :mod:`pmlkit.design.polytope`: the
constraint matrices are assembled as COO triplets in one vectorised pass) and solved by
HiGHS. Its size is inherent (``N M`` entries of ``W``, about ``2 N M`` or ``3 N M``
constraints), so large alphabets cost seconds to minutes; see
``benchmarks/bench_linear_design.py`` for measured times.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_distribution, check_eps, check_prior_matches, fmt
from ..errors import ValidationError
from ._common import HIGHS_OPTIONS, repair_rows, solve_lp
from .polytope import MechanismPolytope, exact_polytope, robust_polytope

__all__ = ["linear_design_matrix", "mechanism_polytope"]


def mechanism_polytope(uset: Any, eps: float, *, n_outputs: int | None = None
                       ) -> MechanismPolytope:
    """``M(eps, set)``: Prop. LCCP's 2NM form for an l1-ball with ``beta <= 2 p_min``
    (:func:`robust_polytope`), else the exact dual form (:func:`exact_polytope`)."""
    from ..sets import L1Ball

    if isinstance(uset, L1Ball) and uset.radius <= 2 * float(np.min(uset.center)):
        return robust_polytope(uset.center, eps, uset.radius, n_outputs=n_outputs)
    return exact_polytope(uset, eps, n_outputs=n_outputs)


def gain_matrix(gain: Any, n: int) -> np.ndarray:
    """Validate a gain matrix ``(N, M)``; ``"accuracy"`` is the identity."""
    if isinstance(gain, str):
        if gain == "accuracy":
            return np.eye(n)
        raise ValidationError(f"gain must be 'accuracy' or an N x M array, got {gain!r}")
    try:
        g = np.asarray(gain, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"gain must be an N x M array of numbers, got {fmt(gain)}") \
            from exc
    if g.ndim != 2 or g.shape[0] != n or g.shape[1] < 1:
        raise ValidationError(f"gain must have shape ({n}, M), got shape {g.shape}")
    if not np.isfinite(g).all():
        raise ValidationError("gain must be finite (no NaN or inf)")
    return g


def linear_design_matrix(uset: Any, prior: Any, eps: Any, gain: Any = "accuracy"
                         ) -> np.ndarray:
    """The matrix maximising ``sum_i p_i sum_j g[i, j] W[i, j]`` over ``M(eps, set)``.

    Solved at ``eps`` and repaired (see :mod:`pmlkit.design._common`); not certified here
    (the callers certify, through ``solve_certified``). ``prior`` is the distribution the utility is
    evaluated at (the estimate).

    HiGHS settings (:func:`_highs_options`): primal feasibility to ``1e-10`` always (the
    released matrix must satisfy the constraints before certification); dual feasibility
    (optimality of the reduced costs) to ``1e-10`` for the 2NM form and to HiGHS'
    default ``1e-7`` for the exact dual forms, where it halves the simplex iterations at
    ``N = 200`` for the same optimum (measured in ``benchmarks/bench_linear_design.py``;
    the tests compare the values with the tight settings to ``1e-7`` relative)."""
    eps = check_eps(eps)
    p = as_distribution(prior, "prior")
    if p.size != uset.n:
        raise ValidationError(
            f"prior has {p.size} entries but the uncertainty set is on {uset.n} points")
    g = gain_matrix(gain, p.size)
    w = repair_rows(_full_lp_design(uset, p, eps, g))
    check_prior_matches(w, p)
    return w


#: HiGHS options of the linear design LP over the exact dual forms: primal feasibility as
#: tight as the other designers (the repaired matrix is certified at ``eps + 1e-9``), dual
#: feasibility at HiGHS' default. The 2NM form keeps both tolerances at 1e-10: there the
#: looser dual tolerance made HiGHS slower (more iterations) in the benchmark.
_EXACT_FORM_OPTIONS = {"primal_feasibility_tolerance": 1e-10}


def _highs_options(poly: MechanismPolytope) -> dict[str, Any]:
    """The HiGHS options for the design LP over ``poly`` (see :func:`linear_design_matrix`)."""
    if poly.eps_prime is not None:  # the 2NM form
        return dict(HIGHS_OPTIONS)
    return dict(_EXACT_FORM_OPTIONS)


def _full_lp_design(uset: Any, p: np.ndarray, eps: float, g: np.ndarray, *,
                    options: dict[str, Any] | None = None) -> np.ndarray:
    """The polytope LP (:func:`mechanism_polytope`) in one HiGHS call; the unrepaired
    ``W``. ``options`` replaces :func:`_highs_options` (the benchmark compares)."""
    from scipy.optimize import linprog

    poly = mechanism_polytope(uset, eps, n_outputs=g.shape[1])
    c = np.zeros(poly.n_vars)
    c[poly.layout["W"]] = -(p[:, None] * g).ravel()
    what = f"linear-utility design LP ({poly.form})"
    opts = _highs_options(poly) if options is None else dict(options)
    res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                  bounds=poly.bounds, method="highs", options=opts)
    if res.status == 0 and res.x is not None:
        return poly.matrix(res.x)
    # anything else: the shared solver path (tight tolerances, then HiGHS' defaults,
    # InfeasibleError / PMLError as every designer)
    return poly.matrix(solve_lp(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq,
                                b_eq=poly.b_eq, bounds=poly.bounds, what=what))

