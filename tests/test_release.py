"""``pmlkit release --spec``: one command releases a whole table under one guarantee.

The joint guarantee is checked against an independent computation: the worst case of the
Kronecker product of the released mechanisms over the recorded l1 ball, each output's
minimum found by a generic LP (scipy ``linprog``), not by pmlkit's worst-case code.
"""

from __future__ import annotations

import csv
import dataclasses
import html.parser
import io
import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmlkit.errors import DataError, PMLWarning, ValidationError
from pmlkit.release import ReleaseSpec, load_spec, release_table

BASE = {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 2.0,
        "delta": 1e-3,
        "columns": {"sex": {"type": "categorical"},
                    "age": {"type": "numeric", "lower": 20, "upper": 60, "step": 20}}}


def _spec(**top):
    d = json.loads(json.dumps(BASE))
    for k, v in top.items():
        if v is None:
            d.pop(k)
        else:
            d[k] = v
    return d


def _col(name, **kv):
    d = _spec()
    for k, v in kv.items():
        if v is None:
            d["columns"][name].pop(k)
        else:
            d["columns"][name][k] = v
    return d


@pytest.mark.parametrize("doc, words", [
    (_spec(colour="red"), ["unknown key 'colour'", "allowed"]),
    (_spec(epsilon=None), ["missing key 'epsilon'"]),
    (_spec(epsilon="2"), ["epsilon", "'2'", "a finite number"]),
    (_spec(epsilon=-1.0), ["epsilon", "-1", "> 0"]),
    (_spec(delta=1.5), ["delta", "1.5", "(0, 1)"]),
    (_spec(confidence="l3"), ["confidence", "'l3'", "'l1'"]),
    (_spec(missing="drop"), ["missing", "'drop'", "'category'"]),
    (_spec(seed=-3), ["seed", "-3", "integer >= 0"]),
    (_spec(overwrite="yes"), ["overwrite", "'yes'", "true or false"]),
    (_spec(search_steps=2.5), ["search_steps", "2.5", "0..30"]),
    (_spec(columns={}), ["columns", "at least one"]),
    (_col("sex", type="text"), ["columns.sex.type", "'text'", "'categorical' or 'numeric'"]),
    (_col("sex", lower=3), ["unknown key columns.sex.'lower'"]),
    (_col("sex", estimable=True), ["unknown key columns.sex.'estimable'"]),
    (_col("sex", utility="abs"), ["columns.sex.utility", "'abs'", "'estimation'"]),
    (_col("sex", categories=["F"]), ["columns.sex.categories", "at least 2"]),
    (_col("sex", categories=["F", "M"], unknown_as="X"), ["columns.sex.unknown_as", "'X'"]),
    (_col("age", step=None), ["missing key columns.age.'step'"]),
    (_col("age", step=0), ["columns.age.step", "0", "> 0"]),
    (_col("age", step=7), ["columns.age", "step"]),
    (_col("age", upper=10), ["columns.age.upper", "10", "> lower"]),
    (_col("age", missing="category"), ["columns.age.missing", "'category'", "'keep'"]),
    (_col("age", estimable="no"), ["columns.age.estimable", "'no'", "true or false"]),
    (_spec(missing="category"), ["numeric column 'age'", "'error' or 'keep'"]),
])
def test_spec_refuses_bad_keys_and_values_in_one_line(doc, words):
    with pytest.raises(ValidationError) as exc:
        ReleaseSpec.from_dict(doc)
    msg = str(exc.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)


def test_spec_is_frozen_and_resolves_paths(tmp_path):
    (tmp_path / "r.toml").write_text(
        'reference = "ref.csv"\ninput = "in.csv"\noutput = "sub/out.parquet"\n'
        'epsilon = 1\ndelta = 1e-6\n[columns.x]\ntype = "categorical"\n')
    s = load_spec(tmp_path / "r.toml")
    assert s.reference == tmp_path / "ref.csv"
    assert s.report == tmp_path / "sub" / "out.parquet.report.html"
    assert s.epsilon == 1.0 and isinstance(s.epsilon, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epsilon = 5.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.columns[0].type = "numeric"  # type: ignore[misc]


def test_spec_file_errors_are_data_errors(tmp_path):
    (tmp_path / "bad.toml").write_text("epsilon = = 2\n")
    with pytest.raises(DataError, match="not valid TOML"):
        load_spec(tmp_path / "bad.toml")
    with pytest.raises(DataError, match="cannot read"):
        load_spec(tmp_path / "none.toml")


# --------------------------------------------------------------------------------------
# an end-to-end release on synthetic data
# --------------------------------------------------------------------------------------

def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n, p=[0.4, 0.6])
    # colour depends on sex: the joint guarantee is not the sum of the columns'
    colour = np.where(sex == "F", rng.choice(["red", "blue", "green"], n, p=[.6, .3, .1]),
                      rng.choice(["red", "blue", "green"], n, p=[.2, .3, .5]))
    age = rng.integers(16, 75, n)  # clamped below 20 and above 60, rounded to tens
    return pd.DataFrame({"id": [f"{i:05d}" for i in range(n)], "sex": sex,
                         "note": rng.choice(["a, \"quoted\"", " spaced ", "007", ""], n),
                         "colour": colour, "age": age})


