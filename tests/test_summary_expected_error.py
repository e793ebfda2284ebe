"""The design summary's expected estimation error is what it says (issue 35, item 7): the
expected squared L2 (and L1) error of the maximum-likelihood estimate from n released rows,
checked against a simulation written here (numpy draws with another seed; the estimate by
a closed form on two categories and a plain EM on more)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pmlkit import summarize_mechanism
from pmlkit.design.estimation import estimation_mse


def binary_mle(c1: np.ndarray, n: int, w: np.ndarray) -> np.ndarray:
    """Two categories: q1 = w[0,1] + P1 (w[1,1] - w[0,1]) is monotone in P1, so the MLE
    over [0, 1] is the inversion clipped to [0, 1]."""
    p1 = np.clip((c1 / n - w[0, 1]) / (w[1, 1] - w[0, 1]), 0.0, 1.0)
    return np.stack([1 - p1, p1], axis=1)


def plain_em(w: np.ndarray, counts: np.ndarray, steps: int) -> np.ndarray:
    f = counts / counts.sum(axis=1, keepdims=True)
    p = np.full((counts.shape[0], w.shape[0]), 1.0 / w.shape[0])
    for _ in range(steps):
        p = p * ((f / (p @ w)) @ w.T)
        p /= p.sum(axis=1, keepdims=True)
    return p


def simulate(w: np.ndarray, p: np.ndarray, n: int, reps: int, estimator
             ) -> tuple[float, float, float]:
    rng = np.random.default_rng(12345)
    counts = rng.multinomial(n, p @ w, size=reps)
    est = estimator(counts)
    sq = ((est - p) ** 2).sum(axis=1)
    return float(sq.mean()), float(sq.std(ddof=1) / math.sqrt(reps)), \
        float(np.abs(est - p).sum(axis=1).mean())


def krr(k: int, eps: float) -> np.ndarray:
    e = math.exp(eps)
    w = np.full((k, k), 1 / (e + k - 1))
    np.fill_diagonal(w, e / (e + k - 1))
    return w


CASES = [
    # balanced randomized response, interior: about the asymptotic 2 / n
    ("rr", np.array([[0.75, 0.25], [0.25, 0.75]]), np.array([0.5, 0.5]), 1000),
    # a nearly useless binary channel at n = 100: the asymptotic tr C / n is 12.5, more
    # than 2, the largest squared distance between two distributions
    ("noisy", np.array([[0.51, 0.49], [0.49, 0.51]]), np.array([0.3, 0.7]), 100),
    # four categories through 4-RR at eps = 1.5, one rare: the estimate hits the boundary
    ("krr4", krr(4, 1.5), np.array([0.55, 0.3, 0.13, 0.02]), 300),
]


@pytest.mark.parametrize(("name", "w", "p", "n"), CASES, ids=[c[0] for c in CASES])
def test_summary_error_matches_simulation(name: str, w: np.ndarray, p: np.ndarray,
                                          n: int) -> None:
    s = summarize_mechanism(w, p, n=n, replicates=600)
    assert s.identifiable and s.estimation_n == n and s.estimation_replicates == 600
    if w.shape[0] == 2:
        sim, se, l1 = simulate(w, p, n, 4000, lambda c: binary_mle(c[:, 1], n, w))
    else:
        sim, se, l1 = simulate(w, p, n, 1500, lambda c: plain_em(w, c, 20_000))
    tol = 5 * math.hypot(se, s.estimation_mse_se)
    assert abs(s.estimation_mse - sim) <= tol, (s.estimation_mse, sim, tol)
    assert s.estimation_l1 == pytest.approx(l1, rel=0.1)
    assert 0 <= s.estimation_mse <= 2
    doc = s.to_dict()["estimation"]
    assert doc["expected_squared_error"] == s.estimation_mse and doc["n"] == n
    assert doc["method"] == "simulation" and "maximum likelihood" in doc["estimator"]
    assert f"n = {n} released rows" in str(s)


def test_the_asymptotic_value_would_have_been_impossible() -> None:
    """The case the trial met: the asymptotic formula exceeds 2 while the estimate's real
    error is far below; the summary states the real one."""
    w, p, n = CASES[1][1], CASES[1][2], CASES[1][3]
    assert estimation_mse(w, p, n) > 2
    s = summarize_mechanism(w, p, n=n)
    assert s.estimation_mse < 1 < 2 < estimation_mse(w, p, n)


def test_summary_is_reproducible_and_says_not_identifiable() -> None:
    w, p = krr(3, 1.0), np.array([0.5, 0.3, 0.2])
    a, b = summarize_mechanism(w, p, n=200), summarize_mechanism(w, p, n=200)
    assert a.estimation_mse == b.estimation_mse and a.estimation_l1 == b.estimation_l1
    merged = summarize_mechanism([[0.5, 0.5], [0.5, 0.5], [0.1, 0.9]], [0.2, 0.3, 0.5])
    assert not merged.identifiable and merged.estimation_mse == math.inf
    assert merged.to_dict()["estimation"]["expected_squared_error"] is None
