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
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _mechanism_file as _file
from ._mechanism_file import FORMAT_NAME, FORMAT_VERSION
from ._mechanism_legacy import (
    GUARANTEE_KEYS,
    PROVENANCE_KEYS,
    UNVERIFIED_CERT,
    UNVERIFIED_SET,
    is_point,
    typed_description,
)
from ._validation import ValidatedMatrix, as_mechanism, fmt, up_text
from .errors import MechanismFileError, PMLError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

    from .guarantee import PMLGuarantee, Provenance
    from .sets import UncertaintySet

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "Mechanism", "as_matrix", "typed_description"]

# The file format (FORMAT_NAME, FORMAT_VERSION, writing, strict reading) lives in
# pmlkit._mechanism_file and the older flat description (typed_description,
# UNVERIFIED_SET, UNVERIFIED_CERT) in pmlkit._mechanism_legacy; their names stay
# importable from here.

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
    if g.basis == "prior" and not is_point(g.set):
        raise ValidationError(
            "guarantee has basis 'prior' (one known distribution) but its set holds more "
            "than one distribution")


def _check_shadowing(g: Any, prov: Any) -> None:
    """A detail must not restate (and so contradict) a field the typed objects hold."""
    details = prov.details
    clash = [k for k, f in PROVENANCE_KEYS.items()
             if k in details and getattr(prov, f) is not None]
    if g is not None:
        clash += [k for k in GUARANTEE_KEYS if k in details
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
            for key, f in PROVENANCE_KEYS.items():
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
            cert = f", certified_eps={up_text(claim)}"
        else:  # a stated number pmlkit did not (or could not) check is not "certified"
            cert = f", UNCERTIFIED claim eps={up_text(claim)}"
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

    # -- JSON (the file format: pmlkit._mechanism_file) -------------------------------
    def _content(self, format_version: int = FORMAT_VERSION) -> dict[str, Any]:
        return _file.content(self, format_version)

    @staticmethod
    def _digest(content: Mapping[str, Any]) -> str:
        return _file.digest(content)

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
        return _file.document(self, format_version)

    def to_json(self) -> str:
        """The JSON document as indented text (one matrix row per line is not promised).

        Examples
        --------
        >>> from pmlkit import Mechanism, randomized_response
        >>> rr = randomized_response(2, 1.0)
        >>> Mechanism.from_dict(__import__("json").loads(rr.to_json())).certified
        True
        """
        return _file.to_json(self.to_dict())

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

        A guarantee that does not hold for the matrix (:attr:`certified` is False) is not
        written: :meth:`load` would refuse the file, and anyone reading it would see a
        false certificate. Raises :class:`~pmlkit.errors.ValidationError` then.
        """
        if self._guarantee is not None and not self.certified:
            raise ValidationError(
                "this mechanism states a guarantee that does not hold for its matrix (its "
                f"worst case over the stated set exceeds eps = {self._guarantee.eps!r}); "
                "save refuses to write a false certificate: build the Mechanism without "
                "the guarantee, or with one pmlkit certifies")
        return _file.write_atomically(path, self.to_json())

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
        mech, claims = _file.read_document(cls, doc, allow_uncertified=allow_uncertified)
        if mech.guarantee is None or not verify:
            object.__setattr__(mech, "_certified", False)
            return mech
        _file.check_recorded_claims(mech, claims)
        mech._verify_certificate()
        object.__setattr__(mech, "_certified", True)
        return mech

    def _verify_certificate(self) -> None:
        """The recorded promise ``eps`` must not be refuted (:func:`pmlkit.worstcase.refutes`:
        the recomputed worst case above it by more than its rounding) over the recorded set,
        and for basis ``"all"`` over every distribution; the recorded ``certified_eps``, a
        report of the computed worst case (older versions computed it differently), must
        not be below its recomputation by more than ``CERTIFY_TOL``."""
        from .worstcase import CERTIFY_TOL, leakage_capacity, refutes

        g = self._guarantee
        if g is None:
            raise MechanismFileError("mechanism records no guarantee to verify")
        try:
            sets: list[Any] = [g.set]
            if g.basis == "all":
                # the claim is "every distribution": check exactly that, not only the
                # recorded set (which passed a membership test with a float tolerance)
                from .sets import VertexSet

                sets.append(VertexSet(np.eye(self.n_inputs)))
            actual = max(leakage_capacity(self.matrix, s) for s in sets)
            holds = not any(refutes(self.matrix, s, g.eps) for s in sets)
        except (PMLError, TypeError, KeyError, ValueError) as exc:
            # a malformed set description in a file is the file's fault, whatever the type
            raise MechanismFileError(f"mechanism file uncertainty_set is invalid: {exc}") from exc
        where = ("every distribution (basis 'all')" if g.basis == "all"
                 else "the recorded uncertainty set")
        if not holds:
            raise MechanismFileError(
                f"mechanism file promises eps {g.eps!r} but its worst case over {where} is "
                f"{actual!r}, above it by more than rounding: the guarantee does not hold")
        if actual > g.certified_eps + CERTIFY_TOL:
            raise MechanismFileError(
                f"mechanism file certifies eps {g.certified_eps!r} but its worst case over "
                f"{where} is {actual!r}: the guarantee does not hold")

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
        return cls.from_dict(_file.read_json(path), verify=verify,
                             allow_uncertified=allow_uncertified)


_CHUNK = 1 << 20


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
