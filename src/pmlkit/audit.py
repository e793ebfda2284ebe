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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ._deprecation import renamed_parameter
from ._optional import require
from ._validation import check_count, check_delta, check_real, exceeds, fmt
from .confidence import clopper_pearson_upper
from .errors import PMLError, ValidationError
from .worstcase import CERTIFY_TOL

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

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

#: Families of guarantees audited by :func:`run_audit`.
FAMILIES: tuple[str, ...] = ("design", "laplace", "gaussian", "coverage", "exact", "release")
#: Claimed deltas audited by default: two observable ones and the paper's order of magnitude.
DEFAULT_DELTAS: tuple[float, ...] = (0.05, 0.3, 1e-6)
#: Dirichlet concentrations of the true distributions (name -> alpha).
CONCENTRATIONS: dict[str, float] = {
    "near-degenerate": 0.1, "skewed": 0.5, "flat": 1.0, "concentrated": 5.0,
}
#: Slack allowed on the joint audits' eps comparisons (:func:`audit_joint`), whose claims
#: are computed worst cases themselves: the certification tolerance of pmlkit (one owner).
#: The single-column audits count a measured eps within rounding of its claim as a
#: violation (:func:`pmlkit._validation.exceeds`): rounding counts against the guarantee.
EPS_TOL = CERTIFY_TOL

_DESIGN_SIZES = (5, 30, 100, 1_000, 10_000)
_DESIGN_MAX_N = 12
_HARD_SIZES = (5, 10, 20, 30, 50)
_DESIGN_EPS = (0.5, 1.0, 2.0)
_EXACT_MAX_N = 6            # the exact robust designer enumerates 2^N extreme rays
_MI_MAX_N = 8               # beyond, design_from_samples runs with the (linear) accuracy
#: Confidence sets of design_from_samples audited: the paper's ball, the nearly tight
#: Clopper-Pearson box, and the automatic choice.
_DESIGN_CONFIDENCE = ("l1", "box-cp", "auto")
_ADDITIVE_SIZES = (50, 200, 1_000, 5_000)
_LAPLACE_EPS = (0.1, 0.5, 1.0, 2.0)
_GAUSS_SIGMAS = (1.5, 2.0)
_GAUSS_CONFIDENCE = ("box-cp",)   # beyond the paper's ball (calibrate_gaussian)
_GAUSS_GRID = np.concatenate([np.geomspace(0.01, 1.0, 25), np.geomspace(1.1, 12.0, 20)])


# --------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------

def _binom_pvalue(k: int, n: int, delta: float) -> float:
    """Exact one-sided binomial test of ``H0: rate <= delta`` (``P[Bin(n, delta) >= k]``)."""
    from scipy.stats import binomtest

    if n == 0:
        return 1.0
    return float(binomtest(k, n, delta, alternative="greater").pvalue)


@dataclass(frozen=True)
class AuditRow:
    """One audited guarantee.

    Attributes
    ----------
    family, method
        E.g. ``("design", "design_from_samples")``, ``("coverage", "box-kl")``.
    delta
        The claimed failure probability.
    trials
        Trials in which the library returned a mechanism/set (refusals excluded).
    refused
        Trials in which the library refused (e.g. the paper's condition failed); not
        violations.
    violations
        Trials with the event described by ``event``.
    rate, upper
        ``violations / trials`` and its one-sided Clopper-Pearson upper bound (level
        ``1 - alpha``).
    p_value, rejected
        Exact one-sided binomial test of ``rate <= delta``; ``rejected = p_value < alpha``.
    inside
        Trials in which the true distribution lay in the set used.
    conditional_exceptions
        Trials inside the set in which the certified guarantee nevertheless failed (must be 0).
    passed
        ``not rejected and conditional_exceptions == 0``.
    event
        What was counted, in words.

    Examples
    --------
    The Laplace calibration audited over 3 simulated reference samples at delta = 0.3:

    >>> res = run_audit(trials=3, rng=0, families=("laplace",), deltas=(0.3,))
    >>> row = res.rows[0]
    >>> row.family, row.method, row.violations, row.passed
    ('laplace', 'calibrate_laplace[l1]', 0, True)
    >>> row.rate == row.violations / row.trials and 0 <= row.rate <= row.upper <= 1
    True
    """

    family: str
    method: str
    delta: float
    trials: int
    refused: int
    violations: int
    rate: float
    upper: float
    p_value: float
    rejected: bool
    inside: int
    conditional_exceptions: int
    passed: bool
    event: str = field(repr=False, default="")
    exact: bool = False
    worst_case: str = field(repr=False, default="")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of every field."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class AuditResult:
    """Result of :func:`run_audit`: one :class:`AuditRow` per (family, method, delta).

    ``table`` is the tidy pandas DataFrame of the rows; ``passed`` is ``True`` when every
    row passed (no binomial test rejected, no conditional exception).

    Examples
    --------
    >>> res = run_audit(trials=3, rng=0, families=("laplace",), deltas=(0.3,))
    >>> res.passed, len(res.table) == len(res.rows), res.seed
    (True, True, 0)
    >>> res.row("laplace", "calibrate_laplace[l1]", 0.3).violations
    0
    """

    rows: tuple[AuditRow, ...]
    trials: int
    seed: int | None
    alpha: float
    radius_scale: float
    rng: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rows)

    @property
    def table(self) -> pd.DataFrame:
        """One row per audited guarantee (the columns of :class:`AuditRow`)."""
        pd = require("pandas", "the audit's tables")

        return pd.DataFrame([r.to_dict() for r in self.rows])

    def row(self, family: str, method: str, delta: float) -> AuditRow:
        """The row of one (family, method, delta); ``KeyError`` when absent."""
        for r in self.rows:
            if r.family == family and r.method == method and r.delta == delta:
                return r
        raise KeyError((family, method, delta))

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "trials": self.trials, "seed": self.seed,
                "alpha": self.alpha, "radius_scale": self.radius_scale, "rng": self.rng,
                "settings": dict(self.settings), "rows": [r.to_dict() for r in self.rows]}

    def __str__(self) -> str:
        head = (f"{'family':9} {'method':34} {'delta':>8} {'viol/trials':>12} {'rate':>7} "
                f"{'CP upper':>8} {'p-value':>8} {'inside':>7} {'cond.exc':>8}  result")
        lines = [head, "-" * len(head)]
        for r in self.rows:
            if r.exact:  # rate = largest exact failure probability found; no test needed
                lines.append(
                    f"{r.family:9} {r.method:34} {r.delta:8.2g} "
                    f"{f'{r.violations}/{r.trials}':>12} {r.rate:7.4g} {'exact':>8} "
                    f"{'-':>8} {r.inside:7d} {r.conditional_exceptions:8d}  "
                    f"{'ok' if r.passed else 'FAIL'} (worst: {r.worst_case})")
                continue
            lines.append(
                f"{r.family:9} {r.method:34} {r.delta:8.2g} "
                f"{f'{r.violations}/{r.trials}':>12} {r.rate:7.4f} {r.upper:8.4f} "
                f"{r.p_value:8.3g} {r.inside:7d} {r.conditional_exceptions:8d}  "
                f"{'ok' if r.passed else 'FAIL'}"
                + (f" ({r.refused} refused)" if r.refused else ""))
        lines.append(f"alpha = {self.alpha:g} (one-sided binomial test of rate <= delta; "
                     f"Clopper-Pearson upper bound at level 1 - alpha; 'exact' rows: cases "
                     f"with an exact failure probability > delta / cases, rate = the largest "
                     f"found); radius_scale = "
                     f"{self.radius_scale:g}; randomness: {self.rng}")
        lines.append("overall: " + ("PASSED" if self.passed else "FAILED"))
        return "\n".join(lines)


class _Tally:
    """Accumulates the outcome of the trials of one row."""

    def __init__(self, family: str, method: str, delta: float, event: str) -> None:
        self.family, self.method, self.delta, self.event = family, method, delta, event
        self.trials = self.refused = self.violations = self.inside = self.exceptions = 0
        self.notes: list[str] = []

    def add(self, violated: bool, inside: bool, exception: bool, note: str = "") -> None:
        self.trials += 1
        self.violations += bool(violated)
        self.inside += bool(inside)
        self.exceptions += bool(exception)
        if exception and note:
            self.notes.append(note)

    def row(self, alpha: float) -> AuditRow:
        n, k = self.trials, self.violations
        p = _binom_pvalue(k, n, self.delta)
        rejected = p < alpha
        return AuditRow(
            family=self.family, method=self.method, delta=self.delta, trials=n,
            refused=self.refused, violations=k, rate=k / n if n else 0.0,
            upper=clopper_pearson_upper(k, n, alpha), p_value=p, rejected=rejected,
            inside=self.inside, conditional_exceptions=self.exceptions,
            passed=not rejected and self.exceptions == 0,
            event=self.event + ("" if not self.notes else
                                "; EXCEPTIONS: " + "; ".join(self.notes[:3])))


