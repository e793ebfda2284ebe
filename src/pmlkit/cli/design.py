"""``pmlkit design``: design a certified mechanism from a reference column.

Example::

    pmlkit design --reference adult.data --names adult --column sex \\
        --epsilon 0.693 --delta 1e-6 --output sex.json

Reads the column, estimates its distribution, builds the confidence set (``--confidence``,
default the paper's l1-ball, Thm weissman) and designs the optimal mechanism over it with
:func:`pmlkit.design.design_from_samples`; prints the (eps, delta)-PML guarantee and the
utility of eps-LDP randomized response for comparison, and writes the mechanism JSON.
An estimation design (``--utility estimation``, or the estimable default replacing a design
that merges categories) is compared with k-ary randomized response calibrated to the same
guarantee (the largest LDP level whose worst case over the set is ``<= eps``): the command
prints its error ratio, or says in one line that it could not improve on k-RR.

``--categories a,b,c`` (or ``--categories @file``, one label per line) declares the full
list of labels: unseen ones count 0, so a rare label absent from the reference still gets
privatised later. ``--missing`` says what a missing value in the reference column is:
``error`` (default), ``category`` (the label ``(missing)``, designed like any other) or
``keep`` (left out: such values stay missing when privatised, which releases missingness
unprotected). ``--output`` never replaces the reference or a file that is not a pmlkit
mechanism, even with ``--overwrite``.

``--coarsen auto`` (or ``--coarsen K``) merges rare categories before designing: the ``K``
most frequent stay, the rest become one category ``other``. ``auto`` tries several ``K``
(:func:`pmlkit.design.bucketing.propose_coarsening`), prints the utility of each candidate
release on the original column and keeps the best; the utility printed for the chosen
``K`` is that of the mechanism written. The mechanism file stays on the original labels:
merged categories share one row (a coarsened mechanism IS a mechanism on the original
alphabet whose rows agree within a group), so ``pmlkit privatize`` applies it unchanged.
Its guarantee is the one without coarsening: certified on the original alphabet over the
original column's confidence set (any ``--confidence``); every candidate is designed over
that set's image under its merge (:func:`pmlkit.design.bucketing.merged_set`, exact for
the l1-balls and boxes those methods build). ``--coarsen`` works with ``--utility
mutual_information`` or ``accuracy``, and with every ``--missing`` (under ``category`` the
label ``(missing)`` is kept or merged like any other).
"""

from __future__ import annotations

import pathlib
import warnings
from typing import Any

import click

from ._common import (
    UserPath,
    csv_from_options,
    csv_options,
    delimiter_option,
    emit,
    json_option,
    progress_display,
    progress_enabled,
    progress_option,
    renamed_option,
)
from ._numeric import NUMERIC_UTILITIES, numeric_option

UTILITIES = ("mutual_information", "accuracy", "estimation", "maxmin")


def _set_methods() -> list[str]:
    try:
        from ..confidence import METHODS

        return list(METHODS)
    except ImportError:  # pragma: no cover
        return ["l1"]


@click.command(name="design")
@click.option("--reference", required=True, type=UserPath(dir_okay=False),
              help="CSV or Parquet file holding the reference sample.")
@click.option("--column", required=True, help="Column of the sensitive labels.")
@click.option("--epsilon", "--eps", "eps", required=True, type=float,
              help="Target PML eps (natural log), e.g. 0.693 for log 2.")
@click.option("--delta", required=True, type=float,
              help="Failure probability of the distribution estimate, in (0, 1].")
@click.option("--utility", type=click.Choice(UTILITIES + NUMERIC_UTILITIES[:2]), default=None,
              help="What the design maximises (default: mutual_information, replaced by "
                   "estimation when it merges categories; with --numeric: estimation, or "
                   "abs with --allow-unestimable); estimation: the accuracy of the "
                   "distribution an analyst estimates from the released column; maxmin: "
                   "the worst utility of --utility-matrix over the pairs it can produce; "
                   "abs / squared (--numeric): the expected absolute / squared error of "
                   "the released number; with --numeric, estimation: the narrowest "
                   "interval of the mean an analyst estimates (the best certified design "
                   "by that utility is written).")
@numeric_option
@click.option("--utility-matrix", "utility_matrix", default=None,
              type=UserPath(dir_okay=False, exists=True),
              help="With --utility maxmin: CSV/text (one row per category in the order "
                   "pmlkit lists them, one column per output) or .npy file of u(x, y).")
