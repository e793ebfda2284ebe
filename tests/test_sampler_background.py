"""Shared-background alias cells (pmlkit.sampler.background_tables): the distribution each
row's cells realise, enumerated cell by cell from the stored words and compared with the
matrix; the draw against the documented rule on fixed words; chunks, code widths, remap
tables and every label kind against one another; mechanisms
that must keep the per-row tables, pinned to the outputs they drew before."""

from __future__ import annotations

import hashlib
from fractions import Fraction

import numpy as np
import pytest
import randomgen
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit.sampler import DRAW_BLOCK, AliasSampler, background_tables
from test_sampler_kernel import _mechanism  # random matrices with zeros


def krr(k: int, eps: float = 1.0) -> np.ndarray:
    w = np.expm1(eps) * np.eye(k) + 1.0
    return w / w.sum(axis=1, keepdims=True)


def background_plus_sparse(n: int, m: int, seed: int, spare: float, spikes: int,
                           zero_cols: int = 0) -> np.ndarray:
    """Rows = a common positive background of mass 1 - spare (some columns zero in every
    row) plus ``spare`` spread over at most ``spikes`` random columns per row."""
    g = np.random.default_rng(seed)
    back = g.gamma(2.0, size=m)
    back[g.choice(m, zero_cols, replace=False)] = 0.0
    back *= (1.0 - spare) / back.sum()
    w = np.tile(back, (n, 1))
    live = np.flatnonzero(back)
    for x in range(n):
        cols = g.choice(live, spikes, replace=False)
        w[x, cols] += spare * g.dirichlet(np.ones(spikes))
    return w / w.sum(axis=1, keepdims=True)


def cell_tables(s: AliasSampler) -> tuple[int, int, int, list[np.ndarray]]:
    """(bits, K, E, [thresholds, aliases, primaries] as flat arrays) of the cells a draw
    reads, with the Walker cells (no shared part) read as K = 0, E = C, primary = the
    position."""
    if s._bg is not None:
        k, e, cells, prim, b = s._bg
    else:
        b, k, e = s._bits, 0, s.n_columns
        cells = s._cells
        prim = np.tile(np.arange(s.n_columns, dtype=np.uint64), s.n_inputs)
    low = np.uint64((1 << b) - 1)
    return b, k, e, [cells >> np.uint64(b), cells & low, prim]


def realised_units(s: AliasSampler) -> np.ndarray:
    """P(out = o | x) * 2**64 for every row, from the stored cells alone: row x's position
    j in 0..C-1 (probability 1/C) reads shared cell j if j < K, else cell K + x E + (j - K);
    a cell with threshold t keeps its primary for the coins 0..t-1 of 2**(64 - b) and gives
    its alias otherwise. Object array of exact Python integers."""
    b, k, e, (thr, alias, prim) = cell_tables(s)
    unit = 1 << (64 - b)
    n, m = s.n_inputs, s.n_columns  # (Walker cells: padding columns, checked empty below)
    out = np.zeros((n, m), dtype=object)
    out[:] = 0

    def add(row: np.ndarray, idx: np.ndarray) -> None:
        for t, a, p in zip(thr[idx].tolist(), alias[idx].tolist(), prim[idx].tolist(),
                           strict=True):
            row[p] += t
            row[a] += unit - t

    shared = np.zeros(m, dtype=object)
    shared[:] = 0
    add(shared, np.arange(k))
    for x in range(n):
        row = shared.copy()
        add(row, k + x * e + np.arange(e))
        out[x] = row
    assert not out[:, s.n_outputs:].any()  # no output past the matrix's columns
    return out[:, :s.n_outputs]


def assert_realises(s: AliasSampler, w: np.ndarray) -> None:
    """The cells realise W: every row sums to 2**64 units exactly, P = 0 exactly where
    W = 0, and |P - W| <= 2**-(64 - b) + 2**-48 + |sum_o W[x, o] - 1| elsewhere (exact
    rationals; 2**-48: entries within float noise of their column's minimum are taken
    as it, the row's largest entry absorbing the difference)."""
    b = cell_tables(s)[0]
    units = realised_units(s)
    n, m = w.shape
    scale = Fraction(1, 1 << 64)
    for x in range(n):
        row = [Fraction(float(v)) for v in w[x]]
        slack = Fraction(1, 1 << (64 - b)) + Fraction(1, 1 << 48) + abs(sum(row) - 1)
        assert sum(units[x]) == 1 << 64
        for o in range(m):
            got = units[x, o] * scale
            if row[o] == 0:
                assert got == 0, (x, o)
            else:
                assert got > 0 and abs(got - row[o]) <= slack, (x, o, got, row[o])


