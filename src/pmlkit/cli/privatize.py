"""``pmlkit privatize``: privatise columns of CSV/Parquet files with a mechanism.

Examples::

    pmlkit privatize --mechanism sex.json --input adult.test --names adult \\
        --column sex --output adult_test_private.parquet
    pmlkit privatize --mechanism sex.json --input 'data/part-*.parquet' --column sex \\
        --output private/ --engine dask --scheduler tcp://10.0.0.5:8786

The input is never overwritten; the output is written to a temporary file and published
only when complete, and refused if it exists unless ``--overwrite``. Every column other
than ``--column`` comes out exactly as it went in (CSV cell text byte for byte); ``--na``
and ``--strip`` apply to the privatised column only. ``--missing`` says what a missing
value of the privatised column becomes (``error``, ``category`` or ``keep``: kept missing,
so that missingness itself is released unprotected); ``--unknown-as LABEL`` privatises a
value the mechanism does not know as ``LABEL`` (recorded in the manifest) instead of
stopping. Randomness is cryptographically
secure unless ``--seed`` is given, which makes the output reproducible by anyone who knows
the seed: research only. ``<output>.pmlkit.json`` records which one was used; for a
seeded run it holds a salted SHA-256 commitment to the seed, not the seed (the salt is
printed on stderr only).
"""

from __future__ import annotations

import warnings

import click

from ..errors import PMLWarning
from ._common import (
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

SEED_WARNING = ("WARNING: --seed makes the randomness reproducible: anyone who knows the "
                "seed can undo the privatisation. Use it for research only, never to protect "
                "people (omit --seed for the secure default).")


@click.command(name="privatize")
@click.option("--mechanism", "mech_path", required=True, type=click.Path(dir_okay=False),
              help="Mechanism JSON file (from pmlkit design).")
@click.option("--input", "inputs", required=True, multiple=True, metavar="FILE_OR_GLOB",
              help="Input CSV/Parquet file or glob pattern (repeatable).")
@click.option("--column", "columns", required=True, multiple=True,
              help="Column to privatise (repeatable).")
@click.option("--into", "into", multiple=True,
              help="New column name for each --column (default: replace in place).")
@click.option("--output", required=True,
              help="Output file (one input) or folder (several inputs, or --engine dask).")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local",
              show_default=True, help="Stream locally, or run on a Dask cluster.")
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
@csv_options
@progress_option
@json_option
def command(mech_path: str, inputs: tuple[str, ...], columns: tuple[str, ...],
            into: tuple[str, ...], output: str, engine: str, scheduler: str | None,
            seed: int | None, overwrite: bool, allow_uncertified: bool, batch_rows: int,
            missing: str, unknown_as: str | None, compression: str | None,
            delimiter: str | None,
            names: str | None, skip_rows: int | None, strip: bool | None,
            na_values: tuple[str, ...], progress: bool | None, as_json: bool) -> int:
    """Privatise columns of CSV/Parquet files with a mechanism."""
    if scheduler is not None and engine != "dask":
        raise click.UsageError("--scheduler needs --engine dask")
    if into and len(into) != len(columns):
        raise click.UsageError(f"give one --into per --column ({len(columns)} columns, "
                               f"{len(into)} --into)")
    mech = load_mechanism(mech_path, allow_uncertified=allow_uncertified)
    if not mech.certified:
        click.echo(f"pmlkit: warning: {certificate_line(mech)}", err=True)
    rng = None
    if seed is not None:
        from ..rng import resolve_rng

        click.echo(SEED_WARNING, err=True)
        rng = resolve_rng(seed)  # records a salted commitment, never the seed itself
        click.echo(f"pmlkit: seed commitment salt {rng.seed_salt} (not written anywhere; "
                   "keep it apart from the output to prove later which seed was used)",
                   err=True)
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=inputs[0],
                           delimiter=delimiter)
    if missing == "category" and "(missing)" not in mech.input_labels:
        raise click.UsageError("--missing category needs a mechanism with the input label "
                               "'(missing)': design it with pmlkit design --missing category")
    unknown_label = None
    if unknown_as is not None:
        hits = [lab for lab in mech.input_labels if str(lab) == unknown_as]
        if not hits:
            raise click.BadParameter(
                f"{unknown_as!r} is not an input label of the mechanism (input labels: "
                f"{', '.join(map(str, mech.input_labels[:20]))})", param_hint="'--unknown-as'")
        unknown_label = hits[0]
    src = inputs[0] if len(inputs) == 1 else list(inputs)
    with warnings.catch_warnings(record=True) as caught:  # PMLWarnings: one stderr line
        warnings.simplefilter("always")
        if engine == "dask":
            from ..privatization import privatize_file_dask

            report = privatize_file_dask(mech, src, output, list(columns),
                                         into=list(into) or None, rng=rng, overwrite=overwrite,
                                         csv=csv, scheduler=scheduler,
                                         progress=progress_enabled(progress), missing=missing,
                                         unknown_as=unknown_label, compression=compression)
        else:
            from ..privatization.files import privatize_file

            report = privatize_file(mech, src, output, list(columns), into=list(into) or None,
                                    rng=rng, overwrite=overwrite, csv=csv, batch_rows=batch_rows,
                                    progress=progress_enabled(progress), missing=missing,
                                    unknown_as=unknown_label, compression=compression)
    for w in caught:
        if issubclass(w.category, PMLWarning):
            click.echo(f"pmlkit: warning: {w.message}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    rows = "unknown number of" if report.rows < 0 else f"{report.rows}"
    lines = [f"privatised {rows} rows, column(s) {', '.join(report.columns)} -> "
             f"{', '.join(report.into)}, with {mech_path}"]
    lines += [f"  {i} -> {o}" for i, o, _ in report.files]
    lines.append(f"  randomness: {report.rng}")
    lines.append(f"  {certificate_line(mech)}")
    if report.seeded:
        lines.append("  SEEDED RUN: research only, not a protection of the people in the data")
    emit(as_json, {**report.to_dict(), "engine": engine, "certified": mech.certified},
         "\n".join(lines))
    return 0
