"""Pieces of one input file, for releasing a file in parts (the Dask engine).

A piece is a row-group range ``[a, b)`` of a Parquet file or a byte range ``[a, b)`` of
an uncompressed CSV file that starts and ends on record boundaries. Each piece is read
and privatised on its own (:func:`pmlkit.privatization._engine.one_file` with
``piece=``); the pieces of a file together hold every record once, in order.
"""

from __future__ import annotations

import itertools
import mmap
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._csv_bytes import WholeCrlf
from ..errors import DataError
from ..io import CsvOptions, file_format

__all__ = ["csv_pieces", "parquet_pieces", "piece_batches"]


def piece_batches(inp: Path, piece: tuple[int, int], names: list[str],
                  read_csv: CsvOptions | None, batch_rows: int, in_place: list[str]
                  ) -> Iterator[Any]:
    """Record batches of one piece: Parquet row groups ``[a, b)`` or CSV bytes ``[a, b)``
    (a piece after the first starts at a record boundary and has no header)."""
    import pyarrow as pa

    a, b = piece
    try:
        if file_format(inp) == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetFile(inp, read_dictionary=in_place) as pf:
                yield from pf.iter_batches(batch_size=batch_rows, row_groups=range(a, b))
            return
        import pyarrow.csv as pacsv

        opts = read_csv or CsvOptions()
        with open(inp, "rb") as fh:
            fh.seek(a)
            data = fh.read(b - a)
        ropts = opts.read_options(batch_rows)
        if a > 0:
            ropts.column_names = list(names)
            ropts.skip_rows = 0
        conv = opts.convert_options(None, {n: pa.string() for n in names})
        # (never a block ending with CR: pyarrow would drop a quoted CRLF's LF after it)
        with pacsv.open_csv(WholeCrlf(pa.BufferReader(data)), read_options=ropts,
                            parse_options=opts.parse_options(inp),
                            convert_options=conv) as reader:
            yield from reader
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"cannot read {str(inp)!r}: {exc}") from exc


