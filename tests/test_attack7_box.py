"""Attacks on every pricing oracle for mutual information over a box, the large-N ones
included, against the independent brute force of ``tests/boxtruth.py``.

A pricing bound is an optimality certificate: it must never be below the true maximum of
``mu(v) - y . v`` over ``K_1``, for any duals ``y``, whenever the search stops (at its end,
a deadline already past, 20 ms, or 1, 3, 10, 40 nodes where the oracle takes a node
limit). The oracles are found by name in
:mod:`pmlkit.design.colgen` and in any of its private modules (a class
with a ``price`` method built from ``(box, p, eps)``), so a new one is attacked as soon
as it exists. The brute force runs at N = 4..11 (all ``3^N`` assignments, the greedy worst
case checked against HiGHS, the vertex list against random LP directions at N <= 6).
Duals: zero, multiples of ``p``, large of either sign, the optimal duals of the full LP
and their perturbations, the duals of every round of a column-generation run, and duals
built so that one chosen vertex is the unique maximiser (the one-level vertex that is just
feasible, the three-level vertex of the largest and of the smallest ``rho``, the smallest
``min_Q Q . w``, the all-ones column), each also shifted by multiples of ``p`` (which moves
every value by the same amount). Boxes: confidence sets from tiny counts (0, 1, 2),
``sum(hi) = 1 + 1e-9`` with ``lo = 0``, a single point, ``p`` on the edge of the box,
``p`` outside it by rounding; eps from 0.01 to 8.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import time
import warnings
from functools import cache
from typing import Any

import numpy as np
import pytest
from scipy.optimize import linprog

import boxtruth as bt
from pmlkit.confidence import confidence_set
from pmlkit.design import colgen
from pmlkit.errors import PMLWarning
from pmlkit.sets import Box
from pmlkit.utility import mutual_information_columns

#: oracles that are not box pricing oracles (other sets, or a ray list)
NOT_BOX = {"EnumerationOracle", "L1BallOracle", "BranchAndBoundOracle"}
#: the exact oracles of the earlier rounds, limited in N
SMALL_N = {"BoxOracle": colgen.BOX_MAX_N, "BoxTreeOracle": colgen.BOX_TREE_MAX_N}


def _box_oracles() -> dict[str, type]:

    mods: list[Any] = [colgen]
    for m in pkgutil.iter_modules(colgen.__path__):
        mods.append(importlib.import_module(f"pmlkit.design.colgen.{m.name}"))
    out: dict[str, type] = {}
    for mod in mods:
        for name, obj in vars(mod).items():
            if (isinstance(obj, type) and obj.__module__ == mod.__name__
                    and name not in NOT_BOX and not name.startswith("_")
                    and callable(getattr(obj, "price", None))
                    and "deadline" in inspect.signature(obj.price).parameters):
                out[name] = obj
    return out


ORACLES = _box_oracles()
LARGE = sorted(name for name in ORACLES if name not in SMALL_N)


def _make(name: str, lo: np.ndarray, hi: np.ndarray, p: np.ndarray, eps: float) -> Any:
    cls = ORACLES[name]
    if name == "BoxTreeOracle" and not cls.available():
        pytest.skip("the block-pair search needs numba")
    return cls(Box(lo, hi), p, eps)


def _price(oracle: Any, y: np.ndarray, *, want: int, deadline: float
           ) -> tuple[np.ndarray, np.ndarray, float]:
    kw: dict[str, Any] = {}
    if "full" in inspect.signature(oracle.price).parameters:
        kw["full"] = True
    cols, vals, bound = oracle.price(np.array(y, dtype=np.float64), want=want,
                                     deadline=deadline, atol=1e-9, **kw)
    return np.asarray(cols), np.asarray(vals), float(bound)


# -- instances -----------------------------------------------------------------------------

def _instance(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                     float]:
    g = np.random.default_rng(seed)
    eps = float(g.choice([0.01, 0.1, math.log(2), 2.0, 8.0]))
    if kind == "tiny-counts":  # a Clopper-Pearson box from counts 0, 1, 2
        counts = g.integers(0, 3, n)
        counts[0] = max(int(counts[0]), 1)
        box = confidence_set(counts, 0.05, confidence="auto").set
        lo, hi = np.asarray(box.lower, float), np.asarray(box.upper, float)
        p = (counts + 0.5) / (counts + 0.5).sum()
        if isinstance(box, Box):
            return p, lo, hi, eps
        # ("auto" chose a ball: take the Clopper-Pearson box itself)
        box = confidence_set(counts, 0.05, confidence="box-cp").set
        return p, np.asarray(box.lower, float), np.asarray(box.upper, float), eps
    p = g.dirichlet(np.ones(n))
    p = np.maximum(p, 1e-3)
    p /= p.sum()
    if kind == "counts":
        counts = g.integers(0, 40, n) + g.integers(0, 2, n) * g.integers(0, 500, n)
        counts[0] += 3
        box = confidence_set(counts, 1e-3, confidence="box-cp").set
        p = (counts + 0.5) / (counts + 0.5).sum()
        return p, np.asarray(box.lower, float), np.asarray(box.upper, float), eps
    if kind == "hi-sum-1e-9":  # sum(hi) = 1 + 1e-9, lo = 0
        return p, np.zeros(n), p + 1e-9 / n, eps
    if kind == "point":  # the box is the one distribution p
        return p, p.copy(), p.copy(), eps
    if kind == "p-on-edge":  # p at lo on half the letters, at hi on the others
        lo, hi = p * 0.5, np.minimum(p * 1.8, 1.0)
        lo[::2] = p[::2]
        hi[1::2] = p[1::2]
        return p, lo, hi, eps
    if kind == "p-outside-by-rounding":  # p just above hi / below lo by an ulp or so
        lo, hi = p * 0.7, np.minimum(p * 1.4, 1.0)
        hi[0] = p[0] * (1 - 1e-15)
        lo[1] = p[1] * (1 + 1e-15)
        return p, lo, hi, eps
    if kind == "wide":
        return p, p * g.uniform(0, 1, n), np.minimum(p * g.uniform(1, 3, n), 1.0), eps
    raise AssertionError(kind)


@cache
def _truth(kind: str, n: int, seed: int) -> tuple[Any, ...]:
    p, lo, hi, eps = _instance(kind, n, seed)
    v, lev = bt.vertices(p, lo, hi, eps)
    muv = bt.mu(v, p)
    if v.shape[1] <= 5000:
        opt, ystar = bt.full_lp(v, muv)
    else:  # (a hundred thousand vertices: column generation over the list, its exact
        # pricing, is 200x faster than the full LP and ends at optimal duals)
        rec: list[np.ndarray] = []

        class Recording(colgen.EnumerationOracle):
            def price(self, y: np.ndarray, **kw: Any) -> tuple[np.ndarray, np.ndarray, float]:
                rec.append(np.array(y, dtype=np.float64))
                return super().price(y, **kw)

        res = colgen.column_generation(Recording(v, muv), p, lambda c: bt.mu(c, p),
                                       start=None, gap=1e-12, deadline=math.inf)
        opt, ystar = res.value, rec[-1]
        assert float(np.max(muv - ystar @ v)) <= 1e-9
    return p, lo, hi, eps, v, lev, muv, opt, ystar


CASES = [("tiny-counts", 4, 1), ("tiny-counts", 7, 2), ("hi-sum-1e-9", 6, 3),
         ("point", 5, 4), ("p-on-edge", 8, 5), ("p-outside-by-rounding", 6, 6),
         ("counts", 9, 7), ("wide", 10, 8), ("counts", 11, 9)]


# -- the brute force itself ----------------------------------------------------------------

@pytest.mark.parametrize("kind,n,seed", [c for c in CASES if c[1] <= 7])
def test_brute_force_agrees_with_highs(kind: str, n: int, seed: int) -> None:
    """The greedy worst case against one LP per assignment (a sample of them), and the
    vertex list against random linear objectives maximised over ``K_1`` by an LP."""
    p, lo, hi, eps, v, _, _, _, _ = _truth(kind, n, seed)
    e = math.exp(eps)
    g = np.random.default_rng(seed)
    lev = bt.assignments(n)
    sample = lev[g.choice(lev.shape[0], min(lev.shape[0], 60), replace=False)]
    qm, qt = bt.greedy_masses(sample, lo, hi)
    for row, m_, t_ in zip(sample, qm, qt, strict=True):
        if not (row == 2).any() or not (row == 1).any():
            continue
        rho = bt.rho_lp(row, lo, hi, e)
        mine = e * m_ / (1 - e * t_) if 1 - e * t_ > 1e-12 else math.inf
        if rho is None:
            assert mine < 1 + 1e-7, (row, mine)
        elif math.isinf(rho) or rho > 1e9:
            assert mine > 1e8 or math.isinf(mine), (row, mine)
        else:
            assert mine == pytest.approx(rho, rel=1e-6, abs=1e-9), row
    if n <= 6:
        for c in [*g.normal(size=(25, n)), *np.eye(n), *-np.eye(n)]:
            lp = bt.lp_max_linear(c, p, lo, hi, eps)
            assert float(np.max(c @ v)) == pytest.approx(lp, rel=1e-7, abs=1e-8), c


# -- adversarial duals ---------------------------------------------------------------------

def _targeting(v: np.ndarray, muv: np.ndarray, target: int, p: np.ndarray
               ) -> np.ndarray | None:
    """Duals whose unique maximiser of ``mu(v) - y . v`` over the vertices is vertex
    ``target`` (None if it is not an exposed vertex of their hull): ``y = -lam c`` with
    ``c . (v_target - v) >= 1`` for every other vertex (an LP)."""
    n, k = v.shape
    others = np.delete(np.arange(k), target)
    if others.size == 0:
        return None
    d = (v[:, [target]] - v[:, others]).T  # c . d >= 1
    res = linprog(np.zeros(n), A_ub=-d, b_ub=-np.ones(others.size),
                  bounds=[(-1e6, 1e6)] * n, method="highs")
    if res.status != 0:
        return None
    c = np.asarray(res.x)
    lam = 2.0 * (float(muv.max() - muv.min()) + 1.0)
    out: np.ndarray = -lam * c
    return out


@cache
def _duals(kind: str, n: int, seed: int) -> list[tuple[str, np.ndarray]]:
    p, lo, hi, eps, v, lev, muv, _, ystar = _truth(kind, n, seed)
    g = np.random.default_rng(seed + 100)
    out = [("zero", np.zeros(n)), ("2p", 2 * p), ("-3p", -3 * p),
           ("big+", np.abs(g.normal(0, 1e4, n))), ("big-", -np.abs(g.normal(0, 1e4, n))),
           ("big", g.normal(0, 1e4, n)), ("random", g.normal(0, 1, n)),
           ("optimal", ystar), ("optimal+1e-7", ystar + g.normal(0, 1e-7, n)),
           ("optimal-1e-6p", ystar - 1e-6 * p), ("optimal+5p", ystar + 5 * p)]
    # vertices on the edges of the cells
    e = math.exp(eps)
    qm, qt = bt.greedy_masses(lev, lo, hi)
    one = ~(lev == 2).any(axis=1)
    tmin = np.array([bt.min_q(v[:, j], lo, hi) for j in range(v.shape[1])]) \
        if v.shape[1] <= 400 else (v.T * 0).sum(axis=1)
    picks: dict[str, int] = {}
    if one.any():
        slack = np.where(one, e * (qm + qt), np.inf)
        picks["one-level just feasible"] = int(np.argmin(slack))
    if (~one).any():
        w = v.max(axis=0)
        picks["largest top"] = int(np.argmax(np.where(~one, w, -np.inf)))
        rho = np.where(~one, v.max(axis=0) / np.where(v > 0, v, np.inf).min(axis=0), np.inf)
        picks["rho nearest 1"] = int(np.argmin(rho))
    picks["all ones"] = int(np.argmin(np.abs(v - 1).sum(axis=0)))
    if v.shape[1] <= 400:
        picks["smallest worst case"] = int(np.argmin(tmin))
    picks["largest mu"] = int(np.argmax(muv))
    for what, j in picks.items():
        y = _targeting(v, muv, j, p) if v.shape[1] <= 3000 else None
        if y is not None:
            out += [(what, y), (what + " +7p", y + 7 * p), (what + " -40p", y - 40 * p)]
    # the duals of every round of a column-generation run over the vertex list
    rec: list[np.ndarray] = []

    class Recording(colgen.EnumerationOracle):
        def price(self, y: np.ndarray, **kw: Any) -> tuple[np.ndarray, np.ndarray, float]:
            rec.append(np.array(y, dtype=np.float64))
            return super().price(y, **kw)

    colgen.column_generation(Recording(v, muv), p, lambda c: bt.mu(c, p), start=None,
                             gap=1e-9, deadline=math.inf)
    out += [(f"run round {i}", y) for i, y in enumerate(rec[:: max(1, len(rec) // 4)])]
    out.append(("run final", rec[-1]))
    return out


def _assert_columns(cols: np.ndarray, vals: np.ndarray, p: np.ndarray, lo: np.ndarray,
                    hi: np.ndarray, eps: float, what: object) -> None:
    for k in range(cols.shape[1]):
        w = cols[:, k]
        assert bt.column_ok(w, p, lo, hi, eps), (what, k, w.tolist())
        assert vals[k] == pytest.approx(float(bt.mu(w[:, None], p)[0]), rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("name", sorted(ORACLES))
@pytest.mark.parametrize("kind,n,seed", CASES)
def test_bound_never_below_the_brute_force(name: str, kind: str, n: int, seed: int) -> None:
    p, lo, hi, eps, v, _, muv, _, _ = _truth(kind, n, seed)
    if name in SMALL_N and n > 8:
        pytest.skip("the earlier exact oracles are attacked at N <= 8 here (and in the "
                    "attack files of their own rounds)")
    bad = []
    # the earlier exact oracles search to the end; a branch and bound that may take long
    # is stopped after 20 ms at most (its bound must hold wherever it stops)
    longest = math.inf if name in SMALL_N else 0.02
    for what, y in _duals(kind, n, seed):
        truth = float(np.max(muv - y @ v))
        for budget in (longest, 0.0):
            oracle = _make(name, lo, hi, p, eps)
            cols, vals, bound = _price(oracle, y, want=4, deadline=time.monotonic() + budget)
            if not bound >= truth - 1e-9 * (1 + abs(truth)):
                bad.append((what, budget, truth, bound))
            if budget == longest:
                _assert_columns(cols, vals, p, lo, hi, eps, what)
        # a search stopped after a few steps (no clock: node limits, where the oracle
        # takes one)
        search = getattr(_make(name, lo, hi, p, eps), "search", None)
        if search is not None and "max_nodes" in inspect.signature(search).parameters:
            for steps in (1, 3, 10, 40):
                bound, _ = search(np.array(y, dtype=np.float64), thr=1e-9,
                                  deadline=math.inf, max_nodes=steps)
                if not float(bound) >= truth - 1e-9 * (1 + abs(truth)):
                    bad.append((what, f"{steps} nodes", truth, float(bound)))
    assert not bad, bad


@pytest.mark.parametrize("name", sorted(ORACLES))
@pytest.mark.parametrize("kind,n,seed", [CASES[i] for i in (0, 2, 5, 7)])
def test_one_oracle_priced_round_after_round(name: str, kind: str, n: int, seed: int
                                             ) -> None:
    """The same oracle asked for every dual in turn (and back): caches of earlier
    searches never make a bound too small."""
    p, lo, hi, eps, v, _, muv, _, _ = _truth(kind, n, seed)
    if name in SMALL_N and n > 8:
        pytest.skip("the earlier exact oracles are attacked at N <= 8 here")
    oracle = _make(name, lo, hi, p, eps)
    longest = math.inf if name in SMALL_N else 0.01
    duals = [y for _, y in _duals(kind, n, seed)]
    bad = []
    for i, y in enumerate([*duals, *duals[::-1]]):
        truth = float(np.max(muv - y @ v))
        cols, vals, bound = oracle.price(y.copy(), want=3, atol=1e-9,
                                         deadline=time.monotonic() + longest)
        if math.isfinite(bound) and not bound >= truth - 1e-9 * (1 + abs(truth)):
            bad.append((i, truth, bound))
        _assert_columns(np.asarray(cols), np.asarray(vals), p, lo, hi, eps, i)
    assert not bad, bad


@pytest.mark.parametrize("name", sorted(ORACLES))
@pytest.mark.parametrize("kind,n,seed", [("tiny-counts", 7, 2), ("p-on-edge", 8, 5),
                                         ("hi-sum-1e-9", 6, 3)])
@pytest.mark.parametrize("budget", [0.5, 0.0, 1e-3])
def test_design_gap_never_below_the_true_gap(name: str, kind: str, n: int, seed: int,
                                             budget: float) -> None:
    """A column-generation design priced by the oracle against the full LP over every
    vertex: value never above the optimum, upper bound never below it, reported gap never
    below the true gap, every column of the matrix feasible; with no time, 1 ms, or all
    half a second (time to finish for the earlier exact oracles)."""
    p, lo, hi, eps, _, _, _, opt, _ = _truth(kind, n, seed)
    oracle = _make(name, lo, hi, p, eps)
    res = colgen.column_generation(oracle, p, lambda c: mutual_information_columns(c, p),
                                   start=None, gap=1e-9,
                                   deadline=time.monotonic() + budget)
    tol = 1e-9 * (1 + opt)
    assert res.value <= opt + tol
    assert res.upper_bound >= opt - tol, (res.upper_bound, opt)
    true_gap = (opt - res.value) / opt if opt > 0 else 0.0
    assert res.gap >= true_gap - 1e-9, (res.gap, true_gap)
    w = np.asarray(res.matrix)
    assert np.allclose(w.sum(axis=1), 1.0, atol=1e-9) and w.min() >= 0
    for j in range(w.shape[1]):
        col = w[:, j]
        if col.max() > 0:
            assert bt.column_ok(col / (p @ col), p, lo, hi, eps, rel=1e-7)


# -- large alphabets: no brute force, but every column any method finds is a lower bound ----

def _local_search(p: np.ndarray, lo: np.ndarray, hi: np.ndarray, eps: float,
                  y: np.ndarray, seed: int, restarts: int = 12
                  ) -> tuple[float, np.ndarray]:
    """The best ``mu(v) - y . v`` found by a steepest-ascent search over the three-level
    assignments (one letter moved a step), from random starts and from the heaviest
    letters on top; points of ``K_1`` by the greedy worst case of ``boxtruth``."""
    n = p.size
    g = np.random.default_rng(seed)
    best, best_v = -math.inf, np.ones(n)
    starts = [g.integers(0, 3, n).astype(np.int8) for _ in range(restarts)]
    heavy = np.full(n, 1, dtype=np.int8)
    heavy[np.argsort(-p)[: max(1, n // 5)]] = 2
    starts += [heavy, np.ones(n, dtype=np.int8)]
    for cur in starts:
        cur_val = -math.inf
        for _ in range(4 * n):
            nb = np.repeat(cur[None, :], 2 * n, axis=0)
            idx = np.arange(n)
            nb[idx, idx] = (cur + 1) % 3
            nb[n + idx, idx] = (cur + 2) % 3
            v, lev = bt.vertices(p, lo, hi, eps, lev=np.vstack([cur[None, :], nb]))
            if v.shape[1] == 0:
                break
            val = bt.mu(v, p) - y @ v
            k = int(np.argmax(val))
            if val[k] <= cur_val + 1e-12:
                break
            cur, cur_val = lev[k].copy(), float(val[k])
            if cur_val > best:
                best, best_v = cur_val, v[:, k].copy()
    return best, best_v


def _large_instance(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    g = np.random.default_rng(seed)
    counts = np.floor(2000 * 0.8 ** np.arange(n)).astype(int) + g.integers(0, 3, n)
    g.shuffle(counts)
    box = confidence_set(counts, 1e-6, confidence="box-cp").set
    p = counts / counts.sum()
    p = np.maximum(p, 1e-6)
    p /= p.sum()
    eps = float(g.choice([0.1, math.log(2), 2.0]))
    return p, np.asarray(box.lower, float), np.asarray(box.upper, float), eps


@pytest.mark.parametrize("name", LARGE)
@pytest.mark.parametrize("n,seed", [(30, 1), (50, 3)])
def test_large_bound_never_below_any_column_found(name: str, n: int, seed: int) -> None:
    """N = 30 and 50: for zero duals, random and large duals, and the last duals of a
    short design by the oracle itself, its bound (stopped at once, after 50 ms or after
    0.3 s) is never below the best column a local search finds."""
    p, lo, hi, eps = _large_instance(n, seed)
    g = np.random.default_rng(seed)
    rec: list[np.ndarray] = []
    cls = ORACLES[name]

    class Recording(cls):  # type: ignore[misc, valid-type]
        def price(self, y: np.ndarray, **kw: Any) -> Any:
            rec.append(np.array(y, dtype=np.float64))
            return super().price(y, **kw)

    colgen.column_generation(Recording(Box(lo, hi), p, eps),
                             p, lambda c: mutual_information_columns(c, p), start=None,
                             gap=1e-9, deadline=time.monotonic() + 1.0)
    duals = [np.zeros(n), g.normal(0, 1, n), g.normal(0, 100, n), rec[-1]]
    bad = []
    for i, y in enumerate(duals):
        found, w = _local_search(p, lo, hi, eps, y, seed + i)
        assert bt.column_ok(w, p, lo, hi, eps)
        # (searches stopped by a deadline: at N = 50 a full search may take minutes;
        # the bound must be valid wherever it stops)
        for budget in (0.0, 0.05, 0.3):
            _, _, bound = _price(_make(name, lo, hi, p, eps), y, want=4,
                                 deadline=time.monotonic() + budget)
            if not bound >= found - 1e-9 * (1 + abs(found)):
                bad.append((i, budget, found, bound))
    assert not bad, bad


@pytest.mark.parametrize("n,seed", [(30, 5)])
def test_large_design_gap_never_below_a_true_lower_bound(n: int, seed: int) -> None:
    """The box designer at N = 30 with a short budget: its reported optimality gap
    is never below ``(LB - value) / LB`` for the best value ``LB`` of a design over the
    columns a local search finds (a valid lower bound on the optimum)."""
    from pmlkit.design import optimal_mechanism_for_set

    p, lo, hi, eps = _large_instance(n, seed)
    with warnings.catch_warnings():  # (a gap left by the budget is warned about)
        warnings.simplefilter("ignore", PMLWarning)
        mech = optimal_mechanism_for_set(Box(lo, hi), eps, prior=p, max_seconds=2.0,
                                         gap=1e-6)
    gap = mech.provenance.optimality_gap
    w = np.asarray(mech.matrix)
    value = float(np.sum(bt.mu(w / (p @ w)[None, :], p) * (p @ w)))
    for j in range(w.shape[1]):
        col = w[:, j]
        if col.max() > 0:
            assert bt.column_ok(col / (p @ col), p, lo, hi, eps, rel=1e-7)
    # the columns a local search finds for the duals of zero and of each design column
    cols = [w[:, j] / (p @ w[:, j]) for j in range(w.shape[1]) if w[:, j].max() > 0]
    g = np.random.default_rng(seed)
    for i, y in enumerate([np.zeros(n), g.normal(0, 0.3, n), -np.log(p) * 0.1]):
        cols.append(_local_search(p, lo, hi, eps, y, seed + i, restarts=4)[1])
    v = np.array(cols).T
    muv = bt.mu(v, p)
    res = colgen.column_generation(colgen.EnumerationOracle(v, muv), p,
                                   lambda c: bt.mu(c, p), start=None, gap=1e-12,
                                   deadline=math.inf)
    lb = float(res.value)
    assert gap is not None
    true_gap_at_least = (lb - value) / lb if lb > 0 else 0.0
    assert gap >= true_gap_at_least - 1e-7, (gap, lb, value)


def test_short_design_at_n18_against_the_exact_optimum() -> None:
    """N = 18, a Clopper-Pearson box, eps = 4, a one-second budget (the designer then
    picks a bound search, not the exact block-pair tree): its reported gap never below the
    true gap to the optimum the exact block-pair search certifies, its value never above
    it, every column feasible."""
    from pmlkit.design import optimal_mechanism_for_set

    if not colgen.BoxTreeOracle.available():
        pytest.skip("the exact block-pair search needs numba")
    p, lo, hi, _ = _large_instance(18, 6)
    eps = 4.0  # (the exact search takes a quarter of a second here, 8x less than at 2)
    exact = colgen.column_generation(colgen.BoxTreeOracle(Box(lo, hi), p, eps), p,
                                     lambda c: mutual_information_columns(c, p),
                                     start=None, gap=1e-9, deadline=math.inf)
    assert exact.gap <= 1e-8
    opt = exact.value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PMLWarning)
        mech = optimal_mechanism_for_set(Box(lo, hi), eps, prior=p, max_seconds=1.0,
                                         gap=1e-6)
    w = np.asarray(mech.matrix)
    value = float(np.sum(bt.mu(w / (p @ w)[None, :], p) * (p @ w)))
    assert value <= opt * (1 + 1e-7)
    gap = mech.provenance.optimality_gap
    assert gap is not None and gap >= (opt - value) / opt - 1e-7, (gap, opt, value)
    for j in range(w.shape[1]):
        col = w[:, j]
        if col.max() > 0:
            assert bt.column_ok(col / (p @ col), p, lo, hi, eps, rel=1e-7)
