"""Figures "gaussexample" and "skewedgauss": (eps, delta) curves of the binary Gaussian
mechanism designed from an estimate, against the probabilistic-LDP baseline.

For noise ``sigma``, estimate ``p_hat = (P(-1), P(+1))`` from ``m`` samples and
``delta_2 = 1e-6`` (the probability that the true prior is outside the l1-ball of radius
``beta*(delta_2)``, eq. binarybeta), each inner ``eps`` on a grid gives one point of

* ``paper``: ``(eps*, delta*)`` with ``eps* = eps - log(1 - beta e^eps / 2)`` and
  ``delta* = delta_1 + delta_2 - delta_1 delta_2`` (Section "gauss");
* ``direct``: ``(eps, delta_1 + delta_2 - delta_1 delta_2)``, pmlkit's tighter curve
  (``delta_1`` is already a supremum over the ball; math §6);

both from :func:`pmlkit.additive.gaussian_tradeoff` (``delta_1`` by exact 1-D
maximisation, where the paper used a grid search). ``pldp``: the (eps, delta)-pLDP curve of
the same ``sigma`` (Zhao et al. 2019, Thm 8, sensitivity 2), ``eps = pldp_eps(sigma,
delta)`` on a log grid of ``delta`` (:func:`pmlkit.additive.pldp_eps`); it does not depend on
``p_hat`` or ``m`` (``m`` empty in the CSV).

Points whose ``eps*`` is infinite (``beta e^eps / 2 >= 1``) are not listed.

CSV columns: ``sigma, p_hat, m, method, eps, delta`` (``p_hat`` written ``"(P(-1), P(+1))"``).

Two registered figures share this module: :data:`GAUSS` (``gauss``: ``p_hat = (.5, .5)``,
``sigma = 1.5`` and ``2``) and :data:`GAUSS_SKEWED` (``gauss_skewed``:
``p_hat = (.3, .7)``, ``sigma = 1.5``).
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._deprecation import renamed_parameter
from .._optional import require
from .base import Check, check_iterations, new_figure, progress_bar

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    import pandas as pd

DELTA2 = 1e-6
M_GRID = (100, 1_000, 10_000, 100_000)
EPS_MAX = 3.0
#: delta* level at which the skewed and balanced curves are compared
SKEW_DELTA = 1e-5
COLUMNS = ["sigma", "p_hat", "m", "method", "eps", "delta"]
#: slack for comparing two floating-point evaluations of the same probability
RTOL = 1e-9


def _label(p_hat: tuple[float, float]) -> str:
    return f"({p_hat[0]:g}, {p_hat[1]:g})"


def pldp_delta(sigma: float, eps: float) -> float:
    """The pLDP curve's delta at ``eps`` for noise ``sigma``: the root in ``delta`` of
    ``pldp_eps(sigma, delta) = eps`` (:func:`pmlkit.additive.pldp_eps` is decreasing in
    delta), found by bisection on ``log delta`` (``brentq``, ``xtol`` 1e-13). ``1.0`` when even
    ``delta -> 1`` gives a larger eps, ``0.0`` below ``delta = 1e-300``.

    Examples
    --------
    The inverse of :func:`pmlkit.additive.pldp_eps` in delta:

    >>> from pmlkit.additive import pldp_eps
    >>> eps = pldp_eps(1.5, 1e-3)
    >>> round(pldp_delta(1.5, eps) / 1e-3, 6)
    1.0
    """
    from scipy.optimize import brentq

    from ..additive import pldp_eps

    def f(log_d: float) -> float:
        return pldp_eps(sigma, math.exp(log_d)) - eps

    lo, hi = math.log(1e-300), math.log(1 - 1e-12)
    if f(hi) > 0:
        return 1.0
    if f(lo) < 0:
        return 0.0
    return math.exp(brentq(f, lo, hi, xtol=1e-13))


@dataclass(frozen=True)
class GaussFigure:
    """One Gaussian figure: ``NAME``, ``CAPTION``, the estimate and the noise levels.

    Examples
    --------
    >>> from pmlkit.experiments import get_figure
    >>> fig = get_figure("gauss")
    >>> isinstance(fig, GaussFigure), fig.NAME
    (True, 'gauss')
    >>> df = fig.compute(iterations=5)
    >>> len(df) > 0
    True
    """

    NAME: str
    CAPTION: str
    p_hat: tuple[float, float]
    sigmas: tuple[float, ...]

    @renamed_parameter(version="0.2", seed="rng")
    def compute(self, *, iterations: int | None = None, rng: int = 0,
                data: pathlib.Path | None = None, progress: bool = False) -> pd.DataFrame:
        """Tidy data (deterministic; ``iterations`` = grid points per curve, default 150)."""
        pd = require("pandas", "the paper's experiments")

        from ..additive import gaussian_tradeoff, pldp_eps

        k = max(check_iterations(iterations, 150), 3)
        eps_in = np.linspace(0.0, EPS_MAX, k)
        label = _label(self.p_hat)
        frames = []
        todo = [(s, m) for s in self.sigmas for m in M_GRID]
        for sigma, m in progress_bar(todo, enabled=progress, desc=self.NAME, total=len(todo)):
            for method in ("paper", "direct"):
                eo, do = gaussian_tradeoff(sigma, self.p_hat, m=m, delta2=DELTA2, eps=eps_in,
                                           curve=method)
                eo, do = np.asarray(eo, float), np.asarray(do, float)
                keep = np.isfinite(eo)
                frames.append(pd.DataFrame({"sigma": sigma, "p_hat": label, "m": m,
                                            "method": method, "eps": eo[keep],
                                            "delta": do[keep]}))
        deltas = np.logspace(-12, math.log10(0.5), k)
        for sigma in self.sigmas:
            frames.append(pd.DataFrame({
                "sigma": sigma, "p_hat": label, "m": np.nan, "method": "pldp",
                "eps": [pldp_eps(sigma, float(d)) for d in deltas], "delta": deltas}))
        df = pd.concat(frames, ignore_index=True)[COLUMNS]
        df["m"] = df["m"].astype("Int64")
        return df

    def plot(self, df: pd.DataFrame) -> matplotlib.figure.Figure:
        """One panel per sigma: delta (log) against eps; paper solid, direct dotted, pLDP
        black dashed; a grey line marks delta_2."""
        sigmas = sorted(df["sigma"].unique())
        fig, axes = new_figure(len(sigmas), height=4.0)
        for ax, sigma in zip(axes, sigmas, strict=True):
            g = df[df["sigma"] == sigma]
            for i, m in enumerate(M_GRID):
                for method, ls, tag in (("paper", "-", "paper"), ("direct", ":", "direct")):
                    h = g[(g["method"] == method) & (g["m"] == m)].sort_values("eps")
                    ax.plot(h["eps"], h["delta"], ls=ls, color=f"C{i}",
                            label=f"m = {m:,} ({tag})")
            h = g[g["method"] == "pldp"].sort_values("eps")
            ax.plot(h["eps"], h["delta"], "k--", label="pLDP (Zhao et al., Thm 8)")
            ax.axhline(DELTA2, color="0.6", lw=0.8)
            ax.set_yscale("log")
            ax.set_xlim(left=0)
            ax.set_ylim(1e-9, 1.5)
            ax.set_xlabel("eps* (paper) / eps (direct, pLDP)")
            ax.set_ylabel("delta*")
            ax.set_title(f"sigma = {sigma:g}, p_hat = {_label(self.p_hat)}, "
                         f"delta_2 = {DELTA2:g}")
            ax.legend(fontsize="x-small", ncol=2)
        return fig

    def check(self, df: pd.DataFrame) -> list[Check]:
        """delta* >= delta_2 on every PML curve; the direct curve is never above the
        paper's (the direct delta is re-evaluated exactly at each paper point's eps*);
        for m >= 10^4 the paper's curve lies below the pLDP curve."""
        from ..additive import gaussian_tradeoff

        out: list[Check] = []
        pm = df[df["method"].isin(["paper", "direct"])]
        d = pm["delta"].to_numpy(float)
        out.append(Check("the Gaussian (eps*, delta*) curves show delta* >= delta_2",
                         bool(np.all(d >= DELTA2)),
                         f"{d.size} points; min delta* = {d.min():.3g} (delta_2 = {DELTA2:g})"))
        worst, n = -math.inf, 0
        for (sigma, m), g in df[df["method"] == "paper"].groupby(["sigma", "m"]):
            e = g["eps"].to_numpy(float)
            _, dd = gaussian_tradeoff(float(sigma), self.p_hat, m=int(m), delta2=DELTA2, eps=e,
                                      curve="direct")
            excess = np.asarray(dd, float) - g["delta"].to_numpy(float)
            worst = max(worst, float(np.max(excess / np.maximum(g["delta"], 1e-300))))
            n += e.size
        out.append(Check("the direct curve is never above the paper's (same eps)",
                         worst <= RTOL,
                         f"{n} paper points; max relative excess of the direct delta "
                         f"evaluated at the paper's eps* = {worst:.3g}"))
        bad, n = [], 0
        for (sigma, m), g in df[df["method"] == "paper"].groupby(["sigma", "m"]):
            if m < 10_000:
                continue
            for e, dv in zip(g["eps"], g["delta"], strict=True):
                n += 1
                if dv > pldp_delta(float(sigma), float(e)) * (1 + RTOL):
                    bad.append(f"sigma={sigma:g}, m={m}, eps*={e:.3g}")
                    break
        out.append(Check("for m >= 10^4 the paper's PML curve lies below the pLDP curve",
                         not bad, "above at: " + "; ".join(bad) if bad
                         else f"{n} points compared with the pLDP delta at the same eps"))
        if self.p_hat != (0.5, 0.5):
            out.append(self._skew_check(df))
        return out

    def _skew_check(self, df: pd.DataFrame) -> Check:
        """The skewed estimate needs a larger eps* than p_hat = (.5, .5) to reach
        delta* <= SKEW_DELTA, on the same inner eps grid (the balanced curve is computed
        here with :func:`pmlkit.additive.gaussian_tradeoff`)."""
        from ..additive import gaussian_tradeoff

        ok, parts = True, []
        for (sigma, m), g in df[df["method"] == "direct"].groupby(["sigma", "m"]):
            inner = np.sort(g["eps"].to_numpy(float))     # direct: eps_out = inner eps
            mine = df[(df["method"] == "paper") & (df["sigma"] == sigma) & (df["m"] == m)]
            reach = mine["eps"][mine["delta"] <= SKEW_DELTA]
            e_skew = float(reach.min()) if len(reach) else math.inf
            eo, do = gaussian_tradeoff(float(sigma), (0.5, 0.5), m=int(m), delta2=DELTA2,
                                       eps=inner, curve="paper")
            eo, do = np.asarray(eo, float), np.asarray(do, float)
            sel = np.isfinite(eo) & (do <= SKEW_DELTA)
            e_bal = float(eo[sel].min()) if sel.any() else math.inf
            ok &= e_skew >= e_bal
            parts.append(f"m={m}: {e_skew:.3g} vs {e_bal:.3g}")
        return Check(f"skew costs privacy: the eps* needed for delta* <= {SKEW_DELTA:g} is "
                     "larger than for p_hat = (0.5, 0.5) at every m (the gain over pLDP "
                     "shrinks as the estimate becomes more skewed)", ok,
                     "eps* skewed vs balanced, " + "; ".join(parts))


