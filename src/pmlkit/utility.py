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


#: Numerical rank tolerance, relative to the largest singular value (at least 1): the rank
#: :func:`publish_assignment` keeps (``keep_rank=True``) and
#: :func:`pmlkit.design.estimation.mechanism_rank` reports.
RANK_TOL = 1e-10


def _rank(v: np.ndarray) -> tuple[int, float]:
    """Numerical rank of ``v`` (:data:`RANK_TOL`) and its smallest singular value relative
    to the largest (0 for an empty or zero matrix)."""
    s = np.linalg.svd(v, compute_uv=False)
    if s.size == 0 or s[0] <= 0:
        return 0, 0.0
    return int((s > RANK_TOL * max(1.0, float(s[0]))).sum()), float(s[-1] / s[0])


def publish_assignment(mechanism: ArrayLike, prior: ArrayLike, *,
                       merge_surplus: bool = True, keep_rank: bool = False
                       ) -> NDArray[np.intp]:
    """The input each output of a mechanism is published as: the assignment that maximises
    the probability that the published value equals the true one under ``prior``.

    With ``M <= N`` outputs, each output ``j`` gets a distinct input ``a(j)`` maximising

        P[published = true] = sum_j prior(a(j)) W[a(j), j]

    over all injective maps ``a`` (a linear assignment with weights
    ``prior(x) W[x, j]``, solved exactly by :func:`scipy.optimize.linear_sum_assignment`).
    With more outputs than inputs no injective map exists, and outputs published as the
    same input are merged (:func:`published_channel`, the channel ``V = W A`` with
    ``A[j, a(j)] = 1``):

    - ``merge_surplus=True`` (default), ``keep_rank=False``: each output is published as
      its most probable input ``argmax_x prior(x) W[x, j]`` (ties to the first input), the
      maximum of ``P[published = true]`` over all maps. It may merge away what the
      mechanism was chosen for: the rank of ``V`` can fall below that of ``W``, and the
      distribution of the inputs is then no longer identified from the releases.
    - ``keep_rank=True`` (what pmlkit's designs and joint releases use): the map keeps the
      numerical rank (:data:`RANK_TOL`): ``rank V = rank W``. It is the most-probable-input
      map when that keeps the rank; otherwise a greedy one: a basis of ``rank W`` outputs
      gets distinct inputs by the linear assignment above (over all outputs if the ``N``
      outputs it picks are independent enough, else over independent outputs found by a
      pivoted QR), then every other output, in decreasing order of its largest weight
      ``max_x prior(x) W[x, j]``, is published as the input of largest weight among those
      whose merge keeps the rank (the rank-one update ``V + W[:, j] e_x^T``; for a
      full-rank ``V`` some input always keeps it, by the matrix determinant lemma
      ``det(V + w e_x^T) = det V (1 + (V^{-1} w)_x)`` and ``w >= 0``; if rounding rejects
      every input, the one leaving the largest smallest singular value). A heuristic: the
      most probable-input map's ``P[published = true]`` bounds it from above.
    - ``merge_surplus=False``: the ``N`` outputs of the best assignment of distinct inputs
      get them and the ``M - N`` others get ``-1`` (no input: the caller names them).

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
    merge_surplus
        With ``M > N``: publish every output as an input (merging), or leave the surplus
        outputs without one (``-1``).
    keep_rank
        With ``M > N`` and ``merge_surplus``: keep the rank of the mechanism (see above).

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

    Three outputs, each most probably the common input 1: publishing all three as input 1
    would release a constant; keeping the rank (2) publishes output 0, the one whose
    weight ``0.1 * 0.6`` the first input has the most of, as input 0:

    >>> w = [[0.6, 0.3, 0.1], [0.2, 0.4, 0.4]]
    >>> publish_assignment(w, [0.1, 0.9]).tolist()
    [1, 1, 1]
    >>> publish_assignment(w, [0.1, 0.9], keep_rank=True).tolist()
    [0, 1, 1]
    """
    from scipy.optimize import linear_sum_assignment

    w = as_mechanism(mechanism)
    p = as_distribution(prior, "prior")
    check_prior_matches(w, p)
    if not isinstance(keep_rank, bool | np.bool_):
        raise ValidationError(f"keep_rank must be True or False, got {fmt(keep_rank)}")
    score = p[:, None] * w  # P(true x, output j) under the prior
    n, m = w.shape
    if m <= n or not merge_surplus:
        rows, cols = linear_sum_assignment(-score)
        best = np.full(m, -1, dtype=np.intp)
        best[cols] = rows
        return best
    top = np.asarray(np.argmax(score, axis=0), dtype=np.intp)
    if not keep_rank:
        return top
    return _rank_keeping_map(w, score, top)


