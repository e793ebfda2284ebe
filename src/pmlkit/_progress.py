"""Progress reporting: a context-local callback that long computations tell what they do.

Library code calls :func:`report` at a few natural points (a column-generation round, a
local-search step, every :data:`EM_EVERY` EM iterations, an audit family, a figure, a
split of eps); whoever wants to show progress (the command line) installs a callback with
:func:`reporting`. Without one, :func:`report` reads one context variable and returns.

A report only *describes* the computation: nothing in it is read back, so a callback can
neither change a result nor make one depend on the clock (the same inputs give the same
mechanism with and without it). The callback runs in the caller's context
(:mod:`contextvars`), so two threads or tasks each see their own.

Stages and their fields (all optional beyond ``stage``):

========================  ====================================================================
``design.round``          column generation: ``round``, ``value``, ``upper``, ``gap``
                          (the certified relative gap so far)
``design.local-search``   estimation design: ``step``, ``max_steps``, ``gap`` (Frank-Wolfe)
``estimate.em``           maximum likelihood: ``iteration``, ``phase`` (``"em"``/``"newton"``)
``audit.family``          audit: ``family``, ``index``, ``total``
``reproduce.figure``      paper figures: ``figure``, ``index``, ``total``
``joint.split``           joint design: ``split`` (eps per column), ``tried``, ``feasible``
========================  ====================================================================

Examples
--------
>>> seen = []
>>> with reporting(lambda stage, info: seen.append((stage, info))):
...     report("design.round", round=1, gap=0.5)
>>> seen
[('design.round', {'round': 1, 'gap': 0.5})]
>>> report("design.round", round=2)  # no callback: nothing happens
>>> active()
False
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["EM_EVERY", "ProgressCallback", "active", "report", "reporting"]

#: ``callback(stage, info)``: what a progress display receives.
ProgressCallback = Callable[[str, Mapping[str, Any]], None]

#: EM (and Newton) iterations between two ``estimate.em`` reports.
EM_EVERY = 50

_CALLBACK: ContextVar[ProgressCallback | None] = ContextVar("pmlkit_progress", default=None)


def report(stage: str, **info: Any) -> None:
    """Tell the installed progress callback (if any) that ``stage`` is under way.

    Parameters
    ----------
    stage
        What is running, as ``"area.step"`` (see the module's table).
    **info
        Numbers describing it (round, gap, iteration, ...).
    """
    callback = _CALLBACK.get()
    if callback is not None:
        callback(stage, info)


def active() -> bool:
    """Whether a progress callback is installed (to skip computing what only a report
    would show)."""
    return _CALLBACK.get() is not None


@contextmanager
def reporting(callback: ProgressCallback | None) -> Iterator[None]:
    """Install ``callback`` for the ``with`` block (``None``: no progress within it).

    Parameters
    ----------
    callback
        Called as ``callback(stage, info)`` by every :func:`report` in the block.
    """
    token = _CALLBACK.set(callback)
    try:
        yield
    finally:
        _CALLBACK.reset(token)
