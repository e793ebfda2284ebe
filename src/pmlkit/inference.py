"""The analyst's side: estimate the distribution of the true values from released data.

``n`` records released through an ``N x M`` mechanism ``W`` give output counts
``c ~ Multinomial(n, q)`` with ``q = W^T P`` (``q_y = sum_x P(x) W[x, y]``). The released
column tells nothing more about ``P`` than ``c``, so every estimator here works on ``c``.

Estimators
----------
``method="mle"`` (default): maximum likelihood over the probability simplex,
``max_P  L(P) = sum_y c_y log q_y``. ``L`` is concave, so any local maximum is global.
It is computed by :func:`pmlkit.mle.channel_mle`: the EM iteration (iterative Bayesian
update) ``P'(x) = P(x) g_x / n`` with ``g_x = sum_y c_y W[x, y] / q_y``, started at the
uniform distribution and accelerated by SQUAREM, then (rank ``N``) projected Newton steps,
which converge at large ``N`` where the EM alone stalls. Because ``sum_x P(x) g_x = n``,
the Frank-Wolfe gap of the concave objective is ``max_x g_x - n``: it bounds
``L(P_hat) - L(P)`` from above, so stopping when ``max_x g_x / n - 1 <= tol``
*certifies* that the mean log-likelihood per record is within ``tol`` of its maximum
(reported as ``converged``, with ``iterations``).

``method="inversion"``: the unbiased least-squares inversion, ``min ||W^T P - c/n||^2``
subject to ``sum P = 1`` (for a square ``W``: ``P = W^{-T} c / n``; needs rank ``W = N``).
It is linear in ``c / n`` and the constraint holds for the true ``P``, so ``E[P] = P``
exactly; its entries can be negative: ``in_simplex`` says whether it stayed in the
simplex.

Identification
--------------
``W^T v = 0`` forces ``sum v = 0`` (rows of ``W`` sum to 1), so ``P`` is determined by
``q`` exactly when ``rank W = N``. Otherwise (merged inputs, e.g. two equal rows) only
``W^T P`` is identified; ``P(x)`` itself is identified when the indicator ``e_x`` lies in
the column space of ``W`` (``identified_categories``).

Intervals
---------
Identified mechanisms, ``method="mle"``: the hull of two likelihood intervals, per
category (``interval_method = "profile likelihood + empirical likelihood"``):

- **profile likelihood** over the simplex,
  ``{t : max_{P(x) = t} L(P) >= L(P_hat) - z/2}`` with ``z`` the ``confidence`` quantile
  of chi-square with one degree of freedom (Wilks). The profile ``t -> max_{P(x)=t} L``
  is concave, so each end is found by bisection; each evaluation runs the EM restricted
  to ``P(x) = t`` and stops as soon as its own Frank-Wolfe gap decides on which side of
  the threshold the point lies; an undecided point is counted inside (the interval only
  widens) and each reported end is a point known to be outside. When the true ``P(x)``
  is 0 the likelihood-ratio statistic is a 50:50 mixture of 0 and chi-square(1), so the
  interval is conservative there (about 97.5% instead of 95%).
- **empirical likelihood** (Owen 1988) for ``P(x) = E[a_x(Y)]``, the mean of the
  unbiased inversion's linear functional of one released output (``a_x(y) = B[x, y] +
  k_x`` below), over distributions on the observed outputs. Its nuisance directions are
  not tied to the simplex. Where other categories are near 0 and ``n`` is small, the
  simplex constraint makes the profile statistic stochastically larger than
  chi-square(1) and the profile interval alone undercovers (measured: 0.91 to 0.92 in
  cells at n = 100 to 300 with N = 5 and 10); the hull restores at least the nominal
  level there (0.94 to 0.96 in the same cells) at the price of wider intervals
  elsewhere (mean coverage about 0.97).

Both are pointwise (one category at a time), not simultaneous. Beyond
``PROFILE_MAX_CATEGORIES`` categories only the empirical-likelihood interval is computed
(``interval_method = "empirical likelihood"``): the profile's cost grows as ``N^2 M`` per
step while the empirical likelihood's grows as ``N M``; both are calibrated by the same
chi-square(1) limit, and the empirical-likelihood interval is the one of the two whose
calibration does not degrade near the simplex's boundary.

``intervals=False`` skips the intervals (``lower`` and ``upper`` are NaN, ``interval_method
= "none"``): the point estimate alone.

``method="inversion"``: Wald intervals ``P_x +- z_{(1+conf)/2} sd_x`` with the exact
covariance of the inversion ``P = B c/n + k``, ``B (diag q - q q^T) B^T / n``, evaluated
at ``q = c / n``, clipped to ``[0, 1]``. They are a normal approximation: poor
for small ``n`` or categories near 0.

Mechanisms of rank ``< N`` (``identified=False``): the **identified set** of each
``P(x)``. A simultaneous confidence box for ``q`` (Clopper-Pearson at level
``1 - (1 - confidence) / M`` for each output, Bonferroni) holds the true ``q`` with
probability ``>= confidence``; the reported ``[lower, upper]`` are the min and max of
``P(x)`` over ``{P in simplex : W^T P in box}`` (one HiGHS LP per end; the box is
enlarged to contain the MLE's ``q`` if needed, which only widens it). These hold
simultaneously for all categories. ``estimate`` is NaN for categories that are not
identified.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import check_count, check_real, fmt, no_duplicate_keys
from .design.estimation import RANK_TOL  # rank tolerance, shared with the design side
from .errors import DataError, ValidationError
from .mechanism import Mechanism, as_matrix

__all__ = [
    "DistributionEstimate",
    "GroupedEstimates",
    "estimate_distribution",
    "estimate_from_counts",
    "find_joint_release",
    "find_mechanism",
    "identifiable",
    "output_codes",
    "released_columns",
]

#: Default convergence tolerance of the EM (mean log-likelihood per record, in nats).
EM_TOL = 1e-10
#: Iteration cap of the EM for the point estimate.
EM_MAX_ITER = 200_000
#: Bisection steps per interval end (width 2^-30 of the search range).
PROFILE_STEPS = 30
#: Bisection stops once an end is bracketed this tightly (the reported end is the outer,
#: certified-outside point of the bracket).
PROFILE_XTOL = 1e-6
#: ... or to this fraction of the distance between the estimate and the end.
PROFILE_RTOL = 1e-3
#: EM iterations allowed per profile evaluation before counting the point inside.
PROFILE_MAX_ITER = 600
#: A profile point within this fraction of the likelihood-ratio margin is counted inside.
PROFILE_SLACK = 0.02
#: The profile-likelihood half of the intervals is computed up to this many categories;
#: beyond, its cost (2N constrained maximisations over N categories, each evaluation
#: O(N M)) grows as N^2 M per step and the intervals are the empirical-likelihood ones
#: alone (each O(M) per step; measured at N = 1000, n = 10^6: about the cost of the
#: point estimate).
PROFILE_MAX_CATEGORIES = 100

METHODS = ("mle", "inversion")


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class DistributionEstimate:
    """The estimated distribution of the true values behind one released column.

    Attributes
    ----------
    categories
        The mechanism's input labels (the true categories), in order.
    estimate
        Estimated ``P(x)`` per category (read-only; NaN where not identified).
    lower, upper
        Interval ends per category at level ``confidence`` (see ``interval_method``).
    n
        Number of released records.
    method
        ``"mle"`` or ``"inversion"``.
    identified
        Whether the mechanism has rank ``N`` (the distribution is point-identified).
    identified_categories
        Per category: whether ``P(x)`` is identified (all ``True`` when ``identified``).
    interval_method
        ``"profile likelihood + empirical likelihood"``, ``"wald"`` or
        ``"identified set (...)"``.
    confidence
        The confidence level of the intervals.
    counts
        Output counts ``c_y`` (read-only), in the order of ``output_labels``.
    output_labels
        The mechanism's output labels.
    in_simplex
        Whether ``estimate`` is a probability vector (``False`` only for an inversion
        with negative entries).
    converged, iterations, tolerance
        EM diagnostics (``method="mle"``): certified convergence to ``tolerance`` in mean
        log-likelihood per record, after ``iterations`` EM steps (``None`` for inversion).
    log_likelihood
        ``sum_y c_y log q_y`` at the estimate (``-inf`` if impossible; ``None`` for an
        inversion outside the simplex).
    intervals
        Whether ``lower`` and ``upper`` were computed (``False``: point estimate only,
        ``lower`` and ``upper`` NaN, ``null`` in :meth:`to_dict`).

    Examples
    --------
    Binary randomized response keeping the value with probability 0.75: 60 of 100
    released rows say ``1``, so ``q = 0.6 = 0.25 + 0.5 P(1)`` and ``P(1) = 0.7``:

    >>> from pmlkit.inference import estimate_from_counts
    >>> r = estimate_from_counts([40, 60], [[0.75, 0.25], [0.25, 0.75]])
    >>> r.estimate.round(3).tolist(), r.identified, r.n
    ([0.3, 0.7], True, 100)
    >>> bool(r.lower[1] < 0.7 < r.upper[1])
    True
    """

    categories: tuple[Any, ...]
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n: int
    method: str
    identified: bool
    identified_categories: np.ndarray
    interval_method: str
    confidence: float
    counts: np.ndarray
    output_labels: tuple[Any, ...]
    in_simplex: bool = True
    converged: bool | None = None
    iterations: int | None = None
    tolerance: float | None = None
    log_likelihood: float | None = None
    intervals: bool = True

    def __post_init__(self) -> None:
        for name in ("estimate", "lower", "upper", "counts"):
            object.__setattr__(self, name, _ro(getattr(self, name)))
        ic = np.array(self.identified_categories, dtype=bool, copy=True)
        ic.setflags(write=False)
        object.__setattr__(self, "identified_categories", ic)

    def to_frame(self) -> Any:
        """A tidy :class:`pandas.DataFrame`: one row per category."""
        import pandas as pd

        return pd.DataFrame({"category": list(self.categories), "estimate": self.estimate,
                             "lower": self.lower, "upper": self.upper,
                             "identified": self.identified_categories})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (non-finite floats as strings ``"nan"``)."""
        def num(v: float) -> Any:
            return float(v) if math.isfinite(v) else str(v)

        def bound(v: float) -> Any:
            return num(v) if self.intervals else None

        return {
            "n": self.n, "method": self.method, "identified": self.identified,
            "interval_method": self.interval_method, "confidence": self.confidence,
            "in_simplex": self.in_simplex, "converged": self.converged,
            "iterations": self.iterations, "tolerance": self.tolerance,
            "log_likelihood": None if self.log_likelihood is None
            else num(self.log_likelihood), "intervals": self.intervals,
            "categories": [
                {"category": c, "estimate": num(e), "lower": bound(lo), "upper": bound(up),
                 "identified": bool(i)}
                for c, e, lo, up, i in zip(self.categories, self.estimate, self.lower,
                                           self.upper, self.identified_categories,
                                           strict=True)],
            "output_counts": {str(k): int(v) for k, v in
                              zip(self.output_labels, self.counts, strict=True)},
        }

    def __str__(self) -> str:
        pct = f"{100 * self.confidence:g}%"
        width = max([8] + [len(str(c)) for c in self.categories])
        how = (f"{pct} {self.interval_method} intervals" if self.intervals
               else "point estimate only, no intervals")
        lines = [f"estimated distribution from n = {self.n} released records "
                 f"({self.method}; {how})"]
        if not self.identified:
            lines.append("the mechanism merges inputs (rank < N): NaN estimates are not "
                         "identified; their bounds are the identified set")
        if not self.in_simplex:
            lines.append("note: the inversion left the simplex (some estimates < 0)")
        if self.converged is False:
            lines.append(f"warning: EM did not certify convergence to {self.tolerance:g} "
                         f"after {self.iterations} iterations")
        if not self.intervals:
            lines.append(f"{'category':<{width}}  {'estimate':>9}")
            lines.extend(f"{c!s:<{width}}  {e:>9.5f}"
                         for c, e in zip(self.categories, self.estimate, strict=True))
            return "\n".join(lines)
        lines.append(f"{'category':<{width}}  {'estimate':>9}  {'lower':>9}  {'upper':>9}")
        for c, e, lo, up in zip(self.categories, self.estimate, self.lower, self.upper,
                                strict=True):
            lines.append(f"{c!s:<{width}}  {e:>9.5f}  {lo:>9.5f}  {up:>9.5f}")
        return "\n".join(lines)


