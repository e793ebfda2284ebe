"""The compiled release draw (pmlkit._kernels: integer codes and words in, integer codes
out) against the numpy draw, which is the reference: the same outputs for the same words
on every table layout, code dtype, remap and output map; codes outside the table refused
with a pmlkit error and the generator unmoved; tables that do not fit refused before any
read; and the release paths without numba (``PMLKIT_NO_NUMBA=1``) giving the same
values."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import randomgen

from pmlkit import _kernels
from pmlkit.errors import ValidationError
from pmlkit.sampler import AliasSampler, draw_mapped

numba_missing = importlib.util.find_spec("numba") is None \
    or os.environ.get("PMLKIT_NO_NUMBA", "") not in ("", "0")
needs_numba = pytest.mark.skipif(numba_missing, reason="needs numba (the fast extra)")


@pytest.fixture
def compiled(monkeypatch):
    """Every draw of any size through the compiled kernels."""
    monkeypatch.setattr(_kernels, "KERNEL_MIN_RECORDS", 0)
    kernels = _kernels.release_kernels()
    assert kernels is not None
    return kernels


@pytest.fixture
def plain(monkeypatch):
    """Every draw through the numpy path (the kernels reported unavailable)."""
    monkeypatch.setitem(_kernels._RELEASE, "kernels", None)


def _krr(k: int, eps: float = 1.0) -> np.ndarray:
    w = np.full((k, k), 1.0) + np.expm1(eps) * np.eye(k)
    return w / w.sum(axis=1, keepdims=True)


def _dense(n: int, m: int, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    w = g.dirichlet(np.full(m, 0.4), size=n)
    w[g.random(w.shape) < 0.3] = 0.0
    w[np.arange(n), g.integers(0, m, n)] += 0.05
    return w / w.sum(axis=1, keepdims=True)


#: one mechanism per table layout: per-row Walker cells, the same with 16-bit cells
#: (a large table without a shared background), shared background cells
LAYOUTS = {
    "walker": _dense(5, 7, 1),
    "walker16": _dense(200, 300, 2),
    "background": _krr(300),
}


def _layout(s: AliasSampler) -> str:
    if s.background is not None:
        return "background"
    return "walker16" if s._cells16 is not None else "walker"


def _reference(s: AliasSampler, inputs: np.ndarray, words: np.ndarray) -> list[int]:
    """The alias method on each word in exact rationals (per-row Walker tables): column
    j = the top b bits, coin = the other bits as a fraction; keep j iff coin <
    prob[x, j], else alias[x, j]."""
    c = s.n_columns
    b = c.bit_length() - 1
    prob = s.prob_flat.reshape(-1, c)
    alias = s.alias_flat.reshape(-1, c)
    out = []
    for x, r in zip(inputs.tolist(), words.tolist(), strict=True):
        j = r >> (64 - b)
        coin = Fraction(r & ((1 << (64 - b)) - 1), 1 << (64 - b))
        out.append(j if coin < Fraction(float(prob[x, j])) else int(alias[x, j]))
    return out


@needs_numba
@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.uint64])
def test_compiled_draw_equals_the_numpy_draw(name, dtype, monkeypatch):
    w = LAYOUTS[name]
    s = AliasSampler(w)
    assert _layout(s) == name
    n_in = w.shape[0]
    codes = np.random.default_rng(3).integers(0, min(n_in, 127), 40_000).astype(dtype)
    monkeypatch.setitem(_kernels._RELEASE, "kernels", None)
    ref = s.draw(codes, np.random.default_rng(11))
    monkeypatch.undo()
    monkeypatch.setattr(_kernels, "KERNEL_MIN_RECORDS", 0)
    g = np.random.default_rng(11)
    got = s.draw(codes, g)
    np.testing.assert_array_equal(got, ref)
    # the generator moved on by exactly one word per record
    after = np.random.default_rng(11)
    after.bit_generator.random_raw(codes.size)
    assert g.bit_generator.state == after.bit_generator.state
    if name != "background":  # per-row tables: the alias method itself, word by word
        words = np.random.default_rng(11).bit_generator.random_raw(2000)
        assert got[:2000].tolist() == _reference(s, codes[:2000].astype(np.intp), words)


@needs_numba
def test_compiled_draw_with_every_cell_shared(monkeypatch):
    """Rows all equal: shared background cells and none of a row's own (E = 0)."""
    w = np.tile(np.random.default_rng(3).dirichlet(np.full(1000, 5.0)), (64, 1))
    s = AliasSampler(w)
    assert s.background is not None and s.background[1] == 0
    codes = np.random.default_rng(1).integers(0, 64, 20_000)
    monkeypatch.setitem(_kernels._RELEASE, "kernels", None)
    ref = s.draw(codes, np.random.default_rng(2))
    monkeypatch.undo()
    monkeypatch.setattr(_kernels, "KERNEL_MIN_RECORDS", 0)
    np.testing.assert_array_equal(s.draw(codes, np.random.default_rng(2)), ref)


