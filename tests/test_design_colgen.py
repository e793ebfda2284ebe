"""Column generation for the sub-convex (mutual information) designer.

References are independent of the designer: the full extreme-ray LP over every candidate
ray, solved by a generic HiGHS call (``scipy.optimize.linprog``) in the test, and the
closed form ``mu(w) = sum_x p_x w_x log(w_x / p . w)`` evaluated here with numpy.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracles import full_lp_optimum, mi_cols
from pmlkit.design import design_from_samples, optimal_mechanism, optimal_mechanism_for_set
from pmlkit.design.colgen import (
    BranchAndBoundOracle,
    EnumerationOracle,
    column_generation,
    relative_gap,
)
from pmlkit.design.pipeline import _exact_rays, _fallback, _Utility
from pmlkit.design.subconvex import three_level_rays
from pmlkit.errors import PMLWarning, ValidationError
from pmlkit.estimation import EmpiricalDistribution, l1_radius
from pmlkit.sets import Box, L1Ball, VertexSet
from pmlkit.worstcase import leakage_capacity


def mi(w: np.ndarray, p: np.ndarray) -> float:
    return float(np.sum(mi_cols(np.asarray(w), p)))


def sets_for(p: np.ndarray) -> list:
    lo = np.maximum(p - 0.05, 0.0)
    hi = np.minimum(p + 0.05, 1.0)
    return [L1Ball(p, 0.0), L1Ball(p, float(p.min())), L1Ball(p, 0.6), Box(lo, hi)]


def mu_mi(p: np.ndarray):
    return lambda cols: mi_cols(cols, p)


@pytest.mark.parametrize("n,seed", [(3, 0), (5, 1), (8, 2), (10, 3)])
@pytest.mark.parametrize("eps", [0.05, 0.7, 5.0])
def test_colgen_equals_full_enumeration(n, seed, eps):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    for uset in sets_for(p) if n <= 8 else sets_for(p)[:2]:
        rays = _exact_rays(uset, p)(eps)
        opt = full_lp_optimum(rays, p)
        res = column_generation(EnumerationOracle(rays, mi_cols(rays, p)), p, mu_mi(p),
                                start=None, gap=0.0, deadline=math.inf)
        assert abs(res.value - opt) <= 1e-9 * max(opt, 1e-300) + 1e-13, (uset, eps)
        assert res.gap == 0.0
        # the bound brackets the optimum
        assert res.value <= opt * (1 + 1e-9) + 1e-13
        assert opt <= res.upper_bound * (1 + 1e-9) + 1e-13


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 7), seed=st.integers(0, 10**6),
       eps=st.floats(0.05, 5.0), which=st.integers(0, 3))
def test_gap_after_one_round_brackets_the_optimum(n, seed, eps, which):
    # stopped after its first round, column generation still certifies
    # value <= OPT <= upper bound, with OPT from the full LP
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    uset = sets_for(p)[which]
    rays = _exact_rays(uset, p)(eps)
    opt = full_lp_optimum(rays, p)
    res = column_generation(EnumerationOracle(rays, mi_cols(rays, p)), p, mu_mi(p),
                            start=None, gap=0.0, deadline=0.0)
    assert res.value <= opt * (1 + 1e-9) + 1e-12
    assert opt <= res.upper_bound * (1 + 1e-9) + 1e-12
    g = relative_gap(res.upper_bound, res.value)
    assert g >= 0
    assert g == 0.0 or res.value < res.upper_bound


@pytest.mark.parametrize("case", range(4))
def test_branch_and_bound_bound_is_valid(case):
    # pricing by branch and bound (no ray list): the certified interval holds the full-LP
    # optimum, both when stopped early and when run to a small gap
    rng = np.random.default_rng(100 + case)
    n = 4 if case < 2 else 5
    p = rng.dirichlet(np.ones(n))
    uset = sets_for(p)[[0, 2, 1, 3][case]]
    eps = [0.3, 1.0, 2.0, 0.7][case]
    opt = full_lp_optimum(three_level_rays(uset, eps, p if case == 3 else None)
                          if case != 0 else _exact_rays(uset, p)(eps), p)
    oracle = BranchAndBoundOracle(uset, p, eps)
    early = column_generation(oracle, p, mu_mi(p), start=None, gap=0.0,
                              deadline=time.monotonic() + 0.05)
    # the pricing LP's columns are feasible to HiGHS' tolerance only (the designers
    # certify and, if needed, re-design at eps - margin): allow 1e-7 above the optimum
    assert early.value <= opt * (1 + 1e-7) + 1e-12
    assert opt <= early.upper_bound * (1 + 1e-9) + 1e-12
    full = column_generation(oracle, p, mu_mi(p), start=None, gap=1e-3,
                             deadline=time.monotonic() + 20)
    assert full.value <= opt * (1 + 1e-7) + 1e-12
    assert opt <= full.upper_bound * (1 + 1e-9) + 1e-12
    assert full.gap <= 1e-3


def test_design_records_the_gap_everywhere():
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(6))
    m = optimal_mechanism(p, 0.8, beta=0.3)
    assert m.parameters["optimality_gap"] == 0.0
    assert m.parameters["optimality"] == "exact"
    assert m.to_dict()["provenance"]["optimality_gap"] == 0.0
    m = optimal_mechanism(p, 0.8, beta=0.3, utility="accuracy")
    assert m.parameters["optimality_gap"] == 0.0
    counts = np.round(p * 1000) + 1
    r = design_from_samples(EmpiricalDistribution.from_counts(counts), 1.0, 1e-3)
    assert r.optimality_gap == 0.0
    opt = full_lp_optimum(_exact_rays(L1Ball(np.asarray(r.guarantee.estimate),
                                             r.guarantee.beta), None)(1.0),
                          np.asarray(r.guarantee.estimate))
    got = mi(r.mechanism.matrix, np.asarray(r.guarantee.estimate))
    assert got <= opt + 1e-9
    assert got >= opt * (1 - 1e-6)


def test_allow_fallback_is_deprecated_not_silent():
    p = np.array([0.5, 0.3, 0.2])
    with pytest.warns(DeprecationWarning, match="max_seconds"):
        optimal_mechanism(p, 1.0, allow_fallback=True)
    with pytest.warns(DeprecationWarning):
        optimal_mechanism_for_set(L1Ball(p, 0.1), 1.0, allow_fallback=False)


@pytest.mark.parametrize("kw,match", [
    ({"max_seconds": 0}, "max_seconds"), ({"max_seconds": -1.0}, "max_seconds"),
    ({"max_seconds": "10"}, "max_seconds"), ({"max_seconds": math.nan}, "max_seconds"),
    ({"gap": -0.1}, "gap"), ({"gap": 1.0}, "gap"), ({"gap": math.nan}, "gap"),
    ({"gap": True}, "gap"),
])
def test_budget_is_validated(kw, match):
    with pytest.raises(ValidationError, match=match):
        optimal_mechanism([0.5, 0.5], 1.0, **kw)


def test_budget_exhausted_warns_with_the_gap():
    # a 37-category column (the case, shape of a country column): with a budget
    # too short to certify, the design says how far from optimal it may be, and is never
    # below the former fallback (accuracy design)
    counts = np.round(29000 * 0.6 ** np.arange(37)) + 12
    emp = EmpiricalDistribution.from_counts(counts)
    with pytest.warns(PMLWarning, match="optimality gap"):
        r = design_from_samples(emp, math.log(2), 1e-6, max_seconds=3)
    p = np.asarray(r.guarantee.estimate)
    uset = L1Ball(p, r.guarantee.beta)
    assert r.optimality_gap is not None and r.optimality_gap > 0
    assert "certified within" in r.guarantee.optimality
    w = np.asarray(r.mechanism.matrix)
    assert leakage_capacity(w, uset) <= math.log(2) + 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf, _ = _fallback(uset, p, math.log(2), _Utility("mutual_information", 37))
    assert mi(w, p) >= mi(wf, p) - 1e-9
    # the collapse to 2 outputs is only acceptable when certified optimal
    if w.shape[1] <= 2:
        assert r.optimality_gap == 0.0 or "within" in r.guarantee.optimality


def test_vertex_set_by_branch_and_bound_matches_brute_force():
    p = np.array([0.45, 0.35, 0.2])
    qs = np.array([[0.45, 0.35, 0.2], [0.35, 0.4, 0.25], [0.55, 0.3, 0.15]])
    eps = 0.9
    m = optimal_mechanism_for_set(VertexSet(qs), eps, prior=p)
    # brute force: the slice K_1 of a 3-point alphabet sampled densely; any column of a
    # feasible mechanism lies in the cone, so the sampled LP is a lower bound that
    # approaches the optimum
    g = np.linspace(0, 3, 121)
    a, b = np.meshgrid(g, g)
    w0 = (1 - p[1] * a.ravel() - p[2] * b.ravel()) / p[0]
    v = np.stack([w0, a.ravel(), b.ravel()])
    v = v[:, (w0 >= 0)]
    ok = v.max(axis=0) <= math.exp(eps) * (qs @ v).min(axis=0)
    sampled = full_lp_optimum(v[:, ok], p)
    got = mi(m.matrix, p)
    assert m.parameters["optimality_gap"] <= 1e-6
    assert got >= sampled - 1e-9


def test_summary_by_hand():
    from pmlkit import Mechanism, summarize_mechanism

    w = np.array([[1.0, 0.0], [0.0, 1.0], [0.1, 0.9]])
    mech = Mechanism(w, ("a", "b", "c"), ("a", "b"))
    s = summarize_mechanism(mech, [0.5, 0.3, 0.2])
    assert s.outputs_used == 2
    assert s.shared_outputs == (("b", ("b", "c")),)
    # "a" can also come from c (0.1): nothing is released unchanged with certainty
    assert s.unchanged_with_certainty == 0.0
    assert s.expected_accuracy == pytest.approx(0.5 + 0.3)
    py_a, py_b = 0.5 + 0.02, 0.3 + 0.18
    assert dict(s.pml_per_outcome)["a"] == pytest.approx(math.log(1 / py_a))
    assert dict(s.pml_per_outcome)["b"] == pytest.approx(math.log(1 / py_b))
    w2 = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    s2 = summarize_mechanism(Mechanism(w2, ("a", "b", "c"), ("a", "b")), [0.5, 0.3, 0.2])
    assert s2.unchanged_with_certainty == pytest.approx(0.5)
    assert "50% of rows are published unchanged" in s2.reading
    assert s2.to_dict()["shared_outputs"] == [{"output": "b", "inputs": ["b", "c"]}]


def test_propose_coarsening_measures_the_composed_release():
    from pmlkit.design.bucketing import propose_coarsening

    counts = np.array([500.0, 300, 120, 40, 25, 15])
    cats = list("abcdef")
    emp = EmpiricalDistribution.from_counts(counts, cats)
    prop = propose_coarsening(emp, 1.0, 1e-3, ks=[2, 3, 6])
    assert [c.k for c in prop.candidates] == [2, 3, 6]
    assert prop.best.utility == max(c.utility for c in prop.candidates)
    p = counts / counts.sum()
    # the original column's l1 radius (6 categories): the release is certified over that
    # ball, so each merged design is made over its image, the same radius around the merge
    beta = l1_radius(1e-3, m=int(counts.sum()), n=6)
    for c in prop.candidates:
        # redo the candidate by hand: coarsened counts, design, compose, measure on p
        kept = list(c.kept)
        ccounts = [counts[cats.index(x)] for x in kept]
        rest = [x for x in cats if x not in kept]
        if rest:
            ccounts.append(sum(counts[cats.index(x)] for x in rest))
        r = optimal_mechanism(np.array(ccounts) / counts.sum(), 1.0, beta=beta)
        w = np.asarray(r.matrix)
        v = np.stack([w[kept.index(x)] if x in kept else w[-1] for x in cats])
        assert c.utility == pytest.approx(mi(v, p), rel=1e-9, abs=1e-12)
    with pytest.raises(ValidationError, match="ks"):
        propose_coarsening(emp, 1.0, 1e-3, ks=[0, 3])
