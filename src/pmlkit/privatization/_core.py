"""The sampling engine: map each input label to an output label drawn from its row.

Algorithm (per record, vectorised over chunks of records)
---------------------------------------------------------
For every row ``i`` of the ``N x M`` mechanism ``W`` an alias table (Walker 1977, Vose
1991) is built once over ``C = 2**b >= M`` columns (``W`` padded with zero columns):
``prob[i, j]`` in ``[0, 1]`` and ``alias[i, j]`` such that drawing ``j`` uniformly among the
``C`` columns and keeping it with probability ``prob[i, j]`` (else taking ``alias[i, j]``)
yields output ``j`` with probability exactly ``W[i, j]`` (up to float rounding, ~1e-16). One
random 64-bit word per record suffices: its top ``b`` bits are ``j`` (exactly uniform), its
other ``64 - b`` bits a coin compared with ``prob[i, j]``. Outputs with ``W[i, j] = 0`` are
never produced (their ``prob`` is 0 and no alias points to them). See
:class:`pmlkit.sampler.AliasSampler`.

Records are processed in chunks of :data:`CHUNK_ROWS` rows so the temporaries stay
bounded (a few tens of MB) whatever the input size.

Labels
------
Inputs are matched against the mechanism's ``input_labels`` by value *and kind* (bool
labels never match integers and vice versa). A null (None, NaN, pandas NA, Arrow null)
or a value that is not an input label raises :class:`~pmlkit.errors.DataError` naming the
value and the number of rows holding it (over the whole input). Nothing is dropped or
mapped silently; row order and count are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._encoding import int_label_table
from .._mechanism_file import fast_digest
from .._optional import loaded
from ..errors import DataError, ValidationError
from ..mechanism import Mechanism, as_matrix
from ..rng import RandomSource
from ..sampler import (
    AliasSampler,
    Encoder,
    arrow_take,
    count_outputs,
    draw_mapped,
    label_kind,
    output_label_array,
    run_chunks,
)
from ._categories import (
    category_code_dtype,
    from_codes,
    in_categories,
    output_categorical,
    output_categories,
)

__all__ = [
    "CHUNK_ROWS",
    "PrivatizationReport",
    "arrow_output_type",
    "as_mechanism_object",
    "check_column_names",
    "columns_into",
    "draw_in_chunks",
    "mech_digest",
    "run_local",
]

#: Records processed per chunk (bounded memory).
CHUNK_ROWS = 1 << 20

def as_mechanism_object(mechanism: Any) -> Mechanism:
    """A :class:`~pmlkit.Mechanism` from a Mechanism or a row-stochastic 2-D array
    (labels ``0..N-1`` / ``0..M-1``).

    Examples
    --------
    >>> m = as_mechanism_object([[0.9, 0.1], [0.2, 0.8]])
    >>> m.input_labels, m.output_labels
    ((0, 1), (0, 1))
    """
    if isinstance(mechanism, Mechanism):
        if mechanism.guarantee is not None and not mechanism.certified:
            # a release records the guarantee it was made under (manifest, report): one
            # that does not hold for this matrix would be signed as if it did
            raise ValidationError(
                "mechanism states a guarantee that does not hold for its matrix (its worst "
                f"case over the stated set exceeds eps = {mechanism.guarantee.eps!r}), so "
                "a release would record a false guarantee; build the Mechanism without "
                "the guarantee, or with one pmlkit certifies (pmlkit.worstcase."
                "certified_bound gives the eps this matrix can promise)")
        return mechanism
    if isinstance(mechanism, Mapping):
        raise ValidationError(
            "mechanism must be one pmlkit.Mechanism or a row-stochastic 2-D array, got a "
            f"mapping of {len(mechanism)} column(s) to mechanisms; call privatize once per "
            "column (columns=NAME), or give the mapping to privatize_file")
    return Mechanism(as_matrix(mechanism))




@dataclass(frozen=True)
class PrivatizationReport:
    """What a privatisation did: how many rows, with which mechanism and randomness.

    Attributes
    ----------
    rows
        Number of records privatised (``None`` for a lazy Dask result).
    seeded
        ``True`` if the randomness was seeded (reproducible research run, *not* for
        protecting people); ``False`` for the secure default.
    rng
        Description of the random source (never its key or state).
    mechanism_sha256
        The digest of the mechanism's JSON document.
    columns
        The columns privatised (``()`` for a single array/Series).
    output_counts
        Count of each output label (``None`` when not computed).

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> _, rep = pmlkit.privatize_with_report(np.eye(2), np.array([0, 1, 1]))
    >>> rep.rows, rep.seeded, rep.output_counts
    (3, False, {0: 1, 1: 2})
    >>> sorted(rep.to_dict())
    ['columns', 'mechanism_sha256', 'output_counts', 'rng', 'rows', 'seeded']
    """

    rows: int | None
    seeded: bool
    rng: str
    mechanism_sha256: str
    columns: tuple[str, ...] = ()
    output_counts: dict[Any, int] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "seeded": self.seeded, "rng": self.rng,
                "mechanism_sha256": self.mechanism_sha256, "columns": list(self.columns),
                "output_counts": None if self.output_counts is None
                else {str(k): v for k, v in self.output_counts.items()}}


def _take_labels(mech: Mechanism, like_dtype: np.dtype | None,
                 idx: NDArray[np.intp]) -> NDArray[Any]:
    """The output labels of output indices ``idx`` as a numpy array (``idx`` itself when
    the labels are ``0..M-1``: no copy)."""
    labels = output_label_array(mech.output_labels, like_dtype)
    if labels.dtype == idx.dtype and np.array_equal(labels, np.arange(labels.shape[0])):
        return idx
    return labels.take(idx)  # (numpy's checked take)


def _privatize_numpy(mech: Mechanism, sampler: AliasSampler, values: np.ndarray,
                     generator: np.random.Generator, what: str) -> np.ndarray:
    """Output indices of a 1-D numpy array."""
    if values.ndim != 1:
        raise ValidationError(f"values must be 1-D, got an array of shape {values.shape}")
    enc = Encoder(mech.input_labels)
    n = values.shape[0]
    idx = np.empty(n, dtype=np.intp)
    if enc.range_labels and values.dtype.kind in "iu":
        # labels 0..N-1: the values are the input indices. The draw checks every code
        # before any word is drawn: no pass of our own for the range. A value outside it
        # stops the draw, nothing is returned, and the encoder then counts the problems
        # over the whole array.
        try:
            sampler.draw(values, generator, out=idx)
        except ValidationError:
            starts = range(0, n, CHUNK_ROWS)
            for start in starts:
                enc.encode_numpy(values[start:start + CHUNK_ROWS])
            if enc.failed:
                raise enc.error(what) from None
            raise
        return idx
    if values.dtype.kind in "iu" and enc.kind == "int" \
            and (lookup := int_label_table(mech.input_labels)) is not None:
        # integer labels in a short range: each value's input read from the table of
        # the range as it is drawn (-1: no label); a value outside it stops the draw
        # with nothing drawn, and the encoder then counts the problems
        if draw_mapped(sampler, values, lookup[0], lookup[1], generator, idx):
            return idx
        for start in range(0, n, CHUNK_ROWS):
            enc.encode_numpy(values[start:start + CHUNK_ROWS])
        if enc.failed:
            raise enc.error(what)
        raise AssertionError("the draw refused a value that is an input label")

    chunks = [values[start:start + CHUNK_ROWS] for start in range(0, n, CHUNK_ROWS)]
    _encode_and_draw(mech, chunks, generator, Encoder.encode_numpy,
                     _drawing_into(sampler, idx), what)
    return idx


def _encode_and_draw(mech: Mechanism, chunks: Sequence[Any],
                     generator: np.random.Generator,
                     encode: Callable[[Encoder, Any], NDArray[Any] | None],
                     draw: Callable[[NDArray[Any], np.random.Generator, int], None],
                     what: str) -> None:
    """Every chunk's labels encoded (``encode(encoder, chunk)``) and, while every chunk
    before it was all labels, its outputs drawn and written (``draw(codes, generator,
    start)``, ``start`` the chunk's first record), in record order
    (:func:`pmlkit.sampler.run_chunks`). Every chunk is encoded, so the problems are counted over
    the whole input; they are merged in record order and raised as one
    :class:`~pmlkit.errors.DataError` (nothing returned), as a single pass reports them."""
    problems: list[tuple[int, Any] | None] = [None] * len(chunks)

    def encode_chunk(i: int, enc: Encoder) -> NDArray[Any] | None:
        codes = encode(enc, chunks[i])
        if codes is None:
            problems[i] = enc.take_problems()
        return codes

    run_chunks([len(chunk) for chunk in chunks], generator, encode_chunk,
               lambda i, start, codes, gen: draw(codes, gen, start),
               lambda: Encoder(mech.input_labels))
    found = [chunk for chunk in problems if chunk is not None]
    if found:  # (the reporting encoder built only when there is something to report)
        report = Encoder(mech.input_labels)
        for chunk in found:
            report.add_problems(chunk)
        if report.failed:
            raise report.error(what)


def draw_in_chunks(sampler: AliasSampler, codes: NDArray[Any], generator: np.random.Generator,
                   out: NDArray[Any], remap: NDArray[Any] | None = None,
                   out_codes: NDArray[Any] | None = None) -> None:
    """``sampler.draw(codes, generator, out=out, remap=remap, out_codes=out_codes)`` in
    chunks of :data:`CHUNK_ROWS` records, in order: the same outputs, and the generator
    moved on alike."""
    n = codes.shape[0]
    sizes = [min(CHUNK_ROWS, n - start) for start in range(0, n, CHUNK_ROWS)]

    def draw(i: int, start: int, chunk: NDArray[Any], gen: np.random.Generator) -> None:
        sampler.draw(chunk, gen, out=out[start:start + chunk.shape[0]], remap=remap,
                     out_codes=out_codes)

    run_chunks(sizes, generator, lambda i, own: codes[i * CHUNK_ROWS:(i + 1) * CHUNK_ROWS],
               draw, lambda: None)


def _drawing_into(sampler: AliasSampler, idx: NDArray[Any]
                  ) -> Callable[[NDArray[Any], np.random.Generator, int], None]:
    """The ``draw`` of :func:`_encode_and_draw` that writes a chunk's output indices into
    ``idx`` from its first record on (of ``idx``'s dtype: intp, or a narrower integer
    holding every output index, written as such by the draw itself)."""
    out_codes = None if idx.dtype == np.intp \
        else np.arange(sampler.n_outputs, dtype=idx.dtype)

    def draw(codes: NDArray[Any], gen: np.random.Generator, start: int) -> None:
        sampler.draw(codes, gen, out=idx[start:start + codes.shape[0]], out_codes=out_codes)

    return draw


def check_text_labels(mech: Mechanism, what: str = "mechanism") -> None:
    """Refuse a mechanism whose text output labels UTF-8 cannot encode (a lone surrogate
    such as ``"\\ud800"`` is a Python string but no Arrow string, CSV or Parquet cell can
    hold it), before anything is drawn or written.

    Examples
    --------
    >>> import pmlkit
    >>> m = pmlkit.Mechanism([[0.5, 0.5], [0.5, 0.5]], ("a", "b"), ("ok", "\\ud800"))
    >>> check_text_labels(m)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: mechanism: output label '\\ud800' cannot be encoded as UTF-8, ...
    """
    for label in mech.output_labels:
        if isinstance(label, str):
            try:
                label.encode("utf-8")
            except UnicodeEncodeError:
                raise ValidationError(
                    f"{what}: output label {label!r} cannot be encoded as UTF-8, which Arrow "
                    "text, CSV and Parquet outputs need; rename it") from None


def _privatize_arrow(mech: Mechanism, sampler: AliasSampler, arr: Any,
                     generator: np.random.Generator, what: str, *, count: bool = False
                     ) -> tuple[Any, NDArray[np.int64] | None]:
    """A pyarrow Array or ChunkedArray privatised (same chunking): (result, how many
    records got each output when ``count``, else None)."""
    import pyarrow as pa

    check_text_labels(mech)
    chunked = isinstance(arr, pa.ChunkedArray)
    pieces = arr.chunks if chunked else [arr]
    out_type = arrow_output_type(mech, arr.type)
    out_labels = pa.array(list(mech.output_labels), type=out_type)
    idx = _arrow_indices(mech, sampler, pieces, generator, what)
    results = []
    pos = 0
    for piece in pieces:
        n = len(piece)
        # one take per piece (taking per chunk and concatenating copies the strings twice)
        results.append(_take_arrow(out_labels, idx[pos:pos + n]))
        pos += n
    counts = count_outputs(idx, mech.n_outputs) if count else None
    return (pa.chunked_array(results, type=out_type) if chunked else results[0]), counts


def _take_arrow(labels: Any, idx: NDArray[np.intp]) -> Any:
    """``labels.take(idx)`` for a pyarrow array of output labels and the sampler's output
    indices: Arrow's own take, which checks every index itself (no range pass of ours,
    as :func:`pmlkit.sampler.arrow_take` makes for a caller's indices); ``string_view``
    labels by that function, which takes their views."""
    import pyarrow as pa

    if pa.types.is_string_view(labels.type):
        return arrow_take(labels, idx)
    return labels.take(idx)


def _arrow_indices(mech: Mechanism, sampler: AliasSampler, pieces: Sequence[Any],
                   generator: np.random.Generator, what: str) -> NDArray[Any]:
    """Output indices for pyarrow arrays (all pieces, in order), drawn chunk by chunk of
    CHUNK_ROWS records of each piece straight into one array (no concatenation), of the
    narrowest signed integer type holding them (Arrow's take reads any integer
    indices)."""
    n = sum(len(piece) for piece in pieces)
    idx = np.empty(n, dtype=category_code_dtype(mech.n_outputs))
    chunks = [piece.slice(start, CHUNK_ROWS) for piece in pieces
              for start in range(0, len(piece), CHUNK_ROWS)]
    _encode_and_draw(mech, chunks, generator, Encoder.encode_arrow,
                     _drawing_into(sampler, idx), what)
    return idx


def arrow_output_type(mech: Mechanism, in_type: Any) -> Any:
    """Arrow type for the output labels: the input's type when the labels fit it.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pmlkit
    >>> m = pmlkit.Mechanism([[0.5, 0.5], [0.5, 0.5]], ("a", "b"), ("a", "b"))
    >>> arrow_output_type(m, pa.large_string()), arrow_output_type(m, pa.int64())
    (DataType(large_string), DataType(string))
    """
    import pyarrow as pa

    base = in_type.value_type if pa.types.is_dictionary(in_type) else in_type
    try:
        pa.array(list(mech.output_labels), type=base)
        if label_kind(mech.output_labels) == label_kind(mech.input_labels):
            return base
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
        pass
    try:
        return pa.array(list(mech.output_labels)).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
        # labels of several kinds (0, 1 and "(missing)"): each label's own text
        from .._encoding import label_texts

        if label_texts(mech.output_labels) is None:
            raise ValidationError("the mechanism's output labels have no common Arrow type "
                                  "and no distinct texts; relabel them") from None
        return pa.string()


def _privatize_pandas(mech: Mechanism, sampler: AliasSampler, s: Any,
                      generator: np.random.Generator, what: str
                      ) -> tuple[Any, NDArray[np.intp], NDArray[np.int64] | None]:
    """A pandas Series privatised: (result, output indices, output counts when the take
    counted them on the way, else None)."""
    import pandas as pd

    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.cat.categories
        enc = Encoder(mech.input_labels)
        cat_codes = enc.encode_numpy(np.asarray(cats, dtype=object) if cats.dtype == object
                                     else cats.to_numpy())
        raw = np.asarray(s.array.codes)  # (a view: ``s.cat.codes`` copies them)
        if cat_codes is None or (raw.size and raw.min() < 0):
            # count problems over the actual values (categories may be unused)
            vals = s.to_numpy(dtype=object, na_value=None)
            idx = _privatize_numpy(mech, sampler, vals, generator, what)
        else:
            # categories matched once; rows keep their narrow (int8/int16) codes, which
            # the sampler maps through the categories' input indices as it draws. The
            # outputs are written straight as the result's codes: those of the input's
            # declared (ordered) categories when every output label is one of them, else
            # of the output labels, of the width pandas gives them (no array of 8-byte
            # indices)
            where = output_categories(mech, s.dtype)
            if where is not None:
                code_type = category_code_dtype(len(cats))
                codes = np.empty(raw.shape[0], dtype=code_type)
                draw_in_chunks(sampler, raw, generator, codes, cat_codes,
                               where.astype(code_type))
                cat = from_codes(codes, dtype=s.dtype)
                # each output's records: those of its category (distinct categories)
                got = count_outputs(codes, len(cats))[where]
                return pd.Series(cat, index=s.index, name=s.name, copy=False), codes, got
            code_type = category_code_dtype(mech.n_outputs)
            idx = np.empty(raw.shape[0], dtype=code_type)
            draw_in_chunks(sampler, raw, generator, idx, cat_codes,
                           np.arange(mech.n_outputs, dtype=code_type))
        kept = in_categories(mech, s.dtype, idx)
        if kept is not None:  # the input's declared categories (and order) for the output
            return pd.Series(kept, index=s.index, name=s.name, copy=False), idx, None
        # the sampler's outputs index the labels: no range passes of pandas'
        cat = from_codes(idx, dtype=output_categorical(mech))
        # (the categorical is this call's own: no copy of it, which pandas 3 makes by
        # default)
        return pd.Series(cat, index=s.index, name=s.name, copy=False), idx, None
    if isinstance(s.array, pd.arrays.ArrowExtensionArray | pd.arrays.ArrowStringArray):
        # Arrow-backed (pandas' default str dtype): match labels in Arrow, ~10x faster
        # than going through Python objects
        import pyarrow as pa

        check_text_labels(mech)

        pa_arr = pa.array(s.array)
        pieces = pa_arr.chunks if isinstance(pa_arr, pa.ChunkedArray) else [pa_arr]
        out_labels = None
        if label_kind(mech.output_labels) == label_kind(mech.input_labels):
            try:
                out_labels = pa.array(list(mech.output_labels),
                                      type=arrow_output_type(mech, pa_arr.type))
            except (TypeError, ValueError, pa.ArrowException):
                pass
        idx = _arrow_indices(mech, sampler, pieces, generator, what)
        if out_labels is not None:
            try:
                taken = _take_arrow(out_labels, idx)
                return (pd.Series(pd.array(taken, dtype=s.dtype), index=s.index,
                                  name=s.name), idx, None)
            except (TypeError, ValueError, pa.ArrowException):
                pass
        return (pd.Series(_take_labels(mech, None, idx), index=s.index, name=s.name),
                idx, None)
    if s.hasnans if s.dtype.kind == "f" else bool(s.isna().any()):
        vals = s.to_numpy(dtype=object, na_value=None)
    elif s.dtype.kind in "biuf" and s.dtype != object:
        vals = s.to_numpy()
    else:
        vals = s.to_numpy(dtype=object)
    idx = _privatize_numpy(mech, sampler, vals, generator, what)
    out_vals = _take_labels(mech, None, idx)
    out = pd.Series(out_vals, index=s.index, name=s.name)
    if label_kind(mech.output_labels) == label_kind(mech.input_labels):
        try:
            out = out.astype(s.dtype)
        except (TypeError, ValueError):
            pass
    return out, idx, None


def _polars_labels(mech: Mechanism, dtype: Any) -> Any:
    """The output labels as a polars Series, of ``dtype`` when they fit it (as the pandas
    path keeps the input's dtype), else of the type polars infers for them."""
    import polars as pl

    labels = list(mech.output_labels)
    kind = label_kind(labels)
    if kind == label_kind(mech.input_labels) and kind not in ("mixed", "object"):
        try:
            base = pl.Series("", labels, strict=True)
            out = base.cast(dtype, strict=True)
            if out.to_list() == labels:  # a lossless cast only
                return out
        except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError):
            pass
    if kind not in ("mixed", "object"):
        try:
            out = pl.Series("", labels, strict=True)
            if out.to_list() == labels:
                return out
        except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError):
            pass
    return pl.Series("", labels, dtype=pl.Object)


