"""``release_table``: a whole table released in one pass under one joint guarantee.

1. Read the spec (:func:`pmlkit.release.spec.load_spec`) and the reference columns; encode
   them into each column's alphabet (categorical: declared or observed labels, the
   missing/unknown policy of ``pmlkit privatize``; numeric: the grid's clamp/round policy).
2. Design the columns together (:func:`pmlkit.release.design.design_columns`) so that the
   whole record meets (epsilon, delta); the joint guarantee is re-checked with
   :meth:`pmlkit.joint.JointGuarantee.verify` before anything is released.
3. Release every column in one pass of :func:`pmlkit.privatize_file` (columns not in the
   spec come out byte for byte; the manifest records each column's mechanism and the
   joint guarantee). A numeric column's mechanism records its grid: the raw numbers are
   clamped and rounded onto it and released as grid points in the column's type.
4. Estimate each column's distribution from the released file
   (:func:`pmlkit.estimate_distribution`; numeric: :func:`pmlkit.numeric.estimate.estimate_numeric`)
   and write the HTML report (:mod:`pmlkit.release.report`).

What is published (the data, its manifest, the report) holds nothing computed from the
raw input but the number of released rows: the report's numbers come from the public
reference, the mechanisms and the released values. What the release saw of the raw input
(rows mapped by ``unknown_as``, numeric values clamped, rounded or missing, and the
warning that an input looks like the reference sample, a test of its label counts) is
returned to the operator only (:attr:`TableRelease.input_counts`,
:attr:`TableRelease.input_warnings`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._encoding import MISSING_LABEL, label_texts, refuse_missing_label_text
from .._validation import fmt, readonly, up_text, user_path
from ..errors import DataError, PMLWarning
from ..mechanism import Mechanism
from .design import design_columns
from .result import ColumnRelease, TableRelease
from .spec import ColumnSpec, ReleaseSpec, load_spec

__all__ = ["MISSING_LABEL", "ColumnRelease", "TableRelease", "encode_reference",
           "release_table"]


def _sorted_labels(values: Sequence[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda v: (type(v).__name__, str(v)))


def _value_text(v: Any) -> str | None:
    """The text a file holds for the value ``v`` (:func:`pmlkit._encoding.label_texts`
    of it alone; a numpy scalar as its Python value), or None for a value of no such
    kind."""
    t = label_texts([v.item() if isinstance(v, np.generic) else v])
    return None if t is None else t[0]


def _match_by_text(arr: np.ndarray, labs: Sequence[Any], idx: np.ndarray,
                   bad: np.ndarray) -> None:
    """Set ``idx`` of the unmatched values (``bad``) whose CSV text is a declared label's
    text (:func:`pmlkit._encoding.label_texts`, the text a release matches a label by);
    each distinct value's text is made once."""
    import pandas as pd

    texts = label_texts(list(labs))
    if texts is None:
        return
    where = {t: i for i, t in enumerate(texts)}
    rows = np.flatnonzero(bad)
    vals = np.asarray(arr[rows], dtype=object)
    # distinct by value and type: 1, 1.0 and True are equal keys but written 1, 1.0, True
    vcodes = pd.factorize(pd.Series(vals, dtype=object))[0].astype(np.int64)
    tcodes = pd.factorize(pd.Series(np.frompyfunc(type, 1, 1)(vals), dtype=object))[0]
    _, first, inverse = np.unique(vcodes * (int(tcodes.max(initial=0)) + 1) + tcodes,
                                  return_index=True, return_inverse=True)
    found = np.full(len(first), -1, dtype=np.int64)
    for u, j in enumerate(first):  # once per distinct value
        t = _value_text(vals[j])
        found[u] = where.get(t, -1) if t is not None else -1
    idx[rows] = found[inverse.reshape(-1)]


