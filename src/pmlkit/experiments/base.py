"""The figure interface shared by every experiment module, and small shared helpers.

Every figure of the paper (math §7) is one module of :mod:`pmlkit.experiments`
exposing

``NAME: str``
    The figure's name (also the stem of ``NAME.png`` / ``NAME.csv``).
``CAPTION: str``
    What the figure shows and how it was made (sample sizes, sets, radii, deltas).
``NEEDS_ADULT: bool`` (optional, default ``False``)
    Whether :func:`compute` reads the UCI Adult data (the figure is skipped, with a clear
    message, when the data cannot be found).
``compute(*, iterations=None, rng=0, data=None, progress=False) -> pandas.DataFrame``
    The tidy data behind the figure: one row per plotted point, the CSV columns of
    ``iterations=None`` means the paper's default; small values make a smoke run.
``plot(df) -> matplotlib.figure.Figure``
    The figure drawn from that data frame alone.
``check(df) -> list[Check]``
    The paper's claims that the data confirms or refutes, each a :class:`Check`.

:class:`FigureModule` states this interface for static type checkers. Heavy libraries
(pandas, matplotlib, tqdm) are imported inside the helpers, never at import time.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from .._optional import require
from .._validation import check_count

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure
    import pandas as pd

__all__ = [
    "Check",
    "FigureModule",
    "check_iterations",
    "empirical_mutual_information",
    "new_figure",
    "progress_bar",
    "research_generator",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Check:
    """One claim of the paper tested on a figure's data.

    Attributes
    ----------
    claim
        The claim, in words (e.g. "PML-Laplace MI exceeds LDP's at every m and eps").
    holds
        Whether the data confirms it.
    detail
        Evidence: the number of points tested, the worst margin, the first violation.

    Examples
    --------
    >>> c = Check("PML-Laplace MI exceeds LDP's", True, "12 points, worst margin 0.01")
    >>> c.holds
    True
    """

    claim: str
    holds: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form ``{"claim", "holds", "detail"}``."""
        return {"claim": self.claim, "holds": bool(self.holds), "detail": self.detail}


@runtime_checkable
class FigureModule(Protocol):
    """The interface every figure module of :mod:`pmlkit.experiments` implements.

    Examples
    --------
    >>> from pmlkit.experiments import get_figure
    >>> isinstance(get_figure("deltamin"), FigureModule)
    True
    """

    NAME: str
    CAPTION: str

    def compute(self, *, iterations: int | None = None, rng: int = 0,
                data: pathlib.Path | None = None, progress: bool = False) -> pd.DataFrame:
        ...

    def plot(self, df: pd.DataFrame) -> matplotlib.figure.Figure:
        ...

    def check(self, df: pd.DataFrame) -> list[Check]:
        ...


def check_iterations(iterations: Any, default: int, name: str = "iterations") -> int:
    """``iterations`` validated as an integer ``>= 1``, or ``default`` when it is ``None``.

    Examples
    --------
    >>> check_iterations(None, 100), check_iterations(5, 100)
    (100, 5)
    >>> check_iterations(0, 100)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: iterations must be ...
    """
    if iterations is None:
        return default
    return check_count(iterations, name, minimum=1)


def research_generator(seed: int) -> np.random.Generator:
    """A seeded numpy Generator for the experiments (research reproducibility only).

    Goes through :func:`pmlkit.rng.resolve_rng` when that module is available so that the
    randomness policy lives in one place; the figures protect nobody, so a seeded PCG64 is
    the right generator here.

    Examples
    --------
    The same seed gives the same stream (and a different seed another one):

    >>> research_generator(7).random() == research_generator(7).random()
    True
    >>> research_generator(7).random() == research_generator(8).random()
    False
    """
    seed = check_count(seed, "seed", minimum=0)
    try:
        from ..rng import resolve_rng
    except ImportError:  # pragma: no cover - rng.py lands with the privatisation issue
        return np.random.Generator(np.random.PCG64(seed))
    return resolve_rng(seed).generator


