"""Compiled loops of the level-cell branch and bound that bounds the pricing problem of
mutual information over a box at any alphabet size
(:class:`pmlkit.design.colgen.BoxLagrangeOracle`; the method and why it is valid are in
that module's docstring).

A node is a *mode* (which of the three forms of the box's worst case holds), a cell
``[u1, u2] x [m1, m2]`` of the top and middle levels of the column, and for every entry
the levels it may take (a bit mask: 1 bottom, 2 middle, 4 top). :func:`node_bound` gives
an upper bound of the pricing objective over every three-level column of the node, by
Lagrangian relaxation of the two coupling constraints (``p . w = 1`` and the privacy
constraint), minimised over the two multipliers (any multipliers give a valid bound; the
search only makes it tight). numba compiles the kernels when it is importable; the plain
Python versions are the same functions (slow, used by the tests on small alphabets).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._kernels import build_once, njit_cached

__all__: list[str] = []

#: multipliers are kept within this range (beyond it the rounding of the products would
#: dominate the margin)
MULT_MAX = 1e6

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
_PY: dict[str, Callable[..., Any]] = {}


def compiled() -> dict[str, Callable[..., Any]] | None:
    """The compiled kernels by name, or ``None`` when numba is missing or disabled."""
    return build_once(_STATE, _LOCK, _build)


def kernels() -> dict[str, Callable[..., Any]]:
    """The compiled kernels when available, else the plain Python ones."""
    k = compiled()
    if k is not None:
        return k
    return {"node_bound": _PY.get("node_bound", node_bound),
            "fix_levels": _PY.get("fix_levels", fix_levels)}


def _xlogx(a: float) -> float:
    if a <= 0.0:
        return 0.0
    return a * math.log(a)


#: vertices of a cell's part below the diagonal (at most five; repeated when fewer)
NCORNERS = 5


def corners(u1: float, u2: float, m1: float, m2: float, cu: Any, cm: Any) -> None:
    """The vertices ``(cu[c], cm[c])`` of the cell's columns, ``{u1 <= U <= u2,
    m1 <= m <= min(m2, U)}`` (``m1 <= min(m2, u2)``): the middle level never exceeds the
    top one, so the rectangle's corner above the diagonal is replaced by the diagonal's
    points; the Lagrangian of an assignment is convex in ``(U, m)``, largest at one of
    them."""
    m2 = min(m2, u2)
    cu[0] = u2
    cm[0] = m1
    cu[1] = u2
    cm[1] = m2
    if m1 <= u1:
        cu[2] = u1
        cm[2] = m1
        cu[3] = u1
        cm[3] = min(m2, u1)
    else:
        cu[2] = m1
        cm[2] = m1
        cu[3] = m1
        cm[3] = m1
    if m2 > u1:
        cu[4] = m2
        cm[4] = m2
    else:
        cu[4] = cu[3]
        cm[4] = cm[3]


def pieces(p: Any, y: Any, lo: Any, hi: Any, e: float, sl: float, mode: int, u1: float,
           u2: float, m1: float, m2: float, allow: Any, a: Any, pw: Any, k: Any,
           ok: Any, cst: Any) -> None:
    """Fill, at each vertex ``c`` of the cell's columns (:func:`corners`), the three
    pieces of every entry: value ``a[c, x, j]``, weight ``pw`` in ``p . w``,
    weight ``k`` in the privacy constraint; ``ok[x, j]`` whether level ``j`` (0 bottom, 1
    middle, 2 top) is allowed; ``cst[c]`` the constant term of the privacy constraint.

    Mode 0: ``q = lo`` for both level sets; mode 1: ``q = hi - sl`` for both; mode 2:
    ``q(S) = hi(S) - sl``, ``q(T) = lo(T)``."""
    n = p.shape[0]
    for x in range(n):
        ok[x, 0] = (allow[x] & 1) != 0
        ok[x, 1] = (allow[x] & 2) != 0
        ok[x, 2] = (allow[x] & 4) != 0
    cu = np.empty(NCORNERS)
    cm = np.empty(NCORNERS)
    corners(u1, u2, m1, m2, cu, cm)
    for c in range(NCORNERS):
        uu = cu[c]
        mm = cm[c]
        if mode == 0:
            cst[c] = -uu / e
        elif mode == 1:
            cst[c] = -uu / e - uu * sl
        else:
            cst[c] = -mm * sl - uu / e
        xu = _xlogx(uu)
        xm = _xlogx(mm)
        for x in range(n):
            km = lo[x] if mode == 0 else hi[x]
            ku = hi[x] if mode == 1 else lo[x]
            kum = (hi[x] - lo[x]) * mm if mode == 2 else 0.0
            a[c, x, 0] = 0.0
            pw[c, x, 0] = 0.0
            k[c, x, 0] = 0.0
            # each value raised by a bound on its own rounding (two products and a
            # difference of terms that may cancel: the margin of :func:`lagrangian` is
            # relative to the result, not to the terms)
            t1 = p[x] * xm
            t2 = y[x] * mm
            a[c, x, 1] = t1 - t2 + 2e-15 * (abs(t1) + abs(t2))
            pw[c, x, 1] = p[x] * mm
            k[c, x, 1] = km * mm
            t1 = p[x] * xu
            t2 = y[x] * uu
            a[c, x, 2] = t1 - t2 + 2e-15 * (abs(t1) + abs(t2))
            pw[c, x, 2] = p[x] * uu
            k[c, x, 2] = ku * uu + kum


def node_pieces(p: Any, y: Any, lo: Any, hi: Any, e: float, sl: float, mode: int,
                u1: float, u2: float, m1: float, m2: float, allow: Any
                ) -> tuple[Any, Any, Any, Any, Any]:
    """The node's pieces (:func:`pieces`) in new arrays: ``(a, pw, k, ok, cst)``."""
    n = p.shape[0]
    a = np.empty((NCORNERS, n, 3))
    pw = np.empty((NCORNERS, n, 3))
    k = np.empty((NCORNERS, n, 3))
    ok = np.empty((n, 3), dtype=np.bool_)
    cst = np.empty(NCORNERS)
    pieces(p, y, lo, hi, e, sl, mode, u1, u2, m1, m2, allow, a, pw, k, ok, cst)
    return a, pw, k, ok, cst

