"""Branch-and-bound pricing over a box (``BoxBranchBoundOracle``), checked independently.

The references: the vertices of ``K_1`` found region by region by brute force (every
``N - 1``-active-constraint system of every sort order, ``test_colgen_box``), the exact
meet-in-the-middle enumeration ``BoxOracle`` (all ``3^N`` level assignments), and the
extreme-ray LP over all three-level rays solved by HiGHS (``oracles.full_lp_optimum``).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings

from oracles import full_lp_optimum, mi_cols
from pmlkit.design.boxprice import BoxBranchBoundOracle
from pmlkit.design.colgen import BoxOracle, column_generation
from pmlkit.design.subconvex import three_level_rays
from pmlkit.sets import Box
from test_colgen_box import box_cases, brute_vertices, g_values


def _margin(y: np.ndarray) -> float:
    return 1e-10 * (1 + float(np.abs(y).sum()))


@settings(max_examples=12, deadline=None)
@given(box_cases())
def test_bound_is_valid_and_exact_against_brute_force(case):
    lo, hi, p, eps, y = case
    box = Box(lo, hi)
    oracle = BoxBranchBoundOracle(box, p, eps)
    v = brute_vertices(lo, hi, p, oracle.e)
    brute = float(g_values(v, p, y).max())
    cols, vals, bound = oracle.price(y, want=5, deadline=math.inf, atol=1e-12, full=True)
    assert bound >= brute  # valid
    # exact when the search finishes (below 0 only the sign matters to the certificate)
    assert bound <= max(brute, 1e-12) + _margin(y) + 1e-9 * (1 + abs(brute))
    if brute > 1e-9:
        # the improving columns are points of K_1 and the best one reaches the maximum
        assert np.allclose(p @ cols, 1.0)
        assert (cols.max(axis=0) <= oracle.e * box.min_linear(cols) * (1 + 1e-9)).all()
        assert float((vals - y @ cols).max()) == pytest.approx(brute, abs=1e-9 * (1 + brute))


@pytest.mark.parametrize("n, eps, seed", [(8, 0.3, 0), (12, 2.0, 2)])
def test_bound_equals_exact_enumeration(n, eps, seed):
    rng = np.random.default_rng(seed)
    c = rng.dirichlet(np.ones(n))
    lo, hi = np.clip(c - 0.03, 0, 1), np.clip(c + 0.03, 0, 1)
    box = Box(lo, hi)
    y = rng.normal(0, 1, n)
    _, _, exact = BoxOracle(box, c, eps).price(y, want=1, deadline=math.inf, atol=0.0,
                                               full=True)
    exact -= _margin(y)
    _, _, bound = BoxBranchBoundOracle(box, c, eps).price(
        y, want=1, deadline=math.inf, atol=1e-12, full=True)
    assert exact <= bound - _margin(y) + 1e-12
    assert bound - _margin(y) == pytest.approx(max(exact, 1e-12), rel=1e-9, abs=1e-12)


def test_stopped_search_still_bounds():
    # a search cut after a few nodes returns a larger but valid bound
    rng = np.random.default_rng(7)
    n = 9
    c = rng.dirichlet(np.ones(n))
    box = Box(np.clip(c - 0.05, 0, 1), np.clip(c + 0.05, 0, 1))
    y = rng.normal(0, 1, n)
    _, _, exact = BoxOracle(box, c, 1.0).price(y, want=1, deadline=math.inf, atol=0.0,
                                               full=True)
    oracle = BoxBranchBoundOracle(box, c, 1.0, deadline=time.monotonic() + 0.05)
    _, _, bound = oracle.price(y, want=1, deadline=time.monotonic() + 0.05, atol=1e-12,
                               full=True)
    assert bound >= exact - _margin(y)


@pytest.mark.parametrize("n, eps, seed", [(4, 0.05, 0), (5, math.log(2), 1), (6, 5.0, 2)])
def test_design_equals_full_enumeration_lp(n, eps, seed):
    rng = np.random.default_rng(seed)
    counts = np.maximum(np.round(1000 * rng.dirichlet(np.ones(n))), 1)
    p = counts / counts.sum()
    width = rng.uniform(0.01, 0.08, n)
    box = Box(np.clip(p - width, 0, 1), np.clip(p + width, 0, 1))
    full = full_lp_optimum(three_level_rays(box, eps, q0=p), p)
    res = column_generation(BoxBranchBoundOracle(box, p, eps), p, lambda v: mi_cols(v, p),
                            start=None, gap=1e-6, deadline=math.inf)
    assert res.value == pytest.approx(full, rel=1e-6, abs=1e-12)
    assert res.upper_bound >= full - 1e-12
    assert res.gap <= 1e-6

