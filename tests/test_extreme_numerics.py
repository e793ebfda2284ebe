"""Numerical robustness: extreme but valid inputs against mpmath.

Every case evaluates a pmlkit formula at an extreme point (``p_min = 1e-12``, ``eps = 1e-9``
and ``eps = 50``, ``N = 10,000``, ``m = 10^12``, ``beta`` at the edge of validity, ...) and
compares it with the same formula, written here from the paper's statement and evaluated by mpmath
with 60 significant digits **on the same float inputs**. The result must be finite (or the
documented ``inf``) and within the stated relative tolerance. Tolerances are 1e-12 where the
problem is well conditioned; at the edge of validity (``1 - x`` with ``x -> 1``) the
float inputs themselves carry a relative error of ~1e-16 that the condition number
amplifies, so the tolerance there is derived from that condition number.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import mpmath as mp
import numpy as np
import pytest

mp.mp.dps = 60

U = 1e-16  # unit roundoff (about)


def _fn(module: str, name: str) -> Callable[..., Any]:
    """pmlkit's own public name: a missing one fails the test (never a skip)."""
    return getattr(importlib.import_module(module), name)


def _close(got: Any, ref: Any, rel: float, abs_: float = 0.0) -> None:
    ref = mp.mpf(ref)
    assert got is not None
    got = float(got)
    assert not math.isnan(got), "NaN returned"
    if mp.isinf(ref):
        assert math.isinf(got) and got > 0, (got, ref)
        return
    assert math.isfinite(got), (got, ref)
    err = abs(mp.mpf(got) - ref)
    assert err <= rel * abs(ref) + abs_, (
        f"got {got!r}, mpmath {mp.nstr(ref, 20)}, rel err {mp.nstr(err / abs(ref), 3)}"
        if ref != 0 else f"got {got!r}, mpmath 0")


def M(x: Any) -> Any:
    """The float that pmlkit sees, as an exact mpmath number."""
    return mp.mpf(float(x))


# --------------------------------------------------------------------------------------
# estimation: eq. betastar and its inverse
# --------------------------------------------------------------------------------------

def mp_l1_radius(delta: float, m: float, n: int) -> Any:
    return mp.sqrt(2 / M(m) * (mp.log(mp.mpf(2) ** n - 2) - mp.log(M(delta))))


def mp_l1_failure(beta: float, m: float, n: int) -> Any:
    return min(mp.mpf(1), (mp.mpf(2) ** n - 2) * mp.exp(-M(m) * M(beta) ** 2 / 2))


@pytest.mark.parametrize("delta,m,n", [
    (1e-9, 10**12, 2), (1e-300, 1, 2), (5e-324, 10, 3), (1.0, 10**12, 10_000),
    (1e-9, 10**12, 10_000), (0.3, 1, 10_000), (1 - 1e-16, 7, 2), (1e-5, 10**6, 20),
])
def test_l1_radius(delta: float, m: int, n: int) -> None:
    f = _fn("pmlkit.estimation", "l1_radius")
    _close(f(delta, m=m, n=n), mp_l1_radius(delta, m, n), rel=1e-13)


@pytest.mark.parametrize("beta,m,n", [
    (1e-3, 10**12, 2), (1e-6, 10**12, 10_000), (0.5, 10**12, 10_000), (2.0, 1, 2),
    (0.05, 10**4, 50), (1e-9, 10**12, 2), (1.7e-5, 10**12, 10),
])
def test_l1_failure_probability(beta: float, m: int, n: int) -> None:
    f = _fn("pmlkit.estimation", "l1_failure_probability")
    ref = mp_l1_failure(beta, m, n)
    # exp(-m beta^2/2): the float exponent carries ~U * m beta^2 absolute error
    rel = 1e-13 + 4 * U * float(M(m) * M(beta) ** 2)
    if ref < mp.mpf("1e-300"):  # below the float range: 0 (or a subnormal) is the answer
        assert 0.0 <= f(beta, m=m, n=n) < 1e-290
        return
    _close(f(beta, m=m, n=n), ref, rel=rel)


# --------------------------------------------------------------------------------------
# bounds: eq. epsmax, Thm l1gamma, Cor. deltamin
# --------------------------------------------------------------------------------------

def mp_eps_bound(eps: float, beta: float) -> Any:
    x = M(beta) * mp.exp(M(eps)) / 2
    return mp.inf if x >= 1 else M(eps) - mp.log(1 - x)


