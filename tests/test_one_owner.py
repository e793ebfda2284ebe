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
    assert additive.worst_case_p_min(p, beta=beta) == max(p - beta / 2.0, 0.0)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.0, 3.0))
def test_gaussian_l1_interval_matches_hand_formula(q, beta):
    # the delta1 over the ball equals the delta1 over the interval written by hand
    eps = np.array([0.1, 0.7])
    lo, hi = max(q - beta / 2.0, 0.0), min(q + beta / 2.0, 1.0)
    got = additive.gaussian_delta1(1.3, (1.0 - q, q), beta=beta, eps=eps)
    want = additive.gaussian_delta1_interval(1.3, lo, hi, eps=eps)
    np.testing.assert_array_equal(got, want)


def test_certification_tolerance_has_one_owner():
    from pmlkit import audit, worstcase
    from pmlkit.design import _common
    from pmlkit.joint import guarantee as joint_guarantee

    assert worstcase.CERTIFY_TOL == 1e-9
    assert _common.CERTIFY_TOL is worstcase.CERTIFY_TOL
    assert audit.EPS_TOL is worstcase.CERTIFY_TOL
    # joint guarantees re-check with the same tolerance (and decide ties with exceeds)
    assert joint_guarantee.CERTIFY_TOL is worstcase.CERTIFY_TOL


def test_readonly_copies_and_freezes():
    from pmlkit._validation import readonly

    src = np.array([1, 2, 3])
    out = readonly(src)
    assert out.dtype == np.float64 and not out.flags.writeable
    src[0] = 9
    assert out[0] == 1.0
    kept = readonly(src, None)
    assert kept.dtype == src.dtype and not kept.flags.writeable


def test_moved_audit_joint_names_its_new_place():
    # importing pmlkit.audit from pmlkit.joint would go up the layers (tests/
    # test_architecture.py reads string imports too): the old name says where to look
    from pmlkit import joint

    with pytest.raises(AttributeError, match=r"pmlkit\.audit\.audit_joint"):
        joint.audit_joint  # noqa: B018
    with pytest.raises(AttributeError, match="no_such_name"):
        joint.no_such_name  # noqa: B018


def test_version_has_one_place():
    from pmlkit._version import __version__

    assert pmlkit.__version__ == __version__


@pytest.mark.parametrize("gain", ["accuracy", [[1.0, 0.0, 2.0], [0.5, 1.0, 0.0]],
                                  "hamming", [[1.0, 0.0]], [[np.nan, 1.0], [0.0, 1.0]],
                                  [["a", "b"], ["c", "d"]]])
def test_gain_validation_agrees_with_the_designers_copy(gain):
    """utility.check_gain is the owner; the linear designer's gain_matrix must accept and
    refuse exactly the same inputs with the same messages (so it can call the owner)."""
    from pmlkit.design.linear import gain_matrix
    from pmlkit.errors import ValidationError
    from pmlkit.utility import check_gain

    def outcome(fn):
        try:
            return fn(gain, 2).tolist()
        except ValidationError as exc:
            return str(exc)

    assert outcome(check_gain) == outcome(gain_matrix)


def test_expected_gain_by_brute_force():
    from pmlkit.utility import expected_gain

    w = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    p = np.array([0.4, 0.6])
    g = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, 1.0]])
    want = sum(p[i] * g[i, j] * w[i, j] for i in range(2) for j in range(3))
    assert expected_gain(w, p, g) == pytest.approx(want, rel=1e-15)


def test_weissman_radius_against_mpmath():
    from pmlkit.estimation import l1_radius_known_kappa, phi, weissman_radius

    for m, n, delta, kap in [(100, 2, 0.05, 0.1), (5000, 7, 1e-6, 0.3), (30, 3, 0.5, 0.5)]:
        f = mpmath.mpf(phi(kap))
        want = 2 * mpmath.sqrt((mpmath.log(2**n - 2) - mpmath.log(delta)) / (m * f))
        got = l1_radius_known_kappa(delta, m=m, n=n, kappa=kap)
        assert got == pytest.approx(float(want), rel=1e-12)
    assert weissman_radius(1.0, 10, math.inf) == 0.0


