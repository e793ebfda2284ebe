"""The released Laplace / Gaussian outputs: an attack on the float bits, the exact laws of
the grid samplers, and the guarantee of the released grid against independent oracles.

Oracles: the last-mantissa-bit attack and reachable sets (bit arithmetic on the doubles),
mpmath sums and Jacobi theta for the normalisers and tails, scipy.integrate.quad for the
grid-cell integrals, chi-square tests of the samplers, brute-force enumeration of every grid
point with probabilities computed directly (no thresholds, no tail tables) and a dense
search over the prior interval.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import pmlkit
from pmlkit.additive import (
    calibrate_gaussian,
    calibrate_laplace,
    gaussian_delta1_interval,
    gaussian_grid,
    gaussian_grid_delta1_interval,
    gaussian_grid_pml,
    gaussian_grid_violation_probability,
    gaussian_noise,
    gaussian_violation_probability,
    laplace_eps,
    laplace_grid,
    laplace_grid_eps,
    laplace_grid_pml,
    laplace_noise,
)
from pmlkit.additive.grid import (
    _bernoulli_exp,
    _bernoulli_exp_frac,
    _discrete_gaussian,
    _discrete_laplace,
    _GaussTails,
)
from pmlkit.additive.sampling import unsafe_float_gaussian_noise, unsafe_float_laplace_noise
from pmlkit.errors import ValidationError

# These tests keep the pre-0.2 spellings (positional beta/eps, p_hat=, method=) on
# purpose, so the old calls stay covered; tests/test_additive_mechanisms.py checks the
# deprecation warnings themselves.
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated since 0.2:DeprecationWarning")

B_ATTACK = 2.0 / math.log(2.0)   # the Laplace scale (eps = log 2 LDP)
DRAWS = 200_000


def _last_bit_says_plus_one(y: np.ndarray) -> np.ndarray:
    """The attack: an output in [1, 2) whose 2^-52 bit is set cannot come from -1 + L.

    ``-1 + L`` for ``L`` in ``[2, 3)`` is computed from a double of ``[2, 4)``, a multiple
    of ``2^-51``, and subtracting 1 is exact; ``1 + L`` is rounded to the ``2^-52`` grid of
    ``[1, 2)`` and so can end in an odd multiple of ``2^-52``.
    """
    inside = (y >= 1.0) & (y < 2.0)
    units = np.ldexp(np.where(inside, y, 1.0), 52).astype(np.int64)
    return inside & (units % 2 == 1)


# --------------------------------------------------------------------------- the attack

@pytest.mark.parametrize("unsafe, scale, rate", [(unsafe_float_laplace_noise, B_ATTACK, 0.050),
                                                 (unsafe_float_gaussian_noise, 2.0, 0.064)])
def test_low_bit_attack_succeeds_against_the_unsafe_float_release(unsafe, scale, rate):
    y_minus = unsafe(-np.ones(DRAWS, dtype=int), scale, rng=1)
    y_plus = unsafe(np.ones(DRAWS, dtype=int), scale, rng=2)
    # the attack never accuses -1 wrongly, and identifies +1 in "about 5% of releases for
    # Laplace noise at b = 2/log 2, 6% for Gaussian noise at sigma = 2" (additive_release.md;
    # 5.00% and 6.44% over 10^6 draws; the standard error at 200,000 draws is 0.0006)
    assert not _last_bit_says_plus_one(y_minus).any()
    assert abs(_last_bit_says_plus_one(y_plus).mean() - rate) < 0.003
    # no value produced from one input was produced from the other
    assert np.intersect1d(y_minus, y_plus).size == 0


@pytest.mark.parametrize("release, scale", [(laplace_noise, B_ATTACK), (gaussian_noise, 2.0)])
def test_low_bit_attack_finds_nothing_against_the_grid_release(release, scale):
    y_minus = release(-np.ones(DRAWS, dtype=int), scale, rng=1)
    y_plus = release(np.ones(DRAWS, dtype=int), scale, rng=2)
    assert not _last_bit_says_plus_one(y_minus).any()
    assert not _last_bit_says_plus_one(y_plus).any()
    grid = laplace_grid(scale) if release is laplace_noise else gaussian_grid(scale)
    # every released double is an exact multiple of g = 2^-j: one lattice for both inputs
    for y in (y_minus, y_plus):
        idx = np.ldexp(y, grid.exponent)
        assert (idx == np.round(idx)).all() and (np.abs(idx) < 2.0**53).all()
    # the low bits of the index carry nothing: same law of (index mod 256) for both inputs
    lows = [np.mod(np.ldexp(y, grid.exponent).astype(np.int64), 256) for y in (y_minus, y_plus)]
    table = np.stack([np.bincount(v, minlength=256) for v in lows])
    assert stats.chi2_contingency(table).pvalue > 1e-3
    # values seen from both inputs occur (the unsafe release never shares one) ...
    assert np.intersect1d(y_minus, y_plus).size > 100


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_every_released_value_is_reachable_from_both_inputs(kind):
    """For each released value, both P(y | -1) and P(y | +1) are > 0 (exact cell laws), and
    the stated guarantee bounds its leakage: no value is possible under one input only."""
    scale = 0.7
    release = laplace_noise if kind == "laplace" else gaussian_noise
    x = np.array([-1, 1] * 20_000)
    y = release(x, scale, rng=3)
    grid = laplace_grid(scale) if kind == "laplace" else gaussian_grid(scale)
    i = np.ldexp(y, grid.exponent)
    big_n = 2.0**grid.exponent
    n = float(grid.units)
    for sign in (-1.0, 1.0):
        k = i - sign * big_n
        logp = -np.abs(k) / n if kind == "laplace" else -(k * k) / (2 * n * n)
        assert np.isfinite(logp).all() and (logp > -800).all()
    pml = (laplace_grid_pml if kind == "laplace" else gaussian_grid_pml)(y, scale, (0.3, 0.7))
    assert np.isfinite(pml).all() and (pml <= -math.log(0.3) + 1e-12).all()


def test_unsafe_release_is_not_exported_from_pmlkit():
    assert not hasattr(pmlkit, "unsafe_float_laplace_noise")
    assert not hasattr(pmlkit, "unsafe_float_gaussian_noise")
    assert "unsafe_float_laplace_noise" not in dir(pmlkit)
    assert "unsafe" not in " ".join(pmlkit.additive.__all__)
    assert "UNSAFE" in (unsafe_float_laplace_noise.__doc__ or "")


# --------------------------------------------------------------------------- exact laws

def _laplace_pmf(n: int, k: np.ndarray) -> np.ndarray:
    return math.tanh(1.0 / (2 * n)) * np.exp(-np.abs(k) / n)


@pytest.mark.parametrize("n", [1, 3, 17])
def test_discrete_laplace_cell_law_against_mpmath_and_quad(n):
    # normaliser: an mpmath sum, independent of the closed form tanh(1/(2n))
    z = mpmath.nsum(lambda k: mpmath.exp(-abs(k) / mpmath.mpf(n)), [-mpmath.inf, mpmath.inf])
    assert float(1 / z) == pytest.approx(math.tanh(1 / (2 * n)), rel=1e-13)
    # the discrete Laplace is the continuous Laplace of rate 1/n conditioned on the integers;
    # tail ratio P(K >= k+1)/P(K >= k) = e^{-1/n}, checked by quadrature of the density
    # over unit cells [k, k+1) (the geometric structure of the cells)
    cells = [integrate.quad(lambda t: math.exp(-t / n), k, k + 1)[0] for k in range(5)]
    for a, b in itertools.pairwise(cells):
        assert b / a == pytest.approx(math.exp(-1 / n), rel=1e-12)


@pytest.mark.parametrize("n", [1, 4, 30])
def test_discrete_gaussian_tails_against_jacobi_theta(n):
    q = mpmath.exp(-1 / (2 * mpmath.mpf(n) ** 2))
    z = mpmath.jtheta(3, 0, q)  # sum_k q^{k^2}
    tails = _GaussTails(n)
    for c in [-3 * n, -1, 0, 1, n, 3 * n, 9 * n]:
        # terms past 60 n are below e^{-1800}
        ref = mpmath.fsum(q ** (k * k) for k in range(c, 60 * n + 1)) / z
        assert tails(np.array([c]))[0] == pytest.approx(float(ref), rel=1e-11, abs=1e-300)


def _chi2_pvalue(sample: np.ndarray, pmf: np.ndarray, support: np.ndarray) -> float:
    counts = np.array([(sample == k).sum() for k in support], dtype=float)
    rest = sample.size - counts.sum()
    expected = np.append(pmf * sample.size, sample.size * (1.0 - pmf.sum()))
    observed = np.append(counts, rest)
    keep = expected > 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


@pytest.mark.parametrize("n", [1, 3, 10])
def test_discrete_laplace_sampler_chi_square(n):
    gen = np.random.default_rng(100 + n)
    sample = _discrete_laplace(gen, n, 100_000)
    support = np.arange(-8 * n, 8 * n + 1)
    assert _chi2_pvalue(sample, _laplace_pmf(n, support), support) > 1e-3


@pytest.mark.parametrize("n", [1, 2, 7])
def test_discrete_gaussian_sampler_chi_square(n):
    gen = np.random.default_rng(200 + n)
    sample = _discrete_gaussian(gen, n, 100_000)
    support = np.arange(-8 * n, 8 * n + 1)
    w = np.exp(-np.arange(-60 * n, 60 * n + 1) ** 2 / (2.0 * n * n))
    pmf = np.exp(-support**2 / (2.0 * n * n)) / w.sum()
    assert _chi2_pvalue(sample, pmf, support) > 1e-3


@pytest.mark.parametrize("num, den", [(0, 5), (1, 3), (2, 2), (7, 10)])
def test_bernoulli_exp_rate(num, den):
    gen = np.random.default_rng(num * 10 + den)
    hits = _bernoulli_exp_frac(gen, np.full(40_000, num, dtype=np.int64), den)
    assert stats.binomtest(int(hits.sum()), hits.size, math.exp(-num / den)).pvalue > 1e-3
    whole = np.full(40_000, 1, dtype=np.int64)
    hits = _bernoulli_exp(gen, whole, np.full(40_000, num % den, dtype=np.int64), den)
    p = math.exp(-(1 + (num % den) / den))
    assert stats.binomtest(int(hits.sum()), hits.size, p).pvalue > 1e-3


def test_public_release_follows_the_discrete_laws():
    """laplace_noise / gaussian_noise at a coarse grid: indices minus x/g follow the laws."""
    x = np.array([-1, 1] * 40_000)
    y = laplace_noise(x, 0.75, granularity=0.25, rng=11)   # n = 3 grid steps, N = 4
    k = (np.ldexp(y, 2) - 4 * x).astype(np.int64)
    support = np.arange(-24, 25)
    assert _chi2_pvalue(k, _laplace_pmf(3, support), support) > 1e-3
    y = gaussian_noise(x, 1.2, granularity=0.25, rng=12)   # n = ceil(4.8) = 5
    k = (np.ldexp(y, 2) - 4 * x).astype(np.int64)
    w = np.exp(-np.arange(-300, 301) ** 2 / 50.0)
    support = np.arange(-40, 41)
    assert _chi2_pvalue(k, np.exp(-support**2 / 50.0) / w.sum(), support) > 1e-3


def test_grid_choice_and_refusals():
    g = laplace_grid(3.0)
    assert g.granularity == 2.0**-19 and g.units == 3 * 2**19 and g.scale == 3.0
    g = laplace_grid(0.1)
    assert g.granularity <= 0.1 * 2**-20 < 2 * g.granularity and g.scale >= 0.1
    assert g.scale - 0.1 < g.granularity
    assert gaussian_grid(1.5).granularity == 2.0**-10 and gaussian_grid(1.5).units == 1536
    assert laplace_grid(1e9).granularity == 1.0  # clipped: the grid must hold +-1
    for bad in (0.3, 2.0, 2.0**-31, -0.25, math.nan):
        with pytest.raises(ValidationError, match="granularity"):
            laplace_noise([1, -1], 1.0, granularity=bad, rng=0)
    with pytest.raises(ValidationError, match="sigma"):
        gaussian_noise([1, -1], 1e5, rng=0)
    with pytest.raises(ValidationError, match="sigma"):
        gaussian_noise([1, -1], 1.0, granularity=2.0**-20, rng=0)
    with pytest.raises(ValidationError, match="y must be released values"):
        laplace_grid_pml(0.1, 1.0, (0.5, 0.5), granularity=0.25)


# --------------------------------------------------------------------------- the guarantee

def _brute_laplace_pml(i: np.ndarray, n: int, big_n: int, q: float) -> np.ndarray:
    """pml from the cell probabilities written out with mpmath (50 digits)."""
    mpmath.mp.dps = 50
    t = mpmath.tanh(mpmath.mpf(1) / (2 * n))
    out = []
    for v in i:
        p_plus = t * mpmath.exp(-abs(int(v) - big_n) / mpmath.mpf(n))
        p_minus = t * mpmath.exp(-abs(int(v) + big_n) / mpmath.mpf(n))
        out.append(float(mpmath.log(max(p_plus, p_minus) / (q * p_plus + (1 - q) * p_minus))))
    mpmath.mp.dps = 15
    return np.array(out)


@pytest.mark.parametrize("b, g", [(0.8, 0.25), (2.885, 0.5), (0.3, 0.125)])
def test_laplace_grid_pml_and_eps_against_brute_force(b, g):
    grid = laplace_grid(b, g)
    big_n = 2**grid.exponent
    i = np.arange(-3 * big_n - 5, 3 * big_n + 6)
    for q in (0.2, 0.5, 0.9):
        brute = _brute_laplace_pml(i, grid.units, big_n, q)
        got = laplace_grid_pml(i * g, b, (1 - q, q), granularity=g)
        np.testing.assert_allclose(got, brute, rtol=1e-12, atol=1e-14)
        p_min = min(q, 1 - q)
        assert laplace_grid_eps(b, p_min, g) == pytest.approx(brute.max(), rel=1e-12)
        # equals Prop. Laplaceleakage at the released scale, never more than at b
        assert brute.max() == pytest.approx(laplace_eps(grid.scale, p_min), rel=1e-12)
        assert laplace_grid_eps(b, p_min, g) <= laplace_eps(b, p_min) + 1e-15


def _brute_gauss(n: int, big_n: int, q: np.ndarray, eps: float,
                 slack: float = 0.0) -> np.ndarray:
    """P_Y[pml > eps] by enumerating every grid point, probabilities straight from exp().

    ``slack > 0`` counts every point with ``pml > eps - slack`` (the points tied with eps
    within the slack, which pmlkit counts against the guarantee)."""
    span = big_n + 40 * n
    i = np.arange(-span, span + 1)
    w = np.exp(-np.arange(-60 * n, 60 * n + 1) ** 2 / (2.0 * n * n)).sum()
    p_plus = np.exp(-((i - big_n) ** 2) / (2.0 * n * n)) / w
    p_minus = np.exp(-((i + big_n) ** 2) / (2.0 * n * n)) / w
    qq = q[:, None]
    mix = qq * p_plus + (1 - qq) * p_minus
    # pml = log(max / mix) = -log1p(w (r - 1)), r = min / max and w the prior weight of
    # the smaller likelihood: accurate to a few ulps of pml itself (log(max / mix) is off
    # by ~1e-16 absolute, which at eps ~ 1e-9 counts points whose pml is q (1 - r) < eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.minimum(p_plus, p_minus) / np.maximum(p_plus, p_minus)
        pml = -np.log1p(np.where(p_plus >= p_minus, 1 - qq, qq) * (r - 1.0))
    # y = 0 has P(0 | +1) = P(0 | -1) exactly, so pml = 0
    pml = np.where(i == 0, 0.0, pml)
    return np.where(pml > eps - slack, mix, 0.0).sum(axis=1)


@pytest.mark.parametrize("sigma, g", [(1.5, 0.25), (2.0, 0.5), (0.6, 0.125)])
def test_gaussian_grid_violation_and_pml_against_brute_force(sigma, g):
    grid = gaussian_grid(sigma, g)
    big_n = 2**grid.exponent
    qs = np.array([0.0, 0.1, 0.35, 0.5, 0.8, 1.0])
    for eps in (0.05, 0.3, 0.9, 2.0):
        # between the strict set and the set with ties (within 1e-9): at q in {0, 1} and
        # eps = 2 the point i = 9 has pml = 9 * 8/36 = 2 = eps exactly, counted as a tie
        strict = _brute_gauss(grid.units, big_n, qs, eps)
        ties = _brute_gauss(grid.units, big_n, qs, eps, slack=1e-9)
        got = np.array([gaussian_grid_violation_probability(sigma, (1 - q, q), eps, g)
                        for q in qs])
        assert (got >= strict * (1 - 1e-9) - 1e-15).all()
        assert (got <= ties * (1 + 1e-9) + 1e-15).all()
    i = np.arange(-3 * big_n, 3 * big_n + 1)
    n = grid.units
    p_plus = np.exp(-((i - big_n) ** 2) / (2.0 * n * n))
    p_minus = np.exp(-((i + big_n) ** 2) / (2.0 * n * n))
    brute_pml = np.log(np.maximum(p_plus, p_minus) / (0.3 * p_plus + 0.7 * p_minus))
    np.testing.assert_allclose(gaussian_grid_pml(i * g, sigma, (0.7, 0.3), g), brute_pml,
                               rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("sigma, g, lo, hi", [(1.5, 0.25, 0.3, 0.7), (2.0, 0.5, 0.0, 1.0),
                                              (0.6, 0.125, 0.05, 0.4), (1.0, 0.25, 0.5, 0.5)])
def test_gaussian_grid_delta1_against_dense_search(sigma, g, lo, hi):
    qs = np.linspace(lo, hi, 4001)
    step = (hi - lo) / 4000
    for eps in (0.1, 0.4, 1.0, 1.7):
        got = gaussian_grid_delta1_interval(sigma, lo, hi, eps, granularity=g)
        units = gaussian_grid(sigma, g).units
        brute = _brute_gauss(units, round(1 / g), qs, eps).max()
        # with the points tied with eps (q in {0, 1}, eps = 1, sigma = 2, g = 1/2: the
        # point i = 4 has pml = 4 * 4/16 = 1 = eps exactly), counted against the guarantee
        ties = _brute_gauss(units, round(1 / g), qs, eps, slack=1e-9).max()
        # never below any feasible prior's value; above it by at most the slope (<= 2) of
        # the piecewise-linear violation probability times the search step
        assert got >= brute - 1e-12
        assert got <= ties + 2 * step + 1e-12


def test_gaussian_delta_is_recomputed_not_inherited():
    """Rounding to the grid can raise the tail probability above the continuous one, so
    the continuous delta would under-state what is released."""
    sigma, g = 2.0, 0.5
    qs = np.array([0.5])
    worse = 0
    for eps in np.linspace(0.05, 1.5, 30):
        grid_val = _brute_gauss(gaussian_grid(sigma, g).units, 2, qs, eps)[0]
        cont = gaussian_violation_probability(sigma, (0.5, 0.5), eps)
        worse += grid_val > cont + 1e-6
        assert gaussian_grid_violation_probability(sigma, (0.5, 0.5), eps, g) >= grid_val - 1e-12
    assert worse > 0
    # at the default grid, calibrate_gaussian states the grid's delta_1, which is above
    # the continuous one somewhere (so inheriting it would have been wrong)
    samples = ["a"] * 500 + ["b"] * 500
    res = calibrate_gaussian(samples, 2.0, 1e-6, positive="a", eps=[0.1, 0.3, 0.6, 1.0])
    lo, hi = res.q_interval
    brute = _brute_gauss(gaussian_grid(2.0).units, 2**gaussian_grid(2.0).exponent,
                         np.linspace(lo, hi, 41), 0.3).max()
    assert res.delta1[1] >= brute - 1e-12
    assert (res.delta1 > res.continuous_delta1).any()


@settings(max_examples=25, deadline=None)
@given(n_pos=st.integers(1, 400), n_neg=st.integers(1, 400),
       eps=st.floats(0.05, 3.0), delta=st.floats(1e-9, 0.5))
def test_calibrate_laplace_states_the_grid_guarantee(n_pos, n_neg, eps, delta):
    cal = calibrate_laplace(["p"] * n_pos + ["n"] * n_neg, eps, delta, positive="p")
    if cal.b == 0.0 or cal.released_b is None:
        return
    assert cal.released_b >= cal.b
    assert cal.released_b - cal.b < cal.granularity
    assert cal.grid_eps <= eps + 1e-12
    # the grid eps is the brute-force maximum of the grid PML at the set's worst prior
    big_n = round(1 / cal.granularity)
    pts = np.array([-big_n - 1, -big_n, -big_n + 1, big_n - 1, big_n, big_n + 1], float)
    p = cal.p_min_lower
    vals = laplace_grid_pml(pts * cal.granularity, cal.b, (p, 1 - p), cal.granularity)
    assert cal.grid_eps == pytest.approx(float(np.max(vals)), rel=1e-12, abs=1e-15)


def test_continuous_and_grid_delta1_agree_to_a_cell_at_the_default_grid():
    eps = np.linspace(0.1, 2.5, 8)
    got = gaussian_grid_delta1_interval(1.5, 0.2, 0.6, eps)
    cont = gaussian_delta1_interval(1.5, 0.2, 0.6, eps)
    np.testing.assert_allclose(got, cont, atol=2e-3)


def test_cli_calibrate_states_the_released_grid(tmp_path):
    import json

    from click.testing import CliRunner

    from pmlkit.cli.main import cli

    path = tmp_path / "ref.csv"
    path.write_text("sex\n" + "Male\n" * 700 + "Female\n" * 300)
    base = ["calibrate", "laplace", "--reference", str(path), "--column", "sex",
            "--positive", "Male", "--epsilon", "1.0", "--delta", "1e-6"]
    out = CliRunner().invoke(cli, base, catch_exceptions=False)
    assert out.exit_code == 0 and "released: values on the grid of step" in out.output
    doc = json.loads(CliRunner().invoke(cli, [*base, "--json"]).output)
    assert doc["released_b"] >= doc["b"] and doc["grid_eps"] <= 1.0
    assert doc["released_b"] == laplace_grid(doc["b"]).scale
    gauss = ["calibrate", "gaussian", "--reference", str(path), "--column", "sex",
             "--positive", "Male", "--sigma", "1.5", "--delta", "1e-6", "--points", "3"]
    out = CliRunner().invoke(cli, gauss, catch_exceptions=False)
    assert out.exit_code == 0 and "recomputed for the grid" in out.output
    doc = json.loads(CliRunner().invoke(cli, [*gauss, "--json"]).output)
    assert doc["granularity"] == 2.0**-10 and doc["released_sigma"] == 1.5


@settings(max_examples=30, deadline=None)
@given(lo=st.floats(0.0, 1.0), width=st.floats(0.0, 0.6), t=st.floats(0.0, 1.0),
       eps=st.floats(0.0, 2.5), sigma=st.sampled_from([0.4, 1.0, 1.7]))
def test_grid_delta1_bounds_every_prior_in_the_interval(lo, width, t, eps, sigma):
    """sup over the interval >= the (brute-force) violation probability at any prior in it."""
    hi = min(lo + width, 1.0)
    q = lo + t * (hi - lo)
    g = 0.25
    grid = gaussian_grid(sigma, g)
    d1 = gaussian_grid_delta1_interval(sigma, lo, hi, eps, granularity=g)
    at_q = _brute_gauss(grid.units, 4, np.array([q]), eps)[0]
    assert d1 >= at_q - 1e-12


def test_shapes_and_empty_input():
    assert laplace_noise(np.empty(0, dtype=int), 1.0, rng=0).shape == (0,)
    y = gaussian_noise(np.ones((3, 4), dtype=int), 1.0, rng=0)
    assert y.shape == (3, 4) and y.dtype == np.float64
    g = laplace_grid(1e9)
    assert g.units == 10**9 and g.scale == 1e9
    with pytest.raises(ValidationError, match="grid steps"):
        laplace_noise([1], 2.0**33, rng=0)
