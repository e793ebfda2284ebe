"""Certificates of designed mechanisms, checked by an independent LP oracle.

For every confidence method and N = 2..12, ``design_from_samples`` must (a) never raise
``CertificationError`` on valid input and (b) return a mechanism whose exact worst case
over the set it records (recomputed here by a generic HiGHS LP over the set's defining
constraints, see ``test_sets_lp_oracle``) is at most the certified eps, itself at most the
target eps (plus the certification tolerance).
"""

from __future__ import annotations

import numpy as np
import pytest

from pmlkit.confidence import METHODS, confidence_set
from pmlkit.design import design_from_samples
from pmlkit.design._common import CERTIFY_TOL
from pmlkit.sets import set_from_dict
from test_sets_lp_oracle import _lp_capacity

EPSILONS = (0.3, 1.0, 1.5, 4.0)


def _check_design(counts: list[int], eps: float, delta: float, method: str,
                  utility: str) -> None:
    n = len(counts)
    samples = np.repeat(np.arange(n), counts)
    res = design_from_samples(samples, eps, delta, categories=list(range(n)),
                              confidence=method, utility=utility)
    g = res.guarantee
    # the recorded set is the one the method builds from these counts
    assert g.set == confidence_set(counts, delta, confidence=method).set.to_dict()
    uset = set_from_dict(g.set)
    w = np.asarray(res.mechanism.matrix)
    assert g.certified_eps <= eps + CERTIFY_TOL
    lp = _lp_capacity(uset, w)
    # HiGHS' tolerances: 1e-6 on the log
    assert lp <= eps + 1e-6, (counts, eps, delta, method, g.certified_eps, lp)
    assert g.certified_eps == pytest.approx(lp, abs=1e-6)


def _counts(rng: np.random.Generator, n: int) -> list[int]:
    """Small samples (big boxes: the Clopper-Pearson room sums far above 1), zero counts."""
    m = int(rng.choice([n, 2 * n, 5 * n]))
    c = rng.multinomial(m, rng.dirichlet(np.full(n, 0.5)))
    return [int(x) for x in c]


@pytest.mark.parametrize("method", METHODS)
def test_designs_over_every_method_and_n_keep_their_certificate(method: str) -> None:
    rng = np.random.default_rng(sum(map(ord, method)))
    for n in range(2, 13):
        eps = EPSILONS[n % len(EPSILONS)]
        delta = (1e-6, 1e-3, 0.05)[n % 3]
        _check_design(_counts(rng, n), eps, delta, method, "accuracy")


@pytest.mark.parametrize("method", METHODS)
def test_mutual_information_designs_keep_their_certificate(method: str) -> None:
    rng = np.random.default_rng(1 + sum(map(ord, method)))
    for n in (2, 3, 5, 7):
        _check_design(_counts(rng, n), EPSILONS[n % len(EPSILONS)], 1e-3, method,
                      "mutual_information")


def test_mutual_information_design_at_n10_keeps_its_certificate() -> None:
    _check_design(list(range(1, 11)), 1.0, 1e-3, "box-cp", "mutual_information")


def test_reported_l1_box_l1_box_design_is_certified_exactly() -> None:
    """Counts [3, 1, 2, 5, 2, 2, 5], eps 1.5, delta 1e-6, l1-box: the old greedy certified
    1.5 for a mechanism whose worst case over the recorded set is 5.35."""
    _check_design([3, 1, 2, 5, 2, 2, 5], 1.5, 1e-6, "l1-box", "mutual_information")


def test_l1_box_design_with_many_zero_counts_does_not_crash() -> None:
    """The old greedy indexed a neighbouring row of the batch here: IndexError."""
    _check_design([0, 0, 2, 0, 0, 3, 0, 4, 0, 3, 0, 0], 0.1, 1e-6, "l1-box", "accuracy")
