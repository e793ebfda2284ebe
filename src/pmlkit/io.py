"""Reading and writing columns of CSV and Parquet files with pyarrow.

The format is chosen by the file's extension: ``.parquet``/``.pq`` for Parquet, ``.csv``
(optionally compressed: ``.csv.gz``, ``.csv.bz2``, ...) or ``.data``/``.test``/``.txt``
(the UCI Adult files) for CSV. Every failure (missing file, missing column, unreadable
or malformed content) raises :class:`pmlkit.errors.DataError` naming the file and, for a
missing column, listing the available ones.

Streaming: :func:`iter_batches` yields record batches of bounded size (Parquet
``iter_batches``, ``pyarrow.csv.open_csv``), so files larger than memory can be processed.
:class:`AtomicWriter` writes to a temporary file in the target folder and renames it over
the target only when everything was written (an interrupted run leaves nothing behind).

Headerless CSV files (such as UCI Adult) are read with :class:`CsvOptions`
(``column_names=[...]``, ``strip_whitespace=True`` for the space after each comma,
``null_values=["?"]``). ``null_values=()`` reads every cell as text (no null at all).

Exact round trips (used by :func:`pmlkit.privatization.privatize_file`):
:func:`unique_columns` refuses files with duplicate column names, and the CSV text writer
(:mod:`pmlkit._csv_text`) keeps a file's layout and quotes only the fields that need it,
so cells read as text come back byte for byte.
Compressed CSV (``.gz``, ``.bz2``, ``.zst``) is read and written by extension; ``.tsv``
files are tab-separated unless a delimiter is given.

pyarrow is imported inside the functions (``import pmlkit`` stays light).
"""

from __future__ import annotations

import glob as _glob
import os
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._csv_bytes import (
    WholeCrlf,
    csv_bytes,
    short_message,
    splits_crlf,
)
from ._csv_text import value_bytes
from ._optional import MissingDependencyError, require
from ._validation import user_path
from .errors import DataError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "AtomicWriter",
    "CsvOptions",
    "expand_inputs",
    "file_format",
    "iter_batches",
    "list_columns",
    "read_column",
    "read_label_table",
    "read_labels",
    "read_table",
    "unique_columns",
]

_PARQUET = (".parquet", ".pq")
_CSV = (".csv", ".tsv", ".data", ".test", ".txt")
_COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")

#: Default number of rows per streamed batch.
DEFAULT_BATCH_ROWS = 1 << 20


