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
from ..errors import DataError, PMLError, PMLWarning, TooLargeError, ValidationError
from ..mechanism import Mechanism
from ._common import EPS_CAP, MARGINS, certify, closed_form_eps, solve_certified
from .baselines import extremal_mechanism, randomized_response
from .guarantee import DesignResult, Guarantee  # noqa: F401  (Guarantee: docs link)
from .linear import gain_matrix, linear_design_matrix
from .polytope import eps_prime
from .subconvex import (
    MAX_EXACT_N,
    fixed_prior_rays,
    l1_ball_rays,
    ray_lp_matrix,
    ray_values,
    three_level_rays,
)

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike, NDArray

    from ..estimation import EmpiricalDistribution
    from ..sets import UncertaintySet

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
#: The label a missing value becomes under ``missing="category"``.
MISSING_LABEL = "(missing)"

_BISECT_STEPS = 24


class _Utility:
    """A parsed ``utility=`` argument."""

    def __init__(self, utility: Any, n: int) -> None:
        self.gain: np.ndarray | None = None
        self.mu: str | Callable[..., Any] | None = None
        # an object with value(w, p) and design_matrix(rays, p), e.g. EstimationError
        self.custom: Any = None
        if hasattr(utility, "design_matrix") and hasattr(utility, "value"):
            self.custom, self.name = utility, str(getattr(utility, "name", "custom"))
        elif isinstance(utility, str):
            if utility == "mutual_information":
                self.mu, self.name = utility, utility
            elif utility == "accuracy":
                self.gain, self.name = np.eye(n), utility
            elif utility == "estimation":
                from .estimation import EstimationError

                self.custom = EstimationError()
                self.name = self.custom.name
            else:
                raise ValidationError(
                    "utility must be 'mutual_information', 'accuracy', 'estimation', an "
                    "N x M gain array or a callable mu(column, prior), got "
                    f"{utility!r}")
        elif callable(utility):
            self.mu = utility
            self.name = getattr(utility, "__name__", "callable")
        else:
            self.gain = gain_matrix(utility, n)
            self.name = "linear gain"

    @property
    def linear(self) -> bool:
        return self.gain is not None

    def value(self, w: np.ndarray, p: np.ndarray) -> float:
        if self.custom is not None:
            return float(self.custom.value(w, p))
        if self.gain is not None:
            if self.gain.shape != w.shape:
                return math.nan
            return float(p @ (self.gain * w).sum(axis=1))
        assert self.mu is not None
        return float(np.sum(ray_values(w, p, self.mu)))


def _exact_rays(uset: Any, p: np.ndarray) -> Callable[[float], np.ndarray] | None:
    """The candidate-ray generator for an exact sub-convex design over ``uset``, or
    ``None`` (vertex sets): fixed prior -> :func:`fixed_prior_rays` (``N 2^(N-1)``);
    l1-ball with ``beta <= 2 p_min`` -> :func:`l1_ball_rays` (``~N 2^N``); any other l1-ball
    or a box -> :func:`three_level_rays` (``3^N``)."""
    from ..sets import Box, L1Ball, L1BoxSet

    if isinstance(uset, L1Ball):
        c = np.asarray(uset.center, dtype=np.float64)
        r = float(uset.radius)
        if r == 0:
            return lambda e: fixed_prior_rays(c, e)
        if r <= 2 * float(c.min()):
            return lambda e: l1_ball_rays(c, e, r)
        return _ThreeLevel(uset, None)
    if isinstance(uset, Box | L1BoxSet):
        return _ThreeLevel(uset, p if uset.contains(p) else None)
    return None


class _ThreeLevel:
    """``e -> three_level_rays(uset, e, q0)``, also generated in chunks that a budget can
    stop (:meth:`chunked`)."""

    def __init__(self, uset: Any, q0: np.ndarray | None) -> None:
        from ..sets import Box, L1Ball

        self.uset, self.q0 = uset, q0
        self.aggregated = isinstance(uset, L1Ball | Box)

    def __call__(self, e: float) -> np.ndarray:
        return three_level_rays(self.uset, e, self.q0)

    def chunked(self, e: float, stop: Callable[[int], bool]) -> np.ndarray | None:
        from .subconvex import three_level_rays_until

        return three_level_rays_until(self.uset, e, self.q0, stop)


