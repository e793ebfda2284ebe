"""Attacks on the chunked label kinds (``sampler.run_chunks``, ``arrow_take``).

* Word accounting, independent of any release: every draw's first word is read off the
  PCG64 state it starts from (a table of the states of one stream), so the words of two
  releases in sequence, over seven chunks the last of them short, must tile
  ``0..2n-1`` exactly once each, and the generator must end at word ``2n``.
* One generator shared by two Python threads releasing at once: numpy's bit-generator lock
  keeps their words apart (an earlier data-parallel path copied the generator and only
  moved it on after both threads' chunks, so both releases drew the same words). The two
  releases must be the two sequential releases of that seed, in either order.
* String takes: labels of 0 to 80 bytes, multi-byte UTF-8, single and few records; each
  compared with a hand-built list (a deterministic mechanism) and with the integer codes'
  release.

Chunks are made small so that seven chunks stay quick.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import kindsgen as kg
import pmlkit
from pmlkit import sampler as sampler_mod
from pmlkit.privatization import _core

pytest.importorskip("pyarrow")
pytest.importorskip("polars")

CHUNK = 1 << 11
N = 6 * CHUNK + 5  # seven chunks, the last of five records


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small chunks."""
    monkeypatch.setattr(_core, "CHUNK_ROWS", CHUNK)


WORD_KINDS = ["object", "list", "pandas-arrow", "categorical", "arrow", "arrow-chunked",
              "arrow-view", "arrow-dict", "polars", "polars-cat"]


def test_two_releases_use_every_word_once(small: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[tuple[int, int]] = []
    guard = threading.Lock()

    def logged(cls: Any, name: str, at: int) -> None:
        orig = getattr(cls, name)

        def f(self: Any, *a: Any, **kw: Any) -> Any:
            with guard:
                log.append((a[at + 1].bit_generator.state["state"]["state"], len(a[at])))
            return orig(self, *a, **kw)

        monkeypatch.setattr(cls, name, f)

    logged(sampler_mod.AliasSampler, "draw", 0)
    bg = np.random.PCG64(11)
    index = {}
    for i in range(2 * N + 1):  # the state before word i -> i
        index[bg.state["state"]["state"]] = i
        bg.advance(1)
    ins, outs = kg.names(5), kg.names(1000, "o:")
    mech = pmlkit.Mechanism(kg.matrix(5, 1000, 3), ins, outs)
    codes = np.random.default_rng(1).integers(0, 5, N)
    for kind in WORD_KINDS:
        col = kg.column(kind, ins, codes, outs)
        gen = np.random.Generator(np.random.PCG64(11))
        log.clear()
        pmlkit.privatize(mech, col, rng=gen)
        pmlkit.privatize(mech, col, rng=gen)
        spans = sorted({(index[s], index[s] + c) for s, c in log})
        # a draw may call itself on its records or parts of them (output codes): only
        # the innermost spans are the words drawn
        leaves = [a for a in spans if not any(b != a and a[0] <= b[0] and b[1] <= a[1]
                                              for b in spans)]
        assert [a for a, _ in leaves] == [0, *(b for _, b in leaves[:-1])], kind
        assert leaves[-1][1] == 2 * N, kind
        assert index[gen.bit_generator.state["state"]["state"]] == 2 * N, kind


@pytest.mark.parametrize("kind", ["object", "arrow", "polars", "pandas-arrow"])
def test_one_generator_shared_by_two_threads_gives_two_distinct_releases(
        kind: str, small: None) -> None:
    ins, outs = kg.names(5), kg.names(1000, "o:")
    mech = pmlkit.Mechanism(kg.matrix(5, 1000, 3), ins, outs)
    col = kg.column(kind, ins, np.random.default_rng(1).integers(0, 5, N), outs)
    seq = np.random.Generator(np.random.PCG64(5))
    first = kg.as_list(pmlkit.privatize(mech, col, rng=seq))
    second = kg.as_list(pmlkit.privatize(mech, col, rng=seq))
    assert first != second
    for _ in range(4):
        gen = np.random.Generator(np.random.PCG64(5))
        got: list[Any] = [None, None]
        start = threading.Barrier(2)

        def run(j: int, gen: Any = gen, got: Any = got, start: Any = start) -> None:
            start.wait()
            got[j] = kg.as_list(pmlkit.privatize(mech, col, rng=gen))

        both = [threading.Thread(target=run, args=(j,)) for j in (0, 1)]
        for t in both:
            t.start()
        for t in both:
            t.join()
        assert got in ([first, second], [second, first])
        assert gen.bit_generator.state == seq.bit_generator.state


SEAM_KINDS = ["arrow", "arrow-large", "arrow-sliced", "arrow-view", "arrow-chunked",
              "pandas-arrow", "pandas-arrow-sliced", "polars", "polars-sliced", "object"]
LABELS = ["", "é", "日本語テキスト", "x" * 37, "a", "😀😀", "bb", "\u0000z", "long" * 20]


def test_string_takes(small: None) -> None:
    k = len(LABELS)
    ins = kg.names(k)
    ident = pmlkit.Mechanism(np.eye(k), ins, LABELS)  # record i gets LABELS[codes[i]]
    rng = np.random.default_rng(3)
    cases = [np.array([c]) for c in range(k)]  # one record, each label
    cases += [rng.integers(0, k, n) for n in (2, 3, 7, 17, 4099, N)]
    for long_label in (3, 8):  # the seam at the end: the second half all empty labels
        for n in (2, 9, 4096 + 1):
            c = np.zeros(n, dtype=np.int64)
            c[:n // 2] = long_label
            cases.append(c)
    mixed = pmlkit.Mechanism(kg.matrix(k, k, 4), ins, LABELS)
    for codes in cases:
        want = [LABELS[c] for c in codes]
        ref = kg.reference(kg.matrix(k, k, 4), LABELS, codes, 9)
        for kind in SEAM_KINDS:
            col = kg.column(kind, ins, codes, LABELS)
            assert kg.as_list(pmlkit.privatize(ident, col, rng=1)) == want, \
                (kind, len(codes))
            assert kg.as_list(pmlkit.privatize(mixed, col, rng=9)) == ref, \
                (kind, len(codes))
