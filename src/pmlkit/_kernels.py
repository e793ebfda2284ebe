"""Compiled loops for the release kernel (optional: ``pip install 'pmlkit[fast]'``, numba).

Two loops of :mod:`pmlkit.sampler` cost several passes over memory per record when written
with numpy ufuncs; compiled with numba they take one pass:

* :func:`alias_draw` / :func:`alias_draw_based`: the one-word alias draw of
  :meth:`pmlkit.sampler.AliasSampler.draw` on its 64-bit cells. For a record with row
  offset ``f = input << b`` (or ``base[code]``) and random word ``r``: ``j = r >> (64 - b)``,
  ``cell = cells[f | j]``; the output is ``j`` if ``(r << b) | (2**b - 1) < cell`` (the coin
  against the threshold), else ``cell & (2**b - 1)`` (the alias). This is, operation for
  operation, the rule of the numpy path, so both give the same outputs for the same words.
* :func:`alias_draw32` / :func:`alias_draw32_based`: the same draw decided on 32-bit cells
  (the threshold's top ``32 - b`` bits above the alias, ``b <= 16``): a table half the
  size, so more of it stays in the CPU caches. A record whose coin's top ``32 - b`` bits
  equal the threshold's (probability ``2**-(32 - b)``) is decided by its 64-bit cell, so
  the outputs are those of the 64-bit cells, word for word (as for the numpy path's
  16-bit cells).
* :func:`background_draw` / :func:`background_draw_based`: the draw from shared
  background cells (:func:`pmlkit.sampler.background_tables`): position
  ``j = r >> (64 - b)`` reads shared cell ``j`` if ``j < K``, else cell ``j + x * E``
  of the rows' part (``x * E``: ``base[code]``); the output is the cell's primary if
  ``(r << b) | (2**b - 1) < cell``, else ``cell & (2**b - 1)``. Tables of a few tens of
  kilobytes instead of megabytes: the gathers stay in the L1/L2 caches.
* :func:`address_codes`: the input index of each record of an object array from the
  address of its object, through an open-addressing table of known objects (Fibonacci
  hashing of the address, linear probing, every hit verified against the stored address).
* ``string_codes`` (``string_codes8`` for labels of at most 8 bytes) / ``view_codes``:
  the input index of each record of an Arrow ``string``/``large_string`` array (read from
  its offsets and data buffers, the first 16 bytes of a record as two words read by
  unaligned loads) or ``string_view`` array (the inlined bytes of its views;
  ``view_codes8`` for labels of at most 8 bytes), through
  the perfect hash table of the string labels (:class:`pmlkit.sampler._StringTable`:
  every hit verified on the length and all the bytes). Offsets outside the data buffer
  stop the kernel (nothing is read past it).
* ``take_strings`` / ``take_short``: the offsets and bytes of an Arrow string array of
  output labels, each label's words stored at its offset by unaligned stores (no loop
  over bytes, nothing carried from record to record but the running total), counting
  each label on request (four histograms).
* ``take_views``: the 16-byte views of an Arrow ``string_view`` array of output labels.
* ``count_codes``: how many records have each output (four interleaved histograms, or
  one for many outputs: :func:`pmlkit.sampler.count_lanes`).
* ``take_objects`` / ``draw_objects``: the output labels' pointers written into a fresh
  object array without the GIL, then each label's reference count raised once by its
  count with the GIL taken by the kernel itself, in one call (see
  :class:`pmlkit.sampler.ObjectGather` for when it is used and why it is exact).

numba is imported only when a caller with enough work asks for the kernels (never by
``import pmlkit``; the sampler asks once a mechanism has drawn 2**24 records in the
process), and the machine code is cached on disk (``cache=True``), so the compilation is
paid once per installation and a process pays the import and the cache load once.
Without numba (or with the environment variable ``PMLKIT_NO_NUMBA`` set to a non-empty
value other than ``0``) :func:`compiled` is None and the callers keep their numpy paths,
which give bit-identical outputs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__: list[str] = []

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
#: numba intrinsics the kernels call (set when the kernels are built)
_LOAD_U64: Any = None
_STORE_U64: Any = None
_ADD_AT: Any = None
_GIL_ENSURE: Any = None
_GIL_RELEASE: Any = None
_SETTLE: Any = None


def compiled(load: bool = True) -> dict[str, Callable[..., Any]] | None:
    """The compiled kernels by name, or None when numba is missing or disabled, or (with
    ``load=False``) not loaded yet in this process: importing numba costs about half a
    second to a second, so a caller asks to load only when it has that much work.

    Examples
    --------
    >>> k = compiled()
    >>> k is None or sorted(k)[:3] == ["address_codes", "alias_draw", "alias_draw32"]
    True
    """
    if not load and "kernels" not in _STATE:
        return None
    return build_once(_STATE, _LOCK, _build)


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


def _build() -> dict[str, Callable[..., Any]] | None:
    try:
        import numba
    except ImportError:
        return None

    def jit(fn: Callable[..., Any]) -> Callable[..., Any]:
        return njit_cached(numba, fn, boundscheck=False)

    u64 = np.uint64
    # the intrinsics are module globals, not closure variables: numba keys its disk cache
    # on the closure's contents, and an intrinsic pickles differently in every process
    # (the kernels would be compiled again by every process)
    global _LOAD_U64, _STORE_U64
    _LOAD_U64 = _unaligned_load(numba)
    _STORE_U64 = _unaligned_store(numba)

    # One loop per record: check the code, gather the cell, decide. (Two loops, the
    # gathers first and the decisions after, measured slower: 36 against 25 ms per 10^7
    # records from a 1000 x 1024 table, 19.5 against 15 from 50 x 64: the second loop
    # read the block's words, codes and cells back, and the decisions of one record
    # overlap the gathers of the next ones anyway, out of order.)
    def alias_draw(words: Any, codes: Any, n_codes: Any, cells: Any, bits: int,
                   out: Any, omap: Any) -> int:
        b = u64(bits)
        shift = u64(64 - bits)
        low = u64((1 << bits) - 1)
        n = words.shape[0]
        for i in range(n):
            c = u64(codes[i])  # a negative code wraps to a huge one
            if c >= n_codes:
                return i  # refused before its gather
            r = words[i]
            col = r >> shift
            cell = cells[(c << b) | col]
            keep = u64(((r << b) | low) < cell)
            alias = cell & low
            v = alias + (col - alias) * keep  # keep ? column : alias
            if omap is None:  # (pruned at compile time: one loop per case)
                out[i] = v
            else:  # the output's code in the caller's table
                out[i] = omap[v]
        return -1

    def alias_draw_based(words: Any, codes: Any, base: Any, cells: Any, bits: int,
                         out: Any, omap: Any) -> int:
        n_codes = u64(base.shape[0])
        b = u64(bits)
        shift = u64(64 - bits)
        low = u64((1 << bits) - 1)
        n = words.shape[0]
        for i in range(n):
            c = u64(codes[i])
            if c >= n_codes:
                return i
            r = words[i]
            col = r >> shift
            cell = cells[base[c] | col]
            keep = u64(((r << b) | low) < cell)
            alias = cell & low
            v = alias + (col - alias) * keep
            if omap is None:
                out[i] = v
            else:
                out[i] = omap[v]
        return -1

    def alias_draw32(words: Any, codes: Any, n_codes: Any, cells32: Any, cells: Any,
                     bits: int, out: Any, omap: Any) -> int:
        b = u64(bits)
        shift = u64(64 - bits)
        low = u64((1 << bits) - 1)
        s32 = u64(32)
        m32 = u64(0xFFFFFFFF)
        n = words.shape[0]
        for i in range(n):
            c = u64(codes[i])
            if c >= n_codes:
                return i
            r = words[i]
            col = r >> shift
            at = (c << b) | col
            cell = u64(cells32[at])  # from the half-size table
            coin = (((r >> s32) << b) | low) & m32  # the coin's top 32 - b bits, b ones
            if (coin ^ cell) <= low:  # the same top bits: the 64-bit cell decides
                cell = cells[at]
                coin = (r << b) | low
            keep = u64(coin < cell)
            alias = cell & low
            v = alias + (col - alias) * keep
            if omap is None:
                out[i] = v
            else:
                out[i] = omap[v]
        return -1

    def alias_draw32_based(words: Any, codes: Any, base: Any, cells32: Any, cells: Any,
                           bits: int, out: Any, omap: Any) -> int:
        n_codes = u64(base.shape[0])
        b = u64(bits)
        shift = u64(64 - bits)
        low = u64((1 << bits) - 1)
        s32 = u64(32)
        m32 = u64(0xFFFFFFFF)
        n = words.shape[0]
        for i in range(n):
            c = u64(codes[i])
            if c >= n_codes:
                return i
            r = words[i]
            col = r >> shift
            at = base[c] | col
            cell = u64(cells32[at])
            coin = (((r >> s32) << b) | low) & m32
            if (coin ^ cell) <= low:
                cell = cells[at]
                coin = (r << b) | low
            keep = u64(coin < cell)
            alias = cell & low
            v = alias + (col - alias) * keep
            if omap is None:
                out[i] = v
            else:
                out[i] = omap[v]
        return -1

    # The draw from shared background cells (pmlkit.sampler.background_tables): the
    # shared cells 0..K-1 (a small table, in the L1 cache) serve all rows; a position
    # j >= K reads cell j + x * E of the row part. The output is the cell's primary if
    # the coin is below the cell, else its alias.
    def background_draw(words: Any, codes: Any, n_codes: Any, cells: Any, prim: Any,
                        bits: int, n_shared: Any, n_row: Any, out: Any, omap: Any) -> int:
        b = u64(bits)
        shift = u64(64 - bits)
        low = u64((1 << bits) - 1)
        k = u64(n_shared)
        e = u64(n_row)
        n = words.shape[0]
        for i in range(n):
            c = u64(codes[i])
            if c >= n_codes:
                return i  # refused before its gather
            r = words[i]
            at = r >> shift
            if at >= k:
                at += c * e
            cell = cells[at]
            keep = u64(((r << b) | low) < cell)
            alias = cell & low
            v = alias + (u64(prim[at]) - alias) * keep  # keep ? primary : alias
            if omap is None:
                out[i] = v
            else:
                out[i] = omap[v]
        return -1

    def background_draw_based(words: Any, codes: Any, base: Any, cells: Any, prim: Any,
                              bits: int, n_shared: Any, out: Any, omap: Any) -> int:
        n_codes = u64(base.shape[0])
        b = u64(bits)
        shift = u64(64 - bits)
        low = u64((1 << bits) - 1)
        k = u64(n_shared)
        n = words.shape[0]
        for i in range(n):
            c = u64(codes[i])
            if c >= n_codes:
                return i
            r = words[i]
            at = r >> shift
            if at >= k:
                at += base[c]
            cell = cells[at]
            keep = u64(((r << b) | low) < cell)
            alias = cell & low
            v = alias + (u64(prim[at]) - alias) * keep
            if omap is None:
                out[i] = v
            else:
                out[i] = omap[v]
        return -1

    def address_codes(addr: Any, keys: Any, values: Any, mult: int, bits: int,
                      out: Any) -> int:
        mask = u64(keys.shape[0] - 1)
        m = u64(mult)
        shift = u64(64 - bits)
        four = u64(4)
        one = u64(1)
        misses = 0
        for i in range(addr.shape[0]):
            a = addr[i]
            h = ((a >> four) * m) >> shift
            code = -1
            while True:
                k = keys[h]
                if k == a:
                    code = values[h]
                    break
                if k == 0:
                    break
                h = (h + one) & mask
            out[i] = code
            if code < 0:
                misses += 1
        return misses


    i64 = np.int64

    # (the lookup is written out in each kernel: a jitted helper taking the arrays would
    # count references to each of them per record)

    def string_codes(offsets: Any, data: Any, words: Any, masks: Any, table: Any,
                     seeds: Any, mults: Any, bucket_shift: Any, shift: Any, lab_len: Any,
                     lab_w0: Any, lab_w1: Any, lab_off: Any, lab_data: Any, max_len: Any,
                     out: Any) -> Any:
        n = out.shape[0]
        dlen = i64(data.shape[0])  # (``words``: unused, kept for the signature)
        one = u64(1)
        three = u64(3)
        u16 = u64(16)
        u17 = u64(17)
        umax = u64(max_len)
        m0, m1, m2, m3 = mults[0], mults[1], mults[2], mults[3]
        misses = i64(0)
        for i in range(n):
            si = i64(offsets[i])
            ei = i64(offsets[i + 1])
            if si < 0 or ei < si or ei > dlen:
                return i64(i)  # offsets outside the data: not a valid array
            s = u64(si)
            length = u64(ei - si)
            if length > umax:
                out[i] = -1
                misses += 1
                continue
            m = min(length, u16)
            if si + 16 <= dlen:  # the first 16 bytes by two unaligned loads
                w0 = _LOAD_U64(data, si) & masks[m]  # the bytes past the string masked
                w1 = _LOAD_U64(data, si + 8) & masks[u17 + m]
            else:  # near the end of the data: byte by byte
                w0 = u64(0)
                w1 = u64(0)
                j = u64(0)
                while j < m:
                    if j < u64(8):
                        w0 |= u64(data[s + j]) << (j << three)
                    else:
                        w1 |= u64(data[s + j]) << ((j - u64(8)) << three)
                    j += one
            # the key mixed into one word, its bucket's seed XORed in, one slot (a perfect
            # hash of the labels); the slot's label is accepted only if its length and
            # both words are the record's, and, past 16 bytes, every further byte too
            # (indices unsigned: no wraparound; no branch on the data for short labels)
            x = (w0 * m0) + (w1 * m1) + (length * m2)
            c = u64(table[((x ^ seeds[x >> bucket_shift]) * m3) >> shift])
            ok = (lab_len[c] == length) & (lab_w0[c] == w0) & (lab_w1[c] == w1)
            if length > u16 and ok:
                lo = lab_off[c]
                j = u16
                while j < length:  # past the two words: byte by byte
                    if data[s + j] != lab_data[lo + j]:
                        ok = False
                        break
                    j += one
            out[i] = i64(c) if ok else i64(-1)
            misses += i64(not ok)
        return -1 - misses  # (-1 - the number of records that are no label)

    def string_codes8(offsets: Any, data: Any, words: Any, masks: Any, table: Any,
                      seeds: Any, mults: Any, bucket_shift: Any, shift: Any, lab_len: Any,
                      lab_w0: Any, max_len: Any, direct: bool, fast: Any, fast_mult: Any,
                      fast_shift: Any, out: Any) -> Any:
        # string_codes for labels of at most 8 bytes: a record longer than the longest
        # label is no label, the others are one word (the second word is 0 for every label).
        # The record is first looked up in the ``fast`` table (one slot by the multiplier
        # alone, no seed: one dependent load less per record, 33.5 against 28 ms per 10^7
        # records; string_view 36 against 22 at 1000 labels), which holds each label
        # that has a slot of its own; only a record that misses there is looked up in the
        # seeded table, unless ``direct`` (every label has its own fast slot: a miss is no
        # label)
        n = out.shape[0]
        dlen = i64(data.shape[0])
        one = u64(1)
        three = u64(3)
        umax = u64(max_len)
        m0, m2, m3 = mults[0], mults[2], mults[3]
        misses = i64(0)
        ei = i64(offsets[0])
        if ei < 0:
            return i64(0)
        for i in range(n):
            si = ei
            ei = i64(offsets[i + 1])
            if ei < si or ei > dlen:
                return i64(i)  # offsets outside the data: not a valid array
            s = u64(si)
            length = u64(ei - si)
            if length > umax:
                out[i] = -1
                misses += 1
                continue
            if si + 8 <= dlen:  # the first 8 bytes by one unaligned load
                w0 = _LOAD_U64(data, si) & masks[length]
            else:  # near the end of the data: byte by byte
                w0 = u64(0)
                j = u64(0)
                while j < length:
                    w0 |= u64(data[s + j]) << (j << three)
                    j += one
            x = (w0 * m0) + (length * m2)  # the key of string_codes with w1 = 0
            c = u64(fast[(x * fast_mult) >> fast_shift])
            ok = (lab_len[c] == length) & (lab_w0[c] == w0)
            if not ok and not direct:  # (the seeded lookup of string_codes)
                c = u64(table[((x ^ seeds[x >> bucket_shift]) * m3) >> shift])
                ok = (lab_len[c] == length) & (lab_w0[c] == w0)
            out[i] = i64(c) if ok else i64(-1)
            misses += i64(not ok)
        return -1 - misses

    def view_codes(views: Any, masks: Any, table: Any, seeds: Any, mults: Any,
                   bucket_shift: Any, shift: Any, lab_len: Any, lab_w0: Any, lab_w1: Any,
                   lab_off: Any, lab_data: Any, max_len: Any, out: Any) -> Any:
        n = out.shape[0]
        misses = i64(0)
        low32 = u64(0xFFFFFFFF)
        s32 = u64(32)
        m0, m1, m2, m3 = mults[0], mults[1], mults[2], mults[3]
        for i in range(n):
            v0 = views[2 * i]
            v1 = views[2 * i + 1]
            ulen = v0 & low32
            if ulen > u64(max_len):  # max_len <= 12: only inlined strings can be labels
                out[i] = -1  # (a forged negative length is huge here)
                misses += 1
                continue
            w0 = (v0 >> s32) | (v1 << s32)  # bytes 0..7 and 8..11 of the inlined string
            w1 = v1 >> s32
            w0 &= masks[ulen]  # the padding is masked, not trusted
            w1 &= masks[u64(17) + ulen]
            # the lookup of string_codes (labels of at most 12 bytes: no byte loop)
            x = (w0 * m0) + (w1 * m1) + (ulen * m2)
            c = u64(table[((x ^ seeds[x >> bucket_shift]) * m3) >> shift])
            ok = (lab_len[c] == ulen) & (lab_w0[c] == w0) & (lab_w1[c] == w1)
            out[i] = i64(c) if ok else i64(-1)
            misses += i64(not ok)
        return -1 - misses

    def view_codes8(views: Any, masks: Any, table: Any, seeds: Any, mults: Any,
                    bucket_shift: Any, shift: Any, lab_len: Any, lab_w0: Any, max_len: Any,
                    direct: bool, fast: Any, fast_mult: Any, fast_shift: Any,
                    out: Any) -> Any:
        # view_codes for labels of at most 8 bytes: a record longer than the longest
        # label is no label, the others have their bytes 8..11 masked to 0 (as every
        # label's second word is), so the second word is neither hashed nor compared
        # (9-13 ms less per 10^7 records)
        n = out.shape[0]
        misses = i64(0)
        low32 = u64(0xFFFFFFFF)
        s32 = u64(32)
        m0, m2, m3 = mults[0], mults[2], mults[3]
        for i in range(n):
            v0 = views[2 * i]
            v1 = views[2 * i + 1]
            ulen = v0 & low32
            if ulen > u64(max_len):  # max_len <= 8
                out[i] = -1
                misses += 1
                continue
            w0 = ((v0 >> s32) | (v1 << s32)) & masks[ulen]
            x = (w0 * m0) + (ulen * m2)  # the key of view_codes with w1 = 0
            c = u64(fast[(x * fast_mult) >> fast_shift])  # (the lookups of string_codes8)
            ok = (lab_len[c] == ulen) & (lab_w0[c] == w0)
            if not ok and not direct:
                c = u64(table[((x ^ seeds[x >> bucket_shift]) * m3) >> shift])
                ok = (lab_len[c] == ulen) & (lab_w0[c] == w0)
            out[i] = i64(c) if ok else i64(-1)
            misses += i64(not ok)
        return -1 - misses

    # The output's bytes written a word at a time by unaligned stores at each record's
    # offset: a label's words go to its offset, zero past its end, and the next record's
    # words (written later, at or past that end) overwrite the zeros. Nothing chains one
    # record to the next but the running total (an accumulator of partial words measured
    # 17.7 ms per 10^7 records against 8 this way). The caller's buffer holds at least 8
    # bytes past the longest possible output, so no store leaves it.
    def take_strings(idx: Any, lab_len: Any, lab_words: Any, out_off: Any,
                     out_words: Any, counts: Any, start: Any) -> Any:
        # (``start``: the byte the first record's label starts at, for a part of the
        # records written by another thread than the part before it; the bytes up to 8
        # past the end are overwritten with zero padding)
        n = idx.shape[0]
        total = i64(start)
        k = u64(lab_len.shape[0])
        count = counts.shape[1] > 0  # (counts of each label wanted: 4 or 1 histograms)
        lanes = counts.shape[0] - 1
        out_off[0] = total
        for i in range(n):
            c = u64(idx[i])
            if c >= k:
                return i64(-1)  # not an index of a label (a negative one wraps: huge)
            if count:
                counts[i & lanes, c] += 1
            length = i64(lab_len[c])
            for j in range((length + 7) >> 3):
                _STORE_U64(out_words, total + 8 * j, lab_words[c, j])
            total += length
            out_off[i + 1] = total
        return total

    def take_short(idx: Any, lab_len: Any, lab_w: Any, out_off: Any, out_words: Any,
                   counts: Any, start: Any) -> Any:
        # take_strings for labels of at most 8 bytes: one store per record
        total = i64(start)
        k = u64(lab_len.shape[0])
        count = counts.shape[1] > 0
        lanes = counts.shape[0] - 1
        out_off[0] = total
        for i in range(idx.shape[0]):
            c = u64(idx[i])
            if c >= k:
                return i64(-1)  # not an index of a label (a negative one wraps: huge)
            if count:
                counts[i & lanes, c] += 1
            _STORE_U64(out_words, total, lab_w[c])
            total += i64(lab_len[c])
            out_off[i + 1] = total
        return total

    def take_views(idx: Any, views: Any, out: Any) -> Any:
        # the 16-byte views of the labels (two words each) gathered by output index
        k = u64(views.shape[0] >> 1)
        one = u64(1)
        for i in range(idx.shape[0]):
            c = u64(idx[i])
            if c >= k:
                return i64(-1)  # not an index of a label (a negative one wraps: huge)
            out[2 * i] = views[c << one]
            out[2 * i + 1] = views[(c << one) | one]
        return i64(0)

    def count_codes(idx: Any, counts: Any) -> Any:
        # four histograms filled in turn (consecutive equal codes do not wait on one
        # another's increments), or one for many outputs (four would crowd the L1 cache),
        # summed by the caller; a code outside 0..m-1 stops it
        m = u64(counts.shape[1])
        lanes = counts.shape[0] - 1
        n = idx.shape[0]
        for i in range(n):
            c = u64(idx[i])
            if c >= m:
                return i64(i)
            counts[i & lanes, c] += 1
        return i64(-1)

    kernels = {"alias_draw": jit(alias_draw), "alias_draw_based": jit(alias_draw_based),
            "alias_draw32": jit(alias_draw32), "alias_draw32_based": jit(alias_draw32_based),
            "background_draw": jit(background_draw),
            "background_draw_based": jit(background_draw_based),
            "address_codes": jit(address_codes), "string_codes": jit(string_codes),
            "string_codes8": jit(string_codes8),
            "view_codes": jit(view_codes), "view_codes8": jit(view_codes8),
            "take_strings": jit(take_strings),
            "take_short": jit(take_short), "count_codes": jit(count_codes),
            "take_views": jit(take_views)}
    kernels.update(_build_object_kernels(numba, u64, i64))
    return kernels


def _build_object_kernels(numba: Any, u64: Any, i64: Any) -> dict[str, Callable[..., Any]]:
    """The kernels that write object pointers and reference counts (``take_objects``,
    ``draw_objects``; see :class:`pmlkit.sampler.ObjectGather`). They run without the
    GIL, writing the labels' pointers into slots of an array no other code reads
    meanwhile (the labels held alive by the caller), and take the GIL themselves
    (``PyGILState_Ensure``) only to settle the reference counts at the end of the call:
    no Python code runs in the calling thread between the first pointer written and the
    last count settled, so neither an exception nor an interrupt can leave a slot
    uncounted, and no other thread touches a reference count while they are settled."""
    try:
        from llvmlite import ir
        from numba.core import cgutils, types
        from numba.extending import intrinsic
    except ImportError:  # pragma: no cover (numba always ships them)
        return {}
    declare: Any = cgutils.get_or_insert_function  # (an external C function, by name)

    def add_at_typed(typingctx: Any, addr: Any, delta: Any) -> Any:
        """``*(int64 *) addr += delta``: one load and one store (a reference count)."""
        sig = types.void(types.uint64, types.int64)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            builder.store(builder.add(builder.load(ptr), args[1]), ptr)
            return context.get_dummy_value()

        return sig, codegen

    def gil_ensure_typed(typingctx: Any) -> Any:
        """``PyGILState_Ensure()``: the GIL taken by this thread (which released it on
        entering the kernel); an opaque state for :func:`gil_release`. An external call,
        so no memory access moves across it."""
        sig = types.int32()

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            fnty = ir.FunctionType(ir.IntType(32), [])
            fn = declare(builder.module, fnty, "PyGILState_Ensure")
            return builder.call(fn, [])

        return sig, codegen

    def gil_release_typed(typingctx: Any, state: Any) -> Any:
        """``PyGILState_Release(state)``: the GIL given back as :func:`gil_ensure` found it."""
        sig = types.void(types.int32)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(32)])
            fn = declare(builder.module, fnty, "PyGILState_Release")
            builder.call(fn, [args[0]])
            return context.get_dummy_value()

        return sig, codegen

    # (module globals, for the disk cache: see _build)
    global _ADD_AT, _GIL_ENSURE, _GIL_RELEASE, _SETTLE
    _ADD_AT = intrinsic(add_at_typed)
    _GIL_ENSURE = intrinsic(gil_ensure_typed)
    _GIL_RELEASE = intrinsic(gil_release_typed)

    def take_objects(idx: Any, label_addr: Any, fill_addr: Any, out: Any,
                     counts: Any) -> Any:
        # out[i] = label_addr[idx[i]] over slots that all hold fill_addr (NULL, or None
        # counted once per slot), counted; then, holding the GIL, each label's reference
        # count raised by its count and the fill object's (None's) lowered by the slots
        # replaced. On a bad index or a slot that is not the fill, every slot written so
        # far gets the fill back and nothing is counted (return value: that position),
        # else -1
        k = u64(label_addr.shape[0])
        fill = u64(fill_addr)
        lanes = counts.shape[0] - 1
        n = idx.shape[0]
        for i in range(n):
            c = u64(idx[i])
            if c >= k or out[i] != fill:
                for j in range(i):
                    out[j] = fill
                return i64(i)
            out[i] = label_addr[c]
            counts[i & lanes, c] += 1
        _SETTLE(label_addr, fill, counts, n)
        return i64(-1)

    def settle(label_addr: Any, fill: Any, counts: Any, n: Any) -> None:
        # the counts of the n slots just written, under the GIL (taken and given back
        # here: the caller runs without it)
        state = _GIL_ENSURE()
        for c in range(label_addr.shape[0]):
            total = counts[0, c]
            for lane in range(1, counts.shape[0]):
                total += counts[lane, c]
            if total:
                _ADD_AT(label_addr[c], i64(total))
        if n and fill:
            _ADD_AT(fill, -i64(n))
        _GIL_RELEASE(state)

    def draw_objects(words: Any, codes: Any, n_codes: Any, cells32: Any, cells: Any,
                     prim: Any, bits: int, mode: int, n_shared: Any, n_row: Any,
                     label_addr: Any, fill_addr: Any, out: Any, counts: Any,
                     idx: Any) -> Any:
        # the alias draw of alias_draw (mode 0), alias_draw32 (mode 1) or background_draw
        # (mode 2: cells and prim are the background cells) into the block buffer idx
        # (one loop of its own: a large table's gathers overlap best without the label
        # writes in between), then take_objects' loop from idx. A bad code: nothing
        # written, its position returned; a bad output or slot: as take_objects (every
        # slot written put back, no count changed), n returned; else -1
        b = u64(bits)
        shift = u64(64 - bits)
        low = u64((1 << bits) - 1)
        s32 = u64(32)
        m32 = u64(0xFFFFFFFF)
        n = words.shape[0]
        if mode == 2:
            k = u64(n_shared)
            e = u64(n_row)
            for i in range(n):
                c = u64(codes[i])
                if c >= n_codes:
                    return i64(i)
                r = words[i]
                at = r >> shift
                if at >= k:
                    at += c * e
                cell = cells[at]
                keep = u64(((r << b) | low) < cell)
                alias = cell & low
                idx[i] = alias + (u64(prim[at]) - alias) * keep
        else:
            for i in range(n):
                c = u64(codes[i])
                if c >= n_codes:
                    return i64(i)
                r = words[i]
                col = r >> shift
                at = (c << b) | col
                if mode == 1:
                    cell = u64(cells32[at])
                    coin = (((r >> s32) << b) | low) & m32
                    if (coin ^ cell) <= low:
                        cell = cells[at]
                        coin = (r << b) | low
                else:
                    cell = cells[at]
                    coin = (r << b) | low
                keep = u64(coin < cell)
                alias = cell & low
                idx[i] = alias + (col - alias) * keep
        k = u64(label_addr.shape[0])
        fill = u64(fill_addr)
        lanes = counts.shape[0] - 1
        for i in range(n):
            o = idx[i]
            if o >= k or out[i] != fill:
                for j in range(i):
                    out[j] = fill
                return i64(n)
            out[i] = label_addr[o]
            counts[i & lanes, o] += 1
        _SETTLE(label_addr, fill, counts, n)
        return i64(-1)

    # compiled without the GIL (nogil): the pointer writes of two threads' chunks run at
    # once; settle() takes the GIL for the reference counts only
    _SETTLE = njit_cached(numba, settle, boundscheck=False)
    return {"take_objects": njit_cached(numba, take_objects, boundscheck=False),
            "draw_objects": njit_cached(numba, draw_objects, boundscheck=False)}


def _unaligned_load(numba: Any) -> Any:
    """``load_u64(data, pos)``: the 8 bytes of the uint8 array ``data`` at ``pos`` as one
    native (little-endian) word, by one unaligned load (the caller checks that
    ``pos + 8 <= len(data)``)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    def load_u64(typingctx: Any, arr: Any, pos: Any) -> Any:
        if not (isinstance(arr, types.Array) and arr.layout == "C" and arr.ndim == 1
                and arr.dtype == types.uint8 and isinstance(pos, types.Integer)):
            return None  # (a strided array: its data pointer alone does not address it)
        sig = types.uint64(arr, pos)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            ptr = builder.gep(ary.data, [args[1]])
            return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

        return sig, codegen

    return intrinsic(load_u64)


