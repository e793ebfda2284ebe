"""An independent brute force of the pricing problem for mutual information over a box
(shared by the attack tests on the box pricing oracles).

``K_1 = {w >= 0 : p . w = 1, max w <= e^eps min_{Q in box} Q . w}`` with the box
``{lo <= Q <= hi, sum Q = 1}``, ``mu(w) = sum_x p_x w_x log w_x``. Written here from
scratch, sharing nothing with the oracles' formulas:

- the worst case ``min_Q Q . w`` of a column with levels ``0 < 1 < rho`` (letters in ``Z``,
  ``M``, ``T``) is the greedy that starts from ``lo`` and pours the remaining mass
  ``1 - lo(all)`` into the letters of ``Z``, then ``M``, then ``T``, each up to ``hi``; the
  order of the levels does not depend on ``rho >= 1``, so the worst distribution is one
  ``Q*`` for every ``rho`` and the constraint ``rho <= e^eps (rho Q*(T) + Q*(M))`` is
  linear in ``rho``: the largest ``rho`` is ``e^eps Q*(M) / (1 - e^eps Q*(T))`` (no limit
  when ``e^eps Q*(T) >= 1``: then ``1_T`` alone is the vertex, found as a one-level one);
- a one-level column ``1_S / p(S)`` is feasible iff ``e^eps Q*(S) >= 1``.

The greedy is checked against one HiGHS LP per assignment (the box's worst case dualised)
on samples of the assignments, and the list of vertices against many random linear
objectives maximised over ``K_1`` by a generic LP (no vertex may be missing: the LP
maximum of ``c . w`` over ``K_1`` must equal the maximum over the list).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog


def assignments(n: int) -> np.ndarray:
    """Every assignment of ``n`` letters to levels 0 (zero), 1 (middle), 2 (top)."""
    return np.array(list(itertools.product((0, 1, 2), repeat=n)), dtype=np.int8)


def greedy_masses(lev: np.ndarray, lo: np.ndarray, hi: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``(Q*(M), Q*(T))`` of the worst distribution of every assignment (rows of ``lev``)."""
    z, m, t = (lev == 0), (lev == 1), (lev == 2)
    room = hi - lo
    rest = 1.0 - lo.sum()
    to_z = np.minimum(z @ room, rest)
    to_m = np.minimum(m @ room, rest - to_z)
    to_t = np.maximum(rest - to_z - to_m, 0.0)
    return m @ lo + to_m, t @ lo + to_t


