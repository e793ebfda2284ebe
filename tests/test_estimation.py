"""Empirical distributions and the Weissman radius (pmlkit.estimation) against independent
computations: mpmath, brute-force subset enumeration, Monte Carlo."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pmlkit as pk
from pmlkit.errors import DataError, TooLargeError, ValidationError
from pmlkit.estimation import KAPPA_EXACT_MAX_N, kappa, log_num_subsets, phi

LABELS = ["b", "a", "c", "a", "b", "a"]


# --- empirical distributions ---------------------------------------------------------------

@pytest.mark.parametrize("make", [
    list, tuple, np.array, lambda x: np.array(x, dtype=object), pd.Series,
    lambda x: pd.Series(x, dtype="category"), pd.Categorical, pa.array,
    lambda x: pa.chunked_array([pa.array(x[:2]), pa.array(x[2:])]),
    lambda x: pa.array(x).dictionary_encode(), lambda x: pd.Series(x, dtype="string"),
])
def test_same_counts_for_every_input_type(make):
    d = pk.empirical_distribution(make(LABELS))
    assert d.categories == ("a", "b", "c")
    assert d.counts.tolist() == [3, 2, 1]
    assert d.counts.dtype == np.int64 and d.p.dtype == np.float64
    np.testing.assert_array_equal(d.p, [3 / 6, 2 / 6, 1 / 6])
    assert d.m == 6 and d.n == 3


@pytest.mark.parametrize("make", [list, np.array, pd.Series, pa.array])
def test_integer_labels(make):
    d = pk.empirical_distribution(make([3, 1, 3, 2, 3]))
    assert d.categories == (1, 2, 3)
    assert all(type(c) is int for c in d.categories)
    assert d.counts.tolist() == [1, 1, 3]


def test_explicit_categories_order_and_unseen():
    d = pk.empirical_distribution(LABELS, categories=["c", "z", "a", "b"])
    assert d.categories == ("c", "z", "a", "b")
    assert d.counts.tolist() == [1, 0, 3, 2]
    assert d.p.sum() == pytest.approx(1.0)
    d2 = pk.empirical_distribution(pa.array(LABELS), categories=("c", "z", "a", "b"))
    assert d2.counts.tolist() == d.counts.tolist()


def test_mixed_unsortable_labels_get_an_order_that_the_sample_order_does_not_set():
    # by type name, then text form: the first appearance would tell which label came first
    # (a mechanism file records the categories; issue 32: nothing in it may depend on the
    # order of the reference records)
    for labels in (["x", 1, "x", (1, 2), 1, 1], [(1, 2), 1, "x", 1, "x", 1]):
        d = pk.empirical_distribution(labels)
        assert d.categories == (1, "x", (1, 2))
        assert d.counts.tolist() == [3, 2, 1]


def test_counts_match_bincount_on_large_sample():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 7, 100_000)
    d = pk.empirical_distribution(x, categories=range(8))
    assert d.counts.tolist() == np.bincount(x, minlength=8).tolist()


def test_result_is_frozen_and_read_only():
    d = pk.empirical_distribution(LABELS)
    with pytest.raises(ValueError, match="read-only"):
        d.p[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        d.counts[0] = 1
    with pytest.raises(AttributeError):
        d.m = 3
    assert d.to_dict() == {"categories": ["a", "b", "c"], "counts": [3, 2, 1],
                           "p": [0.5, 1 / 3, 1 / 6], "m": 6, "n": 3}


def test_from_counts():
    d = pk.EmpiricalDistribution.from_counts(np.array([2, 0, 6], dtype=np.int32), "xyz")
    assert d.categories == ("x", "y", "z") and d.m == 8
    np.testing.assert_array_equal(d.p, [0.25, 0.0, 0.75])
    assert pk.EmpiricalDistribution.from_counts([1.0, 3.0]).counts.tolist() == [1, 3]


@pytest.mark.parametrize("samples,err,match", [
    ([], ValidationError, "empty"),
    (np.array([], dtype=float), ValidationError, "empty"),
    (["a", None, "b", None], DataError, "2 null"),
    (np.array([1.0, np.nan, 2.0]), DataError, "1 null/NaN"),
    (pd.Series(["a", None, "a"]), DataError, "1 null"),
    (pa.array(["a", None, None, None]), DataError, "3 null"),
    (pa.array([1.0, float("nan")], from_pandas=False), DataError, "1 NaN"),
    (np.ones((2, 2)), ValidationError, "1-D"),
    ("abc", ValidationError, "single string"),
    (5, ValidationError, "sequence"),
])
def test_bad_samples(samples, err, match):
    with pytest.raises(err, match=match):
        pk.empirical_distribution(samples)


def test_unknown_label_names_value_and_count():
    with pytest.raises(DataError, match=r"'q' \(2 row\(s\)\) is not in categories"):
        pk.empirical_distribution(["a", "q", "q"], categories=["a", "b"])


@pytest.mark.parametrize("counts,match", [
    ([1, -1, 3], ">= 0"), ([0, 0], "m >= 1"), ([1.5, 2], "integers"), ([[1, 2]], "1-D"),
    ([], "non-empty"), ([1, math.nan], "finite"), ([True, False], "integers"),
])
def test_bad_counts(counts, match):
    with pytest.raises(ValidationError, match=match):
        pk.EmpiricalDistribution.from_counts(counts)


def test_bad_categories():
    with pytest.raises(ValidationError, match="distinct"):
        pk.empirical_distribution(["a"], categories=["a", "a"])
    with pytest.raises(ValidationError, match="2 labels but counts has 3"):
        pk.EmpiricalDistribution.from_counts([1, 2, 3], ["a", "b"])
    with pytest.raises(ValidationError, match="empty"):
        pk.empirical_distribution(["a"], categories=[])


# --- Weissman bound ------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 10, 64, 1000, 10_000])
def test_log_num_subsets_matches_mpmath(n):
    mpmath.mp.dps = 60
    ref = float(mpmath.log(mpmath.mpf(2) ** n - 2))
    assert log_num_subsets(n) == pytest.approx(ref, rel=1e-14)


def test_l1_radius_formula_against_mpmath():
    mpmath.mp.dps = 60
    for delta, m, n in [(1e-6, 1000, 4), (0.05, 10, 2), (1e-9, 32561, 10_000), (1.0, 1, 3)]:
        ref = mpmath.sqrt(2 / mpmath.mpf(m) * (mpmath.log(mpmath.mpf(2) ** n - 2)
                                              - mpmath.log(delta)))
        assert pk.l1_radius(delta, m=m, n=n) == pytest.approx(float(ref), rel=1e-13)
    assert math.isfinite(pk.l1_radius(1e-6, m=100, n=10_000))


@given(st.floats(1e-300, 1.0), st.integers(1, 10**7), st.integers(2, 20_000))
def test_radius_and_failure_probability_are_inverse(delta, m, n):
    beta = pk.l1_radius(delta, m=m, n=n)
    assert pk.l1_failure_probability(beta, m=m, n=n) == pytest.approx(delta, rel=1e-8)


@given(st.floats(0, 5), st.integers(1, 10**6), st.integers(2, 50))
def test_failure_probability_in_unit_interval_and_monotone(beta, m, n):
    d = pk.l1_failure_probability(beta, m=m, n=n)
    assert 0.0 <= d <= 1.0
    assert pk.l1_failure_probability(beta + 0.01, m=m, n=n) <= d


def test_weissman_monte_carlo_coverage():
    # P(||P - P_hat||_1 >= beta*(delta)) <= delta, checked on 4000 multinomial draws
    rng = np.random.default_rng(7)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    m, delta = 200, 0.2
    beta = pk.l1_radius(delta, m=m, n=p.size)
    phat = rng.multinomial(m, p, size=4000) / m
    miss = (np.abs(phat - p).sum(axis=1) >= beta).mean()
    assert miss <= delta


def test_phi_values():
    mpmath.mp.dps = 40
    assert phi(0.5) == 2.0
    assert phi(0.0) == math.inf
    for x in (0.1, 0.3, 0.49, 0.4999, 0.5 - 1e-7, 0.5 - 1e-12):
        ref = mpmath.log((1 - mpmath.mpf(x)) / mpmath.mpf(x)) / (1 - 2 * mpmath.mpf(x))
        assert phi(x) == pytest.approx(float(ref), rel=1e-13)
    np.testing.assert_allclose(phi(np.array([0.1, 0.5])), [phi(0.1), 2.0])
    for bad in (-0.1, 0.6, math.nan):
        with pytest.raises(ValidationError):
            phi(bad)


def brute_kappa(p):
    n = len(p)
    best = 0.0
    for r in range(n + 1):
        for a in itertools.combinations(range(n), r):
            s = math.fsum(p[i] for i in a)
            best = max(best, min(s, 1 - s))
    return best


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=11).filter(lambda v: sum(v) > 0))
def test_kappa_matches_subset_enumeration(raw):
    p = np.array(raw) / sum(raw)
    assert kappa(p) == pytest.approx(brute_kappa(list(p)), abs=1e-12)


def test_kappa_large_inputs():
    assert kappa(np.r_[0.6, np.full(400, 0.001)]) == pytest.approx(0.4)  # dominant entry
    assert kappa(np.full(KAPPA_EXACT_MAX_N, 1 / KAPPA_EXACT_MAX_N)) == pytest.approx(0.5)
    with pytest.raises(TooLargeError, match="l1_radius"):
        kappa(np.full(KAPPA_EXACT_MAX_N + 1, 1 / (KAPPA_EXACT_MAX_N + 1)))


def test_l1_radius_known_kappa():
    assert pk.l1_radius_known_kappa(1e-3, m=500, n=6, kappa=0.5) == pytest.approx(
        pk.l1_radius(1e-3, m=500, n=6), rel=1e-14)
    k = 0.2
    ref = 2 * math.sqrt((math.log(2**6 - 2) - math.log(1e-3)) / (500 * phi(k)))
    assert pk.l1_radius_known_kappa(1e-3, m=500, n=6, kappa=k) == pytest.approx(ref, rel=1e-14)
    assert pk.l1_radius_known_kappa(1e-3, m=500, n=6, kappa=k) < pk.l1_radius(1e-3, m=500, n=6)
    assert pk.l1_radius_known_kappa(1e-3, m=500, n=6, kappa=0.0) == 0.0


@pytest.mark.parametrize("args,match", [
    ((0.0, 10, 3), "delta"), ((1.5, 10, 3), "delta"), ((math.nan, 10, 3), "delta"),
    ((0.1, 0, 3), "m must be"), ((0.1, 2.5, 3), "m must be"), ((0.1, 10, 1), "n must be"),
    ((0.1, 10, True), "n must be"),
])
def test_l1_radius_bad_input(args, match):
    with pytest.raises(ValidationError, match=match):
        pk.l1_radius(args[0], m=args[1], n=args[2])


def test_numpy_scalars_accepted():
    assert pk.l1_radius(np.float32(0.5), m=np.int64(10), n=np.int32(3)) == pytest.approx(
        pk.l1_radius(0.5, m=10, n=3), rel=1e-7)
    with pytest.raises(ValidationError, match="beta"):
        pk.l1_failure_probability(-0.1, m=10, n=3)
    with pytest.raises(ValidationError, match="kappa"):
        pk.l1_radius_known_kappa(0.1, m=10, n=3, kappa=0.7)


def test_counts_match_counter_for_every_input_type_on_random_data():
    import collections

    rng = np.random.default_rng(11)
    labels = np.array(["Private", "Self-emp", "Gov", "Never", "Without-pay"])
    x = labels[rng.integers(0, 5, 20_000)]
    ref = collections.Counter(x.tolist())
    expected = [ref[k] for k in sorted(ref)]
    for obj in (x, x.astype(object), x.tolist(), pa.array(x), pa.chunked_array([x[:7], x[7:]]),
                pd.Series(x), pd.Categorical(x), pa.array(x).dictionary_encode()):
        d = pk.empirical_distribution(obj)
        assert d.categories == tuple(sorted(ref)) and d.counts.tolist() == expected


def test_categorical_unused_categories_and_nulls():
    cat = pd.Categorical(["a", "b", "a"], categories=["z", "b", "a"])
    d = pk.empirical_distribution(cat)
    assert d.categories == ("a", "b") and d.counts.tolist() == [2, 1]
    d = pk.empirical_distribution(cat, categories=["z", "b", "a"])
    assert d.counts.tolist() == [0, 1, 2]
    with pytest.raises(DataError, match="1 null"):
        pk.empirical_distribution(pd.Categorical(["a", None]))
    with pytest.raises(DataError, match="1 null"):
        pk.empirical_distribution(np.array(["a", float("nan")], dtype=object))


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no numpy overflow warning
def test_counts_that_would_overflow_int64_are_rejected():
    for bad in ([1e20, 1.0], [1.7e308, 1.7e308], np.array([2**63 - 1, 2**63 - 1], dtype=np.uint64),
                np.array([2**62, 2**62], dtype=np.int64)):
        with pytest.raises(ValidationError, match="2\\*\\*62"):
            pk.EmpiricalDistribution.from_counts(bad)
    with pytest.raises(ValidationError, match="integers"):
        pk.EmpiricalDistribution.from_counts([10**30, 1])


def test_nested_list_is_not_a_label_sequence():
    with pytest.raises(ValidationError, match="samples must be 1-D"):
        pk.empirical_distribution([[1, 2], [3, 4]])
    with pytest.raises(ValidationError, match="hashable"):
        pk.empirical_distribution([{"a": 1}, {"b": 2}])
    # tuples are hashable labels
    assert pk.empirical_distribution([(1, 2), (3, 4), (1, 2)]).counts.tolist() == [2, 1]


def test_nested_pyarrow_column_is_rejected():
    with pytest.raises(ValidationError, match="hashable labels"):
        pk.empirical_distribution(pa.array([[1, 2], [3]]))


labels_st = st.one_of(st.integers(-5, 5), st.text(max_size=2), st.booleans(),
                      st.tuples(st.integers(0, 2), st.text(max_size=1)),
                      st.none(), st.just(float("nan")), st.floats(-2, 2))


@given(st.lists(labels_st, max_size=30))
def test_fuzz_labels_match_counter_or_raise_pml_error(values):
    import collections

    try:
        d = pk.empirical_distribution(values)
    except pk.PMLError:
        has_null = any(v is None or (isinstance(v, float) and v != v) for v in values)
        assert has_null or not values
        return
    ref = collections.Counter(values)  # Python's own notion of equal labels
    got = dict(zip(d.categories, d.counts.tolist(), strict=True))
    assert sorted(got.values()) == sorted(ref.values())
    assert all(got[k] == v for k, v in ref.items())
    assert d.m == len(values)
    np.testing.assert_allclose(d.p.sum(), 1.0)
