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
