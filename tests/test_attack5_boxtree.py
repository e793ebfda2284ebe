"""Attacks on the block-pair branch and bound that prices mutual information over a box.

Its bound is an optimality certificate: it must never be below the true maximum of the
pricing objective ``mu(v) - y . v`` over ``K_1 = {w >= 0 : p . w = 1, max w <= e^eps
min_{Q in box} Q . w}``, with ``mu(w) = sum_x p_x w_x log w_x``. The truth here is computed
from scratch, sharing nothing with the oracles' level-set formula: for every assignment of
the letters to (0, middle, top), the largest top/middle ratio ``rho`` that keeps the column
feasible is one HiGHS LP (the box's worst case dualised: ``max rho`` s.t.
``rho <= e^eps (t + lo . a - hi . b)``, ``t + a_x - b_x <= rho [x in T] + [x in M]``,
``a, b >= 0``), and a one-level column ``1_S / p(S)`` is feasible iff the LP minimum of
``Q(S)`` over the box is at least ``e^-eps``. The duals tried include zero, multiples of
``p``, large positive, negative and random ones, and the optimal duals of the full LP over
every such vertex (where the true maximum is 0, so the search prunes hardest). Every column
returned is checked feasible by an LP worst case, and a column-generation design priced by
this oracle is checked against the full LP: its value never above, its upper bound never
below the optimum, its reported gap never below the true gap.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from pmlkit.confidence import confidence_set
from pmlkit.design import colgen
from pmlkit.sets import Box
from pmlkit.utility import mutual_information_columns


def _rho_max(top: np.ndarray, mid: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             e: float) -> float | None:
    """Largest ``rho >= 1`` with ``rho 1_T + 1_M`` feasible (None: none; inf: unbounded)."""
    n = lo.size
    nv = 2 + 2 * n  # rho, t, a (n), b (n)
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


def _min_q(w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """``min Q . w`` over the distributions of the box (HiGHS)."""
    res = linprog(w, A_eq=np.ones((1, lo.size)), b_eq=[1.0], bounds=list(zip(lo, hi, strict=True)),
                  method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def _vertices(p: np.ndarray, lo: np.ndarray, hi: np.ndarray, eps: float) -> np.ndarray:
    """Every three-level point of ``K_1`` (columns), by brute force over ``3^N``."""
    e = math.exp(eps)
    out = []
    for lev in itertools.product((0, 1, 2), repeat=p.size):
        arr = np.array(lev)
        top, mid = arr == 2, arr == 1
        s = top | mid
        if not s.any() or (top.any() and not mid.any()):
            continue
        if not top.any():
            if e * _min_q(s.astype(float), lo, hi) >= 1.0 - 1e-12:
                out.append(s / (p @ s))
            continue
        rho = _rho_max(top, mid, lo, hi, e)
        if rho is not None and math.isfinite(rho):
            w = rho * top + mid
            out.append(w / (p @ w))
    return np.array(out).T


def _mu(v: np.ndarray, p: np.ndarray) -> np.ndarray:
    safe = np.where(v > 0, v, 1.0)
    out: np.ndarray = np.sum(np.where(v > 0, p[:, None] * v * np.log(safe), 0.0), axis=0)
    return out


def _full_lp(v: np.ndarray, muv: np.ndarray) -> tuple[float, np.ndarray]:
    """The optimum of ``max sum theta mu(v)`` s.t. ``sum theta v = 1`` over every vertex
    and its optimal duals (``y . v >= mu(v)`` for every vertex)."""
    res = linprog(-muv, A_eq=v, b_eq=np.ones(v.shape[0]), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -float(res.fun), -np.asarray(res.eqlin.marginals)


def _instance(seed: int, n: int, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    g = np.random.default_rng(seed)
    if kind == "confidence":
        counts = g.integers(0, 60, n) + g.integers(0, 2, n) * g.integers(0, 800, n)
        counts[int(np.argmax(counts))] += 5
        box = confidence_set(counts, float(g.choice([0.01, 0.05, 0.2])),
                             confidence="auto").set
        assert isinstance(box, Box)
        lo, hi = np.asarray(box.lower, float), np.asarray(box.upper, float)
        p = (counts + 0.5) / (counts + 0.5).sum()
    else:
        p = g.dirichlet(np.ones(n) * float(g.choice([0.3, 1.0, 5.0])))
        p = np.maximum(p, 1e-3)
        p /= p.sum()
        if kind == "tight-hi":  # sum(hi) just above 1, lo near 0
            hi, lo = p + g.uniform(0, 1e-3, n) / n, g.uniform(0, 1e-6, n)
        elif kind == "wide":
            lo, hi = p * g.uniform(0.0, 1.0, n), np.minimum(p * g.uniform(1.0, 3.0, n), 1.0)
        else:
            r = g.uniform(0.0, 0.3, n)
            lo = np.maximum(p - r * p - g.uniform(0, 0.05, n), 0.0)
            hi = np.minimum(p + r * p + g.uniform(0, 0.05, n), 1.0)
        lo, hi = np.minimum(lo, p), np.maximum(hi, p)
    eps = float(math.exp(g.uniform(math.log(0.01), math.log(5.0))))
    return p, lo, hi, eps


def _duals(g: np.random.Generator, p: np.ndarray, y_star: np.ndarray) -> list[np.ndarray]:
    n = p.size
    c = float(g.normal())
    return [np.zeros(n), c * p, g.normal(0, 1, n), g.normal(0, 30, n),
            -np.abs(g.normal(0, 30, n)), np.abs(g.normal(0, 30, n)),
            c * p + g.normal(0, 1e-3, n), y_star, y_star + g.normal(0, 1e-6, n),
            y_star + 1e-9 * p, 1e4 * g.normal(0, 1, n)]


def _check_columns(cols: np.ndarray, vals: np.ndarray, p: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray, eps: float) -> None:
    for k in range(cols.shape[1]):
        w = cols[:, k]
        assert abs(p @ w - 1.0) <= 1e-7 and w.min() >= -1e-12
        # PML of the column on the box's worst case at most eps
        assert w.max() <= math.exp(eps) * _min_q(w, lo, hi) * (1 + 1e-9) + 1e-12
        assert vals[k] == pytest.approx(_mu(w[:, None], p)[0], rel=1e-7, abs=1e-9)


KINDS = ["near", "tight-hi", "wide", "confidence"]


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 6), kind=st.sampled_from(KINDS))
def test_bound_never_below_brute_force(seed: int, n: int, kind: str) -> None:
    p, lo, hi, eps = _instance(seed, n, kind)
    v = _vertices(p, lo, hi, eps)
    muv = _mu(v, p)
    _, y_star = _full_lp(v, muv)
    oracle = colgen.BoxTreeOracle(Box(lo, hi), p, eps)
    for y in _duals(np.random.default_rng(seed), p, y_star):
        truth = float(np.max(muv - y @ v))
        cols, vals, bound = oracle.price(y, want=5, deadline=math.inf, atol=1e-9, full=True)
        assert bound >= truth - 1e-9 * (1 + abs(truth)), (truth, bound, y.tolist())
        _check_columns(cols, vals, p, lo, hi, eps)


@pytest.mark.parametrize("seed,n,kind", [(1, 6, "near"), (2, 6, "tight-hi"), (3, 5, "wide"),
                                         (4, 6, "confidence"), (5, 4, "tight-hi")])
def test_design_against_full_lp(seed: int, n: int, kind: str) -> None:
    p, lo, hi, eps = _instance(seed, n, kind)
    v = _vertices(p, lo, hi, eps)
    opt, _ = _full_lp(v, _mu(v, p))
    res = colgen.column_generation(colgen.BoxTreeOracle(Box(lo, hi), p, eps), p,
                            lambda c: mutual_information_columns(c, p), start=None,
                            gap=1e-9, deadline=time.monotonic() + 60)
    _check_design(res, opt, lo, hi, eps)


def _check_design(res: colgen.ColgenResult, opt: float, lo: np.ndarray, hi: np.ndarray,
                  eps: float) -> None:
    """A design result against the optimum of the full LP: value never above it, upper
    bound never below it, reported gap never below the true gap, every column of the
    matrix feasible on the box's worst case."""
    tol = 1e-9 * (1 + opt)
    assert res.value <= opt + tol
    assert res.upper_bound >= opt - tol
    true_gap = (opt - res.value) / opt if opt > 0 else 0.0
    assert res.gap >= true_gap - 1e-9
    w = res.matrix
    assert np.allclose(w.sum(axis=1), 1.0, atol=1e-9) and w.min() >= 0
    for j in range(w.shape[1]):
        col = w[:, j]
        if col.max() > 0:
            assert col.max() <= math.exp(eps) * _min_q(col, lo, hi) * (1 + 1e-7) + 1e-12
