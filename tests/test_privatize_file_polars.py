"""The polars engine of ``privatize_file`` (Parquet -> Parquet).

The reference is the pyarrow engine: under one seed the polars engine must publish the same
values, the same Arrow schema (field and key-value metadata) and the same codecs; every
untouched column is compared with the input itself; files the polars engine cannot write
exactly go to the pyarrow engine (``auto``) or are refused (``polars``), and nothing is
left behind on any error.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit.errors import DataError, ValidationError
from pmlkit.privatization import files as F

pytest.importorskip("polars")

MECH = pmlkit.Mechanism(np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]),
                        ("F", "M", "X"), ("F", "M", "X"))
N = 5000


def _table(n: int = N) -> pa.Table:
    g = np.random.default_rng(3)
    sex = np.array(["F", "M", "X"])[g.integers(0, 3, n)]
    fields = [pa.field("id", pa.int64(), nullable=False),
              pa.field("sex", pa.string(), metadata={b"note": b"sensitive"}),
              pa.field("x", pa.float64()), pa.field("ts", pa.timestamp("us", "UTC")),
              pa.field("u", pa.uint16()), pa.field("big", pa.large_string())]
    x = g.normal(size=n)
    x[::7] = np.nan
    cols = [pa.array(np.arange(n)), pa.array(sex), pa.array(x, mask=np.arange(n) % 11 == 0),
            pa.array(g.integers(0, 10**15, n)).cast(pa.timestamp("us", "UTC")),
            pa.array(g.integers(0, 65535, n), pa.uint16()),
            pa.array([f"row {i} \u00e9" if i % 5 else None for i in range(n)],
                     pa.large_string())]
    return pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata={b"origin": b"test"}))


def _write(path: Path, table: pa.Table | None = None, **kw: object) -> Path:
    kw.setdefault("compression", "zstd")
    kw.setdefault("row_group_size", 1000)
    pq.write_table(_table() if table is None else table, path, **kw)
    return path


def _manifest(out: Path) -> dict:
    return json.loads(Path(str(out) + ".pmlkit.json").read_text())


def _kv(path: Path) -> dict:
    """Raw key-value metadata; the pmlkit record without its seed commitment (salted,
    so it differs between any two runs)."""
    def strip(kv: dict) -> dict:
        doc = json.loads(kv.pop(b"pmlkit"))
        doc.pop("rng")
        return {**kv, b"pmlkit": doc}

    kv = dict(pq.ParquetFile(path).metadata.metadata)
    arrow = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(kv.pop(b"ARROW:schema"))))
    return {**strip(kv), b"ARROW:schema": (arrow.remove_metadata(),
                                           [f.metadata for f in arrow],
                                           strip(dict(arrow.metadata)))}


def _same(a: pa.ChunkedArray, b: pa.ChunkedArray) -> bool:
    """Equal values, nulls and types; floats compared bit for bit (NaN == NaN)."""
    if a.type != b.type:
        return False
    if not pa.types.is_floating(a.type):
        return a.equals(b)
    na, nb = (np.asarray(c.is_null().to_numpy(zero_copy_only=False)) for c in (a, b))
    va, vb = (c.fill_null(0.0).to_numpy().view(np.uint64) for c in (a, b))
    return bool(np.array_equal(na, nb) and np.array_equal(va[~na], vb[~nb]))


def _same_table(a: pa.Table, b: pa.Table) -> bool:
    return a.column_names == b.column_names and all(
        _same(a.column(n), b.column(n)) for n in a.column_names)


def _codecs(path: Path) -> set[str]:
    md = pq.ParquetFile(path).metadata
    return {md.row_group(i).column(j).compression for i in range(md.num_row_groups)
            for j in range(md.num_columns)}


@pytest.mark.parametrize("into", [None, "sex_private"])
def test_polars_engine_releases_what_pyarrow_engine_releases(tmp_path, into):
    inp = _write(tmp_path / "in.parquet")
    outs = {}
    for engine in ("pyarrow", "polars"):
        outs[engine] = tmp_path / f"{engine}.parquet"
        F.privatize_file(MECH, inp, outs[engine], "sex", into=into, rng=11, engine=engine,
                         batch_rows=1700)  # batches that straddle row groups
        assert _manifest(outs[engine])["writer"] == engine
    a, b = (pq.read_table(outs[e]) for e in ("pyarrow", "polars"))
    assert _same_table(b, a)                            # same values, same order
    source = pq.read_table(inp)
    for name in ("id", "x", "ts", "u", "big") + (("sex",) if into else ()):
        assert _same(b.column(name), source.column(name))  # untouched: as in the input
    target = into or "sex"
    assert set(b.column(target).to_pylist()) <= {"F", "M", "X"}
    assert b.column(target).to_pylist() != source.column("sex").to_pylist()
    # schema with field metadata, raw key-value metadata (ARROW:schema byte for byte)
    assert b.schema.equals(a.schema, check_metadata=False)
    assert [f.metadata for f in b.schema] == [f.metadata for f in a.schema]
    assert b.schema.field("sex").metadata == {b"note": b"sensitive"}
    assert _kv(outs["polars"]) == _kv(outs["pyarrow"])
    assert _codecs(outs["polars"]) == _codecs(outs["pyarrow"]) == {"ZSTD"}
    # the manifest's digest and size are those of the published bytes
    data = outs["polars"].read_bytes()
    man = _manifest(outs["polars"])["data"]
    assert man == {"file": "polars.parquet", "sha256": hashlib.sha256(data).hexdigest(),
                   "bytes": len(data)}


@pytest.mark.parametrize("missing, unknown_as", [("keep", "b"), ("category", None)])
def test_policies_and_typed_labels_match_pyarrow_engine(tmp_path, missing, unknown_as):
    labels = ("a", "b", "(missing)") if missing == "category" else ("a", "b")
    k = len(labels)
    mech = pmlkit.Mechanism(np.full((k, k), 1 / k) * 0.5 + np.eye(k) * 0.5, labels, labels)
    vals = np.array(["a", "b", "zz"] if unknown_as else ["a", "b"])[np.arange(N) % (
        3 if unknown_as else 2)]
    t = pa.table({"v": pa.array(vals, mask=np.arange(N) % 13 == 0),
                  "n": pa.array(np.arange(N) % 4)})
    inp = _write(tmp_path / "in.parquet", t, row_group_size=400)  # chunks of 900 span groups
    out = {}
    for engine in ("pyarrow", "polars"):
        out[engine] = tmp_path / f"{engine}.parquet"
        F.privatize_file(mech, inp, out[engine], "v", into="v_priv", rng=3, engine=engine,
                         missing=missing, unknown_as=unknown_as, batch_rows=900)
        assert _manifest(out[engine])["writer"] == engine
    a, b = (pq.read_table(out[e]) for e in ("pyarrow", "polars"))
    assert _same_table(a, b) and a.schema.equals(b.schema)
    if missing == "keep":  # missing stays missing, row by row
        assert b.column("v_priv").is_null().equals(t.column("v").is_null())
    man = [_manifest(out[e])["privatized"]["v_priv"]["unknown_mapped_rows"]
           for e in ("pyarrow", "polars")]
    assert man[0] == man[1] == (int(((np.arange(N) % 3 == 2) & (np.arange(N) % 13 != 0)).sum())
                                if unknown_as else 0)


def test_arrow_schema_entry_is_pyarrows_serialisation(tmp_path):
    inp = _write(tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    F.privatize_file(MECH, inp, out, "sex", rng=1, engine="polars")
    kv = pq.ParquetFile(out).metadata.metadata
    schema = pq.read_schema(out)
    assert kv[b"ARROW:schema"] == base64.b64encode(schema.serialize().to_pybytes())
    assert schema.field("sex").type == pa.string()      # not polars' large_string
    assert schema.metadata[b"origin"] == b"test"


def test_auto_uses_polars_where_exact(tmp_path):
    inp = _write(tmp_path / "in.parquet", compression="snappy")
    F.privatize_file(MECH, inp, tmp_path / "o.parquet", "sex", rng=2)
    assert _manifest(tmp_path / "o.parquet")["writer"] == "polars"
    assert _codecs(tmp_path / "o.parquet") == {"SNAPPY"}


def _mixed_codecs(p: Path) -> Path:
    return _write(p, compression={"id": "snappy", "sex": "zstd", "x": "zstd", "ts": "zstd",
                                  "u": "zstd", "big": "gzip"})


def _uneven_groups(p: Path) -> Path:
    t = _table()
    with pq.ParquetWriter(p, t.schema, compression="zstd") as w:
        w.write_table(t.slice(0, 1000))
        w.write_table(t.slice(1000, 3000))
        w.write_table(t.slice(4000))
    return p


def _categorical(p: Path) -> Path:
    t = _table()
    t = t.set_column(2, "x", pa.array(["a", "b"] * (N // 2)).dictionary_encode())
    return _write(p, t)


def _binary(p: Path) -> Path:
    t = _table().append_column("blob", pa.array([b"\x00\xff"] * N))
    return _write(p, t)


@pytest.mark.parametrize("make, reason", [
    (_mixed_codecs, "several codecs"), (_uneven_groups, "row groups differ in size"),
    (_categorical, "type dictionary"), (_binary, "type binary")])
def test_fallback_and_refusal(tmp_path, make, reason):
    inp = make(tmp_path / "in.parquet")
    F.privatize_file(MECH, inp, tmp_path / "auto.parquet", "sex", rng=4)
    F.privatize_file(MECH, inp, tmp_path / "pa.parquet", "sex", rng=4, engine="pyarrow")
    assert _manifest(tmp_path / "auto.parquet")["writer"] == "pyarrow"
    assert _same_table(pq.read_table(tmp_path / "auto.parquet"),
                       pq.read_table(tmp_path / "pa.parquet"))
    with pytest.raises(DataError, match="polars engine \\(engine='polars', --engine "
                       f"polars\\) cannot write .*{reason}"):
        F.privatize_file(MECH, inp, tmp_path / "pl.parquet", "sex", rng=4, engine="polars")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["in.parquet", "auto.parquet", "auto.parquet.pmlkit.json", "pa.parquet",
         "pa.parquet.pmlkit.json"])


def test_compression_given_makes_mixed_codecs_eligible(tmp_path):
    inp = _mixed_codecs(tmp_path / "in.parquet")
    out = tmp_path / "o.parquet"
    F.privatize_file(MECH, inp, out, "sex", rng=4, compression="gzip", engine="polars")
    assert _codecs(out) == {"GZIP"}


def test_polars_failure_after_drawing_falls_back_from_same_random_state(tmp_path, monkeypatch):
    # a binary column let through: polars cannot write it, after the batches were drawn
    inp = _binary(tmp_path / "in.parquet")
    F.privatize_file(MECH, inp, tmp_path / "pa.parquet", "sex", rng=9, engine="pyarrow")
    monkeypatch.setattr(F, "_polars_type_ok", lambda t: True)
    F.privatize_file(MECH, inp, tmp_path / "auto.parquet", "sex", rng=9)
    assert _manifest(tmp_path / "auto.parquet")["writer"] == "pyarrow"
    assert _same_table(pq.read_table(tmp_path / "auto.parquet"),
                       pq.read_table(tmp_path / "pa.parquet"))
    with pytest.raises(DataError, match=r"polars engine .* did not write .*nothing was published"):
        F.privatize_file(MECH, inp, tmp_path / "pl.parquet", "sex", rng=9, engine="polars")
    assert not any(p.name.startswith((".pl", "pl")) for p in tmp_path.iterdir())


def test_verification_rejects_a_written_mismatch(tmp_path, monkeypatch):
    # a writer that loses the key-value metadata must not be published
    import polars as pl

    real = pl.LazyFrame.sink_parquet

    def lossy(self, path, **kw):
        meta = kw["metadata"]  # a dict, or a callback giving the footer's entries

        def drop(got):
            return {k: v for k, v in got.items() if k != "origin"}

        kw["metadata"] = (lambda ctx: drop(meta(ctx))) if callable(meta) else drop(meta)
        return real(self, path, **kw)

    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", lossy)
    inp = _write(tmp_path / "in.parquet")
    with pytest.raises(DataError, match=r"did not write .*metadata differs"):
        F.privatize_file(MECH, inp, tmp_path / "pl.parquet", "sex", rng=1, engine="polars")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]
    F.privatize_file(MECH, inp, tmp_path / "auto.parquet", "sex", rng=1)
    assert _manifest(tmp_path / "auto.parquet")["writer"] == "pyarrow"
    assert pq.read_schema(tmp_path / "auto.parquet").metadata[b"origin"] == b"test"


def test_existing_output_not_replaced_without_overwrite(tmp_path):
    inp = _write(tmp_path / "in.parquet")
    out = tmp_path / "o.parquet"
    out.write_bytes(b"keep me")
    with pytest.raises(DataError, match="already exists"):
        F.privatize_file(MECH, inp, out, "sex", rng=1, engine="polars")
    assert out.read_bytes() == b"keep me"
    F.privatize_file(MECH, inp, out, "sex", rng=1, engine="polars", overwrite=True)
    assert pq.read_table(out).num_rows == N


@pytest.mark.parametrize("error", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_exception_mid_run_leaves_nothing(tmp_path, monkeypatch, error):
    inp = _write(tmp_path / "in.parquet")
    real, calls = F._draw_columns, []

    def boom(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise error
        return real(*a, **kw)

    monkeypatch.setattr(F, "_draw_columns", boom)
    with pytest.raises(type(error)):
        F.privatize_file(MECH, inp, tmp_path / "o.parquet", "sex", rng=1, engine="polars",
                         batch_rows=1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_unknown_label_is_the_same_error_and_nothing_is_left(tmp_path):
    t = _table()
    sex = t.column("sex").to_pylist()
    sex[4321] = "Q"
    inp = _write(tmp_path / "in.parquet", t.set_column(1, t.schema.field("sex"),
                                                       pa.array(sex)))
    with pytest.raises(DataError, match="'Q'") as pl_err:
        F.privatize_file(MECH, inp, tmp_path / "o.parquet", "sex", rng=1, engine="polars")
    with pytest.raises(DataError, match="'Q'") as pa_err:
        F.privatize_file(MECH, inp, tmp_path / "o.parquet", "sex", rng=1, engine="pyarrow")
    assert str(pl_err.value) == str(pa_err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_bad_engine_is_refused():
    with pytest.raises(ValidationError, match=r"engine must be one of .*'spark'"):
        F.privatize_file(MECH, "in.parquet", "o.parquet", "sex", engine="spark")


def test_cli_engine_polars(tmp_path, capsys):
    from pmlkit.cli.main import main

    inp = _write(tmp_path / "in.parquet")
    mech = tmp_path / "m.json"
    MECH.save(mech)
    outs = {}
    for engine in ("pyarrow", "polars"):
        outs[engine] = tmp_path / f"{engine}.parquet"
        code = main(["privatize", "--mechanism", str(mech), "--allow-uncertified",
                     "--input", str(inp), "--column", "sex", "--output", str(outs[engine]),
                     "--seed", "5", "--engine", engine])
        assert code == 0, capsys.readouterr().err
        assert _manifest(outs[engine])["writer"] == engine
    assert _same_table(pq.read_table(outs["polars"]), pq.read_table(outs["pyarrow"]))
    code = main(["privatize", "--mechanism", str(mech), "--allow-uncertified", "--input",
                 str(_mixed_codecs(tmp_path / "mixed.parquet")), "--column", "sex",
                 "--output", str(tmp_path / "m.parquet"), "--engine", "polars"])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("pmlkit: error:")]
    assert code != 0 and len(errors) == 1 and "Traceback" not in err
    assert errors[0].startswith("pmlkit: error: the polars engine (engine='polars', --engine "
                                "polars) cannot write")


def test_integer_labels_in_place_match_pyarrow_engine(tmp_path):
    mech = pmlkit.Mechanism(np.array([[0.6, 0.4], [0.3, 0.7]]), (0, 1), (0, 1))
    t = pa.table({"n": pa.array(np.arange(N) % 2, pa.int32()), "x": pa.array(np.arange(N))})
    inp = _write(tmp_path / "in.parquet", t, row_group_size=300)  # chunks of 700 span groups
    out = {}
    for engine in ("pyarrow", "polars"):
        out[engine] = tmp_path / f"{engine}.parquet"
        F.privatize_file(mech, inp, out[engine], "n", rng=8, engine=engine, batch_rows=700)
        assert _manifest(out[engine])["writer"] == engine
    a, b = (pq.read_table(out[e]) for e in ("pyarrow", "polars"))
    assert _same_table(a, b) and a.schema.equals(b.schema)
    assert set(b.column("n").to_pylist()) == {0, 1}


@pytest.mark.parametrize("into", [None, "sex_p"])
@pytest.mark.parametrize("batch_rows", [None, 20_000])
def test_engines_write_the_same_row_groups(tmp_path: Path, into: str | None,
                                           batch_rows: int | None) -> None:
    """The pyarrow engine keeps the input's row groups (split at batch_rows) whether the
    column is privatised in place or into a new column: before, with into= it merged
    30,000/30,000/10,000 into one group of 70,000 while the polars engine kept them, so
    the two engines wrote different files. Groups larger than batch_rows are split by the
    pyarrow engine only: the polars engine refuses them and auto takes pyarrow."""
    n = 70_000
    sex = np.array(["F", "M"])[np.arange(n) % 2]
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"sex": sex, "x": np.arange(n)}), src, row_group_size=30_000)
    mech = pmlkit.Mechanism([[0.7, 0.3], [0.3, 0.7]], ("F", "M"))
    kw = {} if batch_rows is None else {"batch_rows": batch_rows}
    groups, tables = {}, {}
    for engine in ("pyarrow", "polars", "auto"):
        out = tmp_path / f"{engine}.parquet"
        if engine == "polars" and batch_rows is not None:
            with pytest.raises(DataError, match=r"row groups of 30000 rows are larger than "
                                                r"batch_rows \(20000, --batch-rows\)"):
                pmlkit.privatize_file(mech, src, out, "sex", into=into, rng=3,
                                      engine=engine, **kw)
            assert not out.exists()
            continue
        pmlkit.privatize_file(mech, src, out, "sex", into=into, rng=3, engine=engine, **kw)
        md = pq.ParquetFile(out).metadata
        groups[engine] = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
        tables[engine] = pq.read_table(out)
    expected = [30_000, 30_000, 10_000] if batch_rows is None \
        else [20_000, 10_000, 20_000, 10_000, 10_000]
    for engine in groups:
        assert groups[engine] == expected, engine
        assert tables[engine].equals(tables["pyarrow"]), engine
