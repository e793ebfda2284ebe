"""Dask path on a real LocalCluster (2 worker processes on 127.0.0.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pmlkit
from pmlkit import Mechanism
from pmlkit.errors import DataError, ValidationError

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

SEX = Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("Female", "Male"), ("Female", "Male"))


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       worker_dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def frame():
    n = 40_000
    g = np.random.default_rng(1)
    return pd.DataFrame({"sex": np.where(g.random(n) < 0.33, "Female", "Male"),
                         "age": g.integers(17, 90, n), "w": g.random(n)},
                        index=pd.RangeIndex(n))


def test_dask_privatize_on_cluster(client, frame):
    ddf = dd.from_pandas(frame, npartitions=4)
    lazy = pmlkit.privatize(SEX, ddf, columns="sex", into="sex_p", rng=7)
    assert isinstance(lazy, dd.DataFrame)  # lazy: nothing computed yet
    assert lazy.npartitions == 4 and lazy.divisions == ddf.divisions
    out = lazy.compute()
    assert len(out) == len(frame)
    pd.testing.assert_frame_equal(out[["sex", "age", "w"]], frame, check_dtype=False)
    obs = pd.crosstab(out["sex"], out["sex_p"]).loc[["Female", "Male"], ["Female", "Male"]]
    exp = obs.to_numpy().sum(axis=1, keepdims=True) * SEX.matrix
    stat = ((obs.to_numpy() - exp) ** 2 / exp).sum()
    assert stats.chi2.sf(stat, 2) > 1e-3  # seeded, ALPHA = 1e-3
    # recomputing replays the same per-partition streams (no fresh draw to average out)
    np.testing.assert_array_equal(lazy.compute()["sex_p"].to_numpy(), out["sex_p"].to_numpy())


@pytest.mark.parametrize("rng", [3, None])
def test_partitions_do_not_share_a_stream(client, rng):
    """Two partitions with identical inputs: identical outputs would reveal a shared
    stream (chance under independence: 2^-2000)."""
    flat = Mechanism(np.full((2, 2), 0.5), ("Female", "Male"), ("Female", "Male"))
    s = pd.Series(["Male"] * 4000)
    ds = dd.from_pandas(s, npartitions=2)
    out = pmlkit.privatize(flat, ds, rng=rng).compute().to_numpy()
    assert len(out) == 4000
    assert not np.array_equal(out[:2000], out[2000:])
    assert 0.45 < np.mean(out == "Male") < 0.55


def test_dask_errors_surface(client, frame):
    bad = frame.copy()
    bad.loc[5, "sex"] = "Other"
    ddf = dd.from_pandas(bad, npartitions=2)
    with pytest.raises(DataError, match="'Other' appears in 1 row"):
        pmlkit.privatize(SEX, ddf, columns="sex").compute()
    with pytest.raises(DataError, match="'nope' not found"):
        pmlkit.privatize(SEX, ddf, columns="nope")
    with pytest.raises(ValidationError, match="DataFrames only"):
        pmlkit.privatize(SEX, ddf["sex"], columns="sex")


def test_dask_empirical_distribution_matches_pandas(client, frame):
    from pmlkit.privatization import dask_empirical_distribution

    ddf = dd.from_pandas(frame, npartitions=3)
    est = dask_empirical_distribution(ddf["sex"])
    ref = frame["sex"].value_counts()
    assert est.categories == ("Female", "Male")
    assert est.counts.tolist() == [ref["Female"], ref["Male"]]
    est2 = dask_empirical_distribution(ddf["sex"], categories=["Male", "Female", "Other"])
    assert est2.counts.tolist() == [ref["Male"], ref["Female"], 0]
    with pytest.raises(DataError, match="not in categories"):
        dask_empirical_distribution(ddf["sex"], categories=["Male"])
    with_null = dd.from_pandas(pd.Series(["a", None, "b"]), npartitions=2)
    with pytest.raises(DataError, match="1 null"):
        dask_empirical_distribution(with_null)
