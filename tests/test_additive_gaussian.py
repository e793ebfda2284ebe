"""Binary Gaussian mechanism (Section "gauss", math §6) and the pLDP baseline, against
numerical integration (scipy.integrate.quad over a violation set found numerically),
brute-force grids over the uncertainty set, hand-written formulas and mpmath."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize
from scipy.stats import norm

import pmlkit
from pmlkit.additive import (
    gaussian_binarized_channel,
    gaussian_delta1,
    gaussian_delta1_interval,
    gaussian_pml,
    gaussian_tradeoff,
    gaussian_tradeoff_interval,
    gaussian_violation_probability,
    gaussian_violation_thresholds,
    pldp_eps,
    pldp_sigma,
)
from pmlkit.errors import ValidationError

# These tests keep the pre-0.2 spellings (positional beta/eps, p_hat=, method=) on
# purpose, so the old calls stay covered; tests/test_additive_mechanisms.py checks the
# deprecation warnings themselves.
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated since 0.2:DeprecationWarning")


def direct_pml(y, sigma, prior):
    """log(max_x f(y|x) / f_Y(y)) from scipy's normal log-densities, no algebra; in logs
    because the densities themselves underflow to subnormals far in the tails (found by
    make fuzz: sigma = 0.2, y = 6.75 lost 0.07 nats)."""
    l_m = norm.logpdf(y, -1.0, sigma)
    l_p = norm.logpdf(y, 1.0, sigma)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_fy = np.logaddexp(np.log(prior[0]) + l_m, np.log(prior[1]) + l_p)
        return np.maximum(l_m, l_p) - log_fy


def quad_violation(sigma, prior, eps):
    """P_Y({pml > eps}): the set located on a grid of y, its ends refined by brentq on the
    direct PML, then f_Y integrated over it with scipy.integrate.quad."""
    def f_y(y):
        return prior[0] * norm.pdf(y, -1.0, sigma) + prior[1] * norm.pdf(y, 1.0, sigma)

    reach = 1.0 + 9.0 * sigma  # beyond this f_Y < 1e-18: its mass is negligible
    total = 0.0
    for sign in (1.0, -1.0):
        y = sign * np.linspace(0.0, reach, 20_001)
        viol = direct_pml(y, sigma, prior) > eps
        if not viol.any():
            continue
        k = int(np.argmax(viol))  # PML is monotone in |y|: one boundary per side
        if k == 0:
            t = 0.0
        else:
            t = optimize.brentq(lambda u, sg=sign: direct_pml(sg * u, sigma, prior) - eps,
                                abs(y[k - 1]), abs(y[k]), xtol=1e-14)
        lo, hi = (t, np.inf) if sign > 0 else (-np.inf, -t)
        total += integrate.quad(f_y, lo, hi, epsabs=1e-14, epsrel=1e-12)[0]
    return total


PRIORS = [(0.5, 0.5), (0.3, 0.7), (0.8, 0.2), (0.05, 0.95), (0.0, 1.0), (1.0, 0.0)]


@pytest.mark.parametrize("sigma", [0.4, 1.5, 3.0])
@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("eps", [0.05, 0.3, 0.69, 1.5])
def test_violation_probability_against_quad(sigma, prior, eps):
    assert gaussian_violation_probability(sigma, prior, eps) == pytest.approx(
        quad_violation(sigma, prior, eps), abs=1e-9)


@given(sigma=st.floats(0.2, 5.0), q=st.floats(0.0, 1.0), y=st.floats(-8.0, 8.0))
@example(sigma=0.201171875, q=0.0, y=6.75)
def test_pml_closed_form(sigma, q, y):
    prior = (1 - q, q)
    ref = direct_pml(np.array([y]), sigma, prior)[0]
    assume(np.isfinite(ref))
    assert gaussian_pml(y, sigma, prior) == pytest.approx(ref, rel=1e-9, abs=1e-9)


@given(sigma=st.floats(0.2, 5.0), q=st.floats(0.01, 0.99), eps=st.floats(0.001, 3.0))
def test_thresholds_are_level_crossings(sigma, q, eps):
    prior = (1 - q, q)
    t_pos, t_neg = gaussian_violation_thresholds(sigma, prior, eps)
    for t, sign in ((t_pos, 1), (t_neg, -1)):
        if math.isinf(t):  # empty half-line: sup of PML on that side is -log P(side)
            assert -math.log(q if sign > 0 else 1 - q) <= eps + 1e-12
        else:
            assert t >= 0
            # PML at the threshold computed in mpmath from the densities
            s, y = mp.mpf(sigma), mp.mpf(sign * t)
            fm, fp = mp.npdf(y, -1, s), mp.npdf(y, 1, s)
            level = mp.log(max(fm, fp) / ((1 - mp.mpf(q)) * fm + mp.mpf(q) * fp))
            assert float(level) == pytest.approx(eps, rel=1e-8, abs=1e-12)


def test_eps_zero_everything_but_y_equal_zero_violates():
    assert gaussian_violation_probability(1.5, (0.4, 0.6), 0.0) == pytest.approx(1.0)
    assert gaussian_violation_thresholds(1.5, (0.4, 0.6), 0.0) == (0.0, 0.0)
    # degenerate prior: only outcomes on the other side leak
    assert gaussian_violation_probability(1.5, (0.0, 1.0), 0.0) == pytest.approx(
        norm.cdf(0.0, 1.0, 1.5), abs=1e-15)


def fine_grid_max(sigma, lo, hi, eps, n=20_001):
    """Max over a fine grid of the closed form (checked against quad above); evaluated with
    the same vectorised kernel that gaussian_violation_probability wraps, for speed."""
    from pmlkit.additive.gaussian import _violation

    qs = np.linspace(lo, hi, n)
    assert _violation(sigma, qs[7], eps) == gaussian_violation_probability(
        sigma, (1 - qs[7], qs[7]), eps)
    return float(_violation(sigma, qs, eps).max())


def refined_brute(sigma, lo, hi, eps, n=2001):
    """Grid plus scipy's bounded scalar optimiser around every grid local maximum."""
    qs = np.linspace(lo, hi, n)
    g = np.array([gaussian_violation_probability(sigma, (1 - q, q), eps) for q in qs])
    best = g.max()
    for i in range(n):
        left = g[i - 1] if i > 0 else -1.0
        right = g[i + 1] if i < n - 1 else -1.0
        if g[i] >= left and g[i] >= right and g[i] > 0:
            a, b = qs[max(i - 1, 0)], qs[min(i + 1, n - 1)]
            res = optimize.minimize_scalar(
                lambda q: -gaussian_violation_probability(sigma, (1 - q, q), eps),
                bounds=(a, b), method="bounded", options={"xatol": 1e-14})
            best = max(best, -res.fun)
    return best


