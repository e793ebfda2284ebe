"""Tests of pmlkit.experiments (the paper's figures) and of `pmlkit reproduce`.

Numbers are compared with independent computations (hand-derived closed forms, mpmath,
brute force, scipy), the checks are shown to fail on tampered data, and a smoke test runs
every registered figure with few iterations.
"""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pmlkit.datasets  # noqa: F401  (part of pmlkit: a failed import fails the suite)
from pmlkit.errors import ValidationError
from pmlkit.experiments import FIGURES, available_figures, get_figure
from pmlkit.experiments.base import Check, empirical_mutual_information

# --------------------------------------------------------------------------- base


def test_check_is_frozen_and_serialisable():
    c = Check("claim", True, "detail")
    with pytest.raises(AttributeError):
        c.holds = False  # type: ignore[misc]
    assert c.to_dict() == {"claim": "claim", "holds": True, "detail": "detail"}


def _mi_brute(table: np.ndarray) -> float:
    """Plain-Python double loop of the empirical mutual information."""
    m = table.sum()
    fx, fy = table.sum(axis=1), table.sum(axis=0)
    total = 0.0
    for i in range(table.shape[0]):
        for j in range(table.shape[1]):
            f = table[i, j]
            if f > 0:
                total += f / m * math.log(m * f / (fx[i] * fy[j]))
    return total


@given(st.lists(st.integers(0, 50), min_size=6, max_size=6).filter(lambda v: sum(v) > 0))
def test_empirical_mi_matches_brute_force_and_bounds(counts):
    table = np.array(counts, dtype=float).reshape(2, 3)
    got = float(empirical_mutual_information(table))
    assert got == pytest.approx(_mi_brute(table), abs=1e-12)
    # 0 <= I <= min(H(X), H(Y)) for the empirical joint distribution
    px, py = table.sum(1) / table.sum(), table.sum(0) / table.sum()

    def h(p):
        return -sum(x * math.log(x) for x in p if x > 0)

    assert -1e-12 <= got <= min(h(px), h(py)) + 1e-12


def test_empirical_mi_equals_mutual_information_of_the_estimated_channel():
    from pmlkit.utility import mutual_information

    table = np.array([[30.0, 10.0, 5.0], [2.0, 40.0, 13.0]])
    p_hat = table.sum(1) / table.sum()
    w_hat = table / table.sum(1, keepdims=True)
    assert float(empirical_mutual_information(table)) == pytest.approx(
        mutual_information(w_hat, p_hat), rel=1e-12)


def test_empirical_mi_is_vectorised_over_leading_axes():
    tables = np.array([[[10, 0], [0, 10]], [[5, 5], [5, 5]], [[1, 2], [3, 4]]], float)
    got = empirical_mutual_information(tables)
    assert got.shape == (3,)
    assert got[0] == pytest.approx(math.log(2)) and got[1] == 0.0
    assert got[2] == pytest.approx(_mi_brute(tables[2]))
    with pytest.raises(ValidationError, match="joint"):
        empirical_mutual_information(np.ones(3))


def test_registry_lists_every_figure_and_rejects_unknown_names():
    for name in ("upperbound", "deltamin", "laplace_adult", "laplace_delta", "gauss",
                 "gauss_skewed", "design_gain", "tighter_sets"):
        assert name in FIGURES
    with pytest.raises(ValidationError, match="figure must be one of"):
        get_figure("nope")
    for name in available_figures():
        fig = get_figure(name)
        assert fig.NAME == name and fig.CAPTION
        assert callable(fig.compute) and callable(fig.plot) and callable(fig.check)


def test_iterations_are_validated():
    with pytest.raises(ValidationError, match="iterations"):
        get_figure("deltamin").compute(iterations=0)
    with pytest.raises(ValidationError, match="iterations"):
        get_figure("upperbound").compute(iterations=2.5)


# --------------------------------------------------------------------------- upperbound


def test_d_inf_matches_pml_difference_and_brute_force():
    from pmlkit.experiments import upperbound as ub
    from pmlkit.leakage import pml

    w, p, _, _ = ub.PANELS["a"]
    qs = np.random.default_rng(1).dirichlet(np.ones(4), size=20)
    got = ub.d_inf(w, p, qs)
    for q, g in zip(qs, got, strict=True):
        assert g == pytest.approx(float(np.max(pml(w, q) - pml(w, p))), abs=1e-12)
        brute = max(math.log(sum(p[i] * w[i, j] for i in range(4))
                             / sum(q[i] * w[i, j] for i in range(4))) for j in range(4))
        assert g == pytest.approx(brute, abs=1e-12)


