"""Adding Laplace or Gaussian noise to binary labels ``x in {-1, +1}`` (vectorised).

Randomness follows pmlkit's policy (:func:`pmlkit.rng.resolve_rng`): by default a
cryptographically secure generator keyed from the operating system; an ``int`` seed or a
``numpy.random.Generator`` only when asked (research reproducibility, not for protecting
people).

What is released. :func:`laplace_noise` and :func:`gaussian_noise` release values of the grid
``g Z``, ``g = 2^-j``: ``Y = (x/g + K) g`` with the integer ``K`` drawn exactly from the
discrete Laplace or discrete Gaussian law by integer-only samplers
(:mod:`pmlkit.additive.grid`). A float ``x + noise`` is never computed, every released
float is exact, and both inputs reach the same set of values. Their guarantee is that of
the grid mechanism (:func:`pmlkit.additive.laplace_grid_eps`,
:func:`pmlkit.additive.gaussian_grid_delta1_interval`), which the calibrations report.

Why not raw floats (Mironov 2012, "On significance of the least significant bits for
differential privacy"): the doubles reachable from ``-1 + L`` and from ``+1 + L`` differ in
their low-order bits, so a released value can reveal ``x`` with certainty and the PML
guarantee fails. That release survives only as :func:`unsafe_float_laplace_noise` /
:func:`unsafe_float_gaussian_noise` for research that never publishes the values (it is
not exported from ``pmlkit``).

The binarised outputs (:func:`laplace_binarized`, :func:`gaussian_binarized`) release only a
bit drawn from the mechanism's 2 x 2 channel
(:func:`pmlkit.additive.laplace_binarized_channel`), whose flip probability is used as is
(up to the 2^-53 resolution of a uniform double), so the discrete guarantees computed
from that channel (``pmlkit.eps_min`` ...) apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataError, ValidationError
from ._args import check_scale
from .gaussian import gaussian_flip_probability
from .laplace import laplace_flip_probability

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike, NDArray

    from ._args import FloatArray

__all__ = [
    "gaussian_binarized",
    "gaussian_noise",
    "laplace_binarized",
    "laplace_noise",
    "unsafe_float_gaussian_noise",
    "unsafe_float_laplace_noise",
]


def _as_pm1(labels: ArrayLike) -> NDArray[np.int8]:
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


def laplace_noise(labels: ArrayLike, b: float, *, granularity: float | None = None,
                  rng: Any = None) -> FloatArray:
    """``Y = X + L`` released on the grid ``g Z``: ``L`` discrete Laplace (eq. laplacemech).

    ``Y = (X/g + K) g`` with ``P(K = k) = tanh(1/(2n)) e^{-|k|/n}``, ``n = ceil(b/g)``,
    sampled exactly with integers only (:mod:`pmlkit.additive.grid`). The per-outcome
    leakage is largest at ``Y = +-1`` and equals Prop. Laplaceleakage at the released scale
    ``n g >= b`` (:func:`pmlkit.additive.laplace_grid_eps`), so a ``b`` calibrated for the
    continuous mechanism keeps its eps.

    Parameters
    ----------
    labels
        Array of -1/+1 (any shape).
    b
        Scale ``> 0`` (e.g. from :func:`pmlkit.additive.laplace_scale`).
    granularity
        The grid step ``g = 2^-j``, ``0 <= j <= 30``. Default: the largest power of two
        ``<= b 2^-20`` (clipped to that range); :func:`pmlkit.additive.laplace_grid` shows
        the grid and released scale.
    rng
        ``None`` (secure default), an int seed or a ``numpy.random.Generator``; see
        :func:`pmlkit.rng.resolve_rng`.

    Returns
    -------
    numpy.ndarray
        float64, same shape, every value an exact multiple of ``g``.

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit.additive import laplace_noise
    >>> y = laplace_noise(np.ones(1000), 1.0, granularity=0.25, rng=0)
    >>> bool((y % 0.25 == 0).all())          # every value on the grid
    True
    >>> abs(float(y.mean()) - 1.0) < 0.15    # centred on the label (sd of the mean 0.045)
    True
    """
    from .grid import indices_to_values, laplace_grid, sample_grid_indices

    x = _as_pm1(labels)
    grid = laplace_grid(b, granularity)
    return indices_to_values(sample_grid_indices(x, grid, _gen(rng)), grid, x.shape)


def gaussian_noise(labels: ArrayLike, sigma: float, *, granularity: float | None = None,
                   rng: Any = None) -> FloatArray:
    """``Y = X + G`` released on the grid ``g Z``: ``G`` discrete Gaussian (Section "gauss").

    ``Y = (X/g + K) g`` with ``P(K = k) ∝ e^{-k^2/(2n^2)}``, ``n = ceil(sigma/g)`` (the
    released sigma is ``n g``), sampled exactly with integers only. Its (eps, delta)
    guarantee is the grid's own (:func:`pmlkit.additive.gaussian_grid_delta1_interval`,
    reported by :func:`pmlkit.additive.calibrate_gaussian`), not the continuous one.

    Parameters
    ----------
    labels, rng
        As for :func:`laplace_noise`.
    sigma
        ``> 0``; at most ``2^14`` grid steps.
    granularity
        ``g = 2^-j``, ``0 <= j <= 30``. Default: the largest power of two
        ``<= sigma 2^-10`` (clipped); see :func:`pmlkit.additive.gaussian_grid`.

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit.additive import gaussian_noise
    >>> y = gaussian_noise(-np.ones(1000), 2.0, rng=0)
    >>> bool((y % 2.0**-9 == 0).all())       # the default grid of sigma = 2
    True
    >>> abs(float(y.mean()) + 1.0) < 0.2     # centred on -1 (sd of the mean 0.063)
    True
    """
    from .grid import gaussian_grid, indices_to_values, sample_grid_indices

    x = _as_pm1(labels)
    grid = gaussian_grid(sigma, granularity)
    return indices_to_values(sample_grid_indices(x, grid, _gen(rng)), grid, x.shape)


def unsafe_float_laplace_noise(labels: ArrayLike, b: float, *, rng: Any = None) -> FloatArray:
    """UNSAFE: the float64 value ``x + L``, ``L ~ Laplace(0, b)``. Never publish its output.

    The low-order bits of ``x + L`` depend on ``x``: for outputs in ``[1, 2)``, ``-1 + L``
    is a multiple of ``2^-51`` while ``1 + L`` is rounded to ``2^-52``, so the last mantissa
    bit identifies ``x = +1`` in a few percent of releases, and the two inputs reach
    (almost) disjoint sets of doubles: no PML guarantee holds for the released values. Kept
    for research that only post-processes the values internally (e.g. thresholds them)
    and for the tests that demonstrate the attack. Use :func:`laplace_noise` to release.

    Examples
    --------
    Thresholding at 0 inside research code is fine (only the sign leaves):

    >>> from pmlkit.additive.sampling import unsafe_float_laplace_noise
    >>> bits = unsafe_float_laplace_noise([1] * 20000, 1.0, rng=0) >= 0
    >>> abs(float(bits.mean()) - (1 - 0.5 * 2.718281828**-1)) < 0.01   # 1 - e^{-1}/2
    True
    """
    x = _as_pm1(labels)
    bb = check_scale(b, "b")
    out: FloatArray = x + _gen(rng).laplace(0.0, bb, size=x.shape)
    return out


def unsafe_float_gaussian_noise(labels: ArrayLike, sigma: float, *,
                                rng: Any = None) -> FloatArray:
    """UNSAFE: the float64 value ``x + G``, ``G ~ N(0, sigma^2)``. Never publish its output.

    Same flaw as :func:`unsafe_float_laplace_noise` (the low bits reveal ``x``). Use
    :func:`gaussian_noise` to release.

    Examples
    --------
    >>> from pmlkit.additive.sampling import unsafe_float_gaussian_noise
    >>> bits = unsafe_float_gaussian_noise([-1] * 20000, 1.0, rng=0) < 0
    >>> abs(float(bits.mean()) - 0.841345) < 0.01          # Phi(1)
    True
    """
    x = _as_pm1(labels)
    s = check_scale(sigma, "sigma")
    out: FloatArray = x + _gen(rng).normal(0.0, s, size=x.shape)
    return out


def _flip(x: NDArray[np.int8], r: float, rng: Any) -> NDArray[np.int8]:
    flips = _gen(rng).random(size=x.shape) < r
    return np.where(flips, -x, x).astype(np.int8)


def laplace_binarized(labels: ArrayLike, b: float, *, rng: Any = None) -> NDArray[np.int8]:
    """The thresholded Laplace output ``sign(X + L)`` (``+1`` at 0), sampled exactly.

    Draws from the 2 x 2 channel of :func:`pmlkit.additive.laplace_binarized_channel`:
    each label is flipped independently with probability ``e^{-1/b} / 2`` (the same law as
    thresholding ``X + L``, without producing the floating-point noise).

    Returns
    -------
    numpy.ndarray
        int8 array of -1/+1, same shape as ``labels``.

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit.additive import laplace_binarized
    >>> bits = laplace_binarized(np.ones(20000), 1.0, rng=0)
    >>> abs(float((bits == -1).mean()) - 0.18394) < 0.01    # e^{-1} / 2
    True
    """
    x = _as_pm1(labels)
    return _flip(x, laplace_flip_probability(b), rng)


def gaussian_binarized(labels: ArrayLike, sigma: float, *,
                       rng: Any = None) -> NDArray[np.int8]:
    """The thresholded Gaussian output, sampled exactly from its 2 x 2 channel
    (flip probability ``Phi(-1/sigma)``, :func:`pmlkit.additive.gaussian_binarized_channel`).

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit.additive import gaussian_binarized
    >>> bits = gaussian_binarized(-np.ones(20000), 1.0, rng=0)
    >>> abs(float((bits == 1).mean()) - 0.158655) < 0.01    # Phi(-1)
    True
    """
    x = _as_pm1(labels)
    return _flip(x, gaussian_flip_probability(sigma), rng)
