"""``pmlkit release --spec`` never replaces a file it reads, nor writes two of its own
files to one path, and releases a glob of inputs into a folder (found by an attack round:
with ``overwrite = true`` the report replaced the input, the reference or the released
data, and ``output = <reference>`` replaced the reference; a glob of several inputs was
released and then failed before the report)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pmlkit.errors import DataError
from pmlkit.release import release_table


def _folder(tmp_path: Path, top: str, *, inputs: tuple[str, ...] = ("in.csv",)) -> Path:
    rng = np.random.default_rng(3)
    n = 1600
    df = pd.DataFrame({"id": np.arange(n), "sex": rng.choice(["F", "M"], n)})
    df[:1000].to_csv(tmp_path / "ref.csv", index=False)
    for k, name in enumerate(inputs):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        df[1000 + 300 * k:1300 + 300 * k].to_csv(tmp_path / name, index=False)
    spec = tmp_path / "release.toml"
    spec.write_text(f'reference = "ref.csv"\n{top}\nepsilon = 2.0\ndelta = 1e-3\nseed = 1\n'
                    '[columns.sex]\ntype = "categorical"\n')
    return spec


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("top, words", [
    ('input = "in.csv"\noutput = "ref.csv"', "is the reference"),
    ('input = "in.csv"\noutput = "out.csv"\nreport = "in.csv"', "is the input file"),
    ('input = "in.csv"\noutput = "out.csv"\nreport = "ref.csv"', "is the reference"),
    ('input = "in.csv"\noutput = "out.csv"\nreport = "out.csv"', "is the output"),
    ('input = "in.csv"\noutput = "out.csv"\nreport = "out.csv.pmlkit.json"',
     "is the manifest"),
    # a report that cannot be written is refused before the data is published
    ('input = "in.csv"\noutput = "out.csv"\nreport = "nowhere/r.html"', "does not exist"),
    ('input = "in.csv"\noutput = "out.csv"\nreport = "."', "is a folder"),
    ('input = "in.csv"\noutput = "nowhere/out.csv"', "does not exist"),
    # the spec file itself is read too: it was replaced by the report
    ('input = "in.csv"\noutput = "out.csv"\nreport = "release.toml"', "is the release spec"),
])
def test_bad_output_or_report_paths_are_refused_before_anything_is_written(tmp_path: Path, top: str,
                                                            words: str) -> None:
    spec = _folder(tmp_path, top + "\noverwrite = true")
    before = _digests(tmp_path)
    with pytest.raises(DataError, match=words):
        release_table(spec)
    assert _digests(tmp_path) == before  # nothing replaced, nothing written


def test_a_glob_of_inputs_is_released_into_a_folder_with_its_report(tmp_path: Path) -> None:
    spec = _folder(tmp_path, 'input = "parts/*.csv"\noutput = "released/"',
                   inputs=("parts/a.csv", "parts/b.csv"))
    res = release_table(spec)
    assert res.rows == 600
    for name in ("a.csv", "b.csv"):
        raw = pd.read_csv(tmp_path / "parts" / name)
        out = pd.read_csv(tmp_path / "released" / name)
        assert out["id"].tolist() == raw["id"].tolist()
        assert set(out["sex"]) <= {str(y) for y in res.columns[0].mechanism.output_labels}
        assert (tmp_path / "released" / (name + ".pmlkit.json")).exists()
    # the estimate is over every released row, from both files
    assert res.columns[0].estimate.n == 600
    assert res.report.exists() and res.manifest == tmp_path / "released"


def test_bounds_that_clamp_many_values_are_warned_and_reported(tmp_path: Path) -> None:
    from pmlkit.errors import PMLWarning

    rng = np.random.default_rng(4)
    for name, n in (("ref.csv", 1000), ("in.csv", 300)):
        pd.DataFrame({"age": rng.integers(0, 100, n)}).to_csv(tmp_path / name, index=False)
    spec = tmp_path / "release.toml"
    spec.write_text('reference = "ref.csv"\ninput = "in.csv"\noutput = "out.csv"\n'
                    'epsilon = 2.0\ndelta = 1e-3\nseed = 1\n[columns.age]\n'
                    'type = "numeric"\nlower = 40\nupper = 45\nstep = 5\n')
    with pytest.warns(PMLWarning, match=r"'age'.*outside \[lower, upper\]") as rec:
        res = release_table(spec)
    ages = pd.read_csv(tmp_path / "ref.csv")["age"].to_numpy()
    outside = int(((ages < 40) | (ages > 45)).sum())  # counted here, not by the grid
    assert f"{outside} of 1000" in str(rec[0].message)
    assert any(f"{outside} of 1000" in w for w in res.warnings)
    assert f"{outside} of 1000" in res.report.read_text()
    # bounds that hold the data say nothing
    spec.write_text(spec.read_text().replace("lower = 40", "lower = 0")
                    .replace("upper = 45", "upper = 100").replace("out.csv", "out2.csv"))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PMLWarning)
        release_table(spec)


def test_categories_that_collide_as_text_are_refused() -> None:
    from pmlkit.errors import ValidationError
    from pmlkit.release import ReleaseSpec

    doc: dict[str, Any] = {"reference": "r.csv", "input": "i.csv", "output": "o.csv",
                           "epsilon": 1.0, "delta": 1e-3,
                           "columns": {"c": {"type": "categorical",
                                             "categories": [1, "1", "2"]}}}
    with pytest.raises(ValidationError, match=r"columns\.c\.categories.*distinct as text"):
        ReleaseSpec.from_dict(doc)
    doc["columns"]["c"]["categories"] = [1, "2"]  # mixed kinds that stay apart are fine
    assert ReleaseSpec.from_dict(doc).columns[0].categories == (1, "2")


def test_nulls_in_the_input_name_the_spec_key_that_releases_them(tmp_path: Path) -> None:
    spec = _folder(tmp_path, 'input = "in.csv"\noutput = "out.csv"')
    df = pd.read_csv(tmp_path / "in.csv", dtype=str)
    df.loc[::7, "sex"] = None
    df.to_csv(tmp_path / "in.csv", index=False)
    words = r"'sex'.*43 rows.*missing = 'keep' \(at the top of the spec or in the column's "
    with pytest.raises(DataError, match=words + r"table.*missing = 'category'") as info:
        release_table(spec)
    assert "--missing" not in str(info.value) and "pmlkit design" not in str(info.value)
    assert not (tmp_path / "out.csv").exists()
