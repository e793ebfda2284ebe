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
    # "./~/..." is the folder named "~" beside the spec, for every reader
    spec.write_text('reference = "./~/people.csv"\ninput = "~/people.csv"\n'
                    'output = "~/released.csv"\nreport = "./~/people.csv"\n'
                    'epsilon = 2.0\ndelta = 0.05\n[columns.sex]\ntype = "categorical"\n')
    loaded = load_spec("./release.toml")
    assert loaded.reference == loaded.report == Path.cwd() / "~" / "people.csv"


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
        "design", "--reference=~/people.csv", "--column=sex", "--epsilon=2",
        "--delta=0.05", "--output=~/designed.json"])
    assert result.exit_code == 0, result.output
    assert (home / "designed.json").is_file()
    assert not (Path("~") / "designed.json").exists()


# --- a folder literally named "~", and home folders with odd names -----------------------
# pathlib drops a leading "./", so "./~/x" becomes Path("~/x"): any later reader that
# expands "~" (pyarrow does) would read or write $HOME/x. user_path makes such a path
# absolute, once, where it enters.


def test_user_path_is_idempotent_and_keeps_a_literal_tilde_folder(home: Path) -> None:
    from pmlkit._validation import user_path

    literal = Path.cwd() / "~" / "people.csv"
    assert user_path("./~/people.csv") == literal
    assert user_path(user_path("./~/people.csv")) == literal
    assert user_path(Path("./~/people.csv")) == home / "people.csv"  # (the Path says ~/)
    assert user_path("~") == home and user_path(user_path("~/x")) == home / "x"


@pytest.mark.parametrize(("value", "message"), [
    (None, r"output must be a path \(str or os\.PathLike\), got None"),
    (5, r"output must be a path \(str or os\.PathLike\), got 5"),
    (b"out.csv", r"output must be a path \(str or os\.PathLike\), got b'out\.csv'"),
    ("", r"output must name a file or folder, got an empty path"),
])
def test_a_bad_output_path_is_refused_by_name(home: Path, value: object, message: str) -> None:
    from pmlkit.errors import ValidationError

    with pytest.raises(ValidationError, match=message):
        privatize_file(SWAP, "~/people.csv", value, "sex")
    assert sorted(p.name for p in home.iterdir()) == ["people.csv"]


def test_a_bad_input_path_is_refused_by_name(home: Path) -> None:
    from pmlkit.errors import ValidationError

    with pytest.raises(ValidationError, match=r"input must be a path, a glob pattern or a "
                                              r"list of them, got None"):
        privatize_file(SWAP, None, "~/out.csv", "sex")
    with pytest.raises(ValidationError, match=r"input must be a path .*got 5"):
        privatize_file(SWAP, [5], "~/out.csv", "sex")


def test_release_into_a_literal_tilde_folder_reads_and_writes_there(home: Path) -> None:
    report = privatize_file(SWAP, "./~/people.csv", "./~/out.csv", "sex",
                            keep_raw=True)
    assert report.rows == 1  # the decoy's one row, not the home file's three
    assert (Path("~") / "out.csv").read_text() == "key,sex,other\n9,F,x\n"
    assert not (home / "out.csv").exists()


def test_design_output_in_a_literal_tilde_folder_never_touches_home(home: Path) -> None:
    """``pmlkit design --output ./~/notes.json`` wrote $HOME/notes.json (an unrelated
    file, or the --reference itself) after checking ./~/notes.json."""
    from click.testing import CliRunner

    from pmlkit.cli.main import cli

    (home / "notes.json").write_text('{"precious": true}\n')
    before = (home / "people.csv").read_text()
    for target in ("./~/notes.json", "./~/people.csv"):
        result = CliRunner().invoke(cli, [
            "design", f"--reference={home / 'people.csv'}", "--column=sex", "--epsilon=2",
            "--delta=0.05", f"--output={target}", "--overwrite"])
        assert (home / "notes.json").read_text() == '{"precious": true}\n', target
        assert (home / "people.csv").read_text() == before, target
    # ./~/people.csv is the decoy input, not a mechanism: --overwrite does not replace it
    assert result.exit_code != 0
    assert (Path("~") / "notes.json").is_file()


def test_joint_plan_saved_in_a_literal_tilde_folder_stays_together(home: Path) -> None:
    from pmlkit.joint import ReleasePlan

    plan_dir = home / "made"
    plan = _small_plan(home)
    plan.save(plan_dir)
    (home / "plans").mkdir()
    (home / "plans" / "sex.json").write_text("unrelated\n")
    saved = ReleasePlan.load(plan_dir / "release-plan.json").save("./~/plans")
    assert saved.parent == Path.cwd() / "~" / "plans"
    assert sorted(p.name for p in saved.parent.iterdir()) == sorted(
        p.name for p in plan_dir.iterdir())
    assert (home / "plans" / "sex.json").read_text() == "unrelated\n"


