"""The immutable :class:`Mechanism` object and its versioned, auditable JSON file.

A mechanism is a row-stochastic matrix ``W[i, j] = P(Y = y_j | X = x_i)`` together with
the labels of its inputs and outputs and a record of how it was made (designer, eps,
delta, beta, sample size, uncertainty set, certified worst-case eps). ``numpy.asarray(mech)``
gives the matrix (read-only). Every function of pmlkit that takes a mechanism accepts
either this object or a plain 2-D array.

File format (``format_version`` 1)
----------------------------------
A UTF-8 JSON object, human readable::

    {
      "format": "pmlkit-mechanism",
      "format_version": 1,
      "pmlkit_version": "0.1.0",
      "input_labels": ["Female", "Male"],
      "output_labels": ["Female", "Male"],
      "matrix": [[0.8, 0.2], [0.3, 0.7]],
      "designer": "optimal_binary",
      "parameters": {"eps": 0.69, "delta": 1e-09, "beta": 0.01, "m": 1000},
      "uncertainty_set": {"kind": "l1_ball", "center": [...], "radius": 0.01},
      "certified_eps": 0.69,
      "sha256": "<hex digest of the canonical JSON of every other field>"
    }

``uncertainty_set`` is the ``to_dict()`` of a :mod:`pmlkit.sets` object or ``null``.
The designers of :mod:`pmlkit.design` record in ``parameters``: ``eps``, ``beta`` (l1-balls,
else ``null``), ``utility`` and its ``utility_value`` at the estimate, ``optimality``
(``"exact"`` or ``"lower bound (...)"``), ``method``, ``design_eps`` (the eps the LP was
solved at), ``prior`` and ``eps_prime``; :func:`pmlkit.design.design_from_samples` adds
``delta``, ``m`` and ``confidence``.
Loading is strict, because the digest only catches accidental edits (anyone can recompute
it; it is not a signature). :meth:`Mechanism.load` refuses, with a one-line
:class:`pmlkit.errors.MechanismFileError` naming the field:

* a duplicate key in any JSON object (a reader and ``json.loads`` could see different
  matrices), an unknown format tag or version, missing or unexpected fields;
* a value of the wrong type: numbers must be JSON numbers (a string such as ``"0.5"`` is
  not a number, nor is ``true``), labels JSON scalars, ``parameters`` an object;
* a matrix that is not row-stochastic (finite, ``>= 0``, rows summing to 1 within 1e-9),
  labels that are not unique or do not match its size, a digest that does not match;
* a certificate that does not hold: the exact worst-case eps over the recorded set is
  recomputed and must not exceed ``certified_eps`` (nor may ``certified_eps`` exceed
  ``parameters.eps``) by more than 1e-9;
* a sample-based claim that does not follow from what the file records: when
  ``parameters`` holds ``delta``, it must also hold ``m``, ``confidence`` and ``prior``
  (the estimate; ``prior * m`` must be the integer counts), and the recorded set must equal
  the set the library's own confidence-set builder makes from those counts at that delta
  with that method (a radius edited to 0, a one-point set or a shifted center are caught);
  an l1-ball's radius must equal ``parameters.beta`` when that is recorded.

A file without an uncertainty set or without a certified eps carries no checkable
guarantee: it is **uncertified** and loads only with ``allow_uncertified=True`` (the command
line's ``--allow-uncertified``); :attr:`Mechanism.certified` is then ``False``, and the
command line says so on every use.

What a file discloses: the matrix, the labels, the estimate (``parameters.prior``), the
reference sample size ``m`` and the confidence set built from them (see
``docs/threat_model.md``). ``parameters.reference`` holds a fingerprint of the reference
sample (SHA-256 and size of its file, or a digest of the in-memory sample) so that
privatising the reference data itself can be detected.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from ._validation import ValidatedMatrix, as_mechanism, fmt, to_jsonable
from .errors import MechanismFileError, PMLError, ValidationError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "Mechanism", "as_matrix"]

FORMAT_NAME = "pmlkit-mechanism"
FORMAT_VERSION = 1

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
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise MechanismFileError(
                f"mechanism file has the key {key!r} twice in one object; a duplicate key "
                "is ambiguous (readers may keep either value) and is refused")
        out[key] = value
    return out


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


def _check_parameters(params: Mapping[str, Any]) -> None:
    for key, (kind, allow_inf) in _PARAM_TYPES.items():
        if key not in params:
            continue
        v, field = params[key], f"parameters.{key}"
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
            "mechanism file 'parameters.reference' must be an object of sizes and hex "
            f"digests, got {fmt(ref)}")
    if "delta" in params and not 0 < float(params["delta"]) <= 1:
        raise MechanismFileError(
            f"mechanism file 'parameters.delta' must be in (0, 1], got {params['delta']!r}")


def _check_set_leaves(obj: Any, field: str = "uncertainty_set") -> None:
    """Every value of a recorded set other than its ``kind`` is a number or a list of them."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if k == "kind" and field == "uncertainty_set":
                if not isinstance(v, str):
                    raise MechanismFileError(
                        f"mechanism file 'uncertainty_set.kind' must be a string, got {fmt(v)}")
                continue
            _check_set_leaves(v, f"{field}.{k}")
    elif isinstance(obj, list):
        for v in obj:
            _check_set_leaves(v, field)
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
    """Validated float64 matrix of a :class:`Mechanism` or any 2-D array-like."""
    if isinstance(mechanism, Mechanism):
        return mechanism.matrix.copy()
    return as_mechanism(mechanism, name)


