"""Independent oracles shared by several test files (numpy and a generic HiGHS LP only,
never pmlkit's own code paths), so each is written once."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import linprog


def mi_cols(v: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``sum_x p_x v_x log(v_x / p . v)`` per column, with 0 log 0 = 0 (numpy only)."""
    s = p @ v
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(v > 0, v * np.log(v / s[None, :]), 0.0)
    return p @ t


def full_lp_optimum(rays: np.ndarray, p: np.ndarray) -> float:
    """The enumeration design: one LP over every candidate ray (generic HiGHS)."""
    res = linprog(-mi_cols(rays, p), A_eq=rays, b_eq=np.ones(p.size), bounds=(0, None),
                  method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                           "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0
    return float(-res.fun)


def linear_n3(p: np.ndarray, eps: float, beta: float, gain: np.ndarray) -> float:
    """The linear design over an l1-ball in the paper's N^3 form: max sum_i p_i sum_j
    gain[i, j] W[i, j] s.t. W[i, j] <= e^eps' (p . W_j + beta/2 W[i', j]) for all i, i',
    j; rows sum to 1; W >= 0 (dense, one row per triple, generic HiGHS)."""
    n = p.size
    e = math.exp(eps) / (1 + beta * math.exp(eps) / 2)
    rows = []
    for i, i2, j in itertools.product(range(n), range(n), range(n)):
        r = np.zeros((n, n))
        r[:, j] -= e * p
        r[i2, j] -= e * beta / 2
        r[i, j] += 1
        rows.append(r.ravel())
    res = linprog(-(p[:, None] * gain).ravel(), A_ub=np.array(rows), b_ub=np.zeros(len(rows)),
                  A_eq=np.kron(np.eye(n), np.ones(n)), b_eq=np.ones(n), bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return -float(res.fun)


def set_lp(c: np.ndarray, *, center: np.ndarray | None = None, radius: float | None = None,
           lower: np.ndarray | None = None, upper: np.ndarray | None = None,
           vertices: np.ndarray | None = None, a_eq: np.ndarray | None = None,
           b_eq: np.ndarray | None = None):
    """``min c . q`` over the distributions ``q`` with ``lower <= q <= upper``,
    ``||q - center||_1 <= radius`` (through slacks ``s >= |q - center|``), ``q`` in the
    convex hull of the rows of ``vertices`` (through weights ``lam``) and ``a_eq q = b_eq``,
    each constraint only when given (generic HiGHS on the raw constraints). Returns the
    ``scipy.optimize.OptimizeResult`` (``status`` 0: optimal, 2: infeasible)."""
    c = np.asarray(c, dtype=float)
    n = c.size
    nv = 0 if vertices is None else int(np.asarray(vertices).shape[0])
    ns = n if radius is not None else 0
    nvar = n + ns + nv
    eq_rows, eq_rhs, ub_rows, ub_rhs = [], [], [], []

    def row() -> np.ndarray:
        return np.zeros(nvar)

    r = row()
    r[:n] = 1.0
    eq_rows.append(r)
    eq_rhs.append(1.0)
    if radius is not None:
        assert center is not None
        for x in range(n):  # q_x - c_x <= s_x and c_x - q_x <= s_x
            r1, r2 = row(), row()
            r1[x], r1[n + x] = 1.0, -1.0
            r2[x], r2[n + x] = -1.0, -1.0
            ub_rows += [r1, r2]
            ub_rhs += [float(center[x]), -float(center[x])]
        r = row()
        r[n:n + ns] = 1.0
        ub_rows.append(r)
        ub_rhs.append(float(radius))
    if vertices is not None:
        v = np.asarray(vertices, dtype=float)
        for x in range(n):  # q_x = sum_v lam_v V[v, x]
            r = row()
            r[x] = 1.0
            r[n + ns:] = -v[:, x]
            eq_rows.append(r)
            eq_rhs.append(0.0)
        r = row()
        r[n + ns:] = 1.0
        eq_rows.append(r)
        eq_rhs.append(1.0)
    if a_eq is not None:
        a = np.asarray(a_eq, dtype=float)
        for i in range(a.shape[0]):
            r = row()
            r[:n] = a[i]
            eq_rows.append(r)
            eq_rhs.append(float(np.asarray(b_eq)[i]))
    lo = np.zeros(n) if lower is None else np.asarray(lower, dtype=float)
    hi = np.ones(n) if upper is None else np.asarray(upper, dtype=float)
    bounds = [(float(lo[x]), float(hi[x])) for x in range(n)] + [(0, None)] * (ns + nv)
    return linprog(np.concatenate([c, np.zeros(ns + nv)]),
                   A_ub=np.array(ub_rows) if ub_rows else None,
                   b_ub=np.array(ub_rhs) if ub_rhs else None,
                   A_eq=np.array(eq_rows), b_eq=np.array(eq_rhs), bounds=bounds,
                   method="highs")


def worst_eps_lp(w: np.ndarray, **set_kw) -> float:
    """Worst-case PML of the mechanism ``w`` over a set of :func:`set_lp`:
    ``max_j log(max_x w[x, j] / min_q q . w[:, j])`` (every input can hold mass in the
    sets used with it), one generic LP per output column."""
    w = np.asarray(w, dtype=float)
    worst = -math.inf
    for j in range(w.shape[1]):
        if w[:, j].max() <= 0:
            continue
        res = set_lp(w[:, j], **set_kw)
        assert res.status == 0, res.message
        worst = max(worst, math.log(w[:, j].max() / res.fun))
    return worst