def _privatize_polars(mech: Mechanism, sampler: AliasSampler, s: Any,
                      generator: np.random.Generator, what: str
                      ) -> tuple[Any, Callable[[], NDArray[np.int64]]]:
    """A polars Series privatised with no pandas round trip: numbers and strings
    through Arrow (text as string views, without a copy: :class:`~pmlkit._encoding.ViewKeys`
    or ``pyarrow.compute.index_in``), Categorical and Enum
    columns by their physical codes, each category matched once; text output labels of a
    String column taken as views (:func:`pmlkit.sampler.arrow_take`, no copy into polars),
    other output labels gathered by polars. Returns the result and a function giving how
    many records got each output."""
    import polars as pl
    import pyarrow as pa

    if s.dtype == pl.Object:  # Python objects: polars has no Arrow form for them
        vals = np.empty(len(s), dtype=object)
        vals[:] = s.to_list()
        idx = _privatize_numpy(mech, sampler, vals, generator, what)
        return _polars_labels(mech, s.dtype).gather(idx).alias(s.name), _counter(mech, idx)
    if isinstance(s.dtype, pl.Categorical | pl.Enum) \
            and (mapped := _polars_category_codes(mech, s)) is not None:
        # categories matched once; rows keep their physical codes, which the sampler maps
        # through the categories' input indices block by block (as for pandas)
        phys, table = mapped
        fused = _polars_category_draw(mech, sampler, s, phys, table, generator)
        if fused is not None:
            return fused
        idx = np.empty(phys.shape[0], dtype=np.intp)
        draw_in_chunks(sampler, phys, generator, idx, table)
    else:
        # text as Arrow string views, without a copy (matched from the views alone)
        arr = s.to_arrow(compat_level=pl.CompatLevel.newest()) \
            if s.dtype == pl.String else s.to_arrow()
        pieces = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        idx = _arrow_indices(mech, sampler, pieces, generator, what)
        if s.dtype == pl.String and label_kind(mech.output_labels) == "str" \
                and label_kind(mech.input_labels) == "str":
            # text labels out of a String column: the labels' views taken into the
            # string_view layout polars holds its text in (no copy into polars, and no
            # fresh pages from its allocator for every release)
            try:
                views = pa.array(list(mech.output_labels), type=pa.string_view())
            except (UnicodeEncodeError, pa.ArrowException):
                views = None  # a label UTF-8 cannot encode: polars' own gather below
            if views is not None:
                out = pl.from_arrow(arrow_take(views, idx))
                if isinstance(out, pl.Series) and out.dtype == pl.String:
                    return out.alias(s.name), _counter(mech, idx)
    out = _polars_labels(mech, s.dtype).gather(idx.astype(np.intp, copy=False)).alias(s.name)
    return out, _counter(mech, idx)


