"""The compiled object gather (:func:`pmlkit.sampler.take_objects`): the labels' pointers
written into a fresh object array and each label's reference count raised once by its
count. It must give what ``labels.take(idx)`` gives, element for element (the very same
objects), leave every reference count exactly where the generic take leaves it (and back
where it was once the output is freed), change nothing when it refuses, and stay exact
while other threads take and drop references to the same labels."""

from __future__ import annotations

import gc
import sys
import threading
import tracemalloc
from typing import Any

import numpy as np
import pytest

import pmlkit
from labelgen import load_kernels
from pmlkit import Mechanism, sampler
from pmlkit._kernels import compiled

pytestmark = pytest.mark.skipif(
    compiled() is None or not sampler._refcounts_writable(),
    reason="needs the compiled kernels on CPython 3.11 (elsewhere take_objects is None)")


@pytest.fixture(autouse=True, scope="module")
def _kernels_loaded() -> None:
    load_kernels()


def fresh_labels() -> np.ndarray:
    """Labels no one else references (built at run time, not interned or cached): their
    reference counts are this test's alone."""
    objs: list[Any] = ["".join(["lab", str(i), "x" * i]) for i in range(5)]
    objs += [float(1e300 * 3), (7, "".join("tu")), 10**40 + 3]
    out = np.empty(len(objs), dtype=object)
    out[:] = objs
    return out


def test_same_objects_as_numpy_take() -> None:
    labels = fresh_labels()
    idx = np.random.default_rng(1).integers(0, labels.shape[0], 100_003)
    out = sampler.take_objects(labels, idx)
    assert out is not None and out.dtype == object and out.shape == idx.shape
    ref = labels.take(idx)
    # the very same objects, slot by slot (not equal copies)
    assert all(a is b for a, b in zip(out.tolist(), ref.tolist(), strict=True))
    assert out.flags.writeable and out.flags.owndata


def test_reference_counts_exact_and_restored() -> None:
    labels = fresh_labels()
    idx = np.random.default_rng(2).integers(0, labels.shape[0], 50_000)
    count = np.bincount(idx, minlength=labels.shape[0])  # numpy's own count
    before = [sys.getrefcount(o) for o in labels.tolist()]
    out = sampler.take_objects(labels, idx)
    assert out is not None
    after = [sys.getrefcount(o) for o in labels.tolist()]
    assert [a - b for a, b in zip(after, before, strict=True)] == count.tolist()
    # a slot overwritten and the array freed: every count is back where it was
    out[0] = None
    del out
    gc.collect()
    assert [sys.getrefcount(o) for o in labels.tolist()] == before


def test_none_count_not_left_raised() -> None:
    """The fresh array's slots held None (counted once each): the gather replaces them,
    so None's count must come down by as many (10^5 slots would show)."""
    labels = fresh_labels()
    idx = np.zeros(100_000, dtype=np.intp)
    base = sys.getrefcount(None)
    out = sampler.take_objects(labels, idx)
    assert out is not None
    assert abs(sys.getrefcount(None) - base) < 1000
    del out
    assert abs(sys.getrefcount(None) - base) < 1000


@pytest.mark.parametrize("bad", [-1, 8, 2**40, -2**62])
@pytest.mark.parametrize("where", [0, 4999, 9999])
def test_bad_index_refused_without_side_effects(bad: int, where: int) -> None:
    labels = fresh_labels()
    idx = np.random.default_rng(3).integers(0, labels.shape[0], 10_000)
    idx[where] = bad
    before = [sys.getrefcount(o) for o in labels.tolist()]
    none_before = sys.getrefcount(None)
    assert sampler.take_objects(labels, idx) is None
    assert [sys.getrefcount(o) for o in labels.tolist()] == before
    assert abs(sys.getrefcount(None) - none_before) < 1000


