"""``pmlkit estimate`` end to end, and finding the mechanism recorded with a released file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pmlkit import L1Ball, Mechanism, leakage_capacity
from pmlkit.cli.main import main
from pmlkit.errors import DataError, MechanismFileError
from pmlkit.inference import estimate_distribution, find_mechanism

_W = np.array([[0.8, 0.2], [0.3, 0.7]])
_BALL = L1Ball([0.4, 0.6], 0.05)  # certified: privatize refuses uncertified files by default
SEX = Mechanism(_W, ("Female", "Male"), ("Female", "Male"), uncertainty_set=_BALL.to_dict(),
                certified_eps=leakage_capacity(_W, _BALL))
UNCERTIFIED = Mechanism(_W, ("Female", "Male"), ("Female", "Male"))


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def released(tmp_path):
    g = np.random.default_rng(1)
    n = 3000
    df = pd.DataFrame({"sex": g.choice(["Female", "Male"], size=n, p=[0.4, 0.6]),
                       "race": g.choice(["A", "B"], size=n)})
    df.to_csv(tmp_path / "rel.csv", index=False)
    df.to_parquet(tmp_path / "rel.parquet")
    SEX.save(tmp_path / "sex.json")
    return df


def test_estimate_with_mechanism_file_matches_the_library(capsys, tmp_path, released):
    ref = estimate_distribution(released["sex"], SEX)
    for name in ("rel.csv", "rel.parquet"):
        code, out, err = run(capsys, "estimate", "--input", str(tmp_path / name),
                             "--column", "sex", "--mechanism", str(tmp_path / "sex.json"),
                             "--json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["n"] == 3000 and doc["method"] == "mle"
        got = [c["estimate"] for c in doc["categories"]]
        np.testing.assert_allclose(got, ref.estimate)
        assert [c["category"] for c in doc["categories"]] == ["Female", "Male"]
    code, out, _ = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"), "--column",
                       "sex", "--mechanism", str(tmp_path / "sex.json"))
    assert code == 0 and "Female" in out and "profile likelihood" in out
    UNCERTIFIED.save(tmp_path / "unc.json")  # the analyst needs the channel, not a certificate
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"), "--column",
                         "sex", "--mechanism", str(tmp_path / "unc.json"), "--json")
    assert code == 0, err
    np.testing.assert_allclose([c["estimate"] for c in json.loads(out)["categories"]],
                               ref.estimate)


def test_estimate_by_group(capsys, tmp_path, released):
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.parquet"),
                         "--column", "sex", "--mechanism", str(tmp_path / "sex.json"),
                         "--by", "race", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["by"] == "race" and [g["group"] for g in doc["groups"]] == ["A", "B"]
    sub = released[released["race"] == "B"]["sex"]
    ref = estimate_distribution(sub, SEX)
    np.testing.assert_allclose([c["estimate"] for c in doc["groups"][1]["categories"]],
                               ref.estimate)


def _manifest(path, mech, column="sex", into=None):
    doc = {"columns": [column], "into": [into or column], "rows": 3000,
           "mechanism_sha256": mech.to_dict()["sha256"],
           "mechanism": {column: mech.to_dict()}}
    (path.parent / (path.name + ".pmlkit.json")).write_text(json.dumps(doc))


def test_mechanism_found_in_manifest(capsys, tmp_path, released):
    _manifest(tmp_path / "rel.csv", SEX)
    mech, where = find_mechanism(tmp_path / "rel.csv", "sex")
    np.testing.assert_array_equal(mech.matrix, SEX.matrix)
    assert "manifest" in where
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"),
                         "--column", "sex", "--json")
    assert code == 0, err
    assert "manifest" in json.loads(out)["mechanism_source"]


def test_manifest_with_into_column(tmp_path, released):
    _manifest(tmp_path / "rel.csv", SEX, column="sex_true", into="sex")
    mech, _ = find_mechanism(tmp_path / "rel.csv", "sex")
    assert mech.output_labels == ("Female", "Male")


def test_mechanism_found_in_parquet_metadata(capsys, tmp_path, released):
    table = pa.Table.from_pandas(released, preserve_index=False)
    meta = {**(table.schema.metadata or {}),
            b"mechanism": json.dumps({"sex": SEX.to_dict()}).encode()}
    pq.write_table(table.replace_schema_metadata(meta), tmp_path / "meta.parquet")
    mech, where = find_mechanism(tmp_path / "meta.parquet", "sex")
    assert "Parquet metadata" in where and mech.input_labels == ("Female", "Male")
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "meta.parquet"),
                         "--column", "sex", "--json")
    assert code == 0, err
    np.testing.assert_allclose([c["estimate"] for c in json.loads(out)["categories"]],
                               estimate_distribution(released["sex"], SEX).estimate)


def test_tampered_or_missing_records_are_errors(capsys, tmp_path, released):
    code, _, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"),
                       "--column", "sex")
    assert code == 1 and err.startswith("pmlkit: error: no mechanism recorded")
    assert "--mechanism FILE" in err and "Traceback" not in err
    doc = SEX.to_dict()
    doc["matrix"] = [[0.5, 0.5], [0.3, 0.7]]  # edited after writing: digest mismatch
    (tmp_path / "rel.csv.pmlkit.json").write_text(json.dumps({"mechanism": {"sex": doc}}))
    with pytest.raises(MechanismFileError, match="sha256"):
        find_mechanism(tmp_path / "rel.csv", "sex")
    _manifest(tmp_path / "rel.csv", SEX, column="other")
    with pytest.raises(DataError, match="no mechanism for column 'sex'"):
        find_mechanism(tmp_path / "rel.csv", "sex")


def test_released_value_not_an_output_label(capsys, tmp_path):
    pd.DataFrame({"sex": ["Female", "Other"]}).to_csv(tmp_path / "x.csv", index=False)
    SEX.save(tmp_path / "sex.json")
    code, _, err = run(capsys, "estimate", "--input", str(tmp_path / "x.csv"), "--column",
                       "sex", "--mechanism", str(tmp_path / "sex.json"))
    assert code == 1
    assert "'Other' appears in 1 row but is not an output label" in err


@pytest.mark.parametrize("out_name", ["out.parquet", "out.csv"])
def test_privatize_then_estimate_with_no_other_argument(capsys, tmp_path, released, out_name):
    code, _, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "sex.json"),
                       "--input", str(tmp_path / "rel.parquet"), "--column", "sex",
                       "--output", str(tmp_path / out_name), "--seed", "3")
    assert code == 0, err
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / out_name),
                         "--column", "sex", "--json")
    assert code == 0, err
    doc = json.loads(out)
    truth = (released["sex"] == "Female").mean()
    cat = doc["categories"][0]
    assert cat["category"] == "Female" and cat["lower"] <= truth <= cat["upper"]


def test_design_with_the_estimation_utility_and_its_summary(capsys, tmp_path):
    """``pmlkit design --utility estimation`` writes a certified mechanism; design and
    assess print whether it is identifiable and its expected estimation error, which the
    JSON carries as a simulation that agrees with the independent inversion covariance."""
    from pmlkit.sets import set_from_dict

    g = np.random.default_rng(3)
    pd.DataFrame({"c": g.choice(list("abc"), size=4000, p=[0.6, 0.3, 0.1])}).to_csv(
        tmp_path / "ref.csv", index=False)
    out_file = tmp_path / "m.json"
    code, out, err = run(capsys, "design", "--reference", str(tmp_path / "ref.csv"),
                         "--column", "c", "--eps", "1", "--delta", "1e-6", "--utility",
                         "estimation", "--output", str(out_file), "--json")
    assert code == 0, err
    doc = json.loads(out)
    mech = Mechanism.load(out_file)
    assert mech.parameters["utility"] == "estimation_error(n=10000)"
    uset = set_from_dict(doc["guarantee"]["set"])
    assert leakage_capacity(mech.matrix, uset) <= 1.0 + 1e-9
    summary = doc["summary"]
    assert summary["identifiable"] is True and summary["estimation"]["n"] == 10_000
    p = np.asarray(doc["guarantee"]["estimate"])
    w = np.asarray(mech.matrix)
    # independent: inverse Fisher information in the coordinates P_1..P_{N-1}
    # (P_N = 1 - sum), d q_y / d P_i = W[i, y] - W[N, y]; P_N's variance is 1^T I^-1 1
    q = p @ w
    keep = q > 0
    d = (w[:-1] - w[-1])[:, keep]
    cov = np.linalg.inv((d / q[keep]) @ d.T)
    expected = (np.trace(cov) + cov.sum()) / 10_000
    # the summary simulates the estimate's error (n = 10^4 rows: the estimate is inside the
    # simplex, where the asymptotic value holds): within its Monte Carlo error
    est = summary["estimation"]
    assert abs(est["expected_squared_error"] - expected) <= 5 * est["standard_error"]
    code, out, err = run(capsys, "design", "--reference", str(tmp_path / "ref.csv"),
                         "--column", "c", "--eps", "1", "--delta", "1e-6", "--utility",
                         "estimation", "--output", str(out_file), "--overwrite")
    assert code == 0, err
    assert "estimation: identifiable; from n = 10000 released rows" in out
    code, out, err = run(capsys, "assess", "--mechanism", str(out_file), "--prior",
                         ",".join(str(x) for x in p))
    assert code == 0, err
    assert "estimation: identifiable" in out
