"""Drawing a mechanism's outputs for encoded inputs: label encoding and alias sampling.

The kernel every release path shares (:meth:`pmlkit.Mechanism.apply`, :func:`pmlkit.privatize`,
files and Dask): :class:`Encoder` maps input labels to row indices without a Python loop
over records, and :class:`AliasSampler` draws each record's output with one random 64-bit
word and one table lookup (Walker's alias method, Vose's construction), so the cost per
record does not grow with the number of outputs.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import functools
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _kernels
from ._optional import require
from ._validation import as_mechanism, fmt, readonly
from .errors import DataError, PMLError, ValidationError

__all__ = [
    "DRAW_BLOCK",
    "AliasSampler",
    "ArrowGather",
    "Encoder",
    "ObjectGather",
    "arrow_take",
    "background_tables",
    "count_lanes",
    "count_outputs",
    "label_kind",
    "null_mask",
    "output_label_array",
    "pool_empty",
    "run_chunks",
    "strings_to_arrow",
    "take_objects",
]

#: Records per sampling block (temporaries fit in the CPU cache).
DRAW_BLOCK = 1 << 16
#: Records whose distinct objects seed an encoder's table of objects by address.
_SEED_HEAD = 1 << 14

#: Tables of at least this many cells (256 KB of 64-bit cells) with at most
#: ``2**_COMPACT_MAX_BITS`` columns are also kept as 16-bit cells (see AliasSampler).
_COMPACT_MIN_CELLS = 1 << 15
_COMPACT_MAX_BITS = 12
#: Draws of at least this many records use the compiled kernels once they are loaded
#: (below it the numpy path's fixed costs are small).
_KERNEL_MIN_RECORDS = 1 << 17
#: The kernels are loaded (numba imported: about 0.5-2 s) once one sampler has drawn this
#: many records in the process; until then (or without numba) the numpy path draws, with
#: the same outputs.
_KERNEL_LOAD_RECORDS = 1 << 24
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
        # (primaries as 16-bit numbers: a compiled draw measured 4x slower gathering
        # them from 64-bit words, 55 against 14 ms per 10^7 records at k = 1000)
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


def _huge_copy(a: NDArray[Any]) -> NDArray[Any]:
    """A copy of a large table (at least 2 MiB) in memory advised for transparent huge
    pages on Linux (the random gathers of a draw then miss the TLB far less: about 10%
    of a 1000 x 1000 draw), else ``a`` itself."""
    import mmap

    huge = 1 << 21
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    anonymous = getattr(mmap, "MAP_ANONYMOUS", None)
    if a.nbytes < huge or advice is None or anonymous is None \
            or not sys.platform.startswith("linux"):
        return a
    try:
        # private (shared anonymous memory follows the shmem huge page setting instead)
        area = mmap.mmap(-1, a.nbytes + huge, flags=mmap.MAP_PRIVATE | anonymous)
        raw = np.frombuffer(area, dtype=np.uint8)  # keeps the mapping alive
        start = (-raw.ctypes.data) % huge  # the copy starts on a 2 MiB boundary
        area.madvise(advice, start, a.nbytes - a.nbytes % huge)
    except (OSError, ValueError):
        return a
    out = raw[start:start + a.nbytes].view(a.dtype)
    out[:] = a
    return out


def _range_check(codes: NDArray[Any], n_codes: int, what: str) -> Callable[[], None]:
    """The check that ``codes`` lie in ``0..n_codes-1`` (a draw runs it before any word
    is drawn, a compiled draw only when its kernel met a code out of range)."""

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

    With numba installed (``pmlkit[fast]``) a large draw runs a compiled loop on 32-bit
    cells (ties on the 64-bit cells; :mod:`pmlkit._kernels`), on a worker thread while
    the caller draws the next block's words: the words are consumed in the same order and
    decided by the same integer rule, so the outputs are the numpy path's, word for word.

    **Shared background.** A large table whose rows share most of their mass (a common
    background plus a sparse part of each row's own: k-ary randomized response, most
    accuracy designs) is drawn from :func:`background_tables` instead: the top ``b``
    bits of the word choose one of ``C = 2**b`` cells of mass ``1/C`` (``b`` the least
    width, or one bit more where the columns fill every cell), ``K`` of them shared by all
    rows and ``E <= C / 16`` the row's own; each cell has a free primary, kept when the
    coin (the other ``64 - b`` bits) is below its threshold, else its alias. The tables
    are a few tens of kilobytes whatever ``N`` (k-RR at ``k = 1000``: 1022 shared cells,
    2 per row, instead of ``1000 x 1024``), so every draw stays in the CPU caches. The
    same one word per record, in order; numpy and compiled draws apply the same rule.
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
        self._drawn = 0  # records drawn so far (the compiled kernels load past a size)
        self._load_at: int | None = None  # (None: _KERNEL_LOAD_RECORDS; see loading_after)
        self._cells32: NDArray[np.uint32] | None = None  # built by the compiled draw
        self._rows_cache: tuple[bytes, tuple[Any, Any, Any]] | None = None
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
            a polars Categorical). The compiled draw writes the codes in the same pass, so
            no array of every record's output index is made; the values are those of
            ``out_codes[draw(codes, ...)]`` under the same words.

        Raises
        ------
        ValidationError
            ``codes`` not 1-D integers or outside ``0..N-1`` (with ``remap``: outside
            ``0..len(remap)-1``, or ``remap`` not input indices). A compiled draw checks
            each code as it goes: the generator may then have moved on, and ``out`` is
            incomplete (nothing is returned).

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
        n = codes.shape[0]
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
        if omap is not None and not self._compiles(codes):
            # the numpy path: output indices drawn a chunk at a time into a buffer, then
            # their codes (the same words in the same order: the same values); every code
            # checked before any word is drawn, as the numpy path does
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
        remapped: NDArray[np.intp] | None = None  # the rows of the cells, if reordered
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
            self._draw_background(codes, generator, out, base, remap is not None, omap)
            return out
        cells16 = self._cells16
        if table is not None:
            if table.size <= 4 * self.n_inputs + 1024:
                # the rows of the tables in code order: the codes then index the cells
                # directly (the same cells, so the same outputs, one gather per record)
                rows = table.astype(np.intp)
                remapped = rows
                cells, cells16 = self._rows_tables(rows)[:2]
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
        kernels = self._kernels_for(codes)
        if kernels is not None:
            # one compiled pass per block, the same outputs; the kernel checks each code
            # before its gather (no separate pass) and a code out of range is refused
            # with the message of the check below (the words of the blocks before it
            # were drawn: the stream has moved on)
            self._draw_compiled(kernels, codes, bitgen, cells, base, remapped,
                                out.view(np.uint64) if omap is None else out, check_range,
                                omap)
            return out
        if omap is not None:  # (draw() takes its own numpy path for output codes)
            raise AssertionError("output codes on the numpy path of a compiled draw")
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

    def _compiles(self, codes: NDArray[Any]) -> bool:
        """Whether a draw of ``codes`` would use the compiled kernels (as
        :meth:`_kernels_for` decides, without counting the records)."""
        n = codes.shape[0]
        if n < _KERNEL_MIN_RECORDS or codes.dtype.kind not in "iu" \
                or not codes.dtype.isnative:
            return False
        return _kernels.compiled(load=self._drawn + n >= self._load_records()) is not None

    def _load_records(self) -> int:
        return _KERNEL_LOAD_RECORDS if self._load_at is None else self._load_at

    @contextlib.contextmanager
    def loading_after(self, records: int) -> Iterator[None]:
        """Within it, this sampler loads the compiled kernels only once it has drawn
        ``records`` records in all (instead of :data:`_KERNEL_LOAD_RECORDS`); kernels
        already loaded are used as before, and the outputs are the same either way. For
        a caller whose draws are a small part of its work (a file engine), where numba's
        import and first calls (about 0.45 s) would cost more than the faster draws save.

        Examples
        --------
        >>> s = AliasSampler([[0.5, 0.5], [0.5, 0.5]])
        >>> with s.loading_after(1 << 40):
        ...     s._load_records() == 1 << 40
        True
        >>> s._load_records() == _KERNEL_LOAD_RECORDS
        True
        """
        before = self._load_at
        self._load_at = records
        try:
            yield
        finally:
            self._load_at = before

    def _kernels_for(self, codes: NDArray[Any]) -> dict[str, Any] | None:
        """Count the records of a draw and give the compiled kernels if this draw uses
        them: enough records, integer codes in native byte order (numba compiles only
        those), numba loaded (or, past :data:`_KERNEL_LOAD_RECORDS` records in all, loaded
        now)."""
        n = codes.shape[0]
        self._drawn += n
        if n < _KERNEL_MIN_RECORDS or codes.dtype.kind not in "iu" \
                or not codes.dtype.isnative:
            return None
        return _kernels.compiled(load=self._drawn >= self._load_records())

    def _rows_tables(self, rows: NDArray[np.intp]) -> tuple[
            NDArray[np.uint64], NDArray[np.uint16] | None, NDArray[np.uint32] | None]:
        """The 64-, 16- and 32-bit cells with their rows in the order ``rows`` (the last
        order asked for is kept: a column's chunks share their categories, and a 1000 x
        1000 table costs more to reorder than a chunk to draw)."""
        key = rows.tobytes()
        cached = self._rows_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        cells = self._cells.reshape(self.n_inputs, -1).take(rows, axis=0).ravel()
        cells16 = None if self._cells16 is None else \
            self._cells16.reshape(self.n_inputs, -1).take(rows, axis=0).ravel()
        c32 = self._compact32()
        cells32 = None if c32 is None else \
            _huge_copy(c32.reshape(self.n_inputs, -1).take(rows, axis=0).ravel())
        for t in (cells, cells16, cells32):
            if t is not None:
                t.setflags(write=False)
        tables = (cells, cells16, cells32)
        self._rows_cache = (key, tables)  # (one assignment: threads see either entry)
        return tables

    def _compact32(self) -> NDArray[np.uint32] | None:
        """The 32-bit cells of the compiled draw (built on first use; None if ``b > 16``):
        the threshold's top ``32 - b`` bits above the alias."""
        if self._bits > 16:
            return None
        if self._cells32 is None:
            b = np.uint64(self._bits)
            low = np.uint64((1 << self._bits) - 1)
            c32 = _huge_copy((((self._cells >> (np.uint64(32) + b)) << b)
                              | (self._cells & low)).astype(np.uint32))
            c32.setflags(write=False)
            self._cells32 = c32
        return self._cells32

    def _draw_compiled(self, kernels: dict[str, Any], codes: NDArray[Any], bitgen: Any,
                       cells: NDArray[np.uint64], base: NDArray[np.uint64] | None,
                       rows: NDArray[np.intp] | None, uout: NDArray[Any],
                       refuse: Callable[[], None], omap: NDArray[Any] | None = None
                       ) -> None:
        """The compiled draw, block by block. The words are drawn here, in record order,
        one block at a time; with two threads (:func:`pmlkit._kernels.draw_threads`) a
        persistent worker runs the kernel on a block (the kernel releases the GIL) while
        this thread draws the next block's words, at most two blocks ahead. Each block's
        kernel reads only its own words and writes only its own outputs, so the outputs
        are those of one thread, word for word."""
        n = codes.shape[0]
        b = self._bits
        cells32 = self._compact32()
        if cells32 is not None and rows is not None:  # the rows in code order, as cells
            cells32 = self._rows_tables(rows)[2]

        def block(r: NDArray[np.uint64], start: int, stop: int) -> None:
            part = np.ascontiguousarray(codes[start:stop])  # one compiled layout
            o = uout[start:stop]
            if cells32 is not None and base is not None:
                bad = _kernels.alias_draw32_based(kernels, r, part, base, cells32, cells, b,
                                                  o, omap)
            elif cells32 is not None:
                bad = _kernels.alias_draw32(kernels, r, part, cells32, cells, b, o, omap)
            elif base is not None:
                bad = _kernels.alias_draw_based(kernels, r, part, base, cells, b, o, omap)
            else:
                bad = _kernels.alias_draw(kernels, r, part, cells, b, o, omap)
            if bad >= 0:  # a code out of range (refused before its gather)
                refuse()
                raise AssertionError("a code out of range passed the range check")

        _run_blocks(n, bitgen, block)

    def _draw_background(self, codes: NDArray[Any], generator: np.random.Generator,
                         out: NDArray[Any], base: NDArray[np.uint64] | None,
                         remapped: bool, omap: NDArray[Any] | None = None) -> None:
        """The draw from shared background cells (:func:`background_tables`): for a
        record of row ``x`` (``base``: row offsets ``x * E`` by code) and word ``r``,
        position ``j = r >> (64 - b)`` is shared cell ``j`` if ``j < K``, else cell
        ``j - K`` of the row's ``E`` cells (flat index ``j + x * E``); the output is
        the cell's primary if the coin ``(r << b) | (2**b - 1)`` is below the cell (its
        threshold above its alias), else the alias. The compiled kernels apply this
        rule operation for operation, so both give the same outputs for the same words."""
        assert self._bg is not None
        n_shared, n_row, cells, prim, b = self._bg
        n = codes.shape[0]
        if n == 0:
            return
        n_codes = self.n_inputs if base is None else base.shape[0]
        what = "input indices" if not remapped else "indices into remap"

        check_range = _range_check(codes, n_codes, what)

        bitgen = generator.bit_generator
        uout = out.view(np.uint64) if omap is None else out
        kernels = self._kernels_for(codes)
        if kernels is not None:
            def block(r: NDArray[np.uint64], start: int, stop: int) -> None:
                part = np.ascontiguousarray(codes[start:stop])
                o = uout[start:stop]
                if base is not None:
                    bad = _kernels.background_draw_based(kernels, r, part, base, cells,
                                                         prim, b, n_shared, o, omap)
                else:
                    bad = _kernels.background_draw(kernels, r, part, n_codes, cells, prim,
                                                   b, n_shared, n_row, o, omap)
                if bad >= 0:  # a code out of range (refused before its gather)
                    check_range()
                    raise AssertionError("a code out of range passed the range check")

            _run_blocks(n, bitgen, block)
            return
        if omap is not None:  # (draw() takes its own numpy path for output codes)
            raise AssertionError("output codes on the numpy path of a compiled draw")
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


