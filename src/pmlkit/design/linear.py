"""Optimal mechanisms for linear utilities: an LP over the robust polytope (HiGHS).

A linear utility is an expected gain ``U(W, p) = sum_i p_i sum_j g[i, j] W[i, j]``; the
identity gain is ``P[Y = X]`` ("accuracy"), ``g = -(1 - I)`` is minus the Hamming
distortion. Over a polytope of mechanisms its maximum is attained at a vertex and found
exactly by an LP.

The polytope LP (:mod:`pmlkit.design.polytope`, ``O(N M)`` non-zeros) has ``N M``
entries of ``W`` and two or three times as many constraints: solved whole, ``N = 200``
takes seconds and ``N = 300`` minutes. Its output columns, however, are coupled only by
the row sums, and the optimum uses few of them (the most likely outputs: at ``eps = 1``
three of 50, eight of 500). :func:`linear_design_matrix` therefore solves it by column
generation over the output columns (Dantzig-Wolfe at the level of whole columns): an LP
over a few columns, priced for every other column by closed-form bounds (a fractional
knapsack, :func:`column_price_bound`; over an l1-ball of any radius the one-column LP's
dual, searched in closed form, :func:`ball_price_bound`, which equals the exact price)
and, where they are not conclusive, by one small exact LP per column. The result is the
optimum of the whole LP, certified by LP duality to ``1e-10`` relative;
``benchmarks/bench_linear_design.py`` compares it with the whole LP (``N = 500`` in
about a second at ``eps <= 1``; at ``eps = 3`` the optimum uses 32 outputs and the
restricted LP over the exact l1-ball form takes most of the time).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._deprecation import positional_deprecated, renamed_parameter
from .._validation import as_distribution, check_eps, check_prior_matches
from ..errors import ValidationError
from ..utility import check_gain
from ._common import HIGHS_OPTIONS, exp_capped, repair_rows, solve_lp
from .polytope import MechanismPolytope, exact_polytope, robust_polytope

if TYPE_CHECKING:
    from ..sets import UncertaintySet

__all__ = ["linear_design_matrix", "mechanism_polytope"]


@renamed_parameter(version="0.2", uset="uncertainty_set")
def mechanism_polytope(uncertainty_set: UncertaintySet, eps: float, *, n_outputs: int | None = None
                       ) -> MechanismPolytope:
    """``M(eps, set)`` as linear constraints: Prop. LCCP's 2NM form for an l1-ball with
    ``beta <= 2 p_min`` (:func:`robust_polytope`), else the exact dual form
    (:func:`exact_polytope`).

    Examples
    --------
    A small l1-ball takes the 2NM form (``2 N M`` inequalities):

    >>> from pmlkit.sets import L1Ball
    >>> poly = mechanism_polytope(L1Ball([0.5, 0.3, 0.2], 0.1), 1.0)
    >>> poly.form, poly.A_ub.shape[0]
    ('Prop. LCCP (2NM form)', 18)
    """
    from ..sets import L1Ball

    uset = uncertainty_set
    if isinstance(uset, L1Ball) and uset.radius <= 2 * float(np.min(uset.center)):
        return robust_polytope(uset.center, eps=eps, beta=uset.radius, n_outputs=n_outputs)
    return exact_polytope(uset, eps, n_outputs=n_outputs)


def gain_matrix(gain: ArrayLike | str, n: int) -> NDArray[np.float64]:
    """Validate a gain matrix ``(N, M)``; ``"accuracy"`` is the identity.

    Examples
    --------
    >>> gain_matrix("accuracy", 2)
    array([[1., 0.],
           [0., 1.]])
    """
    return check_gain(gain, n)


@renamed_parameter(version="0.2", uset="uncertainty_set")
@positional_deprecated(version="0.2", allowed=2)
def linear_design_matrix(uncertainty_set: UncertaintySet, prior: ArrayLike, *, eps: float,
                         gain: ArrayLike | str = "accuracy") -> NDArray[np.float64]:
    """The matrix maximising ``sum_i p_i sum_j g[i, j] W[i, j]`` over ``M(eps, set)``.

    Solved at ``eps`` by column generation over the output columns (module docstring),
    optimal for the whole LP to ``1e-10`` relative, and repaired (see
    :mod:`pmlkit.design._common`); not certified here (the callers certify, through
    ``solve_certified``). HiGHS works to primal feasibility ``1e-10``: the released matrix
    must satisfy the constraints before certification.

    Parameters
    ----------
    uncertainty_set
        A :mod:`pmlkit.sets` set (l1-ball, box, their intersection, vertex set).
    prior
        The distribution the utility is evaluated at (the estimate), length N.
    eps
        Target ``>= 0`` (keyword-only; by position deprecated since 0.2).
    gain
        ``"accuracy"`` (the identity) or an ``N x M`` array.

    Returns
    -------
    numpy.ndarray
        The ``N x M`` mechanism (rows sum to 1); outputs the optimum leaves unused are
        zero columns.

    Examples
    --------
    For the fixed prior ``(1/2, 1/2)`` at ``eps = log 1.5`` a column ``(a, 1 - a)`` needs
    ``a <= 1.5 (a + 1 - a) / 2``, so the best accuracy is 3/4:

    >>> import numpy as np
    >>> from pmlkit.sets import L1Ball
    >>> w = linear_design_matrix(L1Ball([0.5, 0.5], 0.0), [0.5, 0.5], eps=np.log(1.5))
    >>> print(np.round(w, 4))
    [[0.75 0.25]
     [0.25 0.75]]
    """
    uset = uncertainty_set
    eps = check_eps(eps)
    p = as_distribution(prior, "prior")
    if p.size != uset.n:
        raise ValidationError(
            f"prior has {p.size} entries but the uncertainty set is on {uset.n} points")
    g = gain_matrix(gain, p.size)
    w = repair_rows(_lp_design(uset, p, eps, g))
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



#: Relative tolerance of the column-generation certificate: the whole LP's optimum is at
#: most ``(1 + PRICING_TOL)`` times the value found (plus ``PRICING_TOL`` times the
#: largest gain, for values near 0).
PRICING_TOL = 1e-10
#: Output columns in the first restricted LP of :func:`_column_generation_design`.
INITIAL_COLUMNS = 8
#: Rounds of column generation before the whole LP is solved instead (a guard: the
#: tests and benchmarks need at most a handful).
MAX_ROUNDS = 50
#: Over an l1-ball, a column whose dual bound (:func:`ball_price_bound`, the exact price
#: up to its search precision) exceeds this times the largest gain enters without the
#: confirming one-column LP; below it (and above the tolerance) the LP decides.
BALL_SURE = 1e-7


def _lp_design(uset: Any, p: np.ndarray, eps: float, g: np.ndarray) -> np.ndarray:
    """The unrepaired optimal ``W``: :func:`_column_generation_design`, or the whole LP
    (:func:`_full_lp_design`) where it does not apply or does not converge."""
    w = _column_generation_design(uset, p, eps, g)
    return _full_lp_design(uset, p, eps, g) if w is None else w


def _set_points(uset: Any, p: np.ndarray) -> np.ndarray:
    """Distributions of ``uset`` (rows): its center or vertices, a point of a box, and the
    prior if the set contains it."""
    from ..sets import Box, VertexSet

    pts = []
    if hasattr(uset, "center"):
        pts.append(np.asarray(uset.center, dtype=np.float64))
    if isinstance(uset, VertexSet):
        pts.extend(np.asarray(uset.vertices, dtype=np.float64))
    if isinstance(uset, Box):
        lo = np.asarray(uset.lower, dtype=np.float64)
        hi = np.asarray(uset.upper, dtype=np.float64)
        room = float((hi - lo).sum())
        q = lo + (1.0 - float(lo.sum())) * (hi - lo) / room if room > 0 else lo
        if uset.contains(q):
            pts.append(q)
    if uset.contains(p):
        pts.append(p)
    return np.array(pts, dtype=np.float64).reshape(-1, p.size)


def column_price_bound(z: ArrayLike, q: ArrayLike, eps: float) -> NDArray[np.float64]:
    """``max z_j . w`` over the eps-PML columns of the fixed prior ``q``, normalised:
    ``{w : 0 <= w_i <= e^eps, q . w = 1}``, for every column ``z_j`` of ``z`` (``N x K``;
    ``q`` a distribution, or ``N x K``: one per column).

    A fractional knapsack, solved greedily: entries with ``q_i = 0`` take ``w_i = e^eps``
    when ``z_i > 0``; the others are filled with ``w_i = e^eps`` in decreasing order of
    ``z_i / q_i`` until the mass ``q . w`` reaches 1 (the last one partly). Since every
    eps-PML column over a set holding ``q`` satisfies ``max w <= e^eps q . w``, this
    bounds from above what any output column can add to a linear utility whose row prices
    make it ``z`` (the pricing step of :func:`linear_design_matrix`).

    Examples
    --------
    With ``q = (1/2, 1/2)`` and ``e^eps = 1.5`` a normalised column has ``w_1 + w_2 = 2``
    and ``w_i <= 1.5``: the best for ``z = (1, -1)`` is ``w = (1.5, 0.5)``, worth 1.

    >>> import numpy as np
    >>> print(column_price_bound(np.array([[1.0], [-1.0]]), [0.5, 0.5], np.log(1.5)))
    [1.]
    """
    zz = np.asarray(z, dtype=np.float64)
    qq = np.asarray(q, dtype=np.float64)
    qq = np.broadcast_to(qq[:, None] if qq.ndim == 1 else qq, zz.shape)
    e = exp_capped(eps)
    free = qq <= 0
    out = e * np.where(free, np.maximum(zz, 0.0), 0.0).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(free, -np.inf, zz / np.where(free, 1.0, qq))
    order = np.argsort(-ratio, axis=0, kind="stable")
    r = np.take_along_axis(ratio, order, axis=0)
    mass = e * np.where(np.take_along_axis(free, order, axis=0), 0.0,
                        np.take_along_axis(qq, order, axis=0))
    before = np.cumsum(mass, axis=0) - mass
    taken = np.clip(1.0 - before, 0.0, mass)  # q-mass given to each entry, greedily
    return np.asarray(out + (taken * np.where(taken > 0, r, 0.0)).sum(axis=0),
                      dtype=np.float64)


def ball_price_bound(z: ArrayLike, center: ArrayLike, radius: float, eps: float, *,
                     iters: int = 90, stop: float = -np.inf) -> NDArray[np.float64]:
    """An upper bound, tight to the search precision, on ``max z_j . w`` over the
    eps-PML columns of the l1-ball ``B`` around ``center`` normalised by
    ``center . w = 1``, for every column ``z_j`` of ``z`` (``N x K``).

    The one-column LP (the exact l1-ball form with one output and ``center . w = 1``)
    has, with ``c = center``, ``b = min(radius/2, 1)``, ``E = e^eps`` and
    ``r = z - beta c``, the dual value ``beta + sigma`` for every ``beta`` and every
    ``sigma >= 0`` with

    - ``sum_i r_i <= sigma / E`` and
    - ``sum_i r_i^+ <= sigma / E + min(sigma b, sum_i min(sigma c_i, r_i^+))``

    (duals: ``sigma`` of the worst-case probability ``s``, ``beta = alpha - sigma`` with
    ``alpha`` of the normalisation; the mass ``sigma b`` the ball moves off the largest
    entries must be put back on the smallest, hence the first line). For a given
    ``beta`` the least such ``sigma`` is found exactly (the right side is piecewise
    linear in ``sigma``, its breakpoints ``r_i^+ / c_i`` sorted) and ``beta`` by a golden
    section search (the value is convex in ``beta``); every evaluated pair is dual
    feasible, so the least value found bounds the LP from above whatever the search
    does, and by LP duality it converges to the LP's value. ``stop``: a column whose
    bound falls to ``stop`` or below is not searched further.

    Examples
    --------
    The fixed prior ``(1/2, 1/2)`` (radius 0) at ``e^eps = 1.5``: the best column for
    ``z = (1, -1)`` is ``(1.5, 0.5)``, worth 1; radius 0.2 moves mass 0.1 onto the
    small entry, so the column must be flatter: ``w_1 <= 1.5 (0.4 w_1 + 0.6 w_2)`` with
    ``w_1 + w_2 = 2`` gives ``w_1 = 1.8 / 1.3`` and the value ``2 w_1 - 2 = 10 / 13``:

    >>> import numpy as np
    >>> z = np.array([[1.0], [-1.0]])
    >>> print(np.round(ball_price_bound(z, [0.5, 0.5], 0.0, np.log(1.5)), 6))
    [1.]
    >>> print(np.round(ball_price_bound(z, [0.5, 0.5], 0.2, np.log(1.5)), 6), round(10 / 13, 6))
    [0.769231] 0.769231
    """
    zz = np.asarray(z, dtype=np.float64)
    c = np.asarray(center, dtype=np.float64)
    e = exp_capped(eps)
    bud = min(float(radius) / 2.0, 1.0)
    k = zz.shape[1]
    best = np.full(k, np.inf)
    if k == 0:
        return best
    pos = c > 0
    ce = np.where(pos, c, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(pos[:, None], zz / np.where(pos, c, 1.0)[:, None], np.nan)
    lo = np.nanmin(ratio, axis=0) if pos.any() else np.zeros(k)
    hi = np.maximum(np.nanmax(ratio, axis=0) if pos.any() else np.zeros(k),
                    zz.sum(axis=0))
    lo = np.minimum(lo, hi)

    def value(beta: np.ndarray, cols: np.ndarray) -> np.ndarray:
        zc = zz[:, cols]
        r = zc - beta[None, :] * c[:, None]
        rp = np.maximum(r, 0.0)
        big_r = rp.sum(axis=0)
        s1 = e * r.sum(axis=0)
        s_a = big_r / (1.0 / e + bud)
        rpe = np.where(pos[:, None], rp, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            kap = np.where(pos[:, None], rpe / np.where(pos, c, 1.0)[:, None], 0.0)
        order = np.argsort(kap, axis=0, kind="stable")
        kap = np.take_along_axis(kap, order, axis=0)
        cs = np.cumsum(np.broadcast_to(ce[:, None], zc.shape)[order, np.arange(zc.shape[1])],
                       axis=0)
        rs = np.cumsum(np.take_along_axis(rpe, order, axis=0), axis=0)
        ctot = float(ce.sum())
        # g(sigma) = sigma/E + sum_i min(sigma c_i, r_i^+) at the breakpoints
        g = kap / e + rs + kap * (ctot - cs)
        reach = g >= big_r[None, :]
        idx = np.argmax(reach, axis=0)
        none = ~reach.any(axis=0)
        cols_i = np.arange(zc.shape[1])
        prev = idx - 1
        kap_prev = np.where(prev >= 0, kap[np.maximum(prev, 0), cols_i], 0.0)
        g_prev = np.where(prev >= 0, g[np.maximum(prev, 0), cols_i], 0.0)
        c_prev = np.where(prev >= 0, cs[np.maximum(prev, 0), cols_i], 0.0)
        slope = 1.0 / e + (ctot - c_prev)
        s_b = kap_prev + (big_r - g_prev) / slope
        s_b = np.where(none, kap[-1] + (big_r - g[-1]) * e, s_b)
        sigma = np.maximum.reduce([np.zeros_like(s1), s1, s_a, s_b])
        return np.asarray(beta + sigma, dtype=np.float64)

    gr = (math.sqrt(5.0) - 1.0) / 2.0
    active = np.arange(k)
    a, bb = lo.copy(), hi.copy()
    x1 = bb - gr * (bb - a)
    x2 = a + gr * (bb - a)
    f1 = value(x1, active)
    f2 = value(x2, active)
    best = np.minimum(best, np.minimum(f1, f2))
    best = np.minimum(best, value(hi, active))
    for _ in range(iters):
        keep = (best[active] > stop) & (bb - a > 1e-15 * (np.abs(a) + np.abs(bb) + 1e-300))
        if not keep.any():
            break
        active, a, bb, x1, x2, f1, f2 = (v[keep] for v in (active, a, bb, x1, x2, f1, f2))
        left = f1 <= f2  # the minimum lies in [a, x2]
        bb = np.where(left, x2, bb)
        a = np.where(left, a, x1)
        nx1 = np.where(left, bb - gr * (bb - a), x2)
        nx2 = np.where(left, x1, a + gr * (bb - a))
        nf1 = np.where(left, np.nan, f2)
        nf2 = np.where(left, f1, np.nan)
        x1, x2 = nx1, nx2
        new = np.where(left, x1, x2)
        fv = value(new, active)
        f1 = np.where(left, fv, nf1)
        f2 = np.where(left, nf2, fv)
        best[active] = np.minimum(best[active], fv)
    return np.asarray(best, dtype=np.float64)


def _master_method(poly: MechanismPolytope) -> str:
    """HiGHS' method for the restricted LP: the interior point method (with crossover, so
    the solution is a vertex and the row-sum duals are a basis') over the exact dual
    forms, where the simplex method took two to eight times as long in the benchmark;
    HiGHS' choice (the simplex method) over the 2NM form. The tolerances are
    :func:`_highs_options` (over the exact forms dual feasibility at HiGHS' default:
    the last restricted LP at ``N = 500``, ``eps = 3`` took 35 instead of 43 CPU s)."""
    return "highs" if poly.eps_prime is not None else "highs-ipm"


def _column_generation_design(uset: Any, p: np.ndarray, eps: float, g: np.ndarray, *,
                              stats: dict[str, Any] | None = None) -> np.ndarray | None:
    """The linear-utility LP by column generation over the output columns; ``None`` if
    the set has no known point or it did not converge in :data:`MAX_ROUNDS` rounds.

    The LP ``max sum_ij f[i, j] W[i, j]`` (``f = p g``) over ``M(eps, set)`` couples its
    output columns only through the row sums: each column ranges over the same cone ``C``
    of eps-PML columns. Restricted to a set ``J`` of columns (the others 0) it is the
    polytope LP with ``|J|`` outputs, solved with HiGHS; its duals ``y`` on the row sums
    give, by LP duality, ``value(J) = sum_i y_i``, and for the whole LP
    ``value <= sum_i y_i + sum_j max(0, sup_{w in C, q.w = 1} (f_j - y) . w)`` for any
    distribution ``q`` of the set (Lagrangian bound; ``sum_j q . W_j = 1``). ``C`` lies in
    the fixed-prior cone of ``q`` (``max w <= e^eps q . w``), so
    :func:`column_price_bound` bounds each ``sup``; the smallest bound over the set's
    known points is used. Over an l1-ball the flagged columns are then bounded by the
    one-column LP's dual (:func:`ball_price_bound`, normalised by the center, exact up
    to its search precision): a column above ``BALL_SURE * scale`` enters without an LP.
    Over the other sets one exact LP prices ``-y`` and ``v(f_j - y) <= v(-y) + v(f_j)``
    (the price ``v`` is sublinear) bounds every column. A column whose bound still exceeds
    ``PRICING_TOL * scale`` is priced exactly (:class:`_ColumnPricer`, one LP over ``C``
    with ``q . w = 1`` for the set's first known point ``q``, for which
    ``sum_j q . W_j = 1`` as well) and enters ``J`` if its ``sup`` still exceeds it
    (largest bounds first, at most doubling ``J`` per round); when none enters, the
    restricted optimum is the whole LP's to ``2 PRICING_TOL`` relative.
    The first ``J`` holds the :data:`INITIAL_COLUMNS` outputs worth most
    (``max_i f[i, j]``): the accuracy optimum uses the most likely outputs."""
    from scipy.optimize import linprog

    from ..sets import L1Ball

    n, m = g.shape
    pts = _set_points(uset, p)
    if pts.shape[0] == 0:
        return None
    f = p[:, None] * g
    scale = max(float(np.abs(f).max()), 1e-300)
    inside = np.zeros(m, dtype=bool)
    inside[np.argsort(-f.max(axis=0), kind="stable")[:INITIAL_COLUMNS]] = True
    pricer: _ColumnPricer | None = None
    ball = uset if isinstance(uset, L1Ball) and pts.shape[0] > 0 and np.array_equal(
        pts[0], np.asarray(uset.center, dtype=np.float64)) else None
    for rounds in range(1, MAX_ROUNDS + 1):
        cols = np.flatnonzero(inside)
        poly = mechanism_polytope(uset, eps, n_outputs=cols.size)
        c = np.zeros(poly.n_vars)
        c[poly.layout["W"]] = -f[:, cols].ravel()
        res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                      bounds=poly.bounds, method=_master_method(poly),
                      options=_highs_options(poly))
        if res.status != 0 or res.x is None:
            return None
        # the first n equalities of every polytope form are the row sums
        y = -np.asarray(res.eqlin.marginals[:n], dtype=np.float64)
        value = -float(res.fun)
        out = np.flatnonzero(~inside)
        z = f[:, out] - y[:, None]
        bound = np.full(out.size, np.inf)
        for q in pts:
            bound = np.minimum(bound, column_price_bound(z, q, eps))
        tol = PRICING_TOL * max(abs(value), scale)
        sure = np.inf  # bounds above this are the exact price (to the search precision)
        flagged = bound > tol
        if flagged.any() and ball is not None:
            # the l1-ball: the one-column LP's dual, searched in closed form
            bound[flagged] = np.minimum(bound[flagged], ball_price_bound(
                z[:, flagged], ball.center, ball.radius, eps, stop=tol))
            sure = BALL_SURE * scale
        elif flagged.any():
            if pricer is None:
                pricer = _ColumnPricer(uset, eps, n, pts[0])
            # v(f_j - y) <= v(-y) + v(f_j), v the (sublinear) price: one exact LP
            anchor = pricer.price(-y)
            bound = np.minimum(bound, anchor + column_price_bound(f[:, out], pts[0], eps))
        want = max(int(cols.size), 1)
        enter: list[int] = []
        for k in np.argsort(-bound, kind="stable"):
            if bound[k] <= tol or len(enter) >= want:
                break
            if bound[k] > sure:
                enter.append(int(out[k]))
                continue
            # the relaxation flags it: price the column exactly (one small LP)
            if pricer is None:
                pricer = _ColumnPricer(uset, eps, n, pts[0])
            if pricer.price(z[:, k]) > tol:
                enter.append(int(out[k]))
        if stats is not None:
            stats.update(rounds=rounds, columns=int(cols.size), value=value,
                         n_vars=int(poly.n_vars),
                         priced=0 if pricer is None else pricer.calls)
        if not enter:
            w = np.zeros((n, m))
            w[:, cols] = poly.matrix(res.x)
            return w
        inside[enter] = True
    return None


class _ColumnPricer:
    """``sup (z . w)`` over the eps-PML columns ``w`` of ``uset`` with ``q . w = 1``
    (the exact pricing LP of one output column: :func:`mechanism_polytope` with one
    output, its row sums replaced by the normalisation)."""

    def __init__(self, uset: Any, eps: float, n: int, q: np.ndarray) -> None:
        from scipy.sparse import csr_matrix, vstack

        poly = mechanism_polytope(uset, eps, n_outputs=1)
        norm = np.zeros((1, poly.n_vars))
        norm[0, poly.layout["W"]] = q
        self.a_eq = vstack([csr_matrix(norm), poly.A_eq.tocsr()[n:]]).tocsr()
        self.b_eq = np.concatenate([[1.0], poly.b_eq[n:]])
        self.a_ub, self.b_ub = poly.A_ub, poly.b_ub
        self.bounds = np.array(poly.bounds, dtype=np.float64)
        self.bounds[poly.layout["W"], 1] = np.inf
        self.w = poly.layout["W"]
        self.nv = poly.n_vars
        self.calls = 0

    def price(self, z: np.ndarray) -> float:
        from scipy.optimize import linprog

        self.calls += 1
        c = np.zeros(self.nv)
        c[self.w] = -z
        res = linprog(c, A_ub=self.a_ub, b_ub=self.b_ub, A_eq=self.a_eq, b_eq=self.b_eq,
                      bounds=self.bounds, method="highs", options=dict(HIGHS_OPTIONS))
        if res.status != 0 or res.fun is None:
            return math.inf  # unknown: let the column in
        return -float(res.fun)
