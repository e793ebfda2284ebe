"""The release report: one self-contained HTML file a data team signs off.

Plain HTML with inline styles and inline SVG plots: no script, no external resource, so
it reads the same in a browser without JavaScript, in a mail client or printed. Every
label, path and value that comes from the data or the spec is escaped
(:func:`pmlkit._html.esc`): a category such as ``<script>`` is shown, never run.

Contents: the whole-record guarantee (with eps in plain words,
:func:`pmlkit.plain.plain_sentence`), the files, one row per column (mechanism, its own
guarantee, utility), then per column the estimated distribution from the released data
with its intervals next to the reference (table and plot), and the joint guarantee's
record (:func:`pmlkit._html.joint_guarantee_html`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._html import esc, joint_guarantee_html, kv_table, mechanism_html, num, num_up
from .._validation import up_text, user_path
from ..plain import plain_sentence

if TYPE_CHECKING:  # pragma: no cover
    from .result import ColumnRelease

__all__ = ["bars_svg", "render_report", "write_report"]

_STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:980px;margin:24px auto;
padding:0 16px;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:4px}h2{border-bottom:1px solid #ccc;padding-bottom:3px;
margin-top:32px}
.sign{border:2px solid #2a6;background:#f3fbf5;padding:10px 14px;border-radius:4px}
.warn{color:#a40}
table.rel{border-collapse:collapse;font-size:13px;margin:6px 0}
table.rel th,table.rel td{border:1px solid #ccc;padding:3px 7px;text-align:right}
table.rel th{background:#f3f3f3}table.rel td.l,table.rel th.l{text-align:left}
details{margin:6px 0}summary{cursor:pointer}
"""

_REF = "#9aa3ad"
_EST = "#2b6cb0"


def bars_svg(labels: Sequence[Any], reference: ArrayLike, estimate: ArrayLike,
             lower: ArrayLike, upper: ArrayLike, *, title: str,
             width: int = 900, height: int = 260) -> str:
    """Paired bars (reference grey, estimate blue) with the estimate's interval as a
    whisker, as inline SVG (escaped labels; at most about 40 labels written on the axis).

    Examples
    --------
    >>> s = bars_svg(["a", "<b>"], [0.4, 0.6], [0.5, 0.5], [0.3, 0.3], [0.7, 0.7], title="t")
    >>> s.startswith("<svg") and "&lt;b&gt;" in s and "<script" not in s
    True
    """
    reference, estimate, lower, upper = (np.asarray(a, dtype=np.float64).ravel() for a in
                                         (reference, estimate, lower, upper))
    k = len(labels)
    left, right, top, bottom = 48, 12, 28, 64
    pw, ph = width - left - right, height - top - bottom
    vals = [v for v in (*reference, *estimate, *upper) if math.isfinite(v)]
    ymax = max(0.05, min(1.0, max(vals, default=1.0) * 1.08))
    slot = pw / max(k, 1)
    bw = max(1.0, slot * 0.38)

    def y(v: float) -> float:
        return top + ph * (1.0 - min(max(v, 0.0), ymax) / ymax)

    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' role='img' aria-label='{esc(title)}' "
           "style='font-family:sans-serif;font-size:11px'>",
           f"<title>{esc(title)}</title>",
           f"<text x='{left}' y='16' font-weight='bold'>{esc(title)}</text>",
           f"<rect x='{width - 250}' y='6' width='10' height='10' fill='{_REF}'/>"
           f"<text x='{width - 236}' y='15'>reference</text>"
           f"<rect x='{width - 160}' y='6' width='10' height='10' fill='{_EST}'/>"
           f"<text x='{width - 146}' y='15'>estimate (interval)</text>"]
    for t in np.linspace(0, ymax, 5):
        yy = y(float(t))
        out.append(f"<line x1='{left}' x2='{width - right}' y1='{yy:.1f}' y2='{yy:.1f}' "
                   "stroke='#e3e3e3'/>"
                   f"<text x='{left - 4}' y='{yy + 4:.1f}' text-anchor='end'>{t:.2f}</text>")
    every = max(1, math.ceil(k / 40))
    for i, lab in enumerate(labels):
        x0 = left + i * slot + slot / 2
        r, e = float(reference[i]), float(estimate[i])
        out.append(f"<rect x='{x0 - bw:.1f}' y='{y(r):.1f}' width='{bw:.1f}' "
                   f"height='{y(0) - y(r):.1f}' fill='{_REF}'><title>{esc(lab)}: reference "
                   f"{r:.4f}</title></rect>")
        if math.isfinite(e):
            out.append(f"<rect x='{x0:.1f}' y='{y(e):.1f}' width='{bw:.1f}' "
                       f"height='{y(0) - y(e):.1f}' fill='{_EST}'><title>{esc(lab)}: "
                       f"estimate {e:.4f}</title></rect>")
        lo, hi = float(lower[i]), float(upper[i])
        if math.isfinite(lo) and math.isfinite(hi):
            xm = x0 + bw / 2
            out.append(f"<line x1='{xm:.1f}' x2='{xm:.1f}' y1='{y(lo):.1f}' y2='{y(hi):.1f}' "
                       "stroke='#111' stroke-width='1.2'/>")
        if i % every == 0:
            txt = str(lab)
            txt = txt if len(txt) <= 14 else txt[:13] + "\u2026"
            out.append(f"<text transform='translate({x0:.1f},{y(0) + 8:.1f}) rotate(45)' "
                       f"text-anchor='start'>{esc(txt)}</text>")
    out.append(f"<line x1='{left}' x2='{width - right}' y1='{y(0):.1f}' y2='{y(0):.1f}' "
               "stroke='#555'/></svg>")
    return "".join(out)


