"""Finding the mechanism of a released file: the manifest next to it, Parquet metadata
or a mapping (:func:`find_mechanism`, :func:`released_columns`,
:func:`find_joint_release`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from os import PathLike
from typing import Any

from .._validation import no_duplicate_keys, user_path
from ..errors import DataError, ValidationError
from ..mechanism import Mechanism

# -- finding the mechanism of a released file -------------------------------------------

#: Key under which a privatised file's manifest (``<file>.pmlkit.json``) and its Parquet
#: key-value metadata carry the mechanisms: a mapping column -> mechanism JSON document.
MECHANISM_KEY = "mechanism"


def _from_privatized(doc: Mapping[str, Any], column: str, where: str) -> Mechanism | None:
    """The mechanism of output ``column`` in the ``"privatized"`` section that
    ``pmlkit privatize`` writes (output column -> {"column", "mechanism",
    "mechanism_sha256", ...}), or None if that section does not name it."""
    section = doc.get("privatized")
    if not isinstance(section, Mapping) or column not in section:
        return None
    entry = section[column]
    if not isinstance(entry, Mapping) or not isinstance(entry.get(MECHANISM_KEY), Mapping):
        raise DataError(f"{where}: the 'privatized' entry of column {column!r} carries no "
                        "mechanism document")
    if "joint_release" in entry:  # its mechanism is on the tuple, not on this column
        joint = entry["joint_release"]
        cols = joint.get("into") if isinstance(joint, Mapping) else None
        raise DataError(f"{where}: column {column!r} was released together with "
                        f"{cols!r} through one mechanism on their tuples; its recorded "
                        "mechanism is that of the tuple, not of the column alone: estimate "
                        "the joint distribution from the released tuples")
    mech = Mechanism.from_dict(entry[MECHANISM_KEY], allow_uncertified=True)
    digest = entry.get("mechanism_sha256")
    # the document's own digest, which from_dict checked against its content (a document
    # of pmlkit 0.1 loses its reference fingerprint on reading, so it is rewritten with
    # another digest)
    if isinstance(digest, str) and entry[MECHANISM_KEY].get("sha256") != digest:
        raise DataError(f"{where}: the recorded mechanism of column {column!r} does not "
                        "match its recorded mechanism_sha256: the record was edited or "
                        "corrupted")
    return mech


def _from_mapping(doc: Any, column: str, where: str) -> Mechanism | None:
    """The mechanism of ``column`` in a manifest-like document, or None if absent."""
    if isinstance(doc, Mapping):
        found = _from_privatized(doc, column, where)
        if found is not None:
            return found
    if not isinstance(doc, Mapping) or MECHANISM_KEY not in doc:
        return None
    mechs = doc[MECHANISM_KEY]
    if not isinstance(mechs, Mapping):
        raise DataError(f"{where}: {MECHANISM_KEY!r} must map column names to mechanism "
                        f"documents, got {type(mechs).__name__}")
    key: Any = column
    if key not in mechs:
        # the released column may be an --into name: map it back to its source column
        cols, into = doc.get("columns"), doc.get("into")
        if isinstance(cols, list) and isinstance(into, list) and column in into \
                and len(cols) == len(into):
            key = cols[into.index(column)]
    if key not in mechs:
        raise DataError(f"{where} records no mechanism for column {column!r} (it has: "
                        f"{', '.join(map(repr, mechs))}); pass the mechanism file explicitly")
    mech = Mechanism.from_dict(mechs[key], allow_uncertified=True)  # the channel is enough
    digest = doc.get("mechanism_sha256")
    if isinstance(digest, str) and len(mechs) == 1 \
            and mechs[key].get("sha256") != digest:  # the checked digest (as above)
        raise DataError(f"{where}: the recorded mechanism does not match the recorded "
                        "mechanism_sha256: the record was edited or corrupted")
    return mech


def _check_bound(path: Any, doc: Any, where: str, columns: Sequence[str]) -> None:
    """A manifest pmlkit wrote binds itself to the data it describes (the digest of every
    released column and the row count, ``released_content``): believe it for ``path``
    only if the file is the one it records (``data.sha256``, the bytes written) or that
    binding holds for the file's content (a renamed or converted copy), and, when the
    file carries its own record (Parquet metadata), only if both name the same mechanisms
    for ``columns``. A manifest
    copied beside other data, or data edited after the release, would otherwise make the
    estimate invert the wrong channel. Records without a binding (older pmlkit, written
    by hand) cannot be checked and are read as before."""

    from ..privatization.files import previous_privatization

    p = user_path(path)
    if not (p.is_file() and where.startswith("manifest") and isinstance(doc, Mapping)
            and "released_content" in doc):
        return
    from ..io import file_format

    data = doc.get("data")
    if file_format(p) != "parquet" and isinstance(data, Mapping) \
            and isinstance(data.get("sha256"), str) and data["sha256"] == _file_sha256(p):
        return  # the very bytes the release wrote (a Parquet file is also checked against
        # its own record below, which an edited manifest could contradict)
    try:
        record = previous_privatization(p)
    except DataError as exc:
        raise DataError(f"{where} does not describe {str(p)!r}: {exc}") from None
    mine, theirs = doc.get("privatized"), (record or {}).get("privatized")
    if not isinstance(mine, Mapping) or not isinstance(theirs, Mapping):
        return
    for c in columns:
        a, b = mine.get(c), theirs.get(c)
        if isinstance(a, Mapping) and isinstance(b, Mapping) \
                and a.get("mechanism_sha256") != b.get("mechanism_sha256"):
            raise DataError(f"{where} and the release record inside {str(p)!r} name "
                            f"different mechanisms for column {c!r}: the manifest does not "
                            "describe this file; refusing both")


def _check_inside(path: Any, column: str, mech: Mechanism, where: str) -> None:
    """A Parquet file that carries its own release record (key ``pmlkit``) is believed
    only through it: the record must be bound to the file's content (as a later
    ``privatize`` pass checks it), and whatever names the mechanism of ``column`` (the
    legacy ``mechanism`` key, a manifest beside it) must name the one that record does.
    A record grafted from another file, or a second record contradicting the bound one,
    would otherwise make the estimate invert the wrong channel."""
    from ..io import file_format

    p = user_path(path)
    if not p.is_file() or file_format(p) != "parquet":
        return
    import pyarrow.parquet as pq

    try:
        inside = b"pmlkit" in (pq.read_schema(p).metadata or {}) \
            or b"pmlkit" in (pq.read_metadata(p).metadata or {})
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise DataError(f"cannot read {str(p)!r} as PARQUET: {exc}") from exc
    if not inside:
        return
    from ..privatization.files import previous_privatization

    try:
        record = previous_privatization(p)
    except DataError as exc:
        raise DataError(f"{where}: the release record inside {str(p)!r} does not describe "
                        f"it: {exc}") from None
    entry = (record or {}).get("privatized", {}).get(column)
    if not isinstance(entry, Mapping):
        return
    theirs = Mechanism.from_dict(entry["mechanism"], allow_uncertified=True)
    if theirs.to_dict()["sha256"] != mech.to_dict()["sha256"]:
        raise DataError(f"{where} names another mechanism for column {column!r} than the "
                        f"release record bound to {str(p)!r}; refusing both")


def _file_sha256(path: Any) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _manifest_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A recorded mechanism is read as strictly as a mechanism file: no duplicate keys."""
    from ..errors import MechanismFileError

    return no_duplicate_keys(pairs, MechanismFileError, "the recorded mechanism's manifest")


