"""The mechanism file: writing it, and reading it strictly (format versions 1 and 2).

The format and every check a reader makes are documented in the :mod:`pmlkit.mechanism`
module docstring; the model (:class:`pmlkit.mechanism.Mechanism`) calls this module from
:meth:`~pmlkit.mechanism.Mechanism.to_dict`, :meth:`~pmlkit.mechanism.Mechanism.save`,
:meth:`~pmlkit.mechanism.Mechanism.from_dict` and :meth:`~pmlkit.mechanism.Mechanism.load`.
It never imports the model: a reader is given the class to build
(:func:`read_document`), so the model imports the format and not the other way round.

Writing: :func:`content` (every field but the digest), :func:`digest` (SHA-256 of the
canonical JSON), :func:`document`, :func:`to_json`, :func:`write_atomically`.
Reading: :func:`read_json` (text to a document, duplicate keys refused),
:func:`read_document` (structure, digest and JSON types; version 1 through the older
flat description, version 2 through the typed objects), :func:`check_recorded_claims`
(a recorded sample-based set rebuilt from its counts, a "prior" basis at the recorded
estimate). The certificate itself (the worst case over the set) is the model's check.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ._mechanism_legacy import UNVERIFIED_CERT, UNVERIFIED_SET
from ._provenance import drop_legacy_fingerprint
from ._validation import fmt, no_duplicate_keys, to_jsonable, user_path
from .errors import MechanismFileError, PMLError, ValidationError

#: The model's type in annotations. The format never imports the model, not even for type
#: checking (that would close an import cycle): a mechanism is handled through the
#: attributes the file records, and a reader is given the class to build.
Mechanism = Any
_M = TypeVar("_M")

__all__ = ["FIELDS", "FORMAT_NAME", "FORMAT_VERSION", "check_recorded_claims", "content",
           "digest", "document", "read_document", "read_json", "to_json",
           "write_atomically"]

FORMAT_NAME = "pmlkit-mechanism"
FORMAT_VERSION = 2

#: the top-level fields of each format version
FIELDS: dict[int, frozenset[str]] = {
    1: frozenset({"format", "format_version", "pmlkit_version", "input_labels",
                  "output_labels", "matrix", "designer", "parameters", "uncertainty_set",
                  "certified_eps", "sha256"}),
    2: frozenset({"format", "format_version", "pmlkit_version", "input_labels",
                  "output_labels", "matrix", "guarantee", "provenance", "sha256"}),
}


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


# -- writing -------------------------------------------------------------------------
def content(mech: Mechanism, format_version: int = FORMAT_VERSION) -> dict[str, Any]:
    """Every field of ``mech``'s document but the digest (``format_version`` 1 or 2)."""
    from ._version import __version__

    g = mech.guarantee
    head = {
        "format": FORMAT_NAME,
        "format_version": format_version,
        "pmlkit_version": __version__,
        "input_labels": list(mech.input_labels),
        "output_labels": list(mech.output_labels),
        "matrix": mech.matrix.tolist(),
    }
    if format_version == 1:
        uset = mech.uncertainty_set
        return {**head, "designer": mech.designer,
                "parameters": to_jsonable(dict(mech.parameters)),
                "uncertainty_set": None if uset is None else to_jsonable(dict(uset)),
                "certified_eps": to_jsonable(mech.certified_eps)}
    return {**head,
            "guarantee": None if g is None else to_jsonable(g.to_dict()),
            "provenance": to_jsonable(mech.provenance.to_dict())}


