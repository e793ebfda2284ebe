"""Helpers shared by the ``design``, ``assess`` and ``privatize`` commands.

- :func:`json_option`, :func:`emit`: the ``--json`` flag and output (JSON on stdout; the
  human-readable text otherwise);
- :func:`csv_options` / :func:`csv_from_options`: reading headerless CSV files
  (``--names a,b,c`` or ``--names adult``, ``--skip-rows``, ``--strip``, ``--na``);
- :func:`read_reference`: the empirical distribution of a reference column;
- :func:`progress_enabled`, :func:`progress_display`, :func:`steps`: progress on stderr
  (only when it is a terminal unless forced, never with ``--quiet``): the library's
  reports (:mod:`pmlkit._progress`) as one line rewritten in place, or tqdm bars;
- :func:`load_mechanism`: a mechanism JSON file (checked by :meth:`Mechanism.load`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from .._optional import require
from .._validation import to_jsonable, up_text

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "certificate_line",
    "csv_from_options",
    "csv_options",
    "delimiter_option",
    "describe_progress",
    "emit",
    "json_option",
    "load_mechanism",
    "progress_display",
    "progress_enabled",
    "progress_option",
    "read_reference",
    "renamed_option",
    "stderr_is_terminal",
    "steps",
    "to_jsonable",
]


class UserPath(click.Path):
    """``click.Path`` that reads a path as the library reads it (:func:`user_path`) before
    its checks: a leading ``~`` is the home folder (the shell leaves ``--out=~/m.json``
    alone), and ``./~/m.json`` stays in a folder named ``~``."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            from .._validation import user_path

            if not value:
                self.fail("must name a file or folder, got an empty path", param, ctx)
            if not self.dir_okay and value.endswith(("/", os.sep)):
                self.fail(f"{value!r} names a folder (it ends with '/'); give a file name",
                          param, ctx)
            value = os.fspath(user_path(value))
        return super().convert(value, param, ctx)


def renamed_option(new: str, old: str, dest: str, *, required: bool = False,
                   **kwargs: Any) -> Callable[[F], F]:
    """Option ``new`` (stored in ``dest``) that still accepts its former spelling ``old``.

    ``old`` is hidden from ``--help``; using it prints one line
    ``pmlkit: note: OLD is deprecated; use NEW`` on stderr and otherwise behaves exactly like
    ``new`` (same type and checks). Giving both is a usage error. ``required`` is checked
    here (click cannot know that either spelling satisfies it).

    Examples
    --------
    >>> import click
    >>> from click.testing import CliRunner
    >>> @click.command()
    ... @renamed_option("--output", "--out", "output", required=True)
    ... def cmd(output):
    ...     click.echo(output)
    >>> CliRunner().invoke(cmd, ["--output", "a.json"]).output
    'a.json\\n'
    >>> result = CliRunner().invoke(cmd, ["--out", "b.json"])
    >>> "pmlkit: note: --out is deprecated; use --output" in result.output, result.exit_code
    (True, 0)
    """
    import functools

    from click.core import ParameterSource

    alias = f"{dest}__deprecated_{old.lstrip('-').replace('-', '_')}"
    alias_kwargs = {k: v for k, v in kwargs.items() if k in ("type", "metavar", "multiple")}

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            legacy = kw.pop(alias, None)
            ctx = click.get_current_context()
            if legacy is not None and legacy != ():
                if ctx.get_parameter_source(dest) == ParameterSource.COMMANDLINE:
                    raise click.UsageError(
                        f"{old} is the deprecated spelling of {new}; give only {new}", ctx)
                click.echo(f"pmlkit: note: {old} is deprecated; use {new}", err=True)
                kw[dest] = legacy
            elif required and kw.get(dest) is None:
                raise click.MissingParameter(ctx=ctx, param_hint=f"'{new}'",
                                             param_type="option")
            return fn(*args, **kw)

        opt = click.option(new, dest, required=False, **kwargs)(wrapper)
        return click.option(old, alias, hidden=True, default=None, **alias_kwargs)(opt)  # type: ignore[return-value]

    return deco


def json_option(fn: F) -> F:
    """``--json``: machine-readable output on stdout.

    Examples
    --------
    >>> import click
    >>> from click.testing import CliRunner
    >>> @click.command()
    ... @json_option
    ... def cmd(as_json):
    ...     emit(as_json, {"eps": 1.0}, "eps = 1")
    >>> CliRunner().invoke(cmd, ["--json"]).output.split()
    ['{', '"eps":', '1.0', '}']
    >>> CliRunner().invoke(cmd, []).output
    'eps = 1\\n'
    """
    return click.option("--json", "as_json", is_flag=True,
                        help="Print a machine-readable JSON document on stdout.")(fn)


