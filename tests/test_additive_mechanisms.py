"""LaplaceMechanism / GaussianMechanism: objects carrying the guarantee of what is released.

Every number is checked against an independent computation: mpmath brute force over the
grid cells (the exact discrete Laplace / discrete Gaussian laws written out here), the
closed forms of the flip probabilities derived by hand, and the discrete Mechanism's own
worst-case machinery for the binarised channel.
"""

from __future__ import annotations

import copy
import math
import pickle

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit
from pmlkit.additive import (
    GaussianMechanism,
    LaplaceMechanism,
    calibrate_gaussian,
    calibrate_laplace,
    gaussian_noise,
    laplace_noise,
)
from pmlkit.errors import ValidationError
from pmlkit.guarantee import PMLGuarantee, PrivacyMechanism, Provenance


@pytest.fixture(autouse=True)
def _precision():
    """30 digits for the brute force, without touching other modules' mpmath setting."""
    with mpmath.workdps(30):
        yield

# --------------------------------------------------------------------------- brute force


def _laplace_cells(b: float, g: float, reach: int = 400):
    """(i, P(i|+1), P(i|-1)) of the grid release, with mpmath: K discrete Laplace of
    scale n = ceil(b/g) grid steps, P(K = k) = tanh(1/(2n)) e^{-|k|/n}."""
    n = math.ceil(b / g)
    big_n = round(1 / g)
    c = mpmath.tanh(mpmath.mpf(1) / (2 * n))
    cells = []
    for i in range(-reach, reach + 1):
        cells.append((i, c * mpmath.exp(-mpmath.mpf(abs(i - big_n)) / n),
                      c * mpmath.exp(-mpmath.mpf(abs(i + big_n)) / n)))
    return cells


def _gauss_cells(sigma: float, g: float, reach: int = 50):
    """Discrete Gaussian of n = ceil(sigma/g) steps: P(K = k) = e^{-k^2/(2n^2)} / Z."""
    n = math.ceil(sigma / g)
    big_n = round(1 / g)
    w = {k: mpmath.exp(-mpmath.mpf(k * k) / (2 * n * n)) for k in range(-3 * reach, 3 * reach)}
    z = mpmath.fsum(w.values())
    return [(i, w[i - big_n] / z, w[i + big_n] / z) for i in range(-reach, reach + 1)]


def _pml(p_plus, p_minus, q):
    return mpmath.log(max(p_plus, p_minus) / (q * p_plus + (1 - q) * p_minus))


def _sup_pml(cells, q):
    return max(_pml(a, b, mpmath.mpf(q)) for _, a, b in cells)


def _violation(cells, q, eps):
    q = mpmath.mpf(q)
    return mpmath.fsum(q * a + (1 - q) * b for _, a, b in cells if _pml(a, b, q) > eps)


# --------------------------------------------------------------------------- Laplace


@pytest.mark.parametrize("b,g", [(1.0, 0.25), (0.7, 0.5), (2.3, 0.125)])
@pytest.mark.parametrize("interval", [(0.2, 0.4), (0.5, 0.5), (0.35, 0.9), (0.0, 1.0)])
def test_laplace_certified_eps_is_the_brute_force_sup_over_cells_and_set(b, g, interval):
    lo, hi = interval
    uset = pmlkit.Box([1 - hi, lo], [1 - lo, hi])
    mech = LaplaceMechanism.from_scale(b, over=uset, granularity=g)
    cells = _laplace_cells(b, g)
    # the worst case over the set: sup over a fine list of q (ends included) and outputs
    qs = sorted({lo, hi, *np.linspace(lo, hi, 21).tolist()})
    brute = max(_sup_pml(cells, q) for q in qs)
    assert mech.guarantee.certified_eps == pytest.approx(float(brute), rel=1e-12, abs=1e-14)
    # the promise is the computed worst case raised by its rounding margin (a tie with the
    # computed value would count for the guarantee)
    g = mech.guarantee
    assert g.certified_eps <= g.eps <= g.certified_eps * (1 + 1e-12) + 1e-300
    assert g.eps >= float(brute)
    assert mech.guarantee.basis == "given" and mech.guarantee.output_delta == 0.0
    assert mech.worst_case_over(uset) == pytest.approx(float(brute), rel=1e-12, abs=1e-14)
    q = (lo + hi) / 2
    assert mech.leakage_under([1 - q, q]) == pytest.approx(float(_sup_pml(cells, q)),
                                                           rel=1e-12, abs=1e-14)


