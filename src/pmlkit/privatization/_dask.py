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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._provenance import warn_if_reference_counts
from .._validation import user_path
from ..errors import DataError, ValidationError
from ..mechanism import Mechanism
from ..rng import RandomSource

__all__ = ["dask_empirical_distribution", "privatize_dask"]


def _partition(part: Any, mech: Mechanism, child: RandomSource, columns: Any,
               into: Any, missing: str = "error", unknown_as: Any = None) -> Any:
    import copy

    from ._core import run_local

    # a private copy of the child's state: recomputing the task replays the same stream
    child = copy.deepcopy(child)  # a task child (RandomSource.for_task) keeps its key
    if missing != "error" or unknown_as is not None:  # the policies of privatize_file
        from ._policies import privatize_with_policies

        return privatize_with_policies(mech, part, child, columns=columns, into=into,
                                       missing=missing, unknown_as=unknown_as)
    try:
        return run_local(mech, part, child, columns=columns, into=into)[0]
    except DataError as exc:  # raised at compute time: name the options here
        from ._policies import with_policy_hint

        raise with_policy_hint(exc) from exc


def privatize_dask(mech: Mechanism, values: Any, source: RandomSource, *,
                   columns: str | Sequence[str] | None,
                   into: str | Sequence[str] | None, missing: str = "error",
                   unknown_as: Any = None) -> tuple[Any, tuple[str, ...]]:
    """Lazy privatisation of a dask Series or DataFrame (one child stream per partition).

    Returns ``(lazy result, privatised columns)``; divisions, index and untouched columns
    are kept. ``missing`` and ``unknown_as`` are the policies of
    :func:`pmlkit.privatize` (checked by the caller), applied in every partition.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import dask.dataframe as dd
    >>> import pmlkit
    >>> from pmlkit.privatization._core import as_mechanism_object
    >>> from pmlkit.rng import resolve_rng
    >>> ddf = dd.from_pandas(pd.DataFrame({"x": [0, 1, 1, 0]}), npartitions=2)
    >>> lazy, cols = privatize_dask(as_mechanism_object(np.eye(2)[::-1]), ddf,
    ...                             resolve_rng(None), columns="x", into="x_private")
    >>> cols, lazy.compute()["x_private"].tolist()
    (('x',), [1, 0, 0, 1])
    """
    import importlib

    import dask.dataframe as dd

    from ._core import columns_into

    dask: Any = importlib.import_module("dask")  # untyped library

    if isinstance(values, dd.DataFrame):
        cols, targets = columns_into(values, columns, into)
        meta = _partition(values._meta, mech, _meta_source(), cols, targets, missing,
                          unknown_as)
    elif isinstance(values, dd.Series):
        if columns is not None or into is not None:
            raise ValidationError("columns= and into= apply to DataFrames only; got a dask "
                                  "Series")
        cols, targets = [], []
        meta = _partition(values._meta, mech, _meta_source(), None, None, missing,
                          unknown_as)
    else:
        raise ValidationError(f"unsupported dask collection {type(values).__name__}; pass a "
                              "dask DataFrame or Series")
    children = [c.for_task() for c in source.spawn(values.npartitions)]
    parts = values.to_delayed()
    fn = dask.delayed(_partition, pure=True)
    out_parts = [fn(p, mech, child, cols or None, targets or None, missing, unknown_as)
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

    Examples
    --------
    >>> import pandas as pd
    >>> import dask.dataframe as dd
    >>> col = dd.from_pandas(pd.Series(["a", "b", "b", "b"]), npartitions=2)
    >>> dist = dask_empirical_distribution(col)
    >>> dist.categories, dist.counts.tolist(), dist.p.tolist()
    (('a', 'b'), [1, 3], [0.25, 0.75])
    """
    import dask.dataframe as dd

    from ..estimation import empirical_from_counts

    if not isinstance(column, dd.Series):
        raise ValidationError(f"column must be a dask Series, got {type(column).__name__}")
    import importlib

    dask: Any = importlib.import_module("dask")  # untyped library
    vc, nulls = dask.compute(column.value_counts(dropna=True), column.isna().sum())
    labels = [v.item() if isinstance(v, np.generic) else v for v in vc.index]
    return empirical_from_counts(labels, vc.to_numpy(), categories, nulls=int(nulls))


def _dask_piece(mechs: dict[str, Mechanism], inp: str, piece: tuple[int, int] | None, part: str,
                cols: list[str], targets: list[str], child: RandomSource, csv: Any,
                missing: dict[str, str], unknown_as: dict[str, Any], meta: dict[str, str],
                compression: str | None, batch_rows: int, drop: Sequence[str] = ()
                ) -> tuple[int, str, int, dict[str, dict[str, int]], dict[str, np.ndarray],
                           dict[str, Any] | None]:
    """One task: privatise a piece of an input into the part file ``part`` (in the run's
    private temporary folder) with the local engine's code; returns (rows, sha256, bytes,
    raw-input counts per column (rows mapped by unknown_as; a numeric column's clamped,
    rounded and missing values), input-label counts, the binding of the part's released
    content)."""
    import os
    from pathlib import Path
    from typing import cast

    from ..sampler import AliasSampler
    from ._reuse import TallyingSampler
    from .files import Policy, one_file
    from .numeric_release import NumericPolicy, numeric_policies

    policies: dict[str, Any] = {c: Policy(m, csv, missing[c], unknown_as[c])
                                for c, m in mechs.items()}
    policies.update(numeric_policies(mechs, csv, missing, unknown_as))  # numeric columns
    # the input labels counted as they are drawn (the reference-reuse warning)
    tallies = {c: TallyingSampler(AliasSampler(m.matrix), m) for c, m in mechs.items()}
    st = one_file(mechs, cast(dict[str, AliasSampler], tallies), Path(inp), Path(part),
                  cols, targets, child.generator, policies, csv=csv, batch_rows=batch_rows,
                  bar=None, meta=meta, compression=compression, piece=piece, drop=drop)
    os.replace(st.tmp, part)
    return (st.rows, st.sha256, st.size,
            {c: dict(p.counts) if isinstance(p, NumericPolicy)
             else {"unknown_mapped_rows": p.unknown_rows} for c, p in policies.items()},
            {c: t.counts for c, t in tallies.items()}, st.content)


def _history(record: Mapping[str, Any] | None) -> str | None:
    """What a release record says was released (each output column's source and
    mechanism, each pass's columns), as text to compare the records of several inputs;
    ``None`` for an input with no record."""
    import json

    if record is None:
        return None
    passes = record.get("previous_passes")
    return json.dumps({
        "privatized": {str(t): [e.get("column"), e.get("mechanism_sha256"),
                                e.get("joint_release") is not None]
                       for t, e in record["privatized"].items()},
        "passes": [p.get("columns") if isinstance(p, Mapping) else None
                   for p in [*(passes if isinstance(passes, list) else []), record]]},
        sort_keys=True)


def _is_previous_output(out: Any) -> bool:
    """Whether folder ``out`` is a previous pmlkit dask output: its manifest says so and it
    holds nothing but part files (so ``--overwrite`` never deletes anyone's documents)."""
    import json

    from .files import MANIFEST_SUFFIX

    man = out.with_name(out.name + MANIFEST_SUFFIX)
    try:
        doc = json.loads(man.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("engine") != "dask" or "files" not in doc:
        return False
    allowed = (".parquet", ".csv", ".gz", ".bz2", ".zst", ".lz4")
    for p in out.iterdir():
        if p.is_dir() or not (p.name.startswith("part-") or p.name.startswith("_"))\
                or not p.name.endswith((*allowed, "_metadata", "_common_metadata")):
            return False
    return True


def privatize_file_dask(mechanism: Any, input: Any, output: Any,
                        columns: str | Sequence[str], *, into: Any = None, rng: Any = None,
                        overwrite: bool = False, csv: Any = None, scheduler: str | None = None,
                        progress: bool = False, missing: str | Mapping[str, str] = "error",
                        unknown_as: Any = None,
                        compression: str | None = None, block_bytes: int = 64 << 20,
                        batch_rows: int = 1 << 20, joint_guarantee: Any = None,
                        repeat: bool = False, no_joint_guarantee: bool = False,
                        keep_raw: bool | None = None) -> Any:
    """Privatise columns of CSV/Parquet file(s) with Dask; the output is a folder.

    The same code and policies as :func:`pmlkit.privatization.privatize_file` (untouched
    columns exact, duplicate names refused, ``missing``, ``unknown_as``, ``compression``)
    run as one task per *piece*: a Parquet row group, or a block of about ``block_bytes``
    of an uncompressed CSV file cut at a record boundary (a compressed CSV file is one
    piece). Each piece writes ``part-NNNNN.csv`` (output name ending in ``.csv``) or
    ``part-NNNNN.parquet`` into a private temporary folder that is renamed into place when
    every piece succeeded; ``<output>.pmlkit.json`` is published last and lists every
    part with its SHA-256. ``--overwrite`` replaces a folder only if it is a previous
    pmlkit output (its manifest says so and it holds only part files). ``scheduler``: a
    ``distributed`` scheduler address, or ``None`` for a LocalCluster on 127.0.0.1
    started and closed here. ``mechanism`` may map each column to its own mechanism and
    ``joint_guarantee`` / ``repeat`` / ``no_joint_guarantee`` / ``keep_raw`` are recorded
    and checked as by ``privatize_file`` (an input's release record included: each part of
    the output folder is bound to its released content in the folder's manifest).
    Returns a :class:`pmlkit.privatization.files.FileReport`.

    Examples
    --------
    Not run here (it starts a local Dask cluster; ``tests/test_dask.py`` runs it):

    >>> from pmlkit.design import randomized_response
    >>> mech = randomized_response(2, eps=1.0).with_labels(["F", "M"], ["F", "M"])
    >>> report = privatize_file_dask(mech, "people.csv", "released.csv",
    ...                              "sex")  # doctest: +SKIP
    >>> report.rows  # doctest: +SKIP
    1000
    """
    import json
    import os
    import shutil
    from pathlib import Path

    try:
        import importlib

        dask: Any = importlib.import_module("dask")  # untyped libraries
        distributed: Any = importlib.import_module("distributed")
    except ImportError:
        raise DataError("the dask engine needs the optional dependencies: install them "
                        "with pip install 'pmlkit[dask]' (or use the local engine)") from None

    from .._csv_bytes import compression_of
    from ..io import expand_inputs, file_format
    from ..rng import resolve_rng
    from ._core import check_column_names, mech_digest
    from ._policies import missing_by_column
    from ._publish import cleanup_on_signals, commit, os_error, remove_stale, temp_path
    from .files import (
        MANIFEST_FORMAT,
        MANIFEST_SUFFIX,
        FileReport,
        add_counts,
        check_inputs,
        check_joint_release,
        check_unknown_as,
        column_mechanisms,
        csv_pieces,
        joint_record,
        merged_meta,
        parquet_pieces,
        raw_columns_dropped,
        same_file,
        verify_joint_guarantee,
    )

    inputs = expand_inputs(input)
    out = user_path(output, "output")
    cols, targets = check_column_names(columns, into, as_str=True)
    drop = raw_columns_dropped(cols, targets, keep_raw)
    mechs = column_mechanisms(mechanism, cols)
    joint_doc = joint_record(joint_guarantee)
    missing_of = missing_by_column(missing, mechs)  # "category" where the label exists
    unknown = check_unknown_as(unknown_as, mechs)
    fmts = {file_format(p) for p in inputs}
    if len(fmts) > 1:
        raise ValidationError("all inputs must have the same format with --engine dask, got "
                              f"{sorted(fmts)}")
    for inp in inputs:
        if same_file(inp, out) or inp.resolve().is_relative_to(out.resolve()):
            raise DataError(f"output {str(out)!r} would overwrite the input {str(inp)!r}")
    if out.exists():
        if not overwrite:
            raise DataError(f"output {str(out)!r} already exists; pass overwrite=True "
                            "(--overwrite) to replace it")
        if not out.is_dir() or not _is_previous_output(out):
            raise DataError(f"output {str(out)!r} exists and is not a previous pmlkit "
                            "output (no pmlkit manifest next to it, or it holds other "
                            "files); pmlkit replaces only its own output folders: choose "
                            "another --output")
    if not out.parent.is_dir():
        raise DataError(f"output folder {str(out.parent)!r} does not exist")
    previous = check_inputs(inputs, cols, targets, into, csv, repeat)
    check_joint_release(previous, cols, joint_doc, repeat, no_joint_guarantee)
    histories = {_history(p) for p in previous}
    if len(histories) > 1:  # one folder manifest, one record for every part
        raise DataError("the inputs have different release histories (earlier pmlkit passes "
                        "released different columns, or only some inputs are pmlkit "
                        "outputs); one output folder records one history for all its "
                        "parts: privatise them separately, or with the local engine (one "
                        "output, one record, per input)")
    verify_joint_guarantee(joint_doc, cols, mechs, [], previous)
    prev = next((p for p in previous if p is not None), None)
    pieces: list[tuple[Path, tuple[int, int] | None]] = []
    for inp in inputs:
        if file_format(inp) == "parquet":
            pieces += [(inp, pc) for pc in parquet_pieces(inp, batch_rows)]
        elif compression_of(inp) is None:
            pieces += [(inp, pc) for pc in csv_pieces(inp, block_bytes, csv)]
        else:
            pieces.append((inp, None))
    out_csv = out.name.lower().endswith((".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".tsv"))
    ext = (".csv" + next((e for e in (".gz", ".bz2", ".zst") if out.name.lower().endswith(e)),
                         "")) if out_csv else ".parquet"
    source = resolve_rng(rng)
    digests = {c: mech_digest(m) for c, m in mechs.items()}
    digest = digests[cols[0]] if len(set(digests.values())) == 1 else None
    privatized = {t: {"column": c, "mechanism": mechs[c].to_dict(),
                      "mechanism_sha256": digests[c], "missing": missing_of[c],
                      "unknown_as": unknown[c]}
                  for c, t in zip(cols, targets, strict=True)}
    meta = merged_meta(prev, {
        "format": MANIFEST_FORMAT, "version": 1, "columns": cols, "into": targets,
        "seeded": source.seeded, "rng": source.description, "mechanism_sha256": digest,
        "joint_guarantee": joint_doc, "privatized": privatized,
        **({"dropped": drop} if drop else {})})
    children = [c.for_task() for c in source.spawn(len(pieces))]  # keyed per task
    remove_stale(out)
    remove_stale(out.with_name(out.name + MANIFEST_SUFFIX))
    tmp = temp_path(out, ".tmpdir")
    cluster = client = None
    paths = [str(p) for p in inputs]
    with cleanup_on_signals():
        try:
            try:
                tmp.mkdir()
            except OSError as exc:
                raise os_error(exc, "write into the output folder", out.parent) from exc
            if scheduler is None:
                cluster = distributed.LocalCluster(host="127.0.0.1", processes=True,
                                                   n_workers=min(2, os.cpu_count() or 1),
                                                   threads_per_worker=1,
                                                   dashboard_address=None)
                client = distributed.Client(cluster)
            else:
                client = distributed.Client(scheduler)
            fn = dask.delayed(_dask_piece, pure=False)
            parts = [f"part-{i:05d}{ext}" for i in range(len(pieces))]
            tasks = [fn(mechs, str(inp), pc, str(tmp / part), cols, targets, child, csv,
                        missing_of, unknown, {"pmlkit": json.dumps(meta)}, compression,
                        batch_rows, drop)
                     for (inp, pc), part, child in zip(pieces, parts, children, strict=True)]
            futures = client.compute(tasks)
            if progress:  # distributed's text bar writes to stdout: keep stdout for --json
                import contextlib
                import sys

                with contextlib.redirect_stdout(sys.stderr):
                    distributed.progress(futures)
                print(file=sys.stderr)
            results = client.gather(futures)
            rows = sum(r[0] for r in results)
            for c in cols:  # PMLWarning: the inputs look like the reference sample
                warn_if_reference_counts(mechs[c], sum(r[4][c] for r in results),
                                         f"{', '.join(paths)}, column {c!r}")
            # the raw input's counts (rows mapped by unknown_as; numeric: clamped,
            # rounded, missing): for the operator (FileReport.input_counts), never in the
            # manifest or the parts' metadata
            raw_counts: dict[str, dict[str, int]] = {}
            for c, t in zip(cols, targets, strict=True):
                for r in results:
                    add_counts(raw_counts.setdefault(t, {}), r[3][c])
            report = FileReport(((", ".join(paths), str(out), rows),), tuple(cols),
                                tuple(targets), source.seeded, source.description, digest,
                                tuple(digests[c] for c in cols), joint_doc,
                                input_counts=raw_counts)
            doc = {**meta, **report.to_dict(), "engine": "dask",
                   "data": {"folder": out.name, "parts": [
                       {"file": part, "rows": r[0], "sha256": r[1], "bytes": r[2],
                        "released_content": r[5]}
                       for part, r in zip(parts, results, strict=True)]}}
            man = out.with_name(out.name + MANIFEST_SUFFIX)
            mtmp = temp_path(man)
            mtmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
            try:
                _publish_folder(tmp, out, overwrite=overwrite,
                                then=lambda: commit(mtmp, man, overwrite=overwrite))
            finally:
                mtmp.unlink(missing_ok=True)
        except OSError as exc:
            raise os_error(exc, "write the output", out) from exc
        finally:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return report


def _publish_folder(tmp: Any, out: Any, *, overwrite: bool, then: Any) -> None:
    """Rename the finished folder into place, then run ``then`` (publish the manifest).

    An existing (checked) previous output is first moved aside under a hidden name and
    removed only when ``then`` succeeded; if the rename or ``then`` fails (an OS error, a
    signal), this run's folder is removed and the previous one is put back, so a failed
    ``--overwrite`` leaves the previous output and its manifest as they were."""
    import os
    import shutil

    from ._publish import previous_path, temp_path

    trash = None
    if out.exists() and overwrite:
        trash = temp_path(out, ".old")
        os.rename(out, trash)
    placed = False
    try:
        try:
            os.rename(tmp, out)  # fails if out appeared meanwhile and is not empty
        except OSError as exc:
            if trash is None and out.exists():
                raise DataError(f"output {str(out)!r} already exists (another run may have "
                                "written it meanwhile); pass overwrite=True (--overwrite) "
                                "to replace it") from exc
            raise
        placed = True
        then()
    except BaseException as exc:
        if placed:
            shutil.rmtree(out, ignore_errors=True)  # the folder this run just published
        if trash is not None:
            try:
                os.rename(trash, out)
            except OSError:
                # (kept under a name no later run removes, and said so: never lost)
                keep = previous_path(out, os.getpid())
                os.rename(trash, keep)
                raise DataError(f"the release into {str(out)!r} failed ({exc}) and the "
                                f"previous output could not be put back: it is kept at "
                                f"{str(keep)!r}") from exc
        raise
    if trash is not None:
        shutil.rmtree(trash, ignore_errors=True)
