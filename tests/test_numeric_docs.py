"""docs/numeric.md is checked like code: its ``>>>`` blocks run in order as one doctest."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "numeric.md"
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)


def test_numeric_page_doctests() -> None:
    text = PAGE.read_text(encoding="utf-8")
    blocks = [(text[:m.start()].count("\n") + 2, m.group(2)) for m in FENCE.finditer(text)
              if m.group(1) == "pycon"]
    assert len(blocks) >= 4
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE
                                   | doctest.ELLIPSIS)
    globs: dict[str, object] = {"__name__": "numeric_md"}
    for line, code in blocks:
        test = parser.get_doctest(code, globs, f"numeric.md:{line}", "numeric.md", line)
        runner.run(test, clear_globs=False)
        globs = test.globs
    assert runner.summarize(verbose=False).failed == 0
