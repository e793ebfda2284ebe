"""The Mechanism object and its versioned JSON file: round trip and tamper detection."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

from pmlkit.design import optimal_binary, optimal_mechanism, randomized_response
from pmlkit.errors import MechanismFileError, ValidationError
from pmlkit.mechanism import FORMAT_VERSION, Mechanism, as_matrix
from pmlkit.sets import L1Ball


def _resign(doc: dict) -> dict:
    """Recompute the digest the way an independent reader would (canonical JSON)."""
    content = {k: v for k, v in doc.items() if k != "sha256"}
    canon = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    doc["sha256"] = hashlib.sha256(canon.encode()).hexdigest()
    return doc


@pytest.fixture
def mech() -> Mechanism:
    m = optimal_binary([0.3, 0.7], beta=0.1, eps=0.4)
    return m.with_labels(["Female", "Male"])


def test_round_trip(tmp_path, mech):
    path = mech.save(tmp_path / "m.json")
    back = Mechanism.load(path)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(mech))
    assert back.input_labels == ("Female", "Male") == back.output_labels
    assert back.designer == "optimal_binary"
    assert back.certified_eps == mech.certified_eps
    assert dict(back.parameters) == json.loads(json.dumps(dict(mech.parameters)))
    assert dict(back.uncertainty_set) == {"kind": "l1_ball", "center": [0.3, 0.7],
                                          "radius": 0.1}
    doc = json.loads(path.read_text())
    assert doc["format"] == "pmlkit-mechanism" and doc["format_version"] == FORMAT_VERSION
    # the digest is the SHA-256 of the canonical JSON of every other field
    assert _resign(dict(doc))["sha256"] == doc["sha256"]


def test_round_trip_subconvex_design(tmp_path):
    m = optimal_mechanism([0.5, 0.3, 0.2], 0.7, beta=0.05)
    back = Mechanism.load(m.save(tmp_path / "s.json"))
    np.testing.assert_array_equal(back.matrix, m.matrix)
    assert back.parameters["optimality"] == "exact"


def test_immutable_and_array_protocol(mech):
    a = np.asarray(mech)
    assert a.shape == (2, 2) and not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
    with pytest.raises(AttributeError):
        mech.designer = "x"  # type: ignore[misc]
    np.testing.assert_array_equal(as_matrix(mech), a)


def _tampered(tmp_path, mech, edit, resign: bool):
    doc = mech.to_dict(format_version=1)
    edit(doc)
    if resign:
        _resign(doc)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    return path


def test_changed_matrix_entry_rejected(tmp_path, mech):
    def edit(d):
        d["matrix"][0] = [d["matrix"][0][0] - 0.01, d["matrix"][0][1] + 0.01]
    with pytest.raises(MechanismFileError, match="sha256"):
        Mechanism.load(_tampered(tmp_path, mech, edit, False))


def test_changed_matrix_keeping_digest_fails_certificate(tmp_path):
    # a row moved towards the identity leaks more than certified: caught by the recomputed
    # worst case even when the forger recomputes the digest
    mech = randomized_response(2, 1.0)

    def edit(d):
        d["matrix"] = [[0.9, 0.1], [0.1, 0.9]]
    with pytest.raises(MechanismFileError, match=r"certif|worst case"):
        Mechanism.load(_tampered(tmp_path, mech, edit, True))


@pytest.mark.parametrize("resign", [False, True])
def test_changed_certified_eps_rejected(tmp_path, mech, resign):
    def edit(d):
        d["certified_eps"] = d["certified_eps"] * 0.5
    with pytest.raises(MechanismFileError):
        Mechanism.load(_tampered(tmp_path, mech, edit, resign))


@pytest.mark.parametrize("edit", [
    lambda d: d.update(format_version=2),
    lambda d: d.update(format_version="1"),
    lambda d: d.update(format="other"),
    lambda d: d.update(extra_field=1),
    lambda d: d.pop("designer"),
    lambda d: d.update(matrix=[[0.5, 0.6], [0.5, 0.5]]),
    lambda d: d.update(matrix=[[0.5, 0.5], [0.5]]),
    lambda d: d.update(input_labels=["a", "a"]),
    lambda d: d.update(output_labels=["a"]),
    lambda d: d.update(uncertainty_set={"kind": "l1_ball", "center": [0.3, 0.7]}),
    lambda d: d.update(certified_eps="high"),
])
def test_malformed_files_rejected(tmp_path, mech, edit):
    for resign in (False, True):
        with pytest.raises(MechanismFileError):
            Mechanism.load(_tampered(tmp_path, mech, edit, resign))


def test_wrong_digest_rejected(tmp_path, mech):
    with pytest.raises(MechanismFileError, match="sha256"):
        Mechanism.load(_tampered(tmp_path, mech, lambda d: d.update(sha256="0" * 64), False))


def test_unreadable_files(tmp_path):
    with pytest.raises(MechanismFileError, match="does not exist"):
        Mechanism.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MechanismFileError, match="JSON"):
        Mechanism.load(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(MechanismFileError):
        Mechanism.load(bad)


def test_constructor_validation():
    with pytest.raises(ValidationError, match="matrix"):
        Mechanism([[0.5, 0.6]])
    with pytest.raises(ValidationError, match="input_labels"):
        Mechanism(np.eye(2), input_labels=("a", "a"))
    with pytest.raises(ValidationError, match="certified_eps"):
        Mechanism(np.eye(2), certified_eps=math.nan)


def test_certificate_matches_independent_recomputation(mech):
    # worst case over the ball recomputed by brute force on a fine grid of the binary ball
    w = mech.matrix
    q1 = np.linspace(0.3 - 0.05, 0.3 + 0.05, 2001)
    q = np.stack([q1, 1 - q1], axis=1)
    py = q @ w
    worst = float(np.max(np.log(w.max(axis=0))[None, :] - np.log(py)))
    assert mech.certified_eps == pytest.approx(worst, abs=1e-12)
    assert L1Ball([0.3, 0.7], 0.1).to_dict() == dict(mech.uncertainty_set)


def test_certificate_above_its_own_target_is_rejected():
    """A file whose certified eps exceeds its recorded target eps states a false guarantee."""
    ok = Mechanism(np.array([[0.75, 0.25], [0.25, 0.75]]), designer="user",
                   parameters={"eps": 1.2}, certified_eps=1.0986)
    # no uncertainty set: the certificate cannot be checked, so it loads only as uncertified
    back = Mechanism.from_dict(ok.to_dict(), allow_uncertified=True)
    assert back.certified_eps == 1.0986 and not back.certified
    bad = Mechanism(np.array([[0.75, 0.25], [0.25, 0.75]]), designer="user",
                    parameters={"eps": 0.5}, certified_eps=1.0986)
    with pytest.raises(MechanismFileError, match="above its own target"):
        Mechanism.from_dict(bad.to_dict(), allow_uncertified=True)
