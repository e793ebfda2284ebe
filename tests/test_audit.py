"""The audit of the guarantees: it passes the library as shipped, and it has power.

* Default settings: every simulated row passes the one-sided binomial test of "violation
  rate <= claimed delta" at level 0.001 with zero conditional exceptions, and every exact
  row (coverage summed exactly over every sample outcome at worst-case true distributions)
  stays at or below delta.
* Power: every confidence set shrunk to 0.7 of its size (the radius x 0.7 variant) is
  rejected, by exact sums that the tests recompute independently (``math.comb`` binomial
  and multinomial sums over the public sets' ``contains``); a false certificate (the
  library's worst case made too optimistic) and a release that does not follow the
  certified mechanism are caught.
* The statistics themselves are checked against independent computations (binomial sums
  with ``math.comb``, the closed form of the Clopper-Pearson bound at ``k = 0``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from itertools import product

import numpy as np
import pytest

import pmlkit.audit as audit
from pmlkit.audit import _exact
from pmlkit.errors import ValidationError

pytestmark = pytest.mark.slow  # the default audit runs once per module


# The default audit, one family at a time: each family draws from its own stream (spawned
# from the one seed whatever families run), so ``run_audit(families=(f,))`` gives exactly
# the rows of family f of ``run_audit()``, and the settings are the same. Each family is
# computed once per process (pytest-xdist's --dist loadscope keeps a module on one worker).
@functools.cache
def _default(family: str) -> audit.AuditResult:
    result = audit.run_audit(families=(family,))
    assert result.rows and {r.family for r in result.rows} == {family}
    return result


@pytest.fixture(scope="module", params=audit.FAMILIES)
def default_result(request: pytest.FixtureRequest) -> audit.AuditResult:
    return _default(request.param)


@pytest.fixture(scope="module")
def broken_result() -> audit.AuditResult:
    return audit.run_audit(trials=16, deltas=(0.05,), radius_scale=0.7,
                           families=("exact", "coverage", "design"))


def test_default_audit_passes(default_result: audit.AuditResult) -> None:
    # Every row, unconditionally: the batched l1-box minimum that once spoiled the l1-box
    # designs is pinned against HiGHS in test_confidence (several columns at once).
    bad = [r for r in default_result.rows if not r.passed]
    assert not bad, "\n" + str(default_result)
    assert default_result.passed


def test_default_audit_covers_every_family_method_and_delta(
        default_result: audit.AuditResult) -> None:
    from pmlkit.confidence import METHODS

    df = default_result.table
    (family,) = set(df["family"])  # run for each family of audit.FAMILIES (the fixture)
    if family in ("coverage", "exact"):
        assert set(df.loc[df.family == family, "method"]) == set(METHODS)
    if family == "design":
        assert {"design_from_samples", "exact robust", "fixed prior at eps'"} | {
            f"design_from_samples[{m}]" for m in METHODS if m != "l1"} <= set(
            df.loc[df.family == "design", "method"])
    if family == "gaussian":
        assert {"gaussian_tradeoff[paper]", "gaussian_tradeoff[direct]"} <= set(
            df.loc[df.family == "gaussian", "method"])
    assert {0.05, 0.3, 1e-6} == set(df["delta"])
    assert (df["trials"] > 0).all()
    assert (df["violations"] <= df["trials"]).all()
    assert (df["inside"] <= df["trials"]).all()
    assert (df["upper"] >= df["rate"]).all()
    # the settings reach m = 1 and 10^4 exactly, N = 12 in the designs
    s = default_result.settings
    assert min(s["exact"]["binary_m"]) == 1 and max(s["exact"]["binary_m"]) == 10_000
    assert s["design"]["N"][1] == 12
    # the README's description: "every multinomial outcome for N = 3..5", the design path
    # with "N up to 12, m from 5 to 10^4"
    assert sorted(int(n) for n in s["exact"]["multinomial"]) == [3, 4, 5]
    assert min(s["design"]["m"]) == 5 and max(s["design"]["m"]) == 10_000


def test_exact_rows_are_tight_where_the_set_is_tight() -> None:
    """Not vacuous: the Clopper-Pearson box and the folded lower bound are exact
    constructions, so the worst case the search finds must come close to delta."""
    for method in ("box-cp", "box-lower"):
        for delta in (0.05, 0.3, 1e-6):
            row = _default("exact").row("exact", method, delta)
            assert row.passed and 0.9 * delta < row.rate <= delta * (1 + 1e-9), row


def test_observable_deltas_see_violations() -> None:
    # (the coverage family alone: 61 violations in its 840 trials at delta = 0.3)
    df = _default("coverage").table
    assert df.loc[(df.delta == 0.3) & ~df.exact, "violations"].sum() > 0


def test_paper_delta_has_no_violation(default_result: audit.AuditResult) -> None:
    df = default_result.table
    assert (df.loc[df.delta == 1e-6, "violations"] == 0).all()


# --------------------------------------------------------------------------------------
# power
# --------------------------------------------------------------------------------------

def test_radius_x07_variant_is_rejected(broken_result: audit.AuditResult) -> None:
    """Every method's set at 0.7 of its size fails the exact coverage sums, at level 0.001
    and beyond (an exact failure probability above delta needs no test)."""
    from pmlkit.confidence import METHODS

    assert not broken_result.passed
    for method in METHODS:
        row = broken_result.row("exact", method, 0.05)
        assert row.rejected and row.rate > 0.05 and row.p_value < 1e-3, str(broken_result)
        assert row.conditional_exceptions == 0
    # the paper's ball at N = 2 (Hoeffding): the worst case sits at small m
    assert broken_result.row("exact", "l1", 0.05).rate > 0.065


def _shrunk_public(cs: object, s: float) -> object:
    """The 0.7 variant of a confidence set, built from the public set classes."""
    from pmlkit.sets import Box, L1Ball, L1BoxSet

    u, c = cs.set, np.asarray(cs.p_hat)
    if isinstance(u, L1Ball):
        return L1Ball(u.center, s * u.radius)
    if isinstance(u, Box):
        return Box(np.clip(c + s * (u.lower - c), 0, 1), np.clip(c + s * (u.upper - c), 0, 1))
    assert isinstance(u, L1BoxSet)
    return L1BoxSet(u.center, s * u.radius, np.clip(c + s * (u.lower - c), 0, 1),
                    np.clip(c + s * (u.upper - c), 0, 1))


def _independent_failure(method: str, delta: float, m: int, q: list[float], s: float
                         ) -> float:
    """``P_q[q not in S(X)]`` by brute force: every outcome enumerated with
    ``itertools.product``, its multinomial probability with ``math.comb``, the set from
    the public ``confidence_set`` and its ``contains`` (tolerance 0)."""
    from pmlkit.confidence import confidence_set

    n, total = len(q), 0.0
    for x in product(range(m + 1), repeat=n - 1):
        if sum(x) > m:
            continue
        counts = [*x, m - sum(x)]
        prob, left = 1.0, m
        for c, qi in zip(counts, q, strict=True):
            prob *= math.comb(left, c) * qi**c
            left -= c
        if prob == 0.0:
            continue
        shrunk = _shrunk_public(confidence_set(counts, delta, confidence=method), s)
        if not shrunk.contains(np.array(q), tol=1e-14):  # (a float sum is not exactly 1)
            total += prob
    return total


@pytest.mark.parametrize("method", ["l1", "box-cp", "box-lower", "l1-kappa", "auto"])
def test_exact_worst_case_agrees_with_brute_force(broken_result: audit.AuditResult,
                                                  method: str) -> None:
    """The failure probability the audit reports, recomputed at the reported worst case
    from the public sets, independently of the audit's batched sums."""
    row = broken_result.row("exact", method, 0.05)
    found = re.match(r"N=(\d+), m=(\d+), P=[\[(](.*)[\])]", row.worst_case)
    assert found, row.worst_case
    n, m = int(found.group(1)), int(found.group(2))
    q = [float(v) for v in re.split(r"[,\s]+", found.group(3).strip()) if v]
    assert len(q) == n
    value = _independent_failure(method, 0.05, m, q, 0.7)
    assert value > 0.05
    assert value == pytest.approx(row.rate, rel=1e-9)


