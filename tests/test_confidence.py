"""Tests of pmlkit.confidence: each set against an independent computation, its edge cases,
its coverage by simulation (one-sided binomial test at level 0.001) and its use by the
worst-case machinery and the designers."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from pmlkit import confidence as C
from pmlkit.confidence import METHODS, ConfidenceSet, confidence_set
from pmlkit.errors import ValidationError

# ----------------------------------------------------------------- independent helpers


def ref_cp_lower(k: int, m: int, alpha: float) -> float:
    """One-sided exact lower bound by root-finding the binomial tail P_q[X >= k] = alpha."""
    if k == 0:
        return 0.0
    return optimize.brentq(lambda q: stats.binom.sf(k - 1, m, q) - alpha, 1e-300, 1.0,
                           xtol=1e-15, rtol=1e-13)


def mp_cp_lower(k: int, m: int, alpha: float) -> float:
    """The same in 40-digit arithmetic (mpmath bisection on the binomial tail sum)."""
    import mpmath

    if k == 0:
        return 0.0
    with mpmath.workdps(40):
        a = mpmath.mpf(alpha)

        def tail(q):  # P_q[X >= k] = 1 - P_q[X <= k - 1], summed over the shorter side
            if 2 * k > m:
                return sum(mpmath.binomial(m, i) * q**i * (1 - q) ** (m - i)
                           for i in range(k, m + 1))
            return 1 - sum(mpmath.binomial(m, i) * q**i * (1 - q) ** (m - i)
                           for i in range(k))

        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        for _ in range(110):
            mid = (lo + hi) / 2
            if tail(mid) < a:
                lo = mid
            else:
                hi = mid
        return float(lo)


def ref_kl(p: float, q: float) -> float:
    out = 0.0
    if p > 0:
        out += p * math.log(p / q)
    if p < 1:
        out += (1 - p) * math.log((1 - p) / (1 - q))
    return out


def ref_kl_interval(p: float, level: float) -> tuple[float, float]:
    if p == 0 or ref_kl(p, 1e-300) <= level:
        lo = 0.0
    else:
        lo = optimize.brentq(lambda q: ref_kl(p, q) - level, 1e-300, p, xtol=1e-15)
    if p == 1 or ref_kl(p, 1 - 1e-16) <= level:
        hi = 1.0
    else:
        hi = optimize.brentq(lambda q: ref_kl(p, q) - level, p, 1 - 1e-16, xtol=1e-15)
    return lo, hi


def brute_kappa(q: np.ndarray) -> float:
    n = q.size
    best = 0.0
    for r in range(n + 1):
        for a in itertools.combinations(range(n), r):
            s = float(q[list(a)].sum())
            best = max(best, min(s, 1 - s))
    return best


def contains_batch(method: str, counts: np.ndarray, delta: float, p: np.ndarray) -> np.ndarray:
    """Does each row's set contain p? From the batched constructions (checked against the
    public sets in test_batch_matches_public)."""
    m = counts.sum(axis=1)
    if method == "l1-box":
        return (contains_batch("l1", counts, delta / 2, p)
                & contains_batch("box-cp", counts, delta / 2, p))
    if method == "l1":
        r = C.batch_l1(counts, delta)
    elif method == "l1-kappa":
        r, _ = C.batch_l1_kappa(counts, delta)
    else:
        lo, hi = getattr(C, f"batch_{method.replace('-', '_')}")(counts, delta)
        tol = 1e-12
        return ((p >= lo - tol) & (p <= hi + tol)).all(axis=1)
    return np.abs(counts / m[:, None] - p).sum(axis=1) <= r + 1e-12


# ------------------------------------------------------------------ the interface


ALL_METHODS = (*METHODS[:-1], *(() if "l1-box" in METHODS else ("l1-box",)), "auto")


def test_methods_and_dataclass():
    assert METHODS[:5] == ("l1", "box-cp", "box-kl", "box-lower", "l1-kappa")
    assert METHODS[-1] == "auto" and set(METHODS) <= set(ALL_METHODS)
    cs = confidence_set([3, 7], 0.1)
    assert isinstance(cs, ConfidenceSet)
    assert cs.method == "l1" and cs.m == 10 and cs.n == 2 and cs.delta == 0.1
    with pytest.raises(AttributeError):
        cs.delta = 0.2  # frozen
    with pytest.raises(ValueError, match="read-only"):
        cs.p_hat[0] = 1.0  # read-only
    for method in ALL_METHODS:
        cs = confidence_set(np.array([5, 0, 2, 13]), np.float32(0.05), confidence=method)
        d = json.loads(json.dumps(cs.to_dict()))
        assert d["method"] == method and d["n"] == 4 and d["m"] == 20
        assert "coverage" in cs.description
        assert cs.set.contains(cs.p_hat)


def test_accepts_empirical_distribution():
    from pmlkit.estimation import empirical_distribution

    emp = empirical_distribution(["a", "b", "b", "c"], categories=["a", "b", "c", "d"])
    cs = confidence_set(emp, 0.1, confidence="box-cp")
    assert cs.n == 4 and cs.m == 4
    np.testing.assert_allclose(cs.p_hat, [0.25, 0.5, 0.25, 0.0])


@pytest.mark.parametrize("counts, match", [
    ([5], "at least 2 categories"),
    ([0, 0], "m >= 1"),
    ([1, -1, 3], ">= 0"),
    ([1.5, 2], "integers"),
    ([[1, 2]], "1-D"),
    ([1, float("nan")], "finite"),
])
def test_bad_counts(counts, match):
    with pytest.raises(ValidationError, match=match):
        confidence_set(counts, 0.1)


@pytest.mark.parametrize("delta", [0, -0.1, 1.5, float("nan"), float("inf"), "0.1", True])
def test_bad_delta(delta):
    for method in ("l1", "box-cp", "auto"):
        with pytest.raises(ValidationError, match="delta"):
            confidence_set([2, 3], delta, confidence=method)


def test_bad_method_and_options():
    with pytest.raises(ValidationError, match="confidence must be one of l1, box-cp"):
        confidence_set([2, 3], 0.1, confidence="wilson")
    with pytest.raises(ValidationError, match="takes no option split"):
        confidence_set([2, 3], 0.1, confidence="box-cp", split=0.3)
    with pytest.raises(ValidationError, match="split must be in"):
        confidence_set([2, 3], 0.1, confidence="l1-kappa", split=1.0)
    with pytest.raises(ValidationError, match="candidates"):
        confidence_set([2, 3], 0.1, confidence="auto", candidates=["auto"])
    with pytest.raises(ValidationError, match="candidates"):
        confidence_set([2, 3], 0.1, confidence="auto", candidates=[])
    with pytest.raises(ValidationError, match="distinct"):
        confidence_set([2, 3], 0.1, confidence="auto", candidates=["l1", "l1"])
    with pytest.raises(ValidationError, match="NaN"):
        confidence_set([2, 3], 0.1, confidence="auto", score=lambda s: float("nan"))


# ---------------------------------------------------- constructions vs independent math


def test_l1_radius_closed_form():
    import mpmath

    for counts, delta in (([3, 7], 1e-9), ([1] * 20, 0.05), (np.ones(10_000, int), 1e-3)):
        cs = confidence_set(counts, delta)
        n, m = len(counts), int(np.sum(counts))
        expect = mpmath.sqrt(2 / mpmath.mpf(m) * (mpmath.log(mpmath.mpf(2) ** n - 2)
                                                  - mpmath.log(delta)))
        assert cs.set.radius == pytest.approx(float(expect), rel=1e-12)
        np.testing.assert_allclose(cs.set.center, np.asarray(counts) / m)


@pytest.mark.parametrize("counts", [[0, 1], [1, 0], [3, 17], [10, 10], [200, 0]])
@pytest.mark.parametrize("delta", [1e-9, 0.05, 0.3])
def test_box_cp_binary_is_one_exact_interval(counts, delta):
    cs = confidence_set(counts, delta, confidence="box-cp")
    k, m = counts[0], sum(counts)
    # (scipy's binomtest(...).proportion_ci loses ~1e-10 at delta = 1e-9: 1 - delta/2 is
    # rounded before the quantile; mpmath is the reference here)
    lo, hi = cs.set.lower, cs.set.upper
    assert lo[0] == pytest.approx(mp_cp_lower(k, m, delta / 2), abs=1e-12)
    assert hi[0] == pytest.approx(1 - mp_cp_lower(m - k, m, delta / 2), abs=1e-12)
    assert lo[1] == pytest.approx(1 - hi[0], abs=1e-15)
    assert hi[1] == pytest.approx(1 - lo[0], abs=1e-15)


def test_box_cp_bonferroni_matches_root_finding():
    counts = np.array([0, 1, 7, 30, 62])
    delta = 0.02
    cs = confidence_set(counts, delta, confidence="box-cp")
    m, n = counts.sum(), counts.size
    ref_lo = np.array([ref_cp_lower(k, m, delta / (2 * n)) for k in counts])
    ref_hi = np.array([1 - ref_cp_lower(m - k, m, delta / (2 * n)) for k in counts])
    # the stored box is the exact coordinate bounds of (CP box ∩ simplex)
    t_lo = np.maximum(ref_lo, 1 - (ref_hi.sum() - ref_hi))
    t_hi = np.minimum(ref_hi, 1 - (ref_lo.sum() - ref_lo))
    np.testing.assert_allclose(cs.set.lower, t_lo, atol=1e-11)
    np.testing.assert_allclose(cs.set.upper, t_hi, atol=1e-11)
    # hand-derived closed forms: k = 0 -> upper 1 - a^(1/m) (before tightening)
    a = delta / (2 * n)
    assert ref_hi[0] == pytest.approx(1 - a ** (1 / m), rel=1e-9)


def test_box_kl_matches_root_finding():
    counts = np.array([0, 4, 16, 80])
    delta = 0.05
    cs = confidence_set(counts, delta, confidence="box-kl")
    m, n = counts.sum(), counts.size
    level = math.log(2 * n / delta) / m
    ref = np.array([ref_kl_interval(k / m, level) for k in counts])
    t_lo = np.maximum(ref[:, 0], 1 - (ref[:, 1].sum() - ref[:, 1]))
    t_hi = np.minimum(ref[:, 1], 1 - (ref[:, 0].sum() - ref[:, 0]))
    np.testing.assert_allclose(cs.set.lower, t_lo, atol=1e-10)
    np.testing.assert_allclose(cs.set.upper, t_hi, atol=1e-10)
    # N = 2: one interval with log(2/delta), no split
    cs2 = confidence_set([3, 9], delta, confidence="box-kl")
    lo, hi = ref_kl_interval(0.25, math.log(2 / delta) / 12)
    assert cs2.set.lower[0] == pytest.approx(lo, abs=1e-10)
    assert cs2.set.upper[0] == pytest.approx(hi, abs=1e-10)


@pytest.mark.parametrize("k, m", [(0, 5), (1, 1), (3, 10), (24, 100), (50, 100), (333, 1000)])
@pytest.mark.parametrize("delta", [1e-9, 0.1])
def test_box_lower_binary_is_folded_binomial_bound(k, m, delta):
    cs = confidence_set([k, m - k], delta, confidence="box-lower")
    t = min(k, m - k)

    def g(tau):  # P[t <= X <= m - t], X ~ Bin(m, tau), by direct summation
        x = np.arange(t, m - t + 1)
        return float(stats.binom.pmf(x, m, tau).sum())

    if t == 0:
        expect = 0.0
    elif g(0.5) <= delta:
        expect = 0.5
    else:
        expect = optimize.brentq(lambda tau: g(tau) - delta, 1e-300, 0.5, xtol=1e-14)
    np.testing.assert_allclose(cs.set.lower, [expect, expect], atol=1e-9)
    np.testing.assert_allclose(cs.set.upper, [1 - expect, 1 - expect], atol=1e-9)


def test_box_lower_general_n_matches_one_sided_cp():
    counts = np.array([2, 0, 9, 39])
    delta = 0.1
    cs = confidence_set(counts, delta, confidence="box-lower")
    m, n = counts.sum(), counts.size
    ref = np.array([ref_cp_lower(k, m, delta / n) for k in counts])
    np.testing.assert_allclose(cs.set.lower, ref, atol=1e-11)
    np.testing.assert_allclose(cs.set.upper, 1 - (ref.sum() - ref), atol=1e-11)


def test_l1_kappa_radius_by_hand():
    counts = np.array([1980, 15, 5])
    delta, split = 1e-3, 0.5
    cs = confidence_set(counts, delta, confidence="l1-kappa")
    m, n = 2000, 3
    lo_max = ref_cp_lower(1980, m, split * delta / n)
    k_up = min(0.5, 1 - lo_max)
    phi = math.log((1 - k_up) / k_up) / (1 - 2 * k_up)
    beta = 2 * math.sqrt((math.log(2 ** n - 2) - math.log((1 - split) * delta)) / (m * phi))
    assert cs.details["kappa_upper"] == pytest.approx(k_up, rel=1e-9)
    assert cs.set.radius == pytest.approx(beta, rel=1e-9)
    # far smaller than the paper's ball for skewed data
    assert cs.set.radius < 0.8 * confidence_set(counts, delta).set.radius


@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=8).filter(lambda v: sum(v) > 0))
def test_kappa_upper_bound_by_brute_force(v):
    """kappa_Q <= min(1/2, 1 - max_i Q_i) for every Q (the step behind "l1-kappa")."""
    q = np.asarray(v) / sum(v)
    assert brute_kappa(q) <= min(0.5, 1 - q.max()) + 1e-12


@given(k=st.integers(0, 400), extra=st.integers(0, 400),
       delta=st.floats(1e-12, 0.5))
def test_cp_inside_kl_and_folded_tighter(k, extra, delta):
    """Exact tails are below the Chernoff bound, so the CP interval lies inside the KL
    interval at the same level; the folded bound on p_min is at least the one-sided CP
    bound at the full delta (P[t <= X <= m-t] <= P[X >= t])."""
    m = k + extra
    if m == 0:
        return
    cp = confidence_set([k, m - k], delta, confidence="box-cp").set
    kl = confidence_set([k, m - k], delta, confidence="box-kl").set
    assert kl.lower[0] <= cp.lower[0] + 1e-12 and cp.upper[0] <= kl.upper[0] + 1e-12
    low = confidence_set([k, m - k], delta, confidence="box-lower").set.lower[0]
    t = min(k, m - k)
    one_sided = float(C.clopper_pearson_lower(np.array(t), m, delta))
    assert low >= one_sided - 1e-9


@given(counts=st.lists(st.integers(0, 50), min_size=2, max_size=7).filter(lambda c: sum(c)),
       delta=st.floats(1e-9, 1.0), method=st.sampled_from(ALL_METHODS))
def test_every_set_contains_p_hat_and_is_valid(counts, delta, method):
    cs = confidence_set(counts, delta, confidence=method)
    assert cs.set.contains(cs.p_hat)
    lo, hi = cs.set.coordinate_bounds()
    assert (lo >= 0).all() and (hi <= 1).all() and (lo <= hi).all()


def test_box_methods_never_larger_than_needed():
    """The stored box equals the exact coordinate bounds of box ∩ simplex."""
    for method in ("box-cp", "box-kl", "box-lower"):
        s = confidence_set([2, 0, 5, 1, 12], 0.1, confidence=method).set
        lo, hi = s.coordinate_bounds()
        np.testing.assert_allclose(s.lower, lo, atol=1e-12)
        np.testing.assert_allclose(s.upper, hi, atol=1e-12)


# ------------------------------------------------------------------------ edge cases


@pytest.mark.parametrize("method", ALL_METHODS)
def test_edge_cases(method):
    # m = 1
    cs = confidence_set([0, 1, 0], 0.1, confidence=method)
    assert cs.m == 1 and cs.set.contains([0, 1, 0])
    # all mass on one category, many samples: the set must still contain nearby Q
    cs = confidence_set([0, 500], 1e-6, confidence=method)
    lo, hi = cs.set.coordinate_bounds()
    assert hi[0] > 0 and lo[1] < 1
    # zero counts on several categories, N = 2 and N = 20
    cs = confidence_set([7, 0], 0.05, confidence=method)
    assert cs.set.contains([1.0, 0.0])
    counts = np.zeros(20, int)
    counts[3] = 10_000
    cs = confidence_set(counts, 0.01, confidence=method)
    assert cs.set.contains(counts / counts.sum())


def test_all_mass_closed_forms():
    """k = m: CP lower (delta/2)^(1/m) (N = 2); box-lower's folded bound is 0 (t = 0)."""
    m, delta = 40, 0.01
    cs = confidence_set([m, 0], delta, confidence="box-cp")
    assert cs.set.lower[0] == pytest.approx((delta / 2) ** (1 / m), rel=1e-12)
    assert cs.set.upper[0] == 1.0
    assert confidence_set([m, 0], delta, confidence="box-lower").set.lower[0] == 0.0
    # KL for p_hat = 1: -log q <= log(2/delta)/m
    cs = confidence_set([m, 0], delta, confidence="box-kl")
    assert cs.set.lower[0] == pytest.approx((delta / 2) ** (1 / m), rel=1e-10)


