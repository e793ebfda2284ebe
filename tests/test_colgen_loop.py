"""The column-generation loop itself: the warm-started master LP (one HiGHS model for the
whole run), partial pricing of the enumeration oracle from its cache, and the chunked
generation of the three-level candidate rays.

References are independent of the code under test: a fresh ``scipy.optimize.linprog``
(HiGHS) solve of the same columns, the full extreme-ray LP over every candidate ray
(``tests/oracles.py``) and LP duality checked with numpy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from oracles import full_lp_optimum, mi_cols
from pmlkit.design.colgen import EnumerationOracle, column_generation
from pmlkit.design.colgen._master import _highs_master, _Master
from pmlkit.design.pipeline import _exact_rays
from pmlkit.design.subconvex import _three_level_aggregated
from pmlkit.sets import Box, L1Ball


def _sets(p: np.ndarray) -> list:
    return [L1Ball(p, 0.0), L1Ball(p, 0.5), Box(np.maximum(p - 0.05, 0.0),
                                                np.minimum(p + 0.05, 1.0))]


def _fresh_lp(cols: np.ndarray, vals: np.ndarray) -> float:
    res = linprog(-vals, A_eq=cols, b_eq=np.ones(cols.shape[0]), bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return float(-res.fun)


def _check_duality(value: float, y: np.ndarray, theta: np.ndarray, cols: np.ndarray,
                   vals: np.ndarray) -> None:
    # primal feasible, dual feasible (no column prices out), equal objectives
    assert np.all(theta >= -1e-12)
    assert np.allclose(cols @ theta, 1.0, atol=1e-8)
    assert float(np.max(vals - y @ cols)) <= 1e-8
    assert abs(float(np.sum(y)) - value) <= 1e-8 * max(1.0, abs(value))
    assert abs(float(vals @ theta) - value) <= 1e-9 * max(1.0, abs(value))


@pytest.mark.parametrize("seed", range(3))
def test_warm_master_matches_a_fresh_lp_through_adds_and_prunes(seed):
    rng = np.random.default_rng(seed)
    n = 6
    p = rng.dirichlet(np.ones(n))
    uset = _sets(p)[seed % 3]
    rays = _exact_rays(uset, p)(0.8)
    vals = mi_cols(rays, p)
    order = rng.permutation(rays.shape[1])
    warm, cold = _Master(n), _Master(n, warm=False)
    for m in (warm, cold):
        m.add(np.ones((n, 1)), np.zeros(1))
    pruned = False
    for chunk in np.array_split(order, 5):
        for m in (warm, cold):
            m.add(rays[:, chunk], vals[chunk])
        wv, wy, wt = warm.solve()
        cv, _, _ = cold.solve()
        ref = _fresh_lp(warm.cols, warm.vals)
        assert abs(wv - ref) <= 1e-9 * max(ref, 1e-300) + 1e-13
        assert abs(cv - ref) <= 1e-9 * max(ref, 1e-300) + 1e-13
        _check_duality(wv, wy, wt, warm.cols, warm.vals)
        # pruning deletes the same columns from the HiGHS model: still the same LP
        before = warm.vals.size
        wt = warm.prune(wt, wy, 3 * n)
        pruned = pruned or warm.vals.size < before  # keeps 3n/2 >= n columns: every basic one
        assert wt.shape == warm.vals.shape
        wv2, wy2, wt2 = warm.solve()
        assert abs(wv2 - _fresh_lp(warm.cols, warm.vals)) <= 1e-9 * max(ref, 1e-300) + 1e-13
        _check_duality(wv2, wy2, wt2, warm.cols, warm.vals)
        # the same column set in both masters from now on
        cold.cols, cold.vals = warm.cols.copy(), warm.vals.copy()
        cold._keys = set(warm._keys)
    assert pruned  # the deletion path was exercised
    if _highs_master(n) is not None:
        assert warm._highs is not None  # the warm path was used, not silently dropped


def test_warm_master_falls_back_to_linprog_when_highs_fails():
    class Broken:
        def run(self) -> None:
            raise RuntimeError("solver crashed")

    p = np.array([0.5, 0.3, 0.2])
    rays = _exact_rays(L1Ball(p, 0.4), p)(1.0)
    m = _Master(3)
    m.add(rays, mi_cols(rays, p))
    m._highs = Broken()
    value, y, theta = m.solve()
    assert m._highs is None
    assert abs(value - full_lp_optimum(rays, p)) <= 1e-9 * value
    _check_duality(value, y, theta, m.cols, m.vals)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(3, 7), seed=st.integers(0, 10**6), eps=st.floats(0.05, 4.0),
       which=st.integers(0, 2), cache=st.integers(1, 12))
def test_enumeration_partial_pricing_reaches_the_full_lp(n, seed, eps, which, cache):
    # a tiny cache forces rounds priced from the cache only (no bound) between full
    # passes; the optimum and its certificate must be those of the full LP
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    uset = _sets(p)[which]
    rays = _exact_rays(uset, p)(eps)
    opt = full_lp_optimum(rays, p)
    oracle = EnumerationOracle(rays, mi_cols(rays, p))
    oracle.CACHE = cache
    bounds: list[float] = []
    price = oracle.price

    def spy(y, **kw):
        out = price(y, **kw)
        bounds.append(out[2])
        return out

    oracle.price = spy  # type: ignore[method-assign]
    res = column_generation(oracle, p, lambda c: mi_cols(c, p), start=None, gap=0.0,
                            deadline=math.inf)
    assert abs(res.value - opt) <= 1e-9 * max(opt, 1e-300) + 1e-13
    assert opt <= res.upper_bound * (1 + 1e-9) + 1e-13
    assert res.gap == 0.0
    # the certificate came from a full pass (finite bound)
    assert any(math.isfinite(b) for b in bounds)


def test_enumeration_cache_rounds_return_no_bound():
    p = np.array([0.3, 0.25, 0.2, 0.15, 0.1])
    rays = _exact_rays(Box(p - 0.05, p + 0.05), p)(1.0)
    oracle = EnumerationOracle(rays, mi_cols(rays, p))
    oracle.CACHE = 3
    assert rays.shape[1] > 2 * oracle.CACHE
    y0 = np.zeros(5)
    _, _, bound = oracle.price(y0, want=2, deadline=math.inf, atol=1e-12)
    # a full pass: the bound is the largest mu over the rays, computed here
    assert bound == pytest.approx(float(mi_cols(rays, p).max()), rel=1e-12)
    y1 = np.full(5, 1e-3)
    _, _, b1 = oracle.price(y1, want=2, deadline=math.inf, atol=1e-12)
    assert b1 == math.inf  # answered from the cache
    _, _, b2 = oracle.price(y1, want=2, deadline=math.inf, atol=1e-12)
    # the same duals again: a full pass, exact bound
    assert b2 == pytest.approx(float(np.max(mi_cols(rays, p) - y1 @ rays)), rel=1e-12)


@pytest.mark.parametrize("n", [6, 7, 8])
def test_three_level_candidates_in_chunks_equal_one_pass(n):
    # chunks start and stop at multiples of 3^6 codes (the low-digit table): the union of
    # the chunks is the one-pass candidate list, row for row
    rng = np.random.default_rng(n)
    p = rng.dirichlet(np.ones(n))
    e = math.exp(0.7)
    for uset in _sets(p)[1:]:
        whole = _three_level_aggregated(uset, e, p, n)
        parts = [_three_level_aggregated(uset, e, p, n, a, min(a + 3**6, 3**n))
                 for a in range(0, 3**n, 3**6)]
        chunked = np.concatenate(parts, axis=0)
        assert chunked.shape == whole.shape

        def rows(a: np.ndarray) -> np.ndarray:
            r = np.round(a, 12)
            return r[np.lexsort(r.T[::-1])]

        assert np.array_equal(rows(chunked), rows(whole))
        # every candidate is normalised: p . w = 1 (p is the ball's centre / in the box)
        if isinstance(uset, L1Ball):
            assert np.allclose(whole @ p, 1.0)


class _FinalOnly:
    """An oracle in the manner of the box's branch and bound (smoothed rounds, bounds
    skipped, a share of the budget kept for a final search) whose rounds find nothing
    and whose full searches are exact (every ray) and return at most two columns: each
    final search finishes early and leaves time for another."""

    name = "final only"
    skips_bounds = True
    stabilize = True
    bound_share = 0.9

    def __init__(self, rays: np.ndarray, vals: np.ndarray) -> None:
        self.rays, self.vals = rays, vals
        self.full_calls: list[np.ndarray] = []

    def price(self, y, *, want, deadline, atol, full=False):
        if not full:
            return np.zeros((self.rays.shape[0], 0)), np.zeros(0), math.inf
        self.full_calls.append(np.array(y, copy=True))
        rc = self.vals - y @ self.rays
        sel = np.argsort(-rc)[:2]
        sel = sel[rc[sel] > atol]
        return self.rays[:, sel], self.vals[sel], float(rc.max())


def test_final_searches_repeat_while_time_is_left():
    """Final searches that finish before the deadline are followed by others at the new
    duals until the gap is met: the design reaches the full LP's optimum with a
    certificate, and every final search but the last added columns."""
    import time

    rng = np.random.default_rng(3)
    n = 6
    p = rng.dirichlet(np.ones(n))
    rays = _exact_rays(Box(np.maximum(p - 0.05, 0.0), np.minimum(p + 0.05, 1.0)), p)(0.9)
    opt = full_lp_optimum(rays, p)
    oracle = _FinalOnly(rays, mi_cols(rays, p))
    res = column_generation(oracle, p, lambda c: mi_cols(c, p), start=None, gap=1e-9,
                            deadline=time.monotonic() + 30.0)
    assert len(oracle.full_calls) >= 2
    assert abs(res.value - opt) <= 1e-8 * opt
    assert opt <= res.upper_bound * (1 + 1e-12)
    assert res.gap <= 1e-9
    assert res.seconds < 25.0  # it stopped at the gap, not at the deadline
