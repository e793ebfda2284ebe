"""Numeric columns end to end: ``pmlkit design/privatize/estimate/assess --numeric``, the
file release (CSV and Parquet) and the in-memory release of a numeric mechanism.

Every expected value is computed here independently of the code under test: clamp/round
counts with plain numpy comparisons, PML by its definition, the released values' law
against the mechanism's rows by chi-square, the truth of the estimated mean from the data.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

import pmlkit
from pmlkit.cli.main import main
from pmlkit.numeric.design import laplace_mechanism
from pmlkit.numeric.grid import NumericGrid

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _ages(rng, n):
    """Ages with a tail outside 18..90 on both sides (clamped) and an id/score column."""
    a = np.clip(np.round(rng.normal(42, 15, n)), 5, 99).astype(np.int64)
    return a


def _readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    i = text.index("### Numeric columns")
    block = re.search(r"```bash\n(.*?)```", text[i:], re.S)
    assert block is not None
    cmds = [shlex.split(c) for c in block.group(1).replace("\\\n", " ").splitlines()
            if c.strip()]
    assert [c[:2] for c in cmds] == [["pmlkit", "design"], ["pmlkit", "privatize"],
                                     ["pmlkit", "estimate"]]
    return cmds


def _pml_by_definition(w, p):
    """max_y log(max_x W[x, y] / P_Y(y)) over outputs with P_Y(y) > 0."""
    best = -math.inf
    for j in range(w.shape[1]):
        py = sum(p[i] * w[i, j] for i in range(w.shape[0]))
        if py > 0:
            best = max(best, math.log(max(w[:, j]) / py))
    return best


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_readme_numeric_example_runs_end_to_end(capsys, tmp_path, monkeypatch, fmt):
    """The README's three commands, as written (a Parquet run renames the input and
    output files only): dtype kept, other columns unchanged, values on the grid, the
    clamp counts on the terminal (not in the manifest), the estimate's keys and its mean
    near the truth."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(34)
    pd.DataFrame({"id": np.arange(3000), "age": _ages(rng, 3000)}).to_csv("ref.csv",
                                                                          index=False)
    n = 6000
    people = pd.DataFrame({"id": np.arange(n), "age": _ages(rng, n),
                           "score": np.round(rng.random(n), 6),
                           "city": rng.choice(["Lund", "Malmo", "Ystad"], n)})
    people.to_csv("people.csv", index=False)
    people.to_parquet("people.parquet", index=False)
    for cmd in _readme_commands():
        argv = [a.replace(".csv", f".{fmt}") if a in ("people.csv", "private.csv") else a
                for a in cmd[1:]]
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        if argv[0] == "design":
            assert "clamped" in out and "written to age.json" in out
        if argv[0] == "privatize":
            low, high = int((people.age < 18).sum()), int((people.age > 90).sum())
            assert f"{low + high} clamped ({low} below 18, {high} above 90)" in out
            assert "not for publication" in out
    est = json.loads(out)
    for key in ("mean", "mean_interval", "quantiles", "quantile_intervals", "share_above",
                "share_above_interval"):
        assert key in est
    assert set(est["quantiles"]) == {"0.25", "0.5", "0.75"}
    truth = float(np.clip(people.age, 18, 90).mean())
    lo, hi = est["mean_interval"]
    half = (hi - lo) / 2
    assert 0 < half < 3
    # a secure (unseeded) release: 2 half-widths (z = 3.9) fail once in ~10^4 runs
    assert abs(est["mean"] - truth) <= 2 * half
    man = json.loads(Path(f"private.{fmt}.pmlkit.json").read_text())
    rec = man["privatized"]["age"]["numeric"]
    assert rec["grid"] == {"lower": 18, "upper": 90, "step": 1, "points": 73,
                           "integer": True, "policy": rec["policy"]}
    # the clamp counts are statistics of the raw input: not published
    assert "counts" not in rec and "unknown_mapped_rows" not in man["privatized"]["age"]
    if fmt == "parquet":
        t = pq.read_table("private.parquet")
        src = pq.read_table("people.parquet")
        assert t.schema.field("age").type == pa.int64()
        for c in ("id", "score", "city"):
            assert t.column(c).equals(src.column(c))
        released = t.column("age").to_numpy()
    else:
        lines_in = Path("people.csv").read_text().splitlines()
        lines_out = Path("private.csv").read_text().splitlines()
        assert len(lines_in) == len(lines_out)
        for a, b in zip(lines_in[1:], lines_out[1:], strict=True):
            ca, cb = a.split(","), b.split(",")
            assert (ca[0], ca[2], ca[3]) == (cb[0], cb[2], cb[3])  # byte-identical cells
            assert re.fullmatch(r"\d+", cb[1])  # integers, written as integers
        released = pd.read_csv("private.csv").age.to_numpy()
    assert set(np.unique(released)) <= set(range(18, 91))


