"""The compiled kernels' narrow tables (label lengths in bytes, 16-bit slots of the string
table, 32-bit histograms) against independent oracles, on both sides of every width
switch: a Python dictionary lookup over the values, Python's own slicing for the taken
strings, and ``collections.Counter`` for the counts."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

import pmlkit
from pmlkit import _kernels, sampler
from pmlkit.sampler import ObjectGather, _count_dtype, _StringTable, arrow_take, count_outputs

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pytest.importorskip("numba")


@pytest.fixture
def kernels(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.delenv("PMLKIT_NO_NUMBA", raising=False)
    k = _kernels.compiled()
    assert k is not None
    monkeypatch.setattr(sampler, "_STRING_KERNEL_MIN", 0)
    return k


def _labels(lengths: list[int]) -> list[str]:
    """Distinct labels of the given byte lengths (ASCII), differing in their last byte
    and their first."""
    return [(chr(65 + i % 26) * max(n - 1, 0) + chr(97 + i // 26 % 26))[:n] or ""
            for i, n in enumerate(lengths)]


@pytest.mark.parametrize("lengths", [[1, 8, 5], [254, 255, 3], [255, 256, 7],
                                     [300, 9, 1000], [0, 12, 13]])
@pytest.mark.parametrize("t", ["string", "large_string"])
def test_take_and_encode_across_the_length_width_switch(kernels: dict[str, Any], lengths: list[int],
                                                        t: str) -> None:
    """Labels whose byte lengths straddle 255 (one byte) and 8 (the one-word take): the
    compiled take writes exactly the labels' bytes, counts them, and the encoder maps
    every record back to its label."""
    labels = _labels(lengths)
    assert len(set(labels)) == len(labels)
    typ = getattr(pa, t)()
    idx = np.random.default_rng(len(labels)).integers(0, len(labels), 5000).astype(np.intp)
    counts = np.zeros(len(labels), dtype=np.int64)
    got = arrow_take(pa.array(labels, type=typ), idx, counts)
    got.validate(full=True)
    want = [labels[i] for i in idx.tolist()]
    assert got.to_pylist() == want
    tally = Counter(idx.tolist())
    assert counts.tolist() == [tally[i] for i in range(len(labels))]
    enc = sampler.Encoder(labels)
    codes = enc.encode_arrow(pa.array(want, type=typ))
    assert codes is not None
    lookup = {lab: i for i, lab in enumerate(labels)}
    assert codes.tolist() == [lookup[v] for v in want]


@pytest.mark.parametrize("k", [2**15 - 1, 2**15])
def test_string_table_slot_width_switch(kernels: dict[str, Any], k: int) -> None:
    """The largest alphabet with 16-bit slots and the smallest with 32-bit ones: every
    label, and near misses, looked up exactly (a dictionary lookup as the oracle)."""
    labels = [f"w{i:06d}" for i in range(k)]
    table = _StringTable.build(labels)
    assert table is not None
    assert table.table.dtype == (np.int16 if k < 2**15 else np.int32)
    rng = np.random.default_rng(k)
    picks = rng.integers(0, k, 20_000)
    values = [labels[i] for i in picks.tolist()] + [f"w{k:06d}", "w00000", "w0000000"]
    codes = table.codes(kernels, pa.array(values))
    assert codes is not None
    lookup = {lab: i for i, lab in enumerate(labels)}
    assert codes.tolist() == [lookup.get(v, -1) for v in values]


def test_count_dtype_switches_before_a_count_could_overflow() -> None:
    """32-bit histograms only while no count can reach 2**32."""
    assert _count_dtype(2**32 - 1) == np.uint32
    assert _count_dtype(2**32) == np.int64
    assert np.iinfo(np.uint32).max == 2**32 - 1


@pytest.mark.parametrize("m", [3, 255, 256, 1000])
def test_counts_of_every_lane_width(kernels: dict[str, Any], m: int) -> None:
    """The compiled counts (four 32-bit histograms below 256 outputs, one from 256) of
    count_outputs, the object gather and the string take equal a Counter."""
    rng = np.random.default_rng(m)
    idx = rng.integers(0, m, 200_000).astype(np.intp)
    idx[:5000] = m - 1  # a long run of one output
    tally = Counter(idx.tolist())
    want = [tally[i] for i in range(m)]
    assert count_outputs(idx, m).tolist() == want
    labels = np.array([f"L{i}" for i in range(m)], dtype=object)
    gather = ObjectGather.start(labels, idx.shape[0])
    if gather is not None:
        assert gather.put(0, idx[:70_000]) and gather.put(70_000, idx[70_000:])
        assert gather.counts.tolist() == want
        assert gather.out.tolist() == labels[idx].tolist()
    counts = np.zeros(m, dtype=np.int64)
    arrow_take(pa.array(labels.tolist()), idx, counts)
    assert counts.tolist() == want


def test_report_counts_at_1000_labels_match_the_release(kernels: dict[str, Any]) -> None:
    """pandas string[pyarrow] and object strings at k = 1000: the report's counts (32-bit
    histograms on the way) are those of the released values, counted again."""
    k = 1000
    names = tuple(f"v{i:04d}" for i in range(k))
    w = np.full((k, k), 1.0) + (np.e - 1) * np.eye(k)
    mech = pmlkit.Mechanism(w / w.sum(axis=1, keepdims=True), names, names)
    x = np.random.default_rng(5).integers(0, k, 300_000)
    objs = np.array(names, dtype=object)[x]
    for values in (pd.Series(objs, dtype="string[pyarrow]"), pd.Series(objs)):
        out, report = pmlkit.privatize_with_report(mech, values, rng=6)
        tally = Counter(out.tolist())
        assert report.output_counts == {lab: tally[lab] for lab in names}


class _Claims:
    """An object whose ``__class__`` claims ``str`` (isinstance believes it)."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str


