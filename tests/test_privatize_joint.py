"""A release of several columns through ``pmlkit privatize``: one mechanism per column, the
joint guarantee required and recorded, second passes that keep the first pass's record, and
``pmlkit assess`` with several mechanisms for one column."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit import L1Ball, Mechanism, leakage_capacity
from pmlkit.cli.main import main
from pmlkit.errors import DataError, ValidationError
from pmlkit.joint import JointGuarantee
from pmlkit.privatization.files import privatize_file

RR = np.array([[0.8, 0.2], [0.2, 0.8]])


def certified(labels: tuple[str, str], w: np.ndarray = RR) -> Mechanism:
    ball = L1Ball([0.5, 0.5], 0.1)
    return Mechanism(w, labels, labels, uncertainty_set=ball.to_dict(),
                     certified_eps=leakage_capacity(w, ball))


A = certified(("x", "y"))
B = certified(("u", "v"))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A data file and a joint reference sample of the pinned two-bit example: (x,u),
    (x,v), (y,u) equally often, never (y,v); mechanism files for columns a and b."""
    rows = ["a,b,id"] + [f"{p},{q},{i}" for i, (p, q) in
                         enumerate(itertools.islice(itertools.cycle(
                             [("x", "u"), ("x", "v"), ("y", "u")]), 300))]
    data = tmp_path / "data.csv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    ref = tmp_path / "ref.csv"
    ref.write_text("a,b\n" + "x,u\nx,v\ny,u\n" * 1000, encoding="utf-8")
    A.save(tmp_path / "a.json")
    B.save(tmp_path / "b.json")
    return {"data": data, "ref": ref, "a": tmp_path / "a.json", "b": tmp_path / "b.json",
            "dir": tmp_path}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def two_column(f: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return ["privatize", "--input", str(f["data"]), "--column", "a", "--column", "b",
            "--output", str(out), *extra]


def pair_pml_by_hand(p: dict[tuple[str, str], float]) -> float:
    """max over output pairs of log(max_x W(y|x) / P(y)), the pair through RR x RR, with
    the max over every pair x of the alphabet: the limit of the PML at distributions of the
    confidence set that give the unseen pair (y, v) a vanishing mass."""
    lab = {"x": 0, "y": 1, "u": 0, "v": 1}
    best = -math.inf
    for ya, yb in itertools.product(range(2), repeat=2):
        top = max(RR[i, ya] * RR[j, yb] for i in range(2) for j in range(2))
        py = sum(q * RR[lab[a], ya] * RR[lab[b], yb] for (a, b), q in p.items())
        best = max(best, math.log(top / py))
    return best


def test_two_columns_with_their_own_mechanisms_and_a_computed_joint_guarantee(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    out = files["dir"] / "out.parquet"
    code, stdout, err = run(capsys, *two_column(
        files, out, "--mechanism", f"a={files['a']}", "--mechanism", f"b={files['b']}",
        "--joint-reference", str(files["ref"]), "--delta", "0.05"))
    assert code == 0, err
    assert "joint guarantee of columns a, b" in stdout and "do not add up" in stdout
    df = pq.read_table(out).to_pandas()
    assert set(df["a"]) <= {"x", "y"} and set(df["b"]) <= {"u", "v"}  # each its own
    man = json.loads((files["dir"] / "out.parquet.pmlkit.json").read_text())
    assert man["privatized"]["a"]["mechanism_sha256"] == A.to_dict()["sha256"]
    assert man["privatized"]["b"]["mechanism_sha256"] == B.to_dict()["sha256"]
    assert man["mechanism_sha256"] is None  # two different mechanisms
    g = JointGuarantee.from_dict(man["joint_guarantee"])
    assert g.columns == ("a", "b") and g.delta == 0.05 and g.kind == "exact"
    # the set holds the exact proportions (1/3 each) and distributions next to them, where
    # the pair leaks up to log(16/3) by hand, more than the sum of the per-column values
    exact = pair_pml_by_hand({("x", "u"): 1 / 3, ("x", "v"): 1 / 3, ("y", "u"): 1 / 3})
    assert exact == pytest.approx(math.log(16 / 3), rel=1e-12)
    assert g.certified_eps >= exact - 1e-9
    assert g.certified_eps > g.sum_of_column_eps
    # the Parquet metadata carries the same record
    meta = json.loads(pq.read_schema(out).metadata[b"pmlkit"])
    assert meta["joint_guarantee"] == man["joint_guarantee"]


def test_several_columns_without_a_joint_guarantee_are_refused(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    out = files["dir"] / "out.csv"
    code, _, err = run(capsys, *two_column(files, out, "--mechanism", f"a={files['a']}",
                                           "--mechanism", f"b={files['b']}"))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "no joint guarantee was computed" in err and "--no-joint-guarantee" in err
    assert not out.exists()


def test_no_joint_guarantee_warns_and_records_null(files: dict[str, Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = files["dir"] / "out.csv"
    code, stdout, err = run(capsys, *two_column(
        files, out, "--mechanism", f"a={files['a']}", "--mechanism", f"b={files['b']}",
        "--no-joint-guarantee"))
    assert code == 0, err
    warn = [ln for ln in err.splitlines() if "--no-joint-guarantee" in ln]
    assert len(warn) == 1 and "do not add up" in warn[0]
    assert "NO JOINT GUARANTEE" in stdout
    man = json.loads((files["dir"] / "out.csv.pmlkit.json").read_text())
    assert "joint_guarantee" in man and man["joint_guarantee"] is None


def test_one_plain_mechanism_still_serves_one_column(files: dict[str, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = files["dir"] / "out.csv"
    code, stdout, err = run(capsys, "privatize", "--mechanism", str(files["a"]), "--input",
                            str(files["data"]), "--column", "a", "--output", str(out))
    assert code == 0, err
    assert "do not add up" not in stdout + err  # one column: nothing to add
    man = json.loads((files["dir"] / "out.csv.pmlkit.json").read_text())
    assert man["mechanism_sha256"] == A.to_dict()["sha256"] and man["joint_guarantee"] is None


@pytest.mark.parametrize("flags, match", [
    (["--mechanism", "{a}", "--mechanism", "{b}", "--no-joint-guarantee"],
     "2 plain mechanism files given"),
    (["--mechanism", "a={a}", "--mechanism", "c={b}", "--no-joint-guarantee"],
     "names column 'c', which is not a --column"),
    (["--mechanism", "a={a}", "--no-joint-guarantee"], "no mechanism for column 'b'"),
    (["--mechanism", "a={a}", "--mechanism", "a={b}", "--mechanism", "b={b}",
      "--no-joint-guarantee"], "column 'a' is given two mechanisms"),
    (["--mechanism", "{a}", "--mechanism", "b={b}", "--no-joint-guarantee"],
     "mix of a plain FILE"),
    (["--mechanism", "a={a}", "--mechanism", "b={b}", "--joint-reference", "{ref}"],
     "--joint-reference needs --delta"),
    (["--mechanism", "a={a}", "--mechanism", "b={b}", "--joint-reference", "{ref}",
      "--delta", "0.1", "--no-joint-guarantee"], "give only one of"),
])
def test_bad_mechanism_flags_are_refused(files: dict[str, Path], flags: list[str], match: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = files["dir"] / "out.csv"
    argv = [f.format(a=files["a"], b=files["b"], ref=files["ref"]) for f in flags]
    code, _, err = run(capsys, *two_column(files, out, *argv))
    assert code == 2 and err.startswith("pmlkit: error: ") and err.count("\n") == 1
    assert match in err, err
    assert not out.exists()


def test_a_single_plain_mechanism_for_two_columns_with_a_joint_guarantee(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # one mechanism on two columns of the same labels: b holds x/y here
    data = files["dir"] / "same.csv"
    data.write_text("a,b\n" + "x,y\ny,x\nx,x\n" * 50, encoding="utf-8")
    out = files["dir"] / "same_out.csv"
    code, _, err = run(capsys, "privatize", "--mechanism", str(files["a"]), "--input",
                       str(data), "--column", "a", "--column", "b", "--output", str(out),
                       "--joint-reference", str(data), "--delta", "0.1")
    assert code == 0, err
    # the manifest then discloses the data's own joint estimate: said on stderr
    assert "--joint-reference is an input being privatised" in err
    man = json.loads((files["dir"] / "same_out.csv.pmlkit.json").read_text())
    g = pmlkit.joint_guarantee([A, A], {"a": ["x", "y", "x"] * 50, "b": ["y", "x", "x"] * 50},
                               0.1)
    assert man["joint_guarantee"]["guarantee"]["certified_eps"] == pytest.approx(g.certified_eps,
                                                                    rel=1e-12)


def _plan(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> Path:
    plan_dir = files["dir"] / "plan"
    code, _, err = run(capsys, "joint", "design", "--reference", str(files["ref"]),
                       "--columns", "a,b", "--epsilon", "1.5", "--delta", "0.05", "--mode",
                       "per-column", "--out-dir", str(plan_dir))
    assert code == 0, err
    return plan_dir / "release-plan.json"


def test_a_release_plan_supplies_mechanisms_and_joint_guarantee(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan(files, capsys)
    doc = json.loads(plan.read_text())
    out = files["dir"] / "out.csv"
    code, stdout, err = run(capsys, *two_column(files, out, "--plan", str(plan)))
    assert code == 0, err
    assert "joint guarantee of columns a, b" in stdout
    man = json.loads((files["dir"] / "out.csv.pmlkit.json").read_text())
    assert man["joint_guarantee"] == doc["joint_guarantee"]
    for c in ("a", "b"):
        m = Mechanism.load(plan.parent / doc["mechanism_files"][c])
        assert man["privatized"][c]["mechanism_sha256"] == m.to_dict()["sha256"]
    # recomputed independently from the plan's files and the reference: the same value
    ms = [Mechanism.load(plan.parent / doc["mechanism_files"][c]) for c in ("a", "b")]
    g = pmlkit.joint_guarantee(ms, {"a": ["x", "x", "y"] * 1000, "b": ["u", "v", "u"] * 1000},
                               0.05)
    assert man["joint_guarantee"]["guarantee"]["certified_eps"] == pytest.approx(g.certified_eps,
                                                                    rel=1e-12)


def test_a_release_plan_refuses_other_mechanisms_and_other_columns(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan(files, capsys)
    out = files["dir"] / "out.csv"
    # a mechanism given next to the plan must be the plan's own
    code, _, err = run(capsys, *two_column(files, out, "--plan", str(plan), "--mechanism",
                                           f"a={files['a']}"))
    assert code == 2 and "not the one the release" in err
    # a column the plan does not cover
    code, _, err = run(capsys, "privatize", "--input", str(files["data"]), "--column", "a",
                       "--column", "id", "--output", str(out), "--plan", str(plan))
    assert code == 2 and "column 'id' is not in the release plan" in err
    # the planned file overwritten by a valid certified design at eps = 3 (the identity on
    # the column): the digest differs
    doc = json.loads(plan.read_text())
    ident = pmlkit.design_from_samples(["x", "x", "y"] * 1000, 3.0, 0.05).mechanism
    assert np.allclose(ident.matrix, np.eye(2))
    ident.save(plan.parent / doc["mechanism_files"]["a"])
    code, _, err = run(capsys, *two_column(files, out, "--plan", str(plan)))
    assert code == 1 and "is not the one the plan's joint guarantee was computed for" in err
    # ... and with the plan's digest updated, the recomputed worst case refuses it
    doc["mechanism_sha256"]["a"] = ident.to_dict()["sha256"]
    plan.write_text(json.dumps(doc))
    code, _, err = run(capsys, *two_column(files, out, "--plan", str(plan)))
    assert code == 1 and "does not hold for these mechanisms" in err, err
    assert not out.exists()


def test_second_pass_keeps_the_first_pass_record(tmp_path: Path) -> None:
    """Regression: a second pass over a privatised Parquet file replaced its metadata."""
    import pandas as pd

    src = tmp_path / "in.parquet"
    pd.DataFrame({"a": ["x", "y"] * 20, "b": ["u", "v"] * 20}).to_parquet(src)
    first = tmp_path / "first.parquet"
    privatize_file(A, src, first, "a", rng=np.random.default_rng(0))
    second = tmp_path / "second.parquet"
    privatize_file(B, first, second, "b", rng=np.random.default_rng(1),
                   no_joint_guarantee=True)  # a and b together: waived explicitly
    for doc in (json.loads(pq.read_schema(second).metadata[b"pmlkit"]),
                json.loads((tmp_path / "second.parquet.pmlkit.json").read_text())):
        assert doc["privatized"]["a"]["mechanism_sha256"] == A.to_dict()["sha256"]
        assert doc["privatized"]["b"]["mechanism_sha256"] == B.to_dict()["sha256"]
        assert doc["previous_passes"][0]["columns"] == ["a"]
    # estimation still finds each column's mechanism
    from pmlkit.inference import find_mechanism

    assert find_mechanism(second, "a")[0].to_dict()["sha256"] == A.to_dict()["sha256"]
    # privatising a released column again is a repeated release: refused unless asked
    third = tmp_path / "third.parquet"
    with pytest.raises(DataError, match="pmlkit joint repeat"):
        privatize_file(A, second, third, "a", into="a2", keep_raw=True,
                       rng=np.random.default_rng(2))
    with pytest.raises(DataError, match="already privatised by an earlier pass"):
        privatize_file(A, second, third, "a", rng=np.random.default_rng(2))
    assert not third.exists()
    privatize_file(A, second, third, "a", rng=np.random.default_rng(2), repeat=True)
    doc = json.loads(pq.read_schema(third).metadata[b"pmlkit"])
    assert [p["columns"] for p in doc["previous_passes"]] == [["a"], ["b"]]
    assert set(doc["privatized"]) == {"a", "b"}


def test_second_pass_through_the_cli_needs_the_joint_guarantee_of_both(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    first = files["dir"] / "first.parquet"
    assert run(capsys, "privatize", "--mechanism", str(files["a"]), "--input",
               str(files["data"]), "--column", "a", "--output", str(first))[0] == 0
    second = files["dir"] / "second.parquet"
    base = ["privatize", "--mechanism", str(files["b"]), "--input", str(first), "--column",
            "b", "--output", str(second)]
    code, _, err = run(capsys, *base)
    assert code == 2 and "2 columns are released (a, b)" in err
    code, _, err = run(capsys, *base, "--joint-reference", str(files["ref"]), "--delta",
                       "0.05")
    assert code == 0, err
    man = json.loads((files["dir"] / "second.parquet.pmlkit.json").read_text())
    g = pmlkit.joint_guarantee([A, B], {"a": ["x", "x", "y"] * 1000,
                                        "b": ["u", "v", "u"] * 1000}, 0.05)
    assert man["joint_guarantee"]["columns"] == ["a", "b"]  # re-read strictly below
    assert JointGuarantee.from_dict(man["joint_guarantee"]).verify([A, B]).columns == ("a", "b")
    assert man["joint_guarantee"]["guarantee"]["certified_eps"] == pytest.approx(g.certified_eps,
                                                                    rel=1e-12)
    # again the same column: a repeated release, pointed to pmlkit joint repeat
    third = files["dir"] / "third.parquet"
    code, _, err = run(capsys, "privatize", "--mechanism", str(files["a"]), "--input",
                       str(second), "--column", "a", "--output", str(third),
                       "--no-joint-guarantee")
    assert code == 1 and "pmlkit joint repeat" in err and "--allow-repeat" in err
    code, _, err = run(capsys, "privatize", "--mechanism", str(files["a"]), "--input",
                       str(second), "--column", "a", "--output", str(third),
                       "--allow-repeat", "--joint-reference", str(files["ref"]),
                       "--delta", "0.05")
    assert code == 2 and "does not cover a repeated release" in err
    assert not third.exists()
    # with the waiver the repeat is released, and the summary says its eps is one pass's
    code, _, err = run(capsys, "privatize", "--mechanism", str(files["a"]), "--input",
                       str(second), "--column", "a", "--output", str(third),
                       "--allow-repeat", "--no-joint-guarantee")
    assert code == 0, err
    assert "column 'a' was privatised by an earlier pass and is released again" in err
    assert "pmlkit joint repeat" in err


def test_privatize_file_mapping_is_checked(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("a,b\nx,u\ny,v\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="names 'c', which is not among columns"):
        privatize_file({"a": A, "c": B}, src, tmp_path / "o.csv", ["a", "b"])
    with pytest.raises(ValidationError, match="has no mechanism for column 'b'"):
        privatize_file({"a": A}, src, tmp_path / "o.csv", ["a", "b"])
    # keys 1 and "1" both name column "1": refused (it was an IndexError)
    ones = tmp_path / "ones.csv"
    ones.write_text("1\nx\ny\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="names column '1' more than once"):
        privatize_file({1: A, "1": A}, ones, tmp_path / "o.csv", ["1"])
    assert not (tmp_path / "o.csv").exists()
    with pytest.raises(ValidationError, match="joint_guarantee must be a JointGuarantee"):
        privatize_file({"a": A, "b": B}, src, tmp_path / "o.csv", ["a", "b"],
                       joint_guarantee=1.0)
    rep = privatize_file({"a": A, "b": B}, src, tmp_path / "o.csv", ["a", "b"],
                         rng=np.random.default_rng(0))
    assert rep.mechanisms_sha256 == (A.to_dict()["sha256"], B.to_dict()["sha256"])


def test_assess_several_mechanisms_reports_the_combined_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w2 = np.array([[0.9, 0.1], [0.3, 0.7]])
    m1, m2 = certified(("x", "y")), certified(("x", "y"), w2)
    m1.save(tmp_path / "m1.json")
    m2.save(tmp_path / "m2.json")
    code, stdout, err = run(capsys, "assess", "--mechanism", str(tmp_path / "m1.json"),
                            "--mechanism", str(tmp_path / "m2.json"), "--prior",
                            "0.3,0.7", "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    p = [0.3, 0.7]
    # by hand: the pair of outputs (y1, y2), each through its own matrix
    by_hand = max(math.log(max(RR[x, a] * w2[x, b] for x in range(2))
                           / sum(p[x] * RR[x, a] * w2[x, b] for x in range(2)))
                  for a in range(2) for b in range(2))
    assert doc["combined"]["eps_min"] == pytest.approx(by_hand, rel=1e-12)
    singles = [d["eps_min"] for d in doc["mechanisms"]]
    assert singles[0] == pytest.approx(max(math.log(max(RR[:, a]) / (p @ RR[:, a]))
                                           for a in range(2)), rel=1e-12)
    assert "do not add up" in doc["warning"]
    code, stdout, _ = run(capsys, "assess", "--mechanism", str(tmp_path / "m1.json"),
                          "--mechanism", str(tmp_path / "m2.json"), "--prior", "0.3,0.7")
    assert code == 0 and "combined release" in stdout and "do not add up" in stdout
    other = certified(("u", "v"))
    other.save(tmp_path / "o.json")
    code, _, err = run(capsys, "assess", "--mechanism", str(tmp_path / "m1.json"),
                       "--mechanism", str(tmp_path / "o.json"), "--prior", "0.3,0.7")
    assert code == 2 and "releases of the same column" in err


def test_dask_engine_two_columns_with_their_own_mechanisms(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    out = files["dir"] / "dout.parquet"
    code, _, err = run(capsys, *two_column(
        files, out, "--mechanism", f"a={files['a']}", "--mechanism", f"b={files['b']}",
        "--no-joint-guarantee", "--engine", "dask"))
    assert code == 0, err
    import pandas as pd

    back = pd.concat([pd.read_parquet(p) for p in sorted(out.glob("part-*.parquet"))])
    assert len(back) == 300 and set(back["a"]) <= {"x", "y"} and set(back["b"]) <= {"u", "v"}
    man = json.loads((files["dir"] / "dout.parquet.pmlkit.json").read_text())
    assert man["privatized"]["b"]["mechanism_sha256"] == B.to_dict()["sha256"]
    assert man["joint_guarantee"] is None and man["engine"] == "dask"
