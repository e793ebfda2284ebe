"""The one-word alias draw (pmlkit.sampler.AliasSampler.draw), checked bit by bit against
the alias method written out in exact rationals, at the edges of the coin, and for bad
codes."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import randomgen
from hypothesis import given, settings
from hypothesis import strategies as st

from pmlkit.errors import ValidationError
from pmlkit.sampler import AliasSampler


def _mechanism(n: int, m: int, seed: int, zero_frac: float) -> np.ndarray:
    g = np.random.default_rng(seed)
    w = g.dirichlet(np.full(m, 0.5), size=n)
    w[g.random(w.shape) < zero_frac] = 0.0
    w[np.arange(n), g.integers(0, m, n)] += 0.1
    return w / w.sum(axis=1, keepdims=True)


def _reference(s: AliasSampler, codes: np.ndarray, words: np.ndarray) -> list[int]:
    """The alias method on the word r: column j = the top b bits (C = 2**b columns), coin
    = the other 64 - b bits read as a fraction in [0, 1); keep j iff coin < prob[i, j]
    (compared exactly), else alias[i, j]."""
    c = s.n_columns
    b = c.bit_length() - 1
    prob = s.prob_flat.reshape(-1, c)
    alias = s.alias_flat.reshape(-1, c)
    out = []
    for i, r in zip(codes.tolist(), words.tolist(), strict=True):
        j = r >> (64 - b)
        coin = Fraction(r & ((1 << (64 - b)) - 1), 1 << (64 - b))
        out.append(j if coin < Fraction(float(prob[i, j])) else int(alias[i, j]))
    return out


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 70), st.integers(0, 2**32 - 1), st.floats(0, 0.7))
def test_draw_is_the_alias_method_on_each_word(n, m, seed, zero_frac):
    w = _mechanism(n, m, seed, zero_frac)
    s = AliasSampler(w)
    codes = np.random.default_rng(seed + 1).integers(0, n, 3000)
    got = s.draw(codes, np.random.default_rng(seed))
    words = np.random.default_rng(seed).bit_generator.random_raw(codes.size)
    assert got.tolist() == _reference(s, codes, words)
    assert np.all(w[codes, got] > 0)


def _fixed_words(words: list[int]) -> np.random.Generator:
    it = iter(words)
    return np.random.Generator(randomgen.UserBitGenerator(lambda _state: next(it), 64))


@pytest.mark.parametrize("m", [1, 2, 3, 5, 50, 64, 1000])
def test_extreme_coins_never_give_an_impossible_output(m):
    """Every column with the smallest coin (0) and the largest (all ones): the output is
    always possible, the column itself when its keep-probability is 1 (largest coin) or
    positive (smallest coin)."""
    w = _mechanism(3, m, m, 0.5)
    s = AliasSampler(w)
    c, b = s.n_columns, s.n_columns.bit_length() - 1
    prob = s.prob_flat.reshape(3, c)
    top = (1 << (64 - b)) - 1
    for i in range(3):
        cols = np.arange(c)
        words = [int(j) << (64 - b) for j in cols] + [(int(j) << (64 - b)) | top
                                                      for j in cols]
        got = s.draw(np.full(2 * c, i), _fixed_words(words))
        assert np.all(w[i, got] > 0), "an impossible output was drawn"
        low, high = got[:c], got[c:]
        np.testing.assert_array_equal(low[prob[i] > 2.0**-60], cols[prob[i] > 2.0**-60])
        np.testing.assert_array_equal(high[prob[i] == 1.0], cols[prob[i] == 1.0])


def test_padding_columns_are_never_drawn():
    s = AliasSampler(np.full((2, 3), 1 / 3))  # 3 outputs, 4 table columns
    assert s.n_columns == 4
    out = s.draw(np.arange(200_000) % 2, np.random.default_rng(0))
    counts = np.bincount(out, minlength=4)
    assert counts[3] == 0
    assert np.all(np.abs(counts[:3] / 200_000 - 1 / 3) < 0.005)


@pytest.mark.parametrize("codes", [[-1], [0, 2], [5]])
def test_out_of_range_codes_are_refused(codes):
    """A negative code used to wrap around to another row's table silently."""
    s = AliasSampler(np.array([[0.5, 0.5], [0.1, 0.9]]))
    with pytest.raises(ValidationError, match=r"codes must be input indices in 0\.\.1"):
        s.draw(np.array(codes), np.random.default_rng(0))