def _write(folder: Path, *, eps: float = 3.0, extra: str = "") -> Path:
    _table(4000, 1).to_csv(folder / "ref.csv", index=False)
    _table(1500, 2).to_csv(folder / "in.csv", index=False)
    spec = folder / "release.toml"
    spec.write_text(
        f'reference = "ref.csv"\ninput = "in.csv"\noutput = "out.csv"\nepsilon = {eps}\n'
        f'delta = 1e-3\nseed = 11\n{extra}\n'
        '[columns.sex]\ntype = "categorical"\n'
        '[columns.colour]\ntype = "categorical"\nutility = "mutual_information"\n'
        '[columns.age]\ntype = "numeric"\nlower = 20\nupper = 60\nstep = 10\n')
    return spec


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release")
    res = release_table(_write(folder))
    return folder, res


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as fh:
        return list(csv.reader(fh))


def test_untouched_columns_are_unchanged_and_released_values_stay_in_type(released):
    folder, res = released
    inp, out = _rows(folder / "in.csv"), _rows(folder / "out.csv")
    assert inp[0] == out[0] and len(inp) == len(out) == 1501
    head = inp[0]
    for name in ("id", "note"):
        k = head.index(name)
        assert [r[k] for r in inp] == [r[k] for r in out]
    # the untouched text keeps its bytes (quotes, spaces, leading zeros)
    raw_in = (folder / "in.csv").read_bytes()
    raw_out = (folder / "out.csv").read_bytes()
    assert b'"a, ""quoted"""' in raw_in and b'"a, ""quoted"""' in raw_out
    k = head.index("age")
    ages = {int(r[k]) for r in out[1:]}  # integers of the grid, never text or floats
    assert ages <= {20, 30, 40, 50, 60}
    k = head.index("sex")
    outs = {str(x) for x in res.columns[0].mechanism.output_labels}
    assert {r[k] for r in out[1:]} <= outs
    assert res.rows == 1500 and res.seeded


def _l1_min(w: np.ndarray, p: np.ndarray, beta: float) -> np.ndarray:
    """min over {Q in simplex : ||Q - p||_1 <= beta} of Q . w[:, y], per column y, by a
    generic LP: Q = p + u - v, u, v >= 0, sum(u) = sum(v), sum(u + v) <= beta, Q >= 0."""
    from scipy.optimize import linprog

    n = p.size
    a_eq = np.concatenate([np.ones(n), -np.ones(n)])[None, :]
    a_ub = np.vstack([np.ones(2 * n)[None, :],
                      np.hstack([-np.eye(n), np.eye(n)])])  # v - u <= p  (Q >= 0)
    b_ub = np.concatenate([[beta], p])
    out = []
    for y in range(w.shape[1]):
        c = np.concatenate([w[:, y], -w[:, y]])
        r = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[0.0], bounds=(0, None),
                    method="highs")
        assert r.status == 0
        out.append(float(p @ w[:, y] + r.fun))
    return np.array(out)


