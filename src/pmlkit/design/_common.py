"""Shared machinery of the designers: HiGHS calls, row repair, certification.

Certification: every designer computes the exact worst-case eps of the matrix it returns
over the set it was designed for with :func:`pmlkit.worstcase.leakage_capacity`
(Def. localcap) and raises :class:`~pmlkit.errors.CertificationError` unless
:func:`pmlkit.worstcase.certifies` accepts it: the computed worst case must be below the
target by more than its rounding margin (a value within rounding of eps counts against
the certificate, never for it).

LP repair. HiGHS returns vertices that violate equalities by up to its feasibility
tolerance (we ask for 1e-10). LP-based designers clip negative entries to 0 and divide each
row by its sum. Row rescaling by factors ``1 + d_i`` changes any PML ratio by at most
``(1 + max d)/(1 + min d)``, i.e. eps by about ``2 max|d_i|`` (``~2e-10``), so
:func:`solve_certified` designs at ``eps - CERTIFY_TOL`` (``1e-9``) first, then at
``eps - 1e-8``, ``eps - 1e-6`` and ``eps - 1e-4`` (:data:`MARGINS`; the margin used is
recorded as ``design_eps``), and raises :class:`CertificationError` only if all fail.
Closed forms that are tight at their eps are built at :func:`closed_form_eps` (a relative
``~1e-11`` below it) for the same reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import CertificationError, InfeasibleError, PMLError
from ..mechanism import Mechanism
from ..worstcase import CERTIFY_TOL, certifies

if TYPE_CHECKING:
    from ..sets import UncertaintySet

__all__ = ["CERTIFY_TOL", "EPS_CAP", "MARGINS", "certify", "closed_form_eps", "exp_capped",
           "repair_rows", "solve_certified", "solve_lp"]

#: LP and extreme-ray designs use ``min(eps, EPS_CAP)``: since ``M(30, P)`` is a subset of
#: ``M(eps, P)`` for ``eps >= 30``, the result is still certified at eps; the designs differ
#: only through likelihood ratios above ``e^30 ~ 1.1e13`` (priors with entries below
#: ~1e-13, or zero-probability categories of a set), and without the cap the LP
#: coefficients would exceed what HiGHS handles (it treats 1e20 as infinite) or overflow.
EPS_CAP = 30.0


def exp_capped(eps: float) -> float:
    """``e^min(eps, EPS_CAP)`` (never overflows).

    Examples
    --------
    >>> exp_capped(0.0), exp_capped(1000.0) == exp_capped(EPS_CAP)
    (1.0, True)
    """
    return math.exp(min(eps, EPS_CAP))


#: Margins tried in turn by :func:`solve_certified` (design at ``eps - margin``).
MARGINS = (CERTIFY_TOL, 1e-8, 1e-6, 1e-4)


def closed_form_eps(eps: float, n: int) -> float:
    """The eps a closed-form design that is tight at its eps is built at: ``eps`` lowered by
    ``2^-36 max(1, eps) + 2^-44 n`` (``~1.5e-11`` for small ``n``), at least 0.

    The exact worst case of a tight closed form equals its eps, so its computed value ties
    eps and cannot certify it (:func:`pmlkit.worstcase.certifies`); this lowers the design
    point by more than the certification margin (``2^-44 eps + 2^-48 (|log top| +
    |log qmin| + N + 1)``, with ``|log x| <= 745``) plus the closed form's own rounding.

    Examples
    --------
    >>> 0 < 1.0 - closed_form_eps(1.0, 2) < 1e-10, closed_form_eps(0.0, 5)
    (True, 0.0)
    """
    return max(eps - (2.0**-36 * max(1.0, eps) + 2.0**-44 * n), 0.0)

HIGHS_OPTIONS = {
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
}


def floor_repair(w: NDArray[np.float64], eps: float) -> NDArray[np.float64] | None:
    """Raise every entry of each column to at least ``e^-eps`` times the column's maximum,
    taking the added mass from each row's largest entry (rows keep summing to 1).

    Then ``min_i W[i, j] >= e^-eps max_i W[i, j]`` for every column, so
    ``max_i W[i, j] <= e^eps min_Q Q . W[:, j]`` for EVERY distribution ``Q``: certified over
    any set. Used for large eps, where the exact optimum has entries of order ``e^-eps``
    that the LP cannot resolve (HiGHS' absolute tolerance). Valid when the moved mass
    cannot push a row's largest entry below its column's floor: ``eps >= log(M (M + 1))``;
    returns ``None`` otherwise."""
    n, m = w.shape
    if eps < math.log(m * (m + 1.0)):
        return None
    # tight at eps: the floor is set a rounding margin above e^-eps (closed_form_eps)
    floor = w.max(axis=0) * math.exp(-min(closed_form_eps(eps, n), 700.0))
    add = np.maximum(floor[None, :] - w, 0.0)
    out = w + add
    k = np.argmax(w, axis=1)
    out[np.arange(n), k] -= add.sum(axis=1)
    return np.asarray(out, dtype=np.float64)


def solve_certified(build: Callable[[float], NDArray[np.float64]], uset: UncertaintySet,
                    eps: float, *,
                    what: str) -> tuple[NDArray[np.float64], float]:
    """Run ``build(eps_design)`` for ``eps_design = max(eps - margin, 0)`` over
    :data:`MARGINS` until the exact worst case over ``uset`` certifies ``eps``
    (:func:`pmlkit.worstcase.certifies`: below it by more than its rounding margin);
    for large eps, a solution that fails is repaired with :func:`floor_repair` first.

    Returns the matrix and the eps it was designed at; raises :class:`CertificationError`
    if nothing certifies.

    Examples
    --------
    Binary randomized response at ``e^eps = 2`` has worst case ``log 2`` over every prior,
    so it certifies ``log 2 + 1e-6`` at the first margin:

    >>> import numpy as np
    >>> from pmlkit.sets import L1Ball
    >>> rr = np.array([[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    >>> w, designed_at = solve_certified(lambda e: rr, L1Ball([0.5, 0.5], 1.0),
    ...                                  np.log(2) + 1e-6, what="example")
    >>> print(designed_at == np.log(2) + 1e-6 - MARGINS[0])
    True
    """
    from ..worstcase import leakage_capacity

    cert = math.nan
    for margin in MARGINS:
        ed = max(eps - margin, 0.0)
        w = build(ed)
        if certifies(w, uset, eps):
            return w, ed
        cert = float(leakage_capacity(w, uset))
        fixed = floor_repair(w, eps)
        if fixed is not None and certifies(fixed, uset, eps):
            return fixed, ed
    raise CertificationError(
        f"{what}: the designed mechanism's worst-case eps over the set is {cert!r}, above "
        f"the target eps {eps!r} even when designed at eps - {MARGINS[-1]:g}")


def solve_lp(c: ArrayLike, *, A_ub: Any = None, b_ub: ArrayLike | None = None,
             A_eq: Any = None, b_eq: ArrayLike | None = None, bounds: Any = (0, None),
             what: str = "design LP") -> NDArray[np.float64]:
    """Minimise ``c @ x`` with HiGHS; raise :class:`InfeasibleError` if infeasible.

    Returns the primal solution. Unboundedness or a solver failure is an internal error
    (the designers' LPs are bounded by construction) and raises ``PMLError``.

    Examples
    --------
    >>> import numpy as np
    >>> print(np.round(solve_lp([1.0, 2.0], A_eq=[[1.0, 1.0]], b_eq=[1.0]), 6))
    [1. 0.]
    """
    from scipy.optimize import linprog

    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                  method="highs", options=dict(HIGHS_OPTIONS))
    if res.status == 2:
        # tight tolerances can make HiGHS declare nearly parallel columns infeasible;
        # retry with its defaults before concluding (the result is certified anyway)
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                      method="highs")
    if res.status == 2:
        raise InfeasibleError(f"{what} is infeasible: {res.message}")
    if res.status != 0 or res.x is None:
        raise PMLError(f"{what} failed (HiGHS status {res.status}): {res.message}")
    return np.asarray(res.x, dtype=np.float64)


#: A column whose largest entry is below this holds only solver noise and is removed (such
#: a column, non-zero on a few rows only, could be emptied by a distribution of the set:
#: infinite leakage). Smaller legitimate entries of other columns are kept: at large eps a
#: column may rightly span ratios up to e^30.
NOISE_COLUMN = 1e-9


def repair_rows(w: NDArray[np.float64], *, tol: float = 1e-6) -> NDArray[np.float64]:
    """Clip negative LP noise to 0, remove noise-only columns (max entry below
    :data:`NOISE_COLUMN`, set to 0 so that the output alphabet keeps its size) and divide
    rows by their sums.

    Raises ``PMLError`` if a row sum is further than ``tol`` from 1 (a solver failure,
    never expected).

    Examples
    --------
    >>> import numpy as np
    >>> print(repair_rows(np.array([[0.5 + 1e-11, 0.5], [-1e-12, 1.0]])))
    [[0.5 0.5]
     [0.  1. ]]
    """
    w = np.where(w < 0, 0.0, w)
    w[:, w.max(axis=0) < NOISE_COLUMN] = 0.0
    s = w.sum(axis=1)
    if np.any(np.abs(s - 1.0) > tol):
        raise PMLError(f"LP solution rows sum to {s.min()!r}..{s.max()!r}, not 1: "
                       "solver failure")
    return np.asarray(w / s[:, None], dtype=np.float64)


def drop_empty_columns(w: NDArray[np.float64], *, tol: float = 1e-13
                       ) -> NDArray[np.float64]:
    """Remove columns whose entries are all below ``tol`` (outputs that never occur)."""
    keep = w.max(axis=0) > tol
    if not keep.any():  # pragma: no cover - rows sum to 1
        raise PMLError("every column of the designed mechanism is empty")
    w = w[:, keep]
    return np.where(w < tol, 0.0, w)


def certify(matrix: NDArray[np.float64], uset: UncertaintySet, eps: float, *,
            designer: str,
            parameters: Mapping[str, Any], input_labels: Sequence[Any] | None = None,
            output_labels: Sequence[Any] | None = None, basis: str | None = None,
            statement: str = "") -> Mechanism:
    """Build the :class:`Mechanism`, certified over ``uset`` with ``leakage_capacity``.

    The mechanism carries a :class:`pmlkit.guarantee.PMLGuarantee` over ``uset`` whose
    ``certified_eps`` is the worst case computed here and whose ``eps`` is
    ``parameters["eps"]``; ``basis`` is ``"sample"`` when ``parameters`` records ``delta``,
    ``m`` and ``confidence``, else the given ``basis`` (default ``"given"``). The rest of
    ``parameters`` becomes its :class:`~pmlkit.guarantee.Provenance`.

    Raises
    ------
    CertificationError
        Unless ``leakage_capacity(matrix, uset)`` is below ``eps`` by more than its rounding
        margin (:func:`pmlkit.worstcase.certifies`).

    Examples
    --------
    Binary randomized response at ``e^eps = 2`` leaks ``log 2`` under every prior (it
    certifies any eps safely above ``log 2``, not the float ``log 2`` itself, a tie):

    >>> import numpy as np
    >>> from pmlkit.sets import L1Ball
    >>> rr = np.array([[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    >>> m = certify(rr, L1Ball([0.5, 0.5], 1.0), np.log(2) + 1e-9, designer="example",
    ...             parameters={}, input_labels=["no", "yes"])
    >>> print(round(m.certified_eps, 6), m.output_labels)
    0.693147 ('no', 'yes')
    """
    from ..mechanism import typed_description
    from ..worstcase import leakage_capacity

    cert = float(leakage_capacity(matrix, uset))
    if not certifies(matrix, uset, eps):
        raise CertificationError(
            f"{designer}: the designed mechanism's worst-case eps over the set is {cert!r}, "
            f"above the target eps {eps!r} or within its rounding margin of it (a tie "
            f"counts against the certificate); refusing to return it")
    n, m = matrix.shape
    if output_labels is None and input_labels is not None and m == n:
        output_labels = input_labels
    g, prov = typed_description(n, designer=designer, parameters=parameters,
                                uncertainty_set=uset, certified_eps=cert,
                                basis=basis or "given", statement=statement)
    mech = Mechanism(matrix, tuple(input_labels) if input_labels is not None else (),
                     tuple(output_labels) if output_labels is not None else (),
                     guarantee=g, provenance=prov)
    # the worst case over the guarantee's set was just computed exactly
    object.__setattr__(mech, "_certified", True)
    return mech
