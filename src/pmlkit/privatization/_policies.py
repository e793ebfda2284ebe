"""The missing-value and unknown-label policies of :func:`pmlkit.privatize` (``missing=``,
``unknown_as=``): the same words and the same rules as :func:`privatize_file` (its
:class:`~pmlkit.privatization.files.Policy` applies them, on Arrow arrays).

Each privatised column is read as an Arrow array, the policies are applied (``missing=
"category"``: a null becomes the label ``(missing)``; ``"keep"``: a null stays null in
the output, which releases whether a value is missing without protection;
``unknown_as=LABEL``: a value that is not an input label is released as ``LABEL``), the
column is privatised through the local engine and converted back to its container: a
numpy array, a list, a pandas Series (or DataFrame columns), a pyarrow Array or
ChunkedArray, a polars Series. Other containers are refused (files:
:func:`privatize_file`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DataError, ValidationError
from ..mechanism import Mechanism
from ..rng import RandomSource

__all__ = ["privatize_with_policies", "with_policy_hint"]


def with_policy_hint(exc: DataError, *, missing: str = "error", unknown_as: Any = None,
                     what: str | None = None) -> DataError:
    """A refusal of :func:`pmlkit.privatize` (nulls or values that are not input labels)
    with the options that release such rows, ``missing=`` and ``unknown_as=``, named
    (those already in use are not suggested again).

    Examples
    --------
    >>> msg = with_policy_hint(DataError("values: value 'x' appears in 1 row but is not "
    ...                                  "an input label; nothing was privatised"))
    >>> for part in str(msg).split("; ")[1:]:
    ...     print(part)
    pass unknown_as=LABEL to release such values as one of the input labels
    nothing was privatised
    """
    msg = str(exc)
    if what is not None:
        msg = msg.replace("values:", f"{what}:")
    hints = []
    if "null/missing" in msg and missing == "error":
        hints.append("or pass missing='keep' (left missing: whether a value is missing is "
                     "then released unprotected) or missing='category' (the label "
                     "'(missing)', with a mechanism designed with missing='category')")
    if "not an input label" in msg and unknown_as is None:
        hints.append("pass unknown_as=LABEL to release such values as one of the input "
                     "labels")
    tail = "; nothing was privatised"
    if hints and msg.endswith(tail):
        msg = msg[:-len(tail)] + "; " + "; ".join(hints) + tail
    return DataError(msg)


def privatize_with_policies(mech: Mechanism, values: Any, source: RandomSource, *,
                            columns: str | Sequence[str] | None,
                            into: str | Sequence[str] | None, missing: str,
                            unknown_as: Any) -> Any:
    """``values`` privatised through ``mech`` under the policies (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> from pmlkit.rng import resolve_rng
    >>> swap = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("no", "yes"),
    ...                         ("no", "yes"))
    >>> privatize_with_policies(swap, ["yes", None, "maybe"], resolve_rng(None),
    ...                         columns=None, into=None, missing="keep", unknown_as="no")
    ['no', None, 'yes']
    """
    from ._core import columns_into
    from .files import MISSING_LABEL, Policy, check_missing_policy, check_unknown_as

    missing = check_missing_policy(missing)
    unknown = check_unknown_as(unknown_as, {"values": mech})["values"]
    if missing == "category" and MISSING_LABEL not in mech.input_labels:
        raise ValidationError(
            f"missing='category' needs a mechanism with the input label {MISSING_LABEL!r}; "
            "design it from data whose missing values are a category (missing='category', "
            "pmlkit design --missing category)")
    policy = Policy(mech, None, missing, unknown)
    kind = _container(values)
    if kind == "dask":  # lazily, partition by partition, one child stream each
        from ._dask import privatize_dask

        return privatize_dask(mech, values, source, columns=columns, into=into,
                              missing=missing, unknown_as=unknown)[0]
    if kind == "pandas-frame":
        cols, targets = columns_into(values, columns, into)
        out = values.copy()
        for c, t in zip(cols, targets, strict=True):
            out[t] = _one(mech, values[c], "pandas", source, policy, f"column {c!r}").array
        return out
    if columns is not None or into is not None:
        raise ValidationError("columns= and into= apply to DataFrames only; got a "
                              f"{type(values).__name__}")
    return _one(mech, values, kind, source, policy, "values")


def _container(values: Any) -> str:
    """Which container ``values`` is (refused with the supported ones listed)."""
    import sys

    mod = type(values).__module__.split(".")[0]
    if mod == "dask":
        return "dask"
    if mod == "pandas":
        pd = sys.modules["pandas"]
        if isinstance(values, pd.DataFrame):
            return "pandas-frame"
        if isinstance(values, pd.Series):
            return "pandas"
    if mod == "pyarrow":
        pa = sys.modules["pyarrow"]
        if isinstance(values, pa.Array | pa.ChunkedArray):
            return "arrow"
    if mod == "polars":
        pl = sys.modules["polars"]
        if isinstance(values, pl.Series):
            return "polars"
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return "numpy"
    if isinstance(values, list | tuple):
        return "list"
    raise ValidationError(
        f"missing= and unknown_as= apply to 1-D numpy arrays, lists, pandas and dask Series "
        f"and DataFrames, pyarrow arrays and polars Series, got {type(values).__name__}; "
        "for files use privatize_file (pmlkit privatize --missing / --unknown-as)")


def _one(mech: Mechanism, values: Any, kind: str, source: RandomSource, policy: Any,
         what: str) -> Any:
    """One column: to Arrow, the policies, the release, back to its container."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._core import run_local

    if kind == "arrow":
        arr = values
    elif kind == "polars":
        arr = values.to_arrow()
    else:
        data = values if kind != "list" else np.asarray(values, dtype=object)
        try:
            arr = pa.array(data, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise DataError(f"{what}: missing= and unknown_as= need values of one type "
                            f"(text, integers, ...): {exc}") from None
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    prepared, keep = policy.prepare(arr)
    try:
        out = run_local(mech, prepared, source, columns=None, into=None, counts=False)[0]
    except DataError as exc:
        raise with_policy_hint(exc, missing=policy.missing, unknown_as=policy.unknown_as,
                               what=what) from None
    if keep is not None and pc.any(keep).as_py():
        out = pc.if_else(keep, pa.nulls(1, out.type)[0], out)
    if kind == "arrow":
        return out if not isinstance(values, pa.ChunkedArray) else pa.chunked_array([out])
    if kind == "polars":
        import polars as pl

        series = pl.from_arrow(out)
        assert isinstance(series, pl.Series)
        return series.rename(values.name)
    if kind == "pandas":
        import pandas as pd

        # positional: the released values in the input's row order, under its own index
        # (``pd.Series(series, index=...)`` would align on labels and lose every row of
        # an index other than 0..n-1)
        res = out.to_pandas().set_axis(values.index).rename(values.name)
        if keep is None and not isinstance(values.dtype, pd.CategoricalDtype):
            try:  # the column's own dtype where the released labels fit it
                res = res.astype(values.dtype)
            except (TypeError, ValueError):
                pass
        return res
    if kind == "list":
        return out.to_pylist()
    res = out.to_numpy(zero_copy_only=False)
    if keep is None and values.dtype.kind != "O":
        try:
            res = res.astype(values.dtype)
        except (TypeError, ValueError):
            pass
    return res
