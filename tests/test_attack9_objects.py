"""Attack tests of the object gather without the GIL (commit 65bddd9:
:class:`pmlkit.sampler.ObjectGather`, :func:`pmlkit.sampler.take_objects`).

The kernels now write raw label pointers without the GIL and settle the reference counts
at the end of the call (``PyGILState_Ensure`` from compiled code); the output starts as
an object array of NULL slots. While a kernel runs, other threads run Python. These tests
look for any Python code that can, meanwhile, free a label whose pointer sits in an
uncounted slot, or see/replace the NULL or uncounted slots; for counts that are not exact
after a release stopped half way (a bad record, a signal handler raising at a random
moment, either thread); for a disk-cached kernel whose external symbol does not resolve
in a fresh process; and for a release that differs from the generic object take.

Tests that can corrupt the interpreter (a freed label, None's count lowered) run in a
child process, so a failure is reported without crashing the test session.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from typing import Any

import numpy as np
import pytest

import pmlkit
from pmlkit import _kernels
from pmlkit import sampler as sampler_mod
from pmlkit.errors import DataError
from pmlkit.privatization import _core
from pmlkit.sampler import ObjectGather

pytestmark = pytest.mark.skipif(
    _kernels.compiled() is None or not sampler_mod._refcounts_writable(),
    reason="needs the compiled kernels on CPython 3.11 (elsewhere no ObjectGather)")

CHUNK = 1 << 14  # (the chunk of the small_chunks fixture: tests/conftest.py)
N = 6 * CHUNK + 333  # seven chunks, the last one short (>= 2^16: the gather is used)

#: The prelude of every child process: small chunks, the kernels loaded.
PRELUDE = """
import gc, os, sys, threading, weakref
import numpy as np
import pmlkit
from pmlkit import _kernels, sampler as sm
from pmlkit.privatization import _core
_core.CHUNK_ROWS = 1 << 14
sm._KERNEL_MIN_RECORDS = 0
sm._KERNEL_LOAD_RECORDS = 0
assert _kernels.compiled() is not None and sm._refcounts_writable()
from pmlkit.errors import PMLError

def started_gather(labels, n):
    # a gather of n records, after one small put (the kernel loaded and its own
    # references taken before any count is read)
    warm = sm.ObjectGather.start(labels, 4)
    assert warm is not None and warm.put(0, np.zeros(4, dtype=np.intp))
    del warm
    gc.collect()
    g = sm.ObjectGather.start(labels, n)
    assert g is not None
    return g
"""


def run_child(body: str, *, threads: str = "2", timeout: float = 60,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PMLKIT_THREADS=threads, **(env or {}))
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=timeout, env=full)


def fresh(tag: str, k: int) -> list[str]:
    """``k`` labels no one else references (built at run time, never interned)."""
    return ["".join([tag, str(i), "-" * (i % 3)]) for i in range(k)]


def refcounts(objs: list[Any]) -> list[int]:
    return [sys.getrefcount(o) for o in objs]


def _mechanism(k: int, m: int, seed: int = 0) -> tuple[pmlkit.Mechanism, list[str], list[str]]:
    ins, outs = fresh("in", k), fresh("out", m)
    w = np.random.default_rng(seed + k * m).random((k, m)) + np.eye(k, m)
    return pmlkit.Mechanism(w / w.sum(axis=1, keepdims=True), ins, outs), ins, outs


def _values(ins: list[str], n: int, seed: int) -> np.ndarray:
    values = np.empty(n, dtype=object)
    values[:] = [ins[i] for i in np.random.default_rng(seed).integers(0, len(ins), n).tolist()]
    return values


# ---------------------------------------------------------------------------------------
# Findings: a label freed while its pointers are uncounted; a NULL / None slot race
# ---------------------------------------------------------------------------------------

def test_label_replaced_by_another_thread_during_a_put_is_not_freed() -> None:
    """Found by the attack, fixed by the gather's private copy of the labels (this failed
    3 of 3 runs before). ``take_objects`` / ``ObjectGather`` kept the caller's labels array, and the
    kernel writes the labels' addresses (read at start) into uncounted slots without the
    GIL. Another thread that replaces ``labels[0]`` meanwhile drops the label's last
    counted reference: it is freed while 2^24 slots of the output point at it, and the
    kernel's settle then raises the count of freed memory (a use after free). With the
    kernel holding the GIL the other thread could not run until the counts were settled.
    The child stops (``os._exit``) before touching the dangling output."""
    proc = run_child("""
        class S(str):  # (a str that takes a weak reference)
            pass
        labels = np.empty(2, dtype=object)
        labels[:] = [S("".join(["vic", "tim"])), S("other")]
        wr = weakref.ref(labels[0])
        n = 1 << 24
        idx = np.zeros(n, dtype=np.intp)
        g = started_gather(labels, n)
        first = int(g._slots[0])
        seen = {}
        def mutate():
            while int(g._slots[0]) == first and not seen.get("returned"):
                pass
            labels[0] = "replacement"  # the caller's array: its reference dropped
            seen["freed_mid_call"] = wr() is None
        t = threading.Thread(target=mutate)
        t.start()
        ok = g.put(0, idx)
        seen["returned"] = True
        t.join()
        print("RESULT", ok, seen.get("freed_mid_call"), wr() is None, flush=True)
        os._exit(0)  # (the output may point at freed memory: never touched)
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    ok, freed_mid_call, freed_after = line.split()[1:]
    assert ok == "True"
    # the output holds 2^24 references to the victim: it must be alive
    assert (freed_mid_call, freed_after) == ("False", "False"), \
        "a label was freed while its pointers sat in the output (use after free)"


