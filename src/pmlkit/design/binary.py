"""The binary closed form under l1 uncertainty (the paper's theorem on the optimal binary
mechanism)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .._deprecation import positional_deprecated, renamed_parameter
from .._validation import as_distribution, check_eps, check_radius, fmt
from ..errors import ValidationError
from ..mechanism import Mechanism
from ._common import certify, closed_form_eps

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

__all__ = ["optimal_binary"]


@renamed_parameter(version="0.2", p_hat="prior")
@positional_deprecated(version="0.2", allowed=1)
def optimal_binary(prior: ArrayLike, *, beta: float, eps: float) -> Mechanism:
    """Optimal binary mechanism over the l1-ball ``B_beta(prior)`` (Thm optimalbinary).

    ``prior`` is the estimate ``p_hat``; ``beta`` and ``eps`` are keyword-only (the older
    ``optimal_binary(p_hat, beta, eps)`` still works, with a :class:`DeprecationWarning`).
    With ``p1 = max(prior) >= p2 = min(prior)``:

        W* = 1/(1 + beta e^eps) * [[ e^eps (1 - p1 + beta/2),  1 - e^eps (1 - p1 - beta/2) ],
                                   [ 1 - e^eps (p1 - beta/2),  e^eps (p1 + beta/2)      ]]

    (the theorem's form; the appendix's last lines have sign typos). It maximises every
    sub-convex utility (e.g. mutual information) over ``M(eps, B_beta(prior))``. Rows and
    columns are given in the caller's order: if ``prior[0] < prior[1]`` the matrix above is
    computed for the sorted prior and permuted back, so ``W[i, i]`` is always
    ``P(Y = x_i | X = x_i)``. With ``prior = (1/2, 1/2)``, ``beta = 1`` it is randomized
    response (Remark binarymechisRR).

    Conditions (checked):

    - ``prior`` is a probability vector of length 2 with ``p2 > 0`` (interior);
    - ``beta < 2 p2``; the boundary ``beta = 2 p2`` is also accepted: the theorem's matrix
      is the limit and is still certified exactly (it is how Remark binarymechisRR gets
      randomized response at ``beta = 1``);
    - ``0 <= eps <= -log(p1 - beta/2)`` (first privacy region for the whole ball; no upper
      limit when ``p1 = beta/2``).

    The result is certified with :func:`pmlkit.worstcase.leakage_capacity` over
    ``L1Ball(prior, beta)``; its guarantee has basis ``"given"`` (the ball's coverage of the
    true distribution is the caller's claim; :func:`pmlkit.design.design_from_samples`
    makes a sample-based one).

    Raises
    ------
    ValidationError
        Naming the violated condition.

    Examples
    --------
    The uniform estimate with ``beta = 1`` gives randomized response (Remark
    binarymechisRR): at ``eps = log 3``, ``W[0, 0] = 3 (1/2 + 1/2) / (1 + 3) = 3/4``:

    >>> import math
    >>> from pmlkit import optimal_binary
    >>> mech = optimal_binary([0.5, 0.5], beta=1.0, eps=math.log(3))
    >>> mech.matrix.round(6).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    >>> mech.guarantee.basis, round(mech.certified_eps, 6)
    ('given', 1.098612)
    """
    p = as_distribution(prior, "prior")
    if p.size != 2:
        raise ValidationError(f"prior must have 2 entries (binary data), got {p.size}")
    beta = check_radius(beta)
    eps = check_eps(eps)
    order = np.array([0, 1]) if p[0] >= p[1] else np.array([1, 0])
    p1, p2 = float(p[order[0]]), float(p[order[1]])
    if p2 <= 0:
        raise ValidationError(
            f"prior must be in the interior of the simplex (both entries > 0), got {fmt(p)}")
    if beta > 2 * p2:
        raise ValidationError(
            f"beta must be < 2 p2 = {2 * p2!r} (Thm optimalbinary; p2 = min(prior)), "
            f"got {beta!r}")
    gap = p1 - beta / 2
    limit = math.inf if gap <= 0 else -math.log(gap)
    if eps > limit:
        raise ValidationError(
            f"eps must be <= -log(p1 - beta/2) = {limit!r} (Thm optimalbinary: first "
            f"privacy region over the ball), got {eps!r}")
    # tight at eps over the ball: built a rounding margin below it (no overflow)
    e = math.exp(min(closed_form_eps(eps, 2), 700.0))
    h = beta / 2
    w = np.array([[e * (1 - p1 + h), 1 - e * (1 - p1 - h)],
                  [1 - e * (p1 - h), e * (p1 + h)]]) / (1 + beta * e)
    w = np.clip(w, 0.0, None)
    w = w / w.sum(axis=1, keepdims=True)  # exact up to rounding
    if e == 1.0:  # eps = 0: identical rows (in floats too), so the leakage is exactly 0
        w = np.tile(w[0], (2, 1))
    inv = np.argsort(order)
    w = w[np.ix_(inv, inv)]
    from ..sets import L1Ball

    return certify(w, L1Ball(p, beta), eps, designer="optimal_binary",
                   parameters={"eps": eps, "beta": beta, "p_hat": p.tolist(),
                               "prior": p.tolist()})
