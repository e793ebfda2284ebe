"""One meaning of a missing CSV cell in every command: the empty cell
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
    code, text, err = run(capsys, "privatize", "--mechanism", "m.json", "--input", "in.csv",
                          "--column", "c", "--output", "out.csv", "--na", "?", "--missing",
                          "keep", "--unknown-as", "a", "--quiet", "--json")
    assert code == 0, err
    out = [ln.split(",") for ln in (tmp_path / "out.csv").read_text().splitlines()]
    assert [c for _, c in out[2:4]] == ["", ""]  # "?" and the empty cell stay missing
    assert {out[1][1], out[4][1]} <= {"a", "b", "c"}
    # no missing text was taken for an unknown value (the operator's count; the manifest
    # holds no count of the raw input)
    assert json.loads(text)["input_counts"]["c"] == {"unknown_mapped_rows": 0}
    record = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    assert "unknown_mapped_rows" not in record["privatized"]["c"]


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


# --- a CSV column is numbers only when every text is its number's spelling


def test_design_keeps_codes_that_are_not_canonical_numbers(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(2)
    codes = ["007", "7", "08", "1e3", "1000"]
    _write(tmp_path / "ref.csv", "code", rng.choice(codes, 3000))
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "code",
                       "--epsilon", "2", "--delta", "1e-6", "--output", "m.json", "--quiet")
    assert code == 0, err
    mech = pmlkit.Mechanism.load(tmp_path / "m.json")
    assert sorted(mech.input_labels) == sorted(codes)  # five labels, none merged
    _two_columns(tmp_path / "in.csv", codes)
    code, _, err = run(capsys, "privatize", "--mechanism", "m.json", "--input", "in.csv",
                       "--column", "c", "--output", "out.csv", "--quiet")
    assert code == 0, err
    out = [ln.split(",")[1] for ln in (tmp_path / "out.csv").read_text().splitlines()[1:]]
    assert set(out) <= set(codes)


def test_integer_columns_stay_numbers_and_other_spellings_are_unknown(tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(5)
    _write(tmp_path / "ref.csv", "n", rng.choice(["0", "1", "2", "39"], 3000))
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "n",
                       "--epsilon", "2", "--delta", "1e-6", "--output", "m.json", "--quiet")
    assert code == 0, err
    assert pmlkit.Mechanism.load(tmp_path / "m.json").input_labels == (0, 1, 2, 39)
    _two_columns(tmp_path / "in.csv", ["0", "39", "039", "1.0"])
    code, _, err = run(capsys, "privatize", "--mechanism", "m.json", "--input", "in.csv",
                       "--column", "c", "--output", "out.csv", "--quiet")
    assert code == 1 and err.count("\n") == 1
    unknown, labels = err.split("(input labels", 1)
    assert "value '039'" in unknown and "other unknown values: '1.0'" in labels
    assert "'0'" not in unknown and "'39'" not in unknown  # matched, not unknown
    assert "'0', '1', '2', '39'" in labels  # the labels, as the texts they match
    code, text, err = run(capsys, "privatize", "--mechanism", "m.json", "--input", "in.csv",
                          "--column", "c", "--output", "out.csv", "--unknown-as", "2",
                          "--quiet")
    assert code == 0, err
    # the operator sees how many values were mapped; the manifest does not record it
    assert "column c: 2 value(s) outside the mechanism's labels" in text
    assert "not for publication" in text
    out = [ln.split(",")[1] for ln in (tmp_path / "out.csv").read_text().splitlines()[1:]]
    assert set(out) <= {"0", "1", "2", "39"}
    record = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    assert "unknown_mapped_rows" not in record["privatized"]["c"]


def test_library_reads_labels_as_the_release_matches_them(tmp_path):
    from pmlkit.errors import DataError
    from pmlkit.io import read_labels

    src = tmp_path / "ref.csv"
    src.write_text("n,code,x,b\n0,007,1.5,true\n39,7,2,false\n39,08,2,\n")
    assert read_labels(src, "n").to_pylist() == [0, 39, 39]
    assert read_labels(src, "code").to_pylist() == ["007", "7", "08"]
    assert read_labels(src, "x").to_pylist() == [1.5, 2.0, 2.0]
    assert read_labels(src, "b").to_pylist() == [True, False, None]
    mech = pmlkit.design_from_samples([7, 8, 1000] * 100, 2.0, 1e-6).mechanism
    inp = _two_columns(tmp_path / "in.csv", ["7", "8", "1000"])
    pmlkit.privatize_file(mech, inp, tmp_path / "ok.csv", "c", manifest=False)
    for spelling in ("007", "08", "1e3", "1000.0"):
        inp = _two_columns(tmp_path / "in.csv", ["7", spelling])
        with pytest.raises(DataError, match=f"value '{spelling}' appears in 1 row"):
            pmlkit.privatize_file(mech, inp, tmp_path / "out.csv", "c", manifest=False)


def test_joint_reference_reads_codes_as_design_does(tmp_path, monkeypatch, capsys):
    """The joint guarantee of a second pass reads its reference columns as design does:
    codes like ``007`` and ``08`` stay the texts the mechanism was designed on (read as
    numbers, 7 and 8 were no labels of it)."""
    from pmlkit.joint import JointGuarantee, joint_guarantee

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(4)
    codes = rng.choice(["007", "7", "08"], 3000)
    sex = rng.choice(["F", "M"], 3000)
    (tmp_path / "ref.csv").write_text(
        "code,sex\n" + "".join(f"{c},{s}\n" for c, s in zip(codes, sex, strict=True)))
    (tmp_path / "in.csv").write_text(
        "code,sex\n" + "".join(f"{c},{s}\n" for c, s in zip(codes[::-1][:500],
                                                            sex[:500], strict=True)))
    for col in ("code", "sex"):
        code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", col,
                           "--epsilon", "2", "--delta", "1e-6", "--output", f"{col}.json",
                           "--quiet")
        assert code == 0, err
    code, _, err = run(capsys, "privatize", "--mechanism", "code.json", "--input", "in.csv",
                       "--column", "code", "--output", "one.csv", "--quiet")
    assert code == 0, err
    code, _, err = run(capsys, "privatize", "--mechanism", "sex.json", "--input", "one.csv",
                       "--column", "sex", "--output", "two.csv", "--joint-reference",
                       "ref.csv", "--delta", "1e-6", "--quiet")
    assert code == 0, err
    doc = json.loads((tmp_path / "two.csv.pmlkit.json").read_text())
    mechs = [pmlkit.Mechanism.load(tmp_path / f"{c}.json") for c in ("code", "sex")]
    expected = joint_guarantee(mechs, {"code": list(codes), "sex": list(sex)}, 1e-6)
    got = JointGuarantee.from_dict(doc["joint_guarantee"]).verify(mechs)
    assert got.certified_eps == expected.certified_eps


def test_texts_a_number_cast_would_merge_stay_texts(tmp_path):
    """'-0' and '0' are each a canonical spelling, of -0.0 and 0.0, which are one number:
    read as numbers the two labels merged (and design refused them); they stay texts."""
    from pmlkit.io import read_labels

    _write(tmp_path / "z.csv", "v", ["-0", "0", "1"] * 10)
    col = read_labels(tmp_path / "z.csv", "v")
    assert col.to_pylist()[:3] == ["-0", "0", "1"]
    mech = pmlkit.design_from_samples(col.to_pylist(), 2.0, 1e-3).mechanism
    assert sorted(mech.input_labels) == ["-0", "0", "1"]


def test_an_unknown_spelling_is_shown_against_the_labels_own_texts(tmp_path):
    """A mechanism on float labels matches CSV text by the text pmlkit writes for each
    label ('2', not '2.0'): the refusal shows those texts, not the floats."""
    from pmlkit.privatization import privatize_file

    mech = pmlkit.Mechanism(np.eye(3), (1.0, 2.0, 3.5), (1.0, 2.0, 3.5))
    _two_columns(tmp_path / "in.csv", ["1", "2.0", "3.5"])
    with pytest.raises(pmlkit.errors.DataError) as info:
        privatize_file(mech, tmp_path / "in.csv", tmp_path / "out.csv", "c")
    text = str(info.value)
    assert "value '2.0'" in text
    assert "each matched by this text only: '1', '2', '3.5'" in text


def test_a_number_column_with_a_missing_category_goes_end_to_end(tmp_path, monkeypatch,
                                                                   capsys):
    """Codes 0, 1, 2 with empty cells under --missing category: design gave the labels
    0.0, 1.0, 2.0 (ints and None went through pandas as floats and NaN), and privatize
    and estimate matched no CSV text against labels of two kinds (every value unknown)."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(8)
    _write(tmp_path / "ref.csv", "n", rng.choice(["0", "1", "2", ""], 2000))
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "n",
                       "--epsilon", "2", "--delta", "1e-6", "--missing", "category",
                       "--output", "m.json", "--quiet")
    assert code == 0, err
    mech = pmlkit.Mechanism.load(tmp_path / "m.json")
    assert sorted(mech.input_labels, key=str) == ["(missing)", 0, 1, 2]
    assert all(type(v) is int for v in mech.input_labels if v != "(missing)")
    cells = rng.choice(["0", "1", "2", ""], 500)
    _two_columns(tmp_path / "in.csv", cells)
    code, _, err = run(capsys, "privatize", "--mechanism", "m.json", "--input", "in.csv",
                       "--column", "c", "--missing", "category", "--output", "out.csv",
                       "--quiet")
    assert code == 0, err
    out = [ln.split(",")[1] for ln in (tmp_path / "out.csv").read_text().splitlines()[1:]]
    assert len(out) == 500 and set(out) <= {"0", "1", "2", ""}
    code, text, err = run(capsys, "estimate", "--input", "out.csv", "--column", "c",
                          "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["n"] == 500
