"""The paper's figures (math §7) as functions returning tidy data frames.

Each figure implements the interface described in :mod:`pmlkit.experiments.base`
(``NAME``, ``CAPTION``, ``compute``, ``plot``, ``check``). This module is the registry:
:data:`FIGURES` maps a figure name to the module (and, for modules holding several
figures, the attribute) that implements it. Figure modules are imported only when asked
for, and a module that is missing or broken does not hide the others.

>>> from pmlkit.experiments import get_figure
>>> fig = get_figure("deltamin")            # doctest: +SKIP
>>> df = fig.compute(); checks = fig.check(df)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import ValidationError
from .base import Check, FigureModule

__all__ = ["FIGURES", "Check", "FigureModule", "available_figures", "get_figure"]

#: figure name -> (module under pmlkit.experiments, attribute or None for the module itself)
FIGURES: dict[str, tuple[str, str | None]] = {
    "upperbound": ("upperbound", None),
    "deltamin": ("deltamin", None),
    "laplace_adult": ("laplace_adult", None),
    "laplace_delta": ("laplace_delta", None),
    "gauss": ("gauss", "GAUSS"),
    "gauss_skewed": ("gauss", "GAUSS_SKEWED"),
    "design_gain": ("design_gain", None),
    # written by the confidence-sets engineer against the same interface
    "tighter_sets": ("tighter_sets", None),
}


def get_figure(name: str) -> Any:
    """The figure object (module or attribute) registered under ``name``.

    Raises
    ------
    ValidationError
        ``name`` is not a registered figure, or its module cannot be imported (the
        message says why).

    Examples
    --------
    >>> fig = get_figure("upperbound")
    >>> fig.NAME, callable(fig.compute), callable(fig.plot), callable(fig.check)
    ('upperbound', True, True, True)
    """
    entry = FIGURES.get(name)
    if entry is None:
        raise ValidationError(
            f"figure must be one of {sorted(FIGURES)}, got {name!r}")
    module_name, attr = entry
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ImportError as exc:
        raise ValidationError(
            f"figure {name!r} is not available: module pmlkit.experiments.{module_name} "
            f"cannot be imported ({exc})") from exc
    return module if attr is None else getattr(module, attr)


def available_figures() -> list[str]:
    """Registered figure names whose module can be imported, in registry order.

    Examples
    --------
    >>> names = available_figures()
    >>> "laplace_adult" in names and "tighter_sets" in names
    True
    """
    out = []
    for name in FIGURES:
        try:
            get_figure(name)
        except ValidationError:
            continue
        out.append(name)
    return out
