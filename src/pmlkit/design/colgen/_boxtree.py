"""Compiled loops of the block-pair branch and bound that prices mutual information over a
box (:class:`pmlkit.design.colgen.BoxTreeOracle`; the method and its proof are in that
module's docstring).

Every assignment of one half of the alphabet to (bottom, middle, top) is a row of
``FEATURES`` sums; a pair of rows (one per half) adds up to the sums of a whole
assignment. The kernels:

* ``build_tree``: a kd-tree over the rows of one half (median splits on the weighted
  widest feature, leaves of at most ``leaf`` rows), every node storing the smallest and
  largest value of every feature over its rows; ``refit`` recomputes the ranges of the
  dual features for new duals (the tree is built once, on the features of the box);
* ``pair_bound``: an upper bound of the pricing objective over every pair of a node pair,
  from the feature intervals alone;
* ``search``: the depth-first walk over node pairs, pruning a pair whose bound is at most
  the threshold and evaluating the pairs of two leaves exactly (BoxOracle's formula,
  operation for operation).

numba is imported only when an oracle is built (never by ``import pmlkit``), and the
machine code is cached on disk. Without numba (or with ``PMLKIT_NO_NUMBA`` set to a value
other than ``0``) :func:`compiled` is ``None`` and the designer keeps its other oracles.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._kernels import build_once, njit_cached

__all__: list[str] = []

#: Column order of the per-row features.
FEATURES = ("pT", "pM", "pS", "lT", "lS", "hT", "hS", "nT", "nM", "YT", "YS", "ZT", "ZM",
            "ZS")
K = len(FEATURES)
(PT, PM, PS, LT, LS, HT, HS, NT, NM, YT, YS, ZT, ZM, ZS) = range(K)

#: Above this ratio of the two levels the three-level bound takes the top-only column as
#: the upper end of the segment (the limit of an unbounded ratio).
RHO_MAX = 1e6

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
#: the plain Python versions of the functions compiled by numba
_PY: dict[str, Callable[..., Any]] = {}


def compiled() -> dict[str, Callable[..., Any]] | None:
    """The compiled kernels by name, or ``None`` when numba is missing or disabled."""
    return build_once(_STATE, _LOCK, _build)


# ---------------------------------------------------------------------------------------
# plain Python versions (compiled by _build; also called directly by the tests)

def _fixed_rho(rho: float, pt_lo: float, pt_hi: float, ps_lo: float, ps_hi: float,
               zt: float, zm: float, zs: float) -> float:
    """``max (A pT - B) / P - log P`` over ``pT`` in ``[pt_lo, pt_hi]``, ``pS`` in
    ``[ps_lo, ps_hi]``, with ``P = (rho - 1) pT + pS``, ``A = rho log rho`` and
    ``B = (rho - 1) Z(T) + Z(S) = rho Z(T) + Z(M)`` at least ``(rho - 1) zt + zs`` and
    ``rho zt + zm``: the three-level objective plus ``c`` at a fixed ratio ``rho >= 1`` of
    the levels, ``zt``, ``zm``, ``zs`` the smallest ``Z(T)``, ``Z(M)``, ``Z(S)`` (it
    decreases in each). For a fixed ``P`` the largest ``pT`` is best; ``f(P) = -D / P -
    log P`` is largest at ``P = D`` clamped to an interval."""
    a = max(rho - 1.0, 0.0)
    big_a = rho * math.log(rho) if rho > 1.0 else 0.0
    b = max(a * zt + zs, rho * zt + zm)
    p_hi = a * pt_hi + ps_hi
    # P up to a pT_hi + pS_lo: pT = (P - pS_lo) / a, the largest with pS >= pS_lo
    p_mid = a * pt_hi + ps_lo
    n2 = big_a * pt_hi - b
    if a > 1e-9:
        p_lo = a * pt_lo + ps_lo
        d = big_a * ps_lo / a + b
        p1 = min(max(d, p_lo), p_mid)
        g = big_a / a - d / p1 - math.log(p1)
    else:
        # rho ~ 1: pT_hi throughout (a relaxation)
        g = -math.inf
        p_mid = a * pt_lo + ps_lo
    # beyond: pT = pT_hi, N = A pT_hi - B fixed, N / P - log P largest at P = -N
    p2 = min(max(-n2, p_mid), p_hi)
    out: float = max(g, n2 / p2 - math.log(p2))
    return out


def pair_bound(lo: Any, hi: Any, e: float, sl: float, n: float, pmin: float, c: float,
               buf: Any, thr: float = math.inf) -> float:
    """An upper bound of the pricing objective ``G`` over every assignment whose feature
    sums lie in ``[lo, hi]`` (``-inf`` when none of them can be a point of ``K_1``).
    ``buf`` and ``thr`` are not used (kept for the callers)."""
    best = -math.inf
    ns_hi = hi[NT] + hi[NM]
    qs_hi = max(hi[LS], hi[HS] - sl)
    if ns_hi >= n - 0.5:
        qs_hi = max(qs_hi, 1.0)
    qs_hi = qs_hi * (1.0 + 1e-12) + 1e-15
    # one level (T empty): G = -Z(S) / p(S) - c - log p(S), largest at p(S) = Z(S) clamped
    if lo[NT] < 0.5 and ns_hi >= 0.5 and e * qs_hi >= 1.0 - 1e-9:
        ps_lo = max(lo[PS], pmin)
        ps_hi = max(hi[PS], ps_lo)
        z = lo[ZS]
        ps = min(max(z, ps_lo), ps_hi)
        best = -z / ps - c - math.log(ps)
    # three levels: T and M non-empty
    if hi[NT] < 0.5 or hi[NM] < 0.5:
        return best
    qt_lo = max(max(lo[LT], lo[HT] - sl), 0.0) * (1.0 - 1e-12) - 1e-15
    qt_hi = max(hi[LT], hi[HT] - sl) * (1.0 + 1e-12) + 1e-15
    qs_lo = max(lo[LS], lo[HS] - sl) * (1.0 - 1e-12) - 1e-15
    if e * qt_lo >= 1.0:
        return best  # 1 - e q(T) <= 0 for every pair
    # rho = e (qS - qT) / (1 - e qT): increasing in qS; in qT increasing iff e qS >= 1
    qt = qt_hi if e * qs_hi >= 1.0 else qt_lo
    den = 1.0 - e * qt
    rho_hi = e * (qs_hi - qt) / den if den > 0.0 else math.inf
    if rho_hi < 1.0 - 1e-9:
        return best
    qt = qt_lo if e * qs_lo >= 1.0 else qt_hi
    den = 1.0 - e * qt
    rho_lo = e * (qs_lo - qt) / den if den > 0.0 else 1.0
    # the evaluated ratio is never below 1
    rho_lo = max(rho_lo * (1.0 - 1e-12), 1.0)
    rho_hi = max(rho_hi, 1.0) * (1.0 + 1e-12)
    pt_lo, pt_hi = max(lo[PT], pmin), max(hi[PT], pmin)
    pm_lo = max(lo[PM], pmin)
    # G is convex along the segment of columns between the one-level and the top-only
    # column (in t = rho p(T) / P, increasing in rho) for fixed sums: its largest value
    # over the rho range is at an end, and at a fixed rho exact over the ranges
    ps_lo = max(lo[PS], pt_lo + pm_lo)
    ps_hi = max(hi[PS], ps_lo)
    alt = _fixed_rho(rho_lo, pt_lo, pt_hi, ps_lo, ps_hi, lo[ZT], lo[ZM], lo[ZS])
    if rho_hi < RHO_MAX:
        alt = max(alt, _fixed_rho(rho_hi, pt_lo, pt_hi, ps_lo, ps_hi, lo[ZT], lo[ZM],
                                  lo[ZS]))
    else:
        # the top-only end (t = 1): G = -Z(T) / p(T) - c - log p(T)
        pp = min(max(lo[ZT], pt_lo), pt_hi)
        alt = max(alt, -lo[ZT] / pp - math.log(pp))
    alt -= c
    return float(max(best, alt))


def node_pair_bound(loa: Any, hia: Any, i: int, lob: Any, hib: Any, j: int, lo: Any,
                    hi: Any, e: float, sl: float, n: float, pmin: float, c: float, buf: Any,
                    thr: float) -> float:
    """:func:`pair_bound` over every pair of node ``i`` of the first tree (feature ranges
    ``loa[i]``, ``hia[i]``) and node ``j`` of the second (``lob[j]``, ``hib[j]``): the
    ranges of the pairs' sums are the sums of the ranges (``lo``, ``hi`` are scratch)."""
    for k in range(lo.shape[0]):
        lo[k] = loa[i, k] + lob[j, k]
        hi[k] = hia[i, k] + hib[j, k]
    return pair_bound(lo, hi, e, sl, n, pmin, c, buf, thr)


