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
  cells at n = 100 to 300 with N = 5 and 10); the hull brings those cells back to
  0.94 to 0.96 at the price of wider intervals elsewhere (mean coverage about 0.97).
  **Small counts.** Under a mechanism that adds little noise (randomized response at
  large eps, or a design that is the identity) a category with ``P(x)`` near ``2/n``
  often has no released record, and both intervals then end near ``1.9/n`` (exact
  coverage 0.85). Where Cochran's rule fails (the interval holds a value under which the
  expected count of the category's own output, or of the others, is below 5) the hull
  also takes the exact Clopper-Pearson interval of that output's count, mapped to
  ``P(x)`` (docs/estimation.md, "Small counts"): exact coverage 0.93 to 0.96 there.

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

The package holds one concept per module: ``_estimate`` (estimates from output counts),
``_read`` (estimates from released values) and ``_find`` (the mechanism of a released
file). Every name is imported from here; the joint distribution of several released
columns is :mod:`pmlkit.inference_joint`.
"""

from __future__ import annotations

from ._estimate import EL_INNER as EL_INNER
from ._estimate import EL_OUTER as EL_OUTER
from ._estimate import EM_MAX_ITER as EM_MAX_ITER
from ._estimate import EM_TOL as EM_TOL
from ._estimate import METHODS as METHODS
from ._estimate import PROFILE_MAX_CATEGORIES as PROFILE_MAX_CATEGORIES
from ._estimate import PROFILE_MAX_ITER as PROFILE_MAX_ITER
from ._estimate import PROFILE_RTOL as PROFILE_RTOL
from ._estimate import PROFILE_SLACK as PROFILE_SLACK
from ._estimate import PROFILE_STEPS as PROFILE_STEPS
from ._estimate import PROFILE_XTOL as PROFILE_XTOL
from ._estimate import (
    DistributionEstimate,
    GroupedEstimates,
    estimate_from_counts,
    identifiable,
)
from ._find import MECHANISM_KEY as MECHANISM_KEY
from ._find import find_joint_release, find_mechanism, released_columns
from ._read import estimate_distribution, output_codes

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
