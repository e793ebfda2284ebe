"""Audit of pmlkit's (eps, delta) guarantees: exact sums where they are cheap, simulation
elsewhere.

A guarantee "(eps, delta)-PML from m samples" is a statement about the probability, over
the estimation sample (and, for the Gaussian, over the output), that the released mechanism
leaks more than eps about the *true* distribution; that probability is at most the
probability that the confidence set misses the truth, plus the output tail. An audit with
power must look where a guarantee is weakest: at the true distributions that make the
confidence set miss most often, at tiny samples, at the edge of each set, and at what is
actually written to disk. :func:`run_audit` has six families.

``exact`` (no statistics needed)
    For every confidence method of :data:`pmlkit.confidence.METHODS`, the probability
    ``P[P not in set]`` is computed *exactly*, as a sum over every sample outcome, and
    compared with delta directly. N = 2: for each m in :data:`EXACT_M_BINARY` (1 to
    10^4) the set of each count ``k`` is an interval ``[a_k, b_k]`` of ``Q(x1)``, so the
    failure probability at ``q`` is a sum of binomial probabilities over the uncovered
    counts (two CDF tails when the ends are monotone in ``k``). As a function of ``q`` it
    only jumps up where ``q`` leaves some interval, so the worst-case truths are the points
    just outside every interval end, plus a grid (every end up to ``m = 1300``; above, the
    ends of the 300 smallest and 300 largest counts and of 700 spread ones; a third of
    that, from ``m = 434``, for sets whose ends are not monotone in the count). N = 3..5 (sizes in
    :data:`EXACT_M_MULTI`): every multinomial outcome is enumerated, and the worst case is
    searched over distributions just outside every set's coordinate bounds, the uniform
    one, random Dirichlet draws and a local random search around the best. The value at
    each candidate is exact; the supremum is approached from below (a value above delta is
    a proof of failure). The sets are built in batch with the constructions
    :mod:`pmlkit.confidence` uses, and at one delta one outcome per batch is compared with
    the public :func:`pmlkit.confidence.confidence_set` (a mismatch fails the row).
``design``
    ``design_from_samples`` with every confidence method (a quarter of the trials each;
    mutual information for ``N <= 8``, the linear accuracy for ``N = 9..12``), the exact
    robust design ``optimal_mechanism(p_hat, eps, beta=beta*(delta))`` and the paper's
    fixed-prior design at ``eps' = log(e^eps / (1 + beta e^eps / 2))`` (eq. LPsubset; only
    where ``beta < 2 min p_hat`` and ``eps' >= 0``; other trials are *refused*). Violation:
    ``eps_min(W, P) > eps`` at the true ``P``, a value within rounding of eps counting as a
    violation (:func:`pmlkit._validation.exceeds`). Every design is also checked at its
    own worst case: a generic HiGHS LP, independent of the library's greedy minimisers,
    finds for each output the distribution of the certified set with the smallest output
    probability; leaking more than the certified eps there is a false certificate.
``laplace``
    The scale ``b`` of :func:`pmlkit.additive.calibrate_laplace` (every confidence
    method) has true PML ``laplace_eps(b, min P) > eps`` (Prop. Laplaceleakage; within
    rounding of eps counts as a violation).
``gaussian``
    For each trial, the curve (method "paper" or "direct" of
    :func:`pmlkit.additive.gaussian_tradeoff` with ``delta2 = delta / 2``, and the same two
    curves of :func:`pmlkit.additive.calibrate_gaussian` over the ``"box-cp"`` set) is
    computed on a grid of inner eps, and its first point with claimed delta ``<= delta``
    is released with its ``eps_out``. The violation is over the sample *and* the output:
    ``{P outside the set} or {Y in E_eps_out(P)}``, the output event drawn exactly as
    ``U < P_Y(E_eps_out(P))`` with ``U`` uniform
    (:func:`pmlkit.additive.gaussian_violation_probability`). Its probability is at most
    ``delta2 + (1 - delta2) delta1 <= delta`` when the guarantee holds.
``coverage``
    Simulated coverage of every method's set for ``N`` up to 10 and ``m`` up to 5000.
``release``
    The end-to-end path: design from a reference sample, save the mechanism file, load it
    back, privatise a CSV of fresh records (disjoint from the reference sample) in a
    temporary folder with :func:`pmlkit.privatize_file`, read the output back. Violation:
    the mechanism read back from the file leaks more than eps at the true ``P``.
    Exceptions: a file that does not give back the designed mechanism, altered or
    reordered records, released values or (input, output) pairs the mechanism cannot
    produce, a released column that fails a chi-square goodness-of-fit test against the
    mechanism at level 1e-6, a false certificate at the LP worst case.

True distributions of the simulations: Dirichlet with concentrations 0.1
"near-degenerate", 0.5 "skewed", 1 "flat", 5 "concentrated", and "edge" distributions
whose smaller half of categories have probabilities ``u / m`` with ``u`` in ``[0.2, 3]``
(categories seen 0 to 3 times: where the sets' lower ends and the worst cases sit);
``m`` from 5 to 10^4 for the designs, ``N`` up to 12.

Why the simulated tests are valid: trials are independent; the kind of truth and the
sample size are cycled (stratified), so trial ``t`` violates with its own probability
``r_t``, and the guarantee says ``r_t <= delta`` for *every* true distribution. A sum of
independent Bernoulli(``r_t <= delta``) is stochastically smaller than Binomial(trials,
delta), so the exact one-sided binomial test keeps its level. Each simulated row reports
the violations out of the trials, a one-sided Clopper-Pearson upper confidence bound at
level ``1 - alpha`` and the p-value of the exact one-sided binomial test of
``H0: rate <= delta`` (rejected when ``p < alpha``, default ``alpha = 0.001``). The
*conditional check* is deterministic: in every trial where ``P`` lies in the set the
mechanism was certified for, the mechanism must be eps-PML for ``P`` (and for the Gaussian
``P_Y(E_eps_out(P)) <= delta1``); any exception is a bug, whatever delta says. An ``exact``
row instead reports the number of cases (N, m) whose exact failure probability exceeds
delta, the largest failure probability found (``rate``) and where (``worst_case``).

``radius_scale`` shrinks every confidence set towards its estimate (an l1 radius times the
factor, a box's bounds pulled towards the estimate): values below 1 build deliberately
broken variants that the audit must reject (``benchmarks/bench_audit_power.py`` sweeps it).
The release path runs only as shipped (``radius_scale = 1``).

The observable deltas (0.05, 0.3) make violations frequent enough to be seen; the paper's
delta (1e-6) is audited too (violations there would be a disaster).

The package holds one concept per module: ``_results`` (rows, results, tallies),
``_simulated`` (the simulated families and :func:`run_audit`), ``_exact`` (the exact
coverage sums) and ``_joint`` (:func:`audit_joint`). Every name is imported from here.
"""

from __future__ import annotations

from ..confidence import clopper_pearson_upper
from ._joint import audit_joint
from ._results import CONCENTRATIONS, DEFAULT_DELTAS, FAMILIES, AuditResult, AuditRow
from ._results import EPS_TOL as EPS_TOL
from ._simulated import run_audit

__all__ = [
    "CONCENTRATIONS",
    "DEFAULT_DELTAS",
    "FAMILIES",
    "AuditResult",
    "AuditRow",
    "audit_joint",
    "clopper_pearson_upper",
    "run_audit",
]