@dataclass(frozen=True)
class CsvOptions:
    """How to parse (and write) CSV files.

    Attributes
    ----------
    column_names
        Names for a headerless file (the first line is then data); ``None``: the first
        line is the header.
    skip_rows
        Lines to skip before the header/data (``adult.test`` starts with one junk line).
    delimiter
        Field separator; ``None``: a tab for ``.tsv`` files, a comma otherwise.
    strip_whitespace
        Strip leading/trailing whitespace from string fields (UCI files put a space after
        each comma, like pandas' ``skipinitialspace``); ``null_values`` are then matched on
        the stripped text too.
    null_values
        Texts read as missing *in addition to* the empty cell (e.g. ``("?",)`` for
        Adult); ``None``: only the empty cell; ``()``: nothing is missing, every cell is
        text (an empty cell is the text ``""``). Nothing else is missing: ``NA``,
        ``null`` or ``nan`` are texts unless listed (:attr:`missing_texts`).

    Examples
    --------
    A headerless file in the UCI style (a space after each comma, ``?`` for missing):

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "people.data").write_text("39, Male\\n50, ?\\n")
    >>> opts = CsvOptions(column_names=("age", "sex"), strip_whitespace=True,
    ...                   null_values=("?",))
    >>> read_column(folder / "people.data", "sex", csv=opts).to_pylist()
    ['Male', None]
    >>> CsvOptions().delimiter_for("x.tsv"), CsvOptions(delimiter=";").delimiter_for("x.csv")
    ('\\t', ';')
    """

    column_names: tuple[str, ...] | None = None
    skip_rows: int = 0
    delimiter: str | None = None
    strip_whitespace: bool = False
    null_values: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.column_names is not None:
            names = tuple(str(c) for c in self.column_names)
            if len(set(names)) != len(names) or not names:
                raise ValidationError(
                    f"column_names must be a non-empty list of unique names, got {names!r}")
            object.__setattr__(self, "column_names", names)
        if isinstance(self.skip_rows, bool) or not isinstance(self.skip_rows, int) \
                or self.skip_rows < 0:
            raise ValidationError(f"skip_rows must be an integer >= 0, got {self.skip_rows!r}")
        if self.delimiter is not None and (
                not isinstance(self.delimiter, str) or len(self.delimiter) != 1
                or self.delimiter in '"\r\n'):
            raise ValidationError(
                "delimiter must be a single character other than a quote or a line break, "
                f"got {self.delimiter!r}")
        if self.null_values is not None:
            object.__setattr__(self, "null_values", tuple(str(v) for v in self.null_values))

    @property
    def missing_texts(self) -> tuple[str, ...]:
        """The cell texts read as missing: the empty cell and :attr:`null_values` (none
        with ``null_values=()``). The one meaning of a missing CSV cell, for every reader
        (a reference column, a released column).

        Examples
        --------
        >>> CsvOptions().missing_texts, CsvOptions(null_values=("?",)).missing_texts
        (('',), ('', '?'))
        >>> CsvOptions(null_values=()).missing_texts
        ()
        """
        if self.null_values == ():
            return ()
        return tuple(dict.fromkeys(("", *(self.null_values or ()))))

    def read_options(self, batch_rows: int | None = None) -> Any:
        """These options as ``pyarrow.csv.ReadOptions`` (block size sized for
        ``batch_rows``)."""
        pacsv = require("pyarrow.csv", "reading or writing CSV or Parquet files")

        kw: dict[str, Any] = {"skip_rows": self.skip_rows}
        if self.column_names is not None:
            kw["column_names"] = list(self.column_names)
        if batch_rows is not None:
            # block_size is in bytes; ~64 bytes per row is a conservative guess
            kw["block_size"] = int(min(max(batch_rows * 64, 1 << 16), 1 << 30))
        return pacsv.ReadOptions(**kw)

    def delimiter_for(self, path: str | os.PathLike[str]) -> str:
        """The field separator used for ``path``."""
        return self.delimiter if self.delimiter is not None else default_delimiter(path)

    def parse_options(self, path: str | os.PathLike[str] = "") -> Any:
        """These options as ``pyarrow.csv.ParseOptions`` for the file ``path``.

        An empty line is skipped, except in a file of one column, where it is that
        column's empty (missing) value: skipping it there would drop the record. A quoted
        field may hold line breaks (``newlines_in_values``; pyarrow otherwise refuses a
        file whose quoted line break falls across one of its read blocks)."""
        pacsv = require("pyarrow.csv", "reading or writing CSV or Parquet files")

        delimiter = self.delimiter_for(path)
        return pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True,
                                  ignore_empty_lines=self.header_width(path) != 1)

    def header_width(self, path: str | os.PathLike[str]) -> int | None:
        """The number of columns of the CSV file ``path`` (from ``column_names``, else its
        header line after ``skip_rows``); ``None`` when it cannot be read.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "one.csv").write_text('"a,b"\\nx\\n')
        >>> _ = (folder / "two.csv").write_text("a,b\\n1,2\\n")
        >>> CsvOptions().header_width(folder / "one.csv"), CsvOptions().header_width(
        ...     folder / "two.csv"), CsvOptions().header_width(folder / "missing.csv")
        (1, 2, None)
        """
        import csv as pycsv
        import io
        import re

        if self.column_names is not None:
            return len(self.column_names)
        if not str(path):
            return None
        pa = require("pyarrow", "reading or writing CSV or Parquet files")
        try:
            with csv_bytes(path) as stream:
                head = stream.read(1 << 16)
        except (OSError, pa.ArrowException):
            return None
        # (a byte-order mark is no part of the first name: the parser skips it too)
        text = head.decode("utf-8-sig", errors="replace")
        if self.skip_rows:  # skipped as the parser skips them: by CSV line breaks only
            lines = re.split(r"\r\n|\r|\n", text, maxsplit=self.skip_rows)
            if len(lines) <= self.skip_rows:
                return None
            text = lines[-1]
        # the header is a CSV record (a quoted name may hold a line break), the first that
        # is not blank: a file of several columns skips blank lines before it; in a file
        # of one column a blank first line is read as the header (one column named "")
        row = next((r for r in pycsv.reader(io.StringIO(text, newline=""),
                                            delimiter=self.delimiter_for(path)) if r), None)
        return None if row is None else len(row)

    def convert_options(self, columns: Sequence[str] | None,
                         column_types: Mapping[str, Any] | None) -> Any:
        """These options as ``pyarrow.csv.ConvertOptions`` reading ``columns`` with
        ``column_types``."""
        pacsv = require("pyarrow.csv", "reading or writing CSV or Parquet files")

        kw: dict[str, Any] = {}
        if columns is not None:
            kw["include_columns"] = list(columns)
        if column_types:
            kw["column_types"] = dict(column_types)
        # only the declared texts are missing (never pyarrow's own list: NA, null, ...)
        kw["null_values"] = list(self.missing_texts)
        if self.null_values == ():
            # no null markers at all: every cell is text, an empty cell an empty string
            kw["strings_can_be_null"] = False
            kw["quoted_strings_can_be_null"] = False
        else:
            kw["strings_can_be_null"] = True
        return pacsv.ConvertOptions(**kw)


