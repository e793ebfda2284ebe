"""Distribution estimation from samples and the Weissman l1 deviation bound.

- :func:`empirical_distribution` / :class:`EmpiricalDistribution` (Section 2
  [eq. empiricaldistribution])
- :func:`l1_radius` (Section 4.4 [eq. betastar]) and its inverse :func:`l1_failure_probability`
  (Theorem 2 [Thm weissman] with the distribution-free ``phi >= 2``)
- :func:`phi`, :func:`kappa` and :func:`l1_radius_known_kappa` (Theorem 2 [Thm weissman] with
  ``phi(kappa_P)``, for callers who know ``kappa_P``)

``log(2^N - 2)`` is computed as ``N log 2 + log1p(-2^(1-N))``, so ``N = 10^4`` (and far
beyond) works without overflow.

References
----------
- L. Grosse, S. Saeidian, T. J. Oechtering, M. Skoglund, "Privacy Mechanism Design
  based on Empirical Distributions", Section 2 ("Distribution Estimation", Theorem 2)
  and Section 4.4 (the radius ``beta*``).
- T. Weissman, E. Ordentlich, G. Seroussi, S. Verdu, M. J. Weinberger, "Inequalities
  for the L1 deviation of the empirical distribution", Hewlett-Packard Labs technical
  report, 2003, Theorem 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._deprecation import positional_deprecated, renamed_parameter
from ._optional import require
from ._validation import (
    as_distribution,
    check_count,
    check_delta,
    check_radius,
    check_real,
    fmt,
    readonly,
)
from .errors import DataError, TooLargeError, ValidationError

__all__ = [
    "KAPPA_EXACT_MAX_N",
    "EmpiricalDistribution",
    "empirical_distribution",
    "empirical_from_counts",
    "kappa",
    "l1_failure_probability",
    "l1_radius",
    "l1_radius_known_kappa",
    "log_num_subsets",
    "phi",
]

#: Largest number of non-zero, non-dominant entries :func:`kappa` solves exactly
#: (meet in the middle: two lists of ``2^(N/2)`` subset sums).
KAPPA_EXACT_MAX_N = 40

Label = Any

# counts are stored as int64; their total must stay far from overflow
_MAX_TOTAL = float(2**62)


def _py(x: Any) -> Any:
    """numpy scalars -> Python scalars (labels are stored as plain Python objects)."""
    return x.item() if isinstance(x, np.generic) else x


@dataclass(frozen=True, eq=False)
class EmpiricalDistribution:
    """An empirical distribution ``p_hat(x) = counts[x] / m`` (Section 2
    [eq. empiricaldistribution]).

    Attributes
    ----------
    p
        float64 read-only probability vector, ``counts / m``.
    counts
        int64 read-only counts per category.
    m
        Number of samples, ``counts.sum()``.
    categories
        Labels, aligned with ``p`` and ``counts``. Order: the caller's ``categories`` when
        given; otherwise sorted when the labels are mutually comparable, else by type
        name, then text form (never by the order of the samples: a mechanism file records
        the categories, and it discloses nothing that depends on the order of the reference
        records; see ``docs/threat_model.md``).

    Examples
    --------
    >>> est = EmpiricalDistribution.from_counts([3, 1], categories=["no", "yes"])
    >>> est.p, est.m, est.n, est.categories
    (array([0.75, 0.25]), 4, 2, ('no', 'yes'))
    """

    p: NDArray[np.float64]
    counts: NDArray[np.int64]
    m: int
    categories: tuple[Label, ...]

    @property
    def n(self) -> int:
        """Alphabet size ``N`` (number of categories, seen or not)."""
        return int(self.counts.shape[0])

    @classmethod
    def from_counts(cls, counts: ArrayLike,
                    categories: Sequence[Any] | None = None) -> EmpiricalDistribution:
        """Build from counts (non-negative integers, at least one positive).

        ``categories`` defaults to ``0..N-1``; when given its length must match ``counts``.
        """
        try:
            raw = np.asarray(counts)
        except (TypeError, ValueError) as exc:  # pragma: no cover - numpy accepts almost all
            raise ValidationError(f"counts must be a 1-D array of integers, got {fmt(counts)}") \
                from exc
        if raw.ndim != 1 or raw.size == 0:
            raise ValidationError(
                f"counts must be a non-empty 1-D array, got shape {raw.shape}")
        if raw.dtype == bool or not (np.issubdtype(raw.dtype, np.integer)
                                     or np.issubdtype(raw.dtype, np.floating)):
            raise ValidationError(f"counts must be integers, got dtype {raw.dtype}: {fmt(raw)}")
        if np.issubdtype(raw.dtype, np.floating):
            if not np.isfinite(raw).all():
                raise ValidationError(f"counts must be finite, got {fmt(raw)}")
            if not (raw == np.round(raw)).all():
                raise ValidationError(f"counts must be integers, got {fmt(raw)}")
        if (raw < 0).any():
            raise ValidationError(f"counts must be >= 0, got {fmt(raw)}")
        # any single count >= 2**62 fails already (and keeps the float sum from overflowing)
        big = raw.astype(np.float64)
        if (big >= _MAX_TOTAL).any() or float(big.sum()) >= _MAX_TOTAL:
            raise ValidationError(
                f"counts must sum to less than 2**62 (int64 arithmetic), got {fmt(raw)}")
        c = raw.astype(np.int64)
        m = int(c.sum())
        if m < 1:
            raise ValidationError(f"counts must sum to m >= 1, got sum {m}")
        if categories is None:
            cats: tuple[Label, ...] = tuple(range(c.size))
        else:
            cats = tuple(_py(x) for x in categories)
            if len(cats) != c.size:
                raise ValidationError(
                    f"categories has {len(cats)} labels but counts has {c.size} entries")
            if len(set(cats)) != len(cats):
                raise ValidationError(f"categories must be distinct, got {fmt(cats)}")
        return cls(readonly(c / m, None), readonly(c, None), m, cats)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary: categories, counts, p, m, n."""
        return {"categories": list(self.categories), "counts": self.counts.tolist(),
                "p": self.p.tolist(), "m": self.m, "n": self.n}


