"""The compiled release kernels (pmlkit._kernels, numba) against the numpy path and against
the alias method in exact rationals; the threaded draw against one thread; the address
table of shared label objects against a dictionary, also under forced collisions; and the
numpy path when numba cannot be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from fractions import Fraction

import numpy as np
import pytest
import randomgen
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit import _kernels
from pmlkit import sampler as sampler_mod
from pmlkit.errors import ValidationError
from pmlkit.sampler import DRAW_BLOCK, AliasSampler, Encoder, _AddressTable

pytest.importorskip("numba")  # the test extra installs it (pmlkit[fast])

from test_sampler_background import _draw  # numpy or compiled draw under one seed
from test_sampler_kernel import _mechanism  # random matrices with zeros


def _exact(s: AliasSampler, rows: list[int], words: list[int]) -> list[int]:
    """The alias method on each word, in integers and rationals, from the tables alone:
    column j = the top b bits; the threshold is prob[i, j] * 2**(64 - b) rounded half to
    even (exact rational arithmetic); a threshold of 2**(64 - b) or more always keeps j;
    otherwise j is kept iff the coin (the other 64 - b bits) is below it, else alias[i, j]."""
    c = s.n_columns
    b = c.bit_length() - 1
    prob = s.prob_flat.reshape(-1, c)
    alias = s.alias_flat.reshape(-1, c)
    out = []
    for i, r in zip(rows, words, strict=True):
        j = r >> (64 - b)
        coin = r & ((1 << (64 - b)) - 1)
        thr = round(Fraction(float(prob[i, j])) * (1 << (64 - b)))
        out.append(j if thr >= 1 << (64 - b) or coin < thr else int(alias[i, j]))
    return out


def _fixed_words(words: list[int]) -> np.random.Generator:
    it = iter(words)
    return np.random.Generator(randomgen.UserBitGenerator(lambda _state: next(it), 64))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.integers(1, 300), st.integers(0, 2**32 - 1),
       st.floats(0, 0.7), st.sampled_from(["int8", "uint16", "int32", "int64", "uint64"]),
       st.sampled_from([None, "few", "many"]))
def test_compiled_draw_is_the_numpy_draw_and_the_exact_alias_method(
        n, m, seed, zero_frac, dtype, remap):
    w = _mechanism(n, m, seed, zero_frac)
    s = AliasSampler(w)
    g = np.random.default_rng(seed + 1)
    table = None
    if remap == "few":
        table = g.integers(0, n, min(n + 3, 120))
    elif remap == "many":  # more codes than 4 inputs + 1024: the offsets path
        table = g.integers(0, n, 4 * n + 1100)
    n_codes = n if table is None else table.size
    codes = g.integers(0, min(n_codes, np.iinfo(dtype).max + 1), 5000).astype(dtype)
    kw = {} if table is None else {"remap": table}
    got = _draw(s, codes, np.random.default_rng(seed), compiled=True, **kw)
    ref = _draw(s, codes, np.random.default_rng(seed), compiled=False, **kw)
    np.testing.assert_array_equal(got, ref)
    rows = codes.astype(np.intp) if table is None else table[codes.astype(np.intp)]
    words = np.random.default_rng(seed).bit_generator.random_raw(codes.size)
    assert got[:1500].tolist() == _exact(s, rows[:1500].tolist(), words[:1500].tolist())
    assert np.all(w[rows, got] > 0)


@pytest.mark.parametrize("m", [2, 3, 300, 1000])
def test_compiled_draw_at_the_threshold_and_the_extreme_coins(m):
    """Coins one below, at and one above every cell's integer threshold, and the extreme
    coins 0 and 2**(64 - b) - 1: decided as the exact rule decides (the alias at the
    threshold), and never an impossible output."""
    w = _mechanism(4, m, m, 0.3)
    s = AliasSampler(w)
    c, b = s.n_columns, s.n_columns.bit_length() - 1
    top = (1 << (64 - b)) - 1
    thr = (s._cells >> np.uint64(b)).astype(object)
    rows, words = [], []
    for i in range(4):
        for j in range(c):
            t = int(thr[i * c + j])
            for coin in {0, t - 1, t, t + 1, top}:
                if 0 <= coin <= top:
                    rows.append(i)
                    words.append((j << (64 - b)) | coin)
    codes = np.array(rows)
    got = _draw(s, codes, _fixed_words(words), compiled=True)
    assert got.tolist() == _exact(s, rows, words)
    assert _draw(s, codes, _fixed_words(words), compiled=False).tolist() == got.tolist()
    assert np.all(w[codes, got] > 0)


@pytest.mark.parametrize("k", [4, 1000])
def test_two_threads_draw_what_one_thread_draws_and_consume_the_same_words(k):
    w = _mechanism(k, k, 3, 0.2)
    s = AliasSampler(w)
    n = 5 * DRAW_BLOCK + 123  # several blocks in flight and a short last block
    codes = np.random.default_rng(1).integers(0, k, n)
    g1, g2, g3 = (np.random.default_rng(9) for _ in range(3))
    one = _draw(s, codes, g1, compiled=True, threads=1)
    two = _draw(s, codes, g2, compiled=True, threads=2)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, _draw(s, codes, g3, compiled=False))
    # n words consumed in order by each: the streams continue alike
    assert g1.bit_generator.random_raw() == g2.bit_generator.random_raw() \
        == g3.bit_generator.random_raw()


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize(("k", "dtype"), [(300, np.int64), (5, np.int64), (5, np.int32)])
def test_codes_in_the_other_byte_order_draw_as_native_ones(compiled, k, dtype):
    """Codes in non-native byte order (read from a file, say) draw what the same codes in
    native order draw. (The numpy path read 8-byte codes' bits as uint64 without swapping
    them: silently wrong rows for a small table, an IndexError for a large one.)"""
    s = AliasSampler(_mechanism(k, k, 2, 0.2))
    codes = np.random.default_rng(0).integers(0, k, 3 * DRAW_BLOCK).astype(dtype)
    swapped = codes.astype(codes.dtype.newbyteorder())
    assert not swapped.dtype.isnative and np.array_equal(swapped, codes)
    got = _draw(s, swapped, np.random.default_rng(1), compiled=compiled)
    np.testing.assert_array_equal(got, _draw(s, codes, np.random.default_rng(1),
                                             compiled=compiled))


@pytest.mark.parametrize("bad", [-1, 7, -128, 2**40])
@pytest.mark.parametrize("where", [0, DRAW_BLOCK + 5, 3 * DRAW_BLOCK - 1])
@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_draw_refuses_out_of_range_codes_before_their_gather(bad, where, threads):
    """The kernel reads the table without bounds checks of its own: each code is checked
    against the rows (a negative code wraps to a huge one) before its gather, and a code
    outside 0..N-1 is refused with the numpy path's message, in any block, on one or two
    threads (a forged code must never read memory outside the table)."""
    s = AliasSampler(_mechanism(7, 5, 0, 0.0))
    dtype = np.int8 if -128 <= bad < 128 else np.int64
    codes = np.zeros(3 * DRAW_BLOCK, dtype=dtype)
    codes[where] = bad
    with pytest.raises(ValidationError, match=rf"codes must be input indices in 0\.\.6, "
                                              rf"got {bad}$"):
        _draw(s, codes, np.random.default_rng(0), compiled=True, threads=threads)
    # through remap (both table layouts): indices into remap
    with pytest.raises(ValidationError, match=rf"indices into remap in 0\.\.6, got {bad}$"):
        _draw(s, codes, np.random.default_rng(0), compiled=True, threads=threads,
              remap=np.arange(7))
    if bad >= 0:
        many = np.zeros(bad if bad < 5000 else 5000, dtype=np.intp)
        wide = codes.astype(np.int64)
        wide[where] = many.size
        with pytest.raises(ValidationError, match=rf"indices into remap in 0\.\."
                                                  rf"{many.size - 1}, got {many.size}$"):
            _draw(s, wide, np.random.default_rng(0), compiled=True, threads=threads,
                  remap=many)


def _objects(k: int) -> list[str]:
    return ["".join(["v", str(i), "x"]) for i in range(k)]  # fresh str objects


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("mults", [None, (1,), *[(m,) for m in _AddressTable.MULTS]])
def test_address_table_lookup_equals_a_dictionary(compiled, mults, monkeypatch):
    """Known objects found by address, unknown addresses missed; also when every key
    hashes to the same first slot (multiplier 1: one long probe chain)."""
    if mults is not None:
        monkeypatch.setattr(_AddressTable, "MULTS", mults)
    if not compiled:
        monkeypatch.setenv("PMLKIT_NO_NUMBA", "1")
    known = _objects(300)
    others = _objects(50)  # equal values would not matter: other objects, other addresses
    table = _AddressTable()
    codes = np.random.default_rng(0).permutation(300)
    table.add(np.array(known, dtype=object), codes)
    table.add(np.array(known[:10], dtype=object), codes[:10])  # already known: skipped
    if mults == (1,):  # every address has the first slot 0: one chain of 300 keys
        assert table.max_probe == 299
    pool = np.array(known + others, dtype=object)
    vals = pool[np.random.default_rng(1).integers(0, pool.size, 20_000)]
    addr = np.array([id(v) for v in vals], dtype=np.uint64)
    out = np.empty(vals.size, dtype=np.intp)
    misses = table.lookup(addr, out)
    by_id = {id(o): int(c) for o, c in zip(known, codes, strict=True)}
    expect = [by_id.get(id(v), -1) for v in vals]
    assert out.tolist() == expect
    assert misses == expect.count(-1) > 0


@pytest.mark.parametrize("compiled", [True, False])
def test_later_chunks_of_shared_objects_encode_like_distinct_copies(compiled, monkeypatch):
    """The first chunk fills the table; later chunks hold known objects, new objects with
    the same values, and (last) an unknown value: codes as the value-by-value path gives
    them, and the unknown counted once per record."""
    if not compiled:
        monkeypatch.setenv("PMLKIT_NO_NUMBA", "1")
    labels = _objects(40)
    enc = Encoder([str(v) for v in labels])
    ref = Encoder([str(v) for v in labels])
    g = np.random.default_rng(2)
    shared = np.array(labels, dtype=object)
    x1 = g.integers(0, 40, 30_000)
    assert enc.encode_numpy(shared[x1]).tolist() == x1.tolist()
    assert enc._objects is not None and len(enc._objects.objects) == 40
    copies = np.array(_objects(40), dtype=object)  # equal values, other objects
    x2 = g.integers(0, 40, 30_000)
    chunk2 = np.where(g.random(30_000) < 0.1, copies[x2], shared[x2])
    assert enc.encode_numpy(chunk2).tolist() == x2.tolist()
    assert len(enc._objects.objects) == 80  # the copies were added
    chunk3 = shared[g.integers(0, 40, 30_000)]
    chunk3[[5, 7000, 29_999]] = "intruder"
    assert enc.encode_numpy(chunk3) is None
    assert ref.encode_numpy(np.array([str(v) for v in chunk3], dtype=object)) is None
    assert enc.failed and dict(enc.unknown) == dict(ref.unknown) == {"intruder": 3}


@pytest.mark.parametrize("compiled", [True, False])
def test_first_chunk_whose_first_records_hold_few_of_its_objects(compiled, monkeypatch):
    """The table starts from the objects of a chunk's first records: the records past
    them holding other labels (shared objects and equal copies) get their codes, and an
    unknown value past them is counted once per record, as value by value."""
    if not compiled:
        monkeypatch.setenv("PMLKIT_NO_NUMBA", "1")
    labels = _objects(30)
    shared = np.array(labels, dtype=object)
    copies = np.array(_objects(30), dtype=object)
    g = np.random.default_rng(4)
    x = np.concatenate([g.integers(0, 2, 5000), g.integers(0, 30, 20_000)])
    chunk = np.where(g.random(x.size) < 0.2, copies[x], shared[x])
    enc = Encoder([str(v) for v in labels])
    assert enc.encode_numpy(chunk).tolist() == x.tolist()
    assert len(enc._objects.objects) == 60  # every distinct object, once
    bad = chunk.copy()
    bad[[6000, 24_000]] = "intruder"
    bad[9000] = None
    enc2 = Encoder([str(v) for v in labels])
    ref = Encoder([str(v) for v in labels])
    assert enc2.encode_numpy(bad) is None
    assert ref.encode_numpy(np.array([v if v is None else str(v) for v in bad],
                                     dtype=object)) is None
    assert (dict(enc2.unknown), enc2.nulls) == (dict(ref.unknown), ref.nulls) \
        == ({"intruder": 2}, 1)


def test_privatize_many_chunks_of_shared_objects_equals_the_integer_path():
    k = 50
    names = np.array(_objects(k), dtype=object)
    w = _mechanism(k, k, 4, 0.1)
    mech = pmlkit.Mechanism(w, tuple(names), tuple(names))
    x = np.random.default_rng(5).integers(0, k, 2_300_000)  # three chunks
    got = pmlkit.privatize(mech, names[x], rng=11)
    idx = pmlkit.privatize(pmlkit.Mechanism(w), x, rng=11)
    assert got.dtype == object
    np.testing.assert_array_equal(got, names[idx])


def test_without_numba_the_release_is_identical_and_numba_is_never_imported_unasked(
        tmp_path):
    """A core install without numba: privatize runs the numpy path with the same outputs;
    and neither import pmlkit, nor the command line's design command, nor a small release
    imports numba."""
    x = np.random.default_rng(0).integers(0, 300, 400_000)
    w = _mechanism(300, 300, 1, 0.2)
    np.save(tmp_path / "w.npy", w)
    here = pmlkit.privatize(pmlkit.Mechanism(w), x, rng=3)
    probe = textwrap.dedent(f"""
        import importlib.abc, sys
        import numpy as np
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] in ("numba", "llvmlite"):
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, Block())
        import pmlkit
        from pmlkit import _kernels
        assert _kernels.compiled() is None
        w = np.load({str(tmp_path / "w.npy")!r})
        x = np.random.default_rng(0).integers(0, 300, 400_000)
        np.save({str(tmp_path / "out.npy")!r}, pmlkit.privatize(pmlkit.Mechanism(w), x, rng=3))
        """)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), here)
    light = textwrap.dedent("""
        import sys, numpy as np
        import pmlkit, pmlkit.cli.main, pmlkit.cli.design
        from pmlkit import sampler
        mech = pmlkit.Mechanism(np.full((2, 2), 0.5))
        pmlkit.privatize(mech, np.array([0, 1, 1]))
        pmlkit.privatize(mech, np.zeros(1 << 20, dtype=np.int64))
        print("numba" in sys.modules)
        sampler._KERNEL_LOAD_RECORDS = 1 << 21  # (2**24 records take longer)
        pmlkit.privatize(mech, np.zeros(1 << 20, dtype=np.int64))
        print("numba" in sys.modules)
        """)
    proc = subprocess.run([sys.executable, "-c", light], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    # numba only once one sampler has drawn _KERNEL_LOAD_RECORDS records
    assert proc.stdout.split() == ["False", "True"]


def test_thread_setting():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PMLKIT_THREADS", "1")
        assert _kernels.draw_threads() == 1
        mp.setenv("PMLKIT_THREADS", "8")
        assert _kernels.draw_threads() == 2
        mp.setenv("PMLKIT_THREADS", "many")
        assert _kernels.draw_threads() == 1
        mp.setenv("PMLKIT_NO_NUMBA", "1")
        assert _kernels.compiled() is None


def test_compiled_draw_on_64_bit_cells_when_there_are_more_than_2_16_columns():
    """b > 16 (more than 65,536 outputs): no 32-bit cells, the 64-bit kernel decides; the
    same outputs as the numpy path and the exact rule."""
    w = _mechanism(1, 65_537, 8, 0.5)
    s = AliasSampler(w)
    assert s.n_columns == 1 << 17 and s._compact32() is None
    codes = np.zeros(20_000, dtype=np.int64)
    got = _draw(s, codes, np.random.default_rng(2), compiled=True)
    np.testing.assert_array_equal(got, _draw(s, codes, np.random.default_rng(2),
                                             compiled=False))
    words = np.random.default_rng(2).bit_generator.random_raw(1500)
    assert got[:1500].tolist() == _exact(s, [0] * 1500, words.tolist())
    assert np.all(w[codes, got] > 0)


def test_reordered_tables_are_kept_per_remap_and_in_huge_pages():
    """A large table (1000 x 1024 cells: 32-bit cells of 4 MB, copied to memory advised for
    huge pages) drawn through three remap tables in turn, the reordered tables reused
    between calls: every draw equals the numpy path's with the same remap and words."""
    w = np.random.default_rng(3).dirichlet(np.full(1000, 0.3), size=1000)
    s = AliasSampler(w)
    rng = np.random.default_rng(4)
    remaps = [rng.permutation(1000), rng.integers(0, 1000, 1000), rng.permutation(1000)]
    codes = rng.integers(0, 1000, 3 * DRAW_BLOCK).astype(np.int16)
    for remap in remaps + remaps[:1]:
        seed = int(rng.integers(2**32))
        got = _draw(s, codes, np.random.default_rng(seed), compiled=True, remap=remap)
        plain = AliasSampler(w)  # a fresh sampler: no cached tables
        ref = _draw(plain, remap[codes], np.random.default_rng(seed), compiled=False)
        assert np.array_equal(got, ref)
    c32 = s._compact32()
    b = np.uint64(s._bits)
    low = np.uint64((1 << s._bits) - 1)
    expected = (((s._cells >> (np.uint64(32) + b)) << b) | (s._cells & low)).astype(np.uint32)
    assert np.array_equal(c32, expected) and not c32.flags.writeable
    assert c32.ctypes.data % (1 << 21) == 0 or not sys.platform.startswith("linux")


