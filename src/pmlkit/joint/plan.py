"""The release plan: which mechanism releases which columns, and the guarantee of the whole
record, as one typed, versioned file that is read strictly and re-checked in the model.

``pmlkit joint design`` writes a folder holding the mechanism files and
``release-plan.json``; ``pmlkit privatize --plan`` reads it with :meth:`ReleasePlan.load`.

File format (``version`` 2)
---------------------------
A UTF-8 JSON object::

    {
      "format": "pmlkit-release-plan", "version": 2,
      "columns": ["sex", "income"],
      "mode": "per-column",                       # or "joint alphabet"
      "mechanism_files": {"sex": "sex.json", "income": "income.json"},   # or {"joint": ...}
      "mechanism_sha256": {"sex": "<digest>", "income": "<digest>"},
      "joint_release": null,                      # joint mode: column_labels, output_tuples
      "joint_guarantee": {... JointGuarantee.to_dict() ...},
      "split": [0.4, 0.6], "utility": 0.31, "joint_mutual_information": 0.35
    }

Reading is strict, because anyone can edit a file and recompute its digests:

* a duplicate key in any object, an unknown format or version, a missing or unexpected
  field, a value of the wrong type, a mechanism file name that is not a plain name in the
  plan's folder, are refused;
* each mechanism file is read with :meth:`pmlkit.Mechanism.load` (its own certificate is
  re-checked) and must have the digest the plan records;
* the joint guarantee is read with :meth:`JointGuarantee.from_dict` and re-checked with
  :meth:`JointGuarantee.verify`: its set is rebuilt from its counts, delta and method and
  must equal the recorded one, and the worst case of exactly the mechanisms the plan
  releases is recomputed over it and must not exceed the certified eps (an infinite or
  NaN worst case never passes).

Every refusal is one :class:`pmlkit.errors.PlanFileError` line naming the field. Version-1
plans (pmlkit 0.1) carried no counts to rebuild their set from and are refused with the
advice to design again.

Examples
--------
>>> import tempfile
>>> import pmlkit
>>> from pmlkit.joint import ReleasePlan
>>> ref = {"x": ["a", "b"] * 60, "y": ["u"] * 70 + ["v"] * 50}
>>> design = pmlkit.design_joint(ref, 1.5, 0.05, mode="per-column")
>>> with tempfile.TemporaryDirectory() as d:
...     path = ReleasePlan.from_design(design).save(d)
...     plan = ReleasePlan.load(path)
>>> plan.columns, plan.mode, plan.guarantee.eps == design.guarantee.eps
(('x', 'y'), 'per-column', True)
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from .._validation import fmt, no_duplicate_keys, to_jsonable, user_path
from ..errors import PlanFileError, PMLError, ValidationError
from ..mechanism import Mechanism
from .design import JointDesign, JointRelease
from .guarantee import JointGuarantee

__all__ = ["PLAN_FILE", "ReleasePlan"]

#: The plan's file name in the folder ``pmlkit joint design`` writes.
PLAN_FILE = "release-plan.json"

_MODES = ("per-column", "joint alphabet")
_FIELDS = frozenset({"format", "version", "columns", "mode", "mechanism_files",
                     "mechanism_sha256", "joint_release", "joint_guarantee", "split",
                     "utility", "joint_mutual_information"})


def _number_or_none(v: Any, name: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise PlanFileError(f"release plan {name!r} must be a finite number or null, got "
                            f"{fmt(v)}")
    return float(v)


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """A release of several columns: the mechanisms and the joint guarantee they carry.

    Attributes
    ----------
    columns
        The released columns.
    mode
        ``"per-column"`` (each column through its own mechanism, independent randomness)
        or ``"joint alphabet"`` (the tuple through one mechanism, :attr:`release`).
    guarantee
        The :class:`JointGuarantee` of the whole record.
    mechanisms
        Per-column mode: column -> :class:`~pmlkit.Mechanism`; empty in joint mode.
    release
        Joint mode: the :class:`JointRelease`; ``None`` in per-column mode.
    split, utility, joint_mutual_information
        What the design reports (the split is per-column design eps, not a guarantee).

    Examples
    --------
    >>> import pmlkit
    >>> ref = {"x": ["a", "b"] * 60, "y": ["u"] * 70 + ["v"] * 50}
    >>> plan = ReleasePlan.from_design(pmlkit.design_joint(ref, 1.5, 0.05))
    >>> plan.mode, plan.release is not None
    ('joint alphabet', True)
    """

    FORMAT: ClassVar[str] = "pmlkit-release-plan"
    VERSION: ClassVar[int] = 2

    columns: tuple[str, ...]
    mode: str
    guarantee: JointGuarantee
    mechanisms: Mapping[str, Mechanism] = field(default_factory=dict)
    release: JointRelease | None = None
    split: tuple[float, ...] = ()
    utility: float | None = None
    joint_mutual_information: float | None = None
    files: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        cols = tuple(self.columns)
        if self.mode not in _MODES:
            raise ValidationError(f"mode must be one of {list(_MODES)}, got {fmt(self.mode)}")
        if not isinstance(self.guarantee, JointGuarantee):
            raise ValidationError(
                f"guarantee must be a JointGuarantee, got {type(self.guarantee).__name__}")
        if self.guarantee.columns != cols:
            raise ValidationError(
                f"the joint guarantee covers columns {list(self.guarantee.columns)}, the "
                f"plan releases {list(cols)}")
        mechs = dict(self.mechanisms)
        if self.mode == "per-column":
            if self.release is not None or sorted(mechs) != sorted(cols) or not all(
                    isinstance(m, Mechanism) for m in mechs.values()):
                raise ValidationError(
                    "a per-column plan needs one Mechanism per column and no joint release")
        elif not isinstance(self.release, JointRelease) or mechs or \
                self.release.columns != cols:
            raise ValidationError(
                "a joint-alphabet plan needs its JointRelease over the plan's columns and no "
                "per-column mechanisms")
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "mechanisms", MappingProxyType(mechs))
        object.__setattr__(self, "split", tuple(float(x) for x in self.split))
        object.__setattr__(self, "files", MappingProxyType(dict(self.files)))

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_design(cls, design: JointDesign) -> ReleasePlan:
        """The plan of a :func:`pmlkit.design_joint` result."""
        g = design.guarantee
        if design.release is not None:
            return cls(g.columns, "joint alphabet", g, {}, design.release, (),
                       design.utility, design.joint_mutual_information)
        return cls(g.columns, "per-column", g,
                   dict(zip(g.columns, design.mechanisms, strict=True)), None, design.split,
                   design.utility, design.joint_mutual_information)

    def verify(self) -> ReleasePlan:
        """Re-check the joint guarantee for exactly the mechanisms the plan releases
        (:meth:`JointGuarantee.verify`); returns ``self``."""
        target: Any = self.release if self.release is not None else \
            [self.mechanisms[c] for c in self.columns]
        self.guarantee.verify(target)
        return self

    # -- the file ---------------------------------------------------------------------
    def _targets(self) -> dict[str, Mechanism]:
        if self.release is not None:
            return {"joint": self.release.mechanism}
        return {c: self.mechanisms[c] for c in self.columns}

    def to_dict(self) -> dict[str, Any]:
        """The plan file's document (mechanism files named ``<key>.json``)."""
        targets = self._targets()
        rel = None if self.release is None else {
            "column_labels": [list(x) for x in self.release.column_labels],
            "output_tuples": [list(t) for t in self.release.output_tuples]}
        return {
            "format": self.FORMAT, "version": self.VERSION, "columns": list(self.columns),
            "mode": self.mode,
            "mechanism_files": {k: f"{k}.json" for k in targets},
            "mechanism_sha256": {k: m.to_dict()["sha256"] for k, m in targets.items()},
            "joint_release": rel,
            "joint_guarantee": self.guarantee.to_dict(),
            "split": list(self.split), "utility": self.utility,
            "joint_mutual_information": self.joint_mutual_information,
        }

    def save(self, folder: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the mechanism files and :data:`PLAN_FILE` into ``folder`` (created if
        missing); refuses to replace an existing file unless ``overwrite``. Returns the
        plan file's path.

        The joint guarantee is re-checked first (:meth:`verify`): a plan built in Python
        with a guarantee its mechanisms break is refused, and nothing is written (its file
        would be refused when read anyway).

        Raises
        ------
        DataError
            The guarantee does not hold for the plan's mechanisms, or a file exists.
        """
        from ..errors import DataError

        self.verify()
        out = user_path(folder, "folder")
        doc = self.to_dict()
        paths = {k: out / name for k, name in doc["mechanism_files"].items()}
        plan_path = out / PLAN_FILE
        existing = [str(p) for p in (*paths.values(), plan_path) if p.exists()]
        if existing and not overwrite:
            raise DataError(f"output file {existing[0]!r} already exists; pass overwrite=True "
                            "(command line: --overwrite) to replace it")
        out.mkdir(parents=True, exist_ok=True)
        for k, m in self._targets().items():
            m.save(paths[k])
        tmp = plan_path.with_name(f".{plan_path.name}.tmp")
        tmp.write_text(json.dumps(to_jsonable(doc), indent=2), encoding="utf-8")
        os.replace(tmp, plan_path)
        return plan_path

    @classmethod
    def load(cls, path: str | os.PathLike[str], *,
             allow_uncertified: bool = False) -> ReleasePlan:
        """Read a plan file strictly and re-check its guarantee (module docstring).

        Raises
        ------
        PlanFileError
            Anything malformed, edited or forged, in one line naming the field.
        """
        p = user_path(path, "plan file")
        where = f"release plan {str(p)!r}"
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PlanFileError(f"{where} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PlanFileError(f"{where} cannot be read: {exc}") from exc
        try:
            doc = json.loads(text, parse_constant=_refuse_constant,
                             object_pairs_hook=lambda pairs: no_duplicate_keys(
                                 pairs, PlanFileError, where))
        except RecursionError:
            raise PlanFileError(f"{where} is nested too deeply to be a release plan") from None
        except json.JSONDecodeError as exc:
            raise PlanFileError(f"{where} is not valid JSON: {exc}") from exc
        except ValueError as exc:
            raise PlanFileError(f"{where}: {exc}") from exc
        try:
            return cls._from_document(doc, p.parent, allow_uncertified)
        except PlanFileError as exc:
            raise PlanFileError(f"{where}: {exc}") from exc
        except PMLError as exc:
            raise PlanFileError(f"{where}: {' '.join(str(exc).split())}") from exc

    @classmethod
    def _from_document(cls, doc: Any, folder: Path, allow_uncertified: bool) -> ReleasePlan:
        if not isinstance(doc, dict) or doc.get("format") != cls.FORMAT:
            raise PlanFileError(f"is not a release plan ('format' must be {cls.FORMAT!r}, "
                                "as pmlkit joint design writes)")
        v = doc.get("version")
        if isinstance(v, bool) or not isinstance(v, int) or v != cls.VERSION:
            hint = (" (version-1 plans record no counts to re-check their set: design the "
                    "release again with pmlkit joint design)" if v == 1 else "")
            raise PlanFileError(f"'version' must be {cls.VERSION}, got {fmt(v)}{hint}")
        if set(doc) != _FIELDS:
            raise PlanFileError(
                f"fields do not match version {cls.VERSION}: missing "
                f"{sorted(_FIELDS - set(doc))}, unexpected {sorted(set(doc) - _FIELDS)}")
        cols = doc["columns"]
        if not isinstance(cols, list) or len(cols) < 2 or not all(
                isinstance(c, str) and c for c in cols) or len(set(cols)) != len(cols):
            raise PlanFileError(f"'columns' must list at least 2 distinct column names, got "
                                f"{fmt(cols)}")
        mode = doc["mode"]
        if mode not in _MODES:
            raise PlanFileError(f"'mode' must be one of {list(_MODES)}, got {fmt(mode)}")
        keys = ["joint"] if mode == "joint alphabet" else list(cols)
        files, digests = doc["mechanism_files"], doc["mechanism_sha256"]
        for name, value in (("mechanism_files", files), ("mechanism_sha256", digests)):
            if not isinstance(value, dict) or sorted(value) != sorted(keys) or not all(
                    isinstance(x, str) and x for x in value.values()):
                raise PlanFileError(f"{name!r} must map {keys} to strings, got {fmt(value)}")
        split = doc["split"]
        if not isinstance(split, list) or not all(
                _number_or_none(x, "split") is not None for x in split):
            raise PlanFileError(f"'split' must be a list of numbers, got {fmt(split)}")
        utility = _number_or_none(doc["utility"], "utility")
        jmi = _number_or_none(doc["joint_mutual_information"], "joint_mutual_information")
        loaded: dict[str, Mechanism] = {}
        for k in keys:
            name = files[k]
            if Path(name).name != name or name in (".", "..") or os.sep in name or "/" in name:
                raise PlanFileError(
                    f"'mechanism_files' entry {k!r} must be a file name in the plan's folder, "
                    f"got {name!r}")
            mech = Mechanism.load(folder / name, allow_uncertified=allow_uncertified)
            got = mech.to_dict()["sha256"]
            if got != digests[k]:
                raise PlanFileError(
                    f"mechanism file {name!r} is not the one the plan's joint guarantee was "
                    f"computed for (digest {got[:12]}... against {digests[k][:12]}...)")
            loaded[k] = mech
        try:
            g = JointGuarantee.from_dict(doc["joint_guarantee"])
        except ValidationError as exc:
            raise PlanFileError(f"'joint_guarantee' is invalid: {exc}") from exc
        release = None
        rel = doc["joint_release"]
        if mode == "joint alphabet":
            if not isinstance(rel, dict) or set(rel) != {"column_labels", "output_tuples"}:
                raise PlanFileError("'joint_release' must hold 'column_labels' and "
                                    "'output_tuples' in joint mode")
            for k in ("column_labels", "output_tuples"):
                if not isinstance(rel[k], list) or not all(isinstance(x, list) for x in rel[k]):
                    raise PlanFileError(f"'joint_release.{k}' must be a list of lists")
            try:
                release = JointRelease(tuple(cols), tuple(tuple(x) for x in rel["column_labels"]),
                                       loaded["joint"],
                                       tuple(tuple(t) for t in rel["output_tuples"]))
            except ValidationError as exc:
                raise PlanFileError(f"'joint_release' is invalid: {exc}") from exc
            if release.column_labels != g.column_labels:
                raise PlanFileError("'joint_release.column_labels' differ from the joint "
                                    "guarantee's")
            loaded = {}
        elif rel is not None:
            raise PlanFileError("'joint_release' must be null in per-column mode")
        try:
            plan = cls(tuple(cols), mode, g, loaded, release, tuple(split), utility, jmi,
                       {k: str(folder / files[k]) for k in keys})
        except ValidationError as exc:
            raise PlanFileError(str(exc)) from exc
        plan.verify()
        return plan

    def __str__(self) -> str:
        return f"release plan ({self.mode}) of columns {', '.join(self.columns)}\n" + \
            str(self.guarantee)


def _refuse_constant(name: str) -> Any:
    raise PlanFileError(f"a release plan must hold JSON numbers only, got {name}")

