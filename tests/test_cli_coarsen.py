"""``pmlkit design --coarsen``: merge rare categories, design, and write a mechanism on the
ORIGINAL labels whose rows agree within the merged group, certified on the original
alphabet over the original column's confidence set (checked here with generic LPs over the
set's own constraints); the utility printed for the chosen candidate is the utility of the
mechanism written."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linprog
from scipy.stats import beta as beta_dist

from oracles import mi_cols, worst_eps_lp
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
    beta = l1_radius(1e-3, m=m, n=8)
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
    (["--coarsen", "3", "--utility", "estimation"],
     r"--coarsen.*--utility mutual_information or accuracy, got 'estimation'"),
])
def test_bad_coarsen_is_one_line(tmp_path, ref_csv, capsys, flags, match):
    import re

    code = main(_design(ref_csv, tmp_path / "m.json", *flags))
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("pmlkit: error:") and len(err.strip().splitlines()) == 1
    assert re.search(match, err)
    assert not (tmp_path / "m.json").exists()


def _released_mi(out) -> tuple[float, np.ndarray, np.ndarray]:
    doc = json.loads(out.read_text())
    w = np.array(doc["matrix"])
    p = np.array([COUNTS[lab] for lab in doc["input_labels"]], dtype=float)
    p /= p.sum()
    return float(mi_cols(w, p).sum()), w, p


def test_printed_utility_of_the_chosen_candidate_is_the_released_one(tmp_path, ref_csv,
                                                                     capsys):
    """At eps = 2 each candidate designed over its merged column's own (smaller) ball
    showed 1.1646 for k = 4, which won, while the mechanism written had 1.1518."""
    out = tmp_path / "m.json"
    args = ["design", "--reference", str(ref_csv), "--column", "x", "--eps", "2",
            "--delta", "1e-3", "--output", str(out)]
    assert main([*args, "--coarsen", "auto"]) == 0
    text = capsys.readouterr().out
    best = [line for line in text.splitlines() if "<- best" in line]
    assert len(best) == 1
    shown = float(best[0].split("utility ")[1].split()[0])
    released, w, p = _released_mi(out)
    assert shown == pytest.approx(released, rel=1e-5)
    # machine-readable: the same number at full precision
    assert main([*args, "--coarsen", "auto", "--overwrite", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cands = report["coarsening_candidates"]
    chosen = [c for c in cands["candidates"] if c["k"] == cands["best"]]
    released, w, p = _released_mi(out)
    assert chosen[0]["utility"] == pytest.approx(released, rel=1e-9)
    assert report["guarantee"]["utility_value"] == chosen[0]["utility"]
    beta = l1_radius(1e-3, m=sum(COUNTS.values()), n=8)
    assert worst_eps_lp(w, center=p, radius=beta) <= 2.0 + 1e-7


def test_coarsen_over_the_clopper_pearson_box(tmp_path, ref_csv):
    out = tmp_path / "m.json"
    res = CliRunner().invoke(cli, _design(ref_csv, out, "--coarsen", "3", "--confidence",
                                          "box-cp", "--json"))
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    labels = doc["input_labels"]
    w = np.array(doc["matrix"])
    merged = [labels.index(x) for x in "defgh"]
    assert all(np.array_equal(w[merged[0]], w[i]) for i in merged)
    # the set is the 8-category Clopper-Pearson box (exact intervals at delta / (2N) per
    # tail, from scipy's beta quantiles), and the mechanism is eps-PML over all of it
    k = np.array([COUNTS[lab] for lab in labels], dtype=float)
    m, a = k.sum(), 1e-3 / 16
    lo = beta_dist.ppf(a, k, m - k + 1)
    hi = beta_dist.isf(a, k + 1, m - k)
    g = json.loads(res.stdout)["guarantee"]
    assert g["confidence"] == "box-cp" and g["set"]["kind"] == "box"
    np.testing.assert_allclose(g["set"]["lower"], lo, rtol=1e-9)
    np.testing.assert_allclose(g["set"]["upper"], hi, rtol=1e-9)
    worst = worst_eps_lp(w, lower=lo, upper=hi)
    assert worst <= 1.0 + 1e-7
    assert g["certified_eps"] == pytest.approx(worst, abs=1e-7)
    # accuracy of the release on the original column (a merged row is never correct)
    outs = doc["output_labels"]
    p = k / m
    acc = sum(p[i] * w[i, outs.index(x)] for i, x in enumerate(labels) if x in outs)
    assert g["utility_value"] == pytest.approx(acc, rel=1e-9)


@pytest.mark.parametrize("confidence", ["auto", "l1-kappa", "box-kl"])
def test_coarsen_works_with_every_confidence_method(tmp_path, ref_csv, confidence):
    out = tmp_path / "m.json"
    res = CliRunner().invoke(cli, _design(ref_csv, out, "--coarsen", "2", "--confidence",
                                          confidence, "--json"))
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    w = np.array(doc["matrix"])
    s = json.loads(res.stdout)["guarantee"]["set"]
    kw = {key: np.array(s[key]) for key in ("center", "lower", "upper") if key in s}
    if "radius" in s:
        kw["radius"] = s["radius"]
    assert worst_eps_lp(w, **kw) <= 1.0 + 1e-7


@pytest.mark.parametrize(("flag", "says"), [
    # the work budget (deterministic) ran out: the gap it left
    ("--max-work", "certified optimality gap of"),
    # the time cap stopped the search: said so, with the gap it left
    ("--max-seconds", "the time cap (--max-seconds 0.01) stopped the search"),
])
def test_a_candidate_stopped_by_the_budget_warns_in_cli_words(tmp_path, capsys, flag, says):
    ref = tmp_path / "ref.csv"
    ref.write_text("x\n" + "\n".join(f"c{i}" for i in range(20) for _ in range(10 * (20 - i)))
                   + "\n")
    out = tmp_path / "m.json"
    assert main(["design", "--reference", str(ref), "--column", "x", "--eps", "1",
                 "--delta", "1e-3", "--confidence", "box-cp", "--coarsen", "16",
                 flag, "0.01", "--output", str(out)]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("pmlkit: warning: --coarsen (16 kept + "
                                               f"'other'): {says}"), err
    assert "certified optimality gap of" in err[0]
    assert flag in err[0]
    bare = err[0].replace("--max-", "")
    assert "max_seconds" not in bare and "max_work" not in bare


@pytest.mark.parametrize("missing", ["category", "keep"])
def test_coarsen_with_missing_values(tmp_path, missing):
    ref = tmp_path / "ref.csv"
    rows = [lab for lab, k in COUNTS.items() for _ in range(k)] + ["NA"] * 50
    ref.write_text("x\n" + "\n".join(rows) + "\n")
    out = tmp_path / "m.json"
    args = ["design", "--reference", str(ref), "--column", "x", "--na", "NA", "--eps", "1",
            "--delta", "1e-3", "--coarsen", "3", "--output", str(out), "--json"]
    res = CliRunner().invoke(cli, args)
    # refused by default, with the way out
    assert res.exit_code == 1 and "--missing category" in str(res.exception)
    res = CliRunner().invoke(cli, [*args, "--missing", missing])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    g = json.loads(res.stdout)["guarantee"]
    if missing == "category":
        # 50 missing values: the 4th most frequent label, merged into 'other' at k = 3
        assert "(missing)" in doc["input_labels"] and g["m"] == 1050
        assert dict(map(tuple, json.loads(res.stdout)["coarsening"]))["(missing)"] == "other"
    else:
        assert "(missing)" not in doc["input_labels"] and g["m"] == 1000
    labels = doc["input_labels"]
    p = np.array([COUNTS.get(lab, 50) for lab in labels], dtype=float)
    p /= p.sum()
    beta = l1_radius(1e-3, m=int(g["m"]), n=len(labels))
    assert g["beta"] == pytest.approx(beta)
    assert worst_eps_lp(np.array(doc["matrix"]), center=p, radius=beta) <= 1.0 + 1e-7