def assert_realises_fast(s: AliasSampler, w: np.ndarray) -> None:
    """assert_realises for large matrices: the same bounds on the exact integer units,
    compared in floats with 2**12 units of slack for the conversion (the bound itself is
    2**(b) units or more)."""
    b = cell_tables(s)[0]
    units = realised_units(s)
    assert all(sum(units[x]) == 1 << 64 for x in range(units.shape[0]))
    p = units.astype(np.float64)
    assert np.array_equal(p == 0, w == 0)
    slack = 2.0 ** b + 2.0**16 + np.abs(w.sum(axis=1, keepdims=True) - 1.0) * 2.0**64 \
        + 2.0**12
    assert np.all(np.abs(p - np.ldexp(w, 64)) <= slack)


# -- the realised distribution ----------------------------------------------------------------

@pytest.mark.parametrize("k", [3, 100, 128, 129, 700, 1000, 1023, 1024, 1500])
def test_krr_cells_realise_the_matrix(k):
    """k-ary randomized response: the large ones (n C >= 2**15 cells) share all but a few
    cells per row (1024 labels: one more bit of positions, since 1024 columns cannot fit
    1024 - E shared cells); the small ones keep per-row tables. Either way the cells
    realise W."""
    w = krr(k)
    s = AliasSampler(w)
    if k >= 129:  # (k = 128: 128 x 128 cells, below 2**15)
        assert s._bg is not None
        k_shared, e = s._bg[:2]
        c = 1 << s._bg[4]
        assert e <= c // 16 and k_shared + e == c
        assert s._walker is None  # the per-row tables are never built
    else:
        assert s._bg is None
    if k <= 129:
        assert_realises(s, w)
    else:
        assert_realises_fast(s, w)


def test_krr_1000_shares_1022_cells():
    """beta = sum_j min_x W[x, j] = 1000 / (e + 999) = 0.99828: E = ceil(1024 (1 - beta))
    = 2 cells per row; 1022 shared."""
    s = AliasSampler(krr(1000))
    assert s._bg is not None and s._bg[:2] == (1022, 2) and s._bg[4] == 10
    assert s._bg[2].nbytes + s._bg[3].nbytes == 10 * (1022 + 2000)


@settings(max_examples=12, deadline=None)
@given(st.integers(64, 90), st.integers(300, 1024), st.integers(0, 2**32 - 1),
       st.floats(0.0, 0.05), st.integers(1, 6), st.integers(0, 40))
def test_background_plus_sparse_cells_realise_the_matrix(n, m, seed, spare, spikes, zeros):
    w = background_plus_sparse(n, m, seed, spare, spikes, zeros)
    s = AliasSampler(w)
    assert s._bg is not None  # (at most 0.05 + rounding off the background: E <= C / 16)
    assert_realises_fast(s, w)


def test_exact_fractions_on_a_small_background_matrix():
    """Every entry compared as an exact rational (a 64 x 512 matrix with zero columns and
    rows equal to one another)."""
    w = background_plus_sparse(64, 300, 5, 0.03, 3, zero_cols=20)
    w[10] = w[11] = w[12]  # identical rows
    s = AliasSampler(w)
    assert s._bg is not None
    assert_realises(s, w)


def test_all_rows_equal_share_every_cell():
    """Rows all equal to the background (the only way a row can be the background itself):
    E = 0, every cell shared, and the cells realise the row."""
    g = np.random.default_rng(3)
    w = np.tile(g.dirichlet(np.full(1000, 5.0)), (64, 1))
    s = AliasSampler(w)
    assert s._bg is not None and s._bg[1] == 0 and s._bg[0] == 1 << s._bg[4]
    assert_realises_fast(s, w)
    codes = np.random.default_rng(1).integers(0, 64, 5000)
    words = np.random.default_rng(2).bit_generator.random_raw(5000)
    got = s.draw(codes, np.random.default_rng(2))
    assert got.tolist() == _rule(s, codes.tolist(), words.tolist())