def test_mean_interval_covers_on_a_seeded_release(capsys, tmp_path):
    """A seeded release of 8,000 values through the estimation design: the 95% mean
    interval covers the mean of the clamped truth (a fixed seed: deterministic)."""
    rng = np.random.default_rng(7)
    pd.DataFrame({"age": _ages(rng, 3000)}).to_csv(tmp_path / "ref.csv", index=False)
    people = pd.DataFrame({"age": _ages(rng, 8000)})
    people.to_parquet(tmp_path / "p.parquet", index=False)
    m = tmp_path / "m.json"
    code, _, err = run(capsys, "design", "--reference", str(tmp_path / "ref.csv"),
                       "--column", "age", "--numeric", "18:90:1", "--utility",
                       "estimation", "--epsilon", "2", "--delta", "1e-6", "--output", str(m))
    assert code == 0, err
    code, _, err = run(capsys, "privatize", "--mechanism", str(m), "--input",
                       str(tmp_path / "p.parquet"), "--column", "age", "--output",
                       str(tmp_path / "o.parquet"), "--seed", "11")
    assert code == 0, err
    code, out, err = run(capsys, "estimate", "--input", str(tmp_path / "o.parquet"),
                         "--column", "age", "--numeric", "18:90:1", "--json")
    assert code == 0, err
    est = json.loads(out)
    truth = float(np.clip(people.age, 18, 90).mean())
    assert est["mean_interval"][0] <= truth <= est["mean_interval"][1]


@pytest.fixture
def small(tmp_path):
    """A certified discrete Laplace on 0..20 (eps 1.5) saved to a file."""
    g = NumericGrid(0, 20, 1)
    x = np.arange(21.0)
    p = np.exp(-((x - 8) ** 2) / 30)
    p /= p.sum()
    mech = laplace_mechanism(g, pmlkit.L1Ball(p, 0.05), 1.5)
    path = tmp_path / "m.json"
    mech.save(path)
    return g, p, mech, path


def test_released_channel_is_w_row_by_row_and_certified(small, tmp_path):
    """Values on, between and outside the grid, released from a file with a seed: each
    input's released values follow W's row of its clamped/rounded code (chi-square, pooled
    bins), and the PML of that matrix by definition over priors of the recorded set stays
    below the certified eps. The matrix is the one ``numpy.asarray(Mechanism.load)`` reads."""
    _, p, mech, path = small
    w = np.asarray(pmlkit.Mechanism.load(path))
    assert w.shape == (21, 21)
    # inputs: -4 (clamped to 0), 7 (on the grid), 12.5 (rounded up: tie -> 13), 30 (-> 20)
    vals = np.repeat([-4.0, 7.0, 12.5, 30.0], 20_000)
    rows = {-4.0: 0, 7.0: 7, 12.5: 13, 30.0: 20}
    pd.DataFrame({"v": vals}).to_parquet(tmp_path / "in.parquet", index=False)
    report = pmlkit.privatize_file(pmlkit.Mechanism.load(path), tmp_path / "in.parquet",
                                   tmp_path / "out.parquet", "v", rng=5)
    assert report.rows == vals.size
    out = pq.read_table(tmp_path / "out.parquet").column("v").to_numpy()
    assert out.dtype == np.float64
    for v, r in rows.items():
        got = np.bincount(out[vals == v].astype(np.int64), minlength=21)
        exp = w[r] * got.sum()
        big = exp >= 5
        obs = np.append(got[big], got[~big].sum())
        e = np.append(exp[big], exp[~big].sum())
        keep = e > 0
        pval = stats.chisquare(obs[keep], e[keep]).pvalue
        assert pval > 1e-4, (v, pval)
    # the caller gets the raw input's counts; the manifest and the metadata do not
    assert report.input_counts["v"] == {"rows": vals.size, "clamped_low": 20_000,
                                        "clamped_high": 20_000, "rounded": 20_000,
                                        "missing": 0}
    man = json.loads((tmp_path / "out.parquet.pmlkit.json").read_text())
    assert "counts" not in man["privatized"]["v"]["numeric"]
    meta = pq.read_schema(tmp_path / "out.parquet").metadata[b"pmlkit"].decode()
    assert "clamped" not in meta and "rounded" not in meta
    # the guarantee of exactly this matrix, by definition, at priors of the l1 ball
    ball_rng = np.random.default_rng(3)
    priors = [p]
    for _ in range(20):
        d = ball_rng.normal(size=21)
        d -= d.mean()
        q = p + 0.025 * d / np.abs(d).sum()  # l1 distance 0.025 <= 0.05
        if (q >= 0).all():
            priors.append(q)
    for q in priors:
        assert _pml_by_definition(w, q) <= mech.certified_eps + 1e-9