def _run_blocks(n: int, bitgen: Any,
                block: Callable[[NDArray[np.uint64], int, int], None]) -> None:
    """``block(words, start, stop)`` for the blocks of :data:`DRAW_BLOCK` records, the
    words drawn here in record order, one block at a time; with two threads
    (:func:`pmlkit._kernels.draw_threads`) a persistent worker runs the blocks in order
    (the kernels release the GIL) while this thread draws the next block's words, at most
    two blocks ahead. Each block reads only its own words and writes only its own
    outputs, so the outputs are those of one thread, word for word."""
    worker = _kernels.worker() if n > DRAW_BLOCK and _kernels.draw_threads() > 1 \
        else None
    if worker is None:
        for start in range(0, n, DRAW_BLOCK):
            stop = min(start + DRAW_BLOCK, n)
            block(bitgen.random_raw(stop - start), start, stop)
        return
    pending: deque[Any] = deque()
    try:
        for start in range(0, n, DRAW_BLOCK):
            stop = min(start + DRAW_BLOCK, n)
            pending.append(worker.submit(block, bitgen.random_raw(stop - start), start,
                                         stop))
            if len(pending) > 2:
                pending.popleft().result()
    finally:  # every block submitted is finished (or failed) before returning
        while pending:
            pending.popleft().result()


