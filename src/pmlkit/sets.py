"""Uncertainty sets of distributions and exact linear optimisation over them.

Every set is a compact convex subset of the probability simplex on ``N`` points:

- :class:`L1Ball` ``{Q in simplex : ||Q - center||_1 <= radius}`` (Section 4.3
  [eq. l1uncertaintyset]);
- :class:`Box` ``{Q in simplex : lower <= Q <= upper}`` (beyond the paper: per-category
  confidence intervals);
- :class:`VertexSet` the convex hull of finitely many distributions (a polytope given by its
  vertices, Corollary 1 [Cor. extremalSet]).

The worst case of a mechanism over a set (:mod:`pmlkit.worstcase`) needs, for every column
``w = W[:, j]``, ``min_{Q in set} Q . w``. For the ball and the box this is a fractional
knapsack solved exactly by a greedy (beyond the paper, which bounds it in closed form for
small radii only), with no assumption such as ``beta < 2 p_min``; for a vertex set it is
the minimum over the vertices; for :class:`L1BoxSet` (ball and box together) a merge of
two greedies.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import (
    SUM_TOL,
    as_distribution,
    as_mechanism,
    check_count,
    check_radius,
    fmt,
    readonly,
)
from .errors import InfeasibleError, ValidationError

if TYPE_CHECKING:
    from .rng import RNGLike

__all__ = [
    "SET_KINDS",
    "Box",
    "L1Ball",
    "L1BoxSet",
    "MarginalSets",
    "UncertaintySet",
    "VertexSet",
    "set_from_dict",
]

#: A float64 array (distributions, objectives, values).
FloatArray: TypeAlias = NDArray[np.float64]


def _round_slack(*vectors: FloatArray) -> float:
    """A bound on the rounding error of ``1 - (sum(v) - v[x])`` for vectors in ``[0, 1]``:
    recursive summation of ``N`` terms errs by at most ``(N - 1) u sum(v)`` (``u`` the unit
    roundoff), the two subtractions by a few more ulps; doubled for margin. Coordinate
    bounds computed from such sums are widened by it, in the safe direction only."""
    n = max(v.size for v in vectors)
    total = max([1.0] + [float(v.sum()) for v in vectors])
    return 2.0 * (n + 4) * float(np.finfo(np.float64).eps) * total

#: Entries per block of columns in :meth:`UncertaintySet.min_linear` (bounds memory).
_BLOCK = 2**21


def _as_objective(w: ArrayLike, n: int) -> tuple[FloatArray, bool]:
    """A real ``N x M`` matrix of objectives (columns); a 1-D vector is one column.

    Returns the matrix and whether the input was 1-D."""
    arr = np.asarray(w, dtype=np.float64)
    vec = arr.ndim == 1
    if vec:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n:
        raise ValidationError(
            f"W must have {n} rows (one per alphabet entry of the set), got shape "
            f"{np.shape(w)}")
    if not np.isfinite(arr).all():
        raise ValidationError("W must be finite (no NaN or inf)")
    return arr, vec


def _rng(rng: RNGLike) -> np.random.Generator:
    """``numpy.random.Generator`` from a Generator, a ``pmlkit.rng.RandomSource`` (its
    ``.generator``), an int seed or None (fresh secure randomness)."""
    from .rng import resolve_rng  # the one resolver (an int seeds PCG64 as default_rng does)

    gen = getattr(rng, "generator", None)  # a RandomSource, or an object shaped like one
    return resolve_rng(gen if isinstance(gen, np.random.Generator) else rng).generator


def _greedy_fill(caps: FloatArray, budget: float) -> FloatArray:
    """Fractional knapsack, row-wise: amounts ``a`` with ``0 <= a <= caps`` filling ``budget``
    in column order (each row of ``caps`` is already in greedy order).

    ``a[k] = clip(budget - sum_{l<k} caps[l], 0, caps[k])``."""
    left = np.cumsum(caps, axis=1)
    left -= caps
    np.subtract(budget, left, out=left)
    np.maximum(left, 0.0, out=left)
    return cast(FloatArray, np.minimum(left, caps, out=left))


def _take_count(caps_sorted_small: FloatArray, budget: float) -> int:
    """How many greedy steps are enough for *any* order: the smallest ``K`` whose ``K``
    smallest caps already sum to ``budget`` (``N`` if none)."""
    cs = np.cumsum(caps_sorted_small)
    k = int(np.searchsorted(cs, budget, side="left")) + 1
    return min(k, caps_sorted_small.size)


def _top_order(values: FloatArray, k: int) -> NDArray[np.intp]:
    """Per row, indices of the ``k`` largest ``values`` in decreasing order (M x k).

    A full ``argsort`` when ``k`` is a sizeable part of the row; otherwise ``argpartition``
    (O(N)) followed by a sort of the ``k`` selected entries only."""
    n = values.shape[1]
    if 4 * k >= n:
        return np.argsort(-values, axis=1)[:, :k]
    part = np.argpartition(-values, k - 1, axis=1)[:, :k]
    sel = np.take_along_axis(values, part, axis=1)
    order = np.argsort(-sel, axis=1)
    return np.take_along_axis(part, order, axis=1)


class UncertaintySet(abc.ABC):
    """A compact convex set of distributions on ``n`` points (abstract base class).

    Subclasses implement exact linear optimisation (:meth:`min_linear`,
    :meth:`argmin_linear`), :meth:`coordinate_bounds`, :meth:`contains`, :meth:`sample`
    and :meth:`to_dict`.

    Examples
    --------
    Every set answers the same questions; here the smallest and largest probability of
    the first outcome over an l1-ball of radius 0.2 around ``(0.5, 0.5)`` (mass 0.1 can
    move):

    >>> ball = L1Ball([0.5, 0.5], 0.2)
    >>> isinstance(ball, UncertaintySet), ball.n
    (True, 2)
    >>> float(ball.min_linear([1.0, 0.0])[0]), float(ball.max_linear([1.0, 0.0])[0])
    (0.4, 0.6)
    """

    kind: ClassVar[str] = ""

    @property
    @abc.abstractmethod
    def n(self) -> int:
        """Alphabet size ``N``."""

    def argmin_linear(self, W: ArrayLike) -> FloatArray:
        """A minimiser ``Q_j in set`` of ``Q . W[:, j]`` for every column: ``(M, N)`` array.

        A 1-D ``W`` is treated as one column (result ``(1, N)``)."""
        w, _ = _as_objective(W, self.n)
        return self._argmin_linear(w)

    def min_linear(self, W: ArrayLike) -> FloatArray:
        """``min_{Q in set} Q . W[:, j]`` for every column ``j``: length-``M`` array (exact).

        ``W`` is any real ``N x M`` matrix (or a length-``N`` vector, one column)."""
        w, _ = _as_objective(W, self.n)
        return self._min_linear(w)

    def max_linear(self, W: ArrayLike) -> FloatArray:
        """``max_{Q in set} Q . W[:, j]`` for every column ``j`` (exact), as
        ``-min_linear(-W)``."""
        w, _ = _as_objective(W, self.n)
        return -self._min_linear(-w)

    def argmax_linear(self, W: ArrayLike) -> FloatArray:
        """A maximiser per column: ``(M, N)`` array."""
        w, _ = _as_objective(W, self.n)
        return self._argmin_linear(-w)

    @abc.abstractmethod
    def _argmin_linear(self, w: FloatArray) -> FloatArray:
        """Minimisers for a validated float64 ``(N, M)`` matrix."""

    def _min_linear(self, w: FloatArray) -> FloatArray:
        """Minima for a validated float64 ``(N, M)`` matrix (no input checks: fast path used
        by :mod:`pmlkit.worstcase`). Columns are processed in blocks of about
        :data:`_BLOCK` entries so that the temporaries of the greedy (a few ``N x M``
        arrays) stay bounded for large mechanisms."""
        n, m = w.shape
        step = max(1, _BLOCK // max(n, 1))
        if m <= step:
            return self._min_linear_block(w)
        return np.concatenate([self._min_linear_block(w[:, j:j + step])
                               for j in range(0, m, step)])

    def _min_linear_block(self, w: FloatArray) -> FloatArray:
        return cast(FloatArray, np.einsum("mn,nm->m", self._argmin_linear(w), w))

    def _support_mask(self) -> NDArray[np.bool_] | None:
        """Entries ``x`` with ``max_Q Q(x) > 0``; ``None`` when that is every entry."""
        possible = self.coordinate_bounds()[1] > 0
        return None if possible.all() else possible

    @abc.abstractmethod
    def coordinate_bounds(self) -> tuple[FloatArray, FloatArray]:
        """Exact ``(min_Q Q(x), max_Q Q(x))`` over the set, for every ``x``."""

    @abc.abstractmethod
    def contains(self, q: ArrayLike, tol: float = 1e-9) -> bool:
        """Whether ``q`` is a distribution in the set (up to ``tol``)."""

    @abc.abstractmethod
    def sample(self, k: int, rng: RNGLike = None) -> FloatArray:
        """``k`` random distributions from the set, ``(k, N)`` (research use; ``rng`` is an
        int seed or a ``numpy.random.Generator``). Not uniform: see each subclass."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """JSON-able description with a ``"kind"`` key; :func:`set_from_dict` inverts it."""

    def _sample_from_vertices(self, k: int, rng: RNGLike) -> FloatArray:
        """Random convex combinations (Dirichlet(1) weights) of ``min(N + 1, 12)`` extreme
        points, each the minimiser of a random Gaussian linear objective."""
        k = check_count(k, "k", minimum=0)
        g = _rng(rng)
        n = self.n
        kv = min(n + 1, 12)
        if k == 0:
            return np.zeros((0, n))
        obj = g.standard_normal((n, k * kv))
        verts = self.argmin_linear(obj).reshape(k, kv, n)
        lam = g.dirichlet(np.ones(kv), size=k)
        out = np.einsum("kv,kvn->kn", lam, verts)
        return cast(FloatArray, np.clip(out, 0.0, None))


@dataclass(frozen=True, eq=False)
class L1Ball(UncertaintySet):
    """``B_beta(center) = {Q in simplex : ||Q - center||_1 <= radius}`` (Section 4.3
    [eq. l1uncertaintyset]).

    Parameters
    ----------
    center
        A distribution (zero entries allowed).
    radius
        ``beta >= 0``; ``beta >= 2`` is the whole simplex. No assumption ``beta < 2 p_min``.

    Notes
    -----
    ``min_Q Q . w`` is a fractional knapsack: move a mass of up to
    ``beta / 2`` from the entries with the largest ``w`` (each gives at most
    ``center(x)``) to an entry with the smallest ``w``. Exact in ``O(N M)`` plus a sort of the
    ``K`` entries needed, ``K`` = the number of smallest center entries that hold
    ``beta / 2`` of mass (``argpartition``).

    References
    ----------
    - L. Grosse, S. Saeidian, T. J. Oechtering, M. Skoglund, "Privacy Mechanism
      Design based on Empirical Distributions", Section 4.3 (the l1 uncertainty set).

    Examples
    --------
    A ball of radius 0.2 moves at most 0.1 of mass, into or out of any entry:

    >>> ball = L1Ball([0.5, 0.3, 0.2], 0.2)
    >>> lo, hi = ball.coordinate_bounds()
    >>> lo.round(3), hi.round(3)
    (array([0.4, 0.2, 0.1]), array([0.6, 0.4, 0.3]))
    >>> ball.contains([0.6, 0.2, 0.2]), ball.contains([0.7, 0.2, 0.1])
    (True, False)
    >>> float(ball.min_linear([0.0, 0.0, 1.0])[0])  # the least the third entry can weigh
    0.1
    """

    center: FloatArray
    radius: float
    kind: ClassVar[str] = "l1_ball"

    if TYPE_CHECKING:
        def __init__(self, center: ArrayLike, radius: float) -> None: ...

    def __post_init__(self) -> None:
        c = as_distribution(self.center, "center")
        r = check_radius(self.radius, "radius")
        object.__setattr__(self, "center", readonly(c))
        object.__setattr__(self, "radius", r)

    @property
    def n(self) -> int:
        return int(self.center.shape[0])

    def __repr__(self) -> str:
        return f"L1Ball(center={fmt(np.asarray(self.center))}, radius={self.radius!r})"

    def _greedy(self, w: FloatArray) -> tuple[NDArray[Any], ...] | None:
        """Per column (rows of the result): the entries giving mass, largest ``w`` first,
        ``(top, caps, take, wt)``: their centre mass and the amounts taken; ``None`` when
        nothing moves."""
        p = self.center
        n = w.shape[0]
        budget = min(self.radius / 2.0, 1.0)
        if budget <= 0.0 or n == 1:
            return None
        wt = w.T  # (M, N) view: one row per objective column
        k = n if n <= 64 else _take_count(np.sort(p), budget)
        top = _top_order(wt, k)
        caps = p[top]
        take = _greedy_fill(caps, budget)
        return top, caps, take, wt

    def _argmin_linear(self, w: FloatArray) -> FloatArray:
        m = w.shape[1]
        q = np.repeat(np.asarray(self.center)[None, :], m, axis=0)
        g = self._greedy(w)
        if g is None:
            return q
        top, _, take, wt = g
        rows = np.arange(m)
        q[rows[:, None], top] -= take  # (row, entry) pairs are distinct: no lost updates
        q = np.maximum(q, 0.0)
        q[rows, np.argmin(wt, axis=1)] += take.sum(axis=1)
        return q

    def _min_linear_block(self, w: FloatArray) -> FloatArray:
        """Greedy value ``Q . w`` summed term by term, ``Q = p - take + (sum take) e_min``:
        no cancellation (``p . w - gain`` would lose the relative accuracy of a tiny
        minimum, which is what sets the capacity)."""
        g = self._greedy(w)
        if g is None:
            return self.center @ w
        top, caps, take, wt = g
        full = top.shape[1] == wt.shape[1]
        left = caps - take
        if full:  # full sort: same values as np.sort, no gather needed
            vals = np.sort(wt, axis=1)[:, ::-1]
            left[:, -1] += take.sum(axis=1)  # the last entry has the smallest objective
            return cast(FloatArray, np.einsum("mk,mk->m", left, vals))
        vals = np.take_along_axis(wt, top, axis=1)
        out = np.einsum("mk,mk->m", left, vals)
        out += take.sum(axis=1) * wt.min(axis=1)
        # entries outside the selection keep their mass
        base = self.center @ w
        rest = base - np.einsum("mk,mk->m", caps, vals)
        # where that difference cancelled (lost > 4 digits), sum the entries directly
        bad = np.flatnonzero(rest < 1e-4 * base)
        if bad.size:
            sub = wt[bad] * self.center
            sub[np.arange(bad.size)[:, None], top[bad]] = 0.0
            rest[bad] = sub.sum(axis=1)
        out += rest
        return cast(FloatArray, out)

    def _support_mask(self) -> NDArray[np.bool_] | None:
        if self.radius > 0 and self.n > 1:
            return None  # every entry can receive mass
        return super()._support_mask()

    def coordinate_bounds(self) -> tuple[FloatArray, FloatArray]:
        """``(max(0, c - beta/2), min(1, c + beta/2))``: mass ``beta/2`` can always be moved
        into or out of one entry (``N >= 2``); for ``N = 1`` the set is ``{(1)}``."""
        c = np.asarray(self.center)
        if self.n == 1:
            return np.ones(1), np.ones(1)
        r = self.radius / 2.0
        return np.clip(c - r, 0.0, 1.0), np.clip(c + r, 0.0, 1.0)

    def contains(self, q: ArrayLike, tol: float = 1e-9) -> bool:
        """``q`` is a distribution (entries ``>= -tol``, ``|sum - 1| <= tol``) with
        ``||q - center||_1 <= radius + tol``."""
        arr = np.asarray(q, dtype=np.float64)
        if arr.shape != (self.n,) or not np.isfinite(arr).all():
            return False
        if (arr < -tol).any() or abs(arr.sum() - 1.0) > tol:
            return False
        return bool(np.abs(arr - self.center).sum() <= self.radius + tol)

    def sample(self, k: int, rng: RNGLike = None) -> FloatArray:
        """Random points of the ball: half are ``c + t (D - c)`` with ``D ~ Dirichlet(1)``
        and ``t = min(1, u beta / ||D - c||_1)``, ``u ~ U(0, 1)`` (a random direction inside
        the simplex, random radius); the other half random convex combinations of extreme
        points (minimisers of random linear objectives), which reach the boundary. Every
        point is in the set; the law is not uniform."""
        k = check_count(k, "k", minimum=0)
        g = _rng(rng)
        c = np.asarray(self.center)
        k1 = k // 2
        d = g.dirichlet(np.ones(self.n), size=k1) - c
        norm = np.abs(d).sum(axis=1)
        u = g.random(k1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(norm > 0, np.minimum(1.0, u * self.radius / norm), 0.0)
        a = c + t[:, None] * d
        b = self._sample_from_vertices(k - k1, g)
        return cast(FloatArray, np.clip(np.concatenate((a, b)), 0.0, None))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "center": self.center.tolist(), "radius": self.radius}


@dataclass(frozen=True, eq=False)
class Box(UncertaintySet):
    """``{Q in simplex : lower <= Q <= upper}`` (beyond the paper).

    Parameters
    ----------
    lower, upper
        Length-``N`` vectors with ``0 <= lower <= upper <= 1``; the set is non-empty iff
        ``sum(lower) <= 1 <= sum(upper)`` (checked with tolerance ``1e-9``).

    Notes
    -----
    ``min_Q Q . w`` is a fractional knapsack: start from ``lower`` and give the remaining
    mass ``1 - sum(lower)`` to the entries with the smallest ``w``, each up to
    ``upper - lower``. Exact.

    Examples
    --------
    The simplex tightens the box: with ``Q(x1) <= 0.5`` the second entry must hold at
    least ``0.5``, and with ``Q(x1) >= 0.1`` at most ``0.9``:

    >>> box = Box([0.1, 0.1], [0.5, 0.95])
    >>> lo, hi = box.coordinate_bounds()
    >>> lo.round(9), hi.round(9)
    (array([0.1, 0.5]), array([0.5, 0.9]))
    >>> float(box.min_linear([0.0, 1.0])[0])
    0.5
    """

    lower: FloatArray
    upper: FloatArray
    kind: ClassVar[str] = "box"

    if TYPE_CHECKING:
        def __init__(self, lower: ArrayLike, upper: ArrayLike) -> None: ...

    def __post_init__(self) -> None:
        lo = _box_vector(self.lower, "lower")
        hi = _box_vector(self.upper, "upper")
        if lo.shape != hi.shape:
            raise ValidationError(
                f"lower and upper must have the same length, got {lo.size} and {hi.size}")
        bad = np.flatnonzero(lo > hi)
        if bad.size:
            i = int(bad[0])
            raise ValidationError(
                f"lower must be <= upper entrywise, got lower[{i}] = {float(lo[i])!r} > "
                f"upper[{i}] = {float(hi[i])!r}")
        if lo.sum() > 1.0 + SUM_TOL:
            raise InfeasibleError(
                f"box contains no distribution: sum(lower) = {float(lo.sum())!r} > 1 "
                "(the lower bounds must sum to at most 1)")
        if hi.sum() < 1.0 - SUM_TOL:
            raise InfeasibleError(
                f"box contains no distribution: sum(upper) = {float(hi.sum())!r} < 1 "
                "(the upper bounds must sum to at least 1)")
        object.__setattr__(self, "lower", readonly(lo))
        object.__setattr__(self, "upper", readonly(hi))

    @property
    def n(self) -> int:
        return int(self.lower.shape[0])

    def __repr__(self) -> str:
        return (f"Box(lower={fmt(np.asarray(self.lower))}, "
                f"upper={fmt(np.asarray(self.upper))})")

    def _greedy(self, w: FloatArray) -> tuple[FloatArray, NDArray[np.intp], FloatArray]:
        """Per column: entries receiving mass, smallest ``w`` first, and the amounts."""
        lo = self.lower
        caps_all = self.upper - lo
        budget = max(0.0, 1.0 - float(lo.sum()))
        wt = w.T
        n = w.shape[0]
        k = n if n <= 64 else _take_count(np.sort(caps_all), budget)
        order = _top_order(-wt, k)  # smallest objectives first
        add = _greedy_fill(caps_all[order], budget)
        return wt, order, add

    def _argmin_linear(self, w: FloatArray) -> FloatArray:
        m = w.shape[1]
        _, order, add = self._greedy(w)
        q = np.repeat(np.asarray(self.lower)[None, :], m, axis=0)
        q[np.arange(m)[:, None], order] += add  # distinct (row, entry) pairs
        return q

    def _min_linear_block(self, w: FloatArray) -> FloatArray:
        wt, order, add = self._greedy(w)
        vals = np.take_along_axis(wt, order, axis=1)
        return cast(FloatArray, self.lower @ w + np.einsum("mk,mk->m", add, vals))

    def coordinate_bounds(self) -> tuple[FloatArray, FloatArray]:
        """Exact: ``Q(x) >= max(lower(x), 1 - sum(upper) + upper(x))`` and
        ``Q(x) <= min(upper(x), 1 - sum(lower) + lower(x))``.

        ``lower`` and ``upper`` bound the set by definition and are returned as they are
        where they bind; the simplex terms are rounded sums and are loosened by
        :func:`_round_slack` so that rounding can never tighten a bound past the truth
        (a single-point box ``lower == upper`` gives back exactly its point, and a zero
        entry stays exactly zero)."""
        lo = np.asarray(self.lower)
        hi = np.asarray(self.upper)
        slack = _round_slack(lo, hi)
        tlo = np.minimum(np.maximum(lo, 1.0 - (hi.sum() - hi) - slack), hi)
        thi = np.maximum(np.minimum(hi, 1.0 - (lo.sum() - lo) + slack), lo)
        return tlo, np.maximum(thi, tlo)

    def contains(self, q: ArrayLike, tol: float = 1e-9) -> bool:
        arr = np.asarray(q, dtype=np.float64)
        if arr.shape != (self.n,) or not np.isfinite(arr).all():
            return False
        if abs(arr.sum() - 1.0) > tol:
            return False
        return bool((arr >= self.lower - tol).all() and (arr <= self.upper + tol).all())

    def sample(self, k: int, rng: RNGLike = None) -> FloatArray:
        """Random convex combinations (Dirichlet(1) weights) of ``min(N + 1, 12)`` extreme
        points of the box, each the greedy minimiser of a random Gaussian objective. Every
        point is in the set; the law is not uniform."""
        return self._sample_from_vertices(k, rng)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "lower": self.lower.tolist(), "upper": self.upper.tolist()}


def _box_vector(v: ArrayLike, name: str) -> FloatArray:
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a 1-D array of numbers, got {fmt(v)}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValidationError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValidationError(f"{name} must be finite (no NaN or inf), got {fmt(arr)}")
    bad = np.flatnonzero((arr < 0) | (arr > 1))
    if bad.size:
        i = int(bad[0])
        raise ValidationError(
            f"{name} entries must be in [0, 1], got {name}[{i}] = {float(arr[i])!r}")
    return arr


@dataclass(frozen=True, eq=False)
class VertexSet(UncertaintySet):
    """The convex hull of the rows of ``vertices`` (``k x N``, each row a distribution).

    A linear function is minimised at a vertex, and PML is convex in the distribution
    (Proposition 1 [Prop. epsPMLisconvex], Corollary 1 [Cor. extremalSet]), so the worst case is a
    max over the vertices.

    References
    ----------
    - L. Grosse, S. Saeidian, T. J. Oechtering, M. Skoglund, "Privacy Mechanism
      Design based on Empirical Distributions", Proposition 1 and Corollary 1.

    Examples
    --------
    The segment between ``(0.5, 0.5)`` and ``(0.9, 0.1)``:

    >>> seg = VertexSet([[0.5, 0.5], [0.9, 0.1]])
    >>> float(seg.min_linear([0.0, 1.0])[0])  # attained at the second vertex
    0.1
    >>> seg.contains([0.7, 0.3]), seg.contains([0.3, 0.7])
    (True, False)
    """

    vertices: FloatArray
    kind: ClassVar[str] = "vertex_set"

    if TYPE_CHECKING:
        def __init__(self, vertices: ArrayLike) -> None: ...

    def __post_init__(self) -> None:
        try:
            v = np.asarray(self.vertices, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValidationError(
                f"vertices must be a k x N array of distributions, got {fmt(self.vertices)}"
            ) from exc
        if v.ndim == 1:  # a single distribution
            v = v[None, :]
        arr = as_mechanism(v, "vertices")  # rows: non-negative, finite, sum to 1
        object.__setattr__(self, "vertices", readonly(arr))

    @property
    def n(self) -> int:
        return int(self.vertices.shape[1])

    def __repr__(self) -> str:
        return f"VertexSet(vertices={fmt(np.asarray(self.vertices))})"

    def _argmin_linear(self, w: FloatArray) -> FloatArray:
        vals = self.vertices @ w
        return cast(FloatArray, np.asarray(self.vertices)[np.argmin(vals, axis=0)].copy())

    def _min_linear_block(self, w: FloatArray) -> FloatArray:
        return cast(FloatArray, (self.vertices @ w).min(axis=0))

    def coordinate_bounds(self) -> tuple[FloatArray, FloatArray]:
        v = np.asarray(self.vertices)
        return v.min(axis=0), v.max(axis=0)

    def contains(self, q: ArrayLike, tol: float = 1e-9) -> bool:
        """Whether ``q`` is (within ``tol`` in l1) a convex combination of the vertices: an
        LP ``min ||V^T lam - q||_1`` over ``lam`` in the simplex (scipy HiGHS)."""
        arr = np.asarray(q, dtype=np.float64)
        if arr.shape != (self.n,) or not np.isfinite(arr).all():
            return False
        if (arr < -tol).any() or abs(arr.sum() - 1.0) > tol:
            return False
        from scipy.optimize import linprog

        v = np.asarray(self.vertices)
        k, n = v.shape
        # variables: lam (k), s (n) with -s <= V^T lam - q <= s
        c = np.concatenate((np.zeros(k), np.ones(n)))
        a_ub = np.block([[v.T, -np.eye(n)], [-v.T, -np.eye(n)]])
        b_ub = np.concatenate((arr, -arr))
        a_eq = np.concatenate((np.ones(k), np.zeros(n)))[None, :]
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0],
                      bounds=[(0, None)] * (k + n), method="highs")
        return bool(res.status == 0 and res.fun <= tol)

    def sample(self, k: int, rng: RNGLike = None) -> FloatArray:
        """Convex combinations of the vertices with Dirichlet(1) weights."""
        k = check_count(k, "k", minimum=0)
        g = _rng(rng)
        lam = g.dirichlet(np.ones(self.vertices.shape[0]), size=k)
        return lam @ self.vertices

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "vertices": self.vertices.tolist()}


# ---------------------------------------------------------- ball ∩ box (beyond the paper)

@dataclass(frozen=True, eq=False)
class L1BoxSet(UncertaintySet):
    """``{Q in simplex : ||Q - center||_1 <= radius, lower <= Q <= upper}`` with
    ``lower <= center <= upper`` (beyond the paper).

    Exact linear optimisation: write ``Q = center - d + u`` with ``0 <= d <= center -
    lower``, ``0 <= u <= upper - center`` and ``sum d = sum u = t <= radius/2`` (the same
    set: ``||Q - center||_1 = 2 t`` at the optimum). For fixed ``t`` the minimum of
    ``Q . w`` takes ``d`` from the largest ``w`` and puts ``u`` on the smallest (two
    fractional knapsacks); the gain is concave in ``t`` (slopes ``w_donor - w_receiver``
    never increase), so the best ``t`` is where the slope turns non-positive, or
    ``radius/2``. Vectorised over columns, ``O(N log N)`` per column.

    Examples
    --------
    The ball of radius 0.4 around ``(0.5, 0.5)`` alone allows ``Q(x1)`` in
    ``[0.3, 0.7]``; the box ``Q(x1) >= 0.4`` cuts the lower end:

    >>> s = L1BoxSet([0.5, 0.5], 0.4, [0.4, 0.0], [1.0, 1.0])
    >>> lo, hi = s.coordinate_bounds()
    >>> lo.round(9), hi.round(9)
    (array([0.4, 0.3]), array([0.7, 0.6]))
    """

    center: FloatArray
    radius: float
    lower: FloatArray
    upper: FloatArray
    kind: ClassVar[str] = "l1_box"

    if TYPE_CHECKING:
        def __init__(self, center: ArrayLike, radius: float, lower: ArrayLike,
                     upper: ArrayLike) -> None: ...

    def __post_init__(self) -> None:
        ball = L1Ball(self.center, self.radius)  # validates center and radius
        box = Box(self.lower, self.upper)  # validates the bounds
        c, lo, hi = ball.center, box.lower, box.upper
        if c.shape != lo.shape:
            raise ValidationError(
                f"center and lower/upper must have the same length, got {c.size} and "
                f"{lo.size}")
        bad = np.flatnonzero((c < lo - 1e-12) | (c > hi + 1e-12))
        if bad.size:
            i = int(bad[0])
            raise ValidationError(
                f"center must lie in the box, got center[{i}] = {float(c[i])!r} outside "
                f"[{float(lo[i])!r}, {float(hi[i])!r}]")
        object.__setattr__(self, "center", c)
        object.__setattr__(self, "radius", float(ball.radius))
        object.__setattr__(self, "lower", readonly(np.minimum(lo, c)))
        object.__setattr__(self, "upper", readonly(np.maximum(hi, c)))

    @property
    def n(self) -> int:
        return int(self.center.shape[0])

    def __repr__(self) -> str:
        return (f"L1BoxSet(center={fmt(np.asarray(self.center))}, radius={self.radius!r}, "
                f"lower={fmt(np.asarray(self.lower))}, "
                f"upper={fmt(np.asarray(self.upper))})")

    def _argmin_linear(self, w: FloatArray) -> FloatArray:
        """Greedy minimisers, one row per column of ``w``.

        Breakpoints of the piecewise-linear gain are the cumulative donor capacities ``D``
        and receiver capacities ``U``. They are merged per row by one sort of
        ``(0, D, U)``; the donor (receiver) active on a segment is the number of ``D``
        (``U``) knots at or before the segment's left end, an integer count taken from
        the sorted labels. No value is shifted or compared across rows, so the result of
        a column never depends on the other columns of the call.

        Entries are written exactly: a donor emptied to its bound gets ``lower`` itself
        and a saturated receiver ``upper`` itself (not ``center - (center - lower)``,
        which can miss a tiny bound by an ulp of the centre); only the one partial donor
        and the one partial receiver carry a rounded amount."""
        c = np.asarray(self.center)
        lo = np.asarray(self.lower)
        hi = np.asarray(self.upper)
        n, m_cols = w.shape
        wt = w.T  # (M, N)
        if n == 1 or self.radius <= 0.0:
            return np.repeat(c[None, :], m_cols, axis=0)
        rows = np.arange(m_cols)[:, None]
        od = np.argsort(-wt, axis=1, kind="stable")  # donors: largest w first
        ou = od[:, ::-1]  # receivers: smallest w first (the order among ties is immaterial)
        cd = (c - lo)[od]
        cu = (hi - c)[ou]
        big_d = np.cumsum(cd, axis=1)
        big_u = np.cumsum(cu, axis=1)
        tmax = np.minimum(min(self.radius / 2.0, 1.0),
                          np.minimum(big_d[:, -1], big_u[:, -1]))
        knots = np.concatenate((np.zeros((m_cols, 1)), big_d, big_u), axis=1)
        order = np.argsort(knots, axis=1, kind="stable")
        ks = np.take_along_axis(knots, order, axis=1)
        kd = np.cumsum((order >= 1) & (order <= n), axis=1)[:, :-1]
        ku = np.cumsum(order > n, axis=1)[:, :-1]
        a, b = ks[:, :-1], ks[:, 1:]
        # on a segment with b > a every knot equal to a precedes it in the sorted order,
        # so kd / ku index the donor / receiver active on it (n only once exhausted,
        # which happens at or after tmax: those segments are not useful)
        kd = np.minimum(kd, n - 1)
        ku = np.minimum(ku, n - 1)
        slope = (np.take_along_axis(wt, np.take_along_axis(od, kd, axis=1), axis=1)
                 - np.take_along_axis(wt, np.take_along_axis(ou, ku, axis=1), axis=1))
        # the slopes never increase along a row (donor w non-increasing, receiver w
        # non-decreasing, rounding of a difference is monotone): useful segments are a
        # prefix and t is the end of the last one
        useful = (b > a) & (a < tmax[:, None]) & (slope > 0)
        t = np.max(np.where(useful, np.minimum(b, tmax[:, None]), 0.0), axis=1)[:, None]
        # cumulative capacity before each donor / receiver (shifted sums: no cancellation)
        prev_d = np.empty_like(big_d)
        prev_d[:, 0] = 0.0
        prev_d[:, 1:] = big_d[:, :-1]
        prev_u = np.empty_like(big_u)
        prev_u[:, 0] = 0.0
        prev_u[:, 1:] = big_u[:, :-1]
        c_d = c[od]
        qd = np.where(big_d <= t, lo[od], np.where(prev_d >= t, c_d, c_d - (t - prev_d)))
        qd = np.maximum(qd, lo[od])
        q = np.empty((m_cols, n))
        q[rows, od] = qd  # od is a permutation of each row
        c_u = c[ou]
        used_u = prev_u < t
        qu = np.where(big_u <= t, hi[ou], np.minimum(c_u + (t - prev_u), hi[ou]))
        # receivers and donors that move are disjoint (a donor moved has w larger than
        # any receiver moved, as the last useful slope is > 0)
        cur = np.take_along_axis(q, ou, axis=1)
        q[rows, ou] = np.where(used_u, qu, cur)
        return q

    def _min_linear_block(self, w: FloatArray) -> FloatArray:
        return cast(FloatArray, np.einsum("mn,nm->m", self._argmin_linear(w), w))

    def coordinate_bounds(self) -> tuple[FloatArray, FloatArray]:
        """Exact: ``Q(x)`` can lose ``min(c(x) - lower(x), radius/2, room elsewhere)``
        with room elsewhere ``sum_{y != x} (upper(y) - c(y))``, and gain symmetrically."""
        c = np.asarray(self.center)
        lo = np.asarray(self.lower)
        hi = np.asarray(self.upper)
        room_up = hi - c
        room_dn = c - lo
        r = self.radius / 2.0
        dn = np.minimum(np.minimum(room_dn, r), room_up.sum() - room_up)
        up = np.minimum(np.minimum(room_up, r), room_dn.sum() - room_dn)
        # rounded amounts are widened by the rounding bound (never past lower / upper,
        # which hold exactly): rounding may loosen a bound, never tighten it
        slack = _round_slack(lo, hi)
        tlo = np.maximum(c - np.maximum(dn, 0.0) - slack, lo)
        thi = np.minimum(c + np.maximum(up, 0.0) + slack, hi)
        return np.where(room_dn > 0, tlo, c), np.where(room_up > 0, thi, c)

    def contains(self, q: ArrayLike, tol: float = 1e-9) -> bool:
        arr = np.asarray(q, dtype=np.float64)
        if arr.shape != (self.n,) or not np.isfinite(arr).all():
            return False
        if abs(arr.sum() - 1.0) > tol:
            return False
        return bool((arr >= self.lower - tol).all() and (arr <= self.upper + tol).all()
                    and np.abs(arr - self.center).sum() <= self.radius + tol)

    def sample(self, k: int, rng: RNGLike = None) -> FloatArray:
        """Random convex combinations of extreme points (not uniform)."""
        _rng(rng)  # validates rng the same way as the other sets
        return self._sample_from_vertices(k, rng)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "center": self.center.tolist(), "radius": self.radius,
                "lower": self.lower.tolist(), "upper": self.upper.tolist()}


#: Every set kind :func:`set_from_dict` rebuilds: ``kind`` -> (class, keys of its dict).

@dataclass(frozen=True, eq=False)
class MarginalSets(UncertaintySet):
    """Every joint distribution on a product alphabet whose ``k``-th marginal lies in
    ``sets[k]`` (the set a guarantee built from one confidence set per column covers).

    The alphabet is the product of the columns' alphabets in row-major order (as
    :func:`numpy.ravel_multi_index`), ``n = prod_k sets[k].n``. Membership is exact (every
    marginal is checked). The linear minima are taken over the Frechet box that contains
    the set (``max(0, sum_k lo_k(x_k) - (K - 1)) <= Q(x) <= min_k hi_k(x_k)``), so they are
    lower bounds on the minima over the set, and a worst-case leakage computed over this
    set by :mod:`pmlkit.worstcase` is an upper bound on the exact one (never below it).
    :func:`pmlkit.chain_rule_bound` gives the tighter bound a joint guarantee records.

    Parameters
    ----------
    sets
        One set per column (a :class:`UncertaintySet` or its ``to_dict()``), at least 1.

    Examples
    --------
    >>> s = MarginalSets([L1Ball([0.5, 0.5], 0.2), L1Ball([0.25, 0.75], 0.0)])
    >>> s.n, s.sizes
    (4, (2, 2))
    >>> s.contains([0.125, 0.375, 0.125, 0.375]), s.contains([0.25, 0.75, 0.0, 0.0])
    (True, False)
    """

    sets: tuple[UncertaintySet, ...]

    kind: ClassVar[str] = "marginals"

    if TYPE_CHECKING:  # pragma: no cover
        def __init__(self, sets: Any) -> None: ...

    def __post_init__(self) -> None:
        raw = self.sets
        if isinstance(raw, UncertaintySet | Mapping | str) or not hasattr(raw, "__len__") \
                or len(raw) < 1:
            raise ValidationError(
                f"sets must be a non-empty sequence of one set per column, got {raw!r}")
        built = []
        for i, s in enumerate(raw):
            if isinstance(s, Mapping):
                s = set_from_dict(s)
            if not isinstance(s, UncertaintySet) or isinstance(s, MarginalSets):
                raise ValidationError(
                    f"sets[{i}] must be an uncertainty set of one column, got "
                    f"{type(s).__name__}")
            built.append(s)
        object.__setattr__(self, "sets", tuple(built))
        lo = np.zeros(1)
        hi = np.ones(1)
        for s in built:
            l_k, h_k = s.coordinate_bounds()
            lo = (lo[:, None] + l_k[None, :]).ravel()
            hi = np.minimum(hi[:, None], h_k[None, :]).ravel()
        lo = np.clip(lo - (len(built) - 1), 0.0, 1.0)
        object.__setattr__(self, "_box", Box(lo, np.maximum(hi, lo)))

    @property
    def n(self) -> int:
        return int(np.prod([s.n for s in self.sets]))

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each column's alphabet size."""
        return tuple(int(s.n) for s in self.sets)

    @property
    def frechet_box(self) -> Box:
        """The box of the Frechet bounds, which contains the set."""
        return cast(Box, self.__dict__["_box"])

    def __repr__(self) -> str:
        return f"MarginalSets({', '.join(repr(s) for s in self.sets)})"

    def _argmin_linear(self, w: FloatArray) -> FloatArray:
        return self.frechet_box._argmin_linear(w)

    def _min_linear_block(self, w: FloatArray) -> FloatArray:
        return self.frechet_box._min_linear_block(w)

    def coordinate_bounds(self) -> tuple[FloatArray, FloatArray]:
        """The Frechet bounds (outer bounds on the coordinates of the set)."""
        return self.frechet_box.coordinate_bounds()

    def contains(self, q: ArrayLike, tol: float = 1e-9) -> bool:
        v = np.asarray(q, dtype=np.float64)
        if v.shape != (self.n,) or not np.isfinite(v).all() or (v < -tol).any() \
                or abs(float(v.sum()) - 1.0) > tol:
            return False
        t = v.reshape(self.sizes)
        axes = range(len(self.sets))
        return all(s.contains(t.sum(axis=tuple(a for a in axes if a != i)), tol)
                   for i, s in enumerate(self.sets))

    def sample(self, k: int, rng: RNGLike = None) -> FloatArray:
        """Products of independent samples of each column's set (they lie in the set)."""
        k = check_count(k, "k", minimum=0)
        g = _rng(rng)
        out = np.ones((k, 1))
        for s in self.sets:
            out = (out[:, :, None] * s.sample(k, g)[:, None, :]).reshape(k, -1)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "sets": [s.to_dict() for s in self.sets]}


