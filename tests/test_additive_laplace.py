"""Binary Laplace mechanism (Prop. Laplaceleakage, eq. uncertainlaplace, Remark
laplacereducestoldp) against brute force over outcomes, hand-derived forms, a bracketing
root-find and numerical integration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, optimize

import pmlkit
from pmlkit.additive import (
    laplace_binarized_channel,
    laplace_eps,
    laplace_eps_uncertain,
    laplace_scale,
    laplace_scale_uncertain,
    worst_case_p_min,
)
from pmlkit.errors import ValidationError

# These tests keep the pre-0.2 spellings (positional beta/eps, p_hat=, method=) on
# purpose, so the old calls stay covered; tests/test_additive_mechanisms.py checks the
# deprecation warnings themselves.
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated since 0.2:DeprecationWarning")

scales = st.floats(0.05, 50.0)
pmins = st.floats(0.0, 0.5)


def brute_laplace_eps(b: float, prior: tuple[float, float]) -> float:
    """max over a dense grid of y of log(max_x f(y|x) / f_Y(y)), densities written out."""
    y = np.linspace(-3.0 - 20 * b, 3.0 + 20 * b, 400_001)
    y = np.concatenate([y, [-1.0, 1.0]])
    f_minus = np.exp(-np.abs(y + 1) / b) / (2 * b)
    f_plus = np.exp(-np.abs(y - 1) / b) / (2 * b)
    f_y = prior[0] * f_minus + prior[1] * f_plus
    ok = f_y > 1e-300
    return float(np.max(np.log(np.maximum(f_minus, f_plus)[ok] / f_y[ok])))


@pytest.mark.parametrize("b", [0.3, 1.0, 2.0, 7.5])
@pytest.mark.parametrize("p", [0.05, 0.2, 0.37, 0.5])
def test_eps_matches_brute_force_over_outcomes_both_priors(b, p):
    expected = laplace_eps(b, p)
    assert brute_laplace_eps(b, (p, 1 - p)) == pytest.approx(expected, abs=1e-9)
    assert brute_laplace_eps(b, (1 - p, p)) == pytest.approx(expected, abs=1e-9)


@given(b=st.floats(0.05, 20.0), p=st.floats(1e-6, 0.5))
def test_eps_matches_paper_form(b, p):
    """The paper's form 2/b - log(e^{2/b} p + 1 - p), evaluated naively where it is safe."""
    paper = 2 / b - math.log(math.exp(2 / b) * p + 1 - p)
    assert laplace_eps(b, p) == pytest.approx(paper, rel=1e-9, abs=1e-12)


@given(b1=scales, b2=scales, p=pmins)
def test_eps_decreasing_in_b(b1, b2, p):
    lo, hi = sorted((b1, b2))
    assert laplace_eps(hi, p) <= laplace_eps(lo, p) + 1e-15


@given(b=scales, p1=pmins, p2=pmins)
def test_eps_decreasing_in_p_min_and_bounded(b, p1, p2):
    lo, hi = sorted((p1, p2))
    assert laplace_eps(b, hi) <= laplace_eps(b, lo) + 1e-15
    e = laplace_eps(b, lo)
    assert 0.0 <= e <= 2 / b * (1 + 1e-12)
    if lo > 0:
        assert e <= -math.log(lo) * (1 + 1e-12)


def test_ldp_reductions():
    for b in (0.1, 1.0, 4.0):
        assert laplace_eps(b, 0.0) == pytest.approx(2 / b, rel=1e-14)
        # Remark laplacereducestoldp: p_hat_min = 1/2, beta = 1
        assert laplace_eps_uncertain(b, 0.5, 1.0) == pytest.approx(2 / b, rel=1e-14)
        assert laplace_eps_uncertain(b, 0.3, 0.9) == pytest.approx(2 / b, rel=1e-14)
    for eps in (0.1, 1.0, 5.0):
        # the computed eps(2/eps) ties eps: the scale is nudged up by its rounding margin
        for b in (laplace_scale(eps, 0.0), laplace_scale_uncertain(eps, 0.5, 1.0)):
            assert 2 / eps <= b <= 2 / eps * (1 + 1e-12)


@given(b=scales, p_hat_min=st.floats(0.0, 0.5), beta=st.floats(0.0, 1.2))
def test_uncertain_is_eq_uncertainlaplace(b, p_hat_min, beta):
    q = p_hat_min - beta / 2
    if q > 1e-3:
        paper = 2 / b - math.log(q * math.expm1(2 / b) + 1)  # eq. uncertainlaplace verbatim
        assert laplace_eps_uncertain(b, p_hat_min, beta) == pytest.approx(paper, rel=1e-9)
    assert worst_case_p_min(p_hat_min, beta) == pytest.approx(max(q, 0.0), abs=1e-15)


@pytest.mark.parametrize("b,p_hat,beta", [(1.0, 0.3, 0.1), (0.5, 0.45, 0.3), (2.0, 0.2, 0.5)])
def test_uncertain_is_sup_over_the_ball_by_brute_force(b, p_hat, beta):
    """Worst case over B_beta(p_hat) from a grid of priors and a grid of outcomes."""
    qs = np.linspace(max(p_hat - beta / 2, 0), min(p_hat + beta / 2, 1), 41)
    worst = max(brute_laplace_eps(b, (1 - q, q)) for q in qs)
    assert laplace_eps_uncertain(b, p_hat, beta) == pytest.approx(worst, abs=1e-9)


