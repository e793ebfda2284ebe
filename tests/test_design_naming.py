"""Outputs of sub-convex designs are named after the inputs they most likely come from."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pmlkit import mutual_information
from pmlkit.design import design_from_samples, optimal_mechanism


@pytest.mark.parametrize("prior", [(0.33, 0.67), (0.1, 0.2, 0.3, 0.4), (0.5, 0.25, 0.25)])
@pytest.mark.parametrize("beta", [0.0, 0.05])
def test_naming_maximises_label_match_over_all_permutations(prior, beta):
    p = np.asarray(prior)
    mech = optimal_mechanism(p, math.log(2), beta=beta)
    w = np.asarray(mech)
    n, m = w.shape
    assert m <= n
    match = sum(p[i] * w[i, mech.output_labels.index(i)]
                for i in range(n) if i in mech.output_labels)
    # brute force: every way of naming the m outputs after distinct inputs
    best = max(sum(p[names[j]] * w[names[j], j] for j in range(m))
               for names in itertools.permutations(range(n), m))
    assert match == pytest.approx(best, abs=1e-12)
    # naming is a column permutation: utility unchanged, labels distinct inputs
    assert len(set(mech.output_labels)) == m
    assert set(mech.output_labels) <= set(range(n))
    assert mutual_information(w, p) == pytest.approx(mech.parameters["utility_value"], abs=1e-12)


def test_binary_design_from_samples_keeps_label_meaning():
    samples = ["Male"] * 670 + ["Female"] * 330
    res = design_from_samples(samples, math.log(2), 1e-6)
    mech = res.mechanism
    assert mech.output_labels == mech.input_labels
    w = np.asarray(mech)
    # each label is more likely to be kept than flipped
    assert w[0, 0] > w[0, 1] and w[1, 1] > w[1, 0]
