"""pmlkit.privatize: sampling correctness (chi-square), containers, types, errors.

Statistical tests use a fixed seed and significance level ALPHA = 1e-3 (seeded, so the
outcome is deterministic; a correct sampler fails such a test with probability 1e-3 over
seeds). The secure default (unseeded, different every run) uses ALPHA_SECURE = 1e-6 so a
correct sampler fails at most once in a million runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import pmlkit
from pmlkit import Mechanism
from pmlkit.errors import DataError, ValidationError
from pmlkit.privatization import AliasSampler, privatize_with_report

ALPHA = 1e-3
ALPHA_SECURE = 1e-6


def _random_mechanism(k: int, seed: int) -> np.ndarray:
    """Rows: half Dirichlet(1), half uniform (every cell expects >= 0.5/k of its row)."""
    g = np.random.default_rng(seed)
    return 0.5 * g.dirichlet(np.ones(k), size=k) + 0.5 / k


def _chi2_pvalue(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Pooled Pearson chi-square of the transition counts against n_i * W[i, :]."""
    k, m = w.shape
    obs = np.zeros((k, m))
    np.add.at(obs, (x, y), 1)
    n_i = obs.sum(axis=1)
    stat, dof = 0.0, 0
    for i in range(k):
        pos = w[i] > 0
        assert obs[i, ~pos].sum() == 0, "an impossible output was produced"
        res = stats.chisquare(obs[i, pos], n_i[i] * w[i, pos])
        stat += res.statistic
        dof += int(pos.sum()) - 1
    return float(stats.chi2.sf(stat, dof))


@pytest.mark.parametrize("k", [2, 4, 50])
def test_chi_square_seeded_1e6_draws(k):
    w = _random_mechanism(k, seed=k)
    x = np.random.default_rng(100 + k).integers(0, k, size=10**6)
    y = pmlkit.privatize(w, x, rng=2024)
    assert y.shape == x.shape
    assert _chi2_pvalue(x, y, w) > ALPHA


def test_chi_square_secure_default():
    w = _random_mechanism(4, seed=1)
    x = np.random.default_rng(5).integers(0, 4, size=200_000)
    y, report = privatize_with_report(w, x)
    assert report.seeded is False and "secure" in report.rng
    assert _chi2_pvalue(x, y, w) > ALPHA_SECURE


def test_chi_square_detects_a_wrong_matrix():
    """Power check: the same test rejects when the matrix used differs by 0.01."""
    w = np.array([[0.6, 0.4], [0.3, 0.7]])
    x = np.random.default_rng(5).integers(0, 2, size=10**6)
    y = pmlkit.privatize(w, x, rng=1)
    assert _chi2_pvalue(x, y, np.array([[0.61, 0.39], [0.3, 0.7]])) < ALPHA


def test_zero_entries_never_drawn_and_deterministic_rows():
    w = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [0.2, 0.3, 0.5]])
    x = np.repeat([0, 1, 2], 100_000)
    y = pmlkit.privatize(w, x, rng=3)
    assert (y[:100_000] == 1).all()
    assert not (y[100_000:200_000] == 1).any()
    assert _chi2_pvalue(x, y, w) > ALPHA


@given(st.integers(1, 12), st.integers(0, 2**32 - 1), st.floats(0, 0.9))
def test_alias_tables_reproduce_the_matrix_exactly(m, seed, zero_frac):
    """P(output j | row i) implied by the tables = W[i, j] (independent reconstruction)."""
    g = np.random.default_rng(seed)
    w = g.dirichlet(np.ones(m), size=3)
    w[g.random(w.shape) < zero_frac] = 0.0
    w[:, 0] += 1e-3
    w /= w.sum(axis=1, keepdims=True)
    s = AliasSampler(w)
    c = s.n_columns  # m padded with zero columns to a power of two
    assert c >= m and c & (c - 1) == 0
    wide = np.zeros((3, c))
    wide[:, :m] = w
    prob = s.prob_flat.reshape(3, c)
    alias = s.alias_flat.reshape(3, c)
    for i in range(3):
        implied = prob[i].copy()
        np.add.at(implied, alias[i], 1.0 - prob[i])
        np.testing.assert_allclose(implied / c, wide[i], atol=1e-12)
        # no path leads to an impossible output (nor to a padding column)
        assert not ((prob[i] > 0) & (wide[i] == 0)).any()
        assert not ((prob[i] < 1) & (wide[i, alias[i]] == 0)).any()


