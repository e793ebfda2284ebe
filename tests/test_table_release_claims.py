"""docs/estimation.md, "The default release on Adult, end to end" (measured with
benchmarks/bench_table_release.py): the claims for the two fast columns, sex and race,
checked against independent computations on the same seeded 10% reference.

* The calibrated k-RR level from the closed form of k-RR's worst case over the l1-ball
  (``e^a = e^eps (1 - t) / (1 - e^eps t)``, ``t`` the smallest share in the ball), and
  the table's k-RR accuracy within Monte Carlo error of its exact expectation
  ``e^a / (e^a + N - 1)``.
* The MI-optimal design merges race (rank 2, not identified) and the default release is
  estimable (rank 5); for sex both are the same full-rank design.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import pmlkit as pk
from pmlkit.design.estimation import mechanism_rank

ROOT = Path(__file__).resolve().parents[1]
EPS, DELTA, SEED = 1.0, 1e-6, 35


def _doc_rows() -> dict[tuple[str, str], list[str]]:
    text = (ROOT / "docs" / "estimation.md").read_text(encoding="utf-8")
    part = text.split("#### The default release on Adult, end to end", 1)[1]
    rows: dict[tuple[str, str], list[str]] = {}
    for line in part.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 10 and cells[1].isdigit():
            rows[(cells[0], cells[3])] = cells
    return rows


def _split(adult_dir: Path, column: str) -> tuple[np.ndarray, np.ndarray]:
    from pmlkit.datasets import load_adult

    vals = load_adult(adult_dir)[column].dropna().astype(str).to_numpy(dtype=object)
    is_ref = np.zeros(vals.size, dtype=bool)
    is_ref[np.random.default_rng(SEED).choice(vals.size, size=vals.size // 10,
                                              replace=False)] = True
    return vals[is_ref], vals[~is_ref]


@pytest.mark.parametrize("column", ["sex", "race"])
def test_krr_row_matches_the_closed_form(adult_dir: Path, column: str) -> None:
    ref, rel = _split(adult_dir, column)
    cats, counts = np.unique(ref, return_counts=True)
    p = counts / counts.sum()
    beta = pk.l1_radius(DELTA, m=int(counts.sum()), n=cats.size)
    t = max(0.0, float(p.min()) - beta / 2)
    level = math.log(math.exp(EPS) * (1 - t) / (1 - math.exp(EPS) * t))
    keep = math.exp(level) / (math.exp(level) + cats.size - 1)
    row = _doc_rows()[(column, "k-RR")]
    assert row[2] == f"{ref.size} / {rel.size}"
    assert row[4] == f"{cats.size} (yes)"
    # one release of rel.size rows: within 4 standard errors of the exact expectation
    se = math.sqrt(keep * (1 - keep) / rel.size)
    assert abs(float(row[5]) - keep) < 4 * se, (row[5], keep)
    if column == "race":
        assert level == pytest.approx(EPS)  # the ball reaches a zero share: plain eps-LDP


def test_race_default_is_estimable_where_mi_merges(adult_dir: Path) -> None:
    ref, _ = _split(adult_dir, "race")
    mi = pk.design_from_samples(ref, EPS, DELTA, estimable=False).mechanism
    default = pk.design_from_samples(ref, EPS, DELTA, estimable=True).mechanism
    assert mechanism_rank(mi) == 2 and mechanism_rank(default) == 5
    rows = _doc_rows()
    assert rows[("race", "MI-optimal")][4] == "2 (no)"
    assert rows[("race", "default")][4] == "5 (yes)"
