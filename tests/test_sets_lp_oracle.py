"""Every uncertainty set against an independent generic LP (scipy HiGHS).

For each set kind (``L1Ball``, ``Box``, ``VertexSet``, ``L1BoxSet``) and each confidence
method, the exact ``min_{Q in set} Q . w`` is checked three ways on random (hypothesis) and
adversarial (fixed list) instances:

- batched ``min_linear`` over many columns == ``min_linear`` one column at a time;
- both == a generic LP written from the set's *defining constraints* only (centre, radius,
  bounds, vertices), not from the greedy;
- the greedy's minimiser lies in the set (checked here from the definition) and attains
  the value, so the greedy value is an upper bound on the true minimum and the LP a lower
  bound (up to HiGHS' tolerance): together an equality.

Then the same for ``leakage_capacity`` (``max_j log max_i W[i, j] - log min_Q Q . W[:, j]``
from the LP minima), ``leakage_sensitivity`` and ``worst_case_distribution`` (in the set,
attaining the capacity).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit.confidence import METHODS, confidence_set
from pmlkit.sets import Box, L1Ball, L1BoxSet, UncertaintySet, VertexSet
from pmlkit.worstcase import leakage_capacity, leakage_sensitivity, worst_case_distribution

_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


# ------------------------------------------------------------------ the independent oracle

def _lp_min(uset: UncertaintySet, w: np.ndarray) -> float:
    """``min Q . w`` by HiGHS over the set's defining constraints.

    Variables ``[Q (N), s (N)]`` with ``s >= |Q - center|`` and ``sum s <= radius`` for
    balls; ``lower <= Q <= upper`` for boxes; ``Q = V^T lam``, ``lam`` in the simplex for
    vertex sets."""
    from scipy.optimize import linprog

    n = uset.n
    if isinstance(uset, VertexSet):
        v = np.asarray(uset.vertices)
        res = linprog(v @ w, A_eq=np.ones((1, v.shape[0])), b_eq=[1.0],
                      bounds=[(0, None)] * v.shape[0], method="highs", options=_HIGHS)
        assert res.status == 0, res.message
        return float(res.fun)
    lo = np.zeros(n)
    hi = np.ones(n)
    if isinstance(uset, Box | L1BoxSet):
        lo, hi = np.asarray(uset.lower), np.asarray(uset.upper)
    a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
    bounds = [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]
    if isinstance(uset, L1Ball | L1BoxSet):
        c = np.asarray(uset.center)
        eye = np.eye(n)
        a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
        b_ub = np.concatenate([c, -c, [uset.radius]])
        bounds += [(0, None)] * n
    else:
        a_ub, b_ub = None, None
        bounds += [(0, 0)] * n
    res = linprog(np.concatenate([w, np.zeros(n)]), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq,
                  b_eq=[1.0], bounds=bounds, method="highs", options=_HIGHS)
    assert res.status == 0, res.message
    return float(res.fun)


def _in_set(uset: UncertaintySet, q: np.ndarray, tol: float = 1e-12) -> bool:
    """Membership from the definition (not ``uset.contains``)."""
    if q.shape != (uset.n,) or (q < -tol).any() or abs(q.sum() - 1.0) > 4 * tol:
        return False
    if isinstance(uset, Box | L1BoxSet):
        if (q < np.asarray(uset.lower) - tol).any() or (q > np.asarray(uset.upper) + tol).any():
            return False
    if isinstance(uset, L1Ball | L1BoxSet):
        if np.abs(q - np.asarray(uset.center)).sum() > uset.radius + 4 * tol:
            return False
    if isinstance(uset, VertexSet):
        return bool(uset.contains(q, tol=1e-9))
    return True


def _check_minima(uset: UncertaintySet, w: np.ndarray) -> None:
    batched = uset.min_linear(w)
    single = np.array([uset.min_linear(w[:, j])[0] for j in range(w.shape[1])])
    scale = max(1.0, float(np.abs(w).max()))
    np.testing.assert_allclose(batched, single, rtol=1e-12, atol=1e-15 * scale)
    arg = uset.argmin_linear(w)
    for j in range(w.shape[1]):
        q = arg[j]
        assert _in_set(uset, q), (uset, j, q)
        assert float(q @ w[:, j]) == pytest.approx(batched[j], rel=1e-12, abs=1e-15 * scale)
        lp = _lp_min(uset, w[:, j])
        assert batched[j] == pytest.approx(lp, rel=1e-7, abs=1e-8 * scale), (uset, j)
    # the maximum is the minimum of the negated objective
    np.testing.assert_allclose(uset.max_linear(w), -uset.min_linear(-w), rtol=1e-12,
                               atol=1e-15 * scale)


def _lp_capacity(uset: UncertaintySet, w: np.ndarray) -> float:
    """``max_j log max_i W[i, j] - log min_Q Q . W[:, j]`` over the columns that some Q in
    the set makes possible (max over the set by the LP too)."""
    best = -math.inf
    for j in range(w.shape[1]):
        top = float(w[:, j].max())
        if top <= 0 or -_lp_min(uset, -w[:, j]) <= 0:
            continue  # the column never occurs
        lo = _lp_min(uset, w[:, j])
        best = max(best, math.inf if lo <= 0 else math.log(top) - math.log(lo))
    return max(0.0, best)


def _check_capacity(uset: UncertaintySet, w: np.ndarray) -> None:
    got = leakage_capacity(w, uset)
    expected = _lp_capacity(uset, w)
    if math.isinf(expected) or expected > 25:
        assert got > 25, (uset, got, expected)
        q = worst_case_distribution(w, uset)
        assert _in_set(uset, q)
        if math.isinf(got):  # the limit point: some possible output gets probability 0
            assert (q @ w).min() <= 1e-15
        else:
            assert pmlkit.eps_min(w, q) == pytest.approx(got, rel=1e-9)
        return
    # HiGHS' feasibility tolerance 1e-10 on minima >= 1e-13 relative-ish: 1e-6 on the log
    assert got == pytest.approx(expected, rel=1e-6, abs=1e-6), (uset, w, got, expected)
    q = worst_case_distribution(w, uset)
    assert _in_set(uset, q)
    assert pmlkit.eps_min(w, q) == pytest.approx(got, rel=1e-9, abs=1e-9)
    center = getattr(uset, "center", None)
    if center is not None:
        sens = leakage_sensitivity(w, center, uset)
        assert sens == pytest.approx(max(0.0, got - pmlkit.eps_min(w, center)), abs=1e-9)


# ------------------------------------------------------------------ instances

def _mechanism(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    w = rng.dirichlet(np.full(m, float(rng.choice([0.2, 1.0, 5.0]))), size=n)
    if rng.random() < 0.4:  # exact zeros
        w[rng.random((n, m)) < 0.3] = 0.0
        w[np.arange(n), rng.integers(m, size=n)] += 0.1
        w /= w.sum(axis=1, keepdims=True)
    return w


def _objective(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """Signed objectives with ties (the greedy's sort order) and zeros."""
    w = rng.standard_normal((n, m))
    if rng.random() < 0.5:
        w = np.round(w, 1)
    return w


def _counts(rng: np.random.Generator, n: int) -> np.ndarray:
    m = int(rng.choice([1, 3, 10, 50, 1000]))
    c = rng.multinomial(m, rng.dirichlet(np.full(n, float(rng.choice([0.2, 1.0])))))
    return c


def _random_set(rng: np.random.Generator, n: int, kind: str) -> UncertaintySet:
    p = rng.dirichlet(np.full(n, float(rng.choice([0.2, 1.0, 5.0]))))
    if rng.random() < 0.3:
        p[rng.random(n) < 0.3] = 0.0
        p[rng.integers(n)] += 0.5
        p /= p.sum()
    pmin = float(p[p > 0].min())
    radius = float(rng.choice([0.0, 0.5 * pmin, 2 * pmin, 3 * pmin, 0.3, 1.0, 2.5]))
    half_lo = rng.random(n) * float(rng.choice([0.0, 0.01, 0.2, 1.0]))
    half_hi = rng.random(n) * float(rng.choice([0.0, 0.01, 0.2, 1.0]))
    lo, hi = np.clip(p - half_lo, 0, 1), np.clip(p + half_hi, 0, 1)
    pin = rng.random(n) < 0.2  # boxes that pin coordinates
    lo[pin] = hi[pin] = p[pin]
    if kind == "l1_ball":
        return L1Ball(p, radius)
    if kind == "box":
        return Box(lo, hi)
    if kind == "l1_box":
        return L1BoxSet(p, radius, lo, hi)
    if kind == "vertex_set":
        k = int(rng.integers(1, 6))
        return VertexSet(np.vstack([p, rng.dirichlet(np.ones(n), size=k - 1)]))
    counts = _counts(rng, n)
    delta = float(rng.choice([1e-6, 0.05, 0.5]))
    return confidence_set(counts, delta, confidence=kind).set


KINDS = ("l1_ball", "box", "l1_box", "vertex_set", *METHODS)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(KINDS),
       n=st.one_of(st.integers(2, 8), st.integers(9, 40)))
