"""The analyst's side of a numeric release: the grid distribution estimated back from the
released values, and its mean, quantiles and shares, each with an interval.

``n`` values released through an N x M mechanism ``W`` (inputs: the grid points ``x``)
give output counts ``c ~ Multinomial(n, q)``, ``q = W^T P``.

**Estimate.** Maximum likelihood over the simplex by EM (iterative Bayesian update,
``P'(x) = P(x) g_x``, ``g_x = sum_y (c_y / n) W[x, y] / q_y``), run on many releases at
once (rows of a count matrix). ``max_x g_x - 1`` is the Frank-Wolfe gap of the concave mean
log-likelihood, so stopping when it is ``<= tol`` certifies the log-likelihood per record to
within ``tol`` of its maximum (the stopping rule of :mod:`pmlkit.inference`).

**Functionals and intervals (delta method).** A linear functional ``theta = a . P`` is
identified by the release iff ``a = W v`` for some ``v`` (then ``theta = v . q``); ``v`` is
the least-squares solution of ``W v = a`` and the residual decides. With ``q_hat`` the
fitted ``W^T P_hat``, ``Var(v . c/n) = (sum_y q_y v_y^2 - (v . q)^2) / n`` is the exact
variance of the unbiased plug-in ``v . c/n``, which the MLE matches to first order in the
interior of the simplex; the interval is ``theta_hat +- z sd`` (``z`` the normal quantile):

- mean: ``a = x``;
- CDF ``F(x_k) = P(X <= x_k)``: ``a = 1{x <= x_k}``; the share above a threshold is
  ``1 - F``;
- quantile at level ``u``: the smallest grid point with ``F_hat >= u``; its interval inverts
  the CDF bands: from the smallest ``x_k`` with ``F_hat(x_k) + z sd_k >= u`` to the smallest
  with ``F_hat(x_k) - z sd_k >= u`` (pointwise; each end misses with probability about
  ``(1 - confidence)/2``).

A functional that is not identified (mechanisms of rank < N that merge the points it
separates) gets ``nan`` with ``identified=False``. Coverage is tested by simulation
(``tests/test_numeric_estimate.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import as_mechanism, check_real, fmt, readonly
from ..errors import DataError, ValidationError
from ..mechanism import Mechanism
from ..mle import channel_mle_many
from .grid import NumericGrid

__all__ = ["EM_TOL", "NumericEstimate", "em_fit", "estimate_numeric",
           "estimate_numeric_counts"]

#: Frank-Wolfe gap (nats per record) at which the EM stops.
EM_TOL = 1e-6
#: EM iterations before giving up (``converged=False``).
EM_MAX_ITER = 20_000
#: A functional is identified when the residual of ``W v = a`` is below this (relative).
IDENT_TOL = 1e-8


def em_fit(counts: ArrayLike, mechanism: ArrayLike, *, tol: float = EM_TOL,
           max_iter: int = EM_MAX_ITER) -> tuple[NDArray[np.float64], NDArray[np.bool_], int]:
    """Maximum likelihood ``P`` for each row of ``counts`` (``R x M``, or one length-M row)
    by EM from the uniform start (module docstring), finished by projected Newton steps
    where the EM is slow (:func:`pmlkit.mle.channel_mle_many`).

    Returns ``(P, converged, iterations)`` with ``P`` of shape ``R x N`` (or ``N``).

    Examples
    --------
    >>> w = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> p, ok, _ = em_fit([40, 60], w)
    >>> print(np.round(p, 6), bool(ok))
    [0.3 0.7] True
    """
    w = as_mechanism(mechanism)
    c = np.asarray(counts, dtype=np.float64)
    one = c.ndim == 1
    c = np.atleast_2d(c)
    if c.ndim != 2 or c.shape[1] != w.shape[1]:
        raise ValidationError(
            f"counts must have {w.shape[1]} columns (the mechanism's outputs), got shape "
            f"{np.asarray(counts).shape}")
    if not np.isfinite(c).all() or (c < 0).any():
        raise ValidationError("counts must be finite and >= 0")
    tot = c.sum(axis=1, keepdims=True)
    if (tot <= 0).any():
        raise DataError("a release has no records: nothing to estimate")
    # the one solver of pmlkit.mle: SQUAREM EM on all rows, projected Newton where needed
    p, conv, it = channel_mle_many(c, w, tol=tol, max_iter=max_iter)
    return (p[0] if one else p), (conv[:1].copy() if one else conv), it


@dataclass(frozen=True)
class NumericEstimate:
    """Estimates from one numeric release (:func:`estimate_numeric`).

    Attributes
    ----------
    distribution
        The MLE of the grid distribution (length N, read-only).
    points
        The grid points (float, read-only).
    n
        Released records.
    confidence
        Level of every interval.
    mean, mean_interval
        ``E[X]`` and its interval (``nan`` if not identified).
    quantiles, quantile_intervals
        ``{level: grid point}`` and ``{level: (low, high)}``.
    threshold, share_above, share_above_interval
        ``P(X > threshold)`` and its interval (``None`` without a threshold).
    identified
        Whether the mean is identified by the release.
    converged, iterations
        EM stopping (certified within :data:`EM_TOL`).
    method
        How the intervals were made.

    Examples
    --------
    >>> w = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> est = estimate_numeric_counts([40, 60], w, points=[0, 10])
    >>> round(est.mean, 6), est.quantiles[0.5], est.identified
    (7.0, 10.0, True)
    """

    distribution: NDArray[np.float64] = field(repr=False)
    points: NDArray[np.float64] = field(repr=False)
    n: int
    confidence: float
    mean: float
    mean_interval: tuple[float, float]
    quantiles: dict[float, float]
    quantile_intervals: dict[float, tuple[float, float]]
    threshold: float | None
    share_above: float | None
    share_above_interval: tuple[float, float] | None
    identified: bool
    converged: bool
    iterations: int
    method: str = "EM (MLE) + delta method on the identified linear functionals"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (what ``pmlkit estimate --json`` prints for a numeric column)."""
        return {"n": self.n, "confidence": self.confidence, "mean": self.mean,
                "mean_interval": list(self.mean_interval),
                "quantiles": {str(k): v for k, v in self.quantiles.items()},
                "quantile_intervals": {str(k): list(v)
                                       for k, v in self.quantile_intervals.items()},
                "threshold": self.threshold, "share_above": self.share_above,
                "share_above_interval": (None if self.share_above_interval is None
                                         else list(self.share_above_interval)),
                "identified": self.identified, "converged": self.converged,
                "iterations": self.iterations, "method": self.method,
                "points": self.points.tolist(), "distribution": self.distribution.tolist()}


