"""The LP designers against independent solves: brute-force vertex enumeration, the
paper's N^3-constraint form of Prop. LCCP, and closed forms."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import pmlkit
from oracles import linear_n3
from pmlkit.design import (
    eps_prime,
    exact_polytope,
    extremal_high_privacy,
    k_singular,
    optimal_binary,
    optimal_mechanism,
    optimal_mechanism_for_set,
    randomized_response,
    robust_polytope,
)
from pmlkit.design.subconvex import fixed_prior_rays, l1_ball_rays
from pmlkit.errors import InfeasibleError, ValidationError
from pmlkit.sets import Box, L1Ball, VertexSet

FAST = settings(max_examples=15)


# ============================================================ independent machinery
def enumerate_vertices(a_ub: np.ndarray, b_ub: np.ndarray, a_eq: np.ndarray,
                       b_eq: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """All vertices of {a_ub x <= b_ub, a_eq x = b_eq} by brute force: every choice of
    d - rank(a_eq) active inequalities, solved with numpy (batched), kept if feasible."""
    d = a_ub.shape[1]
    k = d - a_eq.shape[0]
    combos = np.array(list(itertools.combinations(range(a_ub.shape[0]), k)))
    mats = np.concatenate([np.broadcast_to(a_eq, (len(combos), *a_eq.shape)),
                           a_ub[combos]], axis=1)
    rhs = np.concatenate([np.broadcast_to(b_eq, (len(combos), a_eq.shape[0])),
                          b_ub[combos]], axis=1)
    ok = np.abs(np.linalg.det(mats)) > 1e-12
    x = np.linalg.solve(mats[ok], rhs[ok][..., None])[..., 0]
    feas = (x @ a_ub.T <= b_ub + tol).all(axis=1)
    x = x[feas]
    if len(x) == 0:
        return x
    return np.unique(np.round(x, 10), axis=0)


def ball_vertices(c: np.ndarray, beta: float) -> np.ndarray:
    """Vertices of the l1-ball cut by the simplex, in (Q, s) space projected on Q."""
    n = c.size
    eye = np.eye(n)
    a_ub = np.block([[-eye, np.zeros((n, n))], [eye, -eye], [-eye, -eye],
                     [np.zeros((1, n)), np.ones((1, n))]])
    b_ub = np.concatenate([np.zeros(n), c, -c, [beta]])
    a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
    v = enumerate_vertices(a_ub, b_ub, a_eq, np.ones(1))[:, :n]
    return np.unique(np.round(v, 10), axis=0)


def box_vertices(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    n = lo.size
    a_ub = np.vstack([-np.eye(n), np.eye(n)])
    b_ub = np.concatenate([-lo, hi])
    return enumerate_vertices(a_ub, b_ub, np.ones((1, n)), np.ones(1))


def slice_vertices(c: np.ndarray, eps: float, qs: np.ndarray) -> np.ndarray:
    """Vertices of {w >= 0, c.w = 1, w_i <= e^eps Q.w for every Q in qs}: the normalised
    columns of M(eps, conv(qs)) (Cor. extremalSet: the vertices of the set suffice)."""
    n = c.size
    e = math.exp(eps)
    rows = [-np.eye(n)]
    for q in qs:
        rows.append(np.eye(n) - e * np.broadcast_to(q, (n, n)))
    a_ub = np.vstack(rows)
    return enumerate_vertices(a_ub, np.zeros(a_ub.shape[0]), c[None, :], np.ones(1))


def mi_columns(v: np.ndarray, p: np.ndarray) -> np.ndarray:
    """mu_MI of columns (rows of v here), written out independently."""
    py = v @ p
    with np.errstate(divide="ignore", invalid="ignore"):
        t = p[None, :] * v * np.log(v / py[:, None])
    return np.where(p[None, :] * v > 0, t, 0.0).sum(axis=1)


def best_over_vertices(verts: np.ndarray, p: np.ndarray) -> float:
    """max sum theta_k mu(v_k) s.t. sum theta_k v_k = 1 (the extreme-ray LP, solved here
    with the brute-force vertex list)."""
    res = linprog(-mi_columns(verts, p), A_eq=verts.T, b_eq=np.ones(p.size),
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun


def linear_over_vertices(p: np.ndarray, eps: float, qs: np.ndarray, gain: np.ndarray) -> float:
    """max expected gain over M(eps, conv(qs)) with one dense constraint per (Q, i, j)."""
    n = p.size
    e = math.exp(eps)
    rows = []
    for q, i, j in itertools.product(qs, range(n), range(n)):
        r = np.zeros((n, n))
        r[:, j] -= e * q
        r[i, j] += 1
        rows.append(r.ravel())
    a_eq = np.kron(np.eye(n), np.ones(n))
    res = linprog(-(p[:, None] * gain).ravel(), A_ub=np.array(rows), b_ub=np.zeros(len(rows)),
                  A_eq=a_eq, b_eq=np.ones(n), bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun


def mi(m, p) -> float:
    return pmlkit.mutual_information(m, p)


priors = st.lists(st.floats(0.05, 1.0), min_size=3, max_size=5).map(
    lambda v: np.array(v) / np.sum(v))


# ============================================================ extreme rays
@FAST
@given(priors, st.floats(0.0, 3.0))
def test_fixed_prior_rays_are_the_vertices(p, eps):
    rays = fixed_prior_rays(p, eps).T
    n = p.size
    e = math.exp(eps)
    brute = enumerate_vertices(np.vstack([-np.eye(n), np.eye(n)]),
                               np.concatenate([np.zeros(n), np.full(n, e)]),
                               p[None, :], np.ones(1))
    for v in brute:
        assert np.abs(rays - v).max(axis=1).min() < 1e-8
    assert (rays <= e * (1 + 1e-12)).all() and (rays >= 0).all()
    np.testing.assert_allclose(rays @ p, 1.0)


@FAST
@given(priors, st.floats(0.0, 3.0), st.floats(0.0, 1.0))
def test_l1_rays_contain_the_lifted_vertices(p, eps, bfrac):
    """The derivation in subconvex.py: every vertex of the lifted polytope
    {0 <= t <= w_k <= e^eps'(1 + beta t / 2), p.w = 1} projects onto one of our rays, and
    every ray is a feasible column over the whole ball (checked with the exact greedy)."""
    beta = bfrac * 2 * p.min()
    n = p.size
    ep = eps_prime(eps, beta)
    e = math.exp(ep)
    # x = (w, t)
    a_ub = np.vstack([
        np.concatenate([np.zeros(n), [-1.0]])[None, :],            # -t <= 0
        np.hstack([-np.eye(n), np.ones((n, 1))]),                   # t - w_k <= 0
        np.hstack([np.eye(n), np.full((n, 1), -e * beta / 2)]),     # w_k - e b t/2 <= e
    ])
    b_ub = np.concatenate([[0.0], np.zeros(n), np.full(n, e)])
    a_eq = np.concatenate([p, [0.0]])[None, :]
    brute = enumerate_vertices(a_ub, b_ub, a_eq, np.ones(1))[:, :n]
    rays = l1_ball_rays(p, eps, beta).T
    for v in brute:
        assert np.abs(rays - v).max(axis=1).min() < 1e-7
    worst = L1Ball(p, beta).min_linear(rays.T)
    assert (rays.max(axis=1) <= math.exp(eps) * worst * (1 + 1e-9)).all()


# ============================================================ sub-convex optimum
@FAST
@given(st.floats(0.5, 0.95), st.floats(0.0, 0.999), st.floats(0.0, 1.0))
def test_n2_reproduces_thm_optimalbinary(p1, bfrac, efrac):
    beta = bfrac * 2 * (1 - p1)
    eps = efrac * -math.log(p1 - beta / 2)
    p = np.array([p1, 1 - p1])
    lp = optimal_mechanism(p, eps, beta=beta)
    thm = optimal_binary(p, beta=beta, eps=eps)
    assert mi(lp, p) == pytest.approx(mi(thm, p), abs=1e-7)
    assert lp.certified_eps <= eps + 1e-9


def test_n2_matrix_equals_theorem():
    p = np.array([0.7, 0.3])
    lp = optimal_mechanism(p, 0.3, beta=0.1).matrix
    thm = optimal_binary(p, beta=0.1, eps=0.3).matrix
    assert lp.shape == (2, 2)
    np.testing.assert_allclose(lp[:, np.argsort(lp[0])], thm[:, np.argsort(thm[0])],
                               atol=1e-7)


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.5])
def test_uniform_beta1_is_randomized_response(eps):
    m = optimal_mechanism([0.5, 0.5], eps, beta=1.0).matrix
    m = m[:, np.argsort(-m[0])]
    np.testing.assert_allclose(m, randomized_response(2, eps).matrix, atol=1e-7)


@FAST
@given(priors, st.floats(0.0, 1.0))
def test_beta0_matches_high_privacy_closed_form(p, efrac):
    eps = efrac * -math.log1p(-p.min())
    lp = optimal_mechanism(p, eps)
    assert mi(lp, p) == pytest.approx(mi(extremal_high_privacy(p, eps), p), abs=1e-7)


@pytest.mark.parametrize("n,k", [(4, 2), (6, 3), (6, 2), (8, 4)])
def test_beta0_matches_k_singular(n, k):
    u = np.full(n, 1 / n)
    lp = optimal_mechanism(u, math.log(n / k))
    assert mi(lp, u) == pytest.approx(mi(k_singular(n, k), u), abs=1e-7)
    assert mi(lp, u) == pytest.approx(math.log(n / k), abs=1e-7)


@pytest.mark.parametrize("p,eps,beta", [
    ([0.5, 0.3, 0.2], 0.2, 0.1), ([0.5, 0.3, 0.2], 1.5, 0.3), ([0.6, 0.25, 0.15], 0.05, 0.0),
    ([0.45, 0.35, 0.2], 0.8, 0.4), ([0.4, 0.3, 0.2, 0.1], 0.3, 0.15),
])
def test_subconvex_optimum_equals_brute_force(p, eps, beta):
    """Fully independent optimum: vertices of the ball (brute force) -> vertices of the
    normalised column polytope (brute force) -> extreme-ray LP."""
    p = np.array(p)
    qs = ball_vertices(p, beta) if beta > 0 else p[None, :]
    best = best_over_vertices(slice_vertices(p, eps, qs), p)
    m = optimal_mechanism(p, eps, beta=beta)
    assert m.parameters["optimality"] == "exact"
    assert mi(m, p) == pytest.approx(best, abs=1e-7)
    assert m.certified_eps <= eps + 1e-9


@FAST
@given(priors, st.floats(0.0, 3.0), st.floats(0.0, 1.0))
def test_robust_certified_and_never_worse_than_eps_prime(p, eps, bfrac):
    beta = bfrac * 2 * p.min()
    m = optimal_mechanism(p, eps, beta=beta)
    assert m.certified_eps <= eps + 1e-9
    assert pmlkit.leakage_capacity(m, L1Ball(p, beta)) <= eps + 1e-9
    ep = eps_prime(eps, beta)
    if ep >= 0:
        fixed = optimal_mechanism(p, ep)
        # eq. LPsubset: the eps' design is feasible for the ball ...
        assert pmlkit.leakage_capacity(fixed, L1Ball(p, beta)) <= eps + 1e-9
        # ... so the exact robust optimum is never worse
        assert mi(m, p) >= mi(fixed, p) - 1e-8
        acc = optimal_mechanism(p, eps, beta=beta, utility="accuracy")
        acc_fixed = optimal_mechanism(p, ep, utility="accuracy")
        assert pmlkit.utility.accuracy(acc, p) >= pmlkit.utility.accuracy(acc_fixed, p) - 1e-8


def test_robust_strictly_better_in_high_privacy():
    p = np.array([0.4, 0.3, 0.2, 0.1])
    eps, beta = 0.1, 0.1
    robust = mi(optimal_mechanism(p, eps, beta=beta), p)
    fixed = mi(optimal_mechanism(p, eps_prime(eps, beta)), p)
    print(f"\nhigh privacy p={p.tolist()} eps={eps} beta={beta}: exact robust I = "
          f"{robust:.6g} nats vs eps'-design {fixed:.6g} (x{robust / fixed:.3g}, "
          f"+{robust - fixed:.3g} nats)")
    assert robust > 3.0 * fixed  # measured 0.01170 vs 0.00359 nats


def test_callable_utility_matches_builtin():
    def mu(w, p):
        py = float(p @ w)
        nz = (w > 0) & (p > 0)
        return float(np.sum(p[nz] * w[nz] * np.log(w[nz] / py)))

    p = np.array([0.5, 0.3, 0.2])
    a = optimal_mechanism(p, 0.6, beta=0.1, utility=mu)
    b = optimal_mechanism(p, 0.6, beta=0.1)
    assert mi(a, p) == pytest.approx(mi(b, p), abs=1e-9)
    assert a.parameters["utility"] == "mu"


def test_callable_must_be_homogeneous():
    with pytest.raises(ValidationError, match="homogeneous"):
        optimal_mechanism([0.5, 0.5], 0.5, utility=lambda w, p: float(np.sum(w**2)))


# ============================================================ linear utilities
@pytest.mark.parametrize("seed", range(4))
def test_linear_lccp_agrees_with_n3_form(seed):
    rng = np.random.default_rng(seed)
    n = 3 + seed % 2
    p = rng.dirichlet(np.ones(n) * 3)
    beta = rng.uniform(0, 2 * p.min())
    eps = rng.uniform(0.05, 2.0)
    gain = rng.random((n, n))
    m = optimal_mechanism(p, eps, beta=beta, utility=gain)
    val = float(p @ (gain * m.matrix).sum(axis=1))
    assert val == pytest.approx(linear_n3(p, eps, beta, gain), abs=1e-6)
    assert m.certified_eps <= eps + 1e-9


@pytest.mark.parametrize("p,beta", [([0.6, 0.3, 0.1], 0.5), ([0.7, 0.3, 0.0], 0.2),
                                    ([0.5, 0.5, 0.0], 1.2)])
def test_exact_l1_polytope_any_radius(p, beta):
    """beta >= 2 p_min and zero counts: exact dual form vs brute-force ball vertices."""
    p = np.array(p)
    eps = 0.7
    gain = np.eye(3)
    m = optimal_mechanism(p, eps, beta=beta, utility="accuracy")
    val = pmlkit.utility.accuracy(m, p)
    assert val == pytest.approx(linear_over_vertices(p, eps, ball_vertices(p, beta), gain),
                                abs=1e-6)
    assert m.certified_eps <= eps + 1e-9


def test_exact_box_polytope():
    lo, hi = np.array([0.3, 0.2, 0.05]), np.array([0.6, 0.5, 0.3])
    p = np.array([0.45, 0.35, 0.2])
    eps = 0.5
    m = optimal_mechanism_for_set(Box(lo, hi), eps, prior=p, utility="accuracy")
    ref = linear_over_vertices(p, eps, box_vertices(lo, hi), np.eye(3))
    assert pmlkit.utility.accuracy(m, p) == pytest.approx(ref, abs=1e-6)
    assert m.certified_eps <= eps + 1e-9


def test_exact_polytope_equals_lccp_when_both_apply():
    p = np.array([0.5, 0.3, 0.2])
    from pmlkit.design.linear import linear_design_matrix

    ball = L1Ball(p, 0.2)
    a = linear_design_matrix(ball, p, eps=0.4, gain="accuracy")
    poly = exact_polytope(ball, 0.4)
    c = np.zeros(poly.n_vars)
    c[poly.layout["W"]] = -(p[:, None] * np.eye(3)).ravel()
    res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                  bounds=poly.bounds, method="highs")
    assert -res.fun == pytest.approx(pmlkit.utility.accuracy(a, p), abs=1e-7)


def test_robust_polytope_shape_and_errors():
    poly = robust_polytope([0.5, 0.3, 0.2], eps=0.5, beta=0.1)
    assert poly.A_ub.shape[0] == 2 * 9  # the 2 N^2 form
    assert poly.eps_prime == pytest.approx(eps_prime(0.5, 0.1))
    with pytest.raises(ValidationError, match="beta"):
        robust_polytope([0.5, 0.3, 0.2], eps=0.5, beta=0.5)
    with pytest.raises(ValidationError, match="eps"):
        robust_polytope([0.5, 0.3, 0.2], eps=-0.5, beta=0.1)


# ============================================================ any radius, boxes
@pytest.mark.parametrize("p,eps,beta", [
    ([0.5, 0.35, 0.15], 0.6, 0.5), ([0.7, 0.3, 0.0], 1.0, 0.2), ([0.5, 0.5, 0.0], 0.3, 1.2),
    ([0.4, 0.3, 0.2, 0.1], 0.2, 0.6), ([0.6, 0.2, 0.2, 0.0], 1.5, 0.1),
])
def test_subconvex_exact_beyond_two_pmin(p, eps, beta):
    """beta > 2 p_min (zero counts too): three-level rays vs brute-force vertices."""
    p = np.array(p)
    m = optimal_mechanism(p, eps, beta=beta)
    assert m.parameters["optimality"] == "exact"
    best = best_over_vertices(slice_vertices(p, eps, ball_vertices(p, beta)), p)
    assert mi(m, p) == pytest.approx(best, abs=1e-7)
    assert m.certified_eps <= eps + 1e-9
    ep = eps_prime(eps, beta)
    if ep >= 0:
        assert mi(m, p) >= mi(optimal_mechanism(p, ep), p) - 1e-8


small_priors = st.lists(st.floats(0.05, 1.0), min_size=3, max_size=4).map(
    lambda v: np.array(v) / np.sum(v))


@FAST
@given(small_priors, st.floats(0.0, 2.5),
       st.lists(st.floats(0.0, 0.3), min_size=10, max_size=10))
def test_subconvex_exact_over_boxes(p, eps, widths):
    n = p.size
    lo = np.clip(p - np.array(widths[:n]), 0, 1)
    hi = np.clip(p + np.array(widths[5:5 + n]), 0, 1)
    m = optimal_mechanism_for_set(Box(lo, hi), eps, prior=p)
    assert m.parameters["optimality"] == "exact"
    best = best_over_vertices(slice_vertices(p, eps, box_vertices(lo, hi)), p)
    assert mi(m, p) == pytest.approx(best, abs=1e-7)
    assert m.certified_eps <= eps + 1e-9


def test_vertex_sets_are_designed_with_a_certified_gap():
    # vertex sets have no ray list: branch-and-bound pricing certifies the optimum
    p = np.array([0.5, 0.35, 0.15])
    qs = np.array([[0.5, 0.35, 0.15], [0.3, 0.45, 0.25], [0.6, 0.3, 0.1]])
    eps = 0.6
    m = optimal_mechanism_for_set(VertexSet(qs), eps, prior=p)
    assert m.certified_eps <= eps + 1e-9
    exact = best_over_vertices(slice_vertices(p, eps, qs), p)
    got = mi(m, p)
    g = m.parameters["optimality_gap"]
    assert 0 <= g <= 1e-6
    assert got <= exact + 1e-8
    assert got >= exact * (1 - 1e-6) - 1e-12


def test_large_alphabet_is_designed_not_refused():
    p = np.full(13, 1 / 13)
    with pytest.warns(DeprecationWarning, match="allow_fallback"):
        optimal_mechanism(p, 0.05, allow_fallback=True)
    m = optimal_mechanism(p, 2.0, beta=0.01, max_seconds=120)
    assert m.parameters["optimality_gap"] <= 1e-6
    assert m.certified_eps <= 2.0 + 1e-9
    # the first privacy region has a closed form for any N: exact
    m = optimal_mechanism(p, 0.05)
    assert m.parameters["optimality"] == "exact"


@pytest.mark.parametrize("kwargs,err,match", [
    ({"prior": [0.5, 0.5], "eps": -0.1}, ValidationError, "eps"),
    ({"prior": [0.5, 0.5], "eps": math.inf}, ValidationError, "eps"),
    ({"prior": [0.5, 0.6], "eps": 0.1}, ValidationError, "prior"),
    ({"prior": [0.5, -0.5, 1.0], "eps": 0.1}, ValidationError, "prior"),
    ({"prior": [0.5, 0.5], "eps": 0.1, "beta": -1}, ValidationError, "beta"),
    ({"prior": [0.5, 0.5], "eps": 0.1, "utility": "entropy"}, ValidationError, "utility"),
    ({"prior": [0.5, 0.5], "eps": 0.1, "utility": np.ones((3, 2))}, ValidationError, "gain"),
])
def test_invalid_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        optimal_mechanism(**kwargs)


def test_infeasible_set():
    with pytest.raises(InfeasibleError, match="lower"):
        optimal_mechanism_for_set(Box([0.6, 0.6], [1.0, 1.0]), 0.5, prior=[0.5, 0.5])


@FAST
@given(st.floats(0.0, 30.0), st.floats(0.0, 4.0))
def test_eps_prime_formula(eps, beta):
    """eq. optimalepsdash against mpmath."""
    import mpmath

    ref = mpmath.log(mpmath.e**eps / (1 + beta * mpmath.e**eps / 2))
    assert eps_prime(eps, beta) == pytest.approx(float(ref), rel=1e-12, abs=1e-12)
    with pytest.raises(ValidationError, match="eps"):
        eps_prime(-1.0, beta)


@pytest.mark.parametrize("eps", [15.0, 29.0, 35.0, 710.0, 1e6])
@pytest.mark.parametrize("p,beta", [([0.5, 0.3, 0.2], 0.0), ([0.5, 0.3, 0.2], 0.1),
                                    ([0.5, 0.3, 0.2], 0.5), ([0.5, 0.5, 0.0], 0.5)])
def test_large_eps_still_certified(eps, p, beta):
    """exp(eps) overflows past 709.78 and LP entries of order e^-eps are below HiGHS'
    tolerance: designs stay certified (capped at eps = 30 / floor-repaired)."""
    for utility in ("mutual_information", "accuracy"):
        m = optimal_mechanism(p, eps, beta=beta, utility=utility)
        assert m.certified_eps <= eps + 1e-9
        assert pmlkit.leakage_capacity(m, L1Ball(p, beta)) <= eps + 1e-9
    # with a large budget the fixed prior gets the identity (I = H(X))
    if beta == 0:
        h = -sum(x * math.log(x) for x in p if x > 0)
        assert mi(optimal_mechanism(p, eps), p) == pytest.approx(h, abs=1e-9)


def test_randomized_response_huge_eps_is_not_the_identity():
    m = randomized_response(3, 1e6)
    assert m.certified_eps == pytest.approx(700.0)  # the documented cap, min(eps, 700)
    # the matrix itself realises it: log(diagonal / off-diagonal) for every distribution
    w = m.matrix
    assert math.log(w[0, 0]) - math.log(w[1, 0]) == pytest.approx(700.0, rel=1e-12)
    assert (m.matrix > 0).all()


def l1box_vertices(c: np.ndarray, beta: float, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Vertices of {Q in simplex, ||Q - c||_1 <= beta, lo <= Q <= hi} in (Q, s) space."""
    n = c.size
    eye = np.eye(n)
    z = np.zeros((n, n))
    a_ub = np.block([[-eye, z], [eye, -eye], [-eye, -eye],
                     [np.zeros((1, n)), np.ones((1, n))], [eye, z], [-eye, z]])
    b_ub = np.concatenate([np.zeros(n), c, -c, [beta], hi, -lo])
    a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
    v = enumerate_vertices(a_ub, b_ub, a_eq, np.ones(1))[:, :n]
    return np.unique(np.round(v, 10), axis=0)


@pytest.mark.parametrize("c,beta,lo,hi,eps", [
    ([0.5, 0.3, 0.2], 0.5, [0.35, 0.2, 0.05], [0.7, 0.4, 0.3], 0.4),
    ([0.6, 0.4, 0.0], 0.6, [0.4, 0.2, 0.0], [0.8, 0.6, 0.1], 1.0),
    ([0.45, 0.45, 0.1], 0.4, [0.3, 0.3, 0.0], [0.6, 0.6, 0.2], 0.1),
])
def test_l1_box_intersection_exact(c, beta, lo, hi, eps):
    from pmlkit.sets import L1BoxSet

    c, lo, hi = np.array(c), np.array(lo), np.array(hi)
    uset = L1BoxSet(c, beta, lo, hi)
    qs = l1box_vertices(c, beta, lo, hi)
    m = optimal_mechanism_for_set(uset, eps, utility="accuracy")
    ref = linear_over_vertices(c, eps, qs, np.eye(c.size))
    assert pmlkit.utility.accuracy(m, c) == pytest.approx(ref, abs=1e-6)
    assert m.certified_eps <= eps + 1e-9
    s = optimal_mechanism_for_set(uset, eps)
    assert s.parameters["optimality"] == "exact"
    best = best_over_vertices(slice_vertices(c, eps, qs), c)
    assert mi(s, c) == pytest.approx(best, abs=1e-7)
    assert s.certified_eps <= eps + 1e-9