def _unaligned_store(numba: Any) -> Any:
    """``store_u64(words, pos, value)``: ``value`` written as the 8 bytes at byte ``pos``
    of the contiguous 1-D array ``words`` by one unaligned store (native byte order; the
    caller checks that ``pos + 8`` bytes fit)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    def store_u64(typingctx: Any, arr: Any, pos: Any, value: Any) -> Any:
        if not (isinstance(arr, types.Array) and arr.layout == "C" and arr.ndim == 1
                and isinstance(pos, types.Integer) and isinstance(value, types.Integer)):
            return None
        sig = types.void(arr, pos, value)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            base = builder.bitcast(ary.data, ir.IntType(8).as_pointer())
            ptr = builder.bitcast(builder.gep(base, [args[1]]),
                                  ir.IntType(64).as_pointer())
            val = context.cast(builder, args[2], signature.args[2], types.uint64)
            builder.store(val, ptr, align=1)
            return context.get_dummy_value()

        return sig, codegen

    return intrinsic(store_u64)


#: per-thread flag: this thread runs one chunk of a draw split over threads, whose own
#: draws then stay on this thread (see :func:`one_thread`)
_LOCAL = threading.local()


def draw_threads() -> int:
    """Threads a compiled draw uses: ``PMLKIT_THREADS`` if set (1 or 2), else 2 on a
    machine with at least two CPUs, else 1; always 1 inside :func:`one_thread`.

    Examples
    --------
    >>> draw_threads() in (1, 2)
    True
    >>> with one_thread():
    ...     draw_threads()
    1
    """
    if getattr(_LOCAL, "inline", False):
        return 1
    env = os.environ.get("PMLKIT_THREADS", "")
    if env.strip():
        try:
            return 2 if int(env) >= 2 else 1
        except ValueError:
            return 1
    return 2 if (os.cpu_count() or 1) >= 2 else 1


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Within it, the draws of this thread run on this thread only (:func:`draw_threads`
    is 1): a thread already given its share of the work (one of the chunks that
    :func:`pmlkit.sampler.run_chunks` spreads over the threads) neither waits for the
    one worker nor hands it blocks."""
    before = getattr(_LOCAL, "inline", False)
    _LOCAL.inline = True
    try:
        yield
    finally:
        _LOCAL.inline = before


