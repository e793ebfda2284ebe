"""The command line never shows a traceback for a user error.

* real processes (``python -m pmlkit.cli.main``): exit status and stderr as a user sees them;
* data-shaped user errors (empty file, header only, nulls, an existing output file);
* fuzzing: random argument lists for ``design``, ``assess``, ``privatize`` and ``calibrate``
  drawn from a vocabulary of good and bad values: the exit status is 0, 1 or 2, never the
  internal-error status 3, and stderr never holds a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit.cli.main import main

W = [[0.8, 0.2], [0.3, 0.7]]
CSV = "sex,income\nMale,>50K\nFemale,<=50K\nMale,<=50K\nFemale,>50K\nMale,>50K\n"


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("pmlkit: error: ")]
    assert len(errors) == 1, err
    return errors[0]


def _files(tmp: Path) -> dict[str, Path]:
    (tmp / "data.csv").write_text(CSV, encoding="utf-8")
    (tmp / "empty.csv").write_text("", encoding="utf-8")
    (tmp / "header.csv").write_text("sex,income\n", encoding="utf-8")
    (tmp / "nulls.csv").write_text("sex,income\nMale,>50K\n,<=50K\nFemale,>50K\n",
                                   encoding="utf-8")
    (tmp / "bad.parquet").write_bytes(b"PAR1 not really parquet")
    (tmp / "bad.json").write_text("{", encoding="utf-8")
    ball = pmlkit.L1Ball([0.4, 0.6], 0.1)  # certified: uncertified files need a flag
    mech = pmlkit.Mechanism(W, ("Female", "Male"), ("Female", "Male"),
                            uncertainty_set=ball.to_dict(),
                            certified_eps=pmlkit.leakage_capacity(W, ball))
    mech.save(tmp / "mech.json")
    doc = mech.to_dict()
    doc["matrix"] = [[0.9, 0.1], [0.3, 0.7]]
    (tmp / "tampered.json").write_text(json.dumps(doc), encoding="utf-8")
    return {p.name: p for p in tmp.iterdir()}


def _expand(args: list[str], tmp: Path, files: dict[str, Path]) -> list[str]:
    """Replace ``{name}`` by the path of a prepared file and ``{tmp}`` by the folder."""
    out = []
    for a in args:
        a = a.replace("{tmp}", str(tmp))
        for name, path in files.items():
            a = a.replace("{" + name + "}", str(path))
        out.append(a)
    return out


def test_real_process_reports_one_line_and_exit_1(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PMLKIT_DEBUG"}
    proc = subprocess.run(
        [sys.executable, "-m", "pmlkit.cli.main", "assess", "--mechanism",
         str(tmp_path / "missing.json"), "--prior", "0.4,0.6"],
        capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    line = _one_error_line(proc.stderr)
    assert "missing.json" in line


def test_real_process_usage_error_exit_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "pmlkit.cli.main", "design", "--epsilon",
                           "abc"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    _one_error_line(proc.stderr)


@pytest.mark.parametrize("args,pattern", [
    (["design", "--reference", "{empty.csv}", "--column", "sex", "--epsilon", "1",
      "--delta", "0.1", "--output", "{tmp}/m.json"], r"empty|sex|column|no"),
    (["design", "--reference", "{header.csv}", "--column", "sex", "--epsilon", "1",
      "--delta", "0.1", "--output", "{tmp}/m.json"], r"empty|no sample|m >= 1|sex"),
    (["design", "--reference", "{nulls.csv}", "--column", "sex", "--epsilon", "1",
      "--delta", "0.1", "--output", "{tmp}/m.json"], r"null|missing"),
    (["design", "--reference", "{bad.parquet}", "--column", "sex", "--epsilon", "1",
      "--delta", "0.1", "--output", "{tmp}/m.json"], r"bad\.parquet"),
    (["design", "--reference", "{data.csv}", "--column", "sex", "--epsilon", "1",
      "--delta", "0.1", "--output", "{mech.json}"], r"exist|overwrite"),
    (["assess", "--mechanism", "{bad.json}", "--prior", "0.4,0.6"], r"not valid JSON"),
    (["assess", "--mechanism", "{mech.json}", "--prior", "0.4,nan"], r"nan|NaN"),
    (["assess", "--mechanism", "{mech.json}", "--prior", "0.2,0.3,0.5"], r"3.*2|2.*3"),
    (["assess", "--mechanism", "{mech.json}", "--prior", "a,b"], r"prior"),
    (["privatize", "--mechanism", "{tampered.json}", "--input", "{data.csv}", "--column",
      "sex", "--output", "{tmp}/o.csv"], r"sha256"),
    (["privatize", "--mechanism", "{mech.json}", "--input", "{nulls.csv}", "--column",
      "sex", "--output", "{tmp}/o.csv"], r"null|missing"),
    (["privatize", "--mechanism", "{mech.json}", "--input", "{tmp}/nothing*.csv",
      "--column", "sex", "--output", "{tmp}/o.csv"], r"nothing|no file|match"),
    (["calibrate", "laplace", "--reference", "{data.csv}", "--column", "sex", "--positive",
      "Other", "--epsilon", "1", "--delta", "0.1"], r"Other"),
    (["calibrate", "laplace", "--reference", "{data.csv}", "--column", "sex", "--positive",
      "Male", "--epsilon", "inf", "--delta", "0.1"], r"eps|inf"),
    (["calibrate", "gaussian", "--reference", "{data.csv}", "--column", "sex", "--positive",
      "Male", "--sigma", "1.5", "--delta", "1.0"], r"delta"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_user_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  args: list[str], pattern: str) -> None:
    import re

    files = _files(tmp_path)
    argv = _expand(args, tmp_path, files)
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (1, 2), err
    line = _one_error_line(err)
    assert re.search(pattern, line, re.IGNORECASE), line


# --------------------------------------------------------------------------------------
# fuzzing the argument lists
# --------------------------------------------------------------------------------------

CLI_EXAMPLES = {"n": 0}

VALUES = ["{data.csv}", "{empty.csv}", "{header.csv}", "{nulls.csv}", "{bad.parquet}",
          "{bad.json}", "{mech.json}", "{tampered.json}", "{tmp}/missing.csv", "{tmp}/out.csv",
          "sex", "income", "race", "Male", "Female", "0", "1", "-1", "0.1", "1.5", "nan",
          "inf", "-inf", "1e308", "abc", "", "0.4,0.6", "0.5,0.5,0.5", "l1", "box-cp"]
OPTIONS = {
    "design": ["--reference", "--column", "--epsilon", "--delta", "--output", "--confidence",
               "--utility", "--overwrite", "--json", "--names", "--skip-rows", "--na"],
    "assess": ["--mechanism", "--prior", "--reference", "--column", "--delta", "--confidence",
               "--target", "--json"],
    "privatize": ["--mechanism", "--input", "--column", "--into", "--output", "--seed",
                  "--overwrite", "--batch-rows", "--json"],
    "calibrate laplace": ["--reference", "--column", "--positive", "--epsilon", "--delta",
                          "--confidence", "--json"],
    "calibrate gaussian": ["--reference", "--column", "--positive", "--sigma", "--delta",
                           "--confidence", "--json"],
}
FLAGS = {"--overwrite", "--json"}


@st.composite
def argv_lists(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(OPTIONS)))
    argv = command.split()
    for opt in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=8)):
        argv.append(opt)
        if opt not in FLAGS:
            argv.append(draw(st.sampled_from(VALUES)))
    return argv


@settings(max_examples=int(os.environ.get("PMLKIT_FUZZ_EXAMPLES", "0")) or 150, deadline=None,
          derandomize="PMLKIT_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(args=argv_lists())
def test_fuzz_cli_never_crashes(args: list[str]) -> None:
    CLI_EXAMPLES["n"] += 1
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        files = _files(tmp)
        argv = _expand(args, tmp, files)
        import contextlib
        import io

        err = io.StringIO()
        out = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(argv)
    text = err.getvalue()
    assert code in (0, 1, 2), f"exit {code} for {argv}: {text}"
    assert "Traceback" not in text, text
    if code:
        _one_error_line(text)


@pytest.fixture(scope="module", autouse=True)
def _report_cli_examples(request: pytest.FixtureRequest) -> object:
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capman is not None and CLI_EXAMPLES["n"]:
        with capman.global_and_fixture_disabled():
            reporter.write_line(f"\nCLI fuzzing examples run: {CLI_EXAMPLES['n']}")
