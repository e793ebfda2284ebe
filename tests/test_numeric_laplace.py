"""Discrete Laplace on a grid: the clamped channel against brute-force summation of the
geometric law, the unclamped supremum against a dense output grid of the continuous
Laplace (scipy.stats), the calibration against its certificate and minimality, and at
N = 2 the paper's binary Laplace (pmlkit.additive, tested against the paper)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pmlkit import eps_min
from pmlkit.additive import (
    laplace_eps,
    laplace_eps_uncertain,
    laplace_scale,
    laplace_scale_uncertain,
)
from pmlkit.errors import ValidationError
from pmlkit.numeric.laplace import (
    calibrate_discrete_laplace,
    clamped_channel,
    log_clamped_channel,
    ratio_from_scale,
    unclamped_pml,
    unclamped_pml_over_set,
)
from pmlkit.sets import Box, L1Ball
from pmlkit.worstcase import leakage_capacity


def _brute_channel(n: int, r: float, reach: int = 4000) -> np.ndarray:
    k = np.arange(-reach, reach + 1)
    pmf = (1 - r) / (1 + r) * r ** np.abs(k).astype(float)
    w = np.zeros((n, n))
    for i in range(n):
        out = np.clip(i + k, 0, n - 1)
        w[i] = np.bincount(out, weights=pmf, minlength=n)
    return w


@pytest.mark.parametrize("n, r", [(2, 0.3), (5, 0.5), (12, 0.9), (30, 0.97), (7, 1e-3)])
def test_clamped_channel_is_the_clamped_geometric(n, r):
    w = clamped_channel(n, r)
    ref = _brute_channel(n, r)
    np.testing.assert_allclose(w, ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=0, atol=1e-15)


def test_log_channel_has_no_underflow():
    lw = log_clamped_channel(400, 1e-5)
    assert np.isfinite(lw).all()
    assert lw[0, 399] == pytest.approx(399 * math.log(1e-5) - math.log1p(1e-5), rel=1e-14)
    assert np.array_equal(clamped_channel(3, 0.0), np.eye(3))


def test_unclamped_supremum_matches_a_dense_output_grid():
    """The continuous Laplace of scale b on the points: the sup of PML over a dense grid
    of real outputs (including the points, which the theory says hold the sup, and random
    outputs) equals the grid-point formula to 1e-12 and is never exceeded."""
    rng = np.random.default_rng(34)
    for _ in range(25):
        n = int(rng.integers(2, 12))
        step = float(rng.uniform(0.2, 3.0))
        b = float(rng.uniform(0.1, 10.0)) * step
        p = rng.dirichlet(np.full(n, float(rng.uniform(0.3, 3.0))))
        pts = step * np.arange(n) + float(rng.normal())
        dense = np.concatenate([
            np.linspace(pts[0] - 5 * step, pts[-1] + 5 * step, 20001),
            pts, rng.uniform(pts[0] - 3 * step, pts[-1] + 3 * step, 2000)])
        logf = stats.laplace.logpdf(dense[:, None], loc=pts[None, :], scale=b)
        val = logf.max(axis=1) - np.logaddexp.reduce(logf + np.log(p)[None, :], axis=1)
        formula = unclamped_pml(p, ratio_from_scale(b, step))
        assert float(val.max()) == pytest.approx(float(formula.max()), abs=1e-12)
        assert float(val.max()) <= float(formula.max()) + 1e-12
        # and at the points themselves the formula is the density ratio
        at_pts = val[20001:20001 + n]
        np.testing.assert_allclose(at_pts, formula, atol=1e-12)


def test_unclamped_lattice_pml_is_constant_beyond_the_ends():
    """Integer outputs of the discrete Laplace, brute force: PML outside the range equals
    the end value, inside it is the grid-point formula."""
    n, r = 6, 0.6
    p = np.array([0.1, 0.3, 0.05, 0.25, 0.2, 0.1])
    ks = np.arange(-20, n + 20)
    like = (1 - r) / (1 + r) * r ** np.abs(ks[None, :] - np.arange(n)[:, None]).astype(float)
    v = np.log(like.max(axis=0) / (p @ like))
    f = unclamped_pml(p, r)
    np.testing.assert_allclose(v[20:20 + n], f, atol=1e-13)
    np.testing.assert_allclose(v[:20], f[0], atol=1e-13)
    np.testing.assert_allclose(v[20 + n:], f[-1], atol=1e-13)


@pytest.mark.parametrize("p1, b", [(0.5, 1.0), (0.3, 0.4), (0.1, 3.0), (0.02, 0.7)])
def test_n2_reproduces_prop_laplaceleakage(p1, b):
    """At N = 2 (points -1, +1, step 2, r = e^{-2/b}) both the unclamped supremum and the
    clamped 2 x 2 channel have the paper's eps(b) = 2/b - log(e^{2/b} p_min + 1 - p_min)."""
    p = np.array([p1, 1 - p1])
    r = ratio_from_scale(b, 2.0)
    want = laplace_eps(b, min(p1, 1 - p1))
    assert float(unclamped_pml(p, r).max()) == pytest.approx(want, rel=1e-13)
    assert eps_min(clamped_channel(2, r), p) == pytest.approx(want, rel=1e-12)
    # eq. uncertainlaplace over the ball
    beta = 0.5 * min(p1, 1 - p1)
    ball = L1Ball(p, beta)
    want_u = laplace_eps_uncertain(b, min(p1, 1 - p1), beta=beta)
    assert unclamped_pml_over_set(ball, r) == pytest.approx(want_u, rel=1e-12)
    assert leakage_capacity(clamped_channel(2, r), ball) == pytest.approx(want_u, rel=1e-12)