def test_dtypes_are_kept_and_refused_when_they_cannot_be(small, tmp_path):
    _, _, mech, _ = small
    rng = np.random.default_rng(1)
    v = rng.integers(-3, 25, 500)
    df = pd.DataFrame({"i64": v, "i32": v.astype(np.int32), "f64": v + 0.25,
                       "keep": rng.random(500)})
    df.to_parquet(tmp_path / "in.parquet", index=False)
    pmlkit.privatize_file(mech, tmp_path / "in.parquet", tmp_path / "o.parquet",
                          ["i64", "i32", "f64"], rng=2)
    t = pq.read_table(tmp_path / "o.parquet")
    assert t.schema.field("i64").type == pa.int64()
    assert t.schema.field("i32").type == pa.int32()
    assert t.schema.field("f64").type == pa.float64()
    assert t.column("keep").equals(pq.read_table(tmp_path / "in.parquet").column("keep"))
    for c in ("i64", "i32", "f64"):
        assert set(t.column(c).to_numpy().tolist()) <= set(range(21))
    # in memory: pandas and numpy keep the dtype too
    out = pmlkit.privatize(mech, df, columns=["i32", "f64"], rng=3)
    assert out.dtypes["i32"] == np.int32 and out.dtypes["f64"] == np.float64
    assert out["keep"].equals(df["keep"]) and out["i64"].equals(df["i64"])
    arr = pmlkit.privatize(mech, v.astype(np.int16), rng=3)
    assert arr.dtype == np.int16 and set(arr.tolist()) <= set(range(21))
    # a half step cannot be held by an integer column
    half = laplace_mechanism(NumericGrid(0, 10, 0.5), np.full(21, 1 / 21), 1.0)
    with pytest.raises(pmlkit.errors.DataError, match="integer column"):
        pmlkit.privatize(half, v, rng=1)
    with pytest.raises(pmlkit.errors.DataError, match="integer column"):
        pmlkit.privatize_file(half, tmp_path / "in.parquet", tmp_path / "h.parquet", "i64")
    assert not (tmp_path / "h.parquet").exists()


def test_seeded_release_is_the_same_in_memory_and_from_files(small, tmp_path):
    """One seed, one column: the numpy path, the CSV file and the Parquet file release
    the same values (the one draw of the alias sampler on grid codes)."""
    _, _, mech, _ = small
    v = np.random.default_rng(9).integers(-2, 23, 3000)
    pd.DataFrame({"v": v}).to_csv(tmp_path / "in.csv", index=False)
    pd.DataFrame({"v": v}).to_parquet(tmp_path / "in.parquet", index=False)
    mem = pmlkit.privatize(mech, v, rng=4)
    pmlkit.privatize_file(mech, tmp_path / "in.csv", tmp_path / "o.csv", "v", rng=4)
    pmlkit.privatize_file(mech, tmp_path / "in.parquet", tmp_path / "o.parquet", "v", rng=4)
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "o.csv").v.to_numpy(), mem)
    np.testing.assert_array_equal(pq.read_table(tmp_path / "o.parquet").column("v")
                                  .to_numpy(), mem)