def _counter(mech: Mechanism, idx: NDArray[Any],
             codes: NDArray[Any] | None = None) -> Callable[[], NDArray[np.int64]]:
    """The function counting the records of each output: ``idx`` the output indices,
    or (with ``codes``) the records' codes, output ``j`` written as ``codes[j]``
    (distinct codes)."""
    if codes is None:
        return lambda: count_outputs(idx, mech.n_outputs)
    return lambda: count_outputs(idx, int(codes.max()) + 1)[codes]


#: The largest physical code of an output label for which a polars Categorical output is
#: written straight as codes (their counts are then kept per code).
_POLARS_CODES_MAX = 1 << 20


def _polars_category_draw(mech: Mechanism, sampler: AliasSampler, s: Any,
                          phys: NDArray[Any], table: NDArray[np.intp],
                          generator: np.random.Generator
                          ) -> tuple[Any, Callable[[], NDArray[np.int64]]] | None:
    """A Categorical/Enum column's outputs drawn straight as the physical codes of the
    output labels in the input's dtype (the draw writes ``codes[j]`` for output ``j``,
    into numpy memory polars then wraps without a copy): no array of 8-byte output
    indices, and no gather by polars, whose fresh buffers (about 80 MB per 10^7 records
    from its allocator) were faulted in anew on every call in some processes and not in
    others (jemalloc's purging of freed memory: 19.6 thousand minor faults a call, a
    third of the time). The values and dtype are those of the labels' gather. None
    where this polars cannot build a categorical from codes (the caller gathers)."""
    import polars as pl

    labels = _polars_labels(mech, s.dtype)
    if labels.dtype != s.dtype or labels.null_count() or len(labels) != mech.n_outputs:
        return None
    codes = labels.to_physical().to_numpy()
    if codes.dtype.kind != "u" or not codes.size or int(codes.max()) >= _POLARS_CODES_MAX:
        return None
    out = np.empty(phys.shape[0], dtype=codes.dtype)
    draw_in_chunks(sampler, phys, generator, out, table, codes)
    try:
        res = pl.Series(s.name, out).cat.to(labels.dtype)
    except (AttributeError, TypeError, pl.exceptions.PolarsError):
        # (the words are drawn: the caller must not draw again) the labels gathered by
        # the output indices the codes stand for (distinct codes: one index each)
        index_of = np.zeros(int(codes.max()) + 1, dtype=np.intp)
        index_of[codes] = np.arange(codes.shape[0])
        res = labels.gather(index_of[out]).alias(s.name)
    return res, _counter(mech, out, codes)


