"""``pmlkit release``: release a whole table from a declarative spec.

Example::

    pmlkit release --spec release.toml

The spec (TOML; :mod:`pmlkit.release.spec`) names the reference sample, the input and
output tables, epsilon and delta for the whole record and one ``[columns.NAME]`` table per
privatised column. The command designs the columns together, releases them in one pass
(other columns unchanged), and writes the released data, its manifest
(``<output>.pmlkit.json``, with the one joint guarantee) and an HTML report
(:func:`pmlkit.release.release_table`).
"""

from __future__ import annotations

from typing import Any

import click

from ._common import UserPath, emit, json_option, progress_enabled, progress_option


@click.command("release")
@click.option("--spec", "spec_path", required=True,
              type=UserPath(dir_okay=False, path_type=str),
              help="The release spec (TOML): reference, input, output, epsilon, delta and "
                   "one [columns.NAME] table per privatised column.")
@progress_option
@json_option
def command(spec_path: str, progress: bool | None, as_json: bool) -> None:
    """Release a whole table: design its columns together for one (epsilon, delta) on the
    record, release them in one pass, write the data, its manifest and an HTML report."""
    import warnings

    from .._validation import up_text
    from ..errors import PMLWarning
    from ..release import release_table

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PMLWarning)
        res = release_table(spec_path, progress=progress_enabled(progress))
    about_input = set(res.input_warnings)
    for w in caught:  # one line each, in the command line's words
        if issubclass(w.category, PMLWarning):
            # a warning computed from the raw input is the operator's: not in the report
            tag = (" (from the raw input: not in the report, not for publication)"
                   if str(w.message) in about_input else "")
            click.echo(f"pmlkit: warning{tag}: {w.message}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    g = res.guarantee
    lines: list[Any] = [
        f"released {res.rows} rows to {res.output}",
        f"whole-record guarantee: ({up_text(g.eps)}, {g.delta:.3g})-PML [{g.kind}] for columns "
        f"{', '.join(g.columns)} together (requested epsilon {res.spec.epsilon:g}); "
        "columns copied unchanged are not covered",
    ]
    for c in res.columns:
        lines.append(f"  {c.name} ({c.spec.type}): designed for eps {c.eps:.4g}, "
                     f"{c.mechanism.n_inputs} -> {c.mechanism.n_outputs} values")
    for c in res.columns:  # the raw input's counts (FileReport.input_counts)
        n = dict(res.input_counts.get(c.name, {}))
        if c.spec.type == "numeric" and n:
            low, high = n.get("clamped_low", 0), n.get("clamped_high", 0)
            lines.append(f"  {c.name}: {n.get('rows', 0)} input values, {low + high} "
                         f"clamped ({low} below, {high} above), {n.get('rounded', 0)} "
                         f"rounded, {n.get('missing', 0)} missing")
        elif n.get("unknown_mapped_rows"):
            lines.append(f"  {c.name}: {n['unknown_mapped_rows']} input value(s) outside its "
                         f"categories released as {c.spec.unknown_as!r}")
    if len(lines) > 2 + len(res.columns):
        lines.insert(2 + len(res.columns), "counts of the raw input (for you only: not in "
                     "the report or the manifest, not for publication):")
    lines += [f"manifest: {res.manifest}", f"report: {res.report}"]
    if res.seeded:
        lines.append("warning: seeded randomness (research only): do not publish this "
                     "release")
    emit(as_json, res.to_dict(), "\n".join(lines))