def _column_rows(c: ColumnRelease) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray,
                                             np.ndarray]:
    est = c.estimate
    labs = list(c.labels)
    if c.spec.type == "numeric":
        p = np.asarray(est.distribution, dtype=float)
        nan = np.full(p.size, np.nan)
        return labs, np.asarray(c.reference), p, nan, nan
    return (labs, np.asarray(c.reference), np.asarray(est.estimate, dtype=float),
            np.asarray(est.lower, dtype=float), np.asarray(est.upper, dtype=float))


def _for_every_distribution(mech: Any) -> bool:
    """Whether the mechanism's guarantee covers every distribution: basis ``"all"``, or an
    l1 ball of radius at least 2 (the simplex's l1 diameter) as the local-DP designs of
    a chain split have."""
    g = mech.guarantee
    if g is None:
        return False
    if g.basis == "all":
        return True
    d = g.set.to_dict()
    return bool(d.get("kind") == "l1_ball" and float(d.get("radius", 0.0)) >= 2.0)


def _column_section(c: ColumnRelease, k: int, delta: float) -> str:
    labs, ref, est, lo, hi = _column_rows(c)
    mech = c.mechanism
    parts = [f"<h2 id='col-{esc(c.name)}'>Column <code>{esc(c.name)}</code> "
             f"({esc(c.spec.type)})</h2>"]
    rows: list[tuple[str, Any]] = [
        ("mechanism", esc(f"{mech.n_inputs} inputs x {mech.n_outputs} outputs, designer "
                          f"{mech.designer}; {mech.provenance.method or ''}")),
        ("designed for", f"eps = {num(c.eps, 6)} (this column's share of the budget)"),
        ("its own guarantee", f"certified eps = {num_up(mech.certified_eps, 6)} about this "
                              + (f"column alone, over its own set at delta/{k} = "
                                 f"{num(delta / k, 3)}; "
                                 if not _for_every_distribution(mech)
                                 else "column alone, for every distribution (local DP); ")
                              + esc(plain_sentence(float(mech.certified_eps or 0.0),
                                                   subject=f"the value of {c.name!r}"))),
        ("utility at the reference", esc("; ".join(
            f"{name.replace('_', ' ')} = {v:.4g}" + (" nats" if name == "mutual_information"
                                                     else "")
            for name, v in c.utility.items()))),
        ("reference records", str(c.reference_rows)),
    ]
    if c.spec.type == "numeric":
        g = c.spec.grid
        e = c.estimate
        rmean = float(np.dot(ref, np.asarray(g.values, dtype=float)))
        rows += [
            ("grid", esc(f"{g.lower} to {g.upper} step {g.step} ({g.n} points); values "
                         "outside are clamped to the ends, others rounded to the nearest "
                         "point (ties up); released values are grid points")),
            ("reference encoding", esc(", ".join(f"{k_}: {v}" for k_, v in c.encoding.items()))),
            ("mean", f"reference {num(rmean, 5)}; estimate {num(e.mean, 5)} "
                     f"[{num(e.mean_interval[0], 5)}, {num(e.mean_interval[1], 5)}] "
                     f"({num(100 * e.confidence, 3)}% interval)"),
            ("quartiles (estimate)", esc(", ".join(
                f"{q}: {v:g} [{e.quantile_intervals[q][0]:g}, {e.quantile_intervals[q][1]:g}]"
                for q, v in e.quantiles.items()))),
        ]
    else:
        e = c.estimate
        if not e.identified:
            rows.append(("<span class='warn'>estimability</span>",
                         "<span class='warn'>not every category is identified by this "
                         "release: the analyst gets bounds (the identified set), not point "
                         "estimates, for the categories marked n/a</span>"))
        if c.encoding.get("unknown_mapped"):
            rows.append(("unknown values", f"{c.encoding['unknown_mapped']} reference rows "
                                           f"released as {esc(repr(c.spec.unknown_as))}"))
    parts.append(kv_table(rows, f"{c.name}: mechanism, guarantee and utility"))
    n_rel = int(c.estimate.n)
    parts.append(bars_svg(labs, ref, est, lo, hi,
                          title=f"{c.name}: reference vs. estimate from {n_rel} released rows"))
    head = ("<tr><th class='l'>value</th><th>reference</th><th>estimate</th>"
            + ("<th>interval</th>" if c.spec.type != "numeric" else "") + "</tr>")
    body = []
    for i, lab in enumerate(labs):
        iv = (f"<td>[{num(lo[i], 4)}, {num(hi[i], 4)}]</td>"
              if c.spec.type != "numeric" else "")
        body.append(f"<tr><td class='l'>{esc(lab)}</td><td>{num(ref[i], 4)}</td>"
                    f"<td>{num(est[i], 4)}</td>{iv}</tr>")
    table = f"<table class='rel'>{head}{''.join(body)}</table>"
    parts.append(f"<details open><summary>Distribution table ({len(labs)} values)</summary>"
                 f"{table}</details>")
    parts.append(f"<details><summary>Mechanism matrix</summary>{mechanism_html(mech)}"
                 "</details>")
    return "".join(parts)