@renamed_option("--confidence", "--set", "set_method",
                type=click.Choice(_set_methods()), default="l1",
              show_default=True, help="Confidence set around the estimate.")
@click.option("--allow-unestimable", is_flag=True,
              help="Keep a design that merges categories: the analyst can then only bound "
                   "their shares, not estimate them. By default such a design is replaced "
                   "by the estimation design, from which every category can be estimated.")
@click.option("--allow-fallback", is_flag=True,
              help="Deprecated, no effect: large columns are designed with a certified "
                   "optimality gap (see --max-seconds).")
@click.option("--max-work", type=float, default=60.0, show_default=True,
              help="Work budget of a mutual-information design, in work units (counted "
                   "search operations, about a second of one core each): the same inputs "
                   "give the same mechanism on any machine; when it runs out the certified "
                   "optimality gap reached is reported.")
@click.option("--max-seconds", type=float, default=None,
              help="Outer time cap of the design (default: none). When it stops the search "
                   "a warning says so, with the certified gap it left: the mechanism then "
                   "depends on this machine's speed and load.")
@renamed_option("--output", "--out", "out", required=True,
                type=UserPath(dir_okay=False, path_type=pathlib.Path),
                help="Where to write the mechanism JSON.")
@click.option("--overwrite", is_flag=True,
              help="Replace an existing --output file (only a pmlkit mechanism file).")
@click.option("--categories", default=None, metavar="A,B,...|@FILE",
              help="The full list of labels (comma-separated, or @FILE with one per line); "
                   "labels absent from the reference count 0.")
@click.option("--coarsen", default=None, metavar="auto|K",
              help="Merge rare categories first: keep the K most frequent, merge the rest "
                   "into 'other' (auto: try several K, print the utility of each one's "
                   "release, keep the best). The file keeps the original labels (merged "
                   "ones share a row) and the guarantee over the original --confidence set.")
@click.option("--missing", type=click.Choice(["error", "category", "keep"]), default="error",
              show_default=True,
              help="A missing value in --column: stop (error), design it as the label "
                   "'(missing)' (category), or leave it out (keep: it stays missing when "
                   "privatised, which releases missingness unprotected).")
@click.option("--output-names", "output_names", type=click.Choice(["values", "merged"]),
              default="values", show_default=True,
              help="What each output is released as: values (a value of --column, chosen "
                   "to maximise the probability that the released value is the true one; "
                   "the column keeps its type) or merged (names of the values it stands "
                   "for, such as 'a | b', which leave the column's domain).")
@delimiter_option
@click.option("--record", type=click.Choice(["full", "minimal"]), default="full",
              show_default=True,
              help="full: the estimate, m, delta and method (the (eps, delta) claim can be "
                   "re-checked); minimal: only what re-verifies eps over the set.")
