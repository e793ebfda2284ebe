"""Benchmark: the linear (accuracy) designer at large N, old vs new HiGHS settings.

For N in (50, 100, 200, 300, 500) (or the N given on the command line), a Dirichlet(5)
prior, eps = 1, accuracy gain, and both polytope forms (the 2NM form at beta = 1.5 p_min,
the exact LP-dual form at beta = 0.2), the design LP is solved in the same run with

- old: HiGHS with primal and dual feasibility tolerances 1e-10 (the shared designer
  settings, what ``linear_design_matrix`` used before);
- new: ``linear_design_matrix``'s current settings (``_highs_options``: the same for the
  2NM form, dual feasibility at HiGHS' default 1e-7 for the exact form);

and the CPU seconds of this process (``time.process_time``: on a shared machine wall time
varies by 2x and more), the ratio old/new and the relative difference of the two optimal
accuracies are printed side by side. Each LP is solved once (at N >= 200 one solve takes
seconds to minutes).

Measured on a shared 2-core machine (CPU seconds, old / new): N = 100: 2NM 0.14 / 0.13,
exact 2.10 / 2.14; N = 200: 2NM 1.28 / 1.26, exact 12.39 / 5.29 (2.3x), same optimum to
4e-16 relative. N = 300, 2NM, new settings: 254 s; N = 500 was not reached: the linear
design at N = 500 within a minute needs a smaller LP, not solver settings.

Run: ``.venv/bin/python benchmarks/bench_linear_design.py [N ...]`` (the default list
includes 300 and 500, which take many minutes).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from pmlkit.design._common import _HIGHS_OPTIONS
from pmlkit.design.linear import _full_lp_design
from pmlkit.sets import L1Ball


def main(sizes: list[int]) -> None:
    eps = 1.0
    print(f"{'N':>5} {'form':>10} {'old cpu s':>10} {'new cpu s':>10} {'old/new':>8} "
          f"{'accuracy':>10} {'rel diff':>9}")
    for n in sizes:
        rng = np.random.default_rng(n)
        p = rng.dirichlet(np.full(n, 5.0))
        g = np.eye(n)
        for form, beta in (("2NM", 1.5 * float(p.min())), ("exact", 0.2)):
            ball = L1Ball(p, beta)
            t0 = time.process_time()
            w_old = _full_lp_design(ball, p, eps, g, options=dict(_HIGHS_OPTIONS))
            t_old = time.process_time() - t0
            t0 = time.process_time()
            w_new = _full_lp_design(ball, p, eps, g)
            t_new = time.process_time() - t0
            a_old = float(p @ np.diag(w_old))
            a_new = float(p @ np.diag(w_new))
            print(f"{n:>5} {form:>10} {t_old:>10.2f} {t_new:>10.2f} {t_old / t_new:>8.2f} "
                  f"{a_new:>10.6f} {abs(a_new - a_old) / a_old:>9.1e}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [50, 100, 200, 300, 500])
