"""Attacks on the shared-background alias tables of large mechanisms.

The realised law is recomputed here from the tables alone, by a reading of the cell layout
written for this file: position ``j`` of the ``C = 2**b`` positions (chosen by the top ``b``
bits of the word) is shared cell ``j`` if ``j < K``, else cell ``K + x E + (j - K)`` of row
``x``; a cell ``(t, primary, alias)`` keeps its primary for the ``t`` coins ``0..t-1`` of
``U = 2**(64 - b)`` and gives its alias otherwise. So in units of ``2**-64`` the primary
gets ``t`` and the alias ``U - t``, summed with exact integers (modulo ``2**64``, where the
deviation from ``W * 2**64`` is small, so exact). That law is compared with the matrix
(every output with ``W = 0`` never named by a cell with positive mass, every other output
named; deviation at most one cell's coin unit ``2**b`` plus the exact distance of the
float row sum from 1) on adversarial matrices: k-RR for k = 2..2000 and eps from 1e-3 to
20, a background plus sparse rows whose residual needs exactly ``E + 1`` outcomes, rows
equal to the background, zero columns, zeros in the background, entries of 1e-300 and
subnormals, equal columns, ``N != M``, ``M = 2**b``, one row, duplicated rows. The draw is
decoded word by word from the same words (a generator of the same seed), numpy and
compiled; a chi-square on millions of draws; the outputs are compared between the numpy
and compiled paths, threads, chunks, label kinds and the file path; bad codes are refused;
mechanisms that keep the per-row tables draw the outputs they drew before (pinned).
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit import sampler as sampler_mod
from pmlkit.errors import ValidationError
from pmlkit.sampler import DRAW_BLOCK, AliasSampler

background_tables = sampler_mod.background_tables


# -- independent helpers -------------------------------------------------------------------

def krr(k: int, eps: float) -> np.ndarray:
    w = np.expm1(eps) * np.eye(k) + 1.0
    out: np.ndarray = w / w.sum(axis=1, keepdims=True)
    return out


def shared_cells(s: AliasSampler) -> Any:
    """``(K, E, b)`` of the shared background cells a sampler draws from, or None."""
    return cast(Any, s).background


def background_plus_sparse(n: int, m: int, seed: int, spare: float, spikes: int
                           ) -> np.ndarray:
    """A common background of mass ``1 - spare`` plus ``spare`` on ``spikes`` random
    columns of each row (normalised once, so rows share the background bit for bit)."""
    g = np.random.default_rng(seed)
    back = g.gamma(2.0, size=m)
    back *= (1.0 - spare) / back.sum()
    w = np.tile(back, (n, 1))
    for x in range(n):
        cols = g.choice(m, spikes, replace=False)
        w[x, cols] += spare * g.dirichlet(np.ones(spikes))
    return w


def row_sum_error_units(w: np.ndarray) -> np.ndarray:
    """``|sum_o W[x, o] - 1| * 2**64`` per row from an exact sum: ``math.fsum`` rounds the
    exact sum once and a second fsum of the row minus that value gives the remainder to
    within 2**-53 of itself (far below one unit here)."""
    out = np.empty(w.shape[0])
    for x, row in enumerate(w.tolist()):
        s = math.fsum(row)
        rest = math.fsum([*row, -s])
        out[x] = abs((s - 1.0) + rest) * 2.0**64
    return out


def realised_units(w: np.ndarray, bits: int, found: tuple[Any, ...]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(dev, named)``: the realised mass of ``(x, o)`` minus ``floor(W[x, o] 2**64)``
    in units of ``2**-64`` (int64; exact, as the sums run modulo ``2**64`` and the true
    deviation is small), and whether some cell of row ``x`` gives ``o`` positive mass."""
    k, e, cells, prim = found
    n, m = w.shape
    width, unit = 1 << bits, 1 << (64 - bits)
    cells = np.asarray(cells)
    assert cells.dtype == np.uint64 and cells.shape[0] == k + n * e == len(prim)
    assert k + e == width
    thr = cells >> np.uint64(bits)
    alias = (cells & np.uint64(width - 1)).astype(np.int64)
    primary = np.asarray(prim).astype(np.int64)
    assert np.all(thr < np.uint64(unit))
    assert np.all(primary < m) and np.all(alias < m)  # no cell names a padding output
    keep, other = thr, np.uint64(unit) - thr
    real = np.zeros((n, m), dtype=np.uint64)
    named = np.zeros((n, m), dtype=bool)
    shared = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.add.at(shared, primary[:k], keep[:k])
        np.add.at(shared, alias[:k], other[:k])
    shared_named = np.zeros(m, dtype=bool)
    shared_named[primary[:k][keep[:k] > 0]] = True
    shared_named[alias[:k][other[:k] > 0]] = True
    real[:] = shared
    named[:] = shared_named
    if e:
        rows = np.repeat(np.arange(n), e)
        pk, ak, kk, ok = primary[k:], alias[k:], keep[k:], other[k:]
        with np.errstate(over="ignore"):
            np.add.at(real, (rows, pk), kk)
            np.add.at(real, (rows, ak), ok)
        named[rows[kk > 0], pk[kk > 0]] = True
        named[rows[ok > 0], ak[ok > 0]] = True
    scaled = np.floor(np.ldexp(w, 64))  # exact (a power-of-two scaling), < 2**64
    high = scaled >= 2.0**63
    scaled[high] -= 2.0**63
    floor_units = scaled.astype(np.uint64)
    floor_units[high] += np.uint64(1 << 63)
    return (real - floor_units).view(np.int64), named


