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

Beyond the enumerated rays (more than 12 categories, or set kinds without exact rays) the
design works on square mechanisms directly, from two starting points:

- *PML randomized response*: ``W = s I + 1 b^T`` (keep the value with probability ``s``,
  else draw an output from ``b / (1 - s)``). Column ``y`` has largest entry ``s + b_y``
  and, for any distribution ``Q``, ``Q . W[:, y] = s Q(y) + b_y``, so its worst case over
  the set is exact: ``s (1 - e^eps l_y) <= (e^eps - 1) b_y`` with
  ``l_y = min_Q Q(y)`` over the set. Every category common enough
  (``e^eps l_y >= 1``) needs no noise mass at all, which k-ary randomized response (a
  uniform ``b``) cannot exploit: the largest keep probability is
  ``s = 1 / (1 + sum_y c_y)``, ``c_y = max(0, 1 - e^eps l_y) / (e^eps - 1)``, against
  ``1 / (1 + N max_y c_y)`` for k-RR at the same guarantee. Its estimation error is
  ``(1 - ||q||^2) / (n s^2)`` with ``q = s P + b``; for a given ``s`` the best ``b``
  puts the free mass on one category (``||q||^2`` is convex in ``b``), and ``s`` is
  chosen on a grid.
- *PML Hadamard response*: output ``y`` is a set ``S_y`` of inputs (row ``y`` of a
  Sylvester-Hadamard matrix of order ``K >= N + 1``, restricted to ``N`` inputs and ``N``
  non-constant rows, which are linearly independent) and ``W(y|x)`` is proportional to
  ``t`` if ``x in S_y`` and to 1 otherwise. Its columns reveal a coarse property of the
  value (which half of the alphabet it is in): such an output leaks at most
  ``log 1 / Q(S_y)``, about ``log 2``, however large ``t``, so where randomized response
  must spread its noise over all ``N`` outputs this start keeps ``t`` large. ``t`` is the
  largest (bisection on the exact worst case over the set) that meets ``eps``. At large
  ``N`` and small eps it identifies ``P`` far better than randomized response (Adult's
  ``native-country``, ``N = 42``, eps = 1: a quarter of the error before the local search;
  an eleventh after it).
- a *local search* over the exact polytope of eps-PML square mechanisms over the set
  (:func:`pmlkit.design.linear.mechanism_polytope`): Frank-Wolfe steps whose direction is
  the polytope vertex minimising the gradient of ``tr C(W)`` (one HiGHS LP), with a
  backtracking line search, so every iterate stays in the polytope and the error never
  increases. ``tr C`` is not convex in ``W``, so this is a local optimum: the result is
  reported without an optimality certificate.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._progress import report
from .._validation import check_count
from ..utility import RANK_TOL as RANK_TOL  # re-exported: inference uses it

if TYPE_CHECKING:
    from ..mechanism import Mechanism

__all__ = ["EstimationError", "estimation_mse", "hadamard_sets", "mechanism_rank",
           "pml_hadamard_matrix"]

#: Frank-Wolfe iterations and the relative gap at which it stops.
FW_MAX_ITER = 150
FW_REL_GAP = 1e-3
#: Iteration cap of the local search over square mechanisms (each step is one LP).
LOCAL_MAX_ITER = 200
#: Grid size of the keep probability of PML randomized response.
PML_RR_GRID = 2001


@functools.lru_cache(maxsize=64)
def _basis(n: int) -> np.ndarray:
    """Orthonormal basis (N x N-1) of the sum-zero vectors (read-only, cached: the local
    search evaluates the error thousands of times)."""
    q, _ = np.linalg.qr(np.vstack([np.ones(n), np.eye(n)[:-1]]).T)
    out = np.ascontiguousarray(q[:, 1:])
    out.setflags(write=False)
    return out