def test_auto_splits_delta_and_says_so():
    counts = [40, 5, 3, 2]
    cs = confidence_set(counts, 0.05, confidence="auto")
    k = len(C.AUTO_CANDIDATES)
    assert cs.details["delta_each"] == pytest.approx(0.05 / k)
    assert f"delta/{k}" in cs.description and "union bound" in cs.description
    chosen = cs.details["chosen"]
    same = confidence_set(counts, 0.05 / k, confidence=chosen).set
    assert cs.set.to_dict() == same.to_dict()
    widths = {}
    for name in C.AUTO_CANDIDATES:
        lo, hi = confidence_set(counts, 0.05 / k, confidence=name).set.coordinate_bounds()
        widths[name] = float((hi - lo).sum())
    assert widths[chosen] == pytest.approx(min(widths.values()))
    # a caller's score: certified eps of randomized response
    from pmlkit.worstcase import leakage_capacity

    w = np.full((4, 4), 1 / 7)
    np.fill_diagonal(w, 4 / 7)
    cs2 = confidence_set(counts, 0.05, confidence="auto", candidates=["l1", "box-cp"],
                         score=lambda s: leakage_capacity(w, s))
    assert cs2.details["delta_each"] == pytest.approx(0.025)
    caps = {x: leakage_capacity(w, confidence_set(counts, 0.025, confidence=x).set)
            for x in ("l1", "box-cp")}
    assert cs2.details["chosen"] == min(caps, key=caps.get)