def test_seeded_runs_are_reproducible_and_recorded():
    w = _random_mechanism(3, 0)
    x = np.arange(1000) % 3
    a, rep = privatize_with_report(w, x, rng=9)
    np.testing.assert_array_equal(a, pmlkit.privatize(w, x, rng=9))
    assert rep.seeded is True and "seeded" in rep.rng and "research" in rep.rng
    assert "seed=9" not in rep.rng  # the seed itself is withheld (a salted commitment)
    assert rep.rows == 1000 and sum(rep.output_counts.values()) == 1000
    assert rep.output_counts == {j: int((a == j).sum()) for j in range(3)}


def test_chunks_do_not_repeat_randomness(monkeypatch):
    """Across chunk boundaries the stream continues (chunks are not re-seeded)."""
    from pmlkit.privatization import _core

    monkeypatch.setattr(_core, "CHUNK_ROWS", 1000)
    w = np.full((2, 2), 0.5)
    y = pmlkit.privatize(w, np.zeros(4000, dtype=int), rng=1)
    blocks = y.reshape(4, 1000)
    assert len({b.tobytes() for b in blocks}) == 4
    # and equals the unchunked result drawn from the same seed
    monkeypatch.setattr(_core, "CHUNK_ROWS", 1 << 20)
    np.testing.assert_array_equal(y, pmlkit.privatize(w, np.zeros(4000, dtype=int), rng=1))


SEX = Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("Female", "Male"), ("Female", "Male"))


@pytest.mark.parametrize("labels", [(3, 7), ("a", "b"), (False, True)],
                         ids=["int", "str", "bool"])
def test_label_types_preserved_numpy_pandas_arrow(labels):
    mech = Mechanism(np.array([[0.9, 0.1], [0.2, 0.8]]), labels, labels)
    vals = [labels[i % 3 == 0] for i in range(300)]
    arr = np.array(vals)
    out = pmlkit.privatize(mech, arr, rng=1)
    assert isinstance(out, np.ndarray) and out.dtype.kind == arr.dtype.kind
    assert set(out.tolist()) <= set(labels)
    assert all(type(v) is type(labels[0]) for v in out.tolist())
    s = pd.Series(vals, index=pd.RangeIndex(300, 0, -1), name="col")
    ps = pmlkit.privatize(mech, s, rng=1)
    assert ps.index.equals(s.index) and ps.name == "col" and ps.dtype == s.dtype
    assert ps.attrs["pmlkit_privatization"]["seeded"] is True
    pa_arr = pa.chunked_array([vals[:100], vals[100:]])
    po = pmlkit.privatize(mech, pa_arr, rng=1)
    assert isinstance(po, pa.ChunkedArray) and po.type == pa_arr.type
    assert [len(c) for c in po.chunks] == [100, 200]
    lo = pmlkit.privatize(mech, vals, rng=1)
    assert isinstance(lo, list) and all(type(v) is type(labels[0]) for v in lo)


def test_all_containers_same_draws_with_same_seed():
    vals = ["Male", "Female", "Male"] * 50
    ref = pmlkit.privatize(SEX, np.array(vals, dtype=object), rng=4)
    assert pmlkit.privatize(SEX, vals, rng=4) == list(ref)
    assert pmlkit.privatize(SEX, pd.Series(vals), rng=4).tolist() == list(ref)
    assert pmlkit.privatize(SEX, pa.array(vals), rng=4).to_pylist() == list(ref)
    assert pmlkit.privatize(SEX, pa.array(vals).dictionary_encode(), rng=4).to_pylist() \
        == list(ref)


def test_categorical_in_categorical_out_and_output_labels_differ():
    mech = Mechanism(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]), ("x", "y"), (10, 20, 30))
    cat = pd.Series(pd.Categorical(["x", "y", "x"] * 100, categories=["y", "x", "unused"]),
                    index=list(range(5, 305)))
    out = pmlkit.privatize(mech, cat, rng=2)
    assert isinstance(out.dtype, pd.CategoricalDtype)
    assert list(out.cat.categories) == [10, 20, 30]
    assert out.index.equals(cat.index)
    x = cat.to_numpy()
    assert set(out[x == "x"]) <= {10, 20} and set(out[x == "y"]) <= {20, 30}
    raw = pmlkit.privatize(mech, pd.Categorical(["x", "y"]), rng=2)
    assert isinstance(raw, pd.Categorical)