def _polars_category_codes(mech: Mechanism, s: Any
                           ) -> tuple[NDArray[np.integer], NDArray[np.intp]] | None:
    """The physical codes of a polars Categorical/Enum column without nulls (zero-copy)
    and the table of each code's input index; None when a record holds a null or a
    category that is not an input label, or the code space is much larger than the
    column (the caller then takes the general path, which counts the problems)."""
    import polars as pl
    import pyarrow as pa

    if s.null_count() or len(s) == 0:
        return None
    phys = s.to_physical().to_numpy()
    if phys.dtype.kind != "u":
        return None
    size = int(phys.max()) + 1
    if size > max(4096, phys.shape[0]):
        return None
    # the category of every code 0..max, matched against the labels once
    try:
        ids = pl.Series(np.arange(size, dtype=phys.dtype))
        cats = ids.cat.to(s.dtype).cast(pl.String).to_arrow()
    except (AttributeError, pl.exceptions.PolarsError):  # polars without Series.cat.to
        return None
    table = Encoder(mech.input_labels).encode_arrow_values(cats)
    if table is None:
        # some codes are not labels: only the codes present in the column matter
        present = np.bincount(phys, minlength=size) > 0
        table = Encoder(mech.input_labels).encode_arrow_values(
            cats.filter(pa.array(present)))
        if table is None:
            return None
        full = np.zeros(size, dtype=np.intp)  # absent codes: never read
        full[present] = table
        table = full
    return phys, table


