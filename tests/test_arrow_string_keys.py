"""String labels matched in Arrow buffers (fixed-width keys, string_view views, polars
physical category codes) against an independent oracle: a plain dictionary lookup
``labels.index(v)`` over the Python values, and the numpy object-array path of
:func:`pmlkit.privatize` under the same seed."""

from __future__ import annotations

import struct
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from labelgen import CHARS, LABEL, arrow, label_values, near_misses, oracle
from pmlkit.errors import DataError
from pmlkit.sampler import Encoder

pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")

STRING_TYPES = [pa.string(), pa.large_string(), pa.string_view()]


@settings(max_examples=80)
@given(label_values(), st.sampled_from(STRING_TYPES), st.integers(0, 3))
def test_codes_equal_a_dictionary_lookup(case: tuple[list[str], list[str | None]],
                                         t: object, offset: int) -> None:
    labels, values = case
    arr = arrow(values, t, offset)
    enc = Encoder(labels)
    assert enc._arrow_codes(arr).tolist() == oracle(labels, values)
    # the public method: codes when every record is a label, else the exact problems
    enc = Encoder(labels)
    got = enc.encode_arrow(arr)
    expected = oracle(labels, values)
    if min(expected, default=0) >= 0:
        assert got is not None and got.tolist() == expected
    else:
        assert got is None
        assert enc.nulls == values.count(None)
        assert dict(enc.unknown) == dict(Counter(v for v, c in zip(values, expected,
                                                                   strict=True)
                                                 if c < 0 and v is not None))


@pytest.mark.parametrize("t", STRING_TYPES)
def test_edge_labels(t: object) -> None:
    """Labels that differ only in length (trailing NULs, 9 vs 10 equal bytes), the empty
    string, 8/9/12/13/16/17-byte boundaries and multi-byte characters."""
    labels = ["", "\x00", "a", "a\x00", "a\x00\x00", "aaaaaaaaa", "aaaaaaaaaa",
              "12345678", "123456789", "abcdefghijkl", "abcdefghijklm", "0123456789abcdef",
              "é€𝄞", "\x00\x00\x00\x00\x00\x00\x00\x00\x00"]
    values = labels + near_misses(labels) + ["0123456789abcdefg", "aaaaaaaaaaaaaaaaa",
                                             None, "é€", "€𝄞"]
    values = values * 3
    for offset in range(5):
        arr = arrow(values, t, offset)
        assert Encoder(labels)._arrow_codes(arr).tolist() == oracle(labels, values)


@pytest.mark.parametrize("t", STRING_TYPES)
@pytest.mark.parametrize("labels", [["ab", "cd", "\x00\x00", "é"],  # all of 2 bytes
                                    ["Female", "Male"], ["a", "b", "c"],
                                    ["abcdefghijkl", "abcdefghijkm"]])
def test_labels_of_one_length(t: object, labels: list[str]) -> None:
    """Labels of one byte length (masked to that length): records of any other length,
    including prefixes, extensions and longer non-inlined strings, are not labels."""
    values = labels + near_misses(labels) + ["", "a", "abc", "ab\x00", "é\x00", None,
                                             "abcdefghijklm", "a" * 40]
    for offset in range(3):
        arr = arrow(values * 2, t, offset)
        assert Encoder(labels)._arrow_codes(arr).tolist() == oracle(labels, values * 2)


@pytest.mark.parametrize("t", STRING_TYPES)
def test_many_labels_and_the_end_of_the_data_buffer(t: object) -> None:
    """1000 labels (a perfect hash over 2 k^2 slots), records ending exactly at the end of
    the data buffer, and records in the buffer's last 8 bytes (read from a padded copy)."""
    labels = [f"v{i:04d}" for i in range(1000)] + ["", "z"]
    rng = np.random.default_rng(1)
    values: list[str | None] = [labels[i] for i in rng.integers(0, len(labels), 5000)]
    values += ["v1000", "v999", "v09999", "z", "", "z"]  # tail: unknown, known, empty
    arr = pa.array(values, type=t)
    assert Encoder(labels)._arrow_codes(arr).tolist() == oracle(labels, values)
    for cut in (1, 2, 3, 7):  # slices ending inside the buffer
        sub = arr.slice(0, len(values) - cut)
        assert Encoder(labels)._arrow_codes(sub).tolist() == oracle(labels,
                                                                   values[:-cut])