def test_laplace_every_prior_gives_the_ldp_value_two_over_released_b():
    mech = LaplaceMechanism.from_scale(1.3, granularity=0.25)   # released b = 1.5
    assert mech.released_b == 1.5
    assert mech.guarantee.basis == "all"
    assert mech.guarantee.certified_eps == pytest.approx(2 / 1.5, rel=1e-14)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 3.0), st.floats(0.0, 0.5), st.floats(0.0, 0.6))
def test_for_eps_meets_its_target_over_the_set(eps, p, width):
    lo, hi = p, min(p + width, 1.0)
    uset = pmlkit.Box([1 - hi, lo], [1 - lo, hi])
    p_min = min(lo, 1 - hi)
    if p_min > 0 and eps >= -math.log(p_min):
        with pytest.raises(ValidationError, match="needs no noise"):
            LaplaceMechanism.for_eps(eps, over=uset)
        return
    mech = LaplaceMechanism.for_eps(eps, over=uset)
    assert mech.guarantee.eps == eps
    assert mech.guarantee.certified_eps <= eps + 1e-12
    # closed form of the continuous worst case at the requested b, derived by hand:
    # eps(b) = -log(p_min + (1 - p_min) e^{-2/b}) equals the target (smallest scale)
    cont = -math.log(p_min + (1 - p_min) * math.exp(-2 / mech.b))
    assert cont == pytest.approx(eps, rel=1e-9, abs=1e-12)


def test_for_eps_refuses_eps_zero():
    with pytest.raises(ValidationError, match="eps must be > 0"):
        LaplaceMechanism.for_eps(0.0)


def test_apply_is_the_grid_release_with_the_same_seed():
    x = np.array([1, -1, 1, 1, -1] * 40)
    lap = LaplaceMechanism.from_scale(0.8, granularity=2.0**-6)
    np.testing.assert_array_equal(lap.apply(x, rng=11),
                                  laplace_noise(x, 0.8, granularity=2.0**-6, rng=11))
    np.testing.assert_array_equal(lap(x, rng=11), lap.apply(x, rng=11))
    gau = GaussianMechanism.from_scale(1.2, eps=1.0)
    np.testing.assert_array_equal(gau.apply(x, rng=4), gaussian_noise(x, 1.2, rng=4))
    # secure by default: two calls differ (2^-6 grid, 200 values)
    assert not np.array_equal(lap.apply(x), lap.apply(x))


# --------------------------------------------------------------------------- Gaussian


def _brute_delta1(cells, lo, hi, eps):
    """sup over q in [lo, hi] of the violation probability: it is piecewise linear in q
    between the q where some cell's pml crosses eps, so the ends and both sides of every
    crossing are enough (found here from each cell's pml, by bisection in mpmath)."""
    eps = mpmath.mpf(eps)
    cands = {mpmath.mpf(lo), mpmath.mpf(hi)}
    for _, a, b in cells:
        f = lambda q, a=a, b=b: _pml(a, b, q) - eps  # noqa: E731
        fl, fh = f(mpmath.mpf(lo)), f(mpmath.mpf(hi))
        if (fl > 0) != (fh > 0):
            x, y = mpmath.mpf(lo), mpmath.mpf(hi)
            for _ in range(70):
                mid = (x + y) / 2
                if (f(mid) > 0) == (fl > 0):
                    x = mid
                else:
                    y = mid
            cands.update({x, y})
    return max(_violation(cells, q, eps) for q in cands)