def _entry(a: Any, pw: Any, k: Any, ok: Any, c: int, x: int, lam: float, nu: float,
           margin: bool) -> tuple[float, int, float]:
    """Entry ``x``'s term in the Lagrangian at vertex ``c``: its largest value over the
    allowed levels, that level (-1 when none is allowed) and, when ``margin``, the
    largest magnitude of the level terms (0 otherwise)."""
    best = -math.inf
    bj = -1
    babs = 0.0
    for j in range(3):
        if ok[x, j]:
            v = a[c, x, j] + nu * k[c, x, j] - lam * pw[c, x, j]
            if v > best:
                best = v
                bj = j
            if margin:
                ab = abs(a[c, x, j]) + nu * abs(k[c, x, j]) + abs(lam) * pw[c, x, j]
                if ab > babs:
                    babs = ab
    return best, bj, babs

def lagrangian(a: Any, pw: Any, k: Any, ok: Any, cst: Any, lam: float, nu: float,
               lev: Any, out: Any, margin: bool) -> None:
    """The Lagrangian bound at ``(lam, nu)``, the largest over the cell's vertices:
    ``out = (value, d/dlam, d/dnu)`` at that corner, the value with its rounding margin
    when ``margin`` (the search for the multipliers goes without it, the bound at the
    multipliers found has it); ``lev`` gets every entry's level at the maximum (value
    ``-inf`` when an entry has no allowed level)."""
    n = a.shape[1]
    out[0] = -math.inf
    out[1] = 0.0
    out[2] = 0.0
    for c in range(NCORNERS):
        tot = lam + nu * cst[c]
        sabs = abs(lam) + nu * abs(cst[c])
        sp = 0.0
        sk = 0.0
        for x in range(n):
            best, bj, babs = _entry(a, pw, k, ok, c, x, lam, nu, margin)
            if bj < 0:
                out[0] = -math.inf
                for z in range(n):
                    lev[z] = -1
                return
            tot += best
            sabs += babs
            sp += pw[c, x, bj]
            sk += k[c, x, bj]
        # every term is a few roundings from its exact value: a relative 1e-14 of the sum
        # of magnitudes per term bounds the float error of the whole sum
        if margin:
            tot += 1e-14 * (n + 10) * sabs
        if tot > out[0]:
            out[0] = tot
            out[1] = 1.0 - sp
            out[2] = cst[c] + sk
            for x in range(n):
                lev[x] = _entry(a, pw, k, ok, c, x, lam, nu, False)[1]


