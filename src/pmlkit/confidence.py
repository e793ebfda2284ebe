"""Confidence sets for the true distribution: counts + delta -> uncertainty set.

The paper (Section distest) turns m samples into the l1-ball of Thm weissman with the
distribution-free radius of eq. betastar. That ball is valid but loose: it grows with
``N log 2`` and ignores how skewed the estimate is. pmlkit goes beyond the paper with other
sets that contain the true distribution with probability at least ``1 - delta`` (the
*coverage* of the set), each citing the theorem it relies on in its ``description``:

=============  ===========================================================================
``"l1"``       the paper's ball ``B_beta*(p_hat)`` (Thm weissman with ``phi >= 2``,
               eq. betastar); the default, to reproduce the paper.
=============  ===========================================================================

The worst-case machinery (:mod:`pmlkit.worstcase`) is exact over every set returned here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ._validation import _as_float_array, check_delta, fmt
from .errors import ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from .sets import UncertaintySet

__all__ = ["METHODS", "ConfidenceSet", "confidence_set", "l1_set"]

#: Names accepted by :func:`confidence_set`'s ``method``.
METHODS: tuple[str, ...] = ("l1",)


@dataclass(frozen=True)
class ConfidenceSet:
    """A set that contains the true distribution with probability ``>= 1 - delta``.

    Attributes
    ----------
    set
        The :class:`pmlkit.sets.UncertaintySet` (``L1Ball``, ``Box``, ...).
    method
        The method name (one of :data:`METHODS`).
    delta
        The failure probability over the estimation sample: ``P[P_true not in set] <= delta``.
    m
        Number of samples the counts hold.
    n
        Alphabet size N.
    description
        The construction and the coverage theorem it relies on.
    p_hat
        The empirical distribution ``counts / m`` (read-only).
    details
        Method-specific numbers (radius, delta split, ...), JSON-serialisable.
    """

    set: UncertaintySet
    method: str
    delta: float
    m: int
    n: int
    description: str
    p_hat: np.ndarray = field(repr=False)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (the set via its own ``to_dict``)."""
        return {
            "method": self.method,
            "delta": self.delta,
            "m": self.m,
            "n": self.n,
            "description": self.description,
            "p_hat": [float(x) for x in self.p_hat],
            "details": dict(self.details),
            "set": self.set.to_dict(),
        }


def _as_counts(counts: Any, name: str = "counts") -> np.ndarray:
    """Validate category counts: 1-D, at least 2 categories, integers >= 0, sum >= 1."""
    if hasattr(counts, "counts") and not isinstance(counts, np.ndarray):
        counts = counts.counts  # an EmpiricalDistribution
    arr = _as_float_array(counts, name, 1)
    if arr.size < 2:
        raise ValidationError(
            f"{name} must have at least 2 categories, got {arr.size} ({fmt(arr)})")
    if not np.all(arr == np.floor(arr)):
        bad = arr[arr != np.floor(arr)][0]
        raise ValidationError(
            f"{name} must be integers >= 0, got {bad!r} in {fmt(arr)}")
    if arr.sum() < 1:
        raise ValidationError(f"{name} must sum to at least 1 sample, got {fmt(arr)}")
    return arr.astype(np.int64)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def l1_set(counts: Any, delta: Any) -> ConfidenceSet:
    """The paper's l1-ball around the empirical distribution (Thm weissman, eq. betastar).

    ``B = {Q in simplex : ||Q - p_hat||_1 <= beta*}`` with
    ``beta* = sqrt(2/m (log(2^N - 2) - log delta))`` (:func:`pmlkit.estimation.l1_radius`).

    Coverage: Weissman et al. (2003, Thm 1) give
    ``P[||P - p_hat||_1 >= beta] <= (2^N - 2) exp(-m phi(kappa_P) beta^2 / 4)`` and
    ``phi(kappa_P) >= 2`` for every P, so ``P[P not in B] <= delta`` whatever P is.
    """
    from .estimation import l1_radius
    from .sets import L1Ball

    c = _as_counts(counts)
    d = check_delta(delta)
    m, n = int(c.sum()), int(c.size)
    p_hat = c / m
    beta = float(l1_radius(d, m, n))
    return ConfidenceSet(
        set=L1Ball(p_hat, beta),
        method="l1",
        delta=d,
        m=m,
        n=n,
        description=(
            f"l1-ball of radius beta*={beta:.6g} around the empirical distribution "
            f"(m={m}, N={n}); coverage 1-delta={1 - d:.6g} by Weissman et al. (2003) "
            "Thm 1 with phi(kappa)>=2 (paper: Thm weissman, eq. betastar)"),
        p_hat=_readonly(p_hat),
        details={"radius": beta},
    )


_BUILDERS = {"l1": l1_set}


def confidence_set(counts: Any, delta: Any, *, method: str = "l1") -> ConfidenceSet:
    """A set containing the true distribution with probability ``>= 1 - delta``.

    Parameters
    ----------
    counts
        Category counts (1-D, integers >= 0, at least 2 categories, at least 1 sample),
        or an :class:`pmlkit.estimation.EmpiricalDistribution`.
    delta
        Failure probability in ``(0, 1]``.
    method
        One of :data:`METHODS`. ``"l1"`` is the paper's ball (Thm weissman, eq. betastar).

    Returns
    -------
    ConfidenceSet
    """
    if not isinstance(method, str) or method not in _BUILDERS:
        raise ValidationError(
            f"method must be one of {', '.join(METHODS)}, got {fmt(method)}")
    return _BUILDERS[method](counts, delta)
