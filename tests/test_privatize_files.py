"""pmlkit.privatization.privatize_file: streaming, untouched columns, atomicity, errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import stats

from pmlkit import Mechanism
from pmlkit.errors import DataError
from pmlkit.io import CsvOptions
from pmlkit.privatization import privatize_file

SEX = Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("Female", "Male"), ("Female", "Male"))
ADULT_COLS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
              "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
              "hours-per-week", "native-country", "income")


@pytest.fixture
def data(tmp_path):
    n = 5000
    g = np.random.default_rng(0)
    df = pd.DataFrame({"id": np.arange(n), "sex": np.where(g.random(n) < 0.33, "Female", "Male"),
                       "x": g.normal(size=n).round(6), "note": ["a,b", "c"] * (n // 2)})
    df.to_parquet(tmp_path / "d.parquet", row_group_size=700)
    df.to_csv(tmp_path / "d.csv", index=False)
    return df


def _check_rows(df_in, df_out, col="sex", out_col="sex"):
    assert len(df_out) == len(df_in)
    for c in df_in.columns:
        if c != out_col:
            pd.testing.assert_series_equal(df_out[c], df_in[c], check_dtype=False)
    assert set(df_out[out_col]) <= {"Female", "Male"}
    # transition frequencies match the matrix (pooled chi-square, ALPHA = 1e-3, seeded)
    tab = pd.crosstab(df_in[col], df_out[out_col]).loc[["Female", "Male"], ["Female", "Male"]]
    obs = tab.to_numpy()
    exp = obs.sum(axis=1, keepdims=True) * SEX.matrix
    stat = ((obs - exp) ** 2 / exp).sum()
    assert stats.chi2.sf(stat, 2) > 1e-3


@pytest.mark.parametrize("src,dst", [("d.parquet", "o.parquet"), ("d.csv", "o.csv"),
                                     ("d.csv", "o.parquet"), ("d.parquet", "o.csv")])
def test_in_place_keeps_everything_else(tmp_path, data, src, dst):
    rep = privatize_file(SEX, tmp_path / src, tmp_path / dst, "sex", rng=1, batch_rows=1000)
    assert rep.rows == len(data) and rep.seeded
    out = (pd.read_parquet if dst.endswith("parquet") else pd.read_csv)(tmp_path / dst)
    assert list(out.columns) == list(data.columns)
    if src.endswith("csv") and dst.endswith("parquet"):
        # CSV -> Parquet keeps text as text (no lossy type inference): compare as text
        assert all(str(t) in ("object", "str", "string") for t in out.dtypes)
        _check_rows(data.astype(str), out)
    else:
        _check_rows(data, out)


def test_into_new_column_and_manifest(tmp_path, data):
    out = tmp_path / "o.parquet"
    rep = privatize_file(SEX, tmp_path / "d.parquet", out, ["sex"], into=["sex_p"], rng=3,
                         keep_raw=True)
    df = pd.read_parquet(out)
    assert list(df.columns) == [*data.columns, "sex_p"]
    pd.testing.assert_frame_equal(df[list(data.columns)], data)
    _check_rows(data, df.drop(columns="sex").rename(columns={"sex_p": "sex"}).assign(
        sex=df["sex_p"]), out_col="sex")
    manifest = json.loads((tmp_path / "o.parquet.pmlkit.json").read_text())
    assert manifest["seeded"] is True and "commitment sha256:" in manifest["rng"]
    assert "seed=3" not in json.dumps(manifest)
    assert {k: manifest[k] for k in rep.to_dict()} == rep.to_dict()
    meta = json.loads(pq.read_schema(out).metadata[b"pmlkit"])
    assert meta["mechanism_sha256"] == SEX.to_dict()["sha256"]


def test_secure_default_recorded(tmp_path, data):
    rep = privatize_file(SEX, tmp_path / "d.parquet", tmp_path / "o.parquet", "sex")
    assert rep.seeded is False and "secure" in rep.rng


def test_glob_writes_one_output_per_input(tmp_path, data):
    data.iloc[:2000].to_parquet(tmp_path / "part-0.parquet")
    data.iloc[2000:].to_parquet(tmp_path / "part-1.parquet")
    rep = privatize_file(SEX, str(tmp_path / "part-*.parquet"), tmp_path / "out", "sex", rng=1)
    assert [f[2] for f in rep.files] == [2000, 3000]
    back = pd.concat([pd.read_parquet(tmp_path / "out" / f"part-{i}.parquet") for i in (0, 1)],
                     ignore_index=True)
    _check_rows(data, back)


def test_single_input_into_new_folder(tmp_path, data):
    rep = privatize_file(SEX, tmp_path / "d.parquet", str(tmp_path / "new") + "/", "sex",
                         rng=1)
    assert rep.files[0][1] == str(tmp_path / "new" / "d.parquet")
    assert len(pd.read_parquet(tmp_path / "new" / "d.parquet")) == len(data)


def test_adult_headerless_csv(tmp_path, adult_dir):
    opts = CsvOptions(column_names=ADULT_COLS, strip_whitespace=True, null_values=("?",))
    rep = privatize_file(SEX, adult_dir / "adult.data", tmp_path / "a.parquet", "sex",
                         into="sex_p", keep_raw=True, csv=opts, rng=0)
    assert rep.rows == 32561
    df = pd.read_parquet(tmp_path / "a.parquet")
    assert list(df.columns) == [*ADULT_COLS, "sex_p"]
    # untouched cells keep their text exactly: the space after each comma and the '?'
    # (strip and null markers apply to the privatised column only)
    assert (df["sex"] == " Male").sum() == 21790
    assert df["workclass"].isna().sum() == 0 and (df["workclass"] == " ?").sum() == 1836
    assert set(df["sex_p"]) == {"Male", "Female"}


def test_errors(tmp_path, data):
    src = tmp_path / "d.parquet"
    with pytest.raises(DataError, match="does not exist"):
        privatize_file(SEX, tmp_path / "missing.parquet", tmp_path / "o.parquet", "sex")
    with pytest.raises(DataError, match=r"'nope' not found .*available columns: 'id'"):
        privatize_file(SEX, src, tmp_path / "o.parquet", "nope")
    with pytest.raises(DataError, match="is the input file"):
        privatize_file(SEX, src, src, "sex")
    with pytest.raises(DataError, match="is the input file"):
        privatize_file(SEX, src, tmp_path / "." / "d.parquet", "sex", overwrite=True)
    (tmp_path / "exists.csv").write_text("keep me\n")
    with pytest.raises(DataError, match="already exists"):
        privatize_file(SEX, src, tmp_path / "exists.csv", "sex")
    assert (tmp_path / "exists.csv").read_text() == "keep me\n"
    privatize_file(SEX, src, tmp_path / "exists.csv", "sex", overwrite=True)
    assert len(pd.read_csv(tmp_path / "exists.csv")) == len(data)
    with pytest.raises(DataError, match="extension"):
        privatize_file(SEX, src, tmp_path / "o.xlsx", "sex")


def test_unknown_label_and_nulls_count_whole_file_and_write_nothing(tmp_path, data):
    bad = data.copy()
    bad.loc[[10, 4000, 4999], "sex"] = "Other"
    bad.loc[[20, 30], "sex"] = None
    bad.to_parquet(tmp_path / "bad.parquet", row_group_size=500)
    with pytest.raises(DataError) as err:
        privatize_file(SEX, tmp_path / "bad.parquet", tmp_path / "o.parquet", "sex",
                       batch_rows=500)
    assert "'Other' appears in 3 rows" in str(err.value)
    assert "2 rows hold a null" in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.parquet", "d.csv", "d.parquet"]


def test_interrupted_write_leaves_no_partial_output(tmp_path, data, monkeypatch):
    import pmlkit.privatization._engine as engine_mod

    calls = {"n": 0}
    real_batch = engine_mod.draw_columns  # the draws of every batch

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # the user pressed Ctrl-C mid-way
        return real_batch(*args, **kwargs)

    monkeypatch.setattr(engine_mod, "draw_columns", flaky)
    for dst in ("o.parquet", "o.csv"):
        calls["n"] = 0
        with pytest.raises(KeyboardInterrupt):
            privatize_file(SEX, tmp_path / "d.parquet", tmp_path / dst, "sex", batch_rows=500)
        assert calls["n"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "d.parquet"]
    # an existing output is left intact by an interrupted overwrite
    (tmp_path / "o.csv").write_text("old\n")
    calls["n"] = 0
    with pytest.raises(KeyboardInterrupt):
        privatize_file(SEX, tmp_path / "d.parquet", tmp_path / "o.csv", "sex", batch_rows=500,
                       overwrite=True)
    assert (tmp_path / "o.csv").read_text() == "old\n"