def find_mechanism(path: str | PathLike[str], column: str) -> tuple[Mechanism, str]:
    """The mechanism a privatised file's column was released through, and where it was
    found. ``path`` may also be the output folder of the Dask engine (its manifest
    ``<folder>.pmlkit.json`` records the release).

    Looks, in order, at the manifest ``<path>.pmlkit.json`` written next to the output by
    ``pmlkit privatize`` and, for Parquet, at the file's key-value metadata (key
    ``"mechanism"``, or inside the JSON under key ``"pmlkit"``). Both carry under
    ``"mechanism"`` a mapping ``column -> mechanism JSON document`` (the document of
    :meth:`pmlkit.Mechanism.to_dict`, checked by :meth:`pmlkit.Mechanism.from_dict`, digest
    included). Raises :class:`~pmlkit.errors.DataError` when neither records it.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from pmlkit import Mechanism
    >>> from pmlkit.inference import find_mechanism
    >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]], ("no", "yes"), ("no", "yes"))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "out.csv").write_text("smoker\\nyes\\nno\\n")
    >>> doc = {"mechanism": {"smoker": mech.to_dict()}}
    >>> _ = (folder / "out.csv.pmlkit.json").write_text(json.dumps(doc))
    >>> found, where = find_mechanism(folder / "out.csv", "smoker")
    >>> found.matrix.tolist(), where.startswith("manifest")
    ([[0.75, 0.25], [0.25, 0.75]], True)
    """

    p = user_path(path)
    manifest = p.with_name(p.name + ".pmlkit.json")
    for doc, where in _documents(p):
        mech = _from_mapping(doc, column, where)
        if mech is not None:
            _check_bound(p, doc, where, [column])
            _check_inside(p, column, mech, where)
            return mech, (f"manifest {manifest}" if where.startswith("manifest")
                          else f"Parquet metadata of {p}")
    raise DataError(f"no mechanism recorded for {str(p)!r}: neither a manifest "
                    f"{manifest.name!r} nor Parquet metadata names the mechanism of column "
                    f"{column!r}; pass it with --mechanism FILE")


