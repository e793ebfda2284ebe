"""``estimate`` believes a release's manifest only for the data it describes (found by an
attack round: the manifest of another release copied beside a file made
``pmlkit estimate`` invert the wrong channel and print a confident wrong estimate)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pmlkit
from pmlkit.errors import DataError
from pmlkit.inference import find_mechanism
from pmlkit.io import CsvOptions


def _rr(eps: float) -> pmlkit.Mechanism:
    k = 3
    w = np.full((k, k), 1.0 / (np.exp(eps) + k - 1))
    np.fill_diagonal(w, np.exp(eps) / (np.exp(eps) + k - 1))
    return pmlkit.Mechanism(w, ("a", "b", "c"), ("a", "b", "c"))


@pytest.fixture
def two_releases(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.choice(["a", "b", "c"], 3000, p=[0.7, 0.2, 0.1]),
                       "y": np.arange(3000)})
    df.to_csv(tmp_path / "in.csv", index=False)
    df.to_parquet(tmp_path / "in.parquet")
    for ext in ("csv", "parquet"):
        pmlkit.privatize_file(_rr(0.5), tmp_path / f"in.{ext}", tmp_path / f"low.{ext}",
                              ["x"], rng=1)
        pmlkit.privatize_file(_rr(3.0), tmp_path / f"in.{ext}", tmp_path / f"high.{ext}",
                              ["x"], rng=2)
    return tmp_path


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_a_manifest_copied_from_another_release_is_refused(two_releases: Path,
                                                          ext: str) -> None:
    d = two_releases
    high = find_mechanism(d / f"high.{ext}", "x")[0]
    assert np.allclose(high.matrix, _rr(3.0).matrix)
    shutil.copy(d / f"low.{ext}.pmlkit.json", d / f"high.{ext}.pmlkit.json")
    with pytest.raises(DataError, match=r"does not describe|different mechanisms"):
        find_mechanism(d / f"high.{ext}", "x")


def test_released_data_edited_after_the_release_is_refused(two_releases: Path) -> None:
    d = two_releases
    df = pd.read_csv(d / "high.csv")
    df.loc[0, "x"] = "b" if df.loc[0, "x"] != "b" else "a"
    df.to_csv(d / "high.csv", index=False)
    with pytest.raises(DataError, match="does not describe"):
        find_mechanism(d / "high.csv", "x")


def test_copies_and_other_delimiters_are_still_found(two_releases: Path) -> None:
    d = two_releases
    # a renamed copy with its manifest renamed along (the content binding holds)
    pd.read_csv(d / "high.csv").to_parquet(d / "copy.parquet")
    shutil.copy(d / "high.csv.pmlkit.json", d / "copy.parquet.pmlkit.json")
    assert np.allclose(find_mechanism(d / "copy.parquet", "x")[0].matrix, _rr(3.0).matrix)
    # a CSV released with its own delimiter: the recorded bytes match
    (d / "semi.csv").write_text("x;y\na;1\nb;2\nc;3\n")
    pmlkit.privatize_file(_rr(1.0), d / "semi.csv", d / "semi_out.csv", ["x"], rng=0,
                          csv=CsvOptions(delimiter=";"))
    assert np.allclose(find_mechanism(d / "semi_out.csv", "x")[0].matrix, _rr(1.0).matrix)


def test_estimate_command_refuses_a_foreign_manifest(
        two_releases: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pmlkit.cli.main import main

    d = two_releases
    shutil.copy(d / "low.csv.pmlkit.json", d / "high.csv.pmlkit.json")
    assert main(["estimate", "--input", str(d / "high.csv"), "--column", "x",
                 "--no-intervals"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "does not describe" in err


def test_an_edited_manifest_beside_a_parquet_file_is_refused(two_releases: Path) -> None:
    import json

    d = two_releases
    man = d / "high.parquet.pmlkit.json"
    doc = json.loads(man.read_text())
    forged = _rr(0.5).to_dict()  # another channel, its own digest; the data untouched
    doc["privatized"]["x"]["mechanism"] = forged
    doc["privatized"]["x"]["mechanism_sha256"] = forged["sha256"]
    man.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="different mechanisms"):
        find_mechanism(d / "high.parquet", "x")


def test_a_parquet_record_is_believed_only_bound_and_alone(two_releases: Path) -> None:
    # found by an attack round: with no manifest beside it, the 'pmlkit' record of a
    # Parquet file was believed without its content binding (a record grafted onto raw
    # data), and a legacy 'mechanism' key or a manifest without a binding overrode the
    # bound record inside the file
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    d = two_releases
    meta = pq.read_schema(d / "high.parquet").metadata
    raw = pa.Table.from_pandas(pd.read_parquet(d / "in.parquet"), preserve_index=False)
    pq.write_table(raw.replace_schema_metadata({b"pmlkit": meta[b"pmlkit"]}),
                   d / "grafted.parquet")
    with pytest.raises(DataError, match="not bound to its content"):
        find_mechanism(d / "grafted.parquet", "x")

    table = pq.read_table(d / "high.parquet")
    file_meta = pq.read_metadata(d / "high.parquet").metadata
    extra = {b"pmlkit": file_meta[b"pmlkit"],
             b"mechanism": json.dumps({"x": _rr(0.5).to_dict()}).encode()}
    with pq.ParquetWriter(d / "extra.parquet", table.schema.with_metadata(extra)) as w:
        w.write_table(table.replace_schema_metadata(extra))
        w.add_key_value_metadata({"pmlkit-content": file_meta[b"pmlkit-content"].decode()})
    with pytest.raises(DataError, match=r"another mechanism|does not match"):
        find_mechanism(d / "extra.parquet", "x")

    shutil.copy(d / "high.parquet", d / "beside.parquet")
    (d / "beside.parquet.pmlkit.json").write_text(
        json.dumps({"mechanism": {"x": _rr(0.5).to_dict()}}))
    with pytest.raises(DataError, match="another mechanism"):
        find_mechanism(d / "beside.parquet", "x")
    assert find_mechanism(d / "high.parquet", "x")[0].to_dict()["sha256"] == \
        _rr(3.0).to_dict()["sha256"]


def test_a_grafted_joint_record_is_refused(tmp_path: Path) -> None:
    """The record of a joint release copied onto raw data: ``find_joint_release`` must not
    invert the raw tuples through it (a later privatize pass refuses the file too)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pmlkit.inference import find_joint_release
    from pmlkit.joint import joint_release
    from pmlkit.privatization import privatize_file

    raw = pa.table({"a": ["x", "y"] * 50, "b": ["u", "u", "v", "v", "u"] * 20})
    pq.write_table(raw, tmp_path / "in.parquet")
    rel = joint_release(("a", "b"), (("x", "y"), ("u", "v")), np.full((4, 4), 0.25),
                        [0.25] * 4)
    privatize_file({("a", "b"): rel}, tmp_path / "in.parquet", tmp_path / "out.parquet",
                   ["a", "b"], rng=0)
    assert find_joint_release(tmp_path / "out.parquet", ["a", "b"]) is not None
    record = pq.read_schema(tmp_path / "out.parquet").metadata
    pq.write_table(raw.replace_schema_metadata(record), tmp_path / "graft.parquet")
    with pytest.raises(DataError, match="does not describe"):
        find_joint_release(tmp_path / "graft.parquet", ["a", "b"])
