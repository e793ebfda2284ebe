"""Outside oracles: pmlkit against libraries it does not share code with.

* ``qif`` (quantitative information flow, an optional test dependency): in
  ``test_oracles_qif.py``, which alone is skipped when qif is not installed.

* ``scipy.optimize.linprog`` (HiGHS), a generic LP solver, for the exact worst cases over
  uncertainty sets on random instances: for a set ``S`` and a column ``w_j``,
  ``min_{Q in S} Q . w_j`` is an LP, and
  ``C(W, S) = max_j log( max_i W[i, j] / min_{Q in S} Q . w_j )`` (Def. localcap), because
  ``eps_min(W, Q)`` is a max over columns of a quantity decreasing in ``Q . w_j``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import pmlkit

F = TypeVar("F", bound=Callable[..., Any])

# Every hypothesis test here is derandomized: CI sees a fixed set of examples (HiGHS'
# tolerances were checked on them), so a newly drawn edge case cannot make CI flaky.


def _needs(module: str, *names: str) -> Callable[[F], F]:
    """Documents what a test exercises; a missing module or name is an error (the suite
    fails), never a skip: these are pmlkit's own public names."""
    mod = importlib.import_module(module)
    for n in names:
        getattr(mod, n)
    return lambda fn: fn


# --------------------------------------------------------------------------------------
# random instances
# --------------------------------------------------------------------------------------

@st.composite
def mechanisms(draw: st.DrawFn, max_n: int = 6, max_m: int = 6,
               zeros: bool = True) -> np.ndarray:
    n = draw(st.integers(2, max_n))
    m = draw(st.integers(2, max_m))
    elems = st.floats(0.0, 1.0) if zeros else st.floats(1e-3, 1.0)
    raw = draw(arrays(np.float64, (n, m), elements=elems))
    if zeros:  # sprinkle exact zeros, keep every row with some mass
        mask = draw(arrays(np.bool_, (n, m)))
        raw = np.where(mask, 0.0, raw)
    raw[raw.sum(axis=1) == 0, 0] = 1.0
    raw = raw + 1e-12 * (raw > 0)
    return raw / raw.sum(axis=1, keepdims=True)


@st.composite
def priors(draw: st.DrawFn, n: int, positive: bool = True) -> np.ndarray:
    lo = 1e-3 if positive else 0.0
    raw = draw(arrays(np.float64, (n,), elements=st.floats(lo, 1.0)))
    if raw.sum() == 0:
        raw[0] = 1.0
    return raw / raw.sum()


def _lp_safe(w: np.ndarray) -> np.ndarray:
    """Entries below 1e-4 set to 0 (HiGHS' tolerances are absolute, ~1e-7: a 1e-12 entry
    would be read as 0 by the oracle, not by pmlkit), rows renormalised."""
    w = np.where(w < 1e-4, 0.0, w)
    w[w.sum(axis=1) == 0, 0] = 1.0
    return w / w.sum(axis=1, keepdims=True)


def _random_instance(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    w = rng.dirichlet(np.full(m, 0.7), size=n)
    w[rng.random((n, m)) < 0.15] = 0.0
    w[w.sum(axis=1) == 0, 0] = 1.0
    return _lp_safe(w / w.sum(axis=1, keepdims=True))


# --------------------------------------------------------------------------------------
# scipy linprog: exact worst cases over uncertainty sets
# --------------------------------------------------------------------------------------

def _lp_min_over_l1_ball(w_col: np.ndarray, center: np.ndarray, beta: float) -> float:
    """``min Q . w`` over ``{Q in simplex : ||Q - center||_1 <= beta}`` by linprog.

    Variables ``[Q, u]`` with ``u >= |Q - center|``, ``sum u <= beta``, ``sum Q = 1``."""
    from scipy.optimize import linprog

    n = center.size
    c = np.concatenate([w_col, np.zeros(n)])
    eye = np.eye(n)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
    b_ub = np.concatenate([center, -center, [beta]])
    a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
    # tight tolerances: near an extremal W the bound holds with equality, and HiGHS'
    # default 1e-7 feasibility slack on a small min Q . w is a ~1e-6 error in its log
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0],
                  bounds=[(0, None)] * (2 * n), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10,
                           "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0, res.message
    return float(res.fun)