def test_empirical_from_counts_matches_counting_the_samples():
    from pmlkit.estimation import empirical_from_counts

    samples = ["b", "a", "c", "a", "b", "a"]
    direct = pmlkit.empirical_distribution(samples, categories=["a", "b", "c", "d"])
    via = empirical_from_counts(["c", "a", "b"], [1, 3, 2], ["a", "b", "c", "d"])
    np.testing.assert_array_equal(direct.counts, via.counts)
    np.testing.assert_array_equal(direct.p, via.p)
    assert via.categories == direct.categories and via.m == direct.m == 6
    sorted_ = empirical_from_counts(["c", "a", "b"], [1, 3, 2])
    assert list(sorted_.categories) == ["a", "b", "c"]


def test_a_dataframe_column_is_never_privatised_twice():
    """columns=['a', 'a'] with two into names used to release the column twice (two
    independent outputs of one record leak more than the mechanism's guarantee)."""
    pd = pytest.importorskip("pandas")
    from pmlkit.errors import ValidationError

    df = pd.DataFrame({"a": [0, 1, 0, 1]})
    with pytest.raises(ValidationError, match="columns and into names must be unique"):
        pmlkit.privatize(np.eye(2), df, columns=["a", "a"], into=["x", "y"], rng=1)


def test_numpy_infinity_in_parameters_saves_like_python_infinity(tmp_path):
    """The mechanism file used its own JSON coercion, which let a numpy inf through to a
    strict json.dumps (ValueError); the one coercion writes it as "inf" like a float inf."""
    a = pmlkit.Mechanism(np.eye(2), parameters={"x": np.float64(np.inf), "k": np.int64(3)})
    b = pmlkit.Mechanism(np.eye(2), parameters={"x": math.inf, "k": 3})
    assert a.to_json() == b.to_json()
    assert a.to_dict()["provenance"]["details"] == {"x": "inf", "k": 3}


def test_cli_and_mechanism_share_one_json_coercion():
    from pmlkit import _mechanism_file, _mechanism_legacy, _validation
    from pmlkit.cli import _common

    assert _common.to_jsonable is _validation.to_jsonable
    # the mechanism file's writer and the older description's conversion (split out of
    # pmlkit.mechanism) use the same one
    assert _mechanism_file.to_jsonable is _validation.to_jsonable
    assert _mechanism_legacy.to_jsonable is _validation.to_jsonable
    assert _validation.to_jsonable({1: (np.float32(-np.inf), np.array([np.nan]))}) == {
        "1": ["-inf", ["nan"]]}


def test_analysis_reads_a_mechanism_object_without_importing_the_model():
    """leakage/worstcase/utility take a Mechanism through _validation.as_mechanism (the
    model layer is above them): same numbers as for its matrix, and a private copy."""
    from pmlkit._validation import as_mechanism
    from pmlkit.sets import L1Ball

    rng = np.random.default_rng(4)
    w = rng.dirichlet(np.ones(4), size=3)
    p = rng.dirichlet(np.ones(3))
    mech = pmlkit.Mechanism(w)
    copy = as_mechanism(mech)
    assert copy.flags.writeable and not np.shares_memory(copy, mech.matrix)
    np.testing.assert_array_equal(copy, mech.matrix)
    assert pmlkit.eps_min(mech, p) == pmlkit.eps_min(w, p)
    assert pmlkit.mutual_information(mech, p) == pmlkit.mutual_information(w, p)
    ball = L1Ball(p, 0.1)
    assert pmlkit.leakage_capacity(mech, ball) == pmlkit.leakage_capacity(w, ball)
