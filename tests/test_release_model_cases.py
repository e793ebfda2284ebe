"""The reported breaks of the release model, each pinned through the public command line
and API only (so that the same test runs against any version of pmlkit).

Case 1: forged release plans were used by ``pmlkit privatize --plan``.
Case 4: ``release_leakage`` paired mechanisms by position, not by their input labels.
Case 8: ``pmlkit joint design`` crashed in its default (joint-alphabet) mode, and
``privatize --plan`` refused such plans.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
import pmlkit.datasets
from pmlkit.cli.main import main


def _walk(obj: Any, key: str, fn: Callable[[Any], Any]) -> int:
    """Apply ``fn`` to every value stored under ``key`` anywhere in a JSON document."""
    hits = 0
    if isinstance(obj, dict):
        for k in list(obj):
            if k == key:
                obj[k] = fn(obj[k])
                hits += 1
            else:
                hits += _walk(obj[k], key, fn)
    elif isinstance(obj, list):
        for v in obj:
            hits += _walk(v, key, fn)
    return hits


def _replace_strings(obj: Any, old: str, new: str) -> Any:
    if isinstance(obj, dict):
        return {k: _replace_strings(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_replace_strings(v, old, new) for v in obj]
    return new if obj == old else obj


@pytest.fixture(scope="module")
def _honest_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``ref.csv``, ``data.csv`` and the honest plan ``pmlkit joint design``
    writes from them, designed once per module (each test edits a copy of it)."""
    folder = tmp_path_factory.mktemp("honest-plan")
    rng = np.random.default_rng(5)
    a = rng.choice(["x", "y"], 3000, p=[0.6, 0.4])
    b = np.where(rng.random(3000) < 0.8, np.where(a == "x", "u", "v"),
                 rng.choice(["u", "v"], 3000))
    ref = folder / "ref.csv"
    ref.write_text("a,b\n" + "".join(f"{p},{q}\n" for p, q in zip(a, b, strict=True)))
    data = folder / "data.csv"
    data.write_text("a,b\n" + "".join(f"{p},{q}\n" for p, q in
                                      zip(a[:500], b[:500], strict=True)))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["joint", "design", "--reference", str(ref), "--columns", "a,b",
                     "--epsilon", "1", "--delta", "1e-6", "--mode", "per-column",
                     "--out-dir", str(folder / "plan")])
    assert code == 0, err.getvalue()
    return folder


@pytest.fixture
def planned(_honest_plan: Path, tmp_path: Path) -> dict[str, Path]:
    """A fresh copy of the honest plan, its mechanisms and files for each test."""
    shutil.copytree(_honest_plan, tmp_path, dirs_exist_ok=True)
    return {"plan": tmp_path / "plan" / "release-plan.json", "data": tmp_path / "data.csv",
            "ref": tmp_path / "ref.csv", "dir": tmp_path}


def _privatize_with(planned: dict[str, Path], capsys: pytest.CaptureFixture[str]
                    ) -> tuple[int, str, Path]:
    out = planned["dir"] / "out.csv"
    code = main(["privatize", "--plan", str(planned["plan"]), "--input",
                 str(planned["data"]), "--column", "a", "--column", "b", "--output",
                 str(out)])
    return code, capsys.readouterr().err, out


def _edit_plan(planned: dict[str, Path], key: str, fn: Callable[[Any], Any]) -> None:
    doc = json.loads(planned["plan"].read_text())
    assert _walk(doc, key, fn) >= 1, f"no {key!r} in the plan"
    planned["plan"].write_text(json.dumps(doc))