def test_other_inputs_not_taken() -> None:
    labels = fresh_labels()
    idx = np.arange(3)
    assert sampler.take_objects(np.array(["a", "b", "c"]), idx) is None  # not objects
    assert sampler.take_objects(labels, idx.astype(np.int32)) is None
    assert sampler.take_objects(labels.reshape(2, 4), idx) is None


def test_same_object_twice_among_labels() -> None:
    o = "".join(["dup", "licate"])
    labels = np.empty(3, dtype=object)
    labels[:] = [o, "".join(["other", "!"]), o]
    before = sys.getrefcount(o)
    out = sampler.take_objects(labels, np.array([0, 2, 2, 1, 0]))
    assert out is not None and out.tolist() == [o, o, o, labels[1], o]
    assert sys.getrefcount(o) - before == 4
    del out
    assert sys.getrefcount(o) == before


def test_exact_while_other_threads_touch_the_same_labels() -> None:
    """Threads taking and dropping references to the labels (each reference change under
    the GIL) while the gather runs: no update is lost on either side."""
    labels = fresh_labels()
    objs = labels.tolist()
    before = [sys.getrefcount(o) for o in objs]
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            held = [objs[i % len(objs)] for i in range(10_000)]
            del held

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        outs = []
        for seed in range(20):
            idx = np.random.default_rng(seed).integers(0, len(objs), 200_000)
            out = sampler.take_objects(labels, idx)
            assert out is not None
            outs.append((idx, out))
    finally:
        stop.set()
        for t in threads:
            t.join()
    total = sum(np.bincount(i, minlength=len(objs)) for i, _ in outs)
    after = [sys.getrefcount(o) for o in objs]  # (not inside a zip: its tuple holds one)
    assert [a - b for a, b in zip(after, before, strict=True)] == total.tolist()
    del outs, out
    assert [sys.getrefcount(o) for o in objs] == before


def test_memory_traced_and_returned() -> None:
    labels = fresh_labels()
    idx = np.zeros(200_000, dtype=np.intp)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = sampler.take_objects(labels, idx)
        assert out is not None
        assert tracemalloc.get_traced_memory()[0] - base >= 8 * idx.shape[0]
        del out
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - base < 64 * 1024
    finally:
        tracemalloc.stop()


