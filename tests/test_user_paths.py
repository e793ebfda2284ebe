"""A path starting with ``~`` names the user's home folder everywhere pmlkit takes one.

pyarrow expands ``~`` when it opens a file; pmlkit's own checks (existence, the output
folder, the release history beside an input) used the path as written. With a folder
literally named ``~`` in the working directory, a release checked one file and read
another. Each test puts such a decoy folder in the working directory and a different
file in a temporary home folder, so a path read or written unexpanded shows.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import pmlkit
from pmlkit.io import AtomicWriter, expand_inputs, list_columns, read_table
from pmlkit.privatization.files import previous_privatization, privatize_file
from pmlkit.release import load_spec

SWAP = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("F", "M"), ("F", "M"))


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with ``people.csv``, and a working directory holding a decoy
    ``./~`` folder with a different ``people.csv`` (other columns, other rows)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "people.csv").write_text("id,sex\n1,F\n2,M\n3,F\n")
    work = tmp_path / "work"
    (work / "~").mkdir(parents=True)
    (work / "~" / "people.csv").write_text("key,sex,other\n9,M,x\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    assert os.path.expanduser("~") == str(home)
    return home


def test_input_and_output_paths_are_expanded_like_pyarrow(home: Path) -> None:
    report = privatize_file(SWAP, "~/people.csv", "~/out.csv", "sex")
    assert report.rows == 3
    assert (home / "out.csv").read_text() == "id,sex\n1,M\n2,F\n3,M\n"
    assert (home / "out.csv.pmlkit.json").is_file()
    assert not (Path("~") / "out.csv").exists()
    # the release history is looked up beside the expanded output as well
    record = previous_privatization("~/out.csv")
    assert record is not None and list(record["privatized"]) == ["sex"]


def test_io_functions_expand_the_home_folder(home: Path) -> None:
    assert expand_inputs("~/people.csv") == [home / "people.csv"]
    assert expand_inputs("~/*.csv") == [home / "people.csv"]
    assert list_columns("~/people.csv") == ["id", "sex"]
    assert read_table("~/people.csv").num_rows == 3
    table = read_table(home / "people.csv")
    with AtomicWriter("~/copy.parquet", table.schema) as writer:
        writer.write(table)
    assert read_table(home / "copy.parquet").equals(table)
    assert not (Path("~") / "copy.parquet").exists()


def test_mechanism_files_expand_the_home_folder(home: Path) -> None:
    saved = SWAP.save("~/swap.json")
    assert saved == home / "swap.json" and saved.is_file()
    assert not (Path("~") / "swap.json").exists()
    loaded = pmlkit.Mechanism.load("~/swap.json", allow_uncertified=True)
    assert np.array_equal(loaded.matrix, SWAP.matrix)
    assert loaded.input_labels == SWAP.input_labels


def test_release_spec_paths_are_expanded_before_they_are_joined(home: Path) -> None:
    spec = Path("release.toml")
    spec.write_text('reference = "~/people.csv"\ninput = "~/people.csv"\n'
                    'output = "~/released.csv"\nepsilon = 2.0\ndelta = 0.05\n'
                    '[columns.sex]\ntype = "categorical"\n')
    loaded = load_spec(spec)
    assert loaded.reference == home / "people.csv"
    assert loaded.input == home / "people.csv"
    assert loaded.output == home / "released.csv"


def test_command_line_options_expand_the_home_folder(home: Path) -> None:
    """``--opt=~/file`` reaches pmlkit unexpanded (the shell expands ``~`` only at the
    start of a word); the command reads and writes in the home folder all the same."""
    from click.testing import CliRunner

    from pmlkit.cli.main import cli

    SWAP.save(home / "swap.json")
    result = CliRunner().invoke(cli, [
        "privatize", "--mechanism=~/swap.json", "--allow-uncertified",
        "--input=~/people.csv", "--column=sex", "--output=~/out.csv"])
    assert result.exit_code == 0, result.output
    assert (home / "out.csv").read_text() == "id,sex\n1,M\n2,F\n3,M\n"
    assert not (Path("~") / "out.csv").exists()
    result = CliRunner().invoke(cli, [
        "design", "--reference=~/people.csv", "--column=sex", "--eps=2",
        "--delta=0.05", "--out=~/designed.json"])
    assert result.exit_code == 0, result.output
    assert (home / "designed.json").is_file()
    assert not (Path("~") / "designed.json").exists()
