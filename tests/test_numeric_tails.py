"""Post-processing-robust tails: the bounds hold for every merge of outputs and for
randomised post-processings (checked by brute force), the knapsack bound sits between
the channel's own tail and the Markov bound, and the counterexample of SPEC 10.2."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmlkit import pml
from pmlkit.numeric.tails import (
    maximal_leakage_delta,
    postprocessing_delta,
    postprocessing_delta_over_set,
    tail_probability,
)
from pmlkit.sets import L1Ball

K = np.array([[0.003, 0.18, 0.809, 0.008], [0.127, 0.014, 0.842, 0.017]])


def test_counterexample_merging_raises_the_tail():
    p = np.array([0.5, 0.5])
    assert tail_probability(K, p, 0.0758) == pytest.approx(0.1745)
    merged = np.column_stack([K[:, 0] + K[:, 2], K[:, 1], K[:, 3]])
    assert tail_probability(merged, p, 0.0758) == pytest.approx(1.0)
    assert postprocessing_delta(K, p, 0.0758) >= 1.0 - 1e-12
    assert maximal_leakage_delta(K, 0.0758) >= 1.0 - 1e-12


def _tail(w, p, t):
    q = p @ w
    v = pml(w, p)
    return float(q[(q > 0) & (v > t)].sum())


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2 ** 31), n=st.integers(2, 5), m=st.integers(2, 7),
       t=st.floats(0.0, 2.0))
def test_bounds_hold_for_every_post_processing(seed, n, m, t):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(m, 0.7), size=n)
    p = rng.dirichlet(np.ones(n))
    pp = postprocessing_delta(w, p, t)
    ml = maximal_leakage_delta(w, t)
    assert tail_probability(w, p, t) <= pp + 1e-12
    assert pp <= ml + 1e-12
    for _ in range(20):  # deterministic merges
        k = int(rng.integers(1, m + 1))
        g = rng.integers(0, k, size=m)
        z = np.zeros((m, k))
        z[np.arange(m), g] = 1.0
        assert _tail(w @ z, p, t) <= pp + 1e-12
    for _ in range(10):  # randomised post-processings
        z = rng.dirichlet(np.full(3, 0.5), size=m)
        assert _tail(w @ z, p, t) <= pp + 1e-12


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 31), n=st.integers(2, 5), m=st.integers(2, 6),
       t=st.floats(0.0, 1.5), radius=st.floats(0.0, 0.6))
def test_set_bound_covers_every_prior_of_the_set(seed, n, m, t, radius):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(m, 0.7), size=n)
    center = rng.dirichlet(np.full(n, 2.0))
    ball = L1Ball(center, radius)
    bound = postprocessing_delta_over_set(w, ball, t)
    assert bound <= maximal_leakage_delta(w, t) + 1e-12
    for q in ball.sample(15, rng=rng):
        q = q / q.sum()
        assert postprocessing_delta(w, q, t) <= bound + 1e-9
        k = int(rng.integers(1, m + 1))
        z = np.zeros((m, k))
        z[np.arange(m), rng.integers(0, k, size=m)] = 1.0
        assert _tail(w @ z, q, t) <= bound + 1e-9
