"""Worst-case utility designs (pmlkit.design.maxmin) against an independent threshold scan
(every distinct utility value, one dense LP feasibility test each, written here), a direct
PML computation, and an independent LP worst case over the set."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from pmlkit.design import maxmin_mechanism
from pmlkit.design.maxmin import worst_case_utility
from pmlkit.errors import ValidationError
from pmlkit.sets import L1Ball, VertexSet


def feasible(u: np.ndarray, tau: float, eps: float, priors: list[np.ndarray]) -> bool:
    """Is there a row-stochastic W, zero where u < tau, with
    W[i, j] <= e^eps q . W[:, j] for every q in ``priors``? (dense LP, variables W)"""
    n, m = u.shape
    nv = n * m
    rows = []
    for q in priors:
        for i in range(n):
            for j in range(m):
                r = np.zeros(nv)
                for k in range(n):
                    r[k * m + j] -= math.exp(eps) * q[k]
                r[i * m + j] += 1.0
                rows.append(r)
    a_eq = np.zeros((n, nv))
    for i in range(n):
        a_eq[i, i * m:(i + 1) * m] = 1.0
    bounds = [(0.0, 1.0 if u[i, j] >= tau else 0.0) for i in range(n) for j in range(m)]
    res = linprog(np.zeros(nv), A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=a_eq,
                  b_eq=np.ones(n), bounds=bounds, method="highs")
    return bool(res.status == 0)


def scan(u: np.ndarray, eps: float, priors: list[np.ndarray]) -> float:
    best = -math.inf
    for tau in sorted(set(u.ravel().tolist())):
        if feasible(u, tau, eps, priors):
            best = tau
    return best


def direct_eps(w: np.ndarray, p: np.ndarray) -> float:
    out = 0.0
    for j in range(w.shape[1]):
        py = sum(p[i] * w[i, j] for i in range(w.shape[0]))
        if py > 0:
            out = max(out, math.log(max(w[:, j]) / py))
    return out


def lp_worst_ball(w: np.ndarray, center: np.ndarray, radius: float) -> float:
    """max_j log(max_i W[i, j] / min_{Q in ball} Q . W[:, j]) with one LP per column."""
    n = center.size
    out = 0.0
    for j in range(w.shape[1]):
        col = w[:, j]
        if col.max() == 0:
            continue
        # variables (Q, s), s >= |Q - center|
        c = np.concatenate([col, np.zeros(n)])
        eye = np.eye(n)
        a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
        b_ub = np.concatenate([center, -center, [radius]])
        a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0],
                      bounds=[(0, None)] * (2 * n), method="highs")
        assert res.status == 0
        out = max(out, math.log(col.max() / res.fun) if res.fun > 0 else math.inf)
    return out


def random_case(seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    m = int(rng.integers(2, 7))
    u = rng.integers(-3, 4, size=(n, m)).astype(float)
    p = rng.dirichlet(np.ones(n))
    eps = float(rng.uniform(0.05, 2.5))
    return u, p, eps


@pytest.mark.parametrize("seed", range(20))
def test_reaches_threshold_scan_at_the_prior(seed: int) -> None:
    u, p, eps = random_case(seed)
    mech = maxmin_mechanism(u, p, eps)
    w = np.asarray(mech.matrix)
    assert worst_case_utility(w, u) == scan(u, eps, [p])
    assert direct_eps(w, p) <= eps + 1e-9  # eps-PML at the prior, checked directly
    assert not ((w > 0) & (w < 1e-12)).any()  # no solver dust left
    assert np.allclose(w.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_robust_over_vertex_set_reaches_scan(seed: int) -> None:
    u, p, eps = random_case(1000 + seed)
    rng = np.random.default_rng(seed)
    verts = [p, *rng.dirichlet(np.ones(p.size) * 3, size=2)]
    mech = maxmin_mechanism(u, p, eps, uncertainty_set=VertexSet(np.array(verts)))
    w = np.asarray(mech.matrix)
    assert worst_case_utility(w, u) == scan(u, eps, verts)
    assert max(direct_eps(w, v) for v in verts) <= eps + 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_robust_ball_certificate_confirmed_by_lp(seed: int) -> None:
    u, p, eps = random_case(2000 + seed)
    ball = L1Ball(p, 0.15)
    mech = maxmin_mechanism(u, p, eps, uncertainty_set=ball)
    w = np.asarray(mech.matrix)
    assert lp_worst_ball(w, p, 0.15) <= eps + 1e-8
    assert mech.certified_eps == pytest.approx(lp_worst_ball(w, p, 0.15), abs=1e-7)
    # never better than the fixed-prior optimum (the set contains the prior)
    assert worst_case_utility(w, u) <= worst_case_utility(maxmin_mechanism(u, p, eps), u)


def test_forbidden_outputs_example() -> None:
    """Hand-checked: with three values and utility -|x - y|, at the uniform prior and
    eps = log 2 the identity (needs log 3) is out, but never moving by more than one step
    is possible: rows (1/2, 1/2, 0), (1/4, 1/2, 1/4), (0, 1/2, 1/2) have column maxima
    1/2 = 2 * P_Y with P_Y = (1/4, 1/2, 1/4)."""
    u = -np.abs(np.subtract.outer(np.arange(3), np.arange(3))).astype(float)
    p = np.full(3, 1 / 3)
    w_hand = np.array([[1 / 2, 1 / 2, 0], [1 / 4, 1 / 2, 1 / 4], [0, 1 / 2, 1 / 2]])
    assert direct_eps(w_hand, p) <= math.log(2) + 1e-12
    mech = maxmin_mechanism(u, p, math.log(2))
    assert worst_case_utility(mech, u) == -1.0 == scan(u, math.log(2), [p])


def test_errors() -> None:
    with pytest.raises(ValidationError, match="utility has 2 rows"):
        maxmin_mechanism(np.eye(2), [0.2, 0.3, 0.5], 1.0)
    with pytest.raises(ValidationError, match="finite"):
        maxmin_mechanism([[1.0, math.nan], [0.0, 1.0]], [0.5, 0.5], 1.0)
    with pytest.raises(ValidationError, match="eps"):
        maxmin_mechanism(np.eye(2), [0.5, 0.5], -1.0)


@pytest.mark.parametrize("seed", range(6))
def test_tradeoff_boundaries_against_the_scan(seed: int) -> None:
    from pmlkit.design.maxmin import maxmin_tradeoff

    u, p, _ = random_case(3000 + seed)
    table = maxmin_tradeoff(u, p)
    eps_needed = [e for _, e in table]
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(eps_needed))
    for level, e in table:
        assert math.isfinite(e)  # full-support prior: every reachable level has an eps
        assert feasible(u, level, e + 1e-6, [p])
        if e > 1e-6:
            assert not feasible(u, level, e - 1e-6, [p])
    # the design at a level's eps reaches that level
    level, e = table[-1]
    assert worst_case_utility(maxmin_mechanism(u, p, e + 1e-9), u) >= level