def test_exact_binary_sum_matches_brute_force_everywhere() -> None:
    """The audit's N = 2 sums against ``math.comb`` sums over the public ``L1Ball`` and
    ``Box``, on a grid of true distributions and sample sizes (real and shrunk sets)."""
    from pmlkit.confidence import confidence_set

    for method, m, s in [("l1", 7, 1.0), ("l1", 4, 0.7), ("box-cp", 9, 1.0),
                         ("box-kl", 5, 0.8), ("l1-box", 6, 1.0), ("auto", 8, 0.9)]:
        ks = np.arange(m + 1)
        counts = np.stack([ks, m - ks], axis=1)
        rep = _exact._rep_of(counts, 0.05, method).scaled(s)
        a, b = rep.interval()
        q = np.linspace(0.0, 1.0, 41)
        mine = _exact._binary_failure(q, a, b, m)
        # the public set of each outcome k (it does not depend on the true q)
        sets = [_shrunk_public(confidence_set([k, m - k], 0.05, confidence=method), s)
                for k in range(m + 1)]
        for qi, got in zip(q, mine, strict=True):
            want = math.fsum(
                math.comb(m, k) * qi**k * (1 - qi) ** (m - k) for k in range(m + 1)
                if not sets[k].contains(np.array([qi, 1 - qi]), tol=1e-14))
            assert got == pytest.approx(want, abs=1e-12), (method, m, s, qi)


