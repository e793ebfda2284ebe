"""``pmlkit audit``: audit the (eps, delta) guarantees by simulation (:mod:`pmlkit.audit`).

Prints the table of observed violations / trials against each claimed delta, with the
Clopper-Pearson upper bound and the one-sided binomial test, and for the ``exact`` rows the
largest exact failure probability found over worst-case true distributions (compared with
delta directly; where it was found is in the JSON output). Exit status: 0 when every
guarantee passes, :data:`EXIT_AUDIT_FAILED` (4) when one fails (a failure of the library,
not of the user), 1/2 for user errors as every command.
"""

from __future__ import annotations

import click

from ._common import emit, json_option, progress_display, progress_enabled, progress_option

#: Exit status when the audit rejects a guarantee.
EXIT_AUDIT_FAILED = 4


@click.command(name="audit")
@click.option("--trials", type=click.IntRange(min=1), default=60, show_default=True,
              help="Trials per delta for the designers (a quarter per confidence method; 3x "
                   "for Laplace, 2x for coverage and the Gaussian, 1/4 for the release path; "
                   "the exact sums do not depend on it).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the simulation (research reproducibility; the audit protects "
                   "no one).")
@click.option("--delta", "deltas", type=float, multiple=True,
              help="Claimed delta to audit (repeatable; default 0.05, 0.3 and 1e-6).")
@click.option("--family", "families", multiple=True,
              type=click.Choice(["design", "laplace", "gaussian", "coverage", "exact",
                                 "release"]),
              help="Family to audit (repeatable; default all).")
@click.option("--alpha", type=float, default=1e-3, show_default=True,
              help="Level of the one-sided binomial test and the Clopper-Pearson bound.")
@click.option("--radius-scale", type=float, default=1.0, show_default=True,
              help="Shrink every confidence set towards its estimate by this factor (l1 "
                   "radii and box bounds; values < 1 build a deliberately broken variant, to "
                   "see the audit fail).")
@json_option
@progress_option
def command(trials: int, seed: int, deltas: tuple[float, ...], families: tuple[str, ...],
            alpha: float, radius_scale: float, as_json: bool, progress: bool | None) -> int:
    """Audit pmlkit's (eps, delta) guarantees: exact coverage sums at worst-case true
    distributions, and simulations that design from samples, release through files and
    count how often the true leakage exceeds the promise."""
    from ..audit import DEFAULT_DELTAS, FAMILIES, run_audit

    fams = families or FAMILIES
    with progress_display("pmlkit audit", progress_enabled(progress)):
        result = run_audit(trials=trials, rng=seed, deltas=deltas or DEFAULT_DELTAS,
                           families=fams, alpha=alpha, radius_scale=radius_scale)
    emit(as_json, result.to_dict(), str(result))
    return 0 if result.passed else EXIT_AUDIT_FAILED
