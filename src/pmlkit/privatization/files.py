"""Privatise columns of CSV and Parquet files: streamed, exact, atomic, never over the input.

Each input file is read in record batches (bounded memory), the named columns are
privatised batch by batch with one random stream, and the batches are written to a
temporary file next to the output that is published only when everything succeeded
(:mod:`pmlkit.privatization._publish`). Row order and row count are kept.

Untouched columns come out exactly as they went in
--------------------------------------------------
* CSV is read with every column as text: no null markers, no whitespace stripping, no
  type inference. Only the privatised column follows the declared policy
  (``csv.null_values``, ``csv.strip_whitespace``, then the mechanism's label type). CSV is
  written quoting a field only where CSV needs it, with the input's byte-order mark and
  line terminator, so every untouched cell's text is identical, byte for byte.
* CSV -> Parquet keeps text as text (``string`` columns).
* Parquet -> Parquet keeps the schema (types, field metadata), the values and the
  key-value metadata (pandas' included), each column's compression codec unless
  ``compression`` is given, and the row groups (a group larger than ``batch_rows`` is
  split into groups of ``batch_rows``: memory stays bounded by the batch).
* Duplicate column names are refused (which of two ``sex`` columns is sensitive?).

Speed without shortcuts
-----------------------
* A column privatised in place is read dictionary-encoded (CSV: the parser builds the
  dictionary; Parquet: the stored one), so the missing-value policy and the matching of
  labels run once per distinct value; each record still gets its own random draw.
* Parquet outputs dictionary-encode the columns whose input dictionary page stayed small
  (and the released columns); a column of mostly distinct values (an id) is written with
  plain pages instead of rebuilding a dictionary for each row group only to drop it at
  the writer's size cap. Values, types, metadata and codecs do not change.
* The output's SHA-256 (for the manifest) is computed from the bytes as they are written
  (:class:`~pmlkit.privatization._publish.HashingFile`), not by reading the file again.
* pmlkit starts no thread of its own: a file is read, privatised, written and hashed
  batch by batch on the calling thread (pyarrow and polars use their own thread pools
  inside a call), so an interrupt (SIGINT, SIGTERM) always meets one thread, which
  removes the temporary file and raises.
* CSV text is read without the parser's per-value UTF-8 check; each batch's text is
  instead checked by one scan for bytes >= 0x80 (ASCII is UTF-8), and only a column
  holding such bytes is checked value by value. A cell that is not UTF-8 is refused as
  before, naming its column and data row.
* A few text labels under the default policies (a missing or unknown value is an error,
  no stripping, no label that is a null marker) are found by one exact comparison per
  label, or, where the labels' UTF-8 lengths all differ (``Female``, ``Male``), by each
  row's length and one comparison of the chunk's bytes with those labels' bytes: a CSV
  column replaced in place is then read as plain text (building the parser's dictionary
  costs more than the comparisons), and a chunk in which any value equals no label goes
  through the policy and the encoder, which count every problem.
* No Python list or scalar is converted by ``pyarrow.array``/``pyarrow.scalar`` on the
  way of text labels (they import pandas, about 0.3 s); the few small arrays needed are
  built from their buffers.

Engines (Parquet -> Parquet)
----------------------------
CSV files are always read and written with pyarrow, whose streaming CSV reader and writer
measured 2-2.6x faster than polars' (``scan_csv().sink_csv()``) on this code's benchmark.

``engine="pyarrow"`` reads and writes with pyarrow. ``engine="polars"`` lets polars read
the file (streaming, in row order) and write it (its streaming Parquet writer, several
times faster on large files); the privatised columns of each chunk still go through the
same policy, label matching and sampler, consuming one random stream in row order, so
under one seed both engines release the same values. polars is used only where it writes
exactly what the pyarrow engine writes: column types it keeps (integers, floats, booleans,
text, dates, timestamps), one codec for every column chunk (or ``compression`` given), row
groups of one size and at most ``batch_rows`` rows. Its temporary output is checked before
publishing: the Arrow schema with field and key-value metadata, every raw key-value entry
(``ARROW:schema``, which readers restore the Arrow types from, is written as pyarrow
serialises it), the row count and the codecs. polars writes through the same hashing file
as pyarrow (a sequential, unseekable stream), so the SHA-256 is that of the bytes written,
and the size on disk must equal the bytes hashed. ``engine="auto"`` (the default) uses
polars where these hold and otherwise pyarrow (on a mismatch after writing, pyarrow writes
the file again from the same random state: nothing of the discarded file is published); an
explicit ``"polars"`` refuses instead. Publishing, manifest and clean-up are the same for
both.

Publishing
----------
Without ``overwrite`` an output is published with a hard link that fails if the name
exists, so concurrent runs cannot replace each other's output. With several inputs either
every output is published or none (outputs already linked are removed again). Temporary
files are removed on errors, SIGINT, SIGTERM and SIGHUP, and by the next run after a
SIGKILL.

The manifest
------------
Next to every output file ``<output>.pmlkit.json`` is published after the data (see
``docs/architecture.md``, "Privatisation manifest"). It records the run (:class:`FileReport`),
the data file's SHA-256 and size (a reader pairs data and manifest by that digest), and
under ``"privatized"`` a mapping from each output column to the mechanism that produced it
(its full JSON document under ``"mechanism"``, its digest, the missing-value policy and any
mapping of unknown labels). Columns released together through one joint mechanism (a
tuple key of the mechanism mapping; :mod:`pmlkit.privatization._joint_release`) each record
that mechanism and, under ``"joint_release"``, the columns released with it. Parquet
outputs carry the same document in their key-value metadata under the key ``pmlkit``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from .._provenance import warn_if_reference_counts
from ..errors import DataError, ValidationError
from ..io import (
    DEFAULT_BATCH_ROWS,
    CsvOptions,
    arrow_call,
    default_delimiter,
    expand_inputs,
    file_format,
    iter_batches,
    list_columns,
    text_array,
    text_scalar,
    unique_columns,
)
from ..rng import resolve_rng
from ..sampler import AliasSampler, Encoder, label_kind
from ._core import (
    arrow_output_type,
    as_mechanism_object,
    check_column_names,
    check_text_labels,
    mech_digest,
)
from ._history import CONTENT_KEY, ContentHasher, bound_columns, verified_record
from ._joint_release import JointDraw, JointReleaseLike, joint_views, split_mechanisms
from ._publish import (
    HashingFile,
    cleanup_on_signals,
    commit,
    deferred_signals,
    folder_lock,
    os_error,
    remove_stale,
    same_inode,
    temp_path,
)
from ._reuse import TallyingSampler
from .numeric_release import grid_of, manifest_entry, numeric_arrow_type, numeric_policies

__all__ = ["MANIFEST_FORMAT", "MANIFEST_SUFFIX", "MISSING_LABEL", "MISSING_POLICIES",
           "FileReport", "output_paths", "previous_privatization", "privatize_file"]

MANIFEST_SUFFIX = ".pmlkit.json"
#: The ``"format"`` entry of every manifest pmlkit writes.
MANIFEST_FORMAT = "pmlkit-privatization"
#: Rows per batch read from a CSV input at most (pyarrow sizes CSV blocks in bytes from
#: it, ~64 bytes a row: 1 MiB blocks, its default). pyarrow's CSV reader reads up to 32
#: blocks ahead, so its memory grows with the block: on 10^7 rows the run peaked at
#: +160 MiB with 1 MiB blocks, +229 with 2 MiB and +305 with 4 MiB, at the same CPU time
#: within noise. Batches only split the work: the values drawn and the bytes written do
#: not depend on them.
CSV_BATCH_ROWS = 1 << 14
#: The label a missing value becomes under ``missing="category"``.
MISSING_LABEL = "(missing)"
#: What to do with a missing value in a privatised column.
MISSING_POLICIES = ("error", "category", "keep")


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
        Digest of the mechanism used when every column went through the same one;
        ``None`` when the columns went through different mechanisms (see
        ``mechanisms_sha256``).
    mechanisms_sha256
        Digest of each column's mechanism, in the order of ``columns``.
    joint_guarantee
        The joint guarantee of the release (``JointGuarantee.to_dict()``), or ``None``
        when none was given.
    joint_columns
        The columns released together through one joint mechanism, one tuple per joint
        release (``()``: every column through its own mechanism).

    Examples
    --------
    >>> rep = FileReport((("a.csv", "b.csv", 10), ("c.csv", "d.csv", 5)), ("sex",), ("sex",),
    ...                  False, "secure", "ab" * 32)
    >>> rep.rows, rep.to_dict()["mechanisms_sha256"] == {"sex": "ab" * 32}
    (15, True)
    """

    files: tuple[tuple[str, str, int], ...]
    columns: tuple[str, ...]
    into: tuple[str, ...]
    seeded: bool
    rng: str
    mechanism_sha256: str | None
    mechanisms_sha256: tuple[str, ...] = ()
    joint_guarantee: Mapping[str, Any] | None = None
    joint_columns: tuple[tuple[str, ...], ...] = ()

    @property
    def rows(self) -> int:
        return sum(f[2] for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {"files": [{"input": i, "output": o, "rows": r} for i, o, r in self.files],
                "columns": list(self.columns), "into": list(self.into), "rows": self.rows,
                "seeded": self.seeded, "rng": self.rng,
                "mechanism_sha256": self.mechanism_sha256,
                "mechanisms_sha256": dict(zip(
                    self.columns, self.mechanisms_sha256 or
                    (self.mechanism_sha256,) * len(self.columns), strict=True)),
                "joint_guarantee": None if self.joint_guarantee is None
                else dict(self.joint_guarantee),
                **({"joint_columns": [list(j) for j in self.joint_columns]}
                   if self.joint_columns else {})}


def arrow_type_for(labels: Sequence[Any]) -> Any:
    import pyarrow as pa

    return {"str": pa.string(), "int": pa.int64(), "bool": pa.bool_(),
            "float": pa.float64()}.get(label_kind(labels))


def output_paths(inputs: list[Path], output: str | os.PathLike[str]) -> list[Path]:
    """Where each input goes: several inputs (or an existing folder / a path ending in
    a separator) -> ``output/<input name>``; one input -> ``output`` itself.

    Examples
    --------
    >>> from pathlib import Path
    >>> [str(p) for p in output_paths([Path("in/a.csv")], "out.csv")]
    ['out.csv']
    >>> [str(p) for p in output_paths([Path("in/a.csv"), Path("in/b.csv")], "out")]
    ['out/a.csv', 'out/b.csv']
    """
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


def same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_missing_policy(missing: Any) -> str:
    if missing not in MISSING_POLICIES:
        raise ValidationError(f"missing must be one of {', '.join(map(repr, MISSING_POLICIES))}"
                              f", got {missing!r}")
    return str(missing)


def column_mechanisms(mechanism: Any, cols: list[str]) -> dict[str, Any]:
    """One mechanism object per privatised column: a single mechanism serves every
    column; a mapping must name exactly the columns. A joint release (a tuple of columns
    through one mechanism) is refused here: only :func:`privatize_file` releases one."""
    if isinstance(mechanism, JointReleaseLike) or (
            isinstance(mechanism, Mapping) and any(isinstance(k, tuple) for k in mechanism)):
        raise ValidationError(
            "mechanism: a joint release (a tuple of columns through one mechanism) is "
            "released by the local engine only (privatize_file, --engine local); the dask "
            "engine releases each column through its own mechanism")
    if isinstance(mechanism, Mapping):
        keys = [str(k) for k in mechanism]
        if sorted(keys) != sorted(cols):
            extra = [k for k in keys if k not in cols]
            lacking = [c for c in cols if c not in keys]
            what = (f"names {extra[0]!r}, which is not among columns {cols!r}" if extra
                    else f"has no mechanism for column {lacking[0]!r}")
            raise ValidationError(f"mechanism must map every privatised column to its "
                                  f"mechanism; the mapping {what}")
        return {str(k): as_mechanism_object(m) for k, m in mechanism.items()}
    mech = as_mechanism_object(mechanism)
    return {c: mech for c in cols}


def check_unknown_as(unknown_as: Any, mechs: Mapping[str, Any]) -> dict[str, Any]:
    """``unknown_as`` per column: one label for every column, or a mapping column -> label
    (columns it does not name stop on unknown values)."""
    per = ({str(k): v for k, v in unknown_as.items()} if isinstance(unknown_as, Mapping)
           else {c: unknown_as for c in mechs})
    for c, lab in per.items():
        if c not in mechs:
            raise ValidationError(f"unknown_as names column {c!r}, which is not privatised "
                                  f"(columns: {list(mechs)!r})")
        if lab is not None and lab not in mechs[c].input_labels:
            raise ValidationError(f"unknown_as must be an input label of the mechanism of "
                                  f"column {c!r}, got {lab!r} (input labels: "
                                  f"{', '.join(map(repr, mechs[c].input_labels[:20]))})")
    return {c: per.get(c) for c in mechs}


def joint_record(joint_guarantee: Any) -> dict[str, Any] | None:
    """The manifest's record of a joint guarantee: a :class:`pmlkit.joint.JointGuarantee`,
    or its ``to_dict()`` read strictly (an invalid record is refused, never copied)."""
    from ..joint import JointGuarantee

    if joint_guarantee is None:
        return None
    if isinstance(joint_guarantee, JointGuarantee):
        return joint_guarantee.to_dict()
    if isinstance(joint_guarantee, Mapping):
        return JointGuarantee.from_dict(joint_guarantee).to_dict()
    raise ValidationError(f"joint_guarantee must be a JointGuarantee or its to_dict(), "
                          f"got {type(joint_guarantee).__name__}")


def previous_privatization(path: str | os.PathLike[str], *,
                           csv: CsvOptions | None = None) -> dict[str, Any] | None:
    """The release record an earlier ``privatize`` pass left with a file, checked against
    the file's content (``None`` if there is none).

    The record is read from a Parquet file's key-value metadata (key ``pmlkit``), else
    from the manifest ``<file>.pmlkit.json`` beside the file (CSV outputs, renamed copies
    whose manifest was renamed with them), else from the manifest of the folder holding
    the file (a part of a Dask folder output). It must be bound to the data it describes:
    the digest of every output column it names and the row count
    (:mod:`pmlkit.privatization._history`) are recomputed from the file (``csv``: how a
    CSV file is parsed: header, delimiter). A record with no binding, naming a column
    the file lacks, or whose digests differ is refused, never believed.

    Raises
    ------
    DataError
        The record cannot be read, is ambiguous (a key twice) or does not describe the
        file's content.

    Examples
    --------
    A Parquet output records its privatisation; a plain file has no record:

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> import pyarrow.parquet as pq
    >>> import pmlkit
    >>> workdir = tempfile.TemporaryDirectory()
    >>> folder = Path(workdir.name)
    >>> pq.write_table(pa.table({"sex": ["F", "M"]}), folder / "in.parquet")
    >>> previous_privatization(folder / "in.parquet") is None
    True
    >>> m = pmlkit.Mechanism(np.array([[0.9, 0.1], [0.1, 0.9]]), ("F", "M"), ("F", "M"))
    >>> _ = privatize_file(m, folder / "in.parquet", folder / "out.parquet", "sex")
    >>> record = previous_privatization(folder / "out.parquet")
    >>> record["format"], list(record["privatized"])
    ('pmlkit-privatization', ['sex'])
    >>> workdir.cleanup()
    """
    p = Path(path)
    return verified_record(p, csv=csv_options_for(p, csv), manifest_format=MANIFEST_FORMAT,
                           manifest_suffix=MANIFEST_SUFFIX)


#: What :func:`earlier_release` gives for a column released with others through one joint
#: mechanism.
JOINTLY_RELEASED: Any = "released jointly with other columns through one joint mechanism"


def earlier_release(inputs: Sequence[Path], csv: CsvOptions | None = None
                    ) -> tuple[dict[str, Any], set[str]]:
    """The source columns earlier ``privatize`` passes released in ``inputs`` (checked
    records, :func:`previous_privatization`) with their mechanisms, and the output
    columns those passes wrote (:data:`JOINTLY_RELEASED` in place of the mechanism of a
    column released with others through one joint mechanism)."""
    from ..mechanism import Mechanism

    out: dict[str, Any] = {}
    outputs: set[str] = set()
    for p in inputs:
        prev = previous_privatization(p, csv=csv)
        if prev is None:
            continue
        for target, entry in prev["privatized"].items():
            outputs.add(str(target))
            if entry.get("joint_release") is not None:
                # released together with other columns through one joint mechanism: not
                # the column's own mechanism (no factor of a product)
                out.setdefault(str(entry["column"]), JOINTLY_RELEASED)
                continue
            out.setdefault(str(entry["column"]),
                           Mechanism.from_dict(entry["mechanism"], allow_uncertified=True))
    return out, outputs


def check_joint_release(previous: Sequence[Mapping[str, Any] | None], cols: list[str],
                        joint_doc: Mapping[str, Any] | None, repeat: bool,
                        no_joint_guarantee: bool) -> None:
    """A release that adds columns to an earlier pass's is one release of all of them:
    it needs a joint guarantee naming exactly those columns, or ``no_joint_guarantee``
    (an explicit waiver). A repeat of an earlier column is governed by ``repeat``."""
    earlier = list(dict.fromkeys(str(e["column"]) for prev in previous if prev is not None
                                 for e in prev["privatized"].values()))
    released = list(dict.fromkeys([*earlier, *cols]))
    if joint_doc is not None:
        named = [str(c) for c in joint_doc.get("columns") or []]
        if sorted(set(named)) != sorted(released) and earlier:
            raise ValidationError(
                f"joint_guarantee covers columns {named!r} but the release holds "
                f"{released!r} (columns {[c for c in earlier if c not in cols]!r} were "
                "released by an earlier pass); compute the guarantee of all of them")
        return
    fresh = [c for c in cols if c not in earlier]
    if earlier and fresh and not no_joint_guarantee and not (
            repeat and set(cols) <= set(earlier)):
        raise DataError(
            f"columns {[c for c in earlier if c not in cols]!r} were released by an earlier "
            f"pass over this data, so privatising {fresh[0]!r} releases "
            f"{', '.join(released)} together, and per-column eps do not add up: give their "
            "joint guarantee (joint_guarantee=, --plan or --joint-reference) or waive it "
            "explicitly (no_joint_guarantee=True, --no-joint-guarantee)")


def check_repeat(prev: Mapping[str, Any] | None, cols: list[str], targets: list[str],
                  where: Path, repeat: bool) -> None:
    """Refuse privatising again a column an earlier pass privatised (or released from),
    unless ``repeat``: that is a repeated release of the same values."""
    if prev is None or repeat:
        return
    section = prev["privatized"]
    sources = {str(e.get("column")): t for t, e in section.items() if isinstance(e, Mapping)}
    for c, t in zip(cols, targets, strict=True):
        hit = (c if c in section else t if t in section else
               sources[c] if c in sources else None)
        if hit is not None:
            raise DataError(
                f"column {c!r} of {str(where)!r} was already privatised by an earlier pass "
                f"(output column {hit!r}); privatising it again is a repeated release whose "
                "leakage adds up: compute it with pmlkit joint repeat, then pass "
                "repeat=True (--allow-repeat) to record both passes")


def merged_meta(prev: Mapping[str, Any] | None, meta: dict[str, Any]) -> dict[str, Any]:
    """This pass's record merged over an earlier pass's: earlier ``privatized`` entries
    are kept (unless this pass replaced their column) and every earlier record is kept
    whole under ``previous_passes``."""
    if prev is None:
        return meta
    earlier = {k: v for k, v in prev.items() if k != "previous_passes"}
    passes = [*(prev.get("previous_passes") or []), earlier]
    return {**meta, "privatized": {**prev["privatized"], **meta["privatized"]},
            "previous_passes": passes}


def check_inputs(inputs: Sequence[Path], cols: list[str], targets: list[str], into: Any,
                 csv: Any, repeat: bool) -> list[Any]:
    """Fail fast, before anything is written, on a column that is missing or ambiguous in
    any input, an ``into`` name that already exists, or a column an earlier pass already
    privatised (unless ``repeat``). Returns each input's earlier privatisation record."""
    for inp in inputs:
        available = unique_columns(inp, csv=csv_options_for(inp, csv))
        missing_cols = [c for c in cols if c not in available]
        if missing_cols:
            raise DataError(f"column {missing_cols[0]!r} not found in {str(inp)!r}; "
                            f"available columns: {', '.join(map(repr, available))}")
        clash = [t for t in targets if t in available and t not in cols]
        if into is not None and clash:
            raise DataError(f"into column {clash[0]!r} already exists in {str(inp)!r}; "
                            "choose a new name")
    previous = [previous_privatization(inp, csv=csv) for inp in inputs]
    for inp, prev in zip(inputs, previous, strict=True):
        check_repeat(prev, cols, targets, inp, repeat)
    return previous


def privatize_file(mechanism: Any, input: str | os.PathLike[str] | Sequence[Any],
                   output: str | os.PathLike[str], columns: str | Sequence[str], *,
                   into: str | Sequence[str] | None = None, rng: Any = None,
                   overwrite: bool = False, csv: CsvOptions | None = None,
                   batch_rows: int = DEFAULT_BATCH_ROWS, progress: bool = False,
                   manifest: bool = True, missing: str = "error", unknown_as: Any = None,
                   compression: str | None = None, joint_guarantee: Any = None,
                   repeat: bool = False, engine: str = "auto",
                   no_joint_guarantee: bool = False, keep_raw: bool = True) -> FileReport:
    """Privatise named columns of CSV/Parquet file(s), streaming, with an atomic write.

    Every column not named in ``columns`` comes out exactly as it went in (see the module
    docstring); the privatised column alone follows the parsing policy of ``csv``.

    Parameters
    ----------
    mechanism
        A :class:`pmlkit.Mechanism` (or row-stochastic matrix with labels ``0..N-1``)
        applied to every column, or a mapping ``{column: mechanism}`` naming exactly the
        ``columns`` (each column through its own mechanism, independent randomness). A
        key may be a tuple of columns mapping to a joint release
        (``pmlkit.joint.JointRelease``, a plan designed in joint mode; or a joint release
        given alone): those columns are released together, one draw per record from the
        joint mechanism's row of the record's tuple, each column written in its own type
        with the label its position of the drawn output tuple holds (a value outside a
        column's alphabet is an error, or ``unknown_as``; ``missing="keep"`` is refused).
        The manifest records each of its columns with the joint mechanism and, under
        ``"joint_release"``, the release's columns, outputs and record.
    input
        A file, a glob pattern (``"data/part-*.parquet"``) or a list of them.
    output
        The output file (one input), or a folder (several inputs: each is written to
        ``output/<input name>``; the folder is created if missing). The format follows the
        output's extension (CSV in, Parquet out is allowed; ``.csv.gz``/``.bz2``/``.zst``
        are compressed, ``.tsv`` is tab-separated).
    columns
        Column(s) holding the sensitive labels.
    into
        New column name(s), one per column, to hold the outputs; default: replace the
        values in place.
    keep_raw
        With ``into``: keep the original (raw, sensitive) columns in the output unchanged
        (the default here, for compatibility), or leave them out (``False``: the
        command line's default, ``--keep-raw`` keeps them); the manifest lists the
        columns left out under ``"dropped"``. Such an output is written by the pyarrow
        writer (``engine="polars"`` is refused).
    rng
        ``None`` (secure default), an int seed or a numpy Generator (research only); see
        :func:`pmlkit.privatize`.
    overwrite
        Replace an existing output file (refused by default). The input is never
        overwritten.
    csv
        Parsing options for CSV inputs (headerless files, delimiter); ``null_values`` and
        ``strip_whitespace`` apply to the privatised column(s) only. Without ``csv`` (or
        with no ``null_values``) an empty cell of a privatised column is missing.
    batch_rows
        Rows per streamed batch (memory bound).
    progress
        Show a tqdm progress bar.
    manifest
        Write ``<output>.pmlkit.json`` recording the run (see the module docstring).
    missing
        A missing value in a privatised column: ``"error"`` (default: refuse, with the
        count), ``"category"`` (it is the label ``"(missing)"``, which the mechanism must
        have as an input label; an output ``"(missing)"`` is written as missing) or
        ``"keep"`` (it stays missing in the output: whether a record's value is missing is
        then released without protection).
    unknown_as
        ``None`` (default): a value that is not an input label of the mechanism is an
        error. An input label: such values are privatised as if they were that label; the
        number of rows mapped is recorded in the manifest.
    compression
        Parquet output codec (``"snappy"``, ``"zstd"``, ``"gzip"``, ``"none"``, ...);
        default: each column keeps its input codec (Parquet input) or pyarrow's default.
        CSV outputs are compressed by their extension.
    joint_guarantee
        The guarantee of the whole release (a :class:`pmlkit.JointGuarantee` or its
        ``to_dict()``), recorded in the manifest under ``"joint_guarantee"``. Per-column
        eps do not add up: with several columns, compute it (:func:`pmlkit.joint_guarantee`
        or ``pmlkit joint design``). Recorded as given; ``None`` records ``null``.
    repeat
        An input privatised by an earlier pass (a pmlkit output: CSV with its manifest
        beside it, Parquet, a part of a Dask folder output; see
        :func:`previous_privatization`) keeps that pass's record (its ``privatized``
        entries are merged with this pass's, and the earlier record is kept under
        ``"previous_passes"``); a record that does not describe the input's content is
        refused. Privatising again a column that pass privatised (or released from) is a
        repeated release and is refused unless ``repeat=True``. Privatising another
        column releases it together with the earlier ones: that needs a
        ``joint_guarantee`` naming all of them, or ``no_joint_guarantee=True``.
    engine
        The Parquet -> Parquet writer: ``"pyarrow"``, ``"polars"`` or ``"auto"``
        (default: polars where it writes the file exactly, else pyarrow). Both read and
        privatise the same batches with the same code, so a seeded run releases the same
        values with either. polars is used only when every column has a type it keeps
        exactly, every column chunk has one codec (or ``compression`` is given) and the row
        groups have one size; its output is checked (schema with field and key-value
        metadata, row count, codecs) before it is published, and on a mismatch ``"auto"``
        writes the file again with pyarrow from the same random state. An explicit
        ``"polars"`` on a file it cannot write exactly is a DataError. CSV inputs or
        outputs always use pyarrow (``"polars"`` is then refused).
    no_joint_guarantee
        Waive the joint guarantee of a release that adds columns to an earlier pass's
        (recorded as ``null``; per-column eps do not add up). Refused by default.

    Raises
    ------
    DataError
        Missing input or column, duplicate column names, unknown labels or nulls (naming
        the value and its row count), output equal to an input, existing output without
        ``overwrite``, a file-system error. No output is left behind on any error or
        interruption; with several inputs either all outputs are published or none.

    Examples
    --------
    Swap two labels in a CSV column (a permutation, so the output can be checked by eye);
    the other column is copied byte for byte and a manifest is published beside the output:

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import pmlkit
    >>> workdir = tempfile.TemporaryDirectory()
    >>> folder = Path(workdir.name)
    >>> _ = (folder / "in.csv").write_text("id,sex\\n1,F\\n2,M\\n3,F\\n")
    >>> swap = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("F", "M"), ("F", "M"))
    >>> report = privatize_file(swap, folder / "in.csv", folder / "out.csv", "sex")
    >>> print((folder / "out.csv").read_text(), end="")
    id,sex
    1,M
    2,F
    3,M
    >>> report.rows, (folder / "out.csv.pmlkit.json").exists()
    (3, True)
    >>> workdir.cleanup()
    """
    cols, targets = check_column_names(columns, into, as_str=True)
    drop = raw_columns_dropped(cols, targets, keep_raw)
    if drop and engine == "polars":
        raise ValidationError(
            "engine='polars' (--engine polars) writes every input column; leaving the raw "
            f"column(s) {drop!r} out needs engine='auto' or 'pyarrow' (--engine local or "
            "pyarrow), or keep them with keep_raw=True (--keep-raw)")
    plain, joints = split_mechanisms(mechanism, cols)
    views = {c: v for c, v, _ in joint_views(joints)}
    alone = [c for c in cols if c not in views]
    plain_mechs = column_mechanisms(plain, alone) if alone else {}
    # every column's labels: its own mechanism, or the view of its joint release
    mechs = {c: views[c] if c in views else plain_mechs[c] for c in cols}
    joint_doc = joint_record(joint_guarantee)
    if joints and missing == "keep":
        raise ValidationError(
            f"missing='keep' would release whether a value of joint columns "
            f"{list(joints[0].columns)!r} is missing without protection, and the tuple has no "
            "label for it: use missing='error' or 'category' (a joint alphabet with the "
            f"label {MISSING_LABEL!r})")
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int | np.integer) \
            or batch_rows < 1:
        raise ValidationError(f"batch_rows must be an integer >= 1, got {batch_rows!r}")
    missing = check_missing_policy(missing)
    for c, mech in mechs.items():
        if missing == "category" and MISSING_LABEL not in mech.input_labels:
            raise ValidationError(
                f"missing='category' needs a mechanism with the input label "
                f"{MISSING_LABEL!r} (column {c!r}); design it from data whose missing "
                "values are a category (missing='category')")
    unknown = check_unknown_as(unknown_as, mechs)
    if engine not in ENGINES:
        raise ValidationError(f"engine must be one of {', '.join(map(repr, ENGINES))}, "
                              f"got {engine!r}")
    if compression is not None and not isinstance(compression, str):
        raise ValidationError(f"compression must be a codec name, got {compression!r}")
    inputs = expand_inputs(input)
    outputs = output_paths(inputs, output)
    for out in outputs:
        if file_format(out) == "csv" and compression is not None:
            raise ValidationError(f"compression applies to Parquet outputs, got "
                                  f"{compression!r} for {str(out)!r}; a CSV output is "
                                  "compressed by its extension (.csv.gz, .csv.bz2, .csv.zst)")
        for inp in inputs:
            if same_file(inp, out):
                raise DataError(f"output {str(out)!r} is the input file {str(inp)!r}; "
                                "pmlkit never overwrites its input, choose another output")
        if out.is_dir():
            raise DataError(f"output {str(out)!r} is a folder; name an output file")
        if out.exists() and not overwrite:
            raise DataError(f"output file {str(out)!r} already exists; pass overwrite=True "
                            "(--overwrite) to replace it")
        man = _manifest_path(out)
        if manifest and man.exists() and not out.exists() and not overwrite:
            raise DataError(f"manifest {str(man)!r} already exists without its data file; "
                            "remove it or pass overwrite=True (--overwrite)")
    previous = check_inputs(inputs, cols, targets, into, csv, repeat)
    check_joint_release(previous, cols, joint_doc, repeat, no_joint_guarantee)
    if outputs[0] != Path(output):  # writing into a folder: create it
        try:
            Path(output).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise os_error(exc, "create the output folder", Path(output)) from exc

    source = resolve_rng(rng)
    # each plain column's input labels counted as they are drawn (the reference-reuse
    # warning; a joint release's columns are read through label views that record no counts)
    tallies = {c: TallyingSampler(AliasSampler(m.matrix), m) for c, m in plain_mechs.items()}
    samplers: dict[str, AliasSampler | JointDraw] = {
        c: cast(AliasSampler, t) for c, t in tallies.items()}
    digests = {c: mech_digest(m) for c, m in plain_mechs.items()}
    mech_docs = {c: m.to_dict() for c, m in plain_mechs.items()}
    joint_entries: dict[str, dict[str, Any]] = {}
    for jd in joints:  # each column of a joint release records the joint mechanism
        entry = jd.manifest_entry([targets[cols.index(c)] for c in jd.columns])
        doc = jd.mechanism.to_dict()
        for c in jd.columns:
            samplers[c], digests[c], mech_docs[c] = jd, jd.digest, doc
            joint_entries[c] = entry
    digest = digests[cols[0]] if len(set(digests.values())) == 1 else None
    joint_columns = tuple(jd.columns for jd in joints)
    for c, m in mechs.items():
        check_text_labels(m, f"mechanism for column {c!r}")
    policies: dict[str, Any] = {c: Policy(m, csv, missing, unknown[c])
                                for c, m in mechs.items()}
    numeric = numeric_policies(mechs, csv, missing, unknown)  # columns on a NumericGrid
    policies.update(numeric)
    if numeric and engine != "pyarrow":  # (the polars writer is not used for them)
        engine = "pyarrow" if engine == "auto" else _refuse_polars(list(numeric))
    done = []
    bar = _progress_bar(inputs, csv, progress)
    staged: list[_Staged] = []
    temps: list[Path] = []  # every temporary output, listed before it is created
    try:
        with cleanup_on_signals():
            try:
                for inp, out, prev in zip(inputs, outputs, previous, strict=True):
                    before = {c: t.counts.copy() for c, t in tallies.items()}
                    remove_stale(out)
                    remove_stale(_manifest_path(out))
                    for pol in policies.values():
                        pol.unknown_rows = 0
                    privatized = {t: {"column": c, "mechanism": mech_docs[c],
                                      "mechanism_sha256": digests[c], "missing": missing,
                                      "unknown_as": unknown[c],
                                      **(manifest_entry(numeric[c], done=False)
                                         if c in numeric else {}),
                                      **({"joint_release": joint_entries[c]}
                                         if c in joint_entries else {})}
                                  for c, t in zip(cols, targets, strict=True)}
                    meta = merged_meta(prev, {
                        "format": MANIFEST_FORMAT, "version": 1, "columns": cols,
                        "into": targets, "seeded": source.seeded,
                        "rng": source.description, "mechanism_sha256": digest,
                        "joint_guarantee": joint_doc, "privatized": privatized,
                        **({"dropped": drop} if drop else {})})
                    st = one_file(mechs, samplers, inp, out, cols, targets,
                                   source.generator, policies, csv=csv,
                                   batch_rows=int(batch_rows), bar=bar,
                                   meta={"pmlkit": json.dumps(meta)},
                                   compression=compression, engine=engine,
                                   temps=temps, drop=drop)
                    staged.append(st)
                    for c, t in zip(cols, targets, strict=True):
                        privatized[t]["unknown_mapped_rows"] = policies[c].unknown_rows
                        if c in numeric:  # the grid, its policy, values clamped/rounded
                            privatized[t].update(manifest_entry(numeric[c]))
                    meta["privatized"].update(privatized)
                    single = FileReport(((str(inp), str(out), st.rows),), tuple(cols),
                                        tuple(targets), source.seeded, source.description,
                                        digest, tuple(digests[c] for c in cols), joint_doc,
                                        joint_columns)
                    st.manifest_doc = {**meta, **single.to_dict(), "engine": "local",
                                       "writer": st.engine,
                                       "data": {"file": out.name, "sha256": st.sha256,
                                                "bytes": st.size},
                                       "released_content": st.content}
                    done.append((str(inp), str(out), st.rows))
                    for c in tallies:  # PMLWarning: the input looks like the reference sample
                        warn_if_reference_counts(mechs[c], tallies[c].counts - before[c],
                                                 f"{str(inp)!r}, column {c!r}")
                if len(inputs) > 1:  # the inputs together
                    for c in tallies:
                        warn_if_reference_counts(mechs[c], tallies[c].counts,
                                                 f"the {len(inputs)} inputs, column {c!r}")
                _publish_all(staged, overwrite=overwrite, manifest=manifest)
            finally:
                _settle([functools.partial(tmp.unlink, missing_ok=True) for tmp in temps])
    finally:
        if bar is not None:
            bar.close()
    return FileReport(tuple(done), tuple(cols), tuple(targets), source.seeded,
                      source.description, digest, tuple(digests[c] for c in cols), joint_doc,
                      joint_columns)