def digest(content: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of ``content`` (sorted keys, no spaces)."""
    canon = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def fast_digest(mech: Mechanism) -> str | None:
    """The digest :func:`document` records, computed with the matrix's numbers
    written once per distinct value (JSON writes a float as its ``repr``, so the text is
    the same, byte for byte): a 1000 x 1000 randomized response has two distinct entries
    and 10^6 cells. None (use ``to_dict``) for small matrices, matrices with many distinct
    entries, or a document this shortcut cannot reproduce."""
    import uuid

    w = np.ascontiguousarray(mech.matrix, dtype=np.float64)
    if w.size < 4096:
        return None
    import pandas as pd

    # distinct entries by their bits (-0.0 and 0.0 stay apart), by hashing (no sort)
    inverse, uniq = pd.factorize(w.view(np.uint64).ravel())
    uniq = np.asarray(uniq, dtype=np.uint64)
    if uniq.size > w.size // 8:
        return None
    texts = [repr(v).encode("ascii") for v in uniq.view(np.float64).tolist()]
    width = max(len(t) for t in texts)
    # every distinct entry's text padded with NUL bytes (never in a float's repr) and
    # followed by ","; the cells gathered, row and matrix brackets put in place, the
    # padding dropped: the JSON text of the matrix without a Python string per cell
    pad = np.zeros((len(texts), width + 1), dtype=np.uint8)
    for i, t in enumerate(texts):
        pad[i, :len(t)] = np.frombuffer(t, dtype=np.uint8)
    pad[:, width] = ord(",")
    n, m = w.shape
    cells = pad[inverse.reshape(n, m)]
    cells[:, m - 1, width] = ord("]")
    rows = np.empty((n, m * (width + 1) + 2), dtype=np.uint8)
    rows[:, 0] = ord("[")
    rows[:, 1:-1] = cells.reshape(n, -1)
    rows[:, -1] = ord(",")
    rows[n - 1, -1] = ord("]")
    flat = rows.ravel()
    matrix_json = "[" + flat[flat != 0].tobytes().decode("ascii")
    token = json.dumps(f"pmlkit-matrix-{uuid.uuid4().hex}")
    doc = content(mech)
    doc["matrix"] = json.loads(token)
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    if canon.count(token) != 1:
        return None
    canon = canon.replace(token, matrix_json)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def document(mech: Mechanism, format_version: int = FORMAT_VERSION) -> dict[str, Any]:
    """The whole document of ``mech``, digest included (:meth:`Mechanism.to_dict`)."""
    if isinstance(format_version, bool) or format_version not in FIELDS:
        raise ValidationError(
            f"format_version must be one of {sorted(FIELDS)}, got {fmt(format_version)}")
    doc = content(mech, format_version)
    doc["sha256"] = digest(doc)
    return doc


def to_json(doc: Mapping[str, Any]) -> str:
    """A document as the text of a file: indented JSON ending in a newline."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def write_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same folder,
    flushed to disk, then renamed over ``path``."""
    if isinstance(path, str) and path.endswith(("/", os.sep)):
        raise ValidationError(f"path {path!r} names a folder (it ends with '/'); give the "
                              "file's name")
    path = user_path(path)
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


# -- reading -------------------------------------------------------------------------
def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document of the file at ``path`` (duplicate keys refused at every level;
    ``NaN`` and ``Infinity`` kept as strings, which no numeric field accepts)."""
    path = user_path(path, "mechanism file")
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
    return doc


def read_document(cls: type[_M], doc: Any, *, allow_uncertified: bool = False
                  ) -> tuple[_M, Mapping[str, Any]]:
    """A document as an instance of ``cls`` and its flat record of claims, every check of
    the module docstring of :mod:`pmlkit.mechanism` made except the recorded set's
    (:func:`check_recorded_claims`) and the certificate's (the model's).

    A document without a guarantee is refused unless ``allow_uncertified``.
    """
    if not isinstance(doc, Mapping):
        raise MechanismFileError(
            f"mechanism file must hold a JSON object, got {type(doc).__name__}")
    if doc.get("format") != FORMAT_NAME:
        raise MechanismFileError(
            f"mechanism file 'format' must be {FORMAT_NAME!r}, got {doc.get('format')!r}")
    version = doc.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) \
            or version not in FIELDS:
        raise MechanismFileError(
            f"mechanism file 'format_version' must be one of {sorted(FIELDS)}, got "
            f"{version!r}"
            + ("" if type(version) is int else f" of type {type(version).__name__}"))
    expected = FIELDS[version]
    missing = expected - set(doc)
    extra = set(doc) - expected
    if missing or extra:
        raise MechanismFileError(
            f"mechanism file fields do not match format version {version}: "
            f"missing {sorted(missing)}, unexpected {sorted(extra)}")
    body = {k: doc[k] for k in expected - {"sha256"}}
    try:
        recomputed = digest(body)
    except (TypeError, ValueError, RecursionError) as exc:
        raise MechanismFileError(f"mechanism file holds non-JSON values: {exc}") from exc
    if doc["sha256"] != recomputed:
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
    return mech, claims


def check_recorded_claims(mech: Mechanism, claims: Mapping[str, Any]) -> None:
    """The recorded set must follow from what the file records, and a "prior" guarantee
    must be stated at the recorded estimate (module docstring of :mod:`pmlkit.mechanism`)."""
    assert mech.uncertainty_set is not None
    _check_recorded_set(mech.n_inputs, dict(mech.uncertainty_set), claims)
    _check_prior_point(mech)


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
