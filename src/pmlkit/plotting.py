"""Pictures of mechanisms and guarantees, drawn with matplotlib.

Every function draws on ``ax`` (a new figure's axes when ``None``) and returns the axes,
so plots compose with the rest of a matplotlib figure. matplotlib is imported only when a
function is called (``import pmlkit`` stays light); nothing here calls ``pyplot.show``.

* :func:`plot_mechanism`: the matrix ``W[i, j] = P(Y = y_j | X = x_i)`` as a heatmap with
  input labels on the rows and output labels on the columns.
* :func:`plot_pml`: the pointwise maximal leakage of every outcome,
  ``pml(y) = log max_i W[i, y] / P_Y(y)`` with ``P_Y = prior W``, as bars against the
  target eps. The prior defaults to the estimate the mechanism records; the guarantee
  of a designed mechanism is over a whole set of distributions around it, so bars under
  the estimate are a look at one distribution of the set, not the worst case.
* :func:`plot_gaussian_curve`: the achievable ``(eps, delta)``-PML pairs of a calibrated
  binary Gaussian mechanism (:func:`pmlkit.additive.calibrate_gaussian`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._deprecation import positional_deprecated
from ._optional import require
from ._validation import check_eps, fmt
from .errors import ValidationError

__all__ = ["plot_gaussian_curve", "plot_mechanism", "plot_pml"]

#: Labels are written on the axes of a heatmap up to this many rows / columns.
MAX_TICKS = 60


def _axes(ax: Any) -> Any:
    if ax is None:
        Figure = require("matplotlib.figure", "plotting").Figure

        return Figure(figsize=(6, 4)).add_subplot()
    if not hasattr(ax, "imshow") or not hasattr(ax, "bar"):
        raise ValidationError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def _mechanism(mech: Any) -> Any:
    from .mechanism import Mechanism, as_matrix

    if isinstance(mech, Mechanism):
        return mech
    return Mechanism(as_matrix(mech, "mech"))


def plot_mechanism(mech: ArrayLike, ax: Any = None, *, annotate: bool | None = None,
                   cmap: str = "Reds") -> Any:
    """Heatmap of a mechanism's matrix with its labels.

    Parameters
    ----------
    mech
        A :class:`pmlkit.Mechanism` or a row-stochastic 2-D array (labels ``0..N-1``).
    ax
        Axes to draw on (default: a new figure's).
    annotate
        Write each probability in its cell (default: when the matrix has at most 144
        cells).
    cmap
        Colour map; the colour scale is fixed to ``[0, 1]``.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax.images[0].get_array()`` is the matrix.

    Examples
    --------
    >>> ax = plot_mechanism([[0.75, 0.25], [0.25, 0.75]])
    >>> ax.images[0].get_array().tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    >>> [t.get_text() for t in ax.texts]  # each probability written in its cell
    ['0.75', '0.25', '0.25', '0.75']
    """
    m = _mechanism(mech)
    ax = _axes(ax)
    w = m.matrix
    im = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    xl = [str(v) for v in m.output_labels]
    if m.n_outputs <= MAX_TICKS:  # beyond that, matplotlib's default index ticks
        ax.set_xticks(range(m.n_outputs), xl, rotation=45 if max(map(len, xl)) > 6 else 0,
                      ha="right" if max(map(len, xl)) > 6 else "center")
    if m.n_inputs <= MAX_TICKS:
        ax.set_yticks(range(m.n_inputs), [str(v) for v in m.input_labels])
    ax.set_xlabel("output y")
    ax.set_ylabel("input x")
    if annotate is None:
        annotate = w.size <= 144
    if annotate:
        for i in range(m.n_inputs):
            for j in range(m.n_outputs):
                ax.text(j, i, f"{w[i, j]:.3g}", ha="center", va="center", fontsize=8,
                        color="white" if w[i, j] > 0.55 else "black")
    title = "W[x, y] = P(Y = y | X = x)"
    if m.certified_eps is not None and m.certified:
        title += f"; certified eps = {m.certified_eps:.4g}"
    ax.set_title(title, fontsize=10)
    ax.figure.colorbar(im, ax=ax)
    return ax


@positional_deprecated(version="0.2", allowed=2)
def plot_pml(mech: ArrayLike, prior: ArrayLike | None = None, *, eps: float | None = None,
             ax: Any = None) -> Any:
    """Bars of the PML of every outcome under ``prior``, with ``eps`` as a line.

    ``pml(y) = log max_i W[i, y] - log P_Y(y)`` (:func:`pmlkit.pml`). Outcomes that never
    occur (``P_Y(y) = 0``) have no bar.

    Parameters
    ----------
    mech
        A :class:`pmlkit.Mechanism` or a row-stochastic 2-D array.
    prior
        Distribution of the inputs; default: the estimate the mechanism records
        (``parameters["prior"]``). Required when it records none.
    eps
        Reference line; default: the mechanism's target eps (``parameters["eps"]``), else
        its certified eps, else no line. Keyword-only (passing it by position still works
        for one release, with a DeprecationWarning).
    ax
        Axes to draw on (default: a new figure's). Keyword-only, like ``eps``.

    Returns
    -------
    matplotlib.axes.Axes
        One bar per output label, in order (``ax.patches``).

    Examples
    --------
    Under the uniform prior each output of this mechanism has ``P_Y(y) = 0.5`` and
    ``max_x W[x, y] = 0.75``, so both bars are ``log(0.75 / 0.5) = 0.405``:

    >>> ax = plot_pml([[0.75, 0.25], [0.25, 0.75]], [0.5, 0.5], eps=1.0)
    >>> [round(float(bar.get_height()), 3) for bar in ax.patches]
    [0.405, 0.405]
    >>> ax.lines[0].get_ydata()[0]  # the eps line
    1.0
    """
    from .leakage import pml

    m = _mechanism(mech)
    if prior is None:
        prior = m.parameters.get("prior")
        if prior is None:
            raise ValidationError(
                "prior must be given: the mechanism records no estimate (parameters['prior'])"
                ", got prior=None")
        where = "the recorded estimate"
    else:
        where = "the given prior"
    leak = pml(m, prior)
    if eps is None:
        eps = m.parameters.get("eps", m.certified_eps)
        if isinstance(eps, str):  # "inf" from a file
            eps = None
    if eps is not None:
        eps = check_eps(eps)
    ax = _axes(ax)
    labels = [str(v) for v in m.output_labels]
    ax.bar(range(m.n_outputs), leak, color="#c0392b", label="PML of the outcome")
    long = max(map(len, labels)) > 6
    ax.set_xticks(range(m.n_outputs), labels, rotation=45 if long else 0,
                  ha="right" if long else "center")
    if eps is not None:
        ax.axhline(eps, color="black", linestyle="--", label=f"eps = {eps:.4g}")
        ax.legend(fontsize=8)
    ax.set_xlabel("output y")
    ax.set_ylabel("pml(y) [nats]")
    ax.set_title(f"PML per outcome under {where}", fontsize=10)
    return ax


def plot_gaussian_curve(calibration: Any, ax: Any = None, *,
                        curves: Sequence[str] = ("direct", "paper")) -> Any:
    """The ``(eps, delta)``-PML curve(s) of a calibrated binary Gaussian mechanism.

    Parameters
    ----------
    calibration
        A :class:`pmlkit.additive.GaussianCalibration`
        (:func:`pmlkit.additive.calibrate_gaussian`).
    ax
        Axes to draw on (default: a new figure's).
    curves
        Which of ``"direct"`` (``(eps, delta_1 + delta_2 - delta_1 delta_2)``) and
        ``"paper"`` (the paper's ``eps*``) to draw; points with infinite eps (vacuous) are
        left out.

    Returns
    -------
    matplotlib.axes.Axes
        One line per curve, labelled ``"direct"`` / ``"paper"``; delta on a log scale.

    Examples
    --------
    >>> from pmlkit.additive import calibrate_gaussian
    >>> cal = calibrate_gaussian(["M"] * 670 + ["F"] * 330, 1.5, 1e-6, positive="M")
    >>> ax = plot_gaussian_curve(cal)
    >>> [line.get_label() for line in ax.get_lines()], ax.get_yscale()
    (['direct', 'paper'], 'log')
    """
    from .additive.calibrate import GaussianCalibration

    if not isinstance(calibration, GaussianCalibration):
        raise ValidationError(
            "calibration must be a GaussianCalibration (from "
            f"pmlkit.additive.calibrate_gaussian), got {type(calibration).__name__}")
    if isinstance(curves, str) or not set(curves) <= {"direct", "paper"} or not curves:
        raise ValidationError(f"curves must be a non-empty list of 'direct' and 'paper', "
                              f"got {fmt(curves)}")
    ax = _axes(ax)
    for name in curves:
        e = np.asarray(getattr(calibration, f"{name}_eps"), dtype=np.float64)
        d = np.asarray(getattr(calibration, f"{name}_delta"), dtype=np.float64)
        keep = np.isfinite(e) & (d > 0)
        ax.plot(e[keep], d[keep], marker=".", label=name)
    ax.set_yscale("log")
    ax.set_xlabel("eps")
    ax.set_ylabel("delta")
    ax.set_title(f"Gaussian mechanism, sigma = {calibration.sigma:.4g}, m = {calibration.m}",
                 fontsize=10)
    ax.legend(fontsize=8)
    return ax