@csv_options
@progress_option
@json_option
def command(reference: str, column: str, eps: float, delta: float, utility: str,
            set_method: str, allow_fallback: bool, max_work: float,
            max_seconds: float | None, out: pathlib.Path,
            overwrite: bool, record: str, coarsen: str | None,
            categories: str | None, missing: str, delimiter: str | None,
            names: str | None, skip_rows: int | None, strip: bool | None,
            na_values: tuple[str, ...], progress: bool | None, as_json: bool,
            utility_matrix: str | None = None, allow_unestimable: bool = False,
            numeric: str | None = None, output_names: str = "values") -> int:
    """Design a mechanism with an (eps, delta)-PML guarantee from a reference sample."""
    from ..design import design_from_samples
    from ..errors import DataError, PMLWarning, TooLargeError
    from ..io import read_labels
    from ._numeric import parse_grid, utility_for

    if utility is None and numeric is not None and not allow_unestimable:
        # a release the analyst can use: the abs-optimal design merges grid points, so
        # neither the distribution nor the mean could be estimated from it
        utility = "estimation"
    utility = utility_for(utility, numeric is not None)
    _check_out(out, pathlib.Path(reference), overwrite)
    if numeric is not None:
        from ._numeric import design_command

        given = [f for f, v in (("--coarsen", coarsen), ("--categories", categories),
                                ("--utility-matrix", utility_matrix)) if v is not None]
        if given:
            raise click.UsageError(f"{given[0]} does not apply to a numeric column "
                                   "(--numeric): its grid is its alphabet")
        return design_command(
            reference=reference, column=column, eps=eps, delta=delta, utility=utility,
            set_method=set_method, out=out, record=record, grid=parse_grid(numeric),
            missing=missing, as_json=as_json,
            csv=csv_from_options(names, skip_rows, strip, na_values, path_hint=reference,
                                 delimiter=delimiter))
    cats = _categories(categories)
    keep_k = _coarsen_spec(coarsen, utility)
    umat = _utility_matrix(utility, utility_matrix)
    if output_names != "values" and (umat is not None or coarsen is not None):
        raise click.BadParameter(
            f"{output_names!r} works only without --coarsen and --utility-matrix (their "
            "outputs are the categories they keep)", param_hint="'--output-names'")
    proposal_text = ""
    proposal: Any = None
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=reference,
                           delimiter=delimiter)
    if allow_fallback:
        click.echo("pmlkit: warning: --allow-fallback is deprecated and has no effect (large "
                   "columns are designed with a certified optimality gap; see --max-seconds)",
                   err=True)
    with progress_display("pmlkit design", progress_enabled(progress)) as advance:
        advance(f"reading --column {column!r} of {reference}")
        values = read_labels(reference, column, csv=csv)
        advance("designing")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", PMLWarning)
                if umat is not None:
                    from ..design.maxmin import maxmin_from_samples

                    result = maxmin_from_samples(values, eps, delta, umat,
                                                 confidence=set_method, categories=cats,
                                                 missing=missing)
                elif coarsen is None:
                    result = design_from_samples(
                        values, eps, delta, utility=utility, confidence=set_method,
                        max_seconds=max_seconds, categories=cats, missing=missing,
                        max_work=max_work, estimable=not allow_unestimable,
                        output_names=output_names)
                else:
                    result, proposal = _coarsen(
                        values, eps, delta, utility=utility, keep=keep_k,
                        categories=cats, max_seconds=max_seconds, confidence=set_method,
                        missing=missing, max_work=max_work)
                    if proposal is not None:
                        proposal_text = f"{proposal}\n"
            for w in caught:  # one line each, in the command line's own words
                msg = str(w.message).replace("max_seconds=", "--max-seconds ").replace(
                    "max_work=", "--max-work ").replace("max_seconds", "--max-seconds").replace(
                    "max_work", "--max-work").replace(
                    "design_coarsened (", "--coarsen (")
                click.echo(f"pmlkit: warning: {msg}", err=True)
        except DataError as exc:
            text = str(exc)
            if text.startswith("--column"):
                raise
            where = f"--column {column!r} of {reference!r}"
            if missing == "error" and "null" in text and "--missing" not in text:
                raise DataError(f"{where}: {text} (or pass --missing category / --missing "
                                "keep)") from exc
            if "is not in categories" in text:
                raise DataError(f"{where}: {text}; add the label(s) to --categories, or "
                                "leave --categories out to design for the reference's own "
                                "values") from exc
            raise DataError(f"{where}: {text}") from exc
        except TooLargeError as exc:
            if "distinct values" not in str(exc):
                raise
            raise DataError(f"--column {column!r} of {reference!r}: {exc} (then pass the "
                            "labels with --categories)") from exc
        advance(f"saving {out}")
        _check_out(out, pathlib.Path(reference), overwrite)  # nothing replaced meanwhile
        mech = result.mechanism  # the counts only: no digest of the reference file
        if record == "minimal":
            mech = mech.minimal_record()
        mech.save(out)
    g = result.guarantee
    from ..design.summary import summarize_mechanism

    with progress_display("pmlkit design", progress_enabled(progress)) as advance:
        # simulated releases behind the summary's expected error: the last long step
        advance("summary: simulating releases for the expected estimation error")
        summary = summarize_mechanism(mech, g.estimate)
    from ..plain import plain_sentence

    plain = plain_sentence(g.eps)
    swapped = mech.parameters.get("estimable")
    if swapped:
        proposal_text += f"{swapped} (--allow-unestimable keeps it)\n"
    merged = int(mech.parameters.get("outputs_merged") or 0)
    if merged:  # (a design with more outputs than values, published as values)
        proposal_text += (f"note: the design had {mech.n_outputs + merged} outputs; "
                          f"{merged} of them are released as values of --column {column!r} "
                          "that other outputs also take (a post-processing: the guarantee "
                          "and the utility shown are those of what is released)\n")
    versus = _versus_randomized_response(mech, g)
    if versus is not None:
        proposal_text += f"{versus['statement']}\n"
    text = (proposal_text + f"{g}\nmechanism ({mech.n_inputs} inputs x "
            f"{mech.n_outputs} outputs, "
            f"{summary.outputs_used} used) written to {out}\n{summary}"
            f"\nthe file discloses the reference estimate and m = {g.m}"
            + (" (approximately, through the set: --record minimal)" if record == "minimal"
               else "") + "; privatise only records outside the reference sample")
    doc: dict[str, Any] = {"mechanism_file": str(out), "guarantee": g.to_dict(),
                           "mechanism": mech.to_dict(), "record": record,
                           "summary": summary.to_dict(), "plain_words": plain}
    if versus is not None:
        doc["versus_randomized_response"] = versus
    if coarsen is not None:
        doc["coarsening"] = mech.parameters.get("coarsening")
        if proposal is not None:
            doc["coarsening_candidates"] = proposal.to_dict()
    emit(as_json, doc, text)
    return 0


