"""Certified mutual-information pricing over a box at any alphabet size.

The column-generation designer (:mod:`pmlkit.design.colgen`) needs, for dual prices ``y``,
a valid upper bound on ``max_{w in K_1} G(w)``, ``G(w) = sum_x p_x w_x log w_x - y . w``,
over ``K_1 = {w >= 0 : p . w = 1, max w <= e^eps min_Q Q . w}`` for a box
``{lo <= Q <= hi, sum Q = 1}``, and the improving columns while there are any.
:class:`BoxBranchBoundOracle` computes it by branch and bound over the level structure of
the vertices: exact when the search finishes, valid whenever it is stopped.

Parametrisation
---------------
A vertex of ``K_1`` has at most three levels. Up to scale it is ``v = 1_T + u 1_M`` with
``u`` in ``[0, 1]`` (top block ``T``, middle block ``M``, ``S = T + M``; ``u = 1`` and
``u = 0`` are the one-level points ``1_S / p(S)`` and ``1_T / p(T)``), and
``w = v / P``, ``P = p(T) + u p(M)``. With ``Y(X) = sum_{x in X} y_x``::

    G(T, M, u) = (u log(u) p(M) - Y(T) - u Y(M)) / P - log P.

The worst distribution of the box fills the smallest entries first, so
``min_Q Q . v = (1 - u) q(T) + u q(S)`` with ``q(X) = max(lo(X), 1 - hi(X^c))``; the point
is in ``K_1`` iff ``min_Q Q . v >= c max v``, ``c = e^-eps``. For fixed blocks this is
increasing in ``u``: the feasible ``u`` form an interval ``[u_t, 1]``, and since ``w(u)``
runs monotonically along a segment on which ``G`` (convex) is quasi-convex, the best ``u``
for given blocks is ``u_t`` or 1 (both are points of ``K_1``: exact evaluation).

The bound
---------
Fix a threshold ``phi``. As ``P > 0``, ``G > phi`` iff
``H = u log(u) p(M) - Y(T) - u Y(M) - P log P - phi P > 0``. The concave ``-P log P``
lies below each of its tangents, ``-P log P <= P0 - P (1 + log P0)``, so with
``theta = 1 + log P0 + phi`` every item contributes separately:
``h_top = -y_x - theta p_x``, ``h_mid = u (p_x (log u - theta) - y_x)``, ``h_bottom = 0``,
and ``H <= P0 + sum_x h_x``. The tangent is taken at the ``P`` of the maximising
assignment (its error is second order in ``P - P0``). Feasibility is written exactly with
the dual of the worst case: ``min_Q Q . v = max_nu [nu + sum_x lo_x (v_x - nu)_+ -
hi_x (nu - v_x)_+]`` (LP duality for ``min {Q . v : lo <= Q <= hi, sum Q = 1}``), the
maximum attained at a level ``nu in {0, u, 1}``. So a feasible point satisfies, for one of
the three ``nu``, the knapsack constraint ``sum_x m_x >= c - nu`` with item weights
``m_x = lo_x (v_x - nu)_+ - hi_x (nu - v_x)_+``.

A node of the search is a cell ``u1 <= u <= u2`` with some items' levels fixed. Every
point of the node that is feasible at some ``u`` of the cell is feasible at ``u2``
(monotonicity), and for fixed blocks ``sum_x h_x`` is convex in ``u`` (``u log u`` is
convex, the rest linear), so it is at most its value at ``u1`` or at ``u2``. Hence, for
each ``nu``, the largest ``P0 + sum_x h_x`` at ``u1`` and at ``u2`` over the assignments
meeting the knapsack constraint at ``u2`` bounds ``H`` over the node; it is computed by
dynamic programming over the free items with their weights (shifted to be
non-negative) rounded UP to a grid of ``BINS`` steps (rounding up admits more
assignments, never fewer, so the bound stays valid). A node whose bound is ``<= 0`` for
all three ``nu`` holds no point with ``G > phi`` and is discarded.

Search
------
Best-first over nodes ordered by their bound. A node that is not discarded is split in
``u`` while its cell is wide or the bound differs much between the ends of the cell (at
the vertex ``u_t`` of its best assignment when that lies inside), otherwise on its
heaviest free item (three children). Nodes with at most ``ENUMERATE`` free items are
evaluated exactly (every completion). The assignments maximising the dynamic programs
are evaluated exactly at ``u_t`` and ``u = 1``: they are the improving columns (checked
against the exact worst case of the box). The threshold ``phi`` starts at the caller's
tolerance and, when a bound is wanted, rises to the best value found, so a search that
finishes proves ``max G <= max(phi, best value)``. A stopped search still bounds ``G``:
``H <= beta`` at an open node gives ``G <= phi + beta / P_min`` (``P_min`` the smallest
``P`` of a vertex in the node); searches at higher thresholds (``phi`` from ``sum y``
down), which discard nodes sooner, give tighter certified bounds in the time left, and so
may the spatial branch and bound of :class:`~pmlkit.design.colgen.BranchAndBoundOracle`
(chord relaxations): the smallest of these valid bounds is returned.

Status: exact and fast on small alphabets and random prices, but at the end of column
generation (many columns with reduced cost 0) the search rarely finishes beyond N = 12, and
in the benchmark (N = 16-50 in 20-60 s) its values were higher than the spatial branch
and bound's at N = 16-24 while its certified gaps were larger and erratic; the designer
therefore does not choose it by default. It is used through
:func:`~pmlkit.design.colgen.column_generation` directly.
"""

