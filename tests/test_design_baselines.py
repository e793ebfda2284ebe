"""Baselines and closed forms of pmlkit.design, against hand formulas and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit.design import (
    extremal_binary,
    extremal_high_privacy,
    extremal_mechanism,
    identity_mechanism,
    k_singular,
    optimal_binary,
    randomized_response,
)
from pmlkit.errors import ValidationError
from pmlkit.leakage import eps_min, ldp_epsilon

# ---------------------------------------------------------------- brute force (binary)
GRID = np.linspace(0.0, 1.0, 501)
A, B = np.meshgrid(GRID, GRID, indexing="ij")  # W = [[a, 1-a], [b, 1-b]]


def _grid_mi(p1: float) -> np.ndarray:
    p = np.array([p1, 1 - p1])
    cols = [np.stack([A, B]), np.stack([1 - A, 1 - B])]
    total = np.zeros_like(A)
    for c in cols:
        py = p[0] * c[0] + p[1] * c[1]
        for i in range(2):
            with np.errstate(divide="ignore", invalid="ignore"):
                t = p[i] * c[i] * np.log(c[i] / py)
            total += np.where(p[i] * c[i] > 0, t, 0.0)
    return total


def _grid_eps(q1: float) -> np.ndarray:
    """eps_min of every grid mechanism under the prior (q1, 1 - q1)."""
    out = np.zeros_like(A)
    for c in (np.stack([A, B]), np.stack([1 - A, 1 - B])):
        py = q1 * c[0] + (1 - q1) * c[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.log(np.maximum(c[0], c[1]) / py)
        out = np.maximum(out, np.where(py > 0, v, 0.0))
    return out


def _grid_best(p1: float, beta: float, eps: float) -> float:
    """Max MI at p_hat over grid mechanisms that are eps-PML for the whole binary ball.
    PML is convex in the prior (Prop. epsPMLisconvex), so the ball's two end points
    suffice."""
    lo, hi = max(p1 - beta / 2, 0.0), min(p1 + beta / 2, 1.0)
    ok = (_grid_eps(lo) <= eps + 1e-12) & (_grid_eps(hi) <= eps + 1e-12)
    return float(_grid_mi(p1)[ok].max())


# ---------------------------------------------------------------- randomized response
@pytest.mark.parametrize("n,eps", [(2, 0.0), (2, 1.0), (3, 0.5), (7, 2.0), (4, 40.0)])
def test_randomized_response(n, eps):
    m = randomized_response(n, eps)
    w = m.matrix
    e = math.exp(eps)
    assert w[0, 0] == pytest.approx(e / (e + n - 1))
    assert w[0, 1] == pytest.approx(1 / (e + n - 1))
    assert ldp_epsilon(w) == pytest.approx(eps, abs=1e-9)
    assert m.certified_eps == pytest.approx(eps, abs=1e-9)
    assert m.certified_eps <= eps + 1e-9


def test_warner():
    eps = 0.7
    e = math.exp(eps)
    np.testing.assert_allclose(randomized_response(2, eps).matrix,
                               np.array([[e, 1], [1, e]]) / (1 + e))


def test_identity():
    m = identity_mechanism(3)
    np.testing.assert_array_equal(m.matrix, np.eye(3))
    p = [0.5, 0.3, 0.2]
    assert eps_min(m, p) == pytest.approx(-math.log(0.2))


# ---------------------------------------------------------------- fixed-prior closed forms
def test_high_privacy_is_paper_example():
    """Paper Example boundExtrMech (grosse2023extremal Example 1)."""
    m = extremal_high_privacy([0.4, 0.2, 0.2, 0.2], math.log(9 / 8))
    expected = np.array([[0.325, 0.225, 0.225, 0.225], [0.45, 0.1, 0.225, 0.225],
                         [0.45, 0.225, 0.1, 0.225], [0.45, 0.225, 0.225, 0.1]])
    np.testing.assert_allclose(m.matrix, expected, atol=1e-15)
    np.testing.assert_allclose(pmlkit.pml(m, [0.4, 0.2, 0.2, 0.2]), math.log(9 / 8))


def test_high_privacy_region_checked():
    p = [0.4, 0.3, 0.3]
    limit = -math.log(0.7)
    extremal_high_privacy(p, limit)
    with pytest.raises(ValidationError, match="eps"):
        extremal_high_privacy(p, limit + 1e-6)
    with pytest.raises(ValidationError, match="prior"):
        extremal_high_privacy([1.0, 0.0], 0.0)


@pytest.mark.parametrize("p1", [0.5, 0.6, 0.8, 0.95])
@pytest.mark.parametrize("eps", [0.0, 0.1, 0.4, 0.9, 2.0, 4.0])
def test_binary_fixed_prior_matches_brute_force(p1, eps):
    m = extremal_binary([p1, 1 - p1], eps)
    assert m.certified_eps <= eps + 1e-9
    mi = pmlkit.mutual_information(m, [p1, 1 - p1])
    best = _grid_best(p1, 0.0, eps)
    assert mi >= best - 1e-9  # optimal: no grid point beats it
    assert mi <= best + 5e-3  # and the grid gets close to it


def test_binary_fixed_prior_order_and_region2():
    # p = (0.3, 0.7) is (0.7, 0.3) permuted; region 2 gives one zero
    eps = 1.0
    m = extremal_binary([0.3, 0.7], eps)
    x = (math.exp(-eps) - 0.3) / 0.7
    np.testing.assert_allclose(m.matrix, [[1.0, 0.0], [x, 1 - x]], atol=1e-15)
    np.testing.assert_allclose(extremal_binary([0.5, 0.5], 10.0).matrix, np.eye(2))


@pytest.mark.parametrize("n,k", [(4, 1), (4, 2), (6, 3), (10, 2), (5, 5)])
def test_k_singular(n, k):
    m = k_singular(n, k)
    w = m.matrix
    assert set(np.unique(w)) <= {0.0, 1.0 / k}
    np.testing.assert_allclose(w.sum(axis=0), 1.0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    u = np.full(n, 1.0 / n)
    assert pmlkit.mutual_information(m, u) == pytest.approx(math.log(n / k), abs=1e-12)
    assert eps_min(m, u) == pytest.approx(math.log(n / k), abs=1e-12)
    assert extremal_mechanism(u, math.log(n / k)) is not None


def test_extremal_mechanism_dispatch():
    assert extremal_mechanism([0.2, 0.3, 0.5], 5.0) is None  # no closed form here
    assert extremal_mechanism([0.2, 0.3, 0.5], 0.1).designer == "extremal_high_privacy"
    assert extremal_mechanism([0.2, 0.8], 3.0).designer == "extremal_binary"


# ---------------------------------------------------------------- Thm optimalbinary
def _thm(p1: float, beta: float, eps: float) -> np.ndarray:
    """The theorem's matrix, typed from the paper independently of the library."""
    e = math.exp(eps)
    return np.array([[e * (1 - p1 + beta / 2), 1 - e * (1 - p1 - beta / 2)],
                     [1 - e * (p1 - beta / 2), e * (p1 + beta / 2)]]) / (1 + beta * e)