class _PolarsBatches:
    """The function polars maps over the batches of a lazy column.

    Secure default: every call (batch) draws from a fresh child stream spawned from the
    call's root source, so no two batches, and no two collects, share randomness.
    Seeded (research): the column has one child stream, and a batch whose first row is row
    ``r`` of the frame draws from that stream positioned ``r`` words in (a row index
    travels with the column), so the release is the same whatever batches polars makes
    and in whatever order its threads run them."""

    def __init__(self, mech: Mechanism, sampler: AliasSampler, source: RandomSource,
                 lock: Any, what: str, column: str | None = None,
                 row: str | None = None) -> None:
        self.mech, self.sampler, self.source, self.lock, self.what = (
            mech, sampler, source, lock, what)
        self.column, self.row = column, row

    def __call__(self, batch: Any) -> Any:
        if self.row is None:
            with self.lock:  # polars may run batches on several threads
                child = self.source.spawn(1)[0]
            return _privatize_polars(self.mech, self.sampler, batch, child.generator,
                                     self.what)[0]
        values = batch.struct.field(self.column)
        rows = batch.struct.field(self.row).to_numpy()
        first = int(rows[0]) if rows.size else 0
        if rows.size and not np.array_equal(rows, np.arange(first, first + rows.size)):
            raise DataError(f"{self.what}: polars handed over a batch whose rows are not "
                            "consecutive, so a seeded release could not be reproduced; "
                            "collect the frame and privatise the DataFrame")
        generator = self.source.generator_at(first)
        assert generator is not None  # (checked by the caller)
        return _privatize_polars(self.mech, self.sampler, values, generator, self.what)[0]


