"""ArrowGather (issue 17): an Arrow release's output labels written chunk by chunk by the
thread that drew each chunk. String chunks must land in record order whatever order they
are put in (each chunk's bytes start where the chunk before it ends), views where they
belong; every record exactly once, never a record left unwritten (the buffers come from
Arrow's pool and hold whatever was there before). Checked against Arrow's own take and
``np.bincount``, with chunks put in random orders from two threads."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np
import pytest

from pmlkit import _kernels
from pmlkit.errors import PMLError, ValidationError
from pmlkit.sampler import ArrowGather

pa = pytest.importorskip("pyarrow")

LABELS = [["", "a", "bb", "ccc", "d" * 12, "é" * 9, ""], ["x" * 30, "", "yy"],
          [f"v{i:04d}" for i in range(300)]]


def _chunks(n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    cuts = np.sort(rng.choice(np.arange(1, n), size=12, replace=False)).tolist()
    bounds = [0, *cuts, n]
    return list(itertools.pairwise(bounds))


def _expected(labels: list[str], idx: np.ndarray) -> list[str]:
    return [labels[i] for i in idx.tolist()]


@pytest.mark.skipif(_kernels.compiled() is None, reason="numba not installed")
@pytest.mark.parametrize("labels", LABELS)
@pytest.mark.parametrize("typ", ["string", "large_string", "string_view"])
@pytest.mark.parametrize("index_type", [np.intp, np.uint16])
def test_chunks_put_in_any_order_from_two_threads_give_the_take(
        labels: list[str], typ: str, index_type: type) -> None:
    t = getattr(pa, typ)()
    lab = pa.array(labels, type=t)
    rng = np.random.default_rng(len(labels) + len(typ))
    n = 3 * (1 << 16) + 5
    for trial in range(4):
        idx = rng.integers(0, len(labels), n).astype(index_type)
        g = ArrowGather.start(lab, n, count=True)
        assert g is not None
        chunks = _chunks(n, rng)
        rng.shuffle(chunks)  # (a random order of puts, split between two threads)
        errors: list[BaseException] = []

        def run(part: list[tuple[int, int]], gather: ArrowGather = g,
                idx: Any = idx, errors: list[BaseException] = errors) -> None:
            try:
                for lo, hi in part:
                    gather.put(lo, idx[lo:hi])
            except BaseException as exc:  # (re-raised below)
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(chunks[i::2],)) for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        out = g.result()
        out.validate(full=True)
        assert out.type == t and len(out) == n
        assert out.to_pylist() == _expected(labels, idx), trial
        assert g.counts is not None
        assert g.counts.tolist() == np.bincount(idx, minlength=len(labels)).tolist()
        if typ != "string_view":  # the offsets and bytes of Arrow's own take
            ref = lab.take(pa.array(idx.astype(np.int64)))
            assert out.buffers()[1].to_pybytes() == ref.buffers()[1].to_pybytes()
            assert out.equals(ref)


@pytest.mark.skipif(_kernels.compiled() is None, reason="numba not installed")
@pytest.mark.parametrize("typ", ["string", "string_view"])
def test_misuse_is_refused_and_no_unwritten_record_is_handed_out(typ: str) -> None:
    lab = pa.array(["no", "yes"], type=getattr(pa, typ)())
    n = 1 << 13
    idx = np.zeros(n, dtype=np.intp)
    g = ArrowGather.start(lab, n)
    assert g is not None
    g.put(0, idx[:100])
    for lo, hi in ((0, 100), (50, 150), (99, 101), (0, 1)):  # overlaps
        with pytest.raises(ValidationError, match="put already"):
            g.put(lo, idx[lo:hi])
    g.put(200, idx[200:300])  # (waits: records 100..199 not put yet)
    with pytest.raises(PMLError, match=r"(200|100) of 8192 records written"):
        g.result()
    with pytest.raises(ValidationError, match=r"inside 0\.\.8191, got records 8187\.\.8196"):
        g.put(n - 5, idx[:10])
    with pytest.raises(ValidationError, match="intp or uint16"):
        g.put(100, idx[100:200].astype(np.int32))
    bad = idx[100:200].copy()
    bad[50] = 2  # not a label's index
    g.put(100, bad)
    g.put(300, idx[300:])
    with pytest.raises(ValidationError, match=r"label indices in 0\.\.1"):
        g.result()


def test_no_gather_where_the_kernels_do_not_apply() -> None:
    """None (the caller then takes as before): too few records, nulls among the labels,
    a type that is not a string."""
    assert ArrowGather.start(pa.array(["a", "b"]), 10) is None
    assert ArrowGather.start(pa.array(["a", None]), 1 << 16) is None
    assert ArrowGather.start(pa.array([1, 2]), 1 << 16) is None


@pytest.mark.parametrize("container", ["array", "chunked", "table", "int-labels"])
def test_reports_count_arrow_releases(container: str) -> None:
    """privatize_with_report counts the outputs of Arrow arrays and tables (summed over a
    table's columns, as for pandas DataFrames): the counts of the released labels
    themselves, through the gathers (string labels) and from the indices (others)."""
    import pmlkit

    n = 3 * (1 << 14) + 11
    codes = np.random.default_rng(5).integers(0, 3, n)
    if container == "int-labels":
        mech = pmlkit.Mechanism([[0.6, 0.4, 0.0], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]],
                                (10, 20, 30), (10, 20, 30))
        values: Any = pa.array(np.array([10, 20, 30])[codes])
    else:
        mech = pmlkit.Mechanism([[0.6, 0.4, 0.0], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]],
                                ("a", "b", "c"), ("x", "y", "z"))
        values = pa.array(np.array(["a", "b", "c"], dtype=object)[codes].tolist())
    cols: Any = None
    if container == "chunked":
        values = pa.chunked_array([values.slice(0, 1000), values.slice(1000)])
    elif container == "table":
        values = pa.table({"s": values, "t": values, "keep": np.arange(n)})
        cols = ["s", "t"]
    out, report = pmlkit.privatize_with_report(mech, values, rng=4, columns=cols)
    released = (out.column("s").to_pylist() + out.column("t").to_pylist()
                if container == "table" else out.to_pylist())
    assert report.output_counts is not None
    assert report.output_counts == {lab: released.count(lab) for lab in mech.output_labels}
    assert sum(report.output_counts.values()) == len(released)
