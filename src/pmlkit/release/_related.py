"""Columns a table release copies unchanged that give away a privatised column.

The guarantee of a table release covers the privatised columns only: a column copied as
it is (not named in the spec) is released without protection, and when it is related to
a privatised column (a numeric code of a text column, a relationship that implies a sex)
it reveals that column whatever the mechanism does. :func:`related_column_warnings`
finds such columns on the reference sample, so the release can say so before anything is
published.

Two rules, each on the reference's records:

* *prediction*: guessing the privatised column ``C`` from the copied column ``K`` (the
  most frequent value of ``C`` among the records sharing ``K``'s value) is right for at
  least half of the records the best single guess of ``C`` gets wrong. The guess is
  learnt on one half of the records (even rows, then odd rows) and scored on the other,
  so a column whose values do not repeat (an identifier, a measurement) predicts
  nothing, while one whose values repeat (a first name, a date of birth) is scored on
  what it gives away;
* *a revealing group*: the records sharing one value of ``K`` (at least 30 of them and 1%
  of the sample) hold one value of ``C`` in at least 99% of cases while that value's
  share overall is below 90%, and such groups hold at least 5% of the records.

A numeric privatised column is judged on its grid points (what its mechanism protects),
and a numeric copied column is also judged mapped onto that grid: a copy of a
measurement whose values never repeat (a raw income next to the privatised one) then
predicts the privatised grid point.

Each copied column is checked on its own: two copied columns that give a privatised one
away only together (``C = A xor B``) are not found, and a copied column the reference
does not hold cannot be checked (the release names those).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["related_column_warnings"]

def _codes(values: Any) -> tuple[np.ndarray, int]:
    import pandas as pd

    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return np.asarray(codes, dtype=np.int64), len(uniques)


def _grid_codes(values: Any, grid: Any) -> tuple[np.ndarray, int] | None:
    """Numbers as codes of ``grid`` (clamp and round, as a release maps them; a missing
    value is a code of its own), or ``None`` when some value is not a number."""
    import pandas as pd

    x = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
    if np.count_nonzero(np.isnan(x)) != np.count_nonzero(pd.isna(pd.Series(values))):
        return None
    finite = np.isfinite(x)
    codes = np.full(x.shape[0], -1, dtype=np.int64)  # missing
    codes[finite] = grid.encode(x[finite]).codes
    codes[np.isposinf(x)] = grid.n - 1
    codes[np.isneginf(x)] = 0
    return _codes(codes)


def _held_out_accuracy(k: np.ndarray, nk: int, c: np.ndarray, nc: int
                       ) -> tuple[float, float]:
    """``(accuracy of the best single guess, accuracy of the guess from K)``, each learnt
    on one half of the records (even, odd rows) and scored on the other, averaged over
    the two ways round."""
    right0 = right_k = 0.0
    for learn, score in ((slice(0, None, 2), slice(1, None, 2)),
                         (slice(1, None, 2), slice(0, None, 2))):
        kl, cl, ks, cs = k[learn], c[learn], k[score], c[score]
        table = np.bincount(kl * nc + cl, minlength=nk * nc).reshape(nk, nc)
        guess0 = int(np.bincount(cl, minlength=nc).argmax())
        seen = table.sum(axis=1) > 0
        guess = np.where(seen, table.argmax(axis=1), guess0)
        right0 += float(np.count_nonzero(cs == guess0))
        right_k += float(np.count_nonzero(guess[ks] == cs))
    return right0 / c.size, right_k / c.size


def _revealing_share(k: np.ndarray, nk: int, c: np.ndarray, nc: int) -> float:
    """The share of the records in groups of K that reveal C (the module's second rule)."""
    m = c.size
    table = np.bincount(k * nc + c, minlength=nk * nc).reshape(nk, nc)
    base = np.bincount(c, minlength=nc) / m
    size = table.sum(axis=1)
    top = table.argmax(axis=1)
    share = np.divide(table.max(axis=1), size, out=np.zeros(nk), where=size > 0)
    revealing = (size >= max(30, 0.01 * m)) & (share >= 0.99) & (base[top] < 0.9)
    return float(size[revealing].sum() / m)


def related_column_warnings(frame: Any, privatised: Sequence[str],
                            copied: Sequence[str],
                            grids: Mapping[str, Any] | None = None) -> list[str]:
    """One warning per privatised column that a copied column gives away on the
    reference ``frame`` (a pandas DataFrame holding both), by the rules of this module;
    ``grids``: the grid (:class:`pmlkit.numeric.grid.NumericGrid`) of each numeric
    privatised column.

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
    if m < 2:
        return out
    grids = grids or {}
    coded = {name: (_grid_codes(frame[name], grids[name]) if name in grids else None)
             or _codes(frame[name]) for name in privatised}
    for other in copied:
        raw = _codes(frame[other])
        for name in privatised:
            c, nc = coded[name]
            if nc < 2:
                continue
            # a numeric copied column is judged as it is and on the column's grid
            views = [raw]
            if name in grids and (on := _grid_codes(frame[other], grids[name])) is not None:
                views.append(on)
            found = None
            for k, nk in views:
                if nk < 2:
                    continue
                acc0, acc_k = _held_out_accuracy(k, nk, c, nc)
                groups = _revealing_share(k, nk, c, nc)
                if (acc_k - acc0) >= 0.5 * (1.0 - acc0) or groups >= 0.05:
                    found = (acc0, acc_k, groups)
                    break
            if found is not None:
                acc0, acc_k, groups = found
                out.append(
                    f"column {other!r} is copied unchanged and gives away the privatised "
                    f"column {name!r} on the reference: guessed from {other!r} alone, "
                    f"{name!r} is right for {acc_k:.1%} of the records (the best single "
                    f"guess: {acc0:.1%}), and {groups:.1%} of them are in groups of "
                    f"{other!r} that hold one value of {name!r}; the guarantee covers the "
                    f"privatised columns only: privatise {other!r} too or leave it out")
    return out
