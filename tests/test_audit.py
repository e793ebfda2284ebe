"""The statistical audit: the guarantees hold, and a broken variant fails.

* With the default settings, for every (family, method, delta) row the one-sided binomial
  test of "violation rate <= claimed delta" does not reject at level 0.001, and the
  conditional check (true distribution inside the set => certified eps holds) has zero
  exceptions.
* The deliberately broken variant (every l1 radius divided by 4) is rejected by the same
  test.
* The statistics themselves are checked against independent computations (binomial sums
  with ``math.comb``, the closed form of the Clopper-Pearson bound at ``k = 0``).
"""

from __future__ import annotations

import json
import math

import pytest

from pmlkit.errors import ValidationError

audit = pytest.importorskip("pmlkit.audit")
pytest.importorskip("pmlkit.design")

pytestmark = pytest.mark.slow  # ~20 s: the default audit runs once per session


@pytest.fixture(scope="module")
def default_result() -> audit.AuditResult:
    return audit.run_audit()


@pytest.fixture(scope="module")
def broken_result() -> audit.AuditResult:
    return audit.run_audit(trials=150, deltas=(0.05,), radius_scale=0.25,
                           families=("design", "gaussian", "coverage"))


def test_default_audit_passes(default_result: audit.AuditResult) -> None:
    bad = [r for r in default_result.rows if not r.passed]
    assert not bad, "\n" + str(default_result)
    assert default_result.passed


def test_default_audit_covers_every_family_method_and_delta(
        default_result: audit.AuditResult) -> None:
    from pmlkit.confidence import METHODS

    df = default_result.table
    assert set(df["family"]) == set(audit.FAMILIES)
    assert set(df.loc[df.family == "coverage", "method"]) == set(METHODS)
    assert {"design_from_samples", "exact robust", "fixed prior at eps'"} <= set(
        df.loc[df.family == "design", "method"])
    assert {"gaussian_tradeoff[paper]", "gaussian_tradeoff[direct]"} <= set(
        df.loc[df.family == "gaussian", "method"])
    assert {0.05, 0.3, 1e-6} == set(df["delta"])
    # every row had real trials, and each result row is internally consistent
    assert (df["trials"] > 0).all()
    assert (df["violations"] <= df["trials"]).all()
    assert (df["inside"] <= df["trials"]).all()
    assert (df["conditional_exceptions"] == 0).all()
    assert (df["upper"] >= df["rate"]).all()


def test_observable_deltas_see_violations(default_result: audit.AuditResult) -> None:
    """The audit is not vacuous: at delta = 0.3 some guarantees are violated sometimes
    (the per-coordinate boxes and the Gaussian output tail are nearly tight)."""
    df = default_result.table
    assert df.loc[df.delta == 0.3, "violations"].sum() > 0


def test_paper_delta_has_no_violation(default_result: audit.AuditResult) -> None:
    df = default_result.table
    assert (df.loc[df.delta == 1e-6, "violations"] == 0).all()


def test_broken_variant_is_rejected(broken_result: audit.AuditResult) -> None:
    """Radius / 4: the coverage of the l1 set, the robust design and the Gaussian curve
    all fail the same one-sided binomial test."""
    assert not broken_result.passed
    for family, method in [("coverage", "l1"), ("design", "exact robust"),
                           ("gaussian", "gaussian_tradeoff[direct]")]:
        row = broken_result.row(family, method, 0.05)
        assert row.rejected, str(broken_result)
        assert row.p_value < 1e-3 and row.rate > 0.05


def test_conditional_check_still_holds_for_broken_variant(
        broken_result: audit.AuditResult) -> None:
    """Halving the radius breaks coverage, not the certification: inside the (smaller)
    set the mechanisms still meet eps. The violations all come from outside."""
    for r in broken_result.rows:
        assert r.conditional_exceptions == 0
        if r.family != "gaussian":  # (the Gaussian's output tail may fire inside the set)
            assert r.inside + r.violations <= r.trials  # every violation is outside


def test_audit_is_reproducible_with_a_seed() -> None:
    a = audit.run_audit(trials=5, seed=3, families=("coverage", "laplace"), deltas=(0.3,))
    b = audit.run_audit(trials=5, seed=3, families=("coverage", "laplace"), deltas=(0.3,))
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
    ({"seed": -1}, "seed"),
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
