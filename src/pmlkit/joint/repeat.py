"""The same column released several times with fresh randomness: the exact leakage of the
whole sequence, over type classes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import as_distribution, check_count, fmt
from ..errors import TooLargeError, ValidationError
from ..mechanism import Mechanism, as_matrix
from ..sets import L1Ball, UncertaintySet
from .product import check_joint_set, is_matrix

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

__all__ = ["MAX_RELEASE_CLASSES", "aligned_rows", "release_leakage", "repeated_leakage"]

#: Largest number of output classes :func:`release_leakage` enumerates.
MAX_RELEASE_CLASSES = 2_000_000


def aligned_rows(mechanisms: Sequence[Any], name: str = "mechanisms") -> list[np.ndarray]:
    """The matrices of mechanisms that act on the same column, with their rows in the order
    of the first mechanism's input labels.

    Mechanisms are matched by their input labels, never by position: a
    :class:`~pmlkit.Mechanism` listing the same labels in another order has its rows
    permuted; a different set of labels is refused. A plain matrix has the labels
    ``0..N-1``.

    Examples
    --------
    >>> import pmlkit
    >>> a = pmlkit.Mechanism([[0.9, 0.1], [0.2, 0.8]], ["F", "M"])
    >>> b = pmlkit.Mechanism([[0.2, 0.8], [0.9, 0.1]], ["M", "F"])
    >>> [w.tolist() for w in aligned_rows([a, b])][1]
    [[0.9, 0.1], [0.2, 0.8]]
    """
    mechs = [m if isinstance(m, Mechanism) else Mechanism(as_matrix(m, f"{name}[{i}]"))
             for i, m in enumerate(mechanisms)]
    labels = mechs[0].input_labels
    where = {lab: i for i, lab in enumerate(labels)}
    out = []
    for i, m in enumerate(mechs):
        if m.input_labels == labels:
            out.append(m.matrix)
            continue
        if len(m.input_labels) != len(labels) or set(m.input_labels) != set(labels):
            raise ValidationError(
                f"every release must act on the same column: {name}[{i}] has input labels "
                f"{fmt(list(m.input_labels))}, {name}[0] has {fmt(list(labels))}")
        order = np.argsort([where[lab] for lab in m.input_labels])
        out.append(m.matrix[order])
    return out


def _types(m: int, k: int) -> np.ndarray:
    """All count vectors (types) of ``k`` draws from ``m`` outputs: ``C(m + k - 1, k) x m``."""
    combos = np.array(list(itertools.combinations_with_replacement(range(m), k)),
                      dtype=np.int64).reshape(-1, k)
    counts = np.zeros((combos.shape[0], m), dtype=np.int64)
    np.add.at(counts, (np.arange(combos.shape[0])[:, None], combos), 1)
    return counts


def _log_type_columns(w: np.ndarray, types: np.ndarray) -> np.ndarray:
    """``log prod_y W[x, y]^{n_y}`` for each type ``n`` (rows) and input ``x``: ``(N, T)``;
    ``-inf`` where a used output has ``W[x, y] = 0``."""
    zero = w <= 0
    with np.errstate(divide="ignore"):
        logw = np.where(zero, 0.0, np.log(np.where(zero, 1.0, w)))
    out = logw @ types.T.astype(np.float64)
    dead = (zero.astype(np.int64) @ (types.T > 0).astype(np.int64)) > 0
    out[dead] = -math.inf
    return out


def release_leakage(mechanisms: Sequence[Any], prior: ArrayLike | None = None, *,
                    uncertainty_set: Any = None) -> float:
    """Exact PML of releasing the same column through each of ``mechanisms`` with fresh
    randomness (e.g. this month and next month).

    The release is the mechanism with rows ``x`` and columns ``(y_1, ..., y_R)``, entries
    ``prod_r W_r[x, y_r]``. Releases through the same mechanism are exchangeable: the
    column of a sequence depends only on its type (the count of each output), so the
    exact worst case runs over ``prod_g C(M_g + k_g - 1, k_g)`` classes (``k_g`` releases
    through the ``g``-th distinct mechanism, ``M_g`` outputs) instead of ``prod M^k``
    sequences. Computed in logs (products of many small probabilities do not underflow).

    Parameters
    ----------
    mechanisms
        The mechanisms of the releases (each ``N x M_r``, same ``N``), matched by their
        input labels (:func:`aligned_rows`: rows are permuted to the first mechanism's
        label order; other labels are refused); identical matrices are grouped.
    prior
        One distribution (exact ``eps_min``) in the order of the first mechanism's input
        labels, or
    uncertainty_set
        a :mod:`pmlkit.sets` set (exact worst case over it). Exactly one of the two.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> # two answers "0, 0" under the uniform prior: log(0.5625 / 0.3125) = log 1.8
    >>> round(pmlkit.release_leakage([rr, rr], [0.5, 0.5]), 6)
    0.587787
    """
    from ..worstcase import column_values

    if isinstance(mechanisms, Mechanism | np.ndarray) or not isinstance(mechanisms, Sequence) \
            or is_matrix(mechanisms):
        raise ValidationError(
            f"mechanisms must be a sequence of mechanisms (one per release), got "
            f"{fmt(mechanisms)}")
    if not mechanisms:
        raise ValidationError("mechanisms must hold at least 1 mechanism, got none")
    ws = aligned_rows(mechanisms)
    n = ws[0].shape[0]
    if (prior is None) == (uncertainty_set is None):
        raise ValidationError("give exactly one of prior and uncertainty_set")
    if prior is not None:
        p = as_distribution(prior, "prior")
        if p.size != n:
            raise ValidationError(f"prior has {p.size} entries but the mechanisms {n} rows")
        uset: UncertaintySet = L1Ball(p, 0.0)
    else:
        uset = check_joint_set(uncertainty_set, n)
    groups: list[tuple[np.ndarray, int]] = []
    for w in ws:
        for g, (u, c) in enumerate(groups):
            if u.shape == w.shape and np.array_equal(u, w):
                groups[g] = (u, c + 1)
                break
        else:
            groups.append((w, 1))
    total = math.prod(math.comb(w.shape[1] + c - 1, c) for w, c in groups)
    if total > MAX_RELEASE_CLASSES or total * n > 4 * MAX_RELEASE_CLASSES:
        raise TooLargeError(
            f"the releases have {total} output classes (types) over N = {n} inputs; at "
            f"most {MAX_RELEASE_CLASSES} classes and {4 * MAX_RELEASE_CLASSES} class x "
            "input entries are enumerated")
    logv = np.zeros((n, 1))
    for w, c in groups:
        lg = _log_type_columns(w, _types(w.shape[1], c))
        logv = (logv[:, :, None] + lg[:, None, :]).reshape(n, -1)
    top = logv.max(axis=0)
    live = top > -math.inf
    cols = np.zeros_like(logv)
    cols[:, live] = np.exp(logv[:, live] - top[live])  # max over x is 1 in every column
    vals = column_values(cols, uset)
    best = float(vals.max())
    return math.inf if best == math.inf else max(0.0, best)


def repeated_leakage(mechanism: Any, k: int, prior: ArrayLike | None = None, *,
                     uncertainty_set: Any = None) -> float:
    """Exact PML of releasing one column ``k`` times through ``mechanism`` with fresh
    randomness: the worst case over the ``C(M + k - 1, k)`` type classes
    (:func:`release_leakage` with ``k`` copies).

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> round(pmlkit.repeated_leakage(rr, 2, [0.5, 0.5]), 6)  # log 1.8
    0.587787
    """
    k = check_count(k, "k", minimum=1)
    return release_leakage([mechanism] * k, prior, uncertainty_set=uncertainty_set)

