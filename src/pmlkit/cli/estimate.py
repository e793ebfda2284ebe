"""``pmlkit estimate``: estimate the true distribution behind a released column.

Examples::

    pmlkit estimate --input adult_private.parquet --column sex
    pmlkit estimate --input released.csv --column sex --mechanism sex.json --by race --json

The mechanism comes from ``--mechanism FILE`` or, without it, from what ``pmlkit
privatize`` recorded with the output: the manifest ``<FILE>.pmlkit.json`` or the Parquet
metadata, under the key ``"mechanism"`` (a mapping column -> mechanism document). Prints
one row per category: the estimate and its interval (see ``pmlkit.estimate_distribution``).
"""

from __future__ import annotations

import click

from ._common import csv_from_options, csv_options, emit, json_option, load_mechanism


@click.command(name="estimate")
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False),
              metavar="FILE", help="The released CSV/Parquet file.")
@click.option("--column", required=True, help="The released (privatised) column.")
@click.option("--mechanism", "mech_path", default=None, type=click.Path(dir_okay=False),
              help="Mechanism JSON file (default: the one recorded with the file).")
@click.option("--by", default=None, metavar="COLUMN",
              help="A non-private column: one estimate per group.")
@click.option("--method", type=click.Choice(["mle", "inversion"]), default="mle",
              show_default=True, help="Maximum likelihood (EM) or unbiased inversion.")
@click.option("--confidence", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Confidence level of the intervals.")
@csv_options
@json_option
def command(input_path: str, column: str, mech_path: str | None, by: str | None,
            method: str, confidence: float, names: str | None, skip_rows: int | None,
            strip: bool | None, na_values: tuple[str, ...], as_json: bool) -> int:
    """Estimate the distribution of the true values behind a released column."""
    from ..inference import estimate_distribution, find_mechanism
    from ..io import read_table
    from ..privatization.files import arrow_type_for

    if mech_path is not None:
        # estimation needs the channel, not the privacy certificate: an uncertified file
        # is read (strictly) all the same
        mech = load_mechanism(mech_path, allow_uncertified=True)
        source = f"mechanism file {mech_path}"
    else:
        mech, source = find_mechanism(input_path, column)
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=input_path)
    wanted = [column] if by is None or by == column else [column, by]
    types = None
    out_type = arrow_type_for(mech.output_labels)
    if out_type is not None:  # read the released column with the labels' type (CSV)
        types = {column: out_type}
    table = read_table(input_path, wanted, csv=csv, column_types=types)
    if by is None:
        res = estimate_distribution(table, mech, column=column, method=method,
                                    confidence=confidence)
    else:
        res = estimate_distribution(table, mech, column=column, by=by, method=method,
                                    confidence=confidence)
    doc = {"input": input_path, "column": column, "mechanism_source": source,
           **res.to_dict()}
    emit(as_json, doc, f"{input_path}, column {column!r} (mechanism from {source})\n{res}")
    return 0