# ------------------------------------------------------------------- coverage audit

CASES = [
    (np.array([0.5, 0.5]), (1, 20, 300)),
    (np.array([0.9, 0.1]), (5, 100)),
    (np.array([0.995, 0.005]), (10, 200)),
    (np.array([1.0, 0.0]), (3,)),
    (np.full(6, 1 / 6), (6, 120)),
    (np.array([0.8, 0.1, 0.05, 0.03, 0.015, 0.005]), (30, 400)),
    (np.array([0.999, 0.0005, 0.0003, 0.0002, 0.0, 0.0]), (50,)),
    (np.full(20, 1 / 20), (200,)),
    (1 / np.arange(1, 21) / (1 / np.arange(1, 21)).sum(), (100, 2000)),
]
METHODS_NO_AUTO = C.AUTO_CANDIDATES
REPS = 2000


@pytest.mark.parametrize("method", ALL_METHODS[:-1])
def test_coverage_by_simulation(method):
    """Miss rate P[P_true not in set] consistent with delta: one-sided binomial test at
    level 0.001 on REPS samples per (P, m, delta), skewed and near-degenerate P included."""
    rng = np.random.default_rng(20261125)
    failures = []
    for p, ms in CASES:
        for m in ms:
            counts = rng.multinomial(m, p, size=REPS)
            for delta in (0.1, 0.3):
                miss = int((~contains_batch(method, counts, delta, p)).sum())
                pval = stats.binom.sf(miss - 1, REPS, delta)
                if pval < 0.001:
                    failures.append((p.round(3).tolist(), m, delta, miss / REPS))
    assert not failures, f"{method}: miss rate above delta in {failures}"


