"""``pmlkit estimate``: estimate the true distribution behind released columns.

Examples::

    pmlkit estimate --input adult_private.parquet --column sex
    pmlkit estimate --input released.csv --column sex --mechanism sex.json --by race --json
    pmlkit estimate --input private/ --column sex            # --engine dask output folder
    pmlkit estimate --input 'out/*.csv' --column sex --column race   # joint distribution
    pmlkit estimate --input big.parquet --column occupation --no-intervals

``--input`` is what ``pmlkit privatize`` wrote: a file, the output folder of ``--engine
dask`` (its parts, as its manifest ``<folder>.pmlkit.json`` lists them, each checked
against its recorded SHA-256), a folder of outputs (every data file in it with its own
record, and every Dask output folder), or a quoted glob pattern matching such files or
folders. Every file must have been released through the same mechanism(s).

The mechanism comes from ``--mechanism FILE`` (one per ``--column``) or, without it, from
what ``pmlkit privatize`` recorded with the output: the manifest ``<FILE>.pmlkit.json`` or
the Parquet metadata. Prints one row per category: the estimate and its interval (see
``pmlkit.estimate_distribution``); ``--no-intervals`` prints the point estimate alone.

Several ``--column``: the joint distribution of the released tuple. Columns released each
through its own mechanism are estimated through the product of their mechanisms; columns
released together through one joint mechanism through that mechanism
(``pmlkit.inference_joint``).

A missing value in a released column is read as the release recorded it: under
``pmlkit privatize --missing category`` it is the output ``(missing)``; under ``--missing
keep`` it was left missing (unprotected) and the row is left out of the estimate, with a
note. Without a record (``--mechanism``), ``--missing category`` or ``keep`` says which.

``--by COLUMN`` groups the rows by a column's values. Grouping by a privatised column
groups by its *released* values, not the true ones: pmlkit says so in a warning.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import click

from ._common import (
    UserPath,
    csv_from_options,
    csv_options,
    emit,
    json_option,
    load_mechanism,
    progress_display,
    progress_enabled,
    progress_option,
)
from ._numeric import estimate_command, grid_for, numeric_option

_GLOB_CHARS = frozenset("*?[")


def _is_dask_folder(p: Path) -> bool:
    return p.is_dir() and p.with_name(p.name + ".pmlkit.json").is_file()


def _dask_parts(folder: Path) -> list[Path]:
    """The part files the Dask manifest lists, each checked against its SHA-256."""
    import json

    from ..errors import DataError

    man = folder.with_name(folder.name + ".pmlkit.json")
    try:
        doc = json.loads(man.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"manifest {str(man)!r} cannot be read: {exc}") from exc
    data = doc.get("data") if isinstance(doc, dict) else None
    parts = data.get("parts") if isinstance(data, dict) else None
    if not isinstance(parts, list) or not parts:
        raise DataError(f"manifest {str(man)!r} lists no data parts of folder "
                        f"{str(folder)!r} (\"data\": {{\"parts\": [...]}})")
    out = []
    for part in parts:
        name = part.get("file") if isinstance(part, dict) else None
        if not isinstance(name, str) or Path(name).name != name:
            raise DataError(f"manifest {str(man)!r}: bad part entry {part!r}")
        path = folder / name
        if not path.is_file():
            raise DataError(f"part {str(path)!r} listed in {str(man)!r} is missing")
        want = part.get("sha256")
        if isinstance(want, str):
            h = hashlib.sha256()
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            if h.hexdigest() != want:
                raise DataError(f"part {str(path)!r} does not match the SHA-256 recorded in "
                                f"{str(man)!r}: it was changed after the release")
        out.append(path)
    return out


def _is_data_file(p: Path) -> bool:
    from ..errors import DataError
    from ..io import file_format

    if not p.is_file() or p.name.startswith(".") or p.name.endswith(".pmlkit.json"):
        return False
    try:
        file_format(p)
    except DataError:
        return False
    return True


def _sources(spec: str) -> list[tuple[Path, list[Path]]]:
    """``(record path, data files)`` per release in ``--input`` (file, folder or glob)."""
    from .._validation import user_path
    from ..errors import DataError

    p = user_path(spec, "--input").absolute()  # (a folder's name: never '.')
    if p.exists():
        candidates = [p]
        if p.is_dir() and not _is_dask_folder(p):  # a folder of outputs
            candidates = sorted(c for c in p.iterdir()
                                if _is_data_file(c) or _is_dask_folder(c))
            if not candidates:
                raise DataError(f"--input folder {spec!r} holds no CSV/Parquet file and no "
                                "Dask output folder")
    elif _GLOB_CHARS & set(spec):
        from ..io import glob_paths

        candidates = glob_paths(spec)
        candidates = [c for c in candidates if _is_data_file(c) or _is_dask_folder(c)]
        if not candidates:
            raise DataError(f"--input pattern {spec!r} matches no CSV/Parquet file and no "
                            "Dask output folder")
    else:
        raise DataError(f"--input {spec!r} does not exist (a file, a folder or a quoted "
                        "glob pattern is expected)")
    out = []
    for c in candidates:
        if c.is_dir():
            out.append((c, _dask_parts(c)))
        else:
            out.append((c, [c]))
    return out


def _digest(obj: Any) -> str:
    from ..mechanism import Mechanism

    if isinstance(obj, Mechanism):
        return str(obj.to_dict()["sha256"])
    return str(obj.mechanism.to_dict()["sha256"])  # a JointRelease


@click.command(name="estimate")
@click.option("--input", "input_spec", required=True, metavar="PATH",
              help="The released CSV/Parquet file, the Dask output folder, a folder of "
                   "outputs or a quoted glob pattern.")
@click.option("--column", "columns", required=True, multiple=True,
              help="The released (privatised) column; repeat for the joint distribution of "
                   "several columns.")
@click.option("--mechanism", "mech_paths", multiple=True, type=UserPath(dir_okay=False),
              help="Mechanism JSON file, one per --column (default: the ones recorded with "
                   "the release).")
@click.option("--by", default=None, metavar="COLUMN",
              help="A non-private column: one estimate per group.")
@click.option("--missing", type=click.Choice(["error", "category", "keep"]),
              default="error", show_default=True,
              help="A missing value in a released column that the release does not record "
                   "a policy for, or in the --by column: stop (error); category: a released "
                   "missing value is the output '(missing)' (pmlkit privatize --missing "
                   "category writes it so), a missing --by value the group '(missing)'; "
                   "keep: leave those rows out (counted). A release made with --missing "
                   "category or keep is read by its recorded policy.")
@click.option("--method", type=click.Choice(["mle", "inversion"]), default="mle",
              show_default=True, help="Maximum likelihood (EM) or unbiased inversion.")
@click.option("--confidence", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Confidence level of the intervals.")
@click.option("--intervals/--no-intervals", default=True, show_default=True,
              help="Compute the intervals, or print the point estimate alone (faster).")
@numeric_option
@click.option("--above", type=float, default=None, metavar="T",
              help="A numeric column: also estimate the share of true values above T.")
@csv_options
@progress_option
@json_option
def command(input_spec: str, columns: tuple[str, ...], mech_paths: tuple[str, ...],
            by: str | None, method: str, confidence: float, intervals: bool,
            names: str | None, skip_rows: int | None, strip: bool | None,
            na_values: tuple[str, ...], as_json: bool, numeric: str | None = None,
            above: float | None = None, missing: str = "error",
            progress: bool | None = None) -> int:
    """Estimate the distribution of the true values behind released column(s)."""
    from ..errors import DataError
    from ..inference import (
        estimate_distribution,
        find_joint_release,
        find_mechanism,
        released_columns,
    )
    from ..io import read_table
    from ..privatization.files import arrow_type_for

    cols = list(dict.fromkeys(columns))
    if len(cols) != len(columns):
        raise click.BadParameter(f"a column is named twice: {list(columns)!r}",
                                 param_hint="'--column'")
    if mech_paths and len(mech_paths) != len(cols):
        raise click.BadParameter(
            f"give one --mechanism per --column ({len(cols)}), or none to use the recorded "
            f"ones; got {len(mech_paths)}", param_hint="'--mechanism'")
    sources = _sources(input_spec)
    # the channel of every release, which must be the same for all of them
    channel: Any = None
    where = ""
    if mech_paths:
        # estimation needs the channel, not the privacy certificate: an uncertified file
        # is read (strictly) all the same
        channel = [load_mechanism(m, allow_uncertified=True) for m in mech_paths]
        where = ", ".join(f"mechanism file {m}" for m in mech_paths)
    else:
        first: tuple[Path, str] | None = None
        for rec, _ in sources:
            found: Any
            if len(cols) > 1:
                joint = find_joint_release(rec, cols)
                if joint is not None:
                    rel, into = joint
                    cols = list(into)  # the release's column order
                    found, src = rel, f"joint release recorded with {rec}"
                else:
                    found = [find_mechanism(rec, c)[0] for c in cols]
                    src = f"records of {rec}"
            else:
                mech, src = find_mechanism(rec, cols[0])
                found = [mech]
            if channel is None:
                channel, where, first = found, src, (rec, src)
            else:
                a = [_digest(x) for x in (channel if isinstance(channel, list) else [channel])]
                b = [_digest(x) for x in (found if isinstance(found, list) else [found])]
                if a != b:
                    assert first is not None
                    raise DataError(
                        f"{first[0]} and {rec} were released through different mechanisms "
                        f"for {', '.join(map(repr, cols))}: estimate them separately (one "
                        "--input each)")
        if len(sources) > 1:
            where = f"{where} (the same for all {len(sources)} inputs)"
    if by is not None:
        privatised = set(cols) | set().union(*(released_columns(rec)
                                               for rec, _ in sources))
        if by in privatised:
            click.echo(f"pmlkit: warning: --by {by!r} is a privatised column: rows are "
                       "grouped by its released values, not its true ones, so each group's "
                       "estimate is the distribution among rows whose released "
                       f"{by!r} has that value", err=True)
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=str(sources[0][1][0]))
    wanted = cols if by is None or by in cols else [*cols, by]
    types: dict[str, Any] = {}
    import pyarrow as pa

    from .._encoding import label_texts

    if isinstance(channel, list):
        for c, m in zip(cols, channel, strict=True):
            t = arrow_type_for(m.output_labels)
            if t is None and label_texts(m.output_labels) is not None:
                t = pa.string()  # labels of several kinds: matched by their texts
            if t is not None:  # read the released column with the labels' type (CSV)
                types[c] = t
    else:
        for c, labs in zip(cols, channel.column_labels, strict=True):
            t = arrow_type_for(labs)
            if t is not None:
                types[c] = t

    files = [f for _, fs in sources for f in fs]
    show = progress_enabled(progress)
    with progress_display("pmlkit estimate", show) as say:
        tables = []
        for i, f in enumerate(files, start=1):
            say(f"reading {f} ({i}/{len(files)})")
            tables.append(read_table(f, wanted, csv=csv, column_types=types or None))
    try:
        table = pa.concat_tables(tables, promote_options="permissive") \
            if len(tables) > 1 else tables[0]
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DataError(f"the input files' columns {wanted!r} have different types: {exc}") \
            from exc
    grid = None
    if len(cols) == 1 and isinstance(channel, list):
        grid = grid_for(channel[0], numeric, where)
    elif numeric is not None:
        raise click.UsageError("--numeric estimates one released column (give one --column)")
    if above is not None and grid is None:
        raise click.UsageError("--above applies to a numeric column (a mechanism designed "
                               "with --numeric)")
    if grid is not None:
        if by is not None:
            raise click.UsageError("--by is not available for a numeric column yet")
        head = input_spec if len(files) == 1 else f"{input_spec} ({len(files)} files)"
        return estimate_command(
            table=table, column=cols[0], mech=channel[0], grid=grid, confidence=confidence,
            above=above, head=head, as_json=as_json,
            doc={"input": input_spec, "files": [str(f) for f in files], "column": cols[0],
                 "columns": cols, "mechanism_source": where})
    recorded = _recorded_missing(sources, cols) if not mech_paths else {}
    labels = [list(m.output_labels) for m in channel] if isinstance(channel, list) \
        else [list(labs) for labs in channel.column_labels]
    table, notes = _released_missing(table, cols, labels, recorded, missing)
    for note in notes:
        click.echo(f"pmlkit: note: {note}", err=True)
    if by is not None and by not in cols:
        table = _by_missing(table, by, missing)
    kw: dict[str, Any] = {"method": method, "confidence": confidence, "intervals": intervals}
    res: Any
    with progress_display("pmlkit estimate", show) as say:
        say("estimating")
        if len(cols) == 1:
            res = estimate_distribution(table, channel[0], column=cols[0], by=by, **kw)
        else:
            from ..inference_joint import estimate_joint_distribution

            group = None if by is None else table.column(by)
            res = estimate_joint_distribution({c: table.column(c) for c in cols}, channel,
                                              by=group, **kw)
        if by is not None:
            from dataclasses import replace

            res = replace(res, by=by)
    doc = {"input": input_spec, "files": [str(f) for f in files],
           "column": cols[0] if len(cols) == 1 else cols, "columns": cols,
           "mechanism_source": where, **res.to_dict()}
    what = f"column {cols[0]!r}" if len(cols) == 1 else \
        f"joint distribution of columns {', '.join(map(repr, cols))}"
    head = input_spec if len(files) == 1 else f"{input_spec} ({len(files)} files)"
    emit(as_json, doc, f"{head}, {what} (mechanism from {where})\n{res}")
    return 0


def _recorded_missing(sources: list[tuple[Path, list[Path]]], cols: list[str]
                      ) -> dict[str, str]:
    """The missing-value policy each released column was privatised with, as the
    manifests ``<record>.pmlkit.json`` record it (``"privatized"`` -> column ->
    ``"missing"``); a column whose records disagree or say nothing is left out."""
    import json

    found: dict[str, set[str]] = {c: set() for c in cols}
    for rec, _ in sources:
        man = rec.with_name(rec.name + ".pmlkit.json")
        try:
            doc = json.loads(man.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            doc = None
        sec = doc.get("privatized") if isinstance(doc, dict) else None
        for c in cols:
            entry = sec.get(c) if isinstance(sec, dict) else None
            pol = entry.get("missing") if isinstance(entry, dict) else None
            found[c].add(pol if isinstance(pol, str) else "")
    return {c: next(iter(v)) for c, v in found.items() if len(v) == 1 and "" not in v}


def _released_missing(table: Any, cols: list[str], labels: list[list[Any]],
                      recorded: dict[str, str], missing: str) -> tuple[Any, list[str]]:
    """The table with the missing values of the released columns read as the release
    wrote them: under ``--missing category`` (recorded, or given here) a missing value is
    the output ``(missing)``, which ``pmlkit privatize`` writes as the column's missing
    value; under ``keep`` the rows were left missing (released unprotected) and are left
    out of the estimate; otherwise they are refused, naming the options."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..design.pipeline import MISSING_LABEL
    from ..errors import DataError

    notes: list[str] = []
    drop: Any = None
    for c, labs in zip(cols, labels, strict=True):
        i = table.schema.get_field_index(c)
        if i < 0:
            continue
        col = table.column(i)
        k = col.null_count
        if k == 0:
            continue
        policy = recorded.get(c, missing)
        rows = f"{k} row{'s hold' if k != 1 else ' holds'}"
        if policy == "category" and MISSING_LABEL in labs:
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
                col = col.cast(pa.large_string())
            filled = pc.fill_null(col, pa.scalar(MISSING_LABEL, type=col.type))
            table = table.set_column(
                i, table.field(i).with_type(filled.type).with_nullable(False), filled)
        elif policy == "keep":
            valid = pc.is_valid(col)
            drop = valid if drop is None else pc.and_(drop, valid)
            notes.append(
                f"column {c!r}: {rows} a missing value, left missing by the release "
                "(--missing keep: whether a value is missing was released unprotected); "
                "they are left out of the estimate, which is of the other rows")
        elif policy == "category":
            raise DataError(
                f"column {c!r}: {rows} a missing value, but its mechanism has no output "
                f"{MISSING_LABEL!r}; pass --missing keep to leave those rows out")
        else:
            where = "" if c not in recorded else \
                f" (the release records --missing {recorded[c]})"
            raise DataError(
                f"column {c!r}: {rows} a missing value{where}; pass --missing category "
                f"(a missing value is the released output {MISSING_LABEL!r}, as pmlkit "
                "privatize --missing category writes it) or --missing keep (leave those "
                "rows out of the estimate)")
    if drop is not None:
        table = table.filter(drop)
    return table, notes


def _by_missing(table: Any, by: str, missing: str) -> Any:
    """The table with the missing values of the ``--by`` column handled as ``--missing``
    says: refused naming the option (``error``), or the group ``(missing)`` (``category``:
    the column is then text)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..design.pipeline import MISSING_LABEL
    from ..errors import DataError

    i = table.schema.get_field_index(by)
    if i < 0:
        return table
    col = table.column(i)
    if col.null_count == 0:
        return table
    if missing == "error":
        k = col.null_count
        raise DataError(f"--by {by!r}: {k} row{'s hold' if k != 1 else ' holds'} a missing "
                        f"value; pass --missing category to estimate those rows as the group "
                        f"{MISSING_LABEL!r}, or --missing keep to leave them out")
    if missing == "keep":
        return table.filter(pc.is_valid(col))
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = col.cast(pa.large_string())
    filled = pc.fill_null(col, pa.scalar(MISSING_LABEL, type=col.type))
    return table.set_column(i, table.field(i).with_type(filled.type).with_nullable(False),
                            filled)