def test_min_linear_batched_equals_single_equals_lp(seed: int, kind: str, n: int) -> None:
    rng = np.random.default_rng(seed)
    uset = _random_set(rng, n, kind)
    _check_minima(uset, _objective(rng, n, int(rng.integers(1, 12))))


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(KINDS),
       n=st.one_of(st.integers(2, 8), st.integers(9, 40)))
def test_capacity_and_worst_case_match_lp(seed: int, kind: str, n: int) -> None:
    rng = np.random.default_rng(seed)
    uset = _random_set(rng, n, kind)
    _check_capacity(uset, _mechanism(rng, n, int(rng.integers(2, 10))))


def _cp_l1_box(counts: list[int], delta: float) -> UncertaintySet:
    return confidence_set(counts, delta, confidence="l1-box").set


# sets on which a greedy can go wrong: big box room (sum(upper - center) far above 4 with
# small m and large N), zero counts, radius past 2 p_min, pinned and single-point boxes
ADVERSARIAL: list[tuple[str, Any]] = [
    ("reported l1-box example", lambda: _cp_l1_box([3, 1, 2, 5, 2, 2, 5], 1e-6)),
    ("l1-box N=40 m=40", lambda: _cp_l1_box([1] * 40, 0.05)),
    ("l1-box N=40 zero counts", lambda: _cp_l1_box([0] * 20 + [3] * 20, 1e-6)),
    ("l1-box N=12 one sample", lambda: _cp_l1_box([1] + [0] * 11, 0.5)),
    ("box-cp N=40 m=5", lambda: confidence_set([1] * 5 + [0] * 35, 0.05,
                                               confidence="box-cp").set),
    ("auto N=30", lambda: confidence_set(list(range(30)), 1e-3, confidence="auto").set),
    ("l1-kappa skewed", lambda: confidence_set([500, 1, 0, 2], 1e-3,
                                               confidence="l1-kappa").set),
    ("ball radius past 2 pmin", lambda: L1Ball([0.5, 0.3, 0.15, 0.05, 0.0], 0.4)),
    ("ball radius 0", lambda: L1Ball([0.5, 0.3, 0.2], 0.0)),
    ("ball whole simplex", lambda: L1Ball([0.25] * 4, 2.0)),
    ("single-point box", lambda: Box([0.2, 0.0, 0.5, 0.3], [0.2, 0.0, 0.5, 0.3])),
    ("single-point box, inexact sum",
     lambda: Box([0.1, 0.2, 0.7, 0.0], [0.1, 0.2, 0.7, 0.0])),
    ("pinned box", lambda: Box([0.1, 0.0, 0.0, 0.2], [0.1, 0.9, 0.0, 0.9])),
    ("l1-box pinned", lambda: L1BoxSet([0.1, 0.4, 0.5, 0.0], 0.6, [0.1, 0.0, 0.2, 0.0],
                                       [0.1, 1.0, 1.0, 0.0])),
    ("l1-box radius 0", lambda: L1BoxSet([0.3, 0.7], 0.0, [0.0, 0.0], [1.0, 1.0])),
    ("l1-box single point", lambda: L1BoxSet([0.3, 0.7], 1.0, [0.3, 0.7], [0.3, 0.7])),
    ("single vertex", lambda: VertexSet([[0.2, 0.0, 0.8]])),
    # N > 64: the ball and box greedies select the top entries with argpartition
    ("l1 N=100 m=150", lambda: confidence_set([0] * 50 + [3] * 50, 1e-3).set),
    ("ball N=100 radius past 2 pmin",
     lambda: L1Ball(np.arange(100.0) / 4950.0, 0.05)),
    ("box-cp N=100 m=30", lambda: confidence_set([1] * 30 + [0] * 70, 0.05,
                                                 confidence="box-cp").set),
    ("l1-box N=100 m=30", lambda: _cp_l1_box([1] * 30 + [0] * 70, 0.05)),
    ("N=1 ball", lambda: L1Ball([1.0], 1.0)),
]


