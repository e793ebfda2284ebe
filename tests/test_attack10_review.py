"""Review of the day's changes: regressions and holes found by attack round 10."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pmlkit._validation import up_text


@pytest.mark.parametrize("value", [0.1, 1e-300, -9.9999995, 2.6663488890420035e17, 0.7])
@pytest.mark.parametrize("digits", [6, 9, 17])
def test_up_text_never_below_the_exact_float(value: float, digits: int) -> None:
    # float(text) >= value held for "0.1", whose decimal value is below the float 0.1
    text = up_text(value, digits)
    assert Decimal(text) >= Decimal(value)
    assert len(Decimal(text).normalize().as_tuple().digits) <= digits


def _nearest(lo: int, st: int, n: int, v: int) -> int:
    """The exact nearest grid point's index of ``v`` (a tie goes up), in Python ints."""
    k = (v - lo) // st if v >= lo else 0
    k = min(max(k, 0), n - 1)
    if k + 1 < n and (lo + (k + 1) * st) - v <= v - (lo + k * st):
        k += 1
    return k


@pytest.mark.parametrize(("lo", "hi", "st"), [
    (-2**63 - 4, 2**63 + 4, 2**63 + 4),  # hi - lo passes 2**64: v - lo wrapped mod 2**64
    (-2**64, 2**64, 2**64),  # a step beyond uint64: OverflowError
    (0, 2**65, 2**64),
    (-2**70, 10, 2**70 + 10),
])
def test_integer_grid_wider_than_int64_encodes_to_the_nearest_point(
        lo: int, hi: int, st: int) -> None:
    import numpy as np

    from pmlkit.numeric.grid import NumericGrid

    g = NumericGrid(lo, hi, st)
    i64 = np.iinfo(np.int64)
    vals = [5, -5, 2**62, -2**62, int(i64.max), int(i64.min), 0]
    got = g.encode(np.array(vals, dtype=np.int64)).codes.tolist()
    assert got == [_nearest(lo, st, g.n, v) for v in vals]


def test_crlf_kept_when_a_skipped_line_holds_an_odd_quote(tmp_path) -> None:
    # the quote-parity search for the header's line end started at the file's first byte,
    # so a quote in a line skip_rows skips made every later LF look quoted: LF output
    import numpy as np

    import pmlkit
    from pmlkit.io import CsvOptions

    mech = pmlkit.Mechanism(np.array([[0.75, 0.25], [0.25, 0.75]]), ("a", "b"), ("a", "b"))
    inp, out = tmp_path / "in.csv", tmp_path / "out.csv"
    inp.write_bytes(b'# the survey\'s "v2 export\r\ns,x\r\na,1\r\nb,2\r\n')
    pmlkit.privatize_file(mech, inp, out, "s", rng=0, csv=CsvOptions(skip_rows=1),
                          keep_raw=True)
    assert out.read_bytes().count(b"\r\n") == 3


def test_polars_enum_released_over_the_output_labels_reads_back_in_polars(tmp_path) -> None:
    # the input field's _PL_ENUM_VALUES metadata was kept over a dictionary of the output
    # labels: polars read every label the Enum lacks ("q") as a missing value
    import numpy as np

    import pmlkit

    pl = pytest.importorskip("polars")
    pq = pytest.importorskip("pyarrow.parquet")
    mech = pmlkit.Mechanism(np.array([[0.5, 0.5], [0.5, 0.5]]), ("a", "b"), ("q", "a"))
    inp, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pl.DataFrame({"x": pl.Series(["a", "b"] * 10, dtype=pl.Enum(["b", "z", "a"]))}
                 ).write_parquet(inp)
    pmlkit.privatize_file(mech, inp, out, "x", rng=0)
    released = pq.read_table(out).column("x").to_pylist()
    assert "q" in released
    assert pl.read_parquet(out)["x"].cast(pl.String).to_list() == released


def test_a_mechanism_certified_eps_is_printed_rounded_up_in_html() -> None:
    # the release report's per-column guarantee (guarantee_line) printed the certified eps
    # rounded to the nearest: 1.0000049 showed as 1, below the certified value
    from types import SimpleNamespace

    from pmlkit._html import guarantee_line

    mech = SimpleNamespace(parameters={}, certified_eps=1.0000049, certified=True,
                           uncertainty_set=None, guarantee=None)
    assert "certified eps = 1.00001</b>" in guarantee_line(mech)


