"""Review of the day's changes: regressions and holes found by attack round 10."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pmlkit._validation import up_text


@pytest.mark.parametrize("value", [0.1, 1e-300, -9.9999995, 2.6663488890420035e17, 0.7])
@pytest.mark.parametrize("digits", [6, 9, 17])
def test_up_text_never_below_the_exact_float(value: float, digits: int) -> None:
    # float(text) >= value held for "0.1", whose decimal value is below the float 0.1
    text = up_text(value, digits)
    assert Decimal(text) >= Decimal(value)
    assert len(Decimal(text).normalize().as_tuple().digits) <= digits
