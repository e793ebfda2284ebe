"""``pmlkit.privatize(..., missing=, unknown_as=)``: the policies of ``privatize_file`` in
memory, same words (issue 35, item 3). A deterministic mechanism (a permutation) makes
every released value checkable by hand."""

from __future__ import annotations

import numpy as np
import pytest

import pmlkit
from pmlkit.errors import DataError, ValidationError

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

# (missing) -> z, a -> x, b -> y
PERM = pmlkit.Mechanism(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
                        ("(missing)", "a", "b"), ("x", "y", "z"))
# 1 -> 2, 2 -> 3, 3 -> 1
INTS = pmlkit.Mechanism(np.eye(3)[[1, 2, 0]], (1, 2, 3), (1, 2, 3))


@pytest.mark.parametrize("kind", ["list", "numpy", "pandas", "arrow", "polars"])
def test_missing_category_keep_and_unknown_as(kind):
    if kind == "polars":
        pl = pytest.importorskip("polars")
    raw = ["a", None, "b", "c"]

    def make(vals):
        if kind == "numpy":
            return np.array(vals, dtype=object)
        if kind == "pandas":
            return pd.Series(vals, dtype=object, name="s")
        if kind == "arrow":
            return pa.array(vals)
        if kind == "polars":
            return pl.Series("s", vals)
        return list(vals)

    def back(out):
        if kind in ("pandas", "polars", "arrow"):
            vals = out.to_list() if kind != "arrow" else out.to_pylist()
        else:
            vals = list(out)
        return [None if v is None or (isinstance(v, float) and np.isnan(v)) else v
                for v in vals]

    out = pmlkit.privatize(PERM, make(raw), missing="category", unknown_as="a")
    assert back(out) == ["x", "z", "y", "x"]  # None as (missing), 'c' as 'a'
    out = pmlkit.privatize(PERM, make(raw), missing="keep", unknown_as="b")
    assert back(out) == ["x", None, "y", "y"]  # the null stays null
    with pytest.raises(DataError, match=r"'c'.*unknown_as=LABEL"):
        pmlkit.privatize(PERM, make(raw), missing="keep")


def test_int_columns_keep_their_type():
    out = pmlkit.privatize(INTS, np.array([1, 2, 3, 9], dtype=np.int64), unknown_as=3)
    assert out.dtype == np.int64 and out.tolist() == [2, 3, 1, 1]
    s = pmlkit.privatize(INTS, pd.Series([1, 9], dtype="int64"), unknown_as=1)
    assert s.dtype == np.int64 and s.tolist() == [2, 2]


def test_dataframe_columns_and_into():
    df = pd.DataFrame({"s": ["a", None, "b"], "id": [1, 2, 3]})
    out = pmlkit.privatize(PERM, df, columns="s", into="r", missing="category")
    assert out["r"].tolist() == ["x", "z", "y"]
    assert out["s"].tolist()[0] == "a" and out["id"].tolist() == [1, 2, 3]


def test_refusals_name_what_is_allowed():
    with pytest.raises(ValidationError, match="needs a mechanism with the input label"):
        pmlkit.privatize(INTS, [1, None], missing="category")
    with pytest.raises(ValidationError, match="unknown_as must be an input label"):
        pmlkit.privatize(INTS, [1], unknown_as=7)
    with pytest.raises(ValidationError, match="missing must be one of"):
        pmlkit.privatize(INTS, [1], missing="drop")
    with pytest.raises(ValidationError, match="for files use privatize_file"):
        pmlkit.privatize(INTS, pa.table({"a": [1]}), unknown_as=1)


def test_default_refusals_name_the_options():
    with pytest.raises(DataError, match=r"null.*missing='keep'.*missing='category'"):
        pmlkit.privatize(PERM, ["a", None])
    with pytest.raises(DataError, match=r"'c'.*unknown_as=LABEL"):
        pmlkit.privatize(PERM, pd.Series(["a", "c"]))