def file_format(path: str | os.PathLike[str]) -> str:
    """``"parquet"`` or ``"csv"`` from the file name's extension (DataError otherwise).

    Examples
    --------
    >>> file_format("adult.data"), file_format("part-0.PARQUET"), file_format("x.csv.gz")
    ('csv', 'parquet', 'csv')
    >>> file_format("notes.xlsx")
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: cannot tell the format of 'notes.xlsx' from its extension; ...
    """
    name = Path(path).name.lower()
    for comp in _COMPRESSED:
        if name.endswith(comp):
            name = name[: -len(comp)]
            break
    if name.endswith(_PARQUET):
        return "parquet"
    if name.endswith(_CSV):
        return "csv"
    raise DataError(
        f"cannot tell the format of {str(path)!r} from its extension; use one of "
        f"{', '.join(_PARQUET + _CSV)} (CSV may be compressed: {', '.join(_COMPRESSED)})")


def _check_exists(path: Path) -> None:
    if not path.exists():
        raise DataError(f"input file {str(path)!r} does not exist")
    if not path.is_file():
        raise DataError(f"input path {str(path)!r} is not a file")


def expand_inputs(pattern: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
                  ) -> list[Path]:
    """Files matching a path, a glob pattern (``data/*.parquet``) or a list of them.

    Sorted, de-duplicated; raises DataError if a pattern matches nothing or a plain path
    does not exist.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("b.csv", "a.csv", "c.parquet"):
    ...     _ = (folder / name).write_text("x\\n1\\n")
    >>> [p.name for p in expand_inputs(str(folder / "*.csv"))]
    ['a.csv', 'b.csv']
    >>> [p.name for p in expand_inputs([folder / "c.parquet", str(folder / "*.parquet")])]
    ['c.parquet']
    """
    if isinstance(pattern, str | os.PathLike):
        items: list[Any] = [pattern]
    elif isinstance(pattern, Sequence):
        items = list(pattern)
    else:
        raise ValidationError(f"input must be a path, a glob pattern or a list of them, got "
                              f"{pattern!r}")
    if not items:
        raise DataError("no input files given")
    out: list[Path] = []
    for item in items:
        p = user_path(item, "input")
        text = os.fspath(item)
        # a pattern is a str with pattern characters (the user's text decides, never an
        # expanded home); a pathlib.Path always names one path
        if isinstance(item, str) and _glob.has_magic(text):
            hits = [h for h in glob_paths(text) if h.is_file() and h != p]
            if p.is_file():
                if hits:
                    raise DataError(
                        f"input {text!r} names a file and is also a glob pattern matching "
                        f"{str(hits[0])!r}; escape the pattern characters ([[], [*], [?]) "
                        "to name the file, or rename it")
                hits = [p]
            if not hits:
                raise DataError(f"input pattern {text!r} matches no file")
            out.extend(hits)
        else:
            _check_exists(p)
            out.append(p)
    first: dict[Path, Path] = {}  # each file's first path
    for p in out:
        first.setdefault(p.resolve(), p)
    return list(first.values())


def glob_paths(text: str) -> list[Path]:
    """The paths a glob pattern matches, sorted (``**`` matches any depth): a leading
    ``~`` or ``~user`` that names a home folder expanded and taken literally (a home
    folder's own ``[`` or ``*`` is no pattern; ``~a*.csv``, naming no user, is a pattern
    in the working directory, as in a shell), and a match that starts with ``~`` made
    absolute, as :func:`user_path` makes it."""
    head, sep, tail = text.partition("/")
    if head.startswith("~") and (home := os.path.expanduser(head)) != head:
        text = _glob.escape(home) + sep + tail
    found = (Path(h) for h in _glob.glob(text, recursive=True))
    return sorted(h.absolute() if h.parts and h.parts[0].startswith("~") else h
                  for h in found)