def test_long_labels_fall_back_exactly() -> None:
    """Labels longer than 16 bytes (string/large_string) or 12 bytes (string_view) take the
    generic hash: still exact, and string_view works there (it had no index_in kernel)."""
    labels = ["Married-civ-spouse", "Never-married", "Divorced"]
    values = [*labels, "Married-civ-spous", "Married-civ-spouse ", None, *labels]
    for t in STRING_TYPES:
        assert Encoder(labels)._arrow_codes(pa.array(values, type=t)).tolist() \
            == oracle(labels, values)


def test_string_view_input_privatises() -> None:
    """A pyarrow string_view array is privatised like a string array (it used to fail in
    Arrow's index_in, which has no string_view kernel), and an unknown value in it is
    refused with the usual message."""
    labels = ("Married-civ-spouse", "Never-married")
    mech = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), labels, labels)
    arr = pa.array(["Never-married", "Married-civ-spouse"], type=pa.string_view())
    assert pmlkit.privatize(mech, arr).to_pylist() == ["Married-civ-spouse",
                                                       "Never-married"]
    short = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("F", "M"), ("F", "M"))
    with pytest.raises(DataError, match="value 'X' appears in 1 row"):
        pmlkit.privatize(short, pa.array(["F", "X"], type=pa.string_view()))


@settings(max_examples=150)
@given(label_values(), st.integers(0, 3))
def test_view_keys_equal_a_dictionary_lookup(case: tuple[list[str], list[str | None]],
                                             offset: int) -> None:
    """The string_view matcher, straight: every record's code is the dictionary lookup of
    its value (nulls aside, which the encoder handles before), for labels of 0 to 36
    bytes with NULs and multi-byte characters, near misses (prefixes, extensions by a
    NUL, longer values sharing a label's first bytes) and sliced arrays; labels it cannot
    match (over 12 bytes) give None and the general path."""
    from pmlkit._encoding import ViewKeys

    labels, values = case
    values = [v for v in values if v is not None]
    keys = ViewKeys.build(labels)
    if max(len(lab.encode()) for lab in labels) > 12:
        assert keys is None
        return
    assert keys is not None
    got = keys.codes(arrow(values, pa.string_view(), offset))
    assert got is not None and got.tolist() == oracle(labels, values)


def test_view_keys_take_many_labels_and_refuse_a_short_buffer() -> None:
    """1,000 labels (the slot table's search) and values of lengths 11 to 14 around the
    inline limit; a views buffer shorter than the records gives None, not a read past it."""
    from pmlkit._encoding import ViewKeys

    labels = [f"v{i:0{9 + i % 3}d}" for i in range(1000)]  # 10 to 12 bytes
    keys = ViewKeys.build(labels)
    assert keys is not None
    rng = np.random.default_rng(7)
    pool = labels + [lab + "!" for lab in labels[:50]] + [lab[:-1] for lab in labels[:50]]
    values = [pool[i] for i in rng.integers(0, len(pool), 5000)]
    arr = pa.array(values, type=pa.string_view())
    assert keys.codes(arr).tolist() == oracle(labels, values)

    class Short:  # (pyarrow itself refuses to build such an array)
        offset = 1

        def __len__(self) -> int:
            return 3

        def buffers(self) -> list[object]:
            return [None, pa.py_buffer(b"\0" * 48)]

    assert keys.codes(Short()) is None


def test_polars_text_is_matched_from_its_views() -> None:
    """A polars String column reaches the encoder as Arrow string views (no copy), and
    its release equals the one of the same values as a numpy object array under a seed."""
    labels = ["F", "M", "X" * 12]
    mech = krr_mech(labels)
    values = [labels[i] for i in np.random.default_rng(2).integers(0, 3, 3000)]
    s = pl.Series("s", values, dtype=pl.String)
    if hasattr(pl, "CompatLevel"):
        assert pa.types.is_string_view(s.to_arrow(compat_level=pl.CompatLevel.newest()).type)
    got = pmlkit.privatize(mech, s, rng=11).to_list()
    want = pmlkit.privatize(mech, np.array(values, dtype=object), rng=11).tolist()
    assert got == want


