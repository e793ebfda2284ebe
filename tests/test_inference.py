"""Estimating the true distribution from released data (pmlkit.inference).

Every expected value comes from an independent computation: a generic scipy optimiser for
the maximum likelihood, the closed-form k-RR inversion, qif's iterative Bayesian update,
exact enumeration of all count vectors for tiny n (unbiasedness of the
inversion and the exact coverage of the intervals), brute-force sampling of the simplex
for the identified set, and a small Monte Carlo coverage simulation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit import Mechanism
from pmlkit.errors import DataError, ValidationError
from pmlkit.inference import (
    DistributionEstimate,
    GroupedEstimates,
    estimate_distribution,
    estimate_from_counts,
    identifiable,
)


def krr(n: int, eps: float) -> np.ndarray:
    """k-ary randomized response written out by hand (not through pmlkit)."""
    e = math.exp(eps)
    w = np.full((n, n), 1.0 / (e + n - 1))
    np.fill_diagonal(w, e / (e + n - 1))
    return w


def compositions(n: int, k: int):
    """All count vectors of k non-negative integers summing to n."""
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        prev, out = -1, []
        for b in bars:
            out.append(b - prev - 1)
            prev = b
        out.append(n + k - 2 - prev)
        yield np.array(out)


def multinomial_pmf(c: np.ndarray, q: np.ndarray) -> float:
    from scipy.stats import multinomial

    return float(multinomial.pmf(c, int(c.sum()), q))


def scipy_mle(w: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, float]:
    """Generic optimiser: softmax parametrisation, BFGS from several starts."""
    from scipy.optimize import minimize

    n = w.shape[0]

    def negll(z: np.ndarray) -> float:
        p = np.exp(z - z.max())
        p /= p.sum()
        q = p @ w
        return -float(np.sum(c[c > 0] * np.log(q[c > 0])))

    best = None
    for seed in range(4):
        z0 = np.random.default_rng(seed).normal(size=n)
        res = minimize(negll, z0, method="BFGS", options={"gtol": 1e-10, "maxiter": 5000})
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    p = np.exp(best.x - best.x.max())
    return p / p.sum(), -float(best.fun)


def loglik(w: np.ndarray, c: np.ndarray, p: np.ndarray) -> float:
    q = p @ w
    return float(np.sum(c[c > 0] * np.log(q[c > 0])))


# -- the maximum likelihood ------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_mle_matches_a_generic_optimiser(seed):
    rng = np.random.default_rng(seed)
    n_in, m = 4, 6
    w = rng.dirichlet(np.ones(m), size=n_in)
    p = rng.dirichlet(np.ones(n_in))
    c = rng.multinomial(500, p @ w)
    r = estimate_from_counts(c, w)
    p_ref, ll_ref = scipy_mle(w, c)
    assert r.converged and r.identified
    # the EM's likelihood is at least the generic optimiser's (it certifies its optimum)
    assert loglik(w, c, r.estimate) >= ll_ref - 1e-6
    assert r.log_likelihood == pytest.approx(loglik(w, c, r.estimate), rel=1e-12)
    np.testing.assert_allclose(r.estimate, p_ref, atol=2e-4)


def test_mle_on_the_boundary_matches_a_generic_optimiser():
    # counts that push the unconstrained inversion out of the simplex: the MLE has a zero
    w = krr(3, 1.0)
    c = np.array([2, 40, 58])
    inv = estimate_from_counts(c, w, method="inversion")
    assert not inv.in_simplex and inv.estimate.min() < 0
    r = estimate_from_counts(c, w, tol=1e-12)
    assert r.converged and r.in_simplex
    _, ll_ref = scipy_mle(w, c)
    assert loglik(w, c, r.estimate) >= ll_ref - 1e-7
    assert r.estimate[0] < 1e-4
    # certified: the Frank-Wolfe gap at the answer is below the tolerance
    g = w @ (c / (r.estimate @ w))
    assert g.max() / c.sum() - 1 <= 1e-12


def test_mle_equals_inversion_inside_the_simplex():
    # square invertible W and an inversion inside the simplex: W^T P = c/n is attainable,
    # so the likelihood is maximised there (the multinomial MLE is c/n)
    w = krr(4, 1.2)
    c = np.array([300, 250, 260, 190])
    p_closed = np.linalg.solve(w.T, c / c.sum())
    assert p_closed.min() > 0
    r = estimate_from_counts(c, w)
    np.testing.assert_allclose(r.estimate, p_closed, atol=1e-6)


def test_inversion_is_the_krr_closed_form_and_exactly_unbiased():
    # closed form for k-RR: P_x = (c_x / n - b) / (a - b), a = diagonal, b = off-diagonal
    k, eps, n = 3, 0.8, 6
    w = krr(k, eps)
    a, b = w[0, 0], w[0, 1]
    p_true = np.array([0.1, 0.3, 0.6])
    q = p_true @ w
    mean = np.zeros(k)
    for c in compositions(n, k):
        r = estimate_from_counts(c, w, method="inversion")
        np.testing.assert_allclose(r.estimate, (c / n - b) / (a - b), atol=1e-12)
        mean += multinomial_pmf(c, q) * r.estimate
    np.testing.assert_allclose(mean, p_true, atol=1e-12)  # E[P_inv] = P exactly


def test_inversion_of_a_non_square_mechanism_sums_to_one_and_is_unbiased():
    # M > N: plain least squares (W W^T)^{-1} W c/n does not sum to 1 (it gave 1.014 for
    # counts (3, 4, 0)); the constrained inversion does, and stays exactly unbiased
    w = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    r = estimate_from_counts([3, 4, 0], w, method="inversion")
    assert r.estimate.sum() == pytest.approx(1.0, abs=1e-12)
    p_true = np.array([0.7, 0.3])
    q = p_true @ w
    mean = np.zeros(2)
    second = np.zeros(2)
    n = 5
    for c in compositions(n, 3):
        e = estimate_from_counts(c, w, method="inversion").estimate
        pr = multinomial_pmf(c, q)
        mean += pr * e
        second += pr * (e - p_true) ** 2
    np.testing.assert_allclose(mean, p_true, atol=1e-12)
    # the Wald sd is the exact standard deviation at q = c/n; at the true q it is exact:
    # compare the enumerated variance with the formula evaluated at the truth (by hand)
    g = w @ w.T
    a = np.linalg.solve(g, w)
    k = np.linalg.solve(g, np.ones(2))
    k /= k.sum()
    b = a - np.outer(k, a.sum(axis=0))
    var = np.diag(b @ (np.diag(q) - np.outer(q, q)) @ b.T) / n
    np.testing.assert_allclose(second, var, atol=1e-12)


def test_one_category_is_certain():
    r = estimate_from_counts([5], [[1.0]])
    assert r.estimate.tolist() == [1.0] and r.lower.tolist() == [1.0]
    assert r.upper.tolist() == [1.0]


def test_against_qif_iterative_bayesian_update():
    qif = pytest.importorskip("qif")
    w = krr(4, 0.9)
    c = np.array([120, 340, 260, 280])
    ref, _ = qif.channel.iterative_bayesian_update(w, c / c.sum(), np.full(4, 0.25), 1e-14,
                                                   200_000)
    r = estimate_from_counts(c, w, tol=1e-13)
    np.testing.assert_allclose(r.estimate, ref, atol=1e-6)
    # and on a non-square mechanism with a zero in the answer
    w2 = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    c2 = np.array([5, 30, 65])
    ref2, _ = qif.channel.iterative_bayesian_update(w2, c2 / c2.sum(), np.full(2, 0.5),
                                                    1e-15, 500_000)
    r2 = estimate_from_counts(c2, w2, tol=1e-13)
    np.testing.assert_allclose(r2.estimate, ref2, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10_000))
def test_mle_likelihood_dominates_every_other_point(n_in, seed):
    rng = np.random.default_rng(seed)
    m = n_in + int(rng.integers(0, 3))
    w = rng.dirichlet(np.full(m, 0.7), size=n_in)
    c = rng.multinomial(int(rng.integers(1, 300)), rng.dirichlet(np.ones(n_in)) @ w)
    r = estimate_from_counts(c, w, tol=1e-9)
    ll = r.log_likelihood
    assert r.converged
    others = rng.dirichlet(np.full(n_in, 0.5), size=200)
    for p in others:
        assert loglik(w, c, p) <= ll + 1e-9 * c.sum()
    # the intervals contain the estimate (identified) or the set contains every MLE
    if r.identified:
        assert np.all(r.lower <= r.estimate + 1e-12) and np.all(r.estimate <= r.upper + 1e-12)


# -- identification and the identified set ---------------------------------------------

def test_identifiable_categories():
    w = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.2, 0.8]])
    np.testing.assert_array_equal(identifiable(w), [False, False, True])
    np.testing.assert_array_equal(identifiable(krr(3, 1.0)), [True, True, True])


def test_identified_set_matches_brute_force():
    from scipy.stats import beta

    w = np.array([[0.6, 0.4, 0.0], [0.6, 0.4, 0.0], [0.1, 0.2, 0.7]])
    c = np.array([260, 280, 460])
    r = estimate_from_counts(c, w, confidence=0.9)
    assert not r.identified
    assert np.isnan(r.estimate[0]) and np.isnan(r.estimate[1]) and np.isfinite(r.estimate[2])
    assert "identified set" in r.interval_method
    # the box: Clopper-Pearson at level 1 - 0.1/3 per output, computed here
    n, a = c.sum(), 0.1 / 3
    lo = beta.ppf(a / 2, c, n - c + 1)
    hi = beta.ppf(1 - a / 2, c + 1, n - c)
    # brute force: a fine grid of the simplex, keep the points whose W^T P is in the box
    g = np.linspace(0, 1, 401)
    p0, p1 = np.meshgrid(g, g, indexing="ij")
    pts = np.stack([p0.ravel(), p1.ravel(), 1 - p0.ravel() - p1.ravel()], axis=1)
    pts = pts[pts[:, 2] >= -1e-12]
    q = pts @ w
    ok = np.all((q >= lo - 1e-12) & (q <= hi + 1e-12), axis=1)
    feas = pts[ok]
    assert feas.size
    for x in range(3):
        assert r.lower[x] <= feas[:, x].min() + 1e-9
        assert r.upper[x] >= feas[:, x].max() - 1e-9
        # and no wider than the grid's resolution
        assert feas[:, x].min() - r.lower[x] <= 0.01
        assert r.upper[x] - feas[:, x].max() <= 0.01
    # by hand: P0 and P1 are interchangeable, so their sets agree and start at 0
    assert r.lower[0] == pytest.approx(0.0, abs=1e-6)
    assert r.upper[0] == pytest.approx(r.upper[1], abs=1e-9)


def test_inversion_refuses_rank_deficient():
    w = np.array([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValidationError, match="rank"):
        estimate_from_counts([5, 5], w, method="inversion")


# -- interval coverage -------------------------------------------------------------------

@pytest.mark.parametrize("counts", [(30, 70), (0, 50), (12, 0), (500, 480), (3, 1)])
def test_binary_profile_interval_matches_root_finding(counts):
    """N = 2: the profile is the likelihood of (t, 1 - t) itself; its level set is found
    here with brentq and the chi-square quantile from scipy, independently."""
    from scipy.optimize import brentq, minimize_scalar
    from scipy.stats import chi2

    w = np.array([[0.75, 0.25], [0.3, 0.7]])
    c = np.array(counts, dtype=float)

    def ll(t: float) -> float:
        return loglik(w, c, np.array([t, 1 - t]))

    opt = minimize_scalar(lambda t: -ll(t), bounds=(0, 1), method="bounded",
                          options={"xatol": 1e-12})
    t_hat = min((opt.x, 0.0, 1.0), key=lambda t: -ll(t))
    h = ll(t_hat) - chi2.ppf(0.95, 1) / 2
    lo = 0.0 if ll(0.0) >= h else brentq(lambda t: ll(t) - h, 0.0, t_hat, xtol=1e-14)
    hi = 1.0 if ll(1.0) >= h else brentq(lambda t: ll(t) - h, t_hat, 1.0, xtol=1e-14)
    r = estimate_from_counts(c, w)
    assert r.estimate[0] == pytest.approx(t_hat, abs=1e-5)
    # never narrower than the exact interval, and wider only by the documented bisection
    # tolerance max(1e-6, 1e-3 |end - estimate|) (N = 2 has no inner EM: no other slack)
    assert r.lower[0] <= lo + 1e-12 and r.upper[0] >= hi - 1e-12
    assert lo - r.lower[0] <= max(1e-6, 1e-3 * (t_hat - lo)) + 1e-9
    assert r.upper[0] - hi <= max(1e-6, 1e-3 * (hi - t_hat)) + 1e-9


@pytest.mark.parametrize("k,eps,n,p", [
    (2, 1.0, 30, [0.5, 0.5]),
    (2, 1.0, 30, [0.05, 0.95]),
    (2, 1.0, 30, [0.0, 1.0]),
    (3, 1.5, 14, [0.02, 0.08, 0.9]),
    (3, 1.0, 14, [0.2, 0.3, 0.5]),
])
def test_profile_intervals_exact_coverage_by_enumeration(k, eps, n, p):
    """Exact coverage: sum of multinomial probabilities of the count vectors whose interval
    covers the truth (no Monte Carlo error), small n and points on or near the boundary."""
    w = krr(k, eps)
    p = np.array(p)
    q = p @ w
    cover = np.zeros(k)
    for c in compositions(n, k):
        r = estimate_from_counts(c, w)
        cover += multinomial_pmf(c, q) * ((r.lower <= p) & (p <= r.upper))
    assert np.all(cover >= 0.94), cover


def _coverage(w: np.ndarray, p: np.ndarray, n: int, reps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    hits = np.zeros(w.shape[0])
    for c in rng.multinomial(n, p @ w, size=reps):
        r = estimate_from_counts(c, w)
        hits += (r.lower <= p) & (p <= r.upper)
    return hits / reps


def _design(kind: str, p: np.ndarray, eps: float) -> np.ndarray:
    import warnings

    from pmlkit.errors import PMLWarning

    if kind == "krr":
        return krr(p.size, eps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PMLWarning)
        utility = "mutual_information" if kind == "mi" else "estimation"
        return np.asarray(pmlkit.optimal_mechanism(p, eps, utility=utility).matrix)


# (design, N, n, truth): k-RR, the MI-optimal design and the estimation design, N from 2 to
# 20, n from 100 to 10^5, truths with categories near 0 (Dirichlet(0.7) draws). The
# MI-optimal N = 5, n = 100 cell and the N = 10 estimation-design cell at n = 100 were
# below 0.92 with the profile likelihood alone (other categories near 0).
COVERAGE_CELLS = [
    ("krr", 5, 200, (0.0, 0.01, 0.09, 0.3, 0.6)),
    ("krr", 20, 100_000, 20),
    ("mi", 4, 1000, (0.1, 0.2, 0.3, 0.4)),
    ("mi", 5, 100, 5),
    ("est", 2, 100, (0.05, 0.95)),
    ("est", 10, 100, 10),
]


@pytest.mark.slow
@pytest.mark.parametrize("kind,n_cat,n,truth", COVERAGE_CELLS)
def test_coverage_simulation(kind, n_cat, n, truth):
    """95% nominal, per category. 100 replications give a Monte Carlo standard error of
    2.2%: each category must reach 0.95 - 2.6 se = 0.893 (a category of a cell falls
    below by chance with probability about 0.5%), and the mean over the cell's categories
    0.95 - 1.5 se. The wider sweep (more replications, n up to 10^5 for every design) is
    in benchmarks/bench_estimate.py."""
    if isinstance(truth, int):
        p = np.random.default_rng(100 + truth).dirichlet(np.full(truth, 0.7))
    else:
        p = np.array(truth)
    w = _design(kind, p, 1.0)
    reps = 100 if n < 100_000 else 40
    cov = _coverage(w, p, n, reps, seed=n + n_cat)
    se = math.sqrt(0.95 * 0.05 / reps)
    assert np.all(cov >= 0.95 - 2.6 * se), cov
    assert cov.mean() >= 0.95 - 1.5 * se, cov


def test_empirical_likelihood_interval_matches_a_generic_optimiser():
    """The empirical-likelihood ends against the same definition solved independently:
    SLSQP maximises the multinomial likelihood of the outputs under sum q = 1 and
    a_x . q = t, brentq finds where it crosses the chi-square threshold."""
    from scipy.optimize import brentq, minimize
    from scipy.stats import chi2

    from pmlkit.inference._estimate import _el_intervals, _inversion_map

    w = krr(4, 1.0)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    c = np.random.default_rng(0).multinomial(200, p @ w).astype(float)
    lo, hi = _el_intervals(w, c, 0.95)
    b, k = _inversion_map(w)
    a = b + k[:, None]
    qh = c / c.sum()

    def prof(x: int, t: float) -> float:
        cons = [{"type": "eq", "fun": lambda q: q.sum() - 1},
                {"type": "eq", "fun": lambda q, x=x, t=t: a[x] @ q - t}]
        r = minimize(lambda q: -(c @ np.log(np.maximum(q, 1e-300))), qh, constraints=cons,
                     bounds=[(1e-12, 1)] * 4, method="SLSQP",
                     options={"ftol": 1e-14, "maxiter": 500})
        return -float(r.fun)

    h = float(c @ np.log(qh)) - chi2.ppf(0.95, 1) / 2
    for x in (0, 3):  # an interior category and one whose lower end is clipped at 0
        th = float(a[x] @ qh)
        lo_x = brentq(lambda t, x=x: prof(x, t) - h, a[x].min() + 1e-9, th, xtol=1e-10)
        hi_x = brentq(lambda t, x=x: prof(x, t) - h, th, a[x].max() - 1e-9, xtol=1e-10)
        assert lo[x] == pytest.approx(max(lo_x, 0.0), abs=1e-6)
        assert hi[x] == pytest.approx(min(hi_x, 1.0), abs=1e-6)
    # the reported interval is the hull of both likelihood intervals
    r = estimate_from_counts(c, w)
    assert np.all(r.lower <= lo + 1e-12) and np.all(r.upper >= hi - 1e-12)


def test_identified_set_coverage_is_simultaneous():
    """Rank-deficient mechanism: every category's set holds the truth at once in >= 95%
    of 200 replications (the box is simultaneous, so this is conservative)."""
    w = np.array([[0.6, 0.3, 0.1], [0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.2, 0.6, 0.2]])
    p = np.array([0.05, 0.25, 0.3, 0.4])
    rng = np.random.default_rng(2)
    hits = 0
    for c in rng.multinomial(500, p @ w, size=200):
        r = estimate_from_counts(c, w)
        assert not r.identified
        hits += bool(np.all((r.lower <= p) & (p <= r.upper)))
    assert hits / 200 >= 0.93


# -- inputs ------------------------------------------------------------------------------

MECH = Mechanism(krr(3, 1.0), ("a", "b", "c"), ("A", "B", "C"))
VALUES = ["A"] * 50 + ["B"] * 30 + ["C"] * 20
COUNTS = np.array([50, 30, 20])


def _same(r: DistributionEstimate) -> None:
    ref = estimate_from_counts(COUNTS, MECH)
    np.testing.assert_array_equal(r.counts, COUNTS)
    np.testing.assert_allclose(r.estimate, ref.estimate)
    assert r.categories == ("a", "b", "c")


@pytest.mark.parametrize("kind", ["list", "numpy", "pandas", "pandas_cat", "pandas_arrow",
                                  "arrow", "chunked", "mapping", "polars"])
def test_every_released_format_gives_the_same_counts(kind):
    import pandas as pd
    import pyarrow as pa

    if kind == "list":
        data = VALUES
    elif kind == "numpy":
        data = np.array(VALUES)
    elif kind == "pandas":
        data = pd.Series(VALUES, dtype=object)
    elif kind == "pandas_cat":
        data = pd.Series(VALUES, dtype="category")
    elif kind == "pandas_arrow":
        data = pd.Series(VALUES, dtype="string[pyarrow]")
    elif kind == "arrow":
        data = pa.array(VALUES)
    elif kind == "chunked":
        data = pa.chunked_array([VALUES[:40], VALUES[40:]])
    elif kind == "mapping":
        data = {"A": 50, "B": 30, "C": 20}
    else:
        import polars as pl  # in the test extras: a failure here must not pass as a skip
        data = pl.Series(VALUES)
    _same(estimate_distribution(data, MECH))


def test_tables_need_column_and_estimate_it():
    import pandas as pd
    import pyarrow as pa

    df = pd.DataFrame({"y": VALUES, "g": [0] * 100})
    _same(estimate_distribution(df, MECH, column="y"))
    _same(estimate_distribution(pa.Table.from_pandas(df), MECH, column="y"))
    with pytest.raises(ValidationError, match="column="):
        estimate_distribution(df, MECH)
    with pytest.raises(DataError, match="'nope' is not a column"):
        estimate_distribution(df, MECH, column="nope")


def test_unknown_label_and_null_are_errors():
    with pytest.raises(DataError, match=r"value 'Z' appears in 2 rows but is not an output "
                                        r"label"):
        estimate_distribution([*VALUES, "Z", "Z"], MECH)
    with pytest.raises(DataError, match="1 row holds a null"):
        estimate_distribution([*VALUES, None], MECH)
    # an input label is not an output label
    with pytest.raises(DataError, match="'a'"):
        estimate_distribution(["a"], MECH)
    with pytest.raises(DataError, match="'Z'"):
        estimate_distribution({"A": 3, "Z": 1}, MECH)


def test_int_labels_do_not_match_bools():
    m = Mechanism(krr(2, 1.0))  # labels 0, 1
    with pytest.raises(DataError):
        estimate_distribution([True, False], m)
    r = estimate_distribution(np.array([0, 1, 1]), m)
    np.testing.assert_array_equal(r.counts, [1, 2])


def test_output_the_mechanism_never_produces():
    w = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    with pytest.raises(DataError, match="never produces"):
        estimate_from_counts([3, 3, 1], w)


@pytest.mark.parametrize("kw,match", [
    ({"method": "em"}, "method must be one of"),
    ({"confidence": 1.0}, "confidence"),
    ({"confidence": float("nan")}, "confidence"),
])
def test_bad_arguments(kw, match):
    with pytest.raises(ValidationError, match=match):
        estimate_distribution(VALUES, MECH, **kw)


def test_bad_counts():
    with pytest.raises(ValidationError, match="non-negative integers"):
        estimate_from_counts([1.5, 2, 3], MECH)
    with pytest.raises(ValidationError, match="one count per output"):
        estimate_from_counts([1, 2], MECH)
    with pytest.raises(DataError, match="no released records"):
        estimate_from_counts([0, 0, 0], MECH)
    with pytest.raises(ValidationError, match="non-negative integers"):
        estimate_distribution({"A": -1}, MECH)


def test_result_is_frozen_and_read_only():
    r = estimate_distribution(VALUES, MECH)
    with pytest.raises(AttributeError):
        r.n = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        r.estimate[0] = 1.0
    assert r.n == 100 and r.method == "mle" and r.iterations is not None
    d = r.to_dict()
    assert d["categories"][0]["category"] == "a" and d["converged"] is True
    assert "profile likelihood" in str(r)


# -- grouped estimates -------------------------------------------------------------------

def test_grouped_equals_estimates_on_each_subset():
    import pandas as pd

    rng = np.random.default_rng(5)
    y = rng.choice(["A", "B", "C"], size=600)
    g = rng.choice(["north", "south", "east"], size=600)
    df = pd.DataFrame({"y": y, "region": g})
    res = estimate_distribution(df, MECH, column="y", by="region")
    assert isinstance(res, GroupedEstimates)
    assert list(res) == ["east", "north", "south"]
    for name in res:
        ref = estimate_distribution(y[g == name], MECH)
        np.testing.assert_allclose(res[name].estimate, ref.estimate)
        np.testing.assert_allclose(res[name].upper, ref.upper)
        assert res[name].n == int((g == name).sum())
    frame = res.to_frame()
    assert list(frame.columns) == ["region", "category", "estimate", "lower", "upper",
                                   "identified", "n"]
    assert len(frame) == 9
    # by as an array
    res2 = estimate_distribution(y, MECH, by=g)
    np.testing.assert_allclose(res2["north"].estimate, res["north"].estimate)


def test_grouped_errors():
    with pytest.raises(ValidationError, match="by has 2 values"):
        estimate_distribution(VALUES, MECH, by=["x", "y"])
    with pytest.raises(DataError, match="null/missing group"):
        estimate_distribution(["A", "B"], MECH, by=["x", None])
    with pytest.raises(ValidationError, match="names a column"):
        estimate_distribution(VALUES, MECH, by="g")


def test_public_name():
    assert pmlkit.estimate_distribution is estimate_distribution