def list_columns(path: str | os.PathLike[str], *, csv: CsvOptions | None = None) -> list[str]:
    """The column names of a CSV or Parquet file (reads only the schema / first block).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "people.csv").write_text("id,sex\\n1,F\\n2,M\\n")
    >>> list_columns(folder / "people.csv")
    ['id', 'sex']
    """
    path = user_path(path)
    _check_exists(path)
    fmt_ = file_format(path)
    try:
        if fmt_ == "parquet":
            pq = require("pyarrow.parquet", "reading or writing Parquet files")

            return list(pq.read_schema(path).names)
        opts = csv or CsvOptions()
        if opts.column_names is not None:
            return list(opts.column_names)
        pacsv = require("pyarrow.csv", "reading or writing CSV or Parquet files")
        pa = require("pyarrow", "reading or writing CSV or Parquet files")

        # the names from the first 64 KiB on this thread (the default reader infers the
        # types of a 1 MiB block and reads ahead on other threads: ~20 ms); a header
        # longer than that, or any problem, is read (and reported) the usual way
        small = opts.read_options()
        small.block_size, small.use_threads = 1 << 16, False
        try:
            with csv_bytes(path) as source, pacsv.open_csv(
                    source, read_options=small,
                    parse_options=opts.parse_options(path)) as reader:
                return list(reader.schema.names)
        except pa.ArrowInvalid:
            pass
        with csv_bytes(path) as source, pacsv.open_csv(
                source, read_options=opts.read_options(),
                parse_options=opts.parse_options(path)) as reader:
            return list(reader.schema.names)
    except (DataError, MissingDependencyError):
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
        raise DataError(f"cannot read {str(path)!r} as {fmt_.upper()}: {short_message(exc)}") \
            from exc


def _missing_columns(path: Path, wanted: Sequence[str], available: Sequence[str]) -> None:
    missing = [c for c in wanted if c not in available]
    if missing:
        raise DataError(
            f"column {missing[0]!r} not found in {str(path)!r}; available columns: "
            f"{', '.join(map(repr, available))}")


def _utf8_valid(arr: Any) -> bool:
    """Whether every value of a string array read without checks is UTF-8: ASCII bytes
    (every byte < 0x80, one scan) are; otherwise Arrow checks every value."""
    import numpy as np
    import pyarrow as pa  # required by the caller already

    raw = np.frombuffer(value_bytes(arr), dtype=np.uint8)  # (a view: no copy)
    if not raw.size or int(raw.max()) < 0x80:
        return True
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def check_utf8_text(batch: Any, path: str | os.PathLike[str], first_row: int = 0) -> None:
    """Refuse a CSV batch read without UTF-8 checks (``check_utf8=False``) whose text
    columns (or text dictionaries) hold a value that is not UTF-8, naming the column and
    the first such data row (``first_row``: the batch's first data row, from 0). The same
    refusal as the parser's own check, at a fraction of its cost on ASCII text.

    Examples
    --------
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(
    ...     np.array([0, 1, 3], np.int32)), pa.py_buffer(b"a\\xc3(")])
    >>> batch = pa.record_batch([pa.array(["x", "y"]), bad], names=["id", "c"])
    >>> try:
    ...     check_utf8_text(batch, "in.csv", 10)
    ... except DataError as exc:
    ...     print(exc)
    cannot read 'in.csv' as CSV: column 'c' holds text that is not valid UTF-8 (data row
    12, counting from 1 after the header)
    """
    import pyarrow as pa  # required by the caller already

    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        arr = col.dictionary if pa.types.is_dictionary(col.type) else col
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) \
                or _utf8_valid(arr):
            continue
        # the first bad row, by halving (this is the failure path only)
        rows = col if arr is col else col.dictionary_decode()
        lo, hi = 0, len(rows)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _utf8_valid(rows.slice(lo, mid - lo)):
                lo = mid
            else:
                hi = mid
        raise DataError(f"cannot read {str(path)!r} as CSV: column {name!r} holds text that "
                        f"is not valid UTF-8 (data row {first_row + lo + 1}, counting from 1 "
                        "after the header)")


def _strip(table: pa.Table, opts: CsvOptions | None) -> pa.Table:
    if opts is None or not opts.strip_whitespace:
        return table
    pa = require("pyarrow", "reading or writing CSV or Parquet files")
    pc = require("pyarrow.compute", "reading or writing CSV or Parquet files")

    cols = []
    for col in table.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = pc.utf8_trim_whitespace(col)
            if opts.missing_texts:  # " ?" becomes "?" only after trimming: null it now
                is_null = pc.is_in(col, value_set=pa.array(opts.missing_texts, col.type))
                col = pc.if_else(is_null, pa.scalar(None, col.type), col)
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names) if isinstance(
        table, pa.Table) else pa.RecordBatch.from_arrays(cols, names=table.column_names)


def _open_checked(path: str | os.PathLike[str], columns: Sequence[str] | None,
                  csv: CsvOptions | None) -> tuple[Path, str, list[str] | None]:
    """The checks every reader makes first: the file exists, its format is known and the
    requested columns are in it (DataError otherwise)."""
    path = user_path(path)
    _check_exists(path)
    fmt_ = file_format(path)
    cols = None
    if columns is not None:
        cols = [str(c) for c in columns]
        _missing_columns(path, cols, list_columns(path, csv=csv))
    return path, fmt_, cols


