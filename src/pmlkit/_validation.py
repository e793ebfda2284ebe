"""Argument checks shared by every public entry point.

Each helper returns the cleaned value (a Python float/int or a float64 array) or raises
:class:`pmlkit.errors.ValidationError` with a message that names the parameter, quotes the
offending value and states what is allowed. NaN and inf are always rejected explicitly;
numpy scalar types (``np.float32``, ``np.int64``, ...) are accepted wherever Python numbers
are. Nothing is silently repaired: a prior that sums to 0.98 is an error, not renormalised.
"""

from __future__ import annotations

import math
import numbers
import operator
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from .errors import ValidationError

#: Tolerance on ``|sum - 1|`` for priors and mechanism rows (relative to 1).
SUM_TOL = 1e-9

#: Relative rounding margin of a computed leakage (a log-likelihood ratio) where it meets a
#: threshold: ``2^-44 ~ 5.7e-14``, i.e. 512 units in the last place. See :func:`exceeds`.
LEAKAGE_REL_ERR = 2.0**-44

__all__ = [
    "LEAKAGE_REL_ERR",
    "SUM_TOL",
    "as_distribution",
    "as_mechanism",
    "check_count",
    "check_delta",
    "check_eps",
    "check_radius",
    "check_real",
    "exceeds",
    "fmt",
    "no_duplicate_keys",
    "safe_upper",
    "user_path",
]


