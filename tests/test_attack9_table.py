"""Attack 9 on table releases (``pmlkit release --spec``): findings, each the regression
test of its fix. Leakage figures are checked by brute force with numpy, not by pmlkit's
own worst-case code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmlkit.errors import PMLWarning
from pmlkit.release import ReleaseSpec, release_table


def _pml(w: np.ndarray, p: np.ndarray) -> float:
    """max_y log(max_x W[x, y] / sum_x p(x) W[x, y]) (brute force)."""
    w = np.asarray(w, dtype=float)
    return float(np.max(np.log(w.max(axis=0) / (p @ w))))


def test_declared_text_categories_match_number_spelled_reference(tmp_path: Path) -> None:
    # categories declared as text over a CSV column of numbers: the release matches the
    # input's text '2' to the label '2'; the reference was matched by type, so every
    # reference value became unknown_as '1' and the guarantee was certified around a point
    # mass at '1' (printed eps 1, true leakage at the reference's distribution log 5)
    rng = np.random.default_rng(5)
    c = rng.choice([1, 2, 3], 1200, p=[0.2, 0.4, 0.4])
    pd.DataFrame({"c": c[:600]}).to_csv(tmp_path / "ref.csv", index=False)
    pd.DataFrame({"c": c[600:]}).to_csv(tmp_path / "in.csv", index=False)
    spec = ReleaseSpec.from_dict(
        {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 1.0,
         "delta": 1e-3, "seed": 1,
         "columns": {"c": {"type": "categorical", "categories": ["1", "2", "3"],
                           "unknown_as": "1"}}}, base=tmp_path)
    rel = release_table(spec)
    mech = rel.design.mechanisms[0]
    assert mech.input_labels == ("1", "2", "3")
    p = np.bincount(c[:600] - 1, minlength=3) / 600  # the reference, value by value
    assert _pml(mech.matrix, p) <= rel.guarantee.eps + 1e-9
    assert rel.columns[0].encoding["unknown_mapped"] == 0


def test_report_states_each_columns_missing_policy(tmp_path: Path) -> None:
    # each column has its own missing policy; the report (the document to sign off)
    # stated the first column's ('error') for the whole release, and no word said that
    # whether an age is missing was released unprotected
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 600),
                       "age": rng.integers(20, 60, 600).astype(float)})
    df.loc[df.index % 7 == 0, "age"] = np.nan
    df[:300].to_csv(tmp_path / "ref.csv", index=False)
    df[300:].to_csv(tmp_path / "in.csv", index=False)
    spec = ReleaseSpec.from_dict(
        {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 2.0,
         "delta": 1e-3, "seed": 1,
         "columns": {"sex": {"type": "categorical"},
                     "age": {"type": "numeric", "lower": 20, "upper": 60, "step": 20,
                             "missing": "keep"}}}, base=tmp_path)
    rel = release_table(spec)
    assert pd.read_csv(rel.output)["age"].isna().sum() == df[300:]["age"].isna().sum() > 0
    text = rel.report.read_text()
    row = text[text.index("missing values"):]
    row = row[:row.index("</tr>")]
    assert "age: keep" in row and "sex: error" in row
    assert "released without protection" in row


def test_raw_copy_of_a_numeric_column_is_named(tmp_path: Path) -> None:
    # income is privatised on a 6-point grid; its raw copy income_raw is copied unchanged
    # next to it. Incomes do not repeat, so guessing income's exact value from the copy
    # (learnt on half the records) was never right and the release said nothing, while
    # the copy gives away the privatised grid point of every record
    rng = np.random.default_rng(5)
    inc = np.round(rng.lognormal(10, 1, 600), 2)
    df = pd.DataFrame({"income": inc, "income_raw": inc,
                       "noise": np.round(rng.lognormal(10, 1, 600), 2)})
    df[:300].to_csv(tmp_path / "ref.csv", index=False)
    df[300:].to_csv(tmp_path / "in.csv", index=False)
    spec = ReleaseSpec.from_dict(
        {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 2.0,
         "delta": 1e-3, "seed": 1,
         "columns": {"income": {"type": "numeric", "lower": 0, "upper": 100000,
                                "step": 20000}}}, base=tmp_path)
    with pytest.warns(PMLWarning):
        rel = release_table(spec)
    said = [w for w in rel.warnings if "gives away" in w]
    assert [w.split("'")[1] for w in said] == ["income_raw"]  # not the unrelated noise
    assert pd.read_csv(rel.output)["income_raw"].equals(df["income_raw"][300:]
                                                        .reset_index(drop=True))


def test_privatize_file_re_checks_the_joint_guarantee_it_records(tmp_path: Path) -> None:
    # a joint guarantee computed for randomized response on a and b, handed to a release
    # of a and b through the identity (the raw values): the manifest recorded eps 0.44
    # for raw data. And one of other columns (x, y) was recorded for a and b alike
    import pmlkit
    from pmlkit.errors import DataError, ValidationError
    from pmlkit.privatization import privatize_file

    df = pd.DataFrame({"a": ["u", "v"] * 60, "b": ["p", "p", "q"] * 40})
    df.to_csv(tmp_path / "in.csv", index=False)
    rr = pmlkit.randomized_response(2, 0.3)
    ref = {"a": ["u", "v"] * 45, "b": ["p", "p", "q"] * 30}
    honest = [rr.with_labels(["u", "v"]), rr.with_labels(["p", "q"])]
    g = pmlkit.joint_guarantee(honest, ref, 0.05)
    raw = {"a": pmlkit.Mechanism(np.eye(2), ["u", "v"]),
           "b": pmlkit.Mechanism(np.eye(2), ["p", "q"])}
    out = tmp_path / "out.csv"
    with pytest.raises(DataError, match="does not hold"):
        privatize_file(raw, tmp_path / "in.csv", out, ["a", "b"], joint_guarantee=g, rng=1)
    with pytest.raises(DataError, match="does not hold"):  # its record, eps edited down
        doc = g.to_dict()
        doc["guarantee"]["eps"] = doc["guarantee"]["certified_eps"] = 0.01
        privatize_file(dict(zip("ab", honest, strict=True)), tmp_path / "in.csv", out,
                       ["a", "b"], joint_guarantee=doc, rng=1)
    other = pmlkit.joint_guarantee([rr, rr], {"x": [0, 1] * 45, "y": [0, 0, 1] * 30}, 0.05)
    with pytest.raises(ValidationError, match="covers columns"):
        privatize_file(dict(zip("ab", honest, strict=True)), tmp_path / "in.csv", out,
                       ["a", "b"], joint_guarantee=other, rng=1)
    assert not out.exists()
    # the honest guarantee of the mechanisms released passes and is recorded
    privatize_file(dict(zip("ab", honest, strict=True)), tmp_path / "in.csv", out,
                   ["a", "b"], joint_guarantee=g, rng=1)
    assert out.exists()


def test_printed_whole_record_guarantee_is_rounded_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # the guarantee was printed with f"{eps:.6g}" (to the nearest): eps 1.9988444 read
    # "(1.99884, ...)-PML" in the command's summary, the report's sign-off and the joint
    # guarantee's text and table, less leakage than certified
    import dataclasses
    import re

    import pmlkit.release
    from pmlkit.cli.main import main
    from pmlkit.release.report import render_report

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.choice(["F", "M"], 400), "b": rng.choice(["u", "v"], 400)})
    df[:200].to_csv(tmp_path / "ref.csv", index=False)
    df[200:].to_csv(tmp_path / "in.csv", index=False)
    spec = ReleaseSpec.from_dict(
        {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 2.0,
         "delta": 1e-3, "seed": 1,
         "columns": {"a": {"type": "categorical"}, "b": {"type": "categorical"}}},
        base=tmp_path)
    rel = release_table(spec)
    eps = 1.9988444
    pg = dataclasses.replace(rel.guarantee.guarantee, eps=eps, certified_eps=eps)
    g = dataclasses.replace(rel.guarantee, guarantee=pg)
    forged = dataclasses.replace(rel, guarantee=g)

    def printed(text: str) -> list[float]:
        return [float(x) for x in re.findall(r"\((1\.99\d*), 0\.001\)-PML", text)]

    monkeypatch.setattr(pmlkit.release, "release_table", lambda *a, **k: forged)
    assert main(["release", "--spec", "unused.toml"]) == 0
    texts = [capsys.readouterr().out, str(g), g._repr_html_(), render_report(forged)]
    for text in texts:
        assert printed(text) and min(printed(text)) >= eps, text[:300]
    sign = texts[3][texts[3].index("certified worst case"):]
    assert float(sign.split()[3]) >= eps


def test_copied_columns_of_every_input_file_are_checked(tmp_path: Path) -> None:
    # an input glob of two files: only the first file's columns were checked, so the raw
    # copy of sex that only the second file holds was published without a word
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 600), "job": rng.choice(["a", "b"], 600)})
    df["sex_copy"] = df["sex"]
    df[:200].to_csv(tmp_path / "ref.csv", index=False)
    df[200:400][["sex", "job"]].to_csv(tmp_path / "in_1.csv", index=False)
    df[400:].to_csv(tmp_path / "in_2.csv", index=False)
    spec = ReleaseSpec.from_dict(
        {"reference": "ref.csv", "input": str(tmp_path / "in_*.csv"), "output": "out",
         "epsilon": 1.0, "delta": 1e-3, "seed": 1,
         "columns": {"sex": {"type": "categorical"}}}, base=tmp_path)
    with pytest.warns(PMLWarning):
        rel = release_table(spec)
    assert "sex_copy" in pd.read_csv(tmp_path / "out" / "in_2.csv").columns
    assert [w.split("'")[1] for w in rel.warnings if "gives away" in w] == ["sex_copy"]


def test_unknown_as_spelled_like_a_reference_value_is_refused(tmp_path: Path) -> None:
    # unknown_as = 1 over a text column holding '1': two labels the released file cannot
    # tell apart. A Parquet input stopped with an internal ArrowTypeError mid-release (a
    # CSV input with a message naming labels '1' and 1); refused up front now
    from pmlkit.errors import DataError

    pd.DataFrame({"c": ["1", "2", "x"] * 40}).to_csv(tmp_path / "ref.csv", index=False)
    pd.DataFrame({"c": ["1", "2", "x", "3"]}).to_parquet(tmp_path / "in.parquet")
    spec = ReleaseSpec.from_dict(
        {"reference": "ref.csv", "input": "in.parquet", "output": "out.parquet",
         "epsilon": 2.0, "delta": 1e-3,
         "columns": {"c": {"type": "categorical", "unknown_as": 1}}}, base=tmp_path)
    with pytest.raises(DataError, match=r"columns\.c\.unknown_as"):
        release_table(spec)
    assert not (tmp_path / "out.parquet").exists()


def test_integer_grid_wider_than_int64_encodes_every_value_to_its_point() -> None:
    # lower = -2**63, upper = 2**63 - 1 (TOML's integer range), step (2**64 - 1) / 3: the
    # codes came from v - lower in int64, which wraps above 2**63 - 1: the top value was
    # code 0 (the bottom point) and 0 and 2**62 got the negative codes -2 and -1
    from pmlkit.numeric.grid import NumericGrid

    g = NumericGrid(-2**63, 2**63 - 1, (2**64 - 1) // 3)
    pts = [int(p) for p in g.exact_points]
    vals = [-2**63, -1, 0, 2**62, 2**63 - 1, pts[1], pts[2] - 1]
    want = []
    for v in vals:  # nearest point, a tie up (exact Python integers)
        d = [abs(v - p) for p in pts]
        want.append(max(i for i in range(len(pts)) if d[i] == min(d)))
    assert g.encode(np.array(vals, dtype=np.int64)).codes.tolist() == want


def test_a_number_label_among_float_labels_is_read_back_for_the_estimate(
        tmp_path: Path) -> None:
    # unknown_as = 1 among float labels 1.5 and 2.5: the release wrote the label 1 as
    # '1', and the read-back for the estimate took the column as numbers and matched
    # '1.0' by its text: the data and manifest were published, then the run failed
    # with no report
    pd.DataFrame({"c": [1.5, 2.5] * 60}).to_csv(tmp_path / "ref.csv", index=False)
    pd.DataFrame({"c": [1.5, 2.5, 3.5] * 10}).to_csv(tmp_path / "in.csv", index=False)
    spec = ReleaseSpec.from_dict(
        {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 2.0,
         "delta": 1e-3, "seed": 3,
         "columns": {"c": {"type": "categorical", "unknown_as": 1}}}, base=tmp_path)
    rel = release_table(spec)
    released = pd.read_csv(tmp_path / "out.csv", dtype=str)["c"]
    mech = rel.design.mechanisms[0]
    est = rel.columns[0].estimate
    # the estimate is that of the released counts, label by label
    from pmlkit import estimate_distribution

    by_text = {"1.5": 1.5, "2.5": 2.5, "1": 1}
    counts = released.map(by_text).value_counts().to_dict()
    assert set(counts) <= set(mech.output_labels)
    direct = estimate_distribution(counts, mech)
    np.testing.assert_allclose(est.estimate, direct.estimate)
