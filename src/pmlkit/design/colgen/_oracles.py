"""Generic pricing oracles of the column generation (:mod:`pmlkit.design.colgen`): the
enumeration of an explicit ray list, the columns with contiguous blocks shared by the
oracles without a ray list (:class:`BlockColumns`), and the spatial branch and bound for
mutual information over any set (:class:`BranchAndBoundOracle`)."""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from ...errors import PMLError
from ._work import ENUMERATION_RATE, LP_RATE, meter_of

#: Largest number of candidate rays the enumeration oracle generates (memory ~ 8 N K bytes).
MAX_ENUMERATED = 2_000_000
#: Largest alphabet whose ``3^N`` three-level candidates are enumerated (in chunks; only
#: the feasible ones are kept: up to a fifth of them at eps = log 2, ~1.1 million at N = 13).
MAX_THREE_LEVEL_N = 13


def xlogx(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0)



class EnumerationOracle:
    """Exact pricing over an explicit list of candidate rays (columns of ``rays``).

    Partial pricing: a full pass (one matrix-vector product over every ray) also keeps the
    :attr:`CACHE` rays of largest reduced cost; the next rounds price those first and
    return their improving columns without a bound (``inf``). A round whose cache gives
    nothing, a repeat of the same duals, or ``full=True`` prices every ray and returns the
    exact bound, so a reported gap always comes from a full pass."""

    name = "enumeration"
    #: cheap rounds: finish whatever the deadline
    runs_to_end = True
    #: rounds answered from the cache return no bound: :func:`column_generation` asks for
    #: one at the end
    skips_bounds = True
    #: rays kept from a full pass for the partial pricing of the next rounds
    CACHE = 20_000

    def __init__(self, rays: np.ndarray, values: np.ndarray) -> None:
        self.rays = rays
        self.values = values
        self._cache: tuple[np.ndarray, np.ndarray] | None = None
        self._last_y: np.ndarray | None = None

    @staticmethod
    def _best(rc: np.ndarray, want: int, atol: float) -> np.ndarray:
        """Indices of the (at most ``want``) largest entries of ``rc`` above ``atol``."""
        idx = np.flatnonzero(rc > atol)
        if idx.size > want:
            idx = idx[np.argpartition(-rc[idx], want - 1)[:want]] if want > 0 \
                else idx[:0]
        return idx

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        repeat = self._last_y is not None and np.array_equal(y, self._last_y)
        self._last_y = y.copy()
        meter = meter_of(self)
        if not full and not repeat and self._cache is not None:
            rays, vals = self._cache
            meter.spend(ENUMERATION_RATE * rays.size)
            sel = self._best(vals - y @ rays, want, atol)
            if sel.size:
                return rays[:, sel], vals[sel], math.inf
        meter.spend(ENUMERATION_RATE * self.rays.size)
        rc = self.values - y @ self.rays
        best = float(rc.max()) if rc.size else 0.0
        if rc.size > 2 * self.CACHE:
            keep = np.argpartition(-rc, self.CACHE - 1)[: self.CACHE]
            self._cache = (np.ascontiguousarray(self.rays[:, keep]), self.values[keep])
        sel = self._best(rc, want, atol)
        return self.rays[:, sel], self.values[sel], best


