"""The product mechanism: each column of a record through its own mechanism, and its exact
worst case over a set of joint distributions (computed from the factors, block by block)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import as_distribution, fmt
from ..errors import TooLargeError, ValidationError
from ..mechanism import Mechanism, as_matrix
from ..sets import L1Ball, UncertaintySet

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

    from ..guarantee import PMLGuarantee, Provenance

__all__ = [
    "DENSE_MAX",
    "ProductMechanism",
    "as_product",
    "check_joint_set",
    "is_matrix",
    "joint_capacity",
    "joint_leakage",
    "product_mechanism",
    "product_worst",
]

#: Entries per block of product columns (bounds the memory of :func:`joint_capacity`).
_BLOCK = 2**20
#: Largest dense product matrix :attr:`ProductMechanism.matrix` builds (entries).
DENSE_MAX = 2**24

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

    # -- the mechanism protocol (pmlkit.guarantee.PrivacyMechanism) ----------------------
    @property
    def guarantee(self) -> PMLGuarantee | None:
        """``None``: a product of mechanisms carries no guarantee of its own (PML depends
        on the joint distribution); :func:`pmlkit.joint_guarantee` computes it."""
        return None

    @property
    def provenance(self) -> Provenance:
        from ..guarantee import Provenance

        return Provenance(designer="product_mechanism",
                          method=" (x) ".join(f.designer or "user" for f in self.factors))

    def apply(self, values: Any, *, rng: Any = None) -> list[Any]:
        """Release a record's columns, each through its own factor with independent
        randomness: ``values`` holds one 1-D column per factor (a sequence of columns or an
        ``n x K`` array); the result is the list of released columns.

        Examples
        --------
        >>> import pmlkit
        >>> keep = pmlkit.Mechanism([[1.0, 0.0], [0.0, 1.0]], ["a", "b"], ["a", "b"])
        >>> pmlkit.product_mechanism(keep, keep).apply([["a", "b"], ["b", "b"]])
        [['a', 'b'], ['b', 'b']]
        """
        from ..rng import resolve_rng

        if isinstance(values, np.ndarray) and values.ndim == 2:
            cols: list[Any] = [values[:, i] for i in range(values.shape[1])]
        elif isinstance(values, Sequence) and not isinstance(values, str):
            cols = list(values)
        else:
            raise ValidationError(
                f"values must be one column per factor (a sequence of columns or an n x K "
                f"array), got {type(values).__name__}")
        if len(cols) != len(self.factors):
            raise ValidationError(
                f"values must hold {len(self.factors)} columns (one per factor), got "
                f"{len(cols)}")
        lengths = {len(c) for c in cols}
        if len(lengths) > 1:
            raise ValidationError(
                f"every column must have the same length, got lengths {sorted(lengths)}")
        gen = resolve_rng(rng).generator
        return [f.apply(c, rng=gen) for f, c in zip(self.factors, cols, strict=True)]

    def leakage_under(self, prior: ArrayLike) -> float:
        """Exact ``eps_min`` at one joint distribution (:func:`joint_leakage`)."""
        return joint_leakage(self, prior)

    def worst_case_over(self, uncertainty_set: UncertaintySet) -> float:
        """Exact worst case over a set of joint distributions (:func:`joint_capacity`)."""
        return joint_capacity(self, uncertainty_set)

    def __repr__(self) -> str:
        sizes = " (x) ".join(f"{f.n_inputs}x{f.n_outputs}" for f in self.factors)
        return f"ProductMechanism({sizes})"


def is_matrix(obj: Any) -> bool:
    """Whether a list/tuple is one matrix (a list of rows of numbers), not a list of
    mechanisms.

    Examples
    --------
    >>> is_matrix([[1.0, 0.0], [0.0, 1.0]]), is_matrix([[[1.0]], [[1.0]]])
    (True, False)
    """
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
            and not is_matrix(mechanisms[0]):
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

def as_product(mechanisms: Any) -> ProductMechanism:
    """The :class:`ProductMechanism` of one mechanism per column, given as a product, one
    mechanism (one column) or a sequence of mechanisms or matrices.

    Examples
    --------
    >>> as_product([[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.5, 0.5]]]).shape
    (4, 4)
    """
    if isinstance(mechanisms, ProductMechanism):
        return mechanisms
    if isinstance(mechanisms, Mechanism) or (
            isinstance(mechanisms, np.ndarray) and mechanisms.ndim == 2):
        return product_mechanism(mechanisms)
    if isinstance(mechanisms, Sequence) and not isinstance(mechanisms, str):
        if is_matrix(mechanisms):  # one matrix as nested lists: one column
            return product_mechanism(np.asarray(mechanisms, dtype=np.float64))
        return product_mechanism(*mechanisms)
    raise ValidationError(
        "mechanisms must be a ProductMechanism or a sequence of mechanisms (one per column), "
        f"got {fmt(mechanisms)}")


def check_joint_set(uncertainty_set: Any, n: int) -> UncertaintySet:
    """A set (or ``ConfidenceSet``) over the joint alphabet of ``n`` tuples, validated.

    Examples
    --------
    >>> from pmlkit.sets import L1Ball
    >>> check_joint_set(L1Ball([0.25] * 4, 0.1), 4).n
    4
    """
    from ..worstcase import check_uncertainty_set

    return check_uncertainty_set(uncertainty_set, n,
                                 inputs="the product mechanism has {n} inputs (the joint "
                                        "alphabet)")


def product_worst(prod: ProductMechanism, uset: UncertaintySet) -> tuple[float, int]:
    """``(max_j value_j, argmax j)`` of the per-column worst-case PML of the product
    (``-inf`` if no column can occur), block by block.

    Examples
    --------
    >>> from pmlkit.sets import L1Ball
    >>> prod = product_mechanism([[0.75, 0.25], [0.25, 0.75]], [[1.0, 0.0], [0.0, 1.0]])
    >>> value, column = product_worst(prod, L1Ball([0.25] * 4, 0.0))
    >>> round(value, 6), column  # log(0.75 / 0.25)
    (1.098612, 0)
    """
    from ..worstcase import column_values

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
    prod = as_product(mechanisms)
    uset = check_joint_set(uncertainty_set, prod.n_inputs)
    best, _ = product_worst(prod, uset)
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
    prod = as_product(mechanisms)
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
    best, _ = product_worst(prod, L1Ball(p, 0.0))
    return math.inf if best == math.inf else max(0.0, best)

