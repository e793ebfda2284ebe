"""Figure "upperbound": the Thm l1gamma bound, the exact sensitivity, and random clouds.

For a mechanism ``W`` that is eps-PML for ``p``, the leakage sensitivity over the l1-ball
is ``S_p(W, B_beta(p)) = max_{Q in B_beta(p)} D_inf(P_Y || Q_Y)`` (paper, after
Cor. leakagebound), with ``P_Y = p W``, ``Q_Y = Q W`` and
``D_inf(P_Y || Q_Y) = max_y log(P_Y(y) / Q_Y(y))``. The figure shows, against ``beta``:

* ``random``: ``D_inf(P_Y || Q_Y)`` for random ``Q`` (10,000 per panel by default), at
  ``beta = ||Q - p||_1`` (the paper's cloud, labelled "true" there);
* ``bound``: the Thm l1gamma bound (:func:`pmlkit.bounds.sensitivity_bound`);
* ``exact``: pmlkit's exact sensitivity over ``B_beta(p)``
  (:func:`pmlkit.worstcase.leakage_sensitivity`, the greedy of math §4), which is
  the upper envelope of any cloud; the paper only shows the bound.

Panels (math §7): (a) Example boundExtrMech, ``p = (.4,.2,.2,.2)``, ``eps = log(9/8)``
(first privacy region); (b) a 2-singular mechanism, ``N = 10``
(``W[i, i] = W[i, i+1 mod N] = 1/2``), uniform ``p``, ``eps = log(N/2) = log 5``.

Random ``Q``: ``Q = p + s (D - p)`` with ``D ~ Dirichlet(1, ..., 1)`` and ``s`` chosen so
that ``||Q - p||_1`` is uniform on ``(0, beta_max)``, ``beta_max = 0.98 * 2 p_min`` (the
range of Thm l1gamma); draws with ``s > 1`` (which could leave the simplex) are redrawn.

CSV columns: ``panel, beta, d_inf, kind`` (kind in random / bound / exact).
"""

from __future__ import annotations

import math
import pathlib
from typing import TYPE_CHECKING, Any

import numpy as np

from .._deprecation import renamed_parameter
from .._optional import require
from .base import Check, check_iterations, new_figure, progress_bar, research_generator

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    import pandas as pd

NAME = "upperbound"
COLUMNS = ["panel", "beta", "d_inf", "kind"]
DEFAULT_RANDOM = 10_000
GRID = 200
#: relative slack for comparing two floating-point evaluations of the same quantity
RTOL = 1e-9


def _two_singular(n: int) -> np.ndarray:
    w = np.zeros((n, n))
    idx = np.arange(n)
    w[idx, idx] = 0.5
    w[idx, (idx + 1) % n] = 0.5
    return w


#: panel -> (mechanism, reference prior, eps for which W is eps-PML w.r.t. the prior, title)
PANELS: dict[str, tuple[np.ndarray, np.ndarray, float, str]] = {
    "a": (
        np.array([[0.325, 0.225, 0.225, 0.225],
                  [0.45, 0.1, 0.225, 0.225],
                  [0.45, 0.225, 0.1, 0.225],
                  [0.45, 0.225, 0.225, 0.1]]),
        np.array([0.4, 0.2, 0.2, 0.2]),
        math.log(9 / 8),
        "(a) Example boundExtrMech, eps = log(9/8)",
    ),
    "b": (_two_singular(10), np.full(10, 0.1), math.log(5.0),
          "(b) 2-singular mechanism, N = 10, eps = log 5"),
}

CAPTION = (
    "Thm l1gamma: the bound on the leakage sensitivity S_p(W, B_beta(p)) (kind=bound) "
    "against D_inf(P_Y || Q_Y) for random distributions Q at l1-distance beta from p "
    "(kind=random; 10,000 per panel by default, Q = p + s (D - p) with D ~ Dirichlet(1) "
    "and beta uniform on (0, 0.98 * 2 p_min)), and pmlkit's exact sensitivity over the "
    "ball (kind=exact, the upper envelope of every such cloud; the paper shows only the "
    "bound). (a) Example boundExtrMech, p = (.4,.2,.2,.2), eps = log(9/8); (b) 2-singular "
    "mechanism, N = 10, uniform p, eps = log 5. The bound is tight in (a) (extremal "
    "mechanism, first privacy region) and in (b) (every column has a zero)."
)