def read_table(path: str | os.PathLike[str], columns: Sequence[str] | None = None, *,
               csv: CsvOptions | None = None,
               column_types: Mapping[str, Any] | None = None) -> pa.Table:
    """Read (some columns of) a whole CSV or Parquet file into a :class:`pyarrow.Table`.

    Raises DataError for a missing file, a missing column (listing the available ones) or
    unreadable content.

    Examples
    --------
    pyarrow infers the type of a CSV column unless ``column_types`` fixes it (the
    privatisation reads untouched columns as text, so ``007`` stays ``007``):

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "people.csv").write_text("id,sex\\n007,F\\n2,M\\n")
    >>> read_table(folder / "people.csv").to_pydict()
    {'id': [7, 2], 'sex': ['F', 'M']}
    >>> import pyarrow as pa
    >>> text = read_table(folder / "people.csv", column_types={"id": pa.string()})
    >>> text.column("id").to_pylist()
    ['007', '2']
    >>> read_table(folder / "people.csv", ["age"])
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: ...age...
    """
    path, fmt_, columns = _open_checked(path, columns, csv)
    try:
        if fmt_ == "parquet":
            pq = require("pyarrow.parquet", "reading or writing Parquet files")

            return pq.read_table(path, columns=columns)
        pacsv = require("pyarrow.csv", "reading or writing CSV or Parquet files")

        opts = csv or CsvOptions()
        with csv_bytes(path) as raw:
            table = pacsv.read_csv(
                WholeCrlf(raw), read_options=opts.read_options(),
                parse_options=opts.parse_options(path),
                convert_options=opts.convert_options(columns, column_types))
        return _strip(table, opts)
    except (DataError, MissingDependencyError):
        raise
    except Exception as exc:
        raise DataError(f"cannot read {str(path)!r} as {fmt_.upper()}: {short_message(exc)}") \
            from exc


def read_column(path: str | os.PathLike[str], column: str, *,
                csv: CsvOptions | None = None) -> pa.ChunkedArray:
    """One column of a CSV or Parquet file (format from the extension).

    Parameters
    ----------
    path
        The file.
    column
        The column's name.
    csv
        Parsing options for CSV files (headerless files, whitespace, null markers).

    Returns
    -------
    pyarrow.ChunkedArray
        A CSV column has the type pyarrow infers (see :func:`read_table`): numbers become
        integers or floats, and a column holding any cell that is not valid UTF-8 becomes
        ``binary``, every cell then ``bytes`` (text is never silently decoded or replaced).

    Raises
    ------
    DataError
        The file does not exist, the column is not in it (the message lists the available
        columns) or the file cannot be parsed.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "people.csv").write_text("id,sex\\n1,F\\n2,M\\n3,M\\n")
    >>> read_column(folder / "people.csv", "sex").to_pylist()
    ['F', 'M', 'M']
    >>> _ = (folder / "raw.csv").write_bytes(b"sex\\nF\\n\\xff\\n")  # not UTF-8
    >>> read_column(folder / "raw.csv", "sex").to_pylist()
    [b'F', b'\\xff']
    """
    if not isinstance(column, str):
        raise ValidationError(f"column must be a column name (str), got {column!r}")
    return read_table(path, [column], csv=csv).column(column)


def read_labels(path: str | os.PathLike[str], column: str, *,
                csv: CsvOptions | None = None) -> pa.ChunkedArray:
    """One column of categorical labels (a reference to design for), read as
    ``pmlkit privatize`` reads a released column.

    A Parquet column keeps its type. A CSV column is text (missing: the empty cell and
    ``csv.null_values``, :attr:`CsvOptions.missing_texts`) and becomes numbers only when
    every text is the spelling pmlkit writes for its number (``_labels_from_text``):
    ``0, 1, 39`` are the integers 0, 1, 39, but ``007, 7, 08, 1e3`` stay four texts, so
    two spellings never merge into one label and a release never writes a text the
    column did not hold.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "codes.csv").write_text("n,code,x\\n0,007,1.5\\n39,7,2\\n")
    >>> [read_labels(folder / "codes.csv", c).to_pylist() for c in ("n", "code", "x")]
    [[0, 39], ['007', '7'], [1.5, 2.0]]
    """
    if not isinstance(column, str):
        raise ValidationError(f"column must be a column name (str), got {column!r}")
    return read_label_table(path, [column], csv=csv).column(column)