def _versus_randomized_response(mech: Any, g: Any) -> dict[str, Any] | None:
    """For an estimation design (``--utility estimation``, or the estimable default's
    replacement of a merging design): its estimation error at the reference estimate
    against that of k-ary randomized response calibrated to the same guarantee, the
    largest LDP level whose exact worst case over the design's set is ``<= eps``
    (bisection; the level kept is always one that passed the check). The estimation
    design must improve on it, or the command says that it could not. ``None`` for
    other utilities."""
    import numpy as np

    from ..design.baselines import randomized_response
    from ..design.estimation import estimation_mse
    from ..sets import set_from_dict
    from ..worstcase import leakage_capacity

    if not str(mech.parameters.get("utility", "")).startswith("estimation_error"):
        return None
    p = np.asarray(g.estimate, dtype=np.float64)
    n, eps = p.size, float(g.eps)
    uset = set_from_dict(dict(g.set))

    def krr(level: float) -> Any:
        return np.asarray(randomized_response(n, level).matrix)

    def fits(level: float) -> bool:
        return bool(leakage_capacity(krr(level), uset) <= eps)

    lo, hi = eps, 40.0  # eps-LDP is eps-PML for every distribution: lo always fits
    if fits(hi):
        lo = hi
    else:
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if fits(mid):
                lo = mid
            else:
                hi = mid
    ours = estimation_mse(mech.matrix, p, 1)
    theirs = estimation_mse(krr(lo), p, 1)
    ratio = ours / theirs if theirs > 0 else (1.0 if ours == 0 else float("inf"))
    improves = bool(ratio < 1.0 - 1e-9)
    if improves:
        statement = (f"the estimation design's error at p_hat is {ratio:.3g} times that of "
                     "k-ary randomized response calibrated to this guarantee (LDP level "
                     f"{lo:.4g})")
    else:
        statement = ("the estimation design could not improve on k-ary randomized "
                     "response at this guarantee (k-RR at LDP level "
                     f"{lo:.4g}, calibrated to the set, estimates as well or better: "
                     f"error ratio {ratio:.3g})")
    return {"ldp_level": lo, "error_ratio": ratio, "improves": improves,
            "statement": statement}


def _utility_matrix(utility: str, path: str | None) -> Any:
    """``--utility-matrix``: required with (and only with) ``--utility maxmin``."""
    if (utility == "maxmin") != (path is not None):
        raise click.BadParameter("is required with --utility maxmin and only used with it",
                                 param_hint="'--utility-matrix'")
    if path is None:
        return None
    from ..design.maxmin import read_utility_matrix

    return read_utility_matrix(path)


def _coarsen_spec(coarsen: str | None, utility: str) -> int | None:
    """``--coarsen``: ``None`` (auto or absent) or the number of categories to keep."""
    keep: int | None = None
    if coarsen is None or coarsen == "auto":
        keep = None
    else:
        try:
            keep = int(coarsen)
        except ValueError:
            keep = 0
        if keep < 1:
            raise click.BadParameter(
                f"must be 'auto' or a number of categories to keep >= 1, got {coarsen!r}",
                param_hint="'--coarsen'")
    if coarsen is not None and utility not in ("mutual_information", "accuracy"):
        raise click.BadParameter(
            f"works with --utility mutual_information or accuracy, got {utility!r}",
            param_hint="'--coarsen'")
    return keep


