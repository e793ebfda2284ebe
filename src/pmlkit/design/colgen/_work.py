"""The work budget of a design: :class:`Work` counts the work of every search in work
units (the rates below), with an optional wall-clock cap."""

from __future__ import annotations

import math
import time
from typing import Any

#: Work units of one master LP solve per ``N x columns`` entry of the master (the unit is
#: about a second of one core of the machine the rates were measured on, see :class:`Work`).
MASTER_RATE = 1.1e-7
#: Work units of one heuristic round per ``N^3`` (``N^2 / 2`` candidate columns of N).
HEURISTIC_RATE = 6.5e-8
#: Work units per entry of a full enumeration pass (``N x`` the candidate rays priced).
ENUMERATION_RATE = 2e-9
#: Work units of one LP of the spatial branch and bound, per variable of the LP.
LP_RATE = 2e-5
#: Work units per array step of the dynamic programme over masses.
DP_RATE = 3e-9
#: Work units per assignment of a full pass of the streamed block assignments.
BOX_RATE = 1e-7
#: Work units per step (bound or exact evaluation) of the block-pair search.
TREE_RATE = 5e-8
#: Work units per node bound of the level-cell search, per entry of the alphabet (the
#: kernels loop over the entries at each vertex of the cell).
NODE_RATE = 5.4e-6
#: Work units per entry of an assignment evaluated exactly (level cells, local search).
EVAL_RATE = 7e-8


class Work:
    """The work meter of a design: a deterministic count of the work done, in *work
    units*, and an optional wall-clock cap.

    Every search of the designer counts what it does (nodes bounded, assignments evaluated,
    LP solves, dynamic-programming steps, candidate rays priced), each kind at a fixed rate
    (units per operation, measured so that a unit is about one second of one core of a
    2020s machine, as Gurobi's ``WorkLimit``), and stops on that count: two runs on the same
    inputs do the same work and return the same result, whatever the machine's load. The
    wall clock is only an outer cap (``deadline``, a ``time.monotonic()`` value): a search
    stopped by it sets :attr:`capped`, and the designer then warns that the result depends on
    the machine's speed.

    Examples
    --------
    >>> meter = Work()
    >>> meter.spend(0.5)
    >>> meter.stop(1.0), meter.stop(0.5), meter.capped
    (False, True, False)
    >>> late = Work(deadline=0.0)  # a cap already passed
    >>> late.stop(math.inf), late.capped
    (True, True)
    """

    def __init__(self, deadline: float = math.inf) -> None:
        self.used = 0.0
        self.deadline = deadline
        self.capped = False

    def spend(self, units: float) -> None:
        """Count ``units`` of work done."""
        self.used += units

    def stop(self, until: float, deadline: float = math.inf) -> bool:
        """Whether a search allowed to run until the meter reads ``until`` (and, on the
        wall clock, until ``deadline``) must stop: the work is done, or the wall-clock cap
        has passed (then :attr:`capped` is set)."""
        if self.used >= until:
            return True
        cap = min(self.deadline, deadline)
        if cap < math.inf and time.monotonic() > cap:
            self.capped = True
            return True
        return False


def meter_of(oracle: Any) -> Work:
    """The oracle's work meter (a fresh one, without a cap, if it has none)."""
    meter = getattr(oracle, "meter", None)
    if not isinstance(meter, Work):
        meter = Work()
        try:
            oracle.meter = meter
        except AttributeError:  # pragma: no cover - an oracle with __slots__
            pass
    return meter
