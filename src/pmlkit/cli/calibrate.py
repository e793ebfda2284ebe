"""``pmlkit calibrate``: calibrate Laplace or Gaussian noise on a binary column.

Examples::

    pmlkit calibrate laplace --reference adult.data --names adult --column sex \\
        --positive Male --epsilon 0.693 --delta 1e-9
    pmlkit calibrate gaussian --reference adult.data --names adult --column income \\
        --positive '>50K' --sigma 1.5 --delta 1e-6 --json

The column must hold exactly two labels; ``--positive`` names the one mapped to ``+1``
(labels are compared as text). ``laplace`` prints the smallest Laplace scale ``b`` meeting
eps-PML with probability ``>= 1 - delta`` (eq. uncertainlaplace inverted) and the eps-LDP
scale ``2/eps`` beside it; ``gaussian`` prints both (eps, delta)-PML curves of the given
sigma, "paper" (Section "gauss") and "direct" (beyond the paper: delta_1 is already a sup
over the set), with the pLDP baseline. Both state what is released: values on a grid
(see ``pmlkit.additive.laplace_noise`` / ``gaussian_noise``), with the grid's own eps and
delta_1, and end with the released mechanism's typed guarantee (``mechanism:`` line; JSON key
``guarantee``; the Gaussian's is stated at ``--eps-max``).
"""

from __future__ import annotations

import math
from typing import Any

import click

from .._validation import up_text
from ._common import UserPath, csv_from_options, csv_options, emit, json_option, renamed_option


def _set_methods() -> list[str]:
    try:
        from ..confidence import METHODS

        return list(METHODS)
    except ImportError:  # pragma: no cover
        return ["l1"]


