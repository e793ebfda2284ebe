"""``pmlkit joint assess`` / ``pmlkit joint design``: the command line of a joint release."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import pmlkit
from pmlkit.cli.main import main
from pmlkit.joint import JointGuarantee

RR = [[0.8, 0.2], [0.2, 0.8]]


def two_bit_csv(tmp: Path, m: int = 3000) -> Path:
    """The pinned two-bit example: (0,0), (0,1), (1,0) equally often, never (1,1)."""
    rows = ["a,b"] + ["x,u", "x,v", "y,u"] * (m // 3)
    path = tmp / "ref.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def save(tmp: Path, name: str, labels: tuple[str, str]) -> Path:
    path = tmp / f"{name}.json"
    pmlkit.Mechanism(RR, labels, labels).save(path)
    return path


def test_joint_assess_reports_the_joint_guarantee(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ref = two_bit_csv(tmp_path)
    ma, mb = save(tmp_path, "a", ("x", "y")), save(tmp_path, "b", ("u", "v"))
    code = main(["joint", "assess", "--reference", str(ref), "--mechanism", f"a={ma}",
                 "--mechanism", f"b={mb}", "--delta", "0.05", "--confidence", "box-cp",
                 "--bound", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    g = JointGuarantee.from_dict(doc["joint_guarantee"])
    true = math.log(16 / 3)  # the pair's PML under the exact proportions, by hand
    assert true <= g.certified_eps <= true + 0.1
    assert g.certified_eps > g.sum_of_column_eps
    b = JointGuarantee.from_dict(doc["chain_rule_bound"])
    assert b.certified_eps >= g.certified_eps - 1e-9 and b.kind == "chain-rule bound"


def test_joint_design_writes_a_certified_plan(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    a = rng.choice(["x", "y", "z"], 2000)
    b = np.where(rng.random(2000) < 0.7, "u", "v")
    ref = tmp_path / "ref.csv"
    ref.write_text("a,b\n" + "\n".join(f"{p},{q}" for p, q in zip(a, b, strict=True)) + "\n")
    out = tmp_path / "plan"
    args = ["joint", "design", "--reference", str(ref), "--columns", "a,b", "--epsilon",
            "1.2", "--delta", "0.05", "--mode", "per-column", "--out-dir", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    plan = json.loads((out / "release-plan.json").read_text())
    assert plan["joint_guarantee"]["guarantee"]["certified_eps"] <= 1.2 + 1e-9
    ma = pmlkit.Mechanism.load(out / plan["mechanism_files"]["a"])
    mb = pmlkit.Mechanism.load(out / plan["mechanism_files"]["b"])
    # recompute the joint guarantee from the written files: the same certified value
    g = pmlkit.joint_guarantee([ma, mb], {"a": a, "b": b}, 0.05)
    assert g.certified_eps == pytest.approx(plan["joint_guarantee"]["guarantee"]["certified_eps"],
                                            rel=1e-12)
    # a second run refuses to overwrite the plan
    assert main(args) == 1
    assert "already exists" in capsys.readouterr().err


@pytest.mark.parametrize("args, match", [
    (["--mechanism", "a"], r"--mechanism must be COLUMN=FILE, got 'a'"),
    (["--mechanism", "a=x.json"], r"at least 2 columns"),
])
def test_joint_assess_refuses_bad_mechanism_flags(tmp_path: Path, args: list[str],
                                                  match: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import re

    ref = two_bit_csv(tmp_path, 3)
    code = main(["joint", "assess", "--reference", str(ref), "--delta", "0.1", *args])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert re.search(match, err), err


def test_joint_repeat_is_the_leakage_of_the_sequence(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    m = save(tmp_path, "a", ("x", "y"))
    code = main(["joint", "repeat", "--mechanism", str(m), "--times", "3", "--prior",
                 "0.25,0.75", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    # by hand: three RR(4/5) releases; the type "three y" of x has prob 0.2^3, of y 0.8^3
    best = max(math.log(max(0.8 ** (3 - j) * 0.2 ** j, 0.2 ** (3 - j) * 0.8 ** j)
                        / (0.25 * 0.8 ** (3 - j) * 0.2 ** j + 0.75 * 0.2 ** (3 - j) * 0.8 ** j))
               for j in range(4))
    assert doc["leakage"] == pytest.approx(best, rel=1e-12)
    assert doc["releases"] == 3