def assert_tables_realise(w: np.ndarray, bits: int, found: tuple[Any, ...], *,
                          slack_units: float = 0.0) -> float:
    """The tables realise W: zero exactly where W is zero, positive elsewhere, and within
    ``2**bits`` units (one coin step of a cell) plus the exact row-sum error (plus
    ``slack_units``) per entry. Returns the largest deviation in units."""
    dev, named = realised_units(w, bits, found)
    assert np.array_equal(named, w > 0), "an output's support differs from the matrix's"
    frac = np.ldexp(w, 64) - np.floor(np.ldexp(w, 64))
    err = np.abs(dev.astype(np.float64) - frac)
    allowed = 2.0**bits + row_sum_error_units(w)[:, None] + 1.0 + slack_units
    worst = np.unravel_index(int(np.argmax(err - allowed)), err.shape)
    assert np.all(err <= allowed), (worst, float(err[worst]), float(allowed[worst]))
    return float(err.max())


def default_bits(m: int) -> int:
    return max(1, (m - 1).bit_length())


def draw(s: AliasSampler, codes: np.ndarray, seed: int,
         remap: np.ndarray | None = None) -> np.ndarray:
    """AliasSampler.draw with the words of ``default_rng(seed)``."""
    return s.draw(codes, np.random.default_rng(seed), remap=remap)


def decode(w: np.ndarray, bits: int, codes: np.ndarray, seed: int) -> np.ndarray:
    """The outputs of the cells of ``background_tables(w, bits)`` for the words of
    ``default_rng(seed)``, one word per record in order, decoded with Python integers."""
    k, e, cells, prim = cast(Any, background_tables(w, bits))
    words = np.asarray(np.random.default_rng(seed).bit_generator.random_raw(
        codes.shape[0])).tolist()
    unit = 1 << (64 - bits)
    cl, pl = cells.tolist(), prim.tolist()
    out = []
    for x, r in zip(codes.tolist(), words, strict=True):
        j = r >> (64 - bits)
        at = j if j < k else k + x * e + (j - k)
        coin = r & (unit - 1)
        out.append(pl[at] if coin < (cl[at] >> bits) else cl[at] & ((1 << bits) - 1))
    return np.array(out)


# -- the realised law ----------------------------------------------------------------------

@pytest.mark.parametrize("k,eps", [(k, eps) for k in (2, 3, 255, 256, 257, 1000, 1024)
                                   for eps in (1e-3, 0.5, 3.0, 20.0)]
                         + [(2000, 1e-3), (2000, 3.0)])
def test_krr_tables_realise_the_matrix(k: int, eps: float) -> None:
    w = krr(k, eps)
    used = shared_cells(AliasSampler(w))
    b0 = default_bits(k)
    found_any = False
    for b in (b0, b0 + 1):
        found = background_tables(w, b)
        if used is not None and used[2] == b:
            assert found is not None and found[:2] == used[:2]
        if found is not None:
            found_any = True
            assert_tables_realise(w, b, found)
    # near-uniform rows over many labels always share a background
    if k >= 255 and eps <= 0.5:
        assert found_any and used is not None
    if eps >= 20.0:  # nearly deterministic rows share next to nothing
        assert used is None