def test_missing_values_follow_the_categorical_policy(capsys, small, tmp_path):
    _, _, _, path = small
    (tmp_path / "in.csv").write_text("id,v\n1,3\n2,\n3,40\n4,\n5,7.5\n")
    code, _, err = run(capsys, "privatize", "--mechanism", str(path), "--input",
                       str(tmp_path / "in.csv"), "--column", "v", "--output",
                       str(tmp_path / "o.csv"))
    assert code != 0 and err.count("\n") == 1 and "null" in err and "2" in err
    assert not (tmp_path / "o.csv").exists()
    code, out, err = run(capsys, "privatize", "--mechanism", str(path), "--input",
                         str(tmp_path / "in.csv"), "--column", "v", "--output",
                         str(tmp_path / "o.csv"), "--missing", "keep")
    assert code == 0, err
    lines = (tmp_path / "o.csv").read_text().splitlines()
    assert [ln.split(",")[0] for ln in lines] == ["id", "1", "2", "3", "4", "5"]
    assert lines[2].split(",")[1] in ('', '""') and lines[4].split(",")[1] in ('', '""')
    assert "1 clamped (0 below 0, 1 above 20), 1 rounded" in out and "2 missing" in out
    code, _, err = run(capsys, "privatize", "--mechanism", str(path), "--input",
                       str(tmp_path / "in.csv"), "--column", "v", "--output",
                       str(tmp_path / "c.csv"), "--missing", "category")
    assert code != 0 and err.count("\n") == 1


def test_cli_errors_are_one_line(capsys, small, tmp_path):
    _, _, _, path = small
    pd.DataFrame({"v": [1, 2, 3]}).to_csv(tmp_path / "in.csv", index=False)
    cases = [
        ["privatize", "--mechanism", str(path), "--input", str(tmp_path / "in.csv"),
         "--column", "v", "--output", str(tmp_path / "o.csv"), "--numeric", "0:30:1"],
        ["privatize", "--mechanism", str(path), "--input", str(tmp_path / "in.csv"),
         "--column", "v", "--output", str(tmp_path / "o.csv"), "--numeric", "0:30"],
        ["design", "--reference", str(tmp_path / "in.csv"), "--column", "v", "--numeric",
         "0:20:1", "--utility", "accuracy", "--epsilon", "1", "--delta", "0.1",
         "--output", str(tmp_path / "d.json")],
        ["design", "--reference", str(tmp_path / "in.csv"), "--column", "v",
         "--utility", "abs", "--epsilon", "1", "--delta", "0.1",
         "--output", str(tmp_path / "d.json")],
        ["estimate", "--input", str(tmp_path / "in.csv"), "--column", "v", "--mechanism",
         str(path), "--numeric", "0:10:1"],
    ]
    for argv in cases:
        code, _, err = run(capsys, *argv)
        assert code != 0 and err.startswith("pmlkit: error:") and err.count("\n") == 1, err
    assert "disagrees with the grid 0:20:1" in run(capsys, *cases[0])[2]


def test_design_and_assess_report_the_policy(capsys, tmp_path):
    vals = np.concatenate([np.repeat(np.arange(0, 11), 40), [-5, -1, 14], [2.5, 3.25]])
    pd.DataFrame({"v": vals}).to_csv(tmp_path / "ref.csv", index=False)
    out = tmp_path / "m.json"
    code, stdout, err = run(capsys, "design", "--reference", str(tmp_path / "ref.csv"),
                            "--column", "v", "--numeric", "0:10:1", "--epsilon", "1",
                            "--delta", "1e-3", "--output", str(out), "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["numeric"]["reference_encoding"] == {
        "rows": vals.size, "clamped_low": 2, "clamped_high": 1, "rounded": 2}
    # the default writes a design the analyst can estimate back: the narrowest mean
    # interval among the certified candidates, never one that merges grid points
    assert doc["utility"] == "estimation"
    widths = doc["mean_half_width"]
    assert widths[doc["best"]] is not None
    assert widths[doc["best"]] == min(v for v in widths.values() if v is not None)
    out_abs = tmp_path / "m-abs.json"
    code, stdout, err = run(capsys, "design", "--reference", str(tmp_path / "ref.csv"),
                            "--column", "v", "--numeric", "0:10:1", "--epsilon", "1",
                            "--delta", "1e-3", "--output", str(out_abs), "--json",
                            "--allow-unestimable")
    assert code == 0, err
    doc_abs = json.loads(stdout)
    assert doc_abs["utility"] == "abs"
    assert doc_abs["losses"][doc_abs["best"]] == min(doc_abs["losses"].values())
    mech = pmlkit.Mechanism.load(out)
    assert mech.input_labels == tuple(range(11)) and mech.certified_eps <= 1.0
    code, stdout, err = run(capsys, "assess", "--mechanism", str(out), "--reference",
                            str(tmp_path / "ref.csv"), "--column", "v", "--delta", "1e-3")
    assert code == 0, err
    assert "3 clamped (2 below 0, 1 above 10), 2 rounded" in stdout
    small = tmp_path / "small.json"
    code, _, err = run(capsys, "design", "--reference", str(tmp_path / "ref.csv"),
                       "--column", "v", "--numeric", "0:10:1", "--epsilon", "1",
                       "--delta", "1e-3", "--output", str(small), "--record", "minimal")
    assert code == 0, err
    back = pmlkit.Mechanism.load(small)
    assert "prior" not in back.parameters and back.certified
    assert back.provenance.details["grid"]["points"] == 11  # the release still knows it
    got = pmlkit.privatize(back, np.array([-5, 3, 99]), rng=1)
    assert got.dtype == np.int64 and set(got.tolist()) <= set(range(11))


