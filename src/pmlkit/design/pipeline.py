"""The designers' front doors: :func:`optimal_mechanism`, :func:`optimal_mechanism_for_set`
and the end-to-end :func:`design_from_samples` (paper Figure flowchart).

Utilities (``utility=``):

- ``"mutual_information"`` (default): ``I(X;Y)`` in nats, sub-convex; exact extreme-ray LP
  (:mod:`pmlkit.design.subconvex`).
- ``"accuracy"``: ``P[Y = X] = sum_i p_i W[i, i]``, linear; one LP over the polytope
  (:mod:`pmlkit.design.linear`). The mechanism is square with outputs = inputs.
- an ``N x M`` array ``g``: the linear expected gain ``sum_i p_i sum_j g[i, j] W[i, j]``
  (e.g. ``-(1 - I)`` for minus the Hamming distortion).
- a callable ``mu(column, prior) -> float``, convex and positively homogeneous in
  ``column`` (sub-linear); the utility is ``sum_j mu(W[:, j], prior)``. It is evaluated once
  per candidate ray (up to ``12 * 2^11`` times).
- an object with ``value(w, p)`` and ``design_matrix(rays, p)``, such as
  :class:`pmlkit.design.estimation.EstimationError` (minus the expected squared error of
  the estimated distribution): it designs over the same candidate rays itself.

Exact cases (sub-convex), for ``N <= 12``: the fixed prior (``beta = 0``), an l1-ball
``B_beta(p)`` with ``beta <= 2 p_min`` (Prop. LCCP's two-level rays) and, beyond the paper,
an l1-ball of any radius (zero counts included), a box or their intersection (three-level rays,
:func:`~pmlkit.design.subconvex.three_level_rays`); for any N, the fixed prior in the first
privacy region (closed form). Elsewhere (``N > 12``, vertex sets) the designer returns the
best certified candidate among (a) the linear-utility LP
(accuracy) over the exact set, (b) the fixed-prior design at eps' (eq. LPsubset, l1-balls)
and (c) the fixed-prior design at the largest eps'' whose exact worst case over the set is
``<= eps`` (bisection with :func:`pmlkit.worstcase.leakage_capacity`; N <= 12), labelled a
lower bound in ``parameters["optimality"]`` with a :class:`~pmlkit.errors.PMLWarning`. For
``N > 12`` this needs ``allow_fallback=True`` (else :class:`~pmlkit.errors.TooLargeError`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import as_distribution, check_delta, check_eps, check_radius, fmt
from ..errors import PMLWarning, TooLargeError, ValidationError
from ..mechanism import Mechanism
from ._common import CERTIFY_TOL, EPS_CAP, certify, solve_certified
from .baselines import extremal_mechanism, randomized_response
from .guarantee import DesignResult, Guarantee
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

__all__ = ["MAX_DESIGN_CATEGORIES", "design_from_samples", "optimal_mechanism",
           "optimal_mechanism_for_set"]

#: Most categories :func:`design_from_samples` designs over. Its LPs have ``N^2`` variables
#: and their cost grows about as ``N^3``: N = 80 takes ~10 s here, N = 150 about a minute,
#: and a few thousand exhaust the memory. Larger alphabets are refused before any LP is
#: built (bucket rare values or use a coarser column).
MAX_DESIGN_CATEGORIES = 150
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
            else:
                raise ValidationError(
                    "utility must be 'mutual_information', 'accuracy', an N x M gain array "
                    f"or a callable mu(column, prior), got {utility!r}")
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
        return lambda e: three_level_rays(uset, e)
    if isinstance(uset, Box | L1BoxSet):
        q0 = p if uset.contains(p) else None
        return lambda e: three_level_rays(uset, e, q0)
    return None


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
        if closed is not None:
            return np.asarray(closed.matrix)
    return None


def _capacity(w: np.ndarray, uset: Any) -> float:
    from ..worstcase import leakage_capacity

    return float(leakage_capacity(w, uset))


def _fallback(uset: Any, p: np.ndarray, eps: float, util: _Utility
              ) -> tuple[np.ndarray, str]:
    """Best certified candidate (see the module docstring) and its description."""
    from ..sets import L1Ball

    target = eps + CERTIFY_TOL
    cands: list[tuple[float, np.ndarray, str]] = []
    w, _ = solve_certified(lambda e: linear_design_matrix(uset, p, e, "accuracy"), uset,
                           eps, what="linear-utility LP")
    cands.append((util.value(w, p), w, "linear-utility LP (accuracy) over the exact set"))
    center = np.asarray(uset.center) if isinstance(uset, L1Ball) else p
    lo = 0.0
    if isinstance(uset, L1Ball):
        ep = eps_prime(eps, uset.radius)
        if ep >= 0:
            w = _fixed_prior_subconvex(center, p, ep, util)
            if w is not None and _capacity(w, uset) <= target:
                cands.append((util.value(w, p), w, f"fixed-prior design at eps' = {ep:.6g}"))
                lo = ep
    if p.size <= MAX_EXACT_N:
        hi = eps
        best = None
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            w = _fixed_prior_subconvex(center, p, mid, util)
            assert w is not None
            if _capacity(w, uset) <= target:
                lo, best = mid, w
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
            if _capacity(np.asarray(randomized_response(p.size, mid).matrix), uset) <= target:
                lo_rr = mid
            else:
                hi_rr = mid
        w = np.asarray(randomized_response(p.size, lo_rr).matrix)
        cands.append((util.value(w, p), w, f"randomized response at LDP eps {lo_rr:.6g} "
                      "(largest whose worst case over the set is <= eps, bisection)"))
    cands.sort(key=lambda c: -c[0])
    return cands[0][1], cands[0][2]


def _design(uset: Any, p: np.ndarray, eps: float, utility: Any, *, allow_fallback: bool,
            designer: str, labels: Sequence[Any] | None, extra: dict[str, Any]
            ) -> Mechanism:
    from ..sets import L1Ball

    n = p.size
    if uset.n != n:
        raise ValidationError(
            f"prior has {n} entries but the uncertainty set is on {uset.n} points")
    util = _Utility(utility, n)
    optimality = "exact"
    ed = eps
    if util.linear:
        w, ed = solve_certified(lambda e: linear_design_matrix(uset, p, e, util.gain), uset,
                                eps, what=designer)
        method = "linear LP over the robust polytope (HiGHS)"
    else:
        w = None
        rays_fn = _exact_rays(uset, p) if n <= MAX_EXACT_N else None
        if rays_fn is not None:
            nrays = [0]

            def build(e: float) -> np.ndarray:
                rays = rays_fn(e)
                nrays[0] = rays.shape[1]
                if util.custom is not None:
                    return np.asarray(util.custom.design_matrix(rays, p))
                return ray_lp_matrix(rays, ray_values(rays, p, util.mu))  # type: ignore[arg-type]

            w, ed = solve_certified(build, uset, eps, what=designer)
            method = f"extreme-ray LP ({nrays[0]} candidate rays, HiGHS)"
        elif (isinstance(uset, L1Ball) and uset.radius == 0
              and np.array_equal(np.asarray(uset.center), p)):
            closed = extremal_mechanism(p, eps)
            if closed is not None:
                w = np.asarray(closed.matrix)
                method = f"closed form ({closed.designer})"
        if w is None:
            if n > MAX_EXACT_N and not allow_fallback:
                raise TooLargeError(
                    f"the exact sub-convex designer is limited to N <= {MAX_EXACT_N} "
                    f"(2^N extreme rays), got N = {n}; pass allow_fallback=True for a "
                    "certified lower bound")
            w, method = _fallback(uset, p, eps, util)
            why = (f"N > {MAX_EXACT_N}" if n > MAX_EXACT_N else
                   "exact rays are enumerated for l1-balls and boxes only, not vertex sets")
            optimality = f"lower bound ({why}): {method}"
            warnings.warn(f"{designer}: no exact sub-convex optimum for this case ({why}); "
                          f"returning a certified lower bound: {method}", PMLWarning,
                          stacklevel=3)
    params: dict[str, Any] = {
        "eps": eps,
        "beta": float(uset.radius) if isinstance(uset, L1Ball) else None,
        "utility": util.name,
        "utility_value": util.value(w, p),
        "optimality": optimality,
        "method": method,
        "design_eps": min(ed, EPS_CAP),
        "prior": p.tolist(),
    }
    if isinstance(uset, L1Ball):
        params["eps_prime"] = eps_prime(eps, uset.radius)
    params.update(extra)
    if util.linear:
        out_labels = labels if (labels is not None and w.shape[1] == n) else None
    else:
        w, out_labels = _name_outputs(w, p, labels)
    return certify(w, uset, eps, designer=designer, parameters=params,
                   input_labels=labels, output_labels=out_labels)


def _name_outputs(w: np.ndarray, p: np.ndarray, labels: Sequence[Any] | None
                  ) -> tuple[np.ndarray, list[Any] | None]:
    """Order and name the outputs of a sub-convex design.

    A sub-convex utility is invariant under permuting the columns, so the LP returns them
    in arbitrary order. Data engineers expect the privatised column to speak the input's
    language: each output is named after a distinct input, chosen to maximise
    ``P[Y = X] = sum_x p(x) W[x, sigma(x)]`` (a linear assignment, Hungarian method), and
    the columns are sorted in input order. The utility and the guarantee are unchanged.
    Only possible when there are at most N outputs (always true for a basic LP solution);
    otherwise the outputs keep integer names.
    """
    from scipy.optimize import linear_sum_assignment

    n, m = w.shape
    if m > n:
        return w, None
    rows, cols = linear_sum_assignment(-(p[:, None] * w))
    order = np.argsort(rows)
    names = list(range(n)) if labels is None else list(labels)
    return w[:, cols[order]], [names[int(r)] for r in rows[order]]


def optimal_mechanism(prior: Any, eps: Any, *, beta: Any = 0.0,
                      utility: Any = "mutual_information", allow_fallback: bool = False,
                      labels: Sequence[Any] | None = None) -> Mechanism:
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
        For ``N > 12`` with a sub-convex utility: return a certified lower bound (labelled,
        with a :class:`~pmlkit.errors.PMLWarning`) instead of raising ``TooLargeError``.
    labels
        Input labels (default ``0..N-1``).

    Returns
    -------
    Mechanism
        Certified: ``certified_eps = leakage_capacity(W, L1Ball(prior, beta)) <= eps + 1e-9``
        (else :class:`~pmlkit.errors.CertificationError`). ``parameters`` records the
        utility value, whether it is exact, the method and eps'.
    """
    from ..sets import L1Ball

    p = as_distribution(prior, "prior")
    eps = check_eps(eps)
    beta = check_radius(beta)
    return _design(L1Ball(p, beta), p, eps, utility, allow_fallback=allow_fallback,
                   designer="optimal_mechanism", labels=labels, extra={})


