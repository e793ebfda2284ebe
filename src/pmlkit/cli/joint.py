"""``pmlkit joint``: guarantees for releasing several columns of each record.

Examples::

    pmlkit joint repeat --mechanism sex.json --times 12 --reference adult.data \
        --names adult --column sex --delta 1e-6

    pmlkit joint assess --reference adult.data --names adult \\
        --mechanism sex=sex.json --mechanism income=income.json --delta 1e-6
    pmlkit joint design --reference adult.data --names adult --columns sex,income \\
        --epsilon 1 --delta 1e-6 --out-dir plan/

``assess`` computes the exact (eps, delta)-PML guarantee of the tuple of released columns
(each column through its own mechanism, independent randomness) over the confidence set on
the joint alphabet (:func:`pmlkit.joint_guarantee`); ``--bound`` adds the chain-rule bound
from the marginal sets. ``design`` designs the release for an overall target
(:func:`pmlkit.design_joint`) and writes the mechanisms and a release plan holding the
joint guarantee. ``repeat`` is the exact leakage of releasing one column several times
with fresh randomness (:func:`pmlkit.release_leakage`, over type classes).
Per-column eps are printed for comparison only: they do not add up.
"""

from __future__ import annotations

import pathlib
from typing import Any

import click

from .._validation import up_text
from ._common import (
    UserPath,
    csv_from_options,
    csv_options,
    emit,
    json_option,
    load_mechanism,
    missing_option,
    progress_display,
    progress_enabled,
    progress_option,
    renamed_option,
)
from ._numeric import on_grid, parse_grid


def _set_methods() -> list[str]:
    try:
        from ..confidence import METHODS

        return list(METHODS)
    except ImportError:  # pragma: no cover
        return ["l1"]


def _read_columns(path: str, columns: list[str], csv: Any, missing: str = "error"
                  ) -> dict[str, Any]:
    """The reference columns, missing values handled as ``--missing`` says (``error``:
    refused, naming the column and the option; ``category``: the label ``(missing)``)."""
    import numpy as np
    import pyarrow as pa

    from ..design.pipeline import apply_missing
    from ..errors import DataError
    from ..io import read_label_table

    table = read_label_table(path, columns, csv=csv)  # one read of the file
    out = {}
    for c in columns:
        values = table.column(c)
        if missing == "error" and values.null_count:
            n = values.null_count
            raise DataError(f"column {c!r} of {path!r}: {n} row{'s hold' if n > 1 else ' holds'}"
                            " a missing value; pass --missing category to count missing "
                            "values as the label '(missing)' of each column (a joint "
                            "release cannot leave them out), or remove those rows")
        values, _ = apply_missing(values, missing)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        out[c] = values.to_numpy(zero_copy_only=False) if isinstance(values, pa.Array) \
            else np.asarray(values, dtype=object)
    return out


def _parse_mechanisms(specs: tuple[str, ...]) -> tuple[list[str], list[str]]:
    from ..errors import ValidationError

    cols, files = [], []
    for s in specs:
        col, sep, file = s.partition("=")
        if not sep or not col or not file:
            raise ValidationError(f"--mechanism must be COLUMN=FILE, got {s!r}")
        if col in cols:
            raise ValidationError(
                f"--mechanism names column {col!r} twice; give one mechanism per column")
        cols.append(col)
        files.append(file)
    if len(cols) < 2:
        raise ValidationError(
            f"--mechanism must be given for at least 2 columns (COLUMN=FILE each), got "
            f"{len(cols)}; for one column use pmlkit assess")
    return cols, files


def _warning_lines(g: Any) -> list[str]:
    return [str(g)]


@click.group(name="joint")
def command() -> None:
    """Guarantees for releasing several columns of each record."""


@command.command(name="assess")
@click.option("--reference", required=True, type=UserPath(dir_okay=False),
              help="CSV or Parquet file of a joint reference sample (one row per record).")
@click.option("--mechanism", "mechs", multiple=True, required=True, metavar="COLUMN=FILE",
              help="The mechanism JSON applied to a column (repeat for every column).")
@click.option("--delta", required=True, type=float,
              help="Failure probability of the joint confidence set, in (0, 1].")
@renamed_option("--confidence", "--set", "set_method",
                type=click.Choice(_set_methods()), default="l1",
              show_default=True, help="Confidence set on the joint alphabet.")
@click.option("--bound", is_flag=True,
              help="Also report the chain-rule bound from the marginal sets.")