# --------------------------------------------------------------------------------------
# drawing the truth
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Truth:
    p: np.ndarray        # true distribution
    counts: np.ndarray   # multinomial counts of the m samples
    m: int
    concentration: str

    @property
    def p_hat(self) -> np.ndarray:
        return self.counts / self.m

    def samples(self) -> np.ndarray:
        return np.repeat(np.arange(self.p.size), self.counts)


def _draw_truths(gen: np.random.Generator, trials: int, sizes: Sequence[int],
                 n_low: int, n_high: int) -> list[_Truth]:
    """``trials`` true distributions (N uniform in ``[n_low, n_high]``, a concentration and a
    sample size cycled so that each appears equally often) with their sample counts."""
    names = [*CONCENTRATIONS, "edge"]
    out = []
    for t in range(trials):
        n = int(gen.integers(n_low, n_high + 1))
        name = names[t % len(names)]
        m = int(sizes[(t // len(names)) % len(sizes)])
        if name == "edge":
            p = _edge_truth(gen, n, m)
        else:
            p = gen.dirichlet(np.full(n, CONCENTRATIONS[name]))
        p = np.maximum(p, 0.0)
        p = p / p.sum()
        out.append(_Truth(p, gen.multinomial(m, p), m, name))
    return out


# --------------------------------------------------------------------------------------
# the families
# --------------------------------------------------------------------------------------

def _shrunk(uset: Any, center: np.ndarray, s: float) -> Any:
    """The deliberately broken variant of a set: shrunk towards the estimate ``center`` by
    ``s`` (an l1 radius times ``s``; a box's bounds pulled towards the estimate by ``s``)."""
    from .sets import Box, L1Ball, L1BoxSet

    if s == 1.0:
        return uset
    c = np.asarray(center, dtype=np.float64)
    if isinstance(uset, L1Ball):
        return L1Ball(uset.center, uset.radius * s)
    if isinstance(uset, Box):
        return Box(np.clip(c + s * (uset.lower - c), 0, 1), np.clip(c + s * (uset.upper - c), 0, 1))
    if isinstance(uset, L1BoxSet):
        return L1BoxSet(uset.center, uset.radius * s, np.clip(c + s * (uset.lower - c), 0, 1),
                        np.clip(c + s * (uset.upper - c), 0, 1))
    raise ValidationError(f"cannot shrink a set of kind {uset.kind!r}")  # pragma: no cover


def _lp_worst_case(w: np.ndarray, uset: Any, inner: np.ndarray) -> tuple[float, np.ndarray]:
    """The largest PML over the set, found independently of the library's greedy
    minimisers: for every output column ``y`` a generic HiGHS LP gives a distribution
    ``Q_y`` of the set minimising ``P_Y(y) = Q . W[:, y]`` (a worst-case true distribution,
    on the set's boundary), pulled towards the interior point ``inner`` until the set
    contains it to within 1e-12 (LP tolerances), and the library's :func:`pmlkit.pml` is
    evaluated there. Returns the largest value (``inf`` when some column can have
    ``P_Y(y) = 0``) and the distribution that attains it."""
    from scipy.optimize import linprog
    from scipy.sparse import block_diag, csr_matrix, hstack, identity, vstack

    from .leakage import pml
    from .sets import Box, L1Ball, L1BoxSet, VertexSet

    n, m_out = w.shape
    if isinstance(uset, VertexSet):
        verts = np.asarray(uset.vertices)
        vals = [float(np.nanmax(np.where(np.isnan(pq := pml(w, q)), -np.inf, pq)))
                for q in verts]
        j = int(np.argmax(vals))
        return vals[j], verts[j]
    ball = isinstance(uset, L1Ball | L1BoxSet)
    lo = np.asarray(getattr(uset, "lower", np.zeros(n)), dtype=np.float64)
    hi = np.asarray(getattr(uset, "upper", np.ones(n)), dtype=np.float64)
    if not isinstance(uset, L1Ball | Box | L1BoxSet):  # pragma: no cover
        raise ValidationError(f"no LP for a set of kind {uset.kind!r}")
    eye = identity(n, format="csr")
    if ball:  # variables (Q, t): |Q - c| <= t, sum t <= r
        u: Any = uset
        c = np.asarray(u.center, dtype=np.float64)
        a_ub = vstack([hstack([eye, -eye]), hstack([-eye, -eye]),
                       csr_matrix(np.concatenate([np.zeros(n), np.ones(n)])[None, :])])
        b_ub = np.concatenate([c, -c, [float(u.radius)]])
        a_eq = csr_matrix(np.concatenate([np.ones(n), np.zeros(n)])[None, :])
        bnds = [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)] + [(0, 2)] * n
        width = 2 * n
    else:
        a_ub, b_ub = None, None
        a_eq = csr_matrix(np.ones((1, n)))
        bnds = [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]
        width = n
    cols = [y for y in range(m_out) if w[:, y].max() > 0]
    k = len(cols)
    obj = np.concatenate([np.concatenate([w[:, y], np.zeros(width - n)]) for y in cols])
    res = linprog(obj, A_ub=None if a_ub is None else block_diag([a_ub] * k),
                  b_ub=None if b_ub is None else np.tile(b_ub, k),
                  A_eq=block_diag([a_eq] * k), b_eq=np.ones(k), bounds=bnds * k,
                  method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                           "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:  # pragma: no cover - the set is non-empty by construction
        raise PMLError(f"the worst-case LP failed: {res.message}")
    best, arg = -math.inf, np.asarray(inner, dtype=np.float64)
    for i, y in enumerate(cols):
        q = np.clip(res.x[i * width:i * width + n], 0.0, None)
        q = q / q.sum()
        for lam in (1.0, 1 - 1e-9, 1 - 1e-7, 1 - 1e-5, 1 - 1e-3, 0.0):
            cand = inner + lam * (q - inner)
            if uset.contains(cand, tol=1e-12):
                break
        py = float(cand @ w[:, y])
        v = math.inf if py <= 0 else float(pml(w, cand)[y])
        if v > best:
            best, arg = v, cand
    return best, arg


def _edge_truth(gen: np.random.Generator, n: int, m: int) -> np.ndarray:
    """A true distribution on the edge of what ``m`` samples can see: about half of the
    categories get a probability of ``u / m`` with ``u`` uniform in ``[0.2, 3]`` (so they are
    seen 0-3 times: where the confidence sets' lower ends, the Laplace scale and the
    worst cases sit), the others share the rest."""
    k = max(1, n // 2)
    small = gen.uniform(0.2, 3.0, k) / m
    if small.sum() >= 0.5:
        small *= 0.5 / small.sum()
    p = np.full(n, (1.0 - small.sum()) / (n - k))
    idx = gen.permutation(n)[:k]
    p[idx] = small
    out: np.ndarray = p / p.sum()
    return out


def _inside(uset_dict: Any, p: np.ndarray) -> bool:
    from .sets import set_from_dict

    return bool(set_from_dict(dict(uset_dict)).contains(p))


def _try(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, or ``None`` when the library refuses with a PMLError (a refusal
    is not a violation; it is counted as ``refused``)."""
    try:
        return fn(*args, **kwargs)
    except PMLError:
        return None


def _design_one(truth: _Truth, eps: float, delta: float, conf: str, radius_scale: float
                ) -> tuple[Any, float, Any]:
    """The mechanism, its certified eps and its set: ``design_from_samples`` as shipped, or
    (``radius_scale != 1``) the same design over the shrunk set."""
    from . import design
    from .confidence import confidence_set
    from .estimation import EmpiricalDistribution
    from .sets import set_from_dict

    n = truth.p.size
    util = "mutual_information" if n <= _MI_MAX_N else "accuracy"
    if radius_scale == 1.0:
        res = design.design_from_samples(EmpiricalDistribution.from_counts(truth.counts),
                                         eps, delta, confidence=conf, utility=util)
        return (res.mechanism, float(res.guarantee.certified_eps),
                set_from_dict(res.guarantee.set))
    cs = confidence_set(truth.counts, delta, confidence=conf)
    uset = _shrunk(cs.set, truth.p_hat, radius_scale)
    mech = design.optimal_mechanism_for_set(uset, eps, prior=truth.p_hat, utility=util)
    assert mech.certified_eps is not None  # every designer certifies
    return mech, float(mech.certified_eps), uset


def _audit_design(truths: list[_Truth], small: list[_Truth], eps_of: Sequence[float],
                  deltas: Sequence[float], radius_scale: float, tallies: list[_Tally],
                  hard: Sequence[_Truth] = ()) -> None:
    """``truths`` (N in 2..12) feed ``design_from_samples`` with every confidence method (a
    quarter of the trials each, shifted so that the methods see different truths), and so do
    ``hard`` ones (N = 7..12 from 5 to 50 samples: wide sets over many categories, where
    worst cases are hardest to certify; a twelfth of the trials per method); ``small``
    (N <= _EXACT_MAX_N) the exact robust design and the paper's fixed-prior design at eps'.

    Besides the true P, every design is checked at its own worst case: a generic LP finds
    the distribution of the certified set that leaks most (:func:`_lp_worst_case`); leaking
    more than the certified eps there is a false certificate (a conditional exception). A
    :class:`~pmlkit.errors.CertificationError` or a crash on valid input is one too."""
    import warnings

    from . import design
    from .confidence import METHODS
    from .errors import CertificationError, PMLWarning
    from .estimation import l1_radius
    from .leakage import eps_min
    from .sets import L1Ball

    per = max(1, -(-len(truths) // 4))
    for delta in deltas:
        robust = _Tally("design", "exact robust", delta,
                        "true eps_min(W, P) > eps for optimal_mechanism(p_hat, eps, "
                        "beta=beta*(delta))")
        fixed = _Tally("design", "fixed prior at eps'", delta,
                       "true eps_min(W, P) > eps for optimal_mechanism(p_hat, eps') "
                       "(eq. LPsubset; refused unless beta < 2 min p_hat and eps' >= 0)")
        fulls = []
        with warnings.catch_warnings():
            # "certified lower bound" notices: the guarantee is still certified, audit it
            warnings.simplefilter("ignore", PMLWarning)
            for j, conf in enumerate(METHODS):
                full = _Tally("design", "design_from_samples" + (
                    "" if conf == "l1" else f"[{conf}]"), delta,
                    "true eps_min(W, P) > eps for the mechanism of design_from_samples("
                    f"confidence={conf!r}) (mutual information for N <= {_MI_MAX_N}, "
                    "accuracy above); conditional exceptions also count a false certificate "
                    "at the LP worst case of the set, and a CertificationError or crash")
                n_hard = max(1, len(hard) // len(METHODS)) if hard else 0
                cases = [(truths[(j * per + i) % len(truths)], float(eps_of[(j * per + i)
                                                                             % len(truths)]))
                         for i in range(per if truths else 0)]
                cases += [(hard[(j * n_hard + i) % len(hard)], _DESIGN_EPS[i % 3])
                          for i in range(n_hard)]
                for truth, eps in cases:
                    where = f"N={truth.p.size}, m={truth.m}, eps={eps:g}"
                    try:
                        w, cert, uset = _design_one(truth, eps, delta, conf, radius_scale)
                    except CertificationError as exc:
                        full.add(False, False, True, f"{where}: CertificationError {exc}")
                        continue
                    except PMLError:
                        full.refused += 1
                        continue
                    except Exception as exc:  # a crash on valid input is a failure
                        full.add(False, False, True, f"{where}: {type(exc).__name__} {exc}")
                        continue
                    mat = np.asarray(getattr(w, "matrix", w), dtype=np.float64)
                    true_eps = eps_min(mat, truth.p)
                    ins = bool(uset.contains(truth.p))
                    lp_eps, q_star = _lp_worst_case(mat, uset, truth.p_hat)
                    note = ""
                    if lp_eps > cert + 1e-7:
                        note = (f"{where}: leaks {lp_eps:.6g} at {fmt(np.round(q_star, 7))} "
                                f"in the set, certified {cert:.6g}")
                    elif ins and exceeds(true_eps, cert):
                        note = f"{where}: true eps {true_eps:.6g} > certified {cert:.6g}"
                    elif exceeds(cert, eps):
                        note = f"{where}: certified {cert:.6g} > target {eps:g}"
                    full.add(exceeds(true_eps, eps), ins, bool(note), note)
                fulls.append(full)
            for t, truth in enumerate(small):
                eps = float(eps_of[t])
                beta = radius_scale * l1_radius(delta, m=truth.m, n=truth.p.size)
                inside = L1Ball(truth.p_hat, beta).contains(truth.p)
                w = _try(design.optimal_mechanism, truth.p_hat, eps, beta=beta)
                if w is None:
                    robust.refused += 1
                else:
                    true_eps = eps_min(w, truth.p)
                    robust.add(exceeds(true_eps, eps), inside,
                               inside and exceeds(true_eps, eps))
                ep = design.eps_prime(eps, beta)  # eq. optimalepsdash
                w = None
                if ep >= 0 and beta < 2 * truth.p_hat.min():
                    w = _try(design.optimal_mechanism, truth.p_hat, ep)
                if w is None:
                    fixed.refused += 1
                else:
                    true_eps = eps_min(w, truth.p)
                    fixed.add(exceeds(true_eps, eps), inside,
                              inside and exceeds(true_eps, eps))
        tallies += [x for x in (*fulls, robust, fixed) if x.trials or x.refused]


def _binary_truths(gen: np.random.Generator, trials: int) -> list[_Truth]:
    """Binary true priors ``(P(-1), P(+1))`` from Beta(a, a) with the same concentrations,
    and "edge" priors whose smaller probability is ``u / m``, ``u`` uniform in
    ``[0.2, 3]`` (where the lower confidence bound on ``p_min``, and so the Laplace scale,
    is most fragile)."""
    names = [*CONCENTRATIONS, "edge"]
    out = []
    for t in range(trials):
        name = names[t % len(names)]
        m = int(_ADDITIVE_SIZES[(t // len(names)) % len(_ADDITIVE_SIZES)])
        if name == "edge":
            q = _edge_truth(gen, 2, m)[1]
        else:
            q = float(gen.beta(CONCENTRATIONS[name], CONCENTRATIONS[name]))
        p = np.array([1.0 - q, q])
        out.append(_Truth(p, gen.multinomial(m, p), m, name))
    return out


def _labels(truth: _Truth) -> np.ndarray:
    """The sample as labels ``-1`` / ``+1`` (``+1`` is the positive label)."""
    return np.repeat(np.array([-1, 1]), truth.counts)


def _audit_laplace(truths: list[_Truth], eps_of: Sequence[float], deltas: Sequence[float],
                   radius_scale: float, tallies: list[_Tally]) -> None:
    from .additive import calibrate_laplace, laplace_eps, laplace_scale, laplace_scale_uncertain
    from .confidence import METHODS, confidence_set
    from .estimation import l1_radius
    from .leakage import eps_min
    from .sets import L1Ball

    for delta in deltas:
        methods = METHODS
        if delta >= 1:
            continue
        for method in methods:
            tally = _Tally("laplace", f"calibrate_laplace[{method}]", delta,
                           "true laplace_eps(b, min P) > eps for the scale b calibrated "
                           f"from the sample ({method} set)")
            for t, truth in enumerate(truths):
                eps = float(eps_of[t])
                if radius_scale == 1.0:
                    try:
                        cal = calibrate_laplace(_labels(truth), eps, delta, positive=1,
                                                confidence=method)
                    except PMLError:  # e.g. a sample holding one label only
                        tally.refused += 1
                        continue
                    b, uset = cal.b, cal.uncertainty_set
                    ins = _inside(uset, truth.p)
                elif method == "l1":
                    beta = radius_scale * l1_radius(delta, m=truth.m, n=2)
                    b = laplace_scale_uncertain(eps, float(truth.p_hat.min()), beta=beta)
                    ins = L1Ball(truth.p_hat, beta).contains(truth.p)
                else:  # the variant: calibrate_laplace's rule over the shrunk set
                    cs = _try(confidence_set, truth.counts, delta, confidence=method)
                    if cs is None:
                        tally.refused += 1
                        continue
                    uset = _shrunk(cs.set, truth.p_hat, radius_scale)
                    lo, _ = uset.coordinate_bounds()
                    b = laplace_scale(eps, max(0.0, min(float(np.min(lo)), 0.5)))
                    ins = bool(uset.contains(truth.p))
                if b == 0.0:  # no noise needed: the mechanism releases X itself
                    true_eps = eps_min(np.eye(2), truth.p)
                else:
                    true_eps = laplace_eps(b, float(truth.p.min()))
                bad = exceeds(true_eps, eps)
                tally.add(bad, ins, ins and bad)
            tallies.append(tally)


def _audit_gaussian(truths: list[_Truth], gen: np.random.Generator, deltas: Sequence[float],
                    radius_scale: float, tallies: list[_Tally]) -> None:
    from .additive import (
        calibrate_gaussian,
        gaussian_delta1,
        gaussian_grid_violation_probability,
        gaussian_tradeoff,
        gaussian_tradeoff_interval,
        gaussian_violation_probability,
    )
    from .estimation import l1_radius
    from .sets import L1Ball

    grid = _GAUSS_GRID
    u = gen.random((len(deltas), len(truths)))
    sigmas = [(_GAUSS_SIGMAS[t % len(_GAUSS_SIGMAS)]) for t in range(len(truths))]
    for d_i, delta in enumerate(deltas):
        if delta >= 1:
            continue
        delta2 = delta / 2.0
        for method in ("paper", "direct"):
            tally = _Tally("gaussian", f"gaussian_tradeoff[{method}]", delta,
                           "{P outside the l1-ball} or {Y in E_eps_out(P)} (drawn exactly as "
                           "U < P_Y(E_eps_out(P))), for the smallest grid eps whose claimed "
                           f"delta <= {delta:g} (delta2 = delta/2, method {method!r})")
            for t, truth in enumerate(truths):
                sigma = sigmas[t]
                beta = l1_radius(delta2, m=truth.m, n=2)
                if radius_scale == 1.0:
                    res = _try(gaussian_tradeoff, sigma, truth.p_hat, m=truth.m,
                               delta2=delta2, eps=grid, curve=method)
                else:
                    beta *= radius_scale
                    q = float(truth.p_hat[1])
                    lows, highs = L1Ball(np.array([1.0 - q, q]), beta).coordinate_bounds()
                    res = _try(gaussian_tradeoff_interval, sigma, truth.p_hat,
                               float(lows[1]), float(highs[1]), delta2=delta2, eps=grid,
                               curve=method)
                if res is None:
                    tally.refused += 1
                    continue
                eps_out, delta_out = res
                ok = np.flatnonzero((np.asarray(delta_out) <= delta)
                                    & np.isfinite(np.asarray(eps_out)))
                if ok.size == 0:
                    tally.refused += 1
                    continue
                k = int(ok[0])
                e_out = float(np.asarray(eps_out)[k])
                ins = L1Ball(truth.p_hat, beta).contains(truth.p)
                out_prob = gaussian_violation_probability(sigma, tuple(truth.p), e_out)
                violated = (not ins) or bool(u[d_i, t] < out_prob)
                # conditional check: inside the ball, the output tail is at most delta1
                d1 = float(gaussian_delta1(sigma, truth.p_hat, beta=beta, eps=grid[k]))
                tally.add(violated, ins, ins and out_prob > d1 + 1e-12)
            tallies.append(tally)
        if radius_scale != 1.0:
            continue
        for conf in _GAUSS_CONFIDENCE:
            pair = {c: _Tally("gaussian", f"calibrate_gaussian[{conf}, {c}]", delta,
                              "{P outside the set} or {Y in E_eps_out(P)} (as above) for "
                              f"calibrate_gaussian(confidence={conf!r}), curve {c!r}")
                    for c in ("paper", "direct")}
            for t, truth in enumerate(truths):
                sigma = sigmas[t]
                cal = _try(calibrate_gaussian, _labels(truth), sigma, delta2, positive=1,
                           eps=grid, confidence=conf)
                for curve, tally in pair.items():
                    if cal is None:
                        tally.refused += 1
                        continue
                    eps_out = np.asarray(getattr(cal, f"{curve}_eps"))
                    delta_out = np.asarray(getattr(cal, f"{curve}_delta"))
                    ok = np.flatnonzero((delta_out <= delta) & np.isfinite(eps_out))
                    if ok.size == 0:
                        tally.refused += 1
                        continue
                    k = int(ok[0])
                    ins = _inside(cal.uncertainty_set, truth.p)
                    # the calibration states the guarantee of the released grid mechanism
                    # (what gaussian_noise outputs), so its true tail is the grid's
                    out_prob = gaussian_grid_violation_probability(
                        sigma, tuple(truth.p), float(eps_out[k]), cal.granularity)
                    violated = (not ins) or bool(u[d_i, t] < out_prob)
                    tally.add(violated, ins, ins and out_prob > float(cal.delta1[k]) + 1e-12)
            tallies.extend(pair.values())


def _audit_coverage(truths: list[_Truth], deltas: Sequence[float], radius_scale: float,
                    tallies: list[_Tally]) -> None:
    from .confidence import METHODS, confidence_set

    for delta in deltas:
        for method in METHODS:
            tally = _Tally("coverage", method, delta,
                           f"true P not in confidence_set(counts, delta, confidence={method!r})")
            for truth in truths:
                cs = _try(confidence_set, truth.counts, delta, confidence=method)
                if cs is None:
                    tally.refused += 1
                    continue
                ins = bool(_shrunk(cs.set, cs.p_hat, radius_scale).contains(truth.p))
                tally.add(not ins, ins, False)
            tallies.append(tally)


_RELEASE_SIZES = (30, 300, 3_000)
_RELEASE_ROWS = 400
_RELEASE_MAX_N = 8


def _release_one(truth: _Truth, eps: float, delta: float, conf: str, folder: Any,
                 gen: np.random.Generator) -> tuple[float, float, bool, str]:
    """One end-to-end release: design from the reference counts, save the mechanism file,
    load it back, privatise a CSV of fresh records (disjoint from the reference sample)
    with :func:`pmlkit.privatize_file`, read the output back. Returns the true eps of the
    mechanism read back from the file, its certified eps, whether the truth lies in the
    set the file records, and a description of anything wrong with the release."""
    from . import design
    from .estimation import EmpiricalDistribution

    n = truth.p.size
    labels = [f"c{i}" for i in range(n)]
    res = design.design_from_samples(
        EmpiricalDistribution.from_counts(truth.counts, categories=labels), eps, delta,
        confidence=conf, utility="mutual_information" if n <= _MI_MAX_N else "accuracy")
    try:  # from here on, a refusal is the release path refusing its own valid design
        return _release_rest(truth, res, labels, folder, gen)
    except PMLError as exc:
        return 0.0, float(res.guarantee.certified_eps), False, (
            f"the release path refused its own design: {type(exc).__name__}: {exc}")


def _release_rest(truth: _Truth, res: Any, labels: list[str], folder: Any,
                  gen: np.random.Generator) -> tuple[float, float, bool, str]:
    """:func:`_release_one` after the design: file, privatisation, read back, checks."""
    pd = require("pandas", "the audit's tables")

    from .mechanism import Mechanism
    from .privatization import privatize_file
    from .sets import set_from_dict

    n = truth.p.size
    path = folder / "mechanism.json"
    res.mechanism.save(path)
    mech = Mechanism.load(path)
    w = np.asarray(mech.matrix, dtype=np.float64)
    cert = float(mech.certified_eps) if mech.certified_eps is not None else np.inf
    problems = []
    if not (np.array_equal(w, np.asarray(res.mechanism.matrix))
            and cert == res.guarantee.certified_eps):
        problems.append("the file does not give back the designed mechanism")
    x = gen.choice(n, size=_RELEASE_ROWS, p=truth.p)
    src, out = folder / "records.csv", folder / "released.csv"
    pd.DataFrame({"id": np.arange(x.size), "x": np.asarray(labels)[x]}).to_csv(src,
                                                                               index=False)
    if out.exists():
        out.unlink()
    privatize_file(mech, src, out, "x", into="y", manifest=False)
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    if list(got["id"]) != [str(i) for i in range(x.size)] or \
            list(got["x"]) != list(np.asarray(labels)[x]):
        problems.append("the released file changed or reordered the records")
    outs = [str(v) for v in mech.output_labels]
    y = np.array([outs.index(v) if v in outs else -1 for v in got["y"]])
    if (y < 0).any():
        problems.append(f"released values outside the mechanism's outputs: "
                        f"{sorted(set(got['y'][y < 0]))[:3]}")
    else:
        table = np.zeros_like(w)
        np.add.at(table, (x, y), 1.0)
        if (table[w == 0] > 0).any():
            problems.append("a released (input, output) pair the mechanism cannot produce")
        from scipy.stats import chi2

        rows = table.sum(axis=1)
        expected = rows[:, None] * w
        use = expected > 0
        stat = float(((table - expected)[use] ** 2 / expected[use]).sum())
        dof = int(sum(max(int(u.sum()) - 1, 0) for u in use[rows > 0]))
        if dof and chi2.sf(stat, dof) < 1e-6:
            problems.append(f"the released column does not follow the mechanism "
                            f"(chi-square {stat:.4g} on {dof} degrees of freedom)")
    uset = set_from_dict(res.guarantee.set)
    lp_eps, q = _lp_worst_case(w, uset, truth.p_hat)
    if lp_eps > cert + 1e-7:
        problems.append(f"leaks {lp_eps:.6g} at {fmt(np.round(q, 7))} in the recorded set, "
                        f"certified {cert:.6g}")
    from .leakage import eps_min

    return eps_min(w, truth.p), cert, bool(uset.contains(truth.p)), "; ".join(problems)


def _audit_release(truths: list[_Truth], eps_of: Sequence[float], gen: np.random.Generator,
                   deltas: Sequence[float], tallies: list[_Tally]) -> None:
    """The end-to-end release path (design -> mechanism file -> file privatisation ->
    true leakage of the released column), the confidence method cycled over the trials."""
    import tempfile
    import warnings
    from pathlib import Path

    from .confidence import METHODS
    from .errors import CertificationError, PMLWarning

    with tempfile.TemporaryDirectory(prefix="pmlkit-audit-") as tmp:
        folder = Path(tmp)
        for delta in deltas:
            tally = _Tally("release", "design -> file -> privatize_file", delta,
                           "true eps_min(W, P) > eps for the mechanism read back from its "
                           "file, released by privatize_file on a CSV of fresh records; "
                           "conditional exceptions: a released column that the certified "
                           "mechanism cannot explain, altered records, a false certificate")
            for t, truth in enumerate(truths):
                eps, conf = float(eps_of[t]), METHODS[t % len(METHODS)]
                where = f"N={truth.p.size}, m={truth.m}, eps={eps:g}, {conf}"
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", PMLWarning)
                        true_eps, cert, ins, problem = _release_one(truth, eps, delta, conf,
                                                                     folder, gen)
                except CertificationError as exc:
                    tally.add(False, False, True, f"{where}: CertificationError {exc}")
                    continue
                except PMLError:
                    tally.refused += 1
                    continue
                except Exception as exc:  # a crash on valid input is a failure
                    tally.add(False, False, True, f"{where}: {type(exc).__name__} {exc}")
                    continue
                if not problem and ins and exceeds(true_eps, cert):
                    problem = f"true eps {true_eps:.6g} > certified {cert:.6g}"
                tally.add(exceeds(true_eps, eps), ins, bool(problem),
                          f"{where}: {problem}" if problem else "")
            tallies.append(tally)


# --------------------------------------------------------------------------------------
# exact coverage: sums over every sample outcome at worst-case true distributions
# --------------------------------------------------------------------------------------

#: Sample sizes of the exact binary (N = 2) coverage sums: every m up to 20, then up to 10^4.
EXACT_M_BINARY: tuple[int, ...] = (*range(1, 21), 25, 30, 40, 50, 70, 100, 150, 200, 300,
                                   500, 1_000, 10_000)
#: (N, sample sizes) of the exact multinomial coverage sums (every outcome enumerated).
EXACT_M_MULTI: tuple[tuple[int, tuple[int, ...]], ...] = (
    (3, (1, 3, 8, 16)), (4, (2, 6)), (5, (4,)))
_ETA = 1e-11            # a candidate worst case sits this far outside a set's boundary
_BIN_KEEP = 300         # m > 1000: endpoints of the 300 smallest / largest counts, ...
_BIN_SPREAD = 700       # ... and of this many counts spread over the rest
_MULTI_EDGE = 800        # at most this many boundary candidates per (N, m)
_MULTI_RANDOM = 100     # random candidate distributions per (N, m) besides the boundary ones


@dataclass(frozen=True)
class _Rep:
    """A batch of confidence sets, one per row, in one form that covers every kind of
    :mod:`pmlkit.sets` they use: ``{Q : ||Q - center||_1 <= radius, lo <= Q <= hi}``
    (``radius = inf`` for a box, ``lo = 0, hi = 1`` for a ball)."""

    center: np.ndarray
    radius: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    kind: np.ndarray                   # per row: 0 ball, 1 box, 2 ball and box
    chosen: np.ndarray | None = None   # "auto": index of the chosen candidate per row

    def scaled(self, s: float) -> _Rep:
        """Every set shrunk towards its center by ``s`` (the radius and the box)."""
        if s == 1.0:
            return self
        c = self.center
        box = (self.kind != _BALL)[:, None]  # a ball's [0, 1] "box" is no constraint
        return _Rep(c, self.radius * s, np.where(box, c + s * (self.lo - c), self.lo),
                    np.where(box, c + s * (self.hi - c), self.hi), self.kind, self.chosen)

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """N = 2: the set as an interval ``[a, b]`` of ``Q(x1)`` (``Q(x2) = 1 - Q(x1)``)."""
        c, r = self.center[:, 0], self.radius
        a = np.maximum.reduce([self.lo[:, 0], 1.0 - self.hi[:, 1], c - r / 2, np.zeros_like(c)])
        b = np.minimum.reduce([self.hi[:, 0], 1.0 - self.lo[:, 1], c + r / 2, np.ones_like(c)])
        return a, b

    def member(self, q: np.ndarray) -> np.ndarray:
        """``(C, K)``: whether candidate ``q[c]`` lies in set ``k`` (exact comparisons, no
        tolerance: the guarantee is about the set as released)."""
        inbox = ((q[:, None, :] >= self.lo[None]) & (q[:, None, :] <= self.hi[None])).all(-1)
        dist = np.abs(q[:, None, :] - self.center[None]).sum(-1)
        member: np.ndarray = inbox & (dist <= self.radius[None])
        return member


_BALL, _BOX, _BALL_BOX = 0, 1, 2


def _rep_of(counts: np.ndarray, delta: float, method: str) -> _Rep:
    """The confidence sets of ``method`` for every row of ``counts`` (equal ``m``), built
    with the batched constructions of :mod:`pmlkit.confidence` (the ones its public
    functions call); :func:`_spot_check` compares them with :func:`confidence_set`."""
    from . import confidence as cf
    from .estimation import l1_radius

    k, n = counts.shape
    m = int(counts[0].sum())
    p = counts / m
    inf, zero, one = np.full(k, np.inf), np.zeros((k, n)), np.ones((k, n))
    if method == "l1":
        return _Rep(p, np.full(k, l1_radius(delta, m=m, n=n)), zero, one, np.full(k, _BALL))
    if method == "box-lower" and n == 2 and k > 2 and (counts[::-1] == counts[:, ::-1]).all():
        # the folded bound depends on min(count) only: compute one half, mirror the other
        half = _rep_of(counts[: k // 2 + 1], delta, method)
        idx = np.minimum(np.arange(k), k - 1 - np.arange(k))
        return _Rep(p, inf, half.lo[idx], half.hi[idx], np.full(k, _BOX))
    if method in ("box-cp", "box-kl", "box-lower"):
        fn = {"box-cp": cf.batch_box_cp, "box-kl": cf.batch_box_kl,
              "box-lower": cf.batch_box_lower}[method]
        lo, hi = fn(counts, delta)
        return _Rep(p, inf, np.asarray(lo, float), np.asarray(hi, float), np.full(k, _BOX))
    if method == "l1-kappa":
        radius, _ = cf.batch_l1_kappa(counts, delta)
        return _Rep(p, np.asarray(radius, float), zero, one, np.full(k, _BALL))
    if method == "l1-box":  # l1_box_set with its default split 1/2
        lo, hi = cf.batch_box_cp(counts, 0.5 * delta)
        return _Rep(p, np.full(k, l1_radius(0.5 * delta, m=m, n=n)), np.minimum(lo, p),
                    np.maximum(hi, p), np.full(k, _BALL_BOX))
    if method == "auto":
        names = cf.AUTO_CANDIDATES
        reps = [_rep_of(counts, delta / len(names), x) for x in names]
        scores = np.stack([_score(r) for r in reps])
        best = np.argmin(scores, axis=0)  # the first candidate on ties, as auto_set
        rows = np.arange(k)

        def pick(attr: str) -> np.ndarray:
            picked: np.ndarray = np.stack([getattr(r, attr) for r in reps])[best, rows]
            return picked

        return _Rep(p, pick("radius"), pick("lo"), pick("hi"), pick("kind"), best)
    raise ValidationError(f"unknown confidence method {method!r}")  # pragma: no cover


def _coordinate_bounds(rep: _Rep) -> tuple[np.ndarray, np.ndarray]:
    """The exact coordinate bounds of every set of a batch, as each set kind's
    ``coordinate_bounds`` computes them (for ``auto_set``'s criterion)."""
    c, lo, hi = rep.center, rep.lo, rep.hi
    r = np.where(np.isfinite(rep.radius), rep.radius, 4.0)[:, None] / 2.0
    ball = (np.clip(c - r, 0.0, 1.0), np.clip(c + r, 0.0, 1.0))
    tlo = np.clip(np.maximum(lo, 1.0 - hi.sum(1, keepdims=True) + hi), 0.0, 1.0)
    thi = np.clip(np.minimum(hi, 1.0 - lo.sum(1, keepdims=True) + lo), 0.0, 1.0)
    box = (tlo, np.maximum(thi, tlo))
    up, dn = hi - c, c - lo
    d = np.minimum(np.minimum(dn, r), up.sum(1, keepdims=True) - up)
    u = np.minimum(np.minimum(up, r), dn.sum(1, keepdims=True) - dn)
    both = (np.clip(c - np.maximum(d, 0), 0, 1), np.clip(c + np.maximum(u, 0), 0, 1))
    kind = rep.kind[:, None]
    return tuple(np.where(kind == _BALL, x, np.where(kind == _BOX, y, z))  # type: ignore
                 for x, y, z in zip(ball, box, both, strict=True))


def _score(rep: _Rep) -> np.ndarray:
    """``auto_set``'s default criterion: the total width of the coordinate bounds."""
    lo, hi = _coordinate_bounds(rep)
    width: np.ndarray = np.sum(hi - lo, axis=1)
    return width


def _set_of(rep: _Rep, i: int) -> Any:
    """Row ``i`` of a batch as a :mod:`pmlkit.sets` object."""
    from .sets import Box, L1Ball, L1BoxSet

    kind = int(rep.kind[i])
    if kind == _BALL:
        return L1Ball(rep.center[i], float(rep.radius[i]))
    if kind == _BOX:
        return Box(rep.lo[i], rep.hi[i])
    return L1BoxSet(rep.center[i], float(rep.radius[i]), rep.lo[i], rep.hi[i])


def _spot_check(counts: np.ndarray, rep: _Rep, delta: float, method: str,
                rows: Sequence[int]) -> list[str]:
    """Compare the batched sets with :func:`pmlkit.confidence.confidence_set` on ``rows``:
    the exact sums are only as good as this agreement. Returns the mismatches."""
    from .confidence import AUTO_CANDIDATES, confidence_set
    from .sets import set_from_dict

    bad = []
    for i in rows:
        cs = confidence_set(counts[i], delta, confidence=method)
        mine = _set_of(rep, i)
        ref = set_from_dict(cs.set.to_dict())
        if method == "auto" and rep.chosen is not None:
            if cs.details["chosen"] != AUTO_CANDIDATES[int(rep.chosen[i])]:
                mine_name = AUTO_CANDIDATES[int(rep.chosen[i])]
                bad.append(f"counts {counts[i].tolist()}: auto chose "
                           f"{cs.details['chosen']!r}, the batch {mine_name!r}")
                continue
        lo_a, hi_a = mine.coordinate_bounds()
        lo_b, hi_b = ref.coordinate_bounds()
        probe = np.eye(counts.shape[1])
        same = (np.allclose(lo_a, lo_b, rtol=0, atol=1e-12)
                and np.allclose(hi_a, hi_b, rtol=0, atol=1e-12)
                and np.allclose(mine.min_linear(probe - probe.mean(0)),
                                ref.min_linear(probe - probe.mean(0)), rtol=0, atol=1e-12))
        if not same:
            bad.append(f"counts {counts[i].tolist()}: batch set {mine!r} != {ref!r}")
    return bad


def _binary_failure(q: np.ndarray, a: np.ndarray, b: np.ndarray, m: int) -> np.ndarray:
    """``P_q[q not in [a_X, b_X]]`` for ``X ~ Bin(m, q)``, every candidate ``q`` (exact: a
    sum of binomial probabilities over the runs of uncovered counts, by the CDF).

    When both ends are non-decreasing in the count (every method but the folded
    ``"box-lower"`` and possibly ``"auto"``) the covered counts are one run
    ``[k_lo, k_hi]`` found by bisection; otherwise every count is tested."""
    from scipy.stats import binom

    if (np.diff(a) >= 0).all() and (np.diff(b) >= 0).all():
        k_lo = np.searchsorted(b, q, side="left")        # first count with b_k >= q
        k_hi = np.searchsorted(a, q, side="right") - 1   # last count with a_k <= q
        out = binom.cdf(k_lo - 1, m, q) + binom.sf(k_hi, m, q)
        return np.where(k_lo > k_hi, 1.0, np.minimum(out, 1.0))
    out = (q[:, None] < a[None, :]) | (q[:, None] > b[None, :])       # (C, m + 1)
    pad = np.zeros((q.size, 1), dtype=np.int8)
    step = np.diff(np.concatenate([pad, out.astype(np.int8), pad], axis=1), axis=1)
    row, start = np.nonzero(step == 1)     # first uncovered count of each run
    _, stop = np.nonzero(step == -1)       # one past its last (same row-major order)
    qq = q[row]
    lower = binom.cdf(start - 1, m, qq)
    upper = binom.cdf(stop - 1, m, qq)
    mass = np.where(stop == m + 1, binom.sf(start - 1, m, qq), upper - lower)
    fail = np.zeros(q.size)
    np.add.at(fail, row, np.maximum(mass, 0.0))
    return np.minimum(fail, 1.0)


def _binary_candidates(a: np.ndarray, b: np.ndarray, m: int) -> np.ndarray:
    """Worst-case candidates for N = 2: just outside every set's ends (where the failure
    probability jumps up), plus a grid; for m > 1000 the ends of the smallest and largest
    counts and of a spread of the others."""
    ks = np.arange(m + 1)
    monotone = (np.diff(a) >= 0).all() and (np.diff(b) >= 0).all()
    keep, spread = (_BIN_KEEP, _BIN_SPREAD) if monotone else (_BIN_KEEP // 3, _BIN_SPREAD // 3)
    if m > 2 * keep + spread:
        ks = np.unique(np.concatenate([ks[:keep], ks[-keep:],
                                       np.linspace(0, m, spread).round().astype(int)]))
    q = np.concatenate([a[ks] - _ETA, b[ks] + _ETA, np.linspace(0.0, 1.0, 201)])
    return np.unique(q[(q >= 0.0) & (q <= 1.0)])


def _compositions(m: int, n: int) -> np.ndarray:
    """Every count vector of ``m`` samples over ``n`` categories, ``(C(m+n-1, n-1), n)``."""
    from itertools import combinations

    bars = np.array(list(combinations(range(m + n - 1), n - 1)), dtype=np.int64)
    bars = bars.reshape(-1, n - 1)
    ext = np.concatenate([np.full((bars.shape[0], 1), -1), bars,
                          np.full((bars.shape[0], 1), m + n - 1)], axis=1)
    return np.diff(ext, axis=1) - 1


def _multi_failure(q: np.ndarray, counts: np.ndarray, rep: _Rep) -> np.ndarray:
    """``P_q[q not in S(X)]`` for ``X ~ Multinomial(m, q)``: the exact sum over every outcome."""
    from scipy.special import gammaln

    m = int(counts[0].sum())
    logq = np.log(np.maximum(q, 1e-300))
    logc = gammaln(m + 1.0) - gammaln(counts + 1.0).sum(axis=1)
    pmf = np.exp(logq @ counts.T + logc[None, :])
    zero = (q == 0).astype(np.int64) @ (counts > 0).T.astype(np.int64) > 0
    pmf[zero] = 0.0
    miss: np.ndarray = (pmf * ~rep.member(q)).sum(axis=1)
    return miss


def _multi_candidates(counts: np.ndarray, rep: _Rep, gen: np.random.Generator
                      ) -> np.ndarray:
    """Worst-case candidates for N > 2: for every outcome's set and category ``x``, a
    distribution whose ``Q(x)`` lies just beyond the set's bound on ``Q(x)`` (the rest of
    the mass spread like the outcome's counts), the uniform distribution and random
    Dirichlet draws (concentrations 1 and 0.3)."""
    n = counts.shape[1]
    lo, hi = _coordinate_bounds(rep)
    rest = counts + 0.5
    out = [np.full((1, n), 1.0 / n), gen.dirichlet(np.ones(n), _MULTI_RANDOM),
           gen.dirichlet(np.full(n, 0.3), _MULTI_RANDOM // 2)]
    edge = []
    for x in range(n):
        for val in (hi[:, x] + _ETA, lo[:, x] - _ETA):
            ok = (val >= 0.0) & (val <= 1.0)
            w = rest[ok].copy()
            w[:, x] = 0.0
            q = w / w.sum(axis=1, keepdims=True) * (1.0 - val[ok])[:, None]
            q[:, x] = val[ok]
            edge.append(q)
    near = np.unique(np.concatenate(edge), axis=0)
    if near.shape[0] > _MULTI_EDGE:
        near = near[gen.choice(near.shape[0], _MULTI_EDGE, replace=False)]
    return np.concatenate([*out, near])


def _refine(q0: np.ndarray, fail: Callable[[np.ndarray], np.ndarray],
            gen: np.random.Generator, rounds: int = 3, width: int = 40) -> tuple[np.ndarray,
                                                                                 float]:
    """Local random search around the best candidates (the failure probability is piecewise
    smooth; its largest values sit at set boundaries). Returns the best point and value."""
    vals = fail(q0)
    order = np.argsort(vals)[-5:]
    top, top_v = q0[order], vals[order]
    step = 0.02
    for _ in range(rounds):
        noise = gen.standard_normal((top.shape[0], width, q0.shape[1])) * step
        noise -= noise.mean(axis=-1, keepdims=True)
        q = np.clip(top[:, None, :] + noise, 0.0, None).reshape(-1, q0.shape[1])
        q /= q.sum(axis=1, keepdims=True)
        allq, allv = np.concatenate([top, q]), np.concatenate([top_v, fail(q)])
        order = np.argsort(allv)[-5:]
        top, top_v = allq[order], allv[order]
        step /= 3.0
    return top[-1], float(top_v[-1])


class _ExactTally:
    """The exact cases of one row: the largest failure probability found, and where."""

    def __init__(self, family: str, method: str, delta: float, event: str) -> None:
        self.family, self.method, self.delta, self.event = family, method, delta, event
        self.cases = self.violations = 0
        self.worst, self.where = 0.0, ""
        self.mismatches: list[str] = []

    def add(self, value: float, where: str) -> None:
        self.cases += 1
        self.violations += bool(value > self.delta * (1.0 + 1e-9))
        if value > self.worst or not self.where:
            self.worst, self.where = value, where

    def row(self, alpha: float) -> AuditRow:
        rejected = self.violations > 0
        bad = len(self.mismatches)
        event = self.event + ("" if not bad else
                              "; batch/library MISMATCH: " + "; ".join(self.mismatches[:3]))
        return AuditRow(
            family=self.family, method=self.method, delta=self.delta, trials=self.cases,
            refused=0, violations=self.violations, rate=self.worst, upper=self.worst,
            p_value=0.0 if rejected else 1.0, rejected=rejected,
            inside=self.cases - self.violations, conditional_exceptions=bad,
            passed=not rejected and bad == 0, event=event, exact=True,
            worst_case=self.where)


def _spot_rows(k: int, salt: int) -> list[int]:
    """Which outcome of a batch of ``k`` is compared with the public constructor (one per
    batch, moving along the batches: the ends and the middle all get checked)."""
    return [(salt * 7919) % k]


def _audit_exact(gen: np.random.Generator, deltas: Sequence[float], radius_scale: float,
                 tallies: list[Any], methods: Sequence[str] | None = None) -> None:
    """Exact coverage of every confidence method: the largest ``P[P not in S]`` over
    worst-case candidates ``P``, summed exactly over every sample outcome."""
    from .confidence import METHODS

    comps = {(n, m): _compositions(m, n) for n, sizes in EXACT_M_MULTI for m in sizes}
    for d_i, delta in enumerate(deltas):
        check = d_i == 0  # the batched sets are compared with the library at one delta
        for method in (METHODS if methods is None else methods):
            tally = _ExactTally(
                "exact", method, delta,
                f"largest exact P[P not in confidence_set(counts, delta, {method!r})] over "
                "worst-case true distributions P exceeds delta (N = 2: binomial sums for m = "
                f"{EXACT_M_BINARY[0]}..{EXACT_M_BINARY[-1]}; N = 3..5: every multinomial "
                "outcome enumerated)")
            for m in EXACT_M_BINARY:
                ks = np.arange(m + 1)
                counts = np.stack([ks, m - ks], axis=1)
                rep = _rep_of(counts, delta, method)
                if check:
                    tally.mismatches += _spot_check(counts, rep, delta, method,
                                                    _spot_rows(m + 1, m))
                a, b = rep.scaled(radius_scale).interval()
                q = _binary_candidates(a, b, m)
                f = _binary_failure(q, a, b, m)
                j = int(np.argmax(f))
                tally.add(float(f[j]), f"N=2, m={m}, P=({float(q[j])!r}, {float(1 - q[j])!r})")
            for n, sizes in EXACT_M_MULTI:
                for m in sizes:
                    counts = comps[n, m]
                    rep = _rep_of(counts, delta, method)
                    if check:
                        tally.mismatches += _spot_check(counts, rep, delta, method,
                                                        _spot_rows(counts.shape[0], m + n))
                    small = rep.scaled(radius_scale)
                    q0 = _multi_candidates(counts, small, gen)
                    def fail(q: np.ndarray, c: np.ndarray = counts, r: _Rep = small
                             ) -> np.ndarray:
                        return _multi_failure(q, c, r)

                    best_q, best_v = _refine(q0, fail, gen)
                    tally.add(best_v, f"N={n}, m={m}, P={[float(x) for x in best_q]!r}")
            tallies.append(tally)


# --------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------

@renamed_parameter(version="0.2", seed="rng")
def run_audit(*, trials: int = 60, rng: int | None = 0,
              deltas: Sequence[float] = DEFAULT_DELTAS,
              families: Sequence[str] = FAMILIES, alpha: float = 1e-3,
              radius_scale: float = 1.0,
              progress: Callable[[str], None] | None = None) -> AuditResult:
    """Audit pmlkit's (eps, delta) guarantees by simulation (see the module docstring).

    Parameters
    ----------
    trials
        Trials per delta of the design family (a quarter per confidence method, plus
        ``trials // 12`` hard cases each); the cheaper families use more (Laplace 3x,
        coverage and Gaussian 2x), the release path ``trials // 4``. The ``exact`` family
        does not depend on it. Each trial draws a fresh true distribution and sample.
    rng
        Integer seed of the simulation (research reproducibility; the audit protects no
        one, so a seeded PCG64 via :func:`pmlkit.rng.resolve_rng` is appropriate). ``None``
        draws a fresh secure seed. Formerly ``seed`` (still accepted, with a
        DeprecationWarning).
    deltas
        Claimed failure probabilities to audit, each in ``(0, 1)``.
    families
        A subset of :data:`FAMILIES`.
    alpha
        Level of the one-sided binomial test and of the Clopper-Pearson bound.
    radius_scale
        Shrinks every confidence set towards its estimate (``1`` = the library as
        shipped): l1 radii times the factor, box bounds pulled towards the estimate.
        Values ``< 1`` build deliberately broken variants that the audit must reject (the
        Gaussian rows shrink the l1 ball only; the release path is skipped).
    progress
        Optional callback receiving one line per finished family.

    Returns
    -------
    AuditResult
        With ``.table`` (pandas), ``.passed`` and a printable summary.

    Examples
    --------
    A small design audit (the suite and ``pmlkit audit`` run far more trials):

    >>> res = run_audit(trials=2, rng=0, families=("design",), deltas=(0.3,))
    >>> res.passed, {row.family for row in res.rows}
    (True, {'design'})

    Notes
    -----
    Beyond the paper: the paper proves its guarantees but reports no audit. Violations are
    computed exactly from the true distribution (no Monte Carlo over outputs except the one
    uniform draw that realises the Gaussian output event, and the released file of the
    release path); the ``exact`` family has no Monte Carlo at all.
    """
    from .rng import resolve_rng

    t = check_count(trials, "trials", minimum=1)
    a = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    scale = check_real(radius_scale, "radius_scale", low=0.0, low_open=True)
    try:
        ds = [check_delta(d, "deltas", allow_one=False) for d in deltas]
    except TypeError:
        raise ValidationError(f"deltas must be a sequence of numbers, got {fmt(deltas)}") \
            from None
    if not ds:
        raise ValidationError("deltas must not be empty")
    fams = list(families) if not isinstance(families, str) else [families]
    unknown = [f for f in fams if f not in FAMILIES]
    if unknown or not fams:
        raise ValidationError(
            f"families must be a non-empty subset of {', '.join(FAMILIES)}, got {fmt(families)}")
    if rng is None:
        seed_value: int | None = None
        source = resolve_rng(None)
    else:
        if isinstance(rng, bool) or not isinstance(rng, int | np.integer) or rng < 0:
            raise ValidationError(
                f"rng must be an integer seed >= 0 or None, got {fmt(rng)}")
        seed_value = int(rng)
        source = resolve_rng(seed_value)
    streams = [s.generator for s in source.spawn(6)]  # one per family: independent of the rest

    tallies: list[_Tally] = []
    say = progress or (lambda _msg: None)
    if "design" in fams:
        truths = _draw_truths(streams[0], t, _DESIGN_SIZES, 2, _DESIGN_MAX_N)
        small = _draw_truths(streams[0], t, _DESIGN_SIZES, 2, _EXACT_MAX_N)
        hard = _draw_truths(streams[0], max(1, t // 12) * 7, _HARD_SIZES, 7, _DESIGN_MAX_N)
        eps_of = [_DESIGN_EPS[i % len(_DESIGN_EPS)] for i in range(t)]
        _audit_design(truths, small, eps_of, ds, scale, tallies, hard)
        say(f"design: {t} trials per delta")
    if "laplace" in fams:
        truths = _binary_truths(streams[1], 3 * t)
        eps_of = [_LAPLACE_EPS[i % len(_LAPLACE_EPS)] for i in range(3 * t)]
        _audit_laplace(truths, eps_of, ds, scale, tallies)
        say(f"laplace: {3 * t} trials per delta")
    if "gaussian" in fams:
        truths = _binary_truths(streams[2], 2 * t)
        _audit_gaussian(truths, streams[2], ds, scale, tallies)
        say(f"gaussian: {2 * t} trials per delta")
    if "coverage" in fams:
        truths = _draw_truths(streams[3], 2 * t, _ADDITIVE_SIZES, 2, 10)
        _audit_coverage(truths, ds, scale, tallies)
        say(f"coverage: {2 * t} trials per delta")
    if "exact" in fams:
        _audit_exact(streams[4], ds, scale, tallies)
        say("exact: every confidence method, exact sums")
    if "release" in fams and scale == 1.0:
        r_trials = max(1, t // 4)
        truths = _draw_truths(streams[5], r_trials, _RELEASE_SIZES, 2, _RELEASE_MAX_N)
        eps_of = [_DESIGN_EPS[i % len(_DESIGN_EPS)] for i in range(r_trials)]
        _audit_release(truths, eps_of, streams[5], ds, tallies)
        say(f"release: {r_trials} trials per delta")

    settings = {
        "families": fams, "deltas": ds, "concentrations": dict(CONCENTRATIONS),
        "truths": [*CONCENTRATIONS, "edge"],
        "design": {"m": list(_DESIGN_SIZES), "eps": list(_DESIGN_EPS), "N": [2, _DESIGN_MAX_N],
                   "hard": {"m": list(_HARD_SIZES), "N": [7, _DESIGN_MAX_N],
                            "trials": max(1, t // 12)},
                   "exact_max_N": _EXACT_MAX_N, "mutual_information_max_N": _MI_MAX_N,
                   "confidence": "every method of pmlkit.confidence.METHODS",
                   "trials": t, "worst_case": "HiGHS LP over the certified set"},
        "laplace": {"m": list(_ADDITIVE_SIZES), "eps": list(_LAPLACE_EPS),
                    "confidence": "every method of pmlkit.confidence.METHODS",
                    "trials": 3 * t},
        "gaussian": {"m": list(_ADDITIVE_SIZES), "sigma": list(_GAUSS_SIGMAS),
                     "confidence": ["l1", *_GAUSS_CONFIDENCE],
                     "eps_grid": [float(_GAUSS_GRID[0]), float(_GAUSS_GRID[-1]),
                                  int(_GAUSS_GRID.size)], "trials": 2 * t},
        "coverage": {"m": list(_ADDITIVE_SIZES), "N": [2, 10], "trials": 2 * t},
        "exact": {"binary_m": list(EXACT_M_BINARY),
                  "multinomial": {str(n): list(ms) for n, ms in EXACT_M_MULTI}},
        "release": {"m": list(_RELEASE_SIZES), "N": [2, _RELEASE_MAX_N],
                    "records": _RELEASE_ROWS, "trials": max(1, t // 4),
                    "run": scale == 1.0},
    }
    return AuditResult(rows=tuple(x.row(a) for x in tallies), trials=t, seed=seed_value,
                       alpha=a, radius_scale=scale, rng=source.description,
                       settings=settings)


@renamed_parameter(version="0.2", seed="rng")
def audit_joint(*, trials: int = 120, rng: int | None = 0,
                deltas: Sequence[float] = (0.05, 0.3), alpha: float = 0.001,
                sizes: Sequence[int] = (100, 1_000, 10_000), naive: bool = False
                ) -> AuditResult:
    """Statistical audit of the joint guarantee and of the chain-rule bound.

    Per trial: a true joint distribution ``P`` on ``N_A x N_B`` (``N_A, N_B`` in 2..3,
    Dirichlet with the concentrations of :data:`CONCENTRATIONS`, cycled), ``m``
    reference records from it (sizes cycled), two mechanisms (randomized response at a
    random eps, or rows drawn from Dirichlet(1)); then for every delta,
    :func:`pmlkit.joint.joint_guarantee` (sets ``"l1"`` and ``"box-cp"``) and
    :func:`pmlkit.joint.marginal_bound` (``"l1"``). A violation is
    ``joint_leakage(W, P) > certified_eps + 1e-9`` (the true leakage of the pair exceeds
    what was certified); the guarantee says this happens with
    probability ``<= delta``. Rows are :class:`pmlkit.audit.AuditRow` with the one-sided
    Clopper-Pearson bound of :func:`pmlkit.audit.clopper_pearson_upper` and the exact
    binomial test (rejected when ``p < alpha``); a violation while ``P`` lies in the set
    is a conditional exception (a bug whatever delta says).

    ``naive=True`` adds the row ``("naive-sum", "sum of true per-column eps")``: the claim
    that the pair leaks at most ``eps_min(W_A, P_A) + eps_min(W_B, P_B)`` at the *true*
    marginals (no failure probability; tested at the smallest delta). That claim is false
    for correlated data, and the audit rejects it: it shows the test has power.

    ``rng`` (an integer seed) makes the simulation reproducible (research randomness: it
    protects nobody; formerly ``seed``).

    Examples
    --------
    >>> res = audit_joint(trials=3, rng=0, sizes=(100,))
    >>> res.passed, sorted({row.method for row in res.rows})
    (True, ['chain l1', 'exact box-cp', 'exact l1'])
    """
    from scipy.stats import binomtest

    from .design import randomized_response
    from .joint import joint_guarantee, joint_leakage, marginal_bound
    from .leakage import eps_min

    trials = check_count(trials, "trials")
    ds = [check_delta(x, "deltas") for x in deltas]
    seed = rng
    gen = np.random.default_rng(seed)
    conc = list(CONCENTRATIONS.values())
    methods = [("joint", "exact l1"), ("joint", "exact box-cp"), ("joint-bound", "chain l1")]
    tally = {(f, mth, dl): [0, 0, 0, 0] for f, mth in methods for dl in ds}
    if naive:  # a claim with no failure probability: tested at the smallest delta
        tally[("naive-sum", "sum of true per-column eps", min(ds))] = [0, 0, 0, 0]
    for t in range(trials):
        na, nb = int(gen.integers(2, 4)), int(gen.integers(2, 4))
        p = gen.dirichlet(np.full(na * nb, conc[t % len(conc)]))
        m = int(sizes[(t // len(conc)) % len(sizes)])
        counts = gen.multinomial(m, p)
        flat = np.repeat(np.arange(na * nb), counts)
        a, b = np.unravel_index(flat, (na, nb))
        ref = [a, b]
        if t % 2 == 0:
            mechs = [np.asarray(randomized_response(n, float(gen.uniform(0.2, 3.0))).matrix)
                     for n in (na, nb)]
        else:
            mechs = [gen.dirichlet(np.ones(n), size=n) for n in (na, nb)]
        true = joint_leakage(mechs, p)
        pa, pb = p.reshape(na, nb).sum(axis=1), p.reshape(na, nb).sum(axis=0)
        for dl in ds:
            for conf in ("l1", "box-cp"):
                g = joint_guarantee(mechs, ref, dl, confidence=conf)
                inside = g.set.contains(p)
                viol = true > g.certified_eps + CERTIFY_TOL
                row = tally[("joint", f"exact {conf}", dl)]
                row[0] += 1
                row[1] += viol
                row[2] += inside
                row[3] += viol and inside
            g = marginal_bound(mechs, ref, dl)
            inside = g.set.contains(p)  # every marginal in its set
            viol = true > g.certified_eps + CERTIFY_TOL
            row = tally[("joint-bound", "chain l1", dl)]
            row[0] += 1
            row[1] += viol
            row[2] += inside
            row[3] += viol and inside
            if naive and dl == min(ds):
                claim = eps_min(mechs[0], pa) + eps_min(mechs[1], pb)
                row = tally[("naive-sum", "sum of true per-column eps", dl)]
                row[0] += 1
                row[1] += true > claim + CERTIFY_TOL
    rows = []
    for (fam, mth, dl), (n, k, ins, exc) in tally.items():
        pv = float(binomtest(k, n, dl, alternative="greater").pvalue)
        rej = pv < alpha
        rows.append(AuditRow(
            family=fam, method=mth, delta=dl, trials=n, refused=0, violations=k,
            rate=k / n, upper=clopper_pearson_upper(k, n, alpha), p_value=pv, rejected=rej,
            inside=ins, conditional_exceptions=exc, passed=not rej and exc == 0,
            event=("true PML of the pair > sum of per-column eps at the true marginals"
                   if fam == "naive-sum" else
                   "true PML of the pair of outputs > certified joint eps")))
    return AuditResult(rows=tuple(rows), trials=trials, seed=seed, alpha=alpha,
                       radius_scale=1.0, rng=f"numpy default_rng({seed}) (simulation)",
                       settings={"sizes": list(sizes), "deltas": ds})
