"""The guarantee attached to a mechanism designed from samples (paper Figure flowchart).

:class:`Guarantee` is the report of :func:`pmlkit.design.design_from_samples`: a flat,
printable view of the mechanism's typed :class:`pmlkit.guarantee.PMLGuarantee` and
:class:`pmlkit.guarantee.Provenance` plus the comparisons the design makes (randomized
response, the fixed-prior design at eps'). It is built from those typed objects
(:meth:`Guarantee.from_mechanism`), never from the mechanism's flat ``parameters``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._validation import up_text
from ..errors import ValidationError
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

    Examples
    --------
    >>> from pmlkit.design import design_from_samples
    >>> g = design_from_samples(["a"] * 60 + ["b"] * 40, 1.0, 1e-3).guarantee
    >>> g.m, g.n, g.delta, g.confidence, g.certified_eps <= g.eps + 1e-9
    (100, 2, 0.001, 'l1', True)
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

    @classmethod
    def from_mechanism(cls, mechanism: Mechanism, *, categories: Sequence[Any] | None = None,
                       utility_randomized_response: float | None = None,
                       utility_eps_prime_design: float | None = None) -> Guarantee:
        """The report of a mechanism designed from samples, read from its typed guarantee
        (basis ``"sample"``) and provenance.

        Raises
        ------
        ValidationError
            If the mechanism carries no sample-based guarantee or no estimate.

        Examples
        --------
        >>> from pmlkit.design import Guarantee, design_from_samples
        >>> res = design_from_samples(["a"] * 60 + ["b"] * 40, 1.0, 1e-3)
        >>> Guarantee.from_mechanism(res.mechanism).estimate
        (0.6, 0.4)
        """
        g, prov = mechanism.guarantee, mechanism.provenance
        if g is None or g.basis != "sample" or g.m is None or g.method is None:
            raise ValidationError(
                "mechanism must carry a sample-based guarantee (basis 'sample'), got "
                f"{'none' if g is None else repr(g.basis)}")
        if prov.estimate is None:
            raise ValidationError("mechanism's provenance records no estimate")
        from ..sets import L1Ball

        ep = prov.details.get("eps_prime")
        return cls(
            eps=g.eps, delta=g.delta, m=g.m, n=g.n,
            beta=float(g.set.radius) if isinstance(g.set, L1Ball) else None,
            confidence=g.method, set=g.set.to_dict(), certified_eps=g.certified_eps,
            estimate=tuple(prov.estimate),
            categories=tuple(mechanism.input_labels if categories is None else categories),
            utility=prov.utility or "", utility_value=(
                math.nan if prov.utility_value is None else prov.utility_value),
            optimality=prov.optimality or "",
            eps_prime=None if ep is None else float(ep),
            utility_randomized_response=utility_randomized_response,
            utility_eps_prime_design=utility_eps_prime_design, description=g.statement)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of every field.

        Examples
        --------
        >>> from pmlkit.design import design_from_samples
        >>> d = design_from_samples(["a"] * 60 + ["b"] * 40, 1.0, 1e-3).guarantee.to_dict()
        >>> d["set"]["kind"], d["categories"]
        ('l1_ball', ['a', 'b'])
        """
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
        from ..plain import plain_sentence

        kind = self.set.get("kind", "?")
        where = (f"the l1-ball of radius beta = {_num(self.beta)} around the estimate"
                 if kind == "l1_ball" else f"the {kind} set from method {self.confidence!r}")
        est = ", ".join(f"{c}: {p:.4g}" for c, p in zip(self.categories, self.estimate,
                                                          strict=True))
        lines = [
            f"({up_text(self.eps)}, {self.delta:.3g})-PML guarantee",
            f"  With probability >= 1 - {self.delta:.3g} over the m = {self.m} estimation "
            f"samples, the true distribution lies in {where};",
            f"  the mechanism is eps-PML for every distribution in that set: certified "
            f"worst-case eps = {up_text(self.certified_eps, 9)} <= eps = {up_text(self.eps)}.",
            f"  {plain_sentence(self.eps)}",
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
    guarantee.

    ``guarantee`` is the printable report; the mechanism's own
    ``mechanism.guarantee`` is the typed :class:`pmlkit.guarantee.PMLGuarantee` it is
    read from.

    Examples
    --------
    >>> from pmlkit.design import design_from_samples
    >>> res = design_from_samples(["a"] * 60 + ["b"] * 40, 1.0, 1e-3)
    >>> res.mechanism.guarantee.basis, res.optimality_gap
    ('sample', 0.0)
    >>> res.guarantee.certified_eps == res.mechanism.guarantee.certified_eps
    True
    """

    mechanism: Mechanism
    guarantee: Guarantee

    @classmethod
    def from_mechanism(cls, mechanism: Mechanism, *, categories: Sequence[Any] | None = None,
                       utility_randomized_response: float | None = None,
                       utility_eps_prime_design: float | None = None) -> DesignResult:
        """The result for a mechanism with a sample-based guarantee
        (:meth:`Guarantee.from_mechanism`)."""
        return cls(mechanism, Guarantee.from_mechanism(
            mechanism, categories=categories,
            utility_randomized_response=utility_randomized_response,
            utility_eps_prime_design=utility_eps_prime_design))

    @property
    def optimality_gap(self) -> float | None:
        """Certified relative optimality gap of the design (0: optimal to solver tolerance;
        ``None``: no bound available), from the mechanism's provenance."""
        return self.mechanism.provenance.optimality_gap

    def __str__(self) -> str:
        return f"{self.mechanism!r}\n{self.guarantee}"

    def _repr_html_(self) -> str:
        """Notebook view: the mechanism's table followed by its guarantee's."""
        return self.mechanism._repr_html_() + self.guarantee._repr_html_()
