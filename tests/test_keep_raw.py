"""``into`` without ``keep_raw``: the raw sensitive column is left out of a released file
(issue 35, item 9); the command line's default, tested in tests/test_cli_privatize.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pmlkit
from pmlkit.errors import ValidationError

pd = pytest.importorskip("pandas")
pq = pytest.importorskip("pyarrow.parquet")

SWAP = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("F", "M"), ("F", "M"))


@pytest.mark.parametrize("engine", ["auto", "pyarrow"])
def test_privatize_file_leaves_the_raw_column_out(tmp_path, engine):
    df = pd.DataFrame({"id": np.arange(6), "sex": list("FMMFMF"), "x": np.linspace(0, 1, 6)})
    df.to_parquet(tmp_path / "in.parquet")
    rep = pmlkit.privatize_file(SWAP, tmp_path / "in.parquet", tmp_path / "out.parquet",
                                "sex", into="sex_p", keep_raw=False, engine=engine)
    assert rep.rows == 6
    back = pq.read_table(tmp_path / "out.parquet")
    assert back.column_names == ["id", "x", "sex_p"]
    # the swap: every released value is the other label (the raw values are gone)
    assert back.column("sex_p").to_pylist() == ["M", "F", "F", "M", "F", "M"]
    assert back.column("id").to_pylist() == list(range(6))
    meta = json.loads(back.schema.metadata[b"pmlkit"])
    assert meta["dropped"] == ["sex"]
    manifest = json.loads((tmp_path / "out.parquet.pmlkit.json").read_text())
    assert manifest["dropped"] == ["sex"]


def test_keep_raw_must_be_a_bool(tmp_path):
    pd.DataFrame({"sex": list("FM")}).to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(ValidationError, match="keep_raw must be True or False, got 'no'"):
        pmlkit.privatize_file(SWAP, tmp_path / "in.csv", tmp_path / "out.csv", "sex",
                              into="s", keep_raw="no")
    assert not (tmp_path / "out.csv").exists()


def test_the_python_default_keeps_the_raw_column_and_warns_that_it_will_not(tmp_path):
    """``into`` without ``keep_raw`` in Python keeps the raw column, as in 0.2, but says so
    (a FutureWarning pointing at the caller's line: from 0.3.0 the raw column is left out,
    as on the command line); ``keep_raw`` given, or no ``into``, says nothing."""
    import warnings

    pd.DataFrame({"id": [1, 2, 3], "sex": list("FMF")}).to_csv(tmp_path / "in.csv",
                                                               index=False)
    with pytest.warns(FutureWarning, match=r"raw column\(s\) \['sex'\] stay in the output") \
            as caught:
        pmlkit.privatize_file(SWAP, tmp_path / "in.csv", tmp_path / "a.csv", "sex",
                              into="sex_p")
    assert caught[0].filename == __file__
    assert pd.read_csv(tmp_path / "a.csv").columns.tolist() == ["id", "sex", "sex_p"]
    for name, kw, cols in (("b.csv", {"into": "sex_p", "keep_raw": True},
                            ["id", "sex", "sex_p"]),
                           ("c.csv", {"into": "sex_p", "keep_raw": False}, ["id", "sex_p"]),
                           ("d.csv", {}, ["id", "sex"])):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            pmlkit.privatize_file(SWAP, tmp_path / "in.csv", tmp_path / name, "sex", **kw)
        assert pd.read_csv(tmp_path / name).columns.tolist() == cols