def test_row_cells_at_the_cap_and_one_past_it():
    """A row part of 63.5 / 1024 needs E = 64 = C / 16 cells: shared cells; 64.5 / 1024
    needs 65 (and 129 of 2048): the per-row tables. (900 columns: all fit the K + 1 = 961
    shared outcomes.) The explicit cap gives the same boundary."""
    for spare, shared in ((63.5 / 1024, True), (64.5 / 1024, False)):
        w = background_plus_sparse(64, 900, 1, spare, 2)
        s = AliasSampler(w)
        assert (s._bg is not None) == shared
        if shared:
            assert s._bg[1] == 64
            assert_realises_fast(s, w)
    w = background_plus_sparse(64, 1000, 1, 10.5 / 1024, 2)
    assert background_tables(w, max_row_cells=11) is not None
    assert background_tables(w, max_row_cells=10) is None


def test_mechanisms_that_must_keep_per_row_tables():
    """No common background (Dirichlet rows, the identity, k-RR at eps = 5 with 13% of
    each row its own), or a table too small to gain: per-row Walker tables."""
    for w in (_mechanism(300, 300, 5, 0.2), np.eye(512), krr(1000, 5.0), krr(100)):
        assert AliasSampler(w)._bg is None


def test_previous_outputs_are_kept_for_mechanisms_without_a_background():
    """Seeded outputs of mechanisms that keep the per-row tables are those drawn before the
    shared-background cells existed (hashes computed with the earlier construction): a
    small matrix, and 300 x 300 and 1000 x 1000 matrices without a common background."""
    expected = {(5, 7, 1, 0.3): "3d8d954732612dc8", (300, 300, 5, 0.2): "1b861a2d16b55abc",
                (1000, 1000, 3, 0.0): "089c6b2cf7e864c6"}
    for (n, m, seed, z), digest in expected.items():
        s = AliasSampler(_mechanism(n, m, seed, z))
        codes = np.random.default_rng(seed + 1).integers(0, n, 200_000)
        out = s.draw(codes, np.random.default_rng(seed))
        got = hashlib.sha256(np.ascontiguousarray(out, dtype="<i8").tobytes()).hexdigest()
        assert got[:16] == digest, (n, m)


# -- the draw ----------------------------------------------------------------------------------

def _fixed_words(words: list[int]) -> np.random.Generator:
    it = iter(words)
    return np.random.Generator(randomgen.UserBitGenerator(lambda _state: next(it), 64))


def _rule(s: AliasSampler, rows: list[int], words: list[int]) -> list[int]:
    """The documented draw on each word, in Python integers from the stored cells."""
    b, k, e, (thr, alias, prim) = cell_tables(s)
    out = []
    for x, r in zip(rows, words, strict=True):
        j = r >> (64 - b)
        at = j if j < k else k + x * e + (j - k)
        coin = r & ((1 << (64 - b)) - 1)
        out.append(int(prim[at]) if coin < int(thr[at]) else int(alias[at]))
    return out


def test_draw_follows_the_rule_at_every_threshold():
    """Every position of a few rows with the coins 0, t - 1, t, t + 1 and the largest:
    the draw gives what the rule gives, never an impossible output."""
    w = background_plus_sparse(64, 700, 2, 0.04, 3, zero_cols=30)
    s = AliasSampler(w)
    assert s._bg is not None
    b, k, e, (thr, _, _) = cell_tables(s)
    top = (1 << (64 - b)) - 1
    rows, words = [], []
    for x in (0, 17, 63):
        for j in range(1 << b):
            t = int(thr[j if j < k else k + x * e + (j - k)])
            for coin in {0, t - 1, t, t + 1, top}:
                if 0 <= coin <= top:
                    rows.append(x)
                    words.append((j << (64 - b)) | coin)
    codes = np.array(rows)
    got = s.draw(codes, _fixed_words(words))
    assert got.tolist() == _rule(s, rows, words)
    assert np.all(w[codes, got] > 0)


