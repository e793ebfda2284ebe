"""The Dask engine cuts a CSV file only at record boundaries pyarrow's reader sees.

A quote inside an unquoted field (``ab"cd``, ``5'10"``) is plain text to pyarrow; counting
quote parity took it for an opening quote, and a later cut landed on a line break inside a
quoted field: a record was cut in two (a truncated cell and an invented record). The
pieces are checked against one pyarrow read of the whole file (no cluster), and the Dask
engine's output against the local engine's, byte for byte.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pmlkit import Mechanism
from pmlkit.io import CsvOptions
from pmlkit.privatization import privatize_file
from pmlkit.privatization._pieces import csv_pieces, piece_batches

ABC = Mechanism(np.eye(3), ("a", "b", "c"), ("a", "b", "c"))  # output = input: comparable

# fields of a record: plain, stray quotes in unquoted text, quoted with line breaks,
# delimiters and doubled quotes, text after a closing quote, empty, leading space
FIELDS = ["plain", 'ab"cd', "5'10\"", 'x""', '"x\ny"', '"a,b"', '"say ""hi"""',
          '"\n"', '"p\r\nq"', '""', "", '"a"b"c', '"q"x', ' "sp', '"\n,\n"', '"""\n"""',
          '"a\rb"']


def reproducer() -> bytes:
    return (b"id,c,z\n" + b"".join(b"%d,a,plain\n" % i for i in range(50))
            + b'50,a,ab"cd\n' + b'51,b,"x\n52,c,fake"\n'
            + b"".join(b"%d,a,plain\n" % i for i in range(53, 100)))


@st.composite
def csv_files(draw: st.DrawFn, delimiters: str = ",;", stray: bool = False
              ) -> tuple[bytes, CsvOptions, str]:
    """A CSV file of records mixing the FIELDS, its options and its line end; ``stray``:
    the first record holds a stray quote (it turned quote parity). A quoted last field
    whose second line reads as a record is how a cut in it went unnoticed."""
    delim = draw(st.sampled_from(delimiters))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    width = draw(st.integers(1, 3))
    n = draw(st.integers(1, 30))
    rows = [delim.join(["id", "c", *(f"z{j}" for j in range(width))])]
    for i in range(n):
        free = draw(st.lists(st.sampled_from(FIELDS), min_size=width, max_size=width))
        if stray and i == 0:
            free[0] = "5'10\""
        if draw(st.booleans()):  # a last field whose second line reads as a record
            free[-1] = '"x' + newline + delim.join(["9", "b", *["f"] * width]) + '"'
        rows.append(delim.join([str(i), draw(st.sampled_from("abc")), *free]))
    text = newline.join(rows) + draw(st.sampled_from([newline, ""]))
    skip = draw(st.sampled_from(["", 'junk "line\n']))  # skipped raw, quote and all
    bom = draw(st.sampled_from(["", "\ufeff"]))
    opts = CsvOptions(delimiter=delim, skip_rows=1 if skip else 0)
    return (bom + skip + text).encode(), opts, newline


def whole(path: Path, opts: CsvOptions) -> pa.Table | None:
    """One pyarrow read of the whole file as text (quoted line breaks allowed), or None
    when pyarrow refuses it."""
    po = opts.parse_options(path)
    po.newlines_in_values = True
    ro = opts.read_options()
    ro.block_size = 1 << 24
    try:
        names = pacsv.read_csv(path, read_options=ro, parse_options=po).column_names
        return pacsv.read_csv(path, read_options=ro, parse_options=po,
                              convert_options=opts.convert_options(
                                  None, {c: pa.string() for c in names}))
    except pa.ArrowInvalid:
        return None


def check_pieces(data: bytes, opts: CsvOptions, block: int, name: str = "in.csv",
                 scan: int | None = None) -> None:
    """The pieces of ``data`` read as pyarrow reads the whole file (``scan``: bytes per
    vectorised pass, small to cross quote runs and line ends between passes)."""
    from pmlkit.privatization import _pieces

    old_scan = _pieces._SCAN
    _pieces._SCAN = scan or old_scan
    try:
        _check_pieces(data, opts, block, name)
    finally:
        _pieces._SCAN = old_scan