@pytest.mark.parametrize("sigma,p_hat,beta,eps", [
    (1.5, 0.5, 0.1, 0.3), (2.0, 0.5, 0.3, 0.1), (1.5, 0.7, 0.2, 0.5),
    (0.5, 0.3, 0.4, 0.8), (0.25, 0.68, 0.64, 2.81), (1.0, 0.9, 0.3, 0.05),
])
def test_delta1_against_fine_grid(sigma, p_hat, beta, eps):
    lo, hi = max(p_hat - beta / 2, 0.0), min(p_hat + beta / 2, 1.0)
    exact = gaussian_delta1(sigma, p_hat, beta, eps)
    grid = fine_grid_max(sigma, lo, hi, eps)
    assert grid <= exact + 1e-12
    assert exact <= grid + 1e-5  # a 20,001-point grid is within its spacing's effect
    assert exact == pytest.approx(refined_brute(sigma, lo, hi, eps), abs=1e-9)


@settings(max_examples=25)
@given(sigma=st.floats(0.3, 4.0), lo=st.floats(0.0, 1.0), width=st.floats(0.0, 1.0),
       eps=st.floats(0.0, 3.0))
def test_delta1_interval_vs_refined_brute_force(sigma, lo, width, eps):
    hi = min(lo + width, 1.0)
    exact = gaussian_delta1_interval(sigma, lo, hi, eps)
    assert exact == pytest.approx(refined_brute(sigma, lo, hi, eps, n=401), abs=1e-9)


def test_delta1_against_quadrature_grid():
    """The paper's procedure in miniature: a grid over the ball, quad per distribution."""
    sigma, p_hat, beta = 1.5, 0.7, 0.2
    eps = np.array([0.2, 0.5])
    exact = gaussian_delta1(sigma, (0.3, 0.7), beta, eps)
    for k, e in enumerate(eps):
        qs = np.linspace(p_hat - beta / 2, p_hat + beta / 2, 21)
        paper = max(quad_violation(sigma, (1 - q, q), e) for q in qs)
        assert paper <= exact[k] + 1e-9
        assert exact[k] <= paper + 1e-3


