"""A design utility for the analyst: the expected squared error of the estimated
distribution.

For ``n`` records released through ``W`` from ``P``, the maximum-likelihood estimate of
``P`` (:func:`pmlkit.estimate_distribution`) has, for large ``n`` and ``P`` inside the
simplex, covariance ``C(W) / n`` with

    C(W) = Z (Z^T F Z)^{-1} Z^T,     F = W diag(1 / q) W^T,  q = W^T P,

``F`` the Fisher information of one record and ``Z`` an orthonormal basis of the
directions ``{v : sum v = 0}`` (the simplex's tangent space). The expected squared error
is ``E ||P_hat - P||^2 ~ tr C(W) / n``; it is infinite when ``rank W < N`` (``P`` is not
identified). :class:`EstimationError` makes ``-tr C(W) / n`` at the reference
distribution the design objective.

It is not of the column-separable form ``sum_j mu(W[:, j])`` the extreme-ray LP maximises,
but it is a convex function of the ray weights ``theta`` (``F`` is linear in ``theta``:
``F = sum_k theta_k v_k v_k^T / (P . v_k)``, and ``tr (Z^T F Z)^{-1}`` is convex in
``F``), so it is minimised over the same polytope ``{theta >= 0 : sum_k theta_k v_k = 1}``
by Frank-Wolfe: each step solves the ray LP (HiGHS) with the gradient as objective, and
the Frank-Wolfe gap bounds the distance to the optimum (reported in the mechanism's
``parameters["method"]``). The result is certified like every design.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_count

__all__ = ["EstimationError", "estimation_mse"]

#: Frank-Wolfe iterations and the relative gap at which it stops.
FW_MAX_ITER = 150
FW_REL_GAP = 1e-3


def _basis(n: int) -> np.ndarray:
    """Orthonormal basis (N x N-1) of the sum-zero vectors."""
    q, _ = np.linalg.qr(np.vstack([np.ones(n), np.eye(n)[:-1]]).T)
    return q[:, 1:]


def estimation_mse(mechanism: Any, prior: Any, n: int) -> float:
    """Asymptotic expected squared error ``tr C(W) / n`` of the maximum-likelihood estimate
    of ``prior`` from ``n`` records released through ``mechanism`` (``inf`` when not
    identified). See the module docstring."""
    from .._validation import as_distribution
    from ..mechanism import as_matrix

    w = as_matrix(mechanism)
    p = as_distribution(prior)
    n = check_count(n, "n")
    return _trace(w, p) / n


def _trace(w: np.ndarray, p: np.ndarray) -> float:
    q = p @ w
    keep = q > 0
    f = (w[:, keep] / q[keep]) @ w[:, keep].T
    z = _basis(p.size)
    m = z.T @ f @ z
    try:
        ev = np.linalg.eigvalsh(m)
    except np.linalg.LinAlgError:  # pragma: no cover
        return math.inf
    if ev.min() <= 1e-12 * max(1.0, ev.max()):
        return math.inf
    return float(np.sum(1.0 / ev))


class EstimationError:
    """Design utility: minus the expected squared error of the estimated distribution.

    ``design_from_samples(samples, eps, delta, utility=EstimationError(n))`` designs the
    mechanism minimising ``tr C(W) / n`` at the reference estimate (see the module
    docstring) over the same extreme rays as the mutual-information design (exact rays:
    ``N <= 12``), certified over the uncertainty set like every design.

    Parameters
    ----------
    n
        Number of records that will be released (scales the error; the optimal mechanism
        does not depend on it).
    """

    def __init__(self, n: int = 10_000) -> None:
        self.n = check_count(n, "n")
        self.name = f"estimation_error(n={self.n})"
        self.last_gap: float = math.nan

    def value(self, w: np.ndarray, p: np.ndarray) -> float:
        """``-tr C(W) / n`` at ``p`` (``-inf`` when ``W`` does not identify ``P``)."""
        return -_trace(np.asarray(w, dtype=np.float64), np.asarray(p, dtype=np.float64)) \
            / self.n

    def design_matrix(self, rays: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Frank-Wolfe over ``{theta >= 0 : rays @ theta = 1}``; returns the mechanism with
        columns ``theta_k v_k``."""
        from scipy.optimize import linprog

        from ._common import drop_empty_columns, repair_rows

        _, first = np.unique(np.round(rays.T, 9), axis=0, return_index=True)
        rays = rays[:, np.sort(first)]
        n, k = rays.shape
        pv = p @ rays
        pv = np.where(pv > 0, pv, 1.0)
        z = _basis(n)
        ones = np.ones(n)

        def lp(obj: np.ndarray) -> np.ndarray:
            res = linprog(obj, A_eq=rays, b_eq=ones, bounds=(0, None), method="highs")
            if res.status != 0:  # pragma: no cover - w = 1 is always a ray
                raise RuntimeError(f"ray LP failed: {res.message}")
            return np.asarray(res.x)

        def info(theta: np.ndarray) -> np.ndarray:
            return z.T @ ((rays * (theta / pv)) @ rays.T) @ z

        def objective(theta: np.ndarray) -> float:
            ev = np.linalg.eigvalsh(info(theta))
            if ev.min() <= 1e-13 * max(1.0, ev.max()):
                return math.inf
            return float(np.sum(1.0 / ev))

        # start: the average of LP vertices for several objectives (spread over the
        # polytope, so that the start identifies P whenever some feasible point does)
        rng = np.random.default_rng(0)
        starts = [lp(np.asarray(rng.standard_normal(k))) for _ in range(2 * n)]
        theta = np.mean(starts, axis=0)
        fval = objective(theta)
        if not math.isfinite(fval):
            self.last_gap = math.inf
            w = rays * theta
            return drop_empty_columns(repair_rows(w))
        gap = math.inf
        for _ in range(FW_MAX_ITER):
            minv = np.linalg.inv(info(theta))
            zg = z @ minv @ z.T  # G with Z^T Z = I: Z M^-2 Z^T = (Z M^-1 Z^T)^2
            g = zg @ zg
            grad = -np.einsum("ik,ij,jk->k", rays, g, rays) / pv
            s = lp(grad)
            gap = float(grad @ (theta - s))
            if gap <= FW_REL_GAP * fval:
                break
            # exact line search on the convex segment (golden section)
            lo, hi = 0.0, 1.0
            for _ in range(30):
                a = hi - 0.618034 * (hi - lo)
                b = lo + 0.618034 * (hi - lo)
                if objective(theta + a * (s - theta)) <= objective(theta + b * (s - theta)):
                    hi = b
                else:
                    lo = a
            step = 0.5 * (lo + hi)
            theta = theta + step * (s - theta)
            fval = objective(theta)
        self.last_gap = gap / fval if math.isfinite(fval) and fval > 0 else math.inf
        keep = theta > 1e-12
        w = rays[:, keep] * theta[keep]
        return drop_empty_columns(repair_rows(w))