def test_dataframe_columns_into_keeps_everything_else():
    df = pd.DataFrame({"sex": ["Male", "Female"] * 500, "age": np.arange(1000),
                       "sex2": ["Female"] * 1000}, index=np.arange(1000)[::-1])
    out = pmlkit.privatize(SEX, df, columns=["sex", "sex2"], into=["p1", "p2"], rng=1)
    assert list(out.columns) == ["sex", "age", "sex2", "p1", "p2"]
    pd.testing.assert_frame_equal(out[["sex", "age", "sex2"]], df)
    assert out.attrs["pmlkit_privatization"]["columns"] == ["sex", "sex2"]
    inplace = pmlkit.privatize(SEX, df, columns="sex", rng=1)
    assert list(inplace.columns) == list(df.columns) and inplace.index.equals(df.index)
    pd.testing.assert_series_equal(inplace["age"], df["age"])
    assert df["sex"].tolist()[:2] == ["Male", "Female"]  # the input was not modified


def test_dataframe_duplicate_index_and_dtypes_kept():
    mech = Mechanism(np.array([[0.5, 0.5], [0.1, 0.9]]), (1, 2), (1, 2))
    df = pd.DataFrame({"k": np.array([1, 2, 2, 1], dtype=np.int32),
                       "c": pd.Categorical(["a", "b", "a", "b"])}, index=[7, 7, 3, 3])
    out = pmlkit.privatize(mech, df, columns="k", into="k_priv", rng=0)
    assert out.index.tolist() == [7, 7, 3, 3]
    assert out["k_priv"].dtype == np.int32 and set(out["k_priv"]) <= {1, 2}
    assert isinstance(out["c"].dtype, pd.CategoricalDtype)


def test_unknown_labels_named_with_counts_and_nothing_returned():
    vals = ["Male", "Female", "X", "X", "Y", "Male"]
    with pytest.raises(DataError) as err:
        pmlkit.privatize(SEX, vals)
    msg = str(err.value)
    assert "'X'" in msg and "2 rows" in msg and "'Y'" in msg and "1 rows" in msg


def test_unknown_counted_over_all_chunks(monkeypatch):
    from pmlkit.privatization import _core

    monkeypatch.setattr(_core, "CHUNK_ROWS", 10)
    vals = np.array(["Male"] * 95 + ["Z"] * 5 + ["Z"] * 7, dtype=object)
    with pytest.raises(DataError, match=r"'Z' appears in 12 rows"):
        pmlkit.privatize(SEX, vals)


@pytest.mark.parametrize("vals", [
    ["Male", None, None], pd.Series(["Male", None, np.nan]), pa.array(["Male", None, None]),
    np.array(["Male", None, None], dtype=object),
    pd.Series(pd.Categorical(["Male", None, None])),
])
def test_nulls_rejected_with_count(vals):
    with pytest.raises(DataError, match=r"2 rows hold a null"):
        pmlkit.privatize(SEX, vals)


