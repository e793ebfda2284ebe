"""The demo (pmlkit.demo, ``pmlkit demo``): its numbers are checked independently."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pmlkit.cli.main import main as cli_main
from pmlkit.demo import SAMPLE_COUNTS, run, sample


def test_demo_numbers():
    doc = run()
    assert dict(zip(doc["categories"], doc["counts"], strict=True)) == SAMPLE_COUNTS
    assert sorted(sample().tolist()) == sorted(
        [k for k, v in SAMPLE_COUNTS.items() for _ in range(v)])
    p = np.array(doc["p_hat"])
    # k-ary RR: W[x, y] = e^eps / (e^eps + 3) on the diagonal, 1 / (e^eps + 3) elsewhere
    e = 3.0
    hand = [math.log(e / (e + 3) / ((e * q + (1 - q)) / (e + 3))) for q in p]
    # randomized response is built ~1.5e-11 nats below log 3 so that its computed worst
    # case certifies log 3 (design._common.closed_form_eps): rtol 1e-10, not 1e-12
    np.testing.assert_allclose(doc["pml_per_outcome"], hand, rtol=1e-10)
    assert doc["beta"] == pytest.approx(math.sqrt(2 / 1000 * (math.log(14) - math.log(1e-6))))
    # worst case for RR: minimise Q(y) -> move beta/2 of mass away from y
    worst = max(math.log(e / (e + 3) / ((e * max(q - doc["beta"] / 2, 0) + 1
                                         - max(q - doc["beta"] / 2, 0)) / (e + 3))) for q in p)
    assert doc["exact_worst_case_eps"] == pytest.approx(worst, rel=1e-10)
    assert doc["eps_min_at_p_hat"] <= doc["exact_worst_case_eps"] <= doc["paper_bound_epsmax"]
    assert doc["exact_worst_case_eps"] <= doc["paper_bound_l1gamma"]


def test_demo_cli(capsys):
    """`pmlkit demo` runs the same two parts as `make demo`."""
    assert cli_main(["demo", "--json", "--eps", "0.5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pipeline"]["eps"] == pytest.approx(0.5)
    assert doc["pipeline"]["guarantee"]["certified_eps"] <= 0.5 + 1e-9
    assert doc["worst_case_tour"]["ldp_eps"] == pytest.approx(math.log(3))
    assert cli_main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "exact (greedy, pmlkit)" in out and "Part 1" in out
    assert cli_main(["demo", "--delta", "2"]) == 1
    assert "delta must be in (0, 1]" in capsys.readouterr().err


def test_printed_reports_cite_the_published_numbering_not_latex_labels(capsys):
    """What a newcomer reads names the paper's theorems as published (Theorem 4, Section
    4.4), not the LaTeX source's labels (``Thm l1gamma``, ``eq. epsmax``)."""
    from pmlkit.demo import format_report

    text = format_report(run())
    assert "Theorem 4" in text and "Section 4.4" in text
    for label in ("eq. ", "Thm ", "Cor. ", "epsmax", "l1gamma"):
        assert label not in text
