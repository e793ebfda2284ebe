"""The design / assess / privatize commands, end to end through pmlkit.cli.main.main."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from pmlkit import L1Ball, Mechanism, leakage_capacity
from pmlkit.cli.main import main

_W = np.array([[0.8, 0.2], [0.3, 0.7]])
_BALL = L1Ball([0.33, 0.67], 0.05)  # certified: uncertified files need --allow-uncertified
SEX = Mechanism(_W, ("Female", "Male"), ("Female", "Male"), uncertainty_set=_BALL.to_dict(),
                certified_eps=leakage_capacity(_W, _BALL))


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def ref(tmp_path):
    g = np.random.default_rng(0)
    n = 4000
    df = pd.DataFrame({"sex": np.where(g.random(n) < 0.3, "Female", "Male"),
                       "age": g.integers(17, 90, n)})
    df.to_csv(tmp_path / "ref.csv", index=False)
    df.to_parquet(tmp_path / "ref.parquet")
    return df


def _pml_by_hand(w, p):
    """l(X -> y) = log(max_x W[x, y] / P_Y(y)) (Def. PML), written out independently."""
    return [math.log(max(w[i][j] for i in range(len(p)))
                     / sum(p[i] * w[i][j] for i in range(len(p)))) for j in range(len(w[0]))]


def test_design_writes_certified_mechanism(capsys, tmp_path, ref):
    out = tmp_path / "m.json"
    code, stdout, err = run(capsys, "design", "--reference", str(tmp_path / "ref.csv"),
                            "--column", "sex", "--epsilon", "0.693", "--delta", "1e-6",
                            "--output", str(out), "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    mech = Mechanism.load(out)  # re-checks the certificate over the recorded set
    assert mech.input_labels == ("Female", "Male")
    g = doc["guarantee"]
    assert g["m"] == 4000 and g["certified_eps"] <= 0.693 + 1e-9
    assert g["estimate"][0] == pytest.approx((ref["sex"] == "Female").mean())
    # the set is an l1-ball: brute force over its segment, PML of every outcome <= eps
    w = mech.matrix.tolist()
    beta = g["beta"]
    for q0 in np.linspace(max(0, g["estimate"][0] - beta / 2),
                          min(1, g["estimate"][0] + beta / 2), 201):
        assert max(_pml_by_hand(w, [q0, 1 - q0])) <= 0.693 + 1e-7
    code, text, _ = run(capsys, "design", "--reference", str(tmp_path / "ref.parquet"),
                        "--column", "sex", "--epsilon", "0.693", "--delta", "1e-6",
                        "--output", str(out))
    assert code == 1  # exists
    code, text, _ = run(capsys, "design", "--reference", str(tmp_path / "ref.parquet"),
                        "--column", "sex", "--epsilon", "0.693", "--delta", "1e-6",
                        "--output", str(out), "--overwrite", "--utility", "accuracy")
    assert code == 0 and "PML guarantee" in text and "randomized response" in text


def test_assess_prior_matches_hand_formula(capsys, tmp_path):
    SEX.save(tmp_path / "m.json")
    code, stdout, err = run(capsys, "assess", "--mechanism", str(tmp_path / "m.json"),
                            "--prior", "0.25,0.75", "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    hand = _pml_by_hand(SEX.matrix.tolist(), [0.25, 0.75])
    assert [doc["pml"]["Female"], doc["pml"]["Male"]] == pytest.approx(hand, rel=1e-12)
    assert doc["eps_min"] == pytest.approx(max(hand))
    assert doc["ldp_epsilon"] == pytest.approx(math.log(0.8 / 0.3) if 0.8 / 0.3 > 0.7 / 0.2
                                               else math.log(0.7 / 0.2))


def test_assess_reference_worst_case_brute_force(capsys, tmp_path, ref):
    SEX.save(tmp_path / "m.json")
    code, stdout, err = run(capsys, "assess", "--mechanism", str(tmp_path / "m.json"),
                            "--reference", str(tmp_path / "ref.parquet"), "--column", "sex",
                            "--delta", "1e-3", "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    s = doc["set"]
    center, radius = s["set"]["center"], s["set"]["radius"]
    grid = np.linspace(center[0] - radius / 2, center[0] + radius / 2, 2001)
    brute = max(max(_pml_by_hand(SEX.matrix.tolist(), [q, 1 - q])) for q in grid)
    assert s["worst_case_eps"] == pytest.approx(brute, abs=1e-6)
    assert s["worst_case_eps"] >= doc["eps_min"]
    assert s["bounds"]["eps_bound"] >= s["worst_case_eps"] - 1e-12
    assert s["bounds"]["sensitivity_bound"] >= s["sensitivity"] - 1e-12


def test_assess_usage_errors(capsys, tmp_path):
    SEX.save(tmp_path / "m.json")
    code, _, err = run(capsys, "assess", "--mechanism", str(tmp_path / "m.json"))
    assert code == 2 and "exactly one" in err
    code, _, err = run(capsys, "assess", "--mechanism", str(tmp_path / "m.json"),
                       "--prior", "0.2,0.2,0.6")
    assert code == 1 and err.count("\n") == 1 and "prior" in err
    code, _, err = run(capsys, "assess", "--mechanism", str(tmp_path / "nope.json"),
                       "--prior", "0.5,0.5")
    assert code == 1 and "does not exist" in err


def test_privatize_local_seeded_warns_and_keeps_columns(capsys, tmp_path, ref):
    SEX.save(tmp_path / "m.json")
    out = tmp_path / "o.csv"
    code, stdout, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "m.json"),
                            "--input", str(tmp_path / "ref.parquet"), "--column", "sex",
                            "--into", "sex_p", "--keep-raw", "--output", str(out), "--seed",
                            "5", "--json")
    assert code == 0, err
    assert "research only" in err.lower()
    doc = json.loads(stdout)
    assert doc["seeded"] is True and doc["rows"] == 4000
    back = pd.read_csv(out)
    pd.testing.assert_frame_equal(back[["sex", "age"]], ref)
    assert set(back["sex_p"]) <= {"Female", "Male"}
    code, stdout, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "m.json"),
                            "--input", str(tmp_path / "ref.parquet"), "--column", "sex",
                            "--output", str(tmp_path / "s.parquet"))
    assert code == 0 and err == "" and "secure" in stdout


@pytest.mark.parametrize("args,code,needle", [
    (["--column", "nope", "--output", "x.parquet"], 1, "not found"),
    (["--column", "sex", "--output", "ref.parquet"], 1, "is the input"),
    (["--column", "sex", "--output", "x.parquet", "--scheduler", "tcp://x:1"], 2, "dask"),
    (["--column", "sex", "--into", "a", "--into", "b", "--output", "x.parquet"], 2, "--into"),
])
def test_privatize_errors_one_line(capsys, tmp_path, ref, monkeypatch, args, code, needle):
    monkeypatch.chdir(tmp_path)
    SEX.save(tmp_path / "m.json")
    got, _, err = run(capsys, "privatize", "--mechanism", "m.json", "--input", "ref.parquet",
                      *args)
    assert got == code and needle in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "ref.csv", "ref.parquet"]


def test_privatize_adult_headerless_names_preset(capsys, tmp_path, adult_dir):
    SEX.save(tmp_path / "m.json")
    code, stdout, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "m.json"),
                            "--input", str(adult_dir / "adult.test"), "--names", "adult",
                            "--column", "sex", "--output", str(tmp_path / "t.parquet"),
                            "--json")
    assert code == 0, err
    df = pd.read_parquet(tmp_path / "t.parquet")
    assert len(df) == 16281 and json.loads(stdout)["rows"] == 16281
    # untouched cells come out as they were: ' ?' stays ' ?' (963 in adult.test), not null
    assert df["workclass"].isna().sum() == 0 and (df["workclass"] == " ?").sum() == 963


def test_privatize_dask_engine(capsys, tmp_path, ref):
    pytest.importorskip("distributed")
    SEX.save(tmp_path / "m.json")
    ref.iloc[:2000].to_parquet(tmp_path / "p0.parquet")
    ref.iloc[2000:].to_parquet(tmp_path / "p1.parquet")
    out = tmp_path / "out.parquet"
    code, stdout, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "m.json"),
                            "--input", str(tmp_path / "p*.parquet"), "--column", "sex",
                            "--into", "sex_p", "--output", str(out), "--engine", "dask",
                            "--json")
    assert code == 0, err
    assert json.loads(stdout)["rows"] == 4000
    back = pd.read_parquet(out)
    assert len(back) == 4000
    # --into without --keep-raw: the raw column is left out of every part
    assert list(back.columns) == ["age", "sex_p"]
    pd.testing.assert_series_equal(back["age"].reset_index(drop=True), ref["age"],
                                   check_dtype=False)
    assert json.loads((tmp_path / "out.parquet.pmlkit.json").read_text())["dropped"] == ["sex"]
    assert (tmp_path / "out.parquet.pmlkit.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_privatize_dask_engine_csv_output(capsys, tmp_path, ref):
    pytest.importorskip("distributed")
    SEX.save(tmp_path / "m.json")
    code, stdout, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "m.json"),
                            "--input", str(tmp_path / "ref.csv"), "--column", "sex",
                            "--output", str(tmp_path / "out.csv"), "--engine", "dask",
                            "--seed", "1", "--progress")
    assert code == 0, err
    assert "research only" in err.lower() and "100% Completed" in err
    assert "SEEDED RUN" in stdout
    parts = sorted((tmp_path / "out.csv").glob("part-*.csv"))
    back = pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)
    assert len(back) == len(ref) and back["age"].tolist() == ref["age"].tolist()
    assert set(back["sex"]) <= {"Female", "Male"}


def test_assess_text_names_the_published_results(capsys, tmp_path, ref):
    """The text report names the paper's results as published, not by LaTeX labels."""
    SEX.save(tmp_path / "m.json")
    code, stdout, err = run(capsys, "assess", "--mechanism", str(tmp_path / "m.json"),
                            "--reference", str(tmp_path / "ref.parquet"), "--column", "sex",
                            "--delta", "1e-3", "--target", "2")
    assert code == 0, err
    assert "Theorem 4" in stdout and "Section 4.4" in stdout and "Corollary 3" in stdout
    for label in ("eq. ", "Thm ", "Cor. "):
        assert label not in stdout


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_privatize_into_leaves_the_raw_column_out_unless_keep_raw(capsys, tmp_path, ref,
                                                                  suffix):
    """``--into NEW`` writes the released values into NEW and leaves the raw sensitive
    column out of the output (the manifest and the summary say so); ``--keep-raw`` keeps
    it, byte for byte, and says so too."""
    SEX.save(tmp_path / "m.json")
    out = tmp_path / f"o{suffix}"
    code, stdout, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "m.json"),
                            "--input", str(tmp_path / "ref.csv"), "--column", "sex",
                            "--into", "sex_p", "--output", str(out))
    assert code == 0, err
    assert "raw column(s) sex left out" in stdout
    back = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert list(back.columns) == ["age", "sex_p"]
    assert back["age"].astype(str).tolist() == ref["age"].astype(str).tolist()
    assert set(back["sex_p"]) <= {"Female", "Male"}
    manifest = json.loads((tmp_path / f"o{suffix}.pmlkit.json").read_text())
    assert manifest["dropped"] == ["sex"] and manifest["into"] == ["sex_p"]
    kept = tmp_path / f"k{suffix}"
    code, stdout, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "m.json"),
                            "--input", str(tmp_path / "ref.csv"), "--column", "sex",
                            "--into", "sex_p", "--keep-raw", "--output", str(kept), "--json")
    assert code == 0, err
    assert json.loads(stdout)["dropped"] == []
    back = pd.read_csv(kept) if suffix == ".csv" else pd.read_parquet(kept)
    assert back["sex"].tolist() == ref["sex"].tolist()
    assert "dropped" not in json.loads((tmp_path / f"k{suffix}.pmlkit.json").read_text())
    # --keep-raw alone (the values replace the column in place) is a usage error
    code, _, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "m.json"),
                       "--input", str(tmp_path / "ref.csv"), "--column", "sex",
                       "--keep-raw", "--output", str(tmp_path / "x.csv"))
    assert code == 2 and "--keep-raw needs --into" in err