def read_label_table(path: str | os.PathLike[str], columns: Sequence[str], *,
                     csv: CsvOptions | None = None) -> pa.Table:
    """Several columns of labels in one read of the file, each as :func:`read_labels`
    reads it.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "codes.csv").write_text("n,code\\n0,007\\n39,7\\n")
    >>> read_label_table(folder / "codes.csv", ["code", "n"]).to_pydict()
    {'code': ['007', '7'], 'n': [0, 39]}
    """
    names = list(columns)
    if file_format(user_path(path)) == "parquet":
        return read_table(path, names, csv=csv)
    pa = require("pyarrow", "reading or writing CSV or Parquet files")

    text = read_table(path, names, csv=csv, column_types=dict.fromkeys(names, pa.string()))
    return pa.table({n: _labels_from_text(text.column(n)) for n in names})


def _labels_from_text(arr: Any) -> Any:
    """Text labels (a pyarrow string array, nulls missing) as numbers where every text is
    the canonical spelling of its number, the text pmlkit writes back for it (Arrow's
    cast to text: ``7``, ``-3``, ``1.5``, ``1e+20``, ``true``): integers (int64), else
    finite floats (float64), else booleans; otherwise the texts unchanged.

    Examples
    --------
    >>> import pyarrow as pa
    >>> _labels_from_text(pa.array(["0", "39", None])).type
    DataType(int64)
    >>> _labels_from_text(pa.array(["1", "2.5"])).to_pylist()
    [1.0, 2.5]
    >>> [_labels_from_text(pa.array(t)).type for t in (["007"], ["1e3"], ["1.0"], ["nan"])]
    [DataType(string), DataType(string), DataType(string), DataType(string)]
    """
    pa = require("pyarrow", "reading or writing CSV or Parquet files")
    pc = require("pyarrow.compute", "reading or writing CSV or Parquet files")

    distinct = pc.unique(arr).drop_null()
    if not len(distinct) or not pa.types.is_string(distinct.type):
        return arr
    for typ in (pa.int64(), pa.float64(), pa.bool_()):
        try:
            values = pc.cast(distinct, typ)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        if pa.types.is_floating(typ) and not pc.all(pc.is_finite(values)).as_py():
            continue
        if pc.all(pc.equal(pc.cast(values, pa.string()), distinct)).as_py() \
                and len(set(values.to_pylist())) == len(distinct):  # ('-0' and '0': one)
            return pc.cast(arr, typ)
    return arr