def fmt(value: Any) -> str:
    """Short printable form of an offending value for error messages.

    Examples
    --------
    >>> fmt(np.array([0.5, 0.6]))
    '[0.5, 0.6]'
    >>> fmt(np.zeros(100))
    'array of shape (100,)'
    """
    if isinstance(value, np.ndarray):
        if value.size > 8:
            return f"array of shape {value.shape}"
        return np.array2string(value, precision=6, separator=", ")
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a Python float after checking type, finiteness and range.

    Parameters
    ----------
    value
        A Python or numpy real number (``bool`` is refused: it is almost always a bug).
    name
        The parameter's name, used in the error message.
    low, high
        Optional bounds; ``low_open``/``high_open`` make them strict.
    allow_inf
        Accept ``+inf`` (never NaN).

    Examples
    --------
    numpy scalars come back as Python floats; the message of a refusal names the
    parameter, quotes the value and states the range:

    >>> check_real(np.float32(0.25), "x", low=0.0, high=1.0)
    0.25
    >>> check_real(2.0, "x", low=0.0, high=1.0, high_open=True)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: x must be in [0, 1), got 2.0
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            return check_real(
                value.item(), name, low=low, high=high, low_open=low_open,
                high_open=high_open, allow_inf=allow_inf,
            )
        raise ValidationError(f"{name} must be a real number, got {fmt(value)}")
    try:
        x = float(value)
    except OverflowError:  # a Python int beyond the float range
        raise ValidationError(f"{name} must be a finite real number, got {fmt(value)}") from None
    # an unbounded end is open unless infinity is accepted there (only +inf ever is):
    # "eps must be in [0, inf)" says that inf is refused
    lo_txt = "(" if low_open or low is None else "["
    hi_txt = ")" if high_open or (high is None and not allow_inf) else "]"
    lo_val = "-inf" if low is None else f"{low:g}"
    hi_val = "inf" if high is None else f"{high:g}"
    rng = f"{lo_txt}{lo_val}, {hi_val}{hi_txt}"
    where = f"in {rng}" if (low is not None or high is not None) else "a real number"
    if np.isnan(x):
        raise ValidationError(f"{name} must be {where}, got nan (NaN is not allowed)")
    if np.isinf(x) and not (allow_inf and x > 0):
        raise ValidationError(f"{name} must be {where} and finite, got {x}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ValidationError(f"{name} must be in {rng}, got {fmt(value)}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ValidationError(f"{name} must be in {rng}, got {fmt(value)}")
    return x


def check_eps(eps: Any, name: str = "eps") -> float:
    """A privacy parameter: finite and ``>= 0``.

    Examples
    --------
    >>> check_eps(1)
    1.0
    >>> check_eps(-0.1)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: eps must be in [0, inf), got -0.1
    """
    return check_real(eps, name, low=0.0)


def check_delta(
    delta: Any, name: str = "delta", *, allow_zero: bool = False, allow_one: bool = True
) -> float:
    """A failure probability in ``(0, 1]`` (by default; the ends are configurable).

    Examples
    --------
    >>> check_delta(1e-6)
    1e-06
    >>> check_delta(0.0)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: delta must be in (0, 1], got 0.0
    """
    return check_real(delta, name, low=0.0, high=1.0, low_open=not allow_zero,
                      high_open=not allow_one)


def check_radius(beta: Any, name: str = "beta") -> float:
    """An l1 radius: finite and ``>= 0`` (radii ``>= 2`` cover the whole simplex).

    Examples
    --------
    >>> check_radius(0.1)
    0.1
    >>> check_radius(float("inf"))
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: beta must be in [0, inf) and finite, got inf
    """
    return check_real(beta, name, low=0.0)


def check_count(value: Any, name: str = "m", *, minimum: int = 1) -> int:
    """An integer count ``>= minimum``; integral floats such as ``1e12`` are accepted.

    Examples
    --------
    >>> check_count(1e3, "m")
    1000
    >>> check_count(10.5, "m")
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: m must be an integer >= 1, got 10.5
    """
    if isinstance(value, bool | np.bool_):
        raise ValidationError(f"{name} must be an integer >= {minimum}, got {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        if isinstance(value, numbers.Real) and np.isfinite(float(value)) \
                and float(value).is_integer():
            out = operator.index(math.floor(value))  # exact for an integral Fraction, Decimal
        else:
            raise ValidationError(
                f"{name} must be an integer >= {minimum}, got {fmt(value)}") from None
    if out < minimum:
        raise ValidationError(f"{name} must be an integer >= {minimum}, got {out}")
    return out


def as_float_array(value: Any, name: str, ndim: int) -> NDArray[np.float64]:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: huge Python int
        raise ValidationError(
            f"{name} must be a {ndim}-D array of real numbers, got {fmt(value)}") from exc
    if arr.ndim != ndim:
        raise ValidationError(f"{name} must be {ndim}-D, got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValidationError(f"{name} must not be empty, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValidationError(f"{name} must not contain NaN, got {fmt(arr)}")
    if np.isinf(arr).any():
        raise ValidationError(f"{name} must not contain inf, got {fmt(arr)}")
    if (arr < 0).any():
        bad = arr[arr < 0][0]
        raise ValidationError(f"{name} entries must be >= 0, got {float(bad)!r} in {fmt(arr)}")
    return arr


def as_distribution(p: ArrayLike, name: str = "prior", *,
                    tol: float = SUM_TOL) -> NDArray[np.float64]:
    """A probability vector: 1-D, finite, ``>= 0``, ``|sum - 1| <= tol``.

    Returns a new float64 array (never renormalised: a wrong sum is an error).

    Examples
    --------
    >>> as_distribution([0.25, 0.75])
    array([0.25, 0.75])
    >>> as_distribution([0.5, 0.6])
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: prior must sum to 1 (tolerance 1e-09), got sum 1.1 for [0.5, 0.6]
    """
    arr = as_float_array(p, name, 1)
    with np.errstate(over="ignore"):  # entries near 1e308 sum to inf: still an error below
        s = float(arr.sum())
    if abs(s - 1.0) > tol:
        raise ValidationError(
            f"{name} must sum to 1 (tolerance {tol:g}), got sum {s!r} for {fmt(arr)}")
    return arr.copy()


class ValidatedMatrix:
    """Base of pmlkit objects whose ``matrix`` attribute was validated by
    :func:`as_mechanism` when the object was built and is stored read-only (as
    :class:`pmlkit.Mechanism` does): :func:`as_mechanism` then copies it without checking it
    again. It lets the analysis modules accept a mechanism object without importing the
    model layer."""

    __slots__ = ()
    matrix: NDArray[np.float64]


def as_mechanism(w: ArrayLike | ValidatedMatrix, name: str = "mechanism", *,
                 tol: float = SUM_TOL) -> NDArray[np.float64]:
    """A row-stochastic matrix (rows = inputs): 2-D, finite, ``>= 0``, rows sum to 1.

    Accepts any 2-D array-like, an object with ``__array__``, or a
    :class:`ValidatedMatrix` such as :class:`pmlkit.Mechanism` (its matrix, already
    validated, is copied as is). Returns a new float64 array.

    Examples
    --------
    >>> as_mechanism([[0.8, 0.2], [0.3, 0.7]])
    array([[0.8, 0.2],
           [0.3, 0.7]])
    >>> as_mechanism([[0.8, 0.2], [0.3, 0.6]])
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: mechanism rows must sum to 1 (tolerance 1e-09), row 1 sums...
    """
    if isinstance(w, ValidatedMatrix):
        return np.array(w.matrix, dtype=np.float64, copy=True)
    arr = as_float_array(w, name, 2)
    with np.errstate(over="ignore"):  # entries near 1e308 sum to inf: still an error below
        sums = arr.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > tol)
    if bad.size:
        i = int(bad[0])
        raise ValidationError(
            f"{name} rows must sum to 1 (tolerance {tol:g}), row {i} sums to {float(sums[i])!r}")
    return arr.copy()


def readonly(a: ArrayLike, dtype: DTypeLike | None = np.float64) -> NDArray[Any]:
    """A read-only copy of ``a`` as an array of ``dtype`` (``None``: ``a``'s own dtype): the
    arrays stored in pmlkit's frozen results, never shared with the caller."""
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def exceeds(value: ArrayLike, threshold: ArrayLike, *, rel: float = LEAKAGE_REL_ERR,
            absolute: ArrayLike = 0.0) -> Any:
    """Whether a computed leakage may exceed ``threshold`` once its rounding error is counted.

    The one rule of pmlkit where a computed leakage (a log-ratio) meets a threshold eps:
    a value within its rounding error of the threshold counts AGAINST the guarantee. So

        exceeds(v, t)  <=>  v + rel * max(|v|, |t|) + absolute > t,

    an output whose computed leakage ties eps (or is below it by less than the margin) is in
    the violation set, and a certificate ``v <= t`` holds only when ``not exceeds(v, t)``,
    i.e. ``v`` is below ``t`` by more than its error bound. NaN counts as exceeding (a
    value that cannot be checked is never believed); ``+inf`` exceeds every finite
    threshold and no value exceeds ``+inf``. Arrays broadcast (a boolean array is
    returned; a Python ``bool`` for scalars).

    The margin. Every leakage pmlkit compares is a logarithm evaluated from a handful of
    correctly rounded operations (``log1p``, ``expm1``, ``logaddexp``, products and short
    sums), each with relative error at most one or two ulps (``2^-53``) and condition
    numbers of order one where the leakage is computed as a relative quantity (e.g.
    ``-log1p(r expm1(-u))`` with ``r expm1(-u) > -1/2``: condition number at most
    ``1/(2 log 2) * 2 < 1.5``); the Gaussian grid's leakage is accurate to about 10 ulps
    (:mod:`pmlkit.additive.grid`). The default ``rel = 2^-44`` (512 ulps) covers such
    evaluations with a factor of about 50 and is still far below anything a user states
    as eps (``1e-13`` relative). Where a value is a difference of logarithms that can
    cancel (``log a - log b``), its absolute error is of the order of
    ``ulp * (|log a| + |log b|)``, not of ``ulp * |value|``: such a site passes an
    ``absolute`` margin too (a scalar or an array broadcasting with ``value``).

    Examples
    --------
    >>> exceeds(1.0, 1.0), exceeds(1.0 - 1e-12, 1.0), exceeds(1.0 - 1e-15, 1.0)
    (True, False, True)
    >>> exceeds(0.0, 0.0), exceeds(float("nan"), 1.0), exceeds(float("inf"), 1e300)
    (False, True, True)
    >>> exceeds(np.array([0.5, 1.0]), 1.0).tolist()
    [False, True]
    """
    v, t, margin = _rounding(value, threshold, rel, absolute)
    with np.errstate(invalid="ignore", over="ignore"):
        out = (v + margin > t) | np.isnan(v) | np.isnan(t)
    return bool(out) if out.ndim == 0 else out


def _rounding(value: ArrayLike, threshold: ArrayLike, rel: float, absolute: ArrayLike
              ) -> tuple[Any, Any, Any]:
    """``(value, threshold, margin)`` as float arrays: the rounding margin of a computed
    leakage against a threshold (:func:`exceeds`), never infinite for a finite threshold
    (an infinite value exceeds it anyway)."""
    v = np.asarray(value, dtype=np.float64)
    t = np.asarray(threshold, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        margin = rel * np.maximum(np.abs(v), np.abs(t)) + np.asarray(absolute, dtype=np.float64)
        margin = np.where(np.isfinite(margin), margin, 0.0)
    return v, t, margin


def surely_exceeds(value: ArrayLike, threshold: ArrayLike, *, rel: float = LEAKAGE_REL_ERR,
                   absolute: ArrayLike = 0.0) -> Any:
    """Whether a computed leakage exceeds ``threshold`` even with its rounding error counted
    in its favour (the margin of :func:`exceeds`): ``v - margin > t``. The check of a bound
    someone else computed: a value within rounding of the threshold does not refute it, a
    value surely above it does. NaN counts as exceeding; ``+inf`` exceeds every finite
    threshold.

    Examples
    --------
    >>> [surely_exceeds(v, 1.0) for v in (1.0, 1.0 + 1e-15, 1.0 + 1e-12)]
    [False, False, True]
    >>> [surely_exceeds(v, t) for v, t in ((0.0, 0.0), (float("nan"), 1.0), (math.inf, 1e300))]
    [False, True, True]
    """
    v, t, margin = _rounding(value, threshold, rel, absolute)
    with np.errstate(invalid="ignore", over="ignore"):
        out = (v - margin > t) | np.isnan(v) | np.isnan(t)
    return bool(out) if out.ndim == 0 else out


def safe_upper(value: float, *, rel: float = LEAKAGE_REL_ERR, absolute: float = 0.0) -> float:
    """The smallest float threshold a computed leakage does not :func:`exceeds`: the value
    raised by its rounding margin, what may be promised for it (``inf`` stays ``inf``;
    NaN gives ``inf``, a value that cannot be checked bounds nothing).

    Examples
    --------
    >>> t = safe_upper(1.0)
    >>> 1.0 < t < 1.0 + 1e-12, exceeds(1.0, t), safe_upper(0.0)
    (True, False, 0.0)
    """
    v = float(value)
    if math.isnan(v) or math.isinf(v):
        return math.inf
    t = max((v + float(absolute)) / (1.0 - rel), v)
    for _ in range(64):  # the division is within a few ulps: step over them
        if not exceeds(v, t, rel=rel, absolute=absolute):
            return t
        t = math.nextafter(t, math.inf)
    return math.inf  # pragma: no cover


def up_text(value: float, digits: int = 6) -> str:
    """``value`` as text with at most ``digits`` significant digits, rounded up: a leakage
    or a guarantee is never printed below what was computed (``f"{x:.6g}"`` rounds to the
    nearest, which can be below it).

    Examples
    --------
    >>> up_text(1.9988444), up_text(2.0), up_text(0.1234561, 4), up_text(9.9999995)
    ('1.99885', '2', '0.1235', '10')
    """
    from decimal import ROUND_CEILING, Decimal

    v = float(value)
    text = f"{v:.{digits}g}"
    if not math.isfinite(v):
        return text
    exact = Decimal(v)  # the float's exact value (float(text) >= v is not: 0.1 rounds to it)
    if Decimal(text) >= exact:
        return text
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    up = exact.quantize(quantum, rounding=ROUND_CEILING)
    return f"{up:.{digits}g}" if Decimal(f"{up:.{digits}g}") >= exact else str(up)


def check_prior_matches(w: NDArray[Any], p: NDArray[Any], *, wname: str = "mechanism",
                        pname: str = "prior") -> None:
    """Raise if a prior's length differs from a mechanism's number of rows."""
    if w.shape[0] != p.shape[0]:
        raise ValidationError(
            f"{pname} has {p.shape[0]} entries but {wname} has {w.shape[0]} rows (inputs); "
            "they must match")


def to_jsonable(obj: Any) -> Any:
    """A JSON-safe copy of ``obj`` (the one coercion of the mechanism file and the command
    line's ``--json``): mappings with ``str`` keys, lists for tuples and arrays, Python
    scalars for numpy scalars, and ``"inf"``, ``"-inf"``, ``"nan"`` for non-finite floats
    (strict JSON has no such numbers)."""
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return "inf" if obj > 0 else ("-inf" if obj < 0 else "nan")
    return obj


def no_duplicate_keys(pairs: list[tuple[str, Any]], error: type[Exception] = ValidationError,
                      what: str = "JSON document") -> dict[str, Any]:
    """``json.loads`` ``object_pairs_hook`` refusing a key that appears twice in one object
    (readers disagree on which value counts: ``json.loads`` keeps the last).

    Examples
    --------
    >>> import json
    >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=no_duplicate_keys)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: JSON document has the key 'a' twice in one object; ...
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise error(
                f"{what} has the key {key!r} twice in one object; a duplicate key is "
                "ambiguous (readers may keep either value) and is refused")
        out[key] = value
    return out


def user_path(path: Any, name: str = "path") -> Path:
    """A path as the user meant it: a leading ``~`` or ``~user`` is that user's home
    folder, as pandas, polars and pyarrow read it (pyarrow expands it when it opens a
    file, so a path checked unexpanded could name another file than the one read).

    A result that would still start with ``~`` (``./~/data.csv``, a folder literally
    named ``~``, whose ``./`` pathlib drops, or a ``HOME`` of ``~root``) is made absolute
    from the working directory, so no later reader expands it again: applying this twice
    gives the same path. Nothing else changes: a relative path stays relative, links are
    not resolved.

    Raises
    ------
    ValidationError
        ``path`` is not a ``str`` or ``os.PathLike`` of one (``name`` says which
        parameter), or is empty, or starts with ``~/`` while ``HOME`` is empty (Python and
        pyarrow would read that as the root folder).

    Examples
    --------
    >>> import os
    >>> user_path("~/data.csv") == Path(os.path.expanduser("~")) / "data.csv"
    True
    >>> str(user_path("out/a~b.csv"))
    'out/a~b.csv'
    >>> user_path("./~/data.csv") == Path.cwd() / "~" / "data.csv"
    True
    >>> user_path(None, "output")
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: output must be a path (str or os.PathLike), got None
    """
    try:
        text = os.fspath(path)
    except TypeError:
        text = None
    if not isinstance(text, str):
        raise ValidationError(f"{name} must be a path (str or os.PathLike), got {path!r}")
    if not text:
        raise ValidationError(f"{name} must name a file or folder, got an empty path")
    if (text == "~" or text.startswith(("~/", "~" + os.sep))) \
            and os.environ.get("HOME", None) == "":
        raise ValidationError(f"{name} {text!r} starts with the home folder ~, but HOME "
                              "is set to an empty value; set HOME or give the full path")
    p = Path(os.path.expanduser(text))
    if p.parts and p.parts[0].startswith("~"):
        p = p.absolute()  # (a literal '~' folder: never read as a home folder later)
    return p


def same_numbers(a: Any, b: Any, tol: float = 1e-9) -> bool:
    """Whether two JSON-like structures agree: the same keys, lengths and strings, and
    numbers equal within ``tol`` (absolute); a NaN or an infinity equals nothing but the
    same infinity.

    Examples
    --------
    >>> same_numbers({"r": [0.1, 0.2]}, {"r": [0.1, 0.2 + 1e-12]})
    True
    >>> same_numbers({"r": 0.1}, {"r": float("nan")}), same_numbers([1], [1, 2])
    (False, False)
    """
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(same_numbers(a[k], b[k], tol) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_numbers(x, y, tol)
                                         for x, y in zip(a, b, strict=True))
    num = (int, float, np.integer, np.floating)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        x, y = float(a), float(b)
        if math.isinf(x) or math.isinf(y):
            return x == y
        return abs(x - y) <= tol  # False for NaN
    return type(a) is type(b) and bool(a == b)
