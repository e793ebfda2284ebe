"""What a table release produced: each released column (:class:`ColumnRelease`) and the
whole release under its one joint guarantee (:class:`TableRelease`), as returned by
:func:`pmlkit.release.release_table` and rendered by :mod:`pmlkit.release.report`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..joint.guarantee import JointGuarantee
from ..mechanism import Mechanism
from .design import ColumnsDesign
from .spec import ColumnSpec, ReleaseSpec

__all__ = ["NOT_FOR_PUBLICATION", "ColumnRelease", "TableRelease"]

#: What the operator is told of the raw input's statistics a release returns.
NOT_FOR_PUBLICATION = ("statistics of the raw input, outside any PML guarantee: for the "
                       "operator only, not in the report or the manifest; do not publish "
                       "them")


@dataclass(frozen=True)
class ColumnRelease:
    """One released column of a :class:`TableRelease`.

    Attributes
    ----------
    spec
        The column's :class:`~pmlkit.release.spec.ColumnSpec`.
    mechanism
        The certified mechanism (a numeric column: over its grid points).
    eps
        The eps the column was designed for (its share of the budget; not a guarantee
        about the record).
    reference
        The reference distribution over :attr:`labels` (read-only).
    reference_rows
        Reference records used (after the missing policy).
    estimate
        The estimate from the released data (:class:`pmlkit.inference.DistributionEstimate`
        or :class:`pmlkit.numeric.estimate.NumericEstimate`).
    utility
        ``{name: value}``: ``mutual_information`` (nats, at the reference) and, numeric,
        ``expected_abs_error`` (the column's units).
    encoding
        Numeric: the reference's clamp/round counts; categorical: ``{"unknown_mapped":
        rows}``, the reference's rows mapped by ``unknown_as`` (the public reference's
        counts, shown in the report; the raw input's are in
        :attr:`TableRelease.input_counts`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np, pandas as pd
    >>> from pmlkit.release import ReleaseSpec, release_table
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> sex = np.random.default_rng(2).choice(["F", "M"], 2000)
    >>> pd.DataFrame({"sex": sex[:1000]}).to_csv(folder / "ref.csv", index=False)
    >>> pd.DataFrame({"sex": sex[1000:]}).to_csv(folder / "in.csv", index=False)
    >>> spec = ReleaseSpec.from_dict({
    ...     "reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 1.0,
    ...     "delta": 1e-6, "columns": {"sex": {"type": "categorical"}}}, base=folder)
    >>> rel = release_table(spec)
    >>> col = rel.columns[0]
    >>> col.name, col.labels, col.reference_rows
    ('sex', ('F', 'M'), 1000)
    >>> bool(abs(float(col.reference.sum()) - 1.0) < 1e-12)
    True
    """

    spec: ColumnSpec
    mechanism: Mechanism
    eps: float
    reference: np.ndarray = field(repr=False)
    reference_rows: int
    estimate: Any = field(repr=False)
    utility: Mapping[str, float]
    encoding: Mapping[str, int]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def labels(self) -> tuple[Any, ...]:
        return tuple(self.mechanism.input_labels)


@dataclass(frozen=True)
class TableRelease:
    """What :func:`release_table` released, under which guarantee.

    Attributes
    ----------
    spec
        The spec.
    columns
        One :class:`ColumnRelease` per privatised column.
    guarantee
        The one joint guarantee of the whole record (verified before the release).
    design
        The joint design (split, weights, every scale tried).
    rows
        Records released.
    output, manifest, report
        The written files (``manifest``: ``<output>.pmlkit.json``; when several input
        files were released into the folder ``output``, that folder, each file's
        manifest beside it).
    seeded
        Whether the randomness was seeded (research only; the seed is not recorded).
    warnings
        The warnings the release raised from the spec and the public reference (also in
        the report), e.g. bounds that clamp most of the reference's values.
    input_warnings
        For the operator, not for publication: the warnings computed from the raw input
        (e.g. that an input's label counts look like the reference sample's, a test of
        those counts). Never in the report.
    input_counts
        For the operator, not for publication: per released column, statistics of the
        raw input (:attr:`pmlkit.privatization.files.FileReport.input_counts`: rows mapped
        by ``unknown_as``; numeric values clamped, rounded and missing), outside any PML
        guarantee. Never in the report, the manifest or the released data.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np, pandas as pd
    >>> from pmlkit.release import ReleaseSpec, release_table
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> sex = np.random.default_rng(2).choice(["F", "M"], 2000)
    >>> pd.DataFrame({"sex": sex[:1000]}).to_csv(folder / "ref.csv", index=False)
    >>> pd.DataFrame({"sex": sex[1000:]}).to_csv(folder / "in.csv", index=False)
    >>> spec = ReleaseSpec.from_dict({
    ...     "reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 1.0,
    ...     "delta": 1e-6, "columns": {"sex": {"type": "categorical"}}}, base=folder)
    >>> rel = release_table(spec)
    >>> rel.rows, rel.output.name, rel.report.name
    (1000, 'out.csv', 'out.csv.report.html')
    >>> rel.guarantee.certified_eps <= 1.0, sorted(rel.to_dict()["columns"])
    (True, ['sex'])
    """

    spec: ReleaseSpec
    columns: tuple[ColumnRelease, ...]
    guarantee: JointGuarantee
    design: ColumnsDesign = field(repr=False)
    rows: int
    output: Path
    manifest: Path
    report: Path
    seeded: bool
    warnings: tuple[str, ...] = ()
    input_warnings: tuple[str, ...] = ()
    input_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``pmlkit release --json``, the operator's terminal); the
        raw input's statistics are under ``"not_for_publication"``."""
        return {
            "output": str(self.output), "manifest": str(self.manifest),
            "report": str(self.report), "rows": self.rows, "seeded": self.seeded,
            "warnings": list(self.warnings), "epsilon": self.spec.epsilon, "delta": self.spec.delta,
            "guarantee": self.guarantee.to_dict(), "strategy": self.design.strategy,
            "columns": {c.name: {"type": c.spec.type, "eps_designed": c.eps,
                                 "certified_eps_alone": c.mechanism.certified_eps,
                                 "outputs": c.mechanism.n_outputs,
                                 "utility": dict(c.utility)} for c in self.columns},
            "not_for_publication": {
                "note": NOT_FOR_PUBLICATION,
                "input_warnings": list(self.input_warnings),
                "input_counts": {t: dict(v) for t, v in self.input_counts.items()}},
        }
