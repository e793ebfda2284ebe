"""Certified mechanisms on a numeric grid, as :class:`pmlkit.Mechanism` objects whose input
and output labels are the grid values.

- :func:`ordinal_mechanism`: the PML-optimal mechanism for an ordinal loss
  (``E|X - Y|`` or ``E(X - Y)^2`` at the estimate), the LP

      min sum_x p(x) sum_y W[x, y] d(x, y)   over W in M(eps, set),

  with ``M(eps, set)`` written by :func:`pmlkit.design.exact_polytope` (the robust
  constraints pmlkit builds for l1-balls, boxes, their intersection and vertex sets; a fixed
  prior is the one-vertex set). N^2 entries of ``W``, one HiGHS call.
- :func:`laplace_mechanism`: the clamped discrete Laplace with the least noise meeting eps
  (:func:`pmlkit.numeric.laplace.calibrate_discrete_laplace`).
- :func:`gaussian_mechanism`: the rounded, clamped Gaussian, certified at its exact pure eps,
  with a post-processing-robust (eps, delta) tail statement
  (:mod:`pmlkit.numeric.tails`).
- :func:`design_numeric`: all certified candidates, and the best by the stated utility.

**HiGHS dust.** The LP solution carries entries of order 1e-15 (and up to the feasibility
tolerance, 1e-10) in outputs the optimum leaves (nearly) empty. Such a column's PML is a
ratio of noise to noise: the exact worst case of the raw matrix reads 2.9 or 4.5 where the
target is 1.0. :func:`remove_dust` zeroes every entry below :data:`DUST`, renormalises the
rows, and the result is certified exactly (:func:`pmlkit.design.certify`); if it failed
(never seen), the LP is solved again at ``eps - 1e-8``, ``eps - 1e-6``, ``eps - 1e-4``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import as_distribution, check_delta, check_eps, fmt
from ..design import certify, exact_polytope
from ..envelope import envelope_bound, tail_probability
from ..errors import CertificationError, InfeasibleError, PMLError, ValidationError
from ..mechanism import Mechanism
from ..sets import L1Ball, UncertaintySet, VertexSet
from ..worstcase import (
    certified_bound,
    certifies,
    check_uncertainty_set,
    leakage_capacity,
)
from .gaussian import calibrate_sigma
from .gaussian import clamped_channel as gaussian_channel
from .grid import NumericGrid
from .laplace import calibrate_discrete_laplace, clamped_channel
from .tails import maximal_leakage_delta, postprocessing_delta_over_set

__all__ = ["DUST", "UTILITIES", "NumericDesign", "calibrated_gaussian_mechanism",
           "design_numeric",
           "design_numeric_from_samples", "expected_loss", "gaussian_mechanism",
           "laplace_mechanism", "ordinal_matrix", "ordinal_mechanism", "remove_dust"]

#: The losses a numeric design minimises (``d(x, y) = |x - y|`` or ``(x - y)^2``).
UTILITIES = ("abs", "squared")
#: Entries below this are LP dust (:func:`remove_dust`).
DUST = 1e-10
#: LP designs use ``min(eps, EPS_CAP)`` (as :mod:`pmlkit.design`: ``M(30, set)`` is inside
#: ``M(eps, set)`` and larger coefficients exceed what HiGHS resolves).
EPS_CAP = 30.0
_MARGINS = (1e-9, 1e-8, 1e-6, 1e-4)


def _check_grid(grid: Any) -> NumericGrid:
    if not isinstance(grid, NumericGrid):
        raise ValidationError(f"grid must be a pmlkit.numeric.grid.NumericGrid, got {fmt(grid)}")
    return grid


def _check_utility(utility: Any) -> str:
    if utility not in UTILITIES:
        raise ValidationError(f"utility must be one of {', '.join(UTILITIES)}, got {fmt(utility)}")
    return str(utility)


def _resolve(grid: NumericGrid, over: Any, prior: ArrayLike | None
             ) -> tuple[UncertaintySet, NDArray[np.float64], str]:
    """(set, prior the loss is evaluated at, basis) from a set or one prior."""
    if isinstance(over, UncertaintySet) or hasattr(over, "set"):
        uset = check_uncertainty_set(over, grid.n, inputs="the grid has {n} points")
        if prior is not None:
            p = as_distribution(prior, "prior")
        elif hasattr(over, "p_hat"):
            p = as_distribution(over.p_hat, "prior")
        elif hasattr(uset, "center"):
            p = as_distribution(uset.center, "prior")
        elif isinstance(uset, VertexSet) and uset.vertices.shape[0] == 1:
            p = np.asarray(uset.vertices[0], dtype=np.float64)
        else:
            raise ValidationError(
                "prior must be given for this uncertainty set (it has no center): the loss "
                "is evaluated at it")
        basis = "given"
    else:
        p = as_distribution(over, "prior")
        uset = VertexSet(p[None, :])
        basis = "prior"
    if p.size != grid.n:
        raise ValidationError(
            f"prior has {p.size} entries but the grid has {grid.n} points; they must match")
    return uset, p, basis


def expected_loss(mechanism: ArrayLike, prior: ArrayLike, grid: NumericGrid,
                  utility: str = "abs") -> float:
    """``sum_x p(x) sum_y W[x, y] d(x, y)`` for an N x N mechanism on the grid.

    Examples
    --------
    >>> g = NumericGrid(0, 2, 1)
    >>> expected_loss(np.eye(3)[[1, 1, 1]], [0.25, 0.5, 0.25], g)   # always answers 1
    0.5
    """
    w = np.asarray(mechanism, dtype=np.float64)
    p = as_distribution(prior, "prior")
    d = _check_grid(grid).loss_matrix(_check_utility(utility))
    if w.shape != d.shape:
        raise ValidationError(f"mechanism must be {d.shape[0]} x {d.shape[1]} on this grid, "
                              f"got shape {w.shape}")
    return float(p @ (w * d).sum(axis=1))


def remove_dust(w: ArrayLike, threshold: float = DUST) -> NDArray[np.float64]:
    """Zero every entry below ``threshold`` (negative LP noise included) and divide each row
    by its sum (module docstring). The result must be certified again.

    Examples
    --------
    >>> print(remove_dust([[0.5, 0.5, 3e-15], [1e-16, 1.0, 0.0]]))
    [[0.5 0.5 0. ]
     [0.  1.  0. ]]
    """
    a = np.array(w, dtype=np.float64)
    a[a < threshold] = 0.0
    s = a.sum(axis=1)
    if np.any(np.abs(s - 1.0) > 1e-6):
        raise PMLError(f"LP solution rows sum to {s.min()!r}..{s.max()!r}, not 1: solver "
                       "failure")
    return np.asarray(a / s[:, None], dtype=np.float64)


def ordinal_matrix(grid: NumericGrid, over: Any, eps: float, *, prior: ArrayLike | None = None,
                   utility: str = "abs", clean: bool = True) -> NDArray[np.float64]:
    """The LP optimum of the module docstring (N x N, rows sum to 1), dust removed unless
    ``clean=False`` (then HiGHS' raw solution, rows renormalised: for tests and study only).

    Not certified here: :func:`ordinal_mechanism` certifies.

    Examples
    --------
    At ``eps = 0`` every row is the same: the best constant answer (the median for
    ``"abs"``):

    >>> w = ordinal_matrix(NumericGrid(0, 2, 1), [0.2, 0.5, 0.3], 0.0)
    >>> print(np.round(w, 6))
    [[0. 1. 0.]
     [0. 1. 0.]
     [0. 1. 0.]]
    """
    from scipy.optimize import linprog

    g = _check_grid(grid)
    e = check_eps(eps)
    util = _check_utility(utility)
    uset, p, _ = _resolve(g, over, prior)
    poly = exact_polytope(uset, min(e, EPS_CAP), n_outputs=g.n)
    d = g.loss_matrix(util)
    c = np.zeros(poly.n_vars)
    c[poly.layout["W"]] = (p[:, None] * d / max(float(d.max()), 1e-300)).ravel()
    res = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                  bounds=poly.bounds, method="highs",
                  options={"primal_feasibility_tolerance": 1e-10})
    if res.status == 2:
        raise InfeasibleError(f"no mechanism is {e!r}-PML over the set (LP infeasible)")
    if res.status != 0 or res.x is None:
        raise PMLError(f"ordinal design LP failed: {res.message}")
    w = poly.matrix(res.x)
    if clean:
        return remove_dust(w)
    w = np.maximum(w, 0.0)
    return np.asarray(w / w.sum(axis=1, keepdims=True), dtype=np.float64)


def _params(grid: NumericGrid, extra: dict[str, Any]) -> dict[str, Any]:
    out = {"grid": grid.to_dict()}
    out.update(extra)
    return out


def ordinal_mechanism(grid: NumericGrid, over: Any, eps: float, *,
                      prior: ArrayLike | None = None, utility: str = "abs",
                      parameters: dict[str, Any] | None = None) -> Mechanism:
    """The certified PML-optimal ordinal mechanism (module docstring).

    Parameters
    ----------
    grid
        The column's :class:`~pmlkit.numeric.grid.NumericGrid`.
    over
        An uncertainty set over the grid (``L1Ball``, ``Box``, ``L1BoxSet``, ``VertexSet``,
        or a ``ConfidenceSet``), or one prior.
    eps
        Target ``>= 0``.
    prior
        Where the loss is evaluated (default: the set's center or estimate).
    utility
        ``"abs"`` or ``"squared"``.

    Examples
    --------
    >>> g = NumericGrid(0, 4, 1)
    >>> m = ordinal_mechanism(g, [0.1, 0.2, 0.4, 0.2, 0.1], 1.0)
    >>> m.input_labels == g.labels, m.certified_eps <= 1.0 + 1e-9
    (True, True)
    >>> m.provenance.designer
    'numeric.ordinal_lp(abs)'
    """
    g = _check_grid(grid)
    e = check_eps(eps)
    util = _check_utility(utility)
    uset, p, basis = _resolve(g, over, prior)
    cert = math.nan
    for margin in _MARGINS:
        ed = max(e - margin, 0.0)
        w = ordinal_matrix(g, uset, ed, prior=p, utility=util)
        cert = float(leakage_capacity(w, uset))
        if certifies(w, uset, e):  # a tie within rounding counts against the design
            break
    else:
        raise CertificationError(
            f"ordinal design: the cleaned LP solution's worst-case eps over the set is "
            f"{cert!r}, above the target eps {e!r}")
    params = _params(g, {"eps": e, "utility": util, "expected_loss": expected_loss(w, p, g, util),
                         "design_eps": min(ed, EPS_CAP), "dust_threshold": DUST,
                         "prior": p.tolist(), "beta": float(uset.radius)
                         if isinstance(uset, L1Ball) else None,
                         "method": "ordinal LP over pmlkit.design.exact_polytope (HiGHS), "
                                   "dust removed, certified exactly"})
    params.update(parameters or {})
    return certify(w, uset, e, designer=f"numeric.ordinal_lp({util})", parameters=params,
                   input_labels=g.labels, output_labels=g.labels,
                   basis=None if "delta" in params else basis)


def laplace_mechanism(grid: NumericGrid, over: Any, eps: float, *,
                      prior: ArrayLike | None = None,
                      parameters: dict[str, Any] | None = None) -> Mechanism:
    """The clamped discrete Laplace with the least noise meeting ``eps`` over ``over``
    (:func:`pmlkit.numeric.laplace.calibrate_discrete_laplace`), certified.

    Examples
    --------
    >>> g = NumericGrid(0, 4, 1)
    >>> m = laplace_mechanism(g, [0.1, 0.2, 0.4, 0.2, 0.1], 1.0)
    >>> m.provenance.designer, m.certified_eps <= 1.0
    ('numeric.discrete_laplace', True)
    """
    g = _check_grid(grid)
    e = check_eps(eps)
    uset, p, basis = _resolve(g, over, prior)
    for margin in _MARGINS:  # calibrated just below eps: a tie counts against it
        cal = calibrate_discrete_laplace(g.n, max(e - margin, 0.0), uset, clamp=True)
        w = clamped_channel(g.n, cal.r)
        if certifies(w, uset, e):
            break
    params = _params(g, {"eps": e, "r": cal.r, "scale": cal.scale_steps * g.step_value,
                         "clamp": True, "prior": p.tolist(),
                         "expected_loss_abs": expected_loss(w, p, g, "abs"),
                         "expected_loss_squared": expected_loss(w, p, g, "squared")})
    params.update(parameters or {})
    return certify(w, uset, e, designer="numeric.discrete_laplace", parameters=params,
                   input_labels=g.labels, output_labels=g.labels,
                   basis=None if "delta" in params else basis)


def gaussian_mechanism(grid: NumericGrid, sigma: float, over: Any, *, tail_eps: float,
                       prior: ArrayLike | None = None) -> Mechanism:
    """The Gaussian of standard deviation ``sigma`` (column units) rounded to the grid and
    clamped, certified at its exact pure eps (the worst case over ``over``), with the
    post-processing-robust tail statement ``P[pml(g(Y)) > tail_eps] <= tail_delta`` for every
    post-processing ``g`` and every distribution of the set
    (:func:`pmlkit.numeric.tails.postprocessing_delta_over_set`, never above the maximal
    leakage bound ``exp(ML - tail_eps)``) recorded in the provenance, beside
    ``tail_survives_post_processing`` (always true for this statement: it is computed for
    every post-processing), ``tail_envelope`` (a level every post-processing exceeds with
    probability at most ``tail_delta``, :func:`pmlkit.envelope.envelope_bound`, never
    above ``tail_eps`` nor the pure eps; ``tail_envelope_method`` names the bound) and,
    for comparison, ``plain_tail_delta_at_prior`` (the output's own tail at the prior,
    which does not survive post-processing).

    Examples
    --------
    >>> g = NumericGrid(0, 4, 1)
    >>> m = gaussian_mechanism(g, 2.0, [0.1, 0.2, 0.4, 0.2, 0.1], tail_eps=0.5)
    >>> d = m.provenance.details
    >>> 0 < d["tail_delta"] <= 1, d["tail_survives_post_processing"]
    (True, True)
    >>> d["plain_tail_delta_at_prior"] <= d["tail_delta"], d["tail_envelope"] <= 0.5
    (True, True)
    """
    from .._validation import check_real

    g = _check_grid(grid)
    s = check_real(sigma, "sigma", low=0.0, low_open=True)
    te = check_eps(tail_eps, "tail_eps")
    uset, p, basis = _resolve(g, over, prior)
    w = gaussian_channel(g.n, s / g.step_value)
    pure = certified_bound(w, uset)  # the worst case raised by its rounding margin
    delta = postprocessing_delta_over_set(w, uset, te)
    env = envelope_bound(w, uset, delta, eps=te)
    params = _params(g, {"eps": pure, "sigma": s, "tail_eps": te, "tail_delta": delta,
                         "tail_delta_markov": maximal_leakage_delta(w, te),
                         "tail_statement": "P[pml(g(Y)) > tail_eps] <= tail_delta for every "
                                           "post-processing g and every distribution of "
                                           "the set",
                         "tail_survives_post_processing": bool(env.survives_post_processing),
                         "tail_envelope": min(env.eps, pure),
                         "tail_envelope_method": env.method if env.eps < pure else
                                                 "pure worst case",
                         "plain_tail_delta_at_prior": tail_probability(w, p, te),
                         "prior": p.tolist()})
    return certify(w, uset, pure, designer="numeric.gaussian", parameters=params,
                   input_labels=g.labels, output_labels=g.labels, basis=basis)


def calibrated_gaussian_mechanism(grid: NumericGrid, over: Any, eps: float, *, delta: float,
                                  prior: ArrayLike | None = None) -> Mechanism:
    """The rounded, clamped Gaussian with the least noise whose post-processing-robust tail
    bound over ``over`` at ``eps`` is ``<= delta``
    (:func:`pmlkit.numeric.gaussian.calibrate_sigma`), as :func:`gaussian_mechanism`.

    On a bounded grid the bound is 0 as soon as the pure worst case is below ``eps`` and
    jumps to a substantial value just above it, so for small ``delta`` the calibrated
    Gaussian is in fact pure ``eps``-PML (``docs/numeric.md``).

    Examples
    --------
    >>> g = NumericGrid(0, 4, 1)
    >>> m = calibrated_gaussian_mechanism(g, [0.1, 0.2, 0.4, 0.2, 0.1], 1.0, delta=1e-6)
    >>> m.provenance.details["tail_delta"] <= 1e-6
    True
    """
    g = _check_grid(grid)
    e = check_eps(eps)
    dl = check_delta(delta)
    uset, p, _ = _resolve(g, over, prior)
    sig, _ = calibrate_sigma(g.n, e, dl, uset)
    return gaussian_mechanism(g, sig * g.step_value, over, tail_eps=e, prior=p)


@dataclass(frozen=True)
class NumericDesign:
    """The certified candidates of :func:`design_numeric` and the best one.

    Attributes
    ----------
    best
        The candidate with the smallest expected loss at the estimate.
    candidates
        ``{name: Mechanism}`` (``"ordinal_lp"``, and ``"discrete_laplace"`` when eps > 0).
    losses
        ``{name: expected loss}`` under ``utility``.
    seconds
        ``{name: design time in seconds}``.
    utility
        ``"abs"`` or ``"squared"``.
    encoding
        The reference sample's clamp/round counts (:meth:`NumericGrid.encode`), or ``None``.

    Examples
    --------
    >>> d = design_numeric(NumericGrid(0, 3, 1), [0.1, 0.4, 0.4, 0.1], 1.0, utility="squared")
    >>> sorted(d.candidates), d.utility
    (['discrete_laplace', 'ordinal_lp'], 'squared')
    """

    best: Mechanism
    candidates: dict[str, Mechanism]
    losses: dict[str, float]
    seconds: dict[str, float]
    utility: str
    encoding: dict[str, int] | None = field(default=None)


def design_numeric(grid: NumericGrid, over: Any, eps: float, *, prior: ArrayLike | None = None,
                   utility: str = "abs",
                   parameters: dict[str, Any] | None = None) -> NumericDesign:
    """Design every candidate (ordinal LP, calibrated discrete Laplace), each certified over
    ``over``, and pick the best by ``utility`` (expected loss at the estimate).

    ``eps = 0`` is accepted, as by every designer: no finite Laplace noise reaches it, so the
    only candidate is the ordinal LP's mechanism, whose rows are all equal (it releases
    nothing about the value).

    Examples
    --------
    >>> g = NumericGrid(0, 4, 1)
    >>> d = design_numeric(g, [0.1, 0.2, 0.4, 0.2, 0.1], 1.0)
    >>> d.best is d.candidates["ordinal_lp"], d.losses["ordinal_lp"] <= d.losses["discrete_laplace"]
    (True, True)
    """
    g = _check_grid(grid)
    util = _check_utility(utility)
    _, p, _ = _resolve(g, over, prior)
    cands: dict[str, Mechanism] = {}
    secs: dict[str, float] = {}
    t0 = time.perf_counter()
    cands["ordinal_lp"] = ordinal_mechanism(g, over, eps, prior=p, utility=util,
                                            parameters=parameters)
    secs["ordinal_lp"] = time.perf_counter() - t0
    if check_eps(eps) > 0:  # eps = 0: no finite Laplace noise, the ordinal LP's constant
        t0 = time.perf_counter()
        cands["discrete_laplace"] = laplace_mechanism(g, over, eps, prior=p,
                                                      parameters=parameters)
        secs["discrete_laplace"] = time.perf_counter() - t0
    losses = {k: expected_loss(np.asarray(m), p, g, util) for k, m in cands.items()}
    best = min(losses, key=lambda k: (losses[k], k != "ordinal_lp"))
    return NumericDesign(cands[best], cands, losses, secs, util)


def design_numeric_from_samples(values: ArrayLike, grid: NumericGrid, eps: float, *,
                                delta: float, confidence: str = "l1",
                                utility: str = "abs") -> NumericDesign:
    """From a reference sample: values -> grid codes (clamp/round, counted) -> confidence set
    (:func:`pmlkit.confidence.confidence_set`, failure probability ``delta``) ->
    :func:`design_numeric` over it. The guarantee's basis is ``"sample"``.

    Examples
    --------
    >>> g = NumericGrid(0, 4, 1)
    >>> vals = np.repeat([0, 1, 2, 3, 4, 7], [10, 20, 40, 20, 9, 1])
    >>> d = design_numeric_from_samples(vals, g, 1.0, delta=0.05)
    >>> d.encoding["clamped_high"], d.best.guarantee.basis
    (1, 'sample')
    """
    from ..confidence import confidence_set

    g = _check_grid(grid)
    dl = check_delta(delta)
    enc = g.encode(values)
    counts = np.bincount(enc.codes, minlength=g.n)
    cs = confidence_set(counts, dl, confidence=confidence)
    params = {"delta": dl, "m": int(counts.sum()), "confidence": cs.method,
              "reference_encoding": enc.to_dict()}
    d = design_numeric(g, cs, eps, prior=cs.p_hat, utility=utility, parameters=params)
    return NumericDesign(d.best, d.candidates, d.losses, d.seconds, d.utility, enc.to_dict())
