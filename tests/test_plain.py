"""eps in plain words (pmlkit.plain): the guessing statement checked by brute force over
every function of X, and the precision planner checked by Monte Carlo."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import pmlkit as pk
from pmlkit.errors import ValidationError
from pmlkit.plain import eps_for_precision, plain_reading, plain_sentence


@pytest.mark.parametrize("seed", range(10))
def test_guessing_any_function_rises_at_most_by_e_eps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = 4, 3
    w = rng.dirichlet(np.ones(m), size=n)
    p = rng.dirichlet(np.ones(n))
    eps = pk.eps_min(w, p)
    reading = plain_reading(eps)
    py = p @ w
    # every deterministic function U = f(X) with up to n values
    for labels in itertools.product(range(n), repeat=n):
        f = np.array(labels)
        prior_guess = min(1.0, max(p[f == u].sum() for u in set(labels)))
        for y in range(m):
            post = max((p * w[:, y])[f == u].sum() / py[y] for u in set(labels))
            assert post <= reading.posterior(prior_guess) + 1e-12
    # tight for the identity at the worst output
    y = int(np.nanargmax(pk.pml(w, p)))
    post_x = (p * w[:, y]) / py[y]
    i = int(np.argmax(post_x / p))
    assert post_x[i] == pytest.approx(reading.factor * p[i], rel=1e-12)


def test_sentence() -> None:
    s = plain_sentence(math.log(3), subject="the value of column 'sex'")
    assert "at most 3x" in s and "column 'sex'" in s and "50% -> 100%" in s
    assert str(plain_reading(math.log(3))).startswith("in plain words")


def test_planner_monte_carlo_binary() -> None:
    """At the worst case (frequency 1/2) the interval +-h has the stated coverage at the
    planned eps, and clearly less at half of it."""
    n, h, k = 2500, 0.04, 2
    eps = eps_for_precision(h, n, categories=k, confidence_level=0.95)
    rng = np.random.default_rng(3)

    def coverage(e: float) -> float:
        keep = math.exp(e) / (math.exp(e) + 1)
        other = 1 - keep
        released = rng.binomial(n, 0.5 * keep + 0.5 * other, size=40_000) / n
        est = (released - other) / (keep - other)
        return float(np.mean(np.abs(est - 0.5) <= h))

    assert coverage(eps) == pytest.approx(0.95, abs=0.01)
    assert coverage(eps / 2) < 0.85


def test_planner_monte_carlo_k_ary() -> None:
    n, h, k = 3000, 0.05, 4
    eps = eps_for_precision(h, n, categories=k, confidence_level=0.9)
    e = math.exp(eps)
    keep, other = e / (e + k - 1), 1 / (e + k - 1)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    released_law = p * keep + (1 - p) * other
    rng = np.random.default_rng(4)
    counts = rng.multinomial(n, released_law, size=20_000) / n
    est = (counts - other) / (keep - other)
    cover = np.mean(np.abs(est - p) <= h, axis=0)
    assert (cover >= 0.9 - 0.01).all()


def test_planner_limits_and_errors() -> None:
    assert eps_for_precision(0.001, 10) == math.inf
    assert eps_for_precision(0.1, 10**8) < 0.01
    with pytest.raises(ValidationError, match="half_width"):
        eps_for_precision(0.0, 100)
    with pytest.raises(ValidationError, match=r"confidence_level must be in \(0, 1\), got 1"):
        eps_for_precision(0.1, 100, confidence_level=1.0)
    with pytest.raises(ValidationError, match="categories"):
        eps_for_precision(0.1, 100, categories=1)
    with pytest.raises(ValidationError, match="prior_probability"):
        plain_reading(1.0).posterior(1.5)
    assert pk.eps_for_precision is eps_for_precision


def test_plain_words_in_reports() -> None:
    res = pk.design_from_samples(["a"] * 60 + ["b"] * 40, math.log(2), 1e-3)
    assert "at most 2x" in str(res.guarantee)
    assert "at most 2x" in str(res.mechanism.guarantee)
    assert "in plain words" in res.guarantee._repr_html_()
    assert "at most 2x" in res.mechanism._repr_html_()
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 300)
    b = (a + (rng.random(300) < 0.2)) % 2
    rr = np.array([[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    g = pk.joint_guarantee([rr, rr], [a, b], 0.1)
    html = g._repr_html_()
    assert "from ALL released values" in html
    assert f"at most {math.exp(g.eps):.3g}x" in html


def test_planner_level_is_confidence_level_and_the_old_name_still_works() -> None:
    """An interval's level is ``confidence_level`` (``confidence`` is a set's method); the
    old keyword gives the same eps with a DeprecationWarning naming both, for one release.
    The value is the closed form ``z / (2 h sqrt(n))`` with ``z`` from the standard library
    (90%: z = 1.6449), not the code's."""
    from statistics import NormalDist

    n, h, k = 2500, 0.04, 3
    r = NormalDist().inv_cdf(0.95) / (2 * h * math.sqrt(n))
    want = math.log((1 + (k - 1) * r) / (1 - r))
    new = eps_for_precision(h, n, categories=k, confidence_level=0.9)
    assert new == pytest.approx(want, rel=1e-12)
    with pytest.warns(DeprecationWarning, match="'confidence'.*'confidence_level'"):
        old = eps_for_precision(h, n, categories=k, confidence=0.9)
    assert old == new
    with pytest.raises(ValidationError, match="confidence_level"):
        eps_for_precision(h, n, confidence=0.9, confidence_level=0.9)
