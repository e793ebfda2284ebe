"""Worst-case utility designs: forbid the outputs whose utility is too low.

A utility matrix ``u`` (``N x M``: ``u[x, y]`` is the value of releasing ``y`` when the
input is ``x``) judges a mechanism by the worst pair it can produce::

    U_min(W) = min { u[x, y] : W[x, y] > 0 }.

Unlike local differential privacy, PML allows zeros in a mechanism (a column may be zero on
some rows as long as ``max_x W[x, y] <= e^eps P_Y(y)``), so low-utility pairs can be ruled
out entirely. For a level ``tau``, a mechanism with ``U_min >= tau`` exists iff the linear
feasibility problem

    W row-stochastic,  W[x, y] = 0 wherever u[x, y] < tau,  W eps-PML (at the prior, or
    for every distribution of a set: the linear constraints of
    :func:`pmlkit.design.linear.mechanism_polytope`)

has a solution. Feasibility can only be lost as ``tau`` grows (fewer allowed pairs), and the
optimum is one of the distinct values of ``u``, so :func:`maxmin_mechanism` bisects over
the sorted values with one LP (HiGHS) per level. Among the mechanisms at the optimal
level it returns one maximising the expected utility ``sum_x p(x) sum_y u[x, y] W[x, y]``.

HiGHS leaves entries of order ``1e-15`` where the optimum has zeros; such an entry in an
otherwise empty column reads as an output with a huge leakage. Entries below
:data:`DUST` are zeroed, rows renormalised, and the result certified exactly
(:func:`pmlkit.design.certify`, designed at ``eps`` minus a small margin if needed).

Reference: C. Song, T. J. Oechtering, "Worst-Case Utility Privacy Mechanism via Pointwise
Maximal Leakage", arXiv 2605.19474 (only its abstract was available here: its low-complexity
"utility-safe" construction is not implemented; the exact LP scan above is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import as_distribution, check_eps, fmt
from ..errors import CertificationError, InfeasibleError, ValidationError
from ._common import HIGHS_OPTIONS, MARGINS, certify
from .guarantee import DesignResult

if TYPE_CHECKING:
    from ..mechanism import Mechanism
    from ..sets import UncertaintySet

__all__ = ["DUST", "check_utility_matrix", "maxmin_from_samples", "maxmin_mechanism",
           "maxmin_tradeoff", "read_utility_matrix", "worst_case_utility"]

#: Entries of a solved mechanism below this are solver dust and set to zero.
DUST = 1e-12


def check_utility_matrix(utility: ArrayLike, n: int | None = None) -> NDArray[np.float64]:
    """A finite 2-D utility matrix (rows = inputs, columns = outputs).

    Examples
    --------
    >>> check_utility_matrix([[1, 0], [0, 1]]).shape
    (2, 2)
    """
    try:
        u = np.array(utility, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(
            f"utility must be a 2-D array of real numbers, got {fmt(utility)}") from None
    if u.ndim != 2 or u.shape[0] < 1 or u.shape[1] < 1:
        raise ValidationError(
            f"utility must be a non-empty 2-D matrix (inputs x outputs), got shape {u.shape}")
    if not np.isfinite(u).all():
        raise ValidationError("utility must hold only finite values, got NaN or infinity")
    if n is not None and u.shape[0] != n:
        raise ValidationError(
            f"utility has {u.shape[0]} rows but the prior has {n} entries; they must match")
    return u


def worst_case_utility(mechanism: ArrayLike, utility: ArrayLike) -> float:
    """``min { u[x, y] : W[x, y] > 0 }``: the worst utility the mechanism can produce.

    Examples
    --------
    >>> worst_case_utility([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], [[3, 2, 0], [0, 1, 5]])
    1.0
    """
    from .._validation import as_mechanism

    w = as_mechanism(mechanism)
    u = check_utility_matrix(utility, w.shape[0])
    if u.shape != w.shape:
        raise ValidationError(
            f"utility has shape {u.shape} but the mechanism {w.shape}; they must match")
    return float(u[w > 0].min())


def _polytope(uset: Any, eps: float, m: int) -> Any:
    from .linear import mechanism_polytope

    return mechanism_polytope(uset, eps, n_outputs=m)


def _solve(poly: Any, allowed: NDArray[np.bool_], objective: NDArray[np.float64] | None
           ) -> NDArray[np.float64] | None:
    """One LP over the polytope with the forbidden entries fixed at zero: ``None`` if
    infeasible, else the ``W`` block (maximising ``objective . W`` when given)."""
    from scipy.optimize import linprog

    bounds = np.array(poly.bounds, dtype=np.float64, copy=True)
    wslice = poly.layout["W"]
    wb = bounds[wslice]
    wb[~allowed.ravel(), 1] = 0.0
    bounds[wslice] = wb
    c = np.zeros(poly.n_vars)
    if objective is not None:
        c[wslice] = -objective.ravel()
    res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                  bounds=bounds, method="highs", options=dict(HIGHS_OPTIONS))
    if res.status not in (0, 2):
        # at the edge of feasibility the tight tolerances can leave HiGHS undecided: retry
        # with its defaults; still undecided counts as infeasible (a lower level or a
        # larger eps: the side of the guarantee; designs are certified anyway)
        res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                      bounds=bounds, method="highs")
    if res.status != 0 or res.x is None:
        return None
    return np.asarray(poly.matrix(res.x), dtype=np.float64)


def _clean(w: NDArray[np.float64]) -> NDArray[np.float64]:
    """Zero the dust (entries below :data:`DUST`, negatives) and renormalise the rows."""
    w = np.where(w < DUST, 0.0, w)
    return np.asarray(w / w.sum(axis=1, keepdims=True), dtype=np.float64)


def maxmin_mechanism(utility: ArrayLike, prior: ArrayLike, eps: float, *,
                     uncertainty_set: UncertaintySet | None = None,
                     input_labels: Any = None, output_labels: Any = None) -> Mechanism:
    """The eps-PML mechanism maximising the worst utility ``min {u[x, y] : W[x, y] > 0}``.

    Parameters
    ----------
    utility
        ``N x M`` matrix; the outputs of the mechanism are its columns.
    prior
        Length-``N`` distribution: the prior the guarantee is for (without
        ``uncertainty_set``), and where the expected utility that breaks ties is evaluated.
    eps
        Target PML eps (natural log).
    uncertainty_set
        Optional :mod:`pmlkit.sets` set: the mechanism is then eps-PML for every
        distribution in it (robust design).

    Returns
    -------
    Mechanism
        Certified over the prior (``basis="prior"``) or the set; ``parameters`` (its
        provenance) record ``worst_case_utility`` and ``levels_tested``.

    Raises
    ------
    InfeasibleError
        If no eps-PML mechanism with outputs among the columns exists (for a set whose
        distributions allow no such mechanism at this eps).

    Examples
    --------
    Three ordered values with utility ``-|x - y|`` at the uniform prior and ``eps = log 2``:
    the identity (utility 0) needs ``log 3``, but never moving a value by more than one step
    is possible. Among such mechanisms the most accurate on average is returned; its column
    maxima are exactly twice the output probabilities ``(1/2, 0, 1/2)``:

    >>> import math
    >>> u = [[0.0, -1.0, -2.0], [-1.0, 0.0, -1.0], [-2.0, -1.0, 0.0]]
    >>> mech = maxmin_mechanism(u, [1 / 3, 1 / 3, 1 / 3], math.log(2))
    >>> print(mech.matrix.round(4))
    [[1.  0.  0. ]
     [0.5 0.  0.5]
     [0.  0.  1. ]]
    >>> worst_case_utility(mech, u), mech.certified_eps <= math.log(2) + 1e-9
    (-1.0, True)
    """
    return _maxmin(utility, prior, eps, uncertainty_set, input_labels=input_labels,
                   output_labels=output_labels)


def _maxmin(utility: ArrayLike, prior: ArrayLike, eps: float, uncertainty_set: Any, *,
            input_labels: Any = None, output_labels: Any = None,
            extra: dict[str, Any] | None = None, statement: str = "") -> Mechanism:
    from ..sets import L1Ball
    from ..worstcase import CERTIFY_TOL, check_uncertainty_set, leakage_capacity

    eps = check_eps(eps)
    p = as_distribution(prior, "prior")
    u = check_utility_matrix(utility, p.size)
    n, m = u.shape
    if uncertainty_set is None:
        uset: Any = L1Ball(p, 0.0)
        basis = "prior"
    else:
        uset = check_uncertainty_set(uncertainty_set, n, inputs="utility has {n} rows")
        basis = "given"
    objective = p[:, None] * u
    levels = np.unique(u)
    # a row needs one allowed output: the level is at most min_x max_y u[x, y]
    levels = levels[levels <= u.max(axis=1).min()]
    tested = 0

    def feasible(level: float, e: float) -> NDArray[np.float64] | None:
        nonlocal tested
        tested += 1
        return _solve(_polytope(uset, e, m), u >= level, None)

    lo, hi = 0, levels.size - 1  # levels[lo] is feasible when anything is
    if feasible(float(levels[lo]), eps) is None:
        raise InfeasibleError(
            f"no mechanism with outputs among the {m} utility columns is eps-PML at "
            f"eps = {eps!r} over the set")
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if feasible(float(levels[mid]), eps) is not None:
            lo = mid
        else:
            hi = mid - 1
    # the best level, certified exactly (or the next one down if no margin certifies)
    for k in range(lo, -1, -1):
        allowed = u >= levels[k]
        for margin in MARGINS:
            e = max(eps - margin, 0.0)
            w = _solve(_polytope(uset, e, m), allowed, objective)
            tested += 1
            if w is None:
                break
            w = _clean(w)
            if float(leakage_capacity(w, uset)) <= eps + CERTIFY_TOL:
                worst = float(u[w > 0].min())
                params = {"eps": eps, "method": "threshold bisection, one LP per level "
                          "(HiGHS), dust zeroed and certified",
                          "utility": "worst-case utility (min u over produced pairs)",
                          "utility_value": worst, "worst_case_utility": worst,
                          "optimality": "exact" if e == eps else f"exact at eps = {e!r}",
                          "prior": p.tolist(), "levels_tested": tested, "designed_at": e,
                          **(extra or {})}
                return certify(w, uset, eps, designer="maxmin_mechanism", parameters=params,
                               input_labels=input_labels, output_labels=output_labels,
                               basis=None if extra else basis, statement=statement)
    raise CertificationError(  # pragma: no cover - level 0 keeps every pair
        f"maxmin_mechanism: no design certified at eps = {eps!r}")


def read_utility_matrix(path: str) -> NDArray[np.float64]:
    """Read a utility matrix file: ``.npy`` (a 2-D array) or CSV/text (numbers separated by
    commas or whitespace, one row per input category in the design's category order, one
    column per output; lines starting with ``#`` are comments).

    Raises
    ------
    DataError
        If the file cannot be read or does not hold a finite 2-D matrix.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "u.csv"
    >>> _ = path.write_text(chr(10).join(["# rows a, b", "0, -1", "-1, 0"]))
    >>> read_utility_matrix(str(path)).tolist()
    [[0.0, -1.0], [-1.0, 0.0]]
    """
    from ..errors import DataError

    try:
        if str(path).endswith(".npy"):
            raw = np.load(path, allow_pickle=False)
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            rows = [line.replace(",", " ").split() for line in text.splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
            raw = np.array([[float(v) for v in r] for r in rows], dtype=np.float64)
    except (OSError, ValueError) as exc:
        raise DataError(f"utility matrix file {str(path)!r} cannot be read as a numeric "
                        f"matrix: {exc}") from None
    try:
        return check_utility_matrix(raw)
    except ValidationError as exc:
        raise DataError(f"utility matrix file {str(path)!r}: {exc}") from None


def maxmin_from_samples(samples: Any, eps: float, delta: float, utility: ArrayLike, *,
                        confidence: str = "l1", categories: Any = None,
                        missing: str = "error") -> DesignResult:
    """:func:`maxmin_mechanism` over the confidence set of a reference sample, with an
    (eps, delta)-PML guarantee as :func:`pmlkit.design.design_from_samples` states it
    (``confidence="l1"``: the l1-ball of radius :func:`pmlkit.l1_radius`; other names go to
    :func:`pmlkit.confidence.confidence_set`). The utility matrix's rows follow the
    estimate's categories (``categories`` if given).

    Examples
    --------
    >>> import numpy as np
    >>> u = -np.abs(np.subtract.outer(np.arange(3), np.arange(3)))
    >>> res = maxmin_from_samples(["a"] * 400 + ["b"] * 350 + ["c"] * 250, 1.0, 1e-3, u)
    >>> res.guarantee.utility_value, res.mechanism.certified_eps <= 1.0 + 1e-9
    (-1.0, True)
    """
    from .._validation import check_delta
    from ..estimation import l1_radius
    from ..sets import L1Ball
    from .pipeline import estimate_for_design

    eps = check_eps(eps)
    delta = check_delta(delta)
    est = estimate_for_design(samples, categories=categories, missing=missing)
    p = np.asarray(est.p, dtype=np.float64)
    u = check_utility_matrix(utility)
    if u.shape[0] != est.n:
        raise ValidationError(
            f"utility has {u.shape[0]} rows but the sample has {est.n} categories "
            f"({', '.join(map(str, est.categories))}); one row per category, in that order")
    uset: Any
    if confidence == "l1":
        uset = L1Ball(p, l1_radius(delta, m=est.m, n=est.n))
        description = ("Weissman et al. l1 deviation bound with phi >= 2 (paper: Theorem 2, "
                       "Section 4.4): P[||P - p_hat||_1 >= beta] <= delta")
    else:
        from ..confidence import confidence_set

        cs = confidence_set(est.counts, delta, confidence=confidence)
        uset, description = cs.set, cs.description
    extra = {"delta": delta, "m": est.m, "confidence": confidence}
    mech = _maxmin(u, p, eps, uset, input_labels=list(est.categories),
                   output_labels=list(est.categories) if u.shape[1] == est.n else None,
                   extra=extra, statement=description)
    return DesignResult.from_mechanism(mech, categories=tuple(est.categories))


def maxmin_tradeoff(utility: ArrayLike, prior: ArrayLike, *,
                    uncertainty_set: UncertaintySet | None = None, eps_max: float = 30.0,
                    tol: float = 1e-9) -> list[tuple[float, float]]:
    """The privacy-utility trade-off of worst-case utility: for every level a mechanism can
    guarantee, the smallest eps at which an eps-PML mechanism (at the prior, or over the
    set) reaches it.

    Feasibility of a level is monotone in eps (the PML constraints loosen), so each level's
    eps is found by bisection on eps with the LP of :func:`maxmin_mechanism`, to ``tol``
    nats, rounded up; a level not reachable at ``eps_max`` gets ``inf``.

    Returns
    -------
    list of (level, eps)
        The distinct values of ``utility`` up to ``min_x max_y u[x, y]``, increasing, each
        with the smallest eps that guarantees it (non-decreasing in the level).

    Examples
    --------
    Three ordered values at the uniform prior: moving by at most one step costs nothing
    (everyone may report the middle value), the identity needs ``log 3``:

    >>> u = [[0.0, -1.0, -2.0], [-1.0, 0.0, -1.0], [-2.0, -1.0, 0.0]]
    >>> [(lvl, round(e, 6)) for lvl, e in maxmin_tradeoff(u, [1 / 3] * 3)]
    [(-2.0, 0.0), (-1.0, 0.0), (0.0, 1.098612)]
    """
    from ..sets import L1Ball
    from ..worstcase import check_uncertainty_set

    p = as_distribution(prior, "prior")
    u = check_utility_matrix(utility, p.size)
    n, m = u.shape
    uset: Any = (L1Ball(p, 0.0) if uncertainty_set is None else
                 check_uncertainty_set(uncertainty_set, n, inputs="utility has {n} rows"))
    top = check_eps(eps_max, "eps_max")
    levels = np.unique(u)
    levels = levels[levels <= u.max(axis=1).min()]
    out: list[tuple[float, float]] = []
    lo_prev = 0.0
    for level in levels:
        allowed = u >= level
        if _solve(_polytope(uset, top, m), allowed, None) is None:
            out.append((float(level), float("inf")))
            lo_prev = top
            continue
        lo, hi = lo_prev, top
        if _solve(_polytope(uset, lo, m), allowed, None) is not None:
            hi = lo
        while hi - lo > tol:
            mid = 0.5 * (lo + hi)
            if _solve(_polytope(uset, mid, m), allowed, None) is not None:
                hi = mid
            else:
                lo = mid
        out.append((float(level), float(hi)))
        lo_prev = hi
    return out
