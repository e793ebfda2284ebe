"""Estimates from released values: labels to output codes, grouped estimates
(:func:`estimate_distribution`, :func:`output_codes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_count, fmt
from ..errors import DataError, ValidationError
from ..mechanism import Mechanism, as_matrix
from ._estimate import (
    EM_MAX_ITER,
    EM_TOL,
    DistributionEstimate,
    GroupedEstimates,
    check_confidence,
    check_intervals,
    check_method,
    estimate_from_counts,
)


def _counts_from_mapping(released: Mapping[Any, Any], mech: Mechanism) -> np.ndarray:
    from ..privatization import Encoder

    keys = list(released.keys())
    enc = Encoder(mech.output_labels)
    vals = np.empty(len(keys), dtype=object)
    vals[:] = keys
    codes = enc.encode_numpy(vals) if keys else np.zeros(0, dtype=np.intp)
    if codes is None:
        raise _unknown_error(enc, mech, "counts")
    c = np.zeros(mech.n_outputs)
    for k, code in zip(keys, codes, strict=True):
        v = released[k]
        try:
            cnt = check_count(v, f"count of {k!r}", minimum=0)
        except ValidationError:
            raise ValidationError(f"counts must be non-negative integers, got {fmt(v)} for "
                                  f"output {k!r}") from None
        c[code] += cnt
    return c


def _unknown_error(enc: Any, mech: Mechanism, what: str) -> DataError:
    labels = mech.output_labels
    shown = ", ".join(map(repr, labels[:20])) + (", ..." if len(labels) > 20 else "")
    parts = []
    if enc.unknown:
        common = enc.unknown.most_common()
        v, cnt = common[0]
        msg = (f"{what}: value {fmt(v)} appears in {cnt} row{'s' if cnt != 1 else ''} but is "
               f"not an output label of the mechanism (output labels: {shown})")
        if len(common) > 1:
            msg += "; other unknown values: " + ", ".join(
                f"{fmt(u)} ({k} row{'s' if k != 1 else ''})" for u, k in common[1:6])
        parts.append(msg)
    if enc.nulls:
        parts.append(f"{what}: {enc.nulls} row{'s hold' if enc.nulls != 1 else ' holds'} a "
                     "null/missing value, which a mechanism never outputs")
    return DataError("; ".join(parts) + "; check that the column and the mechanism match")


def _codes(values: Any, mech: Mechanism, what: str) -> np.ndarray:
    """Output indices of a released column (numpy, list, pandas, pyarrow, polars)."""
    from .._optional import loaded
    from ..privatization import Encoder

    enc = Encoder(mech.output_labels)
    # labels of several kinds (0, 1, '(missing)'): an Arrow column holds one type, so a
    # text column is matched by each label's text (as a CSV release writes them)
    enc.text_labels = enc.kind == "mixed"
    pa = loaded("pyarrow")
    pd = loaded("pandas")
    pl = loaded("polars")
    if pl is not None and isinstance(values, pl.Series):
        values = values.to_arrow()
        pa = loaded("pyarrow")
    parts: list[np.ndarray] = []
    if pa is not None and isinstance(values, pa.ChunkedArray | pa.Array):
        chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
        for ch in chunks:
            codes = enc.encode_arrow(ch)
            if codes is not None:
                parts.append(codes)
    elif pd is not None and isinstance(values, pd.Series | pd.Index):
        s = pd.Series(values)
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = s.cat.categories
            cc = enc.encode_numpy(np.asarray(cats, dtype=object))
            raw = s.cat.codes.to_numpy()
            if cc is not None and not (raw < 0).any():
                parts.append(cc[raw])  # the categories matched once, rows by code
            else:
                enc = Encoder(mech.output_labels)
                codes = enc.encode_numpy(s.to_numpy(dtype=object, na_value=None))
                if codes is not None:
                    parts.append(codes)
        else:
            if s.dtype.kind in "biuf" and not s.isna().any():
                arr = s.to_numpy()
            else:
                arr = s.to_numpy(dtype=object, na_value=None)
            codes = enc.encode_numpy(arr)
            if codes is not None:
                parts.append(codes)
    else:
        if isinstance(values, np.ndarray):
            arr = values
        else:
            arr = np.empty(len(values), dtype=object)
            arr[:] = list(values)
        if arr.ndim != 1:
            raise ValidationError(f"released must be 1-D, got an array of shape {arr.shape}")
        codes = enc.encode_numpy(arr)
        if codes is not None:
            parts.append(codes)
    if enc.failed:
        raise _unknown_error(enc, mech, what)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


def _column_of(table: Any, name: str, what: str) -> Any:
    from .._optional import loaded

    pd = loaded("pandas")
    pa = loaded("pyarrow")
    pl = loaded("polars")
    if pd is not None and isinstance(table, pd.DataFrame):
        if name not in table.columns:
            raise DataError(f"{what} {name!r} is not a column; available: "
                            f"{', '.join(map(repr, map(str, table.columns)))}")
        return table[name]
    if pa is not None and isinstance(table, pa.Table | pa.RecordBatch):
        if name not in table.column_names:
            raise DataError(f"{what} {name!r} is not a column; available: "
                            f"{', '.join(map(repr, table.column_names))}")
        return table.column(name)
    if pl is not None and isinstance(table, pl.DataFrame):
        if name not in table.columns:
            raise DataError(f"{what} {name!r} is not a column; available: "
                            f"{', '.join(map(repr, table.columns))}")
        return table[name]
    if pl is not None and isinstance(table, pl.LazyFrame):
        names = table.collect_schema().names()
        if name not in names:
            raise DataError(f"{what} {name!r} is not a column; available: "
                            f"{', '.join(map(repr, names))}")
        return table.select(name).collect().to_series()  # only this column is computed
    raise ValidationError(f"{what}={name!r} names a column, so released must be a pandas, "
                          f"pyarrow or polars table, got {type(table).__name__}")


def _is_table(x: Any) -> bool:
    from .._optional import loaded

    pd, pa, pl = (loaded(k) for k in ("pandas", "pyarrow", "polars"))
    return bool((pd is not None and isinstance(x, pd.DataFrame))
                or (pa is not None and isinstance(x, pa.Table | pa.RecordBatch))
                or (pl is not None and isinstance(x, pl.DataFrame | pl.LazyFrame)))


def _group_codes(by: Any) -> tuple[list[Any], np.ndarray]:
    """Group labels (sorted when possible) and the group index of every row."""
    import pandas as pd

    from .._optional import loaded

    pa = loaded("pyarrow")
    pl = loaded("polars")
    if pl is not None and isinstance(by, pl.Series):
        by = by.to_arrow()
    if pa is not None and isinstance(by, pa.ChunkedArray | pa.Array):
        by = by.to_pandas()
    if not isinstance(by, pd.Series | pd.Index | np.ndarray):
        arr = np.empty(len(by), dtype=object)
        arr[:] = list(by)
        by = arr
    s = pd.Series(by)
    if s.isna().any():
        k = int(s.isna().sum())
        raise DataError(f"by: {k} row{'s hold' if k != 1 else ' holds'} a null/missing group "
                        "value; fill or drop them explicitly first")
    codes, uniques = pd.factorize(s, sort=False)
    groups = list(uniques)
    try:
        order = sorted(range(len(groups)), key=lambda i: groups[i])
    except TypeError:
        order = list(range(len(groups)))
    remap = np.empty(len(groups), dtype=np.intp)
    remap[order] = np.arange(len(groups))
    return [groups[i].item() if isinstance(groups[i], np.generic) else groups[i]
            for i in order], remap[codes]


def estimate_distribution(released: Any, mechanism: ArrayLike | Mechanism, *,
                          method: str = "mle",
                          confidence: float = 0.95, column: str | None = None,
                          by: Any = None, tol: float = EM_TOL,
                          max_iter: int = EM_MAX_ITER, intervals: bool = True
                          ) -> DistributionEstimate | GroupedEstimates:
    """Estimate the distribution of the true values from a released (privatised) column.

    Parameters
    ----------
    released
        The released column: numpy array, list, pandas Series, pyarrow (Chunked)Array,
        polars Series; or a table (pandas DataFrame, pyarrow Table / RecordBatch, polars
        DataFrame / LazyFrame: only the named columns are collected) with ``column=``;
        or **output counts** as a mapping ``{output label: count}`` (labels not listed
        count 0).
    mechanism
        The :class:`pmlkit.Mechanism` the column was released through (its
        ``output_labels`` name the released values), or a row-stochastic matrix (labels
        ``0..M-1``).
    method
        ``"mle"`` (maximum likelihood over the simplex by EM, certified to ``tol``) or
        ``"inversion"`` (unbiased least squares; may leave the simplex). See the module
        docstring for the formulas and the interval methods.
    confidence
        Level of the intervals, in (0, 1).
    column
        The released column's name when ``released`` is a table.
    by
        A non-private column (its name in the table, or an array of the same length as the
        released column): one estimate per group. Returns :class:`GroupedEstimates`.
    tol, max_iter
        EM stopping rule: stop once the mean log-likelihood per record is certified within
        ``tol`` nats of its maximum, or after ``max_iter`` steps (``converged=False``).
    intervals
        ``False``: the point estimate only (``lower`` / ``upper`` NaN); the intervals cost
        about as much as the point estimate at large ``N`` and far more at small ``N``.

    Returns
    -------
    DistributionEstimate, or GroupedEstimates when ``by`` is given.

    Raises
    ------
    DataError
        A released value (or null) that is not an output label of the mechanism (naming
        it and its row count); an output the mechanism never produces; no records.
    ValidationError
        Bad ``method``, ``confidence``, ``tol``, ``max_iter``, counts; ``"inversion"`` on a
        mechanism of rank < N.

    Examples
    --------
    A released yes/no column through randomized response keeping the value with
    probability 0.75: 60% of released rows say ``yes``, so ``0.25 + 0.5 P(yes) = 0.6``:

    >>> from pmlkit import Mechanism, estimate_distribution
    >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]], ("no", "yes"), ("no", "yes"))
    >>> r = estimate_distribution(["yes"] * 60 + ["no"] * 40, mech)
    >>> [round(float(x), 3) for x in r.estimate]
    [0.3, 0.7]

    Output counts give the same estimate:

    >>> r2 = estimate_distribution({"yes": 60, "no": 40}, mech)
    >>> bool(np.allclose(r2.estimate, r.estimate))
    True
    """
    method = check_method(method)
    confidence = check_confidence(confidence)
    mech = mechanism if isinstance(mechanism, Mechanism) else Mechanism(as_matrix(mechanism))
    kw: dict[str, Any] = {"method": method, "confidence": confidence, "tol": tol,
                          "max_iter": max_iter, "intervals": check_intervals(intervals)}
    if isinstance(released, Mapping):
        if by is not None or column is not None:
            raise ValidationError("by= and column= need the released rows, not counts")
        return estimate_from_counts(_counts_from_mapping(released, mech), mech, **kw)
    by_name: str | None = None
    if _is_table(released):
        if column is None:
            raise ValidationError("released is a table: pass column= to name the released "
                                  "column")
        values = _column_of(released, column, "column")
        if isinstance(by, str):
            by_name = by
            by = _column_of(released, by, "by")
    else:
        if column is not None:
            _column_of(released, column, "column")  # raises: not a table
        values = released
        if isinstance(by, str):
            raise ValidationError(f"by={by!r} names a column, so released must be a table "
                                  "with column=; or pass the group values as an array")
    what = f"column {column!r}" if column is not None else "released"
    codes = _codes(values, mech, what)
    m = mech.n_outputs
    if by is None:
        return estimate_from_counts(np.bincount(codes, minlength=m), mech, **kw)
    groups, gidx = _group_codes(by)
    if gidx.shape[0] != codes.shape[0]:
        raise ValidationError(f"by has {gidx.shape[0]} values but the released column has "
                              f"{codes.shape[0]} rows")
    counts = np.bincount(gidx * m + codes, minlength=len(groups) * m).reshape(-1, m)
    ests = tuple(estimate_from_counts(counts[g], mech, **kw) for g in range(len(groups)))
    return GroupedEstimates(by_name, tuple(groups), ests)


def output_codes(values: Any, mechanism: Mechanism, what: str = "released") -> np.ndarray:
    """Index of each released value among ``mechanism.output_labels`` (numpy, list,
    pandas, pyarrow or polars column); raises :class:`~pmlkit.errors.DataError` naming
    a value that is not an output label (and its row count), or a null.

    Examples
    --------
    >>> from pmlkit import Mechanism
    >>> from pmlkit.inference import output_codes
    >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]], ("no", "yes"), ("no", "yes"))
    >>> output_codes(["yes", "no", "yes"], mech).tolist()
    [1, 0, 1]
    """
    return _codes(values, mechanism, what)