class Job:
    """Work handed to the :class:`Worker`: ``result()``, ``exception()``, ``cancel()`` and
    ``done()`` as on a :class:`concurrent.futures.Future`, but waited for on a plain lock.

    A ``Future`` is waited for inside a ``threading.Condition``: a ``KeyboardInterrupt``
    (Ctrl-C, or a signal handler that raises) landing in that wait can leave the
    condition's lock in the wrong state, so that the wait raises ``RuntimeError('cannot
    release un-acquired lock')`` or the worker, setting the result later, blocks on the
    lock for good (every later release then hangs). Here the waiter only takes a lock
    that the worker gives back when the work is done: interrupted, the wait raises and
    leaves the job as it was; the worker finishes the job on its own.

    Examples
    --------
    >>> worker().submit(pow, 2, 10).result()
    1024
    """

    def __init__(self) -> None:
        import _thread

        self._finished = _thread.allocate_lock()
        self._finished.acquire()  # (given back by whoever ends the job)
        self._claim = _thread.allocate_lock()  # (taken by run or by cancel: the first)
        self._cancelled = False
        self._value: Any = None
        self._error: BaseException | None = None

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        if not self._claim.acquire(blocking=False):
            return  # (cancelled before it started)
        try:
            self._value = fn(*args)
        except BaseException as exc:  # (raised by result() in the waiting thread)
            self._error = exc
        finally:
            self._finished.release()

    def cancel(self) -> bool:
        """True (and the work never runs) when it had not started."""
        if not self._claim.acquire(blocking=False):
            return False
        self._cancelled = True
        self._finished.release()
        return True

    def done(self) -> bool:
        return not self._finished.locked()

    def _wait(self) -> None:
        # taken and given straight back, by a with-block: an interrupt in the blocking
        # acquire leaves it not taken, and one that arrives once it is taken (the signal
        # handler runs at the next instruction) still leaves through the release, so
        # every later wait passes (a bare acquire left it taken: the next wait hung)
        with self._finished:
            pass

    def exception(self) -> BaseException | None:
        self._wait()
        if self._cancelled:
            from concurrent.futures import CancelledError

            raise CancelledError()
        return self._error

    def result(self) -> Any:
        error = self.exception()
        if error is not None:
            raise error
        return self._value


