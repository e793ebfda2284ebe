"""Labels that only look alike are matched exactly on the file path.

* Text labels (a decomposed accent, a trailing space, the empty string, quotes,
  non-ASCII) are matched to exactly their own input index: under one seed a file of
  text labels releases the same output indices as the same file with each value replaced
  by its index (found by a Python lookup) through the same matrix on integer labels.
* A value that is not a label (a decomposed accent is not ``é``) or a missing value in a
  late chunk is refused, counted, and nothing is left.
* A CSV label that is a null marker (the empty cell) is missing, not the label.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit.errors import DataError
from pmlkit.privatization import files as F

#: labels that only look alike: a decomposed accent, a trailing space, the empty string
LABELS = ("F", "M", "é", "F ", "", "a,b", 'q"t', "日本")
#: text that is not a label although it looks like one
NOT_LABELS = ("e\u0301", "f", " F", "M\n", "\x00", "日")


def _mech(labels: tuple[str, ...] = LABELS) -> pmlkit.Mechanism:
    g = np.random.default_rng(5)
    w = g.dirichlet(np.ones(len(labels)), size=len(labels))
    return pmlkit.Mechanism(w, labels, labels)


def _parquet(path: Path, sex: list[str | None], row_group: int = 500) -> Path:
    n = len(sex)
    table = pa.table({"id": pa.array(np.arange(n)), "sex": pa.array(sex, pa.string()),
                      "x": pa.array(np.linspace(0, 1, n))})
    pq.write_table(table, path, row_group_size=row_group, compression="snappy")
    return path


LABEL_SETS = [LABELS, ("é", "", "F "), ("F ",)]


@pytest.mark.parametrize("labels", LABEL_SETS)
def test_lookalike_labels_release_their_own_indices(tmp_path, labels):
    g = np.random.default_rng(2)
    codes = g.integers(0, len(labels), 4000)
    src = _parquet(tmp_path / "in.parquet", [labels[i] for i in codes])
    ints = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"id": pa.array(np.arange(4000)), "sex": pa.array(codes)}), ints,
                   row_group_size=500)
    mech = _mech(labels)
    by_index = pmlkit.Mechanism(mech.matrix, tuple(range(len(labels))),
                                tuple(range(len(labels))))
    rep = F.privatize_file(mech, src, tmp_path / "out.parquet", "sex", rng=11, batch_rows=700)
    F.privatize_file(by_index, ints, tmp_path / "ints_out.parquet", "sex", rng=11,
                     batch_rows=700)
    got = pq.read_table(tmp_path / "out.parquet")
    want = pq.read_table(tmp_path / "ints_out.parquet").column("sex").to_pylist()
    assert rep.rows == 4000
    assert [labels.index(v) for v in got.column("sex").to_pylist()] == want
    assert got.column("id").equals(pq.read_table(src).column("id"))


@pytest.mark.parametrize("labels", LABEL_SETS[:2])
@pytest.mark.parametrize("bad", ["e\u0301", None])
def test_late_unknown_or_missing_value_is_refused(tmp_path, bad, labels):
    """An unknown value (a decomposed accent is not the label ``é``) or a missing value
    in a late chunk is refused, both rows counted, and nothing is left."""
    sex: list[str | None] = [labels[i % len(labels)] for i in range(3000)]
    sex[2500] = bad
    sex[2900] = bad
    src = _parquet(tmp_path / "in.parquet", sex, row_group=300)
    with pytest.raises(DataError) as info:
        F.privatize_file(_mech(labels), src, tmp_path / "o.parquet", "sex", rng=1,
                         batch_rows=400)
    assert "2 rows" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def _csv(path: Path, cells: list[str]) -> Path:
    path.write_text("id,sex,c\n" + "".join(f"{i},{v},x{i % 7}\n" for i, v in
                                          enumerate(cells)))
    return path


@pytest.mark.parametrize("case", ["plain", "empty_label_null_marker", "empty_label_kept",
                                  "unknown_and_missing"])
def test_csv_labels_and_null_markers(tmp_path, case):
    """An in-place CSV column is released in row order, or refused with every problem
    counted; a label that is a null marker (the empty cell, by default) is missing, not
    a label."""
    from pmlkit.io import CsvOptions

    labels = ("F", "M", "") if case.startswith("empty") else ("F", "M", "X")
    g = np.random.default_rng(4)
    cells = [labels[i] for i in g.integers(0, len(labels), 3000)]
    if case == "unknown_and_missing":
        cells[2500] = cells[2900] = "Nope"
        cells[100] = ""
    csv = CsvOptions(null_values=()) if case == "empty_label_kept" else None
    src = _csv(tmp_path / "in.csv", cells)
    results: list[bytes | str] = []
    out = tmp_path / "out.csv"
    try:
        F.privatize_file(_mech(labels), src, out, "sex", rng=3, batch_rows=700, csv=csv,
                         manifest=False)
        results.append(out.read_bytes())
    except DataError as exc:
        results.append(str(exc))
        assert not out.exists()
    if case == "empty_label_null_marker":
        assert "missing" in results[0]  # an empty cell is missing, not the label ""
    elif case == "unknown_and_missing":
        assert "'Nope'" in results[0] and "2" in results[0]
    else:
        assert isinstance(results[0], bytes)
        lines = results[0].decode().splitlines()
        assert [ln.split(",")[0] for ln in lines[1:]] == [str(i) for i in range(3000)]


