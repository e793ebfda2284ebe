"""Dask support: lazy privatisation per partition and the empirical distribution of a
dask column. dask is imported only here, and only when a dask object is passed.

Randomness: one root :class:`~pmlkit.rng.RandomSource` is resolved per call and
``spawn(npartitions)`` gives every partition its own child stream (secure: HMAC-derived
AES keys; seeded: ``SeedSequence.spawn``). Each partition's task carries only its own
child (a pickled generator: with the secure default this sends a key to the worker, so
run sensitive jobs on a cluster whose connections are encrypted, as for the data
itself). A bad label or null fails the partition holding it; the count in the
message is over that partition. Streams are never reused: recomputing the lazy result
replays the same child streams, so the same output is produced, not a fresh draw that
could be averaged out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DataError, ValidationError
from ..mechanism import Mechanism
from ..rng import RandomSource

__all__ = ["dask_empirical_distribution", "privatize_dask"]


def _partition(part: Any, mech: Mechanism, child: RandomSource, columns: Any,
               into: Any) -> Any:
    import copy

    from ._core import _run

    # a private copy of the child's state: recomputing the task replays the same stream
    child = RandomSource(copy.deepcopy(child.generator), child.seeded, child.description)
    return _run(mech, part, child, columns=columns, into=into)[0]


def privatize_dask(mech: Mechanism, values: Any, source: RandomSource, *,
                   columns: str | Sequence[str] | None,
                   into: str | Sequence[str] | None) -> tuple[Any, tuple[str, ...]]:
    """Lazy privatisation of a dask Series or DataFrame (one child stream per partition).

    Returns ``(lazy result, privatised columns)``; divisions, index and untouched columns
    are kept."""
    import dask
    import dask.dataframe as dd

    from ._core import _columns_into

    if isinstance(values, dd.DataFrame):
        cols, targets = _columns_into(values, columns, into)
        meta = _partition(values._meta, mech, _meta_source(), cols, targets)
    elif isinstance(values, dd.Series):
        if columns is not None or into is not None:
            raise ValidationError("columns= and into= apply to DataFrames only; got a dask "
                                  "Series")
        cols, targets = [], []
        meta = _partition(values._meta, mech, _meta_source(), None, None)
    else:
        raise ValidationError(f"unsupported dask collection {type(values).__name__}; pass a "
                              "dask DataFrame or Series")
    children = source.spawn(values.npartitions)
    parts = values.to_delayed()
    fn = dask.delayed(_partition, pure=True)
    out_parts = [fn(p, mech, child, cols or None, targets or None) if cols else
                 fn(p, mech, child, None, None)
                 for p, child in zip(parts, children, strict=True)]
    result = dd.from_delayed(out_parts, meta=meta, divisions=values.divisions,
                             verify_meta=False)
    return result, tuple(cols)


def _meta_source() -> RandomSource:
    """A throwaway seeded stream used only to infer output dtypes on fake data."""
    from ..rng import resolve_rng

    return resolve_rng(0)


def dask_empirical_distribution(column: Any, categories: Sequence[Any] | None = None) -> Any:
    """Empirical distribution (eq. empiricaldistribution) of a dask Series.

    ``p_hat(x) = counts[x] / m`` with counts from a distributed ``value_counts`` (only
    the per-label counts travel to the client). Same rules as
    :func:`pmlkit.empirical_distribution`: nulls raise DataError with their count; with
    ``categories`` an unknown label raises DataError naming it and its count and unseen
    categories get count 0; without, labels are sorted when comparable.

    Returns
    -------
    pmlkit.EmpiricalDistribution
    """
    import dask.dataframe as dd

    from ..estimation import EmpiricalDistribution

    if not isinstance(column, dd.Series):
        raise ValidationError(f"column must be a dask Series, got {type(column).__name__}")
    import dask

    vc, nulls = dask.compute(column.value_counts(dropna=True), column.isna().sum())
    if int(nulls):
        raise DataError(f"samples contain {int(nulls)} null/NaN value(s); remove or label "
                        "them explicitly before estimating a distribution")
    labels = [v.item() if isinstance(v, np.generic) else v for v in vc.index]
    counts = np.asarray(vc.to_numpy(), dtype=np.int64)
    if not labels:
        raise ValidationError("samples must not be empty (m >= 1 samples are needed)")
    if categories is None:
        try:
            order = sorted(range(len(labels)), key=lambda i: labels[i])
        except TypeError:
            order = list(range(len(labels)))
        return EmpiricalDistribution.from_counts(counts[order], [labels[i] for i in order])
    cats = list(categories)
    pos = {c: i for i, c in enumerate(cats)}
    unknown = [(lab, int(c)) for lab, c in zip(labels, counts, strict=True) if lab not in pos]
    if unknown:
        lab, c = unknown[0]
        raise DataError(f"sample value {lab!r} ({c} row(s)) is not in categories "
                        f"{tuple(cats)!r}")
    full = np.zeros(len(cats), dtype=np.int64)
    for lab, c in zip(labels, counts, strict=True):  # loop over distinct labels only
        full[pos[lab]] = c
    return EmpiricalDistribution.from_counts(full, cats)