def test_joint_guarantee_with_a_numeric_column(capsys, small, tmp_path):
    """``joint assess`` and ``privatize --joint-reference`` read a numeric column onto its
    grid (values outside it at its ends): the guarantee equals the one of the Python API
    on the column clamped and rounded by hand."""
    _, _, _, path = small
    g = np.random.default_rng(12)
    n = 3000
    ref = pd.DataFrame({"sex": g.choice(["F", "M"], n), "v": g.integers(-3, 25, n)})
    ref.to_csv(tmp_path / "ref.csv", index=False)
    sex = pmlkit.design_from_samples(ref.sex.to_numpy(), 1.0, 1e-3).mechanism
    sex.save(tmp_path / "sex.json")
    code, out, err = run(capsys, "joint", "assess", "--reference", str(tmp_path / "ref.csv"),
                         "--mechanism", f"sex={tmp_path / 'sex.json'}", "--mechanism",
                         f"v={path}", "--delta", "1e-3", "--json")
    assert code == 0, err
    got = json.loads(out)["joint_guarantee"]["guarantee"]
    by_hand = np.clip(ref.v.to_numpy(), 0, 20)  # integers: rounding changes nothing
    want = pmlkit.joint_guarantee([sex, pmlkit.Mechanism.load(path)],
                                  {"sex": ref.sex.to_numpy(), "v": by_hand}, 1e-3,
                                  columns=["sex", "v"])
    assert got["certified_eps"] == pytest.approx(want.certified_eps, rel=1e-12)
    people = pd.DataFrame({"sex": g.choice(["F", "M"], 200), "v": g.integers(-3, 25, 200)})
    people.to_parquet(tmp_path / "p.parquet", index=False)
    code, out, err = run(capsys, "privatize", "--mechanism", f"sex={tmp_path / 'sex.json'}",
                         "--mechanism", f"v={path}", "--joint-reference",
                         str(tmp_path / "ref.csv"), "--delta", "1e-3", "--input",
                         str(tmp_path / "p.parquet"), "--column", "sex", "--column", "v",
                         "--output", str(tmp_path / "o.parquet"), "--json")
    assert code == 0, err
    man = json.loads((tmp_path / "o.parquet.pmlkit.json").read_text())
    assert man["joint_guarantee"]["guarantee"]["certified_eps"] == pytest.approx(
        want.certified_eps, rel=1e-12)


def test_csv_text_and_types_the_release_refuses(small, tmp_path):
    """Text that is no number, a text Parquet column and unknown_as
    are refused with a clear error and nothing is written; a declared null marker is
    missing."""
    _, _, mech, _ = small
    (tmp_path / "c.csv").write_text("v\n1\nabc\n2\nNA\n")
    with pytest.raises(pmlkit.errors.DataError, match="'abc', which is not a number"):
        pmlkit.privatize_file(mech, tmp_path / "c.csv", tmp_path / "o.csv", "v")
    # text Python's float() reads but Arrow's cast does not was named as '?'
    for text in (" 2", "1_0"):
        (tmp_path / "c.csv").write_text(f"v\n1\n{text}\n")
        with pytest.raises(pmlkit.errors.DataError, match=f"'{text}', which is not a number"):
            pmlkit.privatize_file(mech, tmp_path / "c.csv", tmp_path / "o.csv", "v")
    pq.write_table(pa.table({"v": ["1", "2"]}), tmp_path / "s.parquet")
    with pytest.raises(pmlkit.errors.DataError, match="must hold numbers"):
        pmlkit.privatize_file(mech, tmp_path / "s.parquet", tmp_path / "o.parquet", "v")
    pq.write_table(pa.table({"v": [1, 2]}), tmp_path / "n.parquet")
    with pytest.raises(pmlkit.errors.ValidationError, match="clamped"):
        pmlkit.privatize_file(mech, tmp_path / "n.parquet", tmp_path / "o.parquet", "v",
                              unknown_as=3)
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "o.parquet").exists()
    (tmp_path / "k.csv").write_text("v\n1\n2\nNA\n")
    pmlkit.privatize_file(mech, tmp_path / "k.csv", tmp_path / "k2.csv", "v", missing="keep",
                          csv=pmlkit.io.CsvOptions(null_values=("NA",)), rng=1)
    cells = (tmp_path / "k2.csv").read_text().splitlines()
    assert cells[0] == "v" and cells[3] in ("", '""') and cells[1].isdigit()


