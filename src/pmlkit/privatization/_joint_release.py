"""A tuple of file columns released through one joint mechanism (a plan designed in joint
mode, :func:`pmlkit.joint.design_joint`), for :func:`pmlkit.privatization.privatize_file`.

A joint release of ``K >= 2`` columns ``c_1, ..., c_K`` (``columns``) is one mechanism
``W`` whose rows are the tuples of ``itertools.product(*column_labels)`` in row-major
order and whose output ``j`` is written as the tuple ``output_tuples[j]`` (its ``k``-th
label one of ``column_labels[k]``, so every released value stays in its column's
domain). A record with labels ``(x_1, ..., x_K)`` is encoded column by column (the same
label matching, missing-value and unknown-label policies as a column privatised alone:
each column is read through a *view*, the identity mechanism on its own alphabet), its
codes are combined row-major (:func:`numpy.ravel_multi_index`), one output index is drawn
with the one-word alias draw of :class:`~pmlkit.sampler.AliasSampler` (one random word per
record, in row order), and each column's output label code is read from a lookup table
of the output tuples (vectorised; no loop over records).

What a release is not allowed to be is refused before anything is read: fewer than two
columns, a column named twice (or both alone and in a tuple), a mapping key that is not
the release's own columns, alphabets that do not multiply to the mechanism's inputs,
output tuples of the wrong number or length, or holding a label outside their column's
alphabet.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from .._validation import to_jsonable
from ..errors import ValidationError
from ..mechanism import Mechanism
from ..sampler import AliasSampler
from ._core import as_mechanism_object, mech_digest

__all__ = ["JointDraw", "JointReleaseLike", "joint_views", "mapping_error", "split_mechanisms"]


@runtime_checkable
class JointReleaseLike(Protocol):
    """What :func:`pmlkit.privatization.privatize_file` reads of a joint release
    (``pmlkit.joint.JointRelease`` has these attributes).

    Attributes
    ----------
    columns
        The released columns, ``K >= 2`` names.
    column_labels
        Each column's input alphabet; the mechanism's rows are the tuples of
        ``itertools.product(*column_labels)`` in that (row-major) order.
    mechanism
        The :class:`~pmlkit.Mechanism` on the joint alphabet.
    output_tuples
        ``mechanism.n_outputs`` tuples of ``K`` labels: output ``j`` is written as
        ``output_tuples[j]``, its ``k``-th label one of ``column_labels[k]``.
    """

    @property
    def columns(self) -> tuple[str, ...]: ...

    @property
    def column_labels(self) -> tuple[tuple[Any, ...], ...]: ...

    @property
    def mechanism(self) -> Any: ...

    @property
    def output_tuples(self) -> tuple[tuple[Any, ...], ...]: ...

    def to_dict(self) -> dict[str, Any]: ...


def _key(label: Any) -> tuple[str, Any]:
    """A label's identity: its type and value (``True``, ``1`` and ``1.0`` are three
    labels, as for :class:`~pmlkit.Mechanism`)."""
    if isinstance(label, np.generic):
        label = label.item()
    return type(label).__name__, label


class JointDraw:
    """One joint release checked and ready to draw: the views of its columns (the identity
    mechanism on each column's alphabet: their input labels are matched, their output
    labels written), the alias sampler of its mechanism and, per column, the table output
    index -> that column's label code.

    Parameters
    ----------
    release
        A :class:`JointReleaseLike`.
    key
        The mapping key it was given under (must be its columns), for the messages.

    Examples
    --------
    >>> import numpy as np
    >>> from dataclasses import dataclass
    >>> import pmlkit
    >>> @dataclass(frozen=True)
    ... class Release:
    ...     columns: tuple
    ...     column_labels: tuple
    ...     mechanism: pmlkit.Mechanism
    ...     output_tuples: tuple
    ...     def to_dict(self):
    ...         return {"columns": list(self.columns)}
    >>> swap = pmlkit.Mechanism(np.eye(4)[[3, 2, 1, 0]])  # (a, u) -> (b, v), ...
    >>> tuples = (("a", "u"), ("a", "v"), ("b", "u"), ("b", "v"))
    >>> jd = JointDraw(Release(("x", "y"), (("a", "b"), ("u", "v")), swap, tuples))
    >>> outs = jd.draw([np.array([0, 1]), np.array([0, 0])], np.random.default_rng(0))
    >>> [o.tolist() for o in outs]  # (a, u) -> (b, v) and (b, u) -> (a, v)
    [[1, 0], [1, 1]]
    """

    def __init__(self, release: Any, key: Any = None) -> None:
        if not isinstance(release, JointReleaseLike):
            raise ValidationError(
                f"mechanism: a tuple of columns {key!r} must map to a joint release (with "
                f"columns, column_labels, mechanism, output_tuples and to_dict()), got "
                f"{type(release).__name__}")
        cols = release.columns
        if isinstance(cols, str) or not isinstance(cols, Sequence) \
                or not all(isinstance(c, str) for c in cols):
            raise ValidationError(f"joint release: columns must be a tuple of column names, "
                                  f"got {cols!r}")
        cols = tuple(cols)
        if len(cols) < 2 or len(set(cols)) != len(cols):
            raise ValidationError(f"joint release: columns must name at least 2 distinct "
                                  f"columns, got {cols!r}")
        if key is not None and tuple(key) != cols:
            raise ValidationError(
                f"mechanism: the key {tuple(key)!r} must be the joint release's own columns "
                f"{cols!r}, in that order (its rows are their tuples in row-major order)")
        labels = release.column_labels
        if not isinstance(labels, Sequence) or len(labels) != len(cols):
            raise ValidationError(f"joint release: column_labels must give one alphabet per "
                                  f"column ({len(cols)}), got {labels!r}")
        mech = as_mechanism_object(release.mechanism)
        # each column is read and written through its view: the identity on its alphabet
        # (its labels are checked there: unique, JSON-able)
        views = []
        for c, labs in zip(cols, labels, strict=True):
            if isinstance(labs, str) or not isinstance(labs, Sequence) or len(labs) < 1:
                raise ValidationError(f"joint release: the alphabet of column {c!r} must be a "
                                      f"non-empty tuple of labels, got {labs!r}")
            try:
                views.append(Mechanism(np.eye(len(labs)), tuple(labs), tuple(labs)))
            except ValidationError as exc:
                raise ValidationError(f"joint release: column {c!r}: {exc}") from None
        sizes = tuple(len(v.input_labels) for v in views)
        if math.prod(sizes) != mech.n_inputs:
            raise ValidationError(
                f"joint release: the alphabets of columns {cols!r} have sizes {sizes}, whose "
                f"product {math.prod(sizes)} must be the mechanism's {mech.n_inputs} inputs")
        tuples = release.output_tuples
        if not isinstance(tuples, Sequence) or len(tuples) != mech.n_outputs:
            n = len(tuples) if isinstance(tuples, Sequence) else tuples
            raise ValidationError(f"joint release: output_tuples must give one tuple per "
                                  f"output of the mechanism ({mech.n_outputs}), got {n!r}")
        luts = []
        for k, (c, view) in enumerate(zip(cols, views, strict=True)):
            index = {_key(lab): i for i, lab in enumerate(view.input_labels)}
            lut = np.empty(len(tuples), dtype=np.intp)
            for j, tup in enumerate(tuples):
                if isinstance(tup, str) or not isinstance(tup, Sequence) \
                        or len(tup) != len(cols):
                    raise ValidationError(f"joint release: output tuple {j} must hold "
                                          f"{len(cols)} labels, got {tup!r}")
                try:
                    lut[j] = index[_key(tup[k])]
                except (KeyError, TypeError):
                    raise ValidationError(
                        f"joint release: output tuple {j} {tuple(tup)!r} writes {tup[k]!r} "
                        f"into column {c!r}, which is not a label of its alphabet "
                        f"({', '.join(map(repr, view.input_labels[:20]))})") from None
            lut.setflags(write=False)
            luts.append(lut)
        doc = release.to_dict()
        if not isinstance(doc, Mapping):
            raise ValidationError(f"joint release: to_dict() must return a mapping, got "
                                  f"{type(doc).__name__}")
        self.release = release
        self.columns: tuple[str, ...] = cols
        self.views: dict[str, Mechanism] = dict(zip(cols, views, strict=True))
        self.sizes = sizes
        self.mechanism = mech
        self.sampler = AliasSampler(mech.matrix)
        self.luts: tuple[NDArray[np.intp], ...] = tuple(luts)
        self.digest = mech_digest(mech)
        self.record: dict[str, Any] = to_jsonable(dict(doc))
        try:
            json.dumps(self.record, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValidationError(f"joint release: to_dict() must be a JSON document for the "
                                  f"manifest: {exc}") from None

    def draw(self, codes: Sequence[NDArray[Any]], generator: np.random.Generator
             ) -> list[NDArray[np.intp]]:
        """Each column's released label codes (into its alphabet) for the records whose
        column ``k`` has label code ``codes[k]``: one draw per record, in record order,
        from the row ``ravel_multi_index(codes)`` of the joint mechanism."""
        flat = np.ravel_multi_index(tuple(np.asarray(c, dtype=np.intp) for c in codes),
                                    self.sizes)
        idx = self.sampler.draw(np.asarray(flat, dtype=np.intp), generator)
        return [lut.take(idx) for lut in self.luts]

    def manifest_entry(self, targets: Sequence[str]) -> dict[str, Any]:
        """The ``"joint_release"`` entry of each of its columns in a privatisation record:
        the source columns, the columns their outputs went to, the joint mechanism's
        digest and the release's own record (``to_dict()``)."""
        return {"columns": list(self.columns), "into": list(targets),
                "mechanism_sha256": self.digest, "release": self.record}


