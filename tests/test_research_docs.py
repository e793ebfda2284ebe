"""The doctested examples of the research pages (docs/envelope.md, interior.md, maxmin.md,
plain_words.md): every ```` ```pycon ```` block runs, in order, as one doctest."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
FENCE = re.compile(r"^```pycon[^\n]*\n(.*?)^```", re.S | re.M)
PAGES = ["envelope.md", "interior.md", "maxmin.md", "plain_words.md"]


@pytest.mark.parametrize("page", PAGES)
def test_page_examples(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = FENCE.findall(text)
    assert blocks, page
    parser = doctest.DocTestParser()
    test = parser.get_doctest("\n".join(blocks), {}, page, str(DOCS / page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{page}: {result.failed} example(s) failed"
    assert result.attempted > 0
