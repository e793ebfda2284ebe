"""``estimate`` reads what ``privatize`` writes, and scales (issue 35, item 4).

Accuracy is checked against computations written here: a plain EM (iterative Bayesian
update) run long, the KKT conditions of the likelihood over the simplex, a brute-force grid
search on three categories, and the Kronecker product built entry by entry."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmlkit import Mechanism
from pmlkit.cli.main import main
from pmlkit.inference import PROFILE_MAX_CATEGORIES, estimate_distribution, estimate_from_counts
from pmlkit.inference_joint import estimate_joint_distribution
from pmlkit.mle import channel_mle


def krr(k: int, eps: float) -> np.ndarray:
    e = math.exp(eps)
    w = np.full((k, k), 1.0 / (e + k - 1))
    np.fill_diagonal(w, e / (e + k - 1))
    return w


def plain_em(w: np.ndarray, c: np.ndarray, steps: int) -> np.ndarray:
    """Iterative Bayesian update, written out: P'(x) = P(x) sum_y c_y W[x,y] / (n q_y)."""
    cn = c / c.sum()
    p = np.full(w.shape[0], 1.0 / w.shape[0])
    for _ in range(steps):
        q = p @ w
        p = p * (w @ np.divide(cn, q, out=np.zeros_like(q), where=cn > 0))
        p /= p.sum()
    return p


def loglik(w: np.ndarray, c: np.ndarray, p: np.ndarray) -> float:
    q = p @ w
    pos = c > 0
    return float(c[pos] @ np.log(q[pos]))


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# -- the solver ------------------------------------------------------------------------

def test_mle_matches_brute_force_on_three_categories() -> None:
    w = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
    c = np.array([20.0, 45.0, 35.0])
    grid = [(a / 400, b / 400, 1 - (a + b) / 400) for a in range(401) for b in range(401 - a)]
    best = max(grid, key=lambda p: loglik(w, c, np.array(p)))
    p, _, ok = channel_mle(c, w)
    assert ok
    assert np.abs(p - np.array(best)).max() <= 1.5 / 400
    assert loglik(w, c, p) >= loglik(w, c, np.array(best)) - 1e-12


@pytest.mark.parametrize(("k", "eps", "n"), [(60, 1.0, 20_000), (200, 1.0, 10**5),
                                              (200, 4.0, 10**5)])
def test_mle_converges_at_large_k_and_meets_kkt(k: int, eps: float, n: int) -> None:
    """A noisy channel (k-RR at eps = 1, keep probability e / (e + k - 1)) on a
    heavy-tailed distribution: the EM alone stalls; the result must satisfy the KKT
    conditions of max L over the simplex, checked here from scratch, and beat a long plain
    EM's likelihood."""
    rng = np.random.default_rng(k)
    p_true = np.arange(1, k + 1) ** -1.1
    p_true /= p_true.sum()
    w = krr(k, eps)
    c = rng.multinomial(n, p_true @ w).astype(float)
    p, it, ok = channel_mle(c, w, tol=1e-10)
    assert ok and it < 2000
    g = w @ (c / c.sum() / (p @ w))  # gradient of the mean log-likelihood
    assert g.max() <= 1 + 1e-9  # no direction of ascent off the support
    assert np.all(np.abs(g[p > 1e-8] - 1) <= 1e-6)  # stationary on the support
    assert loglik(w, c, p) >= loglik(w, c, plain_em(w, c, 3000)) - 1e-6


def test_point_only_estimate_is_the_same_point_without_intervals() -> None:
    w = krr(5, 1.5)
    c = np.array([300, 120, 80, 250, 250])
    full = estimate_from_counts(c, w)
    point = estimate_from_counts(c, w, intervals=False)
    np.testing.assert_allclose(point.estimate, full.estimate, atol=1e-9)
    assert np.isnan(point.lower).all() and np.isnan(point.upper).all()
    assert point.intervals is False and point.interval_method == "none"
    doc = point.to_dict()
    json.dumps(doc, allow_nan=False)  # valid JSON: no NaN
    assert all(r["lower"] is None and r["upper"] is None for r in doc["categories"])
    assert "lower" not in str(point)


def test_large_k_intervals_cover_by_simulation() -> None:
    """Beyond PROFILE_MAX_CATEGORIES the intervals are the empirical-likelihood ones; their
    coverage over all categories and replications is near the nominal 95%."""
    k = PROFILE_MAX_CATEGORIES + 20
    rng = np.random.default_rng(7)
    p_true = rng.dirichlet(np.ones(k))
    w = krr(k, 3.0)
    hits = []
    for c in rng.multinomial(20_000, p_true @ w, size=12):
        r = estimate_from_counts(c, w)
        assert r.interval_method == "empirical likelihood"
        assert np.all(r.lower <= r.estimate) and np.all(r.estimate <= r.upper)
        hits.append((r.lower <= p_true) & (p_true <= r.upper))
    cover = float(np.mean(hits))  # 12 x 120 indicators
    assert cover >= 0.92, cover


# -- several columns -------------------------------------------------------------------