def parquet_pieces(path: Path, rows: int) -> list[tuple[int, int]]:
    """Row-group ranges of a Parquet file, each of about ``rows`` rows (at least one row
    group; an empty file is one empty piece)."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(path).metadata
    n = md.num_row_groups
    if n == 0:
        return [(0, 0)]
    out, start, acc = [], 0, 0
    for i in range(n):
        acc += md.row_group(i).num_rows
        if acc >= rows:
            out.append((start, i + 1))
            start, acc = i + 1, 0
    if start < n:
        out.append((start, n))
    return out


def csv_pieces(path: Path, block_bytes: int, csv: CsvOptions | None = None
               ) -> list[tuple[int, int]]:
    """Split an uncompressed CSV file into byte ranges of about ``block_bytes`` that start
    and end on record boundaries, as pyarrow's CSV reader (with ``csv``'s options) sees
    them: each cut is just after a ``\\n`` that ends a record.

    pyarrow's rules (no escape character, doubled quotes): a quote opens a quoted field
    only at the start of a field (after a delimiter, a line end, the start of the data);
    in a quoted field a doubled quote is a quote and a single one closes the field; any
    other quote (``ab"cd``, ``"a"b"c`` after the field closed) is plain text. A line end
    inside a quoted field is text, elsewhere it ends the record. Counting the parity of
    all quotes is wrong as soon as one quote is plain text.

    So the state that matters is ``q``: inside a quoted field or not, and it changes only
    at a run of consecutive quotes (a quote run is maximal, so the byte before it is not a
    quote). A run of odd length ``k`` at a field start maps ``q`` to ``1 - q`` (outside:
    one quote opens, the other ``k - 1`` pair up; inside: pairs, then one closes); an odd
    run elsewhere maps any ``q`` to 0 (inside: it closes the field; outside: plain text);
    an even run leaves ``q`` as it is (inside: pairs; outside at a field start: ``""``,
    an empty field; outside elsewhere: text). Where ``q`` is 1 the field-start test does
    not matter (both maps give 0 for odd runs), and where ``q`` is 0 a delimiter or line
    end before the run is a real one, so the test "the byte before the run is a
    delimiter, ``\\r`` or ``\\n``" is exact. ``q`` after a run is then the parity of the
    flips since the last reset: a cumulative sum, no loop over records. The data starts
    after a UTF-8 BOM and the ``skip_rows`` lines pyarrow skips without parsing them.
    """
    size = path.stat().st_size
    if size <= block_bytes:
        return [(0, size)]
    opts = csv or CsvOptions()
    po = opts.parse_options(path)
    if po.escape_char is not False or not po.double_quote:  # not these rules: no cuts
        return [(0, size)]
    quote = None if po.quote_char is False else ord(po.quote_char)
    seps = np.array([ord(po.delimiter), 10, 13], dtype=np.uint8)
    bounds = [0]
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = _data_start(mm, size, opts.skip_rows)
        q = 0  # inside a quoted field at pos
        field_start = True  # pos starts a field
        target = max(block_bytes, pos)
        while pos < size and target < size:
            end = min(pos + _SCAN, size)
            if quote is not None:  # never end a chunk inside a run of quotes
                while end < size and mm[end - 1] == quote:
                    end += 1
            if quote is not None and mm.find(bytes([quote]), pos, end) >= 0:
                arr = np.frombuffer(mm[pos:end], dtype=np.uint8)
                starts, after = _run_states(arr, quote, seps, q, field_start)
                q_end = int(after[-1]) if after.size else q
                has_quote = True
            else:
                q_end, has_quote = q, False
            while target < end:
                if not has_quote:
                    nl = mm.find(b"\n", max(target, pos), end) if q == 0 else -1
                else:
                    nl = _first_boundary(arr, pos, max(target, pos), starts, after, q)
                if nl < 0:
                    break
                found = nl + 1
                if found >= size:
                    target = size
                    break
                bounds.append(found)
                target = found + block_bytes
            field_start = mm[end - 1] in seps.tobytes()
            pos, q = end, q_end
    bounds.append(size)
    return list(itertools.pairwise(bounds))


_SCAN = 1 << 24  # bytes per vectorised pass
_LINE_END = re.compile(rb"\r\n|\r|\n")


def _data_start(mm: Any, size: int, skip_rows: int) -> int:
    """Where pyarrow starts parsing: after a UTF-8 BOM and ``skip_rows`` lines (skipped as
    raw lines, a quote in them does not count)."""
    pos = 3 if mm[:3] == b"\xef\xbb\xbf" else 0
    for _ in range(skip_rows):
        m = _LINE_END.search(mm, pos)
        if m is None:
            return size
        pos = m.end()
    return pos


def _run_states(arr: np.ndarray, quote: int, seps: np.ndarray, q: int, field_start: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """The start of each run of quotes in ``arr`` and the quoted-field state just after
    it (see :func:`csv_pieces`), given the state ``q`` before ``arr`` and whether
    ``arr`` starts a field."""
    idx = np.flatnonzero(arr == quote)
    if not idx.size:
        return idx, idx
    brk = np.flatnonzero(np.diff(idx) != 1)
    starts = idx[np.concatenate(([0], brk + 1))]
    ends = idx[np.concatenate((brk, [idx.size - 1]))] + 1
    odd = ((ends - starts) & 1).astype(bool)
    before = np.isin(arr[np.maximum(starts - 1, 0)], seps)
    if starts[0] == 0:
        before[0] = field_start
    flip = np.cumsum(odd & before)
    reset = np.maximum.accumulate(np.where(odd & ~before, np.arange(starts.size), -1))
    after = np.where(reset >= 0, flip - flip[np.maximum(reset, 0)], flip + q) & 1
    return starts, after


def _first_boundary(arr: np.ndarray, pos: int, lo: int, starts: np.ndarray,
                    after: np.ndarray, q: int) -> int:
    """The first ``\\n`` at or after file offset ``lo`` in ``arr`` (which starts at file
    offset ``pos``) that is outside a quoted field, or -1."""
    a = lo - pos
    while a < arr.size:
        b = min(a + (1 << 20), arr.size)
        nl = np.flatnonzero(arr[a:b] == 10) + a
        if nl.size:
            run = np.searchsorted(starts, nl) - 1  # the last run before each \n
            state = np.where(run >= 0, after[np.maximum(run, 0)], q)
            ok = np.flatnonzero(state == 0)
            if ok.size:
                return pos + int(nl[ok[0]])
        a = b
    return -1