def test_coverage_is_not_vacuous():
    """The exact N = 2 sets are not trivially conservative: at delta = 0.3 and m = 300 they
    miss a visible fraction (so the simulation could detect a bug)."""
    rng = np.random.default_rng(1)
    for method, p in (("box-cp", [0.5, 0.5]), ("box-lower", [0.3, 0.7])):
        counts = rng.multinomial(300, p, size=REPS)
        miss = (~contains_batch(method, counts, 0.3, np.array(p))).mean()
        assert 0.1 < miss <= 0.3 + 3 * math.sqrt(0.3 * 0.7 / REPS)


def test_auto_coverage_by_union():
    """auto misses only when some candidate at delta/k misses; that union is rare enough."""
    rng = np.random.default_rng(7)
    k = len(METHODS_NO_AUTO)
    for p, m in ((np.array([0.9, 0.1]), 50), (np.array([0.8, 0.1, 0.05, 0.03, 0.015, 0.005]),
                                                100)):
        counts = rng.multinomial(m, p, size=REPS)
        union = np.zeros(REPS, bool)
        for name in METHODS_NO_AUTO:
            union |= ~contains_batch(name, counts, 0.3 / k, p)
        miss = int(union.sum())
        assert stats.binom.sf(miss - 1, REPS, 0.3) >= 0.001
        # and the public auto set is one of those candidates (checked on a few rows)
        for row in counts[:20]:
            cs = confidence_set(row, 0.3, confidence="auto")
            if not cs.set.contains(p):
                assert union[(counts == row).all(axis=1)].all()


