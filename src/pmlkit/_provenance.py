"""Fingerprints of the reference sample, to warn when the released data is the reference.

A mechanism designed from a reference sample is only protective for records that are not
in that sample, or whose reference counts are as public as the release itself (see
``docs/threat_model.md``): the mechanism file discloses the reference estimate and its size
``m``. So the designers record in ``parameters["reference"]`` a fingerprint of the sample:

* ``records`` (the number of records ``m``) and ``sample_sha256``, a SHA-256 over the
  labels' text forms (``str`` of each value, joined by the unit separator), for a sample
  given in memory;
* ``file_size`` (bytes) and ``file_sha256`` (SHA-256 of the file's bytes) when the sample
  was read from a file (``pmlkit design``).

At privatisation time the check is cheap: the size is compared first (one ``stat`` or
``len``) and the data hashed only when the sizes agree. A match gives a
:class:`~pmlkit.errors.PMLWarning` (one line on stderr from the command line). It is a
guard rail against the obvious mistake, not a guarantee: a reordered or re-encoded copy of
the reference is not recognised.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["REFERENCE_WARNING", "file_fingerprint", "sample_fingerprint",
           "warn_if_reference_file", "warn_if_reference_values"]

REFERENCE_WARNING = (
    "privatising the reference data itself: the mechanism file discloses this sample's "
    "estimate and size, so the released records are not protected by the stated guarantee "
    "against anyone holding the file; use a reference disjoint from (or as public as) the "
    "released records")

_CHUNK = 1 << 20


def file_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``{"file_size": bytes, "file_sha256": hex}`` of a file's bytes.

    Examples
    --------
    >>> import hashlib, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ref.csv"
    >>> _ = path.write_bytes(b"sex\\nF\\n")
    >>> fp = file_fingerprint(path)
    >>> fp["file_size"], fp["file_sha256"] == hashlib.sha256(b"sex\\nF\\n").hexdigest()
    (6, True)
    """
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return {"file_size": size, "file_sha256": h.hexdigest()}


def _labels_1d(values: Any) -> np.ndarray | None:
    """A 1-D numpy array of the values (pandas, pyarrow, numpy, list), or ``None``."""
    mod = type(values).__module__.split(".")[0]
    try:
        if mod == "pyarrow":
            arr = _arrow_labels(values)
        elif mod == "pandas" and hasattr(values, "to_numpy") and getattr(values, "ndim", 2) == 1:
            arr = np.asarray(values.to_numpy())
        elif isinstance(values, np.ndarray):
            arr = values
        elif isinstance(values, list | tuple):
            arr = np.empty(len(values), dtype=object)
            arr[:] = list(values)
        else:
            return None
    except (TypeError, ValueError, AttributeError):
        return None
    return arr if arr.ndim == 1 else None


def _arrow_labels(values: Any) -> np.ndarray:
    """The numpy array ``values.to_numpy(zero_copy_only=False)`` gives, without it for the
    common label columns: pyarrow's numpy conversion imports pandas (about a third of a
    second of ``pmlkit design``), so text columns go through ``to_pylist`` (the same Python
    strings, ``None`` for nulls) and null-free integer or float columns are read from their
    data buffers. Other types (dictionaries, booleans, dates, nulls in numbers) use pyarrow's
    own conversion."""
    import pyarrow as pa

    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        arr = np.empty(len(values), dtype=object)
        arr[:] = values.to_pylist()
        return arr
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if (pa.types.is_integer(t) or pa.types.is_floating(t)) and values.null_count == 0:
        kind = "f" if pa.types.is_floating(t) else ("u" if pa.types.is_unsigned_integer(t)
                                                     else "i")
        dtype = np.dtype(f"{kind}{t.bit_width // 8}")
        parts = [np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c),
                               offset=c.offset * dtype.itemsize) for c in chunks if len(c)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)
    return np.asarray(values.to_numpy(zero_copy_only=False))


