"""Exact pricing by dynamic programming over masses (l1-balls centred at a prior ``k / m``).

References are independent of the oracle: every candidate extreme ray listed by the
generators of :mod:`pmlkit.design.subconvex` (checked against brute-force vertex enumeration
in their own tests), the reduced costs computed here with numpy, and the full extreme-ray LP
solved by a generic HiGHS call (``scipy.optimize.linprog``).
"""

from __future__ import annotations

import math
import time
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracles import full_lp_optimum, mi_cols
from pmlkit.design import design_from_samples
from pmlkit.design.colgen import (
    BranchAndBoundOracle,
    L1BallOracle,
    column_generation,
    prior_grid,
)
from pmlkit.design.colgen._l1 import _backtrack, _min_sums
from pmlkit.design.pipeline import _exact_rays, _fallback, _Utility
from pmlkit.design.subconvex import three_level_rays
from pmlkit.estimation import EmpiricalDistribution
from pmlkit.sets import L1Ball
from pmlkit.worstcase import leakage_capacity


def all_rays(uset: L1Ball, eps: float) -> np.ndarray:
    """Every candidate ray: the set's own generator, and the three-level superset too (it
    lists the rays of any radius)."""
    rays = _exact_rays(uset, np.asarray(uset.center))
    assert rays is not None
    parts = [rays(eps)]
    if uset.radius > 0:
        parts.append(three_level_rays(uset, eps))
    return np.concatenate(parts, axis=1)


def balls(p: np.ndarray, rng: np.random.Generator) -> list[L1Ball]:
    pmin = float(p[p > 0].min())
    return [L1Ball(p, 0.0), L1Ball(p, float(rng.uniform(0.2, 1.0)) * 2 * pmin),
            L1Ball(p, 2 * pmin + float(rng.uniform(0.01, 0.4))), L1Ball(p, 1.3)]


def count_prior(rng: np.random.Generator, n: int, zero: bool = False) -> np.ndarray:
    counts = rng.integers(1, 60, n).astype(np.float64)
    if zero:
        counts[rng.integers(n)] = 0.0
    return counts / counts.sum()


@pytest.mark.parametrize("n,seed", [(2, 0), (4, 1), (6, 2), (8, 3), (10, 4)])
@pytest.mark.parametrize("eps", [0.05, 0.7, 2.0, 5.0])
def test_dp_pricing_reaches_the_full_enumeration_optimum(n, seed, eps):
    rng = np.random.default_rng(seed)
    p = count_prior(rng, n)
    for uset in balls(p, rng) if n <= 8 else balls(p, rng)[:3]:
        opt = full_lp_optimum(all_rays(uset, eps), p)
        oracle = L1BallOracle(uset, p, eps, prior_grid(p))
        res = column_generation(oracle, p, lambda v: mi_cols(v, p), start=None, gap=0.0,
                                deadline=time.monotonic() + 60)
        assert abs(res.value - opt) <= 1e-9 * opt + 1e-13, (uset, eps)
        assert res.value <= opt * (1 + 1e-9) + 1e-13
        assert opt <= res.upper_bound * (1 + 1e-9) + 1e-12
        assert res.gap <= 1e-6


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 7), seed=st.integers(0, 10**6), eps=st.floats(0.05, 5.0),
       which=st.integers(0, 3), zero=st.booleans(), scale=st.floats(0.05, 3.0))