def _to_numpy_labels(samples: Any) -> Any:
    """Convert list / numpy / pandas / pyarrow input to a 1-D numpy array of labels,
    raising DataError for nulls. pandas and pyarrow are imported only for their types."""
    mod = type(samples).__module__.split(".")[0]
    if mod == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(samples, pa.ChunkedArray | pa.Array):
            nulls = int(samples.null_count)
            if nulls:
                refuse_nulls(nulls, "null")
            if pa.types.is_floating(samples.type):
                n_nan = int(pc.sum(pc.is_nan(samples)).as_py() or 0)
                if n_nan:
                    refuse_nulls(n_nan, "NaN")
            if pa.types.is_dictionary(samples.type):
                samples = samples.cast(samples.type.value_type)
            if pa.types.is_nested(samples.type):
                raise ValidationError(
                    f"samples must be 1-D with hashable labels, got a pyarrow column of type "
                    f"{samples.type}")
            if len(samples) == 0:
                return np.array([])
            vc = pc.value_counts(samples)  # hash-based, in C++
            # one entry per distinct label: to_pylist, not np.asarray (pyarrow's numpy
            # conversion imports pandas, a third of a second in `pmlkit design`)
            return _Counted(vc.field("values").to_pylist(),
                            np.array(vc.field("counts").to_pylist(), dtype=np.int64))
        raise ValidationError(f"samples of type {type(samples).__name__} are not supported")
    if mod == "pandas":
        import pandas as pd

        if isinstance(samples, pd.Categorical):
            samples = pd.Series(samples)
        if isinstance(samples, pd.Index):
            samples = samples.to_series()
        if isinstance(samples, pd.DataFrame):
            raise ValidationError("samples must be one column (1-D), got a DataFrame")
        if isinstance(samples, pd.Series):
            nulls = int(samples.isna().sum())
            if nulls:
                refuse_nulls(nulls)
            if isinstance(samples.dtype, pd.CategoricalDtype):  # count the codes directly
                if len(samples) == 0:
                    return np.array([])
                counts = np.bincount(np.asarray(samples.cat.codes, dtype=np.int64),
                                     minlength=len(samples.cat.categories))
                seen = np.flatnonzero(counts)
                cats = samples.cat.categories
                return _Counted([_py(cats[i]) for i in seen], counts[seen].astype(np.int64))
            return np.asarray(samples.to_numpy())
    if isinstance(samples, str | bytes):
        raise ValidationError("samples must be a sequence of labels, got a single string")
    if isinstance(samples, np.ndarray):
        arr = samples
    else:
        try:
            seq = samples if isinstance(samples, list | tuple) else list(samples)
        except TypeError:
            raise ValidationError(
                f"samples must be a 1-D sequence of labels, got {fmt(samples)}") from None
        # object dtype keeps every label exactly as given (no "1" -> 1 or 1 -> 1.0 casts);
        # fromiter keeps tuple labels whole instead of broadcasting them
        arr = np.fromiter(seq, dtype=object, count=len(seq))
    if arr.ndim != 1:
        raise ValidationError(f"samples must be 1-D, got an array of shape {arr.shape}")
    return arr