def _min_lam(a: Any, pw: Any, k: Any, ok: Any, cmax: Any, lam0: float, nu: float,
             lev: Any, lev_a: Any, lev_b: Any, out: Any, res: Any, iters: int) -> None:
    """Minimise over ``lam`` at fixed ``nu`` (bisection on the sign of the slope):
    ``res = (best value, its lam, d/dnu there)``; ``lev_a``/``lev_b`` the levels on the
    two sides of the minimum."""
    best = math.inf
    blam = lam0
    bnu_slope = 0.0
    lagrangian(a, pw, k, ok, cmax, lam0, nu, lev, out, False)
    if out[0] == -math.inf:
        res[0] = -math.inf
        res[1] = lam0
        res[2] = 0.0
        return
    best = out[0]
    bnu_slope = out[2]
    # bracket: slope < 0 at lo, > 0 at hi
    lo_l = lam0
    hi_l = lam0
    width = 1.0
    if out[1] < 0.0:
        lev_a[:] = lev
        while True:
            hi_l = lo_l + width
            lagrangian(a, pw, k, ok, cmax, hi_l, nu, lev, out, False)
            if out[0] < best:
                best = out[0]
                blam = hi_l
                bnu_slope = out[2]
            if out[1] >= 0.0 or hi_l > MULT_MAX:
                lev_b[:] = lev
                break
            lo_l = hi_l
            lev_a[:] = lev
            width *= 2.0
    else:
        lev_b[:] = lev
        while True:
            lo_l = hi_l - width
            lagrangian(a, pw, k, ok, cmax, lo_l, nu, lev, out, False)
            if out[0] < best:
                best = out[0]
                blam = lo_l
                bnu_slope = out[2]
            if out[1] < 0.0 or lo_l < -MULT_MAX:
                lev_a[:] = lev
                break
            hi_l = lo_l
            lev_b[:] = lev
            width *= 2.0
    for _ in range(iters):
        mid = 0.5 * (lo_l + hi_l)
        lagrangian(a, pw, k, ok, cmax, mid, nu, lev, out, False)
        if out[0] < best:
            best = out[0]
            blam = mid
            bnu_slope = out[2]
        if out[1] < 0.0:
            lo_l = mid
            lev_a[:] = lev
        else:
            hi_l = mid
            lev_b[:] = lev
    res[0] = best
    res[1] = blam
    res[2] = bnu_slope