def _lp_min_over_box(w_col: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    from scipy.optimize import linprog

    n = lo.size
    res = linprog(w_col, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=list(zip(lo, hi, strict=True)),
                  method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def _capacity_from_column_minima(w: np.ndarray, minima: np.ndarray) -> float:
    top = w.max(axis=0)
    used = top > 0
    with np.errstate(divide="ignore"):
        vals = np.log(top[used]) - np.log(np.maximum(minima[used], 0.0))
    return float(max(0.0, vals.max()))


def _l1_instances(seed: int, count: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n, m = int(rng.integers(2, 8)), int(rng.integers(2, 6))
        w = _random_instance(rng, n, m)
        p = rng.dirichlet(np.full(n, rng.choice([0.3, 1.0, 5.0])))
        beta = float(rng.choice([0.0, 1e-3, 0.05, 0.3, 1.0, 2.5]) * rng.random())
        out.append((w, p, beta))
    return out


L1_CASES = _l1_instances(7, 150)


@_needs("pmlkit.worstcase", "leakage_capacity", "leakage_sensitivity")
@_needs("pmlkit.sets", "L1Ball")
def test_leakage_capacity_over_l1_ball_matches_linprog() -> None:
    from pmlkit.sets import L1Ball
    from pmlkit.worstcase import leakage_capacity, leakage_sensitivity

    for w, p, beta in L1_CASES:
        minima = np.array([_lp_min_over_l1_ball(w[:, j], p, beta) for j in range(w.shape[1])])
        expected = _capacity_from_column_minima(w, minima)
        ball = L1Ball(p, beta)
        got = leakage_capacity(w, ball)
        if math.isinf(expected) or expected > 30:
            assert got > 30 or math.isinf(got), (w, p, beta, got, expected)
            continue
        # HiGHS' feasibility tolerance is 1e-7, hence 1e-6 on the log
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-6), (w, p, beta)
        sens = leakage_sensitivity(w, p, ball)
        assert sens == pytest.approx(expected - pmlkit.eps_min(w, p), rel=1e-6, abs=1e-6)


@_needs("pmlkit.worstcase", "leakage_capacity")
@_needs("pmlkit.sets", "Box")
def test_leakage_capacity_over_box_matches_linprog() -> None:
    from pmlkit.sets import Box
    from pmlkit.worstcase import leakage_capacity

    rng = np.random.default_rng(11)
    for _ in range(120):
        n, m = int(rng.integers(2, 8)), int(rng.integers(2, 6))
        w = _random_instance(rng, n, m)
        p = rng.dirichlet(np.ones(n))
        half = rng.random(n) * rng.choice([0.01, 0.1, 0.5])
        lo, hi = np.clip(p - half, 0, 1), np.clip(p + half, 0, 1)
        minima = np.array([_lp_min_over_box(w[:, j], lo, hi) for j in range(m)])
        expected = _capacity_from_column_minima(w, minima)
        got = leakage_capacity(w, Box(lo, hi))
        if math.isinf(expected) or expected > 30:
            assert got > 30 or math.isinf(got)
            continue
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-6), (w, lo, hi)


def _lp_min_over_l1_box(w_col: np.ndarray, center: np.ndarray, beta: float, lo: np.ndarray,
                        hi: np.ndarray) -> float:
    """``min Q . w`` over the l1-ball intersected with the box ``lo <= Q <= hi``."""
    from scipy.optimize import linprog

    n = center.size
    c = np.concatenate([w_col, np.zeros(n)])
    eye = np.eye(n)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
    b_ub = np.concatenate([center, -center, [beta]])
    a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
    bounds = [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)] + [(0, None)] * n
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=bounds,
                  method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


@_needs("pmlkit.worstcase", "leakage_capacity")
@_needs("pmlkit.sets", "L1BoxSet")
def test_leakage_capacity_over_l1_box_matches_linprog() -> None:
    """The ball-box intersection (beyond the paper): exact greedy vs a generic LP."""
    from pmlkit.sets import L1BoxSet
    from pmlkit.worstcase import leakage_capacity

    rng = np.random.default_rng(5)
    for _ in range(100):
        n, m = int(rng.integers(2, 7)), int(rng.integers(2, 5))
        w = _random_instance(rng, n, m)
        p = rng.dirichlet(np.ones(n))
        half = rng.random(n) * rng.choice([0.02, 0.1, 0.4])
        lo, hi = np.clip(p - half, 0, 1), np.clip(p + half, 0, 1)
        beta = float(rng.choice([0.0, 0.01, 0.1, 0.5, 2.0]))
        minima = np.array([_lp_min_over_l1_box(w[:, j], p, beta, lo, hi) for j in range(m)])
        expected = _capacity_from_column_minima(w, minima)
        got = leakage_capacity(w, L1BoxSet(p, beta, lo, hi))
        if math.isinf(expected) or expected > 30:
            assert got > 30 or math.isinf(got)
            continue
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-6), (w, p, beta, lo, hi)


@_needs("pmlkit.worstcase", "leakage_capacity")
@_needs("pmlkit.sets", "VertexSet")
def test_leakage_capacity_over_vertex_set_is_max_over_vertices() -> None:
    """Convexity of eps_min in the prior (Prop. epsPMLisconvex): the sup over a polytope is
    attained at a vertex; checked against random points of the hull too."""
    from pmlkit.sets import VertexSet
    from pmlkit.worstcase import leakage_capacity

    rng = np.random.default_rng(3)
    for _ in range(60):
        n, m, k = int(rng.integers(2, 6)), int(rng.integers(2, 5)), int(rng.integers(1, 5))
        w = _random_instance(rng, n, m)
        verts = rng.dirichlet(np.ones(n), size=k)
        got = leakage_capacity(w, VertexSet(verts))
        at_vertices = max(pmlkit.eps_min(w, v) for v in verts)
        assert got == pytest.approx(at_vertices, rel=1e-10, abs=1e-12)
        inside = rng.dirichlet(np.ones(k), size=50) @ verts
        assert max(pmlkit.eps_min(w, q) for q in inside) <= got + 1e-10