def encode_reference(specs: Sequence[ColumnSpec], frame: Any
                     ) -> tuple[list[tuple[Any, ...]], list[np.ndarray], list[dict[str, int]]]:
    """Each column's alphabet, the reference as indices into it, and what the policies did.

    Missing values follow each column's ``missing``: ``"error"`` refuses them (naming the
    spec key that changes it), ``"category"`` makes them the label ``"(missing)"``,
    ``"keep"`` leaves the records with a missing value out of the reference (their
    missingness is released unprotected). A categorical value outside the declared
    ``categories`` is ``unknown_as`` or refused.

    Examples
    --------
    >>> import pandas as pd
    >>> from pmlkit.release.spec import ColumnSpec
    >>> df = pd.DataFrame({"s": ["F", None, "M"], "a": [17, 40, 95]})
    >>> labs, codes, enc = encode_reference(
    ...     [ColumnSpec("s", "categorical", missing="category"),
    ...      ColumnSpec("a", "numeric", lower=20, upper=90, step=10)], df)
    >>> labs[0], codes[0].tolist(), codes[1].tolist(), enc[1]["clamped_low"]
    (('(missing)', 'F', 'M'), [1, 0, 2], [0, 2, 7], 1)
    """
    import pandas as pd

    keep = np.ones(len(frame), dtype=bool)
    cols: list[Any] = []
    for s in specs:
        col = frame[s.name]
        nulls = np.asarray(pd.isna(col), dtype=bool)
        if nulls.any():
            if s.missing == "error":
                raise DataError(
                    f"reference column {s.name!r} has {int(nulls.sum())} missing value(s) "
                    f"(first at row {int(np.flatnonzero(nulls)[0])}); set missing = "
                    "'category' (categorical) or 'keep' in the spec's [columns."
                    f"{s.name}] or at the top")
            if s.missing == "keep":
                keep &= ~nulls
        cols.append((col, nulls))
    labels: list[tuple[Any, ...]] = []
    codes: list[np.ndarray] = []
    encs: list[dict[str, int]] = []
    for s, (col, nulls) in zip(specs, cols, strict=True):
        if s.type == "numeric":
            grid = s.grid
            vals = np.asarray(col.to_numpy()[keep])
            if vals.dtype.kind not in "iuf" or vals.dtype.kind == "b":
                try:
                    vals = vals.astype(np.float64)
                except (TypeError, ValueError):
                    raise DataError(
                        f"reference column {s.name!r} is declared numeric but holds values "
                        f"that are not numbers ({fmt(list(vals[:3]))}); declare it "
                        "categorical") from None
            enc = grid.encode(vals)
            labels.append(tuple(grid.labels))
            codes.append(np.asarray(enc.codes, dtype=np.int64))
            encs.append(enc.to_dict())
            continue
        arr = np.asarray(col.to_numpy(dtype=object), dtype=object)
        if s.missing == "category":
            refuse_missing_label_text(arr, f"reference column {s.name!r}")
            arr = arr.copy()
            arr[nulls] = MISSING_LABEL
        arr = arr[keep]
        if s.categories is not None:
            labs = list(s.categories)
        else:
            # numpy scalars become Python labels (a loop over the distinct values only)
            labs = _sorted_labels([v.item() if isinstance(v, np.generic) else v
                                   for v in pd.unique(arr)])
        if s.unknown_as is not None and s.unknown_as not in labs:
            texts = label_texts(labs) or tuple(str(v) for v in labs)
            own = (label_texts([s.unknown_as]) or (str(s.unknown_as),))[0]
            twin = [v for v, t in zip(labs, texts, strict=True) if t == own]
            if twin:  # 1 and '1' are one value in a CSV file: the release cannot tell them
                raise DataError(
                    f"columns.{s.name}.unknown_as = {s.unknown_as!r} is written as the "
                    f"reference's value {twin[0]!r} in a file but is another label; give "
                    f"unknown_as = {twin[0]!r}")
            labs.append(s.unknown_as)
        if s.missing == "category" and MISSING_LABEL not in labs:
            labs.insert(0, MISSING_LABEL)
        idx = np.asarray(pd.Index(labs, dtype=object).get_indexer(arr), dtype=np.int64)
        bad = idx < 0
        if bad.any() and s.categories is not None:
            # the release matches a value to a declared label by its text (a CSV cell '2'
            # is the label '2' or 2): the reference is matched alike, else its values
            # would be certified as unknown_as while the release draws them as themselves
            _match_by_text(arr, labs, idx, bad)
            bad = idx < 0
        mapped = 0
        if bad.any():
            if s.unknown_as is None:
                raise DataError(
                    f"reference column {s.name!r} has value {arr[int(np.flatnonzero(bad)[0])]!r} "
                    f"({int(bad.sum())} row(s)) outside its declared categories; add it to "
                    f"columns.{s.name}.categories or set columns.{s.name}.unknown_as")
            idx[bad] = labs.index(s.unknown_as)
            mapped = int(bad.sum())
        if len(labs) < 2:
            raise DataError(
                f"reference column {s.name!r} has only the value(s) {fmt(labs)}: a column "
                "needs at least 2 categories (declare them in categories)")
        labels.append(tuple(labs))
        codes.append(idx)
        encs.append({"unknown_mapped": mapped})
    if not keep.any():
        raise DataError("no reference record is left after the missing policy")
    return labels, codes, encs


