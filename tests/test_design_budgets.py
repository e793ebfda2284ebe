"""Design budgets: counted work, deterministic results, and a wall-clock cap that is
honoured on every path (issue 32 case 7, issue 35 item 5).

* A design's search is bounded by ``max_work`` work units, counted, not timed: two runs on
  the same inputs give the same mechanism bit for bit, also when the clock runs ten times
  faster (a machine ten times slower or loaded) in one of them.
* ``max_seconds`` is only an outer cap: when it stops a search (ray enumeration included)
  the design returns within a small multiple of it, warns that it did, with the certified
  gap it left, and records it in the provenance.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest

from pmlkit import design_from_samples
from pmlkit.confidence import confidence_set
from pmlkit.design import optimal_mechanism_for_set
from pmlkit.design.colgen import BoxLagrangeOracle, BoxTreeOracle, Work
from pmlkit.errors import PMLWarning, ValidationError
from pmlkit.estimation import EmpiricalDistribution
from pmlkit.utility import mutual_information
from pmlkit.worstcase import leakage_capacity


def _counts(n: int, ratio: float = 0.85, m: int = 10_000) -> np.ndarray:
    p = ratio ** np.arange(n)
    return np.maximum(np.round(m * p / p.sum()), 1.0).astype(np.int64)


def _estimate(n: int) -> EmpiricalDistribution:
    return EmpiricalDistribution.from_counts(_counts(n), [f"c{i}" for i in range(n)])


def _design(fn: object, *args: object, **kwargs: object
            ) -> tuple[object, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)  # type: ignore[operator]
    return out, [w for w in caught if issubclass(w.category, PMLWarning)]


def _gap_in(message: str) -> float:
    """The certified gap a budget warning states."""
    text = message.split("certified optimality gap", 1)[1].split()
    return float(text[1] if text[0] == "of" else text[0])


def test_case7_time_cap_honoured_by_the_ray_enumeration() -> None:
    """Issue 32, case 7: ``max_seconds=0.3`` on a 13-category l1-box design ran for 16 to
    83 s with no warning (the 3^13 candidate rays were generated whatever the budget).
    Now it returns within a small multiple of the cap, warns that the cap stopped the
    search with the certified gap it left, and records both; the mechanism is still
    certified over the set (exact worst case)."""
    est = _estimate(13)
    # the work done is measured as this process's CPU time, which other jobs on a
    # loaded machine do not inflate (wall time under load 8 once passed 10 s); the
    # search this cap failed to stop took 16 to 83 s of CPU
    t0 = time.process_time()
    res, caught = _design(design_from_samples, est, 1.0, 1e-6, confidence="l1-box",
                          max_seconds=0.3)
    cpu = time.process_time() - t0
    assert cpu < 10.0, cpu
    mech = res.mechanism  # type: ignore[attr-defined]
    budget = mech.parameters["budget"]
    assert budget["time_capped"] is True and budget["max_seconds"] == 0.3
    gap = mech.parameters["optimality_gap"]
    assert gap is not None and 0 < gap < math.inf
    capped = [w for w in caught if "time cap (max_seconds=0.3)" in str(w.message)]
    assert len(capped) == 1, [str(w.message) for w in caught]
    assert _gap_in(str(capped[0].message)) == pytest.approx(gap, rel=1e-2)
    uset = confidence_set(est.counts, 1e-6, confidence="l1-box").set
    assert float(leakage_capacity(np.asarray(mech.matrix), uset)) <= 1.0 + 1e-9


def _fast_clock(monkeypatch: pytest.MonkeyPatch, factor: float = 10.0) -> None:
    """The wall clock runs ``factor`` times faster from now on: what a machine that many
    times slower (or loaded) would see."""
    real = time.monotonic
    origin = real()
    monkeypatch.setattr(time, "monotonic", lambda: origin + factor * (real() - origin))


# one case per search of the designer; small work budgets, so that the budget (not the
# requested gap) ends the search and its bookkeeping is what is tested
CASES = [
    # l1-ball of the paper around an estimate from counts: dynamic programming
    pytest.param("samples", 20, math.log(2), "l1", 0.5, "dynamic programming", id="l1-dp"),
    # the best set (a box) on 8 categories: the candidate rays are enumerated
    pytest.param("set", 8, 1.0, "auto", 5.0, "enumeration", id="box-enumeration"),
    # a box on 12 categories with a budget too small to enumerate: streamed assignments
    pytest.param("set", 12, 1.0, "auto", 0.3, "exact enumeration (box)", id="box-stream"),
    # the l1-box set on 10 categories, a budget too small to enumerate: spatial search
    pytest.param("set", 10, 1.0, "l1-box", 0.2, "branch and bound", id="l1box-spatial"),
    # a box on 20 categories: level cells (numba)
    pytest.param("set", 20, math.log(2), "auto", 0.5, "level-cell", id="box-level-cells"),
    # a box on 16 categories: block pairs (numba)
    pytest.param("set", 16, 2.0, "auto", 0.5, "block-pair", id="box-block-pairs"),
]


@pytest.mark.parametrize(("kind", "n", "eps", "conf", "work", "oracle"), CASES)
def test_same_inputs_same_mechanism_under_load(monkeypatch: pytest.MonkeyPatch, kind: str,
                                                n: int, eps: float, conf: str, work: float,
                                                oracle: str) -> None:
    """Issue 35, item 5: the same design twice gives the same mechanism (matrix, labels,
    guarantee), bit for bit, the second time with the clock running ten times faster (no
    time cap: the default). The work recorded is the same too, and nothing was capped."""
    if oracle == "level-cell" and not BoxLagrangeOracle.available():
        pytest.skip("the level-cell search needs numba")
    if oracle == "block-pair" and not BoxTreeOracle.available():
        pytest.skip("the block-pair search needs numba")
    est = _estimate(n)

    def run() -> object:
        if kind == "samples":
            res, _ = _design(design_from_samples, est, eps, 1e-6, max_work=work)
            return res.mechanism  # type: ignore[attr-defined]
        cs = confidence_set(est.counts, 1e-6, confidence=conf)
        mech, _ = _design(optimal_mechanism_for_set, cs.set, eps, prior=est.p,
                          labels=list(est.categories), max_work=work)
        return mech

    first = run()
    _fast_clock(monkeypatch)
    second = run()
    a, b = first.parameters, second.parameters  # type: ignore[attr-defined]
    assert oracle in a["method"], a["method"]
    m1 = np.asarray(first.matrix)  # type: ignore[attr-defined]
    m2 = np.asarray(second.matrix)  # type: ignore[attr-defined]
    assert m1.shape == m2.shape and m1.tobytes() == m2.tobytes()
    assert first.output_labels == second.output_labels  # type: ignore[attr-defined]
    assert first.input_labels == second.input_labels  # type: ignore[attr-defined]
    assert first.guarantee.to_dict() == second.guarantee.to_dict()  # type: ignore[attr-defined]
    assert a["budget"] == b["budget"] and a["budget"]["time_capped"] is False
    assert a["optimality_gap"] == b["optimality_gap"]


def test_work_budget_spent_is_reported_and_bounds_the_search() -> None:
    """A budget too small for the requested gap: the search stops after about
    ``max_work`` units (a round may finish past it, never by much), warns that the work
    budget was spent with the gap it left (not the time cap), and a larger budget never
    certifies a larger gap."""
    if not BoxLagrangeOracle.available():
        pytest.skip("the level-cell search needs numba")
    est = _estimate(20)
    cs = confidence_set(est.counts, 1e-6, confidence="auto")
    gaps = []
    for work in (0.3, 1.5):
        mech, caught = _design(optimal_mechanism_for_set, cs.set, math.log(2), prior=est.p,
                               max_work=work)
        budget = mech.parameters["budget"]  # type: ignore[attr-defined]
        assert budget["max_work"] == work and budget["time_capped"] is False
        assert budget["work"] <= 2.5 * work + 1.0
        gap = mech.parameters["optimality_gap"]  # type: ignore[attr-defined]
        msgs = [str(w.message) for w in caught]
        assert any(f"work budget (max_work={work:g} units)" in m for m in msgs), msgs
        assert not any("time cap" in m for m in msgs), msgs
        gaps.append(gap)
    assert gaps[1] <= gaps[0]


def test_time_cap_is_only_an_outer_cap() -> None:
    """A cap that does not bind changes nothing: the same mechanism as without it."""
    est = _estimate(12)
    cs = confidence_set(est.counts, 1e-6, confidence="auto")
    free, _ = _design(optimal_mechanism_for_set, cs.set, 1.0, prior=est.p, max_work=0.3)
    capped, caught = _design(optimal_mechanism_for_set, cs.set, 1.0, prior=est.p,
                             max_work=0.3, max_seconds=3600.0)
    assert np.asarray(free.matrix).tobytes() == np.asarray(capped.matrix).tobytes()  # type: ignore[attr-defined]
    assert not any("time cap" in str(w.message) for w in caught)
    assert capped.parameters["budget"]["max_seconds"] == 3600.0  # type: ignore[attr-defined]


def test_mutual_information_is_never_below_the_start_when_capped() -> None:
    """A design stopped by the cap at once keeps its certified start (the accuracy
    design's columns): its mutual information is at least the accuracy LP's."""
    from pmlkit.design.linear import linear_design_matrix

    est = _estimate(12)
    cs = confidence_set(est.counts, 1e-6, confidence="l1-box")
    mech, caught = _design(optimal_mechanism_for_set, cs.set, 1.0, prior=est.p,
                           max_seconds=1e-3)
    assert any("time cap" in str(w.message) for w in caught)
    acc = linear_design_matrix(cs.set, est.p, eps=1.0, gain="accuracy")
    p = np.asarray(est.p)
    assert mutual_information(np.asarray(mech.matrix), p) >= mutual_information(acc, p) - 1e-9  # type: ignore[attr-defined]


def test_work_meter() -> None:
    meter = Work()
    meter.spend(2.0)
    assert meter.stop(2.0) and not meter.stop(2.5) and not meter.capped
    late = Work(deadline=time.monotonic() - 1.0)
    assert late.stop(math.inf) and late.capped


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, True, "60"])
def test_max_work_validated(bad: object) -> None:
    with pytest.raises(ValidationError, match=r"max_work must be a number of work units > 0"):
        design_from_samples(["a", "b", "b"], 1.0, 0.5, max_work=bad)  # type: ignore[arg-type]


def test_cli_design_twice_same_file_contents(tmp_path: object, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """``pmlkit design`` twice on the same reference (the second time with the clock ten
    times faster) writes the same mechanism: matrix, labels and guarantee; the work budget
    is ``--max-work`` and there is no time cap by default."""
    import pathlib

    from pmlkit.cli.main import main
    from pmlkit.design import summary
    from pmlkit.mechanism import Mechanism

    # The command's summary (printed after the file is saved, so no part of what is
    # compared) simulates 400 releases of 12 x 12 by maximum likelihood: 11 of each
    # run's 12 s. Its floor of 30 releases is enough here.
    monkeypatch.setattr(summary, "SUMMARY_REPLICATES", 30)
    folder = pathlib.Path(str(tmp_path))
    counts = _counts(12, m=2000)
    ref = folder / "ref.csv"
    ref.write_text("x\n" + "\n".join(f"c{i}" for i, k in enumerate(counts) for _ in range(k))
                   + "\n")
    mechs = []
    for name in ("a.json", "b.json"):
        if name == "b.json":
            _fast_clock(monkeypatch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PMLWarning)
            assert main(["design", "--reference", str(ref), "--column", "x", "--eps", "1",
                         "--delta", "1e-6", "--confidence", "box-cp", "--max-work", "0.3",
                         "--output", str(folder / name), "--json"]) == 0
        mechs.append(Mechanism.load(folder / name))
    a, b = mechs
    assert np.asarray(a.matrix).tobytes() == np.asarray(b.matrix).tobytes()
    assert a.input_labels == b.input_labels and a.output_labels == b.output_labels
    assert a.guarantee is not None and b.guarantee is not None
    assert a.guarantee.to_dict() == b.guarantee.to_dict()
    assert a.parameters["budget"] == b.parameters["budget"]
    assert a.parameters["budget"]["max_seconds"] is None
    assert a.parameters["budget"]["max_work"] == 0.3


def test_cap_stops_the_candidate_ray_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budgets plan the 3^12 candidate rays of an l1-box design (their generation fits
    ``max_seconds=30``), but on a machine a thousand times slower (the clock runs a
    thousand times faster) the cap stops the generation between its chunks: the design
    falls back to the spatial branch and bound, warns that the cap stopped it and is still
    certified over the set."""
    import pmlkit.design.subconvex as sc

    est = _estimate(12)
    cs = confidence_set(est.counts, 1e-6, confidence="l1-box")
    asked: list[int] = []
    real = sc.three_level_rays_until

    def spy(uset: object, eps: float, q0: object = None, stop: object = None) -> object:
        def counted(done: int) -> bool:
            asked.append(done)
            return stop(done)  # type: ignore[operator,no-any-return]
        return real(uset, eps, q0, counted if stop is not None else None)  # type: ignore[arg-type]

    monkeypatch.setattr(sc, "three_level_rays_until", spy)
    _fast_clock(monkeypatch, 1000.0)
    mech, caught = _design(optimal_mechanism_for_set, cs.set, 1.0, prior=est.p,
                           max_seconds=30.0)
    assert asked, "the generation was not planned"
    assert "branch and bound" in mech.parameters["method"]  # type: ignore[attr-defined]
    assert mech.parameters["budget"]["time_capped"] is True  # type: ignore[attr-defined]
    assert any("time cap (max_seconds=30)" in str(w.message) for w in caught)
    w = np.asarray(mech.matrix)  # type: ignore[attr-defined]
    assert float(leakage_capacity(w, cs.set)) <= 1.0 + 1e-9
