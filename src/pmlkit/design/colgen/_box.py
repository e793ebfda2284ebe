"""Exact pricing of mutual information over a box: the streamed block assignments
(:class:`BoxOracle`) and their search by block pairs (:class:`BoxTreeOracle`, kernels
in :mod:`~pmlkit.design.colgen._boxtree`).

Block-pair branch and bound for a box. Every assignment of one half of the alphabet to
(bottom, middle, top) is a row of block sums (``p(T), p(M), p(S), lo(T), lo(S), hi(T),
hi(S)``, the block sizes, and per pricing call ``Y(T), Y(S)`` and ``Z = Y - c p`` for a
constant ``c``, the least-squares fit of ``y`` by ``c p``, so that ``Z`` is small); a whole
assignment is a pair of rows and its sums are their sums. Each half is sorted into a
kd-tree (median splits of the widest feature, leaves of 16 rows), every node storing the
range of every feature over its rows, so over a pair of nodes every sum lies in
``[min + min, max + max]`` (float addition is monotone, so this holds for the rounded sums
of the exact evaluation too). An upper bound of ``G`` over a node pair, from the ranges:

1. One level (``T`` empty): ``G = -Z(S) / p(S) - c - log p(S)`` is decreasing in ``Z(S)``
   and, as a function of ``p(S)``, largest at ``p(S) = Z(S)``: clamped to the range of
   ``p(S)``, this is the exact maximum over the ranges. It is dropped when
   ``e^eps q(S) < 1`` for the largest ``q(S)`` (``q`` is increasing in ``lo`` and ``hi``).
2. Three levels: ``rho = e^eps (q(S) - q(T)) / (1 - e^eps q(T))`` is increasing in
   ``q(S)``, and in ``q(T)`` exactly when ``e^eps q(S) >= 1``, so its range follows from the
   corners of the ``q`` ranges (unbounded above when ``1 - e^eps q(T)`` can reach 0; none
   when it is never positive or ``rho < 1`` throughout). For fixed blocks the columns
   ``(rho 1_T + 1_M) / P``, ``P = (rho - 1) p(T) + p(S)``, lie on a segment: they are
   ``(t / p(T)) 1_T + ((1 - t) / p(M)) 1_M`` with ``t = rho p(T) / P`` increasing in
   ``rho``, from the one-level column (``rho = 1``) to the top-only one ``1_T / p(T)``
   (``rho -> inf``). ``G`` is convex in the column, so along the segment it is at most its
   larger value at the two ends of the ``rho`` range, for every value of the sums at once:
   the bound is the larger of the maxima over the ranges at ``rho_lo`` and at ``rho_hi``
   (the top-only end when ``rho`` is unbounded: ``-Z(T) / p(T) - c - log p(T)``, largest at
   ``p(T) = Z(T)`` clamped). At a fixed ``rho``, ``G = N / P - c - log P`` with ``N = rho
   log(rho) p(T) - rho Z(T) - Z(M)``, decreasing in the dual sums (``rho Z(T) + Z(M) =
   (rho - 1) Z(T) + Z(S)`` is at least either form at the smallest sums); for a fixed
   ``P`` the largest ``p(T)`` is best, and with it ``G`` is ``K - D / P - log P`` on two
   pieces of the ``P`` range, largest at ``P = D`` clamped: exact over the ranges of
   ``p(T)`` and ``p(S)``. (Bounding ``N`` and ``P`` separately over the ``rho`` range, the
   former bound, was looser by about 0.1-1 at leaf pairs with ``1 - e^eps q(T)`` small.)

The search walks the node pairs depth first, the child pair with the larger bound first;
a pair whose bound is at most the threshold ``t`` is dropped, a pair of leaves is evaluated
exactly (BoxOracle's formula; each row is first bounded against the other leaf's ranges).
``t`` starts at the pricing tolerance and only rises to the ``k``-th best exact value found
(``k`` at least the number of columns asked for), so every pair never evaluated has
``G <= t <= max(tolerance, best value found)``, and ``max(t, best, bounds of the pairs still
on the stack)`` is a valid bound at any moment: exact (above the tolerance) when the stack
is empty, larger when the deadline stops the search. The ranges are widened by a relative
``1e-12`` and the bound gets the streaming oracle's margin ``1e-10 (1 + sum |y|)`` for
rounding. Only near-optimal pairs need exact evaluation; with the final duals of a design
the bounds are loose by about 1e-2 at a leaf pair (the ranges of the sums over 16 rows), so
the work still grows roughly as ``3^N`` times a small fraction (N = 20, eps = 2: 8e6 of
3.5e9 pairs evaluated, under a second per search). The trees split on the box sums that
move ``G`` most near the optimum: all six from ``p(T)`` to ``hi(S)`` for small eps, mostly
``lo(T)`` from ``e^eps >= 4`` on (the blocks near the optimum then have ``q(T)`` close to
``e^-eps``, where ``rho`` is most sensitive to it). A search that only has to return
improving columns (not a bound) stops once it holds five times the columns asked for, and
every search keeps the pairs down to ``1e-3`` below the tolerance: the next rounds are
priced from those pairs first, so a full search runs only when they give nothing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import PMLError
from ._oracles import BlockColumns, xlogx
from ._work import BOX_RATE, TREE_RATE, meter_of

#: Largest alphabet priced exactly by :class:`BoxOracle` (``3^N`` assignments in a full
#: pricing pass: 43 million at N = 16, about 7 s on a loaded machine; the design at N = 16
#: is certified optimal in 26-45 s, so the designer uses it there only with a budget of at
#: least 45 s, and only without numba: :class:`BoxTreeOracle` takes N = 16 in 1-3 s).
BOX_MAX_N = 16

#: Largest alphabet priced by :class:`BoxTreeOracle` (two halves of ``3^12`` assignments,
#: about 60 MB of sums each).
BOX_TREE_MAX_N = 24


def _half_codes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Top and middle masks ``(3^n, n)`` of every assignment of ``n`` entries to (bottom,
    middle, top): digit 0, 1, 2 of the base-3 code."""
    codes = np.arange(3**n, dtype=np.int64)
    digits = (codes[:, None] // (3 ** np.arange(n))[None, :]) % 3
    return digits == 2, digits == 1


def box_terms(pair: Callable[[str], np.ndarray], e: float, slack: float, n: int
               ) -> tuple[np.ndarray, ...]:
    """The level structure of block assignments over a box (see :class:`BoxOracle`):
    ``(one, three, c0, c1, c2)``, where ``pair(key)`` gives the block sums (``pT``, ``pS``,
    ``lT``, ``lS``, ``hT``, ``hS``, ``nT``, ``nS``) of the assignments, ``one``/``three``
    mark the one-level and three-level points of ``K_1`` and ``G = c0 - c1 Y(T) - c2 Y(S)``
    (not masked: ``c0`` may be meaningless where neither holds)."""
    pt, ps = pair("pT"), pair("pS")
    nt, ns = pair("nT"), pair("nS")
    qt = np.where(nt > 0, np.maximum(pair("lT"), pair("hT") - slack), 0.0)
    qs = np.where(ns == n, 1.0, np.maximum(pair("lS"), pair("hS") - slack))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        one = (nt == 0) & (ns > 0) & (e * qs >= 1.0 - 1e-12)
        den = 1.0 - e * qt
        rho = e * (qs - qt) / den
        three = (nt > 0) & (ns > nt) & (den > 0) & (rho >= 1.0 - 1e-12)
        rho = np.where(three, np.maximum(rho, 1.0), 1.0)
        big_p = (rho - 1.0) * pt + ps
        c2 = 1.0 / big_p
        c1 = (rho - 1.0) * c2
        c0 = xlogx(rho) * pt * c2 - np.log(big_p)
    return one, three, c0, c1, c2


def box_column(top: np.ndarray, mid: np.ndarray, p: np.ndarray, lo: np.ndarray,
                hi: np.ndarray, slack: float, e: float) -> np.ndarray:
    """The three-level column of a box (bounds ``lo``, ``hi``, ``slack = sum(hi) - 1``)
    with top block ``top`` and middle block ``mid`` (boolean masks), normalised to
    ``p . w = 1``: the top level ``rho`` is the largest the box's worst case allows
    (``e (q(S) - q(T)) / (1 - e q(T))``, ``q = max(lo, hi - slack)`` the least mass a
    distribution of the box puts on a block, ``S = top + mid``), at least 1."""
    s = top | mid
    qs = 1.0 if s.all() else max(float(lo[s].sum()), float(hi[s].sum()) - slack)
    if top.any():
        qt = max(float(lo[top].sum()), float(hi[top].sum()) - slack)
        rho = max(e * (qs - qt) / (1.0 - e * qt), 1.0)
    else:
        rho = 1.0
    w = np.where(top, rho, np.where(mid, 1.0, 0.0))
    out: np.ndarray = w / float(p @ w)
    return out


class BoxOracle(BlockColumns):
    """Exact pricing for mutual information over ``K_1`` of a :class:`~pmlkit.sets.Box`
    ``{lo <= Q <= hi, sum Q = 1}`` (prior ``p > 0``, ``N <=`` :data:`BOX_MAX_N`).

    For a set ``X``, the smallest mass a distribution of the box can give it is
    ``q(X) = max(lo(X), 1 - hi(X^c))``; the worst distribution of a column fills its
    smallest entries first, so it gives every level set ``{w >= a}`` its smallest mass at
    once and ``min_Q Q . w = sum_a (a - a') q({w >= a})`` over the levels ``a`` of ``w``
    (``a'`` the next lower level). A vertex of ``K_1`` has at most three levels (top block
    ``T``, middle ``M``, bottom 0; ``S = T + M``); written as ``w = s (rho 1_T + 1_M)``:

    - ``T`` empty (one level): ``w = 1_S / p(S)``, a point of ``K_1`` iff
      ``e^eps q(S) >= 1``;
    - ``T`` non-empty: the PML constraint is tight, ``rho (1 - e^eps q(T)) = e^eps
      (q(S) - q(T))``, so ``rho = e^eps (q(S) - q(T)) / (1 - e^eps q(T))`` (needs
      ``e^eps q(T) < 1`` and ``rho >= 1``), and ``s = 1 / P`` with
      ``P = (rho - 1) p(T) + p(S)``.

    With ``Y(X) = sum_{x in X} y_x``, the pricing objective at such a point is
    ``G = (rho log(rho) p(T) - (rho - 1) Y(T) - Y(S)) / P - log P``. Every quantity is a
    sum over the entries of a block, so the ``3^N`` assignments are evaluated as pairs of
    assignments of the two halves of the alphabet (meet in the middle, ``3^(N/2)`` sums per
    half), streamed in chunks: exact, with no ray list in memory. The bound is the largest
    value plus a rounding margin of ``1e-10 (1 + sum |y|)``; the best candidates, checked
    against the exact worst case, are the improving columns.

    Examples
    --------
    With zero duals the bound is the largest ``mu`` over ``K_1``. For a fair coin known to
    within ``0.4 <= Q <= 0.6`` at ``eps = log 2``, the best column is ``w = (U, C)`` with
    ``U = 2 (0.4 U + 0.6 C)`` and ``(U + C) / 2 = 1``: ``U = 12 / 7``, ``C = 2 / 7``:

    >>> from pmlkit.sets import Box
    >>> p = np.array([0.5, 0.5])
    >>> oracle = BoxOracle(Box([0.4, 0.4], [0.6, 0.6]), p, math.log(2))
    >>> cols, vals, bound = oracle.price(np.zeros(2), want=1, deadline=math.inf,
    ...                                  atol=1e-12)
    >>> u, c = 12 / 7, 2 / 7
    >>> round(bound, 9) == round(0.5 * (u * math.log(u) + c * math.log(c)), 9)
    True
    >>> np.round(np.sort(cols[:, 0]), 9).tolist() == [round(c, 9), round(u, 9)]
    True
    """

    name = "exact enumeration (box)"
    #: rounds answered from the cache return no bound: :func:`column_generation` asks for
    #: one at the end
    skips_bounds = True
    #: assignments kept from a full pass for the partial pricing of the next rounds
    CACHE = 200_000

    def __init__(self, uset: Any, p: np.ndarray, eps: float, *, chunk: int = 1 << 19
                 ) -> None:
        from .._common import exp_capped

        p = np.asarray(p, dtype=np.float64)
        self.uset, self.p, self.eps, self.n = uset, p, eps, p.size
        self.e = exp_capped(eps)
        self.lo = np.asarray(uset.lower, dtype=np.float64)
        self.hi = np.asarray(uset.upper, dtype=np.float64)
        self.slack = float(self.hi.sum()) - 1.0  # q(X) = max(lo(X), hi(X) - slack)
        na = self.n // 2
        self.halves = [np.arange(na), np.arange(na, self.n)]
        self.masks = [_half_codes(h.size) for h in self.halves]
        self.sums = []
        for h, (top, mid) in zip(self.halves, self.masks, strict=True):
            s = top | mid
            ft, fs = top.astype(np.float64), s.astype(np.float64)
            self.sums.append({
                "pT": ft @ p[h], "pS": fs @ p[h], "lT": ft @ self.lo[h], "lS": fs @ self.lo[h],
                "hT": ft @ self.hi[h], "hS": fs @ self.hi[h],
                "nT": top.sum(axis=1), "nS": s.sum(axis=1)})
        self.rows = max(1, chunk // max(1, self.masks[1][0].shape[0]))
        self._cache: tuple[np.ndarray, ...] | None = None
        self._last_y: np.ndarray | None = None

    def _coefficients(self, ia: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(c0, c1, c2)`` with ``G = c0 - c1 Y(T) - c2 Y(S)`` for every pair (rows ``ia``
        of the first half, all of the second); ``c0 = -inf`` for assignments that are not
        points of ``K_1``."""
        a, b = self.sums
        e, sl = self.e, self.slack

        def pair(key: str) -> np.ndarray:
            out: np.ndarray = a[key][ia][:, None] + b[key][None, :]
            return out

        one, three, c0, c1, c2 = box_terms(pair, e, sl, self.n)
        ok = (one | three) & np.isfinite(c0) & np.isfinite(c1) & np.isfinite(c2)
        return np.where(ok, c0, -math.inf), np.where(ok, c1, 0.0), np.where(ok, c2, 0.0)

    def _column(self, ia: int, ib: int) -> np.ndarray:
        n = self.n
        top, mid = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        for h, (tm, mm), i in zip(self.halves, self.masks, (ia, ib), strict=True):
            top[h], mid[h] = tm[i], mm[i]
        return box_column(top, mid, self.p, self.lo, self.hi, self.slack, self.e)

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns and the exact bound on ``max_{v in K_1} mu(v) - y . v``.

        Partial pricing: the best assignments of the last full pass are re-priced first
        (cheap); while they still give improving columns the round returns them without a
        bound (``inf``, unless ``full``); otherwise every assignment is evaluated (a full
        pass runs to its end; its work is counted)."""
        repeat = self._last_y is not None and np.array_equal(y, self._last_y)
        self._last_y = y.copy()
        self._until = until
        # the same duals twice: the cached columns did not help, price everything
        if not full and not repeat and self._cache is not None:
            idx, c0, c1, c2 = self._cache
            meter_of(self).spend(BOX_RATE * idx.size)
            yt = [tm.astype(np.float64) @ y[h]
                  for h, (tm, _) in zip(self.halves, self.masks, strict=True)]
            ys = [(tm | mm).astype(np.float64) @ y[h]
                  for h, (tm, mm) in zip(self.halves, self.masks, strict=True)]
            nb = self.masks[1][0].shape[0]
            ia, ib = idx // nb, idx % nb
            val = c0 - c1 * (yt[0][ia] + yt[1][ib]) - c2 * (ys[0][ia] + ys[1][ib])
            cols, vals = self._columns(idx, val, y, want, atol)
            if cols.shape[1]:
                return cols, vals, math.inf
        return self._full(y, want=want, atol=atol)

    def _columns(self, flat: np.ndarray, val: np.ndarray, y: np.ndarray, want: int,
                 atol: float) -> tuple[np.ndarray, np.ndarray]:
        """The feasible improving columns among the ``want`` best assignments."""
        keep = max(want, 1)
        order = np.argsort(-val, kind="stable")[:keep]
        order = order[val[order] > atol]
        nb = self.masks[1][0].shape[0]
        cols = [self._column(int(f // nb), int(f % nb)) for f in flat[order]]
        return self.improving(cols, y, atol)

    def _full(self, y: np.ndarray, *, want: int, atol: float
              ) -> tuple[np.ndarray, np.ndarray, float]:
        yt = [tm.astype(np.float64) @ y[h] for h, (tm, _) in zip(self.halves, self.masks,
                                                                  strict=True)]
        ys = [(tm | mm).astype(np.float64) @ y[h]
              for h, (tm, mm) in zip(self.halves, self.masks, strict=True)]
        na, nb = self.masks[0][0].shape[0], self.masks[1][0].shape[0]
        meter_of(self).spend(BOX_RATE * na * nb)
        per = max(1, self.CACHE // max(1, -(-na // self.rows)))
        best = -math.inf
        pool: list[tuple[np.ndarray, ...]] = []
        for r0 in range(0, na, self.rows):
            ia = np.arange(r0, min(r0 + self.rows, na))
            c0, c1, c2 = (c.ravel() for c in self._coefficients(ia))
            val = c0 - c1 * (yt[0][ia][:, None] + yt[1][None, :]).ravel() \
                - c2 * (ys[0][ia][:, None] + ys[1][None, :]).ravel()
            best = max(best, float(val.max()))
            k = min(per, val.size)
            idx = np.argpartition(-val, k - 1)[:k]
            idx = idx[np.isfinite(val[idx])]
            pool.append((idx + r0 * nb, val[idx], c0[idx], c1[idx], c2[idx]))
        bound = best + 1e-10 * (1.0 + float(np.abs(y).sum()))
        flat, vals_all, c0s, c1s, c2s = (np.concatenate(z) for z in zip(*pool, strict=True))
        self._cache = (flat, c0s, c1s, c2s)
        cols, vals = self._columns(flat, vals_all, y, want, atol)
        return cols, vals, bound


class BoxTreeOracle(BoxOracle):
    """Exact pricing for mutual information over a :class:`~pmlkit.sets.Box` from
    :data:`BOX_MAX_N` to :data:`BOX_TREE_MAX_N`: :class:`BoxOracle`'s pairs of
    half-assignments, searched by branch and bound over pairs of blocks instead of
    streamed (module docstring). Needs numba (:meth:`available`).

    ``price`` returns the improving columns and a valid bound on
    ``max_{v in K_1} mu(v) - y . v``: exact (plus the rounding margin) when the search
    finishes, the largest bound of the block pairs still open when it is stopped by the
    deadline.
    """

    name = "block-pair branch and bound (box)"
    #: rows of a leaf block of each half
    LEAF = 16
    #: search steps (bounds and exact evaluations) between two deadline checks
    CHUNK = 1_000_000
    CENTRE = True
    #: pairs kept from a search for the partial pricing of the next rounds
    CACHE = 2000
    #: how far below the pricing tolerance the search keeps pairs as candidates (nats)
    NEAR = 1e-3
    #: an early stop waits for this many times the improving columns asked for
    COLLECT = 5
    #: features split on, and their weights (p(T), p(M), lo(T), lo(S), hi(T), hi(S))
    SPLIT: tuple[tuple[int, float], ...] = ((0, 1.0), (1, 1.0), (3, 1.0), (4, 1.0), (5, 1.0),
                                            (6, 1.0))
    #: the split from ``e^eps >= 4`` on: the blocks near the optimum have ``q(T)`` close to
    #: ``e^-eps``, small sets whose ``q(T) = lo(T)``, where ``rho`` is most sensitive to it
    #: (final search, geometric benchmark, eps = 2: 5x fewer row bounds at N = 22, 4x
    #: fewer exact pairs at N = 20; at eps = log 2 and 0.1 the first split is the better)
    SPLIT_LARGE_EPS: tuple[tuple[int, float], ...] = ((0, 1.0), (1, 0.5), (3, 2.0))

    def __init__(self, uset: Any, p: np.ndarray, eps: float, *, stop_at: float = math.inf,
                 stop_work: float = math.inf) -> None:
        from . import _boxtree as bt

        kernels = bt.compiled()
        if kernels is None:
            from ..._optional import require

            require("numba", "the block-pair search of BoxTreeOracle")
            raise PMLError("BoxTreeOracle needs numba, which PMLKIT_NO_NUMBA disables")
        self.kernels = kernels
        super().__init__(uset, p, eps)
        self.pmin = float(np.min(self.p))
        self.fixed = []
        for h, (top, mid), s in zip(self.halves, self.masks, self.sums, strict=True):
            f = np.zeros((top.shape[0], bt.K))
            f[:, bt.PT], f[:, bt.PS] = s["pT"], s["pS"]
            f[:, bt.PM] = mid.astype(np.float64) @ self.p[h]
            f[:, bt.LT], f[:, bt.LS] = s["lT"], s["lS"]
            f[:, bt.HT], f[:, bt.HS] = s["hT"], s["hS"]
            f[:, bt.NT], f[:, bt.NM] = s["nT"], s["nS"] - s["nT"]
            self.fixed.append(f)
        self.stats: dict[str, float] = {}
        self._built: list[tuple[np.ndarray, ...]] | None = None
        #: ``time.monotonic()`` after which any search stops (with a valid bound), whatever
        #: deadline its caller gives
        self.stop_at = stop_at
        #: the reading of the work meter (:class:`Work`) after which any search stops
        self.stop_work = stop_work

    @staticmethod
    def seconds(n: int) -> float:
        """The time budget from which a design over ``n`` categories is expected to finish
        (and be certified): 30 s at N = 20, five times more every two categories (the
        pairs grow as ``3^N``, and the rounds with them): a one-minute budget takes the
        search up to N = 20. Measured (geometric prior, Clopper-Pearson box, CPU seconds
        of the whole design, eps = 2 / log 2 / 0.1): N = 20 in 4.3 / 26.5 / 18.2 s,
        N = 22 in 14.4 / 107 / 153 s; N = 24 at eps = 2 in about 3 minutes, at log 2 in
        about 9."""
        return float(30.0 * 5.0 ** ((n - 20) / 2))

    @staticmethod
    def available() -> bool:
        """Whether numba is importable (and not disabled by ``PMLKIT_NO_NUMBA``)."""
        from . import _boxtree as bt

        return bt.compiled() is not None

    def _trees(self, y: np.ndarray, c: float) -> list[tuple[np.ndarray, ...]]:
        """Per half: the rows in tree order with the dual features of ``y``, and the
        tree (built once, on the features of the box; ranges refitted to ``y``)."""
        from . import _boxtree as bt

        if self._built is None:
            built: list[tuple[np.ndarray, ...]] = []
            weight = np.zeros(bt.K)
            for k, wk in (self.SPLIT_LARGE_EPS if self.e >= 4.0 else self.SPLIT):
                weight[k] = wk
            for f, (top, mid) in zip(self.fixed, self.masks, strict=True):
                perm, start, end, left, lo, hi = self.kernels["build_tree"](f, weight,
                                                                            self.LEAF)
                digits = (2 * top[perm] + mid[perm]).astype(np.int8)
                built.append((np.ascontiguousarray(f[perm]), start, end, left, lo, hi, perm,
                              digits))
            self._built = built
            self.fixed = []  # kept in tree order only
        out: list[tuple[np.ndarray, ...]] = []
        dual = np.array([bt.YT, bt.YS, bt.ZT, bt.ZM, bt.ZS], dtype=np.int64)
        for (f, start, end, left, lo, hi, perm, digits), h in zip(self._built or [],
                                                                 self.halves, strict=True):
            yh = np.ascontiguousarray(y[h])
            self.kernels["dual_features"](digits, yh, yh - c * self.p[h], f)
            self.kernels["refit"](f, start, end, left, lo, hi, dual)
            out.append((f, start, end, left, lo, hi, perm))
        return out

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns (the best ``want`` above ``atol``) and a valid bound; partial
        pricing from the best pairs of the last search as in :class:`BoxOracle`. The search
        stops when the work meter reads ``until`` (or :attr:`stop_work`) or at ``deadline``
        (or :attr:`stop_at`) on the wall clock, with a valid bound."""
        self._deadline = min(deadline, self.stop_at)
        self._exhaust = full
        return super().price(y, want=want, deadline=deadline, atol=atol, full=full,
                             until=min(until, self.stop_work))

    def _pair_coefficients(self, ia: np.ndarray, ib: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(c0, c1, c2)`` of :meth:`BoxOracle._coefficients` for the pairs ``(ia, ib)``."""
        a, b = self.sums
        e, sl = self.e, self.slack

        def pair(key: str) -> np.ndarray:
            out: np.ndarray = a[key][ia] + b[key][ib]
            return out

        _, _, c0, c1, c2 = box_terms(pair, e, sl, self.n)
        return c0, c1, c2

    def _full(self, y: np.ndarray, *, want: int, atol: float
              ) -> tuple[np.ndarray, np.ndarray, float]:
        t0 = time.monotonic()
        deadline = getattr(self, "_deadline", math.inf)
        until = getattr(self, "_until", math.inf)
        meter = meter_of(self)
        y = np.asarray(y, dtype=np.float64)
        c = float(self.p @ y / (self.p @ self.p)) if self.CENTRE else 0.0
        ta, tb = self._trees(y, c)
        meter.spend(BOX_RATE * (ta[0].shape[0] + tb[0].shape[0]))
        t1 = time.monotonic()
        fa, sa, ea, la, loa, hia, perma = ta
        fb, sb, eb, lb, lob, hib, permb = tb
        n = float(self.n)
        buf = np.empty((4, 16))
        root = self.kernels["pair_bound"](loa[0] + lob[0], hia[0] + hib[0], self.e,
                                          self.slack, n, self.pmin, c, buf)
        cap_stack = 4096
        si = np.zeros(cap_stack, dtype=np.int64)
        sj = np.zeros(cap_stack, dtype=np.int64)
        sbd = np.zeros(cap_stack)
        sbd[0] = root
        top = 1
        keep = max(want, self.CACHE) if want > 0 else 0
        cap = max(2 * keep, 256)
        cv = np.zeros(cap)
        ca = np.zeros(cap, dtype=np.int64)
        cb = np.zeros(cap, dtype=np.int64)
        ncand = 0
        early = not getattr(self, "_exhaust", True) and want > 0
        # an early stop collects a few times the columns asked for: the next rounds are
        # then answered from them (partial pricing) instead of by a new search
        enough = want * self.COLLECT
        # the pairs a little below the tolerance are kept too (for the partial pricing of
        # the next rounds): almost free, the bounds being looser than that near the leaves
        state = np.array([float(atol) - self.NEAR, -math.inf, 0.0, 0.0, 0.0, 0.0])
        steps = 0.0
        while top > 0:
            top, ncand = self.kernels["search"](
                fa, sa, ea, la, loa, hia, fb, sb, eb, lb, lob, hib,
                self.e, self.slack, n, self.pmin, c, keep,
                si, sj, sbd, top, self.CHUNK, cv, ca, cb, ncand, state)
            done = float(state[2] + state[3] + state[4])
            meter.spend(TREE_RATE * (done - steps))
            steps = done
            if top > 0 and meter.stop(until, deadline):
                break
            if early and ncand >= enough and np.count_nonzero(cv[:ncand] > atol) >= enough:
                # enough improving columns for this round: the bound (still valid, from
                # the pairs left open) is only needed at the end
                break
        thr, best = float(state[0]), float(state[1])
        open_ub = float(sbd[:top].max()) if top > 0 else -math.inf
        margin = 1e-10 * (1.0 + float(np.abs(y).sum()))
        # every pair pruned had a bound <= the threshold at that moment (<= thr now)
        bound = max(thr, best, open_ub) + margin
        self.stats = {"tree_s": t1 - t0, "search_s": time.monotonic() - t1,
                      "pairs": float(state[2]), "nodes": float(state[3]), "rows": float(state[4]),
                      "leaves": float(state[5]), "open": float(top), "root": float(root)}
        if ncand == 0:
            self._cache = None
            return np.zeros((self.n, 0)), np.zeros(0), bound
        ia, ib = perma[ca[:ncand]], permb[cb[:ncand]]
        nb = self.masks[1][0].shape[0]
        flat = ia * nb + ib
        self._cache = (flat, *self._pair_coefficients(ia, ib))
        if want <= 0:
            return np.zeros((self.n, 0)), np.zeros(0), bound
        cols, vals = self._columns(flat, cv[:ncand], y, want, atol)
        return cols, vals, bound