def iter_batches(path: str | os.PathLike[str], columns: Sequence[str] | None = None, *,
                 batch_rows: int = DEFAULT_BATCH_ROWS, csv: CsvOptions | None = None,
                 column_types: Mapping[str, Any] | None = None,
                 read_dictionary: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Stream a file as record batches of at most ~``batch_rows`` rows (bounded memory).

    Parquet: :meth:`pyarrow.parquet.ParquetFile.iter_batches`, row group by row group (a
    batch never spans two groups); CSV: in file order, parsed a few blocks ahead on
    pyarrow's threads where the file is large enough (CSV blocks are sized in bytes, so
    batches hold roughly ``batch_rows`` rows). ``column_types`` fixes CSV column types
    (type inference on the first block would otherwise fail on a later block that
    disagrees). ``read_dictionary`` names Parquet columns to read dictionary-encoded
    (cheap for low-cardinality labels). A CSV block that cannot be read raises when it is
    reached, or up to four blocks earlier where blocks are read ahead.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> pq.write_table(pa.table({"sex": ["F", "M", "M", "F", "M"]}), folder / "x.parquet",
    ...                row_group_size=2)
    >>> [b.num_rows for b in iter_batches(folder / "x.parquet", batch_rows=2)]
    [2, 2, 1]
    """
    path, fmt_, columns = _open_checked(path, columns, csv)
    try:
        if fmt_ == "parquet":
            pq = require("pyarrow.parquet", "reading or writing Parquet files")

            with pq.ParquetFile(path, read_dictionary=list(read_dictionary or [])) as pf:
                # one row group at a time: a batch never spans two groups, so a writer that
                # writes a group per batch keeps the input's groups (split where they are
                # larger than batch_rows) whichever columns are read dictionary-encoded
                for group in range(pf.num_row_groups):
                    yield from pf.iter_batches(batch_size=batch_rows, columns=columns,
                                               row_groups=[group])
            return
        opts = csv or CsvOptions()
        row = 0
        for batch in _csv_blocks(path, opts, columns, column_types, batch_rows):
            check_utf8_text(batch, path, row)
            row += batch.num_rows
            yield _strip(batch, opts)
    except (DataError, MissingDependencyError):
        raise
    except Exception as exc:
        raise DataError(f"cannot read {str(path)!r} as {fmt_.upper()}: {short_message(exc)}") \
            from exc


def _csv_blocks(path: Path, opts: CsvOptions, columns: list[str] | None,
                column_types: Mapping[str, Any] | None, batch_rows: int
                ) -> Iterator[pa.RecordBatch]:
    """The CSV file's record batches, in file order, parsed in blocks of about
    ``64 * batch_rows`` bytes (text is checked to be UTF-8 by the caller,
    :func:`check_utf8_text`, not by the parser: an ASCII block, the usual case, is checked
    by one scan of its bytes).

    pyarrow's streaming reader parses a block only when the next batch is asked for, so
    the caller's work on a batch and the parsing of the next take turns. A file of more
    than two blocks is therefore read through a :mod:`pyarrow.dataset` fragment, which
    parses up to four blocks ahead on pyarrow's own threads and yields them in file order
    (no thread of pmlkit's), with the columns projected by the scan. It is used only
    where it reads exactly what the streaming reader reads (:func:`_reads_ahead`). It is
    handed the path the streaming reader opens, unresolved (a relative path put under the
    working directory; ``~`` was expanded where the path entered), so the kernel resolves
    symlinks, ``..`` and ``/proc`` links for both, and a path is never read as a URI.
    Leading batches without rows are left out, as the streaming reader leaves them out.
    Anything the fragment refuses before its first batch is read again by the streaming
    reader, which then reports the problem in its own words. A problem in a later block
    is raised when it is reached or up to four blocks earlier (a release publishes
    nothing either way)."""
    pacsv = require("pyarrow.csv", "reading or writing CSV or Parquet files")

    read_options = opts.read_options(batch_rows)
    parse_options = opts.parse_options(path)
    if _reads_ahead(path, opts, read_options.block_size) \
            and not splits_crlf(path, read_options.block_size):
        ds = require("pyarrow.dataset", "reading or writing CSV or Parquet files")
        pafs = require("pyarrow.fs", "reading or writing CSV or Parquet files")

        conv = opts.convert_options(None, column_types)
        conv.check_utf8 = False
        fmt = ds.CsvFileFormat(read_options=read_options, parse_options=parse_options,
                               convert_options=conv)
        batches: Iterator[pa.RecordBatch] | None = None
        first = None
        try:
            # (no normalisation: os.path.join, never abspath or realpath)
            name = os.path.join(os.getcwd(), os.fspath(path))
            fragment = fmt.make_fragment(name, filesystem=pafs.LocalFileSystem())
            # (an empty list of columns means all of them, as for the streaming reader)
            batches = iter(fragment.to_batches(columns=columns or None, batch_size=1 << 30,
                                               batch_readahead=4, fragment_readahead=1))
            first = next((b for b in batches if b.num_rows), None)
        except Exception:  # read (and reported) by the streaming reader below
            batches = None
        if batches is not None and first is not None:
            yield first
            yield from batches
            return
    conv = opts.convert_options(columns, column_types)
    conv.check_utf8 = False
    source = WholeCrlf(csv_bytes(path))
    try:
        with pacsv.open_csv(source, read_options=read_options,
                            parse_options=parse_options, convert_options=conv) as reader:
            yield from reader
    finally:
        source.close()


#: The file names (by their last suffix, any case) read ahead: a dataset fragment takes
#: a codec from other suffixes (``.gz``, but also ``.gzip`` or ``.snappy``) by its own
#: rules, which are not the streaming reader's (``.zst`` is compressed only for the
#: latter), so every other file keeps the streaming reader.
_READ_AHEAD_SUFFIXES = (".csv", ".tsv", ".txt")


def _reads_ahead(path: Path, opts: CsvOptions, block_size: int) -> bool:
    """Whether :func:`_csv_blocks` reads ``path`` through the dataset scanner: a plain
    text file by its name (:data:`_READ_AHEAD_SUFFIXES`) of more than two blocks (a
    smaller one has nothing to read ahead, and the scanner takes 15-25 ms to start with
    large blocks), with no lines skipped before the header (the fragment checks their
    fields against the header's) and no column named ``__...`` (the scanner's own fields
    are named so)."""
    try:
        if opts.skip_rows or path.suffix.lower() not in _READ_AHEAD_SUFFIXES \
                or path.stat().st_size <= 2 * block_size:
            return False
        names = opts.column_names if opts.column_names is not None \
            else list_columns(path, csv=opts)
    except (OSError, DataError):  # read (and reported) by the streaming reader
        return False
    return not any(name.startswith("__") for name in names)


class AtomicWriter:
    """Write record batches to CSV or Parquet atomically.

    Data go to a temporary file ``.<name>.<random>.tmp`` in the target's folder; on a
    clean exit of the ``with`` block it is fsync'ed and renamed over the target with
    :func:`os.replace` (atomic on POSIX and Windows within one file system). On any
    exception the temporary file is deleted and the target is untouched.

    Parameters
    ----------
    path
        The output file (format from its extension).
    schema
        The :class:`pyarrow.Schema` of the batches.
    overwrite
        Allow replacing an existing ``path`` (refused by default).
    csv
        Options for CSV output (only ``delimiter`` is used; a header line is written).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> import pyarrow as pa
    >>> table = pa.table({"id": [1, 2], "sex": ["F", "M"]})
    >>> with AtomicWriter(folder / "out.parquet", table.schema) as writer:
    ...     writer.write(table)
    >>> read_table(folder / "out.parquet").to_pydict()
    {'id': [1, 2], 'sex': ['F', 'M']}
    >>> AtomicWriter(folder / "out.parquet", table.schema)
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: output file ... already exists; pass overwrite=True ...
    """

    def __init__(self, path: str | os.PathLike[str], schema: pa.Schema, *,
                 overwrite: bool = False, csv: CsvOptions | None = None) -> None:
        self.path = user_path(path)
        self.format = file_format(self.path)
        if self.path.exists() and not overwrite:
            raise DataError(
                f"output file {str(self.path)!r} already exists; pass overwrite=True "
                "(--overwrite) to replace it")
        if not self.path.parent.is_dir():
            raise DataError(f"output folder {str(self.path.parent)!r} does not exist")
        self.schema = schema
        self.csv = csv or CsvOptions()
        self._tmp: Path | None = None
        self._writer: Any = None
        self.rows = 0

    def __enter__(self) -> AtomicWriter:
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                   dir=self.path.parent)
        os.close(fd)
        self._tmp = Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self._tmp, 0o666 & ~umask)  # mkstemp makes 0600; use the usual mode
        try:
            if self.format == "parquet":
                pq = require("pyarrow.parquet", "reading or writing Parquet files")

                self._writer = pq.ParquetWriter(self._tmp, self.schema)
            else:
                pacsv = require("pyarrow.csv", "reading or writing CSV or Parquet files")

                self._writer = pacsv.CSVWriter(
                    self._tmp, self.schema,
                    write_options=pacsv.WriteOptions(
                        delimiter=self.csv.delimiter_for(self.path)))
        except BaseException:
            self._tmp.unlink(missing_ok=True)
            raise
        return self

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Append a batch (its schema must equal the writer's)."""
        if self._writer is None:
            raise RuntimeError("AtomicWriter.write called outside its with-block")
        if hasattr(batch, "to_batches"):
            self._writer.write_table(batch)
        else:
            self._writer.write_batch(batch)
        self.rows += batch.num_rows

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._tmp is None:  # __enter__ failed before creating the temporary file
            return
        try:
            if self._writer is not None:
                self._writer.close()
            if exc_type is None:
                with open(self._tmp, "rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(self._tmp, self.path)
        finally:
            self._writer = None
            if self._tmp.exists():
                self._tmp.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------
# Exact round trip of CSV text (used by pmlkit.privatization.files)
# --------------------------------------------------------------------------------------


def default_delimiter(path: str | os.PathLike[str]) -> str:
    """``"\\t"`` for ``.tsv`` files (compressed or not), ``","`` otherwise."""
    name = Path(path).name.lower()
    for comp in _COMPRESSED:
        if name.endswith(comp):
            name = name[: -len(comp)]
    return "\t" if name.endswith(".tsv") else ","


def unique_columns(path: str | os.PathLike[str], *, csv: CsvOptions | None = None
                   ) -> list[str]:
    """The column names of a file, refusing a file where a name appears more than once.

    Two columns with the same name make "the column ``sex``" ambiguous: privatising one and
    writing the other unchanged would release raw data. Names that only look alike
    (``sex`` / ``sex `` / ``Sex``) are different columns and are kept as they are.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "ok.csv").write_text("sex,Sex\\nF,M\\n")
    >>> unique_columns(folder / "ok.csv")
    ['sex', 'Sex']
    >>> _ = (folder / "dup.csv").write_text("sex,sex\\nF,M\\n")
    >>> unique_columns(folder / "dup.csv")
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: column name 'sex' appears 2 times in ...
    """
    names = list_columns(path, csv=csv)
    seen = Counter(names)  # (in the order of first appearance)
    dups = [n for n, k in seen.items() if k > 1]
    if dups:
        raise DataError(
            f"column name {dups[0]!r} appears {seen[dups[0]]} times in {str(path)!r}; "
            "a column to privatise or keep must be unambiguous: rename the duplicate "
            "columns first")
    return names