@_needs("pmlkit.bounds", "sensitivity_bound")
@_needs("pmlkit.worstcase", "leakage_sensitivity")
@_needs("pmlkit.sets", "L1Ball")
@settings(max_examples=80, derandomize=True)
@given(w=mechanisms(max_n=5, max_m=5), data=st.data())
def test_sensitivity_bound_dominates_linprog_sensitivity(w: np.ndarray,
                                                        data: st.DataObject) -> None:
    """Thm l1gamma: for W eps-PML w.r.t. p and beta < 2 p_min, the exact sensitivity (by LP)
    is at most the theorem's bound (with eps = eps_min(W, p), the tightest admissible)."""
    from pmlkit.bounds import sensitivity_bound

    w = _lp_safe(w)
    p = data.draw(priors(w.shape[0]))
    beta = data.draw(st.floats(0.0, 0.999)) * 2 * float(p.min())
    eps = pmlkit.eps_min(w, p)
    bound = sensitivity_bound(p, eps=eps, beta=beta)
    minima = np.array([_lp_min_over_l1_ball(w[:, j], p, beta) for j in range(w.shape[1])])
    exact = _capacity_from_column_minima(w, minima) - eps
    assert exact <= bound + 1e-6 * max(1.0, abs(bound))  # HiGHS tolerance


@_needs("pmlkit.bounds", "lipschitz_bound", "leakage_bound")
@_needs("pmlkit.worstcase", "leakage_capacity")
@_needs("pmlkit.sets", "L1Ball")
@settings(max_examples=80, derandomize=True)
@given(w=mechanisms(max_n=5, max_m=5), data=st.data())
def test_lipschitz_and_leakage_bounds_hold(w: np.ndarray, data: st.DataObject) -> None:
    """Thm lipschitz and Cor. leakagebound on random pairs (P, Q), against exact eps_min:
    ``|eps_min(W,P) - eps_min(W,Q)| <= exp(C(W, B)) ||P-Q||_1`` with ``C`` the capacity of
    ``B = B_{||P-Q||}(P)`` (by LP, independent of pmlkit's greedy), and
    ``eps_min(W,Q) <= eps - log(1 - e^eps ||P-Q||_1 / 2)`` with ``eps = eps_min(W, P)``."""
    from pmlkit.bounds import leakage_bound, lipschitz_bound

    w = _lp_safe(w)
    n = w.shape[0]
    p = data.draw(priors(n))
    q = data.draw(priors(n))
    dist = float(np.abs(p - q).sum())
    e_p, e_q = pmlkit.eps_min(w, p), pmlkit.eps_min(w, q)
    minima = np.array([_lp_min_over_l1_ball(w[:, j], p, dist) for j in range(w.shape[1])])
    cap = _capacity_from_column_minima(w, minima)
    assert abs(e_p - e_q) <= lipschitz_bound(capacity=cap, distance=dist) * (1 + 1e-6) + 1e-6
    assert e_q <= leakage_bound(eps=e_p, distance=dist) * (1 + 1e-9) + 1e-9


# --------------------------------------------------------------------------------------
# privatisation samples from W: chi-square goodness of fit (scipy.stats)
# --------------------------------------------------------------------------------------

@_needs("pmlkit.privatization", "privatize")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_privatize_output_frequencies_match_the_mechanism(seed: int) -> None:
    """For each input label, the outputs drawn by :func:`pmlkit.privatize` follow that row
    of W: Pearson chi-square test per row at level 1e-4 (Bonferroni over the rows), and a
    row with zeros never produces a zero-probability output. Seeded (research mode)."""
    from scipy.stats import chisquare

    rng = np.random.default_rng(100 + seed)
    n, m = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    w = rng.dirichlet(np.ones(m), size=n)
    w[0, 0] = 0.0
    w[0] /= w[0].sum()
    labels_in = [f"x{i}" for i in range(n)]
    labels_out = [f"y{j}" for j in range(m)]
    mech = pmlkit.Mechanism(w, tuple(labels_in), tuple(labels_out))
    per_row = 20_000
    values = np.repeat(np.array(labels_in, dtype=object), per_row)
    rng.shuffle(values)
    out = np.asarray(pmlkit.privatize(mech, values, rng=seed), dtype=object)
    assert out.shape == values.shape
    for i, lab in enumerate(labels_in):
        got = out[values == lab]
        counts = np.array([(got == y).sum() for y in labels_out])
        assert counts.sum() == per_row
        support = w[i] > 0
        assert (counts[~support] == 0).all()
        if support.sum() == 1:  # a deterministic row
            assert counts[support][0] == per_row
            continue
        res = chisquare(counts[support], per_row * w[i][support])
        assert res.pvalue > 1e-4 / n, (i, counts, per_row * w[i])
