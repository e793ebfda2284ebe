"""``pmlkit demo``: the end-to-end demonstration of :mod:`pmlkit.demo` (what ``make demo``
runs): design a mechanism for the Adult "sex" column on a reference split, privatise the
rest and compare with LDP; then the exact worst case over a confidence set on a built-in
sample."""

from __future__ import annotations

import math
import pathlib

import click

from ._common import UserPath, emit, json_option


@click.command(name="demo")
@click.option("--eps", "--epsilon", "eps", type=float, default=math.log(2), show_default="log 2",
              help="Target PML eps of the designed mechanism.")
@click.option("--delta", type=float, default=1e-6, show_default=True,
              help="Failure probability of the confidence set (paper, Section 4.4).")
@click.option("--data", type=UserPath(path_type=pathlib.Path), default=None,
              help="Folder of the UCI Adult files (default: PMLKIT_DATA or the cache; "
                   " a synthetic sample with the same marginals otherwise).")
@json_option
def command(eps: float, delta: float, data: pathlib.Path | None, as_json: bool) -> None:
    """Design, privatise and compare with LDP on Adult "sex", then show the exact worst
    case over the l1 confidence ball for randomized response on a built-in sample."""
    from ..demo import adult_pipeline, format_pipeline, format_report, run

    pipeline = adult_pipeline(eps=eps, delta=delta, data=data)
    tour = run(delta=delta)
    text = "\n".join([
        "=== Part 1: privatise the Adult 'sex' column with a PML mechanism ===",
        format_pipeline(pipeline), "",
        "=== Part 2: worst case over the confidence set, on a built-in sample ===",
        format_report(tour)])
    emit(as_json, {"pipeline": pipeline, "worst_case_tour": tour}, text)