def test_codes_of_any_integer_dtype_and_blocks_continue_the_stream():
    s = AliasSampler(np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]]))
    codes = np.random.default_rng(3).integers(0, 2, 200_000)
    ref = s.draw(codes, np.random.default_rng(9))
    for dtype in (np.int8, np.uint16, np.int32, np.uint64):
        np.testing.assert_array_equal(s.draw(codes.astype(dtype), np.random.default_rng(9)),
                                      ref)
    g = np.random.default_rng(9)  # two calls continue one stream
    parts = np.concatenate([s.draw(codes[:70_001], g), s.draw(codes[70_001:], g)])
    np.testing.assert_array_equal(parts, ref)
    with pytest.raises(ValidationError, match="1-D array of integer"):
        s.draw(np.array([0.0, 1.0]), np.random.default_rng(0))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 5), st.integers(1, 40), st.integers(0, 2**32 - 1),
       st.sampled_from([np.int8, np.int16, np.int64, np.uint8]), st.sampled_from([7, 3000]))
def test_remapped_codes_draw_as_their_input_indices(n, m, seed, dtype, n_table):
    """``draw(codes, remap=t)`` is the alias method on input ``t[codes]`` word by word
    (categorical codes through the categories' input indices, block by block)."""
    s = AliasSampler(_mechanism(n, m, seed, 0.3))
    g = np.random.default_rng(seed)
    # categories, several sharing one input; 3000 (more than the inputs) takes the path
    # that gathers each code's input index instead of reordering the tables
    table = g.integers(0, n, n_table)
    if n_table > 127:
        dtype = np.int16
    codes = g.integers(0, n_table, 70_000).astype(dtype)  # more than one block
    got = s.draw(codes, np.random.default_rng(seed), remap=table)
    inputs = table[codes.astype(np.intp)]
    words = np.random.default_rng(seed).bit_generator.random_raw(codes.size)
    assert got[:3000].tolist() == _reference(s, inputs[:3000], words[:3000])
    assert got[-500:].tolist() == _reference(s, inputs[-500:], words[-500:])
    np.testing.assert_array_equal(got, s.draw(inputs, np.random.default_rng(seed)))


@pytest.mark.parametrize(("codes", "table", "match"), [
    ([0, 3], [0, 1, 1], r"codes must be indices into remap in 0\.\.2, got 3"),
    ([-1], [0, 1], r"codes must be indices into remap in 0\.\.1, got -1"),
    ([0], [0, 2], r"remap must hold input indices in 0\.\.1, got 2"),
    ([0], [-1, 0], r"remap must hold input indices in 0\.\.1, got -1"),
    ([0], [0.0, 1.0], "remap must be a 1-D array of integer"),
])
def test_out_of_range_remap_is_refused(codes, table, match):
    s = AliasSampler(np.array([[0.5, 0.5], [0.1, 0.9]]))
    with pytest.raises(ValidationError, match=match):
        s.draw(np.array(codes, dtype=np.int8), np.random.default_rng(0), remap=table)


# -- encoding object arrays by object identity ------------------------------------------------

