"""The audit states, for each (eps, delta) tail row, whether the statement survives
post-processing and the envelope beside it (issue: tail guarantees that survive
post-processing). Pure eps rows carry nothing: post-processing never weakens them."""

from __future__ import annotations

import re

import pytest

from pmlkit.audit import run_audit


@pytest.fixture(scope="module")
def result():
    return run_audit(trials=4, rng=0, families=("laplace", "gaussian"), deltas=(0.3,))


def test_gaussian_rows_state_post_processing_and_laplace_rows_do_not(result):
    gauss = [r for r in result.rows if r.family == "gaussian"]
    assert gauss and all(r.post_processing for r in gauss)
    assert all(not r.post_processing for r in result.rows if r.family == "laplace")
    for r in gauss:
        if r.method.startswith("calibrate_gaussian"):
            m = re.search(r"survives post-processing in (\d+) of (\d+) trials; envelope at "
                          r"delta .*median ([0-9.e+-]+), max ([0-9.e+-]+)", r.post_processing)
            assert m, r.post_processing
            k, n = int(m.group(1)), int(m.group(2))
            assert 0 <= k <= n and n == r.trials
            assert float(m.group(3)) <= float(m.group(4))
        else:  # the continuous tradeoff curves: no envelope computed, said plainly
            assert "not certified to survive post-processing" in r.post_processing


def test_the_report_lists_the_tail_rows(result):
    text = str(result)
    assert "post-processing of the (eps, delta) rows:" in text
    assert text.count("an (eps, delta) tail statement") == sum(
        1 for r in result.rows if r.post_processing)
    assert "post_processing" in result.rows[0].to_dict()