class _Names:
    """Column names of a lazy frame or an Arrow table, for :func:`columns_into`."""

    def __init__(self, names: Sequence[str]) -> None:
        self.columns = list(names)


def _run_polars(mech: Mechanism, sampler: AliasSampler, values: Any, source: RandomSource,
                *, columns: Any, into: Any,
                want_counts: bool = True) -> tuple[Any, tuple[str, ...], int | None,
                                                    np.ndarray | None]:
    """polars Series / DataFrame / LazyFrame (:func:`run_local` passes nothing else)."""
    import polars as pl

    counts = np.zeros(mech.n_outputs, dtype=np.int64)
    if isinstance(values, pl.DataFrame):
        cols, targets = columns_into(values, columns, into)
        out = values
        for col, target in zip(cols, targets, strict=True):
            res, counter = _privatize_polars(mech, sampler, values.get_column(col),
                                             source.generator, f"column {col!r}")
            out = out.with_columns(res.alias(target))
            counts += counter()
        return out, tuple(cols), values.height, counts
    if isinstance(values, pl.LazyFrame):
        import threading

        schema = values.collect_schema()
        cols, targets = columns_into(_Names(schema.names()), columns, into)
        lock = threading.Lock()
        exprs = []
        # seeded: one child stream per column, positioned by row (see _PolarsBatches)
        children = source.spawn(len(cols)) if source.seeded else []
        positioned = bool(children) and all(c.generator_at(0) is not None for c in children)
        row = "__pmlkit_row__"
        while row in schema:
            row += "_"
        for i, (col, target) in enumerate(zip(cols, targets, strict=True)):
            what = f"column {col!r}"
            # the output dtype, from an empty column of the input's dtype
            empty = pl.Series(col, [], dtype=schema[col])
            out_dtype = _privatize_polars(mech, sampler, empty, source.generator,
                                          what)[0].dtype
            if positioned:
                fn = _PolarsBatches(mech, sampler, children[i], lock, what, col, row)
                expr = pl.struct(pl.col(col), pl.col(row))
            else:
                fn = _PolarsBatches(mech, sampler, source, lock, what)
                expr = pl.col(col)
            exprs.append(expr.map_batches(fn, return_dtype=out_dtype,
                                          is_elementwise=True).alias(target))
        if positioned:
            return (values.with_row_index(row).with_columns(exprs).drop(row), tuple(cols),
                    None, None)
        return values.with_columns(exprs), tuple(cols), None, None
    # a polars Series (the only type left)
    if columns is not None or into is not None:
        raise ValidationError("columns= and into= apply to DataFrames only (DataFrame, "
                              "LazyFrame, Arrow Table/RecordBatch); got a polars Series")
    res, counter = _privatize_polars(mech, sampler, values, source.generator, "values")
    return res, (), len(values), counter() if want_counts else None


