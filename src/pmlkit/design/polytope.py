"""The set of mechanisms that are eps-PML over an uncertainty set, as linear constraints.

:func:`robust_polytope` is Prop. LCCP: for the l1-ball ``B_beta(p_hat)`` with
``beta <= 2 min p_hat``, a column ``w`` is eps-PML for every distribution of the ball iff

    w_i <= e^eps' ( p_hat . w + (beta/2) min_k w_k )   for every i,
    eps' = log( e^eps / (1 + beta e^eps / 2) )          (eq. optimalepsdash).

Derivation: ``min_{Q in B} Q . w = p_hat . w - (beta/2)(max w - min w)`` (move mass
``beta/2`` from the largest entry, which holds at least ``p_min >= beta/2``, to the
smallest); ``max w <= e^eps min_Q Q . w`` rearranges to the line above. The paper's N^3
constraints (one per ``i, i', j``) collapse to 2 N M with one auxiliary ``t_j <= W[i, j]``
per column (the right side grows with ``t_j``, so ``t_j = min_i W[i, j]`` is optimal).

:func:`exact_polytope` goes beyond the paper: the exact ``M(eps, set)`` for an l1-ball of
ANY radius (``beta >= 2 p_hat(x)``, zero counts), for boxes and for vertex sets, by writing
the inner ``min_{Q in set} Q . w`` (an LP) through its dual:

- l1-ball ``B_beta(c)``, ``b = min(beta/2, 1)``: ``min_Q Q . w = c . w - max_{0 <= u <= c,
  sum u <= b} sum_i u_i (w_i - t)`` with ``t = min w`` (take mass ``u`` off the large entries,
  put it on the smallest); by LP duality the max equals ``min_{lam >= 0, mu >= 0,
  lam + mu_i >= w_i - t} (b lam + c . mu)``, so the constraints are
  ``t_j <= W[i,j]``, ``W[i,j] - t_j <= lam_j + mu_ij`` and
  ``W[i,j] <= e^eps (c . W_j - b lam_j - c . mu_j)``.
- box ``{lo <= Q <= hi, sum Q = 1}``: ``min_Q Q . w = max_{nu, a >= 0, b >= 0, a_i - b_i +
  nu <= w_i} (nu + lo . a - hi . b)``, so ``W[i,j] <= e^eps (nu_j + lo . a_j - hi . b_j)``
  with ``a_ij - b_ij + nu_j <= W[i,j]``.
- l1-ball cut by a box (``L1BoxSet``): ``Q = c - d + u`` with ``0 <= d <= c - lo``,
  ``0 <= u <= hi - c``, ``sum d = sum u <= b``; the dual of the inner max gives
  ``W[i,j] <= e^eps (c . W_j - (c - lo) . alpha_j - (hi - c) . gamma_j - b lam_j)`` with
  ``alpha_ij + nu_j + lam_j >= W[i,j]``, ``gamma_ij >= nu_j - W[i,j]``.
- vertex set ``conv{v_1..v_R}``: ``W[i,j] <= e^eps v_r . W_j`` for all ``r``
  (Cor. extremalSet).

Every form introduces ``s_j`` (the column's worst-case output probability, times nothing) as
a variable defined by one equality, which keeps the constraint matrix sparse (O(N M)
non-zeros instead of O(N^2 M)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._deprecation import positional_deprecated, renamed_parameter
from .._validation import as_distribution, check_count, check_eps, check_radius, fmt
from ..errors import ValidationError
from ._common import exp_capped

if TYPE_CHECKING:
    from ..sets import UncertaintySet

__all__ = ["MechanismPolytope", "eps_prime", "exact_polytope", "robust_polytope"]


def eps_prime(eps: float, beta: float) -> float:
    """``eps' = log( e^eps / (1 + beta e^eps / 2) )`` (eq. optimalepsdash), computed as
    ``-log(e^-eps + beta/2)``; may be negative (then ``M(eps', p)`` is empty).

    ``eps >= 0`` and ``beta >= 0`` are checked (ValidationError).

    Examples
    --------
    At ``eps = log 2`` and ``beta = 1/2``: ``e^eps' = 2 / (1 + 1/2) = 4/3``.

    >>> import math
    >>> print(round(math.exp(eps_prime(math.log(2), 0.5)), 6))
    1.333333
    """
    eps = check_eps(eps)
    beta = check_radius(beta)
    if beta == 0:
        return eps
    return -math.log(math.exp(-eps) + beta / 2.0)


@dataclass(frozen=True, eq=False)
class MechanismPolytope:
    """Linear constraints ``A_ub x <= b_ub``, ``A_eq x = b_eq``, ``bounds`` on a vector ``x``
    whose first ``N * M`` entries are ``W`` in row-major order (``W[i, j] = x[i * M + j]``).

    ``layout`` maps each block name (``"W"``, ``"t"``, ``"s"``, ...) to its slice of ``x``.
    ``A_ub``/``A_eq`` are ``scipy.sparse`` CSR matrices; pass everything to
    ``scipy.optimize.linprog(method="highs")``.

    Examples
    --------
    The fixed prior ``(1/2, 1/2)`` (``beta = 0``) at ``eps = log 1.5``: maximising the
    accuracy over the polytope gives ``W[x, x] = 3/4`` (a column ``(a, 1 - a)`` needs
    ``a <= 1.5 / 2``).

    >>> import numpy as np
    >>> from scipy.optimize import linprog
    >>> poly = robust_polytope([0.5, 0.5], eps=np.log(1.5), beta=0.0)
    >>> c = np.zeros(poly.n_vars)
    >>> c[poly.layout["W"]] = -0.5 * np.eye(2).ravel()
    >>> res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
    ...               bounds=poly.bounds, method="highs")
    >>> print(np.round(poly.matrix(res.x), 4))
    [[0.75 0.25]
     [0.25 0.75]]
    """

    n_inputs: int
    n_outputs: int
    A_ub: Any
    b_ub: np.ndarray
    A_eq: Any
    b_eq: np.ndarray
    bounds: np.ndarray
    layout: dict[str, slice]
    form: str
    eps: float
    eps_prime: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def n_vars(self) -> int:
        """The number of LP variables (the length of ``x``)."""
        return int(self.bounds.shape[0])

    def matrix(self, x: ArrayLike) -> NDArray[np.float64]:
        """The ``N x M`` block ``W`` of a solution vector ``x``."""
        v = np.asarray(x, dtype=np.float64)
        return v[self.layout["W"]].reshape(self.n_inputs, self.n_outputs)


class _Builder:
    """Accumulates sparse rows ``(row, col, val)`` of A_ub and A_eq."""

    def __init__(self) -> None:
        self.nv = 0
        self.layout: dict[str, slice] = {}
        self.bounds: list[np.ndarray] = []
        self.ub: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.eq: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.b_ub: list[np.ndarray] = []
        self.b_eq: list[np.ndarray] = []
        self.n_ub = 0
        self.n_eq = 0

    def var(self, name: str, shape: tuple[int, ...], lo: float, hi: float) -> np.ndarray:
        size = int(np.prod(shape))
        idx = np.arange(self.nv, self.nv + size).reshape(shape)
        self.layout[name] = slice(self.nv, self.nv + size)
        b = np.empty((size, 2))
        b[:, 0] = lo
        b[:, 1] = hi
        self.bounds.append(b)
        self.nv += size
        return idx

    def rows(self, kind: str, cols: list[np.ndarray], vals: list[Any], rhs: Any) -> None:
        """Add rows ``sum_k vals[k] * x[cols[k]] (<= or ==) rhs``; each ``cols[k]`` is
        ``(R,)`` (one variable per row) or ``(R, L)`` (L variables per row)."""
        r = cols[0].shape[0]
        start = self.n_ub if kind == "ub" else self.n_eq
        rr, cc, vv = [], [], []
        for c, v in zip(cols, vals, strict=True):
            c = np.asarray(c)
            v2 = np.broadcast_to(np.asarray(v, dtype=np.float64), c.shape).reshape(r, -1)
            c2 = c.reshape(r, -1)
            rr.append(np.broadcast_to(np.arange(start, start + r)[:, None], c2.shape).ravel())
            cc.append(c2.ravel())
            vv.append(v2.ravel())
        entry = (np.concatenate(rr), np.concatenate(cc), np.concatenate(vv))
        b = np.broadcast_to(np.asarray(rhs, dtype=np.float64), (r,)).copy()
        if kind == "ub":
            self.ub.append(entry)
            self.b_ub.append(b)
            self.n_ub += r
        else:
            self.eq.append(entry)
            self.b_eq.append(b)
            self.n_eq += r

    def _mat(self, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], nrows: int) -> Any:
        from scipy.sparse import coo_matrix

        if not parts:
            return coo_matrix((0, self.nv)).tocsr()
        r = np.concatenate([p[0] for p in parts])
        c = np.concatenate([p[1] for p in parts])
        v = np.concatenate([p[2] for p in parts])
        return coo_matrix((v, (r, c)), shape=(nrows, self.nv)).tocsr()

    def build(self, n: int, m: int, form: str, eps: float, eps_p: float | None,
              notes: dict[str, Any]) -> MechanismPolytope:
        empty = np.zeros(0)
        return MechanismPolytope(
            n, m, self._mat(self.ub, self.n_ub),
            np.concatenate(self.b_ub) if self.b_ub else empty,
            self._mat(self.eq, self.n_eq),
            np.concatenate(self.b_eq) if self.b_eq else empty,
            np.concatenate(self.bounds), dict(self.layout), form, eps, eps_p, notes)


def _start(n: int, m: int) -> tuple[_Builder, np.ndarray]:
    b = _Builder()
    w = b.var("W", (n, m), 0.0, 1.0)
    # rows of W sum to 1 (eq. LPconst2)
    b.rows("eq", [w], [1.0], 1.0)
    return b, w


def _outputs(n_outputs: Any, n: int) -> int:
    return n if n_outputs is None else check_count(n_outputs, "n_outputs", minimum=1)


@renamed_parameter(version="0.2", p_hat="prior")
@positional_deprecated(version="0.2", allowed=1)
def robust_polytope(prior: ArrayLike, *, eps: float, beta: float,
                    n_outputs: int | None = None) -> MechanismPolytope:
    """``M(eps, B_beta(p_hat))`` as linear constraints (Prop. LCCP, the 2 N M form).

    Variables: ``W`` (``N x M``, row-major), ``t`` (``M``; ``t_j <= W[i, j]``), ``s``
    (``M``; ``s_j = p_hat . W_j + (beta/2) t_j``). Constraints:

    - ``t_j - W[i, j] <= 0`` and ``W[i, j] - e^eps' s_j <= 0`` (eq. LPconst1 with the
      auxiliary ``t_j`` in place of ``W[i', j]``), ``N M`` rows each;
    - ``sum_j W[i, j] = 1`` (eq. LPconst2); ``W >= 0`` (eq. LPconst3), ``t >= 0``;
    - ``s_j - p_hat . W_j - (beta/2) t_j = 0``.

    ``eps' = log(e^eps / (1 + beta e^eps / 2))`` (eq. optimalepsdash). Exact for
    ``beta <= 2 min p_hat`` (the Proposition states ``<``; at equality the derivation in
    the module docstring still holds). For larger radii use :func:`exact_polytope`.

    Parameters
    ----------
    prior
        Estimate ``p_hat`` (probability vector, length N; formerly ``p_hat``).
    eps
        Target ``>= 0`` (keyword-only, as ``beta``: by position deprecated since 0.2).
    beta
        l1 radius, ``0 <= beta <= 2 min p_hat``.
    n_outputs
        Number of output columns ``M`` (default ``N``; the paper's ``M <= N`` loses nothing,
        grosse2023extremal Thm 1).

    Raises
    ------
    ValidationError
        If ``beta > 2 min p_hat`` (the Proposition does not apply).

    Examples
    --------
    ``N = 3`` inputs and outputs: ``2 N M = 18`` inequalities, and
    ``eps' = -log(e^-1 + 0.05) = 0.8726`` below ``eps = 1``:

    >>> poly = robust_polytope([0.5, 0.3, 0.2], eps=1.0, beta=0.1)
    >>> poly.A_ub.shape[0], round(poly.eps_prime, 4)
    (18, 0.8726)
    """
    p = as_distribution(prior, "prior")
    eps = check_eps(eps)
    beta = check_radius(beta)
    if beta > 2 * float(p.min()):
        raise ValidationError(
            f"beta must be <= 2 min(prior) = {2 * float(p.min())!r} for Prop. LCCP, got "
            f"{beta!r}; use exact_polytope(L1Ball(prior, beta), eps) for any radius")
    n = p.size
    m = _outputs(n_outputs, n)
    ep = eps_prime(eps, beta)
    b, w = _start(n, m)
    t = b.var("t", (m,), 0.0, np.inf)
    s = b.var("s", (m,), -np.inf, np.inf)
    tt = np.broadcast_to(t, (n, m))
    ss = np.broadcast_to(s, (n, m))
    b.rows("ub", [tt.ravel(), w.ravel()], [1.0, -1.0], 0.0)
    b.rows("ub", [w.ravel(), ss.ravel()], [1.0, -exp_capped(ep)], 0.0)
    # s_j - sum_i p_i W[i, j] - beta/2 t_j = 0
    b.rows("eq", [s, w.T, t], [1.0, np.broadcast_to(-p, (m, n)), -beta / 2.0], 0.0)
    return b.build(n, m, "Prop. LCCP (2NM form)", eps, ep,
                   {"p_hat": p.tolist(), "beta": beta})


@renamed_parameter(version="0.2", uset="uncertainty_set")
def exact_polytope(uncertainty_set: UncertaintySet, eps: float, *,
                   n_outputs: int | None = None) -> MechanismPolytope:
    """The exact ``M(eps, set)`` for an :class:`~pmlkit.sets.L1Ball` (any radius),
    :class:`~pmlkit.sets.Box`, :class:`~pmlkit.sets.L1BoxSet` or
    :class:`~pmlkit.sets.VertexSet`, through LP duality.

    See the module docstring for the derivation. Beyond the paper: no assumption
    ``beta < 2 p_hat(x)``; zero counts allowed. ``x`` starts with ``W`` (row-major); the
    other blocks are named in ``layout``.

    Raises
    ------
    ValidationError
        For a set of another type.

    Examples
    --------
    A box: per cell ``(i, j)`` one dual constraint and one PML constraint:

    >>> from pmlkit.sets import Box
    >>> poly = exact_polytope(Box([0.2, 0.3], [0.7, 0.8]), 0.5)
    >>> poly.form, poly.A_ub.shape[0]
    ('exact box (LP dual)', 8)
    """
    from ..sets import Box, L1Ball, L1BoxSet, VertexSet

    uset = uncertainty_set
    eps = check_eps(eps)
    n = int(uset.n) if hasattr(uset, "n") else 0
    m = _outputs(n_outputs, n)
    e = exp_capped(eps)
    if isinstance(uset, L1Ball):
        c = np.asarray(uset.center, dtype=np.float64)
        bud = min(uset.radius / 2.0, 1.0)
        b, w = _start(n, m)
        t = b.var("t", (m,), 0.0, np.inf)
        lam = b.var("lam", (m,), 0.0, np.inf)
        mu = b.var("mu", (n, m), 0.0, np.inf)
        s = b.var("s", (m,), -np.inf, np.inf)
        tt = np.broadcast_to(t, (n, m)).ravel()
        ll = np.broadcast_to(lam, (n, m)).ravel()
        b.rows("ub", [tt, w.ravel()], [1.0, -1.0], 0.0)
        b.rows("ub", [w.ravel(), tt, ll, mu.ravel()], [1.0, -1.0, -1.0, -1.0], 0.0)
        b.rows("ub", [w.ravel(), np.broadcast_to(s, (n, m)).ravel()], [1.0, -e], 0.0)
        b.rows("eq", [s, w.T, lam, mu.T],
               [1.0, np.broadcast_to(-c, (m, n)), bud, np.broadcast_to(c, (m, n))], 0.0)
        return b.build(n, m, "exact l1-ball (LP dual)", eps, None,
                       {"center": c.tolist(), "radius": float(uset.radius)})
    if isinstance(uset, Box):
        lo = np.asarray(uset.lower, dtype=np.float64)
        hi = np.asarray(uset.upper, dtype=np.float64)
        b, w = _start(n, m)
        nu = b.var("nu", (m,), -np.inf, np.inf)
        a = b.var("a", (n, m), 0.0, np.inf)
        bb = b.var("b", (n, m), 0.0, np.inf)
        s = b.var("s", (m,), -np.inf, np.inf)
        b.rows("ub", [a.ravel(), bb.ravel(), np.broadcast_to(nu, (n, m)).ravel(), w.ravel()],
               [1.0, -1.0, 1.0, -1.0], 0.0)
        b.rows("ub", [w.ravel(), np.broadcast_to(s, (n, m)).ravel()], [1.0, -e], 0.0)
        b.rows("eq", [s, nu, a.T, bb.T],
               [1.0, -1.0, np.broadcast_to(-lo, (m, n)), np.broadcast_to(hi, (m, n))], 0.0)
        return b.build(n, m, "exact box (LP dual)", eps, None,
                       {"lower": lo.tolist(), "upper": hi.tolist()})
    if isinstance(uset, L1BoxSet):
        c = np.asarray(uset.center, dtype=np.float64)
        cd = c - np.asarray(uset.lower, dtype=np.float64)  # mass each entry can give
        cu = np.asarray(uset.upper, dtype=np.float64) - c  # mass each entry can take
        bud = min(uset.radius / 2.0, 1.0)
        b, w = _start(n, m)
        al = b.var("alpha", (n, m), 0.0, np.inf)
        ga = b.var("gamma", (n, m), 0.0, np.inf)
        nu = b.var("nu", (m,), -np.inf, np.inf)
        lam = b.var("lam", (m,), 0.0, np.inf)
        s = b.var("s", (m,), -np.inf, np.inf)
        nn = np.broadcast_to(nu, (n, m)).ravel()
        ll = np.broadcast_to(lam, (n, m)).ravel()
        # W_ij - alpha_ij - nu_j - lam_j <= 0 ;  nu_j - W_ij - gamma_ij <= 0
        b.rows("ub", [w.ravel(), al.ravel(), nn, ll], [1.0, -1.0, -1.0, -1.0], 0.0)
        b.rows("ub", [nn, w.ravel(), ga.ravel()], [1.0, -1.0, -1.0], 0.0)
        b.rows("ub", [w.ravel(), np.broadcast_to(s, (n, m)).ravel()], [1.0, -e], 0.0)
        # s_j = c . W_j - cd . alpha_j - cu . gamma_j - bud lam_j
        b.rows("eq", [s, w.T, al.T, ga.T, lam],
               [1.0, np.broadcast_to(-c, (m, n)), np.broadcast_to(cd, (m, n)),
                np.broadcast_to(cu, (m, n)), bud], 0.0)
        return b.build(n, m, "exact l1-ball cut by a box (LP dual)", eps, None,
                       {"center": c.tolist(), "radius": float(uset.radius)})
    if isinstance(uset, VertexSet):
        v = np.asarray(uset.vertices, dtype=np.float64)
        r = v.shape[0]
        b, w = _start(n, m)
        s = b.var("s", (r, m), -np.inf, np.inf)
        # s[r, j] = v_r . W_j
        sj = s.reshape(r * m)
        wcols = np.broadcast_to(w.T[None, :, :], (r, m, n)).reshape(r * m, n)
        vals = np.broadcast_to(-v[:, None, :], (r, m, n)).reshape(r * m, n)
        b.rows("eq", [sj, wcols], [1.0, vals], 0.0)
        # W[i, j] <= e^eps s[r, j]
        wi = np.broadcast_to(w[None, :, :], (r, n, m)).ravel()
        si = np.broadcast_to(s[:, None, :], (r, n, m)).ravel()
        b.rows("ub", [wi, si], [1.0, -e], 0.0)
        return b.build(n, m, "vertex set", eps, None, {"vertices": v.tolist()})
    raise ValidationError(
        f"uncertainty set must be an L1Ball, Box or VertexSet for exact_polytope, got "
        f"{fmt(uset)}")
