"""Formulas that used to be written several times now have one owner; these tests check
each owner against an independent computation and check that the former copies agree."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit import additive


@pytest.mark.parametrize("b", [0.05, 0.3, 1.0, 2.5, 40.0])
def test_laplace_flip_probability_is_the_laplace_tail(b):
    # P(L > 1) for L ~ Laplace(0, b), by numerical integration of the density
    tail = mpmath.quad(lambda x: mpmath.exp(-x / b) / (2 * b), [1, mpmath.inf])
    assert additive.laplace_flip_probability(b) == pytest.approx(float(tail), rel=1e-12)
    w = np.asarray(additive.laplace_binarized_channel(b).matrix)
    assert w[0, 1] == w[1, 0] == additive.laplace_flip_probability(b)


@pytest.mark.parametrize("sigma", [0.05, 0.4, 1.0, 3.0, 50.0])
def test_gaussian_flip_probability_is_the_gaussian_tail(sigma):
    tail = mpmath.quad(lambda x: mpmath.npdf(x, 0, sigma), [1, mpmath.inf])
    assert additive.gaussian_flip_probability(sigma) == pytest.approx(float(tail), rel=1e-10)
    w = np.asarray(additive.gaussian_binarized_channel(sigma).matrix)
    assert w[0, 1] == w[1, 0] == additive.gaussian_flip_probability(sigma)


def test_binarized_samplers_flip_at_the_owner_probability():
    x = np.ones(200_000, dtype=np.int8)
    for fn, scale, r in [(additive.laplace_binarized, 0.8, additive.laplace_flip_probability),
                         (additive.gaussian_binarized, 0.8, additive.gaussian_flip_probability)]:
        rate = float((fn(x, scale, rng=3) == -1).mean())
        p = r(scale)
        assert abs(rate - p) < 5 * math.sqrt(p * (1 - p) / x.size)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 0.5), st.floats(0.0, 3.0))
def test_worst_case_p_min_is_the_l1_ball_minimum(p, beta):
    # by hand: moving beta/2 of mass out of the smaller entry, never below 0
    assert additive.worst_case_p_min(p, beta) == max(p - beta / 2.0, 0.0)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.0, 3.0))
def test_gaussian_l1_interval_matches_hand_formula(q, beta):
    # the delta1 over the ball equals the delta1 over the interval written by hand
    eps = np.array([0.1, 0.7])
    lo, hi = max(q - beta / 2.0, 0.0), min(q + beta / 2.0, 1.0)
    got = additive.gaussian_delta1(1.3, (1.0 - q, q), beta, eps)
    want = additive.gaussian_delta1_interval(1.3, lo, hi, eps)
    np.testing.assert_array_equal(got, want)


def test_certification_tolerance_has_one_owner():
    from pmlkit import audit, joint, worstcase
    from pmlkit.design import _common

    assert worstcase.CERTIFY_TOL == 1e-9
    assert _common.CERTIFY_TOL is worstcase.CERTIFY_TOL
    assert audit.EPS_TOL is worstcase.CERTIFY_TOL
    assert joint.EPS_TOL is worstcase.CERTIFY_TOL


def test_readonly_copies_and_freezes():
    from pmlkit._validation import readonly

    src = np.array([1, 2, 3])
    out = readonly(src)
    assert out.dtype == np.float64 and not out.flags.writeable
    src[0] = 9
    assert out[0] == 1.0
    kept = readonly(src, None)
    assert kept.dtype == src.dtype and not kept.flags.writeable


def test_moved_audit_joint_is_still_reachable_from_joint():
    from pmlkit import audit, joint

    assert joint.audit_joint is audit.audit_joint
    with pytest.raises(AttributeError):
        joint.no_such_name  # noqa: B018


def test_version_has_one_place():
    from pmlkit._version import __version__

    assert pmlkit.__version__ == __version__