def mechanism_rank(mechanism: ArrayLike | Mechanism) -> int:
    """Numerical rank of the mechanism's matrix (singular values above
    :data:`RANK_TOL` times the largest). The distribution of the inputs is identified
    from released data exactly when it equals the number of inputs ``N``.

    Examples
    --------
    >>> from pmlkit.design.estimation import mechanism_rank
    >>> mechanism_rank([[0.75, 0.25], [0.25, 0.75]])
    2
    >>> mechanism_rank([[0.5, 0.5], [0.5, 0.5], [0.1, 0.9]])  # rows 0 and 1 are merged
    2
    """
    from ..mechanism import as_matrix

    s = np.linalg.svd(as_matrix(mechanism), compute_uv=False)
    return int((s > RANK_TOL * max(1.0, float(s[0]))).sum()) if s.size else 0


def estimation_mse(mechanism: ArrayLike | Mechanism, prior: ArrayLike, n: int) -> float:
    """Asymptotic expected squared error ``tr C(W) / n`` of the maximum-likelihood estimate
    of ``prior`` from ``n`` records released through ``mechanism`` (``inf`` when not
    identified). See the module docstring.

    Examples
    --------
    Without noise the estimate is the empirical distribution, whose expected squared error
    is ``(1 - sum_x p(x)^2) / n``: ``0.5 / 100`` for a fair coin:

    >>> from pmlkit.design.estimation import estimation_mse
    >>> estimation_mse([[1, 0], [0, 1]], [0.5, 0.5], 100)
    0.005

    Two inputs that share a row cannot be told apart:

    >>> estimation_mse([[0.5, 0.5], [0.5, 0.5], [0.1, 0.9]], [0.2, 0.3, 0.5], 100)
    inf
    """
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


