"""A released dictionary (categorical) column's label set discloses no raw value.

A dictionary built from the data (``pa.array(v).dictionary_encode()``, a Parquet
dictionary page per row group, ``pd.Categorical(values)``) holds the raw values that
occurred, in the order they first occurred. The release kept it whenever every output
label was one of its entries, so with the raw column dropped (``into=``,
``keep_raw=False``) the released dictionary still told which raw value came first in
each row group, which raw values occurred (unused entries, values ``unknown_as`` mapped)
and, where it lacked an output label, that no record held that label. The released
dictionary is now a function of the mechanism and of declared type information only:
the output labels, in the mechanism's order, unless the column is a declared ordered one
(an ordered Arrow dictionary or pandas categorical, a polars Enum) holding every output
label, whose categories and order are kept.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pmlkit
from pmlkit.errors import DataError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

RR = pmlkit.Mechanism(np.array([[0.75, 0.25], [0.25, 0.75]]), ("a", "b"), ("a", "b"))
# a mechanism whose output labels are in an order that no sorting gives
RR3 = pmlkit.Mechanism(np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]),
                       ("c", "a", "b"), ("c", "a", "b"))


def _dictionaries(path: Path, column: str) -> list[list[object]]:
    """The dictionary of ``column`` in every row group of the Parquet file ``path``."""
    with pq.ParquetFile(path, read_dictionary=[column]) as pf:
        return [pf.read_row_group(i, columns=[column]).column(0).chunk(0)
                .dictionary.to_pylist() for i in range(pf.metadata.num_row_groups)]


def _release(tmp_path: Path, name: str, table: object, **kw: object) -> Path:
    inp, out = tmp_path / f"{name}.in.parquet", tmp_path / f"{name}.out.parquet"
    pq.write_table(table, inp, row_group_size=10)
    pmlkit.privatize_file(RR3, inp, out, "x", rng=7, into="x_r", keep_raw=False, **kw)
    return out


def test_the_first_raw_value_of_a_row_group_is_not_in_the_released_dictionary(tmp_path):
    """Two inputs that differ only in each row group's first raw value (hence in its
    dictionary's order): the same released dictionary (the output labels, in the
    mechanism's order) in every row group; under one seed the same released values."""
    rng = np.random.default_rng(0)
    body = rng.choice(["a", "b", "c"], size=40).tolist()
    got = []
    for first in "abc":
        values = list(body)
        values[::10] = [first] * 4  # each row group of 10 starts with ``first``
        table = pa.table({"x": pa.array(values).dictionary_encode(),
                          "id": np.arange(40)})
        out = _release(tmp_path, first, table)
        schema = pq.read_schema(out)
        assert "x" not in schema.names
        assert pa.types.is_dictionary(schema.field("x_r").type)
        assert not schema.field("x_r").type.ordered
        assert _dictionaries(out, "x_r") == [["c", "a", "b"]] * 4
        got.append(pq.read_table(out).column("x_r").to_pylist())
    assert got[0] != body  # (something was released)
    for other in got[1:]:
        # every record but the four first ones is the same, and so is its release
        assert [v for i, v in enumerate(other) if i % 10] == \
            [v for i, v in enumerate(got[0]) if i % 10]


def test_unused_and_unknown_entries_are_not_in_the_released_dictionary(tmp_path):
    """A categorical column's unused categories (which raw values occurred elsewhere) and
    a raw category outside the mechanism's labels (released as ``unknown_as``) do not
    reach the released dictionary: the same release as the plain categorical's."""
    values = ["a", "b", "c", "a"] * 10
    plain = pd.DataFrame({"x": pd.Categorical(values, categories=["c", "a", "b"]),
                          "id": np.arange(40)})
    unused = plain.assign(x=plain["x"].cat.add_categories(["secret"]))
    unknown = plain.assign(x=pd.Categorical(["secret", *values[1:]],
                                            categories=["secret", "a", "b", "c"]))
    outs = {}
    for name, df in (("plain", plain), ("unused", unused), ("unknown", unknown)):
        table = pa.Table.from_pandas(df, preserve_index=False)
        outs[name] = _release(tmp_path, name, table, unknown_as="a")
        assert _dictionaries(outs[name], "x_r") == [["c", "a", "b"]] * 4
    release = {n: pq.read_table(p).column("x_r").to_pylist() for n, p in outs.items()}
    assert release["plain"] == release["unused"]
    assert release["plain"][1:] == release["unknown"][1:]
    back = {n: pd.read_parquet(p)["x_r"].dtype for n, p in outs.items()}
    assert back["plain"] == back["unused"] == back["unknown"]
    assert list(back["plain"].categories) == ["c", "a", "b"]


@pytest.fixture(scope="module")
def scheduler():  # type: ignore[no-untyped-def]
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    yield cluster.scheduler_address
    cluster.close()


