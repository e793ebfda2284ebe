"""The designers' front doors: :func:`optimal_mechanism`, :func:`optimal_mechanism_for_set`
and the end-to-end :func:`design_from_samples` (paper Figure flowchart).

Utilities (``utility=``):

- ``"mutual_information"`` (default): ``I(X;Y)`` in nats, sub-convex; exact extreme-ray LP
  (:mod:`pmlkit.design.subconvex`).
- ``"accuracy"``: ``P[Y = X] = sum_i p_i W[i, i]``, linear; one LP over the polytope
  (:mod:`pmlkit.design.linear`). The mechanism is square with outputs = inputs.
- ``"estimation"``: minus the expected squared error of the estimated distribution for
  ``n = 10^4`` released rows, ``EstimationError()`` below (the optimal mechanism does not
  depend on ``n``).
- an ``N x M`` array ``g``: the linear expected gain ``sum_i p_i sum_j g[i, j] W[i, j]``
  (e.g. ``-(1 - I)`` for minus the Hamming distortion).
- a callable ``mu(column, prior) -> float``, convex and positively homogeneous in
  ``column`` (sub-linear); the utility is ``sum_j mu(W[:, j], prior)``. It is evaluated once
  per candidate ray (up to ``12 * 2^11`` times).
- an object with ``value(w, p)`` and ``design_matrix(rays, p)``, such as
  :class:`pmlkit.design.estimation.EstimationError` (minus the expected squared error of
  the estimated distribution): it designs over the same candidate rays itself.

Sub-convex utilities are designed by column generation over the extreme rays of the set's
cone of eps-PML columns (:mod:`pmlkit.design.colgen`), which certifies a relative
optimality gap (``parameters["optimality_gap"]``, ``DesignResult.optimality_gap``; 0 when
optimal to solver tolerance). Mutual information over an l1-ball centred at the estimate
(the paper's set, and the fixed prior) is priced exactly for any N by dynamic programming
over block masses when the estimate is a vector of counts over their total (used from
N = 9 on). Otherwise pricing is exact by enumeration of the candidate rays while they are
few (fixed prior up to N = 17, Prop. LCCP's l1-balls up to N = 16, any l1-ball, box or
their intersection up to N = 13, :mod:`pmlkit.design.subconvex`); mutual information over
a box (positive estimate) is then priced exactly up to N = 15 (16 with a budget of 45 s or
more) by streaming the three-level block assignments
(:class:`~pmlkit.design.colgen.BoxOracle`), and from N = 16 to 24, when numba is
importable, by branch and bound over pairs of blocks of those assignments
(:class:`~pmlkit.design.colgen.BoxTreeOracle`: exact when its searches finish, used at
N = 16 and, beyond, when the budget (``max_work``, and ``max_seconds`` if given) is at least
the work they are expected to take: 30 units at N = 20, five times more every two
categories); beyond those, for eps >= 0.02 and
with numba, by branch and bound over level cells with a Lagrangian bound
(:class:`~pmlkit.design.colgen.BoxLagrangeOracle`: a valid bound whenever it stops;
N = 50 within a minute: certified gaps of about 0.2% / 0.7% / 0.2-0.3% at eps = 2 / log 2 /
0.1 where the spatial search below left 15-27%); otherwise, and for vertex sets, mutual
information is priced by spatial branch and bound, which bounds the gap at any time
(larger boxes and other sets at N >= 14 may end with a gap of tens of percent: it is
reported).
``max_work=`` (work units, counted: a design is the same on any machine under any load) and
``gap=`` bound the search, and ``max_seconds=`` caps it on the wall clock; a design stopped
before its gap carries a :class:`~pmlkit.errors.PMLWarning` with the gap reached (and says
when the time cap stopped it: only then does the mechanism depend on the machine). It is
never below the accuracy design's utility (its columns start the search). For the fixed
prior in the first privacy region the closed form is used for any N. A user callable on an
alphabet too large to enumerate has no bound: the best certified candidate is returned with
a warning and ``optimality_gap = None``. ``allow_fallback`` is deprecated and has no effect.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import as_distribution, check_delta, check_eps, check_radius, fmt
from ..errors import PMLError, PMLWarning, TooLargeError, ValidationError
from ..mechanism import Mechanism
from ._candidates import (
    TIE_MIX,
    ThreeLevel,
    Utility,
    certifies_over,
    exact_rays,
    fallback_design,
    fixed_prior_subconvex,
    ray_count,
)
from ._common import EPS_CAP, MARGINS, certify, solve_certified
from ._custom import custom_design
from ._publish import OUTPUT_NAMES, check_output_names, name_outputs, publish_as_values
from ._samples import MISSING_LABEL as MISSING_LABEL  # re-exported: the CLI uses it
from ._samples import apply_missing, estimate_for_design
from .baselines import extremal_mechanism, randomized_response
from .guarantee import DesignResult, Guarantee  # noqa: F401  (Guarantee: docs link)
from .linear import linear_design_matrix
from .polytope import eps_prime
from .subconvex import (
    ray_values,
)

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

    from ..sets import UncertaintySet

# the designer's internals under their former names (tests and benchmarks import them)
_Utility = Utility
_exact_rays = exact_rays
_fallback = fallback_design

__all__ = [
    "DEFAULT_WORK",
    "MAX_DESIGN_CATEGORIES",
    "MAX_LINEAR_DESIGN_CATEGORIES",
    "OUTPUT_NAMES",
    "apply_missing",
    "check_output_names",
    "design_from_samples",
    "estimate_for_design",
    "optimal_mechanism",
    "optimal_mechanism_for_set",
    "publish_as_values",
]

#: Most categories :func:`design_from_samples` designs over. Its LPs have ``N^2`` variables
#: and their cost grows about as ``N^3``: N = 80 takes ~10 s here, N = 150 about a minute,
#: and a few thousand exhaust the memory. Larger alphabets are refused before any LP is
#: built (bucket rare values or use a coarser column).
MAX_DESIGN_CATEGORIES = 150
#: Most categories for a linear utility (accuracy or a gain matrix): its LP is solved by
#: column generation over the output columns (:mod:`pmlkit.design.linear`), N = 500 in
#: seconds at eps = 1 (``benchmarks/bench_linear_design.py``).
MAX_LINEAR_DESIGN_CATEGORIES = 500

#: Default work budget of a sub-convex design, in work units
#: (:class:`pmlkit.design.colgen.Work`: counted operations, about a second of one core
#: each): what the former default time budget of 60 s reached on an unloaded machine.
DEFAULT_WORK = 60.0


def _budget(max_seconds: Any, gap: Any, allow_fallback: bool | None, designer: str,
            max_work: Any = DEFAULT_WORK) -> tuple[float, float, float]:
    """Validate the design budget (``(max_seconds, gap, max_work)``, ``inf`` for no
    limit); warn about the deprecated ``allow_fallback``."""
    if allow_fallback is not None:
        warnings.warn(
            f"{designer}: allow_fallback is deprecated and has no effect: the sub-convex "
            "designer now scales to large alphabets by column generation and reports its "
            "certified optimality gap; use max_seconds= and gap= to bound the work",
            DeprecationWarning, stacklevel=4)
    if max_seconds is None:
        secs = math.inf
    else:
        if isinstance(max_seconds, bool) or not isinstance(max_seconds, int | float) \
                or not max_seconds > 0:
            raise ValidationError(
                f"max_seconds must be a number of seconds > 0 (or None for no limit), got "
                f"{fmt(max_seconds)}")
        secs = float(max_seconds)
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not 0 <= gap < 1:
        raise ValidationError(
            f"gap must be a relative optimality gap in [0, 1), e.g. 1e-6, got {fmt(gap)}")
    if max_work is None:
        work = math.inf
    else:
        if isinstance(max_work, bool) or not isinstance(max_work, int | float) \
                or not max_work > 0 or math.isnan(max_work):
            raise ValidationError(
                f"max_work must be a number of work units > 0 (or None for no limit), got "
                f"{fmt(max_work)}")
        work = float(max_work)
    return secs, float(gap), work


#: Work units per (code x entry) of the candidate-ray generation of
#: :func:`~pmlkit.design.subconvex.three_level_rays` (l1-balls and boxes: block sums;
#: other sets: one worst case per candidate), and per (ray x entry) of the other generators:
#: the designer enumerates only where the generation takes at most half its budget.
_GENERATION_RATE = {"aggregated": 3e-7, "generic": 8e-7, "list": 2e-7}


def _generation_work(uset: Any, n: int, count: float) -> float:
    """Predicted work units of generating the candidate rays of :func:`exact_rays`."""
    from ..sets import Box, L1Ball

    kind = "list" if count < 3.0 ** n else (
        "aggregated" if isinstance(uset, L1Ball | Box) else "generic")
    return _GENERATION_RATE[kind] * count * n


def _rays_within(rays_fn: Callable[..., Any], e: float, meter: Any, stoppable: bool = True
                 ) -> np.ndarray | None:
    """The candidate rays ``rays_fn(e)``, their generation counted on ``meter``
    (:class:`~pmlkit.design.colgen.Work`); ``None`` when the meter's wall-clock cap stops
    it (three-level lists are generated in chunks, and the cap is asked between them; never
    unless ``stoppable``)."""
    if isinstance(rays_fn, ThreeLevel) and stoppable:
        n = int(rays_fn.uset.n)
        rate = _GENERATION_RATE["aggregated" if rays_fn.aggregated else "generic"] * n
        done = [0]

        def stop(codes: int) -> bool:
            meter.spend(rate * (codes - done[0]))
            done[0] = codes
            return bool(meter.stop(math.inf))

        rays = rays_fn.chunked(e, stop)
        if rays is None:
            return None
        meter.spend(rate * (3 ** n - done[0]))
        return np.asarray(rays)
    rays = np.asarray(rays_fn(e))
    meter.spend(_GENERATION_RATE["list"] * rays.size)
    return rays


def _subconvex(uset: Any, p: np.ndarray, eps: float, util: Utility, *, designer: str,
               max_seconds: float, gap: float, max_work: float = DEFAULT_WORK,
               record: dict[str, Any] | None = None
               ) -> tuple[np.ndarray, float, str, float | None]:
    """Sub-convex design by column generation (:mod:`pmlkit.design.colgen`).

    Returns the certified matrix, the eps it was designed at, a description of the method
    and the certified relative optimality gap (``None`` when no bound is available: a
    user callable on an alphabet too large to enumerate). ``record`` receives the budget
    spent (``work``, ``max_work``, ``max_seconds``, ``time_capped``).

    The search is bounded by ``max_work`` work units (:class:`~pmlkit.design.colgen.Work`,
    counted, so the result does not depend on the machine's load) and, as an outer cap
    only, by ``max_seconds`` on the wall clock: a cap that stops the search is warned
    about (the result then depends on the machine's speed) and recorded."""
    import time

    from ..sets import Box, L1Ball
    from .colgen import (
        BOX_LAGRANGE_MIN_EPS,
        BOX_MAX_N,
        BOX_TREE_MAX_N,
        DP_MAX_STEPS,
        GAP_ABS_TOL,
        MAX_ENUMERATED,
        MAX_THREE_LEVEL_N,
        SOLVER_ABS_TOL,
        BoxLagrangeOracle,
        BoxOracle,
        BoxTreeOracle,
        BranchAndBoundOracle,
        EnumerationOracle,
        L1BallOracle,
        Work,
        column_generation,
        prior_grid,
        relative_gap,
    )

    n = p.size
    mu = util.mu
    assert mu is not None
    count = ray_count(uset, n)
    # what the choices below may plan for: the work budget, and no more than the time cap
    # allows at about a second per work unit (a deterministic function of the arguments)
    plan = min(max_work, max_seconds)
    # three-level candidates are generated in chunks and only the feasible ones kept (a
    # few percent), so their code count may exceed the memory limit of the others; the
    # list is generated only where that takes at most half the budget
    # (mutual information only: it has other exact or bounded pricing)
    enumerable = (count <= MAX_ENUMERATED or (count == 3.0 ** n and n <= MAX_THREE_LEVEL_N)) \
        and (mu != "mutual_information" or _generation_work(uset, n, count) <= 0.5 * plan)
    if isinstance(uset, L1Ball) and uset.radius == 0 \
            and np.array_equal(np.asarray(uset.center), p):
        # fixed prior: in the first privacy region the extremal mechanism is proved optimal
        # for every sub-convex utility; taking it first also avoids solver tolerances that
        # dwarf the utility itself (~eps^2) at tiny eps
        closed = extremal_mechanism(p, eps)
        if closed is not None:
            wc = np.asarray(closed.matrix)
            if certifies_over(wc, uset, eps):
                return wc, eps, f"closed form ({closed.designer})", 0.0
            # a fixed closed form tight at eps (k-singular: its exact worst case is the
            # real log(n/k), the float eps can be below it) does not certify eps: mixed
            # with TIE_MIX of the constant mechanism (uniform outputs), which lowers every
            # column's leakage by about TIE_MIX (a mediant with ratio 1); its utility is
            # an upper bound on the optimum at eps, which gives the certified gap
            wm = (1.0 - TIE_MIX) * wc + TIE_MIX / wc.shape[1]
            if certifies_over(wm, uset, eps):
                u_c, u_m = util.value(wc, p), util.value(wm, p)
                gap_m = max(u_c - u_m, 0.0) / max(abs(u_m), 1e-300)
                return wm, eps, (f"closed form ({closed.designer}) mixed with "
                                 f"{TIE_MIX:g} of the constant mechanism (its worst case "
                                 f"ties eps)"), gap_m
    rays_fn = exact_rays(uset, p) if enumerable else None
    if rays_fn is None and mu != "mutual_information":
        w, method = fallback_design(uset, p, eps, util)
        warnings.warn(
            f"{designer}: a user utility on N = {n} categories cannot be priced exactly "
            f"(only mutual information can beyond {MAX_ENUMERATED} candidate rays); "
            f"returning the best certified candidate, without an optimality bound: {method}",
            PMLWarning, stacklevel=4)
        return w, eps, f"no optimality bound: {method}", None

    # mutual information over an l1-ball centred at a prior k / m (an estimate from counts)
    # is priced exactly by dynamic programming over masses (about N^2 m steps): preferred
    # to the ray list from N = 9 on (2-5x faster at N = 12), and the only exact pricing
    # once the list is too long
    grid = (prior_grid(p) if (rays_fn is None or n > 8) and mu == "mutual_information"
            and isinstance(uset, L1Ball) and np.array_equal(np.asarray(uset.center), p)
            else None)
    if grid is not None and L1BallOracle.steps(n, grid[1], uset.radius) > DP_MAX_STEPS:
        grid = None
    if grid is not None:
        rays_fn = None
    # mutual information over a box beyond the ray list: exact pricing by streaming the
    # 3^N block assignments (meet in the middle) up to BOX_MAX_N, branch and bound beyond
    box_mi = (rays_fn is None and mu == "mutual_information" and type(uset) is Box
              and bool((p > 0).all()))
    # a full pass over the 3^16 assignments takes ~7 s (loaded machine): N = 16 only with
    # the time to finish (about 26-45 s), otherwise the spatial branch and bound
    box_exact = box_mi and (n < BOX_MAX_N or (n == BOX_MAX_N and plan >= 45))
    # from N = 16 on (and numba importable): the same pairs of half-assignments, searched
    # by branch and bound over pairs of blocks; exact when its searches finish, which takes
    # about BoxTreeOracle.seconds(n) (30 s at N = 20, x5 per two categories): with less
    # time the spatial branch and bound's partial bound is the better one
    box_tree = (box_mi and BOX_MAX_N <= n <= BOX_TREE_MAX_N
                and (n == BOX_MAX_N or plan >= BoxTreeOracle.seconds(n))
                and BoxTreeOracle.available())
    # beyond those (a larger alphabet or a shorter budget), with numba and from eps = 0.02
    # on: the level-cell branch and bound (geometric benchmark, 60 s at N = 50: certified
    # gaps of 0.15% / 0.67% / 0.23% at eps = 2 / log 2 / 0.1 where the spatial one reached
    # 15% / 27% / 20%, and values at least as high; at an earlier state of the level
    # cells, 1.8% / 8.3% against 32% / 35% at eps = 0.05 / 0.02; below, the spatial one)
    box_lagrange = (box_mi and not (box_exact or box_tree) and eps >= BOX_LAGRANGE_MIN_EPS
                    and BoxLagrangeOracle.available())
    deadline = time.monotonic() + max_seconds
    runs: dict[float, Any] = {}
    spent = [0.0]  # work units of the runs so far
    capped = [False]  # whether the wall-clock cap stopped anything

    def mu_values(cols: np.ndarray) -> np.ndarray:
        return ray_values(cols, p, mu)

    def fallback_oracle(e: float) -> Any:
        # the pricing used where the ray list was planned but the wall-clock cap stopped
        # its generation (N <= 13): exact streaming for a box, else a valid bound at any time
        if mu == "mutual_information" and type(uset) is Box and bool((p > 0).all()):
            return BoxOracle(uset, p, e)
        return BranchAndBoundOracle(uset, p, e)

    def build(e: float) -> np.ndarray:
        # start from the accuracy design: never below the former fallback's candidates,
        # whatever the budget
        start = None
        try:
            wl = linear_design_matrix(uset, p, eps=e, gain="accuracy")
            wl = wl[:, wl.max(axis=0) > 1e-12]
            start = wl / (p @ wl)[None, :]
        except PMLError:  # pragma: no cover - the LP is feasible (identity columns)
            start = None
        # later margins (re-designs at eps - margin) get what is left of the budget, at
        # least a tenth of it (work) and a few seconds (the cap)
        work = max(max_work - spent[0], 0.1 * max_work) if runs else max_work
        dl = max(deadline, time.monotonic() + min(5.0, max_seconds)) if runs else deadline
        meter = Work(deadline=dl)
        oracle: Any = None
        if rays_fn is not None:
            # (mutual information has pricing without the list; other utilities need it)
            rays = _rays_within(rays_fn, e, meter, stoppable=mu == "mutual_information")
            if rays is not None:
                oracle = EnumerationOracle(rays, mu_values(rays))
            else:
                oracle = fallback_oracle(e)
        elif grid is not None:
            oracle = L1BallOracle(uset, p, e, grid)
        elif box_tree:
            # the final bound of a run may finish past the budget, but not without end
            grace = max(10.0, 0.5 * max_seconds) if math.isfinite(max_seconds) else math.inf
            wgrace = max(10.0, 0.5 * work) if math.isfinite(work) else math.inf
            oracle = BoxTreeOracle(uset, p, e, stop_at=dl + grace, stop_work=work + wgrace)
        elif box_exact:
            oracle = BoxOracle(uset, p, e)
        elif box_lagrange:
            oracle = BoxLagrangeOracle(uset, p, e)
        else:
            oracle = BranchAndBoundOracle(uset, p, e)
        oracle.meter = meter
        runs[e] = column_generation(oracle, p, mu_values, start=start, gap=gap, deadline=dl,
                                    work=work)
        spent[0] += meter.used  # the generation of candidate rays included
        capped[0] = capped[0] or runs[e].capped
        return np.asarray(runs[e].matrix, dtype=np.float64)

    w, ed = solve_certified(build, uset, eps, what=designer)
    first = next(iter(runs.values()))  # the first design point (eps - MARGINS[0])
    value = util.value(w, p)
    exhaustive = first.oracle in ("enumeration", BoxOracle.name) and not first.capped
    # exhaustive pricing runs to the end whatever the budget: what is left is the master
    # LP's tolerance (SOLVER_ABS_TOL nats), not a gap
    g = relative_gap(first.upper_bound, value,
                     SOLVER_ABS_TOL if exhaustive else GAP_ABS_TOL)
    method = (f"column generation over the extreme rays ({first.oracle} pricing, "
              f"{first.columns} columns, {first.iterations} rounds, HiGHS)")
    if record is not None:
        record.update({"work": round(spent[0], 6),
                       "max_work": max_work if math.isfinite(max_work) else None,
                       "max_seconds": max_seconds if math.isfinite(max_seconds) else None,
                       "time_capped": capped[0]})
    if capped[0]:
        # the cap is the only thing that makes a design depend on the machine's speed
        warnings.warn(
            f"{designer}: the time cap (max_seconds={max_seconds:g}) stopped the search "
            f"before its work budget (max_work={max_work:g} units) was spent: the mechanism "
            "depends on this machine's speed and load (another run may differ); certified "
            f"optimality gap of {g:.3g} (requested {gap:g}): its utility is within "
            f"{100 * g:.3g}% of the optimum; raise or drop max_seconds for a reproducible "
            "design", PMLWarning, stacklevel=4)
    elif g > gap:
        # exhaustive pricing runs to the end whatever the budget: a gap left after it is
        # the LP solver's tolerance, not the budget
        why = ("after exhaustive pricing (the rest is the LP solver's tolerance)"
               if exhaustive else
               f"when the work budget (max_work={max_work:g} units) was spent; raise "
               "max_work to close it")
        warnings.warn(
            f"{designer}: certified optimality gap of {g:.3g} (requested {gap:g}) {why}: "
            f"the mechanism's utility is within {100 * g:.3g}% of the optimum",
            PMLWarning, stacklevel=4)
    return w, ed, method, g


def _design(uset: Any, p: np.ndarray, eps: float, utility: Any, *,
            allow_fallback: bool | None, designer: str, labels: Sequence[Any] | None,
            extra: dict[str, Any], max_seconds: Any = None, gap: Any = 1e-6,
            basis: str = "given", statement: str = "", max_work: Any = DEFAULT_WORK,
            output_names: str = "values") -> Mechanism:
    from ..sets import L1Ball

    output_names = check_output_names(output_names)
    n = p.size
    if uset.n != n:
        raise ValidationError(
            f"prior has {n} entries but the uncertainty set is on {uset.n} points")
    util = Utility(utility, n)
    secs, gap_target, work = _budget(max_seconds, gap, allow_fallback, designer, max_work)
    budget: dict[str, Any] = {}
    ed = eps
    opt_gap: float | None
    if util.gain is not None:
        gain = util.gain
        w, ed = solve_certified(
            lambda e: linear_design_matrix(uset, p, eps=e, gain=gain), uset, eps,
            what=designer)
        method = "linear LP over the robust polytope (HiGHS)"
        # optimal to solver tolerance at the design eps; the first design margin
        # (CERTIFY_TOL, 1e-9 nats: rounding kept below eps) counts as exact, a larger
        # margin below eps is not bounded
        opt_gap = 0.0 if ed >= eps - MARGINS[0] else None
    else:
        if util.custom is not None:
            # a utility object (for example the estimation error) is designed over the
            # enumerated extreme rays; no optimality bound is available for it
            w, ed, method = custom_design(uset, p, eps, util, designer=designer,
                                           max_seconds=secs, max_work=work,
                                           publish_values=output_names == "values")
            opt_gap = None
        else:
            w, ed, method, opt_gap = _subconvex(uset, p, eps, util, designer=designer,
                                                max_seconds=secs, gap=gap_target,
                                                max_work=work, record=budget)
    if opt_gap is None:
        optimality = f"lower bound (no optimality certificate): {method}"
    elif opt_gap == 0.0:
        optimality = "exact"
    else:
        optimality = f"certified within {opt_gap:.3g} (relative) of the optimum"
    params: dict[str, Any] = {
        "eps": eps,
        "beta": float(uset.radius) if isinstance(uset, L1Ball) else None,
        "utility": util.name,
        "utility_value": util.value(w, p),
        "optimality": optimality,
        "optimality_gap": opt_gap,
        "method": method,
        "design_eps": min(ed, EPS_CAP),
        "prior": p.tolist(),
    }
    if isinstance(uset, L1Ball):
        params["eps_prime"] = eps_prime(eps, uset.radius)
    if budget:
        # the search's budget: the work units spent (the same on every machine) and
        # whether the wall-clock cap stopped it (then the design depends on the machine)
        params["budget"] = budget
    params.update(extra)
    if util.linear:
        out_labels = labels if (labels is not None and w.shape[1] == n) else None
    elif output_names == "merged":
        w, out_labels = name_outputs(w, p, labels)
        params["output_names"] = "merged"
    else:
        designed = w.shape[1]
        w, out_labels = publish_as_values(w, p, labels)
        params["output_names"] = "values"
        if w.shape[1] < designed:
            # outputs merged to publish values (a post-processing): what is recorded, its
            # utility included, is the released channel; the design's optimality bound
            # was for the unmerged outputs
            params["outputs_merged"] = designed - w.shape[1]
            params["utility_value"] = util.value(w, p)
            if opt_gap is not None:
                params["optimality_gap"] = None
                params["optimality"] = (f"lower bound (no optimality certificate): {method}"
                                        f"; {designed} outputs merged into {w.shape[1]} to "
                                        "publish values of the column (rank kept)")
    return certify(w, uset, eps, designer=designer, parameters=params,
                   input_labels=labels, output_labels=out_labels, basis=basis,
                   statement=statement)


def optimal_mechanism(prior: ArrayLike, eps: float, *, beta: float = 0.0,
                      utility: Any = "mutual_information", allow_fallback: bool | None = None,
                      labels: Sequence[Any] | None = None, max_seconds: float | None = None,
                      gap: float = 1e-6, max_work: float | None = DEFAULT_WORK,
                      output_names: str = "values") -> Mechanism:
    """Optimal eps-PML mechanism for the prior (``beta = 0``) or for every distribution in
    the l1-ball ``B_beta(prior)`` (eq. optprob, Prop. LCCP).

    Parameters
    ----------
    prior
        The (estimated) distribution, length N; the utility is evaluated at it.
    eps
        Target ``>= 0``.
    beta
        l1 radius ``>= 0`` (0: fixed prior). Any radius is accepted (``beta >= 2 min(prior)``
        and zero entries included); sub-convex utilities are exact for ``N <= 12`` (see the
        module docstring), linear ones for every N.
    utility
        ``"mutual_information"``, ``"accuracy"``, an ``N x M`` gain array or a callable
        ``mu(column, prior)`` (module docstring).
    allow_fallback
        Deprecated, no effect (a :class:`DeprecationWarning`): every N is designed by column
        generation with a certified optimality gap.
    labels
        Input labels (default ``0..N-1``).
    max_work, max_seconds, gap
        Budget of a sub-convex design: column generation stops once the certified relative
        optimality gap is ``<= gap`` or once it has done ``max_work`` work units of search
        (:class:`~pmlkit.design.colgen.Work`: counted operations, about a second of one
        core each; ``None``: no limit), in which case a
        :class:`~pmlkit.errors.PMLWarning` states the gap reached. The work is counted,
        not timed: the same arguments give the same mechanism on any machine under any
        load. ``max_seconds`` (default ``None``) is only an outer cap on the wall clock:
        when it stops the search a :class:`~pmlkit.errors.PMLWarning` says so, with the
        gap it left, and the mechanism then depends on the machine's speed.
        ``parameters["optimality_gap"]`` records the gap (0: optimal to solver
        tolerance), ``parameters["budget"]`` the work spent and whether the cap stopped
        the search.
    output_names
        What the outputs of a sub-convex design are published as: ``"values"`` (default)
        input labels, by the assignment maximising ``P[published = true]`` under the
        prior (:func:`publish_as_values`); ``"merged"`` names of the inputs each output
        stands for, such as ``"a | b"`` (which leave the column's domain and type).
        Linear utilities keep their outputs' meaning (output ``j`` is guess ``j``).

    Returns
    -------
    Mechanism
        Certified: ``certified_eps = leakage_capacity(W, L1Ball(prior, beta))``, below eps by
        more than its rounding margin (:func:`pmlkit.worstcase.certifies`)
        (else :class:`~pmlkit.errors.CertificationError`). Its guarantee has basis
        ``"prior"`` when ``beta = 0`` (the prior taken as known), else ``"given"`` (the
        ball's coverage is the caller's claim); its provenance records the utility value,
        whether it is exact, the method and eps'.

    Examples
    --------
    For the uniform binary prior at ``eps = log 1.5`` the optimum keeps the bit with
    probability ``1.5 / 2 = 3/4``; over the ball of radius 0.2 it is the theorem's
    ``1.5 (1/2 + 0.1) / (1 + 0.2 * 1.5) = 9/13``:

    >>> import math
    >>> from pmlkit import optimal_mechanism
    >>> mech = optimal_mechanism([0.5, 0.5], math.log(1.5))
    >>> mech.matrix.round(4).tolist(), mech.guarantee.basis
    ([[0.75, 0.25], [0.25, 0.75]], 'prior')
    >>> ball = optimal_mechanism([0.5, 0.5], math.log(1.5), beta=0.2)
    >>> round(float(ball.matrix[0, 0]), 6), round(9 / 13, 6), ball.guarantee.basis
    (0.692308, 0.692308, 'given')
    """
    from ..sets import L1Ball

    p = as_distribution(prior, "prior")
    eps = check_eps(eps)
    beta = check_radius(beta)
    return _design(L1Ball(p, beta), p, eps, utility, allow_fallback=allow_fallback,
                   designer="optimal_mechanism", labels=labels, extra={},
                   max_seconds=max_seconds, gap=gap, max_work=max_work,
                   output_names=output_names, basis="prior" if beta == 0 else "given",
                   statement="the distribution is taken as known" if beta == 0 else "")


def optimal_mechanism_for_set(uncertainty_set: UncertaintySet, eps: float, *,
                              prior: ArrayLike | None = None,
                              utility: Any = "mutual_information",
                              allow_fallback: bool | None = None,
                              labels: Sequence[Any] | None = None,
                              max_seconds: float | None = None, gap: float = 1e-6,
                              max_work: float | None = DEFAULT_WORK,
                              output_names: str = "values") -> Mechanism:
    """Optimal eps-PML mechanism over any :mod:`pmlkit.sets` set (l1-ball, box, their
    intersection, vertex set).

    ``prior`` (where the utility is evaluated) defaults to the set's center (l1-balls and
    their intersections with boxes); it is required for other sets. Linear utilities are
    exact for every set (:func:`exact_polytope`); sub-convex ones follow the module
    docstring; the budget (``max_work``, ``max_seconds``, ``gap``) and ``output_names`` are
    those of :func:`optimal_mechanism`. The guarantee has basis ``"given"``: the set's coverage is
    the caller's claim.

    Examples
    --------
    In two categories the box ``0.4 <= Q <= 0.6`` is the l1-ball of radius 0.2 around the
    uniform prior, so the design is the same (``9/13`` on the diagonal at ``eps = log 1.5``):

    >>> import math
    >>> from pmlkit.design import optimal_mechanism_for_set
    >>> from pmlkit.sets import Box
    >>> mech = optimal_mechanism_for_set(Box([0.4, 0.4], [0.6, 0.6]), math.log(1.5),
    ...                                  prior=[0.5, 0.5])
    >>> round(float(mech.matrix[0, 0]), 6), round(mech.certified_eps, 6) == round(math.log(1.5), 6)
    (0.692308, True)
    """
    from ..sets import UncertaintySet

    if not isinstance(uncertainty_set, UncertaintySet):
        raise ValidationError(
            f"uncertainty_set must be a pmlkit.sets set, got {fmt(uncertainty_set)}")
    if prior is None:
        if not hasattr(uncertainty_set, "center"):
            raise ValidationError(
                "prior is required for sets without a center (boxes, vertex sets)")
        prior = uncertainty_set.center
    p = as_distribution(prior, "prior")
    eps = check_eps(eps)
    return _design(uncertainty_set, p, eps, utility, allow_fallback=allow_fallback,
                   designer="optimal_mechanism_for_set", labels=labels, extra={},
                   max_seconds=max_seconds, gap=gap, max_work=max_work,
                   output_names=output_names)


def _comparisons(p: np.ndarray, eps: float, uset: Any, util: Utility
                 ) -> tuple[float | None, float | None, float | None]:
    """Utility of eps-LDP randomized response and of the fixed-prior design at eps'."""
    from ..sets import L1Ball

    n = p.size
    u_rr = None
    if not util.linear or (util.gain is not None and util.gain.shape == (n, n)):
        u_rr = util.value(np.asarray(randomized_response(n, eps).matrix), p)
    ep = u_ep = None
    if isinstance(uset, L1Ball):
        ep = eps_prime(eps, uset.radius)
        if ep >= 0:
            try:
                w_fixed: np.ndarray | None
                if util.gain is not None:
                    w_fixed = linear_design_matrix(L1Ball(p, 0.0), p, eps=ep, gain=util.gain)
                else:
                    w_fixed = fixed_prior_subconvex(p, p, ep, util)
                u_ep = None if w_fixed is None else util.value(w_fixed, p)
            except TooLargeError:
                u_ep = None
    return u_rr, ep, u_ep


def design_from_samples(samples: Any, eps: float, delta: float, *,
                        categories: Sequence[Any] | None = None,
                        utility: Any = "mutual_information", confidence: str = "l1",
                        allow_fallback: bool | None = None, missing: str = "error",
                        max_seconds: float | None = None, gap: float = 1e-6,
                        max_work: float | None = DEFAULT_WORK,
                        estimable: bool = False,
                        output_names: str = "values") -> DesignResult:
    """From samples to a certified mechanism with an (eps, delta)-PML guarantee
    (paper Figure flowchart).

    1. Estimate ``p_hat`` (:func:`pmlkit.empirical_distribution`, eq.
       empiricaldistribution). ``samples`` may also be an
       :class:`~pmlkit.estimation.EmpiricalDistribution` (e.g. from
       ``EmpiricalDistribution.from_counts(counts, categories)``), used as is.
    2. Build the set that holds the true distribution with probability ``>= 1 - delta``:
       ``confidence="l1"`` (default) is the paper's ``B_beta(p_hat)`` with
       ``beta = beta*(delta)`` (Thm weissman, eq. betastar, :func:`pmlkit.l1_radius`); any
       other name is passed to :func:`pmlkit.confidence.confidence_set` and the design is
       over the set it returns.
    3. Design the optimal mechanism over that set (:func:`optimal_mechanism_for_set`),
       certified with :func:`pmlkit.worstcase.leakage_capacity`.
    4. State the :class:`Guarantee`, with the utility of eps-LDP randomized response and of
       the paper's fixed-prior design at eps' for comparison.

    ``categories`` declares the full alphabet (listed but unseen categories count 0; a
    sample outside it is an error). ``missing`` says what a missing (null/NaN) sample is:
    ``"error"`` (default: refused, with the count), ``"category"`` (the label
    ``"(missing)"``, added to ``categories`` if they are given; the mechanism then
    privatises missing values like any label) or ``"keep"`` (missing samples are left out of
    the estimate: they stay missing when privatised, so whether a value is missing is
    released without protection). More than :data:`MAX_DESIGN_CATEGORIES` categories
    (:data:`MAX_LINEAR_DESIGN_CATEGORIES` for a linear utility) raise
    :class:`~pmlkit.errors.TooLargeError` before any LP is built. ``max_work``,
    ``max_seconds`` and ``gap`` bound the design's search as in
    :func:`optimal_mechanism`: by default the work is counted, not timed, so the same
    samples give the same mechanism on any machine. ``output_names`` is that of
    :func:`optimal_mechanism`: by default every output is published as a value of the
    column (a released ``sex`` is ``"Female"`` or ``"Male"``, an int column stays int),
    ``"merged"`` on request names outputs after the inputs they stand for.

    ``estimable=True`` (the default of the data-release paths: ``pmlkit design``,
    :class:`pmlkit.sklearn.PMLPrivatizer`) asks for a mechanism from whose releases the
    analyst can estimate every category: if the design for ``utility`` merges categories
    (its matrix has rank below ``N``, so :func:`pmlkit.estimate_distribution` can only
    bound them), the estimation design (``utility="estimation"``, full rank) is returned
    instead, and its ``parameters["estimable"]`` says so.

    Returns
    -------
    DesignResult
        ``.mechanism`` (labels = the categories; its ``guarantee`` is the typed
        :class:`~pmlkit.guarantee.PMLGuarantee` with basis ``"sample"``) and
        ``.guarantee`` (the printable report of it).

    Examples
    --------
    From 100 samples at ``delta = 1e-3`` the l1 radius is ``beta*(delta)`` of
    :func:`pmlkit.l1_radius`, and the guarantee holds with probability ``>= 0.999``:

    >>> from pmlkit import design_from_samples, l1_radius
    >>> res = design_from_samples(["a"] * 60 + ["b"] * 40, 1.0, 1e-3)
    >>> g = res.mechanism.guarantee
    >>> g.basis, g.m, g.delta, round(res.guarantee.beta, 6) == round(l1_radius(1e-3, m=100, n=2), 6)
    ('sample', 100, 0.001, True)
    >>> g.certified_eps <= 1.0 + 1e-9
    True
    """
    from ..estimation import l1_radius
    from ..sets import L1Ball

    eps = check_eps(eps)
    delta = check_delta(delta)
    output_names = check_output_names(output_names)
    if not isinstance(confidence, str):
        raise ValidationError(f"confidence must be a method name, got {fmt(confidence)}")
    est = estimate_for_design(samples, categories=categories, missing=missing)
    p = np.asarray(est.p, dtype=np.float64)
    linear = (isinstance(utility, str) and utility == "accuracy") or (
        not isinstance(utility, str) and not callable(utility)
        and not hasattr(utility, "design_matrix"))
    limit = MAX_LINEAR_DESIGN_CATEGORIES if linear else MAX_DESIGN_CATEGORIES
    if est.n > limit:
        raise TooLargeError(
            f"the column has {est.n} distinct values; designing a mechanism over more than "
            f"{limit} categories is infeasible here (the design LPs grow "
            "with the square of the count): bucket rare values into a coarser category, "
            "or use a coarser column")
    if confidence == "l1":
        radius = l1_radius(delta, m=est.m, n=est.n)
        uset: Any = L1Ball(p, radius)
        description = ("Weissman et al. l1 deviation bound with phi >= 2 (paper: Theorem 2, "
                       "Section 4.4): P[||P - p_hat||_1 >= beta] <= delta")
    else:
        from ..confidence import confidence_set

        cs = confidence_set(est.counts, delta, confidence=confidence)
        uset = cs.set
        description = cs.description
    # the counts only: nothing that depends on the order of the records (_provenance)
    extra: dict[str, Any] = {"delta": delta, "m": est.m, "confidence": confidence}
    if not isinstance(estimable, bool):
        raise ValidationError(f"estimable must be True or False, got {fmt(estimable)}")
    mech = _design(uset, p, eps, utility, allow_fallback=allow_fallback,
                   designer="design_from_samples", labels=est.categories, extra=extra,
                   max_seconds=max_seconds, gap=gap, statement=description,
                   max_work=max_work, output_names=output_names)
    if estimable and eps > 0:
        from .estimation import EstimationError, mechanism_rank

        if mechanism_rank(mech.matrix) < est.n:
            requested = Utility(utility, est.n).name
            extra = {**extra, "estimable": (
                f"the {requested} design merges categories (the analyst could only bound "
                "them); the estimation design is released instead")}
            utility = EstimationError()
            mech = _design(uset, p, eps, utility, allow_fallback=allow_fallback,
                           designer="design_from_samples", labels=est.categories,
                           extra=extra, max_seconds=max_seconds, gap=gap,
                           statement=description, max_work=max_work,
                           output_names=output_names)
    util = Utility(utility, est.n)
    u_rr, _, u_ep = _comparisons(p, eps, uset, util)
    return DesignResult.from_mechanism(mech, categories=tuple(est.categories),
                                       utility_randomized_response=u_rr,
                                       utility_eps_prime_design=u_ep)
