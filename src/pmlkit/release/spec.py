"""The release spec: a declarative TOML file read into one typed, frozen, strictly
validated object (:class:`ReleaseSpec`).

Every key is known: an unknown key, a value of the wrong type or a missing required key
is a :class:`~pmlkit.errors.ValidationError` of one line naming the key, the value and
what is allowed. Paths are resolved against the spec file's folder.

Example (``release.toml``)::

    reference = "reference.csv"     # the sample the mechanisms are designed from
    input = "people.csv"            # the table to release (file, glob)
    output = "released.csv"         # the released table (CSV or Parquet)
    epsilon = 2.0                   # PML guarantee for the whole record (nats)
    delta = 1e-6                    # failure probability of the guarantee
    # optional: report = "released.html", confidence = "l1", missing = "error",
    #           overwrite = false, seed = 7 (research only: reproducible, not secure),
    #           search_steps = 5 (designs tried after the full split fails)

    [columns.sex]
    type = "categorical"            # optional: categories, unknown_as, missing, utility,
                                    #           weight

    [columns.age]
    type = "numeric"
    lower = 15
    upper = 90
    step = 5                        # optional: missing ("error"|"keep"), utility, weight,
                                    #           estimable (default true)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._validation import fmt, user_path
from ..errors import DataError, ValidationError

__all__ = [
    "CATEGORICAL_UTILITIES",
    "MISSING_POLICIES",
    "NUMERIC_UTILITIES",
    "ColumnSpec",
    "ReleaseSpec",
    "load_spec",
]

#: The missing-value policies of ``pmlkit privatize --missing`` (the one vocabulary).
MISSING_POLICIES = ("error", "category", "keep")
#: Utilities a categorical column may be designed for (``pmlkit design --utility``).
CATEGORICAL_UTILITIES = ("estimation", "mutual_information", "accuracy")
#: Expected losses a numeric column may be designed for (:mod:`pmlkit.numeric.design`).
NUMERIC_UTILITIES = ("abs", "squared")

_TOP_REQUIRED = ("reference", "input", "output", "epsilon", "delta", "columns")
_TOP_OPTIONAL = ("report", "confidence", "missing", "overwrite", "seed", "search_steps")
_CAT_KEYS = ("type", "categories", "unknown_as", "missing", "utility", "weight")
_NUM_KEYS = ("type", "lower", "upper", "step", "missing", "utility", "weight", "estimable")


def _bad(key: str, value: Any, allowed: str) -> ValidationError:
    return ValidationError(f"release spec: {key} must be {allowed}, got {fmt(value)}")


def _keys(d: Mapping[str, Any], where: str, required: tuple[str, ...],
          optional: tuple[str, ...]) -> None:
    allowed = required + optional
    for k in d:
        if k not in allowed:
            raise ValidationError(
                f"release spec: unknown key {where}{k!r} (allowed: {', '.join(allowed)})")
    for k in required:
        if k not in d:
            raise ValidationError(
                f"release spec: missing key {where}{k!r} (required: {', '.join(required)})")


def _str(d: Mapping[str, Any], key: str, where: str = "") -> str:
    v = d[key]
    if not isinstance(v, str) or not v:
        raise _bad(where + key, v, "a non-empty string")
    return v


def _real(d: Mapping[str, Any], key: str, where: str = "", *, positive: bool = False) -> float:
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise _bad(where + key, v, "a finite number")
    if positive and v <= 0:
        raise _bad(where + key, v, "a number > 0")
    return float(v)


def _choice(d: Mapping[str, Any], key: str, choices: tuple[str, ...], default: str,
            where: str = "") -> str:
    v = d.get(key, default)
    if not isinstance(v, str) or v not in choices:
        raise _bad(where + key, v, "one of " + ", ".join(repr(c) for c in choices))
    return v


@dataclass(frozen=True)
class ColumnSpec:
    """One privatised column of a :class:`ReleaseSpec`.

    Attributes
    ----------
    name
        The column's name in the input and output tables.
    type
        ``"categorical"`` or ``"numeric"``.
    missing
        ``"error"``, ``"category"`` (categorical only) or ``"keep"``.
    utility
        Categorical: ``"estimation"`` (default), ``"mutual_information"``,
        ``"accuracy"``; numeric: ``"abs"`` (default) or ``"squared"``. ``None`` (the
        constructor's default) is replaced by the default of the column's type.
    weight
        Share of the budget relative to the other columns (default: the log of the
        column's alphabet size, see :func:`pmlkit.release.design_columns`).
    categories
        Categorical: the declared alphabet (default: the reference's observed values).
    unknown_as
        Categorical: the label an input value outside the alphabet is released as.
    lower, upper, step
        Numeric: the grid (:class:`pmlkit.numeric.grid.NumericGrid`).
    estimable
        Numeric: release through a mechanism the analyst can invert (full rank: the
        distribution and the mean can be estimated), the one with the smallest expected
        error among those (default ``True``); ``False``: the smallest expected error of
        all, which may merge grid points (the analyst then gets bounds, not estimates).

    Examples
    --------
    >>> c = ColumnSpec.from_dict("age", {"type": "numeric", "lower": 18, "upper": 90,
    ...                                  "step": 1})
    >>> c.type, c.grid.n
    ('numeric', 73)
    >>> ColumnSpec.from_dict("age", {"type": "numeric", "lower": 18})
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: ...
    """

    name: str
    type: str
    missing: str = "error"
    utility: str | None = None
    weight: float | None = None
    categories: tuple[Any, ...] | None = None
    unknown_as: Any = None
    lower: Any = None
    upper: Any = None
    step: Any = None
    estimable: bool = True

    def __post_init__(self) -> None:
        if self.utility is None:  # the type's default (a frozen field: set once here)
            default = "abs" if self.type == "numeric" else "estimation"
            object.__setattr__(self, "utility", default)

    @property
    def grid(self) -> Any:
        """The numeric grid (``None`` for a categorical column)."""
        if self.type != "numeric":
            return None
        from ..numeric.grid import NumericGrid

        return NumericGrid(self.lower, self.upper, self.step)

    @classmethod
    def from_dict(cls, name: str, d: Any, *, missing: str = "error") -> ColumnSpec:
        where = f"columns.{name}."
        if not isinstance(d, Mapping):
            raise _bad(f"columns.{name}", d, "a table ([columns.NAME])")
        kind = d.get("type")
        if kind not in ("categorical", "numeric"):
            raise _bad(where + "type", kind, "'categorical' or 'numeric'")
        if kind == "categorical":
            _keys(d, where, ("type",), _CAT_KEYS[1:])
            util = _choice(d, "utility", CATEGORICAL_UTILITIES, "estimation", where)
            miss = _choice(d, "missing", MISSING_POLICIES, missing, where)
            cats = d.get("categories")
            if cats is not None:
                if not isinstance(cats, list) or len(cats) < 2 or any(
                        isinstance(c, bool) or not isinstance(c, str | int) for c in cats) \
                        or len(set(cats)) != len(cats):
                    raise _bad(where + "categories", cats,
                               "a list of at least 2 distinct strings or integers")
                if len({str(c) for c in cats}) != len(cats):
                    # 1 and "1" are one value in a CSV file: the released column could not
                    # tell them apart
                    raise _bad(where + "categories", cats,
                               "categories that stay distinct as text (not both 1 and '1')")
                cats = tuple(cats)
            unk = d.get("unknown_as")
            if unk is not None:
                if isinstance(unk, bool) or not isinstance(unk, str | int):
                    raise _bad(where + "unknown_as", unk, "a string or integer label")
                if cats is not None and unk not in cats:
                    raise _bad(where + "unknown_as", unk,
                               f"one of the declared categories {fmt(list(cats))}")
            weight = _weight(d, where)
            return cls(name, kind, miss, util, weight, cats, unk)
        _keys(d, where, ("type", "lower", "upper", "step"), _NUM_KEYS[4:])
        util = _choice(d, "utility", NUMERIC_UTILITIES, "abs", where)
        miss = _choice(d, "missing", ("error", "keep"),
                       "error" if missing == "category" else missing, where)
        if missing == "category" and "missing" not in d:
            raise ValidationError(
                f"release spec: missing = 'category' cannot apply to numeric column "
                f"{name!r} (a number column has no label '(missing)'); set "
                f"{where}missing to 'error' or 'keep'")
        bounds = [_real(d, k, where) for k in ("lower", "upper")]
        _real(d, "step", where, positive=True)
        if bounds[0] >= bounds[1]:
            raise _bad(where + "upper", d["upper"], f"a number > lower = {d['lower']!r}")
        estimable = d.get("estimable", True)
        if not isinstance(estimable, bool):
            raise _bad(where + "estimable", estimable, "true or false")
        spec = cls(name, kind, miss, util, _weight(d, where), None, None,
                   d["lower"], d["upper"], d["step"], estimable)
        try:
            spec.grid  # noqa: B018  (the grid checks that step divides upper - lower)
        except ValidationError as exc:
            raise ValidationError(f"release spec: columns.{name}: {exc}") from exc
        return spec


def _weight(d: Mapping[str, Any], where: str) -> float | None:
    if "weight" not in d:
        return None
    return _real(d, "weight", where, positive=True)


@dataclass(frozen=True)
class ReleaseSpec:
    """A whole-table release: what to read, what to write, the guarantee for the whole
    record and one :class:`ColumnSpec` per privatised column (read by :func:`load_spec`
    or :meth:`from_dict`; the module docstring shows the file).

    Attributes
    ----------
    reference, input, output, report
        Paths (``report`` defaults to ``<output>.report.html``).
    epsilon, delta
        The (eps, delta)-PML guarantee the whole record must meet.
    columns
        The privatised columns, in the spec's order.
    confidence
        The confidence-set method (``"l1"`` by default; :data:`pmlkit.confidence.METHODS`).
    overwrite
        Replace existing outputs.
    seed
        ``None`` (secure randomness) or an int seed (research only; never written next to
        the released data).
    search_steps
        How many scales of the budget split are tried after the full split fails (each a
        design of every column and a joint certificate; default 5).

    Examples
    --------
    >>> s = ReleaseSpec.from_dict({"reference": "r.csv", "input": "i.csv",
    ...     "output": "o.csv", "epsilon": 2, "delta": 1e-6,
    ...     "columns": {"sex": {"type": "categorical"},
    ...                 "age": {"type": "numeric", "lower": 15, "upper": 90, "step": 5}}})
    >>> [c.name for c in s.columns], s.columns[1].grid.n
    (['sex', 'age'], 16)
    >>> ReleaseSpec.from_dict({"reference": "r.csv", "input": "i.csv", "output": "o.csv",
    ...     "epsilon": 2, "delta": 1e-6, "columns": {}, "colour": "red"})
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: release spec: unknown key 'colour' (allowed: ...)
    """

    reference: Path
    input: Path
    output: Path
    epsilon: float
    delta: float
    columns: tuple[ColumnSpec, ...]
    report: Path = field(default=Path("report.html"))
    confidence: str = "l1"
    overwrite: bool = False
    seed: int | None = None
    search_steps: int = 5

    @property
    def names(self) -> tuple[str, ...]:
        """The privatised columns' names."""
        return tuple(c.name for c in self.columns)

    @classmethod
    def from_dict(cls, d: Any, *, base: str | os.PathLike[str] | None = None) -> ReleaseSpec:
        """Validate a parsed spec (``tomllib.load``); relative paths are taken from
        ``base`` (default: the current folder)."""
        from ..confidence import METHODS

        if not isinstance(d, Mapping):
            raise _bad("the spec", d, "a table of keys")
        _keys(d, "", _TOP_REQUIRED, _TOP_OPTIONAL)
        root = user_path(base, "base") if base is not None else Path()

        def path(key: str) -> Path:
            p = user_path(_str(d, key), f"release spec: {key}")
            return p if p.is_absolute() else root / p

        eps = _real(d, "epsilon", positive=True)
        delta = _real(d, "delta")
        if not 0 < delta < 1:
            raise _bad("delta", d["delta"], "a number in (0, 1)")
        conf = d.get("confidence", "l1")
        if not isinstance(conf, str) or conf not in METHODS:
            raise _bad("confidence", conf, "one of " + ", ".join(repr(m) for m in METHODS))
        missing = _choice(d, "missing", MISSING_POLICIES, "error")
        overwrite = d.get("overwrite", False)
        if not isinstance(overwrite, bool):
            raise _bad("overwrite", overwrite, "true or false")
        seed = d.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                                 or seed < 0):
            raise _bad("seed", seed, "an integer >= 0 (research only)")
        steps = d.get("search_steps", 5)
        if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= 30:
            raise _bad("search_steps", steps, "an integer in 0..30")
        cols_d = d["columns"]
        if not isinstance(cols_d, Mapping) or not cols_d:
            raise _bad("columns", cols_d, "at least one [columns.NAME] table")
        cols = tuple(ColumnSpec.from_dict(str(k), v, missing=missing)
                     for k, v in cols_d.items())
        out = path("output")
        report = path("report") if "report" in d else out.with_name(out.name + ".report.html")
        return cls(path("reference"), path("input"), out, eps, delta, cols, report, conf,
                   overwrite, seed, steps)


def load_spec(path: str | os.PathLike[str]) -> ReleaseSpec:
    """Read and validate a TOML release spec (paths relative to its folder).

    Raises
    ------
    DataError
        The file cannot be read or is not TOML.
    ValidationError
        A key is unknown or missing, or a value has the wrong type or range.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "release.toml"
    >>> _ = path.write_text('''
    ... reference = "reference.csv"
    ... input = "people.csv"
    ... output = "released.parquet"
    ... epsilon = 2.0
    ... delta = 1e-6
    ... [columns.sex]
    ... type = "categorical"
    ... ''')
    >>> spec = load_spec(path)
    >>> spec.names, spec.epsilon, spec.input == path.parent / "people.csv"
    (('sex',), 2.0, True)
    """
    import tomllib

    p = user_path(path, "release spec")
    try:
        with p.open("rb") as fh:
            d = tomllib.load(fh)
    except OSError as exc:
        raise DataError(f"cannot read the release spec {str(p)!r}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"the release spec {str(p)!r} is not valid TOML: {exc}") from exc
    return ReleaseSpec.from_dict(d, base=p.parent)