#: Share of a numeric column's reference values outside [lower, upper] above which the
#: release warns: most values are then released as an end of the grid, which points to
#: bounds set for other data (top-coding a tail, the usual reason to clamp, stays quiet).
CLAMP_WARN_SHARE = 0.5


def _warn_clamped(specs: Sequence[ColumnSpec], encs: Sequence[dict[str, int]]) -> None:
    """A :class:`~pmlkit.errors.PMLWarning` (kept in the report) for every numeric column
    whose bounds clamp more than :data:`CLAMP_WARN_SHARE` of the reference's values: the
    released ends then mean "at most lower" / "at least upper" for many records, and the
    estimated distribution and mean describe the clamped values, not the column."""
    for s, enc in zip(specs, encs, strict=True):
        rows = enc.get("rows", 0)
        low, high = enc.get("clamped_low", 0), enc.get("clamped_high", 0)
        if s.type == "numeric" and rows and (low + high) > CLAMP_WARN_SHARE * rows:
            warnings.warn(
                f"column {s.name!r}: {low + high} of {rows} reference values "
                f"({(low + high) / rows:.0%}) lie outside [lower, upper] = [{s.lower}, "
                f"{s.upper}] ({low} below, {high} above) and are released as the nearest "
                f"end; widen columns.{s.name}.lower / upper if the ends should not stand "
                "for them", PMLWarning, stacklevel=3)


def _in_spec_words(exc: DataError) -> DataError:
    """A refusal of the release's pass with the fix named as a key of the spec (the
    message of :func:`pmlkit.privatize_file` names its own arguments and options)."""
    msg = str(exc)
    cut = msg.find("which cannot be privatised")
    if cut < 0:
        return exc
    return DataError(msg[:cut] + "which cannot be privatised; nothing was released: set "
                     "missing = 'keep' (at the top of the spec or in the column's table; "
                     "the rows stay missing: whether "
                     "a value is missing is then released unprotected) or missing = "
                     "'category' (categorical columns: a missing value is a category of "
                     "the design)")


def _check_targets(spec: ReleaseSpec, spec_file: Path | None = None) -> list[Path]:
    """The released files (one per input file). Refuses, before anything is designed or
    written, a release that would replace a file it reads (the input, the reference, the
    spec file ``spec_file`` itself) or
    write two of its own files to one path (the released data, its manifest, the report):
    ``overwrite`` replaces an earlier release's files, never the data a release reads or
    another file of the same release."""
    from ..io import expand_inputs
    from ..privatization.files import output_paths, same_file

    inputs = expand_inputs(str(spec.input))
    outputs = output_paths(inputs, spec.output)
    written = [(f"output {str(o)!r}", o) for o in outputs]
    written += [(f"manifest {str(m)!r}", m)
                for m in (o.with_name(o.name + ".pmlkit.json") for o in outputs)]
    read = [("reference", spec.reference)] + [("input file", p) for p in inputs]
    if spec_file is not None:
        read.append(("release spec", spec_file))
    for what, path in [*written, (f"report {str(spec.report)!r}", spec.report)]:
        for role, src in read:
            if same_file(src, path):
                raise DataError(f"the {what} is the {role} {str(src)!r}; pmlkit release never "
                                "overwrites a file it reads: choose another path in the spec")
    for what, path in written:
        if same_file(spec.report, path):
            raise DataError(f"the report {str(spec.report)!r} is the {what.split()[0]} of the "
                            "released data; give report a path of its own in the spec")
    # a report that cannot be written would fail after the data is published
    files = [("report", spec.report)]
    if outputs == [spec.output]:  # one output file (several go into a folder it creates)
        files.append(("output", spec.output))
    for what, p in files:
        if p.is_dir():
            raise DataError(f"the {what} {str(p)!r} is a folder; name a file in the spec")
        if not p.parent.is_dir():
            raise DataError(f"the {what}'s folder {str(p.parent)!r} does not exist; create "
                            "it first or choose another path in the spec")
    for what, p in (("output", spec.output), ("report", spec.report)):
        if p.exists() and not spec.overwrite:
            raise DataError(f"the {what} {str(p)!r} exists; set overwrite = true in the spec "
                            "to replace it")
    return outputs