@pytest.mark.parametrize("bad", [
    struct.pack("<i", -1) + b"abcd" + struct.pack("<ii", 0, 0),  # a negative length
    struct.pack("<i", 20) + b"abcd" + struct.pack("<ii", 7, 0),  # no data buffer 7
    struct.pack("<i", 20) + b"abcd" + struct.pack("<ii", 0, 30),  # past its buffer's end
    struct.pack("<i", 2) + b"\xff\xfe".ljust(12, b"\0"),  # not UTF-8
], ids=["negative-length", "missing-buffer", "past-the-end", "not-utf8"])
@pytest.mark.parametrize("policy", [{}, {"missing": "keep"}, {"unknown_as": "a"}])
def test_a_forged_view_is_refused_before_any_library_reads_it(bad: bytes,
                                                               policy: dict[str, str]) -> None:
    """A string_view record that is no label sends the column to the general path, whose
    pyarrow cast trusts the views (a forged one crashed the process): it is now validated
    first and refused as bad data, with or without the policies."""
    mech = pmlkit.Mechanism(np.full((2, 2), 0.5), ("a", "b"), ("a", "b"))
    good = struct.pack("<i", 1) + b"a".ljust(12, b"\0")
    arr = pa.Array.from_buffers(pa.string_view(), 2,
                                [None, pa.py_buffer(good + bad), pa.py_buffer(b"x" * 32)])
    with pytest.raises(DataError, match="not a valid Arrow string_view array"):
        pmlkit.privatize(mech, arr, rng=1, **policy)


def krr_mech(labels: list[str], eps: float = 1.0) -> pmlkit.Mechanism:
    k = len(labels)
    w = np.expm1(eps) * np.eye(k) + 1.0
    return pmlkit.Mechanism(w / w.sum(axis=1, keepdims=True), tuple(labels), tuple(labels))


def containers(values: list[str | None]) -> dict[str, object]:
    chunked = pa.chunked_array([pa.array(values[:7]), pa.array(values[7:])]) \
        if len(values) > 7 else pa.chunked_array([pa.array(values, type=pa.string())])
    return {
        "pa.string": pa.array(values, type=pa.string()),
        "pa.large_string": pa.array(values, type=pa.large_string()),
        "pa.string_view": pa.array(values, type=pa.string_view()),
        "pa.chunked": chunked,
        "pandas string[pyarrow]": pd.Series(values, dtype="string[pyarrow]"),
        "polars String": pl.Series("s", values, dtype=pl.String),
        "polars Categorical": pl.Series("s", values, dtype=pl.String).cast(pl.Categorical),
        "polars Enum": pl.Series("s", values, dtype=pl.String).cast(
            pl.Enum([*sorted({v for v in values if v is not None}), "unused"])),
    }


def as_list(out: object) -> list[object]:
    if hasattr(out, "to_pylist"):
        return list(out.to_pylist())
    return list(out.to_list() if hasattr(out, "to_list") else out)


@settings(max_examples=25)
@given(st.lists(LABEL, min_size=2, max_size=6, unique=True), st.data())
def test_every_string_container_gives_the_numpy_values(labels: list[str],
                                                       data: st.DataObject) -> None:
    """Under one seed every string container releases the values of the numpy object
    path (same random words in the same order), whichever encoder matched the labels."""
    values = data.draw(st.lists(st.sampled_from(labels), min_size=1, max_size=40))
    mech = krr_mech(labels)
    expected = pmlkit.privatize(mech, np.array(values, dtype=object), rng=7).tolist()
    for name, vals in containers(values).items():
        assert as_list(pmlkit.privatize(mech, vals, rng=7)) == expected, name


@pytest.mark.parametrize("bad", ["zz", None])
def test_every_string_container_refuses_like_numpy(bad: str | None) -> None:
    """An unknown label or a null is refused with the numpy path's message, whatever the
    container (including polars categoricals whose global categories hold other
    strings)."""
    pl.Series(["zz", "other"]).cast(pl.Categorical)  # unrelated categories exist
    labels = ["F", "M", "é\x00"]
    mech = krr_mech(labels)
    values = ["F", "M", "é\x00", bad, "F", bad]
    with pytest.raises(DataError) as ref:
        pmlkit.privatize(mech, np.array(values, dtype=object), rng=1)
    for name, vals in containers(values).items():
        if name == "polars Enum" and bad is not None:
            continue  # an Enum cannot hold a value outside its categories
        with pytest.raises(DataError) as got:
            pmlkit.privatize(mech, vals, rng=1)
        assert str(got.value) == str(ref.value), name


def test_polars_categorical_with_unused_unknown_categories() -> None:
    """Codes of categories that no record uses are never read: a polars Enum whose
    categories include non-labels privatises when its records are all labels."""
    mech = krr_mech(["a", "b"])
    s = pl.Series("s", ["b", "a", "b"], dtype=pl.Enum(["zz", "b", "yy", "a"]))
    expected = pmlkit.privatize(mech, np.array(["b", "a", "b"], dtype=object), rng=2)
    out = pmlkit.privatize(mech, s, rng=2)
    assert out.to_list() == expected.tolist() and out.dtype == s.dtype


