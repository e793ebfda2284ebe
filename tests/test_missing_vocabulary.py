"""One vocabulary for missing values and unknown labels (issue 35, item 3): every command
that reads a reference column takes ``--missing`` with the same words, and every refusal
is a PMLError naming the column and the option that fixes it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pmlkit
from pmlkit.cli.main import main
from pmlkit.errors import DataError, PMLError

pd = pytest.importorskip("pandas")


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # 40 F, 50 M, 10 missing (empty cells) in the reference; b has no missing value
    sex = ["F"] * 40 + ["M"] * 50 + [""] * 10
    b = ["x", "y"] * 50
    rows = "".join(f"{s},{v}\n" for s, v in zip(sex, b, strict=True))
    (tmp_path / "ref.csv").write_text("sex,b\n" + rows)
    plain = pmlkit.design_from_samples(["F"] * 40 + ["M"] * 50, 1.0, 0.1).mechanism
    plain.save(tmp_path / "plain.json")
    with_missing = pmlkit.design_from_samples(["F"] * 40 + ["M"] * 50 + [None] * 10, 1.0,
                                              0.1, missing="category").mechanism
    with_missing.save(tmp_path / "cat.json")
    return tmp_path


def test_assess_names_the_column_and_the_option(capsys, files):
    code, _, err = run(capsys, "assess", "--mechanism", "plain.json", "--reference",
                       "ref.csv", "--column", "sex", "--delta", "0.1")
    assert code == 1 and err.count("\n") == 1
    assert "--column 'sex'" in err and "10 null" in err and "--missing category" in err
    code, _, err = run(capsys, "assess", "--mechanism", "plain.json", "--reference",
                       "ref.csv", "--column", "sex", "--delta", "0.1", "--missing",
                       "category")
    assert code == 1 and "has no label '(missing)'" in err and "--missing keep" in err


def test_assess_missing_keep_and_category_count_what_they_say(capsys, files):
    code, out, err = run(capsys, "assess", "--mechanism", "plain.json", "--reference",
                         "ref.csv", "--column", "sex", "--delta", "0.1", "--missing", "keep",
                         "--json")
    assert code == 0, err
    est = json.loads(out)["estimate"]
    assert est["m"] == 90  # the 10 missing rows left out
    code, out, err = run(capsys, "assess", "--mechanism", "cat.json", "--reference",
                         "ref.csv", "--column", "sex", "--delta", "0.1", "--missing",
                         "category", "--json")
    assert code == 0, err
    est = json.loads(out)["estimate"]
    counts = dict(zip(est["categories"], est["counts"], strict=True))
    assert counts == {"(missing)": 10, "F": 40, "M": 50}


def test_joint_design_names_the_column_and_the_option(capsys, files):
    code, _, err = run(capsys, "joint", "design", "--reference", "ref.csv", "--columns",
                       "b,sex", "--epsilon", "1", "--delta", "0.1", "--out-dir", "plan")
    assert code == 1 and err.count("\n") == 1
    assert "column 'sex' of 'ref.csv'" in err and "10 rows" in err
    assert "--missing category" in err
    code, out, err = run(capsys, "joint", "design", "--reference", "ref.csv", "--columns",
                         "b,sex", "--epsilon", "1", "--delta", "0.1", "--out-dir", "plan",
                         "--missing", "category", "--json")
    assert code == 0, err
    labels = json.loads(out)["joint_guarantee"]["column_labels"]
    assert sorted(labels[1]) == ["(missing)", "F", "M"]


def test_privatize_error_names_the_options(capsys, files):
    code, _, err = run(capsys, "privatize", "--mechanism", "plain.json", "--input",
                       "ref.csv", "--column", "sex", "--output", "out.csv")
    assert code == 1 and err.count("\n") == 1
    assert "column 'sex'" in err and "--missing keep" in err
    assert "pmlkit design --missing category" in err
    code, _, err = run(capsys, "privatize", "--mechanism", "cat.json", "--input",
                       "ref.csv", "--column", "sex", "--output", "out.csv")
    assert code == 1 and "--missing category" in err and "has the label '(missing)'" in err
    code, _, err = run(capsys, "privatize", "--mechanism", "plain.json", "--input",
                       "ref.csv", "--column", "b", "--output", "out.csv")
    assert code == 1 and "'x'" in err and "--unknown-as LABEL" in err
    code, _, err = run(capsys, "privatize", "--mechanism", "cat.json", "--input",
                       "ref.csv", "--column", "sex", "--output", "out.csv", "--missing",
                       "category", "--seed", "1")
    assert code == 0, err


def test_privatizer_fit_with_missing_strings_is_a_pml_error():
    from pmlkit.sklearn import PMLPrivatizer

    X = pd.DataFrame({"s": ["a", "b", np.nan, "a"] * 50})
    with pytest.raises(DataError,
                       match=r"column 's'.*50 null.*PMLPrivatizer\(missing='category'\)"
                       ) as info:
        PMLPrivatizer(delta=0.1).fit(X)
    assert isinstance(info.value, PMLError)
    with pytest.raises(DataError, match="column 0"):
        PMLPrivatizer(delta=0.1).fit(np.array([["a"], ["b"], [None]] * 50, dtype=object))


def test_unknown_as_names_how_to_declare_the_label(capsys, files):
    code, _, err = run(capsys, "privatize", "--mechanism", "plain.json", "--input",
                       "ref.csv", "--column", "b", "--output", "out.csv", "--unknown-as",
                       "Other")
    assert code == 2 and "'Other' is not an input label" in err
    assert "pmlkit design --categories" in err


def test_unused_pandas_categories_are_part_of_the_alphabet():
    s = pd.Series(["a", "b", "a", "b", "a"] * 20, dtype=pd.CategoricalDtype(["a", "b", "c"]))
    res = pmlkit.design_from_samples(s, 1.0, 0.1)
    assert res.mechanism.input_labels == ("a", "b", "c")
    assert res.guarantee.estimate == pytest.approx((0.6, 0.4, 0.0))
    # a record holding the unused category can be released
    out = pmlkit.privatize(res.mechanism, pd.Series(["c", "a"], dtype=s.dtype), rng=1)
    assert set(out.astype(str)) <= set(res.mechanism.output_labels)


def test_estimate_by_a_column_with_missing_values(capsys, files):
    code, _, err = run(capsys, "privatize", "--mechanism", "plain.json", "--input",
                       "ref.csv", "--column", "b", "--output", "rel.csv", "--unknown-as", "F",
                       "--seed", "2")
    assert code == 0, err
    code, _, err = run(capsys, "estimate", "--input", "rel.csv", "--column", "b", "--by",
                       "sex", "--no-intervals")
    assert code == 1 and "--by 'sex'" in err and "10 rows" in err
    assert "--missing category" in err
    code, out, err = run(capsys, "estimate", "--input", "rel.csv", "--column", "b", "--by",
                         "sex", "--no-intervals", "--missing", "category", "--json")
    assert code == 0, err
    assert "(missing)" in json.dumps(json.loads(out))


def test_design_from_samples_names_the_missing_option():
    with pytest.raises(DataError, match=r"10 null.*missing='category'.*--missing category"):
        pmlkit.design_from_samples(["a", "b", None] * 10, 1.0, 0.1)


def test_the_missing_output_is_a_missing_value_in_memory_and_in_files(tmp_path):
    # a permutation that sends 'a' to the output "(missing)": wherever it is drawn, every
    # container and the file release give a missing value, never the text "(missing)"
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    labels = ("(missing)", "a", "b")
    perm = pmlkit.Mechanism(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
                            labels, labels)
    raw = ["a", None, "b", "a", "b", None]
    want = [None, "b", "a", None, "a", "b"]  # (missing) -> b, a -> (missing), b -> a
    containers = [raw, np.array(raw, dtype=object), pd.Series(raw, name="s"),
                  pd.Series(raw, dtype="string"), pd.Series(raw, dtype="category"),
                  pa.array(raw), pl.Series("s", raw)]
    for values in containers:
        out = pmlkit.privatize(perm, values, missing="category")
        got = list(out.to_pylist() if hasattr(out, "to_pylist") else out)
        got = [None if g is None or (not isinstance(g, str) and pd.isna(g)) else g
               for g in got]
        assert got == want, type(values)
    pd.DataFrame({"s": raw, "k": range(6)}).to_csv(tmp_path / "in.csv", index=False)
    pmlkit.privatize_file(perm, tmp_path / "in.csv", tmp_path / "out.csv", "s",
                          missing="category")
    back = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert back["s"].tolist() == [w or "" for w in want]
    # a categorical column's categories are the output labels; "(missing)" is not one
    # of them (it is released as a missing value)
    cat = pmlkit.privatize(perm, pd.Series(raw, dtype="category"), missing="category")
    assert list(cat.cat.categories) == ["a", "b"]
