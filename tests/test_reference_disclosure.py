"""What mechanism files reveal: the reference fingerprint, the warning when the reference
data itself is privatised, and the minimal record."""

from __future__ import annotations

import hashlib
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import pmlkit._provenance as prov
from pmlkit import privatize, privatize_file
from pmlkit.cli.main import main
from pmlkit.design import design_from_samples
from pmlkit.errors import PMLWarning
from pmlkit.mechanism import Mechanism

LABELS = ["Female"] * 30 + ["Male"] * 50


def _sha(text: str) -> str:
    return hashlib.sha256(b"pmlkit-sample/v1\x00" + text.encode()).hexdigest()


@pytest.fixture(scope="module")
def mech() -> Mechanism:
    return design_from_samples(LABELS, 1.0, 0.05).mechanism


def test_design_records_a_sample_fingerprint(mech):
    ref = mech.parameters["reference"]
    assert ref == {"records": 80, "sample_sha256": _sha("\x1f".join(LABELS))}
    # the same digest whatever container holds the labels
    for form in (np.array(LABELS), pd.Series(LABELS), tuple(LABELS)):
        assert prov.sample_fingerprint(form) == ref


def test_privatizing_the_reference_sample_warns(mech):
    with pytest.warns(PMLWarning, match="reference data itself"):
        privatize(mech, LABELS)
    with pytest.warns(PMLWarning, match="reference data itself"):
        privatize(mech, pd.DataFrame({"sex": LABELS, "x": 0}), columns="sex")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PMLWarning)
        privatize(mech, LABELS[::-1])  # same size, other records: hashed, no match
        privatize(mech, LABELS[:-1])  # other size: not even hashed (next test)


def test_size_is_compared_before_hashing(mech, monkeypatch, tmp_path):
    def boom(*a, **k):
        raise AssertionError("hashed although the sizes differ")
    monkeypatch.setattr(prov, "_digest", boom)
    monkeypatch.setattr(prov, "file_fingerprint", boom)
    privatize(mech, [*LABELS, "Male"])
    ref = dict(mech.parameters)
    ref["reference"] = {**ref["reference"], "file_size": 10**9, "file_sha256": "0" * 64}
    other = Mechanism(mech.matrix, mech.input_labels, mech.output_labels, mech.designer,
                      ref, dict(mech.uncertainty_set), mech.certified_eps)
    (tmp_path / "d.csv").write_text("sex\nMale\n")
    assert prov.warn_if_reference_file(other, tmp_path / "d.csv") is False


def _csv(path, labels):
    pd.DataFrame({"sex": labels, "age": range(len(labels))}).to_csv(path, index=False)
    return path


def test_cli_design_records_the_file_and_privatize_warns_on_it(tmp_path, capsys):
    ref = _csv(tmp_path / "ref.csv", LABELS)
    data = _csv(tmp_path / "data.csv", ["Male", "Female"] * 20)
    assert main(["design", "--reference", str(ref), "--column", "sex", "--epsilon", "1",
                 "--delta", "0.05", "--output", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert "discloses the reference estimate and m = 80" in out
    doc = json.loads((tmp_path / "m.json").read_text())
    raw = ref.read_bytes()
    ref_doc = doc["provenance"]["details"]["reference"]
    assert ref_doc["file_size"] == len(raw)
    assert ref_doc["file_sha256"] == hashlib.sha256(raw).hexdigest()
    code = main(["privatize", "--mechanism", str(tmp_path / "m.json"), "--input", str(ref),
                 "--column", "sex", "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 0
    warn = [ln for ln in err.splitlines() if "reference data itself" in ln]
    assert len(warn) == 1 and warn[0].startswith("pmlkit: warning: ")
    code = main(["privatize", "--mechanism", str(tmp_path / "m.json"), "--input", str(data),
                 "--column", "sex", "--output", str(tmp_path / "o2.csv")])
    assert code == 0 and "reference" not in capsys.readouterr().err


def test_privatize_file_warns_in_python(tmp_path, mech):
    ref = _csv(tmp_path / "ref.csv", LABELS)
    params = dict(mech.parameters)
    params["reference"] = {**params["reference"], **prov.file_fingerprint(ref)}
    m2 = Mechanism(mech.matrix, mech.input_labels, mech.output_labels, mech.designer, params,
                   dict(mech.uncertainty_set), mech.certified_eps)
    with pytest.warns(PMLWarning, match="reference data itself"):
        privatize_file(m2, ref, tmp_path / "o.csv", "sex")


def test_minimal_record_drops_the_estimate_and_still_verifies(tmp_path, mech):
    small = mech.minimal_record()
    doc = json.loads(small.to_json())
    for key in ("prior", "m", "delta", "confidence", "utility_value", "beta"):
        assert key not in small.parameters
    g, prov = doc["guarantee"], doc["provenance"]
    assert g["m"] is None and g["delta"] == 0 and g["method"] is None and g["statement"] == ""
    assert prov["estimate"] is None and prov["utility_value"] is None
    assert "beta" not in prov["details"] and "records" not in prov["details"]["reference"]
    assert "80" not in json.dumps(prov)
    back = Mechanism.load(small.save(tmp_path / "m.json"))
    assert back.certified and back.certified_eps == mech.certified_eps
    with pytest.warns(PMLWarning):  # still recognises the reference sample (hash only)
        privatize(back, LABELS)