def test_chunk_boundaries_keep_the_stream() -> None:
    """Several encoding chunks (2^20 records each) of a string_view and a large_string
    array give the values of the numpy path under one seed."""
    from pmlkit.privatization import CHUNK_ROWS

    labels = ["Female", "Male", "Other-longer12"]
    rng = np.random.default_rng(5)
    values = np.array(labels, dtype=object)[rng.integers(0, 3, CHUNK_ROWS + 1000)]
    mech = krr_mech(labels)
    expected = pmlkit.privatize(mech, values, rng=11)
    for t in (pa.large_string(), pa.string_view()):
        out = pmlkit.privatize(mech, pa.array(values, type=t), rng=11)
        assert np.array_equal(np.asarray(out.to_pylist(), dtype=object), expected)
    out = pmlkit.privatize(mech, pl.Series("s", values, dtype=pl.String), rng=11)
    assert np.array_equal(out.to_numpy().astype(object), expected)


def test_view_padding_is_masked_not_trusted() -> None:
    """An inlined string_view record whose padding bytes are not zero is still its
    string to the view keys, which mask the padding: a column of labels is released as
    Arrow reads it. Arrow's full validation calls such an array invalid, so a column with
    a record that is no label (the general path, whose library calls read every value)
    is refused as invalid data rather than read."""
    labels = ["a", "ab", "abcdefghijkl"]
    rows = [(1, b"a"), (2, b"ab"), (12, b"abcdefghijkl"), (1, b"b"), (3, b"abc")]
    views = bytearray()
    for length, raw in rows:
        views += length.to_bytes(4, "little") + raw.ljust(12, b"\xff")
    arr = pa.Array.from_buffers(pa.string_view(), len(rows),
                                [None, pa.py_buffer(bytes(views))])
    assert Encoder(labels).encode_arrow(arr.slice(0, 3)).tolist() == [0, 1, 2]
    with pytest.raises(DataError, match="padding bytes were not all zero"):
        Encoder(labels).encode_arrow(arr)


LONG_LABEL = st.text(CHARS, min_size=0, max_size=20)  # inline (<= 12 bytes) and not


@settings(max_examples=80)
@given(st.lists(LONG_LABEL, min_size=1, max_size=12, unique=True), st.integers(0, 3),
       st.lists(st.integers(0, 11), max_size=300), st.booleans())
def test_view_take_is_indexing(labels: list[str], offset: int, picks: list[int],
                               binary: bool) -> None:
    """The output labels of string_view (and binary_view) labels, taken by their views:
    the labels a plain list indexing gives, from a sliced labels array too (long labels
    point into its data buffers), in an array Arrow's full validation accepts."""
    from pmlkit.sampler import arrow_take

    t = pa.binary_view() if binary else pa.string_view()
    values = [lab.encode() for lab in labels] if binary else labels
    filler = [b"x" * 20] * offset if binary else ["x" * 20] * offset
    arr = pa.array(filler + values, type=t).slice(offset)
    idx = np.array([p % len(labels) for p in picks], dtype=np.int16)
    out = arrow_take(arr, idx)
    out.validate(full=True)
    assert out.type == t
    assert out.to_pylist() == [values[i] for i in idx]


def test_view_keys_mix_exact_padded_and_unknown_views() -> None:
    """Records matched from their exact views, records whose padding bytes are not zero
    (matched again masked to their lengths) and records that are no label, in one block
    and across blocks, for a small slot table (keys by slot) and a large one (keys by
    label): the codes a lookup of the values Arrow reads gives."""
    from pmlkit._encoding import ViewKeys

    for labels in (["a", "ab", "abcdefghijkl"],
                   ["a", "ab", "abcdefghijkl"] + [f"w{i}" for i in range(60)]):
        keys = ViewKeys.build(labels)
        assert keys is not None
        assert (keys.slot_words is None) == (len(labels) > 3)
        rows = [(1, b"a", b"\0"), (2, b"ab", b"\xff"), (12, b"abcdefghijkl", b"\0"),
                (1, b"b", b"\0"), (3, b"abc", b"\x01"), (1, b"a", b"\x07"),
                (3, b"w59", b"\0"), (3, b"w59", b"\x80"), (3, b"w60", b"\0")]
        rng = np.random.default_rng(3)
        order = rng.integers(0, len(rows), 70_000)  # over one block of views
        views = b"".join(n.to_bytes(4, "little") + raw.ljust(12, pad)
                         for n, raw, pad in (rows[i] for i in order))
        arr = pa.Array.from_buffers(pa.string_view(), len(order),
                                    [None, pa.py_buffer(views)])
        table = {lab: i for i, lab in enumerate(labels)}
        expected = [table.get(rows[i][1].decode(), -1) for i in order]
        assert keys.codes(arr).tolist() == expected