def test_joint_guarantee_holds_for_what_is_released(released):
    folder, res = released
    g = res.guarantee
    assert g.columns == ("sex", "colour", "age")
    assert g.eps <= res.spec.epsilon
    # the manifest's record, read strictly, verifies for the mechanisms the manifest holds
    from pmlkit import Mechanism
    from pmlkit.joint import JointGuarantee

    man = json.loads((folder / "out.csv.pmlkit.json").read_text())
    back = JointGuarantee.from_dict(man["joint_guarantee"])
    mechs = []
    for c in g.columns:
        doc = man["privatized"][c]["mechanism"]
        mechs.append(Mechanism.from_dict(doc))
    assert back.verify(mechs).certified_eps == g.certified_eps
    # independent: the dense product over the joint alphabet, each output's worst case
    # over the l1 ball by a generic LP (only when the exact certificate was chosen)
    if g.kind == "exact":
        w = mechs[0].matrix
        for m in mechs[1:]:
            w = np.kron(w, m.matrix)
        w = w[:, w.max(axis=0) > 0]  # outputs that can occur
        p = g.counts_array() / g.m
        beta = g.set.to_dict()["radius"]
        worst = np.log(w.max(axis=0) / _l1_min(w, p, beta)).max()
        assert math.isclose(worst, g.certified_eps, rel_tol=1e-6, abs_tol=1e-8)
    assert g.certified_eps <= res.spec.epsilon


def test_the_exact_certificate_matches_a_brute_force_on_a_small_table(tmp_path):
    rng = np.random.default_rng(5)
    n = 6000
    x = rng.choice(["a", "b"], n, p=[0.3, 0.7])
    y = np.where(x == "a", rng.choice(["u", "v"], n, p=[0.8, 0.2]), rng.choice(["u", "v"], n))
    pd.DataFrame({"x": x, "y": y}).to_csv(tmp_path / "ref.csv", index=False)
    pd.DataFrame({"x": x[:300], "y": y[:300]}).to_csv(tmp_path / "in.csv", index=False)
    doc = {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 1.0,
           "delta": 0.01, "columns": {"x": {"type": "categorical"},
                                      "y": {"type": "categorical"}}}
    res = release_table(ReleaseSpec.from_dict(doc, base=tmp_path))
    g = res.guarantee
    assert g.kind == "exact"  # 4 x 4: the exact certificate is the better one
    w = np.kron(res.columns[0].mechanism.matrix, res.columns[1].mechanism.matrix)
    p = np.bincount(np.ravel_multi_index(
        (pd.Index(["a", "b"]).get_indexer(x), pd.Index(["u", "v"]).get_indexer(y)), (2, 2)),
        minlength=4) / n
    w = w[:, w.max(axis=0) > 0]
    beta = g.set.to_dict()["radius"]
    worst = float(np.log(w.max(axis=0) / _l1_min(w, p, beta)).max())
    assert math.isclose(worst, g.certified_eps, rel_tol=1e-6, abs_tol=1e-9)
    assert worst <= 1.0
    # releasing the reference itself: the release warns the operator; the warning is a
    # test of the raw input's counts, so the published report does not carry it
    doc.update(input="ref.csv", output="again.csv")
    with pytest.warns(PMLWarning, match="reference sample"):
        again = release_table(ReleaseSpec.from_dict(doc, base=tmp_path))
    assert any("reference sample" in w_ for w_ in again.input_warnings)
    assert not any("reference sample" in w_ for w_ in again.warnings)
    text = again.report.read_text()
    assert "reference sample" not in text and "chi-square" not in text


