"""``pmlkit demo``: the end-to-end demonstration of :mod:`pmlkit.demo`."""

from __future__ import annotations

import math

import click

from ._common import emit, json_option


@click.command(name="demo")
@click.option("--eps", type=float, default=math.log(3), show_default="log 3",
              help="Privacy parameter of the randomized response mechanism.")
@click.option("--delta", type=float, default=1e-6, show_default=True,
              help="Failure probability of the l1 confidence ball (eq. betastar).")
@json_option
def command(eps: float, delta: float, as_json: bool) -> None:
    """Estimate a distribution from a built-in sample, report the PML of randomized
    response under it and the exact worst case over the l1 uncertainty ball."""
    from ..demo import format_report, run

    doc = run(eps=eps, delta=delta)
    emit(as_json, doc, format_report(doc))