def _fixed_prior_subconvex(c: np.ndarray, p: np.ndarray, eps: float, util: _Utility
                           ) -> np.ndarray | None:
    """Exact fixed-prior (at ``c``) sub-convex optimum at ``eps``, or ``None`` if N is too
    large and no closed form applies. Not certified here."""
    if c.size <= MAX_EXACT_N:
        rays = fixed_prior_rays(c, eps)
        if util.custom is not None:
            return np.asarray(util.custom.design_matrix(rays, p))
        return ray_lp_matrix(rays, ray_values(rays, p, util.mu))  # type: ignore[arg-type]
    if np.array_equal(c, p):
        closed = extremal_mechanism(c, eps)
        if closed is not None and closed.guarantee is not None \
                and closed.guarantee.eps <= eps:
            return np.asarray(closed.matrix)
    return None


#: Weight of the constant mechanism mixed into a fixed closed form whose worst case ties
#: eps (see :func:`_subconvex`).
TIE_MIX = 1e-9


def _certifies(w: np.ndarray, uset: Any, eps: float) -> bool:
    """Whether ``w``'s worst case over the set is safely below eps
    (:func:`pmlkit.worstcase.certifies`: rounding counts against it)."""
    from ..worstcase import certifies

    return certifies(w, uset, eps)


def _fallback(uset: Any, p: np.ndarray, eps: float, util: _Utility
              ) -> tuple[np.ndarray, str]:
    """Best certified candidate (see the module docstring) and its description."""
    from ..sets import L1Ball

    cands: list[tuple[float, np.ndarray, str]] = []
    w, _ = solve_certified(lambda e: linear_design_matrix(uset, p, eps=e, gain="accuracy"),
                           uset, eps, what="linear-utility LP")
    cands.append((util.value(w, p), w, "linear-utility LP (accuracy) over the exact set"))
    center = np.asarray(uset.center) if isinstance(uset, L1Ball) else p
    lo = 0.0
    if isinstance(uset, L1Ball):
        # tight at eps over the ball: built a rounding margin below it
        ep = eps_prime(closed_form_eps(eps, p.size), uset.radius)
        if ep >= 0:
            w_ep = _fixed_prior_subconvex(center, p, ep, util)
            if w_ep is not None and _certifies(w_ep, uset, eps):
                cands.append((util.value(w_ep, p), w_ep,
                               f"fixed-prior design at eps' = {ep:.6g}"))
                lo = ep
    if p.size <= MAX_EXACT_N:
        hi = eps
        best = None
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            w_mid = _fixed_prior_subconvex(center, p, mid, util)
            assert w_mid is not None
            if _certifies(w_mid, uset, eps):
                lo, best = mid, w_mid
            else:
                hi = mid
        if best is not None:
            cands.append((util.value(best, p), best,
                          f"fixed-prior design at eps'' = {lo:.6g} (largest whose worst case "
                          "over the set is <= eps, bisection)"))
    if util.custom is not None:
        # randomized response at the largest LDP level whose worst case over the set is
        # <= eps (bisection): full rank, so it identifies P when the others do not
        lo_rr, hi_rr = eps, max(eps, 1.0) * 32.0
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo_rr + hi_rr)
            if _certifies(np.asarray(randomized_response(p.size, mid).matrix), uset, eps):
                lo_rr = mid
            else:
                hi_rr = mid
        w = np.asarray(randomized_response(p.size, lo_rr).matrix)
        cands.append((util.value(w, p), w, f"randomized response at LDP eps {lo_rr:.6g} "
                      "(largest whose worst case over the set is <= eps, bisection)"))
    cands.sort(key=lambda c: -c[0])
    return cands[0][1], cands[0][2]


def _ray_count(uset: Any, n: int) -> float:
    """How many candidate rays :func:`_exact_rays` would generate (``inf``: none)."""
    from ..sets import Box, L1Ball, L1BoxSet

    if isinstance(uset, L1Ball):
        c = np.asarray(uset.center, dtype=np.float64)
        r = float(uset.radius)
        if r == 0:
            return n * 2.0 ** (n - 1)
        if r <= 2 * float(c.min()):
            return (n + 1) * 2.0 ** n
        return 3.0 ** n
    if isinstance(uset, Box | L1BoxSet):
        return 3.0 ** n
    return math.inf


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
    """Predicted work units of generating the candidate rays of :func:`_exact_rays`."""
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
    if isinstance(rays_fn, _ThreeLevel) and stoppable:
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


