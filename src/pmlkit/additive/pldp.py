"""The probabilistic-LDP Gaussian baseline (Zhao et al. 2019, Thm 8; paper Section
"examples", eq. for ``sigma_pLDP``) with sensitivity ``Delta = 2`` (binary ``X in {-1, +1}``).
"""

from __future__ import annotations

import math

from .._validation import check_delta, check_eps
from ._args import check_scale

__all__ = ["pldp_eps", "pldp_sigma"]


def _erfcinv(delta: float) -> float:
    from scipy.special import erfcinv

    return float(erfcinv(delta))


def pldp_sigma(eps: float, delta: float) -> float:
    """Noise standard deviation of the (eps, delta)-pLDP Gaussian mechanism, sensitivity 2.

    ``sigma_pLDP = sqrt(2) (f + sqrt(f^2 + eps)) / eps`` with ``f = erfcinv(delta)``
    (paper Section "examples", after Zhao et al. 2019, Thm 8, with ``Delta = 2``:
    ``Delta / (sqrt(2) eps) = sqrt(2) / eps``).

    Parameters
    ----------
    eps
        ``>= 0``; ``eps = 0`` returns ``math.inf`` (no finite noise gives 0).
    delta
        In ``(0, 1)``.

    Examples
    --------
    >>> from pmlkit.additive import pldp_sigma
    >>> # f = erfcinv(1e-5) = 3.1234: sqrt(2) (3.1234 + sqrt(3.1234^2 + 1))
    >>> round(pldp_sigma(1.0, 1e-5), 3)
    9.055
    """
    e = check_eps(eps)
    d = check_delta(delta, allow_one=False)
    if e == 0.0:
        return math.inf
    f = _erfcinv(d)
    return math.sqrt(2.0) * (f + math.sqrt(f * f + e)) / e


def pldp_eps(sigma: float, delta: float) -> float:
    """Inverse of :func:`pldp_sigma`: the eps of the pLDP Gaussian mechanism for a given sigma.

    With ``s = sigma / sqrt(2)`` and ``f = erfcinv(delta)``, solving
    ``s = (f + sqrt(f^2 + eps)) / eps`` gives ``s eps - f = sqrt(f^2 + eps)``; squaring,
    ``s^2 eps^2 - 2 s f eps - eps = 0``, so (``eps > 0``)

        eps = (2 s f + 1) / s^2,

    and the root is genuine because ``s eps - f = f + 1/s >= 0`` for ``delta < 1``
    (``f > 0``).

    Parameters
    ----------
    sigma
        ``> 0``.
    delta
        In ``(0, 1)``.

    Examples
    --------
    >>> from pmlkit.additive import pldp_eps, pldp_sigma
    >>> round(pldp_eps(pldp_sigma(0.7, 1e-6), 1e-6), 12)
    0.7
    """
    s = check_scale(sigma, "sigma") / math.sqrt(2.0)
    d = check_delta(delta, allow_one=False)
    f = _erfcinv(d)
    # written as 2f/s + (1/s)/s so that neither s^2 nor 2 s f can overflow or underflow
    # on its own (tiny sigma gives inf, huge sigma gives a tiny eps, never NaN)
    return 2.0 * f / s + (1.0 / s) / s