def _edge_rel(x: Any) -> float:
    """Relative tolerance of ``-log(1 - x)`` when ``x`` is computed in floats."""
    x = mp.mpf(x)
    if x <= 0 or x >= 1:
        return 1e-12
    cond = x / ((1 - x) * max(abs(mp.log(1 - x)), mp.mpf("1e-300")))
    return float(1e-12 + 8 * U * cond)


@pytest.mark.parametrize("eps,beta", [
    (1e-9, 1e-6), (50.0, 1e-30), (50.0, 3e-22), (1.0, 1e-12), (math.log(5), 0.01),
    (0.0, 2 * (1 - 1e-12)), (1e-9, 2 * (1 - 1e-9)), (3.0, 2 * math.exp(-3.0) * (1 - 1e-10)),
    (50.0, 2.0), (1e-9, 0.0),
    (1000.0, 0.0), (1000.0, 1e-300),               # e^eps overflows a float: work in logs
])
def test_eps_bound(eps: float, beta: float) -> None:
    f = _fn("pmlkit.bounds", "eps_bound")
    x = M(beta) * mp.exp(M(eps)) / 2
    _close(f(eps=eps, beta=beta), mp_eps_bound(eps, beta), rel=_edge_rel(x) + 1e-12)


def mp_sensitivity_bound(eps: float, prior: np.ndarray, beta: float) -> Any:
    p = [M(v) for v in prior]
    pmin = min(p)
    e = M(eps)
    # region 1: eps < eps_1 = -log(sum of all but the smallest) = -log(1 - p_min)
    region1 = e < -mp.log(1 - pmin)
    x = M(beta) / 2 * (mp.exp(e) - 1) / pmin if region1 else M(beta) * mp.exp(e) / 2
    return mp.inf if x >= 1 else -mp.log(1 - x)


@pytest.mark.parametrize("eps,prior,beta", [
    (1e-9, [1e-12, 1 - 1e-12], 1e-13),
    (1e-9, [0.5, 0.5], 1.0 - 1e-12),
    (0.5, [0.3, 0.3, 0.4], 0.6 * (1 - 1e-12)),
    (20.0, [1e-12, 1 - 1e-12], 1e-12 * (1 - 1e-9)),
    (1e-9, [0.25] * 4, 1e-3),
    (27.0, [1e-12, 0.5, 0.5 - 1e-12], 2e-12 * (1 - 1e-9)),
    (1000.0, [0.5, 0.5], 0.1), (1000.0, [0.5, 0.5], 0.0),   # e^eps overflows a float
])
def test_sensitivity_bound(eps: float, prior: list[float], beta: float) -> None:
    f = _fn("pmlkit.bounds", "sensitivity_bound")
    p = np.array(prior)
    ref = mp_sensitivity_bound(eps, p, beta)
    pmin = M(p.min())
    region1 = M(eps) < -mp.log(1 - pmin)
    x = M(beta) / 2 * (mp.exp(M(eps)) - 1) / pmin if region1 else M(beta) * mp.exp(M(eps)) / 2
    # (e^eps - 1) for eps = 1e-9 must be computed with expm1
    _close(f(p, eps=eps, beta=beta), ref, rel=_edge_rel(x) + 1e-10)


def mp_delta_min(eps: float, eps_prime: float, m: float, n: int) -> Any:
    d = mp.exp(-M(eps)) - mp.exp(-M(eps_prime))
    return min(mp.mpf(1), (mp.mpf(2) ** n - 2) * mp.exp(-2 * M(m) * d * d))


@pytest.mark.parametrize("eps,eps_prime,m,n", [
    (math.log(5), math.log(5) + 0.1, 10**6, 20),
    (1e-9, 2e-9, 10**12, 2),
    (1e-9, 1e-9 + 1e-6, 10**12, 2),                # e^-eps - e^-eps' cancels: needs expm1
    (50.0, 50.0 + 1e-3, 10**30, 2),
    (50.0, 50.5, 10**12, 2),
    (1.0, 1.0 + 1e-7, 10**12, 10_000),
    (math.log(5), math.log(5) + 1.0, 10**4, 10_000),
])
def test_delta_min(eps: float, eps_prime: float, m: int, n: int) -> None:
    f = _fn("pmlkit.bounds", "delta_min")
    ref = mp_delta_min(eps, eps_prime, m, n)
    d = mp.exp(-M(eps)) - mp.exp(-M(eps_prime))
    expo = 2 * M(m) * d * d
    rel = float(1e-10 + 16 * U * expo)
    got = f(eps=eps, eps_target=eps_prime, m=m, n=n)
    if ref < mp.mpf("1e-300"):
        assert 0.0 <= got < 1e-290
        return
    _close(got, ref, rel=rel)


# --------------------------------------------------------------------------------------
# leakage: pml / eps_min at tiny priors and tiny / huge eps
# --------------------------------------------------------------------------------------

