"""The immutable :class:`Mechanism` object and its versioned, auditable JSON file.

A mechanism is a row-stochastic matrix ``W[i, j] = P(Y = y_j | X = x_i)`` together with
the labels of its inputs and outputs, its typed guarantee
(:class:`pmlkit.guarantee.PMLGuarantee`: eps, the uncertainty set, what the set's coverage
rests on, the certified worst-case eps) and its provenance
(:class:`pmlkit.guarantee.Provenance`: designer, method, utility, optimality, estimate).
``numpy.asarray(mech)`` gives the matrix (read-only). Every function of pmlkit that takes a
mechanism accepts either this object or a plain 2-D array. A mechanism applies itself to
data (:meth:`Mechanism.apply`) and answers its own privacy questions
(:meth:`Mechanism.leakage_under`, :meth:`Mechanism.worst_case_over`): it implements
:class:`pmlkit.guarantee.PrivacyMechanism`.

File format (``format_version`` 2)
----------------------------------
A UTF-8 JSON object, human readable::

    {
      "format": "pmlkit-mechanism",
      "format_version": 2,
      "pmlkit_version": "0.1.0",
      "input_labels": ["Female", "Male"],
      "output_labels": ["Female", "Male"],
      "matrix": [[0.8, 0.2], [0.3, 0.7]],
      "guarantee": {"schema": "pmlkit-guarantee", "version": 1, "eps": 0.69,
                    "certified_eps": 0.69, "basis": "sample", "delta": 1e-09,
                    "method": "l1", "m": 1000, "statement": "...", "output_delta": 0.0,
                    "set": {"kind": "l1_ball", "center": [...], "radius": 0.41}},
      "provenance": {"schema": "pmlkit-provenance", "version": 1,
                     "designer": "design_from_samples", "method": "...",
                     "utility": "mutual_information", "utility_value": 0.2,
                     "optimality": "exact", "optimality_gap": 0.0,
                     "estimate": [0.3, 0.7], "pmlkit_version": "0.1.0",
                     "details": {"design_eps": 0.69, "beta": 0.41}},
      "sha256": "<hex digest of the canonical JSON of every other field>"
    }

``guarantee`` is :meth:`PMLGuarantee.to_dict() <pmlkit.guarantee.PMLGuarantee.to_dict>` (or
``null``: no guarantee), ``provenance`` is :meth:`Provenance.to_dict()
<pmlkit.guarantee.Provenance.to_dict>`; both follow the stability contract of
:mod:`pmlkit.guarantee`. ``details`` holds what the typed fields do not (the eps the LP was
solved at, ``beta``, eps', ...). :attr:`Mechanism.parameters`
shows the same values in the older flat form.

Format version 1 (pmlkit 0.1) is still read, and written on request
(``to_dict(format_version=1)``): instead of ``guarantee`` and ``provenance`` it has
``designer``, ``parameters`` (``eps``, ``beta``, ``utility``, ``utility_value``,
``optimality``, ``method``, ``design_eps``, ``prior`` (the estimate), ``eps_prime``, and
for a design from samples ``delta``, ``m`` and ``confidence``), ``uncertainty_set`` (a
:mod:`pmlkit.sets` ``to_dict()`` or ``null``) and ``certified_eps``. On loading, a version-1
file becomes the same typed objects an old-style construction gives (basis ``"sample"``
when ``delta``, ``m`` and ``confidence`` are recorded, else ``"all"``, ``"prior"`` or
``"given"`` as the set holds the whole simplex, one distribution or neither).

Loading is strict in both versions, because the digest only catches accidental edits
(anyone can recompute it; it is not a signature). :meth:`Mechanism.load` refuses, with a
one-line :class:`pmlkit.errors.MechanismFileError` naming the field:

* a duplicate key in any JSON object (a reader and ``json.loads`` could see different
  matrices), an unknown format tag or version, an unknown guarantee or provenance schema
  version, missing or unexpected fields;
* a value of the wrong type: numbers must be JSON numbers (a string such as ``"0.5"`` is
  not a number, nor is ``true``), labels JSON scalars, ``parameters`` and ``details``
  objects;
* a matrix that is not row-stochastic (finite, ``>= 0``, rows summing to 1 within 1e-9),
  labels that are not unique or do not match its size, a digest that does not match, a set
  on another number of categories than the matrix;
* a certificate that does not hold: the exact worst-case eps over the recorded set is
  recomputed and must not exceed the certified eps (nor may the certified eps exceed the
  recorded eps) by more than 1e-9;
* a basis that the set contradicts: ``"all"`` with a set that is not the whole simplex,
  ``"prior"`` with a set of more than one distribution; a detail that restates a typed
  field;
* a sample-based claim that does not follow from what the file records: a sample-based
  guarantee (version 1: ``parameters`` holding ``delta``) must come with ``m``, the method
  and the estimate (``estimate * m`` must be the integer counts), and the recorded set must
  equal the set the library's own confidence-set builder makes from those counts at that
  delta with that method (a radius edited to 0, a one-point set or a shifted center are
  caught); an l1-ball's radius must equal the recorded ``beta``.

A file without a checkable guarantee is **uncertified** and loads only with
``allow_uncertified=True`` (the command line's ``--allow-uncertified``);
:attr:`Mechanism.certified` is then ``False``, and the command line says so on every use.

What a file discloses: the matrix, the labels, the estimate, the reference sample size
``m`` and the confidence set built from them, that is the reference sample's label counts,
and nothing else about the sample (see ``docs/threat_model.md``): nothing in it depends on
the order of the reference records or on the bytes of the file they were read from.
Privatising the reference data is detected from those counts
(:mod:`pmlkit._provenance`). Files of pmlkit 0.1 recorded a fingerprint of the reference
(``reference``: a SHA-256 of the labels in record order, the file's size and SHA-256):
they still load (the digest check covers the file as written), and the fingerprint is
dropped on reading, so nothing pmlkit writes from them carries it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ._provenance import drop_legacy_fingerprint
from ._validation import ValidatedMatrix, as_mechanism, fmt, no_duplicate_keys, to_jsonable
from .errors import MechanismFileError, PMLError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

    from .guarantee import PMLGuarantee, Provenance
    from .sets import UncertaintySet

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "Mechanism", "as_matrix", "typed_description"]

FORMAT_NAME = "pmlkit-mechanism"
FORMAT_VERSION = 2

Label = str | int | float | bool


def _py_label(x: Any, name: str) -> Label:
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        raise ValidationError(f"{name} must not contain NaN or inf, got {x!r}")
    if not isinstance(x, str | int | float | bool):
        raise ValidationError(
            f"{name} entries must be str, int, float or bool (JSON scalars), got {fmt(x)} "
            f"of type {type(x).__name__}")
    return x


def _labels(values: Sequence[Any] | None, n: int, name: str) -> tuple[Label, ...]:
    if values is None:
        return tuple(range(n))
    out = tuple(_py_label(v, name) for v in values)
    if len(out) != n:
        raise ValidationError(f"{name} has {len(out)} labels but the matrix needs {n}")
    # bool/int/float equality (True == 1 == 1.0) would make two labels indistinguishable
    keys = [(type(v).__name__, v) for v in out]
    if len(set(out)) != len(out) or len(set(keys)) != len(keys):
        seen: set[Any] = set()
        dup = next(v for v in out if v in seen or seen.add(v))  # type: ignore[func-returns-value]
        raise ValidationError(f"{name} must be unique, {dup!r} appears more than once")
    return out


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a key that appears twice in one JSON object."""
    return no_duplicate_keys(pairs, MechanismFileError, "mechanism file")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _file_number(v: Any, field: str, *, allow_inf: bool = False) -> float:
    """A JSON number from a mechanism file (``"inf"`` too when ``allow_inf``), as float."""
    if allow_inf and v == "inf":
        return math.inf
    if not _is_number(v):
        raise MechanismFileError(
            f"mechanism file {field!r} must be a JSON number, got {fmt(v)} of type "
            f"{type(v).__name__}")
    try:
        x = float(v)
    except OverflowError:
        raise MechanismFileError(f"mechanism file {field!r} is out of range, got {fmt(v)}") \
            from None
    if not math.isfinite(x):
        raise MechanismFileError(f"mechanism file {field!r} must be finite, got {fmt(v)}")
    return x


