"""Strict loading of mechanism files: forged files (with the digest recomputed, which
anyone can do) are refused, and a file without a checkable guarantee loads only as
explicitly uncertified."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from pmlkit.cli.main import main
from pmlkit.design import design_from_samples
from pmlkit.errors import MechanismFileError
from pmlkit.estimation import EmpiricalDistribution
from pmlkit.mechanism import Mechanism

DATA = Path(__file__).parent / "data"


def _resign(doc: dict) -> dict:
    """Recompute the digest as a forger would (canonical JSON, SHA-256)."""
    content = {k: v for k, v in doc.items() if k != "sha256"}
    canon = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    doc["sha256"] = hashlib.sha256(canon.encode()).hexdigest()
    return doc


@pytest.fixture(scope="module")
def designed() -> dict:
    est = EmpiricalDistribution.from_counts([40, 25, 35], ["a", "b", "c"])
    return design_from_samples(est, 1.0, 1e-3).mechanism.to_dict(format_version=1)


def _write(tmp_path: Path, doc: dict, name: str = "m.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(_resign(doc)), encoding="utf-8")
    return path


def _forged_identity(tmp_path: Path) -> Path:
    doc = Mechanism(np.eye(2), ("F", "M"), ("F", "M"), designer="design_from_samples",
                    parameters={"eps": 0.69, "delta": 1e-6}).to_dict()
    return _write(tmp_path, doc, "identity.json")


# -- the v1 files written before strict loading still load --------------------------------

@pytest.mark.parametrize("name", ["v1_design_l1", "v1_design_box_cp", "v1_optimal_l1ball"])
def test_format_v1_files_from_earlier_code_load_certified(name):
    mech = Mechanism.load(DATA / f"{name}.json")
    assert mech.certified and mech.certified_eps is not None


def test_format_v1_uncertified_file_needs_the_flag():
    with pytest.raises(MechanismFileError, match=r"UNCERTIFIED.*allow_uncertified"):
        Mechanism.load(DATA / "v1_user_uncertified.json")
    mech = Mechanism.load(DATA / "v1_user_uncertified.json", allow_uncertified=True)
    assert not mech.certified and mech.input_labels == ("F", "M")


def test_box_cp_file_set_matches_an_independent_clopper_pearson_box():
    # the set the loader rebuilds is the Clopper-Pearson box: checked with scipy's beta
    # quantiles (Bonferroni over N = 3 categories, two-sided), written from the definition
    doc = json.loads((DATA / "v1_design_box_cp.json").read_text())
    counts, m, a = np.array([40, 25, 35]), 100, 1e-3 / 3
    lo = np.where(counts > 0, beta_dist.ppf(a / 2, counts, m - counts + 1), 0.0)
    hi = np.where(counts < m, beta_dist.ppf(1 - a / 2, counts + 1, m - counts), 1.0)
    np.testing.assert_allclose(doc["uncertainty_set"]["lower"], lo, atol=1e-9)
    np.testing.assert_allclose(doc["uncertainty_set"]["upper"], hi, atol=1e-9)


# -- forged files --------------------------------------------------------------------------

def test_identity_without_set_or_certificate_is_refused(tmp_path):
    path = _forged_identity(tmp_path)
    with pytest.raises(MechanismFileError, match=r"UNCERTIFIED.*'delta': 1e-06"):
        Mechanism.load(path)
    mech = Mechanism.load(path, allow_uncertified=True)
    assert mech.certified is False


def test_radius_edited_to_zero_is_refused(tmp_path, designed):
    doc = json.loads(json.dumps(designed))
    doc["uncertainty_set"]["radius"] = 0.0
    doc["parameters"]["beta"] = 0.0
    with pytest.raises(MechanismFileError, match=r"uncertainty_set.*not the set"):
        Mechanism.load(_write(tmp_path, doc))


def test_radius_edited_without_beta_is_refused(tmp_path, designed):
    doc = json.loads(json.dumps(designed))
    doc["uncertainty_set"]["radius"] = 0.0
    with pytest.raises(MechanismFileError, match=r"radius.*beta"):
        Mechanism.load(_write(tmp_path, doc))


def test_one_vertex_set_is_refused(tmp_path, designed):
    doc = json.loads(json.dumps(designed))
    doc["uncertainty_set"] = {"kind": "vertex_set",
                              "vertices": [doc["parameters"]["prior"]]}
    doc["parameters"]["beta"] = None
    with pytest.raises(MechanismFileError, match="not the set"):
        Mechanism.load(_write(tmp_path, doc))


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.update(certified_eps=str(d["certified_eps"])), "certified_eps"),
    (lambda d: d["parameters"].update(eps="1.0"), "parameters.eps"),
    (lambda d: d["parameters"].update(delta="0.001"), "parameters.delta"),
    (lambda d: d["parameters"].update(m=100.0), "parameters.m"),
    (lambda d: d["parameters"].update(m=True), "parameters.m"),
    (lambda d: d.update(certified_eps=True), "certified_eps"),
    (lambda d: d.update(format_version=True), "format_version"),
    (lambda d: d.update(format_version=1.0), "format_version"),
    (lambda d: d["uncertainty_set"].update(radius="0.5"), "uncertainty_set.radius"),
    (lambda d: d["uncertainty_set"].update(radius=False), "uncertainty_set.radius"),
    (lambda d: d["matrix"][0].__setitem__(0, True), "matrix"),
    (lambda d: d.update(designer=3), "designer"),
    (lambda d: d["parameters"].pop("m"), "m"),
    (lambda d: d["parameters"].pop("prior"), "prior"),
    (lambda d: d["parameters"].update(confidence="box-cp"), "confidence"),
    (lambda d: d["parameters"].update(delta=0.5), "uncertainty_set"),
    (lambda d: d["parameters"].update(m=1000), "uncertainty_set"),
    (lambda d: d["parameters"].update(prior=[0.41, 0.24, 0.35]), "uncertainty_set"),
    (lambda d: d["parameters"].update(prior=[0.405, 0.245, 0.35]), "prior.*counts"),
    (lambda d: d["parameters"].update(prior=[0.4, 0.25, 0.35, 0.0]), "prior.*4 entries"),
])
def test_wrong_types_and_inconsistent_records_are_refused(tmp_path, designed, edit, field):
    doc = json.loads(json.dumps(designed))
    edit(doc)
    with pytest.raises(MechanismFileError, match=field):
        Mechanism.load(_write(tmp_path, doc))


@pytest.mark.parametrize("where", ["top", "nested"])
def test_duplicate_keys_are_refused(tmp_path, designed, where):
    text = json.dumps(_resign(json.loads(json.dumps(designed))))
    if where == "top":  # a second matrix after the first: json.loads would keep the last
        text = text[:-1] + ', "matrix": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}'
    else:
        text = text.replace('"radius": ', '"radius": 0.0, "radius": ', 1)
    path = tmp_path / "dup.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MechanismFileError, match=r"key '(matrix|radius)' twice"):
        Mechanism.load(path)


def test_verify_false_never_reports_certified(tmp_path, designed):
    mech = Mechanism.load(_write(tmp_path, json.loads(json.dumps(designed))), verify=False)
    assert not mech.certified


def test_in_memory_certified_is_checked():
    w = np.array([[0.75, 0.25], [0.25, 0.75]])
    ball = {"kind": "l1_ball", "center": [0.5, 0.5], "radius": 0.1}
    # eps_max over the ball is log(0.75 / min_q P(y)) with min P(y) = 0.5 - 0.05 * 0.5
    true = float(np.log(0.75 / (0.25 + 0.5 * 0.45)))
    assert Mechanism(w, uncertainty_set=ball, certified_eps=true + 1e-6).certified
    assert not Mechanism(w, uncertainty_set=ball, certified_eps=true - 1e-3).certified
    assert not Mechanism(w).certified


# -- the command line ----------------------------------------------------------------------

def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_privatize_refuses_uncertified_unless_asked(tmp_path, capsys):
    path = _forged_identity(tmp_path)
    data = tmp_path / "d.csv"
    data.write_text("sex\nF\nM\nF\n", encoding="utf-8")
    code, out, err = _run(capsys, "privatize", "--mechanism", str(path), "--input", str(data),
                          "--column", "sex", "--output", str(tmp_path / "o.csv"))
    assert code == 1 and not (tmp_path / "o.csv").exists()
    assert err.startswith("pmlkit: error: ") and "--allow-uncertified" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = _run(capsys, "privatize", "--mechanism", str(path), "--input", str(data),
                          "--column", "sex", "--output", str(tmp_path / "o.csv"),
                          "--allow-uncertified")
    assert code == 0 and "UNCERTIFIED" in out and "UNCERTIFIED" in err


def test_cli_assess_prints_uncertified_on_every_use(tmp_path, capsys):
    path = _forged_identity(tmp_path)
    code, out, _ = _run(capsys, "assess", "--mechanism", str(path), "--prior", "0.5,0.5")
    assert code == 0 and "UNCERTIFIED" in out
    shutil.copy(DATA / "v1_design_l1.json", tmp_path / "ok.json")
    code, out, _ = _run(capsys, "assess", "--mechanism", str(tmp_path / "ok.json"),
                        "--prior", "0.4,0.25,0.35")
    assert code == 0 and "certified: worst-case eps" in out and "UNCERTIFIED" not in out


@pytest.mark.parametrize("counts", [[40, 25, 35], [7, 0, 3]])
def test_every_confidence_method_round_trips_certified(counts):
    # the loader's rebuilt set must equal the designer's for every method, zero counts too
    import warnings

    from pmlkit.confidence import METHODS

    est = EmpiricalDistribution.from_counts(counts)
    for method in METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mech = design_from_samples(est, 1.0, 1e-2, confidence=method).mechanism
        back = Mechanism.from_dict(json.loads(mech.to_json()))
        assert back.certified, method
        doc = mech.to_dict(format_version=1)
        doc["parameters"]["delta"] = 0.5  # same set claimed at another delta: refused
        with pytest.raises(MechanismFileError, match="not the set"):
            Mechanism.from_dict(_resign(doc))
        doc = mech.to_dict()  # the same forgery in format version 2
        doc["guarantee"]["delta"] = 0.5
        with pytest.raises(MechanismFileError, match="not the set"):
            Mechanism.from_dict(_resign(doc))


def test_fast_digest_is_the_documents_digest() -> None:
    """The digest written once per distinct matrix entry is the SHA-256 of the canonical
    JSON document (computed here with json and hashlib), for a large randomized response
    and a large matrix with a few distinct entries; None where the shortcut does not apply
    (a small matrix, or one with many distinct entries)."""
    import hashlib
    import json

    import numpy as np

    import pmlkit
    from pmlkit._mechanism_file import fast_digest

    def by_hand(mech: pmlkit.Mechanism) -> str:
        doc = {k: v for k, v in mech.to_dict().items() if k != "sha256"}
        canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(canon.encode("utf-8")).hexdigest()

    rr = pmlkit.randomized_response(80, 1.3)
    rng = np.random.default_rng(4)
    w = rng.choice([0.1, 0.3, 0.6, 0.0], size=(70, 70))
    w[:, 0] += 1.0
    few = pmlkit.Mechanism(w / w.sum(axis=1, keepdims=True))
    for mech in (rr, few):
        assert fast_digest(mech) == by_hand(mech) == mech.to_dict()["sha256"]
    assert fast_digest(pmlkit.randomized_response(3, 1.0)) is None
    many = rng.random((70, 70))
    assert fast_digest(pmlkit.Mechanism(many / many.sum(axis=1, keepdims=True))) is None