_COMMON = (
    "delta_2 = 1e-6 is the probability that the true prior lies outside the l1-ball of "
    "radius beta*(delta_2) (eq. binarybeta) around p_hat; m in {100, 1000, 10^4, 10^5}. "
    "Solid: the paper's (eps*, delta*) curve (Section gauss, Thm l1gamma + union bound); "
    "dotted: pmlkit's direct curve (eps, delta_1 + delta_2 - delta_1 delta_2), valid "
    "because delta_1 is already the supremum over the ball and never above the paper's; "
    "delta_1 is computed exactly (closed form per prior + 1-D maximisation) where the "
    "paper used a grid search. Dashed black: the (eps, delta)-pLDP Gaussian mechanism with "
    "the same sigma (Zhao et al. 2019, Thm 8, sensitivity 2). Paper's claims: "
    "delta* >= delta_2, and PML curves well below pLDP for enough samples."
)

GAUSS = GaussFigure(
    NAME="gauss",
    CAPTION="Figure gaussexample: (eps, delta)-PML curves of the binary Gaussian mechanism "
            "for p_hat = (0.5, 0.5), sigma = 1.5 and 2. " + _COMMON,
    p_hat=(0.5, 0.5), sigmas=(1.5, 2.0))

GAUSS_SKEWED = GaussFigure(
    NAME="gauss_skewed",
    CAPTION="Figure skewedgauss: the same for the skewed estimate p_hat = (0.3, 0.7), "
            "sigma = 1.5; the gain over pLDP shrinks as the prior becomes more skewed "
            "(LDP is PML for every prior, the worst being degenerate). " + _COMMON,
    p_hat=(0.3, 0.7), sigmas=(1.5,))

__all__ = ["GAUSS", "GAUSS_SKEWED", "GaussFigure", "pldp_delta"]
