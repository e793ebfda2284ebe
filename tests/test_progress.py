"""Progress of long steps: the library's reports (``pmlkit._progress``) and their display
on the command line (stderr only, on a terminal, never with ``--quiet``).

A report is a description: the same inputs give byte-identical results with and without
a callback installed (checked here against a run without one)."""

from __future__ import annotations

import contextvars
import json
import threading
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pmlkit
from pmlkit import _progress
from pmlkit.cli import _common
from pmlkit.cli.main import main

Seen = list[tuple[str, dict[str, Any]]]


def _collect() -> tuple[Seen, _progress.ProgressCallback]:
    seen: Seen = []
    return seen, lambda stage, info: seen.append((stage, dict(info)))


def _samples() -> np.ndarray:
    # 8 labels, counts 40, 80, ..., 320: a column-generation design of a fraction of a second
    return np.repeat(np.arange(8), np.arange(1, 9) * 40)


def _krr(k: int, eps: float) -> np.ndarray:
    w = np.ones((k, k))
    np.fill_diagonal(w, np.exp(eps))
    out: np.ndarray = w / w.sum(axis=1, keepdims=True)
    return out


def test_design_reports_rounds_with_the_certified_gap_and_the_same_mechanism() -> None:
    plain = pmlkit.design_from_samples(_samples(), 1.0, 1e-3)
    seen, cb = _collect()
    with _progress.reporting(cb):
        watched = pmlkit.design_from_samples(_samples(), 1.0, 1e-3)
    rounds = [info for stage, info in seen if stage == "design.round"]
    assert len(rounds) >= 2
    assert [r["round"] for r in rounds] == sorted(r["round"] for r in rounds)
    # the reported gap is the relative gap of the reported bounds (once a bound exists)
    bounded = [r for r in rounds if np.isfinite(r["upper"])]
    assert bounded
    for r in bounded:
        assert r["gap"] == pytest.approx(max(0.0, (r["upper"] - r["value"]) / abs(r["upper"])),
                                         abs=1e-6)
    a, b = np.asarray(plain.mechanism.matrix), np.asarray(watched.mechanism.matrix)
    assert a.tobytes() == b.tobytes()
    assert plain.mechanism.output_labels == watched.mechanism.output_labels
    assert plain.guarantee.eps == watched.guarantee.eps
    assert not _progress.active()  # the callback is gone after the block


def test_estimate_reports_em_iterations_and_the_same_estimate() -> None:
    from pmlkit.inference import estimate_from_counts

    w = _krr(6, 0.4)
    counts = np.round(20_000 * (np.array([0.5, 0.3, 0.2, 0.0, 0.0, 0.0]) @ w))
    plain = estimate_from_counts(counts, w)
    seen, cb = _collect()
    with _progress.reporting(cb):
        watched = estimate_from_counts(counts, w)
    em = [info for stage, info in seen if stage == "estimate.em"]
    assert em and em[0]["phase"] == "em" and em[0]["iteration"] >= _progress.EM_EVERY
    assert any(stage == "estimate.intervals" for stage, _ in seen)
    for name in ("estimate", "lower", "upper"):
        assert getattr(plain, name).tobytes() == getattr(watched, name).tobytes()


def test_local_search_reports_each_step_and_the_same_matrix() -> None:
    from pmlkit.design.estimation import local_search, pml_randomized_response_matrix

    p = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
    uset = pmlkit.L1Ball(p, 0.05)
    w0 = pml_randomized_response_matrix(uset, p, 0.8)
    assert w0 is not None
    w_plain, gap_plain, steps_plain = local_search(w0, p, uset, 0.8, max_iter=3)
    seen, cb = _collect()
    with _progress.reporting(cb):
        w, gap, steps = local_search(w0, p, uset, 0.8, max_iter=3)
    reported = [info for stage, info in seen if stage == "design.local-search"]
    assert [r["step"] for r in reported][:steps] == list(range(1, steps + 1))
    assert all(r["max_steps"] == 3 for r in reported)
    assert (w.tobytes(), gap, steps) == (w_plain.tobytes(), gap_plain, steps_plain)