@pytest.mark.parametrize("sigma,g", [(1.0, 0.5), (0.6, 0.25), (1.7, 0.5)])
@pytest.mark.parametrize("interval", [(0.3, 0.5), (0.5, 0.5), (0.05, 0.95)])
@pytest.mark.parametrize("eps", [0.2, 0.6, 1.5])
def test_gaussian_output_delta_is_the_brute_force_sup(sigma, g, interval, eps):
    lo, hi = interval
    uset = pmlkit.Box([1 - hi, lo], [1 - lo, hi])
    cells = _gauss_cells(sigma, g)
    brute = float(_brute_delta1(cells, lo, hi, eps))
    if brute >= 1.0 - 1e-15:
        with pytest.raises(ValidationError, match="violation probability 1"):
            GaussianMechanism.from_scale(sigma, eps=eps, over=uset, granularity=g)
        return
    mech = GaussianMechanism.from_scale(sigma, eps=eps, over=uset, granularity=g)
    got = mech.guarantee.output_delta
    assert got >= brute - 1e-13          # never understated
    assert got <= brute + 1e-12          # and exact (up to the documented 2^-60 slack)
    assert mech.guarantee.certified_eps == eps == mech.guarantee.eps
    q = (lo + hi) / 2
    assert mech.violation_probability([1 - q, q], eps) == pytest.approx(
        float(_violation(cells, q, eps)), abs=1e-13)


def test_gaussian_leakage_under_is_the_sup_over_outputs():
    mech = GaussianMechanism.from_scale(1.0, eps=1.0, granularity=0.5)
    cells = _gauss_cells(1.0, 0.5, reach=60)
    for q in (0.3, 0.5, 0.8):
        sup = _sup_pml(cells, q)
        want = -math.log(min(q, 1 - q))
        assert sup < -mpmath.log(min(mpmath.mpf(q), 1 - mpmath.mpf(q)))  # never attained
        assert want - float(sup) < 1e-12      # ... but approached far out on the grid
        assert mech.leakage_under([1 - q, q]) == pytest.approx(want, rel=1e-15)
    assert mech.leakage_under([0.0, 1.0]) == math.inf
    assert mech.worst_case_over(pmlkit.L1Ball([0.5, 0.5], 0.4)) == pytest.approx(
        -math.log(0.3), rel=1e-12)


def test_gaussian_with_eps_and_curve_follow_the_brute_force():
    uset = pmlkit.Box([0.5, 0.3], [0.7, 0.5])
    mech = GaussianMechanism.from_scale(1.0, eps=0.3, over=uset, granularity=0.5)
    cells = _gauss_cells(1.0, 0.5)
    other = mech.with_eps(0.9)
    assert other.guarantee.eps == 0.9 and other.guarantee.set == mech.guarantee.set
    assert other.guarantee.output_delta == pytest.approx(
        float(_brute_delta1(cells, 0.3, 0.5, 0.9)), abs=1e-12)
    e, d = mech.curve([0.3, 0.9])
    np.testing.assert_allclose(d, [mech.guarantee.output_delta,
                                   other.guarantee.output_delta], atol=1e-15)
    assert not e.flags.writeable and not d.flags.writeable


# --------------------------------------------------------------------------- binarised


@pytest.mark.parametrize("b", [0.3, 1.0, 4.0])
def test_laplace_binarized_is_the_hand_derived_channel(b):
    # P(flip | X = +1) = P(1 + L < 0) = P(L < -1) = int_{-inf}^{-1} e^{-|x|/b}/(2b) dx
    #                  = e^{-1/b} / 2, and symmetrically for X = -1
    r = math.exp(-1 / b) / 2
    uset = pmlkit.L1Ball([0.4, 0.6], 0.3)
    w = LaplaceMechanism.from_scale(b, over=uset).binarized()
    assert isinstance(w, pmlkit.Mechanism)
    np.testing.assert_allclose(w.matrix, [[1 - r, r], [r, 1 - r]], rtol=1e-15)
    assert w.input_labels == w.output_labels == (-1, 1)
    # its certificate: the sup of the 2x2 channel's pml over q in [0.25, 0.75], by hand
    pmls = [math.log(max(1 - r, r) / (q * (1 - r) + (1 - q) * r)) for q in (0.25, 0.75)]
    assert w.certified_eps == pytest.approx(max(pmls), rel=1e-12)
    assert w.certified


@pytest.mark.parametrize("sigma", [0.4, 1.0, 3.0])
def test_gaussian_binarized_is_the_normal_tail(sigma):
    r = float(mpmath.ncdf(-1 / mpmath.mpf(sigma)))    # P(1 + G < 0)
    w = GaussianMechanism.from_scale(sigma, eps=2.0).binarized()
    np.testing.assert_allclose(w.matrix, [[1 - r, r], [r, 1 - r]], rtol=1e-12)
    assert w.certified_eps == pytest.approx(math.log((1 - r) / r), rel=1e-12)  # every prior


