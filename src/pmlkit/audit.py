"""Statistical audit of pmlkit's (eps, delta) guarantees by simulation (issue 7).

A guarantee "(eps, delta)-PML from m samples" (SPEC section 8) is a statement about the
probability, over the estimation sample (and, for the Gaussian, over the output), that the
released mechanism leaks more than eps about the *true* distribution. :func:`run_audit`
checks such statements by drawing the truth ourselves:

1. draw a true distribution ``P`` (Dirichlet with concentrations 0.1 "near-degenerate",
   0.5 "skewed", 1 "flat", 5 "concentrated"; N from 2 to 10; binary for the additive
   mechanisms), then ``m`` i.i.d. samples of ``P``;
2. run the library's design path on the sample for a target ``(eps, delta)``;
3. compute, exactly, what the returned mechanism leaks under the true ``P``;
4. count *violations* and compare the rate with the claimed delta.

What is a violation, per family (``AuditRow.event`` states it in words):

``design``
    The mechanism ``W`` returned for target ``(eps, delta)`` has true PML
    ``eps_min(W, P) > eps + 1e-9`` (:func:`pmlkit.eps_min`). Designers:
    :func:`pmlkit.design.design_from_samples` (the full path, with the confidence sets
    ``"l1"``, ``"box-cp"`` and ``"auto"``; mutual information for
    ``N <= 8``, the linear accuracy utility for ``N = 9, 10`` to keep the audit fast; the
    guarantee is certified by the same machinery either way), the exact robust design
    ``optimal_mechanism(p_hat, eps, beta=beta*(delta))`` and the paper's fixed-prior design
    at ``eps' = log(e^eps / (1 + beta e^eps / 2))`` (eq. LPsubset; only where the paper's
    condition ``beta < 2 min p_hat`` holds and ``eps' >= 0``; other trials are *refused*).
``laplace``
    The scale ``b`` of :func:`pmlkit.additive.calibrate_laplace` (with every confidence
    set of :data:`pmlkit.confidence.METHODS`) has true PML
    ``laplace_eps(b, min P) > eps + 1e-9`` (Prop. Laplaceleakage at the true prior).
``gaussian``
    For each trial, the curve (method "paper" or "direct" of
    :func:`pmlkit.additive.gaussian_tradeoff` with ``delta2 = delta / 2``, and the same two
    curves of :func:`pmlkit.additive.calibrate_gaussian` over the nearly tight ``"box-cp"``
    set) is computed on a grid of inner eps, and its first point with claimed delta
    ``<= delta`` is released with its ``eps_out``. The violation is over the sample *and*
    the output: ``{P outside the set} or {Y in E_eps_out(P)}``, where the output event
    is drawn exactly as ``U < P_Y(E_eps_out(P))`` with ``U`` uniform
    (:func:`pmlkit.additive.gaussian_violation_probability`, closed form). Its probability
    is at most ``delta2 + (1 - delta2) delta1 <= delta`` when the guarantee holds.
``coverage``
    The set of :func:`pmlkit.confidence.confidence_set` (each method of
    :data:`pmlkit.confidence.METHODS`) does not contain ``P``.

Why the test is valid: trials are independent; the concentration and the sample size are
cycled (stratified), so trial ``t`` violates with its own probability ``r_t``, and the
guarantee says ``r_t <= delta`` for *every* true distribution, hence for every stratum. A
sum of independent Bernoulli(``r_t <= delta``) is stochastically smaller than
Binomial(trials, delta), so the exact one-sided binomial test keeps its level.

For every row: the observed violations out of the trials, a one-sided Clopper-Pearson upper
confidence bound at level ``1 - alpha`` on the violation rate, and the p-value of the exact
one-sided binomial test of ``H0: rate <= delta`` (rejected when ``p < alpha``, default
``alpha = 0.001``). The *conditional check* is deterministic: in every trial where ``P``
lies in the set the mechanism was certified for, the mechanism must be eps-PML for ``P``
(its true leakage at most the certified eps, and for the Gaussian ``P_Y(E_eps_out(P)) <=
delta1``); any exception is a bug, whatever delta says.

``radius_scale`` multiplies every l1 radius: it exists to show that the audit *can* fail (a
deliberately broken variant, e.g. ``radius_scale=0.25``); only the rows whose radius can be
scaled are run then.

The observable deltas (0.05, 0.3) make violations frequent enough to be seen in a few
hundred trials; the paper's delta (1e-6) is audited too (violations there would be a
disaster). Because the paper's radius (Weissman's bound) is conservative, observed rates are
typically far below delta: the test checks the guarantee's direction, not its tightness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np

from ._validation import check_count, check_delta, check_real, fmt
from .errors import PMLError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "CONCENTRATIONS",
    "DEFAULT_DELTAS",
    "FAMILIES",
    "AuditResult",
    "AuditRow",
    "clopper_pearson_upper",
    "run_audit",
]

#: Families of guarantees audited by :func:`run_audit`.
FAMILIES: tuple[str, ...] = ("design", "laplace", "gaussian", "coverage")
#: Claimed deltas audited by default: two observable ones and the paper's order of magnitude.
DEFAULT_DELTAS: tuple[float, ...] = (0.05, 0.3, 1e-6)
#: Dirichlet concentrations of the true distributions (name -> alpha).
CONCENTRATIONS: dict[str, float] = {
    "near-degenerate": 0.1, "skewed": 0.5, "flat": 1.0, "concentrated": 5.0,
}
#: Slack allowed on an eps comparison (the certification tolerance of pmlkit).
EPS_TOL = 1e-9

_DESIGN_SIZES = (100, 1_000, 10_000)
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

def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper confidence bound at level ``1 - alpha``.

    ``u = Beta.ppf(1 - alpha; k + 1, n - k)`` (``1`` when ``k = n``): ``P[rate <= u] >=
    1 - alpha`` for a binomial count ``k`` out of ``n``."""
    from scipy.stats import beta

    if n == 0 or k >= n:
        return 1.0
    return float(beta.ppf(1.0 - alpha, k + 1, n - k))


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of every field."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class AuditResult:
    """Result of :func:`run_audit`: one :class:`AuditRow` per (family, method, delta).

    ``table`` is the tidy pandas DataFrame of the rows; ``passed`` is ``True`` when every
    row passed (no binomial test rejected, no conditional exception)."""

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
        import pandas as pd

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
            lines.append(
                f"{r.family:9} {r.method:34} {r.delta:8.2g} "
                f"{f'{r.violations}/{r.trials}':>12} {r.rate:7.4f} {r.upper:8.4f} "
                f"{r.p_value:8.3g} {r.inside:7d} {r.conditional_exceptions:8d}  "
                f"{'ok' if r.passed else 'FAIL'}"
                + (f" ({r.refused} refused)" if r.refused else ""))
        lines.append(f"alpha = {self.alpha:g} (one-sided binomial test of rate <= delta; "
                     f"Clopper-Pearson upper bound at level 1 - alpha); radius_scale = "
                     f"{self.radius_scale:g}; randomness: {self.rng}")
        lines.append("overall: " + ("PASSED" if self.passed else "FAILED"))
        return "\n".join(lines)