def test_case1_honest_plan_releases(planned: dict[str, Path],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, err, out = _privatize_with(planned, capsys)
    assert code == 0, err
    assert out.exists()


@pytest.mark.parametrize("key, fn", [
    ("radius", lambda v: 0.0),
    ("delta", lambda v: 1e-12 if isinstance(v, float) and v == 1e-6 else v),
    ("m", lambda v: 10**9 if isinstance(v, int) and not isinstance(v, bool) else v),
    ("center", lambda v: v),  # replaced below by a one-point set
], ids=["radius 0", "delta 1e-12", "m 1e9", "one point"])
def test_case1_forged_plan_is_refused(planned: dict[str, Path],
                                      capsys: pytest.CaptureFixture[str], key: str,
                                      fn: Callable[[Any], Any]) -> None:
    if key == "center":
        doc = json.loads(planned["plan"].read_text())

        def point(s: Any) -> Any:
            return s
        hits = 0

        def visit(obj: Any) -> None:
            nonlocal hits
            if isinstance(obj, dict):
                for k, v in list(obj.items()):
                    if k == "set" and isinstance(v, dict) and v.get("kind") == "l1_ball":
                        obj[k] = {"kind": "box", "lower": v["center"], "upper": v["center"]}
                        hits += 1
                    else:
                        visit(v)
            elif isinstance(obj, list):
                for v in obj:
                    visit(v)
        visit(doc)
        assert hits >= 1
        planned["plan"].write_text(json.dumps(doc))
    else:
        _edit_plan(planned, key, fn)
    code, err, out = _privatize_with(planned, capsys)
    assert code != 0 and not out.exists()
    assert err.count("\n") == 1 and err.startswith("pmlkit: error:")


def test_case1_duplicate_guarantee_key_is_refused(planned: dict[str, Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A second "joint_guarantee" key (here a copy of the first: readers that keep the last
    and readers that keep the first see different plans once it is edited) is refused."""
    text = planned["plan"].read_text().rstrip()
    doc = json.loads(text)
    assert text.endswith("}")
    planned["plan"].write_text(text[:-1] + ', "joint_guarantee": '
                               + json.dumps(doc["joint_guarantee"]) + "}")
    code, err, out = _privatize_with(planned, capsys)
    assert code != 0 and not out.exists()
    assert err.count("\n") == 1


def test_case1_identity_swapped_in_with_digest_updated_is_refused(
        planned: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A valid certified design at eps = 3 on column a (the identity) replaces a's file
    and the plan's digest is updated: releasing a raw must be refused."""
    doc = json.loads(planned["plan"].read_text())
    folder = planned["plan"].parent
    name = doc["mechanism_files"]["a"]
    old = pmlkit.Mechanism.load(folder / name).to_dict()["sha256"]
    ref = [line.split(",")[0] for line in planned["ref"].read_text().splitlines()[1:]]
    ident = pmlkit.design_from_samples(ref, 3.0, 1e-6).mechanism
    assert np.allclose(ident.matrix, np.eye(2))
    ident.save(folder / name)
    doc = _replace_strings(doc, old, ident.to_dict()["sha256"])
    planned["plan"].write_text(json.dumps(doc))
    code, err, out = _privatize_with(planned, capsys)
    assert code != 0 and not out.exists(), err
    assert err.count("\n") == 1


def test_case4_release_leakage_matches_mechanisms_by_labels() -> None:
    """The same mechanism with its labels listed in another order is the same release:
    the exact leakage of two releases, by brute force over every output pair."""
    w = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]])
    labels = ("a", "b", "c")
    m1 = pmlkit.Mechanism(w, labels)
    perm = [2, 0, 1]
    m2 = pmlkit.Mechanism(w[perm], tuple(labels[i] for i in perm))
    p = np.array([0.5, 0.3, 0.2])  # in the order of m1's labels
    best = -math.inf
    for y1, y2 in itertools.product(range(3), repeat=2):
        col = w[:, y1] * w[:, y2]  # both releases of the same person, labels aligned
        best = max(best, math.log(col.max() / float(p @ col)))
    got = pmlkit.release_leakage([m1, m2], p)
    assert got == pytest.approx(best, rel=1e-12)
    # different label sets are refused
    other = pmlkit.Mechanism(w, ("a", "b", "z"))
    with pytest.raises(pmlkit.ValidationError):
        pmlkit.release_leakage([m1, other], p)


