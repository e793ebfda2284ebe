"""The joint guarantee a table release writes into its manifest holds for exactly the
released mechanisms, checked by an independent generic LP (scipy ``linprog``): for each
output tuple ``y`` of the Kronecker product ``W`` of the recorded mechanisms, the least
``Q . W[:, y]`` over the recorded set (a joint l1 ball, or joint distributions whose every
marginal lies in its own l1 ball: the chain-rule certificate's set), and the worst case
``max_y log(max_x W[x, y] / min_Q Q . W[:, y])`` is at most the certified eps."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from pmlkit import Mechanism
from pmlkit.release import release_table


def _worst_over_marginal_balls(w: np.ndarray, sizes: list[int],
                               balls: list[dict[str, Any]]) -> float:
    n = int(np.prod(sizes))
    idx = np.array(np.unravel_index(np.arange(n), sizes))  # row-major joint alphabet
    nv = n + 2 * sum(sizes)  # Q, then (u_k, v_k) with marginal_k(Q) - center_k = u_k - v_k
    a_eq = [np.r_[np.ones(n), np.zeros(nv - n)]]
    b_eq = [1.0]
    a_ub: list[np.ndarray] = []
    b_ub: list[float] = []
    off = n
    for k, (nk, ball) in enumerate(zip(sizes, balls, strict=True)):
        for a in range(nk):
            row = np.zeros(nv)
            row[:n] = idx[k] == a
            row[off + a], row[off + nk + a] = -1.0, 1.0
            a_eq.append(row)
            b_eq.append(ball["center"][a])
        row = np.zeros(nv)
        row[off:off + 2 * nk] = 1.0
        a_ub.append(row)
        b_ub.append(ball["radius"])
        off += 2 * nk
    worst = -math.inf
    for y in range(w.shape[1]):
        if w[:, y].max() == 0:
            continue  # never released
        cost = np.r_[w[:, y], np.zeros(nv - n)]
        r = linprog(cost, A_ub=np.array(a_ub), b_ub=b_ub, A_eq=np.array(a_eq), b_eq=b_eq,
                    bounds=(0, None), method="highs")
        assert r.status == 0
        worst = max(worst, math.log(w[:, y].max() / r.fun) if r.fun > 0 else math.inf)
    return worst


@pytest.mark.parametrize("m, sizes, eps", [(100, (5, 2), 2.0), (150, (4, 3), 1.0)])
def test_manifest_joint_guarantee_holds_by_an_independent_lp(
        tmp_path: Path, m: int, sizes: tuple[int, int], eps: float) -> None:
    rng = np.random.default_rng(m)
    n = m + 100
    df = pd.DataFrame({c: rng.choice([f"{c}{i}" for i in range(k)], n)
                       for c, k in zip("ab", sizes, strict=True)})
    df[:m].to_csv(tmp_path / "ref.csv", index=False)
    df[m:].to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "release.toml").write_text(
        f'reference = "ref.csv"\ninput = "in.csv"\noutput = "out.csv"\nepsilon = {eps}\n'
        'delta = 1e-3\nseed = 1\nsearch_steps = 2\n'
        '[columns.a]\ntype = "categorical"\nutility = "mutual_information"\n'
        '[columns.b]\ntype = "categorical"\nutility = "mutual_information"\n')
    release_table(tmp_path / "release.toml")
    man = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    g = man["joint_guarantee"]
    mechs = [Mechanism.from_dict(man["privatized"][c]["mechanism"]) for c in g["columns"]]
    assert [list(mm.input_labels) for mm in mechs] == g["column_labels"]
    w = mechs[0].matrix
    for mm in mechs[1:]:
        w = np.kron(w, mm.matrix)
    s = g["guarantee"]["set"]
    if s["kind"] == "marginals":  # the chain-rule certificate's set
        worst = _worst_over_marginal_balls(w, [mm.n_inputs for mm in mechs], s["sets"])
    else:
        assert s["kind"] == "l1_ball"
        worst = _worst_over_marginal_balls(w, [w.shape[0]], [s])
    assert worst <= g["guarantee"]["certified_eps"] + 1e-9
    assert g["guarantee"]["certified_eps"] <= g["guarantee"]["eps"] <= eps
    if g["kind"] == "exact":  # the exact certificate is the worst case itself
        assert math.isclose(worst, g["guarantee"]["certified_eps"], abs_tol=1e-8)
