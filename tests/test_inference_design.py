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


def test_beyond_exact_rays_falls_back_to_a_certified_full_rank_candidate():
    import warnings

    from pmlkit.errors import PMLWarning

    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(13))
    samples = rng.choice(13, size=20_000, p=p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PMLWarning)
        res = pmlkit.design_from_samples(samples, 1.0, 1e-6, utility=EstimationError(10_000))
    pe = np.asarray(res.guarantee.estimate)
    uset = pmlkit.L1Ball(pe, res.guarantee.beta)
    assert pmlkit.leakage_capacity(res.mechanism.matrix, uset) <= 1.0 + 1e-9
    assert res.mechanism.parameters["optimality"].startswith("lower bound")
    # identified, and no worse than eps-LDP randomized response (also certified)
    assert estimation_mse(res.mechanism.matrix, pe, 10_000) <= \
        estimation_mse(krr(13, 1.0), pe, 10_000) * (1 + 1e-9)