@dataclass(frozen=True, eq=False)
class GroupedEstimates(Mapping[Any, DistributionEstimate]):
    """One :class:`DistributionEstimate` per group of a non-private column (a mapping
    ``group -> estimate``, groups in sorted order when sortable). Intervals are per group
    and per category (pointwise).

    Examples
    --------
    Group ``a`` released 30 ``yes`` of 50 (``q = 0.6``, so ``P(yes) = 0.7``); group ``b``
    10 of 50 (``q = 0.2``, below the 0.25 a group without any ``yes`` would give: the
    maximum likelihood is on the boundary, ``P(yes) = 0``):

    >>> from pmlkit import Mechanism, estimate_distribution
    >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]], ("no", "yes"), ("no", "yes"))
    >>> released = ["yes"] * 30 + ["no"] * 20 + ["yes"] * 10 + ["no"] * 40
    >>> g = estimate_distribution(released, mech, by=["a"] * 50 + ["b"] * 50)
    >>> [(k, round(float(g[k].estimate[1]), 3)) for k in g]
    [('a', 0.7), ('b', 0.0)]
    """

    by: str | None
    groups: tuple[Any, ...]
    estimates: tuple[DistributionEstimate, ...]
    _index: dict[Any, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {g: i for i, g in enumerate(self.groups)})

    def __getitem__(self, key: Any) -> DistributionEstimate:
        try:
            return self.estimates[self._index[key]]
        except KeyError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[Any]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def to_frame(self) -> Any:
        """Tidy :class:`pandas.DataFrame`: one row per (group, category), with ``n``."""
        import pandas as pd

        frames = []
        for g, est in zip(self.groups, self.estimates, strict=True):
            f = est.to_frame()
            f.insert(0, self.by or "group", [g] * len(f))
            f["n"] = est.n
            frames.append(f)
        if not frames:
            return pd.DataFrame(columns=[self.by or "group", "category", "estimate", "lower",
                                         "upper", "identified", "n"])
        return pd.concat(frames, ignore_index=True)

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "groups": [{"group": g, **e.to_dict()}
                                          for g, e in zip(self.groups, self.estimates,
                                                          strict=True)]}

    def __str__(self) -> str:
        return "\n\n".join(f"{self.by or 'group'} = {g!s}\n{e}"
                           for g, e in zip(self.groups, self.estimates, strict=True))


# -- identification -------------------------------------------------------------------

def _rank(w: np.ndarray) -> int:
    from .design.estimation import mechanism_rank

    return mechanism_rank(w)


