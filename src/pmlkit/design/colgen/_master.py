"""The restricted master LP and the column-generation loop (:func:`column_generation`);
the method and why its gap is certified are in :mod:`pmlkit.design.colgen`."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._progress import active as progress_active
from ..._progress import report
from ...errors import PMLError
from .._common import drop_empty_columns, repair_rows
from ._work import HEURISTIC_RATE, MASTER_RATE, meter_of

_DEBUG = False
#: Safety cap on column-generation rounds.
_MAX_ROUNDS = 5000

_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


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

    >>> from pmlkit.design.colgen import L1BallOracle, prior_grid
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
    meter = meter_of(oracle)
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
        if progress_active():  # a description of the round only: nothing is read back
            report("design.round", round=it, value=value, upper=upper,
                   gap=relative_gap(upper, value))
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
            if progress_active():
                report("design.round", round=it, value=value, upper=upper,
                       gap=relative_gap(upper, value), final=True)
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