def test_panel_mechanisms_are_what_the_paper_says():
    from pmlkit.experiments import upperbound as ub
    from pmlkit.leakage import eps_min

    for w, p, eps, _ in ub.PANELS.values():
        np.testing.assert_allclose(w.sum(axis=1), 1.0)
        assert eps_min(w, p) == pytest.approx(eps, abs=1e-12)
    w = ub.PANELS["b"][0]
    np.testing.assert_allclose(w.sum(axis=0), 1.0)           # doubly stochastic
    assert set(np.unique(w)) == {0.0, 0.5}                     # 2-singular


def test_random_cloud_is_in_the_simplex_with_uniform_radii():
    from pmlkit.experiments import upperbound as ub

    p = np.array([0.4, 0.2, 0.2, 0.2])
    qs = ub.random_cloud(p, 0.3, 4000, np.random.default_rng(0))
    assert qs.shape == (4000, 4)
    assert (qs >= 0).all()
    np.testing.assert_allclose(qs.sum(axis=1), 1.0)
    d = np.abs(qs - p).sum(axis=1)
    assert d.max() <= 0.3 + 1e-12
    # uniform on (0, 0.3): Kolmogorov-Smirnov against the uniform law
    from scipy.stats import kstest

    assert kstest(d / 0.3, "uniform").pvalue > 1e-4


@given(st.sampled_from(["a", "b"]), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1))
def test_random_points_never_exceed_the_thm_l1gamma_bound(panel, frac, seed):
    """Thm l1gamma: D_inf(P_Y || Q_Y) <= bound(||P - Q||_1) for Q in the ball."""
    from pmlkit.bounds import sensitivity_bound
    from pmlkit.experiments import upperbound as ub

    w, p, eps, _ = ub.PANELS[panel]
    qs = ub.random_cloud(p, max(frac, 1e-6) * 1.9 * p.min(), 5, np.random.default_rng(seed))
    betas = np.abs(qs - p).sum(axis=1)
    bound = np.asarray(sensitivity_bound(p, eps=eps, beta=betas), float)
    assert (ub.d_inf(w, p, qs) <= bound + 1e-12).all()


def test_upperbound_compute_and_checks_detect_tampering():
    fig = get_figure("upperbound")
    df = fig.compute(iterations=150, rng=3)
    assert list(df.columns) == ["panel", "beta", "d_inf", "kind"]
    assert set(df["kind"]) == {"random", "bound", "exact"}
    assert (df[df["kind"] == "random"].groupby("panel").size() == 150).all()
    checks = fig.check(df)
    assert checks and all(c.holds for c in checks), [c for c in checks if not c.holds]
    # one random point lifted above the exact curve at its own beta must be caught
    bad = df.copy()
    i = bad.index[(bad["kind"] == "random") & (bad["panel"] == "b")][0]
    from pmlkit.sets import L1Ball
    from pmlkit.worstcase import leakage_sensitivity

    w, p, _, _ = get_figure("upperbound").PANELS["b"]
    beta_i = float(bad.loc[i, "beta"])
    bad.loc[i, "d_inf"] = leakage_sensitivity(w, p, L1Ball(p, beta_i)) + 1e-6
    failed = [c.claim for c in fig.check(bad) if not c.holds]
    assert any("panel b" in c and "random" in c for c in failed)
    # a bound point below the exact curve must be caught
    bad = df.copy()
    j = bad.index[(bad["kind"] == "bound") & (bad["panel"] == "a")][50]
    bad.loc[j, "d_inf"] -= 1e-3
    assert any("panel a" in c.claim and "bound point" in c.claim and not c.holds
               for c in fig.check(bad))


def test_upperbound_is_reproducible_from_the_seed():
    fig = get_figure("upperbound")
    a = fig.compute(iterations=30, rng=7)
    b = fig.compute(iterations=30, rng=7)
    c = fig.compute(iterations=30, rng=8)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


# --------------------------------------------------------------------------- deltamin


