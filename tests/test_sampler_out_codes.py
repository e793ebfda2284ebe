"""Outputs written straight as codes (``AliasSampler.draw(out_codes=)``) and the categorical
release paths built on it (pandas categorical, polars Categorical and Enum): the codes
against the documented draw rule on the same words (Python integers), against the plain
draw mapped through the table (chunks, remap, every code width), the release's values,
dtypes, index, name and counts against the object path and an independent count, and the
fresh memory a categorical release allocates (no array of 8-byte output indices)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import pmlkit
from pmlkit.errors import ValidationError
from pmlkit.sampler import DRAW_BLOCK, AliasSampler
from test_sampler_background import _rule, krr
from test_sampler_kernel import _mechanism  # random matrices with zeros


@pytest.mark.parametrize(("n_in", "m", "background"), [
    (7, 3, False), (60, 50, False), (64, 200, False), (1000, 1000, True)])
def test_out_codes_are_the_table_at_the_drawn_outputs(n_in, m, background):
    w = krr(m) if background else _mechanism(n_in, m, n_in + m, 0.3)
    s = AliasSampler(w)
    assert (s._bg is not None) == background
    n = 2 * DRAW_BLOCK + 123
    codes = np.random.default_rng(m).integers(0, w.shape[0], n)
    words = np.random.default_rng(9).bit_generator.random_raw(n)
    rule = np.array(_rule(s, codes.tolist(), words.tolist()))  # Python integers
    for dtype in (np.int8, np.int16, np.uint32, np.int64):
        table = (np.random.default_rng(1).permutation(m) % np.iinfo(dtype).max
                 ).astype(dtype)
        g = np.random.default_rng(9)
        got = s.draw(codes, g, out_codes=table)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, table[rule])
        # the stream moved on by one word per record, as the plain draw moves it
        assert g.bit_generator.random_raw() == \
            np.random.default_rng(9).bit_generator.random_raw(n + 1)[-1]
    # remapped narrow codes, a caller's out array, chunks continuing one stream
    perm = np.random.default_rng(3).permutation(w.shape[0])
    inv = np.argsort(perm).astype(np.int16)
    table = np.arange(m, dtype=np.uint32) * 3 + 1
    out = np.empty(n, dtype=np.uint32)
    g = np.random.default_rng(9)
    for a, b in ((0, 1000), (1000, DRAW_BLOCK + 5), (DRAW_BLOCK + 5, n)):
        s.draw(inv[codes[a:b]], g, remap=perm, out=out[a:b], out_codes=table)
    np.testing.assert_array_equal(out, table[rule])


def test_bad_out_codes_and_out_are_refused_before_any_word():
    s = AliasSampler(krr(4))
    g = np.random.default_rng(0)
    for bad in (np.arange(3), np.arange(4.0), np.arange(8).reshape(2, 4)):
        with pytest.raises(ValidationError, match="out_codes must be a 1-D integer array"):
            s.draw(np.zeros(5, dtype=np.intp), g, out_codes=bad)
    with pytest.raises(ValidationError, match="out must be a writable contiguous int8"):
        s.draw(np.zeros(5, dtype=np.intp), g, out=np.empty(5, dtype=np.intp),
               out_codes=np.arange(4, dtype=np.int8))
    codes = np.zeros(DRAW_BLOCK * 3, dtype=np.int64)
    codes[-1] = 4
    g = np.random.default_rng(0)
    with pytest.raises(ValidationError, match=r"input indices in 0\.\.3, got 4"):
        s.draw(codes, g, out_codes=np.arange(4, dtype=np.int8))
    # every code checked before drawing: the stream has not moved
    assert g.bit_generator.random_raw() == np.random.default_rng(0).bit_generator.random_raw()


def _independent_counts(values: list[str], labels: tuple[str, ...]) -> dict[str, int]:
    counts = dict.fromkeys(labels, 0)
    for v in values:
        counts[v] += 1
    return counts


@pytest.mark.parametrize("k", [2, 4, 50, 1000])
def test_categorical_releases_are_the_object_release(k):
    """pandas categorical and polars Categorical / Enum: the values of
    the object-array release under the same seed, the input's dtype and name (pandas: the
    index, and codes of the width pandas chooses), and the report's counts."""
    pl = pytest.importorskip("polars")
    n = 150_000
    names = tuple(f"v{i:04d}" for i in range(k))
    mech = pmlkit.Mechanism(krr(k), names, names)
    pool = np.array(names, dtype=object)
    x = np.random.default_rng(k).integers(0, k, n)
    ref = pmlkit.privatize(mech, pool[x], rng=5).tolist()
    want = _independent_counts(ref, names)
    cats = pd.Series(pd.Categorical(pool[x], categories=list(names[::-1])),
                     index=np.arange(n) * 2, name="c")
    out, report = pmlkit.privatize_with_report(mech, cats, rng=5)
    assert out.astype(object).tolist() == ref
    assert out.name == "c" and out.index.equals(cats.index)
    # an unordered categorical's categories may come from the raw values: the released
    # ones are the output labels, in the mechanism's order
    assert list(out.cat.categories) == list(names) and not out.cat.ordered
    assert out.cat.codes.dtype == (np.int8 if k < 127 else np.int16)
    assert report.output_counts == want
    # an ordered one's are declared: kept, in their order
    declared = pd.CategoricalDtype(list(names[::-1]), ordered=True)
    out = pmlkit.privatize(mech, cats.astype(declared), rng=5)
    assert out.astype(object).tolist() == ref and out.dtype == declared
    assert out.cat.codes.dtype == (np.int8 if k < 127 else np.int16)
    for dtype in (pl.Categorical, pl.Enum(list(names))):
        s = pl.Series("p", pool[x].tolist(), dtype=pl.String).cast(dtype)
        got = pmlkit.privatize(mech, s, rng=5)
        assert got.dtype == s.dtype and got.name == "p"
        assert got.to_list() == ref
        df = pl.DataFrame({"p": s, "other": np.arange(n)})
        got_df, rep = pmlkit.privatize_with_report(mech, df, rng=5, columns="p")
        assert got_df["p"].to_list() == ref and got_df["p"].dtype == s.dtype
        assert rep.output_counts == want


