"""Time every figure of `pmlkit reproduce` at its default settings (the whole run
must take under 10 minutes on a 2-core machine).

Run: ``.venv/bin/python benchmarks/bench_reproduce.py [--data PATH] [--figure NAME ...]``.
Prints the seconds per figure (compute + checks + PNG + CSV) and the total; the Adult
figures need the data (``--data`` or ``PMLKIT_DATA``).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import tempfile
import time

from pmlkit.experiments import FIGURES
from pmlkit.experiments.report import reproduce

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUDGET_S = 600.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    ap.add_argument("--figure", action="append", default=None)
    args = ap.parse_args()
    data = args.data or os.environ.get("PMLKIT_DATA")
    names = args.figure or list(FIGURES)
    total = 0.0
    print(f"{'figure':<14} {'seconds':>8}  checks")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        for name in names:
            t = time.perf_counter()
            (res,) = reproduce([name], pathlib.Path(tmp), data=data)
            dt = time.perf_counter() - t
            total += dt
            if res.skipped or res.error:
                why = f"skipped: {res.skipped}" if res.skipped else f"ERROR: {res.error}"
                print(f"{name:<14} {dt:8.2f}  {why}")
                continue
            ok = sum(c.holds for c in res.checks)
            print(f"{name:<14} {dt:8.2f}  {ok}/{len(res.checks)} hold")
        wall = time.perf_counter() - t0
    print(f"{'total':<14} {total:8.2f}  (wall {wall:.1f} s; budget {BUDGET_S:.0f} s: "
          f"{'OK' if wall < BUDGET_S else 'OVER'})")


if __name__ == "__main__":
    main()
