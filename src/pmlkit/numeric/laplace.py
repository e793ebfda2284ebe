"""Discrete Laplace (two-sided geometric) noise on an N-point grid, in grid steps.

Noise ``K`` on the integers with ``P(K = k) = (1 - r)/(1 + r) r^|k|``, ``0 <= r < 1``
(``r = e^{-step/b}`` matches a Laplace of scale ``b`` in the column's units). For the
input code ``i`` the output code is ``i + K``.

**Clamped channel** (the output moved back into ``0..N-1``, a post-processing). With
``c = (1 - r)/(1 + r)``:

    W[i, j] = c r^|i - j|            for 0 < j < N - 1,
    W[i, 0] = r^i / (1 + r),         W[i, N-1] = r^(N-1-i) / (1 + r)

(the ends collect the geometric tails ``sum_{k >= i} c r^k``). It is an N x N matrix, so
its PML, worst case over a set, certificates and audits are those of any pmlkit matrix.
:func:`log_clamped_channel` gives the logarithms exactly (no underflow for tiny ``r``).

**Unclamped** (outputs on all integers, or the continuous Laplace of scale ``b`` added to
the points): every input's noise has the same shape, so for an output ``y``

    exp pml(y) = max_i f(y - x_i) / sum_i p_i f(y - x_i),

and ``f(y - x_i) / f(y - x_j)`` depends on ``y`` only through ``|y - x_i| - |y - x_j|``.
Between two adjacent points ``x_k <= y <= x_{k+1}`` the numerator and denominator are
``A e^{-y/b}`` / ``B e^{-y/b} + C e^{y/b}``-type sums whose ratio is monotone in ``y``, and
beyond the ends it is constant, so the supremum over all real outputs is attained at a grid
point: ``sup_y pml(y) = max_j -log sum_i p_i r^|i - j|`` (the maximum over ``i`` is ``i = j``,
value 1). :func:`unclamped_pml` computes these N values in O(N^2) (in logs). At ``N = 2``
(points ``-1, +1``, ``r = e^{-2/b}``) it is Prop. Laplaceleakage:
``-log(p_min + (1 - p_min) e^{-2/b})``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import as_distribution, check_count, check_eps, check_real
from ..errors import ValidationError
from ..leakage import eps_min
from ..sets import UncertaintySet
from ..worstcase import check_uncertainty_set, leakage_capacity

__all__ = ["LaplaceCalibration", "calibrate_discrete_laplace", "clamped_channel",
           "log_clamped_channel", "ratio_from_scale", "unclamped_pml",
           "unclamped_pml_over_set"]


def _check_r(r: object) -> float:
    return check_real(r, "r", low=0.0, high=1.0, high_open=True)


def ratio_from_scale(scale: float, step: float) -> float:
    """``r = e^{-step/scale}``: the geometric ratio of a Laplace of scale ``scale`` (column
    units) on a grid of spacing ``step``.

    Examples
    --------
    >>> round(ratio_from_scale(2.0, 2.0), 6)   # e^-1
    0.367879
    """
    b = check_real(scale, "scale", low=0.0, low_open=True)
    s = check_real(step, "step", low=0.0, low_open=True)
    return math.exp(-s / b)


def log_clamped_channel(n: int, r: float) -> NDArray[np.float64]:
    """``log W`` of the clamped discrete Laplace channel (module docstring), exactly in logs.

    ``r = 0`` is the identity (``log 0 = -inf`` off the diagonal).

    Examples
    --------
    >>> w = np.exp(log_clamped_channel(3, 0.5))
    >>> print(np.round(w * 6, 6))   # rows (4, 1, 1)/6 ... in sixths
    [[4. 1. 1.]
     [2. 2. 2.]
     [1. 1. 4.]]
    """
    nn = check_count(n, "n", minimum=2)
    rr = _check_r(r)
    if rr == 0.0:
        with np.errstate(divide="ignore"):
            return np.asarray(np.log(np.eye(nn)), dtype=np.float64)
    k = np.arange(nn, dtype=np.float64)
    lr = math.log(rr)
    out = np.abs(k[:, None] - k[None, :]) * lr + (math.log1p(-rr) - math.log1p(rr))
    out[:, 0] = k * lr - math.log1p(rr)
    out[:, -1] = (nn - 1 - k) * lr - math.log1p(rr)
    return np.asarray(out, dtype=np.float64)


def clamped_channel(n: int, r: float) -> NDArray[np.float64]:
    """The N x N clamped discrete Laplace channel ``exp(log_clamped_channel(n, r))``, rows
    renormalised against rounding (each row's sum is 1 to within an ulp before it).

    At ``N = 2`` it is ``[[1, r], [r, 1]] / (1 + r)``: the binary Laplace mechanism
    thresholded at 0 (``r = e^{-2/b}``).

    Examples
    --------
    >>> print(np.round(clamped_channel(2, 0.5) * 3, 6))
    [[2. 1.]
     [1. 2.]]
    """
    w = np.exp(log_clamped_channel(n, r))
    return np.asarray(w / w.sum(axis=1, keepdims=True), dtype=np.float64)


def _log_kernel(n: int, r: float) -> NDArray[np.float64]:
    k = np.arange(n, dtype=np.float64)
    if r == 0:
        return np.where(k[:, None] == k[None, :], 0.0, -np.inf)
    return np.asarray(np.abs(k[:, None] - k[None, :]) * math.log(r), dtype=np.float64)


def unclamped_pml(prior: ArrayLike, r: float) -> NDArray[np.float64]:
    """PML at each grid point of the unclamped discrete Laplace (or continuous Laplace with
    ``r = e^{-step/b}``): ``pml(x_j) = -log sum_i p_i r^|i - j|``; its maximum is the
    supremum over all outputs (module docstring).

    Examples
    --------
    At ``N = 2`` the maximum is Prop. Laplaceleakage, ``-log(p_min + (1 - p_min) r)``:

    >>> import math
    >>> v = unclamped_pml([0.3, 0.7], math.exp(-1.0))
    >>> round(float(v.max()), 12) == round(-math.log(0.3 + 0.7 * math.exp(-1.0)), 12)
    True
    """
    p = as_distribution(prior, "prior")
    rr = _check_r(r)
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    a = lp[:, None] + _log_kernel(p.size, rr)
    return np.asarray(-np.logaddexp.reduce(a, axis=0), dtype=np.float64)


def unclamped_pml_over_set(uncertainty_set: UncertaintySet, r: float) -> float:
    """``sup_{Q in set} sup_y pml(y)`` of the unclamped Laplace:
    ``max_j -log min_Q Q . r^|. - j|`` (the exact minimum of each linear function over the
    set, :meth:`pmlkit.sets.UncertaintySet.min_linear`).

    Examples
    --------
    >>> from pmlkit.sets import L1Ball
    >>> import math
    >>> v = unclamped_pml_over_set(L1Ball([0.5, 0.5], 0.2), math.exp(-1.0))
    >>> round(v, 12) == round(-math.log(0.4 + 0.6 * math.exp(-1.0)), 12)
    True
    """
    rr = _check_r(r)
    uset = check_uncertainty_set(uncertainty_set, uncertainty_set.n
                                 if isinstance(uncertainty_set, UncertaintySet) else 0)
    kern = np.exp(_log_kernel(uset.n, rr))
    qmin = uset.min_linear(kern)
    with np.errstate(divide="ignore"):
        return float(np.max(-np.log(qmin)))


@dataclass(frozen=True)
class LaplaceCalibration:
    """The least noise meeting a target (:func:`calibrate_discrete_laplace`).

    Attributes
    ----------
    r
        Geometric ratio per grid step (``0`` = no noise needed).
    scale_steps
        The equivalent Laplace scale in grid steps, ``-1 / log r`` (``0`` for ``r = 0``).
    eps
        The target.
    certified_eps
        The exact worst-case eps at ``r`` (``<= eps``), recomputed from the matrix (clamped)
        or the grid-point formula (unclamped).
    clamp
        Whether the output is clamped to the range.

    Examples
    --------
    >>> cal = calibrate_discrete_laplace(5, 1.0, [0.2] * 5)
    >>> 0 < cal.r < 1, cal.certified_eps <= cal.eps
    (True, True)
    """

    r: float
    scale_steps: float
    eps: float
    certified_eps: float
    clamp: bool


def _leak(n: int, r: float, target: UncertaintySet | NDArray[np.float64], clamp: bool) -> float:
    if clamp:
        w = clamped_channel(n, r)
        if isinstance(target, UncertaintySet):
            return float(leakage_capacity(w, target))
        return float(eps_min(w, target))
    if isinstance(target, UncertaintySet):
        return unclamped_pml_over_set(target, r)
    return float(unclamped_pml(target, r).max())


def calibrate_discrete_laplace(n: int, eps: float, over: UncertaintySet | ArrayLike, *,
                               clamp: bool = True) -> LaplaceCalibration:
    """The smallest noise (smallest ``r``, the smallest scale) whose exact worst-case PML
    over ``over`` is at most ``eps``.

    The leakage is computed exactly at each trial ``r`` (the clamped channel's
    :func:`pmlkit.worstcase.leakage_capacity` or :func:`pmlkit.eps_min`; unclamped, the
    grid-point formula) and the search is a bisection on ``t = -log r`` (60 halvings); the
    leakage falls as ``r`` grows (checked numerically in the tests; a post-processing
    argument covers the unclamped case). Whatever the shape, the returned ``r`` is one at
    which the leakage was computed and found ``<= eps``: the result is certified.

    Parameters
    ----------
    n
        Grid points N (``>= 2``).
    eps
        Target ``>= 0``.
    over
        An uncertainty set over N points, or one prior (length N).
    clamp
        Clamp the output to the range (the released N x N channel, default) or not.

    Examples
    --------
    At ``N = 2``, unclamped, the result is the binary Laplace scale of Prop. Laplaceleakage:
    ``r = (e^{-eps} - p_min)/(1 - p_min)``.

    >>> import math
    >>> cal = calibrate_discrete_laplace(2, 0.5, [0.25, 0.75], clamp=False)
    >>> round(cal.r, 9) == round((math.exp(-0.5) - 0.25) / 0.75, 9), cal.certified_eps <= 0.5
    (True, True)
    """
    nn = check_count(n, "n", minimum=2)
    e = check_eps(eps)
    if isinstance(over, UncertaintySet) or hasattr(over, "set"):
        target: UncertaintySet | NDArray[np.float64] = check_uncertainty_set(
            over, nn, inputs="the grid has {n} points")
    else:
        target = as_distribution(over, "prior")
        if target.size != nn:
            raise ValidationError(
                f"prior has {target.size} entries but the grid has {nn} points; they must "
                "match")
    at_zero = _leak(nn, 0.0, target, clamp)
    if at_zero <= e:
        return LaplaceCalibration(0.0, 0.0, e, at_zero, clamp)
    if e == 0.0:
        raise ValidationError("eps must be > 0 for additive noise (eps = 0 needs r = 1, "
                              "infinite noise), got 0.0")
    # t = -log r: large t = little noise = more leakage
    lo_t, hi_t = 0.0, 1.0  # lo_t always meets the target (r -> 1 leaks nothing)
    while _leak(nn, math.exp(-hi_t), target, clamp) <= e:
        lo_t, hi_t = hi_t, 2 * hi_t
        if hi_t > 745:  # r underflows: the identity, which fails
            break
    best_t, best_v = math.nan, math.nan
    for _ in range(60):
        mid = 0.5 * (lo_t + hi_t)
        v = _leak(nn, math.exp(-mid), target, clamp)
        if v <= e:
            lo_t, best_t, best_v = mid, mid, v
        else:
            hi_t = mid
        if hi_t - lo_t <= 1e-13 * max(1.0, hi_t):
            break
    if math.isnan(best_t):  # lo_t from the doubling phase (or tiny t)
        best_t = lo_t if lo_t > 0 else hi_t * 2.0 ** -60
        best_v = _leak(nn, math.exp(-best_t), target, clamp)
        if not best_v <= e:  # pragma: no cover - r -> 1 leaks nothing
            raise ValidationError(f"no Laplace noise meets eps = {e!r} on this grid")
    r = math.exp(-best_t)
    return LaplaceCalibration(r, 1.0 / best_t, e, best_v, clamp)
