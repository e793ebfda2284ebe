"""Privatise columns of CSV and Parquet files: streamed, atomic, never over the input.

Each input file is read in record batches (:func:`pmlkit.io.iter_batches`, bounded
memory), the named columns are privatised batch by batch with one random stream, and the
batches are written to a temporary file in the output folder that replaces the output
only when everything succeeded (:class:`pmlkit.io.AtomicWriter`). Every other column, the
row order and the row count are kept.

Record of the randomness
------------------------
Next to every output file a manifest ``<output>.pmlkit.json`` is written (atomically,
after the data) holding the :class:`FileReport`: input, output, columns, rows, the
mechanism's digest, whether the run was *seeded* (research only) and the rng description.
Parquet outputs also carry it in their schema metadata under the key ``pmlkit``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._provenance import warn_if_reference_file
from ..errors import DataError, ValidationError
from ..io import (
    DEFAULT_BATCH_ROWS,
    AtomicWriter,
    CsvOptions,
    expand_inputs,
    file_format,
    iter_batches,
    list_columns,
)
from ..rng import resolve_rng
from ._core import (
    AliasSampler,
    _arrow_output_type,
    _Encoder,
    _label_kind,
    _mech_digest,
    as_mechanism_object,
)

__all__ = ["MANIFEST_SUFFIX", "FileReport", "output_paths", "privatize_file"]

MANIFEST_SUFFIX = ".pmlkit.json"


@dataclass(frozen=True)
class FileReport:
    """What :func:`privatize_file` wrote (one entry per input file in ``files``).

    Attributes
    ----------
    files
        ``(input, output, rows)`` per file.
    columns, into
        The privatised columns and the columns their outputs went to.
    seeded, rng
        Whether the randomness was seeded (research only) and its description.
    mechanism_sha256
        Digest of the mechanism used.
    """

    files: tuple[tuple[str, str, int], ...]
    columns: tuple[str, ...]
    into: tuple[str, ...]
    seeded: bool
    rng: str
    mechanism_sha256: str

    @property
    def rows(self) -> int:
        return sum(f[2] for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {"files": [{"input": i, "output": o, "rows": r} for i, o, r in self.files],
                "columns": list(self.columns), "into": list(self.into), "rows": self.rows,
                "seeded": self.seeded, "rng": self.rng,
                "mechanism_sha256": self.mechanism_sha256}


def _arrow_type_for(labels: Sequence[Any]) -> Any:
    import pyarrow as pa

    return {"str": pa.string(), "int": pa.int64(), "bool": pa.bool_(),
            "float": pa.float64()}.get(_label_kind(labels))


def output_paths(inputs: list[Path], output: str | os.PathLike[str]) -> list[Path]:
    """Where each input goes: several inputs (or an existing folder / a path ending in
    a separator) -> ``output/<input name>``; one input -> ``output`` itself."""
    out = Path(output)
    as_dir = len(inputs) > 1 or out.is_dir() or str(output).endswith(("/", os.sep))
    if as_dir:
        if out.exists() and not out.is_dir():
            raise DataError(f"output {str(out)!r} must be a folder when privatising "
                            f"{len(inputs)} input files")
        targets = [out / p.name for p in inputs]
        names = [t.name for t in targets]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise DataError(f"several input files are named {sorted(dup)[0]!r}; their "
                            "outputs would collide in the output folder")
        return targets
    return [out]


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def privatize_file(mechanism: Any, input: str | os.PathLike[str] | Sequence[Any],
                   output: str | os.PathLike[str], columns: str | Sequence[str], *,
                   into: str | Sequence[str] | None = None, rng: Any = None,
                   overwrite: bool = False, csv: CsvOptions | None = None,
                   batch_rows: int = DEFAULT_BATCH_ROWS, progress: bool = False,
                   manifest: bool = True) -> FileReport:
    """Privatise named columns of CSV/Parquet file(s), streaming, with an atomic write.

    Parameters
    ----------
    mechanism
        A :class:`pmlkit.Mechanism` (or row-stochastic matrix with labels ``0..N-1``).
    input
        A file, a glob pattern (``"data/part-*.parquet"``) or a list of them.
    output
        The output file (one input), or a folder (several inputs: each is written to
        ``output/<input name>``; the folder is created if missing). The format follows the
        output's extension (CSV in, Parquet out is allowed).
    columns
        Column(s) holding the sensitive labels.
    into
        New column name(s), one per column, to hold the outputs (the original columns are
        then kept unchanged); default: replace the values in place.
    rng
        ``None`` (secure default), an int seed or a numpy Generator (research only); see
        :func:`pmlkit.privatize`.
    overwrite
        Replace an existing output (refused by default). The input is never overwritten.
    csv
        Parsing options for CSV inputs (headerless files, whitespace, null markers); CSV
        outputs are written with a header line.
    batch_rows
        Rows per streamed batch (memory bound).
    progress
        Show a tqdm progress bar.
    manifest
        Write ``<output>.pmlkit.json`` recording the run (see the module docstring).

    Raises
    ------
    DataError
        Missing input or column, unknown labels or nulls (naming the value and its row
        count), output equal to an input, existing output without ``overwrite``. The
        output is left untouched (no partial file) on any error or interruption.
    """
    mech = as_mechanism_object(mechanism)
    cols = [columns] if isinstance(columns, str) else [str(c) for c in columns]
    if not cols:
        raise ValidationError("columns must name at least one column, got []")
    if into is None:
        targets = list(cols)
    else:
        targets = [into] if isinstance(into, str) else [str(c) for c in into]
        if len(targets) != len(cols):
            raise ValidationError(f"into must give one new name per column: {cols!r} but "
                                  f"into={targets!r}")
    if len(set(targets)) != len(targets) or len(set(cols)) != len(cols):
        raise ValidationError(f"columns and into names must be unique, got columns={cols!r}, "
                              f"into={targets!r}")
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int | np.integer) \
            or batch_rows < 1:
        raise ValidationError(f"batch_rows must be an integer >= 1, got {batch_rows!r}")
    inputs = expand_inputs(input)
    outputs = output_paths(inputs, output)
    for out in outputs:
        file_format(out)
        for inp in inputs:
            if _same_file(inp, out):
                raise DataError(f"output {str(out)!r} is the input file {str(inp)!r}; "
                                "pmlkit never overwrites its input, choose another output")
        if out.exists() and not overwrite:
            raise DataError(f"output file {str(out)!r} already exists; pass overwrite=True "
                            "(--overwrite) to replace it")
    for inp in inputs:  # fail fast on a missing column in any file
        available = list_columns(inp, csv=csv)
        missing = [c for c in cols if c not in available]
        if missing:
            raise DataError(f"column {missing[0]!r} not found in {str(inp)!r}; available "
                            f"columns: {', '.join(map(repr, available))}")
        clash = [t for t in targets if t in available and t not in cols]
        if into is not None and clash:
            raise DataError(f"into column {clash[0]!r} already exists in {str(inp)!r}; "
                            "choose a new name")
    if outputs[0] != Path(output):  # writing into a folder: create it
        Path(output).mkdir(parents=True, exist_ok=True)

    source = resolve_rng(rng)
    sampler = AliasSampler(mech.matrix)
    in_type = _arrow_type_for(mech.input_labels)
    digest = _mech_digest(mech)
    done = []
    bar = _progress_bar(inputs, csv, progress)
    try:
        for inp, out in zip(inputs, outputs, strict=True):
            warn_if_reference_file(mech, inp)  # PMLWarning: privatising the reference data
            rows = _one_file(mech, sampler, inp, out, cols, targets, source.generator,
                             in_type, overwrite=overwrite, csv=csv, batch_rows=int(batch_rows),
                             bar=bar, meta={"pmlkit": json.dumps({
                                 "columns": cols, "into": targets, "seeded": source.seeded,
                                 "rng": source.description, "mechanism_sha256": digest})})
            done.append((str(inp), str(out), rows))
            if manifest:
                single = FileReport(((str(inp), str(out), rows),), tuple(cols),
                                    tuple(targets), source.seeded, source.description, digest)
                _write_manifest(out, single)
    finally:
        if bar is not None:
            bar.close()
    return FileReport(tuple(done), tuple(cols), tuple(targets), source.seeded,
                      source.description, digest)


def _progress_bar(inputs: list[Path], csv: CsvOptions | None, progress: bool) -> Any:
    if not progress:
        return None
    from tqdm.auto import tqdm

    total = 0
    for p in inputs:
        if file_format(p) == "parquet":
            import pyarrow.parquet as pq

            total += pq.ParquetFile(p).metadata.num_rows
        else:
            total = -1
            break
    return tqdm(total=total if total >= 0 else None, unit="rows", unit_scale=True,
                desc="privatising", leave=False)


def _write_manifest(out: Path, report: FileReport) -> None:
    path = out.with_name(out.name + MANIFEST_SUFFIX)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _one_file(mech: Any, sampler: AliasSampler, inp: Path, out: Path, cols: list[str],
              targets: list[str], gen: np.random.Generator, in_type: Any, *, overwrite: bool,
              csv: CsvOptions | None, batch_rows: int, bar: Any, meta: dict[str, str]) -> int:
    import pyarrow as pa

    column_types = None
    if file_format(inp) == "csv":
        column_types = {}
        if file_format(out) == "csv":
            # CSV to CSV: untouched columns stay text (exact round trip of every field);
            # to Parquet their types are inferred from the first block (pyarrow open_csv)
            column_types = {c: pa.string() for c in list_columns(inp, csv=csv)}
        for c in cols:
            if in_type is not None:
                column_types[c] = in_type
    # columns replaced in place are read dictionary-encoded: labels are matched once per
    # dictionary entry instead of once per row (their values are not written back)
    in_place = [c for c, t in zip(cols, targets, strict=True) if c == t]
    batches = iter_batches(inp, batch_rows=batch_rows, csv=csv, column_types=column_types,
                           read_dictionary=in_place if file_format(inp) == "parquet" else None)
    encoders = {c: _Encoder(mech.input_labels) for c in cols}
    writer: AtomicWriter | None = None
    rows = 0
    try:
        for batch in batches:
            new = _privatize_batch(mech, sampler, batch, cols, targets, encoders, gen)
            if new is None:  # a problem was found: keep counting it, write nothing
                continue
            if writer is None:
                schema = new.schema.with_metadata({**(new.schema.metadata or {}), **meta}) \
                    if file_format(out) == "parquet" else new.schema
                writer = AtomicWriter(out, schema, overwrite=overwrite,
                                      csv=CsvOptions(delimiter=(csv or CsvOptions()).delimiter))
                writer.__enter__()
            writer.write(new.replace_schema_metadata(writer.schema.metadata))
            rows += new.num_rows
            if bar is not None:
                bar.update(new.num_rows)
        bad = [(c, e) for c, e in encoders.items() if e.failed]
        if bad:
            c, e = bad[0]
            raise e.error(f"column {c!r} of {str(inp)!r}")
        if writer is None:  # empty file: write the schema only
            schema = _empty_schema(mech, inp, cols, targets, csv, column_types)
            writer = AtomicWriter(out, schema, overwrite=overwrite)
            writer.__enter__()
    except BaseException as exc:
        if writer is not None:
            writer.__exit__(type(exc), exc, exc.__traceback__)
        raise
    writer.__exit__(None, None, None)
    return rows


def _empty_schema(mech: Any, inp: Path, cols: list[str], targets: list[str],
                  csv: CsvOptions | None, column_types: Any) -> Any:
    import pyarrow as pa

    from ..io import read_table

    table = read_table(inp, csv=csv, column_types=column_types)
    out_type = _arrow_output_type(mech, _arrow_type_for(mech.input_labels) or pa.string())
    fields = list(table.schema)
    names = [f.name for f in fields]
    for c, t in zip(cols, targets, strict=True):
        f = pa.field(t, out_type)
        if t in names:
            fields[names.index(t)] = f
        else:
            fields.append(f)
        del c
    return pa.schema(fields)


def _privatize_batch(mech: Any, sampler: AliasSampler, batch: Any, cols: list[str],
                     targets: list[str], encoders: dict[str, _Encoder],
                     gen: np.random.Generator) -> Any:
    import pyarrow as pa

    arrays = list(batch.columns)
    names = list(batch.schema.names)
    failed = False
    for c, t in zip(cols, targets, strict=True):
        arr = batch.column(names.index(c)) if c in names else batch.column(c)
        enc = encoders[c]
        codes = enc.encode_arrow(arr)
        if codes is None or any(e.failed for e in encoders.values()):
            failed = True
            continue
        if failed:
            continue
        idx = sampler.draw(codes, gen)
        out_type = _arrow_output_type(mech, arr.type)
        labels = pa.array(list(mech.output_labels), type=out_type)
        new = labels.take(pa.array(idx))
        if t in names:
            arrays[names.index(t)] = new
        else:
            names.append(t)
            arrays.append(new)
    if failed:
        return None
    return pa.RecordBatch.from_arrays(arrays, names=names)