def test_binarized_of_a_calibration_survives_a_file_round_trip(tmp_path):
    cal = calibrate_laplace(["a"] * 30 + ["b"] * 70, 1.0, 1e-3, positive="b")
    w = cal.mechanism.binarized()
    assert w.parameters["prior"] == [0.3, 0.7] and w.parameters["m"] == 100
    back = pmlkit.Mechanism.load(w.save(tmp_path / "bit.json"))
    assert back.certified and back.certified_eps == w.certified_eps


# --------------------------------------------------------------------------- objects


def _mechs():
    cs = pmlkit.confidence_set([30, 70], 1e-3)
    return [LaplaceMechanism.from_scale(1.0), LaplaceMechanism.for_eps(0.8, over=cs),
            LaplaceMechanism.from_scale(2.0, over=[0.3, 0.7]),
            GaussianMechanism.from_scale(1.5, eps=0.7, over=cs),
            GaussianMechanism.from_scale(1.0, eps=1.0, over=pmlkit.L1Ball([0.5, 0.5], 0.2))]


@pytest.mark.parametrize("mech", _mechs(), ids=lambda m: type(m).__name__)
def test_pickle_and_deepcopy_round_trip_and_protocol(mech):
    assert isinstance(mech, PrivacyMechanism)
    assert isinstance(mech.guarantee, PMLGuarantee)
    assert isinstance(mech.provenance, Provenance)
    for other in (pickle.loads(pickle.dumps(mech)), copy.deepcopy(mech), copy.copy(mech)):
        assert type(other) is type(mech) and other == mech
        assert other.guarantee == mech.guarantee and other.provenance == mech.provenance
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        mech.granularity = 1.0  # type: ignore[misc]


def test_a_forged_guarantee_is_refused_also_when_unpickled():
    mech = LaplaceMechanism.from_scale(1.0, over=[0.5, 0.5])
    func, args = mech.__reduce__()
    kind, b, g, gd, pd = args
    forged = dict(gd, eps=0.1, certified_eps=0.1)   # the true eps is 0.566
    with pytest.raises(ValidationError, match="does not hold"):
        func(kind, b, g, forged, pd)
    with pytest.raises(ValidationError, match="does not hold"):   # constructor path too
        LaplaceMechanism(1.0, None, PMLGuarantee.from_dict(forged), mech.provenance)
    gm = GaussianMechanism.from_scale(1.0, eps=0.5)
    func, (kind, s, g, gd, pd) = gm.__reduce__()
    with pytest.raises(ValidationError, match=r"output_delta .* does not hold"):
        func(kind, s, g, dict(gd, output_delta=0.0), pd)
    # a Gaussian's worst-case eps over outputs is -log p_min, not a small number
    with pytest.raises(ValidationError, match="must equal eps"):
        func(kind, s, g, dict(gd, certified_eps=0.1), pd)


def test_over_accepts_sets_priors_and_confidence_sets_and_refuses_others():
    cs = pmlkit.confidence_set([30, 70], 1e-3, confidence="box-cp")
    g = LaplaceMechanism.from_scale(1.0, over=cs).guarantee
    assert (g.basis, g.method, g.m, g.delta) == ("sample", "box-cp", 100, 1e-3)
    assert LaplaceMechanism.from_scale(1.0, over=[0.2, 0.8]).guarantee.basis == "prior"
    with pytest.raises(ValidationError, match="over must be"):
        LaplaceMechanism.from_scale(1.0, over="l1")
    with pytest.raises(ValidationError, match="binary"):
        LaplaceMechanism.from_scale(1.0, over=[0.2, 0.3, 0.5])
    with pytest.raises(ValidationError, match="categories"):
        LaplaceMechanism.from_scale(1.0, over=pmlkit.L1Ball([0.2, 0.3, 0.5], 0.1))


# --------------------------------------------------------------------------- calibrations


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 400), st.integers(1, 400), st.floats(0.05, 4.0),
       st.sampled_from(["l1", "box-cp", "box-kl"]))
