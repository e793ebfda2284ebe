"""The file engine: one CSV or Parquet file read, privatised and written batch by batch.

:func:`one_file` reads an input in record batches (bounded memory), releases the
privatised columns of each batch (:func:`privatize_batch`: the missing-value and
unknown-label policy, the labels matched to input indices, one draw per record from one
random stream in row order) and writes the batches to a temporary file next to the
output, hashing the bytes as they are written (:class:`~._publish.HashingFile`) and the
released columns' content for the release record (:class:`~._history.ContentHasher`).
Publishing is the caller's (:func:`~._publish.publish_all`). Everything runs on the
calling thread (pyarrow uses its own thread pool inside a call), so an interrupt
(SIGINT, SIGTERM) always meets one thread, which removes the temporary file and raises.

Untouched columns come out exactly as they went in
--------------------------------------------------
* CSV is read with every column as text: no null markers, no whitespace stripping, no
  type inference. Only the privatised column follows the declared policy
  (``csv.null_values``, ``csv.strip_whitespace``; a number label matched by its text). CSV is
  written quoting a field only where CSV needs it, with the input's byte-order mark and
  line terminator, so every untouched cell's text is identical, byte for byte (the
  file's bytes are too when the input was written that way; blank lines, surplus quotes
  and a second kind of line ending are not kept).
* CSV -> Parquet keeps text as text (``string`` columns).
* Parquet -> Parquet keeps the schema (types, field metadata), the values and the
  key-value metadata (pandas' included; its description of a released categorical is the
  released one's, :func:`released_pandas_meta`), each column's compression codec unless
  ``compression`` is given, and the row groups (a group larger than ``batch_rows`` is
  split into groups of ``batch_rows``: memory stays bounded by the batch). A dictionary
  (categorical) column privatised comes back as a dictionary column whose dictionary is
  the output labels, in the mechanism's order: a dictionary read from the file may be
  built from the raw values (a row group's dictionary page holds the values that occur
  in it, in the order they first occur), so keeping it would disclose them. Only an
  ordered dictionary (a declared order: an ordered pandas categorical, a polars Enum)
  holding every output label keeps its entries and order, and only when every row group
  holds the same one (:func:`declared_dictionary`; a file whose row groups differ is
  refused).

Matching labels
---------------
A column replaced in place is read dictionary-encoded (CSV: the parser builds the
dictionary; Parquet: the stored one), so the CSV parsing policy and the matching of labels
(:meth:`pmlkit.sampler.Encoder.encode_arrow`, ``pyarrow.compute.index_in``) run once per
distinct value; each record still gets its own random draw. CSV text is read without the
parser's per-value UTF-8 check; each batch's text is instead checked by one scan for bytes
>= 0x80 (:func:`pmlkit.io.check_utf8_text`), and a cell that is not UTF-8 is refused,
naming its column and data row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._csv_bytes import check_closed_quote, compression_of
from .._encoding import label_texts
from ..errors import DataError
from ..io import (
    CsvOptions,
    default_delimiter,
    file_format,
    iter_batches,
    list_columns,
)
from ..sampler import AliasSampler, Encoder
from ._core import arrow_output_type
from ._history import CONTENT_KEY, ContentHasher, bound_columns
from ._joint_release import JointDraw
from ._pieces import piece_batches
from ._policies import MISSING_LABEL, Policy, csv_options_for, policy_error
from ._publish import HashingFile, Staged, deferred_signals, discard, os_error, settle, temp_path
from .numeric_release import grid_of, numeric_arrow_type

__all__ = ["CSV_BATCH_ROWS", "draw_columns", "one_file", "output_type", "parquet_codecs",
           "privatize_batch"]

#: Rows per batch read from a CSV input at most (pyarrow sizes CSV blocks in bytes from
#: it, ~64 bytes a row: 1 MiB blocks, its default). pyarrow's CSV reader reads up to 32
#: blocks ahead, so its memory grows with the block: on 10^7 rows the run peaked at
#: +160 MiB with 1 MiB blocks, +229 with 2 MiB and +305 with 4 MiB, at the same CPU time
#: within noise. Batches only split the work: the values drawn and the bytes written do
#: not depend on them.
CSV_BATCH_ROWS = 1 << 14


def one_file(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw],
             inp: Path, out: Path, cols: list[str], targets: list[str],
             gen: np.random.Generator, policies: Mapping[str, Policy], *,
             csv: CsvOptions | None, batch_rows: int, bar: Any, meta: dict[str, str],
             compression: str | None, piece: tuple[int, int] | None = None,
             temps: list[Path] | None = None, drop: Sequence[str] = ()) -> Staged:
    """Privatise one input file (or one ``piece`` of it: a byte range of a CSV file or a
    row-group range of a Parquet file) into a temporary file next to ``out``; column ``c``
    goes through ``mechs[c]`` (``samplers[c]``, ``policies[c]``).

    CSV is parsed in blocks of about ``64 * batch_rows`` bytes (at most
    :data:`CSV_BATCH_ROWS` rows: a small read-ahead); a row longer than a block (a cell
    of several megabytes) cannot be parsed in them, so the file is then privatised again
    from the start in blocks 16 times larger (up to 1 GiB), from the same random state:
    the attempt that failed published nothing and its temporary file is removed, so the
    release is the one a single pass with large blocks would give.

    The temporary file's name is appended to ``temps`` (if given) before the file is
    created, so the caller can remove it even if a signal arrives between this function
    returning and its result being stored. The columns ``drop`` (raw columns whose
    released values went into other columns, :func:`~.files.raw_columns_dropped`) are left out
    of the output."""
    state = gen.bit_generator.state
    rows_cap = CSV_BATCH_ROWS
    while True:
        try:
            return _one_file(mechs, samplers, inp, out, cols, targets, gen, policies,
                             csv=csv, batch_rows=batch_rows, bar=bar, meta=meta,
                             compression=compression, piece=piece,
                             csv_rows=rows_cap, temps=temps, drop=tuple(drop))
        except DataError as exc:
            cause = exc.__cause__
            block = 64 * max(batch_rows, rows_cap)
            if cause is None or "straddl" not in str(cause) or block >= 1 << 30:
                raise
        # (nothing was published; the attempt's temporary file is gone)
        gen.bit_generator.state = state
        for pol in policies.values():
            pol.unknown_rows = 0
        if bar is not None and hasattr(bar, "reset"):
            bar.reset()
        rows_cap = batch_rows = 16 * max(batch_rows, rows_cap)


def _one_file(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw],
             inp: Path, out: Path, cols: list[str], targets: list[str], gen: np.random.Generator,
              policies: Mapping[str, Policy], *,
              csv: CsvOptions | None, batch_rows: int, bar: Any, meta: dict[str, str],
              compression: str | None, piece: tuple[int, int] | None,
              csv_rows: int, temps: list[Path] | None = None,
              drop: tuple[str, ...] = ()) -> Staged:
    """One attempt of :func:`one_file`, CSV parsed in batches of at most ``csv_rows``
    rows."""
    import pyarrow as pa

    in_fmt, out_fmt = file_format(inp), file_format(out)
    read_csv = csv_options_for(inp, csv)
    names = list_columns(inp, csv=read_csv)
    base_meta: dict[Any, Any] = {}
    footer_meta: dict[Any, Any] = {}
    codecs: dict[str, str] = {}
    if in_fmt == "csv":
        fields = [pa.field(n, pa.string()) for n in names]
        column_types = {n: pa.string() for n in names}
        # a column replaced in place is read dictionary-encoded: its text is hashed once,
        # by the parser, and the policy and the labels are matched once per distinct
        # value (it is not written, so its text need not be kept)
        for c, t in zip(cols, targets, strict=True):
            if c == t:
                column_types[c] = pa.dictionary(pa.int32(), pa.string())
        in_place: list[str] = []
    else:
        import pyarrow.parquet as pq

        with pq.ParquetFile(inp) as pf:
            schema = pf.schema_arrow
            codecs = parquet_codecs(pf)
            footer = dict(pf.metadata.metadata or {})
        fields = list(schema)
        base_meta = dict(schema.metadata or {})
        # the footer's key-value entries that the stored Arrow schema does not repeat, kept
        # as they were (the release record and its binding are this pass's own)
        footer_meta = {k: v for k, v in footer.items() if k not in base_meta
                       and k not in (b"ARROW:schema", b"pmlkit", CONTENT_KEY.encode())}
        column_types = None
        # columns replaced in place are read dictionary-encoded (labels matched once per
        # dictionary entry) unless a policy needs to see every value
        in_place = [c for c, t in zip(cols, targets, strict=True) if c == t]
    out_fields = list(fields)
    declared: dict[str, Any] = {}  # the declared ordered dictionaries kept (by column)
    sizes: dict[str, int] = {}  # each released dictionary's number of entries
    for c, t in zip(cols, targets, strict=True):
        src = fields[names.index(c)]
        if out_fmt == "csv":
            typ = pa.string()
        else:
            src_type = src.type.value_type if pa.types.is_dictionary(src.type) else src.type
            policy = policies[c]
            typ = output_type(mechs[c], policy.in_type if in_fmt == "csv" and
                              policy.in_type is not None else src_type)
            if pa.types.is_dictionary(src.type) and grid_of(mechs[c]) is None:
                # a dictionary (categorical) column comes back dictionary-encoded, its
                # dictionary the output labels (its index type widened where the input's
                # cannot index every one of them), or a declared ordered dictionary
                # holding every output label (:func:`declared_dictionary`)
                index = src.type.index_type
                room = 1 << (index.bit_width - pa.types.is_signed_integer(index))
                if len(mechs[c].output_labels) > room:
                    index = pa.int32()
                own = declared_dictionary(inp, c, src.type) \
                    if in_fmt == "parquet" and src.type.ordered else None
                labels = dictionary_labels(mechs[c], typ, policy)[0]
                if own is not None and covers(own, labels):
                    declared[c] = own
                    typ = src.type
                    sizes[c] = len(own)
                else:
                    typ = pa.dictionary(index, typ)
                    sizes[c] = len(labels)
        fmeta = src.metadata if c == t else None
        if fmeta and c in sizes and c not in declared:
            # (polars' Enum categories describe the input's dictionary: read over the output
            # labels they would turn each label they lack into a missing value)
            fmeta = {k: v for k, v in fmeta.items()
                     if not k.startswith(b"_PL_ENUM_VALUES")} or None
        f = pa.field(t, typ, nullable=True, metadata=fmeta)
        if t in names:
            out_fields[names.index(t)] = f
        else:
            out_fields.append(f)
            codecs.setdefault(t, codecs.get(c, "snappy"))
    if b"pandas" in base_meta:  # (its description of the raw columns released)
        base_meta[b"pandas"] = released_pandas_meta(
            base_meta[b"pandas"], {c: out_fields[names.index(c)].type
                                   for c, t in zip(cols, targets, strict=True) if c == t},
            sizes, drop)
    # pyarrow keeps metadata keys as bytes: a str key would not replace the input's record
    merged_meta = {**base_meta, **{k.encode(): v for k, v in meta.items()}}
    if drop:  # the raw columns left out (their released values are in other columns)
        out_fields = [f for f in out_fields if f.name not in drop]
    schema = pa.schema(out_fields, metadata=merged_meta if out_fmt == "parquet" else None)
    encoders = {c: Encoder(mechs[c].input_labels) for c in cols}
    # the record is bound to the released content (hashed as written, on the writer's
    # thread): the next pass checks these digests before it believes the record
    hasher = ContentHasher(bound_columns(meta, schema.names))
    tmp = temp_path(out)
    if temps is not None:
        temps.append(tmp)
    sink: Any = None
    writer: Any = None
    hashed: HashingFile | None = None
    rows = 0
    try:
        try:
            # hashed as written (not read again)
            hashed = HashingFile(tmp)
            if out_fmt == "parquet":
                import pyarrow.parquet as pq

                codec: Any = compression if compression is not None else (
                    {n: codecs.get(n, "snappy") for n in schema.names} if codecs else "snappy")
                sink = pa.BufferedOutputStream(pa.PythonFile(hashed, mode="w"),
                                               buffer_size=1 << 20)
                writer = pq.ParquetWriter(sink, schema, compression=codec)
            else:
                from .._csv_text import CsvLayout, CsvTextWriter

                # the declared separator, else by the output's extension (.tsv: tab)
                delim = csv.delimiter if csv is not None and csv.delimiter is not None \
                    else default_delimiter(out)
                # (the header's line end, after the lines skip_rows skips)
                skip = read_csv.skip_rows if read_csv is not None else 0
                layout = CsvLayout.detect(inp, compression_of(inp), skip) \
                    if in_fmt == "csv" else CsvLayout()
                codec = compression_of(out)
                # uncompressed: each batch's text goes to the hashing file in one piece
                # (a buffered Arrow stream would copy it twice more on the way)
                sink = hashed if codec is None else pa.output_stream(
                    hashed, compression=codec, buffer_size=1 << 20)
                writer = CsvTextWriter(sink, schema.names, delimiter=delim, layout=layout,
                                       quote_empty=targets)
        except OSError as exc:
            raise os_error(exc, "write the output", out) from exc
        except (ValueError, TypeError, pa.ArrowException) as exc:
            raise DataError(f"cannot write {str(out)!r}: {exc}") from exc
        if in_fmt == "csv":  # small CSV blocks: the reader's read-ahead stays small
            batch_rows = min(batch_rows, csv_rows)
        out_writer = writer

        def write(new: Any) -> None:
            hasher.update(new)
            try:
                if out_fmt == "parquet":
                    out_writer.write_batch(new)
                else:
                    out_writer.write(new)
            except OSError as exc:
                raise os_error(exc, "write the output", out) from exc
            except pa.ArrowException as exc:  # e.g. a nested or binary column to CSV text
                raise DataError(f"cannot write {str(out)!r} as {out_fmt.upper()}: "
                                f"{' '.join(str(exc).split())[:300]}") from exc

        failed = False
        batches: Any = None
        last: Any = None  # the last batch read, as text
        try:  # (read, privatised and written on this thread, batch by batch)
            if piece is None:
                batches = iter_batches(inp, batch_rows=batch_rows, csv=read_csv,
                                       column_types=column_types,
                                       read_dictionary=in_place if in_fmt == "parquet"
                                       else None)
            else:
                batches = piece_batches(inp, piece, names, read_csv, batch_rows,
                                        in_place)
            for batch in batches:
                last = batch if batch.num_rows else last
                new = privatize_batch(mechs, samplers, batch, cols, targets, encoders,
                                      gen, policies, from_text=in_fmt == "csv",
                                      schema=schema, drop=drop, declared=declared,
                                      where=inp)
                if new is None:  # a problem was found: keep counting it, write nothing
                    failed = True
                    continue
                if failed:
                    continue
                write(new)
                rows += new.num_rows
                if bar is not None:
                    bar.update(new.num_rows)
        finally:
            if batches is not None:  # (the reader closed, also on a signal)
                settle([batches.close])
        if in_fmt == "csv" and last is not None and (
                piece is None or piece[1] >= inp.stat().st_size):  # (the file's end read)
            # (a quote never closed would hide the records after it in the last cell)
            check_closed_quote(inp, last.column(last.num_columns - 1)[-1].as_py())
        bad = [(c, e) for c, e in encoders.items() if e.failed]
        if bad:
            c, e = bad[0]
            raise policy_error(e, mechs[c], f"column {c!r} of {str(inp)!r}")
        content = hasher.finish()
        try:
            if out_fmt == "parquet":
                writer.add_key_value_metadata({**footer_meta,
                                               CONTENT_KEY: json.dumps(content)})
                writer.close()
            sink.close()
            with deferred_signals():
                # the writers' last references: pyarrow's ParquetWriter.__del__ runs here,
                # and Python drops an interrupt arriving in a __del__ ("Exception ignored")
                writer = sink = out_writer = None
            sha, size = hashed.finish()
        except OSError as exc:
            raise os_error(exc, "write the output", out) from exc
    except BaseException:
        closers = ([writer.close] if out_fmt == "parquet" and writer is not None else []) \
            + ([sink.close] if sink is not None else [])
        discard(hashed, tmp, *closers)
        raise
    return Staged(tmp, out, rows, sha, size, content=content)


def parquet_codecs(pf: Any) -> dict[str, str]:
    """Each column's codec in the first row group (what the input was compressed with)."""
    md = pf.metadata
    if md.num_row_groups == 0:
        return {}
    rg = md.row_group(0)
    out: dict[str, str] = {}
    for j in range(rg.num_columns):
        c = rg.column(j)
        name = c.path_in_schema.split(".")[0]
        codec = str(c.compression).lower()
        out.setdefault(name, "none" if codec == "uncompressed" else codec)
    return out



