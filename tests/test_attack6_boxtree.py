"""More attacks on the block-pair branch and bound that prices mutual information over a
box (``BoxTreeOracle``), beside test_attack5_boxtree.py (whose brute force, one HiGHS LP
per three-level assignment of the letters, is reused here).

New here: the tree cut down to leaves of one or two rows, so that the node-pair bounds
decide (nearly) every pair instead of the exact evaluation of a leaf pair; hand-made boxes
(a box that is a single point, ``sum(hi)`` just above 1 with ``lo = 0``, the whole simplex,
one letter pinned); the duals of every round of a column-generation run priced by the
oracle itself (the final ones included) and perturbations of them; searches stopped after
one step, a few steps or by ``stop_at`` (their bound must still be an upper bound, from
the pairs left open); partial pricing (``full=False``) of a fresh and of a used oracle;
designs at N = 7 against the full LP over every vertex, with their reported gap and upper
bound checked, also when stopped by a tiny deadline.
"""

from __future__ import annotations

import math
import time
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmlkit.design import colgen
from pmlkit.sets import Box
from pmlkit.utility import mutual_information_columns
from test_attack5_boxtree import (
    _check_columns,
    _check_design,
    _duals,
    _full_lp,
    _instance,
    _mu,
    _vertices,
)

pytestmark = pytest.mark.skipif(not colgen.BoxTreeOracle.available(),
                                reason="the block-pair search needs numba")


def _hand_box(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                     float]:
    g = np.random.default_rng(seed)
    p = g.dirichlet(np.ones(n))
    p = np.maximum(p, 2e-3)
    p /= p.sum()
    eps = float(g.choice([0.01, 0.2, 1.0, 5.0]))
    if kind == "point":  # the box is the one distribution p
        lo, hi = p.copy(), p.copy()
    elif kind == "hi-sum-near-1":  # sum(hi) = 1 + 1e-9, lo = 0
        hi = p + 1e-9 / n
        lo = np.zeros(n)
    elif kind == "simplex":  # every distribution
        lo, hi = np.zeros(n), np.ones(n)
    elif kind == "one-pinned":  # one letter known exactly, the others loose
        lo, hi = np.maximum(p - 0.2, 0.0), np.minimum(p + 0.2, 1.0)
        lo[0] = hi[0] = p[0]
    else:
        raise AssertionError(kind)
    return p, lo, hi, eps


CASES = [("confidence", 4, 11), ("near", 5, 12), ("tight-hi", 6, 13), ("wide", 6, 14),
         ("confidence", 6, 15), ("point", 5, 16), ("hi-sum-near-1", 6, 17),
         ("simplex", 5, 18), ("one-pinned", 6, 19)]


@cache
def _case(kind: str, n: int, seed: int) -> tuple[np.ndarray, ...]:
    if kind in ("confidence", "near", "tight-hi", "wide"):
        p, lo, hi, eps = _instance(seed, n, kind)
    else:
        p, lo, hi, eps = _hand_box(kind, n, seed)
    v = _vertices(p, lo, hi, eps)
    muv = _mu(v, p)
    opt, y_star = _full_lp(v, muv)
    return p, lo, hi, np.array(eps), v, muv, np.array(opt), y_star


class _Recording(colgen.BoxTreeOracle):
    """The oracle, keeping every dual vector it is asked to price."""

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
        self.seen = [*getattr(self, "seen", []), np.array(y, dtype=np.float64)]
        return super().price(y, want=want, deadline=deadline, atol=atol, full=full)


def _assert_bound(bound: float, truth: float, what: object) -> None:
    assert bound >= truth - 1e-9 * (1 + abs(truth)), (what, truth, bound)


