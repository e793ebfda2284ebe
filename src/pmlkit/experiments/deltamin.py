"""Figure "deltaminplot": the (eps', delta) trade-off of a design made for an estimate.

Panel a (Cor. deltamin, eq. rrdeltamin): ``delta_min(eps')`` against the leakage target
``eps' > eps`` for ``N = 20``, ``eps = log 5`` and several sample sizes ``m``; values of the
bound above one are vacuous and shown as 1 (as in the paper).

Panel b (eq. epsmax with eq. betastar): ``eps'(delta = 1e-5)`` against ``m`` for several
design parameters ``eps``, with ``beta = l1_radius(1e-5, m=m, n=20)``; ``inf`` where the bound is
vacuous (``beta >= 2 e^-eps``).

Every number comes from :func:`pmlkit.bounds.delta_min`, :func:`pmlkit.bounds.eps_bound`
and :func:`pmlkit.estimation.l1_radius`; this module only chooses the grids.

CSV columns: ``panel, m, eps, eps_target, delta_min, eps_prime`` (a: ``eps_prime`` empty;
b: ``eps_target`` and ``delta_min`` empty).
"""

from __future__ import annotations

import math
import pathlib
from typing import TYPE_CHECKING, Any

import numpy as np

from .._deprecation import renamed_parameter
from .._optional import require
from .base import Check, check_iterations, new_figure

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    import pandas as pd

NAME = "deltamin"
N = 20
EPS_A = math.log(5.0)
M_A = (500, 1_000, 2_000, 5_000)
DELTA_B = 1e-5
EPS_B = (math.log(2.0), math.log(5.0), math.log(10.0))
COLUMNS = ["panel", "m", "eps", "eps_target", "delta_min", "eps_prime"]

CAPTION = (
    "Trade-off between leakage increase and failure probability for a mechanism designed "
    f"eps-PML for an estimate from m samples, N = {N}. (a) Cor. deltamin: delta_min(eps') "
    f"against eps' for eps = log 5 and m in {list(M_A)} (bound values above 1 are vacuous "
    "and shown as 1). (b) eq. epsmax: eps'(delta = 1e-5) against m with "
    "beta = beta*(1e-5) of the paper's Section 4.4, for eps in {log 2, log 5, log 10}; "
    "dashed lines "
    "mark eps (the guarantee under the estimate). Computed with pmlkit.bounds.delta_min, "
    "pmlkit.bounds.eps_bound and pmlkit.estimation.l1_radius."
)


@renamed_parameter(version="0.2", seed="rng")
def compute(*, iterations: int | None = None, rng: int = 0,
            data: pathlib.Path | None = None, progress: bool = False) -> pd.DataFrame:
    """Tidy data of Figure "deltaminplot" (deterministic: ``rng``/``data`` are unused).

    ``iterations`` is the number of grid points per curve (default 120)."""
    pd = require("pandas", "the paper's experiments")

    from ..bounds import delta_min, eps_bound
    from ..estimation import l1_radius

    k = check_iterations(iterations, 120)
    k = max(k, 3)
    rows: list[dict[str, Any]] = []
    # panel a: eps' from just above eps to eps + 2 (the bound is 1 near eps, ~0 far away)
    targets = EPS_A + np.linspace(0.0, 2.0, k + 1)[1:]
    for m in M_A:
        dm = np.asarray(delta_min(eps=EPS_A, eps_target=targets, m=m, n=N), dtype=float)
        rows.extend({"panel": "a", "m": m, "eps": EPS_A, "eps_target": float(t),
                     "delta_min": float(d)} for t, d in zip(targets, dm, strict=True))
    # panel b: m on a log grid from 10^2 to 10^7
    ms = np.unique(np.round(np.logspace(2, 7, k)).astype(np.int64))
    for eps in EPS_B:
        for m in ms:
            beta = l1_radius(DELTA_B, m=int(m), n=N)
            rows.append({"panel": "b", "m": int(m), "eps": eps,
                         "eps_prime": eps_bound(eps=eps, beta=beta)})
    return pd.DataFrame(rows, columns=COLUMNS)