def _shared_and_distinct(labels: list, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same values twice: records sharing one object per label, and records each with
    its own copy (built from the text, so no two records share an object)."""
    pool = np.empty(len(labels), dtype=object)
    pool[:] = labels
    shared = pool[x]
    distinct = np.empty(x.size, dtype=object)
    distinct[:] = [v.encode().decode() if isinstance(v, str) else
                   (None if v is None else pickle_copy(v)) for v in shared.tolist()]
    return shared, distinct


def pickle_copy(v):
    import pickle

    return pickle.loads(pickle.dumps(v))


@pytest.mark.parametrize("k", [3, 40])
def test_shared_objects_privatise_as_distinct_copies(k):
    import pmlkit

    names = [f"v{i}" for i in range(k)]
    mech = pmlkit.Mechanism(np.full((k, k), 1 / k), tuple(names), tuple(names))
    x = np.random.default_rng(k).integers(0, k, 50_000)
    shared, distinct = _shared_and_distinct(names, x)
    assert len({id(v) for v in distinct[:5000]}) == 5000  # really distinct objects
    a = pmlkit.privatize(mech, shared, rng=5)
    b = pmlkit.privatize(mech, distinct, rng=5)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == object and set(a.tolist()) <= set(names)


@pytest.mark.parametrize("labels, intruder", [
    (["a", "b"], b"a"),  # bytes never match a str label
    ([0, 1], True),  # a bool never matches an int label
    ([False, True], 1),  # nor an int a bool label
    (["a", "b"], None),  # a null
    (["a", "b"], "c"),  # an unknown label
    ([0.5, 1.5], float("nan")),
])
def test_problems_among_shared_objects_are_counted_like_distinct_ones(labels, intruder):
    import pmlkit
    from pmlkit.errors import DataError

    mech = pmlkit.Mechanism(np.full((2, 2), 0.5), tuple(labels), tuple(labels))
    x = np.random.default_rng(0).integers(0, 3, 20_000)
    shared, distinct = _shared_and_distinct([*labels, intruder], x)
    errors = []
    for vals in (shared, distinct):
        with pytest.raises(DataError) as info:
            pmlkit.privatize(mech, vals, rng=1)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert str(int((x == 2).sum())) in errors[0]


def test_privatize_without_report_skips_the_digest_but_draws_the_same(monkeypatch):
    """privatize() of a numpy array needs no report: the mechanism's canonical JSON (its
    digest) is not computed, and the values equal privatize_with_report's."""
    import pmlkit
    from pmlkit.privatization import privatize_with_report

    w = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    mech = pmlkit.Mechanism(w, ("a", "b"), ("x", "y", "z"))
    x = np.array(["a", "b"] * 3000, dtype=object)
    ref, report = privatize_with_report(mech, x, rng=4)
    assert sum(report.output_counts.values()) == 6000
    assert report.output_counts == {v: int((ref == v).sum()) for v in ("x", "y", "z")}

    def boom(self):
        raise AssertionError("digest computed")

    monkeypatch.setattr(pmlkit.Mechanism, "to_dict", boom)
    fresh = pmlkit.Mechanism(w, ("a", "b"), ("x", "y", "z"))  # nothing memoised
    np.testing.assert_array_equal(pmlkit.privatize(fresh, x, rng=4), ref)
    np.testing.assert_array_equal(pmlkit.privatize(fresh, list(x), rng=4), ref)


def test_draw_into_out():
    s = AliasSampler(np.array([[0.5, 0.5], [0.9, 0.1]]))
    codes = np.arange(1000) % 2
    out = np.full(1000, -7, dtype=np.intp)
    assert s.draw(codes, np.random.default_rng(2), out=out) is out
    np.testing.assert_array_equal(out, s.draw(codes, np.random.default_rng(2)))
    with pytest.raises(ValidationError, match="out must be"):
        s.draw(codes, np.random.default_rng(2), out=np.empty(999, dtype=np.intp))


def test_chunks_encoded_ahead_give_the_sequential_values_and_counts(monkeypatch):
    """Chunks are encoded one ahead in a second thread: the outputs under a seed and the
    problems counted over every chunk are those of one whole-array pass."""
    import pandas as pd
    import pyarrow as pa

    import pmlkit
    from pmlkit.errors import DataError
    from pmlkit.privatization import _core

    names = ("a", "b", "c")
    mech = pmlkit.Mechanism(np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]),
                            names, names)
    pool = np.array(names, dtype=object)
    x = pool[np.random.default_rng(1).integers(0, 3, 10_000)]
    whole = {kind: pmlkit.privatize(mech, v, rng=3) for kind, v in
             (("obj", x), ("pa", pa.array(x.tolist())), ("pd", pd.Series(x, dtype="str")))}
    monkeypatch.setattr(_core, "CHUNK_ROWS", 999)  # 11 chunks
    np.testing.assert_array_equal(pmlkit.privatize(mech, x, rng=3), whole["obj"])
    assert pmlkit.privatize(mech, pa.array(x.tolist()), rng=3).to_pylist() == \
        whole["pa"].to_pylist()
    assert pmlkit.privatize(mech, pd.Series(x, dtype="str"), rng=3).tolist() == \
        whole["pd"].tolist()
    bad = x.copy()
    bad[[5, 2500, 9999]] = "zz"  # unknown values in three different chunks
    bad[7000] = None
    for vals in (bad, pa.array(bad.tolist())):
        with pytest.raises(DataError, match=r"'zz' appears in 3 rows.*1 row holds a null"):
            pmlkit.privatize(mech, vals, rng=3)