def test_out_read_while_a_put_runs_is_refused_or_consistent() -> None:
    """Found by the attack, fixed: ``out`` now refuses (PMLError) while a kernel call of
    another thread writes slots. (An API misuse, documented as not allowed.)
    ``ObjectGather.out`` is a property that *writes*: it gives every NULL slot ``None``.
    Read by another thread (a debugger or a gc callback inspecting the gather, code
    sharing the gather) while a ``put`` runs without the GIL, it replaces with None
    slots the kernel has written (releasing label references not counted yet: a count
    may go through zero) or makes the kernel find a slot that is not the fill (it then
    puts NULL back over None it never counted). Either ``out`` refuses/waits, or the
    array it gives agrees with what ``put`` reports."""
    proc = run_child("""
        objs = ["".join(["a", "b"]), "".join(["c", "d"])]
        labels = np.empty(2, dtype=object)
        labels[:] = objs
        n = 1 << 23
        idx = np.zeros(n, dtype=np.intp)
        g = started_gather(labels, n)
        first = int(g._slots[0])
        res = {}
        def reader():
            while int(g._slots[0]) == first and not res.get("returned"):
                pass
            try:
                res["out"] = g.out
            except PMLError as exc:  # (the refusal: out read while put writes)
                res["refused"] = str(exc)
        t = threading.Thread(target=reader)
        t.start()
        ok = g.put(0, idx)
        res["returned"] = True
        t.join()
        if "refused" in res:
            print("RESULT refused", flush=True)
            os._exit(0)
        words = np.asarray(sm._Addresses(g.out))
        labelled = int((words == id(objs[0])).sum())
        nulls = int((words == 0).sum())
        print("RESULT", ok, labelled, nulls, n, flush=True)
        os._exit(0)
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    if line == "RESULT refused":
        return
    ok, labelled, nulls, n = line.split()[1:]
    assert nulls == "0", "a NULL slot handed out"
    if ok == "True":  # every slot written with the label, and counted
        assert labelled == n, f"put succeeded but only {labelled} of {n} slots hold the label"
    else:  # nothing written by the put
        assert labelled == "0"


def test_release_inside_an_atexit_handler() -> None:
    """Found by the attack (on main before the change too), fixed: the draw worker (now a
    daemon thread of pmlkit's own) takes work until the interpreter finalises, and the
    calling thread runs it from then on. A release of two or
    more chunks run from an ``atexit`` handler (flushing a last batch at exit) fails with
    ``RuntimeError: cannot schedule new futures after shutdown``: the one worker's
    ThreadPoolExecutor is shut down by concurrent.futures' exit hook, which runs first.
    With one thread too (the encoder runs one chunk ahead on the worker). A release should
    fall back to the calling thread when the worker cannot take work."""
    for threads in ("1", "2"):
        proc = run_child("""
            import atexit
            mech = pmlkit.Mechanism([[0.7, 0.3], [0.2, 0.8]], ["a", "b"], ["x", "y"])
            values = np.array(["a", "b"] * 50_000, dtype=object)
            ref = pmlkit.privatize(mech, values, rng=3)
            def at_exit():
                try:
                    out = pmlkit.privatize(mech, values, rng=3)
                    print("ATEXIT", bool((out == ref).all()), flush=True)
                except BaseException as exc:
                    print("ATEXIT", type(exc).__name__, exc, flush=True)
            atexit.register(at_exit)
        """, threads=threads)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "ATEXIT True" in proc.stdout, (threads, proc.stdout)


# ---------------------------------------------------------------------------------------
# Counts exact under interrupts at random moments, either thread, many repetitions
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", ["1", "2"])
def test_counts_exact_under_signal_interrupts_at_random_moments(threads: str) -> None:
    """A signal handler raising KeyboardInterrupt at a random moment (0.1-6 ms into a
    seven-chunk release; the timer also lands in the NULL-array constructor, the encoder,
    between kernels, in the wait for the worker), 40 times: once the worker is idle and
    the partial outputs are gone, every label's count and None's are back where they
    were, and a later release is still the right one. In a child (an interrupt landing in
    thread-pool internals must not wedge the test session)."""
    proc = run_child("""
        import signal, random
        ins = ["".join(["i", str(j)]) for j in range(3)]
        outs = ["".join(["o", str(j), "-"]) for j in range(40)]
        w = np.random.default_rng(1).random((3, 40)) + 0.05
        mech = pmlkit.Mechanism(w / w.sum(axis=1, keepdims=True), ins, outs)
        values = np.empty(6 * (1 << 14) + 333, dtype=object)
        codes = np.random.default_rng(2).integers(0, 3, values.shape[0])
        values[:] = [ins[i] for i in codes.tolist()]
        ref = pmlkit.privatize(mech, values, rng=5).tolist()
        del ref[:]
        ref = pmlkit.privatize(mech, values, rng=5)
        ref_pos = [outs.index(o) for o in ref.tolist()]
        del ref
        def idle():
            _kernels.worker().submit(lambda: None).result()
        def handler(signum, frame):
            raise KeyboardInterrupt("timer")
        signal.signal(signal.SIGALRM, handler)
        gc.collect()
        before = [sys.getrefcount(o) for o in outs]
        none_before = sys.getrefcount(None)
        rnd = random.Random(0)
        interrupted = 0
        for rep in range(40):
            signal.setitimer(signal.ITIMER_REAL, rnd.uniform(0.0001, 0.006))
            out = None
            try:
                out = pmlkit.privatize(mech, values, rng=5)
                signal.setitimer(signal.ITIMER_REAL, 0)
            except KeyboardInterrupt:
                # (only this: the draw worker is no ThreadPoolExecutor, whose Python-level
                # locks an interrupt could leave taken, a RuntimeError('cannot release
                # un-acquired lock') or a hang for good, once in a CI run each)
                interrupted += 1
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            out = None  # (a release that returned before the timer fired: freed)
            idle()
            gc.collect()
            after = [sys.getrefcount(o) for o in outs]
            assert after == before, (rep, [a - b for a, b in zip(after, before)])
            assert abs(sys.getrefcount(None) - none_before) < 1000, rep
        out = pmlkit.privatize(mech, values, rng=5)
        assert [outs.index(o) for o in out.tolist()] == ref_pos
        print("OK", interrupted, flush=True)
    """, threads=threads)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ok = next(x for x in proc.stdout.splitlines() if x.startswith("OK"))
    assert int(ok.split()[1]) >= 5, ok  # (most timers land inside a release)


# ---------------------------------------------------------------------------------------
# Exactness: the only references are the slots; repeated, interned, singleton labels
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", ["1", "2"])
def test_output_labels_referenced_only_by_the_slots(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch, threads: str) -> None:
    """Labels whose only reference is the mechanism: once the mechanism (and every cache
    of it) is gone, each label's count is exactly the slots that hold it (a count settled
    twice, or a slot left uncounted, is off by the records of a chunk)."""
    monkeypatch.setenv("PMLKIT_THREADS", threads)
    mech, ins, outs = _mechanism(3, 9, seed=3)
    values = _values(ins, N, seed=4)
    out = pmlkit.privatize(mech, values, rng=11)
    del mech, outs
    gc.collect()
    words = np.asarray(sampler_mod._Addresses(out))
    assert words.all()
    uniq, tally = np.unique(words, return_counts=True)
    objs = {id(o): o for o in out[np.unique(words, return_index=True)[1]].tolist()}
    # getrefcount: the slots, the dict value, its argument (computed outside the assert:
    # pytest's rewritten assert holds its operands)
    extra = [sys.getrefcount(objs[addr]) - c for addr, c in
             zip(uniq.tolist(), tally.tolist(), strict=True)]
    assert extra == [2] * len(extra)
    del objs, words


def test_repeated_interned_and_singleton_labels_counted_exactly() -> None:
    """One object at several positions of the labels array (each position counted into
    the same object), an interned string and a one-character string (a static object of
    CPython 3.11): each count raised by the slots that got it, summed
    over its positions, over 200 puts of varying sizes (empty and one-record puts
    included), and back once the outputs are gone."""
    x = "".join(["re", "peated"])
    interned = sys.intern("".join(["intern", "ed"]))
    objs: list[Any] = [x, interned, "z", x, None]
    labels = np.empty(len(objs), dtype=object)
    labels[:] = objs
    warm = ObjectGather.start(labels, 1)
    assert warm is not None and warm.put(0, np.zeros(1, dtype=np.intp))
    del warm
    gc.collect()
    distinct = [x, interned, "z", None]
    before = refcounts(distinct)
    rng = np.random.default_rng(0)
    outs = []
    total = np.zeros(len(objs), dtype=np.int64)
    for rep in range(200):
        n = [0, 1, 2, 65535, 65536, 65537][rep % 6] if rep < 12 else int(rng.integers(0, 3000))
        idx = rng.integers(0, len(objs), n).astype(np.intp)
        out = sampler_mod.take_objects(labels, idx)
        assert out is not None and out.shape == (n,)
        assert np.asarray(sampler_mod._Addresses(out)).all() or n == 0
        assert out.tolist() == [objs[i] for i in idx.tolist()]
        total += np.bincount(idx, minlength=len(objs))
        outs.append(out)
    want = [total[0] + total[3], total[1], total[2], total[4]]
    got = refcounts(distinct)
    deltas = [a - b for a, b in zip(got, before, strict=True)]
    assert deltas[:3] == [int(w) for w in want[:3]]
    assert abs(deltas[3] - int(want[3])) < 1000  # (None: others hold it too)
    del outs, out
    gc.collect()
    after = refcounts(distinct)
    assert after[:3] == before[:3]
    assert abs(after[3] - before[3]) < 1000


@pytest.mark.parametrize("threads", ["1", "2"])
def test_none_fill_fallback_counts_exact(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch, threads: str) -> None:
    """Where the NULL constructor is not available the output starts as ``np.empty``
    (None in every slot, counted): the nogil kernels then lower None's count by the
    slots they replace, under the GIL they take. A release, and a release stopped by a
    bad record in the last chunk: the same labels as with the NULL array, and None's
    count and the labels' back where they were."""
    monkeypatch.setenv("PMLKIT_THREADS", threads)
    mech, ins, outs = _mechanism(4, 6, seed=5)
    values = _values(ins, N, seed=6)
    want = [outs.index(o) for o in pmlkit.privatize(mech, values, rng=2).tolist()]
    monkeypatch.setattr(sampler_mod, "_null_objects", lambda n: None)
    pmlkit.privatize(mech, values, rng=2)  # (caches)
    gc.collect()
    before, none_before = refcounts(outs), sys.getrefcount(None)
    out = pmlkit.privatize(mech, values, rng=2)
    assert [outs.index(o) for o in out.tolist()] == want
    del out
    bad = values.copy()
    bad[N - 5] = "".join(["no", "-such-label"])
    with pytest.raises(DataError, match="no-such-label"):
        pmlkit.privatize(mech, bad, rng=2)
    _kernels.worker().submit(lambda: None).result()
    gc.collect()
    assert refcounts(outs) == before
    assert abs(sys.getrefcount(None) - none_before) < 1000


# ---------------------------------------------------------------------------------------
# The NULL array: zeroed memory, the stolen dtype reference, errors
# ---------------------------------------------------------------------------------------

def test_null_array_zeroed_after_dirty_memory_and_dtype_count_stable() -> None:
    """Memory freed dirty (all bits set) then reused: every slot of a fresh NULL array is
    zero, at sizes of numpy's small-allocation cache and of fresh pages; the object
    dtype's count is stable over 10^4 arrays, and over constructor failures (negative,
    too big, unallocatable sizes: the constructor steals the reference on failure too);
    the arrays are freed (a weak reference dies)."""
    import weakref

    descr = np.dtype(object)
    sampler_mod._null_objects(1)
    for size in (1, 7, 64, 1000, 1 << 15, 1 << 18):
        dirty = np.full(size, 0xFF, dtype=np.uint64)
        del dirty
        a = sampler_mod._null_objects(size)
        assert a is not None
        assert not np.asarray(sampler_mod._Addresses(a)).any(), size
        assert a.tolist() == [None] * size  # (numpy reads a NULL slot as None)
        r = weakref.ref(a)
        del a
        assert r() is None
    gc.collect()
    before = sys.getrefcount(descr)
    for _ in range(10_000):
        sampler_mod._null_objects(3)
    for n in (-1, 1 << 62, 1 << 45):
        for _ in range(50):
            with pytest.raises((ValueError, MemoryError)):
                sampler_mod._null_objects(n)
    gc.collect()
    assert sys.getrefcount(descr) == before


def test_memory_error_on_start_leaks_nothing() -> None:
    """A gather too big to allocate raises MemoryError and keeps no label alive."""
    objs = fresh("m", 2)
    labels = np.empty(2, dtype=object)
    labels[:] = objs
    before = refcounts(objs)
    for _ in range(20):
        with pytest.raises(MemoryError):
            ObjectGather.start(labels, 1 << 45)
    gc.collect()
    assert refcounts(objs) == before


# ---------------------------------------------------------------------------------------
# Same releases as the generic object take, every label kind unchanged
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("m", [1, 2, 50, 1000, 4096])
def test_release_equals_the_generic_take(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch, threads: str, m: int) -> None:
    """The gathered release against the generic path (no ObjectGather, no compiled
    take: numpy/pandas' take of the output labels), same seed, at lengths around chunk
    boundaries: the same label objects in every slot, and the generator left at the same
    word."""
    monkeypatch.setenv("PMLKIT_THREADS", threads)
    mech, ins, _outs = _mechanism(3, m, seed=m)
    for n, seed in ((1 << 16, 1), (4 * CHUNK - 1, 2), (4 * CHUNK + 1, 3), (N, 4)):
        values = _values(ins, n, seed)
        g1 = np.random.Generator(np.random.PCG64(seed))
        got = pmlkit.privatize(mech, values, rng=g1)
        with monkeypatch.context() as mp:
            mp.setattr(ObjectGather, "start", classmethod(lambda cls, labels, n: None))
            mp.setattr(_core, "take_objects", lambda labels, idx: None)
            g2 = np.random.Generator(np.random.PCG64(seed))
            ref = pmlkit.privatize(mech, values, rng=g2)
        assert got.dtype == object and ref.dtype == object
        assert np.array_equal(np.asarray(sampler_mod._Addresses(got)),
                              np.asarray(sampler_mod._Addresses(ref))), (m, n)
        assert g1.bit_generator.random_raw() == g2.bit_generator.random_raw()


@pytest.mark.parametrize("threads", ["1", "2"])
def test_other_label_kinds_unchanged_beside_object_releases(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch, threads: str) -> None:
    """Integer codes, numpy str and object labels of one mechanism under one seed: the
    same outputs (the object release, now gathered without the GIL, is the str release
    element for element and the codes' release by position)."""
    monkeypatch.setenv("PMLKIT_THREADS", threads)
    k, m = 4, 5
    w = np.random.default_rng(9).random((k, m)) + 0.1
    w /= w.sum(axis=1, keepdims=True)
    ins, outs = [f"i{j}" for j in range(k)], [f"o{j}" for j in range(m)]
    codes = np.random.default_rng(10).integers(0, k, N)
    as_codes = np.asarray(pmlkit.privatize(pmlkit.Mechanism(w), codes, rng=7))
    as_str = pmlkit.privatize(pmlkit.Mechanism(w, ins, outs), np.array(ins)[codes], rng=7)
    as_obj = pmlkit.privatize(pmlkit.Mechanism(w, ins, outs),
                              np.array(ins, dtype=object)[codes], rng=7)
    assert as_obj.dtype == object
    assert as_obj.tolist() == as_str.tolist() == [outs[i] for i in as_codes.tolist()]


# ---------------------------------------------------------------------------------------
# GIL / deadlocks: concurrent releases, thread pools, daemon threads, the disk cache
# ---------------------------------------------------------------------------------------

def test_concurrent_releases_from_a_pool_and_a_gil_hog(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three releases at once from a thread pool (each the settle's PyGILState_Ensure on
    the caller and on the one shared worker) while another thread holds the GIL in a
    pure-Python loop and takes the gather's lock of a live release: all finish (no
    deadlock), each equals its sequential release, counts exact."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("PMLKIT_THREADS", "2")
    mech, ins, outs = _mechanism(3, 7, seed=8)
    values = _values(ins, N, seed=8)
    refs = [pmlkit.privatize(mech, values, rng=s).tolist() for s in (1, 2, 3)]
    gc.collect()
    before = refcounts(outs)
    stop = threading.Event()
    live: list[ObjectGather] = []
    orig_start = ObjectGather.start.__func__  # type: ignore[attr-defined]

    def spy_start(cls: Any, labels: Any, n: int) -> Any:
        g = orig_start(cls, labels, n)
        if g is not None:
            live.append(g)
        return g

    monkeypatch.setattr(ObjectGather, "start", classmethod(spy_start))

    def hog() -> None:
        x = 0
        while not stop.is_set():
            for g in list(live[-3:]):
                with g._lock:
                    x += 1
            x += sum(range(200))

    h = threading.Thread(target=hog, daemon=True)
    h.start()
    try:
        with ThreadPoolExecutor(3) as ex:
            futs = [ex.submit(pmlkit.privatize, mech, values, rng=s) for s in (1, 2, 3)]
            got = [f.result(timeout=60).tolist() for f in futs]
    finally:
        stop.set()
        h.join(10)
    assert got == refs
    del got, futs, live[:]
    gc.collect()
    assert refcounts(outs) == before


def test_daemon_threads_releasing_at_interpreter_exit() -> None:
    """Two daemon threads releasing object labels in a loop when the main thread ends:
    the kernels' PyGILState_Ensure during finalisation ends those threads (no crash, no
    hang, exit status 0)."""
    proc = run_child("""
        import time
        mech = pmlkit.Mechanism([[0.7, 0.3], [0.2, 0.8]], ["a", "b"], ["x", "y"])
        values = np.array(["a", "b"] * 60_000, dtype=object)
        pmlkit.privatize(mech, values, rng=3)
        def loop():
            while True:
                try:
                    pmlkit.privatize(mech, values, rng=3)
                except RuntimeError:  # (the worker shut down at exit)
                    pass
        for _ in range(2):
            threading.Thread(target=loop, daemon=True).start()
        time.sleep(0.3)
        print("MAIN DONE", flush=True)
    """, timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "MAIN DONE" in proc.stdout


def test_kernels_from_a_cold_and_a_warm_disk_cache() -> None:
    """A fresh process with an empty NUMBA_CACHE_DIR compiles and caches the gather
    kernels; a second fresh process loads them from the cache (the external symbols
    PyGILState_Ensure/Release resolve in the loaded code): both give exact counts and
    the same release, and the second compiles nothing."""
    body = """
        ks = _kernels.compiled()
        objs = ["".join(["q", str(i)]) for i in range(3)]
        labels = np.empty(3, dtype=object)
        labels[:] = objs
        idx = (np.arange(300_000, dtype=np.intp) * 7) % 3
        sm.take_objects(labels, idx[:4])
        gc.collect()
        before = [sys.getrefcount(o) for o in objs]
        out = sm.take_objects(labels, idx)
        assert out is not None and out.tolist() == [objs[i] for i in idx.tolist()]
        after = [sys.getrefcount(o) for o in objs]
        assert [a - b for a, b in zip(after, before)] == [100_000] * 3
        del out
        gc.collect()
        assert [sys.getrefcount(o) for o in objs] == before
        mech = pmlkit.Mechanism([[0.7, 0.3], [0.2, 0.8]], ["a", "b"], ["x", "y"])
        vals = np.array(["a", "b"] * 60_000, dtype=object)
        rel = pmlkit.privatize(mech, vals, rng=3)
        import hashlib
        digest = hashlib.sha256((rel == "x").tobytes()).hexdigest()[:16]
        misses = sum(sum(ks[k].stats.cache_misses.values())
                     for k in ("take_objects", "draw_objects"))
        print("RESULT", misses, digest, flush=True)
    """
    with tempfile.TemporaryDirectory() as cache:
        results = []
        for _ in range(2):
            proc = run_child(body, env={"NUMBA_CACHE_DIR": cache}, timeout=120)
            assert proc.returncode == 0, proc.stderr[-2000:]
            results.append(next(x for x in proc.stdout.splitlines()
                                if x.startswith("RESULT")).split()[1:])
    (cold_misses, cold_digest), (warm_misses, warm_digest) = results
    assert int(cold_misses) >= 1  # (compiled in the first process)
    assert warm_misses == "0"  # (loaded from the cache in the second)
    assert cold_digest == warm_digest