class Worker:
    """The one persistent worker thread of the compiled draw (:func:`worker`): ``submit``
    as :meth:`concurrent.futures.Executor.submit`, returning a :class:`Job`.

    A daemon thread taking work from a :class:`queue.SimpleQueue`, not a
    ``ThreadPoolExecutor``: the executor's ``submit`` takes the locks of its own
    semaphore and conditions in Python code, where a ``KeyboardInterrupt`` (Ctrl-C, or a
    signal handler that raises) can land between a lock taken and its release; the
    executor then hangs for good, and with it every later release (once in 14 runs of
    the interrupt attack at one thread). ``SimpleQueue.put`` is one C call, which no
    signal handler interrupts, and the worker thread never runs one (Python runs them in
    the main thread). After the interpreter began finalising (or in a process whose
    worker thread is gone) the work runs in the calling thread and the job returned is
    already done. Every caller only asks for work to be done, never for it to run at the
    same time as its own: the result is the same."""

    def __init__(self) -> None:
        import queue

        self._queue: queue.SimpleQueue[tuple[Job, Callable[..., Any], tuple[Any, ...]]] = \
            queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="pmlkit-draw", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            job, fn, args = self._queue.get()
            job._run(fn, args)
            del job, fn, args  # (no reference kept while waiting for the next)

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Job:
        job = Job()
        if sys.is_finalizing() or not self._thread.is_alive():
            job._run(fn, args)
        else:
            self._queue.put((job, fn, args))
        return job


