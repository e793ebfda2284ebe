"""Closed-form bounds of the paper (its Section 4, PML for sets of distributions).

- :func:`lipschitz_bound` (Theorem 3 [Thm lipschitz]),
- :func:`sensitivity_bound` (Theorem 4 [Thm l1gamma]),
- :func:`leakage_bound` (Corollary 2 [Cor. leakagebound]),
- :func:`eps_bound` (Section 4.4 [eq. epsmax]),
- :func:`delta_min` (Corollary 3 [Cor. deltamin]).

Each returns ``math.inf`` (never NaN, never an exception) where the paper's bound is vacuous,
and raises :class:`pmlkit.errors.ValidationError` for invalid arguments. Scalar arguments
give a Python float; array arguments (where natural) give an array (vectorised).
The exact values these bound are in :mod:`pmlkit.worstcase`.

Every scalar parameter is passed by keyword (``eps=``, ``beta=``, ``distance=``, ...): two
real numbers in a row are too easy to swap, and a swap gives a wrong bound, not an error.
The positional forms of release 0.1 (``eps_bound(eps, beta)``,
``sensitivity_bound(eps, prior, beta)``, ...) still work for one release with a
:class:`DeprecationWarning`.

References
----------
- L. Grosse, S. Saeidian, T. J. Oechtering, M. Skoglund, "Privacy Mechanism Design
  based on Empirical Distributions": Theorem 3 [Thm lipschitz], Theorem 4 [Thm l1gamma],
  Corollary 2 [Cor. leakagebound], Section 4.4 [eq. epsmax], Corollary 3 [Cor. deltamin].
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar, cast, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._deprecation import positional_deprecated, warn_deprecated
from ._validation import as_distribution, check_count, check_eps, check_real, fmt
from .errors import ValidationError
from .estimation import log_num_subsets
from .leakage import privacy_region

__all__ = ["delta_min", "eps_bound", "leakage_bound", "lipschitz_bound", "sensitivity_bound"]


_F = TypeVar("_F", bound=Callable[..., Any])
_FloatArray = NDArray[np.float64]


def _nonneg(x: ArrayLike, name: str, *, allow_inf: bool = False) -> tuple[_FloatArray, bool]:
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


def _out(arr: _FloatArray, scalar: bool) -> float | _FloatArray:
    return float(arr) if scalar else arr


def _half_beta_exp(beta: _FloatArray, eps: float) -> _FloatArray:
    """``beta e^eps / 2`` without overflow: in logs when ``e^eps`` exceeds the float range
    (only whether it is ``>= 1`` matters then, and ``beta = 0`` still gives 0)."""
    if eps <= 700.0:
        with np.errstate(over="ignore"):  # a huge beta overflows to inf: still >= 1
            return beta * (math.exp(eps) / 2.0)
    with np.errstate(divide="ignore"):
        log_x = np.log(beta) + (eps - math.log(2.0))
    return np.exp(np.minimum(log_x, 1.0))  # > 1 stays > 1: the bound is inf there


def _neg_log1m(x: _FloatArray) -> _FloatArray:
    """``-log(1 - x)``, ``inf`` where ``x >= 1``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return cast(_FloatArray, np.where(x < 1.0, -np.log1p(-np.minimum(x, 1.0)), np.inf))