class _RepeatedLP:
    """``min c @ x`` over constraints that stay fixed while ``c`` changes (the Frank-Wolfe
    directions): the LP :func:`scipy.optimize.linprog` (``method="highs"``) solves for the
    same arguments, with HiGHS given the same matrix, sides, bounds and presolve setting,
    through :func:`scipy.optimize.milp` without integer variables, so that the constraints
    are converted once rather than at every call. The status is linprog's (the same
    HiGHS status, and linprog's feasibility check of the solution, ``sqrt(tol) * 10`` with
    its default ``tol = 1e-9``); an objective that is not finite goes to linprog itself,
    which refuses it."""

    def __init__(self, *, a_ub: Any = None, b_ub: ArrayLike | None = None, a_eq: Any,
                 b_eq: ArrayLike, bounds: np.ndarray) -> None:
        from scipy.optimize import Bounds, LinearConstraint
        from scipy.sparse import coo_array, csc_array, issparse, vstack

        bounds = np.asarray(bounds, dtype=np.float64)
        nv = bounds.shape[0]
        self._args: dict[str, Any] = {"A_ub": a_ub, "b_ub": b_ub, "A_eq": a_eq,
                                      "b_eq": b_eq, "bounds": bounds}
        # the matrix as linprog builds it: A_ub over A_eq, in CSC
        if issparse(a_ub) or issparse(a_eq):
            a = csc_array(vstack((coo_array((0, nv) if a_ub is None else a_ub, dtype=float,
                                            copy=True),
                                  coo_array(a_eq, dtype=float, copy=True))))
        else:
            a = csc_array(np.vstack((np.zeros((0, nv)) if a_ub is None
                                     else np.array(a_ub, dtype=float),
                                     np.array(a_eq, dtype=float))))
        ub = np.zeros(0) if b_ub is None else np.array(b_ub, dtype=float).reshape(-1)
        eq = np.array(b_eq, dtype=float).reshape(-1)
        self._n_ub = ub.size
        self._a = a
        self._rhs = np.concatenate((ub, eq))
        self._constraint = LinearConstraint(a, np.concatenate((np.full(ub.size, -np.inf),
                                                               eq)), self._rhs)
        self._lb, self._ub = bounds[:, 0].copy(), bounds[:, 1].copy()
        self._bounds = Bounds(self._lb, self._ub)

    def solve(self, c: np.ndarray) -> tuple[int, np.ndarray | None, str]:
        """Status (linprog's codes), solution (``None`` on failure) and HiGHS' message."""
        from scipy.optimize import linprog, milp

        c = np.asarray(c, dtype=np.float64)
        if not np.isfinite(c).all():  # pragma: no cover - linprog raises its ValueError
            res = linprog(c, method="highs", **self._args)
            return int(res.status), res.x, str(res.message)
        res = milp(c, constraints=self._constraint, bounds=self._bounds,
                   options={"presolve": True})
        x = res.x
        status, message = int(res.status), str(res.message)
        if x is None:
            return (4 if status == 0 else status), None, message
        # linprog's check of the returned solution
        tol = math.sqrt(1e-9) * 10
        slack = self._rhs - self._a @ x
        if np.isnan(x).any() or np.isnan(res.fun) or np.isnan(slack).any():
            feasible = False
        else:
            feasible = bool(np.all((x >= self._lb - tol) & (x <= self._ub + tol))
                            and not (slack[:self._n_ub] < -tol).any()
                            and not (np.abs(slack[self._n_ub:]) > tol).any())
        if status == 0 and not feasible:  # pragma: no cover - HiGHS' tolerance is 1e-7
            return 4, x, "the solution does not satisfy the constraints"
        return status, x, message


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

    Examples
    --------
    For a fixed binary prior at eps = 1 the design estimates the distribution with a
    quarter of the error of eps-LDP randomized response (``e / (e + 1)`` kept):

    >>> import math
    >>> import pmlkit
    >>> from pmlkit.design.estimation import EstimationError, estimation_mse
    >>> m = pmlkit.optimal_mechanism([0.7, 0.3], 1.0, utility=EstimationError(1000))
    >>> keep = math.e / (math.e + 1)
    >>> rr = [[keep, 1 - keep], [1 - keep, keep]]
    >>> round(estimation_mse(m, [0.7, 0.3], 1000) / estimation_mse(rr, [0.7, 0.3], 1000), 3)
    0.252
    """

    def __init__(self, n: int = 10_000) -> None:
        self.n = check_count(n, "n")
        self.name = f"estimation_error(n={self.n})"
        self.last_gap: float = math.nan
        self.last_steps: int = 0
        self.last_fw_gap: float = math.nan
        self.last_start: str = ""

    def value(self, w: np.ndarray, p: np.ndarray) -> float:
        """``-tr C(W) / n`` at ``p`` (``-inf`` when ``W`` does not identify ``P``)."""
        return -_trace(np.asarray(w, dtype=np.float64), np.asarray(p, dtype=np.float64)) \
            / self.n

    def design_matrix(self, rays: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Frank-Wolfe over ``{theta >= 0 : rays @ theta = 1}``; returns the mechanism with
        columns ``theta_k v_k``."""
        from ._common import drop_empty_columns, repair_rows

        _, first = np.unique(np.round(rays.T, 9), axis=0, return_index=True)
        rays = rays[:, np.sort(first)]
        n, k = rays.shape
        pv = p @ rays
        pv = np.where(pv > 0, pv, 1.0)
        z = _basis(n)
        ones = np.ones(n)

        ray_lp = _RepeatedLP(a_eq=rays, b_eq=ones,
                             bounds=np.tile([0.0, np.inf], (k, 1)))

        def lp(obj: np.ndarray) -> np.ndarray:
            status, x, message = ray_lp.solve(obj)
            if status != 0:  # w = 1 is always a ray: a numerical failure (tiny eps)
                from ..errors import PMLError

                raise PMLError(
                    f"the estimation design's LP over {k} extreme rays failed "
                    f"({message}); the rays are nearly equal at a very small eps: "
                    "raise eps, or design for utility='mutual_information'")
            return np.asarray(x)

        def info(theta: np.ndarray) -> np.ndarray:
            return np.asarray(z.T @ ((rays * (theta / pv)) @ rays.T) @ z)

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

    def refine(self, w: np.ndarray, uncertainty_set: Any, p: np.ndarray, eps: float, *,
               deadline: float = math.inf, max_steps: int = LOCAL_MAX_ITER) -> np.ndarray:
        """``w`` (``N x M'``, ``M' <= N``, inside the eps-PML polytope of the set: for
        example a design's outputs merged to publish them as values) refined by the local
        search over the square eps-PML polytope (:func:`local_search`; zero columns are
        added to make it square, and the columns left empty are dropped again). The error
        never increases. ``last_steps`` counts the steps. Not certified here (the caller
        certifies).

        Examples
        --------
        From binary randomized response at eps = 1 (``e / (1 + e)`` kept) for a skewed
        fixed prior, the search lowers the error without leaving eps:

        >>> import math
        >>> import numpy as np
        >>> from pmlkit.sets import L1Ball
        >>> from pmlkit.worstcase import leakage_capacity
        >>> k = math.e / (1 + math.e)
        >>> rr = np.array([[k, 1 - k], [1 - k, k]])
        >>> ball = L1Ball([0.8, 0.2], 0.0)
        >>> e = EstimationError(100)
        >>> w = e.refine(rr, ball, np.array([0.8, 0.2]), 1.0)
        >>> bool(e.value(w, [0.8, 0.2]) > e.value(rr, [0.8, 0.2]))
        True
        >>> bool(leakage_capacity(w, ball) <= 1.0 + 1e-9)
        True
        """
        w = np.asarray(w, dtype=np.float64)
        n = w.shape[0]
        if w.shape[1] < n:
            w = np.hstack([w, np.zeros((n, n - w.shape[1]))])
        out, gap, steps = local_search(w, p, uncertainty_set, eps, deadline=deadline,
                                       max_iter=max(0, min(int(max_steps), LOCAL_MAX_ITER)))
        self.last_steps, self.last_fw_gap = steps, gap
        return np.asarray(out[:, out.sum(axis=0) > 0])

    def design_over_set(self, uncertainty_set: Any, p: np.ndarray, eps: float, *,
                        deadline: float = math.inf, max_steps: int = LOCAL_MAX_ITER
                        ) -> np.ndarray:
        """Square mechanism for any set and N (module docstring): PML randomized response
        (never worse than k-RR at the same guarantee) and PML Hadamard response, each
        refined by the local search over the exact polytope until its Frank-Wolfe gap
        falls below :data:`FW_REL_GAP`, the steps run out (``max_steps``, at most
        :data:`LOCAL_MAX_ITER`, shared by the two searches: the first takes at most half)
        or ``deadline`` (``time.monotonic()``, an outer cap); the one with the smaller
        error is returned (``last_start`` names it). Not certified
        here (the caller certifies)."""
        p = np.asarray(p, dtype=np.float64)
        rr = pml_randomized_response_matrix(uncertainty_set, p, eps)
        if rr is None:
            # eps = 0: only constant columns are allowed, nothing identifies P
            return np.ones((p.size, 1))
        steps_cap = max(0, min(int(max_steps), LOCAL_MAX_ITER))
        starts = [("PML randomized response", rr)]
        hr = pml_hadamard_matrix(uncertainty_set, eps)
        if hr is not None:
            starts.append(("PML Hadamard response", hr))
        best: tuple[float, np.ndarray, float, int, str] | None = None
        # one budget of steps for both searches (the same work as a single search): the
        # first gets half, the second what the first left (randomized response's search
        # usually stops early, at its Frank-Wolfe gap)
        left = steps_cap
        for i, (name, w0) in enumerate(starts):
            cap = left if i == len(starts) - 1 else (steps_cap + 1) // 2
            w, gap, steps = local_search(w0, p, uncertainty_set, eps, deadline=deadline,
                                         max_iter=cap)
            left = max(0, left - steps)
            err = _trace(w, p)
            if best is None or err < best[0]:
                best = (err, w, gap, steps, name)
        assert best is not None
        self.last_gap = math.nan
        self.last_steps = best[3]
        self.last_fw_gap = best[2]
        self.last_start = best[4]
        return best[1]