def test_joint_design_reports_each_split_tried() -> None:
    g = np.random.default_rng(3)
    ref = pd.DataFrame({"a": g.choice(["x", "y"], 400), "b": g.choice(["u", "v", "w"], 400)})
    seen, cb = _collect()
    with _progress.reporting(cb):
        res = pmlkit.design_joint(ref, 1.5, 0.05, mode="per-column", splits=2, steps=2)
    splits = [info for stage, info in seen if stage == "joint.split"]
    assert len(splits) == len(res.tried)
    assert [s["split"] for s in splits] == [tuple(t["split"]) for t in res.tried]


def test_reproduce_reports_each_figure(tmp_path: Any) -> None:
    from pmlkit.experiments.report import reproduce

    seen, cb = _collect()
    with _progress.reporting(cb):
        reproduce(["deltamin"], tmp_path, iterations=2)
    assert ("reproduce.figure", {"figure": "deltamin", "index": 1, "total": 1}) in seen


def test_audit_reports_each_family_as_it_starts() -> None:
    from pmlkit.audit import run_audit

    seen, cb = _collect()
    with _progress.reporting(cb):
        run_audit(trials=1, rng=0, families=("coverage", "laplace"), deltas=(0.3,))
    fams = [info for stage, info in seen if stage == "audit.family"]
    # in the audit's own order, whatever the order asked for
    assert fams == [{"family": "laplace", "index": 1, "total": 2},
                    {"family": "coverage", "index": 2, "total": 2}]


def test_the_callback_is_local_to_its_context() -> None:
    seen, cb = _collect()
    other: Seen = []

    def elsewhere() -> None:  # a thread started without copying the context sees none
        other.append(("active", {"value": _progress.active()}))
        _progress.report("x.y")

    with _progress.reporting(cb):
        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
        contextvars.copy_context().run(_progress.report, "copied.context", n=1)
    assert other == [("active", {"value": False})]
    assert seen == [("copied.context", {"n": 1})]


# --------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------

@pytest.fixture
def reference(tmp_path: Any) -> str:
    labels = np.array([f"c{i}" for i in range(8)])
    path = tmp_path / "ref.csv"
    pd.DataFrame({"code": labels[_samples()]}).to_csv(path, index=False)
    return str(path)