def _run_arrow_table(mech: Mechanism, sampler: AliasSampler, values: Any,
                     generator: np.random.Generator, *, columns: Any,
                     into: Any, counts: bool = True
                     ) -> tuple[Any, tuple[str, ...], int, NDArray[np.int64] | None]:
    """pyarrow Table / RecordBatch with ``columns=`` (and ``into=``): every other column,
    the schema's field metadata and the chunking are kept; the output counts summed over
    the columns (``counts``), as for a pandas DataFrame."""
    import pyarrow as pa

    cols, targets = columns_into(_Names(values.column_names), columns, into)
    out = values
    total = np.zeros(mech.n_outputs, dtype=np.int64) if counts else None
    for col, target in zip(cols, targets, strict=True):
        res, got = _privatize_arrow(mech, sampler, values.column(col), generator,
                                    f"column {col!r}", count=counts)
        if total is not None and got is not None:
            total += got
        names = out.column_names
        if target in names:
            i = names.index(target)
            out = out.set_column(i, out.schema.field(i).with_type(res.type), res)
        else:
            out = out.append_column(pa.field(target, res.type), res)
    return out, tuple(cols), values.num_rows, total


def _prepared(mech: Mechanism) -> tuple[AliasSampler, list[str]]:
    """The mechanism's alias sampler and a one-slot list memoising its digest, built once
    per mechanism object and kept in the object itself (a Mechanism is frozen and its
    matrix read-only; :meth:`Mechanism.apply` shares the same ``_sampler``). Mechanism has
    ``__slots__`` without ``__weakref__``, so a cache keyed by weak references never held
    an entry: the tables (about 1 s for 1000 x 1000) were rebuilt twice per call."""
    memo = mech.__dict__
    sampler = memo.get("_sampler")
    if sampler is None:
        sampler = AliasSampler(mech.matrix)
        object.__setattr__(mech, "_sampler", sampler)
    digest = memo.get("_digest_memo")
    if not isinstance(digest, list):
        digest = []
        object.__setattr__(mech, "_digest_memo", digest)
    return sampler, digest


def mech_digest(mech: Mechanism) -> str:
    """The mechanism's SHA-256 digest, computed once per mechanism object (its canonical
    JSON costs about 0.6 s for a 1000 x 1000 matrix, more than privatising 10^7 records,
    unless the matrix has few distinct entries: see
    :func:`pmlkit._mechanism_file.fast_digest`).

    Examples
    --------
    >>> import pmlkit
    >>> m = pmlkit.Mechanism([[0.75, 0.25], [0.25, 0.75]])
    >>> mech_digest(m) == m.to_dict()["sha256"] and len(mech_digest(m)) == 64
    True
    """
    memo = _prepared(mech)[1]
    if not memo:
        memo.append(fast_digest(mech) or str(mech.to_dict()["sha256"]))
    return memo[0]


