"""Labels in and out of a release: label kinds, encoding labels to input indices, and
the output labels taken by output indices.

:class:`Encoder` maps a chunk of labels (numpy, pandas, Arrow, polars) to the mechanism's
input indices with the libraries' own matching (a table lookup for integer labels in a
short range, ``pyarrow.compute.index_in`` for Arrow values, pandas ``Index.get_indexer``
for Python objects and anything else; Arrow text without nulls and text labels of at
most 12 bytes by the texts' views alone, :class:`ViewKeys`), counting nulls and unknown
values over every chunk; :func:`output_label_array` and :func:`arrow_take` give the
output labels of drawn output indices with numpy's and Arrow's own (checked) take (text
views by numpy's take of the labels' views). The names are public through
:mod:`pmlkit.sampler`.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._optional import require
from ._validation import fmt
from .errors import DataError, ValidationError

__all__ = [
    "MISSING_LABEL",
    "Encoder",
    "arrow_take",
    "count_outputs",
    "label_kind",
    "label_texts",
    "null_mask",
    "output_label_array",
    "refuse_missing_label_text",
    "strings_to_arrow",
]

#: The label a missing value is designed and released under when missing values are a
#: category of their own (``missing="category"``): one owner for the design, the release
#: and the analyst's side.
MISSING_LABEL = "(missing)"


def label_texts(labels: Sequence[Any]) -> tuple[str, ...] | None:
    """The text of each label in a CSV file: a text label itself, a number or boolean the
    text Arrow writes for it (``7``, ``1.5``, ``true``), so a label is matched by, and
    written as, one text. None when two labels would share a text (``"1"`` and ``1``) or
    a label is of no such kind.

    Examples
    --------
    >>> label_texts([0, 1, "(missing)"])
    ('0', '1', '(missing)')
    >>> label_texts([1.0, 2.5]), label_texts(["1", 1])
    (('1', '2.5'), None)
    """
    pa = require("pyarrow", "reading or writing CSV or Parquet files")
    kinds = [_value_kind(lab) for lab in labels]
    if any(k != "str" and k not in _TEXT_TYPES for k in kinds):
        return None
    texts: list[Any] = [str(lab) if k == "str" else None for lab, k in zip(labels, kinds,
                                                                          strict=True)]
    for kind, typ in _TEXT_TYPES.items():  # one cast per kind, not per label
        at = [i for i, k in enumerate(kinds) if k == kind]
        if at:
            cast = pa.array([labels[i] for i in at], type=getattr(pa, typ)())
            for i, t in zip(at, cast.cast(pa.string()).to_pylist(), strict=True):
                texts[i] = t
    return tuple(texts) if len(set(texts)) == len(texts) else None


def refuse_missing_label_text(values: Any, where: str = "the column") -> None:
    """Refuse a column that already holds the text :data:`MISSING_LABEL` when missing
    values are to become that label (``missing="category"``): the real values and the
    missing ones would be one label, counted together and released alike (a release
    writes that output as a missing cell). ``values``: a pyarrow array, or anything
    numpy turns into an array. Raises :class:`~pmlkit.errors.DataError`.

    Examples
    --------
    >>> refuse_missing_label_text(["a", None, "b"])
    >>> refuse_missing_label_text(["a", "(missing)"], "column 'x'")
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: column 'x' holds the text '(missing)', the label ...
    """
    from ._optional import loaded

    pa = loaded("pyarrow")
    if pa is not None and isinstance(values, pa.Array | pa.ChunkedArray):
        typ = values.type
        if pa.types.is_dictionary(typ):
            values, typ = values.dictionary if isinstance(values, pa.Array) else \
                values.combine_chunks().dictionary, typ.value_type
        if not (pa.types.is_string(typ) or pa.types.is_large_string(typ)
                or pa.types.is_string_view(typ)):
            return
        import pyarrow.compute as pc

        found = bool(pc.any(pc.equal(values, pa.scalar(MISSING_LABEL))).as_py())
    else:
        arr = np.asarray(values, dtype=object)
        found = bool(np.any(arr == MISSING_LABEL))
    if found:
        raise DataError(
            f"{where} holds the text {MISSING_LABEL!r}, the label missing='category' gives "
            "missing values: the two would be counted and released as one; rename those "
            "values, or use missing='keep' or 'error'")


#: Records counted at a time by :func:`count_outputs` for narrow indices.
_COUNT_BLOCK = 1 << 16

#: Label kinds in the order a label is tested for them (a bool is also an int).
_KINDS = ("bool", "int", "float", "str", "object")


def _type_kind(t: type) -> str:
    """The kind of the labels of type ``t`` (see :func:`label_kind`)."""
    if issubclass(t, bool | np.bool_):
        return "bool"
    if issubclass(t, int | np.integer):
        return "int"
    if issubclass(t, float | np.floating):
        return "float"
    if issubclass(t, str):
        return "str"
    return "object"


def _value_kind(v: Any) -> str:
    """The kind of one label as a chain of ``isinstance`` tests gives it: ``isinstance``
    also asks ``v.__class__``, so the first kind that either its type or the class it
    claims belongs to."""
    return min(_type_kind(type(v)), _type_kind(v.__class__), key=_KINDS.index)


def label_kind(labels: Sequence[Any]) -> str:
    """The kind of a label sequence: ``"bool"``, ``"int"``, ``"float"`` (floats, or ints
    and floats), ``"str"``, ``"object"`` (anything else) or ``"mixed"``. Values match
    labels only within a kind (a bool is never the label 1).

    Examples
    --------
    >>> label_kind([0, 1, 2]), label_kind([0, 1.5]), label_kind(["a", "b"])
    ('int', 'float', 'str')
    >>> label_kind([True, False]), label_kind([True, 1]), label_kind([None])
    ('bool', 'mixed', 'object')
    """
    # each distinct type classified once (the release paths ask several times per call,
    # and a loop of isinstance tests over 1000 labels measured 0.7 ms a call), unless a
    # type defines its own __class__: isinstance also believes the class a value claims
    types = set(map(type, labels))
    if any("__class__" in vars(c) for t in types for c in t.__mro__ if c is not object):
        kinds = {_value_kind(v) for v in labels}
    else:
        kinds = {_type_kind(t) for t in types}
    if kinds <= {"int", "float"} and "float" in kinds:
        return "float"
    return kinds.pop() if len(kinds) == 1 else "mixed"


#: The bytes of a ``string_view`` view's two little-endian 64-bit words that belong to a
#: value of ``L <= 12`` bytes, by ``L`` (word 0: the 4-byte length, then the first 4
#: bytes; word 1: bytes 4 to 11). A longer value's view holds its length, a 4-byte prefix
#: and where its bytes are (masked like a 12-byte one, its length still differs).
_VIEW_MASK0 = np.array([0xFFFFFFFF | (((1 << (8 * min(n, 4))) - 1) << 32)
                        for n in range(13)], dtype=np.uint64)
_VIEW_MASK1 = np.array([(1 << (8 * min(max(n - 4, 0), 8))) - 1 for n in range(13)],
                       dtype=np.uint64)
#: Most labels :class:`ViewKeys` matches (its slot table has 2 k^2 to 16 k^2 entries).
_VIEW_MAX_LABELS = 1024
#: The largest slot table whose slots keep their own keys in :class:`ViewKeys`.
_VIEW_SLOT_WORDS = 1 << 12
#: Records matched at a time by :meth:`ViewKeys.codes` (the temporaries stay in cache).
_VIEW_BLOCK = 1 << 16


def _slots(a: NDArray[np.uint64], b: NDArray[np.uint64], mult: tuple[np.uint64, np.uint64],
           shift: np.uint64, out: NDArray[np.uint64], hashed: int = 2) -> NDArray[np.intp]:
    """The slot of each key ``(a, b)`` (written into ``out``): the top ``64 - shift``
    bits of ``((b * mult[1]) ^ a) * mult[0]`` modulo 2**64 (``hashed`` 2), of
    ``a * mult[0]`` (0) or of ``b * mult[0]`` (1)."""
    with np.errstate(over="ignore"):
        if hashed == 2:
            np.multiply(b, mult[1], out=out)
            out ^= a
            out *= mult[0]
        else:
            np.multiply(b if hashed else a, mult[0], out=out)
    out >>= shift
    return out.view(np.intp)


class ViewKeys:
    """Text labels of at most 12 UTF-8 bytes matched in an Arrow ``string_view`` array
    from its views alone: integers in, integer codes out.

    A view is 16 bytes: the value's length and, for a value of at most 12 bytes, the
    bytes themselves, then zeros. A label's key is its view; a multiply-shift hash of a
    record's two 64-bit words picks a slot in a table where no two labels share one (the
    multiplier is searched for once, from a fixed seed: the labels are public), and the
    slot's label is taken only when its whole key equals the record's view. A record
    whose view equals a label's key holds that label (same length, same bytes). Arrow
    does not require the bytes after a short value to be zero, so the few records that
    match no key this way are matched again by their views masked to their own lengths
    (a longer record keeps its own length in the key and never equals one). The views
    are read through ``numpy.frombuffer`` after checking the buffer holds every view; no
    other buffer is read. ``pyarrow.compute.index_in`` has no ``string_view`` kernel, and
    casting to ``large_string`` first copies every value (polars hands its strings over
    as views without a copy).

    Examples
    --------
    >>> import pyarrow as pa
    >>> keys = ViewKeys.build(["low", "high", "a much longer"])  # a label over 12 bytes
    >>> keys is None
    True
    >>> keys = ViewKeys.build(["low", "high"])
    >>> arr = pa.array(["high", "low", "lo", "high and more"], type=pa.string_view())
    >>> keys.codes(arr).tolist()
    [1, 0, -1, -1]
    """

    def __init__(self, words: NDArray[np.uint64], mult: tuple[np.uint64, np.uint64],
                 shift: np.uint64, table: NDArray[np.intp], hashed: int = 2) -> None:
        self.words = words  # (2, k): each label's key
        self.mult = mult
        self.shift = shift
        self.hashed = hashed  # the words hashed: 0 or 1 alone (the labels differ there), 2 both
        self.table = table  # slot -> label index (an empty slot: 0, rejected by its key)
        # a small table: each slot's key (an empty slot: label 0's, whose records it then
        # takes rightly), read by slot; a large one (many labels): the table narrowed and
        # the keys read by label, so what the lookups read stays in cache
        self.slot_words = words.take(table, axis=1) if table.shape[0] <= _VIEW_SLOT_WORDS \
            else None
        self.narrow = table.astype(np.int16) if self.slot_words is None else table

    @classmethod
    def build(cls, labels: Sequence[Any]) -> ViewKeys | None:
        """The keys of distinct ``str`` labels, or None when one is not a ``str``, has
        more than 12 bytes in UTF-8 (or cannot be encoded), or there are more than
        :data:`_VIEW_MAX_LABELS` labels."""
        k = len(labels)
        if not 0 < k <= _VIEW_MAX_LABELS or sys.byteorder != "little" \
                or not all(type(lab) is str for lab in labels):
            return None
        try:
            raw = [lab.encode("utf-8") for lab in labels]
        except UnicodeEncodeError:
            return None
        if len(set(raw)) != k or max(map(len, raw)) > 12:
            return None
        views = [len(r).to_bytes(4, "little") + r.ljust(12, b"\0") for r in raw]
        words = np.array([[int.from_bytes(v[:8], "little") for v in views],
                          [int.from_bytes(v[8:], "little") for v in views]], dtype=np.uint64)
        # one word hashed where the labels' keys differ in it alone (two passes fewer)
        hashed = next((w for w in (0, 1) if np.unique(words[w]).size == k), 2)
        search = np.random.default_rng(0x5EED)
        lo = max(3, (2 * k * k - 1).bit_length())
        for bits in range(lo, lo + 3):
            shift = np.uint64(64 - bits)
            for _ in range(32):
                m = search.integers(0, 2**62, 2, dtype=np.int64)
                mult = (np.uint64(4 * int(m[0]) + 1), np.uint64(4 * int(m[1]) + 1))
                slots = _slots(words[0], words[1], mult, shift, np.empty(k, np.uint64),
                               hashed)
                if np.unique(slots).size == k:
                    table = np.zeros(1 << bits, dtype=np.intp)
                    table[slots] = np.arange(k)
                    return cls(words, mult, shift, table, hashed)
        return None  # (not reached in practice: each try succeeds with odds above 1/2)

    def codes(self, arr: Any) -> NDArray[np.intp] | None:
        """The label index of every record of a ``string_view`` array (-1: not a label;
        a null's view is read like any other, so the caller handles nulls), or None when
        its views buffer is shorter than its records need."""
        n, off = len(arr), arr.offset
        buf = arr.buffers()[1]
        if n == 0:
            return np.empty(0, dtype=np.intp)
        if buf is None or buf.size < 16 * (off + n):
            return None
        views = np.frombuffer(buf, dtype="<u8", count=2 * (off + n)).reshape(-1, 2)[off:]
        out = np.empty(n, dtype=np.intp)
        size = min(_VIEW_BLOCK, n)
        h, a, b = (np.empty(size, dtype=np.uint64) for _ in range(3))
        for start in range(0, n, _VIEW_BLOCK):
            v = views[start:start + _VIEW_BLOCK]
            m = v.shape[0]
            if m != size:
                size = m
                h, a, b = h[:m], a[:m], b[:m]
            code = out[start:start + m]
            if not self._lookup(v[:, 0], v[:, 1], h, a, b, code):
                self._masked(v, code)
        return out

    def _lookup(self, v0: NDArray[np.uint64], v1: NDArray[np.uint64],
                h: NDArray[np.uint64], a: NDArray[np.uint64], b: NDArray[np.uint64],
                code: NDArray[np.intp]) -> bool:
        """``code``: the label of each key ``(v0, v1)`` whose slot holds that very key,
        -1 elsewhere (``h``, ``a``, ``b``: scratch). True when every key matched."""
        # (every slot is in the table, every code a label's: "clip" never moves one)
        slot = _slots(v0, v1, self.mult, self.shift, h, self.hashed)
        if self.slot_words is not None:
            self.table.take(slot, out=code, mode="clip")
            self.slot_words[0].take(slot, out=a, mode="clip")
            self.slot_words[1].take(slot, out=b, mode="clip")
        else:
            code[:] = self.narrow.take(slot, mode="clip")
            self.words[0].take(code, out=a, mode="clip")
            self.words[1].take(code, out=b, mode="clip")
        a ^= v0
        b ^= v1
        a |= b  # zero exactly where the slot's key is the record's
        if not a.any():
            return True
        code[a != 0] = -1
        return False

    def _masked(self, v: NDArray[np.uint64], code: NDArray[np.intp]) -> None:
        """The records of ``code`` left at -1 matched again by their views masked to
        their own lengths (bytes after a short value need not be zero)."""
        rows = np.flatnonzero(code < 0)
        w = v[rows]
        length = np.minimum(w[:, 0] & np.uint64(0xFFFFFFFF), np.uint64(12)).view(np.intp)
        a = _VIEW_MASK0.take(length) & w[:, 0]
        b = _VIEW_MASK1.take(length) & w[:, 1]
        found = np.empty(rows.shape[0], dtype=np.intp)
        h, s0, s1 = (np.empty(rows.shape[0], dtype=np.uint64) for _ in range(3))
        self._lookup(a, b, h, s0, s1, found)
        code[rows] = found


def plain_layout(arr: Any, what: str = "values") -> Any:
    """``arr`` in a plain layout: a ``string_view``/``binary_view`` array, once Arrow has
    fully validated it, cast to ``large_string``/``large_binary`` (Arrow's ``index_in``
    and ``filter`` have no kernels for the views); any other array as it is.

    A view names a data buffer and an offset in it, and pyarrow's own cast trusts them: a
    forged view would send it outside the buffers, so the array is validated first.

    Raises
    ------
    DataError
        A view with a negative length, one naming a missing buffer or a range outside
        it, or text that is not UTF-8.

    Examples
    --------
    >>> import struct
    >>> import pyarrow as pa
    >>> plain_layout(pa.array(["a", "b"], type=pa.string_view())).type
    DataType(large_string)
    >>> bad = struct.pack("<i", 20) + b"abcd" + struct.pack("<ii", 7, 0)  # buffer 7
    >>> arr = pa.Array.from_buffers(pa.string_view(), 1, [None, pa.py_buffer(bad)])
    >>> plain_layout(arr)
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: values: not a valid Arrow string_view array (View at slot 0 ...
    """
    import pyarrow as pa

    t = arr.type
    if pa.types.is_string_view(t):
        plain = pa.large_string()
    elif pa.types.is_binary_view(t):
        plain = pa.large_binary()
    else:
        return arr
    try:
        arr.validate(full=True)
    except pa.ArrowException as exc:
        raise DataError(f"{what}: not a valid Arrow {t} array ({exc}); nothing was "
                        "privatised") from None
    return arr.cast(plain)


class Encoder:
    """Map chunks of values to input indices; collect nulls/unknowns over all chunks.

    Examples
    --------
    >>> import numpy as np
    >>> enc = Encoder(["low", "mid", "high"])
    >>> enc.encode_numpy(np.array(["high", "low", "low"], dtype=object)).tolist()
    [2, 0, 0]

    A value that is not a label (or a null) is counted, over every chunk, and reported once:

    >>> enc.encode_numpy(np.array(["mid", "top", None, "top"], dtype=object)) is None
    True
    >>> enc.failed, enc.nulls, dict(enc.unknown)
    (True, 1, {'top': 2})

    The matching is the libraries' own: integer labels in a short range by a table
    lookup, Arrow arrays by ``pyarrow.compute.index_in`` (a dictionary array by its
    dictionary; text without nulls by its views, cast to ``string_view`` when it is not,
    :class:`ViewKeys`, where every record is one of text labels of at most 12 bytes),
    Python strings and anything else by pandas ``Index.get_indexer``.

    With :attr:`text_labels` set (a column read from CSV text), an Arrow text value is
    matched to a number or boolean label by the one text pmlkit writes for that label
    (Arrow's cast to text: ``7``, ``1.5``, ``true``); another spelling (``007``, ``7.0``)
    is an unknown value.
    """

    #: match Arrow text values to number and boolean labels by their written text
    text_labels = False

    def __init__(self, labels: Sequence[Any]) -> None:
        self.labels = tuple(labels)
        self.kind = label_kind(self.labels)
        self.range_labels = self.kind == "int" and self.labels == tuple(range(len(labels)))
        self.nulls = 0
        self.unknown: Counter[Any] = Counter()
        self._index: Any = None
        self._object_index: Any = None
        self._lookup: tuple[int, NDArray[np.intp]] | tuple[()] | None = None
        self._keys: tuple[ViewKeys | None] | None = None
        self._texts: tuple[tuple[str, ...] | None] | None = None

    @property
    def failed(self) -> bool:
        return bool(self.nulls or self.unknown)

    def _pd_index(self) -> Any:
        if self._index is None:
            pd = require("pandas", "encoding labels of an object/string array")

            self._index = pd.Index(list(self.labels),
                                   dtype=object if self.kind in ("bool", "mixed", "object")
                                   else None)
        return self._index

    def _kind_ok(self, dtype_kind: str) -> bool:
        """Whether values of numpy dtype kind can ever equal the labels."""
        if dtype_kind == "b":
            return self.kind == "bool"
        if dtype_kind in "iuf":
            return self.kind in ("int", "float", "mixed")
        if dtype_kind in "US":
            return self.kind in ("str", "mixed")
        return True

    def encode_numpy(self, values: NDArray[Any]) -> NDArray[np.intp] | None:
        """Indices (intp) of a 1-D numpy chunk, or None after recording its problems."""
        kind = values.dtype.kind
        if kind in "iu" and self.kind == "int" and _fits_int64(values) \
                and (lookup := self._int_lookup()) is not None:
            # integer labels in a short range: one bounds check and one table lookup
            offset, table = lookup
            codes = values.astype(np.intp, copy=False)
            if offset:
                codes = codes - offset
            n = table.shape[0]
            if codes.size == 0 or (codes.min() >= 0 and codes.max() < n):
                if self.range_labels:
                    return codes
                mapped = table.take(codes)
                if mapped.size == 0 or mapped.min() >= 0:
                    return mapped
            inside = (codes >= 0) & (codes < n)
            mapped = np.full(codes.shape[0], -1, dtype=np.intp)
            mapped[inside] = table[codes[inside]]
            bad = mapped < 0
            self._record(values[bad], np.zeros(int(bad.sum()), dtype=bool))
            return None
        codes = self._numpy_codes(values)
        bad = codes < 0
        if not bad.any():
            return codes
        self._record(values[bad], null_mask(values[bad]))
        return None

    def _int_lookup(self) -> tuple[int, NDArray[np.intp]] | None:
        """:func:`int_label_table` of the labels (integer labels), kept."""
        if self._lookup is None:
            self._lookup = int_label_table(self.labels) or ()
        return self._lookup or None

    def _numpy_codes(self, values: NDArray[Any]) -> NDArray[np.intp]:
        """Indices of a numpy chunk's values, -1 for nulls, unknown values and values of
        another kind (a bool never matches an int label, bytes never match a str)."""
        kind = values.dtype.kind
        if kind == "b" and self.kind == "bool":
            lookup = np.full(2, -1, dtype=np.intp)
            for i, lab in enumerate(self.labels):
                lookup[int(lab)] = i
            return lookup[values.astype(np.intp)]
        if not self._kind_ok(kind):
            return np.full(values.shape[0], -1, dtype=np.intp)
        if kind == "O" and self.kind == "str":
            return self._object_codes(values)
        codes = np.asarray(self._pd_index().get_indexer(values), dtype=np.intp)
        if kind == "O" and self.kind != "mixed":
            codes = self._fix_object_kinds(values, codes)
        return codes

    def _object_codes(self, values: NDArray[Any]) -> NDArray[np.intp]:
        """Indices of an object array's values for text labels: pandas' hash table of
        the labels (an object-dtype ``Index``), each value looked up by its own hash and
        ``==``, as a ``dict`` of the labels would (``b"a"`` is never ``"a"``, a null is
        -1). Both sides are wrapped as object ``Index`` objects without a copy, so pandas
        infers no dtype of its own (an inferred string dtype would copy every value:
        about 7x the time). A ``str`` (subclass) value that this misses, one hashed
        unlike its text by its own ``__hash__``, is then matched by its text, as in an
        Arrow string array."""
        pd = require("pandas", "encoding labels of an object/string array")

        if self._object_index is None:
            self._object_index = pd.Index(list(self.labels), dtype=object)
        target = pd.Index(values, dtype=object, copy=False)
        codes = np.asarray(self._object_index.get_indexer(target), dtype=np.intp)
        miss = np.flatnonzero(codes < 0)
        if miss.size:
            import pyarrow as pa

            missed = values[miss]
            is_str = np.fromiter((isinstance(v, str) for v in missed), dtype=bool,
                                 count=missed.shape[0])
            if is_str.any():
                text = pa.array(missed[is_str], type=pa.large_string(), from_pandas=False)
                codes[miss[is_str]] = self._arrow_codes(text)
        return codes

    def _fix_object_kinds(self, values: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """In object arrays True == 1 hashes alike: a bool never matches an int label (and
        an int never matches a bool label)."""
        if self.kind not in ("bool", "int", "float"):
            return codes
        is_bool = np.fromiter((isinstance(v, bool | np.bool_) for v in values), dtype=bool,
                              count=values.shape[0])
        wrong = (codes >= 0) & (is_bool != (self.kind == "bool"))
        if not wrong.any():
            return codes
        codes = codes.copy()
        codes[wrong] = -1
        return codes

    def take_problems(self) -> tuple[int, Counter[Any]]:
        """The problems recorded so far (nulls, unknown values with their counts),
        removed from this encoder: a chunk's own, for :meth:`add_problems` of the
        encoder that reports them (chunks merged in record order give the counts and
        the order of one encoder)."""
        out = (self.nulls, self.unknown)
        self.nulls, self.unknown = 0, Counter()
        return out

    def add_problems(self, problems: tuple[int, Counter[Any]]) -> None:
        """Problems :meth:`take_problems` took from an encoder, added to this one's."""
        self.nulls += problems[0]
        for v, c in problems[1].items():
            self.unknown[v] += c

    def _record(self, bad_values: np.ndarray, null: np.ndarray) -> None:
        self.nulls += int(null.sum())
        rest = bad_values[~null]
        if rest.size:
            pd = require("pandas", "encoding labels of an object/string array")

            vc = pd.Series(rest, dtype=object).value_counts(dropna=False)
            for v, c in vc.items():
                self.unknown[v] += int(c)

    def encode_arrow(self, chunk: Any) -> np.ndarray | None:
        """Indices of a pyarrow Array chunk (dictionary arrays encode their dictionary)."""
        import pyarrow as pa

        if pa.types.is_dictionary(chunk.type):
            # the dictionary is matched once; rows only gather its codes. Dictionary
            # entries no row uses may be unknown: only the rows decide
            if chunk.null_count == 0:
                dict_codes = self._arrow_codes(chunk.dictionary)
                codes: NDArray[np.int32] = dict_codes.take(
                    np.asarray(chunk.indices.to_numpy(zero_copy_only=False), dtype=np.intp))
                if codes.size == 0 or codes.min() >= 0:
                    return codes
            # decode for a complete count of the problems
            return self._encode_arrow_plain(chunk.dictionary_decode())
        return self._encode_arrow_plain(chunk)

    def encode_arrow_values(self, arr: Any) -> np.ndarray | None:
        saved = (self.nulls, Counter(self.unknown))
        out = self._encode_arrow_plain(arr)
        if out is None:
            self.nulls, self.unknown = saved
        return out

    def label_texts(self) -> tuple[str, ...] | None:
        """The text each label is matched by in CSV text (:attr:`text_labels`):
        :func:`label_texts` of the labels, computed once."""
        if self._texts is None:
            self._texts = (label_texts(self.labels),)
        return self._texts[0]

    def _view_keys(self) -> ViewKeys | None:
        """:class:`ViewKeys` of the labels (text labels of at most 12 bytes), kept."""
        if self._keys is None:
            self._keys = (ViewKeys.build(self.labels) if self.kind == "str" else None,)
        return self._keys[0]

    def _encode_arrow_plain(self, arr: Any) -> np.ndarray | None:
        import pyarrow as pa

        t = arr.type
        if (pa.types.is_string_view(t) or pa.types.is_string(t)
                or pa.types.is_large_string(t)) and arr.null_count == 0 \
                and (keys := self._view_keys()) is not None:
            # text as views (Arrow's cast of plain text to views is one pass over the
            # offsets, far cheaper than its hashing of every value in index_in)
            import pyarrow.compute as pc

            try:
                views = arr if pa.types.is_string_view(t) else pc.cast(arr, pa.string_view())
            except pa.ArrowException:  # (over 2 GiB of text: a view's offset is 32-bit)
                views = None
            viewed = None if views is None else keys.codes(views)
            if viewed is not None and (viewed.size == 0 or int(viewed.min()) >= 0):
                return viewed  # every value a label: its codes; else the general path
        arr = plain_layout(arr)  # (the library calls below read every value)
        found = self._arrow_index(arr)
        if found is not None and found.null_count == 0:
            # every value is a label: Arrow's own int32 indices, without a copy (the
            # draw widens them block by block)
            codes: NDArray[np.int32] = found.to_numpy(zero_copy_only=False)
            return codes
        bad = self._arrow_codes(arr, found) < 0
        nullmask = arr.is_null().to_numpy(zero_copy_only=False)
        bad_vals = np.asarray(arr.filter(pa.array(bad)).to_pylist(), dtype=object)
        self._record(bad_vals, nullmask[bad])
        return None

    def _arrow_index(self, arr: Any) -> Any:
        """``pyarrow.compute.index_in`` of a plain Arrow array's values in the labels (an
        Int32Array, null for nulls and unknown values), or None where no value of its
        type can be a label."""
        import pyarrow as pa
        import pyarrow.compute as pc

        t = arr.type
        ok = ((pa.types.is_boolean(t) and self.kind == "bool")
              or ((pa.types.is_integer(t) or pa.types.is_floating(t))
                  and self.kind in ("int", "float"))
              or ((pa.types.is_string(t) or pa.types.is_large_string(t)
                   or pa.types.is_string_view(t)) and self.kind == "str"))
        value_set = None
        if ok:
            try:
                value_set = pa.array(list(self.labels), type=t)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError):
                value_set = None
        elif self.text_labels and (texts := self.label_texts()) is not None and (
                pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_string_view(t)):
            # (a number's own text; Arrow writes the same when the output is text)
            value_set = pa.array(list(texts), type=pa.string() if pa.types.is_string_view(t)
                                 else t)
        if value_set is None:
            return None
        if pa.types.is_string_view(t):  # (a dictionary's values: not yet plain)
            arr = plain_layout(arr)
            value_set = value_set.cast(pa.large_string())
        return pc.index_in(arr, value_set=value_set)

    def _arrow_codes(self, arr: Any, found: Any = None) -> NDArray[np.int32]:
        """Indices of a plain Arrow array's values, -1 for nulls and unknown values
        (``found``: its :meth:`_arrow_index` when already computed)."""
        if found is None:
            found = self._arrow_index(arr)
        if found is None:
            return np.full(len(arr), -1, dtype=np.int32)
        codes: NDArray[np.int32] = found.fill_null(-1).to_numpy(zero_copy_only=False)
        return codes

    def error(self, what: str = "values") -> DataError:
        parts = []
        if self.unknown:
            common = self.unknown.most_common()
            v, c = common[0]
            shown = self.labels[:20]
            spelled = ""
            texts = self.label_texts() if self.text_labels and self.kind != "str" else None
            if texts is not None:
                # matched by the text pmlkit writes for each label: show those texts
                shown = texts[:20]
                spelled = ", each matched by this text only"
            msg = (f"{what}: value {fmt(v)} appears in {c} row{'s' if c != 1 else ''} but is "
                   f"not an input label of the mechanism (input labels"
                   f"{spelled}: {', '.join(map(repr, shown))}"
                   f"{', ...' if len(self.labels) > 20 else ''})")
            if len(common) > 1:
                others = ", ".join(f"{fmt(u)} ({n} rows)" for u, n in common[1:6])
                more = f" and {len(common) - 6} more" if len(common) > 6 else ""
                msg += f"; other unknown values: {others}{more}"
            parts.append(msg)
        if self.nulls:
            verb = "rows hold" if self.nulls != 1 else "row holds"
            parts.append(f"{what}: {self.nulls} {verb} a "
                         "null/missing value (None/NaN/NA), which cannot be privatised; drop "
                         "or impute them explicitly first")
        return DataError("; ".join(parts) + "; nothing was privatised")

#: the Arrow types of the label kinds matched by their text (:attr:`Encoder.text_labels`)
_TEXT_TYPES = {"int": "int64", "float": "float64", "bool": "bool_"}


def int_label_table(labels: Sequence[Any]) -> tuple[int, NDArray[np.intp]] | None:
    """``(offset, table)`` with ``table[v - offset]`` the index of the integer label ``v``
    among ``labels`` (-1 for a value in the range that is no label), when the labels
    span a short range (at most ``4 N + 1024`` values, within ``+-2**62``); else None.
    (Internal: the release paths' lookup of integer labels.)

    Examples
    --------
    >>> offset, table = int_label_table([12, 10, 15])
    >>> offset, table.tolist()
    (10, [1, -1, 0, -1, -1, 2])
    >>> int_label_table([0, 10**9]) is None
    True
    """
    labs = [int(v) for v in labels]
    if not labs:
        return None
    lo, hi = min(labs), max(labs)
    if hi - lo > 4 * len(labs) + 1024 or lo < -(2**62) or hi > 2**62:
        return None
    table = np.full(hi - lo + 1, -1, dtype=np.intp)
    table[np.asarray(labs, dtype=np.int64) - lo] = np.arange(len(labs))
    return lo, table


def _fits_int64(values: NDArray[Any]) -> bool:
    """Whether integer values convert to int64 unchanged (uint64 above 2**63 - 1 would
    wrap to negative numbers, which could then look like negative labels)."""
    if values.dtype.kind != "u" or values.dtype.itemsize < 8 or values.size == 0:
        return True
    return bool(values.max() <= np.iinfo(np.int64).max)


def strings_to_arrow(values: NDArray[Any]) -> Any:
    """An Arrow string array of an object array holding only ``str`` (and None), else
    None (bytes, numbers, NaN or mixed objects keep the generic path, so a ``b"a"`` never
    matches the label ``"a"``).

    Examples
    --------
    >>> import numpy as np
    >>> strings_to_arrow(np.array(["a", None, "b"], dtype=object)).to_pylist()
    ['a', None, 'b']
    >>> strings_to_arrow(np.array(["a", b"a"], dtype=object)) is None  # bytes are not str
    True
    """
    pd = require("pandas", "encoding labels of an object/string array")
    import pyarrow as pa

    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty"):
        return None
    try:  # a NaN among the strings fails here and keeps the generic path
        return pa.array(values, type=pa.large_string(), from_pandas=False)
    except (pa.ArrowException, TypeError, ValueError):
        return None


def null_mask(values: NDArray[Any]) -> NDArray[np.bool_]:
    """Which values are null (None, NaN, NaT, pandas NA).

    Examples
    --------
    >>> import numpy as np
    >>> null_mask(np.array(["a", None, float("nan"), 0], dtype=object)).tolist()
    [False, True, True, False]
    """
    pd = require("pandas", "encoding labels of an object/string array")

    return np.asarray(pd.isna(values), dtype=bool)


def output_label_array(labels: Sequence[Any], like_dtype: np.dtype[Any] | None = None
                       ) -> NDArray[Any]:
    """The output labels as an array to index with drawn output indices: the element type
    of a release (one owner for :meth:`pmlkit.Mechanism.apply` and :func:`pmlkit.privatize`).

    Object input (``like_dtype`` of kind ``"O"``) gets object output; otherwise labels of
    one native kind become a native array, except that labels numpy's fixed-width str/bytes
    dtypes would change (a trailing NUL character) stay Python objects.

    Examples
    --------
    >>> output_label_array(["F", "M"]).dtype.kind
    'U'
    >>> output_label_array(["F", "M"], np.dtype(object)).dtype.kind
    'O'
    >>> output_label_array(["a\\x00", "b"]).dtype.kind   # kept exactly, not truncated
    'O'
    """
    lab = list(labels)
    if like_dtype is None or like_dtype.kind != "O":
        if label_kind(lab) not in ("mixed", "object"):
            arr = np.asarray(lab)
            # numpy's fixed-width str/bytes dtypes drop trailing NUL characters ('\x00'
            # would come back as ''): keep such labels as Python objects
            if arr.dtype.kind not in "US" or arr.tolist() == lab:
                return arr
    out = np.empty(len(lab), dtype=object)
    out[:] = lab
    return out


def arrow_take(labels: Any, idx: NDArray[Any],
               counts: NDArray[np.int64] | None = None) -> Any:
    """``labels.take(idx)`` for a pyarrow array of labels and label indices: Arrow's own
    take; ``string_view``/``binary_view`` labels (which it cannot take on every
    version) by their views, or with nulls or chunked through ``large_string``/
    ``large_binary`` and back. ``counts`` (an int64 array, one entry per label): how many
    records get each label is added to it.

    Raises
    ------
    ValidationError
        An index outside ``0..len(labels) - 1``, or view labels Arrow's full validation
        refuses.

    Examples
    --------
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> arrow_take(pa.array(["no", "yes"]), np.array([1, 0, 1])).to_pylist()
    ['yes', 'no', 'yes']
    """
    import pyarrow as pa

    idx = np.asarray(idx)
    k = len(labels)
    if idx.ndim != 1 or (idx.dtype.kind not in "iu" and idx.size):
        raise ValidationError(f"idx must be a 1-D array of integer label indices, got an "
                              f"array of dtype {idx.dtype} and shape {idx.shape}")
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= k):
        first = int(np.flatnonzero((idx < 0) | (idx >= k))[0])  # the first, in order
        raise ValidationError(f"idx must hold indices of the labels in 0..{k - 1}, got "
                              f"{int(idx[first])}")
    t = labels.type
    if _is_view_type(t):
        # a view names a buffer and a range in it, and both takes trust them: the labels
        # fully validated first (every view taken is one Arrow has checked)
        try:
            labels.validate(full=True)
        except pa.ArrowException as exc:
            raise ValidationError(f"labels: not a valid Arrow {t} array ({exc})") from None
    if counts is not None:
        counts += count_outputs(idx, k)[:counts.shape[0]]
    if _is_view_type(t):
        if isinstance(labels, pa.Array) and k and labels.null_count == 0 \
                and sys.byteorder == "little":
            return _view_take(labels, idx)
        # (a ChunkedArray, or labels with nulls: through the plain layout, bytes as bytes)
        plain = pa.large_string() if pa.types.is_string_view(t) else pa.large_binary()
        return labels.cast(plain).take(idx).cast(t)
    return labels.take(idx)


def _is_view_type(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string_view(t) or pa.types.is_binary_view(t))


#: Records whose views :func:`_view_take` copies at a time (their indices widened to intp
#: a block at a time, never as a whole).
_TAKE_BLOCK = 1 << 16


def _view_take(labels: Any, idx: NDArray[Any]) -> Any:
    """:func:`arrow_take` of ``string_view``/``binary_view`` labels without nulls, for
    indices already checked: each record's 16-byte view is the view of its label (copied
    by numpy's take into a buffer of Arrow's own pool), so the output shares the labels'
    data buffers and copies no text. The labels are fully validated (by the caller):
    every view copied is one Arrow has checked."""
    import pyarrow as pa

    k, off, n = len(labels), labels.offset, idx.shape[0]
    views = np.frombuffer(labels.buffers()[1], dtype=np.uint64,
                          count=2 * (off + k)).reshape(-1, 2)[off:]
    buf = pa.allocate_buffer(16 * n)  # (from the pool: memory it keeps, no fresh pages)
    out = np.frombuffer(buf, dtype=np.uint64).reshape(-1, 2)
    for start in range(0, n, _TAKE_BLOCK):  # (indices checked: "clip" never moves one)
        views.take(idx[start:start + _TAKE_BLOCK], axis=0, out=out[start:start + _TAKE_BLOCK],
                   mode="clip")
    return pa.Array.from_buffers(labels.type, n, [None, buf, *labels.buffers()[2:]])


def count_outputs(idx: NDArray[Any], m: int) -> NDArray[np.int64]:
    """How many of the indices ``idx`` (each in ``0..m-1``) equal each of ``0..m-1``
    (``np.bincount`` with ``minlength=m``).

    Examples
    --------
    >>> import numpy as np
    >>> count_outputs(np.array([2, 0, 2]), 4).tolist()
    [1, 0, 2, 0]
    """
    if idx.dtype.itemsize < np.dtype(np.intp).itemsize and idx.shape[0] > _COUNT_BLOCK:
        # narrow codes counted a block at a time (bincount widens its input to intp: a
        # whole-array copy 8 bytes per record)
        total = np.zeros(m, dtype=np.int64)
        for start in range(0, idx.shape[0], _COUNT_BLOCK):
            total += np.bincount(idx[start:start + _COUNT_BLOCK], minlength=m)[:m]
        return total
    return np.bincount(idx, minlength=m)[:m].astype(np.int64, copy=False)