class _Counted:
    """Labels already counted (pyarrow ``value_counts``), in first-appearance order."""

    def __init__(self, labels: list[Any], counts: NDArray[np.int64]) -> None:
        self.labels = labels
        self.counts = counts


def _null_mask(arr: NDArray[Any]) -> NDArray[np.bool_]:
    if arr.dtype.kind == "f":
        return cast(NDArray[np.bool_], np.isnan(arr))
    if arr.dtype.kind in "mM":
        return cast(NDArray[np.bool_], np.isnat(arr))
    return np.zeros(arr.shape, dtype=bool)


def _sorted_if_comparable(labels: list[Any], counts: NDArray[np.int64]
                          ) -> tuple[list[Any], NDArray[np.int64]]:
    """Sort the (few) distinct labels when they are mutually comparable; else by type
    name, then ``repr``: an order that does not depend on the order of the samples (the
    labels arrive in order of first appearance, which would tell which label came first)."""
    try:
        order = sorted(range(len(labels)), key=labels.__getitem__)
    except TypeError:
        def canonical(i: int) -> tuple[str, str, str]:
            t = type(labels[i])
            return (t.__module__, t.__qualname__, repr(labels[i]))

        order = sorted(range(len(labels)), key=canonical)
    return [labels[i] for i in order], counts[np.asarray(order, dtype=np.int64)]


def _unique_counts(arr: NDArray[Any]) -> tuple[list[Any], NDArray[np.int64]]:
    """Distinct labels (sorted if comparable, else canonically) and their counts.

    Native dtypes: ``np.unique``. Object arrays: ``pandas.factorize`` (hash-based, in C),
    which also flags nulls (None, NaN, pd.NA, NaT) with code -1."""
    if arr.dtype.kind in "US":  # hashing beats sorting fixed-width strings
        arr = arr.astype(object)
    if arr.dtype.kind != "O":
        values, counts = np.unique(arr, return_counts=True)
        return [_py(v) for v in values], counts.astype(np.int64)
    pd = require("pandas", "counting labels of an object/string array")

    try:
        codes, uniques = pd.factorize(arr, sort=False, use_na_sentinel=True)
    except TypeError as exc:  # e.g. a nested list: its rows are unhashable
        raise ValidationError(
            f"samples must be 1-D with hashable labels (a nested list is 2-D), got a label "
            f"that cannot be hashed: {exc}") from None
    nulls = int(np.count_nonzero(codes < 0))
    if nulls:
        refuse_nulls(nulls)
    counts = np.bincount(codes, minlength=len(uniques)).astype(np.int64)
    return _sorted_if_comparable([_py(v) for v in uniques], counts)