def _run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _terminal(monkeypatch: Any) -> None:
    """stderr 'is' a terminal (what decides progress without --progress/--no-progress),
    and every report is drawn (no redraw limit: the steps here are faster than it)."""
    monkeypatch.setattr(_common, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(_common, "_REDRAW", 0.0)


def _design(reference: str, out: Any, *extra: str) -> list[str]:
    return ["design", "--reference", reference, "--column", "code", "--epsilon", "1",
            "--delta", "1e-3", "--utility", "mutual_information", "--out", str(out), *extra]


def test_cli_design_on_a_terminal_shows_rounds_on_stderr_only(capsys: Any, monkeypatch: Any,
                                                               reference: str,
                                                               tmp_path: Any) -> None:
    code, piped_out, piped_err = _run(capsys, *_design(reference, tmp_path / "a.json",
                                                       "--json"))
    assert code == 0
    assert "column generation" not in piped_err  # a pipe: no progress
    _terminal(monkeypatch)
    code, out, err = _run(capsys, *_design(reference, tmp_path / "b.json", "--json"))
    assert code == 0
    assert "pmlkit design: " in err and "column generation round" in err
    assert "certified gap" in err
    assert not err.endswith("gap")  # the line is cleared at the end
    a, b = json.loads(piped_out), json.loads(out)  # --json stdout parses, unchanged
    a.pop("file", None), b.pop("file", None)
    assert json.dumps(a, sort_keys=True).replace("a.json", "") == \
        json.dumps(b, sort_keys=True).replace("b.json", "")
    ma = pmlkit.Mechanism.load(tmp_path / "a.json")
    mb = pmlkit.Mechanism.load(tmp_path / "b.json")
    assert np.asarray(ma.matrix).tobytes() == np.asarray(mb.matrix).tobytes()


@pytest.mark.parametrize("flags", [("--quiet",), ("--no-progress",),
                                   ("--progress", "--quiet")])
def test_cli_quiet_or_no_progress_prints_no_progress(capsys: Any, monkeypatch: Any,
                                                     reference: str, tmp_path: Any,
                                                     flags: tuple[str, ...]) -> None:
    _terminal(monkeypatch)
    code, out, err = _run(capsys, *_design(reference, tmp_path / "m.json", *flags))
    assert code == 0
    assert "pmlkit design: " not in err
    assert "written to" in out


def test_cli_progress_forces_it_in_a_pipe(capsys: Any, monkeypatch: Any, reference: str,
                                         tmp_path: Any) -> None:
    monkeypatch.setattr(_common, "_REDRAW", 0.0)
    code, out, err = _run(capsys, *_design(reference, tmp_path / "m.json", "--progress"))
    assert code == 0
    assert "column generation round" in err
    assert "column generation" not in out


def test_cli_estimate_shows_em_iterations_on_a_terminal(capsys: Any, monkeypatch: Any,
                                                       tmp_path: Any) -> None:
    labels = tuple(f"c{i}" for i in range(6))
    mech = pmlkit.Mechanism(_krr(6, 0.4), labels, labels)
    mech.save(tmp_path / "m.json")
    g = np.random.default_rng(5)
    true = g.choice(6, size=20_000, p=[0.5, 0.3, 0.2, 0.0, 0.0, 0.0])
    u = g.random(true.size)  # each record through its row of the mechanism
    released = (u[:, None] > np.cumsum(np.asarray(mech.matrix)[true], axis=1)).sum(axis=1)
    pd.DataFrame({"code": np.array(labels)[released]}).to_csv(tmp_path / "rel.csv",
                                                              index=False)
    argv = ["estimate", "--input", str(tmp_path / "rel.csv"), "--column", "code",
            "--mechanism", str(tmp_path / "m.json"), "--json"]
    code, piped_out, piped_err = _run(capsys, *argv)
    assert code == 0 and "EM iteration" not in piped_err
    _terminal(monkeypatch)
    code, out, err = _run(capsys, *argv)
    assert code == 0
    assert "pmlkit estimate: " in err and "EM iteration" in err
    assert json.loads(out) == json.loads(piped_out)
    code, out, err = _run(capsys, *argv, "--quiet")
    assert code == 0 and "pmlkit estimate" not in err


def test_every_command_with_progress_takes_quiet() -> None:
    from click.testing import CliRunner

    from pmlkit.cli.main import cli

    for command in ("design", "estimate", "assess", "privatize", "audit", "reproduce",
                    "joint design"):
        res = CliRunner().invoke(cli, [*command.split(), "--help"])
        assert res.exit_code == 0, command
        assert "--quiet" in res.output and "--progress / --no-progress" in res.output, command


def test_describe_progress_names_what_is_running() -> None:
    d = _common.describe_progress
    assert d("design.round", {"round": 3, "gap": float("inf")}) == \
        "column generation round 3, certified gap not bounded yet"
    assert d("design.round", {"round": 9, "gap": 0.25, "final": True}) == \
        "final bound search round 9, certified gap 25.00%"
    assert d("joint.split", {"split": (0.5, 1.0), "tried": 2}) == \
        "split 2: eps per column (0.5, 1)"
    assert Counter(d("reproduce.figure", {"figure": "gauss", "index": 1, "total": 3})
                   .split()) == Counter(["figure", "gauss", "(1/3)"])


def test_a_broken_stderr_ends_the_display_not_the_command(monkeypatch: Any) -> None:
    class Closed:
        def write(self, _text: str) -> int:
            raise OSError("stderr is closed")

        def flush(self) -> None:
            raise OSError("stderr is closed")

    monkeypatch.setattr("sys.stderr", Closed())
    with _common.progress_display("pmlkit design", True) as say:
        say("designing")
        res = pmlkit.design_from_samples(_samples(), 1.0, 1e-3)
    assert np.asarray(res.mechanism.matrix).tobytes() == np.asarray(
        pmlkit.design_from_samples(_samples(), 1.0, 1e-3).mechanism.matrix).tobytes()


def test_cli_audit_names_each_family_on_a_terminal(capsys: Any, monkeypatch: Any) -> None:
    argv = ["audit", "--trials", "1", "--family", "laplace", "--delta", "0.3", "--json"]
    code, piped_out, piped_err = _run(capsys, *argv)
    assert code == 0 and "family" not in piped_err
    _terminal(monkeypatch)
    code, out, err = _run(capsys, *argv)
    assert code == 0
    assert "pmlkit audit: family laplace (1/1)\n" in err
    a, b = json.loads(out), json.loads(piped_out)
    a.pop("rng"), b.pop("rng")  # (a salted commitment to the seed: differs per run)
    assert a == b  # same seed, same table
