"""The in-memory entry points :func:`privatize` and :func:`privatize_with_report`: they
resolve the mechanism and the randomness, dispatch to the local engine
(:mod:`pmlkit.privatization._core`) or, for Dask collections, to
:mod:`pmlkit.privatization._dask`, and build the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DataError, ValidationError
from ..mechanism import Mechanism
from ..rng import RandomSource, resolve_rng
from ._core import CHUNK_ROWS, PrivatizationReport, as_mechanism_object, mech_digest, run_local
from ._reuse import warn_if_reused
from .numeric_release import grid_of, run_numeric

__all__ = ["CHUNK_ROWS", "privatize", "privatize_with_report"]


def _is_dask(values: Any) -> bool:
    return type(values).__module__.startswith("dask")


def run(mech: Mechanism, values: Any, source: RandomSource, *, columns: Any,
        into: Any, counts: bool = True
        ) -> tuple[Any, tuple[str, ...], int | None, np.ndarray | None]:
    """Privatise ``values`` with the engine its type needs; returns (result, columns, rows,
    output index counts); rows and counts are ``None`` for a lazy Dask result."""
    import sys

    grid = grid_of(mech)
    if grid is not None:  # a numeric column: released as numbers (numeric_release)
        return run_numeric(mech, grid, values, source, columns=columns, into=into,
                           counts=counts)
    if "dask" in sys.modules and _is_dask(values):
        from ._dask import privatize_dask

        result, cols = privatize_dask(mech, values, source, columns=columns, into=into)
        return result, cols, None, None
    return run_local(mech, values, source, columns=columns, into=into, counts=counts)


def privatize_with_report(mechanism: Any, values: Any, *, rng: Any = None,
                          columns: str | Sequence[str] | None = None,
                          into: str | Sequence[str] | None = None
                          ) -> tuple[Any, PrivatizationReport]:
    """Like :func:`privatize`, also returning a :class:`PrivatizationReport`.

    The report records whether the run was seeded (research only) or used the secure
    default, the rng description, the mechanism's digest, the number of rows and the
    output counts.

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> swap = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("no", "yes"),
    ...                         ("no", "yes"))
    >>> out, report = pmlkit.privatize_with_report(swap, ["yes", "no", "no"], rng=1)
    >>> out, report.rows, report.output_counts, report.seeded
    (['no', 'yes', 'yes'], 3, {'no': 1, 'yes': 2}, True)
    """
    mech = as_mechanism_object(mechanism)
    warn_if_reused(mech, values, columns)  # PMLWarning: the values look like the reference
    source = resolve_rng(rng)
    result, cols, rows, counts = run(mech, values, source, columns=columns, into=into)
    report = PrivatizationReport(
        rows=rows, seeded=source.seeded, rng=source.description,
        mechanism_sha256=mech_digest(mech), columns=cols,
        output_counts=None if counts is None else
        {lab: int(c) for lab, c in zip(mech.output_labels, counts, strict=True)})
    _attach_attrs(result, report)
    return result, report


def _attach_attrs(result: Any, report: PrivatizationReport) -> None:
    attrs = getattr(result, "attrs", None)
    if isinstance(attrs, dict):
        attrs["pmlkit_privatization"] = report.to_dict()


def privatize(mechanism: Any, values: Any, *, rng: Any = None,
              columns: str | Sequence[str] | None = None,
              into: str | Sequence[str] | None = None, missing: str = "error",
              unknown_as: Any = None) -> Any:
    """Privatise records: replace each input label by an output label drawn from its row.

    For a record with label ``x_i`` the output is ``y_j`` with probability
    ``W[i, j] = P(Y = y_j | X = x_i)`` (the mechanism's row ``i``), independently across
    records. Sampling uses alias tables and one random 64-bit word per record (see
    :class:`pmlkit.sampler.AliasSampler`), in chunks of :data:`CHUNK_ROWS` rows.

    Parameters
    ----------
    mechanism
        A :class:`pmlkit.Mechanism` (labels from it) or a row-stochastic 2-D array
        (labels ``0..N-1`` in, ``0..M-1`` out).
    values
        The labels: numpy array, list/tuple, pandas Series / Categorical / DataFrame (with
        ``columns=``), polars Series / DataFrame / LazyFrame (with ``columns=``), pyarrow
        Array / ChunkedArray / Table / RecordBatch (with ``columns=``), or a dask Series /
        DataFrame (lazy result; each partition gets its own independent stream spawned
        from one root). A polars LazyFrame stays lazy: the columns are privatised batch by
        batch when it is collected. Secure default: every batch gets a fresh child stream
        spawned from this call's source, so each collect draws afresh: release the output
        of one collect only (collect once, or ``cache()``), since two independent releases
        of the same records leak more than one. Seeded (research): each column gets one
        child stream and the batch starting at row ``r`` draws from it ``r`` words in, so
        every collect, chunk layout and thread schedule gives the same release.
    rng
        ``None`` (default): cryptographically secure randomness (:mod:`pmlkit.rng`). An
        int seed or a numpy Generator: reproducible research runs only. Which one was used
        is recorded: pandas results carry ``result.attrs["pmlkit_privatization"]`` (a
        :meth:`PrivatizationReport.to_dict`); :func:`privatize_with_report` returns the
        report for any container; files get a manifest (see :func:`privatize_file`).
    columns, into
        Tables only (pandas/polars DataFrame, polars LazyFrame, Arrow Table/RecordBatch):
        the column(s) to privatise, and optionally new column names to
        write the outputs into (default: replace the values in place). Every other column
        and the index are kept.
    missing, unknown_as
        The policies of :func:`privatize_file`, same words: a missing value (None, NaN,
        NA) is refused (``"error"``, default), released as the label ``(missing)``
        (``"category"``: the mechanism must have it; where the output ``(missing)`` is
        drawn the result holds a missing value, as the files do) or left missing (``"keep"``:
        whether a value is missing is then released unprotected); a value that is not an
        input label is refused unless ``unknown_as`` names the input label to release it
        as. With a policy other than the default, ``values`` must be a 1-D numpy array, a
        list, a pandas Series or DataFrame, a pyarrow array or a polars Series
        (:mod:`pmlkit.privatization._policies`). A numeric mechanism (one with a grid)
        clamps and rounds every value onto its grid and takes neither ``unknown_as`` nor
        ``"category"``; in memory it refuses a missing value (``"keep"`` applies to
        files, :func:`privatize_file`).

    Returns
    -------
    The same kind of container, same length and order (and pandas index), holding output
    labels of the mechanism's label type: numpy array, list, pandas Series (same index and
    name; categorical in, categorical out: the output labels are its categories, in the
    mechanism's order, unless it is ordered and holds them all, when its declared categories
    and order are kept), pandas Categorical, polars Series / DataFrame /
    LazyFrame (same name and dtype when the output labels fit it), pyarrow
    Array/ChunkedArray/Table/RecordBatch (same chunking and field metadata; dictionary
    input gives plain output), pandas/dask DataFrame. Under one seed every container gives
    the values of the numpy path (a LazyFrame: from a child stream of its own per column,
    positioned by row).

    Raises
    ------
    DataError
        A value that is not an input label, or a null: the message names the value and
        the number of rows holding it. Nothing is privatised in that case.
    ValidationError
        Bad mechanism, rng, columns or container.

    Examples
    --------
    A deterministic mechanism (a permutation) shows the mapping; the container type is kept:

    >>> import numpy as np
    >>> import pmlkit
    >>> swap = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("no", "yes"),
    ...                         ("no", "yes"))
    >>> pmlkit.privatize(swap, ["yes", "no", "no"])
    ['no', 'yes', 'yes']

    Randomized response keeps a label with probability 3/4: over 100,000 records about
    75% are kept (a seed makes a research run reproducible; omit ``rng`` to protect people):

    >>> rr = pmlkit.Mechanism(np.array([[0.75, 0.25], [0.25, 0.75]]))
    >>> y = pmlkit.privatize(rr, np.zeros(100_000, dtype=np.int64), rng=0)
    >>> round(float(np.mean(y == 0)), 2)
    0.75
    """
    if missing != "error" or unknown_as is not None:  # the policies of privatize_file
        import sys

        from ._policies import checked_policies, privatize_with_policies

        mech = as_mechanism_object(mechanism)
        grid = grid_of(mech)
        if grid is not None:
            # the label policies would match the raw numbers against the grid points as
            # labels: the clamp/round policy skipped, an off-grid value "unknown" (and
            # released as unknown_as). The file path refuses these words for a numeric
            # column; in memory, a missing value is refused by the numeric release
            from ._policies import check_missing_policy
            from .numeric_release import NumericPolicy

            # refuses unknown_as and missing='category', as for a file
            NumericPolicy(mech, grid, None, check_missing_policy(missing), unknown_as)
            raise ValidationError(
                "missing='keep' applies to files for a numeric mechanism "
                "(pmlkit.privatize_file keeps them missing); in memory, drop the missing "
                "values first and privatise the rest (missing='error')")
        warn_if_reused(mech, values, columns)
        if "dask" in sys.modules and _is_dask(values):  # lazily, partition by partition
            from ._dask import privatize_dask

            missing, unknown = checked_policies(mech, missing, unknown_as)
            return privatize_dask(mech, values, resolve_rng(rng), columns=columns,
                                  into=into, missing=missing, unknown_as=unknown)[0]
        return privatize_with_policies(mech, values, resolve_rng(rng), columns=columns,
                                       into=into, missing=missing, unknown_as=unknown_as)
    try:
        if type(values).__module__.split(".")[0] in ("pandas", "dask"):
            # the result carries the report in its attrs
            return privatize_with_report(mechanism, values, rng=rng, columns=columns,
                                         into=into)[0]
        # no report to attach: neither the output counts nor the mechanism's digest (whose
        # canonical JSON costs more than privatising 10^7 records for a 1000 x 1000 matrix)
        mech = as_mechanism_object(mechanism)
        warn_if_reused(mech, values, columns)
        return run(mech, values, resolve_rng(rng), columns=columns, into=into,
                   counts=False)[0]
    except DataError as exc:  # name the options that release such rows
        from ._policies import with_policy_hint

        raise with_policy_hint(exc) from exc