def _functionals(w: NDArray[np.float64], a: NDArray[np.float64]
                 ) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Least-squares ``v`` with ``W v = a`` for each column of ``a``, and identification."""
    v, *_ = np.linalg.lstsq(w, a, rcond=None)
    res = np.abs(w @ v - a).max(axis=0)
    scale = np.maximum(np.abs(a).max(axis=0), 1.0)
    return np.asarray(v, dtype=np.float64), np.asarray(res <= IDENT_TOL * scale)


def _z(confidence: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(0.5 + confidence / 2.0))


def _check_levels(quantiles: Sequence[float]) -> tuple[float, ...]:
    out = tuple(check_real(u, "quantiles", low=0.0, high=1.0, low_open=True, high_open=True)
                for u in quantiles)
    return out


def estimate_numeric_counts(counts: ArrayLike, mechanism: Mechanism | ArrayLike, *,
                            points: ArrayLike | None = None, confidence: float = 0.95,
                            quantiles: Sequence[float] = (0.25, 0.5, 0.75),
                            threshold: float | None = None
                            ) -> NumericEstimate | list[NumericEstimate]:
    """:func:`estimate_numeric` from output counts: one row (length M) gives a
    :class:`NumericEstimate`, a matrix (``R x M``, R releases) a list, computed together.

    ``points`` are the grid values of the inputs (default: the mechanism's input labels).

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> from pmlkit.numeric.grid import NumericGrid
    >>> g = NumericGrid(0, 4, 1)
    >>> m = laplace_mechanism(g, [0.2] * 5, 1.0)
    >>> q = np.array([0.2] * 5) @ np.asarray(m)
    >>> est = estimate_numeric_counts(np.round(q * 1e6), m)
    >>> round(est.mean, 3), est.quantiles[0.5]
    (2.0, 2.0)
    """
    w = as_mechanism(mechanism)
    if points is None:
        if not isinstance(mechanism, Mechanism):
            raise ValidationError("points must be given for a matrix (a Mechanism's input "
                                  "labels are its grid values)")
        points = mechanism.input_labels
    try:
        x = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"points must be the numeric grid values, got {fmt(points)}"
                              ) from exc
    if x.shape != (w.shape[0],) or np.any(np.diff(x) <= 0):
        raise ValidationError(f"points must be {w.shape[0]} increasing grid values, got "
                              f"{fmt(x)}")
    conf = check_real(confidence, "confidence", low=0.0, high=1.0, low_open=True,
                      high_open=True)
    levels = _check_levels(quantiles)
    thr = None if threshold is None else check_real(threshold, "threshold")
    c = np.asarray(counts, dtype=np.float64)
    one = c.ndim == 1
    c2 = np.atleast_2d(c)
    p, conv, iters = em_fit(c2, w)
    n = c2.sum(axis=1)
    z = _z(conf)
    nn = x.size
    # functionals: mean (x), CDF at x_0..x_{N-2}
    cdf_a = (np.arange(nn)[:, None] <= np.arange(nn - 1)[None, :]).astype(np.float64)
    a = np.concatenate([x[:, None], cdf_a], axis=1)
    v, ident = _functionals(w, a)
    q = p @ w  # fitted output distribution, R x M
    vq = q @ v  # R x K
    var = np.maximum((q @ (v * v)) - vq * vq, 0.0) / n[:, None]
    sd = np.sqrt(var)
    mean = p @ x
    cdf = np.minimum(np.cumsum(p, axis=1)[:, :-1], 1.0)  # R x (N-1)
    sd_cdf = sd[:, 1:]
    ident_cdf = ident[1:]
    ones = np.ones((c2.shape[0], 1))
    cdf_full = np.concatenate([cdf, ones], axis=1)
    hi_band = np.concatenate([np.where(ident_cdf, cdf + z * sd_cdf, 1.0), ones], axis=1)
    lo_band = np.concatenate([np.where(ident_cdf, cdf - z * sd_cdf, 0.0), ones], axis=1)
    out: list[NumericEstimate] = []
    for r in range(c2.shape[0]):
        qs: dict[float, float] = {}
        qi: dict[float, tuple[float, float]] = {}
        for u in levels:
            k = int(np.argmax(cdf_full[r] >= u - 1e-12))
            lo = int(np.argmax(hi_band[r] >= u))
            hi = int(np.argmax(lo_band[r] >= u))
            qs[u] = float(x[k])
            qi[u] = (float(x[min(lo, k)]), float(x[max(hi, k)]))
        share = share_iv = None
        if thr is not None:
            k = int(np.searchsorted(x, thr, side="right")) - 1  # last point <= thr
            if k < 0:
                share, share_iv = 1.0, (1.0, 1.0)
            elif k >= nn - 1:
                share, share_iv = 0.0, (0.0, 0.0)
            else:
                share = float(1.0 - cdf[r, k])
                if ident_cdf[k]:
                    share_iv = (max(0.0, share - z * float(sd_cdf[r, k])),
                                min(1.0, share + z * float(sd_cdf[r, k])))
                else:
                    share_iv = (0.0, 1.0)
        m_ok = bool(ident[0])
        m = float(mean[r]) if m_ok else math.nan
        half = z * float(sd[r, 0])
        out.append(NumericEstimate(
            distribution=readonly(p[r]), points=readonly(x), n=int(n[r]), confidence=conf,
            mean=m, mean_interval=(m - half, m + half) if m_ok else (math.nan, math.nan),
            quantiles=qs, quantile_intervals=qi, threshold=thr, share_above=share,
            share_above_interval=share_iv, identified=m_ok, converged=bool(conv[r]),
            iterations=iters))
    return out[0] if one else out


def estimate_numeric(released: ArrayLike, mechanism: Mechanism, *,
                     grid: NumericGrid | None = None, confidence: float = 0.95,
                     quantiles: Sequence[float] = (0.25, 0.5, 0.75),
                     threshold: float | None = None) -> NumericEstimate:
    """Estimate the distribution of the true values, and its mean, quantiles and the share
    above ``threshold``, from values released through a numeric ``mechanism`` (whose labels
    are grid values; module docstring for the method).

    Raises
    ------
    DataError
        A released value that is not an output of the mechanism.

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> from pmlkit.numeric.grid import NumericGrid
    >>> g = NumericGrid(0, 4, 1)
    >>> m = laplace_mechanism(g, [0.2] * 5, 2.0)
    >>> est = estimate_numeric([0, 1, 2, 2, 3, 4] * 200, m, grid=g, threshold=2)
    >>> est.n, est.mean_interval[0] < 2.0 < est.mean_interval[1]
    (1200, True)
    """
    if not isinstance(mechanism, Mechanism):
        raise ValidationError(f"mechanism must be a pmlkit.Mechanism, got {fmt(mechanism)}")
    if grid is not None and tuple(grid.labels) != tuple(mechanism.input_labels):
        raise ValidationError("grid does not match the mechanism's input labels")
    outs = np.asarray(mechanism.output_labels, dtype=np.float64)
    vals = np.asarray(released)
    if vals.dtype.kind not in "iuf" or vals.dtype.kind == "b":
        raise DataError(f"released values must be numbers, got dtype {vals.dtype}")
    vals = vals.astype(np.float64).ravel()
    order = np.argsort(outs, kind="stable")
    so = outs[order]
    pos = np.clip(np.searchsorted(so, vals), 0, so.size - 1)
    bad = so[pos] != vals
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"released value {vals[i]!r} (row {i}, {int(bad.sum())} such rows) is "
                        "not an output of the mechanism")
    counts = np.bincount(order[pos], minlength=outs.size)
    res = estimate_numeric_counts(counts, mechanism, confidence=confidence,
                                  quantiles=quantiles, threshold=threshold)
    assert isinstance(res, NumericEstimate)
    return res
