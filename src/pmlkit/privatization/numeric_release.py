"""Releasing a numeric column as numbers: the release path of a mechanism on a
:class:`~pmlkit.numeric.grid.NumericGrid` (designed by :mod:`pmlkit.numeric.design`).

A numeric mechanism is a :class:`~pmlkit.Mechanism` whose input and output labels are the
grid's points and whose provenance records the grid (``details["grid"]``,
:meth:`NumericGrid.to_dict`). Its release is

    value --(clamp/round: NumericGrid.encode)--> grid code x --(alias draw of row x)-->
    output code y --(table lookup)--> grid value, written in the column's own type.

Every step is exact: the code of a value comes from exact comparisons with the half-way
points (:mod:`pmlkit.numeric.grid`), the output is one draw of the existing alias sampler
on integer codes (:class:`pmlkit.sampler.AliasSampler`: no ``x + float noise``), and the
released number is a grid point looked up by its code. So the released column is exactly
``W`` applied to the clamped and rounded column, and the mechanism's certificate is the
guarantee of what is written (clamping and rounding happen before the draw: they are a
function of the true value, which a PML guarantee about ``X`` covers).

Types: an integer column (int8..int64, uint*) needs an integer grid whose points all fit
its type (else the release is refused: it would change the column's type); a float column
gets the grid points as floats; a CSV column is text and gets the points' text.

Missing values (null, NaN) follow the policy of categorical columns: ``"error"`` refuses
them with their count, ``"keep"`` leaves them missing (whether a value is missing is then
released unprotected), ``"category"`` needs a ``"(missing)"`` label a numeric mechanism
does not have, and is refused.

The file path (:func:`pmlkit.privatize_file`) uses :class:`NumericPolicy` in place of the
categorical policy, and the manifest records, per numeric column, the grid and its policy
(:func:`manifest_entry`). How many raw values were clamped (below, above), rounded and
missing (:attr:`NumericPolicy.counts`) are statistics of the raw input, outside any PML
guarantee: they go to the operator (:attr:`pmlkit.privatization.files.FileReport.input_counts`,
the command line's terminal output), never into the manifest or the output's metadata.
The in-memory path (:func:`pmlkit.privatize`) goes through :func:`run_numeric`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import DataError, MechanismFileError, ValidationError
from ..numeric.grid import GridEncoding, NumericGrid
from ..rng import RandomSource
from ..sampler import AliasSampler, count_outputs
from ._core import columns_into, draw_in_chunks

__all__ = ["NumericPolicy", "check_grid_agrees", "grid_of", "grid_text", "manifest_entry",
           "numeric_arrow_type", "numeric_policies", "release_dtype", "run_numeric"]


def grid_of(mech: Any) -> NumericGrid | None:
    """The grid a numeric mechanism records, or ``None`` for any other mechanism.

    The recorded grid must be the mechanism's labels (inputs and outputs), else the file is
    refused: a release reads values by the grid and writes outputs by it.

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> m = laplace_mechanism(NumericGrid(0, 4, 1), [0.2] * 5, 1.0)
    >>> grid_of(m)
    NumericGrid(0, 4, 1)
    >>> import pmlkit
    >>> grid_of(pmlkit.Mechanism([[0.5, 0.5], [0.5, 0.5]])) is None
    True
    """
    prov = getattr(mech, "provenance", None)
    details = getattr(prov, "details", None)
    if not isinstance(details, Mapping):
        return None
    rec = details.get("grid")
    if not isinstance(rec, Mapping) or not str(getattr(prov, "designer", "")).startswith(
            "numeric."):
        return None
    try:
        grid = NumericGrid(rec["lower"], rec["upper"], rec["step"])
    except (KeyError, ValidationError) as exc:
        raise MechanismFileError(f"the mechanism records a numeric grid that cannot be read "
                                 f"({exc}); re-design it") from exc
    labels = grid.labels
    if tuple(mech.input_labels) != labels or tuple(mech.output_labels) != labels:
        raise MechanismFileError(
            f"the mechanism records the grid {grid_text(grid)} but its labels are not that "
            "grid's points; the file was altered: re-design it")
    return grid


def grid_text(grid: NumericGrid) -> str:
    """``LOWER:UPPER:STEP`` (the command-line form).

    Examples
    --------
    >>> grid_text(NumericGrid(18, 90, 1)), grid_text(NumericGrid("0", "1", "0.25"))
    ('18:90:1', '0.0:1.0:0.25')
    """
    d = grid.to_dict()
    return f"{d['lower']}:{d['upper']}:{d['step']}"


def check_grid_agrees(mech: Any, grid: NumericGrid | None, what: str) -> NumericGrid | None:
    """The mechanism's grid, checked against a grid the caller declared (``None``: none
    declared). A declared grid with a mechanism that has none, or a different one, is a
    :class:`ValidationError` naming both.

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> m = laplace_mechanism(NumericGrid(0, 4, 1), [0.2] * 5, 1.0)
    >>> check_grid_agrees(m, NumericGrid(0, 4, 1), "m.json")
    NumericGrid(0, 4, 1)
    >>> check_grid_agrees(m, NumericGrid(0, 8, 2), "m.json")
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: numeric grid 0:8:2 disagrees with the grid 0:4:1 ...
    """
    own = grid_of(mech)
    if grid is None:
        return own
    if own is None:
        raise ValidationError(f"numeric grid {grid_text(grid)} was given but {what} is not a "
                              "numeric mechanism (it records no grid); design it with "
                              "--numeric, or drop --numeric")
    if own != grid:
        raise ValidationError(f"numeric grid {grid_text(grid)} disagrees with the grid "
                              f"{grid_text(own)} recorded in {what}; drop --numeric (the file "
                              "carries its grid) or use the mechanism designed for it")
    return own


def release_dtype(grid: NumericGrid, dtype: Any, what: str) -> np.dtype[Any]:
    """The numpy type the released values are written in: the column's own ``dtype``,
    refused if the grid's points cannot be held in it exactly.

    Examples
    --------
    >>> release_dtype(NumericGrid(18, 90, 1), np.dtype("int32"), "age")
    dtype('int32')
    >>> release_dtype(NumericGrid(0, 1, 0.5), np.dtype("int64"), "age")
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: age is an integer column (int64) but the grid 0.0:1.0:0.5 ...
    """
    dt: np.dtype[Any] = np.dtype(dtype)
    if dt.kind in "iu":
        if not grid.is_integer:
            raise DataError(
                f"{what} is an integer column ({dt}) but the grid {grid_text(grid)} has "
                "points that are not integers: the released values would not fit its type; "
                "use a whole-number step, or cast the column to float first")
        info = np.iinfo(dt)
        v = grid.values
        if int(v[0]) < info.min or int(v[-1]) > info.max:
            raise DataError(f"{what} is {dt} but the grid {grid_text(grid)} has points outside "
                            f"{info.min}..{info.max}; cast the column to a wider type first")
        return dt
    if dt.kind == "f":
        return dt
    raise DataError(f"{what} holds {dt} values, not numbers; a numeric mechanism releases "
                    "integer or float columns")


def numeric_arrow_type(grid: NumericGrid, in_type: Any, what: str = "the column") -> Any:
    """The Arrow type of a released numeric column: the input's own type
    (:func:`release_dtype`); a text input (a CSV column read as text) keeps text.

    Examples
    --------
    >>> import pyarrow as pa
    >>> numeric_arrow_type(NumericGrid(18, 90, 1), pa.int16())
    DataType(int16)
    >>> numeric_arrow_type(NumericGrid(0, 1, 0.5), pa.float32())
    DataType(float)
    """
    import pyarrow as pa

    base = in_type.value_type if pa.types.is_dictionary(in_type) else in_type
    if pa.types.is_string(base) or pa.types.is_large_string(base):
        return base
    if pa.types.is_integer(base) or pa.types.is_floating(base):
        release_dtype(grid, base.to_pandas_dtype(), what)
        return base
    raise DataError(f"{what} is of type {base}, not numbers; a numeric mechanism releases "
                    "integer or float columns")


def _missing_mask(arr: NDArray[Any]) -> NDArray[np.bool_] | None:
    if arr.dtype.kind == "f":
        bad = np.isnan(arr)
        return bad if bad.any() else None
    return None


# -- files --------------------------------------------------------------------------------
class NumericPolicy:
    """How a numeric column of a file is read (in place of the categorical policy of
    :mod:`pmlkit.privatization.files`, with the same interface): CSV text -> numbers,
    the missing-value policy, then clamp/round to the grid. :meth:`prepare` returns the
    grid values (of the mechanism's label type) that the encoder maps to codes, and counts
    the values clamped, rounded and missing (:attr:`counts`: statistics of the raw input,
    reported to the operator, never written into the manifest).

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> from pmlkit.numeric.grid import NumericGrid
    >>> g = NumericGrid(0, 4, 1)
    >>> pol = NumericPolicy(laplace_mechanism(g, [0.2] * 5, 1.0), g, None, "error", None)
    >>> pol.counts["rows"], pol.unknown_rows
    (0, 0)
    >>> NumericPolicy(laplace_mechanism(g, [0.2] * 5, 1.0), g, None, "category", None)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: missing='category' (--missing category) needs a ...
    """

    def __init__(self, mech: Any, grid: NumericGrid, csv: Any, missing: str,
                 unknown_as: Any) -> None:
        import pyarrow as pa

        if unknown_as is not None:
            raise ValidationError(
                f"unknown_as (--unknown-as) does not apply to a numeric column: a value "
                f"outside the grid {grid_text(grid)} is clamped to its nearest end (and "
                f"counted), got {unknown_as!r}")
        if missing == "category":
            raise ValidationError(
                "missing='category' (--missing category) needs a '(missing)' label, which a "
                "numeric mechanism has not: use missing='error' or 'keep'")
        self.mech = mech
        self.grid = grid
        self.csv = csv
        self.missing = missing
        self.unknown_as = None
        self.in_type = pa.int64() if grid.is_integer else pa.float64()
        self.counts = {"rows": 0, "clamped_low": 0, "clamped_high": 0, "rounded": 0,
                       "missing": 0}

    # files.py resets ``unknown_rows`` before each attempt: the counts go with it
    @property
    def unknown_rows(self) -> int:
        """Always 0 (a numeric column has no unknown values); setting it resets
        :attr:`counts` (a new attempt at a file)."""
        return 0

    @unknown_rows.setter
    def unknown_rows(self, value: int) -> None:
        for k in self.counts:
            self.counts[k] = 0

    @property
    def label_set(self) -> Any:
        import pyarrow as pa

        return pa.array(np.asarray(self.grid.values))

    def from_text(self, arr: Any) -> Any:
        """CSV text -> numbers (strip, null markers); a cell that is no number is a
        :class:`DataError` naming it and its count."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from ..io import CsvOptions

        opts = self.csv or CsvOptions()
        if opts.strip_whitespace:
            arr = pc.utf8_trim_whitespace(arr)
        if opts.missing_texts:  # the empty cell and --na texts (io.CsvOptions)
            is_null = pc.is_in(arr, value_set=pa.array(list(opts.missing_texts),
                                                       type=arr.type))
            arr = pc.if_else(is_null, pa.scalar(None, type=arr.type), arr)
        for typ in ((pa.int64(), pa.float64()) if self.grid.is_integer else (pa.float64(),)):
            try:
                return pc.cast(arr, typ)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
        # the first text Arrow's cast refuses (the distinct texts when the column was read
        # dictionary-encoded); Python's float() is laxer (" 25", "1_000") and must not judge
        first: Any = None
        for t in arr.to_pylist():
            if t is None:
                continue
            try:
                pc.cast(pa.array([t], type=arr.type), pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                first = t
                break
        raise DataError(f"a numeric column holds {first!r}, which is not a number; fix the "
                        "data or declare the text as missing (--na TEXT)")

    def prepare(self, arr: Any) -> tuple[Any, Any]:
        """(grid values to encode, mask of rows kept missing or None); nulls stay nulls
        under ``missing="error"`` (the encoder refuses them with their count)."""
        import pyarrow as pa

        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        t = arr.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            raise DataError(f"a numeric column must hold numbers, this one is {t}")
        release_dtype(self.grid, t.to_pandas_dtype(), "the column")
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        filler = pa.scalar(0, type=t)
        vals = np.asarray(arr.fill_null(filler).to_numpy(zero_copy_only=False))
        nan = _missing_mask(vals)
        if nan is not None:
            valid &= ~nan
            vals = np.where(nan, 0, vals)
        missing = ~valid
        n_missing = int(missing.sum())
        enc = self.grid.encode(vals[valid])
        codes = np.zeros(vals.shape[0], dtype=np.int64)
        codes[valid] = enc.codes
        c = self.counts
        c["rows"] += int(enc.codes.size)
        c["clamped_low"] += enc.clamped_low
        c["clamped_high"] += enc.clamped_high
        c["rounded"] += enc.rounded
        c["missing"] += n_missing
        out_vals = np.asarray(self.grid.values)[codes]
        keep_mask = None
        if n_missing and self.missing == "keep":
            keep_mask = pa.array(missing)
            return pa.array(out_vals), keep_mask
        return pa.array(out_vals, mask=missing if n_missing else None), keep_mask


def manifest_entry(policy: Any, done: bool | None = None) -> dict[str, Any]:
    """The manifest's record of a numeric column: the grid and its policy. Nothing about
    the raw values: how many were clamped, rounded or missing (:attr:`NumericPolicy.counts`)
    is a statistic of the input that no guarantee covers, for the operator only.
    ``done`` is deprecated and has no effect (it added those counts).

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> g = NumericGrid(0, 4, 1)
    >>> pol = NumericPolicy(laplace_mechanism(g, [0.2] * 5, 1.0), g, None, "error", None)
    >>> sorted(manifest_entry(pol)["numeric"])
    ['grid', 'policy']
    """
    if done is not None:
        from .._deprecation import warn_deprecated

        warn_deprecated("manifest_entry: done= is deprecated and has no effect: the "
                        "manifest no longer holds counts of the raw input")
    return {"numeric": {"grid": policy.grid.to_dict(),
                        "policy": policy.grid.to_dict()["policy"]}}


def numeric_policies(mechs: Mapping[str, Any], csv: Any, missing: str | Mapping[str, str],
                     unknown: Mapping[str, Any]) -> dict[str, NumericPolicy]:
    """A :class:`NumericPolicy` for each numeric column of ``mechs`` (the others are
    left out); ``missing`` is one policy for all or one per column.

    Examples
    --------
    >>> import pmlkit
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> from pmlkit.numeric.grid import NumericGrid
    >>> mechs = {"age": laplace_mechanism(NumericGrid(0, 4, 1), [0.2] * 5, 1.0),
    ...          "sex": pmlkit.Mechanism([[0.7, 0.3], [0.3, 0.7]])}
    >>> sorted(numeric_policies(mechs, None, "error", {}))
    ['age']
    """
    out = {}
    for c, m in mechs.items():
        grid = grid_of(m)
        if grid is not None:
            out[c] = NumericPolicy(m, grid, csv,
                                   missing if isinstance(missing, str) else missing[c],
                                   unknown.get(c))
    return out


# -- in memory ----------------------------------------------------------------------------
def _release_array(grid: NumericGrid, sampler: AliasSampler, vals: NDArray[Any],
                   gen: np.random.Generator, what: str
                   ) -> tuple[NDArray[Any], NDArray[np.intp], GridEncoding]:
    dt = release_dtype(grid, vals.dtype, what)
    nan = _missing_mask(vals)
    if nan is not None:
        raise DataError(f"{what}: {int(nan.sum())} rows hold a missing value (NaN); drop or "
                        "impute them first (files: missing='keep' keeps them missing)")
    enc = grid.encode(vals)
    codes = np.asarray(enc.codes)
    idx = np.empty(codes.shape[0], dtype=np.intp)
    draw_in_chunks(sampler, codes, gen, idx)  # (chunks of CHUNK_ROWS: the words of one pass)
    out = np.asarray(grid.values)[idx].astype(dt)
    return out, idx, enc


def _as_numbers(values: Any, what: str) -> NDArray[Any]:
    arr = np.asarray(values)
    if arr.dtype == object:
        if any(v is None for v in arr.tolist()):
            n = sum(v is None for v in arr.tolist())
            raise DataError(f"{what}: {n} rows hold a missing value (None); drop or impute "
                            "them first")
        try:
            arr = np.asarray(arr.tolist())
        except (TypeError, ValueError) as exc:
            raise DataError(f"{what} must hold numbers for a numeric mechanism") from exc
    if arr.ndim != 1:
        raise ValidationError(f"values must be 1-D, got an array of shape {arr.shape}")
    if arr.dtype.kind not in "iuf":
        raise DataError(f"{what} holds {arr.dtype} values, not numbers; a numeric mechanism "
                        "releases integer or float values")
    return arr


def _series_values(s: Any, what: str) -> NDArray[Any]:
    import pandas as pd

    if s.isna().any():
        raise DataError(f"{what}: {int(s.isna().sum())} rows hold a missing value; drop or "
                        "impute them first (files: missing='keep' keeps them missing)")
    dt = s.dtype
    if isinstance(dt, pd.api.extensions.ExtensionDtype):
        numpy_dt = getattr(dt, "numpy_dtype", None)
        if numpy_dt is None:
            raise DataError(f"{what} holds {dt} values, not numbers")
        return np.asarray(s.to_numpy(dtype=numpy_dt))
    return _as_numbers(s.to_numpy(), what)


def run_numeric(mech: Any, grid: NumericGrid, values: Any, source: RandomSource, *,
                columns: Any, into: Any, counts: bool = True
                ) -> tuple[Any, tuple[str, ...], int | None, NDArray[np.int64] | None]:
    """:func:`pmlkit.privatize` of a numeric mechanism: numpy arrays, lists/tuples, pandas
    Series and DataFrames (``columns``/``into``), pyarrow Arrays, ChunkedArrays and Tables.
    Returns (result, privatised columns, rows, output counts), as the local engine.

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> from pmlkit.rng import resolve_rng
    >>> g = NumericGrid(0, 4, 1)
    >>> m = laplace_mechanism(g, [0.2] * 5, 30.0)   # (almost) no noise
    >>> out, _, rows, _ = run_numeric(m, g, np.array([-3, 1, 2, 9]), resolve_rng(1),
    ...                               columns=None, into=None)
    >>> out.tolist(), out.dtype, rows
    ([0, 1, 2, 4], dtype('int64'), 4)
    """
    from .._optional import loaded

    sampler = AliasSampler(mech.matrix)
    gen = source.generator
    n_out = int(mech.n_outputs)
    pd = loaded("pandas")
    pa = loaded("pyarrow")
    mod = type(values).__module__.split(".")[0]
    if mod in ("dask", "polars"):
        raise ValidationError(
            f"a numeric mechanism releases numpy arrays, lists, pandas and pyarrow "
            f"containers, got a {mod} {type(values).__name__}; convert it first "
            "(.to_pandas() / .compute()) or use pmlkit.privatize_file")

    if pd is not None and isinstance(values, pd.DataFrame):
        cols, targets = columns_into(values, columns, into)
        out = values.copy()
        total = np.zeros(n_out, dtype=np.int64)
        recs = {}
        for c, t in zip(cols, targets, strict=True):
            s = values[c]
            rel, idx, _ = _release_array(grid, sampler, _series_values(s, f"column {c!r}"),
                                         gen, f"column {c!r}")
            out[t] = pd.Series(rel, index=values.index, name=t).astype(
                s.dtype if isinstance(s.dtype, pd.api.extensions.ExtensionDtype)
                else rel.dtype)
            total += count_outputs(idx, n_out)
            recs[t] = {"column": c, **manifest_entry(_Gridded(grid))}
        out.attrs["pmlkit_numeric"] = recs
        return out, tuple(cols), len(values), total
    if pa is not None and isinstance(values, pa.Table | pa.RecordBatch):
        from ._core import check_column_names

        cols, targets = check_column_names(columns, into)
        names = list(values.schema.names)
        arrays = list(values.columns)
        total = np.zeros(n_out, dtype=np.int64)
        for c, t in zip(cols, targets, strict=True):
            if c not in names:
                raise DataError(f"column {c!r} not found; available columns: "
                                f"{', '.join(map(repr, names))}")
            if t != c and t in names:
                raise DataError(f"into column {t!r} already exists; choose a new name")
            rel, idx = _release_arrow(grid, sampler, values.column(names.index(c)), gen,
                                      f"column {c!r}")
            total += count_outputs(idx, n_out)
            if t in names:
                arrays[names.index(t)] = rel
            else:
                names.append(t)
                arrays.append(rel)
        kind = pa.Table if isinstance(values, pa.Table) else pa.RecordBatch
        res = kind.from_arrays(arrays, names=names)
        if values.schema.metadata:
            res = res.replace_schema_metadata(values.schema.metadata)
        return res, tuple(cols), len(values), total
    if columns is not None or into is not None:
        raise ValidationError("columns= and into= apply to DataFrames only (pandas "
                              "DataFrame, Arrow Table/RecordBatch for a numeric mechanism)")
    if pd is not None and isinstance(values, pd.Series):
        rel, idx, _ = _release_array(grid, sampler, _series_values(values, "values"), gen,
                                     "values")
        res = pd.Series(rel, index=values.index, name=values.name)
        if isinstance(values.dtype, pd.api.extensions.ExtensionDtype):
            res = res.astype(values.dtype)
        return res, (), len(values), count_outputs(idx, n_out) if counts else None
    if pa is not None and isinstance(values, pa.Array | pa.ChunkedArray):
        rel, idx = _release_arrow(grid, sampler, values, gen, "values")
        return rel, (), len(values), count_outputs(idx, n_out) if counts else None
    if isinstance(values, np.ndarray):
        rel, idx, _ = _release_array(grid, sampler, _as_numbers(values, "values"), gen,
                                     "values")
        return rel, (), len(values), count_outputs(idx, n_out) if counts else None
    if isinstance(values, list | tuple):
        rel, idx, _ = _release_array(grid, sampler, _as_numbers(list(values), "values"), gen,
                                     "values")
        return rel.tolist(), (), len(values), count_outputs(idx, n_out) if counts else None
    raise ValidationError(
        "values must be a numpy array, list, pandas Series/DataFrame or pyarrow "
        f"Array/ChunkedArray/Table for a numeric mechanism, got {type(values).__name__}")


class _Gridded:
    """A policy-like view of a grid (for :func:`manifest_entry`)."""

    def __init__(self, grid: NumericGrid) -> None:
        self.grid = grid


def _release_arrow(grid: NumericGrid, sampler: AliasSampler, arr: Any,
                   gen: np.random.Generator, what: str) -> tuple[Any, NDArray[np.intp]]:
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        raise DataError(f"{what}: {arr.null_count} rows hold a missing value (null); drop or "
                        "impute them first (files: missing='keep' keeps them missing)")
    typ = numeric_arrow_type(grid, arr.type, what)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        raise DataError(f"{what} holds text, not numbers; cast it to numbers first")
    vals = np.asarray(arr.to_numpy(zero_copy_only=False))
    rel, idx, _ = _release_array(grid, sampler, vals, gen, what)
    return pa.array(rel, type=typ), idx