def run_chunks(sizes: Sequence[int], generator: np.random.Generator,
               encode: Callable[[int, Any], Any], draw: Callable[[int, int, Any, Any], None],
               local: Callable[[], Any]) -> None:
    """The chunks of a privatisation, chunk ``i`` holding ``sizes[i]`` records from
    record ``start`` (the records of the chunks before it): ``codes = encode(i, own)``
    (its labels encoded; None when a record is no label, the problems then recorded by
    the caller), then, while no chunk before it gave None, ``draw(i, start, codes,
    gen)`` (its outputs drawn with one word of ``gen`` per record, in record order, and
    written). ``own`` is the encoding thread's own object made by ``local()`` (an
    encoder: its caches are the thread's). Every chunk is encoded.

    With two threads (:func:`pmlkit._kernels.draw_threads`) the chunks are data
    parallel: the caller and the one persistent worker take them in turn, each thread
    encoding, drawing and writing its chunk whole (no stage of one thread waits on the
    other's), its draws kept on its thread (:func:`pmlkit._kernels.one_thread`). Chunk
    ``i`` draws from a copy of ``generator`` positioned ``start`` words in
    (:func:`pmlkit.rng.positioned`), and ``generator`` is then moved on by the words a
    single pass draws. So every record gets the word of a single pass, and the release,
    the chunks that draw and the generator's stream after are those of one thread,
    whatever the schedule. The bit generator's lock is held meanwhile: another thread
    drawing from ``generator`` (or releasing from it at the same time) waits, and never
    gets the words of these chunks. A chunk after one that gave None may still be drawn (its
    outputs are then never used). With one thread, or a generator that cannot be
    positioned (a caller's Philox), the chunks are drawn in order from ``generator``
    itself, the worker encoding one chunk ahead. An exception in a chunk stops the
    threads and the first chunk's is raised (``generator`` then left where it was).

    Examples
    --------
    Two chunks whose draws write their words: those of one pass, and the generator
    moved past them, with one thread or two.

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
    from .rng import positioned

    starts = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).tolist()
    if len(sizes) > 1 and _kernels.draw_threads() > 1:
        # the generator's own lock held from the copy to the move on: two threads
        # releasing at once from one generator (which numpy's lock keeps on distinct
        # words when they draw from it) would otherwise both copy it at the same word,
        # and their releases would use the same random words
        with generator.bit_generator.lock:
            base = positioned(generator, 0)
            if base is not None:
                _chunks_in_two(sizes, starts, generator, base, encode, draw, local)
                return
    drawing = True
    for i, codes in enumerate(_encoded_ahead(len(sizes), encode, local)):
        drawing = drawing and codes is not None
        if drawing:
            draw(i, starts[i], codes, generator)


def _chunks_in_two(sizes: Sequence[int], starts: list[int], generator: np.random.Generator,
                   base: np.random.Generator, encode: Callable[[int, Any], Any],
                   draw: Callable[[int, int, Any, Any], None],
                   local: Callable[[], Any]) -> None:
    """The data-parallel part of :func:`run_chunks` (``base``: a copy of ``generator``
    where it stands; ``starts``: each chunk's first record, then the records in all)."""
    from .rng import positioned, skip_words

    lock = threading.Lock()
    todo = iter(range(len(sizes)))
    failed = [len(sizes)]  # the first chunk that gave None
    errors: dict[int, BaseException] = {}

    def loop() -> None:
        own = local()
        with _kernels.one_thread():
            while True:
                with lock:
                    i = None if errors else next(todo, None)
                if i is None:
                    return
                try:
                    codes = encode(i, own)
                    with lock:
                        if codes is None:
                            failed[0] = min(failed[0], i)
                        later = failed[0] < i
                    if codes is not None and not later:
                        draw(i, starts[i], codes, positioned(base, starts[i]))
                except BaseException as exc:  # (re-raised by the caller)
                    with lock:
                        errors[i] = exc
                    return

    pending = _kernels.worker().submit(loop)
    try:
        loop()
    finally:
        if not pending.cancel():  # (not started: a worker busy elsewhere)
            pending.result()
    if errors:
        raise errors[min(errors)]
    skip_words(generator, starts[failed[0]])


def _encoded_ahead(n: int, encode: Callable[[int, Any], Any],
                   local: Callable[[], Any]) -> Iterator[Any]:
    """``encode(i, own)`` of chunks ``0..n-1``, in order, each computed one chunk ahead
    by the one worker (encoding releases the GIL: compiled matchers, Arrow) while the
    caller draws the chunk before; the worker encodes the chunks in order with one
    ``own``, so the codes and the problems are those of a sequential loop."""
    if n < 2:
        own = local()
        for i in range(n):
            yield encode(i, own)
        return
    pool = _kernels.worker()
    owner: list[Any] = []

    def job(i: int) -> Any:
        if not owner:
            owner.append(local())
        return encode(i, owner[0])

    pending = pool.submit(job, 0)
    try:
        for i in range(1, n):
            done = pending.result()
            pending = pool.submit(job, i)
            yield done
        yield pending.result()
    finally:  # (a caller that stops early: the job in flight finished first)
        if not pending.cancel():
            pending.exception()


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

    ``narrow=True``: the compiled matchers of strings (Arrow arrays, and object arrays
    matched by address) write the codes as the narrowest of int16 / int32 that holds the
    labels' indices and -1 (a quarter of the memory to write and read back for the draw,
    which takes codes of any integer width); every other path, and every path while
    the compiled kernels are not loaded, gives intp.
    """

    def __init__(self, labels: Sequence[Any], *, narrow: bool = False) -> None:
        self.labels = tuple(labels)
        self.narrow = narrow
        self.kind = label_kind(self.labels)
        self.range_labels = self.kind == "int" and self.labels == tuple(range(len(labels)))
        self.nulls = 0
        self.unknown: Counter[Any] = Counter()
        self._index: Any = None
        self._lookup: tuple[int, NDArray[np.intp]] | tuple[()] | None = None
        self._keys: _ViewKeys | tuple[()] | None = ()  # built on the first string_view
        self._objects: _AddressTable | None = None
        self._strings: _StringTable | tuple[()] | None = ()  # built on first use

    @property
    def failed(self) -> bool:
        return bool(self.nulls or self.unknown)

    def _code_type(self) -> np.dtype[Any]:
        """The dtype of the codes the compiled matchers write (see ``narrow``)."""
        if self.narrow and _kernels.compiled(load=False) is not None:
            for t in (np.int16, np.int32):
                if len(self.labels) <= np.iinfo(t).max:
                    return np.dtype(t)
        return np.dtype(np.intp)

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
        if kind == "O" and (shared := self._codes_by_identity(values)) is not None:
            return shared
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

    def _codes_by_identity(self, values: NDArray[Any]) -> NDArray[np.intp] | None:
        """Indices of an object array whose records share few distinct objects (strings
        read by pandas or pyarrow, or labels indexed from a small array, are shared, not
        copied per record): each distinct object is matched once, by the rules of
        :meth:`_numpy_codes`, and the records by the object's address (machine words, no
        Python object touched per record). None when the objects are mostly distinct, or
        when any record is not a label (the caller then counts the problems).

        The objects matched so far are kept (referenced, so alive: an address names one
        object) in a table by address (:class:`_AddressTable`); a record whose address is
        in it has that object (the address of an element is read, never followed). The
        other records are copied (holding the GIL: the copy owns a reference to each of
        their objects, which another thread replacing an element of the caller's array
        can then neither free nor have its address reused), their distinct objects
        matched from the copy's addresses and added to the table."""
        pd = require("pandas", "encoding labels of an object/string array")

        n = values.shape[0]
        if n < 4096 or values.ndim != 1:
            return None
        addr = np.asarray(_Addresses(values))  # a view of the pointers, nothing followed
        table = self._objects
        if table is None:
            # the table seeded with the distinct objects of the first records (copied:
            # the copy holds them alive while they are matched), so that only the records
            # holding other objects are factorised below, not the whole first chunk
            # (seeded from more records than tested: with up to 1024 labels, the first
            # 16384 records nearly always hold every label object, so no second round)
            head = values[:_SEED_HEAD].copy()
            first = _first_records(np.asarray(_Addresses(head)))
            if np.count_nonzero(first < 4096) > 1024:  # mostly distinct objects: no gain
                return None
            objs = head.take(first)  # each distinct object, held by the copy
            del head
            obj_codes = self._numpy_codes(objs)
            if obj_codes.size == 0 or obj_codes.min() < 0:
                return None
            table = self._objects = _AddressTable()
            table.add(objs, obj_codes)
        # (narrow codes only while the compiled lookup runs: the numpy one takes intp)
        codes = np.empty(n, dtype=self._code_type() if n >= 4096 else np.intp)
        if table.lookup(addr, codes) == 0:
            return codes
        at = np.flatnonzero(codes < 0)
        rest = values.take(at)
        rest_addr = np.asarray(_Addresses(rest))
        ids, uniq = pd.factorize(rest_addr)
        if uniq.size > max(4096, rest.shape[0] // 16):
            return None
        # the distinct objects themselves: each one's first record in ``rest`` (which
        # holds them alive)
        ids = np.asarray(ids, dtype=np.intp)
        first = _first_records(rest_addr, ids, uniq.size)
        objs = rest.take(first)
        obj_codes = self._numpy_codes(objs)
        if obj_codes.size == 0 or obj_codes.min() < 0:
            return None
        table.add(objs, obj_codes)
        codes[at] = obj_codes.take(ids)
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
        encoder that reports them (chunks encoded on several threads, merged in record
        order, give the counts and the order of one encoder)."""
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

        misses: list[int] = []
        codes = self._arrow_codes(arr, misses)
        if misses == [0]:  # every record a label (counted by the compiled kernel)
            return codes
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

    def _arrow_codes(self, arr: Any, misses: list[int] | None = None) -> np.ndarray:
        """Indices of a plain Arrow array's values, -1 for nulls and unknown values.
        ``misses``: the number of -1 codes is appended when the compiled kernels counted
        them (an array without nulls), else nothing."""
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
        if self.kind == "str" and len(arr) >= _STRING_KERNEL_MIN \
                and (kernels := _kernels.compiled(load=False)) is not None:
            # the compiled kernels read the offsets and bytes (or the views) in one pass
            if self._strings == ():
                self._strings = _string_table(tuple(str(v) for v in self.labels))
            if isinstance(self._strings, _StringTable):
                plain = arr
                if pa.types.is_string_view(t) and self._strings.max_len > 12:
                    plain = arr.cast(pa.large_string())  # long labels: not in the views
                if (codes := self._strings.codes(
                        kernels, plain, None if arr.null_count else misses,
                        self._code_type())) is not None:
                    if arr.null_count:
                        codes[np.asarray(arr.is_null().to_numpy(zero_copy_only=False),
                                         dtype=bool)] = -1
                    return codes
        if self.kind == "str":
            # short labels: exact fixed-width keys read from string views (no string
            # hash); string/large_string arrays get views pointing into their own data
            # (Arrow's cast copies no string), which with the keys measured as fast as
            # index_in or faster (k = 2: about 9.6 against 13.5 ns/record)
            if self._keys == ():
                self._keys = _view_keys(tuple(str(v) for v in self.labels))
            if isinstance(self._keys, _ViewKeys) and hasattr(pa, "string_view") \
                    and (codes := self._keys.codes(
                        arr if pa.types.is_string_view(t) else arr.cast(pa.string_view()))
                    ) is not None:
                if arr.null_count:
                    codes[np.asarray(arr.is_null().to_numpy(zero_copy_only=False),
                                     dtype=bool)] = -1
                return codes
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

def _first_records(addr: NDArray[np.uint64], ids: NDArray[np.intp] | None = None,
                   m: int = 0) -> NDArray[np.intp]:
    """The position of the first record of each distinct address, in record order (a
    hash factorisation, no sort; ``ids``/``m``: a factorisation already made).

    Examples
    --------
    >>> _first_records(np.array([7, 3, 7, 9, 3], dtype=np.uint64)).tolist()
    [0, 1, 3]
    """
    if ids is None:
        pd = require("pandas", "encoding labels of an object/string array")
        codes, uniq = pd.factorize(addr)
        ids, m = np.asarray(codes, dtype=np.intp), uniq.size
    first = np.empty(m, dtype=np.intp)
    first[ids[::-1]] = np.arange(ids.shape[0] - 1, -1, -1, dtype=np.intp)
    return first  # (factorised in order of first appearance: increasing)


def _fits_int64(values: NDArray[Any]) -> bool:
    """Whether integer values convert to int64 unchanged (uint64 above 2**63 - 1 would
    wrap to negative numbers, which could then look like negative labels)."""
    if values.dtype.kind != "u" or values.dtype.itemsize < 8 or values.size == 0:
        return True
    return bool(values.max() <= np.iinfo(np.int64).max)


class _Addresses:
    """A read-only uint64 view of an object array's pointers (numpy has no such view of
    its own), through the array interface; it keeps the array (and so every object it
    points to) alive while the view exists."""

    def __init__(self, values: NDArray[Any]) -> None:
        if values.dtype.kind != "O" or values.dtype.itemsize != 8:
            raise TypeError("an object array of 8-byte pointers is needed")
        self.values = values
        self.__array_interface__ = {
            "data": (values.ctypes.data, True), "shape": values.shape,
            "strides": values.strides, "typestr": "<u8", "version": 3}


class _AddressTable:
    """Objects already matched to input indices, found by address: an open-addressing
    table (multiplicative hashing of the address, linear probing) that holds a reference
    to every object in it, so an address in the table names that object for the table's
    lifetime. Every hit compares the whole address, so a record is only ever given the
    index of the very object it holds; an address not in the table is a miss (-1)."""

    #: odd multipliers tried in turn (the first is 2**64 over the golden ratio, Fibonacci
    #: hashing); the one displacing the fewest keys from their first slot is kept
    MULTS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
             0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53,
             0x94D049BB133111EB, 0xBF58476D1CE4E5B9)
    #: at most this many objects are kept (more distinct objects: misses stay misses)
    MAX_OBJECTS = 1 << 16

    def __init__(self) -> None:
        self.objects: list[Any] = []
        self.codes: list[int] = []
        self.addr = np.zeros(0, dtype=np.uint64)  # the objects' addresses
        self.bits = 0
        self.mult = self.MULTS[0]
        self.keys = np.zeros(1, dtype=np.uint64)
        self.values = np.full(1, -1, dtype=np.intp)
        self.max_probe = 0

    def add(self, objs: NDArray[Any], codes: NDArray[np.intp]) -> None:
        """Remember each object's input index (objects already in the table, or twice in
        ``objs``, are kept once)."""
        if len(self.objects) + objs.shape[0] > self.MAX_OBJECTS:
            return
        new_addr = np.array(_Addresses(objs), dtype=np.uint64)
        _, first = np.unique(new_addr, return_index=True)
        first = np.sort(first[~np.isin(new_addr[first], self.addr)])
        self.objects.extend(objs.take(first).tolist())  # (held: each address names one)
        self.codes.extend(np.asarray(codes).take(first).tolist())
        addr = self.addr = np.concatenate([self.addr, new_addr.take(first)])
        self.bits = max(4, (8 * addr.shape[0] - 1).bit_length())  # load factor <= 1/8
        fewest = addr.shape[0] + 1
        for mult in self.MULTS:
            moved = addr.shape[0] - np.unique(self._slots(addr, mult)).shape[0]
            if moved < fewest:
                fewest, self.mult = moved, mult
            if moved == 0:
                break
        self._fill(addr)

    def _slots(self, addr: NDArray[np.uint64], mult: int | None = None) -> NDArray[np.intp]:
        """Each address's first slot: the top ``bits`` bits of ``(addr >> 4) * mult``
        modulo 2**64 (objects are 16-byte aligned; the low bits carry nothing)."""
        h = addr >> np.uint64(4)
        h *= np.uint64(self.mult if mult is None else mult)
        h >>= np.uint64(64 - self.bits)
        return h.view(np.intp)

    def _fill(self, addr: NDArray[np.uint64]) -> None:
        m = addr.shape[0]
        size = 1 << self.bits
        keys = np.zeros(size, dtype=np.uint64)
        values = np.full(size, -1, dtype=np.intp)
        codes = np.asarray(self.codes, dtype=np.intp)
        home = self._slots(addr)
        dist = np.zeros(m, dtype=np.intp)
        pending = np.arange(m)
        # linear probing, all keys at once: a key moves on only past an occupied slot (a
        # slot taken this round by another key counts), so every slot between a key's home
        # and its place is occupied and a lookup finds it before an empty slot
        while pending.size:
            slot = (home[pending] + dist[pending]) & (size - 1)
            _, first = np.unique(slot, return_index=True)
            win = np.zeros(pending.size, dtype=bool)
            win[first] = True
            win &= keys[slot] == 0
            keys[slot[win]] = addr[pending[win]]
            values[slot[win]] = codes[pending[win]]
            dist[pending[~win]] += 1
            pending = pending[~win]
        self.keys, self.values = keys, values
        self.max_probe = int(dist.max()) if m else 0

    def lookup(self, addr: NDArray[np.uint64], out: NDArray[np.intp]) -> int:
        """The input index of each address's object into ``out`` (-1 for an address not in
        the table); returns how many addresses are not in it."""
        kernels = _kernels.compiled(load=False) if addr.shape[0] >= 4096 else None
        if kernels is not None:
            return _kernels.address_codes(kernels, addr, self.keys, self.values, self.mult,
                                          self.bits, out)
        mask = (1 << self.bits) - 1
        misses = 0
        for start in range(0, addr.shape[0], DRAW_BLOCK):  # cache-sized blocks
            a = addr[start:start + DRAW_BLOCK]
            o = out[start:start + DRAW_BLOCK]
            slot = self._slots(a)
            self.values.take(slot, out=o)
            key = self.keys.take(slot)
            todo = np.flatnonzero(key != a)
            if todo.size == 0:
                continue
            o[todo] = -1
            # records not in their first slot: the next slots, up to the longest probe
            todo = todo[key[todo] != 0]
            for _ in range(self.max_probe):
                if todo.size == 0:
                    break
                slot_t = (slot[todo] + 1) & mask
                slot[todo] = slot_t
                key_t = self.keys.take(slot_t)
                found = key_t == a[todo]
                o[todo[found]] = self.values.take(slot_t[found])
                todo = todo[~found & (key_t != 0)]
            misses += int(np.count_nonzero(o < 0))
        return misses


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

#: Records per block of the key computation (the temporaries stay in the CPU cache).
_KEY_BLOCK = 1 << 16
#: The bytes of a view's two 64-bit words that belong to a string of L <= 12 bytes, by L
#: (word 0: the 4-byte length and the first 4 bytes; word 1: bytes 4..11).
_VIEW_WORD0 = np.array([0xFFFFFFFF | (((1 << (8 * min(i, 4))) - 1) << 32) for i in range(13)],
                       dtype=np.uint64)
_VIEW_WORD1 = np.array([(1 << (8 * min(max(i - 4, 0), 8))) - 1 for i in range(13)],
                       dtype=np.uint64)
#: Largest alphabet matched by keys (the slot table has 2 k^2 to 8 k^2 entries, 16-bit
#: codes above 2^16 slots: at most 8 MB).
_KEYS_MAX_LABELS = 1024


class _ViewKeys:
    """Exact fixed-width keys of string labels of at most 12 UTF-8 bytes, matched against
    the 16-byte views of Arrow ``string_view`` arrays (polars' own string layout).

    A string of at most 12 bytes is inlined in its view: a little-endian 4-byte length,
    then the bytes (the padding is masked here, not trusted). So the two 64-bit words of
    the view, masked to the record's length, are a key that determines the string; a
    record longer than 12 bytes is never equal to a label. A multiplicative hash of the
    key picks one slot of a table in which no two labels share a slot (the multiplier is
    searched for once), and the slot's label is accepted only if its full key (length
    and both words) equals the record's; otherwise the record gets -1. The codes are
    those of an exact dictionary lookup whatever the bytes (embedded NULs, non-ASCII,
    prefixes of labels, long records sharing a label's first bytes).

    Measured against Arrow's ``index_in`` (a hash of the strings): about 2x faster on
    string_view arrays (which ``index_in`` must first convert), and on string/large_string
    arrays cast to views as fast or faster (the same keys read from their offsets and data
    buffers by unaligned loads were slower than ``index_in``).
    """

    def __init__(self, words: NDArray[np.uint64], hashed: int, mult: tuple[np.uint64,
                 np.uint64], shift: np.uint64, table: NDArray[Any]) -> None:
        self.words = words  # (2, k): both view words of each label (word 0: the length)
        self.two = bool(words[1].any())  # whether any label has more than 4 bytes
        self.hashed = hashed  # the word hashed (0 or 1) when it alone tells labels apart,
        # else 2: both
        lens = words[0] & np.uint64(0xFFFFFFFF)
        # labels of one length L: every record is masked to L bytes (a record of another
        # length keeps its own length in word 0, so it still never equals a label)
        self.same_len = int(lens[0]) if (lens == lens[0]).all() else None
        self.mult = mult
        self.shift = shift
        self.table = table

    @classmethod
    def build(cls, labels: Sequence[str]) -> _ViewKeys | None:
        """The keys of distinct ``str`` labels, or None when a label has more than 12
        bytes in UTF-8 (or none: lone surrogates), or there are too many labels."""
        k = len(labels)
        if not 0 < k <= _KEYS_MAX_LABELS or sys.byteorder != "little":
            return None
        try:
            raw = [lab.encode("utf-8") for lab in labels]
        except UnicodeEncodeError:
            return None
        if len(set(raw)) != k or max(map(len, raw)) > 12:
            return None
        views = [len(r).to_bytes(4, "little") + r.ljust(12, b"\0") for r in raw]
        w = np.array([(int.from_bytes(v[:8], "little"), int.from_bytes(v[8:], "little"))
                      for v in views], dtype=np.uint64).reshape(k, 2).T.copy()
        # hash one word when it alone tells the labels apart (two fewer passes per record)
        hashed = next((i for i in (0, 1) if np.unique(w[i]).size == k), 2)
        # a multiply-shift hash into 2^bits >= 2 k^2 slots has no collision among k keys
        # with probability above 1/2 per multiplier; the labels are public and every hit
        # is verified on the full key, so a fixed seed is fine
        search = np.random.default_rng(0x5EED)
        lo = max(3, (2 * k * k - 1).bit_length())
        for bits in range(lo, lo + 2):
            shift = np.uint64(64 - bits)
            for _ in range(32):
                m = search.integers(0, 2**62, 2, dtype=np.int64)
                mult = (np.uint64(4 * int(m[0]) + 1), np.uint64(4 * int(m[1]) + 1))
                h = cls._hash(w[0], w[1], hashed, mult, shift, np.empty(k, dtype=np.uint64))
                if np.unique(h).size == k:
                    # empty slots hold code 0: the verification rejects what lands there
                    table = np.zeros(1 << bits, dtype=np.intp if bits <= 16 else np.int16)
                    table[h.astype(np.intp)] = np.arange(k)
                    return cls(w, hashed, mult, shift, table)
        return None

    @staticmethod
    def _hash(a: NDArray[np.uint64], b: NDArray[np.uint64], hashed: int,
              mult: tuple[np.uint64, np.uint64], shift: np.uint64,
              out: NDArray[np.uint64]) -> NDArray[np.uint64]:
        """Slot numbers of keys ``(a, b)``: of ``a`` alone (``hashed`` 0), ``b`` alone
        (1) or both (2)."""
        if hashed == 2:
            np.multiply(b, mult[1], out=out)
            out ^= a
            out *= mult[0]
        else:
            np.multiply(b if hashed else a, mult[0], out=out)
        out >>= shift
        return out

    def codes(self, arr: Any) -> NDArray[np.intp] | None:
        """Codes of a pyarrow string_view array: -1 for a record that is not a label
        (nulls are not masked here); None if its views buffer is too short (not a valid
        array: the caller's generic path decides)."""
        n = len(arr)
        out = np.empty(n, dtype=np.intp)  # every block is written in full
        if n == 0:
            return out
        buf = arr.buffers()[1]
        if buf is None or buf.size < 16 * (arr.offset + n):
            return None
        views = np.frombuffer(buf, dtype="<u8", count=2 * (arr.offset + n)).reshape(-1, 2)
        views = views[arr.offset:]
        size = min(_KEY_BLOCK, n)
        lens = np.empty(size, dtype=np.uint64)
        a = np.empty(size, dtype=np.uint64)
        b = np.empty(size, dtype=np.uint64)
        mask = np.empty(size, dtype=np.uint64)
        h = np.empty(size, dtype=np.uint64)
        for start in range(0, n, _KEY_BLOCK):
            stop = min(start + _KEY_BLOCK, n)
            if stop - start != size:
                size = stop - start
                lens, a, b, mask, h = lens[:size], a[:size], b[:size], mask[:size], h[:size]
            w0 = views[start:stop, 0]
            if self.same_len is not None:
                np.bitwise_and(w0, _VIEW_WORD0[self.same_len], out=a)
                if self.two:
                    np.bitwise_and(views[start:stop, 1], _VIEW_WORD1[self.same_len], out=b)
                self._lookup(a, b, h, out[start:stop])
                continue
            # the length (unsigned: a forged negative one is huge), then both words masked
            # to it; word 0 keeps the length, so a longer record never equals a label
            np.bitwise_and(w0, np.uint64(0xFFFFFFFF), out=lens)
            ilens = lens.view(np.intp)
            _VIEW_WORD0.take(ilens, out=mask, mode="clip")
            np.bitwise_and(w0, mask, out=a)
            if self.two:
                _VIEW_WORD1.take(ilens, out=mask, mode="clip")
                np.bitwise_and(views[start:stop, 1], mask, out=b)
            self._lookup(a, b, h, out[start:stop])
        return out

    def _lookup(self, a: NDArray[np.uint64], b: NDArray[np.uint64], h: NDArray[np.uint64],
                out: NDArray[np.intp]) -> None:
        """Codes of keys ``(a, b)``: the slot's label when its key is equal, else -1 (with
        every label at most 4 bytes, ``b`` is 0 for every record that can equal one)."""
        self._hash(a, b, self.hashed, self.mult, self.shift, h)
        if self.table.dtype == np.intp:
            self.table.take(h.view(np.intp), out=out, mode="clip")
        else:
            out[:] = self.table.take(h.view(np.intp), mode="clip")
        ok = self.words[0].take(out) == a
        if self.two:
            ok &= self.words[1].take(out) == b
        if not ok.all():
            out[~ok] = -1


# ---------------------------------------------------------------------------------------
# String labels matched and built by the compiled kernels, straight from Arrow buffers
# ---------------------------------------------------------------------------------------

#: Arrays shorter than this keep the numpy/Arrow paths (the kernels' call costs more).
_STRING_KERNEL_MIN = 4096
#: Largest alphabet of the compiled string table (k labels in at least 4 k slots).
_STRING_MAX_LABELS = 1 << 16
#: For m = 0..16 bytes: the mask of the first min(m, 8) bytes of a little-endian word
#: (entries 0..16), then of the next max(m - 8, 0) bytes (entries 17..33).
_BYTE_MASKS = np.array([(1 << (8 * min(m, 8))) - 1 for m in range(17)]
                       + [(1 << (8 * min(max(m - 8, 0), 8))) - 1 for m in range(17)],
                       dtype=np.uint64)
#: Largest alphabet placed without seeds (in at least 2 k**2 slots: 8192 int16 at 64).
_STRING_DIRECT_LABELS = 64
#: Attempts per bucket at a seed that places all its labels on free slots.
_STRING_SEED_TRIES = 4096
#: Multipliers tried for the first table of the one-word string kernels.
_STRING_FAST_TRIES = 64


def _view_keys(labels: tuple[str, ...]) -> _ViewKeys | None:
    """:meth:`_ViewKeys.build`, kept for the last few label sets (1000 labels take about
    2 ms, paid by every encoder, so by each thread of every release; its arrays are
    read-only, so threads share it). Kept by the labels' UTF-8 bytes: the cache holds no
    reference to the caller's label objects."""
    try:
        raw = tuple(lab.encode("utf-8") for lab in labels)
    except UnicodeEncodeError:
        return None
    return _view_keys_of(raw)


@functools.lru_cache(maxsize=16)
def _view_keys_of(raw: tuple[bytes, ...]) -> _ViewKeys | None:
    keys = _ViewKeys.build([r.decode("utf-8") for r in raw])
    if keys is not None:
        for a in (keys.words, keys.table):
            a.setflags(write=False)
    return keys


@functools.lru_cache(maxsize=16)
def _string_table(labels: tuple[str, ...]) -> _StringTable | None:
    """:meth:`_StringTable.build`, kept for the last few label sets (a 1000-label table
    takes about 15 ms to build: as long as drawing a million records; its arrays are
    read-only, so threads share it)."""
    table = _StringTable.build(labels)
    if table is not None:
        for a in (table.lab_len, table.lab_w0, table.lab_w1, table.lab_off, table.seeds,
                  table.table, table.mults, table.fast):
            a.setflags(write=False)
    return table


class _StringTable:
    """String labels in a perfect hash table for the compiled encoders of Arrow
    ``string``/``large_string`` (offsets and data) and ``string_view`` arrays.

    A record's key is its byte length and its first 16 bytes as two little-endian 64-bit
    words (zero past its end), mixed into one word ``x`` (multiply-add). The top bits of
    ``x`` choose a bucket; the bucket's seed, XORed into ``x`` and multiplied, chooses one
    slot (hash and displace: the seeds are searched for once, largest buckets first, so
    that no two labels share a slot). A record is looked up in that one slot, and the
    slot's label accepted only if its length and both words equal the record's and, past
    16 bytes, every further byte: the codes are those of an exact dictionary lookup on the
    UTF-8 bytes, with one table read and no branch on the data per record (empty slots
    hold label 0, which the verification rejects). Labels that cannot be separated (two
    longer than 16 bytes with the same length and first 16 bytes) give no table: the
    caller's generic path encodes them.

    The one-word kernels (labels of at most 8 bytes) first look the record up in a
    second table without seeds (:meth:`_place_fast`: one multiplier, at least ``8 k``
    slots), which holds every label that has a slot of its own there; the seeded table
    is read only on a miss (a label sharing its fast slot, or no label). At 1000 labels
    ``v0000``-``v0999`` every label has its own slot (string_view codes of 10^7 records:
    36 -> 22 ms, one thread); at 1000 random 3-8 letter labels 906 do (36 -> 31-33 ms).
    """

    #: odd multipliers of the key mix and of the slot (fixed: the labels are public and
    #: every hit is verified on the full bytes), tried in turn
    MULTS = ((0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
              0xD6E8FEB86659FD93),
             (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB,
              0xBF58476D1CE4E5B9))

    def __init__(self, raw: list[bytes]) -> None:
        k = len(raw)
        self.k = k
        self.max_len = max(len(r) for r in raw)
        # the kernels' tables as narrow as they can be (lengths in bytes up to 255 bytes,
        # slots in 16 bits up to 2**15 labels): at k = 1000 the 64-bit lengths and 32-bit
        # slots (44 KB with the words and seeds) left the L1 cache
        self.lab_len = np.array([len(r) for r in raw], dtype=np.uint8 if self.max_len <= 255
                                else np.uint64)
        self._slot_dtype = np.int16 if k < 1 << 15 else np.int32
        head = [r[:16].ljust(16, b"\0") for r in raw]
        self.lab_w0 = np.array([int.from_bytes(h[:8], "little") for h in head],
                               dtype=np.uint64)
        self.lab_w1 = np.array([int.from_bytes(h[8:], "little") for h in head],
                               dtype=np.uint64)
        self.lab_off = np.zeros(k + 1, dtype=np.uint64)
        np.cumsum(self.lab_len, dtype=np.uint64, out=self.lab_off[1:])
        self.lab_data = np.frombuffer(b"".join(raw) or b"\0", dtype=np.uint8)
        bucket_bits = max(1, (max(k // 2, 1) - 1).bit_length())  # about 2 labels each
        self.bucket_shift = np.uint64(64 - bucket_bits)
        self.seeds = np.zeros(1 << bucket_bits, dtype=np.uint64)
        self.bits = max(4, (4 * k - 1).bit_length())  # at least 4 k slots
        self.shift = np.uint64(64 - self.bits)
        self.table = np.zeros(1 << self.bits, dtype=self._slot_dtype)
        self.mults = np.zeros(4, dtype=np.uint64)
        self.direct = False
        # the first lookup's table (see _place_fast)
        self.fast = self.table
        self.fast_mult = np.uint64(0)
        self.fast_shift = self.shift

    @classmethod
    def build(cls, labels: Sequence[str]) -> _StringTable | None:
        """The table of distinct ``str`` labels, or None (a label that UTF-8 cannot
        encode, too many labels, or labels no seeds separate)."""
        k = len(labels)
        if not 0 < k <= _STRING_MAX_LABELS or sys.byteorder != "little":
            return None
        try:
            raw = [lab.encode("utf-8") for lab in labels]
        except UnicodeEncodeError:
            return None
        if len(set(raw)) != k:
            return None
        self = cls(raw)
        for mults in cls.MULTS:
            if k <= _STRING_DIRECT_LABELS and self._place_direct(
                    np.array(mults, dtype=np.uint64)):
                self.fast, self.fast_mult, self.fast_shift = \
                    self.table, self.mults[3], self.shift
                return self
            if self._place(np.array(mults, dtype=np.uint64)):
                self._place_fast()
                return self
        return None

    def _place_fast(self) -> None:
        """The one-word kernels' first table: ``2**bits`` slots (at least ``8 k``, at most
        ``2**16``) by the key times one multiplier (searched for, fixed seed: the one
        leaving the most labels a slot of their own); a label alone in its slot is put
        there, a slot of several labels holds one of them (the verification rejects the
        others, which the seeded table then finds). When every label has its own slot
        the table is *direct*: a record that misses it is no label."""
        k = self.k
        m = self.mults
        x = (self.lab_w0 * m[0]) + (self.lab_w1 * m[1]) + (self.lab_len * m[2])
        bits = min(max(4, (8 * k - 1).bit_length()), 16)
        shift = np.uint64(64 - bits)
        search = np.random.default_rng(0xFA57)
        best: tuple[int, np.uint64, NDArray[np.intp], NDArray[np.bool_]] | None = None
        for _ in range(_STRING_FAST_TRIES):
            mult = np.uint64(int(search.integers(0, 2**62)) * 2 + 1)
            slots = ((x * mult) >> shift).astype(np.intp)
            alone = np.bincount(slots, minlength=1 << bits)[slots] == 1
            if best is None or int(alone.sum()) > best[0]:
                best = (int(alone.sum()), mult, slots, alone)
            if best[0] == k:
                break
        assert best is not None
        found, mult, slots, alone = best
        fast = np.zeros(1 << bits, dtype=self._slot_dtype)
        fast[slots] = np.arange(k)  # (a shared slot: the last of its labels)
        self.fast, self.fast_mult, self.fast_shift = fast, mult, shift
        self.direct = found == k

    def _place_direct(self, m: NDArray[np.uint64]) -> bool:
        """A few labels placed by the slot multiplier alone (every seed 0, so the
        one-word kernels skip reading it): the key mix of the multipliers ``m``, then a
        multiplier ``m[3]`` searched for (fixed seed) under which the labels' slots among
        at least ``2 k**2`` are distinct (probability above 1/2 per multiplier); False if
        none of the tries separates them."""
        k = self.k
        x = (self.lab_w0 * m[0]) + (self.lab_w1 * m[1]) + (self.lab_len * m[2])
        bits = max(self.bits, (2 * k * k - 1).bit_length())
        shift = np.uint64(64 - bits)
        search = np.random.default_rng(0xD1EC7)
        for _ in range(64):
            m3 = np.uint64(int(search.integers(0, 2**62)) * 2 + 1)
            slots = ((x * m3) >> shift).astype(np.intp)
            if np.unique(slots).size == k:
                table = np.zeros(1 << bits, dtype=self._slot_dtype)
                table[slots] = np.arange(k)
                self.table, self.bits, self.shift = table, bits, shift
                self.mults = np.array([m[0], m[1], m[2], m3], dtype=np.uint64)
                self.seeds = np.zeros_like(self.seeds)
                self.direct = True
                return True
        return False

    def _place(self, m: NDArray[np.uint64]) -> bool:
        """Search the buckets' seeds for the multipliers ``m``; False if a bucket fails."""
        x = (self.lab_w0 * m[0]) + (self.lab_w1 * m[1]) + (self.lab_len * m[2])
        bucket = (x >> self.bucket_shift).astype(np.intp)
        taken = np.zeros(1 << self.bits, dtype=bool)
        table = np.zeros(1 << self.bits, dtype=self._slot_dtype)
        seeds = np.zeros_like(self.seeds)
        search = np.random.default_rng(0x5EED)
        sizes = np.bincount(bucket, minlength=seeds.shape[0])
        for b in np.argsort(-sizes, kind="stable")[:int(np.count_nonzero(sizes))].tolist():
            members = np.flatnonzero(bucket == b)
            keys = x[members]
            for _ in range(_STRING_SEED_TRIES):
                seed = np.uint64(int(search.integers(1, 2**63)))
                slots = (((keys ^ seed) * m[3]) >> self.shift).astype(np.intp)
                if np.unique(slots).size == slots.size and not taken[slots].any():
                    taken[slots] = True
                    table[slots] = members
                    seeds[b] = seed
                    break
            else:
                return False
        self.table, self.seeds, self.mults = table, seeds, m
        return True

    def codes(self, kernels: dict[str, Callable[..., Any]], arr: Any,
              misses: list[int] | None = None, dtype: Any = np.intp
              ) -> NDArray[Any] | None:
        """Codes of a pyarrow string, large_string or string_view array: -1 for a record
        that is not a label (nulls are not masked here). None when the kernels cannot
        decide (buffers too short or offsets outside the data: not a valid array; a
        string_view array while a label has more than 12 bytes): the caller's generic
        path decides. ``misses``: the number of records that are no label is appended
        (counted by the kernel on the way). ``dtype``: the codes' (a signed integer type
        holding every label's index)."""
        import pyarrow as pa

        n = len(arr)
        out = np.empty(n, dtype=dtype)
        if n == 0:
            if misses is not None:
                misses.append(0)
            return out
        t = arr.type
        bufs = arr.buffers()
        if pa.types.is_string_view(t):
            if self.max_len > 12 or bufs[1] is None or bufs[1].size < 16 * (arr.offset + n):
                return None
            views = np.frombuffer(bufs[1], dtype="<u8", count=2 * (arr.offset + n))
            if self.max_len <= 8 and "view_codes8" in kernels:  # one word per label
                done = kernels["view_codes8"](views[2 * arr.offset:], _BYTE_MASKS,
                                              self.table, self.seeds, self.mults,
                                              self.bucket_shift, self.shift, self.lab_len,
                                              self.lab_w0, self.max_len, self.direct,
                                              self.fast, self.fast_mult, self.fast_shift,
                                              out)
                if misses is not None:
                    misses.append(-1 - int(done))
                return out
            done = kernels["view_codes"](views[2 * arr.offset:], _BYTE_MASKS, self.table,
                                         self.seeds, self.mults, self.bucket_shift,
                                         self.shift, self.lab_len, self.lab_w0, self.lab_w1,
                                         self.lab_off, self.lab_data, self.max_len, out)
            if misses is not None:
                misses.append(-1 - int(done))
            return out
        wide = pa.types.is_large_string(t)
        if not (wide or pa.types.is_string(t)):
            return None
        item = 8 if wide else 4
        if bufs[1] is None or bufs[1].size < item * (arr.offset + n + 1):
            return None
        offsets = np.frombuffer(bufs[1], dtype="<i8" if wide else "<i4",
                                count=arr.offset + n + 1)[arr.offset:]
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None \
            else np.zeros(0, dtype=np.uint8)
        words = np.frombuffer(bufs[2], dtype="<u8", count=data.shape[0] // 8) \
            if data.shape[0] >= 8 else np.zeros(0, dtype=np.uint64)
        if self.max_len <= 8:  # one word per label
            bad = kernels["string_codes8"](offsets, data, words, _BYTE_MASKS, self.table,
                                           self.seeds, self.mults, self.bucket_shift,
                                           self.shift, self.lab_len, self.lab_w0,
                                           self.max_len, self.direct, self.fast,
                                           self.fast_mult, self.fast_shift, out)
            if bad < 0 and misses is not None:
                misses.append(-1 - int(bad))
            return None if bad >= 0 else out
        bad = kernels["string_codes"](offsets, data, words, _BYTE_MASKS, self.table,
                                      self.seeds, self.mults, self.bucket_shift, self.shift,
                                      self.lab_len, self.lab_w0, self.lab_w1, self.lab_off,
                                      self.lab_data, self.max_len, out)
        if bad < 0 and misses is not None:
            misses.append(-1 - int(bad))
        return None if bad >= 0 else out


def arrow_take(labels: Any, idx: NDArray[np.intp],
               counts: NDArray[np.int64] | None = None) -> Any:
    """``labels.take(idx)`` for a pyarrow array of labels and valid indices (no nulls):
    for ``string``/``large_string`` labels the compiled kernels (once loaded) write the
    offsets and the bytes of the output directly (one pass each); string_view labels
    (which Arrow's take does not support) by gathering their 16-byte views, which keep
    pointing into the labels' own data buffers; any other type by Arrow's take.
    ``counts`` (an int64 array, one entry per label): how many records get each label is
    added to it (by the compiled take in the same pass, else by ``np.bincount``).

    Raises
    ------
    ValidationError
        An index outside ``0..len(labels) - 1`` (checked per record by the kernels).

    Examples
    --------
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> arrow_take(pa.array(["no", "yes"]), np.array([1, 0, 1])).to_pylist()
    ['yes', 'no', 'yes']
    """
    import pyarrow as pa

    t = labels.type
    n = idx.shape[0]
    kernels = _kernels.compiled(load=False) if n >= _STRING_KERNEL_MIN else None
    if counts is not None and not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        # (the indices checked by the take before they are counted)
        return _counted(arrow_take(labels, idx), idx, counts, len(labels))
    if pa.types.is_string_view(t):
        views = np.frombuffer(labels.buffers()[1], dtype=np.uint64).reshape(-1, 2)
        views = views[labels.offset:labels.offset + len(labels)]
        if kernels is not None and not labels.null_count and _kernel_index(idx):
            buf = pa.allocate_buffer(16 * n)  # (from the pool: no fresh pages)
            flat, out = np.ascontiguousarray(views).ravel(), np.frombuffer(buf, np.uint64)
            if min(in_two(n, lambda lo, hi: int(kernels["take_views"](
                    idx[lo:hi], flat, out[2 * lo:2 * hi])))) < 0:
                raise _bad_label_index(idx, len(labels))
            return pa.Array.from_buffers(t, n, [None, buf, *labels.buffers()[2:]])
        idx = np.asarray(idx)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= len(labels)):
            raise _bad_label_index(idx, len(labels))  # (numpy would count from the end)
        taken = pa.py_buffer(views.take(idx, axis=0))
        return pa.Array.from_buffers(t, n, [None, taken, *labels.buffers()[2:]])
    writer = _StringWriter.make(labels, n, kernels) if _kernel_index(idx) else None
    if writer is None:
        return _counted(_arrow_take(labels, idx), idx, counts, len(labels))
    k = len(labels)
    found = np.zeros(k, dtype=np.int64)  # the counts of the records taken

    def part(lo: int, hi: int) -> int:
        # records lo..hi-1; a part after the first starts at the bytes of the records
        # before it, from their counts (counted here: this thread's part of the work),
        # which are then also the counts of the first part (which does not count)
        start = 0
        first_counted = lo == 0 and hi < n
        if lo:
            before = np.zeros((count_lanes(k), k), dtype=_count_dtype(lo))
            if int(writer.kernels["count_codes"](idx[:lo], before)) >= 0:
                return -1  # (an index that is not a label's: the first part says so)
            sums = before.sum(axis=0, dtype=np.int64)
            start = int(sums @ writer.lab_len.astype(np.int64))
            if counts is not None:
                with lock:
                    found[:] += sums
        parts = np.zeros((count_lanes(k), k if counts is not None and not first_counted
                          else 0), dtype=_count_dtype(hi - lo))
        end = writer.write(lo, idx[lo:hi], start, parts)
        if parts.shape[1] and end >= 0:
            with lock:
                found[:] += parts.sum(axis=0, dtype=np.int64)
        return end

    lock = threading.Lock()
    # the second part also counts the first's records (for its start), so the first
    # part is the larger: both then end at about the same time (at k = 1000, 10^7
    # records, 2 threads, best of 11: 7.4 against 10.0 ms for halves, 8.1 against 10.5
    # with the counts)
    mid = (n * _TAKE_FIRST) >> 8
    ends = in_two(n, part, mid)
    if min(ends) < 0:  # an index that is not a label's (stopped before reading it)
        raise _bad_label_index(idx, len(labels))
    if len(ends) > 1:
        writer.mend_seam(mid, idx, ends[-1])
    if counts is not None:
        counts += found[:counts.shape[0]]
    return writer.array(ends[-1])


class _StringWriter:
    """The offsets and bytes of an Arrow ``string``/``large_string`` array of output
    labels for ``n`` records, written by the compiled takes (``take_short``: labels of at
    most 8 bytes, one store per record; else ``take_strings``) part by part: a part of
    records ``lo..`` starting at byte ``start`` (:meth:`write`). Parts written in record
    order need nothing more; two parts written at once need the seam mended
    (:meth:`mend_seam`)."""

    def __init__(self, kernels: dict[str, Callable[..., Any]], labels: Any, n: int,
                 raw: list[bytes], longest: int, wide: bool) -> None:
        import pyarrow as pa

        self.kernels = kernels
        self.type = labels.type
        self.n = n
        # the kernels' tables as narrow as they can be (lengths in bytes up to 255 bytes,
        # histograms in 32 bits while no count can reach 2**32): at k = 1000 the 64-bit
        # ones (24 KB with the labels' words) crowded the L1 cache, 18 against 11 ms per
        # 10^7 records
        self.lab_len = np.array([len(r) for r in raw], dtype=np.uint8 if longest <= 255
                                else np.uint32 if longest < 1 << 32 else np.uint64)
        width = max(1, -(-longest // 8))
        self.lab_words = np.frombuffer(b"".join(r.ljust(8 * width, b"\0") for r in raw),
                                       dtype="<u8").reshape(len(raw), width)
        # the output buffers from Arrow's memory pool (which reuses freed memory; fresh
        # pages from the system cost about as much as writing them)
        self.off_buf = pa.allocate_buffer((n + 1) * (8 if wide else 4))
        self.out_off = np.frombuffer(self.off_buf, dtype=np.int64 if wide else np.int32)
        self.data_buf = pa.allocate_buffer(8 * (n * longest // 8 + 2))
        self.out_words = np.frombuffer(self.data_buf, dtype="<u8")
        self._take, self._words = (kernels["take_short"], self.lab_words[:, 0].copy()) \
            if width == 1 else (kernels["take_strings"], self.lab_words)

    @classmethod
    def make(cls, labels: Any, n: int, kernels: dict[str, Callable[..., Any]] | None
             ) -> _StringWriter | None:
        """The writer for ``labels`` (a pyarrow array), or None where Arrow's own take
        applies (no kernels, nulls among the labels, another type, a big-endian machine,
        or 32-bit offsets that ``n`` records of the longest label could overflow)."""
        import pyarrow as pa

        t = labels.type
        wide = pa.types.is_large_string(t)
        if kernels is None or labels.null_count or not (wide or pa.types.is_string(t)) \
                or sys.byteorder != "little":
            return None
        raw = [v.encode("utf-8") for v in labels.to_pylist()]
        longest = max((len(r) for r in raw), default=0)
        # 32-bit offsets written directly when no output can reach 2**31 bytes
        if not wide and n * longest > np.iinfo(np.int32).max:
            return None  # (Arrow then refuses or splits as it does)
        return cls(kernels, labels, n, raw, longest, wide)

    def write(self, lo: int, idx: NDArray[Any], start: int, counts: NDArray[Any]) -> int:
        """Records ``lo..lo + len(idx) - 1`` written from byte ``start`` (each label's
        words stored at its offset, zero padding up to 8 bytes past the end); each label
        counted into ``counts`` (``(lanes, k)``, or ``(lanes, 0)``: not counted). Returns
        the byte after the last record's label, or -1 at an index that is not a label's
        (nothing past it written)."""
        hi = lo + idx.shape[0]
        return int(self._take(idx, self.lab_len, self._words, self.out_off[lo:hi + 1],
                              self.out_words, counts, start))

    def mend_seam(self, mid: int, idx: NDArray[Any], total: int) -> None:
        """After two parts written at once (split at record ``mid``): the first part's
        last label was stored as words whose zero padding may have overwritten up to 7
        bytes of the second part's first labels; each of those bytes is rewritten from
        the label of the record holding it (the offsets are all right)."""
        out_off, n = self.out_off, self.n
        # (the bytes' positions of the offsets' dtype: numpy's searchsorted would
        # otherwise convert the whole half of the offsets, 7 ms per 10^7 records)
        at = np.arange(int(out_off[mid]), min(int(out_off[mid]) + 8, total),
                       dtype=out_off.dtype)
        rec = mid + np.searchsorted(out_off[mid:n], at, side="right") - 1
        lab_bytes = self.lab_words.view(np.uint8).reshape(self.lab_words.shape[0], -1)
        self.out_words.view(np.uint8)[at] = lab_bytes[idx[rec], at - out_off[rec]]

    def array(self, total: int) -> Any:
        """The Arrow array of the ``n`` records, ``total`` bytes of labels."""
        import pyarrow as pa

        data = self.data_buf.slice(0, total)
        if 2 * total < self.data_buf.size:  # labels of very different lengths: no idle
            data = pa.py_buffer(bytes(data))  # memory kept
        return pa.Array.from_buffers(self.type, self.n, [None, self.off_buf, data])


class ArrowGather:
    """The output labels of an Arrow release of ``n`` records, written chunk by chunk as
    the chunks' outputs are drawn, by the thread that drew them (:meth:`put`), instead of
    one take over every record once all are drawn (whose second part had to count the
    first's records to find where its bytes start, and waited for the slower thread).

    For ``string``/``large_string`` labels a chunk's bytes start where the chunk before
    it ends, so chunks are written in record order: a chunk put before the chunks ahead
    of it waits (its indices stay in the caller's array) and the thread that writes the
    chunk ahead then writes it too; one thread writes at a time, each chunk once, so the
    offsets and bytes are those of one take in record order. ``string_view`` labels
    (16-byte views of fixed size) are written where they belong at once. The labels
    are counted on the way (``count``). Only where the compiled kernels are loaded (else
    :meth:`start` gives None and the caller takes as before).

    Examples
    --------
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> g = ArrowGather.start(pa.array(["no", "yes"]), 1 << 16, count=True)
    >>> if g is not None:  # (the kernels loaded)
    ...     idx = np.arange(1 << 16, dtype=np.uint16) % 2
    ...     g.put(1 << 15, idx[1 << 15:])  # the second half first: it waits
    ...     g.put(0, idx[:1 << 15])
    ...     out = g.result()
    ...     assert out.to_pylist() == ["no", "yes"] * (1 << 15)
    ...     assert g.counts.tolist() == [1 << 15, 1 << 15]
    """

    def __init__(self, labels: Any, n: int, kernels: dict[str, Callable[..., Any]],
                 writer: _StringWriter | None, count: bool) -> None:
        import pyarrow as pa

        self._labels = labels
        self._n = n
        self._kernels = kernels
        self._writer = writer
        self._k = len(labels)
        self.counts: NDArray[np.int64] | None = np.zeros(self._k, dtype=np.int64) \
            if count else None
        self._lock = threading.Lock()
        self._failed = False  # an index that is not a label's
        self._written = 0  # records written (views; strings: every record before _next)
        if writer is None:  # string_view: the views gathered in place
            views = np.frombuffer(labels.buffers()[1], dtype=np.uint64).reshape(-1, 2)
            self._views = np.ascontiguousarray(
                views[labels.offset:labels.offset + self._k]).ravel()
            self._view_buf = pa.allocate_buffer(16 * n)  # (from the pool: no fresh pages)
            self._view_out = np.frombuffer(self._view_buf, dtype=np.uint64)
        self._starts: list[int] = []  # the ranges of records put, sorted
        self._ends: list[int] = []
        self._pending: dict[int, NDArray[Any]] = {}  # chunks waiting, by first record
        self._writing = False  # a thread is writing the chunks in order
        self._next = 0  # the next record to write (strings)
        self._end = 0  # the byte it starts at

    @classmethod
    def start(cls, labels: Any, n: int, *, count: bool = False) -> ArrowGather | None:
        """The gather of ``n`` records of the pyarrow array ``labels`` (``string``,
        ``large_string`` or ``string_view``, no nulls), or None where it does not apply
        (the kernels not loaded, fewer records than the compiled takes are used for,
        another type, nulls among the labels, 32-bit offsets that could overflow)."""
        import pyarrow as pa

        kernels = _kernels.compiled(load=False) if n >= _STRING_KERNEL_MIN else None
        if kernels is None or labels.null_count:
            return None
        if pa.types.is_string_view(labels.type):
            return cls(labels, n, kernels, None, count)
        writer = _StringWriter.make(labels, n, kernels)
        return None if writer is None else cls(labels, n, kernels, writer, count)

    def put(self, lo: int, idx: NDArray[Any]) -> None:
        """The output indices ``idx`` of records ``lo..lo + len(idx) - 1`` (intp or
        uint16; every record once, chunks in any order and from any thread): written now,
        or (strings) once the records before them are. ``idx`` is read until then."""
        if not isinstance(idx, np.ndarray) or not isinstance(lo, int | np.integer) \
                or isinstance(lo, bool):
            raise ValidationError(f"put takes an integer first record and a numpy array of "
                                  f"indices, got {type(lo).__name__} and "
                                  f"{type(idx).__name__}")
        lo = int(lo)
        if not _kernel_index(idx):
            raise ValidationError(f"idx must be a 1-D contiguous intp or uint16 array, got "
                                  f"dtype {idx.dtype} and shape {idx.shape}")
        hi = lo + idx.shape[0]
        if lo < 0 or hi > self._n:
            raise ValidationError(f"put's records must lie inside 0..{self._n - 1}, got "
                                  f"records {lo}..{hi - 1}")
        if not idx.shape[0]:
            return
        with self._lock:
            # every record put once: a range overlapping one put before is refused (a
            # record never put is never handed out: result() counts them)
            at = bisect.bisect_right(self._starts, lo)
            if (at and self._ends[at - 1] > lo) or (at < len(self._starts)
                                                    and self._starts[at] < hi):
                raise ValidationError(f"records {lo}..{hi - 1} were put already (in part); "
                                      f"put every record once")
            self._starts.insert(at, lo)
            self._ends.insert(at, hi)
            if self._writer is not None:
                self._pending[lo] = idx
        if self._writer is None:
            self._put_views(lo, idx)
            return
        self._put_pending()

    def _put_pending(self) -> None:
        """Write the chunks whose turn has come, unless another thread is writing them
        (it then writes these too: it looks again, under the lock, before it stops)."""
        if self._writer is None:  # (views are written as they are put)
            return
        while True:
            with self._lock:
                if self._writing:
                    return
                self._writing = True
            try:
                self._write_in_order()
            finally:
                with self._lock:
                    self._writing = False
                    more = self._next in self._pending and not self._failed
            if not more:  # (else a chunk was put while this thread stopped writing)
                return

    def _write_in_order(self) -> None:
        writer = self._writer
        assert writer is not None
        lanes = count_lanes(self._k)
        while True:
            with self._lock:
                idx = None if self._failed else self._pending.pop(self._next, None)
            if idx is None:
                return
            parts = np.zeros((lanes, self._k if self.counts is not None else 0),
                             dtype=_count_dtype(idx.shape[0]))
            end = writer.write(self._next, idx, self._end, parts)
            with self._lock:
                if end < 0:
                    self._failed = True
                    return
                if parts.shape[1]:
                    assert self.counts is not None
                    self.counts += parts.sum(axis=0, dtype=np.int64)
                self._next += idx.shape[0]
                self._end = end

    def _put_views(self, lo: int, idx: NDArray[Any]) -> None:
        m = idx.shape[0]
        ok = int(self._kernels["take_views"](idx, self._views,
                                             self._view_out[2 * lo:2 * (lo + m)])) >= 0
        got = None
        if ok and self.counts is not None:
            parts = np.zeros((count_lanes(self._k), self._k), dtype=_count_dtype(m))
            self._kernels["count_codes"](idx, parts)  # (in range: checked by the take)
            got = parts.sum(axis=0, dtype=np.int64)
        with self._lock:
            if not ok:
                self._failed = True
                return
            if got is not None and self.counts is not None:
                self.counts += got
            self._written += m

    def result(self) -> Any:
        """The Arrow array of output labels, once every record is written.

        Raises
        ------
        ValidationError
            An index that is not a label's was put (nothing is returned).
        PMLError
            Records not written yet.
        """
        import pyarrow as pa

        self._put_pending()
        with self._lock:
            if self._failed:
                raise ValidationError(f"idx must hold label indices in 0..{self._k - 1}, "
                                      f"got an index outside them")
            written = self._written if self._writer is None else self._next
            if written != self._n:
                raise PMLError(f"ArrowGather.result: {written} of {self._n} "
                               f"records written; put every record first")
        if self._writer is None:
            return pa.Array.from_buffers(self._labels.type, self._n,
                                         [None, self._view_buf,
                                          *self._labels.buffers()[2:]])
        return self._writer.array(self._end)


def _kernel_index(idx: NDArray[Any]) -> bool:
    """Whether the compiled takes read ``idx`` as it is: 1-D, contiguous, intp or uint16
    (:func:`scratch_index_dtype`; a negative intp wraps to a huge index and is refused)."""
    return idx.ndim == 1 and idx.dtype in (np.dtype(np.intp), np.dtype(np.uint16)) \
        and idx.flags.c_contiguous


#: The first part of a two-thread string take, in 256ths of the records (the second
#: part first counts the first part's records to find where its bytes start).
_TAKE_FIRST = 200

#: A compiled take of at least this many records is split over the two threads.
_SPLIT_MIN = 1 << 18


def in_two(n: int, part: Callable[[int, int], Any], mid: int | None = None) -> list[Any]:
    """``[part(0, n)]``, or with two threads (:func:`pmlkit._kernels.draw_threads`) and
    at least :data:`_SPLIT_MIN` records ``[part(0, mid), part(mid, n)]`` (``mid``:
    ``n // 2`` unless given, ``0 < mid < n``), the second part run by the one worker
    while this thread runs the first (the parts write disjoint records, by kernels that
    release the GIL).

    Examples
    --------
    >>> in_two(5, lambda lo, hi: (lo, hi))
    [(0, 5)]
    """
    if n < _SPLIT_MIN or _kernels.draw_threads() < 2:
        return [part(0, n)]
    mid = n // 2 if mid is None else mid
    if not 0 < mid < n:
        raise ValidationError(f"mid must be in 1..{n - 1}, got {mid}")
    second = _kernels.worker().submit(part, mid, n)
    try:
        first = part(0, mid)
    finally:
        done = second.result()
    return [first, done]


def _counted(out: Any, idx: NDArray[np.intp], counts: NDArray[np.int64] | None,
             k: int) -> Any:
    """``out``, with the count of each of the ``k`` labels in ``idx`` added to ``counts``."""
    if counts is not None:
        counts += np.bincount(idx, minlength=k)[:counts.shape[0]]
    return out


def _arrow_take(labels: Any, idx: Any) -> Any:
    """Arrow's take, an index outside the labels refused as in :func:`arrow_take`."""
    import pyarrow as pa

    try:
        return labels.take(pa.array(idx))
    except IndexError:  # (pyarrow's ArrowIndexError is one)
        raise _bad_label_index(np.asarray(idx), len(labels)) from None


def _bad_label_index(idx: NDArray[Any], k: int) -> ValidationError:
    bad = np.flatnonzero((idx < 0) | (idx >= k))
    value = int(idx[bad[0]]) if bad.size else "?"
    return ValidationError(f"idx must hold indices of the labels in 0..{k - 1}, got "
                           f"{value}")


def _refcounts_writable() -> bool:
    """Whether :func:`take_objects` may set reference counts itself: CPython 3.11 (no
    immortal objects, no free-threaded build), a release build (a debug build keeps a
    total of all references, or a list of all objects before the count), 64-bit, and an
    object's first word found to be its reference count."""
    ok = _STATE_OBJECTS.get("refcounts")
    if ok is None:
        ok = (sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)
              and not hasattr(sys, "gettotalrefcount") and not hasattr(sys, "getobjects")
              and ctypes.sizeof(ctypes.c_void_p) == 8 == ctypes.sizeof(ctypes.c_ssize_t))
        if ok:
            probe = object()
            first = ctypes.c_ssize_t.from_address(id(probe))
            before = first.value
            ok = before == sys.getrefcount(probe) - 1  # (which counts its argument too)
            held = [probe, probe]
            ok = ok and first.value == before + 2
            del held
            ok = ok and first.value == before
        _STATE_OBJECTS["refcounts"] = ok
    return bool(ok)


_STATE_OBJECTS: dict[str, bool] = {}


class _SlotWords:
    """A writable uint64 view of a fresh object array's slots, for :func:`take_objects`
    only (it keeps the array alive while the view exists)."""

    def __init__(self, values: NDArray[Any]) -> None:
        self.values = values
        self.__array_interface__ = {
            "data": (values.ctypes.data, False), "shape": values.shape,
            "strides": values.strides, "typestr": "<u8", "version": 3}


def take_objects(labels: NDArray[Any], idx: NDArray[np.intp]) -> NDArray[Any] | None:
    """``labels.take(idx)`` for a 1-D object array of labels and an intp array of label
    indices, by a compiled gather of the labels' pointers; None where it does not apply
    (the kernels not loaded, another interpreter than a CPython 3.11 release build, an
    index outside the labels): the caller then takes by the generic path. See
    :class:`ObjectGather` for how the reference counts are kept exact.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.array(["no", "yes"], dtype=object)
    >>> out = take_objects(labels, np.array([1, 0, 1]))
    >>> out is None or out.tolist() == ["yes", "no", "yes"]
    True
    """
    gather = ObjectGather.start(labels, idx.shape[0]) if idx.ndim == 1 else None
    if gather is None or not gather.put(0, idx):
        return None
    return gather.out


#: A placeholder for the 32-bit cells of a table that has none (more than 2**16 columns).
_NO_CELLS32 = np.zeros(1, dtype=np.uint32)
#: A placeholder for the primaries of Walker cells (their primary is the column).
_NO_PRIM = np.zeros(1, dtype=np.uint16)


class ObjectGather:
    """An object array of output labels filled part by part from label indices, by a
    compiled gather of the labels' pointers (:meth:`start`; None where it does not apply).

    A generic take of objects raises the reference count of the label it stores, record
    by record (a dependent add on a few hot counts: most of its time). Here the output
    starts as a fresh array whose every slot holds no object yet (NULL: numpy's own fresh
    array, zeroed memory, :func:`_null_objects`; where that is not available, ``None``
    counted once per slot, as ``np.empty`` makes it). Each :meth:`put` (or
    :meth:`draw`) is one compiled call: without the GIL it checks each index and that
    its slot still holds the fill, writes the label's pointer and counts it; then,
    taking the GIL itself, it raises each label's reference count by its count (and
    lowers ``None``'s by the slots replaced). Only this call writes those slots, and the
    labels are held alive by the gather, so no code sees a slot whose reference is not
    yet counted, and no Python code of the calling thread runs (no exception, no
    interrupt) between a slot written and its count settled. Between calls every written
    slot holds one counted reference, so the array can be dropped at any point (an error
    half way, in any thread's chunk) and every count comes back (numpy frees NULL slots
    as nothing). A bad index or slot puts the fill back in every slot that call wrote and
    changes no count (``put`` returns False). Only on a CPython 3.11 release build
    (:func:`_refcounts_writable`): from 3.12 immortal objects, and free-threaded builds,
    count references by other rules.

    :attr:`out` hands the array out with every slot not written yet holding ``None``
    (counted): a NULL slot is never seen outside. It is read once the writes are done
    (not while a :meth:`put` or :meth:`draw` of another thread runs).

    Examples
    --------
    >>> import numpy as np
    >>> g = ObjectGather.start(np.array(["no", "yes"], dtype=object), 4)
    >>> g is None or (g.put(0, np.array([1, 1])) and g.put(2, np.array([0, 1]))
    ...               and (g.out.tolist(), g.counts.tolist())
    ...               == (["yes", "yes", "no", "yes"], [1, 3]))
    True
    """

    def __init__(self, kernel: Callable[..., Any], labels: NDArray[Any],
                 label_addr: NDArray[np.uint64], n: int,
                 draw_kernel: Callable[..., Any] | None = None) -> None:
        self._kernel = kernel
        self._draw_kernel = draw_kernel
        self._labels = labels  # (the private copy made by start: keeps them alive)
        self._busy = 0  # kernel calls writing slots (under _lock)
        self._addr = label_addr
        fresh = _null_objects(n)
        if fresh is None:  # every slot None (counted)
            self._array, self._fill = np.empty(n, dtype=object), id(None)
        else:  # every slot NULL (nothing counted)
            self._array, self._fill = fresh, 0
        self._slots = np.asarray(_SlotWords(self._array))
        self._written = 0  # slots written (each exactly once)
        self.counts = np.zeros(labels.shape[0], dtype=np.int64)
        # (chunks written by two threads: numpy's in-place add of a long array releases
        # the GIL, so the counts' read-modify-write is locked)
        self._lock = threading.Lock()

    @property
    def out(self) -> NDArray[Any]:
        """The output array: the labels written, ``None`` in every slot not written yet
        (a NULL slot is given ``None``, counted, here; later writes then replace
        ``None``)."""
        with self._lock:
            if self._busy:
                raise PMLError("ObjectGather.out was read while a put or draw of another "
                               "thread was writing its slots; read it once they return")
            if self._fill == 0 and self._written < self._array.shape[0]:
                # (numpy's assignment releases the NULL it replaces as nothing)
                self._array[np.flatnonzero(self._slots == 0)] = None
                self._fill = id(None)
        return self._array

    @classmethod
    def start(cls, labels: NDArray[Any], n: int) -> ObjectGather | None:
        """The gather of ``n`` records of the 1-D object array ``labels``, or None (the
        kernels not loaded, or not this interpreter)."""
        kernels = _kernels.compiled(load=False)
        if kernels is None or "take_objects" not in kernels or labels.dtype != object \
                or labels.ndim != 1 or not _refcounts_writable():
            return None
        # a private copy (k pointers): it holds every label alive while the kernels write
        # uncounted pointers to them without the GIL, whatever another thread does to the
        # caller's array meanwhile (a label replaced there lost its last reference and was
        # freed under 2^24 slots pointing at it, in an attack run)
        labels = labels.copy()
        label_addr = np.array(_Addresses(labels), dtype=np.uint64)
        if not label_addr.all():  # a NULL slot (an array not filled): nothing to count
            return None
        gather = cls(kernels["take_objects"], labels, label_addr, n,
                     kernels.get("draw_objects"))
        fill = np.uint64(gather._fill)
        if n and not (gather._slots[0] == fill and gather._slots[-1] == fill):
            return None  # (a numpy that does not fill new object arrays with None)
        return gather

    def _wrote(self, parts: NDArray[Any], n: int) -> None:
        with self._lock:
            self.counts += parts.sum(axis=0, dtype=np.int64)
            self._written += n

    def draw(self, sampler: AliasSampler, codes: NDArray[np.intp],
             generator: np.random.Generator, start: int) -> bool:
        """The outputs of the input indices ``codes`` drawn by ``sampler`` (the words
        drawn from ``generator`` in record order, as :meth:`AliasSampler.draw` draws
        them), their labels written to ``out[start:start + len(codes)]`` by the same
        compiled call that draws them (no array of output indices, counted as by
        :meth:`put`). False (nothing drawn) where that call does not apply: the caller
        then draws and puts. Two threads may draw disjoint parts at once."""
        kernel = self._draw_kernel
        n = codes.shape[0]
        if kernel is None or codes.dtype.kind not in "iu" or not codes.dtype.isnative \
                or codes.ndim != 1 \
                or not 0 <= start <= start + n <= self._array.shape[0] \
                or sampler.n_outputs > self._addr.shape[0]:
            return False
        bg = sampler._bg
        if bg is not None:  # shared background cells (mode 2)
            mode, cells32, cells, prim, bits = 2, _NO_CELLS32, bg[2], bg[3], bg[4]
            n_shared, n_row = np.uint64(bg[0]), np.uint64(bg[1])
        else:
            c32 = sampler._compact32()
            mode, cells32 = (0, _NO_CELLS32) if c32 is None else (1, c32)
            cells, prim, bits = sampler._cells, _NO_PRIM, sampler._bits
            n_shared = n_row = np.uint64(0)
        bitgen = generator.bit_generator
        codes = np.ascontiguousarray(codes)
        n_codes = np.uint64(sampler.n_inputs)
        sampler._drawn += n
        # one block's output indices, reused by this call's blocks (which run one at a
        # time): it stays in the cache. Each call has its own (the kernel runs without
        # the GIL, and another thread may be drawing its own part meanwhile)
        buf = np.empty(min(n, DRAW_BLOCK), dtype=np.uint64)

        def block(words: NDArray[np.uint64], lo: int, hi: int) -> None:
            parts = np.zeros((count_lanes(self.counts.shape[0]), self.counts.shape[0]),
                             dtype=np.uint32)  # (a block: fewer than 2**32 records)
            with self._writing() as fill:
                bad = int(kernel(words, codes[lo:hi], n_codes, cells32, cells, prim,
                                 bits, mode, n_shared, n_row, self._addr, fill,
                                 self._slots[start + lo:start + hi], parts, buf))
            if bad >= 0:  # (nothing of this block written; the words were drawn)
                raise AssertionError("an input index outside the table, or a slot "
                                     "written twice")
            self._wrote(parts, hi - lo)

        if n <= DRAW_BLOCK or _kernels.draw_threads() < 2:
            for lo in range(0, n, DRAW_BLOCK):
                hi = min(lo + DRAW_BLOCK, n)
                block(bitgen.random_raw(hi - lo), lo, hi)
            return True
        # two threads (as AliasSampler.draw): the one worker runs the blocks in order
        # (one at a time: the buffer is its own meanwhile) while this thread draws the
        # next block's words
        worker = _kernels.worker()
        pending: deque[Any] = deque()
        try:
            for lo in range(0, n, DRAW_BLOCK):
                hi = min(lo + DRAW_BLOCK, n)
                pending.append(worker.submit(block, bitgen.random_raw(hi - lo), lo, hi))
                if len(pending) > 2:
                    pending.popleft().result()
        finally:  # every block submitted is finished (or failed) before returning
            while pending:
                pending.popleft().result()
        return True

    def put(self, start: int, idx: NDArray[np.intp]) -> bool:
        """The labels of ``idx`` into ``out[start:start + len(idx)]``; False (nothing
        changed) for an index outside the labels, a slot already written, or ``idx`` not
        a 1-D intp array."""
        stop = start + idx.shape[0]
        if idx.dtype != np.intp or idx.ndim != 1 \
                or not 0 <= start <= stop <= self._array.shape[0]:
            return False
        k = self.counts.shape[0]
        parts = np.zeros((count_lanes(k), k), dtype=_count_dtype(idx.shape[0]))
        idx = np.ascontiguousarray(idx)
        with self._writing() as fill:
            bad = int(self._kernel(idx, self._addr, fill, self._slots[start:stop], parts))
        if bad >= 0:
            return False
        self._wrote(parts, idx.shape[0])
        return True

    @contextlib.contextmanager
    def _writing(self) -> Iterator[np.uint64]:
        """A kernel call writing slots: counted while it runs (:attr:`out` refuses to
        change the fill meanwhile); yields the fill the slots hold."""
        with self._lock:
            self._busy += 1
            fill = np.uint64(self._fill)
        try:
            yield fill
        finally:
            with self._lock:
                self._busy -= 1


def _null_objects(n: int) -> NDArray[Any] | None:
    """A fresh 1-D object array of ``n`` slots that hold no object (NULL), for
    :class:`ObjectGather` only, or None where it cannot be made. ``np.empty`` fills an
    object array with ``None``, one reference counted per slot, serially (about 17 ms
    for 10^7 slots, a third of them the pages' first touch); numpy's own constructor
    ``PyArray_NewFromDescr`` (entry 94 of its C API table, fixed by its ABI), called
    without data, allocates an object array's memory zeroed (``calloc``: fresh zero
    pages, touched first by the threads that write them). Every slot is written before
    the array is handed out (or given ``None``: :attr:`ObjectGather.out`), and numpy
    frees a NULL slot as nothing. Checked once on a small array (its type, dtype, shape,
    flags and NULL slots; the constructor, or None, kept for the process)."""
    make = _null_constructor()
    return None if make is None else make(n)


@functools.cache
def _null_constructor() -> Callable[[int], NDArray[Any]] | None:
    """``n -> PyArray_NewFromDescr(&PyArray_Type, object dtype, 1, [n], NULL, NULL, 0,
    NULL)`` through ctypes (holding the GIL), checked on a small array; None where it is
    not reachable or the check fails."""
    if not _refcounts_writable():
        return None
    try:
        import importlib

        try:
            mu: Any = importlib.import_module("numpy._core._multiarray_umath")
        except ImportError:  # pragma: no cover (numpy < 2)
            mu = importlib.import_module("numpy.core._multiarray_umath")
        capsule = mu._ARRAY_API
        get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        table = get(capsule, None)
        if not table:
            return None
        word = ctypes.sizeof(ctypes.c_void_p)
        entry = ctypes.c_void_p.from_address(table + 94 * word).value
        if not entry:
            return None
        new = ctypes.PYFUNCTYPE(
            ctypes.py_object, ctypes.py_object, ctypes.py_object, ctypes.c_int,
            ctypes.POINTER(ctypes.c_ssize_t), ctypes.c_void_p, ctypes.c_void_p,
            ctypes.c_int, ctypes.c_void_p)(entry)
        incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", ctypes.pythonapi))
    except (ImportError, AttributeError, ValueError, TypeError, OSError):
        return None
    descr = np.dtype(object)

    def make(n: int) -> NDArray[Any]:
        dims = (ctypes.c_ssize_t * 1)(n)
        incref(descr)  # (the constructor steals a reference to the dtype)
        out: NDArray[Any] = new(np.ndarray, descr, 1, dims, None, None, 0, None)
        return out

    probe = make(5)
    ok = (type(probe) is np.ndarray and probe.dtype == descr and probe.shape == (5,)
          and probe.flags.c_contiguous and probe.flags.owndata and probe.flags.writeable
          and not np.asarray(_Addresses(probe)).any())
    return make if ok else None


def pool_empty(n: int, dtype: Any = np.intp) -> NDArray[Any]:
    """An uninitialised writable numpy array of ``n`` items allocated from Arrow's memory
    pool (which reuses freed memory: no fresh pages per call), for the intermediate arrays
    of the Arrow paths (pyarrow is then imported anyway).

    Examples
    --------
    >>> a = pool_empty(3)
    >>> a[:] = [1, 2, 3]
    >>> a.tolist(), a.flags.writeable
    ([1, 2, 3], True)
    """
    import pyarrow as pa

    dt = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(n * dt.itemsize), dtype=dt)


def scratch_index_dtype(m: int, n: int) -> np.dtype[Any]:
    """The dtype of an array of ``n`` indices of ``m`` outputs that only the compiled
    draw writes (:meth:`AliasSampler.draw` with ``out_codes``) and only the takes read
    (:func:`arrow_take`, :func:`count_outputs`): uint16 when every index fits it, the
    array is large and the kernels are loaded (a quarter of the memory traffic of 8-byte
    indices), else intp (the numpy draw writes 8-byte indices directly).

    Examples
    --------
    >>> scratch_index_dtype(1000, 10)
    dtype('int64')
    """
    if m <= 1 << 16 and n >= 1 << 16 and _kernels.compiled(load=False) is not None:
        return np.dtype(np.uint16)
    return np.dtype(np.intp)


def count_lanes(m: int) -> int:
    """Histograms a compiled count of ``m`` outputs fills in turn: 4 for few outputs (a
    run of equal outputs then does not wait on one count), 1 for 256 or more (four
    histograms of 1000 outputs, 32 KB, crowd the L1 cache: the object labels' gather
    measured 29 against 18 ms per 10^7 records).

    Examples
    --------
    >>> count_lanes(2), count_lanes(1000)
    (4, 1)
    """
    return 4 if m < 256 else 1


def _count_dtype(n: int) -> type[np.unsignedinteger[Any]] | type[np.signedinteger[Any]]:
    """The dtype of the histograms a compiled loop over ``n`` records fills: 32-bit
    while no count can reach 2**32 (half the cache footprint of 64-bit counts, which at
    1000 outputs crowd the L1 cache), else int64."""
    return np.uint32 if n < 1 << 32 else np.int64


def count_outputs(idx: NDArray[Any], m: int) -> NDArray[np.int64]:
    """How many of the indices ``idx`` equal each of ``0..m-1`` (``np.bincount`` with
    ``minlength=m``; a compiled loop once the kernels are loaded, about 3x faster).

    Examples
    --------
    >>> import numpy as np
    >>> count_outputs(np.array([2, 0, 2]), 4).tolist()
    [1, 0, 2, 0]
    """
    kernels = _kernels.compiled(load=False) if idx.shape[0] >= 1 << 16 else None
    if kernels is not None and idx.dtype.kind in "iu" and idx.dtype.isnative \
            and idx.ndim == 1:  # (any integer width: narrow categorical codes too)
        def part(lo: int, hi: int) -> NDArray[np.int64] | None:
            # (each thread its own histograms; None: an index outside 0..m-1)
            parts = np.zeros((count_lanes(m), m), dtype=_count_dtype(hi - lo))
            if int(kernels["count_codes"](idx[lo:hi], parts)) >= 0:
                return None
            got: NDArray[np.int64] = parts.sum(axis=0, dtype=np.int64)
            return got

        halves = in_two(idx.shape[0], part)
        if all(h is not None for h in halves):
            total: NDArray[np.int64] = halves[0]
            for h in halves[1:]:
                total = total + h
            return total
    if idx.dtype.itemsize < np.dtype(np.intp).itemsize and idx.shape[0] > DRAW_BLOCK:
        # narrow codes counted a block at a time (bincount widens its input to intp: a
        # whole-array copy 8 bytes per record)
        total = np.zeros(m, dtype=np.int64)
        for start in range(0, idx.shape[0], DRAW_BLOCK):
            total += np.bincount(idx[start:start + DRAW_BLOCK], minlength=m)[:m]
        return total
    return np.bincount(idx, minlength=m).astype(np.int64, copy=False)