from __future__ import annotations

import heapq
import math
import time
from typing import Any

import numpy as np

__all__ = ["BoxBranchBoundOracle"]

_BOT, _MID, _TOP = 0, 1, 2


class BoxBranchBoundOracle:
    """Pricing for mutual information over ``K_1`` of a :class:`~pmlkit.sets.Box` (prior
    ``p > 0``) by branch and bound with knapsack bounds (module docstring): any ``N``.

    ``price(y, want=, deadline=, atol=, full=False)`` returns improving columns (points of
    ``K_1``), their mutual-information values and an upper bound on
    ``max_{v in K_1} mu(v) - y . v``: exact (to the tolerance ``atol``) when the search
    finishes, valid when stopped by ``deadline``; ``inf`` when improving columns were found
    and no bound was requested (``full=False``).

    Examples
    --------
    With zero duals the bound is the largest ``mu`` over ``K_1``. For a fair coin known to
    within ``0.4 <= Q <= 0.6`` at ``eps = log 2``, the best column is ``w = (U, C)`` with
    ``U = 2 (0.4 U + 0.6 C)`` and ``(U + C) / 2 = 1``: ``U = 12 / 7``, ``C = 2 / 7``:

    >>> from pmlkit.sets import Box
    >>> p = np.array([0.5, 0.5])
    >>> oracle = BoxBranchBoundOracle(Box([0.4, 0.4], [0.6, 0.6]), p, math.log(2))
    >>> cols, vals, bound = oracle.price(np.zeros(2), want=1, deadline=math.inf,
    ...                                  atol=1e-12, full=True)
    >>> u, c = 12 / 7, 2 / 7
    >>> best = 0.5 * (u * math.log(u) + c * math.log(c))
    >>> abs(bound - best) < 1e-9, abs(float(vals[0]) - best) < 1e-12
    (True, True)
    """

    name = "branch and bound (box)"
    #: some rounds return no bound (``inf``): :func:`~pmlkit.design.colgen.column_generation`
    #: asks for one at the end
    skips_bounds = True
    #: width of the ``u`` cells below which the search branches on items
    CELL = 1.0 / 16
    #: nodes with at most this many free items are evaluated exactly (``3^k`` completions)
    ENUMERATE = 5
    #: grid of the rounded feasibility weights in :meth:`_dp_bound`
    BINS = 2000
    #: share of the budget after which every round also computes a bound
    RESERVE = 0.6

    def __init__(self, uset: Any, p: np.ndarray, eps: float, *,
                 deadline: float = math.inf) -> None:
        from ._common import exp_capped

        p = np.asarray(p, dtype=np.float64)
        self.uset, self.p, self.eps, self.n = uset, p, eps, p.size
        self.e = exp_capped(eps)
        self.c = 1.0 / self.e
        self.lo = np.asarray(uset.lower, dtype=np.float64)
        self.hi = np.asarray(uset.upper, dtype=np.float64)
        self.slack = float(self.hi.sum()) - 1.0  # q(X) = max(lo(X), hi(X) - slack)
        #: the caller's overall deadline (``time.monotonic()``): also caps the final bound
        self.deadline = deadline
        self.t0 = time.monotonic()
        self.nodes = 0
        self._spatial: Any = None

    # ---------------------------------------------------------------- exact evaluation
    def _q(self, lo_x: np.ndarray, hi_x: np.ndarray, count: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.where(count == 0, 0.0,
                                   np.where(count == self.n, 1.0,
                                            np.maximum(lo_x, hi_x - self.slack)))
        return out

    def evaluate(self, z: np.ndarray, y: np.ndarray, u1: float = 0.0, u2: float = 1.0
                 ) -> tuple[np.ndarray, np.ndarray]:
        """Exact best value of ``G`` over the feasible ``u`` in ``[u1, u2]`` for each
        assignment (rows of ``z``, entries 0 bottom, 1 middle, 2 top) and the ``u``
        attaining it (``-inf`` / ``nan`` when no ``u`` of the cell is feasible)."""
        z = np.atleast_2d(z)
        top, mid = (z == _TOP).astype(np.float64), (z == _MID).astype(np.float64)
        s = top + mid
        p, lo, hi = self.p, self.lo, self.hi
        pt, pm = top @ p, mid @ p
        yt, ym = top @ y, mid @ y
        nt, ns = top.sum(axis=1), s.sum(axis=1)
        qt = self._q(top @ lo, top @ hi, nt)
        qs = self._q(s @ lo, s @ hi, ns)
        c = self.c
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # feasible u: (1 - u) qT + u qS >= c (T non-empty); T empty: u = 1, qS >= c
            ut = np.where(qt >= c, 0.0, (c - qt) / np.where(qs > qt, qs - qt, 1.0))
            ok = (qs >= c) & (ns > 0)
            ut = np.where(nt == 0, 1.0, np.where(pm > 0, ut, np.where(qt >= c, 0.0, 2.0)))
            ua = np.maximum(ut, u1)
            ok &= ua <= u2

            def g(u: np.ndarray) -> np.ndarray:
                big_p = pt + u * pm
                ulogu = np.where(u > 0, u * np.log(np.where(u > 0, u, 1.0)), 0.0)
                out: np.ndarray = (ulogu * pm - yt - u * ym) / big_p - np.log(big_p)
                return out

            ga, gb = g(ua), g(np.full_like(ua, u2))
        best = np.where(gb > ga, gb, ga)
        arg = np.where(gb > ga, u2, ua)
        return np.where(ok, best, -math.inf), np.where(ok, arg, math.nan)

    def column(self, z: np.ndarray, u: float) -> np.ndarray:
        """The point ``(1_T + u 1_M) / P`` of assignment ``z``."""
        v = np.where(z == _TOP, 1.0, np.where(z == _MID, u, 0.0))
        out: np.ndarray = v / float(self.p @ v)
        return out

    # ---------------------------------------------------------------- node bounds
    def _arrays(self, u: float, y: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, float]]]:
        """``A, B`` (items x choices) with ``h = A - theta B`` at ``u``, and for each
        ``nu`` the feasibility coefficients ``C`` and constant ``nu - c``."""
        p, lo, hi, n = self.p, self.lo, self.hi, self.n
        lu = math.log(u) if u > 0 else 0.0
        zero = np.zeros(n)
        a = np.stack([zero, u * (p * lu - y) if u > 0 else zero, -y], axis=1)
        b = np.stack([zero, u * p, p], axis=1)
        cs = [(np.stack([zero, u * lo, lo], axis=1), -self.c),
              (np.stack([-hi * u, zero, lo * (1.0 - u)], axis=1), u - self.c),
              (np.stack([-hi, -hi * (1.0 - u), zero], axis=1), 1.0 - self.c)]
        return a, b, cs

    def _dp_bound(self, ends: list[tuple[np.ndarray, np.ndarray, list[Any]]],
                  allowed: np.ndarray, phi: float, theta0: float
                  ) -> tuple[float, float, list[np.ndarray], int, float]:
        """Upper bound on ``H`` over a node (module docstring, "The bound"): for each
        ``nu``, the feasibility knapsack at the right end of the cell is solved by
        dynamic programming over its weights rounded up to a grid (which can only admit
        more assignments), for the objective at both ends of the cell. Returns the bound,
        the ``theta`` used, the maximising assignments, the item to branch on (the
        heaviest free one) and the spread of the bound between the ends of the cell."""
        n = self.n
        free = np.flatnonzero(allowed.sum(axis=1) > 1)
        fixed = np.flatnonzero(allowed.sum(axis=1) == 1)
        fk = allowed[fixed].argmax(axis=1)
        neg = np.where(allowed[free], 0.0, -np.inf)
        # feasibility is tested at the right end of the cell (it is increasing in u)
        c_end = ends[-1][2]
        worst, spread = -math.inf, 0.0
        theta_out = theta0
        cands: list[np.ndarray] = []
        for j in range(3):
            cm, cconst = c_end[j]
            m_free = np.where(allowed[free], cm[free], np.inf)
            base = m_free.min(axis=1)
            mprime = np.where(allowed[free], cm[free] - base[:, None], 0.0)
            r = -cconst - float(cm[fixed, fk].sum()) - float(base.sum())
            rng_ = float(mprime.max(axis=1).sum())
            if r > rng_ + 1e-12:
                continue  # no completion meets this branch's constraint
            if r <= 0.0:
                need = 0
                delta = 1.0
                w = np.zeros(mprime.shape, dtype=np.int64)
            else:
                delta = max(rng_ / self.BINS, 1e-300)
                w = np.ceil(mprime / delta - 1e-9).astype(np.int64)
                w = np.maximum(w, 0)
                need = max(math.ceil(r / delta - 1e-6), 0)
            theta = theta0
            best_j = math.inf
            tried: set[float] = set()
            for _ in range(2):
                tried.add(theta)
                obj = np.stack([a[free] - theta * b[free] + neg for a, b, _ in ends])
                cst = np.array([float((a[fixed, fk] - theta * b[fixed, fk]).sum())
                                for a, b, _ in ends])
                vals, dec, size = self._dp(obj, w)
                if need >= size:
                    best_j = -math.inf
                    break
                tail = vals[:, need:]
                tot = tail.max(axis=1) + cst
                val = float(tot.max()) + math.exp(theta - 1.0 - phi)
                e = int(np.argmax(tot))
                sidx = need + int(np.argmax(tail[e]))
                zf = self._backtrack(dec, w, e, sidx)
                z = np.empty(n, dtype=np.int64)
                z[fixed], z[free] = fk, zf
                cands.append(z)
                if val < best_j:
                    best_j, theta_best = val, theta
                    spread = float(tot.max() - tot.min()) if best_j >= worst else spread
                big_p = float(ends[e][1][np.arange(n), z].sum())
                theta = 1.0 + phi + math.log(max(big_p, 1e-300))
                if theta in tried or abs(theta - theta_best) < 1e-13:
                    break
            if best_j > worst:
                worst = best_j
                if math.isfinite(best_j):
                    theta_out = theta_best
        item = int(free[np.argmax(self.p[free])]) if free.size else -1
        return worst, theta_out, cands, item, spread

    @staticmethod
    def _dp(obj: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """``vals[r, s] = max sum_x obj[r, x, k_x]`` over choices with total weight
        ``s`` (``-inf`` if none), with the decisions for :meth:`_backtrack`."""
        rows, nf, _ = obj.shape
        size = int(w.max(axis=1).sum()) + 1 if nf else 1
        vals = np.full((rows, size), -np.inf)
        vals[:, 0] = 0.0
        dec = np.zeros((nf, rows, size), dtype=np.int8)
        # items whose choices all weigh 0 (light items) just take their best choice
        light = w.max(axis=1) == 0 if nf else np.zeros(0, dtype=bool)
        if light.any():
            ol = obj[:, light, :]
            vals[:, 0] += ol.max(axis=2).sum(axis=1)
            dec[light] = ol.argmax(axis=2).T[:, :, None].astype(np.int8)
        top = 0
        for x in np.flatnonzero(~light):
            new = np.full((rows, size), -np.inf)
            hi = top + int(w[x].max())
            for k in range(3):
                o = obj[:, x, k]
                if not np.isfinite(o).any():
                    continue
                wk = int(w[x, k])
                cand = vals[:, :top + 1] + o[:, None]
                seg = new[:, wk:wk + top + 1]
                better = cand > seg
                new[:, wk:wk + top + 1] = np.where(better, cand, seg)
                dec[x][:, wk:wk + top + 1][better] = k
            vals, top = new, hi
        return vals, dec, size

    @staticmethod
    def _backtrack(dec: np.ndarray, w: np.ndarray, row: int, s: int) -> np.ndarray:
        z = np.zeros(dec.shape[0], dtype=np.int64)
        for x in range(dec.shape[0] - 1, -1, -1):
            k = int(dec[x, row, s])
            z[x] = k
            s -= int(w[x, k])
        return z

    # ---------------------------------------------------------------- heuristics
    def _contiguous(self, order: np.ndarray) -> np.ndarray:
        """Assignments whose blocks (top, middle, bottom) are contiguous in ``order``."""
        n = self.n
        i, j = np.triu_indices(n + 1, k=0)  # top = order[:i], middle = order[i:j]
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        r = rank[None, :]
        z = np.where(r < i[:, None], _TOP, np.where(r < j[:, None], _MID, _BOT))
        out: np.ndarray = z[(j > 0)]
        return out

    def _columns_of(self, zs: np.ndarray, y: np.ndarray, want: int, atol: float
                    ) -> tuple[np.ndarray, np.ndarray]:
        from ..utility import mutual_information_columns

        vals, us = self.evaluate(zs, y)
        idx = np.flatnonzero(vals > atol)
        idx = idx[np.argsort(-vals[idx], kind="stable")][:max(want, 0)]
        if not idx.size:
            return np.zeros((self.n, 0)), np.zeros(0)
        v = np.stack([self.column(zs[i], float(us[i])) for i in idx], axis=1)
        worst = self.uset.min_linear(v)
        v = v[:, v.max(axis=0) <= self.e * worst * (1 + 1e-9)]
        mu = (np.asarray(mutual_information_columns(v, self.p), dtype=np.float64)
              if v.shape[1] else np.zeros(0))
        ok = mu - y @ v > atol
        return v[:, ok], mu[ok]

    def start(self) -> np.ndarray:
        """Initial columns: the vertices with contiguous blocks in the order of decreasing
        and increasing ``p`` (no duals yet)."""
        o = np.argsort(-self.p, kind="stable")
        zs = np.concatenate([self._contiguous(o), self._contiguous(o[::-1])])
        cols, _ = self._columns_of(zs, np.zeros(self.n), zs.shape[0], -math.inf)
        return cols

    def heuristic(self, y: np.ndarray, want: int, atol: float
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Improving columns among the vertices with contiguous blocks in the order of
        ``y_x / p_x`` (``g_x(a) = p_x a (log a - y_x / p_x)``: a small ratio gains most
        from a high level)."""
        zs = self._contiguous(np.argsort(y / self.p, kind="stable"))
        return self._columns_of(zs, y, want, atol)

    # ---------------------------------------------------------------- search
    def _search(self, y: np.ndarray, tol: float, phi: float, stop: float, want: int,
                full: bool, early: bool, found: dict[bytes, tuple[float, np.ndarray, float]],
                max_nodes: int = 1_000_000) -> tuple[float, bool]:
        """One branch and bound at threshold ``phi`` (raised to the incumbent when
        ``full``; stopped once ``want`` improving points are known when ``early``);
        improving points (``G > tol``) are added to ``found``. Returns a valid bound on
        ``max G`` and whether the search finished."""
        n = self.n
        top_val = -math.inf

        def consider(zs: np.ndarray, u1: float = 0.0, u2: float = 1.0
                     ) -> tuple[np.ndarray, np.ndarray]:
            nonlocal phi, top_val
            vals, us = self.evaluate(zs, y, u1, u2)
            top_val = max(top_val, float(vals.max()))
            for z, v, u in zip(zs, vals, us, strict=True):
                if v > tol:
                    key = z.astype(np.int8).tobytes() + np.float64(u).tobytes()
                    if key not in found:
                        found[key] = (float(v), z.copy(), float(u))
                if full and v > phi:
                    phi = float(v)
            return vals, us

        # exact candidates first: the vertex and u = 1 of every assignment tried
        ends_cache: dict[float, tuple[np.ndarray, np.ndarray, list[Any]]] = {}

        def ends_for(u: float) -> tuple[np.ndarray, np.ndarray, list[Any]]:
            if u not in ends_cache:
                ends_cache[u] = self._arrays(u, y)
            return ends_cache[u]

        root = np.ones((n, 3), dtype=bool)
        heap: list[tuple[float, int, float, float, np.ndarray, float, float]] = []
        tick = 0

        def bound_node(u1: float, u2: float, allowed: np.ndarray, theta0: float
                       ) -> tuple[float, float, int, float, float]:
            """Bound, theta, branching item, spread over the cell and where to split
            the cell (the vertex ``u`` of the best candidate when inside it)."""
            ends = [ends_for(u1)] if u1 == u2 else [ends_for(u1), ends_for(u2)]
            val, theta, cands, item, spread = self._dp_bound(ends, allowed, phi, theta0)
            split = 0.5 * (u1 + u2)
            if cands:
                vals, us = consider(np.unique(np.stack(cands), axis=0))
                inside = (us > u1 + 1e-3 * (u2 - u1)) & (us < u2 - 1e-3 * (u2 - u1))
                if inside.any():
                    split = float(us[inside][np.argmax(vals[inside])])
            return val, theta, item, spread, split

        def push(u1: float, u2: float, allowed: np.ndarray, theta0: float) -> None:
            nonlocal tick
            self.nodes += 1
            free = np.flatnonzero(allowed.sum(axis=1) > 1)
            if free.size <= self.ENUMERATE:
                # few free items: every completion exactly
                base = allowed.argmax(axis=1)
                combos = np.stack(np.meshgrid(*([np.arange(3)] * free.size), indexing="ij"),
                                  axis=-1).reshape(-1, free.size)
                combos = combos[allowed[free[None, :], combos].all(axis=1)]
                zs = np.repeat(base[None], combos.shape[0], axis=0)
                zs[:, free] = combos
                consider(zs, u1, u2)
                return
            val, theta, _, _, split = bound_node(u1, u2, allowed, theta0)
            if val <= 0.0:
                return
            tick += 1
            heapq.heappush(heap, (-val, tick, u1, u2, allowed, theta, split))

        push(0.0, 1.0, root, 1.0 + phi)
        nodes = 1
        stopped = False
        while heap:
            if nodes >= max_nodes or time.monotonic() > stop:
                stopped = True
                break
            if early and len(found) >= max(want, 1) and nodes >= 2 * n:
                stopped = True
                break
            _, _, u1, u2, allowed, theta, _ = heapq.heappop(heap)
            # re-bound with the current threshold (it may have risen)
            val, theta, item, spread, split = bound_node(u1, u2, allowed, theta)
            nodes += 1
            if val <= 0.0:
                continue
            if u2 - u1 > self.CELL or (u2 - u1 > 1e-9 and (item < 0 or spread > 0.5 * val)):
                um = split
                push(u1, um, allowed, theta)
                push(um, u2, allowed, theta)
                nodes += 2
                continue
            if item < 0:  # pragma: no cover - a node with a free item has a tie item
                item = int(np.argmax(allowed.sum(axis=1) > 1))
            for k in range(3):
                if allowed[item, k]:
                    child = allowed.copy()
                    child[item] = False
                    child[item, k] = True
                    push(u1, u2, child, theta)
                    nodes += 1
        # every point with G > phi was evaluated exactly (a leaf) or is in an open node
        bound = max(phi, top_val)
        if stopped and heap:
            # an open node with H <= beta has G <= phi + beta / P_min(node)
            worst = max(phi + max(-h[0], 0.0) / self._p_min(h[2], h[3], h[4]) for h in heap)
            return max(bound, worst), False
        return bound, True

    def _spatial_bound(self, y: np.ndarray, tol: float, stop: float) -> float:
        """The bound of :class:`~pmlkit.design.colgen.BranchAndBoundOracle` with half the
        time left (``inf`` if it has no time)."""
        from .colgen import BranchAndBoundOracle

        now = time.monotonic()
        if now >= stop:
            return math.inf
        if self._spatial is None:
            self._spatial = BranchAndBoundOracle(self.uset, self.p, self.eps)
        _, _, b = self._spatial.price(y, want=1 << 30, deadline=now + 0.5 * (stop - now),
                                      atol=tol)
        return float(b)

    def _p_min(self, u1: float, u2: float, allowed: np.ndarray) -> float:
        """Smallest ``P = p(T) + u p(M)`` of a vertex in a node (``T`` empty only at
        ``u = 1``)."""
        p = self.p
        one = allowed.sum(axis=1) == 1
        ft, fm = float(p[one & allowed[:, _TOP]].sum()), float(p[one & allowed[:, _MID]].sum())
        out = math.inf
        if allowed[:, _TOP].any():
            out = max(ft + u1 * fm, float(p[allowed[:, _TOP]].min()))
        if u2 >= 1.0 and ft == 0.0 and allowed[:, _MID].any():
            out = min(out, max(fm, float(p[allowed[:, _MID]].min())))
        return max(out, float(p.min()))

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns and a bound on ``max_{v in K_1} mu(v) - y . v`` (class
        docstring). ``full``: a bound is wanted even when improving columns exist; the
        search is then also capped by the oracle's own ``deadline``, and when the exact
        search does not finish in half the time left, the bound is certified at
        increasing thresholds (a search at a higher threshold discards more nodes)."""
        from ..utility import mutual_information_columns

        n, p = self.n, self.p
        y = np.asarray(y, dtype=np.float64)
        if math.isfinite(self.deadline) and \
                time.monotonic() > self.t0 + self.RESERVE * (self.deadline - self.t0):
            full = True  # the last part of the budget goes to the bound
        stop = min(deadline, self.deadline) if full else deadline
        tol = max(atol, 0.0)
        found: dict[bytes, tuple[float, np.ndarray, float]] = {}
        now = time.monotonic()
        first = now + 0.3 * (stop - now) if full and math.isfinite(stop) else stop
        bound, done = self._search(y, tol, tol, first, want, full, not full, found)
        if full and not done and math.isfinite(stop):
            # the spatial branch and bound of the generic oracle (chord relaxations over
            # coordinate boxes) is another valid bound: keep the smaller
            bound = min(bound, self._spatial_bound(y, tol, stop))
        if full and not done:
            # certify at thresholds from high (quick) to low, while they finish
            scale = max(abs(float(np.sum(y))), 1e-3)
            for frac in (1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 1e-4, 1e-5):
                phi2 = frac * scale
                if phi2 <= tol or phi2 >= bound:
                    continue
                now = time.monotonic()
                if now >= stop:
                    break
                b2, done2 = self._search(y, tol, phi2, now + 0.5 * (stop - now), want,
                                         False, False, found)
                bound = min(bound, b2)
                if not done2:
                    break
        elif not full and not done:
            bound = math.inf
        bound += 1e-10 * (1.0 + float(np.abs(y).sum()))
        best = sorted(found.values(), key=lambda t: -t[0])
        cols_l = [self.column(z, u) for _, z, u in best[:max(want, 1) * 2]]
        if not cols_l:
            return np.zeros((n, 0)), np.zeros(0), bound
        v = np.stack(cols_l, axis=1)
        worst = self.uset.min_linear(v)
        v = v[:, v.max(axis=0) <= self.e * worst * (1 + 1e-9)]
        vals = (np.asarray(mutual_information_columns(v, p), dtype=np.float64)
                if v.shape[1] else np.zeros(0))
        ok = vals - y @ v > atol
        v, vals = v[:, ok], vals[ok]
        order = np.argsort(-(vals - y @ v), kind="stable")[:max(want, 1)]
        return v[:, order], vals[order], bound
