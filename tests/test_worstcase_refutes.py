"""``refutes`` against an independent evaluation in exact arithmetic (mpmath): a claim
is refuted only when the exact worst case is above it, and every claim at least a
margin below the exact worst case is refuted."""

from __future__ import annotations

import mpmath
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pmlkit.sets import VertexSet
from pmlkit.worstcase import certifies, refutes


def _exact_worst(w: np.ndarray) -> mpmath.mpf:
    """Worst case over every distribution (the vertices): max over columns of
    log(max_x W[x, y] / min_x W[x, y]), in 60-digit arithmetic."""
    mpmath.mp.dps = 60
    best = mpmath.mpf(0)
    for col in w.T:
        vals = [mpmath.mpf(float(v)) for v in col]
        if max(vals) == 0:
            continue
        if min(vals) == 0:
            return mpmath.inf
        best = max(best, mpmath.log(max(vals) / min(vals)))
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(2, 5), st.integers(0, 2**32 - 1),
       st.floats(-1e-9, 1e-9))
def test_refutes_only_what_is_false(n: int, k: int, seed: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.05, 1.0, (n, k))
    w /= w.sum(axis=1, keepdims=True)
    every = VertexSet(np.eye(n))
    exact = _exact_worst(w)
    eps = max(0.0, float(exact) + shift)
    if refutes(w, every, eps):
        assert exact > mpmath.mpf(eps)  # a refuted claim is false
    if certifies(w, every, eps):
        assert exact <= mpmath.mpf(eps)  # a certified claim is true
    assert not (refutes(w, every, eps) and certifies(w, every, eps))
    if exact - mpmath.mpf(eps) > mpmath.mpf(1e-12):
        assert refutes(w, every, eps)  # a claim clearly below the worst case is caught


def test_an_infinite_worst_case_refutes_every_claim() -> None:
    w = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert refutes(w, VertexSet(np.eye(2)), 1e300)