def pair_value(fa: Any, fb: Any, e: float, sl: float, n: float) -> float:
    """The exact objective of the pair of rows ``fa``, ``fb`` (``-inf`` when the assignment
    is not a point of ``K_1``), as :class:`~pmlkit.design.colgen.BoxOracle` computes it."""
    pt = fa[PT] + fb[PT]
    ps = fa[PS] + fb[PS]
    nt = fa[NT] + fb[NT]
    ns = (fa[NT] + fa[NM]) + (fb[NT] + fb[NM])
    qt = max(fa[LT] + fb[LT], (fa[HT] + fb[HT]) - sl) if nt > 0.5 else 0.0
    qs = 1.0 if ns > n - 0.5 else max(fa[LS] + fb[LS], (fa[HS] + fb[HS]) - sl)
    rho = 1.0
    if nt < 0.5:
        if not (ns > 0.5 and e * qs >= 1.0 - 1e-12):
            return -math.inf
    else:
        den = 1.0 - e * qt
        if not (ns > nt + 0.5 and den > 0.0):
            return -math.inf
        rho = e * (qs - qt) / den
        if not rho >= 1.0 - 1e-12:
            return -math.inf
        rho = max(rho, 1.0)
    big_p = (rho - 1.0) * pt + ps
    c2 = 1.0 / big_p
    c1 = (rho - 1.0) * c2
    c0 = (rho * math.log(rho) if rho > 0 else 0.0) * pt * c2 - math.log(big_p)
    g: float = c0 - c1 * (fa[YT] + fb[YT]) - c2 * (fa[YS] + fb[YS])
    return g if math.isfinite(g) else -math.inf


