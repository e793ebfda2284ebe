"""Privatise columns of CSV and Parquet files: streamed, exact, atomic, never over the input.

The public file API: :func:`privatize_file`, its :class:`FileReport`, where outputs go
(:func:`output_paths`), the checks made before anything is written, and the release
record of earlier passes (:func:`previous_privatization`). The work is done by modules of
one concept each:

* :mod:`._engine`: each input file is read in record batches (bounded memory), the named
  columns are privatised batch by batch with one random stream, and the batches are
  written to a temporary file next to the output; every column not privatised comes out
  exactly as it went in (its docstring says how, for CSV and Parquet). Row order and row
  count are kept. Duplicate column names are refused (which of two ``sex`` columns is
  sensitive?).
* :mod:`._policies`: the missing-value and unknown-label policies (``missing=``,
  ``unknown_as=``) and the CSV parsing policy of a privatised column.
* :mod:`._publish`: temporary files, publishing, signals. An output is published only
  when everything succeeded; without ``overwrite`` with a hard link that fails if the
  name exists, so concurrent runs cannot replace each other's output. With several
  inputs either every output is published or none (outputs already linked are removed
  again). Temporary files are removed on errors, SIGINT, SIGTERM and SIGHUP, and by the
  next run after a SIGKILL.
* :mod:`._history`: the release record bound to the released content, checked before
  a later pass believes it.
* :mod:`._pieces`: a file split into pieces (the Dask engine).

The manifest
------------
Next to every output file ``<output>.pmlkit.json`` is published after the data (see
``docs/architecture.md``, "Privatisation manifest"). It records the run (:class:`FileReport`),
the data file's SHA-256 and size (a reader pairs data and manifest by that digest), and
under ``"privatized"`` a mapping from each output column to the mechanism that produced it
(its full JSON document under ``"mechanism"``, its digest, the missing-value policy and any
mapping of unknown labels; a numeric column also its grid). It holds no statistic of the
raw input beyond the row count: how many values were mapped by ``unknown_as``, clamped,
rounded or missing would be disclosed outside any PML guarantee, so they go to the
operator only (:attr:`FileReport.input_counts`), as does the warning that an input looks
like the reference sample. Columns released together through one joint mechanism (a
tuple key of the mechanism mapping; :mod:`pmlkit.privatization._joint_release`) each record
that mechanism and, under ``"joint_release"``, the columns released with it. Parquet
outputs carry the same document in their key-value metadata under the key ``pmlkit``.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._deprecation import warn_deprecated
from .._provenance import warn_if_reference_counts
from .._validation import user_path
from ..errors import DataError, ValidationError
from ..io import (
    DEFAULT_BATCH_ROWS,
    CsvOptions,
    expand_inputs,
    file_format,
    unique_columns,
)
from ..rng import resolve_rng
from ..sampler import AliasSampler
from ._core import as_mechanism_object, check_column_names, check_text_labels, mech_digest
from ._engine import CSV_BATCH_ROWS as CSV_BATCH_ROWS
from ._engine import one_file as one_file
from ._history import check_recordable, repeated_sources, verified_record
from ._joint_release import (
    JointDraw,
    JointReleaseLike,
    joint_views,
    mapping_error,
    split_mechanisms,
)
from ._pieces import csv_pieces as csv_pieces
from ._pieces import parquet_pieces as parquet_pieces

# (the Dask engine and the command line import these from here)
from ._policies import MISSING_LABEL, MISSING_POLICIES, csv_options_for, missing_by_column
from ._policies import Policy as Policy
from ._policies import arrow_type_for as arrow_type_for
from ._policies import check_missing_policy as check_missing_policy
from ._policies import check_unknown_as as check_unknown_as
from ._policies import policy_error as policy_error
from ._publish import (
    MANIFEST_FORMAT,
    MANIFEST_SUFFIX,
    Staged,
    cleanup_on_signals,
    manifest_path,
    os_error,
    publish_all,
    remove_stale,
    settle,
)
from ._reuse import TallyingSampler
from .numeric_release import manifest_entry, numeric_policies

__all__ = ["MANIFEST_FORMAT", "MANIFEST_SUFFIX", "MISSING_LABEL", "MISSING_POLICIES",
           "FileReport", "output_paths", "previous_privatization", "privatize_file"]

#: The Parquet writers :func:`privatize_file` accepts: ``"auto"`` and ``"pyarrow"`` (the
#: same: pyarrow writes every file), and ``"polars"`` (deprecated; pyarrow writes).
ENGINES = ("auto", "pyarrow", "polars")


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
    input_counts
        For the operator, not for publication: per output column, statistics of the raw
        input summed over the input files, outside any PML guarantee. A categorical
        column: ``{"unknown_mapped_rows": n}`` (values mapped by ``unknown_as``); a
        numeric column: ``{"rows", "clamped_low", "clamped_high", "rounded", "missing"}``.
        They are not in :meth:`to_dict` (the manifest's record), nor in the manifest or
        the output's metadata.

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
    input_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict, repr=False)

    @property
    def rows(self) -> int:
        return sum(f[2] for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        """The run as the manifest records it (without :attr:`input_counts`)."""
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
    out = user_path(output, "output")
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
            raise mapping_error(keys, cols)
        out = {str(k): as_mechanism_object(m) for k, m in mechanism.items()}
    else:
        mech = as_mechanism_object(mechanism)
        out = {c: mech for c in cols}
    for m in {id(m): m for m in out.values()}.values():
        check_recordable(m)  # the manifest records it: only what a reader would accept
    return out


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
    p = user_path(path)
    return verified_record(p, csv=csv_options_for(p, csv))


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
        # (each column with the mechanism that released it: a guarantee is re-checked for
        # the first input's mechanisms, so another input's must be the same)
        histories = {frozenset((str(e["column"]), json.dumps(e.get("mechanism"),
                                                             sort_keys=True, default=str),
                                e.get("joint_release") is not None)
                               for e in prev["privatized"].values())
                     if prev is not None else frozenset() for prev in previous}
        if len(histories) > 1:  # (the guarantee is recorded with every output)
            raise DataError(
                "the inputs have different release histories (earlier passes released "
                "different columns or through different mechanisms, or only some inputs "
                "are pmlkit outputs), so one joint "
                "guarantee cannot describe each output's release: privatise them separately")
        # (a column an earlier pass released, or released into: an output column of an
        # earlier pass privatised again is its source released again)
        again = [c for c in cols if c in earlier or any(
            c in released_sources(prev) or c in prev["privatized"]
            for prev in previous if prev is not None)] + [
            c for prev in previous if prev is not None for c in repeated_sources(prev)]
        if again:
            raise DataError(
                f"column {again[0]!r} is released more than once (an earlier pass and this "
                "one, or two earlier passes); a joint guarantee of distinct columns does not "
                "cover a repeated release: compute its leakage with pmlkit joint repeat and "
                "waive the joint guarantee (no_joint_guarantee=True, --no-joint-guarantee)")
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


def verify_joint_guarantee(joint_doc: Mapping[str, Any] | None, cols: list[str],
                           plain: Mapping[str, Any], joints: Sequence[Any],
                           previous: Sequence[Mapping[str, Any] | None]) -> None:
    """Re-check a given joint guarantee in the model before it is recorded: it must name
    exactly the released columns (this pass's and earlier passes') and hold for exactly
    their mechanisms (:meth:`pmlkit.joint.JointGuarantee.verify`: its set rebuilt from
    its counts, the worst case recomputed). ``plain``: this pass's columns released
    alone and their mechanisms; ``joints``: its joint releases
    (:class:`~pmlkit.privatization._joint_release.JointDraw`)."""
    if joint_doc is None:
        return
    from ..joint import JointGuarantee
    from ..mechanism import Mechanism

    g = JointGuarantee.from_dict(joint_doc)
    earlier: dict[str, Any] = {}
    for prev in previous:
        for entry in (prev or {}).get("privatized", {}).values():
            earlier.setdefault(str(entry["column"]), JOINTLY_RELEASED
                               if entry.get("joint_release") is not None else
                               Mechanism.from_dict(entry["mechanism"], allow_uncertified=True))
    released = list(dict.fromkeys([*earlier, *cols]))
    if sorted(g.columns) != sorted(released):
        raise ValidationError(f"joint_guarantee covers columns {list(g.columns)!r} but the "
                              f"release holds {released!r}: it does not apply; compute the "
                              "guarantee of the columns released")
    target: Any
    if joints:
        if len(joints) != 1 or earlier or set(joints[0].columns) != set(cols):
            raise ValidationError(
                "joint_guarantee can be checked for one joint release of all the columns "
                "or for columns released alone, not for a mix of them")
        target = joints[0].release
    else:
        target = [plain[c] if c in plain else earlier[c] for c in g.columns]
        if any(m is JOINTLY_RELEASED for m in target):
            raise ValidationError(
                "joint_guarantee cannot be checked: a column was released by an earlier "
                "pass through one joint mechanism with other columns")
    g.verify(target)


def released_sources(prev: Mapping[str, Any]) -> dict[str, Any]:
    """Each source column a (checked) release record shows released, by this pass or an
    earlier one (``previous_passes``), with an output column it went to: a later pass that
    privatised an output column again replaced its entry, but its source was released
    all the same."""
    earlier = prev.get("previous_passes")
    sources: dict[str, Any] = {}
    for p in [prev, *(earlier if isinstance(earlier, list) else [])]:
        sec = p.get("privatized") if isinstance(p, Mapping) else None
        for t, e in (sec.items() if isinstance(sec, Mapping) else ()):
            if isinstance(e, Mapping):
                sources.setdefault(str(e.get("column")), t)
    return sources


def check_repeat(prev: Mapping[str, Any] | None, cols: list[str], targets: list[str],
                  where: Path, repeat: bool) -> None:
    """Refuse privatising again a column an earlier pass privatised (or released from),
    unless ``repeat``: that is a repeated release of the same values."""
    if prev is None or repeat:
        return
    section = prev["privatized"]
    sources = released_sources(prev)
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
    are kept (unless this pass replaced their column, or left it out of the output:
    ``dropped``) and every earlier record is kept under ``previous_passes``, less the
    raw-input counts a record of an earlier version holds (:func:`without_input_counts`:
    they are not carried into a new release)."""
    if prev is None:
        return meta
    prev = without_input_counts(prev)
    earlier = {k: v for k, v in prev.items() if k != "previous_passes"}
    passes = [*(prev.get("previous_passes") or []), earlier]
    gone = set(meta.get("dropped") or ())
    kept = {t: e for t, e in prev["privatized"].items() if t not in gone}
    return {**meta, "privatized": {**kept, **meta["privatized"]},
            "previous_passes": passes}