class _Tags(html.parser.HTMLParser):
    VOID = frozenset({"meta", "br", "hr", "img", "input", "link", "rect", "line", "path",
                      "circle"})

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.seen: set[str] = set()
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.seen.add(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.seen.add(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()


def test_report_is_one_wellformed_page_without_script(released):
    folder, res = released
    text = res.report.read_text(encoding="utf-8")
    p = _Tags()
    p.feed(text)
    p.close()
    assert not p.errors and not p.stack, (p.errors, p.stack)
    assert "script" not in p.seen and "<script" not in text.lower()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text
    assert {"svg", "table", "h1"} <= p.seen
    for c in ("sex", "colour", "age"):
        assert f"Column <code>{c}</code>" in text
    assert "whole record" in text and "in plain words" in text
    assert "research only" in text  # seeded
    assert text.count("<svg") == 3
    # the seed (11) is recorded nowhere: not in the summary, the report or the manifest
    assert '"seed"' not in json.dumps(res.to_dict())
    assert "seed = 11" not in text and "seed 11" not in text
    man = (folder / "out.csv.pmlkit.json").read_text()
    assert '"seed"' not in man


def test_existing_outputs_are_refused_before_anything_is_designed(released):
    folder, _ = released
    before = (folder / "out.csv").read_bytes()
    with pytest.raises(DataError, match="overwrite = true"):
        release_table(folder / "release.toml")
    assert (folder / "out.csv").read_bytes() == before


def test_cli_releases_and_reports_errors_in_one_line(tmp_path, capsys):
    from pmlkit.cli.main import main

    spec = _write(tmp_path, extra='report = "signoff.html"')
    assert main(["release", "--spec", str(spec), "--json"]) == 0
    out = capsys.readouterr()
    assert "budget scale" not in out.err  # quiet in a pipe
    doc = json.loads(out.out)
    assert doc["rows"] == 1500 and doc["guarantee"]["schema"] == "pmlkit-joint-guarantee"
    assert (tmp_path / "signoff.html").exists()
    (tmp_path / "bad.toml").write_text(spec.read_text() + "colour = 1\n")
    assert main(["release", "--spec", str(tmp_path / "bad.toml")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("pmlkit: error: release spec:")


def test_missing_values_follow_the_policy_and_name_the_fix(tmp_path, capsys):
    df = _table(3000, 3)
    df.loc[::50, "sex"] = None
    df.to_csv(tmp_path / "ref.csv", index=False)
    df[:400].to_csv(tmp_path / "in.csv", index=False)
    doc = {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 2.0,
           "delta": 0.01,
           "columns": {"sex": {"type": "categorical", "utility": "mutual_information"},
                       "colour": {"type": "categorical", "utility": "mutual_information"}}}
    with pytest.raises(DataError, match="missing = 'category'"):
        release_table(ReleaseSpec.from_dict(doc, base=tmp_path))
    doc["missing"] = "category"
    res = release_table(ReleaseSpec.from_dict(doc, base=tmp_path), progress=True)
    err = capsys.readouterr().err
    assert "pmlkit release: designing 2 columns" in err and "budget scale 1.0000" in err
    assert "(missing)" in res.columns[0].labels
    assert res.guarantee.eps <= 2.0


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_report_renders_in_headless_chromium(released, tmp_path):
    _, res = released
    shot = tmp_path / "report.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--disable-javascript"]
    uri = res.report.resolve().as_uri()
    dom = subprocess.run(["chromium", *flags, "--dump-dom", uri], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-500:]
    for c in ("sex", "colour", "age"):
        assert f"Column <code>{c}</code>" in dom.stdout
    assert dom.stdout.count("<svg") == 3
    r = subprocess.run(["chromium", *flags, "--window-size=1100,1600",
                        f"--screenshot={shot}", uri], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and shot.stat().st_size > 10_000
    from PIL import Image as image  # pillow comes with matplotlib (the plot extra)
    img = np.asarray(image.open(io.BytesIO(shot.read_bytes())).convert("RGB"))
    # not a blank page: several colours, among them the estimate bars' blue (43,108,176)
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 20
    assert (np.abs(img.astype(int) - [43, 108, 176]).sum(axis=2) < 30).any()


def test_adult_sex_race_education_age_at_whole_record_eps_2(adult_dir, tmp_path):
    # One step of the scale search: the full split fails (2.55), the step certifies a
    # scaled split (1.999) and the chain split is weighed against it and released
    # (1.959), as with two steps, whose second step (infeasible) changed nothing released.
    from pmlkit.datasets import load_adult

    load_adult(adult_dir).to_csv(tmp_path / "reference.csv", index=False)
    load_adult(adult_dir, split="test").to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "release.toml").write_text(
        'reference = "reference.csv"\ninput = "people.csv"\noutput = "released.csv"\n'
        'epsilon = 2.0\ndelta = 1e-6\nsearch_steps = 1\n'
        '[columns.sex]\ntype = "categorical"\n[columns.race]\ntype = "categorical"\n'
        '[columns.education]\ntype = "categorical"\n'
        '[columns.age]\ntype = "numeric"\nlower = 15\nupper = 90\nstep = 5\n')
    with pytest.warns(PMLWarning, match="is copied unchanged and gives away") as caught:
        res = release_table(tmp_path / "release.toml")
    # the other columns are copied unchanged: education-num is a code of education, and
    # relationship (Husband, Wife) implies sex; the release says so
    pairs = sorted((str(w.message).split("'")[1], str(w.message).split("'")[3])
                   for w in caught if "gives away" in str(w.message))
    assert pairs == [("education-num", "education"), ("relationship", "sex")]
    g = res.guarantee
    assert g.columns == ("sex", "race", "education", "age")
    assert g.eps <= 2.0 and res.rows == 16281
    out = pd.read_csv(tmp_path / "released.csv", dtype={"age": "int64"})
    assert set(out["age"].unique()) <= set(range(15, 91, 5))
    raw_in, raw_out = _rows(tmp_path / "people.csv"), _rows(tmp_path / "released.csv")
    keep = [k for k, name in enumerate(raw_in[0]) if name not in g.columns]
    assert [[r[k] for k in keep] for r in raw_in] == [[r[k] for k in keep] for r in raw_out]
    g.verify([c.mechanism for c in res.columns])
    text = res.report.read_text()
    for c in g.columns:
        assert f"Column <code>{c}</code>" in text


def test_docs_release_page_examples_run():
    """docs/release.md is checked like code: its ``pycon`` blocks run in order."""
    import doctest
    import re

    page = Path(__file__).resolve().parents[1] / "docs" / "release.md"
    text = page.read_text(encoding="utf-8")
    fence = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)
    blocks = [(text[:m.start()].count("\n") + 2, m.group(2)) for m in fence.finditer(text)
              if m.group(1) == "pycon"]
    assert len(blocks) >= 2
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE
                                   | doctest.ELLIPSIS)
    globs: dict[str, object] = {"__name__": "release_md"}
    for line, code in blocks:
        test = parser.get_doctest(code, globs, f"release.md:{line}", "release.md", line)
        runner.run(test, clear_globs=False)
        globs = test.globs
    assert runner.summarize(verbose=False).failed == 0


def test_parquet_release_keeps_types_and_untouched_columns(tmp_path):
    ref, inp = _table(3000, 4), _table(800, 5)
    ref.to_parquet(tmp_path / "ref.parquet")
    inp.to_parquet(tmp_path / "in.parquet")
    doc = {"reference": "ref.parquet", "input": "in.parquet", "output": "out.parquet",
           "epsilon": 2.0, "delta": 0.01, "search_steps": 2,
           "columns": {"sex": {"type": "categorical", "utility": "mutual_information"},
                       "age": {"type": "numeric", "lower": 20, "upper": 60, "step": 10}}}
    res = release_table(ReleaseSpec.from_dict(doc, base=tmp_path))
    out = pd.read_parquet(tmp_path / "out.parquet")
    assert out["age"].dtype == inp["age"].dtype == np.int64
    assert set(out["age"]) <= {20, 30, 40, 50, 60}
    pd.testing.assert_frame_equal(out[["id", "note", "colour"]], inp[["id", "note", "colour"]])
    assert res.guarantee.eps <= 2.0
    res.guarantee.verify([c.mechanism for c in res.columns])


def test_numeric_column_is_released_through_an_invertible_mechanism(released):
    _, res = released
    age = res.columns[2]
    assert age.spec.type == "numeric"
    w = np.asarray(age.mechanism.matrix)
    assert np.linalg.matrix_rank(w) == w.shape[0] == 5
    est = age.estimate
    assert est.identified and all(math.isfinite(v) for v in est.mean_interval)
    # the grid's reference mean (values clamped to [20, 60], rounded to tens) lies in a
    # range the released data cannot contradict by much: the estimate is within 5 years
    ref = np.clip(np.floor(_table(4000, 1)["age"].to_numpy() / 10 + 0.5) * 10, 20, 60).mean()
    assert abs(est.mean - ref) < 5


def test_each_column_takes_its_own_missing_policy(tmp_path):
    # penguins-like: a categorical column and a numeric one, both with gaps; sex makes
    # its gaps a category, age keeps them missing, colour (no gaps) refuses them
    df = _table(3000, 5)
    df["age"] = df["age"].astype("Int64")
    df.loc[::40, "sex"] = None
    df.loc[3::50, "age"] = pd.NA
    df.to_csv(tmp_path / "ref.csv", index=False)
    inp = _table(600, 6)
    inp["age"] = inp["age"].astype("Int64")
    inp.loc[::30, "sex"] = None
    inp.loc[1::20, "age"] = pd.NA
    inp.to_csv(tmp_path / "in.csv", index=False)
    # (designed for mutual information: the default estimation designs, 13 of the 15 s,
    # are no part of the missing policies)
    mi = "mutual_information"
    doc = {"reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 3.0,
           "delta": 0.01, "search_steps": 1,
           "columns": {"sex": {"type": "categorical", "missing": "category", "utility": mi},
                       "colour": {"type": "categorical", "utility": mi},
                       "age": {"type": "numeric", "lower": 20, "upper": 60, "step": 20,
                               "missing": "keep"}}}
    res = release_table(ReleaseSpec.from_dict(doc, base=tmp_path))
    assert "(missing)" in res.columns[0].labels
    out = pd.read_csv(tmp_path / "out.csv", dtype={"age": "Int64"})
    # a kept gap stays a gap, row for row; every other age is a grid point
    assert out["age"].isna().tolist() == inp["age"].isna().tolist()
    assert set(out["age"].dropna().tolist()) <= {20, 40, 60}
    assert out["id"].astype(str).str.zfill(5).tolist() == inp["id"].tolist()
    man = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    assert {c: man["privatized"][c]["missing"] for c in ("sex", "colour", "age")} == {
        "sex": "category", "colour": "error", "age": "keep"}
    inp.loc[2, "colour"] = None  # a gap where the policy is error: refused, by column
    inp.to_csv(tmp_path / "in2.csv", index=False)
    doc.update(input="in2.csv", output="out2.csv")
    with pytest.raises(DataError, match="colour"):
        release_table(ReleaseSpec.from_dict(doc, base=tmp_path))
    assert not (tmp_path / "out2.csv").exists()



def test_cli_prints_warnings_in_its_own_words(tmp_path, capsys):
    from pmlkit.cli.main import main

    # the reference released as the input: the reuse warning, one line, no Python source
    spec = _write(tmp_path)
    spec.write_text(spec.read_text().replace('input = "in.csv"', 'input = "ref.csv"')
                    .replace("search_steps", "#"))
    assert main(["release", "--spec", str(spec)]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "reference sample" in ln]
    # computed from the raw input: the operator is told it is not for publication
    assert lines and all(ln.startswith("pmlkit: warning (from the raw input: not in the "
                                       "report, not for publication): ") for ln in lines)
    assert "PMLWarning" not in err and "release_table(" not in err
    assert "privatize_file(" not in err


def test_a_copied_column_that_gives_away_a_privatised_one_is_named(tmp_path):
    """The guarantee covers the privatised columns: a column copied unchanged that is a
    code of one (or implies it for a group of records) is warned about, on stderr and in
    the report; an identifier and an unrelated column are not."""
    g = np.random.default_rng(5)
    n = 3000
    sex = g.choice(["F", "M"], n, p=[0.4, 0.6])
    role = np.where(sex == "M", g.choice(["husband", "other"], n, p=[0.5, 0.5]),
                    g.choice(["wife", "other"], n, p=[0.3, 0.7]))
    # a first name: 400 values per sex, each seen a few times, none in a group of 30
    name = np.char.add(sex.astype(str), g.integers(0, 400, n).astype(str))
    frame = pd.DataFrame({"id": np.arange(n), "sex": sex,
                          "sex_code": np.where(sex == "F", 1, 2), "role": role,
                          "name": name, "noise": g.choice(["a", "b", "c"], n),
                          "weight": g.random(n)})
    frame[: n // 2].drop(columns=["weight"]).to_csv(tmp_path / "ref.csv", index=False)
    frame[n // 2:].to_csv(tmp_path / "in.csv", index=False)
    doc = _spec(columns={"sex": {"type": "categorical"}}, epsilon=1.0)
    spec = ReleaseSpec.from_dict(doc, base=tmp_path)
    with pytest.warns(PMLWarning) as caught:
        rel = release_table(spec)
    said = [str(w.message) for w in caught
            if "is copied unchanged and gives away" in str(w.message)]
    assert sorted(s.split("'")[1] for s in said) == ["name", "role", "sex_code"]
    assert all("'sex'" in s for s in said)
    assert sorted(w.split("'")[1] for w in rel.warnings if "gives away" in w) == \
        ["name", "role", "sex_code"]
    # the weight column is not in the reference: named as not checked
    assert any("'weight' are copied unchanged and the reference does not hold them" in w
               for w in rel.warnings)
    report = (tmp_path / "out.csv.report.html").read_text()
    assert "sex_code" in report and "not covered by the guarantee" in report
    # the role column reveals sex for the husbands and wives only: a revealing group;
    # the two-valued code for every record: a prediction
    from pmlkit.release._related import related_column_warnings

    ref = frame[: n // 2]
    assert related_column_warnings(ref, ["sex"], ["id", "noise"]) == []
    assert related_column_warnings(ref.assign(sex_code=1), ["sex"], ["sex_code"]) == []