def test_calibrate_laplace_mechanism_holds_its_target(n0, n1, eps, method):
    cal = calibrate_laplace(["a"] * n0 + ["b"] * n1, eps, 1e-4, positive="b",
                            confidence=method)
    if cal.released_b is None:
        assert cal.mechanism is None
        return
    g = cal.mechanism.guarantee
    assert g.certified_eps <= eps + 1e-12 and g.eps == eps
    assert (g.basis, g.method, g.m, g.delta) == ("sample", method, n0 + n1, 1e-4)
    assert g.certified_eps == pytest.approx(cal.grid_eps, rel=1e-12, abs=1e-15)
    assert cal.mechanism.b == cal.b and cal.mechanism.released_b == cal.released_b


def test_calibrate_gaussian_mechanism_is_stated_at_the_largest_eps():
    cal = calibrate_gaussian(["a"] * 300 + ["b"] * 700, 1.5, 1e-6, positive="b",
                             eps=[0.2, 0.5, 0.9])
    g = cal.mechanism.guarantee
    assert g.eps == 0.9 and g.delta == 1e-6 and g.method == "l1"
    assert g.output_delta == pytest.approx(cal.delta1[-1], rel=1e-9, abs=1e-15)
    _, d = cal.mechanism.curve(cal.eps)
    np.testing.assert_allclose(d, cal.direct_delta, rtol=1e-9, atol=1e-15)
    assert cal.mechanism.released_sigma == cal.released_sigma


def test_gaussian_at_eps_zero_only_the_output_zero_is_safe():
    # every grid point but 0 leaks something, and P(Y = 0 | x) = P(K = -+N) is the same
    # for both inputs: output_delta = 1 - P(K = N), n = N = 1024 grid steps (sigma = 1)
    cal = calibrate_gaussian(["a"] * 5 + ["b"] * 5, 1.0, 0.1, positive="b", eps=0.0)
    n = 1024
    # Poisson summation: sum_k e^{-k^2/(2n^2)} = sqrt(2 pi) n (1 + 2 sum_j e^{-2 pi^2 n^2 j^2})
    # and the correction is below e^{-2 10^7}: Z = sqrt(2 pi) n to any double precision
    z = mpmath.sqrt(2 * mpmath.pi) * n
    p0 = mpmath.exp(-mpmath.mpf(1) / 2) / z
    assert cal.mechanism.guarantee.output_delta == pytest.approx(float(1 - p0), rel=1e-12)


# --------------------------------------------------------------------------- vocabulary

from pmlkit import additive as _add  # noqa: E402

_E = np.array([0.2, 0.9])

RENAMES = [
    # (old spelling, new spelling, what the warning names)
    (lambda: _add.worst_case_p_min(0.3, 0.2),
     lambda: _add.worst_case_p_min(0.3, beta=0.2), "beta"),
    (lambda: _add.laplace_eps_uncertain(1.5, 0.3, 0.2),
     lambda: _add.laplace_eps_uncertain(1.5, 0.3, beta=0.2), "beta"),
    (lambda: _add.laplace_scale_uncertain(0.8, 0.3, 0.2),
     lambda: _add.laplace_scale_uncertain(0.8, 0.3, beta=0.2), "beta"),
    (lambda: _add.gaussian_delta1_interval(1.2, 0.3, 0.6, _E),
     lambda: _add.gaussian_delta1_interval(1.2, 0.3, 0.6, eps=_E), "eps"),
    (lambda: _add.gaussian_delta1(1.2, (0.6, 0.4), 0.2, _E),
     lambda: _add.gaussian_delta1(1.2, (0.6, 0.4), beta=0.2, eps=_E), "beta, eps"),
    (lambda: _add.gaussian_delta1(1.2, p_hat=(0.6, 0.4), beta=0.2, eps=_E),
     lambda: _add.gaussian_delta1(1.2, prior=(0.6, 0.4), beta=0.2, eps=_E), "p_hat"),
    (lambda: _add.gaussian_tradeoff(1.2, (0.6, 0.4), m=500, delta2=1e-3, eps=_E,
                                    method="paper"),
     lambda: _add.gaussian_tradeoff(1.2, (0.6, 0.4), m=500, delta2=1e-3, eps=_E,
                                    curve="paper"), "method"),
    (lambda: _add.gaussian_tradeoff(1.2, (0.6, 0.4), 500, 1e-3, _E),
     lambda: _add.gaussian_tradeoff(1.2, (0.6, 0.4), m=500, delta2=1e-3, eps=_E),
     "m, delta2, eps"),
    (lambda: _add.gaussian_tradeoff(1.2, p_hat=0.4, m=500, delta2=1e-3, eps=_E),
     lambda: _add.gaussian_tradeoff(1.2, prior=0.4, m=500, delta2=1e-3, eps=_E), "p_hat"),
    (lambda: _add.gaussian_tradeoff_interval(1.2, 0.4, 0.3, 0.5, delta2=1e-3, eps=_E,
                                             method="paper"),
     lambda: _add.gaussian_tradeoff_interval(1.2, 0.4, 0.3, 0.5, delta2=1e-3, eps=_E,
                                             curve="paper"), "method"),
    (lambda: _add.gaussian_tradeoff_interval(1.2, 0.4, 0.3, 0.5, 1e-3, _E),
     lambda: _add.gaussian_tradeoff_interval(1.2, 0.4, 0.3, 0.5, delta2=1e-3, eps=_E),
     "delta2, eps"),
    (lambda: _add.gaussian_tradeoff_interval(1.2, p_hat=0.4, q_low=0.3, q_high=0.5,
                                             delta2=1e-3, eps=_E),
     lambda: _add.gaussian_tradeoff_interval(1.2, 0.4, 0.3, 0.5, delta2=1e-3, eps=_E),
     "p_hat"),
    (lambda: _add.gaussian_grid_delta1_interval(1.0, 0.3, 0.6, 0.5, 0.25),
     lambda: _add.gaussian_grid_delta1_interval(1.0, 0.3, 0.6, eps=0.5, granularity=0.25),
     "eps, granularity"),
]