def test_joint_design_with_a_numeric_column(capsys, tmp_path):
    """``joint design --numeric age=0:20:1``: the plan's age mechanism is numeric (records
    its grid, certified), the plan's joint guarantee is <= eps and equals the exact joint
    guarantee of the two mechanisms over the clamped reference, and ``privatize --plan``
    releases age as integers on the grid."""
    g = np.random.default_rng(21)
    n = 3000
    ref = pd.DataFrame({"sex": g.choice(["F", "M"], n, p=[0.3, 0.7]),
                        "age": g.integers(-3, 25, n)})
    ref.to_csv(tmp_path / "ref.csv", index=False)
    code, _, err = run(capsys, "joint", "design", "--reference", str(tmp_path / "ref.csv"),
                       "--columns", "sex,age", "--numeric", "age=0:20:1", "--epsilon", "1",
                       "--delta", "1e-3", "--out-dir", str(tmp_path / "plan"))
    assert code == 0, err
    plan = pmlkit.joint.ReleasePlan.load(tmp_path / "plan" / "release-plan.json")
    age = plan.mechanisms["age"]
    assert age.input_labels == tuple(range(21)) and age.certified
    assert age.provenance.details["grid"]["upper"] == 20
    eps = plan.guarantee.guarantee.certified_eps
    assert eps <= 1.0
    again = pmlkit.joint_guarantee([plan.mechanisms["sex"], age],
                                   {"sex": ref.sex.to_numpy(),
                                    "age": np.clip(ref.age.to_numpy(), 0, 20)}, 1e-3,
                                   columns=["sex", "age"])
    assert again.certified_eps == pytest.approx(eps, rel=1e-9)
    people = pd.DataFrame({"sex": g.choice(["F", "M"], 300), "age": g.integers(-3, 25, 300)})
    people.to_parquet(tmp_path / "p.parquet", index=False)
    code, _, err = run(capsys, "privatize", "--plan", str(tmp_path / "plan" /
                                                          "release-plan.json"),
                       "--input", str(tmp_path / "p.parquet"), "--column", "sex",
                       "--column", "age", "--output", str(tmp_path / "o.parquet"))
    assert code == 0, err
    t = pq.read_table(tmp_path / "o.parquet")
    assert t.schema.field("age").type == pa.int64()
    assert set(t.column("age").to_pylist()) <= set(range(21))


def test_design_joint_refuses_a_numeric_column_in_joint_mode():
    ref = {"sex": ["F", "M"] * 50, "age": list(range(100))}
    with pytest.raises(pmlkit.errors.ValidationError, match="per-column"):
        pmlkit.design_joint(ref, 1.0, 0.05, numeric={"age": "0:99:1"}, mode="joint")
    with pytest.raises(pmlkit.errors.ValidationError, match="height"):
        pmlkit.design_joint(ref, 1.0, 0.05, numeric={"height": "0:99:1"})


def test_the_dask_file_engine_releases_numbers_too(small, tmp_path):
    """privatize_file_dask goes through the same numeric policy: values outside the grid
    are clamped, the float column stays float, every value is a grid point."""
    pytest.importorskip("dask")
    from pmlkit.privatization import privatize_file_dask

    _, _, mech, _ = small
    vals = np.array([-5.0, 3.0, 7.4, 99.0] * 50)
    pd.DataFrame({"v": vals, "w": np.arange(200)}).to_parquet(tmp_path / "in.parquet",
                                                              index=False)
    privatize_file_dask(mech, tmp_path / "in.parquet", tmp_path / "out", "v", rng=1)
    import pyarrow.dataset as ds

    t = ds.dataset(tmp_path / "out", format="parquet").to_table()
    assert t.schema.field("v").type == pa.float64()
    assert set(t.column("v").to_pylist()) <= set(map(float, range(21)))
    assert sorted(t.column("w").to_pylist()) == list(range(200))
