"""The binary Laplace mechanism ``Y = X + L``, ``X in {-1, +1}``, ``L ~ Laplace(0, b)``
(paper Section "examples", subsection "Binary Laplace Mechanism").

Per-outcome leakage (proof of Prop. Laplaceleakage): for ``y >= 0``
``pml(y) = -log( P(+1) + P(-1) exp(-2 min(y, 1) / b) )`` and symmetrically for ``y < 0``,
so the supremum is attained for ``|y| >= 1`` and

    eps(b) = 2/b - log( e^{2/b} p_min + 1 - p_min ) = -log( p_min + (1 - p_min) e^{-2/b} ),

which is decreasing in ``b`` and in ``p_min``. The second form is the one evaluated here
(no overflow of ``e^{2/b}``; ``log1p``/``expm1`` keep small eps accurate).

These formulas describe the real-valued mechanism. What pmlkit releases is its grid
version (:mod:`pmlkit.additive.grid`); the guarantee of the released values is computed
there from exact cell probabilities (for the Laplace it is this eps at the released
scale).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .._deprecation import positional_deprecated
from .._validation import check_eps, check_radius, exceeds
from ._args import check_p_min, check_scale

if TYPE_CHECKING:  # pragma: no cover
    from ..mechanism import Mechanism

__all__ = [
    "laplace_binarized_channel",
    "laplace_eps",
    "laplace_eps_uncertain",
    "laplace_flip_probability",
    "laplace_scale",
    "laplace_scale_uncertain",
    "worst_case_p_min",
]


def _eps_of(t: float, p: float) -> float:
    """``-log(p + (1 - p) e^{-t})`` for ``t = 2/b in [0, inf]``, ``p in [0, 1/2]``."""
    a = (1.0 - p) * math.expm1(-t)  # in (-1, 0]
    if a > -0.5:
        return -math.log1p(a)
    # p + (1-p) e^{-t} is small: work in logs (p = 0 gives exactly t)
    log_p = math.log(p) if p > 0 else -math.inf
    return -float(np.logaddexp(log_p, math.log1p(-p) - t))


def laplace_eps(b: float, p_min: float) -> float:
    """Smallest eps such that the binary Laplace mechanism is eps-PML (Prop. Laplaceleakage).

    ``eps(b) = 2/b - log(e^{2/b} p_min + 1 - p_min)``, evaluated as
    ``-log(p_min + (1 - p_min) e^{-2/b})``.

    Parameters
    ----------
    b
        Laplace scale, ``> 0``.
    p_min
        ``min(P(-1), P(+1))`` of the (known) prior, in ``[0, 1/2]``. ``p_min = 0`` gives the
        LDP value ``2/b``; ``p_min = 1/2`` gives ``log(2 / (1 + e^{-2/b}))``.

    Returns
    -------
    float
        ``eps(b)`` in ``[0, min(2/b, -log p_min)]``.

    Examples
    --------
    >>> from pmlkit.additive import laplace_eps
    >>> round(laplace_eps(1.0, 0.5), 6)    # log(2 / (1 + e^{-2}))
    0.566219
    >>> laplace_eps(4.0, 0.0)              # p_min = 0: the LDP value 2/b
    0.5
    """
    bb = check_scale(b, "b")
    p = check_p_min(p_min)
    return _eps_of(2.0 / bb, p)


def laplace_scale(eps: float, p_min: float) -> float:
    """Smallest Laplace scale ``b`` (least noise) with ``laplace_eps(b, p_min) <= eps``.

    ``eps(b)`` is continuous and strictly decreasing in ``b`` from ``-log p_min`` (``b -> 0``)
    to ``0`` (``b -> inf``), so every ``b`` at or above the root of ``eps(b) = eps`` meets the
    target: the returned ``b`` is the smallest such scale, i.e. the most useful one. It is
    the closed-form root of Prop. Laplaceleakage solved for ``b``:

        b = 2 / log( (1 - p_min) / (e^{-eps} - p_min) )   for 0 < eps < -log p_min,

    evaluated as ``-2 / log1p(expm1(-eps) / (1 - p_min))``, or for small ``e^{-eps}`` as
    ``-2 / (-eps + log1p(-p_min e^eps) - log1p(-p_min))`` (no cancellation). With
    ``p_min = 0`` this is the eps-LDP scale ``2/eps`` (Remark laplacereducestoldp).

    Rounding counts against the guarantee: the closed form is accurate to a few ulps
    (relative error ~1e-15), and the result is then re-checked and nudged up (a doubling
    search then a bisection) until ``laplace_eps(b, p_min)`` is below ``eps`` by more than
    its rounding margin (:func:`pmlkit._validation.exceeds`, ``2^-44`` relative), so the
    returned ``b`` exceeds the exact root by a relative ``~1e-13`` at most where ``eps(b)``
    is well conditioned (the tests check it against a bracketing root-find,
    ``scipy.optimize.brentq``, and the guarantee against mpmath).

    Conventions at the ends:

    - ``eps >= eps_max = -log p_min`` by more than the rounding margin: every ``b > 0``
      meets the target (and so does releasing ``X`` unperturbed, the limit ``b -> 0``);
      returns ``0.0``, meaning "no noise is needed". ``p_min = 0`` has ``eps_max = inf``.
      An eps that ties ``eps_max`` within rounding (``eps = -log p_min`` as computed in
      floating point, which can be below the exact ``-log p_min``) gets a positive scale.
    - ``eps = 0``: only infinite noise leaks nothing; returns ``math.inf``.

    Parameters
    ----------
    eps
        Target, ``>= 0``.
    p_min
        ``min(P(-1), P(+1))``, in ``[0, 1/2]``.

    Examples
    --------
    >>> from pmlkit.additive import laplace_eps, laplace_scale
    >>> laplace_scale(1.0, 0.0)                    # the eps-LDP scale 2/eps
    2.0
    >>> b = laplace_scale(0.5, 0.25)
    >>> round(b, 6), laplace_eps(b, 0.25) <= 0.5   # 2 / log(0.75 / (e^{-0.5} - 0.25))
    (2.689427, True)
    >>> laplace_scale(2.0, 0.25)                   # eps >= -log(0.25): no noise needed
    0.0
    """
    e = check_eps(eps)
    p = check_p_min(p_min)
    eps_max = -math.log(p) if p > 0 else math.inf
    if not exceeds(eps_max, e):  # releasing X itself leaks eps_max, safely below eps
        return 0.0
    if e == 0.0:
        return math.inf
    if e >= eps_max:  # tied with eps_max within rounding: no closed form, search up
        return _safe_scale(_SMALLEST_SCALE, p, e)
    a = math.expm1(-e) / (1.0 - p)  # (e^{-eps} - p)/(1 - p) - 1, in (-1, 0)
    if a > -0.5:
        log_ratio = math.log1p(a)
    else:  # e^{-eps} small: log(e^{-eps} - p) - log(1 - p) without cancellation
        shift = math.log1p(-math.exp(e + math.log(p))) if p > 0 else 0.0
        log_ratio = -e + shift - math.log1p(-p)
    return _safe_scale(-2.0 / log_ratio, p, e)


#: A scale below which ``e^{-2/b}`` underflows: the search's start when eps ties eps_max.
_SMALLEST_SCALE = 2.0 / 745.0


def _safe_scale(b: float, p: float, e: float) -> float:
    """The smallest scale ``>= b`` found by search whose ``eps(b)`` does not
    :func:`~pmlkit._validation.exceeds` ``e > 0`` (``eps(b)`` decreases in ``b``)."""
    def bad(x: float) -> bool:
        return bool(exceeds(_eps_of(2.0 / x, p), e))

    if not bad(b):
        return b
    lo, step = b, 2.0**-44
    hi = b * (1.0 + step)
    while bad(hi):  # eps(b) -> 0 < e as b grows: ends (at inf at the latest)
        lo, step = hi, step * 2.0
        hi = b * (1.0 + step)
    for _ in range(200):
        mid = lo + 0.5 * (hi - lo)
        if mid in (lo, hi):
            break
        if bad(mid):
            lo = mid
        else:
            hi = mid
    return hi


@positional_deprecated(version="0.2", allowed=1)
def worst_case_p_min(p_hat_min: float, *, beta: float) -> float:
    """Smallest ``min(Q(-1), Q(+1))`` over the l1-ball ``B_beta(p_hat)`` of a binary prior.

    Moving ``beta/2`` of mass is the most an l1 distance ``beta`` allows, so the worst case is
    ``max(p_hat_min - beta/2, 0)`` (eq. uncertainlaplace; clipped at 0 beyond the paper,
    where the ball reaches a degenerate prior). ``beta`` is keyword-only (by position it
    still works, with a :class:`DeprecationWarning`).

    Examples
    --------
    >>> from pmlkit.additive import worst_case_p_min
    >>> round(worst_case_p_min(0.3, beta=0.2), 12)   # 0.3 - 0.2/2
    0.2
    >>> worst_case_p_min(0.1, beta=0.5)              # the ball reaches (0, 1)
    0.0
    """
    from ..sets import L1Ball

    p = check_p_min(p_hat_min, "p_hat_min")
    r = check_radius(beta)
    lows, _ = L1Ball(np.array([p, 1.0 - p]), r).coordinate_bounds()
    return float(lows[0])


@positional_deprecated(version="0.2", allowed=2)
def laplace_eps_uncertain(b: float, p_hat_min: float, *, beta: float) -> float:
    """Worst-case eps of the binary Laplace mechanism over ``B_beta(p_hat)`` (eq. uncertainlaplace).

    ``eps(b, delta) = 2/b - log[ (p_hat_min - beta/2)(e^{2/b} - 1) + 1 ]``: Prop.
    Laplaceleakage at ``p_min = p_hat_min - beta/2``, valid because ``eps(b)`` decreases in
    ``p_min``. When ``p_hat_min - beta/2 <= 0`` the ball contains a degenerate prior and the
    worst case is the LDP value ``2/b`` (the formula at ``p_min = 0``); the paper's formula
    would be wrong there, pmlkit clips. ``p_hat_min = 1/2``, ``beta = 1`` gives ``2/b``
    (Remark laplacereducestoldp).

    With ``beta = beta*(delta)`` (eq. binarybeta, :func:`pmlkit.l1_radius` with ``N = 2``)
    the result holds with probability ``>= 1 - delta`` over the estimation sample.
    ``beta`` is keyword-only (by position: :class:`DeprecationWarning`).

    Examples
    --------
    >>> from pmlkit.additive import laplace_eps, laplace_eps_uncertain
    >>> laplace_eps_uncertain(1.0, 0.5, beta=1.0)       # the ball holds (0, 1): 2/b
    2.0
    >>> laplace_eps_uncertain(1.0, 0.3, beta=0.2) == laplace_eps(1.0, 0.2)
    True
    """
    bb = check_scale(b, "b")
    return _eps_of(2.0 / bb, worst_case_p_min(p_hat_min, beta=beta))


@positional_deprecated(version="0.2", allowed=2)
def laplace_scale_uncertain(eps: float, p_hat_min: float, *, beta: float) -> float:
    """Smallest ``b`` with ``laplace_eps_uncertain(b, p_hat_min, beta) <= eps``.

    :func:`laplace_scale` at ``p_min = max(p_hat_min - beta/2, 0)`` (eq. uncertainlaplace
    inverted), with the same conventions (``0.0``: no noise needed; ``inf`` at ``eps = 0``).
    ``beta`` is keyword-only (by position: :class:`DeprecationWarning`).

    Examples
    --------
    >>> from pmlkit.additive import laplace_scale_uncertain
    >>> laplace_scale_uncertain(1.0, 0.5, beta=1.0)   # p_min can be 0: the LDP scale
    2.0
    """
    e = check_eps(eps)
    return laplace_scale(e, worst_case_p_min(p_hat_min, beta=beta))


def laplace_flip_probability(b: float) -> float:
    """Probability ``r = P(L > 1) = e^{-1/b} / 2`` that thresholding ``X + L`` at 0 flips
    the binary label ``X`` in ``{-1, +1}`` (``L ~ Laplace(0, b)``): the one formula behind
    :func:`laplace_binarized_channel`, :meth:`pmlkit.additive.LaplaceMechanism.binarized`
    and the exact sampler :func:`pmlkit.additive.laplace_binarized`.

    Examples
    --------
    >>> from pmlkit.additive import laplace_flip_probability
    >>> round(laplace_flip_probability(1.0), 6)   # e^{-1} / 2
    0.18394
    """
    bb = check_scale(b, "b")
    return 0.5 * math.exp(-1.0 / bb)


def laplace_binarized_channel(b: float) -> Mechanism:
    """The 2 x 2 channel of the binary Laplace mechanism thresholded at 0.

    The released bit is ``-1`` if ``X + L < 0`` and ``+1`` otherwise (the paper's binary
    decision, Section "numex_laplace"). It flips ``X`` with probability
    ``r = P(L > 1) = e^{-1/b} / 2``:

        W = [[1 - r, r], [r, 1 - r]],   rows/columns labelled (-1, +1).

    This is randomized response with LDP epsilon ``log((1 - r)/r) = log(2 e^{1/b} - 1)``
    (post-processing: never more than the ``2/b`` of the unthresholded mechanism). Use it
    with :func:`pmlkit.eps_min`, :func:`pmlkit.ldp_epsilon`, ... and to sample the bit
    exactly (:func:`pmlkit.additive.laplace_binarized`).

    Examples
    --------
    >>> import pmlkit
    >>> from pmlkit.additive import laplace_binarized_channel
    >>> w = laplace_binarized_channel(1.0)
    >>> w.matrix.round(4).tolist()
    [[0.8161, 0.1839], [0.1839, 0.8161]]
    >>> round(pmlkit.ldp_epsilon(w), 6)           # log(2 e - 1) < 2/b = 2
    1.48988
    """
    from ..mechanism import Mechanism

    bb = check_scale(b, "b")
    r = laplace_flip_probability(bb)
    w = np.array([[1.0 - r, r], [r, 1.0 - r]])
    return Mechanism(w, input_labels=(-1, 1), output_labels=(-1, 1),
                     designer="laplace_binarized", parameters={"b": bb, "threshold": 0.0})