def _kind_by_isinstance(labels: list[object]) -> str:
    """label_kind's rule written out value by value (the oracle)."""
    kinds = set()
    for v in labels:
        if isinstance(v, bool | np.bool_):
            kinds.add("bool")
        elif isinstance(v, int | np.integer):
            kinds.add("int")
        elif isinstance(v, float | np.floating):
            kinds.add("float")
        elif isinstance(v, str):
            kinds.add("str")
        else:
            kinds.add("object")
    if kinds <= {"int", "float"} and "float" in kinds:
        return "float"
    return kinds.pop() if len(kinds) == 1 else "mixed"


class _Int(int):
    pass


class _StrClaimsInt(str):
    """A str whose ``__class__`` claims ``int``: isinstance finds the int first."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return int


@pytest.mark.parametrize("labels", [
    [0, 1, 2], [True, False], [True, 1], [np.bool_(True)], [np.int8(1), 2],
    [1, 2.5], [np.float32(1.5)], ["a", "b"], ["a", 1], [None], [b"x"], [(1,)],
    [_Int(3), 4], [_Claims()], ["a", _Claims()], [_StrClaimsInt("a")],
    [_StrClaimsInt("a"), "b"], [1.0, _Claims()], [], [np.str_("a")],
    [f"v{i:04d}" for i in range(1000)]])
def test_label_kind_by_type_equals_the_per_value_rule(labels: list[object]) -> None:
    """label_kind classifies each distinct type once; the kinds are those of isinstance
    asked value by value (an object claiming another class included)."""
    assert sampler.label_kind(tuple(labels)) == _kind_by_isinstance(labels)


def test_short_label_views_with_junk_padding_equal_a_dictionary_lookup(
        kernels: dict[str, Any]) -> None:
    """string_view records whose inline bytes past their length are junk (a forged or
    reused buffer), of lengths 0..12 around labels of at most 8 bytes (the one-word view
    kernel): the codes are a dictionary lookup on the strings Arrow itself reads, and
    those of the two-word kernel."""
    labels = ["", "a", "ab", "abcdefgh", "abcdefg", "\x00", "zzzz"]
    table = _StringTable.build(labels)
    assert table is not None and table.max_len <= 8
    rng = np.random.default_rng(11)
    strings = [*labels, "abcdefgh\x00", "abcdefghi", "abcdefghijkl", "a\x00", "zzz",
               "zzzzz", "b"]
    picks = rng.integers(0, len(strings), 3000)
    raw = [strings[i].encode() for i in picks.tolist()]
    words = np.empty((len(raw), 2), dtype="<u8")
    junk = rng.integers(0, 2**63, (len(raw), 2), dtype=np.int64).view(np.uint64)
    for i, r in enumerate(raw):
        inline = (r + junk[i].tobytes())[:12]  # the bytes past the string: junk
        words[i] = np.frombuffer(len(r).to_bytes(4, "little") + inline, dtype="<u8")
    arr = pa.Array.from_buffers(pa.string_view(), len(raw),
                                [None, pa.py_buffer(words.tobytes())])
    values = arr.to_pylist()
    assert values == [strings[i] for i in picks.tolist()]
    misses: list[int] = []
    codes = table.codes(kernels, arr, misses)
    assert codes is not None
    lookup = {lab: i for i, lab in enumerate(labels)}
    want = [lookup.get(v, -1) for v in values]
    assert codes.tolist() == want and misses == [want.count(-1)]
    two = np.empty(len(raw), dtype=np.intp)
    kernels["view_codes"](words.ravel(), sampler._BYTE_MASKS, table.table, table.seeds,
                          table.mults, table.bucket_shift, table.shift, table.lab_len,
                          table.lab_w0, table.lab_w1, table.lab_off, table.lab_data,
                          table.max_len, two)
    assert two.tolist() == want


@pytest.mark.parametrize("k", [1, 2, 5, 64, 65, 300])
@pytest.mark.parametrize("t", ["string", "large_string", "string_view"])
def test_direct_and_seeded_tables_equal_a_dictionary_lookup(kernels: dict[str, Any],
                                                            k: int, t: str) -> None:
    """Up to 64 labels sit in a table addressed by the multiplier alone (no seed read):
    each label alone in the slot its key leads to, computed here with Python integers;
    records (labels, near misses of every length up to 12) get the codes of a dictionary
    lookup, for the direct tables and the seeded ones beyond 64 labels alike."""
    labels = [f"L{i:03d}"[: 1 + i % 4] + str(i) for i in range(k)]
    assert len(set(labels)) == k and max(map(len, labels)) <= 8
    table = _StringTable.build(labels)
    # (beyond 64 labels the table is direct when the first lookup's table, searched for
    # among 8 k slots or more, gives every label a slot of its own: here at 65 labels)
    assert table is not None and (table.direct or k > 64)
    if table.direct:  # a record is looked up in one slot only: each label alone in its own
        mask = (1 << 64) - 1
        m = [int(v) for v in table.mults]
        slots = set()
        for code, lab in enumerate(labels):
            w0 = int.from_bytes(lab.encode().ljust(8, b"\0"), "little")
            x = (w0 * m[0] + len(lab) * m[2]) & mask
            slot = ((x * int(table.fast_mult)) & mask) >> int(table.fast_shift)
            assert int(table.fast[slot]) == code
            slots.add(slot)
        assert len(slots) == k
    near = [lab + "0" for lab in labels] + [lab[:-1] for lab in labels] + ["", "zzzzzzzzzzzz"]
    values = [labels[i] for i in np.random.default_rng(k).integers(0, k, 5000).tolist()]
    values += near
    codes = table.codes(kernels, pa.array(values, type=getattr(pa, t)()))
    assert codes is not None
    lookup = {lab: i for i, lab in enumerate(labels)}
    assert codes.tolist() == [lookup.get(v, -1) for v in values]