def mp_pml(w: np.ndarray, p: np.ndarray) -> list[Any]:
    out = []
    for j in range(w.shape[1]):
        py = mp.fsum(M(p[i]) * M(w[i, j]) for i in range(w.shape[0]))
        out.append(mp.log(max(M(v) for v in w[:, j]) / py) if py > 0 else None)
    return out


def _rr(n: int, eps: float) -> np.ndarray:
    """k-ary randomized response ``e^eps / (e^eps + n - 1)`` on the diagonal."""
    with np.errstate(over="ignore"):
        off = 1.0 / (math.exp(eps) + n - 1) if eps < 700 else 0.0
    w = np.full((n, n), off)
    np.fill_diagonal(w, 1.0 - (n - 1) * off)
    return w


PML_CASES = {
    "pmin=1e-12, binary": (np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([1e-12, 1 - 1e-12])),
    "pmin=1e-12, eps=50 channel": (np.array([[1 - 1e-22, 1e-22], [1e-22, 1 - 1e-22]]),
                                   np.array([1e-12, 1 - 1e-12])),
    "rr eps=1e-9": (_rr(3, 1e-9), np.array([0.2, 0.3, 0.5])),
    "rr eps=50": (_rr(2, 50.0), np.array([0.5, 0.5])),
    "tiny columns": (np.array([[1 - 1e-200, 1e-200], [1 - 1e-200, 1e-200]]),
                     np.array([0.5, 0.5])),
    "underflowing P_Y": (np.array([[1 - 1e-200, 1e-200], [1.0, 0.0]]),
                         np.array([1e-200, 1 - 1e-200])),
}


@pytest.mark.parametrize("case", list(PML_CASES))
def test_pml_and_eps_min(case: str) -> None:
    pml = _fn("pmlkit.leakage", "pml")
    eps_min = _fn("pmlkit.leakage", "eps_min")
    w, p = PML_CASES[case]
    ref = mp_pml(w, p)
    got = pml(w, p)
    for g, r in zip(got, ref, strict=True):
        if r is None:
            assert math.isnan(g)
        else:
            _close(g, r, rel=1e-9, abs_=1e-15)
    vals = [r for r in ref if r is not None]
    _close(eps_min(w, p), max(mp.mpf(0), *vals), rel=1e-9, abs_=1e-15)


