"""The command outputs the README shows are the outputs the commands print.

A ```` ```text ```` block that follows a ```` ```bash ```` block in README.md is the output
of those commands on the UCI Adult files: the commands run here (in a scratch folder that
links to the Adult files), and every line shown, except ``...``, must be a line of what
they print (stdout and stderr), numbers included.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from pmlkit.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\n", re.S | re.M)


def _pairs() -> list[tuple[int, list[list[str]], list[str]]]:
    """(line, commands of the bash block, lines of the text block right after it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = list(FENCE.finditer(text))
    out = []
    for a, b in itertools.pairwise(blocks):
        if (a.group(1), b.group(1)) != ("bash", "text") or text[a.end():b.start()].strip():
            continue
        commands = []
        for raw in re.sub(r"\\\n\s*", " ", a.group(2)).splitlines():
            line = raw.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                words = shlex.split(line)
                assert words[0] == "pmlkit", line
                commands.append(words[1:])
        shown = [ln.strip() for ln in b.group(2).splitlines()
                 if ln.strip() and ln.strip() != "..."]
        out.append((text[:a.start()].count("\n") + 1, commands, shown))
    return out


def test_the_readme_shows_command_outputs() -> None:
    assert len(_pairs()) >= 2  # the joint design / assess and the planned release


@pytest.mark.parametrize(("line", "commands", "shown"), _pairs(),
                         ids=[f"README.md:{p[0]}" for p in _pairs()])
def test_shown_output_is_printed(line: int, commands: list[list[str]], shown: list[str],
                                 adult_dir: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("adult.data", "adult.test"):
        os.symlink(adult_dir / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    printed: list[str] = []
    for args in commands:
        code = cli_main(args)
        out = capsys.readouterr()
        assert code == 0, (args, out.err)
        printed += [ln.strip() for ln in (out.out + out.err).splitlines()]
    missing = [ln for ln in shown if ln not in printed]
    assert not missing, f"README.md:{line}: shown but not printed: {missing}\n" + \
        "\n".join(printed)


# --------------------------------------------------------------------------------------
# lists and numbers the README states, against their single source
# --------------------------------------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_confidence_choices_shown_are_the_methods() -> None:
    from pmlkit.confidence import METHODS

    shown = re.search(r"`--confidence ([\w|-]+(?:\s*\n?[\w|-]+)*)`", README)
    assert shown, "the README lists the --confidence choices"
    assert re.sub(r"\s+", "", shown.group(1)).split("|") == list(METHODS)


def test_figures_listed_are_the_figures() -> None:
    from pmlkit.experiments import FIGURES

    line = re.search(r"Figures: (.*?)\. The functions", README, re.S)
    assert line
    assert re.findall(r"`(\w+)`", line.group(1)) == list(FIGURES)


def test_extras_listed_are_the_packaged_extras() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    section = README.split("## Using it from Python", 1)[1].split("```", 1)[0]
    shown = set(re.findall(r"`pmlkit\[(\w+)\]`", section))
    assert shown == set(extras) - {"docs", "test", "dev"}


def test_mathematics_table_names_real_modules() -> None:
    import importlib

    table = README.split("## Where the mathematics lives", 1)[1].split("\n\n", 2)[1]
    modules = re.findall(r"`(pmlkit(?:\.\w+)*)`", table)
    assert len(modules) >= 13
    for name in modules:
        importlib.import_module(name)  # a renamed module fails here


def test_fuzz_default_shown_is_the_makefile_default() -> None:
    shown = re.search(r"property test\s+\(default (\d+)\)", README)
    make = re.search(r"^FUZZ_EXAMPLES \?= (\d+)$", (ROOT / "Makefile").read_text(), re.M)
    assert shown and make and shown.group(1) == make.group(1)


# --------------------------------------------------------------------------------------
# the other pages' code blocks (docs/guide.md and the README run in test_readme.py)
# --------------------------------------------------------------------------------------

def _page_blocks(page: str, kind: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return [m.group(2) for m in FENCE.finditer(text) if m.group(1) == kind]


def test_additive_release_block_runs_and_its_comments_hold(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    import math

    (code,) = _page_blocks("additive_release.md", "python")
    monkeypatch.chdir(tmp_path)
    ns: dict[str, Any] = {"__name__": "additive_release"}
    exec(compile(code, "docs/additive_release.md", "exec"), ns)
    from pmlkit.additive import LaplaceMechanism

    cal, mech, g, bit = ns["cal"], ns["mech"], ns["g"], ns["bit"]
    # "eps 1 over the l1 set, delta 1e-6, method "l1", m 1000, certified_eps <= 1"
    gu = mech.guarantee
    assert (gu.eps, gu.delta, gu.method, gu.m) == (1.0, 1e-6, "l1", 1000)
    assert gu.certified_eps <= 1.0 + 1e-12
    assert mech.b == cal.b  # "of scale cal.b"
    assert len(ns["y"]) == 3
    # "every prior: eps = 2 / b_released": the log density ratio of Laplace noise around
    # -1 and +1 is at most |(-1) - 1| / b
    every = LaplaceMechanism.from_scale(2.0)
    assert every.guarantee.certified_eps == pytest.approx(2 / every.released_b, rel=1e-12)
    assert every.released_b >= 2.0
    assert bit.matrix.shape == (2, 2) and bit.certified
    # "P(an output leaks more than eps)": a probability
    assert 0.0 <= g.guarantee.output_delta <= 1.0
    assert math.isfinite(mech.leakage_under([0.3, 0.7]))


def test_estimation_blocks_run_with_the_names_they_assume(tmp_path: Path) -> None:
    """The page's blocks are fragments: they run on a released column, its mechanism, a
    frame with ``sex`` and ``race`` and a sample, and the intervals are 95% by default."""
    import numpy as np
    import pandas as pd

    import pmlkit

    mech = pmlkit.design_from_samples(["Male"] * 600 + ["Female"] * 400, 1.0,
                                      1e-6).mechanism
    true = np.array(["Male"] * 610 + ["Female"] * 390)
    released = pmlkit.privatize(mech, true, rng=0)
    df = pd.DataFrame({"sex": released, "race": ["a", "b"] * 500})
    samples = ["x"] * 50 + ["y"] * 30 + ["z"] * 20
    ns: dict[str, Any] = {"__name__": "estimation", "released": released, "mech": mech,
                             "df": df, "samples": samples, "eps": 1.0, "delta": 1e-6}
    blocks = _page_blocks("estimation.md", "python")
    assert len(blocks) == 2
    for code in blocks:
        exec(compile(code, "docs/estimation.md", "exec"), ns)
    res = pmlkit.estimate_distribution(released, mech)
    assert res.confidence == 0.95  # "95% by default"
    assert np.all(res.lower <= res.estimate) and np.all(res.estimate <= res.upper)


def test_estimation_shell_commands_name_real_options() -> None:
    import click

    from pmlkit.cli.main import cli

    (code,) = _page_blocks("estimation.md", "bash")
    seen = 0
    for raw in re.sub(r"\\\n\s*", " ", code).splitlines():
        words = shlex.split(raw.split(" #", 1)[0])
        if not words:
            continue
        assert words[0] == "pmlkit"
        cmd = cli.get_command(click.Context(cli), words[1])
        assert cmd is not None, words
        options = {o for p in cmd.params if isinstance(p, click.Option) and not p.hidden
                   for o in (*p.opts, *p.secondary_opts)}
        assert {w for w in words[2:] if w.startswith("--")} <= options, words
        seen += 1
    assert seen == 6