def coarsened_design(values: Any, eps: float, delta: float, *, utility: str,
                     keep: int | None, categories: list[str] | None = None,
                     max_seconds: float | None = None, confidence: str = "l1",
                     missing: str = "error", max_work: float | None = None
                     ) -> tuple[Any, str]:
    """Design on a coarsening of the column, as a mechanism on its original labels.

    ``keep``: the number of most frequent categories kept (the rest merged into
    ``other``), or ``None`` to choose it by the utility of each candidate release
    (:func:`~pmlkit.design.bucketing.propose_coarsening`). Either way the release is
    :func:`~pmlkit.design.bucketing.design_coarsened`: the merged mechanism is designed over
    the image of the ORIGINAL column's confidence set (``confidence``, any ``--confidence``
    method) under the merge, its rows are repeated for the merged categories, and the
    result is certified over the original set. With ``keep=None`` the release is the best
    candidate's own mechanism, so the utility printed for it is the released one. Returns
    the :class:`~pmlkit.design.DesignResult` and the text listing the candidates (empty
    for a fixed ``keep``). ``max_work`` (default: that of the designer called) and
    ``max_seconds`` bound each design (:func:`~pmlkit.design.optimal_mechanism`)."""
    result, proposal = _coarsen(values, eps, delta, utility=utility, keep=keep,
                                categories=categories, max_seconds=max_seconds,
                                confidence=confidence, missing=missing, max_work=max_work)
    return result, ("" if proposal is None else f"{proposal}\n")


def _coarsen(values: Any, eps: float, delta: float, *, utility: str, keep: int | None,
             categories: list[str] | None, max_seconds: float | None, confidence: str,
             missing: str = "error", max_work: float | None = None) -> tuple[Any, Any]:
    """:func:`coarsened_design` with the proposal object (``None`` for a fixed ``keep``)."""
    from ..design.bucketing import design_coarsened, propose_coarsening
    from ..design.pipeline import apply_missing
    from ..errors import DataError
    from ..estimation import empirical_distribution

    values, categories = apply_missing(values, missing, categories)
    est = empirical_distribution(values, categories=categories)
    try:
        if keep is None:
            proposal = propose_coarsening(est, eps, delta, utility=utility,
                                          confidence=confidence, max_seconds=max_seconds,
                                          max_work=20.0 if max_work is None else max_work)
            return proposal.best.result, proposal
        return design_coarsened(est, eps, delta, min(keep, int(est.n)), utility=utility,
                                confidence=confidence, max_seconds=max_seconds,
                                max_work=60.0 if max_work is None else max_work), None
    except DataError as exc:
        raise DataError(f"--coarsen: {exc}") from exc


def _check_out(out: pathlib.Path, reference: pathlib.Path, overwrite: bool) -> None:
    """--output must not be the reference, nor replace anything but a pmlkit mechanism."""
    import os

    from ..errors import DataError

    if not out.parent.is_dir():  # (refused before designing, not when the file is written)
        raise DataError(f"--output {str(out)!r}: the folder {str(out.parent)!r} does not "
                        "exist; create it first or choose another --output")
    if out.exists():
        try:
            same = reference.exists() and os.path.samefile(out, reference)
        except OSError:
            same = False
        if same or out.resolve() == reference.resolve():
            raise DataError(f"--output {str(out)!r} is the --reference file; choose another "
                            "--output (pmlkit never overwrites its input)")
        if not overwrite:
            raise DataError(f"output file {str(out)!r} already exists; pass --overwrite to "
                            "replace it")
        if out.is_dir() or not _is_mechanism_file(out):
            raise DataError(f"--output {str(out)!r} exists and is not a pmlkit mechanism file; "
                            "--overwrite replaces only mechanism files: choose another --output")


def _is_mechanism_file(path: pathlib.Path) -> bool:
    import json

    try:
        if path.stat().st_size > (256 << 20):
            return False
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "matrix" in doc and "sha256" in doc


def _categories(text: str | None) -> list[str] | None:
    """``a,b,c`` or ``@file`` (one label per line, blank lines ignored)."""
    if text is None:
        return None
    if text.startswith("@"):
        from .._validation import user_path

        path = user_path(text[1:], "--categories @FILE")
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise click.BadParameter(f"cannot read {str(path)!r}: {exc.strerror}",
                                     param_hint="'--categories'") from exc
        cats = [line for line in lines if line.strip()]
    else:
        cats = [c for c in text.split(",")]
    if not cats or len(set(cats)) != len(cats):
        raise click.BadParameter(f"must list distinct labels, got {text!r}",
                                 param_hint="'--categories'")
    return cats
