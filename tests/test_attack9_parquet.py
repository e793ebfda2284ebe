"""Attacks on Parquet releases, repeated releases and their release records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit.errors import DataError
from pmlkit.privatization.files import previous_privatization

M = pmlkit.Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("a", "b"), ("a", "b"))


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": ["a", "b", "a"] * 4, "y": ["b", "a", "a"] * 4}), path)
    return path


def test_raw_column_released_again_after_its_output_was_repeated(
        tmp_path: Path, src: Path) -> None:
    # pass 1: x -> x_r with the raw column kept; pass 2: x_r privatised again in place
    # (its entry now names x_r as its source); pass 3 releases x itself once more: a
    # repeated release of x, which must need repeat=True like any other
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    pmlkit.privatize_file(M, src, one, "x", into="x_r", keep_raw=True, rng=1)
    pmlkit.privatize_file(M, one, two, "x_r", repeat=True, no_joint_guarantee=True, rng=2)
    with pytest.raises(DataError, match="already privatised"):
        pmlkit.privatize_file(M, two, tmp_path / "three.parquet", "x", into="x2",
                              keep_raw=True, no_joint_guarantee=True, rng=3)


def test_joint_guarantee_refused_for_a_column_an_earlier_pass_released(
        tmp_path: Path, src: Path) -> None:
    # as above, with repeat=True and a joint guarantee of "x_r" and "x" as two distinct
    # columns: x was released by pass 1 (as x_r) and again now, which a joint guarantee of
    # distinct columns does not cover (the record written was refused when read back)
    from pmlkit.joint import joint_guarantee

    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    pmlkit.privatize_file(M, src, one, "x", into="x_r", keep_raw=True, rng=1)
    pmlkit.privatize_file(M, one, two, "x_r", repeat=True, no_joint_guarantee=True, rng=2)
    g = joint_guarantee([M, M], {"x_r": ["a", "b", "a"] * 20, "x": ["a", "b", "b"] * 20},
                        1e-6)
    three = tmp_path / "three.parquet"
    with pytest.raises(DataError, match="released more than once"):
        pmlkit.privatize_file(M, two, three, "x", into="x2", keep_raw=True, repeat=True,
                              joint_guarantee=g, rng=3)
    assert not three.exists()


def test_an_earlier_output_column_released_into_a_new_column_and_dropped(
        tmp_path: Path, src: Path) -> None:
    # x -> x_r (raw x dropped), then x_r -> x_r2 (x_r dropped): the record kept the entry
    # of x_r, a column the output no longer has, so pmlkit refused its own output
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    pmlkit.privatize_file(M, src, one, "x", into="x_r", keep_raw=False, rng=1)
    pmlkit.privatize_file(M, one, two, "x_r", into="x_r2", keep_raw=False, repeat=True,
                          no_joint_guarantee=True, rng=2)
    assert pq.read_table(two).column_names == ["y", "x_r2"]
    record = previous_privatization(two)
    assert record is not None and list(record["privatized"]) == ["x_r2"]
    # the release of x (as x_r) is still on record: x_r2 is a release of it again
    assert [p["columns"] for p in record["previous_passes"]] == [["x"]]


def test_a_record_with_an_entry_removed_is_refused_by_its_binding(
        tmp_path: Path, src: Path) -> None:
    # x released twice (x_r, x_2); the record edited to show the first pass only (x_2's
    # entry and the pass history removed) but left with the binding pmlkit wrote, which
    # binds x_2 too: the edit is visible, and the understated history must be refused
    import json

    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    pmlkit.privatize_file(M, src, one, "x", into="x_r", keep_raw=True, rng=1)
    pmlkit.privatize_file(M, one, two, "x", into="x_2", keep_raw=False, repeat=True, rng=2)
    kv = pq.ParquetFile(two).metadata.metadata
    first = json.loads(kv[b"pmlkit"])["previous_passes"][0]  # x -> x_r only
    meta = {b"pmlkit": json.dumps(first).encode()}
    table = pq.read_table(two)
    forged = tmp_path / "forged.parquet"
    with pq.ParquetWriter(forged, table.schema.with_metadata(meta)) as w:
        w.write_table(table.replace_schema_metadata(meta))
        w.add_key_value_metadata({"pmlkit-content": kv[b"pmlkit-content"].decode()})
    with pytest.raises(DataError, match="x_2"):
        previous_privatization(forged)


def test_a_small_dictionary_index_holds_every_output_label(tmp_path: Path) -> None:
    # a categorical column with int8 indices and a mechanism of 200 output labels: the
    # released codes do not fit int8 (a raw ArrowInvalid); the column stays categorical
    n = 200
    labels = tuple(f"l{i}" for i in range(n))
    matrix = np.full((n, n), 0.5 / (n - 1))
    np.fill_diagonal(matrix, 0.5)
    mech = pmlkit.Mechanism(matrix, labels, labels)
    codes = pa.array(list(range(100)) * 2, pa.int8())
    column = pa.DictionaryArray.from_arrays(codes, pa.array(list(labels[:100])))
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({"x": column, "y": list(range(200))}), src)
    pmlkit.privatize_file(mech, src, out, "x", rng=np.random.default_rng(4))
    got = pq.read_table(out)
    assert pa.types.is_dictionary(got.schema.field("x").type)
    assert set(got.column("x").to_pylist()) <= set(labels)
    assert got.column("y").to_pylist() == list(range(200))


def test_dask_refuses_inputs_with_different_release_histories(tmp_path: Path) -> None:
    # one folder output holds one release record: with a raw input and a pmlkit output
    # (x privatised in place) the record of the second was written for every part, so
    # the raw x of the first input's part was recorded (and bound) as a released column
    pytest.importorskip("distributed")
    from pmlkit.privatization._dask import privatize_file_dask

    table = pa.table({"x": ["a", "b", "a"] * 4, "y": ["b", "a", "a"] * 4})
    raw, done = tmp_path / "raw.parquet", tmp_path / "done.parquet"
    pq.write_table(table, tmp_path / "src.parquet")
    pq.write_table(table, raw)
    pmlkit.privatize_file(M, tmp_path / "src.parquet", done, "x", rng=1)
    out = tmp_path / "out"
    with pytest.raises(DataError, match="release histor"):
        privatize_file_dask(M, [str(raw), str(done)], out, "y", rng=2,
                            no_joint_guarantee=True)
    assert not out.exists()


@pytest.mark.parametrize("into", [["y", "x"], ["y", "z"]])
@pytest.mark.parametrize("keep_raw", [False, True])
def test_into_naming_another_privatised_column_is_refused(
        tmp_path: Path, into: list[str], keep_raw: bool) -> None:
    # x's release into y while y is itself privatised: keep_raw=False failed with a raw
    # KeyError, keep_raw=True overwrote the raw y it promised to keep
    from pmlkit.errors import PMLError

    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({"x": ["a", "b"] * 3, "y": ["b", "b", "a"] * 2}), src)
    with pytest.raises(PMLError, match="into column 'y'"):
        pmlkit.privatize_file(M, src, out, ["x", "y"], into=into, keep_raw=keep_raw, rng=1)
    assert not out.exists()


def test_numeric_labels_with_the_missing_category_into_parquet(tmp_path: Path) -> None:
    # labels 0, 1 and "(missing)" (missing="category"): the output type was taken from
    # the labels with a raw ArrowInvalid; a typed Parquet column is refused with the
    # policy's own error, and CSV text goes into a text column
    from pmlkit.errors import PMLError

    labels = (0, 1, "(missing)")
    mech = pmlkit.Mechanism(np.array([[0.8, 0.1, 0.1], [0.3, 0.6, 0.1], [0.1, 0.1, 0.8]]),
                            labels, labels)
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({"x": pa.array([0, None, 1, 0])}), src)
    with pytest.raises(PMLError, match="missing='category'"):
        pmlkit.privatize_file(mech, src, out, "x", missing="category", rng=1)
    assert not out.exists()
    text = tmp_path / "in.csv"
    text.write_text("x\n0\n\n1\n0\n", encoding="utf-8")
    pmlkit.privatize_file(mech, text, out, "x", missing="category", rng=1)
    got = pq.read_table(out).column("x")
    assert got.type == pa.string() and set(got.to_pylist()) <= {"0", "1", None}


@pytest.mark.parametrize("passes", [5, "xy", {"0": {"columns": ["x"]}},
                                    [{"columns": "x", "privatized": {}}]])
def test_a_malformed_pass_history_is_refused(tmp_path: Path, src: Path, passes: object
                                            ) -> None:
    # the earlier passes of a record ("previous_passes") are where a repeated release is
    # seen; a malformed history crashed the next pass (TypeError) or was copied on and
    # ignored by the repeat checks: refused like any other malformed record
    import json

    one = tmp_path / "one.parquet"
    pmlkit.privatize_file(M, src, one, "x", rng=1)
    kv = pq.ParquetFile(one).metadata.metadata
    record = {**json.loads(kv[b"pmlkit"]), "previous_passes": passes}
    meta = {b"pmlkit": json.dumps(record).encode()}
    table = pq.read_table(one)
    forged = tmp_path / "forged.parquet"
    with pq.ParquetWriter(forged, table.schema.with_metadata(meta)) as w:
        w.write_table(table.replace_schema_metadata(meta))
        w.add_key_value_metadata({"pmlkit-content": kv[b"pmlkit-content"].decode()})
    with pytest.raises(DataError, match="previous_passes"):
        pmlkit.privatize_file(M, forged, tmp_path / "out.parquet", "y", rng=2,
                              no_joint_guarantee=True)


def test_file_key_value_metadata_outside_the_arrow_schema_is_kept(tmp_path: Path) -> None:
    # a key-value entry of the Parquet footer that the stored Arrow schema does not
    # repeat (added after the schema, as writers other than pandas do) was dropped
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    table = pa.table({"x": ["a", "b"], "y": [1, 2]}).replace_schema_metadata({"s": "1"})
    with pq.ParquetWriter(src, table.schema) as w:
        w.write_table(table)
        w.add_key_value_metadata({"extra": "keep me"})
    pmlkit.privatize_file(M, src, out, "x", rng=1)
    kv = pq.ParquetFile(out).metadata.metadata
    assert kv[b"extra"] == b"keep me" and kv[b"s"] == b"1"


def test_two_different_release_records_in_one_parquet_file_are_refused(
        tmp_path: Path, src: Path) -> None:
    # the Arrow schema's record says one pass; the footer's own "pmlkit" entry says x was
    # released twice: the first was believed. Two records of one file are ambiguous
    import json

    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    pmlkit.privatize_file(M, src, one, "x", rng=1)
    pmlkit.privatize_file(M, one, two, "x", repeat=True, rng=2)
    kv = pq.ParquetFile(two).metadata.metadata
    both = json.loads(kv[b"pmlkit"])
    single = {k: v for k, v in both.items() if k != "previous_passes"}
    meta = {b"pmlkit": json.dumps(single).encode()}
    table = pq.read_table(two)
    forged = tmp_path / "forged.parquet"
    with pq.ParquetWriter(forged, table.schema.with_metadata(meta)) as w:
        w.write_table(table.replace_schema_metadata(meta))
        w.add_key_value_metadata({"pmlkit": kv[b"pmlkit"].decode(),
                                  "pmlkit-content": kv[b"pmlkit-content"].decode()})
    with pytest.raises(DataError, match="two different"):
        previous_privatization(forged)


def test_a_column_of_nothing_but_nulls_with_missing_keep(tmp_path: Path) -> None:
    # a Parquet column of Arrow type null (every value missing): missing="keep" failed
    # with a raw ArrowNotImplementedError (a label cast to the null type)
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({"x": pa.nulls(4), "y": [1, 2, 3, 4]}), src)
    pmlkit.privatize_file(M, src, out, "x", missing="keep", rng=1)
    got = pq.read_table(out)
    assert got.column("x").to_pylist() == [None] * 4
    assert got.column("y").to_pylist() == [1, 2, 3, 4]


def test_one_joint_guarantee_for_inputs_with_different_histories_is_refused(
        tmp_path: Path, src: Path) -> None:
    # a.parquet had x released, b.parquet is raw; a joint guarantee of x and y was
    # recorded for both outputs, and b's record (x raw, not released) was refused when
    # read back: one guarantee cannot describe both releases
    from pmlkit.joint import joint_guarantee

    folder = tmp_path / "in"
    folder.mkdir()
    pmlkit.privatize_file(M, src, folder / "a.parquet", "x", rng=1)
    pq.write_table(pq.read_table(src), folder / "b.parquet")
    g = joint_guarantee([M, M], {"x": ["a", "b", "a"] * 20, "y": ["a", "b", "b"] * 20},
                        1e-6)
    out = tmp_path / "out"
    with pytest.raises(DataError, match="release histor"):
        pmlkit.privatize_file(M, [folder / "a.parquet", folder / "b.parquet"], out, "y",
                              rng=2, joint_guarantee=g)
    assert not out.exists()


def test_joint_guarantee_refused_for_an_earlier_output_column_released_again(
        tmp_path: Path, src: Path) -> None:
    # x -> x_r (raw x dropped); x_r privatised again with a joint guarantee of "x" and
    # "x_r" as two distinct columns: x_r is x's release, so this is x released again, and
    # the record written was refused when read back
    from pmlkit.joint import joint_guarantee

    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    pmlkit.privatize_file(M, src, one, "x", into="x_r", keep_raw=False, rng=1)
    g = joint_guarantee([M, M], {"x": ["a", "b", "a"] * 20, "x_r": ["a", "b", "b"] * 20},
                        1e-6)
    with pytest.raises(DataError, match="released more than once"):
        pmlkit.privatize_file(M, one, two, "x_r", repeat=True, joint_guarantee=g, rng=2)
    assert not two.exists()


def test_a_users_file_that_only_looks_like_a_leftover_is_kept(tmp_path: Path,
                                                              src: Path) -> None:
    # the clean-up of a killed run's temporary files removed (recursively) anything named
    # ".<output>.pmlkit-<number>-..." whose number is not a live process: a user's folder
    # of notes included
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])  # a finished process
    dead.wait()
    notes = tmp_path / f".out.parquet.pmlkit-{dead.pid}-notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("keep me", encoding="utf-8")
    pmlkit.privatize_file(M, src, tmp_path / "out.parquet", "x", rng=1)
    assert (notes / "mine.txt").read_text(encoding="utf-8") == "keep me"