def worker() -> Worker:
    """The one persistent worker thread of the compiled draw (created on first use; a
    child process after ``fork`` makes its own, since threads do not survive a fork).

    Examples
    --------
    >>> worker().submit(sum, [1, 2]).result()
    3
    """
    with _LOCK:
        pool: Worker | None = _STATE.get("worker")
        if pool is None or _STATE.get("worker_pid") != os.getpid():
            pool = Worker()
            _STATE["worker"], _STATE["worker_pid"] = pool, os.getpid()
    return pool


def alias_draw(kernels: dict[str, Callable[..., Any]], words: NDArray[np.uint64],
               codes: NDArray[Any], cells: NDArray[np.uint64], bits: int,
               out: NDArray[Any], omap: NDArray[Any] | None = None) -> int:
    """Outputs of one block into ``out`` (see the module's description). Every code is
    checked against the table's rows (``len(cells) >> bits``) before its gather; returns
    the position of the first code outside them (``out`` is then incomplete), else -1.
    With ``omap`` (every draw kernel) a record's output ``j`` is written as ``omap[j]``
    (``out`` of ``omap``'s dtype): the caller's codes of the outputs, in the same pass."""
    n_codes = np.uint64(cells.shape[0] >> bits)
    return int(kernels["alias_draw"](words, codes, n_codes, cells, bits, out, omap))


