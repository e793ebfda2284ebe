"""Exact mutual-information pricing over a box (``BoxOracle``), checked against brute force.

The brute force enumerates the vertices of ``K_1 = {w >= 0 : max w <= e^eps min_Q Q . w,
p . w = 1}`` region by region: on the region where the entries are in the order ``sigma``,
the worst distribution of the box is a fixed greedy ``Q_sigma`` (written here from scratch),
so the region is a polytope with ``N + 1`` inequalities; every vertex of ``K_1`` is a vertex
of a region, found by solving all ``N - 1``-active-constraint systems. Nothing of the
oracle's level-set formula is used.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmlkit.design.colgen import BoxOracle, column_generation
from pmlkit.design.subconvex import ray_lp_matrix, three_level_rays
from pmlkit.sets import Box
from pmlkit.utility import mutual_information, mutual_information_columns


def greedy_worst(lo: np.ndarray, hi: np.ndarray, order_desc: np.ndarray) -> np.ndarray:
    """Worst distribution for any column whose entries decrease along ``order_desc``:
    start at ``lo``, give the remaining mass to the smallest entries first, up to ``hi``."""
    q = lo.copy()
    left = 1.0 - lo.sum()
    for x in order_desc[::-1]:
        add = min(hi[x] - lo[x], max(left, 0.0))
        q[x] += add
        left -= add
    return q


def brute_vertices(lo: np.ndarray, hi: np.ndarray, p: np.ndarray, e: float) -> np.ndarray:
    n = p.size
    combos = np.asarray(list(itertools.combinations(range(n + 1), n - 1)))
    found = []
    for sigma in itertools.permutations(range(n)):
        sigma = np.asarray(sigma)
        q = greedy_worst(lo, hi, sigma)
        a = np.zeros((n + 1, n))
        idx = np.arange(n - 1)
        a[idx, sigma[1:]] = 1.0  # w_sigma(i+1) - w_sigma(i) <= 0
        a[idx, sigma[:-1]] = -1.0
        a[n - 1, sigma[-1]] = -1.0  # -w_min <= 0
        a[n] = -e * q
        a[n, sigma[0]] += 1.0  # w_max - e Q.w <= 0
        m = np.concatenate([a[combos], np.broadcast_to(p, (len(combos), 1, n))], axis=1)
        ok = np.abs(np.linalg.det(m)) > 1e-12
        rhs = np.zeros((int(ok.sum()), n))
        rhs[:, -1] = 1.0
        w = np.linalg.solve(m[ok], rhs[..., None])[..., 0]
        inside = (w @ a.T <= 1e-10 * (1 + np.abs(w).sum(axis=1, keepdims=True))).all(axis=1)
        found.append(w[inside])
    v = np.concatenate(found).T
    # the region's inequalities hold, so every vertex lies in K_1 (exact worst case check)
    worst = Box(lo, hi).min_linear(v)
    assert (v.max(axis=0) <= e * worst * (1 + 1e-8) + 1e-12).all()
    return v


def g_values(v: np.ndarray, p: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        xl = np.where(v > 0, v * np.log(np.where(v > 0, v, 1.0)), 0.0)
    return p @ xl - y @ v


@st.composite
def box_cases(draw, max_n: int = 6, kinds: tuple[str, ...] = ("tight", "zero-lo", "one-hi",
                                                             "wide"),
              near_cp: bool = False):
    """(lo, hi, p, eps, y): a box of one of ``kinds`` around a random distribution, a
    prior, eps and duals (with ``near_cp``, half the time close to ``c p`` as in the last
    rounds of column generation)."""
    n = draw(st.integers(2, max_n))
    kind = draw(st.sampled_from(list(kinds)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    c = rng.dirichlet(np.ones(n))
    if kind == "tight":
        lo, hi = np.clip(c - 0.02, 0, 1), np.clip(c + 0.02, 0, 1)
    elif kind == "zero-lo":
        lo, hi = np.clip(c - 0.2, 0, 1), np.clip(c + 0.1, 0, 1)
        lo[rng.integers(n)] = 0.0
    elif kind == "one-hi":
        lo, hi = np.clip(c - 0.1, 0, 1), np.clip(c + 0.1, 0, 1)
        hi[rng.integers(n)] = 1.0
    elif kind == "hi-active":
        # sum(hi) just above 1: q(X) = 1 - hi(X^c) > lo(X) for the large sets
        lo, hi = np.clip(c - 0.15, 0, 1), np.clip(c + 0.002, 0, 1)
    else:
        lo, hi = c * rng.uniform(0, 1, n), np.clip(c + rng.uniform(0, 0.5, n), 0, 1)
    p = rng.dirichlet(np.ones(n)) if draw(st.booleans()) else c
    p = np.maximum(p, 1e-3)
    p /= p.sum()
    eps = draw(st.sampled_from([0.05, 0.3, math.log(2), 1.5, 3.0]))
    y = rng.normal(0, draw(st.sampled_from([0.1, 1.0, 3.0])), n)
    if near_cp and draw(st.booleans()):
        y = y * 0.1 + p * rng.uniform(0.3, 1.0)  # duals close to c p, as in late rounds
    return lo, hi, p, eps, y


@settings(max_examples=40, deadline=None)
@given(box_cases())
def test_bound_equals_brute_force_vertex_maximum(case):
    lo, hi, p, eps, y = case
    box = Box(lo, hi)
    oracle = BoxOracle(box, p, eps)
    e = oracle.e
    v = brute_vertices(lo, hi, p, e)
    brute = float(g_values(v, p, y).max())
    cols, vals, bound = oracle.price(y, want=5, deadline=math.inf, atol=-math.inf)
    margin = 1e-10 * (1 + np.abs(y).sum())
    assert bound >= brute  # valid
    assert bound <= brute + margin + 1e-9 * (1 + abs(brute))  # exact
    # the columns are points of K_1 and the best reaches the bound
    assert np.allclose(p @ cols, 1.0)
    assert (cols.max(axis=0) <= e * box.min_linear(cols) * (1 + 1e-9)).all()
    rc = vals - y @ cols
    assert rc.max() == pytest.approx(brute, abs=1e-9 * (1 + abs(brute)))


def test_brute_force_greedy_matches_lp():
    # the test's own worst-case greedy against HiGHS on random columns
    from scipy.optimize import linprog

    rng = np.random.default_rng(3)
    for _ in range(20):
        n = 5
        c = rng.dirichlet(np.ones(n))
        lo, hi = np.clip(c - 0.1, 0, 1), np.clip(c + 0.15, 0, 1)
        w = rng.exponential(size=n)
        q = greedy_worst(lo, hi, np.argsort(-w))
        res = linprog(w, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=list(zip(lo, hi, strict=True)),
                      method="highs")
        assert q @ w == pytest.approx(res.fun, abs=1e-12)


@pytest.mark.parametrize("n", [7])
def test_larger_alphabets_one_case(n):
    rng = np.random.default_rng(11 + n)
    c = rng.dirichlet(np.ones(n))
    lo, hi = np.clip(c - 0.05, 0, 1), np.clip(c + 0.08, 0, 1)
    lo[0], hi[1] = 0.0, 1.0
    y = rng.normal(0, 1, n)
    oracle = BoxOracle(Box(lo, hi), c, math.log(2))
    brute = float(g_values(brute_vertices(lo, hi, c, oracle.e), c, y).max())
    _, _, bound = oracle.price(y, want=1, deadline=math.inf, atol=0.0)
    assert brute <= bound <= brute + 1e-9 * (1 + abs(brute)) + 1e-10 * (1 + np.abs(y).sum())


@pytest.mark.parametrize("n, eps, seed", [(6, 0.05, 0), (8, math.log(2), 1), (9, 2.0, 2),
                                          (10, 1.0, 3), (10, 5.0, 4)])
def test_design_equals_full_enumeration_lp(n, eps, seed):
    rng = np.random.default_rng(seed)
    counts = np.maximum(np.round(1000 * rng.dirichlet(np.ones(n))), 1)
    p = counts / counts.sum()
    width = rng.uniform(0.01, 0.08, n)
    lo, hi = np.clip(p - width, 0, 1), np.clip(p + width, 0, 1)
    box = Box(lo, hi)
    rays = three_level_rays(box, eps, q0=p)
    full = mutual_information(ray_lp_matrix(rays, mutual_information_columns(rays, p)), p)
    res = column_generation(BoxOracle(box, p, eps), p,
                            lambda v: mutual_information_columns(v, p),
                            start=None, gap=1e-10, deadline=math.inf)
    assert res.value == pytest.approx(full, rel=1e-9, abs=1e-12)
    assert res.upper_bound >= full - 1e-12
    assert res.gap <= 1e-6
    assert mutual_information(res.matrix, p) == pytest.approx(full, rel=1e-9, abs=1e-12)


def test_pipeline_prices_boxes_beyond_the_ray_list_exactly():
    from pmlkit.design import optimal_mechanism_for_set

    n = 14
    counts = np.maximum(np.round(10_000 * 0.8 ** np.arange(n)), 1.0)
    p = counts / counts.sum()
    box = Box(np.clip(p - 0.02, 0, 1), np.clip(p + 0.02, 0, 1))
    mech = optimal_mechanism_for_set(box, 2.0, prior=p, max_seconds=60)
    assert "exact enumeration (box)" in mech.parameters["method"]
    assert mech.parameters["optimality_gap"] <= 1e-6
