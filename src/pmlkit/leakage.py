"""Pointwise maximal leakage (PML) of discrete mechanisms.

A mechanism is an ``N x M`` row-stochastic matrix ``W[i, j] = P(Y = y_j | X = x_i)`` (a 2-D
array-like or a :class:`pmlkit.Mechanism`); a prior is a length-``N`` probability vector.
Natural logarithms throughout.

The examples below use the mechanism ``W = [[0.8, 0.2], [0.3, 0.7]]`` under the uniform
prior, whose output law is ``P_Y = (0.55, 0.45)``: every value can be checked by hand.

References
----------
- L. Grosse, S. Saeidian, T. J. Oechtering, M. Skoglund, "Privacy Mechanism Design
  based on Empirical Distributions", Section 2 (pointwise maximal leakage, Definition 4).
- S. Saeidian, G. Cervia, T. J. Oechtering, M. Skoglund, "Pointwise Maximal Leakage",
  IEEE Transactions on Information Theory, 2023.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import as_distribution, as_mechanism, check_eps, check_prior_matches

__all__ = [
    "eps_max",
    "eps_min",
    "ldp_epsilon",
    "maximal_leakage",
    "pml",
    "privacy_region",
    "privacy_region_thresholds",
]

# below this, P_Y[j] = p @ W[:, j] is recomputed in the log domain (underflow guard)
_TINY = 1e-250


def _log_output_distribution(w: NDArray[np.float64],
                             p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log P_Y`` with ``P_Y = p @ W``; ``-inf`` exactly where ``P_Y = 0``.

    Columns whose plain-float value is below ``1e-250`` are recomputed with a log-sum-exp
    so that products such as ``1e-200 * 1e-200`` do not underflow to zero."""
    py = p @ w
    with np.errstate(divide="ignore"):
        out = np.log(py)
    small = np.flatnonzero(py < _TINY)
    if small.size:
        sub = w[:, small]
        with np.errstate(divide="ignore"):
            terms = np.log(p)[:, None] + np.log(sub)
        top = terms.max(axis=0)
        finite = np.isfinite(top)
        res = np.full(small.size, -np.inf)
        if finite.any():
            t = terms[:, finite] - top[finite]
            res[finite] = top[finite] + np.log(np.exp(t).sum(axis=0))
        out[small] = res
    return cast(NDArray[np.float64], out)


