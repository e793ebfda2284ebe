"""Integer labels drawn through the table of their range (``pmlkit.sampler.draw_mapped``),
and the release draw's single implementation: no release imports numba, whatever is
installed (the compiled draw was removed; the designers' kernels still use it)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from pmlkit.sampler import AliasSampler, draw_mapped


def _dense(n: int, m: int, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    w = g.dirichlet(np.full(m, 0.4), size=n)
    w[g.random(w.shape) < 0.3] = 0.0
    w[np.arange(n), g.integers(0, m, n)] += 0.05
    return w / w.sum(axis=1, keepdims=True)


def test_draw_mapped_uses_the_table_and_refuses_non_labels():
    """Integer labels through the table of their range (-1: no label): the values of
    the draw of the looked-up inputs (looked up here with a dict); a value outside the
    range or on a -1 refused with the generator unmoved."""
    s = AliasSampler(_dense(5, 7, 1))
    g = np.random.default_rng(0)
    labels = np.array([105, 101, 103, 100, 108])  # inputs 0..4
    table = np.full(9, -1, dtype=np.intp)
    table[labels - 100] = np.arange(5)
    x = g.integers(0, 5, 50_000)
    values = labels[x]
    lookup = {int(v): i for i, v in enumerate(labels)}
    assert [lookup[int(v)] for v in values[:50]] == x[:50].tolist()
    # (byte-swapped values too: read as native integers)
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


_RELEASES = r"""
import sys
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
for m, v in [(pmlkit.Mechanism(w), x),
             (pmlkit.Mechanism(w, tuple(range(7, 7 + k)), names), x + 7),
             (pmlkit.Mechanism(w, names, names),
              pd.Series(pd.Categorical.from_codes(x, categories=list(names)))),
             (pmlkit.Mechanism(w, names, names), pa.array(pool[x]))]:
    pmlkit.privatize(m, v, rng=3)
print("numba" in sys.modules)
"""


def test_no_release_imports_numba():
    """Releases of more than a million records (which started the removed compiled draw)
    never import numba: one draw implementation, with or without the fast extra."""
    proc = subprocess.run([sys.executable, "-c", _RELEASES], capture_output=True,
                          text=True, check=True, timeout=300)
    assert proc.stdout.split() == ["False"]