def _small_plan(home: Path):
    import pandas as pd

    from pmlkit.joint import ReleasePlan, design_joint

    ref = pd.DataFrame({"sex": list("FMFFMF" * 10), "rich": list("yynnny" * 10)})
    design = design_joint(ref, 2.0, 0.05, columns=["sex", "rich"], mode="per-column")
    return ReleasePlan.from_design(design)


def test_a_home_folder_with_glob_characters_is_no_pattern(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """With HOME=.../h[1], "~/people.csv" read .../h1/people.csv (the expanded text was
    taken as a glob), and input == output went unnoticed."""
    home, other = tmp_path / "h[1]", tmp_path / "h1"
    home.mkdir()
    other.mkdir()
    (home / "people.csv").write_text("id,sex\n1,F\n")
    (other / "people.csv").write_text("id,sex\n1,M\n2,M\n")
    monkeypatch.setenv("HOME", str(home))
    assert expand_inputs("~/people.csv") == [home / "people.csv"]
    assert expand_inputs("~/*.csv") == [home / "people.csv"]
    from pmlkit.errors import DataError

    with pytest.raises(DataError, match="is the input file"):
        privatize_file(SWAP, "~/people.csv", "~/people.csv", "sex", overwrite=True)
    assert (home / "people.csv").read_text() == "id,sex\n1,F\n"


def test_a_file_whose_name_is_also_a_pattern(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An existing file named x[1].csv is that file; if the pattern also matches another
    file (x1.csv) the input is ambiguous and refused."""
    from pmlkit.errors import DataError

    monkeypatch.chdir(tmp_path)
    Path("x[1].csv").write_text("id,sex\n1,F\n")
    assert expand_inputs("x[1].csv") == [Path("x[1].csv")]
    Path("x1.csv").write_text("id,sex\n1,M\n")
    with pytest.raises(DataError, match=r"input 'x\[1\]\.csv' names a file and is also a "
                                        r"glob pattern matching 'x1\.csv'"):
        expand_inputs("x[1].csv")
    assert expand_inputs("x[[]1].csv") == [Path("x[1].csv")]
    assert expand_inputs("x?.csv") == [Path("x1.csv")]


def test_a_failed_release_removes_the_output_folders_it_made(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A value the mechanism lacks, found while streaming, stops the release: the folders
    it created for its outputs go again (an existing one stays)."""
    from pmlkit.errors import DataError

    monkeypatch.chdir(tmp_path)
    Path("a.csv").write_text("id,sex\n" + "".join(f"{i},F\n" for i in range(50)))
    Path("b.csv").write_text("id,sex\n" + "".join(f"{i},M\n" for i in range(50)) + "99,X\n")
    Path("kept").mkdir()
    for inputs, out in ((["a.csv", "b.csv"], "new/deeper"), ("b.csv", "new2/"),
                        (["a.csv", "b.csv"], "kept/sub")):
        with pytest.raises(DataError, match="'X'"):
            privatize_file(SWAP, inputs, out, "sex", rng=0, batch_rows=10)
    assert sorted(str(p) for p in Path().rglob("*")) == ["a.csv", "b.csv", "kept"]


def test_design_refuses_an_output_folder_that_does_not_exist_before_designing(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pmlkit.cli.main import main

    code = main(["design", "--reference=~/people.csv", "--column=sex", "--epsilon=2",
                 "--delta=0.05", "--output=~/nodir/m.json"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("pmlkit: error: --output ") and "nodir' does not exist" in err[0]
    assert not (home / "nodir").exists()


# --- the second attack round -----------------------------------------------------------


def test_a_failed_release_never_removes_a_folder_it_did_not_make(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``build/../results/``: ``results`` exists (empty), ``build`` does not. The run
    creates ``build`` only, and removes only ``build`` when it fails."""
    from pmlkit.errors import DataError

    monkeypatch.chdir(tmp_path)
    Path("bad.csv").write_text("id,sex\n1,F\n2,X\n")
    Path("results").mkdir()
    with pytest.raises(DataError, match="'X'"):
        privatize_file(SWAP, ["bad.csv", "bad.csv"], "build/../results/", "sex")
    assert sorted(str(p) for p in Path().rglob("*")) == ["bad.csv", "results"]


@pytest.mark.parametrize("rng", ["bad", -1])
def test_a_release_refused_before_streaming_creates_no_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rng: object) -> None:
    from pmlkit.errors import ValidationError

    monkeypatch.chdir(tmp_path)
    Path("a.csv").write_text("id,sex\n1,F\n")
    with pytest.raises(ValidationError, match="rng"):
        privatize_file(SWAP, "a.csv", "new/deep/", "sex", rng=rng)
    assert sorted(str(p) for p in Path().rglob("*")) == ["a.csv"]


def test_patterns_and_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``~a*.csv`` names no user: a pattern in the working directory, as in a shell;
    ``**`` matches any depth; a ``pathlib.Path`` is one path, never a pattern."""
    monkeypatch.chdir(tmp_path)
    for name in ("~a1.csv", "~a2.csv", "d/x.csv", "d/e/y.csv", "d/e/f/z.csv", "x1.csv"):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text("id,sex\n1,F\n")
    assert expand_inputs("~a*.csv") == [tmp_path / "~a1.csv", tmp_path / "~a2.csv"]
    assert expand_inputs("d/**/*.csv") == [Path("d/e/f/z.csv"), Path("d/e/y.csv"),
                                           Path("d/x.csv")]
    from pmlkit.errors import DataError

    with pytest.raises(DataError, match=r"input file 'x\[1\]\.csv' does not exist"):
        expand_inputs(Path("x[1].csv"))


@pytest.mark.parametrize(("args", "option"), [
    (["joint", "design", "--reference", "ref.csv", "--columns", "sex,id", "--epsilon", "2",
      "--delta", "0.05", "--mode", "per-column", "--out-dir", ""], "--out-dir"),
    (["design", "--reference", "ref.csv", "--column", "sex", "--epsilon", "2", "--delta",
      "0.05", "--output", ""], "--output"),
    (["design", "--reference", "", "--column", "sex", "--epsilon", "2", "--delta", "0.05",
      "--output", "m.json"], "--reference"),
    (["release", "--spec", ""], "--spec"),
])
def test_an_empty_path_option_is_one_line_naming_the_option(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: list[str], option: str) -> None:
    from pmlkit.cli.main import main

    monkeypatch.chdir(tmp_path)
    Path("ref.csv").write_text("id,sex\n" + "".join(f"{i},{'FM'[i % 2]}\n" for i in range(40)))
    code = main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"'{option}'" in err[0] and "got an empty path" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.csv"]


@pytest.mark.parametrize("target", ["newdir/", "m.json/"])
def test_design_refuses_an_output_that_names_a_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        target: str) -> None:
    from pmlkit.cli.main import main

    monkeypatch.chdir(tmp_path)
    Path("ref.csv").write_text("id,sex\n1,F\n2,M\n")
    code = main(["design", "--reference", "ref.csv", "--column", "sex", "--epsilon", "2",
                 "--delta", "0.05", "--output", target])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "names a folder" in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.csv"]
    from pmlkit.errors import ValidationError

    with pytest.raises(ValidationError, match="names a folder"):
        SWAP.save(target)


@pytest.mark.parametrize("spelling", [".", "./"])
def test_estimate_reads_the_working_directory_as_a_folder_of_outputs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        spelling: str) -> None:
    """``pmlkit estimate --input .`` was an internal error (``Path('.')`` has no name)."""
    from pmlkit.cli.main import main

    monkeypatch.chdir(tmp_path)
    Path("in.csv").write_text("id,sex\n" + "".join(f"{i},{'FM'[i % 2]}\n" for i in range(40)))
    Path("out").mkdir()
    privatize_file(SWAP, "in.csv", "out/released.csv", "sex", rng=0)
    monkeypatch.chdir(tmp_path / "out")
    code = main(["estimate", "--input", spelling, "--column", "sex", "--no-intervals"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "released.csv" in captured.out


def test_release_records_are_found_beside_the_expanded_path(home: Path) -> None:
    """``find_mechanism`` and ``released_columns`` read the records of the file the
    release wrote: ``~/out.csv`` is the home folder's, ``./~/out.csv`` the decoy's."""
    from pmlkit.inference import find_mechanism, released_columns

    privatize_file(SWAP, "~/people.csv", "~/out.csv", "sex")
    mech, where = find_mechanism("~/out.csv", "sex")
    assert mech.matrix.tolist() == SWAP.matrix.tolist() and str(home) in where
    assert released_columns("~/out.csv") == frozenset({"sex"})
    with pytest.raises(pmlkit.errors.DataError, match="does not exist"):
        find_mechanism("./~/out.csv", "sex")  # nothing was released into the decoy


def test_reproduce_writes_into_the_expanded_folder(home: Path) -> None:
    from pmlkit.experiments.report import reproduce

    reproduce(["deltamin"], "~/figures", iterations=2)
    assert (home / "figures" / "report.html").is_file()
    assert not Path("~", "figures").exists()
    with pytest.raises(pmlkit.errors.ValidationError, match="out must be a path"):
        reproduce(["deltamin"], None, iterations=2)  # type: ignore[arg-type]


def test_an_empty_home_is_refused_not_read_as_the_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``HOME=""`` Python and pyarrow read ``~/out.csv`` as ``/out.csv``."""
    monkeypatch.setenv("HOME", "")
    (tmp_path / "people.csv").write_text("id,sex\n1,F\n")
    with pytest.raises(pmlkit.errors.ValidationError, match="HOME is set to an empty"):
        privatize_file(SWAP, tmp_path / "people.csv", "~/out.csv", "sex")
    with pytest.raises(pmlkit.errors.ValidationError, match="HOME is set to an empty"):
        read_table("~")
    monkeypatch.chdir(tmp_path)
    assert read_table("./people.csv").num_rows == 1  # no ~: HOME does not matter
