"""Coarsening (``pmlkit.design.bucketing``): the image of a confidence set under a merge is
exact, and every candidate of ``propose_coarsening`` is the release itself, designed over
that image and certified over the ORIGINAL column's set.

Oracles: generic HiGHS LPs over the sets' raw constraints (``tests/oracles.py``), the
paper's N^3 form of the linear design, numpy mutual information."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracles import linear_n3, mi_cols, set_lp, worst_eps_lp
from pmlkit.confidence import confidence_set
from pmlkit.design.bucketing import (
    OTHER,
    design_coarsened,
    merged_set,
    propose_coarsening,
)
from pmlkit.errors import DataError, PMLWarning, ValidationError
from pmlkit.estimation import EmpiricalDistribution, l1_radius
from pmlkit.sets import Box, L1Ball, L1BoxSet, VertexSet

COUNTS = {"a": 400, "b": 300, "c": 120, "d": 80, "e": 40, "f": 30, "g": 20, "h": 10}
EMP = EmpiricalDistribution.from_counts(list(COUNTS.values()), list(COUNTS))
P = np.array(list(COUNTS.values()), dtype=float) / sum(COUNTS.values())
M = sum(COUNTS.values())


def constraints(s) -> dict:
    """The raw constraints of a pmlkit set, for :func:`oracles.set_lp`."""
    if isinstance(s, L1BoxSet):
        return {"center": s.center, "radius": s.radius, "lower": s.lower, "upper": s.upper}
    if isinstance(s, L1Ball):
        return {"center": s.center, "radius": s.radius}
    if isinstance(s, Box):
        return {"lower": s.lower, "upper": s.upper}
    assert isinstance(s, VertexSet)
    return {"vertices": s.vertices}


def merge_matrix(groups: np.ndarray) -> np.ndarray:
    a = np.zeros((int(groups.max()) + 1, groups.size))
    a[groups, np.arange(groups.size)] = 1.0
    return a


@st.composite
def set_and_groups(draw):
    n = draw(st.integers(3, 7))
    counts = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n).filter(
        lambda c: sum(c) >= 5))
    kind = draw(st.sampled_from(["l1", "box-cp", "box-kl", "l1-box", "vertex"]))
    if kind == "vertex":
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        uset = VertexSet(rng.dirichlet(np.ones(n) * 0.7, size=draw(st.integers(1, 4))))
    else:
        uset = confidence_set(counts, draw(st.sampled_from([0.01, 0.2])),
                              confidence=kind).set
    k = draw(st.integers(1, n))
    groups = draw(st.permutations(list(range(k)) + draw(
        st.lists(st.integers(0, k - 1), min_size=n - k, max_size=n - k))))
    return uset, np.array(groups), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=30, deadline=None)
@given(set_and_groups())
def test_merged_set_is_the_exact_image(case):
    uset, groups, seed = case
    rng = np.random.default_rng(seed)
    image = merged_set(uset, groups)
    a = merge_matrix(groups)
    k = a.shape[0]
    assert image.n == k and type(image) is type(uset)
    # the support functions agree: min over the image of R . v equals the min over the
    # ORIGINAL set of Q . (v o groups), a generic LP on the original constraints
    vs = np.concatenate([rng.standard_normal((4, k)), np.eye(k), -np.eye(k)])
    for v in vs:
        res = set_lp(v[groups], **constraints(uset))
        assert res.status == 0
        assert float(image.min_linear(v)[0]) == pytest.approx(res.fun, abs=1e-9)
    # every merged point of the original set lies in the image
    pts = np.concatenate([uset.sample(6, rng=rng),
                          uset.argmin_linear(rng.standard_normal((uset.n, 6)))])
    for q in pts:
        assert image.contains(a @ q, tol=1e-9)
    # every point of the image has a preimage in the original set (LP feasibility)
    pts = np.concatenate([image.sample(4, rng=rng),
                          image.argmin_linear(rng.standard_normal((k, 4)))])
    for r in pts:
        res = set_lp(np.zeros(uset.n), a_eq=a, b_eq=r, **constraints(uset))
        assert res.status == 0, (r, res.message)


def test_merged_set_rounds_outwards_and_refuses_bad_groups():
    box = Box([0.1, 0.1, 0.1], [0.7, 0.7, 0.7])
    img = merged_set(box, [0, 0, 1])
    # 0.1 + 0.1 and 0.7 + 0.7 (capped at 1) widened by a few ulps, never narrowed
    assert img.lower[0] <= 0.2 and img.lower[0] > 0.2 - 1e-14 and img.upper[0] == 1.0
    assert img.lower[1] == 0.1 and img.upper[1] == 0.7  # one term: exact
    with pytest.raises(ValidationError, match="groups must use every group number"):
        merged_set(box, [0, 0, 2])
    with pytest.raises(ValidationError, match="groups must be 3 integers"):
        merged_set(box, [0, 1])
    with pytest.raises(ValidationError, match="groups must be 3 integers"):
        merged_set(box, [0, -1, 1])
    with pytest.raises(ValidationError, match=r"uncertainty_set must be a pmlkit\.sets set"):
        merged_set([0.5, 0.5], [0, 1])


def released_accuracy(mech, p) -> float:
    """P[Y = X] on the original column: the output named after the input (numpy)."""
    w = np.asarray(mech.matrix)
    outs = list(mech.output_labels)
    return float(sum(p[i] * w[i, outs.index(x)] for i, x in enumerate(mech.input_labels)
                     if x in outs))


@pytest.mark.parametrize("confidence", ["l1", "box-cp"])
@pytest.mark.parametrize("utility", ["mutual_information", "accuracy"])
def test_design_coarsened_is_certified_over_the_original_set(confidence, utility):
    eps, delta, k = 1.0, 1e-3, 3
    res = design_coarsened(EMP, eps, delta, k, utility=utility, confidence=confidence)
    mech = res.mechanism
    w = np.asarray(mech.matrix)
    assert mech.input_labels == tuple(COUNTS)
    merged = [list(COUNTS).index(x) for x in "defgh"]
    assert all(np.array_equal(w[merged[0]], w[i]) for i in merged)
    assert dict(map(tuple, mech.parameters["coarsening"]))["e"] == OTHER
    # the guarantee is the original column's: the set is built from the 8 counts
    original = confidence_set(list(COUNTS.values()), delta, confidence=confidence).set
    assert res.guarantee.set == original.to_dict()
    # certified eps <= eps by an independent LP over the original set
    worst = worst_eps_lp(w, **constraints(original))
    assert worst <= eps + 1e-7
    assert res.guarantee.certified_eps == pytest.approx(worst, abs=1e-7)
    # the utility recorded is the release's, on the original estimate
    value = float(mi_cols(w, P).sum()) if utility == "mutual_information" \
        else released_accuracy(mech, P)
    assert res.guarantee.utility_value == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_coarse_accuracy_design_is_over_the_image_of_the_original_ball():
    """The merged design is the optimum over the ball of the ORIGINAL radius around the
    merged estimate (the N^3 LP of the paper at that radius), not over the merged column's
    own, smaller Weissman ball (which the released guarantee does not cover)."""
    eps, delta = 0.5, 1e-3
    beta = l1_radius(delta, m=M, n=8)
    assert l1_radius(delta, m=M, n=3) < beta
    res = design_coarsened(EMP, eps, delta, 2, utility="accuracy")
    mech = res.mechanism
    w = np.asarray(mech.matrix)
    outs = list(mech.output_labels)
    rows = {"a": 0, "b": 1, OTHER: 2}
    coarse_p = np.array([P[0], P[1], P[2:].sum()])
    coarse_acc = sum(coarse_p[i] * w[rows[x], outs.index(x)] for x, i in
                     {"a": 0, "b": 1, OTHER: 2}.items())
    assert coarse_acc == pytest.approx(linear_n3(coarse_p, eps, beta, np.eye(3)), abs=1e-7)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_no_candidate_beats_the_uncoarsened_optimum(eps):
    """A coarsened release is a mechanism on the original column, certified over the same
    set, so its accuracy is at most the accuracy optimum over the original l1-ball (the
    paper's N^3 LP, independent). Candidates designed over the merged column's own, smaller
    ball showed more (0.5469 > 0.5433 at eps = 0.5, k = 4)."""
    beta = l1_radius(1e-3, m=M, n=8)
    bound = linear_n3(P, eps, beta, np.eye(8))
    prop = propose_coarsening(EMP, eps, 1e-3, ks=[2, 4, 8], utility="accuracy")
    for c in prop.candidates:
        assert c.utility <= bound + 1e-7
        assert c.utility == pytest.approx(released_accuracy(c.result.mechanism, P),
                                          rel=1e-9, abs=1e-12)
    assert prop.candidates[-1].utility == pytest.approx(bound, abs=1e-7)


def test_candidates_are_the_releases_and_the_best_is_chosen_on_them():
    prop = propose_coarsening(EMP, 2.0, 1e-3, ks=[2, 4, 8])
    assert [c.k for c in prop.candidates] == [2, 4, 8]
    for c in prop.candidates:
        w = np.asarray(c.result.mechanism.matrix)
        assert c.utility == pytest.approx(float(mi_cols(w, P).sum()), rel=1e-9)
        assert c.utility == c.result.guarantee.utility_value
        assert c.kept == tuple(COUNTS)[:c.k]
    top = max(c.utility for c in prop.candidates)
    assert prop.best.utility >= top - 1e-9 * top
    assert prop.best.k == min(c.k for c in prop.candidates if c.utility >= top - 1e-9 * top)
    d = prop.to_dict()
    assert d["best"] == prop.best.k and len(d["candidates"]) == 3
    assert "<- best" in str(prop)


def test_ties_go_to_the_coarser_candidate_and_k_is_deduplicated():
    # k = 7 merges one category (no merge: k = 8); tried once
    prop = propose_coarsening(EMP, 1.0, 1e-3, ks=[7, 8], utility="accuracy")
    assert [c.k for c in prop.candidates] == [8]
    # at eps = 1 the three rare categories add nothing to the accuracy: k = 4 ties k = 8
    prop = propose_coarsening(EMP, 1.0, 1e-3, ks=[4, 8], utility="accuracy")
    u4, u8 = (c.utility for c in prop.candidates)
    assert u4 == pytest.approx(u8, abs=1e-9) and prop.best.k == 4


def test_bad_arguments():
    with pytest.raises(ValidationError, match="ks must be integers in \\[1, 8\\]"):
        propose_coarsening(EMP, 1.0, 1e-3, ks=[0, 3])
    with pytest.raises(ValidationError, match="ks must be integers"):
        propose_coarsening(EMP, 1.0, 1e-3, ks=[2.5])
    with pytest.raises(ValidationError, match=r"ks must be integers.*got 5"):
        propose_coarsening(EMP, 1.0, 1e-3, ks=5)
    with pytest.raises(ValidationError, match="utility must be 'mutual_information' or "
                       "'accuracy', got 'estimation'"):
        propose_coarsening(EMP, 1.0, 1e-3, utility="estimation")
    with pytest.raises(ValidationError, match="at least 2 categories"):
        propose_coarsening(["a"] * 10, 1.0, 1e-3)
    with pytest.raises(ValidationError, match="k must be in \\[1, 8\\]"):
        design_coarsened(EMP, 1.0, 1e-3, 9)
    with pytest.raises(ValidationError, match="k must be"):
        design_coarsened(EMP, 1.0, 1e-3, 0)
    with pytest.raises(ValidationError, match="missing must be 'error', 'category' or "
                       "'keep', got 'drop'"):
        propose_coarsening(EMP, 1.0, 1e-3, missing="drop")
    with pytest.raises(DataError, match="1 null"):
        design_coarsened(["a", "b", None, "a"], 1.0, 0.1, 2)
    res = design_coarsened(["a", "b", None, "a"], 1.0, 0.1, 2, missing="category")
    assert sorted(res.mechanism.input_labels) == ["(missing)", "a", "b"]
    assert design_coarsened(["a", "b", None, "a"], 1.0, 0.1, 2, missing="keep").guarantee.m == 3
    with pytest.raises(DataError, match="already has a category 'other'"):
        design_coarsened(["other"] * 5 + ["a"] * 3 + ["b", "c"], 1.0, 0.1, 1)
    assert math.isfinite(design_coarsened(["other"] * 5 + ["a"] * 3 + ["b", "c"], 1.0, 0.1,
                                          3).guarantee.utility_value)


def test_a_design_stopped_by_its_budget_says_which_candidate():
    counts = np.arange(20, 0, -1) * 10
    emp = EmpiricalDistribution.from_counts(counts, [f"c{i}" for i in range(20)])
    with pytest.warns(PMLWarning, match=r"design_coarsened \(16 kept \+ 'other'\): "
                      r"certified optimality gap of"):
        res = design_coarsened(emp, 1.0, 1e-3, 16, confidence="box-cp", max_work=0.01)
    assert res.optimality_gap is not None and res.optimality_gap > 0
    assert res.guarantee.certified_eps <= 1.0 + 1e-9
