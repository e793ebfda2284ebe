"""The object gather without the GIL (:class:`pmlkit.sampler.ObjectGather`): the compiled
calls write the labels' pointers without the GIL into a fresh array whose slots hold no
object yet (NULL), and take the GIL themselves only to settle the reference counts.

These tests would fail on: a kernel that holds the GIL while it writes (the two threads
of a release then take turns), a fresh array whose dtype loses a reference per array (the
constructor steals one), a NULL slot handed out, a count left unsettled or settled twice
when a release stops half way (a bad record in a later chunk, an exception or an
interrupt in either thread's chunk)."""

from __future__ import annotations

import gc
import sys
import threading
import time
from typing import Any

import numpy as np
import pytest

import pmlkit
from pmlkit import _kernels
from pmlkit import sampler as sampler_mod
from pmlkit.errors import DataError
from pmlkit.sampler import ObjectGather

pytestmark = pytest.mark.skipif(
    _kernels.compiled() is None or not sampler_mod._refcounts_writable(),
    reason="needs the compiled kernels on CPython 3.11 (elsewhere no ObjectGather)")

CHUNK = 1 << 14  # (the chunk of the small_chunks fixture: tests/conftest.py)
N = 5 * CHUNK + 777  # six chunks, the last one short (>= 2^16: the gather is used)


def fresh(tag: str, k: int) -> list[str]:
    """``k`` labels no one else references (built at run time, never interned)."""
    return ["".join([tag, str(i), "-" * (i % 3)]) for i in range(k)]


def counts(objs: list[Any]) -> list[int]:
    return [sys.getrefcount(o) for o in objs]


def test_fresh_array_of_nulls() -> None:
    """numpy's own constructor, called without data: an owning, writable, C-contiguous
    object array of NULL slots; the dtype's reference (stolen by the constructor) is given
    back when the array is freed, and freeing NULL slots touches no object."""
    descr = np.dtype(object)
    a = sampler_mod._null_objects(3)
    assert a is not None
    assert type(a) is np.ndarray and a.dtype == object and a.shape == (3,)
    assert a.flags.owndata and a.flags.writeable and a.flags.c_contiguous
    assert np.asarray(sampler_mod._Addresses(a)).tolist() == [0, 0, 0]
    del a
    gc.collect()
    before = sys.getrefcount(descr)
    none_before = sys.getrefcount(None)
    arrays = [sampler_mod._null_objects(1000) for _ in range(50)]
    assert sys.getrefcount(descr) - before == 50  # one per array, none stolen
    del arrays
    gc.collect()
    assert sys.getrefcount(descr) == before
    assert abs(sys.getrefcount(None) - none_before) < 1000


def test_out_never_shows_a_null_slot() -> None:
    """Slots not written yet are handed out as None (counted): then written over, None's
    count comes back down by as many, and every label's count is exact."""
    objs = fresh("n", 3)
    labels = np.empty(3, dtype=object)
    labels[:] = objs
    warm = ObjectGather.start(labels, 4)  # (the kernel loaded: numba's own references)
    assert warm is not None and warm.put(0, np.zeros(4, dtype=np.intp))
    del warm
    gc.collect()
    before = counts(objs)
    none_before = sys.getrefcount(None)
    g = ObjectGather.start(labels, 200_000)
    assert g is not None
    assert g.put(0, np.array([2, 1, 0, 2], dtype=np.intp))
    out = g.out
    words = np.asarray(sampler_mod._Addresses(out))
    assert words.all()  # no NULL
    assert out[:4].tolist() == [objs[2], objs[1], objs[0], objs[2]]
    assert out[4:].tolist() == [None] * (200_000 - 4)
    assert sys.getrefcount(None) - none_before >= 200_000 - 4 - 1000
    assert g.put(4, np.zeros(200_000 - 4, dtype=np.intp))  # over the None slots
    assert abs(sys.getrefcount(None) - none_before) < 1000
    # (each label also held once by the gather's private copy of the labels)
    assert [a - b for a, b in zip(counts(objs), before, strict=True)] == \
        [200_000 - 4 + 1 + 1, 1 + 1, 2 + 1]
    assert not g.put(0, np.zeros(1, dtype=np.intp))  # a slot written twice: refused
    del out, g, words
    gc.collect()
    assert counts(objs) == before


def _runs_while_kernel_runs(call: Any) -> bool:
    """Whether another thread runs Python while ``call()`` runs: the switch interval is
    made huge, so a thread waiting for the GIL gets it only when the caller gives it up
    (a kernel that holds the GIL keeps the helper waiting until the call has returned)."""
    go = threading.Event()
    when: list[float] = []

    def helper() -> None:
        go.wait()
        when.append(time.perf_counter())

    t = threading.Thread(target=helper)
    t.start()
    old = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        go.set()
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
    finally:
        sys.setswitchinterval(old)
        t.join()
    return t0 < when[0] < t1


