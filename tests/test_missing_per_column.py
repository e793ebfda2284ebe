"""``missing="category"`` over several columns (issue 35, item 3): a plan designed with
``--missing category`` gives the label ``(missing)`` only to the columns whose reference had
missing values. Releasing the plan with ``missing="category"`` applies the category where
the column's mechanism has it and refuses, naming the column, a missing value in a column
designed without it. Permutation mechanisms make every released value checkable by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pmlkit
from pmlkit.errors import DataError, ValidationError
from pmlkit.privatization.files import privatize_file

pd = pytest.importorskip("pandas")

SEX = pmlkit.Mechanism(np.eye(2)[[1, 0]], ("F", "M"), ("F", "M"))  # F <-> M
LANG = pmlkit.Mechanism(np.eye(3)[[1, 2, 0]], ("(missing)", "en", "fr"),
                        ("(missing)", "en", "fr"))  # (missing) -> en -> fr -> (missing)


def _csv(path, sex, lang):
    pd.DataFrame({"id": range(len(sex)), "sex": sex, "lang": lang}).to_csv(path, index=False)


def test_category_applies_where_the_label_exists(tmp_path):
    _csv(tmp_path / "in.csv", ["F", "M", "F", "M"], ["en", None, "fr", "en"])
    privatize_file({"sex": SEX, "lang": LANG}, tmp_path / "in.csv", tmp_path / "out.csv",
                   ["sex", "lang"], missing="category", rng=0)
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert out["sex"].tolist() == ["M", "F", "M", "F"]
    # en -> fr, (missing) -> en, fr -> (missing) (written as a missing value)
    assert out["lang"].tolist() == ["fr", "en", "", "fr"]
    assert out["id"].tolist() == [0, 1, 2, 3]
    man = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    assert man["privatized"]["sex"]["missing"] == "error"
    assert man["privatized"]["lang"]["missing"] == "category"


def test_a_missing_value_in_a_column_without_the_label_is_refused_by_name(tmp_path):
    _csv(tmp_path / "in.csv", ["F", None, "M"], ["en", "fr", None])
    with pytest.raises(DataError, match="sex"):
        privatize_file({"sex": SEX, "lang": LANG}, tmp_path / "in.csv",
                       tmp_path / "out.csv", ["sex", "lang"], missing="category", rng=0)
    assert not (tmp_path / "out.csv").exists()


def test_refused_when_no_column_has_the_label(tmp_path):
    _csv(tmp_path / "in.csv", ["F", "M"], ["en", "fr"])
    with pytest.raises(ValidationError, match=r"none of columns \['sex'\]"):
        privatize_file({"sex": SEX}, tmp_path / "in.csv", tmp_path / "out.csv", ["sex"],
                       missing="category", rng=0)


def test_the_command_line_releases_such_a_plan(tmp_path):
    from click.testing import CliRunner

    from pmlkit.cli.main import cli

    SEX.save(tmp_path / "sex.json")
    LANG.save(tmp_path / "lang.json")
    _csv(tmp_path / "in.csv", ["F", "M"], [None, "fr"])
    res = CliRunner().invoke(cli, [
        "privatize", "--mechanism", f"sex={tmp_path / 'sex.json'}",
        "--mechanism", f"lang={tmp_path / 'lang.json'}", "--input",
        str(tmp_path / "in.csv"), "--column", "sex", "--column", "lang", "--output",
        str(tmp_path / "out.csv"), "--missing", "category", "--seed", "0", "--allow-uncertified",
        "--no-joint-guarantee"])
    assert res.exit_code == 0, res.output
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert out["sex"].tolist() == ["M", "F"] and out["lang"].tolist() == ["en", ""]