def _three_by_three(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(11)
    a = rng.choice(["lo", "mid", "hi"], 4000, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(4000) < 0.7, a, rng.choice(["lo", "mid", "hi"], 4000))
    ref = tmp_path / "ref3.csv"
    ref.write_text("a,b\n" + "".join(f"{p},{q}\n" for p, q in zip(a, b, strict=True)))
    data = tmp_path / "data3.csv"
    data.write_text("id,a,b\n" + "".join(f"{i},{p},{q}\n" for i, (p, q) in
                                         enumerate(zip(a[:600], b[:600], strict=True))))
    return ref, data


def test_case8_default_joint_design_finishes_and_releases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref, data = _three_by_three(tmp_path)
    code = main(["joint", "design", "--reference", str(ref), "--columns", "a,b",
                 "--epsilon", "1", "--delta", "1e-6", "--out-dir", str(tmp_path / "plan")])
    err = capsys.readouterr().err
    assert code == 0, err
    plan = json.loads((tmp_path / "plan" / "release-plan.json").read_text())
    assert plan["mode"] == "joint alphabet"
    out = tmp_path / "out.csv"
    code = main(["privatize", "--plan", str(tmp_path / "plan" / "release-plan.json"),
                 "--input", str(data), "--column", "a", "--column", "b", "--output",
                 str(out), "--seed", "1"])
    err = capsys.readouterr().err
    assert code == 0, err
    rows = [line.split(",") for line in out.read_text().splitlines()]
    assert rows[0] == ["id", "a", "b"] and len(rows) == 601
    assert [r[0] for r in rows[1:]] == [str(i) for i in range(600)]  # untouched column
    assert {r[1] for r in rows[1:]} <= {"lo", "mid", "hi"}  # released values stay in domain
    assert {r[2] for r in rows[1:]} <= {"lo", "mid", "hi"}
    man = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    g = man["joint_guarantee"]
    assert g is not None and g["columns"] == ["a", "b"]
    assert g == plan["joint_guarantee"]


def test_case8_adult_sex_income_default_joint_design(
        adult_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["joint", "design", "--reference", str(adult_dir / "adult.data"), "--names",
                 "adult", "--columns", "sex,income", "--epsilon", "1", "--delta", "1e-6",
                 "--out-dir", str(tmp_path / "plan")])
    err = capsys.readouterr().err
    assert code == 0, err
    # adult.test writes income as '<=50K.': the released file uses the reference's labels
    test = pmlkit.datasets.load_adult(adult_dir, split="test")
    test["income"] = test["income"].str.rstrip(".")
    released = tmp_path / "adult_test.parquet"
    test[["age", "sex", "income"]].to_parquet(released)
    out = tmp_path / "private.parquet"
    code = main(["privatize", "--plan", str(tmp_path / "plan" / "release-plan.json"),
                 "--input", str(released), "--column", "sex", "--column", "income",
                 "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    man = json.loads((tmp_path / "private.parquet.pmlkit.json").read_text())
    assert man["joint_guarantee"]["columns"] == ["sex", "income"]
    import pandas as pd

    back = pd.read_parquet(out)
    assert back["age"].equals(test["age"])  # untouched
    assert set(back["sex"]) <= set(test["sex"]) and set(back["income"]) <= set(test["income"])


def test_product_mechanism_answers_the_mechanism_protocol() -> None:
    """ProductMechanism is a PrivacyMechanism: it applies itself column by column and answers
    its own leakage questions (compared with the dense Kronecker product by hand)."""
    from pmlkit.guarantee import PrivacyMechanism
    from pmlkit.sets import L1Ball

    keep = pmlkit.Mechanism(np.eye(2), ("x", "y"), ("x", "y"))
    flip = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("u", "v"), ("v", "u"))
    prod = pmlkit.product_mechanism(keep, flip)
    assert isinstance(prod, PrivacyMechanism) and prod.guarantee is None
    out = prod.apply([["x", "y", "y"], ["u", "u", "v"]], rng=0)
    assert out == [["x", "y", "y"], ["u", "u", "v"]]  # identity; flip relabelled back
    w = np.kron(np.array([[0.7, 0.3], [0.2, 0.8]]), np.array([[0.6, 0.4], [0.1, 0.9]]))
    a = pmlkit.Mechanism(np.array([[0.7, 0.3], [0.2, 0.8]]))
    b = pmlkit.Mechanism(np.array([[0.6, 0.4], [0.1, 0.9]]))
    p = np.array([0.1, 0.2, 0.3, 0.4])
    by_hand = max(math.log(w[:, j].max() / float(p @ w[:, j])) for j in range(4))
    assert pmlkit.product_mechanism(a, b).leakage_under(p) == pytest.approx(by_hand,
                                                                          rel=1e-12)
    ball = L1Ball(p, 0.0)
    assert pmlkit.product_mechanism(a, b).worst_case_over(ball) == pytest.approx(by_hand,
                                                                              rel=1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(0, 2**31 - 1))
def test_joint_eps_is_never_below_the_exact_worst_case(seed: int) -> None:
    """The promised joint eps is rounded against the guarantee: never below the worst case
    recomputed in 60-digit arithmetic at the set's minimisers."""
    import mpmath

    rng = np.random.default_rng(seed)
    wa = rng.dirichlet(np.ones(2), size=2)
    wb = rng.dirichlet(np.ones(3), size=2)
    a = pmlkit.Mechanism(wa, ("x", "y"))
    b = pmlkit.Mechanism(wb, ("u", "v"))
    ref = {"a": rng.choice(["x", "y"], 200).tolist(), "b": rng.choice(["u", "v"], 200).tolist()}
    g = pmlkit.joint_guarantee([a, b], ref, 0.05)
    w = np.kron(wa, wb)
    qs = g.set.argmin_linear(w)  # one minimiser per column
    mpmath.mp.dps = 60
    exact = max(mpmath.log(max(mpmath.mpf(float(x)) for x in w[:, j]))
                - mpmath.log(mpmath.fsum(mpmath.mpf(float(q)) * mpmath.mpf(float(x))
                                         for q, x in zip(qs[j], w[:, j], strict=True)))
                for j in range(w.shape[1]))
    assert mpmath.mpf(g.eps) >= exact