def test_large_string_text_over_2_gib_is_matched() -> None:
    """A large_string array whose data buffer is over 2 GiB: Arrow cannot cast it to
    string views (their offsets are 32-bit), so it is matched by the general path, as
    before views, and released like the same values in a small array. (The buffer is
    zeroed memory the system hands out lazily: only the records' bytes are touched.)"""
    size = (1 << 31) + 64
    data = np.zeros(size, dtype=np.uint8)
    texts = [b"F", b"M", b"F", b"Male"]
    offsets = [size - 40]
    for raw in texts:
        start = offsets[-1]
        data[start:start + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        offsets.append(start + len(raw))
    arr = pa.Array.from_buffers(pa.large_string(), len(texts),
                                [None, pa.py_buffer(np.array(offsets, dtype=np.int64)),
                                 pa.py_buffer(data)])
    values = [raw.decode() for raw in texts]
    assert arr.to_pylist() == values
    mech = krr_mech(["F", "M", "Male"])
    for part in (arr, arr.slice(1)):
        expected = pmlkit.privatize(mech, np.array(values[-len(part):], dtype=object),
                                    rng=5)
        assert pmlkit.privatize(mech, part, rng=5).to_pylist() == list(expected)
    with pytest.raises(DataError, match="value 'Male' appears in 1 row"):
        pmlkit.privatize(krr_mech(["F", "M"]), arr, rng=5)


@pytest.mark.parametrize("binary", [False, True])
def test_view_take_of_chunked_labels(binary: bool) -> None:
    """arrow_take of view labels held in a ChunkedArray (whose take Arrow has, through
    the plain layout): the labels a list indexing gives."""
    from pmlkit.sampler import arrow_take

    texts = ["a", "b", "a label over twelve bytes"]
    t = pa.binary_view() if binary else pa.string_view()
    values = [v.encode() for v in texts] if binary else texts
    labels = pa.chunked_array([pa.array(values[:2], type=t), pa.array(values[2:], type=t)])
    idx = np.array([2, 0, 1, 2])
    out = arrow_take(labels, idx)
    assert out.type == t
    assert out.to_pylist() == [values[i] for i in idx]


def test_view_take_of_binary_labels_with_a_null() -> None:
    """binary_view labels with a null (taken through the plain layout, not by their
    views) are bytes, not text: bytes UTF-8 does not decode are taken as they are."""
    from pmlkit.sampler import arrow_take

    values = [b"\xff\xfe", None, b"raw bytes \x80 over twelve"]
    labels = pa.array(values, type=pa.binary_view())
    idx = np.array([2, 1, 0, 0])
    out = arrow_take(labels, idx)
    out.validate(full=True)
    assert out.type == pa.binary_view()
    assert out.to_pylist() == [values[i] for i in idx]


@pytest.mark.parametrize("bad", [
    struct.pack("<i", -1) + b"abcd" + struct.pack("<ii", 0, 0),  # a negative length
    struct.pack("<i", 20) + b"abcd" + struct.pack("<ii", 7, 0),  # no data buffer 7
    struct.pack("<i", 2) + b"ab".ljust(12, b"\xff"),  # padding that is not zero
], ids=["negative-length", "missing-buffer", "padding"])
def test_view_take_refuses_forged_labels(bad: bytes) -> None:
    """arrow_take of string_view labels Arrow's full validation refuses: a pmlkit
    ValidationError naming the labels, not a pyarrow exception from inside, raised
    before the caller's counts are added to."""
    from pmlkit.errors import ValidationError
    from pmlkit.sampler import arrow_take

    good = struct.pack("<i", 1) + b"a".ljust(12, b"\0")
    labels = pa.Array.from_buffers(pa.string_view(), 2, [None, pa.py_buffer(good + bad)])
    counts = np.zeros(2, dtype=np.int64)
    with pytest.raises(ValidationError, match="labels: not a valid Arrow string_view"):
        arrow_take(labels, np.array([0, 0, 0]), counts)
    assert counts.tolist() == [0, 0]  # refused before anything is counted
