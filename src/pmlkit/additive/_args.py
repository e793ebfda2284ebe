"""Argument checks specific to binary additive-noise mechanisms.

Built on :mod:`pmlkit._validation` (which does the type/NaN/range work); these helpers only
add the binary-alphabet conventions: a prior is ``(P(-1), P(+1))``, a "p_min" lies in
``[0, 1/2]``, an interval of ``P(+1)`` lies in ``[0, 1]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import as_distribution, check_real, fmt
from ..errors import ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

    #: float64 arrays, the numeric type of the additive modules
    FloatArray = NDArray[np.float64]


def check_scale(value: Any, name: str) -> float:
    """A noise scale (Laplace ``b`` or Gaussian ``sigma``): finite and ``> 0``."""
    return check_real(value, name, low=0.0, low_open=True)


def check_p_min(value: Any, name: str = "p_min") -> float:
    """The smaller of the two probabilities of a binary prior: in ``[0, 1/2]``."""
    return check_real(value, name, low=0.0, high=0.5)


def as_binary_prior(prior: Any, name: str = "prior") -> tuple[float, float]:
    """``(P(-1), P(+1))`` from a length-2 probability vector (validated, never renormalised)."""
    p = as_distribution(prior, name)
    if p.shape != (2,):
        raise ValidationError(
            f"{name} must be a binary distribution (P(-1), P(+1)) with 2 entries, "
            f"got {p.shape[0]} entries: {fmt(p)}")
    return float(p[0]), float(p[1])


def as_p_hat(p_hat: Any, name: str = "p_hat") -> tuple[float, float]:
    """``(P(-1), P(+1))`` from a binary distribution, or from a scalar meaning ``P(+1)``."""
    if np.ndim(p_hat) == 0 and not isinstance(p_hat, str | bytes):
        q = check_real(p_hat, f"{name} (a scalar means P(+1))", low=0.0, high=1.0)
        return 1.0 - q, q
    return as_binary_prior(p_hat, name)


def check_interval(lo: Any, hi: Any, name: str = "P(+1)") -> tuple[float, float]:
    """An interval ``[lo, hi]`` of ``P(+1)`` inside ``[0, 1]`` with ``lo <= hi``."""
    a = check_real(lo, f"lower bound of {name}", low=0.0, high=1.0)
    b = check_real(hi, f"upper bound of {name}", low=0.0, high=1.0)
    if a > b:
        raise ValidationError(
            f"interval of {name} must have lower <= upper, got [{a!r}, {b!r}]")
    return a, b
