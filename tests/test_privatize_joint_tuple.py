"""A tuple of file columns released through one joint mechanism (``privatize_file`` with a
mapping key that is a tuple of columns): the released tuples follow the mechanism's law,
untouched cells are byte-identical, column types are kept, every released value is in its
column's alphabet, the manifest records the joint release, and bad input is refused.

The valid joint releases are ``pmlkit.joint.JointRelease`` objects; the invalid ones are
built by a small frozen dataclass with the same attributes (which ``JointRelease`` itself
would refuse to construct), to test the engine's own checks; the expected laws are
computed by enumerating the tuples with Python loops,
independently of the engine's ``ravel_multi_index`` and lookup tables.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from pmlkit import Mechanism
from pmlkit.errors import DataError, ValidationError
from pmlkit.joint import JointRelease
from pmlkit.privatization.files import column_mechanisms, privatize_file


@dataclass(frozen=True)
class Release:
    """A joint release as ``pmlkit.joint.JointRelease`` describes one."""

    columns: tuple[str, ...]
    column_labels: tuple[tuple[Any, ...], ...]
    mechanism: Mechanism
    output_tuples: tuple[tuple[Any, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "test joint release", "columns": list(self.columns),
                "column_labels": [list(c) for c in self.column_labels],
                "output_tuples": [list(t) for t in self.output_tuples],
                "mechanism": self.mechanism.to_dict()}


def random_mechanism(n: int, m: int, seed: int) -> np.ndarray:
    """A strictly positive n x m row-stochastic matrix (every output reachable)."""
    w = np.random.default_rng(seed).uniform(0.2, 1.0, size=(n, m))
    out: np.ndarray = w / w.sum(axis=1, keepdims=True)
    return out


# 2 x 2: sex x an integer column; four outputs written as the tuples in another order
SEX = ("Female", "Male")
BIT = (0, 1)
TUPLES_2 = (("Male", 1), ("Female", 0), ("Male", 0), ("Female", 1))
REL_2 = JointRelease(("sex", "bit"), (SEX, BIT),
                Mechanism(random_mechanism(4, 4, 1)), TUPLES_2)

# 3 x 3: text x integer column, 9 inputs and 5 outputs (some tuples never released, one
# released by two outputs)
COLOUR = ("red", "green", "blue")
LEVEL = (10, 20, 30)
TUPLES_3 = (("blue", 30), ("red", 10), ("green", 20), ("red", 30), ("red", 10))
REL_3 = JointRelease(("colour", "level"), (COLOUR, LEVEL),
                Mechanism(random_mechanism(9, 5, 2)), TUPLES_3)


def expected_law(rel: Any) -> dict[tuple[Any, ...], dict[tuple[Any, ...], float]]:
    """P(released tuple | input tuple), by enumeration: row r of the mechanism is the r-th
    tuple of the product, output j writes output_tuples[j] (several outputs may write the
    same tuple)."""
    w = np.asarray(rel.mechanism.matrix)
    law: dict[tuple[Any, ...], dict[tuple[Any, ...], float]] = {}
    for r, x in enumerate(itertools.product(*rel.column_labels)):
        row: dict[tuple[Any, ...], float] = {}
        for j, y in enumerate(rel.output_tuples):
            row[tuple(y)] = row.get(tuple(y), 0.0) + float(w[r, j])
        law[x] = row
    return law


def chi_square_pvalue(inputs: list[tuple[Any, ...]], outputs: list[tuple[Any, ...]],
                      rel: Release) -> float:
    """One chi-square over every (input tuple, released tuple) cell with a positive
    expectation (dof: cells minus one per input tuple); a released tuple of probability 0
    fails at once."""
    law = expected_law(rel)
    counts: dict[tuple[Any, ...], dict[tuple[Any, ...], int]] = {}
    for x, y in zip(inputs, outputs, strict=True):
        row = counts.setdefault(x, {})
        row[y] = row.get(y, 0) + 1
    stat, dof = 0.0, 0
    for x, row in counts.items():
        n_x = sum(row.values())
        for y in row:
            assert law[x].get(y, 0.0) > 0, f"tuple {y} released for {x} has probability 0"
        cells = [y for y, p in law[x].items() if p > 0]
        for y in cells:
            e = n_x * law[x][y]
            stat += (row.get(y, 0) - e) ** 2 / e
        dof += len(cells) - 1
    return float(stats.chi2.sf(stat, dof))


def write_csv_2(path: Path, n: int, seed: int) -> list[tuple[str, int]]:
    """id, a note with CSV-quoted text, then sex and bit (the released pair, last)."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(2, size=n, p=[0.3, 0.7])
    bit = rng.choice(2, size=n, p=[0.6, 0.4])
    notes = ['"a, b"', " spaced ", "", '"say ""hi"""', "x"]
    lines = ["id,note,sex,bit"] + [f"{i},{notes[i % 5]},{SEX[s]},{b}"
                                   for i, (s, b) in enumerate(zip(sex, bit, strict=True))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [(SEX[s], int(b)) for s, b in zip(sex, bit, strict=True)]


def write_parquet_3(path: Path, n: int, seed: int) -> list[tuple[str, int]]:
    rng = np.random.default_rng(seed)
    c = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    lv = rng.choice(3, size=n, p=[0.2, 0.2, 0.6])
    table = pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "colour": pa.array([COLOUR[i] for i in c], pa.string()),
        "level": pa.array(np.asarray(LEVEL)[lv], pa.int16()),
        "score": pa.array(rng.normal(size=n), pa.float64()),
    }).replace_schema_metadata({"owner": "test"})
    pq.write_table(table, path, row_group_size=10_000)
    return [(COLOUR[i], LEVEL[j]) for i, j in zip(c, lv, strict=True)]