def pml_randomized_response_matrix(uncertainty_set: Any, prior: ArrayLike, eps: float
                                   ) -> np.ndarray | None:
    """PML randomized response ``s I + 1 b^T`` (module docstring) minimising the
    estimation error at ``prior``; ``None`` when ``eps = 0`` (no ``s > 0`` is allowed)."""
    p = np.asarray(prior, dtype=np.float64)
    if eps <= 0:
        return None
    lo = np.asarray(uncertainty_set.coordinate_bounds()[0], dtype=np.float64)
    e = math.exp(min(eps, 700.0))
    c = np.maximum(0.0, 1.0 - e * lo) / (e - 1.0)
    total = float(c.sum())
    k = int(np.argmax(p + c))
    s_max = 1.0 / (1.0 + total)
    s = np.linspace(s_max / PML_RR_GRID, s_max, PML_RR_GRID)
    # q = s (p + c) + (1 - s (1 + C)) e_k; error (1 - ||q||^2) / s^2
    u = p + c
    qq = s**2 * float(u @ u) + 2 * s * u[k] * (1 - s * (1 + total)) \
        + (1 - s * (1 + total)) ** 2
    best = float(s[int(np.argmin((1.0 - qq) / s**2))])
    b = best * c
    b[k] += max(0.0, 1.0 - best * (1.0 + total))
    w = best * np.eye(p.size) + b[None, :]
    return np.asarray(w / w.sum(axis=1, keepdims=True))