def test_kernels_write_without_the_gil() -> None:
    """The gather's compiled calls (put, and the fused draw's kernel) let another thread
    run Python meanwhile (tried a few times: the helper needs a free core in time)."""
    objs = fresh("g", 5)
    labels = np.empty(5, dtype=object)
    labels[:] = objs
    n = 4_000_000
    idx = np.random.default_rng(0).integers(0, 5, n)
    w = np.random.default_rng(2).random((5, 5)) + 0.1
    s = sampler_mod.AliasSampler(w / w.sum(axis=1, keepdims=True))
    words = np.random.Generator(np.random.PCG64(1)).bit_generator.random_raw(n)
    want = s.draw(idx, np.random.Generator(np.random.PCG64(1)))  # the same words
    codes = idx.astype(np.int16)

    def draw_kernel(g: ObjectGather, parts: np.ndarray, buf: np.ndarray, m: int) -> int:
        return int(g._draw_kernel(
            words[:m], codes[:m], np.uint64(5), sampler_mod._NO_CELLS32, s._cells,
            sampler_mod._NO_PRIM, s._bits, 0, np.uint64(0), np.uint64(0), g._addr,
            np.uint64(g._fill), g._slots[:m], parts, buf))

    # both kernels called once first (a first call loads or compiles them: no test here)
    warm = ObjectGather.start(labels, 8)
    assert warm is not None and warm.put(0, idx[:8])
    warm = ObjectGather.start(labels, 8)
    assert warm is not None
    assert draw_kernel(warm, np.zeros((4, 5), dtype=np.uint32), np.empty(8, np.uint64), 8) < 0
    del warm
    gc.collect()
    before = counts(objs)
    seen = {"put": False, "draw": False}
    for _ in range(5):
        g = ObjectGather.start(labels, n)
        assert g is not None
        seen["put"] |= _runs_while_kernel_runs(lambda g=g: g.put(0, idx))
        assert (np.asarray(sampler_mod._Addresses(g.out)) == g._addr[idx]).all()
        g = ObjectGather.start(labels, n)
        assert g is not None
        parts = np.zeros((4, 5), dtype=np.uint32)
        buf = np.empty(n, dtype=np.uint64)
        bad: list[int] = []
        seen["draw"] |= _runs_while_kernel_runs(
            lambda g=g, p=parts, b=buf, r=bad: r.append(draw_kernel(g, p, b, n)))
        assert bad[-1] == -1
        g._wrote(parts, n)
        assert g.counts.tolist() == np.bincount(want, minlength=5).tolist()
        assert (np.asarray(sampler_mod._Addresses(g.out)) == g._addr[want]).all()
        del g
        if all(seen.values()):
            break
    assert seen == {"put": True, "draw": True}
    gc.collect()
    assert counts(objs) == before


def _mechanism(k: int, m: int) -> tuple[pmlkit.Mechanism, list[str], list[str]]:
    ins, outs = fresh("in", k), fresh("out", m)
    w = np.random.default_rng(k * m).random((k, m)) + np.eye(k, m)
    return pmlkit.Mechanism(w / w.sum(axis=1, keepdims=True), ins, outs), ins, outs


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("bad_chunk", [0, 2, 3, 5])
def test_counts_exact_when_a_later_chunk_has_a_bad_record(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch, threads: str,
        bad_chunk: int) -> None:
    """A record that is no label in chunk ``bad_chunk`` of six: the release raises (the
    chunks before it drawn and written by either thread), and every label's count is back
    where it was once the error is gone; None's too."""
    monkeypatch.setenv("PMLKIT_THREADS", threads)
    mech, ins, outs = _mechanism(4, 3)
    values = np.empty(N, dtype=object)
    values[:] = [ins[i] for i in np.random.default_rng(5).integers(0, 4, N).tolist()]
    # (the mechanism's caches built, every kernel of the path loaded: a first call
    # creates objects that hold references to None)
    pmlkit.privatize(mech, values, rng=1)
    values[bad_chunk * CHUNK + 17] = "".join(["not", "-a-label"])
    gc.collect()
    before, none_before = counts(outs), sys.getrefcount(None)
    with pytest.raises(DataError, match="not-a-label"):
        pmlkit.privatize(mech, values, rng=1)
    gc.collect()
    assert counts(outs) == before
    assert abs(sys.getrefcount(None) - none_before) < 1000


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("where", ["worker", "caller"])
def test_counts_exact_when_either_thread_stops_half_way(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch, exc: type[BaseException],
        where: str) -> None:
    """An exception (or an interrupt) raised in the worker's or the caller's chunk once
    a chunk of each thread is written: it reaches the caller, and every label's count
    comes back exactly once the partial output is gone (the threads are made to wait for
    each other's first chunk, so both write whatever the schedule)."""
    monkeypatch.setenv("PMLKIT_THREADS", "2")
    mech, ins, outs = _mechanism(3, 1000)
    values = np.empty(N, dtype=object)
    values[:] = [ins[i] for i in np.random.default_rng(6).integers(0, 3, N).tolist()]
    pmlkit.privatize(mech, values, rng=1)  # (caches built, kernels loaded)
    started = {"worker": threading.Event(), "caller": threading.Event()}
    finished = {"worker": threading.Event(), "caller": threading.Event()}
    orig = ObjectGather.draw

    def draw(self: ObjectGather, *a: Any, **kw: Any) -> bool:
        me = "worker" if threading.current_thread().name.startswith("pmlkit") \
            else "caller"
        other = "caller" if me == "worker" else "worker"
        started[me].set()
        assert started[other].wait(30)
        done = orig(self, *a, **kw)
        finished[me].set()
        if me == where:
            assert finished[other].wait(30)
            raise exc("stop half way")
        return done

    monkeypatch.setattr(ObjectGather, "draw", draw)
    gc.collect()
    before, none_before = counts(outs), sys.getrefcount(None)
    with pytest.raises(exc, match="stop half way"):
        pmlkit.privatize(mech, values, rng=2)
    gc.collect()
    assert finished["worker"].is_set() and finished["caller"].is_set()
    assert counts(outs) == before
    assert abs(sys.getrefcount(None) - none_before) < 1000