@pytest.mark.parametrize(("name", "build"), ADVERSARIAL, ids=[a for a, _ in ADVERSARIAL])
def test_adversarial_sets_match_lp(name: str, build: Any) -> None:
    uset = build()
    rng = np.random.default_rng(sum(map(ord, name)))
    n = uset.n
    big = n > 40  # the LP oracle is slow there: fewer columns
    _check_minima(uset, _objective(rng, n, 4 if big else 25))
    # one coordinate at a time: the coordinate bounds
    _check_minima(uset, np.eye(n)[:, _some(n)])
    for _ in range(1 if big else 3):
        _check_capacity(uset, _mechanism(rng, n, 3 if big else max(2, min(n, 8))))
    if not big:
        _check_capacity(uset, np.eye(n))


def _some(n: int) -> np.ndarray:
    """Every coordinate for small N; the first, last and every 9th beyond 40."""
    return np.arange(n) if n <= 40 else np.unique(np.r_[0:n:9, n - 1])


@pytest.mark.parametrize(("name", "build"), ADVERSARIAL, ids=[a for a, _ in ADVERSARIAL])
def test_coordinate_bounds_match_lp(name: str, build: Any) -> None:
    """``coordinate_bounds`` are the exact extreme coordinates (never tightened by
    rounding: a tightened upper bound of 0 would hide a column, a raised one on a zero
    coordinate would report infinite leakage)."""
    uset = build()
    lo, hi = uset.coordinate_bounds()
    eye = np.eye(uset.n)
    for x in _some(uset.n):
        assert lo[x] <= _lp_min(uset, eye[x]) + 1e-9
        assert lo[x] == pytest.approx(_lp_min(uset, eye[x]), abs=1e-9)
        assert hi[x] == pytest.approx(-_lp_min(uset, -eye[x]), abs=1e-9)