def pml(mechanism: ArrayLike, prior: ArrayLike) -> NDArray[np.float64]:
    """Pointwise maximal leakage of every outcome.

    ``pml[j] = log( max_i W[i, j] / P_Y[j] )`` with ``P_Y = prior @ W`` (Thm. 1 of Saeidian
    et al. as restated in the paper's Preliminaries; ``D_inf(P_{X|Y=y} || P_X)``).

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    prior
        Length-``N`` probability vector.

    Returns
    -------
    numpy.ndarray
        Length-``M`` float array; ``NaN`` for outcomes with ``P_Y[j] = 0`` (they never occur).
        Computed as ``log max_i W[i, j] - log P_Y[j]`` with ``log P_Y`` from a log-sum-exp
        where ``P_Y`` is tiny, so it stays accurate down to the smallest positive floats;
        exactly ``0`` for a column whose entries are all equal.

    References
    ----------
    - S. Saeidian et al., "Pointwise Maximal Leakage", Theorem 1; restated in
      Section 2 of Grosse et al., "Privacy Mechanism Design based on Empirical
      Distributions".

    Examples
    --------
    ``pml[0] = log(0.8 / 0.55)`` and ``pml[1] = log(0.7 / 0.45)``:

    >>> W = [[0.8, 0.2], [0.3, 0.7]]
    >>> pml(W, [0.5, 0.5]).round(4)
    array([0.3747, 0.4418])
    >>> bool(np.isclose(pml(W, [0.5, 0.5])[0], math.log(0.8 / 0.55)))
    True
    """
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    log_py = _log_output_distribution(w, p)
    top = w.max(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(top) - log_py
    # a column with all entries equal leaks exactly 0 under every distribution (as in
    # pmlkit.worstcase): not the rounding residue of log(w) - log(p . w)
    out[top == w.min(axis=0)] = 0.0
    out[~np.isfinite(log_py)] = np.nan
    return cast(NDArray[np.float64], out)


def eps_min(mechanism: ArrayLike, prior: ArrayLike) -> float:
    """Smallest eps such that the mechanism is eps-PML for ``prior``.

    ``eps_min(W, p) = max_{j : P_Y[j] > 0} pml(W, p)[j]`` (the paper's
    ``epsilon_min(P_{Y|X}, P_X)``).

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    prior
        Length-``N`` probability vector.

    Returns
    -------
    float
        In ``[0, eps_max(prior)]``.

    Examples
    --------
    The largest PML over the outputs, ``log(0.7 / 0.45)``:

    >>> round(eps_min([[0.8, 0.2], [0.3, 0.7]], [0.5, 0.5]), 4)
    0.4418
    >>> eps_min([[1.0, 0.0], [0.0, 1.0]], [0.25, 0.75]) == eps_max([0.25, 0.75])  # identity
    True
    """
    values = pml(mechanism, prior)
    return float(max(0.0, np.nanmax(values)))


def eps_max(prior: ArrayLike) -> float:
    """``eps_max(p) = -log min_x p(x)``: every mechanism is eps_max-PML for ``p``.

    Parameters
    ----------
    prior
        Probability vector.

    Returns
    -------
    float
        ``inf`` when ``prior`` has a zero entry.

    Examples
    --------
    >>> round(eps_max([0.25, 0.75]), 4)  # log 4
    1.3863
    >>> eps_max([0.0, 1.0])
    inf
    """
    p = as_distribution(prior)
    pmin = float(p.min())
    return math.inf if pmin == 0.0 else -math.log(pmin)


def privacy_region_thresholds(prior: ArrayLike) -> NDArray[np.float64]:
    """Thresholds ``eps_0 .. eps_{N-1}`` of the PML privacy regions (Definition 4
    [Def. privacyregions]).

    With ``p`` sorted in decreasing order, ``eps_0 = 0`` and
    ``eps_k = -log sum_{i <= N-k} p_(i)`` for ``k = 1..N-1``. Computed as
    ``-log1p(-(sum of the k smallest entries))``, accurate when those entries are tiny.

    Returns
    -------
    numpy.ndarray
        Non-decreasing length-``N`` array.

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Definition 4.

    Examples
    --------
    For ``p = (0.5, 0.3, 0.2)``: ``eps_1 = -log(0.5 + 0.3)`` and ``eps_2 = -log 0.5``:

    >>> privacy_region_thresholds([0.5, 0.3, 0.2]).round(4)
    array([0.    , 0.2231, 0.6931])
    """
    p = as_distribution(prior)
    tails = np.cumsum(np.sort(p))[:-1]  # k smallest, k = 1..N-1
    tails = np.clip(tails, 0.0, 1.0)
    with np.errstate(divide="ignore"):
        eps = -np.log1p(-tails)
    eps = np.maximum.accumulate(np.maximum(eps, 0.0))
    return np.concatenate(([0.0], eps))


def privacy_region(eps: float, prior: ArrayLike) -> int:
    """The privacy region ``k in 1..N`` of an eps-PML guarantee (Definition 4
    [Def. privacyregions]).

    ``eps`` is in region ``k`` when ``eps_{k-1} <= eps < eps_k``; in region ``N`` when
    ``eps >= eps_{N-1} = -log max_x p(x)``. In region ``k`` an eps-PML
    mechanism has at most ``k - 1`` zeros per column (Lemma 2 of Grosse et al.).

    Parameters
    ----------
    eps
        Privacy parameter ``>= 0``.
    prior
        Probability vector of length ``N``.

    Returns
    -------
    int
        The region ``k``, ``1 <= k <= N``.

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Definition 4.

    Examples
    --------
    With the thresholds ``(0, 0.2231, 0.6931)`` of ``p = (0.5, 0.3, 0.2)``:

    >>> [privacy_region(e, [0.5, 0.3, 0.2]) for e in (0.1, 0.3, 1.0)]
    [1, 2, 3]
    """
    e = check_eps(eps)
    thresholds = privacy_region_thresholds(prior)
    return int(np.searchsorted(thresholds, e, side="right"))


def maximal_leakage(mechanism: ArrayLike) -> float:
    """Maximal leakage ``log sum_j max_i W[i, j]`` (for comparison with PML).

    It does not depend on the prior (for a full-support prior it equals
    ``log E_Y[exp(pml(Y))]``).

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.

    Examples
    --------
    ``log(0.8 + 0.7)``:

    >>> round(maximal_leakage([[0.8, 0.2], [0.3, 0.7]]), 4)
    0.4055
    """
    w = as_mechanism(mechanism)
    return float(max(0.0, math.log(float(w.max(axis=0).sum()))))


def ldp_epsilon(mechanism: ArrayLike) -> float:
    """Local-DP epsilon of a matrix: ``max_j log( max_i W[i, j] / min_i W[i, j] )``.

    All-zero columns are ignored; a column mixing zeros and positive entries gives ``inf``.
    An eps-LDP mechanism is eps-PML for every prior.

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.

    Examples
    --------
    The largest column ratio is ``0.7 / 0.2``:

    >>> round(ldp_epsilon([[0.8, 0.2], [0.3, 0.7]]), 4)
    1.2528
    >>> ldp_epsilon([[1.0, 0.0], [0.5, 0.5]])  # a zero beside a positive entry
    inf
    """
    w = as_mechanism(mechanism)
    hi = w.max(axis=0)
    lo = w.min(axis=0)
    used = hi > 0
    if not used.any():  # pragma: no cover - impossible for a row-stochastic matrix
        return 0.0
    if (lo[used] == 0).any():
        return math.inf
    return float(max(0.0, np.max(np.log(hi[used]) - np.log(lo[used]))))