def test_pandas_metadata_does_not_count_the_raw_categories(tmp_path):
    """pandas' metadata in a Parquet file counts a categorical's categories
    (``num_categories``): the raw column's count is the number of distinct raw values of a
    data-built categorical. The release describes its released column instead, and a raw
    column left out not at all."""
    import json

    metas = []
    for cats in (["a", "b", "c"], ["a", "b", "c", "secret1", "secret2"]):
        df = pd.DataFrame({"x": pd.Categorical(["a", "b", "c"] * 4, categories=cats),
                           "id": np.arange(12)})
        inp = tmp_path / f"{len(cats)}.parquet"
        df.to_parquet(inp)
        for kw in ({}, {"into": "x_r", "keep_raw": False}):
            out = tmp_path / f"{len(cats)}-{len(kw)}.out.parquet"
            pmlkit.privatize_file(RR3, inp, out, "x", rng=0, **kw)
            entries = json.loads(pq.read_schema(out).metadata[b"pandas"])["columns"]
            metas.append({e["field_name"]: e["metadata"] for e in entries})
            assert pd.read_parquet(out)["x_r" if kw else "x"].tolist()
    assert metas[0] == metas[2] and metas[1] == metas[3]
    assert metas[0]["x"] == {"num_categories": 3, "ordered": False}
    assert "x" not in metas[1]


def test_the_dask_engine_releases_the_same_dictionary(tmp_path, scheduler):
    """The Dask engine (one task per row group) gives the output labels too."""
    from pmlkit.privatization._dask import privatize_file_dask

    for first in "ab":
        values = [first] + ["c", "a", "b"] * 13
        inp = tmp_path / f"{first}.parquet"
        pq.write_table(pa.table({"x": pa.array(values).dictionary_encode()}), inp,
                       row_group_size=10)
        out = tmp_path / f"{first}.out"
        privatize_file_dask(RR3, inp, out, "x", rng=3, into="x_r", keep_raw=False,
                            scheduler=scheduler, batch_rows=10)
        parts = sorted(out.glob("part-*.parquet"))
        assert len(parts) == 4
        for part in parts:
            assert _dictionaries(part, "x_r") == [["c", "a", "b"]]


def test_an_ordered_dictionary_whose_row_groups_differ_is_refused(tmp_path, scheduler):
    """An ordered dictionary read row group by row group is kept only when every group
    holds the same (declared) one: a file written with an ordered dictionary of each
    group's own values (its order the data's) would carry them into the release."""
    inp = tmp_path / "in.parquet"
    groups = [["b", "a", "b"], ["a", "b", "a"]]
    schema = pa.schema([pa.field("x", pa.dictionary(pa.int32(), pa.string(), ordered=True))])
    with pq.ParquetWriter(inp, schema) as w:
        for g in groups:
            arr = pa.array(g).dictionary_encode()
            arr = pa.DictionaryArray.from_arrays(arr.indices, arr.dictionary, ordered=True)
            w.write_table(pa.table({"x": arr}, schema=schema))
    assert _dictionaries(inp, "x") == [["b", "a"], ["a", "b"]]
    with pytest.raises(DataError, match="differs between row groups"):
        pmlkit.privatize_file(RR, inp, tmp_path / "out.parquet", "x", rng=0)
    assert not (tmp_path / "out.parquet").exists()
    # (each task reads one row group: the first's dictionary is the one every task checks)
    from pmlkit.privatization._dask import privatize_file_dask

    with pytest.raises(DataError, match="differs between row groups"):
        privatize_file_dask(RR, inp, tmp_path / "out", "x", rng=0, batch_rows=1,
                            scheduler=scheduler)


def test_an_ordered_dictionary_lacking_an_output_label_gets_the_output_labels(tmp_path):
    """A declared ordered dictionary without every output label: the output labels (the
    declared order does not rank them), as in memory."""
    dtype = pd.CategoricalDtype(["b", "a"], ordered=True)
    df = pd.DataFrame({"x": pd.Series(["a", "b"] * 10, dtype=dtype)})
    inp, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    df.to_parquet(inp)
    mech = pmlkit.Mechanism(np.array([[0.5, 0.5], [0.5, 0.5]]), ("a", "b"), ("a", "z"))
    pmlkit.privatize_file(mech, inp, out, "x", rng=1)
    assert _dictionaries(out, "x") == [["a", "z"]]
    back = pd.read_parquet(out)["x"]
    memory = pmlkit.privatize(mech, df["x"], rng=1)
    assert back.dtype == memory.dtype and not memory.dtype.ordered
    assert list(memory.dtype.categories) == ["a", "z"]


def test_the_missing_output_is_not_an_entry_of_the_released_dictionary(tmp_path):
    """Under ``missing="category"`` the output ``(missing)`` is written as a missing value:
    it is not an entry of the released dictionary, as it is not a category in memory."""
    labels = ("(missing)", "a", "b")
    mech = pmlkit.Mechanism(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
                            labels, labels)
    inp, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({"x": pa.array(["a", None, "b"] * 4).dictionary_encode()}), inp)
    pmlkit.privatize_file(mech, inp, out, "x", missing="category", rng=0)
    assert _dictionaries(out, "x") == [["a", "b"]]
    assert pq.read_table(out).column("x").to_pylist() == [None, "b", "a"] * 4