def plot(df: pd.DataFrame) -> matplotlib.figure.Figure:
    """Two panels: (a) delta_min vs eps' (log y), (b) eps'(1e-5) vs m (log x)."""
    fig, (ax_a, ax_b) = new_figure(2)
    a = df[df["panel"] == "a"]
    for m, g in a.groupby("m", sort=True):
        ax_a.plot(g["eps_target"], g["delta_min"], label=f"m = {int(m):,}")
    ax_a.set_yscale("log")
    ax_a.set_ylim(1e-30, 3.0)
    ax_a.set_xlabel("leakage target eps'")
    ax_a.set_ylabel("delta_min(eps')  [Cor. deltamin]")
    ax_a.set_title(f"(a) N = {N}, eps = log 5")
    ax_a.legend()
    b = df[df["panel"] == "b"]
    for i, (eps, g) in enumerate(b.groupby("eps", sort=True)):
        finite = np.isfinite(g["eps_prime"].to_numpy(dtype=float))
        line, = ax_b.plot(g["m"][finite], g["eps_prime"][finite],
                          label=f"eps' (eps = {eps:.3g})", color=f"C{i}")
        ax_b.axhline(eps, ls="--", color=line.get_color(), lw=1)
    ax_b.set_xscale("log")
    ax_b.set_xlabel("number of samples m")
    ax_b.set_ylabel("eps'(delta = 1e-5)  [eq. epsmax]")
    ax_b.set_title(f"(b) N = {N}, delta = 1e-5")
    ax_b.legend()
    return fig


def check(df: pd.DataFrame) -> list[Check]:
    """The figure's claims: delta_min is a probability that falls as eps' or m grows;
    eps' >= eps, falls with m and tends to eps; and the two panels are inverses of each
    other (re-evaluated through :func:`pmlkit.estimation.l1_failure_probability`)."""
    from ..bounds import delta_min
    from ..estimation import l1_radius

    out: list[Check] = []
    a = df[df["panel"] == "a"]
    d = a["delta_min"].to_numpy(dtype=float)
    in_range = bool(np.all((d >= 0) & (d <= 1)))
    out.append(Check("delta_min is a probability (vacuous values capped at 1)", in_range,
                     f"{d.size} points, range [{d.min():.3g}, {d.max():.3g}]"))
    mono_t = True
    for _, g in a.groupby("m"):
        g = g.sort_values("eps_target")
        mono_t &= bool(np.all(np.diff(g["delta_min"].to_numpy(dtype=float)) <= 0))
    out.append(Check("delta_min falls as the leakage target eps' grows", mono_t,
                     f"checked along each of {a['m'].nunique()} curves"))
    piv = a.pivot_table(index="eps_target", columns="m", values="delta_min")
    mono_m = bool(np.all(np.diff(piv.to_numpy(), axis=1) <= 0))
    out.append(Check("delta_min falls as the sample size m grows", mono_m,
                     f"checked at {len(piv)} values of eps'"))
    b = df[df["panel"] == "b"]
    ok_ge, ok_mono, tail = True, True, []
    for eps, g in b.groupby("eps"):
        e = g.sort_values("m")["eps_prime"].to_numpy(dtype=float)
        ok_ge &= bool(np.all(e >= eps))
        ok_mono &= bool(np.all(np.diff(e[np.isfinite(e)]) <= 0))
        tail.append(f"eps={eps:.3g}: eps'-eps={e[-1] - eps:.2e} at m={g['m'].max():,}")
    out.append(Check("eps'(1e-5) >= eps and falls with m towards eps", ok_ge and ok_mono,
                     "; ".join(tail)))
    # the two panels invert each other: delta_min(eps'(delta)) == delta
    worst = 0.0
    for eps, g in b.groupby("eps"):
        for m, e in zip(g["m"], g["eps_prime"], strict=True):
            if math.isfinite(e) and e > eps and l1_radius(DELTA_B, m=int(m), n=N) < 2:
                dm = delta_min(eps=eps, eps_target=float(e), m=int(m), n=N)
                worst = max(worst, abs(math.log(dm) - math.log(DELTA_B)))
    out.append(Check("panels agree: delta_min(eps'(1e-5)) = 1e-5 (Cor. deltamin inverts "
                     "eq. epsmax)", worst < 1e-6,
                     f"max |log delta_min - log 1e-5| = {worst:.2e}"))
    return out
