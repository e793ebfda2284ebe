"""Issue 35, "done when": two runs of every design command on the same inputs give
identical mechanisms (matrix, labels and guarantee).

Each command runs twice through click's CliRunner on the same small synthetic reference,
into two files; the second run sees a wall clock ten times faster (what a machine ten
times slower, or loaded, would see), so a search stopped by the clock would show. The
saved documents must be equal byte for byte, and the mechanisms loaded from them (strictly,
with their certificates re-checked) equal in matrix, labels and guarantee.
``tests/test_design_budgets.py::test_cli_design_twice_same_file_contents`` covers
``pmlkit design --confidence box-cp``; this file covers the other design commands and
modes.
"""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Callable

import numpy as np
import pytest
from click.testing import CliRunner

from pmlkit.cli.main import cli
from pmlkit.mechanism import Mechanism


def _fast_clock(monkeypatch: pytest.MonkeyPatch, factor: float = 10.0) -> None:
    real = time.monotonic
    origin = real()
    monkeypatch.setattr(time, "monotonic", lambda: origin + factor * (real() - origin))


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """600 records: a skewed 4-label column ``x``, a 2-label column ``s``, a 3-label column
    ``t`` (the estimation designs, slow on more labels, use it) and a numeric column
    ``age`` on 0..10."""
    rng = np.random.default_rng(35)
    n = 600
    x = rng.choice([f"c{i}" for i in range(4)], size=n, p=[0.45, 0.3, 0.15, 0.1])
    s = rng.choice(["f", "m"], size=n, p=[0.35, 0.65])
    t = rng.choice(["u", "v", "w"], size=n, p=[0.5, 0.3, 0.2])
    age = np.clip(np.round(rng.normal(5.0, 2.0, size=n)), 0, 10).astype(int)
    path = tmp_path_factory.mktemp("det") / "ref.csv"
    rows = zip(x, s, t, age, strict=True)
    path.write_text("x,s,t,age\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows))
    return path


def _invoke(args: list[str]) -> str:
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def _twice(monkeypatch: pytest.MonkeyPatch, run: Callable[[str], str]) -> tuple[str, str]:
    first = run("a")
    with monkeypatch.context() as mp:
        _fast_clock(mp)
        second = run("b")
    return first, second


def _same_mechanism_files(a: pathlib.Path, b: pathlib.Path) -> None:
    assert a.read_bytes() == b.read_bytes()
    ma, mb = Mechanism.load(a), Mechanism.load(b)
    wa, wb = np.asarray(ma.matrix), np.asarray(mb.matrix)
    assert wa.shape == wb.shape and wa.tobytes() == wb.tobytes()
    assert ma.input_labels == mb.input_labels and ma.output_labels == mb.output_labels
    assert ma.guarantee is not None and mb.guarantee is not None
    assert ma.guarantee.to_dict() == mb.guarantee.to_dict()


DESIGN_CASES = [
    pytest.param(["--column", "x"], id="default"),
    pytest.param(["--column", "t", "--utility", "estimation"], id="estimation"),
    # the accuracy design merges labels here: the estimable default replaces it
    pytest.param(["--column", "t", "--utility", "accuracy"], id="accuracy"),
    pytest.param(["--column", "x", "--coarsen", "3"], id="coarsen-3"),
    pytest.param(["--column", "age", "--numeric", "0:10:1"], id="numeric"),
]


@pytest.mark.parametrize("extra", DESIGN_CASES)
@pytest.mark.filterwarnings("ignore::pmlkit.errors.PMLWarning")
def test_design_twice_writes_the_same_mechanism(ref: pathlib.Path, tmp_path: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 extra: list[str]) -> None:
    def run(tag: str) -> str:
        args = ["design", "--reference", str(ref), "--eps", "1", "--delta", "1e-3",
                "--output", str(tmp_path / f"{tag}.json"), *extra]
        if "--numeric" not in extra:
            args += ["--max-work", "0.5"]
        return _invoke(args)

    _twice(monkeypatch, run)
    _same_mechanism_files(tmp_path / "a.json", tmp_path / "b.json")


@pytest.mark.parametrize(("mode", "columns"), [
    # per column: a split search over estimable designs (about 15 s a run when loaded)
    pytest.param("per-column", "t,s", marks=pytest.mark.slow, id="per-column"),
    pytest.param("joint", "x,s", id="joint"),
])
@pytest.mark.filterwarnings("ignore::pmlkit.errors.PMLWarning")
def test_joint_design_twice_writes_the_same_plan(ref: pathlib.Path, tmp_path: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 mode: str, columns: str) -> None:
    def run(tag: str) -> str:
        return _invoke(["joint", "design", "--reference", str(ref), "--columns", columns,
                        "--eps", "1.5", "--delta", "1e-3", "--mode", mode,
                        "--out-dir", str(tmp_path / tag)])

    _twice(monkeypatch, run)
    files_a = sorted(p.name for p in (tmp_path / "a").iterdir())
    files_b = sorted(p.name for p in (tmp_path / "b").iterdir())
    assert files_a == files_b and "release-plan.json" in files_a
    mech_files = [f for f in files_a if f != "release-plan.json"]
    assert len(mech_files) == (2 if mode == "per-column" else 1), files_a
    for f in mech_files:
        _same_mechanism_files(tmp_path / "a" / f, tmp_path / "b" / f)
    # the plan: the same mechanisms (by digest) and the same joint guarantee
    pa = (tmp_path / "a" / "release-plan.json").read_bytes()
    pb = (tmp_path / "b" / "release-plan.json").read_bytes()
    assert pa == pb


@pytest.mark.parametrize("args", [
    pytest.param(["laplace", "--eps", "1"], id="laplace"),
    pytest.param(["gaussian", "--sigma", "0.8", "--points", "5"], id="gaussian"),
])
def test_calibrate_twice_gives_the_same_json(ref: pathlib.Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             args: list[str]) -> None:
    def run(tag: str) -> str:
        return _invoke(["calibrate", args[0], "--reference", str(ref), "--column", "s",
                        "--positive", "f", "--delta", "1e-3", *args[1:], "--json"])

    a, b = _twice(monkeypatch, run)
    assert a == b
    doc = json.loads(a)
    assert doc["guarantee"] is not None  # the released grid mechanism's guarantee


@pytest.mark.filterwarnings("ignore::pmlkit.errors.PMLWarning")
def test_release_spec_twice_designs_the_same_mechanisms(ref: pathlib.Path,
                                                        tmp_path: pathlib.Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    # ``pmlkit release`` designs its columns jointly before it releases: the designs (and
    # the joint guarantee it records) must not depend on the clock either
    def run(tag: str) -> str:
        folder = tmp_path / tag
        folder.mkdir()
        (folder / "release.toml").write_text(
            f'reference = "{ref.as_posix()}"\ninput = "{ref.as_posix()}"\n'
            'output = "out.csv"\nepsilon = 2.0\ndelta = 1e-3\nsearch_steps = 1\n'
            '[columns.s]\ntype = "categorical"\n'
            '[columns.age]\ntype = "numeric"\nlower = 0\nupper = 10\nstep = 5\n')
        return _invoke(["release", "--spec", str(folder / "release.toml"), "--json"])

    a, b = _twice(monkeypatch, run)
    da, db = json.loads(a), json.loads(b)
    assert da["guarantee"] == db["guarantee"]
    ma = json.loads((tmp_path / "a" / "out.csv.pmlkit.json").read_text())
    mb = json.loads((tmp_path / "b" / "out.csv.pmlkit.json").read_text())
    # the released mechanisms, by digest, and the joint guarantee recorded for them
    assert set(ma["mechanisms_sha256"]) == {"s", "age"}
    for key in ("columns", "mechanisms_sha256", "joint_guarantee"):
        assert ma[key] == mb[key], key
