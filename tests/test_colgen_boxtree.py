"""Box pricing by branch and bound over pairs of half-assignment blocks (``BoxTreeOracle``).

Checked against independent computations: the vertices of ``K_1`` enumerated region by
region with a from-scratch greedy worst case (``test_colgen_box.brute_vertices``, which uses
nothing of the oracles' level-set formula), the block-pair bound against the exact values
of every pair of its blocks, the streaming oracle (every pair evaluated) at N = 10-13, and
the design against one HiGHS LP over every candidate ray.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from oracles import full_lp_optimum, mi_cols
from pmlkit.design.colgen import BoxOracle, BoxTreeOracle, column_generation
from pmlkit.design.subconvex import three_level_rays
from pmlkit.sets import Box
from test_colgen_box import box_cases, brute_vertices, g_values

if not BoxTreeOracle.available():  # pragma: no cover - PMLKIT_NO_NUMBA set
    pytest.skip("numba disabled", allow_module_level=True)


def margin(y: np.ndarray) -> float:
    return 1e-10 * (1 + float(np.abs(y).sum()))


def cases(max_n: int = 6) -> st.SearchStrategy:
    """The boxes of test_colgen_box, with sum(hi) just above 1 as well, and duals close to
    c p half the time."""
    return box_cases(max_n, ("tight", "zero-lo", "one-hi", "hi-active", "wide"),
                     near_cp=True)


@settings(max_examples=40, deadline=None)
@given(cases())
def test_bound_equals_brute_force_vertex_maximum(case):
    lo, hi, p, eps, y = case
    box = Box(lo, hi)
    oracle = BoxTreeOracle(box, p, eps)
    v = brute_vertices(lo, hi, p, oracle.e)
    brute = float(g_values(v, p, y).max())
    tol = margin(y) + 1e-9 * (1 + abs(brute))
    for atol in (-math.inf, 0.0, brute - 1e-3):
        cols, vals, bound = oracle.price(y, want=5, deadline=math.inf, atol=atol, full=True)
        assert bound >= brute  # valid
        assert bound <= max(brute, atol) + tol  # exact above the threshold
        if cols.shape[1]:
            assert np.allclose(p @ cols, 1.0)
            assert (cols.max(axis=0) <= oracle.e * box.min_linear(cols) * (1 + 1e-9)).all()
            rc = vals - y @ cols
            assert rc.max() == pytest.approx(brute, abs=1e-9 * (1 + abs(brute)))
    # a search that stops at its first improving column (with the pairs kept a little
    # below the tolerance) returns a valid bound as well
    _, _, bound = BoxTreeOracle(box, p, eps).price(y, want=1, deadline=math.inf, atol=0.0)
    assert bound >= brute
    # a search stopped at once still returns a valid bound
    oracle.stop_at, oracle.CHUNK = -math.inf, 1
    _, _, bound = oracle.price(y, want=5, deadline=-math.inf, atol=-math.inf, full=True)
    assert bound >= brute


def test_bound_at_the_final_duals_of_a_design():
    # at the end of column generation every basic column prices at 0: the hardest case
    rng = np.random.default_rng(5)
    n = 6
    counts = np.maximum(np.round(2000 * 0.7 ** np.arange(n)), 1.0)
    p = counts / counts.sum()
    lo, hi = np.clip(p - 0.03, 0, 1), np.clip(p + rng.uniform(0.005, 0.03, n), 0, 1)
    box = Box(lo, hi)
    for eps in (0.3, math.log(2), 2.0):
        ref = BoxOracle(box, p, eps)
        column_generation(ref, p, lambda v: mi_cols(v, p), start=None, gap=1e-10,
                          deadline=math.inf)
        y = ref._last_y
        brute = float(g_values(brute_vertices(lo, hi, p, ref.e), p, y).max())
        assert abs(brute) < 1e-8  # the basic columns
        for atol in (-math.inf, 1e-9):
            _, _, bound = BoxTreeOracle(box, p, eps).price(y, want=0, deadline=math.inf,
                                                           atol=atol, full=True)
            assert brute <= bound <= max(brute, atol) + margin(y) + 1e-12


@settings(max_examples=30, deadline=None)
@given(cases(max_n=9), st.integers(0, 2**32 - 1), st.sampled_from([math.inf, 0.0, -0.5]))
def test_block_pair_bound_dominates_every_pair(case, seed, thr):
    # the interval bound of two arbitrary sets of half-assignments (not only tree nodes)
    from pmlkit.design.colgen import _boxtree as bt

    lo, hi, p, eps, y = case
    oracle = BoxTreeOracle(Box(lo, hi), p, eps)
    c = float(p @ y / (p @ p))
    ta, tb = oracle._trees(y, c)
    fa, fb = ta[0], tb[0]
    rng = np.random.default_rng(seed)
    k = oracle.kernels
    buf = np.empty((4, 16))
    for _ in range(20):
        ia = rng.choice(len(fa), size=rng.integers(1, min(len(fa), 12) + 1), replace=False)
        ib = rng.choice(len(fb), size=rng.integers(1, min(len(fb), 12) + 1), replace=False)
        blo = fa[ia].min(axis=0) + fb[ib].min(axis=0)
        bhi = fa[ia].max(axis=0) + fb[ib].max(axis=0)
        bound = k["pair_bound"](blo, bhi, oracle.e, oracle.slack, float(p.size), oracle.pmin,
                                c, buf, thr)
        exact = max(k["pair_value"](fa[r], fb[s], oracle.e, oracle.slack, float(p.size))
                    for r in ia for s in ib)
        assert bound >= exact - 1e-12 * (1 + abs(exact))
    # the compiled and the plain Python functions agree
    r, s = 0, len(fb) - 1
    assert bt._PY["pair_value"](fa[r], fb[s], oracle.e, oracle.slack, float(p.size)) \
        == k["pair_value"](fa[r], fb[s], oracle.e, oracle.slack, float(p.size))


def _geometric_box(n: int, eps: float) -> tuple[Box, np.ndarray]:
    from pmlkit.confidence import confidence_set

    counts = np.maximum(np.round(10_000 * 0.85 ** np.arange(n) / (0.85 ** np.arange(n)).sum()),
                        1.0)
    return confidence_set(counts, 1e-6, confidence="auto").set, counts / counts.sum()


@pytest.mark.parametrize("eps", [0.1, math.log(2), 2.0])
def test_equals_the_streaming_oracle_at_final_duals(eps):
    n = 10
    box, p = _geometric_box(n, eps)
    assert isinstance(box, Box)
    ref = BoxOracle(box, p, eps)
    column_generation(ref, p, lambda v: mi_cols(v, p), start=None, gap=1e-10,
                      deadline=math.inf)
    y = ref._last_y
    _, _, want = ref.price(y, want=0, deadline=math.inf, atol=0.0, full=True)
    _, _, got = BoxTreeOracle(box, p, eps).price(y, want=0, deadline=math.inf,
                                                 atol=-math.inf, full=True)
    assert got == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("n, seed", [(12, 0), (13, 1)])
def test_equals_the_streaming_oracle_on_random_duals(n, seed):
    box, p = _geometric_box(n, math.log(2))
    rng = np.random.default_rng(seed)
    y = p * rng.uniform(0.4, 0.8) + rng.normal(0, 0.01, n)
    ref = BoxOracle(box, p, math.log(2))
    tree = BoxTreeOracle(box, p, math.log(2))
    _, _, want = ref.price(y, want=0, deadline=math.inf, atol=0.0, full=True)
    cols, vals, got = tree.price(y, want=5, deadline=math.inf, atol=-math.inf, full=True)
    assert got == pytest.approx(want, abs=1e-9)
    assert (vals - y @ cols).max() == pytest.approx(want, abs=1e-8)


@pytest.mark.parametrize("n, eps, seed", [(6, 0.05, 0), (7, math.log(2), 1), (8, 2.0, 2)])
def test_design_equals_full_enumeration_lp(n, eps, seed):
    rng = np.random.default_rng(seed)
    counts = np.maximum(np.round(1000 * rng.dirichlet(np.ones(n))), 1)
    p = counts / counts.sum()
    width = rng.uniform(0.01, 0.08, n)
    box = Box(np.clip(p - width, 0, 1), np.clip(p + width, 0, 1))
    full = full_lp_optimum(three_level_rays(box, eps, q0=p), p)
    res = column_generation(BoxTreeOracle(box, p, eps), p, lambda v: mi_cols(v, p),
                            start=None, gap=1e-10, deadline=math.inf)
    assert res.value == pytest.approx(full, rel=1e-9, abs=1e-12)
    assert res.upper_bound >= full - 1e-12
    assert res.gap <= 1e-6


def test_pipeline_uses_the_tree_search_beyond_the_streaming_limit(monkeypatch):
    # the limits lowered so that an 8-category box takes the path of N = 16..24
    import pmlkit.design.colgen as colgen
    from pmlkit.design import optimal_mechanism_for_set
    from pmlkit.utility import mutual_information

    monkeypatch.setattr(colgen, "MAX_ENUMERATED", 10)
    monkeypatch.setattr(colgen, "MAX_THREE_LEVEL_N", 3)
    monkeypatch.setattr(colgen, "BOX_MAX_N", 6)
    n, eps = 8, math.log(2)
    box, p = _geometric_box(n, eps)
    mech = optimal_mechanism_for_set(box, eps, prior=p, max_seconds=60)
    assert BoxTreeOracle.name in mech.parameters["method"]
    assert mech.parameters["optimality_gap"] <= 1e-6
    full = full_lp_optimum(three_level_rays(box, eps, q0=p), p)
    assert mutual_information(np.asarray(mech.matrix), p) == pytest.approx(full, rel=1e-7)


@pytest.mark.parametrize("eps,method", [
    (math.log(2), "(level-cell branch and bound (box) pricing"),
    (0.1, "(level-cell branch and bound (box) pricing"),
    (0.02, "(level-cell branch and bound (box) pricing"),
    (0.01, "(branch and bound pricing"),
])
def test_pipeline_without_time_for_the_tree(monkeypatch, eps, method):
    # the tree search finishes only with enough time: below it, the level-cell branch and
    # bound from eps = 0.02 on (with numba), the spatial one for smaller eps
    import pmlkit.design.colgen as colgen

    if "level-cell" in method and not colgen.BoxLagrangeOracle.available():
        method = "(branch and bound pricing"
    from pmlkit.design import optimal_mechanism_for_set

    monkeypatch.setattr(colgen, "MAX_ENUMERATED", 10)
    monkeypatch.setattr(colgen, "MAX_THREE_LEVEL_N", 3)
    monkeypatch.setattr(colgen, "BOX_MAX_N", 6)
    monkeypatch.setattr(colgen.BoxTreeOracle, "seconds", staticmethod(lambda n: 1e9))
    box, p = _geometric_box(8, eps)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the gap reached in 2 s, if any
        mech = optimal_mechanism_for_set(box, eps, prior=p, max_seconds=2)
    assert method in mech.parameters["method"]


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 8), st.integers(0, 2**32 - 1))
def test_objective_is_convex_along_the_segment_of_level_ratios(n, seed):
    # the bound's lemma: for fixed blocks T, M the column (rho 1_T + 1_M) / P moves on a
    # segment (affine in t = rho p(T) / P), so G is at most its larger value at the ends
    # of any range of rho, the top-only column 1_T / p(T) being the end of rho -> inf;
    # checked with the objective computed from the columns themselves
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    y = p * rng.uniform(0.2, 1.0) + rng.normal(0, 0.05, n)
    digits = rng.integers(0, 3, n)
    digits[0], digits[1] = 2, 1  # T and M not empty
    top, mid = digits == 2, digits == 1

    def g(rho: float) -> float:
        w = np.where(top, rho, np.where(mid, 1.0, 0.0))
        w = w / (p @ w)
        return float(g_values(w[:, None], p, y)[0])

    g_top = float(g_values((top / p[top].sum())[:, None], p, y)[0])
    rhos = np.sort(np.exp(rng.uniform(0, 8, 12)))
    vals = np.array([g(r) for r in rhos])
    for i in range(len(rhos)):
        for k in range(i + 2, len(rhos)):
            inner = vals[i + 1:k].max()
            assert inner <= max(vals[i], vals[k]) + 1e-9 * (1 + abs(inner))
        assert vals[i:].max() <= max(vals[i], g_top) + 1e-9 * (1 + abs(vals[i:].max()))


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 9.0), st.floats(0.01, 0.5), st.floats(0.0, 0.3),
       st.floats(0.01, 0.5), st.floats(0.0, 0.3), st.floats(-0.3, 0.3),
       st.floats(-0.3, 0.3))
def test_fixed_ratio_bound_is_the_maximum_over_the_ranges(log_rho, pt, dpt, ps, dps, zt,
                                                          zm):
    # at a fixed ratio the three-level objective (N / P - log P) over the box of (pT, pS),
    # against a dense grid refined by a bounded local optimiser
    from scipy.optimize import minimize

    from pmlkit.design.colgen import _boxtree as bt

    rho = math.exp(log_rho)
    pt_lo, pt_hi, ps_lo, ps_hi = pt, pt + dpt, pt + ps, pt + ps + dps

    def f(x: np.ndarray) -> float:
        a, s = x
        big_p = (rho - 1) * a + s
        return (rho * math.log(rho) * a - rho * zt - zm) / big_p - math.log(big_p)

    grid = [(a, s) for a in np.linspace(pt_lo, pt_hi, 40) for s in np.linspace(ps_lo, ps_hi, 40)]
    x0 = max(grid, key=lambda x: f(np.array(x)))
    res = minimize(lambda x: -f(x), np.array(x0), bounds=[(pt_lo, pt_hi), (ps_lo, ps_hi)],
                   method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-12})
    brute = max(f(np.array(x0)), -float(res.fun))
    bt.compiled()  # the plain function and its compiled version
    for fn in (bt._PY["_fixed_rho"], bt._fixed_rho):
        got = fn(rho, pt_lo, pt_hi, ps_lo, ps_hi, zt, zm, zt + zm)
        assert got >= brute - 1e-9 * (1 + abs(brute))  # valid
        assert got <= brute + 1e-7 * (1 + abs(brute))  # and exact


@pytest.mark.parametrize("eps", [0.1, 2.0])
def test_equals_the_streaming_oracle_on_random_duals_small_and_large_eps(eps):
    # eps = 2: 1 - e^eps q(T) close to 0 for many blocks, ratios of the levels in the
    # thousands within one block pair (the segment's ends far apart)
    box, p = _geometric_box(12, eps)
    rng = np.random.default_rng(7)
    for _ in range(2):
        y = p * rng.uniform(0.4, 0.8) + rng.normal(0, 0.01, 12)
        _, _, want = BoxOracle(box, p, eps).price(y, want=0, deadline=math.inf, atol=0.0,
                                                  full=True)
        _, _, got = BoxTreeOracle(box, p, eps).price(y, want=0, deadline=math.inf,
                                                     atol=-math.inf, full=True)
        assert got == pytest.approx(want, abs=1e-9)


def test_time_rule_takes_the_tree_search_up_to_20_categories_in_a_minute():
    # the pipeline uses the tree search from N = 17 on only when max_seconds covers
    # BoxTreeOracle.seconds(n): measured designs finish N = 20 in under 30 s of CPU
    secs = [BoxTreeOracle.seconds(n) for n in range(16, 25)]
    assert (np.diff(secs) > 0).all()
    assert BoxTreeOracle.seconds(20) <= 60 < BoxTreeOracle.seconds(22)
    # measured CPU seconds of whole designs: N = 22 up to 153 s (eps = 0.1), N = 24 about
    # 540 s at eps = log 2
    assert BoxTreeOracle.seconds(22) >= 150 and BoxTreeOracle.seconds(24) >= 540