@pytest.mark.parametrize("threads", ["1", "2"])
def test_release_counts_exact_and_the_same_objects(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch, threads: str) -> None:
    """A whole release of six chunks: each output label's count raised by exactly the
    records that got it (counted here from the labels, by identity), and back once the
    release is freed; the release that of the integer codes under the same seed."""
    monkeypatch.setenv("PMLKIT_THREADS", threads)
    mech, ins, outs = _mechanism(5, 7)
    codes = np.random.default_rng(7).integers(0, 5, N)
    values = np.empty(N, dtype=object)
    values[:] = [ins[i] for i in codes.tolist()]
    ref = np.asarray(pmlkit.privatize(pmlkit.Mechanism(mech.matrix), codes, rng=9))
    pmlkit.privatize(mech, values, rng=1)  # (caches built, kernels loaded)
    gc.collect()
    before = counts(outs)
    out = pmlkit.privatize(mech, values, rng=9)
    got = out.tolist()
    position = {id(o): j for j, o in enumerate(outs)}
    assert [position[id(o)] for o in got] == ref.tolist()  # the very label objects
    del got
    tally = np.bincount(ref, minlength=len(outs))
    assert [a - b for a, b in zip(counts(outs), before, strict=True)] == tally.tolist()
    del out
    gc.collect()
    assert counts(outs) == before


def test_identity_table_seeding_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table of objects by address is seeded from the first 16384 records, but only
    while the first 4096 hold at most 1024 distinct objects (as before: mostly distinct
    objects gain nothing); codes equal a dictionary lookup either way."""
    from pmlkit.sampler import Encoder

    labels = fresh("lab", 1500)
    index = {lab: i for i, lab in enumerate(labels)}
    pool = np.empty(len(labels), dtype=object)
    pool[:] = labels
    g = np.random.default_rng(3)
    # 1000 distinct objects among the first 4096 records, the other 500 labels after
    seeded = np.concatenate([g.permutation(np.resize(np.arange(1000), 4096)),
                             g.permutation(np.resize(np.arange(1000, 1500), 12288)),
                             g.integers(0, 1500, 20000)])
    adds: list[int] = []
    orig = sampler_mod._AddressTable.add

    def add(self: Any, objs: np.ndarray, codes: np.ndarray) -> None:
        adds.append(objs.shape[0])
        orig(self, objs, codes)

    monkeypatch.setattr(sampler_mod._AddressTable, "add", add)
    enc = Encoder(labels, narrow=True)
    codes = enc.encode_numpy(pool[seeded])
    assert codes is not None and codes.tolist() == seeded.tolist()
    assert adds == [1500]  # seeded once with every label object: no second round
    # 1500 distinct objects among the first 4096 records: no table, the same codes
    spread = np.concatenate([np.arange(1500), g.integers(0, 1500, 10000)])
    enc = Encoder(labels, narrow=True)
    assert enc._codes_by_identity(pool[spread]) is None
    codes = enc.encode_numpy(pool[spread])
    assert codes is not None and codes.tolist() == [index[labels[i]] for i in spread]