def _read_frame(path: Path, names: Sequence[str]) -> Any:
    """The columns as labels, read as a release reads them, in one read of the file
    (:func:`pmlkit.io.read_label_table`: CSV text stays text unless every text is its
    number's own spelling)."""
    from ..io import read_label_table

    return read_label_table(path, names).to_pandas()


def _related_columns(spec: ReleaseSpec, frame: Any) -> list[str]:
    """Warnings for the columns the release copies unchanged that give away a privatised
    column on the reference (:mod:`pmlkit.release._related`): those of the reference's
    columns that an input file holds too (every file of a glob: each file's other columns
    are copied)."""
    from ..io import expand_inputs, list_columns
    from ._related import related_column_warnings

    names = set(spec.names)
    copied = list(dict.fromkeys(c for p in expand_inputs(str(spec.input))
                                for c in list_columns(p) if c not in names))
    in_reference = set(list_columns(spec.reference))
    others = [c for c in copied if c in in_reference]
    unchecked = [c for c in copied if c not in in_reference]
    out = []
    if unchecked:
        out.append(f"columns {', '.join(map(repr, unchecked))} are copied unchanged and the "
                   "reference does not hold them, so whether they give away a privatised "
                   "column could not be checked; the guarantee does not cover them")
    if not others:
        return out
    ref = _read_frame(spec.reference, others)
    for n in spec.names:
        ref[n] = frame[n].to_numpy()
    grids = {c.name: c.grid for c in spec.columns if c.type == "numeric"}
    return out + related_column_warnings(ref, list(spec.names), others, grids)


_NO_LABEL = object()


def _estimate(c: ColumnSpec, mech: Mechanism, released: Any) -> Any:
    import pandas as pd

    ser = pd.Series(released).dropna()
    if c.type == "numeric":
        from ..numeric.estimate import estimate_numeric

        return estimate_numeric(ser.to_numpy(dtype=np.float64), mech, grid=c.grid)
    from ..inference import estimate_distribution

    # a released value is its label's text in the file, whatever type the read-back gave
    # it (the label 1 among float labels reads back as 1.0, the label '1' as 1):
    # matched by the texts a release writes (label_texts), not by str()
    counts = ser.value_counts()
    label_text = label_texts(list(mech.output_labels)) or tuple(
        str(lab) for lab in mech.output_labels)
    by_text = dict(zip(label_text, mech.output_labels, strict=True))
    seen: dict[Any, int] = {}
    for v, n in counts.items():  # once per distinct released value
        t = _value_text(v)
        lab = by_text.get(t if t is not None else str(v), _NO_LABEL)
        if lab is _NO_LABEL:
            raise DataError(f"released column {c.name!r} holds {v!r}, which is not an "
                            "output of its mechanism")
        seen[lab] = seen.get(lab, 0) + int(n)
    return estimate_distribution(seen, mech)


def _utility(c: ColumnSpec, mech: Mechanism, p: np.ndarray) -> dict[str, float]:
    from ..utility import mutual_information

    out = {"mutual_information": float(mutual_information(mech.matrix, p))}
    if c.type == "numeric":
        from ..numeric.design import expected_loss

        out["expected_abs_error"] = expected_loss(mech.matrix, p, c.grid, "abs")
    return out


def _say(text: str) -> None:
    import sys

    print(f"pmlkit release: {text}", file=sys.stderr, flush=True)