def test_nan_in_float_labels_and_kind_mismatches():
    w = np.array([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(DataError, match="null"):
        pmlkit.privatize(w, np.array([0.0, np.nan]))
    with pytest.raises(DataError, match="True"):
        pmlkit.privatize(w, np.array([True, False]))  # bools are not the labels 0 and 1
    with pytest.raises(DataError, match="'1'"):
        pmlkit.privatize(w, ["1", "0"])  # strings are not ints
    with pytest.raises(DataError, match="appears in 1 row"):
        pmlkit.privatize(w, np.array([0, 1, 2]))
    boolmech = Mechanism(w, (False, True), (False, True))
    with pytest.raises(DataError, match="not an input label"):
        pmlkit.privatize(boolmech, np.array([1, 0]))
    with pytest.raises(DataError, match="not an input label"):
        pmlkit.privatize(boolmech, [1, 0])
    # numpy integer input against int labels works (numpy scalars accepted)
    assert set(pmlkit.privatize(w, np.array([0, 1], dtype=np.int8), rng=0)) <= {0, 1}


def test_bad_arguments():
    with pytest.raises(ValidationError, match="rows must sum to 1"):
        pmlkit.privatize([[0.5, 0.6]], [0])
    with pytest.raises(ValidationError, match="1-D"):
        pmlkit.privatize(SEX, np.array([["Male"]]))
    with pytest.raises(ValidationError, match="columns= is required"):
        pmlkit.privatize(SEX, pd.DataFrame({"sex": ["Male"]}))
    with pytest.raises(DataError, match="'nope' not found; available columns: 'sex'"):
        pmlkit.privatize(SEX, pd.DataFrame({"sex": ["Male"]}), columns="nope")
    with pytest.raises(ValidationError, match="DataFrames only"):
        pmlkit.privatize(SEX, ["Male"], columns="sex")
    with pytest.raises(ValidationError, match="values must be"):
        pmlkit.privatize(SEX, {"Male"})
    with pytest.raises(ValidationError, match="rng"):
        pmlkit.privatize(SEX, ["Male"], rng=0.5)


def test_empty_input_gives_empty_output():
    out = pmlkit.privatize(SEX, pd.Series([], dtype=object))
    assert len(out) == 0
    assert len(pmlkit.privatize(np.eye(2), np.array([], dtype=int))) == 0


_label_sets = st.one_of(
    st.lists(st.text(min_size=0, max_size=5), min_size=1, max_size=6, unique=True),
    st.lists(st.integers(-10**12, 10**12), min_size=1, max_size=6, unique=True),
)


def test_labels_with_trailing_nul_are_not_truncated():
    """numpy's fixed-width str dtype drops trailing NULs ('\\x00' -> ''): an output label
    must come back exactly as the mechanism names it, in every container (found by the
    property test below in CI)."""
    labels = ("", "00", "\x00", "0", "a\x00")
    mech = Mechanism(np.eye(5), labels, labels)
    vals = ["\x00", "", "a\x00", "0", "\x00"]
    obj = np.empty(len(vals), dtype=object)
    obj[:] = vals
    assert pmlkit.privatize(mech, vals) == vals
    assert pmlkit.privatize(mech, obj).tolist() == vals
    assert pmlkit.privatize(mech, pd.Series(vals, dtype=object)).tolist() == vals
    # (pandas before 3.0 itself merges '' into '\x00' when it builds the categories: the
    # identity release must give back the column as pandas holds it)
    cat = pd.Series(vals, dtype="category")
    assert pmlkit.privatize(mech, cat).tolist() == cat.tolist()
    assert pmlkit.privatize(mech, pd.Series(vals, dtype="string[pyarrow]")).tolist() == vals
    assert pmlkit.privatize(mech, pa.array(vals)).to_pylist() == vals
    # a NUL-terminated output label reached from an ordinary numpy str input
    shifted = Mechanism(np.eye(2), ("a", "b"), ("a\x00", "b"))
    assert pmlkit.privatize(shifted, np.array(["a", "b", "a"])).tolist() == \
        ["a\x00", "b", "a\x00"]


@given(_label_sets, st.data())
def test_permutation_mechanism_maps_every_label_exactly(labels, data):
    """A deterministic permutation matrix: output must be perm(input), row by row, in every
    container (checks the label mapping independently of the randomness)."""
    k = len(labels)
    perm = data.draw(st.permutations(list(range(k))))
    w = np.zeros((k, k))
    w[np.arange(k), perm] = 1.0
    mech = Mechanism(w, tuple(labels), tuple(labels))
    idx = data.draw(st.lists(st.integers(0, k - 1), min_size=0, max_size=40))
    vals = [labels[i] for i in idx]
    expected = [labels[perm[i]] for i in idx]
    assert pmlkit.privatize(mech, vals) == expected
    assert pmlkit.privatize(mech, pd.Series(vals, dtype=object)).tolist() == expected
    assert pmlkit.privatize(mech, pa.array(vals, type=pa.array(labels).type)).to_pylist() \
        == expected


def test_arrow_backed_pandas_series():
    mech = Mechanism(np.array([[0.9, 0.1], [0.2, 0.8]]), (1, 2), (1, 2))
    s = pd.Series([1, 2, 2, 1] * 50, dtype="int64[pyarrow]", index=np.arange(200)[::-1])
    out = pmlkit.privatize(mech, s, rng=1)
    assert out.dtype == s.dtype and out.index.equals(s.index)
    # same draws as the numpy path from the same seed (same stream, same order)
    ref = pmlkit.privatize(mech, s.to_numpy(dtype=np.int64), rng=1)
    assert out.tolist() == ref.tolist()
    with pytest.raises(DataError, match="1 row holds a null"):
        pmlkit.privatize(mech, pd.Series([1, None, 2], dtype="int64[pyarrow]"))
    strs = pd.Series(["Male", "Female"] * 100, dtype=pd.ArrowDtype(pa.string()))
    assert pmlkit.privatize(SEX, strs, rng=3).dtype == strs.dtype


def test_categorical_output_is_built_without_pandas_range_passes() -> None:
    """Categorical outputs are built with validate=False (no range pass over the drawn
    codes): the categories and values of the integer-code release under one seed."""
    import pandas as pd

    w = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    mech = pmlkit.Mechanism(w, ("a", "b", "c"), ("a", "b", "c"))
    codes = np.random.default_rng(3).integers(0, 3, 5000)
    s = pd.Series(pd.Categorical.from_codes(codes, categories=["a", "b", "c"]))
    out = pmlkit.privatize(mech, s, rng=9)
    ref = pmlkit.privatize(pmlkit.Mechanism(w), codes, rng=9)
    assert list(out.cat.categories) == ["a", "b", "c"]
    assert out.tolist() == [("a", "b", "c")[j] for j in ref.tolist()]
