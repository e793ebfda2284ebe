"""CSV text as the input laid it out: :class:`CsvLayout` finds a CSV file's byte-order
mark and line terminator, and :class:`CsvTextWriter` writes record batches as CSV,
quoting only the fields that need it, so cells read as text come back byte for byte (the
file release's writer, :mod:`pmlkit.privatization`)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._optional import require

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CsvLayout", "CsvTextWriter"]


@dataclass(frozen=True)
class CsvLayout:
    """How a CSV file's bytes are laid out beyond its cells: a UTF-8 byte-order mark at
    the start, and the line terminator (``"\\n"`` or ``"\\r\\n"``, taken from the end of
    the first line; a line break inside a quoted name is no line end). Writing an output
    with the input's layout keeps every untouched line's bytes."""

    bom: bool = False
    newline: str = "\n"

    @classmethod
    def detect(cls, path: str | os.PathLike[str],
               compression: str | None = "detect", skip_rows: int = 0) -> CsvLayout:
        """The layout of the file ``path`` (``compression``: its codec, as
        :func:`pmlkit.io.compression_of` gives it; ``"detect"``: pyarrow's guess), its
        line terminator that of the header after ``skip_rows`` lines (skipped by line
        breaks, as the parser skips them: a quote in them opens nothing)."""
        pa = require("pyarrow", "reading or writing CSV or Parquet files")

        try:
            with pa.input_stream(os.fspath(path), compression=compression) as fh:
                head = fh.read(1 << 16)
        except Exception:  # unreadable: the reader reports it with the file's name
            return cls()
        bom = head.startswith(b"\xef\xbb\xbf")
        start = 0
        for _ in range(skip_rows):
            brk = re.compile(rb"\r\n|\r|\n").search(head, start)
            if brk is None:
                break
            start = brk.end()
        nl = head.find(b"\n", start)
        while nl > 0 and head.count(b'"', start, nl) % 2:  # (a line break inside quotes)
            nl = head.find(b"\n", nl + 1)
        return cls(bom=bom, newline="\r\n" if nl > 0 and head[nl - 1:nl] == b"\r" else "\n")


class CsvTextWriter:
    """Write record batches as CSV text, quoting a field only where CSV needs it.

    A field is quoted when it holds the delimiter, a double quote, CR or LF (inner quotes
    doubled), or when it is empty in a one-column file (an empty line would be skipped by
    readers) or is an empty string in ``quote_empty`` columns (to tell it from a missing
    value, written as an empty field). Everything else is written exactly as it is, so a
    text cell read without null markers or stripping comes back byte for byte. Non-string
    columns are converted to text with pyarrow's cast. Vectorised with pyarrow compute
    (no Python loop over records).
    """

    def __init__(self, sink: Any, names: Sequence[str], *, delimiter: str = ",",
                 layout: CsvLayout | None = None,
                 quote_empty: Sequence[str] = ()) -> None:
        import re

        self._sink = sink
        self.names = list(names)
        self.delimiter = delimiter
        self.layout = layout or CsvLayout()
        self._pattern = "[" + re.escape(delimiter) + '"\r\n]'
        self._specials = (delimiter.encode("utf-8"), b'"', b"\r", b"\n")
        self._quote_empty = {i for i, n in enumerate(self.names) if n in set(quote_empty)}
        require("pyarrow.csv", "reading or writing CSV or Parquet files")
        # the header by the same rule as the cells (in Python: a few names)
        header = (delimiter.join(self._header_field(n, i) for i, n in enumerate(self.names))
                  + self.layout.newline).encode("utf-8")
        if self.layout.bom:
            sink.write(b"\xef\xbb\xbf")
        sink.write(header)

    def _header_field(self, name: str, i: int) -> str:
        needs = any(ch in name for ch in (self.delimiter, '"', "\r", "\n")) or (
            name == "" and (len(self.names) == 1 or i in self._quote_empty))
        return '"' + name.replace('"', '""') + '"' if needs else name

    def _field(self, arr: Any, i: int) -> Any:
        pa = require("pyarrow", "reading or writing CSV or Parquet files")
        pc = require("pyarrow.compute", "reading or writing CSV or Parquet files")

        # (arr is text already: write() passes every column through _text first)
        needs = pc.match_substring_regex(arr, self._pattern)
        if len(self.names) == 1 or i in self._quote_empty:
            needs = pc.or_kleene(needs, _is_empty(arr))
        needs = pc.and_kleene(needs.is_valid(), needs)  # a null (missing) cell: no quotes
        if pc.any(needs).as_py():
            q = pa.scalar('"', arr.type)
            quoted = pc.binary_join_element_wise(
                q, pc.replace_substring(arr, '"', '""'), q, pa.scalar("", arr.type))
            arr = pc.if_else(needs, quoted, arr)
        return arr.fill_null(pa.scalar("", arr.type))

    def _join(self, fields: list[Any]) -> Any:
        pa = require("pyarrow", "reading or writing CSV or Parquet files")
        pc = require("pyarrow.compute", "reading or writing CSV or Parquet files")

        typ = pa.large_string() if any(pa.types.is_large_string(f.type) for f in fields) \
            else pa.string()
        fields = [f if f.type == typ else f.cast(typ) for f in fields]
        line = fields[0] if len(fields) == 1 else pc.binary_join_element_wise(
            *fields, pa.scalar(self.delimiter, typ))
        line = pc.binary_join_element_wise(line, pa.scalar("", typ),
                                           pa.scalar(self.layout.newline, typ))
        if isinstance(line, pa.ChunkedArray):
            line = line.combine_chunks()
        return value_bytes(line)

    def _text(self, arr: Any) -> Any:
        import pyarrow as pa  # required by the caller already

        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            pc = require("pyarrow.compute", "reading or writing CSV or Parquet files")
            arr = pc.cast(arr, pa.string())
        return arr

    def _plain(self, arr: Any, i: int) -> bool:
        """Whether no field of ``arr`` needs quoting (checked on the raw bytes at once)."""
        import numpy as np
        import pyarrow as pa  # required by the caller already

        bufs = arr.buffers()
        if len(arr) == 0:
            return True
        otype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
        offs = np.frombuffer(bufs[1], dtype=otype)
        if len(self.names) == 1 or i in self._quote_empty:
            if arr.null_count:
                pc = require("pyarrow.compute", "reading or writing CSV or Parquet files")
                if pc.any(_is_empty(arr)).as_py():
                    return False
            elif not np.diff(offs[arr.offset:arr.offset + len(arr) + 1]).all():
                return False  # an empty string (no null here) is quoted
        raw = value_bytes(arr).to_pybytes()
        return not any(ch in raw for ch in self._specials)

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        import pyarrow as pa  # required when the writer was made
        import pyarrow.csv as pacsv

        if batch.num_rows == 0:
            return
        cols = [self._text(c) for c in batch.columns]
        options: dict[str, Any] = {"include_header": False, "delimiter": self.delimiter,
                                   "quoting_style": "none",
                                   "batch_size": max(batch.num_rows, 1)}
        if self.layout.newline != "\n":  # (pyarrow's default line end is "\n")
            options["eol"] = self.layout.newline
        if all(self._plain(c, i) for i, c in enumerate(cols)):
            try:
                write_options = pacsv.WriteOptions(**options)
            except TypeError:  # a pyarrow before 26 has no eol: the general path below
                write_options = None
            if write_options is not None:
                # nothing to quote: pyarrow's writer (C++) writes the same bytes, faster,
                # the batch's text handed to the sink in one write
                plain = pa.RecordBatch.from_arrays(
                    cols, names=[str(i) for i in range(len(cols))])
                pacsv.write_csv(plain, self._sink, write_options=write_options)
                return
        if sum(c.nbytes for c in cols) > (1 << 30):  # 32-bit offsets could overflow: widen
            cols = [c.cast(pa.large_string()) if pa.types.is_string(c.type) else c
                    for c in cols]
        self._sink.write(self._join([self._field(c, i) for i, c in enumerate(cols)]))


def value_bytes(arr: Any) -> Any:
    """The bytes of a ``string``/``large_string`` array's values, one after another: a
    slice of its data buffer (a ``pyarrow.Buffer``, no copy; empty without values)."""
    import numpy as np
    import pyarrow as pa  # required by the caller already

    bufs = arr.buffers()
    if len(arr) == 0 or bufs[2] is None:
        return pa.py_buffer(b"")
    otype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offs = np.frombuffer(bufs[1], dtype=otype)
    start, stop = int(offs[arr.offset]), int(offs[arr.offset + len(arr)])
    return bufs[2].slice(start, stop - start)


def _is_empty(arr: Any) -> Any:
    """Whether each text value is the empty string (null stays null)."""
    pa = require("pyarrow", "reading or writing CSV or Parquet files")
    pc = require("pyarrow.compute", "reading or writing CSV or Parquet files")

    return pc.invert(pc.cast(pc.binary_length(arr), pa.bool_()))