class BlockColumns:
    """Columns with contiguous blocks in a sort order (start and heuristic columns
    shared by the pricing oracles without a ray list)."""

    n: int
    p: np.ndarray
    uset: Any
    eps: float
    e: float

    def improving(self, cols: list[np.ndarray], y: np.ndarray, atol: float
                  ) -> tuple[np.ndarray, np.ndarray]:
        """The columns among ``cols`` that are in ``K_1`` (the PML constraint on the set's
        worst case, to a relative ``1e-9``) and improve the master at the duals ``y`` by
        more than ``atol``, with their utilities."""
        from ...utility import mutual_information_columns

        if not cols:
            return np.zeros((self.n, 0)), np.zeros(0)
        v = np.stack(cols, axis=1)
        worst = self.uset.min_linear(v)
        v = v[:, v.max(axis=0) <= self.e * worst * (1 + 1e-9)]
        vals = (np.asarray(mutual_information_columns(v, self.p), dtype=np.float64)
                if v.shape[1] else np.zeros(0))
        ok = vals - y @ v > atol
        return v[:, ok], vals[ok]

    def contiguous(self, order: np.ndarray) -> np.ndarray:
        """Three-level points of ``K_1`` whose blocks (top, middle, bottom) are contiguous
        in ``order``: ``O(N^2)`` candidates, normalised to ``p . w = 1``."""
        from ..subconvex import block_rays

        n, p = self.n, self.p
        i, j = np.triu_indices(n + 1, k=1)  # top = order[:i], mid = order[i:j]
        keep = i >= 1
        i, j = i[keep], j[keep]
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        top = rank[None, :] < i[:, None]
        mid = (rank[None, :] >= i[:, None]) & (rank[None, :] < j[:, None])
        cols = block_rays(self.uset, self.eps, top, mid, q0=p)
        return cols / (p @ cols)[None, :] if cols.shape[1] else cols

    def start(self) -> np.ndarray:
        """Initial columns: contiguous blocks in the order of decreasing and increasing
        ``p`` (no duals yet)."""
        o = np.argsort(-self.p, kind="stable")
        return np.concatenate([self.contiguous(o), self.contiguous(o[::-1])], axis=1)

    def heuristic(self, y: np.ndarray, want: int, atol: float
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Improving columns among the contiguous-block points in the order of
        ``y_x / p_x`` (an entry with a small ratio gains most from a large ``w_x``:
        ``g_x(a) = p_x a (log a - y_x / p_x)``)."""
        from ...utility import mutual_information_columns

        p = self.p
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(p > 0, y / np.where(p > 0, p, 1.0), np.inf)
        cols = self.contiguous(np.argsort(r, kind="stable"))
        if not cols.shape[1]:
            return cols, np.zeros(0)
        vals = np.asarray(mutual_information_columns(cols, p), dtype=np.float64)
        rc = vals - y @ cols
        k = min(want, rc.size)
        idx = np.argpartition(-rc, k - 1)[:k]
        idx = idx[rc[idx] > atol]
        return cols[:, idx], vals[idx]


class BranchAndBoundOracle(BlockColumns):
    """Pricing for mutual information over ``K_1`` of any set by spatial branch and bound
    (module docstring). ``price`` returns improving columns and a valid upper bound on
    ``max_{v in K_1} mu(v) - y . v`` (``inf`` if the search was cut before bounding)."""

    name = "branch and bound"

    def __init__(self, uset: Any, p: np.ndarray, eps: float) -> None:
        from scipy.sparse import csr_matrix, vstack

        from ..linear import mechanism_polytope

        n = p.size
        poly = mechanism_polytope(uset, eps, n_outputs=1)
        wsl = poly.layout["W"]
        assert wsl.start == 0 and wsl.stop == n
        aeq = poly.A_eq.tocsr()[n:]  # drop the row sums (one column: W = 1)
        prow = np.zeros((1, poly.n_vars))
        prow[0, :n] = p
        self.A_eq = vstack([csr_matrix(prow), aeq]).tocsr()
        self.b_eq = np.concatenate([[1.0], poly.b_eq[n:]])
        self.A_ub, self.b_ub = poly.A_ub, poly.b_ub
        self.bounds = np.array(poly.bounds, dtype=np.float64)
        self.bounds[:n, 1] = np.inf
        self.n, self.p, self.nv = n, p, poly.n_vars
        self.uset, self.eps = uset, eps
        self.cap = self._caps()

    def _lp(self, c: np.ndarray, bounds: np.ndarray) -> np.ndarray | None:
        from scipy.optimize import linprog

        res = linprog(c, A_ub=self.A_ub, b_ub=self.b_ub, A_eq=self.A_eq, b_eq=self.b_eq,
                      bounds=bounds, method="highs")
        if res.status == 2:
            return None
        if res.status != 0 or res.x is None:
            raise PMLError(f"pricing LP failed (HiGHS status {res.status}): {res.message}")
        return np.asarray(res.x, dtype=np.float64)

    def _caps(self) -> np.ndarray:
        """``max w_x`` over ``K_1`` for every ``x`` (one LP each), slightly enlarged."""
        cap = np.empty(self.n)
        for x in range(self.n):
            c = np.zeros(self.nv)
            c[x] = -1.0
            sol = self._lp(c, self.bounds)
            if sol is None:  # pragma: no cover - w = 1 is feasible
                raise PMLError("the pricing polytope is empty")
            cap[x] = sol[x] * (1 + 1e-9) + 1e-12
        return cap

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              max_nodes: int = 200_000, until: float = math.inf,
              full: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
        from ...utility import mutual_information_columns

        n, p = self.n, self.p
        meter = meter_of(self)
        lo0, hi0 = np.zeros(n), self.cap.copy()

        def g(a: np.ndarray) -> np.ndarray:
            out: np.ndarray = p * xlogx(a) - y * a
            return out

        def relax(lo: np.ndarray, hi: np.ndarray) -> tuple[float, np.ndarray] | None:
            width = hi - lo
            gl, gh = g(lo), g(hi)
            slope = np.where(width > 0, (gh - gl) / np.where(width > 0, width, 1.0), 0.0)
            c = np.zeros(self.nv)
            c[:n] = -slope
            b = self.bounds.copy()
            b[:n, 0], b[:n, 1] = lo, hi
            meter.spend(LP_RATE * self.nv)
            sol = self._lp(c, b)
            if sol is None:
                return None
            w = np.clip(sol[:n], lo, hi)
            ub = float(np.sum(gl + slope * (w - lo)))
            return ub, w

        found: list[tuple[float, np.ndarray]] = []
        best = -math.inf
        heap: list[tuple[float, int, np.ndarray, np.ndarray, np.ndarray]] = []
        tick = 0

        def push(lo: np.ndarray, hi: np.ndarray) -> None:
            nonlocal best, tick
            r = relax(lo, hi)
            if r is None:
                return
            ub, w = r
            val = float(np.sum(g(w)))
            if val > best:
                best = val
            if val > atol:
                found.append((val, w))
            if ub > max(best, 0.0) + atol:
                tick += 1
                heapq.heappush(heap, (-ub, tick, lo, hi, w))

        push(lo0, hi0)
        nodes = 1
        while heap:
            if nodes >= max_nodes or meter.stop(until, deadline):
                break
            if len(found) >= want and nodes >= 4 * n:
                # enough improving columns for this round; the bound is not needed yet
                break
            neg, _, lo, hi, w = heapq.heappop(heap)
            if -neg <= max(best, 0.0) + atol:
                continue
            width = hi - lo
            gl, gh = g(lo), g(hi)
            slope = np.where(width > 0, (gh - gl) / np.where(width > 0, width, 1.0), 0.0)
            err = gl + slope * (w - lo) - g(w)
            x = int(np.argmax(err))
            split = float(w[x])
            if not (lo[x] < split < hi[x]):
                split = 0.5 * (lo[x] + hi[x])
            h1 = hi.copy()
            h1[x] = split
            l2 = lo.copy()
            l2[x] = split
            push(lo, h1)
            push(l2, hi)
            nodes += 2
        open_ub = max((-h[0] for h in heap), default=-math.inf)
        # pruned nodes were within atol of max(best, 0): add it to stay valid
        bound = max(best, open_ub) + atol
        found.sort(key=lambda t: -t[0])
        cols = np.stack([w for _, w in found[:want]], axis=1) if found else np.zeros((n, 0))
        vals = (mutual_information_columns(cols, p) if cols.shape[1]
                else np.zeros(0))
        return cols, np.asarray(vals, dtype=np.float64), float(bound)


#: Largest number of array steps of one pricing round (:meth:`L1BallOracle.steps`, a few
#: nanoseconds each) for which :class:`L1BallOracle` is used.
