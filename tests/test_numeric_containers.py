"""`pmlkit.privatize` of a numeric mechanism on every container it takes: numpy arrays,
lists, tuples, pandas Series and DataFrames, pyarrow Arrays, ChunkedArrays, Tables and
RecordBatches.

Two oracles: a mechanism that (almost) never moves a value releases each value snapped to
the grid, computed here by hand (clip, then the nearest grid point); and every container
under one seed releases the values the numpy array releases (one draw for all of them),
in the container's own shape, with everything that was not released left as it was.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import pmlkit
from pmlkit.errors import DataError, ValidationError
from pmlkit.numeric.design import laplace_mechanism
from pmlkit.numeric.grid import NumericGrid

GRID = NumericGrid(0, 8, 2)  # 0, 2, 4, 6, 8
VALUES = np.array([-5, 0, 1, 3, 4, 7, 8, 20, 6, 2])


def _exact() -> pmlkit.Mechanism:
    # eps so large that every output is its own input but with probability < 1e-12
    return laplace_mechanism(GRID, [0.2] * 5, 60.0)


def _noisy() -> pmlkit.Mechanism:
    return laplace_mechanism(GRID, [0.2] * 5, 1.0)


def _snapped(values: np.ndarray) -> list[int]:
    """The grid point each value releases as under no noise, by hand: clipped to [0, 8],
    then the nearest multiple of 2, a tie (1, 3, 7 here) going to the larger point (the
    grid's documented rule)."""
    clipped = np.clip(values, 0, 8)
    return [int(2 * np.floor(v / 2 + 0.5)) for v in clipped]


def test_a_noiseless_mechanism_snaps_each_value_to_the_grid() -> None:
    m = _exact()
    assert np.min(np.diag(m.matrix)) > 1 - 1e-12
    out = pmlkit.privatize(m, VALUES, rng=1)
    assert out.tolist() == _snapped(VALUES)


@pytest.mark.parametrize("kind", ["list", "tuple", "series", "series_Int64", "pa_array",
                                  "pa_chunked", "float_array"])
def test_every_container_releases_what_the_numpy_array_releases(kind: str) -> None:
    m = _noisy()
    want = pmlkit.privatize(m, VALUES, rng=7).tolist()
    values: object = {
        "list": VALUES.tolist(),
        "tuple": tuple(VALUES.tolist()),
        "series": pd.Series(VALUES, index=list("abcdefghij"), name="age"),
        "series_Int64": pd.Series(VALUES, dtype="Int64", name="age"),
        "pa_array": pa.array(VALUES),
        "pa_chunked": pa.chunked_array([pa.array(VALUES[:3]), pa.array(VALUES[3:])]),
        "float_array": VALUES.astype(np.float64),
    }[kind]
    got = pmlkit.privatize(m, values, rng=7)
    if kind in ("list", "tuple"):
        assert isinstance(got, list) and got == want
    elif kind.startswith("series"):
        assert isinstance(got, pd.Series)
        assert got.index.equals(values.index) and got.name == "age"
        assert got.dtype == values.dtype
        assert [int(v) for v in got] == want
    elif kind.startswith("pa_"):
        assert isinstance(got, pa.Array) and pa.types.is_integer(got.type)
        assert got.to_pylist() == want
    else:
        assert got.dtype.kind == "f" and got.tolist() == [float(v) for v in want]


def test_a_dataframe_releases_its_columns_and_keeps_the_rest() -> None:
    m = _noisy()
    frame = pd.DataFrame({"age": VALUES, "note": list("abcdefghij"),
                          "score": pd.array(VALUES[::-1], dtype="Int64")},
                         index=np.arange(100, 110))
    before = frame.copy(deep=True)
    got = pmlkit.privatize(m, frame, columns=["age", "score"], into=["age_p", "score"],
                           rng=3)
    # the same draws as the two columns one after the other from one generator
    gen_order = pmlkit.privatize(m, np.concatenate([VALUES, VALUES[::-1]]), rng=3).tolist()
    assert got["age_p"].tolist() == gen_order[:10]
    assert got["score"].tolist() == gen_order[10:]
    assert got["score"].dtype == "Int64"
    pd.testing.assert_frame_equal(frame, before)  # the input is not touched
    pd.testing.assert_series_equal(got["age"], before["age"])
    pd.testing.assert_series_equal(got["note"], before["note"])
    assert got.index.equals(before.index)


@pytest.mark.parametrize("container", ["table", "batch"])
def test_an_arrow_table_releases_its_columns_and_keeps_the_rest(container: str) -> None:
    m = _noisy()
    table = pa.table({"age": VALUES, "note": list("abcdefghij")}).replace_schema_metadata(
        {"owner": "census"})
    if container == "batch":
        table = table.to_batches()[0]
    got = pmlkit.privatize(m, table, columns=["age"], into=["age_p"], rng=5)
    assert type(got) is type(table)
    assert got.schema.names == ["age", "note", "age_p"]
    assert got.column(2).to_pylist() == pmlkit.privatize(m, VALUES, rng=5).tolist()
    assert got.column(0).equals(table.column(0)) and got.column(1).equals(table.column(1))
    assert got.schema.metadata == {b"owner": b"census"}
    # in place: the column is replaced where it stood
    same = pmlkit.privatize(m, table, columns=["age"], rng=5)
    assert same.schema.names == ["age", "note"]
    assert same.column(0).to_pylist() == got.column(2).to_pylist()


def test_containers_refuse_what_they_cannot_release() -> None:
    m = _noisy()
    with pytest.raises(DataError, match="1 rows hold a missing value"):
        pmlkit.privatize(m, pa.array([1, None, 3]), rng=1)
    with pytest.raises(DataError, match="missing value"):
        pmlkit.privatize(m, pd.Series([1, None, 3], dtype="Int64"), rng=1)
    with pytest.raises(DataError, match="text, not numbers"):
        pmlkit.privatize(m, pa.array(["1", "2"]), rng=1)
    table = pa.table({"age": VALUES, "note": list("abcdefghij")})
    with pytest.raises(DataError, match="column 'sex' not found"):
        pmlkit.privatize(m, table, columns=["sex"], rng=1)
    with pytest.raises(DataError, match="into column 'note' already exists"):
        pmlkit.privatize(m, table, columns=["age"], into=["note"], rng=1)
    with pytest.raises(ValidationError, match="apply to DataFrames only"):
        pmlkit.privatize(m, VALUES, columns=["age"], rng=1)
    with pytest.raises(ValidationError, match="values must be a numpy array"):
        pmlkit.privatize(m, {"age": 1}, rng=1)


@pytest.mark.parametrize("policies", [{"unknown_as": 0}, {"missing": "keep"},
                                      {"missing": "category"}, {"missing": "keep",
                                                                "unknown_as": 8}])
def test_label_policies_never_bypass_the_grid(policies) -> None:
    # missing= / unknown_as= used to send a numeric mechanism down the label path: the
    # raw numbers matched against the grid points as labels, no clamp or round, an
    # off-grid value "unknown", and with unknown_as (which the error suggested) 20 was
    # released as if it were 0. The files refuse these words for a numeric column
    values = pd.Series([20.0, 1.0, 0.0])
    with pytest.raises(ValidationError, match=r"numeric"):
        pmlkit.privatize(_exact(), values, rng=1, **policies)
    with pytest.raises(ValidationError, match=r"numeric"):
        pmlkit.privatize(_exact(), pd.DataFrame({"age": values}), columns="age", rng=1,
                         **policies)
    # the default policy still releases every value on the grid
    assert pmlkit.privatize(_exact(), values, rng=1).tolist() == [8.0, 2.0, 0.0]
