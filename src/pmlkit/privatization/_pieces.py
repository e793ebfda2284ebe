"""Pieces of one input file, for releasing a file in parts (the Dask engine).

A piece is a row-group range ``[a, b)`` of a Parquet file or a byte range ``[a, b)`` of
an uncompressed CSV file that starts and ends on record boundaries. Each piece is read
and privatised on its own (:func:`pmlkit.privatization._engine.one_file` with
``piece=``); the pieces of a file together hold every record once, in order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

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
        with pacsv.open_csv(pa.BufferReader(data), read_options=ropts,
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


def csv_pieces(path: Path, block_bytes: int) -> list[tuple[int, int]]:
    """Split an uncompressed CSV file into byte ranges of about ``block_bytes`` that start
    and end on record boundaries: a line break counts only where the number of double
    quotes before it is even (a line break inside a quoted field is not a boundary)."""
    size = path.stat().st_size
    if size <= block_bytes:
        return [(0, size)]
    bounds = [0]
    parity = 0
    pos = 0
    with open(path, "rb") as fh:
        target = block_bytes
        while target < size:
            # quotes between the last position and the target fix the parity there
            fh.seek(pos)
            while pos < target:
                chunk = fh.read(min(1 << 24, target - pos))
                if not chunk:
                    break
                parity ^= chunk.count(b'"') & 1
                pos += len(chunk)
            found = None
            while found is None:
                win = fh.read(1 << 20)
                if not win:
                    break
                arr = np.frombuffer(win, dtype=np.uint8)
                q = (np.cumsum(arr == 34) + parity) & 1
                nl = np.flatnonzero((arr == 10) & (q == 0))
                if nl.size:
                    found = pos + int(nl[0]) + 1
                else:
                    parity = int(q[-1])
                    pos += len(win)
            if found is None or found >= size:
                break
            # restart counting just after the boundary (parity there is even)
            bounds.append(found)
            pos, parity = found, 0
            target = found + block_bytes
    bounds.append(size)
    return list(itertools.pairwise(bounds))
