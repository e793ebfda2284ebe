"""Release history: the record of earlier ``privatize`` passes, bound to the data it
describes.

Every output :func:`~pmlkit.privatization.files.privatize_file` writes carries its release
record (which output columns were privatised, from which column, through which
mechanism) where the next pass reads it:

* a CSV output through its manifest ``<output>.pmlkit.json`` beside it (a renamed copy is
  recognised if its manifest is renamed with it);
* a Parquet output through its key-value metadata (``pmlkit``: the record, and
  :data:`CONTENT_KEY`: its binding), and through its manifest;
* a part of a Dask folder output through the folder's manifest ``<folder>.pmlkit.json``
  (Parquet parts also carry the record inside).

The record is bound to the data by the *released content*: for every output column the
record names, the SHA-256 of the column's values in a canonical encoding
(:class:`ContentHasher`), and the row count. A later pass recomputes these digests from
the file it reads and refuses the file (``DataError``) when any of them is missing or
differs: a record copied from another output, a record naming a column whose content it
does not describe, or a record with no binding at all is never believed.

What this does and does not catch
---------------------------------
The digests tie a record to the values it describes; they are not a signature. Someone
who writes a record and computes the digests of a raw column makes a record pmlkit cannot
tell from its own (no key is involved). A copy of an output stripped of its record (a CSV
output whose manifest is left behind, a file rewritten by a tool that drops the Parquet
key-value metadata) is new, unrecorded data to the next pass: pmlkit cannot see history
that is not there.

Canonical encoding
------------------
Each value is taken as text (pyarrow's cast to string: ``"Female"``, ``"1"``), a missing
value as the empty text (a CSV file writes both as an empty field). The digest of a column
is ``SHA-256("pmlkit-column-v1" || rows || SHA-256(lengths) || SHA-256(text))``, with
``rows`` as an 8-byte and every length as a 4-byte little-endian unsigned integer (an
Arrow text value is shorter than 2 GiB) and ``text`` the values' UTF-8
bytes concatenated: it does not depend on how the values are split into batches, nor on
the file format (a CSV output converted to Parquet with its manifest moved along still
matches).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError
from ._publish import MANIFEST_FORMAT, MANIFEST_SUFFIX

#: Key of the Parquet key-value entry (and of the manifest entry) binding the record.
CONTENT_KEY = "pmlkit-content"
#: ``format`` of the binding document.
CONTENT_FORMAT = "pmlkit-released-content"
_TAG = b"pmlkit-column-v1"


class ContentHasher:
    """Canonical SHA-256 of named columns, updated batch by batch (see the module
    docstring); vectorised: each batch costs one cast and two hash updates per column.

    Examples
    --------
    The digest does not depend on the batches nor on the column type:

    >>> import pyarrow as pa
    >>> a = ContentHasher(["x"])
    >>> a.update(pa.table({"x": ["1", "2", None]}))
    >>> b = ContentHasher(["x"])
    >>> b.update(pa.table({"x": [1]}))
    >>> b.update(pa.table({"x": [2, None]}))
    >>> a.finish() == b.finish()
    True
    """

    def __init__(self, columns: Iterable[str]) -> None:
        self.columns = list(dict.fromkeys(columns))
        self.rows = 0
        self._lengths = {c: hashlib.sha256() for c in self.columns}
        self._text = {c: hashlib.sha256() for c in self.columns}

    def update(self, batch: Any) -> None:
        """Add a record batch or table holding (at least) the hashed columns."""
        import pyarrow as pa

        names = list(batch.schema.names)
        for c in self.columns:
            col = batch.column(names.index(c))
            chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
            for chunk in chunks:
                self._add(c, chunk)
        self.rows += batch.num_rows

    def _add(self, c: str, arr: Any) -> None:
        import pyarrow as pa

        if not len(arr):
            return
        wide = pa.types.is_large_string(arr.type)
        if arr.null_count or not (wide or pa.types.is_string(arr.type)):
            # other types, or missing values: cast to text (pyarrow.compute is imported
            # only here; plain text, the usual released column, is read from its buffers)
            import pyarrow.compute as pc

            arr = pc.fill_null(pc.cast(arr, pa.large_string()),
                               pa.array([""], pa.large_string())[0])
            wide = True
        offsets = np.frombuffer(arr.buffers()[1], dtype="<i8" if wide else "<i4")[
            arr.offset:arr.offset + len(arr) + 1]
        self._lengths[c].update(np.diff(offsets).astype("<u4").tobytes())
        data = arr.buffers()[2]
        if data is not None:
            self._text[c].update(memoryview(data)[int(offsets[0]):int(offsets[-1])])

    def finish(self) -> dict[str, Any]:
        """The binding document: ``{"format", "version", "rows", "sha256": {column:
        digest}}``."""
        rows = int(self.rows).to_bytes(8, "little")
        digests = {c: hashlib.sha256(_TAG + rows + self._lengths[c].digest()
                                     + self._text[c].digest()).hexdigest()
                   for c in self.columns}
        return {"format": CONTENT_FORMAT, "version": 1, "rows": int(self.rows),
                "sha256": digests}


def bound_columns(meta: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """The output columns a record (``{"pmlkit": json}`` or the record itself) names
    under ``privatized`` that are columns of the output (``names``), in output order."""
    doc: Any = meta
    if "pmlkit" in meta and isinstance(meta["pmlkit"], str):
        doc = json.loads(meta["pmlkit"])
    section = doc.get("privatized") if isinstance(doc, Mapping) else None
    keys = set(section) if isinstance(section, Mapping) else set()
    return [n for n in names if n in keys]


def _strict_json(raw: str | bytes, where: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise DataError(f"{where} has the key {k!r} twice; refusing an ambiguous "
                                "release record")
            out[k] = v
        return out

    def constant(name: str) -> Any:
        raise DataError(f"{where} holds {name}, which is not JSON")

    try:
        return json.loads(raw, object_pairs_hook=pairs, parse_constant=constant)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DataError(f"{where} cannot be read: {' '.join(str(exc).split())}") from exc


def _manifest_beside(p: Path) -> Path:
    if not p.name:  # a folder given as "." or "/": name it by its absolute path
        p = p.resolve()
    return p.with_name(p.name + MANIFEST_SUFFIX) if p.name else p / MANIFEST_SUFFIX


def find_record(path: Path) -> tuple[dict[str, Any], Any, str] | None:
    """The release record of ``path``, its binding and where they were found, or ``None``
    (no record anywhere pmlkit writes one). Not yet checked against the data."""
    from ..io import file_format

    fmt = file_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            schema_meta = pq.read_schema(path).metadata or {}
            file_meta = pq.read_metadata(path).metadata or {}
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise DataError(f"cannot read {str(path)!r} as PARQUET: {exc}") from exc
        raw = schema_meta.get(b"pmlkit", file_meta.get(b"pmlkit"))
        if raw is not None:
            where = f"the 'pmlkit' metadata of {str(path)!r}"
            other = file_meta.get(b"pmlkit")
            if other is not None and other != raw:
                raise DataError(f"{str(path)!r} holds two different release records (its "
                                "Arrow schema's 'pmlkit' metadata and its footer's); "
                                "refusing an ambiguous release record")
            doc = _strict_json(raw, where)
            binding = file_meta.get(CONTENT_KEY.encode())
            bdoc = None if binding is None else _strict_json(
                binding, f"the {CONTENT_KEY!r} metadata of {str(path)!r}")
            return _check_record(doc, where), bdoc, where
    man = _manifest_beside(path)
    if man.is_file():
        where = f"manifest {str(man)!r}"
        doc = _read_manifest(man, where)
        return _check_record(doc, where), doc.get("released_content"), where
    folder_man = _manifest_beside(path.parent)
    if folder_man.is_file():  # a part of a Dask folder output
        where = f"manifest {str(folder_man)!r}"
        doc = _read_manifest(folder_man, where)
        data = doc.get("data")
        parts = data.get("parts") if isinstance(data, Mapping) else None
        if isinstance(parts, list):
            hits = [p for p in parts if isinstance(p, Mapping) and p.get("file") == path.name]
            if len(hits) > 1:
                raise DataError(f"{where} lists the part {path.name!r} twice; refusing an "
                                "ambiguous release record")
            if hits:
                return _check_record(doc, where), hits[0].get("released_content"), where
    return None


def _read_manifest(man: Path, where: str) -> dict[str, Any]:
    try:
        raw = man.read_bytes()
    except OSError as exc:
        raise DataError(f"{where} cannot be read: {exc}") from exc
    doc = _strict_json(raw, where)
    if not isinstance(doc, dict):
        raise DataError(f"{where} is not a privatisation record (a JSON object)")
    return doc


def _check_record(doc: Any, where: str) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT \
            or not isinstance(doc.get("privatized"), dict):
        raise DataError(f"{where} is not a privatisation record pmlkit can extend "
                        f"(format {MANIFEST_FORMAT!r} with a 'privatized' section); refusing "
                        "to guess the data's release history")
    for t, e in doc["privatized"].items():
        if not isinstance(e, dict) or not isinstance(e.get("column"), str) \
                or not isinstance(e.get("mechanism"), dict):
            raise DataError(f"{where}: its entry for output column {t!r} is malformed (it "
                            "needs 'column' and the 'mechanism' document); refusing the "
                            "record")
    passes = doc.get("previous_passes", [])
    if not isinstance(passes, list) or not all(
            isinstance(p, dict) and isinstance(p.get("privatized"), dict)
            and isinstance(p.get("columns"), list)
            and all(isinstance(c, str) for c in p["columns"]) for p in passes):
        # (where a repeated release is seen: a history pmlkit cannot read is not ignored)
        raise DataError(f"{where}: its 'previous_passes' is malformed (a list of the earlier "
                        "passes' records, each with its 'columns' and 'privatized'); "
                        "refusing the record")
    recheck_record(doc, where)
    return doc


def repeated_sources(record: Mapping[str, Any]) -> list[str]:
    """The source columns a (checked) release record shows privatised more than once: by
    two of its output columns (``--into`` with ``--keep-raw``, then ``--allow-repeat``), or
    by more than one of its passes (an in-place column privatised again replaces its entry,
    but each pass lists what it privatised under ``columns``). A column of one joint
    release counts once."""
    from collections import Counter

    per_entry = Counter(str(e["column"]) for e in record["privatized"].values()
                        if e.get("joint_release") is None)
    earlier = record.get("previous_passes")
    passes = [*(earlier if isinstance(earlier, list) else []), record]
    per_pass: Counter[str] = Counter()
    for p in passes:
        cols = p.get("columns") if isinstance(p, Mapping) else None
        if isinstance(cols, list):
            per_pass.update({str(c) for c in cols})
    return [c for c in dict.fromkeys([*per_entry, *per_pass])
            if per_entry[c] > 1 or per_pass[c] > 1]


def check_recordable(mech: Any) -> None:
    """A mechanism a release records (its manifest) must be one its readers accept: its
    document read back strictly (:meth:`pmlkit.Mechanism.from_dict`: a sample-based set
    rebuilt from its counts, delta and method, the certificate recomputed). A guarantee
    whose stated coverage does not follow from its sample (a hand-built confidence set)
    would otherwise be written next to the data. Raises
    :class:`~pmlkit.errors.ValidationError`."""
    if mech.guarantee is None:
        return
    from ..errors import MechanismFileError, ValidationError
    from ..mechanism import Mechanism

    try:
        Mechanism.from_dict(mech.to_dict())
    except MechanismFileError as exc:
        raise ValidationError(
            f"mechanism states a guarantee its own record does not support ({exc}); a "
            "release would write it next to the data: build the Mechanism without the "
            "guarantee, or from a design or calibration") from None


def recheck_record(doc: Mapping[str, Any], where: str) -> None:
    """Re-check a release record in the model, never trusting its numbers: every entry's
    mechanism document is read strictly (:meth:`pmlkit.Mechanism.from_dict`, its own
    certificate recomputed when it states one) and must have the digest the entry records,
    and the record's joint guarantee is read strictly and re-verified
    (:meth:`pmlkit.joint.JointGuarantee.verify`) for exactly the mechanisms the record says
    were released. Raises :class:`~pmlkit.errors.DataError`."""
    from ..errors import PMLError
    from ..joint import JointGuarantee, JointRelease
    from ..mechanism import Mechanism

    by_column: dict[str, Any] = {}
    try:
        for t, e in doc["privatized"].items():
            mech = Mechanism.from_dict(e["mechanism"], allow_uncertified=True)
            digest = e.get("mechanism_sha256")
            if digest is not None and digest != mech.to_dict()["sha256"]:
                raise DataError(f"its entry for output column {t!r} records a mechanism "
                                "digest other than its mechanism's")
            rel = e.get("joint_release")
            if rel is not None:
                if not isinstance(rel, Mapping) or "release" not in rel:
                    raise DataError(f"its entry for output column {t!r} has a malformed "
                                    "joint release")
                release = JointRelease.from_dict(rel["release"], allow_uncertified=True)
                if release.mechanism.to_dict()["sha256"] != mech.to_dict()["sha256"]:
                    raise DataError(f"its entry for output column {t!r} names a joint "
                                    "release of another mechanism")
                by_column[str(e["column"])] = release
            else:
                by_column.setdefault(str(e["column"]), mech)
        jg = doc.get("joint_guarantee")
        if jg is not None:
            g = JointGuarantee.from_dict(jg)
            again = repeated_sources(doc)
            if again:
                raise DataError(f"it states a joint guarantee, but column {again[0]!r} was "
                                "released more than once, which a joint guarantee of "
                                "distinct columns does not cover")
            missing = [c for c in g.columns if c not in by_column]
            if missing:
                raise DataError(f"its joint guarantee names column {missing[0]!r}, which the "
                                "record does not list as released")
            targets = [by_column[c] for c in g.columns]
            releases = {id(x): x for x in targets if isinstance(x, JointRelease)}
            if releases:
                if len(releases) != 1 or len(targets) != len(next(iter(releases.values()))
                                                              .columns):
                    raise DataError("its joint guarantee mixes a joint release with other "
                                    "columns")
                g.verify(next(iter(releases.values())))
            else:
                g.verify(targets)
    except DataError as exc:
        raise DataError(f"{where}: {exc}; refusing the record") from exc
    except PMLError as exc:
        raise DataError(f"{where}: it does not re-check: {' '.join(str(exc).split())}; "
                        "refusing the record") from exc


def check_binding(path: Path, record: Mapping[str, Any], binding: Any, where: str,
                  csv: Any) -> None:
    """Refuse ``path`` unless ``binding`` holds the row count and the digest of every
    output column ``record`` names (and of no other column), and they are those of the
    file's content."""
    from ..io import iter_batches, unique_columns

    section = record["privatized"]
    if not isinstance(binding, Mapping) or binding.get("format") != CONTENT_FORMAT \
            or binding.get("version") != 1 or not isinstance(binding.get("sha256"), Mapping) \
            or isinstance(binding.get("rows"), bool) or not isinstance(binding.get("rows"), int):
        raise DataError(f"{where} records a release of {str(path)!r} that is not bound to "
                        f"its content (no valid {CONTENT_KEY!r} digest): written by an older "
                        "pmlkit or another tool, or grafted; refusing to believe it")
    digests = binding["sha256"]
    unbound = [t for t in section if not isinstance(digests.get(t), str)]
    if unbound:
        raise DataError(f"{where} names output column {unbound[0]!r} as privatised but "
                        f"binds no digest of its content; refusing the record")
    extra = [str(t) for t in digests if t not in section]
    if extra:  # the binding covers exactly the columns the record named when written
        raise DataError(f"{where} binds the content of column {extra[0]!r} but does not "
                        "name it as privatised: the record was edited (an entry removed) "
                        "or grafted; refusing the record")
    available = unique_columns(path, csv=csv)
    absent = [t for t in section if t not in available]
    if absent:
        raise DataError(f"{where} names output column {absent[0]!r} as privatised but "
                        f"{str(path)!r} has no such column; refusing the record")
    import pyarrow as pa

    hasher = ContentHasher(list(section))
    text = {t: pa.string() for t in section}  # CSV: the cells' text, as written
    for batch in iter_batches(path, list(section), csv=csv, column_types=text):
        hasher.update(batch)
    got = hasher.finish()
    if got["rows"] != binding["rows"]:
        raise DataError(f"{where} describes {binding['rows']} rows but {str(path)!r} holds "
                        f"{got['rows']}: the record does not describe this data; refusing it")
    for t in section:
        if got["sha256"][t] != digests[t]:
            raise DataError(f"{where} names output column {t!r} as privatised, but the "
                            f"column's content in {str(path)!r} is not the one released "
                            "(digest mismatch: a record copied or grafted from other data, "
                            "or edited data); refusing the record")


_CACHE: dict[tuple[Any, ...], dict[str, Any] | None] = {}


def _stat_key(p: Path) -> tuple[Any, ...]:
    try:
        st = os.stat(p)
    except OSError:
        return (str(p), None)
    return (str(p.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)


def verified_record(path: str | os.PathLike[str], *, csv: Any) -> dict[str, Any] | None:
    """The release record of ``path`` checked against its content (``None`` if it has
    none); a record that does not describe the data raises DataError. Checked results
    are remembered for unchanged files (same inode, size and modification time of the
    data and of the manifests), so a run checks each input once."""
    p = Path(path)
    key = (_stat_key(p), _stat_key(_manifest_beside(p)), _stat_key(_manifest_beside(p.parent)),
           repr(csv))
    if key in _CACHE:
        return copy.deepcopy(_CACHE[key])
    found = find_record(p)
    record = None
    if found is not None:
        record, binding, where = found
        check_binding(p, record, binding, where, csv)
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[key] = copy.deepcopy(record)
    return record
