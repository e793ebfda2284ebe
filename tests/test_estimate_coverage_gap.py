"""A known shortfall of the MLE intervals, pinned: under a mechanism that adds little
noise, a category near ``P = 2/n`` is often unseen and the interval's upper end (near
``1.9/n``) then misses it. Exact coverage by enumerating every count (two categories)
is about 0.85 instead of 0.95. The test asserts what the intervals should do and is an
expected failure until they do (docs/estimation.md, "Known shortfall")."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from pmlkit.inference import estimate_from_counts


def _krr(eps: float) -> np.ndarray:
    e = np.exp(eps)
    return np.array([[e, 1.0], [1.0, e]]) / (e + 1.0)


def _min_exact_coverage(w: np.ndarray, n: int) -> float:
    ends = [estimate_from_counts([k, n - k], w) for k in range(n + 1)]
    lo = np.array([r.lower[0] for r in ends])
    hi = np.array([r.upper[0] for r in ends])
    worst = 1.0
    for p in np.unique(np.concatenate([np.linspace(0.0, 1.0, 101),
                                       np.geomspace(1e-3, 0.2, 60)])):
        q = p * w[0, 0] + (1.0 - p) * w[1, 0]
        inside = (lo - 1e-12 <= p) & (p <= hi + 1e-12)
        worst = min(worst, float(binom.pmf(np.arange(n + 1), n, q)[inside].sum()))
    return worst


def test_noisy_randomized_response_covers() -> None:
    # eps = 1: the sweep of docs/estimation.md stays at 0.93 to 0.94 (small n, discrete)
    assert _min_exact_coverage(_krr(1.0), 30) >= 0.92


@pytest.mark.xfail(strict=True, reason="known shortfall: an unseen rare category under a "
                   "low-noise mechanism (exact coverage 0.85 at k-RR eps = 8, n = 30)")
def test_low_noise_rare_category_covers() -> None:
    assert _min_exact_coverage(_krr(8.0), 30) >= 0.93
