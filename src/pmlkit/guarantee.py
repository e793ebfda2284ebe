"""What a mechanism guarantees, and how it was made: two typed, immutable descriptions.

:class:`PMLGuarantee` answers "what does this mechanism promise?": an ``eps`` that holds,
for every output, for every distribution in an uncertainty :attr:`~PMLGuarantee.set`, and
what the claim that the true distribution lies in that set rests on
(:attr:`~PMLGuarantee.basis`): a confidence set built from ``m`` samples that fails with
probability at most ``delta`` (``"sample"``), a distribution taken as known (``"prior"``),
every distribution (``"all"``, as for a locally differentially private mechanism), or a set
the user supplied (``"given"``). :attr:`~PMLGuarantee.certified_eps` is the exact worst case
of the mechanism over the set, computed by pmlkit; it never exceeds ``eps``.

:class:`Provenance` answers "how was it made?": the designer, the confidence method, the
utility and its value at the estimate, whether the design is optimal and its certified
optimality gap, and the pmlkit version.

Stability contract
------------------
The serialised forms (``to_dict``) are part of pmlkit's file formats and are stable:

* each carries a ``"schema"`` tag and an integer ``"version"``;
* within a version, fields keep their names and meanings; a field may be added only with a
  default that reproduces the old reading;
* a change of meaning bumps the version, and ``from_dict`` keeps reading every earlier
  version;
* ``from_dict`` is strict: an unknown schema or version, a missing or unexpected field, or a
  value of the wrong type is refused with a :class:`~pmlkit.errors.ValidationError` naming
  the field (a file is input from outside, see :mod:`pmlkit.mechanism`).

The Python attributes follow the same rule: names listed here are not renamed without a
deprecation period.

Examples
--------
A guarantee for a known prior (the set is that one distribution):

>>> from pmlkit.guarantee import PMLGuarantee
>>> g = PMLGuarantee.for_prior([0.25, 0.75], eps=0.5, certified_eps=0.5)
>>> g.basis, g.delta, g.n
('prior', 0.0, 2)
>>> PMLGuarantee.from_dict(g.to_dict()) == g
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ._validation import check_real, fmt, to_jsonable, up_text
from ._version import __version__
from .errors import ValidationError
from .sets import Box, UncertaintySet, VertexSet, set_from_dict
from .worstcase import CERTIFY_TOL

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

    from .confidence import ConfidenceSet

__all__ = ["BASES", "PMLGuarantee", "PrivacyMechanism", "Provenance"]

#: What the claim "the true distribution lies in the set" rests on.
BASES: dict[str, str] = {
    "sample": "a confidence set built from m samples, failing with probability <= delta",
    "prior": "the distribution is taken as known: the set is that one distribution",
    "all": "every distribution on the alphabet (a local-DP style guarantee)",
    "given": "a set supplied by the user; its coverage is the user's claim",
}


def _finite_nonneg(value: Any, name: str, *, allow_inf: bool = False) -> float:
    x = check_real(value, name, low=0.0, allow_inf=allow_inf)
    return float(x)


def _strict_keys(d: Any, schema: str, version: int, keys: set[str], what: str) -> None:
    if not isinstance(d, Mapping):
        raise ValidationError(f"{what} must be a mapping, got {type(d).__name__}")
    if d.get("schema") != schema:
        raise ValidationError(f"{what} 'schema' must be {schema!r}, got {fmt(d.get('schema'))}")
    v = d.get("version")
    if isinstance(v, bool) or not isinstance(v, int) or v != version:
        raise ValidationError(f"{what} 'version' must be {version}, got {fmt(v)}")
    given = set(d) - {"schema", "version"}
    if given != keys:
        missing, extra = sorted(keys - given), sorted(given - keys)
        raise ValidationError(
            f"{what} fields do not match version {version}: "
            + "; ".join(s for s in (f"missing {missing}" if missing else "",
                                    f"unexpected {extra}" if extra else "") if s))


@dataclass(frozen=True, eq=False)
class PMLGuarantee:
    """An (eps, delta)-PML guarantee over an uncertainty set.

    The mechanism's pointwise maximal leakage is at most :attr:`eps` for every output and
    every distribution in :attr:`set`; with probability at least ``1 - delta`` (over the
    sample the set was built from) the true distribution is in the set. For mechanisms whose
    leakage is unbounded on a set of outputs (the Gaussian mechanism), :attr:`output_delta`
    bounds the probability of such an output, under every distribution in the set.

    Parameters
    ----------
    eps
        The promised bound, ``>= 0`` and finite.
    set
        The :class:`pmlkit.sets.UncertaintySet` the guarantee covers.
    certified_eps
        The mechanism's exact worst-case leakage over :attr:`set`, at most ``eps`` (up to
        the certification tolerance ``1e-9``).
    basis
        One of :data:`BASES`: ``"sample"``, ``"prior"``, ``"all"`` or ``"given"``.
    delta
        Probability that the true distribution is outside the set (``0`` unless
        ``basis == "sample"``).
    method
        The confidence method that built the set (``basis == "sample"`` only).
    m
        The number of samples the set was built from (``basis == "sample"`` only).
    statement
        The coverage statement in words (the theorem the set's coverage rests on).
    output_delta
        Upper bound on the probability of an output whose leakage exceeds ``eps``
        (``0`` for a pure eps-PML mechanism). This tail statement is about the released
        value itself and need not hold for a function of it (``docs/envelope.md``); the
        text form says so, and a post-processing-robust level is
        :meth:`pmlkit.additive.GaussianMechanism.envelope` /
        :func:`pmlkit.envelope.envelope_bound`.

    Examples
    --------
    A guarantee over every distribution on two categories (the simplex) for Warner's
    randomized response at ``eps = log 3``, whose worst case is exactly ``log 3``:

    >>> import math
    >>> from pmlkit.guarantee import PMLGuarantee
    >>> g = PMLGuarantee.for_all_distributions(2, eps=1.1, certified_eps=math.log(3))
    >>> g.basis, g.delta, g.n, g.certified_eps <= g.eps
    ('all', 0.0, 2, True)
    >>> PMLGuarantee(eps=0.5, set=g.set, certified_eps=0.6)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: certified_eps must not exceed eps (+1e-09), ...
    """

    SCHEMA: ClassVar[str] = "pmlkit-guarantee"
    VERSION: ClassVar[int] = 1

    eps: float
    set: UncertaintySet = field(repr=False)
    certified_eps: float
    basis: str = "given"
    delta: float = 0.0
    method: str | None = None
    m: int | None = None
    statement: str = ""
    output_delta: float = 0.0

    def __post_init__(self) -> None:
        eps = _finite_nonneg(self.eps, "eps")
        cert = _finite_nonneg(self.certified_eps, "certified_eps")
        if cert > eps + CERTIFY_TOL:
            raise ValidationError(
                f"certified_eps must not exceed eps (+{CERTIFY_TOL:g}), got certified_eps = "
                f"{cert!r} > eps = {eps!r}")
        if not isinstance(self.set, UncertaintySet):
            raise ValidationError(
                f"set must be a pmlkit.sets.UncertaintySet, got {type(self.set).__name__}")
        if self.basis not in BASES:
            raise ValidationError(
                f"basis must be one of {sorted(BASES)}, got {fmt(self.basis)}")
        # delta = 1 is allowed: a vacuous but true statement (the designers accept it)
        delta = float(check_real(self.delta, "delta", low=0.0, high=1.0))
        out_delta = float(check_real(self.output_delta, "output_delta", low=0.0, high=1.0,
                                     high_open=True))
        if self.basis == "sample":
            if not isinstance(self.method, str) or not self.method:
                raise ValidationError(
                    f"method must name the confidence method when basis is 'sample', "
                    f"got {fmt(self.method)}")
            if isinstance(self.m, bool) or not isinstance(self.m, int | np.integer) \
                    or self.m < 1:
                raise ValidationError(
                    f"m must be an integer >= 1 when basis is 'sample', got {fmt(self.m)}")
            object.__setattr__(self, "m", int(self.m))
        else:
            if delta != 0.0:
                raise ValidationError(
                    f"delta must be 0 when basis is {self.basis!r} (only a sample-based set "
                    f"can fail), got {delta!r}")
            if self.m is not None:
                raise ValidationError(
                    f"m must be None when basis is {self.basis!r}, got {fmt(self.m)}")
            if self.method is not None:
                raise ValidationError(
                    f"method must be None when basis is {self.basis!r} (no confidence set "
                    f"was built), got {fmt(self.method)}")
        if not isinstance(self.statement, str):
            raise ValidationError(f"statement must be a str, got {fmt(self.statement)}")
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "certified_eps", cert)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "output_delta", out_delta)

    # -- constructors -----------------------------------------------------------------
    @classmethod
    def from_confidence_set(cls, confidence: ConfidenceSet, *, eps: float,
                            certified_eps: float, output_delta: float = 0.0) -> PMLGuarantee:
        """The guarantee over a :class:`pmlkit.confidence.ConfidenceSet` (basis
        ``"sample"``)."""
        return cls(eps=eps, set=confidence.set, certified_eps=certified_eps, basis="sample",
                   delta=confidence.delta, method=confidence.method, m=confidence.m,
                   statement=confidence.description, output_delta=output_delta)

    @classmethod
    def for_prior(cls, prior: ArrayLike, *, eps: float, certified_eps: float,
                  output_delta: float = 0.0) -> PMLGuarantee:
        """The guarantee for one known distribution (basis ``"prior"``): the set is the
        single point ``prior``."""
        p = np.asarray(prior, dtype=np.float64)
        return cls(eps=eps, set=Box(p, p), certified_eps=certified_eps, basis="prior",
                   statement="the distribution is taken as known", output_delta=output_delta)

    @classmethod
    def for_all_distributions(cls, n: int, *, eps: float, certified_eps: float,
                              output_delta: float = 0.0) -> PMLGuarantee:
        """The guarantee for every distribution on ``n`` categories (basis ``"all"``): the
        set is the whole simplex, the convex hull of the ``n`` point masses."""
        return cls(eps=eps, set=VertexSet(np.eye(int(n))), certified_eps=certified_eps,
                   basis="all", statement="holds for every distribution",
                   output_delta=output_delta)

    # -- reading ------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Alphabet size N of the set."""
        return int(self.set.n)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PMLGuarantee):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle through the stable serialised form (validated again when unpickled), so
        a byte stream cannot carry a certified eps above eps or an impossible basis."""
        return (type(self).from_dict, (self.to_dict(),))

    def to_dict(self) -> dict[str, Any]:
        """The stable serialised form (see the module's stability contract)."""
        return {
            "schema": self.SCHEMA, "version": self.VERSION,
            "eps": self.eps, "certified_eps": self.certified_eps, "basis": self.basis,
            "delta": self.delta, "method": self.method, "m": self.m,
            "statement": self.statement, "output_delta": self.output_delta,
            "set": to_jsonable(self.set.to_dict()),
        }

    @classmethod
    def from_dict(cls, d: Any) -> PMLGuarantee:
        """Rebuild from :meth:`to_dict` (strict; every value validated again)."""
        keys = {f.name for f in fields(cls)}
        _strict_keys(d, cls.SCHEMA, cls.VERSION, keys, "guarantee")
        kwargs = {k: d[k] for k in keys}
        kwargs["set"] = set_from_dict(d["set"])
        return cls(**kwargs)

    def __str__(self) -> str:
        head = f"eps = {up_text(self.eps)}"
        if self.output_delta:
            head += (f", output delta = {self.output_delta:.3g} (a tail statement about the "
                     "released value itself, not certified to survive post-processing: a "
                     "level that does is the mechanism's envelope(), "
                     "pmlkit.envelope.envelope_bound)")
        if self.basis == "sample":
            cover = (f"with probability >= 1 - {self.delta:.3g} over m = {self.m} samples "
                     f"(confidence method {self.method!r})")
        else:
            cover = BASES[self.basis]
        from .plain import plain_sentence

        return (f"PML guarantee: {head} for every distribution in a {type(self.set).__name__} "
                f"on N = {self.n} categories; coverage: {cover}; certified worst case "
                f"{up_text(self.certified_eps, 9)}; {plain_sentence(self.eps)}")


@dataclass(frozen=True, eq=False)
class Provenance:
    """How a mechanism was made.

    Parameters
    ----------
    designer
        The function that made it (``"user"`` for a hand-made matrix).
    method
        The design method (for example the LP that was solved), or ``None``.
    utility, utility_value
        The utility the design maximised and its value at the estimate (nats for mutual
        information), or ``None``.
    optimality
        ``"exact"``, ``"lower bound (...)"`` or ``None`` when not a design.
    optimality_gap
        Certified relative optimality gap (``0``: optimal to solver tolerance), or ``None``.
    estimate
        The reference estimate the design was made for, or ``None``.
    pmlkit_version
        The pmlkit version that made it.
    details
        Everything else, JSON-ready (the eps the LP was solved at, ``beta``, ...).

    Examples
    --------
    >>> from pmlkit.guarantee import Provenance
    >>> prov = Provenance(designer="survey team", utility="accuracy", utility_value=0.8,
    ...                   details={"note": "hand-made"})
    >>> prov.to_dict()["designer"], dict(prov.details)
    ('survey team', {'note': 'hand-made'})
    >>> Provenance.from_dict(prov.to_dict()) == prov
    True
    """

    SCHEMA: ClassVar[str] = "pmlkit-provenance"
    VERSION: ClassVar[int] = 1

    designer: str = "user"
    method: str | None = None
    utility: str | None = None
    utility_value: float | None = None
    optimality: str | None = None
    optimality_gap: float | None = None
    estimate: tuple[float, ...] | None = None
    pmlkit_version: str = __version__
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("designer", "pmlkit_version"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValidationError(
                    f"{name} must be a non-empty str, got {fmt(getattr(self, name))}")
        for name in ("method", "utility", "optimality"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise ValidationError(f"{name} must be a str or None, got {fmt(v)}")
        if self.utility_value is not None:
            uv = float(check_real(self.utility_value, "utility_value", allow_inf=False))
            object.__setattr__(self, "utility_value", uv)
        if self.optimality_gap is not None:
            g = _finite_nonneg(self.optimality_gap, "optimality_gap", allow_inf=True)
            object.__setattr__(self, "optimality_gap", g)
        if self.estimate is not None:
            if isinstance(self.estimate, str | bytes) or any(
                    isinstance(x, bool | np.bool_) for x in np.ravel(
                        np.asarray(self.estimate, dtype=object))):
                raise ValidationError(
                    f"estimate must be a 1-D sequence of numbers (not bools), got "
                    f"{fmt(self.estimate)}")
            est = np.asarray(self.estimate, dtype=np.float64)
            if est.ndim != 1 or not np.isfinite(est).all() or (est < 0).any():
                raise ValidationError(
                    f"estimate must be a 1-D sequence of finite numbers >= 0, got "
                    f"{fmt(self.estimate)}")
            object.__setattr__(self, "estimate", tuple(float(x) for x in est))
        if not isinstance(self.details, Mapping):
            raise ValidationError(f"details must be a mapping, got {fmt(self.details)}")
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Provenance):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle through the stable serialised form (validated again when unpickled)."""
        return (type(self).from_dict, (self.to_dict(),))

    def to_dict(self) -> dict[str, Any]:
        """The stable serialised form (see the module's stability contract)."""
        return {
            "schema": self.SCHEMA, "version": self.VERSION,
            "designer": self.designer, "method": self.method, "utility": self.utility,
            "utility_value": self.utility_value, "optimality": self.optimality,
            "optimality_gap": self.optimality_gap,
            "estimate": None if self.estimate is None else list(self.estimate),
            "pmlkit_version": self.pmlkit_version,
            "details": to_jsonable(dict(self.details)),
        }

    @classmethod
    def from_dict(cls, d: Any) -> Provenance:
        """Rebuild from :meth:`to_dict` (strict; every value validated again)."""
        keys = {f.name for f in fields(cls)}
        _strict_keys(d, cls.SCHEMA, cls.VERSION, keys, "provenance")
        kwargs = {k: d[k] for k in keys}
        if kwargs["estimate"] is not None:
            kwargs["estimate"] = tuple(kwargs["estimate"])
        return cls(**kwargs)


@runtime_checkable
class PrivacyMechanism(Protocol):
    """The interface every pmlkit mechanism (discrete or additive) answers to.

    A mechanism carries its :attr:`guarantee` (``None`` when it has none pmlkit checked) and
    its :attr:`provenance`, applies itself to data through pmlkit's secure, exact release
    path, and answers its own privacy questions: its leakage under one distribution and its
    worst case over a set.

    Examples
    --------
    >>> from pmlkit import randomized_response
    >>> from pmlkit.guarantee import PrivacyMechanism
    >>> isinstance(randomized_response(2, 1.0), PrivacyMechanism)
    True
    """

    @property
    def guarantee(self) -> PMLGuarantee | None: ...

    @property
    def provenance(self) -> Provenance: ...

    def apply(self, values: Any, *, rng: Any = None) -> Any:
        """Release ``values`` (secure randomness unless ``rng`` is given)."""
        ...

    def leakage_under(self, prior: ArrayLike) -> float:
        """The largest PML over outputs when the secret has distribution ``prior``."""
        ...

    def worst_case_over(self, uncertainty_set: UncertaintySet) -> float:
        """The exact worst-case leakage over every distribution in ``uncertainty_set``."""
        ...
