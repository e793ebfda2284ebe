"""The compiled string kernels (Arrow string/large_string offsets and bytes, string_view
views, the output built from the labels' bytes) against independent oracles: a plain
dictionary lookup over the Python values, Arrow's own ``take``, and the release of the
numpy object-array path (and of the path without numba) under the same seed."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pmlkit
from labelgen import LABEL, arrow, label_values, near_misses, oracle
from pmlkit import _kernels, sampler
from pmlkit.errors import DataError, ValidationError
from pmlkit.sampler import Encoder, _StringTable, arrow_take

pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")
pytest.importorskip("numba")

STRING_TYPES = [pa.string(), pa.large_string(), pa.string_view()]


@pytest.fixture
def kernels(monkeypatch: pytest.MonkeyPatch) -> dict:
    """The kernels loaded and used for arrays of any length."""
    monkeypatch.delenv("PMLKIT_NO_NUMBA", raising=False)
    k = _kernels.compiled()
    assert k is not None
    monkeypatch.setattr(sampler, "_STRING_KERNEL_MIN", 0)
    return k


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label_values(), st.sampled_from(STRING_TYPES), st.integers(0, 3))
def test_compiled_codes_equal_a_dictionary_lookup(kernels: dict,
                                                  case: tuple[list[str], list[str | None]],
                                                  t: object, offset: int) -> None:
    labels, values = case
    arr = arrow(values, t, offset)
    table = _StringTable.build(labels)
    assert table is not None
    plain = arr.cast(pa.large_string()) if pa.types.is_string_view(t) \
        and table.max_len > 12 else arr
    misses: list[int] = []
    codes = table.codes(kernels, plain, misses)
    assert codes is not None
    expected = oracle(labels, values)
    # the kernel's count of the records that are no label: its own -1 codes
    assert misses == [codes.tolist().count(-1)]
    # nulls are masked by the caller; the kernel gives a null slot's (empty) bytes a code
    assert [c for c, v in zip(codes.tolist(), values, strict=True) if v is not None] \
        == [e for e, v in zip(expected, values, strict=True) if v is not None]
    assert Encoder(labels)._arrow_codes(arr).tolist() == expected
    enc = Encoder(labels)
    got = enc.encode_arrow(arr)
    if -1 in expected:  # refused, every problem counted as value by value
        assert got is None and enc.nulls == values.count(None)
        assert sum(enc.unknown.values()) == expected.count(-1) - values.count(None)
    else:
        assert got is not None and got.tolist() == expected


@pytest.mark.parametrize("t", STRING_TYPES)
def test_compiled_edge_labels_and_the_end_of_the_buffer(kernels: dict, t: object) -> None:
    """Length-only differences, 8/12/16/17-byte boundaries, multi-byte characters, and
    records in the data buffer's last 16 bytes (read byte by byte there)."""
    labels = ["", "\x00", "a", "a\x00", "aaaaaaaaa", "aaaaaaaaaa", "12345678",
              "123456789", "abcdefghijkl", "abcdefghijklm", "0123456789abcdef",
              "0123456789abcdefg", "0123456789abcdefh", "é€𝄞", "\x00" * 9]
    values = labels + near_misses(labels) + ["0123456789abcdefgh", None, "é€"]
    values = values * 3 + ["a", "", "12345678", "0123456789abcdefg"]
    for offset in range(5):
        arr = arrow(values, t, offset)
        assert Encoder(labels)._arrow_codes(arr).tolist() == oracle(labels, values)
        for cut in (1, 2, 3):
            sub = arr.slice(0, len(values) - cut)
            assert Encoder(labels)._arrow_codes(sub).tolist() \
                == oracle(labels, values[:-cut])


def test_colliding_label_prefixes_probe_and_stay_exact(kernels: dict) -> None:
    """300 labels sharing their first 16 bytes and their length (one key for all: no
    seed separates them, no table) and 300 sharing only the first 16 bytes (the length
    tells them apart): exact either way."""
    same = [f"{'p' * 16}{i:04d}" for i in range(300)]
    assert _StringTable.build(same) is None  # every label on one key: refused
    mixed = [f"{'p' * 16}{'q' * i}" for i in range(300)]
    values = mixed + same[:5] + ["p" * 15, "p" * 17 + "x"]
    arr = pa.array(values * 20, type=pa.large_string())
    assert Encoder(same)._arrow_codes(arr).tolist() == oracle(same, values * 20)
    assert Encoder(mixed)._arrow_codes(arr).tolist() == oracle(mixed, values * 20)


