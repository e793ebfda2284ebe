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
from typing import Any

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
              help="Accept a certified lower-bound design when the exact one is too large.")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="Where to write the mechanism JSON.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
@click.option("--record", type=click.Choice(["full", "minimal"]), default="full",
              show_default=True,
              help="full: the estimate, m, delta and method (the (eps, delta) claim can be "
                   "re-checked); minimal: only what re-verifies eps over the set.")
@csv_options
@progress_option
@json_option
def command(reference: str, column: str, eps: float, delta: float, utility: str,
            set_method: str, allow_fallback: bool, out: pathlib.Path, overwrite: bool,
            record: str,
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
                                     confidence=set_method, allow_fallback=allow_fallback)
        advance("designed")
        mech = _with_file_fingerprint(result.mechanism, reference)
        if record == "minimal":
            mech = mech.minimal_record()
        mech.save(out)
        advance("saved")
    g = result.guarantee
    text = (f"{g}\nmechanism ({mech.n_inputs} inputs x {mech.n_outputs} outputs) written to "
            f"{out}\nthe file discloses the reference estimate and m = {g.m}"
            + (" (approximately, through the set: --record minimal)" if record == "minimal"
               else "") + "; privatise only records outside the reference sample")
    emit(as_json, {"mechanism_file": str(out), "guarantee": g.to_dict(),
                   "mechanism": mech.to_dict(), "record": record}, text)
    return 0


def _with_file_fingerprint(mech: Any, reference: str) -> Any:
    """The mechanism with the reference file's size and SHA-256 added to its record (so
    ``pmlkit privatize`` can warn when it is given the reference file itself)."""
    from .._provenance import file_fingerprint
    from ..mechanism import Mechanism

    params = dict(mech.parameters)
    params["reference"] = {**dict(params.get("reference") or {}),
                           **file_fingerprint(reference)}
    out = Mechanism(mech.matrix, mech.input_labels, mech.output_labels, mech.designer,
                    params, dict(mech.uncertainty_set), mech.certified_eps)
    object.__setattr__(out, "_certified", mech.certified)
    return out
