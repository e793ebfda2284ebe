"""The label kinds' data-parallel path (issue 17): each thread encodes, draws and writes
its own chunks (:func:`pmlkit.sampler.run_chunks`), chunk ``i`` drawing from the
generator positioned at its first record. These tests would fail on a broken parallel
path: a chunk drawn from the wrong words, a chunk written twice or not at all, problems
counted twice or in another order, a generator left elsewhere than one pass leaves it.

Chunks are made small (``CHUNK_ROWS`` patched) so that inputs of a few chunks stay quick;
nothing here is timed."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

import kindsgen as kg
import pmlkit
from pmlkit import _kernels
from pmlkit.errors import DataError
from pmlkit.rng import positioned, skip_words
from pmlkit.sampler import run_chunks

CHUNK = 1 << 14  # (the chunk of the small_chunks fixture: tests/conftest.py)
N = 5 * CHUNK + 777  # six chunks, the last one short


def _state(gen: np.random.Generator) -> Any:
    """Where the generator stands: the next 32-bit value (a buffered half first) and the
    next 20 words of a copy (AESCounter's state after a jump holds the same stream as
    after drawing, buffered differently)."""
    import copy

    ahead = copy.deepcopy(gen)
    return (int(ahead.integers(0, 2**32, dtype=np.uint32)),
            ahead.bit_generator.random_raw(20).tolist())


def _generators() -> list[tuple[str, Any]]:
    import randomgen

    return [("pcg64", lambda: np.random.Generator(np.random.PCG64(11))),
            ("aes", lambda: np.random.Generator(randomgen.AESCounter(key=12345, counter=0))),
            ("philox", lambda: np.random.Generator(np.random.Philox(5)))]


@pytest.mark.parametrize("kind", kg.KINDS)
def test_every_kind_releases_alike_at_one_and_two_threads(
        kind: str, small_chunks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six chunks: the release of one thread, of two, and of the integer codes are one;
    the caller's generator (word-stepped or not) ends where ``n`` words leave it."""
    k = 40
    ins, outs = kg.names(k), kg.names(k, "o:")
    w = kg.matrix(k, k, 3)
    mech = pmlkit.Mechanism(w, ins, outs)
    codes = np.random.default_rng(4).integers(0, k, N)
    ref = kg.reference(w, outs, codes, 21)
    for name, make in _generators():
        expect = make()
        expect.bit_generator.random_raw(N)
        runs = []
        for threads in ("1", "2"):
            monkeypatch.setenv("PMLKIT_THREADS", threads)
            gen = make()
            out = kg.as_list(pmlkit.privatize(mech, kg.column(kind, ins, codes, outs),
                                              rng=gen))
            assert _state(gen) == _state(expect), (name, threads)
            runs.append(out)
        assert runs[0] == runs[1], name
    monkeypatch.setenv("PMLKIT_THREADS", "2")
    assert kg.as_list(pmlkit.privatize(mech, kg.column(kind, ins, codes, outs),
                                       rng=21)) == ref