def test_forged_offsets_are_not_read(kernels: dict) -> None:
    """Offsets outside the data buffer (a forged array, never validated): the kernel stops
    at the record and hands the array back, nothing is read past the buffer."""
    table = _StringTable.build(["a", "b"])
    assert table is not None
    data = pa.py_buffer(b"ab")
    built = 0
    for offs in ([0, 1, 5], [0, 2, 1], [-3, 1, 2], [1, 0, 2], [0, 9, 2]):
        try:  # Arrow's light validation refuses some forgeries itself
            forged = pa.Array.from_buffers(
                pa.string(), 2, [None, pa.py_buffer(np.array(offs, np.int32)), data])
        except pa.ArrowInvalid:
            continue
        built += 1
        assert table.codes(kernels, forged) is None
    assert built >= 2
    views = np.zeros(4, dtype=np.uint64)
    views[0] = 0xFFFFFFFF  # a length of -1 (huge unsigned): never a label
    views[2] = 1 | (ord("a") << 32)
    forged = pa.Array.from_buffers(pa.string_view(), 2, [None, pa.py_buffer(views)])
    assert table.codes(kernels, forged).tolist() == [-1, 0]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(LABEL, min_size=1, max_size=6, unique=True),
       st.lists(st.integers(0, 5), min_size=0, max_size=80),
       st.sampled_from([pa.string(), pa.large_string(), pa.string_view()]))
def test_compiled_take_equals_arrows_take(kernels: dict, labels: list[str],
                                          picks: list[int], t: object) -> None:
    idx = np.array([p % len(labels) for p in picks], dtype=np.intp)
    lab = pa.array(labels, type=t)
    got = arrow_take(lab, idx)
    assert got.type == t
    got.validate(full=True)
    assert got.to_pylist() == [labels[i] for i in idx.tolist()]
    # counted on the way: the take itself, and each label's count added (a Counter)
    counts = np.full(len(labels), 7, dtype=np.int64)
    again = arrow_take(lab, idx, counts)
    assert again.to_pylist() == got.to_pylist()
    tally = Counter(idx.tolist())
    assert counts.tolist() == [7 + tally[i] for i in range(len(labels))]


