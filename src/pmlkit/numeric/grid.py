"""A numeric column's declared grid ``lower, lower + step, ..., upper`` (N points): the
ordinal alphabet every numeric mechanism of :mod:`pmlkit.numeric` works on.

Policy (recorded by :meth:`NumericGrid.to_dict`, counted by :meth:`NumericGrid.encode`):

- a value below ``lower`` or above ``upper`` is **clamped** to the nearest end;
- a value inside the range but between two grid points is **rounded** to the nearest point,
  a tie (exactly half-way) going to the larger point.

Exactness. The grid is held as exact rationals (``fractions.Fraction`` of the decimal text
of ``lower``, ``upper`` and ``step``, so ``0.1`` means one tenth). Values are mapped to codes
by comparing them with the half-way points, never by ``(v - lower) / step`` in floating
point: for an integer grid and integer values the comparison is done in ``int64``
(``2 v`` against ``2 lower + (2k + 1) step``), so it is exact; for a float grid the
half-way points are the correctly rounded floats of the exact rationals and the comparison
of a float value with them is exact. Codes go back to values by table lookup (a float grid)
or by ``lower + code * step`` in integers (an integer grid): integer columns stay integer.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import fmt, readonly
from ..errors import ValidationError

__all__ = ["MAX_GRID_POINTS", "GridEncoding", "NumericGrid"]

#: Largest grid accepted (the mechanisms are N x N matrices; N^2 doubles at this size
#: are 800 MB, far beyond what a design LP can solve).
MAX_GRID_POINTS = 10_000


def _exact(value: Any, name: str) -> tuple[Fraction, bool]:
    """``value`` as an exact rational and whether it is an integer type."""
    if isinstance(value, (bool, np.bool_)):
        raise ValidationError(f"{name} must be a real number, got {value!r}")
    if isinstance(value, numbers.Integral):
        return Fraction(int(value)), True
    if isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x):
            raise ValidationError(f"{name} must be finite, got {value!r}")
        return Fraction(repr(x)), False  # the decimal text: 0.1 is one tenth
    if isinstance(value, str):
        try:
            f = Fraction(value.strip())
        except (ValueError, ZeroDivisionError) as exc:
            raise ValidationError(f"{name} must be a number, got {value!r}") from exc
        txt = value.strip().lstrip("+-")
        return f, txt.isdigit()
    raise ValidationError(f"{name} must be a real number, got {fmt(value)}")


@dataclass(frozen=True)
class GridEncoding:
    """Values mapped onto a grid (:meth:`NumericGrid.encode`).

    Attributes
    ----------
    codes
        ``int64`` grid indices ``0..N-1`` (read-only).
    clamped_low, clamped_high
        How many values were below ``lower`` / above ``upper`` (moved to the ends).
    rounded
        How many values inside the range were not grid points (moved to the nearest point).

    Examples
    --------
    >>> enc = NumericGrid(0, 10, 2).encode([-1, 3, 4, 12])
    >>> enc.codes.tolist(), enc.clamped, enc.rounded
    ([0, 2, 2, 5], 2, 1)
    """

    codes: NDArray[np.int64] = field(repr=False)
    clamped_low: int
    clamped_high: int
    rounded: int

    @property
    def clamped(self) -> int:
        """``clamped_low + clamped_high``."""
        return self.clamped_low + self.clamped_high

    def to_dict(self) -> dict[str, int]:
        """The counts, JSON-ready (a manifest records them)."""
        return {"rows": int(self.codes.size), "clamped_low": self.clamped_low,
                "clamped_high": self.clamped_high, "rounded": self.rounded}


@dataclass(frozen=True, eq=False)
class NumericGrid:
    """The grid ``lower + step * {0, ..., N-1}`` with ``upper = lower + (N-1) step``.

    Parameters
    ----------
    lower, upper, step
        Real numbers (or their decimal text) with ``lower < upper``, ``step > 0`` and
        ``(upper - lower) / step`` a whole number (exactly, in rationals). All three
        integers make an integer grid (values and labels are Python/numpy integers).

    Examples
    --------
    >>> g = NumericGrid(18, 90, 1)
    >>> g.n, g.is_integer, g.labels[:3]
    (73, True, (18, 19, 20))
    >>> enc = g.encode([17, 18, 40, 95])
    >>> enc.codes.tolist(), enc.clamped_low, enc.clamped_high, enc.rounded
    ([0, 0, 22, 72], 1, 1, 0)
    >>> g.decode(enc.codes).tolist()
    [18, 18, 40, 90]
    >>> h = NumericGrid("0", "1", "0.1")
    >>> h.n, h.encode([0.25, 0.35, 0.04]).codes.tolist()  # ties go up: 0.25 -> 0.3
    (11, [3, 4, 0])
    >>> NumericGrid.parse("18:90:1") == g
    True
    """

    lower: Any
    upper: Any
    step: Any
    _lo: Fraction = field(init=False, repr=False)
    _step: Fraction = field(init=False, repr=False)
    _n: int = field(init=False, repr=False)
    _int: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        lo, ilo = _exact(self.lower, "lower")
        hi, ihi = _exact(self.upper, "upper")
        st, ist = _exact(self.step, "step")
        if st <= 0:
            raise ValidationError(f"step must be > 0, got {self.step!r}")
        if hi <= lo:
            raise ValidationError(
                f"upper must be > lower, got lower={self.lower!r}, upper={self.upper!r}")
        k = (hi - lo) / st
        if k.denominator != 1:
            raise ValidationError(
                f"(upper - lower) / step must be a whole number, got ({self.upper!r} - "
                f"{self.lower!r}) / {self.step!r} = {float(k)!r}")
        n = int(k) + 1
        if n > MAX_GRID_POINTS:
            raise ValidationError(
                f"the grid {self.lower!r}:{self.upper!r}:{self.step!r} has {n} points; at "
                f"most {MAX_GRID_POINTS} are allowed (choose a larger step)")
        is_int = ilo and ihi and ist and lo.denominator == 1 and st.denominator == 1
        set_ = object.__setattr__
        set_(self, "_lo", lo)
        set_(self, "_step", st)
        set_(self, "_n", n)
        set_(self, "_int", bool(is_int))

    @classmethod
    def parse(cls, text: str) -> NumericGrid:
        """``"LOWER:UPPER:STEP"`` (the command-line form) as a grid.

        Examples
        --------
        >>> NumericGrid.parse("0:1:0.25").labels
        (0.0, 0.25, 0.5, 0.75, 1.0)
        """
        if not isinstance(text, str) or text.count(":") != 2:
            raise ValidationError(
                f"a numeric grid must be written LOWER:UPPER:STEP (e.g. 18:90:1), got "
                f"{fmt(text)}")
        a, b, c = (t.strip() for t in text.split(":"))
        return cls(a, b, c)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NumericGrid):
            return NotImplemented
        return (self._lo, self._step, self._n, self._int) == (
            other._lo, other._step, other._n, other._int)

    def __hash__(self) -> int:
        return hash((self._lo, self._step, self._n, self._int))

    # -- the points ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        """The number of grid points N."""
        return self._n

    @property
    def is_integer(self) -> bool:
        """Whether the grid (and so its values) is integer."""
        return self._int

    @property
    def exact_points(self) -> tuple[Fraction, ...]:
        """The points as exact rationals."""
        return tuple(self._lo + k * self._step for k in range(self._n))

    @property
    def values(self) -> NDArray[Any]:
        """The points as a read-only ``int64`` (integer grid) or ``float64`` array."""
        if self._int:
            lo, st = int(self._lo), int(self._step)
            return readonly(lo + st * np.arange(self._n, dtype=np.int64), np.int64)
        return readonly(np.array([float(x) for x in self.exact_points]))

    @property
    def labels(self) -> tuple[Any, ...]:
        """The points as Python ``int`` or ``float`` (the labels of a mechanism's inputs and
        outputs)."""
        if self._int:
            return tuple(int(v) for v in self.values)
        return tuple(float(x) for x in self.exact_points)

    @property
    def step_value(self) -> float:
        """``step`` as a float."""
        return float(self._step)

    def loss_matrix(self, utility: str = "abs") -> NDArray[np.float64]:
        """``d(x_i, x_j)``: ``|x_i - x_j|`` (``"abs"``) or ``(x_i - x_j)^2`` (``"squared"``),
        in the column's units.

        Examples
        --------
        >>> NumericGrid(0, 2, 1).loss_matrix("squared").tolist()
        [[0.0, 1.0, 4.0], [1.0, 0.0, 1.0], [4.0, 1.0, 0.0]]
        """
        k = np.arange(self._n, dtype=np.float64)
        d = np.abs(k[:, None] - k[None, :]) * float(self._step)
        if utility == "abs":
            return d
        if utility == "squared":
            return d * d
        raise ValidationError(f"utility must be 'abs' or 'squared', got {fmt(utility)}")

    # -- values <-> codes -------------------------------------------------------------
    def encode(self, values: ArrayLike) -> GridEncoding:
        """Map values to grid codes by the clamp/round policy (module docstring).

        Parameters
        ----------
        values
            1-D numbers (integers or floats). NaN, infinities and non-numeric entries are
            refused (the release path decides what a missing value becomes).

        Raises
        ------
        ValidationError
            For non-numeric input, NaN or infinite values.
        """
        arr = np.asarray(values)
        if arr.ndim != 1:
            arr = arr.reshape(-1) if arr.ndim == 0 else arr
            if arr.ndim != 1:
                raise ValidationError(f"values must be 1-D, got shape {arr.shape}")
        if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
            raise ValidationError(
                f"values must be integers or floats for a numeric grid, got dtype "
                f"{arr.dtype} ({fmt(arr[:5])})")
        n = self._n
        if arr.dtype.kind in "iu" and self._int:
            # compared in int64 without doubling (2 * v overflows from |v| >= 2**62, and a
            # uint64 above 2**63 - 1 wraps to a negative number): a value above the int64
            # range is above the grid; the values inside are in [lo, hi], so with lo in the
            # int64 range v - lo is in [0, 2**64): taken in uint64 (mod 2**64, exact), as
            # hi - lo may pass 2**63 - 1
            lo, st = int(self._lo), int(self._step)
            hi = lo + st * (n - 1)
            i64 = np.iinfo(np.int64).max
            if arr.dtype.kind == "u":
                v = np.where(arr > np.uint64(i64), np.uint64(i64), arr).astype(np.int64)
            else:
                v = arr.astype(np.int64)
            below = v < lo
            above = v > hi
            inside = ~(below | above)
            codes = np.where(above, n - 1, 0).astype(np.int64)
            exact = np.ones(v.shape[0], dtype=bool)
            if lo < -i64 - 1 or st >= 2**64:
                # (v - lo may reach 2**64 or more, the step not fit uint64: a grid wider
                # than the int64 range, in Python's integers)
                d = v[inside].astype(object) - lo
                q, r = d // st, d % st
                codes[inside] = (q + (r >= st - r)).astype(np.int64)
                exact[inside] = (r == 0).astype(bool)
            else:
                ust = np.uint64(st)
                q, r = np.divmod(v[inside].astype(np.uint64) - np.uint64(lo % 2**64), ust)
                codes[inside] = (q + (r >= ust - r)).astype(np.int64)  # nearest, tie up
                exact[inside] = r == 0
        else:
            x = arr.astype(np.float64)
            bad = ~np.isfinite(x)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValidationError(
                    f"values must be finite numbers, got {x[i]!r} at position {i} "
                    f"({int(bad.sum())} such values); drop or impute missing values first")
            pts = self.exact_points
            mids = np.array([float(pts[k] + self._step / 2) for k in range(n - 1)])
            codes = np.searchsorted(mids, x, side="right").astype(np.int64)
            fpts = np.array([float(p) for p in pts])
            below = x < fpts[0]
            above = x > fpts[-1]
            exact = x == fpts[codes]
        inside = ~(below | above)
        return GridEncoding(codes=readonly(codes, np.int64), clamped_low=int(below.sum()),
                            clamped_high=int(above.sum()),
                            rounded=int((inside & ~exact).sum()))

    def decode(self, codes: ArrayLike) -> NDArray[Any]:
        """Grid values of codes ``0..N-1`` (``int64`` for an integer grid, else ``float64``).

        Raises
        ------
        ValidationError
            For codes that are not integers in ``0..N-1``.
        """
        c = np.asarray(codes)
        if c.dtype.kind not in "iu":
            raise ValidationError(f"codes must be integers, got dtype {c.dtype}")
        if c.size and (int(c.min()) < 0 or int(c.max()) >= self._n):
            raise ValidationError(
                f"codes must be in 0..{self._n - 1}, got values in "
                f"{int(c.min())}..{int(c.max())}")
        return np.asarray(np.asarray(self.values)[c])

    def counts(self, values: ArrayLike) -> NDArray[np.int64]:
        """Counts of each grid point after :meth:`encode` (length N)."""
        enc = self.encode(values)
        return np.bincount(enc.codes, minlength=self._n).astype(np.int64)

    def to_dict(self) -> dict[str, Any]:
        """The grid and its policy, JSON-ready.

        Examples
        --------
        >>> NumericGrid(18, 90, 1).to_dict()["points"]
        73
        """
        def num(f: Fraction) -> Any:
            return int(f) if self._int else float(f)

        return {"lower": num(self._lo), "upper": num(self._lo + (self._n - 1) * self._step),
                "step": num(self._step), "points": self._n, "integer": self._int,
                "policy": "clamp to [lower, upper]; round to the nearest point, ties up"}

    def __repr__(self) -> str:
        d = self.to_dict()
        return f"NumericGrid({d['lower']!r}, {d['upper']!r}, {d['step']!r})"
