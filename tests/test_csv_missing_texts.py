"""One meaning of a missing CSV cell in every command (issue 45, F6 and F7): the empty cell
and the texts declared with ``--na`` / ``CsvOptions.null_values`` are missing, in the
reference ``pmlkit design`` reads and in the column ``pmlkit privatize`` releases; nothing
else is (pyarrow's own list, ``NA``, ``null``, ``nan``..., is not used), and ``--na``
adds markers to the empty cell instead of replacing it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pmlkit
from pmlkit.cli.main import main
from pmlkit.io import CsvOptions, read_column

pytest.importorskip("pyarrow")

#: the words pyarrow reads as null by default; pmlkit reads them as text
NULL_WORDS = ("NA", "null", "N/A", "nan", "NULL", "NaN", "#N/A")


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _write(path, name, cells):
    path.write_text(name + "\n" + "".join(f"{c}\n" for c in cells))
    return path


def _two_columns(path, cells):
    path.write_text("id,c\n" + "".join(f"{i},{c}\n" for i, c in enumerate(cells)))
    return path


def test_null_words_are_text_when_reading_a_column(tmp_path):
    src = _two_columns(tmp_path / "ref.csv", ["a", *NULL_WORDS, ""])
    assert read_column(src, "c").to_pylist() == ["a", *NULL_WORDS, None]
    got = read_column(src, "c", csv=CsvOptions(null_values=("NA",))).to_pylist()
    assert got == ["a", None, *NULL_WORDS[1:], None]


def test_design_and_privatize_read_null_words_alike(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(2)
    _write(tmp_path / "ref.csv", "c", rng.choice(["a", "b", "NA", "null", ""], 3000))
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "c",
                       "--epsilon", "2", "--delta", "1e-6", "--output", "m.json",
                       "--missing", "category", "--quiet")
    assert code == 0, err
    mech = pmlkit.Mechanism.load(tmp_path / "m.json")
    assert set(mech.input_labels) == {"(missing)", "a", "b", "NA", "null"}
    _two_columns(tmp_path / "in.csv", ["a", "NA", "null", ""])
    code, _, err = run(capsys, "privatize", "--mechanism", "m.json", "--input", "in.csv",
                       "--column", "c", "--output", "out.csv", "--missing", "category",
                       "--quiet")
    assert code == 0, err
    out = [ln.split(",")[1] for ln in (tmp_path / "out.csv").read_text().splitlines()[1:]]
    assert set(out) <= {"a", "b", "NA", "null", ""}


def test_library_design_and_release_read_null_words_alike(tmp_path):
    rng = np.random.default_rng(3)
    ref = _write(tmp_path / "ref.csv", "c", rng.choice(["a", "NA", ""], 2000))
    values = read_column(ref, "c")
    mech = pmlkit.design_from_samples(values, 2.0, 1e-6, missing="category").mechanism
    assert set(mech.input_labels) == {"(missing)", "a", "NA"}
    src = _two_columns(tmp_path / "in.csv", ["a", "NA", ""])
    pmlkit.privatize_file(mech, src, tmp_path / "out.csv", "c", missing="category",
                          manifest=False)
    pmlkit.privatize_file(mech, src, tmp_path / "out2.csv", "c", missing="keep",
                          manifest=False)
    assert (tmp_path / "out2.csv").read_text().splitlines()[3] == "2,"


def test_na_option_adds_to_the_empty_cell_in_privatize(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    mech = pmlkit.design_from_samples(["a", "b", "c"] * 100, 2.0, 1e-6).mechanism
    mech.save(tmp_path / "m.json")
    _two_columns(tmp_path / "in.csv", ["a", "?", "", "b"])
    code, _, err = run(capsys, "privatize", "--mechanism", "m.json", "--input", "in.csv",
                       "--column", "c", "--output", "out.csv", "--na", "?", "--missing",
                       "keep", "--unknown-as", "a", "--quiet")
    assert code == 0, err
    out = [ln.split(",") for ln in (tmp_path / "out.csv").read_text().splitlines()]
    assert [c for _, c in out[2:4]] == ["", ""]  # "?" and the empty cell stay missing
    assert {out[1][1], out[4][1]} <= {"a", "b", "c"}
    record = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    assert record["privatized"]["c"]["unknown_mapped_rows"] == 0


def test_na_option_adds_to_the_empty_cell_in_design(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "ref.csv", "c", ["a", "b", "?", ""] * 50)
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "c",
                       "--epsilon", "2", "--delta", "1e-6", "--output", "m.json",
                       "--missing", "category", "--na", "?", "--quiet")
    assert code == 0, err
    mech = pmlkit.Mechanism.load(tmp_path / "m.json")
    assert set(mech.input_labels) == {"(missing)", "a", "b"}  # no label ""


def test_null_values_add_to_the_empty_cell_in_the_library(tmp_path):
    opts = CsvOptions(null_values=("?",))
    src = _two_columns(tmp_path / "in.csv", ["a", "?", "", "b"])
    assert read_column(src, "c", csv=opts).to_pylist() == ["a", None, None, "b"]
    labels = ("a", "b")
    mech = pmlkit.Mechanism(np.eye(2), labels, labels)
    pmlkit.privatize_file(mech, src, tmp_path / "out.csv", "c", csv=opts, missing="keep",
                          unknown_as="a", manifest=False)
    assert (tmp_path / "out.csv").read_text() == "id,c\n0,a\n1,\n2,\n3,b\n"
    # null_values=(): nothing is missing, the empty cell is the label ""
    labels = ("", "a", "b", "?")
    mech = pmlkit.Mechanism(np.eye(4), labels, labels)
    pmlkit.privatize_file(mech, src, tmp_path / "out2.csv", "c", csv=CsvOptions(
        null_values=()), manifest=False)
    assert (tmp_path / "out2.csv").read_text() == 'id,c\n0,a\n1,?\n2,""\n3,b\n'  # a label
