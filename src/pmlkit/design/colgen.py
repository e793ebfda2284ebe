"""Column generation for the sub-convex design, with a certified optimality gap.

The sub-convex design is the LP over the extreme rays ``v`` of
``K_1 = {w in K : p . w = 1}`` (see :mod:`pmlkit.design.subconvex`)::

    OPT = max sum_k theta_k mu(v_k)   s.t.  sum_k theta_k v_k = 1_N,  theta >= 0.

Instead of listing every ray, a *restricted master* LP over a few columns is solved (HiGHS)
and its duals ``y`` priced: a column ``v`` of ``K_1`` improves the master iff
``mu(v) - y . v > 0``. Since ``p . v = 1`` for every column, ``sum_k theta_k = 1`` at every
feasible point, and weak duality gives, for ANY ``y`` returned by a restricted master,

    OPT  <=  1 . y  +  max(0, max_{v in K_1} [mu(v) - y . v]).

Any valid upper bound on the inner maximum (the *pricing* problem) therefore certifies how
far the restricted value is from the optimum: ``gap = (bound - value) / bound``. The loop
adds the most improving columns until the gap is at most the requested one (or the time
budget is spent, in which case the gap actually reached is reported). The bound is valid
for any ``y`` whatsoever, so rounds may skip it (cheap partial pricing) as long as the
reported gap comes from a full pricing pass. The master is one HiGHS model for the whole
run: new columns are added to it and its simplex restarts from the last optimal basis.

Pricing, three oracles:

- **Enumeration** (small alphabets): the candidate rays of the set are generated once
  (``N 2^(N-1)``, ``~N 2^N`` or ``3^N`` of them), their utilities computed once; a full
  round is one matrix-vector product, and the rounds in between price only the rays that
  were best in the last full round. The master LP stays small, which is where the old
  designer spent 95% of its time.
- **Spatial branch and bound** (mutual information, any N, every set including vertex sets):
  on ``K_1`` the mutual-information term is separable,
  ``mu(w) = sum_x p_x w_x log w_x`` (``p . w = 1``), so the pricing objective is
  ``G(w) = sum_x g_x(w_x)``, ``g_x(a) = p_x a log a - y_x a``, convex in each coordinate.
  On a box ``l <= w <= u`` each ``g_x`` lies below its chord, so the LP
  ``max sum_x chord_x(w_x)`` over ``K_1`` (written exactly with
  :func:`~pmlkit.design.linear.mechanism_polytope` for one output column, plus
  ``p . w = 1``) bounds ``G`` from above, and its solution ``w*`` is a point of ``K_1`` whose
  exact ``G(w*)`` is a lower bound (and a candidate column). A node is split at ``w*_x`` on
  the coordinate with the largest chord error; the largest bound over the open nodes is a
  valid upper bound at every moment, so stopping early still certifies a (larger) gap.
- **Dynamic programming over masses** (mutual information over an l1-ball centred at the
  prior, prior on a grid ``p = k / m`` with integer ``k``, e.g. an estimate from counts; any
  N): exact, see below.
- **Streamed block assignments** (mutual information over a box, moderate N): exact, every
  three-level assignment evaluated from block sums of the two halves of the alphabet
  (:class:`BoxOracle`).
- **Block pairs** (mutual information over a box, N = 16 to 24, with numba): the same
  pairs of half-assignments, searched by branch and bound over pairs of blocks
  (:class:`BoxTreeOracle`, below): exact when the search finishes, a valid bound when it
  is stopped.
- **Level cells** (mutual information over a box, any N, with numba): a branch and bound
  over (mode of the worst case, cell of the top and middle levels, allowed levels of each
  entry) with a Lagrangian bound in each node (:class:`BoxLagrangeOracle`, below): a
  valid bound whenever it stops, and exact three-level candidates as columns.

Level-cell branch and bound for a box (:class:`BoxLagrangeOracle`). The box's worst case
is an LP: ``min_Q Q . w = lo . w + max_th [s th - sum_x c_x (th - w_x)^+]`` with
``c = hi - lo`` and ``s = 1 - sum(lo)``, the maximum attained at a level of ``w``. For a
three-level column (top level ``U`` on ``T``, middle ``m`` on ``M``, ``S = T + M``) it is
``m q(S) + (U - m) q(T)`` with ``q = max(lo, hi - slack)``, ``slack = sum(hi) - 1``, and of
the four combinations only three can be largest: *mode* 0 (``lo`` for both), 1
(``hi - slack`` for both), 2 (``hi(S) - slack``, ``lo(T)``). A column is in ``K_1`` iff, in
some mode, ``C(w) = sum_x k_x(level of x) + C0(U, m) >= 0`` (``C0 = -U/e^eps`` and the
slack terms). A node fixes a mode, a cell ``[u1, u2] x [m1, m2]`` (``1 <= U <= e^eps
max(Q0 / p)`` for a point ``Q0`` of the box, ``0 <= m <= U``) and, per entry, the allowed
levels. For any ``lam`` and ``nu >= 0``, ``G(w) <= L = G(w) + lam (1 - p . w) + nu C(w)``
at every column of the node; for a fixed assignment ``L`` is convex in ``(U, m)``, so over
the cell's columns (the part of the cell with ``m <= U``: a polygon of at most five
vertices, the rectangle's corner above the diagonal replaced by the diagonal's points) it
is largest at a vertex, and

    bound = max_vertices [lam + nu C0 + sum_x max_{allowed a in {0, m, U}}
                          (p_x a log a - (y_x + lam p_x) a + nu k_x(a))]

is valid for the node, whatever the multipliers (the kernels in
:mod:`pmlkit.design._boxlagrange` minimise it: bisection in ``lam``, golden section in
``nu``), plus a rounding margin of ``1e-14 (N + 10)`` times the sum of the terms'
magnitudes (added once, at the multipliers found); a child keeps its parent's bound when
smaller. *Reduced-cost fixing*: at the node's multipliers, forcing entry ``x`` to level ``j``
changes the bound's sum at each vertex by that level's term minus the entry's best one; where
the largest result over the vertices (with the margin) is at most the threshold, no column of
the node with ``x`` at ``j`` beats it, the level is removed and the node bounded again.
Cells are halved down to a relative width of :attr:`BoxLagrangeOracle.TAU`, along the side
where the Lagrangian at the node's vertices differs most (where the relaxation puts no entry
at the middle level the bound does not depend on ``m``: halving the wider side there only
copied the node), then the heaviest entry that the relaxation splits between two levels is
branched; an entry is branched earlier, in a wider cell, when the bound at the cell's centre
point keeps more than
:attr:`BoxLagrangeOracle.POINT_SHARE` of the node's excess over the threshold (the split
entries, not the cell's width, then make the bound loose: halving the cell only multiplied
nodes, about 9,000 open cells of the smallest width at N = 50 each waiting for the same
entries to be branched), and it is then an entry that the centre point's relaxation
splits. An entry split between the bottom and a level above it has two children (bottom;
middle or top); in a cell crossing the diagonal ``m = U``, where the middle and top levels
give nearly the same columns (separating them there only copies the node), such an entry
is branched before a heavier one split between middle and top; where the middle level
stays below half the top one, an entry split between the top and a lower level has two
children (top; bottom or middle), a middle level near 0 giving nearly the bottom's columns.
Any order of splits is valid, the children covering the node. A
node with every entry fixed is one assignment, whose columns lie on a segment (one level,
the tight three-level column, top only) along which ``G`` is convex: its exact ends close
it. The relaxation's levels are candidates, evaluated exactly (the formula of
:class:`BoxOracle`); every round also runs a local search from the best of them and from
the master's active columns (one entry, or two of the heaviest, moved at a time while
that raises the exact objective) and adds the assignments it ends at;
as in the block-pair search, the threshold never exceeds the largest exact value found (or
the tolerance), so the largest of it and the open nodes' bounds, plus the margin
``1e-10 (1 + sum |y|)``, is a valid bound whenever the search stops. Rounds stop once they
hold enough improving columns; :func:`column_generation` keeps the last quarter of the
budget for the final search (and more while one finishes early). The searches price at
smoothed duals (Wentges): half the master's duals ``y`` and half their mean ``ybar`` over
the last :data:`SMOOTHING_ROUNDS` rounds, keeping the columns that improve the master at
``y`` (a round that meets none prices at ``y``); a final search runs halfway between the
duals of the best bound the searches gave so far and the master's last duals (at ``ybar``
when none gave a bound; at ``y`` after a final search that added no column). The bound
above holds for any duals, and the master's own swing from round to round (its LP is
degenerate): at N = 50 a bound at them stayed 0.03-0.13 nats above the value.

Block-pair branch and bound for a box. Every assignment of one half of the alphabet to
(bottom, middle, top) is a row of block sums (``p(T), p(M), p(S), lo(T), lo(S), hi(T),
hi(S)``, the block sizes, and per pricing call ``Y(T), Y(S)`` and ``Z = Y - c p`` for a
constant ``c``, the least-squares fit of ``y`` by ``c p``, so that ``Z`` is small); a whole
assignment is a pair of rows and its sums are their sums. Each half is sorted into a
kd-tree (median splits of the widest feature, leaves of 16 rows), every node storing the
range of every feature over its rows, so over a pair of nodes every sum lies in
``[min + min, max + max]`` (float addition is monotone, so this holds for the rounded sums
of the exact evaluation too). An upper bound of ``G`` over a node pair, from the ranges:

1. One level (``T`` empty): ``G = -Z(S) / p(S) - c - log p(S)`` is decreasing in ``Z(S)``
   and, as a function of ``p(S)``, largest at ``p(S) = Z(S)``: clamped to the range of
   ``p(S)``, this is the exact maximum over the ranges. It is dropped when
   ``e^eps q(S) < 1`` for the largest ``q(S)`` (``q`` is increasing in ``lo`` and ``hi``).
2. Three levels: ``rho = e^eps (q(S) - q(T)) / (1 - e^eps q(T))`` is increasing in
   ``q(S)``, and in ``q(T)`` exactly when ``e^eps q(S) >= 1``, so its range follows from the
   corners of the ``q`` ranges (unbounded above when ``1 - e^eps q(T)`` can reach 0; none
   when it is never positive or ``rho < 1`` throughout). For fixed blocks the columns
   ``(rho 1_T + 1_M) / P``, ``P = (rho - 1) p(T) + p(S)``, lie on a segment: they are
   ``(t / p(T)) 1_T + ((1 - t) / p(M)) 1_M`` with ``t = rho p(T) / P`` increasing in
   ``rho``, from the one-level column (``rho = 1``) to the top-only one ``1_T / p(T)``
   (``rho -> inf``). ``G`` is convex in the column, so along the segment it is at most its
   larger value at the two ends of the ``rho`` range, for every value of the sums at once:
   the bound is the larger of the maxima over the ranges at ``rho_lo`` and at ``rho_hi``
   (the top-only end when ``rho`` is unbounded: ``-Z(T) / p(T) - c - log p(T)``, largest at
   ``p(T) = Z(T)`` clamped). At a fixed ``rho``, ``G = N / P - c - log P`` with ``N = rho
   log(rho) p(T) - rho Z(T) - Z(M)``, decreasing in the dual sums (``rho Z(T) + Z(M) =
   (rho - 1) Z(T) + Z(S)`` is at least either form at the smallest sums); for a fixed
   ``P`` the largest ``p(T)`` is best, and with it ``G`` is ``K - D / P - log P`` on two
   pieces of the ``P`` range, largest at ``P = D`` clamped: exact over the ranges of
   ``p(T)`` and ``p(S)``. (Bounding ``N`` and ``P`` separately over the ``rho`` range, the
   former bound, was looser by about 0.1-1 at leaf pairs with ``1 - e^eps q(T)`` small.)

The search walks the node pairs depth first, the child pair with the larger bound first;
a pair whose bound is at most the threshold ``t`` is dropped, a pair of leaves is evaluated
exactly (BoxOracle's formula; each row is first bounded against the other leaf's ranges).
``t`` starts at the pricing tolerance and only rises to the ``k``-th best exact value found
(``k`` at least the number of columns asked for), so every pair never evaluated has
``G <= t <= max(tolerance, best value found)``, and ``max(t, best, bounds of the pairs still
on the stack)`` is a valid bound at any moment: exact (above the tolerance) when the stack
is empty, larger when the deadline stops the search. The ranges are widened by a relative
``1e-12`` and the bound gets the streaming oracle's margin ``1e-10 (1 + sum |y|)`` for
rounding. Only near-optimal pairs need exact evaluation; with the final duals of a design
the bounds are loose by about 1e-2 at a leaf pair (the ranges of the sums over 16 rows), so
the work still grows roughly as ``3^N`` times a small fraction (N = 20, eps = 2: 8e6 of
3.5e9 pairs evaluated, under a second per search). The trees split on the box sums that
move ``G`` most near the optimum: all six from ``p(T)`` to ``hi(S)`` for small eps, mostly
``lo(T)`` from ``e^eps >= 4`` on (the blocks near the optimum then have ``q(T)`` close to
``e^-eps``, where ``rho`` is most sensitive to it). A search that only has to return
improving columns (not a bound) stops once it holds five times the columns asked for, and
every search keeps the pairs down to ``1e-3`` below the tolerance: the next rounds are
priced from those pairs first, so a full search runs only when they give nothing.

Level structure of the l1-ball (radius ``beta``, ``b = min(beta / 2, 1)``,
``E = e^eps``, ``U' = E / (1 + E b)``). The worst distribution of the ball moves a mass
``b`` from the largest entries of a column to its smallest, so ``min_Q Q . w >= 1 -
b (max w - min w)`` on ``K_1``, and the box ``F = {0 <= w <= U', p . w = 1}`` lies in
``K_1``. The extreme points of ``K_1`` have at most three levels (top block ``T``, middle
``M``, bottom, :func:`~pmlkit.design.subconvex.three_level_rays`); solving the two tight
equations (``p . w = 1``, PML tight) for the ball's greedy worst case splits them into:

1. ``P_T = p(T) >= b``, bottom 0: the top level is exactly ``U'`` and the middle one in
   ``[0, U']``, a point of ``F`` (as are the top-only points ``1_T / P_T``, feasible only
   when ``E (P_T - b) >= 1``, i.e. ``1 / P_T <= U'``). ``F`` is in ``K_1`` and G is convex,
   so these are covered by the maximum of ``G`` over the vertices of ``F``: every entry at
   0 or ``U'`` but one free entry ``f`` at ``r = (1 - U' P_S) / p_f``.
2. Two levels, ``T`` at ``U`` and the rest at ``C > 0``: ``C = (1 - U' P_T) / (U' b P_T +
   1 - P_T)``, ``U = U' (1 + b C)`` when ``P_T >= b``; ``C = 1 / (1 + (E - 1) P_T)``,
   ``U = E C`` when ``P_T < b`` (the whole top mass is moved).
3. ``P_T < b``, bottom 0 ("small top"): ``U = E B q`` with ``q = P_T + P_M - b``,
   ``B (E P_T q + P_M) = 1``, and ``U >= B`` (``E q >= 1``).

On a family the levels depend on the block masses only, and
``G = sum_levels L (P_level log L - Y_level)`` with ``Y_level = sum_{x in block} y_x`` is
decreasing in each ``Y`` (levels are >= 0). With integer masses ``k_x``, the knapsack
recursion :func:`_min_sums` gives ``min Y`` over the sets of every mass ``0..m`` in
``O(N m)``: family 2 is exact from one table, family 1 from one table per free entry
``f`` (``O(N^2 m)``). For family 3, ``U Y_T + B Y_M = B ((rho - 1) Y_T + Y_S)`` with
``S = T + M`` and ``rho = U / B = E q >= 1``; it is at least ``B ((rho - 1) min Y(k_T) + min
Y(k_S))`` and ``B (rho min Y(k_T) + min Y(k_M))``, and where those bounds do not settle the
sign, a table over (mass of ``T``, mass of ``S``) with ``T`` inside ``S`` makes it exact
(:meth:`L1BallOracle._refine_small`). The bound is the largest value over the families,
plus a margin of ``1e-12 (1 + sum |y|)`` for rounding, and the minimising sets (traced back
through the tables) are the improving columns.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PMLError
from ._common import drop_empty_columns, repair_rows

__all__ = ["BoxOracle", "ColgenResult", "L1BallOracle", "Work", "column_generation", "prior_grid"]

#: Largest number of candidate rays the enumeration oracle generates (memory ~ 8 N K bytes).
MAX_ENUMERATED = 2_000_000
#: Largest alphabet whose ``3^N`` three-level candidates are enumerated (in chunks; only
#: the feasible ones are kept: up to a fifth of them at eps = log 2, ~1.1 million at N = 13).
MAX_THREE_LEVEL_N = 13

_DEBUG = False
#: Safety cap on column-generation rounds.
_MAX_ROUNDS = 5000

_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}

#: Work units of one master LP solve per ``N x columns`` entry of the master (the unit is
#: about a second of one core of the machine the rates were measured on, see :class:`Work`).
MASTER_RATE = 1.1e-7
#: Work units of one heuristic round per ``N^3`` (``N^2 / 2`` candidate columns of N).
HEURISTIC_RATE = 6.5e-8
#: Work units per entry of a full enumeration pass (``N x`` the candidate rays priced).
ENUMERATION_RATE = 2e-9
#: Work units of one LP of the spatial branch and bound, per variable of the LP.
LP_RATE = 2e-5
#: Work units per array step of the dynamic programme over masses.
DP_RATE = 3e-9
#: Work units per assignment of a full pass of the streamed block assignments.
BOX_RATE = 1e-7
#: Work units per step (bound or exact evaluation) of the block-pair search.
TREE_RATE = 5e-8
#: Work units per node bound of the level-cell search, per entry of the alphabet (the
#: kernels loop over the entries at each vertex of the cell).
NODE_RATE = 5.4e-6
#: Work units per entry of an assignment evaluated exactly (level cells, local search).
EVAL_RATE = 7e-8


class Work:
    """The work meter of a design: a deterministic count of the work done, in *work
    units*, and an optional wall-clock cap.

    Every search of the designer counts what it does (nodes bounded, assignments evaluated,
    LP solves, dynamic-programming steps, candidate rays priced), each kind at a fixed rate
    (units per operation, measured so that a unit is about one second of one core of a
    2020s machine, as Gurobi's ``WorkLimit``), and stops on that count: two runs on the same
    inputs do the same work and return the same result, whatever the machine's load. The
    wall clock is only an outer cap (``deadline``, a ``time.monotonic()`` value): a search
    stopped by it sets :attr:`capped`, and the designer then warns that the result depends on
    the machine's speed.

    Examples
    --------
    >>> meter = Work()
    >>> meter.spend(0.5)
    >>> meter.stop(1.0), meter.stop(0.5), meter.capped
    (False, True, False)
    >>> late = Work(deadline=0.0)  # a cap already passed
    >>> late.stop(math.inf), late.capped
    (True, True)
    """

    def __init__(self, deadline: float = math.inf) -> None:
        self.used = 0.0
        self.deadline = deadline
        self.capped = False

    def spend(self, units: float) -> None:
        """Count ``units`` of work done."""
        self.used += units

    def stop(self, until: float, deadline: float = math.inf) -> bool:
        """Whether a search allowed to run until the meter reads ``until`` (and, on the
        wall clock, until ``deadline``) must stop: the work is done, or the wall-clock cap
        has passed (then :attr:`capped` is set)."""
        if self.used >= until:
            return True
        cap = min(self.deadline, deadline)
        if cap < math.inf and time.monotonic() > cap:
            self.capped = True
            return True
        return False


def _meter(oracle: Any) -> Work:
    """The oracle's work meter (a fresh one, without a cap, if it has none)."""
    meter = getattr(oracle, "meter", None)
    if not isinstance(meter, Work):
        meter = Work()
        try:
            oracle.meter = meter
        except AttributeError:  # pragma: no cover - an oracle with __slots__
            pass
    return meter


@dataclass(frozen=True)
class ColgenResult:
    """Outcome of :func:`column_generation` at one eps.

    ``matrix``: the mechanism (rows repaired, empty columns dropped); ``value``: the master
    LP optimum; ``upper_bound``: a certified upper bound on the full LP optimum (``inf`` if
    none); ``iterations``, ``columns``: the work done; ``oracle``: which pricing was used;
    ``work``: the work units counted (:class:`Work`); ``capped``: whether the wall-clock
    cap stopped the run (the result then depends on the machine's speed).

    Examples
    --------
    >>> r = ColgenResult(np.eye(2), value=0.99, upper_bound=1.0, iterations=3, columns=4,
    ...                  oracle="enumeration", seconds=0.1)
    >>> round(r.gap, 6)  # (1.0 - 0.99) / 1.0: within 1% of the optimum
    0.01
    """

    matrix: np.ndarray
    value: float
    upper_bound: float
    iterations: int
    columns: int
    oracle: str
    seconds: float
    work: float = 0.0
    capped: bool = False

    @property
    def gap(self) -> float:
        """``(upper_bound - value) / upper_bound`` (0 when within 1e-9)."""
        return relative_gap(self.upper_bound, self.value)


#: Absolute difference (nats) below which bound and value are equal to solver tolerance:
#: near eps = 0 the utility itself is ~eps^2, so a relative gap of float noise is large.
GAP_ABS_TOL = 1e-12


#: The master LP's feasibility tolerances (``_HIGHS``): after exhaustive pricing, a bound
#: within this many nats of the value is the LP solver's resolution, not a gap (at
#: eps = 1e-6 on two categories the optimum itself is about 1e-12 nats).
SOLVER_ABS_TOL = 1e-10


def relative_gap(upper: float, value: float, abs_tol: float = GAP_ABS_TOL) -> float:
    """Relative gap ``(upper - value) / |upper|``, clipped at 0, reported as 0 below 1e-9
    (solver tolerance) or when the difference is below ``abs_tol``; ``inf`` without a
    finite bound."""
    if not math.isfinite(upper):
        return math.inf
    if upper - value <= abs_tol:
        return 0.0
    g = (upper - value) / max(abs(upper), 1e-300)
    return 0.0 if g <= 1e-9 else float(g)


def _xlogx(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0)


def _highs_master(n: int) -> Any:
    """A persistent HiGHS model with ``n`` equality rows ``= 1`` and no columns, through
    the HiGHS bindings shipped inside scipy (``scipy.optimize._highspy``, the solver
    :func:`scipy.optimize.linprog` itself calls), or ``None`` where they are not importable
    (the master then calls :func:`~scipy.optimize.linprog` each round)."""
    try:
        from scipy.optimize._highspy import _core
    except ImportError:  # pragma: no cover - depends on the scipy build
        return None
    try:
        h = _core._Highs()
        ok = _core.HighsStatus.kOk
        statuses = [h.setOptionValue("output_flag", False)]
        statuses += [h.setOptionValue(k, v) for k, v in _HIGHS.items()]
        statuses.append(h.addRows(n, np.ones(n), np.ones(n), 0, np.zeros(n, dtype=np.int32),
                                  np.zeros(0, dtype=np.int32), np.zeros(0)))
        if any(st != ok for st in statuses):  # pragma: no cover - defensive
            return None
        return h
    except Exception:  # pragma: no cover - an incompatible private API
        return None


class _Master:
    """The restricted master LP ``max vals . theta s.t. R theta = 1, theta >= 0``.

    The columns live in one HiGHS model for the whole run (columns added and deleted in
    place), so each round's simplex starts from the previous optimal basis instead of
    rebuilding the LP: the new columns are the only entering candidates. Any failure of
    that path falls back to a fresh :func:`~scipy.optimize.linprog` solve of the same
    columns (``self.cols``, ``self.vals`` are the reference copy either way)."""

    def __init__(self, n: int, *, warm: bool = True) -> None:
        self.n = n
        self.cols = np.zeros((n, 0))
        self.vals = np.zeros(0)
        self._keys: set[bytes] = set()
        self._highs = _highs_master(n) if warm else None

    def add(self, cols: np.ndarray, vals: np.ndarray) -> int:
        added = 0
        new_c, new_v = [], []
        for k in range(cols.shape[1]):
            key = np.round(cols[:, k], 10).tobytes()
            if key in self._keys:
                continue
            self._keys.add(key)
            new_c.append(cols[:, k])
            new_v.append(vals[k])
            added += 1
        if added:
            block = np.stack(new_c, axis=1)
            bvals = np.asarray(new_v, dtype=np.float64)
            self.cols = np.concatenate([self.cols, block], axis=1)
            self.vals = np.concatenate([self.vals, bvals])
            self._highs_add(block, bvals)
        return added

    def _highs_add(self, block: np.ndarray, bvals: np.ndarray) -> None:
        h = self._highs
        if h is None:
            return
        k = block.shape[1]
        nz = block != 0
        starts = np.concatenate([[0], np.cumsum(nz.sum(axis=0))[:-1]]).astype(np.int32)
        rows, cols = np.nonzero(nz.T)  # column-major order: column, then row
        try:
            st = h.addCols(k, -bvals, np.zeros(k), np.full(k, np.inf), int(nz.sum()),
                           starts, cols.astype(np.int32), block.T[rows, cols])
            if st != type(st).kOk:
                self._highs = None
        except Exception:  # pragma: no cover - defensive: use linprog from now on
            self._highs = None

    def prune(self, theta: np.ndarray, y: np.ndarray, limit: int) -> np.ndarray:
        """Drop the least promising non-basic columns when there are more than ``limit``
        (the bound prices all of ``K_1``, so it does not depend on which columns the master
        holds; a dropped column can come back). Returns ``theta`` for the kept columns."""
        k = self.cols.shape[1]
        if k <= limit:
            return theta
        rc = self.vals - y @ self.cols
        rc[theta > 0] = math.inf
        keep = np.sort(np.argsort(-rc, kind="stable")[: limit // 2])
        self.cols, self.vals = self.cols[:, keep], self.vals[keep]
        self._keys = {np.round(self.cols[:, j], 10).tobytes() for j in range(keep.size)}
        if self._highs is not None:
            drop = np.setdiff1d(np.arange(k), keep).astype(np.int32)
            try:
                st = self._highs.deleteCols(int(drop.size), drop)
                if st != type(st).kOk or self._highs.getNumCol() != keep.size:
                    self._highs = None
            except Exception:  # pragma: no cover - defensive
                self._highs = None
        return theta[keep]

    def solve(self) -> tuple[float, np.ndarray, np.ndarray]:
        """Value, duals ``y`` and primal ``theta``."""
        warm = self._solve_highs()
        if warm is not None:
            return warm
        from scipy.optimize import linprog

        res = linprog(-self.vals, A_eq=self.cols, b_eq=np.ones(self.n), bounds=(0, None),
                      method="highs", options=dict(_HIGHS))
        if res.status != 0:
            res = linprog(-self.vals, A_eq=self.cols, b_eq=np.ones(self.n),
                          bounds=(0, None), method="highs")
        if res.status != 0 or res.x is None:
            raise PMLError(f"restricted master LP failed (HiGHS status {res.status}): "
                           f"{res.message}")
        y = -np.asarray(res.eqlin.marginals, dtype=np.float64)
        return float(-res.fun), y, np.asarray(res.x, dtype=np.float64)

    def _solve_highs(self) -> tuple[float, np.ndarray, np.ndarray] | None:
        """The warm-started solve, or ``None`` (and no warm model from now on) when it does
        not end optimal with a solution of the right shape."""
        h = self._highs
        if h is None:
            return None
        try:
            from scipy.optimize._highspy import _core

            h.run()
            if h.getModelStatus() != _core.HighsModelStatus.kOptimal:
                self._highs = None
                return None
            sol = h.getSolution()
            theta = np.asarray(sol.col_value, dtype=np.float64)
            y = -np.asarray(sol.row_dual, dtype=np.float64)
        except Exception:  # pragma: no cover - defensive
            self._highs = None
            return None
        if theta.shape != self.vals.shape or y.shape != (self.n,) \
                or not (np.isfinite(theta).all() and np.isfinite(y).all()):
            self._highs = None  # pragma: no cover - defensive
            return None  # pragma: no cover - defensive
        return float(self.vals @ theta), y, theta


class EnumerationOracle:
    """Exact pricing over an explicit list of candidate rays (columns of ``rays``).

    Partial pricing: a full pass (one matrix-vector product over every ray) also keeps the
    :attr:`CACHE` rays of largest reduced cost; the next rounds price those first and
    return their improving columns without a bound (``inf``). A round whose cache gives
    nothing, a repeat of the same duals, or ``full=True`` prices every ray and returns the
    exact bound, so a reported gap always comes from a full pass."""

    name = "enumeration"
    #: cheap rounds: finish whatever the deadline
    runs_to_end = True
    #: rounds answered from the cache return no bound: :func:`column_generation` asks for
    #: one at the end
    skips_bounds = True
    #: rays kept from a full pass for the partial pricing of the next rounds
    CACHE = 20_000

    def __init__(self, rays: np.ndarray, values: np.ndarray) -> None:
        self.rays = rays
        self.values = values
        self._cache: tuple[np.ndarray, np.ndarray] | None = None
        self._last_y: np.ndarray | None = None

    @staticmethod
    def _best(rc: np.ndarray, want: int, atol: float) -> np.ndarray:
        """Indices of the (at most ``want``) largest entries of ``rc`` above ``atol``."""
        idx = np.flatnonzero(rc > atol)
        if idx.size > want:
            idx = idx[np.argpartition(-rc[idx], want - 1)[:want]] if want > 0 \
                else idx[:0]
        return idx

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        repeat = self._last_y is not None and np.array_equal(y, self._last_y)
        self._last_y = y.copy()
        meter = _meter(self)
        if not full and not repeat and self._cache is not None:
            rays, vals = self._cache
            meter.spend(ENUMERATION_RATE * rays.size)
            sel = self._best(vals - y @ rays, want, atol)
            if sel.size:
                return rays[:, sel], vals[sel], math.inf
        meter.spend(ENUMERATION_RATE * self.rays.size)
        rc = self.values - y @ self.rays
        best = float(rc.max()) if rc.size else 0.0
        if rc.size > 2 * self.CACHE:
            keep = np.argpartition(-rc, self.CACHE - 1)[: self.CACHE]
            self._cache = (np.ascontiguousarray(self.rays[:, keep]), self.values[keep])
        sel = self._best(rc, want, atol)
        return self.rays[:, sel], self.values[sel], best


class _BlockColumns:
    """Columns with contiguous blocks in a sort order (start and heuristic columns
    shared by the pricing oracles without a ray list)."""

    n: int
    p: np.ndarray
    uset: Any
    eps: float
    e: float

    def improving(self, cols: list[np.ndarray], y: np.ndarray, atol: float
                  ) -> tuple[np.ndarray, np.ndarray]:
        """The columns among ``cols`` that are in ``K_1`` (the PML constraint on the set's
        worst case, to a relative ``1e-9``) and improve the master at the duals ``y`` by
        more than ``atol``, with their utilities."""
        from ..utility import mutual_information_columns

        if not cols:
            return np.zeros((self.n, 0)), np.zeros(0)
        v = np.stack(cols, axis=1)
        worst = self.uset.min_linear(v)
        v = v[:, v.max(axis=0) <= self.e * worst * (1 + 1e-9)]
        vals = (np.asarray(mutual_information_columns(v, self.p), dtype=np.float64)
                if v.shape[1] else np.zeros(0))
        ok = vals - y @ v > atol
        return v[:, ok], vals[ok]

    def contiguous(self, order: np.ndarray) -> np.ndarray:
        """Three-level points of ``K_1`` whose blocks (top, middle, bottom) are contiguous
        in ``order``: ``O(N^2)`` candidates, normalised to ``p . w = 1``."""
        from .subconvex import block_rays

        n, p = self.n, self.p
        i, j = np.triu_indices(n + 1, k=1)  # top = order[:i], mid = order[i:j]
        keep = i >= 1
        i, j = i[keep], j[keep]
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        top = rank[None, :] < i[:, None]
        mid = (rank[None, :] >= i[:, None]) & (rank[None, :] < j[:, None])
        cols = block_rays(self.uset, self.eps, top, mid, q0=p)
        return cols / (p @ cols)[None, :] if cols.shape[1] else cols

    def start(self) -> np.ndarray:
        """Initial columns: contiguous blocks in the order of decreasing and increasing
        ``p`` (no duals yet)."""
        o = np.argsort(-self.p, kind="stable")
        return np.concatenate([self.contiguous(o), self.contiguous(o[::-1])], axis=1)

    def heuristic(self, y: np.ndarray, want: int, atol: float
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Improving columns among the contiguous-block points in the order of
        ``y_x / p_x`` (an entry with a small ratio gains most from a large ``w_x``:
        ``g_x(a) = p_x a (log a - y_x / p_x)``)."""
        from ..utility import mutual_information_columns

        p = self.p
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(p > 0, y / np.where(p > 0, p, 1.0), np.inf)
        cols = self.contiguous(np.argsort(r, kind="stable"))
        if not cols.shape[1]:
            return cols, np.zeros(0)
        vals = np.asarray(mutual_information_columns(cols, p), dtype=np.float64)
        rc = vals - y @ cols
        k = min(want, rc.size)
        idx = np.argpartition(-rc, k - 1)[:k]
        idx = idx[rc[idx] > atol]
        return cols[:, idx], vals[idx]


class BranchAndBoundOracle(_BlockColumns):
    """Pricing for mutual information over ``K_1`` of any set by spatial branch and bound
    (module docstring). ``price`` returns improving columns and a valid upper bound on
    ``max_{v in K_1} mu(v) - y . v`` (``inf`` if the search was cut before bounding)."""

    name = "branch and bound"

    def __init__(self, uset: Any, p: np.ndarray, eps: float) -> None:
        from scipy.sparse import csr_matrix, vstack

        from .linear import mechanism_polytope

        n = p.size
        poly = mechanism_polytope(uset, eps, n_outputs=1)
        wsl = poly.layout["W"]
        assert wsl.start == 0 and wsl.stop == n
        aeq = poly.A_eq.tocsr()[n:]  # drop the row sums (one column: W = 1)
        prow = np.zeros((1, poly.n_vars))
        prow[0, :n] = p
        self.A_eq = vstack([csr_matrix(prow), aeq]).tocsr()
        self.b_eq = np.concatenate([[1.0], poly.b_eq[n:]])
        self.A_ub, self.b_ub = poly.A_ub, poly.b_ub
        self.bounds = np.array(poly.bounds, dtype=np.float64)
        self.bounds[:n, 1] = np.inf
        self.n, self.p, self.nv = n, p, poly.n_vars
        self.uset, self.eps = uset, eps
        self.cap = self._caps()

    def _lp(self, c: np.ndarray, bounds: np.ndarray) -> np.ndarray | None:
        from scipy.optimize import linprog

        res = linprog(c, A_ub=self.A_ub, b_ub=self.b_ub, A_eq=self.A_eq, b_eq=self.b_eq,
                      bounds=bounds, method="highs")
        if res.status == 2:
            return None
        if res.status != 0 or res.x is None:
            raise PMLError(f"pricing LP failed (HiGHS status {res.status}): {res.message}")
        return np.asarray(res.x, dtype=np.float64)

    def _caps(self) -> np.ndarray:
        """``max w_x`` over ``K_1`` for every ``x`` (one LP each), slightly enlarged."""
        cap = np.empty(self.n)
        for x in range(self.n):
            c = np.zeros(self.nv)
            c[x] = -1.0
            sol = self._lp(c, self.bounds)
            if sol is None:  # pragma: no cover - w = 1 is feasible
                raise PMLError("the pricing polytope is empty")
            cap[x] = sol[x] * (1 + 1e-9) + 1e-12
        return cap

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              max_nodes: int = 200_000, until: float = math.inf,
              full: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
        from ..utility import mutual_information_columns

        n, p = self.n, self.p
        meter = _meter(self)
        lo0, hi0 = np.zeros(n), self.cap.copy()

        def g(a: np.ndarray) -> np.ndarray:
            out: np.ndarray = p * _xlogx(a) - y * a
            return out

        def relax(lo: np.ndarray, hi: np.ndarray) -> tuple[float, np.ndarray] | None:
            width = hi - lo
            gl, gh = g(lo), g(hi)
            slope = np.where(width > 0, (gh - gl) / np.where(width > 0, width, 1.0), 0.0)
            c = np.zeros(self.nv)
            c[:n] = -slope
            b = self.bounds.copy()
            b[:n, 0], b[:n, 1] = lo, hi
            meter.spend(LP_RATE * self.nv)
            sol = self._lp(c, b)
            if sol is None:
                return None
            w = np.clip(sol[:n], lo, hi)
            ub = float(np.sum(gl + slope * (w - lo)))
            return ub, w

        found: list[tuple[float, np.ndarray]] = []
        best = -math.inf
        heap: list[tuple[float, int, np.ndarray, np.ndarray, np.ndarray]] = []
        tick = 0

        def push(lo: np.ndarray, hi: np.ndarray) -> None:
            nonlocal best, tick
            r = relax(lo, hi)
            if r is None:
                return
            ub, w = r
            val = float(np.sum(g(w)))
            if val > best:
                best = val
            if val > atol:
                found.append((val, w))
            if ub > max(best, 0.0) + atol:
                tick += 1
                heapq.heappush(heap, (-ub, tick, lo, hi, w))

        push(lo0, hi0)
        nodes = 1
        while heap:
            if nodes >= max_nodes or meter.stop(until, deadline):
                break
            if len(found) >= want and nodes >= 4 * n:
                # enough improving columns for this round; the bound is not needed yet
                break
            neg, _, lo, hi, w = heapq.heappop(heap)
            if -neg <= max(best, 0.0) + atol:
                continue
            width = hi - lo
            gl, gh = g(lo), g(hi)
            slope = np.where(width > 0, (gh - gl) / np.where(width > 0, width, 1.0), 0.0)
            err = gl + slope * (w - lo) - g(w)
            x = int(np.argmax(err))
            split = float(w[x])
            if not (lo[x] < split < hi[x]):
                split = 0.5 * (lo[x] + hi[x])
            h1 = hi.copy()
            h1[x] = split
            l2 = lo.copy()
            l2[x] = split
            push(lo, h1)
            push(l2, hi)
            nodes += 2
        open_ub = max((-h[0] for h in heap), default=-math.inf)
        # pruned nodes were within atol of max(best, 0): add it to stay valid
        bound = max(best, open_ub) + atol
        found.sort(key=lambda t: -t[0])
        cols = np.stack([w for _, w in found[:want]], axis=1) if found else np.zeros((n, 0))
        vals = (mutual_information_columns(cols, p) if cols.shape[1]
                else np.zeros(0))
        return cols, np.asarray(vals, dtype=np.float64), float(bound)


#: Largest number of array steps of one pricing round (:meth:`L1BallOracle.steps`, a few
#: nanoseconds each) for which :class:`L1BallOracle` is used.
DP_MAX_STEPS = 1e9

#: Largest denominator ``m`` for which a prior written as ``k / m`` (integer ``k``, e.g. the
#: estimate ``counts / total``) is priced exactly by dynamic programming over masses.
GRID_MAX = 400_000


def prior_grid(p: np.ndarray, max_denominator: int = GRID_MAX
               ) -> tuple[np.ndarray, int] | None:
    """``(k, m)`` with integer ``k >= 0`` and ``p == k / m`` (every entry within ``1e-12``
    relative, ``sum(k) == m``), ``m <= max_denominator``; ``None`` if there is no such grid.

    Examples
    --------
    >>> k, m = prior_grid(np.array([0.5, 0.3, 0.2]))
    >>> k.tolist(), m
    ([5, 3, 2], 10)
    >>> prior_grid(np.array([1 / math.pi, 1 - 1 / math.pi])) is None
    True
    """
    from fractions import Fraction

    p = np.asarray(p, dtype=np.float64)
    m = 1
    for v in p:
        if v <= 0:
            continue
        d = Fraction(float(v)).limit_denominator(max_denominator).denominator
        m = m * d // math.gcd(m, d)
        if m > max_denominator:
            return None
    k = np.rint(p * m)
    if k.sum() != m or np.any(np.abs(k - p * m) > 1e-9 * np.maximum(1.0, k)) \
            or np.any(np.abs(k / m - p) > 1e-12 * np.maximum(p, 1e-300)):
        return None
    return k.astype(np.int64), m


def _min_sums(kw: np.ndarray, y: np.ndarray, size: int, *, keep: bool = False
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """``best[k] = min { sum_{x in S} y_x : S a set of items with sum_{x in S} kw_x = k }``
    for ``k = 0..size`` (``inf`` where no set has that mass): the 0/1-knapsack recursion,
    one vectorised pass per item. With ``keep``, also the ``(items, size + 1)`` table of
    decisions for :func:`_backtrack`."""
    best = np.full(size + 1, math.inf)
    best[0] = 0.0
    take = np.zeros((kw.size, size + 1), dtype=bool) if keep else None
    for i in range(kw.size):
        a = int(kw[i])
        if a > size:
            continue
        cand = best[:size + 1 - a] + y[i]
        cur = best[a:]
        better = cand < cur
        if take is not None:
            take[i, a:] = better
        if a == 0:
            best = np.where(better, cand, cur)
        else:
            best[a:] = np.where(better, cand, cur)
    return best, take


def _backtrack(kw: np.ndarray, take: np.ndarray, k: int) -> np.ndarray:
    """Items (indices into ``kw``) of the minimising set of mass ``k`` (see
    :func:`_min_sums`)."""
    chosen = []
    for i in range(kw.size - 1, -1, -1):
        if take[i, k]:
            chosen.append(i)
            k -= int(kw[i])
    return np.asarray(chosen[::-1], dtype=np.int64)


def _members(kw: np.ndarray, take: np.ndarray, size: int) -> np.ndarray:
    """``(items, size + 1)`` booleans: item ``i`` is in the set :func:`_backtrack` returns
    for mass ``k``, for every ``k <= size`` at once."""
    cur = np.arange(size + 1)
    inside = np.zeros((kw.size, size + 1), dtype=bool)
    for i in range(kw.size - 1, -1, -1):
        t = take[i, cur]
        inside[i] = t
        cur = cur - np.where(t, int(kw[i]), 0)
    return inside


def _range_min_table(a: np.ndarray) -> list[np.ndarray]:
    """Sparse table of ``a``: level ``j`` holds the minima over windows of ``2^j``."""
    table = [a]
    span = 1
    while 2 * span <= a.size:
        prev = table[-1]
        table.append(np.minimum(prev[:-span], prev[span:]))
        span *= 2
    return table


def _range_min(table: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``min a[lo..hi]`` (inclusive, ``lo <= hi``) elementwise, from :func:`_range_min_table`."""
    length = (hi - lo + 1).astype(np.int64)
    level = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    out = np.full(lo.shape, math.inf)
    for j in np.unique(level):
        sel = level == j
        t = table[int(j)]
        out[sel] = np.minimum(t[lo[sel]], t[hi[sel] - (1 << int(j)) + 1])
    return out


class L1BallOracle(_BlockColumns):
    """Exact pricing for mutual information over ``K_1`` of an l1-ball centred at the
    prior, for a prior on a grid ``k / m`` (module docstring, "Level structure").

    ``price(y, want=, deadline=, atol=, full=False)`` returns improving columns (points of
    ``K_1``), their utilities and an upper bound on ``max_{v in K_1} mu(v) - y . v``.

    Examples
    --------
    With zero duals the bound is the largest ``mu`` over ``K_1``. For the fixed prior
    ``(0.5, 0.3, 0.2)`` at ``eps = log 2`` (entries at most 2, ``p . w = 1``) that is
    ``log 2``, reached by ``w = (2, 0, 0)`` (the first value revealed with certainty):

    >>> from pmlkit.sets import L1Ball
    >>> p = np.array([0.5, 0.3, 0.2])
    >>> oracle = L1BallOracle(L1Ball(p, 0.0), p, math.log(2), prior_grid(p))
    >>> cols, vals, bound = oracle.price(np.zeros(3), want=1, deadline=math.inf,
    ...                                  atol=1e-12, full=True)
    >>> round(bound, 9), round(float(vals[0]), 9)
    (0.693147181, 0.693147181)
    """

    name = "dynamic programming"
    #: some rounds return no bound (``inf``): :func:`column_generation` asks for one at
    #: the end
    skips_bounds = True

    def __init__(self, uset: Any, p: np.ndarray, eps: float, grid: tuple[np.ndarray, int]
                 ) -> None:
        from ._common import exp_capped

        self.uset, self.p, self.eps, self.n = uset, p, eps, p.size
        self.k, self.m = grid
        self.e = exp_capped(eps)
        self.b = min(float(uset.radius) / 2.0, 1.0)
        self.up = self.e / (1.0 + self.e * self.b)
        self._calls = 0

    @staticmethod
    def steps(n: int, m: int, radius: float) -> float:
        """Array steps of one full pricing round: ``N^2 m`` for the fixed-prior tables and
        ``(b m) m`` for the small-top family (``b = radius / 2``)."""
        return float(n) ** 2 * m + min(radius / 2.0, 1.0) * float(m) ** 2

    # -- the four families of candidates; each returns (values, payloads) -------------------
    def _fixed_prior(self, y: np.ndarray, best_all: np.ndarray, take: np.ndarray,
                     above: float) -> list[tuple[float, str, tuple[int, ...]]]:
        """Best point of ``{0 <= w <= U', p . w = 1}`` with free entry ``f``, per ``f``.

        ``min Y`` over the sets avoiding ``f`` is at least ``min Y`` over all sets
        (``best_all``), with equality where the minimising set avoids ``f``; the exact
        table without ``f`` is built only where the sets containing ``f`` could beat both
        the others and ``above``."""
        up, k, m, p = self.up, self.k, self.m, self.p
        out: list[tuple[float, str, tuple[int, ...]]] = []
        if up * (1.0 + 1e-12) < 1.0:  # the box cannot reach p . w = 1
            return out
        size = min(m, math.floor(m / up * (1 + 1e-12)))
        mass = np.arange(size + 1) / m
        lin = up * (mass * math.log(up) - best_all[:size + 1])  # S at U', relaxed
        free = np.flatnonzero(k > 0)
        r = np.clip((1.0 - up * mass[None, :]) / p[free, None], 0.0, up)
        ok = np.isfinite(best_all[None, :size + 1]) \
            & ((1.0 - up * mass[None, :]) >= -1e-12 * up) \
            & ((1.0 - up * mass[None, :]) <= up * p[free, None] * (1 + 1e-12))
        with np.errstate(invalid="ignore"):
            rel = np.where(ok, lin[None, :] + p[free, None] * _xlogx(r)
                           - y[free, None] * r, -math.inf)
        # where the minimising set of mass k (traced back through the table) avoids f, the
        # relaxed value is exact
        inside = _members(k, take, size)[free]
        idx = np.arange(self.n)
        for i, f_ in enumerate(free):
            f = int(f_)
            vals = rel[i]
            ex = np.where(inside[i], -math.inf, vals)
            wi = np.where(inside[i], vals, -math.inf)
            j = int(np.argmax(ex))
            top_in = float(wi.max())
            if top_in <= max(float(ex[j]), above):
                if ex[j] > -math.inf:
                    out.append((float(ex[j]), "fp", (f, j)))
                if top_in > -math.inf:
                    out.append((top_in, "fp-relaxed", (f,)))
                continue
            others = idx != f
            _meter(self).spend(DP_RATE * self.n * size)
            best, _ = _min_sums(k[others], y[others], size)
            rf = (1.0 - up * mass) / p[f]
            okf = np.isfinite(best) & (rf >= -1e-12 * up) & (rf <= up * (1 + 1e-12))
            if not okf.any():
                continue
            rf = np.clip(rf, 0.0, up)
            val = np.where(okf, up * (mass * math.log(up) - best) + p[f] * _xlogx(rf)
                           - y[f] * rf, -math.inf)
            j = int(np.argmax(val))
            out.append((float(val[j]), "fp", (f, j)))
        return out

    def _levels2(self, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Levels ``(U, C)`` of the two-level points with top mass ``mass``, and validity."""
        e, b, up = self.e, self.b, self.up
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            den = up * b * mass + 1.0 - mass
            c_a = (1.0 - up * mass) / den
            c_b = 1.0 / (1.0 + (e - 1.0) * mass)
            c = np.where(mass >= b, c_a, c_b)
            u = np.where(mass >= b, up * (1.0 + b * c), e * c)
            ok = np.isfinite(c) & np.isfinite(u) & (c >= 0) & (u >= c) \
                & ((mass < b) | (den > 0))
        return u, c, ok

    def _two_level(self, y: np.ndarray, best: np.ndarray
                   ) -> list[tuple[float, str, tuple[int, ...]]]:
        m = self.m
        kk = np.arange(m + 1)
        if not (self.k == 0).any():
            kk = kk[:-1]  # the rest must be non-empty
        mass = kk / m
        u, c, ok = self._levels2(mass)
        ok &= np.isfinite(best[kk])
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            val = mass * _xlogx(u) + (1 - mass) * _xlogx(c) - (u - c) * best[kk] \
                - c * float(y.sum())
        val = np.where(ok, val, -math.inf)
        order = np.argsort(-val)[: max(4, self.n)]
        return [(float(val[j]), "two", (int(kk[j]),)) for j in order if val[j] > -math.inf]

    def _small_top(self, best: np.ndarray, above: float = -math.inf, block: int = 256
                   ) -> list[tuple[float, str, tuple[int, ...]]]:
        """Upper bounds over the three-level points whose top block has mass below
        ``b``: ``U = e^eps B q``, ``B (e^eps P_T q + P_M) = 1`` with ``q = P_T + P_M - b``
        (and ``U >= B``: ``e^eps q >= 1``). One candidate (the best ``k_M``) per ``k_T``.

        Each row ``k_T`` is first bounded on blocks of ``block`` consecutive ``k_M``: along
        a row ``q``, ``P_M`` and ``U`` increase and ``B`` decreases, ``a log a`` is convex
        (its maximum on an interval is at an end), and the tables' minima over the block
        (a sparse table) bound the ``min Y`` terms from below. Only the blocks whose bound
        exceeds ``above`` are evaluated cell by cell."""
        e, b, m = self.e, self.b, self.m
        out: list[tuple[float, str, tuple[int, ...]]] = []
        kts = np.arange(min(math.ceil(b * m), m + 1))
        kts = kts[(kts / m < b) & np.isfinite(best[kts])]
        if not kts.size:
            return out
        # e^eps q >= 1 needs k_M >= (b - P_T + e^-eps) m; one unit of slack for rounding
        first = np.maximum(np.floor((b + 1.0 / e) * m - kts) - 1, 1).astype(np.int64)
        last = m - kts  # k_T + k_M <= m
        table = _range_min_table(best)
        nb = int(np.max((last - first) // block + 1)) if (last >= first).any() else 0
        if nb <= 0:
            return out
        kt = kts[:, None].astype(np.float64)
        k1 = first[:, None] + block * np.arange(nb)[None, :]
        k2 = np.minimum(k1 + block - 1, last[:, None])  # inclusive
        live = k1 <= k2
        k1c, k2c = np.where(live, k1, first[:, None]), np.where(live, k2, first[:, None])
        pt = kt / m

        def levels(km: np.ndarray) -> tuple[np.ndarray, ...]:
            pm = km / m
            q = pt + pm - b
            bb = 1.0 / (e * pt * q + pm)
            return pm, q, bb, e * bb * q

        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # valid cells of a block start at q = e^-eps at the earliest: bound the levels
            # from there (B is positive and decreasing, U increasing, on that range)
            kstar = (b + 1.0 / e - pt) * m
            pm1, q1, bb1, u1 = levels(np.maximum(k1c.astype(np.float64), kstar))
            pm2, q2, bb2, u2 = levels(k2c.astype(np.float64))
            ulog = np.maximum(_xlogx(u1), _xlogx(u2))
            blog = np.maximum(_xlogx(bb1), _xlogx(bb2))
            phi = pt * ulog + np.where(blog >= 0, pm2, pm1) * blog
            bt = best[kts][:, None]
            eq_lo, eq_hi = e * q1, e * q2
            min_s = _range_min(table, kts[:, None] + k1c, kts[:, None] + k2c)
            min_m = _range_min(table, k1c, k2c)
            low_a = np.minimum((eq_lo - 1.0) * bt, (eq_hi - 1.0) * bt) + min_s
            low_b = np.minimum(eq_lo * bt, eq_hi * bt) + min_m
            low = np.maximum(low_a, low_b)
            ub = phi - np.where(low >= 0, bb2, bb1) * low
            ub = np.where(live & (eq_hi >= 1.0) & ~np.isnan(ub), ub, -math.inf)
        row_ub = ub.max(axis=1)
        for r in range(kts.size):
            if row_ub[r] == -math.inf:
                continue
            hot = np.flatnonzero(ub[r] > above)
            if not hot.size:
                out.append((float(row_ub[r]), "small-bound", (int(kts[r]),)))
                continue
            ktr = int(kts[r])
            km = (k1[r, hot][:, None] + np.arange(block)[None, :]).ravel()
            km = km[km <= last[r]]
            pt_r = ktr / m
            pm = km / m
            q = pt_r + pm - b
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                bb = 1.0 / (e * pt_r * q + pm)
                u = e * bb * q
                # U Y_T + B Y_M = B (rho Y_T + Y_M), rho = U / B = e^eps q >= 1, is at
                # least B ((rho - 1) min Y(k_T) + min Y(k_T + k_M)) (T and T + M are sets
                # of those masses) and B (rho min Y(k_T) + min Y(k_M)) (T and M are)
                btr = best[ktr]
                low_c = np.maximum((e * q - 1.0) * btr + best[ktr + km], e * q * btr + best[km])
                val = pt_r * _xlogx(u) + pm * _xlogx(bb) - bb * low_c
            val = np.where((e * q >= 1.0) & np.isfinite(val), val, -math.inf)
            cold = np.delete(ub[r], hot)
            rest = float(cold.max()) if cold.size else -math.inf
            j = int(np.argmax(val))
            if val[j] >= rest and val[j] > -math.inf:
                out.append((float(val[j]), "small", (ktr, int(km[j]))))
            elif rest > -math.inf:
                out.append((max(rest, float(val[j])), "small-bound", (ktr,)))
        return out

    def _refine_small(self, y: np.ndarray, best: np.ndarray,
                      cands: list[tuple[float, str, tuple[int, ...]]], above: float,
                      budget: float = 4e7) -> list[tuple[float, str, tuple[int, ...]]]:
        """Tighter bounds for the small-top candidates above ``above``: ``T`` inside
        ``S = T + M`` exactly. With ``K`` the mass of ``S``, ``rho = e^eps (K / m - b)``
        depends on ``K`` only, and ``rho Y_T + Y_M = (rho_j - 1) Y_T + Y_S + (rho - rho_j)
        Y_T``; for ``K`` in a segment starting at ``rho_j <= rho``, the first two terms are
        minimised exactly by a dynamic programme over ``(mass of T, mass of S)`` and the
        last is at least ``(rho - rho_j) min Y(k_T)``. Skipped beyond ``budget`` cell
        updates (the looser bound stays)."""
        e, b, m, kw = self.e, self.b, self.m, self.k
        hot = [c for c in cands if c[0] > above]
        if not hot:
            return cands
        kt_max = max(c[2][0] for c in hot)
        # e^eps q >= 1 needs K >= (b + e^-eps) m: one unit of slack for rounding
        k_lo = max(0, math.floor((b + 1.0 / e) * m) - 1)
        per = float(kw.size) * (kt_max + 1) * (m + 1)
        # one segment per K is exact; fewer, wider segments when that costs too much
        segs = int(min(m + 1 - k_lo, budget // max(per, 1.0)))
        if segs < 1:
            return cands
        edges = np.unique(np.linspace(k_lo, m + 1, segs + 1).astype(np.int64))
        ref: dict[int, float] = {}
        rows = sorted({c[2][0] for c in hot})
        for a, z in itertools.pairwise(edges):
            rho_j = e * (a / m - b)
            d = np.full((kt_max + 1, m + 1), math.inf)
            d[0, 0] = 0.0
            for i in range(kw.size):
                w_, yi = int(kw[i]), float(y[i])
                if w_ > m:
                    continue
                new = d.copy()
                np.minimum(new[:, w_:], d[:, :m + 1 - w_] + yi, out=new[:, w_:])
                if w_ <= kt_max:
                    np.minimum(new[w_:, w_:], d[:kt_max + 1 - w_, :m + 1 - w_] + rho_j * yi,
                               out=new[w_:, w_:])
                d = new
            big_k = np.arange(a, min(z, m + 1))
            for kt in rows:
                km = big_k - kt
                pt, pm = kt / m, km / m
                q = pt + pm - b
                ok = (km >= 1) & (e * q >= 1.0)
                if not ok.any():
                    continue
                km, q, pm, kk = km[ok], q[ok], pm[ok], big_k[ok]
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    bb = 1.0 / (e * pt * q + pm)
                    u = e * bb * q
                    low = np.maximum.reduce([
                        d[kt, kk] + (e * q - rho_j) * best[kt],
                        (e * q - 1.0) * best[kt] + best[kk],
                        e * q * best[kt] + best[km]])
                    val = pt * u * np.log(u) + pm * bb * np.log(bb) - bb * low
                val = val[np.isfinite(val)]
                if val.size:
                    ref[kt] = max(ref.get(kt, -math.inf), float(val.max()))
        # rows are bounded at their best k_M only: re-bound the whole row with the refined
        # value where the refinement reached it, else keep the looser bound
        out = []
        for val, kind, data in cands:
            if data[0] in ref and val > above:
                out.append((min(val, ref[data[0]]), kind, data))
            elif val > above:
                out.append((-math.inf if data[0] in rows else val, kind, data))
            else:
                out.append((val, kind, data))
        return out

    # -- columns ---------------------------------------------------------------------------
    def _column(self, kind: str, data: tuple[int, ...], y: np.ndarray,
                take: np.ndarray) -> np.ndarray | None:
        n, k, m = self.n, self.k, self.m
        w = np.zeros(n)
        if kind == "fp":
            f, j = data
            others = np.flatnonzero(np.arange(n) != f)
            size = j
            _, tk = _min_sums(k[others], y[others], size, keep=True)
            assert tk is not None
            s = others[_backtrack(k[others], tk, j)]
            w[s] = self.up
            w[f] = max(0.0, (1.0 - self.up * (j / m)) / self.p[f])
        elif kind == "two":
            (kt,) = data
            t = _backtrack(k, take, kt)
            u, c, _ = self._levels2(np.array([kt / m]))
            w[:] = c[0]
            w[t] = u[0]
        else:
            kt, km = data
            t = _backtrack(k, take, kt)
            tm = _backtrack(k, take, kt + km)
            if not np.isin(t, tm).all():
                return None  # the two minimisers are not nested: no column from here
            pt, pm = kt / m, km / m
            q = pt + pm - self.b
            bb = 1.0 / (self.e * pt * q + pm)
            w[tm] = bb
            w[t] = self.e * bb * q
        s = float(self.p @ w)
        return w / s if s > 0 else None

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns and an upper bound on ``max_{v in K_1} mu(v) - y . v``
        (``inf`` in rounds that skip the costly family, unless ``full``). A round runs to
        its end (``deadline`` and ``until`` are not consulted); its work is counted."""

        n = self.n
        meter = _meter(self)
        meter.spend(DP_RATE * n * self.m)
        best, take = _min_sums(self.k, y, self.m, keep=True)
        assert take is not None
        cands: list[tuple[float, str, tuple[int, ...]]] = [(-float(y.sum()), "one", ())]
        cands += self._two_level(y, best)
        cands += self._fixed_prior(y, best, take, max(max(c[0] for c in cands), 0.0) + atol)
        self._calls += 1
        cheap = max(c[0] for c in cands)
        # the small-top family is the costly one and only matters for the bound: skip it
        # (no bound this round) while the other families still improve a lot
        if not full and cheap > 1e-4 * max(abs(float(y.sum())), 1e-12) and self._calls % 5:
            top = math.inf
        else:
            meter.spend(DP_RATE * self.steps(n, self.m, float(self.uset.radius)))
            small = self._small_top(best, max(cheap, 0.0) + atol)
            small = self._refine_small(y, best, small, max(cheap, 0.0) + atol)
            cands += small
            top = max(c[0] for c in cands)
        # sums of up to N duals and masses k / m instead of float sums: a margin far below
        # any requested gap keeps the bound on the safe side of rounding
        bound = top + 1e-12 * (1.0 + float(np.abs(y).sum()))
        cands.sort(key=lambda c: -c[0])
        cols = []
        for val, kind, data in cands[: max(want, 1)]:
            if val <= atol:
                break
            if kind in ("fp-relaxed", "small-bound"):
                continue  # a bound only, no column
            w = np.ones(n) if kind == "one" else self._column(kind, data, y, take)
            if w is not None:
                cols.append(w)
        return (*self.improving(cols, y, atol), bound)


#: Weight of the dual center in the smoothed duals of a search round (oracles with
#: ``stabilize``): 0.5 halved the certified gap at N = 50 (eps = log 2 and 2, 60 s).
SMOOTHING = 0.5
#: Rounds whose master duals make up the dual center.
SMOOTHING_ROUNDS = 50


def _dual_center(recent: Iterable[np.ndarray]) -> np.ndarray:
    """The mean of the master duals of the last rounds: the stability center of the
    smoothed pricing (any duals give a valid bound; the mean oscillates less)."""
    out: np.ndarray = np.mean(np.stack(list(recent)), axis=0)
    return out


def column_generation(oracle: Any, p: np.ndarray, mu_values: Callable[[np.ndarray], np.ndarray],
                      *, start: np.ndarray | None, gap: float, deadline: float = math.inf,
                      work: float = math.inf) -> ColgenResult:
    """Solve the extreme-ray LP by column generation with ``oracle`` pricing.

    ``start``: initial columns (points of ``K_1``); ``w = 1`` is always added, so the master
    is feasible from the first round. Stops when the certified gap is ``<= gap`` or when
    the budget is spent, returning the gap reached. The budget is ``work``, in work units
    (:class:`Work`: counted, so the run is deterministic), with ``deadline``
    (``time.monotonic()``) as an outer wall-clock cap (``ColgenResult.capped`` says whether
    it stopped the run). With ``work = inf`` and a finite ``deadline`` the budget is the
    time to the deadline (the former behaviour, which depends on the machine's speed).

    Examples
    --------
    At ``eps = log 2`` a fair coin can be published unchanged (its PML is ``log 2``), so the
    optimal mutual information is ``log 2`` and the mechanism the identity:

    >>> from pmlkit.sets import L1Ball
    >>> from pmlkit.utility import mutual_information_columns
    >>> p = np.array([0.5, 0.5])
    >>> oracle = L1BallOracle(L1Ball(p, 0.0), p, math.log(2), prior_grid(p))
    >>> res = column_generation(oracle, p, lambda v: mutual_information_columns(v, p),
    ...                         start=None, gap=1e-9, work=10.0)
    >>> round(res.value, 9), res.gap, res.capped
    (0.693147181, 0.0, False)
    >>> np.round(res.matrix, 9)
    array([[1., 0.],
           [0., 1.]])
    """
    t0 = time.monotonic()
    n = p.size
    meter = _meter(oracle)
    w0 = meter.used
    # the budget's clock: the work counted (deterministic), or, given only a deadline, the
    # wall clock (the former behaviour); the phases below are shares of ``total`` on it
    by_work = math.isfinite(work) or not math.isfinite(deadline)
    total = work if by_work else deadline - t0

    # with a wall-clock cap, the rounds stop early enough on the clock too to leave the
    # final bound search its share of the time (should the cap bind)
    round_cap = deadline

    def over(end: float, final: bool = False) -> bool:
        """Whether the budget's clock has passed ``end`` (or the wall-clock cap has)."""
        if by_work:
            return meter.stop(w0 + end, deadline if final else round_cap)
        if time.monotonic() - t0 > end:
            meter.capped = True
            return True
        return False

    def limits(end: float, final: bool = False) -> dict[str, float]:
        """The stopping arguments of a pricing call that may run until ``end``."""
        if not by_work:
            return {"deadline": t0 + end}
        cap = deadline if final else round_cap
        if math.isfinite(end):
            return {"deadline": cap, "until": w0 + end}
        return {"deadline": cap}

    master = _Master(n)
    init = [np.ones((n, 1))]
    if start is not None and start.size:
        init.append(start)
    if hasattr(oracle, "start"):
        init.append(oracle.start())
    cols = np.concatenate(init, axis=1)
    master.add(cols, mu_values(cols))
    want = max(2 * n, 10)
    # the master LP is re-solved from scratch each round: keep it to a few times N columns
    limit_cols = max(30 * n, 300)
    upper = math.inf
    it = 0

    def solve() -> tuple[float, np.ndarray, np.ndarray]:
        meter.spend(MASTER_RATE * n * master.cols.shape[1])
        return master.solve()

    value, y, theta = solve()
    # exact enumeration pricing is cheap once the rays exist (one matrix-vector product a
    # round): it finishes the job whatever the work budget (only the wall-clock cap stops
    # it); the bound search stops at it
    rounds_end = total
    limit = math.inf if getattr(oracle, "runs_to_end", False) else total
    # an oracle whose rounds stop before their bound is tight keeps a share of the budget
    # for one final bound search
    share = float(getattr(oracle, "bound_share", 0.0))
    final_end = math.inf
    if share > 0 and math.isfinite(total):
        final_end = total
        rounds_end = limit = (1.0 - share) * total
    if share > 0 and by_work and math.isfinite(deadline):
        round_cap = t0 + (1.0 - share) * (deadline - t0)
    # dual smoothing (Wentges) for oracles that stop their searches early: a search round
    # prices at ``alpha * ybar + (1 - alpha) * y`` (``ybar`` the mean of the last duals);
    # its bound is valid whatever the duals, its columns are kept where they improve the
    # master at ``y``; when none does, the round prices at ``y`` itself
    smooth = bool(getattr(oracle, "stabilize", False))
    # keep the last part of the budget for the bound (branch and bound pricing); with
    # smoothing the heuristic columns are tried in every round (the searches come in
    # whenever they find nothing: N = 50, eps = log 2, 60 s: gap 5.9% -> 3.6%)
    heur_until = (0.6 * rounds_end if math.isfinite(rounds_end) and not smooth
                  else math.inf)
    recent: deque[np.ndarray] = deque([y], maxlen=SMOOTHING_ROUNDS)

    best_duals: np.ndarray | None = None

    def priced(duals: np.ndarray, full: bool = False
               ) -> tuple[np.ndarray, np.ndarray, float]:
        # a pricing round at ``duals`` (``full``: a final bound search); its bound (valid
        # whatever the duals) kept, with the duals that gave the best one
        nonlocal upper, best_duals
        if full:
            cols, cvals, bound = oracle.price(duals, want=want if smooth else 0,
                                              atol=atol, full=True,
                                              **limits(final_end, final=True))
        else:
            cols, cvals, bound = oracle.price(duals, want=want, atol=atol,
                                              **limits(rounds_end))
        if math.isfinite(bound):
            b = float(np.sum(duals)) + max(0.0, bound)
            if b < upper:
                upper, best_duals = b, duals
        return cols, cvals, bound
    # an oracle with a local search starts it from the master's active columns too (the
    # neighbours of the columns in use are where the master improves: N = 50, 60 s,
    # eps = log 2, with the centre-point branching of the level cells, certified
    # 2.1% -> 1.6%)
    anchor = getattr(oracle, "anchor", None)
    while True:
        it += 1
        if anchor is not None:
            anchor(master.cols[:, theta > 1e-12])
        # pricing only has to prove the requested gap: a quarter of it as absolute slack
        atol = max(0.25 * gap * abs(value), 1e-12)
        # the bound only matters once it can prove the requested gap: ask for columns
        # first, then a full bound when no improving column is found quickly
        best = math.inf
        new = np.zeros((n, 0))
        if hasattr(oracle, "heuristic") and not over(heur_until):
            meter.spend(HEURISTIC_RATE * n ** 3)
            new, vals = oracle.heuristic(y, want, atol)
            if _DEBUG:
                print("round", it, "value", value, "heuristic columns", new.shape[1])
        if not new.shape[1] or master.add(new, vals) == 0:
            if smooth:
                new, vals, best = priced(SMOOTHING * _dual_center(recent)
                                         + (1.0 - SMOOTHING) * y)
                ok = vals - y @ new > atol
                new, vals = new[:, ok], vals[ok]
            if not smooth or (not new.shape[1] and not over(limit)):
                # (with smoothing, a mispricing: nothing improves the master at its y)
                new, vals, best = priced(y)
        else:
            value, y, theta = solve()
            theta = master.prune(theta, y, limit_cols)
            recent.append(y)
            if over(rounds_end):
                break
            continue
        if relative_gap(upper, value) <= gap:
            break
        if new.shape[1] == 0 or master.add(new, vals) == 0:
            if math.isfinite(best) or over(limit):
                break
            continue
        value, y, theta = solve()
        theta = master.prune(theta, y, limit_cols)
        recent.append(y)
        if over(limit) or it >= _MAX_ROUNDS:
            # report the best bound seen (valid for the optimum, whatever the duals)
            break
    if relative_gap(upper, value) > gap and getattr(oracle, "skips_bounds", False):
        # an oracle that skips its costly bound in some rounds bounds the last duals once;
        # with smoothing, halfway between the duals of the best bound of the rounds (their
        # early-stopped searches' bounds are valid) and the master's last duals, or at the
        # mean of the last rounds' duals when no round bounded (the master's own duals
        # swing from round to round: the mean's bound was 1-4 points of gap lower at
        # N = 50); any duals give a valid bound. N = 50, 60 s, one side-by-side run each:
        # the midpoint certified 1.28% / 0.98% / 0.42% at eps = log 2 / 0.1 / 2, the
        # best-bound duals 1.33% / 1.07% / 0.46%, the master's 1.54% / 0.98% / 0.45%
        # (a search stopped by the wall-clock cap still returns a valid bound)
        at_master = not smooth
        while True:
            if at_master:
                yb = y
            elif best_duals is not None:
                yb = 0.5 * (best_duals + y)
            else:
                yb = _dual_center(recent)
            new, vals, _ = priced(yb, full=True)
            if new.shape[1] and master.add(new, vals):
                # the columns that search met are points of K_1 too: the master only gains
                value, y, theta = solve()
                at_master = not smooth
            elif at_master:
                break
            else:
                # nothing new at the smoothed duals: the next search prices the master's
                at_master = True
            # a search that finished before the end of the budget (its bound exact at those
            # duals) leaves room for another at the new duals (Zipf prior, N = 50,
            # eps = log 2: the first final search closed at 53 s with a gap of 0.86%, all of
            # it from the duals)
            if (relative_gap(upper, value) <= gap or not smooth
                    or over(final_end - (0.5 if math.isfinite(final_end) else 0.0),
                            final=True)):
                break
    keep = theta > 1e-14
    w = master.cols[:, keep] * theta[keep]
    w = drop_empty_columns(repair_rows(w))
    return ColgenResult(w, value, upper, it, master.cols.shape[1], oracle.name,
                        time.monotonic() - t0, work=meter.used - w0, capped=meter.capped)


#: Largest alphabet priced exactly by :class:`BoxOracle` (``3^N`` assignments in a full
#: pricing pass: 43 million at N = 16, about 7 s on a loaded machine; the design at N = 16
#: is certified optimal in 26-45 s, so the designer uses it there only with a budget of at
#: least 45 s, and only without numba: :class:`BoxTreeOracle` takes N = 16 in 1-3 s).
BOX_MAX_N = 16

#: Largest alphabet priced by :class:`BoxTreeOracle` (two halves of ``3^12`` assignments,
#: about 60 MB of sums each).
BOX_TREE_MAX_N = 24


def _half_codes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Top and middle masks ``(3^n, n)`` of every assignment of ``n`` entries to (bottom,
    middle, top): digit 0, 1, 2 of the base-3 code."""
    codes = np.arange(3**n, dtype=np.int64)
    digits = (codes[:, None] // (3 ** np.arange(n))[None, :]) % 3
    return digits == 2, digits == 1


def _box_terms(pair: Callable[[str], np.ndarray], e: float, slack: float, n: int
               ) -> tuple[np.ndarray, ...]:
    """The level structure of block assignments over a box (see :class:`BoxOracle`):
    ``(one, three, c0, c1, c2)``, where ``pair(key)`` gives the block sums (``pT``, ``pS``,
    ``lT``, ``lS``, ``hT``, ``hS``, ``nT``, ``nS``) of the assignments, ``one``/``three``
    mark the one-level and three-level points of ``K_1`` and ``G = c0 - c1 Y(T) - c2 Y(S)``
    (not masked: ``c0`` may be meaningless where neither holds)."""
    pt, ps = pair("pT"), pair("pS")
    nt, ns = pair("nT"), pair("nS")
    qt = np.where(nt > 0, np.maximum(pair("lT"), pair("hT") - slack), 0.0)
    qs = np.where(ns == n, 1.0, np.maximum(pair("lS"), pair("hS") - slack))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        one = (nt == 0) & (ns > 0) & (e * qs >= 1.0 - 1e-12)
        den = 1.0 - e * qt
        rho = e * (qs - qt) / den
        three = (nt > 0) & (ns > nt) & (den > 0) & (rho >= 1.0 - 1e-12)
        rho = np.where(three, np.maximum(rho, 1.0), 1.0)
        big_p = (rho - 1.0) * pt + ps
        c2 = 1.0 / big_p
        c1 = (rho - 1.0) * c2
        c0 = _xlogx(rho) * pt * c2 - np.log(big_p)
    return one, three, c0, c1, c2


def _box_column(top: np.ndarray, mid: np.ndarray, p: np.ndarray, lo: np.ndarray,
                hi: np.ndarray, slack: float, e: float) -> np.ndarray:
    """The three-level column of a box (bounds ``lo``, ``hi``, ``slack = sum(hi) - 1``)
    with top block ``top`` and middle block ``mid`` (boolean masks), normalised to
    ``p . w = 1``: the top level ``rho`` is the largest the box's worst case allows
    (``e (q(S) - q(T)) / (1 - e q(T))``, ``q = max(lo, hi - slack)`` the least mass a
    distribution of the box puts on a block, ``S = top + mid``), at least 1."""
    s = top | mid
    qs = 1.0 if s.all() else max(float(lo[s].sum()), float(hi[s].sum()) - slack)
    if top.any():
        qt = max(float(lo[top].sum()), float(hi[top].sum()) - slack)
        rho = max(e * (qs - qt) / (1.0 - e * qt), 1.0)
    else:
        rho = 1.0
    w = np.where(top, rho, np.where(mid, 1.0, 0.0))
    out: np.ndarray = w / float(p @ w)
    return out


class BoxOracle(_BlockColumns):
    """Exact pricing for mutual information over ``K_1`` of a :class:`~pmlkit.sets.Box`
    ``{lo <= Q <= hi, sum Q = 1}`` (prior ``p > 0``, ``N <=`` :data:`BOX_MAX_N`).

    For a set ``X``, the smallest mass a distribution of the box can give it is
    ``q(X) = max(lo(X), 1 - hi(X^c))``; the worst distribution of a column fills its
    smallest entries first, so it gives every level set ``{w >= a}`` its smallest mass at
    once and ``min_Q Q . w = sum_a (a - a') q({w >= a})`` over the levels ``a`` of ``w``
    (``a'`` the next lower level). A vertex of ``K_1`` has at most three levels (top block
    ``T``, middle ``M``, bottom 0; ``S = T + M``); written as ``w = s (rho 1_T + 1_M)``:

    - ``T`` empty (one level): ``w = 1_S / p(S)``, a point of ``K_1`` iff
      ``e^eps q(S) >= 1``;
    - ``T`` non-empty: the PML constraint is tight, ``rho (1 - e^eps q(T)) = e^eps
      (q(S) - q(T))``, so ``rho = e^eps (q(S) - q(T)) / (1 - e^eps q(T))`` (needs
      ``e^eps q(T) < 1`` and ``rho >= 1``), and ``s = 1 / P`` with
      ``P = (rho - 1) p(T) + p(S)``.

    With ``Y(X) = sum_{x in X} y_x``, the pricing objective at such a point is
    ``G = (rho log(rho) p(T) - (rho - 1) Y(T) - Y(S)) / P - log P``. Every quantity is a
    sum over the entries of a block, so the ``3^N`` assignments are evaluated as pairs of
    assignments of the two halves of the alphabet (meet in the middle, ``3^(N/2)`` sums per
    half), streamed in chunks: exact, with no ray list in memory. The bound is the largest
    value plus a rounding margin of ``1e-10 (1 + sum |y|)``; the best candidates, checked
    against the exact worst case, are the improving columns.

    Examples
    --------
    With zero duals the bound is the largest ``mu`` over ``K_1``. For a fair coin known to
    within ``0.4 <= Q <= 0.6`` at ``eps = log 2``, the best column is ``w = (U, C)`` with
    ``U = 2 (0.4 U + 0.6 C)`` and ``(U + C) / 2 = 1``: ``U = 12 / 7``, ``C = 2 / 7``:

    >>> from pmlkit.sets import Box
    >>> p = np.array([0.5, 0.5])
    >>> oracle = BoxOracle(Box([0.4, 0.4], [0.6, 0.6]), p, math.log(2))
    >>> cols, vals, bound = oracle.price(np.zeros(2), want=1, deadline=math.inf,
    ...                                  atol=1e-12)
    >>> u, c = 12 / 7, 2 / 7
    >>> round(bound, 9) == round(0.5 * (u * math.log(u) + c * math.log(c)), 9)
    True
    >>> np.round(np.sort(cols[:, 0]), 9).tolist() == [round(c, 9), round(u, 9)]
    True
    """

    name = "exact enumeration (box)"
    #: rounds answered from the cache return no bound: :func:`column_generation` asks for
    #: one at the end
    skips_bounds = True
    #: assignments kept from a full pass for the partial pricing of the next rounds
    CACHE = 200_000

    def __init__(self, uset: Any, p: np.ndarray, eps: float, *, chunk: int = 1 << 19
                 ) -> None:
        from ._common import exp_capped

        p = np.asarray(p, dtype=np.float64)
        self.uset, self.p, self.eps, self.n = uset, p, eps, p.size
        self.e = exp_capped(eps)
        self.lo = np.asarray(uset.lower, dtype=np.float64)
        self.hi = np.asarray(uset.upper, dtype=np.float64)
        self.slack = float(self.hi.sum()) - 1.0  # q(X) = max(lo(X), hi(X) - slack)
        na = self.n // 2
        self.halves = [np.arange(na), np.arange(na, self.n)]
        self.masks = [_half_codes(h.size) for h in self.halves]
        self.sums = []
        for h, (top, mid) in zip(self.halves, self.masks, strict=True):
            s = top | mid
            ft, fs = top.astype(np.float64), s.astype(np.float64)
            self.sums.append({
                "pT": ft @ p[h], "pS": fs @ p[h], "lT": ft @ self.lo[h], "lS": fs @ self.lo[h],
                "hT": ft @ self.hi[h], "hS": fs @ self.hi[h],
                "nT": top.sum(axis=1), "nS": s.sum(axis=1)})
        self.rows = max(1, chunk // max(1, self.masks[1][0].shape[0]))
        self._cache: tuple[np.ndarray, ...] | None = None
        self._last_y: np.ndarray | None = None

    def _coefficients(self, ia: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(c0, c1, c2)`` with ``G = c0 - c1 Y(T) - c2 Y(S)`` for every pair (rows ``ia``
        of the first half, all of the second); ``c0 = -inf`` for assignments that are not
        points of ``K_1``."""
        a, b = self.sums
        e, sl = self.e, self.slack

        def pair(key: str) -> np.ndarray:
            out: np.ndarray = a[key][ia][:, None] + b[key][None, :]
            return out

        one, three, c0, c1, c2 = _box_terms(pair, e, sl, self.n)
        ok = (one | three) & np.isfinite(c0) & np.isfinite(c1) & np.isfinite(c2)
        return np.where(ok, c0, -math.inf), np.where(ok, c1, 0.0), np.where(ok, c2, 0.0)

    def _column(self, ia: int, ib: int) -> np.ndarray:
        n = self.n
        top, mid = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        for h, (tm, mm), i in zip(self.halves, self.masks, (ia, ib), strict=True):
            top[h], mid[h] = tm[i], mm[i]
        return _box_column(top, mid, self.p, self.lo, self.hi, self.slack, self.e)

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns and the exact bound on ``max_{v in K_1} mu(v) - y . v``.

        Partial pricing: the best assignments of the last full pass are re-priced first
        (cheap); while they still give improving columns the round returns them without a
        bound (``inf``, unless ``full``); otherwise every assignment is evaluated (a full
        pass runs to its end; its work is counted)."""
        repeat = self._last_y is not None and np.array_equal(y, self._last_y)
        self._last_y = y.copy()
        self._until = until
        # the same duals twice: the cached columns did not help, price everything
        if not full and not repeat and self._cache is not None:
            idx, c0, c1, c2 = self._cache
            _meter(self).spend(BOX_RATE * idx.size)
            yt = [tm.astype(np.float64) @ y[h]
                  for h, (tm, _) in zip(self.halves, self.masks, strict=True)]
            ys = [(tm | mm).astype(np.float64) @ y[h]
                  for h, (tm, mm) in zip(self.halves, self.masks, strict=True)]
            nb = self.masks[1][0].shape[0]
            ia, ib = idx // nb, idx % nb
            val = c0 - c1 * (yt[0][ia] + yt[1][ib]) - c2 * (ys[0][ia] + ys[1][ib])
            cols, vals = self._columns(idx, val, y, want, atol)
            if cols.shape[1]:
                return cols, vals, math.inf
        return self._full(y, want=want, atol=atol)

    def _columns(self, flat: np.ndarray, val: np.ndarray, y: np.ndarray, want: int,
                 atol: float) -> tuple[np.ndarray, np.ndarray]:
        """The feasible improving columns among the ``want`` best assignments."""
        keep = max(want, 1)
        order = np.argsort(-val, kind="stable")[:keep]
        order = order[val[order] > atol]
        nb = self.masks[1][0].shape[0]
        cols = [self._column(int(f // nb), int(f % nb)) for f in flat[order]]
        return self.improving(cols, y, atol)

    def _full(self, y: np.ndarray, *, want: int, atol: float
              ) -> tuple[np.ndarray, np.ndarray, float]:
        yt = [tm.astype(np.float64) @ y[h] for h, (tm, _) in zip(self.halves, self.masks,
                                                                  strict=True)]
        ys = [(tm | mm).astype(np.float64) @ y[h]
              for h, (tm, mm) in zip(self.halves, self.masks, strict=True)]
        na, nb = self.masks[0][0].shape[0], self.masks[1][0].shape[0]
        _meter(self).spend(BOX_RATE * na * nb)
        per = max(1, self.CACHE // max(1, -(-na // self.rows)))
        best = -math.inf
        pool: list[tuple[np.ndarray, ...]] = []
        for r0 in range(0, na, self.rows):
            ia = np.arange(r0, min(r0 + self.rows, na))
            c0, c1, c2 = (c.ravel() for c in self._coefficients(ia))
            val = c0 - c1 * (yt[0][ia][:, None] + yt[1][None, :]).ravel() \
                - c2 * (ys[0][ia][:, None] + ys[1][None, :]).ravel()
            best = max(best, float(val.max()))
            k = min(per, val.size)
            idx = np.argpartition(-val, k - 1)[:k]
            idx = idx[np.isfinite(val[idx])]
            pool.append((idx + r0 * nb, val[idx], c0[idx], c1[idx], c2[idx]))
        bound = best + 1e-10 * (1.0 + float(np.abs(y).sum()))
        flat, vals_all, c0s, c1s, c2s = (np.concatenate(z) for z in zip(*pool, strict=True))
        self._cache = (flat, c0s, c1s, c2s)
        cols, vals = self._columns(flat, vals_all, y, want, atol)
        return cols, vals, bound


class BoxTreeOracle(BoxOracle):
    """Exact pricing for mutual information over a :class:`~pmlkit.sets.Box` from
    :data:`BOX_MAX_N` to :data:`BOX_TREE_MAX_N`: :class:`BoxOracle`'s pairs of
    half-assignments, searched by branch and bound over pairs of blocks instead of
    streamed (module docstring). Needs numba (:meth:`available`).

    ``price`` returns the improving columns and a valid bound on
    ``max_{v in K_1} mu(v) - y . v``: exact (plus the rounding margin) when the search
    finishes, the largest bound of the block pairs still open when it is stopped by the
    deadline.
    """

    name = "block-pair branch and bound (box)"
    #: rows of a leaf block of each half
    LEAF = 16
    #: search steps (bounds and exact evaluations) between two deadline checks
    CHUNK = 1_000_000
    CENTRE = True
    #: pairs kept from a search for the partial pricing of the next rounds
    CACHE = 2000
    #: how far below the pricing tolerance the search keeps pairs as candidates (nats)
    NEAR = 1e-3
    #: an early stop waits for this many times the improving columns asked for
    COLLECT = 5
    #: features split on, and their weights (p(T), p(M), lo(T), lo(S), hi(T), hi(S))
    SPLIT: tuple[tuple[int, float], ...] = ((0, 1.0), (1, 1.0), (3, 1.0), (4, 1.0), (5, 1.0),
                                            (6, 1.0))
    #: the split from ``e^eps >= 4`` on: the blocks near the optimum have ``q(T)`` close to
    #: ``e^-eps``, small sets whose ``q(T) = lo(T)``, where ``rho`` is most sensitive to it
    #: (final search, geometric benchmark, eps = 2: 5x fewer row bounds at N = 22, 4x
    #: fewer exact pairs at N = 20; at eps = log 2 and 0.1 the first split is the better)
    SPLIT_LARGE_EPS: tuple[tuple[int, float], ...] = ((0, 1.0), (1, 0.5), (3, 2.0))

    def __init__(self, uset: Any, p: np.ndarray, eps: float, *, stop_at: float = math.inf,
                 stop_work: float = math.inf) -> None:
        from . import _boxtree as bt

        kernels = bt.compiled()
        if kernels is None:
            from .._optional import require

            require("numba", "the block-pair search of BoxTreeOracle")
            raise PMLError("BoxTreeOracle needs numba, which PMLKIT_NO_NUMBA disables")
        self.kernels = kernels
        super().__init__(uset, p, eps)
        self.pmin = float(np.min(self.p))
        self.fixed = []
        for h, (top, mid), s in zip(self.halves, self.masks, self.sums, strict=True):
            f = np.zeros((top.shape[0], bt.K))
            f[:, bt.PT], f[:, bt.PS] = s["pT"], s["pS"]
            f[:, bt.PM] = mid.astype(np.float64) @ self.p[h]
            f[:, bt.LT], f[:, bt.LS] = s["lT"], s["lS"]
            f[:, bt.HT], f[:, bt.HS] = s["hT"], s["hS"]
            f[:, bt.NT], f[:, bt.NM] = s["nT"], s["nS"] - s["nT"]
            self.fixed.append(f)
        self.stats: dict[str, float] = {}
        self._built: list[tuple[np.ndarray, ...]] | None = None
        #: ``time.monotonic()`` after which any search stops (with a valid bound), whatever
        #: deadline its caller gives
        self.stop_at = stop_at
        #: the reading of the work meter (:class:`Work`) after which any search stops
        self.stop_work = stop_work

    @staticmethod
    def seconds(n: int) -> float:
        """The time budget from which a design over ``n`` categories is expected to finish
        (and be certified): 30 s at N = 20, five times more every two categories (the
        pairs grow as ``3^N``, and the rounds with them): a one-minute budget takes the
        search up to N = 20. Measured (geometric prior, Clopper-Pearson box, CPU seconds
        of the whole design, eps = 2 / log 2 / 0.1): N = 20 in 4.3 / 26.5 / 18.2 s,
        N = 22 in 14.4 / 107 / 153 s; N = 24 at eps = 2 in about 3 minutes, at log 2 in
        about 9."""
        return float(30.0 * 5.0 ** ((n - 20) / 2))

    @staticmethod
    def available() -> bool:
        """Whether numba is importable (and not disabled by ``PMLKIT_NO_NUMBA``)."""
        from . import _boxtree as bt

        return bt.compiled() is not None

    def _trees(self, y: np.ndarray, c: float) -> list[tuple[np.ndarray, ...]]:
        """Per half: the rows in tree order with the dual features of ``y``, and the
        tree (built once, on the features of the box; ranges refitted to ``y``)."""
        from . import _boxtree as bt

        if self._built is None:
            built: list[tuple[np.ndarray, ...]] = []
            weight = np.zeros(bt.K)
            for k, wk in (self.SPLIT_LARGE_EPS if self.e >= 4.0 else self.SPLIT):
                weight[k] = wk
            for f, (top, mid) in zip(self.fixed, self.masks, strict=True):
                perm, start, end, left, lo, hi = self.kernels["build_tree"](f, weight,
                                                                            self.LEAF)
                digits = (2 * top[perm] + mid[perm]).astype(np.int8)
                built.append((np.ascontiguousarray(f[perm]), start, end, left, lo, hi, perm,
                              digits))
            self._built = built
            self.fixed = []  # kept in tree order only
        out: list[tuple[np.ndarray, ...]] = []
        dual = np.array([bt.YT, bt.YS, bt.ZT, bt.ZM, bt.ZS], dtype=np.int64)
        for (f, start, end, left, lo, hi, perm, digits), h in zip(self._built or [],
                                                                 self.halves, strict=True):
            yh = np.ascontiguousarray(y[h])
            self.kernels["dual_features"](digits, yh, yh - c * self.p[h], f)
            self.kernels["refit"](f, start, end, left, lo, hi, dual)
            out.append((f, start, end, left, lo, hi, perm))
        return out

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns (the best ``want`` above ``atol``) and a valid bound; partial
        pricing from the best pairs of the last search as in :class:`BoxOracle`. The search
        stops when the work meter reads ``until`` (or :attr:`stop_work`) or at ``deadline``
        (or :attr:`stop_at`) on the wall clock, with a valid bound."""
        self._deadline = min(deadline, self.stop_at)
        self._exhaust = full
        return super().price(y, want=want, deadline=deadline, atol=atol, full=full,
                             until=min(until, self.stop_work))

    def _pair_coefficients(self, ia: np.ndarray, ib: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(c0, c1, c2)`` of :meth:`BoxOracle._coefficients` for the pairs ``(ia, ib)``."""
        a, b = self.sums
        e, sl = self.e, self.slack

        def pair(key: str) -> np.ndarray:
            out: np.ndarray = a[key][ia] + b[key][ib]
            return out

        _, _, c0, c1, c2 = _box_terms(pair, e, sl, self.n)
        return c0, c1, c2

    def _full(self, y: np.ndarray, *, want: int, atol: float
              ) -> tuple[np.ndarray, np.ndarray, float]:
        t0 = time.monotonic()
        deadline = getattr(self, "_deadline", math.inf)
        until = getattr(self, "_until", math.inf)
        meter = _meter(self)
        y = np.asarray(y, dtype=np.float64)
        c = float(self.p @ y / (self.p @ self.p)) if self.CENTRE else 0.0
        ta, tb = self._trees(y, c)
        meter.spend(BOX_RATE * (ta[0].shape[0] + tb[0].shape[0]))
        t1 = time.monotonic()
        fa, sa, ea, la, loa, hia, perma = ta
        fb, sb, eb, lb, lob, hib, permb = tb
        n = float(self.n)
        buf = np.empty((4, 16))
        root = self.kernels["pair_bound"](loa[0] + lob[0], hia[0] + hib[0], self.e,
                                          self.slack, n, self.pmin, c, buf)
        cap_stack = 4096
        si = np.zeros(cap_stack, dtype=np.int64)
        sj = np.zeros(cap_stack, dtype=np.int64)
        sbd = np.zeros(cap_stack)
        sbd[0] = root
        top = 1
        keep = max(want, self.CACHE) if want > 0 else 0
        cap = max(2 * keep, 256)
        cv = np.zeros(cap)
        ca = np.zeros(cap, dtype=np.int64)
        cb = np.zeros(cap, dtype=np.int64)
        ncand = 0
        early = not getattr(self, "_exhaust", True) and want > 0
        # an early stop collects a few times the columns asked for: the next rounds are
        # then answered from them (partial pricing) instead of by a new search
        enough = want * self.COLLECT
        # the pairs a little below the tolerance are kept too (for the partial pricing of
        # the next rounds): almost free, the bounds being looser than that near the leaves
        state = np.array([float(atol) - self.NEAR, -math.inf, 0.0, 0.0, 0.0, 0.0])
        steps = 0.0
        while top > 0:
            top, ncand = self.kernels["search"](
                fa, sa, ea, la, loa, hia, fb, sb, eb, lb, lob, hib,
                self.e, self.slack, n, self.pmin, c, keep,
                si, sj, sbd, top, self.CHUNK, cv, ca, cb, ncand, state)
            done = float(state[2] + state[3] + state[4])
            meter.spend(TREE_RATE * (done - steps))
            steps = done
            if top > 0 and meter.stop(until, deadline):
                break
            if early and ncand >= enough and np.count_nonzero(cv[:ncand] > atol) >= enough:
                # enough improving columns for this round: the bound (still valid, from
                # the pairs left open) is only needed at the end
                break
        thr, best = float(state[0]), float(state[1])
        open_ub = float(sbd[:top].max()) if top > 0 else -math.inf
        margin = 1e-10 * (1.0 + float(np.abs(y).sum()))
        # every pair pruned had a bound <= the threshold at that moment (<= thr now)
        bound = max(thr, best, open_ub) + margin
        self.stats = {"tree_s": t1 - t0, "search_s": time.monotonic() - t1,
                      "pairs": float(state[2]), "nodes": float(state[3]), "rows": float(state[4]),
                      "leaves": float(state[5]), "open": float(top), "root": float(root)}
        if ncand == 0:
            self._cache = None
            return np.zeros((self.n, 0)), np.zeros(0), bound
        ia, ib = perma[ca[:ncand]], permb[cb[:ncand]]
        nb = self.masks[1][0].shape[0]
        flat = ia * nb + ib
        self._cache = (flat, *self._pair_coefficients(ia, ib))
        if want <= 0:
            return np.zeros((self.n, 0)), np.zeros(0), bound
        cols, vals = self._columns(flat, cv[:ncand], y, want, atol)
        return cols, vals, bound


#: Smallest eps from which the designer prices a box by :class:`BoxLagrangeOracle` beyond
#: the exact oracles (geometric benchmark, N = 50, 60 s, certified gaps against the
#: spatial branch and bound's: 1.8% against 32% at eps = 0.05, 8.3% against 35% at
#: eps = 0.02, with higher values; at eps = 0.01 it certified 51%, and smaller eps keeps
#: the spatial search).
BOX_LAGRANGE_MIN_EPS = 0.02


class BoxLagrangeOracle(_BlockColumns):
    """Pricing for mutual information over a :class:`~pmlkit.sets.Box` at any alphabet
    size: a branch and bound over level cells with a Lagrangian bound in each (module
    docstring). ``price`` returns improving columns (exact three-level rays) and a valid
    upper bound on ``max_{v in K_1} mu(v) - y . v`` whenever it stops.
    """

    name = "level-cell branch and bound (box)"
    #: a cell is split until its relative width is below this before entries are branched
    TAU = 0.003
    #: bisection steps of the multiplier search
    ITERS = 15
    #: candidate assignments evaluated exactly at a time
    BATCH = 256
    #: a cell wider than TAU whose relaxation splits an entry between two levels has that
    #: entry branched (not the cell halved) when the bound at the cell's centre keeps more
    #: than this share of the node's excess over the threshold (N = 50, eps = log 2 / 2,
    #: 60 s: certified gap 2.6% / 1.2% -> 2.3% / 0.7%)
    POINT_SHARE = 0.5
    #: nodes after which a search for columns stops once it has an improving one (N = 50,
    #: 60 s, side by side: 500 certified 2.1% / 3.9% / 0.65% at eps = log 2 / 0.1 / 2
    #: where 2000 gave 2.3% / 4.6-5.3% / 0.69%; 100 and 250 lost at eps = 0.1: 53%)
    QUICK = 500
    #: best candidates of a search kept as starting points of the local search
    SEEDS = 16
    #: the local search also moves two of this many heaviest entries at once: the columns
    #: a search still found late in a design differed from the master's in the pattern
    #: of several heavy entries, which single moves (through worse or infeasible
    #: assignments) did not reach (N = 50, 60 s, side by side: certified 0.93% -> 0.82%
    #: at eps = 0.1, 0.41% at eps = 2 either way, 1.37% twice at eps = log 2 where single
    #: moves gave 1.26-1.55% in four runs, with the reduced cost of the best column at the
    #: final duals 0.002-0.003 instead of 0.004-0.008)
    PAIR_ENTRIES = 8
    #: a search stops (its bound, from the nodes left open, stays valid) once it holds
    #: this many open nodes or distinct candidates (about 0.5 KB each): a design without
    #: a time budget would otherwise grow its memory without end where the bound cannot
    #: close (about 15 GB in 10 minutes at N = 30)
    MAX_OPEN = 1_000_000
    #: reduced-cost fixing in every node (:func:`~pmlkit.design._boxlagrange.fix_levels`)
    FIX = True
    #: rounds stop early (their bounds are loose): one final search bounds the last duals
    skips_bounds = True
    #: the share of the time budget kept for that final search
    bound_share = 0.25
    #: its searches price at smoothed duals (:func:`column_generation`)
    stabilize = True

    def __init__(self, uset: Any, p: np.ndarray, eps: float, *, stop_at: float = math.inf,
                 stop_work: float = math.inf) -> None:
        from . import _boxlagrange as bl
        from ._common import exp_capped

        p = np.ascontiguousarray(p, dtype=np.float64)
        if not bool(np.all(p > 0)):
            raise PMLError("BoxLagrangeOracle needs a prior with every entry > 0")
        self.uset, self.p, self.eps, self.n = uset, p, eps, p.size
        self.e = exp_capped(eps)
        self.lo = np.ascontiguousarray(uset.lower, dtype=np.float64)
        self.hi = np.ascontiguousarray(uset.upper, dtype=np.float64)
        self.slack = float(self.hi.sum()) - 1.0
        self.kern = bl.kernels()
        self.stop_at = stop_at
        self.stop_work = stop_work
        self._seeds: list[tuple[float, np.ndarray]] = []
        self._anchors: list[np.ndarray] = []
        # the top level of a column of K_1 is at least p . w = 1 and at most
        # e^eps min_Q Q . w <= e^eps Q0 . w <= e^eps max(Q0 / p) for any Q0 of the box
        s = 1.0 - float(self.lo.sum())
        c = self.hi - self.lo
        q0 = self.lo + (max(s, 0.0) / max(float(c.sum()), 1e-300)) * c
        cap = float(np.max(q0 / p))
        if bool(np.all(self.lo <= p)) and bool(np.all(p <= self.hi)):
            cap = min(cap, 1.0)
        self.umax = self.e * cap * (1.0 + 1e-9) + 1e-12
        self.umin = 1.0 - 1e-12
        self.stats: dict[str, float] = {}

    @staticmethod
    def available() -> bool:
        """Whether numba is importable (and not disabled by ``PMLKIT_NO_NUMBA``): without
        it the search runs as plain Python, far too slow for the designer."""
        from . import _boxlagrange as bl

        return bl.compiled() is not None

    def _evaluate(self, levels: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Exact pricing objective of the three-level rays of the assignments (rows of
        ``levels``: 0 bottom, 1 middle, 2 top); ``-inf`` where the assignment gives no
        point of ``K_1``."""
        _meter(self).spend(EVAL_RATE * levels.size)
        top = levels == 2
        s = levels >= 1
        ft, fs = top.astype(np.float64), s.astype(np.float64)
        d = {"pT": ft @ self.p, "pS": fs @ self.p, "lT": ft @ self.lo, "lS": fs @ self.lo,
             "hT": ft @ self.hi, "hS": fs @ self.hi, "nT": top.sum(axis=1),
             "nS": s.sum(axis=1)}
        one, three, c0, c1, c2 = _box_terms(lambda k: d[k], self.e, self.slack, self.n)
        with np.errstate(invalid="ignore", over="ignore"):
            g = c0 - c1 * (ft @ y) - c2 * (fs @ y)
        ok = (one | three) & np.isfinite(g)
        return np.where(ok, g, -math.inf)

    def _column(self, lev: np.ndarray) -> np.ndarray:
        top, mid = lev == 2, lev == 1
        return _box_column(top, mid, self.p, self.lo, self.hi, self.slack, self.e)

    def search(self, y: np.ndarray, *, thr: float, deadline: float, want: int = 0,
               max_nodes: int = 10**9, until: float = math.inf
               ) -> tuple[float, list[tuple[float, np.ndarray]]]:
        """Branch and bound: a valid bound on the pricing maximum (at least ``thr``) and
        the exactly evaluated candidates above ``thr`` (value, levels). Stops (with a valid
        bound) after ``max_nodes`` nodes, when the work meter (:class:`Work`) reads
        ``until``, or at ``deadline`` on the wall clock."""
        from . import _boxlagrange as bl

        meter = _meter(self)
        counted = 0
        n, p = self.n, self.p
        y = np.ascontiguousarray(y, dtype=np.float64)
        nb = self.kern["node_bound"]
        fix = self.kern["fix_levels"]
        fixed = np.empty(n, dtype=np.int8)
        lev_a = np.empty(n, dtype=np.int8)
        lev_b = np.empty(n, dtype=np.int8)
        mult = np.zeros(2)
        heap: list[tuple[float, int, tuple[Any, ...]]] = []
        pending: list[np.ndarray] = []
        seen: set[bytes] = set()
        found: list[tuple[float, np.ndarray]] = []
        best = -math.inf
        tick = 0
        nodes = 0
        thr0 = thr
        seeds = self._seeds = []

        def flush() -> None:
            nonlocal best, thr
            if not pending:
                return
            lv = np.stack(pending)
            pending.clear()
            vals = self._evaluate(lv, y)
            for v, row in zip(vals, lv, strict=True):
                if v > thr0:
                    found.append((float(v), row))
            for i in np.argsort(-vals, kind="stable")[: self.SEEDS]:
                if np.isfinite(vals[i]):
                    seeds.append((float(vals[i]), lv[i]))
            seeds.sort(key=lambda t: -t[0])
            del seeds[self.SEEDS:]
            m = float(vals.max())
            if m > best:
                best = m
            thr = max(thr, best)

        def candidate(lev: np.ndarray) -> None:
            key = lev.tobytes()
            if key in seen:
                return
            seen.add(key)
            pending.append(lev.copy())
            if len(pending) >= self.BATCH:
                flush()

        def push(mode: int, u1: float, u2: float, m1: float, m2: float,
                 allow: np.ndarray, lam0: float, nu0: float, parent: float = math.inf
                 ) -> None:
            nonlocal tick, nodes
            m2 = min(m2, u2)
            if m1 > m2:
                return
            nodes += 1
            b = float(nb(p, y, self.lo, self.hi, self.e, self.slack, mode, u1, u2, m1, m2,
                         allow, lam0, nu0, lev_a, lev_b, mult, self.ITERS))
            # the parent's bound holds for the child's columns too
            b = min(b, parent)
            if b == -math.inf:
                return
            # the Lagrangian at the cell's vertices (which side to halve)
            cv = np.zeros(bl.NCORNERS)
            if self.FIX and b > thr:
                # levels that cannot lead above thr are removed, and the node bounded again
                # (N = 50, eps = log 2, 15 s at the final duals of a design, with the
                # halving rule below: 0.0059 -> 0.0055)
                for _ in range(3):
                    removed = int(fix(p, y, self.lo, self.hi, self.e, self.slack, mode, u1,
                                      u2, m1, m2, allow, float(mult[0]), float(mult[1]),
                                      thr, fixed, cv))
                    if not removed:
                        break
                    if int(fixed.min()) == 0:
                        return
                    allow = fixed.copy()
                    nodes += 1
                    b = min(b, float(nb(p, y, self.lo, self.hi, self.e, self.slack, mode, u1,
                                        u2, m1, m2, allow, float(mult[0]), float(mult[1]),
                                        lev_a, lev_b, mult, self.ITERS)))
                    if b <= thr:
                        return
            for lv in (lev_a, lev_b):
                if lv.min() >= 0:
                    candidate(lv)
            if b > thr:
                tick += 1
                heapq.heappush(heap, (-b, tick, (mode, u1, u2, m1, m2, allow,
                                                 float(mult[0]), float(mult[1]),
                                                 lev_a.copy(), lev_b.copy(), cv)))

        full = np.full(n, 7, dtype=np.int8)
        for mode in range(3):
            push(mode, self.umin, self.umax, 0.0, self.umax, full, 0.0, 0.0)
        while heap:
            flush()
            if -heap[0][0] <= thr:
                break
            meter.spend(NODE_RATE * n * (nodes - counted))
            counted = nodes
            if nodes >= max_nodes or meter.stop(until, deadline) \
                    or len(heap) >= self.MAX_OPEN or len(seen) >= self.MAX_OPEN:
                break
            if want and (len(found) >= want or (found and nodes >= self.QUICK)):
                # enough improving columns for this round; the bound (still valid, from
                # the nodes left open) is only needed at the end
                break
            negb, _, (mode, u1, u2, m1, m2, allow, lam, nu, la, lb, cv) = heapq.heappop(heap)
            pb = -negb
            free = np.flatnonzero(bl.POPCOUNT[allow] > 1)
            if free.size == 0:
                # one assignment: its columns are the ends of a segment (one level, the
                # tight three-level ray, top only), G is convex along it
                lev = np.where(allow == 4, 2, np.where(allow == 2, 1, 0)).astype(np.int8)
                candidate(lev)
                candidate(np.where(lev >= 1, 1, 0).astype(np.int8))
                candidate(np.where(lev == 2, 1, 0).astype(np.int8))
                flush()
                continue
            wu = (u2 - u1) / u2
            wm = (m2 - m1) / u2
            frac = free[la[free] != lb[free]]
            entry = max(wu, wm) <= self.TAU
            if not entry and frac.size:
                # how much of the node's excess over the threshold is left at one point
                # of its cell: where most of it is, the relaxation's split entries (not
                # the cell's width) make the bound loose, and halving the cell only
                # multiplies nodes
                uc, mc = 0.5 * (u1 + u2), 0.5 * (m1 + m2)
                nodes += 1
                pt = float(nb(p, y, self.lo, self.hi, self.e, self.slack, mode, uc, uc,
                              min(mc, uc), min(mc, uc), allow, lam, nu, lev_a, lev_b, mult,
                              self.ITERS))
                entry = pt > thr + self.POINT_SHARE * (pb - thr)
                if entry and bool((lev_a[free] != lev_b[free]).any()):
                    # the entries that point's relaxation splits are the ones keeping the
                    # excess (the cell's relaxation may split another: N = 50, eps = log 2,
                    # at fixed duals, 30,000 nodes bounded the pricing at 0.0090, not 0.0173)
                    la, lb = lev_a.copy(), lev_b.copy()
                    frac = free[la[free] != lb[free]]
            if entry:
                cand = frac if frac.size else free
                x = int(cand[np.argmax(p[cand])])
                zero = free[(la[free] == 0) != (lb[free] == 0)]
                if zero.size and (la[x] == 0) == (lb[x] == 0) and m2 >= u1:
                    # in a cell crossing the diagonal m = U the middle and top levels give
                    # nearly the same columns: branch the heaviest entry split between the
                    # bottom and a level above it instead (separating middle from top there
                    # left every child with its parent's bound: 0.00077 -> 0.00043 at fixed
                    # duals, N = 50, eps = 0.1; preferring such entries everywhere left the
                    # heaviest entry of a skewed column split between middle and top:
                    # Adult's native-country, 10 s at the final duals, 1.5e-6 -> 0.0075)
                    x = int(zero[np.argmax(p[zero])])
                if m2 <= 0.5 * u1 and la[x] != lb[x] and (la[x] == 2 or lb[x] == 2):
                    # where the middle level is nearer the bottom than the top throughout
                    # the cell, an entry split between the top and a lower level is
                    # branched top or not (a middle level near 0 gives nearly the bottom's
                    # columns: separating them only copied the node; 15 s at the final
                    # duals of four designs, N = 50, eps = log 2: 0.0040-0.0055 where the
                    # three children gave 0.0055-0.0062)
                    groups: tuple[int, ...] = (3, 4)
                elif (la[x] == 0) != (lb[x] == 0):
                    # bottom, or one of the two upper levels
                    groups = (1, 6)
                else:
                    groups = (1, 2, 4)
                for bits in groups:
                    if allow[x] & bits:
                        al = allow.copy()
                        al[x] = allow[x] & bits
                        push(mode, u1, u2, m1, m2, al, lam, nu, pb)
            else:
                # halve the cell along the side where the Lagrangian at the node's vertices
                # differs most (in a cell whose relaxation puts no entry at the middle
                # level the bound does not depend on m; halving the wider side, m, only
                # copied the node: thousands of open cells of one U range and thin slices
                # of m, all with their ancestor's bound. N = 50, eps = log 2, 15 s at the
                # final duals of a design: 0.0067 -> 0.0053)
                du = max(abs(cv[0] - cv[2]), abs(cv[1] - cv[3]))
                dm = max(abs(cv[0] - cv[1]), abs(cv[2] - cv[3]))
                if wm <= self.TAU or (wu > self.TAU and du >= dm):
                    um = 0.5 * (u1 + u2)
                    push(mode, u1, um, m1, m2, allow, lam, nu, pb)
                    push(mode, um, u2, m1, m2, allow, lam, nu, pb)
                else:
                    mm = 0.5 * (m1 + m2)
                    push(mode, u1, u2, m1, mm, allow, lam, nu, pb)
                    push(mode, u1, u2, mm, m2, allow, lam, nu, pb)
        flush()
        meter.spend(NODE_RATE * n * (nodes - counted))
        open_ub = -heap[0][0] if heap else -math.inf
        self.stats = {"nodes": float(nodes), "open": float(len(heap))}
        margin = 1e-10 * (1.0 + float(np.abs(y).sum()))
        return max(thr, open_ub) + margin, found

    def anchor(self, cols: np.ndarray) -> None:
        """Remember the assignments of ``cols`` (the master's active columns, points of
        ``K_1`` with levels 0, ``m`` and ``U``): the local search of the next rounds
        starts from them too. A column with one positive level is read as one level
        (middle), the form in which :meth:`_evaluate` knows it.

        Examples
        --------
        >>> from pmlkit.sets import Box
        >>> p = np.array([0.5, 0.3, 0.2])
        >>> oracle = BoxLagrangeOracle(Box(0.8 * p, 1.2 * p), p, 1.0)
        >>> col = oracle._column(np.array([0, 1, 2], dtype=np.int8))
        >>> np.round(col, 4)  # bottom, middle and top level
        array([0.    , 1.8836, 2.1746])
        >>> oracle.anchor(col[:, None])
        >>> oracle._anchors[0].tolist()
        [0, 1, 2]
        """
        out = []
        for col in np.asarray(cols, dtype=np.float64).T:
            pos = col > 0
            lev = np.zeros(self.n, dtype=np.int8)
            if pos.any():
                top = pos & (col >= col[pos].max() * (1.0 - 1e-9))
                lev[pos] = 1
                if (pos & ~top).any():
                    lev[top] = 2
            out.append(lev)
        self._anchors = out

    def improve(self, seeds: list[np.ndarray], y: np.ndarray, atol: float,
                steps: int = 200) -> list[tuple[float, np.ndarray]]:
        """Local search from each seed: the move that raises the exact objective most,
        while one does; a move takes one entry to another level, or two of the
        :attr:`PAIR_ENTRIES` heaviest entries at once. Returns the assignments it ends
        at, where their value exceeds ``atol`` (columns only, no bound). Only the ends are
        kept: every improving neighbour met on the way (the former rule) flooded the master
        with near-duplicate columns."""
        n = self.n
        idx = np.arange(n)
        out: list[tuple[float, np.ndarray]] = []
        heavy = np.argsort(-self.p, kind="stable")[: min(self.PAIR_ENTRIES, n)]
        # pairs of heavy entries, each moved up by one or two levels (mod 3)
        pairs = np.array([(a, b, s1, s2) for i, a in enumerate(heavy) for b in heavy[i + 1:]
                          for s1 in (1, 2) for s2 in (1, 2)], dtype=np.intp).reshape(-1, 4)
        pa, pb, da, db = pairs.T
        rows = 2 * n + np.arange(pa.size)
        for lev in seeds:
            cur = np.asarray(lev, dtype=np.int8)
            cv = float(self._evaluate(cur[None, :], y)[0])
            for _ in range(steps):
                nb = np.repeat(cur[None, :], 2 * n + pa.size, axis=0)
                nb[idx, idx] = (cur + 1) % 3
                nb[n + idx, idx] = (cur + 2) % 3
                nb[rows, pa] = (cur[pa] + da) % 3
                nb[rows, pb] = (cur[pb] + db) % 3
                vals = self._evaluate(nb, y)
                j = int(np.argmax(vals))
                if not vals[j] > cv + 1e-15:
                    break
                cur, cv = nb[j].copy(), float(vals[j])
            if cv > atol:
                out.append((cv, cur))
        return out

    def price(self, y: np.ndarray, *, want: int, deadline: float, atol: float,
              full: bool = False, until: float = math.inf
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Improving columns and a valid bound from :meth:`search` (stopped when the work
        meter reads ``until`` or :attr:`stop_work`, or at ``deadline`` or :attr:`stop_at`
        on the wall clock), with the local search's columns."""
        dl = min(deadline, self.stop_at)
        bound, found = self.search(y, thr=atol, deadline=dl, want=0 if full else want,
                                   until=min(until, self.stop_work))
        found.sort(key=lambda t: -t[0])
        if want > 0:
            # a local search from the search's best candidates and the master's active
            # columns (:meth:`anchor`), keeping the assignment each ends at
            found = found[:want] + self.improve(
                [lev for _, lev in found[: self.SEEDS]] + [lev for _, lev in self._seeds]
                + self._anchors,
                y, atol)
            uniq: dict[bytes, tuple[float, np.ndarray]] = {}
            for val, lev in found:
                uniq[lev.tobytes()] = (val, lev)
            found = sorted(uniq.values(), key=lambda t: -t[0])
        cols = [self._column(lev) for _, lev in found[: max(want, 0) + 2 * self.SEEDS]]
        return (*self.improving(cols, y, atol), bound)