def draw_columns(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw],
                 values: Sequence[Any], cols: list[str], encoders: dict[str, Encoder],
                 gen: np.random.Generator, policies: Mapping[str, Policy], *,
                 from_text: bool) -> list[tuple[Any, Any]] | None:
    """The released output indices of each privatised column of one batch (with the mask
    of rows whose output must be missing, or None); ``None`` when a problem was found
    (the encoders keep counting it). ``values[i]`` holds column ``cols[i]``'s values,
    as text (``from_text``) or typed, plain or dictionary-encoded: a dictionary's values
    go through the policy once, and every row still gets its own draw, in row order.
    The values are matched to the labels by :meth:`pmlkit.sampler.Encoder.encode_arrow`
    (``pyarrow.compute.index_in``; a dictionary's entries once). A column whose
    ``samplers`` entry is a :class:`JointDraw` is released with the other columns of its
    joint release: their codes are drawn together, one draw per record, once the last of
    them (in the order of ``cols``) is encoded, and each gets its own output label
    indices (into its alphabet, the view ``mechs[c]``)."""
    import pyarrow as pa

    failed = False
    out: dict[str, tuple[Any, Any]] = {}
    # the columns of a joint release: each one's label codes, drawn together (one draw per
    # record) once the last of them is encoded
    pending: dict[int, dict[str, Any]] = {}

    def drawn(c: str, codes: Any) -> Any:
        """Draw column ``c``'s outputs (a joint release: once all its columns' codes are
        in); returns the output indices of ``c`` or None while others are pending."""
        sampler = samplers[c]
        if not isinstance(sampler, JointDraw):
            return sampler.draw(codes, gen)
        got = pending.setdefault(id(sampler), {})
        got[c] = codes
        if len(got) < len(sampler.columns):
            return None
        outs = sampler.draw([got[k] for k in sampler.columns], gen)
        for k, o in zip(sampler.columns, outs, strict=True):
            if k != c:
                out[k] = (o, drawn_missing(k, o))
        return outs[sampler.columns.index(c)]

    def drawn_missing(c: str, idx: Any) -> Any:
        """The records of column ``c`` whose drawn output is ``(missing)`` under
        ``missing="category"`` (to be written missing), or None."""
        mech = mechs[c]
        if policies[c].missing == "category" and MISSING_LABEL in mech.output_labels:
            return idx == mech.output_labels.index(MISSING_LABEL)
        return None

    for c, arr in zip(cols, values, strict=True):
        policy = policies[c]
        if from_text and pa.types.is_dictionary(arr.type):
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            arr = pa.DictionaryArray.from_arrays(arr.indices,
                                                 policy.from_text(arr.dictionary))
        elif from_text:
            arr = policy.from_text(arr)
        arr, keep_mask = policy.prepare(arr)
        enc = encoders[c]
        enc.text_labels = from_text  # a number label is matched by its own text
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        codes = enc.encode_arrow(arr)
        if codes is None or any(e.failed for e in encoders.values()):
            failed = True
            continue
        if failed:
            continue
        idx = drawn(c, codes)
        if idx is None:  # a joint release waiting for its other columns
            continue
        null = drawn_missing(c, idx)
        if keep_mask is not None:  # (never a joint release: refused by privatize_file)
            keep = np.asarray(keep_mask.to_numpy(zero_copy_only=False), dtype=bool)
            null = keep if null is None else null | keep
        out[c] = (idx, null)
    return None if failed else [out[c] for c in cols]


