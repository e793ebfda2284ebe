"""The sampling engine: map each input label to an output label drawn from its row.

Algorithm (per record, vectorised over chunks of records)
---------------------------------------------------------
For every row ``i`` of the ``N x M`` mechanism ``W`` an alias table (Walker 1977, Vose
1991) is built once: ``prob[i, j]`` in ``[0, 1]`` and ``alias[i, j]`` in ``{0..M-1}`` such
that drawing ``j`` uniformly and keeping it with probability ``prob[i, j]`` (else taking
``alias[i, j]``) yields output ``j`` with probability exactly ``W[i, j]`` (up to float
rounding, ~1e-16). One uniform ``u`` per record suffices: ``x = u * M``, ``j = floor(x)``,
``v = x - j``; output ``j`` if ``v < prob[i, j]`` else ``alias[i, j]``. The fractional part
keeps ``53 - log2(M)`` random bits. Outputs with ``W[i, j] = 0`` are never produced (their
``prob`` is forced to 0 and their alias points to a positive entry).

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

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._provenance import warn_if_reference_values
from .._validation import fmt
from ..errors import DataError, ValidationError
from ..mechanism import Mechanism, as_matrix
from ..rng import RandomSource

__all__ = [
    "CHUNK_ROWS",
    "AliasSampler",
    "Encoder",
    "PrivatizationReport",
    "arrow_output_type",
    "as_mechanism_object",
    "check_column_names",
    "columns_into",
    "label_kind",
    "mech_digest",
    "run_local",
]

#: Records processed per chunk (bounded memory).
CHUNK_ROWS = 1 << 20
#: Records per sampling block inside a chunk (temporaries fit in the CPU cache).
DRAW_BLOCK = 1 << 16


def as_mechanism_object(mechanism: Any) -> Mechanism:
    """A :class:`~pmlkit.Mechanism` from a Mechanism or a row-stochastic 2-D array
    (labels ``0..N-1`` / ``0..M-1``)."""
    if isinstance(mechanism, Mechanism):
        return mechanism
    return Mechanism(as_matrix(mechanism))


def label_kind(labels: Sequence[Any]) -> str:
    kinds = set()
    for v in labels:
        if isinstance(v, bool | np.bool_):
            kinds.add("bool")
        elif isinstance(v, int | np.integer):
            kinds.add("int")
        elif isinstance(v, float | np.floating):
            kinds.add("float")
        elif isinstance(v, str):
            kinds.add("str")
        else:
            kinds.add("object")
    if kinds <= {"int", "float"} and "float" in kinds:
        return "float"
    return kinds.pop() if len(kinds) == 1 else "mixed"


class AliasSampler:
    """Alias tables of a mechanism's rows and the vectorised one-uniform draw.

    Parameters
    ----------
    matrix
        Row-stochastic ``N x M`` matrix (validated by :func:`pmlkit.mechanism.as_matrix`).
    """

    def __init__(self, matrix: Any) -> None:
        w = as_matrix(matrix)
        n, m = w.shape
        prob, alias = self._vose_rows(w)
        self.n_inputs, self.n_outputs = n, m
        self.prob_flat = prob.ravel()
        self.alias_flat = alias.ravel()
        # one 16-byte cell per (input, column): keep-probability and alias side by side, so
        # a record costs one gather (one cache line) however large the table is; aliases
        # are integers below 2**53, exact as floats
        self._table = np.empty(n * m, dtype=np.complex128)
        self._table.real = self.prob_flat
        self._table.imag = self.alias_flat

    @staticmethod
    def _vose_rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vose's construction run on all rows at once (vectorised over rows).

        Every row keeps its own stacks of "small" (scaled mass < 1) and "large" columns;
        each step pops one small and one large column in every row that still has both, in
        exactly the order (and with exactly the floating-point operations) of the
        sequential algorithm, so the tables equal the row-by-row construction's."""
        n, m = w.shape
        scaled = w * m
        prob = np.zeros((n, m))
        alias = np.broadcast_to(np.arange(m, dtype=np.intp), (n, m)).copy()
        is_small = scaled < 1.0
        cols = np.broadcast_to(np.arange(m, dtype=np.intp), (n, m))
        # stacks in column order (the sequential version appends in column order too)
        order = np.argsort(~is_small, axis=1, kind="stable")  # smalls first, then larges
        n_small = is_small.sum(axis=1)
        small = np.zeros((n, m), dtype=np.intp)
        large = np.zeros((n, m), dtype=np.intp)
        pos = np.arange(m)[None, :]
        sorted_cols = np.take_along_axis(cols, order, axis=1)
        small_mask = pos < n_small[:, None]
        small[small_mask] = sorted_cols[small_mask]
        # larges go to the front of their stack
        shift = (pos + n_small[:, None]) % m
        large_src = np.take_along_axis(sorted_cols, shift, axis=1)
        large_mask = pos < (m - n_small)[:, None]
        large[large_mask] = large_src[large_mask]
        s_top = n_small.astype(np.intp)
        g_top = (m - n_small).astype(np.intp)
        while True:  # one step per pair popped (at most m steps), all rows at once
            rows = np.flatnonzero((s_top > 0) & (g_top > 0))
            if rows.size == 0:
                break
            s_top[rows] -= 1
            g_top[rows] -= 1
            sc = small[rows, s_top[rows]]
            gc = large[rows, g_top[rows]]
            prob[rows, sc] = scaled[rows, sc]
            alias[rows, sc] = gc
            scaled[rows, gc] = (scaled[rows, gc] + scaled[rows, sc]) - 1.0
            to_small = scaled[rows, gc] < 1.0
            rs, rg = rows[to_small], rows[~to_small]
            small[rs, s_top[rs]] = gc[to_small]
            s_top[rs] += 1
            large[rg, g_top[rg]] = gc[~to_small]
            g_top[rg] += 1
        # leftovers are 1 up to rounding
        left = np.zeros((n, m), dtype=bool)
        r_idx = np.broadcast_to(np.arange(n)[:, None], (n, m))
        in_s = pos < s_top[:, None]
        in_g = pos < g_top[:, None]
        left[r_idx[in_s], small[in_s]] = True
        left[r_idx[in_g], large[in_g]] = True
        prob[left] = 1.0
        best = np.argmax(w, axis=1)
        zero = w == 0.0
        prob[zero] = 0.0  # never output an impossible label
        alias_zero = np.take_along_axis(w, alias, axis=1) == 0.0
        fix = zero & alias_zero
        alias[fix] = np.broadcast_to(best[:, None], (n, m))[fix]
        return prob, alias

    def draw(self, codes: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        """Output indices for input indices ``codes`` (one uniform per record).

        Works in blocks of :data:`DRAW_BLOCK` records so the temporaries stay in the CPU
        cache (about 2x faster than whole-array passes); the uniforms are consumed in order,
        so the result equals a single whole-array draw from the same stream."""
        n = codes.shape[0]
        out = np.empty(n, dtype=np.intp)
        for start in range(0, n, DRAW_BLOCK):  # loop over cache-sized blocks of records
            stop = min(start + DRAW_BLOCK, n)
            out[start:stop] = self._draw_block(codes[start:stop], generator)
        return out

    def _draw_block(self, codes: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        m = self.n_outputs
        u = generator.random(codes.shape[0])
        if m == 1:
            return np.zeros(codes.shape[0], dtype=np.intp)
        u *= m
        j = u.astype(np.intp)
        u -= j
        np.minimum(j, m - 1, out=j)  # u*m may round up to m
        flat = codes.astype(np.intp, copy=False) * m
        flat += j
        cell = self._table.take(flat)  # the one gather: (keep-probability, alias)
        keep = u < cell.real
        return np.where(keep, j, cell.imag.astype(np.intp))


class Encoder:
    """Map chunks of values to input indices; collect nulls/unknowns over all chunks."""

    def __init__(self, labels: Sequence[Any]) -> None:
        self.labels = tuple(labels)
        self.kind = label_kind(self.labels)
        self.range_labels = self.kind == "int" and self.labels == tuple(range(len(labels)))
        self.nulls = 0
        self.unknown: Counter[Any] = Counter()
        self._index: Any = None

    @property
    def failed(self) -> bool:
        return bool(self.nulls or self.unknown)

    def _pd_index(self) -> Any:
        if self._index is None:
            import pandas as pd

            self._index = pd.Index(list(self.labels),
                                   dtype=object if self.kind in ("bool", "mixed", "object")
                                   else None)
        return self._index

    def _kind_ok(self, dtype_kind: str) -> bool:
        """Whether values of numpy dtype kind can ever equal the labels."""
        if dtype_kind == "b":
            return self.kind == "bool"
        if dtype_kind in "iu":
            return self.kind in ("int", "float", "mixed")
        if dtype_kind == "f":
            return self.kind in ("int", "float", "mixed")
        if dtype_kind in "US":
            return self.kind in ("str", "mixed")
        return True

    def encode_numpy(self, values: np.ndarray) -> np.ndarray | None:
        """Indices (intp) of a 1-D numpy chunk, or None after recording its problems."""
        kind = values.dtype.kind
        if kind in "iu" and self.range_labels:
            codes = values.astype(np.intp, copy=False)
            if codes.size == 0 or (codes.min() >= 0 and codes.max() < len(self.labels)):
                return codes
            bad = (codes < 0) | (codes >= len(self.labels))
            self._record(values[bad], np.zeros(int(bad.sum()), dtype=bool))
            return None
        if kind == "b" and self.kind == "bool":
            lookup = np.full(2, -1, dtype=np.intp)
            for i, lab in enumerate(self.labels):
                lookup[int(lab)] = i
            codes = lookup[values.astype(np.intp)]
        elif not self._kind_ok(kind):
            codes = np.full(values.shape[0], -1, dtype=np.intp)
        elif kind == "O" and self.kind == "str" and (arr := _strings_to_arrow(values)) \
                is not None:
            # Python strings copied once into an Arrow buffer and matched there by hash
            # (about 5x faster than hashing the objects through a pandas Index)
            return self._encode_arrow_plain(arr)
        else:
            codes = self._pd_index().get_indexer(values)
            if kind == "O" and self.kind != "mixed":
                codes = self._fix_object_kinds(values, codes)
        bad = codes < 0
        if not bad.any():
            return codes
        self._record(values[bad], _null_mask(values[bad]))
        return None

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

    def _record(self, bad_values: np.ndarray, null: np.ndarray) -> None:
        self.nulls += int(null.sum())
        rest = bad_values[~null]
        if rest.size:
            import pandas as pd

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
                codes = dict_codes[chunk.indices.to_numpy(zero_copy_only=False)]
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

    def _encode_arrow_plain(self, arr: Any) -> np.ndarray | None:
        import pyarrow as pa

        codes = self._arrow_codes(arr)
        bad = codes < 0
        if not bad.any():
            return codes
        nullmask = arr.is_null().to_numpy(zero_copy_only=False)
        bad_vals = np.asarray(arr.filter(pa.array(bad)).to_pylist(), dtype=object)
        self._record(bad_vals, nullmask[bad])
        return None

    def _arrow_codes(self, arr: Any) -> np.ndarray:
        """Indices of a plain Arrow array's values, -1 for nulls and unknown values."""
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
        if value_set is None:
            return np.full(len(arr), -1, dtype=np.intp)
        idx = pc.index_in(arr, value_set=value_set)
        return np.asarray(idx.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.intp)

    def error(self, what: str = "values") -> DataError:
        parts = []
        if self.unknown:
            common = self.unknown.most_common()
            v, c = common[0]
            msg = (f"{what}: value {fmt(v)} appears in {c} row{'s' if c != 1 else ''} but is "
                   f"not an input label of the mechanism (input labels: "
                   f"{', '.join(map(repr, self.labels[:20]))}"
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


def _strings_to_arrow(values: np.ndarray) -> Any:
    """An Arrow string array of an object array holding only ``str`` (and None), else
    None (bytes, numbers, NaN or mixed objects keep the generic path, so a ``b"a"`` never
    matches the label ``"a"``)."""
    import pandas as pd
    import pyarrow as pa

    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty"):
        return None
    try:  # a NaN among the strings fails here and keeps the generic path
        return pa.array(values, type=pa.large_string(), from_pandas=False)
    except (pa.ArrowException, TypeError, ValueError):
        return None


def _null_mask(values: np.ndarray) -> np.ndarray:
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool)


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


def _output_array(mech: Mechanism, like_dtype: np.dtype | None) -> np.ndarray:
    labels = list(mech.output_labels)
    if like_dtype is not None and like_dtype.kind == "O":
        out = np.empty(len(labels), dtype=object)
        out[:] = labels
        return out
    kind = label_kind(labels)
    if kind not in ("mixed", "object"):
        arr = np.asarray(labels)
        # numpy's fixed-width str/bytes dtypes drop trailing NUL characters ('\x00' would
        # come back as ''): keep such labels as Python objects rather than change them
        if arr.dtype.kind not in "US" or arr.tolist() == labels:
            return arr
    out = np.empty(len(labels), dtype=object)
    out[:] = labels
    return out


def _privatize_numpy(mech: Mechanism, sampler: AliasSampler, values: np.ndarray,
                     generator: np.random.Generator, what: str) -> np.ndarray:
    if values.ndim != 1:
        raise ValidationError(f"values must be 1-D, got an array of shape {values.shape}")
    enc = Encoder(mech.input_labels)
    n = values.shape[0]
    idx = np.empty(n, dtype=np.intp)
    for start in range(0, n, CHUNK_ROWS):  # loop over chunks of 2^20 records
        codes = enc.encode_numpy(values[start:start + CHUNK_ROWS])
        if codes is None or enc.failed:
            continue
        idx[start:start + codes.shape[0]] = sampler.draw(codes, generator)
    if enc.failed:
        raise enc.error(what)
    return idx


def _privatize_arrow(mech: Mechanism, sampler: AliasSampler, arr: Any,
                     generator: np.random.Generator, what: str) -> Any:
    import pyarrow as pa

    chunked = isinstance(arr, pa.ChunkedArray)
    pieces = arr.chunks if chunked else [arr]
    out_pieces = _arrow_indices(mech, sampler, pieces, generator, what)
    out_type = arrow_output_type(mech, arr.type)
    out_labels = pa.array(list(mech.output_labels), type=out_type)
    results = []
    pos = 0
    for piece in pieces:
        n = len(piece)
        taken = [out_labels.take(pa.array(c)) for c in out_pieces[pos:pos + _n_chunks(n)]]
        pos += _n_chunks(n)
        results.append(pa.concat_arrays(taken) if taken else pa.array([], type=out_type))
    if chunked:
        return pa.chunked_array(results, type=out_type)
    return results[0]


def _arrow_indices(mech: Mechanism, sampler: AliasSampler, pieces: Sequence[Any],
                   generator: np.random.Generator, what: str) -> list[np.ndarray]:
    """Output indices for pyarrow arrays, one array per CHUNK_ROWS slice of each piece."""
    enc = Encoder(mech.input_labels)
    out_pieces = []
    for piece in pieces:
        for start in range(0, len(piece), CHUNK_ROWS):
            codes = enc.encode_arrow(piece.slice(start, CHUNK_ROWS))
            if codes is None or enc.failed:
                continue
            out_pieces.append(sampler.draw(codes, generator))
    if enc.failed:
        raise enc.error(what)
    return out_pieces


def _n_chunks(n: int) -> int:
    return max(0, math.ceil(n / CHUNK_ROWS))


def arrow_output_type(mech: Mechanism, in_type: Any) -> Any:
    """Arrow type for the output labels: the input's type when the labels fit it."""
    import pyarrow as pa

    base = in_type.value_type if pa.types.is_dictionary(in_type) else in_type
    try:
        pa.array(list(mech.output_labels), type=base)
        if label_kind(mech.output_labels) == label_kind(mech.input_labels):
            return base
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
        pass
    return pa.array(list(mech.output_labels)).type


def _privatize_pandas(mech: Mechanism, sampler: AliasSampler, s: Any,
                      generator: np.random.Generator, what: str) -> Any:
    import pandas as pd

    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.cat.categories
        enc = Encoder(mech.input_labels)
        cat_codes = enc.encode_numpy(np.asarray(cats, dtype=object) if cats.dtype == object
                                     else cats.to_numpy())
        raw = s.cat.codes.to_numpy()
        if cat_codes is None or (raw.size and raw.min() < 0):
            # count problems over the actual values (categories may be unused)
            vals = s.to_numpy(dtype=object, na_value=None)
            idx = _privatize_numpy(mech, sampler, vals, generator, what)
        else:
            codes = cat_codes[raw]  # categories matched once, rows by their code
            idx = np.empty(codes.shape[0], dtype=np.intp)
            for start in range(0, codes.shape[0], CHUNK_ROWS):
                idx[start:start + CHUNK_ROWS] = sampler.draw(codes[start:start + CHUNK_ROWS],
                                                             generator)
        out_cats = pd.Index(list(mech.output_labels),
                            dtype=object if label_kind(mech.output_labels) == "bool"
                            else None)
        cat = pd.Categorical.from_codes(idx, categories=out_cats)
        return pd.Series(cat, index=s.index, name=s.name)
    if isinstance(s.array, pd.arrays.ArrowExtensionArray | pd.arrays.ArrowStringArray):
        # Arrow-backed (pandas' default str dtype): match labels in Arrow, ~10x faster
        # than going through Python objects
        import pyarrow as pa

        pa_arr = pa.array(s.array)
        pieces = pa_arr.chunks if isinstance(pa_arr, pa.ChunkedArray) else [pa_arr]
        parts = _arrow_indices(mech, sampler, pieces, generator, what)
        idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)
        if label_kind(mech.output_labels) == label_kind(mech.input_labels):
            try:
                out_type = arrow_output_type(mech, pa_arr.type)
                taken = pa.array(list(mech.output_labels), type=out_type).take(pa.array(idx))
                return pd.Series(pd.array(taken, dtype=s.dtype), index=s.index, name=s.name)
            except (TypeError, ValueError, pa.ArrowException):
                pass
        return pd.Series(_output_array(mech, None)[idx], index=s.index, name=s.name)
    if s.hasnans if s.dtype.kind == "f" else bool(s.isna().any()):
        vals = s.to_numpy(dtype=object, na_value=None)
    elif s.dtype.kind in "biuf" and s.dtype != object:
        vals = s.to_numpy()
    else:
        vals = s.to_numpy(dtype=object)
    idx = _privatize_numpy(mech, sampler, vals, generator, what)
    out_vals = _output_array(mech, None)[idx]
    out = pd.Series(out_vals, index=s.index, name=s.name)
    if label_kind(mech.output_labels) == label_kind(mech.input_labels):
        try:
            out = out.astype(s.dtype)
        except (TypeError, ValueError):
            pass
    return out


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
                      generator: np.random.Generator, what: str) -> tuple[Any, np.ndarray]:
    """A polars Series privatised through its Arrow buffers (zero-copy for numbers,
    categoricals encode their dictionary once); no pandas round trip."""
    import polars as pl
    import pyarrow as pa

    if s.dtype == pl.Object:  # Python objects: polars has no Arrow form for them
        vals = np.empty(len(s), dtype=object)
        vals[:] = s.to_list()
        idx = _privatize_numpy(mech, sampler, vals, generator, what)
        return _polars_labels(mech, s.dtype).gather(idx).alias(s.name), idx
    arr = s.to_arrow()
    pieces = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    parts = _arrow_indices(mech, sampler, pieces, generator, what)
    idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)
    out = _polars_labels(mech, s.dtype).gather(idx).alias(s.name)
    return out, idx


