"""Closed-form bounds of the paper (Section PMLforsets and distest).

- :func:`lipschitz_bound` (Thm lipschitz), :func:`sensitivity_bound` (Thm l1gamma),
  :func:`leakage_bound` (Cor. leakagebound), :func:`eps_bound` (eq. epsmax),
  :func:`delta_min` (Cor. deltamin).

Each returns ``math.inf`` (never NaN, never an exception) where the paper's bound is vacuous,
and raises :class:`pmlkit.errors.ValidationError` for invalid arguments. Scalar arguments
give a Python float; array arguments (where natural) give an array (vectorised).
The exact values these bound are in :mod:`pmlkit.worstcase`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._validation import as_distribution, check_count, check_eps, check_real, fmt
from .errors import ValidationError
from .estimation import log_num_subsets
from .leakage import privacy_region

__all__ = ["delta_min", "eps_bound", "leakage_bound", "lipschitz_bound", "sensitivity_bound"]


def _nonneg(x: Any, name: str, *, allow_inf: bool = False) -> tuple[np.ndarray, bool]:
    """Validate a scalar or array of reals ``>= 0``; returns (float array, was_scalar)."""
    if np.ndim(x) == 0:
        v = check_real(x, name, low=0.0, allow_inf=allow_inf)
        return np.asarray(v, dtype=np.float64), True
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be real numbers, got {fmt(x)}") from exc
    if np.isnan(arr).any():
        raise ValidationError(f"{name} must be in [0, inf), got NaN in {fmt(arr)}")
    if (arr < 0).any() or (not allow_inf and np.isinf(arr).any()):
        raise ValidationError(f"{name} must be in [0, inf) and finite, got {fmt(arr)}")
    return arr, False


def _out(arr: np.ndarray, scalar: bool) -> Any:
    return float(arr) if scalar else arr


def _half_beta_exp(beta: np.ndarray, eps: float) -> np.ndarray:
    """``beta e^eps / 2`` without overflow: in logs when ``e^eps`` exceeds the float range
    (only whether it is ``>= 1`` matters then, and ``beta = 0`` still gives 0)."""
    if eps <= 700.0:
        with np.errstate(over="ignore"):  # a huge beta overflows to inf: still >= 1
            return beta * (math.exp(eps) / 2.0)
    with np.errstate(divide="ignore"):
        log_x = np.log(beta) + (eps - math.log(2.0))
    return np.exp(np.minimum(log_x, 1.0))  # > 1 stays > 1: the bound is inf there


def _neg_log1m(x: np.ndarray) -> np.ndarray:
    """``-log(1 - x)``, ``inf`` where ``x >= 1``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x < 1.0, -np.log1p(-np.minimum(x, 1.0)), np.inf)


def lipschitz_bound(capacity: Any, distance: Any) -> Any:
    """Thm lipschitz: ``|eps_min(W, P) - eps_min(W, Q)| <= exp(C(W, P)) ||P - Q||_1``.

    Parameters
    ----------
    capacity
        Local leakage capacity ``C`` (``>= 0``; ``inf`` gives ``inf`` for ``distance > 0``).
    distance
        ``||P - Q||_1 >= 0`` (scalar or array).
    """
    c = check_real(capacity, "capacity", low=0.0, allow_inf=True)
    d, scalar = _nonneg(distance, "distance")
    factor = math.exp(c) if c < 709.0 else math.inf
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.where(d == 0, 0.0, factor * d)
    return _out(np.asarray(out, dtype=np.float64), scalar)


def _epsmax_formula(eps: Any, d: Any, name: str) -> Any:
    e = check_eps(eps)
    arr, scalar = _nonneg(d, name)
    return _out(e + _neg_log1m(_half_beta_exp(arr, e)), scalar)


def leakage_bound(eps: Any, distance: Any) -> Any:
    """Cor. leakagebound: ``eps_min(W, Q) <= eps - log(1 - e^eps ||P - Q||_1 / 2)`` for ``W``
    eps-PML w.r.t. ``P``; ``inf`` when ``distance >= 2 e^-eps`` (scalar or array
    ``distance``)."""
    return _epsmax_formula(eps, distance, "distance")


