"""NumericGrid: exact values <-> codes, the clamp/round policy and its counts, validation.

Expected codes are computed independently with exact rationals (``fractions``): the
nearest grid point, ties to the larger one, after clamping."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmlkit.errors import ValidationError
from pmlkit.numeric.grid import NumericGrid


def _brute(values, lower, step, n):
    lo, st_ = Fraction(lower), Fraction(step)
    hi = lo + (n - 1) * st_
    codes, low, high, rounded = [], 0, 0, 0
    for v in values:
        fv = Fraction(v)
        if fv < lo:
            low += 1
            codes.append(0)
            continue
        if fv > hi:
            high += 1
            codes.append(n - 1)
            continue
        k = (fv - lo) / st_
        base = int(k)  # floor, k >= 0
        frac = k - base
        code = base + 1 if frac >= Fraction(1, 2) else base
        rounded += frac != 0
        codes.append(min(code, n - 1))
    return codes, low, high, rounded


@settings(max_examples=60, deadline=None)
@given(lower=st.integers(-50, 50), step=st.integers(1, 7), n=st.integers(2, 30),
       values=st.lists(st.integers(-300, 300), min_size=1, max_size=40))
def test_integer_grid_matches_exact_rounding(lower, step, n, values):
    g = NumericGrid(lower, lower + (n - 1) * step, step)
    enc = g.encode(np.array(values, dtype=np.int64))
    codes, low, high, rounded = _brute(values, lower, step, n)
    assert enc.codes.tolist() == codes
    assert (enc.clamped_low, enc.clamped_high, enc.rounded) == (low, high, rounded)
    out = g.decode(enc.codes)
    assert out.dtype == np.int64  # integer columns stay integer


@pytest.mark.parametrize("dtype", ["int64", "uint64", "int8", "uint8", "int32"])
@pytest.mark.parametrize(("lower", "upper", "step"), [(20, 80, 10), (-5, 5, 1)])
def test_integer_extremes_are_clamped_not_wrapped(dtype, lower, upper, step):
    # 2 * v overflowed int64 from |v| >= 2**62 (a uint64 above 2**63 - 1 wrapped to a
    # negative number): INT64_MAX, a common sentinel, was clamped to the LOW end, or
    # (on a grid around 0) landed inside it as an exact point, uncounted
    info = np.iinfo(dtype)
    candidates = (int(info.min), int(info.max), int(info.max) - 1, int(info.max) // 2,
                  int(info.min) // 2, 2**62, 2**62 - 1, -(2**62), 0, lower, upper,
                  lower + 1, upper + 1)
    values = sorted({v for v in candidates if info.min <= v <= info.max})
    n = (upper - lower) // step + 1
    g = NumericGrid(lower, upper, step)
    enc = g.encode(np.array(values, dtype=dtype))
    codes, low, high, rounded = _brute(values, lower, step, n)
    assert enc.codes.tolist() == codes
    assert (enc.clamped_low, enc.clamped_high, enc.rounded) == (low, high, rounded)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-2, 3, allow_nan=False), min_size=1, max_size=40))
def test_decimal_grid_matches_exact_rounding(values):
    g = NumericGrid("0", "1", "0.1")
    enc = g.encode(np.array(values))
    # exact: compare the float value (as the rational it is) with the float midpoints,
    # which are the correctly rounded k/10 + 1/20; the brute force uses the same midpoints
    mids = [float(Fraction(2 * k + 1, 20)) for k in range(10)]
    want = [int(np.searchsorted(mids, v, side="right")) for v in values]
    assert enc.codes.tolist() == want
    assert enc.clamped_low == sum(v < 0 for v in values)
    assert enc.clamped_high == sum(v > 1 for v in values)
    assert g.decode(enc.codes).dtype == np.float64


def test_labels_and_policy_are_reported():
    g = NumericGrid(18, 90, 1)
    assert g.n == 73 and g.labels[0] == 18 and isinstance(g.labels[0], int)
    enc = g.encode(np.array([10, 18, 50.5, 95, 90]))
    assert enc.codes.tolist() == [0, 0, 33, 72, 72]
    assert enc.to_dict() == {"rows": 5, "clamped_low": 1, "clamped_high": 1, "rounded": 1}
    assert g.to_dict()["policy"].startswith("clamp")
    assert NumericGrid.parse("0:1:0.25").labels == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert np.array_equal(g.counts([18, 18, 19]), np.bincount([0, 0, 1], minlength=73))


@pytest.mark.parametrize("args, words", [
    ((0, 10, 3), "whole number"),
    ((5, 5, 1), "upper must be > lower"),
    ((0, 10, 0), "step must be > 0"),
    ((0, 10, -1), "step must be > 0"),
    ((0, float("nan"), 1), "finite"),
    ((True, 10, 1), "real number"),
    ((0, 10 ** 6, 1), "at most"),
])
def test_bad_grids_are_refused(args, words):
    with pytest.raises(ValidationError, match=words):
        NumericGrid(*args)


def test_bad_values_are_refused():
    g = NumericGrid(0, 10, 1)
    with pytest.raises(ValidationError, match="finite"):
        g.encode([1.0, float("nan")])
    with pytest.raises(ValidationError, match="integers or floats"):
        g.encode(["a", "b"])
    with pytest.raises(ValidationError, match="codes must be in"):
        g.decode([0, 11])
    with pytest.raises(ValidationError, match="LOWER:UPPER:STEP"):
        NumericGrid.parse("18-90")