def test_dp_bound_is_valid_on_random_duals(n, seed, eps, which, zero, scale):
    # the bound is at least the best reduced cost over every candidate ray, and the
    # columns it returns are feasible points of K_1 with the reduced cost they claim
    rng = np.random.default_rng(seed)
    p = count_prior(rng, n, zero=zero and n > 2)
    uset = balls(p, rng)[which]
    y = rng.normal(0.3, 1.0, n) * scale
    rays = all_rays(uset, eps)
    best = float((mi_cols(rays, p) - y @ rays).max())
    cols, vals, bound = L1BallOracle(uset, p, eps, prior_grid(p)).price(
        y, want=8, deadline=math.inf, atol=1e-12, full=True)
    assert bound >= best - 1e-12
    if cols.shape[1]:
        assert np.allclose(p @ cols, 1.0, atol=1e-12)
        assert np.allclose(vals, mi_cols(cols, p), rtol=1e-12, atol=1e-14)
        worst = uset.min_linear(cols)
        assert (cols.max(axis=0) <= math.exp(eps) * worst * (1 + 1e-9)).all()
        assert (vals - y @ cols).max() <= best + 1e-9


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 9), seed=st.integers(0, 10**6), size=st.integers(0, 40))
def test_min_sums_is_the_brute_force_minimum(n, seed, size):
    rng = np.random.default_rng(seed)
    kw = rng.integers(0, 7, n)
    y = rng.normal(size=n)
    best, take = _min_sums(kw, y, size, keep=True)
    brute = np.full(size + 1, math.inf)
    for code in range(1 << n):
        s = [(code >> i) & 1 for i in range(n)]
        mass = int(np.dot(s, kw))
        if mass <= size:
            brute[mass] = min(brute[mass], float(np.dot(s, y)))
    assert np.array_equal(np.isfinite(best), np.isfinite(brute))
    fin = np.isfinite(brute)
    assert np.allclose(best[fin], brute[fin], rtol=0, atol=1e-12)
    assert take is not None
    for k in np.flatnonzero(fin):
        items = _backtrack(kw, take, int(k))
        assert int(kw[items].sum()) == k
        assert float(y[items].sum()) == pytest.approx(brute[k], abs=1e-12)


def test_prior_grid_recovers_counts_and_refuses_the_rest():
    counts = np.array([3.0, 0.0, 7.0, 11.0, 1.0])
    k, m = prior_grid(counts / counts.sum())
    assert m == 22 and k.tolist() == [3, 0, 7, 11, 1]
    big = np.array([12345.0, 67891.0, 2.0])
    k, m = prior_grid(big / big.sum())
    assert m == 80238 and k.tolist() == [12345, 67891, 2]
    # irrational entries, or a denominator above the limit, have no grid
    assert prior_grid(np.array([1 / math.sqrt(2), 1 - 1 / math.sqrt(2)])) is None
    q = np.array([1.0, 999_983.0]) / 999_984.0
    assert prior_grid(q) is None
    assert Fraction(1, 999_984).denominator > 400_000


def test_sixteen_categories_certified_optimal_where_the_bound_search_was_not():
    # a 16-value column (geometric counts, m = 10^4) at eps = log 2: the l1-ball of
    # radius beta*(delta) exceeds 2 p_min, so no ray list is exact and small; the former
    # spatial branch and bound stalled at a few percent here (3.1e-2 after 20 s), the
    # exact pricing certifies 1e-6 (about a second on a quiet machine)
    counts = np.maximum(np.round(1e4 * 0.85 ** np.arange(16) / (0.85 ** np.arange(16)).sum()),
                        1.0)
    emp = EmpiricalDistribution.from_counts(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "optimality gap" warning
        r = design_from_samples(emp, math.log(2), 1e-6, max_seconds=60)
    assert r.optimality_gap is not None and r.optimality_gap <= 1e-6
    assert "dynamic programming" in r.mechanism.parameters["method"]
    p = np.asarray(r.guarantee.estimate)
    uset = L1Ball(p, r.guarantee.beta)
    assert uset.radius > 2 * p.min()
    w = np.asarray(r.mechanism.matrix)
    assert leakage_capacity(w, uset) <= math.log(2) + 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf, _ = _fallback(uset, p, math.log(2), _Utility("mutual_information", 16))
    assert float(mi_cols(w, p).sum()) >= float(mi_cols(wf, p).sum()) - 1e-9


def test_bound_search_remains_for_priors_off_a_grid():
    # a prior with irrational entries keeps the spatial branch and bound (and its gap)
    p = np.array([1 / math.pi, 1 / math.e, 1 - 1 / math.pi - 1 / math.e])
    assert prior_grid(p) is None
    uset = L1Ball(p, 0.1)
    oracle = BranchAndBoundOracle(uset, p, 1.0)
    res = column_generation(oracle, p, lambda v: mi_cols(v, p), start=None, gap=1e-3,
                            deadline=time.monotonic() + 20)
    assert res.gap <= 1e-3