def test_deltamin_values_match_the_closed_forms_in_mpmath():
    fig = get_figure("deltamin")
    df = fig.compute(iterations=12)
    assert list(df.columns) == ["panel", "m", "eps", "eps_target", "delta_min", "eps_prime"]
    a = df[df["panel"] == "a"]
    assert a["eps_prime"].isna().all()
    mpmath.mp.dps = 50
    for _, r in a.sample(15, random_state=0).iterrows():
        val = (mpmath.mpf(2) ** 20 - 2) * mpmath.exp(
            -2 * r["m"] * (mpmath.exp(-r["eps"]) - mpmath.exp(-r["eps_target"])) ** 2)
        assert r["delta_min"] == pytest.approx(float(min(val, 1)), rel=1e-9, abs=1e-300)
    b = df[df["panel"] == "b"]
    assert b["delta_min"].isna().all() and b["eps_target"].isna().all()
    for _, r in b.iterrows():
        beta = mpmath.sqrt(2 / mpmath.mpf(int(r["m"])) * (mpmath.log(2**20 - 2)
                                                          - mpmath.log(mpmath.mpf("1e-5"))))
        x = beta * mpmath.exp(r["eps"]) / 2
        expect = math.inf if x >= 1 else float(r["eps"] - mpmath.log(1 - x))
        assert r["eps_prime"] == pytest.approx(expect, rel=1e-10)
    checks = fig.check(df)
    assert all(c.holds for c in checks), [c for c in checks if not c.holds]


# --------------------------------------------------------------------------- Laplace


def test_laplace_simulation_matches_the_exact_channel_mutual_information():
    """With m large the plug-in MI is close to the MI of the 2x2 thresholded channel
    (flip probability e^{-1/b}/2, derived by hand from the Laplace tail)."""
    from pmlkit.experiments.laplace_adult import simulate

    rng = np.random.default_rng(0)
    codes = (rng.random(40_000) < 0.3).astype(np.int64)
    eps = 1.0
    rows = simulate(codes, [40_000], [(eps, 0.0)], 8, np.random.default_rng(1))
    (r,) = rows
    b = 2.0 / eps
    assert r["b"] == pytest.approx(b, rel=1e-12)                 # LDP scale 2/eps
    flip = 0.5 * math.exp(-1.0 / b)
    p1 = codes.mean()
    joint = np.array([[(1 - p1) * (1 - flip), (1 - p1) * flip],
                      [p1 * flip, p1 * (1 - flip)]])
    exact = _mi_brute(joint)
    assert r["mi_mean"] == pytest.approx(exact, abs=4 * r["mi_std"] / math.sqrt(8) + 1e-4)
    # the exact channel MI under the column's distribution: the hand-derived joint itself
    assert r["mi_channel_mean"] == pytest.approx(exact, rel=1e-12)
    assert r["mi_channel_std"] == 0.0                            # one b for every iteration


def test_laplace_scale_for_pml_matches_the_hand_inverted_formula():
    """eq. uncertainlaplace solved for b by hand: e^{2/b} = (1-p) e^eps / (1 - p e^eps),
    p = p_hat_min - beta*/2 with beta* = sqrt(2 (log 2 - log delta) / m)."""
    from pmlkit.experiments.laplace_adult import scale_for

    eps, delta, m = 0.5, 1e-9, 5000
    p_hat_min = np.array([0.24, 0.31, 0.24])
    got = scale_for(eps, delta, m, p_hat_min)
    beta = math.sqrt(2 * (math.log(2) - math.log(delta)) / m)
    for g, ph in zip(got, p_hat_min, strict=True):
        p = ph - beta / 2
        t = (1 - p) * math.exp(eps) / (1 - p * math.exp(eps))
        assert g == pytest.approx(2 / math.log(t), rel=1e-9)
    assert (got < 2 / eps).all()


def test_laplace_without_noise_keeps_all_information():
    """When eps >= eps_max of the worst prior no noise is needed (b = 0): MI = H(X)."""
    from pmlkit.experiments.laplace_adult import simulate

    codes = np.r_[np.zeros(600, np.int64), np.ones(400, np.int64)]
    (r,) = simulate(codes, [1000], [(5.0, 0.5)], 4, np.random.default_rng(0))
    assert r["b"] == 0.0
    assert r["mi_mean"] == pytest.approx(-(0.6 * math.log(0.6) + 0.4 * math.log(0.4)))
    assert r["mi_channel_mean"] == pytest.approx(-(0.6 * math.log(0.6) + 0.4 * math.log(0.4)))
    with pytest.raises(ValidationError, match="m must be"):
        simulate(codes, [2000], [(1.0, 0.0)], 2, np.random.default_rng(0))


def _laplace_frame() -> pd.DataFrame:
    rows = []
    for feat in ("income", "sex"):
        for m in (100, 1000):
            for eps in (0.5, 1.0):
                base = 0.01 * eps
                rows.append(dict(feature=feat, m=m, eps=eps, method="ldp", mi_mean=base,
                                 mi_std=0.0, b=2 / eps, iterations=10))
                rows.append(dict(feature=feat, m=m, eps=eps, method="pml",
                                 mi_mean=base + m * 1e-5, mi_std=0.0, b=1 / eps,
                                 iterations=10))
    return pd.DataFrame(rows)


