"""Figure "numex_laplace": binary Laplace mechanism on Adult, (eps, delta)-PML vs eps-LDP.

The paper's procedure (Section "numex_laplace", math §7), vectorised over iterations: each
iteration shuffles the feature column, takes the first ``m`` rows, estimates ``p_hat``
from them, sets the Laplace scale ``b`` for each target ``eps``

* ``pml``: the smallest ``b`` with eq. uncertainlaplace ``<= eps`` for
  ``beta = beta*(delta)`` (eq. binarybeta), :func:`pmlkit.additive.laplace_scale_uncertain`
  with :func:`pmlkit.estimation.l1_radius` (``N = 2``), ``delta = 1e-9``;
* ``ldp``: the eps-LDP scale ``b = 2/eps`` (:func:`pmlkit.additive.laplace_scale` at
  ``p_min = 0``, Remark laplacereducestoldp),

adds Laplace noise of that scale to those ``m`` rows (coded -1/+1), thresholds at 0 (the
released bit is -1 if ``X + L < 0`` and +1 otherwise), and reports the empirical mutual
information :func:`pmlkit.experiments.base.empirical_mutual_information` between the
rows and their released bits (mean and standard deviation over iterations).

The ``m`` rows are prefixes of one shuffle per iteration and the standard Laplace draws
are shared by all settings of an iteration (common random numbers), so that differences
between methods, ``m`` and ``delta`` are not drowned by Monte-Carlo noise; each point on
its own follows the paper's procedure exactly.

CSV columns: ``feature, m, eps, method, mi_mean, mi_std, b`` (``b`` is the mean scale
over iterations; for ``ldp`` it is exactly ``2/eps``), plus ``iterations``.

The eps grid stops at 1: beyond, the worst-case prior's ``eps_max`` is reached for ``sex``
at large m (no noise is needed, both curves saturate at ``H(X)``); below 0.25 the plug-in
MI's positive bias (about ``1/(2m)`` nats) is as large as the signal.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._deprecation import renamed_parameter
from .._optional import require
from .base import (
    Check,
    adult_codes,
    check_iterations,
    empirical_mutual_information,
    new_figure,
    progress_bar,
    research_generator,
)

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    import pandas as pd

NAME = "laplace_adult"
NEEDS_ADULT = True
FEATURES = ("income", "sex")
M_GRID = (500, 1_000, 2_000, 5_000, 10_000, 20_000, 30_000)
EPS_GRID = (0.25, 0.5, 0.75, 1.0)
DELTA = 1e-9
DEFAULT_ITERATIONS = 100
COLUMNS = ["feature", "m", "eps", "method", "mi_mean", "mi_std", "b", "iterations"]

CAPTION = (
    "Empirical mutual information between Adult's binary features (income, sex) and their "
    "privatised versions, for the binary Laplace mechanism with the scale of "
    "eq. uncertainlaplace (method=pml: (eps, delta)-PML with delta = 1e-9, p_hat from the "
    "first m rows of each shuffle, beta = beta*(delta) of eq. binarybeta) and with the "
    "eps-LDP scale b = 2/eps (method=ldp); Laplace noise is added to the m rows (coded "
    "-1/+1), thresholded at 0, and the empirical MI of math §7 (nats) is averaged over the "
    "iterations (100 by default; common random numbers across settings). Paper's claim: "
    "PML gives more utility than LDP at every m and eps, and the gain grows with m."
)


def scale_for(eps: float, delta: float, m: int, p_hat_min: np.ndarray) -> np.ndarray:
    """Laplace scale per iteration: eq. uncertainlaplace inverted (``delta > 0``) or the
    eps-LDP scale (``delta = 0``); evaluated once per distinct ``p_hat_min``.

    Examples
    --------
    With ``delta = 0`` the eps-LDP scale for a binary ``+-1`` value (sensitivity 2),
    ``2 / eps``; with ``delta > 0`` the scale that is eps-PML over the whole l1-ball, smaller:

    >>> scale_for(1.0, 0.0, 100, np.array([0.3, 0.3])).tolist()
    [2.0, 2.0]
    >>> b = scale_for(1.0, 1e-6, 1000, np.array([0.3]))
    >>> bool(0 < b[0] < 2.0)
    True
    """
    from ..additive.laplace import laplace_scale, laplace_scale_uncertain
    from ..estimation import l1_radius

    if delta == 0.0:
        return np.full(p_hat_min.shape, laplace_scale(eps, 0.0))
    beta = l1_radius(delta, m=m, n=2)
    uniq, inv = np.unique(p_hat_min, return_inverse=True)
    vals = np.array([laplace_scale_uncertain(eps, float(u), beta=beta) for u in uniq])
    return vals[inv]


def simulate(codes: np.ndarray, m_grid: Sequence[int], settings: Sequence[tuple[float, float]],
             iterations: int, gen: np.random.Generator, *, progress: bool = False,
             desc: str = "laplace", scale: Callable[..., np.ndarray] = scale_for
             ) -> list[dict[str, Any]]:
    """Run the paper's Laplace experiment on one binary column (codes 0/1 -> -1/+1).

    Parameters
    ----------
    codes
        The feature as 0/1 codes (length ``n >= max(m_grid)``).
    m_grid
        Sample sizes ``m``.
    settings
        ``(eps, delta)`` pairs; ``delta = 0`` means the eps-LDP scale.
    iterations
        Number of shuffles.

    Returns
    -------
    list of dict
        One record per ``(m, eps, delta)``: ``m, eps, delta, mi_mean, mi_std, b`` and
        ``mi_channel_mean, mi_channel_std``: the exact mutual information
        :func:`pmlkit.utility.mutual_information` of each iteration's binarised channel
        (:func:`pmlkit.additive.laplace_binarized_channel` at its scale ``b``) under the
        whole column's distribution, the population the ``m`` rows are drawn from. The
        paper's plug-in MI on ``m`` rows estimates it with a positive bias of about
        ``1/(2m)`` nats, the same for every method, which shrinks relative gains at
        small ``m``; the channel MI has no such bias and varies only through ``b``.

    Examples
    --------
    On a synthetic binary column (the figure uses Adult's ``sex`` and ``income``):

    >>> codes = (np.random.default_rng(0).random(5000) < 0.3).astype(np.int64)
    >>> recs = simulate(codes, [1000], [(1.0, 0.0), (1.0, 1e-6)], 5,
    ...                 np.random.default_rng(1))
    >>> [r["b"] for r in recs][0], recs[0]["mi_mean"] < recs[1]["mi_mean"]
    (2.0, True)
    """
    from ..additive.laplace import laplace_binarized_channel
    from ..utility import mutual_information

    n = codes.size
    m_max = max(m_grid)
    if m_max > n:
        from ..errors import ValidationError

        raise ValidationError(f"m must be <= the {n} rows available, got {m_max}")
    order = gen.permuted(np.broadcast_to(np.arange(n), (iterations, n)), axis=1)[:, :m_max]
    x_pos = codes[order] == 1                      # (iterations, m_max): True means +1
    x_val = np.where(x_pos, 1.0, -1.0)
    noise = gen.laplace(0.0, 1.0, size=(iterations, m_max))
    p_pos = float(np.mean(codes == 1))
    prior = np.array([1.0 - p_pos, p_pos])         # labels (-1, +1), as the channel's rows
    rows: list[dict[str, Any]] = []
    for m in progress_bar(m_grid, enabled=progress, desc=desc, total=len(m_grid)):
        xp = x_pos[:, :m]
        n_pos = xp.sum(axis=1)
        p_hat_min = np.minimum(n_pos, m - n_pos) / m
        for eps, delta in settings:
            b = scale(eps, delta, m, p_hat_min)
            y_pos = (x_val[:, :m] + b[:, None] * noise[:, :m]) >= 0.0
            both = (xp & y_pos).sum(axis=1)
            n_ypos = y_pos.sum(axis=1)
            table = np.stack([np.stack([m - n_pos - n_ypos + both, n_ypos - both], -1),
                              np.stack([n_pos - both, both], -1)], -2)
            mi = empirical_mutual_information(table)
            uniq_b, inv = np.unique(b, return_inverse=True)  # one channel per distinct b
            # b = 0 (no noise needed) releases X itself: the identity channel
            mi_ch = np.array([mutual_information(
                laplace_binarized_channel(u) if u > 0 else np.eye(2), prior)
                for u in uniq_b])[inv]
            rows.append({"m": int(m), "eps": float(eps), "delta": float(delta),
                         "mi_mean": float(mi.mean()),
                         "mi_std": float(mi.std(ddof=1)) if iterations > 1 else 0.0,
                         "mi_channel_mean": float(mi_ch.mean()),
                         "mi_channel_std": float(mi_ch.std(ddof=1)) if iterations > 1
                         else 0.0,
                         "b": float(b.mean()), "iterations": int(iterations)})
    return rows


@renamed_parameter(version="0.2", seed="rng")
def compute(*, iterations: int | None = None, rng: int = 0,
            data: pathlib.Path | None = None, progress: bool = False) -> pd.DataFrame:
    """Tidy data of Figure "numex_laplace" (``iterations`` shuffles, default 100).

    Examples
    --------
    With the Adult data (``PMLKIT_DATA``; see :mod:`pmlkit.datasets`):

    >>> df = compute(iterations=2)  # doctest: +SKIP
    >>> sorted(set(df["feature"]))  # doctest: +SKIP
    ['income', 'sex']
    """
    pd = require("pandas", "the paper's experiments")

    k = check_iterations(iterations, DEFAULT_ITERATIONS)
    cols = adult_codes(data, FEATURES)
    gen = research_generator(rng)
    settings = [(e, d) for e in EPS_GRID for d in (DELTA, 0.0)]
    frames = []
    for feature in FEATURES:
        codes, _ = cols[feature]
        recs = simulate(codes, M_GRID, settings, k, gen, progress=progress,
                        desc=f"laplace_adult {feature}")
        f = pd.DataFrame(recs)
        f["feature"] = feature
        f["method"] = np.where(f["delta"] == 0.0, "ldp", "pml")
        frames.append(f)
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def plot(df: pd.DataFrame) -> matplotlib.figure.Figure:
    """One panel per feature: MI against m (log x), one colour per eps, PML solid and
    LDP dashed.

    Examples
    --------
    >>> fig = plot(compute(iterations=2))  # doctest: +SKIP
    >>> len(fig.axes)  # doctest: +SKIP
    2
    """
    feats = list(dict.fromkeys(df["feature"]))
    fig, axes = new_figure(len(feats), height=4.2)
    for ax, feat in zip(axes, feats, strict=True):
        g = df[df["feature"] == feat]
        for i, (eps, ge) in enumerate(g.groupby("eps", sort=True)):
            for method, ls in (("pml", "-"), ("ldp", "--")):
                h = ge[ge["method"] == method].sort_values("m")
                ax.plot(h["m"], h["mi_mean"], ls=ls, marker=".", color=f"C{i}",
                        label=f"eps={eps:g} {method.upper()}")
        ax.set_xscale("log")
        ax.set_xlabel("number of samples m")
        ax.set_ylabel("empirical mutual information (nats)")
        ax.set_title(f"Adult '{feat}': PML (delta = {DELTA:g}, solid) vs LDP (dashed)")
        ax.legend(fontsize="x-small", ncol=2)
    return fig


def rises_with_m(df: pd.DataFrame, by: list[str]) -> tuple[bool, str]:
    """Whether ``mi_mean`` rises with ``m`` along every curve of ``df.groupby(by)``: the
    last value exceeds the first, and no step down between consecutive ``m`` exceeds two
    standard errors ``2 sqrt(se_1^2 + se_2^2)``, ``se = mi_std / sqrt(iterations)``."""
    ok_end, bad = True, []
    for key, g in df.groupby(by):
        g = g.sort_values("m")
        v = g["mi_mean"].to_numpy(float)
        se = g["mi_std"].to_numpy(float) / np.sqrt(g["iterations"].to_numpy(float))
        if not v[-1] > v[0]:
            ok_end = False
            bad.append(f"{key}: ends below its start")
        elif np.any(-np.diff(v) > 2.0 * np.hypot(se[1:], se[:-1])):
            bad.append(f"{key}: falls by more than 2 s.e.")
    n = df[by].drop_duplicates().shape[0]
    return ok_end and not bad, (f"{n} curves checked" if not bad
                                else "violations: " + "; ".join(bad))


def check(df: pd.DataFrame) -> list[Check]:
    """PML MI > LDP MI at every (feature, m, eps); PML MI rises with m (gain grows with
    m); PML scale <= LDP scale; LDP scale is exactly 2/eps.

    Examples
    --------
    >>> [c.holds for c in check(compute(iterations=2))]  # doctest: +SKIP
    [True, True]
    """
    out: list[Check] = []
    piv = df.pivot_table(index=["feature", "m", "eps"], columns="method", values="mi_mean")
    diff = piv["pml"] - piv["ldp"]
    worst = diff.idxmin()
    out.append(Check("PML-Laplace mutual information exceeds LDP's at every m and eps",
                     bool((diff > 0).all()),
                     f"{len(diff)} (feature, m, eps) points; smallest gain "
                     f"{diff.min():.3g} nats at feature={worst[0]}, m={worst[1]}, "
                     f"eps={worst[2]:g}"))
    ok, detail = rises_with_m(df[df["method"] == "pml"], ["feature", "eps"])
    out.append(Check("PML utility rises with m: higher at the largest m than at the smallest "
                     "for every feature and eps, and never falls between consecutive m by more "
                     "than 2 Monte-Carlo standard errors (the plug-in MI has a positive bias "
                     "of order 1/(2m) nats)", ok, detail))
    gain = diff.groupby(level=["feature", "eps"]).apply(
        lambda s: float(s.iloc[-1] - s.iloc[0]))
    out.append(Check("the utility gain over LDP grows from the smallest to the largest m",
                     bool((gain > 0).all()),
                     f"gain(m_max) - gain(m_min) ranges over [{gain.min():.3g}, "
                     f"{gain.max():.3g}] nats"))
    bp = df.pivot_table(index=["feature", "m", "eps"], columns="method", values="b")
    ok_b = bool((bp["pml"] <= bp["ldp"]).all())
    eps_idx = bp.index.get_level_values("eps").to_numpy(float)
    ldp_exact = bool(np.allclose(bp["ldp"].to_numpy(float), 2.0 / eps_idx, rtol=1e-12))
    out.append(Check("PML needs less noise than LDP (b_pml <= b_ldp = 2/eps)",
                     ok_b and ldp_exact,
                     f"max b_pml/b_ldp = {float((bp['pml'] / bp['ldp']).max()):.3f}"
                     + ("" if ldp_exact else "; LDP scale differs from 2/eps")))
    return out


__all__ = ["CAPTION", "NAME", "check", "compute", "plot", "scale_for", "simulate"]
