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

from .._provenance import warn_if_reference_file
from ..errors import DataError, ValidationError
from ..mechanism import Mechanism
from ..rng import RandomSource

__all__ = ["dask_empirical_distribution", "privatize_dask"]


def _partition(part: Any, mech: Mechanism, child: RandomSource, columns: Any,
               into: Any) -> Any:
    import copy

    from ._core import _run

    # a private copy of the child's state: recomputing the task replays the same stream
    child = copy.deepcopy(child)  # a task child (RandomSource._for_task) keeps its key
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
    children = [c._for_task() for c in source.spawn(values.npartitions)]
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


def _pandas_csv_kwargs(csv: Any) -> dict[str, Any]:
    if csv is None:
        return {}
    kw: dict[str, Any] = {"sep": csv.delimiter, "skiprows": csv.skip_rows or None,
                          "skipinitialspace": csv.strip_whitespace}
    if csv.column_names is not None:
        kw["header"] = None
        kw["names"] = list(csv.column_names)
    if csv.null_values is not None:
        kw["na_values"] = list(csv.null_values)
        kw["keep_default_na"] = False
    return {k: v for k, v in kw.items() if v is not None}


def privatize_file_dask(mechanism: Any, input: Any, output: Any,
                        columns: str | Sequence[str], *, into: Any = None, rng: Any = None,
                        overwrite: bool = False, csv: Any = None, scheduler: str | None = None,
                        progress: bool = False) -> Any:
    """Privatise columns of CSV/Parquet file(s) with Dask; the output is a folder.

    ``output`` ending in ``.csv`` gives one CSV file per partition (with a header), else a
    Parquet dataset. Written to a temporary folder next to ``output`` and renamed into place
    when complete (nothing partial is left on failure); ``<output>.pmlkit.json`` records the
    run like :func:`pmlkit.privatization.privatize_file`. ``scheduler``: a
    ``distributed`` scheduler address, or ``None`` for a LocalCluster on 127.0.0.1 started
    and closed here. ``progress``: distributed's progress bar on stderr. Returns a
    :class:`pmlkit.privatization.files.FileReport`.
    """
    import json
    import os
    import shutil
    import tempfile
    from pathlib import Path

    import dask.dataframe as dd
    import distributed

    from ..io import expand_inputs, file_format
    from ..rng import resolve_rng
    from ._core import _mech_digest, as_mechanism_object
    from .files import MANIFEST_SUFFIX, FileReport, _same_file

    mech = as_mechanism_object(mechanism)
    inputs = expand_inputs(input)
    out = Path(output)
    fmts = {file_format(p) for p in inputs}
    if len(fmts) > 1:
        raise ValidationError("all inputs must have the same format with --engine dask, got "
                              f"{sorted(fmts)}")
    for inp in inputs:
        if _same_file(inp, out) or inp.resolve().is_relative_to(out.resolve()):
            raise DataError(f"output {str(out)!r} would overwrite the input {str(inp)!r}")
    if out.exists() and not overwrite:
        raise DataError(f"output {str(out)!r} already exists; pass overwrite=True "
                        "(--overwrite) to replace it")
    if not out.parent.is_dir():
        raise DataError(f"output folder {str(out.parent)!r} does not exist")
    cols = [columns] if isinstance(columns, str) else list(columns)
    source = resolve_rng(rng)
    paths = [str(p) for p in inputs]
    for p in inputs:  # a PMLWarning if an input is the mechanism's reference file
        warn_if_reference_file(mech, p)
    if fmts == {"parquet"}:
        ddf = dd.read_parquet(paths)
    else:
        ddf = dd.read_csv(paths, **_pandas_csv_kwargs(csv))
    missing = [c for c in cols if c not in ddf.columns]
    if missing:
        raise DataError(f"column {missing[0]!r} not found in {paths[0]!r}; available "
                        f"columns: {', '.join(map(repr, list(ddf.columns)))}")
    lazy, _ = privatize_dask(mech, ddf, source, columns=cols, into=into)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    cluster = client = None
    try:
        if scheduler is None:
            cluster = distributed.LocalCluster(host="127.0.0.1", processes=True,
                                               n_workers=min(2, os.cpu_count() or 1),
                                               threads_per_worker=1, dashboard_address=None)
            client = distributed.Client(cluster)
        else:
            client = distributed.Client(scheduler)
        if out.name.lower().endswith(".csv"):
            task = lazy.to_csv(str(tmp / "part-*.csv"), index=False, compute=False)
        else:
            task = lazy.to_parquet(str(tmp), write_index=False, compute=False)
        futures = client.compute(task)  # to_csv gives a list of tasks, to_parquet one
        futures = futures if isinstance(futures, list) else [futures]
        if progress:  # distributed's text bar writes to stdout: keep stdout for --json
            import contextlib
            import sys

            with contextlib.redirect_stdout(sys.stderr):
                distributed.progress(futures)
            print(file=sys.stderr)
        client.gather(futures)
        if out.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old",
                                          dir=out.parent))
            os.replace(out, trash / out.name)
            os.replace(tmp, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(tmp, out)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    rows = -1
    if not out.name.lower().endswith(".csv"):
        import pyarrow.parquet as pq

        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(out.glob("*.parquet")))
    targets = cols if into is None else ([into] if isinstance(into, str) else list(into))
    # one entry for the whole dataset (rows = -1 when not cheaply known: CSV output)
    report = FileReport(((", ".join(paths), str(out), rows),), tuple(cols), tuple(targets),
                        source.seeded, source.description, _mech_digest(mech))
    man = out.with_name(out.name + MANIFEST_SUFFIX)
    man.write_text(json.dumps({**report.to_dict(), "engine": "dask"}, indent=2) + "\n",
                   encoding="utf-8")
    return report
