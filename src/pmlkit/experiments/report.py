"""Run figures, write ``NAME.png`` / ``NAME.csv``, and one ``report.html`` showing them all.

:func:`reproduce` is what ``pmlkit reproduce`` calls: for each requested figure it runs
``compute`` (with the given iterations, seed and Adult data), writes the tidy CSV and the
PNG (matplotlib, Agg canvas), evaluates ``check`` and records the time taken. Figures that
need the Adult data are skipped with a clear message when it cannot be found; the others
still run. :func:`write_report` turns the results into a self-contained HTML page (the
PNGs are referenced by relative path, next to it).
"""

from __future__ import annotations

import datetime as _dt
import html
import pathlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._deprecation import renamed_parameter
from .._progress import report
from .._validation import user_path
from ..errors import DataError, PMLError, ValidationError
from . import FIGURES, get_figure
from .base import Check

__all__ = ["FigureResult", "reproduce", "write_report"]

REPORT_NAME = "report.html"
DPI = 110


@dataclass(frozen=True)
class FigureResult:
    """The outcome of one figure.

    Attributes
    ----------
    name, caption
        The figure's registry name and caption.
    png, csv
        File names written in the output folder (``None`` when skipped or failed).
    checks
        The paper's claims tested on the data.
    seconds
        Wall-clock time of compute + check + plot.
    skipped
        Why the figure was not made (e.g. the Adult data is missing), else ``None``.
    error
        The error message if the figure failed, else ``None``.
    rows
        Number of rows of the CSV.

    Examples
    --------
    >>> from pmlkit.experiments import Check
    >>> res = FigureResult("deltamin", checks=(Check("a claim", True, "evidence"),))
    >>> res.ok
    True
    """

    name: str
    caption: str = ""
    png: str | None = None
    csv: str | None = None
    checks: tuple[Check, ...] = field(default_factory=tuple)
    seconds: float = 0.0
    skipped: str | None = None
    error: str | None = None
    rows: int = 0

    @property
    def ok(self) -> bool:
        """Made, and every check holds."""
        return self.skipped is None and self.error is None and all(c.holds for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {"name": self.name, "png": self.png, "csv": self.csv,
                "seconds": round(self.seconds, 3), "rows": self.rows,
                "skipped": self.skipped, "error": self.error,
                "checks": [c.to_dict() for c in self.checks]}


@renamed_parameter(version="0.2", seed="rng")
def reproduce(names: Sequence[str], out: pathlib.Path | str, *,
              iterations: int | None = None, rng: int = 0,
              data: pathlib.Path | str | None = None, progress: bool = False,
              echo: Callable[[str], None] | None = None) -> list[FigureResult]:
    """Make the figures ``names`` in folder ``out`` and write ``out/report.html``.

    Parameters
    ----------
    names
        Registered figure names (see :data:`pmlkit.experiments.FIGURES`).
    out
        Output folder (created if needed).
    iterations
        Passed to every figure's ``compute`` (``None``: each figure's default).
    rng
        Integer seed of the research generator (results are reproducible from it);
        formerly ``seed`` (still accepted, with a DeprecationWarning).
    data
        Folder (or file) of the UCI Adult data; default ``PMLKIT_DATA`` or the cache.
    progress
        Show tqdm progress bars on stderr.
    echo
        Called with one line per figure (e.g. ``click.echo``); silent when ``None``.

    Returns
    -------
    list of FigureResult
        In the order of ``names``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> [r.name for r in reproduce(["deltamin"], out, iterations=2)]
    ['deltamin']
    >>> sorted(p.name for p in out.iterdir())
    ['deltamin.csv', 'deltamin.png', 'report.html']
    """
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValidationError(f"figure must be one of {sorted(FIGURES)}, got {unknown[0]!r}")
    out_dir = user_path(out, "out")
    data_path = user_path(data, "data") if data is not None else None
    out_dir.mkdir(parents=True, exist_ok=True)
    say = echo or (lambda _line: None)
    results: list[FigureResult] = []
    todo = list(dict.fromkeys(names))
    for index, name in enumerate(todo, start=1):
        report("reproduce.figure", figure=name, index=index, total=len(todo))
        res = _run_one(name, out_dir, iterations=iterations, rng=rng, data=data_path,
                       progress=progress)
        results.append(res)
        say(_summary_line(res, out_dir))
    write_report(results, out_dir, settings={"iterations": iterations, "seed": rng,
                                             "data": str(data_path) if data_path else None})
    return results


def _summary_line(res: FigureResult, out_dir: pathlib.Path) -> str:
    if res.skipped:
        return f"{res.name}: skipped: {res.skipped}"
    if res.error:
        return f"{res.name}: FAILED: {res.error}"
    n_ok = sum(c.holds for c in res.checks)
    fails = "".join(f"\n  FAIL {c.claim}: {c.detail}" for c in res.checks if not c.holds)
    return (f"{res.name}: {res.seconds:.1f} s, {n_ok}/{len(res.checks)} checks hold -> "
            f"{out_dir / (res.png or '')}{fails}")


def _run_one(name: str, out_dir: pathlib.Path, *, iterations: int | None, rng: int,
             data: pathlib.Path | None, progress: bool) -> FigureResult:
    try:
        fig_mod = get_figure(name)
    except ValidationError as exc:
        return FigureResult(name=name, skipped=str(exc))
    caption = str(getattr(fig_mod, "CAPTION", ""))
    needs_adult = bool(getattr(fig_mod, "NEEDS_ADULT", False))
    t0 = time.perf_counter()
    try:
        df = fig_mod.compute(iterations=iterations, rng=rng, data=data, progress=progress)
    except DataError as exc:
        if needs_adult:
            return FigureResult(
                name=name, caption=caption,
                skipped=f"the UCI Adult data is needed and could not be read ({exc}); pass "
                        "--data PATH or set PMLKIT_DATA to the folder holding adult.data")
        return FigureResult(name=name, caption=caption, error=str(exc))
    except PMLError as exc:
        return FigureResult(name=name, caption=caption, error=str(exc))
    checks = tuple(fig_mod.check(df))
    fig = fig_mod.plot(df)
    png, csv = f"{name}.png", f"{name}.csv"
    fig.savefig(out_dir / png, dpi=DPI)
    df.to_csv(out_dir / csv, index=False)
    return FigureResult(name=name, caption=caption, png=png, csv=csv, checks=checks,
                        seconds=time.perf_counter() - t0, rows=len(df))


_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1150px; margin: 2em auto;
       padding: 0 1em; color: #222; }
figure { margin: 0; } img { max-width: 100%; border: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: .25em .6em; vertical-align: top; text-align: left; }
.pass { color: #176b2c; font-weight: bold; } .fail { color: #b00020; font-weight: bold; }
.skip { color: #8a6d00; font-weight: bold; } .cap { font-size: .95em; color: #333; }
section { border-top: 2px solid #eee; padding-top: .5em; margin-top: 1.5em; }
"""


def _status(res: FigureResult) -> tuple[str, str]:
    if res.skipped:
        return "skip", "skipped"
    if res.error:
        return "fail", "error"
    if all(c.holds for c in res.checks):
        return "pass", f"all {len(res.checks)} checks hold"
    bad = sum(not c.holds for c in res.checks)
    return "fail", f"{bad} of {len(res.checks)} checks fail"


def write_report(results: Sequence[FigureResult], out_dir: pathlib.Path | str,
                 settings: dict[str, Any] | None = None) -> pathlib.Path:
    """Write ``out_dir/report.html`` for ``results``; returns its path.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = write_report([FigureResult("deltamin")], tempfile.mkdtemp())
    >>> path.name, "deltamin" in path.read_text()
    ('report.html', True)
    """
    from .._version import __version__

    esc = html.escape
    out = pathlib.Path(out_dir)
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    settings = settings or {}
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>pmlkit: reproduction of the paper's figures</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>pmlkit: the paper's figures, reproduced</h1>",
        "<p>&ldquo;Privacy Mechanism Design based on Empirical Distributions&rdquo;: every "
        "figure below was recomputed with pmlkit's public functions; each section states "
        "what the figure shows and which of the paper's claims the data confirms "
        "(PASS) or not (FAIL).</p>",
        f"<p>pmlkit {esc(__version__)}, {esc(now)}; seed {esc(str(settings.get('seed')))}; "
        f"iterations {esc(str(settings.get('iterations') or 'figure defaults'))}; "
        f"Adult data {esc(str(settings.get('data') or 'PMLKIT_DATA / cache'))}. Randomness "
        "here is seeded (PCG64) for reproducibility: research only, not for protecting "
        "people.</p>",
        "<h2>Summary</h2><table><tr><th>figure</th><th>status</th><th>time (s)</th>"
        "<th>data</th></tr>",
    ]
    for res in results:
        cls, text = _status(res)
        link = (f'<a href="{esc(res.csv)}">{esc(res.csv)}</a> ({res.rows} rows)'
                if res.csv else "")
        parts.append(f'<tr><td><a href="#{esc(res.name)}">{esc(res.name)}</a></td>'
                     f'<td class="{cls}">{esc(text)}</td><td>{res.seconds:.1f}</td>'
                     f"<td>{link}</td></tr>")
    parts.append("</table>")
    for res in results:
        cls, text = _status(res)
        parts.append(f'<section id="{esc(res.name)}"><h2>{esc(res.name)} '
                     f'<span class="{cls}">({esc(text)})</span></h2>')
        if res.skipped:
            parts.append(f'<p class="skip">Skipped: {esc(res.skipped)}</p>')
        if res.error:
            parts.append(f'<p class="fail">Error: {esc(res.error)}</p>')
        if res.png:
            parts.append(f'<figure><img src="{esc(res.png)}" alt="{esc(res.name)}">'
                         f'<figcaption class="cap">{esc(res.caption)}</figcaption></figure>')
        elif res.caption:
            parts.append(f'<p class="cap">{esc(res.caption)}</p>')
        if res.checks:
            parts.append("<table><tr><th>claim</th><th>result</th><th>evidence</th></tr>")
            for c in res.checks:
                k = "pass" if c.holds else "fail"
                parts.append(f"<tr><td>{esc(c.claim)}</td><td class=\"{k}\">"
                             f"{'PASS' if c.holds else 'FAIL'}</td><td>{esc(c.detail)}</td></tr>")
            parts.append("</table>")
        parts.append("</section>")
    parts.append("</body></html>")
    path = out / REPORT_NAME
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