def node_bound(p: Any, y: Any, lo: Any, hi: Any, e: float, sl: float, mode: int,
               u1: float, u2: float, m1: float, m2: float, allow: Any, lam0: float,
               nu0: float, lev_a: Any, lev_b: Any, mult: Any, iters: int) -> float:
    """Upper bound of the pricing objective over the node (``-inf`` when it holds no
    column); ``mult`` gets the multipliers ``(lam, nu)`` of the bound, ``lev_a``,
    ``lev_b`` the entries' levels on either side of the best ``lam`` (where they differ,
    the relaxation splits the entry between two levels)."""
    n = p.shape[0]
    a, pw, k, ok, cmax = node_pieces(p, y, lo, hi, e, sl, mode, u1, u2, m1, m2, allow)
    lev = np.empty(n, dtype=np.int8)
    out = np.empty(3)
    res = np.empty(3)
    best = math.inf
    blam = lam0
    bnu = 0.0
    # h(nu) = min over lam is convex in nu: bracket its minimum on a geometric grid, then
    # golden-section search (values only: at a kink of the Lagrangian the slopes of a
    # coordinate search mislead)
    _min_lam(a, pw, k, ok, cmax, lam0, 0.0, lev, lev_a, lev_b, out, res, iters)
    if res[0] == -math.inf:
        mult[0] = lam0
        mult[1] = 0.0
        return -math.inf
    best = res[0]
    blam = res[1]
    lam = res[1]
    prev2 = 0.0
    prev = 0.0
    hprev = res[0]
    nu = max(0.25 * nu0, 1.0 / 64.0)
    hi_n = nu
    while True:
        _min_lam(a, pw, k, ok, cmax, lam, nu, lev, lev_a, lev_b, out, res, iters)
        if res[0] < best:
            best = res[0]
            blam = res[1]
            bnu = nu
        lam = res[1]
        hi_n = nu
        if res[0] >= hprev or nu > MULT_MAX:
            break
        hprev = res[0]
        prev2 = prev
        prev = nu
        nu *= 4.0
    lo_n = prev2
    gr = 0.6180339887498949
    x1 = hi_n - gr * (hi_n - lo_n)
    x2 = lo_n + gr * (hi_n - lo_n)
    _min_lam(a, pw, k, ok, cmax, blam, x1, lev, lev_a, lev_b, out, res, iters)
    f1 = res[0]
    l1 = res[1]
    _min_lam(a, pw, k, ok, cmax, blam, x2, lev, lev_a, lev_b, out, res, iters)
    f2 = res[0]
    l2 = res[1]
    for _ in range(iters // 2):
        if f1 < best:
            best = f1
            blam = l1
            bnu = x1
        if f2 < best:
            best = f2
            blam = l2
            bnu = x2
        if f1 <= f2:
            hi_n = x2
            x2 = x1
            f2 = f1
            l2 = l1
            x1 = hi_n - gr * (hi_n - lo_n)
            _min_lam(a, pw, k, ok, cmax, l2, x1, lev, lev_a, lev_b, out, res, iters)
            f1 = res[0]
            l1 = res[1]
        else:
            lo_n = x1
            x1 = x2
            f1 = f2
            l1 = l2
            x2 = lo_n + gr * (hi_n - lo_n)
            _min_lam(a, pw, k, ok, cmax, l1, x2, lev, lev_a, lev_b, out, res, iters)
            f2 = res[0]
            l2 = res[1]
    if f1 < best:
        best = f1
        blam = l1
        bnu = x1
    if f2 < best:
        best = f2
        blam = l2
        bnu = x2
    # the levels at the best multipliers
    _min_lam(a, pw, k, ok, cmax, blam, bnu, lev, lev_a, lev_b, out, res, 8)
    if res[0] < best:
        best = float(res[0])
        blam = res[1]
    mult[0] = blam
    mult[1] = bnu
    # the bound: the Lagrangian at those multipliers with its rounding margin
    lagrangian(a, pw, k, ok, cmax, blam, bnu, lev, out, True)
    return float(out[0])


def fix_levels(p: Any, y: Any, lo: Any, hi: Any, e: float, sl: float, mode: int,
               u1: float, u2: float, m1: float, m2: float, allow: Any, lam: float,
               nu: float, thr: float, out: Any, cv: Any) -> int:
    """Reduced-cost fixing at the multipliers ``(lam, nu)``: ``out`` gets ``allow``
    without the levels that cannot lead above ``thr``. Forcing entry ``x`` to level
    ``j`` changes the Lagrangian at vertex ``c`` by ``v[c, x, j] - max_allowed v[c, x]``,
    and the Lagrangian at any multipliers bounds every column of the node with ``x`` at
    ``j``: where its largest value over the vertices (with the rounding margin of
    :func:`lagrangian`) is at most ``thr``, no such column beats ``thr``. Returns how many
    levels were removed; ``cv`` gets the Lagrangian at each vertex."""
    n = p.shape[0]
    a, pw, k, ok, cst = node_pieces(p, y, lo, hi, e, sl, mode, u1, u2, m1, m2, allow)
    tot = np.empty(NCORNERS)
    bst = np.empty((NCORNERS, n))
    for c in range(NCORNERS):
        t = lam + nu * cst[c]
        sabs = abs(lam) + nu * abs(cst[c])
        for x in range(n):
            best, _, babs = _entry(a, pw, k, ok, c, x, lam, nu, True)
            bst[c, x] = best
            t += best
            sabs += babs
        # the margin of :func:`lagrangian`, plus two roundings of the swap below
        tot[c] = t + 1e-14 * (n + 12) * sabs
        cv[c] = tot[c]
    removed = 0
    for x in range(n):
        out[x] = allow[x]
        if int(ok[x, 0]) + int(ok[x, 1]) + int(ok[x, 2]) <= 1:
            continue
        for j in range(3):
            if not ok[x, j]:
                continue
            worst = -math.inf
            bad = False
            for c in range(NCORNERS):
                v = a[c, x, j] + nu * k[c, x, j] - lam * pw[c, x, j]
                f = tot[c] - bst[c, x] + v
                if f != f:
                    bad = True  # a NaN proves nothing: the level stays
                if f > worst:
                    worst = f
            if not bad and worst <= thr:
                out[x] = out[x] & ~(1 << j)
                removed += 1
    return removed


def _build() -> dict[str, Callable[..., Any]] | None:
    try:
        import numba
    except ImportError:
        return None

    g = globals()
    for name in ("_xlogx", "corners", "pieces", "node_pieces", "_entry", "lagrangian",
                 "_min_lam", "node_bound", "fix_levels"):
        if name not in _PY:
            _PY[name] = g[name]
            g[name] = njit_cached(numba, g[name], boundscheck=None)
    return {"node_bound": g["node_bound"], "fix_levels": g["fix_levels"]}


#: number of allowed levels of a mask
POPCOUNT = np.array([bin(i).count("1") for i in range(8)], dtype=np.int8)