@needs_numba
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_compiled_remap_and_output_codes_equal_the_numpy_ones(name, monkeypatch):
    w = LAYOUTS[name]
    s = AliasSampler(w)
    g = np.random.default_rng(5)
    table = g.integers(0, w.shape[0], 90)  # category -> input (several share one)
    codes = g.integers(0, 90, 70_001).astype(np.int8)
    omap = g.permutation(w.shape[1]).astype(np.int16)  # output -> written code
    monkeypatch.setitem(_kernels._RELEASE, "kernels", None)
    ref = s.draw(codes, np.random.default_rng(2), remap=table, out_codes=omap)
    monkeypatch.undo()
    monkeypatch.setattr(_kernels, "KERNEL_MIN_RECORDS", 0)
    got = s.draw(codes, np.random.default_rng(2), remap=table, out_codes=omap)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, ref)
    # the same as the plain draw of the records' inputs, written through the map
    plain = s.draw(table[codes.astype(np.intp)], np.random.default_rng(2))
    np.testing.assert_array_equal(got, omap[plain])


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_python_kernels_follow_the_rule_on_fixed_words(name):
    """The kernels' own Python source (what numba compiles) on fixed words: the outputs
    of the numpy draw fed the same words (every column's smallest and largest coin,
    and random words), without numba."""
    w = LAYOUTS[name]
    s = AliasSampler(w)
    b = s.n_columns.bit_length() - 1 if s.background is None else s.background[2]
    top = (1 << (64 - b)) - 1
    cols = np.arange(1 << b, dtype=np.uint64)
    edge = np.concatenate([cols << np.uint64(64 - b),
                           (cols << np.uint64(64 - b)) | np.uint64(top)])
    rand = np.random.default_rng(4).bit_generator.random_raw(3000)
    words = np.concatenate([edge, rand])
    codes = np.random.default_rng(6).integers(0, w.shape[0], words.size)
    it = iter(words.tolist())
    ref = s.draw(codes, np.random.Generator(randomgen.UserBitGenerator(
        lambda _state: next(it), 64)))
    out = np.empty(words.size, dtype=np.intp)
    table = np.arange(w.shape[0], dtype=np.intp)
    omap = np.arange(w.shape[1], dtype=np.intp)
    py = _kernels.RELEASE_KERNELS
    if name == "background":
        k, e, b = s.background
        cells, prim = s._bg[2], s._bg[3]
        status = py["background"](codes, 0, table, words, cells, prim, k, e, w.shape[0], b,
                                  omap, out)
    elif name == "walker16":
        status = py["walker16"](codes, 0, table, words, s._cells, s._cells16, s._bits,
                                omap, out)
    else:
        status = py["walker"](codes, 0, table, words, s._cells, s._bits, omap, out)
    assert status == -1
    np.testing.assert_array_equal(out, ref)
    assert np.all(w[codes, out] > 0)  # never an impossible output


