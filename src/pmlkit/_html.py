"""Rich HTML representations for notebooks (Jupyter calls ``_repr_html_``).

Plain HTML with inline styles (no scripts, no external resources). Every label and string
that comes from a mechanism or a guarantee is escaped: a mechanism file is outside data,
and a label such as ``<script>`` must be shown, never run.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ._validation import up_text
from .plain import plain_sentence

#: Largest number of rows / columns drawn; larger matrices are shown truncated, and say so.
MAX_CELLS = 40

_TABLE = ("border-collapse:collapse;font-family:monospace;font-size:12px;"
          "margin:4px 0")
_CELL = "border:1px solid #ccc;padding:2px 6px;text-align:right"
_HEAD = "border:1px solid #ccc;padding:2px 6px;background:#f3f3f3;text-align:center"


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def num(x: Any, digits: int = 4, *, up: bool = False) -> str:
    """A number with ``digits`` significant digits (``up``: rounded up, as a leakage is
    shown, :func:`up_text`); ``n/a`` for None and NaN, other values as escaped text."""
    if x is None:
        return "n/a"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return esc(x)
    if math.isnan(v):
        return "n/a"
    return up_text(v, digits) if up else f"{v:.{digits}g}"


def num_up(x: Any, digits: int = 6) -> str:
    """A leakage (eps) as :func:`num` shows it, but rounded up (:func:`up_text`): never
    printed below what was computed."""
    return num(x, digits, up=True)


def heat(v: float) -> str:
    """Background colour for a probability in [0, 1]: white (0) to dark red (1); the text
    turns white on dark cells so every value stays readable."""
    t = min(max(float(v), 0.0), 1.0)
    r = round(255 - 75 * t)
    g = round(255 - 235 * t)
    b = round(255 - 225 * t)
    fg = "#fff" if t > 0.55 else "#000"
    return f"background:rgb({r},{g},{b});color:{fg}"


def kv_table(rows: Iterable[tuple[str, Any]], title: str) -> str:
    body = "".join(f"<tr><th style='{_HEAD};text-align:left'>{esc(k)}</th>"
                   f"<td style='{_CELL};text-align:left'>{v}</td></tr>" for k, v in rows)
    return (f"<table class='pmlkit' style='{_TABLE}'><caption style='text-align:left;"
            f"font-weight:bold'>{esc(title)}</caption>{body}</table>")


def _recorded_prior(mech: Any) -> np.ndarray | None:
    prior = mech.parameters.get("prior")
    if prior is None:
        return None
    try:
        p = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if p.shape != (mech.n_inputs,) or not np.all(np.isfinite(p)) or np.any(p < 0) \
            or abs(p.sum() - 1) > 1e-9:
        return None
    return p


def mechanism_html(mech: Any) -> str:
    """The labelled matrix as a heat-coloured table, its guarantee, and the PML of every
    outcome under the recorded estimate (when the mechanism records one)."""
    from .leakage import pml

    w = mech.matrix
    n, m = w.shape
    rn, cn = min(n, MAX_CELLS), min(m, MAX_CELLS)
    p = _recorded_prior(mech)
    head = "".join(f"<th style='{_HEAD}'>{esc(lab)}</th>" for lab in mech.output_labels[:cn])
    more_c = f"<th style='{_HEAD}'>&hellip;</th>" if cn < m else ""
    rows = [f"<tr><th style='{_HEAD}'>X \\ Y</th>{head}{more_c}</tr>"]
    for i in range(rn):
        cells = "".join(
            f"<td style='{_CELL};{heat(w[i, j])}' title='P(Y={esc(mech.output_labels[j])}"
            f" | X={esc(mech.input_labels[i])}) = {float(w[i, j])!r}'>{num(w[i, j])}</td>"
            for j in range(cn))
        rows.append(f"<tr><th style='{_HEAD}'>{esc(mech.input_labels[i])}</th>{cells}"
                    f"{'<td>&hellip;</td>' if cn < m else ''}</tr>")
    if rn < n:
        rows.append(f"<tr><th style='{_HEAD}'>&hellip;</th></tr>")
    if p is not None:
        with np.errstate(all="ignore"):
            leak = pml(w, p)
        eps = mech.parameters.get("eps")
        over = [j for j in range(cn) if eps is not None and isinstance(eps, int | float)
                and np.isfinite(leak[j]) and leak[j] > float(eps) + 1e-9]
        cells = "".join(
            f"<td style='{_CELL};font-style:italic{';color:#b00' if j in over else ''}'>"
            f"{num(leak[j])}</td>" for j in range(cn))
        rows.append(f"<tr><th style='{_HEAD};font-style:italic' title='PML of each outcome "
                    f"under the recorded estimate p_hat: log max_i W[i,y] / P_Y(y)'>"
                    f"PML at p&#770;</th>{cells}</tr>")
    shown = "" if (rn, cn) == (n, m) else f" (showing {rn} x {cn})"
    caption = (f"Mechanism {n} x {m}{shown}, designer {esc(mech.designer)}: "
               + guarantee_line(mech))
    table = (f"<table class='pmlkit' style='{_TABLE}'><caption style='text-align:left'>"
             f"{caption}</caption>{''.join(rows)}</table>")
    return f"<div class='pmlkit-mechanism'>{table}</div>"


def guarantee_line(mech: Any) -> str:
    """One escaped line saying what the mechanism guarantees and whether it was checked."""
    params: Mapping[str, Any] = mech.parameters
    cert = mech.certified_eps
    parts = []
    if mech.certified:
        what = f"<b>certified eps = {num_up(cert, 6)}</b> over its uncertainty set"
        if mech.uncertainty_set is not None:
            kind = mech.uncertainty_set.get("kind", "?")
            what += f" ({esc(kind)})"
        parts.append(what)
    else:
        parts.append("<b style='color:#b00'>UNCERTIFIED</b> (no checked guarantee)")
    if "eps" in params:
        parts.append(f"target eps = {num(params['eps'], 6)}")
    g = mech.guarantee
    # coverage is read from the typed guarantee only: a "delta" or "m" among the provenance
    # details of a non-sample guarantee is not a coverage statement and is not shown as one
    if g is not None and g.basis == "sample":
        parts.append(f"delta = {num(g.delta, 3)}")
        parts.append(f"m = {esc(g.m)} reference records")
        parts.append(f"confidence set {esc(g.method)}")
    elif g is not None:
        parts.append(f"basis {esc(g.basis)} (no sample-based delta)")
    if g is not None and mech.certified:
        parts.append(esc(plain_sentence(g.eps)))
    return "; ".join(parts)


def guarantee_html(g: Any) -> str:
    """A design's :class:`~pmlkit.design.Guarantee` as a table."""
    rows: list[tuple[str, Any]] = [
        ("guarantee", f"<b>({num_up(g.eps, 6)}, {num(g.delta, 3)})-PML</b>"),
        ("meaning", esc(f"with probability >= 1 - {num(g.delta, 3)} over the m = {g.m} "
                        "reference samples the true distribution lies in the set, and the "
                        "mechanism is eps-PML for every distribution in it")),
        ("certified worst-case eps", f"{num_up(g.certified_eps, 9)} &le; {num_up(g.eps, 6)}"),
        ("in plain words", esc(plain_sentence(g.eps).removeprefix("in plain words: "))),
        ("set", esc(f"{g.set.get('kind', '?')} from confidence method {g.confidence!r}"
                    + ("" if g.beta is None else f", radius beta = {num(g.beta, 6)}"))),
        ("categories", esc(", ".join(f"{c}: {num(p)}" for c, p in
                                     zip(g.categories, g.estimate, strict=True)))),
        (f"utility ({g.utility})", f"{num(g.utility_value, 6)} [{esc(g.optimality)}]"),
        ("eps-LDP randomized response", num(g.utility_randomized_response, 6)),
    ]
    if g.eps_prime is not None:
        rows.append((f"fixed-prior design at eps' = {num(g.eps_prime, 6)}",
                     num(g.utility_eps_prime_design, 6)))
    if g.description:
        rows.append(("set coverage", esc(g.description)))
    return kv_table(rows, "pmlkit guarantee")


