"""Estimates from output counts: the estimate objects, identification, the EM, the
intervals (profile and empirical likelihood, Wald, identified sets) and
:func:`estimate_from_counts`; the method is in :mod:`pmlkit.inference`."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._progress import report
from .._validation import check_count, check_real, fmt
from ..design.estimation import RANK_TOL  # rank tolerance, shared with the design side
from ..errors import DataError, ValidationError
from ..mechanism import Mechanism, as_matrix

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
#: Cochran's rule for the chi-square approximation: an expected count below this many
#: records makes the likelihood intervals' calibration unreliable (see
#: :func:`_small_count_intervals`).
SMALL_COUNT = 5.0

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
    from ..design.estimation import mechanism_rank

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
    from ..mle import channel_mle

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
    for step in range(steps):
        width = np.abs(in_pt - out_pt)
        act = np.flatnonzero(~done & (width > np.maximum(
            PROFILE_XTOL, PROFILE_RTOL * np.abs(in_pt - est))))
        if act.size == 0:
            break
        report("estimate.intervals", step=step + 1, max_steps=steps, open_ends=act.size)
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

    from ..confidence import clopper_pearson_lower, clopper_pearson_upper

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


def _dedicated_outputs(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                np.ndarray]:
    """Per category ``x``: the output ``y*`` that singles it out most, the argmax over
    ``y`` of ``W[x, y] - max_{x' != x} W[x', y]`` (a property of ``W`` alone), with
    ``W[x, y*]`` and the smallest and largest ``W[x', y*]`` over the other categories."""
    n_in, n_out = w.shape
    rows = np.arange(n_in)
    if n_in > 1:
        # per column the two largest and two smallest entries: O(N M), where masking the
        # diagonal of an N x N x M array took 8 N^2 M bytes (64 GB at N = M = 2000)
        cols = np.arange(n_out)
        i_hi, i_lo = np.argmax(w, axis=0), np.argmin(w, axis=0)
        rest = w.copy()
        rest[i_hi, cols] = -np.inf
        hi_other = np.where(rows[:, None] == i_hi, rest.max(axis=0), w[i_hi, cols])
        rest = w.copy()
        rest[i_lo, cols] = np.inf
        lo_other = np.where(rows[:, None] == i_lo, rest.min(axis=0), w[i_lo, cols])
    else:
        hi_other = lo_other = np.zeros_like(w)
    ys = np.argmax(w - hi_other, axis=1)
    return ys, w[rows, ys], lo_other[rows, ys], hi_other[rows, ys]


def _small_count_intervals(w: np.ndarray, c: np.ndarray, lower: np.ndarray,
                           upper: np.ndarray, confidence: float
                           ) -> tuple[np.ndarray, np.ndarray, bool]:
    """Widen the likelihood intervals where counts are too small for their chi-square
    calibration: the hull with an exact Clopper-Pearson interval read off one output.

    For category ``x`` let ``y*`` be its dedicated output (:func:`_dedicated_outputs`),
    ``w = W[x, y*]`` and ``m``, ``M`` the smallest and largest ``W[x', y*]`` over the other
    categories. The count ``c_{y*}`` is ``Bin(n, q)`` with ``q = sum_x' P(x') W[x', y*]``
    between ``t w + (1 - t) m`` and ``t w + (1 - t) M`` when ``P(x) = t``. With
    ``[L, U]`` the two-sided Clopper-Pearson interval for ``q`` (each tail
    ``(1 - confidence) / 2``), ``P(x) <= (U - m) / (w - m)`` and
    ``P(x) >= (L - M) / (w - M)`` each fail with probability at most that tail, for every
    ``W`` and every ``P``: an exact interval, which for randomized response (and every
    mechanism ``s I + 1 b^T``, identity included) is the Clopper-Pearson interval mapped
    through ``W^{-1}``. It ignores the other outputs, so it is used only where the
    likelihood intervals are known to fail: by Cochran's rule, when the interval holds a
    value ``t`` under which the expected count ``n q`` of ``y*``, or ``n (1 - q)`` of the
    other outputs, can be below :data:`SMALL_COUNT` (5). There the likelihood-ratio
    statistic of a Poisson-like count is far from chi-square: an unseen category under a
    low-noise mechanism gets the upper end ``1.92 / n`` instead of ``3.7 / n``. A category
    with no output that favours it (``w <= M``) is left as it is.

    Returns the widened ``(lower, upper)`` and whether any category was widened.

    References
    ----------
    - C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits illustrated
      in the case of the binomial", Biometrika 26(4), 1934.
    - W. G. Cochran, "Some methods for strengthening the common chi-square tests",
      Biometrics 10(4), 1954.
    - L. D. Brown, T. T. Cai, A. DasGupta, "Interval estimation for a binomial
      proportion", Statistical Science 16(2), 2001 (the likelihood-ratio interval's
      coverage dips near the boundary).
    """
    from ..confidence import clopper_pearson_lower, clopper_pearson_upper

    n_rec = float(c.sum())
    ys, wx, m, big_m = _dedicated_outputs(w)
    usable = wx > big_m
    tail = (1.0 - confidence) / 2.0
    k = c[ys]
    q_lo = clopper_pearson_lower(k, n_rec, tail)
    q_hi = clopper_pearson_upper(k, np.full(k.shape, n_rec), tail)
    with np.errstate(divide="ignore", invalid="ignore"):
        ex_lo = np.clip((q_lo - big_m) / (wx - big_m), 0.0, 1.0)
        ex_hi = np.clip((q_hi - m) / (wx - m), 0.0, 1.0)
    # the range of q_{y*} over the hypotheses P(x) = t in [lower, upper]
    q_min = np.minimum(lower * wx + (1.0 - lower) * m, upper * wx + (1.0 - upper) * m)
    q_max = np.maximum(lower * wx + (1.0 - lower) * big_m, upper * wx + (1.0 - upper) * big_m)
    small = usable & ((n_rec * q_min < SMALL_COUNT) | (n_rec * (1.0 - q_max) < SMALL_COUNT))
    lo = np.where(small, np.minimum(lower, np.nan_to_num(ex_lo, nan=0.0)), lower)
    hi = np.where(small, np.maximum(upper, np.nan_to_num(ex_hi, nan=1.0)), upper)
    return lo, hi, bool(np.any((lo < lower) | (hi > upper)))


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

def check_method(method: Any) -> str:
    if not isinstance(method, str) or method not in METHODS:
        raise ValidationError(f"method must be one of {', '.join(map(repr, METHODS))}, "
                              f"got {fmt(method)}")
    return method


def check_confidence(confidence: Any) -> float:
    return check_real(confidence, "confidence", low=0.0, high=1.0, low_open=True,
                      high_open=True)


def check_intervals(intervals: Any) -> bool:
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
    method = check_method(method)
    confidence = check_confidence(confidence)
    tol = check_real(tol, "tol", low=0.0, low_open=True)
    max_iter = check_count(max_iter, "max_iter", minimum=1)
    intervals = check_intervals(intervals)
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
        lo, hi, widened = _small_count_intervals(w, c, lo, hi, confidence)
        if widened:
            how += " + small-count Clopper-Pearson"
    else:
        lo, hi = _identified_set(w, c, p @ w, confidence)
        p = np.where(ident_cat, p, np.nan)
        how = "identified set (simultaneous Clopper-Pearson box on W^T P, LP bounds)"
    return DistributionEstimate(estimate=p, lower=lo, upper=hi, interval_method=how,
                                intervals=intervals, converged=conv, iterations=it, tolerance=tol,
                                log_likelihood=ll, **common)