class _Tally:
    """Accumulates the outcome of the trials of one row."""

    def __init__(self, family: str, method: str, delta: float, event: str) -> None:
        self.family, self.method, self.delta, self.event = family, method, delta, event
        self.trials = self.refused = self.violations = self.inside = self.exceptions = 0

    def add(self, violated: bool, inside: bool, exception: bool) -> None:
        self.trials += 1
        self.violations += bool(violated)
        self.inside += bool(inside)
        self.exceptions += bool(exception)

    def row(self, alpha: float) -> AuditRow:
        n, k = self.trials, self.violations
        p = _binom_pvalue(k, n, self.delta)
        rejected = p < alpha
        return AuditRow(
            family=self.family, method=self.method, delta=self.delta, trials=n,
            refused=self.refused, violations=k, rate=k / n if n else 0.0,
            upper=clopper_pearson_upper(k, n, alpha), p_value=p, rejected=rejected,
            inside=self.inside, conditional_exceptions=self.exceptions,
            passed=not rejected and self.exceptions == 0, event=self.event)


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
    names = list(CONCENTRATIONS)
    out = []
    for t in range(trials):
        n = int(gen.integers(n_low, n_high + 1))
        name = names[t % len(names)]
        m = int(sizes[(t // len(names)) % len(sizes)])
        p = gen.dirichlet(np.full(n, CONCENTRATIONS[name]))
        p = np.maximum(p, 0.0)
        p = p / p.sum()
        out.append(_Truth(p, gen.multinomial(m, p), m, name))
    return out


# --------------------------------------------------------------------------------------
# the families
# --------------------------------------------------------------------------------------

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


def _audit_design(truths: list[_Truth], small: list[_Truth], eps_of: Sequence[float],
                  deltas: Sequence[float], radius_scale: float, tallies: list[_Tally]) -> None:
    """``truths`` (N in 2..10) feed ``design_from_samples``; ``small`` (N <= _EXACT_MAX_N) the
    exact robust design and the paper's fixed-prior design at eps'."""
    import warnings

    from . import design
    from .errors import PMLWarning
    from .estimation import l1_radius
    from .leakage import eps_min
    from .sets import L1Ball

    for delta in deltas:
        fulls = {conf: _Tally("design", "design_from_samples" + ("" if conf == "l1" else
                                                                  f"[{conf}]"), delta,
                              "true eps_min(W, P) > eps for the mechanism of "
                              f"design_from_samples(confidence={conf!r}) (mutual information "
                              f"for N <= {_MI_MAX_N}, accuracy above)")
                 for conf in _DESIGN_CONFIDENCE}
        robust = _Tally("design", "exact robust", delta,
                        "true eps_min(W, P) > eps for optimal_mechanism(p_hat, eps, "
                        "beta=beta*(delta))")
        fixed = _Tally("design", "fixed prior at eps'", delta,
                       "true eps_min(W, P) > eps for optimal_mechanism(p_hat, eps') "
                       "(eq. LPsubset; refused unless beta < 2 min p_hat and eps' >= 0)")
        with warnings.catch_warnings():
            # "certified lower bound" notices: the guarantee is still certified, audit it
            warnings.simplefilter("ignore", PMLWarning)
            for (t, truth), (conf, full) in product(
                    enumerate(truths if radius_scale == 1.0 else ()), fulls.items()):
                eps = float(eps_of[t])
                n = truth.p.size
                res = _try(design.design_from_samples, truth.samples(), eps, delta,
                           categories=list(range(n)), confidence=conf,
                           utility="mutual_information" if n <= _MI_MAX_N else "accuracy")
                if res is None:
                    full.refused += 1
                    continue
                true_eps = eps_min(res.mechanism, truth.p)
                cert = res.guarantee.certified_eps
                ins = _inside(res.guarantee.set, truth.p)
                full.add(true_eps > eps + EPS_TOL, ins,
                         ins and (true_eps > cert + EPS_TOL or cert > eps + EPS_TOL))
            for t, truth in enumerate(small):
                eps = float(eps_of[t])
                beta = radius_scale * l1_radius(delta, truth.m, truth.p.size)
                inside = L1Ball(truth.p_hat, beta).contains(truth.p)
                w = _try(design.optimal_mechanism, truth.p_hat, eps, beta=beta)
                if w is None:
                    robust.refused += 1
                else:
                    true_eps = eps_min(w, truth.p)
                    robust.add(true_eps > eps + EPS_TOL, inside,
                               inside and true_eps > eps + EPS_TOL)
                ep = design.eps_prime(eps, beta)  # eq. optimalepsdash
                w = None
                if ep >= 0 and beta < 2 * truth.p_hat.min():
                    w = _try(design.optimal_mechanism, truth.p_hat, ep)
                if w is None:
                    fixed.refused += 1
                else:
                    true_eps = eps_min(w, truth.p)
                    fixed.add(true_eps > eps + EPS_TOL, inside,
                              inside and true_eps > eps + EPS_TOL)
        tallies += [x for x in (*fulls.values(), robust, fixed) if x.trials or x.refused]


def _binary_truths(gen: np.random.Generator, trials: int) -> list[_Truth]:
    """Binary true priors ``(P(-1), P(+1))`` from Beta(a, a) with the same concentrations."""
    names = list(CONCENTRATIONS)
    out = []
    for t in range(trials):
        name = names[t % len(names)]
        m = int(_ADDITIVE_SIZES[(t // len(names)) % len(_ADDITIVE_SIZES)])
        q = float(gen.beta(CONCENTRATIONS[name], CONCENTRATIONS[name]))
        p = np.array([1.0 - q, q])
        out.append(_Truth(p, gen.multinomial(m, p), m, name))
    return out


def _labels(truth: _Truth) -> np.ndarray:
    """The sample as labels ``-1`` / ``+1`` (``+1`` is the positive label)."""
    return np.repeat(np.array([-1, 1]), truth.counts)


def _audit_laplace(truths: list[_Truth], eps_of: Sequence[float], deltas: Sequence[float],
                   radius_scale: float, tallies: list[_Tally]) -> None:
    from .additive import calibrate_laplace, laplace_eps, laplace_scale_uncertain
    from .confidence import METHODS
    from .estimation import l1_radius
    from .leakage import eps_min
    from .sets import L1Ball

    methods = METHODS if radius_scale == 1.0 else ("l1",)
    for delta in deltas:
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
                else:
                    beta = radius_scale * l1_radius(delta, truth.m, 2)
                    b = laplace_scale_uncertain(eps, float(truth.p_hat.min()), beta)
                    ins = L1Ball(truth.p_hat, beta).contains(truth.p)
                if b == 0.0:  # no noise needed: the mechanism releases X itself
                    true_eps = eps_min(np.eye(2), truth.p)
                else:
                    true_eps = laplace_eps(b, float(truth.p.min()))
                bad = true_eps > eps + EPS_TOL
                tally.add(bad, ins, ins and bad)
            tallies.append(tally)


def _audit_gaussian(truths: list[_Truth], gen: np.random.Generator, deltas: Sequence[float],
                    radius_scale: float, tallies: list[_Tally]) -> None:
    from .additive import (
        calibrate_gaussian,
        gaussian_delta1,
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
                beta = l1_radius(delta2, truth.m, 2)
                if radius_scale == 1.0:
                    res = _try(gaussian_tradeoff, sigma, truth.p_hat, truth.m, delta2, grid,
                               method=method)
                else:
                    beta *= radius_scale
                    q = float(truth.p_hat[1])
                    res = _try(gaussian_tradeoff_interval, sigma, truth.p_hat,
                               max(q - beta / 2, 0.0), min(q + beta / 2, 1.0), delta2, grid,
                               method=method)
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
                d1 = float(gaussian_delta1(sigma, truth.p_hat, beta, grid[k]))
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
                    out_prob = gaussian_violation_probability(sigma, tuple(truth.p),
                                                              float(eps_out[k]))
                    violated = (not ins) or bool(u[d_i, t] < out_prob)
                    tally.add(violated, ins, ins and out_prob > float(cal.delta1[k]) + 1e-12)
            tallies.extend(pair.values())


def _audit_coverage(truths: list[_Truth], deltas: Sequence[float], radius_scale: float,
                    tallies: list[_Tally]) -> None:
    from .confidence import METHODS, confidence_set
    from .estimation import l1_radius
    from .sets import L1Ball

    methods = METHODS if radius_scale == 1.0 else ("l1",)
    for delta in deltas:
        for method in methods:
            tally = _Tally("coverage", method, delta,
                           f"true P not in confidence_set(counts, delta, method={method!r})")
            for truth in truths:
                if radius_scale == 1.0:
                    cs = _try(confidence_set, truth.counts, delta, method=method)
                    if cs is None:
                        tally.refused += 1
                        continue
                    ins = bool(cs.set.contains(truth.p))
                else:
                    beta = radius_scale * l1_radius(delta, truth.m, truth.p.size)
                    ins = L1Ball(truth.p_hat, beta).contains(truth.p)
                tally.add(not ins, ins, False)
            tallies.append(tally)


# --------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------

def run_audit(*, trials: int = 60, seed: int | None = 0,
              deltas: Sequence[float] = DEFAULT_DELTAS,
              families: Sequence[str] = FAMILIES, alpha: float = 1e-3,
              radius_scale: float = 1.0,
              progress: Callable[[str], None] | None = None) -> AuditResult:
    """Audit pmlkit's (eps, delta) guarantees by simulation (see the module docstring).

    Parameters
    ----------
    trials
        Trials per (family, delta) for the design family; the cheaper families use more
        (Laplace 3x, coverage 4x, Gaussian 2x), so that every rate is estimated with
        comparable effort. Each trial draws a fresh true distribution and sample.
    seed
        Integer seed of the simulation (research reproducibility; the audit protects no
        one, so a seeded PCG64 via :func:`pmlkit.rng.resolve_rng` is appropriate). ``None``
        draws a fresh secure seed.
    deltas
        Claimed failure probabilities to audit, each in ``(0, 1)``.
    families
        A subset of :data:`FAMILIES`.
    alpha
        Level of the one-sided binomial test and of the Clopper-Pearson bound.
    radius_scale
        Multiplies every l1 radius (``1`` = the library as shipped). Values ``< 1`` build a
        deliberately broken variant that the audit must reject; only the l1-based rows run.
    progress
        Optional callback receiving one line per finished family.

    Returns
    -------
    AuditResult
        With ``.table`` (pandas), ``.passed`` and a printable summary.

    Notes
    -----
    Beyond the paper: the paper proves its guarantees but reports no audit. Violations are
    computed exactly from the true distribution (no Monte Carlo over outputs except the one
    uniform draw that realises the Gaussian output event).
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
    if seed is None:
        seed_value: int | None = None
        source = resolve_rng(None)
    else:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValidationError(f"seed must be an integer >= 0 or None, got {fmt(seed)}")
        seed_value = int(seed)
        source = resolve_rng(seed_value)
    streams = [s.generator for s in source.spawn(4)]  # one per family: independent of the rest

    tallies: list[_Tally] = []
    say = progress or (lambda _msg: None)
    if "design" in fams:
        truths = _draw_truths(streams[0], t, _DESIGN_SIZES, 2, 10)
        small = _draw_truths(streams[0], t, _DESIGN_SIZES, 2, _EXACT_MAX_N)
        eps_of = [_DESIGN_EPS[i % len(_DESIGN_EPS)] for i in range(t)]
        _audit_design(truths, small, eps_of, ds, scale, tallies)
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
        truths = _draw_truths(streams[3], 4 * t, _ADDITIVE_SIZES, 2, 10)
        _audit_coverage(truths, ds, scale, tallies)
        say(f"coverage: {4 * t} trials per delta")

    settings = {
        "families": fams, "deltas": ds, "concentrations": dict(CONCENTRATIONS),
        "design": {"m": list(_DESIGN_SIZES), "eps": list(_DESIGN_EPS), "N": [2, 10],
                   "exact_max_N": _EXACT_MAX_N, "mutual_information_max_N": _MI_MAX_N,
                   "confidence": list(_DESIGN_CONFIDENCE), "trials": t},
        "laplace": {"m": list(_ADDITIVE_SIZES), "eps": list(_LAPLACE_EPS),
                    "confidence": "every method of pmlkit.confidence.METHODS",
                    "trials": 3 * t},
        "gaussian": {"m": list(_ADDITIVE_SIZES), "sigma": list(_GAUSS_SIGMAS),
                     "confidence": ["l1", *_GAUSS_CONFIDENCE],
                     "eps_grid": [float(_GAUSS_GRID[0]), float(_GAUSS_GRID[-1]),
                                  int(_GAUSS_GRID.size)], "trials": 2 * t},
        "coverage": {"m": list(_ADDITIVE_SIZES), "N": [2, 10], "trials": 4 * t},
    }
    return AuditResult(rows=tuple(x.row(a) for x in tallies), trials=t, seed=seed_value,
                       alpha=a, radius_scale=scale, rng=source.description,
                       settings=settings)
