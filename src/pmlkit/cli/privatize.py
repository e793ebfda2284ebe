"""``pmlkit privatize``: privatise columns of CSV/Parquet files with a mechanism.

Examples::

    pmlkit privatize --mechanism sex.json --input adult.test --names adult \\
        --column sex --output adult_test_private.parquet
    pmlkit privatize --plan plan/release-plan.json --input adult.test --names adult \\
        --column sex --column income --output adult_test_private.parquet
    pmlkit privatize --mechanism sex=sex.json --mechanism income=income.json \\
        --joint-reference adult.data --delta 1e-6 --input adult.test --names adult \\
        --column sex --column income --output adult_test_private.parquet
    pmlkit privatize --mechanism sex.json --input 'data/part-*.parquet' --column sex \\
        --output private/ --engine dask --scheduler tcp://10.0.0.5:8786

The input is never overwritten; the output is written to a temporary file and published
only when complete, and refused if it exists unless ``--overwrite``. Every column other
than ``--column`` comes out exactly as it went in (CSV cell text byte for byte); ``--na``
and ``--strip`` apply to the privatised column only. ``--missing`` says what a missing
value of the privatised column becomes (``error``, ``category`` or ``keep``: kept missing,
so that missingness itself is released unprotected); ``--unknown-as LABEL`` privatises a
value the mechanism does not know as ``LABEL`` (the label is recorded in the manifest;
how many values it replaced is a count of the raw input, printed for the operator and not
recorded) instead of stopping. Randomness is cryptographically
secure unless ``--seed`` is given, which makes the output reproducible by anyone who knows
the seed: research only. ``<output>.pmlkit.json`` records which one was used; for a
seeded run it holds a salted SHA-256 commitment to the seed, not the seed (the salt is
printed on stderr only).

Several columns
---------------
Each column goes through its own mechanism: ``--mechanism COL=FILE`` per column, or a
release plan (``--plan``, written by ``pmlkit joint design``); one plain
``--mechanism FILE`` serves every column. Per-column eps do not add up (the pair can leak
more than their sum), so a release of several columns needs its joint guarantee: from the
plan (which must cover exactly the released columns and mechanisms), computed here from a
joint reference sample (``--joint-reference FILE --delta D``, :func:`pmlkit.joint_guarantee`),
or explicitly waived with ``--no-joint-guarantee`` (recorded as ``null``). Columns an
earlier pass privatised in an input (a pmlkit output: Parquet, CSV with its manifest
beside it, a part of a Dask folder output; its record must match its content) count as
part of the release; privatising one of them again is a repeated release, refused unless
``--allow-repeat``
(see ``pmlkit joint repeat``).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import click

from .._validation import up_text
from ..errors import PMLWarning
from ._common import (
    UserPath,
    certificate_line,
    csv_from_options,
    csv_options,
    delimiter_option,
    emit,
    json_option,
    load_mechanism,
    progress_enabled,
    progress_option,
)
from ._numeric import encoding_line, grid_for, numeric_option, on_grid, release_counts

NOT_ADDITIVE_WARNING = (
    "per-column eps do not add up: a release of several columns of each record can leak "
    "more than their sum (the joint guarantee is the number to sign off)")


SEED_WARNING = ("WARNING: --seed makes the randomness reproducible: anyone who knows the "
                "seed can undo the privatisation. Use it for research only, never to protect "
                "people (omit --seed for the secure default).")


@click.command(name="privatize")
@click.option("--mechanism", "mech_specs", multiple=True, metavar="[COLUMN=]FILE",
              help="Mechanism JSON file (from pmlkit design): COLUMN=FILE for one column "
                   "(repeatable), or one FILE for every --column.")
@click.option("--plan", "plan_path", default=None, type=UserPath(dir_okay=False),
              help="Release plan (release-plan.json from pmlkit joint design): the "
                   "column -> mechanism mapping and the joint guarantee.")
@click.option("--joint-reference", "joint_reference", default=None,
              type=UserPath(dir_okay=False),
              help="Joint reference sample (CSV/Parquet) to compute the joint guarantee "
                   "of several columns here (with --delta).")
@click.option("--delta", type=float, default=None,
              help="Failure probability of the joint confidence set (--joint-reference).")
@click.option("--no-joint-guarantee", "no_joint", is_flag=True,
              help="Release several columns without a joint guarantee (recorded as null; "
                   "the per-column eps do not add up).")
@click.option("--allow-repeat", is_flag=True,
              help="Privatise again a column an earlier pass privatised (a repeated "
                   "release: see pmlkit joint repeat).")
@click.option("--input", "inputs", required=True, multiple=True, metavar="FILE_OR_GLOB",
              help="Input CSV/Parquet file or glob pattern (repeatable).")
@click.option("--column", "columns", required=True, multiple=True,
              help="Column to privatise (repeatable).")
@click.option("--into", "into", multiple=True,
              help="New column name for each --column (default: replace in place); the "
                   "raw --column is then left out of the output unless --keep-raw.")
@click.option("--keep-raw", "keep_raw", is_flag=True,
              help="With --into: keep the raw (sensitive) --column in the output next to "
                   "its released values (default: left out, and the manifest says so).")
@click.option("--output", required=True,
              help="Output file (one input) or folder (several inputs, or --engine dask).")
@click.option("--engine", type=click.Choice(["local", "pyarrow", "polars", "dask"]),
              default="local", show_default=True,
              help="Stream locally (local or pyarrow: pyarrow reads and writes; polars: "
                   "deprecated, pyarrow writes), or run on a Dask cluster.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Dask scheduler address (default: a LocalCluster on this machine).")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Seeded PCG64 randomness: reproducible, RESEARCH ONLY.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.option("--allow-uncertified", is_flag=True,
              help="Accept a mechanism file without a checkable guarantee (printed as "
                   "UNCERTIFIED).")
@click.option("--batch-rows", type=click.IntRange(min=1), default=1 << 20, show_default=True,
              help="Rows per streamed batch (local engine).")
@click.option("--missing", type=click.Choice(["error", "category", "keep"]), default="error",
              show_default=True,
              help="A missing value in --column: stop (error), privatise it as the label "
                   "'(missing)' (category; the mechanism must have that label), or keep it "
                   "missing (keep: missingness is released unprotected).")
@click.option("--unknown-as", "unknown_as", default=None, metavar="LABEL",
              help="Privatise values that are not input labels of the mechanism as LABEL "
                   "(default: stop with an error naming them).")
@click.option("--compression", default=None, metavar="CODEC",
              help="Parquet output codec (snappy, zstd, gzip, brotli, lz4, none); default: "
                   "the input's. CSV output is compressed by extension (.gz, .bz2, .zst).")
@delimiter_option
@numeric_option
@csv_options
@progress_option
@json_option
def command(mech_specs: tuple[str, ...], plan_path: str | None,
            joint_reference: str | None, delta: float | None, no_joint: bool,
            allow_repeat: bool, inputs: tuple[str, ...], columns: tuple[str, ...],
            into: tuple[str, ...], output: str, engine: str, scheduler: str | None,
            seed: int | None, overwrite: bool, allow_uncertified: bool, batch_rows: int,
            missing: str, unknown_as: str | None, compression: str | None,
            delimiter: str | None,
            names: str | None, skip_rows: int | None, strip: bool | None,
            na_values: tuple[str, ...], progress: bool | None, as_json: bool,
            numeric: str | None = None, keep_raw: bool = False) -> int:
    """Privatise columns of CSV/Parquet files with a mechanism."""
    if keep_raw and not into:
        raise click.UsageError("--keep-raw needs --into (without it the released values "
                               "replace the raw column)")
    if scheduler is not None and engine != "dask":
        raise click.UsageError("--scheduler needs --engine dask")
    if into and len(into) != len(columns):
        raise click.UsageError(f"give one --into per --column ({len(columns)} columns, "
                               f"{len(into)} --into)")
    if delta is not None and joint_reference is None:
        raise click.UsageError("--delta needs --joint-reference")
    if joint_reference is not None and delta is None:
        raise click.UsageError("--joint-reference needs --delta")
    routes = [n for n, on in (("--plan", plan_path is not None),
                              ("--joint-reference", joint_reference is not None),
                              ("--no-joint-guarantee", no_joint)) if on]
    if len(routes) > 1:
        raise click.UsageError(f"give only one of --plan, --joint-reference and "
                               f"--no-joint-guarantee, got {' and '.join(routes)}")
    cols = list(columns)
    if len(set(cols)) != len(cols):
        raise click.UsageError(f"--column names a column twice: {', '.join(cols)}")
    plan = None
    if plan_path is not None:
        from ..joint import ReleasePlan

        plan = ReleasePlan.load(plan_path, allow_uncertified=allow_uncertified)
    if plan is not None and plan.release is not None:
        return _release_joint_plan(plan, plan_path or "", mech_specs, routes, cols, inputs,
                                   into, output, engine, seed, overwrite, batch_rows,
                                   missing, unknown_as, compression, delimiter, names,
                                   skip_rows, strip, na_values, progress, as_json)
    files, mechs = column_mechanisms(mech_specs, cols, plan, allow_uncertified)
    grids = {c: grid_for(mechs[c], numeric, files[c]) for c in cols}  # numeric columns
    if engine == "dask" and any(g is not None for g in grids.values()):
        raise click.UsageError("--engine dask does not release numeric columns; use "
                               "--engine local")
    for f in dict.fromkeys(files.values()):
        m = mechs[next(c for c in cols if files[c] == f)]
        if not m.certified:
            click.echo(f"pmlkit: warning: {f}: {certificate_line(m)}", err=True)
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=inputs[0],
                           delimiter=delimiter)
    earlier, earlier_outputs = _earlier_columns(inputs, csv)
    released = list(dict.fromkeys([*earlier, *cols]))
    repeated = [c for c in cols if c in earlier or c in earlier_outputs]
    from ..privatization.files import JOINTLY_RELEASED

    jointly = [c for c, m in earlier.items() if m is JOINTLY_RELEASED]
    if jointly and (not routes or routes[0] != "--no-joint-guarantee"):
        raise click.UsageError(
            f"columns {', '.join(jointly)} were released together by an earlier pass through "
            "one joint mechanism; no joint guarantee of that release with further columns can "
            "be computed here: design the whole release at once (pmlkit joint design) or "
            "pass --no-joint-guarantee")
    joint_doc: Any = None
    if len(released) < 2:
        if routes and routes[0] != "--plan":  # a plan may just supply the mechanism
            raise click.UsageError(
                f"{routes[0]} applies to a release of several columns; only "
                f"{released[0]!r} is privatised")
    elif repeated and routes and routes[0] != "--no-joint-guarantee":
        raise click.UsageError(
            f"column {repeated[0]!r} was privatised by an earlier pass: a joint guarantee "
            "of distinct columns does not cover a repeated release; compute its leakage "
            "with pmlkit joint repeat and pass --no-joint-guarantee")
    elif not routes:
        raise click.UsageError(
            f"{len(released)} columns are released ({', '.join(released)}) but no joint "
            "guarantee was computed, and per-column eps do not add up: give --plan FILE "
            "(pmlkit joint design), --joint-reference FILE --delta D, or "
            "--no-joint-guarantee")
    elif plan is not None:
        joint_doc = _plan_guarantee(plan, plan_path or "", released, mechs, earlier)
    elif joint_reference is not None:
        assert delta is not None
        if _is_an_input(joint_reference, inputs):
            click.echo("pmlkit: warning: --joint-reference is an input being privatised: the "
                       "manifest's joint guarantee records this sample's joint estimate and "
                       "size, so the released records are not protected against anyone "
                       "holding the manifest; use a reference disjoint from (or as public "
                       "as) the released records", err=True)
        joint_doc = _compute_guarantee(joint_reference, delta, released, mechs, earlier,
                                       names, skip_rows, strip, na_values, delimiter)
    else:
        click.echo(f"pmlkit: warning: --no-joint-guarantee: no joint guarantee for columns "
                   f"{', '.join(released)}; {NOT_ADDITIVE_WARNING}", err=True)
    if repeated:
        click.echo(f"pmlkit: warning: column {repeated[0]!r} was privatised by an earlier "
                   "pass and is released again: the eps printed below is this pass's alone, "
                   "not the leakage of the releases together (pmlkit joint repeat computes "
                   "it)", err=True)
    mech = mechs[cols[0]]
    rng = None
    if seed is not None:
        from ..rng import resolve_rng

        click.echo(SEED_WARNING, err=True)
        rng = resolve_rng(seed)  # records a salted commitment, never the seed itself
        click.echo(f"pmlkit: seed commitment salt {rng.seed_salt} (not written anywhere; "
                   "keep it apart from the output to prove later which seed was used)",
                   err=True)
    if missing == "category" and not any("(missing)" in mechs[c].input_labels
                                         for c in cols):
        # (a column designed without the label refuses its missing values by name)
        raise click.UsageError(
            "--missing category needs a mechanism with the input label '(missing)' "
            f"(none of columns {', '.join(cols)} has it): design it with pmlkit design "
            "--missing category")
    unknown_label: Any = None
    if unknown_as is not None:
        unknown_label = {}
        for c in cols:
            hits = [lab for lab in mechs[c].input_labels if str(lab) == unknown_as]
            if not hits:
                raise click.BadParameter(
                    f"{unknown_as!r} is not an input label of the mechanism of column {c} "
                    f"(input labels: {', '.join(map(str, mechs[c].input_labels[:20]))}); "
                    f"name one of them, or declare {unknown_as!r} when designing the "
                    f"mechanism: pmlkit design --categories (the labels, with "
                    f"{unknown_as!r}; a label absent from the reference counts 0)",
                    param_hint="'--unknown-as'")
            unknown_label[c] = hits[0]
    mapping = mechs if len(set(map(id, mechs.values()))) > 1 else mech
    src = inputs[0] if len(inputs) == 1 else list(inputs)
    with warnings.catch_warnings(record=True) as caught:  # PMLWarnings: one stderr line
        warnings.simplefilter("always")
        if engine == "dask":
            from ..privatization import privatize_file_dask

            report = privatize_file_dask(mapping, src, output, cols,
                                         into=list(into) or None, rng=rng, overwrite=overwrite,
                                         csv=csv, scheduler=scheduler,
                                         progress=progress_enabled(progress), missing=missing,
                                         unknown_as=unknown_label, compression=compression,
                                         joint_guarantee=joint_doc, repeat=allow_repeat,
                                         no_joint_guarantee=no_joint, keep_raw=keep_raw)
        else:
            from ..privatization.files import privatize_file

            report = privatize_file(mapping, src, output, cols, into=list(into) or None,
                                    rng=rng, overwrite=overwrite, csv=csv, batch_rows=batch_rows,
                                    progress=progress_enabled(progress), missing=missing,
                                    unknown_as=unknown_label, compression=compression,
                                    joint_guarantee=joint_doc, repeat=allow_repeat,
                                    engine="auto" if engine == "local" else engine,
                                    no_joint_guarantee=no_joint, keep_raw=keep_raw)
    for w in caught:
        if issubclass(w.category, PMLWarning):
            click.echo(f"pmlkit: warning: {w.message}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    rows = "unknown number of" if report.rows < 0 else f"{report.rows}"
    used = ", ".join(dict.fromkeys(files.values())) if len(set(files.values())) == 1 \
        else ", ".join(f"{c}: {files[c]}" for c in cols)
    lines = [f"privatised {rows} rows, column(s) {', '.join(report.columns)} -> "
             f"{', '.join(report.into)}, with {used}"]
    lines += [f"  {i} -> {o}" for i, o, _ in report.files]
    dropped = [c for c, t in zip(report.columns, report.into, strict=True)
               if c != t and not keep_raw]
    if dropped:
        lines.append(f"  raw column(s) {', '.join(dropped)} left out of the output "
                     "(--keep-raw keeps them)")
    elif keep_raw:
        lines.append(f"  raw column(s) {', '.join(report.columns)} KEPT in the output "
                     "(--keep-raw): the output holds the sensitive values")
    lines.append(f"  randomness: {report.rng}")
    for f in dict.fromkeys(files.values()):
        m = mechs[next(c for c in cols if files[c] == f)]
        lines.append(f"  {f}: {certificate_line(m)}" if len(files) > 1 and
                     len(set(files.values())) > 1 else f"  {certificate_line(m)}")
    if len(released) > 1:
        if joint_doc is not None:
            lines.append(f"  joint guarantee of columns {', '.join(joint_doc.columns)}: "
                     f"({up_text(joint_doc.eps)}, {joint_doc.delta:.3g})-PML for the "
                     f"whole record [{joint_doc.kind}]")
        else:
            lines.append("  NO JOINT GUARANTEE (--no-joint-guarantee)")
        lines.append(f"  warning: {NOT_ADDITIVE_WARNING}")
    # statistics of the raw input (FileReport.input_counts): shown to the operator here,
    # never written into the manifest or the output
    numeric_counts = release_counts(report, grids)
    for c, t in zip(report.columns, report.into, strict=True):
        if grids.get(c) is not None and t in numeric_counts:
            extra = numeric_counts[t].get("missing", 0)
            lines.append("  " + encoding_line(numeric_counts[t], grids[c],
                                              f"numeric column {c}")
                         + (f"; {extra} missing" if extra else ""))
    for c, t in zip(report.columns, report.into, strict=True):
        mapped = report.input_counts.get(t, {}).get("unknown_mapped_rows", 0)
        if mapped:
            lines.append(f"  column {c}: {mapped} value(s) outside the mechanism's labels "
                         "released as the --unknown-as label")
    if numeric_counts or any(v.get("unknown_mapped_rows")
                             for v in report.input_counts.values()):
        lines.append("  (counts of the raw input, for you only: not in the manifest, not "
                     "for publication)")
    if report.seeded:
        lines.append("  SEEDED RUN: research only, not a protection of the people in the data")
    emit(as_json, {**report.to_dict(), "engine": engine,
                   # the raw input's counts: for the operator, not for publication
                   **({"numeric": numeric_counts} if numeric_counts else {}),
                   "input_counts": {t: dict(v) for t, v in report.input_counts.items()},
                   "certified": all(m.certified for m in mechs.values()),
                   "mechanism_files": files, "dropped": dropped,
                   **({"warning": NOT_ADDITIVE_WARNING} if len(released) > 1 else {})},
         "\n".join(lines))
    return 0


def column_mechanisms(specs: tuple[str, ...], cols: list[str], plan: Any,
                       allow_uncertified: bool) -> tuple[dict[str, str], dict[str, Any]]:
    """Each --column's mechanism file and loaded mechanism, from --mechanism (COL=FILE,
    or one FILE for every column) and/or the plan (whose mechanisms --mechanism must
    then equal)."""
    plain: list[str] = []
    named: dict[str, str] = {}
    for s in specs:
        col, sep, file = s.partition("=")
        if sep and col in cols:
            if col in named:
                raise click.BadParameter(f"column {col!r} is given two mechanisms "
                                         f"({named[col]} and {file})",
                                         param_hint="'--mechanism'")
            named[col] = file
        elif sep and not os.path.exists(s):
            raise click.BadParameter(f"{s!r} names column {col!r}, which is not a --column "
                                     f"(columns: {', '.join(cols)})",
                                     param_hint="'--mechanism'")
        else:
            plain.append(s)
    if len(plain) > 1:
        raise click.BadParameter(
            f"{len(plain)} plain mechanism files given ({', '.join(plain)}): give one FILE "
            "for every column, or COLUMN=FILE for each column", param_hint="'--mechanism'")
    if plain and named:
        raise click.BadParameter(f"mix of a plain FILE ({plain[0]}) and COLUMN=FILE: give "
                                 "COLUMN=FILE for each column", param_hint="'--mechanism'")
    if plan is None and not specs:
        raise click.UsageError("give --mechanism FILE (or COLUMN=FILE per column) or --plan")
    if plan is None:
        lacking = [c for c in cols if c not in named]
        if named and lacking:
            raise click.BadParameter(f"no mechanism for column {lacking[0]!r}: give "
                                     "COLUMN=FILE for each --column", param_hint="'--mechanism'")
        files = {c: named.get(c, plain[0] if plain else "") for c in cols}
    else:
        outside = [c for c in cols if c not in plan.mechanisms]
        if outside:
            raise click.BadParameter(f"column {outside[0]!r} is not in the release plan "
                                     f"(its columns: {', '.join(plan.columns)})",
                                     param_hint="'--plan'")
        files = {c: named.get(c, plain[0] if plain else plan.files[c]) for c in cols}
    loaded: dict[str, Any] = {}
    for c, f in files.items():
        if plan is not None and f == plan.files.get(c) and f not in loaded:
            loaded[f] = plan.mechanisms[c]  # read and re-checked with the plan
    for f in dict.fromkeys(files.values()):
        if f not in loaded:
            loaded[f] = load_mechanism(f, allow_uncertified=allow_uncertified)
    mechs = {c: loaded[files[c]] for c in cols}
    if plan is not None:
        for c in cols:
            got = mechs[c].to_dict()["sha256"]
            want = plan.mechanisms[c].to_dict()["sha256"]
            if got != want:
                raise click.BadParameter(
                    f"the mechanism of column {c!r} ({files[c]}) is not the one the release "
                    f"plan's joint guarantee was computed for (digest {got[:12]}... against "
                    f"{want[:12]}...)", param_hint="'--plan'")
    return files, mechs


def _plan_guarantee(plan: Any, path: str, released: list[str], mechs: dict[str, Any],
                    earlier: dict[str, Any]) -> Any:
    """The plan's joint guarantee, if it covers exactly the released columns (this pass's
    and an earlier pass's) and their mechanisms: re-checked in the model
    (:meth:`pmlkit.joint.JointGuarantee.verify`) for exactly the mechanisms released."""
    from ..errors import PlanFileError

    if sorted(plan.columns) != sorted(released):
        raise PlanFileError(f"release plan {path!r} covers columns {', '.join(plan.columns)} "
                            f"but the release holds {', '.join(released)}; its joint "
                            "guarantee does not apply")
    for c, m in earlier.items():
        if m.to_dict()["sha256"] != plan.mechanisms[c].to_dict()["sha256"]:
            raise PlanFileError(f"column {c!r} was privatised by an earlier pass with a "
                                f"mechanism other than the release plan's {path!r}")
    ms = [earlier[c] if c in earlier else mechs[c] for c in plan.columns]
    try:
        return plan.guarantee.verify(ms)
    except PlanFileError:
        raise
    except Exception as exc:  # the model's refusal, in the plan's terms
        from ..errors import PMLError

        if not isinstance(exc, PMLError):
            raise
        raise PlanFileError(f"release plan {path!r}: {' '.join(str(exc).split())}") from exc


def _release_joint_plan(plan: Any, path: str, mech_specs: tuple[str, ...],
                        routes: list[str], cols: list[str], inputs: tuple[str, ...],
                        into: tuple[str, ...], output: str, engine: str, seed: int | None,
                        overwrite: bool, batch_rows: int, missing: str,
                        unknown_as: str | None, compression: str | None,
                        delimiter: str | None, names: str | None, skip_rows: int | None,
                        strip: bool | None, na_values: tuple[str, ...],
                        progress: bool | None, as_json: bool) -> int:
    """A plan designed on the joint alphabet: the tuple of its columns is released through
    its one joint mechanism, with the plan's (re-checked) guarantee in the manifest."""
    from ..errors import PlanFileError

    if mech_specs:
        raise click.UsageError("--mechanism cannot be combined with a joint-alphabet --plan "
                               "(the plan's joint mechanism releases every column)")
    if sorted(cols) != sorted(plan.columns):
        raise PlanFileError(f"release plan {path!r} releases columns "
                            f"{', '.join(plan.columns)} together through one joint mechanism; "
                            f"give exactly those as --column (got {', '.join(cols)})")
    if into:
        raise click.UsageError("--into is not supported with a joint-alphabet --plan")
    if unknown_as is not None:
        raise click.UsageError("--unknown-as is not supported with a joint-alphabet --plan")
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=inputs[0],
                           delimiter=delimiter)
    earlier, earlier_outputs = _earlier_columns(inputs, csv)
    repeated = [c for c in cols if c in earlier or c in earlier_outputs]
    if repeated or earlier:
        raise PlanFileError(f"column {(repeated or list(earlier))[0]!r} was privatised by an "
                            "earlier pass: the plan's joint guarantee does not cover it")
    rng = None
    if seed is not None:
        from ..rng import resolve_rng

        click.echo(SEED_WARNING, err=True)
        rng = resolve_rng(seed)
        click.echo(f"pmlkit: seed commitment salt {rng.seed_salt} (not written anywhere; "
                   "keep it apart from the output to prove later which seed was used)",
                   err=True)
    from ..privatization.files import privatize_file

    src = inputs[0] if len(inputs) == 1 else list(inputs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if engine == "dask":
            raise click.UsageError("a joint-alphabet --plan is released by the local engine "
                                   "(give --engine local)")
        report = privatize_file({tuple(plan.columns): plan.release}, src, output,
                                list(plan.columns), rng=rng, overwrite=overwrite, csv=csv,
                                batch_rows=batch_rows, progress=progress_enabled(progress),
                                missing=missing, compression=compression,
                                joint_guarantee=plan.guarantee,
                                engine="auto" if engine == "local" else engine)
    for w in caught:
        if issubclass(w.category, PMLWarning):
            click.echo(f"pmlkit: warning: {w.message}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    g = plan.guarantee
    lines = [f"privatised {report.rows} rows, columns {', '.join(plan.columns)} together "
             f"through the joint mechanism of {path}",
             f"  randomness: {report.rng}",
             f"  joint guarantee of columns {', '.join(g.columns)}: ({up_text(g.eps)}, "
             f"{g.delta:.3g})-PML for the whole record [{g.kind}]"]
    if report.seeded:
        lines.append("  SEEDED RUN: research only, not a protection of the people in the data")
    emit(as_json, {**report.to_dict(), "engine": engine,
                   "certified": True,
                   "plan": path}, "\n".join(lines))
    return 0


def _compute_guarantee(path: str, delta: float, released: list[str], mechs: dict[str, Any],
                       earlier: dict[str, Any], names: str | None, skip_rows: int | None,
                       strip: bool | None, na_values: tuple[str, ...],
                       delimiter: str | None) -> Any:
    """The exact joint guarantee of the released columns over a joint reference sample."""
    from ..io import read_label_table, read_table
    from ..joint import joint_guarantee
    from ..privatization.numeric_release import grid_of

    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=path,
                           delimiter=delimiter)
    ms = [earlier[c] if c in earlier else mechs[c] for c in released]
    # a categorical column's labels read as design and privatize read them (CSV text
    # stays text unless every text is its number's spelling: '007' is not 7); a numeric
    # column's numbers, put on its mechanism's grid
    numeric = [c for c, m in zip(released, ms, strict=True) if grid_of(m) is not None]
    labels = [c for c in released if c not in numeric]
    tables = [read_label_table(path, labels, csv=csv)] if labels else []
    if numeric:
        tables.append(read_table(path, numeric, csv=csv))
    cols = {n: t.column(n) for t in tables for n in t.column_names}
    data = {c: on_grid(cols[c].to_numpy(zero_copy_only=False), m)
            for c, m in zip(released, ms, strict=True)}
    return joint_guarantee(ms, data, delta, columns=released)


def _is_an_input(path: str, inputs: tuple[str, ...]) -> bool:
    from ..io import expand_inputs

    try:
        ref = Path(path).resolve()
        return any(p.resolve() == ref for p in
                   expand_inputs(inputs[0] if len(inputs) == 1 else list(inputs)))
    except (OSError, ValueError):
        return False


def _earlier_columns(inputs: tuple[str, ...], csv: Any) -> tuple[dict[str, Any], set[str]]:
    """Source columns earlier privatize passes released in the inputs (pmlkit outputs
    whose release record matches their content), with their mechanisms, and the output
    columns they wrote."""
    from ..io import expand_inputs
    from ..privatization.files import earlier_release

    return earlier_release(expand_inputs(inputs[0] if len(inputs) == 1 else list(inputs)),
                           csv)