@missing_option(("error", "category"))
@csv_options
@json_option
def assess(reference: str, mechs: tuple[str, ...], delta: float, set_method: str,
           bound: bool, names: str | None, skip_rows: int | None, strip: bool | None,
           na_values: tuple[str, ...], as_json: bool, missing: str = "error") -> int:
    """Exact joint guarantee of releasing several columns through their mechanisms."""
    from ..joint import joint_guarantee, marginal_bound

    cols, files = _parse_mechanisms(mechs)
    # an assessment computes the guarantee itself (as `pmlkit assess`): a file's own
    # certificate is not needed, but it is still checked when present
    mechanisms = [load_mechanism(f, allow_uncertified=True) for f in files]
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=reference)
    data = _read_columns(reference, cols, csv, missing)
    data = {c: on_grid(data[c], m) for c, m in zip(cols, mechanisms, strict=True)}
    g = joint_guarantee(mechanisms, data, delta, columns=cols, confidence=set_method)
    doc: dict[str, Any] = {"mechanism_files": dict(zip(cols, files, strict=True)),
                           "joint_guarantee": g.to_dict()}
    lines = _warning_lines(g)
    if bound:
        b = marginal_bound(mechanisms, data, delta, columns=cols, confidence=set_method)
        doc["chain_rule_bound"] = b.to_dict()
        lines.append(f"chain-rule bound from the marginal sets (a bound, >= the exact "
                     f"value): {up_text(b.certified_eps)}")
    emit(as_json, doc, "\n".join(lines))
    return 0


@command.command(name="design")
@click.option("--reference", required=True, type=UserPath(dir_okay=False),
              help="CSV or Parquet file of a joint reference sample.")
@click.option("--columns", required=True, metavar="A,B,...",
              help="The columns released together (comma-separated).")
@click.option("--epsilon", "--eps", "eps", required=True, type=float,
              help="Target PML eps for the whole record (natural log).")
@click.option("--delta", required=True, type=float,
              help="Failure probability of the confidence set, in (0, 1].")
@click.option("--mode", type=click.Choice(["auto", "joint", "per-column"]), default="auto",
              show_default=True,
              help="One mechanism on the tuples (joint) or one per column with a searched "
                   "eps split (per-column); auto picks joint for at most 12 tuples.")
@click.option("--utility", type=click.Choice(["mutual_information", "accuracy",
                                               "estimation"]),
              default="mutual_information", show_default=True,
              help="What each design maximises (estimation: the accuracy of the "
                   "distribution an analyst estimates from the released columns).")
@click.option("--allow-unestimable", is_flag=True,
              help="Keep designs that merge categories (the analyst can then only bound "
                   "their shares); by default they are replaced by estimation designs.")
@renamed_option("--confidence", "--set", "set_method",
                type=click.Choice(_set_methods()), default="l1",
              show_default=True, help="Confidence set.")
@click.option("--out-dir", required=True,
              type=UserPath(file_okay=False, path_type=pathlib.Path),
              help="Folder for the mechanism files and release-plan.json.")
@click.option("--overwrite", is_flag=True, help="Replace existing files in --out-dir.")
@click.option("--numeric", "numeric_specs", multiple=True, metavar="COLUMN=LOWER:UPPER:STEP",
              help="A numeric column and its grid (repeatable): read onto the grid (values "
                   "outside it at its ends, between points to the nearest), designed per "
                   "column and released as numbers by pmlkit privatize.")
@missing_option(("error", "category"))
@csv_options
@progress_option
@json_option
def design(reference: str, columns: str, eps: float, delta: float, mode: str,
           set_method: str, out_dir: pathlib.Path, overwrite: bool, names: str | None,
           skip_rows: int | None, strip: bool | None, na_values: tuple[str, ...],
           as_json: bool, utility: str = "mutual_information",
           allow_unestimable: bool = False, numeric_specs: tuple[str, ...] = (),
           missing: str = "error", progress: bool | None = None) -> int:
    """Design a release of several columns for an overall (eps, delta) on the record."""
    from ..errors import ValidationError
    from ..joint import ReleasePlan, design_joint

    cols = [c.strip() for c in columns.split(",") if c.strip()]
    if len(cols) < 2 or len(set(cols)) != len(cols):
        raise ValidationError(
            f"--columns must name at least 2 distinct columns, got {columns!r}")
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=reference)
    data = _read_columns(reference, cols, csv, missing)
    grids: dict[str, Any] = {}
    for spec in numeric_specs:
        col, sep, text = spec.partition("=")
        if not sep or col not in cols or col in grids:
            raise click.BadParameter(f"must be COLUMN=LOWER:UPPER:STEP, once per column of "
                                     f"--columns, got {spec!r}", param_hint="'--numeric'")
        grids[col] = parse_grid(text)
    if grids and mode == "joint":
        raise click.UsageError("--numeric columns are designed per column: use --mode "
                               "per-column or auto")
    with progress_display("pmlkit joint design", progress_enabled(progress)) as say:
        say("designing")
        res = design_joint(data, eps, delta, columns=cols, confidence=set_method, mode=mode,
                           numeric=grids or None, utility=utility,
                           estimable=not allow_unestimable)
    plan = ReleasePlan.from_design(res)
    plan_path = plan.save(out_dir, overwrite=overwrite)
    doc = plan.to_dict()
    written = [str(out_dir / f) for f in doc["mechanism_files"].values()]
    lines = [str(res.guarantee), f"mode: {res.mode}"]
    if res.split:
        lines.append("per-column design eps (the split; not additive): "
                     + ", ".join(f"{c}: {e:.4g}" for c, e in zip(cols, res.split,
                                                                  strict=True)))
    if res.release is not None:
        lines.append("each output of the joint mechanism is released as the tuple "
                     + ", ".join(f"({', '.join(map(str, t))})"
                                 for t in res.release.output_tuples))
    lines.append(_estimability(res))
    lines.append(f"written: {', '.join(written)}, {plan_path}")
    emit(as_json, {"plan_file": str(plan_path), **doc}, "\n".join(lines))
    return 0


