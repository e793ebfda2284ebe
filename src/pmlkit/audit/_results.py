"""What an audit reports: the families, the default deltas, the rows and the result
of :func:`~pmlkit.audit.run_audit` and :func:`~pmlkit.audit.audit_joint`, and the tally of
the trials of one row (:class:`Tally`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optional import require
from ..confidence import clopper_pearson_upper
from ..worstcase import CERTIFY_TOL

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


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

    >>> from pmlkit.audit import run_audit
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
    post_processing: str = field(repr=False, default="")

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
    >>> from pmlkit.audit import run_audit
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
        tails = [r for r in self.rows if r.post_processing]
        if tails:
            lines.append("post-processing of the (eps, delta) rows:")
            lines.extend(f"  {r.method} (delta {r.delta:g}): {r.post_processing}"
                         for r in tails)
        lines.append("overall: " + ("PASSED" if self.passed else "FAILED"))
        return "\n".join(lines)


class Tally:
    """Accumulates the outcome of the trials of one row."""

    def __init__(self, family: str, method: str, delta: float, event: str) -> None:
        self.family, self.method, self.delta, self.event = family, method, delta, event
        self.trials = self.refused = self.violations = self.inside = self.exceptions = 0
        self.notes: list[str] = []
        #: for (eps, delta) tail statements: whether each trial's statement survives
        #: post-processing and its envelope (the level no post-processing exceeds with
        #: probability above delta); ``tail`` marks a row whose event is such a statement
        self.tail = False
        self.survives: list[bool] = []
        self.envelopes: list[float] = []

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
                                "; EXCEPTIONS: " + "; ".join(self.notes[:3])),
            post_processing=self._post_processing())

    def _post_processing(self) -> str:
        """What the row's tail statement says after post-processing (empty for rows
        that audit a pure eps guarantee, which post-processing never weakens)."""
        if not self.tail:
            return ""
        if not self.envelopes:
            return ("an (eps, delta) tail statement: not certified to survive "
                    "post-processing (a merge of outputs can exceed eps with probability "
                    "above delta; see pmlkit.leakage_envelope)")
        env = np.asarray(self.envelopes, dtype=float)
        return (f"an (eps, delta) tail statement: survives post-processing in "
                f"{sum(self.survives)} of {len(self.survives)} trials; envelope at delta "
                f"(no post-processing exceeds it with probability above delta): median "
                f"{float(np.median(env)):.4g}, max {float(env.max()):.4g}")
