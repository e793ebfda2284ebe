"""Attacks on CSV file releases: every record of the input comes out, once, in order, and
every untouched cell byte for byte (Python's ``csv`` module is the oracle)."""

from __future__ import annotations

import csv
import io
import itertools
from pathlib import Path

import numpy as np
import pytest

import pmlkit
from pmlkit.errors import DataError
from pmlkit.io import CsvOptions


def _swap() -> pmlkit.Mechanism:
    return pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("a", "b"), ("a", "b"))


def _release(tmp_path: Path, data: bytes, column: str, **kw: object) -> bytes:
    (tmp_path / "in.csv").write_bytes(data)
    pmlkit.privatize_file(_swap(), tmp_path / "in.csv", tmp_path / "out.csv", column,
                          missing="keep", **kw)  # type: ignore[arg-type]
    return (tmp_path / "out.csv").read_bytes()


def _records(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def test_one_column_with_bom_and_quoted_header_keeps_its_empty_cells(tmp_path: Path) -> None:
    # one column whose quoted name holds the delimiter, after a byte-order mark: an empty
    # line is that column's missing value, a record, never a line to skip
    data = b'\xef\xbb\xbf"s,t"\na\n\nb\n'
    out = _release(tmp_path, data, "s,t")
    assert _records(out) == [["s,t"], ["b"], [], ["a"]]
    assert out == b'\xef\xbb\xbf"s,t"\nb\n\na\n'


def test_header_with_a_quoted_line_break_adds_no_record(tmp_path: Path) -> None:
    # two columns, the first named across a quoted line break: the blank line is skipped
    # as in any file of several columns, never read as a record of empty cells
    data = b'"s\nq",x\na,1\n\nb,2\n'
    out = _release(tmp_path, data, "s\nq")
    assert _records(out) == [["s\nq", "x"], ["b", "1"], ["a", "2"]]


def test_skipped_lines_are_counted_by_csv_line_breaks_only(tmp_path: Path) -> None:
    # a form feed in a skipped line is no line break (str.splitlines takes it for one):
    # the one-column file's empty line is its missing value, a record kept
    data = b"title\x0cx,y\ns\na\n\nb\n"
    out = _release(tmp_path, data, "s", csv=CsvOptions(skip_rows=1))
    assert out == b"s\nb\n\na\n"


def test_blank_line_before_a_one_column_header_loses_no_record(tmp_path: Path) -> None:
    # a blank first line makes "a file of one column" a guess: the line is read as the
    # header it is (one column named ""), so the column "s" is refused, never released
    # with its empty (missing) records skipped
    with pytest.raises(DataError, match="column 's' not found"):
        _release(tmp_path, b"\ns\na\n\nb\n", "s")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_a_quote_left_open_at_the_end_of_the_file_is_refused(tmp_path: Path) -> None:
    # the quote opened in the last column never closes: the parser reads the rest of the
    # file, the record "b,2" included, as one cell; refused, never released as one row
    data = b's,x\na,"q\nb,2\n'
    with pytest.raises(DataError, match="quote"):
        _release(tmp_path, data, "s")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def _crlf_at_block_end(block: int, rows: int) -> bytes:
    """A CRLF file whose quoted cell "p\\r\\nq" has its CR as the last byte of the first
    read block (``block`` bytes), followed by ``rows`` short records."""
    head, opened = b"s,x\r\n", b'a,"p'
    pad = b"b," + b"z" * (block - 1 - len(head) - len(opened) - 4) + b"\r\n"
    data = head + pad + opened + b'\r\nq"\r\n' + b"a,1\r\n" * rows
    assert data.index(b'p\r\nq') + 1 == block - 1
    return data


@pytest.mark.parametrize("rows", [10, 30000])  # read as one stream / read ahead
def test_a_quoted_crlf_across_a_read_block_keeps_its_line_feed(tmp_path: Path,
                                                               rows: int) -> None:
    # batch_rows=1 reads in 64 KiB blocks: the cell's CR ends the first one, its LF starts
    # the next (pyarrow drops such a LF, taking the pair for a line end split in two)
    data = _crlf_at_block_end(1 << 16, rows)
    out = _release(tmp_path, data, "s", batch_rows=1)
    got = _records(out)
    assert len(got) == len(_records(data)) and got[2] == ["b", "p\r\nq"]
    assert [r[1] for r in got] == [r[1] for r in _records(data)]


def test_an_upper_case_compressed_extension_is_read_as_it_is_written(
        tmp_path: Path) -> None:
    # pmlkit compresses an output named ".CSV.GZ" (extensions in any case); such a file
    # is read back decompressed, never parsed as its compressed bytes
    import gzip

    data = b's,x\na,"1,2"\nb,3\n'
    (tmp_path / "in.CSV.GZ").write_bytes(gzip.compress(data))
    pmlkit.privatize_file(_swap(), tmp_path / "in.CSV.GZ", tmp_path / "out.CSV.GZ", "s")
    out = gzip.decompress((tmp_path / "out.CSV.GZ").read_bytes())
    assert out == b's,x\nb,"1,2"\na,3\n'
    record = pmlkit.privatization.files.previous_privatization(tmp_path / "out.CSV.GZ")
    assert record is not None and record["rows"] == 2


def test_a_line_break_inside_a_quoted_name_is_not_the_line_terminator(
        tmp_path: Path) -> None:
    # a CRLF file whose first name holds a quoted LF: its lines still end with CRLF
    data = b'"s\nq",x\r\n1,a\r\n2,b\r\n'
    out = _release(tmp_path, data, "x")
    assert out == b'"s\nq",x\r\n1,b\r\n2,a\r\n'


def test_a_whole_file_read_keeps_a_quoted_crlf_across_a_read_block(tmp_path: Path) -> None:
    # read_table (references, released files read back) reads 1 MiB blocks
    (tmp_path / "ref.csv").write_bytes(_crlf_at_block_end(1 << 20, 3))
    x = pmlkit.io.read_column(tmp_path / "ref.csv", "x").to_pylist()
    assert x[1] == "p\r\nq" and len(x) == 5


def test_a_piece_of_a_csv_keeps_a_quoted_crlf_across_a_read_block(tmp_path: Path) -> None:
    # the Dask engine reads a CSV piece from memory in blocks of 64 * batch_rows bytes
    from pmlkit.privatization._pieces import piece_batches

    data = _crlf_at_block_end(1 << 16, 3)
    (tmp_path / "in.csv").write_bytes(data)
    batches = piece_batches(tmp_path / "in.csv", (0, len(data)), ["s", "x"],
                            CsvOptions(null_values=()), 1, [])
    x = [v for b in batches for v in b.column(1).to_pylist()]
    assert x[1] == "p\r\nq" and len(x) == 5


def test_the_quote_check_reports_a_vanished_file_as_a_data_error(tmp_path: Path) -> None:
    from pmlkit._csv_bytes import check_closed_quote

    with pytest.raises(DataError, match="cannot read"):
        check_closed_quote(tmp_path / "gone.csv", "q\nb")


def test_a_dask_piece_ending_the_file_refuses_a_quote_left_open(tmp_path: Path) -> None:
    # the Dask engine privatises a file as byte-range pieces (one here): the piece that
    # ends the file is checked as a whole file is
    import json

    from pmlkit.privatization._dask import _dask_piece
    from pmlkit.rng import resolve_rng

    data = b's,x\na,"q\nb,2\n'
    (tmp_path / "in.csv").write_bytes(data)
    with pytest.raises(DataError, match="quote"):
        _dask_piece({"s": _swap()}, str(tmp_path / "in.csv"), (0, len(data)),
                    str(tmp_path / "part-0.csv"), ["s"], ["s"], resolve_rng(1), None,
                    {"s": "error"}, {"s": None}, {"pmlkit": json.dumps({"privatized": {}})},
                    None, 1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_a_crlf_file_without_quotes_keeps_its_read_ahead_and_its_records(
        tmp_path: Path) -> None:
    # a CRLF pair split by a block boundary is a line end when the file holds no quote:
    # such a file keeps the read-ahead scanner (every large CRLF file has such a pair),
    # and every record comes out; one quote anywhere sends the file to the one stream
    from pmlkit._csv_bytes import splits_crlf

    block = 1 << 16
    head = b"s,x\r\n"
    pad = b"b," + b"z" * (block + 1 - len(head) - 4) + b"\r\n"  # CR at block - 1
    data = head + pad + b"a,1\r\n" * 30000
    assert data[block - 1:block + 1] == b"\r\n"
    (tmp_path / "in.csv").write_bytes(data)
    assert not splits_crlf(tmp_path / "in.csv", block)
    out = _release(tmp_path, data, "s", batch_rows=1)
    assert [r[1] for r in _records(out)] == [r[1] for r in _records(data)]
    assert out.count(b"\r\n") == data.count(b"\r\n")
    (tmp_path / "q.csv").write_bytes(data + b'a,"q"\r\n')
    assert splits_crlf(tmp_path / "q.csv", block)


@pytest.mark.parametrize("data", [b"a\r\nb", b'"p\r\nq"\r\n', b"\r\n\r\r\n\n\r", b"x\r"])
def test_whole_crlf_never_splits_a_crlf_pair_even_on_one_byte_reads(data: bytes) -> None:
    # a stream giving one byte a read handed out a block b"\r" alone, and pyarrow then
    # drops the LF that starts the next block
    from pmlkit._csv_bytes import WholeCrlf

    class Trickle:
        def __init__(self, b: bytes) -> None:
            self.b = b

        def read(self, n: int = -1) -> bytes:
            out, self.b = self.b[:1], self.b[1:]
            return out

        def close(self) -> None:
            pass

    stream = WholeCrlf(Trickle(data))
    blocks = []
    while block := stream.read(4):
        blocks.append(block)
    assert b"".join(blocks) == data
    assert not any(a.endswith(b"\r") and b.startswith(b"\n")
                   for a, b in itertools.pairwise(blocks))
