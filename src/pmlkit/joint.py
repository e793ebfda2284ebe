"""Several columns of one person, and repeated releases: a guarantee for the whole record.

PML depends on the data distribution, so guarantees computed column by column do **not**
add up: with a correlated joint distribution each column's mechanism can be eps_i-PML for
its own marginal while the pair of outputs leaks more than ``sum_i eps_i`` (see
``docs/joint.md`` for a two-bit example where ``log 2 + log 2`` becomes ``log(16/3)``).
This module computes what the whole release leaks.

- :func:`product_mechanism`: the mechanism on the record ``X = (A, B, ...)`` when each column
  goes through its own mechanism with independent randomness: the Kronecker product
  ``W[(a, b), (y_a, y_b)] = W_A[a, y_a] W_B[b, y_b]``, labels as tuples.
- :func:`joint_capacity`, :func:`joint_leakage`: its exact worst-case PML over a set of joint
  distributions, or at one joint distribution, computed block by block from the factors
  (the dense ``N x M`` product is never built; joint alphabets of a few thousand work).
- :func:`joint_guarantee`: joint reference sample -> confidence set on the joint alphabet
  -> exact (eps, delta)-PML guarantee for the record (:class:`JointGuarantee`).
- :func:`chain_rule_bound`, :func:`marginal_bound`: an upper bound from the marginal sets
  alone (chain rule for PML, derived in ``docs/joint.md``), labelled as a bound.
- :func:`design_joint`: given an overall (eps, delta) for the record, design on the joint
  alphabet when it is small, else per-column designs whose eps are searched so that the
  exact joint guarantee meets the target (:class:`JointDesign` reports the split).
- :func:`release_leakage`, :func:`repeated_leakage`: the same column released several times
  with fresh randomness (the same mechanism k times, or re-runs with other mechanisms),
  exactly, over type classes.
- :func:`pmlkit.audit.audit_joint` (also reachable as ``pmlkit.joint.audit_joint``): a
  statistical audit of the joint guarantee and the bound.

Everything here goes beyond the paper, which treats one column released once.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ._validation import as_distribution, check_count, check_delta, check_eps, fmt
from .errors import DataError, PMLWarning, TooLargeError, ValidationError
from .mechanism import Mechanism, as_matrix
from .sets import Box, L1Ball, UncertaintySet
from .worstcase import CERTIFY_TOL

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

__all__ = [
    "JointDesign",
    "JointGuarantee",
    "ProductMechanism",
    "chain_rule_bound",
    "design_joint",
    "joint_capacity",
    "joint_guarantee",
    "joint_leakage",
    "marginal_bound",
    "product_mechanism",
    "release_leakage",
    "repeated_leakage",
]

#: Entries per block of product columns (bounds the memory of :func:`joint_capacity`).
_BLOCK = 2**20
#: Largest dense product matrix :attr:`ProductMechanism.matrix` builds (entries).
DENSE_MAX = 2**24
#: Largest number of output classes :func:`release_leakage` enumerates.
MAX_RELEASE_CLASSES = 2_000_000
#: Joint alphabets up to this size are designed directly (exact sub-convex designer).
JOINT_DESIGN_MAX_N = 12
#: Work (N x M of the product) up to which :func:`design_joint` certifies the split exactly.
EXACT_WORK_MAX = 4 * 10**8
#: Slack of an eps comparison: the certification tolerance of pmlkit (one owner).
EPS_TOL = CERTIFY_TOL

_NOT_ADDITIVE = ("per-column eps do not add up: PML depends on the joint distribution, so "
                 "only the joint value certifies the release of the whole record")


# --------------------------------------------------------------------------------------
# the product mechanism
# --------------------------------------------------------------------------------------

def _as_mech(m: Any, i: int) -> Mechanism:
    if isinstance(m, Mechanism):
        return m
    return Mechanism(as_matrix(m, f"mechanisms[{i}]"))


@dataclass(frozen=True, eq=False)
class ProductMechanism:
    """The mechanism on a record whose columns go through independent mechanisms.

    ``W[(x_1..x_K), (y_1..y_K)] = prod_k W_k[x_k, y_k]`` (Kronecker product, rows and columns
    in row-major order of the tuples, as :func:`numpy.kron`). The factors are stored; the
    dense matrix is built only on request (:attr:`matrix`, refused beyond
    :data:`DENSE_MAX` entries), the worst-case computations work block by block.

    Attributes
    ----------
    factors
        The per-column :class:`~pmlkit.Mechanism` objects.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> prod = pmlkit.product_mechanism(rr, rr)
    >>> prod.shape, len(prod.factors), float(prod.matrix[0, 0])  # 3/4 * 3/4
    ((4, 4), 2, 0.5625)
    """

    factors: tuple[Mechanism, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.factors, tuple | list) or not self.factors:
            raise ValidationError(
                f"factors must be a non-empty tuple of Mechanism objects, got {fmt(self.factors)}")
        for i, f in enumerate(self.factors):
            if not isinstance(f, Mechanism):
                raise ValidationError(
                    f"factors[{i}] must be a pmlkit.Mechanism, got {type(f).__name__}; "
                    "product_mechanism(...) accepts arrays too")
        object.__setattr__(self, "factors", tuple(self.factors))

    @property
    def input_sizes(self) -> tuple[int, ...]:
        return tuple(f.n_inputs for f in self.factors)

    @property
    def output_sizes(self) -> tuple[int, ...]:
        return tuple(f.n_outputs for f in self.factors)

    @property
    def shape(self) -> tuple[int, int]:
        """``(prod N_k, prod M_k)``."""
        return math.prod(self.input_sizes), math.prod(self.output_sizes)

    @property
    def n_inputs(self) -> int:
        return self.shape[0]

    @property
    def n_outputs(self) -> int:
        return self.shape[1]

    @property
    def input_labels(self) -> tuple[tuple[Any, ...], ...]:
        """Row labels ``(x_1, ..., x_K)`` in row-major order."""
        return tuple(itertools.product(*(f.input_labels for f in self.factors)))

    @property
    def output_labels(self) -> tuple[tuple[Any, ...], ...]:
        """Column labels ``(y_1, ..., y_K)`` in row-major order."""
        return tuple(itertools.product(*(f.output_labels for f in self.factors)))

    @property
    def matrix(self) -> np.ndarray:
        """The dense Kronecker product (read-only); :class:`TooLargeError` beyond
        :data:`DENSE_MAX` entries."""
        n, m = self.shape
        if n * m > DENSE_MAX:
            raise TooLargeError(
                f"the dense product matrix would have {n} x {m} = {n * m} entries (more "
                f"than {DENSE_MAX}); use joint_capacity / joint_leakage, which work from "
                "the factors")
        out = np.ones((1, 1))
        for f in self.factors:
            out = np.kron(out, f.matrix)
        out.setflags(write=False)
        return out

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self.matrix, dtype=dtype, copy=True)

    def columns(self, index: Any) -> np.ndarray:
        """Columns ``index`` (flat output indices) of the product, ``(N, len(index))``."""
        idx = np.asarray(index, dtype=np.int64).ravel()
        multi = np.unravel_index(idx, self.output_sizes)
        col = np.ones((1, idx.size))
        for f, j in zip(self.factors, multi, strict=True):
            col = (col[:, None, :] * f.matrix[:, j][None, :, :]).reshape(-1, idx.size)
        return col

    def __repr__(self) -> str:
        sizes = " (x) ".join(f"{f.n_inputs}x{f.n_outputs}" for f in self.factors)
        return f"ProductMechanism({sizes})"


def _constant_mechanism(categories: Sequence[Any]) -> Mechanism:
    """The mechanism that releases nothing (one output): it leaks nothing about any
    distribution, so its guarantee is eps = 0 for every distribution (basis ``"all"``), the
    certified eps computed over the simplex."""
    from .guarantee import PMLGuarantee, Provenance
    from .worstcase import leakage_capacity

    w = np.ones((len(categories), 1))
    simplex = PMLGuarantee.for_all_distributions(len(categories), eps=0.0,
                                                 certified_eps=0.0).set
    cert = float(leakage_capacity(w, simplex))
    g = PMLGuarantee.for_all_distributions(len(categories), eps=cert, certified_eps=cert)
    return Mechanism(w, tuple(categories), guarantee=g,
                     provenance=Provenance(designer="design_joint",
                                           method="release nothing (no split certified)"))


def _is_matrix(obj: Any) -> bool:
    """Whether a list/tuple is one matrix (a list of rows of numbers), not a list of
    mechanisms."""
    try:
        return np.asarray(obj, dtype=np.float64).ndim == 2
    except (TypeError, ValueError):
        return False


def product_mechanism(*mechanisms: Any) -> ProductMechanism:
    """The mechanism on the record when each column goes through its own mechanism with
    independent randomness: ``W_1 (x) W_2 (x) ... (x) W_K`` (Kronecker product).

    Parameters
    ----------
    *mechanisms
        One per column: :class:`~pmlkit.Mechanism` or row-stochastic 2-D array-like
        (labels ``0..N-1``). A :class:`ProductMechanism` argument is flattened into its
        factors.

    Returns
    -------
    ProductMechanism
        Rows ``(x_1, ..., x_K)``, columns ``(y_1, ..., y_K)`` (tuples of the factors'
        labels), entries ``prod_k W_k[x_k, y_k]``.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> pmlkit.product_mechanism(rr, rr).matrix.round(4).tolist()[0]
    [0.5625, 0.1875, 0.1875, 0.0625]
    """
    if len(mechanisms) == 1 and isinstance(mechanisms[0], list | tuple) \
            and not _is_matrix(mechanisms[0]):
        mechanisms = tuple(mechanisms[0])  # product_mechanism([W_A, W_B])
    if not mechanisms:
        raise ValidationError("product_mechanism needs at least 1 mechanism, got none")
    factors: list[Mechanism] = []
    for i, m in enumerate(mechanisms):
        if isinstance(m, ProductMechanism):
            factors.extend(m.factors)
        else:
            factors.append(_as_mech(m, i))
    return ProductMechanism(tuple(factors))


# --------------------------------------------------------------------------------------
# exact worst case of a product
# --------------------------------------------------------------------------------------

def _as_product(mechanisms: Any) -> ProductMechanism:
    if isinstance(mechanisms, ProductMechanism):
        return mechanisms
    if isinstance(mechanisms, Mechanism) or (
            isinstance(mechanisms, np.ndarray) and mechanisms.ndim == 2):
        return product_mechanism(mechanisms)
    if isinstance(mechanisms, Sequence) and not isinstance(mechanisms, str):
        if _is_matrix(mechanisms):  # one matrix as nested lists: one column
            return product_mechanism(np.asarray(mechanisms, dtype=np.float64))
        return product_mechanism(*mechanisms)
    raise ValidationError(
        "mechanisms must be a ProductMechanism or a sequence of mechanisms (one per column), "
        f"got {fmt(mechanisms)}")


def _unwrap_set(uncertainty_set: Any, n: int) -> UncertaintySet:
    from .worstcase import check_uncertainty_set

    return check_uncertainty_set(uncertainty_set, n,
                                 inputs="the product mechanism has {n} inputs (the joint "
                                        "alphabet)")


def _product_worst(prod: ProductMechanism, uset: UncertaintySet) -> tuple[float, int]:
    """``(max_j value_j, argmax j)`` of the per-column worst-case PML of the product
    (``-inf`` if no column can occur), block by block."""
    from .worstcase import column_values

    n, m = prod.shape
    step = max(1, _BLOCK // max(n, 1))
    best, arg = -math.inf, 0
    for start in range(0, m, step):
        idx = np.arange(start, min(m, start + step))
        vals = column_values(prod.columns(idx), uset)
        k = int(np.argmax(vals))
        if vals[k] > best:
            best, arg = float(vals[k]), int(idx[k])
        if best == math.inf:
            break
    return best, arg


def joint_capacity(mechanisms: Any, uncertainty_set: Any) -> float:
    """Exact worst-case PML of the product mechanism over a set of joint distributions.

    ``C(W, S) = max_{(y_1..y_K)} [ sum_k log max_x W_k[x, y_k] - log min_{Q in S} Q . w ]``
    with ``w = W_1[:, y_1] (x) ... (x) W_K[:, y_K]`` (the local leakage capacity of the
    product, Def. localcap, with the exact greedy of :mod:`pmlkit.sets`), computed from the
    factors in blocks of product columns. ``inf`` when a column that can occur has
    probability 0 somewhere in the set.

    Parameters
    ----------
    mechanisms
        A :class:`ProductMechanism` or a sequence of per-column mechanisms.
    uncertainty_set
        A :mod:`pmlkit.sets` set (or a ``ConfidenceSet``) over the joint alphabet, in
        row-major order of the tuples (as :attr:`ProductMechanism.input_labels`).

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> from pmlkit.sets import VertexSet
    >>> simplex = VertexSet([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    >>> round(pmlkit.joint_capacity([rr, rr], simplex), 6)  # log(0.5625 / 0.0625) = 2 log 3
    2.197225
    """
    prod = _as_product(mechanisms)
    uset = _unwrap_set(uncertainty_set, prod.n_inputs)
    best, _ = _product_worst(prod, uset)
    return math.inf if best == math.inf else max(0.0, best)


def joint_leakage(mechanisms: Any, prior: ArrayLike) -> float:
    """Exact ``eps_min`` of the product mechanism at one joint distribution.

    ``prior`` is the joint distribution, flat in row-major order or as a K-dimensional
    array of shape ``(N_1, ..., N_K)``. This is the true leakage of the whole record.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> round(pmlkit.joint_leakage([rr, rr], [0.25] * 4), 6)  # log(0.5625 / 0.25)
    0.81093
    """
    prod = _as_product(mechanisms)
    try:
        p = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"prior must be an array of numbers, got {fmt(prior)}") from exc
    if p.ndim > 1:
        if p.shape != prod.input_sizes:
            raise ValidationError(
                f"prior has shape {p.shape} but the mechanisms' input sizes are "
                f"{prod.input_sizes}")
        p = p.ravel()
    p = as_distribution(p, "prior")
    if p.size != prod.n_inputs:
        raise ValidationError(
            f"prior has {p.size} entries but the joint alphabet has {prod.n_inputs}")
    best, _ = _product_worst(prod, L1Ball(p, 0.0))
    return math.inf if best == math.inf else max(0.0, best)


# --------------------------------------------------------------------------------------
# reference samples -> joint counts
# --------------------------------------------------------------------------------------

def _reference_columns(reference: Any, columns: Sequence[Any] | None, k: int
                       ) -> tuple[list[str], list[Any]]:
    """``(names, column data)`` of the K columns of a reference sample."""
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
    if len(data) != k or len(names) != k:
        raise ValidationError(
            f"reference has {len(data)} columns ({names!r}) but {k} mechanisms were given; "
            "pass columns=[...] naming one column per mechanism, in the same order")
    return [str(n) for n in names], data


def _joint_counts(prod: ProductMechanism, reference: Any, columns: Sequence[Any] | None
                  ) -> tuple[list[str], np.ndarray, int]:
    """Column names, joint counts over the product's input alphabet (row-major), and m.

    Every value must be an input label of its column's mechanism; nulls and unknown values
    are refused (nothing is dropped)."""
    import pandas as pd

    names, data = _reference_columns(reference, columns, len(prod.factors))
    codes = []
    m = None
    for name, col, f in zip(names, data, prod.factors, strict=True):
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
        labels = list(f.input_labels)
        c = np.asarray(pd.Index(labels, dtype=object).get_indexer(arr), dtype=np.int64)
        bad = np.flatnonzero(c < 0)
        if bad.size:
            v = arr[int(bad[0])]
            raise DataError(
                f"column {name!r} has value {v!r} (in {bad.size} row(s)) that is not an "
                f"input label of its mechanism (labels: {fmt(labels)})")
        codes.append(c)
    if not m:
        raise ValidationError("reference must hold at least 1 record, got 0")
    flat = np.ravel_multi_index(tuple(codes), prod.input_sizes)
    counts = np.bincount(flat, minlength=prod.n_inputs)
    return names, counts, int(m)


def _marginal_counts(counts: np.ndarray, sizes: tuple[int, ...]) -> list[np.ndarray]:
    c = counts.reshape(sizes)
    axes = range(len(sizes))
    return [c.sum(axis=tuple(a for a in axes if a != i)) for i in axes]


# --------------------------------------------------------------------------------------
# the guarantee
# --------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class JointGuarantee:
    """An (eps, delta)-PML guarantee for a release of several columns of each record.

    Mirrors the fields of :class:`pmlkit.design.Guarantee` that describe a guarantee
    (``eps, delta, m, n, beta, confidence, set, certified_eps, estimate, categories,
    description``) and adds what is specific to a joint release; it is a separate class
    because ``Guarantee`` describes one designed mechanism and its utility comparisons.

    With probability at least ``1 - delta`` over the reference sample, the true joint
    distribution lies in the set(s) used, and then the released tuple of outputs is
    ``certified_eps``-PML about the whole record (and so about every column and every
    function of the record).

    Attributes
    ----------
    eps
        The guaranteed eps: equal to ``certified_eps``.
    delta
        Failure probability over the reference sample.
    m, n
        Records in the reference sample; size of the joint alphabet ``prod N_k``.
    columns, sizes
        Column names and their alphabet sizes ``N_k``.
    beta
        Radius of the joint l1-ball (``None`` for other sets and for the bound).
    confidence
        The confidence-set method.
    set
        The joint set's ``to_dict()`` (exact kind); for the bound, ``{"kind": "marginals",
        "sets": [...]}``.
    certified_eps
        ``kind == "exact"``: the exact worst case of the product over the joint set;
        ``kind == "chain-rule bound"``: an upper bound on the worst case over every joint
        distribution whose marginals lie in the marginal sets.
    kind
        ``"exact"`` or ``"chain-rule bound"``.
    column_eps
        Each column's own worst-case eps over its marginal set at the same ``delta``: what
        a column-by-column analysis reports. They do not add up to a guarantee.
    worst_output
        An output tuple attaining the exact worst case (``None`` for the bound).
    estimate, categories
        The empirical joint distribution (flat, row-major) and its tuple labels; empty
        for the bound on very large alphabets.
    description
        How the set's coverage is justified.
    warning
        Why per-column eps must not be read as additive.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> g = pmlkit.joint_guarantee([rr, rr], {"x": [0, 1] * 45, "y": [0, 0, 1] * 30}, 0.05)
    >>> g.columns, g.sizes, g.eps == g.certified_eps
    (('x', 'y'), (2, 2), True)
    """

    eps: float
    delta: float
    m: int
    n: int
    columns: tuple[str, ...]
    sizes: tuple[int, ...]
    beta: float | None
    confidence: str
    set: Mapping[str, Any] = field(repr=False)
    certified_eps: float
    kind: str
    column_eps: tuple[float, ...]
    worst_output: tuple[Any, ...] | None = None
    estimate: tuple[float, ...] = field(default=(), repr=False)
    categories: tuple[tuple[Any, ...], ...] = field(default=(), repr=False)
    description: str = ""
    warning: str = _NOT_ADDITIVE

    @property
    def sum_of_column_eps(self) -> float:
        """``sum_k column_eps[k]``: NOT a guarantee (shown to compare)."""
        return float(sum(self.column_eps))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of every field."""
        return {
            "eps": self.eps, "delta": self.delta, "m": self.m, "n": self.n,
            "columns": list(self.columns), "sizes": list(self.sizes), "beta": self.beta,
            "confidence": self.confidence, "set": dict(self.set),
            "certified_eps": self.certified_eps, "kind": self.kind,
            "column_eps": list(self.column_eps),
            "sum_of_column_eps": self.sum_of_column_eps,
            "worst_output": None if self.worst_output is None else list(self.worst_output),
            "estimate": list(self.estimate),
            "categories": [list(c) for c in self.categories],
            "description": self.description, "warning": self.warning,
        }

    def __str__(self) -> str:
        cols = ", ".join(f"{c} (N={s})" for c, s in zip(self.columns, self.sizes, strict=True))
        per = ", ".join(f"{c}: {e:.6g}" for c, e in zip(self.columns, self.column_eps,
                                                         strict=True))
        lines = [
            f"({self.eps:.6g}, {self.delta:.3g})-PML guarantee for the whole record "
            f"[{self.kind}]",
            f"  columns {cols}; joint alphabet N = {self.n}; m = {self.m} reference records",
            f"  certified worst-case eps of the joint release = {self.certified_eps:.9g}",
            f"  per-column eps (each over its own marginal set): {per}; their sum "
            f"{self.sum_of_column_eps:.6g} is NOT a guarantee",
            f"  warning: {self.warning}",
        ]
        if self.worst_output is not None:
            lines.append(f"  worst output tuple: {self.worst_output!r}")
        if self.description:
            lines.append(f"  set coverage: {self.description}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Notebook view: the guarantee as a table, with its non-additivity warning."""
        from ._html import joint_guarantee_html

        return joint_guarantee_html(self)


def _check_confidence(confidence: Any) -> str:
    from .confidence import METHODS

    if not isinstance(confidence, str) or confidence not in (*METHODS, "l1-box"):
        raise ValidationError(
            f"confidence must be one of {', '.join(METHODS)}, got {fmt(confidence)}")
    return confidence


def _column_eps(prod: ProductMechanism, counts: np.ndarray, delta: float,
                confidence: str) -> tuple[tuple[float, ...], list[Any]]:
    """Each column's exact worst case over its own marginal set at ``delta``, and the sets."""
    from .confidence import confidence_set
    from .worstcase import leakage_capacity

    out: list[float] = []
    sets: list[Any] = []
    for f, c in zip(prod.factors, _marginal_counts(counts, prod.input_sizes), strict=True):
        if c.size < 2:  # a one-letter column leaks nothing
            out.append(0.0)
            sets.append(None)
            continue
        cs = confidence_set(c, delta, confidence=confidence)
        sets.append(cs)
        out.append(float(leakage_capacity(f.matrix, cs.set)))
    return tuple(out), sets


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
    prod = _as_product(mechanisms)
    d = check_delta(delta)
    conf = _check_confidence(confidence)
    names, counts, m = _joint_counts(prod, reference, columns)
    if prod.n_inputs < 2:
        raise ValidationError("the joint alphabet must have at least 2 categories")
    from .confidence import confidence_set

    cs = confidence_set(counts, d, confidence=conf)
    best, j = _product_worst(prod, cs.set)
    cert = math.inf if best == math.inf else max(0.0, best)
    col_eps, _ = _column_eps(prod, counts, d, conf)
    worst = tuple(f.output_labels[int(i)] for f, i in
                  zip(prod.factors, np.unravel_index(j, prod.output_sizes), strict=True))
    small = prod.n_inputs <= 100_000
    return JointGuarantee(
        eps=cert, delta=d, m=m, n=prod.n_inputs, columns=tuple(names),
        sizes=prod.input_sizes,
        beta=float(cs.set.radius) if isinstance(cs.set, L1Ball) else None,
        confidence=conf, set=cs.set.to_dict(), certified_eps=cert, kind="exact",
        column_eps=col_eps, worst_output=worst,
        estimate=tuple(float(x) for x in counts / m) if small else (),
        categories=prod.input_labels if small else (),
        description=cs.description)


# --------------------------------------------------------------------------------------
# the chain-rule bound from marginal sets
# --------------------------------------------------------------------------------------

def _frechet_box(sets: Sequence[UncertaintySet]) -> Box:
    """A box holding every joint distribution whose marginals lie in ``sets``:
    ``max(0, sum_k lo_k(x_k) - (K - 1)) <= Q(x) <= min_k hi_k(x_k)`` (Frechet bounds on the
    coordinate bounds of each marginal set)."""
    lo = np.zeros(1)
    hi = np.ones(1)
    for s in sets:
        l_k, h_k = s.coordinate_bounds()
        lo = (lo[:, None] + l_k[None, :]).ravel()
        hi = np.minimum(hi[:, None], h_k[None, :]).ravel()
    lo = np.clip(lo - (len(sets) - 1), 0.0, 1.0)
    return Box(lo, hi)


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
    prod = _as_product(mechanisms)
    k = len(prod.factors)
    if isinstance(marginal_sets, UncertaintySet) or not isinstance(marginal_sets, Sequence):
        raise ValidationError(
            f"marginal_sets must be a sequence of one set per column, got "
            f"{fmt(marginal_sets)}")
    if len(marginal_sets) != k:
        raise ValidationError(
            f"marginal_sets has {len(marginal_sets)} sets but there are {k} mechanisms")
    sets = [_unwrap_set(s, f.n_inputs) for s, f in zip(marginal_sets, prod.factors,
                                                        strict=True)]
    if k == 1:
        return joint_capacity(prod, sets[0])
    return _chain_bound(prod, sets)


def _chain_bound(prod: ProductMechanism, sets: list[UncertaintySet]) -> float:
    from .worstcase import column_values

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
        cb, _ = _product_worst(rest, Box(lower, np.maximum(upper, lower)))
        best = max(best, float(vals_a[ya]) + cb)
        if best == math.inf:
            return math.inf
    return max(0.0, best)


def marginal_bound(mechanisms: Any, reference: Any, delta: float, *,
                   columns: Sequence[Any] | None = None,
                   confidence: str = "l1") -> JointGuarantee:
    """(eps, delta)-PML bound for the joint release from the marginal sets alone.

    For joint alphabets too large to enumerate: each column's set is built from its own
    marginal counts at ``delta / K`` (union bound: all K hold with probability
    ``>= 1 - delta``), and :func:`chain_rule_bound` bounds the worst case over every joint
    distribution with those marginals. The column with the largest alphabet plays ``A``
    (its set enters exactly), the others ``B``. Labelled ``kind="chain-rule bound"``.

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
    from .confidence import confidence_set

    prod = _as_product(mechanisms)
    d = check_delta(delta)
    conf = _check_confidence(confidence)
    names, counts, m = _joint_counts(prod, reference, columns)
    k = len(prod.factors)
    margs = _marginal_counts(counts, prod.input_sizes)
    if any(c.size < 2 for c in margs):
        raise ValidationError("every column must have at least 2 categories for the bound")
    css = [confidence_set(c, d / k, confidence=conf) for c in margs]
    if k == 1:  # one column: its exact worst case
        bound = joint_capacity(prod, css[0].set)
        return JointGuarantee(
            eps=bound, delta=d, m=m, n=prod.n_inputs, columns=tuple(names),
            sizes=prod.input_sizes, beta=None, confidence=conf,
            set={"kind": "marginals", "sets": [css[0].set.to_dict()]},
            certified_eps=bound, kind="exact", column_eps=(bound,),
            description=css[0].description)
    order = sorted(range(k), key=lambda i: -prod.input_sizes[i])
    reordered = ProductMechanism(tuple(prod.factors[i] for i in order))
    bound = _chain_bound(reordered, [css[i].set for i in order])
    col_eps, _ = _column_eps(prod, counts, d, conf)
    return JointGuarantee(
        eps=bound, delta=d, m=m, n=prod.n_inputs, columns=tuple(names),
        sizes=prod.input_sizes, beta=None, confidence=conf,
        set={"kind": "marginals", "sets": [cs.set.to_dict() for cs in css]},
        certified_eps=bound, kind="chain-rule bound", column_eps=col_eps,
        description=(f"one set per column at delta/{k} each (union bound); "
                     + "; ".join(cs.description for cs in css)))


# --------------------------------------------------------------------------------------
# repeated releases of one column
# --------------------------------------------------------------------------------------

def _types(m: int, k: int) -> np.ndarray:
    """All count vectors (types) of ``k`` draws from ``m`` outputs: ``C(m + k - 1, k) x m``."""
    combos = np.array(list(itertools.combinations_with_replacement(range(m), k)),
                      dtype=np.int64).reshape(-1, k)
    counts = np.zeros((combos.shape[0], m), dtype=np.int64)
    np.add.at(counts, (np.arange(combos.shape[0])[:, None], combos), 1)
    return counts


def _log_type_columns(w: np.ndarray, types: np.ndarray) -> np.ndarray:
    """``log prod_y W[x, y]^{n_y}`` for each type ``n`` (rows) and input ``x``: ``(N, T)``;
    ``-inf`` where a used output has ``W[x, y] = 0``."""
    zero = w <= 0
    with np.errstate(divide="ignore"):
        logw = np.where(zero, 0.0, np.log(np.where(zero, 1.0, w)))
    out = logw @ types.T.astype(np.float64)
    dead = (zero.astype(np.int64) @ (types.T > 0).astype(np.int64)) > 0
    out[dead] = -math.inf
    return out


def release_leakage(mechanisms: Sequence[Any], prior: ArrayLike | None = None, *,
                    uncertainty_set: Any = None) -> float:
    """Exact PML of releasing the same column through each of ``mechanisms`` with fresh
    randomness (e.g. this month and next month).

    The release is the mechanism with rows ``x`` and columns ``(y_1, ..., y_R)``, entries
    ``prod_r W_r[x, y_r]``. Releases through the same mechanism are exchangeable: the
    column of a sequence depends only on its type (the count of each output), so the
    exact worst case runs over ``prod_g C(M_g + k_g - 1, k_g)`` classes (``k_g`` releases
    through the ``g``-th distinct mechanism, ``M_g`` outputs) instead of ``prod M^k``
    sequences. Computed in logs (products of many small probabilities do not underflow).

    Parameters
    ----------
    mechanisms
        The mechanisms of the releases (each ``N x M_r``, same ``N``); identical matrices
        are grouped. :class:`~pmlkit.Mechanism` objects are matched by their input labels:
        rows are taken in the input-label order of ``mechanisms[0]`` (the order of
        ``prior`` and of the set), and a mechanism over other labels is refused.
    prior
        One distribution (exact ``eps_min``), or
    uncertainty_set
        a :mod:`pmlkit.sets` set (exact worst case over it). Exactly one of the two.

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> # two answers "0, 0" under the uniform prior: log(0.5625 / 0.3125) = log 1.8
    >>> round(pmlkit.release_leakage([rr, rr], [0.5, 0.5]), 6)
    0.587787
    """
    from .worstcase import column_values

    if isinstance(mechanisms, Mechanism | np.ndarray) or not isinstance(mechanisms, Sequence) \
            or _is_matrix(mechanisms):
        raise ValidationError(
            f"mechanisms must be a sequence of mechanisms (one per release), got "
            f"{fmt(mechanisms)}")
    if not mechanisms:
        raise ValidationError("mechanisms must hold at least 1 mechanism, got none")
    ws = [as_matrix(m, f"mechanisms[{i}]") for i, m in enumerate(mechanisms)]
    n = ws[0].shape[0]
    for i, w in enumerate(ws):
        if w.shape[0] != n:
            raise ValidationError(
                f"every release must act on the same column: mechanisms[{i}] has "
                f"{w.shape[0]} rows, mechanisms[0] has {n}")
    ws = _rows_by_input_label(mechanisms, ws)
    if (prior is None) == (uncertainty_set is None):
        raise ValidationError("give exactly one of prior and uncertainty_set")
    if prior is not None:
        p = as_distribution(prior, "prior")
        if p.size != n:
            raise ValidationError(f"prior has {p.size} entries but the mechanisms {n} rows")
        uset: UncertaintySet = L1Ball(p, 0.0)
    else:
        uset = _unwrap_set(uncertainty_set, n)
    groups: list[tuple[np.ndarray, int]] = []
    for w in ws:
        for g, (u, c) in enumerate(groups):
            if u.shape == w.shape and np.array_equal(u, w):
                groups[g] = (u, c + 1)
                break
        else:
            groups.append((w, 1))
    total = math.prod(math.comb(w.shape[1] + c - 1, c) for w, c in groups)
    if total > MAX_RELEASE_CLASSES or total * n > 4 * MAX_RELEASE_CLASSES:
        raise TooLargeError(
            f"the releases have {total} output classes (types) over N = {n} inputs; at "
            f"most {MAX_RELEASE_CLASSES} classes and {4 * MAX_RELEASE_CLASSES} class x "
            "input entries are enumerated")
    logv = np.zeros((n, 1))
    for w, c in groups:
        lg = _log_type_columns(w, _types(w.shape[1], c))
        logv = (logv[:, :, None] + lg[:, None, :]).reshape(n, -1)
    top = logv.max(axis=0)
    live = top > -math.inf
    cols = np.zeros_like(logv)
    cols[:, live] = np.exp(logv[:, live] - top[live])  # max over x is 1 in every column
    vals = column_values(cols, uset)
    best = float(vals.max())
    return math.inf if best == math.inf else max(0.0, best)


def _rows_by_input_label(mechanisms: Sequence[Any], ws: list[np.ndarray]
                         ) -> list[np.ndarray]:
    """The releases' matrices with their rows in the input-label order of
    ``mechanisms[0]`` (releases of one column are matched by label, never by position).

    Mechanisms whose input labels are one tuple (or plain matrices, which carry no labels,
    among mechanisms that all agree) are taken as they are. Labelled mechanisms listing
    the same labels in other orders have their rows permuted to the first one's order;
    different label sets, or a plain matrix beside mechanisms whose orders differ (which
    order would it follow?), are refused."""
    labelled = [(i, tuple(m.input_labels)) for i, m in enumerate(mechanisms)
                if isinstance(m, Mechanism)]
    if len({labs for _, labs in labelled}) <= 1:
        return ws
    i0, first = labelled[0]
    for i, labs in labelled[1:]:
        if len(set(labs)) != len(labs) or set(labs) != set(first):
            raise ValidationError(
                f"every release must act on the same column: mechanisms[{i}] has input "
                f"labels {fmt(list(labs))}, mechanisms[{i0}] has {fmt(list(first))}")
    plain = [i for i in range(len(mechanisms)) if not isinstance(mechanisms[i], Mechanism)]
    if plain:
        raise ValidationError(
            f"mechanisms[{plain[0]}] is a plain matrix (rows by position) but the labelled "
            "mechanisms list their input labels in different orders; pass Mechanism "
            "objects so that rows are matched by label")
    where = {lab: r for r, lab in enumerate(first)}
    out = []
    for (_, labs), w in zip(labelled, ws, strict=True):
        order = np.empty(len(labs), dtype=np.intp)
        order[[where[lab] for lab in labs]] = np.arange(len(labs))
        out.append(w[order])
    return out


def repeated_leakage(mechanism: Any, k: int, prior: ArrayLike | None = None, *,
                     uncertainty_set: Any = None) -> float:
    """Exact PML of releasing one column ``k`` times through ``mechanism`` with fresh
    randomness: the worst case over the ``C(M + k - 1, k)`` type classes
    (:func:`release_leakage` with ``k`` copies).

    Examples
    --------
    >>> import math
    >>> import pmlkit
    >>> rr = pmlkit.randomized_response(2, math.log(3))  # keeps the bit w.p. 3/4
    >>> round(pmlkit.repeated_leakage(rr, 2, [0.5, 0.5]), 6)  # log 1.8
    0.587787
    """
    k = check_count(k, "k", minimum=1)
    return release_leakage([mechanism] * k, prior, uncertainty_set=uncertainty_set)


# --------------------------------------------------------------------------------------
# joint design
# --------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class JointDesign:
    """Result of :func:`design_joint`.

    Attributes
    ----------
    mode
        ``"joint alphabet"`` (one mechanism on the tuples) or ``"per-column"``.
    mechanisms
        Per-column mechanisms (``mode == "per-column"``), labels = each column's categories.
    joint_mechanism
        The mechanism on the joint alphabet (``mode == "joint alphabet"``); its input label
        ``i`` is the tuple ``categories[i]``.
    categories
        The joint alphabet (tuples, row-major).
    split
        The per-column eps each design was made for (``()`` in joint mode); they do not
        add up to the guarantee, which is ``guarantee.certified_eps``.
    guarantee
        The certified joint guarantee (exact, or a chain-rule bound for large alphabets).
    utility
        Summed per-column mutual information (nats) at the estimate in per-column mode;
        the mutual information between the record and the output in joint mode.
    joint_mutual_information
        ``I(X; Y)`` between the whole record and the released tuple at the estimate
        (comparable across modes; ``None`` when the product is too large to evaluate).
    tried
        Every split evaluated: ``{"split", "certified_eps", "utility", "feasible"}``.

    Examples
    --------
    >>> import pmlkit
    >>> ref = {"x": ["a", "b"] * 50, "y": ["u"] * 60 + ["v"] * 40}
    >>> jd = pmlkit.design_joint(ref, 1.5, 0.05)
    >>> jd.mode, jd.guarantee.certified_eps <= 1.5 + 1e-9
    ('joint alphabet', True)
    """

    mode: str
    mechanisms: tuple[Mechanism, ...]
    joint_mechanism: Mechanism | None
    categories: tuple[tuple[Any, ...], ...] = field(repr=False)
    split: tuple[float, ...]
    guarantee: JointGuarantee
    utility: float
    joint_mutual_information: float | None
    tried: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "split": list(self.split),
            "utility": self.utility,
            "joint_mutual_information": self.joint_mutual_information,
            "guarantee": self.guarantee.to_dict(),
            "mechanisms": [m.to_dict() for m in self.mechanisms],
            "joint_mechanism": (None if self.joint_mechanism is None
                                else self.joint_mechanism.to_dict()),
            "tried": [dict(t) for t in self.tried],
        }


def _observed_columns(reference: Any, columns: Sequence[Any] | None
                      ) -> tuple[list[str], list[Any], list[np.ndarray]]:
    """Names, per-column categories (observed, sorted when comparable) and codes."""
    from .estimation import empirical_distribution

    k = len(columns) if columns is not None else None
    if k is None:
        import pandas as pd

        if isinstance(reference, pd.DataFrame):
            k = reference.shape[1]
        elif isinstance(reference, np.ndarray) and reference.ndim == 2:
            k = reference.shape[1]
        elif isinstance(reference, Mapping | Sequence) and not isinstance(reference, str):
            k = len(reference)
        else:
            k = 0
    names, data = _reference_columns(reference, columns, k)
    cats = [list(empirical_distribution(d).categories) for d in data]
    return names, cats, data


def _mi(w: np.ndarray, p: np.ndarray) -> float:
    from .utility import mutual_information

    return float(mutual_information(w, p))


def design_joint(reference: Any, eps: float, delta: float, *,
                 columns: Sequence[Any] | None = None, confidence: str = "l1",
                 mode: str = "auto", splits: int = 5, steps: int = 8) -> JointDesign:
    """Design the release of several columns for an overall (eps, delta)-PML guarantee on
    the whole record.

    - ``mode="joint"`` (``"auto"`` when the joint alphabet has at most
      :data:`JOINT_DESIGN_MAX_N` categories): one optimal mechanism on the joint alphabet
      (:func:`pmlkit.design.design_from_samples` on the tuples; mutual information with the
      record).
    - ``mode="per-column"``: one mechanism per column
      (:func:`pmlkit.design.design_from_samples` on each column, mutual information), with
      eps ``eps_k = lam f_k eps``: for each direction ``f`` (``splits`` fractions for two
      columns; equal and one-column-favoured directions for more) the largest scale
      ``lam`` in ``[0, 1 / max f]`` whose certified joint guarantee is ``<= eps`` is found
      by bisection (``steps`` halvings), and the split with the largest summed mutual
      information wins. Certification is the exact :func:`joint_capacity` over the joint
      set at ``delta`` when ``N M`` of the product is at most :data:`EXACT_WORK_MAX`, else
      the chain-rule bound over the marginal sets at ``delta / K``. Every returned
      split is certified; the search itself is a heuristic (the joint guarantee need not be
      monotone in ``lam``). If no split is certified, each column gets the constant
      mechanism (leaks nothing, releases nothing).

    Returns
    -------
    JointDesign
        With the split and every split tried.

    Examples
    --------
    >>> import pmlkit
    >>> ref = {"x": ["a", "b"] * 50, "y": ["u"] * 60 + ["v"] * 40}
    >>> jd = pmlkit.design_joint(ref, 1.5, 0.05)
    >>> jd.joint_mechanism.guarantee.basis, jd.joint_mechanism.certified
    ('sample', True)
    """
    from .confidence import confidence_set
    from .design import design_from_samples
    from .estimation import EmpiricalDistribution

    eps = check_eps(eps)
    d = check_delta(delta)
    conf = _check_confidence(confidence)
    splits = check_count(splits, "splits")
    steps = check_count(steps, "steps", minimum=0)
    if mode not in ("auto", "joint", "per-column"):
        raise ValidationError(f"mode must be 'auto', 'joint' or 'per-column', got {fmt(mode)}")
    names, cats, data = _observed_columns(reference, columns)
    idents = [Mechanism(np.eye(len(c)), tuple(c), tuple(c)) for c in cats]
    base = ProductMechanism(tuple(idents))
    _, counts, m = _joint_counts(base, {n: col for n, col in zip(names, data, strict=True)},
                                 names)
    sizes = base.input_sizes
    n_joint = base.n_inputs
    joint_cats = base.input_labels
    p_hat = counts / m
    if mode == "auto":
        mode = "joint" if n_joint <= JOINT_DESIGN_MAX_N else "per-column"
    if mode == "joint":
        if n_joint < 2:
            raise ValidationError("the joint alphabet must have at least 2 categories")
        est = EmpiricalDistribution.from_counts(counts, list(range(n_joint)))
        res = design_from_samples(est, eps, d, confidence=conf)
        g = res.guarantee
        jg = JointGuarantee(
            eps=g.certified_eps, delta=d, m=m, n=n_joint, columns=tuple(names),
            sizes=sizes, beta=g.beta, confidence=conf, set=g.set,
            certified_eps=g.certified_eps, kind="exact", column_eps=(),
            estimate=tuple(float(x) for x in p_hat), categories=joint_cats,
            description=g.description,
            warning="one mechanism on the whole record: its guarantee is the joint one")
        return JointDesign(
            mode="joint alphabet", mechanisms=(), joint_mechanism=res.mechanism,
            categories=joint_cats, split=(), guarantee=jg, utility=g.utility_value,
            joint_mutual_information=_mi(np.asarray(res.mechanism.matrix), p_hat),
            tried=())
    k = len(sizes)
    margs = _marginal_counts(counts, sizes)
    if any(s < 2 for s in sizes):
        raise ValidationError(
            "every column needs at least 2 observed categories for a per-column design")
    work = n_joint * n_joint
    exact = work <= EXACT_WORK_MAX
    if exact:
        joint_set = confidence_set(counts, d, confidence=conf).set
    else:
        marg_sets = [confidence_set(c, d / k, confidence=conf).set for c in margs]
        order = sorted(range(k), key=lambda i: -sizes[i])
    cache: dict[tuple[int, float], tuple[Mechanism, float]] = {}

    def design(i: int, e: float) -> tuple[Mechanism, float]:
        key = (i, round(e, 12))
        if key not in cache:
            est = EmpiricalDistribution.from_counts(margs[i], cats[i])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PMLWarning)
                r = design_from_samples(est, e, d, confidence=conf)
            cache[key] = (r.mechanism, float(r.guarantee.utility_value))
        return cache[key]

    def certify(mechs: Sequence[Mechanism]) -> float:
        if exact:
            return joint_capacity(ProductMechanism(tuple(mechs)), joint_set)
        return _chain_bound(ProductMechanism(tuple(mechs[i] for i in order)),
                            [marg_sets[i] for i in order])

    dirs: list[tuple[float, ...]]
    if k == 2:
        fracs = np.linspace(0.2, 0.8, splits) if splits > 1 else np.array([0.5])
        dirs = [(float(f), float(1.0 - f)) for f in fracs]
    else:
        dirs = [tuple([1.0 / k] * k)]
        for i in range(k):
            w = [1.0] * k
            w[i] = 2.0
            dirs.append(tuple(x / sum(w) for x in w))
    tried: list[dict[str, Any]] = []
    best: tuple[float, tuple[float, ...], list[Mechanism], float] | None = None

    def evaluate(fr: Sequence[float], lam: float) -> tuple[bool, Any]:
        split = tuple(float(lam * f * eps) for f in fr)
        mechs, utils = zip(*(design(i, e) for i, e in enumerate(split)), strict=True)
        cert = certify(mechs)
        ok = cert <= eps + EPS_TOL
        tried.append({"split": list(split), "certified_eps": cert,
                      "utility": float(sum(utils)), "feasible": bool(ok)})
        return ok, (float(sum(utils)), split, list(mechs), cert)

    for fr in dirs:
        lo, hi = 0.0, 1.0 / max(fr)
        found = None
        ok, cand = evaluate(fr, hi)
        if ok:
            found = cand
        else:
            for _ in range(steps):
                mid = 0.5 * (lo + hi)
                ok, cand = evaluate(fr, mid)
                if ok:
                    lo, found = mid, cand
                else:
                    hi = mid
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    if best is None:  # nothing certified: release nothing
        mechs0 = [_constant_mechanism(c) for c in cats]
        best = (0.0, tuple(0.0 for _ in sizes), mechs0, certify(mechs0))
    util, split, mechs, cert = best
    prod = ProductMechanism(tuple(mechs))
    col_eps = []
    for f, c in zip(mechs, margs, strict=True):
        from .worstcase import leakage_capacity

        col_eps.append(float(leakage_capacity(f.matrix, confidence_set(c, d, confidence=conf).set)))
    if exact:
        setd: Mapping[str, Any] = joint_set.to_dict()
        desc = "exact worst case over the joint confidence set"
    else:
        setd = {"kind": "marginals", "sets": [s.to_dict() for s in marg_sets]}
        desc = f"chain-rule bound over one set per column at delta/{k} each (union bound)"
    jg = JointGuarantee(
        eps=cert, delta=d, m=m, n=n_joint, columns=tuple(names), sizes=sizes,
        beta=float(joint_set.radius) if exact and isinstance(joint_set, L1Ball) else None,
        confidence=conf, set=setd, certified_eps=cert,
        kind="exact" if exact else "chain-rule bound", column_eps=tuple(col_eps),
        estimate=tuple(float(x) for x in p_hat) if n_joint <= 100_000 else (),
        categories=joint_cats if n_joint <= 100_000 else (), description=desc)
    jmi = None
    if prod.n_inputs * prod.n_outputs <= DENSE_MAX:
        jmi = _mi(prod.matrix, p_hat)
    return JointDesign(
        mode="per-column", mechanisms=tuple(mechs), joint_mechanism=None,
        categories=joint_cats, split=tuple(split), guarantee=jg, utility=util,
        joint_mutual_information=jmi, tried=tuple(tried))


def __getattr__(name: str) -> Any:
    # ``pmlkit.joint.audit_joint`` moved to :func:`pmlkit.audit.audit_joint` (an audit is an
    # application of the joint guarantee, one layer up); the old name keeps working.
    if name == "audit_joint":
        import importlib

        return importlib.import_module("pmlkit.audit").audit_joint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
