"""Attack 10 on the Arrow string gathers (sampler.ArrowGather), the two-thread categorical
draws, the narrow (uint16) scratch indices and the uneven string take split.

Every release here is checked against an independent computation: the release of the
integer codes through the same matrix (``kindsgen.reference``), Arrow's own take, or
``np.bincount``. Chunks are made small so that ~10^5 records span many chunks on both
threads."""

from __future__ import annotations

import copy
import itertools
import os
import threading
from typing import Any

import numpy as np
import pytest

import kindsgen as kg
import pmlkit
from pmlkit import _kernels
from pmlkit import sampler as sampler_mod
from pmlkit.errors import DataError, PMLError, ValidationError

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

pytestmark = pytest.mark.skipif(_kernels.compiled() is None, reason="numba not installed")


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> int:
    """Chunks of 1000 records (not a divisor of any piece size below), kernels on."""
    from pmlkit.privatization import _core

    monkeypatch.setattr(_core, "CHUNK_ROWS", 1000)
    monkeypatch.setattr(sampler_mod, "_KERNEL_MIN_RECORDS", 0)
    monkeypatch.setattr(sampler_mod, "_KERNEL_LOAD_RECORDS", 0)
    _kernels.compiled()
    return 1000


@pytest.fixture
def gather_results(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of ArrowGather.result() calls (to check the gather path is taken)."""
    calls: list[int] = []
    orig = sampler_mod.ArrowGather.result

    def result(self: Any) -> Any:
        calls.append(1)
        return orig(self)

    monkeypatch.setattr(sampler_mod.ArrowGather, "result", result)
    return calls


def _both(mech: Any, col: Any, seed: int, monkeypatch: pytest.MonkeyPatch,
          as_list: Any = kg.as_list) -> list[list[Any]]:
    runs = []
    for threads in ("1", "2"):
        monkeypatch.setenv("PMLKIT_THREADS", threads)
        runs.append(as_list(pmlkit.privatize(mech, col, rng=seed)))
    return runs


def _chunked(vals: np.ndarray, sizes: list[int], typ: Any) -> Any:
    out, pos = [], 0
    for s in sizes:
        out.append(pa.array(vals[pos:pos + s].tolist(), typ))
        pos += s
    return pa.chunked_array(out, typ)


SIZES = [4096, 4097, 20000, 1, 70001]  # (a piece of 1 record: no gather for that release)


@pytest.mark.parametrize("sizes", [SIZES[:3] + SIZES[4:], SIZES])
@pytest.mark.parametrize("typ", ["string", "large_string", "string_view"])
def test_chunked_pieces_of_odd_sizes_release_the_integer_release(
        sizes: list[int], typ: str, tiny_chunks: int, gather_results: list[int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of odd sizes (chunks of 1000 never aligned with them, a last chunk of one
    record per piece), output labels of every length (empty, >8, >16, >255 bytes,
    non-ASCII, NUL inside): one and two threads give the release of the integer codes;
    with every piece large enough the gathers write it (one result per piece)."""
    k, m = 11, 13
    ins, outs = kg.names(k), kg.names(m, "out:")
    w = kg.matrix(k, m, 17)
    mech = pmlkit.Mechanism(w, ins, outs)
    n = sum(sizes)
    codes = np.random.default_rng(3).integers(0, k, n)
    col = _chunked(np.array(ins, dtype=object)[codes], sizes, getattr(pa, typ)())
    ref = kg.reference(w, outs, codes, 29)
    runs = _both(mech, col, 29, monkeypatch)
    assert runs[0] == runs[1] == ref
    assert len(gather_results) == (0 if 1 in sizes else 2 * len(sizes))


@pytest.mark.parametrize("m", [65535, 65536, 65537])
def test_outputs_at_the_uint16_boundary(m: int, tiny_chunks: int,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """65536 outputs (uint16 scratch indices up to 65535, the last output frequent) and
    65537 (8-byte indices): Arrow, pandas str, polars String and both categoricals give
    the integer release at one and two threads."""
    k, n = 3, 70001
    ins = kg.names(k)
    outs = [f"o{j}" + "é" * (j % 5) for j in range(m)]
    g = np.random.default_rng(m)
    w = g.random((k, m))
    w[:, -1] += 40.0
    w[:, 0] += 40.0
    w /= w.sum(axis=1, keepdims=True)
    mech = pmlkit.Mechanism(w, ins, outs)
    codes = g.integers(0, k, n)
    vals = np.array(ins, dtype=object)[codes].tolist()
    assert sampler_mod.scratch_index_dtype(m, n) == (np.uint16 if m <= 65536 else np.intp)
    ref = kg.reference(w, outs, codes, 5)
    assert outs[-1] in ref
    for col in (pa.array(vals), pd.Series(vals, dtype="str"), pl.Series(vals),
                pd.Series(pd.Categorical(vals)), pl.Series(vals, dtype=pl.Categorical)):
        runs = _both(mech, col, 5, monkeypatch)
        assert runs[0] == runs[1] == ref, type(col)


def _poison_pool(size: int = 1 << 23) -> None:
    """Fill freed memory of Arrow's pool with 0xAB (a later buffer may reuse it)."""
    for _ in range(4):
        buf = pa.allocate_buffer(size)
        np.frombuffer(buf, dtype=np.uint8)[:] = 0xAB
        del buf


LABEL_SETS = [[""], ["", ""], ["a" * 8, "b" * 7, ""], ["x" * 9, "y" * 16, "z" * 17, ""],
              ["\x00", "a\x00", "\x00" * 9], ["é" * 127, "e" * 255, "f" * 256, "g"],
              ["h" * 3000, "", "i"], ["日本語" * 4, "ü", "🙂" * 3]]


@pytest.mark.parametrize("labels", LABEL_SETS)
@pytest.mark.parametrize("typ", ["string", "large_string", "string_view"])
@pytest.mark.parametrize("index_type", [np.intp, np.uint16])
def test_gather_over_a_poisoned_pool_is_arrows_take(
        labels: list[str], typ: str, index_type: type) -> None:
    """The pool poisoned before each gather; labels sliced out of a longer array; chunks
    put in a random order from two threads: the offsets and bytes are Arrow's take's
    (no stale byte), the views give the labels, the counts are bincount's."""
    t = getattr(pa, typ)()
    lab = pa.array(["prefix-" * 3] * 2 + labels + ["post"], t).slice(2, len(labels))
    rng = np.random.default_rng(len(labels) * 7 + len(typ))
    n = 50001
    idx = rng.integers(0, len(labels), n).astype(index_type)
    _poison_pool()
    g = sampler_mod.ArrowGather.start(lab, n, count=True)
    assert g is not None
    cuts = sorted(set(rng.integers(1, n, 25).tolist()))
    bounds = [0, *cuts, n]
    chunks = list(itertools.pairwise(bounds))
    rng.shuffle(chunks)

    def run(part: list[tuple[int, int]]) -> None:
        for lo, hi in part:
            g.put(lo, idx[lo:hi])

    threads = [threading.Thread(target=run, args=(chunks[i::2],)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out = g.result()
    out.validate(full=True)
    assert out.type == t
    assert out.to_pylist() == [labels[i] for i in idx.tolist()]
    assert g.counts is not None
    assert g.counts.tolist() == np.bincount(idx, minlength=len(labels)).tolist()
    if typ != "string_view":
        plain = pa.array(labels, t)
        ref = plain.take(pa.array(idx.astype(np.int64)))
        assert out.buffers()[1].to_pybytes() == ref.buffers()[1].to_pybytes()
        assert out.buffers()[2].to_pybytes() == ref.buffers()[2].to_pybytes()


def test_pandas_report_counts_come_from_the_gathers(tiny_chunks: int,
                                                    gather_results: list[int],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The counts run_local reports for a pandas str Series (summed over the gathers) and
    a polars Series are those of the integer release."""
    from pmlkit.privatization import _core
    from pmlkit.rng import resolve_rng

    k, m, n = 12, 9, 90001
    ins, outs = kg.names(k), kg.names(m, "o:")
    w = kg.matrix(k, m, 3)
    mech = pmlkit.Mechanism(w, ins, outs)
    codes = np.random.default_rng(2).integers(0, k, n)
    vals = np.array(ins, dtype=object)[codes].tolist()
    ref = kg.reference(w, outs, codes, 7)
    ref_counts = [ref.count(o) for o in outs]
    for threads in ("1", "2"):
        monkeypatch.setenv("PMLKIT_THREADS", threads)
        for col in (pd.Series(vals, dtype="str"), pl.Series(vals)):
            out, _, rows, counts = _core.run_local(mech, col, resolve_rng(7), columns=None,
                                                   into=None)
            assert rows == n and kg.as_list(out) == ref
            assert counts is not None and counts.tolist() == ref_counts
    assert len(gather_results) == 4


@pytest.mark.parametrize("step", [slice(None, None, 2), slice(None, None, -1),
                                  slice(5, None, 3)])
def test_strided_categorical_codes_release_the_integer_release(
        step: slice, tiny_chunks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pandas categorical sliced with a step (its codes a strided or reversed view) is
    drawn in chunks on both threads: the integer release of the selected codes, the input
    unchanged."""
    k, m, n = 12, 9, 120001
    ins, outs = kg.names(k), kg.names(m, "o:")
    w = kg.matrix(k, m, 3)
    mech = pmlkit.Mechanism(w, ins, outs)
    codes = np.random.default_rng(2).integers(0, k, n)
    s = pd.Series(pd.Categorical(np.array(ins, dtype=object)[codes])).iloc[step]
    assert not np.asarray(s.array.codes).flags.c_contiguous
    before = s.copy()
    runs = _both(mech, s, 7, monkeypatch)
    assert runs[0] == runs[1] == kg.reference(w, outs, codes[step], 7)
    assert s.equals(before)


def _ahead(gen: np.random.Generator) -> list[int]:
    return copy.deepcopy(gen).bit_generator.random_raw(5).tolist()


@pytest.mark.parametrize("bad_at,bad", [(13999, None), (48096, "nope"), (18096, "zzz"),
                                        (18095, None)])
@pytest.mark.parametrize("kind", ["chunked", "pandas-str", "view"])
def test_bad_record_in_a_later_piece(bad_at: int, bad: Any, kind: str, tiny_chunks: int,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A null or unknown value in a later piece/chunk (gathers started for every piece):
    DataError, the same message at one and two threads, the input unchanged, the
    generator moved by the records before the failing chunk (as one pass leaves it)."""
    k = 6
    ins = kg.names(k)
    mech = pmlkit.Mechanism(kg.matrix(k, k, 1), ins, ins)
    sizes = [5000, 9000, 4096, 30001]
    n = sum(sizes)
    vals = np.array(ins, dtype=object)[np.random.default_rng(3).integers(0, k, n)]
    vals[bad_at] = bad
    if kind == "chunked":
        col, pieces = _chunked(vals, sizes, pa.string()), sizes
    elif kind == "pandas-str":
        col, pieces = pd.Series(vals.tolist(), dtype="str"), [n]
    else:
        col, pieces = pa.array(vals.tolist(), pa.string_view()), [n]
    starts, pos = [], 0
    for size in pieces:
        starts += [pos + c for c in range(0, size, tiny_chunks)]
        pos += size
    expect = np.random.Generator(np.random.PCG64(4))
    expect.bit_generator.random_raw(max(s for s in starts if s <= bad_at))
    before = kg.as_list(col)
    msgs = []
    for threads in ("1", "2"):
        monkeypatch.setenv("PMLKIT_THREADS", threads)
        gen = np.random.Generator(np.random.PCG64(4))
        with pytest.raises(DataError) as info:
            pmlkit.privatize(mech, col, rng=gen)
        msgs.append(str(info.value))
        assert _ahead(gen) == _ahead(expect), threads
        assert kg.as_list(col) == before
    assert msgs[0] == msgs[1]


def test_other_label_kinds_out_of_arrow_inputs(tiny_chunks: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Integer inputs with string outputs (a gather of string labels) and string inputs
    with integer outputs (Arrow's take of uint16 scratch indices), and dictionary chunks
    with different dictionaries: the integer release at one and two threads."""
    g = np.random.default_rng(5)
    n = 100003
    ins, outs = [3, 17, -5, 2**40], kg.names(6, "o:")
    w = kg.matrix(4, 6, 2)
    mech = pmlkit.Mechanism(w, ins, outs)
    codes = g.integers(0, 4, n)
    vals = np.array(ins)[codes]
    ref = kg.reference(w, outs, codes, 9)
    for col in (pa.array(vals), pa.chunked_array([pa.array(vals[:50000]),
                                                  pa.array(vals[50000:])]), pl.Series(vals)):
        runs = _both(mech, col, 9, monkeypatch)
        assert runs[0] == runs[1] == ref
    ins2, outs2 = kg.names(5), [10, 20, 30]
    w2 = kg.matrix(5, 3, 4)
    mech2 = pmlkit.Mechanism(w2, ins2, outs2)
    codes2 = g.integers(0, 5, n)
    vals2 = np.array(ins2, dtype=object)[codes2].tolist()
    ref2 = [str(v) for v in kg.reference(w2, outs2, codes2, 9)]
    for col in (pa.array(vals2), pd.Series(vals2, dtype="str"), pl.Series(vals2)):
        runs = _both(mech2, col, 9, monkeypatch)
        assert runs[0] == runs[1] == ref2
    ins3 = kg.names(9)
    w3 = kg.matrix(9, 9, 5)
    mech3 = pmlkit.Mechanism(w3, ins3, ins3[::-1])
    codes3 = g.integers(0, 9, n)
    vals3 = np.array(ins3, dtype=object)[codes3].tolist()
    second = pa.array(vals3[40000:][::-1]).dictionary_encode()
    col3 = pa.chunked_array([pa.array(vals3[:40000]).dictionary_encode(),
                             second.take(pa.array(np.arange(n - 40000)[::-1]))])
    runs = _both(mech3, col3, 9, monkeypatch)
    assert runs[0] == runs[1] == kg.reference(w3, ins3[::-1], codes3, 9)


def test_fallback_takes_of_uint16_indices_split_unevenly(
        monkeypatch: pytest.MonkeyPatch, gather_results: list[int]) -> None:
    """A small first piece (no gathers: the take after the draw, of uint16 indices, over
    2^18+ records so that the take is split 200/256 over the two threads, its second part
    counting the first's): pandas str, Arrow and polars give the integer release and
    the counts of it at one and two threads."""
    from pmlkit.privatization import _core
    from pmlkit.rng import resolve_rng

    monkeypatch.setattr(_core, "CHUNK_ROWS", 1 << 14)
    monkeypatch.setattr(sampler_mod, "_KERNEL_MIN_RECORDS", 0)
    monkeypatch.setattr(sampler_mod, "_KERNEL_LOAD_RECORDS", 0)
    k, m = 7, 11
    ins, outs = kg.names(k), kg.names(m, "o:")
    w = kg.matrix(k, m, 3)
    mech = pmlkit.Mechanism(w, ins, outs)
    n = sampler_mod._SPLIT_MIN + 37_007
    codes = np.random.default_rng(2).integers(0, k, n)
    vals = np.array(ins, dtype=object)[codes].tolist()
    ref = kg.reference(w, outs, codes, 7)
    ref_counts = [ref.count(o) for o in outs]
    cols = [pa.chunked_array([pa.array(vals[:100]), pa.array(vals[100:])]),
            pd.Series(pd.array(pa.chunked_array([pa.array(vals[:100], pa.large_string()),
                                                 pa.array(vals[100:], pa.large_string())]),
                               dtype="str"))]
    for threads in ("1", "2"):
        monkeypatch.setenv("PMLKIT_THREADS", threads)
        for col in cols:
            out, _, _, counts = _core.run_local(mech, col, resolve_rng(7), columns=None,
                                                into=None)
            assert kg.as_list(out) == ref
            if counts is not None:
                assert counts.tolist() == ref_counts
    assert not gather_results


def test_concurrent_releases_from_two_user_threads(tiny_chunks: int) -> None:
    """Two user threads releasing Arrow string arrays at once (sharing the one worker):
    each gets the integer release of its own seed."""
    k, m, n = 9, 7, 60001
    ins, outs = kg.names(k), kg.names(m, "o:")
    w = kg.matrix(k, m, 11)
    mech = pmlkit.Mechanism(w, ins, outs)
    codes = np.random.default_rng(8).integers(0, k, n)
    col = pa.array(np.array(ins, dtype=object)[codes].tolist())
    refs = {seed: kg.reference(w, outs, codes, seed) for seed in (1, 2, 3, 4)}
    got: dict[int, list[Any]] = {}
    errors: list[BaseException] = []

    def run(seed: int) -> None:
        try:
            for _ in range(3):
                out = kg.as_list(pmlkit.privatize(mech, col, rng=seed))
                assert got.setdefault(seed, out) == out
        except BaseException as exc:  # (re-raised below)
            errors.append(exc)

    old = os.environ.get("PMLKIT_THREADS")
    os.environ["PMLKIT_THREADS"] = "2"
    try:
        threads = [threading.Thread(target=run, args=(seed,)) for seed in refs]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        if old is None:
            del os.environ["PMLKIT_THREADS"]
        else:
            os.environ["PMLKIT_THREADS"] = old
    assert not errors
    assert got == refs


def test_put_refusals_leave_nothing_handed_out() -> None:
    """Refused or never-written puts: an overlapping put from a second thread at the
    same time, a put past the end, a bad index, a non-integer first record: the result
    is refused rather than handed out with unwritten records."""
    lab = pa.array(["no", "yes", "maybe-longer-than-eight"])
    n = 8192
    idx = np.random.default_rng(1).integers(0, 3, n).astype(np.intp)
    g = sampler_mod.ArrowGather.start(lab, n)
    assert g is not None
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def same(lo: int) -> None:
        barrier.wait()
        try:
            g.put(lo, idx[lo:lo + 4000])
            outcomes.append("ok")
        except ValidationError:
            outcomes.append("refused")

    threads = [threading.Thread(target=same, args=(0,)) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(outcomes) == ["ok", "refused"]
    with pytest.raises(ValidationError, match="integer first record"):
        g.put(4000.5, idx[4000:5000])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        g.put(n - 1, idx[:2])
    with pytest.raises(PMLError, match="4000 of 8192"):
        g.result()
    g2 = sampler_mod.ArrowGather.start(lab, n)
    assert g2 is not None
    g2.put(0, idx)
    assert g2.result().to_pylist() == [lab[i].as_py() for i in idx.tolist()]
    with pytest.raises(ValidationError, match="put already"):
        g2.put(5, idx[5:6])


@pytest.mark.parametrize("bad_idx", [np.array(1), [0, 1]])
def test_put_of_a_non_array_is_a_validation_error(bad_idx: Any) -> None:
    """(Found by the attack: put read ``idx.shape[0]`` before its type check.)"""
    g = sampler_mod.ArrowGather.start(pa.array(["no", "yes"]), 8192)
    assert g is not None
    with pytest.raises(ValidationError):
        g.put(0, bad_idx)


def test_put_of_a_float_first_record_is_refused() -> None:
    """(Found by the attack: a float first record was accepted, its range recorded and
    never written.)"""
    g = sampler_mod.ArrowGather.start(pa.array(["no", "yes"]), 8192)
    assert g is not None
    with pytest.raises(ValidationError, match="integer first record"):
        g.put(0.5, np.zeros(10, dtype=np.intp))  # type: ignore[arg-type]
    g.put(np.int64(0), np.zeros(8192, dtype=np.intp))  # (a numpy integer is one)
    assert g.result().to_pylist() == ["no"] * 8192