def _missing_policies(columns: Any) -> str:
    """The missing-value policy of each column (one word when they share one), with a
    warning naming the columns whose missingness is released unprotected (``keep``)."""
    pols = [(c.name, c.missing) for c in columns]
    if len({p for _, p in pols}) == 1:
        text = esc(pols[0][1])
    else:
        text = ", ".join(f"{esc(n)}: {esc(p)}" for n, p in pols)
    kept = [n for n, p in pols if p == "keep"]
    if kept:
        text += (" <span class='warn'>(whether a value "
                 + (f"of {esc(', '.join(kept))} " if len(pols) > 1 else "")
                 + "is missing is released without protection)</span>")
    return text


def render_report(result: Any) -> str:
    """The report of a :class:`pmlkit.release.TableRelease` as one HTML document
    (no script: readable with JavaScript off).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np, pandas as pd
    >>> from pmlkit.release import ReleaseSpec, release_table
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> sex = np.random.default_rng(2).choice(["F", "M"], 2000)
    >>> pd.DataFrame({"sex": sex[:1000]}).to_csv(folder / "ref.csv", index=False)
    >>> pd.DataFrame({"sex": sex[1000:]}).to_csv(folder / "in.csv", index=False)
    >>> spec = ReleaseSpec.from_dict({
    ...     "reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 1.0,
    ...     "delta": 1e-6, "columns": {"sex": {"type": "categorical"}}}, base=folder)
    >>> rel = release_table(spec)
    >>> html = render_report(rel)
    >>> html.startswith("<!DOCTYPE html>"), "<script" in html, "Whole-record guarantee" in html
    (True, False, True)
    """
    spec = result.spec
    g = result.guarantee
    k = len(result.columns)
    title = f"pmlkit release report: {result.output.name}"
    plain = plain_sentence(g.eps, subject="anything about a person's whole record",
                           where="for every distribution in the confidence set")
    sign = (
        f"<div class='sign'><p><b>Whole-record guarantee: ({up_text(g.eps)}, "
        f"{num(g.delta, 3)})-PML</b> for the {k} released column(s) "
        f"{esc(', '.join(g.columns))} together, requested epsilon = {num(spec.epsilon, 6)}, "
        f"certified worst case {up_text(g.certified_eps, 9)} ({esc(g.kind)}).</p>"
        f"<p>With probability at least 1 &minus; {num(g.delta, 3)} over the "
        f"{g.m} reference records, the true joint distribution lies in the confidence set, "
        f"and then the released values of these columns, all at once, are "
        f"{up_text(g.eps)}-PML about their true values in the record. Columns not listed "
        f"are copied unchanged and are not covered: one related to a privatised column "
        f"(a code of it, a column that implies it) gives that column away.</p>"
        f"<p>{esc(plain)}.</p>"
        f"<p class='warn'>{esc(g.warning)}.</p></div>")
    warn = "".join(f"<li>{esc(w)}</li>" for w in result.warnings)
    if warn:
        sign += ("<h2 class='warn'>Warnings raised by the release</h2>"
                 f"<ul class='warn'>{warn}</ul>")
    rng = ("<b class='warn'>seeded: reproducible, for research only; do not publish a "
           "seeded release</b>" if result.seeded else
           "cryptographically secure (not reproducible)")
    files = kv_table([
        ("reference", esc(spec.reference)), ("input", esc(spec.input)),
        ("released data", esc(result.output)), ("manifest", esc(result.manifest)),
        ("released rows", str(result.rows)),
        ("missing values", _missing_policies(spec.columns)),
        ("randomness", rng),
        ("columns not listed", "copied unchanged (each cell's text byte for byte), "
         "<span class='warn'>not covered by the guarantee</span>"),
    ], "Files")
    head = ("<tr><th class='l'>column</th><th class='l'>type</th><th>values</th>"
            "<th>outputs</th><th>designed eps</th><th>own certified eps</th>"
            "<th>mutual information (nats)</th><th>estimable</th></tr>")
    rows = []
    for c in result.columns:
        est_ok = (bool(c.estimate.identified))
        rows.append(
            f"<tr><td class='l'><a href='#col-{esc(c.name)}'>{esc(c.name)}</a></td>"
            f"<td class='l'>{esc(c.spec.type)}</td><td>{c.mechanism.n_inputs}</td>"
            f"<td>{c.mechanism.n_outputs}</td><td>{num(c.eps, 5)}</td>"
            f"<td>{num_up(c.mechanism.certified_eps, 5)}</td>"
            f"<td>{num(c.utility['mutual_information'], 4)}</td>"
            f"<td>{'yes' if est_ok else '<span class=warn>bounds only</span>'}</td></tr>")
    shares = ", ".join(f"{c.name}: {w:.3f}"
                       for c, w in zip(result.columns, result.design.weights, strict=True))
    overview = (f"<h2>Columns</h2><table class='rel'>{head}{''.join(rows)}</table>"
                f"<p>Budget split: weights {esc(shares)} "
                "(the spec's weight, else the log of the column's alphabet size). "
                + ("Every column has its PML design, the split scaled down until the joint "
                   "guarantee is certified. "
                   if result.design.strategy == "scaled" else
                   "Chain split: the column with the largest alphabet has its PML design at "
                   "its full share, every other column a local-DP design at its share (with "
                   "several columns the certificate of a PML design is close to its local-DP "
                   "value, and this split kept more information than every scaled split "
                   "tried). ")
                + "Per-column eps do not add up to the whole-record guarantee, which is "
                "computed for the released product of the mechanisms.</p>")
    cols = "".join(_column_section(c, k, spec.delta) for c in result.columns)
    tried = "".join(
        f"<tr><td class='l'>{esc(t.get('strategy', 'scaled'))}</td>"
        f"<td>{num(t['scale'], 4)}</td><td>{esc(', '.join(f'{x:.4g}' for x in t['split']))}"
        f"</td><td>{num_up(t['certified_eps'], 6)}</td><td class='l'>{esc(t['kind'])}</td>"
        f"<td class='l'>{'yes' if t['feasible'] else 'no'}</td>"
        f"<td>{num(t.get('mutual_information', float('nan')), 4)}</td></tr>"
        for t in result.design.tried)
    joint = ("<h2>Whole-record guarantee: the record</h2>" + joint_guarantee_html(g)
             + "<details><summary>Every budget split tried</summary><table class='rel'><tr>"
               "<th class='l'>split</th><th>scale</th><th>eps per column</th>"
               "<th>certified eps</th><th class='l'>certificate</th><th class='l'>within "
               "epsilon</th><th>mutual information (nats, sum)</th></tr>"
             + tried + "</table></details>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{esc(title)}</h1>{sign}<h2>Files</h2>{files}{overview}{cols}{joint}"
            "<p style='color:#777;font-size:12px'>Written by pmlkit release. Plots are "
            "inline SVG; the document needs no script and no network.</p>"
            "</body></html>")


def write_report(text: str, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
    """Write the report atomically (a temporary file beside it, then linked or, with
    ``overwrite``, replaced into place).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "report.html"
    >>> write_report("<p>one</p>", path)
    >>> write_report("<p>two</p>", path)
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: the report ... exists; set overwrite = true
    >>> write_report("<p>two</p>", path, overwrite=True)
    >>> path.read_text()
    '<p>two</p>'
    """
    from ..errors import DataError

    p = user_path(path)
    tmp = p.with_name(f".{p.name}.pmlkit-{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        if overwrite:
            os.replace(tmp, p)
        else:
            os.link(tmp, p)
    except FileExistsError as exc:
        raise DataError(f"the report {str(p)!r} exists; set overwrite = true") from exc
    except OSError as exc:
        raise DataError(f"cannot write the report {str(p)!r}: {exc.strerror}") from exc
    finally:
        if tmp.exists():
            tmp.unlink()
