"""``pmlkit reproduce``: remake the paper's figures (PNG + tidy CSV) and an HTML report.

Examples::

    pmlkit reproduce --all --output figures
    pmlkit reproduce --figure laplace_adult --figure gauss --output figs --iterations 20
    pmlkit reproduce --figure laplace_adult --data /path/to/adult --output figs --seed 1

Figures needing the UCI Adult data are skipped with a message when it cannot be found
(``--data``, ``PMLKIT_DATA`` or the loader's cache); the others still run.
"""

from __future__ import annotations

import json
import pathlib

import click

from ..experiments import FIGURES
from ._common import UserPath, progress_display, progress_enabled, progress_option, renamed_option


@click.command(name="reproduce")
@click.option("--figure", "figures", multiple=True, type=click.Choice(list(FIGURES)),
              help="Figure to make (repeatable).")
@click.option("--all", "all_", is_flag=True, help="Make every figure.")
@renamed_option("--output", "--out", "out", required=True,
                type=UserPath(file_okay=False, path_type=pathlib.Path),
              help="Output folder for NAME.png, NAME.csv and report.html.")
@click.option("--iterations", type=click.IntRange(min=1), default=None,
              help="Monte-Carlo iterations / random points / grid size per figure "
                   "(default: each figure's paper setting).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the (research-only) random generator.")
@click.option("--data", type=UserPath(path_type=pathlib.Path), default=None,
              help="Folder (or file) of the UCI Adult data (default: PMLKIT_DATA or cache).")
@progress_option
@click.option("--strict", is_flag=True,
              help="Exit with status 1 when a check of the paper's claims fails.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary on stdout.")
def command(figures: tuple[str, ...], all_: bool, out: pathlib.Path, iterations: int | None,
            seed: int, data: pathlib.Path | None, progress: bool | None, strict: bool,
            as_json: bool) -> int:
    """Reproduce the paper's figures: NAME.png, NAME.csv and one report.html in --output."""
    from ..experiments.report import REPORT_NAME, reproduce

    if not figures and not all_:
        raise click.UsageError("give --figure NAME (repeatable) or --all")
    names = list(FIGURES) if all_ else list(figures)
    if data is not None:
        # an explicit --data must exist: skipping the Adult figures silently would hide a
        # typo (without --data, missing data only skips those figures)
        from ..datasets import find_adult

        find_adult(data)
    show = progress_enabled(progress)
    echo = None if as_json else click.echo
    # the figures draw their own bars: the display names each figure as it starts
    with progress_display("pmlkit reproduce", show, details=False):
        results = reproduce(names, out, iterations=iterations, rng=seed, data=data,
                            progress=show, echo=echo)
    report = out / REPORT_NAME
    if as_json:
        click.echo(json.dumps({"report": str(report),
                               "figures": [r.to_dict() for r in results]}, indent=2))
    else:
        click.echo(f"report: {report}")
    if any(r.error for r in results):
        return 1
    if strict and any(not c.holds for r in results for c in r.checks):
        return 1
    return 0