def _reference_options(fn: Any) -> Any:
    opts = [
        click.option("--reference", required=True, type=UserPath(dir_okay=False),
                     help="CSV or Parquet file holding the reference sample."),
        click.option("--column", required=True, help="Column with the two labels."),
        click.option("--positive", required=True, metavar="LABEL",
                     help="The label mapped to +1 (the other one becomes -1)."),
        renamed_option("--confidence", "--set", "set_method",
                type=click.Choice(_set_methods()), default="l1",
                     show_default=True,
                     help="Confidence set around the estimate (l1: the paper's ball)."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _read_labels(reference: str, column: str, csv: Any) -> Any:
    """The column as text labels (so that ``--positive`` compares as text), read as
    design reads labels (:func:`pmlkit.io.read_labels`: ``007`` and ``7`` stay two)."""
    import pyarrow as pa

    from ..io import read_labels

    values = read_labels(reference, column, csv=csv)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        values = values.cast(pa.string())
    return values


def _guarantee_line(mechanism: Any) -> list[str]:
    """The released mechanism's typed guarantee, one line (none without a grid release)."""
    if mechanism is None:
        return []
    return [f"  mechanism: {mechanism.guarantee}"]


def _guarantee_json(mechanism: Any) -> Any:
    return None if mechanism is None else mechanism.guarantee.to_dict()


def _g(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


@click.group(name="calibrate")
def command() -> None:
    """Calibrate Laplace/Gaussian noise on binary data from a reference sample."""


@command.command(name="laplace")
@_reference_options
@click.option("--epsilon", "--eps", "eps", required=True, type=float,
              help="Target PML eps (natural log), e.g. 0.693 for log 2.")
@click.option("--delta", required=True, type=float,
              help="Failure probability over the reference sample, in (0, 1).")
@csv_options
@json_option
def laplace(reference: str, column: str, positive: str, set_method: str, eps: float,
            delta: float, names: str | None, skip_rows: int | None, strip: bool | None,
            na_values: tuple[str, ...], as_json: bool) -> int:
    """Smallest Laplace scale b with an (eps, delta)-PML guarantee, and the LDP scale."""
    from ..additive import calibrate_laplace

    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=reference)
    res = calibrate_laplace(_read_labels(reference, column, csv), eps, delta,
                            positive=positive, confidence=set_method)
    radius = f", radius beta = {res.beta:.6g} (eq. binarybeta)" if res.beta is not None else ""
    if res.b == 0.0:
        scale = "b = 0: no noise needed (eps >= -log p_min for every prior in the set)"
    else:
        scale = f"b = {_g(res.b)}"
    ratio = (f" (b / LDP scale = {res.b / res.ldp_scale:.4g})"
             if math.isfinite(res.ldp_scale) and math.isfinite(res.b) else "")
    lines = [
        f"Laplace mechanism Y = X + Laplace(0, b) on column {column!r} of {reference}",
        f"  labels: {res.labels[0]!r} -> -1, {res.labels[1]!r} -> +1; m = {res.m} samples; "
        f"p_hat = ({res.p_hat[0]:.6g}, {res.p_hat[1]:.6g})",
        f"  set: {res.confidence}{radius}; worst-case p_min over the set = "
        f"{res.p_min_lower:.6g}",
        f"  scale: {scale}",
        f"  guarantee: eps = {eps:g}-PML for every prior in the set, which holds with "
        f"probability >= 1 - {delta:g}",
        *([f"  released: values on the grid of step {res.granularity:g} with discrete "
           f"Laplace noise of scale {res.released_b:.10g}; its exact eps = "
           f"{res.grid_eps:.6g} (<= {eps:g})"] if res.released_b is not None else []),
        f"  LDP scale 2/eps = {_g(res.ldp_scale)}{ratio}",
        f"  delta: {res.meaning}",
        *_guarantee_line(res.mechanism),
    ]
    emit(as_json, {"reference": reference, "column": column, **res.to_dict(),
                   "guarantee": _guarantee_json(res.mechanism)}, "\n".join(lines))
    return 0


@command.command(name="gaussian")
@_reference_options
@click.option("--sigma", required=True, type=float, help="Noise standard deviation (> 0).")
@click.option("--delta", "delta2", required=True, type=float,
              help="Probability that the true distribution is outside the set (delta_2), "
                   "in (0, 1).")
@click.option("--eps-max", type=float, default=3.0, show_default=True,
              help="Largest inner eps of the curves.")
@click.option("--points", type=click.IntRange(min=1, max=100_000), default=30,
              show_default=True, help="Number of eps values in (0, --eps-max].")
@csv_options
@json_option
def gaussian(reference: str, column: str, positive: str, set_method: str, sigma: float,
             delta2: float, eps_max: float, points: int, names: str | None,
             skip_rows: int | None, strip: bool | None, na_values: tuple[str, ...],
             as_json: bool) -> int:
    """Both (eps, delta)-PML curves ("paper", "direct") of Gaussian noise with this sigma."""
    import numpy as np

    from .._validation import check_real
    from ..additive import calibrate_gaussian

    top = check_real(eps_max, "--eps-max", low=0.0, low_open=True)
    grid = np.linspace(top / points, top, points)
    csv = csv_from_options(names, skip_rows, strip, na_values, path_hint=reference)
    res = calibrate_gaussian(_read_labels(reference, column, csv), sigma, delta2,
                             positive=positive, eps=grid, confidence=set_method)
    lo, hi = res.q_interval
    lines = [
        f"Gaussian mechanism Y = X + N(0, {sigma:g}^2) on column {column!r} of {reference}",
        f"  released: values on the grid of step {res.granularity:g} with discrete Gaussian "
        f"noise of sigma {res.released_sigma:.10g}; delta_1 below is that grid "
        "mechanism's (recomputed for the grid, not the continuous one's)",
        f"  labels: {res.labels[0]!r} -> -1, {res.labels[1]!r} -> +1; m = {res.m} samples; "
        f"p_hat = ({res.p_hat[0]:.6g}, {res.p_hat[1]:.6g})",
        f"  set: {res.confidence}, P(+1) in [{lo:.6g}, {hi:.6g}], l1 radius beta = "
        f"{res.beta:.6g}; delta_2 = {delta2:g}",
        f"  delta: {res.meaning}",
        "  paper: (eps*, delta*) of Section 'gauss'; direct: (eps, delta*) (tighter, valid "
        "because delta_1 is a sup over the set); pLDP: eps of the pLDP mechanism with the "
        "same sigma at the direct delta",
        "  envelope: a level every post-processing of the released values exceeds with "
        "probability at most delta_1, for every prior of the set (so (envelope, delta*) "
        "survives post-processing); survives: whether (eps, delta*) itself does",
        "",
        f"  {'inner eps':>10} {'delta_1':>12} {'paper eps*':>11} {'direct eps':>11} "
        f"{'delta*':>12} {'pLDP eps':>10} {'envelope':>9} {'survives':>8}",
    ]
    for k in range(res.eps.size):
        lines.append(
            f"  {res.eps[k]:>10.4g} {res.delta1[k]:>12.4e} {_g(res.paper_eps[k]):>11} "
            f"{res.direct_eps[k]:>11.4g} {res.direct_delta[k]:>12.4e} "
            f"{res.pldp_eps[k]:>10.4g} {_g(res.envelope_eps[k]):>9} "
            f"{'yes' if res.survives_post_processing[k] else 'no':>8}")
    methods = sorted(set(res.envelope_method))
    post = ("the (eps, delta) statements above are tail statements about the released "
            "values themselves: they do not survive post-processing in general (a function "
            "of the released values can leak more than eps with probability above delta); "
            "the envelope column is a level that holds after any post-processing, computed "
            f"for the released grid channel by {' / '.join(methods)} "
            "(pmlkit.envelope.envelope_bound; exact for one prior and small alphabets: "
            "pmlkit.leakage_envelope, docs: envelope)")
    mech_env = _envelope_line(res.mechanism)
    lines += ["", *_guarantee_line(res.mechanism), *mech_env, f"  post-processing: {post}"]
    doc = {"reference": reference, "column": column, **res.to_dict(),
           "guarantee": _guarantee_json(res.mechanism)}
    doc["post_processing"] = {**doc["post_processing"], "statement": post,
                              "mechanism_envelope": (None if res.mechanism is None else
                                                     res.mechanism.envelope().to_dict())}
    emit(as_json, doc, "\n".join(lines))
    return 0


def _envelope_line(mech: Any) -> list[str]:
    """The released mechanism's guarantee beside its post-processing envelope."""
    if mech is None:
        return []
    env = mech.envelope()
    verdict = ("survives post-processing" if env.survives_post_processing else
               "does NOT survive post-processing")
    return [f"  envelope of the stated guarantee: eps = {mech.guarantee.eps:g} at "
            f"delta_1 = {mech.guarantee.output_delta:.4g} {verdict}; after any "
            f"post-processing the level is at most {up_text(env.eps)} ({env.method})"]
