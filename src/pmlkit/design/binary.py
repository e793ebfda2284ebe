"""The binary closed form under l1 uncertainty (Thm optimalbinary, math §5)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import as_distribution, check_eps, check_radius, fmt
from ..errors import ValidationError
from ..mechanism import Mechanism
from ._common import certify

__all__ = ["optimal_binary"]


def optimal_binary(p_hat: Any, beta: Any, eps: Any) -> Mechanism:
    """Optimal binary mechanism over the l1-ball ``B_beta(p_hat)`` (Thm optimalbinary).

    With ``p1 = max(p_hat) >= p2 = min(p_hat)``:

        W* = 1/(1 + beta e^eps) * [[ e^eps (1 - p1 + beta/2),  1 - e^eps (1 - p1 - beta/2) ],
                                   [ 1 - e^eps (p1 - beta/2),  e^eps (p1 + beta/2)      ]]

    (the theorem's form; the appendix's last lines have sign typos). It maximises every
    sub-convex utility (e.g. mutual information) over ``M(eps, B_beta(p_hat))``. Rows and
    columns are given in the caller's order: if ``p_hat[0] < p_hat[1]`` the matrix above is
    computed for the sorted prior and permuted back, so ``W[i, i]`` is always
    ``P(Y = x_i | X = x_i)``. With ``p_hat = (1/2, 1/2)``, ``beta = 1`` it is randomized
    response (Remark binarymechisRR).

    Conditions (checked):

    - ``p_hat`` is a probability vector of length 2 with ``p2 > 0`` (interior);
    - ``beta < 2 p2``; the boundary ``beta = 2 p2`` is also accepted: the theorem's matrix
      is the limit and is still certified exactly (it is how Remark binarymechisRR gets
      randomized response at ``beta = 1``);
    - ``0 <= eps <= -log(p1 - beta/2)`` (first privacy region for the whole ball; no upper
      limit when ``p1 = beta/2``).

    The result is certified with :func:`pmlkit.worstcase.leakage_capacity` over
    ``L1Ball(p_hat, beta)``.

    Raises
    ------
    ValidationError
        Naming the violated condition.
    """
    p = as_distribution(p_hat, "p_hat")
    if p.size != 2:
        raise ValidationError(f"p_hat must have 2 entries (binary data), got {p.size}")
    beta = check_radius(beta)
    eps = check_eps(eps)
    order = np.array([0, 1]) if p[0] >= p[1] else np.array([1, 0])
    p1, p2 = float(p[order[0]]), float(p[order[1]])
    if p2 <= 0:
        raise ValidationError(
            f"p_hat must be in the interior of the simplex (both entries > 0), got {fmt(p)}")
    if beta > 2 * p2:
        raise ValidationError(
            f"beta must be < 2 p2 = {2 * p2!r} (Thm optimalbinary; p2 = min(p_hat)), "
            f"got {beta!r}")
    gap = p1 - beta / 2
    limit = math.inf if gap <= 0 else -math.log(gap)
    if eps > limit:
        raise ValidationError(
            f"eps must be <= -log(p1 - beta/2) = {limit!r} (Thm optimalbinary: first "
            f"privacy region over the ball), got {eps!r}")
    e = math.exp(min(eps, 700.0))  # no overflow; exact for eps <= 700
    h = beta / 2
    w = np.array([[e * (1 - p1 + h), 1 - e * (1 - p1 - h)],
                  [1 - e * (p1 - h), e * (p1 + h)]]) / (1 + beta * e)
    w = np.clip(w, 0.0, None)
    w = w / w.sum(axis=1, keepdims=True)  # exact up to rounding
    inv = np.argsort(order)
    w = w[np.ix_(inv, inv)]
    from ..sets import L1Ball

    return certify(w, L1Ball(p, beta), eps + 1e-12, designer="optimal_binary",
                   parameters={"eps": eps, "beta": beta, "p_hat": p.tolist()})