def _estimability(res: Any) -> str:
    """Whether the analyst can estimate the joint distribution of the released columns
    (the released channel, after the tuple assignment, has full row rank)."""
    import numpy as np

    from ..design.estimation import mechanism_rank

    if res.release is not None:
        w = np.asarray(res.release.mechanism.matrix)
    else:
        w = np.ones((1, 1))
        for m in res.mechanisms:
            w = np.kron(w, np.asarray(m.matrix))
    n = w.shape[0]
    if mechanism_rank(w) == n:
        return ("estimation: identifiable; the analyst can estimate the joint distribution "
                "of the released columns (pmlkit estimate)")
    return ("estimation: not identifiable (rank < N): the joint distribution can only be "
            "bounded from the released columns")


@command.command(name="repeat")
@click.option("--mechanism", "mechs", multiple=True, required=True, metavar="FILE",
              help="Mechanism JSON of one release of the column (repeat for re-runs "
                   "through other mechanisms).")
@click.option("--times", type=click.IntRange(min=1), default=1, show_default=True,
              help="How many times the list of --mechanism releases is made.")
@click.option("--prior", default=None, metavar="P1,P2,...",
              help="A known prior, in the order of the mechanisms' input labels.")
@click.option("--reference", default=None, type=UserPath(dir_okay=False),
              help="CSV or Parquet reference sample (instead of --prior).")
@click.option("--column", default=None, help="Column of the reference sample.")
@click.option("--delta", type=float, default=None,
              help="Failure probability of the confidence set (with --reference).")
@renamed_option("--confidence", "--set", "set_method",
                type=click.Choice(_set_methods()), default="l1",
              show_default=True, help="Confidence set around the estimate.")
@csv_options
@json_option
def repeat(mechs: tuple[str, ...], times: int, prior: str | None, reference: str | None,
           column: str | None, delta: float | None, set_method: str, names: str | None,
           skip_rows: int | None, strip: bool | None, na_values: tuple[str, ...],
           as_json: bool) -> int:
    """Exact leakage of releasing one column several times with fresh randomness."""
    from ..errors import ValidationError
    from ..joint import release_leakage

    if (prior is None) == (reference is None):
        raise click.UsageError("give exactly one of --prior or --reference")
    if reference is not None and (column is None or delta is None):
        raise click.UsageError("--reference needs --column and --delta")
    loaded = [load_mechanism(f, allow_uncertified=True) for f in mechs]
    labels = loaded[0].input_labels
    for f, m in zip(mechs, loaded, strict=True):
        if m.input_labels != labels:
            raise ValidationError(
                f"--mechanism {f!r} has input labels {list(m.input_labels)!r}, the first "
                f"has {list(labels)!r}: every release must act on the same column")
    releases = [m.matrix for m in loaded] * times
    kw: dict[str, Any]
    if prior is not None:
        try:
            p = [float(x) for x in prior.split(",")]
        except ValueError:
            raise ValidationError(
                f"--prior must be comma-separated numbers, got {prior!r}") from None
        kw = {"prior": p}
        where = "the given prior"
    else:
        from ..confidence import confidence_set
        from ._common import read_reference

        assert reference is not None and column is not None and delta is not None
        csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=reference)
        est = read_reference(reference, column, csv, categories=labels)
        cs = confidence_set(est.counts, delta, confidence=set_method)
        kw = {"uncertainty_set": cs.set}
        where = f"the {set_method} confidence set (delta = {delta:g}, m = {est.m})"
    total = release_leakage(releases, **kw)
    single = [release_leakage([m.matrix], **kw) for m in loaded]
    doc = {"mechanism_files": list(mechs), "times": times, "releases": len(releases),
           "leakage": total, "single_release_leakage": dict(zip(mechs, single,
                                                                strict=True))}
    lines = [f"{len(releases)} releases of the column ({', '.join(mechs)} x {times}) over "
             f"{where}: exact eps of the whole sequence = {up_text(total)}",
             "  one release: " + ", ".join(f"{f}: {up_text(e)}" for f, e in zip(mechs, single,
                                                                           strict=True))]
    emit(as_json, doc, "\n".join(lines))
    return 0