def d_inf(w: np.ndarray, p: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """``D_inf(P_Y || Q_Y) = max_y log(P_Y(y) / Q_Y(y))`` for each row ``Q`` of ``qs``.

    ``P_Y = p @ W``, ``Q_Y = Q @ W``; the max runs over outcomes with ``P_Y(y) > 0``
    (``+inf`` if some such ``Q_Y(y) = 0``). This is the divergence whose maximum over
    ``Q`` in the ball is the leakage sensitivity (paper, before Example boundExtrMech);
    equivalently ``max_y [pml(W, Q)(y) - pml(W, p)(y)]`` (:func:`pmlkit.leakage.pml`),
    evaluated here for many ``Q`` at once."""
    py = p @ w
    qy = qs @ w
    support = py > 0
    with np.errstate(divide="ignore"):
        ratio = np.log(py[support])[None, :] - np.log(qy[:, support])
    worst: np.ndarray = ratio.max(axis=1)
    return worst


def random_cloud(p: np.ndarray, beta_max: float, k: int,
                 gen: np.random.Generator) -> np.ndarray:
    """``k`` random distributions at l1-distance uniform on ``(0, beta_max)`` from ``p``."""
    out = np.empty((0, p.size))
    while out.shape[0] < k:
        need = k - out.shape[0]
        d = gen.dirichlet(np.ones(p.size), size=need)
        target = gen.uniform(0.0, beta_max, size=need)
        dist = np.abs(d - p).sum(axis=1)
        s = target / dist
        keep = s <= 1.0
        q = p + s[keep, None] * (d[keep] - p)
        out = np.vstack([out, np.clip(q, 0.0, None)])
    cloud: np.ndarray = out[:k] / out[:k].sum(axis=1, keepdims=True)
    return cloud


def _value(result: Any) -> float:
    """A float from a library result (a number, or an object with ``.value``)."""
    return float(getattr(result, "value", result))


def exact_sensitivity(panel: str, beta: float) -> float:
    """Exact ``S_p(W, B_beta(p))`` of a panel (:func:`pmlkit.worstcase.leakage_sensitivity`)."""
    from ..sets import L1Ball
    from ..worstcase import leakage_sensitivity

    w, p, _, _ = PANELS[panel]
    return _value(leakage_sensitivity(w, p, L1Ball(p, beta)))


@renamed_parameter(version="0.2", seed="rng")
def compute(*, iterations: int | None = None, rng: int = 0,
            data: pathlib.Path | None = None, progress: bool = False) -> pd.DataFrame:
    """Tidy data of Figure "upperbound".

    ``iterations`` is the number of random distributions per panel (default 10,000)."""
    pd = require("pandas", "the paper's experiments")

    from ..bounds import sensitivity_bound

    k = check_iterations(iterations, DEFAULT_RANDOM)
    gen = research_generator(rng)
    frames = []
    for panel, (w, p, eps, _) in PANELS.items():
        beta_max = 0.98 * 2 * float(p.min())
        grid = np.linspace(0.0, beta_max, GRID + 1)
        qs = random_cloud(p, beta_max, k, gen)
        frames.append(pd.DataFrame({"panel": panel, "beta": np.abs(qs - p).sum(axis=1),
                                    "d_inf": d_inf(w, p, qs), "kind": "random"}))
        bound = np.asarray(sensitivity_bound(p, eps=eps, beta=grid), dtype=float)
        exact = [exact_sensitivity(panel, float(b))
                 for b in progress_bar(grid, enabled=progress, desc=f"upperbound {panel}")]
        frames.append(pd.DataFrame({"panel": panel, "beta": grid, "d_inf": bound,
                                    "kind": "bound"}))
        frames.append(pd.DataFrame({"panel": panel, "beta": grid, "d_inf": exact,
                                    "kind": "exact"}))
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def plot(df: pd.DataFrame) -> matplotlib.figure.Figure:
    """Two panels: random cloud (dots), bound and exact curves against beta."""
    fig, axes = new_figure(len(PANELS))
    for ax, (panel, (_, _, _, title)) in zip(axes, PANELS.items(), strict=True):
        g = df[df["panel"] == panel]
        r = g[g["kind"] == "random"]
        ax.scatter(r["beta"], r["d_inf"], s=2, alpha=0.3, color="C0", rasterized=True,
                   label=f"random Q: D_inf(P_Y||Q_Y) (n = {len(r):,})")
        e = g[g["kind"] == "exact"]
        ax.plot(e["beta"], e["d_inf"], color="k", lw=1.5, label="exact S (pmlkit)")
        b = g[g["kind"] == "bound"]
        ax.plot(b["beta"], b["d_inf"], color="C3", ls="--", lw=1.5, label="bound (Thm l1gamma)")
        ax.set_xlabel("l1 radius beta = ||P - Q||_1")
        ax.set_ylabel("leakage increase (nats)")
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize="small")
    return fig


def check(df: pd.DataFrame) -> list[Check]:
    """Bound >= exact on the grid; every random point <= exact at its own beta (the exact
    sensitivity is re-evaluated at each random point's beta, not interpolated)."""
    out: list[Check] = []
    for panel in PANELS:
        g = df[df["panel"] == panel]
        b = g[g["kind"] == "bound"].sort_values("beta")
        e = g[g["kind"] == "exact"].sort_values("beta")
        bv, ev = b["d_inf"].to_numpy(float), e["d_inf"].to_numpy(float)
        same_grid = np.array_equal(b["beta"].to_numpy(float), e["beta"].to_numpy(float))
        slack = RTOL * np.maximum(1.0, np.abs(ev))
        ok = same_grid and bool(np.all(bv >= ev - slack))
        gap = float(np.max(ev - bv)) if same_grid else math.nan
        out.append(Check(f"panel {panel}: every bound point >= the exact sensitivity at the "
                         "same beta (Thm l1gamma)", ok,
                         f"{len(bv)} grid points; max(exact - bound) = {gap:.3g}"))
        tight = float(np.max(np.abs(bv - ev))) if same_grid else math.nan
        out.append(Check(f"panel {panel}: the bound is attained (equality case of "
                         "Thm l1gamma)", bool(tight <= 1e-6),
                         f"max |bound - exact| = {tight:.3g}"))
        r = g[g["kind"] == "random"]
        betas = r["beta"].to_numpy(float)
        vals = r["d_inf"].to_numpy(float)
        uniq, inv = np.unique(betas, return_inverse=True)
        ex = np.array([exact_sensitivity(panel, float(x)) for x in uniq])[inv]
        excess = vals - ex
        ok_r = bool(np.all(excess <= RTOL * np.maximum(1.0, np.abs(ex))))
        out.append(Check(f"panel {panel}: every random point lies on or below the exact "
                         "sensitivity evaluated at its own beta", ok_r,
                         f"{vals.size} points; max(d_inf - exact) = {excess.max():.3g} "
                         f"(relative slack {RTOL:g} for rounding)"))
    return out
