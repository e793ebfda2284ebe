"""The table trial of issue 35, re-run on public tables (a labour survey with a language
column holding missing values, a benefits survey with 50+ integer state codes), found
three things still broken; each is pinned here on a small synthetic table of the same
shape:

- ``pmlkit estimate`` refused what ``pmlkit privatize --missing category`` and
  ``--missing keep`` write: a released output ``(missing)`` is written as the column's
  missing value, and a kept missing value stays missing (problems 3 and 4);
- ``pmlkit design`` refused a missing value or an undeclared label without naming the
  column or the option that fixes it (problem 3);
- the summary's simulation after the design ran silently for minutes (problem 6).

Expected estimates are computed here independently: the maximum-likelihood estimate of
the released counts by a generic constrained optimiser (scipy SLSQP), not by pmlkit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pmlkit
from pmlkit.cli import _common
from pmlkit.cli.main import main
from pmlkit.errors import DataError

pd = pytest.importorskip("pandas")
LANGS = ["English", "French", "Other"]


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _language(n: int, seed: int) -> list[str | None]:
    """A language column like the labour survey's: three languages and ~3% missing."""
    g = np.random.default_rng(seed)
    vals = g.choice(np.array([*LANGS, ""], dtype=object), n, p=[0.72, 0.15, 0.10, 0.03])
    return [None if v == "" else str(v) for v in vals]


@pytest.fixture
def table(tmp_path: Path, monkeypatch: Any) -> Path:
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"id": np.arange(600), "language": _language(600, 1)}).to_csv(
        tmp_path / "ref.csv", index=False)
    pd.DataFrame({"id": np.arange(3000), "language": _language(3000, 2)}).to_csv(
        tmp_path / "people.csv", index=False)
    return tmp_path


def _mle(counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """argmax_P sum_y c_y log (W^T P)_y over the simplex, by scipy's SLSQP."""
    from scipy.optimize import minimize

    n = w.shape[0]

    def nll(p: np.ndarray) -> float:
        return float(-(counts * np.log(np.maximum(p @ w, 1e-300))).sum() / counts.sum())

    best = None
    for start in (np.full(n, 1.0 / n), np.eye(n)[0] * 0.7 + 0.3 / n):
        r = minimize(nll, start, method="SLSQP", bounds=[(0.0, 1.0)] * n,
                     constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0}],
                     options={"ftol": 1e-14, "maxiter": 2000})
        if best is None or r.fun < best.fun:
            best = r
    assert best is not None
    return np.asarray(best.x)


def _estimate(out: str) -> tuple[dict[str, float], int]:
    doc = json.loads(out)
    return {c["category"]: c["estimate"] for c in doc["categories"]}, doc["n"]


def test_estimate_reads_a_release_made_with_missing_category(capsys: Any,
                                                             table: Path) -> None:
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "language",
                       "--missing", "category", "--epsilon", "1", "--delta", "1e-3",
                       "--utility", "mutual_information", "--output", "lang.json", "--quiet")
    assert code == 0, err
    mech = pmlkit.Mechanism.load(table / "lang.json")
    assert "(missing)" in mech.output_labels
    code, _, err = run(capsys, "privatize", "--mechanism", "lang.json", "--input",
                       "people.csv", "--column", "language", "--missing", "category",
                       "--output", "rel.csv", "--seed", "3", "--quiet")
    assert code == 0, err
    released = pd.read_csv(table / "rel.csv")["language"]
    # the release writes the output '(missing)' as the column's missing value ...
    assert released.isna().any() and "(missing)" not in set(released.dropna())
    # ... so estimate must read it back as that output, from the release's record
    code, out, err = run(capsys, "estimate", "--input", "rel.csv", "--column", "language",
                         "--no-intervals", "--json")
    assert code == 0, err
    est, n = _estimate(out)
    assert n == 3000
    labels = list(mech.output_labels)
    counts = np.array([(released.fillna("(missing)") == y).sum() for y in labels], float)
    want = _mle(counts, np.asarray(mech.matrix))
    got = np.array([est[str(x)] for x in mech.input_labels])
    assert np.abs(got - want).sum() < 2e-3, (got, want)
    # with the mechanism file and no record, the missing values need the option, named
    code, _, err = run(capsys, "estimate", "--input", "rel.csv", "--column", "language",
                       "--mechanism", "lang.json", "--no-intervals")
    assert code == 1 and err.count("\n") == 1
    assert "--missing category" in err and "--missing keep" in err and "'language'" in err
    code, out2, err = run(capsys, "estimate", "--input", "rel.csv", "--column", "language",
                          "--mechanism", "lang.json", "--missing", "category",
                          "--no-intervals", "--json")
    assert code == 0, err
    assert _estimate(out2) == (est, n)


