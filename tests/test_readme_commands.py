"""The README's command-line section runs as written, in order, in one folder.

Every ``pmlkit ...`` command of the fenced ``bash`` blocks between "## Command line" and
the next top-level heading is run in a temporary folder holding small synthetic files in
the shape the README assumes (headerless Adult-style ``adult.data`` / ``adult.test``, a
``ref.csv`` with ``country`` and ``age`` columns, ``people.csv``, ``countries.txt``,
``data/*.csv.gz``), each
command after the ones before it, so a command that needs an earlier command's file, or
that writes a file an earlier one wrote, fails here as it would for a reader. Only
``pmlkit audit`` and ``pmlkit reproduce`` are not run (minutes of simulation; they have
their own tests), and the test checks they are the only ones left out.
"""

from __future__ import annotations

import gzip
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from pmlkit.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)
#: Long-running commands the test does not run (by subcommand).
NOT_RUN = {"audit", "reproduce"}

ADULT = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
         "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
         "hours-per-week", "native-country", "income"]


def readme_commands() -> list[list[str]]:
    """The ``pmlkit`` commands of the README's command-line section, in order (line
    continuations joined, comments dropped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Command line")
    end = text.index("\n## ", start + 1)
    commands = []
    for m in FENCE.finditer(text[start:end]):
        if m.group(1) != "bash":
            continue
        for line in m.group(2).replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                commands.append(argv)
    return commands


def _adult_frame(rng: np.random.Generator, n: int, test: bool) -> list[str]:
    sex = rng.choice(["Male", "Female"], n, p=[0.67, 0.33])
    race = rng.choice(["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo",
                       "Other"], n, p=[0.85, 0.09, 0.03, 0.02, 0.01])
    income = rng.choice(["<=50K", ">50K"], n, p=[0.76, 0.24])
    if test:  # adult.test writes the income with a full stop
        income = np.char.add(income, ".")
    rows = []
    for i in range(n):
        cells = {"age": str(20 + i % 50), "workclass": "Private", "fnlwgt": str(1000 + i),
                 "education": "Bachelors", "education-num": "13",
                 "marital-status": "Never-married", "occupation": "Sales",
                 "relationship": "Not-in-family", "race": race[i], "sex": sex[i],
                 "capital-gain": "0", "capital-loss": "0", "hours-per-week": "40",
                 "native-country": "United-States", "income": income[i]}
        rows.append(", ".join(cells[c] for c in ADULT))
    return rows


@pytest.fixture
def readme_folder(tmp_path, monkeypatch):
    """The files the README's commands read, small and synthetic."""
    rng = np.random.default_rng(35)
    (tmp_path / "adult.data").write_text("\n".join(_adult_frame(rng, 3000, False)) + "\n")
    (tmp_path / "adult.test").write_text("|1x3 Cross validator\n"
                                         + "\n".join(_adult_frame(rng, 1000, True)) + "\n")
    countries = ["United-States", "Mexico", "Philippines", "Germany", "Other"]
    (tmp_path / "countries.txt").write_text("\n".join(countries) + "\n")
    ref = rng.choice([*countries[:4], ""], 2000, p=[0.8, 0.1, 0.05, 0.03, 0.02])
    ages = rng.integers(15, 95, 2000)  # a few outside the README's 18:90 grid
    (tmp_path / "ref.csv").write_text(
        "country,age\n" + "".join(f"{c},{a}\n" for c, a in zip(ref, ages, strict=True)))
    people = rng.integers(15, 95, 1500)
    (tmp_path / "people.csv").write_text(
        "id,age\n" + "".join(f"{i},{a}\n" for i, a in enumerate(people)))
    (tmp_path / "data").mkdir()
    for k in range(2):  # records to release: a missing value and an unknown label too
        vals = [*rng.choice(countries[:4], 500).tolist(), "", "Atlantis"]
        with gzip.open(tmp_path / "data" / f"part{k}.csv.gz", "wt") as fh:
            fh.write("id,country\n" + "".join(f"{i},{v}\n" for i, v in enumerate(vals)))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_section_has_the_commands_it_should():
    subs = [argv[1] for argv in readme_commands()]
    assert all(argv[0] == "pmlkit" for argv in readme_commands())
    for sub in ("design", "assess", "privatize", "estimate", "calibrate", "joint"):
        assert sub in subs, sub
    assert NOT_RUN <= set(subs)


@pytest.mark.filterwarnings("ignore::pmlkit.errors.PMLWarning")
@pytest.mark.usefixtures("readme_folder")
def test_readme_command_line_section_runs_in_order(capsys):
    ran = []
    for argv in readme_commands():
        if argv[1] in NOT_RUN:
            continue
        code = main(argv[1:])
        _out, err = capsys.readouterr()
        assert code == 0, (shlex.join(argv), err[-2000:])
        ran.append(argv[1])
    assert len(ran) >= 12
    assert Path("private.parquet").is_file() and Path("plan/release-plan.json").is_file()