def empirical_distribution(samples: object,
                           categories: Sequence[Any] | None = None) -> EmpiricalDistribution:
    """Empirical distribution of raw samples (Section 2 [eq. empiricaldistribution]).

    ``p_hat(x) = (1/m) sum_i 1{d_i = x}``.

    Parameters
    ----------
    samples
        1-D labels: list/tuple, numpy array (any dtype incl. object/str), pandas
        Series/Categorical, pyarrow Array/ChunkedArray. Labels must be hashable. Counting is
        vectorised: ``np.unique`` for native numpy dtypes, ``pandas.factorize`` (hashing)
        for object arrays and lists, ``pyarrow.compute.value_counts`` for pyarrow input.
    categories
        The alphabet, in the order wanted. Categories listed but unseen get count 0. When
        omitted the alphabet is the set of observed labels, sorted when comparable, else by
        type name, then text form (never in the order of the samples).

    Raises
    ------
    ValidationError
        Empty samples, non-1-D input, duplicated categories.
    DataError
        Null/NaN samples (with their count) or a sample not in ``categories`` (naming the
        value and how many rows have it). Nothing is dropped silently.

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Section 2, "Distribution Estimation".

    Examples
    --------
    >>> est = empirical_distribution(["a", "b", "a", "a"])
    >>> est.categories, est.counts, est.p
    (('a', 'b'), array([3, 1]), array([0.75, 0.25]))
    >>> empirical_distribution(["a", "b", "a", "a"], categories=["a", "b", "c"]).counts
    array([3, 1, 0])
    """
    arr = _to_numpy_labels(samples)
    if isinstance(arr, _Counted):
        labels, counts = _sorted_if_comparable(arr.labels, arr.counts)
    else:
        if arr.size == 0:
            raise ValidationError("samples must not be empty (m >= 1 samples are needed)")
        nulls = _null_mask(arr)
        if nulls.any():
            refuse_nulls(int(nulls.sum()))
        labels, counts = _unique_counts(arr)
    return _with_categories(labels, counts, categories)


def refuse_nulls(nulls: int, what: str = "null/NaN") -> None:
    """Raise :class:`~pmlkit.errors.DataError` when ``nulls > 0`` samples are missing: the one
    null check of every estimator (nothing is dropped silently)."""
    if nulls:
        raise DataError(f"samples contain {nulls} {what} value(s); remove or label them "
                        "explicitly before estimating a distribution")


def empirical_from_counts(labels: Sequence[Any], counts: ArrayLike,
                          categories: Sequence[Any] | None = None, *,
                          nulls: int = 0) -> EmpiricalDistribution:
    """The empirical distribution from distinct ``labels`` and their ``counts`` (e.g. a
    distributed ``value_counts``), with the rules of :func:`empirical_distribution`: ``nulls``
    missing samples are refused with their count, an empty sample is refused, labels are
    sorted when comparable, and with ``categories`` a label outside them is refused (named,
    with its count) while unseen categories get count 0.

    Examples
    --------
    >>> est = empirical_from_counts(["y", "x"], [6, 2])
    >>> est.categories, est.p
    (('x', 'y'), array([0.25, 0.75]))
    """
    refuse_nulls(int(nulls))
    if len(labels) == 0:
        raise ValidationError("samples must not be empty (m >= 1 samples are needed)")
    labels, counts = _sorted_if_comparable(list(labels), np.asarray(counts, dtype=np.int64))
    return _with_categories(labels, counts, categories)