def _digest(arr: np.ndarray) -> str:
    text = arr.astype(str)  # numpy's C loop over str(value)
    h = hashlib.sha256(b"pmlkit-sample/v1\x00")
    h.update("\x1f".join(text.tolist()).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def sample_fingerprint(samples: Any) -> dict[str, Any] | None:
    """``{"records": m, "sample_sha256": hex}`` of an in-memory 1-D sample, or ``None``
    when the input's form is not one pmlkit fingerprints.

    Examples
    --------
    A list and an array of the same labels have one fingerprint:

    >>> import numpy as np
    >>> a = sample_fingerprint(["F", "M", "M"])
    >>> a == sample_fingerprint(np.array(["F", "M", "M"])), a["records"]
    (True, 3)
    >>> a == sample_fingerprint(["M", "F", "M"])  # order matters: it is this exact sample
    False
    """
    arr = _labels_1d(samples)
    if arr is None:
        return None
    try:
        return {"records": int(arr.size), "sample_sha256": _digest(arr)}
    except (TypeError, ValueError, UnicodeError):
        return None


def _reference(mech: Any) -> Mapping[str, Any] | None:
    ref = getattr(mech, "parameters", {}).get("reference")
    return ref if isinstance(ref, Mapping) else None


def warn_if_reference_file(mech: Any, path: str | os.PathLike[str]) -> bool:
    """Warn (:class:`~pmlkit.errors.PMLWarning`) if ``path`` holds the exact bytes of the
    mechanism's reference file; size first, hash only on a size match.

    Examples
    --------
    >>> import pathlib, tempfile, warnings
    >>> import pmlkit
    >>> ref = pathlib.Path(tempfile.mkdtemp()) / "ref.csv"
    >>> _ = ref.write_text("sex\\n" + "F\\n" * 40 + "M\\n" * 60)
    >>> mech = pmlkit.Mechanism(
    ...     [[0.75, 0.25], [0.25, 0.75]],
    ...     parameters={"reference": file_fingerprint(ref)})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_reference_file(mech, ref)
    True
    >>> caught[0].category.__name__
    'PMLWarning'
    """
    from .errors import PMLWarning

    ref = _reference(mech)
    if ref is None or not isinstance(ref.get("file_size"), int):
        return False
    try:
        if os.stat(path).st_size != ref["file_size"]:
            return False
        same = file_fingerprint(path)["file_sha256"] == ref.get("file_sha256")
    except OSError:
        return False
    if same:
        warnings.warn(f"{os.fspath(path)}: {REFERENCE_WARNING}", PMLWarning, stacklevel=3)
    return bool(same)


def warn_if_reference_values(mech: Any, values: Any, columns: Any = None) -> bool:
    """Warn if an in-memory sample (or a privatised DataFrame column) is the mechanism's
    reference sample; length first, hash only on a length match.

    Examples
    --------
    >>> import warnings
    >>> import pmlkit
    >>> sample = ["F"] * 40 + ["M"] * 60
    >>> mech = pmlkit.Mechanism([[0.75, 0.25], [0.25, 0.75]], input_labels=("F", "M"),
    ...                         parameters={"reference": sample_fingerprint(sample)})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_reference_values(mech, sample), warn_if_reference_values(mech, ["F", "M"])
    (True, False)
    >>> len(caught)
    1
    """
    from .errors import PMLWarning

    ref = _reference(mech)
    if ref is None or not isinstance(ref.get("sample_sha256"), str):
        return False
    records = ref.get("records")  # absent from minimal records: then always hash
    mod = type(values).__module__.split(".")[0]
    if mod == "pandas" and getattr(values, "ndim", 1) == 2:
        cols = [columns] if isinstance(columns, str) else list(columns or [])
        candidates = [values[c] for c in cols if c in values.columns]
    else:
        candidates = [values]
    for cand in candidates:
        try:
            if isinstance(records, int) and len(cand) != records:
                continue
        except TypeError:
            continue
        fp = sample_fingerprint(cand)
        if fp is not None and fp["sample_sha256"] == ref.get("sample_sha256"):
            warnings.warn(REFERENCE_WARNING, PMLWarning, stacklevel=3)
            return True
    return False
