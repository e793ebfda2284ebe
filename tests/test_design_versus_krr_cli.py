"""Issue 35, item 2: "the estimation design must beat k-RR at every N it is used for, or
say that it could not". ``pmlkit design`` compares an estimation design with k-ary
randomized response calibrated to the same guarantee (the largest LDP level whose worst
case over the design's set is ``<= eps``) and says in one line when it could not improve
on it.

The expected values are computed here by hand: the calibrated LDP level from the closed
form of k-RR's worst case over an l1-ball, and the asymptotic error ``tr C`` of the
maximum-likelihood estimate from the inverse Fisher information on the simplex.
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

from pmlkit.cli.main import cli
from pmlkit.mechanism import Mechanism

COULD_NOT = "the estimation design could not improve on k-ary randomized response at " \
            "this guarantee"


def _trace_c(w: np.ndarray, p: np.ndarray) -> float:
    """``tr C``: the inverse Fisher information of ``p`` (free coordinates ``p_1..p_{N-1}``,
    ``p_N = 1 - sum``) from one record released through ``w``, mapped back to all ``N``
    coordinates."""
    n = p.size
    jac = np.vstack([np.eye(n - 1), -np.ones((1, n - 1))])  # d p / d free
    q = p @ w
    dq = jac.T @ w  # (N-1) x M: d q / d free
    info = (dq / q) @ dq.T
    cov = jac @ np.linalg.inv(info) @ jac.T
    return float(np.trace(cov))


def _krr(n: int, level: float) -> np.ndarray:
    e = math.exp(level)
    return (np.full((n, n), 1.0) + (e - 1.0) * np.eye(n)) / (e + n - 1)


def _calibrated_level(p: np.ndarray, beta: float, eps: float) -> float:
    """k-RR at level ``a`` leaks ``log(e^a / (1 + (e^a - 1) P(y)))`` at output ``y``; over
    the l1-ball of radius ``beta`` (within the simplex) the smallest ``P(y)`` is
    ``max(0, p_y - beta / 2)``, so the largest level with worst case ``eps`` solves
    ``e^a = e^eps (1 - t) / (1 - e^eps t)`` at ``t = min_y max(0, p_y - beta / 2)``."""
    t = max(0.0, float(p.min()) - beta / 2)
    if math.exp(eps) * t >= 1:
        return math.inf
    return math.log(math.exp(eps) * (1 - t) / (1 - math.exp(eps) * t))


def _design(tmp_path: pathlib.Path, labels: list[str], delta: str,
            extra: tuple[str, ...] = ("--utility", "estimation")
            ) -> tuple[dict[str, object], str, Mechanism]:
    ref = tmp_path / "ref.csv"
    ref.write_text("x\n" + "".join(f"{v}\n" for v in labels))
    out = tmp_path / "m.json"
    args = ["design", "--reference", str(ref), "--column", "x", "--eps", "1", "--delta",
            delta, "--output", str(out), *extra]
    text = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert text.exit_code == 0, text.output
    as_json = CliRunner().invoke(cli, [*args, "--overwrite", "--json"],
                                 catch_exceptions=False)
    assert as_json.exit_code == 0, as_json.output
    return json.loads(as_json.output), text.output, Mechanism.load(out)


def test_says_when_the_estimation_design_cannot_beat_krr(tmp_path: pathlib.Path) -> None:
    """Five records of two labels at delta = 1e-6: the l1 radius exceeds 2, the set is the
    whole simplex, so an eps-PML mechanism is eps-LDP and k-RR at eps (the calibrated
    level: the smallest share is 0 in the set) is the best binary estimator. The command
    says in one line that the estimation design could not improve on it."""
    doc, text, mech = _design(tmp_path, ["a", "b", "a", "b", "a"], "1e-6")
    lines = [line for line in text.splitlines() if COULD_NOT in line]
    assert len(lines) == 1, text
    versus = doc["versus_randomized_response"]
    assert isinstance(versus, dict)
    assert versus["improves"] is False
    assert versus["ldp_level"] == pytest.approx(1.0, abs=1e-9)
    p = np.array([0.6, 0.4])
    mine = _trace_c(np.asarray(mech.matrix), p)
    krr = _trace_c(_krr(2, 1.0), p)
    # binary RR by hand: 2 q (1 - q) / s^2 with s = W[0, 0] - W[1, 0]
    q = float((p @ _krr(2, 1.0))[0])
    s = (math.e - 1) / (math.e + 1)
    assert krr == pytest.approx(2 * q * (1 - q) / s**2, rel=1e-12)
    assert mine >= krr * (1 - 1e-6)
    assert versus["error_ratio"] == pytest.approx(mine / krr, rel=1e-6)


def test_says_how_much_the_estimation_design_beats_krr(tmp_path: pathlib.Path) -> None:
    """600 records of three labels at delta = 1e-3: a tight set, k-RR calibrated to it (the
    closed form) is beaten, and the command says by how much instead of the refusal."""
    labels = ["c0"] * 310 + ["c1"] * 160 + ["c2"] * 130
    doc, text, mech = _design(tmp_path, labels, "1e-3")
    assert COULD_NOT not in text
    versus = doc["versus_randomized_response"]
    assert isinstance(versus, dict)
    p = np.array([310, 160, 130]) / 600
    g = doc["guarantee"]
    assert isinstance(g, dict)
    beta = float(g["beta"])
    level = _calibrated_level(p, beta, 1.0)
    # the bisection keeps a level that passed the check: at most the closed form
    assert versus["ldp_level"] <= level + 1e-9
    assert versus["ldp_level"] == pytest.approx(level, abs=1e-6)
    ratio = _trace_c(np.asarray(mech.matrix), p) / _trace_c(_krr(3, level), p)
    assert ratio < 0.95
    assert versus["improves"] is True
    assert versus["error_ratio"] == pytest.approx(ratio, rel=1e-5)
    assert f"{versus['error_ratio']:.3g} times that of k-ary randomized response" in text


def test_no_comparison_for_a_mutual_information_design(tmp_path: pathlib.Path) -> None:
    """Two labels at a tight set: the MI design has full rank, is kept, and the
    comparison (about estimation designs) is not printed."""
    doc, text, mech = _design(tmp_path, ["a"] * 300 + ["b"] * 200, "1e-3", extra=())
    assert mech.parameters["utility"] == "mutual_information"
    assert "versus_randomized_response" not in doc
    assert "k-ary randomized response" not in text


def test_the_estimable_default_is_compared_too(tmp_path: pathlib.Path) -> None:
    """Three skewed labels: the MI design merges two of them (rank 2), the default
    releases the estimation design instead, and that design is compared with k-RR at the
    same guarantee like one asked for with ``--utility estimation``."""
    labels = ["c0"] * 480 + ["c1"] * 90 + ["c2"] * 30
    doc, text, mech = _design(tmp_path, labels, "1e-3", extra=())
    assert "estimable" in mech.parameters
    assert str(mech.parameters["utility"]).startswith("estimation_error")
    versus = doc["versus_randomized_response"]
    assert isinstance(versus, dict)
    p = np.array([480, 90, 30]) / 600
    g = doc["guarantee"]
    assert isinstance(g, dict)
    level = _calibrated_level(p, float(g["beta"]), 1.0)
    ratio = _trace_c(np.asarray(mech.matrix), p) / _trace_c(_krr(3, level), p)
    assert versus["error_ratio"] == pytest.approx(ratio, rel=1e-5)
    assert versus["improves"] is (ratio < 1 - 1e-9)
    said = COULD_NOT in text
    assert said is not versus["improves"]