#: Bisection steps of the PML Hadamard response's ratio ``t`` (on ``log t``).
HADAMARD_BISECT = 60
#: Largest ratio tried: beyond it the columns are treated as deterministic half-reports.
HADAMARD_MAX_LOG_RATIO = 60.0


def _sylvester(k: int) -> np.ndarray:
    """Sylvester-Hadamard matrix of order ``k`` (a power of 2), entries +-1."""
    h = np.ones((1, 1))
    while h.shape[0] < k:
        h = np.block([[h, h], [h, -h]])
    return h


def hadamard_sets(n: int) -> np.ndarray:
    """``N x N`` 0/1 matrix ``S[x, y] = [x in S_y]`` of the PML Hadamard response: rows and
    columns ``1..N`` of the Sylvester-Hadamard matrix of order ``K >= N + 1`` (the constant
    row 0 left out).

    Examples
    --------
    >>> hadamard_sets(3).astype(int)
    array([[0, 1, 0],
           [1, 0, 0],
           [0, 0, 1]])
    """
    n = check_count(n, "n")
    k = 1
    while k < n + 1:
        k *= 2
    return np.asarray(_sylvester(k)[1:n + 1, 1:n + 1] > 0, dtype=np.float64)


def pml_hadamard_matrix(uncertainty_set: Any, eps: float) -> np.ndarray | None:
    """PML Hadamard response (module docstring): the square mechanism
    ``W(y|x) ~ t^[x in S_y]`` with the largest ratio ``t`` whose exact worst case over the
    set is within ``eps`` (:func:`pmlkit.worstcase.certifies`, so the rounding goes
    against the guarantee); ``None`` when ``eps = 0``, ``N < 2`` or the sets do not
    identify ``P`` (never seen for ``N <= 200``).

    Examples
    --------
    Over an l1-ball around the uniform distribution on 4 points at eps = 1:

    >>> import numpy as np
    >>> from pmlkit.sets import L1Ball
    >>> from pmlkit.worstcase import leakage_capacity
    >>> ball = L1Ball(np.full(4, 0.25), 0.1)
    >>> w = pml_hadamard_matrix(ball, 1.0)
    >>> w.shape, bool(leakage_capacity(w, ball) <= 1.0)
    ((4, 4), True)
    """
    from ..worstcase import certifies

    n = int(uncertainty_set.n)
    if eps <= 0 or n < 2:
        return None
    s = hadamard_sets(n)
    if np.linalg.matrix_rank(s) < n:  # pragma: no cover - full rank for every n tried
        return None

    def make(log_t: float) -> np.ndarray:
        w = np.where(s > 0, 1.0, math.exp(-log_t))
        return np.asarray(w / w.sum(axis=1, keepdims=True))

    if certifies(make(HADAMARD_MAX_LOG_RATIO), uncertainty_set, eps):
        return make(HADAMARD_MAX_LOG_RATIO)
    lo, hi = 0.0, HADAMARD_MAX_LOG_RATIO  # t = 1 (constant columns) always certifies
    for _ in range(HADAMARD_BISECT):
        mid = 0.5 * (lo + hi)
        if certifies(make(mid), uncertainty_set, eps):
            lo = mid
        else:
            hi = mid
    return make(lo) if lo > 0 else None


