"""The audit of a joint guarantee (:func:`audit_joint`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._deprecation import renamed_parameter
from .._validation import check_count, check_delta
from ..confidence import clopper_pearson_upper
from ..worstcase import CERTIFY_TOL
from ._results import CONCENTRATIONS, AuditResult, AuditRow


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

    from ..design import randomized_response
    from ..joint import joint_guarantee, joint_leakage, marginal_bound
    from ..leakage import eps_min

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