def test_pml_n_10000() -> None:
    """N = 10,000 inputs (3 outputs) under a skewed prior with p_min = 1e-12."""
    pml = _fn("pmlkit.leakage", "pml")
    eps_min = _fn("pmlkit.leakage", "eps_min")
    n = 10_000
    rng = np.random.default_rng(0)
    w = rng.dirichlet([0.5, 1.0, 2.0], size=n)
    w[: n // 3, 0] = 0.0
    w = w / w.sum(axis=1, keepdims=True)
    p = rng.dirichlet(np.full(n, 0.5))
    p[0] = 1e-12
    p = p / p.sum()
    ref = mp_pml(w, p)
    for g, r in zip(pml(w, p), ref, strict=True):
        _close(g, r, rel=1e-9)
    _close(eps_min(w, p), max(ref), rel=1e-9)


# --------------------------------------------------------------------------------------
# additive: Laplace, Gaussian, pLDP
# --------------------------------------------------------------------------------------

def mp_laplace_eps(b: float, p_min: float) -> Any:
    """``2/b - log(e^{2/b} p_min + 1 - p_min)``, divided through by ``e^{2/b}`` so that
    60 digits suffice even for ``2/b = 2e300``."""
    t = 2 / M(b)
    return -mp.log(M(p_min) + (1 - M(p_min)) * mp.exp(-t))


@pytest.mark.parametrize("b,p_min", [
    (1e-3, 1e-12), (2 / 1e-9, 0.5), (2 / 1e-9, 1e-12), (2 / 50, 0.5), (2 / 50, 1e-12),
    (1e-6, 0.3), (1e9, 0.25), (1.0, 0.5), (1e-300, 0.5), (3.0, 1e-300),
])
def test_laplace_eps(b: float, p_min: float) -> None:
    f = _fn("pmlkit.additive", "laplace_eps")
    _close(f(b, p_min), mp_laplace_eps(b, p_min), rel=1e-11, abs_=1e-300)


@pytest.mark.parametrize("eps,p_min", [
    (1e-9, 0.5), (1e-9, 1e-12), (50.0, 1e-30), (1.0, 1e-12), (20.0, 1e-12), (0.3, 0.3),
    (math.log(2) * (1 - 1e-12), 0.5), (35.0, 1e-16),
])
def test_laplace_scale_inverts_laplace_eps(eps: float, p_min: float) -> None:
    f = _fn("pmlkit.additive", "laplace_scale")
    b = f(eps, p_min)
    assert math.isfinite(b) and b > 0
    # the documented root-finding tolerance is relative; check the eps it achieves in mpmath
    _close(mp_laplace_eps(b, p_min), M(eps), rel=1e-8)
    # and that it is on the safe side or within tolerance
    assert mp_laplace_eps(b, p_min) <= M(eps) * (1 + 1e-8)


def test_laplace_scale_beyond_eps_max_needs_no_noise() -> None:
    """Documented end: eps >= -log p_min (safely, beyond its rounding margin) is met by any
    b (returns 0.0, no noise needed); eps tied with the computed -log p_min gets noise."""
    f = _fn("pmlkit.additive", "laplace_scale")
    assert f(50.0, 0.5) == 0.0
    assert f(-math.log(1e-12) * (1 + 1e-12), 1e-12) == 0.0
    assert 0.0 < f(-math.log(1e-12), 1e-12) < 0.1


def mp_gauss_violation(sigma: float, prior: tuple[float, float], eps: float) -> Any:
    """``P_Y(E_eps)``: ``E = {y > t+} u {y < -t-}``, with, for ``y >= 0``
    ``pml(y) > eps  <=>  e^{-2y/s^2} < (e^-eps - P(+1)) / P(-1)``."""
    pm, pp = M(prior[0]), M(prior[1])
    s, e = M(sigma), M(eps)

    def tail_above(t: Any, mean: Any) -> Any:  # P(mean + s Z > t)
        return mp.erfc((t - mean) / (s * mp.sqrt(2))) / 2

    total = mp.mpf(0)
    if mp.exp(-e) > pp:
        t_plus = -(s ** 2) / 2 * mp.log((mp.exp(-e) - pp) / pm)
        total += pp * tail_above(t_plus, 1) + pm * tail_above(t_plus, -1)
    if mp.exp(-e) > pm:
        t_minus = -(s ** 2) / 2 * mp.log((mp.exp(-e) - pm) / pp)
        total += pp * tail_above(t_minus, -1) + pm * tail_above(t_minus, 1)
    return total


def test_mp_gauss_violation_formula_against_quadrature() -> None:
    """Validate the reference itself by integrating the density of Y over {pml > eps}."""
    sigma, prior, eps = 1.5, (0.3, 0.7), 0.2
    s, pm, pp = mp.mpf(sigma), mp.mpf(prior[0]), mp.mpf(prior[1])

    def dens(y: Any, x: int) -> Any:
        return mp.npdf(y, x, s)

    def pml(y: Any) -> Any:
        fy = pm * dens(y, -1) + pp * dens(y, 1)
        return mp.log(max(dens(y, -1), dens(y, 1)) / fy)

    ref = mp_gauss_violation(sigma, prior, eps)
    t_plus = -(s ** 2) / 2 * mp.log((mp.exp(-eps) - pp) / pm)
    t_minus = -(s ** 2) / 2 * mp.log((mp.exp(-eps) - pm) / pp)
    assert pml(t_plus) == pytest.approx(float(eps)) and pml(-t_minus) == pytest.approx(eps)
    mass = mp.quad(lambda y: pm * dens(y, -1) + pp * dens(y, 1), [t_plus, mp.inf]) \
        + mp.quad(lambda y: pm * dens(y, -1) + pp * dens(y, 1), [-mp.inf, -t_minus])
    assert abs(mass - ref) < mp.mpf("1e-25")


@pytest.mark.parametrize("sigma,prior,eps", [
    (1.5, (0.5, 0.5), 1e-9), (1.5, (0.3, 0.7), 1e-9), (2.0, (1e-12, 1 - 1e-12), 20.0),
    (1.5, (0.5, 0.5), 50.0), (1e-3, (0.5, 0.5), 0.5), (1e3, (0.4, 0.6), 1e-9),
    (0.05, (0.3, 0.7), 0.1), (1.5, (0.5, 0.5), math.log(2) - 1e-12),
])
def test_gaussian_violation_probability(sigma: float, prior: tuple[float, float],
                                        eps: float) -> None:
    f = _fn("pmlkit.additive", "gaussian_violation_probability")
    ref = mp_gauss_violation(sigma, prior, eps)
    got = f(sigma, prior, eps)
    assert 0.0 <= got <= 1.0
    _close(got, ref, rel=1e-7, abs_=1e-15)


def mp_pldp_sigma(eps: float, delta: float) -> Any:
    f = mp.findroot(lambda x: mp.log(mp.erfc(x)) - mp.log(M(delta)),
                    mp.sqrt(-mp.log(M(delta))) if delta < 0.5 else mp.mpf(0.1))
    return mp.sqrt(2) * (f + mp.sqrt(f * f + M(eps))) / M(eps)


@pytest.mark.parametrize("eps,delta", [
    (1e-9, 1e-6), (50.0, 1e-6), (1.0, 1e-300), (1.0, 0.9), (1e-9, 1e-300), (50.0, 0.5),
])
def test_pldp_sigma(eps: float, delta: float) -> None:
    f = _fn("pmlkit.additive", "pldp_sigma")
    _close(f(eps, delta), mp_pldp_sigma(eps, delta), rel=1e-9)


# --------------------------------------------------------------------------------------
# worst case over an l1-ball (exact greedy) at N = 10,000 with p_min = 1e-12
# --------------------------------------------------------------------------------------

def mp_min_over_ball(w_col: np.ndarray, p: np.ndarray, beta: float) -> Any:
    """``min Q . w`` over the l1-ball: move ``beta/2`` of mass (at most ``p_i`` from entry i)
    from the largest ``w`` entries onto a smallest one (fractional knapsack), in
    mpmath; the sort is by the float values, the arithmetic exact."""
    order = np.argsort(-w_col, kind="stable")
    budget = M(beta) / 2
    low = mp.mpf(float(w_col.min()))
    total = mp.fsum(M(p[i]) * M(w_col[i]) for i in range(p.size))
    for i in order:
        if budget <= 0 or M(w_col[i]) <= low:
            break
        take = min(budget, M(p[i]))
        total -= take * (M(w_col[i]) - low)
        budget -= take
    return total


@pytest.mark.parametrize("beta", [1e-12, 1e-6, 0.3, 1.999999])
def test_leakage_capacity_n_10000(beta: float) -> None:
    capacity = _fn("pmlkit.worstcase", "leakage_capacity")
    ball_cls = _fn("pmlkit.sets", "L1Ball")
    n = 10_000
    rng = np.random.default_rng(1)
    w = rng.dirichlet([0.5, 2.0], size=n)
    p = rng.dirichlet(np.full(n, 0.3))
    p[0] = 1e-12
    p = p / p.sum()
    ref = max(mp.log(M(w[:, j].max()) / mp_min_over_ball(w[:, j], p, beta))
              for j in range(2))
    _close(capacity(w, ball_cls(p, beta)), ref, rel=1e-9)


@pytest.mark.parametrize("sigma,q_hat,m,eps", [
    (1.5, 0.7, 10**12, 0.3),            # m = 10^12: an interval of width ~5e-6
    (1.5, 1 - 1e-12, 10**12, 0.3),      # p_min = 1e-12 at the edge of the simplex
    (2.0, 0.5, 10**12, 1e-9),           # eps = 1e-9
    (2.0, 0.3, 10**4, 50.0),            # eps = 50: nothing violates
])
def test_gaussian_delta1_and_tradeoff(sigma: float, q_hat: float, m: int, eps: float) -> None:
    """``delta_1 = sup`` over the ball of ``P_Y(E_eps(P))``: at least the mpmath value on a
    201-point grid of the interval (endpoints included), and above it by no more than the
    grid can miss (the function is smooth on such short intervals)."""
    delta1 = _fn("pmlkit.additive", "gaussian_delta1")
    tradeoff = _fn("pmlkit.additive", "gaussian_tradeoff")
    l1_radius = _fn("pmlkit.estimation", "l1_radius")
    delta2 = 1e-6
    beta = l1_radius(delta2, m=m, n=2)
    lo, hi = max(q_hat - beta / 2, 0.0), min(q_hat + beta / 2, 1.0)
    grid = [M(lo) + (M(hi) - M(lo)) * k / 200 for k in range(201)]
    ref = max(mp_gauss_violation(sigma, (1 - q, q), eps) for q in grid)
    got = delta1(sigma, (1 - q_hat, q_hat), beta=beta, eps=eps)
    assert math.isfinite(got) and 0.0 <= got <= 1.0
    assert mp.mpf(got) >= ref - mp.mpf("1e-12") * max(1, ref)
    assert mp.mpf(got) <= ref + mp.mpf("1e-9")
    e_out, d_out = tradeoff(sigma, (1 - q_hat, q_hat), m=m, delta2=delta2, eps=eps,
                            curve="direct")
    assert e_out == eps
    _close(d_out, M(got) + M(delta2) - M(got) * M(delta2), rel=1e-12, abs_=1e-300)
