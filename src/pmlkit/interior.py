"""Guarantees under a probability floor: c-interior PML and the Dobrushin coefficient.

A prior is *c-interior* when every mass is at least ``c`` (``0 <= c <= 1/N``). The worst
PML of a mechanism over all c-interior priors is the worst case over the box
``{Q : Q >= c, sum Q = 1}`` (each mass is then also at most ``1 - (N - 1) c``)::

    interior_eps(W, c) = max_y log( max_x W[x, y] / min_{Q >= c} Q . W[:, y] ).

The inner minimum puts ``c`` on every row and the remaining ``1 - N c`` on the row where
the column is smallest: ``c sum_x W[x, y] + (1 - N c) min_x W[x, y]``. At ``c = 0`` the
ratio is ``max / min`` of each column, the local-DP eps; at ``c = 1/N`` it is the PML at
the uniform prior. The worst case is computed by the exact box worst case of
:func:`pmlkit.worstcase.leakage_capacity` (no second copy of the formula).

The Dobrushin coefficient ``eta(W) = max_{x, x'} TV(W[x], W[x'])`` (total variation
between two rows) is the contraction coefficient of the total variation distance:
``TV(P W, Q W) <= eta(W) TV(P, Q)`` for all ``P, Q``, with equality for point masses on
the maximising pair of rows.

More generally, the hockey-stick divergence ``E_gamma(P || Q) = sum_y (P(y) - gamma Q(y))_+``
(``gamma >= 1``; ``gamma = 1`` is total variation) contracts by
``eta_gamma(W) = max_{x, x'} E_gamma(W[x] || W[x'])`` (:func:`hockey_stick_coefficient`;
derivation in ``docs/interior.md``), again attained by point masses.

For binary inputs the c-interior constraint of an output ``(a, b)`` with ``a >= b`` reads
``a <= e^eps (c a + (1 - c) b)``: c-interior eps-PML is LDP at
``eps' = log( e^eps (1 - c) / (1 - c e^eps) )`` (no constraint when ``c e^eps >= 1``), so the
largest Dobrushin coefficient is ``(e^eps' - 1) / (e^eps' + 1)``, attained by randomized
response at ``eps'`` (:func:`binary_interior_extremal`).

Beyond the papers: the bodies of Grosse et al. (c-interior PML, arXiv 2601.09498 and
2609.28297) were not available here; the statements above are derived in
``docs/interior.md``. Their contraction bounds for c-interior mechanisms are not
implemented beyond the binary case.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_mechanism, fmt
from .errors import ValidationError

__all__ = ["binary_interior_extremal", "dobrushin_coefficient", "hockey_stick_coefficient",
           "interior_eps"]


def interior_eps(mechanism: ArrayLike, c: float) -> float:
    """The worst ``eps_min(W, P)`` over every prior ``P`` with all masses ``>= c``.

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    c
        The floor, ``0 <= c <= 1/N``. ``c = 0`` gives the local-DP eps
        (:func:`pmlkit.leakage.ldp_epsilon`, ``inf`` when a column mixes zeros and positive
        entries); ``c = 1/N`` the PML at the uniform prior.

    Examples
    --------
    ``W = [[0.8, 0.2], [0.3, 0.7]]`` at ``c = 0.1``: the first column's worst output
    probability is ``0.1 * 1.1 + 0.8 * 0.3 = 0.35`` and the second's
    ``0.1 * 0.9 + 0.8 * 0.2 = 0.25``, so the worst eps is ``log(0.7 / 0.25)``:

    >>> W = [[0.8, 0.2], [0.3, 0.7]]
    >>> round(interior_eps(W, 0.1), 6), round(math.log(0.7 / 0.25), 6)
    (1.029619, 1.029619)
    >>> from pmlkit.leakage import ldp_epsilon
    >>> interior_eps(W, 0.0) == ldp_epsilon(W)
    True
    """
    from .leakage import ldp_epsilon
    from .sets import Box
    from .worstcase import leakage_capacity

    w = as_mechanism(mechanism)
    n = w.shape[0]
    try:
        cv = float(c)
    except (TypeError, ValueError):
        raise ValidationError(f"c must be a real number in [0, 1/N], got {fmt(c)}") from None
    if not (math.isfinite(cv) and 0.0 <= cv <= 1.0 / n + 1e-15):
        raise ValidationError(
            f"c must be in [0, 1/N] = [0, {1.0 / n:.6g}] for a mechanism with N = {n} rows, "
            f"got {fmt(c)}")
    cv = min(cv, 1.0 / n)
    if cv == 0.0:
        return ldp_epsilon(w)
    lower = np.full(n, cv)
    upper = np.full(n, min(1.0, 1.0 - (n - 1) * cv))
    upper = np.maximum(upper, lower)
    return float(leakage_capacity(w, Box(lower, upper)))


def dobrushin_coefficient(mechanism: ArrayLike) -> float:
    """``eta(W) = max_{x, x'} (1/2) sum_y |W[x, y] - W[x', y]|``: the largest total
    variation between two rows, the contraction coefficient of total variation.

    Examples
    --------
    Binary randomized response ``[[3/4, 1/4], [1/4, 3/4]]`` contracts by ``1/2``
    (``(e^eps - 1) / (e^eps + 1)`` at ``e^eps = 3``):

    >>> dobrushin_coefficient([[0.75, 0.25], [0.25, 0.75]])
    0.5
    """
    w = as_mechanism(mechanism)
    diff = np.abs(w[:, None, :] - w[None, :, :]).sum(axis=2)
    return float(0.5 * diff.max())


def hockey_stick_coefficient(mechanism: ArrayLike, gamma: float) -> float:
    """``eta_gamma(W) = max_{x, x'} sum_y (W[x, y] - gamma W[x', y])_+``: the contraction
    coefficient of the hockey-stick divergence ``E_gamma`` (``gamma >= 1``), attained by
    point masses on the maximising pair of rows.

    Examples
    --------
    Randomized response ``[[3/4, 1/4], [1/4, 3/4]]`` at ``gamma = 2``: ``3/4 - 2/4``:

    >>> hockey_stick_coefficient([[0.75, 0.25], [0.25, 0.75]], 2.0)
    0.25
    """
    w = as_mechanism(mechanism)
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise ValidationError(f"gamma must be a number >= 1, got {fmt(gamma)}") from None
    if not (math.isfinite(g) and g >= 1.0):
        raise ValidationError(f"gamma must be finite and >= 1, got {fmt(gamma)}")
    diff = np.maximum(w[:, None, :] - g * w[None, :, :], 0.0).sum(axis=2)
    return float(diff.max())


def binary_interior_extremal(eps: float, c: float) -> tuple[float, np.ndarray]:
    """For binary inputs: the largest Dobrushin coefficient of a mechanism whose
    :func:`interior_eps` at floor ``c`` is at most ``eps``, and randomized response
    attaining it (module docstring).

    Returns
    -------
    (float, numpy.ndarray)
        ``(e^eps' - 1) / (e^eps' + 1)`` with ``eps' = log(e^eps (1 - c) / (1 - c e^eps))``,
        and the ``2 x 2`` randomized response at ``eps'`` (the identity, coefficient 1,
        when ``c e^eps >= 1``).

    Examples
    --------
    At ``c = 0`` it is the LDP bound ``(e^eps - 1) / (e^eps + 1)``:

    >>> eta, w = binary_interior_extremal(math.log(3), 0.0)
    >>> round(eta, 6), w.round(4).tolist()
    (0.5, [[0.75, 0.25], [0.25, 0.75]])

    With a floor ``c = 0.2``, ``e^eps' = 3 * 0.8 / (1 - 0.6) = 6`` and the coefficient is
    ``5/7``; the attaining mechanism's c-interior eps is exactly ``log 3``:

    >>> eta, w = binary_interior_extremal(math.log(3), 0.2)
    >>> round(eta, 6), round(interior_eps(w, 0.2), 6) == round(math.log(3), 6)
    (0.714286, True)
    """
    from ._validation import check_eps

    e = check_eps(eps)
    try:
        cv = float(c)
    except (TypeError, ValueError):
        raise ValidationError(f"c must be in [0, 1/2], got {fmt(c)}") from None
    if not (math.isfinite(cv) and 0.0 <= cv <= 0.5):
        raise ValidationError(f"c must be in [0, 1/2] for binary inputs, got {fmt(c)}")
    ee = math.exp(min(e, 700.0))
    if cv * ee >= 1.0:
        return 1.0, np.eye(2)
    r = ee * (1.0 - cv) / (1.0 - cv * ee)  # e^eps'
    keep = r / (1.0 + r)
    w = np.array([[keep, 1.0 - keep], [1.0 - keep, keep]])
    return float((r - 1.0) / (r + 1.0)), w