def alias_draw_based(kernels: dict[str, Callable[..., Any]], words: NDArray[np.uint64],
                     codes: NDArray[Any], base: NDArray[np.uint64],
                     cells: NDArray[np.uint64], bits: int, out: NDArray[Any],
                     omap: NDArray[Any] | None = None) -> int:
    """Outputs of one block whose row offsets are ``base[codes]`` (codes checked against
    ``len(base)``; the return value as for :func:`alias_draw`)."""
    return int(kernels["alias_draw_based"](words, codes, base, cells, bits, out, omap))


def alias_draw32(kernels: dict[str, Callable[..., Any]], words: NDArray[np.uint64],
                 codes: NDArray[Any], cells32: NDArray[np.uint32], cells: NDArray[np.uint64],
                 bits: int, out: NDArray[Any], omap: NDArray[Any] | None = None) -> int:
    """Outputs of one block decided on the 32-bit cells (ties on the 64-bit cells); the
    codes checked and the return value as for :func:`alias_draw`."""
    n_codes = np.uint64(cells.shape[0] >> bits)
    return int(kernels["alias_draw32"](words, codes, n_codes, cells32, cells, bits, out,
                                       omap))


def alias_draw32_based(kernels: dict[str, Callable[..., Any]], words: NDArray[np.uint64],
                       codes: NDArray[Any], base: NDArray[np.uint64],
                       cells32: NDArray[np.uint32], cells: NDArray[np.uint64], bits: int,
                       out: NDArray[Any], omap: NDArray[Any] | None = None) -> int:
    """Like :func:`alias_draw32`, with the row offsets ``base[codes]``."""
    return int(kernels["alias_draw32_based"](words, codes, base, cells32, cells, bits,
                                             out, omap))


