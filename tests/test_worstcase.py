"""Exact worst-case leakage (pmlkit.worstcase) against independent computations:
a generic LP per column (scipy HiGHS), brute force over vertices, sampled distributions,
and the paper's Example boundExtrMech."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

import pmlkit as pk
from pmlkit.errors import ValidationError
from pmlkit.worstcase import worst_case_distribution

W_EXTR = np.array([[.325, .225, .225, .225], [.45, .1, .225, .225],
                   [.45, .225, .1, .225], [.45, .225, .225, .1]])
P_EXTR = np.array([.4, .2, .2, .2])


def lp_min_ball(p: np.ndarray, beta: float, w: np.ndarray) -> float:
    """min Q.w over {Q >= 0, sum Q = 1, sum |Q - p| <= beta}: variables (Q, s), s >= |Q - p|."""
    n = p.size
    c = np.concatenate((w, np.zeros(n)))
    eye = np.eye(n)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
    b_ub = np.concatenate((p, -p, [beta]))
    a_eq = np.concatenate((np.ones(n), np.zeros(n)))[None, :]
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0],
                  bounds=[(0, None)] * (2 * n), method="highs")
    assert res.status == 0
    return float(res.fun)


def lp_min_box(lo: np.ndarray, hi: np.ndarray, w: np.ndarray) -> float:
    res = linprog(w, A_eq=np.ones((1, lo.size)), b_eq=[1.0],
                  bounds=list(zip(lo, hi, strict=True)), method="highs")
    assert res.status == 0
    return float(res.fun)


def lp_capacity(w: np.ndarray, solve) -> float:
    vals = [math.log(w[:, j].max()) - math.log(solve(w[:, j])) for j in range(w.shape[1])
            if w[:, j].max() > 0]
    return max(vals)


def random_mechanism(rng, n, m, zeros=0.0):
    w = rng.random((n, m)) * (rng.random((n, m)) >= zeros)
    w[np.arange(n), rng.integers(0, m, n)] += 0.1
    return w / w.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(12))
def test_ball_capacity_equals_lp(seed):
    rng = np.random.default_rng(seed)
    n, m = rng.integers(2, 7), rng.integers(2, 7)
    w = random_mechanism(rng, n, m)
    p = rng.dirichlet(np.ones(n))
    beta = float(rng.uniform(0, 2.2))
    ball = pk.L1Ball(p, beta)
    exact = pk.leakage_capacity(w, ball)
    ref = lp_capacity(w, lambda col: lp_min_ball(p, beta, col))
    assert exact == pytest.approx(ref, rel=1e-7, abs=1e-9)
    np.testing.assert_allclose(ball.min_linear(w), [lp_min_ball(p, beta, w[:, j])
                                                    for j in range(m)], atol=1e-9)


def test_extremal_example_equality():
    assert pk.eps_min(W_EXTR, P_EXTR) == pytest.approx(math.log(9 / 8), rel=1e-13)
    for beta in (0.01, 0.1, 0.2, 0.39):
        s = pk.leakage_sensitivity(W_EXTR, P_EXTR, pk.L1Ball(P_EXTR, beta))
        hand = -math.log(1 - beta / 2 * (9 / 8 - 1) / 0.2)
        assert s == pytest.approx(hand, rel=1e-12)
        q = worst_case_distribution(W_EXTR, pk.L1Ball(P_EXTR, beta))
        assert pk.eps_min(W_EXTR, q) == pytest.approx(math.log(9 / 8) + hand, rel=1e-12)


def brute_vertex_capacity(w, v):
    return max(pk.eps_min(w, row) for row in v)


@pytest.mark.parametrize("seed", range(8))
def test_box_capacity_equals_lp(seed):
    rng = np.random.default_rng(100 + seed)
    n, m = rng.integers(2, 7), rng.integers(2, 7)
    w = random_mechanism(rng, n, m, zeros=0.3 if seed % 2 else 0.0)
    q = rng.dirichlet(np.ones(n))
    lo = np.clip(q - rng.random(n) * 0.2, 0.01, 1)
    hi = np.clip(q + rng.random(n) * 0.2, 0, 1)
    box = pk.Box(lo, hi)
    assert pk.leakage_capacity(w, box) == pytest.approx(
        lp_capacity(w, lambda col: lp_min_box(lo, hi, col)), rel=1e-7)


@pytest.mark.parametrize("seed", range(6))
def test_vertex_capacity_equals_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    n, m, k = rng.integers(2, 6), rng.integers(2, 6), rng.integers(1, 5)
    w = random_mechanism(rng, n, m)
    v = rng.dirichlet(np.ones(n), size=k)
    vs = pk.VertexSet(v)
    assert pk.leakage_capacity(w, vs) == pytest.approx(brute_vertex_capacity(w, v), rel=1e-12)
    q = worst_case_distribution(w, vs)
    assert pk.eps_min(w, q) == pytest.approx(pk.leakage_capacity(w, vs), rel=1e-12)


@st.composite
def mech_and_set(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, m = draw(st.integers(2, 6)), draw(st.integers(1, 6))
    w = random_mechanism(rng, n, m, zeros=draw(st.sampled_from([0.0, 0.4])))
    p = rng.dirichlet(np.ones(n))
    kind = draw(st.sampled_from(["ball", "box", "vertices"]))
    if kind == "ball":
        uset = pk.L1Ball(p, draw(st.sampled_from([0.01, 0.1, 0.5, 1.5, 2.0])))
    elif kind == "box":
        r = draw(st.sampled_from([0.01, 0.1, 0.3]))
        uset = pk.Box(np.clip(p - r, 0, 1), np.clip(p + r, 0, 1))
    else:
        uset = pk.VertexSet(np.vstack([p, rng.dirichlet(np.ones(n), size=3)]))
    return w, p, uset


@given(mech_and_set(), st.integers(0, 10**6))
def test_capacity_dominates_every_sampled_distribution(case, seed):
    w, p, uset = case
    cap = pk.leakage_capacity(w, uset)
    qs = uset.sample(50, seed)
    values = [pk.eps_min(w, q / q.sum()) for q in qs]
    assert max(values) <= cap + 1e-9
    assert pk.eps_min(w, p) <= cap + 1e-9
    s = pk.leakage_sensitivity(w, p, uset)
    assert s == (math.inf if math.isinf(cap) else pytest.approx(cap - pk.eps_min(w, p)))


@given(mech_and_set())
def test_worst_case_distribution_attains_capacity(case):
    w, _, uset = case
    cap = pk.leakage_capacity(w, uset)
    q = worst_case_distribution(w, uset)
    assert uset.contains(q)
    if math.isfinite(cap):
        assert pk.eps_min(w, q / q.sum()) == pytest.approx(cap, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n,beta", [(2, 0.3), (3, 0.5), (5, 0.1)])
def test_identity_mechanism_hand_values(n, beta):
    # column j: max W = 1, min Q(x_j) = 1/n - beta/2  ->  C = -log(1/n - beta/2)
    ball = pk.L1Ball(np.full(n, 1 / n), beta)
    assert pk.leakage_capacity(np.eye(n), ball) == pytest.approx(-math.log(1 / n - beta / 2))
    assert pk.leakage_capacity(np.eye(n), pk.L1Ball(np.full(n, 1 / n), 2 / n)) == math.inf


def test_capacity_infinite_or_ignored_columns():
    w = np.eye(3)
    # x_3 has probability 0 at the center but up to 0.05 in the ball: pml(y_3) unbounded
    assert pk.leakage_capacity(w, pk.L1Ball([0.5, 0.5, 0.0], 0.1)) == math.inf
    assert pk.leakage_sensitivity(w, [0.5, 0.5, 0.0], pk.L1Ball([0.5, 0.5, 0.0], 0.1)) \
        == math.inf
    # radius 0: y_3 never occurs and is ignored
    assert pk.leakage_capacity(w, pk.L1Ball([0.5, 0.5, 0.0], 0.0)) == pytest.approx(math.log(2))
    box = pk.Box([0.4, 0.4, 0.0], [0.6, 0.6, 0.0])
    assert pk.leakage_capacity(w, box) == pytest.approx(-math.log(0.4))


def two_singular(n: int) -> np.ndarray:
    w = np.zeros((n, n))
    w[np.arange(n), np.arange(n)] = 0.5
    w[np.arange(n), (np.arange(n) - 1) % n] = 0.5
    return w


@pytest.mark.parametrize("beta", [0.01, 0.05, 0.1, 0.19])
def test_k_singular_mechanism_equality(beta):
    # Figure upperbound (b): N = 10, 2-singular, uniform prior, eps = log 5 (region 9 > 1);
    # every column has a zero, so Thm l1gamma's k > 1 bound holds with equality
    n = 10
    w = two_singular(n)
    p = np.full(n, 0.1)
    assert pk.eps_min(w, p) == pytest.approx(math.log(5))
    s = pk.leakage_sensitivity(w, p, pk.L1Ball(p, beta))
    hand = -math.log(1 - beta * 5 / 2)
    assert s == pytest.approx(hand, rel=1e-12)
    assert pk.sensitivity_bound(p, eps=math.log(5), beta=beta) == pytest.approx(s, rel=1e-12)


def test_extremal_example_bound_equality():
    for beta in (0.01, 0.2, 0.39):
        s = pk.leakage_sensitivity(W_EXTR, P_EXTR, pk.L1Ball(P_EXTR, beta))
        assert pk.sensitivity_bound(P_EXTR, eps=math.log(9 / 8), beta=beta) == pytest.approx(
            s, rel=1e-12)


def test_bad_arguments():
    ball = pk.L1Ball(P_EXTR, 0.1)
    with pytest.raises(ValidationError, match="prior must lie in the uncertainty set"):
        pk.leakage_sensitivity(W_EXTR, [0.7, 0.1, 0.1, 0.1], ball)
    with pytest.raises(ValidationError, match="UncertaintySet"):
        pk.leakage_capacity(W_EXTR, P_EXTR)
    with pytest.raises(ValidationError, match="3 categories but mechanism has 4 rows"):
        pk.leakage_capacity(W_EXTR, pk.L1Ball([0.2, 0.3, 0.5], 0.1))
    with pytest.raises(ValidationError, match="NaN"):
        pk.leakage_capacity([[0.5, math.nan], [0.5, 0.5]], pk.L1Ball([0.5, 0.5], 0.1))
    with pytest.raises(ValidationError, match="sum to 1"):
        pk.leakage_capacity([[0.5, 0.6], [0.5, 0.5]], pk.L1Ball([0.5, 0.5], 0.1))
    with pytest.raises(ValidationError, match="must match"):
        pk.leakage_sensitivity(W_EXTR, [0.5, 0.5], ball)


def test_mechanism_certificate_round_trip(tmp_path):
    ball = pk.L1Ball(P_EXTR, 0.1)
    cap = pk.leakage_capacity(W_EXTR, ball)
    mech = pk.Mechanism(W_EXTR, uncertainty_set=ball.to_dict(), certified_eps=cap)
    path = mech.save(tmp_path / "m.json")
    assert pk.Mechanism.load(path).certified_eps == cap
    assert pk.leakage_capacity(pk.Mechanism.load(path), ball) == cap
    low = pk.Mechanism(W_EXTR, uncertainty_set=ball.to_dict(), certified_eps=cap - 1e-3)
    with pytest.raises(pk.errors.ValidationError, match="false certificate"):
        low.save(tmp_path / "low.json")  # save never writes it; a file written by hand:
    (tmp_path / "low.json").write_text(low.to_json())
    with pytest.raises(pk.MechanismFileError, match="guarantee does not hold"):
        pk.Mechanism.load(tmp_path / "low.json")


def test_accepts_an_object_holding_a_set():
    # pmlkit.confidence.ConfidenceSet exposes the set as .set
    class Holder:
        set = pk.L1Ball(P_EXTR, 0.1)

    assert pk.leakage_capacity(W_EXTR, Holder()) == pk.leakage_capacity(W_EXTR, Holder.set)


def box_vertices(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """All vertices of {lo <= Q <= hi, sum Q = 1}: every coordinate but one at a bound."""
    import itertools

    n = lo.size
    out = []
    for free in range(n):
        others = [i for i in range(n) if i != free]
        for choice in itertools.product((0, 1), repeat=n - 1):
            q = np.empty(n)
            for i, c in zip(others, choice, strict=True):
                q[i] = hi[i] if c else lo[i]
            q[free] = 1.0 - q[others].sum()
            if lo[free] - 1e-12 <= q[free] <= hi[free] + 1e-12:
                out.append(q)
    return np.array(out)


@given(st.integers(0, 2**32 - 1))
def test_box_capacity_is_max_over_enumerated_vertices(seed):
    # Prop. epsPMLisconvex / Cor. extremalSet: a convex function peaks at a vertex
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(1, 5))
    w = random_mechanism(rng, n, m)
    q = rng.dirichlet(np.ones(n))
    lo = np.clip(q - rng.random(n) * 0.3, 0.0, 1.0)
    hi = np.clip(q + rng.random(n) * 0.3, 0.0, 1.0)
    box = pk.Box(lo, hi)
    cap = pk.leakage_capacity(w, box)
    # no guard on finiteness: an infinite capacity must be matched by an infinite vertex
    ref = max(pk.eps_min(w, v / v.sum()) for v in box_vertices(lo, hi))
    assert cap == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_randomized_response_eps_50_hand_value():
    # W = [[1-d, d], [d, 1-d]], d = e^-50 / (1 + e^-50); the ball moves beta/2 away from y0
    mpmath.mp.dps = 60
    e = mpmath.exp(-50)
    d = e / (1 + e)
    w = np.array([[float(1 - d), float(d)], [float(d), float(1 - d)]])
    beta = 0.5
    q0 = mpmath.mpf(0.5) - mpmath.mpf(beta) / 2
    qy = q0 * mpmath.mpf(w[0, 0]) + (1 - q0) * mpmath.mpf(w[1, 0])
    ref = mpmath.log(mpmath.mpf(w[0, 0]) / qy)
    got = pk.leakage_capacity(w, pk.L1Ball([0.5, 0.5], beta))
    assert got == pytest.approx(float(ref), rel=1e-13)