@dataclass(frozen=True, eq=False)
class Mechanism(ValidatedMatrix):
    """An immutable discrete privacy mechanism with its provenance.

    Parameters
    ----------
    matrix
        Row-stochastic ``N x M`` matrix, ``matrix[i, j] = P(Y = output_labels[j] | X =
        input_labels[i])``. Validated (finite, ``>= 0``, rows sum to 1 within 1e-9) and
        stored as a read-only float64 copy.
    input_labels, output_labels
        Labels (str, int, float or bool); default ``0..N-1`` and ``0..M-1``.
    designer
        Name of the function that made it (``"user"`` for a hand-made matrix).
    parameters
        How it was made: ``eps``, ``delta``, ``beta``, ``m``, ``utility``, ...
    uncertainty_set
        The set it was designed for, as a :mod:`pmlkit.sets` object's ``to_dict()``.
    certified_eps
        The exact worst-case eps over ``uncertainty_set`` (``C(W, P)``, Def. localcap).
    """

    matrix: np.ndarray
    input_labels: tuple[Label, ...] = ()
    output_labels: tuple[Label, ...] = ()
    designer: str = "user"
    parameters: Mapping[str, Any] = field(default_factory=dict)
    uncertainty_set: Mapping[str, Any] | None = None
    certified_eps: float | None = None

    def __post_init__(self) -> None:
        w = as_mechanism(self.matrix, "matrix")
        w.setflags(write=False)
        object.__setattr__(self, "matrix", w)
        n, m = w.shape
        object.__setattr__(self, "input_labels",
                           _labels(self.input_labels or None, n, "input_labels"))
        object.__setattr__(self, "output_labels",
                           _labels(self.output_labels or None, m, "output_labels"))
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))
        if self.uncertainty_set is not None:
            object.__setattr__(self, "uncertainty_set",
                               MappingProxyType(dict(self.uncertainty_set)))
        if self.certified_eps is not None:
            try:
                c = float(self.certified_eps)
            except (TypeError, ValueError, OverflowError):
                raise ValidationError(
                    f"certified_eps must be a number >= 0 or inf, got {fmt(self.certified_eps)}"
                ) from None
            if math.isnan(c) or c < 0:
                raise ValidationError(f"certified_eps must be >= 0 or inf, got {c!r}")
            object.__setattr__(self, "certified_eps", c)

    # -- pickle / copy ---------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle every field exactly (the matrix as a numpy array, labels, designer,
        parameters, set, certified eps) plus the certification status.

        A mechanism pickled as certified is re-verified when it is unpickled (the exact
        worst case over the recorded set is recomputed, as :meth:`load` does), so a
        certificate is never dropped and never taken on trust from the byte stream; one
        pickled as not certified stays not certified; one never checked is checked on
        first use of :attr:`certified`, as before."""
        return (_unpickle_mechanism,
                (self.matrix, self.input_labels, self.output_labels, self.designer,
                 dict(self.parameters),
                 None if self.uncertainty_set is None else dict(self.uncertainty_set),
                 self.certified_eps, self.__dict__.get("_certified")))

    def __copy__(self) -> Mechanism:
        return self  # immutable

    def __deepcopy__(self, memo: dict[int, Any]) -> Mechanism:
        import copy

        out = Mechanism(self.matrix.copy(), self.input_labels, self.output_labels,
                        self.designer, copy.deepcopy(dict(self.parameters), memo),
                        None if self.uncertainty_set is None
                        else copy.deepcopy(dict(self.uncertainty_set), memo),
                        self.certified_eps)
        known = self.__dict__.get("_certified")
        if known is not None:  # same data in the same process: the status carries over
            object.__setattr__(out, "_certified", known)
        memo[id(self)] = out
        return out

    # -- array protocol --------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is None and not copy:
            return self.matrix
        return np.array(self.matrix, dtype=dtype, copy=True)

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, M)``: number of inputs and outputs."""
        return self.matrix.shape  # type: ignore[return-value]

    @property
    def n_inputs(self) -> int:
        return self.matrix.shape[0]

    @property
    def n_outputs(self) -> int:
        return self.matrix.shape[1]

    def __repr__(self) -> str:
        cert = "" if self.certified_eps is None else f", certified_eps={self.certified_eps:.6g}"
        return (f"Mechanism({self.n_inputs}x{self.n_outputs}, designer={self.designer!r}"
                f"{cert})")

    def _repr_html_(self) -> str:
        """Notebook view: the labelled matrix as a heat-coloured table, the guarantee, and
        the PML of each outcome under the recorded estimate (labels are HTML-escaped)."""
        from ._html import mechanism_html

        return mechanism_html(self)

    def with_labels(self, input_labels: Sequence[Any],
                    output_labels: Sequence[Any] | None = None) -> Mechanism:
        """A copy with new labels (outputs default to the new input labels when square)."""
        if output_labels is None:
            output_labels = input_labels if self.n_inputs == self.n_outputs else None
        return Mechanism(self.matrix, tuple(input_labels),
                         tuple(output_labels) if output_labels is not None else (),
                         self.designer, dict(self.parameters),
                         None if self.uncertainty_set is None else dict(self.uncertainty_set),
                         self.certified_eps)

    # -- JSON ------------------------------------------------------------------------
    def _content(self) -> dict[str, Any]:
        from ._version import __version__

        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "pmlkit_version": __version__,
            "input_labels": list(self.input_labels),
            "output_labels": list(self.output_labels),
            "matrix": self.matrix.tolist(),
            "designer": self.designer,
            "parameters": to_jsonable(dict(self.parameters)),
            "uncertainty_set": None if self.uncertainty_set is None
            else to_jsonable(dict(self.uncertainty_set)),
            "certified_eps": to_jsonable(self.certified_eps),
        }

    @staticmethod
    def _digest(content: Mapping[str, Any]) -> str:
        canon = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(canon.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (format version 1) as a dict, digest included."""
        content = self._content()
        content["sha256"] = self._digest(content)
        return content

    def to_json(self) -> str:
        """The JSON document as indented text (one matrix row per line is not promised)."""
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON file atomically (temporary file in the same folder, then rename)."""
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

        Kept: the matrix, labels, the uncertainty set, the certified eps and
        ``parameters`` ``eps``, ``utility``, ``optimality``, ``method``, plus the reference
        fingerprint's digests (``file_sha256``, ``sample_sha256``; not the record count).
        Dropped: the estimate (``prior``), ``m``, ``delta``, ``confidence``, ``beta``,
        ``eps_prime``, ``utility_value`` and sizes.

        Trade-off: the file can still be re-checked (the worst case over its set), but only
        as "eps over this set": the sample-based ``(eps, delta)`` claim can no longer be
        rebuilt from the file, so a reader must trust the set's coverage. And it hides less
        than it may seem: the set itself is built from the estimate (an l1-ball is centred
        on it; box bounds are functions of counts / m), so the estimate stays readable
        approximately; what goes is the exact ``m``, ``delta`` and method. See
        ``docs/threat_model.md``."""
        params = {k: self.parameters[k] for k in self.MINIMAL_PARAMETERS
                  if k in self.parameters}
        ref = self.parameters.get("reference")
        if isinstance(ref, Mapping):
            kept = {k: ref[k] for k in ("file_sha256", "sample_sha256") if k in ref}
            if kept:
                params["reference"] = kept
        out = Mechanism(self.matrix, self.input_labels, self.output_labels, self.designer,
                        params, None if self.uncertainty_set is None
                        else dict(self.uncertainty_set), self.certified_eps)
        known = self.__dict__.get("_certified")
        if known is not None:
            object.__setattr__(out, "_certified", known)
        return out

    @property
    def certified(self) -> bool:
        """Whether the mechanism carries a guarantee pmlkit has checked: an uncertainty set
        and a certified eps that is at least the exact worst case over that set.

        A file read with :meth:`load` is certified when its checks passed (``verify=True``)
        and it records both; an in-memory mechanism is checked once, on first access (the
        designers of :mod:`pmlkit.design` always certify their results)."""
        known = self.__dict__.get("_certified")
        if known is None:
            known = False
            if self.uncertainty_set is not None and self.certified_eps is not None:
                try:
                    self._verify_certificate()
                    known = True
                except MechanismFileError:
                    known = False
            object.__setattr__(self, "_certified", known)
        return bool(known)

    @classmethod
    def from_dict(cls, doc: Any, *, verify: bool = True,
                  allow_uncertified: bool = False) -> Mechanism:
        """Rebuild and validate a mechanism from its JSON document (module docstring).

        Raises :class:`~pmlkit.errors.MechanismFileError` for anything malformed, tampered
        or not following from what the file records. With ``verify=True`` (default) a
        recorded certified eps is recomputed over the recorded uncertainty set and a
        recorded sample-based set is rebuilt from its counts, delta and method; with
        ``verify=False`` neither is done and the result is not :attr:`certified`. A
        document without an uncertainty set or a certified eps is refused unless
        ``allow_uncertified=True``."""
        if not isinstance(doc, Mapping):
            raise MechanismFileError(
                f"mechanism file must hold a JSON object, got {type(doc).__name__}")
        if doc.get("format") != FORMAT_NAME:
            raise MechanismFileError(
                f"mechanism file 'format' must be {FORMAT_NAME!r}, got {doc.get('format')!r}")
        version = doc.get("format_version")
        if isinstance(version, bool) or not isinstance(version, int) \
                or version != FORMAT_VERSION:
            raise MechanismFileError(
                f"mechanism file 'format_version' must be {FORMAT_VERSION}, got {version!r}"
                + ("" if type(version) is int else f" of type {type(version).__name__}"))
        expected = {"format", "format_version", "pmlkit_version", "input_labels",
                    "output_labels", "matrix", "designer", "parameters", "uncertainty_set",
                    "certified_eps", "sha256"}
        missing = expected - set(doc)
        extra = set(doc) - expected
        if missing or extra:
            raise MechanismFileError(
                "mechanism file fields do not match format version 1: "
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
        for key in ("pmlkit_version", "designer"):
            if not isinstance(doc[key], str):
                raise MechanismFileError(
                    f"mechanism file {key!r} must be a string, got {fmt(doc[key])}")
        if not isinstance(doc["matrix"], list) or not all(
                isinstance(r, list) for r in doc["matrix"]):
            raise MechanismFileError("mechanism file 'matrix' must be a list of rows")
        if any(not _is_number(v) for r in doc["matrix"] for v in r):
            raise MechanismFileError("mechanism file 'matrix' entries must be JSON numbers")
        if any(isinstance(v, int) and abs(v) > 1 for r in doc["matrix"] for v in r):
            raise MechanismFileError("mechanism file 'matrix' entries must be in [0, 1]")
        if not isinstance(doc["parameters"], Mapping):
            raise MechanismFileError("mechanism file 'parameters' must be an object")
        _check_parameters(doc["parameters"])
        for key in ("input_labels", "output_labels"):
            if not isinstance(doc[key], list):
                raise MechanismFileError(f"mechanism file {key!r} must be a list")
        cert = doc["certified_eps"]
        if cert is not None:
            cert = _file_number(cert, "certified_eps", allow_inf=True)
        uset = doc["uncertainty_set"]
        if uset is not None:
            if not isinstance(uset, Mapping):
                raise MechanismFileError("mechanism file 'uncertainty_set' must be an object")
            _check_set_leaves(uset)
        try:
            rows = [len(r) for r in doc["matrix"]]
            if len(set(rows)) > 1:
                raise ValidationError(f"matrix rows have different lengths {sorted(set(rows))}")
            mech = cls(np.asarray(doc["matrix"], dtype=np.float64),
                       tuple(doc["input_labels"]), tuple(doc["output_labels"]),
                       doc["designer"], dict(doc["parameters"]),
                       None if uset is None else dict(uset), cert)
        except PMLError as exc:
            raise MechanismFileError(f"mechanism file is invalid: {exc}") from exc
        if not mech.input_labels or len(doc["input_labels"]) != mech.n_inputs:
            raise MechanismFileError("mechanism file 'input_labels' do not match the matrix")
        from .worstcase import CERTIFY_TOL

        target = mech.parameters.get("eps")
        if (cert is not None and target is not None and _is_number(target)
                and cert > float(target) + CERTIFY_TOL):
            raise MechanismFileError(
                f"mechanism file certifies eps {cert!r}, above its own target "
                f"parameters.eps = {target!r}: the stated guarantee does not hold")
        if uset is None or cert is None:
            if not allow_uncertified:
                what = "uncertainty_set" if uset is None else "certified_eps"
                claims = {k: mech.parameters[k] for k in ("eps", "delta")
                          if k in mech.parameters}
                said = (f"its parameters {claims} are unverified claims" if claims
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
        mech._check_recorded_set()
        mech._verify_certificate()
        object.__setattr__(mech, "_certified", True)
        return mech

    def _check_recorded_set(self) -> None:
        """The recorded set must follow from what the file records (module docstring)."""
        from .sets import set_from_dict

        assert self.uncertainty_set is not None
        recorded = dict(self.uncertainty_set)
        try:
            uset = set_from_dict(recorded)
        except (PMLError, TypeError, KeyError, ValueError) as exc:
            raise MechanismFileError(f"mechanism file uncertainty_set is invalid: {exc}") from exc
        if uset.n != self.n_inputs:
            raise MechanismFileError(
                f"mechanism file 'uncertainty_set' is on {uset.n} points but the matrix has "
                f"{self.n_inputs} inputs")
        params = self.parameters
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
        expected = self._rebuild_sample_set()
        if not _sets_match(recorded, expected):
            raise MechanismFileError(
                "mechanism file 'uncertainty_set' is not the set the "
                f"{params['confidence']!r} confidence method gives for delta = "
                f"{params['delta']!r}, m = {params['m']!r} and the recorded estimate "
                f"(expected {expected}): the set was edited, so the guarantee does not follow")

    def _rebuild_sample_set(self) -> dict[str, Any]:
        from .estimation import EmpiricalDistribution, l1_radius
        from .sets import L1Ball

        params = self.parameters
        m = int(params["m"])
        prior = np.asarray(params["prior"], dtype=np.float64)
        if prior.size != self.n_inputs:
            raise MechanismFileError(
                f"mechanism file 'parameters.prior' has {prior.size} entries but the matrix "
                f"has {self.n_inputs} inputs")
        counts = prior * m
        rounded = np.rint(counts)
        if (np.max(np.abs(counts - rounded)) > 1e-6 * max(1.0, m) ** 0.5
                or rounded.min() < 0 or int(rounded.sum()) != m):
            raise MechanismFileError(
                "mechanism file 'parameters.prior' times 'parameters.m' is not a vector of "
                f"counts summing to m = {m}: the estimate does not come from m samples")
        try:
            est = EmpiricalDistribution.from_counts(rounded.astype(np.int64))
            if np.max(np.abs(np.asarray(est.p) - prior)) > 1e-12:
                raise MechanismFileError(
                    "mechanism file 'parameters.prior' is not counts / m")
            delta = float(params["delta"])
            method = params["confidence"]
            if method == "l1":
                return L1Ball(np.asarray(est.p), l1_radius(delta, m, est.n)).to_dict()
            from .confidence import confidence_set

            return dict(confidence_set(est.counts, delta, confidence=method).set.to_dict())
        except MechanismFileError:
            raise
        except PMLError as exc:
            raise MechanismFileError(
                f"mechanism file 'parameters' cannot rebuild the confidence set "
                f"(confidence={method!r}): {exc}") from exc

    def _verify_certificate(self) -> None:
        from .sets import set_from_dict
        from .worstcase import CERTIFY_TOL, leakage_capacity

        try:
            uset = set_from_dict(dict(self.uncertainty_set or {}))
            actual = leakage_capacity(self.matrix, uset)
        except (PMLError, TypeError, KeyError, ValueError) as exc:
            # a malformed set description in a file is the file's fault, whatever the type
            raise MechanismFileError(f"mechanism file uncertainty_set is invalid: {exc}") from exc
        assert self.certified_eps is not None
        if actual > self.certified_eps + CERTIFY_TOL:
            raise MechanismFileError(
                f"mechanism file certifies eps {self.certified_eps!r} but its worst case over "
                f"the recorded uncertainty set is {actual!r}: the guarantee does not hold")

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, verify: bool = True,
             allow_uncertified: bool = False) -> Mechanism:
        """Read and validate a mechanism JSON file (see the module docstring).

        Duplicate keys are refused at every level. A file without an uncertainty set or a
        certified eps is refused unless ``allow_uncertified=True`` (then
        :attr:`certified` is ``False``)."""
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



def _unpickle_mechanism(matrix: Any, input_labels: Any, output_labels: Any, designer: Any,
                        parameters: Any, uncertainty_set: Any, certified_eps: Any,
                        certified: bool | None) -> Mechanism:
    """Rebuild a pickled :class:`Mechanism` (see :meth:`Mechanism.__reduce__`).

    Every field is validated again by the constructor; a mechanism pickled as certified must
    pass the certificate check again, else :class:`~pmlkit.errors.MechanismFileError`."""
    mech = Mechanism(matrix, input_labels, output_labels, designer, parameters,
                     uncertainty_set, certified_eps)
    if certified is True:
        if mech.uncertainty_set is None or mech.certified_eps is None:
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
