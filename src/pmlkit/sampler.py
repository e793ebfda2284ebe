"""Drawing a mechanism's outputs for encoded inputs: alias tables and the one draw rule.

The kernel every release path shares (:meth:`pmlkit.Mechanism.apply`, :func:`pmlkit.privatize`,
files and Dask): :class:`AliasSampler` draws each record's output with one random 64-bit
word and one table lookup (Walker's alias method, Vose's construction, or the shared
background cells of :func:`background_tables`), so the cost per record does not grow with
the number of outputs; :func:`run_chunks` encodes and draws a release chunk by chunk. The
labels in and out (:class:`Encoder`, :func:`label_kind`, :func:`output_label_array`,
:func:`arrow_take`, ...) live in :mod:`pmlkit._encoding` and are public here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._encoding import (
    Encoder,
    arrow_take,
    count_outputs,
    label_kind,
    null_mask,
    output_label_array,
    strings_to_arrow,
)
from ._validation import as_mechanism, fmt, readonly
from .errors import ValidationError

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



def _check_range(codes: NDArray[Any], n_codes: int, what: str) -> None:
    """The check that ``codes`` lie in ``0..n_codes-1`` (a draw runs it before any word
    is drawn)."""
    lo, hi = int(codes.min()), int(codes.max())
    if lo < 0 or hi >= n_codes:
        bad = lo if lo < 0 else hi
        raise ValidationError(f"codes must be {what} in 0..{n_codes - 1}, got {bad}")


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

    def _remap_table(self, remap: ArrayLike) -> NDArray[np.intp]:
        """``remap`` checked (1-D integer input indices) as an intp array."""
        table = np.asarray(remap)
        if table.ndim != 1 or (table.dtype.kind not in "iu" and table.size):
            raise ValidationError(f"remap must be a 1-D array of integer input indices, "
                                  f"got an array of dtype {table.dtype} and shape "
                                  f"{table.shape}")
        if table.size and (int(table.min()) < 0 or int(table.max()) >= self.n_inputs):
            bad_in = int(table.min()) if int(table.min()) < 0 else int(table.max())
            raise ValidationError(f"remap must hold input indices in "
                                  f"0..{self.n_inputs - 1}, got {bad_in}")
        return np.ascontiguousarray(table, dtype=np.intp)

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
                _check_range(codes, bound, "input indices" if remap is None
                             else "indices into remap")
            buf = np.empty(min(n, 1 << 16), dtype=np.intp)
            for start in range(0, n, buf.shape[0]):
                stop = min(start + buf.shape[0], n)
                part = buf[:stop - start]
                self.draw(codes[start:stop], generator, out=part, remap=remap)
                omap.take(part, out=out[start:stop], mode="clip")  # (output indices)
            return out
        base: NDArray[np.uint64] | None = None
        table = None if remap is None else self._remap_table(remap)
        if self._bg is not None:
            # shared background cells (small tables: a remap table only gathers each
            # code's row offset)
            if table is not None:
                base = table.astype(np.uint64) * np.uint64(self._bg[1])
            self._draw_background(codes, generator, out, base)
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
        bitgen = generator.bit_generator
        _check_range(codes, n_codes, what)  # before any word is drawn
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
                         out: NDArray[Any], base: NDArray[np.uint64] | None) -> None:
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
        what = "input indices" if base is None else "indices into remap"
        bitgen = generator.bit_generator
        uout = out.view(np.uint64)
        _check_range(codes, n_codes, what)  # before any word is drawn
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


def draw_mapped(sampler: AliasSampler, values: NDArray[Any], offset: int,
                table: NDArray[np.intp], generator: np.random.Generator, out: NDArray[Any]
                ) -> bool:
    """Draw for records whose input is ``table[values - offset]`` (``-1`` in ``table``: a
    value that is no input), as ``sampler.draw(table[values - offset])``: the same words
    and outputs. False, with nothing drawn and the generator where it was, when some
    value is outside the table or maps to -1 (the caller then counts the problems).

    ``values`` is a 1-D integer array (uint64 only up to ``2**63 - 1``), ``out`` an intp
    array of its length. (Internal: the release paths' integer labels; not part of the
    public API.)

    Examples
    --------
    Labels 10, 11, 12 are inputs 2, 0, 1 (13 is no label):

    >>> s = AliasSampler(np.eye(3))
    >>> out = np.empty(3, dtype=np.intp)
    >>> table = np.array([2, 0, 1, -1])
    >>> draw_mapped(s, np.array([12, 10, 10]), 10, table, np.random.default_rng(0), out)
    True
    >>> out.tolist()
    [1, 2, 2]
    >>> draw_mapped(s, np.array([12, 13]), 10, table, np.random.default_rng(0), out[:2])
    False
    """
    table = np.ascontiguousarray(table, dtype=np.intp)
    if not values.dtype.isnative:
        values = values.astype(values.dtype.newbyteorder("="))
    if values.dtype == np.uint64:
        if values.shape[0] and int(values.max()) > np.iinfo(np.int64).max:
            return False
        values = values.view(np.int64)
    codes = values.astype(np.int64) - offset if offset else values
    inside = (codes >= 0) & (codes < table.shape[0])
    if not inside.all():
        return False
    inputs = table.take(codes)
    if inputs.shape[0] and int(inputs.min()) < 0:
        return False
    sampler.draw(inputs, generator, out=out)
    return True


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