@pytest.mark.parametrize("k", [300, 1000, 1024])
def test_chunks_widths_and_remap_draw_alike(k):
    w = krr(k)
    s = AliasSampler(w)
    assert s._bg is not None
    n = 3 * DRAW_BLOCK + 77
    codes = np.random.default_rng(k).integers(0, k, n)
    g = np.random.default_rng(1)
    ref = s.draw(codes, g)
    words = np.random.default_rng(1).bit_generator.random_raw(n + 1)
    assert ref[:3000].tolist() == _rule(s, codes[:3000].tolist(), words[:3000].tolist())
    assert g.bit_generator.random_raw() == words[-1]  # one word per record
    g = np.random.default_rng(1)  # chunks continue one stream
    parts = [s.draw(codes[a:b], g) for a, b in ((0, 1000), (1000, 70_000), (70_000, n))]
    np.testing.assert_array_equal(np.concatenate(parts), ref)
    for dtype in (np.int16, np.uint16, np.int32):
        np.testing.assert_array_equal(
            s.draw(codes.astype(dtype), np.random.default_rng(1)), ref)
    table = np.random.default_rng(2).permutation(k)  # categorical codes -> inputs
    inv = np.argsort(table)
    for few in (True, False):
        t = table if few else np.concatenate([table, np.zeros(5 * k, dtype=table.dtype)])
        got = s.draw(inv[codes].astype(np.int16), np.random.default_rng(1), remap=t)
        np.testing.assert_array_equal(got, ref)


def test_bad_codes_are_refused_before_any_word():
    from pmlkit.errors import ValidationError

    s = AliasSampler(krr(1000))
    for bad in (-1, 1000):
        codes = np.zeros(DRAW_BLOCK + 5, dtype=np.int64)
        codes[-1] = bad
        g = np.random.default_rng(0)
        with pytest.raises(ValidationError, match=rf"input indices in 0\.\.999, got {bad}"):
            s.draw(codes, g)
        assert g.bit_generator.random_raw() == \
            np.random.default_rng(0).bit_generator.random_raw()
    with pytest.raises(ValidationError, match=r"indices into remap in 0\.\.2, got 3"):
        s.draw(np.array([0, 3] * 70_000), np.random.default_rng(0), remap=[0, 1, 2])


def test_every_label_kind_draws_the_int64_outputs():
    """String labels as an object array, Arrow, pandas string[pyarrow], categorical and
    polars: the outputs of the int64 labels 0..k-1 mapped through the labels."""
    import pandas as pd
    import pyarrow as pa

    k, n = 1000, 200_000
    w = krr(k)
    names = tuple(f"v{i}" for i in range(k))
    ints = pmlkit.Mechanism(w)
    strs = pmlkit.Mechanism(w, names, names)
    x = np.random.default_rng(4).integers(0, k, n)
    pool = np.array(names, dtype=object)
    ref = pool[pmlkit.privatize(ints, x, rng=8)].tolist()
    assert pmlkit.privatize(strs, pool[x], rng=8).tolist() == ref
    assert pmlkit.privatize(strs, pa.array(pool[x].tolist()), rng=8).to_pylist() == ref
    assert pmlkit.privatize(strs, pd.Series(pool[x], dtype="string[pyarrow]"),
                            rng=8).tolist() == ref
    cats = pd.Series(pd.Categorical(pool[x], categories=list(names[::-1])))
    assert pmlkit.privatize(strs, cats, rng=8).astype(object).tolist() == ref
    pl = pytest.importorskip("polars")
    assert pmlkit.privatize(strs, pl.Series("s", pool[x].tolist()), rng=8).to_list() == ref


def test_krr_frequencies_on_a_million_draws():
    """A coarse check beside the enumeration: the kept fraction of k-RR at k = 1000."""
    k = 1000
    codes = np.random.default_rng(0).integers(0, k, 1_000_000)
    out = AliasSampler(krr(k)).draw(codes, np.random.default_rng(1))
    p = np.e / (np.e + k - 1)
    assert abs(np.mean(out == codes) - p) < 5 * np.sqrt(p * (1 - p) / codes.size)


@pytest.mark.parametrize("k", [3, 255, 256, 1000])
def test_label_counts_equal_bincount(k):
    """The counts of a release's outputs (count_outputs, and arrow_take's on the way)
    equal np.bincount, and the take gives the labels of the indices."""
    import pyarrow as pa

    from pmlkit.sampler import arrow_take, count_outputs

    idx = np.concatenate([np.full(70_001, k - 1),
                          np.random.default_rng(k).integers(0, k, 100_003)]).astype(np.intp)
    expect = np.bincount(idx, minlength=k).tolist()
    assert count_outputs(idx, k).tolist() == expect
    assert count_outputs(idx.astype(np.int16), k).tolist() == expect
    for labels in ([f"v{i}" for i in range(k)], [f"label number {i}" for i in range(k)]):
        counts = np.zeros(k, dtype=np.int64)
        out = arrow_take(pa.array(labels), idx, counts)
        assert counts.tolist() == expect and out.to_pylist() == [labels[i] for i in idx]
