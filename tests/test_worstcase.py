"""Exact worst-case leakage (pmlkit.worstcase) against independent computations:
a generic LP per column (scipy HiGHS), brute force over vertices, sampled distributions,
and the paper's Example boundExtrMech."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

import pmlkit as pk
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
