"""Drawing a mechanism's outputs for encoded inputs: label encoding and alias sampling.

The kernel every release path shares (:meth:`pmlkit.Mechanism.apply`, :func:`pmlkit.privatize`,
files and Dask): :class:`Encoder` maps input labels to row indices without a Python loop
over records, and :class:`AliasSampler` draws each record's output with one random 64-bit
word and one table lookup (Walker's alias method, Vose's construction), so the cost per
record does not grow with the number of outputs.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._optional import require
from ._validation import as_mechanism, fmt, readonly
from .errors import DataError, ValidationError

__all__ = [
    "DRAW_BLOCK",
    "AliasSampler",
    "Encoder",
    "arrow_take",
    "background_tables",
    "count_outputs",
    "label_kind",
    "null_mask",
    "output_label_array",
    "run_chunks",
    "strings_to_arrow",
]

#: Records per sampling block (temporaries fit in the CPU cache).
DRAW_BLOCK = 1 << 16

#: Tables of at least this many cells (256 KB of 64-bit cells) with at most
#: ``2**_COMPACT_MAX_BITS`` columns are also kept as 16-bit cells (see AliasSampler).
_COMPACT_MIN_CELLS = 1 << 15
_COMPACT_MAX_BITS = 12
#: Shared background cells are used when each row needs at most ``C / 16`` cells of its
#: own (``C`` the table width; see background_tables).
_BACKGROUND_ROW_SHARE = 16
#: An entry at most ``2**-_BACKGROUND_SNAP`` (relative) above its column's minimum counts
#: as the minimum (float noise: 2**-52 relative per rounding).
_BACKGROUND_SNAP = 48
#: Position of a 64-bit word's top 16 bits among its four 16-bit halves-of-halves.
_TOP16 = 3 if sys.byteorder == "little" else 0


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


def background_tables(matrix: ArrayLike, bits: int | None = None, *,
                      max_row_cells: int | None = None
                      ) -> tuple[int, int, NDArray[np.uint64], NDArray[Any]] | None:
    """Alias cells of a row-stochastic matrix that share a common background: ``K``
    cells for all rows and ``E = C - K`` cells per row (``C = 2**bits`` cells per row in
    all), or None where no ``E <= max_row_cells`` works.

    Every cell has mass ``1/C`` and a free primary: ``(t, p, a)`` gives output ``p`` with
    probability ``t / U`` and ``a`` otherwise (``U = 2**(64 - bits)``, the coin's range).
    The draw of :class:`AliasSampler` picks one of a row's ``C`` cells uniformly by the
    top ``bits`` bits of a word: cells ``0..K-1`` are the shared ones, cells ``K..C-1``
    the row's own, so a record reads its row's table only with probability ``E/C``.

    **Construction, in integers.** Each row ``x`` is quantised to integer masses
    ``m[x, o]`` in units of ``2**-64`` summing to ``2**64`` exactly (``W[x, o] * 2**64``
    rounded, at least 1 where ``W[x, o] > 0``; an entry at most ``2**-48`` (relative)
    above its column's minimum over the rows, float noise of rows that are equal in
    exact arithmetic, is set to that minimum; the row's residue, at most ``M/2`` units
    plus ``2**-48`` plus the float row sum's distance from 1, goes to its largest entry).
    The background ``b[o] = min_x m[x, o]`` totals ``B``. For ``E`` from
    ``C - floor(B / U)`` upwards, ``K = C - E``: the shared measure ``s`` keeps ``b`` on
    the ``K + 1`` columns with the largest ``b`` (if they hold at least ``K U``), minus
    the excess over ``K U`` taken from as few columns as possible (largest first), so
    ``s <= b``, ``sum(s) = K U``. Each row's residual ``r[x] = m[x] - s >= 0`` then
    totals ``E U``; ``E`` is accepted when every residual has at most ``E + 1`` positive
    entries. ``s`` is packed into the ``K`` shared cells and each ``r[x]`` into its row's
    ``E`` cells (as below), so the cells of row ``x`` give output ``o`` with
    probability exactly ``m[x, o] / 2**64``: ``|P(o | x) - W[x, o]|`` is at most
    ``2**-(64 - bits) + 2**-48`` plus the row sum's distance from 1, and an output with
    ``W[x, o] = 0`` is never drawn (no cell of the row names it).

    **Packing** ``n`` cells with a measure on ``p <= n + 1`` outcomes of total ``n U``
    (integers): while cells remain, take the smallest remaining mass ``a`` and the
    largest ``L``. If ``a >= U``, a full cell goes to the largest (``L >= a >= U``).
    Otherwise ``a + L >= U`` (if ``p = 1`` then ``a = L = n U``; else, were ``a + L < U``,
    the total would be at most ``a + (p - 1) L <= a + n L < a + n (U - a) <= n U``), so
    the cell ``(a, smallest, largest)`` takes all of the smallest and ``U - a`` of the
    largest. Either way one cell is used up and the total left is ``(n - 1) U``; the
    outcomes left number at most ``n``: in the first case every outcome holds at least
    ``U`` of the total ``n U``, so ``p <= n`` and none is added; in the second the
    smallest is used up, ``p - 1 <= n``. So the invariant holds down to ``n = 0``, where
    nothing is left. A cell's threshold is ``t`` (``t = U``, a
    full cell, is stored as ``U - 1`` with the alias equal to the primary, so every coin
    keeps it).

    Parameters
    ----------
    matrix
        Row-stochastic ``N x M`` matrix.
    bits
        ``b``, with ``C = 2**b >= M`` (default: the least such, at least 1).
    max_row_cells
        The largest ``E`` accepted (default ``C // 16``).

    Returns
    -------
    tuple or None
        ``(K, E, cells, primaries)``: the cells as one array of ``K + N E`` 64-bit words
        (threshold above the alias's ``b`` bits, as :class:`AliasSampler`'s cells), the
        shared ``K`` first, then row ``x``'s ``E`` at ``K + x E``; ``primaries`` the
        cells' primary outputs (uint16, or uint32 for ``bits > 16``; both read-only).

    Examples
    --------
    k-ary randomized response at eps = 1 over k = 1000 labels puts ``1/(e + 999)`` on
    every label in every row: 1022 of the 1024 cells are shared, two per row are its own.

    >>> import numpy as np
    >>> w = np.expm1(1.0) * np.eye(1000) + 1.0
    >>> k, e, cells, prim = background_tables(w / w.sum(axis=1, keepdims=True))
    >>> k, e, cells.shape[0] == k + 1000 * e
    (1022, 2, True)

    Rows with nothing in common get no shared cells:

    >>> background_tables(np.eye(64)) is None
    True
    """
    w = as_mechanism(matrix, "matrix")
    n, m = w.shape
    if bits is None:
        bits = max(1, (m - 1).bit_length())
    if isinstance(bits, bool) or not isinstance(bits, int | np.integer) \
            or not 1 <= bits <= 32 or (1 << int(bits)) < m:
        raise ValidationError(f"bits must be an integer in 1..32 with 2**bits >= {m} "
                              f"(the columns), got {fmt(bits)}")
    bits = int(bits)
    width = 1 << bits
    cap = width // _BACKGROUND_ROW_SHARE if max_row_cells is None else max_row_cells
    if isinstance(cap, bool) or not isinstance(cap, int | np.integer) or cap < 0:
        raise ValidationError(f"max_row_cells must be a non-negative integer, got "
                              f"{fmt(max_row_cells)}")
    cap = int(cap)
    unit = 1 << (64 - bits)  # a cell's mass in units of 2**-64
    # a quick look in floats first: not enough shared mass, or a row that is one point
    if float(w.min(axis=0).sum()) < 1.0 - (cap + 1) / width or float(w.max()) >= 1.0:
        return None
    # quantised rows: integers in units of 2**-64 summing to 2**64 exactly
    scaled = np.rint(np.ldexp(w, 64))  # < 2**64 (every entry is below 1)
    high = scaled >= 2.0**63
    scaled[high] -= 2.0**63  # (exact: these floats are whole multiples of 2**11)
    q = scaled.astype(np.uint64)
    q[high] += np.uint64(1 << 63)
    q[(w > 0) & (q == 0)] = np.uint64(1)  # a possible output keeps a positive mass
    # entries a few float roundings above their column's minimum (rows normalised or
    # solved in floats rarely repeat a value bit for bit) are taken as the minimum
    low_col = q.min(axis=0)
    np.copyto(q, low_col, where=(q - low_col) <= (low_col >> np.uint64(_BACKGROUND_SNAP)))
    # each row's sum, mod 2**64 (numpy wraps): its distance from 2**64 as a signed number
    wrapped = q.sum(axis=1, dtype=np.uint64).view(np.int64)
    big = np.argmax(q, axis=1)
    rows = np.arange(n)
    before = q[rows, big]
    q[rows, big] -= wrapped.view(np.uint64)  # the residue to each row's largest entry
    after = q[rows, big]
    if np.any((wrapped < 0) & (after < before)) or np.any((wrapped > 0) & (after > before)):
        return None  # a row on one output up to rounding (its mass would wrap past 2**64)
    back = q.min(axis=0)
    # at least this many columns of a row exceed the background: its residual support
    above = int((q > back).sum(axis=1).max())
    total_back = _sum_uint64(back)
    first = max(width - total_back // unit, above - 1, 0)
    order = np.argsort(back, kind="stable")[::-1]  # columns by background, largest first
    for e in range(first, cap + 1):
        k = width - e
        top = order[:k + 1]
        held = _sum_uint64(back[top])
        if held < k * unit:
            continue
        shared = np.zeros(m, dtype=np.uint64)
        shared[top] = back[top]
        excess = held - k * unit
        for col in top.tolist():  # the excess off as few columns as possible
            if excess == 0:
                break
            take = min(int(shared[col]), excess)
            shared[col] -= np.uint64(take)
            excess -= take
        resid = q - shared  # >= 0: shared <= back <= q
        if int((resid > 0).sum(axis=1).max()) > e + 1:
            continue
        thr: list[int] = []
        prim: list[int] = []
        alias: list[int] = []
        _pack_cells(shared, k, unit, thr, prim, alias)
        for x in range(n):
            _pack_cells(resid[x], e, unit, thr, prim, alias)
        t = np.array(thr, dtype=np.uint64)
        cells = (t << np.uint64(bits)) | np.array(alias, dtype=np.uint64)
        # (primaries as 16-bit numbers: a quarter of the memory of 64-bit words)
        pdt = np.uint16 if bits <= 16 else np.uint32
        return k, e, readonly(cells, np.uint64), readonly(np.array(prim, dtype=pdt), pdt)
    return None


def _sum_uint64(a: NDArray[np.uint64]) -> int:
    """The exact sum of non-negative 64-bit integers (as a Python int)."""
    lo = a & np.uint64(0xFFFFFFFF)
    hi = a >> np.uint64(32)
    return (int(hi.sum(dtype=np.uint64)) << 32) + int(lo.sum(dtype=np.uint64))


def _pack_cells(mass: NDArray[np.uint64], n_cells: int, unit: int, thr: list[int],
                prim: list[int], alias: list[int]) -> None:
    """Append ``n_cells`` cells packing the integer measure ``mass`` (total
    ``n_cells * unit``, at most ``n_cells + 1`` positive entries): the smallest remaining
    mass with the largest, as proved in :func:`background_tables`. A cell's threshold is
    stored as at most ``unit - 1`` (a full cell: alias = primary)."""
    import bisect

    support = np.flatnonzero(mass)
    items = sorted(zip(mass[support].tolist(), support.tolist(), strict=True))
    for _ in range(n_cells):
        a, lo = items[0]
        if a >= unit:  # a full cell of the largest
            big, hi = items.pop()
            thr.append(unit - 1)
            prim.append(hi)
            alias.append(hi)
            if big > unit:
                bisect.insort(items, (big - unit, hi))
            continue
        items.pop(0)
        big, hi = items.pop()  # a + big >= unit (the packing invariant)
        thr.append(a)
        prim.append(lo)
        alias.append(hi)
        if big > unit - a:
            bisect.insort(items, (big - (unit - a), hi))
    if items:  # (impossible by the invariant)
        raise AssertionError("alias packing left mass over")



def _range_check(codes: NDArray[Any], n_codes: int, what: str) -> Callable[[], None]:
    """The check that ``codes`` lie in ``0..n_codes-1`` (a draw runs it before any word
    is drawn)."""

    def check_range() -> None:
        lo, hi = int(codes.min()), int(codes.max())
        if lo < 0 or hi >= n_codes:
            bad = lo if lo < 0 else hi
            raise ValidationError(f"codes must be {what} in 0..{n_codes - 1}, got {bad}")

    return check_range


class AliasSampler:
    """Alias tables of a mechanism's rows and the vectorised one-draw sampler.

    Every row ``i`` of the ``N x M`` matrix gets a Walker/Vose alias table over
    ``C = 2**b >= M`` columns (the matrix padded with zero columns, so that the top ``b``
    bits of one random 64-bit word choose a column exactly uniformly): ``prob[i, j]`` in
    ``[0, 1]`` and ``alias[i, j]`` such that taking column ``j`` with probability ``1/C``,
    keeping it with probability ``prob[i, j]`` and else taking ``alias[i, j]`` gives output
    ``j`` with probability ``W[i, j]``.

    One 64-bit word ``r`` per record drives the draw: its top ``b`` bits are the column
    ``j``, its other ``64 - b`` bits the coin, which keeps ``j`` if it is below
    ``prob[i, j] * 2**(64 - b)`` rounded to an integer (so the keep-probability is exact to
    ``2**-(64 - b)``, below ``1e-16`` for ``M <= 1024``). An output with ``W[i, j] = 0`` is
    never drawn: its threshold is 0 and no alias points to it.

    A large table (at least ``2**15`` cells, ``C <= 4096``) is also kept with 16-bit cells:
    the threshold's top ``16 - b`` bits above the alias. Most records are decided by
    comparing the coin's top ``16 - b`` bits with them; a record whose top bits are equal
    (probability ``2**-(16 - b)``) is decided by its 64-bit cell. The outputs are those of
    the 64-bit cells word for word (same keep-probabilities), from a table a quarter of the
    size, which stays in the CPU cache (``1000 x 1000``: 2 MB instead of 8 MB).

    **Shared background.** A large table whose rows share most of their mass (a common
    background plus a sparse part of each row's own: k-ary randomized response, most
    accuracy designs) is drawn from :func:`background_tables` instead: the top ``b``
    bits of the word choose one of ``C = 2**b`` cells of mass ``1/C`` (``b`` the least
    width, or one bit more where the columns fill every cell), ``K`` of them shared by all
    rows and ``E <= C / 16`` the row's own; each cell has a free primary, kept when the
    coin (the other ``64 - b`` bits) is below its threshold, else its alias. The tables
    are a few tens of kilobytes whatever ``N`` (k-RR at ``k = 1000``: 1022 shared cells,
    2 per row, instead of ``1000 x 1024``), so every draw stays in the CPU caches. The
    same one word per record, in order, and the same rule.
    Such a mechanism's seeded outputs differ from those of the per-row tables (the same
    distribution); every other mechanism draws exactly as before.

    Parameters
    ----------
    matrix
        Row-stochastic ``N x M`` matrix (rows = inputs).

    Notes
    -----
    Attributes: ``n_inputs`` and ``n_outputs`` (``N`` and ``M``); ``n_columns`` (``C``, the
    table width: ``M`` rounded up to a power of two, at least 2); ``prob_flat`` and
    ``alias_flat`` (the ``N x C`` Walker tables, row-major, read-only; built on first use
    when the draw uses shared background cells); ``background`` (``(K, E, b)`` of the
    shared background cells the draw uses, or None).

    Examples
    --------
    A 2 x 2 mechanism: tables over two columns whose implied distribution is the matrix
    (row 0: column 0 always kept, column 1 kept half the time, else column 0).

    >>> import numpy as np
    >>> s = AliasSampler([[0.75, 0.25], [0.5, 0.5]])
    >>> s.n_columns, s.prob_flat.tolist(), s.alias_flat.tolist()
    (2, [1.0, 0.5, 1.0, 1.0], [0, 0, 0, 1])

    Drawing for 100,000 records of input 0 gives output 0 about three times in four:

    >>> out = s.draw(np.zeros(100_000, dtype=np.intp), np.random.default_rng(0))
    >>> round(float(np.mean(out == 0)), 2)
    0.75
    """

    def __init__(self, matrix: ArrayLike) -> None:
        w = as_mechanism(matrix, "matrix")
        n, m = w.shape
        bits = max(1, (m - 1).bit_length())
        if bits > 32:
            raise ValidationError(f"matrix must have at most 2**32 columns, got {m}")
        width = 1 << bits
        self.n_inputs, self.n_outputs, self.n_columns = n, m, width
        self._bits = bits
        self._matrix = w
        self._rows_cache: tuple[bytes, tuple[Any, Any]] | None = None
        self._walker: tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.uint64],
                            NDArray[np.uint16] | None] | None = None
        # a large table whose rows share most of their mass: shared-background cells
        # (see background_tables); otherwise (or without a small enough row part) the
        # per-row Walker tables, built here
        self._bg: tuple[int, int, NDArray[np.uint64], NDArray[Any], int] | None = None
        if bits <= _COMPACT_MAX_BITS and n * width >= _COMPACT_MIN_CELLS:
            # (one more bit of positions where the columns would fill every cell: k-RR
            # over exactly 2**b labels cannot share 2**b - E cells, but 2**(b + 1) - E)
            for b in (bits, bits + 1) if bits < _COMPACT_MAX_BITS else (bits,):
                found = background_tables(w, b)
                if found is not None:
                    self._bg = (*found, b)
                    break
        if self._bg is None:
            self._walker_tables()

    def _walker_tables(self) -> tuple[NDArray[np.float64], NDArray[np.intp],
                                      NDArray[np.uint64], NDArray[np.uint16] | None]:
        """The per-row Walker tables (built on first use: a sampler drawing from shared
        background cells never needs them): ``prob`` and ``alias`` flat, the 64-bit
        cells and (large tables) the 16-bit cells."""
        if self._walker is not None:
            return self._walker
        w = self._matrix
        n, m = w.shape
        bits, width = self._bits, self.n_columns
        padded = np.zeros((n, width))
        padded[:, :m] = w
        prob, alias = self._vose_rows(padded)
        # one 64-bit cell per (input, column): the keep threshold (64 - b bits) above the
        # alias (b bits), so a record costs one gather of one word however large the table
        shift = np.uint64(64 - bits)
        one = np.uint64(1)
        thr = np.rint(np.ldexp(prob, 64 - bits)).astype(np.uint64)  # exact: times 2**shift
        full = thr >= one << shift  # the probability rounds to 1: always keep
        np.minimum(thr, (one << shift) - one, out=thr)
        own = np.broadcast_to(np.arange(width, dtype=np.uint64), (n, width))
        cell_alias = np.where(full, own, alias.astype(np.uint64))
        cells = readonly(((thr << np.uint64(bits)) | cell_alias).ravel(), np.uint64)
        # a large table also gets 16-bit cells: the threshold's top 16 - b bits above the
        # alias. A record's word decides on them unless its coin's top 16 - b bits equal
        # the threshold's (one record in 2**(16 - b)), which the 64-bit cell then decides:
        # the outputs are those of the 64-bit cells bit for bit, from a table a quarter
        # of the size (a 1000 x 1000 matrix: 2 MB instead of 8 MB, mostly cache hits)
        cells16: NDArray[np.uint16] | None = None
        if bits <= _COMPACT_MAX_BITS and n * width >= _COMPACT_MIN_CELLS:
            cells16 = readonly((((thr >> np.uint64(48)) << np.uint64(bits))
                                | cell_alias).astype(np.uint16).ravel(), np.uint16)
        tables = (readonly(prob.ravel()), readonly(alias.ravel(), np.intp), cells, cells16)
        self._walker = tables  # (one assignment: threads see either value)
        return tables

    @property
    def background(self) -> tuple[int, int, int] | None:
        """``(K, E, b)``: the shared cells, the cells of each row's own and the position
        bits of the shared background cells the draw uses (None: per-row tables)."""
        return None if self._bg is None else (self._bg[0], self._bg[1], self._bg[4])

    @property
    def prob_flat(self) -> NDArray[np.float64]:
        """The Walker keep-probabilities, ``N x C`` row-major (read-only)."""
        return self._walker_tables()[0]

    @property
    def alias_flat(self) -> NDArray[np.intp]:
        """The Walker aliases, ``N x C`` row-major (read-only)."""
        return self._walker_tables()[1]

    @property
    def _cells(self) -> NDArray[np.uint64]:
        return self._walker_tables()[2]

    @property
    def _cells16(self) -> NDArray[np.uint16] | None:
        return self._walker_tables()[3]

    @staticmethod
    def _vose_rows(w: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
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

    def draw(self, codes: ArrayLike, generator: np.random.Generator, *,
             out: NDArray[Any] | None = None,
             remap: ArrayLike | None = None,
             out_codes: ArrayLike | None = None) -> NDArray[Any]:
        """Output indices for input indices ``codes`` (one random 64-bit word per record).

        Works in blocks of :data:`DRAW_BLOCK` records so the temporaries stay in the CPU
        cache; the words are consumed in order, so the result equals a single whole-array
        draw from the same stream.

        Parameters
        ----------
        codes
            1-D integer input indices in ``0..N-1``.
        generator
            The numpy Generator whose bit generator supplies the random words.
        out
            Optional contiguous intp array of the length of ``codes`` to write the output
            indices into (returned).
        remap
            Optional 1-D integer table of input indices: record ``r`` then has input
            ``remap[codes[r]]`` (for example pandas categorical codes through the table of
            their categories' input indices). The remapping is done block by block inside
            the draw, so a narrow code array (int8) is never widened or gathered as a
            whole; the random words and the outputs are those of
            ``draw(remap[codes], ...)``.
        out_codes
            Optional 1-D integer table of one code per output: a record whose output
            index is ``j`` gets ``out_codes[j]``, and the result (and ``out``) has the
            table's dtype (for example int8 categorical codes, or the physical codes of
            a polars Categorical), drawn block by block (no array of every record's
            output index is made); the values are those of
            ``out_codes[draw(codes, ...)]`` under the same words.

        Raises
        ------
        ValidationError
            ``codes`` not 1-D integers or outside ``0..N-1`` (with ``remap``: outside
            ``0..len(remap)-1``, or ``remap`` not input indices): every code is
            checked before any word is drawn, so the generator has not moved.

        Examples
        --------
        Categorical codes ``[0, 1, 1]`` whose categories are inputs 1 and 0 of an identity
        mechanism:

        >>> s = AliasSampler([[1.0, 0.0], [0.0, 1.0]])
        >>> s.draw(np.array([0, 1, 1], dtype=np.int8), np.random.default_rng(0),
        ...        remap=[1, 0]).tolist()
        [1, 0, 0]

        The same outputs written as the codes 7 (output 0) and 9 (output 1), as int8:

        >>> s.draw(np.array([0, 1, 1], dtype=np.int8), np.random.default_rng(0),
        ...        remap=[1, 0], out_codes=np.array([7, 9], dtype=np.int8))
        array([9, 7, 7], dtype=int8)
        """
        codes = np.asarray(codes)
        if codes.ndim != 1 or (codes.dtype.kind not in "iu" and codes.size):
            raise ValidationError(f"codes must be a 1-D array of integer input indices, got "
                                  f"an array of dtype {codes.dtype} and shape {codes.shape}")
        if not codes.dtype.isnative:  # (the 8-byte path reads the codes' bits as uint64)
            codes = codes.astype(codes.dtype.newbyteorder("="))
        n = int(codes.shape[0])
        omap: NDArray[Any] | None = None
        if out_codes is not None:
            omap = np.ascontiguousarray(out_codes)
            if omap.shape != (self.n_outputs,) or omap.dtype.kind not in "iu":
                raise ValidationError(f"out_codes must be a 1-D integer array of one code "
                                      f"per output ({self.n_outputs}), got an array of "
                                      f"dtype {omap.dtype} and shape {omap.shape}")
            if not omap.dtype.isnative:
                omap = omap.astype(omap.dtype.newbyteorder("="))
        want = np.dtype(np.intp) if omap is None else omap.dtype
        if out is None:
            out = np.empty(n, dtype=want)
        elif out.shape != (n,) or out.dtype != want or not out.flags.c_contiguous \
                or not out.flags.writeable:
            raise ValidationError(f"out must be a writable contiguous {want} array of shape "
                                  f"({n},), got dtype {out.dtype} and shape {out.shape}")
        if n <= DRAW_BLOCK:  # (one block: one call of random_raw)
            return self._draw(codes, generator, out, remap, omap)

        def run(gen: np.random.Generator) -> int:
            self._draw(codes, gen, out, remap, omap)
            return n

        _with_words(generator, run)  # the records' words in one piece of the stream
        return out

    def _draw(self, codes: NDArray[Any], generator: np.random.Generator, out: NDArray[Any],
              remap: ArrayLike | None, omap: NDArray[Any] | None) -> NDArray[Any]:
        """:meth:`draw` once its arguments are checked."""
        n = codes.shape[0]
        if omap is not None:
            # output indices drawn a block at a time into a buffer, then their codes (the
            # same words in the same order: the same values); every code checked before
            # any word is drawn
            if n:
                bound = self.n_inputs if remap is None else np.asarray(remap).shape[0]
                _range_check(codes, bound, "input indices" if remap is None
                             else "indices into remap")()
            buf = np.empty(min(n, 1 << 16), dtype=np.intp)
            for start in range(0, n, buf.shape[0]):
                stop = min(start + buf.shape[0], n)
                part = buf[:stop - start]
                self.draw(codes[start:stop], generator, out=part, remap=remap)
                omap.take(part, out=out[start:stop])
            return out
        base: NDArray[np.uint64] | None = None
        table = None
        if remap is not None:
            table = np.asarray(remap)
            if table.ndim != 1 or (table.dtype.kind not in "iu" and table.size):
                raise ValidationError(f"remap must be a 1-D array of integer input indices, "
                                      f"got an array of dtype {table.dtype} and shape "
                                      f"{table.shape}")
            if table.size and (int(table.min()) < 0 or int(table.max()) >= self.n_inputs):
                bad_in = int(table.min()) if int(table.min()) < 0 else int(table.max())
                raise ValidationError(f"remap must hold input indices in "
                                      f"0..{self.n_inputs - 1}, got {bad_in}")
        if self._bg is not None:
            # shared background cells (small tables: a remap table only gathers each
            # code's row offset)
            if table is not None:
                base = table.astype(np.uint64) * np.uint64(self._bg[1])
            self._draw_background(codes, generator, out, base, remap is not None)
            return out
        cells16 = self._cells16
        if table is not None:
            if table.size <= 4 * self.n_inputs + 1024:
                # the rows of the tables in code order: the codes then index the cells
                # directly (the same cells, so the same outputs, one gather per record)
                cells, cells16 = self._rows_tables(table.astype(np.intp))
            else:  # many codes: each code's input index shifted into place, then gathered
                base = table.astype(np.uint64) << np.uint64(self._bits)
                cells = self._cells
        else:
            cells = self._cells
        if n == 0:
            return out
        n_codes = cells.shape[0] >> self._bits if base is None else base.shape[0]
        what = "input indices" if remap is None else "indices into remap"

        check_range = _range_check(codes, n_codes, what)

        bitgen = generator.bit_generator
        check_range()  # before any word is drawn
        wide = codes.dtype.itemsize == 8
        # non-negative 8-byte codes: the same bits as uint64 (no copy); narrower codes are
        # widened block by block into a cache-sized buffer, never as a whole
        ucodes = codes.view(np.uint64) if wide else codes
        bits = np.uint64(self._bits)
        shift = np.uint64(64 - self._bits)
        low = np.uint64((1 << self._bits) - 1)
        uout = out.view(np.uint64)
        size = min(DRAW_BLOCK, n)
        col = np.empty(size, dtype=np.uint64)
        flat = np.empty(size, dtype=np.uint64)
        keep = np.empty(size, dtype=bool)
        pos = np.empty(size, dtype=np.intp) if base is not None else None
        for start in range(0, n, DRAW_BLOCK):  # loop over cache-sized blocks of records
            stop = min(start + DRAW_BLOCK, n)
            if stop - start != size:
                size = stop - start
                col, flat, keep = col[:size], flat[:size], keep[:size]
                if pos is not None:
                    pos = pos[:size]
            r = bitgen.random_raw(size)
            o = uout[start:stop]
            if base is not None and pos is not None:
                pos[:] = ucodes[start:stop]
                base.take(pos, out=flat, mode="clip")  # codes checked in range above
            elif wide:
                np.left_shift(ucodes[start:stop], bits, out=flat)
            else:
                flat[:] = ucodes[start:stop]
                flat <<= bits
            if cells16 is not None:
                self._decide16(r, flat, o, cells, cells16)
                continue
            np.right_shift(r, shift, out=col)  # top bits: the column
            flat |= col
            cells.take(flat, out=o, mode="clip")  # the one gather (indices are in range)
            np.left_shift(r, bits, out=r)  # the coin, above b set bits: compares with the
            r |= low  # cell exactly as the coin with the threshold (the alias is <= low)
            np.less(r, o, out=keep)
            o &= low  # the alias
            # o = keep ? col : alias, without a branch per record
            np.subtract(col, o, out=col)
            np.multiply(col, keep, out=col)
            o += col
        return out

    def _rows_tables(self, rows: NDArray[np.intp]
                     ) -> tuple[NDArray[np.uint64], NDArray[np.uint16] | None]:
        """The 64- and 16-bit cells with their rows in the order ``rows`` (the last
        order asked for is kept: a column's chunks share their categories, and a 1000 x
        1000 table costs more to reorder than a chunk to draw)."""
        key = rows.tobytes()
        cached = self._rows_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        cells = self._cells.reshape(self.n_inputs, -1).take(rows, axis=0).ravel()
        cells16 = None if self._cells16 is None else \
            self._cells16.reshape(self.n_inputs, -1).take(rows, axis=0).ravel()
        for t in (cells, cells16):
            if t is not None:
                t.setflags(write=False)
        tables = (cells, cells16)
        self._rows_cache = (key, tables)  # (one assignment: threads see either entry)
        return tables


    def _draw_background(self, codes: NDArray[Any], generator: np.random.Generator,
                         out: NDArray[Any], base: NDArray[np.uint64] | None,
                         remapped: bool) -> None:
        """The draw from shared background cells (:func:`background_tables`): for a
        record of row ``x`` (``base``: row offsets ``x * E`` by code) and word ``r``,
        position ``j = r >> (64 - b)`` is shared cell ``j`` if ``j < K``, else cell
        ``j - K`` of the row's ``E`` cells (flat index ``j + x * E``); the output is
        the cell's primary if the coin ``(r << b) | (2**b - 1)`` is below the cell (its
        threshold above its alias), else the alias."""
        assert self._bg is not None
        n_shared, n_row, cells, prim, b = self._bg
        n = codes.shape[0]
        if n == 0:
            return
        n_codes = self.n_inputs if base is None else base.shape[0]
        what = "input indices" if not remapped else "indices into remap"

        check_range = _range_check(codes, n_codes, what)

        bitgen = generator.bit_generator
        uout = out.view(np.uint64)
        check_range()  # before any word is drawn
        wide = codes.dtype.itemsize == 8
        ucodes = codes.view(np.uint64) if wide else codes
        bits = np.uint64(b)
        shift = np.uint64(64 - b)
        low = np.uint64((1 << b) - 1)
        k = np.uint64(n_shared)
        e = np.uint64(n_row)
        size = min(DRAW_BLOCK, n)
        primary = np.empty(size, dtype=prim.dtype)
        col = np.empty(size, dtype=np.uint64)
        at = np.empty(size, dtype=np.uint64)
        cell = np.empty(size, dtype=np.uint64)
        keep = np.empty(size, dtype=bool)
        pos = np.empty(size, dtype=np.intp) if base is not None else None
        for start in range(0, n, DRAW_BLOCK):
            stop = min(start + DRAW_BLOCK, n)
            if stop - start != size:
                size = stop - start
                col, at, cell, keep = col[:size], at[:size], cell[:size], keep[:size]
                primary = primary[:size]
                if pos is not None:
                    pos = pos[:size]
            r = bitgen.random_raw(size)
            o = uout[start:stop]
            if base is not None and pos is not None:
                pos[:] = ucodes[start:stop]
                base.take(pos, out=at, mode="clip")  # codes checked in range above
            else:
                at[:] = ucodes[start:stop]
                at *= e  # the row's offset x * E
            np.right_shift(r, shift, out=col)  # top bits: the position
            np.greater_equal(col, k, out=keep)  # a row cell?
            np.multiply(at, keep, out=at)  # its offset, or 0 for a shared cell
            at += col
            cells.take(at, out=cell, mode="clip")  # (indices are in range)
            prim.take(at, out=primary, mode="clip")  # the cell's primary
            o[:] = primary
            np.left_shift(r, bits, out=r)  # the coin above b set bits, as for Walker cells
            r |= low
            np.less(r, cell, out=keep)
            cell &= low  # the alias
            # o = keep ? primary : alias, without a branch per record
            np.subtract(o, cell, out=o)
            np.multiply(o, keep, out=o)
            o += cell

    def _decide16(self, r: NDArray[np.uint64], flat: NDArray[np.uint64],
                  o: NDArray[np.uint64], cells: NDArray[np.uint64],
                  cells16: NDArray[np.uint16]) -> None:
        """One block's outputs from the 16-bit cells (``flat`` holds the row offsets
        ``input << b``; ``r`` the block's words), with the few records whose coin ties the
        16-bit threshold decided by the 64-bit cell: the same outputs as the 64-bit path."""
        b = self._bits
        top = r.view(np.uint16)[_TOP16::4]  # each word's top 16 bits: column, coin's top
        col = top >> np.uint16(16 - b)
        flat |= col
        cell = cells16.take(flat, mode="clip")  # the one gather (indices are in range)
        low = np.uint16((1 << b) - 1)
        word = top << np.uint16(b)  # the coin's top 16 - b bits, above b set bits
        word |= low
        keep = word < cell
        np.bitwise_xor(word, cell, out=word)
        tie = word <= low  # the same top bits: the 64-bit cell decides
        cell &= low  # the alias
        np.subtract(col, cell, out=col)  # cell = keep ? col : alias, without a branch
        np.multiply(col, keep, out=col)
        cell += col
        o[:] = cell
        if tie.any():
            at = np.flatnonzero(tie)
            rt = r[at]
            ct = cells.take(flat[at].astype(np.intp))
            bits = np.uint64(b)
            low64 = np.uint64((1 << b) - 1)
            keep64 = ((rt << bits) | low64) < ct
            o[at] = np.where(keep64, rt >> np.uint64(64 - b), ct & low64)


def _with_words(generator: np.random.Generator,
                run: Callable[[np.random.Generator], int]) -> None:
    """``run(gen)``, which draws some words from ``gen`` and returns how many, with the
    words one piece of ``generator``'s stream: ``gen`` is a copy of ``generator`` where
    it stands (:func:`pmlkit.rng.positioned`), drawn from while ``generator``'s own lock is
    held, and ``generator`` is then moved on by the words drawn. Another thread drawing
    from ``generator`` meanwhile (or releasing from it) waits, and gets the words after
    these: two releases at once never share or interleave words. If ``run`` raises,
    ``generator`` is left where it was (the outputs drawn are then never released). A
    generator that cannot be positioned (a caller's Philox) is drawn from directly."""
    from .rng import positioned, skip_words

    with generator.bit_generator.lock:
        base = positioned(generator, 0)
        if base is not None:
            skip_words(generator, run(base))
            return
    run(generator)


def run_chunks(sizes: Sequence[int], generator: np.random.Generator,
               encode: Callable[[int, Any], Any], draw: Callable[[int, int, Any, Any], None],
               local: Callable[[], Any]) -> None:
    """The chunks of a privatisation, in order, on the calling thread: chunk ``i``
    holding ``sizes[i]`` records from record ``start`` (the records of the chunks before
    it) is encoded, ``codes = encode(i, own)`` (None when a record is no label, the
    problems then recorded by the caller), then, while no chunk before it gave None,
    drawn: ``draw(i, start, codes, generator)`` (one word of ``generator`` per record, in
    record order, from one piece of the stream: see :func:`_with_words`). ``own`` is
    made once by ``local()`` (an encoder and its caches). Every chunk is encoded, so the
    caller counts the problems over the whole input; the generator is moved on by exactly
    the words drawn.

    Examples
    --------
    Two chunks whose draws write their words: those of one pass, and the generator
    moved past them.

    >>> sizes = [3, 2]
    >>> out = np.zeros(5, dtype=np.uint64)
    >>> def draw(i, start, codes, gen):
    ...     out[start:start + sizes[i]] = gen.bit_generator.random_raw(sizes[i])
    >>> g = np.random.Generator(np.random.PCG64(1))
    >>> run_chunks(sizes, g, lambda i, own: i, draw, lambda: None)
    >>> ref = np.random.Generator(np.random.PCG64(1)).bit_generator.random_raw(6)
    >>> bool((out == ref[:5]).all()), int(g.bit_generator.random_raw()) == int(ref[5])
    (True, True)
    """
    own = local()

    def run(gen: np.random.Generator) -> int:
        start = 0
        drawn = 0  # the words drawn: the records of the chunks before the first refused
        for i, size in enumerate(sizes):
            codes = encode(i, own)
            if codes is not None and drawn == start:
                draw(i, start, codes, gen)
                drawn += int(size)
            start += int(size)
        return drawn

    _with_words(generator, run)

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
    lookup, Python strings through an Arrow array and ``pyarrow.compute.index_in``,
    Arrow arrays by ``index_in`` (a dictionary array by its dictionary), anything else by
    pandas ``Index.get_indexer``.
    """

    def __init__(self, labels: Sequence[Any]) -> None:
        self.labels = tuple(labels)
        self.kind = label_kind(self.labels)
        self.range_labels = self.kind == "int" and self.labels == tuple(range(len(labels)))
        self.nulls = 0
        self.unknown: Counter[Any] = Counter()
        self._index: Any = None
        self._lookup: tuple[int, NDArray[np.intp]] | tuple[()] | None = None

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
        if dtype_kind in "iu":
            return self.kind in ("int", "float", "mixed")
        if dtype_kind == "f":
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
        """(offset, table) with ``table[v - offset]`` the index of integer label ``v`` (-1
        for no label), when the labels span a short range; else None."""
        if self._lookup is None:
            labs = [int(v) for v in self.labels]
            lo, hi = min(labs), max(labs)
            if hi - lo > 4 * len(labs) + 1024 or lo < -(2**62) or hi > 2**62:
                self._lookup = ()
            else:
                table = np.full(hi - lo + 1, -1, dtype=np.intp)
                table[np.asarray(labs, dtype=np.int64) - lo] = np.arange(len(labs))
                self._lookup = (lo, table)
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
        if kind == "O" and self.kind == "str" and (arr := strings_to_arrow(values)) \
                is not None:
            # Python strings copied once into an Arrow buffer and matched there by hash
            # (about 5x faster than hashing the objects through a pandas Index)
            return self._arrow_codes(arr)
        codes = np.asarray(self._pd_index().get_indexer(values), dtype=np.intp)
        if kind == "O" and self.kind != "mixed":
            codes = self._fix_object_kinds(values, codes)
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
                codes: NDArray[np.intp] = dict_codes.take(
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

    def _encode_arrow_plain(self, arr: Any) -> np.ndarray | None:
        import pyarrow as pa

        codes = self._arrow_codes(arr)
        bad = codes < 0
        if not bad.any():
            return codes
        nullmask = arr.is_null().to_numpy(zero_copy_only=False)
        # no filter kernel for the view types: count the problems on the plain layout
        if pa.types.is_string_view(arr.type):
            arr = arr.cast(pa.large_string())
        elif hasattr(pa.types, "is_binary_view") and pa.types.is_binary_view(arr.type):
            arr = arr.cast(pa.large_binary())
        bad_vals = np.asarray(arr.filter(pa.array(bad)).to_pylist(), dtype=object)
        self._record(bad_vals, nullmask[bad])
        return None

    def _arrow_codes(self, arr: Any) -> np.ndarray:
        """Indices of a plain Arrow array's values, -1 for nulls and unknown values
        (``pyarrow.compute.index_in``)."""
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
        if pa.types.is_string_view(t):  # index_in has no string_view kernel
            arr = arr.cast(pa.large_string())
            value_set = value_set.cast(pa.large_string())
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


# ---------------------------------------------------------------------------------------
# Short string labels matched on Arrow string_view views by exact fixed-width keys (no
# string hash, no copy, no Python object per record)
# ---------------------------------------------------------------------------------------



def arrow_take(labels: Any, idx: NDArray[Any],
               counts: NDArray[np.int64] | None = None) -> Any:
    """``labels.take(idx)`` for a pyarrow array of labels and label indices: Arrow's own
    take (``string_view`` labels, which it cannot take on every version, through
    ``large_string`` and back). ``counts`` (an int64 array, one entry per label): how many
    records get each label is added to it.

    Raises
    ------
    ValidationError
        An index outside ``0..len(labels) - 1``.

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
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise ValidationError(f"idx must hold label indices in 0..{k - 1}, got {bad}")
    if counts is not None:
        counts += count_outputs(idx, k)[:counts.shape[0]]
    t = labels.type
    if pa.types.is_string_view(t):
        return labels.cast(pa.large_string()).take(idx).cast(t)
    return labels.take(idx)


def count_outputs(idx: NDArray[Any], m: int) -> NDArray[np.int64]:
    """How many of the indices ``idx`` (each in ``0..m-1``) equal each of ``0..m-1``
    (``np.bincount`` with ``minlength=m``).

    Examples
    --------
    >>> import numpy as np
    >>> count_outputs(np.array([2, 0, 2]), 4).tolist()
    [1, 0, 2, 0]
    """
    if idx.dtype.itemsize < np.dtype(np.intp).itemsize and idx.shape[0] > DRAW_BLOCK:
        # narrow codes counted a block at a time (bincount widens its input to intp: a
        # whole-array copy 8 bytes per record)
        total = np.zeros(m, dtype=np.int64)
        for start in range(0, idx.shape[0], DRAW_BLOCK):
            total += np.bincount(idx[start:start + DRAW_BLOCK], minlength=m)[:m]
        return total
    return np.bincount(idx, minlength=m)[:m].astype(np.int64, copy=False)
