"""``pmlkit calibrate laplace|gaussian`` on small CSV files and on UCI Adult, against the
library (no second computation in the CLI) and hand-derived values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from pmlkit.additive import calibrate_gaussian, calibrate_laplace
from pmlkit.cli.main import cli, main


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "ref.csv"
    rows = ["sex,flag"] + ["Male,1"] * 700 + ["Female,0"] * 300
    path.write_text("\n".join(rows) + "\n")
    return path


def run(args):
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_laplace_text_and_json(csv_file):
    args = ["calibrate", "laplace", "--reference", str(csv_file), "--column", "sex",
            "--positive", "Male", "--epsilon", "1.0", "--delta", "1e-6"]
    lib = calibrate_laplace(["Male"] * 700 + ["Female"] * 300, 1.0, 1e-6, positive="Male")
    text = run(args)
    assert f"b = {lib.b:.6g}" in text and "LDP scale 2/eps = 2" in text
    assert "m = 1000" in text and f"{lib.beta:.6g}" in text and "delta=1e-06" in text
    doc = json.loads(run([*args, "--json"]))
    assert doc["b"] == pytest.approx(lib.b, rel=1e-15) and doc["m"] == 1000
    beta = math.sqrt(2 * (math.log(2) - math.log(1e-6)) / 1000)
    assert doc["beta"] == pytest.approx(beta, rel=1e-12)
    assert doc["ldp_scale"] == pytest.approx(2.0)
    assert doc["labels"] == {"-1": "Female", "+1": "Male"}


def test_numeric_labels_compare_as_text(csv_file):
    doc = json.loads(run(["calibrate", "laplace", "--reference", str(csv_file), "--column",
                          "flag", "--positive", "1", "--epsilon", "1", "--delta", "1e-6",
                          "--json"]))
    assert doc["counts"] == [300, 700] and doc["labels"]["+1"] == "1"


def test_laplace_other_set(csv_file):
    doc = json.loads(run(["calibrate", "laplace", "--reference", str(csv_file), "--column",
                          "sex", "--positive", "Male", "--epsilon", "1", "--delta", "1e-6",
                          "--confidence", "box-cp", "--json"]))
    assert doc["confidence"] == "box-cp" and doc["beta"] is None and doc["b"] > 0


def test_gaussian_table_and_json(csv_file):
    args = ["calibrate", "gaussian", "--reference", str(csv_file), "--column", "sex",
            "--positive", "Male", "--sigma", "1.5", "--delta", "1e-6", "--points", "5",
            "--eps-max", "2"]
    text = run(args)
    assert "paper eps*" in text and "direct eps" in text and "pLDP eps" in text
    doc = json.loads(run([*args, "--json"]))
    lib = calibrate_gaussian(["Male"] * 700 + ["Female"] * 300, 1.5, 1e-6, positive="Male",
                             eps=np.linspace(0.4, 2.0, 5))
    paper = [r for r in doc["curves"] if r["curve"] == "paper"]
    direct = [r for r in doc["curves"] if r["curve"] == "direct"]
    assert len(paper) == len(direct) == 5
    for k, (p, d) in enumerate(zip(paper, direct, strict=True)):
        assert p["delta"] == pytest.approx(lib.paper_delta[k], rel=1e-12)
        assert d["eps"] == pytest.approx(lib.direct_eps[k], rel=1e-12)
        assert p["eps"] == "inf" or p["eps"] >= d["eps"]


@pytest.mark.parametrize("extra,needle", [
    (["--positive", "Other"], "positive"),
    (["--column", "nope"], "nope"),
    (["--delta", "2"], "delta"),
    (["--epsilon", "-1"], "eps"),
])
def test_errors_are_one_line(csv_file, capsys, extra, needle):
    base = {"--reference": str(csv_file), "--column": "sex", "--positive": "Male",
            "--epsilon": "1", "--delta": "1e-6"}
    for k, v in zip(extra[::2], extra[1::2], strict=True):
        base[k] = v
    argv = ["calibrate", "laplace"] + [x for kv in base.items() for x in kv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("pmlkit: error:") and needle in err and len(err.splitlines()) == 1


def test_three_labels_is_a_data_error(tmp_path, capsys):
    path = tmp_path / "three.csv"
    path.write_text("c\na\nb\nc\n")
    assert main(["calibrate", "gaussian", "--reference", str(path), "--column", "c",
                 "--positive", "a", "--sigma", "1", "--delta", "1e-6"]) == 1
    assert "exactly two" in capsys.readouterr().err


def test_adult(adult_dir):
    doc = json.loads(run(["calibrate", "laplace", "--reference",
                          str(adult_dir / "adult.data"), "--names", "adult", "--column",
                          "sex", "--positive", "Male", "--epsilon", "0.693", "--delta",
                          "1e-9", "--json"]))
    assert doc["counts"] == [10771, 21790] and doc["m"] == 32561  # the README's marginals
    beta = math.sqrt(2 * (math.log(2) - math.log(1e-9)) / 32561)
    p_lower = 10771 / 32561 - beta / 2
    # eq. uncertainlaplace solved for b by hand
    b = 2 / math.log((1 - p_lower) / (math.exp(-0.693) - p_lower))
    assert doc["b"] == pytest.approx(b, rel=1e-10) and doc["b"] < doc["ldp_scale"]
    out = run(["calibrate", "gaussian", "--reference", str(adult_dir / "adult.data"),
               "--names", "adult", "--column", "income", "--positive", ">50K",
               "--sigma", "1.5", "--delta", "1e-6", "--points", "3"])
    assert "'>50K' -> +1" in out and "m = 32561" in out


def test_both_commands_state_the_released_mechanisms_typed_guarantee(csv_file):
    from pmlkit.guarantee import PMLGuarantee

    base = ["--reference", str(csv_file), "--column", "sex", "--positive", "Male"]
    lap = ["calibrate", "laplace", *base, "--epsilon", "1.0", "--delta", "1e-6"]
    lib = calibrate_laplace(["Male"] * 700 + ["Female"] * 300, 1.0, 1e-6, positive="Male")
    assert f"  mechanism: {lib.mechanism.guarantee}" in run(lap).splitlines()
    doc = json.loads(run([*lap, "--json"]))
    assert PMLGuarantee.from_dict(doc["guarantee"]) == lib.mechanism.guarantee
    gau = ["calibrate", "gaussian", *base, "--sigma", "2", "--delta", "1e-6",
           "--eps-max", "1.0", "--points", "2"]
    doc = json.loads(run([*gau, "--json"]))
    g = PMLGuarantee.from_dict(doc["guarantee"])
    assert g.eps == 1.0 and g.output_delta == pytest.approx(doc["curves"][1]["delta1"],
                                                            abs=1e-12)


def test_calibrate_keeps_two_spellings_of_a_number_apart(tmp_path):
    # '007' and '7' are two texts (as design reads them), not one label 7
    path = tmp_path / "bin.csv"
    path.write_text("flag\n" + "007\n" * 100 + "7\n" * 100 + "0\n" * 100)
    res = CliRunner().invoke(cli, ["calibrate", "laplace", "--reference", str(path),
                                            "--column", "flag", "--positive", "7",
                                            "--eps", "1", "--delta", "0.05"])
    assert res.exit_code != 0 and "p_hat = (0.333333, 0.666667)" not in res.output, res.output