def _with_categories(labels: list[Any], counts: NDArray[np.int64],
                     categories: Sequence[Any] | None) -> EmpiricalDistribution:
    if categories is None:
        return EmpiricalDistribution.from_counts(counts, labels)
    cats = [_py(c) for c in categories]
    if len(cats) == 0:
        raise ValidationError("categories must not be empty")
    index: dict[Any, int] = {}
    for i, c in enumerate(cats):
        try:
            if c in index:
                raise ValidationError(f"categories must be distinct, {c!r} appears twice")
        except TypeError:
            raise ValidationError(f"categories must be hashable, got {c!r}") from None
        index[c] = i
    full = np.zeros(len(cats), dtype=np.int64)
    unknown = [(lab, int(cnt)) for lab, cnt in zip(labels, counts, strict=True)
               if lab not in index]
    if unknown:
        lab, cnt = unknown[0]
        more = f" (and {len(unknown) - 1} other unknown label(s))" if len(unknown) > 1 else ""
        raise DataError(f"sample value {lab!r} ({cnt} row(s)) is not in categories "
                        f"{fmt(tuple(cats))}{more}")
    pos = np.fromiter((index[lab] for lab in labels), dtype=np.int64, count=len(labels))
    full[pos] = counts
    return EmpiricalDistribution.from_counts(full, cats)


def log_num_subsets(n: int) -> float:
    """``log(2^n - 2)`` without overflow: ``n log 2 + log1p(-2^(1-n))``; ``-inf`` for n=1.

    Examples
    --------
    >>> round(log_num_subsets(3), 4)  # log 6
    1.7918
    >>> round(log_num_subsets(10_000), 2)  # 2^10000 overflows a float; its log does not
    6931.47
    """
    n = check_count(n, "n", minimum=1)
    if n == 1:
        return -math.inf
    return n * math.log(2.0) + math.log1p(-(2.0 ** (1 - n)))


@positional_deprecated(version="0.2", allowed=1)
def l1_radius(delta: float, *, m: int, n: int) -> float:
    """Distribution-free l1 radius (Section 4.4 [eq. betastar], from Theorem 2 [Thm weissman] with
    ``phi >= 2``).

    ``beta*(delta) = sqrt( 2/m * (log(2^N - 2) - log delta) )``: with probability at least
    ``1 - delta`` over ``m`` i.i.d. samples, ``||P - P_hat||_1 < beta*``.

    Parameters
    ----------
    delta
        Failure probability in ``(0, 1]``.
    m
        Number of samples (integer ``>= 1``).
    n
        Alphabet size ``N`` (integer ``>= 2``).

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Theorem 2 and Section 4.4.

    Examples
    --------
    ``sqrt(2/1000 (log(2^2 - 2) - log 1e-6))``:

    >>> round(l1_radius(1e-6, m=1000, n=2), 6)
    0.170345
    >>> bool(np.isclose(l1_radius(1e-6, m=1000, n=2),
    ...                 math.sqrt(2 / 1000 * (math.log(2) - math.log(1e-6)))))
    True
    """
    d = check_delta(delta)
    m = check_count(m, "m")
    n = check_count(n, "n", minimum=2)
    return math.sqrt(2.0 / m * (log_num_subsets(n) - math.log(d)))


@positional_deprecated(version="0.2", allowed=1)
def l1_failure_probability(beta: float, *, m: int, n: int) -> float:
    """Inverse of :func:`l1_radius` (Theorem 2 [Thm weissman], ``phi >= 2``).

    ``delta(beta) = min(1, (2^N - 2) exp(-m beta^2 / 2))``, evaluated in logs.

    Parameters
    ----------
    beta
        l1 radius ``>= 0``.
    m
        Number of samples (integer ``>= 1``).
    n
        Alphabet size ``N`` (integer ``>= 2``).

    Examples
    --------
    The inverse of :func:`l1_radius`, and 1 for radii too small to say anything:

    >>> float(f"{l1_failure_probability(l1_radius(1e-6, m=1000, n=2), m=1000, n=2):.6g}")
    1e-06
    >>> l1_failure_probability(0.01, m=1000, n=2)
    1.0
    """
    b = check_radius(beta)
    m = check_count(m, "m")
    n = check_count(n, "n", minimum=2)
    log_d = log_num_subsets(n) - m * b * b / 2.0
    return 1.0 if log_d >= 0 else math.exp(log_d)