# ------------------------------------------------------------------ regressions

def test_reported_l1_box_l1_box_batched_minimum_is_not_too_large() -> None:
    """The l1-box set of counts [3, 1, 2, 5, 2, 2, 5] at delta = 1e-6 has box room
    ``sum(upper - center) = 4.14``: the old greedy merged the rows of a batch with a fixed
    offset of 4 per row, so rows overlapped and the batched minima of columns 2.. came out
    far too large (0.18 instead of 0.0034)."""
    uset = _cp_l1_box([3, 1, 2, 5, 2, 2, 5], 1e-6)
    assert float(np.sum(np.asarray(uset.upper) - np.asarray(uset.center))) > 4
    w = np.array([[0.0, 0.5], [0.0, 0.5], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0],
                  [0.0, 0.0]])
    w = np.hstack([w, w, w])
    got = uset.min_linear(w)
    lps = [_lp_min(uset, w[:, j]) for j in range(w.shape[1])]
    np.testing.assert_allclose(got, lps, rtol=1e-7, atol=1e-12)


def _exact_member(q: list[Fraction], uset: L1BoxSet) -> bool:
    c = [Fraction(float(x)) for x in uset.center]
    lo = [Fraction(float(x)) for x in uset.lower]
    hi = [Fraction(float(x)) for x in uset.upper]
    return (sum(q) == 1 and all(a <= x <= b for a, x, b in zip(lo, q, hi, strict=True))
            and sum(abs(x - y) for x, y in zip(q, c, strict=True))
            <= Fraction(float(uset.radius)))


