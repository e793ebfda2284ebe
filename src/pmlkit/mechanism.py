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
Loading checks the format tag and version, the types, the matrix (finite, ``>= 0``, rows
sum to 1 within 1e-9), the labels (unique, JSON scalars, sizes matching the matrix) and
the SHA-256 digest; when a set and a certified eps are recorded, it recomputes the exact
worst-case eps over the set and rejects the file if it exceeds the recorded value by more
than 1e-9. Any failure raises :class:`pmlkit.errors.MechanismFileError`. The digest catches
accidental or naive edits; it is not a signature against a deliberate forger.
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

from ._validation import as_mechanism, fmt
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


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return "inf" if obj > 0 else ("-inf" if obj < 0 else "nan")
    return obj


def as_matrix(mechanism: Any, name: str = "mechanism") -> np.ndarray:
    """Validated float64 matrix of a :class:`Mechanism` or any 2-D array-like."""
    if isinstance(mechanism, Mechanism):
        return mechanism.matrix.copy()
    return as_mechanism(mechanism, name)


@dataclass(frozen=True, eq=False)
class Mechanism:
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
        from . import __version__

        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "pmlkit_version": __version__,
            "input_labels": list(self.input_labels),
            "output_labels": list(self.output_labels),
            "matrix": self.matrix.tolist(),
            "designer": self.designer,
            "parameters": _jsonable(dict(self.parameters)),
            "uncertainty_set": None if self.uncertainty_set is None
            else _jsonable(dict(self.uncertainty_set)),
            "certified_eps": _jsonable(self.certified_eps),
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

    @classmethod
    def from_dict(cls, doc: Any, *, verify: bool = True) -> Mechanism:
        """Rebuild and validate a mechanism from its JSON document.

        Raises :class:`~pmlkit.errors.MechanismFileError` for anything malformed or tampered.
        With ``verify=True`` (default) a recorded certified eps is recomputed over the
        recorded uncertainty set."""
        if not isinstance(doc, Mapping):
            raise MechanismFileError(
                f"mechanism file must hold a JSON object, got {type(doc).__name__}")
        if doc.get("format") != FORMAT_NAME:
            raise MechanismFileError(
                f"mechanism file 'format' must be {FORMAT_NAME!r}, got {doc.get('format')!r}")
        if doc.get("format_version") != FORMAT_VERSION:
            raise MechanismFileError(
                f"mechanism file 'format_version' must be {FORMAT_VERSION}, "
                f"got {doc.get('format_version')!r}")
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
        if not isinstance(doc["matrix"], list) or not all(
                isinstance(r, list) for r in doc["matrix"]):
            raise MechanismFileError("mechanism file 'matrix' must be a list of rows")
        if any(isinstance(v, bool) or not isinstance(v, int | float)
               for r in doc["matrix"] for v in r):
            raise MechanismFileError("mechanism file 'matrix' entries must be numbers")
        if any(isinstance(v, int) and abs(v) > 1 for r in doc["matrix"] for v in r):
            raise MechanismFileError("mechanism file 'matrix' entries must be in [0, 1]")
        if not isinstance(doc["designer"], str):
            raise MechanismFileError("mechanism file 'designer' must be a string")
        if not isinstance(doc["parameters"], Mapping):
            raise MechanismFileError("mechanism file 'parameters' must be an object")
        for key in ("input_labels", "output_labels"):
            if not isinstance(doc[key], list):
                raise MechanismFileError(f"mechanism file {key!r} must be a list")
        cert = doc["certified_eps"]
        if cert == "inf":
            cert = math.inf
        if cert is not None and (isinstance(cert, bool) or not isinstance(cert, int | float)):
            raise MechanismFileError(
                f"mechanism file 'certified_eps' must be a number, got {fmt(cert)}")
        if isinstance(cert, int):
            try:
                cert = float(cert)
            except OverflowError:
                raise MechanismFileError(
                    f"mechanism file 'certified_eps' is out of range, got {fmt(cert)}") from None
        uset = doc["uncertainty_set"]
        if uset is not None and not isinstance(uset, Mapping):
            raise MechanismFileError("mechanism file 'uncertainty_set' must be an object")
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
        from .design._common import CERTIFY_TOL

        target = mech.parameters.get("eps")
        if (cert is not None and isinstance(target, int | float)
                and not isinstance(target, bool) and cert > float(target) + CERTIFY_TOL):
            raise MechanismFileError(
                f"mechanism file certifies eps {cert!r}, above its own target "
                f"parameters.eps = {target!r}: the stated guarantee does not hold")
        if verify and uset is not None and cert is not None:
            mech._verify_certificate()
        return mech

    def _verify_certificate(self) -> None:
        from .design._common import CERTIFY_TOL
        from .sets import set_from_dict
        from .worstcase import leakage_capacity

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
    def load(cls, path: str | os.PathLike[str], *, verify: bool = True) -> Mechanism:
        """Read and validate a mechanism JSON file (see the module docstring)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise MechanismFileError(f"mechanism file {str(path)!r} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise MechanismFileError(f"mechanism file {str(path)!r} cannot be read: {exc}") \
                from exc
        try:
            doc = json.loads(text, parse_constant=lambda c: c)
        except RecursionError:
            raise MechanismFileError(
                f"mechanism file {str(path)!r} is nested too deeply to be a mechanism file"
            ) from None
        except json.JSONDecodeError as exc:
            raise MechanismFileError(
                f"mechanism file {str(path)!r} is not valid JSON: {exc}") from exc
        return cls.from_dict(doc, verify=verify)