@given(sigma=st.floats(0.3, 4.0), q=st.floats(0.05, 0.95), m=st.integers(10, 10**6),
       e1=st.floats(0.0, 3.0), e2=st.floats(0.0, 3.0))
def test_delta1_nonincreasing_in_eps(sigma, q, m, e1, e2):
    a, b = sorted((e1, e2))
    _, d_a = gaussian_tradeoff(sigma, q, m, 1e-6, a, method="direct")
    _, d_b = gaussian_tradeoff(sigma, q, m, 1e-6, b, method="direct")
    assert d_b <= d_a + 1e-12


@given(sigma=st.floats(0.3, 4.0), q=st.floats(0.05, 0.95), m=st.integers(10, 10**6),
       delta2=st.floats(1e-12, 0.5), eps=st.lists(st.floats(0.0, 3.0), min_size=1,
                                                   max_size=5))
def test_direct_curve_never_above_paper(sigma, q, m, delta2, eps):
    e = np.array(eps)
    pe, pd = gaussian_tradeoff(sigma, q, m, delta2, e, method="paper")
    de, dd = gaussian_tradeoff(sigma, q, m, delta2, e, method="direct")
    np.testing.assert_array_equal(de, e)
    np.testing.assert_array_equal(dd, pd)  # same delta at each inner eps ...
    assert (pe >= e).all()  # ... reached at a smaller eps by the direct curve
    # and at the paper's eps* the direct curve has a delta no larger than delta*
    finite = np.isfinite(pe)
    if finite.any():
        _, d_at = gaussian_tradeoff(sigma, q, m, delta2, pe[finite], method="direct")
        assert (d_at <= pd[finite] + 1e-12).all()
    assert ((pd >= delta2 - 1e-15) & (pd <= 1.0 + 1e-15)).all()


@pytest.mark.parametrize("p_hat,m", [((0.5, 0.5), 100), ((0.3, 0.7), 1000), (0.7, 10**5)])
def test_tradeoff_against_hand_formulas(p_hat, m):
    sigma, delta2 = 1.5, 1e-6
    eps = np.linspace(0.0, 2.0, 9)
    beta = math.sqrt(2 * (math.log(2) - math.log(delta2)) / m)  # eq. binarybeta
    q = p_hat if np.ndim(p_hat) == 0 else p_hat[1]
    d1 = gaussian_delta1_interval(sigma, max(q - beta / 2, 0), min(q + beta / 2, 1), eps)
    pe, pd = gaussian_tradeoff(sigma, p_hat, m, delta2, eps)
    for k, e in enumerate(eps):
        x = beta * math.exp(e) / 2
        assert pe[k] == (pytest.approx(e - math.log(1 - x), rel=1e-12) if x < 1 else math.inf)
        assert pd[k] == pytest.approx(d1[k] + delta2 - d1[k] * delta2, rel=1e-12)
    se, sd = gaussian_tradeoff(sigma, p_hat, m, delta2, 0.5)
    assert isinstance(se, float) and isinstance(sd, float)


def test_interval_form_matches_l1_form():
    sigma, m, d2 = 1.5, 500, 1e-6
    beta = pmlkit.l1_radius(d2, m=m, n=2)
    eps = np.linspace(0.1, 1.5, 7)
    a = gaussian_tradeoff(sigma, 0.6, m, d2, eps, method="paper")
    b = gaussian_tradeoff_interval(sigma, 0.6, 0.6 - beta / 2, 0.6 + beta / 2, d2, eps,
                                   method="paper")
    np.testing.assert_allclose(a, b, rtol=1e-12)


@given(sigma=st.floats(0.1, 10.0))
def test_binarized_channel(sigma):
    w = np.asarray(gaussian_binarized_channel(sigma))
    assert w[1, 0] == pytest.approx(norm.cdf(0.0, 1.0, sigma), abs=1e-15)
    assert w[0, 1] == pytest.approx(norm.sf(0.0, -1.0, sigma), abs=1e-15)


def mp_erfcinv(d):
    return mp.findroot(lambda x: mp.erfc(x) - d, 1.0)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (1.0, 1e-3), (2.0, 0.1), (5.0, 0.5)])