def identifiable(mechanism: ArrayLike | Mechanism) -> NDArray[np.bool_]:
    """Per input category: whether ``P(x)`` is determined by the output distribution
    ``W^T P``, i.e. whether ``e_x`` lies in the column space of ``W``. All ``True``
    exactly when ``rank W = N``.

    Examples
    --------
    Inputs 0 and 1 have the same row: only their total is identified; input 2 is
    (``e_2`` is the difference of the two columns divided by 0.8):

    >>> from pmlkit.inference import identifiable
    >>> identifiable([[0.5, 0.5], [0.5, 0.5], [0.1, 0.9]]).tolist()
    [False, False, True]
    """
    w = as_matrix(mechanism)
    n = w.shape[0]
    if _rank(w) == n:
        return np.ones(n, dtype=bool)
    u, s, _ = np.linalg.svd(w, full_matrices=False)
    basis = u[:, s > RANK_TOL * max(1.0, s[0])]
    resid = np.eye(n) - basis @ basis.T  # projection of e_x off the column space
    return np.asarray(np.linalg.norm(resid, axis=0) <= 1e-8)


# -- the EM ---------------------------------------------------------------------------

def _loglik(c: np.ndarray, q: np.ndarray) -> float:
    pos = c > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(c[pos] * np.log(q[pos])))


def _em(w: np.ndarray, c: np.ndarray, tol: float, max_iter: int
        ) -> tuple[np.ndarray, int, bool]:
    """Maximum likelihood over the simplex; returns (P, iterations, converged).

    :func:`pmlkit.mle.channel_mle`: SQUAREM-accelerated EM, then projected Newton steps
    when the mechanism has rank ``N`` (the maximiser is then unique). For a mechanism that
    merges inputs the EM alone runs from the uniform start (one maximiser among many)."""
    from .mle import channel_mle

    return channel_mle(c, w, tol=tol, max_iter=max_iter, newton=_rank(w) == w.shape[0])