def test_interpreter_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the reference counts follow other rules the gather is never used, and a
    release takes the generic path with the same outputs."""
    labels = fresh_labels()
    monkeypatch.setitem(sampler._STATE_OBJECTS, "refcounts", False)
    assert sampler.take_objects(labels, np.arange(3)) is None
    monkeypatch.delitem(sampler._STATE_OBJECTS, "refcounts")
    monkeypatch.setattr(sys, "version_info", (3, 12, 0, "final", 0))
    assert not sampler._refcounts_writable()
    monkeypatch.undo()
    assert sampler._refcounts_writable()


@pytest.mark.parametrize("gather", [True, False])
def test_release_the_same_with_and_without_the_gather(
        monkeypatch: pytest.MonkeyPatch, gather: bool) -> None:
    """A bulk object release under one seed: with the compiled gather and with the
    generic take, the labels of the integer-code release, position by position."""
    if not gather:
        monkeypatch.setitem(sampler._STATE_OBJECTS, "refcounts", False)
    k, n = 5, 80_000
    w = np.full((k, k), 0.1) + 0.5 * np.eye(k)
    codes = np.random.default_rng(8).integers(k, size=n)
    ref = np.asarray(pmlkit.privatize(Mechanism(w), codes, rng=5))
    ins = tuple(f"in{i}" for i in range(k))
    outs = tuple("".join([s, "!"]) for s in ("a", "bb", "", "d\x00", "é"))
    mech = Mechanism(w, ins, outs)
    values = np.array(ins, dtype=object)[codes]
    pmlkit.privatize(mech, values[:10], rng=5)  # (the mechanism's own caches built)
    before = [sys.getrefcount(o) for o in outs]
    out = pmlkit.privatize(mech, values, rng=5)
    assert out.dtype == object and out.tolist() == [outs[int(j)] for j in ref]
    del out
    gc.collect()
    assert [sys.getrefcount(o) for o in outs] == before


@pytest.mark.parametrize(("m", "threads"), [(2, "1"), (2, "2"), (5, "1"), (5, "2"),
                                             (70_000, "2")])  # (64-bit cells only past
def test_draw_and_gather_in_one_call_equals_draw_then_take(  # 2**16 columns: slow to build)
        monkeypatch: pytest.MonkeyPatch, m: int, threads: str) -> None:
    """ObjectGather.draw: the outputs the sampler draws from the same words (a
    generator of the same seed), their labels written and counted exactly, in blocks
    (a start past the first block, a length that is no multiple of the block), on one
    thread or with the blocks run by the worker while the next words are drawn."""
    from pmlkit.sampler import DRAW_BLOCK, AliasSampler

    monkeypatch.setenv("PMLKIT_THREADS", threads)
    g = np.random.default_rng(m)
    n_in = 3
    w = g.random((n_in, m)) ** 4
    w /= w.sum(axis=1, keepdims=True)
    s = AliasSampler(w)
    objs = ["".join(["o", str(i)]) for i in range(m)]
    labels = np.empty(m, dtype=object)
    labels[:] = objs
    n = 2 * DRAW_BLOCK + 123
    codes = g.integers(0, n_in, n)
    want = s.draw(codes, np.random.default_rng(7))
    picks = [objs[i] for i in (0, m - 1)]
    base = [sys.getrefcount(o) for o in picks]
    gather = sampler.ObjectGather.start(labels, n + 10)
    assert gather is not None
    before = [sys.getrefcount(o) for o in picks]
    # (each label held once more by the gather's own copy of the labels)
    assert [a - b for a, b in zip(before, base, strict=True)] == [1, 1]
    gen = np.random.default_rng(7)
    assert gather.draw(s, codes[:5], gen, 10)
    assert gather.draw(s, codes[5:], gen, 15)
    out = gather.out
    assert out[:10].tolist() == [None] * 10
    assert all(a is labels[j] for a, j in zip(out[10:].tolist(), want.tolist(), strict=True))
    count = np.bincount(want, minlength=m)
    assert gather.counts.tolist() == count.tolist()
    after = [sys.getrefcount(o) for o in picks]
    assert [a - b for a, b in zip(after, before, strict=True)] == [count[0], count[m - 1]]
    del out, gather
    assert [sys.getrefcount(o) for o in picks] == base


def test_draw_refuses_a_bad_code_with_nothing_written() -> None:
    from pmlkit.sampler import AliasSampler

    s = AliasSampler(np.full((2, 3), 1 / 3))
    labels = fresh_labels()[:3].copy()
    gather = sampler.ObjectGather.start(labels, 100)
    assert gather is not None
    before = [sys.getrefcount(o) for o in labels.tolist()]
    with pytest.raises(AssertionError):
        gather.draw(s, np.array([0, 1, 2, 0], dtype=np.intp), np.random.default_rng(0), 0)
    assert gather.out.tolist() == [None] * 100 and gather.counts.tolist() == [0, 0, 0]
    assert [sys.getrefcount(o) for o in labels.tolist()] == before


def test_none_and_shared_small_objects_as_labels() -> None:
    """None itself (the fill of a fresh array) and cached small ints among the labels:
    the same objects as numpy's take, and None's count net of the slots it keeps."""
    labels = np.empty(4, dtype=object)
    labels[:] = [None, 1, "".join(["x", "y"]), True]
    idx = np.random.default_rng(4).integers(0, 4, 100_000)
    out = sampler.take_objects(labels, idx)
    assert out is not None
    assert all(a is b for a, b in zip(out.tolist(), labels.take(idx).tolist(), strict=True))
    gather = sampler.ObjectGather.start(labels, 10)
    assert gather is not None and gather.put(0, np.zeros(10, dtype=np.intp))
    assert gather.out.tolist() == [None] * 10 and gather.counts.tolist() == [10, 0, 0, 0]