def eps_bound(eps: Any, beta: Any) -> Any:
    """eq. epsmax: ``eps'(delta) = eps - log(1 - beta*(delta) e^eps / 2)``.

    The guarantee over the ball ``B_beta(p_hat)`` of a mechanism designed eps-PML for
    ``p_hat`` (Cor. leakagebound with distance ``beta``); ``inf`` when ``beta >= 2 e^-eps``.
    Scalar or array ``beta``."""
    return _epsmax_formula(eps, beta, "beta")


def sensitivity_bound(eps: Any, prior: Any, beta: Any) -> Any:
    """Thm l1gamma: bound on the sensitivity ``S_p(W, B_beta(p))`` of any ``W`` that is
    eps-PML w.r.t. ``p``; the region ``k`` of eps is found with
    :func:`pmlkit.privacy_region`.

    - ``k = 1``: ``-log(1 - beta/2 * (e^eps - 1) / p_min)`` (equality for extremal ``W``);
    - ``k > 1``: ``-log(1 - beta e^eps / 2)`` (equality when every column has a zero).

    Returns ``inf`` when the theorem does not apply (``beta >= 2 p_min``, in particular when
    ``p`` has a zero entry) or the log argument is ``<= 0``. The exact value is
    :func:`pmlkit.leakage_sensitivity` (no condition on ``beta``).

    Parameters
    ----------
    eps
        The mechanism's PML level w.r.t. ``prior`` (``>= eps_min(W, prior)``), ``>= 0``.
    prior
        The centre ``p`` of the ball.
    beta
        Radius ``>= 0`` (scalar or array).
    """
    e = check_eps(eps)
    p = as_distribution(prior)
    b, scalar = _nonneg(beta, "beta")
    pmin = float(p.min())
    k = privacy_region(e, p)
    if k == 1:
        if pmin <= 0:
            x = np.full_like(b, np.inf)
        elif e <= 700.0:
            x = b / 2.0 * math.expm1(e) / pmin
        else:  # only for N = 1 (region 1 reaches eps = inf): e^eps - 1 = e^eps in floats
            x = _half_beta_exp(b / pmin, e)
    else:
        x = _half_beta_exp(b, e)
    out = _neg_log1m(np.asarray(x, dtype=np.float64))
    out = np.where(b >= 2.0 * pmin, np.inf, out)
    return _out(np.asarray(out, dtype=np.float64), scalar)


def delta_min(eps: Any, eps_target: Any, m: Any, n: Any) -> Any:
    """Cor. deltamin: the failure probability needed to certify ``eps_target`` for an
    eps-PML mechanism designed on ``m`` samples over ``N = n`` categories.

    ``delta_min = min(1, (2^N - 2) exp(-2 m (e^-eps - e^-eps_target)^2))``, evaluated in
    logs (``N = 10^4`` works) and with ``expm1`` (no cancellation when ``eps_target`` is
    close to ``eps``).

    Parameters
    ----------
    eps
        PML level of the mechanism for the estimate ``p_hat``, ``>= 0``.
    eps_target
        Level to certify, ``>= eps`` (scalar or array; ``inf`` allowed).
    m, n
        Number of samples (``>= 1``) and alphabet size (``>= 2``).
    """
    e = check_eps(eps)
    t, scalar = _nonneg(eps_target, "eps_target", allow_inf=True)
    if (t < e).any():
        raise ValidationError(f"eps_target must be >= eps = {e!r}, got {fmt(eps_target)}")
    m = check_count(m, "m")
    n = check_count(n, "n", minimum=2)
    # e^-eps - e^-eps' = e^-eps (1 - e^-(eps' - eps)), with expm1 against cancellation
    with np.errstate(invalid="ignore"):
        gap = math.exp(-e) * -np.expm1(-(t - e))
    # gap^2 first: 2 m alone may overflow (m ~ 1e308), and inf * 0 would be NaN
    m_f = float(m) if m < 2**1000 else math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        decay = np.where(gap == 0, 0.0, 2.0 * (gap * gap) * m_f)
    log_d = log_num_subsets(n) - decay
    out = np.where(log_d >= 0, 1.0, np.exp(np.minimum(log_d, 0.0)))
    return _out(np.asarray(out, dtype=np.float64), scalar)
