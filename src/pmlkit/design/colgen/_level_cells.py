"""Pricing of mutual information over a box at any alphabet size: the level-cell branch
and bound (:class:`BoxLagrangeOracle`, kernels in
:mod:`~pmlkit.design.colgen._boxlagrange`).

Level-cell branch and bound for a box (:class:`BoxLagrangeOracle`). The box's worst case
is an LP: ``min_Q Q . w = lo . w + max_th [s th - sum_x c_x (th - w_x)^+]`` with
``c = hi - lo`` and ``s = 1 - sum(lo)``, the maximum attained at a level of ``w``. For a
three-level column (top level ``U`` on ``T``, middle ``m`` on ``M``, ``S = T + M``) it is
``m q(S) + (U - m) q(T)`` with ``q = max(lo, hi - slack)``, ``slack = sum(hi) - 1``, and of
the four combinations only three can be largest: *mode* 0 (``lo`` for both), 1
(``hi - slack`` for both), 2 (``hi(S) - slack``, ``lo(T)``). A column is in ``K_1`` iff, in
some mode, ``C(w) = sum_x k_x(level of x) + C0(U, m) >= 0`` (``C0 = -U/e^eps`` and the
slack terms). A node fixes a mode, a cell ``[u1, u2] x [m1, m2]`` (``1 <= U <= e^eps
max(Q0 / p)`` for a point ``Q0`` of the box, ``0 <= m <= U``) and, per entry, the allowed
levels. For any ``lam`` and ``nu >= 0``, ``G(w) <= L = G(w) + lam (1 - p . w) + nu C(w)``
at every column of the node; for a fixed assignment ``L`` is convex in ``(U, m)``, so over
the cell's columns (the part of the cell with ``m <= U``: a polygon of at most five
vertices, the rectangle's corner above the diagonal replaced by the diagonal's points) it
is largest at a vertex, and

    bound = max_vertices [lam + nu C0 + sum_x max_{allowed a in {0, m, U}}
                          (p_x a log a - (y_x + lam p_x) a + nu k_x(a))]

is valid for the node, whatever the multipliers (the kernels in
:mod:`pmlkit.design._boxlagrange` minimise it: bisection in ``lam``, golden section in
``nu``), plus a rounding margin of ``1e-14 (N + 10)`` times the sum of the terms'
magnitudes (added once, at the multipliers found); a child keeps its parent's bound when
smaller. *Reduced-cost fixing*: at the node's multipliers, forcing entry ``x`` to level ``j``
changes the bound's sum at each vertex by that level's term minus the entry's best one; where
the largest result over the vertices (with the margin) is at most the threshold, no column of
the node with ``x`` at ``j`` beats it, the level is removed and the node bounded again.
Cells are halved down to a relative width of :attr:`BoxLagrangeOracle.TAU`, along the side
where the Lagrangian at the node's vertices differs most (where the relaxation puts no entry
at the middle level the bound does not depend on ``m``: halving the wider side there only
copied the node), then the heaviest entry that the relaxation splits between two levels is
branched; an entry is branched earlier, in a wider cell, when the bound at the cell's centre
point keeps more than
:attr:`BoxLagrangeOracle.POINT_SHARE` of the node's excess over the threshold (the split
entries, not the cell's width, then make the bound loose: halving the cell only multiplied
nodes, about 9,000 open cells of the smallest width at N = 50 each waiting for the same
entries to be branched), and it is then an entry that the centre point's relaxation
splits. An entry split between the bottom and a level above it has two children (bottom;
middle or top); in a cell crossing the diagonal ``m = U``, where the middle and top levels
give nearly the same columns (separating them there only copies the node), such an entry
is branched before a heavier one split between middle and top; where the middle level
stays below half the top one, an entry split between the top and a lower level has two
children (top; bottom or middle), a middle level near 0 giving nearly the bottom's columns.
Any order of splits is valid, the children covering the node. A
node with every entry fixed is one assignment, whose columns lie on a segment (one level,
the tight three-level column, top only) along which ``G`` is convex: its exact ends close
it. The relaxation's levels are candidates, evaluated exactly (the formula of
:class:`BoxOracle`); every round also runs a local search from the best of them and from
the master's active columns (one entry, or two of the heaviest, moved at a time while
that raises the exact objective) and adds the assignments it ends at;
as in the block-pair search, the threshold never exceeds the largest exact value found (or
the tolerance), so the largest of it and the open nodes' bounds, plus the margin
``1e-10 (1 + sum |y|)``, is a valid bound whenever the search stops. Rounds stop once they
hold enough improving columns; :func:`column_generation` keeps the last quarter of the
budget for the final search (and more while one finishes early). The searches price at
smoothed duals (Wentges): half the master's duals ``y`` and half their mean ``ybar`` over
the last :data:`SMOOTHING_ROUNDS` rounds, keeping the columns that improve the master at
``y`` (a round that meets none prices at ``y``); a final search runs halfway between the
duals of the best bound the searches gave so far and the master's last duals (at ``ybar``
when none gave a bound; at ``y`` after a final search that added no column). The bound
above holds for any duals, and the master's own swing from round to round (its LP is
degenerate): at N = 50 a bound at them stayed 0.03-0.13 nats above the value.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from ...errors import PMLError
from ._box import box_column, box_terms
from ._oracles import BlockColumns
from ._work import EVAL_RATE, NODE_RATE, meter_of

#: Smallest eps from which the designer prices a box by :class:`BoxLagrangeOracle` beyond
#: the exact oracles (geometric benchmark, N = 50, 60 s, certified gaps against the
#: spatial branch and bound's: 1.8% against 32% at eps = 0.05, 8.3% against 35% at
#: eps = 0.02, with higher values; at eps = 0.01 it certified 51%, and smaller eps keeps
#: the spatial search).
BOX_LAGRANGE_MIN_EPS = 0.02


class BoxLagrangeOracle(BlockColumns):
    """Pricing for mutual information over a :class:`~pmlkit.sets.Box` at any alphabet
    size: a branch and bound over level cells with a Lagrangian bound in each (module
    docstring). ``price`` returns improving columns (exact three-level rays) and a valid
    upper bound on ``max_{v in K_1} mu(v) - y . v`` whenever it stops.
    """

    name = "level-cell branch and bound (box)"
    #: a cell is split until its relative width is below this before entries are branched
    TAU = 0.003
    #: bisection steps of the multiplier search
    ITERS = 15
    #: candidate assignments evaluated exactly at a time
    BATCH = 256
    #: a cell wider than TAU whose relaxation splits an entry between two levels has that
    #: entry branched (not the cell halved) when the bound at the cell's centre keeps more
    #: than this share of the node's excess over the threshold (N = 50, eps = log 2 / 2,
    #: 60 s: certified gap 2.6% / 1.2% -> 2.3% / 0.7%)
    POINT_SHARE = 0.5
    #: nodes after which a search for columns stops once it has an improving one (N = 50,
    #: 60 s, side by side: 500 certified 2.1% / 3.9% / 0.65% at eps = log 2 / 0.1 / 2
    #: where 2000 gave 2.3% / 4.6-5.3% / 0.69%; 100 and 250 lost at eps = 0.1: 53%)
    QUICK = 500
    #: best candidates of a search kept as starting points of the local search
    SEEDS = 16
    #: the local search also moves two of this many heaviest entries at once: the columns
    #: a search still found late in a design differed from the master's in the pattern
    #: of several heavy entries, which single moves (through worse or infeasible
    #: assignments) did not reach (N = 50, 60 s, side by side: certified 0.93% -> 0.82%
    #: at eps = 0.1, 0.41% at eps = 2 either way, 1.37% twice at eps = log 2 where single
    #: moves gave 1.26-1.55% in four runs, with the reduced cost of the best column at the
    #: final duals 0.002-0.003 instead of 0.004-0.008)
    PAIR_ENTRIES = 8
    #: a search stops (its bound, from the nodes left open, stays valid) once it holds
    #: this many open nodes or distinct candidates (about 0.5 KB each): a design without
    #: a time budget would otherwise grow its memory without end where the bound cannot
    #: close (about 15 GB in 10 minutes at N = 30)
    MAX_OPEN = 1_000_000
    #: reduced-cost fixing in every node (:func:`~pmlkit.design._boxlagrange.fix_levels`)
    FIX = True
    #: rounds stop early (their bounds are loose): one final search bounds the last duals
    skips_bounds = True
    #: the share of the time budget kept for that final search
    bound_share = 0.25
    #: its searches price at smoothed duals (:func:`column_generation`)
    stabilize = True

    def __init__(self, uset: Any, p: np.ndarray, eps: float, *, stop_at: float = math.inf,
                 stop_work: float = math.inf) -> None:
        from .._common import exp_capped
        from . import _boxlagrange as bl

        p = np.ascontiguousarray(p, dtype=np.float64)
        if not bool(np.all(p > 0)):
            raise PMLError("BoxLagrangeOracle needs a prior with every entry > 0")
        self.uset, self.p, self.eps, self.n = uset, p, eps, p.size
        self.e = exp_capped(eps)
        self.lo = np.ascontiguousarray(uset.lower, dtype=np.float64)
        self.hi = np.ascontiguousarray(uset.upper, dtype=np.float64)
        self.slack = float(self.hi.sum()) - 1.0
        self.kern = bl.kernels()
        self.stop_at = stop_at
        self.stop_work = stop_work
        self._seeds: list[tuple[float, np.ndarray]] = []
        self._anchors: list[np.ndarray] = []
        # the top level of a column of K_1 is at least p . w = 1 and at most
        # e^eps min_Q Q . w <= e^eps Q0 . w <= e^eps max(Q0 / p) for any Q0 of the box
        s = 1.0 - float(self.lo.sum())
        c = self.hi - self.lo
        q0 = self.lo + (max(s, 0.0) / max(float(c.sum()), 1e-300)) * c
        cap = float(np.max(q0 / p))
        if bool(np.all(self.lo <= p)) and bool(np.all(p <= self.hi)):
            cap = min(cap, 1.0)
        self.umax = self.e * cap * (1.0 + 1e-9) + 1e-12
        self.umin = 1.0 - 1e-12
        self.stats: dict[str, float] = {}

    @staticmethod
    def available() -> bool:
        """Whether numba is importable (and not disabled by ``PMLKIT_NO_NUMBA``): without
        it the search runs as plain Python, far too slow for the designer."""
        from . import _boxlagrange as bl

        return bl.compiled() is not None

    def _evaluate(self, levels: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Exact pricing objective of the three-level rays of the assignments (rows of
        ``levels``: 0 bottom, 1 middle, 2 top); ``-inf`` where the assignment gives no
        point of ``K_1``."""
        meter_of(self).spend(EVAL_RATE * levels.size)
        top = levels == 2
        s = levels >= 1
        ft, fs = top.astype(np.float64), s.astype(np.float64)
        d = {"pT": ft @ self.p, "pS": fs @ self.p, "lT": ft @ self.lo, "lS": fs @ self.lo,
             "hT": ft @ self.hi, "hS": fs @ self.hi, "nT": top.sum(axis=1),
             "nS": s.sum(axis=1)}
        one, three, c0, c1, c2 = box_terms(lambda k: d[k], self.e, self.slack, self.n)
        with np.errstate(invalid="ignore", over="ignore"):
            g = c0 - c1 * (ft @ y) - c2 * (fs @ y)
        ok = (one | three) & np.isfinite(g)
        return np.where(ok, g, -math.inf)

    def _column(self, lev: np.ndarray) -> np.ndarray:
        top, mid = lev == 2, lev == 1
        return box_column(top, mid, self.p, self.lo, self.hi, self.slack, self.e)

    def search(self, y: np.ndarray, *, thr: float, deadline: float, want: int = 0,
               max_nodes: int = 10**9, until: float = math.inf
               ) -> tuple[float, list[tuple[float, np.ndarray]]]:
        """Branch and bound: a valid bound on the pricing maximum (at least ``thr``) and
        the exactly evaluated candidates above ``thr`` (value, levels). Stops (with a valid
        bound) after ``max_nodes`` nodes, when the work meter (:class:`Work`) reads
        ``until``, or at ``deadline`` on the wall clock."""
        from . import _boxlagrange as bl

        meter = meter_of(self)
        counted = 0
        n, p = self.n, self.p
        y = np.ascontiguousarray(y, dtype=np.float64)
        nb = self.kern["node_bound"]
        fix = self.kern["fix_levels"]
        fixed = np.empty(n, dtype=np.int8)
        lev_a = np.empty(n, dtype=np.int8)
        lev_b = np.empty(n, dtype=np.int8)
        mult = np.zeros(2)
        heap: list[tuple[float, int, tuple[Any, ...]]] = []
        pending: list[np.ndarray] = []
        seen: set[bytes] = set()
        found: list[tuple[float, np.ndarray]] = []
        best = -math.inf
        tick = 0
        nodes = 0
        thr0 = thr
        seeds = self._seeds = []

        def flush() -> None:
            nonlocal best, thr
            if not pending:
                return
            lv = np.stack(pending)
            pending.clear()
            vals = self._evaluate(lv, y)
            for v, row in zip(vals, lv, strict=True):
                if v > thr0:
                    found.append((float(v), row))
            for i in np.argsort(-vals, kind="stable")[: self.SEEDS]:
                if np.isfinite(vals[i]):
                    seeds.append((float(vals[i]), lv[i]))
            seeds.sort(key=lambda t: -t[0])
            del seeds[self.SEEDS:]
            m = float(vals.max())
            if m > best:
                best = m
            thr = max(thr, best)

        def candidate(lev: np.ndarray) -> None:
            key = lev.tobytes()
            if key in seen:
                return
            seen.add(key)
            pending.append(lev.copy())
            if len(pending) >= self.BATCH:
                flush()

        def push(mode: int, u1: float, u2: float, m1: float, m2: float,
                 allow: np.ndarray, lam0: float, nu0: float, parent: float = math.inf
                 ) -> None:
            nonlocal tick, nodes
            m2 = min(m2, u2)
            if m1 > m2:
                return
            nodes += 1
            b = float(nb(p, y, self.lo, self.hi, self.e, self.slack, mode, u1, u2, m1, m2,
                         allow, lam0, nu0, lev_a, lev_b, mult, self.ITERS))
            # the parent's bound holds for the child's columns too
            b = min(b, parent)
            if b == -math.inf:
                return
            # the Lagrangian at the cell's vertices (which side to halve)
            cv = np.zeros(bl.NCORNERS)
            if self.FIX and b > thr:
                # levels that cannot lead above thr are removed, and the node bounded again
                # (N = 50, eps = log 2, 15 s at the final duals of a design, with the
                # halving rule below: 0.0059 -> 0.0055)
                for _ in range(3):
                    removed = int(fix(p, y, self.lo, self.hi, self.e, self.slack, mode, u1,
                                      u2, m1, m2, allow, float(mult[0]), float(mult[1]),
                                      thr, fixed, cv))
                    if not removed:
                        break
                    if int(fixed.min()) == 0:
                        return
                    allow = fixed.copy()
                    nodes += 1
                    b = min(b, float(nb(p, y, self.lo, self.hi, self.e, self.slack, mode, u1,
                                        u2, m1, m2, allow, float(mult[0]), float(mult[1]),
                                        lev_a, lev_b, mult, self.ITERS)))
                    if b <= thr:
                        return
            for lv in (lev_a, lev_b):
                if lv.min() >= 0:
                    candidate(lv)
            if b > thr:
                tick += 1
                heapq.heappush(heap, (-b, tick, (mode, u1, u2, m1, m2, allow,
                                                 float(mult[0]), float(mult[1]),
                                                 lev_a.copy(), lev_b.copy(), cv)))

        full = np.full(n, 7, dtype=np.int8)
        for mode in range(3):
            push(mode, self.umin, self.umax, 0.0, self.umax, full, 0.0, 0.0)
        while heap:
            flush()
            if -heap[0][0] <= thr:
                break
            meter.spend(NODE_RATE * n * (nodes - counted))
            counted = nodes
            if nodes >= max_nodes or meter.stop(until, deadline) \
                    or len(heap) >= self.MAX_OPEN or len(seen) >= self.MAX_OPEN:
                break
            if want and (len(found) >= want or (found and nodes >= self.QUICK)):
                # enough improving columns for this round; the bound (still valid, from
                # the nodes left open) is only needed at the end
                break
            negb, _, (mode, u1, u2, m1, m2, allow, lam, nu, la, lb, cv) = heapq.heappop(heap)
            pb = -negb
            free = np.flatnonzero(bl.POPCOUNT[allow] > 1)
            if free.size == 0:
                # one assignment: its columns are the ends of a segment (one level, the
                # tight three-level ray, top only), G is convex along it
                lev = np.where(allow == 4, 2, np.where(allow == 2, 1, 0)).astype(np.int8)
                candidate(lev)
                candidate(np.where(lev >= 1, 1, 0).astype(np.int8))
                candidate(np.where(lev == 2, 1, 0).astype(np.int8))
                flush()
                continue
            wu = (u2 - u1) / u2
            wm = (m2 - m1) / u2
            frac = free[la[free] != lb[free]]
            entry = max(wu, wm) <= self.TAU
            if not entry and frac.size:
                # how much of the node's excess over the threshold is left at one point
                # of its cell: where most of it is, the relaxation's split entries (not
                # the cell's width) make the bound loose, and halving the cell only
                # multiplies nodes
                uc, mc = 0.5 * (u1 + u2), 0.5 * (m1 + m2)
                nodes += 1
                pt = float(nb(p, y, self.lo, self.hi, self.e, self.slack, mode, uc, uc,
                              min(mc, uc), min(mc, uc), allow, lam, nu, lev_a, lev_b, mult,
                              self.ITERS))
                entry = pt > thr + self.POINT_SHARE * (pb - thr)
                if entry and bool((lev_a[free] != lev_b[free]).any()):
                    # the entries that point's relaxation splits are the ones keeping the
                    # excess (the cell's relaxation may split another: N = 50, eps = log 2,
                    # at fixed duals, 30,000 nodes bounded the pricing at 0.0090, not 0.0173)
                    la, lb = lev_a.copy(), lev_b.copy()
                    frac = free[la[free] != lb[free]]
            if entry:
                cand = frac if frac.size else free
                x = int(cand[np.argmax(p[cand])])
                zero = free[(la[free] == 0) != (lb[free] == 0)]
                if zero.size and (la[x] == 0) == (lb[x] == 0) and m2 >= u1:
                    # in a cell crossing the diagonal m = U the middle and top levels give
                    # nearly the same columns: branch the heaviest entry split between the
                    # bottom and a level above it instead (separating middle from top there
                    # left every child with its parent's bound: 0.00077 -> 0.00043 at fixed
                    # duals, N = 50, eps = 0.1; preferring such entries everywhere left the
                    # heaviest entry of a skewed column split between middle and top:
                    # Adult's native-country, 10 s at the final duals, 1.5e-6 -> 0.0075)
                    x = int(zero[np.argmax(p[zero])])
                if m2 <= 0.5 * u1 and la[x] != lb[x] and (la[x] == 2 or lb[x] == 2):
                    # where the middle level is nearer the bottom than the top throughout
                    # the cell, an entry split between the top and a lower level is
                    # branched top or not (a middle level near 0 gives nearly the bottom's
                    # columns: separating them only copied the node; 15 s at the final
                    # duals of four designs, N = 50, eps = log 2: 0.0040-0.0055 where the
                    # three children gave 0.0055-0.0062)
                    groups: tuple[int, ...] = (3, 4)
                elif (la[x] == 0) != (lb[x] == 0):
                    # bottom, or one of the two upper levels
                    groups = (1, 6)
                else:
                    groups = (1, 2, 4)
                for bits in groups:
                    if allow[x] & bits:
                        al = allow.copy()
                        al[x] = allow[x] & bits
                        push(mode, u1, u2, m1, m2, al, lam, nu, pb)
            else:
                # halve the cell along the side where the Lagrangian at the node's vertices
                # differs most (in a cell whose relaxation puts no entry at the middle
                # level the bound does not depend on m; halving the wider side, m, only
                # copied the node: thousands of open cells of one U range and thin slices
                # of m, all with their ancestor's bound. N = 50, eps = log 2, 15 s at the
                # final duals of a design: 0.0067 -> 0.0053)
                du = max(abs(cv[0] - cv[2]), abs(cv[1] - cv[3]))
                dm = max(abs(cv[0] - cv[1]), abs(cv[2] - cv[3]))
                if wm <= self.TAU or (wu > self.TAU and du >= dm):
                    um = 0.5 * (u1 + u2)
                    push(mode, u1, um, m1, m2, allow, lam, nu, pb)
                    push(mode, um, u2, m1, m2, allow, lam, nu, pb)
                else:
                    mm = 0.5 * (m1 + m2)
                    push(mode, u1, u2, m1, mm, allow, lam, nu, pb)
                    push(mode, u1, u2, mm, m2, allow, lam, nu, pb)
        flush()
        meter.spend(NODE_RATE * n * (nodes - counted))
        open_ub = -heap[0][0] if heap else -math.inf
        self.stats = {"nodes": float(nodes), "open": float(len(heap))}
        margin = 1e-10 * (1.0 + float(np.abs(y).sum()))
        return max(thr, open_ub) + margin, found

    def anchor(self, cols: np.ndarray) -> None:
        """Remember the assignments of ``cols`` (the master's active columns, points of
        ``K_1`` with levels 0, ``m`` and ``U``): the local search of the next rounds
        starts from them too. A column with one positive level is read as one level
        (middle), the form in which :meth:`_evaluate` knows it.

        Examples
        --------
        >>> from pmlkit.sets import Box
        >>> p = np.array([0.5, 0.3, 0.2])
        >>> oracle = BoxLagrangeOracle(Box(0.8 * p, 1.2 * p), p, 1.0)
        >>> col = oracle._column(np.array([0, 1, 2], dtype=np.int8))
        >>> np.round(col, 4)  # bottom, middle and top level
        array([0.    , 1.8836, 2.1746])
        >>> oracle.anchor(col[:, None])
        >>> oracle._anchors[0].tolist()
        [0, 1, 2]
        """
        out = []
        for col in np.asarray(cols, dtype=np.float64).T:
            pos = col > 0
            lev = np.zeros(self.n, dtype=np.int8)
            if pos.any():
                top = pos & (col >= col[pos].max() * (1.0 - 1e-9))
                lev[pos] = 1
                if (pos & ~top).any():
                    lev[top] = 2
            out.append(lev)
        self._anchors = out

    def improve(self, seeds: list[np.ndarray], y: np.ndarray, atol: float,
                steps: int = 200) -> list[tuple[float, np.ndarray]]:
        """Local search from each seed: the move that raises the exact objective most,
        while one does; a move takes one entry to another level, or two of the
        :attr:`PAIR_ENTRIES` heaviest entries at once. Returns the assignments it ends
        at, where their value exceeds ``atol`` (columns only, no bound). Only the ends are
        kept: every improving neighbour met on the way (the former rule) flooded the master
        with near-duplicate columns."""
        n = self.n
        idx = np.arange(n)
        out: list[tuple[float, np.ndarray]] = []
        heavy = np.argsort(-self.p, kind="stable")[: min(self.PAIR_ENTRIES, n)]
        # pairs of heavy entries, each moved up by one or two levels (mod 3)
        pairs = np.array([(a, b, s1, s2) for i, a in enumerate(heavy) for b in heavy[i + 1:]
                          for s1 in (1, 2) for s2 in (1, 2)], dtype=np.intp).reshape(-1, 4)
        pa, pb, da, db = pairs.T
        rows = 2 * n + np.arange(pa.size)
        for lev in seeds:
            cur = np.asarray(lev, dtype=np.int8)
            cv = float(self._evaluate(cur[None, :], y)[0])
            for _ in range(steps):
                nb = np.repeat(cur[None, :], 2 * n + pa.size, axis=0)
                nb[idx, idx] = (cur + 1) % 3
                nb[n + idx, idx] = (cur + 2) % 3
                nb[rows, pa] = (cur[pa] + da) % 3
                nb[rows, pb] = (cur[pb] + db) % 3
                vals = self._evaluate(nb, y)
                j = int(np.argmax(vals))
                if not vals[j] > cv + 1e-15:
                    break
                cur, cv = nb[j].copy(), float(vals[j])
            if cv > atol:
                out.append((cv, cur))
        return out

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns and a valid bound from :meth:`search` (stopped when the work
        meter reads ``until`` or :attr:`stop_work`, or at ``deadline`` or :attr:`stop_at`
        on the wall clock), with the local search's columns."""
        dl = min(deadline, self.stop_at)
        bound, found = self.search(y, thr=atol, deadline=dl, want=0 if full else want,
                                   until=min(until, self.stop_work))
        found.sort(key=lambda t: -t[0])
        if want > 0:
            # a local search from the search's best candidates and the master's active
            # columns (:meth:`anchor`), keeping the assignment each ends at
            found = found[:want] + self.improve(
                [lev for _, lev in found[: self.SEEDS]] + [lev for _, lev in self._seeds]
                + self._anchors,
                y, atol)
            uniq: dict[bytes, tuple[float, np.ndarray]] = {}
            for val, lev in found:
                uniq[lev.tobytes()] = (val, lev)
            found = sorted(uniq.values(), key=lambda t: -t[0])
        cols = [self._column(lev) for _, lev in found[: max(want, 0) + 2 * self.SEEDS]]
        return (*self.improving(cols, y, atol), bound)
