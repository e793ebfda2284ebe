"""Exact pricing of mutual information over an l1-ball by dynamic programming over
masses (:class:`L1BallOracle`).

Level structure of the l1-ball (radius ``beta``, ``b = min(beta / 2, 1)``,
``E = e^eps``, ``U' = E / (1 + E b)``). The worst distribution of the ball moves a mass
``b`` from the largest entries of a column to its smallest, so ``min_Q Q . w >= 1 -
b (max w - min w)`` on ``K_1``, and the box ``F = {0 <= w <= U', p . w = 1}`` lies in
``K_1``. The extreme points of ``K_1`` have at most three levels (top block ``T``, middle
``M``, bottom, :func:`~pmlkit.design.subconvex.three_level_rays`); solving the two tight
equations (``p . w = 1``, PML tight) for the ball's greedy worst case splits them into:

1. ``P_T = p(T) >= b``, bottom 0: the top level is exactly ``U'`` and the middle one in
   ``[0, U']``, a point of ``F`` (as are the top-only points ``1_T / P_T``, feasible only
   when ``E (P_T - b) >= 1``, i.e. ``1 / P_T <= U'``). ``F`` is in ``K_1`` and G is convex,
   so these are covered by the maximum of ``G`` over the vertices of ``F``: every entry at
   0 or ``U'`` but one free entry ``f`` at ``r = (1 - U' P_S) / p_f``.
2. Two levels, ``T`` at ``U`` and the rest at ``C > 0``: ``C = (1 - U' P_T) / (U' b P_T +
   1 - P_T)``, ``U = U' (1 + b C)`` when ``P_T >= b``; ``C = 1 / (1 + (E - 1) P_T)``,
   ``U = E C`` when ``P_T < b`` (the whole top mass is moved).
3. ``P_T < b``, bottom 0 ("small top"): ``U = E B q`` with ``q = P_T + P_M - b``,
   ``B (E P_T q + P_M) = 1``, and ``U >= B`` (``E q >= 1``).

On a family the levels depend on the block masses only, and
``G = sum_levels L (P_level log L - Y_level)`` with ``Y_level = sum_{x in block} y_x`` is
decreasing in each ``Y`` (levels are >= 0). With integer masses ``k_x``, the knapsack
recursion :func:`_min_sums` gives ``min Y`` over the sets of every mass ``0..m`` in
``O(N m)``: family 2 is exact from one table, family 1 from one table per free entry
``f`` (``O(N^2 m)``). For family 3, ``U Y_T + B Y_M = B ((rho - 1) Y_T + Y_S)`` with
``S = T + M`` and ``rho = U / B = E q >= 1``; it is at least ``B ((rho - 1) min Y(k_T) + min
Y(k_S))`` and ``B (rho min Y(k_T) + min Y(k_M))``, and where those bounds do not settle the
sign, a table over (mass of ``T``, mass of ``S``) with ``T`` inside ``S`` makes it exact
(:meth:`L1BallOracle._refine_small`). The bound is the largest value over the families,
plus a margin of ``1e-12 (1 + sum |y|)`` for rounding, and the minimising sets (traced back
through the tables) are the improving columns.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ._oracles import BlockColumns, xlogx
from ._work import DP_RATE, meter_of

#: Largest number of array steps of one pricing round (:meth:`L1BallOracle.steps`, a few
#: nanoseconds each) for which :class:`L1BallOracle` is used.
DP_MAX_STEPS = 1e9

#: Largest denominator ``m`` for which a prior written as ``k / m`` (integer ``k``, e.g. the
#: estimate ``counts / total``) is priced exactly by dynamic programming over masses.
GRID_MAX = 400_000


def prior_grid(p: np.ndarray, max_denominator: int = GRID_MAX
               ) -> tuple[np.ndarray, int] | None:
    """``(k, m)`` with integer ``k >= 0`` and ``p == k / m`` (every entry within ``1e-12``
    relative, ``sum(k) == m``), ``m <= max_denominator``; ``None`` if there is no such grid.

    Examples
    --------
    >>> k, m = prior_grid(np.array([0.5, 0.3, 0.2]))
    >>> k.tolist(), m
    ([5, 3, 2], 10)
    >>> prior_grid(np.array([1 / math.pi, 1 - 1 / math.pi])) is None
    True
    """
    from fractions import Fraction

    p = np.asarray(p, dtype=np.float64)
    m = 1
    for v in p:
        if v <= 0:
            continue
        d = Fraction(float(v)).limit_denominator(max_denominator).denominator
        m = m * d // math.gcd(m, d)
        if m > max_denominator:
            return None
    k = np.rint(p * m)
    if k.sum() != m or np.any(np.abs(k - p * m) > 1e-9 * np.maximum(1.0, k)) \
            or np.any(np.abs(k / m - p) > 1e-12 * np.maximum(p, 1e-300)):
        return None
    return k.astype(np.int64), m


def _min_sums(kw: np.ndarray, y: np.ndarray, size: int, *, keep: bool = False
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """``best[k] = min { sum_{x in S} y_x : S a set of items with sum_{x in S} kw_x = k }``
    for ``k = 0..size`` (``inf`` where no set has that mass): the 0/1-knapsack recursion,
    one vectorised pass per item. With ``keep``, also the ``(items, size + 1)`` table of
    decisions for :func:`_backtrack`."""
    best = np.full(size + 1, math.inf)
    best[0] = 0.0
    take = np.zeros((kw.size, size + 1), dtype=bool) if keep else None
    for i in range(kw.size):
        a = int(kw[i])
        if a > size:
            continue
        cand = best[:size + 1 - a] + y[i]
        cur = best[a:]
        better = cand < cur
        if take is not None:
            take[i, a:] = better
        if a == 0:
            best = np.where(better, cand, cur)
        else:
            best[a:] = np.where(better, cand, cur)
    return best, take


def _backtrack(kw: np.ndarray, take: np.ndarray, k: int) -> np.ndarray:
    """Items (indices into ``kw``) of the minimising set of mass ``k`` (see
    :func:`_min_sums`)."""
    chosen = []
    for i in range(kw.size - 1, -1, -1):
        if take[i, k]:
            chosen.append(i)
            k -= int(kw[i])
    return np.asarray(chosen[::-1], dtype=np.int64)


def _members(kw: np.ndarray, take: np.ndarray, size: int) -> np.ndarray:
    """``(items, size + 1)`` booleans: item ``i`` is in the set :func:`_backtrack` returns
    for mass ``k``, for every ``k <= size`` at once."""
    cur = np.arange(size + 1)
    inside = np.zeros((kw.size, size + 1), dtype=bool)
    for i in range(kw.size - 1, -1, -1):
        t = take[i, cur]
        inside[i] = t
        cur = cur - np.where(t, int(kw[i]), 0)
    return inside


def _range_min_table(a: np.ndarray) -> list[np.ndarray]:
    """Sparse table of ``a``: level ``j`` holds the minima over windows of ``2^j``."""
    table = [a]
    span = 1
    while 2 * span <= a.size:
        prev = table[-1]
        table.append(np.minimum(prev[:-span], prev[span:]))
        span *= 2
    return table


def _range_min(table: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``min a[lo..hi]`` (inclusive, ``lo <= hi``) elementwise, from :func:`_range_min_table`."""
    length = (hi - lo + 1).astype(np.int64)
    level = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    out = np.full(lo.shape, math.inf)
    for j in np.unique(level):
        sel = level == j
        t = table[int(j)]
        out[sel] = np.minimum(t[lo[sel]], t[hi[sel] - (1 << int(j)) + 1])
    return out


