"""Privatise plain CSV text by splicing bytes: only the privatised cells are rewritten.

A block of CSV records is *plain* when nothing in it can make a parser read a cell other
than as the bytes between two separators:

* no double quote anywhere (so no quoted cell, no escaped separator or line break);
* every line ends with the file's line terminator (``"\\n"``, or ``"\\r\\n"`` with no other
  carriage return), so a record is exactly one line and no line is empty;
* every line has exactly ``columns - 1`` separators (a single-byte one);
* the bytes are valid UTF-8 (a CSV reader would refuse invalid text).

In such a block a cell read as text *is* its bytes, and the CSV writer would write every
untouched cell back as exactly those bytes (it quotes only cells holding a separator, a
quote or a line break, and those cannot occur). So the output block is the input block
with each privatised cell's bytes replaced by the CSV text of its released label, and
every other byte copied. The released labels are drawn by the same code, from the same
random stream and in the same order as for a parsed block, so the output is byte for byte
the one the parsing path writes.

Finding the cells is vectorised with numpy over the raw bytes (the positions of line
breaks and separators), and the splice is one Arrow ``take`` over a binary array whose
elements alternate between kept byte ranges and replaced cells. Blocks that are not plain
go through the CSV parser; the caller cuts blocks at record boundaries (a line break after
an even number of quotes) so both paths see whole records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["PlainBlock", "Splicer", "record_cut"]

_BOM = b"\xef\xbb\xbf"


def record_cut(chunk: bytes) -> int:
    """The end of the last whole record of ``chunk`` (0 if there is none): just after the
    last line break preceded by an even number of double quotes (counted from the
    chunk's start, which must be a record boundary)."""
    if b'"' not in chunk:
        return chunk.rfind(b"\n") + 1
    arr = np.frombuffer(chunk, dtype=np.uint8)
    # uint8 sums wrap modulo 256, which keeps the parity
    parity = np.cumsum(arr == 34, dtype=np.uint8) & 1
    ends = np.flatnonzero((arr == 10) & (parity == 0))
    return int(ends[-1]) + 1 if ends.size else 0


@dataclass
class PlainBlock:
    """A plain block: its bytes, line starts/ends (before the terminator) and the
    separator positions, one row per line."""

    data: bytes
    starts: NDArray[np.int64]
    ends: NDArray[np.int64]
    seps: NDArray[np.int64]

    @property
    def rows(self) -> int:
        return int(self.starts.size)

    def cell(self, j: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Byte range ``[start, end)`` of column ``j`` in every line."""
        k = self.seps.shape[1]
        a = self.starts if j == 0 else self.seps[:, j - 1] + 1
        b = self.ends if j == k else self.seps[:, j]
        return a, b


class Splicer:
    """Parse plain blocks of a CSV file and splice released cells into them.

    Parameters
    ----------
    names
        The input's column names (the output has the same columns, plus appended ones).
    sources
        Per edit, the input column whose cells are privatised.
    targets
        Per edit, the output column: an input column (replaced in place) or a new one
        (appended at the end of each line, in the order given).
    delimiter, newline
        The separator (input and output) and the line terminator.
    """

    def __init__(self, names: Sequence[str], sources: Sequence[str], targets: Sequence[str],
                 delimiter: str, newline: str) -> None:
        self.names = list(names)
        self.ncols = len(self.names)
        self.delim = delimiter.encode("utf-8")
        self.crlf = newline == "\r\n"
        self.source_cols = [self.names.index(c) for c in sources]
        appended = [t for t in targets if t not in self.names]
        # edits in the order their cells appear on a line: in place by column, then
        # the appended columns in order
        keyed = [(self.names.index(t) if t in self.names else self.ncols + appended.index(t),
                  e) for e, t in enumerate(targets)]
        self.order = [e for _, e in sorted(keyed)]
        self.in_place = [t in self.names for t in targets]
        self.target_cols = [self.names.index(t) if t in self.names else -1 for t in targets]

    @property
    def usable(self) -> bool:
        """Whether this layout can be spliced at all (at least two columns, a one-byte
        separator)."""
        return self.ncols >= 2 and len(self.delim) == 1

    def parse(self, data: bytes) -> PlainBlock | None:
        """``data`` (whole lines, each ending with the terminator) as a plain block, or
        ``None`` when it is not plain (see the module docstring)."""
        if not data or b'"' in data or not data.endswith(b"\n") or len(data) >= 2**31 - 1:
            return None
        if not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                return None
        arr = np.frombuffer(data, dtype=np.uint8)
        nl = np.flatnonzero(arr == 10)
        if self.crlf:
            if data.count(b"\r") != nl.size or not (arr[nl - 1] == 13).all():
                return None
            ends = nl - 1
        else:
            if b"\r" in data:
                return None
            ends = nl
        starts = np.empty_like(nl)
        starts[0] = 0
        starts[1:] = nl[:-1] + 1
        k = self.ncols - 1
        flat = np.flatnonzero(arr == self.delim[0])
        if flat.size != nl.size * k:
            return None
        seps = flat.reshape(nl.size, k)
        # separators are sorted: when each line's first one is in it and its last one
        # before its end, every line holds exactly k of them
        if not ((seps[:, 0] >= starts).all() and (seps[:, -1] < ends).all()):
            return None
        return PlainBlock(data, starts.astype(np.int64), ends.astype(np.int64),
                          seps.astype(np.int64))

    def cells(self, block: PlainBlock, e: int) -> Any:
        """The text of edit ``e``'s source cells as a pyarrow string array."""
        import pyarrow as pa

        a, b = block.cell(self.source_cols[e])
        offs = np.empty(2 * block.rows + 2, dtype=np.int32)
        offs[0] = 0
        offs[1:-1:2] = a
        offs[2:-1:2] = b
        offs[-1] = len(block.data)
        parts = pa.Array.from_buffers(pa.string(), offs.size - 1,
                                      [None, pa.py_buffer(offs), pa.py_buffer(block.data)])
        return parts.take(pa.array(np.arange(1, offs.size - 1, 2, dtype=np.int64)))

    def splice(self, block: PlainBlock, picks: Sequence[NDArray[np.intp]],
               tables: Sequence[Sequence[bytes]]) -> Any:
        """The output bytes of ``block`` (a pyarrow Buffer): edit ``e``'s cell of row ``r``
        becomes ``tables[e][picks[e][r]]`` (the CSV text of the released label; appended
        columns' entries start with the separator)."""
        import pyarrow as pa

        n, order = block.rows, self.order
        entries = [bytes(x) for e in order for x in tables[e]]
        base = np.cumsum([0] + [len(tables[e]) for e in order])
        table_bytes = b"".join(entries)
        t_offs = np.zeros(len(entries) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in entries], out=t_offs[1:])
        edits = len(order)
        bounds = np.empty((n, edits, 2), dtype=np.int64)
        take = np.empty((n, edits), dtype=np.int64)
        for slot, e in enumerate(order):
            if self.in_place[e]:
                a, b = block.cell(self.target_cols[e])
            else:
                a = b = block.ends
            bounds[:, slot, 0] = a
            bounds[:, slot, 1] = b
            take[:, slot] = picks[e] + base[slot]
        m = len(entries)
        offs = np.empty(m + 2 * n * edits + 2, dtype=np.int64)
        offs[:m + 1] = t_offs
        offs[m + 1:-1] = bounds.reshape(-1) + len(table_bytes)
        offs[-1] = len(table_bytes) + len(block.data)
        offs_type: type[np.signedinteger[Any]] = np.int32
        typ = pa.binary()
        if offs[-1] >= 2**31:
            offs_type, typ = np.int64, pa.large_binary()
        arr = pa.Array.from_buffers(typ, offs.size - 1, [
            None, pa.py_buffer(offs.astype(offs_type)),
            pa.py_buffer(table_bytes + block.data)])
        idx = np.arange(m, m + 2 * n * edits + 1, dtype=np.int64)
        idx[1::2] = take.reshape(-1)
        out = arr.take(pa.array(idx))
        out_offs = np.frombuffer(out.buffers()[1], dtype=offs_type)
        return out.buffers()[2].slice(0, int(out_offs[len(out)]))


def data_start(head: bytes, names: Sequence[str], delimiter: str, has_header: bool,
               newline: str) -> int | None:
    """Where the records start in a file beginning with ``head``: after a byte-order mark
    and the header line, which must be plain and name exactly ``names`` (``None``
    otherwise: the caller parses the whole file)."""
    pos = len(_BOM) if head.startswith(_BOM) else 0
    if not has_header:
        return pos
    nl = head.find(b"\n", pos)
    if nl < 0:
        return None
    line = head[pos:nl]
    if newline == "\r\n":
        if not line.endswith(b"\r"):
            return None
        line = line[:-1]
    if b'"' in line or b"\r" in line:
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.split(delimiter) != list(names):
        return None
    return nl + 1
