"""c-interior PML (pmlkit.interior) against an independent LP over the floored box
(linear-fractional per output, made linear by Charnes-Cooper), vertex enumeration, the
LDP limit, and a Monte Carlo check of the Dobrushin contraction."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog

import pmlkit as pk
from pmlkit.errors import ValidationError
from pmlkit.interior import dobrushin_coefficient, interior_eps
from pmlkit.leakage import ldp_epsilon


def charnes_cooper(w: np.ndarray, c: float) -> float:
    """max over {Q >= c, sum Q = 1} of max_y max_x W[x, y] / (Q . W[:, y]).

    For one (x, y): maximise W[x, y] / (Q . w) with Q in the box. Charnes-Cooper:
    R = s Q, s = 1 / (Q . w) >= 0, maximise W[x, y] s subject to R . w = 1,
    sum R = s, R >= c s."""
    n, m = w.shape
    best = 0.0
    for y in range(m):
        col = w[:, y]
        if col.max() == 0:
            continue
        # variables (R_1..R_n, s); maximise s (then times max_x W[x, y])
        cost = np.zeros(n + 1)
        cost[-1] = -1.0
        a_eq = np.vstack([np.append(col, 0.0), np.append(np.ones(n), -1.0)])
        b_eq = np.array([1.0, 0.0])
        a_ub = np.hstack([-np.eye(n), np.full((n, 1), c)])  # c s - R_i <= 0
        res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq, b_eq=b_eq,
                      bounds=[(0, None)] * (n + 1), method="highs")
        if res.status == 3:  # unbounded: the column can be made 0 by a prior in the box
            return math.inf
        assert res.status == 0
        best = max(best, math.log(col.max() * res.x[-1]))
    return best


def vertices(n: int, c: float) -> list[np.ndarray]:
    """The floored box's vertices: c everywhere, the rest 1 - N c on one entry."""
    return [np.full(n, c) + (1 - n * c) * np.eye(n)[i] for i in range(n)]


@pytest.mark.parametrize("seed", range(30))
def test_equals_lp_over_floored_box(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    m = int(rng.integers(2, 6))
    w = rng.dirichlet(np.ones(m), size=n)
    c = float(rng.uniform(1e-3, 1.0 / n))
    got = interior_eps(w, c)
    assert got == pytest.approx(charnes_cooper(w, c), abs=1e-9)
    # PML is convex in the prior: a vertex of the box attains the worst case
    by_vertex = max(pk.eps_min(w, v) for v in vertices(n, c))
    assert got == pytest.approx(by_vertex, abs=1e-9)


def test_zeros_in_columns() -> None:
    w = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])
    for c in (0.01, 0.1, 0.3):
        assert interior_eps(w, c) == pytest.approx(charnes_cooper(w, c), abs=1e-9)
    assert interior_eps(w, 0.0) == math.inf == ldp_epsilon(w)


@pytest.mark.parametrize("seed", range(5))
def test_limit_c_to_zero_is_ldp(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    w = rng.dirichlet(np.ones(4), size=3)
    ldp = ldp_epsilon(w)
    vals = [interior_eps(w, c) for c in (1e-2, 1e-4, 1e-6, 1e-9)]
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(vals))  # grows as c falls
    assert vals[-1] == pytest.approx(ldp, abs=1e-6)
    assert interior_eps(w, 0.0) == ldp
    # at c = 1/N: the PML at the uniform prior
    assert interior_eps(w, 1 / 3) == pytest.approx(pk.eps_min(w, np.full(3, 1 / 3)), abs=1e-12)


def test_dobrushin_contraction_monte_carlo() -> None:
    rng = np.random.default_rng(7)
    w = rng.dirichlet(np.ones(5), size=4)
    eta = dobrushin_coefficient(w)
    brute = max(0.5 * np.abs(w[i] - w[j]).sum() for i in range(4) for j in range(4))
    assert eta == pytest.approx(brute, abs=1e-15)
    for _ in range(2000):
        p, q = rng.dirichlet(np.full(4, 0.3), size=2)
        tv_in = 0.5 * np.abs(p - q).sum()
        tv_out = 0.5 * np.abs(p @ w - q @ w).sum()
        assert tv_out <= eta * tv_in + 1e-12
    # attained by point masses on the maximising rows
    i, j = max(((i, j) for i in range(4) for j in range(4)),
               key=lambda ij: np.abs(w[ij[0]] - w[ij[1]]).sum())
    assert 0.5 * np.abs(w[i] - w[j]).sum() == pytest.approx(eta, abs=1e-15)


def test_errors_and_public() -> None:
    assert pk.interior_eps is interior_eps
    w = [[0.8, 0.2], [0.3, 0.7]]
    for bad in (-0.1, 0.6, math.nan, "x"):
        with pytest.raises(ValidationError, match="c must be"):
            interior_eps(w, bad)  # type: ignore[arg-type]


def test_hockey_stick_contraction_monte_carlo() -> None:
    from pmlkit.interior import hockey_stick_coefficient

    rng = np.random.default_rng(8)

    def e_gamma(a: np.ndarray, b: np.ndarray, g: float) -> np.ndarray:
        return np.maximum(a - g * b, 0.0).sum(axis=-1)

    for _ in range(20):
        n, m = int(rng.integers(2, 5)), int(rng.integers(2, 5))
        w = rng.dirichlet(np.full(m, 0.5), size=n)
        g = 1.0 + float(rng.exponential(1.0))
        eta = hockey_stick_coefficient(w, g)
        brute = max(e_gamma(w[i], w[j], g) for i in range(n) for j in range(n))
        assert eta == pytest.approx(float(brute), abs=1e-15)
        p, q = rng.dirichlet(np.full(n, 0.3), size=(2, 5000))
        num, den = e_gamma(p @ w, q @ w, g), e_gamma(p, q, g)
        assert (num <= eta * den + 1e-12).all()
    assert hockey_stick_coefficient(w, 1.0) == pytest.approx(dobrushin_coefficient(w))


@pytest.mark.parametrize("c", [0.0, 0.05, 0.2, 0.35])
def test_binary_interior_extremal_monte_carlo(c: float) -> None:
    """Random binary-input mechanisms within the c-interior budget never contract less
    than the closed form; the returned mechanism meets the budget and attains it."""
    from pmlkit.interior import binary_interior_extremal

    eps = 0.8
    eta, w_star = binary_interior_extremal(eps, c)
    assert interior_eps(w_star, c) <= eps + 1e-12
    assert dobrushin_coefficient(w_star) == pytest.approx(eta, abs=1e-12)
    rng = np.random.default_rng(int(100 * c))
    seen = 0
    for _ in range(1000):
        w = rng.dirichlet(np.full(int(rng.integers(2, 5)), 0.6), size=2)
        if interior_eps(w, c) <= eps:
            seen += 1
            assert dobrushin_coefficient(w) <= eta + 1e-12
    assert seen > 20
