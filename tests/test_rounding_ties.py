"""Safe rounding where a computed leakage meets a threshold (issue 32, case 6 and item 4).

Each test builds exact ties (a threshold equal, to the last bit, to a leakage pmlkit
computes) and compares the reported guarantee with the exact law evaluated in mpmath at
60 digits: at a tie the reported guarantee must never be better than the exact one.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmlkit._validation import LEAKAGE_REL_ERR
from pmlkit.additive import (
    LaplaceMechanism,
    gaussian_delta1_interval,
    gaussian_grid,
    gaussian_grid_delta1_interval,
    gaussian_grid_pml,
    gaussian_grid_violation_probability,
    gaussian_pml,
    gaussian_violation_probability,
    laplace_eps,
    laplace_scale,
)
from pmlkit.design import (
    extremal_mechanism,
    identity_mechanism,
    k_singular,
    optimal_binary,
    optimal_mechanism,
    randomized_response,
)
from pmlkit.sets import Box, L1Ball, VertexSet

mp.mp.dps = 60

#: Float summation error allowed in a reported delta (sums of tabulated tails; relative).
SUM_RTOL = 1e-12


def exact_grid_delta(sigma: float, q: float, eps: float, g: float) -> mp.mpf:
    """``P_Y[pml(Y) > eps]`` of the released Gaussian grid mechanism, in mpmath.

    The law from its definition (independent of pmlkit's tail tables and thresholds):
    ``P(K = k) = e^{-k^2/(2n^2)} / Z``; ``P(i | +1) = P(K = i - N)``,
    ``P(i | -1) = P(K = i + N)``; every grid index whose exact PML exceeds the float eps
    (read exactly) is summed. ``q = P(+1)``, ``P(-1) = 1 - q`` exactly."""
    grid = gaussian_grid(sigma, g)
    n, big_n = grid.units, 1 << grid.exponent
    qq = mp.mpf(q)
    rr = 1 - qq
    span = 45 * n + 2  # e^{-45^2/2} < 1e-439: far below the 60 digits kept
    w = {k: mp.exp(-mp.mpf(k * k) / (2 * n * n)) for k in range(-span, span + 1)}
    z = mp.fsum(w.values())
    e = mp.mpf(eps)
    total = []
    for i in range(-big_n - span, big_n + span + 1):
        pp = w.get(i - big_n, mp.mpf(0)) / z
        pm = w.get(i + big_n, mp.mpf(0)) / z
        py = qq * pp + rr * pm
        if py > 0 and mp.log(max(pp, pm) / py) > e:
            total.append(py)
    return mp.fsum(total)


def exact_grid_pml(sigma: float, q: float, i: int, g: float) -> mp.mpf:
    grid = gaussian_grid(sigma, g)
    n, big_n = grid.units, 1 << grid.exponent
    qq = mp.mpf(q)
    pp = mp.exp(-mp.mpf((i - big_n) ** 2) / (2 * n * n))
    pm = mp.exp(-mp.mpf((i + big_n) ** 2) / (2 * n * n))
    return mp.log(max(pp, pm) / (qq * pp + (1 - qq) * pm))


# sigma, granularity, P(+1) (in [1/2, 1): 1 - q is exact), grid index of the tied output
TIED = [
    (0.75, 0.125, 0.8813451816217547, -3),
    (0.5, 0.25, 0.842433100210659, -8),
    (0.75, 0.5, 0.7195354954358664, -4),
    (0.5, 0.125, 0.7004242373246606, 24),
    (0.5, 0.25, 0.513765492365099, 1),
    (1.5, 0.125, 0.597469728708776, 14),
    (0.75, 0.25, 0.9226251585268639, 9),
    (1.0, 0.5, 0.8045818429324885, -4),
]


@pytest.mark.parametrize(("sigma", "g", "q", "i"), TIED)
def test_case6_tied_grid_output_is_in_the_violation_set(sigma: float, g: float, q: float,
                                                        i: int) -> None:
    """Issue 32, case 6: eps equal to a released output's computed leakage to the last bit.

    On the old code the float comparison ``pml > eps`` dropped the tied output: 6 of these
    8 cases reported a delta below the exact one (0.4075 against 0.4318 in the issue)."""
    prior = [1.0 - q, q]
    eps = float(gaussian_grid_pml(i * g, sigma, prior, g))
    reported = gaussian_grid_violation_probability(sigma, prior, eps, g)
    exact = exact_grid_delta(sigma, q, eps, g)
    assert reported >= float(exact) * (1.0 - SUM_RTOL)
    # the same through the interval function (a one-point interval) and a wider interval
    one = gaussian_grid_delta1_interval(sigma, q, q, eps=eps, granularity=g)
    assert one >= float(exact) * (1.0 - SUM_RTOL)
    wide = gaussian_grid_delta1_interval(sigma, q, min(1.0, q + 0.01), eps=eps,
                                         granularity=g)
    assert wide >= float(exact) * (1.0 - SUM_RTOL)


def test_case6_ties_matter() -> None:
    """The fixture is meaningful: in most tied cases the exact leakage of the tied output is
    above the float eps (the output belongs in the violation set), and the tied output's
    mass is far above the summation tolerance."""
    above = 0
    for sigma, g, q, i in TIED:
        eps = float(gaussian_grid_pml(i * g, sigma, [1.0 - q, q], g))
        above += exact_grid_pml(sigma, q, i, g) > mp.mpf(eps)
    assert above >= 4


@settings(max_examples=25, deadline=None)
@given(sigma=st.sampled_from([0.5, 0.75, 1.0, 1.25]),
       j=st.integers(1, 3),
       q=st.floats(0.5, 0.97),
       step=st.integers(1, 24),
       negative=st.booleans())
def test_grid_delta_at_ties_is_never_below_the_exact_one(sigma: float, j: int, q: float,
                                                         step: int, negative: bool) -> None:
    g = 2.0**-j
    i = -step if negative else step
    prior = [1.0 - q, q]
    eps = float(gaussian_grid_pml(i * g, sigma, prior, g))
    reported = gaussian_grid_violation_probability(sigma, prior, eps, g)
    assert reported >= float(exact_grid_delta(sigma, q, eps, g)) * (1.0 - SUM_RTOL)


def test_exceeds_margin_against_mpmath_leakage() -> None:
    """The margin covers the rounding of the grid leakage: over many grid points the
    computed value is within far less than ``LEAKAGE_REL_ERR`` of the exact one, so a true
    leakage above a float eps is never computed as safely below it."""
    worst = mp.mpf(0)
    for sigma, g in ((0.5, 0.25), (1.0, 0.125), (1.5, 0.5)):
        for q in (0.5, 0.6180339887, 0.93):
            for i in range(-40, 41, 3):
                v = float(gaussian_grid_pml(i * g, sigma, [1.0 - q, q], g))
                ex = exact_grid_pml(sigma, q, i, g)
                if ex > 0:
                    worst = max(worst, abs(mp.mpf(v) - ex) / ex)
    assert 0 < worst < LEAKAGE_REL_ERR / 16


# --------------------------------------------------------------------------- Laplace scale

def exact_laplace_eps(b: float, p: float) -> mp.mpf:
    """Prop. Laplaceleakage in mpmath: ``-log(p + (1 - p) e^{-2/b})``, ``b = 0``: ``-log p``."""
    pp = mp.mpf(p)
    if b == 0.0:
        return -mp.log(pp) if pp > 0 else mp.inf
    return -mp.log(pp + (1 - pp) * mp.exp(-2 / mp.mpf(b)))


def _check_scale(eps: float, p: float) -> None:
    b = laplace_scale(eps, p)
    assert exact_laplace_eps(b, p) <= mp.mpf(eps)


@pytest.mark.parametrize("p", [0.5, 0.3, 0.25, 0.1, 1e-3, 0.4999, 0.123456789])
def test_laplace_scale_at_a_tie_with_eps_max(p: float) -> None:
    """eps = -log p_min as computed: "no noise" only if releasing X is within eps exactly.

    At p = 1/2 the float ``math.log(2)`` is below ln 2, and the old code returned 0 (no
    noise: X released raw with leakage ln 2 > eps)."""
    _check_scale(-math.log(p), p)


def test_laplace_scale_tie_at_one_half_was_unsafe() -> None:
    assert mp.log(2) > mp.mpf(math.log(2))  # the tie the old code got wrong
    assert laplace_scale(math.log(2), 0.5) > 0.0


@pytest.mark.parametrize("p", [0.0, 0.5, 0.3, 0.05])
@pytest.mark.parametrize("b", [0.05, 0.3, 1.0, 2.5, 40.0])
def test_laplace_scale_at_a_tie_with_a_computed_leakage(b: float, p: float) -> None:
    """eps equal to the computed leakage of a scale: the calibrated scale is never below what
    the exact leakage allows."""
    _check_scale(laplace_eps(b, p), p)


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(1e-6, 12.0), p=st.floats(0.0, 0.5))
def test_laplace_scale_meets_eps_exactly(eps: float, p: float) -> None:
    _check_scale(eps, p)


# --------------------------------------------------------------------------- certificates

def _mp_min_linear(uset: object, col: list[mp.mpf]) -> mp.mpf:
    """``min_{Q in set} Q . w`` in exact arithmetic for the sets the designers use: a point
    (``Box(p, p)``), the simplex (``VertexSet(I)``), an l1-ball (move up to ``radius/2`` of
    mass from the largest entries of ``w`` to its smallest, in that order)."""
    if isinstance(uset, VertexSet):
        return min(mp.fsum(mp.mpf(float(v)) * c for v, c in zip(row, col, strict=True))
                   for row in np.asarray(uset.vertices))
    if isinstance(uset, Box):
        lo, hi = uset.coordinate_bounds()
        assert np.array_equal(lo, hi)
        return mp.fsum(mp.mpf(float(v)) * c for v, c in zip(lo, col, strict=True))
    assert isinstance(uset, L1Ball)
    centre = [mp.mpf(float(v)) for v in np.asarray(uset.center)]
    if float(uset.radius) == 0.0:  # one prior, as given (its float sum may not be 1)
        return mp.fsum(a * c for a, c in zip(centre, col, strict=True))
    assert mp.fsum(centre) == 1  # the greedy below is exact for a centre on the simplex
    budget = mp.mpf(float(uset.radius)) / 2
    low = min(col)
    value = mp.fsum(a * c for a, c in zip(centre, col, strict=True))
    for i in sorted(range(len(col)), key=lambda k: -col[k]):
        take = min(centre[i], budget)
        value -= take * (col[i] - low)
        budget -= take
        if budget <= 0:
            break
    return value


def exact_worst_case(matrix: np.ndarray, uset: object) -> mp.mpf:
    """The exact leakage capacity of the float matrix over the set, in mpmath."""
    w = np.asarray(matrix, dtype=np.float64)
    worst = mp.mpf(0)
    for j in range(w.shape[1]):
        col = [mp.mpf(float(x)) for x in w[:, j]]
        top = max(col)
        if top == 0:
            continue
        qmin = _mp_min_linear(uset, col)
        if qmin <= 0:
            return mp.inf
        worst = max(worst, mp.log(top / qmin))
    return worst


def _holds(mech: object) -> None:
    """The guarantee a design states holds exactly for the float matrix it releases."""
    g = mech.guarantee  # type: ignore[attr-defined]
    # basis "all": the claim is every distribution (the recorded ball of radius 2 around a
    # float centre that may not sum to 1 exactly is a stand-in for the simplex)
    sets = [VertexSet(np.eye(g.n))] if g.basis == "all" else [g.set]
    for s in sets:
        assert exact_worst_case(np.asarray(mech), s) <= mp.mpf(g.eps), (g.eps, g.certified_eps)


@pytest.mark.parametrize("n, k", [(4, 2), (6, 3), (6, 2), (8, 4), (9, 3)])
def test_k_singular_guarantee_holds_exactly(n: int, k: int) -> None:
    """The k-singular matrix leaks exactly log(n/k) (real) under the float uniform prior,
    above the float log 2 at n/k = 2: it used to state the float log(n/k)."""
    _holds(k_singular(n, k))


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("eps", [math.log(2), math.log(3), 1.0, 0.25, 0.0])
def test_randomized_response_guarantee_holds_exactly(n: int, eps: float) -> None:
    _holds(randomized_response(n, eps))


@pytest.mark.parametrize("p", [[0.25, 0.75], [0.5, 0.5], [0.2, 0.3, 0.5], [0.1, 0.2, 0.3, 0.4]])
def test_identity_states_a_bound_on_its_exact_leakage(p: list[float]) -> None:
    _holds(identity_mechanism(len(p), prior=p))


@pytest.mark.parametrize("p", [[0.6, 0.4], [0.5, 0.5], [0.2, 0.3, 0.5], [0.1, 0.2, 0.3, 0.4]])
def test_extremal_at_the_region_boundary_holds_exactly(p: list[float]) -> None:
    """eps = log(1/(1 - p_min)) as computed: the end of the first privacy region (a tie of
    the closed form with its own limit) and inside it."""
    pmin = min(p)
    for eps in (-math.log1p(-pmin), 0.5 * -math.log1p(-pmin), 0.0):
        _holds(extremal_mechanism(np.array(p), eps))


@pytest.mark.parametrize("p, beta", [([0.6, 0.4], 0.1), ([0.5, 0.5], 0.2), ([0.7, 0.3], 0.0)])
def test_optimal_binary_holds_exactly(p: list[float], beta: float) -> None:
    limit = -math.log(max(p) - beta / 2)
    for eps in (limit, 0.5 * limit, math.log(2) if math.log(2) <= limit else 0.1):
        _holds(optimal_binary(p, eps=eps, beta=beta))


@settings(max_examples=15, deadline=None)
@given(a=st.integers(1, 500), b=st.integers(1, 500), eps=st.floats(0.0, 2.0),
       rad=st.integers(0, 200))
def test_designs_hold_exactly(a: int, b: int, eps: float, rad: int) -> None:
    """The LP designs and the closed forms state eps only where their exact worst case is
    at most eps (before, a tight design could exceed it by up to 1e-9). Dyadic priors and
    radii: the prior sums to 1 exactly, so the exact set is the one written."""
    p = np.array([a, b, 1024 - a - b]) / 1024.0
    beta = min(rad, int(1.9 * min(a, b, 1024 - a - b))) / 1024.0
    _holds(optimal_mechanism(p, eps, beta=beta))
    _holds(optimal_mechanism(p, eps, beta=beta, utility="accuracy"))


@pytest.mark.parametrize("b, g", [(1.0, 0.25), (0.7, 0.5), (2.3, 0.125)])
@pytest.mark.parametrize("q", [0.5, 0.3, 0.1])
def test_laplace_mechanism_states_a_bound_on_its_exact_leakage(b: float, g: float,
                                                               q: float) -> None:
    """LaplaceMechanism.from_scale states its own worst case: rounded up, it holds in
    mpmath (Prop. Laplaceleakage at the released scale; the grid's largest leakage)."""
    mech = LaplaceMechanism.from_scale(b, over=[1.0 - q, q], granularity=g)
    released = mech.released_b
    assert exact_laplace_eps(released, min(q, 1.0 - q)) <= mp.mpf(mech.guarantee.eps)


# --------------------------------------------------------------------------- continuous Gaussian

def exact_gauss_delta(sigma: float, q: float, eps: float) -> mp.mpf:
    """``P_Y(E_eps)`` of the real-valued binary Gaussian mechanism in mpmath: the half-line
    ``y > t_+`` exists iff ``e^{-eps} > P(+1)`` exactly (``t_-`` likewise)."""
    s, qq, e = mp.mpf(sigma), mp.mpf(q), mp.exp(-mp.mpf(eps))
    rr = 1 - qq
    total = mp.mpf(0)
    if e > qq:
        t = -(s * s / 2) * mp.log((e - qq) / rr)
        total += qq * mp.ncdf((1 - t) / s) + rr * mp.ncdf((-1 - t) / s)
    if e > rr:
        t = -(s * s / 2) * mp.log((e - rr) / qq)
        total += qq * mp.ncdf((-t - 1) / s) + rr * mp.ncdf((1 - t) / s)
    return total


@pytest.mark.parametrize("sigma", [0.1, 0.3, 1.0])
@pytest.mark.parametrize("q", [0.81, 0.3, 0.7, 0.123, 0.9, 0.55, 0.6, 0.19, 0.45])
def test_gaussian_kink_tie_keeps_the_half_line(sigma: float, q: float) -> None:
    """eps = -log P(+1) as computed: exactly, e^{-eps} - P(+1) can be positive (q = 0.81:
    +1.4e-18) and the positive half-line then holds most of the mass; the float test
    ``r + expm1(-eps) > 0`` dropped it (0.19 reported, 1.0 exact at sigma = 0.1)."""
    eps = -math.log(q)
    reported = gaussian_violation_probability(sigma, [1.0 - q, q], eps)
    assert reported >= float(exact_gauss_delta(sigma, q, eps)) * (1 - SUM_RTOL) - 1e-15
    # and over an interval of priors holding q
    lo, hi = max(0.0, q - 0.01), min(1.0, q + 0.01)
    over = gaussian_delta1_interval(sigma, lo, hi, eps=eps)
    assert over >= float(exact_gauss_delta(sigma, q, eps)) * (1 - SUM_RTOL) - 1e-15


@settings(max_examples=40, deadline=None)
@given(sigma=st.floats(0.05, 3.0), q=st.floats(0.01, 0.99), y=st.floats(0.0, 3.0),
       negative=st.booleans())
def test_gaussian_delta_at_a_pml_tie_is_never_below_the_exact_one(
        sigma: float, q: float, y: float, negative: bool) -> None:
    """eps = the computed leakage of an output y (a tie at the violation set's boundary)."""
    prior = [1.0 - q, q]
    eps = float(gaussian_pml(-y if negative else y, sigma, prior))
    reported = gaussian_violation_probability(sigma, prior, eps)
    assert reported >= float(exact_gauss_delta(sigma, q, eps)) * (1 - SUM_RTOL) - 1e-15
