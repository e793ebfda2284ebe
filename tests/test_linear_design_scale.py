"""The linear (accuracy) designer's HiGHS settings change speed, never the optimum.

The reference is an independent solve of the same polytope with the previous settings
(HiGHS' automatic method, primal and dual feasibility 1e-10), on random priors for every
kind of uncertainty set, N <= 60; for N = 4 also the paper's form of the l1-ball polytope
with one constraint per (i, i', j), written out densely here."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from pmlkit.design import optimal_mechanism
from pmlkit.design.linear import linear_design_matrix, mechanism_polytope
from pmlkit.sets import Box, L1Ball, L1BoxSet, VertexSet


def reference_value(uset, p: np.ndarray, eps: float, gain: np.ndarray) -> float:
    poly = mechanism_polytope(uset, eps, n_outputs=gain.shape[1])
    c = np.zeros(poly.n_vars)
    c[poly.layout["W"]] = -(p[:, None] * gain).ravel()
    res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                  bounds=poly.bounds, method="highs",
                  options={"primal_feasibility_tolerance": 1e-10,
                           "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0
    return -float(res.fun)


def make_set(kind: str, p: np.ndarray, rng: np.random.Generator):
    if kind == "ball-2nm":
        return L1Ball(p, rng.uniform(0.2, 1.0) * 2 * p.min())
    if kind == "ball-exact":
        return L1Ball(p, rng.uniform(0.05, 0.4))
    if kind == "box":
        return Box(p * rng.uniform(0.5, 1.0, p.size),
                   np.minimum(p * rng.uniform(1.0, 1.5, p.size), 1.0))
    if kind == "l1box":
        return L1BoxSet(p, 0.1, p * 0.7, np.minimum(p * 1.3, 1.0))
    qs = np.vstack([p, rng.dirichlet(np.full(p.size, 5.0)), rng.dirichlet(np.full(p.size, 5.0))])
    return VertexSet(0.8 * p + 0.2 * qs)


KINDS = ["ball-2nm", "ball-exact", "box", "l1box", "vertex"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n,seed", [(8, 0), (25, 1), (60, 2)])
def test_optimum_equals_previous_settings(kind, n, seed):
    rng = np.random.default_rng(1000 * seed + KINDS.index(kind))
    p = rng.dirichlet(np.full(n, 4.0))
    eps = float(rng.uniform(0.1, 2.0))
    uset = make_set(kind, p, rng)
    gain = np.eye(n) if seed != 1 else rng.random((n, n))
    w = linear_design_matrix(uset, p, eps=eps, gain=gain)
    value = float(p @ (gain * w).sum(axis=1))
    ref = reference_value(uset, p, eps, gain)
    assert value == pytest.approx(ref, rel=1e-7, abs=1e-12)


def paper_form_value(p: np.ndarray, eps: float, beta: float) -> float:
    """max sum_i p_i W[i, i] s.t. W[i, j] <= e^eps' (p . W_j + beta/2 W[i', j]) for all
    i, i', j; rows sum to 1; W >= 0 (dense, one row per triple)."""
    n = p.size
    e = math.exp(eps) / (1 + beta * math.exp(eps) / 2)
    rows = []
    for i, i2, j in itertools.product(range(n), range(n), range(n)):
        r = np.zeros((n, n))
        r[:, j] -= e * p
        r[i2, j] -= e * beta / 2
        r[i, j] += 1
        rows.append(r.ravel())
    res = linprog(-(p[:, None] * np.eye(n)).ravel(), A_ub=np.array(rows),
                  b_ub=np.zeros(len(rows)), A_eq=np.kron(np.eye(n), np.ones(n)),
                  b_eq=np.ones(n), bounds=(0, None), method="highs")
    assert res.status == 0
    return -float(res.fun)


@pytest.mark.parametrize("seed", range(3))
def test_small_n_equals_the_paper_form(seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(4, 3.0))
    beta = float(rng.uniform(0, 2 * p.min()))
    eps = float(rng.uniform(0.05, 2.0))
    w = linear_design_matrix(L1Ball(p, beta), p, eps=eps)
    assert float(p @ np.diag(w)) == pytest.approx(paper_form_value(p, eps, beta), rel=1e-7)


def test_large_design_is_certified():
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.full(60, 5.0))
    for beta in (1.5 * float(p.min()), 0.2):
        m = optimal_mechanism(p, 1.0, beta=beta, utility="accuracy")
        assert m.certified_eps <= 1.0 + 1e-9
        assert np.all(m.matrix >= 0)
        assert np.allclose(m.matrix.sum(axis=1), 1.0, atol=1e-12)
