"""The bytes of a CSV file as pyarrow's reader should see them.

* :func:`compression_of` and :func:`csv_bytes`: a file's codec by its extension in any
  case (``.GZ`` as ``.gz``: pmlkit writes such outputs compressed; pyarrow's own detection
  knows lower-case extensions only), and its decompressed bytes.
* :class:`WholeCrlf` and :func:`splits_crlf`: pyarrow's CSV reader drops the LF that
  starts a read block after one ending with CR (it joins a CRLF line end split between
  them), also inside a quoted cell; blocks that never end with CR, and a check of where a
  file's blocks fall, keep such cells whole.
* :func:`check_closed_quote`: a quote that never closes would make the rest of the file
  one cell; such a file is refused.

pyarrow is imported inside the functions.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._optional import require
from .errors import DataError

__all__ = ["WholeCrlf", "check_closed_quote", "compression_of", "csv_bytes",
           "short_message", "splits_crlf"]

#: pyarrow codec names of the compressed-CSV extensions
CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4"}


def short_message(exc: BaseException) -> str:
    """An exception's message on one line, at most 300 characters."""
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def csv_bytes(path: str | os.PathLike[str]) -> Any:
    """A CSV file's bytes as a pyarrow input stream, decompressed by its extension in
    any case (:func:`compression_of`: ``.GZ`` as ``.gz``, as outputs are compressed;
    pyarrow's own detection knows lower-case extensions only)."""
    pa = require("pyarrow", "reading or writing CSV or Parquet files")

    return pa.input_stream(os.fspath(path), compression=compression_of(path))


def compression_of(path: str | os.PathLike[str]) -> str | None:
    """The pyarrow codec implied by a CSV file's extension (``.gz`` -> ``"gzip"``), or None."""
    name = Path(path).name.lower()
    for ext, codec in CODECS.items():
        if name.endswith(ext):
            return codec
    return None


class WholeCrlf:
    """A byte stream handing out blocks that never end with a carriage return (but the
    last): one ending with CR keeps it back for the next block.

    pyarrow's CSV reader drops the LF that starts a block read after one ending with CR
    (it joins a CRLF line end split between them), also when the pair is inside a quoted
    cell: ``"p\\r\\nq"`` came out as ``"p\\rq"``. With no block ending in CR, no such
    LF is dropped."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._held = b""
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            data: bytes = self._held + self._raw.read()
            self._held = b""
            return data
        data = self._held + self._raw.read(max(n - len(self._held), 1))
        self._held = b""
        if data == b"\r":  # a short read of a CR alone: the bytes after it go with it
            data += self._raw.read(max(n - 1, 1))
        if len(data) > 1 and data.endswith(b"\r"):
            data, self._held = data[:-1], b"\r"
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self._raw.close()


def splits_crlf(path: Path, block_size: int) -> bool:
    """Whether a CR ends one of the file's blocks of ``block_size`` bytes and an LF starts
    the next, in a file holding a quote (read through the dataset scanner, in such blocks,
    the LF would be lost if the pair is inside a quoted cell, :class:`WholeCrlf`): two
    bytes read at each block boundary, then (only then) the file searched for a quote.
    Without a quote no cell holds a line break, and the pair is a line end, which the
    scanner joins."""
    import mmap

    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            for end in range(block_size, size, block_size):
                fh.seek(end - 1)
                if fh.read(2) == b"\r\n":
                    break
            else:
                return False
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return mm.find(b'"') >= 0
    except (OSError, ValueError):  # read (and reported) by the streaming reader
        return True


def check_closed_quote(path: str | os.PathLike[str], last: Any) -> None:
    """Refuse a CSV file that ends inside a quoted field: ``last`` is the text of the
    file's last cell as parsed (the last column of the last record).

    The parser takes a quote that never closes for a field running to the end of the
    file, so every record after it would be read as that one cell. Such a cell holds
    a line break and the file ends with its text, quotes doubled, after the opening
    quote (and not with a closing quote after it, possibly followed by line breaks).
    The file's tail is read only when ``last`` holds a line break.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "ok.csv").write_bytes(b's,x\\na,"q\\nb,2"\\n')
    >>> check_closed_quote(folder / "ok.csv", "q\\nb,2")
    >>> _ = (folder / "open.csv").write_bytes(b's,x\\na,"q\\nb,2\\n')
    >>> check_closed_quote(folder / "open.csv", "q\\nb,2\\n")
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: cannot read ... as CSV: a quote opened in its last record is ...
    """
    if not isinstance(last, str) or ("\n" not in last and "\r" not in last):
        return
    opened = ('"' + last.replace('"', '""')).encode("utf-8")
    need = 2 * len(opened) + 2
    pa = require("pyarrow", "reading or writing CSV or Parquet files")
    try:
        with csv_bytes(path) as fh:
            if fh.seekable():
                fh.seek(max(0, fh.size() - need))
                tail = fh.read()
            else:  # (a compressed file: read through, keeping its end)
                tail = b""
                while chunk := fh.read(1 << 20):
                    tail = (tail + chunk)[-need:]
    except (OSError, pa.ArrowException) as exc:
        raise DataError(f"cannot read {str(path)!r} as CSV: {short_message(exc)}") from exc
    if not tail.endswith(opened):
        return
    end = len(tail)
    while True:  # a closing quote, then any line breaks: the field was closed
        if tail[:end].endswith(opened + b'"'):
            return
        if end == 0 or tail[end - 1:end] not in (b"\r", b"\n"):
            break
        end -= 1
    raise DataError(f"cannot read {str(path)!r} as CSV: a quote opened in its last record "
                    "is never closed, so the rest of the file would be read as one cell; "
                    "close the quote (or double a quote meant as text)")