# -- in memory ----------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"unknown_as": "a"}, {"missing": "keep"}])
def test_pandas_unordered_categories_do_not_depend_on_the_raw_values(kw):
    """pandas: categories in the raw values' order, with an unused one, or (with
    ``unknown_as``) with one outside the mechanism's labels: the same released dtype
    (the output labels, in the mechanism's order) and, under one seed, values."""
    values = ["a", "b", "c", "a"] * 5
    inputs = [pd.Series(pd.Categorical(values, categories=cats))
              for cats in (["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b", "unused"])]
    if kw:
        inputs.append(pd.Series(pd.Categorical(values, categories=["q", "c", "b", "a"])))
    outs = [pmlkit.privatize(RR3, s, rng=11, **kw) for s in inputs]
    for out in outs:
        assert isinstance(out.dtype, pd.CategoricalDtype) and not out.dtype.ordered
        assert list(out.dtype.categories) == ["c", "a", "b"]
        assert out.tolist() == outs[0].tolist()
    if not kw:  # a pandas Categorical (not a Series; without policies) alike
        cat = pmlkit.privatize(RR3, pd.Categorical(values,
                                                   categories=["b", "unused", "c", "a"]),
                               rng=11)
        assert list(cat.categories) == ["c", "a", "b"] and cat.tolist() == outs[0].tolist()
    # and a DataFrame column
    df = pmlkit.privatize(RR3, pd.DataFrame({"x": inputs[2]}), columns="x", into="x_r",
                          rng=11, **kw)
    assert list(df["x_r"].dtype.categories) == ["c", "a", "b"]


def test_memory_and_file_release_the_same_dtype_and_values(tmp_path):
    """Under one seed the file release and the in-memory release of an unordered pandas
    categorical give the same values and the same dtype."""
    s = pd.Series(pd.Categorical(["a", "b", "c"] * 20, categories=["b", "zz", "a", "c"]))
    inp, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pd.DataFrame({"x": s}).to_parquet(inp)
    pmlkit.privatize_file(RR3, inp, out, "x", rng=5)
    back = pd.read_parquet(out)["x"]
    memory = pmlkit.privatize(RR3, s, rng=5)
    assert back.dtype == memory.dtype
    assert list(memory.dtype.categories) == ["c", "a", "b"]
    assert back.tolist() == memory.tolist()


def test_ordered_pandas_categorical_keeps_its_declared_categories():
    dtype = pd.CategoricalDtype(["b", "unused", "c", "a"], ordered=True)
    s = pd.Series(["a", "b", "c"] * 10, dtype=dtype)
    for kw in ({}, {"unknown_as": "a"}):
        out = pmlkit.privatize(RR3, s, rng=2, **kw)
        assert out.dtype == dtype
        assert (out < "a").tolist() == [v != "a" for v in out.tolist()]


def test_arrow_dictionary_in_memory_is_released_without_its_dictionary():
    """In memory a dictionary array is released as a plain array: no dictionary at all
    (the values only), whatever the raw dictionary's order."""
    values = ["a", "c", "a", "b"] * 5
    outs = []
    for order in (["a", "c", "b"], ["b", "c", "a", "unused"]):
        arr = pa.DictionaryArray.from_arrays(
            pa.array([order.index(v) for v in values], pa.int8()), pa.array(order))
        assert arr.to_pylist() == values
        out = pmlkit.privatize(RR3, arr, rng=4)
        assert out.type == pa.string()
        outs.append(out.to_pylist())
    assert outs[0] == outs[1]


def test_polars_categorical_released_values_and_exports_do_not_depend_on_raw_order():
    """polars: a Categorical's dtype carries no per-column categories (polars >= 1.32:
    one global set, whatever the column); the released column stays a Categorical and
    its Arrow export's dictionary holds the released values only, in their order."""
    pl = pytest.importorskip("polars")
    values = ["c", "a", "b", "a"] * 5
    raw = pl.Series("x", values, dtype=pl.Categorical)
    out = pmlkit.privatize(RR3, raw, rng=6)
    assert out.dtype == raw.dtype
    released = out.to_list()
    assert out.to_arrow().dictionary.to_pylist() == list(dict.fromkeys(released))
    assert released == pmlkit.privatize(RR3, pl.Series("x", values), rng=6).to_list()


def test_polars_enum_keeps_its_declared_categories():
    pl = pytest.importorskip("polars")
    enum = pl.Enum(["b", "unused", "c", "a"])
    s = pl.Series("x", ["a", "b", "c"] * 10, dtype=enum)
    for kw in ({}, {"unknown_as": "a"}):
        out = pmlkit.privatize(RR3, s, rng=2, **kw)
        assert out.dtype == enum
    df = pmlkit.privatize(RR3, pl.DataFrame({"x": s}), columns="x", into="x_r", rng=2)
    assert df["x_r"].dtype == enum
