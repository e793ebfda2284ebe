"""The Adult pipeline of pmlkit.demo (make demo), checked against independent numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pmlkit.demo import adult_pipeline, format_pipeline


def _mi_by_hand(w, p):
    """I(X;Y) = sum_{x,y} p(x) W(y|x) log(W(y|x) / P_Y(y)), written out independently."""
    total = 0.0
    for j in range(len(w[0])):
        py = sum(p[i] * w[i][j] for i in range(len(p)))
        for i in range(len(p)):
            if w[i][j] > 0:
                total += p[i] * w[i][j] * math.log(w[i][j] / py)
    return total


def _check(doc):
    eps = doc["eps"]
    assert doc["n_reference"] + doc["n_privatised"] == doc["n_total"]
    assert 0.08 < doc["n_reference"] / doc["n_total"] < 0.12
    g = doc["guarantee"]
    assert g["m"] == doc["n_reference"] and g["certified_eps"] <= eps + 1e-9
    w = doc["mechanism"]["matrix"]
    p = [doc["held_out_distribution"][k] for k in doc["mechanism"]["labels"]]
    # the held-out distribution is inside the ball here, so the guarantee must hold for it
    assert sum(abs(a - b) for a, b in zip(p, g["estimate"], strict=True)) <= g["beta"]
    pml = max(math.log(max(w[i][j] for i in range(2)) / sum(p[i] * w[i][j] for i in range(2)))
              for j in range(2))
    assert doc["pml_held_out"]["designed"] == pytest.approx(pml, rel=1e-12)
    assert pml <= eps + 1e-9
    u = doc["utility"]
    assert u["designed"]["mutual_information"] == pytest.approx(_mi_by_hand(w, p), rel=1e-9)
    # k = 2 randomized response at eps: W = [[e, 1], [1, e]] / (1 + e)
    e = math.exp(eps)
    rr = [[e / (1 + e), 1 / (1 + e)], [1 / (1 + e), e / (1 + e)]]
    assert u["randomized_response"]["mutual_information"] == \
        pytest.approx(_mi_by_hand(rr, p), rel=1e-9)
    assert u["designed"]["mutual_information"] > u["randomized_response"]["mutual_information"]
    # measured utilities agree with the exact ones (n ~ 44k; generous 5-sigma-ish margins)
    for k in ("designed", "randomized_response"):
        assert abs(u[k]["measured"]["best_guess_accuracy"] - u[k]["best_guess_accuracy"]) < 0.02
        assert abs(u[k]["measured"]["mutual_information"] - u[k]["mutual_information"]) < 0.02
    assert doc["randomness"]["seeded"] is False


def test_pipeline_on_adult(adult_dir):
    doc = adult_pipeline(data=adult_dir)
    assert doc["synthetic"] is False and doc["n_total"] == 48842
    assert doc["eps"] == pytest.approx(math.log(2))
    _check(doc)
    text = format_pipeline(doc)
    assert "PML guarantee" in text and "randomized response" in text
    # the numbers the README's quick start quotes for `make demo`, recomputed by hand from
    # the released matrix and the held-out marginals: "the other ~44,000 people", mutual
    # information 0.28 nats against 0.05, the sex guessed right 80% of the time against 67%,
    # "no better than always guessing the majority"
    assert round(doc["n_privatised"], -3) == 44_000
    w = doc["mechanism"]["matrix"]
    p = [doc["held_out_distribution"][k] for k in doc["mechanism"]["labels"]]
    e = math.exp(doc["eps"])
    rr = [[e / (1 + e), 1 / (1 + e)], [1 / (1 + e), e / (1 + e)]]
    assert (round(_mi_by_hand(w, p), 2), round(_mi_by_hand(rr, p), 2)) == (0.28, 0.05)

    def guess(m: list[list[float]]) -> float:  # best guess of x from y: sum_y max_x p_x W
        return sum(max(p[i] * m[i][j] for i in range(2)) for j in range(2))

    assert (round(guess(w), 2), round(guess(rr), 2)) == (0.80, 0.67)
    assert guess(rr) == pytest.approx(max(p), abs=1e-12)  # RR's guess is the majority
    u = doc["utility"]
    assert u["designed"]["best_guess_accuracy"] == pytest.approx(guess(w), rel=1e-12)
    assert u["randomized_response"]["best_guess_accuracy"] == pytest.approx(guess(rr),
                                                                            rel=1e-12)


def test_pipeline_falls_back_to_synthetic(tmp_path, monkeypatch):
    monkeypatch.setenv("PMLKIT_DATA", str(tmp_path))
    doc = adult_pipeline()
    assert doc["synthetic"] is True and "SYNTHETIC" in doc["source"]
    assert "SYNTHETIC" in format_pipeline(doc)
    _check(doc)
    np.testing.assert_allclose(sum(doc["held_out_distribution"].values()), 1.0)
