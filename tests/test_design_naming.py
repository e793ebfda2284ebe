"""With ``output_names="merged"``, outputs of sub-convex designs are named after the inputs
they most likely come from (the default publishes values: tests/test_publish_values.py)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from pmlkit import mutual_information
from pmlkit.design import design_from_samples, optimal_mechanism


@pytest.mark.parametrize("prior", [(0.33, 0.67), (0.1, 0.2, 0.3, 0.4), (0.5, 0.25, 0.25),
                                   (0.6, 0.1, 0.1, 0.1, 0.1)])
@pytest.mark.parametrize("beta", [0.0, 0.05])
@pytest.mark.parametrize("eps", [math.log(2), 0.2])
def test_no_output_is_named_after_a_minority_of_its_sources(prior, beta, eps):
    p = np.asarray(prior)
    labels = [f"c{i}" for i in range(p.size)]
    mech = optimal_mechanism(p, eps, beta=beta, labels=labels, output_names="merged")
    w = np.asarray(mech)
    m = w.shape[1]
    for j, name in enumerate(mech.output_labels):
        col = p * w[:, j]  # joint P[X = x, Y = j], computed here
        if name in labels:
            x = labels.index(name)
            assert col[x] / col.sum() > 0.5, (name, col / col.sum())
        else:
            # a merged output lists its main sources, the most likely first (a second
            # output standing for the same inputs carries a " (2)" suffix)
            base = re.sub(r" \(\d+\)$", "", name)
            parts = [s for s in base.split(" | ") if not s.startswith("+")]
            post = col / col.sum()
            assert parts[0] == labels[int(np.argmax(post))]
            assert set(parts) <= set(labels)
            assert all(post[labels.index(s)] >= 0.05 for s in parts)
    assert len(set(mech.output_labels)) == m
    # naming is a column permutation: utility unchanged
    assert mutual_information(w, p) == pytest.approx(mech.parameters["utility_value"], abs=1e-12)


def test_binary_design_from_samples_keeps_label_meaning():
    samples = ["Male"] * 670 + ["Female"] * 330
    res = design_from_samples(samples, math.log(2), 1e-6)
    mech = res.mechanism
    assert mech.output_labels == mech.input_labels
    w = np.asarray(mech)
    # each label is more likely to be kept than flipped
    assert w[0, 0] > w[0, 1] and w[1, 1] > w[1, 0]
