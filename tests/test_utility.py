"""Mutual information and the per-column sub-linear functions, against independent formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import entr

import pmlkit
from pmlkit.errors import ValidationError
from pmlkit.utility import accuracy, expected_gain, mutual_information_columns


def _entropy(p: np.ndarray) -> float:
    return float(entr(p).sum())


def _mi_entropies(w: np.ndarray, p: np.ndarray) -> float:
    """I(X;Y) = H(X) + H(Y) - H(X,Y), independent of the column formula."""
    joint = p[:, None] * w
    return _entropy(p) + _entropy(joint.sum(axis=0)) - _entropy(joint.ravel())


def _random_mechanism(rng: np.random.Generator, n: int, m: int, zeros: bool) -> np.ndarray:
    w = rng.dirichlet(np.ones(m), size=n)
    if zeros:
        w[rng.random(w.shape) < 0.3] = 0.0
        w[:, 0] += 1e-3
        w /= w.sum(axis=1, keepdims=True)
    return w


@settings(max_examples=40)
@given(st.integers(1, 6), st.integers(1, 6), st.booleans(), st.integers(0, 10_000))
def test_mi_matches_entropy_decomposition(n, m, zeros, seed):
    rng = np.random.default_rng(seed)
    w = _random_mechanism(rng, n, m, zeros)
    p = rng.dirichlet(np.ones(n))
    if zeros and n > 1:
        p[0] = 0.0
        p /= p.sum()
    assert pmlkit.mutual_information(w, p) == pytest.approx(_mi_entropies(w, p), abs=1e-12)


def test_mi_closed_forms():
    # identity: I = H(X); constant rows: I = 0; binary symmetric channel: log 2 - h(a)
    p = np.array([0.5, 0.25, 0.25])
    assert pmlkit.mutual_information(np.eye(3), p) == pytest.approx(1.5 * math.log(2))
    assert pmlkit.mutual_information(np.full((3, 2), 0.5), p) == 0.0
    a = 0.1
    bsc = np.array([[1 - a, a], [a, 1 - a]])
    h = -(a * math.log(a) + (1 - a) * math.log(1 - a))
    assert pmlkit.mutual_information(bsc, [0.5, 0.5]) == pytest.approx(math.log(2) - h)


@settings(max_examples=40)
@given(st.integers(2, 6), st.integers(0, 10_000), st.floats(0.0, 50.0))
def test_column_mu_is_sublinear(n, seed, c):
    """mu(c w) = c mu(w) and mu((w + v)/2) <= (mu(w) + mu(v))/2 (sub-linear)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    w, v = rng.random(n), rng.random(n)
    mu = mutual_information_columns
    assert mu(c * w, p) == pytest.approx(c * mu(w, p), rel=1e-9, abs=1e-12)
    assert mu((w + v) / 2, p) <= (mu(w, p) + mu(v, p)) / 2 + 1e-12
    assert mu(w, p) >= -1e-15
    both = mu(np.stack([w, v], axis=1), p)
    assert both.shape == (2,)
    assert both[0] == pytest.approx(mu(w, p))


def test_linear_utilities():
    p = np.array([0.2, 0.8])
    w = np.array([[0.7, 0.3], [0.4, 0.6]])
    assert accuracy(w, p) == pytest.approx(0.2 * 0.7 + 0.8 * 0.6)
    ham = -(1 - np.eye(2))
    assert expected_gain(w, p, ham) == pytest.approx(-(0.2 * 0.3 + 0.8 * 0.4))


def test_errors_name_the_parameter():
    with pytest.raises(ValidationError, match="prior"):
        pmlkit.mutual_information(np.eye(2), [0.5, 0.6])
    with pytest.raises(ValidationError, match="prior"):
        pmlkit.mutual_information(np.eye(2), [1.0, 0.0, 0.0])
    with pytest.raises(ValidationError, match="mechanism"):
        pmlkit.mutual_information([[0.5, 0.6], [0.5, 0.5]], [0.5, 0.5])
    with pytest.raises(ValidationError, match="columns"):
        mutual_information_columns(np.ones((3, 2)), [0.5, 0.5])
    with pytest.raises(ValidationError, match="gain"):
        expected_gain(np.eye(2), [0.5, 0.5], np.ones((3, 2)))
    with pytest.raises(ValidationError, match="square"):
        accuracy(np.full((2, 3), 1 / 3), [0.5, 0.5])
