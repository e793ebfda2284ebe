"""Adding Laplace or Gaussian noise to binary labels ``x in {-1, +1}`` (vectorised).

Randomness follows pmlkit's policy (:func:`pmlkit.rng.resolve_rng`): by default a
cryptographically secure generator keyed from the operating system; an ``int`` seed or a
``numpy.random.Generator`` only when asked (research reproducibility, not for protecting
people).

Floating-point caveat (Mironov 2012, "On significance of the least significant bits for
differential privacy"): the continuous guarantees of Prop. Laplaceleakage and Section
"gauss" are about real-valued noise. Floating-point samples ``x + L`` are not real numbers:
the set of doubles reachable from ``x = -1`` and from ``x = +1`` differ in their low-order
bits, so an exact released value can reveal ``x`` with certainty and the PML guarantee can
fail. Released continuous values should be rounded to a coarse grid (and clamped), or,
better, use the binarised outputs (:func:`laplace_binarized`, :func:`gaussian_binarized`):
they release only a bit drawn from the mechanism's 2 x 2 channel
(:func:`pmlkit.additive.laplace_binarized_channel`), whose flip probability is used as is
(up to the 2^-53 resolution of a uniform double), so the discrete guarantees computed
from that channel (``pmlkit.eps_min`` ...) apply.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import DataError, ValidationError
from ._args import check_scale

__all__ = ["gaussian_binarized", "gaussian_noise", "laplace_binarized", "laplace_noise"]


def _as_pm1(labels: Any) -> np.ndarray:
    """Labels as an int8 array of -1/+1; anything else is a :class:`DataError`."""
    try:
        arr = np.asarray(labels)
    except (TypeError, ValueError) as exc:
        raise ValidationError("labels must be an array of -1/+1 values") from exc
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise DataError(
            f"labels must be numbers in {{-1, +1}} (map your two labels explicitly, e.g. "
            f"with pmlkit.additive.calibrate_*'s positive=), got dtype {arr.dtype}")
    ok = (arr == 1) | (arr == -1)
    if not ok.all():
        bad = arr[~ok]
        raise DataError(
            f"labels must be -1 or +1, got {bad.flat[0]!r} ({bad.size} value(s) outside "
            "{-1, +1})")
    return arr.astype(np.int8)


def _gen(rng: Any) -> np.random.Generator:
    from ..rng import resolve_rng

    return resolve_rng(rng).generator


def laplace_noise(labels: Any, b: Any, *, rng: Any = None) -> np.ndarray:
    """``Y = X + L`` with ``L ~ Laplace(0, b)`` i.i.d. per label (eq. laplacemech).

    Parameters
    ----------
    labels
        Array of -1/+1 (any shape).
    b
        Scale ``> 0`` (e.g. from :func:`pmlkit.additive.laplace_scale`).
    rng
        ``None`` (secure default), an int seed or a ``numpy.random.Generator``; see
        :func:`pmlkit.rng.resolve_rng`.

    Returns
    -------
    numpy.ndarray
        float64, same shape. See the module docstring for the floating-point caveat.
    """
    x = _as_pm1(labels)
    bb = check_scale(b, "b")
    return x + _gen(rng).laplace(0.0, bb, size=x.shape)


def gaussian_noise(labels: Any, sigma: Any, *, rng: Any = None) -> np.ndarray:
    """``Y = X + G`` with ``G ~ N(0, sigma^2)`` i.i.d. per label (Section "gauss").

    Same arguments and caveat as :func:`laplace_noise`.
    """
    x = _as_pm1(labels)
    s = check_scale(sigma, "sigma")
    return x + _gen(rng).normal(0.0, s, size=x.shape)


def _flip(x: np.ndarray, r: float, rng: Any) -> np.ndarray:
    flips = _gen(rng).random(size=x.shape) < r
    return np.where(flips, -x, x).astype(np.int8)


def laplace_binarized(labels: Any, b: Any, *, rng: Any = None) -> np.ndarray:
    """The thresholded Laplace output ``sign(X + L)`` (``+1`` at 0), sampled exactly.

    Draws from the 2 x 2 channel of :func:`pmlkit.additive.laplace_binarized_channel`:
    each label is flipped independently with probability ``e^{-1/b} / 2`` (the same law as
    thresholding ``X + L``, without producing the floating-point noise).

    Returns
    -------
    numpy.ndarray
        int8 array of -1/+1, same shape as ``labels``.
    """
    x = _as_pm1(labels)
    bb = check_scale(b, "b")
    return _flip(x, 0.5 * math.exp(-1.0 / bb), rng)


def gaussian_binarized(labels: Any, sigma: Any, *, rng: Any = None) -> np.ndarray:
    """The thresholded Gaussian output, sampled exactly from its 2 x 2 channel
    (flip probability ``Phi(-1/sigma)``, :func:`pmlkit.additive.gaussian_binarized_channel`).
    """
    from scipy.special import ndtr

    x = _as_pm1(labels)
    s = check_scale(sigma, "sigma")
    return _flip(x, float(ndtr(-1.0 / s)), rng)
