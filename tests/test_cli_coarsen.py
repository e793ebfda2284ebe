"""``pmlkit design --coarsen``: merge rare categories, design, and write a mechanism on the
ORIGINAL labels whose rows agree within the merged group, certified on the original
alphabet (checked here with an LP over the l1-ball's own constraints)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linprog

from pmlkit.cli.main import cli, main
from pmlkit.estimation import l1_radius

# 8 categories, two frequent and six rare ones
COUNTS = {"a": 400, "b": 300, "c": 120, "d": 80, "e": 40, "f": 30, "g": 20, "h": 10}


@pytest.fixture
def ref_csv(tmp_path):
    rows = [lab for lab, k in COUNTS.items() for _ in range(k)]
    path = tmp_path / "ref.csv"
    path.write_text("x\n" + "\n".join(rows) + "\n")
    return path


def _design(ref, out, *flags):
    return ["design", "--reference", str(ref), "--column", "x", "--eps", "1",
            "--delta", "1e-3", "--utility", "accuracy", "--output", str(out), *flags]


def min_over_ball(c: np.ndarray, beta: float, w: np.ndarray) -> float:
    """min_Q Q . w over {Q >= 0, sum Q = 1, ||Q - c||_1 <= beta} (generic HiGHS LP)."""
    n = c.size
    eye = np.eye(n)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
    res = linprog(np.concatenate([w, np.zeros(n)]), A_ub=a_ub,
                  b_ub=np.concatenate([c, -c, [beta]]),
                  A_eq=np.concatenate([np.ones(n), np.zeros(n)])[None, :], b_eq=[1.0],
                  bounds=[(0, None)] * (2 * n), method="highs")
    return float(res.fun)


def test_fixed_k_writes_a_mechanism_on_the_original_labels(tmp_path, ref_csv):
    out = tmp_path / "m.json"
    res = CliRunner().invoke(cli, _design(ref_csv, out, "--coarsen", "3", "--json"))
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    labels = doc["input_labels"]
    assert sorted(labels) == sorted(COUNTS)  # every original category is an input
    w = np.array(doc["matrix"])
    merged = [labels.index(x) for x in "defgh"]
    # the merged categories share one row; the kept ones are their own inputs
    assert all(np.array_equal(w[merged[0]], w[i]) for i in merged)
    report = json.loads(res.stdout)
    assert dict(map(tuple, report["coarsening"]))["h"] == "other"
    assert dict(map(tuple, report["coarsening"]))["a"] == "a"
    # the guarantee is stated on the original alphabet: the l1-ball of the 8-category
    # Weissman radius around the 8-category estimate, and it holds there (generic LP)
    m = sum(COUNTS.values())
    p = np.array([COUNTS[lab] for lab in labels], dtype=float) / m
    beta = l1_radius(1e-3, m, 8)
    g = report["guarantee"]
    assert g["n"] == 8 and g["beta"] == pytest.approx(beta)
    worst = max(math.log(w[:, j].max() / min_over_ball(p, beta, w[:, j]))
                for j in range(w.shape[1]) if w[:, j].max() > 0)
    assert worst <= 1.0 + 1e-9
    assert g["certified_eps"] == pytest.approx(worst, abs=1e-9)


def test_privatize_applies_the_coarsened_mechanism(tmp_path, ref_csv):
    out = tmp_path / "m.json"
    assert main(_design(ref_csv, out, "--coarsen", "2")) == 0
    data = tmp_path / "new.csv"
    data.write_text("x\n" + "\n".join("abcdefgh" * 5) + "\n")
    released = tmp_path / "rel.csv"
    assert main(["privatize", "--mechanism", str(out), "--input", str(data), "--column",
                 "x", "--output", str(released), "--seed", "1"]) == 0
    outputs = set(json.loads(out.read_text())["output_labels"])
    values = released.read_text().split("\n")[1:-1]
    assert len(values) == 40 and set(values) <= outputs


def test_auto_prints_every_candidate(tmp_path, ref_csv, capsys):
    out = tmp_path / "m.json"
    assert main(_design(ref_csv, out, "--coarsen", "auto")) == 0
    text = capsys.readouterr().out
    assert text.count("k = ") >= 2 and "<- best" in text
    assert sorted(json.loads(out.read_text())["input_labels"]) == sorted(COUNTS)


@pytest.mark.parametrize("flags,match", [
    (["--coarsen", "0"], r"--coarsen.*'auto' or a number"),
    (["--coarsen", "many"], r"--coarsen.*'many'"),
    (["--coarsen", "3", "--confidence", "box-cp"], r"--coarsen.*--confidence l1"),
])
def test_bad_coarsen_is_one_line(tmp_path, ref_csv, capsys, flags, match):
    import re

    code = main(_design(ref_csv, tmp_path / "m.json", *flags))
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("pmlkit: error:") and len(err.strip().splitlines()) == 1
    assert re.search(match, err)
    assert not (tmp_path / "m.json").exists()