def output_type(mech: Any, in_type: Any) -> Any:
    """The Arrow type of a released column read as ``in_type``: a numeric column's own
    type (:func:`~.numeric_release.numeric_arrow_type`), else
    :func:`~._core.arrow_output_type` (the input's type where the labels fit it)."""
    grid = grid_of(mech)
    if grid is not None:
        return numeric_arrow_type(grid, in_type)
    return arrow_output_type(mech, in_type)


def released_pandas_meta(text: bytes, released: Mapping[str, Any],
                         sizes: Mapping[str, int], drop: Sequence[str]) -> bytes:
    """The pandas metadata ``text`` (an Arrow schema's ``pandas`` entry) of a release:
    a categorical column released in place (``released``: its output type) described by
    its released dictionary (``num_categories``: ``sizes``, ``ordered``), a column no
    longer a dictionary or left out (``drop``) no longer described. The input's entry
    counts the raw column's categories: built from the data, that is the number of
    distinct raw values. Text that is not pandas metadata, or that describes no such
    column, is returned as it is.

    Examples
    --------
    >>> import json
    >>> import pyarrow as pa
    >>> entry = {"name": "x", "field_name": "x", "pandas_type": "categorical",
    ...          "numpy_type": "int8", "metadata": {"num_categories": 9, "ordered": False}}
    >>> text = json.dumps({"columns": [entry]}).encode()
    >>> typ = pa.dictionary(pa.int8(), pa.string())
    >>> out = released_pandas_meta(text, {"x": typ}, {"x": 2}, [])
    >>> json.loads(out)["columns"][0]["metadata"]
    {'num_categories': 2, 'ordered': False}
    >>> json.loads(released_pandas_meta(text, {}, {}, ["x"]))["columns"]
    []
    """
    import pyarrow as pa

    try:
        doc = json.loads(text)
        entries = doc["columns"]
        if not isinstance(entries, list):
            return text
    except (TypeError, ValueError, KeyError):
        return text
    kept = []
    for e in entries:
        name = e.get("field_name", e.get("name")) if isinstance(e, dict) else None
        if name in drop:
            continue
        typ = released.get(name) if isinstance(name, str) else None
        if typ is not None and e.get("pandas_type") == "categorical":
            if not pa.types.is_dictionary(typ):
                continue
            e = {**e, "metadata": {**(e.get("metadata") or {}),
                                   "num_categories": sizes.get(str(name)),
                                   "ordered": typ.ordered}}
        kept.append(e)
    if kept == entries:
        return text
    doc["columns"] = kept
    return json.dumps(doc).encode()