def _refuse_polars(columns: list[str]) -> str:
    raise ValidationError(f"engine='polars' (--engine polars) does not release numeric "
                          f"columns ({', '.join(map(repr, columns))}); use engine='auto' or "
                          "'pyarrow' (--engine local or pyarrow)")


@dataclass
class _Staged:
    """A finished temporary output waiting to be published."""

    tmp: Path
    out: Path
    rows: int
    sha256: str
    size: int
    manifest_doc: dict[str, Any] = dataclasses.field(default_factory=dict)
    engine: str = "pyarrow"
    #: the binding of the release record: digests of the privatised columns' content
    content: dict[str, Any] | None = None


def policy_error(encoder: Encoder, mech: Any, what: str) -> DataError:
    """The encoder's error (:meth:`pmlkit.sampler.Encoder.error`: the null and unknown
    values found, with their counts) followed by the options of :func:`privatize_file`
    (and of ``pmlkit privatize``) that release such rows: ``missing`` for nulls,
    ``unknown_as`` for values that are not input labels.

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> from pmlkit.sampler import Encoder
    >>> enc = Encoder(["a", "b"])
    >>> enc.encode_numpy(np.array(["a", None], dtype=object)) is None
    True
    >>> m = pmlkit.Mechanism(np.eye(2), ("a", "b"), ("a", "b"))
    >>> print(policy_error(enc, m, "column 'x'"))  # doctest: +NORMALIZE_WHITESPACE
    column 'x': 1 row holds a null/missing value (None/NaN/NA), which cannot be privatised;
    drop or impute them explicitly first; or, to release them, pass missing='keep' (command
    line: --missing keep; whether a value is missing is then released unprotected), or
    design the mechanism with missing='category' (pmlkit design --missing category) and
    pass missing='category'; nothing was privatised
    """
    base = str(encoder.error(what)).removesuffix("; nothing was privatised")
    hints = []
    if encoder.nulls:
        keep = ("missing='keep' (command line: --missing keep; whether a value is missing "
                "is then released unprotected)")
        if MISSING_LABEL in mech.input_labels:
            hints.append(f"or, to release them, pass missing='category' (command line: --missing "
                         f"category: the mechanism has the label {MISSING_LABEL!r}) or {keep}")
        else:
            hints.append(f"or, to release them, pass {keep}, or design the mechanism with "
                         "missing='category' (pmlkit design --missing category) and pass "
                         "missing='category'")
    if encoder.unknown:
        hints.append("to release a value the mechanism does not know as one of its input "
                     "labels, pass unknown_as=LABEL (command line: --unknown-as LABEL)")
    return DataError("; ".join([base, *hints, "nothing was privatised"]))