def split_mechanisms(mechanism: Any, cols: Sequence[str]
                     ) -> tuple[dict[str, Any], list[JointDraw]]:
    """``(plain, joints)``: the mechanism argument of ``privatize_file`` split into a
    mapping (or single mechanism) for the columns released alone and the joint releases
    (a mapping key that is a tuple of columns, or a joint release given alone). Every
    column of ``cols`` is covered exactly once."""
    if isinstance(mechanism, JointReleaseLike):
        mechanism = {tuple(mechanism.columns): mechanism}
    if not isinstance(mechanism, Mapping) \
            or not any(isinstance(k, tuple) for k in mechanism):
        return mechanism, []
    plain: dict[str, Any] = {}
    joints: list[JointDraw] = []
    seen: dict[str, str] = {}
    for key, value in mechanism.items():
        if isinstance(key, tuple):
            jd = JointDraw(value, key)
            names = list(jd.columns)
        else:
            names = [str(key)]
        for c in names:
            if c in seen:
                raise ValidationError(f"mechanism: column {c!r} is released twice (by "
                                      f"{seen[c]} and by {key!r}); release each column once")
            seen[c] = repr(key)
        if isinstance(key, tuple):
            joints.append(jd)
        else:
            plain[str(key)] = value
    if set(seen) != set(cols):
        raise mapping_error(list(seen), cols)
    return plain, joints


def mapping_error(names: Sequence[str], cols: Sequence[str]) -> ValidationError:
    """The error for a mapping of mechanisms whose column ``names`` are not the privatised
    columns ``cols``: the first name not among them, else the first column it lacks, else
    the first column it names twice (keys such as ``1`` and ``"1"``)."""
    extra = [c for c in names if c not in cols]
    lacking = [c for c in cols if c not in names]
    twice = [c for c in names if list(names).count(c) > 1]
    what = (f"names {extra[0]!r}, which is not among columns {list(cols)!r}" if extra
            else f"has no mechanism for column {lacking[0]!r}" if lacking
            else f"names column {twice[0]!r} more than once (keys that read the same as "
                 "text, such as 1 and '1')")
    return ValidationError(f"mechanism must map every privatised column to its "
                           f"mechanism; the mapping {what}")


def joint_views(joints: Sequence[JointDraw]) -> Iterator[tuple[str, Mechanism, JointDraw]]:
    """``(column, view, joint)`` for every column of the joint releases."""
    for jd in joints:
        for c in jd.columns:
            yield c, jd.views[c], jd