#: Most single-output moves of :func:`publish_assignment`'s rank-keeping search (each
#: raises ``P[published = true]`` or the rank, so it always ends; the cap bounds its time).
KEEP_RANK_MAX_MOVES = 10_000


def _rank_keeping_map(w: np.ndarray, score: np.ndarray, top: np.ndarray
                      ) -> NDArray[np.intp]:
    """The rank-keeping map of :func:`publish_assignment` (``M > N``, ``keep_rank``)."""
    from scipy.optimize import linear_sum_assignment

    n, m = w.shape
    rank_w = _rank(w)[0]
    cols = np.arange(m)

    def channel(a: np.ndarray) -> np.ndarray:
        v = np.zeros((n, n))
        sel = a >= 0
        np.add.at(v.T, a[sel], w[:, sel].T)
        return v

    def moved(v: np.ndarray, j: int, src: int, dst: int) -> np.ndarray:
        out = v.copy()
        if src >= 0:
            out[:, src] -= w[:, j]
        out[:, dst] += w[:, j]
        return out

    if _rank(channel(top))[0] >= rank_w:
        return top
    starts: list[np.ndarray] = []
    # 1. the most-probable-input map, repaired: the move of one output to another input
    #    that raises the rank at the least loss of P[published = true], until it is kept
    a = top.copy()
    v = channel(a)
    cur = _rank(v)[0]
    for _ in range(rank_w):
        loss = score[a, cols][None, :] - score  # (x, j): loss of publishing j as x
        loss[a, cols] = np.inf
        for flat in np.argsort(loss, axis=None, kind="stable"):
            x, j = divmod(int(flat), m)
            if not np.isfinite(loss[x, j]):
                break
            v2 = moved(v, j, int(a[j]), x)
            r2 = _rank(v2)[0]
            if r2 > cur:
                a[j], v, cur = x, v2, r2
                break
        else:  # pragma: no cover - every move tried
            break
        if cur >= rank_w:
            starts.append(a)
            break
    # 2. a basis: distinct inputs for rank_w independent outputs (the linear assignment
    #    over all outputs, or over independent ones from a pivoted QR), then each other
    #    output, in decreasing order of its largest weight, to the best input keeping it
    b = np.full(m, -1, dtype=np.intp)
    rows, picked = linear_sum_assignment(-score)
    b[picked] = rows
    if _rank(channel(b))[0] < rank_w:
        from scipy.linalg import qr

        piv = qr(w, pivoting=True, mode="r")[1][:rank_w]
        rows, sub = linear_sum_assignment(-score[:, piv])
        b[:] = -1
        b[piv[sub]] = rows
    v = channel(b)
    rest = np.flatnonzero(b < 0)
    rest = rest[np.argsort(-score[:, rest].max(axis=0), kind="stable")]
    for j in rest:
        fallback: tuple[float, int] | None = None
        for x in np.argsort(-score[:, j], kind="stable"):
            r, small = _rank(moved(v, int(j), -1, int(x)))
            if r >= rank_w:
                b[j] = x
                break
            if fallback is None or small > fallback[0]:
                fallback = (small, int(x))
        else:  # pragma: no cover - rounding rejected every input
            assert fallback is not None
            b[j] = fallback[1]
        v[:, b[j]] += w[:, j]
    starts.append(b)
    # 3. each start improved by single moves that raise P[published = true] and keep the
    #    rank (the largest gain first); the better result is returned
    best: tuple[float, np.ndarray] | None = None
    for a in starts:
        v = channel(a)
        for _ in range(KEEP_RANK_MAX_MOVES):
            gain = score - score[a, cols][None, :]
            order = np.argsort(-gain, axis=None, kind="stable")
            for flat in order:
                x, j = divmod(int(flat), m)
                if gain[x, j] <= 1e-15:
                    break
                v2 = moved(v, j, int(a[j]), x)
                if _rank(v2)[0] >= rank_w:
                    a[j], v = x, v2
                    break
            else:
                break
            if gain[x, j] <= 1e-15:
                break
        total = float(score[a, cols].sum())
        if best is None or total > best[0]:
            best = (total, a)
    assert best is not None
    return best[1]


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