@pytest.mark.parametrize("method", ALL_METHODS[:-1])
def test_batch_matches_public(method):
    """The batched constructions used by the simulation are the public sets."""
    rng = np.random.default_rng(3)
    p = np.array([0.6, 0.25, 0.1, 0.05])
    counts = rng.multinomial(40, p, size=25)
    batch = contains_batch(method, counts, 0.2, p)
    public = np.array([confidence_set(c, 0.2, confidence=method).set.contains(p) for c in counts])
    np.testing.assert_array_equal(batch, public)


# ---------------------------------------------------------------------- integration


def _capacity_by_lp(w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """sup over the box ∩ simplex of eps_min(W, Q) by a generic LP per column."""
    n = w.shape[0]
    best = -np.inf
    for j in range(w.shape[1]):
        res = optimize.linprog(w[:, j], A_eq=np.ones((1, n)), b_eq=[1.0],
                               bounds=list(zip(lo, hi, strict=True)), method="highs")
        best = max(best, math.log(w[:, j].max() / res.fun))
    return best


def _capacity_ball_by_lp(w: np.ndarray, c: np.ndarray, r: float, lo=None, hi=None) -> float:
    """The same over an l1-ball ∩ simplex (∩ a box if given) (variables Q and slack
    s >= |Q - c|)."""
    n = w.shape[0]
    qb = [(0, None)] * n if lo is None else list(zip(lo, hi, strict=True))
    a_ub = np.block([[np.eye(n), -np.eye(n)], [-np.eye(n), -np.eye(n)],
                     [np.zeros((1, n)), np.ones((1, n))]])
    b_ub = np.concatenate([c, -c, [r]])
    a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
    best = -np.inf
    for j in range(w.shape[1]):
        res = optimize.linprog(np.concatenate([w[:, j], np.zeros(n)]), A_ub=a_ub, b_ub=b_ub,
                               A_eq=a_eq, b_eq=[1.0], bounds=qb + [(0, None)] * n,
                               method="highs")
        best = max(best, math.log(w[:, j].max() / res.fun))
    return best


@pytest.mark.parametrize("method", ALL_METHODS)
def test_certified_eps_over_each_set_matches_lp(method):
    from pmlkit.worstcase import leakage_capacity

    n, eps = 6, math.log(3)
    w = np.full((n, n), 1.0)
    np.fill_diagonal(w, math.exp(eps))
    w /= w.sum(axis=1, keepdims=True)
    counts = np.array([300, 120, 60, 15, 5, 0]) * 10
    cs = confidence_set(counts, 1e-6, confidence=method)
    got = leakage_capacity(w, cs.set)
    if hasattr(cs.set, "radius") and hasattr(cs.set, "lower"):
        ref = _capacity_ball_by_lp(w, np.asarray(cs.set.center), cs.set.radius,
                                   cs.set.lower, cs.set.upper)
    elif hasattr(cs.set, "radius"):
        ref = _capacity_ball_by_lp(w, np.asarray(cs.set.center), cs.set.radius)
    else:
        ref = _capacity_by_lp(w, np.asarray(cs.set.lower), np.asarray(cs.set.upper))
    assert got == pytest.approx(ref, rel=1e-7)
    assert got <= eps + 1e-12  # k-RR is eps-LDP, hence eps-PML for every prior


def test_tighter_sets_certify_smaller_eps_for_skewed_large_n():
    """For N = 20, m = 10^4 and a skewed estimate, the box sets certify a smaller eps for
    k-ary randomized response than the paper's ball at the same delta."""
    from pmlkit.worstcase import leakage_capacity

    n, eps = 20, math.log(4)
    w = np.full((n, n), 1.0)
    np.fill_diagonal(w, math.exp(eps))
    w /= w.sum(axis=1, keepdims=True)
    p = 1 / np.arange(1, n + 1) ** 1.5
    counts = np.round(p / p.sum() * 10_000).astype(int)
    caps = {x: leakage_capacity(w, confidence_set(counts, 1e-6, confidence=x).set)
            for x in ("l1", "box-cp", "box-kl")}
    assert caps["box-cp"] < caps["l1"] and caps["box-kl"] < caps["l1"]


@pytest.mark.parametrize("method", METHODS)
def test_design_from_samples_with_each_set(method):
    """Design with each set, then certify the mechanism over the returned set."""
    import warnings

    import pmlkit.design as design
    from pmlkit.errors import PMLWarning
    from pmlkit.worstcase import leakage_capacity

    rng = np.random.default_rng(5)
    samples = rng.choice(["a", "b", "c"], size=2000, p=[0.5, 0.3, 0.2])
    eps, delta = math.log(4), 1e-3
    with warnings.catch_warnings():
        # boxes have no exact sub-convex designer: a certified lower bound, with a warning
        warnings.simplefilter("ignore", PMLWarning)
        res = design.design_from_samples(samples, eps, delta, categories=["a", "b", "c"],
                                         confidence=method)
    counts = np.array([(samples == x).sum() for x in "abc"])
    cs = confidence_set(counts, delta, confidence=method)
    assert res.guarantee.set == cs.set.to_dict()
    assert res.guarantee.confidence == method
    cap = leakage_capacity(res.mechanism, cs.set)
    assert cap <= eps + 1e-7
    assert res.guarantee.certified_eps == pytest.approx(cap, abs=1e-9)

@given(k=st.integers(0, 3000), extra=st.integers(0, 3000), delta=st.floats(1e-12, 0.9))
def test_box_lower_beats_the_paper_ball_on_p_min(k, extra, delta):
    """N = 2: the folded bound on p_min is never below the l1-ball's p_hat_min - beta*/2
    (Hoeffding: G(tau_H, t) <= P[X >= t] <= delta/2 at tau_H = t/m - beta*/2)."""
    m = k + extra
    if m == 0:
        return
    low = confidence_set([k, m - k], delta, confidence="box-lower").set.lower[0]
    ball = confidence_set([k, m - k], delta).set
    assert low >= min(k, m - k) / m - ball.radius / 2 - 1e-9


# --------------------------------------------------------------- the tighter_sets figure


def test_tighter_sets_figure(monkeypatch):
    from matplotlib.figure import Figure

    from pmlkit.additive import laplace_scale
    from pmlkit.experiments import tighter_sets as T
    from pmlkit.experiments.base import Check

    rng = np.random.default_rng(11)
    codes = {"income": ((rng.random(3000) < 0.24).astype(np.int64), ["<=50K", ">50K"]),
             "sex": ((rng.random(3000) < 0.67).astype(np.int64), ["Female", "Male"])}
    monkeypatch.setattr(T, "adult_codes", lambda data, feats: codes)
    monkeypatch.setattr(T, "M_ADULT", (100, 1000))
    df = T.compute(iterations=4, rng=3)
    assert {"set", "n", "m", "delta", "p_hat_kind", "eps_certified", "feature", "eps",
            "mi_mean", "mi_std"} <= set(df.columns)
    cert = df[df["kind"] == "certified"]
    lap = df[df["kind"] == "adult_laplace"]
    assert cert["feature"].isna().all() and lap["eps_certified"].isna().all()
    assert set(lap["set"]) == {*T.SETS, "ldp"} and set(lap["m"]) == {100, 1000}
    # certified eps of k-RR: between the fixed-prior value and eps0 (k-RR is eps0-LDP)
    assert set(cert["mechanism"]) == set(T.MECHANISMS)
    piv = cert[cert["mechanism"] == "k-RR"].pivot_table(
        index=["n", "m", "p_hat_kind"], columns="set", values="eps_certified")
    for s in T.SETS:
        assert (piv[s] >= piv["p_hat only"] - 1e-12).all() and (piv[s] <= T.RR_EPS + 1e-9).all()
    # independent recomputation of one point: k-RR over box-cp, closed form
    # C = log(e^eps0 / (1 + (e^eps0 - 1) min_i lo_i)) for k-RR (min over the box of Q_j)
    c = T.counts_of(T.p_hat_of("uniform", 20), 10_000)
    lo, _ = confidence_set(c, 1e-6, confidence="box-cp").set.coordinate_bounds()
    e = math.exp(T.RR_EPS)
    expect = math.log(e / (1 + (e - 1) * lo.min()))
    assert piv.loc[(20, 10_000, "uniform"), "box-cp"] == pytest.approx(expect, rel=1e-9)
    # the fixed-prior optimum: its eps for p_hat itself is at most OPT_EPS, and every valid
    # set certifies at least that
    opt = cert[cert["mechanism"] == "fixed-prior optimum"].pivot_table(
        index=["n", "m", "p_hat_kind"], columns="set", values="eps_certified")
    assert (opt["p_hat only"] <= T.OPT_EPS + 1e-7).all()
    for s in T.SETS:
        assert (opt[s] >= opt["p_hat only"] - 1e-9).all()
    # common random numbers: the ldp rows use b = 2/eps and l1 at m=100 may coincide
    scale = T.laplace_scale_for("box-lower")
    b = scale(T.EPS_ADULT, T.DELTA_ADULT, 1000, np.array([0.24]))
    low = confidence_set([240, 760], T.DELTA_ADULT, confidence="box-lower").set.lower[0]
    assert b[0] == pytest.approx(laplace_scale(T.EPS_ADULT, low))
    # exact channel MI: for LDP, the hand-derived MI of the flip channel r = e^{-1/b}/2,
    # b = 2/eps, under each column's own distribution; box-lower (never a lower p_min bound
    # than the ball, so never more noise) never gives less than l1
    for feat, (col, _) in codes.items():
        p1 = col.mean()
        r = 0.5 * math.exp(-T.EPS_ADULT / 2)
        py1 = p1 * (1 - r) + (1 - p1) * r
        h = lambda x: -(x * math.log(x) + (1 - x) * math.log(1 - x))  # noqa: E731
        ldp = lap[(lap["feature"] == feat) & (lap["set"] == "ldp")]
        assert np.allclose(ldp["mi_channel_mean"], h(py1) - h(r), rtol=1e-12)
        ch = lap[lap["feature"] == feat].pivot_table(index="m", columns="set",
                                                     values="mi_channel_mean")
        assert (ch["box-lower"] >= ch["l1"] - 1e-15).all()
        assert (ch["l1"] >= ch["ldp"] - 1e-15).all()
    checks = T.check(df)
    assert checks and all(isinstance(ch, Check) for ch in checks)
    assert any("plug-in" in ch.detail for ch in checks)
    assert isinstance(T.plot(df), Figure)


@pytest.mark.parametrize("method", METHODS)
def test_laplace_calibration_with_each_set(method):
    """calibrate_laplace uses the set's exact lower bound on p_min; box-lower never needs
    more noise than the paper's ball (its p_min bound is never lower, see above)."""
    import pmlkit.additive as additive
    samples = ["yes"] * 76 + ["no"] * 324
    eps, delta = math.log(2), 1e-9
    cal = additive.calibrate_laplace(samples, eps, delta, positive="yes", confidence=method)
    cs = confidence_set([324, 76], delta, confidence=method)
    low = float(np.min(cs.set.coordinate_bounds()[0]))
    assert cal.p_min_lower == pytest.approx(low, abs=1e-12)
    assert cal.b == pytest.approx(additive.laplace_scale(eps, low), rel=1e-12)
    ref = additive.calibrate_laplace(samples, eps, delta, positive="yes", confidence="l1")
    if method == "box-lower":
        assert cal.b < ref.b


# ------------------------------------------------------------------- ball ∩ box set


def _lp_min(c, r, lo, hi, w):
    n = len(c)
    a_ub = np.block([[np.eye(n), -np.eye(n)], [-np.eye(n), -np.eye(n)],
                     [np.zeros((1, n)), np.ones((1, n))]])
    res = optimize.linprog(np.concatenate([w, np.zeros(n)]), A_ub=a_ub,
                           b_ub=np.concatenate([c, -c, [r]]),
                           A_eq=np.concatenate([np.ones(n), np.zeros(n)])[None, :], b_eq=[1.0],
                           bounds=list(zip(lo, hi, strict=True)) + [(0, None)] * n,
                           method="highs")
    return res.fun


@given(data=st.data(), n=st.integers(2, 7), r=st.floats(0.0, 2.5))
def test_l1_box_set_linear_optimisation_matches_lp(data, n, r):
    """Greedy min/argmin and the coordinate bounds of ball ∩ box against HiGHS (whose
    feasibility tolerance is 1e-7: with |w| <= 3 and the radius constraint met only to
    1e-7, HiGHS' optimum may be off by a few 1e-7, e.g. 1.19e-7 for r = 0, found by make
    fuzz)."""
    w_c = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    if w_c.sum() == 0:
        w_c[0] = 1.0
    c = w_c / w_c.sum()
    down = np.array(data.draw(st.lists(st.floats(0, 0.4), min_size=n, max_size=n)))
    up = np.array(data.draw(st.lists(st.floats(0, 0.4), min_size=n, max_size=n)))
    lo, hi = np.clip(c - down, 0, 1), np.clip(c + up, 0, 1)
    s = C.L1BoxSet(c, r, lo, hi)
    w = np.array(data.draw(st.lists(st.floats(-3, 3), min_size=3 * n, max_size=3 * n)))
    w = w.reshape(n, 3)
    got = s.min_linear(w)
    ref = np.array([_lp_min(c, r, lo, hi, w[:, j]) for j in range(3)])
    np.testing.assert_allclose(got, ref, atol=1e-6)
    np.testing.assert_allclose(s.max_linear(w), [-_lp_min(c, r, lo, hi, -w[:, j])
                                                 for j in range(3)], atol=1e-6)
    q = s.argmin_linear(w)
    assert all(s.contains(row) for row in q)
    np.testing.assert_allclose(np.einsum("mn,nm->m", q, w), got, atol=1e-12)
    blo, bhi = s.coordinate_bounds()
    eye = np.eye(n)
    np.testing.assert_allclose(blo, [_lp_min(c, r, lo, hi, eye[i]) for i in range(n)],
                               atol=1e-6)
    np.testing.assert_allclose(bhi, [-_lp_min(c, r, lo, hi, -eye[i]) for i in range(n)],
                               atol=1e-6)
    assert all(s.contains(x) for x in s.sample(6, rng=1))


def test_l1_box_set_validation_and_dict():
    with pytest.raises(ValidationError, match="center must lie in the box"):
        C.L1BoxSet([0.5, 0.5], 0.1, [0.6, 0.0], [1.0, 1.0])
    with pytest.raises(ValidationError, match="radius"):
        C.L1BoxSet([0.5, 0.5], -0.1, [0.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValidationError, match="same length"):
        C.L1BoxSet([0.5, 0.5], 0.1, [0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    s = confidence_set([30, 20, 0], 0.01, confidence="l1-box").set
    d = json.loads(json.dumps(s.to_dict()))
    assert d["kind"] == "l1_box"
    again = C.L1BoxSet(d["center"], d["radius"], d["lower"], d["upper"])
    np.testing.assert_allclose(again.coordinate_bounds(), s.coordinate_bounds())


def test_l1_box_is_the_intersection_at_half_delta():
    counts = np.array([400, 300, 200, 60, 40])
    cs = confidence_set(counts, 1e-4, confidence="l1-box")
    ball = confidence_set(counts, 0.5e-4).set
    box = confidence_set(counts, 0.5e-4, confidence="box-cp").set
    assert cs.set.radius == pytest.approx(ball.radius)
    np.testing.assert_allclose(cs.set.lower, box.lower)
    np.testing.assert_allclose(cs.set.upper, box.upper)
    # the intersection is never worse than either part for any mechanism
    from pmlkit.worstcase import leakage_capacity

    rng = np.random.default_rng(2)
    for _ in range(5):
        w = rng.dirichlet(np.ones(4) * 0.5, size=5)
        cap = leakage_capacity(w, cs.set)
        assert cap <= min(leakage_capacity(w, ball), leakage_capacity(w, box)) + 1e-9


def test_adult_channel_mi_mean_matches_its_exact_expectation():
    """The tighter_sets Adult rows report the mean over shuffles of the exact MI of the
    released channel. Its expectation is a finite sum over the hypergeometric count K of
    '+1' among the m rows: E[MI] = sum_k P(K = k) I(k), with I(k) from the hand-derived
    flip channel r = e^{-1/b}/2 under the population (no Monte Carlo)."""
    from scipy.stats import hypergeom

    from pmlkit.additive import laplace_scale
    from pmlkit.experiments import tighter_sets as T
    from pmlkit.experiments.laplace_adult import simulate

    pop, pos, m, iters = 3000, 720, 100, 400
    codes = np.r_[np.ones(pos, np.int64), np.zeros(pop - pos, np.int64)]
    (rec,) = simulate(codes, [m], [(T.EPS_ADULT, T.DELTA_ADULT)], iters,
                      np.random.default_rng(5), scale=T.laplace_scale_for("box-lower"))
    p1 = pos / pop

    def h(x):
        return -(x * math.log(x) + (1 - x) * math.log(1 - x))

    ks = np.arange(m + 1)
    pk = hypergeom.pmf(ks, pop, pos, m)
    vals = []
    for k in ks:
        t = min(k, m - k)
        low = confidence_set([t, m - t], T.DELTA_ADULT, confidence="box-lower").set.lower[0]
        r = 0.5 * math.exp(-1.0 / laplace_scale(T.EPS_ADULT, low))
        vals.append(h(p1 * (1 - r) + (1 - p1) * r) - h(r))
    vals = np.array(vals)
    expect = float(pk @ vals)
    sd = math.sqrt(float(pk @ (vals - expect) ** 2))
    assert rec["mi_channel_std"] == pytest.approx(sd, rel=0.25)
    assert rec["mi_channel_mean"] == pytest.approx(expect, abs=4 * sd / math.sqrt(iters))
