"""What ``pmlkit design`` imports, and the pandas-free pyarrow conversions behind it.

On a small CSV the command's own work takes milliseconds; importing pandas took a third of
a second of it (pyarrow's numpy conversion imports pandas). These tests keep the modules
the command does not need out of it, in fresh interpreters, and check that the conversions
that replaced pyarrow's give exactly what pyarrow's own gives.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

#: modules the design command does not need
NOT_NEEDED = ("pandas", "matplotlib", "tqdm", "polars", "sklearn", "dask", "scipy.stats")
#: nor does loading the command line and the design command's module (before it runs)
NOT_AT_LOAD = (*NOT_NEEDED, "scipy", "pyarrow")


def _loaded(code: str) -> dict[str, Any]:
    probe = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps({{"loaded": [m for m in {NOT_AT_LOAD!r} if m in sys.modules],
                          "code": globals().get("code")}}))
        """)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_loading_the_command_line_and_design_imports_no_heavy_module() -> None:
    out = _loaded("import pmlkit.cli.main, pmlkit.cli.design")
    assert out["loaded"] == []


@pytest.mark.parametrize("column", ["edu", "grade"])
def test_design_on_a_csv_imports_nothing_it_does_not_need(tmp_path: Path,
                                                          column: str) -> None:
    rows = [f"{i},{'lo mid hi'.split()[i % 3]},{i % 4}" for i in range(200)]
    (tmp_path / "ref.csv").write_text("id,edu,grade\n" + "\n".join(rows) + "\n",
                                      encoding="utf-8")
    out = _loaded(f"""
        from pmlkit.cli.main import main
        code = main(["design", "--reference", {str(tmp_path / "ref.csv")!r},
                     "--column", {column!r}, "--eps", "0.693", "--delta", "1e-6",
                     "--output", {str(tmp_path / "m.json")!r}])
        """)
    assert out["code"] == 0
    # the command reads with pyarrow and designs with scipy.optimize: only those
    assert [m for m in out["loaded"] if m in NOT_NEEDED] == []
    doc = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert doc["matrix"]  # it did design and write the mechanism


# -- the conversions: the same arrays as pyarrow's to_numpy, the same fingerprints ------

def _fingerprint_both_ways(values: object) -> None:
    from pmlkit._provenance import _arrow_labels, sample_fingerprint

    ours = _arrow_labels(values)
    theirs = values.to_numpy(zero_copy_only=False)  # type: ignore[attr-defined]
    assert ours.dtype == theirs.dtype
    assert ours.shape == theirs.shape
    if ours.dtype.kind == "f":
        np.testing.assert_array_equal(ours, theirs)  # NaN == NaN here
    else:
        assert ours.tolist() == theirs.tolist()
    assert sample_fingerprint(values) == sample_fingerprint(theirs)


@pytest.mark.parametrize("values", [
    pa.array(["F", "M", None, "é", ""]),
    pa.array(["a", "b"], type=pa.large_string()),
    pa.chunked_array([pa.array(["x", "y", "z"]), pa.array(["w"])]).slice(1, 2),
    pa.array([3, -1, 2**40], type=pa.int64()),
    pa.array([1, 2, 250], type=pa.uint8()),
    pa.array([0.5, float("nan"), -0.0, 1e300], type=pa.float64()),
    pa.array([0.1, 2.5], type=pa.float32()),
    pa.array([1, None, 3]),                      # nulls in numbers: pyarrow's own path
    pa.array([True, False, True]),               # bit-packed: pyarrow's own path
    pa.array(["a", "b", "a"]).dictionary_encode(),
    pa.chunked_array([], type=pa.int32()),
    pa.chunked_array([], type=pa.string()),
], ids=["str-null", "large-str", "chunked-sliced-str", "int64", "uint8", "float64",
        "float32", "int-null", "bool", "dictionary", "empty-int", "empty-str"])
def test_arrow_labels_are_pyarrows_own_conversion(values: object) -> None:
    _fingerprint_both_ways(values)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(-2**63, 2**63 - 1), max_size=6), min_size=1,
                max_size=4),
       st.integers(0, 8), st.integers(0, 12),
       st.sampled_from(["int64", "int16", "uint32", "float64", "float32"]))
def test_chunked_sliced_numbers_match_pyarrow(chunks: list[list[int]], start: int,
                                              length: int, typ: str) -> None:
    # offsets into shared buffers are where a buffer read goes wrong
    dtype = np.dtype(typ)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        chunks = [[int(np.clip(v, info.min, info.max)) for v in c] for c in chunks]
    arrays = [pa.array(np.asarray(c, dtype=dtype)) for c in chunks]
    values = pa.chunked_array(arrays, type=arrays[0].type).slice(start, length)
    _fingerprint_both_ways(values)
    _fingerprint_both_ways(pa.concat_arrays(arrays).slice(start, length))


def test_empirical_distribution_of_an_arrow_column_counts_like_counter() -> None:
    from pmlkit import empirical_distribution

    labels = ["lo", "mid", "hi", "mid", "mid", "hi"] * 7 + ["rare"]
    est = empirical_distribution(pa.chunked_array([pa.array(labels[:20]),
                                                  pa.array(labels[20:])]))
    expected = collections.Counter(labels)
    assert dict(zip(est.categories, est.counts.tolist(), strict=True)) == expected
    assert est.counts.dtype == np.int64