def test_pldp_sigma_formula_and_guarantee(eps, delta):
    mp.mp.dps = 30
    f = mp_erfcinv(mp.mpf(delta))
    ref = mp.sqrt(2) * (f + mp.sqrt(f * f + eps)) / eps
    sigma = pldp_sigma(eps, delta)
    assert sigma == pytest.approx(float(ref), rel=1e-12)
    # what it promises: the privacy loss log f(Y|+1)/f(Y|-1) = 2Y/sigma^2 exceeds eps in
    # absolute value with probability <= delta (Y ~ N(1, sigma^2); Zhao et al. Thm 8)
    t = eps * sigma**2 / 2
    assert norm.sf(t, 1.0, sigma) + norm.cdf(-t, 1.0, sigma) <= delta


@given(eps=st.floats(1e-3, 20.0), delta=st.floats(1e-12, 0.99))
def test_pldp_inverse(eps, delta):
    sigma = pldp_sigma(eps, delta)
    assert pldp_eps(sigma, delta) == pytest.approx(eps, rel=1e-9)
    root = optimize.brentq(lambda e: pldp_sigma(e, delta) - sigma, eps / 2, eps * 2,
                           xtol=1e-15, rtol=1e-13)
    assert pldp_eps(sigma, delta) == pytest.approx(root, rel=1e-9)


def test_pldp_eps_zero():
    assert pldp_sigma(0.0, 1e-6) == math.inf


@pytest.mark.parametrize("call,name", [
    (lambda: gaussian_violation_probability(0.0, (0.5, 0.5), 1.0), "sigma"),
    (lambda: gaussian_violation_probability(-1.0, (0.5, 0.5), 1.0), "sigma"),
    (lambda: gaussian_violation_probability(math.nan, (0.5, 0.5), 1.0), "sigma"),
    (lambda: gaussian_violation_probability(1.0, (0.2, 0.3, 0.5), 1.0), "prior"),
    (lambda: gaussian_violation_probability(1.0, (0.5, 0.6), 1.0), "prior"),
    (lambda: gaussian_violation_probability(1.0, (1.5, -0.5), 1.0), "prior"),
    (lambda: gaussian_violation_probability(1.0, (math.nan, 0.5), 1.0), "prior"),
    (lambda: gaussian_violation_probability(1.0, (0.5, 0.5), -0.1), "eps"),
    (lambda: gaussian_tradeoff(1.0, (0.5, 0.5), 100, 0.0, 1.0), "delta2"),
    (lambda: gaussian_tradeoff(1.0, (0.5, 0.5), 100, 1.0, 1.0), "delta2"),
    (lambda: gaussian_tradeoff(1.0, (0.5, 0.5), 100, -0.1, 1.0), "delta2"),
    (lambda: gaussian_tradeoff(1.0, (0.5, 0.5), 0, 1e-6, 1.0), "m"),
    (lambda: gaussian_tradeoff(1.0, (0.5, 0.5), 2.5, 1e-6, 1.0), "m"),
    (lambda: gaussian_tradeoff(1.0, (0.5, 0.5), 100, 1e-6, [0.1, -1.0]), "eps"),
    (lambda: gaussian_tradeoff(1.0, (0.5, 0.5), 100, 1e-6, [0.1, math.nan]), "eps"),
    (lambda: gaussian_tradeoff(1.0, 1.2, 100, 1e-6, 1.0), "prior"),
    (lambda: gaussian_tradeoff(0.0, 0.5, 100, 1e-6, 1.0), "sigma"),
    (lambda: gaussian_tradeoff(1.0, 0.5, 100, 1e-6, 1.0, method="exact"), "curve"),
    (lambda: gaussian_delta1_interval(1.0, 0.6, 0.4, 1.0), "interval"),
    (lambda: gaussian_tradeoff_interval(1.0, 0.9, 0.4, 0.6, 1e-6, 1.0), "prior"),
    (lambda: pldp_sigma(-1.0, 1e-6), "eps"),
    (lambda: pldp_sigma(1.0, 0.0), "delta"),
    (lambda: pldp_sigma(1.0, 1.0), "delta"),
    (lambda: pldp_eps(0.0, 1e-6), "sigma"),
    (lambda: pldp_eps(1.0, 1.5), "delta"),
    (lambda: gaussian_pml([0.0, math.inf], 1.0, (0.5, 0.5)), "y"),
])
def test_bad_input(call, name):
    with pytest.raises(ValidationError, match=name):
        call()


def test_numpy_scalars_accepted():
    a = gaussian_violation_probability(np.float32(1.5), np.array([0.3, 0.7]), np.float64(0.2))
    b = gaussian_violation_probability(1.5, (0.3, 0.7), float(np.float64(0.2)))
    assert a == pytest.approx(b, rel=1e-6)
    assert isinstance(a, float)
