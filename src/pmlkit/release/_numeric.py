"""The release of a numeric column through the categorical release path (the one module
to replace once :func:`pmlkit.privatize_file` releases numeric mechanisms as numbers, a
mechanism whose provenance records ``details["grid"]``: then
:func:`numeric_release_mechanism` returns the grid mechanism itself and
:func:`raw_values` is no longer needed).

A numeric mechanism acts on grid points; the input holds raw numbers that the grid's
policy clamps and rounds (:meth:`pmlkit.numeric.grid.NumericGrid.encode`). The release is
the composition ``raw value -> grid code -> W[code, .]``: a mechanism whose input labels are
the raw values found in the input (plus every grid point) and whose row for a raw value
``v`` is the grid mechanism's row of ``code(v)``; its outputs are the grid points, written
in the column's number type. Since every row is a row of ``W`` and every row of ``W``
appears, ``max_v P(y | v) = max_i W[i, y]`` and ``P(y)`` depends on the distribution of
the codes only: the PML of every output about the raw value equals its PML about the grid
code, so the grid mechanism's guarantee (and the joint one) is the guarantee of exactly
what is released.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..guarantee import Provenance
from ..mechanism import Mechanism
from ..numeric.grid import NumericGrid

__all__ = ["numeric_release_mechanism", "raw_values"]


def raw_values(inputs: Sequence[Any], column: str) -> np.ndarray:
    """The distinct non-null values of ``column`` over the input files (numbers)."""
    import pyarrow.compute as pc

    from ..errors import DataError
    from ..io import expand_inputs, read_column

    vals: set[Any] = set()
    for path in expand_inputs(inputs):
        col = read_column(path, column)
        uniq = pc.unique(col).drop_null().to_numpy(zero_copy_only=False)
        if uniq.dtype.kind not in "iuf" or uniq.dtype.kind == "b":
            raise DataError(
                f"numeric column {column!r} of {str(path)!r} holds values that are not "
                f"numbers (type {col.type}); declare it categorical in the spec")
        vals.update(uniq.tolist())
    return np.array(sorted(vals))


def numeric_release_mechanism(grid: NumericGrid, mechanism: Mechanism,
                              values: np.ndarray) -> Mechanism:
    """The grid mechanism composed with the grid's clamp/round policy on ``values``
    (module docstring). The result carries no guarantee of its own: it is certified as
    ``mechanism`` (same PML for every output).

    Examples
    --------
    >>> from pmlkit.numeric.design import laplace_mechanism
    >>> g = NumericGrid(0, 10, 5)
    >>> m = laplace_mechanism(g, [0.3, 0.4, 0.3], 1.0)
    >>> r = numeric_release_mechanism(g, m, np.array([1, 7, 12]))
    >>> r.input_labels, r.output_labels
    ((0, 1, 5, 7, 10, 12), (0, 5, 10))
    >>> bool((r.matrix[1] == m.matrix[0]).all() and (r.matrix[5] == m.matrix[2]).all())
    True
    """
    pts = np.asarray(grid.values)
    allv = np.unique(np.concatenate([pts.astype(values.dtype if values.size else pts.dtype),
                                     values]))
    if grid.is_integer and allv.dtype.kind == "f" and np.all(allv == np.round(allv)):
        allv = allv.astype(np.int64)
    codes = np.asarray(grid.encode(allv).codes)
    w = np.asarray(mechanism.matrix)[codes]
    labels = tuple(v.item() for v in allv)
    return Mechanism(w, labels, tuple(mechanism.output_labels), guarantee=None,
                     provenance=Provenance(
                         designer="pmlkit release",
                         method="the grid's clamp/round policy, then the certified numeric "
                                "mechanism recorded under details.grid_mechanism",
                         # not under "grid": that key marks a mechanism on the grid
                         # itself, which this composition (raw values in) is not
                         details={"grid_policy": grid.to_dict(),
                                  "grid_mechanism": mechanism.to_dict()}))