@pytest.mark.parametrize("k, distinct", [(64, 2), (100, 7), (300, 3), (70, 2000)])
def test_fast_digest_equals_the_documents_digest(k, distinct):
    """The report's digest (written once per distinct matrix entry) is the digest of the
    mechanism's JSON document, byte for byte; including -0.0, subnormal and tiny
    entries, string labels with JSON escapes and parameters."""
    import pmlkit
    from pmlkit._mechanism_file import fast_digest

    g = np.random.default_rng(k)
    values = np.concatenate([[0.0, -0.0, 5e-324, 1e-300, 0.1], g.random(distinct)])[:distinct]
    w = values[g.integers(0, distinct, (k, k))] + 1e-3
    w[:, 0] = 0.0
    w[:, 1] = -0.0
    w /= w.sum(axis=1, keepdims=True)
    labels = tuple(f'x"{i}\\\u00e9' for i in range(k))
    mech = pmlkit.Mechanism(w, labels, labels, designer="test", parameters={"eps": 0.5})
    fast = fast_digest(mech)
    assert fast is None or fast == mech.to_dict()["sha256"]
    if k * k >= 4096 and distinct <= k * k // 8:
        assert fast is not None
    from pmlkit.privatization._core import mech_digest

    assert mech_digest(mech) == mech.to_dict()["sha256"]


def test_huge_unsigned_values_never_match_negative_labels():
    """uint64 values above 2**63 - 1 wrap to negative int64: 2**64 - 3 must not be taken
    for the label -3."""
    import pmlkit
    from pmlkit.errors import DataError

    labels = tuple(range(-5, 6))
    mech = pmlkit.Mechanism(np.full((11, 11), 1 / 11), labels, labels)
    vals = np.array([0, 2**64 - 3, 1], dtype=np.uint64)
    with pytest.raises(DataError, match="18446744073709551613"):
        pmlkit.privatize(mech, vals, rng=0)
    ok = np.array([0, 5, 1], dtype=np.uint64)
    assert set(pmlkit.privatize(mech, ok, rng=0).tolist()) <= set(labels)


def test_categorical_with_permuted_categories_matches_the_numpy_path():
    """pandas categorical codes (int8) go through the categories' input indices inside
    the draw: the values equal the object-array path's under one seed, across blocks."""
    import pandas as pd

    import pmlkit

    labels = ("lo", "mid", "hi", "top")
    w = np.array([[0.7, 0.1, 0.1, 0.1], [0.2, 0.5, 0.2, 0.1], [0.1, 0.1, 0.6, 0.2],
                  [0.25, 0.25, 0.25, 0.25]])
    mech = pmlkit.Mechanism(w, labels, labels)
    x = np.random.default_rng(1).integers(0, 4, 150_000)
    vals = np.array(labels, dtype=object)[x]
    ref = pmlkit.privatize(mech, vals, rng=11)
    cats = pd.Categorical(vals, categories=["top", "unused", "hi", "lo", "mid"])
    assert cats.codes.dtype == np.int8
    out = pmlkit.privatize(mech, pd.Series(cats), rng=11)
    assert out.astype(object).tolist() == ref.tolist()


def test_alias_tables_and_digest_are_built_once_per_mechanism(monkeypatch):
    """The per-mechanism cache was keyed by weak references, which Mechanism (slots, no
    __weakref__) refuses: every privatize call built the alias tables twice and hashed the
    matrix again. Now both are built once per mechanism object."""
    import pmlkit
    from pmlkit.privatization import _core

    built = []
    real = _core.AliasSampler

    def counting(matrix):
        built.append(1)
        return real(matrix)

    monkeypatch.setattr(_core, "AliasSampler", counting)
    mech = pmlkit.Mechanism(np.array([[0.75, 0.25], [0.25, 0.75]]), ("a", "b"), ("a", "b"))
    hashed = []
    real_digest = _core.fast_digest
    monkeypatch.setattr(_core, "fast_digest", lambda m: hashed.append(1) or real_digest(m))
    vals = np.array(["a", "b", "b"], dtype=object)
    first = [pmlkit.privatize_with_report(mech, vals, rng=3) for _ in range(3)]
    assert len(built) == 1 and len(hashed) == 1
    assert {r.mechanism_sha256 for _, r in first} == {mech.to_dict()["sha256"]}
    assert all(out.tolist() == first[0][0].tolist() for out, _ in first)


