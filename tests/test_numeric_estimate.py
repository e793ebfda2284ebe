"""The analyst's side of a numeric release: EM against pmlkit.inference's estimator (a
separate implementation), identification, and the coverage of the mean and median
intervals over 400 simulated releases of 2,000 rows."""

from __future__ import annotations

import numpy as np
import pytest

from pmlkit.errors import DataError
from pmlkit.inference import estimate_from_counts
from pmlkit.numeric.design import laplace_mechanism, ordinal_mechanism
from pmlkit.numeric.estimate import em_fit, estimate_numeric, estimate_numeric_counts
from pmlkit.numeric.grid import NumericGrid


def test_em_matches_the_inference_module():
    rng = np.random.default_rng(2)
    g = NumericGrid(0, 7, 1)
    p = rng.dirichlet(np.full(8, 2.0))
    w = np.asarray(laplace_mechanism(g, p, 2.0))
    counts = rng.multinomial(3000, p @ w)
    ours, ok, _ = em_fit(counts, w, tol=1e-11, max_iter=200_000)
    ref = estimate_from_counts(counts, w)
    assert ok
    np.testing.assert_allclose(ours, ref.estimate, atol=2e-4)
    # log-likelihoods agree to the certified tolerance
    def ll(q):
        return float(counts @ np.log(q @ w)) / counts.sum()
    assert ll(ours) == pytest.approx(ll(np.asarray(ref.estimate)), abs=1e-6)


@pytest.mark.slow
def test_mean_and_median_intervals_cover():
    """400 releases of 2,000 rows through a certified discrete Laplace (eps = 2, N = 12):
    coverage >= 0.93 at nominal 0.95 for the mean and the median; the share above a
    threshold is checked too, and the median interval is informative (narrower than the
    range on average)."""
    n = 12
    g = NumericGrid(0, n - 1, 1)
    x = np.arange(float(n))
    p = np.exp(-((x - n / 3) ** 2) / n)
    p /= p.sum()
    mech = laplace_mechanism(g, p, 2.0)
    q = p @ np.asarray(mech)
    rng = np.random.default_rng(20261207)
    counts = rng.multinomial(2000, q, size=400)
    ests = estimate_numeric_counts(counts, mech, threshold=6)
    assert isinstance(ests, list) and len(ests) == 400
    true_mean = float(p @ x)
    cdf = np.cumsum(p)
    true_median = float(x[np.argmax(cdf >= 0.5)])
    true_share = float(1 - cdf[6])
    cov_mean = np.mean([lo <= true_mean <= hi for lo, hi in (e.mean_interval for e in ests)])
    cov_med = np.mean([lo <= true_median <= hi
                       for lo, hi in (e.quantile_intervals[0.5] for e in ests)])
    cov_share = np.mean([lo <= true_share <= hi
                         for lo, hi in (e.share_above_interval for e in ests)])
    assert cov_mean >= 0.93
    assert cov_med >= 0.93
    assert cov_share >= 0.93
    width = np.mean([hi - lo for lo, hi in (e.quantile_intervals[0.5] for e in ests)])
    assert width < 0.5 * (n - 1)
    assert np.mean([e.converged for e in ests]) >= 0.95


def test_released_values_and_identification():
    g = NumericGrid(10, 15, 1)
    p = np.array([0.1, 0.2, 0.3, 0.2, 0.1, 0.1])
    lap = laplace_mechanism(g, p, 3.0)
    vals = np.repeat(g.values, (p * 600).astype(int))
    est = estimate_numeric(vals, lap, grid=g, threshold=12)
    assert est.identified and est.n == 600
    assert est.mean_interval[0] <= est.mean <= est.mean_interval[1]
    assert set(est.quantiles) == {0.25, 0.5, 0.75}
    d = est.to_dict()
    assert {"mean", "mean_interval", "quantiles"} <= set(d)
    # an ordinal design that merges inputs leaves the mean unidentified: nan, flagged
    lp = ordinal_mechanism(g, p, 0.3)
    if np.linalg.matrix_rank(np.asarray(lp)) < g.n:
        e2 = estimate_numeric(np.asarray(lp.output_labels)[[0, 1, 2] * 50], lp)
        assert not e2.identified and np.isnan(e2.mean)
    with pytest.raises(DataError, match="not an output"):
        estimate_numeric([10, 11, 99], lap)
