"""What ``pmlkit design`` imports.

On a small CSV the command's own work takes milliseconds; importing pandas took a third of
a second of it (pyarrow's numpy conversion imports pandas). These tests keep the modules
the command does not need out of it, in fresh interpreters.
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


def test_empirical_distribution_of_an_arrow_column_counts_like_counter() -> None:
    from pmlkit import empirical_distribution

    labels = ["lo", "mid", "hi", "mid", "mid", "hi"] * 7 + ["rare"]
    est = empirical_distribution(pa.chunked_array([pa.array(labels[:20]),
                                                  pa.array(labels[20:])]))
    expected = collections.Counter(labels)
    assert dict(zip(est.categories, est.counts.tolist(), strict=True)) == expected
    assert est.counts.dtype == np.int64
