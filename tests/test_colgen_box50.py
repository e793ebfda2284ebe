"""The level-cell branch and bound that prices mutual information over a box at any N
(BoxLagrangeOracle): its bounds against an independent brute force (every three-level
assignment, the ends of its feasible segment found by a generic HiGHS LP over the box's
worst case written with its dual), its cell bound against a dense grid, and the designs
against the exact block-sum oracle."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from pmlkit.confidence import confidence_set
from pmlkit.design.colgen import (
    BoxLagrangeOracle,
    BoxOracle,
    column_generation,
    relative_gap,
)
from pmlkit.design.colgen import _boxlagrange as bl
from pmlkit.sets import Box
from pmlkit.utility import mutual_information_columns

pytestmark = pytest.mark.skipif(not BoxLagrangeOracle.available(), reason="needs numba")


def _xlogx(a: float) -> float:
    return a * math.log(a) if a > 0 else 0.0


def brute_pricing(lo, hi, p, eps, y) -> float:
    """max over K_1 of sum p w log w - y . w, independently: every assignment of the entries
    to (bottom, middle, top); on an assignment the points ``U 1_T + m 1_M`` of K_1 form a
    segment (``p . w = 1``; ``max w <= e^eps min_Q Q . w`` with the minimum written by LP
    duality: ``lo . w + s th - sum c mu``, ``mu >= th - w``, ``mu >= 0``), whose ends come
    from two HiGHS LPs; the objective is convex along it."""
    n = p.size
    e = math.exp(eps)
    c = hi - lo
    s = 1.0 - lo.sum()
    best = -math.inf
    for code in itertools.product((0, 1, 2), repeat=n):
        lev = np.array(code)
        top, mid = lev == 2, lev == 1
        if not (top.any() or mid.any()):
            continue
        # variables: U, m, th, mu_1..mu_n
        nv = 3 + n
        a_eq = np.zeros((1, nv))
        a_eq[0, 0], a_eq[0, 1] = p[top].sum(), p[mid].sum()
        rows, rhs = [], []

        worst = np.zeros(nv)  # -(lo . w + s th - c . mu)
        worst[0], worst[1] = -lo[top].sum(), -lo[mid].sum()
        worst[2] = -s
        worst[3:] = c
        for present, col in ((top.any(), 0), (mid.any(), 1)):
            if present:  # level <= e * worst
                r = e * worst
                r[col] += 1.0
                rows.append(r)
                rhs.append(0.0)
        for x in range(n):  # th - w_x - mu_x <= 0
            r = np.zeros(nv)
            r[2] = 1.0
            r[3 + x] = -1.0
            if top[x]:
                r[0] = -1.0
            elif mid[x]:
                r[1] = -1.0
            rows.append(r)
            rhs.append(0.0)
        r = np.zeros(nv)  # m <= U
        r[1], r[0] = 1.0, -1.0
        rows.append(r)
        rhs.append(0.0)
        bounds = [(0, None), (0, None), (None, None)] + [(0, None)] * n
        if not mid.any():
            bounds[1] = (0, 0)
        for sign in (1.0, -1.0):
            obj = np.zeros(nv)
            obj[0 if top.any() else 1] = sign
            res = linprog(obj, A_ub=np.array(rows), b_ub=np.array(rhs), A_eq=a_eq,
                          b_eq=[1.0], bounds=bounds, method="highs")
            if res.status != 0:
                continue
            u, m = res.x[0], res.x[1]
            w = np.where(top, u, np.where(mid, m, 0.0))
            g = sum(p[x] * _xlogx(w[x]) for x in range(n)) - float(y @ w)
            best = max(best, g)
    return best


_BRUTE: dict[tuple[bytes, bytes, bytes, float, bytes], float] = {}


def brute_pricing_once(lo, hi, p, eps, y) -> float:
    """:func:`brute_pricing`, computed once per distinct input in this process (the tests
    below that vary only a setting of the oracle share one problem: 1,458 HiGHS LPs at
    N = 6)."""
    key = (np.asarray(lo, float).tobytes(), np.asarray(hi, float).tobytes(),
           np.asarray(p, float).tobytes(), float(eps), np.asarray(y, float).tobytes())
    if key not in _BRUTE:
        _BRUTE[key] = brute_pricing(lo, hi, p, eps, y)
    return _BRUTE[key]


def _boxes(draw_counts, kind: int, n: int, rng: np.random.Generator):
    counts = np.asarray(draw_counts, dtype=np.float64)
    p = counts / counts.sum()
    if kind == 0:
        box = confidence_set(counts, 1e-3, confidence="auto").set
    elif kind == 1:  # lo = 0
        box = Box(np.zeros(n), np.minimum(1.0, p + rng.uniform(0.0, 0.3, n)))
    elif kind == 2:  # sum(hi) close to 1
        box = Box(p * 0.97, p + 1e-6)
    else:  # a single distribution
        box = Box(p, p)
    return p, box


def _duals(kind: int, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = p.size
    if kind == 0:
        return np.zeros(n)
    if kind == 1:
        return 0.7 * p
    if kind == 2:
        return p * rng.normal(0.0, 1.0, n)
    if kind == 3:
        return 50.0 * rng.normal(0.0, 1.0, n)
    return p * np.log(rng.uniform(0.5, 3.0, n)) + rng.normal(0.0, 1e-3, n)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=st.lists(st.integers(1, 300), min_size=3, max_size=4),
       box_kind=st.integers(0, 3), dual_kind=st.integers(0, 4),
       eps=st.sampled_from([0.01, 0.3, 1.0, 2.5, 5.0]), seed=st.integers(0, 2**16),
       nodes=st.sampled_from([3, 50, 2000]))
def test_bound_is_valid_against_brute_force(counts, box_kind, dual_kind, eps, seed, nodes):
    rng = np.random.default_rng(seed)
    p, box = _boxes(counts, box_kind, len(counts), rng)
    y = _duals(dual_kind, p, rng)
    exact = brute_pricing(np.asarray(box.lower), np.asarray(box.upper), p, eps, y)
    oracle = BoxLagrangeOracle(box, p, eps)
    # stopped after any number of nodes, from any threshold: never below the maximum
    for thr in (exact - 1.0, exact - 1e-3):
        bound, found = oracle.search(y, thr=thr, deadline=math.inf, max_nodes=nodes)
        assert bound >= exact - 1e-9 * (1 + abs(exact))
        # the candidates are points of K_1: never above the maximum
        assert all(v <= exact + 1e-9 * (1 + abs(exact)) for v, _ in found)
    # and the exact candidates agree with the brute force
    rough = BoxOracle(box, p, eps).price(y, want=1, deadline=math.inf, atol=-math.inf,
                                         full=True)[2]
    assert rough == pytest.approx(exact, rel=1e-7, abs=1e-7)


def test_search_stopped_anywhere_stays_valid():
    """Bounds of searches stopped after more and more nodes: each at least the maximum,
    and they never rise (a child keeps its parent's bound)."""
    counts = np.array([120.0, 80.0, 50.0, 30.0, 12.0])
    p = counts / counts.sum()
    box = confidence_set(counts, 1e-3, confidence="auto").set
    y = 0.9 * p
    exact = brute_pricing(np.asarray(box.lower), np.asarray(box.upper), p, math.log(2), y)
    oracle = BoxLagrangeOracle(box, p, math.log(2))
    bounds = [oracle.search(y, thr=exact + 1e-3, deadline=math.inf, max_nodes=k)[0]
              for k in (1, 10, 100, 1000)]
    assert all(b >= exact for b in bounds)
    assert all(b2 <= b1 + 1e-12 for b1, b2 in itertools.pairwise(bounds))


@pytest.mark.parametrize("cap", [1, 5, 40])
def test_a_search_without_deadline_stops_at_its_memory_cap(monkeypatch, cap):
    """With no deadline and no node limit, a search whose bound cannot close stops once
    it holds MAX_OPEN open nodes or candidates, and its bound is still at least the
    brute-force maximum (a design with max_seconds=None grew to 15 GB before the cap)."""
    counts = np.array([300.0, 160.0, 90.0, 40.0, 20.0, 9.0])
    p = counts / counts.sum()
    box = confidence_set(counts, 1e-3, confidence="auto").set
    y = 0.9 * p
    eps = math.log(2)
    exact = brute_pricing_once(np.asarray(box.lower), np.asarray(box.upper), p, eps, y)
    oracle = BoxLagrangeOracle(box, p, eps)
    monkeypatch.setattr(BoxLagrangeOracle, "MAX_OPEN", cap)
    bound, _ = oracle.search(y, thr=exact - 1.0, deadline=math.inf)
    assert bound >= exact
    # it stopped because of the cap, not because it finished: nodes are left open (or,
    # with the smallest cap, the distinct candidates reached it first)
    assert oracle.stats["open"] >= 1 or cap == 1
    assert oracle.stats["open"] <= cap + 8  # one expansion adds at most a few children


def _cell_vertices(u1, u2, m1, m2):
    """The vertices of ``{u1 <= U <= u2, m1 <= m <= m2, m <= U}``, by intersecting its
    five boundary lines pairwise (independent of the kernel's case analysis)."""
    lines = [(1.0, 0.0, u1), (1.0, 0.0, u2), (0.0, 1.0, m1), (0.0, 1.0, m2), (1.0, -1.0, 0.0)]
    out = []
    for (a1, b1, c1), (a2, b2, c2) in itertools.combinations(lines, 2):
        det = a1 * b2 - a2 * b1
        if abs(det) < 1e-15:
            continue
        u, m = (c1 * b2 - c2 * b1) / det, (a1 * c2 - a2 * c1) / det
        if u1 - 1e-12 <= u <= u2 + 1e-12 and m1 - 1e-12 <= m <= m2 + 1e-12 \
                and m <= u + 1e-12:
            out.append((u, m))
    return out


def _node_problem(seed: int, n: int = 4):
    """A prior, a box around it, duals, ``e^eps`` and the slack ``sum(hi) - 1``."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    lo = p * rng.uniform(0.6, 1.0, n)
    hi = np.minimum(1.0, p * rng.uniform(1.0, 1.5, n))
    y = p * rng.normal(0, 1, n)
    return p, lo, hi, y, math.exp(0.8), float(hi.sum() - 1.0)


def _grid_lagrangians(problem, mode, cell, allow, lam, nu):
    """``(levels, Lagrangian)`` of every assignment allowed by ``allow`` at every column of
    the cell (a dense grid of ``(U, m)`` with ``m <= U`` and the region's vertices), the
    privacy constraint of the mode written out directly."""
    p, lo, hi, y, e, sl = problem
    u1, u2, m1, m2 = cell
    points = [(u, m) for u in np.linspace(u1, u2, 13) for m in np.linspace(m1, m2, 13)
              if m <= u]
    points += _cell_vertices(u1, u2, m1, m2)
    choices = [[lv for lv, bit in ((0, 1), (1, 2), (2, 4)) if allow[x] & bit]
               for x in range(p.size)]
    for code in itertools.product(*choices):
        levels = np.array(code)
        top, mid = levels == 2, levels == 1
        for u, m in points:
            w = np.where(top, u, np.where(mid, m, 0.0))
            if mode == 0:
                cons = m * lo[top | mid].sum() + (u - m) * lo[top].sum() - u / e
            elif mode == 1:
                cons = (m * (hi[top | mid].sum() - sl)
                        + (u - m) * (hi[top].sum() - sl) - u / e)
            else:
                cons = m * (hi[top | mid].sum() - sl) + (u - m) * lo[top].sum() - u / e
            yield levels, (sum(p[x] * _xlogx(w[x]) for x in range(p.size)) - y @ w
                           + lam * (1.0 - p @ w) + nu * cons)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("cell", [(1.2, 1.7, 0.3, 0.9), (1.2, 1.7, 1.0, 1.6),
                                  (1.2, 1.7, 1.3, 1.9), (1.2, 1.2, 1.1, 1.1)])
def test_cell_bound_against_dense_grid(mode, cell):
    """The kernel's Lagrangian at any multipliers is at least the Lagrangian of every
    assignment allowed by the node at every column of the cell (a dense grid of
    ``(U, m)`` with ``m <= U``, and the vertices of that region), with the privacy
    constraint of the node's mode written out directly, and it is attained there: a cell
    crossing the diagonal ``m = U`` is not bounded over the rectangle's part above it."""
    problem = _node_problem(mode)
    p, lo, hi, y, e, sl = problem
    n = p.size
    u1, u2, m1, m2 = cell
    allow = np.array([7, 2, 5, 7], dtype=np.int8)
    a = np.empty((bl.NCORNERS, n, 3))
    pw, k = np.empty_like(a), np.empty_like(a)
    ok = np.empty((n, 3), dtype=bool)
    cst = np.empty(bl.NCORNERS)
    bl._PY.get("pieces", bl.pieces)(p, y, lo, hi, e, sl, mode, u1, u2, m1, m2, allow, a,
                                    pw, k, ok, cst)
    lev, out = np.empty(n, dtype=np.int8), np.empty(3)
    for lam, nu in ((0.0, 0.0), (0.3, 0.5), (-1.2, 2.0), (2.0, 0.1)):
        bl._PY.get("lagrangian", bl.lagrangian)(a, pw, k, ok, cst, lam, nu, lev, out,
                                                True)
        worst = max(v for _, v in _grid_lagrangians(problem, mode, cell, allow, lam, nu))
        assert out[0] >= worst - 1e-12
        # and it is attained at a vertex: the bound is not loose by more than rounding
        assert out[0] <= worst + 1e-9


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("cell", [(1.2, 1.7, 0.3, 0.9), (1.2, 1.7, 1.3, 1.9)])
def test_fixed_levels_against_dense_grid(mode, cell):
    """Reduced-cost fixing removes level ``j`` of entry ``x`` exactly when the Lagrangian
    at the given multipliers, over every assignment allowed by the node with ``x`` at
    ``j`` and every column of the cell (dense grid plus the region's vertices), stays at
    most the threshold: removed levels hold no column above it (the Lagrangian bounds the
    objective at every point of ``K_1``), kept ones have one whose Lagrangian exceeds it."""
    problem = _node_problem(10 + mode)
    p, lo, hi, y, e, sl = problem
    n = p.size
    u1, u2, m1, m2 = cell
    allow = np.array([7, 6, 5, 7], dtype=np.int8)
    removed_any = kept_any = False
    for lam, nu in ((0.3, 0.5), (-1.2, 2.0), (2.0, 0.1)):
        forced: dict[tuple[int, int], float] = {}
        for levels, val in _grid_lagrangians(problem, mode, cell, allow, lam, nu):
            for x in range(n):
                key = (x, int(levels[x]))
                forced[key] = max(forced.get(key, -math.inf), val)
        vals = sorted(forced.values())
        # thresholds at a forced value and just below one: a level is kept by a margin
        # of 1e-7
        for thr in (vals[len(vals) // 3], vals[len(vals) // 2] - 1e-7,
                    vals[2 * len(vals) // 3] - 1e-7):
            out, cv = np.empty(n, dtype=np.int8), np.empty(bl.NCORNERS)
            removed = bl._PY.get("fix_levels", bl.fix_levels)(
                p, y, lo, hi, e, sl, mode, u1, u2, m1, m2, allow, lam, nu, thr, out, cv)
            count = 0
            for (x, j), v in forced.items():
                gone = not (out[x] >> j) & 1
                count += gone
                if gone:
                    assert v <= thr + 1e-9
                    removed_any = True
                elif bl.POPCOUNT[allow[x]] > 1:
                    assert v > thr - 1e-9
                    kept_any = True
            assert removed == count
            assert all((out[x] & ~allow[x]) == 0 for x in range(n))
    assert removed_any and kept_any


def _exact_and_level_cells(counts, eps, secs):
    """The exact design (streamed block sums) and the level-cell one within ``secs``."""
    import time

    p = counts / counts.sum()
    box = confidence_set(counts, 1e-6, confidence="auto").set

    def mu(v):
        return mutual_information_columns(v, p)

    exact = column_generation(BoxOracle(box, p, eps), p, mu, start=None, gap=1e-12,
                              deadline=math.inf)
    oracle = BoxLagrangeOracle(box, p, eps)
    assert oracle.stabilize  # its searches price at smoothed duals
    res = column_generation(oracle, p, mu, start=None, gap=1e-9,
                            deadline=time.monotonic() + secs)
    return exact, res


@pytest.mark.parametrize("n,eps", [(5, 0.1), (8, 2.0)])
def test_design_against_exact_oracle(n, eps):
    exact, res = _exact_and_level_cells(np.round(1000 * 0.85 ** np.arange(n)), eps, 3.0)
    # a point of the LP (never above the optimum), and a certified gap that is never below
    # the true one
    assert res.value <= exact.value * (1 + 1e-9)
    assert res.value >= 0.95 * exact.value
    # the certified gap is never below the true one (and the bound never below the optimum)
    assert res.upper_bound >= exact.value * (1 - 1e-12)
    assert res.gap >= relative_gap(exact.upper_bound, res.value) - 1e-9


def test_pipeline_uses_level_cells_beyond_the_tree():
    import warnings

    from pmlkit.design import optimal_mechanism_for_set
    from pmlkit.errors import PMLWarning

    n = 30
    counts = np.maximum(np.round(10_000 * 0.85 ** np.arange(n) / 6.6), 1.0)
    p = counts / counts.sum()
    box = confidence_set(counts, 1e-6, confidence="auto").set
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PMLWarning)
        mech = optimal_mechanism_for_set(box, math.log(2), prior=p, max_work=3.0)
    assert BoxLagrangeOracle.name in mech.parameters["method"] or \
        BoxLagrangeOracle.name in str(mech.parameters)
    g = mech.parameters["optimality_gap"]
    assert g is not None and 0 <= g < 0.5


# -- dual smoothing: the search rounds price at a mix of the master's duals and the mean of
# the recent ones; every bound stays valid, whatever duals it was computed at


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(4, 7), eps=st.sampled_from([0.5, math.log(2), 1.3, 2.0]),
       ratio=st.floats(0.5, 0.95), secs=st.sampled_from([0.02, 0.1, 0.4]))
def test_smoothed_designs_bound_the_exact_optimum(n, eps, ratio, secs):
    counts = np.maximum(np.round(2000 * ratio ** np.arange(n)), 1.0)
    exact, res = _exact_and_level_cells(counts, eps, secs)
    assert res.value <= exact.value * (1 + 1e-9) + 1e-12
    assert res.upper_bound >= exact.value * (1 - 1e-12) - 1e-12
    assert res.gap >= relative_gap(exact.upper_bound, res.value) - 1e-9


def test_search_rounds_price_at_smoothed_duals(monkeypatch):
    """A spy on the master's duals and on the duals each search is priced at: the search
    rounds use ``SMOOTHING * mean(last duals) + (1 - SMOOTHING) * y`` (computed here from
    the recorded duals), and the final bound the midpoint of the best round's duals and
    the master's last ones."""
    import time

    from pmlkit.design.colgen import _master

    n, eps = 30, math.log(2)
    counts = np.maximum(np.round(10_000 * 0.85 ** np.arange(n) / 6.6), 1.0)
    p = counts / counts.sum()
    box = confidence_set(counts, 1e-6, confidence="auto").set
    duals: list[np.ndarray] = []
    priced: list[tuple[np.ndarray, bool, int]] = []
    solve = _master._Master.solve

    def spy_solve(self):
        out = solve(self)
        duals.append(out[1].copy())
        return out

    oracle = BoxLagrangeOracle(box, p, eps)
    price = oracle.price

    def spy_price(y, **kw):
        out = price(y, **kw)
        priced.append((np.array(y, copy=True), bool(kw.get("full", False)), len(duals),
                       float(np.sum(y)) + max(0.0, out[2])))
        return out

    monkeypatch.setattr(_master._Master, "solve", spy_solve)
    monkeypatch.setattr(oracle, "price", spy_price)
    column_generation(oracle, p, lambda v: mutual_information_columns(v, p), start=None,
                      gap=1e-9, deadline=time.monotonic() + 4.0)
    k, a = _master.SMOOTHING_ROUNDS, _master.SMOOTHING
    rounds = [(y, seen) for y, full, seen, _ in priced if not full]
    assert rounds
    smoothed = 0
    for y, seen in rounds:
        last = duals[seen - 1]
        center = np.mean(np.stack(duals[max(0, seen - k):seen]), axis=0)
        if np.allclose(y, a * center + (1 - a) * last, rtol=0, atol=1e-12):
            smoothed += 1
        else:  # the fallback after a mispricing: the master's own duals
            assert np.array_equal(y, last)
    assert smoothed >= 1
    finals = [(i, y, seen) for i, (y, full, seen, _) in enumerate(priced) if full]
    assert finals
    # each final search runs halfway between the duals where a search's bound was the
    # best so far and the master's last duals (the mean of the last duals when no search
    # gave a finite bound); a final search that ends early is followed by another, at the
    # master's duals when the one before added no column
    for i, y, seen in finals:
        if i > 0 and priced[i - 1][1] and priced[i - 1][2] == seen:
            assert np.array_equal(y, duals[seen - 1])
            continue
        bounded = [(b, yr) for yr, _, _, b in priced[:i] if math.isfinite(b)]
        if bounded:
            best = min(b for b, _ in bounded)
            assert any(np.allclose(y, 0.5 * (yr + duals[seen - 1]), rtol=0, atol=1e-15)
                       for b, yr in bounded if b == best)
        else:
            center = np.mean(np.stack(duals[max(0, seen - k):seen]), axis=0)
            assert np.allclose(y, center, rtol=0, atol=1e-12)


def test_local_search_keeps_the_local_maxima_it_ends_at():
    """``improve`` returns one assignment per seed: a point of K_1 whose value (checked
    against the column's mutual information minus ``y . v``) is at least its seed's and
    that no single move to another level raises, nor a move of two of the
    ``PAIR_ENTRIES`` heaviest entries (enumerated here independently)."""
    n, eps = 12, math.log(2)
    counts = np.maximum(np.round(3000 * 0.8 ** np.arange(n)), 1.0)
    p = counts / counts.sum()
    box = confidence_set(counts, 1e-6, confidence="auto").set
    oracle = BoxLagrangeOracle(box, p, eps)
    rng = np.random.default_rng(3)
    y = 0.6 * p + rng.normal(0.0, 0.02, n) * p
    seeds = [rng.integers(0, 3, n).astype(np.int8) for _ in range(40)]
    ends = oracle.improve(seeds, y, -math.inf)
    assert 0 < len(ends) <= len(seeds)
    start = oracle._evaluate(np.stack(seeds), y)
    assert max(v for v, _ in ends) >= float(np.max(start))
    for v, lev in ends:
        w = oracle._column(lev)[:, None]
        assert float(w[:, 0].max()) <= oracle.e * float(box.min_linear(w)[0]) * (1 + 1e-9)
        assert v == pytest.approx(float(mutual_information_columns(w, p)[0] - y @ w[:, 0]),
                                  rel=1e-9, abs=1e-12)
        moves = np.repeat(lev[None, :], 2 * n, axis=0)
        moves[np.arange(n), np.arange(n)] = (lev + 1) % 3
        moves[n + np.arange(n), np.arange(n)] = (lev + 2) % 3
        assert float(np.max(oracle._evaluate(moves, y))) <= v + 1e-15
        # nor any move of two of the heaviest entries to other levels
        heavy = np.argsort(-p, kind="stable")[: oracle.PAIR_ENTRIES]
        pairs = []
        for a, b in itertools.combinations(heavy, 2):
            for la, lb in itertools.product(range(3), repeat=2):
                if la != lev[a] and lb != lev[b]:
                    m = lev.copy()
                    m[a], m[b] = la, lb
                    pairs.append(m)
        assert float(np.max(oracle._evaluate(np.stack(pairs), y))) <= v + 1e-15


@pytest.mark.parametrize("share", [0.0, 0.5, math.inf])
def test_entry_branching_in_wide_cells_keeps_the_search_exact(monkeypatch, share):
    """Whatever share of a node's excess makes the search branch an entry before its cell
    is at the smallest width (0: always when the relaxation splits one; inf: never), a
    search run to the end bounds the brute-force maximum and meets it. (``inf``, which
    no designer uses, halves every cell down to the smallest width ``TAU`` before it
    branches an entry: it runs with ``TAU`` ten times the designers' 0.003, the same path
    with a tenth of the halvings per side. At 0.003 it took 20 s at the first eps and
    duals and minutes at the second; at 0.03, 0.6 s and 3 s, so both are checked.)"""
    counts = np.array([300.0, 180.0, 90.0, 40.0, 12.0, 3.0])
    p = counts / counts.sum()
    box = confidence_set(counts, 1e-4, confidence="auto").set
    monkeypatch.setattr(BoxLagrangeOracle, "POINT_SHARE", share)
    if math.isinf(share):
        monkeypatch.setattr(BoxLagrangeOracle, "TAU", 10 * BoxLagrangeOracle.TAU)
    cases = ((math.log(2), 0.8 * p), (2.0, p * np.log(np.linspace(1.5, 3.0, 6))))
    for eps, y in cases:
        exact = brute_pricing_once(np.asarray(box.lower), np.asarray(box.upper), p, eps, y)
        oracle = BoxLagrangeOracle(box, p, eps)
        bound, found = oracle.search(y, thr=-1.0, deadline=math.inf)
        assert bound >= exact
        assert bound == pytest.approx(exact, abs=1e-8)
        assert max(v for v, _ in found) == pytest.approx(exact, rel=1e-9, abs=1e-12)


def test_local_search_starts_from_the_masters_active_columns():
    """``anchor`` reads each column's levels back (a round trip through ``_column`` for
    three-level, one-level and top-only assignments), and a round whose search is stopped
    before it starts still returns the column of an anchored assignment that no single
    move improves (brute force over all 3^6 assignments picks the best one); without the
    anchor the same round returns nothing."""
    counts = np.array([300.0, 180.0, 90.0, 40.0, 12.0, 3.0])
    p = counts / counts.sum()
    box = confidence_set(counts, 1e-4, confidence="auto").set
    eps = math.log(2)
    oracle = BoxLagrangeOracle(box, p, eps)
    codes = np.array(list(itertools.product(range(3), repeat=p.size)), dtype=np.int8)
    y = 0.3 * p
    vals = oracle._evaluate(codes, y)
    feasible = codes[np.isfinite(vals)]
    for lev in feasible[:: max(1, len(feasible) // 60)]:
        oracle.anchor(oracle._column(lev)[:, None])
        back = oracle._anchors[0]
        # a column with one positive level is read as one level (middle): the same column
        assert np.allclose(oracle._column(back), oracle._column(lev), rtol=1e-12, atol=0)
    best = codes[int(np.argmax(vals))]
    assert float(np.max(vals)) > 0
    past = 0.0  # a deadline already passed: the search returns at once
    oracle.anchor(np.zeros((p.size, 0)))
    cols, _, _ = oracle.price(y, want=4, deadline=past, atol=1e-12)
    assert cols.shape[1] == 0
    oracle.anchor(oracle._column(best)[:, None])
    cols, cvals, _ = oracle.price(y, want=4, deadline=past, atol=1e-12)
    assert any(np.allclose(c, oracle._column(best), rtol=1e-12, atol=0) for c in cols.T)
    assert float(np.max(cvals - y @ cols)) == pytest.approx(float(np.max(vals)), rel=1e-9)


def test_column_generation_anchors_the_active_columns(monkeypatch):
    """Every round hands the oracle the master's columns with positive weight: points of
    ``K_1`` (``p . v = 1``) that are columns of the master."""
    import time

    from pmlkit.design.colgen import _master

    counts = np.maximum(np.round(3000 * 0.8 ** np.arange(10)), 1.0)
    p = counts / counts.sum()
    box = confidence_set(counts, 1e-6, confidence="auto").set
    oracle = BoxLagrangeOracle(box, p, math.log(2))
    seen: list[np.ndarray] = []
    masters: list[_master._Master] = []
    init = _master._Master.__init__

    def spy_init(self, *a, **kw):
        init(self, *a, **kw)
        masters.append(self)

    monkeypatch.setattr(_master._Master, "__init__", spy_init)
    monkeypatch.setattr(oracle, "anchor", lambda cols: seen.append(np.array(cols)))
    res = column_generation(oracle, p, lambda v: mutual_information_columns(v, p),
                            start=None, gap=1e-9, deadline=time.monotonic() + 2.0)
    assert len(seen) == res.iterations
    assert all(c.shape[1] >= 1 for c in seen)
    assert all(np.allclose(p @ c, 1.0, rtol=1e-9) for c in seen)
    keys = {np.round(masters[0].cols[:, j], 10).tobytes()
            for j in range(masters[0].cols.shape[1])}
    assert all(np.round(c, 10).tobytes() in keys for c in seen[-1].T)