def build_tree(f: Any, weight: Any, leaf: int) -> tuple[Any, Any, Any, Any, Any, Any]:
    """kd-tree over the rows of ``f`` ``(rows, K)``: returns ``(perm, start, end, left,
    lo, hi)``; node ``i`` holds rows ``perm[start[i]:end[i]]``, its children are
    ``left[i]`` and ``left[i] + 1`` (``-1`` for a leaf), ``lo[i]``/``hi[i]`` the feature
    ranges over its rows. Splits at the median of the feature of largest
    ``weight * (hi - lo)``."""
    rows, kk = f.shape
    cap = 4 * (rows // max(1, leaf // 2) + 2)
    perm = np.arange(rows)
    start = np.zeros(cap, dtype=np.int64)
    end = np.zeros(cap, dtype=np.int64)
    left = -np.ones(cap, dtype=np.int64)
    lo = np.zeros((cap, kk))
    hi = np.zeros((cap, kk))
    end[0] = rows
    nn = 1
    stack = np.zeros(256, dtype=np.int64)
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        s0, s1 = start[i], end[i]
        for k in range(kk):
            lo[i, k] = math.inf
            hi[i, k] = -math.inf
        for r in range(s0, s1):
            row = perm[r]
            for k in range(kk):
                x = f[row, k]
                if x < lo[i, k]:
                    lo[i, k] = x
                if x > hi[i, k]:
                    hi[i, k] = x
        if s1 - s0 <= leaf:
            continue
        d = 0
        wd = -1.0
        for k in range(kk):
            w = weight[k] * (hi[i, k] - lo[i, k])
            if w > wd:
                wd = w
                d = k
        if wd <= 0.0:
            continue
        seg = perm[s0:s1].copy()
        order = np.argsort(f[seg, d], kind="mergesort")
        perm[s0:s1] = seg[order]
        mid = s0 + (s1 - s0) // 2
        left[i] = nn
        start[nn], end[nn] = s0, mid
        start[nn + 1], end[nn + 1] = mid, s1
        stack[top] = nn
        stack[top + 1] = nn + 1
        top += 2
        nn += 2
    return perm, start[:nn], end[:nn], left[:nn], lo[:nn], hi[:nn]


def refit(f: Any, start: Any, end: Any, left: Any, lo: Any, hi: Any, cols: Any) -> None:
    """Recompute the ranges ``lo``/``hi`` of the features ``cols`` of every node (rows of
    ``f`` in tree order): leaves from their rows, the other nodes from their children
    (whose indices are larger than their parent's)."""
    for i in range(start.shape[0] - 1, -1, -1):
        c1 = left[i]
        for k in cols:
            if c1 < 0:
                a = math.inf
                b = -math.inf
                for r in range(start[i], end[i]):
                    x = f[r, k]
                    a = min(a, x)
                    b = max(b, x)
            else:
                a = min(lo[c1, k], lo[c1 + 1, k])
                b = max(hi[c1, k], hi[c1 + 1, k])
            lo[i, k] = a
            hi[i, k] = b


def dual_features(digits: Any, y: Any, z: Any, f: Any) -> None:
    """Write ``Y(T), Y(S), Z(T), Z(M), Z(S)`` of every row into ``f`` (``digits[r, x]``:
    0 bottom, 1 middle, 2 top)."""
    for r in range(digits.shape[0]):
        yt = 0.0
        ys = 0.0
        zt = 0.0
        zm = 0.0
        for x in range(digits.shape[1]):
            d = digits[r, x]
            if d == 2:
                yt += y[x]
                zt += z[x]
            elif d == 1:
                ys += y[x]
                zm += z[x]
        f[r, YT] = yt
        f[r, YS] = yt + ys
        f[r, ZT] = zt
        f[r, ZM] = zm
        f[r, ZS] = zt + zm


def search(fa: Any, sa: Any, ea: Any, la: Any, loa: Any, hia: Any,
           fb: Any, sb: Any, eb: Any, lb: Any, lob: Any, hib: Any,
           e: float, sl: float, n: float, pmin: float, c: float, keep: int,
           stack_i: Any, stack_j: Any, stack_b: Any, top: int, max_pairs: int,
           cand_v: Any, cand_a: Any, cand_b: Any, ncand: int, state: Any) -> tuple[int, int]:
    """Depth-first branch and bound over node pairs (rows of ``fa``/``fb`` in tree order).

    The stack ``(stack_i, stack_j, stack_b)[:top]`` holds node pairs and their bounds;
    ``state = [threshold, best, evaluated pairs]``. Pairs of two leaves are evaluated
    exactly; those above the threshold are kept as candidates (``cand_*[:ncand]``; when
    the buffer is full, only its best ``keep`` stay and the threshold rises to the
    ``keep``-th best value). Stops after about ``max_pairs`` steps (exact evaluations and
    bounds) or on an empty stack; returns the new ``(top, ncand)``. ``state[2:6]`` count
    the exact evaluations, node-pair bounds, row bounds and leaf pairs."""
    lo = np.empty(fa.shape[1])
    hi = np.empty(fa.shape[1])
    buf = np.empty((4, 16))
    cap = cand_v.shape[0]
    thr = state[0]
    best = state[1]
    done = 0
    while top > 0 and done < max_pairs:
        top -= 1
        i, j, bd = stack_i[top], stack_j[top], stack_b[top]
        if bd <= thr:
            continue
        if la[i] < 0 and lb[j] < 0:
            state[5] += 1
            for r in range(sa[i], ea[i]):
                state[4] += 1
                done += 1
                for k in range(lo.shape[0]):
                    lo[k] = fa[r, k] + lob[j, k]
                    hi[k] = fa[r, k] + hib[j, k]
                if pair_bound(lo, hi, e, sl, n, pmin, c, buf, thr) <= thr:
                    continue
                for q in range(sb[j], eb[j]):
                    g = pair_value(fa[r], fb[q], e, sl, n)
                    done += 1
                    state[2] += 1
                    if g > best:
                        best = g
                    if g > thr:
                        if ncand == cap:
                            # keep the best `want`, raise the threshold to the want-th
                            order = np.argsort(-cand_v[:ncand])
                            kk = max(keep, 1)
                            tv = cand_v[order[:kk]].copy()
                            ta = cand_a[order[:kk]].copy()
                            tb = cand_b[order[:kk]].copy()
                            cand_v[:kk] = tv
                            cand_a[:kk] = ta
                            cand_b[:kk] = tb
                            ncand = kk
                            thr = max(thr, tv[kk - 1])
                        if g > thr:
                            cand_v[ncand] = g
                            cand_a[ncand] = r
                            cand_b[ncand] = q
                            ncand += 1
            continue
        # split the node with more rows (a leaf is never split)
        state[3] += 2
        done += 2
        split_a = lb[j] < 0 or (la[i] >= 0 and ea[i] - sa[i] >= eb[j] - sb[j])
        if split_a:
            pi1, pj1, pi2, pj2 = la[i], j, la[i] + 1, j
        else:
            pi1, pj1, pi2, pj2 = i, lb[j], i, lb[j] + 1
        b1 = node_pair_bound(loa, hia, pi1, lob, hib, pj1, lo, hi, e, sl, n, pmin, c, buf,
                             thr)
        b2 = node_pair_bound(loa, hia, pi2, lob, hib, pj2, lo, hi, e, sl, n, pmin, c, buf,
                             thr)
        if b1 > b2:  # the better child on top of the stack
            b1, b2 = b2, b1
            pi1, pj1, pi2, pj2 = pi2, pj2, pi1, pj1
        if b1 > thr:
            stack_i[top], stack_j[top], stack_b[top] = pi1, pj1, b1
            top += 1
        if b2 > thr:
            stack_i[top], stack_j[top], stack_b[top] = pi2, pj2, b2
            top += 1
    state[0] = thr
    state[1] = best
    return top, ncand


def _build() -> dict[str, Callable[..., Any]] | None:
    try:
        import numba
    except ImportError:
        return None

    g = globals()
    # the compiled functions call each other through the module's globals: replace them
    # once by their compiled versions (the plain ones stay in _PY)
    for name in ("_fixed_rho", "pair_bound", "node_pair_bound", "pair_value",
                 "build_tree", "refit", "dual_features", "search"):
        if name not in _PY:
            _PY[name] = g[name]
            g[name] = njit_cached(numba, g[name], boundscheck=None)
    return {name: g[name] for name in ("pair_bound", "pair_value", "build_tree", "refit",
                                       "dual_features", "search")}
