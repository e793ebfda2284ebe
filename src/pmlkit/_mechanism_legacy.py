"""The older flat description of a mechanism as the typed objects.

pmlkit 0.1 described a mechanism by ``designer``, a flat ``parameters`` mapping,
``uncertainty_set`` and ``certified_eps``. The constructor of
:class:`pmlkit.mechanism.Mechanism` still accepts that description, and format-1 files
record it; :func:`typed_description` converts it, once, into a
:class:`pmlkit.guarantee.PMLGuarantee` and a :class:`pmlkit.guarantee.Provenance`
(public as :func:`pmlkit.mechanism.typed_description`). The keys the typed objects hold
(:data:`GUARANTEE_KEYS`, :data:`PROVENANCE_KEYS`) also give the flat view back
(:attr:`pmlkit.mechanism.Mechanism.parameters`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ._validation import fmt, to_jsonable
from .errors import ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from .guarantee import PMLGuarantee, Provenance
    from .sets import UncertaintySet

__all__ = ["GUARANTEE_KEYS", "PROVENANCE_KEYS", "UNVERIFIED_CERT", "UNVERIFIED_SET",
           "is_point", "typed_description"]


#: Keys of a legacy ``parameters`` mapping that the typed objects hold.
GUARANTEE_KEYS = ("eps", "delta", "m", "confidence")
PROVENANCE_KEYS = {"method": "method", "utility": "utility", "utility_value": "utility_value",
                    "optimality": "optimality", "optimality_gap": "optimality_gap",
                    "prior": "estimate"}
#: Where an old-style construction's set and certified eps go when they do not make a
#: guarantee pmlkit can check (kept, never dropped; the mechanism is then not certified).
UNVERIFIED_SET = "unverified_uncertainty_set"
UNVERIFIED_CERT = "unverified_certified_eps"


def _real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def _finite_real(v: Any) -> bool:
    return _real(v) and math.isfinite(float(v))


def _provenance_from_parameters(designer: Any, parameters: Mapping[str, Any]
                                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a legacy ``parameters`` mapping into :class:`Provenance` keyword arguments and
    the remaining details; a key moves into a typed field only when its value is valid
    there (anything else stays in the details verbatim, so nothing is lost)."""
    if designer is None:
        designer = "user"
    if not isinstance(designer, str) or not designer:
        raise ValidationError(f"designer must be a non-empty str, got {fmt(designer)}")
    details = dict(parameters)
    kw: dict[str, Any] = {"designer": designer}
    for key in ("method", "utility", "optimality"):
        if isinstance(details.get(key), str):
            kw[key] = details.pop(key)
    if _finite_real(details.get("utility_value")):
        kw["utility_value"] = float(details.pop("utility_value"))
    gap = details.get("optimality_gap")
    if gap is not None and _real(gap) and not math.isnan(float(gap)) and float(gap) >= 0:
        kw["optimality_gap"] = float(details.pop("optimality_gap"))
    prior = details.get("prior")
    if isinstance(prior, list | tuple | np.ndarray) and not isinstance(prior, str):
        try:
            est = np.asarray(prior, dtype=np.float64)
        except (TypeError, ValueError):
            est = np.asarray([np.nan])
        if (est.ndim == 1 and est.size and np.isfinite(est).all() and (est >= 0).all()
                and all(_real(x) for x in np.asarray(prior, dtype=object).ravel())):
            kw["estimate"] = tuple(float(x) for x in est)
            details.pop("prior")
    return kw, details