def raw_columns_dropped(cols: Sequence[str], targets: Sequence[str], keep_raw: Any
                        ) -> list[str]:
    """The raw columns a release leaves out of its output: each privatised column whose
    released values go into another column (``into``), unless ``keep_raw``.

    Examples
    --------
    >>> raw_columns_dropped(["sex", "race"], ["sex_released", "race"], False)
    ['sex']
    >>> raw_columns_dropped(["sex"], ["sex_released"], True)
    []
    """
    if not isinstance(keep_raw, bool | np.bool_):
        raise ValidationError(f"keep_raw must be True or False, got {keep_raw!r}")
    if keep_raw:
        return []
    return [c for c, t in zip(cols, targets, strict=True) if c != t]


def _manifest_path(out: Path) -> Path:
    return out.with_name(out.name + MANIFEST_SUFFIX)


def _publish_all(staged: list[_Staged], *, overwrite: bool, manifest: bool) -> None:
    """Publish every staged output and its manifest, or none of them."""
    with folder_lock([st.out.parent for st in staged]):
        _publish_locked(staged, overwrite=overwrite, manifest=manifest)


def _publish_locked(staged: list[_Staged], *, overwrite: bool, manifest: bool) -> None:
    # each file is listed before its commit (a signal just after the commit still undoes
    # it); the undoing removes only a name that holds this run's file
    published: list[tuple[Path, os.stat_result]] = []
    try:
        for st in staged:
            info = os.stat(st.tmp)
            published.append((st.out, info))
            try:
                commit(st.tmp, st.out, overwrite=overwrite)
            except OSError as exc:
                raise os_error(exc, "write the output", st.out) from exc
            if not manifest:
                continue
            man = _manifest_path(st.out)
            mtmp = temp_path(man)
            try:
                mtmp.write_text(json.dumps(st.manifest_doc, indent=2) + "\n", encoding="utf-8")
                published.append((man, os.stat(mtmp)))
                commit(mtmp, man, overwrite=overwrite)
            except OSError as exc:
                raise os_error(exc, "write the manifest", man) from exc
            finally:
                _settle([functools.partial(mtmp.unlink, missing_ok=True)])
            if not same_inode(st.out, info):  # another --overwrite run replaced the data
                raise DataError(f"output {str(st.out)!r} was replaced by another run while "
                                "this one was publishing it; run again")
    except BaseException as exc:
        removed: list[str] = []

        def undo(path: Path, info: os.stat_result) -> None:
            if same_inode(path, info):  # only what this run published
                path.unlink(missing_ok=True)
                removed.append(str(path))

        _settle([functools.partial(undo, path, info) for path, info in reversed(published)])
        if isinstance(exc, DataError) and removed and len(staged) > 1:
            raise DataError(f"{exc}; none of the {len(staged)} outputs was published "
                            "(those already written were removed)") from exc
        raise