def optimal_mechanism_for_set(uncertainty_set: Any, eps: Any, *, prior: Any = None,
                              utility: Any = "mutual_information",
                              allow_fallback: bool = False,
                              labels: Sequence[Any] | None = None) -> Mechanism:
    """Optimal eps-PML mechanism over any :mod:`pmlkit.sets` set (l1-ball, box, their
    intersection, vertex set).

    ``prior`` (where the utility is evaluated) defaults to the set's center (l1-balls and
    their intersections with boxes); it is required for other sets. Linear utilities are
    exact for every set (:func:`exact_polytope`); sub-convex ones follow the module
    docstring."""
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
                   designer="optimal_mechanism_for_set", labels=labels, extra={})


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
                if util.linear:
                    w = linear_design_matrix(L1Ball(p, 0.0), p, ep, util.gain)
                else:
                    w = _fixed_prior_subconvex(p, p, ep, util)
                u_ep = None if w is None else util.value(w, p)
            except TooLargeError:
                u_ep = None
    return u_rr, ep, u_ep


def _apply_missing(samples: Any, missing: str) -> Any:
    """Missing samples as the label ``"(missing)"`` (category) or left out (keep)."""
    import sys

    pa = sys.modules.get("pyarrow")
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


def design_from_samples(samples: Any, eps: Any, delta: Any, *,
                        categories: Sequence[Any] | None = None,
                        utility: Any = "mutual_information", confidence: str = "l1",
                        allow_fallback: bool = False, missing: str = "error") -> DesignResult:
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
    released without protection). More than :data:`MAX_DESIGN_CATEGORIES` categories raise
    :class:`~pmlkit.errors.TooLargeError` before any LP is built.

    Returns
    -------
    DesignResult
        ``.mechanism`` (labels = the categories) and ``.guarantee``.
    """
    from ..estimation import EmpiricalDistribution, empirical_distribution, l1_radius
    from ..sets import L1Ball

    eps = check_eps(eps)
    delta = check_delta(delta)
    if not isinstance(confidence, str):
        raise ValidationError(f"confidence must be a method name, got {fmt(confidence)}")
    if missing not in ("error", "category", "keep"):
        raise ValidationError(f"missing must be 'error', 'category' or 'keep', got "
                              f"{fmt(missing)}")
    if missing != "error" and not isinstance(samples, EmpiricalDistribution):
        samples = _apply_missing(samples, missing)
        if missing == "category" and categories is not None \
                and MISSING_LABEL not in list(categories):
            categories = [*categories, MISSING_LABEL]
    if isinstance(samples, EmpiricalDistribution):
        if categories is not None and tuple(categories) != tuple(samples.categories):
            raise ValidationError(
                "categories must be omitted (or equal the distribution's) when samples is "
                "an EmpiricalDistribution")
        est = samples
    else:
        est = empirical_distribution(samples, categories=categories)
    p = np.asarray(est.p, dtype=np.float64)
    if est.n < 2:
        raise ValidationError(f"need at least 2 categories to design a mechanism, got {est.n}")
    if est.n > MAX_DESIGN_CATEGORIES:
        raise TooLargeError(
            f"the column has {est.n} distinct values; designing a mechanism over more than "
            f"{MAX_DESIGN_CATEGORIES} categories is infeasible here (the design LPs grow "
            "with the square of the count): bucket rare values into a coarser category, "
            "or use a coarser column")
    if confidence == "l1":
        beta: float | None = l1_radius(delta, est.m, est.n)
        uset: Any = L1Ball(p, beta)
        description = ("Weissman et al. l1 deviation bound with phi >= 2 (Thm weissman, "
                       "eq. betastar): P[||P - p_hat||_1 >= beta] <= delta")
    else:
        from ..confidence import confidence_set

        cs = confidence_set(est.counts, delta, method=confidence)
        uset = cs.set
        beta = float(uset.radius) if isinstance(uset, L1Ball) else None
        description = cs.description
    extra: dict[str, Any] = {"delta": delta, "m": est.m, "confidence": confidence}
    if not isinstance(samples, EmpiricalDistribution):
        from .._provenance import sample_fingerprint

        fingerprint = sample_fingerprint(samples)  # to warn if the reference is released
        if fingerprint is not None:
            extra["reference"] = fingerprint
    mech = _design(uset, p, eps, utility, allow_fallback=allow_fallback,
                   designer="design_from_samples", labels=est.categories, extra=extra)
    util = _Utility(utility, est.n)
    u_rr, ep, u_ep = _comparisons(p, eps, uset, util)
    assert mech.certified_eps is not None
    g = Guarantee(
        eps=eps, delta=delta, m=int(est.m), n=int(est.n), beta=beta, confidence=confidence,
        set=uset.to_dict(), certified_eps=float(mech.certified_eps),
        estimate=tuple(float(x) for x in p), categories=tuple(est.categories),
        utility=util.name, utility_value=float(mech.parameters["utility_value"]),
        optimality=str(mech.parameters["optimality"]), eps_prime=ep,
        utility_randomized_response=u_rr, utility_eps_prime_design=u_ep,
        description=description)
    return DesignResult(mech, g)