def _adversarial() -> dict[str, np.ndarray]:
    cases: dict[str, np.ndarray] = {}
    for m, e in ((300, 1), (1000, 2), (1024, 3)):
        # residual mass of about E cells spread over exactly E + 1 (or E + 2) outcomes
        width = 1 << default_bits(m)
        cases[f"E+1 outcomes m={m}"] = background_plus_sparse(64, m, m, e / width, e + 1)
        cases[f"E+2 outcomes m={m}"] = background_plus_sparse(64, m, m + 1, e / width, e + 2)
    w = krr(1000, 1.0)  # zero columns (every row but one), a zero diagonal entry
    for c in (10, 20):
        for x in range(1000):
            if x != c:
                w[x, x] += w[x, c]
                w[x, c] = 0.0
    w[11, 12] += w[11, 11]
    w[11, 11] = 0.0
    cases["zero columns and entries"] = w
    w = krr(1000, 1.0)  # 1e-300 everywhere in a column, subnormals, tiny entries
    for x in range(1000):
        if x != 7:
            w[x, x] += w[x, 7] - 1e-300
            w[x, 7] = 1e-300
    for x, c, v in ((4, 8, 5e-324), (5, 9, 2.2e-308), (6, 9, 1e-310), (3, 0, 1e-300)):
        w[x, x] += w[x, c] - v
        w[x, c] = v
    cases["1e-300 and subnormals"] = w
    w = background_plus_sparse(80, 700, 4, 0.01, 3)
    w[:, 11] = w[0, 11]  # one column all equal (its background is the whole column)
    cases["a column all equal"] = w
    cases["all rows equal"] = np.tile(background_plus_sparse(1, 1000, 5, 0.0, 1)[0], (50, 1))
    w = background_plus_sparse(40, 1000, 6, 0.01, 2)
    w[20:] = w[:20]
    cases["duplicated rows"] = w
    w = krr(1000, 1.0)
    w[7] = w[8]
    cases["k-RR with a duplicated row"] = w
    cases["one row"] = background_plus_sparse(1, 1000, 7, 0.01, 2)
    cases["N > M"] = background_plus_sparse(3000, 256, 8, 0.02, 2)
    cases["N < M = 2**b"] = background_plus_sparse(10, 2048, 9, 0.01, 2)
    cases["M = 2**b, many rows"] = background_plus_sparse(200, 512, 10, 0.01, 3)
    cases["rows on the background"] = background_plus_sparse(64, 1000, 11, 1e-12, 2)
    w = background_plus_sparse(64, 1000, 12, 0.02, 2)
    w[5:9] = np.tile(w[:, :].min(axis=0), (4, 1))
    w[5:9, 0] += 1.0 - w[5:9].sum(axis=1)  # rows equal to the background but for one cell
    cases["rows equal to the background"] = w
    return cases


ADVERSARIAL = _adversarial()


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_adversarial_tables_realise_the_matrix(name: str) -> None:
    w = ADVERSARIAL[name]
    m = w.shape[1]
    b0 = default_bits(m)
    found_bits = []
    for b in (b0, b0 + 1, b0 + 2):
        found = background_tables(w, b)
        if found is not None:
            found_bits.append(b)
            assert_tables_realise(w, b, found)
    assert found_bits, "every case here has a background worth sharing"
    used = shared_cells(AliasSampler(w))
    if used is not None:
        assert used[2] in found_bits


@settings(max_examples=int(os.environ.get("ATTACK6_EXAMPLES", "25")), deadline=None)
@given(n=st.integers(1, 60), m=st.sampled_from([2, 3, 17, 100, 255, 256, 600, 1024, 1100]),
       seed=st.integers(0, 2**32 - 1),
       spare=st.sampled_from([0.0, 1e-9, 1e-4, 0.003, 0.02, 0.06]),
       spikes=st.integers(1, 6), zero_frac=st.sampled_from([0.0, 0.02, 0.3]),
       tiny=st.sampled_from([0.0, 1e-300, 5e-324, 1e-17]), extra_bits=st.integers(0, 2),
       cap=st.sampled_from([None, None, None, 0, 1, 3, 40]), holes=st.integers(0, 3))