def test_laplace_checks_pass_on_good_data_and_fail_on_bad():
    lap = get_figure("laplace_adult")
    df = _laplace_frame()
    assert all(c.holds for c in lap.check(df))
    bad = df.copy()
    k = bad.index[(bad["method"] == "pml") & (bad["m"] == 100)][0]
    bad.loc[k, "mi_mean"] = 0.0
    failed = [c.claim for c in lap.check(bad) if not c.holds]
    assert any("exceeds LDP" in c for c in failed)


def test_laplace_delta_checks_catch_non_monotone_delta():
    ld = get_figure("laplace_delta")
    rows = [dict(feature="sex", m=m, delta=d, mi_mean=0.01 + (d > 0) * (0.01 + 1e-3 * k)
                 + 1e-6 * m, mi_std=0.0, eps=math.log(2), b=1.0, iterations=10)
            for m in (100, 1000) for k, d in enumerate((0.0, 1e-9, 1e-5))]
    df = pd.DataFrame(rows)
    assert all(c.holds for c in ld.check(df))
    bad = df.copy()
    bad.loc[(bad["delta"] == 1e-5) & (bad["m"] == 100), "mi_mean"] = 0.015
    assert any("falls as delta shrinks" in c.claim and not c.holds for c in ld.check(bad))


# --------------------------------------------------------------------------- Gauss


def test_pldp_delta_inverts_the_pldp_curve_in_closed_form():
    """Hand inversion of sigma = sqrt2 (f + sqrt(f^2 + eps)) / eps: with s = sigma/sqrt2,
    f = (eps s^2 - 1) / (2 s) and delta = erfc(f)."""
    from scipy.special import erfc

    from pmlkit.experiments.gauss import pldp_delta

    for sigma, eps in ((1.5, 2.0), (2.0, 1.0), (1.5, 5.0), (3.0, 0.8)):
        s = sigma / math.sqrt(2)
        f = (eps * s * s - 1) / (2 * s)
        expect = float(erfc(f)) if f > 0 else 1.0
        assert pldp_delta(sigma, eps) == pytest.approx(min(expect, 1.0), rel=1e-8)


def test_gauss_curves_columns_and_checks():
    for name in ("gauss", "gauss_skewed"):
        fig = get_figure(name)
        df = fig.compute(iterations=25)
        assert list(df.columns) == ["sigma", "p_hat", "m", "method", "eps", "delta"]
        assert set(df["method"]) == {"paper", "direct", "pldp"}
        assert df.loc[df["method"] == "pldp", "m"].isna().all()
        checks = fig.check(df)
        assert all(c.holds for c in checks), [c for c in checks if not c.holds]
        # pushing one paper point below the direct curve must be caught
        bad = df.copy()
        k = bad.index[(bad["method"] == "paper") & (bad["delta"] > 1e-3)][0]
        bad.loc[k, "delta"] *= 0.5
        assert any("direct curve" in c.claim and not c.holds for c in fig.check(bad))


def test_gauss_direct_delta_at_large_eps_is_delta2_plus_tail():
    """At eps = eps_max of the worst prior nothing can violate: delta* = delta_2 exactly."""
    df = get_figure("gauss").compute(iterations=40)
    d = df[df["method"] == "direct"]
    assert d["delta"].min() == pytest.approx(1e-6, rel=1e-9)


# --------------------------------------------------------------------------- design_gain


def test_design_gain_checks_detect_a_robust_design_below_rr():
    dg = get_figure("design_gain")
    rows = []
    for feat, n in (("sex", 2), ("relationship", 6)):
        for m in (1000, 30000):
            for meth, v in (("robust", 0.3), ("eps_prime", 0.25), ("rr", 0.05)):
                rows.append(dict(feature=feat, n=n, m=m, eps=math.log(2), delta=1e-6,
                                 method=meth, mi_mean=v + m * 1e-7, mi_std=0.0,
                                 mi_hat_mean=v + m * 1e-7, exact=1.0))
    df = pd.DataFrame(rows)
    assert all(c.holds for c in dg.check(df))
    bad = df.copy()
    bad.loc[(bad["method"] == "robust") & (bad["m"] == 1000), "mi_hat_mean"] = 0.01
    assert any("randomized response" in c.claim and not c.holds for c in dg.check(bad))


# --------------------------------------------------------------------------- smoke + CLI

SMOKE_ITER = {"upperbound": 100, "deltamin": 10, "laplace_adult": 3, "laplace_delta": 3,
              "gauss": 15, "gauss_skewed": 15, "design_gain": 2, "tighter_sets": 2}
