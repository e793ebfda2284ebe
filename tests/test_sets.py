"""Uncertainty sets (pmlkit.sets): exact linear optimisation against scipy HiGHS LPs and
brute force, coordinate bounds against LPs, membership, serialisation, validation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

import pmlkit as pk
from pmlkit.errors import InfeasibleError, ValidationError
from pmlkit.sets import set_from_dict


def lp_ball(p, beta, c, sense=1):
    """sense * min (sense * c) . Q over the simplex and the l1-ball (variables Q, s)."""
    n = len(p)
    eye = np.eye(n)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
    b_ub = np.concatenate((p, -p, [beta]))
    a_eq = np.concatenate((np.ones(n), np.zeros(n)))[None, :]
    res = linprog(np.concatenate((sense * c, np.zeros(n))), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq,
                  b_eq=[1.0], bounds=(0, None), method="highs")
    assert res.status == 0
    return sense * res.fun


def lp_box(lo, hi, c, sense=1):
    res = linprog(sense * c, A_eq=np.ones((1, len(lo))), b_eq=[1.0],
                  bounds=list(zip(lo, hi, strict=True)), method="highs")
    assert res.status == 0
    return sense * res.fun


@st.composite
def ball_case(draw, max_n=7):
    n = draw(st.integers(1, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = rng.dirichlet(np.ones(n)) * (rng.random(n) > draw(st.sampled_from([0.0, 0.4])))
    if p.sum() == 0:
        p[0] = 1.0
    p /= p.sum()
    beta = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0, 1.9, 2.0, 3.0]))
    w = rng.normal(size=(n, draw(st.integers(1, 5))))
    return p, beta, w


@st.composite
def box_case(draw, max_n=7):
    n = draw(st.integers(1, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q = rng.dirichlet(np.ones(n))
    lo = np.clip(q - rng.random(n) * 0.3, 0, 1) * (rng.random(n) > 0.2)
    hi = np.clip(q + rng.random(n) * 0.3, 0, 1)
    w = rng.normal(size=(n, draw(st.integers(1, 5))))
    return lo, hi, w


@given(ball_case())
def test_ball_linear_optimisation_matches_lp(case):
    p, beta, w = case
    ball = pk.L1Ball(p, beta)
    ref_min = [lp_ball(p, beta, w[:, j]) for j in range(w.shape[1])]
    ref_max = [lp_ball(p, beta, w[:, j], -1) for j in range(w.shape[1])]
    np.testing.assert_allclose(ball.min_linear(w), ref_min, atol=1e-9)
    np.testing.assert_allclose(ball.max_linear(w), ref_max, atol=1e-9)
    q = ball.argmin_linear(w)
    assert all(ball.contains(row) for row in q)
    np.testing.assert_allclose(np.einsum("mn,nm->m", q, w), ref_min, atol=1e-9)
    qmax = ball.argmax_linear(w)
    np.testing.assert_allclose(np.einsum("mn,nm->m", qmax, w), ref_max, atol=1e-9)


@given(box_case())
def test_box_linear_optimisation_matches_lp(case):
    lo, hi, w = case
    try:
        box = pk.Box(lo, hi)
    except InfeasibleError:
        assert lo.sum() > 1 or hi.sum() < 1
        return
    ref_min = [lp_box(lo, hi, w[:, j]) for j in range(w.shape[1])]
    np.testing.assert_allclose(box.min_linear(w), ref_min, atol=1e-9)
    np.testing.assert_allclose(box.max_linear(w),
                               [lp_box(lo, hi, w[:, j], -1) for j in range(w.shape[1])],
                               atol=1e-9)
    q = box.argmin_linear(w)
    assert all(box.contains(row) for row in q)
    np.testing.assert_allclose(np.einsum("mn,nm->m", q, w), ref_min, atol=1e-9)


@given(ball_case(max_n=6))
def test_ball_coordinate_bounds_match_lp(case):
    p, beta, _ = case
    lo, hi = pk.L1Ball(p, beta).coordinate_bounds()
    eye = np.eye(len(p))
    np.testing.assert_allclose(lo, [lp_ball(p, beta, e) for e in eye], atol=1e-9)
    np.testing.assert_allclose(hi, [lp_ball(p, beta, e, -1) for e in eye], atol=1e-9)


@given(box_case(max_n=6))
def test_box_coordinate_bounds_match_lp(case):
    lo, hi, _ = case
    assert lo.sum() <= 1 <= hi.sum()  # box_case brackets a distribution: never empty
    tlo, thi = pk.Box(lo, hi).coordinate_bounds()
    eye = np.eye(len(lo))
    np.testing.assert_allclose(tlo, [lp_box(lo, hi, e) for e in eye], atol=1e-9)
    np.testing.assert_allclose(thi, [lp_box(lo, hi, e, -1) for e in eye], atol=1e-9)


def test_vertex_set_against_brute_force():
    rng = np.random.default_rng(3)
    v = rng.dirichlet(np.ones(5), size=4)
    vs = pk.VertexSet(v)
    w = rng.normal(size=(5, 6))
    np.testing.assert_allclose(vs.min_linear(w), (v @ w).min(axis=0), rtol=1e-14)
    np.testing.assert_allclose(vs.max_linear(w), (v @ w).max(axis=0), rtol=1e-14)
    lo, hi = vs.coordinate_bounds()
    np.testing.assert_array_equal(lo, v.min(axis=0))
    np.testing.assert_array_equal(hi, v.max(axis=0))
    assert vs.contains(v.mean(axis=0))
    assert all(vs.contains(row) for row in v)
    assert not vs.contains(np.eye(5)[0])
    assert vs.n == 5


def test_large_ball_partial_selection_matches_full_sort_lp():
    # N > 64 with a small radius exercises the argpartition path
    rng = np.random.default_rng(5)
    n = 150
    p = rng.dirichlet(np.ones(n))
    w = rng.random((n, 4))
    for beta in (0.002, 0.05, 0.9):
        ball = pk.L1Ball(p, beta)
        ref = [lp_ball(p, beta, w[:, j]) for j in range(4)]
        np.testing.assert_allclose(ball.min_linear(w), ref, atol=1e-10)
        lo, hi = np.clip(p - 0.01, 0, 1), np.clip(p + 0.01, 0, 1)
        box = pk.Box(lo, hi)
        np.testing.assert_allclose(box.min_linear(w), [lp_box(lo, hi, w[:, j])
                                                       for j in range(4)], atol=1e-10)


@given(ball_case(), st.integers(0, 1000))
def test_samples_lie_in_ball_and_respect_linear_bounds(case, seed):
    p, beta, w = case
    ball = pk.L1Ball(p, beta)
    qs = ball.sample(40, seed)
    assert qs.shape == (40, len(p))
    assert all(ball.contains(q) for q in qs)
    vals = qs @ w
    assert (vals >= ball.min_linear(w) - 1e-12).all()
    assert (vals <= ball.max_linear(w) + 1e-12).all()


@given(box_case(), st.integers(0, 1000))
def test_samples_lie_in_box(case, seed):
    lo, hi, w = case
    assert lo.sum() <= 1 <= hi.sum()  # box_case brackets a distribution: never empty
    box = pk.Box(lo, hi)
    qs = box.sample(30, np.random.default_rng(seed))
    assert all(box.contains(q) for q in qs)
    assert ((qs @ w) >= box.min_linear(w) - 1e-12).all()


def test_vertex_samples_and_contains():
    v = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    vs = pk.VertexSet(v)
    qs = vs.sample(20, 0)
    assert np.allclose(qs[:, 2], 0) and all(vs.contains(q) for q in qs)
    assert not vs.contains([0.4, 0.4, 0.2])


def test_contains():
    ball = pk.L1Ball([0.5, 0.5, 0.0], 0.2)
    assert ball.contains([0.6, 0.4, 0.0])
    assert ball.contains([0.5, 0.4, 0.1])
    assert not ball.contains([0.7, 0.3, 0.0])
    assert not ball.contains([0.6, 0.5, -0.1])  # not a distribution
    assert not ball.contains([0.5, 0.5])  # wrong length
    assert not ball.contains([0.5, math.nan, 0.5])
    box = pk.Box([0.1, 0.2], [0.8, 0.9])
    assert box.contains([0.5, 0.5]) and not box.contains([0.95, 0.05])
    assert not box.contains([0.5, 0.6])


def test_whole_simplex_and_degenerate_sets():
    ball = pk.L1Ball([0.7, 0.3, 0.0], 2.0)
    w = np.array([[3.0], [1.0], [2.0]])
    assert ball.min_linear(w)[0] == pytest.approx(1.0)
    assert ball.max_linear(w)[0] == pytest.approx(3.0)
    point = pk.L1Ball([0.7, 0.3], 0.0)
    assert point.min_linear([[3.0], [1.0]])[0] == pytest.approx(2.4)
    single = pk.L1Ball([1.0], 0.5)
    assert single.coordinate_bounds()[0][0] == 1.0 and single.sample(3, 0).shape == (3, 1)
    assert single.min_linear([2.0])[0] == 2.0


@pytest.mark.parametrize("uset", [
    pk.L1Ball([0.25, 0.75], 0.1), pk.Box([0.1, 0.2], [0.8, 0.9]),
    pk.VertexSet([[0.5, 0.5], [0.2, 0.8]]),
])
def test_round_trip_through_json(uset):
    d = json.loads(json.dumps(uset.to_dict()))
    assert d["kind"] in ("l1_ball", "box", "vertex_set")
    back = set_from_dict(d)
    assert type(back) is type(uset)
    w = np.array([[0.3, 0.7], [0.6, 0.4]])
    np.testing.assert_array_equal(back.min_linear(w), uset.min_linear(w))
    assert isinstance(uset, pk.UncertaintySet)
    with pytest.raises(AttributeError):
        uset.n = 3  # frozen


@pytest.mark.parametrize("d,match", [
    ({"kind": "sphere"}, "kind"), ({"kind": "l1_ball", "center": [1.0]}, "needs keys"),
    ({"kind": "box", "lower": [0.1], "upper": [0.9], "x": 1}, "needs keys"),
    ({"kind": "l1_ball", "center": [0.5, 0.5], "radius": -1}, "radius"),
    ([1, 2], "mapping"),
])
def test_set_from_dict_rejects_bad_documents(d, match):
    with pytest.raises(ValidationError, match=match):
        set_from_dict(d)


@pytest.mark.parametrize("lo,hi,err,match", [
    ([0.5, 0.6], [0.4, 0.9], ValidationError, r"lower\[0\] = 0.5 > upper\[0\] = 0.4"),
    ([0.6, 0.5], [0.9, 0.9], InfeasibleError, "sum\\(lower\\)"),
    ([0.1, 0.1], [0.4, 0.5], InfeasibleError, "sum\\(upper\\)"),
    ([-0.1, 0.1], [0.9, 0.9], ValidationError, "lower entries must be in"),
    ([0.1, 0.1], [0.9, 1.2], ValidationError, "upper entries must be in"),
    ([0.1, math.nan], [0.9, 0.9], ValidationError, "lower must be finite"),
    ([0.1, 0.1], [0.9, 0.9, 0.9], ValidationError, "same length"),
    ([[0.1]], [[0.9]], ValidationError, "1-D"),
])
def test_box_validation(lo, hi, err, match):
    with pytest.raises(err, match=match):
        pk.Box(lo, hi)


@pytest.mark.parametrize("center,radius,match", [
    ([0.5, 0.6], 0.1, "sum to 1"), ([0.5, 0.5], -0.1, "radius"),
    ([0.5, 0.5], math.nan, "radius"), ([0.5, 0.5], math.inf, "radius"),
    ([1.5, -0.5], 0.1, ">= 0"), ([0.5, math.nan], 0.1, "NaN"),
])
def test_ball_validation(center, radius, match):
    with pytest.raises(ValidationError, match=match):
        pk.L1Ball(center, radius)


def test_vertex_validation_and_objective_checks():
    with pytest.raises(ValidationError, match="vertices rows must sum to 1"):
        pk.VertexSet([[0.5, 0.6]])
    ball = pk.L1Ball([0.5, 0.5], np.float32(0.1))
    assert isinstance(ball.radius, float)
    with pytest.raises(ValidationError, match="2 rows"):
        ball.min_linear(np.ones((3, 2)))
    with pytest.raises(ValidationError, match="finite"):
        ball.min_linear([[math.nan], [1.0]])


@pytest.mark.parametrize("n", [5, 400])  # full-sort path and argpartition path
def test_tiny_minimum_keeps_relative_accuracy(n):
    # one entry with a large objective holds p0 = 0.05; the ball removes all but 1e-11 of
    # it, so the minimum (~1e-11 + small terms) must not be computed as p.w - gain
    import mpmath

    mpmath.mp.dps = 50
    rng = np.random.default_rng(n)
    p = np.full(n, 0.95 / (n - 1))
    p[0] = 0.05
    p /= p.sum()
    beta = 2 * (p[0] - 1e-11)
    w = rng.random(n) * 1e-9
    w[0] = 1.0
    ball = pk.L1Ball(p, beta)
    r = mpmath.mpf(beta) / 2
    # hand-derived optimum: take r from entry 0 (by far the largest objective), move it to
    # the smallest objective
    ref = (mpmath.mpf(p[0]) - r) * 1 + mpmath.fsum(mpmath.mpf(p[i]) * mpmath.mpf(w[i])
                                                   for i in range(1, n)) \
        + r * mpmath.mpf(w.min())
    assert ball.min_linear(w)[0] == pytest.approx(float(ref), rel=1e-12)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(-10**30, 10**30) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=12)


@given(st.sampled_from(["l1_ball", "box", "vertex_set"]), st.data())
def test_set_from_dict_fuzz_only_raises_pml_errors(kind, data):
    # Mechanism.load feeds untrusted JSON here: only ValidationError may come out
    keys = {"l1_ball": ("center", "radius"), "box": ("lower", "upper"),
            "vertex_set": ("vertices",)}[kind]
    doc = {"kind": data.draw(st.sampled_from([kind, [], {}, None, 3]))}
    good = {"center": [0.5, 0.5], "radius": 0.1, "lower": [0.1, 0.2], "upper": [0.8, 0.9],
            "vertices": [[0.5, 0.5]]}
    for k in keys:
        doc[k] = data.draw(json_values) if data.draw(st.booleans()) else good[k]
    try:
        uset = set_from_dict(doc)
    except pk.PMLError:
        return
    assert isinstance(uset, pk.UncertaintySet)
    assert np.isfinite(uset.min_linear(np.ones((uset.n, 1)))).all()


def test_sample_rng_arguments():
    ball = pk.L1Ball([0.5, 0.5], 0.1)
    np.testing.assert_array_equal(ball.sample(3, 7), ball.sample(3, np.random.default_rng(7)))

    class Source:  # duck-typed pmlkit.rng.RandomSource
        generator = np.random.default_rng(7)

    np.testing.assert_array_equal(ball.sample(3, Source()), ball.sample(3, 7))
    assert ball.sample(2).shape == (2, 2)
    for bad in ("7", 1.5, True):
        with pytest.raises(ValidationError, match="rng"):
            ball.sample(2, bad)
    with pytest.raises(ValidationError, match="k must be"):
        ball.sample(-1, 0)


def test_column_blocks_give_the_same_minima(monkeypatch):
    import pmlkit.sets as sets_mod

    rng = np.random.default_rng(9)
    w = rng.random((6, 23))
    p = rng.dirichlet(np.ones(6))
    cases = [pk.L1Ball(p, 0.3), pk.Box(np.clip(p - 0.1, 0, 1), np.clip(p + 0.1, 0, 1)),
             pk.VertexSet(rng.dirichlet(np.ones(6), size=3))]
    whole = [u.min_linear(w) for u in cases]
    monkeypatch.setattr(sets_mod, "_BLOCK", 13)  # 2 columns per block
    for u, ref in zip(cases, whole, strict=True):
        np.testing.assert_array_equal(u.min_linear(w), ref)
    np.testing.assert_allclose(cases[0].min_linear(w),
                               [lp_ball(p, 0.3, w[:, j]) for j in range(23)], atol=1e-9)