@overload
def lipschitz_bound(*, capacity: float, distance: float) -> float: ...
@overload
def lipschitz_bound(*, capacity: float, distance: ArrayLike) -> _FloatArray: ...
@positional_deprecated(version="0.2", allowed=0)
def lipschitz_bound(*, capacity: float, distance: ArrayLike) -> float | _FloatArray:
    """Theorem 3 [Thm lipschitz]: ``|eps_min(W, P) - eps_min(W, Q)| <= exp(C(W, P)) ||P - Q||_1``.

    Parameters
    ----------
    capacity
        Local leakage capacity ``C`` (``>= 0``; ``inf`` gives ``inf`` for ``distance > 0``).
    distance
        ``||P - Q||_1 >= 0`` (scalar or array).

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Theorem 3.

    Examples
    --------
    A capacity of ``log 2`` doubles the distance:

    >>> lipschitz_bound(capacity=math.log(2.0), distance=0.05)
    0.1
    >>> lipschitz_bound(capacity=1.0, distance=[0.0, 0.1]).round(4)
    array([0.    , 0.2718])
    """
    c = check_real(capacity, "capacity", low=0.0, allow_inf=True)
    d, scalar = _nonneg(distance, "distance")
    factor = math.exp(c) if c < 709.0 else math.inf
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.where(d == 0, 0.0, factor * d)
    return _out(np.asarray(out, dtype=np.float64), scalar)


def _epsmax_formula(eps: float, d: ArrayLike, name: str) -> float | _FloatArray:
    e = check_eps(eps)
    arr, scalar = _nonneg(d, name)
    return _out(e + _neg_log1m(_half_beta_exp(arr, e)), scalar)


@overload
def leakage_bound(*, eps: float, distance: float) -> float: ...
@overload
def leakage_bound(*, eps: float, distance: ArrayLike) -> _FloatArray: ...
@positional_deprecated(version="0.2", allowed=0)
def leakage_bound(*, eps: float, distance: ArrayLike) -> float | _FloatArray:
    """Corollary 2 [Cor. leakagebound]: the leakage at a prior ``Q`` near ``P``.

    ``eps_min(W, Q) <= eps - log(1 - e^eps ||P - Q||_1 / 2)`` for ``W`` eps-PML w.r.t.
    ``P``; ``inf`` when ``distance >= 2 e^-eps`` (scalar or array ``distance``).

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Corollary 2.

    Examples
    --------
    At ``eps = log 2`` a prior 0.5 away in l1 leaks at most ``log 2 - log(1 - 0.5)``:

    >>> round(leakage_bound(eps=math.log(2.0), distance=0.5), 4)  # log 4
    1.3863
    >>> leakage_bound(eps=math.log(2.0), distance=1.0)  # distance >= 2 e^-eps: vacuous
    inf
    """
    return _epsmax_formula(eps, distance, "distance")


@overload
def eps_bound(*, eps: float, beta: float) -> float: ...
@overload
def eps_bound(*, eps: float, beta: ArrayLike) -> _FloatArray: ...
@positional_deprecated(version="0.2", allowed=0)
def eps_bound(*, eps: float, beta: ArrayLike) -> float | _FloatArray:
    """Section 4.4 [eq. epsmax]: ``eps'(delta) = eps - log(1 - beta*(delta) e^eps / 2)``.

    The guarantee over the ball ``B_beta(p_hat)`` of a mechanism designed eps-PML for
    ``p_hat`` (Corollary 2 [Cor. leakagebound] with distance ``beta``); ``inf`` when
    ``beta >= 2 e^-eps``. Scalar or array ``beta``.

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Section 4.4 and Corollary 2.

    Examples
    --------
    ``1 - log(1 - 0.1 e / 2)``:

    >>> round(eps_bound(eps=1.0, beta=0.1), 4)
    1.1461
    >>> eps_bound(eps=1.0, beta=[0.1, 1.0]).round(4)  # 1.0 >= 2/e: vacuous
    array([1.1461,    inf])
    """
    return _epsmax_formula(eps, beta, "beta")


def _is_scalar(x: Any) -> bool:
    try:
        return bool(np.ndim(x) == 0)
    except ValueError:  # a ragged nested list
        return False


