"""Outside oracle ``qif`` (quantitative information flow; an optional test dependency, not
installed on Python >= 3.14): only this module is skipped without it.

- maximal leakage       == ``log qif.measure.bayes_vuln.mult_capacity(W)``
- mutual information    == ``qif.measure.shannon.add_leakage(p, W)`` (bits) * ``log 2``
- local-DP epsilon      == ``qif.measure.d_privacy.smallest_epsilon(W, discrete metric)``
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from test_oracles import _needs, mechanisms, priors

qif = pytest.importorskip("qif")


# --------------------------------------------------------------------------------------
# qif
# --------------------------------------------------------------------------------------

@_needs("pmlkit.leakage", "maximal_leakage")
@settings(derandomize=True)
@given(w=mechanisms())
def test_maximal_leakage_is_log_of_qif_multiplicative_capacity(w: np.ndarray) -> None:
    expected = math.log(qif.measure.bayes_vuln.mult_capacity(w))
    assert pmlkit.maximal_leakage(w) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@_needs("pmlkit.leakage", "maximal_leakage", "eps_min")
@settings(derandomize=True)
@given(w=mechanisms(), data=st.data())
def test_maximal_leakage_dominates_pml_and_equals_qif_mult_leakage_bound(
        w: np.ndarray, data: st.DataObject) -> None:
    """PML of every outcome is at most maximal leakage (sup over priors of min-entropy
    leakage, qif's ``mult_leakage`` for a given prior never exceeds its capacity)."""
    p = data.draw(priors(w.shape[0]))
    ml = math.log(qif.measure.bayes_vuln.mult_capacity(w))
    assert math.log(qif.measure.bayes_vuln.mult_leakage(p, w)) <= ml + 1e-12
    assert pmlkit.eps_min(w, p) <= -math.log(p.min()) + 1e-12


@_needs("pmlkit.leakage", "ldp_epsilon")
@settings(derandomize=True)
@given(w=mechanisms())
def test_ldp_epsilon_matches_qif_smallest_epsilon(w: np.ndarray) -> None:
    expected = qif.measure.d_privacy.smallest_epsilon(w, qif.metric.discrete())
    got = pmlkit.ldp_epsilon(w)
    if math.isinf(expected):
        assert math.isinf(got)
    else:
        assert got == pytest.approx(expected, rel=1e-10, abs=1e-12)


def _mutual_information(w: np.ndarray, p: np.ndarray) -> float:
    from pmlkit.utility import mutual_information

    return float(mutual_information(w, p))


@_needs("pmlkit.utility", "mutual_information")
@settings(derandomize=True)
@given(w=mechanisms(), data=st.data())
def test_mutual_information_matches_qif_shannon_leakage(w: np.ndarray,
                                                       data: st.DataObject) -> None:
    p = data.draw(priors(w.shape[0], positive=False))
    expected_bits = qif.measure.shannon.add_leakage(p, w)
    assert _mutual_information(w, p) == pytest.approx(expected_bits * math.log(2),
                                                      rel=1e-9, abs=1e-12)


@_needs("pmlkit.leakage", "eps_min", "pml")
@settings(derandomize=True)
@given(w=mechanisms(), data=st.data())
def test_eps_min_is_max_posterior_to_prior_ratio(w: np.ndarray, data: st.DataObject) -> None:
    """Brute force by Bayes' rule: ``eps_min = max_y log max_x P(x|y) / P(x)``
    (``D_inf(P_{X|Y=y} || P_X)``), with the posterior from the joint ``P(x, y)``; qif's
    ``bayes_vuln.posterior`` (the expected posterior vulnerability) pins the joint."""
    p = data.draw(priors(w.shape[0]))
    joint = p[:, None] * w
    py = joint.sum(axis=0)
    used = py > 0
    post = joint[:, used] / py[used]
    expected = float(np.max(np.log(np.max(post / p[:, None], axis=0))))
    assert pmlkit.eps_min(w, p) == pytest.approx(max(expected, 0.0), rel=1e-9, abs=1e-12)
    assert float(post.max(axis=0) @ py[used]) == pytest.approx(
        qif.measure.bayes_vuln.posterior(p, w), rel=1e-9)