def joint_guarantee_html(g: Any) -> str:
    """A :class:`~pmlkit.joint.JointGuarantee` as a table (with its non-additivity warning)."""
    cols = ", ".join(f"{c} (N={s})" for c, s in zip(g.columns, g.sizes, strict=True))
    per = ", ".join(f"{c}: {num(e, 6)}" for c, e in zip(g.columns, g.column_eps, strict=True))
    rows: list[tuple[str, Any]] = [
        ("guarantee", f"<b>({up_text(g.eps)}, {num(g.delta, 3)})-PML for the whole record</b>"
                      f" [{esc(g.kind)}]"),
        ("columns", esc(cols)),
        ("joint alphabet N, reference m", f"{g.n}, {g.m}"),
        ("certified eps of the joint release", up_text(g.certified_eps, 9)),
        ("per-column eps", esc(per) + f"; sum {num(g.sum_of_column_eps, 6)} is "
                                      "<b>not</b> a guarantee"),
        ("warning", esc(g.warning)),
        ("in plain words", esc(plain_sentence(
            g.eps, subject="anything about the person from ALL released values")
            .removeprefix("in plain words: ") + "; from one column's value alone: "
            + ", ".join(f"{c}: at most {math.exp(min(e, 700.0)):.3g}x"
                        for c, e in zip(g.columns, g.column_eps, strict=True)))),
    ]
    if g.worst_output is not None:
        rows.append(("worst output tuple", esc(repr(g.worst_output))))
    if g.description:
        rows.append(("set coverage", esc(g.description)))
    return kv_table(rows, "pmlkit joint guarantee")