SET_KINDS: dict[str, tuple[type[UncertaintySet], tuple[str, ...]]] = {
    "l1_ball": (L1Ball, ("center", "radius")),
    "box": (Box, ("lower", "upper")),
    "vertex_set": (VertexSet, ("vertices",)),
    "l1_box": (L1BoxSet, ("center", "radius", "lower", "upper")),
    "marginals": (MarginalSets, ("sets",)),
}


def set_from_dict(d: Mapping[str, Any]) -> UncertaintySet:
    """Rebuild a set from its :meth:`UncertaintySet.to_dict` (validating everything again).

    Raises
    ------
    ValidationError
        Unknown ``kind``, missing or unexpected keys, or invalid parameters.

    Examples
    --------
    >>> d = L1Ball([0.25, 0.75], 0.1).to_dict()
    >>> d
    {'kind': 'l1_ball', 'center': [0.25, 0.75], 'radius': 0.1}
    >>> set_from_dict(d).coordinate_bounds()[0]
    array([0.2, 0.7])
    """
    if not isinstance(d, Mapping):
        raise ValidationError(f"uncertainty set must be a mapping, got {type(d).__name__}")
    kind = d.get("kind")
    if not isinstance(kind, str) or kind not in SET_KINDS:
        raise ValidationError(
            f"uncertainty set 'kind' must be one of {sorted(SET_KINDS)}, got {kind!r}")
    cls, keys = SET_KINDS[kind]
    given = set(d) - {"kind"}
    if given != set(keys):
        raise ValidationError(
            f"uncertainty set of kind {kind!r} needs keys {sorted(keys)}, got {sorted(given)}")
    return cls(*(d[k] for k in keys))
