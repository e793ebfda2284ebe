"""The guarantee of releasing several columns of each record: one PML guarantee over the joint
alphabet, and the facts that only a joint release has.

A :class:`JointGuarantee` is a :class:`pmlkit.guarantee.PMLGuarantee` whose alphabet is the
product of the released columns' alphabets (row-major tuples), built from a joint
reference sample, together with a small typed record of what is specific to a joint
release: the columns and their labels, the reference counts the set was built from, the
kind of certificate (the exact worst case over the joint confidence set, or the chain-rule
bound over one set per column) and each column's own eps, which are shown for comparison
and are **not** a guarantee (they do not add up).

Stability contract
------------------
``to_dict`` is part of the release-plan and manifest formats: it carries ``"schema":
"pmlkit-joint-guarantee"`` and an integer ``"version"``; :meth:`JointGuarantee.from_dict` is
strict (unknown schema or version, a missing or unexpected field, a value of the wrong
type: :class:`~pmlkit.errors.ValidationError`), and :meth:`JointGuarantee.verify` re-checks
the promise in the model: it rebuilds the set from the recorded counts, delta and method,
recomputes the worst case of the mechanisms over it and refuses any mismatch. A document
is only believed after ``verify``.

Examples
--------
>>> import math
>>> import pmlkit
>>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
>>> g = pmlkit.joint_guarantee([rr, rr], {"x": [0, 1] * 45, "y": [0, 0, 1] * 30}, 0.05)
>>> g.columns, g.sizes, g.guarantee.n, g.kind
(('x', 'y'), (2, 2), 4, 'exact')
>>> back = JointGuarantee.from_dict(g.to_dict()).verify([rr, rr])
>>> back.certified_eps == g.certified_eps
True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .._validation import (
    check_delta,
    fmt,
    safe_upper,
    same_numbers,
    surely_exceeds,
    to_jsonable,
    up_text,
)
from ..errors import CertificationError, DataError, PMLError, ValidationError
from ..guarantee import PMLGuarantee
from ..mechanism import Mechanism
from ..sets import Box, L1Ball, MarginalSets, UncertaintySet
from ..worstcase import CERTIFY_TOL
from .product import ProductMechanism, as_product, check_joint_set, product_worst

if TYPE_CHECKING:  # pragma: no cover
    from ..confidence import ConfidenceSet

__all__ = [
    "KINDS",
    "NOT_ADDITIVE",
    "JointGuarantee",
    "align_factors",
    "bound_guarantee",
    "chain_rule_bound",
    "check_confidence",
    "joint_counts",
    "joint_guarantee",
    "make_joint_guarantee",
    "marginal_bound",
    "marginal_counts",
    "reference_columns",
]

#: The two certificates of a joint release.
KINDS: dict[str, str] = {
    "exact": "the exact worst case of the product over the joint confidence set",
    "chain-rule bound": ("a bound (chain rule for PML) over every joint distribution whose "
                         "marginals lie in one confidence set per column"),
}

NOT_ADDITIVE = ("per-column eps do not add up: PML depends on the joint distribution, so "
                "only the joint value certifies the release of the whole record")

#: Joint alphabets up to this size list their estimate and tuples in :meth:`__str__`-side
#: views (:attr:`JointGuarantee.estimate`, :attr:`JointGuarantee.categories`).
_SMALL = 100_000


def _label(v: Any, where: str) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, str | int | float) \
            or (isinstance(v, float) and not math.isfinite(v)):
        raise ValidationError(f"{where} must be a str, int or finite float, got {fmt(v)}")
    return v


# --------------------------------------------------------------------------------------
# reference samples -> joint counts
# --------------------------------------------------------------------------------------

def reference_columns(reference: Any, columns: Sequence[Any] | None, k: int
                       ) -> tuple[list[str], list[Any]]:
    """``(names, column data)`` of the K columns of a reference sample.

    Examples
    --------
    >>> reference_columns({"u": [1, 2], "v": [3, 4]}, None, 2)
    (['u', 'v'], [[1, 2], [3, 4]])
    """
    import pandas as pd

    if isinstance(reference, pd.DataFrame):
        names = list(reference.columns) if columns is None else list(columns)
        missing = [c for c in names if c not in reference.columns]
        if missing:
            raise DataError(
                f"columns {missing!r} are not in the reference DataFrame (it has "
                f"{list(reference.columns)!r})")
        data = [reference[c].to_numpy() for c in names]
    elif isinstance(reference, Mapping):
        names = list(reference) if columns is None else list(columns)
        missing = [c for c in names if c not in reference]
        if missing:
            raise DataError(f"columns {missing!r} are not in the reference mapping")
        data = [reference[c] for c in names]
    elif isinstance(reference, np.ndarray) and reference.ndim == 2:
        data = [reference[:, i] for i in range(reference.shape[1])]
        names = [f"column {i}" for i in range(len(data))] if columns is None else \
            [str(c) for c in columns]
    elif isinstance(reference, Sequence) and not isinstance(reference, str):
        data = list(reference)
        names = [f"column {i}" for i in range(len(data))] if columns is None else \
            [str(c) for c in columns]
    else:
        raise ValidationError(
            "reference must be a pandas DataFrame, a mapping name -> column, a sequence of "
            f"columns or a 2-D array, got {fmt(reference)}")
    if k >= 0 and (len(data) != k or len(names) != k):
        raise ValidationError(
            f"reference has {len(data)} columns ({names!r}) but {k} mechanisms were given; "
            "pass columns=[...] naming one column per mechanism, in the same order")
    return [str(n) for n in names], data


def joint_counts(labels: Sequence[Sequence[Any]], reference: Any,
                 columns: Sequence[Any] | None = None) -> tuple[list[str], np.ndarray, int]:
    """Column names, joint counts over the product of ``labels`` (row-major) and ``m``.

    ``labels[k]`` is column ``k``'s alphabet. Every value must be one of its column's
    labels; nulls and unknown values are refused (nothing is dropped).

    Examples
    --------
    >>> names, counts, m = joint_counts([["a", "b"], [0, 1]], {"u": ["a", "b", "b"],
    ...                                                        "v": [0, 1, 1]})
    >>> names, counts.tolist(), m
    (['u', 'v'], [1, 0, 0, 2], 3)
    """
    import pandas as pd

    names, data = reference_columns(reference, columns, len(labels))
    codes = []
    m = None
    for name, col, labs in zip(names, data, labels, strict=True):
        arr = np.asarray(col, dtype=object) if not hasattr(col, "to_numpy") else \
            col.to_numpy(dtype=object)
        if arr.ndim != 1:
            raise ValidationError(f"column {name!r} must be 1-D, got shape {arr.shape}")
        if m is None:
            m = arr.size
        elif arr.size != m:
            raise ValidationError(
                f"all columns must have the same length, column {name!r} has {arr.size} "
                f"values, the first has {m}")
        nulls = pd.isna(arr)
        if nulls.any():
            raise DataError(
                f"column {name!r} has {int(nulls.sum())} null value(s) (first at row "
                f"{int(np.flatnonzero(nulls)[0])}); label them explicitly, nothing is "
                "dropped")
        c = np.asarray(pd.Index(list(labs), dtype=object).get_indexer(arr), dtype=np.int64)
        bad = np.flatnonzero(c < 0)
        if bad.size:
            v = arr[int(bad[0])]
            raise DataError(
                f"column {name!r} has value {v!r} (in {bad.size} row(s)) that is not an "
                f"input label of its mechanism (labels: {fmt(list(labs))})")
        codes.append(c)
    if not m:
        raise ValidationError("reference must hold at least 1 record, got 0")
    sizes = tuple(len(labs) for labs in labels)
    flat = np.ravel_multi_index(tuple(codes), sizes)
    counts = np.bincount(flat, minlength=math.prod(sizes))
    return names, counts, int(m)


def marginal_counts(counts: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """Each column's counts from joint counts (row-major over ``sizes``).

    Examples
    --------
    >>> [c.tolist() for c in marginal_counts(np.array([1, 0, 0, 2]), (2, 2))]
    [[1, 2], [1, 2]]
    """
    c = np.asarray(counts).reshape(tuple(sizes))
    axes = range(len(sizes))
    return [c.sum(axis=tuple(a for a in axes if a != i)) for i in axes]


def align_factors(mechanisms: Any, labels: Sequence[Sequence[Any]],
                  columns: Sequence[str]) -> ProductMechanism:
    """The product of one mechanism per column with each factor's rows in the order of
    ``labels[k]``: mechanisms are matched to a column's alphabet by their input labels
    (a permutation of the same labels is re-ordered; other labels are refused), never by
    position.

    Examples
    --------
    >>> import pmlkit
    >>> a = pmlkit.Mechanism([[0.2, 0.8], [0.9, 0.1]], ["M", "F"])
    >>> prod = align_factors([a], [["F", "M"]], ["sex"])
    >>> prod.factors[0].input_labels, prod.factors[0].matrix.tolist()
    (('F', 'M'), [[0.9, 0.1], [0.2, 0.8]])
    """
    prod = as_product(mechanisms)
    if len(prod.factors) != len(labels):
        raise ValidationError(
            f"{len(prod.factors)} mechanisms given for {len(labels)} columns "
            f"({', '.join(columns)}): give one mechanism per column")
    out = []
    for f, labs, col in zip(prod.factors, labels, columns, strict=True):
        want = tuple(labs)
        if f.input_labels == want:
            out.append(f)
            continue
        if len(f.input_labels) != len(want) or set(f.input_labels) != set(want):
            raise ValidationError(
                f"the mechanism of column {col!r} has input labels "
                f"{fmt(list(f.input_labels))}, but the column's alphabet is {fmt(list(want))}")
        where = {lab: i for i, lab in enumerate(f.input_labels)}
        order = [where[lab] for lab in want]
        out.append(Mechanism(f.matrix[order], want, f.output_labels,
                             guarantee=None, provenance=f.provenance))
    return ProductMechanism(tuple(out))


# --------------------------------------------------------------------------------------
# the guarantee
# --------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class JointGuarantee:
    """An (eps, delta)-PML guarantee for a release of several columns of each record.

    With probability at least ``1 - delta`` over the reference sample, the true joint
    distribution lies in :attr:`set`, and then the released tuple of outputs is
    ``eps``-PML about the whole record (and so about every column and every function of
    the record).

    Attributes
    ----------
    guarantee
        The :class:`~pmlkit.guarantee.PMLGuarantee` over the joint alphabet (basis
        ``"sample"``): eps, delta, m, the confidence method and the set, a real
        :class:`~pmlkit.sets.UncertaintySet` (the joint confidence set, or a
        :class:`~pmlkit.sets.MarginalSets` for the chain-rule bound).
    columns
        The released columns.
    column_labels
        Each column's alphabet; the joint alphabet is their product in row-major order.
    kind
        ``"exact"`` (certified eps = the exact worst case of the product over the joint
        set) or ``"chain-rule bound"`` (an upper bound over every joint distribution
        whose marginals lie in the marginal sets).
    counts
        The reference sample's joint counts, as ``(flat index, count)`` pairs of the
        non-zero entries (what every file discloses about the reference sample).
    column_eps
        Each column's own worst-case eps over its marginal set at the same delta: NOT a
        guarantee, shown to compare (they do not add up). ``()`` when not computed.
    worst_output
        An output tuple attaining the exact worst case (``None`` for the bound).
    warning
        Why per-column eps must not be read as additive.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))
    >>> g = pmlkit.joint_guarantee([rr, rr], {"x": [0, 1] * 45, "y": [0, 0, 1] * 30}, 0.05)
    >>> g.guarantee.basis, g.m, g.counts
    ('sample', 90, ((0, 30), (1, 15), (2, 30), (3, 15)))
    """

    SCHEMA: ClassVar[str] = "pmlkit-joint-guarantee"
    VERSION: ClassVar[int] = 2

    guarantee: PMLGuarantee
    columns: tuple[str, ...]
    column_labels: tuple[tuple[Any, ...], ...]
    kind: str
    counts: tuple[tuple[int, int], ...]
    column_eps: tuple[float, ...] = ()
    worst_output: tuple[Any, ...] | None = None
    warning: str = NOT_ADDITIVE

    def __post_init__(self) -> None:
        g = self.guarantee
        if not isinstance(g, PMLGuarantee):
            raise ValidationError(
                f"guarantee must be a PMLGuarantee, got {type(g).__name__}")
        if g.basis != "sample":
            raise ValidationError(
                f"guarantee basis must be 'sample' (a joint reference sample), got "
                f"{g.basis!r}")
        cols = self.columns
        if isinstance(cols, str) or not isinstance(cols, Sequence) or not cols or \
                not all(isinstance(c, str) and c for c in cols) or len(set(cols)) != len(cols):
            raise ValidationError(
                f"columns must be distinct non-empty column names, got {fmt(cols)}")
        object.__setattr__(self, "columns", tuple(cols))
        labs = self.column_labels
        if isinstance(labs, str) or not isinstance(labs, Sequence) or len(labs) != len(cols):
            raise ValidationError(
                f"column_labels must hold one alphabet per column ({len(cols)}), got "
                f"{fmt(labs)}")
        built = []
        for c, ls in zip(cols, labs, strict=True):
            if isinstance(ls, str) or not isinstance(ls, Sequence) or not ls:
                raise ValidationError(
                    f"column_labels of {c!r} must be a non-empty list of labels, got {fmt(ls)}")
            t = tuple(_label(v, f"column_labels of {c!r}") for v in ls)
            if len(set(t)) != len(t):
                raise ValidationError(f"column_labels of {c!r} are not distinct: {fmt(t)}")
            built.append(t)
        object.__setattr__(self, "column_labels", tuple(built))
        sizes = self.sizes
        if math.prod(sizes) != g.n:
            raise ValidationError(
                f"the joint alphabet has {math.prod(sizes)} tuples ({' x '.join(map(str, sizes))})"
                f" but the guarantee's set has {g.n} categories")
        if self.kind not in KINDS:
            raise ValidationError(f"kind must be one of {sorted(KINDS)}, got {fmt(self.kind)}")
        marg = isinstance(g.set, MarginalSets)
        if marg != (self.kind == "chain-rule bound") or (marg and g.set.sizes != sizes):  # type: ignore[attr-defined]
            raise ValidationError(
                f"a {self.kind!r} guarantee needs "
                + ("one set per column (MarginalSets) matching the column sizes"
                   if self.kind == "chain-rule bound" else "a set on the joint alphabet")
                + f", got {type(g.set).__name__}")
        pairs = []
        for pair in self.counts:
            if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2 \
                    or not all(isinstance(v, int | np.integer) and not isinstance(v, bool)
                               for v in pair):
                raise ValidationError(
                    f"counts must be (index, count) pairs of integers, got {fmt(pair)}")
            pairs.append((int(pair[0]), int(pair[1])))
        idx = [i for i, _ in pairs]
        if any(b <= a for a, b in itertools.pairwise(idx)) or (idx and (
                idx[0] < 0 or idx[-1] >= g.n)) or any(c < 1 for _, c in pairs):
            raise ValidationError(
                "counts must list increasing indices in [0, n) with counts >= 1")
        if sum(c for _, c in pairs) != g.m:
            raise ValidationError(
                f"counts sum to {sum(c for _, c in pairs)} but the guarantee's m is {g.m}")
        object.__setattr__(self, "counts", tuple(pairs))
        ce = []
        for v in self.column_eps:
            if isinstance(v, bool) or not isinstance(v, int | float | np.number) \
                    or not (float(v) >= 0):
                raise ValidationError(f"column_eps must be numbers >= 0, got {fmt(v)}")
            ce.append(float(v))
        if ce and len(ce) != len(cols):
            raise ValidationError(
                f"column_eps must hold one value per column ({len(cols)}), got {len(ce)}")
        object.__setattr__(self, "column_eps", tuple(ce))
        if self.worst_output is not None:
            if isinstance(self.worst_output, str) or not isinstance(self.worst_output,
                                                                     Sequence) \
                    or len(self.worst_output) != len(cols):
                raise ValidationError(
                    f"worst_output must hold one output label per column, got "
                    f"{fmt(self.worst_output)}")
            object.__setattr__(self, "worst_output", tuple(
                _label(v, "worst_output") for v in self.worst_output))
        if not isinstance(self.warning, str):
            raise ValidationError(f"warning must be a str, got {fmt(self.warning)}")

    # -- views ------------------------------------------------------------------------
    @property
    def eps(self) -> float:
        """The guaranteed eps (:attr:`pmlkit.guarantee.PMLGuarantee.eps`)."""
        return self.guarantee.eps

    @property
    def certified_eps(self) -> float:
        return self.guarantee.certified_eps

    @property
    def delta(self) -> float:
        return self.guarantee.delta

    @property
    def m(self) -> int:
        return int(self.guarantee.m or 0)

    @property
    def n(self) -> int:
        """Size of the joint alphabet ``prod N_k``."""
        return self.guarantee.n

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(labs) for labs in self.column_labels)

    @property
    def confidence(self) -> str:
        """The confidence-set method."""
        return str(self.guarantee.method)

    @property
    def set(self) -> UncertaintySet:
        """The set the guarantee covers (an :class:`~pmlkit.sets.UncertaintySet`)."""
        return self.guarantee.set

    @property
    def beta(self) -> float | None:
        """The radius of the joint l1-ball (``None`` for other sets)."""
        s = self.guarantee.set
        return float(s.radius) if isinstance(s, L1Ball) else None

    @property
    def description(self) -> str:
        """How the set's coverage is justified."""
        return self.guarantee.statement

    @property
    def sum_of_column_eps(self) -> float:
        """``sum_k column_eps[k]``: NOT a guarantee (shown to compare)."""
        return float(sum(self.column_eps))

    def counts_array(self) -> np.ndarray:
        """The joint counts, dense and row-major (length :attr:`n`)."""
        out = np.zeros(self.n, dtype=np.int64)
        for i, c in self.counts:
            out[i] = c
        return out

    @property
    def estimate(self) -> tuple[float, ...]:
        """The empirical joint distribution (row-major); ``()`` beyond 100,000 tuples."""
        if self.n > _SMALL:
            return ()
        return tuple(float(x) for x in self.counts_array() / self.m)

    @property
    def categories(self) -> tuple[tuple[Any, ...], ...]:
        """The joint alphabet's tuples (row-major); ``()`` beyond 100,000 tuples."""
        if self.n > _SMALL:
            return ()
        return tuple(itertools.product(*self.column_labels))

    # -- the file form ----------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JointGuarantee):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """The stable serialised form (module docstring)."""
        return {
            "schema": self.SCHEMA, "version": self.VERSION,
            "guarantee": self.guarantee.to_dict(),
            "columns": list(self.columns),
            "column_labels": [list(labs) for labs in self.column_labels],
            "kind": self.kind,
            "counts": {"index": [i for i, _ in self.counts],
                       "count": [c for _, c in self.counts]},
            "column_eps_not_a_guarantee": list(self.column_eps),
            "worst_output": None if self.worst_output is None else list(self.worst_output),
            "warning": self.warning,
        }

    @classmethod
    def from_dict(cls, d: Any) -> JointGuarantee:
        """Read :meth:`to_dict` strictly (every field validated again). The result is a
        claim until :meth:`verify` re-checks it against the mechanisms."""
        keys = {"guarantee", "columns", "column_labels", "kind", "counts",
                "column_eps_not_a_guarantee", "worst_output", "warning"}
        if not isinstance(d, Mapping):
            raise ValidationError(f"joint guarantee must be a mapping, got {type(d).__name__}")
        if d.get("schema") != cls.SCHEMA:
            raise ValidationError(
                f"joint guarantee 'schema' must be {cls.SCHEMA!r}, got {fmt(d.get('schema'))}")
        v = d.get("version")
        if isinstance(v, bool) or not isinstance(v, int) or v != cls.VERSION:
            raise ValidationError(
                f"joint guarantee 'version' must be {cls.VERSION}, got {fmt(v)}")
        given = set(d) - {"schema", "version"}
        if given != keys:
            raise ValidationError(
                f"joint guarantee fields do not match version {cls.VERSION}: missing "
                f"{sorted(keys - given)}, unexpected {sorted(given - keys)}")
        counts = d["counts"]
        if not isinstance(counts, Mapping) or set(counts) != {"index", "count"} or \
                not isinstance(counts["index"], list) or not isinstance(counts["count"], list) \
                or len(counts["index"]) != len(counts["count"]):
            raise ValidationError(
                "joint guarantee 'counts' must be {'index': [...], 'count': [...]} of equal "
                "lengths")
        for name in ("columns", "column_labels", "column_eps_not_a_guarantee"):
            if not isinstance(d[name], list):
                raise ValidationError(f"joint guarantee {name!r} must be a list, got "
                                      f"{fmt(d[name])}")
        if not isinstance(d["column_labels"], list) or not all(
                isinstance(x, list) for x in d["column_labels"]):
            raise ValidationError("joint guarantee 'column_labels' must be a list of lists")
        if d["worst_output"] is not None and not isinstance(d["worst_output"], list):
            raise ValidationError("joint guarantee 'worst_output' must be a list or null")
        return cls(guarantee=PMLGuarantee.from_dict(d["guarantee"]),
                   columns=tuple(d["columns"]),
                   column_labels=tuple(tuple(x) for x in d["column_labels"]),
                   kind=d["kind"],
                   counts=tuple(zip(counts["index"], counts["count"], strict=True)),
                   column_eps=tuple(d["column_eps_not_a_guarantee"]),
                   worst_output=None if d["worst_output"] is None
                   else tuple(d["worst_output"]),
                   warning=d["warning"])

    # -- the re-check in the model ----------------------------------------------------
    def rebuilt_set(self) -> UncertaintySet:
        """The set the recorded counts, delta and method give (the library's own
        confidence-set builder), which the recorded set must equal."""
        from ..confidence import confidence_set

        counts = self.counts_array()
        method = self.confidence
        try:
            if self.kind == "exact":
                return confidence_set(counts, self.delta, confidence=method).set
            k = len(self.columns)
            return MarginalSets([confidence_set(c, self.delta / k, confidence=method).set
                                 for c in marginal_counts(counts, self.sizes)])
        except PMLError as exc:
            raise DataError(
                f"the joint guarantee's set cannot be rebuilt from its counts, delta = "
                f"{self.delta!r} and method {method!r}: {exc}") from exc

    def worst_case(self, mechanisms: Any) -> float:
        """The certificate recomputed: the exact worst case of the product of
        ``mechanisms`` (matched to the columns by their labels) over :attr:`set`, or the
        chain-rule bound over the marginal sets; for a :class:`pmlkit.joint.JointRelease`
        (one mechanism on the joint alphabet), its exact worst case over :attr:`set`."""
        if hasattr(mechanisms, "output_tuples") and hasattr(mechanisms, "column_labels"):
            # one mechanism on the joint alphabet (a pmlkit.joint.JointRelease)
            from ..worstcase import leakage_capacity

            if tuple(mechanisms.columns) != self.columns or \
                    tuple(mechanisms.column_labels) != self.column_labels:
                raise ValidationError(
                    "the joint release acts on columns or labels other than the guarantee's")
            if self.kind != "exact":
                raise ValidationError("a joint release is certified exactly, not by a bound")
            return float(leakage_capacity(mechanisms.mechanism.matrix, self.set))
        prod = align_factors(mechanisms, self.column_labels, self.columns)
        if self.kind == "exact":
            best, _ = product_worst(prod, self.set)
            return math.inf if best == math.inf else max(0.0, best)
        sets = list(self.set.sets)  # type: ignore[attr-defined]
        order = sorted(range(len(sets)), key=lambda i: -prod.input_sizes[i])
        return chain_rule_bound(ProductMechanism(tuple(prod.factors[i] for i in order)),
                                [sets[i] for i in order])

    def verify(self, mechanisms: Any) -> JointGuarantee:
        """Re-check the guarantee for ``mechanisms`` (one per column, matched by labels):
        the recorded set must be the one its counts, delta and method give, and the worst
        case over it must not exceed the certified eps (an infinite or NaN worst case
        never passes). Returns ``self``; raises :class:`~pmlkit.errors.DataError` naming
        what does not hold.

        Examples
        --------
        >>> import math
        >>> import pmlkit
        >>> rr = pmlkit.randomized_response(2, math.log(3))
        >>> keep = pmlkit.Mechanism([[1.0, 0.0], [0.0, 1.0]])
        >>> g = pmlkit.joint_guarantee([rr, rr], {"x": [0, 1] * 45, "y": [0, 0, 1] * 30},
        ...                            0.05)
        >>> g.verify([rr, keep])
        Traceback (most recent call last):
        ...
        pmlkit.errors.DataError: the joint guarantee does not hold for these mechanisms: ...
        """
        if self.m > 2**53:
            raise DataError(f"the joint guarantee's m = {self.m} is too large to be a sample "
                            "size (at most 2^53)")
        expected = self.rebuilt_set()
        if not same_numbers(to_jsonable(self.set.to_dict()), to_jsonable(expected.to_dict())):
            raise DataError(
                f"the joint guarantee's set is not the one the {self.confidence!r} method "
                f"gives for its counts (m = {self.m}) at delta = {self.delta!r}: the set was "
                "edited, so the guarantee does not follow")
        try:
            value = self.worst_case(mechanisms)
        except ValidationError as exc:
            raise DataError(f"the joint guarantee does not apply to these mechanisms: "
                            f"{exc}") from exc
        if not math.isfinite(value) or surely_exceeds(value, self.eps) \
                or value > self.certified_eps + CERTIFY_TOL:
            raise DataError(
                f"the joint guarantee does not hold for these mechanisms: their worst case "
                f"over its set is {value!r}, it promises {self.eps!r} (certified worst case "
                f"{self.certified_eps!r})")
        return self

    # -- display ----------------------------------------------------------------------
    def __str__(self) -> str:
        cols = ", ".join(f"{c} (N={s})" for c, s in zip(self.columns, self.sizes,
                                                         strict=True))
        lines = [
            f"({up_text(self.eps)}, {self.delta:.3g})-PML guarantee for the whole record "
            f"[{self.kind}]",
            f"  columns {cols}; joint alphabet N = {self.n}; m = {self.m} reference records",
            f"  certified worst-case eps of the joint release = {up_text(self.certified_eps, 9)}",
        ]
        if self.column_eps:
            per = ", ".join(f"{c}: {up_text(e)}" for c, e in zip(self.columns, self.column_eps,
                                                             strict=True))
            lines.append(f"  per-column eps (each over its own marginal set): {per}; their "
                         f"sum {self.sum_of_column_eps:.6g} is NOT a guarantee")
        lines.append(f"  warning: {self.warning}")
        if self.worst_output is not None:
            lines.append(f"  worst output tuple: {self.worst_output!r}")
        if self.description:
            lines.append(f"  set coverage: {self.description}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"JointGuarantee(eps={self.eps!r}, delta={self.delta!r}, m={self.m}, "
                f"columns={self.columns!r}, sizes={self.sizes!r}, kind={self.kind!r})")

    def _repr_html_(self) -> str:
        """Notebook view: the guarantee as a table, with its non-additivity warning."""
        from .._html import joint_guarantee_html

        return joint_guarantee_html(self)


def _sparse(counts: np.ndarray) -> tuple[tuple[int, int], ...]:
    nz = np.flatnonzero(counts)
    return tuple((int(i), int(counts[i])) for i in nz)


def make_joint_guarantee(*, columns: Sequence[str], column_labels: Sequence[Sequence[Any]],
                         counts: np.ndarray, uset: UncertaintySet, delta: float,
                         method: str, statement: str, certified_eps: float, kind: str,
                         column_eps: Sequence[float] = (),
                         worst_output: Sequence[Any] | None = None,
                         warning: str = NOT_ADDITIVE) -> JointGuarantee:
    """Assemble a :class:`JointGuarantee` (eps = the certified eps raised by its rounding
    margin, :func:`pmlkit._validation.safe_upper`); an infinite worst case
    is refused with :class:`~pmlkit.errors.CertificationError` (no finite guarantee).

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit.sets import L1Ball
    >>> g = make_joint_guarantee(columns=["x", "y"], column_labels=[[0, 1], [0, 1]],
    ...                          counts=np.array([5, 0, 0, 5]),
    ...                          uset=L1Ball([0.5, 0, 0, 0.5], 0.3), delta=0.1,
    ...                          method="l1", statement="given", certified_eps=0.4,
    ...                          kind="exact")
    >>> g.eps >= 0.4, g.m
    (True, 10)
    """
    if not math.isfinite(certified_eps):
        raise CertificationError(
            f"the release of columns {', '.join(columns)} has no finite PML guarantee over "
            f"the set ({KINDS[kind]}): its worst case is {certified_eps!r}, an output can "
            "occur that some distribution in the set makes arbitrarily revealing")
    m = int(np.asarray(counts).sum())
    # promise the computed worst case raised by its rounding margin (round against the
    # guarantee, never for it)
    g = PMLGuarantee(eps=safe_upper(certified_eps), set=uset, certified_eps=certified_eps,
                     basis="sample", delta=delta, method=method, m=m, statement=statement)
    return JointGuarantee(guarantee=g, columns=tuple(columns),
                          column_labels=tuple(tuple(x) for x in column_labels),
                          kind=kind, counts=_sparse(np.asarray(counts)),
                          column_eps=tuple(column_eps),
                          worst_output=None if worst_output is None else tuple(worst_output),
                          warning=warning)


def check_confidence(confidence: Any) -> str:
    """A confidence-set method name, validated.

    Examples
    --------
    >>> check_confidence("box-cp")
    'box-cp'
    """
    from ..confidence import METHODS

    if not isinstance(confidence, str) or confidence not in (*METHODS, "l1-box"):
        raise ValidationError(
            f"confidence must be one of {', '.join(METHODS)}, got {fmt(confidence)}")
    return confidence


def _column_eps(prod: ProductMechanism, counts: np.ndarray, delta: float,
                confidence: str) -> tuple[float, ...]:
    """Each column's exact worst case over its own marginal set at ``delta``."""
    from ..confidence import confidence_set
    from ..worstcase import leakage_capacity

    out: list[float] = []
    for f, c in zip(prod.factors, marginal_counts(counts, prod.input_sizes), strict=True):
        if c.size < 2:  # a one-letter column leaks nothing
            out.append(0.0)
            continue
        cs = confidence_set(c, delta, confidence=confidence)
        out.append(float(leakage_capacity(f.matrix, cs.set)))
    return tuple(out)


def _labels_of(prod: ProductMechanism) -> list[tuple[Any, ...]]:
    return [tuple(f.input_labels) for f in prod.factors]


def joint_guarantee(mechanisms: Any, reference: Any, delta: float, *,
                    columns: Sequence[Any] | None = None,
                    confidence: str = "l1") -> JointGuarantee:
    """Exact (eps, delta)-PML guarantee of releasing several columns of each record.

    1. Count the joint reference sample on the product alphabet ``N = prod N_k`` (every
       value must be an input label of its column's mechanism; nulls are refused).
    2. Build the confidence set on the joint alphabet with
       :func:`pmlkit.confidence.confidence_set` (``confidence="l1"``: the Weissman ball
       with ``N = prod N_k``). It holds the true joint distribution with probability
       ``>= 1 - delta``.
    3. Return the exact worst case of the product mechanism over that set
       (:func:`joint_capacity`).

    Parameters
    ----------
    mechanisms
        One mechanism per column (a sequence, or a :class:`ProductMechanism`).
    reference
        The joint reference sample: a DataFrame (``columns`` selects and orders the
        columns; default all), a mapping name -> column, a sequence of columns or an
        ``m x K`` array.
    delta
        Failure probability in ``(0, 1]``.
    columns
        Column names, one per mechanism, in the same order.
    confidence
        A :data:`pmlkit.confidence.METHODS` name.

    Returns
    -------
    JointGuarantee
        ``kind="exact"``; ``column_eps`` holds the per-column values for comparison.

    Raises
    ------
    CertificationError
        When the worst case over the set is infinite (no finite guarantee).

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> ref = {"x": [0, 1] * 50, "y": [0] * 60 + [1] * 40}
    >>> g = pmlkit.joint_guarantee([rr, rr], ref, 0.05)
    >>> g.kind, g.m, g.n, g.certified_eps <= 2 * math.log(3)  # never above the LDP level
    ('exact', 100, 4, True)
    """
    from ..confidence import confidence_set

    prod = as_product(mechanisms)
    d = check_delta(delta)
    conf = check_confidence(confidence)
    labels = _labels_of(prod)
    names, counts, _ = joint_counts(labels, reference, columns)
    if prod.n_inputs < 2:
        raise ValidationError("the joint alphabet must have at least 2 categories")
    cs: ConfidenceSet = confidence_set(counts, d, confidence=conf)
    best, j = product_worst(prod, cs.set)
    cert = math.inf if best == math.inf else max(0.0, best)
    worst = tuple(f.output_labels[int(i)] for f, i in
                  zip(prod.factors, np.unravel_index(j, prod.output_sizes), strict=True))
    return make_joint_guarantee(
        columns=names, column_labels=labels, counts=counts, uset=cs.set, delta=d,
        method=cs.method, statement=cs.description, certified_eps=cert, kind="exact",
        column_eps=_column_eps(prod, counts, d, conf), worst_output=worst)


# --------------------------------------------------------------------------------------
# the chain-rule bound from marginal sets
# --------------------------------------------------------------------------------------

def _frechet_box(sets: Sequence[UncertaintySet]) -> Box:
    return MarginalSets(list(sets)).frechet_box


def chain_rule_bound(mechanisms: Any, marginal_sets: Sequence[Any]) -> float:
    """Upper bound on the worst-case PML of the product over every joint distribution whose
    marginals lie in ``marginal_sets`` (chain rule for PML; derivation in
    ``docs/joint.md``). A bound, never the exact value.

    With ``A`` the first column and ``B`` the others,
    ``pml((y_a, y_b)) = pml_A(y_a) + pml_{B | y_a}(y_b)``, and the unnormalised posterior
    ``S(b) = P(Y_A = y_a, B = b)`` satisfies ``P_B(b) min_a W_A[a, y_a] <= S(b) <=
    P_B(b) max_a W_A[a, y_a]`` with ``sum_b S(b) = P_{Y_A}(y_a) >= q(y_a) = min_{Q in S_A}
    Q . W_A[:, y_a]``. The worst case is taken consistently at ``q(y_a)`` (the minimum of
    ``S . w`` only grows with the total mass), which gives

    ``bound = max_{y_a} [ log(max_a W_A[a, y_a] / q(y_a)) + C(W_B, box(y_a)) ]``,
    ``box(y_a) = { R in simplex : lo_B(b) min_a W_A[a,y_a] / q(y_a) <= R(b) <=
    hi_B(b) max_a W_A[a,y_a] / q(y_a) }``

    with ``[lo_B, hi_B]`` the exact coordinate bounds of the set of ``B`` (for several
    columns in ``B``, Frechet bounds from their marginal sets). It is at most
    ``eps_A + max_{y_a} C(W_B, box(y_a))``.

    Parameters
    ----------
    mechanisms
        One mechanism per column (sequence or :class:`ProductMechanism`).
    marginal_sets
        One :mod:`pmlkit.sets` set (or ``ConfidenceSet``) per column, over its alphabet.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> from pmlkit.sets import VertexSet
    >>> simplex = VertexSet([[1, 0], [0, 1]])
    >>> round(pmlkit.chain_rule_bound([rr, rr], [simplex, simplex]), 6)  # 2 log 3 here
    2.197225
    """
    from .product import joint_capacity

    prod = as_product(mechanisms)
    k = len(prod.factors)
    if isinstance(marginal_sets, UncertaintySet) or not isinstance(marginal_sets, Sequence):
        raise ValidationError(
            f"marginal_sets must be a sequence of one set per column, got "
            f"{fmt(marginal_sets)}")
    if len(marginal_sets) != k:
        raise ValidationError(
            f"marginal_sets has {len(marginal_sets)} sets but there are {k} mechanisms")
    sets = [check_joint_set(s, f.n_inputs) for s, f in zip(marginal_sets, prod.factors,
                                                            strict=True)]
    if k == 1:
        return joint_capacity(prod, sets[0])
    return _chain_bound(prod, sets)


def _chain_bound(prod: ProductMechanism, sets: list[UncertaintySet]) -> float:
    from ..worstcase import column_values

    wa = prod.factors[0].matrix
    rest = ProductMechanism(prod.factors[1:])
    box_b = _frechet_box(sets[1:])
    lo_b, hi_b = box_b.lower, box_b.upper
    vals_a = column_values(wa, sets[0])  # log max_a W_A - log q(y_a); -inf if impossible
    qmin = sets[0].min_linear(wa)
    top, bottom = wa.max(axis=0), wa.min(axis=0)
    best = -math.inf
    for ya in np.flatnonzero(vals_a > -math.inf):
        if vals_a[ya] == math.inf or qmin[ya] <= 0:
            return math.inf
        lower = np.clip(lo_b * (bottom[ya] / qmin[ya]), 0.0, 1.0)
        upper = np.clip(hi_b * (top[ya] / qmin[ya]), 0.0, 1.0)
        s = float(lower.sum())
        if s > 1.0:  # rounding only (bottom <= q and sum lo_B <= 1): stay inside the simplex
            lower = lower / s
        cb, _ = product_worst(rest, Box(lower, np.maximum(upper, lower)))
        best = max(best, float(vals_a[ya]) + cb)
        if best == math.inf:
            return math.inf
    return max(0.0, best)


def bound_guarantee(prod: ProductMechanism, names: Sequence[str], counts: np.ndarray,
                    delta: float, conf: str, *, column_eps: Sequence[float] = ()
                    ) -> JointGuarantee:
    """The chain-rule-bound guarantee: one set per column at ``delta / K`` (union bound),
    the column with the largest alphabet playing ``A``.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))
    >>> prod = pmlkit.product_mechanism(rr, rr)
    >>> b = bound_guarantee(prod, ["x", "y"], np.array([30, 20, 10, 40]), 0.05, "l1")
    >>> b.kind, b.set.sizes
    ('chain-rule bound', (2, 2))
    """
    from ..confidence import confidence_set

    k = len(prod.factors)
    margs = marginal_counts(counts, prod.input_sizes)
    if any(c.size < 2 for c in margs):
        raise ValidationError("every column must have at least 2 categories for the bound")
    css = [confidence_set(c, delta / k, confidence=conf) for c in margs]
    order = sorted(range(k), key=lambda i: -prod.input_sizes[i])
    if k == 1:  # one column: its own exact worst case over its set (nothing to chain)
        from .product import joint_capacity

        bound = joint_capacity(prod, css[0].set)
    else:
        bound = _chain_bound(ProductMechanism(tuple(prod.factors[i] for i in order)),
                             [css[i].set for i in order])
    return make_joint_guarantee(
        columns=names, column_labels=_labels_of(prod), counts=counts,
        uset=MarginalSets([cs.set for cs in css]), delta=delta, method=css[0].method,
        statement=(f"one set per column at delta/{k} each (union bound); "
                   + "; ".join(cs.description for cs in css)),
        certified_eps=bound, kind="chain-rule bound", column_eps=column_eps)


def marginal_bound(mechanisms: Any, reference: Any, delta: float, *,
                   columns: Sequence[Any] | None = None,
                   confidence: str = "l1") -> JointGuarantee:
    """(eps, delta)-PML bound for the joint release from the marginal sets alone.

    For joint alphabets too large to enumerate: each column's set is built from its own
    marginal counts at ``delta / K`` (union bound: all K hold with probability
    ``>= 1 - delta``), and :func:`chain_rule_bound` bounds the worst case over every joint
    distribution with those marginals. The column with the largest alphabet plays ``A``
    (its set enters exactly), the others ``B``. Labelled ``kind="chain-rule bound"``; its
    set is a :class:`~pmlkit.sets.MarginalSets`.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> ref = {"x": [0, 1] * 50, "y": [0] * 60 + [1] * 40}
    >>> b = pmlkit.marginal_bound([rr, rr], ref, 0.05)
    >>> exact = pmlkit.joint_guarantee([rr, rr], ref, 0.05)
    >>> b.kind, b.certified_eps >= exact.certified_eps
    ('chain-rule bound', True)
    """
    prod = as_product(mechanisms)
    if len(prod.factors) == 1:  # one column: its exact worst case
        return joint_guarantee(prod, reference, delta, columns=columns, confidence=confidence)
    d = check_delta(delta)
    conf = check_confidence(confidence)
    names, counts, _ = joint_counts(_labels_of(prod), reference, columns)
    return bound_guarantee(prod, names, counts, d, conf,
                           column_eps=_column_eps(prod, counts, d, conf))