def vertices(p: np.ndarray, lo: np.ndarray, hi: np.ndarray, eps: float,
             lev: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every vertex of ``K_1`` (columns of the first array) and its assignment (rows)."""
    e = math.exp(eps)
    lev = assignments(p.size) if lev is None else lev
    qm, qt = greedy_masses(lev, lo, hi)
    has_t, has_m = (lev == 2).any(axis=1), (lev == 1).any(axis=1)
    one = has_m & ~has_t & (e * qm >= 1.0 - 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(1.0 - e * qt > 0, e * qm / (1.0 - e * qt), np.inf)
    three = has_t & has_m & np.isfinite(rho) & (rho >= 1.0)
    w = np.where(lev == 2, np.where(three, rho, 0.0)[:, None], (lev == 1).astype(float))
    keep = one | three
    w = w[keep]
    w = w / (w @ p)[:, None]
    return w.T.copy(), lev[keep]


def rho_lp(lev: np.ndarray, lo: np.ndarray, hi: np.ndarray, e: float) -> float | None:
    """Largest ``rho >= 1`` keeping ``rho 1_T + 1_M`` feasible, by HiGHS (None: none,
    inf: no limit): ``max rho`` s.t. ``rho <= e (t + lo . a - hi . b)`` and
    ``t + a_x - b_x <= w_x`` (the dual of the worst case over the box)."""
    n = lo.size
    top, mid = lev == 2, lev == 1
    nv = 2 + 2 * n
    c = np.zeros(nv)
    c[0] = -1.0
    a_ub = np.zeros((n + 1, nv))
    b_ub = np.zeros(n + 1)
    a_ub[0, 0], a_ub[0, 1] = 1.0, -e
    a_ub[0, 2:2 + n], a_ub[0, 2 + n:] = -e * lo, e * hi
    for x in range(n):
        a_ub[1 + x, 1], a_ub[1 + x, 2 + x], a_ub[1 + x, 2 + n + x] = 1.0, 1.0, -1.0
        a_ub[1 + x, 0] = -1.0 if top[x] else 0.0
        b_ub[1 + x] = 1.0 if mid[x] else 0.0
    res = linprog(c, A_ub=a_ub, b_ub=b_ub,
                  bounds=[(1.0, None), (None, None)] + [(0.0, None)] * (2 * n),
                  method="highs")
    if res.status == 2:
        return None
    if res.status == 3:
        return math.inf
    assert res.status == 0, res.message
    return float(res.x[0])


def min_q(w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """``min Q . w`` over the distributions of the box (HiGHS)."""
    res = linprog(w, A_eq=np.ones((1, lo.size)), b_eq=[1.0],
                  bounds=list(zip(lo, hi, strict=True)), method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def lp_max_linear(c: np.ndarray, p: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  eps: float) -> float:
    """``max c . w`` over ``K_1`` by one generic LP in ``(w, t, a, b)``:
    ``w_x <= e (t + lo . a - hi . b)``, ``t + a_x - b_x <= w_x``, ``p . w = 1``."""
    n = p.size
    e = math.exp(eps)
    nv = 3 * n + 1  # w, t, a, b
    obj = np.zeros(nv)
    obj[:n] = -c
    rows, rhs = [], []
    for x in range(n):
        r = np.zeros(nv)
        r[x] = 1.0
        r[n] = -e
        r[n + 1:2 * n + 1] = -e * lo
        r[2 * n + 1:] = e * hi
        rows.append(r)
        rhs.append(0.0)
        r = np.zeros(nv)
        r[x] = -1.0
        r[n] = 1.0
        r[n + 1 + x] = 1.0
        r[2 * n + 1 + x] = -1.0
        rows.append(r)
        rhs.append(0.0)
    aeq = np.zeros((1, nv))
    aeq[0, :n] = p
    res = linprog(obj, A_ub=np.array(rows), b_ub=np.array(rhs), A_eq=aeq, b_eq=[1.0],
                  bounds=[(0.0, None)] * n + [(None, None)] + [(0.0, None)] * (2 * n),
                  method="highs")
    assert res.status == 0, res.message
    return -float(res.fun)


def mu(v: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``mu`` of every column of ``v``."""
    safe = np.where(v > 0, v, 1.0)
    out: np.ndarray = np.sum(np.where(v > 0, p[:, None] * v * np.log(safe), 0.0), axis=0)
    return out


def full_lp(v: np.ndarray, muv: np.ndarray) -> tuple[float, np.ndarray]:
    """The optimum of ``max sum theta mu(v)`` s.t. ``sum theta v = 1`` over every vertex,
    and its optimal duals."""
    res = linprog(-muv, A_eq=v, b_eq=np.ones(v.shape[0]), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -float(res.fun), -np.asarray(res.eqlin.marginals)


def exact_min_q(w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Fraction:
    """``min Q . w`` over the box in exact rational arithmetic (the floats taken as they
    are): start from ``lo`` and pour the rest of the mass into the smallest entries of
    ``w`` first, each up to ``hi``. HiGHS is not used here: its feasibility tolerance
    (1e-7 on ``Q``) is far above the masses of a box from counts of 0 to 3 out of a
    million, where it misjudged a feasible column by 1e-4."""
    q = [Fraction(float(x)) for x in lo]
    rest = 1 - sum(q, Fraction(0))
    for i in np.argsort(w, kind="stable").tolist():
        add = min(Fraction(float(hi[i])) - q[i], rest)
        if add > 0:
            q[i] += add
            rest -= add
    return sum((qi * Fraction(float(wi)) for qi, wi in zip(q, w.tolist(), strict=True)),
               Fraction(0))


def column_ok(w: np.ndarray, p: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              eps: float, rel: float = 1e-9) -> bool:
    """Whether ``w`` is a point of ``K_1`` (exact worst case, relative slack ``rel``)."""
    if abs(float(p @ w) - 1.0) > 1e-7 or float(w.min()) < -1e-12:
        return False
    worst = Fraction(math.exp(eps)) * exact_min_q(w, lo, hi)
    return Fraction(float(w.max())) <= worst * (1 + Fraction(rel)) + Fraction(1e-12)