def test_joint_estimate_through_the_product_mechanism() -> None:
    wa = np.array([[0.7, 0.3], [0.2, 0.8]])
    wb = np.array([[0.6, 0.2, 0.2], [0.1, 0.7, 0.2], [0.2, 0.2, 0.6]])
    ma = Mechanism(wa, ("F", "M"), ("F", "M"))
    mb = Mechanism(wb, ("x", "y", "z"), ("x", "y", "z"))
    rng = np.random.default_rng(3)
    a = rng.choice(["F", "M"], size=4000, p=[0.3, 0.7])
    b = rng.choice(["x", "y", "z"], size=4000, p=[0.5, 0.3, 0.2])
    r = estimate_joint_distribution({"a": a, "b": b}, [ma, mb], intervals=False)
    assert r.categories == tuple(itertools.product(("F", "M"), ("x", "y", "z")))
    # the product channel entry by entry, the counts by a crosstab, a plain EM
    w = np.array([[wa[xa, ya] * wb[xb, yb] for ya in range(2) for yb in range(3)]
                  for xa in range(2) for xb in range(3)])
    tab = pd.crosstab(a, b).reindex(index=["F", "M"], columns=["x", "y", "z"],
                                    fill_value=0)
    c = tab.to_numpy().ravel().astype(float)
    assert r.counts.tolist() == c.tolist()
    np.testing.assert_allclose(r.estimate, plain_em(w, c, 20_000), atol=2e-5)


def test_joint_estimate_through_a_joint_release() -> None:
    from pmlkit.joint import joint_release

    # each output's most likely tuple is a different one: four outputs, rank 4
    w = 0.5 * np.eye(4) + np.random.default_rng(4).dirichlet(np.ones(4), size=4) * 0.5
    prior = np.full(4, 0.25)
    rel = joint_release(("s", "t"), (("a", "b"), (0, 1)), w, prior)
    rng = np.random.default_rng(5)
    j = rng.choice(rel.mechanism.n_outputs, size=3000)
    s = [rel.output_tuples[i][0] for i in j]
    t = [rel.output_tuples[i][1] for i in j]
    r = estimate_joint_distribution({"s": s, "t": t}, rel, intervals=False)
    assert r.categories == (("a", 0), ("a", 1), ("b", 0), ("b", 1))
    c = np.bincount(j, minlength=rel.mechanism.n_outputs).astype(float)
    np.testing.assert_allclose(r.estimate, plain_em(np.asarray(rel.mechanism.matrix), c,
                                                    50_000), atol=1e-4)


# -- the command line ------------------------------------------------------------------

SEX = Mechanism([[0.8, 0.2], [0.25, 0.75]], ("Female", "Male"), ("Female", "Male"))
RACE = Mechanism([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.15, 0.15, 0.7]], ("A", "B", "C"),
                 ("A", "B", "C"))


