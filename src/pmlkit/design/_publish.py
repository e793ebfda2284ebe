"""Publishing a design's outputs (private to :mod:`pmlkit.design`; the public names are
re-exported by :mod:`pmlkit.design.pipeline`): as values of the input column (the default,
:func:`publish_as_values`, by the one rule of :func:`pmlkit.utility.publish_assignment`),
or under the names of the inputs each output stands for (``output_names="merged"``,
:func:`name_outputs`); and the candidates of a utility object compared as they are
released (:func:`published_candidates`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import fmt
from ..errors import ValidationError
from ._candidates import Utility, certifies_over

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

__all__ = ["OUTPUT_NAMES", "check_output_names", "name_outputs", "publish_as_values",
           "published_candidates", "utility_merge"]

#: What the outputs of a sub-convex design are published as (``output_names=``):
#: ``"values"`` (default) values of the input column, ``"merged"`` names of the inputs
#: each output stands for (``"a | b"``).
OUTPUT_NAMES = ("values", "merged")


def check_output_names(output_names: Any) -> str:
    """``output_names`` checked: one of :data:`OUTPUT_NAMES`.

    Examples
    --------
    >>> check_output_names("merged")
    'merged'
    >>> check_output_names("names")
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: output_names must be one of values, merged, got 'names'
    """
    if not isinstance(output_names, str) or output_names not in OUTPUT_NAMES:
        raise ValidationError(f"output_names must be one of {', '.join(OUTPUT_NAMES)}, got "
                              f"{fmt(output_names)}")
    return output_names


def publish_as_values(w: np.ndarray, p: np.ndarray, labels: Sequence[Any] | None
                      ) -> tuple[np.ndarray, list[Any]]:
    """``(V, names)``: the outputs of a design published as values of the input column.

    Output ``j`` is published as the input label ``labels[a(j)]`` of the assignment ``a``
    of :func:`pmlkit.utility.publish_assignment` with ``keep_rank=True`` (under the
    estimate ``p``): distinct labels maximising the probability ``P[published = true]``
    when the design has at most as many outputs as inputs (a column permutation: the
    guarantee and the utility are unchanged); with more outputs than inputs (an
    estimation design can have them), outputs published as the same label are merged,
    by a map that keeps the rank of ``w`` (so a design the analyst can estimate back stays
    estimable). ``V`` is the published channel (:func:`pmlkit.utility.published_channel`),
    from the true value to the released one, its columns in the order of their labels:
    every released value is a value of the column and keeps its type (an int column stays
    int). Merging is a post-processing, so no output's leakage grows; the caller
    certifies ``V``, which is what the mechanism records and what the analyst estimates
    through.

    Examples
    --------
    >>> import numpy as np
    >>> v, names = publish_as_values(np.array([[0.8, 0.2], [0.6, 0.4]]),
    ...                              np.array([1 / 3, 2 / 3]), ["female", "male"])
    >>> names, v.tolist()
    (['female', 'male'], [[0.8, 0.2], [0.6, 0.4]])

    Three outputs on two values: two are merged, and the released channel keeps rank 2:

    >>> v, names = publish_as_values(np.array([[0.6, 0.3, 0.1], [0.2, 0.4, 0.4]]),
    ...                              np.array([0.1, 0.9]), ["rare", "common"])
    >>> names, v.round(2).tolist()
    (['rare', 'common'], [[0.6, 0.4], [0.2, 0.8]])
    """
    from ..utility import publish_assignment, published_channel

    names = list(range(w.shape[0])) if labels is None else list(labels)
    a = publish_assignment(w, p, keep_rank=True)
    used, v = published_channel(w, a)
    return v, [names[int(i)] for i in used]


def name_outputs(w: np.ndarray, p: np.ndarray, labels: Sequence[Any] | None,
                  avoid: Sequence[Any] = ()) -> tuple[np.ndarray, list[Any] | None]:
    """Order and name the outputs of a sub-convex design after the inputs they stand for
    (``output_names="merged"``; the default publishes values, :func:`publish_as_values`).

    A sub-convex utility is invariant under permuting the columns, so the LP returns them
    in arbitrary order. Output ``j`` is named after input ``x`` only when ``x`` is a strict
    majority of its sources, ``P[X = x | Y = j] > 1/2`` under the estimate (if two outputs
    have the same majority source, the one holding more of its mass ``p(x) W[x, j]`` gets
    the name). Any other output is a merged output, named after the inputs it stands for:
    ``"a | b | c"`` (its sources in decreasing posterior probability, those with at least
    5% of it, at most 6 names and ``+k more``). Named outputs come first, in input order.
    The utility and the guarantee are unchanged.
    """
    n, m = w.shape
    names = list(range(n)) if labels is None else list(labels)
    joint = p[:, None] * w
    py = joint.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        post = np.where(py > 0, joint / np.where(py > 0, py, 1.0), 0.0)
    mode = np.argmax(post, axis=0)
    share = post[mode, np.arange(m)]
    named: dict[int, int] = {}  # output -> input
    avoided = {(type(v).__name__, v) for v in avoid}
    # (a name some other output already has is never given again)
    taken = {i for i, v in enumerate(names) if (type(v).__name__, v) in avoided}
    for j in sorted(range(m), key=lambda j: -joint[mode[j], j]):
        x = int(mode[j])
        if share[j] > 0.5 and x not in taken:
            named[j] = x
            taken.add(x)
    out: list[Any] = [None] * m
    for j, x in named.items():
        out[j] = names[x]
    used = {(type(v).__name__, v) for v in [*out, *avoid] if v is not None}
    for j in range(m):
        if out[j] is not None:
            continue
        ranked = np.argsort(-post[:, j], kind="stable")
        src = [int(x) for x in ranked if post[x, j] >= 0.05] or [int(mode[j])]
        text = " | ".join(str(names[x]) for x in src[:6])
        if len(src) > 6:
            text += f" | +{len(src) - 6} more"
        label, k = text, 2
        while ("str", label) in used:
            label, k = f"{text} ({k})", k + 1
        used.add(("str", label))
        out[j] = label
    order = sorted(range(m), key=lambda j: (j not in named, named.get(j, 0), -py[j]))
    return w[:, order], [out[j] for j in order]


def utility_merge(w: np.ndarray, p: np.ndarray, util: Utility) -> NDArray[np.intp]:
    """A map of the outputs of ``w`` (``M > N``) onto the ``N`` inputs chosen for the
    utility rather than for ``P[published = true]``: the linear assignment of distinct
    inputs to ``N`` outputs (:func:`pmlkit.utility.publish_assignment`), then each other
    output, in decreasing order of its probability under ``p``, to the input whose merged
    channel (the outputs assigned so far) has the best utility. A start for the local
    search over ``N``-output mechanisms."""
    from ..utility import publish_assignment

    n = w.shape[0]
    a = publish_assignment(w, p, merge_surplus=False)
    v = np.zeros((n, n))
    for j in np.flatnonzero(a >= 0):
        v[:, a[j]] += w[:, j]
    rest = np.flatnonzero(a < 0)
    rest = rest[np.argsort(-(p @ w[:, rest]), kind="stable")]
    for j in rest:
        best: tuple[float, int] | None = None
        for x in range(n):
            v[:, x] += w[:, j]
            val = util.value(v, p)
            v[:, x] -= w[:, j]
            if best is None or val > best[0]:
                best = (val, x)
        assert best is not None
        a[j] = best[1]
        v[:, best[1]] += w[:, j]
    return a


def published_candidates(cands: list[tuple[float, np.ndarray, float, str]], uset: Any,
                          p: np.ndarray, eps: float, util: Utility, *, deadline: float,
                          max_steps: int) -> list[tuple[float, np.ndarray, float, str]]:
    """Custom-utility candidates ``(value, W, eps designed at, method)`` as they are
    released when their outputs are published as values. A candidate with at most ``N``
    outputs is kept as is (publishing it is a column permutation); one with more is
    replaced by its published channel (:func:`pmlkit.utility.publish_assignment` with
    ``keep_rank=True``: the rank, and so the estimability, is kept), valued as released.
    When the utility has a ``refine`` (the estimation error's local search over square
    mechanisms, which never lowers the value), the best unmerged candidate with surplus
    outputs is also refined from two merges of its outputs, the published channel and a
    merge chosen for the utility (:func:`utility_merge`); a refined matrix is kept when
    it certifies. The released matrix's outputs are then published by a permutation."""
    from ..utility import publish_assignment, published_channel

    out: list[tuple[float, np.ndarray, float, str]] = []
    wide: list[tuple[float, np.ndarray, float, str]] = []
    for cand in cands:
        _, w, ed, method = cand
        if w.shape[1] <= w.shape[0]:
            out.append(cand)
            continue
        wide.append(cand)
        _, v = published_channel(w, publish_assignment(w, p, keep_rank=True))
        out.append((util.value(v, p), v, ed, f"{method}; its {w.shape[1]} outputs merged "
                    f"into {v.shape[1]} to publish values of the column (rank kept)"))
    refine = getattr(util.custom, "refine", None)
    if wide and refine is not None:
        _, w, ed, method = max(wide, key=lambda c: c[0])
        starts = [(published_channel(w, publish_assignment(w, p, keep_rank=True))[1],
                   "merged as published"),
                  (published_channel(w, utility_merge(w, p, util))[1],
                   f"merged for {util.name}")]
        for v, how in starts:
            if not math.isfinite(util.value(v, p)):
                continue
            r = np.asarray(refine(v, uset, p, ed, deadline=deadline, max_steps=max_steps))
            if certifies_over(r, uset, eps):
                steps = getattr(util.custom, "last_steps", None)
                out.append((util.value(r, p), r, ed, f"{method}; its {w.shape[1]} outputs "
                            f"{how} into {w.shape[0]} to publish values of the column, "
                            f"refined by a local search over the square eps-PML polytope "
                            f"({steps} Frank-Wolfe steps, HiGHS)"))
    return out