def test_random_background_matrices_realise_the_matrix(n: int, m: int, seed: int,
                                                       spare: float, spikes: int,
                                                       zero_frac: float, tiny: float,
                                                       extra_bits: int,
                                                       cap: int | None, holes: int
                                                       ) -> None:
    """Random backgrounds (some columns zero in every row, some entries zero in one row,
    tiny entries) plus sparse rows, every table width and row-cell cap: whenever tables
    are returned they realise the matrix."""
    g = np.random.default_rng(seed)
    back = g.gamma(2.0, size=m)
    back[g.random(m) < zero_frac] = 0.0  # columns zero in every row
    if not back.any():
        back[0] = 1.0
    back *= (1.0 - spare) / back.sum()
    w = np.tile(back, (n, 1))
    for x in range(n):  # (every row's own part, then holes: the mass moved, not rescaled)
        cols = g.choice(m, min(spikes, m), replace=False)
        w[x, cols] += spare * g.dirichlet(np.ones(cols.size))
    for _ in range(holes + (1 if tiny else 0)):  # an entry zero (or tiny) in one row only
        x, c = int(g.integers(0, n)), int(g.integers(0, m))
        put = tiny if _ == holes else 0.0
        if w[x, c] > put:
            top = int(np.argmax(w[x]))
            if top != c:
                w[x, top] += w[x, c] - put
                w[x, c] = put
    b = default_bits(m) + extra_bits
    found = background_tables(w, b, max_row_cells=cap)
    if os.environ.get("ATTACK6_DEBUG"):
        print("FOUND" if found is not None else "NONE", n, m, spare, cap)
    if found is not None:
        assert found[1] <= ((1 << b) // 16 if cap is None else cap)
        assert_tables_realise(w, b, found)


def test_a_row_on_one_output_with_every_cell_allowed() -> None:
    """A row on one output up to float rounding (1 - 2**-53 and a zero) with every cell
    allowed as a row cell: its rounding residue once wrapped the row's mass to 0 in
    uint64 (IndexError); now either no shared tables or tables that realise the row."""
    w = np.array([[1.0 - 2.0**-53, 0.0]])
    found = background_tables(w, 1, max_row_cells=2)
    if found is not None:
        assert_tables_realise(w, 1, found)


def test_rows_equal_to_the_background_need_no_row_cells() -> None:
    w = ADVERSARIAL["all rows equal"]
    found = background_tables(w, default_bits(w.shape[1]))
    assert found is not None
    k, e, cells, _ = found
    assert (k, e, cells.shape[0]) == (1024, 0, 1024)
    s = AliasSampler(w)
    assert shared_cells(s) == (1024, 0, 10)


def test_residual_on_exactly_e_plus_one_outcomes() -> None:
    """A background of exactly K cells' mass (floats exact: 1024 columns, 2**11 cells)
    leaves each row a residual of E = 2 cells on E + 1 = 3 outcomes (the packing's edge,
    two cells for three outcomes); a fourth outcome does not fit two cells."""
    w = np.full((40, 1024), 2046.0 * 2.0**-21)  # background: 2046 of 2048 cells exactly
    g = np.random.default_rng(0)
    for x in range(40):
        cols = g.choice(1024, 3, replace=False)
        w[x, cols] += 2.0**-10 * np.array([0.5, 0.375, 0.125])  # 2 cells of mass on 3
    assert np.all(w.sum(axis=1) == 1.0)
    found = background_tables(w, 11, max_row_cells=2)
    assert found is not None and found[:2] == (2046, 2)
    assert_tables_realise(w, 11, found)
    # (error bound: the floats are exact here, so only the cells' own rounding remains)
    dev, _ = realised_units(w, 11, found)
    assert np.abs(dev).max() == 0  # every mass is a whole number of units: exact
    w2 = w.copy()
    w2[0] = 2046.0 * 2.0**-21
    w2[0, :4] += 2.0**-10 * np.array([0.5, 0.25, 0.125, 0.125])
    assert background_tables(w2, 11, max_row_cells=2) is None  # 4 outcomes need 3 cells


def test_snapped_entries_stay_within_the_documented_bound() -> None:
    """Entries a hair (2**-49, relative) above their column's minimum are taken as the
    minimum: the realised law then differs from W by more than one coin step, but stays
    within the bound the tables document (2**-48 of slack)."""
    w = krr(300, 1.0)
    w[0, 1:] = w[0, 1] * (1 + 2.0**-49)
    w[0, 0] = 1.0 - w[0, 1:].sum()
    b = shared_cells(AliasSampler(w))[2]
    found = background_tables(w, b)
    assert found is not None
    assert_tables_realise(w, b, found, slack_units=2.0**16)


# -- the draw ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["zero columns and entries", "1e-300 and subnormals",
                                  "N > M", "rows equal to the background",
                                  "all rows equal"])
