"""polars and Arrow tables inside ``privatize`` / ``estimate_distribution``, the encoders
and the alias sampler.

Every container must give the same values, in the same order, as the numpy path under the
same seed (the numpy path is itself checked against the mechanism's rows in
``test_privatize.py``), keep its own type and dtype, and refuse unknown labels and nulls
with the same messages. The alias tables are checked against the matrix they encode by
recomputing, independently of the sampler, the output distribution a table implies.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import pmlkit
from pmlkit import Mechanism
from pmlkit.errors import DataError, ValidationError
from pmlkit.privatization import AliasSampler, privatize_with_report
from pmlkit.rng import resolve_rng

W3 = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
STR3 = Mechanism(W3, input_labels=("a", "b", "c"), output_labels=("a", "b", "c"))
INT3 = Mechanism(W3)  # labels 0, 1, 2


def _labels(n: int, seed: int = 0) -> np.ndarray:
    return np.array(["a", "b", "c"], dtype=object)[np.random.default_rng(seed).integers(0, 3, n)]


def _numpy_path(mech: Mechanism, values: np.ndarray, rng: object) -> list:
    return pmlkit.privatize(mech, values, rng=rng).tolist()


# -- eager polars ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["str", "cat", "enum"])
def test_polars_string_series_matches_numpy_path(dtype):
    x = _labels(5000)
    s = pl.Series("sex", x.tolist(), dtype=pl.String)
    if dtype == "cat":
        s = s.cast(pl.Categorical)
    elif dtype == "enum":
        s = s.cast(pl.Enum(["c", "b", "a"]))
    out = pmlkit.privatize(STR3, s, rng=7)
    assert isinstance(out, pl.Series)
    assert out.name == "sex" and out.dtype == s.dtype and len(out) == len(s)
    assert out.cast(pl.String).to_list() == _numpy_path(STR3, x, 7)


@pytest.mark.parametrize("dtype", [pl.Int64, pl.Int8, pl.UInt32])
def test_polars_int_series_keeps_dtype(dtype):
    x = np.random.default_rng(1).integers(0, 3, 3000)
    out = pmlkit.privatize(INT3, pl.Series("x", x, dtype=dtype), rng=3)
    assert out.dtype == dtype
    assert out.to_list() == _numpy_path(INT3, x, 3)


def test_polars_dataframe_columns_and_into():
    x, z = _labels(2000, 1), _labels(2000, 2)
    df = pl.DataFrame({"id": np.arange(2000), "x": x.tolist(), "z": z.tolist()})
    out = pmlkit.privatize(STR3, df, columns=["x", "z"], into=["x_p", "z_p"], rng=11)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == ["id", "x", "z", "x_p", "z_p"]
    assert out.select(["id", "x", "z"]).equals(df)  # inputs untouched
    # columns in order from one stream: the same as privatising the concatenation
    both = _numpy_path(STR3, np.concatenate([x, z]), 11)
    assert out["x_p"].to_list() + out["z_p"].to_list() == both
    inplace = pmlkit.privatize(STR3, df, columns="x", rng=11)
    assert inplace.columns == df.columns and inplace["x"].to_list() == both[:2000]
    assert inplace["z"].to_list() == z.tolist()


def test_polars_report_counts_and_digest():
    x = _labels(4000, 3)
    out, rep = privatize_with_report(STR3, pl.Series("x", x.tolist()), rng=5)
    vc = dict(zip(*np.unique(out.to_numpy(), return_counts=True), strict=True))
    assert rep.output_counts == {k: int(vc.get(k, 0)) for k in ("a", "b", "c")}
    assert rep.rows == 4000 and rep.seeded
    assert rep.mechanism_sha256 == STR3.to_dict()["sha256"]
    _, rep2 = privatize_with_report(STR3, pl.Series("x", x.tolist()), rng=5)  # memoised
    assert rep2.mechanism_sha256 == STR3.to_dict()["sha256"]


def test_polars_errors_equal_numpy_path():
    x = ["a", "q", None, "q", "b"]
    with pytest.raises(DataError) as ref:
        pmlkit.privatize(STR3, np.array(x, dtype=object), rng=0)
    with pytest.raises(DataError) as got:
        pmlkit.privatize(STR3, pl.Series("x", x), rng=0)
    assert str(got.value) == str(ref.value)
    assert "'q' appears in 2 rows" in str(got.value) and "1 row holds a null" in str(got.value)
    with pytest.raises(DataError, match=r"column 'x': value 'q' appears in 2 rows"):
        pmlkit.privatize(STR3, pl.DataFrame({"x": x}), columns="x", rng=0)
    with pytest.raises(DataError, match="not found"):
        pmlkit.privatize(STR3, pl.DataFrame({"x": x}), columns="y", rng=0)
    with pytest.raises(ValidationError, match="columns= is required"):
        pmlkit.privatize(STR3, pl.DataFrame({"x": x}), rng=0)
    with pytest.raises(DataError, match="already exists"):
        pmlkit.privatize(STR3, pl.DataFrame({"x": ["a"], "y": ["b"]}), columns="x",
                         into="y", rng=0)


def test_polars_bool_column_never_matches_int_labels():
    mech = Mechanism(np.eye(2))  # labels 0, 1
    with pytest.raises(DataError, match="True"):
        pmlkit.privatize(mech, pl.Series("b", [True, False]), rng=0)


# -- lazy polars ---------------------------------------------------------------------------

def test_lazyframe_stays_lazy_and_permutation_is_exact():
    # a deterministic mechanism: exact values and order whatever the batch split
    perm = Mechanism(np.eye(3)[[2, 0, 1]], input_labels=("a", "b", "c"),
                     output_labels=("x", "y", "z"))
    x = _labels(60_000, 4)
    lf = pl.LazyFrame({"i": np.arange(60_000), "s": x.tolist()})
    out = pmlkit.privatize(perm, lf, columns="s", into="p")
    assert isinstance(out, pl.LazyFrame)
    assert out.collect_schema()["p"] == pl.String
    got = out.collect()
    expect = np.array(["z", "x", "y"], dtype=object)[np.searchsorted(["a", "b", "c"], x)]
    assert got["p"].to_list() == expect.tolist()
    assert got["i"].to_list() == list(range(60_000)) and got["s"].to_list() == x.tolist()


def test_lazyframe_error_on_collect_only():
    # (one kind of problem per frame: polars may hand the rows over in several batches,
    # and the first batch found wrong is the one reported)
    lf = pl.LazyFrame({"s": ["a", "q", "b"]})
    out = pmlkit.privatize(STR3, lf, columns="s", rng=0)  # nothing runs yet
    with pytest.raises(DataError, match=r"column 's': value 'q' appears in 1 row"):
        out.collect()
    out = pmlkit.privatize(STR3, pl.LazyFrame({"s": ["a", None, "b"]}), columns="s", rng=0)
    with pytest.raises(DataError, match=r"column 's': 1 row holds a null/missing value"):
        out.collect()
    with pytest.raises(DataError, match="'t' not found"):
        pmlkit.privatize(STR3, lf, columns="t")


def test_lazyframe_batches_never_share_a_stream():
    # uniform over 1000 outputs, one constant input: a stream reused by two batches would
    # repeat the same run of outputs; 8 outputs in a row recur by chance with p ~ 1e-18
    k = 1000
    mech = Mechanism(np.full((1, k), 1.0 / k))
    lf = pl.LazyFrame({"x": np.zeros(40_000, dtype=np.int64)})
    for rng in (None, 123):
        y = pmlkit.privatize(mech, lf, columns="x", rng=rng).collect()["x"].to_numpy()
        grams = {tuple(y[i:i + 8]) for i in range(0, y.size - 8)}
        assert len(grams) == y.size - 8


def test_seeded_lazyframe_release_does_not_depend_on_batches_or_threads():
    """A seeded lazy release is reproducible: before, each batch drew from the next child
    stream in the order polars' threads happened to call it (an attack run found 2 of 40
    collects of one 200,000-row frame different). Now the batch starting at row r draws
    from its column's stream r words in, so chunk layouts, engines and repeated collects
    all give one release; each column has its own stream."""
    k, n = 1000, 120_000
    mech = Mechanism(np.full((2, k), 1.0 / k))  # uniform: any misplaced word shows
    x = np.arange(n) % 2
    whole = pl.DataFrame({"x": x, "y": x})
    cuts = [0, 1, 7_000, 7_001, 50_000, 99_999, n]
    pieces = pl.concat([whole[a:b] for a, b in itertools.pairwise(cuts)], rechunk=False)
    runs = []
    for frame in (whole, pieces):
        for engine in ("in-memory", "streaming"):
            for _ in range(3):
                out = pmlkit.privatize(mech, frame.lazy(), columns=["x", "y"], rng=2024)
                runs.append(out.collect(engine=engine))
    first = runs[0]
    for other in runs[1:]:
        assert other.equals(first)
    assert first.columns == ["x", "y"]
    assert (first["x"].to_numpy() != first["y"].to_numpy()).mean() > 0.99  # two streams
    secure = [pmlkit.privatize(mech, whole.lazy(), columns="x").collect()["x"]
              for _ in range(2)]
    assert not secure[0].equals(secure[1])


def test_lazyframe_frequencies_follow_the_rows():
    n = 30_000
    x = np.random.default_rng(9).integers(0, 3, n)
    lf = pl.LazyFrame({"x": x})
    y = pmlkit.privatize(INT3, lf, columns="x").collect()["x"].to_numpy()
    for i in range(3):  # chi-square of each row's outputs against W[i]
        obs = np.bincount(y[x == i], minlength=3)
        assert stats.chisquare(obs, W3[i] * obs.sum()).pvalue > 1e-5


# -- Arrow tables ----------------------------------------------------------------------------

def test_arrow_table_and_record_batch_match_numpy_path():
    x = _labels(3000, 5)
    chunks = [pa.array(x[:1000].tolist()), pa.array(x[1000:].tolist())]
    tab = pa.Table.from_arrays([pa.chunked_array(chunks), pa.array(np.arange(3000))],
                               schema=pa.schema([pa.field("s", pa.string(),
                                                          metadata={b"k": b"v"}),
                                                 pa.field("i", pa.int64())]))
    out = pmlkit.privatize(STR3, tab, columns="s", rng=2)
    assert isinstance(out, pa.Table) and out.column_names == ["s", "i"]
    assert out.schema.field("s").metadata == {b"k": b"v"}
    assert [len(c) for c in out.column("s").chunks] == [1000, 2000]
    assert out.column("s").to_pylist() == _numpy_path(STR3, x, 2)
    assert out.column("i").equals(tab.column("i"))
    rb = pa.record_batch({"s": pa.array(x.tolist()).dictionary_encode(),
                          "i": np.arange(3000)})
    out_rb = pmlkit.privatize(STR3, rb, columns="s", into="p", rng=2)
    assert isinstance(out_rb, pa.RecordBatch)
    assert out_rb.column_names == ["s", "i", "p"] and out_rb.column("p").type == pa.string()
    assert out_rb.column("p").to_pylist() == _numpy_path(STR3, x, 2)


def test_arrow_table_errors():
    tab = pa.table({"s": ["a", "zz", "zz", None]})
    with pytest.raises(DataError, match=r"column 's': value 'zz' appears in 2 rows.*1 row "
                                        r"holds a null"):
        pmlkit.privatize(STR3, tab, columns="s", rng=0)
    with pytest.raises(ValidationError, match="columns= is required"):
        pmlkit.privatize(STR3, tab, rng=0)
    with pytest.raises(ValidationError, match=r"DataFrames only.*numpy ndarray"):
        pmlkit.privatize(STR3, np.array(["a"]), columns="s")


# -- encoders ----------------------------------------------------------------------------------

def test_string_containers_agree_under_one_seed():
    x = _labels(20_000, 6)
    ref = pmlkit.privatize(STR3, x.tolist(), rng=4)  # list: the generic object path
    assert _numpy_path(STR3, x, 4) == ref
    assert pmlkit.privatize(STR3, pa.array(x.tolist()), rng=4).to_pylist() == ref
    assert pmlkit.privatize(STR3, pd.Series(x, dtype="string[pyarrow]"), rng=4).tolist() == ref
    assert pmlkit.privatize(STR3, pd.Series(pd.Categorical(x)), rng=4).tolist() == ref


def test_object_strings_do_not_match_bytes_or_numbers():
    for bad in (b"a", 1, 1.5):
        vals = np.array(["a", bad, "b"], dtype=object)
        with pytest.raises(DataError, match="1 row but is not an input label"):
            pmlkit.privatize(STR3, vals, rng=0)
    with pytest.raises(DataError, match="2 rows hold a null"):
        pmlkit.privatize(STR3, np.array(["a", None, np.nan], dtype=object), rng=0)


def test_arrow_dictionary_with_unused_unknown_entries():
    x = _labels(3000, 10).tolist()
    dict_arr = pa.DictionaryArray.from_arrays(
        pa.array(np.searchsorted(["a", "b", "c", "zz"], x), type=pa.int32()),
        pa.array(["a", "b", "c", "zz"]))  # "zz" is in the dictionary, in no row
    assert pmlkit.privatize(STR3, dict_arr, rng=1).to_pylist() == \
        pmlkit.privatize(STR3, x, rng=1)
    used = pa.DictionaryArray.from_arrays(pa.array([0, 3, 3, None], type=pa.int32()),
                                          pa.array(["a", "b", "c", "zz"]))
    with pytest.raises(DataError, match=r"'zz' appears in 2 rows.*1 row holds a null"):
        pmlkit.privatize(STR3, used, rng=1)


def test_reference_sample_in_polars_or_arrow_warns():
    from pmlkit.errors import PMLWarning

    labels = ["F"] * 50 + ["M"] * 30
    mech = pmlkit.design_from_samples(labels, 1.0, 0.05).mechanism
    for values, kw in ((pl.Series("s", labels), {}),
                       (pl.DataFrame({"s": labels, "x": 0}), {"columns": "s"}),
                       (pa.table({"s": labels}), {"columns": "s"}),
                       (pa.record_batch({"s": labels}), {"columns": "s"})):
        with pytest.warns(PMLWarning, match="the reference sample or a copy of it"):
            pmlkit.privatize(mech, values, **kw)


# -- alias tables --------------------------------------------------------------------------------

def _implied(sampler: AliasSampler) -> np.ndarray:
    """The output distribution each row's table draws from: column j with probability
    1/C (the table width), kept with prob[j], else its alias."""
    n, m, c = sampler.n_inputs, sampler.n_outputs, sampler.n_columns
    prob = sampler.prob_flat.reshape(n, c)
    alias = sampler.alias_flat.reshape(n, c)
    out = prob / c
    for i in range(n):
        np.add.at(out[i], alias[i], (1.0 - prob[i]) / c)
    assert np.all(out[:, m:] == 0.0)  # the padding columns are never drawn
    return out[:, :m]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 6), st.integers(0, 2**32 - 1),
       st.floats(0.0, 0.6))
def test_alias_tables_encode_the_matrix(m, n, seed, zero_frac):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(m, 0.5), size=n)
    w[rng.random(w.shape) < zero_frac] = 0.0
    w[np.arange(n), rng.integers(0, m, n)] += 0.1  # every row keeps some mass
    w /= w.sum(axis=1, keepdims=True)
    s = AliasSampler(w)
    implied = _implied(s)
    np.testing.assert_allclose(implied, w, rtol=0, atol=1e-13)
    assert np.all(implied[w == 0.0] == 0.0)  # impossible outputs are never drawn
    codes = np.repeat(np.arange(n), 50)
    out = s.draw(codes, np.random.default_rng(seed))
    assert np.all(w[codes, out] > 0.0)


def test_large_k_sampler_frequencies():
    k = 1000
    w = np.expm1(1.0) * np.eye(k) + 1.0
    w /= w.sum(axis=1, keepdims=True)
    codes = np.random.default_rng(0).integers(0, k, 400_000)
    out = AliasSampler(w).draw(codes, resolve_rng(None).generator)
    hit = np.mean(out == codes)  # P(keep) = e / (e + k - 1)
    p = np.e / (np.e + k - 1)
    assert abs(hit - p) < 5 * np.sqrt(p * (1 - p) / codes.size)


# -- estimation ------------------------------------------------------------------------------------

def test_estimate_from_lazyframe_and_record_batch():
    y = _labels(5000, 8)
    ref = pmlkit.estimate_distribution(y, STR3)
    lf = pl.LazyFrame({"y": y.tolist(), "g": (np.arange(5000) % 2).tolist()})
    got = pmlkit.estimate_distribution(lf, STR3, column="y")
    np.testing.assert_array_equal(got.estimate, ref.estimate)
    rb = pa.record_batch({"y": y.tolist()})
    np.testing.assert_array_equal(pmlkit.estimate_distribution(rb, STR3, column="y").estimate,
                                  ref.estimate)
    grouped = pmlkit.estimate_distribution(lf, STR3, column="y", by="g")
    half = pmlkit.estimate_distribution(y[::2], STR3)
    np.testing.assert_array_equal(grouped.estimates[0].estimate, half.estimate)
    with pytest.raises(DataError, match="'nope' is not a column"):
        pmlkit.estimate_distribution(lf, STR3, column="nope")