def _frame(n: int, seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    return pd.DataFrame({"sex": g.choice(["Female", "Male"], size=n, p=[0.4, 0.6]),
                         "race": g.choice(["A", "B", "C"], size=n, p=[0.5, 0.3, 0.2]),
                         "city": g.choice(["p", "q"], size=n)})


def _record(path: Path, mechs: dict[str, Mechanism]) -> None:
    doc = {"columns": list(mechs), "into": list(mechs),
           "mechanism": {c: m.to_dict() for c, m in mechs.items()}}
    path.with_name(path.name + ".pmlkit.json").write_text(json.dumps(doc))


def test_cli_folder_of_outputs_and_glob(capsys, tmp_path: Path) -> None:
    SEX.save(tmp_path / "sex.json")
    for i in range(2):
        _frame(1500, i).to_csv(tmp_path / f"in{i}.csv", index=False)
    (tmp_path / "out").mkdir()
    code, _, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "sex.json"),
                       "--input", str(tmp_path / "in0.csv"), "--input",
                       str(tmp_path / "in1.csv"), "--column", "sex", "--output",
                       str(tmp_path / "out"), "--seed", "1", "--allow-uncertified")
    assert code == 0, err
    files = sorted((tmp_path / "out").glob("*.csv"))
    assert len(files) == 2
    both = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    ref = estimate_distribution(both["sex"], SEX)
    for spec in (str(tmp_path / "out"), str(tmp_path / "out" / "*.csv")):
        code, out, err = run(capsys, "estimate", "--input", spec, "--column", "sex",
                             "--json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["n"] == 3000 and len(doc["files"]) == 2
        np.testing.assert_allclose([r["estimate"] for r in doc["categories"]],
                                   ref.estimate, atol=1e-9)
    code, _, err = run(capsys, "estimate", "--input", str(tmp_path / "nothing*.csv"),
                       "--column", "sex")
    assert code != 0 and "matches no" in err


def test_cli_files_through_different_mechanisms_are_refused(capsys, tmp_path: Path) -> None:
    other = Mechanism([[0.9, 0.1], [0.1, 0.9]], ("Female", "Male"), ("Female", "Male"))
    for i, m in enumerate((SEX, other)):
        _frame(200, i).to_csv(tmp_path / f"r{i}.csv", index=False)
        _record(tmp_path / f"r{i}.csv", {"sex": m})
    code, _, err = run(capsys, "estimate", "--input", str(tmp_path / "r*.csv"),
                       "--column", "sex")
    assert code != 0 and "different mechanisms" in err and len(err.splitlines()) == 1


def test_cli_dask_output_folder(capsys, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    SEX.save(tmp_path / "sex.json")
    _frame(3000, 2).to_parquet(tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    code, _, err = run(capsys, "privatize", "--mechanism", str(tmp_path / "sex.json"),
                       "--input", str(tmp_path / "in.parquet"), "--column", "sex",
                       "--output", str(out), "--engine", "dask", "--seed", "2",
                       "--allow-uncertified")
    assert code == 0, err
    assert out.is_dir()
    back = pd.concat([pd.read_parquet(p) for p in sorted(out.glob("part-*"))])
    code, stdout, err = run(capsys, "estimate", "--input", str(out), "--column", "sex",
                            "--json", "--no-intervals")
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["n"] == 3000 and doc["intervals"] is False
    np.testing.assert_allclose([r["estimate"] for r in doc["categories"]],
                               estimate_distribution(back["sex"], SEX).estimate, atol=1e-9)
    part = sorted(out.glob("part-*"))[0]
    part.write_bytes(part.read_bytes() + b"x")  # changed after the release
    code, _, err = run(capsys, "estimate", "--input", str(out), "--column", "sex")
    assert code != 0 and "SHA-256" in err


def test_cli_two_columns_estimate_the_joint_distribution(capsys, tmp_path: Path) -> None:
    df = _frame(2000, 3)
    df.to_csv(tmp_path / "rel.csv", index=False)
    _record(tmp_path / "rel.csv", {"sex": SEX, "race": RACE})
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"),
                         "--column", "sex", "--column", "race", "--json")
    assert code == 0, err
    doc = json.loads(out)
    cats = [tuple(r["category"]) for r in doc["categories"]]
    assert cats == list(itertools.product(("Female", "Male"), ("A", "B", "C")))
    lib = estimate_joint_distribution({"sex": df["sex"], "race": df["race"]}, [SEX, RACE])
    np.testing.assert_allclose([r["estimate"] for r in doc["categories"]], lib.estimate,
                               atol=1e-9)
    assert all(r["lower"] <= r["estimate"] <= r["upper"] for r in doc["categories"])
    # text output names both columns
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"),
                         "--column", "sex", "--column", "race", "--no-intervals")
    assert code == 0 and "'sex', 'race'" in out


def test_cli_joint_release_columns(capsys, tmp_path: Path) -> None:
    from pmlkit.joint import joint_release
    from pmlkit.privatization.files import privatize_file

    w = 0.5 * np.eye(6) + np.random.default_rng(8).dirichlet(np.ones(6), size=6) * 0.5
    rel = joint_release(("sex", "race"), (("Female", "Male"), ("A", "B", "C")), w,
                        np.full(6, 1 / 6))
    _frame(2500, 4).to_parquet(tmp_path / "in.parquet")
    privatize_file({("sex", "race"): rel}, tmp_path / "in.parquet", tmp_path / "o.parquet",
                   ["sex", "race"], rng=5)
    back = pd.read_parquet(tmp_path / "o.parquet")
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "o.parquet"),
                         "--column", "race", "--column", "sex", "--json", "--no-intervals")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["columns"] == ["sex", "race"]  # the release's order
    lib = estimate_joint_distribution({"sex": back["sex"], "race": back["race"]}, rel,
                                      intervals=False)
    np.testing.assert_allclose([r["estimate"] for r in doc["categories"]], lib.estimate,
                               atol=1e-9)
    code, _, err = run(capsys, "estimate", "--input", str(tmp_path / "o.parquet"),
                       "--column", "sex")
    assert code != 0 and "released together" in err


def test_cli_by_a_privatised_column_warns_once(capsys, tmp_path: Path) -> None:
    _frame(1000, 5).to_csv(tmp_path / "rel.csv", index=False)
    _record(tmp_path / "rel.csv", {"sex": SEX, "race": RACE})
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"),
                         "--column", "sex", "--by", "race", "--json", "--no-intervals")
    assert code == 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pmlkit: warning:") and "race" in lines[0]
    json.loads(out)  # stdout stays valid JSON
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"),
                         "--column", "sex", "--by", "city", "--no-intervals")
    assert code == 0 and err == ""


def test_cli_mechanism_count_must_match_columns(capsys, tmp_path: Path) -> None:
    _frame(100, 6).to_csv(tmp_path / "rel.csv", index=False)
    SEX.save(tmp_path / "sex.json")
    code, _, err = run(capsys, "estimate", "--input", str(tmp_path / "rel.csv"),
                       "--column", "sex", "--column", "race", "--mechanism",
                       str(tmp_path / "sex.json"))
    assert code != 0 and "--mechanism" in err
