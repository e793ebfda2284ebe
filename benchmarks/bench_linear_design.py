"""Benchmark: the linear (accuracy) designer at large N, whole LP vs column generation.

For N in (50, 100, 200, 300, 500) (or the N given on the command line), a Dirichlet(5)
prior, accuracy gain, eps = 1 (``--eps`` to change), and both polytope forms of the
l1-ball (the 2NM form at beta = 1.5 p_min, the exact LP-dual form at beta = 0.2), the
design LP is solved

- old: the whole polytope LP in one HiGHS call (``_full_lp_design``, what
  ``linear_design_matrix`` solved before);
- new: ``linear_design_matrix``'s column generation over the output columns
  (``_column_generation_design``);

each in a fresh child process, which reports its CPU seconds (``time.process_time``: on
a shared machine wall time varies by 2x and more) and its peak resident memory
(``ru_maxrss``, including the interpreter and numpy/scipy, ~100 MB). The old path is
stopped after ``--timeout`` seconds of wall time (default 120) and reported as such. The
two optimal accuracies are compared (relative difference).

Measured on a shared 2-core machine (load ~6), eps = 1 (CPU s old / new, peak MB old /
new, output columns in the final restricted LP, one-column pricing LPs; optima equal to
4e-15 relative where both finish):

    N    form   old cpu s  new cpu s  old/new  old MB  new MB  cols  priced
    50   2NM         0.40       0.40      1.0      90      82     8       0
    50   exact       0.51       0.31      1.6      96      83     8       0
    100  2NM         0.48       0.36      1.3     114      84     8       0
    100  exact       3.13       0.43      7.3     136      86     8       1
    200  2NM         2.01       0.39      5.2     218      88     8       0
    200  exact       6.77       0.58     11.7     321      92     8       0
    300  2NM    >120 wall       0.65        -       -      94     8       0
    300  exact  >120 wall       1.51        -       -     102     8      20
    500  2NM    >120 wall       0.81        -       -     112     8       0
    500  exact  >120 wall       4.30        -       -     119     8      29

(An earlier run of the old path at N = 300, 2NM form, took 254 CPU s.) At eps = 3 the
optimum uses ~30 outputs; with one small LP per inconclusive column the exact form took
25.7 CPU s at N = 200 (677 pricing LPs) and 79 CPU s at N = 500 (490). Since then an
l1-ball column is priced by the one-column LP's dual in closed form (``priced``: 0 LPs)
and the restricted LP over the exact form is solved by the interior point method with
crossover. One run, ``200 300 500 --eps 0.1 1 3 --timeout 20`` (old = whole LP):

    N    eps  form   old cpu s  new cpu s  old/new  old MB  new MB  cols  priced
    200  0.1  2NM         3.99       0.44      9.2     218      89     8       0
    200  0.1  exact   >20 wall       0.67        -       -      90     8       0
    200  1    2NM         1.92       0.41      4.7     219      88     8       0
    200  1    exact       5.74       0.68      8.4     322      91     8       0
    200  3    2NM         4.11       0.92      4.5     218     106    32       0
    200  3    exact   >20 wall       3.19        -       -     104    18       0
    300  0.1  2NM         6.48       0.44     14.6     393      93     8       0
    300  0.1  exact   >20 wall       0.78        -       -      95     8       0
    300  1    2NM     >20 wall       0.60        -       -      95     8       0
    300  1    exact   >20 wall       1.43        -       -     100     8       0
    300  3    2NM        16.99       1.32     12.9     379     119    32       0
    300  3    exact   >20 wall      14.47        -       -     149    32       0
    500  0.1  2NM     >20 wall       0.93        -       -     109     8       0
    500  0.1  exact   >20 wall       1.59        -       -     115     8       0
    500  1    2NM     >20 wall       0.79        -       -     110     8       0
    500  1    exact   >20 wall       1.93        -       -     115     8       0
    500  3    2NM     >20 wall       5.62        -       -     146    32       0
    500  3    exact   >20 wall      42.77        -       -     196    32       0

(optima equal to the whole LP to 4e-16 relative where it finished). The exact form at
N = 500, eps = 3 is within a minute but not yet a few seconds: nearly all of it is the
last restricted LP (32 outputs x 500 inputs of the exact l1-ball dual form, ~35 s).

Run: ``.venv/bin/python benchmarks/bench_linear_design.py [N ...] [--eps E ...]
[--timeout S]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def one(n: int, form: str, path: str, eps: float) -> None:
    """Child process: one solve, one JSON line on stdout."""
    import resource

    import numpy as np

    from pmlkit.design.linear import _column_generation_design, _full_lp_design
    from pmlkit.sets import L1Ball

    rng = np.random.default_rng(n)
    p = rng.dirichlet(np.full(n, 5.0))
    beta = 1.5 * float(p.min()) if form == "2NM" else 0.2
    ball = L1Ball(p, beta)
    g = np.eye(n)
    stats: dict[str, object] = {}
    t0 = time.process_time()
    if path == "old":
        w = _full_lp_design(ball, p, eps, g)
    else:
        w = _column_generation_design(ball, p, eps, g, stats=stats)
        assert w is not None
    cpu = time.process_time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"cpu": cpu, "mb": peak, "accuracy": float(p @ np.diag(w)),
                      "columns": stats.get("columns"), "rounds": stats.get("rounds"),
                      "priced": stats.get("priced")}))


def run(n: int, form: str, path: str, eps: float, timeout: float) -> dict | None:
    cmd = [sys.executable, __file__, "--one", str(n), form, path, "--eps", str(eps)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="*", type=int, default=[50, 100, 200, 300, 500])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0])
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--one", nargs=3, default=None)
    a = ap.parse_args()
    if a.one:
        one(int(a.one[0]), a.one[1], a.one[2], a.eps[0])
        return
    print(f"eps in {a.eps}; CPU seconds and peak MB per child process; old stopped after "
          f"{a.timeout:g} s wall")
    print(f"{'N':>5} {'eps':>5} {'form':>6} {'old cpu s':>10} {'new cpu s':>10} {'old/new':>8} "
          f"{'old MB':>7} {'new MB':>7} {'cols':>5} {'priced':>6} {'accuracy':>10} "
          f"{'rel diff':>9}")
    for n, eps, form in ((n, e, f) for n in a.sizes for e in a.eps
                         for f in ("2NM", "exact")):
        new = run(n, form, "new", eps, 10 * a.timeout)
        old = run(n, form, "old", eps, a.timeout)
        assert new is not None
        if old is None:
            o_cpu = f">{a.timeout:g} wall"
            ratio = o_mb = diff = "-"
        else:
            o_cpu = f"{old['cpu']:.2f}"
            ratio = f"{old['cpu'] / new['cpu']:.1f}"
            o_mb = f"{old['mb']:.0f}"
            diff = f"{abs(new['accuracy'] - old['accuracy']) / old['accuracy']:.1e}"
        print(f"{n:>5} {eps:>5g} {form:>6} {o_cpu:>10} {new['cpu']:>10.2f} {ratio:>8} "
              f"{o_mb:>7} {new['mb']:>7.0f} {new['columns']:>5} {new['priced']:>6} "
              f"{new['accuracy']:>10.6f} {diff:>9}", flush=True)


if __name__ == "__main__":
    main()
