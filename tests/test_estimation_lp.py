"""The estimation design's repeated LP (constraints built once, objectives changing) against
scipy's own ``linprog(method="highs")`` on the same arguments: the same solution bit for bit
and the same status, so the designs built on it do not move.

The LPs are those the design solves: ``min c @ theta`` over ``{theta >= 0 : R theta = 1}``
(extreme rays) and the eps-PML polytope of a square mechanism (inequalities, equalities
and box bounds), with random objectives, and an infeasible one.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from pmlkit.design.estimation import _RepeatedLP


@pytest.mark.parametrize("seed", range(6))
def test_ray_lps_equal_linprog(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 6)), int(rng.integers(3, 12))
    rays = rng.random((n, k)) + 0.1
    rays[:, 0] = 1.0  # (the all-ones ray: always feasible)
    ones = np.ones(n)
    lp = _RepeatedLP(a_eq=rays, b_eq=ones, bounds=np.tile([0.0, np.inf], (k, 1)))
    for _ in range(8):
        c = rng.normal(size=k)
        want = linprog(c, A_eq=rays, b_eq=ones, bounds=(0, None), method="highs")
        status, x, _ = lp.solve(c)
        assert status == want.status == 0
        assert x is not None and x.tobytes() == want.x.tobytes()


@pytest.mark.parametrize("radius", [0.05, 0.8])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_polytope_lps_equal_linprog(n: int, radius: float) -> None:
    from pmlkit.design.linear import mechanism_polytope
    from pmlkit.sets import L1Ball

    rng = np.random.default_rng(n)
    center = rng.dirichlet(np.ones(n))
    poly = mechanism_polytope(L1Ball(center, radius), 1.0, n_outputs=n)
    # both forms: the 2NM inequalities for a small ball, the exact dual for a large one
    assert ("2NM" in poly.form) is bool(radius < 2 * center.min())
    lp = _RepeatedLP(a_ub=poly.A_ub, b_ub=poly.b_ub, a_eq=poly.A_eq, b_eq=poly.b_eq,
                     bounds=poly.bounds)
    for _ in range(6):
        c = rng.normal(size=poly.n_vars)
        want = linprog(c, A_ub=poly.A_ub, b_ub=poly.b_ub, A_eq=poly.A_eq, b_eq=poly.b_eq,
                       bounds=poly.bounds, method="highs")
        status, x, _ = lp.solve(c)
        assert status == want.status
        if want.status == 0:
            assert x is not None and x.tobytes() == want.x.tobytes()


def test_an_infeasible_lp_has_linprogs_status() -> None:
    a = np.array([[1.0, 1.0]])
    lp = _RepeatedLP(a_eq=a, b_eq=[-1.0], bounds=np.tile([0.0, np.inf], (2, 1)))
    want = linprog([1.0, 1.0], A_eq=a, b_eq=[-1.0], bounds=(0, None), method="highs")
    status, x, _ = lp.solve(np.array([1.0, 1.0]))
    assert status == want.status == 2
    assert x is None
