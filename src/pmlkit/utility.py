"""Utilities of a mechanism: mutual information and the per-column sub-linear functions.

A *sub-convex* utility (paper eq. subconvexdef, after Kairouz et al. and grosse2023extremal)
is ``U(W, p) = sum_j mu(W[:, j], p)`` with ``mu(., p)`` sub-linear: convex and positively
homogeneous (``mu(c w, p) = c mu(w, p)`` for ``c >= 0``). Mutual information is one:

    mu_MI(w, p) = sum_i p_i w_i log( w_i / (p . w) ),    0 log 0 = 0,

and ``sum_j mu_MI(W[:, j], p) = I(X; Y)`` in nats. The designers of :mod:`pmlkit.design`
evaluate ``mu`` on many candidate columns at once, so the functions here take a 2-D array
of columns ``(N, K)`` and return ``K`` values.

Linear utilities (expected gain ``sum_i p_i sum_j g[i, j] W[i, j]``; the probability
``P[Y = X]`` is the identity gain) are provided by :func:`expected_gain`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import as_distribution, as_mechanism, check_prior_matches
from .errors import ValidationError

__all__ = [
    "accuracy",
    "expected_gain",
    "mutual_information",
    "mutual_information_columns",
]


def mutual_information_columns(columns: Any, prior: Any) -> np.ndarray:
    """Per-column mutual-information terms ``mu_MI(w, p)`` of the columns of ``columns``.

    ``mu_MI(w, p) = sum_i p_i w_i log(w_i / (p . w))`` with ``0 log 0 = 0`` (and ``0`` for a
    column with ``p . w = 0``). It is convex and positively homogeneous in ``w`` (a
    perspective of a convex function), i.e. sub-linear, so ``I(X;Y) = sum_j mu(W[:, j], p)``
    is a sub-convex utility (paper eq. subconvexdef).

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
    return out[0] if one_d else out


def mutual_information(mechanism: Any, prior: Any) -> float:
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
    """
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    return float(max(mutual_information_columns(w, p).sum(), 0.0))


def _gain_matrix(gain: Any, shape: tuple[int, int]) -> np.ndarray:
    try:
        g = np.asarray(gain, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"gain must be a 2-D array of real numbers, got {gain!r}") \
            from exc
    if g.shape != shape:
        raise ValidationError(f"gain must have shape {shape}, got {g.shape}")
    if not np.isfinite(g).all():
        raise ValidationError("gain must be finite (no NaN or inf)")
    return g


def expected_gain(mechanism: Any, prior: Any, gain: Any) -> float:
    """Linear utility ``sum_i p_i sum_j gain[i, j] W[i, j]`` (expected gain).

    ``gain`` is ``N x M`` like the mechanism; the identity gives ``P[Y = X]``
    (:func:`accuracy`), ``-(1 - I)`` gives minus the Hamming distortion.
    """
    w = as_mechanism(mechanism)
    p = as_distribution(prior)
    check_prior_matches(w, p)
    g = _gain_matrix(gain, w.shape)
    return float(p @ (g * w).sum(axis=1))


def accuracy(mechanism: Any, prior: Any) -> float:
    """``P[Y = X] = sum_i p_i W[i, i]`` for a square mechanism (outputs = inputs)."""
    w = as_mechanism(mechanism)
    if w.shape[0] != w.shape[1]:
        raise ValidationError(
            f"accuracy needs a square mechanism (outputs = inputs), got shape {w.shape}")
    return expected_gain(w, prior, np.eye(w.shape[0]))