def without_input_counts(record: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a release record without the statistics of the raw input that earlier
    pmlkit versions wrote into it (``unknown_mapped_rows`` and a numeric column's
    ``counts``, in its entries and in those of its ``previous_passes``). Such a record is
    read as it is; the counts are only left out of the record a new pass publishes.

    Examples
    --------
    >>> old = {"privatized": {"age": {"column": "age", "unknown_mapped_rows": 0,
    ...        "numeric": {"grid": {}, "policy": "clamp", "counts": {"clamped_high": 1}}}}}
    >>> without_input_counts(old)
    {'privatized': {'age': {'column': 'age', 'numeric': {'grid': {}, 'policy': 'clamp'}}}}
    """
    def entry(e: Any) -> Any:
        if not isinstance(e, Mapping):
            return e
        out = {k: v for k, v in e.items() if k != "unknown_mapped_rows"}
        num = out.get("numeric")
        if isinstance(num, Mapping):
            out["numeric"] = {k: v for k, v in num.items() if k != "counts"}
        return out

    doc = dict(record)
    if isinstance(doc.get("privatized"), Mapping):
        doc["privatized"] = {t: entry(e) for t, e in doc["privatized"].items()}
    if isinstance(doc.get("previous_passes"), list):
        doc["previous_passes"] = [without_input_counts(p) if isinstance(p, Mapping) else p
                                  for p in doc["previous_passes"]]
    return doc


def check_inputs(inputs: Sequence[Path], cols: list[str], targets: list[str], into: Any,
                 csv: Any, repeat: bool) -> list[Any]:
    """Fail fast, before anything is written, on a column that is missing or ambiguous in
    any input, an ``into`` name that already exists, or a column an earlier pass already
    privatised (unless ``repeat``). Returns each input's earlier privatisation record."""
    crossed = [t for c, t in zip(cols, targets, strict=True) if t != c and t in cols]
    if crossed:
        raise ValidationError(f"into column {crossed[0]!r} is also a column being privatised: "
                              "its raw values and another column's released values would "
                              "share one name; choose a new name")
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
                   manifest: bool = True, missing: str | Mapping[str, str] = "error",
                   unknown_as: Any = None,
                   compression: str | None = None, joint_guarantee: Any = None,
                   repeat: bool = False, engine: str = "auto",
                   no_joint_guarantee: bool = False, keep_raw: bool | None = None
                   ) -> FileReport:
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
        (``True``), or leave them out (``False``: the command line's default,
        ``--keep-raw`` keeps them); the manifest lists the columns left out under
        ``"dropped"``. Not given, they are kept, with a ``FutureWarning``: from 0.3.0 the
        default is ``False``, as on the command line.
    rng
        ``None`` (secure default), an int seed or a numpy Generator (research only); see
        :func:`pmlkit.privatize`.
    overwrite
        Replace an existing output file (refused by default). The input is never
        overwritten.
    csv
        Parsing options for CSV inputs (headerless files, delimiter); ``null_values`` and
        ``strip_whitespace`` apply to the privatised column(s) only. An empty cell of a
        privatised column is missing, and so is a ``null_values`` text (nothing is
        missing with ``null_values=()``: an empty cell is then the label ``""``).
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
        then released without protection). One policy for every column, where
        ``"category"`` applies to the columns whose mechanism has the label and the others
        refuse a missing value; or a mapping from column names to their own policies
        (a column it leaves out takes ``"error"``).
    unknown_as
        ``None`` (default): a value that is not an input label of the mechanism is an
        error. An input label: such values are privatised as if they were that label; the
        number of rows mapped is a statistic of the raw input, reported to the caller
        (:attr:`FileReport.input_counts`) and not recorded in the manifest.
    compression
        Parquet output codec (``"snappy"``, ``"zstd"``, ``"gzip"``, ``"none"``, ...);
        default: each column keeps its input codec (Parquet input) or pyarrow's default.
        CSV outputs are compressed by their extension.
    joint_guarantee
        The guarantee of the whole release (a :class:`pmlkit.JointGuarantee` or its
        ``to_dict()``), recorded in the manifest under ``"joint_guarantee"``. Per-column
        eps do not add up: with several columns, compute it (:func:`pmlkit.joint_guarantee`
        or ``pmlkit joint design``). Re-checked before anything is written: it must name
        exactly the released columns and hold for their mechanisms (refused otherwise);
        ``None`` records ``null``.
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
        ``"auto"`` (default) or ``"pyarrow"``: pyarrow reads and writes every file.
        ``"polars"`` is deprecated (a :class:`DeprecationWarning`; pyarrow writes the
        file): the polars writer was removed, since the pyarrow engine measured within
        1.3x of the fastest plain copy of the same Parquet file (polars or pyarrow, read
        and write; 10^7 and 10^8 rows) and was no slower than the polars engine, and one
        writer is one path to keep exact. A seeded run releases the same values with
        every engine.
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
    plain, joints = split_mechanisms(mechanism, cols)
    views = {c: v for c, v, _ in joint_views(joints)}
    alone = [c for c in cols if c not in views]
    plain_mechs = column_mechanisms(plain, alone) if alone else {}
    # every column's labels: its own mechanism, or the view of its joint release
    mechs = {c: views[c] if c in views else plain_mechs[c] for c in cols}
    joint_doc = joint_record(joint_guarantee)
    missing_of = missing_by_column(missing, mechs)  # "category" where the label exists
    if joints and any(missing_of[c] == "keep" for jd in joints for c in jd.columns):
        raise ValidationError(
            f"missing='keep' would release whether a value of joint columns "
            f"{list(joints[0].columns)!r} is missing without protection, and the tuple has no "
            "label for it: use missing='error' or 'category' (a joint alphabet with the "
            f"label {MISSING_LABEL!r})")
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int | np.integer) \
            or batch_rows < 1:
        raise ValidationError(f"batch_rows must be an integer >= 1, got {batch_rows!r}")
    unknown = check_unknown_as(unknown_as, mechs)
    if engine not in ENGINES:
        raise ValidationError(f"engine must be one of {', '.join(map(repr, ENGINES))}, "
                              f"got {engine!r}")
    if engine == "polars":
        warn_deprecated("privatize_file: engine='polars' is deprecated since 0.2 and will "
                        "be removed; pyarrow writes every file (use engine='auto')")
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
        man = manifest_path(out)
        if manifest and man.exists() and not out.exists() and not overwrite:
            raise DataError(f"manifest {str(man)!r} already exists without its data file; "
                            "remove it or pass overwrite=True (--overwrite)")
    previous = check_inputs(inputs, cols, targets, into, csv, repeat)
    check_joint_release(previous, cols, joint_doc, repeat, no_joint_guarantee)
    verify_joint_guarantee(joint_doc, cols, plain_mechs, joints, previous)
    source = resolve_rng(rng)
    # each plain column's input labels counted as they are drawn (the reference-reuse
    # warning; a joint release's are counted below, as tuples)
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
    # what the reference-reuse warning watches: each plain column, and each joint release's
    # tuples of input labels (its mechanism records the joint reference counts)
    watched: dict[str, tuple[Any, TallyingSampler]] = {
        f"column {c!r}": (mechs[c], t) for c, t in tallies.items()}
    for jd in joints:
        tally = TallyingSampler(jd.sampler, jd.mechanism)
        jd.sampler = cast(AliasSampler, tally)
        watched[f"columns {list(jd.columns)!r}"] = (jd.mechanism, tally)
    for c, m in mechs.items():
        check_text_labels(m, f"mechanism for column {c!r}")
    policies: dict[str, Any] = {c: Policy(m, csv, missing_of[c], unknown[c])
                                for c, m in mechs.items()}
    numeric = numeric_policies(mechs, csv, missing_of, unknown)  # columns on a NumericGrid
    policies.update(numeric)
    done = []
    raw_counts: dict[str, dict[str, int]] = {}
    bar = _progress_bar(inputs, csv, progress)
    staged: list[Staged] = []
    temps: list[Path] = []  # every temporary output, listed before it is created
    made: list[tuple[Path, tuple[int, int]]] = []  # output folders this run creates
    try:
        if outputs[0] != (folder := user_path(output, "output")):  # into a folder
            made = _make_folders(folder)
        with cleanup_on_signals():
            try:
                for inp, out, prev in zip(inputs, outputs, previous, strict=True):
                    before = {w: t.counts.copy() for w, (_, t) in watched.items()}
                    remove_stale(out)
                    remove_stale(manifest_path(out))
                    for pol in policies.values():
                        pol.unknown_rows = 0
                    privatized = {t: {"column": c, "mechanism": mech_docs[c],
                                      "mechanism_sha256": digests[c],
                                      "missing": missing_of[c],
                                      "unknown_as": unknown[c],
                                      **(manifest_entry(numeric[c])
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
                                   compression=compression,
                                   temps=temps, drop=drop)
                    staged.append(st)
                    # statistics of the raw input: for the operator (FileReport
                    # .input_counts), never in the manifest or the output's metadata
                    for c, t in zip(cols, targets, strict=True):
                        add_counts(raw_counts.setdefault(t, {}),
                                   numeric[c].counts if c in numeric
                                   else {"unknown_mapped_rows": policies[c].unknown_rows})
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
                    for w, (m, t) in watched.items():  # PMLWarning: the input looks
                        # like the reference sample
                        warn_if_reference_counts(m, t.counts - before[w], f"{str(inp)!r}, {w}")
                if len(inputs) > 1:  # the inputs together
                    for w, (m, t) in watched.items():
                        warn_if_reference_counts(m, t.counts, f"the {len(inputs)} inputs, {w}")
                publish_all(staged, overwrite=overwrite, manifest=manifest)
            finally:
                settle([functools.partial(tmp.unlink, missing_ok=True) for tmp in temps])
    except BaseException:
        _remove_empty(made)
        raise
    finally:
        if bar is not None:
            bar.close()
    return FileReport(tuple(done), tuple(cols), tuple(targets), source.seeded,
                      source.description, digest, tuple(digests[c] for c in cols), joint_doc,
                      joint_columns, raw_counts)


def add_counts(total: dict[str, int], counts: Mapping[str, int]) -> None:
    """Add one file's raw-input counts to ``total`` (key by key).

    Examples
    --------
    >>> t = {}
    >>> add_counts(t, {"unknown_mapped_rows": 2}); add_counts(t, {"unknown_mapped_rows": 1})
    >>> t
    {'unknown_mapped_rows': 3}
    """
    for k, v in counts.items():
        total[k] = total.get(k, 0) + int(v)


def _make_folders(folder: Path) -> list[tuple[Path, tuple[int, int]]]:
    """Create ``folder`` and its missing parents one at a time, each path as written
    (``a/../b`` creates ``a`` and, if missing, ``b``: never a folder it only passes
    through); returns each folder it created with its identity (device, inode), the
    deepest first. Created folders are removed again if creating the next one fails."""
    made: list[tuple[Path, tuple[int, int]]] = []
    parts = folder.parts
    for i in range(1, len(parts) + 1):
        step = Path(*parts[:i])
        if step.is_dir():
            continue
        try:
            step.mkdir()
            st = step.stat()
        except FileExistsError:
            if step.is_dir():  # (made meanwhile by someone else: theirs)
                continue
            _remove_empty(made[::-1])
            raise DataError(f"cannot create the output folder {str(folder)!r}: "
                            f"{str(step)!r} exists and is not a folder") from None
        except OSError as exc:
            _remove_empty(made[::-1])
            raise os_error(exc, "create the output folder", folder) from exc
        made.append((step, (st.st_dev, st.st_ino)))
    return made[::-1]


def _remove_empty(folders: Sequence[tuple[Path, tuple[int, int]]]) -> None:
    """Remove the folders a failed run created (deepest first) while each is still the
    folder it created (same device and inode) and empty: a folder that holds anything,
    a file published before the failure or one another process put there, stays with
    everything above it."""
    for f, ident in folders:
        try:
            st = f.stat()
            if (st.st_dev, st.st_ino) != ident:
                return
            f.rmdir()
        except OSError:
            return


def raw_columns_dropped(cols: Sequence[str], targets: Sequence[str], keep_raw: Any
                        ) -> list[str]:
    """The raw columns a release leaves out of its output: each privatised column whose
    released values go into another column (``into``), unless ``keep_raw``. ``None`` (not
    given) keeps them as in 0.2, with a ``FutureWarning`` where a raw column would stay
    beside its released values: from 0.3.0 they are left out, as on the command line.

    Examples
    --------
    >>> raw_columns_dropped(["sex", "race"], ["sex_released", "race"], False)
    ['sex']
    >>> raw_columns_dropped(["sex"], ["sex_released"], True)
    []
    """
    if keep_raw is None:
        kept = [c for c, t in zip(cols, targets, strict=True) if c != t]
        if kept:
            import warnings

            warnings.warn(
                f"keep_raw was not given, so the raw column(s) {kept!r} stay in the output "
                "beside the released values, unprotected; from pmlkit 0.3.0 they are left "
                "out by default (as `pmlkit privatize --into` does): pass keep_raw=False to "
                "leave them out now, or keep_raw=True to keep them and silence this warning",
                FutureWarning, stacklevel=3)
        return []
    if not isinstance(keep_raw, bool | np.bool_):
        raise ValidationError(f"keep_raw must be True or False, got {keep_raw!r}")
    if keep_raw:
        return []
    return [c for c, t in zip(cols, targets, strict=True) if c != t]


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
