"""Figure "laplaceoverdelta": utility of the PML-Laplace mechanism against delta.

The procedure of :mod:`pmlkit.experiments.laplace_adult` (same shuffles, same Laplace
draws, same empirical mutual information) at ``eps = log 2`` for several failure
probabilities ``delta``; ``delta = 0`` is the eps-LDP scale ``b = 2/eps`` (Remark
laplacereducestoldp: eq. uncertainlaplace reduces to LDP when the ball covers every
prior).

CSV columns: ``feature, m, delta, mi_mean, mi_std`` (plus ``eps``, the mean scale ``b`` and
``iterations``).
"""

from __future__ import annotations

import math
import pathlib
from typing import TYPE_CHECKING

import numpy as np

from .._deprecation import renamed_parameter
from .._optional import require
from .base import Check, adult_codes, check_iterations, new_figure, research_generator
from .laplace_adult import DEFAULT_ITERATIONS, FEATURES, M_GRID, rises_with_m, simulate

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    import pandas as pd

NAME = "laplace_delta"
NEEDS_ADULT = True
EPS = math.log(2.0)
DELTAS = (0.0, 1e-15, 1e-9, 1e-5, 1e-2)
COLUMNS = ["feature", "m", "delta", "mi_mean", "mi_std", "eps", "b", "iterations"]

CAPTION = (
    "Empirical mutual information of the binary Laplace mechanism on Adult (income, sex) "
    "at eps = log 2 for several failure probabilities delta of the (eps, delta)-PML "
    "guarantee (eq. uncertainlaplace with beta*(delta) of eq. binarybeta); delta = 0 is "
    "the eps-LDP scale b = 2/eps (Remark laplacereducestoldp). Same procedure as "
    "laplace_adult (shuffle, first m rows, Laplace noise, threshold at 0, empirical MI; "
    "100 iterations by default, common random numbers across delta). Paper's claims: "
    "utility falls as delta shrinks, and stays above LDP even for tiny delta."
)


@renamed_parameter(version="0.2", seed="rng")
def compute(*, iterations: int | None = None, rng: int = 0,
            data: pathlib.Path | None = None, progress: bool = False) -> pd.DataFrame:
    """Tidy data of Figure "laplaceoverdelta" (``iterations`` shuffles, default 100)."""
    pd = require("pandas", "the paper's experiments")

    k = check_iterations(iterations, DEFAULT_ITERATIONS)
    cols = adult_codes(data, FEATURES)
    gen = research_generator(rng)
    frames = []
    for feature in FEATURES:
        codes, _ = cols[feature]
        recs = simulate(codes, M_GRID, [(EPS, d) for d in DELTAS], k, gen,
                        progress=progress, desc=f"laplace_delta {feature}")
        f = pd.DataFrame(recs)
        f["feature"] = feature
        frames.append(f)
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def plot(df: pd.DataFrame) -> matplotlib.figure.Figure:
    """One panel per feature: MI against m (log x), one line per delta."""
    feats = list(dict.fromkeys(df["feature"]))
    fig, axes = new_figure(len(feats), height=4.0)
    for ax, feat in zip(axes, feats, strict=True):
        g = df[df["feature"] == feat]
        for i, (delta, h) in enumerate(g.groupby("delta", sort=True)):
            h = h.sort_values("m")
            label = "delta = 0 (LDP)" if delta == 0 else f"delta = {delta:g}"
            ax.plot(h["m"], h["mi_mean"], marker=".", color=f"C{i}",
                    ls="--" if delta == 0 else "-", label=label)
        ax.set_xscale("log")
        ax.set_xlabel("number of samples m")
        ax.set_ylabel("empirical mutual information (nats)")
        ax.set_title(f"Adult '{feat}', eps = log 2")
        ax.legend(fontsize="small")
    return fig


def check(df: pd.DataFrame) -> list[Check]:
    """Utility falls as delta shrinks (at every feature and m), every delta > 0 beats
    LDP, and utility rises with m for every delta > 0."""
    out: list[Check] = []
    bad_d, bad_ldp = [], []
    for (feat, m), g in df.groupby(["feature", "m"]):
        v = g.sort_values("delta")["mi_mean"].to_numpy(float)   # delta ascending
        if not np.all(np.diff(v) > 0):
            bad_d.append(f"{feat}, m={m}")
        if not np.all(v[1:] > v[0]):
            bad_ldp.append(f"{feat}, m={m}")
    n_pts = df[["feature", "m"]].drop_duplicates().shape[0]
    out.append(Check("utility falls as delta shrinks (strictly, at every feature and m)",
                     not bad_d, "violations: " + "; ".join(bad_d) if bad_d
                     else f"checked at {n_pts} (feature, m) points"))
    out.append(Check("every delta > 0 beats LDP (delta = 0)", not bad_ldp,
                     "violations: " + "; ".join(bad_ldp) if bad_ldp
                     else f"checked at {n_pts} (feature, m) points"))
    ok, detail = rises_with_m(df[df["delta"] > 0], ["feature", "delta"])
    out.append(Check("utility rises with m for every delta > 0 (up to 2 Monte-Carlo "
                     "standard errors between consecutive m)", ok, detail))
    return out
