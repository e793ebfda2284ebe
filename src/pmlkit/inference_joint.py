"""The joint distribution of several released columns: the analyst's side of a release of
a tuple of columns (:func:`estimate_joint_distribution`).

Two ways a tuple of columns ``(X_1, ..., X_k)`` is released, and the channel from the true
tuple to the released tuple in each:

- **each column through its own mechanism** ``W_1, ..., W_k`` (independent draws per
  column): the tuple goes through the *product mechanism* ``W = W_1 (x) ... (x) W_k``
  (Kronecker product; rows are the input tuples in row-major order, columns the output
  tuples), ``W[(x_1..x_k), (y_1..y_k)] = prod_i W_i[x_i, y_i]``;
- **through one mechanism on the joint alphabet** (:class:`pmlkit.joint.JointRelease`):
  the channel is that mechanism, whose output ``j`` is written as the tuple
  ``output_tuples[j]``.

The released tuples are counted as outputs of that channel and the estimate is the one of
:func:`pmlkit.estimate_distribution` on the joint alphabet (maximum likelihood, intervals
per tuple), its categories being the tuples. The joint distribution is identified when the
channel has rank ``prod_i N_i`` (for the product: when every ``W_i`` has full row rank).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ._validation import fmt
from .errors import DataError, TooLargeError, ValidationError
from .inference import (
    DistributionEstimate,
    GroupedEstimates,
    estimate_distribution,
    output_codes,
)
from .joint import JointRelease
from .mechanism import Mechanism

__all__ = ["MAX_JOINT_ENTRIES", "estimate_joint_distribution", "product_channel"]

#: Largest product mechanism (entries ``prod N_i * prod M_i``) built for an estimate.
MAX_JOINT_ENTRIES = 25_000_000


def product_channel(mechanisms: Sequence[Mechanism]) -> np.ndarray:
    """The Kronecker product ``W_1 (x) ... (x) W_k`` of the mechanisms' matrices: the
    channel from a true tuple (row-major over the inputs) to the released tuple
    (row-major over the outputs) when each column goes through its own mechanism.

    Examples
    --------
    >>> from pmlkit import Mechanism
    >>> from pmlkit.inference_joint import product_channel
    >>> rr = Mechanism([[0.75, 0.25], [0.25, 0.75]])
    >>> product_channel([rr, rr])[0].tolist()  # true (0, 0) -> (0,0), (0,1), (1,0), (1,1)
    [0.5625, 0.1875, 0.1875, 0.0625]
    """
    w: np.ndarray = np.ones((1, 1))
    for m in mechanisms:
        w = np.kron(w, np.asarray(m.matrix, dtype=np.float64))
    return w


def estimate_joint_distribution(released: Mapping[str, Any],
                                channel: Sequence[Mechanism] | JointRelease, *,
                                by: Any = None, **options: Any
                                ) -> DistributionEstimate | GroupedEstimates:
    """Estimate the joint distribution of the true tuples behind several released columns.

    Parameters
    ----------
    released
        ``{column name: released values}`` (numpy, list, pandas, pyarrow or polars
        columns of equal length), in the order of ``channel``.
    channel
        One :class:`~pmlkit.Mechanism` per column (each column released through its own:
        the product mechanism, module docstring), or the
        :class:`~pmlkit.joint.JointRelease` the tuple was released through (its columns
        in the order of ``released``).
    by
        Group values (array of the same length): one estimate per group.
    **options
        ``method``, ``confidence``, ``intervals``, ``tol``, ``max_iter`` of
        :func:`pmlkit.estimate_distribution`.

    Returns
    -------
    DistributionEstimate (or GroupedEstimates with ``by``) whose ``categories`` are the
    true tuples, row-major, and ``output_labels`` the released tuples.

    Examples
    --------
    Two yes/no columns, each through randomized response keeping the value with
    probability 0.75; the estimate of the four tuples:

    >>> from pmlkit import Mechanism
    >>> from pmlkit.inference_joint import estimate_joint_distribution
    >>> rr = Mechanism([[0.75, 0.25], [0.25, 0.75]], ("n", "y"), ("n", "y"))
    >>> a = ["y"] * 50 + ["n"] * 50
    >>> b = ["y"] * 30 + ["n"] * 20 + ["y"] * 20 + ["n"] * 30
    >>> r = estimate_joint_distribution({"a": a, "b": b}, [rr, rr], intervals=False)
    >>> r.categories
    (('n', 'n'), ('n', 'y'), ('y', 'n'), ('y', 'y'))
    >>> round(float(r.estimate.sum()), 6)
    1.0
    """
    if not isinstance(released, Mapping) or len(released) < 2:
        raise ValidationError(f"released must map at least 2 column names to their released "
                              f"values, got {fmt(released)}")
    names = list(released)
    if isinstance(channel, JointRelease):
        if len(channel.columns) != len(names):
            raise ValidationError(f"the joint release has {len(channel.columns)} columns "
                                  f"but {len(names)} released columns were given")
        sizes = [len(labs) for labs in channel.column_labels]
        codes = []
        for name, labs in zip(names, channel.column_labels, strict=True):
            ident = Mechanism(np.eye(len(labs)), labs, labs)  # encodes the column's labels
            codes.append(output_codes(released[name], ident, f"column {name!r}"))
        _same_length(names, codes)
        flat = np.ravel_multi_index(tuple(codes), sizes) if codes[0].size else codes[0]
        index = {tuple(t): j for j, t in enumerate(channel.output_tuples)}
        lookup = np.full(math.prod(sizes), -1, dtype=np.intp)
        for t, j in index.items():
            lookup[np.ravel_multi_index(tuple(labs.index(v) for labs, v in zip(
                channel.column_labels, t, strict=True)), sizes)] = j
        out = lookup[flat]
        if (out < 0).any():
            bad = int(np.flatnonzero(out < 0)[0])
            tup = tuple(channel.column_labels[k][int(codes[k][bad])] for k in range(len(names)))
            raise DataError(f"the released tuple {tup!r} ({int((out < 0).sum())} rows) is not "
                            "an output of the joint release: the columns and the release do "
                            "not match")
        w = np.asarray(channel.mechanism.matrix, dtype=np.float64)
        cats: tuple[Any, ...] = channel.categories
        outs: tuple[Any, ...] = channel.output_tuples
    else:
        mechs = list(channel)
        if len(mechs) != len(names) or not all(isinstance(m, Mechanism) for m in mechs):
            raise ValidationError(f"channel must hold one pmlkit.Mechanism per released "
                                  f"column ({len(names)}), or be a JointRelease")
        n_in = math.prod(m.n_inputs for m in mechs)
        n_out = math.prod(m.n_outputs for m in mechs)
        if n_in * n_out > MAX_JOINT_ENTRIES:
            raise TooLargeError(
                f"the product mechanism of columns {names!r} has {n_in} x {n_out} entries, "
                f"more than {MAX_JOINT_ENTRIES}; estimate fewer columns together (or each "
                "column alone, one --column per run)")
        codes = [output_codes(released[n], m, f"column {n!r}")
                 for n, m in zip(names, mechs, strict=True)]
        _same_length(names, codes)
        out = np.ravel_multi_index(tuple(codes), [m.n_outputs for m in mechs])
        w = product_channel(mechs)
        import itertools

        cats = tuple(itertools.product(*(m.input_labels for m in mechs)))
        outs = tuple(itertools.product(*(m.output_labels for m in mechs)))
    flat_mech = Mechanism(w)  # labels 0..M-1: the released tuples' indices
    res = estimate_distribution(np.asarray(out, dtype=np.int64), flat_mech, by=by,
                                **options)
    if isinstance(res, GroupedEstimates):
        return GroupedEstimates(res.by, res.groups, tuple(
            replace(e, categories=cats, output_labels=outs) for e in res.estimates))
    return replace(res, categories=cats, output_labels=outs)


def _same_length(names: list[str], codes: list[np.ndarray]) -> None:
    if len({c.size for c in codes}) > 1:
        raise ValidationError("the released columns must have the same length, got "
                              + ", ".join(f"{n!r}: {c.size}" for n, c in zip(names, codes,
                                                                             strict=True)))