def background_draw(kernels: dict[str, Callable[..., Any]], words: NDArray[np.uint64],
                    codes: NDArray[Any], n_codes: int, cells: NDArray[np.uint64],
                    prim: NDArray[Any], bits: int, n_shared: int, n_row: int,
                    out: NDArray[Any], omap: NDArray[Any] | None = None) -> int:
    """Outputs of one block from shared background cells (``n_shared`` shared cells
    first, then ``n_row`` cells per row; see :func:`pmlkit.sampler.background_tables`);
    codes checked against ``n_codes``, the return value as for :func:`alias_draw`."""
    return int(kernels["background_draw"](words, codes, np.uint64(n_codes), cells, prim,
                                          bits, np.uint64(n_shared), np.uint64(n_row),
                                          out, omap))


def background_draw_based(kernels: dict[str, Callable[..., Any]],
                          words: NDArray[np.uint64], codes: NDArray[Any],
                          base: NDArray[np.uint64], cells: NDArray[np.uint64],
                          prim: NDArray[Any], bits: int, n_shared: int,
                          out: NDArray[Any], omap: NDArray[Any] | None = None) -> int:
    """Like :func:`background_draw`, with the row parts' offsets ``base[codes]`` (codes
    checked against ``len(base)``)."""
    return int(kernels["background_draw_based"](words, codes, base, cells, prim, bits,
                                                np.uint64(n_shared), out, omap))


def address_codes(kernels: dict[str, Callable[..., Any]], addr: NDArray[np.uint64],
                  keys: NDArray[np.uint64], values: NDArray[np.intp], mult: int, bits: int,
                  out: NDArray[np.intp]) -> int:
    """The value stored for each address (-1 where the address is not a key) into ``out``;
    returns the number of addresses that are not keys."""
    # as a uint64 (a Python int above 2**63 - 1 would not fit numba's int64 signature)
    return int(kernels["address_codes"](addr, keys, values, np.uint64(mult), bits, out))
