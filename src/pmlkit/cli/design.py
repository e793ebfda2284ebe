"""``pmlkit design``: design a certified mechanism from a reference column.

Example::

    pmlkit design --reference adult.data --names adult --column sex \\
        --epsilon 0.693 --delta 1e-6 --out sex.json

Reads the column, estimates its distribution, builds the confidence set (``--set``,
default the paper's l1-ball, Thm weissman) and designs the optimal mechanism over it with
:func:`pmlkit.design.design_from_samples`; prints the (eps, delta)-PML guarantee and the
utility of eps-LDP randomized response for comparison, and writes the mechanism JSON.
"""

from __future__ import annotations

import pathlib

import click

from ._common import (
    csv_from_options,
    csv_options,
    emit,
    json_option,
    progress_enabled,
    progress_option,
    steps,
)

UTILITIES = ("mutual_information", "accuracy")


def _set_methods() -> list[str]:
    try:
        from ..confidence import METHODS

        return list(METHODS)
    except ImportError:  # pragma: no cover
        return ["l1"]


@click.command(name="design")
@click.option("--reference", required=True, type=click.Path(dir_okay=False),
              help="CSV or Parquet file holding the reference sample.")
@click.option("--column", required=True, help="Column of the sensitive labels.")
@click.option("--epsilon", "eps", required=True, type=float,
              help="Target PML eps (natural log), e.g. 0.693 for log 2.")
@click.option("--delta", required=True, type=float,
              help="Failure probability of the distribution estimate, in (0, 1].")
@click.option("--utility", type=click.Choice(UTILITIES), default="mutual_information",
              show_default=True, help="What the design maximises.")
@click.option("--set", "set_method", type=click.Choice(_set_methods()), default="l1",
              show_default=True, help="Confidence set around the estimate.")
@click.option("--allow-fallback", is_flag=True,
              help="Deprecated, no effect: large columns are designed with a certified "
                   "optimality gap (see --max-seconds).")
@click.option("--max-seconds", type=float, default=60.0, show_default=True,
              help="Time budget of a mutual-information design; when it runs out the "
                   "certified optimality gap reached is reported.")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Where to write the mechanism JSON.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
@csv_options
@progress_option
@json_option
def command(reference: str, column: str, eps: float, delta: float, utility: str,
            set_method: str, allow_fallback: bool, max_seconds: float, out: pathlib.Path,
            overwrite: bool,
            names: str | None, skip_rows: int | None, strip: bool | None,
            na_values: tuple[str, ...], progress: bool | None, as_json: bool) -> int:
    """Design a mechanism with an (eps, delta)-PML guarantee from a reference sample."""
    from ..design import design_from_samples
    from ..errors import DataError
    from ..io import read_column

    if out.exists() and not overwrite:
        raise DataError(f"output file {str(out)!r} already exists; pass --overwrite to "
                        "replace it")
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=reference)
    with steps(3, "design", progress_enabled(progress)) as advance:
        values = read_column(reference, column, csv=csv)
        advance("read")
        result = design_from_samples(values, eps, delta, utility=utility,
                                     confidence=set_method, max_seconds=max_seconds)
        advance("designed")
        result.mechanism.save(out)
        advance("saved")
    g = result.guarantee
    from ..design.summary import summarize_mechanism

    summary = summarize_mechanism(result.mechanism, g.estimate)
    text = (f"{g}\nmechanism ({result.mechanism.n_inputs} inputs x "
            f"{result.mechanism.n_outputs} outputs, {summary.outputs_used} used) written to "
            f"{out}\n{summary}")
    emit(as_json, {"mechanism_file": str(out), "guarantee": g.to_dict(),
                   "mechanism": result.mechanism.to_dict(), "summary": summary.to_dict()},
         text)
    return 0