def test_estimate_reads_a_release_made_with_missing_keep(capsys: Any, table: Path) -> None:
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "language",
                       "--missing", "keep", "--epsilon", "1", "--delta", "1e-3",
                       "--utility", "mutual_information", "--output", "lang.json", "--quiet")
    assert code == 0, err
    mech = pmlkit.Mechanism.load(table / "lang.json")
    assert "(missing)" not in mech.input_labels
    code, _, err = run(capsys, "privatize", "--mechanism", "lang.json", "--input",
                       "people.csv", "--column", "language", "--missing", "keep",
                       "--output", "rel.parquet", "--seed", "4", "--quiet")
    assert code == 0, err
    people = pd.read_csv(table / "people.csv")["language"]
    released = pd.read_parquet(table / "rel.parquet")["language"]
    assert (released.isna() == people.isna()).all()  # left missing, unprotected
    code, out, err = run(capsys, "estimate", "--input", "rel.parquet", "--column",
                         "language", "--no-intervals", "--json")
    assert code == 0, err
    assert "left out of the estimate" in err and f"{int(people.isna().sum())} rows" in err
    est, n = _estimate(out)
    assert n == int(people.notna().sum())
    counts = np.array([(released == y).sum() for y in mech.output_labels], float)
    want = _mle(counts, np.asarray(mech.matrix))
    got = np.array([est[str(x)] for x in mech.input_labels])
    assert np.abs(got - want).sum() < 2e-3, (got, want)


def test_estimate_by_with_missing_keep_leaves_those_rows_out(capsys: Any,
                                                            table: Path) -> None:
    g = np.random.default_rng(7)
    frame = pd.DataFrame({"sex": g.choice(["F", "M"], 400),
                          "grp": g.choice(np.array(["a", "b", None], dtype=object), 400)})
    frame.to_csv(table / "sexes.csv", index=False)
    mech = pmlkit.Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("F", "M"), ("F", "M"))
    counts = {}
    for grp in ("a", "b"):
        rows = frame[frame["grp"] == grp]["sex"]
        counts[grp] = np.array([(rows == "F").sum(), (rows == "M").sum()], float)
    code, out, err = run(capsys, "estimate", "--input", "sexes.csv", "--column", "sex",
                         "--mechanism", str(_save(mech, table)), "--by", "grp",
                         "--missing", "keep", "--no-intervals", "--json")
    assert code == 0, err
    doc = json.loads(out)
    groups = {str(g_["group"]): g_ for g_ in doc["groups"]}
    assert set(groups) == {"a", "b"}  # no '(missing)' group: those rows are left out
    for grp in ("a", "b"):
        want = _mle(counts[grp], np.asarray(mech.matrix))
        got = np.array([c["estimate"] for c in groups[grp]["categories"]])
        assert np.abs(got - want).sum() < 2e-3


def _save(mech: pmlkit.Mechanism, folder: Path) -> Path:
    # an uncertified hand-made channel: estimation needs the channel, not a certificate
    path = folder / "hand.json"
    path.write_text(json.dumps(mech.to_dict()))
    return path


def test_design_refusals_name_the_column_and_the_option(capsys: Any, table: Path) -> None:
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "language",
                       "--epsilon", "1", "--delta", "1e-3", "--output", "x.json")
    assert code == 1 and err.count("\n") == 1
    assert "--column 'language' of 'ref.csv'" in err and "--missing category" in err
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "language",
                       "--missing", "keep", "--categories", "English,French", "--epsilon",
                       "1", "--delta", "1e-3", "--output", "x.json")
    assert code == 1 and err.count("\n") == 1
    assert "--column 'language' of 'ref.csv'" in err and "'Other'" in err
    assert "--categories" in err
    assert not (table / "x.json").exists()