class _PolarsBatches:
    """The function polars maps over the batches of a lazy column: every call (batch)
    draws from a fresh child stream spawned from the call's root source (secure children
    for the secure default), so no two batches, and no two collects, share randomness."""

    def __init__(self, mech: Mechanism, sampler: AliasSampler, source: RandomSource,
                 lock: Any, what: str) -> None:
        self.mech, self.sampler, self.source, self.lock, self.what = (
            mech, sampler, source, lock, what)

    def __call__(self, batch: Any) -> Any:
        with self.lock:  # polars may run batches on several threads
            child = self.source.spawn(1)[0]
        return _privatize_polars(self.mech, self.sampler, batch, child.generator,
                                 self.what)[0]


class _Names:
    """Column names of a lazy frame or an Arrow table, for :func:`columns_into`."""

    def __init__(self, names: Sequence[str]) -> None:
        self.columns = list(names)


def _run_polars(mech: Mechanism, sampler: AliasSampler, values: Any, source: RandomSource,
                *, columns: Any, into: Any) -> tuple[Any, tuple[str, ...], int | None,
                                                    np.ndarray | None] | None:
    """polars Series / DataFrame / LazyFrame (None if ``values`` is none of them)."""
    import polars as pl

    counts = np.zeros(mech.n_outputs, dtype=np.int64)
    if isinstance(values, pl.DataFrame):
        cols, targets = columns_into(values, columns, into)
        out = values
        for col, target in zip(cols, targets, strict=True):
            # PMLWarning if the column is the mechanism's reference sample (as for pandas)
            warn_if_reference_values(mech, values.get_column(col).to_arrow())
            res, idx = _privatize_polars(mech, sampler, values.get_column(col),
                                         source.generator, f"column {col!r}")
            out = out.with_columns(res.alias(target))
            counts += np.bincount(idx, minlength=mech.n_outputs)
        return out, tuple(cols), values.height, counts
    if isinstance(values, pl.LazyFrame):
        import threading

        schema = values.collect_schema()
        cols, targets = columns_into(_Names(schema.names()), columns, into)
        lock = threading.Lock()
        exprs = []
        for col, target in zip(cols, targets, strict=True):
            what = f"column {col!r}"
            # the output dtype, from an empty column of the input's dtype
            empty = pl.Series(col, [], dtype=schema[col])
            out_dtype = _privatize_polars(mech, sampler, empty, source.generator,
                                          what)[0].dtype
            fn = _PolarsBatches(mech, sampler, source, lock, what)
            exprs.append(pl.col(col).map_batches(fn, return_dtype=out_dtype,
                                                 is_elementwise=True).alias(target))
        return values.with_columns(exprs), tuple(cols), None, None
    if isinstance(values, pl.Series):
        if columns is not None or into is not None:
            raise ValidationError("columns= and into= apply to DataFrames only (DataFrame, "
                                  "LazyFrame, Arrow Table/RecordBatch); got a polars Series")
        warn_if_reference_values(mech, values.to_arrow())
        res, idx = _privatize_polars(mech, sampler, values, source.generator, "values")
        return res, (), len(values), np.bincount(idx, minlength=mech.n_outputs)
    return None