def test_draw_decodes_the_tables_word_by_word(name: str) -> None:
    w = ADVERSARIAL[name]
    s = AliasSampler(w)
    assert shared_cells(s) is not None
    n = 20_000
    codes = np.random.default_rng(3).integers(0, w.shape[0], n)
    got = draw(s, codes, 11)
    np.testing.assert_array_equal(got, decode(w, shared_cells(s)[2], codes, 11))
    assert np.all(w[codes, got] > 0)


def test_code_dtypes_and_byte_orders_draw_alike() -> None:
    """Codes as int8..uint64, big-endian or strided draw the outputs of native int64 codes
    (a non-native array viewed as native words would read another row's cells)."""
    w = ADVERSARIAL["N > M"]
    s = AliasSampler(w)
    codes = np.random.default_rng(9).integers(0, w.shape[0], 3 * DRAW_BLOCK + 5)
    ref = draw(s, codes, 12)
    np.testing.assert_array_equal(ref, decode(w, shared_cells(s)[2], codes, 12))
    for dt in (">i8", ">i4", ">u2", "<u2", "<i2", "<u4", "<u8", ">u8"):
        np.testing.assert_array_equal(draw(s, codes.astype(dt), 12),
                                      ref, err_msg=dt)
    strided = np.repeat(codes, 2)[::2]
    np.testing.assert_array_equal(draw(s, strided, 12), ref)


def test_zero_outputs_never_drawn_in_two_million_records() -> None:
    w = ADVERSARIAL["zero columns and entries"]
    s = AliasSampler(w)
    codes = np.random.default_rng(5).integers(0, 1000, 2_000_000)
    out = draw(s, codes, 6)
    assert np.all(w[codes, out] > 0)
    assert not np.any(out[codes != 10] == 10) and not np.any(out[codes == 11] == 11)


@pytest.mark.parametrize("name,rows", [("k-RR 300 at eps 0.5", (0, 299)),
                                       ("zero columns and entries", (11, 10, 500)),
                                       ("E+1 outcomes m=300", (0, 63))])
def test_chi_square_on_millions_of_draws(name: str, rows: tuple[int, ...]) -> None:
    from scipy.stats import chisquare

    w = krr(300, 0.5) if name.startswith("k-RR") else ADVERSARIAL[name]
    s = AliasSampler(w)
    assert shared_cells(s) is not None
    for i, x in enumerate(rows):
        n = 2_000_000
        out = s.draw(np.full(n, x, dtype=np.intp), np.random.default_rng(100 + i))
        counts = np.bincount(out, minlength=w.shape[1])
        live = w[x] > 0
        assert counts[~live].sum() == 0
        expect = w[x, live] / w[x, live].sum() * n
        # pool outcomes expected fewer than 5 times into one bin
        small = expect < 5
        obs = np.append(counts[live][~small], counts[live][small].sum())
        exp = np.append(expect[~small], expect[small].sum())
        if exp[-1] == 0:
            obs, exp = obs[:-1], exp[:-1]
        assert chisquare(obs, exp).pvalue > 1e-6, (name, x)


def test_bad_codes_refused() -> None:
    s = AliasSampler(krr(1000, 1.0))
    assert shared_cells(s) is not None
    n = 3 * DRAW_BLOCK + 11
    for bad, where in ((-1, 0), (1000, n - 1), (1000, 2 * DRAW_BLOCK + 3), (-5, n - 1),
                       (2**40, DRAW_BLOCK)):
        codes = np.zeros(n, dtype=np.int64)
        codes[where] = bad
        with pytest.raises(ValidationError, match=rf"0\.\.999, got {bad}"):
            draw(s, codes, 0)
    for dtype, bad in ((np.int32, -1), (np.int16, -3)):
        codes = np.zeros(n, dtype=dtype)
        codes[-1] = bad
        with pytest.raises(ValidationError, match=rf"got {bad}"):
            draw(s, codes, 0)
    with pytest.raises(ValidationError, match=r"remap in 0\.\.2, got 3"):
        draw(s, np.array([0, 1, 2, 3] * 50_000), 0,
             remap=np.array([5, 6, 7]))


