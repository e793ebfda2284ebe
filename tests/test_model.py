"""The typed object model: every construction path returns a mechanism whose guarantee is a
:class:`pmlkit.guarantee.PMLGuarantee` with an honest basis and a certified eps pmlkit
computed; format-1 files load into the model unchanged; format-2 files are as strict as
format 1; a mechanism applies itself and answers its own privacy questions.

Worst cases are checked against an independent computation: the minimum of ``Q . w`` over
the set as a generic HiGHS LP (``scipy.optimize.linprog``), or by hand for one point and the
simplex.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import pmlkit
from pmlkit.design import (
    design_from_samples,
    extremal_binary,
    extremal_high_privacy,
    identity_mechanism,
    k_singular,
    optimal_binary,
    optimal_mechanism,
    optimal_mechanism_for_set,
    randomized_response,
)
from pmlkit.errors import DataError, MechanismFileError, ValidationError
from pmlkit.estimation import EmpiricalDistribution
from pmlkit.guarantee import PMLGuarantee, PrivacyMechanism, Provenance
from pmlkit.mechanism import Mechanism
from pmlkit.sets import Box, L1Ball, VertexSet

DATA = Path(__file__).parent / "data"


# -- independent worst cases ---------------------------------------------------------------

def _min_linear_lp(w: np.ndarray, set_doc: dict) -> float:
    """min over the set of Q . w as a generic HiGHS LP on (Q, t) with |Q - c| <= t."""
    n = w.size
    kind = set_doc["kind"]
    if kind == "l1_ball":
        c, r = np.asarray(set_doc["center"]), float(set_doc["radius"])
        # variables Q (n), t (n): Q - t <= c, -Q - t <= -c, sum t <= r, sum Q = 1
        obj = np.concatenate([w, np.zeros(n)])
        eye = np.eye(n)
        a_ub = np.block([[eye, -eye], [-eye, -eye],
                         [np.zeros((1, n)), np.ones((1, n))]])
        b_ub = np.concatenate([c, -c, [r]])
        a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
        res = linprog(obj, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0],
                      bounds=[(0, None)] * (2 * n), method="highs")
    elif kind == "box":
        res = linprog(w, A_eq=np.ones((1, n)), b_eq=[1.0],
                      bounds=list(zip(set_doc["lower"], set_doc["upper"], strict=True)),
                      method="highs")
    elif kind == "vertices":
        return float(np.min(np.asarray(set_doc["vertices"]) @ w))
    else:  # pragma: no cover - not used here
        raise AssertionError(kind)
    assert res.status == 0
    return float(res.fun)


def _worst_lp(w: np.ndarray, set_doc: dict) -> float:
    return max(math.log(float(w[:, j].max()) / _min_linear_lp(w[:, j], set_doc))
               for j in range(w.shape[1]) if w[:, j].max() > 0)


P3 = [0.5, 0.3, 0.2]
COUNTS = EmpiricalDistribution.from_counts([40, 25, 35], ["a", "b", "c"])

PATHS = {
    "randomized_response": (lambda: randomized_response(3, 1.0), "all"),
    "optimal_binary": (lambda: optimal_binary([0.3, 0.7], beta=0.1, eps=0.4), "given"),
    "optimal_mechanism prior": (lambda: optimal_mechanism(P3, 0.5), "prior"),
    "optimal_mechanism ball": (lambda: optimal_mechanism(P3, 0.8, beta=0.2), "given"),
    "optimal_mechanism_for_set box": (
        lambda: optimal_mechanism_for_set(Box([0.3, 0.2, 0.1], [0.6, 0.4, 0.3]), 0.8,
                                          prior=P3), "given"),
    "design_from_samples l1": (lambda: design_from_samples(COUNTS, 1.0, 1e-3).mechanism,
                               "sample"),
    "design_from_samples box-cp": (
        lambda: design_from_samples(COUNTS, 1.0, 1e-3, confidence="box-cp").mechanism,
        "sample"),
    "design_from_samples accuracy": (
        lambda: design_from_samples(COUNTS, 1.0, 1e-3, utility="accuracy").mechanism,
        "sample"),
    "extremal_high_privacy": (lambda: extremal_high_privacy(P3, 0.1), "prior"),
    "extremal_binary": (lambda: extremal_binary([0.8, 0.2], math.log(2)), "prior"),
    "k_singular": (lambda: k_singular(4, 2), "prior"),
    "identity with prior": (lambda: identity_mechanism(3, prior=P3), "prior"),
}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_every_construction_path_carries_a_computed_typed_guarantee(name):
    make, basis = PATHS[name]
    mech = make()
    g = mech.guarantee
    assert isinstance(g, PMLGuarantee) and g.basis == basis
    assert isinstance(mech.provenance, Provenance) and mech.provenance.designer
    assert mech.certified and g.n == mech.n_inputs
    # the certified eps is the worst case over the set, recomputed independently
    expected = _worst_lp(mech.matrix, g.set.to_dict())
    assert g.certified_eps == pytest.approx(expected, abs=1e-7)
    assert g.certified_eps <= g.eps + 1e-9
    if basis == "all":  # the set is the whole simplex: every vertex is in it
        assert all(g.set.contains(e) for e in np.eye(g.n))
    if basis == "prior":  # one distribution
        assert _min_linear_lp(np.ones(g.n), g.set.to_dict()) == pytest.approx(1.0)
    if basis == "sample":
        assert g.delta == 1e-3 and g.m == 100 and g.statement
        assert mech.provenance.estimate == (0.4, 0.25, 0.35)
    # the flat record is a view of the typed objects
    assert mech.parameters["eps"] == g.eps and mech.certified_eps == g.certified_eps
    assert dict(mech.uncertainty_set) == g.set.to_dict()
    back = Mechanism.from_dict(json.loads(mech.to_json()))
    assert back.certified and back.guarantee == g and back.provenance == mech.provenance


def test_design_results_are_read_from_the_typed_objects():
    res = design_from_samples(COUNTS, 1.0, 1e-3)
    g, prov = res.mechanism.guarantee, res.mechanism.provenance
    assert res.guarantee.certified_eps == g.certified_eps
    assert res.guarantee.set == g.set.to_dict() and res.guarantee.description == g.statement
    assert res.guarantee.utility_value == prov.utility_value
    assert res.optimality_gap == prov.optimality_gap == 0.0
    assert res.guarantee.beta == pytest.approx(pmlkit.l1_radius(1e-3, m=100, n=3))


def test_optimal_mechanism_certified_eps_is_computed_not_copied():
    """At a large eps the l1-ball design is the identity-like matrix whose worst case is
    below the requested eps: the certificate is the computed value, not the target."""
    mech = optimal_mechanism([0.5, 0.5], 5.0, beta=0.1)
    expected = _worst_lp(mech.matrix, mech.guarantee.set.to_dict())
    assert mech.guarantee.eps == 5.0
    assert mech.certified_eps == pytest.approx(expected, abs=1e-7) and expected < 4.0


def test_identity_without_a_prior_has_no_guarantee():
    mech = identity_mechanism(3)
    assert mech.guarantee is None and not mech.certified
    # its leakage over the simplex is unbounded: no finite eps holds for every prior
    assert mech.worst_case_over(L1Ball([1 / 3] * 3, 2.0)) == math.inf
    with pytest.raises(ValidationError, match="full support"):
        identity_mechanism(2, prior=[1.0, 0.0])


def test_design_joint_mechanisms_carry_guarantees():
    rng = np.random.default_rng(0)
    ref = {"x": rng.choice(["a", "b"], 300, p=[0.7, 0.3]).tolist(),
           "y": rng.choice(["u", "v"], 300, p=[0.4, 0.6]).tolist()}
    jd = pmlkit.design_joint(ref, 1.5, 0.05, mode="per-column", splits=1, steps=2)
    for mech in jd.mechanisms:
        assert isinstance(mech.guarantee, PMLGuarantee) and mech.certified
        assert mech.guarantee.basis in ("sample", "all")
    jd = pmlkit.design_joint(ref, 1.5, 0.05, mode="joint")
    assert jd.joint_mechanism.guarantee.basis == "sample"


def test_release_nothing_fallback_has_eps_zero_for_every_prior():
    from pmlkit.joint.design import constant_mechanism as _constant_mechanism

    mech = _constant_mechanism(["a", "b", "c"])
    assert mech.guarantee.basis == "all" and mech.certified_eps == 0.0 and mech.certified


# -- the older constructor keywords ------------------------------------------------------

W2 = np.array([[0.8, 0.2], [0.3, 0.7]])
BALL = L1Ball([0.3, 0.7], 0.1)


def test_old_style_construction_converts_once_and_reads_back_the_same_values():
    cap = pmlkit.leakage_capacity(W2, BALL)
    params = {"eps": 0.9, "utility": "mutual_information", "utility_value": 0.1,
              "optimality": "exact", "optimality_gap": None, "method": "by hand",
              "prior": [0.3, 0.7], "beta": 0.1, "note": "kept"}
    mech = Mechanism(W2, ("F", "M"), ("F", "M"), "someone", params, BALL.to_dict(), cap)
    assert mech.guarantee.basis == "given" and mech.guarantee.eps == 0.9
    assert mech.provenance.designer == "someone" and mech.provenance.estimate == (0.3, 0.7)
    assert dict(mech.parameters) == params  # None-valued keys kept verbatim
    assert dict(mech.uncertainty_set) == BALL.to_dict() and mech.certified_eps == cap
    assert mech.designer == "someone" and mech.certified


def test_old_style_sample_claim_becomes_a_sample_basis():
    res = design_from_samples(COUNTS, 1.0, 1e-3)
    m = res.mechanism
    old = Mechanism(m.matrix, m.input_labels, m.output_labels, m.designer,
                    dict(m.parameters), dict(m.uncertainty_set), m.certified_eps)
    g = old.guarantee
    assert (g.basis, g.delta, g.m, g.method) == ("sample", 1e-3, 100, "l1")
    assert dict(old.parameters) == dict(m.parameters) and old.certified


def test_old_style_claims_that_are_not_a_guarantee_are_kept_unverified():
    # a certified eps without a set: nothing to check, kept as a claim
    mech = Mechanism(W2, certified_eps=1.0)
    assert mech.guarantee is None and mech.certified_eps == 1.0 and not mech.certified
    # a certificate above its own target eps: no guarantee (the claim is false)
    cap = pmlkit.leakage_capacity(W2, BALL)
    bad = Mechanism(W2, parameters={"eps": cap / 2}, uncertainty_set=BALL.to_dict(),
                    certified_eps=cap)
    assert bad.guarantee is None and not bad.certified
    assert dict(bad.uncertainty_set) == BALL.to_dict() and bad.certified_eps == cap
    assert "eps" in bad.parameters and "unverified_certified_eps" not in bad.parameters


def test_guarantees_that_do_not_fit_the_matrix_are_refused():
    with pytest.raises(ValidationError, match="3 categories but the matrix has 2"):
        Mechanism(W2, uncertainty_set=L1Ball([0.2, 0.3, 0.5], 0.1).to_dict(),
                  certified_eps=1.0)
    g3 = PMLGuarantee.for_prior([0.2, 0.3, 0.5], eps=1.0, certified_eps=0.5)
    with pytest.raises(ValidationError, match="N = 3 categories but the matrix has 2"):
        Mechanism(W2, guarantee=g3)
    not_simplex = PMLGuarantee(eps=2.0, set=BALL, certified_eps=1.0, basis="all")
    with pytest.raises(ValidationError, match="not the whole simplex"):
        Mechanism(W2, guarantee=not_simplex)
    not_point = PMLGuarantee(eps=2.0, set=BALL, certified_eps=1.0, basis="prior")
    with pytest.raises(ValidationError, match="more than one distribution"):
        Mechanism(W2, guarantee=not_point)
    with pytest.raises(ValidationError, match="not both"):
        Mechanism(W2, designer="x", guarantee=PMLGuarantee.for_prior(
            [0.5, 0.5], eps=1.0, certified_eps=0.5))
    with pytest.raises(ValidationError, match="restate"):
        Mechanism(W2, provenance=Provenance(utility="u", details={"utility": "v"}))


def test_a_wrong_typed_certificate_is_not_reported_as_certified():
    cap = pmlkit.leakage_capacity(W2, BALL)
    low = PMLGuarantee(eps=cap, set=BALL, certified_eps=cap - 1e-3)
    assert not Mechanism(W2, guarantee=low).certified
    assert Mechanism(W2, guarantee=PMLGuarantee(eps=cap, set=BALL,
                                                certified_eps=cap)).certified


# -- format-1 files from the previous release --------------------------------------------

@pytest.mark.parametrize("name", ["v1_design_l1", "v1_design_box_cp", "v1_optimal_l1ball"])
def test_v1_files_load_into_the_typed_model_with_the_same_values(name, tmp_path):
    doc = json.loads((DATA / f"{name}.json").read_text())
    mech = Mechanism.load(DATA / f"{name}.json")
    np.testing.assert_array_equal(mech.matrix, np.asarray(doc["matrix"]))
    assert list(mech.input_labels) == doc["input_labels"]
    assert list(mech.output_labels) == doc["output_labels"]
    g, params = mech.guarantee, doc["parameters"]
    assert g.eps == params["eps"] and g.certified_eps == doc["certified_eps"]
    assert g.set.to_dict() == doc["uncertainty_set"]
    if "delta" in params:
        assert (g.basis, g.delta, g.m, g.method) == (
            "sample", params["delta"], params["m"], params["confidence"])
    else:
        assert g.basis == "given"
    assert mech.provenance.designer == doc["designer"]
    assert list(mech.provenance.estimate) == params["prior"]
    assert dict(mech.parameters) == params
    # re-saved in format 2 and read back: the same model
    back = Mechanism.load(mech.save(tmp_path / "v2.json"))
    assert back.guarantee == g and back.provenance == mech.provenance and back.certified
    assert json.loads((tmp_path / "v2.json").read_text())["format_version"] == 2


def test_v1_uncertified_file_loads_without_a_guarantee():
    mech = Mechanism.load(DATA / "v1_user_uncertified.json", allow_uncertified=True)
    assert mech.guarantee is None and mech.designer == "user" and not mech.certified
    assert mech.input_labels == ("F", "M") and mech.output_labels == (0, 1)


def test_a_mechanism_can_still_be_written_in_format_1():
    mech = design_from_samples(COUNTS, 1.0, 1e-3).mechanism
    doc = mech.to_dict(format_version=1)
    assert doc["format_version"] == 1 and doc["parameters"]["delta"] == 1e-3
    back = Mechanism.from_dict(doc)
    assert back.certified and back.guarantee.basis == "sample"
    with pytest.raises(ValidationError, match="format_version"):
        mech.to_dict(format_version=3)


# -- format 2: forged files --------------------------------------------------------------

def _resign(doc: dict) -> dict:
    content = {k: v for k, v in doc.items() if k != "sha256"}
    canon = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    doc["sha256"] = hashlib.sha256(canon.encode()).hexdigest()
    return doc


@pytest.fixture(scope="module")
def designed_v2() -> dict:
    return design_from_samples(COUNTS, 1.0, 1e-3).mechanism.to_dict()


def _edit_set_center(d):
    d["guarantee"]["set"]["center"] = [0.45, 0.2, 0.35]


FORGERIES = [
    (lambda d: d["guarantee"].update(certified_eps=0.5), "does not hold"),
    (lambda d: d["guarantee"].update(eps=0.5), "certified_eps must not exceed eps"),
    (lambda d: d["guarantee"]["set"].update(radius=0.0), r"radius|not the set"),
    (_edit_set_center, "not the set"),
    (lambda d: d["guarantee"].update(delta=0.5), "not the set"),
    (lambda d: d["guarantee"].update(m=1000), "not a vector of counts|not the set"),
    (lambda d: d["provenance"].update(estimate=[0.5, 0.25, 0.25]), "not the set"),
    (lambda d: d["provenance"].update(estimate=None), r"not \['prior'\]"),
    (lambda d: d["guarantee"].update(basis="all", delta=0.0, m=None, method=None),
     "not the whole simplex"),
    (lambda d: d["guarantee"].update(basis="prior", delta=0.0, m=None, method=None),
     "more than one distribution"),
    (lambda d: d["guarantee"].update(basis="given", delta=0.0, m=None, method=None,
                                     set={"kind": "l1_ball", "center": [0.4, 0.25, 0.35],
                                          "radius": 0.0}),
     "does not hold|radius"),
    (lambda d: d["provenance"]["details"].update(eps=5.0), "restate"),
    (lambda d: d["guarantee"].update(m=True), "guarantee.m"),
    (lambda d: d["guarantee"].update(delta="0.001"), "guarantee.delta"),
    (lambda d: d["guarantee"]["set"].update(radius="0.4"), "guarantee.set.radius"),
    (lambda d: d["guarantee"].update(schema="other"), "schema"),
    (lambda d: d["guarantee"].update(version=2), "'version' must be 1"),
    (lambda d: d["provenance"].update(version=0), "'version' must be 1"),
    (lambda d: d["guarantee"].update(extra=1), "unexpected"),
    (lambda d: d["provenance"].pop("details"), "details"),
    (lambda d: d.update(format_version=3), "format_version"),
    (lambda d: d.update(parameters={}), "unexpected"),
]


@pytest.mark.parametrize("edit, match", FORGERIES)
def test_forged_v2_files_are_refused(designed_v2, edit, match):
    doc = copy.deepcopy(designed_v2)
    edit(doc)
    with pytest.raises(MechanismFileError, match=match):
        Mechanism.from_dict(_resign(doc))


def test_v2_without_guarantee_needs_allow_uncertified():
    doc = Mechanism(W2).to_dict()
    assert doc["guarantee"] is None
    with pytest.raises(MechanismFileError, match="UNCERTIFIED"):
        Mechanism.from_dict(doc)
    assert not Mechanism.from_dict(doc, allow_uncertified=True).certified
    # an unverified certificate above its own eps is refused even then
    bad = Mechanism(W2, parameters={"eps": 0.1}, certified_eps=1.0).to_dict()
    with pytest.raises(MechanismFileError, match="above its own target"):
        Mechanism.from_dict(bad, allow_uncertified=True)


# -- a mechanism answers for itself -------------------------------------------------------

def test_a_mechanism_is_a_privacy_mechanism():
    assert isinstance(randomized_response(2, 1.0), PrivacyMechanism)
    assert isinstance(Mechanism(W2), PrivacyMechanism)


@pytest.mark.parametrize("values", [
    ["Female", "Male", "Male", "Female"] * 50,
    np.array(["Female", "Male", "Male"] * 30),
    np.array(["Female", "Male"] * 20, dtype=object),
])
def test_apply_equals_privatize_under_one_seed(values):
    mech = Mechanism(W2, ("Female", "Male"), ("Female", "Male"))
    got = mech.apply(values, rng=123)
    want = pmlkit.privatize(mech, values, rng=123)
    assert type(got) is type(want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want
    assert mech(values, rng=123) == got if isinstance(got, list) else True


def test_apply_samples_the_rows():
    """Frequencies of a large seeded release match the rows (binomial 5-sigma bounds)."""
    mech = Mechanism(W2, (0, 1), ("a", "b"))
    x = np.repeat([0, 1], 20_000)
    y = mech.apply(x, rng=7)
    for i, row in enumerate(W2):
        share = float(np.mean(y[x == i] == "a"))
        assert abs(share - row[0]) <= 5 * math.sqrt(row[0] * row[1] / 20_000)


def test_apply_is_secure_by_default_and_refuses_unknown_labels():
    mech = Mechanism([[1.0, 0.0], [0.0, 1.0]], ("a", "b"), ("a", "b"))
    assert mech.apply(("a", "b", "b")) == ["a", "b", "b"]  # identity: exact
    with pytest.raises(DataError, match="'z'"):
        mech.apply(["a", "z"])
    with pytest.raises(ValidationError, match="1-D"):
        mech.apply(np.array([["a"]]))
    with pytest.raises(ValidationError, match="values must be"):
        mech.apply("ab")


def test_leakage_under_and_worst_case_over_match_hand_computations():
    mech = Mechanism(W2)
    p = np.array([0.3, 0.7])
    py = p @ W2
    by_hand = max(math.log(W2[:, j].max() / py[j]) for j in range(2))
    assert mech.leakage_under(p) == pytest.approx(by_hand, abs=1e-12)
    assert mech.worst_case_over(BALL) == pytest.approx(_worst_lp(W2, BALL.to_dict()),
                                                       abs=1e-9)
    simplex = VertexSet(np.eye(2))
    ldp = max(math.log(W2[:, j].max() / W2[:, j].min()) for j in range(2))
    assert mech.worst_case_over(simplex) == pytest.approx(ldp, abs=1e-12)


def test_pickle_deepcopy_html_keep_the_typed_objects():
    mech = optimal_binary([0.3, 0.7], beta=0.1, eps=0.4)
    for back in (pickle.loads(pickle.dumps(mech)), copy.deepcopy(mech)):
        assert back.guarantee == mech.guarantee and back.provenance == mech.provenance
        assert back.certified
    html = mech._repr_html_()
    assert "optimal_binary" in html and "certified" in html
    with pytest.raises(AttributeError):
        mech.matrix = np.eye(2)  # type: ignore[misc]
    assert mech.with_labels(["x", "y"]).guarantee == mech.guarantee


def test_old_style_basis_follows_what_the_set_says():
    """A binarised channel built the older way over the whole simplex states a guarantee for
    every distribution; over one distribution, for that prior; otherwise a given set."""
    rr = np.array([[0.75, 0.25], [0.25, 0.75]])
    simplex = L1Ball([0.5, 0.5], 2.0)
    mech = Mechanism(rr, (-1, 1), (-1, 1), "laplace_binarized", {"b": 1.0},
                     simplex.to_dict(), pmlkit.leakage_capacity(rr, simplex))
    assert mech.guarantee.basis == "all" and mech.certified
    assert mech.certified_eps == pytest.approx(math.log(3), abs=1e-12)
    point = L1Ball([0.3, 0.7], 0.0)
    assert Mechanism(rr, uncertainty_set=point.to_dict(),
                     certified_eps=1.0).guarantee.basis == "prior"
    assert Mechanism(rr, uncertainty_set=BALL.to_dict(),
                     certified_eps=1.0).guarantee.basis == "given"


def test_cli_certificate_line_reads_the_typed_guarantee():
    from pmlkit.cli._common import certificate_line

    assert "every distribution" in certificate_line(randomized_response(3, 1.0))
    line = certificate_line(design_from_samples(COUNTS, 1.0, 1e-3).mechanism)
    assert "m = 100 reference samples with 'l1' at delta = 0.001" in line
    assert "no sample-based delta" in certificate_line(optimal_binary([0.3, 0.7], beta=0.1,
                                                                      eps=0.4))


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 4), st.integers(0, 10_000), st.floats(0.0, 0.5),
       st.floats(-0.2, 0.2))
def test_certified_iff_the_claim_covers_the_lp_worst_case(n, seed, radius, shift):
    """``certified`` is True exactly when the claimed certified eps is at least the worst
    case over the set (independent HiGHS LP), up to the 1e-9 tolerance."""
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(n), size=n)
    ball = L1Ball(rng.dirichlet(np.ones(n) * 2), radius)
    true = _worst_lp(w, ball.to_dict())
    claim = max(true + shift, 0.0)
    mech = Mechanism(w, guarantee=PMLGuarantee(eps=claim + 1.0, set=ball,
                                               certified_eps=claim))
    if abs(claim - true) > 1e-7:
        assert mech.certified == (claim > true)


@pytest.mark.parametrize("name, basis", [("v2_design_l1", "sample"),
                                         ("v2_randomized_response", "all")])
def test_v2_files_written_now_keep_loading(name, basis):
    """Format-2 files written by this version: a later reader must keep loading them (the
    stability contract); the values are checked against the raw JSON."""
    doc = json.loads((DATA / f"{name}.json").read_text())
    mech = Mechanism.load(DATA / f"{name}.json")
    assert mech.certified and mech.guarantee.basis == basis
    assert mech.guarantee.to_dict() == doc["guarantee"]
    assert mech.provenance.to_dict() == doc["provenance"]
    np.testing.assert_array_equal(mech.matrix, np.asarray(doc["matrix"]))
    expected = _worst_lp(mech.matrix, doc["guarantee"]["set"])
    assert doc["guarantee"]["certified_eps"] == pytest.approx(expected, abs=1e-7)


def test_typed_guarantee_and_provenance_pickle_and_deepcopy_on_their_own():
    """The typed objects travel alone too (joblib, multiprocessing): the read-only
    ``details`` mapping used to make a Provenance unpicklable."""
    from pmlkit.guarantee import PMLGuarantee, Provenance

    prov = Provenance(designer="user", details={"design_eps": 0.5, "reference": {"m": 3}})
    g = PMLGuarantee.for_prior([0.3, 0.7], eps=1.0, certified_eps=0.5)
    for obj in (prov, g):
        for back in (pickle.loads(pickle.dumps(obj)), copy.deepcopy(obj)):
            assert back == obj
            assert back.to_dict() == obj.to_dict()
    assert dict(pickle.loads(pickle.dumps(prov)).details) == {"design_eps": 0.5,
                                                               "reference": {"m": 3}}
