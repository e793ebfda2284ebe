"""The linear (accuracy) designer's HiGHS settings change speed, never the optimum.

The reference is an independent solve of the same polytope with the previous settings
(HiGHS' automatic method, primal and dual feasibility 1e-10), on random priors for every
kind of uncertainty set, N <= 60; for N = 4 also the paper's form of the l1-ball polytope
with one constraint per (i, i', j), written out densely here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from oracles import linear_n3
from pmlkit.design import optimal_mechanism
from pmlkit.design.linear import linear_design_matrix, mechanism_polytope
from pmlkit.sets import Box, L1Ball, L1BoxSet, VertexSet


def reference_value(uset, p: np.ndarray, eps: float, gain: np.ndarray) -> float:
    poly = mechanism_polytope(uset, eps, n_outputs=gain.shape[1])
    c = np.zeros(poly.n_vars)
    c[poly.layout["W"]] = -(p[:, None] * gain).ravel()
    res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                  bounds=poly.bounds, method="highs",
                  options={"primal_feasibility_tolerance": 1e-10,
                           "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0
    return -float(res.fun)


def make_set(kind: str, p: np.ndarray, rng: np.random.Generator):
    if kind == "ball-2nm":
        return L1Ball(p, rng.uniform(0.2, 1.0) * 2 * p.min())
    if kind == "ball-exact":
        return L1Ball(p, rng.uniform(0.05, 0.4))
    if kind == "box":
        return Box(p * rng.uniform(0.5, 1.0, p.size),
                   np.minimum(p * rng.uniform(1.0, 1.5, p.size), 1.0))
    if kind == "l1box":
        return L1BoxSet(p, 0.1, p * 0.7, np.minimum(p * 1.3, 1.0))
    qs = np.vstack([p, rng.dirichlet(np.full(p.size, 5.0)), rng.dirichlet(np.full(p.size, 5.0))])
    return VertexSet(0.8 * p + 0.2 * qs)


KINDS = ["ball-2nm", "ball-exact", "box", "l1box", "vertex"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n,seed", [(8, 0), (25, 1), (60, 2)])
def test_optimum_equals_previous_settings(kind, n, seed):
    rng = np.random.default_rng(1000 * seed + KINDS.index(kind))
    p = rng.dirichlet(np.full(n, 4.0))
    eps = float(rng.uniform(0.1, 2.0))
    uset = make_set(kind, p, rng)
    gain = np.eye(n) if seed != 1 else rng.random((n, n))
    w = linear_design_matrix(uset, p, eps=eps, gain=gain)
    value = float(p @ (gain * w).sum(axis=1))
    ref = reference_value(uset, p, eps, gain)
    assert value == pytest.approx(ref, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_small_n_equals_the_paper_form(seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(4, 3.0))
    beta = float(rng.uniform(0, 2 * p.min()))
    eps = float(rng.uniform(0.05, 2.0))
    w = linear_design_matrix(L1Ball(p, beta), p, eps=eps)
    assert float(p @ np.diag(w)) == pytest.approx(linear_n3(p, eps, beta, np.eye(p.size)), rel=1e-7)


def test_large_design_is_certified():
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.full(60, 5.0))
    for beta in (1.5 * float(p.min()), 0.2):
        m = optimal_mechanism(p, 1.0, beta=beta, utility="accuracy")
        assert m.certified_eps <= 1.0 + 1e-9
        assert np.all(m.matrix >= 0)
        assert np.allclose(m.matrix.sum(axis=1), 1.0, atol=1e-12)


# ============================================================ column generation
def min_over_set(kind_args, w: np.ndarray) -> float:
    """min_Q Q . w over the set, from its defining constraints (a generic HiGHS LP):
    l1-ball {Q >= 0, sum Q = 1, ||Q - c||_1 <= beta}, box {lo <= Q <= hi, sum Q = 1},
    vertex set (the minimum over the vertices)."""
    kind, args = kind_args
    n = w.size
    if kind == "vertex":
        return float(np.min(args @ w))
    if kind == "box":
        lo, hi = args
        res = linprog(w, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=list(zip(lo, hi, strict=True)),
                      method="highs")
        return float(res.fun)
    return float(argmin_over_set(kind_args, w) @ w)


def argmin_over_set(kind_args, w: np.ndarray) -> np.ndarray:
    kind, args = kind_args
    n = w.size
    if kind == "vertex":
        return args[int(np.argmin(args @ w))]
    if kind == "box":
        lo, hi = args
        return linprog(w, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=list(zip(lo, hi, strict=True)),
                       method="highs").x
    # l1-ball (optionally cut by a box): variables (Q, d) with d >= |Q - c|
    c, beta, lo, hi = args if kind == "l1box" else (*args, np.zeros(n), np.ones(n))
    eye = np.eye(n)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
    return linprog(np.concatenate([w, np.zeros(n)]), A_ub=a_ub,
                   b_ub=np.concatenate([c, -c, [beta]]),
                   A_eq=np.concatenate([np.ones(n), np.zeros(n)])[None, :], b_eq=[1.0],
                   bounds=list(zip(lo, hi, strict=True)) + [(0, None)] * n, method="highs").x[:n]


def cutting_plane_value(kind_args, p: np.ndarray, eps: float, gain: np.ndarray) -> float:
    """max sum_i p_i sum_j g[i, j] W[i, j] over rows summing to 1 and W[i, j] <= e^eps Q.W_j
    for every Q of the set, by cutting planes: solve with the distributions found so far
    (dense rows), add each column's worst distribution from the set's own constraints,
    until every column holds to 1e-11."""
    n, m = gain.shape
    e = math.exp(eps)
    cuts = [[] for _ in range(m)]
    a_eq = np.kron(np.eye(n), np.ones(m))
    for _ in range(200):
        rows = []
        for j in range(m):
            for q in cuts[j]:
                r = np.zeros((n, m))
                r[:, j] -= e * q
                for i in range(n):
                    rr = r.copy()
                    rr[i, j] += 1.0
                    rows.append(rr.ravel())
        res = linprog(-(p[:, None] * gain).ravel(),
                      A_ub=np.array(rows) if rows else None,
                      b_ub=np.zeros(len(rows)) if rows else None,
                      A_eq=a_eq, b_eq=np.ones(n), bounds=(0, None), method="highs",
                      options={"primal_feasibility_tolerance": 1e-10,
                               "dual_feasibility_tolerance": 1e-10})
        assert res.status == 0
        w = res.x.reshape(n, m)
        done = True
        for j in range(m):
            if w[:, j].max() > e * min_over_set(kind_args, w[:, j]) + 1e-11:
                cuts[j].append(argmin_over_set(kind_args, w[:, j]))
                done = False
        if done:
            return -float(res.fun)
    raise AssertionError("cutting planes did not converge")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(2))
def test_column_generation_equals_cutting_planes_on_the_set(kind, seed):
    """The designed optimum equals an LP built only from the set's defining constraints
    (no pmlkit polytope), to 1e-9 relative, at N = 7 for every set kind."""
    rng = np.random.default_rng(50 + 7 * seed + KINDS.index(kind))
    n = 7
    p = rng.dirichlet(np.full(n, 2.0))
    eps = float(rng.choice([0.2, 1.0, 2.5]))
    uset = make_set(kind, p, rng)
    if isinstance(uset, L1Ball):
        ka = ("ball", (np.asarray(uset.center), float(uset.radius)))
    elif isinstance(uset, VertexSet):
        ka = ("vertex", np.asarray(uset.vertices))
    elif isinstance(uset, Box):
        ka = ("box", (np.asarray(uset.lower), np.asarray(uset.upper)))
    else:
        lo = np.maximum(np.asarray(uset.lower), 0.0)
        hi = np.asarray(uset.upper)
        c = np.asarray(uset.center)
        # l1-ball cut by a box: both constraint sets at once
        ka = ("l1box", (c, float(uset.radius), lo, hi))
    gain = np.eye(n) if seed == 0 else rng.random((n, n))
    w = linear_design_matrix(uset, p, eps=eps, gain=gain)
    value = float(p @ (gain * w).sum(axis=1))
    assert value == pytest.approx(cutting_plane_value(ka, p, eps, gain), rel=1e-9, abs=1e-13)


@pytest.mark.parametrize("kind,n,eps", [
    *[(k, n, e) for k in KINDS for n, e in [(30, 0.3), (50, 1.0), (50, 3.0)]],
    ("ball-2nm", 100, 1.0), ("ball-2nm", 100, 3.0), ("vertex", 100, 1.0)])
def test_column_generation_equals_the_whole_lp(kind, n, eps):
    """N <= 100, eps up to 3 (where the optimum uses many outputs and the knapsack bound is
    loose, so the exact one-column pricing decides): the value equals the whole polytope LP
    solved in one HiGHS call with tight tolerances, to 1e-9 relative."""
    from pmlkit.design.linear import _column_generation_design

    rng = np.random.default_rng(n + int(10 * eps) + 100 * KINDS.index(kind))
    p = rng.dirichlet(np.full(n, 4.0))
    uset = make_set(kind, p, rng)
    gain = np.eye(n)
    stats = {}
    w = _column_generation_design(uset, p, eps, gain, stats=stats)
    assert w is not None  # converged: the whole-LP fallback was not needed
    assert stats["columns"] < n
    value = float(p @ np.diag(w))
    assert value == pytest.approx(reference_value(uset, p, eps, gain), rel=1e-9)


def test_column_price_bound_is_the_knapsack_optimum():
    """The closed-form bound equals a generic LP over {0 <= w <= e^eps, q . w = 1}."""
    from pmlkit.design.linear import column_price_bound

    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 9))
        q = rng.dirichlet(np.ones(n))
        q[rng.random(n) < 0.2] = 0.0
        if q.sum() == 0:
            q[0] = 1.0
        q /= q.sum()
        z = rng.normal(size=(n, 3))
        eps = float(rng.uniform(0.0, 3.0))
        got = column_price_bound(z, q, eps)
        for k in range(3):
            res = linprog(-z[:, k], A_eq=q[None, :], b_eq=[1.0],
                          bounds=[(0, math.exp(eps))] * n, method="highs")
            assert got[k] == pytest.approx(-res.fun, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("call", [
    lambda s, p: linear_design_matrix(s, p, 1.0),
    lambda s, p: linear_design_matrix(s, p, 1.0, "accuracy"),
    lambda s, p: linear_design_matrix(uset=s, prior=p, eps=1.0),
])
def test_old_spellings_warn_and_agree(call):
    p = np.array([0.5, 0.3, 0.2])
    s = L1Ball(p, 0.1)
    with pytest.warns(DeprecationWarning):
        old = call(s, p)
    assert np.array_equal(old, linear_design_matrix(s, p, eps=1.0))


def test_polytope_old_spellings_warn_and_agree():
    from pmlkit.design import exact_polytope, robust_polytope

    p = [0.5, 0.3, 0.2]
    new = robust_polytope(p, eps=1.0, beta=0.1)
    for old_call in (lambda: robust_polytope(p, 1.0, 0.1),
                     lambda: robust_polytope(p_hat=p, eps=1.0, beta=0.1)):
        with pytest.warns(DeprecationWarning):
            old = old_call()
        assert (old.A_ub != new.A_ub).nnz == 0 and np.array_equal(old.b_ub, new.b_ub)
    ball = L1Ball(np.array(p), 0.5)
    with pytest.warns(DeprecationWarning):
        old = exact_polytope(uset=ball, eps=1.0)
    assert (old.A_ub != exact_polytope(ball, 1.0).A_ub).nnz == 0
    with pytest.warns(DeprecationWarning):
        old = mechanism_polytope(uset=ball, eps=1.0)
    assert old.form == mechanism_polytope(ball, 1.0).form


def test_design_from_samples_takes_hundreds_of_categories_for_accuracy():
    """Above the sub-convex limit (150) a linear utility is still designed (up to 500),
    certified, and at least as accurate as eps-LDP randomized response."""
    from pmlkit.design import design_from_samples
    from pmlkit.design.pipeline import MAX_DESIGN_CATEGORIES
    from pmlkit.errors import TooLargeError
    from pmlkit.estimation import EmpiricalDistribution

    n = 200
    rng = np.random.default_rng(11)
    counts = rng.multinomial(100_000, rng.dirichlet(np.full(n, 3.0)))
    est = EmpiricalDistribution.from_counts(counts, [f"c{i}" for i in range(n)])
    res = design_from_samples(est, 1.0, 1e-6, utility="accuracy")
    assert res.mechanism.n_inputs == n and res.guarantee.certified_eps <= 1.0 + 1e-9
    p = counts / counts.sum()
    e = math.e
    rr_accuracy = e / (e + n - 1)  # randomized response keeps the value w.p. e^eps/(e^eps+N-1)
    assert res.guarantee.utility_value >= rr_accuracy
    assert res.guarantee.utility_value == pytest.approx(
        float(p @ np.diag(np.asarray(res.mechanism.matrix))), rel=1e-12)
    with pytest.raises(TooLargeError):
        design_from_samples(EmpiricalDistribution.from_counts(
            np.ones(MAX_DESIGN_CATEGORIES + 1), list(range(MAX_DESIGN_CATEGORIES + 1))),
            1.0, 1e-6)


# ============================================================ l1-ball dual pricing
def one_column_lp_over_ball(z: np.ndarray, c: np.ndarray, radius: float, eps: float) -> float:
    """max z . w over {w >= 0 : max_i w_i <= e^eps Q . w for every Q of the l1-ball},
    c . w = 1, from the ball's defining constraints only: cutting planes, each the
    worst-case distribution of the current column found by a generic LP over the ball."""
    n = z.size
    e = math.exp(eps)
    cuts = [c.copy()]
    for _ in range(500):
        # variables (w, s): max z . w ; w_i - e s <= 0 ; s - Q . w <= 0 ; c . w = 1
        rows = [np.concatenate([np.eye(n)[i], [-e]]) for i in range(n)]
        rows += [np.concatenate([-q, [1.0]]) for q in cuts]
        res = linprog(-np.concatenate([z, [0.0]]), A_ub=np.array(rows),
                      b_ub=np.zeros(len(rows)), A_eq=np.concatenate([c, [0.0]])[None, :],
                      b_eq=[1.0], bounds=[(0, None)] * n + [(None, None)], method="highs",
                      options={"primal_feasibility_tolerance": 1e-10,
                               "dual_feasibility_tolerance": 1e-10})
        assert res.status == 0
        w = res.x[:n]
        q = argmin_over_set(("ball", (c, radius)), w)
        if w.max() <= e * float(q @ w) + 1e-10:
            return -float(res.fun)
        cuts.append(q)
    raise AssertionError("cutting planes did not converge")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 6),
       radius_kind=st.sampled_from(["zero", "small", "large", "huge"]),
       eps=st.floats(0.0, 4.0))
def test_ball_price_bound_is_the_one_column_lp_optimum(seed, n, radius_kind, eps):
    """The closed-form dual bound is never below the one-column LP over the l1-ball (a
    cutting-plane LP from the ball's own constraints) and equal to it (1e-7): it decides
    which columns enter without any LP."""
    from pmlkit.design.linear import ball_price_bound

    rng = np.random.default_rng(seed)
    c = rng.dirichlet(np.ones(n))
    radius = {"zero": 0.0, "small": float(rng.uniform(0, 2 * c.min())),
              "large": float(rng.uniform(0.2, 1.0)), "huge": 2.0}[radius_kind]
    z = rng.normal(size=(n, 2))
    got = ball_price_bound(z, c, radius, eps)
    for k in range(2):
        ref = one_column_lp_over_ball(z[:, k], c, radius, eps)
        assert got[k] >= ref - 1e-8 * max(1.0, abs(ref))
        assert got[k] == pytest.approx(ref, rel=1e-7, abs=1e-8)


@pytest.mark.parametrize("n,eps,radius", [(40, 3.0, 0.2), (50, 3.0, 0.6), (60, 3.0, 0.2),
                                          (50, 0.1, 0.2), (30, 5.0, 1.5), (50, 1.0, 2.0)])
def test_column_generation_over_large_balls_equals_the_whole_lp(n, eps, radius):
    """Large radii (the exact dual form) and large eps, where the optimum uses many
    outputs: column generation priced by the closed-form dual reaches the whole LP's
    optimum to 1e-9 relative."""
    from pmlkit.design.linear import _column_generation_design

    rng = np.random.default_rng(n + int(10 * eps))
    p = rng.dirichlet(np.full(n, 4.0))
    ball = L1Ball(p, radius)
    gain = np.eye(n) if eps != 5.0 else rng.random((n, n))
    stats = {}
    w = _column_generation_design(ball, p, eps, gain, stats=stats)
    assert w is not None
    value = float(p @ (gain * w).sum(axis=1))
    assert value == pytest.approx(reference_value(ball, p, eps, gain), rel=1e-9)