_QUIET_KEY = "pmlkit.quiet"


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta[_QUIET_KEY] = True


def progress_option(fn: F) -> F:
    """``--progress/--no-progress`` (default: when stderr is a terminal) and ``--quiet``
    (no progress at all, whatever ``--progress`` says), the same in every command.

    Progress is written to stderr only: stdout (``--json`` included) never changes.

    Examples
    --------
    >>> import click
    >>> from click.testing import CliRunner
    >>> @click.command()
    ... @progress_option
    ... def cmd(progress):
    ...     click.echo(progress_enabled(progress))
    >>> CliRunner().invoke(cmd, ["--no-progress"]).output
    'False\\n'
    >>> CliRunner().invoke(cmd, ["--progress", "--quiet"]).output
    'False\\n'
    """
    fn = click.option("--quiet", is_flag=True, expose_value=False, callback=_set_quiet,
                      help="No progress on stderr (overrides --progress; warnings and "
                           "errors are still printed).")(fn)
    return click.option("--progress/--no-progress", default=None,
                        help="Progress on stderr: what a long step is doing (default: "
                             "when stderr is a terminal).")(fn)


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (what decides progress when neither ``--progress``
    nor ``--no-progress`` is given)."""
    return bool(sys.stderr.isatty())


def progress_enabled(flag: bool | None) -> bool:
    """Whether to show progress: never with ``--quiet``; else the
    ``--progress/--no-progress`` flag, else whether stderr is a terminal
    (:func:`stderr_is_terminal`).

    Examples
    --------
    ``None`` follows the terminal (progress only when stderr is one); a flag decides
    otherwise:

    >>> progress_enabled(True), progress_enabled(False)
    (True, False)
    """
    ctx = click.get_current_context(silent=True)
    if ctx is not None and any(c.meta.get(_QUIET_KEY) for c in _chain(ctx)):
        return False
    return stderr_is_terminal() if flag is None else bool(flag)


def _chain(ctx: click.Context) -> Iterator[click.Context]:
    c: click.Context | None = ctx
    while c is not None:
        yield c
        c = c.parent


#: Stages that name a part of the work (printed as a line of their own); the others are
#: details of the part under way (one line on stderr, rewritten in place).
_HEADERS = frozenset({"audit.family", "reproduce.figure", "joint.split"})


def describe_progress(stage: str, info: Mapping[str, Any]) -> str:
    """One short phrase for a :func:`pmlkit._progress.report`.

    Examples
    --------
    >>> describe_progress("design.round", {"round": 7, "gap": 0.0312})
    'column generation round 7, certified gap 3.12%'
    >>> describe_progress("design.round", {"round": 9, "gap": 2.4e-6})
    'column generation round 9, certified gap 0.0002%'
    >>> describe_progress("estimate.em", {"iteration": 150, "phase": "em", "gap": 2e-6})
    'EM iteration 150 (optimality gap 2e-06)'
    >>> describe_progress("audit.family", {"family": "laplace", "index": 2, "total": 6})
    'family laplace (2/6)'
    """
    def pct(v: Any) -> str:
        v = float(v)
        if not math.isfinite(v):
            return "not bounded yet"
        return f"{v:.2%}" if v == 0 or v >= 1e-4 else f"{100 * v:.1g}%"

    if stage == "design.round":
        what = "final bound search" if info.get("final") else "column generation"
        return f"{what} round {info.get('round')}, certified gap {pct(info.get('gap'))}"
    if stage == "design.local-search":
        return (f"estimation design: local search step {info.get('step')}/"
                f"{info.get('max_steps')}, Frank-Wolfe gap {pct(info.get('gap'))}")
    if stage == "estimate.em":
        name = "EM" if info.get("phase") == "em" else "Newton"
        return (f"{name} iteration {info.get('iteration')} (optimality gap "
                f"{float(info.get('gap', math.nan)):.3g})")
    if stage == "estimate.intervals":
        return (f"intervals: bisection step {info.get('step')}/{info.get('max_steps')}, "
                f"{info.get('open_ends')} ends open")
    if stage in ("audit.family", "reproduce.figure"):
        key = "family" if stage == "audit.family" else "figure"
        return f"{key} {info.get(key)} ({info.get('index')}/{info.get('total')})"
    if stage == "joint.split":
        split = ", ".join(f"{float(e):.3g}" for e in info.get("split", ()))
        return f"split {info.get('tried')}: eps per column ({split})"
    return stage + "".join(f", {k} {v}" for k, v in info.items())


class _StatusLine:
    """The progress display: one line on stderr rewritten in place (``\\r``); a header
    stage ends it and starts its own line. Reads the clock only to limit redraws (at
    most every :data:`_REDRAW` seconds): nothing here reaches the library."""

    def __init__(self, title: str, details: bool) -> None:
        self.title = title
        self.details = details
        self.shown = 0
        self.last = -math.inf
        self.start = time.monotonic()
        self.broken = False

    def _write(self, text: str) -> None:
        if self.broken:
            return
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, UnicodeError, ValueError):
            # a closed or unencodable stderr ends the display, never the computation
            self.broken = True

    def clear(self) -> None:
        if self.shown:
            self._write("\r" + " " * self.shown + "\r")
            self.shown = 0

    def show(self, detail: str, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < _REDRAW:
            return
        self.last = now
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        # (the part under way has a line of its own above: the detail alone fits better)
        tail = f" [{now - self.start:.0f} s]"
        line = f"{self.title}: {detail}"[:max(0, width - len(tail))] + tail
        self._write("\r" + line + " " * max(0, self.shown - len(line)))
        self.shown = len(line)

    def __call__(self, stage: str, info: Mapping[str, Any]) -> None:
        text = describe_progress(stage, info)
        if stage in _HEADERS:
            self.clear()
            self._write(f"{self.title}: {text}\n")
            self.last = -math.inf
        elif self.details:
            self.show(text)


#: Least time between two redraws of the progress line (seconds; display only).
_REDRAW = 0.1


@contextmanager
def progress_display(title: str, enabled: bool, *, details: bool = True
                     ) -> Iterator[Callable[[str], None]]:
    """Show the library's progress reports (:mod:`pmlkit._progress`) on stderr for the
    ``with`` block; yields ``say(text)`` for the command's own phases (reading,
    saving). Disabled: nothing is installed or written.

    ``details=False`` prints only the parts of the work (figures, families, splits), for
    commands whose parts draw their own bars.

    Examples
    --------
    >>> with progress_display("design", enabled=False) as say:
    ...     say("reading")
    """
    if not enabled:
        yield lambda text: None
        return
    from .._progress import reporting

    line = _StatusLine(title, details)
    try:
        with reporting(line):
            yield lambda text: line.show(text, force=True)
    finally:
        line.clear()


def csv_options(fn: F) -> F:
    """Options describing CSV inputs (ignored for Parquet).

    Examples
    --------
    >>> import click
    >>> @click.command()
    ... @csv_options
    ... def cmd(names, skip_rows, strip, na_values):
    ...     pass
    >>> [p.name for p in cmd.params]
    ['names', 'skip_rows', 'strip', 'na_values']
    """
    opts = [
        click.option("--names", default=None, metavar="A,B,...|adult",
                     help="Column names of a headerless CSV file (comma-separated), or "
                          "'adult' for the UCI Adult files (names, whitespace, '?' as "
                          "missing)."),
        click.option("--skip-rows", type=click.IntRange(min=0), default=None,
                     help="Lines to skip at the top of CSV files (adult.test: 1)."),
        click.option("--strip/--no-strip", default=None,
                     help="Strip spaces around CSV fields (default: on with --names adult)."),
        click.option("--na", "na_values", multiple=True, metavar="TEXT",
                     help="Text read as missing in CSV files, besides the empty cell "
                          "(repeatable)."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def delimiter_option(fn: F) -> F:
    """``--delimiter``: the CSV field separator (default: tab for .tsv, else comma).

    Examples
    --------
    >>> import click
    >>> @click.command()
    ... @delimiter_option
    ... def cmd(delimiter):
    ...     pass
    >>> cmd.params[0].opts
    ['--delimiter']
    """
    return click.option("--delimiter", default=None, metavar="CHAR",
                        help="CSV field separator (a character, or 'tab'); default: tab for "
                             ".tsv files, a comma otherwise.")(fn)


def _delimiter(text: str | None) -> str | None:
    if text is None:
        return None
    value = {"tab": "\t", "\\t": "\t"}.get(text.lower(), text)
    if len(value) != 1 or value in '"\r\n':
        raise click.BadParameter(f"must be one character (or 'tab'), got {text!r}",
                                 param_hint="'--delimiter'")
    return value


def csv_from_options(names: str | None, skip_rows: int | None, strip: bool | None,
                     na_values: Sequence[str], *, path_hint: str = "",
                     delimiter: str | None = None) -> Any:
    """Build a :class:`pmlkit.io.CsvOptions` from the :func:`csv_options` values (and
    ``--delimiter``).

    Examples
    --------
    ``--names adult`` reads the headerless UCI files (``adult.test`` skips its first line):

    >>> opts = csv_from_options("adult", None, None, (), path_hint="data/adult.test")
    >>> opts.column_names[9], opts.skip_rows, opts.strip_whitespace, opts.null_values
    ('sex', 1, True, ('?',))
    >>> csv_from_options(None, None, None, (), delimiter="tab").delimiter
    '\\t'
    >>> csv_from_options(None, None, None, ()) is None  # nothing given: the defaults
    True
    """
    import dataclasses

    from ..io import CsvOptions

    delim = _delimiter(delimiter)
    if delim is not None:
        base = csv_from_options(names, skip_rows, strip, na_values, path_hint=path_hint)
        return dataclasses.replace(base or CsvOptions(), delimiter=delim)
    if names is None and skip_rows is None and strip is None and not na_values:
        return None
    if names is not None and names.strip().lower() == "adult":
        from ..datasets import ADULT_COLUMNS

        skip = skip_rows if skip_rows is not None else (
            1 if path_hint.endswith("adult.test") else 0)
        return CsvOptions(column_names=ADULT_COLUMNS, skip_rows=skip,
                          strip_whitespace=True if strip is None else strip,
                          null_values=tuple(na_values) or ("?",))
    cols = None if names is None else tuple(c.strip() for c in names.split(","))
    return CsvOptions(column_names=cols, skip_rows=skip_rows or 0,
                      strip_whitespace=bool(strip),
                      null_values=tuple(na_values) or None)


def missing_option(choices: Sequence[str] = ("error", "category", "keep")
                   ) -> Callable[[F], F]:
    """``--missing``: what a missing value of a reference column is, the same words in
    every command (``pmlkit design``, ``assess``, ``joint design``, ``joint assess``,
    ``privatize``): ``error`` (stop, naming the column), ``category`` (the label
    ``(missing)``) or ``keep`` (left out of the estimate; where a command offers it)."""
    helps = {"error": "stop (error)", "category": "count it as the label '(missing)' "
             "(category: the mechanism needs that label, from pmlkit design --missing "
             "category)", "keep": "leave it out of the estimate (keep)"}

    def deco(fn: F) -> F:
        return click.option("--missing", type=click.Choice(list(choices)), default="error",
                            show_default=True,
                            help="A missing value in the reference column: "
                                 + ", ".join(helps[c] for c in choices) + ".")(fn)
    return deco


def reference_values(path: str, column: str, csv: Any = None, *,
                     categories: Sequence[Any] | None = None, missing: str = "error"
                     ) -> tuple[Any, list[Any] | None]:
    """``(values, categories)`` of a reference column with its missing values handled as
    ``--missing`` says (:func:`pmlkit.design.pipeline.apply_missing`); with
    ``--missing category`` the categories (the mechanism's labels) must hold
    ``(missing)``."""
    from ..design.pipeline import MISSING_LABEL, apply_missing
    from ..errors import DataError
    from ..io import read_labels

    if missing == "category" and categories is not None and MISSING_LABEL not in categories:
        raise DataError(f"--missing category: the mechanism of --column {column!r} has no "
                        f"label {MISSING_LABEL!r}; design it with pmlkit design --missing "
                        "category, or pass --missing keep")
    values = read_labels(path, column, csv=csv)
    return apply_missing(values, missing, categories)


def reference_error(exc: Exception, path: str, column: str,
                    missing_choices: Sequence[str] = ("category", "keep")) -> Any:
    """A data error about a reference column, restated with the column, the file and the
    option that fixes it (``--missing`` for nulls, the mechanism's labels for values
    outside them)."""
    from ..errors import DataError

    msg = str(exc)
    if "null" in msg:
        opts = " / ".join(f"--missing {c}" for c in missing_choices)
        msg += f" (or pass {opts})"
    elif "not in categories" in msg:
        msg += (" (the reference must hold only the mechanism's input labels: check "
                "that --column and the mechanism match)")
    return DataError(f"--column {column!r} of {path!r}: {msg}")


def read_reference(path: str, column: str, csv: Any = None,
                   categories: Sequence[Any] | None = None, missing: str = "error") -> Any:
    """Empirical distribution (:func:`pmlkit.empirical_distribution`) of one column, its
    missing values handled as ``--missing`` says (:func:`reference_values`); a data error
    names the column, the file and the option that fixes it (:func:`reference_error`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ref.csv"
    >>> _ = path.write_text("sex\\n" + "F\\n" * 40 + "M\\n" * 60)
    >>> est = read_reference(str(path), "sex")
    >>> est.categories, est.p.tolist(), est.m
    (('F', 'M'), [0.4, 0.6], 100)
    """
    from ..errors import DataError
    from ..estimation import empirical_distribution

    values, cats = reference_values(path, column, csv, categories=categories,
                                    missing=missing)
    try:
        return empirical_distribution(values, categories=cats)
    except DataError as exc:
        raise reference_error(exc, path, column) from exc


def load_mechanism(path: str, *, allow_uncertified: bool = False) -> Any:
    """Load a mechanism file strictly; an uncertified one only with ``allow_uncertified``
    (the error then names the ``--allow-uncertified`` flag).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pmlkit
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.json"
    >>> _ = pmlkit.Mechanism([[0.75, 0.25], [0.25, 0.75]]).save(path)
    >>> load_mechanism(str(path))
    Traceback (most recent call last):
    ...
    pmlkit.errors.MechanismFileError: mechanism file ... is UNCERTIFIED ...
    >>> load_mechanism(str(path), allow_uncertified=True).certified
    False
    """
    from ..errors import MechanismFileError
    from ..mechanism import Mechanism

    mech = Mechanism.load(path, allow_uncertified=True)
    if not mech.certified and not allow_uncertified:
        raise MechanismFileError(
            f"mechanism file {path!r} is UNCERTIFIED (it records no uncertainty set or no "
            "certified eps, so no guarantee can be checked); pass --allow-uncertified to use "
            "it anyway")
    return mech


def certificate_line(mech: Any) -> str:
    """One line saying what guarantee a loaded mechanism carries (or that it has none).

    Examples
    --------
    >>> import pmlkit
    >>> print(certificate_line(pmlkit.Mechanism([[0.75, 0.25], [0.25, 0.75]])))
    UNCERTIFIED: this mechanism carries no checked guarantee (no uncertainty set or certified eps)
    >>> res = pmlkit.design_from_samples([0] * 60 + [1] * 40, eps=1.0, delta=0.05)
    >>> certificate_line(res.mechanism).startswith("certified: worst-case eps 1 ")
    True
    """
    params = mech.parameters
    if not mech.certified:
        claims = ", ".join(f"{k} = {params[k]}" for k in ("eps", "delta") if k in params)
        return ("UNCERTIFIED: this mechanism carries no checked guarantee (no uncertainty set "
                "or certified eps)" + (f"; its stated {claims} are unverified claims"
                                       if claims else ""))
    g = mech.guarantee  # certified: a typed guarantee pmlkit checked
    kind = g.set.to_dict().get("kind")
    text = (f"certified: worst-case eps {up_text(g.certified_eps)} over the recorded {kind} "
            "set (re-checked on load)")
    if g.basis == "sample":
        text += (f"; the set was rebuilt from m = {g.m} reference samples with "
                 f"{g.method!r} at delta = {g.delta:.3g}")
    elif g.basis == "all":
        text += "; the set is every distribution (no sample-based delta needed)"
    else:
        text += "; no sample-based delta is recorded"
    return text


def emit(as_json: bool, doc: dict[str, Any], text: str) -> None:
    """Print ``doc`` as JSON (``--json``) or ``text``.

    Examples
    --------
    >>> emit(False, {"eps": 0.5}, "eps = 0.5")
    eps = 0.5
    >>> emit(True, {"eps": float("inf")}, "")  # strict JSON: non-finite floats as text
    {
      "eps": "inf"
    }
    """
    if as_json:
        click.echo(json.dumps(to_jsonable(doc), indent=2))
    else:
        click.echo(text)


@contextmanager
def steps(total: int, desc: str, enabled: bool) -> Iterator[Callable[[str], None]]:
    """A tqdm bar over named steps; yields ``advance(label)``.

    Examples
    --------
    >>> with steps(2, "design", enabled=False) as advance:
    ...     advance("estimate")
    ...     advance("certify")
    """
    if not enabled:
        yield lambda label: None
        return
    tqdm = require("tqdm.auto", "progress bars").tqdm

    bar = tqdm(total=total, desc=desc, leave=False, file=sys.stderr)

    def advance(label: str) -> None:
        bar.set_postfix_str(label)
        bar.update(1)

    try:
        yield advance
    finally:
        bar.close()