def progress_bar(iterable: Iterable[T], *, enabled: bool, desc: str,
                 total: int | None = None) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm progress bar (on stderr) when ``enabled``.

    Examples
    --------
    >>> list(progress_bar(range(3), enabled=False, desc="shuffles"))
    [0, 1, 2]
    """
    if not enabled:
        yield from iterable
        return
    tqdm = require("tqdm.auto", "the paper's experiments").tqdm

    yield from tqdm(iterable, desc=desc, total=total, leave=False)


def empirical_mutual_information(joint: ArrayLike) -> np.ndarray:
    """Empirical mutual information of 2-D count tables, vectorised over leading axes.

    For a table of joint frequencies ``f(x, y)`` of ``m`` pairs (math §7, Figure
    "numex_laplace"; the paper writes N where the sample count m is meant):

    .. math:: \\hat I(X;Y) = \\sum_{x,y} \\frac{f(x,y)}{m}
              \\log \\frac{m f(x,y)}{f(x) f(y)}

    with ``0 log 0 = 0``. Natural logarithm (nats).

    Parameters
    ----------
    joint
        Array of shape ``(..., N, M)`` of non-negative counts (or frequencies); the last
        two axes are X and Y. Each table must have a positive total.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)``: the empirical MI of each table.

    Examples
    --------
    A table where Y always equals X (fair X) holds ``log 2`` nats; independence holds none:

    >>> mi = empirical_mutual_information(np.array([[[50, 0], [0, 50]], [[25, 25], [25, 25]]]))
    >>> mi.round(4).tolist()
    [0.6931, 0.0]
    """
    f = np.asarray(joint, dtype=np.float64)
    if f.ndim < 2:
        from ..errors import ValidationError

        raise ValidationError(f"joint must have at least 2 dimensions, got shape {f.shape}")
    m = f.sum(axis=(-2, -1), keepdims=True)
    fx = f.sum(axis=-1, keepdims=True)
    fy = f.sum(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(f > 0, f / m * np.log(m * f / (fx * fy)), 0.0)
    mi: np.ndarray = terms.sum(axis=(-2, -1))
    return mi


def new_figure(ncols: int = 1, *, width: float = 5.2, height: float = 3.8
               ) -> tuple[matplotlib.figure.Figure, list[Any]]:
    """A matplotlib Figure (Agg canvas, no GUI, no global pyplot state) with ``ncols`` axes.

    Returns ``(figure, axes_list)``.

    Examples
    --------
    >>> fig, axes = new_figure(2)
    >>> len(axes), fig.get_size_inches().round(1).tolist()
    (2, [10.4, 3.8])
    """
    FigureCanvasAgg = require("matplotlib.backends.backend_agg",
                              "the paper's figures").FigureCanvasAgg
    Figure = require("matplotlib.figure", "the paper's figures").Figure

    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def format_checks(checks: Iterable[Check]) -> str:
    """Plain-text lines ``[PASS] claim: detail`` (used by the CLI)."""
    return "\n".join(f"[{'PASS' if c.holds else 'FAIL'}] {c.claim}: {c.detail}" for c in checks)


def all_hold(checks: Iterable[Check]) -> bool:
    """True when every check holds."""
    return all(c.holds for c in checks)


def adult_codes(data: pathlib.Path | None, columns: Iterable[str]
                ) -> dict[str, tuple[np.ndarray, list[Any]]]:
    """Integer codes of categorical Adult columns, via :func:`pmlkit.datasets.load_adult`.

    Returns ``{column: (codes, categories)}`` with ``codes`` an int array indexing the
    sorted ``categories``. The data comes from ``data`` (a folder or file), else
    ``PMLKIT_DATA`` or the loader's cache.

    Raises
    ------
    DataError
        The Adult data (or the loader) cannot be found; the message says where to put it.
    """
    pd = require("pandas", "the paper's experiments")

    from ..errors import DataError

    try:
        from ..datasets import load_adult
    except ImportError as exc:  # pragma: no cover - the loader lands with another issue
        raise DataError(f"the Adult loader pmlkit.datasets.load_adult is not available "
                        f"({exc})") from exc
    frame = load_adult(data) if data is not None else load_adult()
    out: dict[str, tuple[np.ndarray, list[Any]]] = {}
    for col in columns:
        try:
            values = frame[col]
        except (KeyError, TypeError) as exc:
            raise DataError(f"the Adult data has no column {col!r}") from exc
        arr = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values,
                         dtype=object)
        missing = pd.isna(arr)
        if missing.any():
            raise DataError(f"the Adult column {col!r} has {int(missing.sum())} missing "
                            "values; the figures use only complete columns")
        cats, codes = np.unique(arr.astype(str), return_inverse=True)
        out[col] = (codes.astype(np.int64), [str(c) for c in cats])
    return out


ComputeFn = Callable[..., "pd.DataFrame"]
