"""Maximum likelihood of a distribution seen through a channel: the one solver that
:mod:`pmlkit.inference` (the analyst's estimate) and :mod:`pmlkit.design.summary` (the
expected error a design summary states) share.

``n`` records drawn from ``P`` and released through an ``N x M`` row-stochastic matrix
``W`` give output counts ``c``; the maximum-likelihood estimate maximises the concave

    L(P) = sum_y (c_y / n) log q_y,     q = W^T P,

over the probability simplex. With ``g_x = sum_y (c_y / n) W[x, y] / q_y`` (so that
``sum_x P(x) g_x = 1``), the Frank-Wolfe gap of ``L`` at ``P`` is ``max_x g_x - 1``: it
bounds ``L(P_hat) - L(P)`` from above, so stopping when it is ``<= tol`` *certifies* the
mean log-likelihood per record to within ``tol`` nats of its maximum.

Solver
------
1. **EM** (iterative Bayesian update ``P'(x) = P(x) g_x``) from the uniform distribution,
   accelerated by SQUAREM (Varadhan and Roland 2008: two EM steps give the direction of
   an extrapolation, kept only when it stays in the simplex and does not lower ``L``), for
   at most :data:`EM_PHASE` steps. Small or well-conditioned problems end here.
2. **Projected Newton** (Bertsekas 1982) on the equivalent bound-constrained problem
   ``max_{P >= 0} L(P) - sum_x P(x)`` (its maximiser sums to 1: scaling ``P`` by ``t``
   adds ``log t - (t - 1) sum P``). Categories at 0 whose gradient ``g_x - 1`` points out
   of the orthant are held at 0; on the others the step solves the Newton system with the
   Hessian ``W_F diag(c / (n q^2)) W_F^T`` (a tiny ridge keeps it positive definite), the
   step is projected onto ``P >= 0`` and halved until ``L - sum P`` increases by an Armijo
   fraction of the projected gradient step; the iterate is then rescaled to sum 1 (which
   never lowers the objective). Where no Newton step is accepted an EM step is taken.

EM's rate degrades as the channel gets noisier: at ``N = 1000`` categories through
randomized response at eps = 1 (keep probability 0.0027), 10,000 accelerated EM steps do
not reach the tolerance, while the Newton phase, whose local rate does not depend on the
conditioning, certifies it in tens of steps (``benchmarks/bench_estimate.py --part 3``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._progress import EM_EVERY, report
from ._validation import as_mechanism, check_count, check_real
from .errors import DataError, ValidationError

__all__ = ["EM_PHASE", "channel_mle", "channel_mle_many"]

#: EM (SQUAREM) steps before the projected Newton phase takes over.
EM_PHASE = 100
#: Armijo fraction and step halvings of the Newton line search.
ARMIJO = 1e-4
HALVINGS = 40
#: Rounds of the active-set solve of the Newton step's quadratic model.
QP_ROUNDS = 12


def _squarem(wp: np.ndarray, cn: np.ndarray, p: np.ndarray, tol: float, max_iter: int
             ) -> tuple[np.ndarray, int, bool]:
    def emap(p: np.ndarray) -> tuple[np.ndarray, float]:
        q = p @ wp
        with np.errstate(divide="ignore", invalid="ignore"):
            g = wp @ (cn / q)
        out = p * g
        return out / out.sum(), float(g.max() - 1.0)

    def ll(p: np.ndarray) -> float:
        with np.errstate(divide="ignore"):
            return float(cn @ np.log(p @ wp))

    it = 0
    next_report = EM_EVERY
    while True:
        p1, gap = emap(p)
        if gap <= tol:
            return p, it, True
        if it >= max_iter:
            return p, it, False
        if it >= next_report:  # (a description only: nothing is read back)
            report("estimate.em", iteration=it, phase="em", gap=gap)
            next_report += EM_EVERY
        p2, _ = emap(p1)
        it += 2
        r = p1 - p
        v = p2 - p1 - r
        nv = float(np.linalg.norm(v))
        best = p2
        if nv > 0:
            alpha = -float(np.linalg.norm(r)) / nv
            if alpha < -1.0:
                cand = p - 2 * alpha * r + alpha * alpha * v
                if np.all(cand >= 0) and cand.sum() > 0:
                    cand = cand / cand.sum()
                    cand, _ = emap(cand)
                    it += 1
                    if ll(cand) >= ll(p2):
                        best = cand
        p = best


def _qp_step(h: np.ndarray, grad: np.ndarray, p: np.ndarray) -> np.ndarray | None:
    """Approximate maximiser of the quadratic model ``grad . d - d^T h d / 2`` subject to
    ``p + d >= 0``: coordinates the unconstrained step drives below 0 are set to 0
    (``d = -p`` there) and the system is solved again on the others, a few rounds."""
    n = p.size
    zero = np.zeros(n, dtype=bool)
    d = np.empty(n)
    for _ in range(QP_ROUNDS):
        keep = np.flatnonzero(~zero)
        dz = -p[zero]
        rhs = grad[keep] - h[np.ix_(keep, np.flatnonzero(zero))] @ dz
        try:
            chol = np.linalg.cholesky(h[np.ix_(keep, keep)])
        except np.linalg.LinAlgError:
            return None
        d[keep] = np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))
        d[zero] = dz
        neg = (~zero) & (p + d < 0)
        if not neg.any():
            break
        zero |= neg
    return d


def _newton(wp: np.ndarray, cn: np.ndarray, p: np.ndarray, alive: np.ndarray, tol: float,
            max_iter: int) -> tuple[np.ndarray, int, bool]:
    """Projected Newton on ``max_{P >= 0} L(P) - sum P`` (module docstring)."""
    def objective(p: np.ndarray) -> float:
        q = p @ wp
        if np.any(q <= 0):
            return -np.inf
        return float(cn @ np.log(q)) - float(p.sum())

    it = 0
    f = objective(p)
    while True:
        q = p @ wp
        r = cn / q
        g = wp @ r
        gap = float(g[alive].max() - 1.0)
        if gap <= tol:
            return p, it, True
        if it >= max_iter:
            return p, it, False
        it += 1
        report("estimate.em", iteration=it, phase="newton", gap=gap)
        grad = g - 1.0
        # Bertsekas' epsilon-active set: at (or within eps of) 0 and pushed outwards
        eps_act = min(1e-12, float(np.abs(np.minimum(p + grad, 0.0) - p).max()) * 1e-3)
        held = (~alive) | ((p <= eps_act) & (grad <= 0))
        free = np.flatnonzero(~held)
        wf = wp[free]
        h = (wf * (r / q)) @ wf.T
        ridge = 1e-12 * max(float(np.trace(h)) / max(free.size, 1), 1e-300)
        h[np.diag_indices_from(h)] += ridge
        d = _qp_step(h, grad[free], p[free])
        cand = p.copy()
        if d is not None:
            cand[free] = np.maximum(p[free] + d, 0.0)
        slope = float(grad @ (cand - p))
        accepted = False
        if d is not None and slope > 0:
            step = 1.0
            for _ in range(HALVINGS):
                trial = p + step * (cand - p)
                fc = objective(trial)
                if np.isfinite(fc) and fc - f >= ARMIJO * step * slope:
                    accepted = True
                    cand = trial
                    break
                step *= 0.5
        if not accepted:  # fall back on one EM step (never lowers L)
            cand = p * g
        cand = cand / cand.sum()
        p = cand
        f = objective(p)


def channel_mle(counts: ArrayLike, mechanism: ArrayLike, *, tol: float = 1e-10,
                max_iter: int = 200_000, newton: bool = True
                ) -> tuple[NDArray[np.float64], int, bool]:
    """Maximum likelihood ``P`` over the simplex from the output counts ``c`` of a release
    through ``mechanism`` (module docstring).

    Parameters
    ----------
    counts
        Length-``M`` non-negative counts (index ``j`` counts output ``j``), not all 0.
    mechanism
        Row-stochastic ``N x M`` matrix (or a :class:`~pmlkit.Mechanism`).
    tol
        Certified Frank-Wolfe gap (mean log-likelihood per record, nats) to stop at.
    max_iter
        Cap on the iterations (EM map evaluations plus Newton steps).
    newton
        Whether the projected Newton phase follows the EM phase (``False``: EM only, the
        iteration of earlier versions).

    Returns
    -------
    (P, iterations, converged)
        ``converged`` is ``True`` exactly when the gap at ``P`` is certified ``<= tol``.

    Examples
    --------
    Binary randomized response keeping the value with probability 0.75: 60 of 100 rows
    say ``1``, so ``0.25 + 0.5 P(1) = 0.6``:

    >>> from pmlkit.mle import channel_mle
    >>> p, _, ok = channel_mle([40, 60], [[0.75, 0.25], [0.25, 0.75]])
    >>> p.round(6).tolist(), ok
    ([0.3, 0.7], True)
    """
    w = as_mechanism(mechanism)
    tol = check_real(tol, "tol", low=0.0, low_open=True)
    max_iter = check_count(max_iter, "max_iter", minimum=1)
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != (w.shape[1],) or not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValidationError(f"counts must be {w.shape[1]} non-negative numbers (one per "
                              f"output of the mechanism), got shape {c.shape}")
    if c.sum() <= 0:
        raise DataError("no released records to estimate from (all counts are 0)")
    pos = c > 0
    wp = w[:, pos]
    cn = c[pos] / c.sum()
    # inputs that cannot produce any observed output have P(x) = 0 at every maximum
    alive = wp.sum(axis=1) > 0
    if not alive.any():
        raise DataError("the observed outputs cannot be produced by any input")
    p = np.where(alive, 1.0, 0.0)
    p /= p.sum()
    budget = max_iter if not newton else min(max_iter, EM_PHASE)
    p, it, ok = _squarem(wp, cn, p, tol, budget)
    if ok or not newton or it >= max_iter:
        return p, it, ok
    p, it2, ok = _newton(wp, cn, p, alive, tol, max_iter - it)
    return p, it + it2, ok


def channel_mle_many(counts: ArrayLike, mechanism: ArrayLike, *, tol: float = 1e-10,
                     max_iter: int = 200_000
                     ) -> tuple[NDArray[np.float64], NDArray[np.bool_], int]:
    """:func:`channel_mle` for many releases at once: ``counts`` is ``R x M`` (one release
    per row). The EM phase runs on all rows together (vectorised SQUAREM); the rows it does
    not certify get the projected Newton phase one by one.

    Returns ``(P, converged, iterations)``: ``P`` is ``R x N``, ``converged`` per row,
    ``iterations`` the largest count over the rows.

    Examples
    --------
    >>> from pmlkit.mle import channel_mle_many
    >>> p, ok, _ = channel_mle_many([[40, 60], [75, 25]], [[0.75, 0.25], [0.25, 0.75]])
    >>> p.round(6).tolist(), ok.tolist()
    ([[0.3, 0.7], [1.0, 0.0]], [True, True])
    """
    w = as_mechanism(mechanism)
    tol = check_real(tol, "tol", low=0.0, low_open=True)
    max_iter = check_count(max_iter, "max_iter", minimum=1)
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] != w.shape[1] or not np.all(np.isfinite(c)) \
            or np.any(c < 0):
        raise ValidationError(f"counts must be an R x {w.shape[1]} array of non-negative "
                              f"numbers (one row per release), got shape {c.shape}")
    tot = c.sum(axis=1, keepdims=True)
    if np.any(tot <= 0):
        raise DataError("a release has no records: nothing to estimate")
    f = c / tot
    reach = (f > 0).astype(np.float64) @ w.T > 0  # inputs that produce an observed output
    p = reach / reach.sum(axis=1, keepdims=True)

    def step(pa: np.ndarray, fa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = pa @ w
        ratio = np.divide(fa, q, out=np.zeros_like(q), where=(fa > 0) & (q > 0))
        g = ratio @ w.T
        nxt = pa * g
        return nxt / nxt.sum(axis=1, keepdims=True), g.max(axis=1) - 1.0

    def loglik(pa: np.ndarray, fa: np.ndarray) -> np.ndarray:
        q = pa @ w
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(fa > 0, fa * np.log(np.where(q > 0, q, 1.0)), 0.0)
            t = np.where((fa > 0) & (q <= 0), -np.inf, t)
        return np.asarray(t.sum(axis=1))

    active = np.ones(c.shape[0], dtype=bool)
    it = 0
    budget = min(max_iter, EM_PHASE)
    while active.any():
        idx = np.flatnonzero(active)
        p0, fa = p[idx], f[idx]
        p1, gap = step(p0, fa)
        done = gap <= tol
        active[idx[done]] = False
        if it >= budget:
            break
        p2, _ = step(p1, fa)
        r = p1 - p0
        v = p2 - p1 - r
        nr = np.sqrt((r * r).sum(axis=1))
        nv = np.sqrt((v * v).sum(axis=1))
        alpha = np.minimum(np.where(nv > 0, -nr / np.where(nv > 0, nv, 1.0), -1.0), -1.0)
        pe = p0 - 2 * alpha[:, None] * r + (alpha * alpha)[:, None] * v
        ok = (pe >= 0).all(axis=1)
        pe = np.where(ok[:, None], pe, p2)
        pe /= pe.sum(axis=1, keepdims=True)
        pn, _ = step(pe, fa)
        better = loglik(pn, fa) >= loglik(p2, fa)
        p[idx] = np.where(done[:, None], p0, np.where(better[:, None], pn, p2))
        it += 3
    conv = ~active
    iters = it
    for r_ in np.flatnonzero(active):  # one release at a time, not one record
        pos = c[r_] > 0
        wp = w[:, pos]
        alive = wp.sum(axis=1) > 0
        start = np.where(alive, p[r_], 0.0)
        pr, k, ok_ = _newton(wp, c[r_, pos] / tot[r_, 0], start / start.sum(), alive, tol,
                             max(max_iter - it, 1))
        p[r_], conv[r_] = pr, ok_
        iters = max(iters, it + k)
    return p, conv, iters