@pytest.mark.parametrize("m", [1, 2, 7, 1000])
def test_compiled_output_counts_equal_bincount(m):
    """The compiled count (four interleaved histograms) against np.bincount, on runs of
    equal indices, a length not a multiple of four, and every index present or not."""
    _kernels.compiled()
    rng = np.random.default_rng(m)
    idx = np.concatenate([np.full(70_001, m - 1), rng.integers(0, m, 100_003),
                          np.zeros(5, dtype=np.int64)]).astype(np.intp)
    got = sampler_mod.count_outputs(idx, m)
    assert got.dtype == np.int64
    assert got.tolist() == np.bincount(idx, minlength=m).tolist()
    assert int(got.sum()) == idx.shape[0]


@pytest.mark.parametrize(("compiled", "dtype"), [
    (True, np.int64), (True, np.int32), (True, np.uint16), (True, np.uint64),
    (True, ">i8"), (False, np.int64)])
def test_labels_0_to_n_minus_1_drawn_from_the_values_themselves(compiled, dtype,
                                                                 monkeypatch):
    """Integer labels 0..N-1: the values go straight to the draw (no range pass of the
    encoder's). The release is the one of the same values as Python objects (matched one
    by one) under one seed; a value outside the labels anywhere (first, last, after
    several blocks, past 2**63 as uint64, negative) is refused with the encoder's counts
    over the whole array, as for the object array."""
    from pmlkit.errors import DataError

    if compiled:
        _kernels.compiled()
    else:
        monkeypatch.setenv("PMLKIT_NO_NUMBA", "1")
    k, n = 7, 300_000  # (past the size of the compiled draw)
    w = _mechanism(k, k, 6, 0.1)
    mech = pmlkit.Mechanism(w)
    x = np.random.default_rng(6).integers(0, k, n).astype(dtype)
    got = pmlkit.privatize(mech, x, rng=21)
    objs = np.empty(n, dtype=object)
    objs[:] = x.astype(np.int64).tolist()
    np.testing.assert_array_equal(got, pmlkit.privatize(mech, objs, rng=21).astype(np.intp))
    for bad, where in [(k, 0), (k, n - 1), (k + 5, 200_000),
                       (-1 if np.dtype(dtype).kind == "i" else 2**16 - 1, 3)]:
        y = x.copy()
        y[where] = bad
        y[(where + n // 2) % n] = bad
        with pytest.raises(DataError, match=f"value {bad} appears in 2 rows") as e1:
            pmlkit.privatize(mech, y, rng=1)
        yo = np.empty(n, dtype=object)
        yo[:] = y.astype(np.int64).tolist()
        with pytest.raises(DataError) as e2:
            pmlkit.privatize(mech, yo, rng=1)
        assert str(e1.value) == str(e2.value)
    if np.dtype(dtype) == np.uint64:
        y = x.copy()
        y[-1] = 2**63 + 5  # negative as int64: still no label
        with pytest.raises(DataError, match="appears in 1 row"):
            pmlkit.privatize(mech, y, rng=1)


def test_kernels_keep_no_intrinsic_in_their_closures():
    """numba keys a kernel's disk cache on the pickled contents of its closure; an
    intrinsic pickles differently in every process, so a kernel holding one in its
    closure would be compiled again by every process (seconds): the intrinsics are
    module globals, and every closure holds only numpy types."""
    kernels = _kernels.compiled()
    for name, fn in kernels.items():
        cells = fn.py_func.__closure__ or ()
        for cell in cells:
            value = cell.cell_contents
            assert isinstance(value, type) and issubclass(value, np.generic), (name, value)