@needs_numba
@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("bad", [-1, "n", 2**40, -(2**62)])
def test_compiled_draw_refuses_codes_outside_the_table(name, bad, compiled):
    """A code outside 0..N-1 anywhere (first block, a later one, the last record): a
    ValidationError naming it, and the generator not moved (nothing is released)."""
    w = LAYOUTS[name]
    s = AliasSampler(w)
    n_in = w.shape[0]
    value = n_in if bad == "n" else bad
    for at in (0, 40_000, 69_999):
        codes = np.random.default_rng(1).integers(0, n_in, 70_000)
        codes[at] = value
        g = np.random.default_rng(8)
        before = g.bit_generator.state
        with pytest.raises(ValidationError, match=r"codes must be input indices in 0\.\."):
            s.draw(codes, g)
        assert g.bit_generator.state == before
    # through a remap: the code is checked against the table, its entry against the rows
    with pytest.raises(ValidationError, match=r"codes must be indices into remap in 0\.\.2"):
        s.draw(np.array([0, 3, 1], dtype=np.int8), np.random.default_rng(0),
               remap=[0, 1, 0])


@needs_numba
def test_compiled_draw_from_a_generator_it_cannot_position(compiled):
    """A caller's Philox (not positioned word by word): every code checked before any
    word is drawn, so a refused draw leaves it where it was too."""
    s = AliasSampler(LAYOUTS["walker"])
    g = np.random.Generator(np.random.Philox(3))
    with pytest.raises(ValidationError, match=r"codes must be input indices in 0\.\.4, got 9"):
        s.draw(np.array([0, 9, 1]), g)
    fresh = np.random.Philox(3).random_raw(4)
    np.testing.assert_array_equal(g.bit_generator.random_raw(4), fresh)
    codes = np.arange(5).repeat(20)
    got = s.draw(codes, np.random.Generator(np.random.Philox(3)))
    ref_words = np.random.Generator(np.random.Philox(3)).bit_generator.random_raw(100)
    assert got.tolist() == _reference(s, codes, ref_words)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_kernels_refuse_tables_that_do_not_fit_before_reading(name):
    """Inconsistent tables (cells of the wrong length, a remap naming a row the table
    lacks, an output map too short for the outputs drawn, too few words or outputs)
    give the status BAD_TABLES: every index a kernel reads at is proven in range by
    checks in the kernel itself (run here uncompiled, where an index out of range would
    raise IndexError or wrap around instead)."""
    w = LAYOUTS[name]
    s = AliasSampler(w)
    n = 64
    codes = np.zeros(n, dtype=np.intp)
    words = np.random.default_rng(0).bit_generator.random_raw(n)
    out = np.empty(n, dtype=np.intp)
    rows = np.arange(w.shape[0], dtype=np.intp)
    omap = np.arange(w.shape[1], dtype=np.intp)
    py = _kernels.RELEASE_KERNELS
    bad = _kernels.BAD_TABLES

    if name == "background":
        k, e, b = s.background
        cells, prim = s._bg[2], s._bg[3]

        def run(table=rows, c=cells, p=prim, m=omap, wd=words, o=out, kk=k, ee=e, bb=b,
                nr=w.shape[0]):
            return py["background"](codes, 0, table, wd, c, p, kk, ee, nr, bb, m, o)
        assert run(c=cells[:-1]) == bad
        assert run(p=prim[:-1]) == bad
        assert run(kk=k + 1) == bad
        assert run(ee=0) == bad
        assert run(nr=w.shape[0] + 1) == bad
    elif name == "walker16":
        def run(table=rows, c=s._cells, m=omap, wd=words, o=out, bb=s._bits):
            return py["walker16"](codes, 0, table, wd, c, s._cells16, bb, m, o)
        assert run(c=s._cells[:-1]) == bad
        assert run(bb=13) == bad
    else:
        def run(table=rows, c=s._cells, m=omap, wd=words, o=out, bb=s._bits):
            return py["walker"](codes, 0, table, wd, c, bb, m, o)
        assert run(c=s._cells[:-1]) == bad
        assert run(bb=0) == bad
        assert run(bb=33) == bad
    assert run() == -1
    assert run(table=np.array([w.shape[0]], dtype=np.intp)) == bad  # no such row
    assert run(table=np.array([-2], dtype=np.intp)) == bad
    assert run(m=omap[:1]) == bad  # an output index the map lacks
    assert run(wd=words[:-1]) == bad
    assert run(o=out[:-1]) == bad