@pytest.mark.parametrize("compiled", [True, False])
def test_pandas_arrow_strings_report_counts_taken_on_the_way(
        monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    """pandas string[pyarrow]: the report's counts (counted by the take) are those of the
    released values, counted again from the output."""
    if compiled:
        _kernels.compiled()
        monkeypatch.setattr(sampler, "_STRING_KERNEL_MIN", 0)
    else:
        monkeypatch.setenv("PMLKIT_NO_NUMBA", "1")
    labels = ["a", "bb", "ccccccccc", "d" * 17]
    w = np.full((4, 4), 0.1) + 0.6 * np.eye(4)
    mech = pmlkit.Mechanism(w, tuple(labels), tuple(labels))
    x = np.random.default_rng(3).integers(0, 4, 20_000)
    s = pd.Series(np.array(labels, dtype=object)[x], dtype="string[pyarrow]")
    out, report = pmlkit.privatize_with_report(mech, s, rng=4)
    assert str(out.dtype) == str(s.dtype)
    assert report.output_counts == dict(Counter(out.tolist())) | {
        lab: 0 for lab in labels if lab not in set(out.tolist())}
    frame, rep2 = pmlkit.privatize_with_report(mech, pd.DataFrame({"c": s}), rng=4,
                                               columns="c")
    assert rep2.output_counts == report.output_counts
    assert frame["c"].tolist() == out.tolist()


@pytest.mark.parametrize("kind", ["pa.Array", "large", "chunked", "pandas", "polars",
                                  "polars long"])
def test_release_equals_the_object_path_and_the_path_without_numba(
        kernels: dict, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Under one seed every string container gives the values of the numpy object path,
    with the kernels and without numba."""
    long = kind == "polars long"
    labels = [f"{'label-' * 3 if long else ''}v{i:02d}" for i in range(37)]
    w = np.random.default_rng(5).dirichlet(np.ones(37), size=37)
    mech = pmlkit.Mechanism(w, tuple(labels), tuple(labels))
    x = np.random.default_rng(6).integers(0, 37, 20_000)
    obj = np.array(labels, dtype=object)[x]
    ref = pmlkit.privatize(mech, obj, rng=11)
    vals = {"pa.Array": lambda: pa.array(obj, type=pa.string()),
            "large": lambda: pa.array(obj, type=pa.large_string()),
            "chunked": lambda: pa.chunked_array([obj[:7000].tolist(), obj[7000:].tolist()]),
            "pandas": lambda: pd.Series(obj, dtype="string[pyarrow]"),
            "polars": lambda: pl.Series("s", obj, dtype=pl.String),
            "polars long": lambda: pl.Series("s", obj, dtype=pl.String)}[kind]()

    def as_list(out: object) -> list[str]:
        if isinstance(out, pl.Series):
            return list(out.to_list())
        return list(out.to_pylist() if hasattr(out, "to_pylist") else out.tolist())

    got = pmlkit.privatize(mech, vals, rng=11)
    assert as_list(got) == ref.tolist()
    if kind == "pandas":
        assert got.dtype == vals.dtype
    monkeypatch.setenv("PMLKIT_NO_NUMBA", "1")
    assert as_list(pmlkit.privatize(mech, vals, rng=11)) == ref.tolist()


@pytest.mark.parametrize("t", STRING_TYPES)
def test_unknown_and_null_records_are_refused_with_the_usual_counts(kernels: dict,
                                                                    t: object) -> None:
    mech = pmlkit.Mechanism(np.full((2, 2), 0.5), ("F", "M"), ("F", "M"))
    values = ["F", "M"] * 3000 + ["X", None, "X", "FM", None, "F\x00"]
    with pytest.raises(DataError) as err:
        pmlkit.privatize(mech, pa.array(values, type=t))
    msg = str(err.value)
    assert "value 'X' appears in 2 rows" in msg and "2 rows hold a null" in msg
    assert "'FM' (1 rows)" in msg and "'F\\x00' (1 rows)" in msg


@pytest.mark.parametrize("k", [1, 2, 3, 4, 50, 1000, 5000])
def test_the_table_is_a_perfect_hash(kernels: dict, k: int) -> None:
    """Every label sits alone in the one slot its key leads to (so a record is looked up
    in one slot), computed here independently of the kernels with Python integers."""
    labels = [f"v{i:04d}" for i in range(k)]
    t = _StringTable.build(labels)
    assert t is not None
    mask = (1 << 64) - 1
    m = [int(v) for v in t.mults]
    slots = set()
    for code, lab in enumerate(labels):
        raw = lab.encode().ljust(16, b"\0")
        w0, w1 = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:16], "little")
        x = (w0 * m[0] + w1 * m[1] + len(lab) * m[2]) & mask
        seed = int(t.seeds[x >> int(t.bucket_shift)])
        slot = (((x ^ seed) * m[3]) & mask) >> int(t.shift)
        assert int(t.table[slot]) == code
        slots.add(slot)
    assert len(slots) == k and t.table.shape[0] >= 4 * k


@pytest.mark.parametrize("bad", [-1, 2, 2**40])
def test_take_refuses_an_index_that_is_not_a_label(kernels: dict, bad: int) -> None:
    """An index outside the labels is never read by the kernels (checked per record) and
    is refused with the value, with the kernels and with Arrow's take (short arrays)."""
    for n in (10_000, 3):
        idx = np.zeros(n, dtype=np.intp)
        idx[n // 2] = bad
        for t in STRING_TYPES:
            with pytest.raises(ValidationError, match=f"0\\.\\.1, got {bad}"):
                arrow_take(pa.array(["a", "b"], type=t), idx)


@pytest.mark.parametrize("t", STRING_TYPES)
@pytest.mark.parametrize("labels", [["a", "b"], ["", "x"], ["\x00", "y"], ["ab", "a"]])
def test_records_equal_to_label_zero_but_for_trailing_nuls(kernels: dict, t: object,
                                                           labels: list[str]) -> None:
    """Empty slots hold label 0, and a record that is label 0 followed by NULs has the
    same words as label 0: only the length tells them apart (checked for every record)."""
    values = [lab + "\x00" * j for lab in labels for j in range(0, 12)] \
        + ["\x00" * j for j in range(14)]
    for offset in range(3):
        arr = arrow(values * 3, t, offset)
        assert Encoder(labels)._arrow_codes(arr).tolist() == oracle(labels, values * 3)


@pytest.mark.parametrize("t", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("last", ["longest", "empty", "short"])
def test_take_by_word_stores_of_every_length_up_to_the_buffer_end(
        kernels: dict, t: object, last: str) -> None:
    """Labels of 0 to 40 bytes (a word and its padding written at each record's offset,
    overwritten by the next record): Arrow's own take, byte for byte, with the output
    ending on the longest label (its last word at the very end of the buffer), the empty
    one, or a short one."""
    labels = ["".join(chr(97 + (i + j) % 26) for j in range(m)) for i, m in
              enumerate(range(41))]
    lab = pa.array(labels, type=t)
    g = np.random.default_rng(9)
    idx = g.integers(0, len(labels), 5000)
    idx[-3:] = {"longest": 40, "empty": 0, "short": 3}[last]
    got = arrow_take(lab, idx)
    got.validate(full=True)
    want = lab.take(pa.array(idx))
    assert got.equals(want)
    assert got.buffers()[2].to_pybytes() == want.buffers()[2].to_pybytes()[
        :got.buffers()[2].size]
    assert got.buffers()[2].size == sum(len(labels[i]) for i in idx.tolist())


@pytest.mark.parametrize("case", ["structured", "random-200", "random-1000", "random-5000"])
@pytest.mark.parametrize("t", STRING_TYPES)
def test_fast_table_then_seeded_table_equal_a_dictionary_lookup(
        kernels: dict, case: str, t: object) -> None:
    """The one-word kernels' first lookup (a table without seeds) and, on a miss, the
    seeded one: codes equal a dictionary's for every label and for records that are no
    label (same lengths, one letter changed, longer, empty), both where every label has
    its own fast slot (direct: a miss is no label) and where some labels share one (their
    records found by the second lookup). The fast table is checked independently with
    Python integers: each label alone in its slot is there."""
    rng = np.random.default_rng(len(case))
    letters = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    if case == "structured":
        labels = [f"v{i:04d}" for i in range(1000)]
    else:
        k = int(case.split("-")[1])
        found: dict[str, None] = {}
        while len(found) < k:
            found["".join(rng.choice(letters, int(rng.integers(1, 9))))] = None
        labels = list(found)
    table = _StringTable.build(labels)
    assert table is not None and table.max_len <= 8
    mask = (1 << 64) - 1
    m = [int(v) for v in table.mults]
    shift, mult = int(table.fast_shift), int(table.fast_mult)
    fast_slots = []
    for lab in labels:
        raw = lab.encode().ljust(8, b"\0")
        x = (int.from_bytes(raw, "little") * m[0] + len(lab) * m[2]) & mask
        fast_slots.append(((x * mult) & mask) >> shift)
    alone = [fast_slots.count(s) == 1 for s in fast_slots]
    for code, (slot, own) in enumerate(zip(fast_slots, alone, strict=True)):
        if own:
            assert int(table.fast[slot]) == code
    assert table.direct == all(alone)
    if case == "structured":
        assert table.direct
    elif case != "random-200":
        assert not table.direct  # (some labels are found by the seeded lookup)
    others = [lab[:-1] + ("x" if lab[-1] != "x" else "y") for lab in labels[:300]]
    others += [lab + "z" for lab in labels[:50]] + ["", "123456789", "v999"]
    values = [*labels, *others]
    values = [values[i] for i in rng.permutation(len(values))]
    codes = table.codes(kernels, pa.array(values, type=t), [])
    assert codes is not None
    index = {lab: i for i, lab in enumerate(labels)}
    assert codes.tolist() == [index.get(v, -1) for v in values]
