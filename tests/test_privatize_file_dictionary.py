"""Parquet dictionary (categorical) columns through ``privatize_file``, and the one writer.

* A dictionary column privatised comes back as a dictionary column (a pandas categorical
  stays categorical): its type is ``dictionary<values=..., indices=...>`` as in the input,
  its values lie in the mechanism's output labels, and every other column is the input's,
  value for value and type for type. The released values are the ones a plain text
  column of the same values receives under the same seed (the dictionary is only the
  encoding of the written column).
* ``engine="polars"`` is deprecated: it warns, and pyarrow writes the values and row
  groups ``engine="pyarrow"`` writes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit.errors import ValidationError

LABELS = ("F", "M", "X")
MECH = pmlkit.Mechanism(np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]),
                        LABELS, LABELS)
N = 4000


def _table(dictionary: bool) -> pa.Table:
    g = np.random.default_rng(3)
    sex = pa.array(np.array(LABELS, dtype=object)[g.integers(0, 3, N)], pa.string())
    if dictionary:
        sex = sex.dictionary_encode()
    return pa.table({"id": pa.array(np.arange(N)), "sex": sex,
                     "x": pa.array(g.normal(size=N)),
                     "note": pa.array([f"n{i % 17}" for i in range(N)]).dictionary_encode()})


@pytest.mark.parametrize("into", [None, "sex_released"])
def test_dictionary_column_comes_back_dictionary_encoded(tmp_path: Path,
                                                         into: str | None) -> None:
    src, plain = tmp_path / "in.parquet", tmp_path / "plain.parquet"
    pq.write_table(_table(True), src, row_group_size=1000)
    pq.write_table(_table(False), plain, row_group_size=1000)
    out, out_plain = tmp_path / "out.parquet", tmp_path / "out_plain.parquet"
    pmlkit.privatize_file(MECH, src, out, "sex", into=into, keep_raw=True, rng=11,
                          batch_rows=700)
    pmlkit.privatize_file(MECH, plain, out_plain, "sex", into=into, keep_raw=True, rng=11,
                          batch_rows=700)
    got, inp = pq.read_table(out), pq.read_table(src)
    target = into or "sex"
    typ = got.schema.field(target).type
    assert pa.types.is_dictionary(typ)
    assert typ.index_type == inp.schema.field("sex").type.index_type
    assert pa.types.is_string(typ.value_type)
    released = got.column(target).to_pylist()
    assert len(released) == N and set(released) <= set(LABELS)
    # the same draws as a plain text column of the same values under the same seed
    assert released == pq.read_table(out_plain).column(target).to_pylist()
    for name in inp.column_names:  # the other columns: the input's values and types
        if name != target:
            assert got.column(name).equals(inp.column(name)), name
    # pandas reads it back as a categorical
    frame = pd.read_parquet(out)
    assert isinstance(frame[target].dtype, pd.CategoricalDtype)


def test_categorical_with_missing_kept(tmp_path: Path) -> None:
    """``missing="keep"``: a missing value stays missing in the dictionary column."""
    sex = pd.Categorical(["F", None, "M", "X", None, "F"] * 50, categories=list(LABELS))
    src = tmp_path / "in.parquet"
    pd.DataFrame({"sex": sex, "id": np.arange(300)}).to_parquet(src)
    out = tmp_path / "out.parquet"
    pmlkit.privatize_file(MECH, src, out, "sex", missing="keep", rng=2)
    got = pq.read_table(out).column("sex")
    assert pa.types.is_dictionary(got.type)
    values = got.to_pylist()
    nulls = [v is None for v in pq.read_table(src).column("sex").to_pylist()]
    assert [v is None for v in values] == nulls
    assert {v for v in values if v is not None} <= set(LABELS)


def test_engine_polars_is_deprecated_and_writes_what_pyarrow_writes(tmp_path: Path) -> None:
    src = tmp_path / "in.parquet"
    pq.write_table(_table(False), src, row_group_size=1000)
    outs = {e: tmp_path / f"{e}.parquet" for e in ("pyarrow", "polars")}
    pmlkit.privatize_file(MECH, src, outs["pyarrow"], "sex", rng=5, manifest=False)
    with pytest.warns(DeprecationWarning, match="engine='polars' is deprecated") as caught:
        pmlkit.privatize_file(MECH, src, outs["polars"], "sex", rng=5, manifest=False,
                              engine="polars")
    assert caught[0].filename == __file__  # the caller's line, not pmlkit's
    got, ref = pq.read_table(outs["polars"]), pq.read_table(outs["pyarrow"])
    assert got.equals(ref)  # (the record's seed commitment is salted: not the bytes)
    got_md, ref_md = (pq.ParquetFile(outs[e]).metadata for e in ("polars", "pyarrow"))
    assert [got_md.row_group(i).num_rows for i in range(got_md.num_row_groups)] == \
        [ref_md.row_group(i).num_rows for i in range(ref_md.num_row_groups)]


def test_bad_engine_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"engine must be one of .*'spark'"):
        pmlkit.privatize_file(MECH, "in.parquet", "o.parquet", "sex", engine="spark")
