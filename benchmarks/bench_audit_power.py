"""Benchmark: the power of the audit against deliberately shrunk confidence sets.

``pmlkit.audit.run_audit(radius_scale=s)`` shrinks every confidence set towards its
estimate by the factor ``s`` (an l1 radius times ``s``, a box's bounds pulled towards the
estimate by ``s``). Below 1 the guarantee may become false: at once for the nearly exact
Clopper-Pearson constructions, only further down for the conservative l1 balls (a shrunk
ball can still be valid). This script sweeps ``s`` from 0.5 to 1.0 in steps of 0.05 and
reports, per confidence method and family (over the claimed deltas, by default the
audit's 0.05, 0.3 and 1e-6), whether the audit rejects the variant at level
``alpha = 0.001`` (exact rows: an exact failure probability above delta, which needs no
test), the largest rate found relative to delta (JSON), and the largest scale rejected
(every smaller scale in the sweep is rejected too, else the gap is shown).
The ``exact`` family is the default (it is what gives the audit its power); ``--family``
adds the simulated ones (slower). Usage::

    python benchmarks/bench_audit_power.py [--delta 0.05 ...] [--family exact ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from pmlkit.audit import DEFAULT_DELTAS, run_audit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delta", type=float, action="append", default=None,
                    help="claimed delta (repeatable; default: the audit's deltas)")
    ap.add_argument("--family", action="append", default=None,
                    help="families to run (repeatable; default: exact)")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    families = tuple(args.family or ("exact",))
    deltas = tuple(args.delta or DEFAULT_DELTAS)
    scales = [round(float(s), 2) for s in np.arange(0.5, 1.0001, 0.05)]
    table: dict[str, dict[float, tuple[bool, float]]] = {}
    timing = {}
    for s in scales:
        t0 = time.perf_counter()
        res = run_audit(trials=args.trials, deltas=deltas, families=families,
                        radius_scale=s)
        timing[s] = time.perf_counter() - t0
        for r in res.rows:  # a method is rejected when any of its deltas is
            old = table.setdefault(f"{r.family}:{r.method}", {}).get(s, (False, 0.0))
            table[f"{r.family}:{r.method}"][s] = (old[0] or not r.passed,
                                                  max(old[1], r.rate / r.delta))
    summary: dict[str, dict[str, Any]] = {}
    for name, row in table.items():
        rejected = [s for s in scales if s in row and row[s][0]]
        largest = max(rejected) if rejected else None
        gaps = [s for s in scales if largest is not None and s <= largest and s in row
                and not row[s][0]]
        summary[name] = {"largest_rejected_scale": largest, "not_rejected_below": gaps,
                         "rejected": {str(s): row[s][0] for s in scales if s in row},
                         "rate_over_delta": {str(s): row[s][1] for s in scales if s in row}}
    if args.json:
        print(json.dumps({"deltas": deltas, "families": families, "scales": scales,
                          "seconds_per_scale": timing, "rows": summary}, indent=1))
        return
    print(f"power of the audit at deltas {', '.join(f'{d:g}' for d in deltas)}, families "
          f"{', '.join(families)} (REJ: rejected at some delta)")
    print(f"{'row':44} " + " ".join(f"{s:>5.2f}" for s in scales) + "  largest rejected")
    for name, row in table.items():
        marks = " ".join(f"{('REJ' if row[s][0] else 'ok'):>5}" if s in row else f"{'':>5}"
                         for s in scales)
        info = summary[name]
        top = info["largest_rejected_scale"]
        gap = f" (not rejected at {info['not_rejected_below']})" if info[
            "not_rejected_below"] else ""
        print(f"{name:44} {marks}  {top if top is not None else '-'}{gap}")
    print("seconds per scale: " + ", ".join(f"{s:.2f}: {t:.1f}" for s, t in timing.items()))


if __name__ == "__main__":
    main()