@needs_numba
@pytest.mark.parametrize("force", ["compiled", "plain"])
def test_draw_mapped_uses_the_table_and_refuses_non_labels(force, request):
    """Integer labels through the table of their range (-1: no label): the values of
    the draw of the looked-up inputs; a value outside the range or on a -1 refused with
    the generator unmoved, in both paths."""
    request.getfixturevalue(force)
    s = AliasSampler(LAYOUTS["walker"])
    g = np.random.default_rng(0)
    labels = np.array([105, 101, 103, 100, 108])  # inputs 0..4
    table = np.full(9, -1, dtype=np.intp)
    table[labels - 100] = np.arange(5)
    x = g.integers(0, 5, 50_000)
    values = labels[x]
    # (byte-swapped values too: read as native integers before the compiled draw)
    for dtype in (np.int16, np.int64, np.uint64, ">i8", ">u2"):
        out = np.empty(values.size, dtype=np.intp)
        assert draw_mapped(s, values.astype(dtype), 100, table, np.random.default_rng(4),
                           out)
        np.testing.assert_array_equal(out, s.draw(x, np.random.default_rng(4)))
    for intruder in (102, 99, 109, -5):  # a hole of the range, below, above
        bad = values.copy()
        bad[30_000] = intruder
        gen = np.random.default_rng(4)
        before = gen.bit_generator.state
        out = np.empty(values.size, dtype=np.intp)
        assert not draw_mapped(s, bad, 100, table, gen, out)
        assert gen.bit_generator.state == before
    huge = values.astype(np.uint64)
    huge[7] = np.uint64(2**64 - 1)  # would wrap to -1 as int64
    assert not draw_mapped(s, huge, 100, table, np.random.default_rng(4),
                           np.empty(values.size, dtype=np.intp))


_NO_NUMBA = r"""
import hashlib, sys
import numpy as np
import pandas as pd
import pyarrow as pa
import pmlkit
k, n = 16, 1_200_000
w = np.full((k, k), 1.0) + 1.7 * np.eye(k)
w /= w.sum(axis=1, keepdims=True)
names = tuple(f"v{i}" for i in range(k))
x = np.random.default_rng(0).integers(0, k, n)
pool = np.array(names, dtype=object)
cases = {
    "int": (pmlkit.Mechanism(w), x),
    "int+7": (pmlkit.Mechanism(w, tuple(range(7, 7 + k)), names), x + 7),
    "object": (pmlkit.Mechanism(w, names, names), pool[x]),
    "categorical": (pmlkit.Mechanism(w, names, names),
                    pd.Series(pd.Categorical.from_codes(x, categories=list(names)))),
    "arrow": (pmlkit.Mechanism(w, names, names), pa.array(pool[x])),
}
for name, (m, v) in cases.items():
    out = pmlkit.privatize(m, v, rng=3)
    text = "|".join(map(str, list(out.tolist() if hasattr(out, "tolist") else out)))
    print(name, hashlib.sha256(text.encode()).hexdigest())
print("numba" in sys.modules)
"""


def test_release_without_numba_gives_the_same_values():
    """The release paths with numba disabled run (no import of numba) and give the
    values of a run that may use the compiled draw (more than a million records, which
    starts it where numba is installed)."""
    runs = {}
    for flag in ("1", "0"):
        env = {**os.environ, "PMLKIT_NO_NUMBA": flag}
        proc = subprocess.run([sys.executable, "-c", _NO_NUMBA], capture_output=True,
                              text=True, env=env, check=True, timeout=300)
        runs[flag] = proc.stdout.split("\n")
    assert runs["1"][-2] == "False"  # numba never imported
    # the compiled draw wherever numba is installed
    assert runs["0"][-2] == str(importlib.util.find_spec("numba") is not None)
    assert runs["1"][:-2] == runs["0"][:-2]
    assert len(runs["1"]) == 7 and all(len(line.split()[1]) == 64
                                       for line in runs["1"][:5])
