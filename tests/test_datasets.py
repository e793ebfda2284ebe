"""pmlkit.datasets: the checked Adult loader and the synthetic stand-in."""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pmlkit.datasets import (
    ADULT_COLUMNS,
    ADULT_SHA256,
    adult_cache_dir,
    find_adult,
    load_adult,
    synthetic_adult,
)
from pmlkit.errors import DataError, ValidationError


def test_load_adult_matches_readme_counts(adult_dir):
    tr = load_adult(adult_dir)
    te = load_adult(adult_dir, split="test")
    both = load_adult(adult_dir / "adult.data", split="both")
    assert tr.shape == (32561, 15) and te.shape == (16281, 15) and both.shape == (48842, 15)
    assert tuple(tr.columns) == ADULT_COLUMNS
    assert tr["sex"].value_counts().to_dict() == {"Male": 21790, "Female": 10771}
    assert te["income"].value_counts().to_dict() == {"<=50K": 12435, ">50K": 3846}
    assert tr[["workclass", "occupation", "native-country"]].isna().sum().tolist() == \
        [1836, 1843, 583]
    assert both.index.equals(pd.RangeIndex(48842))


def test_env_var_and_errors(adult_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("PMLKIT_DATA", str(adult_dir))
    assert find_adult() == adult_dir
    monkeypatch.setenv("PMLKIT_DATA", str(tmp_path))
    with pytest.raises(DataError, match=r"not found .*download_adult"):
        load_adult()
    with pytest.raises(ValidationError, match="split"):
        load_adult(adult_dir, split="train")


def test_sha256_mismatch_rejected(adult_dir, tmp_path):
    shutil.copy(adult_dir / "adult.data", tmp_path / "adult.data")
    with open(tmp_path / "adult.data", "ab") as fh:
        fh.write(b"39, State-gov, 1, Bachelors, 13, x, y, z, White, Male, 0, 0, 40, US, <=50K\n")
    with pytest.raises(DataError, match="SHA-256"):
        load_adult(tmp_path)
    # the constant really is the file's digest (independent: hashlib on the bytes)
    digest = hashlib.sha256((adult_dir / "adult.data").read_bytes()).hexdigest()
    assert digest == ADULT_SHA256["adult.data"]


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert adult_cache_dir() == tmp_path / "pmlkit" / "adult"


def test_synthetic_marginals():
    df = synthetic_adult(200_000, rng=1)
    assert df.attrs["synthetic"] is True and list(df.columns) == ["sex", "income"]
    n_male = int((df["sex"] == "Male").sum())
    # binomial test against the real marginal 32650/48842 (README), seeded, ALPHA = 1e-3
    assert stats.binomtest(n_male, len(df), 32650 / 48842).pvalue > 1e-3
    female_high = int(((df["sex"] == "Female") & (df["income"] == ">50K")).sum())
    assert stats.binomtest(female_high, len(df) - n_male, 1769 / 16192).pvalue > 1e-3
    np.testing.assert_array_equal(synthetic_adult(10, rng=3)["sex"],
                                  synthetic_adult(10, rng=3)["sex"])
    with pytest.raises(ValidationError):
        synthetic_adult(0, rng=1)