def _witness(uset: L1BoxSet) -> list[Fraction]:
    """The centre with category 3 lowered to its bound and category 5 taking the rest
    (so that the entries sum to 1 exactly)."""
    q = [Fraction(float(x)) for x in uset.center]
    q[3] = Fraction(float(uset.lower[3]))
    q[5] = 1 - (sum(q) - q[5])
    return q


def test_reported_l1_box_design_certificate_holds() -> None:
    """``design_from_samples`` on counts [3, 1, 2, 5, 2, 2, 5], eps = 1.5, delta = 1e-6,
    l1-box: the old code certified 1.5 while the distribution
    Q = (0.15, 0.05, 0.1, lower_3, 0.1, 0.3452395, 0.25) of the recorded set (exact
    rational membership) gave the released mechanism eps_min = 5.35."""
    from pmlkit.design import design_from_samples

    counts = [3, 1, 2, 5, 2, 2, 5]
    samples = np.repeat(np.arange(7), counts)
    res = design_from_samples(samples, 1.5, 1e-6, confidence="l1-box")
    uset = _cp_l1_box(counts, 1e-6)
    assert res.guarantee.set == uset.to_dict()
    w = np.asarray(res.mechanism.matrix)
    # the reported witness: mass moved from category 3 (down to its lower bound) to
    # category 5, built and checked in exact rationals
    q = _witness(uset)
    assert _exact_member(q, uset)
    qf = np.array([float(x) for x in q])
    cert = res.guarantee.certified_eps
    assert cert <= 1.5 + 1e-9
    assert pmlkit.eps_min(w, qf) <= cert + 1e-9
    # and the certificate is the exact worst case over the set by the LP oracle
    assert cert == pytest.approx(_lp_capacity(uset, w), abs=1e-6)


def test_reported_l1_box_witness_breaks_a_mechanism_certified_by_the_old_greedy() -> None:
    """The reported witness itself: for the mechanism the old code returned (its columns, rounded as
    printed in the report), Q gives eps_min = 5.35 > 1.5, and the fixed capacity says so."""
    w = np.array([[0.93183162, 0.0, 0.06816838, 0.0],
                  [0.20767129, 0.0, 0.79232871, 0.0],
                  [0.93183162, 0.0, 0.06816838, 0.0],
                  [0.20767129, 0.72416033, 0.06816838, 0.0],
                  [0.93183162, 0.0, 0.06816838, 0.0],
                  [0.20767129, 0.0, 0.79232871, 0.0],
                  [0.20767129, 0.0, 0.06816838, 0.72416033]])
    w /= w.sum(axis=1, keepdims=True)
    uset = _cp_l1_box([3, 1, 2, 5, 2, 2, 5], 1e-6)
    q = _witness(uset)
    assert _exact_member(q, uset)
    qf = np.array([float(x) for x in q])
    # eps_min(W, Q) = max_y log(max_x W[x, y] / sum_x Q_x W[x, y]) with P_Y(y) in exact
    # rationals (Q exact, W's floats exact): the witness really breaks the certificate 1.5
    wf = [[Fraction(float(v)) for v in row] for row in w]
    ratios = [max(wf[x][y] for x in range(7)) / sum(q[x] * wf[x][y] for x in range(7))
              for y in range(4) if any(wf[x][y] for x in range(7))]
    exact = max(math.log(r.numerator) - math.log(r.denominator) for r in ratios)
    assert exact > 5.3 > 1.5  # the report's 5.35, far above the certificate
    assert pmlkit.eps_min(w, qf) == pytest.approx(exact, rel=1e-12)
    assert leakage_capacity(w, uset) >= pmlkit.eps_min(w, qf) - 1e-9
    assert leakage_capacity(w, uset) == pytest.approx(_lp_capacity(uset, w), abs=1e-6)