def _run_arrow_table(mech: Mechanism, sampler: AliasSampler, values: Any,
                     generator: np.random.Generator, *, columns: Any,
                     into: Any) -> tuple[Any, tuple[str, ...], int, None]:
    """pyarrow Table / RecordBatch with ``columns=`` (and ``into=``): every other column,
    the schema's field metadata and the chunking are kept."""
    import pyarrow as pa

    cols, targets = columns_into(_Names(values.column_names), columns, into)
    out = values
    for col, target in zip(cols, targets, strict=True):
        warn_if_reference_values(mech, values.column(col))
        res = _privatize_arrow(mech, sampler, values.column(col), generator,
                               f"column {col!r}")
        names = out.column_names
        if target in names:
            i = names.index(target)
            out = out.set_column(i, out.schema.field(i).with_type(res.type), res)
        else:
            out = out.append_column(pa.field(target, res.type), res)
    return out, tuple(cols), values.num_rows, None


#: Alias tables and digests of recently used mechanisms, by object (a Mechanism is frozen
#: and its matrix read-only); the entry is dropped when the mechanism is collected.
_PREPARED: dict[int, tuple[Any, Any, AliasSampler, list[str]]] = {}


def _prepared(mech: Mechanism) -> tuple[AliasSampler, list[str]]:
    """The mechanism's alias sampler and a one-slot list memoising its digest."""
    import weakref

    key = id(mech)
    hit = _PREPARED.get(key)
    if hit is not None and hit[0]() is mech and hit[1] is mech.matrix:
        return hit[2], hit[3]
    sampler = AliasSampler(mech.matrix)
    digest: list[str] = []
    def _drop(_ref: Any, key: int = key) -> None:
        _PREPARED.pop(key, None)

    try:
        ref = weakref.ref(mech, _drop)
    except TypeError:  # not weak-referenceable: no caching
        return sampler, digest
    if len(_PREPARED) >= 64:
        _PREPARED.clear()
    _PREPARED[key] = (ref, mech.matrix, sampler, digest)
    return sampler, digest