@overload
def phi(p: float) -> float: ...
@overload
def phi(p: ArrayLike) -> NDArray[np.float64]: ...
def phi(p: ArrayLike) -> float | NDArray[np.float64]:
    """``phi(p) = log((1-p)/p) / (1 - 2p)`` on ``[0, 1/2]`` with ``phi(1/2) = 2`` (Theorem 2
    [Thm weissman]).

    Evaluated as ``2 atanh(u) / u`` with ``u = 1 - 2p`` (series ``2(1 + u^2/3 + u^4/5 +
    u^6/7)`` for ``|u| < 1e-3``), stable near ``1/2``; ``phi(0) = inf``. Vectorised: arrays in,
    arrays out; a scalar returns a float. ``p`` is a number in ``[0, 1/2]`` (the paper's
    notation; applied to ``kappa_P``), not a distribution.

    Examples
    --------
    ``phi(1/4) = log 3 / (1/2)``; ``phi`` decreases from ``inf`` at 0 to 2 at 1/2:

    >>> round(phi(0.25), 6), round(2 * math.log(3), 6)
    (2.197225, 2.197225)
    >>> phi(np.array([0.0, 0.5]))
    array([inf,  2.])
    """
    scalar = np.ndim(p) == 0
    if scalar:
        x = np.array(check_real(p, "p", low=0.0, high=0.5), dtype=np.float64)
    else:
        x = np.asarray(p, dtype=np.float64)
        if np.isnan(x).any() or (x < 0).any() or (x > 0.5).any():
            raise ValidationError(f"p must be in [0, 0.5], got {fmt(x)}")
    u = 1.0 - 2.0 * x
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = 2.0 * np.arctanh(u) / u
    u2 = u * u
    series = 2.0 * (1.0 + u2 / 3.0 + u2 * u2 / 5.0 + u2 * u2 * u2 / 7.0)
    out = np.where(np.abs(u) < 1e-3, series, direct)
    out = np.where(x == 0.0, np.inf, out)
    return float(out) if scalar else cast(NDArray[np.float64], out)


@renamed_parameter(version="0.2", p="prior")
def kappa(prior: ArrayLike) -> float:
    """``kappa_P = max_A min(P(A), 1 - P(A))`` over subsets ``A`` of the alphabet (Theorem 2
    [Thm weissman]).

    Exact. Zero entries are dropped (they change no subset sum). If the largest entry is
    ``>= 1/2`` the answer is ``1 - max p`` (any ``A`` containing it has ``P(A) >= 1/2``).
    Otherwise it is the subset sum closest to ``1/2`` (a partition problem, NP-hard in
    general), solved exactly by meet in the middle: the subset sums of each half are
    enumerated (``2^(N/2)`` each) and, for every sum of one half, the best partner in the
    sorted other half is found by binary search. Time and memory ``O(2^(N/2) N)``.

    The distribution was called ``p`` before release 0.2; ``kappa(p=...)`` still works for
    one release with a :class:`DeprecationWarning`.

    Raises
    ------
    TooLargeError
        More than :data:`KAPPA_EXACT_MAX_N` non-zero entries in the hard case. Use
        :func:`l1_radius` instead (distribution-free: valid for every ``P`` because
        ``phi >= 2``), or :func:`l1_radius_known_kappa` with an upper bound on kappa.

    Examples
    --------
    For ``(0.4, 0.35, 0.25)`` the best split is ``{0.4}`` against ``{0.35, 0.25}``; a
    dominant entry settles it at once:

    >>> kappa([0.4, 0.35, 0.25])
    0.4
    >>> round(kappa([0.7, 0.2, 0.1]), 12)  # 1 - 0.7
    0.3
    """
    q = as_distribution(prior)
    q = q[q > 0]
    top = float(q.max())
    if top >= 0.5:
        return min(0.5, 1.0 - top)
    n = q.size
    if n > KAPPA_EXACT_MAX_N:
        raise TooLargeError(
            f"kappa is computed exactly only for up to {KAPPA_EXACT_MAX_N} non-zero entries "
            f"(subset-sum, meet in the middle), got {n}; use l1_radius (distribution-free, "
            "phi >= 2) or l1_radius_known_kappa with kappa=0.5 instead")
    half = n // 2
    a = _subset_sums(q[:half])
    b = np.sort(_subset_sums(q[half:]))
    # for each a, the best b is the one nearest 1/2 - a
    target = 0.5 - a
    idx = np.searchsorted(b, target)
    best = np.zeros_like(a)
    lo = np.clip(idx - 1, 0, b.size - 1)
    hi = np.clip(idx, 0, b.size - 1)
    s_lo = a + b[lo]
    s_hi = a + b[hi]
    best = np.maximum(np.minimum(s_lo, 1.0 - s_lo), np.minimum(s_hi, 1.0 - s_hi))
    return float(min(0.5, best.max()))