# -- one seed, one release: paths, kinds, threads, chunks, files ---------------------------

def _release_hashes(k: int, n: int) -> tuple[dict[str, str], object]:
    """sha256 of the outputs (as labels) of every label kind, and of chunked and whole
    sampler draws, under one seed."""
    import json

    import pandas as pd
    import pyarrow as pa

    w = krr(k, 1.0)
    names = [f"v{i}" for i in range(k)]
    x = np.random.default_rng(4).integers(0, k, n)
    pool = np.array(names, dtype=object)
    ints = pmlkit.Mechanism(w)
    strs = pmlkit.Mechanism(w, names, names)
    out: dict[str, list[Any]] = {}
    out["int64"] = pool[pmlkit.privatize(ints, x, rng=8)].tolist()
    out["object"] = pmlkit.privatize(strs, pool[x], rng=8).tolist()
    out["arrow"] = pmlkit.privatize(strs, pa.array(pool[x].tolist()), rng=8).to_pylist()
    out["pandas"] = pmlkit.privatize(strs, pd.Series(pool[x], dtype="string[pyarrow]"),
                                     rng=8).tolist()
    cats = pd.Series(pd.Categorical(pool[x], categories=names[::-1]))
    out["categorical"] = pmlkit.privatize(strs, cats, rng=8).astype(object).tolist()
    try:
        import polars as pl
    except ImportError:
        pass
    else:
        out["polars"] = pmlkit.privatize(strs, pl.Series("s", pool[x].tolist()),
                                         rng=8).to_list()
        cat = pl.Series("s", pool[x].tolist(), dtype=pl.Categorical)
        out["polars-cat"] = [str(v) for v in pmlkit.privatize(strs, cat, rng=8).to_list()]
        # a LazyFrame draws from its own child stream per column (positioned by row), so
        # its release is compared across paths only (key "lazy:")
        lazy = pl.LazyFrame({"s": pool[x].tolist()})
        out["lazy:frame"] = pmlkit.privatize(strs, lazy, columns="s", rng=8).collect() \
            .get_column("s").to_list()
    s = AliasSampler(w)
    g = np.random.default_rng(8)
    chunked = np.concatenate([s.draw(x[a:b], g) for a, b in
                              ((0, 1000), (1000, 70_000), (70_000, n))])
    out["chunked"] = pool[chunked].tolist()
    out["sampler"] = pool[s.draw(x, np.random.default_rng(8))].tolist()
    return ({key: hashlib.sha256(json.dumps(v).encode()).hexdigest()
             for key, v in out.items()}, shared_cells(s))


def test_one_seed_one_release_across_kinds_and_chunks() -> None:
    """Every label kind, chunked and whole draws give the int64 labels' outputs."""
    k, n = 1000, DRAW_BLOCK + 8_000  # (two blocks)
    hashes, bg = _release_hashes(k, n)
    assert bg == (1022, 2, 10)
    assert len({v for key, v in hashes.items() if not key.startswith("lazy:")}) == 1, hashes