def _digest_of(mech: Mechanism) -> str:
    """The mechanism's digest, computed once per mechanism object (its canonical JSON
    costs about 0.6 s for a 1000 x 1000 matrix, more than privatising 10^7 records)."""
    memo = _prepared(mech)[1]
    if not memo:
        memo.append(str(mech.to_dict()["sha256"]))
    return memo[0]


def mech_digest(mech: Mechanism) -> str:
    """The mechanism's SHA-256 digest (computed once per mechanism object)."""
    return _digest_of(mech)


def run_local(mech: Mechanism, values: Any, source: RandomSource, *, columns: Any,
              into: Any) -> tuple[Any, tuple[str, ...], int | None, np.ndarray | None]:
    """Privatise an in-memory container (everything but Dask collections, which
    :mod:`pmlkit.privatization._dask` splits into partitions and hands back here one at a
    time); returns (result, privatised columns, rows, output index counts)."""
    import sys

    sampler = _prepared(mech)[0]
    gen = source.generator
    pd = sys.modules.get("pandas")
    pa = sys.modules.get("pyarrow")
    if pd is not None and isinstance(values, pd.DataFrame):
        df_cols, targets = columns_into(values, columns, into)
        out = values.copy()
        counts = np.zeros(mech.n_outputs, dtype=np.int64)
        for col, target in zip(df_cols, targets, strict=True):
            res = _privatize_pandas(mech, sampler, values[col], gen, f"column {col!r}")
            out[target] = res.array  # positional (no index alignment), dtype kept
            counts += _counts(mech, res)
        return out, tuple(df_cols), len(values), counts
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(values, pl.DataFrame | pl.LazyFrame | pl.Series):
        done = _run_polars(mech, sampler, values, source, columns=columns, into=into)
        if done is not None:
            return done
    if pa is not None and isinstance(values, pa.Table | pa.RecordBatch):
        return _run_arrow_table(mech, sampler, values, gen, columns=columns, into=into)
    if columns is not None or into is not None:
        raise ValidationError("columns= and into= apply to DataFrames only (pandas/polars "
                              "DataFrame, polars LazyFrame, Arrow Table/RecordBatch); got "
                              f"a {type(values).__module__.split('.')[0]} "
                              f"{type(values).__name__}")
    if pd is not None and isinstance(values, pd.Series):
        res = _privatize_pandas(mech, sampler, values, gen, "values")
        return res, (), len(values), _counts(mech, res)
    if pd is not None and isinstance(values, pd.Categorical):
        res = _privatize_pandas(mech, sampler, pd.Series(values), gen, "values")
        return res.array, (), len(values), _counts(mech, res)
    if pa is not None and isinstance(values, pa.Array | pa.ChunkedArray):
        res = _privatize_arrow(mech, sampler, values, gen, "values")
        return res, (), len(values), None
    if isinstance(values, np.ndarray):
        idx = _privatize_numpy(mech, sampler, values, gen, "values")
        out = _output_array(mech, values.dtype)[idx]
        return out, (), len(values), np.bincount(idx, minlength=mech.n_outputs)
    if isinstance(values, list | tuple):
        arr = np.empty(len(values), dtype=object)
        arr[:] = list(values)
        idx = _privatize_numpy(mech, sampler, arr, gen, "values")
        labels = list(mech.output_labels)
        return [labels[i] for i in idx.tolist()], (), len(values), \
            np.bincount(idx, minlength=mech.n_outputs)
    raise ValidationError(
        "values must be a numpy array, list, pandas Series/Categorical/DataFrame, polars "
        "Series/DataFrame/LazyFrame, pyarrow Array/ChunkedArray/Table/RecordBatch or dask "
        f"DataFrame/Series, got {type(values).__name__}")


def _counts(mech: Mechanism, res: Any) -> np.ndarray:
    import pandas as pd

    vc = pd.Series(res).value_counts()
    return np.array([int(vc.get(lab, 0)) for lab in mech.output_labels], dtype=np.int64)


def check_column_names(columns: Any, into: Any, *, as_str: bool = False
                       ) -> tuple[list[Any], list[Any]]:
    """The one check of ``columns=`` / ``into=`` (DataFrames, files, Dask): a name or a
    non-empty list of names, ``into`` (default: the columns themselves, i.e. replace in
    place) giving one new name per column, and no name twice in either list. ``as_str``
    converts the names to ``str`` (file columns are text). Returns ``(columns, into)``."""
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