@given(eps=st.floats(1e-4, 8.0), p=st.floats(0.0, 0.5))
def test_scale_inverts_eps(eps, p):
    eps_max = -math.log(p) if p > 0 else math.inf
    b = laplace_scale(eps, p)
    if eps >= eps_max:
        assert b == 0.0
        return
    assert b > 0 and math.isfinite(b)
    got = laplace_eps(b, p)
    assert got <= eps  # never above the target, even by rounding
    if eps < 0.999 * eps_max:  # well-conditioned away from eps_max
        assert got == pytest.approx(eps, rel=1e-11)
        assert laplace_scale(laplace_eps(b, p), p) == pytest.approx(b, rel=1e-9)


@given(frac=st.floats(1e-3, 0.999), p=st.floats(1e-3, 0.5))
def test_scale_matches_brentq(frac, p):
    """Monotone 1-D root-find on the paper's form (independent of the closed form). eps is
    drawn below eps_max = -log p (drawn over [1e-3, 6] and filtered, 37 of the 60 examples
    used to return early)."""
    eps = frac * -math.log(p)

    def excess(log_b: float) -> float:
        b = math.exp(log_b)
        return -math.log(p + (1 - p) * math.exp(-2 / b)) - eps

    root = optimize.brentq(excess, math.log(1e-6), math.log(1e8), xtol=1e-15, rtol=1e-14)
    assert laplace_scale(eps, p) == pytest.approx(math.exp(root), rel=1e-10)


def test_scale_conventions_at_the_ends():
    assert laplace_scale(0.0, 0.3) == math.inf
    assert laplace_scale(0.0, 0.0) == math.inf
    assert laplace_scale(10.0, 0.3) == 0.0
    # eps = -log p_min as computed ties eps_max: releasing X would leak the exact -log p_min,
    # which can be above the float (ln 2 > math.log(2)); a small positive scale is returned
    for eps, p in ((-math.log(0.3), 0.3), (math.log(2), 0.5)):
        b = laplace_scale(eps, p)
        assert 0.0 < b < 0.1
        assert laplace_eps(b, p) < eps
    assert laplace_scale(math.log(2) * (1 + 1e-12), 0.5) == 0.0
    assert laplace_scale(np.float32(1.0), np.float64(0.2)) == pytest.approx(
        laplace_scale(float(np.float32(1.0)), 0.2))


@pytest.mark.parametrize("b", [0.2, 1.0, 3.0])
def test_binarized_channel_against_integration(b):
    w = np.asarray(laplace_binarized_channel(b))
    dens = {x: (lambda y, x=x: math.exp(-abs(y - x) / b) / (2 * b)) for x in (-1, 1)}
    for i, x in enumerate((-1, 1)):
        # P(Y < 0 | x), split at the kink y = x (quad with reversed limits subtracts)
        below = integrate.quad(dens[x], -np.inf, x, epsabs=1e-14)[0] \
            + integrate.quad(dens[x], x, 0.0, epsabs=1e-14)[0]
        assert w[i, 0] == pytest.approx(below, abs=1e-10)
        assert w[i, 1] == pytest.approx(1 - below, abs=1e-10)


@given(b=st.floats(0.05, 20.0), p=st.floats(0.01, 0.99))
def test_binarized_channel_is_post_processing(b, p):
    mech = laplace_binarized_channel(b)
    assert mech.input_labels == (-1, 1) and mech.output_labels == (-1, 1)
    # thresholding cannot increase leakage (data processing)
    assert pmlkit.eps_min(mech, [p, 1 - p]) <= laplace_eps(b, min(p, 1 - p)) + 1e-12
    ldp = pmlkit.ldp_epsilon(mech)
    assert ldp == pytest.approx(math.log(2 * math.exp(1 / b) - 1), rel=1e-9, abs=1e-12)
    assert ldp <= 2 / b + 1e-12


@pytest.mark.parametrize("call,name", [
    (lambda: laplace_eps(0.0, 0.3), "b"),
    (lambda: laplace_eps(-1.0, 0.3), "b"),
    (lambda: laplace_eps(math.nan, 0.3), "b"),
    (lambda: laplace_eps(math.inf, 0.3), "b"),
    (lambda: laplace_eps(1.0, 0.6), "p_min"),
    (lambda: laplace_eps(1.0, -0.1), "p_min"),
    (lambda: laplace_eps(1.0, math.nan), "p_min"),
    (lambda: laplace_scale(-0.1, 0.3), "eps"),
    (lambda: laplace_scale(math.nan, 0.3), "eps"),
    (lambda: laplace_scale(1.0, 0.7), "p_min"),
    (lambda: laplace_eps_uncertain(1.0, 0.3, -0.1), "beta"),
    (lambda: laplace_eps_uncertain(1.0, 0.8, 0.1), "p_hat_min"),
    (lambda: laplace_eps_uncertain(0.0, 0.3, 0.1), "b"),
    (lambda: laplace_binarized_channel(0.0), "b"),
    (lambda: laplace_binarized_channel("1"), "b"),
])
def test_bad_input(call, name):
    with pytest.raises(ValidationError, match=name):
        call()