@pytest.mark.parametrize("kind,n,seed", CASES)
def test_bounds_with_tiny_leaves_stopped_searches_and_run_duals(kind: str, n: int,
                                                                seed: int) -> None:
    p, lo, hi, eps_a, v, muv, _, y_star = _case(kind, n, seed)
    eps = float(eps_a)
    box = Box(lo, hi)
    g = np.random.default_rng(seed)
    # the duals of every round of a design priced by this oracle (the last ones final)
    rec = _Recording(box, p, eps)
    colgen.column_generation(rec, p, lambda c: mutual_information_columns(c, p),
                             start=None, gap=1e-9, deadline=time.monotonic() + 30)
    run = rec.seen
    duals = [*_duals(g, p, y_star), run[0], run[-1],
             run[-1] + g.normal(0, 1e-7, n), run[-1] - 1e-6 * p]
    for i, y in enumerate(duals):
        truth = float(np.max(muv - y @ v))
        for leaf, chunk, deadline, full, stop_at in ((1, 10**6, math.inf, True, math.inf),
                                                     (16, 10**6, math.inf, True, math.inf),
                                                     (2, 1, 0.0, True, math.inf),
                                                     (2, 5, 0.0, False, math.inf),
                                                     (1, 3, math.inf, True, 0.0)):
            oracle = colgen.BoxTreeOracle(box, p, eps, stop_at=stop_at)
            oracle.LEAF, oracle.CHUNK = leaf, chunk
            cols, vals, bound = oracle.price(y, want=4, deadline=deadline, atol=1e-9,
                                             full=full)
            if full or math.isfinite(bound):
                _assert_bound(bound, truth, (i, leaf, chunk, full, stop_at))
            if chunk == 10**6:  # (an LP per column: the columns of the full searches)
                _check_columns(cols, vals, p, lo, hi, eps)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 5),
       kind=st.sampled_from(["confidence", "near", "tight-hi", "wide", "point",
                             "hi-sum-near-1", "simplex", "one-pinned"]),
       leaf=st.sampled_from([1, 2, 3]), chunk=st.sampled_from([1, 7, 10**6]))
def test_random_instances_bound_never_below_brute_force(seed: int, n: int, kind: str,
                                                        leaf: int, chunk: int) -> None:
    """Random instances and tree shapes; duals as in the fixed cases plus a dual that
    only asks for the bound (want = 0)."""
    p, lo, hi, eps_a, v, muv, _, y_star = _case(kind, n, seed)
    eps = float(eps_a)
    for y in _duals(np.random.default_rng(seed), p, y_star):
        truth = float(np.max(muv - y @ v))
        for want, deadline in ((3, math.inf), (0, math.inf), (3, 0.0)):
            oracle = colgen.BoxTreeOracle(Box(lo, hi), p, eps)
            oracle.LEAF, oracle.CHUNK = leaf, chunk
            _, _, bound = oracle.price(y, want=want, deadline=deadline, atol=1e-9,
                                       full=True)
            _assert_bound(bound, truth, (want, deadline))


@pytest.mark.parametrize("kind,n,seed", CASES[:5])
def test_partial_pricing_of_a_used_oracle(kind: str, n: int, seed: int) -> None:
    """Rounds on one oracle (its cache of pairs from earlier searches in use): a finite
    bound is always an upper bound, whatever the order of the duals."""
    p, lo, hi, eps_a, v, muv, _, y_star = _case(kind, n, seed)
    oracle = colgen.BoxTreeOracle(Box(lo, hi), p, float(eps_a))
    oracle.LEAF = 2
    g = np.random.default_rng(seed + 1)
    duals = _duals(g, p, y_star)
    for y in [*duals, *duals[::-1], duals[3], duals[3]]:
        truth = float(np.max(muv - y @ v))
        cols, vals, bound = oracle.price(y, want=3, deadline=math.inf, atol=1e-9)
        if math.isfinite(bound):
            _assert_bound(bound, truth, y.tolist())
        _check_columns(cols, vals, p, lo, hi, float(eps_a))


@pytest.mark.parametrize("kind,n,seed", [("confidence", 7, 25), ("tight-hi", 6, 13),
                                         ("hi-sum-near-1", 6, 17), ("one-pinned", 6, 19)])
@pytest.mark.parametrize("budget", [math.inf, 0.0])
def test_design_against_the_full_lp(kind: str, n: int, seed: int, budget: float) -> None:
    """The design's value never above the optimum over every vertex, its upper bound never
    below it, its reported gap never below the true gap, every column feasible; with no
    time at all (deadline now) as well."""
    p, lo, hi, eps_a, _, _, opt_a, _ = _case(kind, n, seed)
    eps, opt = float(eps_a), float(opt_a)
    oracle = colgen.BoxTreeOracle(Box(lo, hi), p, eps)
    oracle.LEAF = 2
    res = colgen.column_generation(oracle, p, lambda c: mutual_information_columns(c, p),
                                   start=None, gap=1e-9,
                                   deadline=time.monotonic() + (30 if budget else 0.0))
    _check_design(res, opt, lo, hi, eps)
    if budget:
        assert res.gap <= 1e-6  # (the exact search finishes at this size)