def _subset_sums(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """All ``2^len(v)`` subset sums (vectorised doubling)."""
    sums = np.zeros(1)
    for x in v:  # loop over at most 20 entries, not over records
        sums = np.concatenate((sums, sums + x))
    return sums


@positional_deprecated(version="0.2", allowed=1)
def l1_radius_known_kappa(delta: float, *, m: int, n: int, kappa: float) -> float:
    """Distribution-dependent l1 radius (Theorem 2 [Thm weissman] with ``phi(kappa_P)``).

    ``beta = 2 sqrt( (log(2^N - 2) - log delta) / (m phi(kappa)) )``. With ``kappa = 1/2``
    (``phi = 2``) this is :func:`l1_radius`. Valid only if ``kappa`` is the true ``kappa_P``
    or an upper bound on it (``phi`` is decreasing). ``kappa = 0`` gives radius 0 (a point
    mass is always estimated exactly).

    Parameters
    ----------
    delta
        Failure probability in ``(0, 1]``.
    m, n
        Number of samples (``>= 1``) and alphabet size (``>= 2``).
    kappa
        ``kappa_P`` in ``[0, 1/2]`` (see :func:`kappa`).

    References
    ----------
    - Grosse et al., "Privacy Mechanism Design based on Empirical Distributions",
      Theorem 2.

    Examples
    --------
    ``kappa = 1/2`` is the distribution-free radius; a skewed ``P`` (``kappa = 0.1``,
    ``phi = log 9 / 0.8``) gets ``2 sqrt((log 2 - log 1e-6) / (1000 phi))``:

    >>> l1_radius_known_kappa(1e-6, m=1000, n=2, kappa=0.5) == l1_radius(1e-6, m=1000, n=2)
    True
    >>> round(l1_radius_known_kappa(1e-6, m=1000, n=2, kappa=0.1), 6)
    0.145362
    """
    d = check_delta(delta)
    m = check_count(m, "m")
    n = check_count(n, "n", minimum=2)
    k = check_real(kappa, "kappa", low=0.0, high=0.5)
    return float(weissman_radius(log_num_subsets(n) - math.log(d), m, phi(k)))


def weissman_radius(log_ratio: ArrayLike, m: ArrayLike,
                    phi_value: ArrayLike) -> NDArray[np.float64]:
    """``beta = 2 sqrt(L / (m phi))`` with ``L = log((2^N - 2) / delta)``: the l1 radius of
    Theorem 2 [Thm weissman] for a known ``phi`` (or a lower bound on it), the one implementation
    behind :func:`l1_radius_known_kappa` and the ``"l1-kappa"`` confidence set.

    Vectorised over its arguments (no validation: callers validate). The caller forms
    ``L`` (so that a ``delta`` below the smallest float can enter as a sum of logs);
    ``phi = inf`` (a point mass) gives radius 0."""
    f = np.asarray(phi_value, dtype=np.float64)
    num = np.asarray(log_ratio, dtype=np.float64)
    size = np.asarray(m, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return cast(NDArray[np.float64],
                    np.where(np.isinf(f), 0.0, 2.0 * np.sqrt(num / (size * f))))