def declared_dictionary(inp: Path, column: str, typ: Any) -> Any:
    """The dictionary of the ordered dictionary column ``column`` (of type ``typ``) of
    the Parquet file ``inp``, as its first row group holds it (the declared categories, in
    their declared order); None when the file has no rows. Every batch released with it
    must hold the same dictionary (:func:`privatize_batch`), so a file whose row groups
    differ (a dictionary built from each group's data) is refused rather than disclosed,
    whichever piece of it a Dask task reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(inp, read_dictionary=[column]) as pf:
            if pf.metadata.num_row_groups == 0 or pf.metadata.row_group(0).num_rows == 0:
                return None
            # (the first record only: a batch holds the group's whole dictionary page,
            # and the group, possibly the whole file, is not read a second time)
            arr = next(pf.iter_batches(batch_size=1, row_groups=[0], columns=[column])
                       ).column(0)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"cannot read {str(inp)!r}: {exc}") from exc
    # (read as a dictionary of the stored value type; its index type may differ)
    if not pa.types.is_dictionary(arr.type) \
            or not arr.type.value_type.equals(typ.value_type):
        return None
    return arr.dictionary


def dictionary_labels(mech: Any, value_type: Any, policy: Policy
                      ) -> tuple[Any, np.ndarray | None]:
    """The dictionary of a released dictionary column (the output labels, in the
    mechanism's order, of ``value_type``; without ``(missing)`` under
    ``missing="category"``, which writes that output as a missing value) and each output
    index's position in it (numpy, the missing output's never read; None: the index
    itself)."""
    labels = label_array(mech, value_type)
    pos = None
    if policy.missing == "category" and MISSING_LABEL in mech.output_labels:
        keep = np.ones(len(labels), dtype=bool)
        keep[list(mech.output_labels).index(MISSING_LABEL)] = False
        labels = labels.filter(keep)
        pos = np.maximum(np.cumsum(keep) - 1, 0)
    return labels, pos


def covers(dictionary: Any, labels: Any) -> bool:
    """Whether every one of ``labels`` is an entry of ``dictionary`` (of their type)."""
    import pyarrow.compute as pc

    if not dictionary.type.equals(labels.type):
        return False
    return bool(pc.index_in(labels, value_set=dictionary).null_count == 0)


def label_array(mech: Any, out_type: Any) -> Any:
    """The mechanism's output labels as an Arrow array of the output column's type."""
    import pyarrow as pa

    try:
        return pa.array(list(mech.output_labels), type=out_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError):
        if (pa.types.is_string(out_type) or pa.types.is_large_string(out_type)) \
                and (texts := label_texts(mech.output_labels)) is not None:
            return pa.array(texts, type=out_type)  # labels of several kinds, as text
        return pa.array(list(mech.output_labels)).cast(out_type)


def privatize_batch(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw],
                    batch: Any, cols: list[str], targets: list[str],
                    encoders: dict[str, Encoder], gen: np.random.Generator,
                    policies: Mapping[str, Policy], *, from_text: bool,
                    schema: Any, drop: Sequence[str] = (),
                    declared: Mapping[str, Any] | None = None, where: Path | None = None
                    ) -> Any:
    """One record batch with its privatised columns released (:func:`draw_columns`) as
    columns of ``schema``: the output labels gathered by the drawn indices (a dictionary
    column: the drawn indices over the output labels, or over the column's declared
    ordered dictionary ``declared[c]``, which every batch's own dictionary must equal),
    missing where the policy says so, the columns ``drop`` left out. ``None`` when a
    problem was found. ``where`` names the input in an error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrays = list(batch.columns)
    names = list(batch.schema.names)
    drawn = draw_columns(mechs, samplers, [batch.column(names.index(c)) for c in cols],
                         cols, encoders, gen, policies, from_text=from_text)
    if drawn is None:
        return None
    for c, t, (idx, null) in zip(cols, targets, drawn, strict=True):
        out_type = schema.field(t).type
        if pa.types.is_dictionary(out_type):
            # the drawn indices over the output labels, null where the output is missing;
            # over the declared ordered dictionary (its order and unused entries kept, as
            # an ordered categorical in memory) when every output label is one of its
            # entries. Never over a dictionary of the batch's own: one built from the
            # data (its entries, their order) would disclose the raw values
            labels, pos = dictionary_labels(mechs[c], out_type.value_type, policies[c])
            own = None if declared is None else declared.get(c)
            if own is not None:
                src = batch.column(names.index(c))
                got = src.dictionary if pa.types.is_dictionary(src.type) else None
                if got is None or not got.equals(own):
                    raise DataError(
                        f"column {c!r}{'' if where is None else f' of {str(where)!r}'} "
                        "is an ordered dictionary (categorical) whose dictionary differs "
                        "between row groups, so its order is not a declared one and "
                        "keeping it would disclose the raw values; write the column with "
                        "one dictionary in every row group, or unordered (its released "
                        "dictionary is then the output labels); nothing was published")
                at = pc.index_in(labels, value_set=own).to_numpy(zero_copy_only=False)
                labels, pos = own, at if pos is None else at[pos]
            codes = idx if pos is None else pos[idx]
            indices = pa.array(codes, mask=null).cast(out_type.index_type)
            new = pa.DictionaryArray.from_arrays(indices, labels, ordered=out_type.ordered)
        else:
            # (Arrow has no take or if_else for the view types: gather as their plain
            # type, then cast, which keeps every value)
            view = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
            gather_type = view.get(out_type, out_type)
            new = label_array(mechs[c], gather_type).take(pa.array(idx))
            if null is not None:
                new = pc.if_else(pa.array(null), pa.nulls(1, gather_type)[0], new)
            if gather_type != out_type:
                new = new.cast(out_type)
        if t in names:
            arrays[names.index(t)] = new
        else:
            names.append(t)
            arrays.append(new)
    if drop:
        arrays = [a for a, n in zip(arrays, names, strict=True) if n not in drop]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
