"""Utilities of a mechanism: mutual information and the per-column sub-linear functions.

A *sub-convex* utility (paper Section 2 [eq. subconvexdef], after Kairouz et al. and
Grosse et al. 2023 on extremal mechanisms)
is ``U(W, p) = sum_j mu(W[:, j], p)`` with ``mu(., p)`` sub-linear: convex and positively
homogeneous (``mu(c w, p) = c mu(w, p)`` for ``c >= 0``). Mutual information is one:

    mu_MI(w, p) = sum_i p_i w_i log( w_i / (p . w) ),    0 log 0 = 0,

and ``sum_j mu_MI(W[:, j], p) = I(X; Y)`` in nats. The designers of :mod:`pmlkit.design`
evaluate ``mu`` on many candidate columns at once, so the functions here take a 2-D array
of columns ``(N, K)`` and return ``K`` values.

Linear utilities (expected gain ``sum_i p_i sum_j g[i, j] W[i, j]``; the probability
``P[Y = X]`` is the identity gain) are provided by :func:`expected_gain`.

The examples use ``W = [[0.8, 0.2], [0.3, 0.7]]`` under the uniform prior:
``I(X; Y) = h(0.55) - (h(0.8) + h(0.7)) / 2 = 0.1325`` nats (``h`` the binary entropy)
and ``P[Y = X] = (0.8 + 0.7) / 2 = 0.75``.

References
----------
- L. Grosse, S. Saeidian, T. J. Oechtering, M. Skoglund, "Privacy Mechanism Design
  based on Empirical Distributions", Section 2 (sub-convex utilities; the design
  objective of Section 5).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import as_distribution, as_mechanism, check_prior_matches, fmt
from .errors import ValidationError

__all__ = [
    "accuracy",
    "check_gain",
    "expected_gain",
    "mutual_information",
    "mutual_information_columns",
    "publish_assignment",
    "published_channel",
]


def mutual_information_columns(columns: ArrayLike, prior: ArrayLike) -> NDArray[np.float64]:
    """Per-column mutual-information terms ``mu_MI(w, p)`` of the columns of ``columns``.

    ``mu_MI(w, p) = sum_i p_i w_i log(w_i / (p . w))`` with ``0 log 0 = 0`` (and ``0`` for a
    column with ``p . w = 0``). It is convex and positively homogeneous in ``w`` (a
    perspective of a convex function), i.e. sub-linear, so ``I(X;Y) = sum_j mu(W[:, j], p)``
    is a sub-convex utility (paper Section 2 [eq. subconvexdef]).

    Parameters
    ----------
    columns
        ``(N,)`` or ``(N, K)`` array of non-negative column vectors (need not be stochastic).
    prior
        Length-``N`` probability vector.

    Returns
    -------
    numpy.ndarray
        ``(K,)`` values in nats (a 0-d array for a 1-D ``columns``).

    Examples
    --------
    The first column gives ``0.4 log(0.8/0.55) + 0.15 log(0.3/0.55)``; the terms add up
    to the mutual information:

    >>> W = np.array([[0.8, 0.2], [0.3, 0.7]])
    >>> terms = mutual_information_columns(W, [0.5, 0.5])
    >>> terms.round(4), round(float(terms.sum()), 4)
    (array([0.059 , 0.0735]), 0.1325)
    >>> float(mutual_information_columns(2 * W[:, 0], [0.5, 0.5]))  # homogeneous: doubles
    0.117914...
    """
    p = as_distribution(prior)
    w = np.asarray(columns, dtype=np.float64)
    one_d = w.ndim == 1
    if one_d:
        w = w[:, None]
    if w.ndim != 2 or w.shape[0] != p.shape[0]:
        raise ValidationError(
            f"columns must have shape (N,) or (N, K) with N = {p.shape[0]} (the prior's "
            f"length), got shape {np.shape(columns)}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValidationError("columns must be finite and >= 0")
    py = p @ w
    pw = p[:, None] * w
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.log(w) - np.log(py)[None, :]
        terms = np.where(pw > 0, pw * ratio, 0.0)
    out = terms.sum(axis=0)
    # I(X;Y) >= 0 term by term is not guaranteed, but each column term is >= 0 by Jensen
    # (log-sum inequality); clip rounding noise of order 1e-17.
    out = np.where(np.abs(out) < 1e-15, 0.0, out)
    return cast(NDArray[np.float64], out[0] if one_d else out)


def mutual_information(mechanism: ArrayLike, prior: ArrayLike) -> float:
    """Mutual information ``I(X; Y)`` in nats of ``mechanism`` under ``prior``.

    ``I(X;Y) = sum_{i,j} p_i W[i,j] log( W[i,j] / P_Y[j] )``, ``P_Y = p @ W``, with
    ``0 log 0 = 0``; equal to ``sum_j mu_MI(W[:, j], p)``
    (:func:`mutual_information_columns`).

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix or :class:`pmlkit.Mechanism`.
    prior
        Length-``N`` probability vector.

    Examples
    --------
    >>> round(mutual_information([[0.8, 0.2], [0.3, 0.7]], [0.5, 0.5]), 4)
    0.1325
    >>> round(mutual_information(np.eye(2), [0.5, 0.5]), 4)  # the identity reveals H(X) = log 2
    0.6931
    """
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    return float(max(mutual_information_columns(w, p).sum(), 0.0))


def check_gain(gain: ArrayLike | str, n: int,
               n_outputs: int | None = None) -> NDArray[np.float64]:
    """A validated gain matrix for ``n`` inputs (the one validator of linear utilities).

    ``"accuracy"`` is the identity (``P[Y = X]``); otherwise a finite ``(n, M)`` array of
    numbers, with ``M = n_outputs`` when given. Returns a float64 array.

    Examples
    --------
    >>> check_gain("accuracy", 2)
    array([[1., 0.],
           [0., 1.]])
    >>> check_gain([[1.0, 0.0]], 2)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: gain must have shape (2, M), got shape (1, 2)
    """
    if isinstance(gain, str):
        if gain != "accuracy":
            raise ValidationError(
                f"gain must be 'accuracy' or an N x M array, got {gain!r}")
        if n_outputs is not None and n_outputs != n:
            raise ValidationError(
                f"gain 'accuracy' needs as many outputs as inputs ({n}), got {n_outputs}")
        return np.eye(n)
    try:
        g = np.asarray(gain, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"gain must be an N x M array of numbers, got {fmt(gain)}") \
            from exc
    if (g.ndim != 2 or g.shape[0] != n or g.shape[1] < 1
            or (n_outputs is not None and g.shape[1] != n_outputs)):
        want = f"({n}, {'M' if n_outputs is None else n_outputs})"
        raise ValidationError(f"gain must have shape {want}, got shape {g.shape}")
    if not np.isfinite(g).all():
        raise ValidationError("gain must be finite (no NaN or inf)")
    return g


def expected_gain(mechanism: ArrayLike, prior: ArrayLike, gain: ArrayLike | str) -> float:
    """Linear utility ``sum_i p_i sum_j gain[i, j] W[i, j]`` (expected gain).

    ``gain`` is ``N x M`` like the mechanism; the identity gives ``P[Y = X]``
    (:func:`accuracy`), ``-(1 - I)`` gives minus the Hamming distortion.

    Examples
    --------
    >>> W = [[0.8, 0.2], [0.3, 0.7]]
    >>> expected_gain(W, [0.5, 0.5], np.eye(2))  # (0.8 + 0.7) / 2
    0.75
    >>> round(expected_gain(W, [0.5, 0.5], np.eye(2) - 1), 4)  # minus the error rate
    -0.25
    """
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    g = check_gain(gain, w.shape[0], w.shape[1])
    return float(p @ (g * w).sum(axis=1))


def accuracy(mechanism: ArrayLike, prior: ArrayLike) -> float:
    """``P[Y = X] = sum_i p_i W[i, i]`` for a square mechanism (outputs = inputs).

    Examples
    --------
    >>> accuracy([[0.8, 0.2], [0.3, 0.7]], [0.25, 0.75])  # 0.25 * 0.8 + 0.75 * 0.7
    0.725
    """
    w = as_mechanism(mechanism)
    if w.shape[0] != w.shape[1]:
        raise ValidationError(
            f"accuracy needs a square mechanism (outputs = inputs), got shape {w.shape}")
    return expected_gain(w, prior, np.eye(w.shape[0]))


def publish_assignment(mechanism: ArrayLike, prior: ArrayLike, *,
                       merge_surplus: bool = True) -> NDArray[np.intp]:
    """The input each output of a mechanism is published as: the assignment that maximises
    the probability that the published value equals the true one under ``prior``.

    With ``M <= N`` outputs, each output ``j`` gets a distinct input ``a(j)`` maximising

        P[published = true] = sum_j prior(a(j)) W[a(j), j]

    over all injective maps ``a`` (a linear assignment with weights
    ``prior(x) W[x, j]``, solved exactly by :func:`scipy.optimize.linear_sum_assignment`).
    With more outputs than inputs no injective map exists. With ``merge_surplus`` (the
    default) each output is then published as its most probable input
    ``argmax_x prior(x) W[x, j]`` (ties to the first input), and outputs published as the
    same input are merged (:func:`published_channel`); without it, the ``N`` outputs of
    the best assignment of distinct inputs to outputs get them and the ``M - N`` others get
    ``-1`` (no input: the caller names them, and a merge that would lose information,
    such as the rank an estimation design was chosen for, is avoided).

    The map is fixed from the mechanism and the prior (the reference estimate), before any
    record is released: a post-processing of the output, so no output's leakage can grow
    (merging outputs ``j, k`` gives ``(W[x, j] + W[x, k]) / (P(j) + P(k))``, at most the
    larger of the two ratios). This is the one rule of pmlkit for publishing outputs as
    values of the input alphabet (single columns and tuples of columns alike). Beyond the
    paper.

    Parameters
    ----------
    mechanism
        ``N x M`` row-stochastic matrix.
    prior
        Length-``N`` distribution (the reference estimate).

    Returns
    -------
    numpy.ndarray
        ``a``, length ``M``: the input index each output is published as (distinct when
        ``M <= N``; ``-1`` for an output left without one, ``merge_surplus=False``).

    Examples
    --------
    Under the prior ``(1/3, 2/3)`` the output most often produced is nevertheless
    published as the first label: ``(1/3) 0.8 + (2/3) 0.4 = 0.533`` beats
    ``(2/3) 0.6 + (1/3) 0.2 = 0.467``:

    >>> publish_assignment([[0.8, 0.2], [0.6, 0.4]], [1 / 3, 2 / 3]).tolist()
    [0, 1]
    """
    from scipy.optimize import linear_sum_assignment

    w = as_mechanism(mechanism)
    p = as_distribution(prior, "prior")
    check_prior_matches(w, p)
    score = p[:, None] * w  # P(true x, output j) under the prior
    n, m = w.shape
    if m <= n or not merge_surplus:
        rows, cols = linear_sum_assignment(-score)
        best = np.full(m, -1, dtype=np.intp)
        best[cols] = rows
        return best
    return np.asarray(np.argmax(score, axis=0), dtype=np.intp)


def published_channel(mechanism: ArrayLike, assignment: ArrayLike
                      ) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """``(inputs, V)``: the channel from the true input to the published one when output
    ``j`` is published as input ``assignment[j]`` (:func:`publish_assignment`).

    ``inputs`` are the distinct published inputs in increasing order, and column ``i`` of
    ``V`` (``N x len(inputs)``) is the sum of the columns of ``W`` published as
    ``inputs[i]`` (the identity up to the order of the columns when the assignment is
    injective).

    Examples
    --------
    >>> inputs, v = published_channel([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]], [1, 0, 1])
    >>> inputs.tolist(), v.tolist()
    ([0, 1], [[0.3, 0.7], [0.1, 0.9]])
    """
    w = as_mechanism(mechanism)
    a = np.asarray(assignment)
    if a.shape != (w.shape[1],) or (a.size and (a.dtype.kind not in "iu" or a.min() < 0
                                                  or a.max() >= w.shape[0])):
        raise ValidationError(f"assignment must give one input index in 0..{w.shape[0] - 1} "
                              f"per output ({w.shape[1]}), got {fmt(assignment)}")
    used, merged = np.unique(a.astype(np.intp), return_inverse=True)
    out = np.zeros((w.shape[0], used.size))
    np.add.at(out.T, merged, w.T)
    return used.astype(np.intp), out
