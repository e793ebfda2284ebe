"""One command-line vocabulary: ``--output`` and ``--confidence`` everywhere, ``--eps`` and
``--epsilon`` interchangeable; the former spellings ``--out`` and ``--set`` still work, are
hidden from ``--help`` and print a one-line deprecation note."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pmlkit.cli.main import main

REF_ROWS = ["sex"] + ["Male"] * 60 + ["Female"] * 40


@pytest.fixture
def ref_csv(tmp_path):
    path = tmp_path / "ref.csv"
    path.write_text("\n".join(REF_ROWS) + "\n")
    return path


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _design(ref, *flags):
    return ("design", "--reference", ref, "--column", "sex", "--delta", "0.05", *flags)


def test_new_and_old_spellings_write_the_same_mechanism(tmp_path, capsys, ref_csv):
    new = tmp_path / "new.json"
    old = tmp_path / "old.json"
    code, _, err = _run(capsys, *_design(ref_csv, "--epsilon", "1", "--confidence", "box-cp",
                                         "--output", new))
    assert code == 0 and "deprecated" not in err
    code, _, err = _run(capsys, *_design(ref_csv, "--eps", "1", "--set", "box-cp",
                                         "--out", old))
    assert code == 0
    notes = [line for line in err.splitlines() if "deprecated" in line]
    assert notes == ["pmlkit: note: --set is deprecated; use --confidence",
                     "pmlkit: note: --out is deprecated; use --output"]
    a, b = json.loads(new.read_text()), json.loads(old.read_text())
    assert a["matrix"] == b["matrix"] and a["guarantee"]["set"] == b["guarantee"]["set"]
    assert a["guarantee"]["method"] == b["guarantee"]["method"] == "box-cp"


def test_both_spellings_at_once_is_a_usage_error(tmp_path, capsys, ref_csv):
    code, _, err = _run(capsys, *_design(ref_csv, "--epsilon", "1", "--output",
                                         tmp_path / "a.json", "--out", tmp_path / "b.json"))
    assert code == 2
    assert err.startswith("pmlkit: error:") and "--out" in err and "--output" in err
    assert len(err.strip().splitlines()) == 1


def test_a_required_output_is_still_required(capsys, ref_csv):
    code, _, err = _run(capsys, *_design(ref_csv, "--epsilon", "1"))
    assert code == 2 and "--output" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["design", "calibrate laplace", "assess", "reproduce",
                                     "joint assess", "joint design"])
def test_help_shows_only_the_new_spellings(command):
    from pmlkit.cli.main import cli

    res = CliRunner().invoke(cli, [*command.split(), "--help"])
    assert res.exit_code == 0, res.output
    assert "--out " not in res.output and "--out," not in res.output
    assert "--set" not in res.output


def test_demo_accepts_epsilon_as_well_as_eps():
    from pmlkit.cli.main import cli

    res = CliRunner().invoke(cli, ["demo", "--help"])
    assert "--eps" in res.output and "--epsilon" in res.output