def test_design_progress_covers_the_summary_simulation(capsys: Any, monkeypatch: Any,
                                                       table: Path) -> None:
    monkeypatch.setattr(_common, "_REDRAW", 0.0)
    code, out, err = run(capsys, "design", "--reference", "ref.csv", "--column", "language",
                         "--missing", "category", "--epsilon", "1", "--delta", "1e-3",
                         "--output", "p.json", "--progress")
    assert code == 0, err
    assert "summary: simulating releases" in err
    assert "summary: simulating" not in out
    code, _, err = run(capsys, "design", "--reference", "ref.csv", "--column", "language",
                       "--missing", "category", "--epsilon", "1", "--delta", "1e-3",
                       "--output", "q.json", "--quiet")
    assert code == 0 and "summary: simulating" not in err


# -- PMLPrivatizer: the same words for missing values and unknown labels -----------------

def _penguins(n: int, seed: int) -> Any:
    """A penguins-like frame: species, sex with missing values, body mass with two NaN."""
    g = np.random.default_rng(seed)
    sex = g.choice(np.array(["female", "male", None], dtype=object), n, p=[0.47, 0.47, 0.06])
    mass = np.round(g.normal(4200, 800, n) / 50) * 50
    mass[:2] = np.nan
    return pd.DataFrame({"species": g.choice(["Adelie", "Gentoo", "Chinstrap"], n),
                         "sex": sex, "body_mass_g": mass})


def test_privatizer_takes_missing_and_unknown_as() -> None:
    pytest.importorskip("sklearn")
    from pmlkit.errors import ValidationError
    from pmlkit.sklearn import PMLPrivatizer

    ref, rows = _penguins(400, 1), _penguins(300, 2)
    cols = ["species", "sex"]
    with pytest.raises(DataError, match=r"column 'sex'.*PMLPrivatizer\(missing='category'\)"):
        PMLPrivatizer(eps=1.0, delta=1e-3, reference=ref[cols]).fit(rows[cols])
    priv = PMLPrivatizer(eps=1.0, delta=1e-3, reference=ref[cols], missing="category",
                         rng=0).fit(rows[cols])
    assert "(missing)" in priv.mechanisms_[1].input_labels
    assert "(missing)" not in priv.mechanisms_[0].input_labels  # species had none
    out = priv.transform(rows[cols])
    assert out.shape == rows[cols].shape and set(out["species"]) <= set(ref["species"])
    assert set(out["sex"].dropna()) <= {"female", "male", "(missing)"}
    # keep: missing values stay missing, in place, also in a numeric column
    both = ["sex", "body_mass_g"]
    kept = PMLPrivatizer(eps=1.0, delta=1e-3, reference=ref[both], missing="keep",
                         numeric={"body_mass_g": "2500:6500:500"}, rng=1).fit(rows[both])
    out = kept.transform(rows[both])
    assert (out.isna() == rows[both].isna()).all().all()
    assert set(out["body_mass_g"].dropna()) <= set(np.arange(2500.0, 6501.0, 500.0))
    # the numeric default is estimable: every grid point's share can be recovered
    w = np.asarray(kept.mechanisms_[1].matrix)
    assert np.linalg.matrix_rank(w) == w.shape[0]
    # unknown_as: an unknown label released as the one named, which must exist
    odd = pd.DataFrame({"species": ["Adelie", "Emperor"], "sex": ["male", "female"]})
    named = PMLPrivatizer(eps=1.0, delta=1e-3, reference=ref[cols].dropna(),
                          unknown_as={"species": "Adelie"}, rng=2).fit(odd)
    assert set(named.transform(odd)["species"]) <= set(ref["species"])
    with pytest.raises(ValidationError, match=r"unknown_as='Emperor'.*categories="):
        PMLPrivatizer(eps=1.0, delta=1e-3, reference=ref[cols].dropna(),
                      unknown_as="Emperor").fit(odd)
    with pytest.raises(ValidationError, match=r"missing must be one of .*got 'drop'"):
        PMLPrivatizer(missing="drop").fit(odd)