#: figures whose checks are deterministic (no Monte-Carlo noise): they must hold even in
#: a smoke run; the Monte-Carlo ones are checked at their defaults below
DETERMINISTIC = {"upperbound", "deltamin", "gauss", "gauss_skewed"}


@pytest.fixture(scope="module")
def adult_data(request):
    """The Adult folder, or None when absent (then the Adult figures must be skipped)."""
    try:
        return request.getfixturevalue("adult_dir")
    except pytest.skip.Exception:
        return None


def test_smoke_every_figure(tmp_path, adult_data):
    from pmlkit.experiments.report import reproduce

    for name in FIGURES:
        res = reproduce([name], tmp_path / name, iterations=SMOKE_ITER.get(name, 2), rng=1,
                        data=adult_data)[0]
        if res.skipped:
            # only missing Adult data may skip a figure
            assert name not in available_figures() or adult_data is None, \
                res.skipped
            continue
        assert res.error is None, res.error
        out = tmp_path / name
        assert (out / f"{name}.png").stat().st_size > 1000
        df = pd.read_csv(out / f"{name}.csv")
        assert len(df) == res.rows > 0
        assert res.checks
        if name in DETERMINISTIC:
            assert all(c.holds for c in res.checks), [c for c in res.checks if not c.holds]
        html = (out / "report.html").read_text()
        assert name in html and "PASS" in html


@pytest.mark.parametrize("name,iterations", [("laplace_adult", None),
                                             ("laplace_delta", None),
                                             ("design_gain", 4)])
def test_adult_figures_confirm_the_paper(adult_dir, name, iterations):
    """The Monte-Carlo claims hold at the figures' default iteration counts (design_gain's
    checks compare designs at the estimate and need few draws)."""
    fig = get_figure(name)
    df = fig.compute(iterations=iterations, rng=0, data=adult_dir)
    checks = fig.check(df)
    assert checks and all(c.holds for c in checks), [c for c in checks if not c.holds]
    if name == "laplace_adult":
        assert list(df.columns[:7]) == ["feature", "m", "eps", "method", "mi_mean", "mi_std",
                                        "b"]
        assert set(df["method"]) == {"pml", "ldp"} and set(df["feature"]) == {"income", "sex"}
    if name == "laplace_delta":
        assert list(df.columns[:5]) == ["feature", "m", "delta", "mi_mean", "mi_std"]
        assert 0.0 in set(df["delta"])


def test_adult_figures_are_skipped_with_a_message_when_data_is_missing(tmp_path):
    from pmlkit.experiments.report import reproduce

    res = reproduce(["laplace_adult", "deltamin"], tmp_path, iterations=5,
                    data=tmp_path / "no-such-folder")
    assert res[0].skipped and "Adult" in res[0].skipped and "--data" in res[0].skipped
    assert res[1].skipped is None and (tmp_path / "deltamin.png").exists()
    html = (tmp_path / "report.html").read_text()
    assert "Skipped" in html and "laplace_adult" in html


def test_cli_reproduce(tmp_path, capsys):
    from pmlkit.cli.main import main

    rc = main(["reproduce", "--figure", "deltamin", "--figure", "gauss_skewed",
               "--output", str(tmp_path), "--iterations", "8", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in out["figures"]] == ["deltamin", "gauss_skewed"]
    assert all(c["holds"] for f in out["figures"] for c in f["checks"])
    for f in ("deltamin.png", "deltamin.csv", "gauss_skewed.csv", "report.html"):
        assert (tmp_path / f).exists()
    assert main(["reproduce", "--output", str(tmp_path)]) == 2            # neither flag
    assert main(["reproduce", "--figure", "nope", "--output", str(tmp_path)]) == 2
    assert main(["reproduce", "--all", "--iterations", "0", "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--figure NAME" in err and "nope" in err


def test_adult_codes_refuse_missing_values_and_code_categories(adult_dir):
    from pmlkit.errors import DataError
    from pmlkit.experiments.base import adult_codes

    raw = pd.read_csv(adult_dir / "adult.data", header=None, skipinitialspace=True)
    codes, cats = adult_codes(adult_dir, ["sex"])["sex"]
    assert cats == ["Female", "Male"]
    assert codes.size == len(raw) and int(codes.sum()) == int((raw[9] == "Male").sum())
    with pytest.raises(DataError, match="workclass"):
        adult_codes(adult_dir, ["workclass"])           # has '?' entries
    with pytest.raises(DataError, match="no column"):
        adult_codes(adult_dir, ["nope"])