# -- 16-bit cells for large tables ----------------------------------------------------------

def _sixty_four_bit_only(w: np.ndarray, monkeypatch) -> AliasSampler:
    import pmlkit.sampler as sampler_mod

    with monkeypatch.context() as mp:
        mp.setattr(sampler_mod, "_COMPACT_MIN_CELLS", 1 << 62)
        s = AliasSampler(w)
    assert s._cells16 is None
    return s


@settings(max_examples=6, deadline=None)
@given(st.integers(129, 300), st.integers(0, 2**32 - 1), st.floats(0, 0.6))
def test_compact_cells_draw_what_the_64_bit_cells_draw(m, seed, zero_frac):
    """A large table decides most records on 16-bit cells and the ties on the 64-bit
    cells: the outputs equal the 64-bit path's word for word, and the alias method's in
    exact rationals."""
    w = _mechanism(200, m, seed, zero_frac)
    s = AliasSampler(w)
    assert s._cells16 is not None
    with pytest.MonkeyPatch.context() as mp:
        full = _sixty_four_bit_only(w, mp)
    codes = np.random.default_rng(seed + 1).integers(0, 200, 150_000)
    got = s.draw(codes, np.random.default_rng(seed))
    np.testing.assert_array_equal(got, full.draw(codes, np.random.default_rng(seed)))
    words = np.random.default_rng(seed).bit_generator.random_raw(codes.size)
    assert got[:2000].tolist() == _reference(s, codes[:2000], words[:2000])
    assert np.all(w[codes, got] > 0)


def test_compact_cells_on_ties_and_around_the_threshold():
    """Words whose coin equals the 64-bit cell's integer threshold, is one below or one
    above it (the coin's top bits then tie the 16-bit threshold): decided exactly as the
    64-bit cell decides (keep the column iff coin < threshold, else the alias), which is
    also what the 64-bit-only sampler draws. (At the threshold itself the rounded integer
    threshold, not the float probability, decides: the documented 2**-(64 - b) bound.)"""
    w = _mechanism(300, 300, 7, 0.3)
    s = AliasSampler(w)
    assert s._cells16 is not None
    c, b = s.n_columns, s.n_columns.bit_length() - 1
    thr = (s._cells >> np.uint64(b)).astype(object)  # each cell's 64 - b bit threshold
    g = np.random.default_rng(3)
    rows = g.integers(0, 300, 400)
    cols = g.integers(0, c, 400)
    codes, words = [], []
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        t = int(thr[i * c + j])
        for coin in (t - 1, t, t + 1):
            if 0 <= coin < 1 << (64 - b):
                codes.append(i)
                words.append((j << (64 - b)) | coin)
    codes_a = np.array(codes)
    got = s.draw(codes_a, _fixed_words(words))
    expect = []
    for i, r in zip(codes, words, strict=True):
        j, coin = r >> (64 - b), r & ((1 << (64 - b)) - 1)
        cell = int(s._cells[i * c + j])
        expect.append(j if coin < cell >> b else cell & (c - 1))
    assert got.tolist() == expect
    with pytest.MonkeyPatch.context() as mp:
        full = _sixty_four_bit_only(w, mp)
    assert full.draw(codes_a, _fixed_words(words)).tolist() == expect
    assert np.all(w[codes_a, got] > 0)


def test_compact_cells_with_remapped_codes():
    """Categorical codes through a large table: the reordered 16-bit and 64-bit rows draw
    what the input indices draw."""
    w = _mechanism(300, 300, 5, 0.2)
    s = AliasSampler(w)
    assert s._cells16 is not None
    table = np.random.default_rng(1).permutation(300)
    codes = np.random.default_rng(2).integers(0, 300, 100_000).astype(np.int16)
    got = s.draw(codes, np.random.default_rng(4), remap=table)
    np.testing.assert_array_equal(got, s.draw(table[codes], np.random.default_rng(4)))
