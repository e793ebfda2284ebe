"""Gaussian noise on an N-point grid ``x_0 < ... < x_{N-1}``: ``Y = X + G``,
``G ~ N(0, sigma^2)``.

**Per-output PML** (real outputs): with ``d_i = (y - x_i)^2 / (2 sigma^2)``,

    pml(y) = max_i(-d_i) - log sum_i p_i e^{-d_i}     (computed with logsumexp).

For ``y`` in the Voronoi cell of ``x_k`` (nearest point) the maximum is at ``i = k`` and

    e^{-pml(y)} = S_k(y) = sum_i p_i exp( (x_i - x_k)(2 y - x_i - x_k) / (2 sigma^2) ),

a sum of exponentials of affine functions of ``y``: **convex** in ``y``. So inside each cell
the violation set ``{pml > eps} = {S_k < e^{-eps}}`` is one interval, found exactly by
minimising ``S_k`` on the cell and solving ``S_k = e^{-eps}`` on each side
(:func:`violation_probability`). In the two end cells, as ``|y| -> inf`` every other term
vanishes: ``pml(y) -> -log p_0`` (left) and ``-log p_{N-1}`` (right), so

    sup_y pml(y) = -log min(p_0, p_{N-1})                        (:func:`pml_limit`)

whatever sigma: the unclamped Gaussian has no pure eps-PML guarantee below that. At
``N = 2`` (points ``-1, +1``) ``S`` is the paper's ``P(+1) + P(-1) e^{-2y/sigma^2}``
(Section "gauss").

**Released channel.** Rounding ``Y`` to the nearest grid point and clamping to the range (a
post-processing) gives the N x N matrix of :func:`clamped_channel`; its exact pure PML is
finite, and an (eps, delta) tail statement about it is made post-processing-robust in
:mod:`pmlkit.numeric.tails`. At ``N = 2`` it is the paper's Gaussian thresholded at 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import as_distribution, check_count, check_eps, check_real, fmt
from ..errors import ValidationError

__all__ = ["clamped_channel", "pml", "pml_limit", "violation_probability"]


def _points(points: ArrayLike, n: int | None = None) -> NDArray[np.float64]:
    try:
        x = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"points must be numbers, got {fmt(points)}") from exc
    if x.ndim != 1:
        raise ValidationError(f"points must be 1-D, got shape {x.shape}")
    if x.size < 2 or not np.isfinite(x).all() or np.any(np.diff(x) <= 0):
        raise ValidationError(
            f"points must be at least 2 finite, strictly increasing numbers, got {x.tolist()}"
            if x.size <= 8 else "points must be at least 2 finite, strictly increasing numbers")
    if n is not None and x.size != n:
        raise ValidationError(f"prior has {n} entries but points has {x.size}; they must match")
    return x


def pml(y: ArrayLike, points: ArrayLike, prior: ArrayLike, sigma: float) -> NDArray[np.float64]:
    """Per-output PML of ``X + N(0, sigma^2)`` on the points (module docstring).

    Examples
    --------
    At ``N = 2`` this is :func:`pmlkit.additive.gaussian_pml`: at ``y = 1``,
    ``-log((1 + e^{-2})/2)``:

    >>> print(np.round(pml([0.0, 1.0], [-1, 1], [0.5, 0.5], 1.0), 6))
    [0.       0.566219]
    """
    p = as_distribution(prior, "prior")
    x = _points(points, p.size)
    s = check_real(sigma, "sigma", low=0.0, low_open=True)
    yy = np.atleast_1d(np.asarray(y, dtype=np.float64))
    if not np.isfinite(yy).all():
        raise ValidationError("y must be finite (no NaN or inf)")
    d = -((yy[:, None] - x[None, :]) ** 2) / (2 * s * s)
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    return np.asarray(d.max(axis=1) - np.logaddexp.reduce(d + lp[None, :], axis=1),
                      dtype=np.float64)


def pml_limit(prior: ArrayLike) -> float:
    """``sup_y pml(y) = lim_{|y| -> inf} = -log min(p_0, p_{N-1})`` for every sigma.

    Examples
    --------
    >>> round(pml_limit([0.1, 0.6, 0.3]), 6)   # -log 0.1
    2.302585
    """
    p = as_distribution(prior, "prior")
    m = min(float(p[0]), float(p[-1]))
    return math.inf if m <= 0 else -math.log(m)


def _log_s(y: float, k: int, x: NDArray[np.float64], lp: NDArray[np.float64],
           s2: float) -> float:
    return float(np.logaddexp.reduce(lp + (x - x[k]) * (2 * y - x - x[k]) / (2 * s2)))


def violation_probability(points: ArrayLike, prior: ArrayLike, sigma: float,
                          eps: float) -> float:
    """``P_{Y ~ P_Y}[pml(Y) > eps]`` for real outputs, exactly (per Voronoi cell, one
    interval; module docstring), as a sum of normal probabilities (``scipy.special.ndtr``).

    Examples
    --------
    At ``N = 2`` it is :func:`pmlkit.additive.gaussian_violation_probability`:

    >>> round(violation_probability([-1, 1], [0.5, 0.5], 1.0, 0.1), 4)
    0.9489
    """
    from scipy.optimize import brentq, minimize_scalar
    from scipy.special import ndtr

    p = as_distribution(prior, "prior")
    x = _points(points, p.size)
    s = check_real(sigma, "sigma", low=0.0, low_open=True)
    e = check_eps(eps)
    s2 = s * s
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    lvl = -e  # violation: log S_k(y) < -eps
    n = x.size
    mids = (x[:-1] + x[1:]) / 2
    span = float(x[-1] - x[0]) + 40 * s
    intervals: list[tuple[float, float]] = []
    for k in range(n):
        a = -math.inf if k == 0 else float(mids[k - 1])
        b = math.inf if k == n - 1 else float(mids[k])
        fa = a if math.isfinite(a) else float(x[0]) - span
        fb = b if math.isfinite(b) else float(x[-1]) + span

        def f(y: float, k: int = k) -> float:
            return _log_s(y, k, x, lp, s2) - lvl

        res = minimize_scalar(f, bounds=(fa, fb), method="bounded",
                              options={"xatol": 1e-12 * max(1.0, abs(fb - fa))})
        ym = float(res.x)
        for cand in (fa, fb, float(x[k])):
            if f(cand) < f(ym):
                ym = cand
        if not f(ym) < 0:
            continue
        # left end
        if math.isfinite(a):
            left = a if f(a) < 0 else brentq(f, a, ym, xtol=1e-14, rtol=1e-15)
        else:
            lim = -math.inf if lp[0] < lvl else None  # S_0 -> p_0 as y -> -inf
            if lim is not None:
                left = -math.inf
            else:
                lo = ym - 1.0
                while f(lo) < 0:
                    lo = ym - 2 * (ym - lo)
                left = brentq(f, lo, ym, xtol=1e-14, rtol=1e-15)
        if math.isfinite(b):
            right = b if f(b) < 0 else brentq(f, ym, b, xtol=1e-14, rtol=1e-15)
        else:
            if lp[-1] < lvl:
                right = math.inf
            else:
                hi = ym + 1.0
                while f(hi) < 0:
                    hi = ym + 2 * (hi - ym)
                right = brentq(f, ym, hi, xtol=1e-14, rtol=1e-15)
        intervals.append((left, right))
    total = 0.0
    for lo_y, hi_y in intervals:
        za = (lo_y - x) / s
        zb = (hi_y - x) / s
        # P(a < x + G < b), with the tails computed on the side that keeps accuracy
        pr = np.where(za > 0, ndtr(-za) - ndtr(-zb), ndtr(zb) - ndtr(za))
        total += float(np.dot(p, np.maximum(pr, 0.0)))
    return min(total, 1.0)


def clamped_channel(n: int, sigma_steps: float) -> NDArray[np.float64]:
    """The N x N channel of ``X + G`` rounded to the nearest grid point and clamped (noise
    standard deviation ``sigma_steps`` in grid steps): output ``j`` collects
    ``[j - 1/2, j + 1/2)`` around input ``i``'s point, the ends their tails.

    At ``N = 2`` (points ``-1, +1``, step 2, so ``sigma_steps = sigma / 2``) it is the
    paper's Gaussian thresholded at 0, :func:`pmlkit.additive.gaussian_binarized_channel`:

    Examples
    --------
    >>> print(np.round(clamped_channel(2, 0.5), 4))
    [[0.8413 0.1587]
     [0.1587 0.8413]]
    """
    from scipy.special import ndtr

    nn = check_count(n, "n", minimum=2)
    s = check_real(sigma_steps, "sigma_steps", low=0.0, low_open=True)
    k = np.arange(nn, dtype=np.float64)
    edges = np.concatenate(([-np.inf], np.arange(nn - 1) + 0.5, [np.inf]))
    za = (edges[None, :-1] - k[:, None]) / s
    zb = (edges[None, 1:] - k[:, None]) / s
    w = np.where(za > 0, ndtr(-za) - ndtr(-zb), ndtr(zb) - ndtr(za))
    w = np.maximum(w, 0.0)
    out: Any = w / w.sum(axis=1, keepdims=True)
    return np.asarray(out, dtype=np.float64)


def calibrate_sigma(n: int, eps: float, delta: float, over: Any) -> tuple[float, float]:
    """The smallest ``sigma_steps`` (noise in grid steps) for which the rounded, clamped
    Gaussian's post-processing-robust tail bound over ``over`` (an uncertainty set,
    :func:`pmlkit.numeric.tails.postprocessing_delta_over_set`; or one prior,
    :func:`~pmlkit.numeric.tails.postprocessing_delta`) at ``eps`` is ``<= delta``.

    Bisection on ``log sigma`` (60 halvings); the returned sigma is one at which the bound
    was computed and found ``<= delta``. Returns ``(sigma_steps, bound)``.

    Examples
    --------
    >>> s, d = calibrate_sigma(5, 1.0, 1e-6, [0.2] * 5)
    >>> s > 0, d <= 1e-6
    (True, True)
    """
    from .._validation import check_delta
    from ..sets import UncertaintySet
    from .tails import postprocessing_delta, postprocessing_delta_over_set

    nn = check_count(n, "n", minimum=2)
    e = check_eps(eps)
    dl = check_delta(delta)
    if isinstance(over, UncertaintySet) or hasattr(over, "set"):
        def bound(s: float) -> float:
            return postprocessing_delta_over_set(clamped_channel(nn, s), over, e)
    else:
        p = as_distribution(over, "prior")
        if p.size != nn:
            raise ValidationError(
                f"prior has {p.size} entries but the grid has {nn} points; they must match")

        def bound(s: float) -> float:
            return postprocessing_delta(clamped_channel(nn, s), p, e)

    lo, hi = 1e-3, 1.0  # hi meets the target once doubled enough
    while bound(hi) > dl:
        lo, hi = hi, 2 * hi
        if hi > 1e7:
            raise ValidationError(
                f"no Gaussian noise up to 1e7 grid steps meets eps = {e!r}, delta = {dl!r}")
    best, best_v = hi, bound(hi)
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        v = bound(mid)
        if v <= dl:
            hi, best, best_v = mid, mid, v
        else:
            lo = mid
        if hi / lo < 1 + 1e-10:
            break
    return best, best_v