@pytest.mark.parametrize("p1,beta,eps", [(0.5, 0.2, 0.5), (0.7, 0.1, 0.3), (0.9, 0.15, 0.1),
                                         (0.6, 0.0, 0.4), (0.55, 0.5, 1.0)])
def test_optimal_binary_matches_theorem_and_brute_force(p1, beta, eps):
    m = optimal_binary([p1, 1 - p1], beta=beta, eps=eps)
    np.testing.assert_allclose(m.matrix, _thm(p1, beta, eps), atol=1e-12)
    assert m.certified_eps <= eps + 1e-9
    mi = pmlkit.mutual_information(m, [p1, 1 - p1])
    best = _grid_best(p1, beta, eps)
    assert mi >= best - 1e-9
    assert mi <= best + 5e-3


def test_optimal_binary_permutes_back():
    a = optimal_binary([0.7, 0.3], beta=0.1, eps=0.3).matrix
    b = optimal_binary([0.3, 0.7], beta=0.1, eps=0.3).matrix
    np.testing.assert_allclose(b, a[::-1, ::-1], atol=1e-15)


def test_optimal_binary_remark_is_randomized_response():
    """Remark binarymechisRR: p1 = 1/2 and beta = 1 give Warner's mechanism."""
    for eps in (0.1, 1.0, 3.0):
        np.testing.assert_allclose(optimal_binary([0.5, 0.5], beta=1.0, eps=eps).matrix,
                                   randomized_response(2, eps).matrix, atol=1e-15)


@settings(max_examples=30)
@given(st.floats(0.5, 0.95), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_optimal_binary_certified(p1, bfrac, efrac):
    beta = bfrac * 2 * (1 - p1) * 0.999
    eps = efrac * -math.log(p1 - beta / 2)
    m = optimal_binary([p1, 1 - p1], beta=beta, eps=eps)
    assert m.certified_eps <= eps + 1e-9
    assert m.certified_eps >= eps - 1e-7  # extremal: tight


@pytest.mark.parametrize("args,match", [
    (([0.5, 0.5], 0.1, -0.1), "eps"),
    (([0.5, 0.5], 0.1, math.nan), "eps"),
    (([0.5, 0.5], -0.1, 0.1), "beta"),
    (([0.7, 0.3], 0.61, 0.1), "beta must be < 2 p2"),
    (([0.7, 0.3], 0.1, 0.6), r"eps must be <= -log\(p1 - beta/2\)"),
    (([0.5, 0.6], 0.1, 0.1), "prior"),
    (([1.0, 0.0], 0.0, 0.1), "interior"),
    (([0.2, 0.3, 0.5], 0.1, 0.1), "2 entries"),
])
def test_optimal_binary_conditions(args, match):
    prior, beta, eps = args
    with pytest.raises(ValidationError, match=match):
        optimal_binary(prior, beta=beta, eps=eps)


def test_optimal_binary_old_spelling_warns_and_gives_the_same_mechanism():
    """``optimal_binary(p_hat, beta, eps)`` (positional, or ``p_hat=``) keeps working for
    one release with a DeprecationWarning, and gives the same matrix and guarantee."""
    new = optimal_binary([0.3, 0.7], beta=0.1, eps=0.4)
    with pytest.warns(DeprecationWarning, match="by position"):
        old = optimal_binary([0.3, 0.7], 0.1, 0.4)
    with pytest.warns(DeprecationWarning, match="'p_hat' is deprecated"):
        named = optimal_binary(p_hat=[0.3, 0.7], beta=0.1, eps=0.4)
    for other in (old, named):
        np.testing.assert_array_equal(other.matrix, new.matrix)
        assert other.guarantee == new.guarantee


def test_numpy_scalars_accepted():
    m = optimal_binary(np.array([0.6, 0.4]), beta=np.float32(0.1), eps=np.float64(0.3))
    assert m.certified_eps <= 0.3 + 1e-9
    assert randomized_response(np.int64(3), np.float32(1.0)).shape == (3, 3)
