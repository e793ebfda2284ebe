"""Gaussian on a grid: at N = 2 the paper's binary Gaussian (pmlkit.additive, tested
against the paper); for N > 2 the exact violation probability against numerical
integration over a dense output grid, and the PML limit -log min(p_0, p_{N-1})."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pmlkit.additive import gaussian_binarized_channel, gaussian_pml, gaussian_violation_probability
from pmlkit.errors import ValidationError
from pmlkit.numeric import gaussian as G


@pytest.mark.parametrize("p1, sigma", [(0.5, 1.5), (0.3, 2.0), (0.1, 0.7)])
def test_n2_reproduces_the_binary_gaussian(p1, sigma):
    p = [p1, 1 - p1]
    y = np.linspace(-6, 6, 101)
    np.testing.assert_allclose(G.pml(y, [-1, 1], p, sigma), gaussian_pml(y, sigma, p),
                               atol=1e-14)
    for eps in (0.0, 0.05, 0.2, 0.5, 1.0, 2.0):
        assert G.violation_probability([-1, 1], p, sigma, eps) == pytest.approx(
            gaussian_violation_probability(sigma, p, eps), abs=1e-13)
    np.testing.assert_allclose(G.clamped_channel(2, sigma / 2),
                               gaussian_binarized_channel(sigma).matrix, atol=1e-15)


def test_violation_probability_matches_numerical_integration():
    rng = np.random.default_rng(11)
    for _ in range(4):
        n = int(rng.integers(3, 7))
        pts = np.cumsum(rng.uniform(0.5, 2.0, n))
        p = rng.dirichlet(np.ones(n))
        sigma = float(rng.uniform(0.4, 2.5))
        y = np.linspace(pts[0] - 12 * sigma, pts[-1] + 12 * sigma, 400_001)
        dy = y[1] - y[0]
        v = G.pml(y, pts, p, sigma)
        dens = stats.norm.pdf(y[:, None], pts[None, :], sigma) @ p
        for eps in (0.1, 0.4, 0.8, 1.5):
            num = float((dens * (v > eps)).sum() * dy)
            assert G.violation_probability(pts, p, sigma, eps) == pytest.approx(num, abs=2e-5)


def test_pml_tends_to_the_end_points():
    p = np.array([0.2, 0.5, 0.05, 0.25])
    pts = [0.0, 1.0, 2.0, 3.0]
    lim = G.pml_limit(p)
    assert lim == pytest.approx(-math.log(0.2))
    far = G.pml([-60.0, 63.0], pts, p, 1.0)
    assert far[0] == pytest.approx(-math.log(0.2), abs=1e-9)
    assert far[1] == pytest.approx(-math.log(0.25), abs=1e-9)
    v = G.pml(np.linspace(-30, 33, 5001), pts, p, 1.0)
    assert v.max() <= lim + 1e-12


def test_clamped_channel_sums_normal_cells():
    n, s = 6, 1.3
    w = G.clamped_channel(n, s)
    edges = np.concatenate(([-np.inf], np.arange(n - 1) + 0.5, [np.inf]))
    ref = np.diff(stats.norm.cdf(edges[None, :], np.arange(n)[:, None], s), axis=1)
    np.testing.assert_allclose(w, ref, atol=1e-15)


def test_bad_points():
    with pytest.raises(ValidationError, match="increasing"):
        G.pml([0.0], [1, 0], [0.5, 0.5], 1.0)
    with pytest.raises(ValidationError, match="must match"):
        G.pml([0.0], [0, 1, 2], [0.5, 0.5], 1.0)