@pytest.mark.parametrize("old,new,named", RENAMES, ids=[r[2] + str(i)
                                                       for i, r in enumerate(RENAMES)])
def test_old_spellings_still_work_warn_and_agree(old, new, named):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        want = new()                                  # the new spelling never warns
    with pytest.warns(DeprecationWarning, match=named.split(",")[0]):
        got = old()
    np.testing.assert_array_equal(np.asarray(got, dtype=float), np.asarray(want, dtype=float))


def test_both_spellings_at_once_are_refused():
    with pytest.raises(ValidationError, match="both 'prior' and its deprecated name 'p_hat'"):
        _add.gaussian_delta1(1.2, p_hat=0.4, prior=0.4, beta=0.2, eps=0.5)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0),
       st.floats(0.2, 3.0), st.floats(0.05, 2.0))
def test_every_prior_in_the_set_is_covered(a, c, t, scale, eps):
    # the guarantee holds for each prior of the set, not only at the computed worst case
    lo, hi = min(a, c), max(a, c)
    q = lo + t * (hi - lo)
    uset = pmlkit.Box([1 - hi, lo], [1 - lo, hi])
    lap = LaplaceMechanism.from_scale(scale, over=uset, granularity=2.0**-8)
    assert lap.leakage_under([1 - q, q]) <= lap.guarantee.certified_eps + 1e-12
    try:
        gau = GaussianMechanism.from_scale(scale, eps=eps, over=uset, granularity=2.0**-6)
    except ValidationError:   # every output may violate: no guarantee to check
        return
    assert gau.violation_probability([1 - q, q], eps) <= gau.guarantee.output_delta + 1e-12


def test_a_laplace_promise_below_its_worst_case_is_refused():
    """certified_eps may trail the recomputed worst case by the cross-machine tolerance,
    but the promise eps may not be below it by more than rounding (it could by 1e-9)."""
    from pmlkit.additive import LaplaceMechanism
    from pmlkit.errors import ValidationError
    from pmlkit.guarantee import PMLGuarantee, Provenance

    honest = LaplaceMechanism.from_scale(1.0)
    actual = honest.worst_case_over(PMLGuarantee.for_prior([0.5, 0.5], eps=1.0,
                                                           certified_eps=1.0).set)

    def with_claim(eps, cert):
        g = PMLGuarantee.for_prior([0.5, 0.5], eps=eps, certified_eps=cert)
        return LaplaceMechanism(1.0, None, g, Provenance())

    assert with_claim(actual, actual).b == 1.0  # a tie is no refutation
    with pytest.raises(ValidationError, match=r"guarantee\.eps = .* by more than rounding"):
        with_claim(actual - 0.9e-9, actual - 0.5e-9)