@pytest.mark.parametrize("eps, p1, beta", [(0.5, 0.25, 0.0), (1.0, 0.4, 0.1), (0.2, 0.5, 0.3)])
def test_n2_calibration_is_the_papers_scale(eps, p1, beta):
    p = np.array([p1, 1 - p1])
    over = L1Ball(p, beta) if beta else p
    b = laplace_scale_uncertain(eps, min(p1, 1 - p1), beta=beta) if beta else \
        laplace_scale(eps, min(p1, 1 - p1))
    for clamp in (False, True):
        cal = calibrate_discrete_laplace(2, eps, over, clamp=clamp)
        assert cal.r == pytest.approx(math.exp(-2.0 / b), rel=1e-9)
        assert cal.certified_eps <= eps


def test_calibration_is_certified_and_minimal():
    rng = np.random.default_rng(7)
    for n, eps in [(10, 0.5), (25, 1.0), (73, 2.0)]:
        p = rng.dirichlet(np.full(n, 2.0))
        sets = [L1Ball(p, 0.05), Box(np.maximum(p - 0.01, 0), np.minimum(p + 0.01, 1)), p]
        for over in sets:
            cal = calibrate_discrete_laplace(n, eps, over)
            w = clamped_channel(n, cal.r)
            exact = (leakage_capacity(w, over) if not isinstance(over, np.ndarray)
                     else eps_min(w, over))
            assert exact == cal.certified_eps <= eps
            # a little less noise breaks the target: the calibration is (nearly) tight
            less = clamped_channel(n, cal.r * (1 - 1e-6))
            worse = (leakage_capacity(less, over) if not isinstance(over, np.ndarray)
                     else eps_min(less, over))
            assert worse > eps


def test_leakage_decreases_with_noise():
    """The bisection relies on it (the result is certified either way)."""
    rng = np.random.default_rng(3)
    for n in (3, 10, 40):
        p = rng.dirichlet(np.ones(n))
        ball = L1Ball(p, 0.1)
        vals = [leakage_capacity(clamped_channel(n, r), ball) for r in np.linspace(0, 0.99, 80)]
        assert np.all(np.diff(vals) <= 1e-12)


def test_bad_arguments():
    with pytest.raises(ValidationError, match="r must be"):
        clamped_channel(3, 1.0)
    with pytest.raises(ValidationError, match="n must be"):
        clamped_channel(1, 0.5)
    with pytest.raises(ValidationError, match="grid has 3 points"):
        calibrate_discrete_laplace(3, 1.0, L1Ball([0.5, 0.5], 0.1))
    with pytest.raises(ValidationError, match="eps must be > 0"):
        calibrate_discrete_laplace(3, 0.0, [0.2, 0.3, 0.5])
