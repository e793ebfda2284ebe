"""The published artifacts of a release hold no statistic of the raw input but the number
of released rows: how many values were clamped above or below the grid, rounded, or
mapped by ``unknown_as`` (and the warning that an input looks like the reference sample,
a test of its label counts) go to the operator (``FileReport.input_counts``,
``TableRelease.input_counts`` / ``input_warnings``, the terminal), never into the
manifest, the Parquet key-value metadata or the HTML report. ``clamped_high = 1`` in a
published manifest told anyone holding the file that exactly one person's value is above
the grid.

The raw counts here are distinctive numbers (211 clamped below, 173 above, 389 rounded,
293 unknown), searched for in every published text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import pmlkit
from pmlkit.numeric.design import laplace_mechanism
from pmlkit.numeric.grid import NumericGrid
from pmlkit.privatization.files import previous_privatization, privatize_file

LOW, HIGH, ROUNDED, UNKNOWN = 211, 173, 389, 293
RAW_KEYS = ("clamped_low", "clamped_high", "rounded", "unknown_mapped_rows", '"counts"')


def _input(n: int = 3000, seed: int = 7) -> pd.DataFrame:
    """Ages on the grid 20..80 step 10 except LOW below, HIGH above and ROUNDED between
    grid points; sex F/M except UNKNOWN rows 'Other'."""
    rng = np.random.default_rng(seed)
    age = rng.choice(np.arange(20, 81, 10), n)
    sex = rng.choice(["F", "M"], n).astype(object)
    pos = rng.permutation(n)
    low, high = pos[:LOW], pos[LOW:LOW + HIGH]
    rounded = pos[LOW + HIGH:LOW + HIGH + ROUNDED]
    age[low] = rng.integers(0, 15, LOW)
    age[high] = rng.integers(86, 100, HIGH)
    age[rounded] = rng.choice([32, 47, 53, 68], ROUNDED)
    sex[rng.permutation(n)[:UNKNOWN]] = "Other"
    return pd.DataFrame({"id": np.arange(n), "age": age, "sex": sex})


def _numbers_in(text: str) -> set[int]:
    """The whole numbers written in ``text``: not digits of a decimal, of a longer number,
    of a word or hex digest (a seed's salted commitment is random), nor of a path
    (``pytest-211``)."""
    return {int(m) for m in re.findall(r"(?<![\w.\-/])\d+(?![\w.])", text)}


def _without_mechanisms(doc: object) -> object:
    """A JSON document less its mechanism and joint guarantee documents (they record the
    public reference: a numeric mechanism's provenance its encoding, a joint guarantee
    its counts, under the same key names)."""
    if isinstance(doc, dict):
        return {k: _without_mechanisms(v) for k, v in doc.items()
                if k not in ("mechanism", "joint_guarantee")}
    if isinstance(doc, list):
        return [_without_mechanisms(v) for v in doc]
    return doc


def _assert_no_raw_counts(text: str, where: str, *, keys: bool = True) -> None:
    if keys:
        try:
            bare = json.dumps(_without_mechanisms(json.loads(text)))
        except ValueError:
            bare = text
        for k in RAW_KEYS:
            assert k not in bare, (where, k)
    found = _numbers_in(text) & {LOW, HIGH, ROUNDED, UNKNOWN}
    assert not found, (where, found)


def _mechanisms() -> dict[str, pmlkit.Mechanism]:
    grid = NumericGrid(20, 80, 10)
    return {"age": laplace_mechanism(grid, [1 / 7] * 7, 1.0),
            "sex": pmlkit.design_from_samples(["F"] * 400 + ["M"] * 600, 1.0,
                                              1e-3).mechanism}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_privatize_file_publishes_no_raw_counts(tmp_path: Path, fmt: str) -> None:
    src = tmp_path / f"in.{fmt}"
    df = _input()
    df.to_csv(src, index=False) if fmt == "csv" else df.to_parquet(src, index=False)
    out = tmp_path / f"out.{fmt}"
    rep = privatize_file(_mechanisms(), src, out, ["age", "sex"], unknown_as={"sex": "F"},
                         rng=1, no_joint_guarantee=True)
    # the published manifest and metadata hold no count of the raw input
    man_text = (tmp_path / f"out.{fmt}.pmlkit.json").read_text(encoding="utf-8")
    _assert_no_raw_counts(man_text, "manifest")
    man = json.loads(man_text)
    assert set(man["privatized"]["age"]["numeric"]) == {"grid", "policy"}
    assert man["privatized"]["sex"]["unknown_as"] == "F"  # the policy, not its count
    if fmt == "parquet":
        meta = pq.read_schema(out).metadata
        for key, value in meta.items():
            _assert_no_raw_counts(value.decode("utf-8", "replace"),
                                  f"parquet metadata {key!r}")
    # the operator has them
    assert rep.input_counts["age"] == {"rows": 3000, "clamped_low": LOW,
                                       "clamped_high": HIGH, "rounded": ROUNDED,
                                       "missing": 0}
    assert rep.input_counts["sex"] == {"unknown_mapped_rows": UNKNOWN}
    assert "input_counts" not in rep.to_dict()


def test_dask_engine_publishes_no_raw_counts(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from pmlkit.privatization import privatize_file_dask

    df = _input()
    df.to_parquet(tmp_path / "in.parquet", index=False)
    mech = _mechanisms()["sex"]
    rep = privatize_file_dask(mech, tmp_path / "in.parquet", tmp_path / "out", "sex",
                              unknown_as="F", rng=1)
    _assert_no_raw_counts((tmp_path / "out.pmlkit.json").read_text(encoding="utf-8"),
                          "dask manifest")
    for part in (tmp_path / "out").glob("part-*.parquet"):
        for value in (pq.read_schema(part).metadata or {}).values():
            _assert_no_raw_counts(value.decode("utf-8", "replace"), str(part))
    assert rep.input_counts["sex"] == {"unknown_mapped_rows": UNKNOWN}


def test_a_manifest_of_an_earlier_version_with_raw_counts_still_loads(tmp_path: Path
                                                                       ) -> None:
    """A manifest written before the counts were left out holds them: it is read as it
    is, and a later pass does not carry them into the record it publishes."""
    df = _input()
    df["other"] = np.where(df["id"] % 2 == 0, "F", "M")
    df.to_csv(tmp_path / "in.csv", index=False)
    privatize_file(_mechanisms(), tmp_path / "in.csv", tmp_path / "out.csv", ["age", "sex"],
                   unknown_as={"sex": "F"}, rng=1, no_joint_guarantee=True)
    man_path = tmp_path / "out.csv.pmlkit.json"
    old = json.loads(man_path.read_text(encoding="utf-8"))
    old["privatized"]["sex"]["unknown_mapped_rows"] = UNKNOWN
    old["privatized"]["age"]["unknown_mapped_rows"] = 0
    old["privatized"]["age"]["numeric"]["counts"] = {
        "rows": 3000, "clamped_low": LOW, "clamped_high": HIGH, "rounded": ROUNDED,
        "missing": 0}
    man_path.write_text(json.dumps(old, indent=2), encoding="utf-8")
    record = previous_privatization(tmp_path / "out.csv")
    assert record is not None
    assert record["privatized"]["sex"]["unknown_mapped_rows"] == UNKNOWN
    # the estimate finds the mechanism through it, as before
    from pmlkit.cli.main import main

    assert main(["estimate", "--input", str(tmp_path / "out.csv"), "--column", "sex",
                 "--json"]) == 0
    # a second pass over another column: the earlier record is kept, without the counts
    privatize_file(_mechanisms()["sex"], tmp_path / "out.csv", tmp_path / "again.csv",
                   "other", rng=2, no_joint_guarantee=True)
    text = (tmp_path / "again.csv.pmlkit.json").read_text(encoding="utf-8")
    _assert_no_raw_counts(text, "manifest of the second pass")
    again = json.loads(text)
    assert {"age", "sex", "other"} <= set(again["privatized"])
    assert again["previous_passes"][0]["privatized"]["age"]["numeric"]["grid"] == \
        old["privatized"]["age"]["numeric"]["grid"]


def _release_folder(tmp_path: Path, *, input_is_reference: bool = False) -> Path:
    rng = np.random.default_rng(11)
    m = 2000
    ref = pd.DataFrame({"id": np.arange(m), "age": rng.choice(np.arange(20, 81, 10), m),
                        "sex": rng.choice(["F", "M"], m)})
    ref.to_csv(tmp_path / "ref.csv", index=False)
    (ref if input_is_reference else _input()).to_parquet(tmp_path / "in.parquet",
                                                         index=False)
    spec = tmp_path / "release.toml"
    spec.write_text('reference = "ref.csv"\ninput = "in.parquet"\noutput = "out.parquet"\n'
                    'epsilon = 2.0\ndelta = 1e-3\nseed = 1\n'
                    '[columns.sex]\ntype = "categorical"\ncategories = ["F", "M"]\n'
                    'unknown_as = "F"\n'
                    '[columns.age]\ntype = "numeric"\nlower = 20\nupper = 80\nstep = 10\n',
                    encoding="utf-8")
    return spec


def _without_svg(html: str) -> str:
    """The report's text less its inline plots and styles (SVG coordinates and colours
    are numbers too)."""
    html = re.sub(r"<svg.*?</svg>|<style>.*?</style>", "", html, flags=re.S)
    return re.sub(r"style='[^']*'", "", html)


def test_release_publishes_no_raw_counts(tmp_path: Path) -> None:
    from pmlkit.release import release_table

    res = release_table(_release_folder(tmp_path))
    assert res.rows == 3000
    # the manifest, the Parquet metadata and the report hold no count of the raw input
    _assert_no_raw_counts(res.manifest.read_text(encoding="utf-8"), "release manifest")
    for key, value in pq.read_schema(res.output).metadata.items():
        _assert_no_raw_counts(value.decode("utf-8", "replace"), f"metadata {key!r}")
    # (the report shows the public reference's encoding under the same key names)
    _assert_no_raw_counts(_without_svg(res.report.read_text(encoding="utf-8")), "report",
                          keys=False)
    # the operator has them
    assert res.input_counts["age"]["clamped_low"] == LOW
    assert res.input_counts["age"]["clamped_high"] == HIGH
    assert res.input_counts["age"]["rounded"] == ROUNDED
    assert res.input_counts["sex"] == {"unknown_mapped_rows": UNKNOWN}
    doc = res.to_dict()
    assert doc["not_for_publication"]["input_counts"]["sex"] == {
        "unknown_mapped_rows": UNKNOWN}


def test_release_keeps_the_reference_reuse_warning_out_of_the_report(tmp_path: Path
                                                                     ) -> None:
    """Releasing the reference itself warns the operator; the warning is a chi-square test
    of the input's label counts (with two labels it can give the counts back), so the
    published report does not carry it."""
    from pmlkit.errors import PMLWarning
    from pmlkit.release import release_table

    with pytest.warns(PMLWarning, match="reference sample"):
        res = release_table(_release_folder(tmp_path, input_is_reference=True))
    html = res.report.read_text(encoding="utf-8")
    assert "reference sample" not in html and "chi-square" not in html
    manifest = res.manifest.read_text(encoding="utf-8")
    assert "reference sample" not in manifest and "chi-square" not in manifest
    assert any("reference sample" in w for w in res.input_warnings)
    assert not any("reference sample" in w for w in res.warnings)
    assert res.to_dict()["not_for_publication"]["input_warnings"] == list(res.input_warnings)


def test_release_command_shows_the_operator_the_raw_counts(tmp_path: Path, capsys) -> None:
    """The terminal is the operator's: ``pmlkit release`` prints the raw input's counts
    there, marked as not for publication (and they stay out of the files it writes)."""
    from pmlkit.cli.main import main

    assert main(["release", "--spec", str(_release_folder(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "counts of the raw input (for you only" in out and "not for publication" in out
    assert f"{LOW + HIGH} clamped ({LOW} below, {HIGH} above), {ROUNDED} rounded" in out
    assert f"sex: {UNKNOWN} input value(s) outside its categories released as 'F'" in out


def test_manifest_entry_done_is_deprecated_and_adds_no_counts() -> None:
    """``done=True`` used to add the raw counts to a numeric column's manifest entry: the
    parameter stays, deprecated, and adds nothing."""
    from pmlkit.numeric.design import laplace_mechanism
    from pmlkit.numeric.grid import NumericGrid
    from pmlkit.privatization.numeric_release import NumericPolicy, manifest_entry

    g = NumericGrid(0, 4, 1)
    pol = NumericPolicy(laplace_mechanism(g, [0.2] * 5, 1.0), g, None, "error", None)
    with pytest.warns(DeprecationWarning, match="done= is deprecated"):
        entry = manifest_entry(pol, done=True)
    assert sorted(entry["numeric"]) == ["grid", "policy"]