def _profile_decide(wp: np.ndarray, cn: np.ndarray, xs: np.ndarray, t: np.ndarray,
                    s: np.ndarray, h: float, slack: float, max_iter: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """For each problem k: is ``max_{P(xs[k]) = t[k]} L/n >= h``? (vectorised EM).

    ``s`` (K x N) is the warm start for the other categories (rescaled here to sum
    ``1 - t``); returns (inside, s). A point whose Frank-Wolfe gap falls below ``slack``
    without a decision, or is undecided after ``max_iter`` steps, counts as inside (the
    interval can only widen): every point called outside is certified outside."""
    k, n = s.shape
    rows = np.arange(k)
    mask = np.ones((k, n))
    mask[rows, xs] = 0.0
    s = s * mask
    tot = s.sum(axis=1, keepdims=True)
    free = (1.0 - t)[:, None]
    # keep the warm start strictly positive so EM can move every coordinate
    s = np.where(tot > 0, s / np.where(tot > 0, tot, 1.0), mask / np.maximum(
        mask.sum(axis=1, keepdims=True), 1.0))
    s = 0.999 * s + 0.001 * mask / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
    s = s * free
    a = t[:, None] * wp[xs]  # fixed part of q (K x M+)
    fr = free[:, 0]

    def evaluate(rows: np.ndarray, sv: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray]:
        """Mean log-likelihood, Frank-Wolfe gap and EM step at ``sv`` for ``rows``."""
        q = a[rows] + sv @ wp
        # q_y = 0 for an observed y gives L = -inf (then nan/inf below, rejected by caller)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            val = (cn * np.log(q)).sum(axis=1)
            g = (cn / q) @ wp.T  # K' x N
            g *= mask[rows]
            sg = sv * g
            tot = sg.sum(axis=1)
            gap = fr[rows] * g.max(axis=1) - tot
            nxt = sg / np.where(tot > 0, tot, 1.0)[:, None] * free[rows]
        return val, gap, nxt

    inside = np.zeros(k, dtype=bool)
    active = np.ones(k, dtype=bool)
    it = 0
    while True:
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        val, gap, s1 = evaluate(idx, s[idx])
        ok = np.isfinite(val) & np.isfinite(gap)
        # L = -inf (an observed output nobody but x can produce, at t = 0): outside
        no = ~ok | (val + gap < h)
        yes = ~no & ((val >= h) | (gap <= slack))
        inside[idx[yes]] = True
        active[idx[yes | no]] = False
        if it >= max_iter:
            break
        keep = ~(yes | no)
        idx, s0, s1 = idx[keep], s[idx[keep]], s1[keep]
        if idx.size == 0:
            break
        # SQUAREM: two EM steps, extrapolate, keep the better of p2 and the extrapolation
        val1, _, s2 = evaluate(idx, s1)
        r = s1 - s0
        v = s2 - s1 - r
        nv = np.linalg.norm(v, axis=1)
        nr = np.linalg.norm(r, axis=1)
        alpha = np.where(nv > 0, -nr / np.where(nv > 0, nv, 1.0), -1.0)
        alpha = np.minimum(alpha, -1.0)[:, None]
        cand = s0 - 2 * alpha * r + alpha * alpha * v
        valid = np.all(cand >= 0, axis=1)
        cand = np.where(valid[:, None], cand, s2)
        val2 = evaluate(idx, s2)[0]
        valc = evaluate(idx, cand)[0]
        better = valid & np.isfinite(valc) & (valc >= val2)
        s[idx] = np.where(better[:, None], cand, s2)
        del val1
        it += 3
    inside[active] = True  # undecided: count inside (conservative)
    return inside, s


def _profile_intervals(w: np.ndarray, c: np.ndarray, p_hat: np.ndarray, confidence: float,
                       steps: int = PROFILE_STEPS, max_iter: int = PROFILE_MAX_ITER
                       ) -> tuple[np.ndarray, np.ndarray]:
    from scipy.stats import chi2

    pos = c > 0
    wp = w[:, pos]
    n_rec = float(c.sum())
    cn = c[pos] / n_rec
    n = w.shape[0]
    margin = float(chi2.ppf(confidence, 1)) / (2.0 * n_rec)
    h = _loglik(c, p_hat @ w) / n_rec - margin
    slack = PROFILE_SLACK * margin
    xs = np.concatenate([np.arange(n), np.arange(n)])
    lower_side = np.arange(2 * n) < n
    est = p_hat[xs]
    s0 = np.tile(p_hat, (2 * n, 1))
    # the ends of the range first: t = 0 for the lower ends, t = 1 for the upper ends
    t_end = np.where(lower_side, 0.0, 1.0)
    inside, s = _profile_decide(wp, cn, xs, t_end, s0, h, slack, max_iter)
    # search interval [lo, hi] between a point outside and a point inside
    out_pt = t_end.copy()
    in_pt = est.copy()
    done = inside.copy()
    for _ in range(steps):
        width = np.abs(in_pt - out_pt)
        act = np.flatnonzero(~done & (width > np.maximum(
            PROFILE_XTOL, PROFILE_RTOL * np.abs(in_pt - est))))
        if act.size == 0:
            break
        mid = 0.5 * (out_pt[act] + in_pt[act])
        ins, s_new = _profile_decide(wp, cn, xs[act], mid, s[act], h, slack,
                                     max_iter)
        s[act] = s_new
        in_pt[act] = np.where(ins, mid, in_pt[act])
        out_pt[act] = np.where(ins, out_pt[act], mid)
    ends = np.where(done, t_end, out_pt)
    return ends[:n], ends[n:]


def _identified_set(w: np.ndarray, c: np.ndarray, q_mle: np.ndarray, confidence: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Simultaneous bounds on each P(x) over {P : W^T P in a Clopper-Pearson box}."""
    from scipy.optimize import linprog

    from .confidence import clopper_pearson_lower, clopper_pearson_upper

    n_in, m = w.shape
    n_rec = float(c.sum())
    a = (1.0 - confidence) / m
    lo = clopper_pearson_lower(c, n_rec, a / 2)
    hi = clopper_pearson_upper(c, np.full(c.shape, n_rec), a / 2)
    lo = np.minimum(np.nan_to_num(lo, nan=0.0), q_mle)
    hi = np.maximum(np.nan_to_num(hi, nan=1.0), q_mle)
    a_ub = np.vstack([w.T, -w.T])
    b_ub = np.concatenate([hi, -lo])
    a_eq = np.ones((1, n_in))
    lower = np.empty(n_in)
    upper = np.empty(n_in)
    for x in range(n_in):  # loop over categories (2 LPs each), not records
        for sign, out in ((1.0, lower), (-1.0, upper)):
            obj = np.zeros(n_in)
            obj[x] = sign
            res = linprog(obj, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0],
                          bounds=(0, 1), method="highs")
            if res.status != 0:  # cannot happen: the MLE is feasible; be conservative
                out[x] = 0.0 if sign > 0 else 1.0
            else:
                out[x] = min(1.0, max(0.0, sign * float(res.fun)))
    # the LP solution is exact only up to HiGHS's feasibility tolerance: widen by it
    return np.clip(lower - 1e-7, 0.0, 1.0), np.clip(upper + 1e-7, 0.0, 1.0)


def _inversion_map(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(B, k)`` of the least-squares inversion ``P = B q + k`` (exact on ``sum q = 1``
    for every ``q = W^T P``); see :func:`_inversion`."""
    g = w @ w.T
    a = np.linalg.solve(g, w)  # (W W^T)^{-1} W: unconstrained least squares
    k = np.linalg.solve(g, np.ones(w.shape[0]))
    k /= k.sum()
    return a - np.outer(k, a.sum(axis=0)), k


#: Iteration caps of the empirical-likelihood ends (outer) and of its multiplier (inner).
EL_OUTER = 60
EL_INNER = 60


def _el_stat(a: np.ndarray, qhat: np.ndarray, t: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """``-log R(t) / n`` of each row's empirical likelihood (``inf`` outside the hull of
    the observed ``a``) and its multiplier ``lam`` (``d/dt = -lam``)."""
    d = a - t[:, None]
    dmax = d.max(axis=1)
    dmin = d.min(axis=1)
    ok = (dmax > 0) & (dmin < 0)
    lo = np.where(ok, -1.0 / np.where(ok, dmax, 1.0), 0.0)
    hi = np.where(ok, -1.0 / np.where(ok, dmin, -1.0), 0.0)
    lam = np.zeros(t.shape)
    for _ in range(EL_INNER):  # safeguarded Newton on a decreasing function of lam
        den = 1.0 + lam[:, None] * d
        f = (qhat * d / den).sum(axis=1)
        fp = -(qhat * d * d / (den * den)).sum(axis=1)
        lo = np.where(f > 0, lam, lo)
        hi = np.where(f > 0, hi, lam)
        with np.errstate(divide="ignore", invalid="ignore"):
            nxt = lam - f / fp
        bad = ~np.isfinite(nxt) | (nxt <= lo) | (nxt >= hi)
        nxt = np.where(bad, 0.5 * (lo + hi), nxt)
        done = np.abs(nxt - lam) <= 1e-15 * (1.0 + np.abs(lam))
        lam = np.where(ok, nxt, 0.0)
        if np.all(done | ~ok):
            break
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = (qhat * np.log1p(lam[:, None] * d)).sum(axis=1)
    return np.where(ok & np.isfinite(stat), stat, np.inf), lam


def _el_intervals(w: np.ndarray, c: np.ndarray, confidence: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Empirical-likelihood intervals (Owen 1988) for ``P(x) = E[a_x(Y)]``, the mean of
    the inversion's linear functional ``a_x(y) = B[x, y] + k_x`` of one released output.

    The set is ``{t : -2 log R(t) <= chi2_1(confidence)}`` with ``R(t)`` the largest
    ratio ``prod_y (q_y / qhat_y)^(c_y)`` over distributions ``q`` on the observed outputs
    with ``sum_y q_y a_x(y) = t``: ``q_y = qhat_y / (1 + lam (a_x(y) - t))``, ``lam`` the
    root of ``sum_y qhat_y (a_x(y) - t) / (1 + lam (a_x(y) - t)) = 0`` (decreasing in
    ``lam``: safeguarded Newton). No constraint ties the other categories to the simplex,
    so the chi-square calibration does not degrade when they are near 0, which is where
    the profile likelihood over the simplex undercovers at small n. ``-log R`` is convex
    in ``t`` with derivative ``-n lam``, so each end is found by Newton steps from the
    outside (which stay outside), bracketed by bisection; the reported end is a point
    outside the set (or 0 / 1 after clipping)."""
    from scipy.stats import chi2

    b, k = _inversion_map(w)
    n_rec = float(c.sum())
    obs = c > 0
    qhat = c[obs] / n_rec
    a1 = b[:, obs] + k[:, None]  # N x M_obs
    n = w.shape[0]
    a = np.vstack([a1, a1])  # rows 0..N-1: lower ends, N..2N-1: upper ends
    side = np.concatenate([-np.ones(n), np.ones(n)])
    crit = float(chi2.ppf(confidence, 1)) / (2.0 * n_rec)  # on the mean log scale
    t_hat = a @ qhat
    edge = np.where(side < 0, a.min(axis=1), a.max(axis=1))
    inside = t_hat.copy()
    outside = edge.copy()
    # start at the Wald end, inside the hull
    sd = np.sqrt(np.maximum((a * a) @ qhat - t_hat**2, 0.0) / n_rec)
    z = math.sqrt(2.0 * n_rec * crit)
    t = np.clip(t_hat + side * z * sd, np.minimum(inside, outside),
                np.maximum(inside, outside))
    t = np.where(t == outside, 0.5 * (inside + outside), t)
    active = np.abs(outside - inside) > PROFILE_XTOL
    for _ in range(EL_OUTER):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        stat, lam = _el_stat(a[idx], qhat, t[idx])
        ins = stat <= crit
        inside[idx] = np.where(ins, t[idx], inside[idx])
        outside[idx] = np.where(ins, outside[idx], t[idx])
        slope = -lam  # d stat / dt
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = t[idx] - (stat - crit) / slope
        lo_b = np.minimum(inside[idx], outside[idx])
        hi_b = np.maximum(inside[idx], outside[idx])
        good = np.isfinite(newton) & (newton > lo_b) & (newton < hi_b)
        nxt = np.where(good, newton, 0.5 * (inside[idx] + outside[idx]))
        step = np.abs(nxt - t[idx])
        width = np.abs(outside[idx] - inside[idx])
        tol = np.maximum(PROFILE_XTOL * 1e-3, PROFILE_RTOL * 1e-3 * np.abs(t[idx]
                                                                          - t_hat[idx]))
        t[idx] = nxt
        active[idx] = (width > tol) & (step > tol)
    lower = np.clip(outside[:n], 0.0, 1.0)
    upper = np.clip(outside[n:], 0.0, 1.0)
    return lower, upper


def _inversion(w: np.ndarray, c: np.ndarray, confidence: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares ``min ||W^T P - c/n||^2`` subject to ``sum P = 1`` (exactly unbiased:
    linear in ``c/n``, and the constraint holds for the true ``P``), with its Wald
    intervals from the exact covariance ``B (diag q - q q^T) B^T / n``."""
    from scipy.stats import norm

    n_rec = float(c.sum())
    qhat = c / n_rec
    # P = A q + k (1 - 1^T A q) = B q + k with B = A - k 1^T A (exact for sum = 1),
    # A = (W W^T)^{-1} W the unconstrained least squares
    b, k = _inversion_map(w)
    p = b @ qhat + k
    cov = (b * qhat) @ b.T - np.outer(b @ qhat, b @ qhat)  # B (diag q - q q^T) B^T
    sd = np.sqrt(np.maximum(np.diag(cov), 0.0) / n_rec)
    z = float(norm.ppf(0.5 + confidence / 2))
    return p, np.clip(p - z * sd, 0.0, 1.0), np.clip(p + z * sd, 0.0, 1.0)


# -- entry points ---------------------------------------------------------------------

def _check_method(method: Any) -> str:
    if not isinstance(method, str) or method not in METHODS:
        raise ValidationError(f"method must be one of {', '.join(map(repr, METHODS))}, "
                              f"got {fmt(method)}")
    return method


def _check_confidence(confidence: Any) -> float:
    return check_real(confidence, "confidence", low=0.0, high=1.0, low_open=True,
                      high_open=True)


def _check_intervals(intervals: Any) -> bool:
    if not isinstance(intervals, bool | np.bool_):
        raise ValidationError(f"intervals must be True or False, got {fmt(intervals)}")
    return bool(intervals)


def estimate_from_counts(counts: ArrayLike, mechanism: ArrayLike | Mechanism, *,
                         method: str = "mle",
                         confidence: float = 0.95, tol: float = EM_TOL,
                         max_iter: int = EM_MAX_ITER, intervals: bool = True
                         ) -> DistributionEstimate:
    """Estimate ``P`` from output counts given in the order of the mechanism's outputs.

    ``counts`` is a length-``M`` sequence of non-negative integers (index ``j`` counts
    output ``j``). See :func:`estimate_distribution` for everything else.

    Examples
    --------
    Three categories through k-ary randomized response at LDP level ``log 2`` (keep
    probability 1/2, each other output 1/4): the inversion is ``P = 4 q - 1``, inside
    the simplex here, so it is also the maximum-likelihood estimate:

    >>> from pmlkit.inference import estimate_from_counts
    >>> w = [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]
    >>> r = estimate_from_counts([400, 350, 250], w)
    >>> r.estimate.round(4).tolist(), r.converged
    ([0.6, 0.4, 0.0], True)
    """
    method = _check_method(method)
    confidence = _check_confidence(confidence)
    tol = check_real(tol, "tol", low=0.0, low_open=True)
    max_iter = check_count(max_iter, "max_iter", minimum=1)
    intervals = _check_intervals(intervals)
    mech = mechanism if isinstance(mechanism, Mechanism) else Mechanism(as_matrix(mechanism))
    w = np.array(mech.matrix, dtype=np.float64)
    n_in, m = w.shape
    try:
        c = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"counts must be a 1-D array of non-negative integers, got "
                              f"{fmt(counts)}") from None
    if c.shape != (m,):
        raise ValidationError(f"counts must hold one count per output of the mechanism "
                              f"({m}), got shape {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0) or np.any(c != np.floor(c)):
        raise ValidationError(f"counts must be non-negative integers, got {fmt(c)}")
    n_rec = int(c.sum())
    if n_rec < 1:
        raise DataError("no released records to estimate from (all counts are 0)")
    impossible = (c > 0) & (w.sum(axis=0) == 0)
    if impossible.any():
        j = int(np.flatnonzero(impossible)[0])
        raise DataError(f"output {mech.output_labels[j]!r} was observed {int(c[j])} times "
                        "but the mechanism never produces it: the data were not released "
                        "through this mechanism")
    ident = _rank(w) == n_in
    ident_cat = identifiable(w)
    common = {"categories": tuple(mech.input_labels), "n": n_rec, "method": method,
              "identified": ident, "identified_categories": ident_cat,
              "confidence": confidence, "counts": c,
              "output_labels": tuple(mech.output_labels)}
    if method == "inversion":
        if not ident:
            raise ValidationError(
                f"method='inversion' needs a mechanism of rank N = {n_in}, but this one has "
                f"rank {_rank(w)} (it merges inputs); use method='mle', which reports the "
                "identified set")
        p, lo, hi = _inversion(w, c, confidence)
        inside = bool(np.all(p >= 0))
        if not intervals:
            lo = hi = np.full(n_in, np.nan)
        return DistributionEstimate(estimate=p, lower=lo, upper=hi, intervals=intervals,
                                    interval_method="wald" if intervals else "none",
                                    in_simplex=inside,
                                    log_likelihood=_loglik(c, p @ w) if inside else None,
                                    **common)
    p, it, conv = _em(w, c, tol, max_iter)
    ll = _loglik(c, p @ w)
    if not intervals:
        lo = hi = np.full(n_in, np.nan)
        how = "none"
        if not ident:
            p = np.where(ident_cat, p, np.nan)
    elif n_in == 1:  # one category: P = (1,) whatever the data
        lo, hi = np.ones(1), np.ones(1)
        how = "profile likelihood"
    elif ident:
        el_lo, el_hi = _el_intervals(w, c, confidence)
        if n_in <= PROFILE_MAX_CATEGORIES:
            lo, hi = _profile_intervals(w, c, p, confidence)
            lo = np.minimum(np.minimum(lo, el_lo), p)
            hi = np.maximum(np.maximum(hi, el_hi), p)
            how = "profile likelihood + empirical likelihood"
        else:
            lo, hi = np.minimum(el_lo, p), np.maximum(el_hi, p)
            how = "empirical likelihood"
    else:
        lo, hi = _identified_set(w, c, p @ w, confidence)
        p = np.where(ident_cat, p, np.nan)
        how = "identified set (simultaneous Clopper-Pearson box on W^T P, LP bounds)"
    return DistributionEstimate(estimate=p, lower=lo, upper=hi, interval_method=how,
                                intervals=intervals, converged=conv, iterations=it, tolerance=tol,
                                log_likelihood=ll, **common)


def _counts_from_mapping(released: Mapping[Any, Any], mech: Mechanism) -> np.ndarray:
    from .privatization import Encoder

    keys = list(released.keys())
    enc = Encoder(mech.output_labels)
    vals = np.empty(len(keys), dtype=object)
    vals[:] = keys
    codes = enc.encode_numpy(vals) if keys else np.zeros(0, dtype=np.intp)
    if codes is None:
        raise _unknown_error(enc, mech, "counts")
    c = np.zeros(mech.n_outputs)
    for k, code in zip(keys, codes, strict=True):
        v = released[k]
        try:
            cnt = check_count(v, f"count of {k!r}", minimum=0)
        except ValidationError:
            raise ValidationError(f"counts must be non-negative integers, got {fmt(v)} for "
                                  f"output {k!r}") from None
        c[code] += cnt
    return c


def _unknown_error(enc: Any, mech: Mechanism, what: str) -> DataError:
    labels = mech.output_labels
    shown = ", ".join(map(repr, labels[:20])) + (", ..." if len(labels) > 20 else "")
    parts = []
    if enc.unknown:
        common = enc.unknown.most_common()
        v, cnt = common[0]
        msg = (f"{what}: value {fmt(v)} appears in {cnt} row{'s' if cnt != 1 else ''} but is "
               f"not an output label of the mechanism (output labels: {shown})")
        if len(common) > 1:
            msg += "; other unknown values: " + ", ".join(
                f"{fmt(u)} ({k} row{'s' if k != 1 else ''})" for u, k in common[1:6])
        parts.append(msg)
    if enc.nulls:
        parts.append(f"{what}: {enc.nulls} row{'s hold' if enc.nulls != 1 else ' holds'} a "
                     "null/missing value, which a mechanism never outputs")
    return DataError("; ".join(parts) + "; check that the column and the mechanism match")


def _codes(values: Any, mech: Mechanism, what: str) -> np.ndarray:
    """Output indices of a released column (numpy, list, pandas, pyarrow, polars)."""
    from ._optional import loaded
    from .privatization import Encoder

    enc = Encoder(mech.output_labels)
    pa = loaded("pyarrow")
    pd = loaded("pandas")
    pl = loaded("polars")
    if pl is not None and isinstance(values, pl.Series):
        values = values.to_arrow()
        pa = loaded("pyarrow")
    parts: list[np.ndarray] = []
    if pa is not None and isinstance(values, pa.ChunkedArray | pa.Array):
        chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
        for ch in chunks:
            codes = enc.encode_arrow(ch)
            if codes is not None:
                parts.append(codes)
    elif pd is not None and isinstance(values, pd.Series | pd.Index):
        s = pd.Series(values)
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = s.cat.categories
            cc = enc.encode_numpy(np.asarray(cats, dtype=object))
            raw = s.cat.codes.to_numpy()
            if cc is not None and not (raw < 0).any():
                parts.append(cc[raw])  # the categories matched once, rows by code
            else:
                enc = Encoder(mech.output_labels)
                codes = enc.encode_numpy(s.to_numpy(dtype=object, na_value=None))
                if codes is not None:
                    parts.append(codes)
        else:
            if s.dtype.kind in "biuf" and not s.isna().any():
                arr = s.to_numpy()
            else:
                arr = s.to_numpy(dtype=object, na_value=None)
            codes = enc.encode_numpy(arr)
            if codes is not None:
                parts.append(codes)
    else:
        if isinstance(values, np.ndarray):
            arr = values
        else:
            arr = np.empty(len(values), dtype=object)
            arr[:] = list(values)
        if arr.ndim != 1:
            raise ValidationError(f"released must be 1-D, got an array of shape {arr.shape}")
        codes = enc.encode_numpy(arr)
        if codes is not None:
            parts.append(codes)
    if enc.failed:
        raise _unknown_error(enc, mech, what)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


def _column_of(table: Any, name: str, what: str) -> Any:
    from ._optional import loaded

    pd = loaded("pandas")
    pa = loaded("pyarrow")
    pl = loaded("polars")
    if pd is not None and isinstance(table, pd.DataFrame):
        if name not in table.columns:
            raise DataError(f"{what} {name!r} is not a column; available: "
                            f"{', '.join(map(repr, map(str, table.columns)))}")
        return table[name]
    if pa is not None and isinstance(table, pa.Table | pa.RecordBatch):
        if name not in table.column_names:
            raise DataError(f"{what} {name!r} is not a column; available: "
                            f"{', '.join(map(repr, table.column_names))}")
        return table.column(name)
    if pl is not None and isinstance(table, pl.DataFrame):
        if name not in table.columns:
            raise DataError(f"{what} {name!r} is not a column; available: "
                            f"{', '.join(map(repr, table.columns))}")
        return table[name]
    if pl is not None and isinstance(table, pl.LazyFrame):
        names = table.collect_schema().names()
        if name not in names:
            raise DataError(f"{what} {name!r} is not a column; available: "
                            f"{', '.join(map(repr, names))}")
        return table.select(name).collect().to_series()  # only this column is computed
    raise ValidationError(f"{what}={name!r} names a column, so released must be a pandas, "
                          f"pyarrow or polars table, got {type(table).__name__}")


def _is_table(x: Any) -> bool:
    from ._optional import loaded

    pd, pa, pl = (loaded(k) for k in ("pandas", "pyarrow", "polars"))
    return bool((pd is not None and isinstance(x, pd.DataFrame))
                or (pa is not None and isinstance(x, pa.Table | pa.RecordBatch))
                or (pl is not None and isinstance(x, pl.DataFrame | pl.LazyFrame)))


def _group_codes(by: Any) -> tuple[list[Any], np.ndarray]:
    """Group labels (sorted when possible) and the group index of every row."""
    import pandas as pd

    from ._optional import loaded

    pa = loaded("pyarrow")
    pl = loaded("polars")
    if pl is not None and isinstance(by, pl.Series):
        by = by.to_arrow()
    if pa is not None and isinstance(by, pa.ChunkedArray | pa.Array):
        by = by.to_pandas()
    if not isinstance(by, pd.Series | pd.Index | np.ndarray):
        arr = np.empty(len(by), dtype=object)
        arr[:] = list(by)
        by = arr
    s = pd.Series(by)
    if s.isna().any():
        k = int(s.isna().sum())
        raise DataError(f"by: {k} row{'s hold' if k != 1 else ' holds'} a null/missing group "
                        "value; fill or drop them explicitly first")
    codes, uniques = pd.factorize(s, sort=False)
    groups = list(uniques)
    try:
        order = sorted(range(len(groups)), key=lambda i: groups[i])
    except TypeError:
        order = list(range(len(groups)))
    remap = np.empty(len(groups), dtype=np.intp)
    remap[order] = np.arange(len(groups))
    return [groups[i].item() if isinstance(groups[i], np.generic) else groups[i]
            for i in order], remap[codes]


def estimate_distribution(released: Any, mechanism: ArrayLike | Mechanism, *,
                          method: str = "mle",
                          confidence: float = 0.95, column: str | None = None,
                          by: Any = None, tol: float = EM_TOL,
                          max_iter: int = EM_MAX_ITER, intervals: bool = True
                          ) -> DistributionEstimate | GroupedEstimates:
    """Estimate the distribution of the true values from a released (privatised) column.

    Parameters
    ----------
    released
        The released column: numpy array, list, pandas Series, pyarrow (Chunked)Array,
        polars Series; or a table (pandas DataFrame, pyarrow Table / RecordBatch, polars
        DataFrame / LazyFrame: only the named columns are collected) with ``column=``;
        or **output counts** as a mapping ``{output label: count}`` (labels not listed
        count 0).
    mechanism
        The :class:`pmlkit.Mechanism` the column was released through (its
        ``output_labels`` name the released values), or a row-stochastic matrix (labels
        ``0..M-1``).
    method
        ``"mle"`` (maximum likelihood over the simplex by EM, certified to ``tol``) or
        ``"inversion"`` (unbiased least squares; may leave the simplex). See the module
        docstring for the formulas and the interval methods.
    confidence
        Level of the intervals, in (0, 1).
    column
        The released column's name when ``released`` is a table.
    by
        A non-private column (its name in the table, or an array of the same length as the
        released column): one estimate per group. Returns :class:`GroupedEstimates`.
    tol, max_iter
        EM stopping rule: stop once the mean log-likelihood per record is certified within
        ``tol`` nats of its maximum, or after ``max_iter`` steps (``converged=False``).
    intervals
        ``False``: the point estimate only (``lower`` / ``upper`` NaN); the intervals cost
        about as much as the point estimate at large ``N`` and far more at small ``N``.

    Returns
    -------
    DistributionEstimate, or GroupedEstimates when ``by`` is given.

    Raises
    ------
    DataError
        A released value (or null) that is not an output label of the mechanism (naming
        it and its row count); an output the mechanism never produces; no records.
    ValidationError
        Bad ``method``, ``confidence``, ``tol``, ``max_iter``, counts; ``"inversion"`` on a
        mechanism of rank < N.

    Examples
    --------
    A released yes/no column through randomized response keeping the value with
    probability 0.75: 60% of released rows say ``yes``, so ``0.25 + 0.5 P(yes) = 0.6``:

    >>> from pmlkit import Mechanism, estimate_distribution
    >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]], ("no", "yes"), ("no", "yes"))
    >>> r = estimate_distribution(["yes"] * 60 + ["no"] * 40, mech)
    >>> [round(float(x), 3) for x in r.estimate]
    [0.3, 0.7]

    Output counts give the same estimate:

    >>> r2 = estimate_distribution({"yes": 60, "no": 40}, mech)
    >>> bool(np.allclose(r2.estimate, r.estimate))
    True
    """
    method = _check_method(method)
    confidence = _check_confidence(confidence)
    mech = mechanism if isinstance(mechanism, Mechanism) else Mechanism(as_matrix(mechanism))
    kw: dict[str, Any] = {"method": method, "confidence": confidence, "tol": tol,
                          "max_iter": max_iter, "intervals": _check_intervals(intervals)}
    if isinstance(released, Mapping):
        if by is not None or column is not None:
            raise ValidationError("by= and column= need the released rows, not counts")
        return estimate_from_counts(_counts_from_mapping(released, mech), mech, **kw)
    by_name: str | None = None
    if _is_table(released):
        if column is None:
            raise ValidationError("released is a table: pass column= to name the released "
                                  "column")
        values = _column_of(released, column, "column")
        if isinstance(by, str):
            by_name = by
            by = _column_of(released, by, "by")
    else:
        if column is not None:
            _column_of(released, column, "column")  # raises: not a table
        values = released
        if isinstance(by, str):
            raise ValidationError(f"by={by!r} names a column, so released must be a table "
                                  "with column=; or pass the group values as an array")
    what = f"column {column!r}" if column is not None else "released"
    codes = _codes(values, mech, what)
    m = mech.n_outputs
    if by is None:
        return estimate_from_counts(np.bincount(codes, minlength=m), mech, **kw)
    groups, gidx = _group_codes(by)
    if gidx.shape[0] != codes.shape[0]:
        raise ValidationError(f"by has {gidx.shape[0]} values but the released column has "
                              f"{codes.shape[0]} rows")
    counts = np.bincount(gidx * m + codes, minlength=len(groups) * m).reshape(-1, m)
    ests = tuple(estimate_from_counts(counts[g], mech, **kw) for g in range(len(groups)))
    return GroupedEstimates(by_name, tuple(groups), ests)


# -- finding the mechanism of a released file -------------------------------------------

#: Key under which a privatised file's manifest (``<file>.pmlkit.json``) and its Parquet
#: key-value metadata carry the mechanisms: a mapping column -> mechanism JSON document.
MECHANISM_KEY = "mechanism"


def _from_privatized(doc: Mapping[str, Any], column: str, where: str) -> Mechanism | None:
    """The mechanism of output ``column`` in the ``"privatized"`` section that
    ``pmlkit privatize`` writes (output column -> {"column", "mechanism",
    "mechanism_sha256", ...}), or None if that section does not name it."""
    section = doc.get("privatized")
    if not isinstance(section, Mapping) or column not in section:
        return None
    entry = section[column]
    if not isinstance(entry, Mapping) or not isinstance(entry.get(MECHANISM_KEY), Mapping):
        raise DataError(f"{where}: the 'privatized' entry of column {column!r} carries no "
                        "mechanism document")
    if "joint_release" in entry:  # its mechanism is on the tuple, not on this column
        joint = entry["joint_release"]
        cols = joint.get("into") if isinstance(joint, Mapping) else None
        raise DataError(f"{where}: column {column!r} was released together with "
                        f"{cols!r} through one mechanism on their tuples; its recorded "
                        "mechanism is that of the tuple, not of the column alone: estimate "
                        "the joint distribution from the released tuples")
    mech = Mechanism.from_dict(entry[MECHANISM_KEY], allow_uncertified=True)
    digest = entry.get("mechanism_sha256")
    # the document's own digest, which from_dict checked against its content (a document
    # of pmlkit 0.1 loses its reference fingerprint on reading, so it is rewritten with
    # another digest)
    if isinstance(digest, str) and entry[MECHANISM_KEY].get("sha256") != digest:
        raise DataError(f"{where}: the recorded mechanism of column {column!r} does not "
                        "match its recorded mechanism_sha256: the record was edited or "
                        "corrupted")
    return mech


def _from_mapping(doc: Any, column: str, where: str) -> Mechanism | None:
    """The mechanism of ``column`` in a manifest-like document, or None if absent."""
    if isinstance(doc, Mapping):
        found = _from_privatized(doc, column, where)
        if found is not None:
            return found
    if not isinstance(doc, Mapping) or MECHANISM_KEY not in doc:
        return None
    mechs = doc[MECHANISM_KEY]
    if not isinstance(mechs, Mapping):
        raise DataError(f"{where}: {MECHANISM_KEY!r} must map column names to mechanism "
                        f"documents, got {type(mechs).__name__}")
    key: Any = column
    if key not in mechs:
        # the released column may be an --into name: map it back to its source column
        cols, into = doc.get("columns"), doc.get("into")
        if isinstance(cols, list) and isinstance(into, list) and column in into \
                and len(cols) == len(into):
            key = cols[into.index(column)]
    if key not in mechs:
        raise DataError(f"{where} records no mechanism for column {column!r} (it has: "
                        f"{', '.join(map(repr, mechs))}); pass the mechanism file explicitly")
    mech = Mechanism.from_dict(mechs[key], allow_uncertified=True)  # the channel is enough
    digest = doc.get("mechanism_sha256")
    if isinstance(digest, str) and len(mechs) == 1 \
            and mechs[key].get("sha256") != digest:  # the checked digest (as above)
        raise DataError(f"{where}: the recorded mechanism does not match the recorded "
                        "mechanism_sha256: the record was edited or corrupted")
    return mech


def _manifest_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A recorded mechanism is read as strictly as a mechanism file: no duplicate keys."""
    from .errors import MechanismFileError

    return no_duplicate_keys(pairs, MechanismFileError, "the recorded mechanism's manifest")


def find_mechanism(path: str | PathLike[str], column: str) -> tuple[Mechanism, str]:
    """The mechanism a privatised file's column was released through, and where it was
    found. ``path`` may also be the output folder of the Dask engine (its manifest
    ``<folder>.pmlkit.json`` records the release).

    Looks, in order, at the manifest ``<path>.pmlkit.json`` written next to the output by
    ``pmlkit privatize`` and, for Parquet, at the file's key-value metadata (key
    ``"mechanism"``, or inside the JSON under key ``"pmlkit"``). Both carry under
    ``"mechanism"`` a mapping ``column -> mechanism JSON document`` (the document of
    :meth:`pmlkit.Mechanism.to_dict`, checked by :meth:`pmlkit.Mechanism.from_dict`, digest
    included). Raises :class:`~pmlkit.errors.DataError` when neither records it.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from pmlkit import Mechanism
    >>> from pmlkit.inference import find_mechanism
    >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]], ("no", "yes"), ("no", "yes"))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "out.csv").write_text("smoker\\nyes\\nno\\n")
    >>> doc = {"mechanism": {"smoker": mech.to_dict()}}
    >>> _ = (folder / "out.csv.pmlkit.json").write_text(json.dumps(doc))
    >>> found, where = find_mechanism(folder / "out.csv", "smoker")
    >>> found.matrix.tolist(), where.startswith("manifest")
    ([[0.75, 0.25], [0.25, 0.75]], True)
    """
    from pathlib import Path

    p = Path(path)
    manifest = p.with_name(p.name + ".pmlkit.json")
    for doc, where in _documents(p):
        mech = _from_mapping(doc, column, where)
        if mech is not None:
            return mech, (f"manifest {manifest}" if where.startswith("manifest")
                          else f"Parquet metadata of {p}")
    raise DataError(f"no mechanism recorded for {str(p)!r}: neither a manifest "
                    f"{manifest.name!r} nor Parquet metadata names the mechanism of column "
                    f"{column!r}; pass it with --mechanism FILE")


def _documents(path: str | PathLike[str]) -> Iterator[tuple[Any, str]]:
    """The release records of a privatised file (or of the Dask engine's output folder),
    as :func:`find_mechanism` reads them: its manifest ``<path>.pmlkit.json``, then
    (Parquet file) its key-value metadata."""
    import json
    from pathlib import Path

    from .io import file_format

    p = Path(path)
    if not p.is_file() and not p.is_dir():  # a folder: the Dask engine's output
        raise DataError(f"input file {str(p)!r} does not exist")
    manifest = p.with_name(p.name + ".pmlkit.json")
    if manifest.is_file():
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"),
                             object_pairs_hook=_manifest_keys)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise DataError(f"manifest {str(manifest)!r} cannot be read: {exc}") from exc
        yield doc, f"manifest {str(manifest)!r}"
    if p.is_file() and file_format(p) == "parquet":
        import pyarrow.parquet as pq

        try:
            meta = pq.read_schema(p).metadata or {}
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise DataError(f"cannot read {str(p)!r} as PARQUET: {exc}") from exc
        where = f"Parquet metadata of {str(p)!r}"
        for raw, wrap in ((meta.get(MECHANISM_KEY.encode()), True),
                          (meta.get(b"pmlkit"), False)):
            if raw is None:
                continue
            try:
                doc = json.loads(raw.decode("utf-8"), object_pairs_hook=_manifest_keys)
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
                raise DataError(f"{where} cannot be read: {exc}") from exc
            if wrap:
                outer = meta.get(b"pmlkit")
                extra: dict[str, Any] = {}
                if outer is not None:
                    try:
                        ex = json.loads(outer.decode("utf-8"))
                        if isinstance(ex, Mapping):
                            extra = {k: ex[k] for k in ("columns", "into", "mechanism_sha256")
                                     if k in ex}
                    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                        extra = {}
                doc = {**extra, MECHANISM_KEY: doc}
            yield doc, where


def released_columns(path: str | PathLike[str]) -> frozenset[str]:
    """The columns of a privatised file that hold released (privatised) values, as its
    release records name them (the outputs of ``"privatized"``, ``"into"`` and the keys of
    ``"mechanism"``); empty when nothing is recorded.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from pmlkit.inference import released_columns
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "out.csv").write_text("smoker,age\\nyes,30\\n")
    >>> doc = {"columns": ["smoker"], "into": ["smoker"], "mechanism": {}}
    >>> _ = (folder / "out.csv.pmlkit.json").write_text(json.dumps(doc))
    >>> sorted(released_columns(folder / "out.csv"))
    ['smoker']
    """
    out: set[str] = set()
    for doc, _ in _documents(path):
        if not isinstance(doc, Mapping):
            continue
        for key in ("privatized", MECHANISM_KEY):
            sec = doc.get(key)
            if isinstance(sec, Mapping):
                out.update(k for k in sec if isinstance(k, str))
        into = doc.get("into")
        if isinstance(into, list):
            out.update(k for k in into if isinstance(k, str))
    return frozenset(out)


def find_joint_release(path: str | PathLike[str], columns: Sequence[str]) -> Any:
    """``(release, into)``: the :class:`pmlkit.joint.JointRelease` through which exactly
    ``columns`` (output column names, in any order) of a privatised file were released
    together and its output columns in the order of ``release.columns``; or ``None`` when
    its records name no such release (the columns may then have been released each
    through its own mechanism: :func:`find_mechanism`). A column released with other
    columns than ``columns`` raises :class:`~pmlkit.errors.DataError`.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> import pyarrow.parquet as pq
    >>> from pmlkit.joint import joint_release
    >>> from pmlkit.privatization import privatize_file
    >>> folder = Path(tempfile.mkdtemp())
    >>> pq.write_table(pa.table({"a": ["x", "y"] * 5, "b": ["u", "u", "v", "v", "u"] * 2}),
    ...                folder / "in.parquet")
    >>> rel = joint_release(("a", "b"), (("x", "y"), ("u", "v")), np.full((4, 4), 0.25),
    ...                     [0.25] * 4)
    >>> _ = privatize_file({("a", "b"): rel}, folder / "in.parquet", folder / "out.parquet",
    ...                    ["a", "b"], rng=0)
    >>> found, into = find_joint_release(folder / "out.parquet", ["b", "a"])
    >>> found.columns, list(into)
    (('a', 'b'), ['a', 'b'])
    """
    from .joint import JointRelease

    for doc, where in _documents(path):
        sec = doc.get("privatized") if isinstance(doc, Mapping) else None
        if not isinstance(sec, Mapping):
            continue
        for col in columns:
            entry = sec.get(col)
            if not isinstance(entry, Mapping) or "joint_release" not in entry:
                continue
            joint = entry["joint_release"]
            into = joint.get("into") if isinstance(joint, Mapping) else None
            if not isinstance(into, list) or set(into) != set(columns) \
                    or len(into) != len(columns):
                raise DataError(
                    f"{where}: column {col!r} was released together with {into!r} through "
                    f"one mechanism on their tuples; estimate exactly those columns "
                    f"together (--column for each of them), got {list(columns)!r}")
            try:
                rel = JointRelease.from_dict(joint.get("release"), allow_uncertified=True)
            except ValidationError as exc:
                raise DataError(f"{where}: the joint release of {into!r} cannot be read: "
                                f"{exc}") from exc
            digest = joint.get("mechanism_sha256")
            if isinstance(digest, str) and rel.mechanism.to_dict()["sha256"] != digest:
                raise DataError(f"{where}: the recorded joint mechanism of {into!r} does not "
                                "match its recorded mechanism_sha256: the record was edited "
                                "or corrupted")
            return rel, into
    return None


def output_codes(values: Any, mechanism: Mechanism, what: str = "released") -> np.ndarray:
    """Index of each released value among ``mechanism.output_labels`` (numpy, list,
    pandas, pyarrow or polars column); raises :class:`~pmlkit.errors.DataError` naming
    a value that is not an output label (and its row count), or a null.

    Examples
    --------
    >>> from pmlkit import Mechanism
    >>> from pmlkit.inference import output_codes
    >>> mech = Mechanism([[0.75, 0.25], [0.25, 0.75]], ("no", "yes"), ("no", "yes"))
    >>> output_codes(["yes", "no", "yes"], mech).tolist()
    [1, 0, 1]
    """
    return _codes(values, mechanism, what)