def _documents(path: str | PathLike[str]) -> Iterator[tuple[Any, str]]:
    """The release records of a privatised file (or of the Dask engine's output folder),
    as :func:`find_mechanism` reads them: its manifest ``<path>.pmlkit.json``, then
    (Parquet file) its key-value metadata."""
    import json

    from ..io import file_format

    p = user_path(path)
    if not p.is_file() and not p.is_dir():  # a folder: the Dask engine's output
        raise DataError(f"input file {str(p)!r} does not exist")
    manifest = p.with_name(p.name + ".pmlkit.json")
    if manifest.is_file():
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"),
                             object_pairs_hook=_manifest_keys)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise DataError(f"manifest {str(manifest)!r} cannot be read: {exc}") from exc
        yield doc, f"manifest {str(manifest)!r}"
    if p.is_file() and file_format(p) == "parquet":
        import pyarrow.parquet as pq

        try:
            meta = pq.read_schema(p).metadata or {}
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise DataError(f"cannot read {str(p)!r} as PARQUET: {exc}") from exc
        where = f"Parquet metadata of {str(p)!r}"
        for raw, wrap in ((meta.get(MECHANISM_KEY.encode()), True),
                          (meta.get(b"pmlkit"), False)):
            if raw is None:
                continue
            try:
                doc = json.loads(raw.decode("utf-8"), object_pairs_hook=_manifest_keys)
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
                raise DataError(f"{where} cannot be read: {exc}") from exc
            if wrap:
                outer = meta.get(b"pmlkit")
                extra: dict[str, Any] = {}
                if outer is not None:
                    try:
                        ex = json.loads(outer.decode("utf-8"))
                        if isinstance(ex, Mapping):
                            extra = {k: ex[k] for k in ("columns", "into", "mechanism_sha256")
                                     if k in ex}
                    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                        extra = {}
                doc = {**extra, MECHANISM_KEY: doc}
            yield doc, where


