"""Post-processing-robust levels for any alphabet (pmlkit.envelope.envelope_bound) and the
Gaussian release's reports, against independent computations: a generic LP (scipy linprog)
for the knapsack and its inverse, an exhaustive search over set partitions and the exact
LP envelope (leakage_envelope) for small channels, the released grid channel rebuilt here
from its definition, and numerical integration for the continuous Gaussian."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import pmlkit as pk
from pmlkit.additive import GaussianMechanism, calibrate_gaussian, gaussian_grid
from pmlkit.additive.grid import gaussian_grid_channel
from pmlkit.envelope import (
    envelope_bound,
    envelope_bounds,
    knapsack_level,
    knapsack_mass,
    leakage_envelope,
    tail_probability,
    worst_tail_probability,
)
from pmlkit.errors import ValidationError
from pmlkit.sets import Box, L1Ball
from test_envelope import brute_merges

K = np.array([[.003, .18, .809, .008], [.127, .014, .842, .017]])


def lp_knapsack(caps: np.ndarray, ratio: np.ndarray, t: float) -> float:
    """max sum s, 0 <= s <= caps, sum s (ratio - e^t) >= 0, by a generic LP."""
    res = linprog(-np.ones(caps.size), A_ub=[-(ratio - math.exp(t))], b_ub=[0.0],
                  bounds=list(zip(np.zeros(caps.size), caps, strict=True)), method="highs")
    assert res.status == 0
    return float(-res.fun)


def lp_level(caps: np.ndarray, ratio: np.ndarray, delta: float) -> float:
    """Smallest t >= 0 with lp_knapsack(t) <= delta, by bisection on the LP."""
    lo, hi = 0.0, math.log(float(ratio.max())) + 1.0
    if lp_knapsack(caps, ratio, 0.0) <= delta:
        return 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if lp_knapsack(caps, ratio, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 8), delta=st.floats(0.01, 0.99))
def test_knapsack_and_its_inverse_match_a_generic_lp(seed: int, m: int, delta: float) -> None:
    rng = np.random.default_rng(seed)
    caps = rng.dirichlet(np.ones(m))
    ratio = rng.uniform(0.05, 4.0, size=m)
    for t in (0.0, 0.3, 1.0):
        assert knapsack_mass(caps, ratio, t) == pytest.approx(lp_knapsack(caps, ratio, t),
                                                               abs=1e-9)
        assert knapsack_mass(caps, ratio, t) >= lp_knapsack(caps, ratio, t) - 1e-12
    level = knapsack_level(caps, ratio, delta)
    assert level == pytest.approx(lp_level(caps, ratio, delta), abs=1e-7)
    # the level holds just above itself
    assert lp_knapsack(caps, ratio, level + 1e-9) <= delta + 1e-9


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(2, 3), m=st.integers(2, 6),
       delta=st.floats(0.02, 0.9))
def test_bound_never_below_the_exact_envelope(seed: int, n: int, m: int,
                                             delta: float) -> None:
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(m, 0.6), size=n)
    p = rng.dirichlet(np.ones(n))
    b = envelope_bound(w, p, delta)
    exact = leakage_envelope(w, p, delta)
    assert b.eps >= exact.eps - 1e-7  # LP over every post-processing (HiGHS tolerance)
    # and directly: just above the bound (by more than the LP's feasibility tolerance
    # moves a tie), no post-processing exceeds delta (one LP)
    assert worst_tail_probability(w, p, b.eps + 1e-6) <= delta + 1e-9
    assert b.eps >= brute_merges(w, p, delta) - 1e-9  # exhaustive partitions
    ml = math.log(w.max(axis=0).sum()) + math.log(1 / delta)
    assert b.eps <= ml + 1e-9 and b.ml_bound == pytest.approx(ml, abs=1e-9)
    assert b.eps <= pk.eps_min(w, p) + 1e-9        # never above the pure value


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(2, 6), radius=st.floats(0.0, 0.5),
       delta=st.floats(0.05, 0.8))
def test_bound_over_a_set_covers_every_prior(seed: int, m: int, radius: float,
                                             delta: float) -> None:
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(m, 0.6), size=3)
    ball = L1Ball(rng.dirichlet(np.full(3, 3.0)), radius)
    b = envelope_bound(w, ball, delta)
    for q in ball.sample(3, rng=rng):
        q = q / q.sum()
        assert leakage_envelope(w, q, delta).eps <= b.eps + 1e-7


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(2, 6), eps=st.floats(0.0, 1.5),
       delta=st.floats(0.01, 0.9))
def test_survives_flag_is_sound(seed: int, m: int, eps: float, delta: float) -> None:
    """True: no post-processing (LP over all of them) breaks the statement."""
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(m, 0.6), size=2)
    p = rng.dirichlet(np.ones(2))
    b = envelope_bound(w, p, delta, eps=eps)
    if b.survives_post_processing:
        assert worst_tail_probability(w, p, eps) <= delta + 1e-9
        assert tail_probability(w, p, eps) <= delta + 1e-12


def test_counterexample_statement_does_not_survive() -> None:
    p = np.array([0.5, 0.5])
    d = tail_probability(K, p, 0.0758)
    b = envelope_bound(K, p, d, eps=0.0758)
    assert not b.survives_post_processing
    assert worst_tail_probability(K, p, 0.0758) > d + 0.1   # truly broken (merge: 1.0)
    assert [x.eps for x in envelope_bounds(K, p, [0.2, 0.5])] == [
        envelope_bound(K, p, 0.2).eps, envelope_bound(K, p, 0.5).eps]


def grid_channel_by_definition(sigma: float, g: float) -> np.ndarray:
    """The released grid mechanism, from its definition: P(i | x) proportional to
    exp(-(i g - x)^2 / (2 s^2)) with s the released sigma, on a wide index range, the
    normaliser summed with math.fsum."""
    grid = gaussian_grid(sigma, g)
    s = grid.scale
    big = round(1 / g) + int(40 * s / g)
    idx = np.arange(-big, big + 1)
    rows = []
    for x in (-1.0, 1.0):
        e = np.exp(-((idx * g - x) ** 2) / (2 * s * s))
        rows.append(e / math.fsum(e.tolist()))
    return np.array(rows)


def test_grid_channel_matches_its_definition() -> None:
    vals, w = gaussian_grid_channel(gaussian_grid(1.0, 0.5))
    ref = grid_channel_by_definition(1.0, 0.5)
    off = (ref.shape[1] - w.shape[1]) // 2
    assert np.allclose(w, ref[:, off:off + w.shape[1]], rtol=1e-12, atol=1e-300)
    assert ref[:, :off].sum() < 1e-250 and ref[:, off + w.shape[1]:].sum() < 1e-250
    assert vals[0] == -(ref.shape[1] // 2 - off) * 0.5


@pytest.mark.parametrize("q", [0.5, 0.3])
def test_gaussian_release_envelope_against_the_exact_lp(q: float) -> None:
    """One prior, the small grid of step 1/2: the mechanism's level is never below the
    exact LP envelope of the channel rebuilt here, and its "does not survive" verdict is
    a real violation (some post-processing puts more than output_delta above eps)."""
    prior = [1 - q, q]
    m = GaussianMechanism.from_scale(1.0, eps=0.3, over=prior, granularity=0.5)
    env = m.envelope()
    w = grid_channel_by_definition(1.0, 0.5)
    d = m.guarantee.output_delta
    assert tail_probability(w, prior, 0.3) == pytest.approx(d, abs=1e-12)
    exact = leakage_envelope(w, prior, d).eps
    assert exact - 1e-7 <= env.eps <= exact + 0.05   # a bound, and a close one here
    assert env.survives_post_processing is False
    assert worst_tail_probability(w, prior, 0.3) > d + 1e-3
    # above the pure worst case the statement is pure and survives
    pure = GaussianMechanism.from_scale(1.0, eps=1.3, over=prior, granularity=0.5)
    assert pure.guarantee.output_delta == 0.0
    assert pure.envelope().survives_post_processing is True


def test_gaussian_release_envelope_over_an_interval() -> None:
    box = Box([0.5, 0.3], [0.7, 0.5])
    m = GaussianMechanism.from_scale(1.0, eps=0.5, over=box, granularity=0.5)
    env = m.envelope()
    w = grid_channel_by_definition(1.0, 0.5)
    for q in (0.3, 0.4, 0.5):
        exact = leakage_envelope(w, [1 - q, q], m.guarantee.output_delta).eps
        assert exact <= env.eps + 1e-7
    assert "envelope=" in repr(m) and "survives_post_processing=False" in repr(m)


def test_calibration_carries_the_envelope_and_continuous_ml_by_quadrature() -> None:
    from scipy.integrate import quad
    from scipy.stats import norm

    cal = calibrate_gaussian(["F"] * 30 + ["M"] * 70, 1.0, 1e-3, positive="M",
                             eps=[0.2, 0.6, 3.0], granularity=0.5)
    assert cal.envelope_eps.shape == cal.eps.shape
    lo, hi = cal.q_interval
    box = Box([1 - hi, lo], [1 - lo, hi])
    w = grid_channel_by_definition(1.0, 0.5)
    for k in range(cal.eps.size):
        d1 = float(cal.delta1[k])
        if d1 == 0.0:
            assert cal.survives_post_processing[k]
            continue
        for q in (lo, 0.5 * (lo + hi), hi):
            exact = leakage_envelope(w, [1 - q, q], d1).eps
            assert exact <= cal.envelope_eps[k] + 1e-7
        assert envelope_bound(w, box, d1).eps == pytest.approx(cal.envelope_eps[k],
                                                               rel=1e-9)
        # continuous mechanism: log int max_x f(y|x) dy + log(1/delta1), by quadrature
        ml = quad(lambda y: max(norm.pdf(y, 1, 1), norm.pdf(y, -1, 1)), -40, 40,
                  points=[0.0], epsabs=1e-13)[0]
        assert cal.continuous_envelope_ml[k] == pytest.approx(
            math.log(ml) + math.log(1 / d1), abs=1e-9)
    rows = [r for r in cal.curves() if r["curve"] == "direct"]
    assert [r["envelope_eps"] for r in rows] == pytest.approx(cal.envelope_eps.tolist())
    json.dumps(cal.to_dict())


def test_cli_shows_the_envelope(tmp_path) -> None:
    from click.testing import CliRunner

    from pmlkit.cli.main import cli

    ref = tmp_path / "ref.csv"
    ref.write_text("sex\n" + "Male\n" * 70 + "Female\n" * 30)
    args = ["calibrate", "gaussian", "--reference", str(ref), "--column", "sex",
            "--positive", "Male", "--sigma", "2", "--delta", "1e-6", "--eps-max", "1.0",
            "--points", "2"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "envelope" in res.output and "survives" in res.output
    assert "does NOT survive post-processing" in res.output
    doc = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    direct = [r for r in doc["curves"] if r["curve"] == "direct"]
    assert all(isinstance(r["envelope_eps"], float) for r in direct)
    assert all(r["survives_post_processing"] is False for r in direct)
    assert doc["post_processing"]["mechanism_envelope"]["survives_post_processing"] is False


def test_errors() -> None:
    with pytest.raises(ValidationError, match="delta"):
        envelope_bound(K, [0.5, 0.5], 1.5)
    with pytest.raises(ValidationError, match="eps"):
        envelope_bounds(K, [0.5, 0.5], [0.1, 0.2], eps=[0.1])
    with pytest.raises(ValidationError, match="caps"):
        knapsack_level([0.1, -0.1], [1.0, 2.0], 0.1)


@pytest.mark.parametrize("tail_eps", [0.6, 0.9])
def test_numeric_gaussian_records_a_robust_tail_and_its_envelope(tail_eps: float) -> None:
    """The rounded, clamped Gaussian on 5 grid points: its recorded tail statement holds
    for every post-processing (exact LP) and every merge (exhaustive partitions), and its
    envelope is never below the exhaustive and LP values at the prior."""
    from pmlkit.numeric.design import gaussian_mechanism
    from pmlkit.numeric.grid import NumericGrid

    prior = np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    m = gaussian_mechanism(NumericGrid(0, 4, 1), 1.5, prior, tail_eps=tail_eps)
    d = m.provenance.details
    w = m.matrix
    assert 0 < d["tail_delta"] < 1
    assert d["plain_tail_delta_at_prior"] < d["tail_delta"]   # the plain tail is smaller
    assert d["tail_survives_post_processing"] is True
    assert worst_tail_probability(w, prior, tail_eps) <= d["tail_delta"] + 1e-9
    assert tail_probability(w, prior, tail_eps) == pytest.approx(
        d["plain_tail_delta_at_prior"], abs=1e-12)
    assert brute_merges(w, prior, d["tail_delta"]) <= d["tail_envelope"] + 1e-9
    assert leakage_envelope(w, prior, d["tail_delta"]).eps <= d["tail_envelope"] + 1e-7
    assert d["tail_envelope"] <= tail_eps + 1e-9


def test_guarantee_text_says_the_tail_is_not_robust() -> None:
    m = GaussianMechanism.from_scale(1.0, eps=0.3, over=[0.5, 0.5], granularity=0.5)
    assert "not certified to survive post-processing" in str(m.guarantee)
    pure = GaussianMechanism.from_scale(1.0, eps=1.3, over=[0.5, 0.5], granularity=0.5)
    assert "post-processing" not in str(pure.guarantee)   # output delta 0: pure
