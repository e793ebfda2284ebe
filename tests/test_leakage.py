"""PML of discrete mechanisms (pmlkit.leakage) against independent computations:
Bayes posteriors in mpmath, hand-derived values, brute-force privacy regions."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pmlkit as pk
from pmlkit.errors import PMLError, ValidationError

W_EXTR = np.array([[.325, .225, .225, .225], [.45, .1, .225, .225],
                   [.45, .225, .1, .225], [.45, .225, .225, .1]])
P_EXTR = np.array([.4, .2, .2, .2])


def rr(n: int, eps: float) -> np.ndarray:
    w = (math.exp(eps) - 1) * np.eye(n) + 1
    return w / w.sum(axis=1, keepdims=True)


def mp_pml(w: np.ndarray, p: np.ndarray) -> list[float]:
    """PML as D_inf(P_{X|Y=y} || P_X) from the Bayes posterior, in 50-digit mpmath."""
    mpmath.mp.dps = 50
    out = []
    for j in range(w.shape[1]):
        py = mpmath.fsum(mpmath.mpf(p[i]) * mpmath.mpf(w[i, j]) for i in range(len(p)))
        if py == 0:
            out.append(math.nan)
            continue
        ratios = [mpmath.mpf(p[i]) * mpmath.mpf(w[i, j]) / py / mpmath.mpf(p[i])
                  for i in range(len(p)) if p[i] > 0]
        out.append(float(mpmath.log(max(ratios))))
    return out


@st.composite
def mech_prior(draw, max_n=6, max_m=6):
    n = draw(st.integers(2, max_n))
    m = draw(st.integers(1, max_m))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    w = rng.random((n, m)) * (rng.random((n, m)) > draw(st.sampled_from([0.0, 0.3])))
    w[np.arange(n), rng.integers(0, m, n)] += 0.05
    w /= w.sum(axis=1, keepdims=True)
    p = rng.dirichlet(np.ones(n))
    return w, p


@given(mech_prior())
def test_pml_matches_bayes_posterior(wp):
    w, p = wp
    np.testing.assert_allclose(pk.pml(w, p), mp_pml(w, p), rtol=1e-10, atol=1e-12)


def test_pml_tiny_output_probability_no_underflow():
    # P_Y[1] = 1e-200 * 1e-200 = 1e-400 underflows in float64; pml = log(1e-200 / 1e-400)
    w = np.array([[1.0, 0.0], [1.0 - 1e-200, 1e-200]])
    p = np.array([1.0, 1e-200])
    out = pk.pml(w, p)
    assert out[1] == pytest.approx(200 * math.log(10), rel=1e-12)
    assert out[0] == pytest.approx(0.0, abs=1e-15)


def test_pml_nan_for_impossible_outcome_and_prior_zero():
    w = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    out = pk.pml(w, [1.0, 0.0])
    assert math.isnan(out[2])
    assert out[0] == pytest.approx(0.0)  # max_i W = 0.5 = P_Y
    assert out[1] == pytest.approx(0.0)
    assert pk.eps_min(w, [1.0, 0.0]) == pytest.approx(0.0)


def test_extremal_example_eps_min_hand_value():
    # P_Y = p @ W = (0.4, 0.2, 0.2, 0.2); column 0: .45/.4 = 9/8, others .225/.2 = 9/8
    assert pk.eps_min(W_EXTR, P_EXTR) == pytest.approx(math.log(9 / 8), rel=1e-13)
    np.testing.assert_allclose(pk.pml(W_EXTR, P_EXTR), [math.log(9 / 8)] * 4, rtol=1e-13)


@pytest.mark.parametrize("n,eps", [(2, 0.5), (4, 1.0), (10, math.log(5))])
def test_randomized_response_uniform_prior(n, eps):
    # uniform prior: P_Y = 1/n, max_i W = e^eps / (e^eps + n - 1)
    w = rr(n, eps)
    hand = math.log(n * math.exp(eps) / (math.exp(eps) + n - 1))
    assert pk.eps_min(w, np.full(n, 1 / n)) == pytest.approx(hand, rel=1e-12)
    assert pk.ldp_epsilon(w) == pytest.approx(eps, rel=1e-12)
    assert pk.maximal_leakage(w) == pytest.approx(hand, rel=1e-12)


def test_identity_and_constant_mechanisms():
    p = np.array([0.5, 0.3, 0.2])
    assert pk.eps_min(np.eye(3), p) == pytest.approx(-math.log(0.2))
    assert pk.eps_min(np.eye(3), p) == pytest.approx(pk.eps_max(p))
    assert pk.eps_min(np.full((3, 2), 0.5), p) == 0.0
    assert pk.maximal_leakage(np.eye(3)) == pytest.approx(math.log(3))
    assert pk.ldp_epsilon(np.eye(3)) == math.inf
    assert pk.ldp_epsilon(np.full((3, 2), 0.5)) == 0.0
    assert pk.eps_max([0.5, 0.5, 0.0]) == math.inf


def test_ldp_epsilon_ignores_all_zero_columns():
    w = np.array([[0.25, 0.75, 0.0], [0.5, 0.5, 0.0]])
    assert pk.ldp_epsilon(w) == pytest.approx(math.log(2))


@given(mech_prior())
def test_eps_min_between_zero_and_eps_max(wp):
    w, p = wp
    e = pk.eps_min(w, p)
    assert 0.0 <= e <= pk.eps_max(p) + 1e-12


@given(mech_prior())
def test_maximal_leakage_is_log_mean_exp_pml(wp):
    # sum_y max_x W = sum_y P_Y(y) exp(pml(y)) for a full-support prior
    w, p = wp
    py = p @ w
    ok = py > 0
    ref = math.log(math.fsum(py[ok] * np.exp(pk.pml(w, p)[ok])))
    assert pk.maximal_leakage(w) == pytest.approx(ref, rel=1e-10, abs=1e-12)


@given(mech_prior(), st.floats(0, 1))
def test_eps_min_is_convex_in_prior(wp, lam):
    # Prop. epsPMLisconvex
    w, p = wp
    q = np.random.default_rng(len(p)).dirichlet(np.ones(len(p)))
    mix = lam * p + (1 - lam) * q
    mix /= mix.sum()
    lhs = pk.eps_min(w, mix)
    assert lhs <= lam * pk.eps_min(w, p) + (1 - lam) * pk.eps_min(w, q) + 1e-9


def brute_thresholds(p):
    s = sorted(p, reverse=True)
    n = len(s)
    return [0.0] + [-math.log(math.fsum(s[: n - k])) for k in range(1, n)]


def brute_region(eps, p):
    t = brute_thresholds(p)
    n = len(p)
    for k in range(1, n):
        if t[k - 1] <= eps < t[k]:
            return k
    return n


@given(st.lists(st.floats(0.01, 1), min_size=2, max_size=8), st.floats(0, 6))
def test_privacy_regions_match_definition(raw, eps):
    p = np.array(raw) / sum(raw)
    np.testing.assert_allclose(pk.privacy_region_thresholds(p), brute_thresholds(p),
                               rtol=1e-12, atol=1e-15)
    assert pk.privacy_region(eps, p) == brute_region(eps, p)


def test_privacy_region_edges():
    p = [0.4, 0.2, 0.2, 0.2]
    t = pk.privacy_region_thresholds(p)
    assert t[-1] == pytest.approx(-math.log(0.4))  # eps_{N-1} = -log p_max
    assert pk.privacy_region(0.0, p) == 1
    assert pk.privacy_region(math.log(9 / 8), p) == 1
    assert pk.privacy_region(-math.log(0.8) - 1e-9, p) == 1
    assert pk.privacy_region(-math.log(0.8) + 1e-9, p) == 2
    assert pk.privacy_region(t[1], p) == 2  # left-closed intervals
    assert pk.privacy_region(t[-1], p) == 4
    assert pk.privacy_region(50.0, p) == 4
    # uniform N = 10: log 5 = -log(2/10) = eps_8, so region 9
    assert pk.privacy_region(math.log(5), np.full(10, 0.1)) == 9
    assert pk.privacy_region(np.float32(0.1), p) == 1


def test_accepts_mechanism_object_and_numpy_scalars():
    m = pk.Mechanism(W_EXTR)
    assert pk.eps_min(m, P_EXTR) == pytest.approx(math.log(9 / 8))
    assert pk.eps_min(m, tuple(np.float64(x) for x in P_EXTR)) == pytest.approx(math.log(9 / 8))
    assert pk.maximal_leakage(m) == pytest.approx(pk.maximal_leakage(W_EXTR))


@pytest.mark.parametrize("w,p,match", [
    ([[0.5, math.nan], [0.5, 0.5]], [0.5, 0.5], "NaN"),
    ([[0.5, math.inf], [0.5, 0.5]], [0.5, 0.5], "inf"),
    ([[1.5, -0.5], [0.5, 0.5]], [0.5, 0.5], ">= 0"),
    ([[0.5, 0.6], [0.5, 0.5]], [0.5, 0.5], "sum to 1"),
    ([[0.5, 0.5], [0.5, 0.5]], [0.5, 0.6], "sum to 1"),
    ([[0.5, 0.5], [0.5, 0.5]], [0.2, 0.3, 0.5], "must match"),
    ([[0.5, 0.5], [0.5, 0.5]], [0.5, math.nan], "NaN"),
    ([0.5, 0.5], [1.0], "2-D"),
])
def test_bad_input_is_rejected(w, p, match):
    with pytest.raises(ValidationError, match=match):
        pk.pml(w, p)
    with pytest.raises(ValidationError, match=match):
        pk.eps_min(w, p)


@pytest.mark.parametrize("eps", [-0.1, math.nan, math.inf, "1"])
def test_privacy_region_rejects_bad_eps(eps):
    with pytest.raises(ValidationError, match="eps"):
        pk.privacy_region(eps, [0.5, 0.5])


def test_errors_are_pml_errors_and_value_errors():
    with pytest.raises(PMLError, match="prior entries must be >= 0"):
        pk.eps_max([0.5, -0.5, 1.0])
    with pytest.raises(ValueError, match="rows must sum to 1"):
        pk.maximal_leakage([[0.3, 0.3]])
