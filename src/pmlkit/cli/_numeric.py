"""``--numeric LOWER:UPPER:STEP``: numeric columns on the command line (``design``,
``assess``, ``privatize``, ``estimate``).

A numeric column is read as numbers and mapped onto the declared grid by the clamp/round
policy of :class:`pmlkit.numeric.grid.NumericGrid` (values outside ``[LOWER, UPPER]`` count
at the ends, values between points go to the nearest point, ties up); every command says
how many values were clamped and rounded. The mechanism file records the grid
(``provenance.details["grid"]``), so ``privatize``, ``assess`` and ``estimate`` know it
without the flag; given as well, it must agree with the file.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Callable
from typing import Any, TypeVar

import click
import numpy as np

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["assess_reference", "design_command", "encoding_line", "estimate_command",
           "grid_for", "numeric_option", "on_grid", "parse_grid", "release_counts",
           "utility_for"]

#: The utilities of a numeric design (``--utility``): the expected absolute or squared
#: error of the released number, or ``estimation``: the narrowest interval of the mean an
#: analyst estimates from the release (among the certified designs).
NUMERIC_UTILITIES = ("abs", "squared", "estimation")


def numeric_option(fn: F) -> F:
    """``--numeric LOWER:UPPER:STEP``.

    Examples
    --------
    >>> @numeric_option
    ... def cmd(numeric):
    ...     pass
    >>> cmd.__click_params__[0].opts
    ['--numeric']
    """
    return click.option(
        "--numeric", default=None, metavar="LOWER:UPPER:STEP",
        help="A numeric column on the grid LOWER, LOWER+STEP, ..., UPPER (e.g. 18:90:1): "
             "values outside the range count at the ends (clamped), values between points "
             "go to the nearest point (ties up); both are counted and reported. A numeric "
             "mechanism file records its grid, so the flag is optional after design (it "
             "must then agree with the file).")(fn)


def parse_grid(text: str | None) -> Any:
    """The :class:`~pmlkit.numeric.grid.NumericGrid` of ``--numeric`` (``None`` if absent);
    a bad grid is a usage error naming the flag.

    Examples
    --------
    >>> parse_grid("18:90:1")
    NumericGrid(18, 90, 1)
    >>> parse_grid("18:90") is None
    Traceback (most recent call last):
    ...
    click.exceptions.BadParameter: a numeric grid must be written LOWER:UPPER:STEP ...
    """
    if text is None:
        return None
    from ..errors import ValidationError
    from ..numeric.grid import NumericGrid

    try:
        return NumericGrid.parse(text)
    except ValidationError as exc:
        raise click.BadParameter(str(exc), param_hint="'--numeric'") from exc


def grid_for(mech: Any, text: str | None, path: str) -> Any:
    """The grid of a loaded mechanism file, checked against ``--numeric`` (one-line error
    when they disagree, or when ``--numeric`` is given for a categorical mechanism)."""
    from ..privatization.numeric_release import check_grid_agrees

    try:
        return check_grid_agrees(mech, parse_grid(text), f"mechanism file {path}")
    except click.BadParameter:
        raise
    except Exception as exc:  # ValidationError: in the command line's words
        from ..errors import ValidationError

        if isinstance(exc, ValidationError):
            raise click.BadParameter(str(exc).replace("numeric grid ", "", 1),
                                     param_hint="'--numeric'") from exc
        raise


def utility_for(utility: str | None, numeric: bool) -> str:
    """``--utility``: default ``abs`` for a numeric design, ``mutual_information``
    otherwise; a numeric design takes only ``abs`` or ``squared``, a categorical one not
    those.

    Examples
    --------
    >>> utility_for(None, True), utility_for(None, False), utility_for("squared", True)
    ('abs', 'mutual_information', 'squared')
    """
    if utility is None:
        return "abs" if numeric else "mutual_information"
    if numeric and utility not in NUMERIC_UTILITIES:
        raise click.BadParameter(f"a numeric design (--numeric) takes abs, squared or "
                                 f"estimation, got {utility!r}", param_hint="'--utility'")
    if not numeric and utility in ("abs", "squared"):
        raise click.BadParameter(f"{utility!r} is the loss of a numeric design: give "
                                 "--numeric LOWER:UPPER:STEP", param_hint="'--utility'")
    return utility


def reference_numbers(values: Any, missing: str, where: str) -> tuple[np.ndarray, int]:
    """A reference column as numbers (numpy) and the number of missing values left out
    (``missing="keep"``); ``"error"`` refuses them, ``"category"`` has no meaning here."""
    import pyarrow as pa

    from ..errors import DataError

    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise DataError(f"{where} holds {arr.type} values, not numbers; --numeric needs a "
                        "numeric column (declare text that means missing with --na)")
    if missing == "category":
        raise click.BadParameter("a numeric column has no '(missing)' category: use "
                                 "--missing error or keep", param_hint="'--missing'")
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    vals = np.asarray(arr.fill_null(pa.scalar(0, type=arr.type)).to_numpy(
        zero_copy_only=False))
    if vals.dtype.kind == "f":
        valid &= ~np.isnan(vals)
    n_missing = int((~valid).sum())
    if n_missing and missing == "error":
        raise DataError(f"{where} has {n_missing} missing values; pass --missing keep to "
                        "leave them out (they then stay missing when privatised)")
    return vals[valid], n_missing


def encoding_line(counts: dict[str, int], grid: Any, what: str) -> str:
    """One line: how many values were clamped and rounded onto the grid.

    Examples
    --------
    >>> from pmlkit.numeric.grid import NumericGrid
    >>> line = encoding_line({"rows": 10, "clamped_low": 1, "clamped_high": 2,
    ...                       "rounded": 0}, NumericGrid(18, 90, 1), "reference")
    >>> line.split("; ")[1]
    '3 clamped (1 below 18, 2 above 90), 0 rounded to the nearest point'
    """
    from ..privatization.numeric_release import grid_text

    d = grid.to_dict()
    low, high = counts.get("clamped_low", 0), counts.get("clamped_high", 0)
    return (f"{what}: {counts.get('rows', 0)} values on the grid {grid_text(grid)} "
            f"({grid.n} points); {low + high} clamped ({low} below {d['lower']}, {high} "
            f"above {d['upper']}), {counts.get('rounded', 0)} rounded to the nearest point")


def design_command(*, reference: str, column: str, eps: float, delta: float,
                   utility: str, set_method: str, out: pathlib.Path, record: str,
                   grid: Any, missing: str, csv: Any, as_json: bool) -> int:
    """``pmlkit design --numeric``: the certified numeric designs of the reference column
    (:func:`pmlkit.numeric.design.design_numeric_from_samples`), the best written."""
    from ..io import read_column
    from ..numeric.design import design_numeric_from_samples
    from ..plain import plain_sentence
    from ._common import emit

    values, n_missing = reference_numbers(read_column(reference, column, csv=csv), missing,
                                          f"--column {column!r} of {reference!r}")
    loss = "abs" if utility == "estimation" else utility
    d = design_numeric_from_samples(values, grid, eps, delta=delta, confidence=set_method,
                                    utility=loss)
    widths = {k: mean_width(m) for k, m in d.candidates.items()}
    best_key = next(k for k, m in d.candidates.items() if m is d.best)
    if utility == "estimation":  # the narrowest mean interval among the certified ones
        best_key = min(widths, key=lambda k: (math.isnan(widths[k]), widths[k]))
    mech = d.candidates[best_key]
    if record == "minimal":
        mech = _minimal_with_grid(mech, grid)
    mech.save(out)
    g = mech.guarantee
    assert g is not None  # (a numeric design is always certified)
    best = best_key
    enc = d.encoding or {}
    unit = "absolute error" if loss == "abs" else "squared error"
    from .._validation import up_text

    lines = [f"({up_text(g.certified_eps)}, {delta:.3g})-PML: certified worst-case eps "
             f"{up_text(g.certified_eps)} <= {eps:g} over the {set_method} confidence set of "
             f"m = {int(enc.get('rows', 0))} reference values (failure probability {delta:g})",
             encoding_line(enc, grid, "reference")
             + (f"; {n_missing} missing values left out" if n_missing else ""),
             f"policy: {grid.to_dict()['policy']}",
             f"candidates (expected {unit} at the estimate, column units):"]
    for k in d.candidates:
        mark = "  <- written" if k == best else ""
        ident = (f"mean interval +-{widths[k]:.3g} at n = {WIDTH_N:,}"
                 if not math.isnan(widths[k]) else "mean not identified")
        lines.append(f"  {k}: {d.losses[k]:.6g} ({ident}; designed in {d.seconds[k]:.2f} "
                     f"s){mark}")
    if math.isnan(widths[best]):
        lines.append("note: the mechanism written merges grid points, so an analyst cannot "
                     "estimate the mean (nor most quantiles) from its release; for estimates "
                     "design with --utility estimation")
    lines.append(f"mechanism ({mech.n_inputs} x {mech.n_outputs} on the grid) written to {out}")
    lines.append(f"the file discloses the reference estimate and m = {g.m}; privatise only "
                 "records outside the reference sample")
    doc = {"mechanism_file": str(out), "guarantee": g.to_dict(), "numeric": {
        "grid": grid.to_dict(), "policy": grid.to_dict()["policy"],
        "reference_encoding": enc, "reference_missing": n_missing},
        "utility": utility, "best": best, "losses": d.losses, "seconds": d.seconds,
        "mean_half_width": {k: (None if math.isnan(v) else v) for k, v in widths.items()},
        "mean_half_width_n": WIDTH_N,
        "mechanism": mech.to_dict(), "record": record,
        "plain_words": plain_sentence(g.certified_eps)}
    emit(as_json, doc, "\n".join(lines))
    return 0


def _minimal_with_grid(mech: Any, grid: Any) -> Any:
    """:meth:`pmlkit.Mechanism.minimal_record` that keeps the grid (which discloses
    nothing about the reference; the release needs it)."""
    import dataclasses

    from ..mechanism import Mechanism

    small = mech.minimal_record()
    prov = dataclasses.replace(small.provenance,
                               details={**small.provenance.details, "grid": grid.to_dict()})
    return Mechanism(small.matrix, small.input_labels, small.output_labels,
                     guarantee=small.guarantee, provenance=prov)


#: Released records at which ``--utility estimation`` compares the mean intervals.
WIDTH_N = 10_000


def mean_width(mech: Any) -> float:
    """Half-width of the 95% interval of the mean an analyst gets from :data:`WIDTH_N`
    records released through ``mech`` when the truth is its recorded estimate (the
    expected counts through :func:`pmlkit.numeric.estimate.estimate_numeric_counts`);
    ``nan`` when the mechanism does not identify the mean."""
    from ..numeric.estimate import estimate_numeric_counts

    p = np.asarray(mech.parameters.get("prior"), dtype=np.float64)
    q = p @ np.asarray(mech)
    est = estimate_numeric_counts(q * WIDTH_N, mech)
    lo, hi = est.mean_interval  # type: ignore[union-attr]
    return float((hi - lo) / 2)


def assess_reference(reference: str, column: str, csv: Any, mech: Any, grid: Any
                     ) -> tuple[Any, str]:
    """The empirical distribution of a numeric reference column on the grid (clamped and
    rounded, counted; missing values refused), and the line reporting the counts."""
    from ..estimation import empirical_from_counts
    from ..io import read_column

    values, _ = reference_numbers(read_column(reference, column, csv=csv), "error",
                                  f"--column {column!r} of {reference!r}")
    enc = grid.encode(values)
    counts = np.bincount(enc.codes, minlength=grid.n)
    est = empirical_from_counts(list(mech.input_labels), counts,
                                categories=list(mech.input_labels))
    return est, encoding_line(enc.to_dict(), grid, "reference")


def estimate_command(*, table: Any, column: str, mech: Any, grid: Any, confidence: float,
                     above: float | None, doc: dict[str, Any], head: str, as_json: bool
                     ) -> int:
    """``pmlkit estimate`` of a numeric column: :func:`pmlkit.numeric.estimate.estimate_numeric`
    (mean, median and quartiles, the share above ``--above``, each with an interval)."""
    import pyarrow as pa

    from ..errors import DataError
    from ..numeric.estimate import estimate_numeric
    from ._common import emit

    col = table.column(column).combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if col.null_count:
        col = col.drop_null()  # kept missing at release (--missing keep): not released
    try:
        vals = np.asarray(col.to_numpy(zero_copy_only=False))
    except (pa.ArrowInvalid, TypeError) as exc:
        raise DataError(f"column {column!r} does not hold numbers: {exc}") from exc
    if vals.dtype.kind == "f":
        vals = vals[~np.isnan(vals)]
    est = estimate_numeric(vals, mech, grid=grid, confidence=confidence, threshold=above)
    res = est.to_dict()
    doc = {**doc, **res, "grid": grid.to_dict()}
    q = est.quantiles
    qi = est.quantile_intervals
    pct = f"{100 * confidence:g}%"
    lines = [f"{head}, numeric column {column!r} on the grid {grid.to_dict()['lower']}.."
             f"{grid.to_dict()['upper']} step {grid.to_dict()['step']}, n = {est.n} "
             f"({pct} intervals)",
             f"  mean    {est.mean:.6g}  [{est.mean_interval[0]:.6g}, "
             f"{est.mean_interval[1]:.6g}]"]
    for u, name in ((0.25, "Q1"), (0.5, "median"), (0.75, "Q3")):
        if u in q:
            lines.append(f"  {name:<7} {q[u]:.6g}  [{qi[u][0]:.6g}, {qi[u][1]:.6g}]")
    if above is not None and est.share_above is not None:
        iv = est.share_above_interval or (float("nan"), float("nan"))
        lines.append(f"  share above {above:g}: {est.share_above:.4g}  [{iv[0]:.4g}, "
                     f"{iv[1]:.4g}]")
    if not est.identified:
        lines.append("  the mean is not identified by this mechanism (nan)")
    emit(as_json, doc, "\n".join(lines))
    return 0


def on_grid(values: Any, mech: Any) -> Any:
    """A joint reference column as its mechanism sees it: a numeric mechanism's column
    clamped and rounded onto its grid (grid values, the mechanism's labels); any other
    column unchanged. (A joint guarantee is over the tuple of grid codes: the clamp and
    the rounding are functions of the true value, applied before the release.)

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> from pmlkit.numeric.grid import NumericGrid
    >>> m = laplace_mechanism(NumericGrid(0, 4, 1), [0.2] * 5, 1.0)
    >>> on_grid(np.array([-2, 1.6, 9]), m).tolist()
    [0, 2, 4]
    """
    from ..privatization.numeric_release import grid_of

    grid = grid_of(mech)
    if grid is None:
        return values
    arr = np.asarray(values)
    if arr.dtype == object:
        arr = np.asarray(arr.tolist())
    return grid.decode(grid.encode(arr).codes)


def release_counts(report: Any, grids: Any) -> dict[str, dict[str, int]]:
    """Per released numeric column, the raw input's counts (clamped, rounded, missing)
    summed over the input files, from the operator's report
    (:attr:`pmlkit.privatization.files.FileReport.input_counts`; the manifest does not
    hold them: they are statistics of the raw input, not for publication). ``grids``:
    each privatised column's grid, ``None`` for a categorical column.

    Examples
    --------
    >>> from pmlkit.privatization.files import FileReport
    >>> rep = FileReport((("in.csv", "out.csv", 3),), ("age", "sex"), ("age", "sex"),
    ...                  False, "secure", None, ("a" * 64, "b" * 64),
    ...                  input_counts={"age": {"rows": 3, "clamped_high": 1},
    ...                                "sex": {"unknown_mapped_rows": 0}})
    >>> release_counts(rep, {"age": object(), "sex": None})
    {'age': {'rows': 3, 'clamped_high': 1}}
    """
    counts = getattr(report, "input_counts", None) or {}
    return {t: dict(counts[t]) for c, t in zip(report.columns, report.into, strict=True)
            if grids.get(c) is not None and t in counts}
