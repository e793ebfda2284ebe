"""The guarantee attached to a mechanism designed from samples (paper Figure flowchart)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..mechanism import Mechanism

__all__ = ["DesignResult", "Guarantee"]


def _num(x: float | None, digits: int = 6) -> str:
    return "n/a" if x is None else f"{x:.{digits}g}"


@dataclass(frozen=True, eq=False)
class Guarantee:
    """What a mechanism designed from ``m`` samples guarantees: (eps, delta)-PML.

    With probability at least ``1 - delta`` over the estimation sample the true distribution
    lies in ``set`` (for ``confidence="l1"`` the ball ``B_beta(p_hat)`` of Thm weissman with
    ``beta = beta*(delta)``, eq. betastar), and the mechanism is eps-PML for every
    distribution in ``set``: its exact worst case over the set is ``certified_eps <= eps``
    (Def. localcap, computed by :func:`pmlkit.worstcase.leakage_capacity`).

    Attributes
    ----------
    eps, delta
        The guarantee: ``P[mechanism not eps-PML for the true distribution] <= delta``.
    m, n
        Sample size and alphabet size N.
    beta
        The l1 radius (``None`` for sets that are not l1-balls).
    confidence
        How the set was built (``"l1"`` or a :mod:`pmlkit.confidence` method).
    set
        The set's ``to_dict()``.
    certified_eps
        Exact worst-case eps of the mechanism over the set.
    estimate, categories
        ``p_hat`` and its labels.
    utility, utility_value, optimality
        The utility's name, its value at ``p_hat`` (nats for mutual information) and
        ``"exact"`` or ``"lower bound: ..."``.
    eps_prime
        ``log(e^eps / (1 + beta e^eps / 2))`` (eq. optimalepsdash) for l1-balls, else ``None``.
    utility_randomized_response
        Utility at ``p_hat`` of eps-LDP randomized response (``None`` if not comparable).
    utility_eps_prime_design
        Utility of the optimal fixed-prior design at eps' (eq. LPsubset: the paper's design),
        ``None`` when eps' < 0 or it cannot be computed exactly.
    description
        How the set's coverage is justified.
    """

    eps: float
    delta: float
    m: int
    n: int
    beta: float | None
    confidence: str
    set: Mapping[str, Any] = field(repr=False)
    certified_eps: float
    estimate: tuple[float, ...] = field(repr=False)
    categories: tuple[Any, ...] = field(repr=False)
    utility: str = "mutual_information"
    utility_value: float = math.nan
    optimality: str = "exact"
    eps_prime: float | None = None
    utility_randomized_response: float | None = None
    utility_eps_prime_design: float | None = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of every field."""
        return {
            "eps": self.eps, "delta": self.delta, "m": self.m, "n": self.n,
            "beta": self.beta, "confidence": self.confidence, "set": dict(self.set),
            "certified_eps": self.certified_eps, "estimate": list(self.estimate),
            "categories": list(self.categories), "utility": self.utility,
            "utility_value": self.utility_value, "optimality": self.optimality,
            "eps_prime": self.eps_prime,
            "utility_randomized_response": self.utility_randomized_response,
            "utility_eps_prime_design": self.utility_eps_prime_design,
            "description": self.description,
        }

    def __str__(self) -> str:
        kind = self.set.get("kind", "?")
        where = (f"the l1-ball of radius beta = {_num(self.beta)} around the estimate"
                 if kind == "l1_ball" else f"the {kind} set from method {self.confidence!r}")
        est = ", ".join(f"{c}: {p:.4g}" for c, p in zip(self.categories, self.estimate,
                                                          strict=True))
        lines = [
            f"({_num(self.eps)}, {self.delta:.3g})-PML guarantee",
            f"  With probability >= 1 - {self.delta:.3g} over the m = {self.m} estimation "
            f"samples, the true distribution lies in {where};",
            f"  the mechanism is eps-PML for every distribution in that set: certified "
            f"worst-case eps = {_num(self.certified_eps, 9)} <= eps = {_num(self.eps)}.",
            f"  N = {self.n} categories; estimate p_hat = {{{est}}}",
            f"  utility ({self.utility}"
            f"{', nats' if self.utility == 'mutual_information' else ''}) at p_hat: "
            f"{_num(self.utility_value)} "
            f"[{self.optimality}]",
            f"    eps-LDP randomized response:      {_num(self.utility_randomized_response)}",
        ]
        if self.eps_prime is not None:
            lines.append(f"    fixed-prior design at eps' = {_num(self.eps_prime)}: "
                         f"{_num(self.utility_eps_prime_design)} (paper, eq. LPsubset)")
        if self.description:
            lines.append(f"  set coverage: {self.description}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Notebook view: the guarantee as a table (strings HTML-escaped)."""
        from .._html import guarantee_html

        return guarantee_html(self)


@dataclass(frozen=True, eq=False)
class DesignResult:
    """Result of :func:`pmlkit.design.design_from_samples`: the certified mechanism and its
    guarantee."""

    mechanism: Mechanism
    guarantee: Guarantee

    @property
    def optimality_gap(self) -> float | None:
        """Certified relative optimality gap of the design (0: optimal to solver tolerance;
        ``None``: no bound available), as recorded in the mechanism's parameters."""
        g = self.mechanism.parameters.get("optimality_gap")
        return None if g is None else float(g)

    def __str__(self) -> str:
        return f"{self.mechanism!r}\n{self.guarantee}"

    def _repr_html_(self) -> str:
        """Notebook view: the mechanism's table followed by its guarantee's."""
        return self.mechanism._repr_html_() + self.guarantee._repr_html_()
