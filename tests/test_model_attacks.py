"""Attacks on the typed guarantee, the mechanism file format 2 and the additive mechanism
objects: each test is a way to make pmlkit accept or print a guarantee that does not hold,
and checks that it is refused (or reported as uncertified).

Expected values come from hand computations written beside each test, never from the code
under test.
"""

from __future__ import annotations

import copy
import hashlib
import json
import pickle

import numpy as np
import pytest

from pmlkit.errors import MechanismFileError, ValidationError
from pmlkit.guarantee import PMLGuarantee
from pmlkit.mechanism import Mechanism
from pmlkit.sets import Box, VertexSet


def _resign(doc: dict) -> dict:
    """Recompute the digest as a forger would (it is not a signature)."""
    content = {k: v for k, v in doc.items() if k != "sha256"}
    canon = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    doc["sha256"] = hashlib.sha256(canon.encode()).hexdigest()
    return doc


# A channel with a zero: under priors close to the point mass on input 0, output 1 has
# probability ~ 0 while max_i W[i, 1] = 1/2, so its leakage over every distribution is
# unbounded (by hand: log(0.5 / (0.5 q)) -> inf as q = P(input 1) -> 0).
W_ZERO = [[1.0, 0.0], [0.5, 0.5]]
# A box that misses the corners of the simplex by 1e-9: inside the 1e-9 membership tolerance.
ALMOST_ALL = Box([0.0, 0.0], [1.0 - 1e-9, 1.0 - 1e-9])
# worst case over that box, by hand: output 1 at q = 1e-9 gives log(0.5 / (0.5e-9)) = log 1e9
ALMOST_ALL_EPS = float(np.log(1e9))


def _all_basis_doc(set_: object, eps: float) -> dict:
    from pmlkit import randomized_response

    doc = randomized_response(2, 1.0).to_dict()
    doc["matrix"] = W_ZERO
    doc["guarantee"].update(set=set_.to_dict(), eps=eps, certified_eps=eps)  # type: ignore[attr-defined]
    return _resign(doc)


def test_basis_all_with_a_set_slightly_smaller_than_the_simplex_is_refused():
    # the forged claim: "eps = 20.7 for every distribution"; the truth over the simplex: inf
    eps = ALMOST_ALL_EPS + 1e-6
    with pytest.raises(MechanismFileError, match=r"every distribution .* is inf.*does not hold"):
        Mechanism.from_dict(_all_basis_doc(ALMOST_ALL, eps))
    g = PMLGuarantee(eps=eps, set=ALMOST_ALL, certified_eps=eps, basis="all")
    mech = Mechanism(W_ZERO, guarantee=g)
    assert not mech.certified
    # the same matrix over the exact simplex cannot be certified at any finite eps either
    exact = PMLGuarantee(eps=eps, set=VertexSet(np.eye(2)), certified_eps=eps, basis="all")
    assert not Mechanism(W_ZERO, guarantee=exact).certified


def test_basis_all_still_certifies_a_true_ldp_claim():
    # randomized response keeping the bit w.p. 3/4: log 3 over every prior (by hand)
    w = [[0.75, 0.25], [0.25, 0.75]]
    g = PMLGuarantee(eps=1.1, set=ALMOST_ALL, certified_eps=float(np.log(3)), basis="all")
    assert Mechanism(w, guarantee=g).certified
    low = PMLGuarantee(eps=1.0, set=ALMOST_ALL, certified_eps=1.0, basis="all")
    assert not Mechanism(w, guarantee=low).certified


@pytest.fixture(scope="module")
def designed_v2() -> dict:
    from pmlkit import design_from_samples

    return design_from_samples(["a"] * 60 + ["b"] * 40, 1.0, 1e-3).mechanism.to_dict()


@pytest.mark.filterwarnings("error")  # an int64 overflow warning is not a refusal
@pytest.mark.parametrize("m, estimate", [(10**400, None), (10**20, [0.6, 0.4]),
                                         (2**63, [0.5, 0.5])], ids=["1e400", "1e20", "2^63"])
def test_absurd_sample_sizes_are_a_file_error_not_a_crash(designed_v2, m, estimate):
    doc = copy.deepcopy(designed_v2)
    doc["guarantee"]["m"] = m
    if estimate is not None:
        doc["provenance"]["estimate"] = estimate
    with pytest.raises(MechanismFileError, match=r"'m'|counts|not the set"):
        Mechanism.from_dict(_resign(doc))