def _subconvex(uset: Any, p: np.ndarray, eps: float, util: _Utility, *, designer: str,
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
    count = _ray_count(uset, n)
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
            if _certifies(wc, uset, eps):
                return wc, eps, f"closed form ({closed.designer})", 0.0
            # a fixed closed form tight at eps (k-singular: its exact worst case is the
            # real log(n/k), the float eps can be below it) does not certify eps: mixed
            # with TIE_MIX of the constant mechanism (uniform outputs), which lowers every
            # column's leakage by about TIE_MIX (a mediant with ratio 1); its utility is
            # an upper bound on the optimum at eps, which gives the certified gap
            wm = (1.0 - TIE_MIX) * wc + TIE_MIX / wc.shape[1]
            if _certifies(wm, uset, eps):
                u_c, u_m = util.value(wc, p), util.value(wm, p)
                gap_m = max(u_c - u_m, 0.0) / max(abs(u_m), 1e-300)
                return wm, eps, (f"closed form ({closed.designer}) mixed with "
                                 f"{TIE_MIX:g} of the constant mechanism (its worst case "
                                 f"ties eps)"), gap_m
    rays_fn = _exact_rays(uset, p) if enumerable else None
    if rays_fn is None and mu != "mutual_information":
        w, method = _fallback(uset, p, eps, util)
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


#: Work units of one Frank-Wolfe step of the estimation design's local search, per variable
#: of its LP (``N^2`` and the worst-case rows).
_FW_STEP_RATE = 2.5e-4


def _custom_design(uset: Any, p: np.ndarray, eps: float, util: _Utility, *, designer: str,
                   max_seconds: float = math.inf, max_work: float = DEFAULT_WORK,
                   publish_values: bool = False) -> tuple[np.ndarray, float, str]:
    """Design for a utility object (``value`` and ``design_matrix`` over candidate rays)
    over the enumerated extreme rays (``N <= MAX_EXACT_N``); a utility object that also
    has ``design_over_set`` (the estimation error) is designed by it as well (any N and
    set kind) and the better certified matrix is kept. Otherwise, beyond
    ``MAX_EXACT_N``, the best certified candidate (with a warning).

    With ``publish_values`` every candidate is compared as it will be released: one with
    more outputs than inputs by its published channel (:func:`_published_candidate`)."""
    import time

    n = p.size
    from .estimation import LOCAL_MAX_ITER

    deadline = time.monotonic() + max_seconds
    steps_budget = LOCAL_MAX_ITER
    if math.isfinite(max_work):
        # the local searches' steps from the work budget (counted, so deterministic)
        from .linear import mechanism_polytope

        nv = mechanism_polytope(uset, eps, n_outputs=n).n_vars
        steps_budget = max(1, int(max_work / (_FW_STEP_RATE * nv)))
    rays_fn = _exact_rays(uset, p) if n <= MAX_EXACT_N else None
    cands: list[tuple[float, np.ndarray, float, str]] = []
    if rays_fn is not None:
        nrays = [0]

        def build(e: float) -> np.ndarray:
            rays = rays_fn(e)
            nrays[0] = rays.shape[1]
            return np.asarray(util.custom.design_matrix(rays, p))

        w, ed = solve_certified(build, uset, eps, what=designer)
        cands.append((util.value(w, p), w, ed, f"{util.name} over the extreme rays "
                      f"({nrays[0]} candidate rays, HiGHS)"))
        from ..sets import L1Ball

        if isinstance(uset, L1Ball) and uset.radius > 0:
            # the paper's fixed-prior design at eps' is certified over the ball: a
            # candidate too (the Frank-Wolfe above stops at a relative gap)
            ep = eps_prime(closed_form_eps(eps, p.size), uset.radius)
            if ep >= 0:
                w_ep = _fixed_prior_subconvex(np.asarray(uset.center), p, ep, util)
                if w_ep is not None and _certifies(w_ep, uset, eps):
                    cands.append((util.value(w_ep, p), w_ep, eps,
                                  f"{util.name} over the fixed-prior extreme rays at "
                                  f"eps' = {ep:.6g} (HiGHS)"))
    over_set = getattr(util.custom, "design_over_set", None)
    if over_set is not None:
        import inspect

        kwargs: dict[str, Any] = {"deadline": deadline}
        if "max_steps" in inspect.signature(over_set).parameters and math.isfinite(max_work):
            kwargs["max_steps"] = steps_budget

        def build_set(e: float) -> np.ndarray:
            return np.asarray(over_set(uset, p, e, **kwargs))

        try:
            w, ed = solve_certified(build_set, uset, eps, what=designer)
        except PMLError:
            if not cands:
                raise
        else:
            steps = getattr(util.custom, "last_steps", None)
            start = getattr(util.custom, "last_start", "") or "PML randomized response"
            cands.append((util.value(w, p), w, ed,
                          f"{util.name}: {start} refined by a local "
                          f"search over the square eps-PML polytope ({steps} Frank-Wolfe "
                          "steps, HiGHS)"))
    if publish_values and cands:
        cands = _published_candidates(cands, uset, p, eps, util, deadline=deadline,
                                      max_steps=steps_budget)
    if cands:
        cands.sort(key=lambda c: -c[0])
        return cands[0][1], cands[0][2], cands[0][3]
    w, method = _fallback(uset, p, eps, util)
    why = f"N > {MAX_EXACT_N}" if n > MAX_EXACT_N else "no exact rays for this set kind"
    warnings.warn(f"{designer}: no exact optimum for utility {util.name!r} ({why}); "
                  f"returning the best certified candidate: {method}", PMLWarning,
                  stacklevel=4)
    return w, eps, method


def _utility_merge(w: np.ndarray, p: np.ndarray, util: _Utility) -> NDArray[np.intp]:
    """A map of the outputs of ``w`` (``M > N``) onto the ``N`` inputs chosen for the
    utility rather than for ``P[published = true]``: the linear assignment of distinct
    inputs to ``N`` outputs (:func:`pmlkit.utility.publish_assignment`), then each other
    output, in decreasing order of its probability under ``p``, to the input whose merged
    channel (the outputs assigned so far) has the best utility. A start for the local
    search over ``N``-output mechanisms."""
    from ..utility import publish_assignment

    n = w.shape[0]
    a = publish_assignment(w, p, merge_surplus=False)
    v = np.zeros((n, n))
    for j in np.flatnonzero(a >= 0):
        v[:, a[j]] += w[:, j]
    rest = np.flatnonzero(a < 0)
    rest = rest[np.argsort(-(p @ w[:, rest]), kind="stable")]
    for j in rest:
        best: tuple[float, int] | None = None
        for x in range(n):
            v[:, x] += w[:, j]
            val = util.value(v, p)
            v[:, x] -= w[:, j]
            if best is None or val > best[0]:
                best = (val, x)
        assert best is not None
        a[j] = best[1]
        v[:, best[1]] += w[:, j]
    return a


def _published_candidates(cands: list[tuple[float, np.ndarray, float, str]], uset: Any,
                          p: np.ndarray, eps: float, util: _Utility, *, deadline: float,
                          max_steps: int) -> list[tuple[float, np.ndarray, float, str]]:
    """Custom-utility candidates ``(value, W, eps designed at, method)`` as they are
    released when their outputs are published as values. A candidate with at most ``N``
    outputs is kept as is (publishing it is a column permutation); one with more is
    replaced by its published channel (:func:`pmlkit.utility.publish_assignment` with
    ``keep_rank=True``: the rank, and so the estimability, is kept), valued as released.
    When the utility has a ``refine`` (the estimation error's local search over square
    mechanisms, which never lowers the value), the best unmerged candidate with surplus
    outputs is also refined from two merges of its outputs, the published channel and a
    merge chosen for the utility (:func:`_utility_merge`); a refined matrix is kept when
    it certifies. The released matrix's outputs are then published by a permutation."""
    from ..utility import publish_assignment, published_channel

    out: list[tuple[float, np.ndarray, float, str]] = []
    wide: list[tuple[float, np.ndarray, float, str]] = []
    for cand in cands:
        _, w, ed, method = cand
        if w.shape[1] <= w.shape[0]:
            out.append(cand)
            continue
        wide.append(cand)
        _, v = published_channel(w, publish_assignment(w, p, keep_rank=True))
        out.append((util.value(v, p), v, ed, f"{method}; its {w.shape[1]} outputs merged "
                    f"into {v.shape[1]} to publish values of the column (rank kept)"))
    refine = getattr(util.custom, "refine", None)
    if wide and refine is not None:
        _, w, ed, method = max(wide, key=lambda c: c[0])
        starts = [(published_channel(w, publish_assignment(w, p, keep_rank=True))[1],
                   "merged as published"),
                  (published_channel(w, _utility_merge(w, p, util))[1],
                   f"merged for {util.name}")]
        for v, how in starts:
            if not math.isfinite(util.value(v, p)):
                continue
            r = np.asarray(refine(v, uset, p, ed, deadline=deadline, max_steps=max_steps))
            if _certifies(r, uset, eps):
                steps = getattr(util.custom, "last_steps", None)
                out.append((util.value(r, p), r, ed, f"{method}; its {w.shape[1]} outputs "
                            f"{how} into {w.shape[0]} to publish values of the column, "
                            f"refined by a local search over the square eps-PML polytope "
                            f"({steps} Frank-Wolfe steps, HiGHS)"))
    return out


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
    util = _Utility(utility, n)
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
            w, ed, method = _custom_design(uset, p, eps, util, designer=designer,
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
        w, out_labels = _name_outputs(w, p, labels)
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


#: What the outputs of a sub-convex design are published as (``output_names=``):
#: ``"values"`` (default) values of the input column, ``"merged"`` names of the inputs
#: each output stands for (``"a | b"``).
OUTPUT_NAMES = ("values", "merged")


def check_output_names(output_names: Any) -> str:
    """``output_names`` checked: one of :data:`OUTPUT_NAMES`.

    Examples
    --------
    >>> check_output_names("merged")
    'merged'
    >>> check_output_names("names")
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: output_names must be one of values, merged, got 'names'
    """
    if not isinstance(output_names, str) or output_names not in OUTPUT_NAMES:
        raise ValidationError(f"output_names must be one of {', '.join(OUTPUT_NAMES)}, got "
                              f"{fmt(output_names)}")
    return output_names


def publish_as_values(w: np.ndarray, p: np.ndarray, labels: Sequence[Any] | None
                      ) -> tuple[np.ndarray, list[Any]]:
    """``(V, names)``: the outputs of a design published as values of the input column.

    Output ``j`` is published as the input label ``labels[a(j)]`` of the assignment ``a``
    of :func:`pmlkit.utility.publish_assignment` with ``keep_rank=True`` (under the
    estimate ``p``): distinct labels maximising the probability ``P[published = true]``
    when the design has at most as many outputs as inputs (a column permutation: the
    guarantee and the utility are unchanged); with more outputs than inputs (an
    estimation design can have them), outputs published as the same label are merged,
    by a map that keeps the rank of ``w`` (so a design the analyst can estimate back stays
    estimable). ``V`` is the published channel (:func:`pmlkit.utility.published_channel`),
    from the true value to the released one, its columns in the order of their labels:
    every released value is a value of the column and keeps its type (an int column stays
    int). Merging is a post-processing, so no output's leakage grows; the caller
    certifies ``V``, which is what the mechanism records and what the analyst estimates
    through.

    Examples
    --------
    >>> import numpy as np
    >>> v, names = publish_as_values(np.array([[0.8, 0.2], [0.6, 0.4]]),
    ...                              np.array([1 / 3, 2 / 3]), ["female", "male"])
    >>> names, v.tolist()
    (['female', 'male'], [[0.8, 0.2], [0.6, 0.4]])

    Three outputs on two values: two are merged, and the released channel keeps rank 2:

    >>> v, names = publish_as_values(np.array([[0.6, 0.3, 0.1], [0.2, 0.4, 0.4]]),
    ...                              np.array([0.1, 0.9]), ["rare", "common"])
    >>> names, v.round(2).tolist()
    (['rare', 'common'], [[0.6, 0.4], [0.2, 0.8]])
    """
    from ..utility import publish_assignment, published_channel

    names = list(range(w.shape[0])) if labels is None else list(labels)
    a = publish_assignment(w, p, keep_rank=True)
    used, v = published_channel(w, a)
    return v, [names[int(i)] for i in used]


def _name_outputs(w: np.ndarray, p: np.ndarray, labels: Sequence[Any] | None,
                  avoid: Sequence[Any] = ()) -> tuple[np.ndarray, list[Any] | None]:
    """Order and name the outputs of a sub-convex design after the inputs they stand for
    (``output_names="merged"``; the default publishes values, :func:`publish_as_values`).

    A sub-convex utility is invariant under permuting the columns, so the LP returns them
    in arbitrary order. Output ``j`` is named after input ``x`` only when ``x`` is a strict
    majority of its sources, ``P[X = x | Y = j] > 1/2`` under the estimate (if two outputs
    have the same majority source, the one holding more of its mass ``p(x) W[x, j]`` gets
    the name). Any other output is a merged output, named after the inputs it stands for:
    ``"a | b | c"`` (its sources in decreasing posterior probability, those with at least
    5% of it, at most 6 names and ``+k more``). Named outputs come first, in input order.
    The utility and the guarantee are unchanged.
    """
    n, m = w.shape
    names = list(range(n)) if labels is None else list(labels)
    joint = p[:, None] * w
    py = joint.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        post = np.where(py > 0, joint / np.where(py > 0, py, 1.0), 0.0)
    mode = np.argmax(post, axis=0)
    share = post[mode, np.arange(m)]
    named: dict[int, int] = {}  # output -> input
    avoided = {(type(v).__name__, v) for v in avoid}
    # (a name some other output already has is never given again)
    taken = {i for i, v in enumerate(names) if (type(v).__name__, v) in avoided}
    for j in sorted(range(m), key=lambda j: -joint[mode[j], j]):
        x = int(mode[j])
        if share[j] > 0.5 and x not in taken:
            named[j] = x
            taken.add(x)
    out: list[Any] = [None] * m
    for j, x in named.items():
        out[j] = names[x]
    used = {(type(v).__name__, v) for v in [*out, *avoid] if v is not None}
    for j in range(m):
        if out[j] is not None:
            continue
        ranked = np.argsort(-post[:, j], kind="stable")
        src = [int(x) for x in ranked if post[x, j] >= 0.05] or [int(mode[j])]
        text = " | ".join(str(names[x]) for x in src[:6])
        if len(src) > 6:
            text += f" | +{len(src) - 6} more"
        label, k = text, 2
        while ("str", label) in used:
            label, k = f"{text} ({k})", k + 1
        used.add(("str", label))
        out[j] = label
    order = sorted(range(m), key=lambda j: (j not in named, named.get(j, 0), -py[j]))
    return w[:, order], [out[j] for j in order]


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


def _comparisons(p: np.ndarray, eps: float, uset: Any, util: _Utility
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
                    w_fixed = _fixed_prior_subconvex(p, p, ep, util)
                u_ep = None if w_fixed is None else util.value(w_fixed, p)
            except TooLargeError:
                u_ep = None
    return u_rr, ep, u_ep


def _apply_missing(samples: Any, missing: str) -> Any:
    """Missing samples as the label ``"(missing)"`` (category) or left out (keep)."""
    from .._optional import loaded

    pa = loaded("pyarrow")
    if pa is not None and isinstance(samples, pa.Array | pa.ChunkedArray):
        if samples.null_count == 0:
            return samples
        if missing == "keep":
            return samples.drop_null()
        try:
            return samples.fill_null(pa.scalar(MISSING_LABEL, type=samples.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            samples = samples.to_pylist()
    import pandas as pd

    s = samples if isinstance(samples, pd.Series) else pd.Series(
        list(samples) if not isinstance(samples, np.ndarray) else samples)
    mask = s.isna().to_numpy()
    if not mask.any():
        return samples
    if missing == "keep":
        return s[~mask].reset_index(drop=True)
    out = s.astype(object)
    out[mask] = MISSING_LABEL
    return out


def apply_missing(samples: Any, missing: str, categories: Sequence[Any] | None = None
                  ) -> tuple[Any, list[Any] | None]:
    """``(samples, categories)`` with the missing (null/NaN) samples handled as
    :func:`design_from_samples` does for ``missing=``: ``"error"`` leaves them (the
    estimate then refuses them with their count), ``"category"`` makes them the label
    :data:`MISSING_LABEL` (added to ``categories`` if those are given), ``"keep"`` leaves
    them out of the estimate. For designers that estimate the column themselves (the
    coarsening of :mod:`pmlkit.design.bucketing`).

    Examples
    --------
    >>> samples, cats = apply_missing(["a", None, "b"], "category", ["a", "b"])
    >>> list(samples), cats
    (['a', '(missing)', 'b'], ['a', 'b', '(missing)'])
    >>> list(apply_missing(["a", None, "b"], "keep")[0])
    ['a', 'b']
    """
    if missing not in ("error", "category", "keep"):
        raise ValidationError(f"missing must be 'error', 'category' or 'keep', got "
                              f"{fmt(missing)}")
    cats = None if categories is None else list(categories)
    if missing == "error":
        return samples, cats
    samples = _apply_missing(samples, missing)
    if missing == "category" and cats is not None and MISSING_LABEL not in cats:
        cats.append(MISSING_LABEL)
    return samples, cats


def estimate_for_design(samples: Any, *, categories: Sequence[Any] | None = None,
                        missing: str = "error") -> EmpiricalDistribution:
    """The estimate a designer works from: ``samples`` with their missing values handled
    as ``missing=`` says (:func:`apply_missing`), counted over ``categories``, or an
    :class:`~pmlkit.estimation.EmpiricalDistribution` used as is (``categories`` must then be
    omitted or equal its own). At least two categories are needed. A pandas categorical
    declares its categories: those no sample uses count 0 (``categories`` defaults to
    them).

    Examples
    --------
    >>> est = estimate_for_design(["a", None, "b", "b"], missing="category")
    >>> list(est.categories), est.counts.tolist()
    (['(missing)', 'a', 'b'], [1, 1, 2])
    """
    from ..estimation import EmpiricalDistribution, empirical_distribution

    if categories is None:
        # a pandas categorical declares its alphabet: unused categories count 0 (they are
        # not dropped), as with ``categories=``
        dtype: Any = getattr(samples, "dtype", None)
        if type(dtype).__name__ == "CategoricalDtype":
            categories = list(dtype.categories)
    if not isinstance(samples, EmpiricalDistribution):
        samples, categories = apply_missing(samples, missing, categories)
    else:  # an estimate has no missing samples left; ``missing`` is only validated
        apply_missing([], missing)
    if isinstance(samples, EmpiricalDistribution):
        if categories is not None and tuple(categories) != tuple(samples.categories):
            raise ValidationError(
                "categories must be omitted (or equal the distribution's) when samples is "
                "an EmpiricalDistribution")
        est = samples
    else:
        try:
            est = empirical_distribution(samples, categories=categories)
        except DataError as exc:
            if missing != "error" or "null" not in str(exc):
                raise
            raise DataError(f"{exc}: pass missing='category' (the label {MISSING_LABEL!r}) "
                            "or missing='keep' (left out of the estimate) (command line: "
                            "--missing category / --missing keep)") from exc
    if est.n < 2:
        raise ValidationError(f"need at least 2 categories to design a mechanism, got {est.n}")
    return est


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
            requested = _Utility(utility, est.n).name
            extra = {**extra, "estimable": (
                f"the {requested} design merges categories (the analyst could only bound "
                "them); the estimation design is released instead")}
            utility = EstimationError()
            mech = _design(uset, p, eps, utility, allow_fallback=allow_fallback,
                           designer="design_from_samples", labels=est.categories,
                           extra=extra, max_seconds=max_seconds, gap=gap,
                           statement=description, max_work=max_work,
                           output_names=output_names)
    util = _Utility(utility, est.n)
    u_rr, _, u_ep = _comparisons(p, eps, uset, util)
    return DesignResult.from_mechanism(mech, categories=tuple(est.categories),
                                       utility_randomized_response=u_rr,
                                       utility_eps_prime_design=u_ep)
