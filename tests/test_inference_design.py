"""The estimation-error design utility (pmlkit.design.estimation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pmlkit
from pmlkit.design.estimation import EstimationError, estimation_mse


def krr(n: int, eps: float) -> np.ndarray:
    e = math.exp(eps)
    w = np.full((n, n), 1.0 / (e + n - 1))
    np.fill_diagonal(w, e / (e + n - 1))
    return w


def test_identity_mechanism_closed_form():
    # no noise: the MLE is the empirical distribution, E||P_hat - P||^2 = (1 - sum p^2) / n
    p = np.array([0.1, 0.2, 0.3, 0.4])
    assert estimation_mse(np.eye(4), p, 500) == pytest.approx((1 - np.sum(p**2)) / 500,
                                                              rel=1e-12)


def test_square_mechanism_equals_inversion_covariance():
    # square invertible W: the MLE is the inversion inside the simplex, whose exact
    # covariance is A (diag q - q q^T) A^T / n with A = W^{-T}
    w = krr(5, 0.8)
    p = np.array([0.3, 0.25, 0.2, 0.15, 0.1])
    q = p @ w
    a = np.linalg.inv(w.T)
    cov = a @ (np.diag(q) - np.outer(q, q)) @ a.T
    assert estimation_mse(w, p, 1000) == pytest.approx(np.trace(cov) / 1000, rel=1e-9)


def test_monte_carlo_agrees_with_the_asymptotic_error():
    from pmlkit.inference import estimate_from_counts

    w = krr(3, 1.0)
    p = np.array([0.5, 0.3, 0.2])
    n = 20_000
    rng = np.random.default_rng(4)
    errs = [np.sum((estimate_from_counts(c, w, method="inversion").estimate - p) ** 2)
            for c in rng.multinomial(n, p @ w, size=400)]
    # 400 replications: relative standard error of the mean about 7%
    assert np.mean(errs) == pytest.approx(estimation_mse(w, p, n), rel=0.25)


def test_not_identified_is_infinite():
    w = np.array([[0.5, 0.5], [0.5, 0.5], [0.1, 0.9]])
    assert estimation_mse(w, [0.2, 0.3, 0.5], 100) == math.inf


def test_design_beats_mi_design_and_is_certified():
    rng = np.random.default_rng(0)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    samples = rng.choice(4, size=4000, p=p)
    util = EstimationError(10_000)
    res = pmlkit.design_from_samples(samples, 1.0, 1e-6, utility=util)
    mi = pmlkit.design_from_samples(samples, 1.0, 1e-6)
    pe = np.asarray(res.guarantee.estimate)
    w = res.mechanism.matrix
    # certified like every design: recompute the worst case over the recorded set
    uset = pmlkit.L1Ball(pe, res.guarantee.beta)
    assert pmlkit.leakage_capacity(w, uset) <= 1.0 + 1e-9
    assert res.mechanism.parameters["utility"] == "estimation_error(n=10000)"
    mse = estimation_mse(w, pe, 10_000)
    assert mse <= estimation_mse(mi.mechanism.matrix, pe, 10_000)
    assert res.mechanism.parameters["utility_value"] == pytest.approx(-mse)
    # no worse than eps-LDP randomized response (certified over the whole simplex)
    assert mse <= estimation_mse(krr(4, 1.0), pe, 10_000)


def test_frank_wolfe_beats_random_feasible_points():
    from pmlkit.design.subconvex import fixed_prior_rays

    p = np.array([0.4, 0.35, 0.25])
    rays = fixed_prior_rays(p, 0.8)
    util = EstimationError(1)
    w = util.design_matrix(rays, p)
    best = estimation_mse(w, p, 1)
    # random feasible mechanisms: mixtures of LP vertices of {theta >= 0 : rays theta = 1}
    from scipy.optimize import linprog

    rng = np.random.default_rng(1)
    verts = []
    for _ in range(12):
        res = linprog(rng.standard_normal(rays.shape[1]), A_eq=rays, b_eq=np.ones(3),
                      bounds=(0, None), method="highs")
        verts.append(res.x)
    for _ in range(50):
        lam = rng.dirichlet(np.ones(len(verts)))
        theta = lam @ np.array(verts)
        assert best <= estimation_mse(rays * theta, p, 1) * (1 + 2e-3)


# -- the estimation design beyond the enumerated rays -----------------------------------

def _worst_case_lp(w: np.ndarray, center: np.ndarray, beta: float) -> float:
    """Worst-case PML over the l1-ball by a generic LP per column (independent of
    pmlkit.worstcase): min_Q Q . w_y over {Q in simplex, ||Q - c||_1 <= beta} with
    Q = c + u - d, u, d >= 0, sum u = sum d <= beta / 2, d <= c."""
    from scipy.optimize import linprog

    n = center.size
    worst = -math.inf
    for y in range(w.shape[1]):
        col = w[:, y]
        obj = np.concatenate([col, -col])
        a_eq = np.concatenate([np.ones(n), -np.ones(n)])[None, :]
        a_ub = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
        bounds = [(0, None)] * n + [(0, float(c)) for c in center]
        res = linprog(obj, A_ub=a_ub, b_ub=[beta / 2], A_eq=a_eq, b_eq=[0.0],
                      bounds=bounds, method="highs")
        low = float(center @ col + res.fun)
        worst = max(worst, math.log(col.max() / low))
    return worst


def _calibrated_krr(n: int, eps: float, center: np.ndarray, beta: float) -> np.ndarray:
    """k-RR at the largest LDP level whose worst case over the ball is <= eps (the
    baseline, by bisection; the designs are checked with the independent LP)."""
    lo, hi = eps, 40.0
    uset = pmlkit.L1Ball(center, beta)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if pmlkit.leakage_capacity(krr(n, mid), uset) <= eps:
            lo = mid
        else:
            hi = mid
    return krr(n, lo)


def test_pml_randomized_response_is_exactly_at_the_guarantee_and_beats_krr():
    from pmlkit.design.estimation import pml_randomized_response_matrix

    p = np.array([0.45, 0.25, 0.12, 0.08, 0.05, 0.03, 0.02])
    beta, eps = 0.04, 1.0
    w = pml_randomized_response_matrix(pmlkit.L1Ball(p, beta), p, eps)
    # the family s I + 1 b^T: equal off-diagonal entries in each column
    s = w[0, 0] - w[1, 0]
    assert np.allclose(w - s * np.eye(7), (w - s * np.eye(7))[0][None, :])
    assert _worst_case_lp(w, p, beta) <= eps + 1e-9
    # the error of the unbiased inverse, by hand: (1 - ||q||^2) / (n s^2)
    q = p @ w
    assert estimation_mse(w, p, 1000) == pytest.approx((1 - q @ q) / (1000 * s**2),
                                                       rel=1e-9)
    rr = _calibrated_krr(7, eps, p, beta)
    assert estimation_mse(w, p, 1) < 0.95 * estimation_mse(rr, p, 1)


def test_estimation_design_beyond_twelve_categories_beats_calibrated_krr():
    """N = 14 (beyond the enumerated rays): certified over the set by an independent LP
    and clearly better than k-RR calibrated to the same guarantee (the former fallback
    returned that k-RR itself)."""
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.full(14, 0.8))
    samples = rng.choice(14, size=30_000, p=p)
    res = pmlkit.design_from_samples(samples, 1.0, 1e-6, utility="estimation",
                                     max_seconds=3)
    pe = np.asarray(res.guarantee.estimate)
    beta = float(res.guarantee.beta)
    w = np.asarray(res.mechanism.matrix)
    assert _worst_case_lp(w, pe, beta) <= 1.0 + 1e-7
    rr = _calibrated_krr(14, 1.0, pe, beta)
    # PML randomized response alone is at 0.755 here; the local search (as many steps as
    # the time budget allows) only lowers it, so the bound does not depend on the load
    assert estimation_mse(w, pe, 10_000) < 0.8 * estimation_mse(rr, pe, 10_000)
    assert res.mechanism.parameters["utility"] == "estimation_error(n=10000)"
    assert "local search" in res.mechanism.parameters["method"]
    # a local optimum: no optimality certificate is claimed
    assert res.mechanism.parameters["optimality"].startswith("lower bound")


def test_local_search_descends_and_stays_feasible():
    from pmlkit.design.estimation import local_search, pml_randomized_response_matrix

    p = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
    uset = pmlkit.L1Ball(p, 0.05)
    w0 = pml_randomized_response_matrix(uset, p, 0.8)
    w, _, steps = local_search(w0, p, uset, 0.8, max_iter=15)
    assert steps >= 1
    assert estimation_mse(w, p, 1) < estimation_mse(w0, p, 1)
    assert _worst_case_lp(w, p, 0.05) <= 0.8 + 1e-7
    np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_utility_name_estimation_is_the_estimation_error():
    p = np.array([0.6, 0.3, 0.1])
    a = pmlkit.optimal_mechanism(p, 1.0, beta=0.02, utility="estimation")
    assert a.parameters["utility"] == EstimationError().name
    assert a.parameters["utility_value"] == pytest.approx(-estimation_mse(a.matrix, p,
                                                                          10_000))


def test_summary_reports_the_estimation_error_and_identifiability():
    from pmlkit import summarize_mechanism

    w = krr(3, 1.0)
    p = np.array([0.5, 0.3, 0.2])
    s = summarize_mechanism(w, p, n=2000)
    # independent: covariance of the unbiased inverse, A (diag q - q q^T) A^T / n
    q = p @ w
    a = np.linalg.inv(w.T)
    expected = np.trace(a @ (np.diag(q) - np.outer(q, q)) @ a.T) / 2000
    # the summary simulates the maximum-likelihood estimate's error; at n = 2000 every
    # category is 7 standard deviations from 0, so the estimate is the inverse and the
    # simulated mean agrees with its exact value within the Monte Carlo error
    assert s.identifiable and abs(s.estimation_mse - expected) <= 5 * s.estimation_mse_se
    d = s.to_dict()
    assert d["identifiable"] is True and d["estimation"]["n"] == 2000
    assert d["estimation"]["expected_squared_error"] == s.estimation_mse
    assert "n = 2000 released rows" in str(s)
    merged = summarize_mechanism([[0.5, 0.5], [0.5, 0.5], [0.1, 0.9]], [0.2, 0.3, 0.5])
    assert not merged.identifiable and merged.estimation_mse == math.inf
    assert merged.to_dict()["estimation"]["expected_squared_error"] is None
    assert "not identifiable" in str(merged)


def test_eps_zero_gives_a_certified_constant_mechanism():
    """eps = 0 allows only constant columns (nothing about P can be learnt): the
    estimation design returns one and certifies it, for N beyond the enumerated rays."""
    p = np.random.default_rng(0).dirichlet(np.ones(14))
    m = pmlkit.optimal_mechanism(p, 0.0, beta=0.01, utility="estimation")
    w = np.asarray(m.matrix)
    assert np.allclose(w, w[0][None, :])
    assert pmlkit.leakage_capacity(w, pmlkit.L1Ball(p, 0.01)) <= 1e-9


def test_hadamard_sets_are_sylvester_rows_and_identify_every_distribution():
    """Against scipy's Hadamard matrix (an independent construction): rows and columns
    1..N of the order-K matrix, K the least power of 2 above N, and rank N for every N the
    designer can meet."""
    from scipy.linalg import hadamard

    from pmlkit.design.estimation import hadamard_sets

    for n in range(2, 201):
        k = 1 << n.bit_length()  # least power of 2 >= n + 1
        assert k >= n + 1 and k // 2 < n + 1
        expected = (hadamard(k)[1:n + 1, 1:n + 1] > 0).astype(float)
        s = hadamard_sets(n)
        np.testing.assert_array_equal(s, expected)
        assert np.linalg.matrix_rank(s) == n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pml_hadamard_response_meets_eps_exactly_at_the_largest_ratio(seed):
    from pmlkit.design.estimation import hadamard_sets, pml_hadamard_matrix

    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    p = rng.dirichlet(np.full(n, 1.0))
    beta, eps = float(rng.uniform(0.01, 0.2)), float(rng.uniform(0.3, 1.5))
    w = pml_hadamard_matrix(pmlkit.L1Ball(p, beta), eps)
    s = hadamard_sets(n)
    # the family: two levels per row, the larger on S_y, with one ratio t for all rows
    ratio = (w * s).max(axis=1) / np.where(s > 0, np.inf, w).min(axis=1)
    t = float(ratio[0])
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    worst = _worst_case_lp(w, p, beta)
    assert worst <= eps + 1e-9
    if t < 1e20:
        # the largest ratio: the worst case is at eps up to the bisection's resolution
        np.testing.assert_allclose(ratio, t, rtol=1e-9)
        assert worst >= eps - 1e-6


def test_estimation_design_at_53_categories_beats_calibrated_krr_severalfold():
    """The case where every category can vanish from the set (2,000 samples of 53
    categories): PML randomized response is k-RR there, and the design used to return
    exactly k-RR. The Hadamard start reveals which half of the alphabet the value is in,
    which leaks about log 2 however sharp it is. Certified by the independent LP."""
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.full(53, 1.0))
    samples = rng.choice(53, size=2000, p=p)
    res = pmlkit.design_from_samples(samples, 1.0, 1e-6, utility="estimation",
                                     categories=list(range(53)), max_work=2)
    pe = np.asarray(res.guarantee.estimate)
    beta = float(res.guarantee.beta)
    w = np.asarray(res.mechanism.matrix)
    assert w.shape == (53, 53)
    assert _worst_case_lp(w, pe, beta) <= 1.0 + 1e-7
    rr = _calibrated_krr(53, 1.0, pe, beta)
    assert estimation_mse(w, pe, 1) < 0.5 * estimation_mse(rr, pe, 1)
    assert "Hadamard" in res.mechanism.parameters["method"]
