"""Mechanisms, guarantees and design results survive pickle, deepcopy and joblib exactly,
and a certificate is never dropped nor taken on trust from a byte stream."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import pmlkit
from pmlkit.errors import MechanismFileError
from pmlkit.mechanism import Mechanism


@pytest.fixture(scope="module")
def designed() -> pmlkit.design.DesignResult:
    x = np.array(["a"] * 60 + ["b"] * 30 + ["c"] * 10)
    return pmlkit.design_from_samples(x, 1.0, 1e-3)


def _same(a: Mechanism, b: Mechanism) -> None:
    assert a.matrix.tobytes() == b.matrix.tobytes() and a.matrix.dtype == b.matrix.dtype
    assert not b.matrix.flags.writeable
    assert a.input_labels == b.input_labels and a.output_labels == b.output_labels
    assert [type(v) for v in a.input_labels] == [type(v) for v in b.input_labels]
    assert a.designer == b.designer
    assert dict(a.parameters) == dict(b.parameters)
    assert a.uncertainty_set is not None and b.uncertainty_set is not None
    assert dict(a.uncertainty_set) == dict(b.uncertainty_set)
    assert a.certified_eps == b.certified_eps
    assert a.to_dict() == b.to_dict()


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_designed_mechanism_round_trips_certified(designed, how) -> None:
    mech = designed.mechanism
    assert mech.certified
    back = pickle.loads(pickle.dumps(mech)) if how == "pickle" else copy.deepcopy(mech)
    _same(mech, back)
    assert back.__dict__.get("_certified") is True and back.certified


def test_deepcopy_is_independent(designed) -> None:
    mech = designed.mechanism
    back = copy.deepcopy(mech)
    back.parameters["prior"].append(99.0)  # inner list: a deep copy must not share it
    assert 99.0 not in mech.parameters["prior"]
    assert copy.copy(mech) is mech  # immutable: a shallow copy is the object itself


def test_unpickling_reverifies_a_claimed_certificate(designed) -> None:
    mech = designed.mechanism
    fn, args = mech.__reduce__()
    # forge a stream claiming the certificate for a smaller eps than the true worst case
    forged = list(args)
    forged[3] = {**forged[3], "certified_eps": mech.certified_eps / 2}

    class Forged:
        def __reduce__(self):
            return fn, tuple(forged)

    with pytest.raises(MechanismFileError, match=r"pickled mechanism.*does not hold"):
        pickle.loads(pickle.dumps(Forged()))
    # a claim of certification without a set is refused as well
    forged = list(args)
    forged[3] = None

    class NoSet:
        def __reduce__(self):
            return fn, tuple(forged)

    with pytest.raises(MechanismFileError, match="claims to be certified"):
        pickle.loads(pickle.dumps(NoSet()))


def test_uncertified_stays_uncertified(designed, tmp_path) -> None:
    path = designed.mechanism.save(tmp_path / "m.json")
    unchecked = Mechanism.load(path, verify=False)
    assert not unchecked.certified
    for back in (pickle.loads(pickle.dumps(unchecked)), copy.deepcopy(unchecked)):
        assert back.__dict__.get("_certified") is False and not back.certified
    # a hand-made mechanism that was never checked is checked lazily after unpickling
    user = Mechanism([[0.75, 0.25], [0.25, 0.75]], ["x", "y"])
    back = pickle.loads(pickle.dumps(user))
    assert "_certified" not in back.__dict__ and not back.certified
    assert back.input_labels == ("x", "y") and back.output_labels == (0, 1)


def test_guarantee_and_design_result_round_trip(designed) -> None:
    for back in (pickle.loads(pickle.dumps(designed)), copy.deepcopy(designed)):
        assert back.guarantee.to_dict() == designed.guarantee.to_dict()
        assert str(back) == str(designed)
        _same(designed.mechanism, back.mechanism)
        assert back.mechanism.certified


def test_joint_objects_round_trip() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, 400), rng.integers(0, 3, 400)
    res = pmlkit.design_joint([a, b], 1.5, 0.05, mode="per-column", splits=2, steps=3)
    for back in (pickle.loads(pickle.dumps(res)), copy.deepcopy(res)):
        assert back.to_dict() == res.to_dict()
        assert back.guarantee.to_dict() == res.guarantee.to_dict()
        for m0, m1 in zip(res.mechanisms, back.mechanisms, strict=True):
            _same(m0, m1)
    prod = pmlkit.product_mechanism(*res.mechanisms)
    back = pickle.loads(pickle.dumps(prod))
    assert np.array_equal(back.matrix, prod.matrix)


def test_joblib_round_trip(designed, tmp_path) -> None:
    joblib = pytest.importorskip("joblib")
    joblib.dump(designed, tmp_path / "r.joblib")
    back = joblib.load(tmp_path / "r.joblib")
    _same(designed.mechanism, back.mechanism)
    assert back.mechanism.certified


def test_pickles_of_the_older_layout_still_load(designed) -> None:
    """A stream written by pmlkit 0.1 (designer, parameters, set, certified eps) unpickles
    into the typed model, and its claimed certificate is verified again."""
    from pmlkit.mechanism import _unpickle_mechanism

    mech = designed.mechanism
    old = (mech.matrix, mech.input_labels, mech.output_labels, mech.designer,
           dict(mech.parameters), dict(mech.uncertainty_set), mech.certified_eps, True)
    back = _unpickle_mechanism(*old)
    g, h = back.guarantee, mech.guarantee
    assert back.certified and (g.eps, g.delta, g.m, g.method, g.basis, g.certified_eps) == (
        h.eps, h.delta, h.m, h.method, h.basis, h.certified_eps)
    assert g.set.to_dict() == h.set.to_dict()
    assert back.provenance.estimate == mech.provenance.estimate
    with pytest.raises(MechanismFileError, match="does not hold"):
        _unpickle_mechanism(*old[:6], mech.certified_eps / 2, True)