@pytest.mark.parametrize("labels", [(10, 20, 30, 40), ("a", "b", "c", "d")])
def test_numpy_and_pandas_columns_of_labels_release_alike(
        labels: tuple[Any, ...], small_chunks: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Integer labels other than 0..N-1 and object Series (the chunked encoder path of
    numpy arrays): one release at one and two threads, that of the integer codes."""
    import pandas as pd

    w = kg.matrix(4, 4, 8)
    mech = pmlkit.Mechanism(w, labels, labels)
    codes = np.random.default_rng(9).integers(0, 4, N)
    vals = np.array(labels, dtype=object if isinstance(labels[0], str) else np.int64)[codes]
    ref = np.array(labels, dtype=object)[np.asarray(
        pmlkit.privatize(pmlkit.Mechanism(w), codes, rng=5))].tolist()
    for column in (vals, pd.Series(vals), pd.Series(vals, dtype=object)):
        got = []
        for threads in ("1", "2"):
            monkeypatch.setenv("PMLKIT_THREADS", threads)
            got.append(list(np.asarray(pmlkit.privatize(mech, column, rng=5),
                                       dtype=object)))
        assert got[0] == got[1] == ref


ERROR_KINDS = ["object", "list", "pandas-object", "pandas-arrow", "pandas-string",
               "arrow", "arrow-large", "arrow-chunked", "arrow-view", "polars"]


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_bad_records_in_later_chunks_raise_the_one_thread_error(
        kind: str, small_chunks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unknown values and nulls in chunks 1, 3 and 4 (the second thread's chunks among
    them): the error of one thread, word for word (the counts over the whole input, ties
    in record order), the input unchanged and the generator where one pass leaves it."""
    k = 6
    ins = kg.names(k)
    pool = [*ins, "nope", None, "zzz"]
    codes = np.random.default_rng(2).integers(0, k, N)
    codes[CHUNK + 5] = k  # "nope" in chunk 1
    codes[3 * CHUNK + 1] = k + 2  # "zzz" in chunk 3: a tie with "nope", after it
    codes[4 * CHUNK + 7] = k + 1  # a null in chunk 4
    codes[4 * CHUNK + 9] = k + 1
    mech = pmlkit.Mechanism(kg.matrix(k, k, 1), ins, ins)
    col = kg.column(kind, pool, codes)
    before = kg.as_list(col)
    messages, states = [], []
    for threads in ("1", "2"):
        monkeypatch.setenv("PMLKIT_THREADS", threads)
        gen = np.random.Generator(np.random.PCG64(3))
        with pytest.raises(DataError) as err:
            pmlkit.privatize(mech, col, rng=gen)
        messages.append(str(err.value))
        states.append(_state(gen))
        assert kg.as_list(col) == before
    assert messages[0] == messages[1]
    assert "'nope' appears in 1 row" in messages[0] and "'zzz' (1 rows)" in messages[0]
    assert "2 rows hold a null" in messages[0]
    # the chunk before the first bad one drew: one chunk of words, as one pass draws
    expect = np.random.Generator(np.random.PCG64(3))
    expect.bit_generator.random_raw(CHUNK)
    if kind != "list":  # (a list is drawn whole from its object array: the same rule)
        assert states[0] == states[1] == _state(expect)


def test_run_chunks_gives_every_chunk_its_own_words_whatever_the_schedule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Both threads take chunks (the first chunk waits until another thread has done
    one), in an order perturbed by sleeps: every record gets the word of one pass, every
    chunk runs once, and the generator ends where one pass leaves it."""
    monkeypatch.setenv("PMLKIT_THREADS", "2")
    sizes = [1000, 1, 0, 4096, 333, 2000, 7, 1500]
    total = sum(sizes)
    ref_gen = np.random.Generator(np.random.PCG64(77))
    ref = ref_gen.bit_generator.random_raw(total)
    for trial in range(3):
        _one_schedule(sizes, ref, _state(ref_gen), trial)


def _one_schedule(sizes: list[int], ref: np.ndarray, end: Any, trial: int) -> None:
    gen = np.random.Generator(np.random.PCG64(77))
    out = np.zeros(sum(sizes), dtype=np.uint64)
    seen: list[tuple[int, int]] = []
    other = threading.Event()
    caller = threading.get_ident()
    jitter = np.random.default_rng(trial)

    def encode(i: int, own: Any) -> Any:
        assert own == "mine" and _kernels.draw_threads() == 1
        if i == 0:
            other.wait(10)
        time.sleep(float(jitter.random()) * 0.003)
        return i

    def draw(i: int, start: int, codes: Any, g: np.random.Generator) -> None:
        assert codes == i and _kernels.draw_threads() == 1
        out[start:start + sizes[i]] = g.bit_generator.random_raw(sizes[i])
        seen.append((i, threading.get_ident()))
        if threading.get_ident() != caller:
            other.set()

    run_chunks(sizes, gen, encode, draw, lambda: "mine")
    assert other.is_set()  # the worker did chunks
    assert sorted(i for i, _ in seen) == list(range(len(sizes)))
    assert np.array_equal(out, ref)
    assert _state(gen) == end


def test_run_chunks_failures_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk whose encoding gives None: the generator ends at its first record, and
    every chunk is still encoded (its problems counted); an exception in a chunk:
    raised (the first chunk's), the generator left where it was."""
    sizes = [100, 200, 300, 400, 500]
    for threads in ("1", "2"):
        monkeypatch.setenv("PMLKIT_THREADS", threads)
        _failure_and_error(sizes)


def _failure_and_error(sizes: list[int]) -> None:
    gen = np.random.Generator(np.random.PCG64(1))
    ran: list[int] = []

    def encode(i: int, own: Any) -> Any:
        ran.append(i)
        return None if i == 2 else i

    def draw(i: int, start: int, codes: Any, g: np.random.Generator) -> None:
        assert codes == i != 2
        g.bit_generator.random_raw(sizes[i])

    run_chunks(sizes, gen, encode, draw, lambda: None)
    assert sorted(ran) == list(range(len(sizes)))
    expect = np.random.Generator(np.random.PCG64(1))
    expect.bit_generator.random_raw(sum(sizes[:2]))
    assert _state(gen) == _state(expect)

    gen = np.random.Generator(np.random.PCG64(1))
    start_state = _state(gen)

    def boom(i: int, own: Any) -> Any:
        if i in (1, 3):
            raise ValueError(f"chunk {i}")
        return i

    with pytest.raises(ValueError, match="chunk 1"):
        run_chunks(sizes, gen, boom, lambda i, start, codes, g: None, lambda: None)
    assert _state(gen) == start_state


def test_positioned_and_skip_words() -> None:
    """A positioned copy gives the words ``offset`` words on, for PCG64 and AESCounter
    (also with a buffered 32-bit half and part of an AES block used); others: None."""
    import randomgen

    for make in (lambda: np.random.Generator(np.random.PCG64(4)),
                 lambda: np.random.Generator(np.random.PCG64DXSM(4)),
                 lambda: np.random.Generator(randomgen.AESCounter(key=9, counter=0))):
        g = make()
        g.integers(0, 2**32, dtype=np.uint32)  # a 32-bit half buffered
        g.bit_generator.random_raw(3)  # part of an AES block used
        words = make()
        words.integers(0, 2**32, dtype=np.uint32)
        seq = words.bit_generator.random_raw(3 + 1000)[3:]
        for off in (0, 1, 7, 8, 9, 999):
            moved = positioned(g, off)
            assert moved is not None
            assert np.array_equal(moved.bit_generator.random_raw(1), seq[off:off + 1])
        h, ref = make(), make()
        for x in (h, ref):
            x.integers(0, 2**32, dtype=np.uint32)
            x.bit_generator.random_raw(3)
        ref.bit_generator.random_raw(500)
        assert skip_words(h, 500)
        assert _state(h) == _state(ref)  # (the buffered 32-bit half kept)
        assert np.array_equal(h.bit_generator.random_raw(2), seq[500:502])
    assert positioned(np.random.Generator(np.random.Philox(1)), 5) is None
    assert not skip_words(np.random.Generator(np.random.MT19937(1)), 5)


@pytest.mark.parametrize("index_type", [np.intp, np.uint16])
@pytest.mark.parametrize("labels", [["", "a", "bb", "ccc", "d" * 12, "é" * 9, ""],
                                    ["x" * 30, "", "yy"], ["", ""]])
def test_arrow_take_in_two_parts_is_the_take_of_one(
        labels: list[str], index_type: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """The output labels' take split over two threads (the second part starting at the
    bytes of the first part's labels, which it counts, the seam's bytes rewritten after
    both): the array, its offsets and the counts of one thread, for labels of every
    length (empty ones too, around the seam), every string layout, and the 8-byte and
    the narrow (uint16) indices of the Arrow paths; a bad index refused alike."""
    import pyarrow as pa

    from pmlkit import sampler as sampler_mod
    from pmlkit.sampler import _SPLIT_MIN, arrow_take

    _kernels.compiled()
    rng = np.random.default_rng(len(labels))
    for t in (pa.string(), pa.large_string(), pa.string_view()):
        lab = pa.array(labels, type=t)
        for n in (_SPLIT_MIN, _SPLIT_MIN + 7):
            idx = rng.integers(0, len(labels), n).astype(index_type)
            seam = (n * sampler_mod._TAKE_FIRST) >> 8
            for at in (n // 2, seam):  # empty labels at the seams (views: halves)
                idx[at - 20:at + 3] = labels.index("")
            ref = [labels[i] for i in idx.tolist()]
            got = []
            for threads in ("1", "2"):
                monkeypatch.setenv("PMLKIT_THREADS", threads)
                counts = np.zeros(len(labels), dtype=np.int64)
                out = arrow_take(lab, idx, counts)
                out.validate(full=True)
                assert out.to_pylist() == ref
                got.append((out.buffers()[1].to_pybytes() if t != pa.string_view()
                            else b"", counts.tolist()))
                bad = idx.copy()
                bad[n - 3] = len(labels)
                with pytest.raises(pmlkit.errors.ValidationError, match="idx must hold"):
                    arrow_take(lab, bad)
            assert got[0] == got[1]
            assert got[0][1] == np.bincount(idx, minlength=len(labels)).tolist()


@pytest.mark.parametrize("index_type", [np.intp, np.int16, np.uint16, np.uint8])
def test_count_outputs_in_two_parts_is_the_count_of_one(
        index_type: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled count split over two threads (each part its own histograms): the
    counts of ``np.bincount`` at one and two threads; an index outside the outputs
    (in either part) leaves the count to numpy, which refuses a negative one."""
    from pmlkit.sampler import _SPLIT_MIN, count_outputs

    _kernels.compiled()
    n = _SPLIT_MIN + 5
    idx = np.random.default_rng(7).integers(0, 100, n).astype(index_type)
    ref = np.bincount(idx, minlength=100)
    for threads in ("1", "2"):
        monkeypatch.setenv("PMLKIT_THREADS", threads)
        got = count_outputs(idx, 100)
        assert got.dtype == np.int64 and got.tolist() == ref.tolist()
        for at in (3, n - 3):  # an output index 100 in the first or the second half
            bad = idx.copy()
            bad[at] = 100
            assert count_outputs(bad, 100)[:100].tolist() \
                == np.bincount(bad, minlength=100)[:100].tolist()