#: parameters whose JSON type is checked on load: name -> (kind, allow "inf")
_PARAM_TYPES: dict[str, tuple[str, bool]] = {
    "eps": ("number", True), "delta": ("number", False), "beta": ("number?", False),
    "m": ("int", False), "confidence": ("str", False), "utility": ("str", False),
    "optimality": ("str", False), "method": ("str", False), "prior": ("numbers", False),
    "design_eps": ("number", True),
}


def _check_parameters(params: Mapping[str, Any], prefix: str = "parameters") -> None:
    for key, (kind, allow_inf) in _PARAM_TYPES.items():
        if key not in params:
            continue
        v, field = params[key], f"{prefix}.{key}"
        if kind == "number?" and v is None:
            continue
        if kind in ("number", "number?"):
            x = _file_number(v, field, allow_inf=allow_inf)
            if x < 0:
                raise MechanismFileError(f"mechanism file {field!r} must be >= 0, got {v!r}")
        elif kind == "int":
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise MechanismFileError(
                    f"mechanism file {field!r} must be an integer >= 1, got {fmt(v)}")
        elif kind == "str":
            if not isinstance(v, str):
                raise MechanismFileError(
                    f"mechanism file {field!r} must be a string, got {fmt(v)}")
        elif not isinstance(v, list) or not v or not all(_is_number(x) for x in v):
            raise MechanismFileError(
                f"mechanism file {field!r} must be a non-empty list of numbers, got {fmt(v)}")
    ref = params.get("reference")
    if ref is not None and (not isinstance(ref, Mapping) or not all(
            isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
            for v in ref.values())):
        raise MechanismFileError(
            f"mechanism file '{prefix}.reference' must be an object of sizes and hex "
            f"digests, got {fmt(ref)}")
    if "delta" in params and not 0 < float(params["delta"]) <= 1:
        raise MechanismFileError(
            f"mechanism file '{prefix}.delta' must be in (0, 1], got {params['delta']!r}")


