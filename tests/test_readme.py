"""The README's Python blocks marked ``<!-- checked ... -->`` run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
MARK = "<!-- checked"


def _blocks() -> list[tuple[int, str]]:
    text = README.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"^<!-- checked[^\n]*-->\n```python\n(.*?)^```", text, re.S | re.M):
        out.append((text[:m.start()].count("\n") + 1, m.group(1)))
    return out


def test_the_readme_marks_blocks() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.count(MARK) == len(_blocks()) >= 1  # every mark is followed by a block


@pytest.mark.parametrize(("line", "code"), _blocks(), ids=lambda v: str(v)[:12])
def test_readme_block_runs(line: int, code: str, tmp_path, monkeypatch) -> None:
    import matplotlib  # the test extras install it (and scikit-learn, polars): no skip

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "readme"})