def test_file_release_equals_the_in_memory_release(tmp_path: Path) -> None:
    """privatize_file (Parquet and CSV) and the command line under one seed release the
    values pmlkit.privatize releases in memory, for a mechanism on shared background
    cells."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    k, n = 256, 140_000
    names = [f"v{i}" for i in range(k)]
    mech = pmlkit.Mechanism(krr(k, 1.0), names, names)
    assert shared_cells(AliasSampler(krr(k, 1.0))) is not None
    x = np.random.default_rng(4).integers(0, k, n)
    labels = np.array(names, dtype=object)[x]
    expect = pmlkit.privatize(mech, labels, rng=8).tolist()
    table = pa.table({"a": labels.tolist(), "keep": np.arange(n)})
    pq.write_table(table, tmp_path / "in.parquet")
    pmlkit.privatize_file(mech, tmp_path / "in.parquet", tmp_path / "out.parquet", "a", rng=8,
                          manifest=False)
    got = pq.read_table(tmp_path / "out.parquet")
    assert got.column("keep").to_pylist() == list(range(n))
    assert got.column("a").to_pylist() == expect
    pmlkit.privatize_file(mech, tmp_path / "in.parquet", tmp_path / "batches.parquet", "a",
                          rng=8, manifest=False, batch_rows=50_000)  # three batches
    assert pq.read_table(tmp_path / "batches.parquet").column("a").to_pylist() == expect
    import pyarrow.csv as pc

    pc.write_csv(table, tmp_path / "in.csv")
    pmlkit.privatize_file(mech, tmp_path / "in.csv", tmp_path / "out.csv", "a", rng=8,
                          manifest=False)
    assert pc.read_csv(tmp_path / "out.csv").column("a").to_pylist() == expect
    # the command line, same seed
    from pmlkit.cli.main import main

    mech.save(tmp_path / "m.json")
    code = main(["privatize", "--mechanism", str(tmp_path / "m.json"), "--input",
                 str(tmp_path / "in.parquet"), "--column", "a", "--output",
                 str(tmp_path / "cli.parquet"), "--seed", "8", "--allow-uncertified"])
    assert code == 0
    assert pq.read_table(tmp_path / "cli.parquet").column("a").to_pylist() == expect


# -- mechanisms that keep the per-row tables draw as before --------------------------------

def _kept_cases() -> dict[str, np.ndarray]:
    g = np.random.default_rng(21)
    small = g.dirichlet(np.ones(7), size=5)
    small[1, 3] = 0.0
    small[1] /= small[1].sum()
    wide = background_plus_sparse(16, 5000, 22, 0.01, 2)  # b = 13: beyond the shared tables
    return {"k-RR 1000 at eps 12": krr(1000, 12.0), "k-RR 300 at eps 8": krr(300, 8.0),
            "5 x 7 with a zero": small, "16 x 5000 background": wide,
            "identity 256": np.eye(256)}


#: sha256 of the int64 outputs of ``AliasSampler(w).draw(codes, default_rng(77))`` (codes
#: from ``default_rng(78)``, 300,000 records), computed with the per-row tables of the
#: version before the shared background cells
_KEPT = {
    "k-RR 1000 at eps 12":
        "9705a55b1d12f36eea0667aa8e9a9b86d48d916465ceb7a8b49a21ea30e21d6e",
    "k-RR 300 at eps 8":
        "fd71a6ff67bdc3f06c8ee0e1b965539bc50f36ae3524d93cdd3f9f7c91f1f82c",
    "5 x 7 with a zero":
        "f7bd3bba63754d6f85aa991a3c8ea652b85b9e5c355d532b646e71e01a4b78a6",
    "16 x 5000 background":
        "320f046695a339610ffc1bd870b2cb483863c2781d4575047fd47aaf695df524",
    "identity 256":
        "a338e538b4742a67e93834df2a06cf58257502c8255876c717877802f6fd3b4b",
}


@pytest.mark.parametrize("name", list(_KEPT))
def test_mechanisms_keeping_per_row_tables_draw_as_before(name: str) -> None:
    w = _kept_cases()[name]
    s = AliasSampler(w)
    assert shared_cells(s) is None
    codes = np.random.default_rng(78).integers(0, w.shape[0], 300_000)
    out = s.draw(codes, np.random.default_rng(77)).astype("<i8")
    assert hashlib.sha256(out.tobytes()).hexdigest() == _KEPT[name]


def test_string_release_of_a_per_row_table_mechanism_as_before() -> None:
    """pmlkit.privatize with string labels through a mechanism that keeps the per-row
    tables (k-RR at k = 300, eps = 8): the release of the version before the shared
    background cells (sha256 of the JSON list of output labels, pinned)."""
    import json

    k = 300
    names = [f"v{i}" for i in range(k)]
    mech = pmlkit.Mechanism(krr(k, 8.0), names, names)
    x = np.array(names, dtype=object)[np.random.default_rng(31).integers(0, k, 200_000)]
    out = pmlkit.privatize(mech, x, rng=32).tolist()
    assert hashlib.sha256(json.dumps(out).encode()).hexdigest() == \
        "bde08b2bbc87c67b52003811377c17ec88726c213e35bfe89f97e956f4f2da6a"