def released_columns(path: str | PathLike[str]) -> frozenset[str]:
    """The columns of a privatised file that hold released (privatised) values, as its
    release records name them (the outputs of ``"privatized"``, ``"into"`` and the keys of
    ``"mechanism"``); empty when nothing is recorded.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from pmlkit.inference import released_columns
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "out.csv").write_text("smoker,age\\nyes,30\\n")
    >>> doc = {"columns": ["smoker"], "into": ["smoker"], "mechanism": {}}
    >>> _ = (folder / "out.csv.pmlkit.json").write_text(json.dumps(doc))
    >>> sorted(released_columns(folder / "out.csv"))
    ['smoker']
    """
    out: set[str] = set()
    for doc, _ in _documents(path):
        if not isinstance(doc, Mapping):
            continue
        for key in ("privatized", MECHANISM_KEY):
            sec = doc.get(key)
            if isinstance(sec, Mapping):
                out.update(k for k in sec if isinstance(k, str))
        into = doc.get("into")
        if isinstance(into, list):
            out.update(k for k in into if isinstance(k, str))
    return frozenset(out)


def find_joint_release(path: str | PathLike[str], columns: Sequence[str]) -> Any:
    """``(release, into)``: the :class:`pmlkit.joint.JointRelease` through which exactly
    ``columns`` (output column names, in any order) of a privatised file were released
    together and its output columns in the order of ``release.columns``; or ``None`` when
    its records name no such release (the columns may then have been released each
    through its own mechanism: :func:`find_mechanism`). A column released with other
    columns than ``columns`` raises :class:`~pmlkit.errors.DataError`.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> import pyarrow.parquet as pq
    >>> from pmlkit.joint import joint_release
    >>> from pmlkit.privatization import privatize_file
    >>> folder = Path(tempfile.mkdtemp())
    >>> pq.write_table(pa.table({"a": ["x", "y"] * 5, "b": ["u", "u", "v", "v", "u"] * 2}),
    ...                folder / "in.parquet")
    >>> rel = joint_release(("a", "b"), (("x", "y"), ("u", "v")), np.full((4, 4), 0.25),
    ...                     [0.25] * 4)
    >>> _ = privatize_file({("a", "b"): rel}, folder / "in.parquet", folder / "out.parquet",
    ...                    ["a", "b"], rng=0)
    >>> found, into = find_joint_release(folder / "out.parquet", ["b", "a"])
    >>> found.columns, list(into)
    (('a', 'b'), ['a', 'b'])
    """
    from ..joint import JointRelease

    for doc, where in _documents(path):
        sec = doc.get("privatized") if isinstance(doc, Mapping) else None
        if not isinstance(sec, Mapping):
            continue
        for col in columns:
            entry = sec.get(col)
            if not isinstance(entry, Mapping) or "joint_release" not in entry:
                continue
            joint = entry["joint_release"]
            into = joint.get("into") if isinstance(joint, Mapping) else None
            if not isinstance(into, list) or set(into) != set(columns) \
                    or len(into) != len(columns):
                raise DataError(
                    f"{where}: column {col!r} was released together with {into!r} through "
                    f"one mechanism on their tuples; estimate exactly those columns "
                    f"together (--column for each of them), got {list(columns)!r}")
            try:
                rel = JointRelease.from_dict(joint.get("release"), allow_uncertified=True)
            except ValidationError as exc:
                raise DataError(f"{where}: the joint release of {into!r} cannot be read: "
                                f"{exc}") from exc
            _check_bound(path, doc, where, list(columns))
            _check_inside(path, col, rel.mechanism, where)
            digest = joint.get("mechanism_sha256")
            if isinstance(digest, str) and rel.mechanism.to_dict()["sha256"] != digest:
                raise DataError(f"{where}: the recorded joint mechanism of {into!r} does not "
                                "match its recorded mechanism_sha256: the record was edited "
                                "or corrupted")
            return rel, into
    return None