def _check_pieces(data: bytes, opts: CsvOptions, block: int, name: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        ref = whole(path, opts)
        assume(ref is not None)  # (pyarrow refuses the file: nothing to compare)
        assert ref is not None
        pieces = csv_pieces(path, block, opts)
        assert pieces[0][0] == 0 and pieces[-1][1] == len(data)
        assert all(a < b for a, b in pieces)
        assert all(p[1] == q[0] for p, q in itertools.pairwise(pieces))
        got = [row for pc in pieces
               for b in piece_batches(path, pc, ref.column_names, opts, 1 << 10, [])
               for row in pa.Table.from_batches([b]).to_pylist()]
        assert got == ref.to_pylist()


def test_reproducer_pieces_keep_the_quoted_field_whole() -> None:
    data = reproducer()
    block = data.index(b'"x\n') - 2
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "in.csv").write_bytes(data)
        cuts = [a for a, _ in csv_pieces(Path(d) / "in.csv", block)]
    assert data.index(b"53,a") in cuts and data.index(b"52,c") not in cuts


@settings(max_examples=1, deadline=None)
@given(st.just(reproducer()))
def test_reproducer_pieces_read_as_the_whole_file(data: bytes) -> None:
    check_pieces(data, CsvOptions(), data.index(b'"x\n') - 2)


@settings(max_examples=50, deadline=None)
@given(csv_files(), st.integers(1, 64), st.sampled_from([None, 1, 2, 5, 16]))
def test_pieces_read_as_the_whole_file(case: tuple[bytes, CsvOptions, str], block: int,
                                       scan: int | None) -> None:
    data, opts, _ = case
    check_pieces(data, opts, block, scan=scan)


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet='ab",;\n\r ', max_size=80), st.integers(1, 16),
       st.sampled_from([None, 1, 3]))
def test_pieces_of_arbitrary_bytes(text: str, block: int, scan: int | None) -> None:
    check_pieces(b"h1,h2\n" + text.encode(), CsvOptions(), block, scan=scan)


@settings(max_examples=20, deadline=None)
@given(csv_files("\t"), st.integers(1, 64))
def test_pieces_of_a_tsv_file(case: tuple[bytes, CsvOptions, str], block: int) -> None:
    data, opts, _ = case  # the delimiter of a .tsv file is a tab by default
    check_pieces(data, CsvOptions(skip_rows=opts.skip_rows), block, "in.tsv")


def test_a_tab_separated_file_cuts_at_tabs(tmp_path: Path) -> None:
    # with tabs, a quote after a comma is plain text and one after a tab opens a field
    data = b'a\tb\n' + b'x,"y\tz\n' * 3 + b'1\t"p\nq"\n' + b'w\tv\n' * 5
    path = tmp_path / "in.tsv"
    path.write_bytes(data)
    ref = whole(path, CsvOptions())
    assert ref is not None and ref.num_rows == 9
    cuts = [a for a, _ in csv_pieces(path, 4, CsvOptions())]
    assert data.index(b"w\t") in cuts and data.index(b"q\"") not in cuts


# the Dask engine against the local engine --------------------------------------------

@pytest.fixture(scope="module")
def scheduler():  # type: ignore[no-untyped-def]
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    yield cluster.scheduler_address
    cluster.close()


def records(data: bytes) -> bytes:
    """A CSV output without its header line (the header has no quotes)."""
    return data.split(b"\n", 1)[1] if b"\n" in data else b""


def same_as_local(tmp: Path, data: bytes, opts: CsvOptions, block: int, scheduler: str
                  ) -> None:
    from pmlkit.errors import DataError
    from pmlkit.privatization._dask import privatize_file_dask

    inp = tmp / "in.csv"
    inp.write_bytes(data)
    try:
        local = privatize_file(ABC, inp, tmp / "local.csv", "c", rng=0, csv=opts)
    except DataError:
        local = None
    try:
        rep = privatize_file_dask(ABC, inp, tmp / "dask.csv", "c", rng=0, csv=opts,
                                  scheduler=scheduler, block_bytes=block)
    except DataError:
        return  # refused: fine, nothing invented
    assert local is not None, "the Dask engine released a file the local engine refuses"
    assert rep.rows == local.rows
    parts = sorted((tmp / "dask.csv").glob("part-*.csv"))
    dask_out = b"".join(records(p.read_bytes()) for p in parts)
    assert dask_out == records((tmp / "local.csv").read_bytes())


def test_dask_keeps_a_quoted_field_after_a_stray_quote(tmp_path: Path, scheduler: str
                                                       ) -> None:
    data = reproducer()
    same_as_local(tmp_path, data, CsvOptions(), data.index(b'"x\n') - 2, scheduler)
    assert len(list((tmp_path / "dask.csv").glob("part-*.csv"))) == 2


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(csv_files(stray=True), st.integers(8, 80))
def test_dask_output_is_the_local_output(scheduler: str, case: tuple[bytes, CsvOptions, str],
                                         block: int) -> None:
    data, opts, _ = case
    with tempfile.TemporaryDirectory() as d:
        same_as_local(Path(d), data, opts, block, scheduler)
