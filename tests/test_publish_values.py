"""A released column means what it says: each output of a single-column design is
published as a value of the input column, by the assignment of outputs to distinct input
labels that maximises P[released = true] under the estimate (issue 35, item 1).

The assignment is checked against a brute-force maximum over every injective map, the
post-processing against the PML formula computed here, and the release paths for the
column's own type (int stays int, an ordered categorical keeps its declared categories,
strings stay strings)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit.design import design_from_samples, optimal_mechanism
from pmlkit.errors import ValidationError
from pmlkit.utility import publish_assignment, published_channel


def _random_case(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    w = rng.dirichlet(np.full(m, 0.5), size=n)
    p = rng.dirichlet(np.ones(n))
    return w, p


def _brute_injective(w: np.ndarray, p: np.ndarray) -> float:
    """max over injective a: outputs -> inputs of sum_j p(a(j)) W[a(j), j]."""
    n, m = w.shape
    return max(sum(p[a[j]] * w[a[j], j] for j in range(m))
               for a in itertools.permutations(range(n), m))


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6), data=st.data())
@settings(max_examples=120, deadline=None)
def test_assignment_matches_brute_force_over_injective_maps(seed, n, data):
    m = data.draw(st.integers(1, n))
    w, p = _random_case(np.random.default_rng(seed), n, m)
    a = publish_assignment(w, p)
    assert a.shape == (m,) and len(set(a.tolist())) == m  # distinct labels
    got = float(sum(p[a[j]] * w[a[j], j] for j in range(m)))
    assert got == pytest.approx(_brute_injective(w, p), abs=1e-12)


def test_more_outputs_than_inputs_each_output_takes_its_most_likely_input():
    rng = np.random.default_rng(3)
    for _ in range(30):
        w, p = _random_case(rng, 3, 5)
        a = publish_assignment(w, p)
        best = max(sum(p[b[j]] * w[b[j], j] for j in range(5))
                   for b in itertools.product(range(3), repeat=5))
        assert float(sum(p[a[j]] * w[a[j], j] for j in range(5))) == pytest.approx(best)


def _pml(w: np.ndarray, p: np.ndarray) -> np.ndarray:
    py = p @ w
    return np.log(w.max(axis=0) / py)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_merging_outputs_published_alike_never_raises_leakage(seed):
    """With more outputs than labels, outputs published as one label are merged: the
    published channel's worst PML (formula computed here) is at most the mechanism's, for
    the estimate and for any other distribution."""
    rng = np.random.default_rng(seed)
    w, p = _random_case(rng, 3, 6)
    used, v = published_channel(w, publish_assignment(w, p))
    assert v.shape == (3, used.size) and np.allclose(v.sum(axis=1), 1.0)
    for q in (p, rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))):
        keep = (q @ w) > 0
        assert _pml(v, q).max() <= _pml(w[:, keep], q).max() + 1e-12


def test_published_channel_refuses_a_bad_assignment():
    with pytest.raises(ValidationError, match="assignment"):
        published_channel([[0.5, 0.5], [0.2, 0.8]], [0, 2])


# -- designs ------------------------------------------------------------------------------

def _sex_sample() -> list[str]:
    # the Adult split of sex: 10,771 female and 21,790 male records
    return ["Female"] * 10771 + ["Male"] * 21790


def test_low_eps_sex_is_released_as_female_or_male():
    """The issue's example (sex at eps 0.19): the design used to release ``Male`` and
    ``Male | Female``; every output is now a value of the column, and the published
    labels are the assignment maximising P[released = true] (checked by enumeration)."""
    res = design_from_samples(_sex_sample(), 0.19, 1e-6)
    mech = res.mechanism
    assert set(mech.output_labels) <= {"Female", "Male"}
    assert not any(" | " in str(v) for v in mech.output_labels)
    w = np.asarray(mech.matrix)
    p = np.asarray(res.guarantee.estimate)
    lab = list(mech.input_labels)
    acc = sum(p[lab.index(y)] * w[lab.index(y), j] for j, y in enumerate(mech.output_labels))
    assert acc == pytest.approx(_brute_injective(w, p), abs=1e-12)
    assert mech.parameters["output_names"] == "values"
    # the file records the published value of each output and re-checks on loading
    again = pmlkit.Mechanism.from_dict(json.loads(json.dumps(mech.to_dict())))
    assert again.output_labels == mech.output_labels
    assert again.certified_eps <= 0.19


def test_two_column_plan_releases_values_of_each_column():
    rng = np.random.default_rng(0)
    pd = pytest.importorskip("pandas")
    sex = np.asarray(_sex_sample(), dtype=object)
    race = rng.choice(["White", "Black", "Asian", "Other"], size=sex.size,
                      p=[0.85, 0.09, 0.04, 0.02])
    ref = pd.DataFrame({"sex": sex, "race": race})
    plan = pmlkit.design_joint(ref, 0.4, 1e-6, mode="per-column")
    for col, mech in zip(("sex", "race"), plan.mechanisms, strict=True):
        assert set(mech.output_labels) <= set(ref[col]), (col, mech.output_labels)


def test_merged_names_only_on_request():
    res = design_from_samples(_sex_sample(), 0.19, 1e-6, output_names="merged")
    assert any(" | " in str(v) for v in res.mechanism.output_labels)
    assert res.mechanism.parameters["output_names"] == "merged"
    with pytest.raises(ValidationError, match="output_names must be one of values, merged"):
        design_from_samples(_sex_sample(), 0.19, 1e-6, output_names="names")


@pytest.mark.parametrize("prior", [(0.1, 0.2, 0.3, 0.4), (0.6, 0.1, 0.1, 0.1, 0.1),
                                   (0.5, 0.25, 0.25)])
@pytest.mark.parametrize("eps", [0.2, math.log(2)])
def test_design_publishes_the_best_injective_assignment(prior, eps):
    p = np.asarray(prior)
    labels = [f"c{i}" for i in range(p.size)]
    mech = optimal_mechanism(p, eps, beta=0.05, labels=labels)
    w = np.asarray(mech.matrix)
    assert len(set(mech.output_labels)) == w.shape[1] <= p.size
    assert set(mech.output_labels) <= set(labels)
    acc = sum(p[labels.index(y)] * w[labels.index(y), j]
              for j, y in enumerate(mech.output_labels))
    assert acc == pytest.approx(_brute_injective(w, p), abs=1e-12)
    # a column permutation: the utility recorded is the released one's
    assert pmlkit.mutual_information(w, p) == pytest.approx(mech.parameters["utility_value"],
                                                            abs=1e-12)


def test_estimation_design_with_more_outputs_than_values_releases_values():
    """An estimation design can have more outputs than values (``output_names="merged"``
    shows them). By default every output is a value: the design is compared as released
    (surplus outputs merged with the rank kept, then refined over square mechanisms), the
    released channel has rank N, and its outputs carry the labels of the best assignment
    (brute force over the permutations of the released channel's columns)."""
    p = np.array([0.6, 0.3, 0.1])
    labels = ["a", "b", "c"]
    wide = optimal_mechanism(p, 1.0, beta=0.02, utility="estimation", labels=labels,
                             output_names="merged")
    assert wide.matrix.shape[1] > 3  # the case under test
    mech = optimal_mechanism(p, 1.0, beta=0.02, utility="estimation", labels=labels)
    w = np.asarray(mech.matrix)
    assert w.shape == (3, 3) and list(mech.output_labels) == labels
    assert "outputs_outside_column" not in mech.parameters
    assert np.linalg.matrix_rank(w) == 3  # still estimable
    acc = sum(p[j] * w[j, j] for j in range(3))
    assert acc == pytest.approx(_brute_injective(w, p), abs=1e-12)


# -- the column keeps its type ---------------------------------------------------------

def _int_design() -> pmlkit.Mechanism:
    ages = np.repeat(np.array([20, 30, 40, 50, 60], dtype=np.int64), [50, 80, 60, 30, 10])
    mech = design_from_samples(ages, 0.3, 1e-3).mechanism
    assert all(type(v) is int for v in mech.output_labels), mech.output_labels
    return mech


def test_int64_column_comes_back_int64_in_memory():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    mech = _int_design()
    vals = np.array([20, 30, 40, 50, 60] * 20, dtype=np.int64)
    out = pmlkit.privatize(mech, vals, rng=1)
    assert out.dtype == np.int64 and set(out.tolist()) <= {20, 30, 40, 50, 60}
    s = pmlkit.privatize(mech, pd.Series(vals, name="age"), rng=1)
    assert s.dtype == np.int64
    arr = pmlkit.privatize(mech, pa.array(vals), rng=1)
    assert arr.type == pa.int64()
    pl = pytest.importorskip("polars")
    ps = pmlkit.privatize(mech, pl.Series("age", vals), rng=1)
    assert ps.dtype == pl.Int64


def test_int64_column_comes_back_int64_in_files(tmp_path):
    pd = pytest.importorskip("pandas")
    pq = pytest.importorskip("pyarrow.parquet")
    from pmlkit.privatization import privatize_file

    mech = _int_design()
    df = pd.DataFrame({"age": np.array([20, 30, 40, 50, 60] * 20, dtype=np.int64),
                       "id": np.arange(100)})
    df.to_parquet(tmp_path / "in.parquet")
    privatize_file(mech, tmp_path / "in.parquet", tmp_path / "out.parquet", columns="age",
                   rng=2)
    back = pq.read_table(tmp_path / "out.parquet")
    assert str(back.schema.field("age").type) == "int64"
    assert set(back.column("age").to_pylist()) <= {20, 30, 40, 50, 60}
    df.to_csv(tmp_path / "in.csv", index=False)
    privatize_file(mech, tmp_path / "in.csv", tmp_path / "out.csv", columns="age", rng=2)
    assert pd.read_csv(tmp_path / "out.csv")["age"].dtype == np.int64


def test_categorical_keeps_its_categories():
    pd = pytest.importorskip("pandas")
    mech = design_from_samples(["a"] * 50 + ["b"] * 30 + ["c"] * 15 + ["d"] * 5, 0.3,
                               1e-3).mechanism
    dtype = pd.CategoricalDtype(["d", "c", "b", "a", "unused"], ordered=True)
    s = pd.Series(["a", "b", "c", "d"] * 25, dtype=dtype)
    out = pmlkit.privatize(mech, s, rng=3)
    assert out.dtype == dtype  # same categories, same order, still ordered
    assert set(out.astype(str)) <= set(mech.output_labels)
    strings = pmlkit.privatize(mech, s.astype(str).to_numpy(dtype=object), rng=3)
    assert all(type(v) is str for v in strings)


def test_categorical_keeps_its_categories_in_a_parquet_file(tmp_path):
    """The file path keeps an ordered categorical's declared dictionary as memory does:
    order, the ordered flag and unused categories (the output labels in their own order
    reversed the comparisons of an ordered column), row group after row group."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow.parquet")
    from pmlkit.privatization import privatize_file

    mech = design_from_samples(["a"] * 50 + ["b"] * 30 + ["c"] * 15 + ["d"] * 5, 0.3,
                               1e-3).mechanism
    dtype = pd.CategoricalDtype(["d", "c", "b", "a", "unused"], ordered=True)
    s = pd.Series(["a", "b", "c", "d"] * 250, dtype=dtype)
    pd.DataFrame({"c": s, "id": np.arange(s.size)}).to_parquet(tmp_path / "in.parquet",
                                                               row_group_size=300)
    privatize_file(mech, tmp_path / "in.parquet", tmp_path / "out.parquet", "c", rng=3)
    out = pd.read_parquet(tmp_path / "out.parquet")
    assert out["c"].dtype == dtype
    assert set(out["c"].astype(str)) <= set(mech.output_labels)
    assert out["id"].tolist() == list(range(s.size))
    memory = pmlkit.privatize(mech, s, rng=3)
    assert memory.dtype == out["c"].dtype


def test_string_view_column_is_released_as_string_view(tmp_path):
    """Arrow has no take for string_view: the release gathered the labels with it and
    stopped with an internal error."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from pmlkit.privatization import privatize_file

    mech = pmlkit.Mechanism(np.eye(2), ("a", "b"), ("a", "b"))
    values = pa.array(["a", "b", None] * 4, pa.string_view())
    pq.write_table(pa.table({"c": values}), tmp_path / "in.parquet")
    privatize_file(mech, tmp_path / "in.parquet", tmp_path / "out.parquet", "c", rng=0,
                   missing="keep")
    out = pq.read_table(tmp_path / "out.parquet").column("c")
    assert out.type == pa.string_view()
    assert out.to_pylist() == values.to_pylist()  # the identity releases every value


# -- the command line --------------------------------------------------------------------

def test_cli_design_and_privatize_keep_the_column(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    from pmlkit.cli.main import main

    ref = tmp_path / "ref.csv"
    pd.DataFrame({"sex": _sex_sample(), "age": np.arange(32561) % 50 // 10 * 10 + 20}
                 ).to_csv(ref, index=False)
    mfile = tmp_path / "sex.json"
    assert main(["design", "--reference", str(ref), "--column", "sex", "--eps", "0.19",
                 "--delta", "1e-6", "--output", str(mfile)]) == 0
    mech = pmlkit.Mechanism.load(mfile)
    assert set(mech.output_labels) <= {"Female", "Male"}
    out = tmp_path / "out.csv"
    assert main(["privatize", "--mechanism", str(mfile), "--input", str(ref), "--column",
                 "sex", "--output", str(out), "--seed", "1"]) == 0
    assert set(pd.read_csv(out)["sex"]) <= {"Female", "Male"}
    merged = tmp_path / "merged.json"
    assert main(["design", "--reference", str(ref), "--column", "sex", "--eps", "0.19",
                 "--delta", "1e-6", "--output", str(merged), "--output-names",
                 "merged"]) == 0
    assert any(" | " in str(v) for v in pmlkit.Mechanism.load(merged).output_labels)
    capsys.readouterr()
    assert main(["design", "--reference", str(ref), "--column", "sex", "--eps", "0.19",
                 "--delta", "1e-6", "--output", str(tmp_path / "c.json"), "--coarsen", "1",
                 "--output-names", "merged"]) != 0
    assert "--output-names" in capsys.readouterr().err


def test_adult_sex_and_race_plan_releases_values(adult_dir):
    """The issue's trial on Adult: a two-column plan (sex, race) at a small eps for the
    record releases values of each column, each at the assignment maximising the
    probability that the released value is the true one (brute force)."""
    from pmlkit.datasets import load_adult

    df = load_adult(adult_dir)
    plan = pmlkit.design_joint(df[["sex", "race"]], 0.4, 1e-6, mode="per-column")
    for col, mech in zip(("sex", "race"), plan.mechanisms, strict=True):
        labels = list(mech.input_labels)
        assert set(mech.output_labels) <= set(labels), (col, mech.output_labels)
        assert not any(" | " in str(v) for v in mech.output_labels)
        counts = df[col].value_counts()
        p = np.array([counts.get(lab, 0) for lab in labels], dtype=float)
        p /= p.sum()
        w = np.asarray(mech.matrix)
        acc = sum(p[labels.index(y)] * w[labels.index(y), j]
                  for j, y in enumerate(mech.output_labels))
        assert acc == pytest.approx(_brute_injective(w, p), abs=1e-9)
