"""The shared argument checks: every rejection names the parameter and the value."""

from __future__ import annotations

import numpy as np
import pytest

from pmlkit._validation import (
    as_distribution,
    as_mechanism,
    check_count,
    check_delta,
    check_eps,
    check_radius,
    check_real,
)
from pmlkit.errors import PMLError, ValidationError


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, -1e-12, "0.1", None, True])
def test_eps_rejects(bad):
    with pytest.raises(ValidationError, match="eps"):
        check_eps(bad)


@pytest.mark.parametrize("bad", [-1.0, np.inf, np.nan])
def test_eps_message_states_the_range_it_enforces(bad):
    """inf is refused, so the stated range is [0, inf), never [0, inf] (which reads as
    "inf is allowed")."""
    with pytest.raises(ValidationError, match=r"eps must be in \[0, inf\)") as err:
        check_eps(bad)
    assert "inf]" not in str(err.value)


def test_an_end_that_accepts_inf_is_closed():
    assert check_real(np.inf, "x", low=0.0, allow_inf=True) == np.inf
    with pytest.raises(ValidationError, match=r"x must be in \[0, inf\], got -1"):
        check_real(-1.0, "x", low=0.0, allow_inf=True)
    with pytest.raises(ValidationError, match=r"x must be in \(-inf, 1\], got 2"):
        check_real(2.0, "x", high=1.0)


@pytest.mark.parametrize("good", [0, 0.0, np.float32(0.5), np.int64(3), np.array(2.0)])
def test_eps_accepts_numpy_scalars(good):
    assert check_eps(good) == pytest.approx(float(good))


@pytest.mark.parametrize("bad", [0, -0.1, 1.0000001, np.nan, np.inf])
def test_delta_range(bad):
    with pytest.raises(ValidationError, match=r"delta must be in \(0, 1\]"):
        check_delta(bad)


def test_delta_one_allowed_and_error_is_project_error():
    assert check_delta(1) == 1.0
    with pytest.raises(PMLError):
        check_delta(2)
    with pytest.raises(ValueError):
        check_delta(2)


@pytest.mark.parametrize("bad", [0, -3, 1.5, np.nan, "7", True])
def test_count(bad):
    with pytest.raises(ValidationError, match="m must be an integer"):
        check_count(bad)


def test_count_accepts_integral_float_and_numpy():
    assert check_count(1e12) == 10**12
    assert check_count(np.int32(5)) == 5


def test_radius():
    assert check_radius(np.float32(0.25)) == 0.25
    with pytest.raises(ValidationError, match="beta"):
        check_radius(-0.1)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no numpy overflow warning
@pytest.mark.parametrize(
    "bad, pattern",
    [
        ([0.5, np.nan], "NaN"),
        ([0.5, np.inf], "inf"),
        ([1.2, -0.2], ">= 0"),
        ([0.5, 0.49], "sum to 1"),
        ([[0.5, 0.5]], "1-D"),
        ([], "empty"),
        (["a", "b"], "real numbers"),
        ([1.7e308, 1.7e308], "got sum inf"),  # the sum overflows: an error, no warning
    ],
)
def test_distribution_rejects(bad, pattern):
    with pytest.raises(ValidationError, match=pattern):
        as_distribution(bad)


def test_distribution_tolerance_is_documented_1e9():
    assert as_distribution([0.5, 0.5 + 5e-10]).shape == (2,)
    with pytest.raises(ValidationError):
        as_distribution([0.5, 0.5 + 5e-9])


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no numpy overflow warning
def test_mechanism_rows():
    with pytest.raises(ValidationError, match="row 1 sums to"):
        as_mechanism([[0.5, 0.5], [0.2, 0.7]])
    with pytest.raises(ValidationError, match="2-D"):
        as_mechanism([0.5, 0.5])
    with pytest.raises(ValidationError, match="row 0 sums to inf"):
        as_mechanism([[1.7e308, 1.7e308]])
    out = as_mechanism(np.eye(3, dtype=np.float32))
    assert out.dtype == np.float64
