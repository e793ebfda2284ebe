"""Contraction coefficients within a c-interior budget for any number of inputs, with the
mechanisms that attain them, and the sample-size planner: against the binary closed form,
a brute-force grid search over two-output mechanisms, random mechanisms within the budget,
and Monte Carlo runs of the likelihood-ratio test."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pmlkit.errors import ValidationError
from pmlkit.interior import (
    binary_interior_extremal,
    distinguishing_samples,
    dobrushin_coefficient,
    hockey_stick_coefficient,
    interior_contraction_bound,
    interior_eps,
)


def within_budget(w: np.ndarray, eps: float, c: float) -> bool:
    """c-interior eps-PML by the definition: every column's largest entry over its
    smallest probability under a floored prior (c everywhere, the rest on the row where
    the column is smallest), computed here without pmlkit."""
    n = w.shape[0]
    for col in w.T:
        low = c * col.sum() + (1 - n * c) * col.min()
        if col.max() > 0 and (low <= 0 or col.max() / low > math.exp(eps) * (1 + 1e-12)):
            return False
    return True


@pytest.mark.parametrize(("eps", "c"), [(0.5, 0.0), (math.log(3), 0.2), (1.0, 0.3),
                                        (0.2, 0.45)])
def test_two_inputs_equal_the_closed_form(eps: float, c: float) -> None:
    eta, w = interior_contraction_bound(2, eps, c)
    closed, _ = binary_interior_extremal(eps, c)
    assert eta == pytest.approx(closed, abs=2e-9)
    assert within_budget(w, eps, c)
    assert dobrushin_coefficient(w) == pytest.approx(closed, abs=1e-7)


@pytest.mark.parametrize(("n", "eps", "c", "gamma"), [(3, 1.0, 0.1, 1.0), (3, 0.7, 0.0, 1.0),
                                                      (3, 1.0, 0.2, 1.5), (4, 1.2, 0.1, 1.0)])
def test_brute_force_over_two_output_mechanisms(n: int, eps: float, c: float,
                                                gamma: float) -> None:
    """Every two-output mechanism on a grid of u in [0, 1]^n within the budget has
    u_0 - gamma u_1 (its coefficient for that pair) at most the bound, and the best grid
    point comes close to it; the returned mechanism is within the budget and attains it."""
    eta, w = interior_contraction_bound(n, eps, c, gamma=gamma)
    assert within_budget(w, eps, c)
    assert interior_eps(w, c) <= eps + 1e-12
    attained = hockey_stick_coefficient(w, gamma)
    assert attained == pytest.approx(eta, abs=1e-7)
    steps = np.linspace(0, 1, 21 if n == 3 else 11)
    best = 0.0
    for u in itertools.product(steps, repeat=n):
        uu = np.array(u)
        cand = np.column_stack([uu, 1 - uu])
        if within_budget(cand, eps, c):
            val = max(hockey_stick_coefficient(cand, gamma), 0.0)
            assert val <= eta + 1e-12
            best = max(best, val)
    assert best >= eta - (0.15 if n == 3 else 0.3)


@pytest.mark.parametrize("c", [0.0, 0.1, 0.25])
def test_random_mechanisms_within_budget_never_exceed(c: float) -> None:
    rng = np.random.default_rng(int(1000 * c) + 7)
    eps, n = 1.0, 3
    eta, _ = interior_contraction_bound(n, eps, c)
    eta2, _ = interior_contraction_bound(n, eps, c, gamma=2.0)
    seen = 0
    for _ in range(3000):
        m = int(rng.integers(2, 6))
        lam = rng.uniform(0.05, 1.0)
        w = (1 - lam) / m + lam * rng.dirichlet(np.full(m, 0.5), size=n)
        if within_budget(w, eps, c):
            seen += 1
            assert dobrushin_coefficient(w) <= eta + 1e-12
            assert hockey_stick_coefficient(w, 2.0) <= eta2 + 1e-12
    assert seen > 100


def lr_test_error(w: np.ndarray, p: np.ndarray, q: np.ndarray, n: int, trials: int,
                  rng: np.random.Generator) -> float:
    """Monte Carlo: type I + type II error of the likelihood-ratio test (decide Q when
    Q^n(y) > P^n(y), ties split evenly) on n released values."""
    py, qy = p @ w, q @ w
    llr = np.log(qy) - np.log(py)
    total = 0.0
    for truth, dist in ((0, py), (1, qy)):
        counts = rng.multinomial(n, dist, size=trials)
        s = counts @ llr
        say_q = np.where(np.abs(s) < 1e-12, 0.5, (s > 0).astype(float))
        total += float(np.mean(say_q if truth == 0 else 1 - say_q))
    return total


@pytest.mark.parametrize("error", [0.1, 0.3])
def test_planner_by_monte_carlo(error: float) -> None:
    rng = np.random.default_rng(36)
    w = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]])
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.3, 0.3, 0.4])
    plan = distinguishing_samples(w, p, q, error)
    assert plan.necessary is not None and plan.sufficient is not None
    assert plan.necessary <= plan.sufficient
    trials = 20_000
    slack = 3 * math.sqrt(2 * 0.25 / trials)
    # enough: the likelihood-ratio test reaches the target
    assert lr_test_error(w, p, q, plan.sufficient, trials, rng) <= error + slack
    # too few: even the best test (likelihood ratio, optimal for type I + type II) misses
    if plan.necessary > 1:
        assert lr_test_error(w, p, q, plan.necessary - 1, trials, rng) > error - slack
    # the contraction coefficient version is smaller and also necessary
    assert plan.necessary_any is not None and plan.necessary_any <= plan.necessary
    tv_out = 0.5 * np.abs((p - q) @ w).sum()
    assert plan.tv_outputs == pytest.approx(tv_out, abs=1e-15)
    assert plan.eta == pytest.approx(dobrushin_coefficient(w))


def test_planner_for_every_mechanism_in_a_budget() -> None:
    """necessary_any with the budget's coefficient never exceeds what a mechanism in the
    budget needs; the attaining mechanism meets it with its own TV."""
    eps, c = 1.0, 0.1
    eta, w_star = interior_contraction_bound(3, eps, c)
    p = np.array([1.0, 0.0, 0.0]) * (1 - 3 * c) + c
    q = np.array([0.0, 1.0, 0.0]) * (1 - 3 * c) + c
    rng = np.random.default_rng(5)
    floor = distinguishing_samples(w_star, p, q, 0.2, eta=eta).necessary_any
    assert floor is not None
    for _ in range(300):
        w = 0.6 / 3 + 0.4 * rng.dirichlet(np.full(3, 0.5), size=3)
        if within_budget(w, eps, c):
            plan = distinguishing_samples(w, p, q, 0.2)
            assert plan.necessary is None or plan.necessary >= floor


def test_errors() -> None:
    with pytest.raises(ValidationError, match=r"c must be in \[0, 1/N\]"):
        interior_contraction_bound(3, 1.0, 0.5)
    with pytest.raises(ValidationError, match="gamma"):
        interior_contraction_bound(3, 1.0, 0.1, gamma=0.5)
    with pytest.raises(ValidationError, match="error"):
        distinguishing_samples(np.eye(2), [0.5, 0.5], [0.4, 0.6], 1.0)
    with pytest.raises(ValidationError, match="eta"):
        distinguishing_samples(np.eye(2), [0.5, 0.5], [0.4, 0.6], 0.1, eta=2.0)
    plan = distinguishing_samples(np.full((2, 2), 0.5), [0.5, 0.5], [0.4, 0.6], 0.1)
    assert plan.necessary is None and plan.sufficient is None   # nothing leaks