def test_false_certificate_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worst case made too optimistic (every l1-ball minimum 20% too large, as the
    batched l1-box defect did) yields false certificates: the LP worst case finds them."""
    from pmlkit.sets import L1Ball

    real = L1Ball._min_linear_block
    monkeypatch.setattr(L1Ball, "_min_linear_block", lambda self, w: 1.2 * real(self, w))
    res = audit.run_audit(trials=6, deltas=(0.3,), families=("design",))
    row = res.row("design", "design_from_samples", 0.3)
    assert row.conditional_exceptions > 0 and not row.passed
    assert "certified" in row.event


def test_release_that_does_not_follow_the_mechanism_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file privatisation that releases the raw labels (the identity mechanism) instead
    of the certified mechanism is an exception of the release row."""
    import pmlkit.privatization as priv
    from pmlkit.mechanism import Mechanism

    real = priv.privatize_file

    def leaky(mech: Mechanism, *args: object, **kwargs: object) -> object:
        labels = list(mech.input_labels)
        ident = Mechanism(np.eye(len(labels)), input_labels=labels, output_labels=labels)
        return real(ident, *args, **kwargs)

    monkeypatch.setattr(priv, "privatize_file", leaky)
    res = audit.run_audit(trials=8, deltas=(0.3,), families=("release",))
    row = res.row("release", "design -> file -> privatize_file", 0.3)
    assert row.conditional_exceptions > 0 and not row.passed


def test_conditional_check_still_holds_for_broken_variant(
        broken_result: audit.AuditResult) -> None:
    """Shrinking the sets breaks coverage, not the certification: inside the (smaller)
    set the mechanisms still meet eps, and the LP finds no false certificate."""
    rows = [r for r in broken_result.rows if r.family == "design"
            and "l1-box" not in r.method and "auto" not in r.method]
    assert len(rows) >= 3, str(broken_result)  # the loop below is not vacuous
    for r in rows:
        assert r.conditional_exceptions == 0, r.event
        assert r.inside + r.violations <= r.trials  # every violation is outside


def test_audit_is_reproducible_with_a_seed() -> None:
    a = audit.run_audit(trials=5, rng=3, families=("coverage", "laplace"), deltas=(0.3,))
    b = audit.run_audit(trials=5, rng=3, families=("coverage", "laplace"), deltas=(0.3,))
    assert a.table.equals(b.table)
    assert a.seed == 3 and "seeded" in a.rng


# --------------------------------------------------------------------------------------
# the statistics, against independent computations
# --------------------------------------------------------------------------------------

def _binom_tail(k: int, n: int, p: float) -> float:
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


@pytest.mark.parametrize("k,n,alpha", [(0, 10, 1e-3), (0, 200, 0.05), (3, 50, 1e-3),
                                       (17, 60, 0.01), (59, 60, 1e-3), (60, 60, 0.05)])
def test_clopper_pearson_upper(k: int, n: int, alpha: float) -> None:
    u = audit.clopper_pearson_upper(k, n, alpha)
    if k == n:
        assert u == 1.0
        return
    if k == 0:  # closed form: (1 - u)^n = alpha
        assert u == pytest.approx(1 - alpha ** (1 / n), rel=1e-10)
    # defining property: P[Bin(n, u) <= k] = alpha
    assert 1 - _binom_tail(k + 1, n, u) == pytest.approx(alpha, rel=1e-8)


def test_rows_use_the_exact_binomial_test(default_result: audit.AuditResult) -> None:
    for r in default_result.rows:
        if r.exact:
            assert r.rejected == (r.violations > 0)
            continue
        expected = _binom_tail(r.violations, r.trials, r.delta)
        assert r.p_value == pytest.approx(min(expected, 1.0), rel=1e-8, abs=1e-300)
        assert r.rejected == (r.p_value < default_result.alpha)


# --------------------------------------------------------------------------------------
# bad input and the command line
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    ({"trials": 0}, "trials"),
    ({"trials": 2.5}, "trials"),
    ({"alpha": 0.0}, "alpha"),
    ({"alpha": math.nan}, "alpha"),
    ({"deltas": (1.5,)}, "deltas"),
    ({"deltas": (1.0,)}, "deltas"),
    ({"deltas": ()}, "deltas"),
    ({"families": ("nope",)}, "families"),
    ({"radius_scale": -1.0}, "radius_scale"),
    ({"rng": -1}, "rng"),
])
def test_run_audit_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        audit.run_audit(**kwargs)


def test_cli_audit_json(capsys: pytest.CaptureFixture[str]) -> None:
    from pmlkit.cli.main import main

    code = main(["audit", "--trials", "3", "--family", "coverage", "--delta", "0.3",
                 "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["passed"] is True
    assert {r["method"] for r in doc["rows"]} >= {"l1", "box-cp"}


def test_cli_audit_broken_variant_exits_4(capsys: pytest.CaptureFixture[str]) -> None:
    from pmlkit.cli.main import main

    code = main(["audit", "--trials", "30", "--family", "coverage", "--delta", "0.05",
                 "--radius-scale", "0.25"])
    out = capsys.readouterr().out
    assert code == 4
    assert "FAIL" in out and "overall: FAILED" in out