class L1BallOracle(BlockColumns):
    """Exact pricing for mutual information over ``K_1`` of an l1-ball centred at the
    prior, for a prior on a grid ``k / m`` (module docstring, "Level structure").

    ``price(y, want=, deadline=, atol=, full=False)`` returns improving columns (points of
    ``K_1``), their utilities and an upper bound on ``max_{v in K_1} mu(v) - y . v``.

    Examples
    --------
    With zero duals the bound is the largest ``mu`` over ``K_1``. For the fixed prior
    ``(0.5, 0.3, 0.2)`` at ``eps = log 2`` (entries at most 2, ``p . w = 1``) that is
    ``log 2``, reached by ``w = (2, 0, 0)`` (the first value revealed with certainty):

    >>> from pmlkit.sets import L1Ball
    >>> p = np.array([0.5, 0.3, 0.2])
    >>> oracle = L1BallOracle(L1Ball(p, 0.0), p, math.log(2), prior_grid(p))
    >>> cols, vals, bound = oracle.price(np.zeros(3), want=1, deadline=math.inf,
    ...                                  atol=1e-12, full=True)
    >>> round(bound, 9), round(float(vals[0]), 9)
    (0.693147181, 0.693147181)
    """

    name = "dynamic programming"
    #: some rounds return no bound (``inf``): :func:`column_generation` asks for one at
    #: the end
    skips_bounds = True

    def __init__(self, uset: Any, p: np.ndarray, eps: float, grid: tuple[np.ndarray, int]
                 ) -> None:
        from .._common import exp_capped

        self.uset, self.p, self.eps, self.n = uset, p, eps, p.size
        self.k, self.m = grid
        self.e = exp_capped(eps)
        self.b = min(float(uset.radius) / 2.0, 1.0)
        self.up = self.e / (1.0 + self.e * self.b)
        self._calls = 0

    @staticmethod
    def steps(n: int, m: int, radius: float) -> float:
        """Array steps of one full pricing round: ``N^2 m`` for the fixed-prior tables and
        ``(b m) m`` for the small-top family (``b = radius / 2``)."""
        return float(n) ** 2 * m + min(radius / 2.0, 1.0) * float(m) ** 2

    # -- the four families of candidates; each returns (values, payloads) -------------------
    def _fixed_prior(self, y: np.ndarray, best_all: np.ndarray, take: np.ndarray,
                     above: float) -> list[tuple[float, str, tuple[int, ...]]]:
        """Best point of ``{0 <= w <= U', p . w = 1}`` with free entry ``f``, per ``f``.

        ``min Y`` over the sets avoiding ``f`` is at least ``min Y`` over all sets
        (``best_all``), with equality where the minimising set avoids ``f``; the exact
        table without ``f`` is built only where the sets containing ``f`` could beat both
        the others and ``above``."""
        up, k, m, p = self.up, self.k, self.m, self.p
        out: list[tuple[float, str, tuple[int, ...]]] = []
        if up * (1.0 + 1e-12) < 1.0:  # the box cannot reach p . w = 1
            return out
        size = min(m, math.floor(m / up * (1 + 1e-12)))
        mass = np.arange(size + 1) / m
        lin = up * (mass * math.log(up) - best_all[:size + 1])  # S at U', relaxed
        free = np.flatnonzero(k > 0)
        r = np.clip((1.0 - up * mass[None, :]) / p[free, None], 0.0, up)
        ok = np.isfinite(best_all[None, :size + 1]) \
            & ((1.0 - up * mass[None, :]) >= -1e-12 * up) \
            & ((1.0 - up * mass[None, :]) <= up * p[free, None] * (1 + 1e-12))
        with np.errstate(invalid="ignore"):
            rel = np.where(ok, lin[None, :] + p[free, None] * xlogx(r)
                           - y[free, None] * r, -math.inf)
        # where the minimising set of mass k (traced back through the table) avoids f, the
        # relaxed value is exact
        inside = _members(k, take, size)[free]
        idx = np.arange(self.n)
        for i, f_ in enumerate(free):
            f = int(f_)
            vals = rel[i]
            ex = np.where(inside[i], -math.inf, vals)
            wi = np.where(inside[i], vals, -math.inf)
            j = int(np.argmax(ex))
            top_in = float(wi.max())
            if top_in <= max(float(ex[j]), above):
                if ex[j] > -math.inf:
                    out.append((float(ex[j]), "fp", (f, j)))
                if top_in > -math.inf:
                    out.append((top_in, "fp-relaxed", (f,)))
                continue
            others = idx != f
            meter_of(self).spend(DP_RATE * self.n * size)
            best, _ = _min_sums(k[others], y[others], size)
            rf = (1.0 - up * mass) / p[f]
            okf = np.isfinite(best) & (rf >= -1e-12 * up) & (rf <= up * (1 + 1e-12))
            if not okf.any():
                continue
            rf = np.clip(rf, 0.0, up)
            val = np.where(okf, up * (mass * math.log(up) - best) + p[f] * xlogx(rf)
                           - y[f] * rf, -math.inf)
            j = int(np.argmax(val))
            out.append((float(val[j]), "fp", (f, j)))
        return out

    def _levels2(self, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Levels ``(U, C)`` of the two-level points with top mass ``mass``, and validity."""
        e, b, up = self.e, self.b, self.up
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            den = up * b * mass + 1.0 - mass
            c_a = (1.0 - up * mass) / den
            c_b = 1.0 / (1.0 + (e - 1.0) * mass)
            c = np.where(mass >= b, c_a, c_b)
            u = np.where(mass >= b, up * (1.0 + b * c), e * c)
            ok = np.isfinite(c) & np.isfinite(u) & (c >= 0) & (u >= c) \
                & ((mass < b) | (den > 0))
        return u, c, ok

    def _two_level(self, y: np.ndarray, best: np.ndarray
                   ) -> list[tuple[float, str, tuple[int, ...]]]:
        m = self.m
        kk = np.arange(m + 1)
        if not (self.k == 0).any():
            kk = kk[:-1]  # the rest must be non-empty
        mass = kk / m
        u, c, ok = self._levels2(mass)
        ok &= np.isfinite(best[kk])
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            val = mass * xlogx(u) + (1 - mass) * xlogx(c) - (u - c) * best[kk] \
                - c * float(y.sum())
        val = np.where(ok, val, -math.inf)
        order = np.argsort(-val)[: max(4, self.n)]
        return [(float(val[j]), "two", (int(kk[j]),)) for j in order if val[j] > -math.inf]

    def _small_top(self, best: np.ndarray, above: float = -math.inf, block: int = 256
                   ) -> list[tuple[float, str, tuple[int, ...]]]:
        """Upper bounds over the three-level points whose top block has mass below
        ``b``: ``U = e^eps B q``, ``B (e^eps P_T q + P_M) = 1`` with ``q = P_T + P_M - b``
        (and ``U >= B``: ``e^eps q >= 1``). One candidate (the best ``k_M``) per ``k_T``.

        Each row ``k_T`` is first bounded on blocks of ``block`` consecutive ``k_M``: along
        a row ``q``, ``P_M`` and ``U`` increase and ``B`` decreases, ``a log a`` is convex
        (its maximum on an interval is at an end), and the tables' minima over the block
        (a sparse table) bound the ``min Y`` terms from below. Only the blocks whose bound
        exceeds ``above`` are evaluated cell by cell."""
        e, b, m = self.e, self.b, self.m
        out: list[tuple[float, str, tuple[int, ...]]] = []
        kts = np.arange(min(math.ceil(b * m), m + 1))
        kts = kts[(kts / m < b) & np.isfinite(best[kts])]
        if not kts.size:
            return out
        # e^eps q >= 1 needs k_M >= (b - P_T + e^-eps) m; one unit of slack for rounding
        first = np.maximum(np.floor((b + 1.0 / e) * m - kts) - 1, 1).astype(np.int64)
        last = m - kts  # k_T + k_M <= m
        table = _range_min_table(best)
        nb = int(np.max((last - first) // block + 1)) if (last >= first).any() else 0
        if nb <= 0:
            return out
        kt = kts[:, None].astype(np.float64)
        k1 = first[:, None] + block * np.arange(nb)[None, :]
        k2 = np.minimum(k1 + block - 1, last[:, None])  # inclusive
        live = k1 <= k2
        k1c, k2c = np.where(live, k1, first[:, None]), np.where(live, k2, first[:, None])
        pt = kt / m

        def levels(km: np.ndarray) -> tuple[np.ndarray, ...]:
            pm = km / m
            q = pt + pm - b
            bb = 1.0 / (e * pt * q + pm)
            return pm, q, bb, e * bb * q

        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # valid cells of a block start at q = e^-eps at the earliest: bound the levels
            # from there (B is positive and decreasing, U increasing, on that range)
            kstar = (b + 1.0 / e - pt) * m
            pm1, q1, bb1, u1 = levels(np.maximum(k1c.astype(np.float64), kstar))
            pm2, q2, bb2, u2 = levels(k2c.astype(np.float64))
            ulog = np.maximum(xlogx(u1), xlogx(u2))
            blog = np.maximum(xlogx(bb1), xlogx(bb2))
            phi = pt * ulog + np.where(blog >= 0, pm2, pm1) * blog
            bt = best[kts][:, None]
            eq_lo, eq_hi = e * q1, e * q2
            min_s = _range_min(table, kts[:, None] + k1c, kts[:, None] + k2c)
            min_m = _range_min(table, k1c, k2c)
            low_a = np.minimum((eq_lo - 1.0) * bt, (eq_hi - 1.0) * bt) + min_s
            low_b = np.minimum(eq_lo * bt, eq_hi * bt) + min_m
            low = np.maximum(low_a, low_b)
            ub = phi - np.where(low >= 0, bb2, bb1) * low
            ub = np.where(live & (eq_hi >= 1.0) & ~np.isnan(ub), ub, -math.inf)
        row_ub = ub.max(axis=1)
        for r in range(kts.size):
            if row_ub[r] == -math.inf:
                continue
            hot = np.flatnonzero(ub[r] > above)
            if not hot.size:
                out.append((float(row_ub[r]), "small-bound", (int(kts[r]),)))
                continue
            ktr = int(kts[r])
            km = (k1[r, hot][:, None] + np.arange(block)[None, :]).ravel()
            km = km[km <= last[r]]
            pt_r = ktr / m
            pm = km / m
            q = pt_r + pm - b
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                bb = 1.0 / (e * pt_r * q + pm)
                u = e * bb * q
                # U Y_T + B Y_M = B (rho Y_T + Y_M), rho = U / B = e^eps q >= 1, is at
                # least B ((rho - 1) min Y(k_T) + min Y(k_T + k_M)) (T and T + M are sets
                # of those masses) and B (rho min Y(k_T) + min Y(k_M)) (T and M are)
                btr = best[ktr]
                low_c = np.maximum((e * q - 1.0) * btr + best[ktr + km], e * q * btr + best[km])
                val = pt_r * xlogx(u) + pm * xlogx(bb) - bb * low_c
            val = np.where((e * q >= 1.0) & np.isfinite(val), val, -math.inf)
            cold = np.delete(ub[r], hot)
            rest = float(cold.max()) if cold.size else -math.inf
            j = int(np.argmax(val))
            if val[j] >= rest and val[j] > -math.inf:
                out.append((float(val[j]), "small", (ktr, int(km[j]))))
            elif rest > -math.inf:
                out.append((max(rest, float(val[j])), "small-bound", (ktr,)))
        return out

    def _refine_small(self, y: np.ndarray, best: np.ndarray,
                      cands: list[tuple[float, str, tuple[int, ...]]], above: float,
                      budget: float = 4e7) -> list[tuple[float, str, tuple[int, ...]]]:
        """Tighter bounds for the small-top candidates above ``above``: ``T`` inside
        ``S = T + M`` exactly. With ``K`` the mass of ``S``, ``rho = e^eps (K / m - b)``
        depends on ``K`` only, and ``rho Y_T + Y_M = (rho_j - 1) Y_T + Y_S + (rho - rho_j)
        Y_T``; for ``K`` in a segment starting at ``rho_j <= rho``, the first two terms are
        minimised exactly by a dynamic programme over ``(mass of T, mass of S)`` and the
        last is at least ``(rho - rho_j) min Y(k_T)``. Skipped beyond ``budget`` cell
        updates (the looser bound stays)."""
        e, b, m, kw = self.e, self.b, self.m, self.k
        hot = [c for c in cands if c[0] > above]
        if not hot:
            return cands
        kt_max = max(c[2][0] for c in hot)
        # e^eps q >= 1 needs K >= (b + e^-eps) m: one unit of slack for rounding
        k_lo = max(0, math.floor((b + 1.0 / e) * m) - 1)
        per = float(kw.size) * (kt_max + 1) * (m + 1)
        # one segment per K is exact; fewer, wider segments when that costs too much
        segs = int(min(m + 1 - k_lo, budget // max(per, 1.0)))
        if segs < 1:
            return cands
        edges = np.unique(np.linspace(k_lo, m + 1, segs + 1).astype(np.int64))
        ref: dict[int, float] = {}
        rows = sorted({c[2][0] for c in hot})
        for a, z in itertools.pairwise(edges):
            rho_j = e * (a / m - b)
            d = np.full((kt_max + 1, m + 1), math.inf)
            d[0, 0] = 0.0
            for i in range(kw.size):
                w_, yi = int(kw[i]), float(y[i])
                if w_ > m:
                    continue
                new = d.copy()
                np.minimum(new[:, w_:], d[:, :m + 1 - w_] + yi, out=new[:, w_:])
                if w_ <= kt_max:
                    np.minimum(new[w_:, w_:], d[:kt_max + 1 - w_, :m + 1 - w_] + rho_j * yi,
                               out=new[w_:, w_:])
                d = new
            big_k = np.arange(a, min(z, m + 1))
            for kt in rows:
                km = big_k - kt
                pt, pm = kt / m, km / m
                q = pt + pm - b
                ok = (km >= 1) & (e * q >= 1.0)
                if not ok.any():
                    continue
                km, q, pm, kk = km[ok], q[ok], pm[ok], big_k[ok]
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    bb = 1.0 / (e * pt * q + pm)
                    u = e * bb * q
                    low = np.maximum.reduce([
                        d[kt, kk] + (e * q - rho_j) * best[kt],
                        (e * q - 1.0) * best[kt] + best[kk],
                        e * q * best[kt] + best[km]])
                    val = pt * u * np.log(u) + pm * bb * np.log(bb) - bb * low
                val = val[np.isfinite(val)]
                if val.size:
                    ref[kt] = max(ref.get(kt, -math.inf), float(val.max()))
        # rows are bounded at their best k_M only: re-bound the whole row with the refined
        # value where the refinement reached it, else keep the looser bound
        out = []
        for val, kind, data in cands:
            if data[0] in ref and val > above:
                out.append((min(val, ref[data[0]]), kind, data))
            elif val > above:
                out.append((-math.inf if data[0] in rows else val, kind, data))
            else:
                out.append((val, kind, data))
        return out

    # -- columns ---------------------------------------------------------------------------
    def _column(self, kind: str, data: tuple[int, ...], y: np.ndarray,
                take: np.ndarray) -> np.ndarray | None:
        n, k, m = self.n, self.k, self.m
        w = np.zeros(n)
        if kind == "fp":
            f, j = data
            others = np.flatnonzero(np.arange(n) != f)
            size = j
            _, tk = _min_sums(k[others], y[others], size, keep=True)
            assert tk is not None
            s = others[_backtrack(k[others], tk, j)]
            w[s] = self.up
            w[f] = max(0.0, (1.0 - self.up * (j / m)) / self.p[f])
        elif kind == "two":
            (kt,) = data
            t = _backtrack(k, take, kt)
            u, c, _ = self._levels2(np.array([kt / m]))
            w[:] = c[0]
            w[t] = u[0]
        else:
            kt, km = data
            t = _backtrack(k, take, kt)
            tm = _backtrack(k, take, kt + km)
            if not np.isin(t, tm).all():
                return None  # the two minimisers are not nested: no column from here
            pt, pm = kt / m, km / m
            q = pt + pm - self.b
            bb = 1.0 / (self.e * pt * q + pm)
            w[tm] = bb
            w[t] = self.e * bb * q
        s = float(self.p @ w)
        return w / s if s > 0 else None

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns and an upper bound on ``max_{v in K_1} mu(v) - y . v``
        (``inf`` in rounds that skip the costly family, unless ``full``). A round runs to
        its end (``deadline`` and ``until`` are not consulted); its work is counted."""

        n = self.n
        meter = meter_of(self)
        meter.spend(DP_RATE * n * self.m)
        best, take = _min_sums(self.k, y, self.m, keep=True)
        assert take is not None
        cands: list[tuple[float, str, tuple[int, ...]]] = [(-float(y.sum()), "one", ())]
        cands += self._two_level(y, best)
        cands += self._fixed_prior(y, best, take, max(max(c[0] for c in cands), 0.0) + atol)
        self._calls += 1
        cheap = max(c[0] for c in cands)
        # the small-top family is the costly one and only matters for the bound: skip it
        # (no bound this round) while the other families still improve a lot
        if not full and cheap > 1e-4 * max(abs(float(y.sum())), 1e-12) and self._calls % 5:
            top = math.inf
        else:
            meter.spend(DP_RATE * self.steps(n, self.m, float(self.uset.radius)))
            small = self._small_top(best, max(cheap, 0.0) + atol)
            small = self._refine_small(y, best, small, max(cheap, 0.0) + atol)
            cands += small
            top = max(c[0] for c in cands)
        # sums of up to N duals and masses k / m instead of float sums: a margin far below
        # any requested gap keeps the bound on the safe side of rounding
        bound = top + 1e-12 * (1.0 + float(np.abs(y).sum()))
        cands.sort(key=lambda c: -c[0])
        cols = []
        for val, kind, data in cands[: max(want, 1)]:
            if val <= atol:
                break
            if kind in ("fp-relaxed", "small-bound"):
                continue  # a bound only, no column
            w = np.ones(n) if kind == "one" else self._column(kind, data, y, take)
            if w is not None:
                cols.append(w)
        return (*self.improving(cols, y, atol), bound)