def _legacy_guarantee(n: int, details: dict[str, Any], uncertainty_set: Any,
                      certified_eps: Any, *, basis: str | None = None,
                      statement: str = "") -> PMLGuarantee | None:
    """The typed guarantee of an old-style construction (``details`` is consumed: the keys
    the guarantee holds are removed). ``None`` when there is no set or no certified eps;
    when the claim cannot be a checked guarantee (an infinite or non-finite eps, a certified
    eps above the recorded eps), the set and the certified eps are kept in ``details`` as
    unverified claims (the mechanism is then not certified). ``basis`` forces the basis (the
    designers); by default it is ``"sample"`` when ``delta``, ``m`` and ``confidence`` are
    all recorded, else ``"given"``."""
    from .guarantee import PMLGuarantee
    from .sets import UncertaintySet, set_from_dict

    cert: float | None = None
    if certified_eps is not None:
        try:
            cert = float(certified_eps)
        except (TypeError, ValueError, OverflowError):
            raise ValidationError(
                f"certified_eps must be a number >= 0 or inf, got {fmt(certified_eps)}"
            ) from None
        if math.isnan(cert) or cert < 0:
            raise ValidationError(f"certified_eps must be >= 0 or inf, got {cert!r}")
    if uncertainty_set is None or cert is None:
        if uncertainty_set is not None:
            details[UNVERIFIED_SET] = to_jsonable(
                uncertainty_set.to_dict() if isinstance(uncertainty_set, UncertaintySet)
                else dict(uncertainty_set))
        if cert is not None:
            details[UNVERIFIED_CERT] = cert
        return None
    if isinstance(uncertainty_set, UncertaintySet):
        uset = uncertainty_set
    else:
        if not isinstance(uncertainty_set, Mapping):
            raise ValidationError(
                "uncertainty_set must be a pmlkit.sets set or its to_dict(), got "
                f"{type(uncertainty_set).__name__}")
        try:
            uset = set_from_dict(dict(uncertainty_set))
        except (TypeError, KeyError, ValueError) as exc:
            raise ValidationError(f"uncertainty_set is invalid: {exc}") from exc
    if uset.n != n:
        raise ValidationError(
            f"uncertainty_set is on {uset.n} categories but the matrix has {n} inputs")
    eps = details.get("eps", cert)
    sample = all(k in details for k in ("delta", "m", "confidence"))
    if basis is not None:
        tries = [basis]
    elif sample:
        tries = ["sample", "given"]
    else:  # what the set itself says: every distribution, one distribution, or a claim
        tries = [_inferred_basis(uset), "given"]
    for b in tries:
        kw: dict[str, Any] = {}
        if b == "sample":
            kw = {"delta": details.get("delta"), "method": details.get("confidence"),
                  "m": details.get("m")}
        try:
            if not _finite_real(eps) or not _finite_real(cert):
                raise ValidationError(
                    f"eps and certified_eps must be finite, got {fmt(eps)} and {fmt(cert)}")
            g = PMLGuarantee(eps=float(eps), set=uset, certified_eps=cert, basis=b,
                             statement=statement, **kw)
        except ValidationError:
            if basis is not None:  # a designer's own claim: a bug if it does not hold
                raise
            continue
        details.pop("eps", None)
        if b == "sample":
            for key in ("delta", "m", "confidence"):
                details.pop(key, None)
        return g
    details[UNVERIFIED_SET] = to_jsonable(uset.to_dict())
    details[UNVERIFIED_CERT] = cert
    return None


def typed_description(n: int, *, designer: str | None = None,
                      parameters: Mapping[str, Any] | None = None,
                      uncertainty_set: Mapping[str, Any] | UncertaintySet | None = None,
                      certified_eps: float | None = None, basis: str | None = None,
                      statement: str = "") -> tuple[PMLGuarantee | None, Provenance]:
    """The typed guarantee and provenance of the older flat description of a mechanism on
    ``n`` inputs (what ``Mechanism(matrix, designer=..., parameters=...,
    uncertainty_set=..., certified_eps=...)`` converts).

    The guarantee's eps is ``parameters["eps"]`` (default: the certified eps); ``delta``,
    ``m`` and ``confidence`` in ``parameters`` make the basis ``"sample"``; otherwise it is
    ``basis``, by default what the set says (``"all"`` for a set holding the whole simplex,
    ``"prior"`` for one distribution, else ``"given"``). A claim that cannot be a checked
    guarantee (a non-finite eps, a certified eps above the recorded eps) gives ``None`` and is
    kept in the provenance details as unverified. With ``basis`` given, such a claim raises
    instead.
    Nothing is verified against a matrix here: :attr:`Mechanism.certified` does that.

    Examples
    --------
    >>> from pmlkit.mechanism import typed_description
    >>> from pmlkit.sets import L1Ball
    >>> g, prov = typed_description(2, designer="me", parameters={"eps": 1.0, "k": 3},
    ...                             uncertainty_set=L1Ball([0.5, 0.5], 0.1),
    ...                             certified_eps=0.8)
    >>> g.basis, g.eps, g.certified_eps, prov.designer, dict(prov.details)
    ('given', 1.0, 0.8, 'me', {'k': 3})
    """
    from .guarantee import Provenance

    if parameters is not None and not isinstance(parameters, Mapping):
        raise ValidationError(f"parameters must be a mapping, got {fmt(parameters)}")
    kw, details = _provenance_from_parameters(designer, parameters or {})
    if basis is not None and all(k in details for k in ("delta", "m", "confidence")):
        basis = "sample"
    g = _legacy_guarantee(n, details, uncertainty_set, certified_eps, basis=basis,
                          statement=statement)
    return g, Provenance(details=details, **kw)


def _inferred_basis(uset: Any) -> str:
    """``"all"`` for a set holding the whole simplex, ``"prior"`` for one distribution,
    else ``"given"`` (the basis an older description implies)."""
    n = uset.n
    if all(uset.contains(e) for e in np.eye(n)):
        return "all"
    return "prior" if is_point(uset) else "given"


def is_point(uset: Any) -> bool:
    """Whether the set is one distribution (every coordinate's min equals its max)."""
    n = uset.n
    ext = uset.argmin_linear(np.hstack([np.eye(n), -np.eye(n)]))
    return bool(np.max(np.abs(ext - ext[0])) <= 1e-12)