def _check_set_leaves(obj: Any, field: str = "uncertainty_set", *, top: bool = True) -> None:
    """Every value of a recorded set other than its ``kind`` is a number or a list of them."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if k == "kind" and top:
                if not isinstance(v, str):
                    raise MechanismFileError(
                        f"mechanism file '{field}.kind' must be a string, got {fmt(v)}")
                continue
            _check_set_leaves(v, f"{field}.{k}", top=False)
    elif isinstance(obj, list):
        for v in obj:
            _check_set_leaves(v, field, top=False)
    elif not _is_number(obj):
        raise MechanismFileError(
            f"mechanism file {field!r} must hold JSON numbers, got {fmt(obj)} of type "
            f"{type(obj).__name__}")


def _sets_match(a: Any, b: Any, tol: float = 1e-9) -> bool:
    """Same structure, same strings, numbers equal within ``tol`` (absolute)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(_sets_match(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_sets_match(x, y, tol)
                                         for x, y in zip(a, b, strict=True))
    if _is_number(a) and _is_number(b):
        return abs(float(a) - float(b)) <= tol
    return bool(a == b)


def as_matrix(mechanism: Any, name: str = "mechanism") -> np.ndarray:
    """Validated float64 matrix (a new array) of a :class:`Mechanism` or any 2-D array-like.

    Examples
    --------
    >>> from pmlkit.mechanism import as_matrix
    >>> as_matrix([[1, 0], [0.5, 0.5]]).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    if isinstance(mechanism, Mechanism):
        return mechanism.matrix.copy()
    return as_mechanism(mechanism, name)


#: Keys of a legacy ``parameters`` mapping that the typed objects hold.
_GUARANTEE_KEYS = ("eps", "delta", "m", "confidence")
_PROVENANCE_KEYS = {"method": "method", "utility": "utility", "utility_value": "utility_value",
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
    return "prior" if _is_point(uset) else "given"


def _is_point(uset: Any) -> bool:
    """Whether the set is one distribution (every coordinate's min equals its max)."""
    n = uset.n
    ext = uset.argmin_linear(np.hstack([np.eye(n), -np.eye(n)]))
    return bool(np.max(np.abs(ext - ext[0])) <= 1e-12)


def _check_guarantee(g: Any, n: int) -> None:
    from .guarantee import PMLGuarantee

    if not isinstance(g, PMLGuarantee):
        raise ValidationError(
            f"guarantee must be a pmlkit.PMLGuarantee or None, got {type(g).__name__}")
    if g.n != n:
        raise ValidationError(
            f"guarantee is over a set on N = {g.n} categories but the matrix has {n} inputs")
    if g.basis == "all" and not all(g.set.contains(e) for e in np.eye(n)):
        raise ValidationError(
            "guarantee has basis 'all' (every distribution) but its set is not the whole "
            "simplex")
    if g.basis == "prior" and not _is_point(g.set):
        raise ValidationError(
            "guarantee has basis 'prior' (one known distribution) but its set holds more "
            "than one distribution")


def _check_shadowing(g: Any, prov: Any) -> None:
    """A detail must not restate (and so contradict) a field the typed objects hold."""
    details = prov.details
    clash = [k for k, f in _PROVENANCE_KEYS.items()
             if k in details and getattr(prov, f) is not None]
    if g is not None:
        clash += [k for k in _GUARANTEE_KEYS if k in details
                  and (k == "eps" or g.basis == "sample")]
        clash += [k for k in (UNVERIFIED_SET, UNVERIFIED_CERT) if k in details]
    if clash:
        raise ValidationError(
            f"provenance details {sorted(clash)} restate fields of the guarantee or the "
            "provenance; give each value once")


class Mechanism(ValidatedMatrix):
    """An immutable discrete privacy mechanism with its guarantee and provenance.

    Parameters
    ----------
    matrix
        Row-stochastic ``N x M`` matrix, ``matrix[i, j] = P(Y = output_labels[j] | X =
        input_labels[i])``. Validated (finite, ``>= 0``, rows sum to 1 within 1e-9) and
        stored as a read-only float64 copy.
    input_labels, output_labels
        Labels (str, int, float or bool); default ``0..N-1`` and ``0..M-1``.
    guarantee
        The :class:`pmlkit.guarantee.PMLGuarantee` it carries, or ``None`` (uncertified).
        Its set must be on ``N`` categories; :attr:`certified` recomputes the worst case
        over the set before it reports ``True``.
    provenance
        A :class:`pmlkit.guarantee.Provenance` (default: made by ``"user"``).
    designer, parameters, uncertainty_set, certified_eps
        The older description, still accepted (and readable as properties): converted once
        into ``guarantee`` and ``provenance``. A set and a certified eps make a guarantee
        with basis ``"sample"`` when ``parameters`` records ``delta``, ``m`` and
        ``confidence``, else ``"all"`` for a set holding the whole simplex, ``"prior"`` for
        a one-point set and ``"given"`` otherwise; its eps is ``parameters["eps"]``
        (default the certified eps). Cannot be combined with ``guarantee=`` or ``provenance=``.

    Examples
    --------
    Warner's randomized response at ``eps = log 3`` keeps the true bit with probability
    ``3/4``; over every prior its worst-case leakage is ``log 3``:

    >>> import numpy as np
    >>> from pmlkit import Mechanism
    >>> from pmlkit.guarantee import PMLGuarantee
    >>> w = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> g = PMLGuarantee.for_all_distributions(2, eps=1.1, certified_eps=np.log(3))
    >>> mech = Mechanism(w, ["no", "yes"], ["no", "yes"], guarantee=g)
    >>> mech.certified, round(mech.certified_eps, 4)
    (True, 1.0986)
    >>> round(mech.leakage_under([0.5, 0.5]), 4)  # log(0.75 / 0.5)
    0.4055
    >>> mech.apply(["yes", "no", "yes"], rng=0)  # seeded for the example only
    ['yes', 'no', 'no']
    """

    __slots__ = (
        "__dict__",
        "_guarantee",
        "_provenance",
        "input_labels",
        "matrix",
        "output_labels",
    )

    matrix: np.ndarray
    input_labels: tuple[Label, ...]
    output_labels: tuple[Label, ...]
    _guarantee: PMLGuarantee | None
    _provenance: Provenance

    def __init__(self, matrix: ArrayLike, input_labels: Sequence[Any] = (),
                 output_labels: Sequence[Any] = (), designer: str | None = None,
                 parameters: Mapping[str, Any] | None = None,
                 uncertainty_set: Mapping[str, Any] | UncertaintySet | None = None,
                 certified_eps: float | None = None, *,
                 guarantee: PMLGuarantee | None = None,
                 provenance: Provenance | None = None) -> None:
        from .guarantee import Provenance

        w = as_mechanism(matrix, "matrix")
        w.setflags(write=False)
        n, m = w.shape
        ins = _labels(input_labels or None, n, "input_labels")
        outs = _labels(output_labels or None, m, "output_labels")
        legacy = (designer is not None or parameters is not None
                  or uncertainty_set is not None or certified_eps is not None)
        if legacy and (guarantee is not None or provenance is not None):
            raise ValidationError(
                "give either guarantee=/provenance= or the older designer/parameters/"
                "uncertainty_set/certified_eps, not both")
        if legacy or provenance is None:
            typed, provenance = typed_description(
                n, designer=designer, parameters=parameters, uncertainty_set=uncertainty_set,
                certified_eps=certified_eps)
            guarantee = typed if guarantee is None else guarantee
        elif not isinstance(provenance, Provenance):
            raise ValidationError(
                f"provenance must be a pmlkit.Provenance, got {type(provenance).__name__}")
        if guarantee is not None:
            _check_guarantee(guarantee, n)
        _check_shadowing(guarantee, provenance)
        set_ = object.__setattr__
        set_(self, "matrix", w)
        set_(self, "input_labels", ins)
        set_(self, "output_labels", outs)
        set_(self, "_guarantee", guarantee)
        set_(self, "_provenance", provenance)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    # -- the typed description -------------------------------------------------------
    @property
    def guarantee(self) -> PMLGuarantee | None:
        """The :class:`~pmlkit.guarantee.PMLGuarantee` (``None``: no checked guarantee)."""
        return self._guarantee

    @property
    def provenance(self) -> Provenance:
        """How it was made (:class:`~pmlkit.guarantee.Provenance`)."""
        return self._provenance

    # -- compatibility views (derived from the typed objects) -------------------------
    @property
    def designer(self) -> str:
        """The function that made it (``provenance.designer``)."""
        return str(self._provenance.designer)

    @property
    def parameters(self) -> Mapping[str, Any]:
        """The older flat record, read-only, derived from :attr:`guarantee` and
        :attr:`provenance`: ``eps`` (and ``delta``, ``m``, ``confidence`` for a
        sample-based guarantee), ``method``, ``utility``, ``utility_value``,
        ``optimality``, ``optimality_gap``, ``prior`` (the estimate) and the provenance
        details."""
        cached = self.__dict__.get("_parameters")
        if cached is None:
            g, prov = self._guarantee, self._provenance
            out: dict[str, Any] = {}
            if g is not None:
                out["eps"] = g.eps
            for key, f in _PROVENANCE_KEYS.items():
                v = getattr(prov, f)
                if v is not None:
                    out[key] = list(v) if key == "prior" else v
            if g is not None and g.basis == "sample":
                out.update(delta=g.delta, m=g.m, confidence=g.method)
            out.update({k: v for k, v in prov.details.items()
                        if k not in (UNVERIFIED_SET, UNVERIFIED_CERT)})
            cached = MappingProxyType(out)
            object.__setattr__(self, "_parameters", cached)
        return cached

    @property
    def uncertainty_set(self) -> Mapping[str, Any] | None:
        """The guarantee's set as its ``to_dict()`` (read-only), or ``None``."""
        if self._guarantee is not None:
            cached = self.__dict__.get("_set_dict")
            if cached is None:
                cached = MappingProxyType(self._guarantee.set.to_dict())
                object.__setattr__(self, "_set_dict", cached)
            return cached
        raw = self._provenance.details.get(UNVERIFIED_SET)
        return None if raw is None else MappingProxyType(dict(raw))

    @property
    def certified_eps(self) -> float | None:
        """The guarantee's certified eps (or an unverified claim), or ``None``."""
        if self._guarantee is not None:
            return float(self._guarantee.certified_eps)
        raw = self._provenance.details.get(UNVERIFIED_CERT)
        return None if raw is None else (math.inf if raw == "inf" else float(raw))

    # -- pickle / copy ---------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle the matrix, labels, guarantee and provenance plus the certification
        status.

        A mechanism pickled as certified is re-verified when it is unpickled (the exact
        worst case over the guarantee's set is recomputed, as :meth:`load` does), so a
        certificate is never dropped and never taken on trust from the byte stream; one
        pickled as not certified stays not certified; one never checked is checked on
        first use of :attr:`certified`, as before."""
        g = self._guarantee
        return (_unpickle_mechanism_v2,
                (self.matrix, self.input_labels, self.output_labels,
                 None if g is None else g.to_dict(), self._provenance.to_dict(),
                 self.__dict__.get("_certified")))

    def __copy__(self) -> Mechanism:
        return self  # immutable

    def __deepcopy__(self, memo: dict[int, Any]) -> Mechanism:
        # the guarantee and provenance are immutable: shared, like the labels
        out = Mechanism(self.matrix.copy(), self.input_labels, self.output_labels,
                        guarantee=self._guarantee, provenance=self._provenance)
        known = self.__dict__.get("_certified")
        if known is not None:  # same data in the same process: the status carries over
            object.__setattr__(out, "_certified", known)
        memo[id(self)] = out
        return out

    def _replace(self, *, input_labels: Sequence[Any] | None = None,
                 output_labels: Sequence[Any] | None = None,
                 guarantee: Any = ..., provenance: Provenance | None = None,
                 keep_status: bool = True) -> Mechanism:
        out = Mechanism(self.matrix,
                        self.input_labels if input_labels is None else input_labels,
                        self.output_labels if output_labels is None else output_labels,
                        guarantee=self._guarantee if guarantee is ... else guarantee,
                        provenance=provenance or self._provenance)
        known = self.__dict__.get("_certified")
        if keep_status and known is not None:
            object.__setattr__(out, "_certified", known)
        return out

    def with_provenance(self, provenance: Provenance) -> Mechanism:
        """A copy with another :class:`~pmlkit.guarantee.Provenance` (same matrix, labels
        and guarantee, same certification status).

        Examples
        --------
        >>> from pmlkit import randomized_response
        >>> from pmlkit.guarantee import Provenance
        >>> rr = randomized_response(2, 1.0)
        >>> rr.with_provenance(Provenance(designer="survey")).designer
        'survey'
        """
        from .guarantee import Provenance

        if not isinstance(provenance, Provenance):
            raise ValidationError(
                f"provenance must be a pmlkit.Provenance, got {type(provenance).__name__}")
        return self._replace(provenance=provenance)

    # -- array protocol --------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is None and not copy:
            return self.matrix
        return np.array(self.matrix, dtype=dtype, copy=True)

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, M)``: number of inputs and outputs."""
        return (int(self.matrix.shape[0]), int(self.matrix.shape[1]))

    @property
    def n_inputs(self) -> int:
        """N, the number of inputs (rows)."""
        return int(self.matrix.shape[0])

    @property
    def n_outputs(self) -> int:
        """M, the number of outputs (columns)."""
        return int(self.matrix.shape[1])

    def __repr__(self) -> str:
        claim = self.certified_eps
        if claim is None:
            cert = ""
        elif self.certified:
            cert = f", certified_eps={claim:.6g}"
        else:  # a stated number pmlkit did not (or could not) check is not "certified"
            cert = f", UNCERTIFIED claim eps={claim:.6g}"
        return (f"Mechanism({self.n_inputs}x{self.n_outputs}, designer={self.designer!r}"
                f"{cert})")

    def _repr_html_(self) -> str:
        """Notebook view: the labelled matrix as a heat-coloured table, the guarantee, and
        the PML of each outcome under the recorded estimate (labels are HTML-escaped)."""
        from ._html import mechanism_html

        return mechanism_html(self)

    def with_labels(self, input_labels: Sequence[Any],
                    output_labels: Sequence[Any] | None = None) -> Mechanism:
        """A copy with new labels (outputs default to the new input labels when square).

        Examples
        --------
        >>> from pmlkit import randomized_response
        >>> randomized_response(2, 1.0).with_labels(["F", "M"]).output_labels
        ('F', 'M')
        """
        if output_labels is None:
            output_labels = input_labels if self.n_inputs == self.n_outputs else None
        return Mechanism(self.matrix, tuple(input_labels),
                         tuple(output_labels) if output_labels is not None else (),
                         guarantee=self._guarantee, provenance=self._provenance)

    # -- a mechanism answers for itself -------------------------------------------------
    def apply(self, values: Any, *, rng: Any = None) -> Any:
        """Release ``values`` (a 1-D numpy array, list or tuple of input labels): each
        value ``x_i`` becomes ``y_j`` with probability ``W[i, j]``, independently.

        Randomness is cryptographically secure unless ``rng`` (an int seed or a numpy
        Generator, for reproducible research runs only) is given; under one seed the
        result equals :func:`pmlkit.privatize` (the same exact alias sampler). A numpy
        array gives a numpy array, a list or tuple a list. For other containers (pandas,
        polars, Arrow, Dask, files) use :func:`pmlkit.privatize`.

        Raises
        ------
        DataError
            A value that is not an input label (nothing is released).

        Examples
        --------
        >>> from pmlkit import Mechanism
        >>> keep = Mechanism([[1.0, 0.0], [0.0, 1.0]], ["a", "b"], ["a", "b"])
        >>> keep.apply(["b", "a", "b"])  # the identity releases the data as it is
        ['b', 'a', 'b']
        """
        from .rng import resolve_rng
        from .sampler import AliasSampler, Encoder, output_label_array

        if isinstance(values, list | tuple):
            arr = np.empty(len(values), dtype=object)
            arr[:] = list(values)
        elif isinstance(values, np.ndarray):
            arr = values
        else:
            raise ValidationError(
                "values must be a 1-D numpy array, list or tuple (use pmlkit.privatize for "
                f"other containers), got {type(values).__name__}")
        if arr.ndim != 1:
            raise ValidationError(f"values must be 1-D, got an array of shape {arr.shape}")
        gen = resolve_rng(rng).generator
        sampler = self.__dict__.get("_sampler")
        if sampler is None:
            sampler = AliasSampler(self.matrix)
            object.__setattr__(self, "_sampler", sampler)
        enc = Encoder(self.input_labels)
        idx = np.empty(arr.shape[0], dtype=np.intp)
        for start in range(0, arr.shape[0], _CHUNK):  # chunks bound the memory
            codes = enc.encode_numpy(arr[start:start + _CHUNK])
            if codes is None or enc.failed:
                continue
            idx[start:start + codes.shape[0]] = sampler.draw(codes, gen)
        if enc.failed:
            raise enc.error("values")
        if isinstance(values, np.ndarray):
            return output_label_array(self.output_labels, values.dtype)[idx]
        labels = list(self.output_labels)
        return [labels[i] for i in idx.tolist()]

    __call__ = apply

    def leakage_under(self, prior: ArrayLike) -> float:
        """The largest pointwise maximal leakage over outputs when the secret has
        distribution ``prior``: ``max_j log(max_i W[i, j] / sum_i prior_i W[i, j])`` over
        outputs of positive probability (:func:`pmlkit.eps_min`).

        Examples
        --------
        >>> from pmlkit import Mechanism
        >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]])
        >>> round(mech.leakage_under([0.5, 0.5]), 6)  # log(0.75 / 0.5)
        0.405465
        """
        from .leakage import eps_min

        return float(eps_min(self.matrix, prior))

    def worst_case_over(self, uncertainty_set: UncertaintySet) -> float:
        """The exact worst-case leakage over every distribution in ``uncertainty_set``
        (:func:`pmlkit.worstcase.leakage_capacity`).

        Examples
        --------
        >>> from pmlkit import Mechanism
        >>> from pmlkit.sets import L1Ball
        >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]])
        >>> round(mech.worst_case_over(L1Ball([0.5, 0.5], 2.0)), 6)  # every prior: log 3
        1.098612
        """
        from .worstcase import leakage_capacity

        return float(leakage_capacity(self.matrix, uncertainty_set))

    # -- JSON ------------------------------------------------------------------------
    def _content(self, format_version: int = FORMAT_VERSION) -> dict[str, Any]:
        from ._version import __version__

        g = self._guarantee
        head = {
            "format": FORMAT_NAME,
            "format_version": format_version,
            "pmlkit_version": __version__,
            "input_labels": list(self.input_labels),
            "output_labels": list(self.output_labels),
            "matrix": self.matrix.tolist(),
        }
        if format_version == 1:
            uset = self.uncertainty_set
            return {**head, "designer": self.designer,
                    "parameters": to_jsonable(dict(self.parameters)),
                    "uncertainty_set": None if uset is None else to_jsonable(dict(uset)),
                    "certified_eps": to_jsonable(self.certified_eps)}
        return {**head,
                "guarantee": None if g is None else to_jsonable(g.to_dict()),
                "provenance": to_jsonable(self._provenance.to_dict())}

    @staticmethod
    def _digest(content: Mapping[str, Any]) -> str:
        canon = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(canon.encode("utf-8")).hexdigest()

    def to_dict(self, *, format_version: int = FORMAT_VERSION) -> dict[str, Any]:
        """The JSON document as a dict, digest included.

        ``format_version=1`` writes the older layout (``designer``, ``parameters``,
        ``uncertainty_set``, ``certified_eps``) for readers still on pmlkit 0.1; it loses
        the guarantee's coverage statement and basis (a version-1 reader infers the basis).

        Examples
        --------
        >>> from pmlkit import randomized_response
        >>> doc = randomized_response(3, 1.0).to_dict()
        >>> doc["format_version"], doc["guarantee"]["basis"], doc["provenance"]["designer"]
        (2, 'all', 'randomized_response')
        >>> sorted(randomized_response(3, 1.0).to_dict(format_version=1)["parameters"])
        ['eps', 'ldp', 'n']
        """
        if isinstance(format_version, bool) or format_version not in _FIELDS:
            raise ValidationError(
                f"format_version must be one of {sorted(_FIELDS)}, got {fmt(format_version)}")
        content = self._content(format_version)
        content["sha256"] = self._digest(content)
        return content

    def to_json(self) -> str:
        """The JSON document as indented text (one matrix row per line is not promised).

        Examples
        --------
        >>> from pmlkit import Mechanism, randomized_response
        >>> rr = randomized_response(2, 1.0)
        >>> Mechanism.from_dict(__import__("json").loads(rr.to_json())).certified
        True
        """
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON file (format version 2) atomically (temporary file in the same
        folder, then rename).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from pmlkit import Mechanism, randomized_response
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = randomized_response(2, 1.0).save(pathlib.Path(d) / "rr.json")
        ...     back = Mechanism.load(path)
        >>> back.guarantee.basis, round(back.certified_eps, 6)
        ('all', 1.0)
        """
        path = Path(path)
        text = self.to_json()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                   dir=path.parent if str(path.parent) else ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    #: parameters a minimal record keeps (see :meth:`minimal_record`)
    MINIMAL_PARAMETERS = ("eps", "utility", "optimality", "method")

    def minimal_record(self) -> Mechanism:
        """A copy that records only what is needed to re-verify its certificate.

        Kept: the matrix, labels, the guarantee's set, eps and certified eps, and the
        provenance's designer, ``utility``, ``optimality``, ``method``. Dropped: the
        estimate, ``m``, ``delta``, the confidence method, ``beta``, ``eps_prime``,
        ``utility_value``, the optimality gap and sizes; a sample-based guarantee becomes
        one over a ``"given"`` set. Without the counts, privatising the reference data
        with a minimal record is not detected (:mod:`pmlkit._provenance`).

        Trade-off: the file can still be re-checked (the worst case over its set), but only
        as "eps over this set": the sample-based ``(eps, delta)`` claim can no longer be
        rebuilt from the file, so a reader must trust the set's coverage. And it hides less
        than it may seem: the set itself is built from the estimate (an l1-ball is centred
        on it; box bounds are functions of counts / m), so the estimate stays readable
        approximately; what goes is the exact ``m``, ``delta`` and method. See
        ``docs/threat_model.md``.

        Examples
        --------
        >>> from pmlkit import design_from_samples
        >>> res = design_from_samples(["a"] * 60 + ["b"] * 40, 1.0, 1e-3)
        >>> small = res.mechanism.minimal_record()
        >>> small.guarantee.basis, small.certified, "prior" in small.parameters
        ('given', True, False)
        """
        from .guarantee import PMLGuarantee, Provenance

        prov = self._provenance
        details: dict[str, Any] = {k: prov.details[k] for k in (UNVERIFIED_SET, UNVERIFIED_CERT)
                                   if k in prov.details}
        if self._guarantee is None and "eps" in prov.details:
            details["eps"] = prov.details["eps"]
        small = Provenance(designer=prov.designer, method=prov.method, utility=prov.utility,
                           optimality=prov.optimality, pmlkit_version=prov.pmlkit_version,
                           details=details)
        g = self._guarantee
        if g is not None and g.basis == "sample":
            g = PMLGuarantee(eps=g.eps, set=g.set, certified_eps=g.certified_eps,
                             basis="given", output_delta=g.output_delta)
        return self._replace(guarantee=g, provenance=small)

    @property
    def certified(self) -> bool:
        """Whether the mechanism carries a guarantee pmlkit has checked: a
        :attr:`guarantee` whose certified eps is at least the exact worst case over its
        set.

        A file read with :meth:`load` is certified when its checks passed (``verify=True``)
        and it records a guarantee; an in-memory mechanism is checked once, on first access
        (the designers of :mod:`pmlkit.design` always certify their results)."""
        known = self.__dict__.get("_certified")
        if known is None:
            known = False
            if self._guarantee is not None:
                try:
                    self._verify_certificate()
                    known = True
                except MechanismFileError:
                    known = False
            object.__setattr__(self, "_certified", known)
        return bool(known)

    # -- reading files -----------------------------------------------------------------
    @classmethod
    def from_dict(cls, doc: Any, *, verify: bool = True,
                  allow_uncertified: bool = False) -> Mechanism:
        """Rebuild and validate a mechanism from its JSON document, format version 1 or 2
        (module docstring).

        Raises :class:`~pmlkit.errors.MechanismFileError` for anything malformed, tampered
        or not following from what the file records. With ``verify=True`` (default) a
        recorded certified eps is recomputed over the recorded set and a recorded
        sample-based set is rebuilt from its counts, delta and method; with
        ``verify=False`` neither is done and the result is not :attr:`certified`. A
        document without a checkable guarantee is refused unless
        ``allow_uncertified=True``.

        Examples
        --------
        >>> from pmlkit import Mechanism, optimal_binary
        >>> mech = optimal_binary([0.3, 0.7], beta=0.1, eps=0.4)
        >>> back = Mechanism.from_dict(mech.to_dict())
        >>> back.certified, back.guarantee == mech.guarantee
        (True, True)
        """
        if not isinstance(doc, Mapping):
            raise MechanismFileError(
                f"mechanism file must hold a JSON object, got {type(doc).__name__}")
        if doc.get("format") != FORMAT_NAME:
            raise MechanismFileError(
                f"mechanism file 'format' must be {FORMAT_NAME!r}, got {doc.get('format')!r}")
        version = doc.get("format_version")
        if isinstance(version, bool) or not isinstance(version, int) \
                or version not in _FIELDS:
            raise MechanismFileError(
                f"mechanism file 'format_version' must be one of {sorted(_FIELDS)}, got "
                f"{version!r}"
                + ("" if type(version) is int else f" of type {type(version).__name__}"))
        expected = _FIELDS[version]
        missing = expected - set(doc)
        extra = set(doc) - expected
        if missing or extra:
            raise MechanismFileError(
                f"mechanism file fields do not match format version {version}: "
                f"missing {sorted(missing)}, unexpected {sorted(extra)}")
        content = {k: doc[k] for k in expected - {"sha256"}}
        try:
            digest = cls._digest(content)
        except (TypeError, ValueError, RecursionError) as exc:
            raise MechanismFileError(f"mechanism file holds non-JSON values: {exc}") from exc
        if doc["sha256"] != digest:
            raise MechanismFileError(
                "mechanism file 'sha256' does not match its content: the file was edited or "
                "corrupted after it was written")
        if not isinstance(doc["pmlkit_version"], str):
            raise MechanismFileError(
                f"mechanism file 'pmlkit_version' must be a string, got "
                f"{fmt(doc['pmlkit_version'])}")
        if not isinstance(doc["matrix"], list) or not all(
                isinstance(r, list) for r in doc["matrix"]):
            raise MechanismFileError("mechanism file 'matrix' must be a list of rows")
        if any(not _is_number(v) for r in doc["matrix"] for v in r):
            raise MechanismFileError("mechanism file 'matrix' entries must be JSON numbers")
        if any(isinstance(v, int) and abs(v) > 1 for r in doc["matrix"] for v in r):
            raise MechanismFileError("mechanism file 'matrix' entries must be in [0, 1]")
        for key in ("input_labels", "output_labels"):
            if not isinstance(doc[key], list):
                raise MechanismFileError(f"mechanism file {key!r} must be a list")
        rows = [len(r) for r in doc["matrix"]]
        if len(set(rows)) > 1:
            raise MechanismFileError(
                f"mechanism file is invalid: matrix rows have different lengths "
                f"{sorted(set(rows))}")
        build = _read_v1 if version == 1 else _read_v2
        try:
            mech, claims = build(cls, doc)
        except PMLError as exc:
            if isinstance(exc, MechanismFileError):
                raise
            raise MechanismFileError(f"mechanism file is invalid: {exc}") from exc
        if not mech.input_labels or len(doc["input_labels"]) != mech.n_inputs:
            raise MechanismFileError("mechanism file 'input_labels' do not match the matrix")
        from .worstcase import CERTIFY_TOL

        target = claims.get("eps")
        cert = mech.certified_eps
        if (cert is not None and target is not None and _is_number(target)
                and cert > float(target) + CERTIFY_TOL):
            raise MechanismFileError(
                f"mechanism file certifies eps {cert!r}, above its own target "
                f"parameters.eps = {target!r}: the stated guarantee does not hold")
        if mech.guarantee is None:
            if not allow_uncertified:
                what = ("guarantee" if version == 2 else
                        "uncertainty_set" if mech.uncertainty_set is None else
                        "certified_eps" if cert is None else "finite certified guarantee")
                shown = {k: claims[k] for k in ("eps", "delta") if k in claims}
                said = (f"its parameters {shown} are unverified claims" if shown
                        else "it states no guarantee")
                raise MechanismFileError(
                    f"mechanism file records no {what}, so it is UNCERTIFIED ({said}); pass "
                    "allow_uncertified=True (command line: --allow-uncertified) to use it "
                    "anyway")
            object.__setattr__(mech, "_certified", False)
            return mech
        if not verify:
            object.__setattr__(mech, "_certified", False)
            return mech
        assert mech.uncertainty_set is not None
        _check_recorded_set(mech.n_inputs, dict(mech.uncertainty_set), claims)
        _check_prior_point(mech)
        mech._verify_certificate()
        object.__setattr__(mech, "_certified", True)
        return mech

    def _verify_certificate(self) -> None:
        from .worstcase import CERTIFY_TOL, leakage_capacity

        g = self._guarantee
        if g is None:
            raise MechanismFileError("mechanism records no guarantee to verify")
        try:
            actual = leakage_capacity(self.matrix, g.set)
            if g.basis == "all":
                # the claim is "every distribution": check exactly that, not only the
                # recorded set (which passed a membership test with a float tolerance)
                from .sets import VertexSet

                actual = max(actual, leakage_capacity(
                    self.matrix, VertexSet(np.eye(self.n_inputs))))
        except (PMLError, TypeError, KeyError, ValueError) as exc:
            # a malformed set description in a file is the file's fault, whatever the type
            raise MechanismFileError(f"mechanism file uncertainty_set is invalid: {exc}") from exc
        if actual > g.certified_eps + CERTIFY_TOL:
            raise MechanismFileError(
                f"mechanism file certifies eps {g.certified_eps!r} but its worst case over "
                + ("every distribution (basis 'all')" if g.basis == "all"
                   else "the recorded uncertainty set")
                + f" is {actual!r}: the guarantee does not hold")

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, verify: bool = True,
             allow_uncertified: bool = False) -> Mechanism:
        """Read and validate a mechanism JSON file, format version 1 or 2 (see the module
        docstring).

        Duplicate keys are refused at every level. A file without a checkable guarantee is
        refused unless ``allow_uncertified=True`` (then :attr:`certified` is ``False``).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from pmlkit import Mechanism, optimal_binary
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = optimal_binary([0.3, 0.7], beta=0.1, eps=0.4).save(
        ...         pathlib.Path(d) / "m.json")
        ...     mech = Mechanism.load(path)
        >>> mech.certified, mech.guarantee.basis, mech.designer
        (True, 'given', 'optimal_binary')
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise MechanismFileError(f"mechanism file {str(path)!r} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise MechanismFileError(f"mechanism file {str(path)!r} cannot be read: {exc}") \
                from exc
        try:
            doc = json.loads(text, parse_constant=lambda c: c,
                             object_pairs_hook=_no_duplicate_keys)
        except RecursionError:
            raise MechanismFileError(
                f"mechanism file {str(path)!r} is nested too deeply to be a mechanism file"
            ) from None
        except json.JSONDecodeError as exc:
            raise MechanismFileError(
                f"mechanism file {str(path)!r} is not valid JSON: {exc}") from exc
        return cls.from_dict(doc, verify=verify, allow_uncertified=allow_uncertified)


_CHUNK = 1 << 20

_FIELDS: dict[int, frozenset[str]] = {
    1: frozenset({"format", "format_version", "pmlkit_version", "input_labels",
                  "output_labels", "matrix", "designer", "parameters", "uncertainty_set",
                  "certified_eps", "sha256"}),
    2: frozenset({"format", "format_version", "pmlkit_version", "input_labels",
                  "output_labels", "matrix", "guarantee", "provenance", "sha256"}),
}




def _read_v1(cls: type[Mechanism], doc: Mapping[str, Any]
             ) -> tuple[Mechanism, Mapping[str, Any]]:
    """A format-1 document as a mechanism and its flat record of claims."""
    if not isinstance(doc["designer"], str):
        raise MechanismFileError(
            f"mechanism file 'designer' must be a string, got {fmt(doc['designer'])}")
    if not isinstance(doc["parameters"], Mapping):
        raise MechanismFileError("mechanism file 'parameters' must be an object")
    params = dict(doc["parameters"])
    _check_parameters(params)
    params = drop_legacy_fingerprint(params)  # read, never carried on (module docstring)
    cert = doc["certified_eps"]
    if cert is not None:
        cert = _file_number(cert, "certified_eps", allow_inf=True)
    uset = doc["uncertainty_set"]
    if uset is not None:
        if not isinstance(uset, Mapping):
            raise MechanismFileError("mechanism file 'uncertainty_set' must be an object")
        _check_set_leaves(uset)
    mech = cls(np.asarray(doc["matrix"], dtype=np.float64), tuple(doc["input_labels"]),
               tuple(doc["output_labels"]), doc["designer"], params,
               None if uset is None else dict(uset), cert)
    return mech, params


def _read_v2(cls: type[Mechanism], doc: Mapping[str, Any]
             ) -> tuple[Mechanism, Mapping[str, Any]]:
    """A format-2 document as a mechanism and its flat record of claims (every JSON type
    checked before the typed objects validate the values)."""
    from .guarantee import PMLGuarantee, Provenance

    gd, pd_ = doc["guarantee"], doc["provenance"]
    if gd is not None:
        if not isinstance(gd, Mapping):
            raise MechanismFileError("mechanism file 'guarantee' must be an object or null")
        for key in ("eps", "certified_eps", "delta", "output_delta"):
            if key in gd:
                _file_number(gd[key], f"guarantee.{key}")
        if gd.get("m") is not None and (isinstance(gd["m"], bool)
                                        or not isinstance(gd["m"], int)):
            raise MechanismFileError(
                f"mechanism file 'guarantee.m' must be an integer or null, got {fmt(gd['m'])}")
        for key in ("basis", "statement"):
            if key in gd and not isinstance(gd[key], str):
                raise MechanismFileError(
                    f"mechanism file 'guarantee.{key}' must be a string, got {fmt(gd[key])}")
        if gd.get("method") is not None and not isinstance(gd["method"], str):
            raise MechanismFileError(
                f"mechanism file 'guarantee.method' must be a string or null, got "
                f"{fmt(gd['method'])}")
        if not isinstance(gd.get("set"), Mapping):
            raise MechanismFileError("mechanism file 'guarantee.set' must be an object")
        _check_set_leaves(gd["set"], "guarantee.set", top=True)
    if not isinstance(pd_, Mapping):
        raise MechanismFileError("mechanism file 'provenance' must be an object")
    for key in ("utility_value", "optimality_gap"):
        if pd_.get(key) is not None:
            _file_number(pd_[key], f"provenance.{key}", allow_inf=key == "optimality_gap")
    est = pd_.get("estimate")
    if est is not None and (not isinstance(est, list) or not all(_is_number(x) for x in est)):
        raise MechanismFileError(
            f"mechanism file 'provenance.estimate' must be a list of numbers or null, got "
            f"{fmt(est)}")
    details = pd_.get("details")
    if not isinstance(details, Mapping):
        raise MechanismFileError("mechanism file 'provenance.details' must be an object")
    _check_parameters(details, prefix="provenance.details")
    if UNVERIFIED_CERT in details:
        _file_number(details[UNVERIFIED_CERT], f"provenance.details.{UNVERIFIED_CERT}",
                     allow_inf=True)
    if details.get(UNVERIFIED_SET) is not None:
        if not isinstance(details[UNVERIFIED_SET], Mapping):
            raise MechanismFileError(
                f"mechanism file 'provenance.details.{UNVERIFIED_SET}' must be an object")
        _check_set_leaves(details[UNVERIFIED_SET], f"provenance.details.{UNVERIFIED_SET}",
                          top=True)
    try:
        g = None if gd is None else PMLGuarantee.from_dict(gd)
        prov = Provenance.from_dict(pd_)
        # a pmlkit 0.1 reference fingerprint: read, never carried on (module docstring)
        prov = dataclasses.replace(prov, details=drop_legacy_fingerprint(prov.details))
    except ValidationError as exc:
        raise MechanismFileError(f"mechanism file is invalid: {exc}") from exc
    mech = cls(np.asarray(doc["matrix"], dtype=np.float64), tuple(doc["input_labels"]),
               tuple(doc["output_labels"]), guarantee=g, provenance=prov)
    claims = dict(mech.parameters)
    return mech, claims


def _check_recorded_set(n: int, recorded: dict[str, Any], params: Mapping[str, Any]) -> None:
    """The recorded set must follow from what the file records (module docstring)."""
    beta = params.get("beta")
    if recorded.get("kind") == "l1_ball" and beta is not None \
            and abs(float(recorded["radius"]) - float(beta)) > 1e-12:
        raise MechanismFileError(
            f"mechanism file 'uncertainty_set.radius' is {recorded['radius']!r} but "
            f"'parameters.beta' is {beta!r}")
    sample_keys = ("delta", "m", "confidence", "prior")
    present = [k for k in sample_keys[:3] if k in params]
    if not present:
        return
    absent = [k for k in sample_keys if k not in params]
    if absent:
        raise MechanismFileError(
            f"mechanism file 'parameters' records {present} but not {absent}: a "
            "sample-based (eps, delta) claim needs delta, m, confidence and prior to be "
            "re-checked")
    expected = _rebuild_sample_set(n, params)
    if not _sets_match(to_jsonable(recorded), expected):
        raise MechanismFileError(
            "mechanism file 'uncertainty_set' is not the set the "
            f"{params['confidence']!r} confidence method gives for delta = "
            f"{params['delta']!r}, m = {params['m']!r} and the recorded estimate "
            f"(expected {expected}): the set was edited, so the guarantee does not follow")


def _check_prior_point(mech: Mechanism) -> None:
    """A file's "prior" guarantee must be stated at the estimate it records (the designers
    state it there): a point elsewhere certifies a distribution the file does not claim."""
    g, est = mech.guarantee, mech.provenance.estimate
    if g is None or g.basis != "prior" or est is None:
        return
    lows, highs = g.set.coordinate_bounds()
    p = np.asarray(est, dtype=np.float64)
    if p.shape != np.shape(lows) or max(float(np.max(np.abs(lows - p))),
                                        float(np.max(np.abs(highs - p)))) > 1e-9:
        raise MechanismFileError(
            "mechanism file 'guarantee' has basis 'prior' at a distribution other than the "
            f"recorded 'provenance.estimate' {list(est)}: the guarantee is not stated for the "
            "distribution the file records")


def _rebuild_sample_set(n: int, params: Mapping[str, Any]) -> dict[str, Any]:
    from .estimation import EmpiricalDistribution, l1_radius
    from .sets import L1Ball

    m = int(params["m"])
    if m > 2**53:  # counts beyond 2^53 are not exact in float64 (nor in int64 past 2^63)
        raise MechanismFileError(
            f"mechanism file 'm' = {m} is too large to be a sample size (at most 2^53)")
    prior = np.asarray(params["prior"], dtype=np.float64)
    if prior.size != n:
        raise MechanismFileError(
            f"mechanism file 'parameters.prior' has {prior.size} entries but the matrix "
            f"has {n} inputs")
    counts = prior * m
    rounded = np.rint(counts)
    if (np.max(np.abs(counts - rounded)) > 1e-6 * max(1.0, m) ** 0.5
            or rounded.min() < 0 or int(rounded.sum()) != m):
        raise MechanismFileError(
            "mechanism file 'parameters.prior' times 'parameters.m' is not a vector of "
            f"counts summing to m = {m}: the estimate does not come from m samples")
    method = params["confidence"]
    try:
        est = EmpiricalDistribution.from_counts(rounded.astype(np.int64))
        if np.max(np.abs(np.asarray(est.p) - prior)) > 1e-12:
            raise MechanismFileError(
                "mechanism file 'parameters.prior' is not counts / m")
        delta = float(params["delta"])
        if method == "l1":
            return L1Ball(np.asarray(est.p), l1_radius(delta, m=m, n=est.n)).to_dict()
        from .confidence import confidence_set

        return dict(to_jsonable(confidence_set(est.counts, delta, confidence=method).set.to_dict()))
    except MechanismFileError:
        raise
    except PMLError as exc:
        raise MechanismFileError(
            f"mechanism file 'parameters' cannot rebuild the confidence set "
            f"(confidence={method!r}): {exc}") from exc


def _unpickle_mechanism(matrix: Any, input_labels: Any, output_labels: Any, designer: Any,
                        parameters: Any, uncertainty_set: Any, certified_eps: Any,
                        certified: bool | None) -> Mechanism:
    """Rebuild a :class:`Mechanism` pickled by pmlkit 0.1 (the older fields).

    Every field is validated again by the constructor; a mechanism pickled as certified must
    pass the certificate check again, else :class:`~pmlkit.errors.MechanismFileError`."""
    mech = Mechanism(matrix, input_labels, output_labels, designer, parameters,
                     uncertainty_set, certified_eps)
    return _restore_status(mech, certified)


def _unpickle_mechanism_v2(matrix: Any, input_labels: Any, output_labels: Any,
                           guarantee: Any, provenance: Any, certified: bool | None
                           ) -> Mechanism:
    """Rebuild a pickled :class:`Mechanism` (see :meth:`Mechanism.__reduce__`)."""
    from .guarantee import PMLGuarantee, Provenance

    mech = Mechanism(matrix, input_labels, output_labels,
                     guarantee=None if guarantee is None else PMLGuarantee.from_dict(guarantee),
                     provenance=Provenance.from_dict(provenance))
    return _restore_status(mech, certified)


def _restore_status(mech: Mechanism, certified: bool | None) -> Mechanism:
    if certified is True:
        if mech.guarantee is None:
            raise MechanismFileError(
                "pickled mechanism claims to be certified but records no uncertainty_set or "
                "no certified_eps")
        try:
            mech._verify_certificate()
        except MechanismFileError as exc:
            raise MechanismFileError(f"pickled mechanism: {exc}") from None
        object.__setattr__(mech, "_certified", True)
    elif certified is False:
        object.__setattr__(mech, "_certified", False)
    return mech