def test_one_joint_guarantee_for_inputs_released_by_different_mechanisms_is_refused(
        tmp_path) -> None:
    # a.parquet had x released through M, b.parquet through a far leakier mechanism: the
    # same columns, so the history check passed, the guarantee was re-checked for the
    # first input's M only and recorded with b's output, where it does not hold
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import pmlkit
    from pmlkit.errors import DataError
    from pmlkit.joint import joint_guarantee

    m = pmlkit.Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("a", "b"), ("a", "b"))
    leaky = pmlkit.Mechanism(np.array([[0.99, 0.01], [0.01, 0.99]]), ("a", "b"), ("a", "b"))
    src, folder = tmp_path / "in.parquet", tmp_path / "in"
    pq.write_table(pa.table({"x": ["a", "b", "a"] * 4, "y": ["b", "a", "a"] * 4}), src)
    folder.mkdir()
    pmlkit.privatize_file(m, src, folder / "a.parquet", "x", rng=1)
    pmlkit.privatize_file(leaky, src, folder / "b.parquet", "x", rng=1)
    g = joint_guarantee([m, m], {"x": ["a", "b", "a"] * 20, "y": ["a", "b", "b"] * 20},
                        1e-6)
    out = tmp_path / "out"
    with pytest.raises(DataError, match="release histor"):
        pmlkit.privatize_file(m, [folder / "a.parquet", folder / "b.parquet"], out, "y",
                              rng=2, joint_guarantee=g)
    assert not out.exists()


def test_declared_dictionary_reads_no_whole_row_group(tmp_path, monkeypatch) -> None:
    # it read the first row group's column whole (a single-group file: the whole column,
    # once more per Dask task) for the dictionary one batch of one record holds
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pmlkit.privatization._engine import declared_dictionary

    dtype = pd.CategoricalDtype(["b", "z", "a"], ordered=True)
    inp = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(
        {"x": pd.Series(["a", "b"] * 50, dtype=dtype)})), inp)

    def whole_group(*args: object, **kw: object) -> None:
        raise AssertionError("the whole row group was read")

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", whole_group)
    typ = pq.read_schema(inp).field("x").type
    assert declared_dictionary(inp, "x", typ).to_pylist() == ["b", "z", "a"]


def test_pmlkit_privatize_prints_the_joint_guarantee_rounded_up(tmp_path, capsys) -> None:
    # the joint eps 1.7051010728... was printed "1.7051" (.6g): below the guarantee that
    # the manifest records and str(guarantee) prints as 1.70511
    import itertools
    import json

    import numpy as np

    from pmlkit import L1Ball, Mechanism, leakage_capacity
    from pmlkit.cli.main import main
    from pmlkit.joint import JointGuarantee

    rr = np.array([[0.8, 0.2], [0.2, 0.8]])
    ball = L1Ball([0.5, 0.5], 0.1)
    for name, labels in (("a", ("x", "y")), ("b", ("u", "v"))):
        Mechanism(rr, labels, labels, uncertainty_set=ball.to_dict(),
                  certified_eps=leakage_capacity(rr, ball)).save(tmp_path / f"{name}.json")
    pairs = itertools.islice(itertools.cycle([("x", "u"), ("x", "v"), ("y", "u")]), 30)
    (tmp_path / "data.csv").write_text("a,b\n" + "".join(f"{p},{q}\n" for p, q in pairs))
    (tmp_path / "ref.csv").write_text("a,b\n" + "x,u\nx,v\ny,u\n" * 1000)
    out = tmp_path / "out.csv"
    code = main(["privatize", "--input", str(tmp_path / "data.csv"), "--column", "a",
                 "--column", "b", "--output", str(out), "--mechanism",
                 f"a={tmp_path / 'a.json'}", "--mechanism", f"b={tmp_path / 'b.json'}",
                 "--joint-reference", str(tmp_path / "ref.csv"), "--delta", "0.05"])
    assert code == 0
    g = JointGuarantee.from_dict(
        json.loads((tmp_path / "out.csv.pmlkit.json").read_text())["joint_guarantee"])
    assert f"joint guarantee of columns a, b: ({up_text(g.eps)}, " in capsys.readouterr().out


def test_a_pml_guarantee_is_printed_rounded_up() -> None:
    # str(PMLGuarantee) printed eps 0.5318790329... as "0.531879" (.6g, to the nearest)
    import numpy as np

    from pmlkit import L1Ball, Mechanism, leakage_capacity

    rr, ball = np.array([[0.8, 0.2], [0.2, 0.8]]), L1Ball([0.5, 0.5], 0.1)
    g = Mechanism(rr, ("a", "b"), ("a", "b"), uncertainty_set=ball.to_dict(),
                  certified_eps=leakage_capacity(rr, ball)).guarantee
    text = str(g)
    assert f"eps = {up_text(g.eps)} " in text
    assert f"certified worst case {up_text(g.certified_eps, 9)};" in text


def test_a_designed_guarantee_prints_its_eps_rounded_up() -> None:
    # the design summary (pmlkit design, the demo) printed eps = log 2 as 0.693147, below
    # the guarantee, next to "certified worst-case eps = 0.69314718 <= eps = 0.693147"
    import math
    from decimal import Decimal

    from pmlkit import design_from_samples

    text = str(design_from_samples(["a"] * 60 + ["b"] * 40, math.log(2), 1e-3).guarantee)
    head = text.splitlines()[0]
    shown = head.split("(", 1)[1].split(",", 1)[0]
    assert Decimal(shown) >= Decimal(math.log(2)), head
    assert f"<= eps = {shown}." in text