def _gradient(w: np.ndarray, p: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Gradient of ``tr (Z^T F Z)^{-1}`` with respect to ``W`` (``F = W D W^T``,
    ``D = diag(1 / q)``, ``q = W^T p``): ``-2 G W D + p h^T`` with
    ``G = Z M^-2 Z^T`` and ``h_y = w_y^T G w_y / q_y^2``."""
    q = p @ w
    d = np.where(q > 0, 1.0 / np.where(q > 0, q, 1.0), 0.0)
    minv = np.linalg.inv(z.T @ ((w * d) @ w.T) @ z)
    g = z @ minv @ minv @ z.T
    gw = g @ w
    h = np.einsum("xy,xy->y", w, gw) * d**2
    return np.asarray(-2.0 * gw * d + np.outer(p, h))


def local_search(w: np.ndarray, prior: ArrayLike, uncertainty_set: Any, eps: float, *,
                 max_iter: int = LOCAL_MAX_ITER, deadline: float = math.inf
                 ) -> tuple[np.ndarray, float, int]:
    """Frank-Wolfe descent of ``tr C(W)`` at ``prior`` over the square eps-PML polytope
    of the set, from ``w`` (inside it). Returns the matrix, the last relative Frank-Wolfe
    gap and the number of steps taken."""
    import time

    from .linear import mechanism_polytope

    p = np.asarray(prior, dtype=np.float64)
    n = p.size
    poly = mechanism_polytope(uncertainty_set, eps, n_outputs=n)
    z = _basis(n)
    f = _trace(w, p)
    rel = math.inf
    steps = 0
    if not math.isfinite(f):
        return w, rel, steps
    poly_lp = _RepeatedLP(a_ub=poly.A_ub, b_ub=poly.b_ub, a_eq=poly.A_eq, b_eq=poly.b_eq,
                          bounds=poly.bounds)
    for _ in range(max_iter):
        if time.monotonic() > deadline:
            break
        grad = _gradient(w, p, z)
        cvec = np.zeros(poly.n_vars)
        cvec[poly.layout["W"]] = grad.ravel()
        status, x, _ = poly_lp.solve(cvec)
        if status != 0 or x is None:  # pragma: no cover - w is feasible
            break
        d = poly.matrix(x) - w
        gap = float(-np.sum(grad * d))
        rel = gap / f
        report("design.local-search", step=steps + 1, max_steps=max_iter, gap=rel,
               error=f)
        if rel <= FW_REL_GAP:
            break
        # backtracking (sufficient decrease), then a short golden-section refinement
        t = 1.0
        while t > 1e-12 and not _trace(w + t * d, p) <= f - 1e-4 * t * gap:
            t *= 0.5
        if t <= 1e-12:
            break
        lo, hi = 0.5 * t, min(1.0, 2.0 * t)
        for _ in range(20):
            a = hi - 0.618034 * (hi - lo)
            b = lo + 0.618034 * (hi - lo)
            if _trace(w + a * d, p) <= _trace(w + b * d, p):
                hi = b
            else:
                lo = a
        cands = [(t, _trace(w + t * d, p)), (0.5 * (lo + hi), _trace(w + 0.5 * (lo + hi) * d,
                                                                      p))]
        t, fn = min(cands, key=lambda c: c[1])
        w = w + t * d
        f = fn
        steps += 1
    w = np.where(w < 0, 0.0, w)
    return w / w.sum(axis=1, keepdims=True), rel, steps
