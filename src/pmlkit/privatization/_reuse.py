"""The input-label counts of the data being privatised, for the warning that the data
released is the mechanism's reference sample (the test: :mod:`pmlkit._provenance`).

In memory (:func:`warn_if_reused`) the column is counted before it is privatised, only when
the mechanism records reference counts and the column's length is within
:data:`~pmlkit._provenance.REUSE_SIZE_RATIO` of ``m`` (else no test is made). Files are
counted while they are privatised (:class:`TallyingSampler`: one ``bincount`` of the input
indices of each batch), and tested once every batch has been drawn.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .._provenance import REUSE_SIZE_RATIO, reference_counts, warn_if_reference_counts
from ..errors import PMLError

__all__ = ["TallyingSampler", "input_counts", "warn_if_reused"]


class TallyingSampler:
    """An :class:`~pmlkit.sampler.AliasSampler` that also counts the input indices it
    draws for (``counts``, int64, one per input label); every other attribute is the
    sampler's own. Given ``mech``, it counts only when the mechanism records reference
    counts (:func:`pmlkit._provenance.reference_counts`; else ``counts`` stay 0).

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit.sampler import AliasSampler
    >>> s = TallyingSampler(AliasSampler([[1.0, 0.0], [0.0, 1.0]]))
    >>> s.draw(np.array([0, 1, 1]), np.random.default_rng(0)).tolist()
    [0, 1, 1]
    >>> s.counts.tolist()
    [1, 2]
    """

    def __init__(self, sampler: Any, mech: Any = None) -> None:
        self._sampler = sampler
        self.counts = np.zeros(int(sampler.n_inputs), dtype=np.int64)
        self._lock = threading.Lock()
        # counting costs a bincount per batch: only for a mechanism with counts to compare
        self._active = mech is None or reference_counts(mech) is not None

    def draw(self, codes: Any, generator: Any, **kw: Any) -> Any:
        out = self._sampler.draw(codes, generator, **kw)  # validates the codes
        idx = np.asarray(codes)
        if idx.size and self._active:
            remap = kw.get("remap")
            if remap is None:
                got = np.bincount(idx.astype(np.intp, copy=False), minlength=self.counts.size)
                add = got[:self.counts.size]
            else:
                table = np.asarray(remap, dtype=np.intp)
                per = np.bincount(idx.astype(np.intp, copy=False), minlength=table.size)
                add = np.zeros_like(self.counts)
                np.add.at(add, table, per[:table.size])
            with self._lock:
                self.counts += add
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sampler, name)


def _in_range(mech: Any, rows: int) -> bool:
    ref = reference_counts(mech)
    if ref is None:
        return False
    m = int(ref.sum())
    return rows > 0 and max(m, rows) <= REUSE_SIZE_RATIO * min(m, rows)


def input_counts(mech: Any, values: Any) -> np.ndarray | None:
    """Counts of the mechanism's input labels in a 1-D column (numpy, list/tuple, pandas
    Series or Categorical, pyarrow Array/ChunkedArray, polars Series), or ``None`` when a
    value is not a label or the container is not one of those (the privatisation itself
    reports bad values).

    Examples
    --------
    >>> import pmlkit
    >>> rr = pmlkit.Mechanism([[0.75, 0.25], [0.25, 0.75]], input_labels=("F", "M"))
    >>> input_counts(rr, ["M", "F", "M"]).tolist()
    [1, 2]
    """
    from ..sampler import Encoder

    n = len(mech.input_labels)
    enc = Encoder(mech.input_labels)
    mod = type(values).__module__.split(".")[0]
    try:
        if mod == "polars" and type(values).__name__ == "Series":
            values = values.to_arrow()
            mod = "pyarrow"
        if mod == "pyarrow":
            chunks = values.chunks if hasattr(values, "chunks") else [values]
            total = np.zeros(n, dtype=np.int64)
            for ch in chunks:
                codes = enc.encode_arrow(ch)
                if codes is None:
                    return None
                total += np.bincount(np.asarray(codes, dtype=np.intp), minlength=n)[:n]
            return total
        if mod == "pandas":
            cat = getattr(values, "cat", None) if hasattr(values, "dtype") and \
                str(values.dtype) == "category" else None
            if cat is not None or type(values).__name__ == "Categorical":
                codes = np.asarray(values.codes if cat is None else cat.codes)
                cats = values.categories if cat is None else cat.categories
                if (codes < 0).any():
                    return None
                per = np.bincount(codes.astype(np.intp), minlength=len(cats))
                used = np.flatnonzero(per)
                table = enc.encode_numpy(np.asarray(cats.to_numpy(dtype=object))[used])
                if table is None:
                    return None
                total = np.zeros(n, dtype=np.int64)
                np.add.at(total, np.asarray(table, dtype=np.intp), per[used])
                return total
            arr = np.asarray(values.to_numpy())
        elif isinstance(values, np.ndarray):
            arr = values
        elif isinstance(values, list | tuple):
            arr = np.empty(len(values), dtype=object)
            arr[:] = list(values)
        else:
            return None
        if arr.ndim != 1:
            return None
        codes = enc.encode_numpy(arr)
        if codes is None:
            return None
        return np.bincount(np.asarray(codes, dtype=np.intp), minlength=n)[:n].astype(np.int64)
    except (PMLError, ImportError, TypeError, ValueError, AttributeError):
        return None  # the privatisation itself names what is wrong with the values


def _columns(values: Any, columns: Any) -> list[tuple[str | None, Any]]:
    """(name, 1-D column) pairs of a table's ``columns``, or ``[(None, values)]``."""
    mod = type(values).__module__.split(".")[0]
    if mod == "dask" or type(values).__name__ == "LazyFrame":
        return []  # lazy: counting would compute them (len() of a dask Series does)
    if columns is None:
        return [(None, values)]
    cols = [columns] if isinstance(columns, str) else list(columns)
    out: list[tuple[str | None, Any]] = []
    for c in cols:
        try:
            if mod == "pandas" and getattr(values, "ndim", 1) == 2:
                col = values[c]
            elif mod == "polars" and type(values).__name__ == "DataFrame":
                col = values.get_column(c)
            elif mod == "pyarrow" and hasattr(values, "column"):
                col = values.column(c)
            else:
                continue
        except (KeyError, TypeError, ValueError, LookupError, AttributeError):
            continue  # the privatisation itself refuses a bad column
        if getattr(col, "ndim", 1) == 1:
            out.append((c, col))
    return out


def warn_if_reused(mech: Any, values: Any, columns: Any = None) -> bool:
    """PMLWarning when an in-memory column to privatise passes the reuse test against the
    mechanism's reference counts (:func:`pmlkit._provenance.warn_if_reference_counts`);
    lazy containers (polars LazyFrame, dask) are not counted. Returns whether it warned.

    Examples
    --------
    >>> import warnings
    >>> from pmlkit import design_from_samples
    >>> ref = ["F"] * 400 + ["M"] * 600
    >>> mech = design_from_samples(ref, 1.0, 0.05).mechanism
    >>> with warnings.catch_warnings(record=True):
    ...     warnings.simplefilter("always")
    ...     warn_if_reused(mech, ref[::-1]), warn_if_reused(mech, ["F", "M"] * 500)
    (True, False)
    """
    if reference_counts(mech) is None:
        return False
    warned = False
    for name, col in _columns(values, columns):
        try:
            rows = len(col)
        except TypeError:
            continue
        if not _in_range(mech, rows):
            continue
        counts = input_counts(mech, col)
        if counts is not None:
            what = None if name is None else f"column {name!r}"
            warned |= warn_if_reference_counts(mech, counts, what)
    return warned