def test_single_point_box_gives_its_exact_value() -> None:
    """A box with lower == upper is one distribution p: its capacity is eps_min(W, p).
    The old coordinate bounds rounded 1 - sum(upper) + upper(x) to 1.1e-16 > 0 on a zero
    coordinate, so a column fed only by it was 'possible' with minimum 0: inf."""
    p = np.array([0.21620429021805831, 0.7628412365395028, 0.0, 0.02095447324243887])
    assert math.fsum(p) != float(np.sum(p)) or np.sum(p) != 1.0
    w = np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.0, 0.1, 0.9], [0.3, 0.3, 0.4]])
    box = Box(p, p)
    assert leakage_capacity(w, box) == pytest.approx(pmlkit.eps_min(w, p), rel=1e-12)
    lo, hi = box.coordinate_bounds()
    assert lo[2] == 0.0 and hi[2] == 0.0
    np.testing.assert_array_equal(lo, p)
    np.testing.assert_array_equal(hi, p)


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 12))
def test_single_point_sets_give_exact_eps_min(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    p[rng.random(n) < 0.3] = 0.0
    p[rng.integers(n)] += 0.3
    p /= p.sum()
    w = _mechanism(rng, n, int(rng.integers(2, 8)))
    expected = pmlkit.eps_min(w, p)
    for uset in (Box(p, p), L1BoxSet(p, 0.5, p, p), L1Ball(p, 0.0), VertexSet(p)):
        assert leakage_capacity(w, uset) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@settings(max_examples=200)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 12))
def test_box_tightening_never_shrinks_the_exact_intersection(seed: int,
                                                                        n: int) -> None:
    """The boxes of the confidence methods are intersected with the simplex
    (``lo_i' = max(lo_i, 1 - sum_{j != i} hi_j)``). In exact rationals the new bounds must
    be at least as loose as that intersection: a lower bound raised by rounding would
    exclude distributions of the confidence set (and under-state worst cases)."""
    from pmlkit.confidence import _tighten

    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    lo = p * rng.random(n) ** 3
    hi = np.minimum(p + (1 - p) * rng.random(n) ** 3, 1.0)
    lo2, hi2 = _tighten(lo[None, :], hi[None, :], p[None, :])
    f_lo = [Fraction(float(x)) for x in lo]
    f_hi = [Fraction(float(x)) for x in hi]
    s_lo, s_hi = sum(f_lo), sum(f_hi)
    blo, bhi = Box(lo, hi).coordinate_bounds()  # the same rule in the set itself
    for i in range(n):
        exact_lo = max(f_lo[i], 1 - (s_hi - f_hi[i]))
        exact_hi = min(f_hi[i], 1 - (s_lo - f_lo[i]))
        assert Fraction(float(lo2[0, i])) <= exact_lo, i
        assert Fraction(float(hi2[0, i])) >= exact_hi, i
        assert f_lo[i] <= Fraction(float(blo[i])) <= exact_lo, i
        assert exact_hi <= Fraction(float(bhi[i])) <= f_hi[i], i