class Policy:
    """How the privatised column is read: CSV text to labels, missing values, unknowns."""

    def __init__(self, mech: Any, csv: CsvOptions | None, missing: str,
                 unknown_as: Any) -> None:
        import pyarrow as pa

        self.mech = mech
        self.csv = csv
        self.missing = missing
        self.unknown_as = unknown_as
        self.in_type = arrow_type_for(mech.input_labels)
        self.unknown_rows = 0
        self._label_set: Any = None
        if self.in_type is not None and pa.types.is_string(self.in_type):
            self._label_set = text_array(list(mech.input_labels))

    @property
    def label_set(self) -> Any:
        """The input labels as an Arrow array of :attr:`in_type` (None: no such type)."""
        import pyarrow as pa

        if self._label_set is None and self.in_type is not None:
            self._label_set = pa.array(list(self.mech.input_labels), type=self.in_type)
        return self._label_set

    @property
    def few_text_labels(self) -> bool:
        """Whether a text column's input indices can be found by one exact comparison per
        label: a few text labels, the default policies (a missing or an unknown value is
        an error), no whitespace stripping, and no label that is a null marker. A chunk
        whose every value equals a label then needs no policy at all (none of its values
        is a null marker); any other chunk goes through the policy and the encoder."""
        opts = self.csv or CsvOptions()
        nulls = opts.null_values if opts.null_values else ("",)
        labels = self.mech.input_labels
        return (label_kind(labels) == "str" and len(labels) <= _EQUALITY_LABELS
                and self.missing == "error" and self.unknown_as is None
                and not opts.strip_whitespace and not set(nulls) & set(labels))

    def from_text(self, arr: Any) -> Any:
        """CSV text of a privatised column -> labels (strip, null markers, label type)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        opts = self.csv or CsvOptions()
        if opts.strip_whitespace:
            arr = pc.utf8_trim_whitespace(arr)
        nulls = opts.null_values if opts.null_values else ("",)
        is_null = pc.is_in(arr, value_set=text_array(list(nulls), arr.type))
        arr = pc.if_else(is_null, text_scalar(None, arr.type), arr)
        if self.in_type is not None and not pa.types.is_string(self.in_type):
            try:
                arr = pc.cast(arr, self.in_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # not all labels: the encoder names the offending values
        return arr

    def prepare(self, arr: Any) -> tuple[Any, Any]:
        """Apply the missing-value and unknown-label policies; returns (values to encode,
        mask of rows whose output must be missing, or None)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_dictionary(arr.type):
            if self.missing == "error" and self.unknown_as is None:
                return arr, None
            arr = arr.dictionary_decode()
        keep_mask = None
        if self.missing == "category" and arr.null_count:
            try:
                arr = arr.fill_null(pa.scalar(MISSING_LABEL, type=arr.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise DataError(f"missing='category' needs a text column, this one is "
                                f"{arr.type}") from exc
        elif self.missing == "keep" and arr.null_count:
            keep_mask = arr.is_null()
            arr = arr.fill_null(pa.scalar(self.mech.input_labels[0], type=arr.type)) \
                if self.label_set is not None else arr
        if self.unknown_as is not None and self.label_set is not None:
            try:
                known = pc.is_in(arr, value_set=self.label_set.cast(arr.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                known = None
            if known is not None:
                unknown = pc.and_(pc.invert(known), arr.is_valid())
                n = pc.sum(unknown).as_py() or 0
                if n:
                    self.unknown_rows += int(n)
                    arr = pc.if_else(unknown, pa.scalar(self.unknown_as, type=arr.type), arr)
        return arr, keep_mask


def csv_options_for(inp: Path, csv: CsvOptions | None) -> CsvOptions | None:
    """The options that read a CSV input as pure text (no null markers, no stripping)."""
    if file_format(inp) != "csv":
        return csv
    base = csv if csv is not None else CsvOptions()
    return dataclasses.replace(base, strip_whitespace=False, null_values=(),
                               delimiter=base.delimiter_for(inp))


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


def _parquet_codecs(pf: Any) -> dict[str, str]:
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


#: A dictionary page at least this large (uncompressed) marks a column whose values are
#: mostly distinct (unique ids, free text): writers cap dictionaries at about 1 MiB and
#: then fall back to plain pages.
DICTIONARY_LARGE_BYTES = 1 << 19


def _dictionary_page_bytes(fh: Any, offset: int) -> int | None:
    """The uncompressed size of the dictionary page at ``offset``, from its Thrift
    (compact protocol) page header: field 1 (page type, i32) then field 2 (uncompressed
    size, i32), each one header byte ``0x15`` and a zigzag varint. ``None`` if the
    bytes are not laid out so."""
    fh.seek(offset)
    head = fh.read(16)
    pos, values = 0, []
    for _ in range(2):
        if pos >= len(head) or head[pos] != 0x15:
            return None
        pos += 1
        shift = value = 0
        while True:
            if pos >= len(head) or shift > 35:
                return None
            byte = head[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        values.append((value >> 1) ^ -(value & 1))
    page_type, size = values
    return size if page_type == 2 and size >= 0 else None  # 2: DICTIONARY_PAGE


def _parquet_dictionary(pf: Any, path: Path) -> list[str] | None:
    """The columns worth writing dictionary-encoded, judged by the input's first row
    group: those stored with a dictionary page that stayed small (under
    :data:`DICTIONARY_LARGE_BYTES` uncompressed). A column of mostly distinct values
    (unique ids) is written plain: a writer would otherwise build its dictionary again
    for every row group only to drop it at the size cap, the most expensive part of
    writing such a column. Only the encoding changes, never a value. ``None`` (the
    writer's default) when the file has nested columns or no row group, or a page
    header cannot be read."""
    md = pf.metadata
    if md.num_row_groups == 0:
        return None
    rg = md.row_group(0)
    small: dict[str, bool] = {}
    try:
        with open(path, "rb") as fh:
            for j in range(rg.num_columns):
                c = rg.column(j)
                if "." in c.path_in_schema:
                    return None
                if not c.has_dictionary_page or c.dictionary_page_offset is None:
                    small[c.path_in_schema] = False
                    continue
                size = _dictionary_page_bytes(fh, c.dictionary_page_offset)
                if size is None:
                    return None
                small[c.path_in_schema] = size < DICTIONARY_LARGE_BYTES
    except OSError:
        return None
    return [n for n, ok in small.items() if ok]


def _settle(steps: Sequence[Callable[[], object]], *, reraise: bool = True) -> None:
    """Run every clean-up step (removing a temporary file, closing a writer), in order,
    whatever happens: a step's error is ignored, and a signal arriving meanwhile (a second
    Ctrl-C, a SIGTERM) is held back until the last step ran, then raised (with
    ``reraise=False`` dropped: the caller raises its own first error). A step that
    raises KeyboardInterrupt or SystemExit itself (polars passes Ctrl-C on that way), or a
    signal that lands before the holding back takes effect, makes the step run again (the
    steps may run twice), at most 100 times in all."""
    done = 0
    pending: BaseException | None = None
    for _ in range(100):
        try:
            with deferred_signals():
                while done < len(steps):
                    try:
                        steps[done]()
                    except Exception:
                        pass
                    done += 1
            break
        except (KeyboardInterrupt, SystemExit) as exc:
            pending = pending or exc
    if pending is not None and reraise:
        raise pending


def _discard(hashed: Any, tmp: Path, *closers: Any) -> None:
    """After a failed write: close the writers ``closers`` (callables), then the hashing
    file, and remove the temporary output (see :func:`_settle`). Their own errors are
    ignored, and so is an interrupt they raise or a signal arriving meanwhile (Ctrl-C
    during a polars write raises KeyboardInterrupt from polars while Python's own handler
    raises another at the next line): the clean-up is not stopped half way, and the
    first error is the one the caller raises."""
    steps: list[Callable[[], object]] = [*closers]
    if hashed is not None:
        steps.append(hashed.close)
    steps.append(functools.partial(tmp.unlink, missing_ok=True))
    _settle(steps, reraise=False)


def one_file(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw], inp: Path,
              out: Path, cols: list[str], targets: list[str], gen: np.random.Generator,
              policies: Mapping[str, Policy], *,
              csv: CsvOptions | None, batch_rows: int, bar: Any, meta: dict[str, str],
              compression: str | None, piece: tuple[int, int] | None = None,
              engine: str = "pyarrow", temps: list[Path] | None = None,
              drop: Sequence[str] = ()) -> _Staged:
    """Privatise one input file (or one ``piece`` of it: a byte range of a CSV file or a
    row-group range of a Parquet file) into a temporary file next to ``out``; column ``c``
    goes through ``mechs[c]`` (``samplers[c]``, ``policies[c]``). ``engine`` is the
    Parquet writer: ``"pyarrow"``, ``"polars"`` (refused where it cannot write the file
    exactly) or ``"auto"`` (polars where it can, else pyarrow); see :data:`ENGINES`.

    CSV is parsed in blocks of about ``64 * batch_rows`` bytes (at most
    :data:`CSV_BATCH_ROWS` rows: a small read-ahead); a row longer than a block (a cell
    of several megabytes) cannot be parsed in them, so the file is then privatised again
    from the start in blocks 16 times larger (up to 1 GiB), from the same random state:
    the attempt that failed published nothing and its temporary file is removed, so the
    release is the one a single pass with large blocks would give.

    The temporary file's name is appended to ``temps`` (if given) before the file is
    created, so the caller can remove it even if a signal arrives between this function
    returning and its result being stored. The columns ``drop`` (raw columns whose
    released values went into other columns, :func:`raw_columns_dropped`) are left out
    of the output (written by the pyarrow engine)."""
    state = gen.bit_generator.state
    rows_cap = CSV_BATCH_ROWS
    while True:
        try:
            return _one_file(mechs, samplers, inp, out, cols, targets, gen, policies,
                             csv=csv, batch_rows=batch_rows, bar=bar, meta=meta,
                             compression=compression, piece=piece, engine=engine,
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


def _one_file(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw], inp: Path,
              out: Path, cols: list[str], targets: list[str], gen: np.random.Generator,
              policies: Mapping[str, Policy], *,
              csv: CsvOptions | None, batch_rows: int, bar: Any, meta: dict[str, str],
              compression: str | None, piece: tuple[int, int] | None,
              engine: str, csv_rows: int, temps: list[Path] | None = None,
              drop: tuple[str, ...] = ()) -> _Staged:
    """One attempt of :func:`one_file`, CSV parsed in batches of at most ``csv_rows``
    rows."""
    import pyarrow as pa

    in_fmt, out_fmt = file_format(inp), file_format(out)
    read_csv = csv_options_for(inp, csv)
    names = list_columns(inp, csv=read_csv)
    base_meta: dict[Any, Any] = {}
    codecs: dict[str, str] = {}
    dictionary: list[str] | None = None
    if in_fmt == "csv":
        fields = [pa.field(n, pa.string()) for n in names]
        column_types = {n: pa.string() for n in names}
        # a column replaced in place is read dictionary-encoded: its text is hashed once,
        # by the parser, and the policy and the labels are matched once per distinct
        # value (it is not written, so its text need not be kept). A few text labels
        # under the default policies are cheaper still: one exact comparison per label
        # on the plain text (building the dictionary costs ~35 ns a row)
        for c, t in zip(cols, targets, strict=True):
            if c == t and not policies[c].few_text_labels:
                column_types[c] = pa.dictionary(pa.int32(), pa.string())
        in_place: list[str] = []
    else:
        import pyarrow.parquet as pq

        with pq.ParquetFile(inp) as pf:
            schema = pf.schema_arrow
            codecs = _parquet_codecs(pf)
            dictionary = _parquet_dictionary(pf, inp)
        fields = list(schema)
        base_meta = dict(schema.metadata or {})
        column_types = None
        # columns replaced in place are read dictionary-encoded (labels matched once per
        # dictionary entry) unless a policy needs to see every value
        in_place = [c for c, t in zip(cols, targets, strict=True) if c == t]
    out_fields = list(fields)
    for c, t in zip(cols, targets, strict=True):
        src = fields[names.index(c)]
        if out_fmt == "csv":
            typ = pa.string()
        else:
            src_type = src.type.value_type if pa.types.is_dictionary(src.type) else src.type
            policy = policies[c]
            typ = _output_type(mechs[c], policy.in_type if in_fmt == "csv" and
                               policy.in_type is not None else src_type)
        f = pa.field(t, typ, nullable=True, metadata=src.metadata if c == t else None)
        if t in names:
            out_fields[names.index(t)] = f
        else:
            out_fields.append(f)
            codecs.setdefault(t, codecs.get(c, "snappy"))
        if dictionary is not None and t not in dictionary:
            dictionary.append(t)  # released labels: a few distinct values
    # pyarrow keeps metadata keys as bytes: a str key would not replace the input's record
    merged_meta = {**base_meta, **{k.encode(): v for k, v in meta.items()}}
    if drop:  # the raw columns left out (their released values are in other columns)
        out_fields = [f for f in out_fields if f.name not in drop]
        if dictionary is not None:
            dictionary = [n for n in dictionary if n not in drop]
    schema = pa.schema(out_fields, metadata=merged_meta if out_fmt == "parquet" else None)
    if engine != "pyarrow" and not drop:
        plan = _polars_plan(inp, out, schema, compression, piece, batch_rows)
        if isinstance(plan, str):
            if engine == "polars":
                raise DataError(f"the polars engine (engine='polars', --engine polars) cannot "
                                f"write {str(out)!r} exactly: {plan}; use engine='auto' or "
                                "'pyarrow' (--engine local or pyarrow)")
        else:
            state = gen.bit_generator.state
            try:
                return _one_file_polars(mechs, samplers, inp, out, cols, targets, gen,
                                        policies, schema=schema, plan=plan,
                                        batch_rows=batch_rows, bar=bar, temps=temps)
            except _PolarsMismatch as exc:
                if engine == "polars":
                    raise DataError(f"the polars engine (engine='polars', --engine polars) "
                                    f"did not write {str(out)!r} exactly ({exc}); nothing was "
                                    "published; use engine='auto' or 'pyarrow' (--engine local "
                                    "or pyarrow)") from None
                # auto: the pyarrow engine writes the file from the same random state
                gen.bit_generator.state = state
                for pol in policies.values():
                    pol.unknown_rows = 0
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
                writer = pq.ParquetWriter(sink, schema, compression=codec,
                                          use_dictionary=True if dictionary is None
                                          else dictionary)
            else:
                from ..io import CsvLayout, CsvTextWriter, compression_of

                # the declared separator, else by the output's extension (.tsv: tab)
                delim = csv.delimiter if csv is not None and csv.delimiter is not None \
                    else default_delimiter(out)
                layout = CsvLayout.detect(inp) if in_fmt == "csv" else CsvLayout()
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
        try:  # (read, privatised and written on this thread, batch by batch)
            if piece is None:
                batches = iter_batches(inp, batch_rows=batch_rows, csv=read_csv,
                                       column_types=column_types,
                                       read_dictionary=in_place if in_fmt == "parquet"
                                       else None)
            else:
                batches = _piece_batches(inp, piece, names, read_csv, batch_rows,
                                         in_place)
            for batch in batches:
                new = _privatize_batch(mechs, samplers, batch, cols, targets, encoders,
                                       gen, policies, from_text=in_fmt == "csv",
                                       schema=schema, drop=drop)
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
                _settle([batches.close])
        bad = [(c, e) for c, e in encoders.items() if e.failed]
        if bad:
            c, e = bad[0]
            raise policy_error(e, mechs[c], f"column {c!r} of {str(inp)!r}")
        content = hasher.finish()
        try:
            if out_fmt == "parquet":
                writer.add_key_value_metadata({CONTENT_KEY: json.dumps(content)})
                writer.close()
            sink.close()
            writer = sink = None
            sha, size = hashed.finish()
        except OSError as exc:
            raise os_error(exc, "write the output", out) from exc
    except BaseException:
        closers = ([writer.close] if out_fmt == "parquet" and writer is not None else []) \
            + ([sink.close] if sink is not None else [])
        _discard(hashed, tmp, *closers)
        raise
    return _Staged(tmp, out, rows, sha, size, content=content)


#: The Parquet writers of :func:`privatize_file`: ``"auto"`` (polars where it writes the
#: file exactly, else pyarrow), ``"pyarrow"``, ``"polars"``.
ENGINES = ("auto", "pyarrow", "polars")
#: Input codec (pyarrow's name) -> polars' name, for the codecs both write alike.
_POLARS_CODECS = {"snappy": "snappy", "zstd": "zstd", "gzip": "gzip", "none": "uncompressed",
                  "brotli": "brotli"}


#: Up to this many text labels the polars engine finds a chunk's input indices by one
#: comparison per label (about 1.4 ms per 2^20 rows each) instead of a cast to an Enum
#: (about 11 ms).
_EQUALITY_LABELS = 6


class _PolarsMismatch(Exception):
    """The polars engine's temporary output is not what the pyarrow engine would write."""


def _polars_type_ok(t: Any) -> bool:
    """Types polars reads from Arrow and writes back (with the Arrow schema) unchanged."""
    import pyarrow as pa

    return bool(pa.types.is_integer(t) or pa.types.is_boolean(t)
                or t in (pa.float32(), pa.float64(), pa.string(), pa.large_string(),
                         pa.date32())
                or pa.types.is_timestamp(t))


def _polars_plan(inp: Path, out: Path, schema: Any, compression: str | None,
                 piece: tuple[int, int] | None, batch_rows: int) -> tuple[str, int] | str:
    """``(polars codec, rows per row group)`` when the polars engine can write ``out``
    exactly as the pyarrow engine would (schema, field and key-value metadata, one codec
    for every column); otherwise the reason why not."""
    if piece is not None or file_format(inp) != "parquet" or file_format(out) != "parquet":
        return "it writes Parquet from Parquet only"
    try:
        import polars  # noqa: F401
    except ImportError:
        return "polars is not installed (pip install 'pmlkit[polars]')"
    import pyarrow.parquet as pq

    bad = [f for f in schema if not _polars_type_ok(f.type)]
    if bad:
        return f"column {bad[0].name!r} has type {bad[0].type}, which it does not keep exactly"
    with pq.ParquetFile(inp) as pf:
        md = pf.metadata
        if md.num_row_groups == 0 or md.num_rows == 0:
            return "the input has no rows"
        found = {str(md.row_group(i).column(j).compression).lower()
                 for i in range(md.num_row_groups) for j in range(md.num_columns)}
        sizes = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
    found = {"none" if c == "uncompressed" else c for c in found}
    if compression is None and len(found) != 1:
        return f"its columns use several codecs ({', '.join(sorted(found))})"
    codec = compression.lower() if compression is not None else next(iter(found))
    if codec not in _POLARS_CODECS:
        return f"codec {codec!r} is not one it writes alike"
    if len(set(sizes[:-1])) > 1 or sizes[-1] > sizes[0]:
        return "its row groups differ in size"
    if sizes[0] > batch_rows:
        # the pyarrow engine splits each group into batches of batch_rows (memory bounded
        # by the batch); polars would keep the groups whole, so the files would differ
        return (f"its row groups of {sizes[0]} rows are larger than batch_rows "
                f"({batch_rows}, --batch-rows), which the pyarrow engine splits")
    return _POLARS_CODECS[codec], sizes[0]


def _one_file_polars(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw],
                     inp: Path, out: Path, cols: list[str], targets: list[str],
                     gen: np.random.Generator, policies: Mapping[str, Policy], *,
                     schema: Any, plan: tuple[str, int], batch_rows: int,
                     bar: Any, temps: list[Path] | None = None) -> _Staged:
    """The polars engine: polars reads the file in row order (streaming), the privatised
    columns of each chunk go through the pyarrow engine's own code (:func:`_draw_columns`:
    policy, encoder, sampler; one random stream consumed in row order, so the draws do not
    depend on where chunks end) and the chunks are handed, in order, to polars' streaming
    Parquet writer, which writes ``schema`` (field and key-value metadata included)
    through a :class:`HashingFile` (hashed as written, fsynced). The temporary file is
    then checked (schema with metadata, raw key-value entries, row count, codecs, size on
    disk equal to the bytes hashed); a mismatch, or a failure inside polars, raises
    :class:`_PolarsMismatch` and removes it."""

    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq
    from polars.io.plugins import register_io_source

    codec, group = plan
    encoders = {c: Encoder(mechs[c].input_labels) for c in cols}
    labels = {c: _label_array(mechs[c], schema.field(t).type)
              for c, t in zip(cols, targets, strict=True)}
    caught: list[BaseException] = []
    rows = 0
    hasher = ContentHasher(bound_columns({k.decode(): v.decode() for k, v in
                                          (schema.metadata or {}).items()
                                          if k == b"pmlkit"}, schema.names))
    finished: list[dict[str, Any]] = []  # the binding, once every chunk was written
    old = pl.CompatLevel.oldest()  # plain Arrow arrays (no string views) for the encoder
    # Text labels under the default policies (a missing or unknown value is an error):
    # polars matches a chunk's text against the labels itself, by a strict cast to an
    # Enum of the input labels (exact text; its physical codes are the label indices),
    # and the released labels are gathered as polars strings. A chunk with a null or an
    # unknown value goes through the encoder, which counts every problem.
    enums = {c: pl.Enum(list(mechs[c].input_labels)) for c in cols
             if encoders[c].kind == "str" and policies[c].missing == "error"
             and policies[c].unknown_as is None}
    texts = {c: pl.Series(t, list(mechs[c].output_labels), dtype=pl.String)
             for c, t in zip(cols, targets, strict=True)
             if label_kind(mechs[c].output_labels) == "str"
             and schema.field(t).type == pa.string()}

    def enum_codes(c: str, s: Any) -> Any:
        if c not in enums or s.dtype != pl.String or s.null_count():
            return None
        labs = mechs[c].input_labels
        if len(labs) <= _EQUALITY_LABELS:
            return _codes_from_hits([(s == lab).to_numpy() for lab in labs])
        try:
            return s.cast(enums[c]).to_physical().to_numpy()
        except pl.exceptions.InvalidOperationError:  # an unknown value
            return None

    def source(*_: Any) -> Any:
        nonlocal rows
        failed = False
        try:
            chunks = pl.scan_parquet(inp).collect_batches(chunk_size=batch_rows,
                                                          maintain_order=True)
            for df in chunks:
                hints = [enum_codes(c, df.get_column(c)) for c in cols]
                values = [None if h is not None else
                          df.get_column(c).to_arrow(compat_level=old)
                          for c, h in zip(cols, hints, strict=True)]
                drawn = _draw_columns(mechs, samplers, values, cols, encoders, gen,
                                      policies, from_text=False, known=hints)
                if drawn is None or failed:  # a problem: keep counting, write nothing
                    failed = True
                    continue
                new = []
                for c, t, (idx, null) in zip(cols, targets, drawn, strict=True):
                    if null is None and c in texts:
                        new.append(texts[c].gather(idx).alias(t))
                        continue
                    arr = labels[c].take(_index_array(idx))
                    if null is not None:  # (pyarrow.compute imported only here: ~30 ms)
                        import pyarrow.compute as pc

                        arr = pc.if_else(_mask_array(null), pa.nulls(1, arr.type)[0], arr)
                    new.append(pl.Series(t, arr))
                df = df.with_columns(new).select(schema.names)
                if hasher.columns:  # hashed for the record's binding, in chunk order
                    hasher.update(df.select(hasher.columns).to_arrow(compat_level=old))
                rows += df.height
                if bar is not None:
                    bar.update(df.height)
                yield df
            if not failed:
                finished.append(hasher.finish())
        except BaseException as exc:  # re-raised as it was after polars returns
            caught.append(exc)
            raise

    import base64


    # polars writes text columns from its own Arrow type (large_string); the Parquet
    # pages are the same BYTE_ARRAY/UTF8 either way, and the Arrow schema readers restore
    # types from is the key-value entry ARROW:schema, which is given here exactly as the
    # pyarrow engine writes it (checked below, byte for byte, with every other entry)
    wide = pa.schema([f.with_type(pa.large_string()) if f.type == pa.string() else f
                      for f in schema], metadata=schema.metadata)
    expected = {**(schema.metadata or {}),
                b"ARROW:schema": base64.b64encode(schema.serialize().to_pybytes())}
    empty = pl.from_arrow(pa.Table.from_batches([], schema=wide))  # empty_table: pandas
    assert isinstance(empty, pl.DataFrame)
    lf = register_io_source(source, schema=empty.schema)
    kv = {k.decode(): v.decode() for k, v in expected.items()}

    def footer(_: Any) -> dict[str, str]:
        # the footer's key-value entries, with the binding of the content written (polars
        # calls this after the last chunk; if it did not, the binding would be unknown:
        # the pyarrow engine writes the file instead)
        if not finished:
            if any(e.failed for e in encoders.values()):
                return kv  # a problem was counted: the file is discarded, not published
            raise RuntimeError("polars asked for the footer before the last chunk")
        return {**kv, CONTENT_KEY: json.dumps(finished[0])}
    tmp = temp_path(out)
    if temps is not None:
        temps.append(tmp)
    hashed: HashingFile | None = None
    try:
        try:
            # polars writes through the hashing file (one sequential stream of bytes, no
            # seeking: the file is not seekable): the output is hashed as it is written
            # and not read again
            hashed = HashingFile(tmp)
            options: dict[str, Any] = {"compression": codec, "row_group_size": group,
                                       "metadata": footer, "arrow_schema": wide}
            lf.sink_parquet(cast(IO[bytes], hashed), **options)
            sha, size = hashed.finish()  # flushed, fsynced and closed
        except Exception as exc:
            if caught and not isinstance(caught[0], pl.exceptions.PolarsError):
                raise caught[0] from None
            if isinstance(exc, OSError):
                raise os_error(exc, "write the output", out) from exc
            raise _PolarsMismatch(f"polars failed: {' '.join(str(exc).split())[:300]}"
                                  ) from exc
        if caught:
            raise caught[0]
        bad = [(c, e) for c, e in encoders.items() if e.failed]
        if bad:
            c, e = bad[0]
            raise policy_error(e, mechs[c], f"column {c!r} of {str(inp)!r}")
        with pq.ParquetFile(tmp) as pf:
            md = pf.metadata
            written = pf.schema_arrow
            written_kv = dict(md.metadata or {})
            found = {str(md.row_group(i).column(j).compression).lower()
                     for i in range(md.num_row_groups) for j in range(md.num_columns)}
        if not written.equals(schema, check_metadata=True) or \
                [f.metadata for f in written] != [f.metadata for f in schema]:
            raise _PolarsMismatch("its schema or metadata differs")
        expected[CONTENT_KEY.encode()] = json.dumps(finished[0]).encode()
        if written_kv != expected:
            raise _PolarsMismatch("its key-value metadata differs")
        if md.num_rows != rows:
            raise _PolarsMismatch(f"it wrote {md.num_rows} rows of {rows}")
        if found != {codec}:
            raise _PolarsMismatch(f"it wrote codecs {sorted(found)}, not {codec!r}")
        if tmp.stat().st_size != size:  # every byte on disk went through the hash
            raise _PolarsMismatch(f"it wrote {tmp.stat().st_size} bytes, {size} of them "
                                  "through the hashing file")
    except BaseException:
        _discard(hashed, tmp)
        raise
    return _Staged(tmp, out, rows, sha, size, engine="polars", content=finished[0])


def _piece_batches(inp: Path, piece: tuple[int, int], names: list[str],
                   read_csv: CsvOptions | None, batch_rows: int, in_place: list[str]) -> Any:
    """Record batches of one piece: Parquet row groups ``[a, b)`` or CSV bytes ``[a, b)``
    (a piece after the first starts at a record boundary and has no header)."""
    import pyarrow as pa

    a, b = piece
    try:
        if file_format(inp) == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetFile(inp, read_dictionary=in_place) as pf:
                yield from pf.iter_batches(batch_size=batch_rows, row_groups=range(a, b))
            return
        import pyarrow.csv as pacsv

        opts = read_csv or CsvOptions()
        with open(inp, "rb") as fh:
            fh.seek(a)
            data = fh.read(b - a)
        ropts = opts.read_options(batch_rows)
        if a > 0:
            ropts.column_names = list(names)
            ropts.skip_rows = 0
        conv = opts.convert_options(None, {n: pa.string() for n in names})
        with pacsv.open_csv(pa.BufferReader(data), read_options=ropts,
                            parse_options=opts.parse_options(inp),
                            convert_options=conv) as reader:
            yield from reader
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"cannot read {str(inp)!r}: {exc}") from exc


def parquet_pieces(path: Path, rows: int) -> list[tuple[int, int]]:
    """Row-group ranges of a Parquet file, each of about ``rows`` rows (at least one row
    group; an empty file is one empty piece)."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(path).metadata
    n = md.num_row_groups
    if n == 0:
        return [(0, 0)]
    out, start, acc = [], 0, 0
    for i in range(n):
        acc += md.row_group(i).num_rows
        if acc >= rows:
            out.append((start, i + 1))
            start, acc = i + 1, 0
    if start < n:
        out.append((start, n))
    return out


def csv_pieces(path: Path, block_bytes: int) -> list[tuple[int, int]]:
    """Split an uncompressed CSV file into byte ranges of about ``block_bytes`` that start
    and end on record boundaries: a line break counts only where the number of double
    quotes before it is even (a line break inside a quoted field is not a boundary)."""
    size = path.stat().st_size
    if size <= block_bytes:
        return [(0, size)]
    bounds = [0]
    parity = 0
    pos = 0
    with open(path, "rb") as fh:
        target = block_bytes
        while target < size:
            # quotes between the last position and the target fix the parity there
            fh.seek(pos)
            while pos < target:
                chunk = fh.read(min(1 << 24, target - pos))
                if not chunk:
                    break
                parity ^= chunk.count(b'"') & 1
                pos += len(chunk)
            found = None
            while found is None:
                win = fh.read(1 << 20)
                if not win:
                    break
                arr = np.frombuffer(win, dtype=np.uint8)
                q = (np.cumsum(arr == 34) + parity) & 1
                nl = np.flatnonzero((arr == 10) & (q == 0))
                if nl.size:
                    found = pos + int(nl[0]) + 1
                else:
                    parity = int(q[-1])
                    pos += len(win)
            if found is None or found >= size:
                break
            # restart counting just after the boundary (parity there is even)
            bounds.append(found)
            pos, parity = found, 0
            target = found + block_bytes
    bounds.append(size)
    return list(itertools.pairwise(bounds))


def _draw_columns(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw],
                  values: Sequence[Any], cols: list[str], encoders: dict[str, Encoder],
                  gen: np.random.Generator, policies: Mapping[str, Policy], *,
                  from_text: bool, known: Sequence[Any] | None = None
                  ) -> list[tuple[Any, Any]] | None:
    """The released output indices of each privatised column of one batch (with the mask
    of rows whose output must be missing, or None); ``None`` when a problem was found
    (the encoders keep counting it). ``values[i]`` holds column ``cols[i]``'s values,
    as text (``from_text``) or typed, plain or dictionary-encoded: a dictionary's values
    go through the policy once, and every row still gets its own draw, in row order.
    ``known[i]``, when given and not None, are column ``cols[i]``'s input indices already
    found (every value a label, no missing value, default policies): they are drawn
    from as they are. A column whose ``samplers`` entry is a :class:`JointDraw` is
    released with the other columns of its joint release: their codes are drawn together,
    one draw per record, once the last of them (in the order of ``cols``) is encoded, and
    each gets its own output label indices (into its alphabet, the view ``mechs[c]``)."""
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
                out[k] = (o, joint_nulls(k, o))
        return outs[sampler.columns.index(c)]

    def joint_nulls(c: str, idx: Any) -> Any:
        mech = mechs[c]
        if policies[c].missing == "category" and MISSING_LABEL in mech.output_labels:
            return idx == mech.output_labels.index(MISSING_LABEL)
        return None

    for i, (c, arr) in enumerate(zip(cols, values, strict=True)):
        mech, policy = mechs[c], policies[c]
        found = known[i] if known is not None else None
        if found is None and from_text and policy.few_text_labels \
                and not pa.types.is_dictionary(arr.type):
            found = _equality_codes(mech.input_labels, arr)
        if found is not None:  # every value is a label: nothing to count
            if not failed and not any(e.failed for e in encoders.values()):
                got = drawn(c, found)
                if got is not None:
                    out[c] = (got, joint_nulls(c, got)
                              if isinstance(samplers[c], JointDraw) else None)
            else:
                failed = True
            continue
        if from_text and pa.types.is_dictionary(arr.type):
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            arr = pa.DictionaryArray.from_arrays(arr.indices,
                                                 policy.from_text(arr.dictionary))
        elif from_text:
            arr = policy.from_text(arr)
        arr, keep_mask = policy.prepare(arr)
        enc = encoders[c]
        codes = _dictionary_codes(enc, arr)
        if codes is None:
            codes = enc.encode_arrow(arr)
        if codes is None or any(e.failed for e in encoders.values()):
            failed = True
            continue
        if failed:
            continue
        idx = drawn(c, codes)
        if idx is None:  # a joint release waiting for its other columns
            continue
        null = None
        if policy.missing == "category" and MISSING_LABEL in mech.output_labels:
            null = idx == mech.output_labels.index(MISSING_LABEL)
        if keep_mask is not None:  # (never a joint release: refused by privatize_file)
            keep = _mask_numpy(keep_mask)
            null = keep if null is None else null | keep
        out[c] = (idx, null)
    return None if failed else [out[c] for c in cols]


def _output_type(mech: Any, in_type: Any) -> Any:
    """:func:`arrow_output_type`, answered without Arrow conversions of Python lists
    (they import pandas) for text labels read from a text column: the column's type."""
    import pyarrow as pa

    grid = grid_of(mech)
    if grid is not None:  # a numeric column keeps its own type
        return numeric_arrow_type(grid, in_type)
    if (pa.types.is_string(in_type) or pa.types.is_large_string(in_type)) \
            and label_kind(mech.input_labels) == "str" == label_kind(mech.output_labels):
        try:
            text_array(list(mech.output_labels), in_type)
        except (UnicodeEncodeError, pa.ArrowException):
            pass  # labels Arrow cannot hold: the general answer
        else:
            return in_type
    return arrow_output_type(mech, in_type)


def _label_array(mech: Any, out_type: Any) -> Any:
    """The mechanism's output labels as an Arrow array of the output column's type."""
    import pyarrow as pa

    if pa.types.is_string(out_type) and label_kind(mech.output_labels) == "str":
        return text_array(list(mech.output_labels))  # pandas-free (see text_array)
    try:
        return pa.array(list(mech.output_labels), type=out_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError):
        return pa.array(list(mech.output_labels)).cast(out_type)


def _privatize_batch(mechs: Mapping[str, Any], samplers: Mapping[str, AliasSampler | JointDraw],
                     batch: Any, cols: list[str], targets: list[str],
                     encoders: dict[str, Encoder], gen: np.random.Generator,
                     policies: Mapping[str, Policy], *, from_text: bool,
                     schema: Any, drop: Sequence[str] = ()) -> Any:
    import pyarrow as pa

    arrays = list(batch.columns)
    names = list(batch.schema.names)
    drawn = _draw_columns(mechs, samplers, [batch.column(names.index(c)) for c in cols],
                          cols, encoders, gen, policies, from_text=from_text)
    if drawn is None:
        return None
    for c, t, (idx, null) in zip(cols, targets, drawn, strict=True):
        out_type = schema.field(t).type
        new = arrow_call("take", _label_array(mechs[c], out_type), _index_array(idx))
        if null is not None:
            import pyarrow.compute as pc

            new = pc.if_else(_mask_array(null), pa.nulls(1, out_type)[0], new)
        if t in names:
            arrays[names.index(t)] = new
        else:
            names.append(t)
            arrays.append(new)
    if drop:
        arrays = [a for a, n in zip(arrays, names, strict=True) if n not in drop]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


#: The largest dictionary whose entries :func:`_dictionary_codes` matches in Python.
_DICTIONARY_LOOKUP_MAX = 1 << 12


def _dictionary_codes(enc: Encoder, arr: Any) -> np.ndarray | None:
    """Input indices of a dictionary-encoded text chunk with text labels and no nulls:
    each dictionary entry is looked up among the labels (exact text: a str key equals a
    label only if their code points, so their UTF-8 bytes, are equal) and the rows gather
    their entries' indices. ``None`` when this does not apply or a row holds a value that
    is not a label; the encoder then encodes the chunk itself and counts every problem.
    The same indices as :meth:`Encoder.encode_arrow`, without its Arrow conversions of
    Python lists (which import pandas, about 0.3 s in a fresh process)."""
    import pyarrow as pa

    if enc.kind != "str" or not pa.types.is_dictionary(arr.type) or arr.null_count \
            or not (pa.types.is_string(arr.type.value_type)
                    or pa.types.is_large_string(arr.type.value_type)) \
            or len(arr.dictionary) > _DICTIONARY_LOOKUP_MAX:
        return None
    if isinstance(arr, pa.ChunkedArray):
        return None
    ind = arr.indices
    if not pa.types.is_signed_integer(ind.type):
        return None
    k = len(enc.labels)
    lookup = {lab: i for i, lab in enumerate(enc.labels)}
    # the narrowest code type (the sampler draws from narrow codes fastest); a value
    # that is not a label becomes k, one past the last label
    entries = np.fromiter((lookup.get(v, k) for v in arr.dictionary.to_pylist()),
                          dtype=_code_dtype(k), count=len(arr.dictionary))
    dtype = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[ind.type.bit_width]
    raw = np.frombuffer(ind.buffers()[1], dtype=dtype)[ind.offset:ind.offset + len(ind)]
    codes: np.ndarray = entries.take(raw)
    if codes.size and codes.max() >= k:
        return None
    return codes


def _code_dtype(k: int) -> Any:
    """The narrowest unsigned type holding the codes ``0..k`` (``k``: not a label)."""
    return np.uint8 if k < 255 else np.uint16 if k < 65535 else np.intp


def _index_array(idx: np.ndarray) -> Any:
    """An int64 Arrow array viewing the numpy indices (``pa.array`` imports pandas)."""
    import pyarrow as pa

    data = np.ascontiguousarray(idx, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def _mask_array(mask: np.ndarray) -> Any:
    """A boolean Arrow array of a numpy mask (bit-packed, without importing pandas)."""
    import pyarrow as pa

    m = np.asarray(mask, dtype=bool)
    return pa.Array.from_buffers(pa.bool_(), len(m),
                                 [None, pa.py_buffer(np.packbits(m, bitorder="little"))])


def _mask_numpy(mask: Any) -> np.ndarray:
    """A boolean Arrow array without nulls as a numpy array (``to_numpy`` imports
    pandas)."""
    import pyarrow as pa

    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    if mask.null_count:  # a null counts as False
        return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
    bits = np.frombuffer(mask.buffers()[1], dtype=np.uint8)
    out: np.ndarray = np.unpackbits(bits, bitorder="little", count=mask.offset + len(mask))
    return out[mask.offset:].astype(bool)


def _codes_from_hits(hits: Sequence[np.ndarray]) -> np.ndarray | None:
    """uint8 input indices from one boolean mask per label (``hits[i]``: the rows whose
    value equals label ``i`` exactly), or ``None`` when some row equals no label. The
    labels are distinct, so a row matches at most one; every row matched exactly one when
    the matches add up to the row count."""
    n = len(hits[0])
    flags = [np.asarray(h, dtype=bool).view(np.uint8) for h in hits]
    if sum(int(np.count_nonzero(h)) for h in flags) != n:
        return None  # a value that is not a label (or a missing one)
    codes = flags[1].copy() if len(flags) > 1 else np.zeros(n, np.uint8)
    for i, h in enumerate(flags[2:], 2):
        codes += h * np.uint8(i)
    return codes


def _equality_codes(labels: Sequence[str], arr: Any) -> np.ndarray | None:
    """Input indices of a text chunk without nulls by one exact comparison per label
    (:func:`_codes_from_hits`), or by the bytes' lengths where the labels' UTF-8 lengths
    differ (:func:`_length_codes`); ``None`` for other chunks or a value that is no
    label."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count or not (pa.types.is_string(arr.type)
                              or pa.types.is_large_string(arr.type)):
        return None
    if len(arr) == 0:
        return np.zeros(0, np.uint8)
    table = _length_table(tuple(labels))
    if table is not None:
        return _length_codes(table, arr)
    return _codes_from_hits([_mask_numpy(arrow_call("equal", arr, text_scalar(lab, arr.type)))
                             for lab in labels])


@functools.lru_cache(maxsize=64)
def _length_table(labels: tuple[str, ...]) -> tuple[np.ndarray, Any] | None:
    """For labels whose UTF-8 byte lengths all differ (``"Female"``, ``"Male"``): the
    table length -> label index (``len(labels)`` for a length no label has) and the
    labels as an Arrow array; ``None`` when two labels have one length, or a label is
    not encodable."""
    try:
        raw = [lab.encode("utf-8") for lab in labels]
    except UnicodeEncodeError:
        return None
    lengths = [len(r) for r in raw]
    if len(set(lengths)) != len(lengths) or len(labels) >= 255:
        return None
    lut = np.full(max(lengths) + 2, len(labels), dtype=np.uint8)
    lut[lengths] = np.arange(len(labels), dtype=np.uint8)
    lut.setflags(write=False)
    return lut, text_array(list(labels))


def _length_codes(table: tuple[np.ndarray, Any], arr: Any) -> np.ndarray | None:
    """Input indices of a text chunk (no nulls) when the labels' byte lengths differ:
    each row's length names the one label it can be, and the chunk's bytes are then
    compared, all at once, with those labels' bytes laid end to end (the row lengths
    already agree, so equal bytes mean every row equals its label exactly). ``None``
    when a row's length is no label's or some byte differs (then some row is no label:
    one of another length cannot match either)."""
    import pyarrow as pa

    lut, label_arr = table
    k = len(label_arr)
    wide = pa.types.is_large_string(arr.type)
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int64 if wide else np.int32)[
        arr.offset:arr.offset + len(arr) + 1]
    lengths = np.diff(offs)
    np.minimum(lengths, len(lut) - 1, out=lengths)
    codes: np.ndarray = lut.take(lengths)
    if int(codes.max()) >= k:
        return None
    expected = arrow_call("take", label_arr.cast(arr.type) if wide else label_arr,
                          _index_array(codes))
    return codes if _data_bytes(arr).equals(_data_bytes(expected)) else None


def _data_bytes(arr: Any) -> Any:
    """The bytes of a text array's values, end to end, as an Arrow buffer (no copy)."""
    import pyarrow as pa

    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64 if pa.types.is_large_string(arr.type)
                         else np.int32)
    start, stop = int(offs[arr.offset]), int(offs[arr.offset + len(arr)])
    if bufs[2] is None or stop == start:
        return pa.py_buffer(b"")
    return bufs[2].slice(start, stop - start)
