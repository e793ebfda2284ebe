"""Columns a table release copies unchanged that give away a privatised column.

The guarantee of a table release covers the privatised columns only: a column copied as
it is (not named in the spec) is released without protection, and when it is related to
a privatised column (a numeric code of a text column, a relationship that implies a sex)
it reveals that column whatever the mechanism does. :func:`related_column_warnings`
finds such columns on the reference sample, so the release can say so before anything is
published.

Two rules, each on the reference's records (a column with more distinct values than
``m / 20`` is skipped: an identifier or a measurement predicts every record of a sample
and means nothing here):

* *prediction*: guessing the privatised column ``C`` from the copied column ``K`` (the
  most frequent value of ``C`` among the records sharing ``K``'s value) is right for at
  least half of the records the best single guess of ``C`` gets wrong;
* *a revealing group*: the records sharing one value of ``K`` (at least 30 of them and 1%
  of the sample) hold one value of ``C`` in at least 99% of cases while that value's
  share overall is below 90%, and such groups hold at least 5% of the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["related_column_warnings"]

#: A copied column with more distinct values than ``m / _MAX_DISTINCT_SHARE`` is skipped.
_MAX_DISTINCT_SHARE = 20


def _codes(values: Any) -> tuple[np.ndarray, int]:
    import pandas as pd

    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return np.asarray(codes, dtype=np.int64), len(uniques)


def _relation(k: np.ndarray, nk: int, c: np.ndarray, nc: int) -> tuple[float, float, float]:
    """``(accuracy without K, accuracy from K, share of records in revealing groups)``."""
    m = c.size
    table = np.bincount(k * nc + c, minlength=nk * nc).reshape(nk, nc)
    base = np.bincount(c, minlength=nc) / m
    acc0 = float(base.max())
    acc_k = float(table.max(axis=1).sum() / m)
    size = table.sum(axis=1)
    top = table.argmax(axis=1)
    share = np.divide(table.max(axis=1), size, out=np.zeros(nk), where=size > 0)
    revealing = (size >= max(30, 0.01 * m)) & (share >= 0.99) & (base[top] < 0.9)
    return acc0, acc_k, float(size[revealing].sum() / m)


def related_column_warnings(frame: Any, privatised: Sequence[str],
                            copied: Sequence[str]) -> list[str]:
    """One warning per privatised column that a copied column gives away on the
    reference ``frame`` (a pandas DataFrame holding both), by the rules of this module.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"education": ["HS", "BSc", "MSc", "HS"] * 50,
    ...                       "education-num": [9, 13, 14, 9] * 50,
    ...                       "id": range(200)})
    >>> found = related_column_warnings(frame, ["education"], ["education-num", "id"])
    >>> len(found), found[0].split(" is copied")[0]
    (1, "column 'education-num'")
    """
    out: list[str] = []
    m = len(frame)
    if m == 0:
        return out
    coded = {}
    for name in privatised:
        coded[name] = _codes(frame[name])
    for other in copied:
        k, nk = _codes(frame[other])
        if nk > m / _MAX_DISTINCT_SHARE or nk < 2:
            continue
        for name in privatised:
            c, nc = coded[name]
            if nc < 2:
                continue
            acc0, acc_k, groups = _relation(k, nk, c, nc)
            if (acc_k - acc0) >= 0.5 * (1.0 - acc0) or groups >= 0.05:
                out.append(
                    f"column {other!r} is copied unchanged and gives away the privatised "
                    f"column {name!r} on the reference: guessed from {other!r} alone, "
                    f"{name!r} is right for {acc_k:.1%} of the records (the best single "
                    f"guess: {acc0:.1%}), and {groups:.1%} of them are in groups of "
                    f"{other!r} that hold one value of {name!r}; the guarantee covers the "
                    f"privatised columns only: privatise {other!r} too or leave it out")
    return out