def test_repr_does_not_call_a_false_claim_certified():
    # randomized response keeping the bit w.p. 0.9: log 9 = 2.197 over every prior (by hand),
    # so a stated certified eps of 0.5 is false
    w = [[0.9, 0.1], [0.1, 0.9]]
    g = PMLGuarantee.for_all_distributions(2, eps=0.5, certified_eps=0.5)
    mech = Mechanism(w, guarantee=g)
    assert not mech.certified
    assert "certified_eps=" not in repr(mech) and "UNCERTIFIED" in repr(mech)
    old_style = Mechanism(w, certified_eps=0.5)  # a bare claim without a set
    assert "certified_eps=" not in repr(old_style) and "UNCERTIFIED" in repr(old_style)
    true = PMLGuarantee.for_all_distributions(2, eps=2.2, certified_eps=float(np.log(9)))
    # log 9 = 2.1972245...: printed rounded up (never below the certified value)
    assert "certified_eps=2.19723" in repr(Mechanism(w, guarantee=true))


def _tampered_guarantee() -> PMLGuarantee:
    g = PMLGuarantee.for_all_distributions(2, eps=0.5, certified_eps=0.5)
    object.__setattr__(g, "certified_eps", 0.9)  # what a forged pickle stream would carry
    return g


def test_a_pickled_guarantee_is_validated_again():
    with pytest.raises(ValidationError, match="certified_eps must not exceed eps"):
        pickle.loads(pickle.dumps(_tampered_guarantee()))
    with pytest.raises(ValidationError, match="certified_eps must not exceed eps"):
        copy.deepcopy(_tampered_guarantee())
    g = PMLGuarantee.for_prior([0.25, 0.75], eps=0.5, certified_eps=0.25)
    back = pickle.loads(pickle.dumps(g))
    assert back == g and back.set.contains([0.25, 0.75]) and back.basis == "prior"


def test_a_manifest_with_a_duplicate_key_is_refused_by_estimate(tmp_path):
    # pmlkit estimate reads the mechanism from the manifest written beside the release; a
    # second "matrix" key makes readers disagree on the channel (json.loads keeps the last)
    from pmlkit import randomized_response
    from pmlkit.inference import find_mechanism

    mech = randomized_response(2, 1.0).with_labels(["no", "yes"])
    doc = mech.to_dict()
    real = json.dumps(doc["matrix"])
    text = json.dumps({"mechanism": {"smoker": doc}})
    assert text.count(real) == 1
    forged = text.replace(f'"matrix": {real}', f'"matrix": [[1.0, 0.0], [0.0, 1.0]], '
                                               f'"matrix": {real}')
    (tmp_path / "out.csv").write_text("smoker\nyes\nno\n")
    (tmp_path / "out.csv.pmlkit.json").write_text(forged)
    with pytest.raises(MechanismFileError, match="twice"):
        find_mechanism(tmp_path / "out.csv", "smoker")
    (tmp_path / "out.csv.pmlkit.json").write_text(text)  # the honest manifest still reads
    found, _ = find_mechanism(tmp_path / "out.csv", "smoker")
    assert found.matrix.tolist() == mech.matrix.tolist()


def test_a_prior_guarantee_at_another_point_than_the_recorded_estimate_is_refused():
    from pmlkit import optimal_mechanism

    mech = optimal_mechanism([0.3, 0.7], 0.5)
    doc = mech.to_dict()
    assert doc["guarantee"]["basis"] == "prior"
    # The channel is W = [[a, 1-a], [b, 1-b]]; a forger restates the "known prior" at a
    # point Q where the leakage looks smaller. Leakage at Q, by hand: max over outputs of
    # log(max_i W[i, y] / (Q . W[:, y])).
    w = mech.matrix
    for q in ([0.5, 0.5], [0.2, 0.8]):
        py = np.asarray(q) @ w
        leak = float(np.max(np.log(w.max(axis=0) / py)))
        forged = copy.deepcopy(doc)
        forged["guarantee"].update(set=Box(q, q).to_dict(), eps=leak + 1e-12,
                                   certified_eps=leak + 1e-12)
        with pytest.raises(MechanismFileError, match="estimate"):
            Mechanism.from_dict(_resign(forged))
    assert Mechanism.from_dict(mech.to_dict()).certified  # the honest file still loads


