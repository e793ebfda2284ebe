"""pmlkit's compiled (numba) kernels and their lazy start (optional: ``pip install
'pmlkit[fast]'``).

Two users: the designers' box kernels (:mod:`pmlkit.design`), and the release draw
below (:func:`release_kernels`), one loop per alias-table layout that reads integer
codes, random 64-bit words and integer tables and writes integer output codes, every
index it reads at checked in the same function. The numpy draw of
:class:`pmlkit.sampler.AliasSampler` is the reference: the compiled draw gives the same
outputs for the same words. numba is imported only when a caller asks for its kernels
(never by ``import pmlkit``), and the machine code is cached on disk (``cache=True``).
Without numba (or with the environment variable ``PMLKIT_NO_NUMBA`` set to a non-empty
value other than ``0``) :func:`build_once` gives None and the callers keep their numpy
paths.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__: list[str] = []


def build_once(state: dict[str, Any], lock: threading.Lock,
               build: Callable[[], dict[str, Callable[..., Any]] | None]
               ) -> dict[str, Callable[..., Any]] | None:
    """The kernels ``build()`` returns, built once per process under ``lock`` and kept in
    ``state`` (``None``, never built, when the environment variable ``PMLKIT_NO_NUMBA``
    disables numba): the lazy start of every compiled module of the package.

    Examples
    --------
    >>> import threading
    >>> calls = []
    >>> state, lock = {}, threading.Lock()
    >>> k1 = build_once(state, lock, lambda: calls.append(1) or {"f": len})
    >>> k2 = build_once(state, lock, lambda: calls.append(1) or {"f": len})
    >>> calls == [1] and k1 is k2 or os.environ.get("PMLKIT_NO_NUMBA", "") not in ("", "0")
    True
    """
    if os.environ.get("PMLKIT_NO_NUMBA", "") not in ("", "0"):
        return None
    with lock:
        if "kernels" not in state:
            state["kernels"] = build()
    kernels: dict[str, Callable[..., Any]] | None = state["kernels"]
    return kernels


def njit_cached(numba: Any, fn: Callable[..., Any], *, boundscheck: bool | None
                ) -> Callable[..., Any]:
    """``fn`` compiled by ``numba.njit`` without the GIL, its machine code cached on disk
    (compiled in every process instead where no cache location is writable)."""
    try:
        out: Callable[..., Any] = numba.njit(cache=True, nogil=True,
                                             boundscheck=boundscheck)(fn)
    except RuntimeError:  # no writable cache location: compile per process
        out = numba.njit(nogil=True, boundscheck=boundscheck)(fn)
    return out


# ---------------------------------------------------------------------------------------
# The release draw, compiled: integer arrays in, integer arrays out
# ---------------------------------------------------------------------------------------
#
# The three functions below are the draw rule of :class:`pmlkit.sampler.AliasSampler`
# (per-row Walker cells, the same with 16-bit cells, shared background cells) for one
# block of records, written as one loop so that a record is read, drawn and written in
# one pass. They take only integer numpy arrays (the records' codes, their random words,
# the integer tables) and write integer output codes; every index they read at is
# checked in the same function before it is used (the entry checks prove the table
# indices, the loop checks each record's code), so they never read or write outside an
# array; numba's own bounds checks stay on as well (they cost 5-15% CPU per record,
# measured side by side at 10^7 records), so a mistake in those proofs raises instead of
# reading memory. They are plain Python too (tests run them uncompiled on small blocks).
#
# Return value: -1 when every record was drawn; ``i >= 0`` when record ``i`` holds a code
# that is outside ``0..len(remap) - 1`` (after ``offset``) or maps to no input (``-1`` in
# ``remap``), nothing after it written; -2 when the tables are inconsistent (no record
# written).

#: Status of a block whose tables do not fit together (never for a sampler's own).
BAD_TABLES = -2


def draw_walker(codes: Any, offset: int, remap: Any, words: Any, cells: Any, bits: int,
                omap: Any, out: Any) -> int:
    """Walker cells (``cells``: ``n_rows << bits`` 64-bit cells, threshold above alias).

    Record ``i``: its row ``x = remap[codes[i] - offset]``, its word ``r``; column
    ``j = r >> (64 - bits)``, cell ``c = cells[(x << bits) | j]``; the output index is
    ``j`` if ``(r << bits) | (2**bits - 1) < c`` else ``c & (2**bits - 1)``, written as
    ``omap[output index]``."""
    n = codes.shape[0]
    if bits < 1 or bits > 32:
        return BAD_TABLES
    width = 1 << bits
    n_rows = cells.shape[0] >> bits
    n_codes = remap.shape[0]
    n_out = omap.shape[0]
    if (n_rows << bits) != cells.shape[0] or words.shape[0] < n or out.shape[0] < n:
        return BAD_TABLES
    for t in range(n_codes):  # every entry of remap an input row, or -1 (no input)
        if remap[t] < -1 or remap[t] >= n_rows:
            return BAD_TABLES
    # (indices as unsigned numbers once checked: no wrap-around of negative indices)
    ulow = np.uint64(width - 1)
    ubits = np.uint64(bits)
    ushift = np.uint64(64 - bits)
    un_out = np.uint64(n_out)
    for i in range(n):
        c = np.int64(codes[i]) - offset
        if c < 0 or c >= n_codes:
            return i
        x = np.int64(remap[np.uint64(c)])
        if x < 0:
            return i
        r = words[i]
        j = r >> ushift  # < width
        cell = cells[(np.uint64(x) << ubits) | j]  # < n_rows << bits
        if ((r << ubits) | ulow) >= cell:
            j = cell & ulow  # < width
        if j >= un_out:  # (an output the map lacks: never for a sampler's tables)
            return BAD_TABLES
        out[i] = omap[j]
    return -1


def draw_walker16(codes: Any, offset: int, remap: Any, words: Any, cells: Any,
                  cells16: Any, bits: int, omap: Any, out: Any) -> int:
    """:func:`draw_walker` deciding most records on 16-bit cells (the threshold's top
    ``16 - bits`` bits above the alias), the 64-bit cell where the coin's top bits equal
    them: the same outputs."""
    n = codes.shape[0]
    if bits < 1 or bits > 12:
        return BAD_TABLES
    width = 1 << bits
    n_rows = cells.shape[0] >> bits
    n_codes = remap.shape[0]
    n_out = omap.shape[0]
    if (n_rows << bits) != cells.shape[0] or cells16.shape[0] != cells.shape[0] \
            or words.shape[0] < n or out.shape[0] < n:
        return BAD_TABLES
    for t in range(n_codes):  # every entry of remap an input row, or -1 (no input)
        if remap[t] < -1 or remap[t] >= n_rows:
            return BAD_TABLES
    ulow = np.uint64(width - 1)
    ubits = np.uint64(bits)
    udown = np.uint64(16 - bits)
    u16 = np.uint64(0xFFFF)
    un_out = np.uint64(n_out)
    for i in range(n):
        c = np.int64(codes[i]) - offset
        if c < 0 or c >= n_codes:
            return i
        x = np.int64(remap[np.uint64(c)])
        if x < 0:
            return i
        r = words[i]
        top = r >> np.uint64(48)
        j = top >> udown  # < width
        at = (np.uint64(x) << ubits) | j  # < n_rows << bits
        cell = np.uint64(cells16[at])
        word = ((top << ubits) | ulow) & u16
        if (word ^ cell) <= ulow:  # the same top bits: the 64-bit cell decides
            wide = cells[at]
            if ((r << ubits) | ulow) >= wide:
                j = wide & ulow
        elif word >= cell:
            j = cell & ulow
        if j >= un_out:  # (an output the map lacks: never for a sampler's tables)
            return BAD_TABLES
        out[i] = omap[j]
    return -1


def draw_background(codes: Any, offset: int, remap: Any, words: Any, cells: Any,
                    prim: Any, n_shared: int, n_own: int, n_rows: int, bits: int,
                    omap: Any, out: Any) -> int:
    """Shared background cells: position ``j = r >> (64 - bits)`` is shared cell ``j``
    when ``j < n_shared``, else cell ``j + x * n_own`` (row ``x``'s own); the output index
    is the cell's primary if ``(r << bits) | (2**bits - 1)`` is below the cell, else its
    alias (``cell & (2**bits - 1)``)."""
    n = codes.shape[0]
    if bits < 1 or bits > 32:
        return BAD_TABLES
    width = 1 << bits
    n_cells = cells.shape[0]
    if n_shared < 0 or n_own < 0 or n_rows < 0 or n_shared + n_own != width \
            or prim.shape[0] != n_cells or n_cells != n_shared + n_rows * n_own \
            or words.shape[0] < n or out.shape[0] < n:
        return BAD_TABLES
    n_codes = remap.shape[0]
    n_out = omap.shape[0]
    for t in range(n_codes):  # every entry of remap an input row, or -1 (no input)
        if remap[t] < -1 or remap[t] >= n_rows:
            return BAD_TABLES
    ulow = np.uint64(width - 1)
    ubits = np.uint64(bits)
    ushift = np.uint64(64 - bits)
    ushared = np.uint64(n_shared)
    uown = np.uint64(n_own)
    un_out = np.uint64(n_out)
    for i in range(n):
        c = np.int64(codes[i]) - offset
        if c < 0 or c >= n_codes:
            return i
        x = np.int64(remap[np.uint64(c)])
        if x < 0:
            return i
        r = words[i]
        j = r >> ushift  # < width
        at = j
        if j >= ushared:
            at = j + np.uint64(x) * uown  # <= n_shared + n_rows * n_own - 1
        cell = cells[at]
        first = np.uint64(prim[at])  # (both read: a select, not a branch per record)
        j = cell & ulow
        if ((r << ubits) | ulow) < cell:
            j = first
        if j >= un_out:  # (an output the map lacks: never for a sampler's tables)
            return BAD_TABLES
        out[i] = omap[j]
    return -1


#: The release kernels above, compiled once per process (see :func:`release_kernels`).
_RELEASE: dict[str, Any] = {}
_RELEASE_LOCK = threading.Lock()
#: The release kernels as plain Python (what numba compiles; :func:`release_kernels`
#: gives the compiled ones under the same names).
RELEASE_KERNELS: dict[str, Callable[..., int]] = {
    "walker": draw_walker, "walker16": draw_walker16, "background": draw_background}


def _build_release() -> dict[str, Callable[..., Any]] | None:
    try:
        import numba
    except ImportError:
        return None
    return {name: njit_cached(numba, fn, boundscheck=True)
            for name, fn in RELEASE_KERNELS.items()}


def release_kernels() -> dict[str, Callable[..., Any]] | None:
    """The compiled release kernels (``"walker"``, ``"walker16"``, ``"background"``),
    compiled on first use; None without numba or with ``PMLKIT_NO_NUMBA`` set."""
    return build_once(_RELEASE, _RELEASE_LOCK, _build_release)


#: A draw of at least this many records starts the compiled release kernels (importing
#: numba and loading their machine code costs a few tenths of a second, once per
#: process); once started, every draw uses them (a release's chunks and a file's
#: batches hold at most this many records: the first full one starts them).
KERNEL_MIN_RECORDS = 1 << 20
#: Records drawn per call of a release kernel (their words fit the CPU cache).
KERNEL_BLOCK = 1 << 14


def compiled_for(n: int) -> dict[str, Callable[..., Any]] | None:
    """The compiled release kernels for a draw of ``n`` records, or None (no numba,
    ``PMLKIT_NO_NUMBA`` set, or a small draw in a process that has not started them)."""
    if n < KERNEL_MIN_RECORDS and "kernels" not in _RELEASE:
        return None
    return release_kernels()


def draw_in_blocks(kernel: Callable[..., int], tables: tuple[Any, ...], codes: Any,
                   offset: int, remap: Any, bitgen: Any, out: Any, omap: Any) -> int:
    """``kernel(codes, offset, remap, words, *tables, omap, out)`` over the records in
    blocks of :data:`KERNEL_BLOCK`, each block's words the next ``random_raw`` of
    ``bitgen`` (one per record, in order): -1 when all are drawn, else the kernel's
    status (a refused record's position, counted from the first record, or
    :data:`BAD_TABLES`), nothing drawn after it."""
    n = codes.shape[0]
    for start in range(0, n, KERNEL_BLOCK):
        stop = min(start + KERNEL_BLOCK, n)
        status = int(kernel(codes[start:stop], offset, remap, bitgen.random_raw(stop - start),
                            *tables, omap, out[start:stop]))
        if status != -1:
            return status if status < 0 else start + status
    return -1


def first_refused(codes: Any, offset: int, remap: Any) -> int:
    """The position of the first record whose code minus ``offset`` is outside ``remap``
    or maps to -1 there (the records a release kernel refuses), or -1 when there is
    none (numpy: the check made before any word is drawn from a generator that cannot
    be put back)."""
    shifted = codes.astype(np.int64) - offset if offset else codes
    inside = (shifted >= 0) & (shifted < remap.shape[0])
    bad = ~inside
    bad[inside] = remap[shifted[inside]] < 0
    found = np.flatnonzero(bad)
    return int(found[0]) if found.size else -1