def test_csv_2x2_law_untouched_cells_and_alphabet(tmp_path: Path) -> None:
    n = 100_000
    inputs = write_csv_2(tmp_path / "in.csv", n, 3)
    privatize_file({("sex", "bit"): REL_2}, tmp_path / "in.csv", tmp_path / "out.csv",
                   ["sex", "bit"], rng=7)
    src = (tmp_path / "in.csv").read_text(encoding="utf-8").splitlines()
    out = (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines()
    assert len(out) == len(src) and out[0] == src[0]
    # the untouched cells (id, note with quotes, spaces, empty text) byte for byte
    assert [line.rsplit(",", 2)[0] for line in out] == [line.rsplit(",", 2)[0] for line in src]
    released = [(s, int(b)) for s, b in (line.rsplit(",", 2)[1:] for line in out[1:])]
    assert {s for s, _ in released} <= set(SEX) and {b for _, b in released} <= set(BIT)
    assert chi_square_pvalue(inputs, released, REL_2) > 1e-4


@pytest.mark.parametrize("engine", ["pyarrow", "auto"])
def test_parquet_3x3_law_types_and_untouched(tmp_path: Path, engine: str) -> None:
    n = 90_000
    inputs = write_parquet_3(tmp_path / "in.parquet", n, 4)
    privatize_file({("colour", "level"): REL_3}, tmp_path / "in.parquet",
                   tmp_path / "out.parquet", ["colour", "level"], rng=11, engine=engine,
                   batch_rows=1 << 14)
    src, out = pq.read_table(tmp_path / "in.parquet"), pq.read_table(tmp_path / "out.parquet")
    assert out.schema.field("level").type == pa.int16()  # an int column stays int
    assert out.schema.field("colour").type == pa.string()
    for name in ("id", "score"):
        assert out.column(name).equals(src.column(name))
    assert out.schema.metadata[b"owner"] == b"test"
    colour, level = out.column("colour").to_pylist(), out.column("level").to_pylist()
    assert set(colour) <= set(COLOUR) and set(level) <= set(LEVEL)
    released = list(zip(colour, level, strict=True))
    # tuples no output writes are never released
    assert set(released) <= {tuple(t) for t in TUPLES_3}
    assert chi_square_pvalue(inputs, released, REL_3) > 1e-4
    man = json.loads((tmp_path / "out.parquet.pmlkit.json").read_text(encoding="utf-8"))
    assert man["writer"] == "pyarrow"


def test_engines_and_seeds_reproduce(tmp_path: Path) -> None:
    write_parquet_3(tmp_path / "in.parquet", 3000, 5)

    def run(name: str, seed: int, engine: str) -> list[Any]:
        privatize_file(REL_3, tmp_path / "in.parquet", tmp_path / name,
                       ["level", "colour"], rng=seed, engine=engine)
        t = pq.read_table(tmp_path / name)
        return [t.column("colour").to_pylist(), t.column("level").to_pylist()]

    first = run("a.parquet", 5, "pyarrow")
    assert run("b.parquet", 5, "pyarrow") == first
    assert run("c.parquet", 5, "auto") == first  # one random stream, the same draws
    assert run("d.parquet", 6, "pyarrow") != first


def test_manifest_records_the_joint_release(tmp_path: Path) -> None:
    write_parquet_3(tmp_path / "in.parquet", 500, 6)
    report = privatize_file({("colour", "level"): REL_3}, tmp_path / "in.parquet",
                            tmp_path / "out.parquet", ["colour", "level"],
                            into=["colour_p", "level_p"], keep_raw=True)
    digest = REL_3.mechanism.to_dict()["sha256"]
    assert report.joint_columns == (("colour", "level"),)
    assert report.mechanisms_sha256 == (digest, digest)
    man = json.loads((tmp_path / "out.parquet.pmlkit.json").read_text(encoding="utf-8"))
    meta = json.loads(pq.read_schema(tmp_path / "out.parquet").metadata[b"pmlkit"])
    assert man["seeded"] is False  # secure randomness by default
    for doc in (man, meta):
        assert set(doc["privatized"]) == {"colour_p", "level_p"}
        for target, source in (("colour_p", "colour"), ("level_p", "level")):
            entry = doc["privatized"][target]
            assert entry["column"] == source
            assert entry["mechanism_sha256"] == digest
            assert np.array_equal(Mechanism.from_dict(entry["mechanism"],
                                                      allow_uncertified=True).matrix,
                                  REL_3.mechanism.matrix)
            joint = entry["joint_release"]
            assert joint["columns"] == ["colour", "level"]
            assert joint["into"] == ["colour_p", "level_p"]
            assert joint["mechanism_sha256"] == digest
            assert joint["release"] == json.loads(json.dumps(REL_3.to_dict()))
    assert man["joint_columns"] == [["colour", "level"]]
    # the originals stay, the outputs are new columns of the same types
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column("level").equals(pq.read_table(tmp_path / "in.parquet").column("level"))
    assert out.schema.field("level_p").type == pa.int16()
    # a later pass sees the columns as released: releasing one again is refused
    with pytest.raises(DataError, match="already privatised"):
        privatize_file(Mechanism(np.eye(3), COLOUR, COLOUR), tmp_path / "out.parquet",
                       tmp_path / "again.parquet", "colour")


def test_joint_with_a_plain_column(tmp_path: Path) -> None:
    write_csv_2(tmp_path / "in.csv", 2000, 8)
    flip = Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("a", "b"), ("a", "b"))
    text = (tmp_path / "in.csv").read_text(encoding="utf-8")
    (tmp_path / "in3.csv").write_text(
        "\n".join(line + ("," + "ab"[i % 2] if i else ",g")
                  for i, line in enumerate(text.splitlines())) + "\n", encoding="utf-8")
    report = privatize_file({"g": flip, ("sex", "bit"): REL_2}, tmp_path / "in3.csv",
                            tmp_path / "out.csv", ["sex", "g", "bit"], rng=1)
    rows = (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines()[1:]
    assert [r.rsplit(",", 1)[1] for r in rows] == ["ba"[i % 2] for i in range(1, len(rows) + 1)]
    assert report.mechanisms_sha256[1] == flip.to_dict()["sha256"]
    assert report.mechanism_sha256 is None


def test_unknown_label_refused_and_nothing_written(tmp_path: Path) -> None:
    write_csv_2(tmp_path / "in.csv", 100, 9)
    text = (tmp_path / "in.csv").read_text(encoding="utf-8").replace(",Male,", ",Other,", 3)
    (tmp_path / "in.csv").write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=r"column 'sex'.*'Other' appears in 3 rows"):
        privatize_file({("sex", "bit"): REL_2}, tmp_path / "in.csv", tmp_path / "out.csv",
                       ["sex", "bit"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
    # unknown_as maps them to a label of that column's alphabet, recorded per column
    rep = privatize_file({("sex", "bit"): REL_2}, tmp_path / "in.csv",
                         tmp_path / "out.csv", ["sex", "bit"], unknown_as={"sex": "Female"})
    man = json.loads((tmp_path / "out.csv.pmlkit.json").read_text(encoding="utf-8"))
    assert man["privatized"]["sex"]["unknown_as"] == "Female"
    # the counts of the raw input go to the caller, not into the published manifest
    assert rep.input_counts["sex"] == {"unknown_mapped_rows": 3}
    assert rep.input_counts["bit"] == {"unknown_mapped_rows": 0}
    assert all("unknown_mapped_rows" not in e for e in man["privatized"].values())


def test_missing_category_writes_missing(tmp_path: Path) -> None:
    labels = (("x", "(missing)"), ("u", "(missing)", "v"))
    tuples = tuple(itertools.product(*labels))
    # each tuple released as itself: the output "(missing)" is written as missing
    rel = Release(("a", "b"), labels, Mechanism(np.eye(6)), tuples)
    text = "a,b\nx,u\n,v\nx,\n,\n"
    (tmp_path / "in.csv").write_text(text, encoding="utf-8")
    privatize_file(rel, tmp_path / "in.csv", tmp_path / "out.csv", ["a", "b"],
                   missing="category")
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == text
    # (x, (missing)) and ((missing), v) swapped: rows 2 and 3 trade their written cells
    moved = Release(("a", "b"), labels, Mechanism(np.eye(6)[[0, 5, 2, 3, 4, 1]]), tuples)
    privatize_file(moved, tmp_path / "in.csv", tmp_path / "moved.csv", ["a", "b"],
                   missing="category")
    assert (tmp_path / "moved.csv").read_text(encoding="utf-8") == \
        "a,b\nx,u\nx,\n,v\n,\n"
    with pytest.raises(ValidationError, match="missing='keep'"):
        privatize_file(rel, tmp_path / "in.csv", tmp_path / "out2.csv", ["a", "b"],
                       missing="keep")


@pytest.mark.parametrize(("mapping", "message"), [
    ({("sex", "bit"): Release(("sex", "bit"), (SEX, BIT), REL_2.mechanism,
                              (("Male", 1), ("Female", 2), ("Male", 0), ("Female", 1)))},
     r"writes 2 into column 'bit'"),
    ({("sex", "bit"): Release(("sex", "bit"), (SEX, (0, 1, 2)), REL_2.mechanism, TUPLES_2)},
     r"product 6 must be the mechanism's 4 inputs"),
    ({("sex", "bit"): Release(("sex", "bit"), (SEX, BIT), REL_2.mechanism, TUPLES_2[:3])},
     r"one tuple per output of the mechanism \(4\)"),
    ({("bit", "sex"): REL_2}, r"must be the joint release's own columns"),
    ({("sex", "bit"): REL_2, "sex": Mechanism(np.eye(2), SEX, SEX)}, r"released twice"),
    ({("sex", "bit"): REL_2.mechanism}, r"must map to a joint release"),
    ({("sex", "bit"): Release(("sex", "sex"), (SEX, SEX), REL_2.mechanism, TUPLES_2)},
     r"at least 2 distinct"),
    ({("sex", "bit"): Release(("sex", "bit"), (SEX, BIT), REL_2.mechanism,
                              (("Male", True), *TUPLES_2[1:]))},
     r"writes True into column 'bit'"),
])
def test_bad_releases_refused(tmp_path: Path, mapping: Any, message: str) -> None:
    write_csv_2(tmp_path / "in.csv", 10, 10)
    with pytest.raises(ValidationError, match=message):
        privatize_file(mapping, tmp_path / "in.csv", tmp_path / "out.csv", ["sex", "bit"])
    assert not (tmp_path / "out.csv").exists()


def test_columns_must_cover_the_release(tmp_path: Path) -> None:
    write_csv_2(tmp_path / "in.csv", 10, 10)
    with pytest.raises(ValidationError, match="not among columns"):
        privatize_file(REL_2, tmp_path / "in.csv", tmp_path / "out.csv", ["sex"])


def test_dask_engine_refuses_joint_releases() -> None:
    # the Dask engine reads its mechanisms through column_mechanisms: one line naming the
    # local engine
    for arg in (REL_2, {("sex", "bit"): REL_2}):
        with pytest.raises(ValidationError, match=r"local engine only \(privatize_file"):
            column_mechanisms(arg, ["sex", "bit"])


def test_find_mechanism_refuses_a_joint_column(tmp_path: Path) -> None:
    # the recorded mechanism is the tuple's: read as the column's own (a bit column whose
    # values 0 and 1 are also outputs of the joint mechanism) it would estimate nonsense
    from pmlkit.inference import find_mechanism

    write_csv_2(tmp_path / "in.csv", 50, 12)
    privatize_file(REL_2, tmp_path / "in.csv", tmp_path / "out.csv", ["sex", "bit"])
    with pytest.raises(DataError, match=r"column 'bit' was released together with"):
        find_mechanism(tmp_path / "out.csv", "bit")


def test_release_record_must_be_json(tmp_path: Path) -> None:
    @dataclass(frozen=True)
    class Opaque(Release):
        def to_dict(self) -> dict[str, Any]:
            return {"columns": {1, 2}}

    write_csv_2(tmp_path / "in.csv", 10, 13)
    bad = Opaque(REL_2.columns, REL_2.column_labels, REL_2.mechanism, REL_2.output_tuples)
    with pytest.raises(ValidationError, match="must be a JSON document"):
        privatize_file(bad, tmp_path / "in.csv", tmp_path / "out.csv", ["sex", "bit"])