def test_a_tiny_gaussian_sigma_is_refused_before_it_exhausts_memory():
    # sigma = 1e-5 puts the inputs +-1 2^28 grid steps apart: the exact sup over every
    # prior walked all of them (1 GiB arrays; the process was killed). Refused up front,
    # and the refusal names the way out, which works:
    from pmlkit.additive import GaussianMechanism
    from pmlkit.errors import TooLargeError

    with pytest.raises(TooLargeError, match=r"granularity >= 2\^-21"):
        GaussianMechanism.from_scale(1e-5, eps=1.0)
    ok = GaussianMechanism.from_scale(1e-5, eps=1.0, granularity=2.0**-20)
    # released sigma = ceil(1e-5 * 2^20) 2^-20 = 11 / 2^20 (by hand)
    assert ok.released_sigma == 11 / 2**20
    assert 0.0 < ok.guarantee.output_delta < 1.0


def test_an_additive_guarantee_for_every_prior_is_checked_over_every_prior():
    # Laplace on the grid, b = 0.1: over every prior the worst case is at p_min = 0, the
    # LDP value 2 / b_released ~ 20; over a box stopping 1e-9 short of the corners it is
    # about -log(1e-9 + (1 - 1e-9) e^{-20}) ~ 19.60 (by hand), a false "every prior" claim.
    from pmlkit.additive import LaplaceMechanism
    from pmlkit.guarantee import Provenance

    honest = LaplaceMechanism.from_scale(0.1)
    b_rel = honest.released_b
    assert honest.guarantee.certified_eps == pytest.approx(2 / b_rel, rel=1e-12)
    short = float(-np.log(1e-9 + (1 - 1e-9) * np.exp(-2 / b_rel))) + 1e-5
    assert short < 2 / b_rel - 0.3
    forged = PMLGuarantee(eps=short, set=ALMOST_ALL, certified_eps=short, basis="all")
    with pytest.raises(ValidationError, match="does not hold"):
        LaplaceMechanism(0.1, None, forged, Provenance())
    # the same set stated as a user's set ("given") is a true claim and is accepted
    given = PMLGuarantee(eps=short, set=ALMOST_ALL, certified_eps=short)
    assert LaplaceMechanism(0.1, None, given, Provenance()).guarantee.basis == "given"


def test_html_does_not_show_provenance_details_as_a_coverage_statement():
    # a "given" guarantee (no coverage probability) with delta/m/confidence among the
    # provenance details: the notebook view must not read as an (eps, delta) guarantee
    from pmlkit._html import guarantee_line
    from pmlkit.guarantee import Provenance
    from pmlkit.sets import L1Ball

    w = [[0.75, 0.25], [0.25, 0.75]]
    g = PMLGuarantee(eps=1.1, set=L1Ball([0.5, 0.5], 0.0), certified_eps=float(np.log(1.5)))
    mech = Mechanism(w, guarantee=g, provenance=Provenance(
        details={"delta": 1e-9, "m": 100000, "confidence": "l1"}))
    line = guarantee_line(mech)
    assert mech.certified and "delta = 1e-09" not in line and "100000" not in line
    assert "basis given" in line
    from pmlkit import design_from_samples

    res = design_from_samples(["a"] * 60 + ["b"] * 40, 1.0, 1e-3)
    real = guarantee_line(res.mechanism)
    assert "delta = 0.001" in real and "m = 100 reference" in real


def test_typed_objects_refuse_fields_their_basis_or_type_rules_out():
    from pmlkit.guarantee import Provenance

    d = PMLGuarantee.for_prior([0.25, 0.75], eps=0.5, certified_eps=0.5).to_dict()
    d["method"] = "l1"  # a confidence method for a set no sample built
    with pytest.raises(ValidationError, match="method must be None"):
        PMLGuarantee.from_dict(d)
    p = Provenance().to_dict()
    p["estimate"] = [True, False]  # JSON true/false are not probabilities
    with pytest.raises(ValidationError, match="estimate"):
        Provenance.from_dict(p)
    assert Provenance(estimate=(0.25, 0.75)).estimate == (0.25, 0.75)