def test_pandas_index_other_than_range_keeps_every_row():
    # the released values are positional: a Series or DataFrame indexed 7, 3, 5 gets its
    # own rows back (aligning on labels once turned every released value into NaN)
    s = pd.Series(["a", None, "b"], index=[7, 3, 5], name="s", dtype=object)
    out = pmlkit.privatize(PERM, s, missing="keep", rng=0)
    assert out.index.tolist() == [7, 3, 5] and out.name == "s"
    assert out.tolist()[0] == "x" and pd.isna(out.tolist()[1]) and out.tolist()[2] == "y"
    df = pd.DataFrame({"s": ["b", "c", None], "k": [1, 2, 3]}, index=["r", "q", "p"])
    got = pmlkit.privatize(PERM, df, columns="s", missing="category", unknown_as="a",
                           rng=0)
    assert got["s"].tolist() == ["y", "x", "z"]  # b -> y, c as a -> x, (missing) -> z
    assert got.index.tolist() == ["r", "q", "p"] and got["k"].tolist() == [1, 2, 3]


def test_dask_collections_take_the_policies_partition_by_partition():
    dd = pytest.importorskip("dask.dataframe")
    raw = ["a", None, "c", "b", None, "a", "b"]
    df = pd.DataFrame({"s": raw, "k": np.arange(7)})
    ddf = dd.from_pandas(df, npartitions=3)
    lazy = pmlkit.privatize(PERM, ddf, columns="s", missing="category", unknown_as="b",
                            rng=0)
    got = lazy.compute()
    # by hand: a -> x, b -> y, (missing) -> z, c released as b -> y
    assert got["s"].tolist() == ["x", "z", "y", "y", "z", "x", "y"]
    assert got["k"].tolist() == list(range(7)) and got.index.tolist() == list(range(7))
    kept = pmlkit.privatize(PERM, ddf["s"], missing="keep", unknown_as="a", rng=0).compute()
    assert [None if pd.isna(v) else v for v in kept.tolist()] == [
        "x", None, "x", "y", None, "x", "y"]
    with pytest.raises(ValidationError, match="missing='category' needs"):
        pmlkit.privatize(INTS, ddf["s"], missing="category")
    with pytest.raises(DataError, match="missing='keep'"):  # refused at compute time
        pmlkit.privatize(PERM, ddf["s"], rng=0).compute()


def test_policies_keep_the_column_type():
    # the same types the default path gives, also where a missing value is kept: a
    # categorical stays categorical, a nullable Int64 / string stays what it was
    cat = pd.Series(["a", "b", None], dtype=pd.CategoricalDtype(["b", "a", "q"]))
    got = pmlkit.privatize(PERM, cat, missing="keep", rng=0)
    # a missing value stays missing, a -> x, b -> y: an unordered categorical's categories
    # may come from the raw values, so the output labels are the released categories
    assert list(got.dtype.categories) == ["x", "y", "z"] and not got.dtype.ordered
    assert got.dtype == pmlkit.privatize(PERM, cat.fillna("a"), rng=0).dtype
    assert got.tolist()[:2] == ["x", "y"] and pd.isna(got.tolist()[2])
    # an ordered (declared) categorical holding every output label keeps its categories
    declared = pd.CategoricalDtype(["z", "y", "x", "a", "b"], ordered=True)
    got = pmlkit.privatize(PERM, cat.astype(declared), missing="keep", rng=0)
    assert got.dtype == declared and got.tolist()[:2] == ["x", "y"]
    ints = pd.Series([1, None, 3, 2], dtype="Int64")
    out = pmlkit.privatize(INTS, ints, missing="keep", rng=0)
    assert str(out.dtype) == "Int64" and out.tolist()[0] == 2 and out.tolist()[2] == 1
    assert out.isna().tolist() == [False, True, False, False]
    text = pd.Series(["a", None], dtype="string")
    assert str(pmlkit.privatize(PERM, text, missing="keep", rng=0).dtype) == "string"
    pl = pytest.importorskip("polars")
    enum = pl.Series("e", ["a", None, "b"], dtype=pl.Enum(["a", "b", "x", "y", "z"]))
    res = pmlkit.privatize(PERM, enum, missing="keep", rng=0)
    assert res.dtype == enum.dtype and res.to_list() == ["x", None, "y"]


