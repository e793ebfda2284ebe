"""Samplers (randomness policy, laws checked by KS / binomial tests on fixed seeds) and
calibration from samples (estimate, radius, worst case checked by hand and by brute force)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats

from pmlkit.additive import (
    calibrate_gaussian,
    calibrate_laplace,
    gaussian_binarized,
    gaussian_noise,
    gaussian_tradeoff,
    laplace_binarized,
    laplace_binarized_channel,
    laplace_eps,
    laplace_noise,
    pldp_eps,
)
from pmlkit.confidence import METHODS
from pmlkit.errors import DataError, ValidationError

# These tests keep the pre-0.2 spellings (positional beta/eps, p_hat=, method=) on
# purpose, so the old calls stay covered; tests/test_additive_mechanisms.py checks the
# deprecation warnings themselves.
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated since 0.2:DeprecationWarning")

LABELS = np.array([-1, 1] * 5000)


def test_laplace_noise_law_and_seed():
    y = laplace_noise(LABELS, 0.7, rng=123)
    assert y.shape == LABELS.shape and y.dtype == np.float64
    np.testing.assert_array_equal(y, laplace_noise(LABELS, 0.7, rng=123))
    assert stats.kstest(y - LABELS, stats.laplace(scale=0.7).cdf).pvalue > 1e-3
    assert not np.array_equal(y, laplace_noise(LABELS, 0.7, rng=124))


def test_gaussian_noise_law_and_generator():
    y = gaussian_noise(LABELS.reshape(100, 100), 1.5, rng=np.random.default_rng(7))
    assert y.shape == (100, 100)
    assert stats.kstest((y - LABELS.reshape(100, 100)).ravel(),
                        stats.norm(scale=1.5).cdf).pvalue > 1e-3


def test_secure_default_is_not_reproducible():
    a = laplace_noise(LABELS, 1.0)
    b = laplace_noise(LABELS, 1.0)
    assert a.shape == LABELS.shape and not np.array_equal(a, b)


@pytest.mark.parametrize("b", [0.3, 1.0, 4.0])
def test_laplace_binarized_flip_rate(b):
    out = laplace_binarized(np.ones(20000, dtype=int), b, rng=5)
    assert set(np.unique(out)) <= {-1, 1} and out.dtype == np.int8
    flips = int((out == -1).sum())
    # flip probability = P(1 + L < 0), here from scipy's Laplace CDF
    r = stats.laplace(scale=b).cdf(-1.0)
    assert np.asarray(laplace_binarized_channel(b))[1, 0] == pytest.approx(r, rel=1e-12)
    assert stats.binomtest(flips, out.size, r).pvalue > 1e-3
    # same law as thresholding the continuous output
    y = laplace_noise(np.ones(20000, dtype=int), b, rng=6)
    thr = int((y < 0).sum())
    assert stats.binomtest(thr, y.size, r).pvalue > 1e-3


def test_gaussian_binarized_flip_rate():
    x = -np.ones(20000, dtype=int)
    out = gaussian_binarized(x, 1.5, rng=9)
    r = stats.norm(-1.0, 1.5).sf(0.0)
    assert stats.binomtest(int((out == 1).sum()), out.size, r).pvalue > 1e-3


@pytest.mark.parametrize("bad", [[0, 1], [-1, 2], [True, False], ["a", "b"], [-1.0, 0.5]])
def test_samplers_reject_labels_other_than_pm1(bad):
    for fn in (laplace_noise, gaussian_noise, laplace_binarized, gaussian_binarized):
        with pytest.raises(DataError, match="labels"):
            fn(bad, 1.0, rng=0)


def test_samplers_reject_bad_scale_and_rng():
    with pytest.raises(ValidationError, match="b"):
        laplace_noise([1, -1], 0.0, rng=0)
    with pytest.raises(ValidationError, match="sigma"):
        gaussian_noise([1, -1], -1.0, rng=0)
    with pytest.raises(ValidationError, match="rng"):
        laplace_noise([1, -1], 1.0, rng=1.5)


def _sample(n_pos, n_neg, pos="Male", neg="Female"):
    return [pos] * n_pos + [neg] * n_neg


def brute_eps_over_ball(b, q_lo, q_hi):
    """Worst eps over priors P(+1) in [q_lo, q_hi] from a grid of outcomes (densities)."""
    y = np.concatenate([np.linspace(-3 - 20 * b, 3 + 20 * b, 100_001), [-1.0, 1.0]])
    fm = np.exp(-np.abs(y + 1) / b)
    fp = np.exp(-np.abs(y - 1) / b)
    worst = 0.0
    for q in np.linspace(q_lo, q_hi, 21):
        fy = (1 - q) * fm + q * fp
        worst = max(worst, float(np.max(np.log(np.maximum(fm, fp) / fy))))
    return worst


def test_calibrate_laplace_l1_by_hand():
    samples = _sample(700, 300)
    res = calibrate_laplace(samples, 1.0, 1e-6, positive="Male")
    assert res.labels == ("Female", "Male") and res.counts == (300, 700) and res.m == 1000
    assert res.p_hat == pytest.approx((0.3, 0.7))
    beta = math.sqrt(2 * (math.log(2) - math.log(1e-6)) / 1000)  # eq. binarybeta
    assert res.beta == pytest.approx(beta, rel=1e-12)
    assert res.p_min_lower == pytest.approx(0.3 - beta / 2, rel=1e-12)
    assert res.ldp_scale == pytest.approx(2.0)
    assert res.b < res.ldp_scale  # the whole point: less noise than LDP
    # the scale meets eps for every prior of the ball, and is tight at its worst prior
    worst = brute_eps_over_ball(res.b, 0.7 - beta / 2, 0.7 + beta / 2)
    assert worst <= 1.0 + 1e-9 and worst == pytest.approx(1.0, abs=1e-8)
    d = res.to_dict()
    assert d["labels"] == {"-1": "Female", "+1": "Male"} and d["uncertainty_set"]
    assert "delta=1e-06" in res.meaning and "m=1000" in res.meaning
    # swapping which label is +1 changes the mapping, not the scale (p_min is symmetric)
    swapped = calibrate_laplace(samples, 1.0, 1e-6, positive="Female")
    assert swapped.labels == ("Male", "Female") and swapped.p_hat == pytest.approx((0.7, 0.3))
    assert swapped.b == pytest.approx(res.b, rel=1e-14)


def test_calibrate_laplace_reduces_to_ldp_for_tiny_samples():
    res = calibrate_laplace([1, 0, 1, 0], 0.8, 1e-9, positive=1)
    assert res.p_min_lower == 0.0 and res.b == pytest.approx(2 / 0.8, rel=1e-14)


@pytest.mark.parametrize("method", [m for m in METHODS if m != "l1"])
def test_calibrate_laplace_other_sets(method):
    samples = _sample(6000, 4000)
    res = calibrate_laplace(samples, 0.5, 1e-6, positive="Male", confidence=method)
    assert res.beta is None and res.confidence
    assert 0.0 <= res.p_min_lower <= 0.4
    assert laplace_eps(res.b, res.p_min_lower) <= 0.5
    assert laplace_eps(res.b, res.p_min_lower) == pytest.approx(0.5, rel=1e-9)


def test_calibrate_accepts_pandas_and_pyarrow():
    s = _sample(30, 70, pos="y", neg="n")
    a = calibrate_laplace(pd.Series(s), 1.0, 1e-3, positive="y").b
    b = calibrate_laplace(pa.chunked_array([s]), 1.0, 1e-3, positive="y").b
    c = calibrate_laplace(np.array(s), 1.0, 1e-3, positive=np.str_("y")).b
    assert a == b == c


@pytest.mark.parametrize("samples,positive,match", [
    (["a"] * 10, "a", "exactly two"),
    (["a", "b", "c"], "a", "exactly two"),
    (["a", "b"], "c", "positive"),
    ([1, 0, 1], "1", "positive"),
    (["a", None, "b"], "a", "null"),
])
def test_calibrate_bad_samples(samples, positive, match):
    with pytest.raises(DataError, match=match):
        calibrate_laplace(samples, 1.0, 1e-3, positive=positive)
    with pytest.raises(DataError, match=match):
        calibrate_gaussian(samples, 1.0, 1e-3, positive=positive)


@pytest.mark.parametrize("kwargs,name", [
    ({"eps": -1.0, "delta": 1e-3}, "eps"),
    ({"eps": 1.0, "delta": 0.0}, "delta"),
    ({"eps": 1.0, "delta": 1.0}, "delta"),
    ({"eps": math.nan, "delta": 1e-3}, "eps"),
])
def test_calibrate_laplace_bad_numbers(kwargs, name):
    with pytest.raises(ValidationError, match=name):
        calibrate_laplace(["a", "b"], positive="a", **kwargs)


def test_calibrate_bad_confidence():
    with pytest.raises(ValidationError, match="confidence"):
        calibrate_laplace(["a", "b"], 1.0, 1e-3, positive="a", confidence="nope")


def test_calibrate_gaussian_matches_tradeoff():
    samples = _sample(650, 350)
    eps = np.linspace(0.05, 2.0, 12)
    res = calibrate_gaussian(samples, 1.5, 1e-6, positive="Male", eps=eps)
    pe, pd_ = gaussian_tradeoff(1.5, (0.35, 0.65), 1000, 1e-6, eps, method="paper")
    de, dd = gaussian_tradeoff(1.5, (0.35, 0.65), 1000, 1e-6, eps, method="direct")
    np.testing.assert_allclose(res.paper_eps, pe, rtol=1e-12)
    np.testing.assert_allclose(res.direct_eps, de, rtol=1e-12)
    # the continuous delta_1 is kept for comparison; the curves are those of the released
    # grid (recomputed, checked against brute force in test_additive_grid), which differ
    # from the continuous ones by about one grid cell's mass (sigma / 1024 here)
    d1 = res.continuous_delta1
    np.testing.assert_allclose(d1 + 1e-6 - d1 * 1e-6, pd_, rtol=1e-12)
    np.testing.assert_allclose(res.paper_delta, pd_, atol=1e-3)
    np.testing.assert_allclose(res.direct_delta, dd, atol=1e-3)
    np.testing.assert_array_equal(res.direct_delta, res.delta1 + 1e-6 - res.delta1 * 1e-6)
    assert res.granularity == 2.0**-10 and res.released_sigma == 1536 * 2.0**-10
    for d, e in zip(res.direct_delta, res.pldp_eps, strict=True):
        assert e == (pldp_eps(1.5, d) if d < 1 else 0.0)
    rows = res.curves()
    assert {r["curve"] for r in rows} == {"paper", "direct"} and len(rows) == 24
    assert res.to_dict()["curves"][0]["curve"] == "paper"
    with pytest.raises(ValueError, match="read-only"):
        res.eps[0] = 1.0  # read-only arrays


def test_calibrate_gaussian_other_set_and_default_grid():
    samples = _sample(650, 350)
    res = calibrate_gaussian(samples, 1.5, 1e-6, positive="Male", confidence="box-cp")
    lo, hi = res.q_interval
    assert lo < 0.65 < hi and res.eps.size == 60
    assert (res.direct_delta >= 1e-6 - 1e-18).all()
    with pytest.raises(ValidationError, match="sigma"):
        calibrate_gaussian(samples, 0.0, 1e-6, positive="Male")
    with pytest.raises(ValidationError, match="delta2"):
        calibrate_gaussian(samples, 1.0, 1.0, positive="Male")