_PEAK_PROBE = """
import sys, tracemalloc
import numpy as np, pandas as pd, polars as pl
import pmlkit
n, k = 1 << 21, 4
w = np.full((k, k), 1.0) + (np.e - 1.0) * np.eye(k)
names = tuple(f"v{i}" for i in range(k))
mech = pmlkit.Mechanism(w / w.sum(axis=1, keepdims=True), names, names)
x = np.random.default_rng(0).integers(0, k, n)
cats = pd.Series(pd.Categorical.from_codes(x, categories=list(names)))
pcat = pl.Series("s", np.array(names, dtype=object)[x].tolist()).cast(pl.Categorical)
for values in (cats, pcat):
    pmlkit.privatize(mech, values)  # (one-time costs: imports)
    tracemalloc.start()
    pmlkit.privatize_with_report(mech, values)
    print(tracemalloc.get_traced_memory()[1])
    tracemalloc.stop()
"""


def test_categorical_releases_allocate_no_array_of_8_byte_indices():
    """The fresh memory a categorical release allocates (numpy's, traced, in a fresh
    interpreter: no other thread allocating meanwhile) stays near its output codes: the
    draw writes them directly, with no array of every record's 8-byte output index (whose
    fresh pages were faulted in anew on every call), no narrowing copy of it and no
    widened copy to count them (before: 23 MB for 2^21 records)."""
    pytest.importorskip("polars")
    proc = subprocess.run([sys.executable, "-c", _PEAK_PROBE], capture_output=True,
                          text=True, env=dict(os.environ), timeout=300)
    assert proc.returncode == 0, proc.stderr
    n = 1 << 21
    (pandas_peak, polars_peak) = (int(v) for v in proc.stdout.split())
    assert pandas_peak < 1 * n + 4 * n  # int8 codes, not 8 more bytes per record
    assert polars_peak < 4 * n + 4 * n  # uint32 physical codes


def test_categorical_draws_write_narrow_codes(monkeypatch):
    """The categorical paths hand the draw a narrow output array and a code table (the
    draws of a release, spied): never an intp array of every record's index. (In a full
    test run, an in-process memory probe of a polars Categorical saw the general path's
    allocations: the process's many categories made the column's codes too sparse for
    the category path.)"""
    pl = pytest.importorskip("polars")
    seen: list[tuple[np.dtype, bool]] = []
    depth = [0]  # (the numpy path's own draws of a block into a small buffer: not seen)
    real = AliasSampler.draw

    def spy(self, codes, generator, **kw):  # type: ignore[no-untyped-def]
        depth[0] += 1
        try:
            out = real(self, codes, generator, **kw)
        finally:
            depth[0] -= 1
        if depth[0] == 0:
            seen.append((out.dtype, kw.get("out_codes") is not None))
        return out

    monkeypatch.setattr(AliasSampler, "draw", spy)
    names = ("a", "b", "c")
    mech = pmlkit.Mechanism(krr(3), names, names)
    x = np.random.default_rng(0).integers(0, 3, 5000)
    pool = np.array(names, dtype=object)
    pmlkit.privatize(mech, pd.Series(pd.Categorical(pool[x])))
    assert seen and all(d == np.int8 and coded for d, coded in seen)
    seen.clear()
    # (an Enum: a Categorical's physical codes are global to the process, and past a
    # size relative to the column the category path is not taken; the fresh-interpreter
    # probe above covers Categorical)
    pmlkit.privatize(mech, pl.Series("s", pool[x].tolist()).cast(pl.Enum(list(names))))
    assert seen and all(d == np.uint8 and coded for d, coded in seen)