def release_table(spec: ReleaseSpec | str | os.PathLike[str], *,
                  progress: bool = False) -> TableRelease:
    """Release the table a spec describes, with one joint guarantee for the whole record
    (module docstring for the steps).

    Parameters
    ----------
    spec
        A :class:`~pmlkit.release.spec.ReleaseSpec` or the path of its TOML file.
    progress
        Report each step on stderr (every budget scale tried with its certified eps) and
        show the release's progress bar (:func:`pmlkit.privatize_file`).

    Returns
    -------
    TableRelease
        The columns, their mechanisms and estimates, the joint guarantee and the files.

    Raises
    ------
    ValidationError
        A spec that does not validate.
    DataError
        Unreadable files, missing or unknown values the policies refuse, an existing
        output or report without ``overwrite``.
    CertificationError
        No split of epsilon is certified for the whole record.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np, pandas as pd
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> rng = np.random.default_rng(1)
    >>> df = pd.DataFrame({"id": np.arange(3000), "sex": rng.choice(["F", "M"], 3000),
    ...                    "age": rng.integers(18, 80, 3000)})
    >>> df[:1000].to_csv(folder / "reference.csv", index=False)  # disjoint from the input
    >>> df[1000:].to_csv(folder / "people.csv", index=False)
    >>> _ = (folder / "release.toml").write_text('''
    ... reference = "reference.csv"
    ... input = "people.csv"
    ... output = "released.csv"
    ... epsilon = 2.0
    ... delta = 1e-6
    ... [columns.sex]
    ... type = "categorical"
    ... [columns.age]
    ... type = "numeric"
    ... lower = 20
    ... upper = 80
    ... step = 10
    ... ''')
    >>> rel = release_table(folder / "release.toml")
    >>> rel.guarantee.eps <= 2.0, rel.rows, rel.report.name
    (True, 2000, 'released.csv.report.html')
    >>> pd.read_csv(folder / "released.csv")["age"].isin(range(20, 81, 10)).all()
    np.True_
    """
    from ..privatization.files import privatize_file
    from .report import render_report, write_report

    spec_file = None
    if not isinstance(spec, ReleaseSpec):
        spec_file = user_path(spec, "release spec")
        spec = load_spec(spec)
    outputs = _check_targets(spec, spec_file)
    names = spec.names
    frame = _read_frame(spec.reference, names)
    labels, codes, encs = encode_reference(spec.columns, frame)
    say = _say if progress else None
    if say:
        say(f"designing {len(names)} columns for the whole record at epsilon = "
            f"{spec.epsilon:g}, delta = {spec.delta:g} ({len(frame)} reference records)")
    design = design_columns(
        spec.columns, labels, codes, spec.epsilon, spec.delta, confidence=spec.confidence,
        steps=spec.search_steps,
        on_step=None if say is None else (lambda t: say(
            f"  {t['strategy']} split, budget scale {t['scale']:.4f}: certified eps "
            f"{up_text(t['certified_eps'])} "
            f"({t['kind']}), {'within' if t['feasible'] else 'above'} epsilon")))
    jg = design.guarantee
    # re-check the promise for exactly the mechanisms released, before any release
    jg.verify(list(design.mechanisms))
    mechs: dict[str, Mechanism] = {}
    unknown: dict[str, Any] = {}
    for c, m in zip(spec.columns, design.mechanisms, strict=True):
        # a numeric mechanism records its grid: privatize_file clamps and rounds the raw
        # numbers onto it and writes grid points in the column's own type
        mechs[c.name] = m
        if c.type != "numeric" and c.unknown_as is not None:
            unknown[c.name] = c.unknown_as
    missing = {c.name: c.missing for c in spec.columns}  # each column its own policy
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PMLWarning)
        _warn_clamped(spec.columns, encs)
        for text in _related_columns(spec, frame):
            warnings.warn(text, PMLWarning, stacklevel=2)
        # what the pass warns is computed from the raw input (its label counts): for the
        # operator, never in the report
        from_reference = len(caught)
        try:
            report = privatize_file(mechs, str(spec.input), spec.output, list(names),
                                    rng=spec.seed, overwrite=spec.overwrite,
                                    progress=progress, missing=missing,
                                    unknown_as=unknown or None, joint_guarantee=jg)
        except DataError as exc:
            raise _in_spec_words(exc) from exc
    notes = tuple(str(w.message) for w in caught[:from_reference]
                  if issubclass(w.category, PMLWarning))
    about_input = tuple(str(w.message) for w in caught[from_reference:]
                        if issubclass(w.category, PMLWarning))
    for w in caught:  # shown to the caller; only ``notes`` are written into the report
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if say:
        say("estimating each column's distribution from the released data")
    import pandas as pd

    # every released file (a glob of inputs is released into a folder, one file each)
    released = pd.concat([_read_frame(o, names) for o in outputs], ignore_index=True)
    cols = []
    for c, m, lab, code, enc, e in zip(spec.columns, design.mechanisms, labels, codes, encs,
                                       design.split, strict=True):
        p = np.bincount(code, minlength=len(lab)) / code.size
        cols.append(ColumnRelease(c, m, e, readonly(p), int(code.size),
                                  _estimate(c, m, released[c.name]), _utility(c, m, p), enc))
    manifest = (outputs[0].with_name(outputs[0].name + ".pmlkit.json")
                if len(outputs) == 1 and outputs[0] == spec.output else spec.output)
    result = TableRelease(spec, tuple(cols), jg, design, int(report.rows), spec.output,
                          manifest,
                          spec.report, bool(report.seeded), notes, about_input,
                          {t: dict(v) for t, v in report.input_counts.items()})
    write_report(render_report(result), spec.report, overwrite=spec.overwrite)
    return result
