"""Exact optimal mechanisms for sub-convex utilities: an LP over extreme rays.

A sub-convex utility is ``U(W, p) = sum_j mu(W[:, j], p)`` with ``mu`` convex and positively
homogeneous (paper eq. subconvexdef). The columns of an eps-PML mechanism over a set ``P``
lie in the convex cone ``K = {w >= 0 : max_i w_i <= e^eps min_{Q in P} Q . w}``. Normalise a
column to ``p . w = 1`` (``p`` the estimate); the slice ``K_1`` is a polytope with vertices
``v_1..v_K``. Writing ``W[:, j] = sum_k c_jk v_k`` and using convexity and homogeneity,

    max U  =  max  sum_k theta_k mu(v_k)   s.t.  sum_k theta_k v_k = 1 (N rows),  theta >= 0,

(grosse2023extremal Thm 6 for a fixed prior), and the optimal mechanism has the columns
``theta_k v_k`` for ``theta_k > 0`` (at most N of them at a basic solution). The LP is solved
with HiGHS. Its size is exponential in N, so the designers here are exact up to
:data:`MAX_EXACT_N` = 12.

Extreme rays (vertices of ``K_1``):

- **Fixed prior** (``P = {p}``): ``K_1 = {0 <= w <= e^eps, p . w = 1}``, a box cut by a
  hyperplane; every vertex has all entries in ``{0, e^eps}`` but at most one, the free entry
  ``f``: ``w = e^eps 1_S + r e_f`` with ``r = (1 - e^eps p(S)) / p_f in [0, e^eps]``
  (:func:`fixed_prior_rays`, ``N 2^(N-1)`` candidates).
- **l1-ball** ``B_beta(p)`` with ``beta <= 2 p_min`` (Prop. LCCP): with ``t = min w`` the
  constraint is ``w_i <= e^eps' (1 + beta t / 2)`` on the slice, ``eps'`` of
  eq. optimalepsdash. The lifted polytope ``{(w, t): 0 <= t <= w_k <= e^eps' (1 + beta t/2),
  p . w = 1}`` projects onto ``K_1``; a vertex needs N + 1 active independent constraints, so
  either ``t = 0`` and ``w`` is a fixed-prior vertex at eps', or ``t > 0`` and every ``w_k`` is
  at a bound, ``w = t + (U - t) 1_S`` with ``U = e^eps' (1 + beta t / 2)``, and ``p . w = 1``
  gives ``t = (1 - p(S) e^eps') / (1 - p(S) + p(S) e^eps' beta / 2)`` (feasible iff
  ``0 <= t <= U``) (:func:`l1_ball_rays`). Vertices of the lifted polytope that do not
  project to vertices are still feasible points, which is harmless in the LP. The tests
  check this list against brute-force vertex enumeration.
- **Any l1-ball, box, or l1-ball cut by a box** (beyond the paper; ``beta >= 2 p_min``,
  zero counts): the worst distribution depends only on the order of the column's entries
  (greedy), so vertices have at most three levels (:func:`three_level_rays`, ``3^N`` candidates).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import PMLError, TooLargeError, ValidationError
from ..utility import mutual_information_columns
from ._common import drop_empty_columns, exp_capped, repair_rows, solve_lp
from .polytope import eps_prime

__all__ = [
    "MAX_EXACT_N",
    "fixed_prior_rays",
    "l1_ball_rays",
    "ray_lp_matrix",
    "subset_matrix",
    "three_level_rays",
    "three_level_rays_until",
]

#: Largest alphabet of the former all-rays LP (kept for compatibility; the designers now
#: use column generation for every N, see :mod:`pmlkit.design.colgen`).
MAX_EXACT_N = 12

_RAY_TOL = 1e-12


def subset_matrix(n: int) -> np.ndarray:
    """All ``2^n`` subsets of ``range(n)`` as a boolean ``(2^n, n)`` matrix.

    Examples
    --------
    >>> subset_matrix(2).astype(int)  # row k holds the binary digits of k
    array([[0, 0],
           [1, 0],
           [0, 1],
           [1, 1]])
    """
    if n > 24:  # pragma: no cover - guarded by MAX_EXACT_N
        raise TooLargeError(f"cannot enumerate 2^{n} subsets")
    codes = np.arange(1 << n, dtype=np.int64)
    return ((codes[:, None] >> np.arange(n)) & 1).astype(bool)


#: Largest alphabet the ray generators below accept (the column-generation designer uses
#: them while the candidate count stays small, see :mod:`pmlkit.design.colgen`).
MAX_GENERATED_N = 20


def _check_size(n: int) -> None:
    if n > MAX_GENERATED_N:
        raise TooLargeError(
            f"the candidate-ray generators enumerate 2^N or 3^N rays and are limited to "
            f"N <= {MAX_GENERATED_N}, got N = {n}; the designers price larger alphabets by "
            "branch and bound instead")


def fixed_prior_rays(p: np.ndarray, eps: float) -> np.ndarray:
    """Vertices of ``{0 <= w <= e^eps, p . w = 1}``: ``(N, K)`` array (one ray a column).

    Candidates ``e^eps 1_S + r e_f`` for every subset ``S`` and free index ``f`` outside it
    with ``p_f > 0``, kept when ``0 <= r <= e^eps`` (within 1e-12, then clipped). Empty
    when ``eps`` is so small that no column exists (never for ``eps >= 0``: ``w = 1``).

    Examples
    --------
    A fair coin at ``eps = log 2``: the cap is 2, and ``p . w = 1`` forces one entry to 2
    and the other to 0 (each found twice: once as the free entry, once in ``S``).

    >>> fixed_prior_rays(np.array([0.5, 0.5]), np.log(2))
    array([[2., 0., 2., 0.],
           [0., 2., 0., 2.]])
    """
    n = p.size
    _check_size(n)
    e = exp_capped(eps)
    sub = subset_matrix(n).astype(np.float64)  # (2^n, n)
    ps = sub @ p  # p(S)
    free = np.flatnonzero(p > 0)
    # candidates (S, f) with f not in S
    s_idx, f_pos = np.nonzero(sub[:, free] == 0)
    f = free[f_pos]
    r = (1.0 - e * ps[s_idx]) / p[f]
    ok = (r >= -_RAY_TOL * e) & (r <= e * (1 + _RAY_TOL))
    s_idx, f, r = s_idx[ok], f[ok], np.clip(r[ok], 0.0, e)
    v = e * sub[s_idx]
    v[np.arange(v.shape[0]), f] = r
    return np.ascontiguousarray(v.T)


def l1_ball_rays(p: np.ndarray, eps: float, beta: float) -> np.ndarray:
    """Vertices of the lifted l1-ball polytope projected to ``w`` (see module docstring).

    Requires ``beta <= 2 p_min``. Returns ``(N, K)``: the fixed-prior rays at ``eps'``
    (when ``eps' >= 0``) and the two-level rays ``t + (U - t) 1_S``.

    Examples
    --------
    >>> p = np.array([0.5, 0.3, 0.2])
    >>> rays = l1_ball_rays(p, np.log(2), 0.2)
    >>> rays.shape, bool(np.allclose(p @ rays, 1.0))  # every ray is normalised: p . v = 1
    ((3, 10), True)
    """
    n = p.size
    _check_size(n)
    if beta > 2 * float(p.min()):
        raise ValidationError(
            f"beta must be <= 2 min(p) = {2 * float(p.min())!r} for the exact l1-ball rays, "
            f"got {beta!r}")
    ep = eps_prime(eps, beta)
    e = exp_capped(ep)
    parts = []
    if ep >= 0:
        parts.append(fixed_prior_rays(p, ep))
    sub = subset_matrix(n).astype(np.float64)
    ps = sub @ p
    num = 1.0 - ps * e
    den = 1.0 - ps + ps * e * beta / 2.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.where(den > 0, num / den, -1.0)
    u = e * (1.0 + beta * t / 2.0)
    ok = (t >= -_RAY_TOL) & (t <= u * (1 + _RAY_TOL)) & (den > 0)
    t, u, sub = np.clip(t[ok], 0.0, None), u[ok], sub[ok]
    v = t[:, None] + (u - t)[:, None] * sub
    parts.append(np.ascontiguousarray(v.T))
    return np.concatenate(parts, axis=1)


MuFn = Callable[[np.ndarray, np.ndarray], Any]


def ray_values(rays: np.ndarray, p: np.ndarray, mu: str | MuFn) -> np.ndarray:
    """``mu(v_k, p)`` for every ray: vectorised for mutual information; a user callable is
    called once per ray (it takes one column and the prior and returns a number).

    A callable is checked for positive homogeneity on the first ray
    (``mu(2 v) = 2 mu(v)`` within 1e-9 relative)."""
    if isinstance(mu, str):
        if mu == "mutual_information":
            return mutual_information_columns(rays, p)
        raise ValidationError(f"utility {mu!r} is not a sub-convex utility name")
    vals = np.empty(rays.shape[1])
    for k in range(rays.shape[1]):
        try:
            vals[k] = float(mu(rays[:, k].copy(), p.copy()))
        except (TypeError, ValueError) as exc:
            raise ValidationError(
                f"utility callable must return a real number for a column, failed with: "
                f"{exc}") from exc
    if not np.isfinite(vals).all():
        raise ValidationError("utility callable returned NaN or inf for a candidate column")
    if rays.shape[1]:
        a = vals[0]
        b = float(mu(2.0 * rays[:, 0], p.copy()))
        if not abs(b - 2.0 * a) <= 1e-9 * max(1.0, abs(a)):
            raise ValidationError(
                "utility callable must be positively homogeneous (mu(c w) = c mu(w)); got "
                f"mu(w) = {a!r}, mu(2 w) = {b!r}")
    return vals


def ray_lp_matrix(rays: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Solve ``max values . theta  s.t.  rays @ theta = 1, theta >= 0`` (HiGHS) and return
    the mechanism with columns ``theta_k v_k`` (rows repaired, empty columns dropped).

    Examples
    --------
    At ``eps = log 2`` a fair coin can be released exactly (its PML is ``log 2``): the
    optimal mutual-information mechanism is the identity.

    >>> p = np.array([0.5, 0.5])
    >>> rays = fixed_prior_rays(p, np.log(2))
    >>> ray_lp_matrix(rays, ray_values(rays, p, "mutual_information"))
    array([[1., 0.],
           [0., 1.]])
    """
    if rays.shape[1] == 0:  # pragma: no cover - w = 1 is always a ray
        raise PMLError("no feasible extreme ray")
    n = rays.shape[0]
    # merge candidates equal up to 1e-9 (ill-conditioned near eps = 0 or degenerate sets)
    _, first = np.unique(np.round(rays.T, 9), axis=0, return_index=True)
    rays = rays[:, np.sort(first)]
    values = values[np.sort(first)]
    theta = solve_lp(-values, A_eq=rays, b_eq=np.ones(n), bounds=(0, None),
                     what="extreme-ray LP")
    keep = theta > 1e-14
    w = rays[:, keep] * theta[keep]
    return drop_empty_columns(repair_rows(w))


def _block_masses(uset: Any, top: np.ndarray, mid: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """Masses ``(Q(T), Q(M))`` of a worst distribution of ``uset`` (``argmin_linear``) for
    objective vectors constant on the blocks ``top > mid > rest`` (boolean ``(K, N)`` masks;
    ``mid`` may be ``None``: two blocks)."""
    tf = top.astype(np.float64)
    if mid is None:
        q = uset.argmin_linear(tf.T)
        return (q * tf).sum(axis=1), None
    mf = mid.astype(np.float64)
    q = uset.argmin_linear((2.0 * tf + mf).T)
    return (q * tf).sum(axis=1), (q * mf).sum(axis=1)


def _three_block_rays(uset: Any, e: float, q0: np.ndarray, t_: np.ndarray, m_: np.ndarray
                      ) -> np.ndarray:
    """Candidate rays of type 1: a level ``u`` on the top block (rows of ``t_``), a level
    ``b >= 0`` on the middle block (``m_``) and 0 elsewhere, both constraints tight."""
    qt, qm = _block_masses(uset, t_, m_)
    assert qm is not None
    ct, cm = t_ @ q0, m_ @ q0
    det = ct * (-e * qm) - cm * (1.0 - e * qt)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        u = -e * qm / det
        b = -(1.0 - e * qt) / det
    ok = np.isfinite(u) & np.isfinite(b) & (det != 0) & (b >= -_RAY_TOL) \
        & (u >= b * (1 - _RAY_TOL))
    out: np.ndarray = u[ok, None] * t_[ok] + np.clip(b[ok], 0, None)[:, None] * m_[ok]
    return out


def _two_block_rays(uset: Any, e: float, q0: np.ndarray, t_: np.ndarray
                    ) -> list[np.ndarray]:
    """Candidate rays of types 2 and 3, which use two blocks: the rows of boolean matrix
    ``t_`` (the top block) and the rest. Type 2 puts a level ``u`` on the top block and
    ``c >= 0`` on the rest, both constraints tight; type 3 is ``1/(t_ . q0)`` on the top block
    alone, where that is feasible."""
    qt, _ = _block_masses(uset, t_, None)
    qr = 1.0 - qt
    ct = t_ @ q0
    cr = 1.0 - ct
    det = ct * (-e * qr) - cr * (1.0 - e * qt)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        u = -e * qr / det
        c = -(1.0 - e * qt) / det
        a = 1.0 / ct
    ok = np.isfinite(u) & np.isfinite(c) & (det != 0) & (c >= -_RAY_TOL) \
        & (u >= c * (1 - _RAY_TOL))
    two = u[ok, None] * t_[ok] + np.clip(c[ok], 0, None)[:, None] * ~t_[ok]
    ok = (ct > 0) & (e * qt >= 1.0 - _RAY_TOL)
    return [two, a[ok, None] * t_[ok]]


def block_rays(uset: Any, eps: float, top: np.ndarray, mid: np.ndarray,
               q0: np.ndarray | None = None) -> np.ndarray:
    """Columns of ``K_1`` with entries on three levels for the given blocks (rows of the
    boolean ``(K, N)`` masks ``top``, ``mid``; the rest is the bottom block), for any set
    with ``argmin_linear`` / ``min_linear``: the points of :func:`three_level_rays` (types 1
    to 3) for these assignments, filtered by the exact worst case. Used as heuristic
    columns by the column-generation designer for alphabets too large to enumerate.
    Returns ``(N, K')``."""
    n = int(uset.n)
    if q0 is None:
        q0 = (np.asarray(uset.center, dtype=np.float64) if hasattr(uset, "center")
              else uset.argmin_linear(np.zeros(n))[0])
    e = exp_capped(eps)
    top = np.asarray(top, dtype=bool)
    mid = np.asarray(mid, dtype=bool) & ~top
    bot = ~(top | mid)
    parts = [np.zeros((0, n))]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = top.any(axis=1) & mid.any(axis=1) & bot.any(axis=1)
        if s.any():
            parts.append(_three_block_rays(uset, e, q0, top[s], mid[s]))
        s = top.any(axis=1)
        if s.any():
            parts += _two_block_rays(uset, e, q0, top[s])
    v = np.concatenate(parts, axis=0)
    v = v[np.isfinite(v).all(axis=1) & (v.max(axis=1) > 0)]
    if not v.shape[0]:
        return np.zeros((n, 0))
    worst = uset.min_linear(v.T)
    feas = (v.max(axis=1) <= e * worst * (1 + 1e-9)) & (worst > 0)
    return np.ascontiguousarray(v[feas].T)


#: Use the block-sum path of :func:`three_level_rays` for l1-balls and boxes (the
#: benchmark switches it off to time the former per-candidate path).
_AGGREGATED = True


def _three_level_aggregated(uset: Any, e: float, q0: np.ndarray, n: int, start: int = 0,
                            stop: int | None = None) -> np.ndarray:
    """The candidates of :func:`three_level_rays` for an l1-ball or a box, ``(K, N)``,
    before the feasibility filter, computed from per-code block sums only.

    Every quantity of a candidate (the ``q0`` masses and the worst distribution's masses of
    its blocks, :func:`_block_masses`) is a sum over the entries of a block: the sum of a
    table over the low base-3 digits of the code and one over its high digits, added for
    every code of the chunk at once; ``(K, N)`` arrays are built for the surviving
    candidates only (a few percent)."""
    from ..sets import L1Ball

    stop = 3**n if stop is None else stop
    codes = np.arange(start, stop, dtype=np.int64)
    l1 = isinstance(uset, L1Ball)
    if l1:
        wa = np.asarray(uset.center, dtype=np.float64)
        wb = np.zeros(n)
    else:
        wa = np.asarray(uset.lower, dtype=np.float64)
        wb = np.asarray(uset.upper, dtype=np.float64) - wa
    # a code is lo + 3^nl hi: every block sum is the sum of a table over the 3^nl low codes
    # and one over the high codes of the chunk (meet in the middle: no per-digit passes
    # over the whole chunk); chunks start and stop at multiples of 3^nl
    nl = min(n, 6)
    assert start % 3**nl == 0 and stop % 3**nl == 0
    weights = np.stack([q0, wa, wb])  # the masses summed over T and over M

    def tables(digits: np.ndarray, items: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        it, im = digits == 2, digits == 1
        ft, fm = it.astype(np.float64), im.astype(np.float64)
        return (it.any(axis=1), im.any(axis=1), (digits == 0).any(axis=1),
                ft @ weights[:, items].T, fm @ weights[:, items].T)

    lo_codes = np.arange(3**nl, dtype=np.int64)
    lo = tables((lo_codes[:, None] // 3 ** np.arange(nl)[None, :]) % 3, np.arange(nl))
    hi_codes = np.arange(start // 3**nl, stop // 3**nl, dtype=np.int64)
    hi = tables((hi_codes[:, None] // 3 ** np.arange(n - nl)[None, :]) % 3,
                np.arange(nl, n))

    def both(a: np.ndarray, b: np.ndarray, op: Any) -> np.ndarray:
        out: np.ndarray = op(b[:, None], a[None, :]).ravel()
        return out

    ht, hm, hb = (both(lo[i], hi[i], np.logical_or) for i in range(3))
    q0t, at, bt = (both(lo[3][:, j], hi[3][:, j], np.add) for j in range(3))
    q0m, am, bm = (both(lo[4][:, j], hi[4][:, j], np.add) for j in range(3))
    if l1:
        b = min(float(uset.radius) / 2.0, 1.0)
        qt = at - np.minimum(b, at)
        qm = am - np.minimum(np.maximum(b - at, 0.0), am)
        qt2 = np.where(~hb & ~hm, at, qt)  # two blocks: T and a non-empty rest
    else:
        budget = max(0.0, 1.0 - float(wa.sum()))
        capr = float(wb.sum()) - bt - bm
        left_m = np.maximum(budget - capr, 0.0)
        left_t = np.maximum(left_m - bm, 0.0)
        qt = at + np.minimum(bt, left_t)
        qm = am + np.minimum(bm, left_m)
        qt2 = qt
    parts: list[np.ndarray] = []
    pw = 3 ** np.arange(n, dtype=np.int64)

    def blocks(sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dg = (codes[sel][:, None] // pw[None, :]) % 3
        return dg == 2, dg == 1

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = ht & hm & hb
        ct, cm = q0t[s], q0m[s]
        det = ct * (-e * qm[s]) - cm * (1.0 - e * qt[s])
        u = -e * qm[s] / det
        bb = -(1.0 - e * qt[s]) / det
        ok = np.isfinite(u) & np.isfinite(bb) & (det != 0) & (bb >= -_RAY_TOL) \
            & (u >= bb * (1 - _RAY_TOL))
        sel = np.flatnonzero(s)[ok]
        t_, m_ = blocks(sel)
        parts.append(u[ok, None] * t_ + np.clip(bb[ok], 0, None)[:, None] * m_)
        s = ht & ~hm
        ct, q = q0t[s], qt2[s]
        qr = 1.0 - q
        cr = 1.0 - ct
        det = ct * (-e * qr) - cr * (1.0 - e * q)
        u = -e * qr / det
        c = -(1.0 - e * q) / det
        ok = np.isfinite(u) & np.isfinite(c) & (det != 0) & (c >= -_RAY_TOL) \
            & (u >= c * (1 - _RAY_TOL))
        t_, _ = blocks(np.flatnonzero(s)[ok])
        parts.append(u[ok, None] * t_ + np.clip(c[ok], 0, None)[:, None] * ~t_)
        a = 1.0 / ct
        ok = (ct > 0) & (e * q >= 1.0 - _RAY_TOL)
        t_, _ = blocks(np.flatnonzero(s)[ok])
        parts.append(a[ok, None] * t_)
    v = np.concatenate(parts, axis=0)
    out: np.ndarray = v[np.isfinite(v).all(axis=1)]
    return out


def three_level_rays(uset: Any, eps: float, q0: np.ndarray | None = None) -> np.ndarray:
    """Candidate extreme columns for an l1-ball of ANY radius, a box, or an l1-ball cut by a
    box (``L1BoxSet``) (beyond the paper).

    For these sets ``m(w) = min_{Q in set} Q . w`` is linear on each ordering region
    ``R_pi = {w_pi(1) >= ... >= w_pi(N)}`` (the worst ``Q`` is a greedy that depends only on
    the order of the entries), so ``K_1 cap R_pi`` is the polytope

        0 <= w_pi(N) <= ... <= w_pi(1) <= e^eps m_pi(w),     q0 . w = 1

    (``q0``: any point of the set, default the ball's center or a point of the box; every
    feasible non-zero column has ``q0 . w >= m(w) > 0``). A vertex of it has N - 1 of its
    N + 1 chain inequalities active, so its entries take at most three values:

    1. top ``U`` (PML tight), middle ``B``, bottom ``0`` (two chain links slack);
    2. top ``U`` (PML tight), bottom ``C > 0`` (``w >= 0`` slack);
    3. top ``A = 1 / q0(T)``, bottom ``0`` (PML slack; ``T`` = everything gives ``w = 1``).

    Every vertex of ``K_1`` is a vertex of the region containing it, so enumerating the
    ``3^N`` assignments of entries to (top, middle, bottom) and solving the two linear
    equations (``q0 . w = 1`` and PML tight, with the worst ``Q``'s block masses from
    ``uset.argmin_linear`` on a representative vector with the same order) gives a superset
    of the extreme rays. Candidates are then filtered with the exact worst case
    (``max w <= e^eps min_Q Q . w``, relative tolerance 1e-9). Returns ``(N, K)``.


    Examples
    --------
    Every candidate is a point of ``K_1``: normalised, and within the PML cap
    ``e^eps min_Q Q . w`` of the exact worst case.

    >>> from pmlkit.sets import L1Ball
    >>> p = np.array([0.5, 0.3, 0.2])
    >>> ball = L1Ball(p, 0.6)
    >>> rays = three_level_rays(ball, np.log(2))
    >>> bool(np.allclose(p @ rays, 1.0))
    True
    >>> bool((rays.max(axis=0) <= 2.0 * ball.min_linear(rays) * (1 + 1e-9)).all())
    True
    """
    out = three_level_rays_until(uset, eps, q0)
    assert out is not None  # never stopped without ``stop``
    return out


def three_level_rays_until(uset: Any, eps: float, q0: np.ndarray | None = None,
                      stop: Callable[[int], bool] | None = None) -> np.ndarray | None:
    """:func:`three_level_rays`, generated in chunks of codes; ``stop(codes_done)`` is asked
    between chunks and ``None`` is returned as soon as it answers ``True`` (a designer's
    budget ran out). The rays and their order do not depend on the chunks.

    Examples
    --------
    >>> from pmlkit.sets import L1Ball
    >>> ball = L1Ball(np.array([0.5, 0.3, 0.2]), 0.6)
    >>> bool(np.array_equal(three_level_rays_until(ball, 1.0), three_level_rays(ball, 1.0)))
    True
    >>> three_level_rays_until(ball, 1.0, stop=lambda done: True) is None
    True
    """
    from ..sets import Box, L1Ball, L1BoxSet

    n = int(uset.n)
    _check_size(n)
    if not isinstance(uset, L1Ball | Box | L1BoxSet):
        raise ValidationError(
            f"three_level_rays needs an L1Ball, Box or L1BoxSet, got {uset!r}")
    if q0 is None:
        q0 = (np.asarray(uset.center, dtype=np.float64)
              if isinstance(uset, L1Ball | L1BoxSet)
              else uset.argmin_linear(np.zeros(n))[0])
    e = exp_capped(eps)
    if _AGGREGATED and isinstance(uset, L1Ball | Box):
        # in chunks of 3^12 codes: memory holds one chunk and the surviving rays
        out = []
        step = 3**12
        for a in range(0, 3**n, step):
            if stop is not None and stop(a):
                return None
            v = _three_level_aggregated(uset, e, np.asarray(q0, dtype=np.float64), n, a,
                                        min(a + step, 3**n))
            worst = uset.min_linear(v.T)
            out.append(v[v.max(axis=1) <= e * worst * (1 + 1e-9)])
        return np.ascontiguousarray(np.concatenate(out, axis=0).T)
    # in chunks of 3^11 codes; the type-1 rays of every chunk come before the others, as
    # when all codes were taken at once
    step = 3**11
    ones: list[np.ndarray] = [np.zeros((0, n))]
    twos: list[np.ndarray] = [np.zeros((0, n))]
    for a in range(0, 3**n, step):
        if stop is not None and stop(a):
            return None
        codes = np.arange(a, min(a + step, 3**n), dtype=np.int64)
        digits = np.empty((codes.size, n), dtype=np.int8)  # 2 top, 1 middle, 0 bottom
        for k in range(n):  # one pass per alphabet entry, vectorised over codes
            digits[:, k] = codes % 3
            codes //= 3
        top, mid, bot = digits == 2, digits == 1, digits == 0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # type 1: levels U > B > 0 on (top, mid, bottom), all three non-empty
            sel = top.any(axis=1) & mid.any(axis=1) & bot.any(axis=1)
            if sel.any():
                ones.append(_feasible(uset, e, _three_block_rays(uset, e, q0, top[sel],
                                                                 mid[sel])))
            # types 2 and 3 use two blocks: top (digit 2) and the rest; skip duplicates by
            # taking only assignments without a middle block
            sel = top.any(axis=1) & ~mid.any(axis=1)
            if sel.any():
                twos += [_feasible(uset, e, v) for v in _two_block_rays(uset, e, q0, top[sel])]
    return np.ascontiguousarray(np.concatenate(ones + twos, axis=0).T)


def _feasible(uset: Any, e: float, v: np.ndarray) -> np.ndarray:
    """The finite rows of ``v`` within the PML cap of the exact worst case (relative
    tolerance ``1e-9``)."""
    v = v[np.isfinite(v).all(axis=1)]
    if not v.shape[0]:
        return v
    worst = uset.min_linear(v.T)
    out: np.ndarray = v[v.max(axis=1) <= e * worst * (1 + 1e-9)]
    return out