def run_local(mech: Mechanism, values: Any, source: RandomSource, *, columns: Any,
              into: Any, counts: bool = True
              ) -> tuple[Any, tuple[str, ...], int | None, NDArray[np.int64] | None]:
    """Privatise an in-memory container (everything but Dask collections, which
    :mod:`pmlkit.privatization._dask` splits into partitions and hands back here one at a
    time); returns (result, privatised columns, rows, output index counts). Without
    ``counts`` the counts are ``None`` for arrays and Series (not counted).

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit.rng import resolve_rng
    >>> m = as_mechanism_object(np.eye(3))
    >>> out, cols, rows, counts = run_local(m, np.array([2, 0, 2]), resolve_rng(None),
    ...                                     columns=None, into=None)
    >>> out.tolist(), cols, rows, counts.tolist()
    ([2, 0, 2], (), 3, [1, 0, 2])
    """

    sampler = _prepared(mech)[0]
    gen = source.generator
    pd = loaded("pandas")
    pa = loaded("pyarrow")
    if pd is not None and isinstance(values, pd.DataFrame):
        df_cols, targets = columns_into(values, columns, into)
        out = values.copy()
        total = np.zeros(mech.n_outputs, dtype=np.int64)
        for col, target in zip(df_cols, targets, strict=True):
            res, idx, got = _privatize_pandas(mech, sampler, values[col], gen,
                                              f"column {col!r}")
            out[target] = res.array  # positional (no index alignment), dtype kept
            total += count_outputs(idx, mech.n_outputs) if got is None else got
        return out, tuple(df_cols), len(values), total
    pl = loaded("polars")
    if pl is not None and isinstance(values, pl.DataFrame | pl.LazyFrame | pl.Series):
        return _run_polars(mech, sampler, values, source, columns=columns, into=into,
                           want_counts=counts)
    if pa is not None and isinstance(values, pa.Table | pa.RecordBatch):
        return _run_arrow_table(mech, sampler, values, gen, columns=columns, into=into,
                                counts=counts)
    if columns is not None or into is not None:
        raise ValidationError("columns= and into= apply to DataFrames only (pandas/polars "
                              "DataFrame, polars LazyFrame, Arrow Table/RecordBatch); got "
                              f"a {type(values).__module__.split('.')[0]} "
                              f"{type(values).__name__}")
    if pd is not None and isinstance(values, pd.Series):
        res, idx, got = _privatize_pandas(mech, sampler, values, gen, "values")
        return res, (), len(values), \
            (count_outputs(idx, mech.n_outputs) if got is None else got) if counts else None
    if pd is not None and isinstance(values, pd.Categorical):
        res, idx, got = _privatize_pandas(mech, sampler, pd.Series(values), gen, "values")
        return res.array, (), len(values), \
            (count_outputs(idx, mech.n_outputs) if got is None else got) if counts else None
    if pa is not None and isinstance(values, pa.Array | pa.ChunkedArray):
        res, got = _privatize_arrow(mech, sampler, values, gen, "values", count=counts)
        return res, (), len(values), got
    if isinstance(values, np.ndarray):
        idx = _privatize_numpy(mech, sampler, values, gen, "values")
        out = _take_labels(mech, values.dtype, idx)
        return out, (), len(values), count_outputs(idx, mech.n_outputs) if counts else None
    if isinstance(values, list | tuple):
        arr = np.empty(len(values), dtype=object)
        arr[:] = list(values)
        idx = _privatize_numpy(mech, sampler, arr, gen, "values")
        labels = list(mech.output_labels)
        return [labels[i] for i in idx.tolist()], (), len(values), \
            count_outputs(idx, mech.n_outputs) if counts else None
    raise ValidationError(
        "values must be a numpy array, list, pandas Series/Categorical/DataFrame, polars "
        "Series/DataFrame/LazyFrame, pyarrow Array/ChunkedArray/Table/RecordBatch or dask "
        f"DataFrame/Series, got {type(values).__name__}")


def check_column_names(columns: Any, into: Any, *, as_str: bool = False
                       ) -> tuple[list[Any], list[Any]]:
    """The one check of ``columns=`` / ``into=`` (DataFrames, files, Dask): a name or a
    non-empty list of names, ``into`` (default: the columns themselves, i.e. replace in
    place) giving one new name per column, and no name twice in either list. ``as_str``
    converts the names to ``str`` (file columns are text). Returns ``(columns, into)``.

    Examples
    --------
    >>> check_column_names("sex", None)
    (['sex'], ['sex'])
    >>> check_column_names(["sex", "race"], ["sex_p", "race_p"])
    (['sex', 'race'], ['sex_p', 'race_p'])
    >>> check_column_names(["a", "a"], None)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: columns and into names must be unique, got ...
    """
    def names(v: Any) -> list[Any]:
        out = [v] if isinstance(v, str) else list(v)
        return [str(x) for x in out] if as_str else out

    cols = names(columns)
    if not cols:
        raise ValidationError("columns must name at least one column, got []")
    targets = list(cols) if into is None else names(into)
    if len(targets) != len(cols):
        raise ValidationError(f"into must give one new name per column: {len(cols)} "
                              f"column(s) {cols!r} but into={targets!r}")
    if len(set(targets)) != len(targets) or len(set(cols)) != len(cols):
        raise ValidationError(f"columns and into names must be unique, got columns={cols!r}, "
                              f"into={targets!r}")
    return cols, targets


def columns_into(df: Any, columns: Any, into: Any) -> tuple[list[str], list[str]]:
    """The columns of a table to privatise and the columns their outputs go to, checked
    against the table's columns: each must exist once, and an ``into`` column must not
    exist already (pmlkit never overwrites a column it was not asked to privatise).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": ["F", "M"], "age": [30, 40]})
    >>> columns_into(df, "sex", "sex_private")
    (['sex'], ['sex_private'])
    >>> columns_into(df, "sex", "age")
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: into column 'age' already exists; choose a new name ...
    """
    if columns is None:
        raise ValidationError("columns= is required to privatise a DataFrame (name the "
                              "column(s) holding the sensitive labels)")
    cols, targets = check_column_names(columns, into)
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise DataError(f"column {missing[0]!r} not found; available columns: "
                        f"{', '.join(map(repr, list(df.columns)))}")
    names = list(df.columns)
    for c in dict.fromkeys([*cols, *targets]):
        if names.count(c) > 1:
            raise DataError(f"column name {c!r} appears {names.count(c)} times; a column to "
                            "privatise must be unambiguous: rename the duplicate columns first")
    if into is not None:
        clash = [t for t in targets if t in names and t not in cols]
        if clash:
            raise DataError(f"into column {clash[0]!r} already exists; choose a new name "
                            "(pmlkit never overwrites a column it was not asked to "
                            "privatise)")
    return cols, targets