def _prior_first(func: _F) -> _F:
    """Accept the release-0.1 order ``sensitivity_bound(eps, prior, beta)`` for one release.

    The old first argument was a number, the new one is a distribution, so the two orders
    cannot be confused: a scalar first argument maps the positional arguments onto
    ``eps, prior, beta`` with a :class:`DeprecationWarning`."""
    name = func.__name__
    old = ("eps", "prior", "beta")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if (len(args) > 1 and not _is_scalar(args[0])) or len(args) > len(old):
            raise ValidationError(
                f"{name} takes the prior by position and eps, beta by keyword "
                f"({name}(prior, eps=..., beta=...)), got {len(args)} positional arguments")
        if args and _is_scalar(args[0]):
            moved = old[:len(args)]
            dup = [k for k in moved if k in kwargs]
            if dup:
                raise ValidationError(
                    f"{name}: got {', '.join(dup)} both by position and by keyword")
            warn_deprecated(
                f"{name}: the positional order ({', '.join(moved)}) is deprecated since 0.2; "
                f"pass the prior first and eps, beta by keyword "
                f"({name}(prior, eps=..., beta=...))")
            kwargs.update(zip(moved, args, strict=True))
            return func(**kwargs)
        return func(*args, **kwargs)

    return cast(_F, wrapper)


@overload
def sensitivity_bound(prior: ArrayLike, *, eps: float, beta: float) -> float: ...
@overload
def sensitivity_bound(prior: ArrayLike, *, eps: float, beta: ArrayLike) -> _FloatArray: ...
@_prior_first
def sensitivity_bound(prior: ArrayLike, *, eps: float,
                      beta: ArrayLike) -> float | _FloatArray:
    """Theorem 4 [Thm l1gamma]: bound on the sensitivity ``S_p(W, B_beta(p))`` of any ``W`` that is
    eps-PML w.r.t. ``p``; the region ``k`` of eps is found with
    :func:`pmlkit.privacy_region`.

    - ``k = 1``: ``-log(1 - beta/2 * (e^eps - 1) / p_min)`` (equality for extremal ``W``);
    - ``k > 1``: ``-log(1 - beta e^eps / 2)`` (equality when every column has a zero).

    Returns ``inf`` when the theorem does not apply (``beta >= 2 p_min``, in particular when
    ``p`` has a zero entry) or the log argument is ``<= 0``. The exact value is
    :func:`pmlkit.leakage_sensitivity` (no condition on ``beta``).

    Parameters
    ----------
    prior
        The centre ``p`` of the ball.
    eps
        The mechanism's PML level w.r.t. ``prior`` (``>= eps_min(W, prior)``), ``>= 0``.
    beta
        Radius ``>= 0`` (scalar or array).

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Theorem 4.

    Examples
    --------
    For ``p = (0.5, 0.5)`` and ``eps = 0.1`` (region 1, below ``-log 0.5``) the bound is
    ``-log(1 - 0.05 (e^0.1 - 1) / 0.5)``; at ``eps = 1`` (region 2) it is
    ``-log(1 - 0.05 e)``:

    >>> round(sensitivity_bound([0.5, 0.5], eps=0.1, beta=0.1), 6)
    0.010573
    >>> round(sensitivity_bound([0.5, 0.5], eps=1.0, beta=0.1), 4)
    0.1461
    >>> sensitivity_bound([0.5, 0.5], eps=1.0, beta=1.0)  # beta >= 2 p_min: vacuous
    inf
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


@overload
def delta_min(*, eps: float, eps_target: float, m: int, n: int) -> float: ...
@overload
def delta_min(*, eps: float, eps_target: ArrayLike, m: int, n: int) -> _FloatArray: ...
@positional_deprecated(version="0.2", allowed=0)
def delta_min(*, eps: float, eps_target: ArrayLike, m: int, n: int) -> float | _FloatArray:
    """Corollary 3 [Cor. deltamin]: the failure probability needed to certify ``eps_target`` for an
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

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Corollary 3.

    Examples
    --------
    ``(2^2 - 2) exp(-200 (e^-0.5 - e^-0.7)^2)``, and 1 when the target equals eps:

    >>> round(delta_min(eps=0.5, eps_target=0.7, m=100, n=2), 4)
    0.1783
    >>> delta_min(eps=0.5, eps_target=[0.5, 0.7], m=100, n=2).round(4)
    array([1.    , 0.1783])
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