def test_a_policy_never_cuts_or_truncates_released_values():
    # the result goes back to the input's dtype only when every released value survives:
    # a fixed-width text array would cut 'banana' to 'b', an int64 array would turn 1.5
    # into 1 (both looked like real labels)
    swap = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("a", "b"),
                            ("apple", "banana"))
    for kw in ({"missing": "keep"}, {"unknown_as": "a"}):
        out = pmlkit.privatize(swap, np.array(["a", "b", "a"]), **kw)
        assert list(out) == ["banana", "apple", "banana"]
    half = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), (0, 1), (0.5, 1.5))
    for values in (np.array([0, 1, 0]), pd.Series([0, 1, 0], index=[7, 8, 9], name="v")):
        out = pmlkit.privatize(half, values, unknown_as=0)
        assert list(out) == [1.5, 0.5, 1.5]
    kept = pmlkit.privatize(half, pd.Series([0, 1, 0], name="v"), missing="keep")
    assert list(kept) == [1.5, 0.5, 1.5] and kept.name == "v"
    # and a cast that loses nothing still happens: int labels stay int64
    ints = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), (0, 1), (0, 1))
    assert pmlkit.privatize(ints, np.array([0, 1, 0]), unknown_as=0).dtype == np.int64


def test_policies_refuse_mixed_output_labels_and_take_string_views():
    mixed = pmlkit.Mechanism(np.eye(3), ("(missing)", 1, 2), ("(missing)", 1, 2))
    with pytest.raises(DataError, match="output labels of one type"):
        pmlkit.privatize(mixed, [1, None, 2], missing="keep")
    if not hasattr(pa, "string_view"):
        return
    m = "(missing)"
    perm = pmlkit.Mechanism(np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0.0]]), (m, "a", "b"),
                            (m, "a", "b"))
    out = pmlkit.privatize(perm, pa.array(["a", None, "b"], pa.string_view()),
                           missing="category")
    assert out.to_pylist() == [None, "b", "a"] and out.type == pa.string_view()


def test_a_literal_missing_label_text_is_refused_under_category(tmp_path):
    """missing='category' releases a missing value as the label '(missing)', written back
    as a missing cell: a column that already holds that text would have its real values
    counted with the missing ones and come out empty. Design, the release of a file, a
    release spec and the in-memory release refuse it, naming the text."""
    import pandas as pd

    from pmlkit.privatization import privatize_file
    from pmlkit.release import ReleaseSpec, release_table

    values = ["a", "(missing)", None, "b"] * 30
    with pytest.raises(DataError, match=r"holds the text '\(missing\)'"):
        pmlkit.design_from_samples(values, 1.0, 0.05, missing="category")
    ok = pmlkit.design_from_samples(["a", None, "b"] * 40, 1.0, 0.05,
                                    missing="category").mechanism
    pd.DataFrame({"c": values}).to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(DataError, match=r"holds the text '\(missing\)'"):
        privatize_file(ok, tmp_path / "in.csv", tmp_path / "out.csv", "c",
                       missing="category")
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(DataError, match=r"holds the text '\(missing\)'"):
        pmlkit.privatize(ok, np.array(values, dtype=object), missing="category")
    pd.DataFrame({"c": values}).to_csv(tmp_path / "ref.csv", index=False)
    spec = ReleaseSpec.from_dict({
        "reference": "ref.csv", "input": "in.csv", "output": "rel.csv", "epsilon": 1.0,
        "delta": 1e-3, "columns": {"c": {"type": "categorical", "missing": "category"}}},
        base=tmp_path)
    with pytest.raises(DataError, match=r"holds the text '\(missing\)'"):
        release_table(spec)
    assert not (tmp_path / "rel.csv").exists()
    # without the text, the same release goes through
    pd.DataFrame({"c": ["b", None, "b", "a", "b"] * 20}).to_csv(tmp_path / "in.csv",
                                                                 index=False)
    assert privatize_file(ok, tmp_path / "in.csv", tmp_path / "out.csv", "c",
                          missing="category").rows == 100
