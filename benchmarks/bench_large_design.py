"""Benchmark: the column-generation sub-convex (mutual information) designer at scale.

For the paper's l1-ball (``beta*(delta)``, Thm weissman) and the best tighter confidence set
(``confidence_set(..., confidence="auto")``), a geometric prior (ratio 0.85) estimated from
m = 10^4 samples (counts ``round(m p)``), delta = 1e-6, N = 8, 12, 16, 24, 32, 50 and
eps in {0.1, log 2, 2}: time, peak memory (the rise of the process's resident peak),
mutual information, certified optimality gap; for N = 12 the former all-rays LP in the
same run (speed ratio, same value; a tiny design first, so that no row times imports); for
N >= 13 the value of the former fallback (best certified candidate: the accuracy LP over
the exact set, and the fixed-prior design at eps' for l1-balls when it certifies) and the
gain over it. Then Adult's native-country and occupation x sex columns (skipped without
the data: set ``PMLKIT_DATA`` to the folder holding ``adult.data``).

Run: ``.venv/bin/python benchmarks/bench_large_design.py [max_work] [Ns] [adult] [sets]``
(default 60 work units, about a second each, per design for N = 50 and the Adult
columns, a third of it below; ``Ns`` a
comma-separated subset of the alphabet sizes, ``adult`` one of ``adult`` (default),
``noadult``, ``only``: to split the table over processes; ``sets`` one of ``all``
(default), ``l1``, ``best``: only the rows of that set).
"""

from __future__ import annotations

import math
import sys
import time
import warnings

import numpy as np

from pmlkit.confidence import confidence_set
from pmlkit.design import optimal_mechanism_for_set
from pmlkit.design.pipeline import _exact_rays, _fallback, _Utility
from pmlkit.design.subconvex import ray_lp_matrix, ray_values
from pmlkit.errors import PMLWarning
from pmlkit.estimation import l1_radius
from pmlkit.sets import L1Ball
from pmlkit.utility import mutual_information

M, DELTA = 10_000, 1e-6
EPSS = (0.1, math.log(2), 2.0)
NS = (8, 12, 16, 24, 32, 50)


def geometric_counts(n: int) -> np.ndarray:
    p = 0.85 ** np.arange(n)
    return np.maximum(np.round(M * p / p.sum()), 1.0)


def sets_for(counts: np.ndarray) -> list[tuple[str, object]]:
    p = counts / counts.sum()
    out: list[tuple[str, object]] = [("l1 ball", L1Ball(p, l1_radius(DELTA, m=int(counts.sum()),
                                                                     n=counts.size)))]
    cs = confidence_set(counts, DELTA, confidence="auto")
    out.append((f"best ({cs.method})", cs.set))
    return out


def _rss_peak_kib() -> float:
    """Peak resident memory of this process (Linux ``VmHWM``, KiB), ``nan`` elsewhere."""
    try:
        with open("/proc/self/status") as fh:
            return float(next(ln for ln in fh if ln.startswith("VmHWM")).split()[1])
    except (OSError, StopIteration):
        return math.nan


def design(uset, p, eps, secs):
    """Time, peak memory (MiB the process's resident peak rose by during the design:
    Linux ``VmHWM`` reset just before it; ``nan`` elsewhere), MI, gap and matrix.

    Untraced: tracemalloc slowed the Python parts of the designer (heuristic columns,
    exact evaluation, the spatial branch and bound's LP calls) by enough to change the gap
    reached in a fixed budget, and it never saw the memory of numba and HiGHS."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:  # the peak is counted from here
            fh.write("5")
        base = _rss_peak_kib()
    except OSError:
        base = math.nan
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PMLWarning)
        # the budget in work units (counted: the same designs on any machine load)
        mech = optimal_mechanism_for_set(uset, eps, prior=p, max_work=secs)
    dt = time.perf_counter() - t0
    peak = (_rss_peak_kib() - base) / 1024
    w = np.asarray(mech.matrix)
    return dt, peak, float(mutual_information(w, p)), mech.parameters["optimality_gap"], w


def old_enumeration(uset, p, eps):
    """The former designer: every candidate ray (per-candidate worst distributions, as
    before the block-sum generator) in one HiGHS LP."""
    import pmlkit.design.subconvex as sc

    sc._AGGREGATED = False
    try:
        t0 = time.perf_counter()
        rays = _exact_rays(uset, p)(eps)
        w = ray_lp_matrix(rays, ray_values(rays, p, "mutual_information"))
        return time.perf_counter() - t0, float(mutual_information(w, p))
    finally:
        sc._AGGREGATED = True


def warm_up() -> None:
    """One tiny design before any timing: the first design of the run would otherwise also
    time the imports (scipy.optimize, HiGHS: over a second on a loaded machine) that the
    all-rays LP timed after it gets for free."""
    counts = geometric_counts(4)
    p = counts / counts.sum()
    for _, uset in sets_for(counts):
        design(uset, p, 1.0, 10.0)
    # the level-cell kernels are compiled once (then cached on disk): not in a row's time
    from pmlkit.design.colgen import BoxLagrangeOracle

    if BoxLagrangeOracle.available():
        uset = sets_for(counts)[1][1]
        BoxLagrangeOracle(uset, p, 1.0).search(np.zeros(4), thr=0.0, deadline=math.inf,
                                               max_nodes=10)


def old_fallback(uset, p, eps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w, _ = _fallback(uset, p, eps, _Utility("mutual_information", p.size))
    return float(mutual_information(w, p))


def row(name, n, eps, dt, peak, val, gap, extra=""):
    g = "n/a" if gap is None else f"{gap:.2e}"
    print(f"{name:22s} {n:3d} {eps:6.3f} {dt:8.2f} {peak:8.1f} {val:10.6f} {g:>9s} {extra}",
          flush=True)


def main() -> None:
    big = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    ns = tuple(int(x) for x in sys.argv[2].split(",")) if len(sys.argv) > 2 else NS
    which = sys.argv[3] if len(sys.argv) > 3 else "adult"
    only = sys.argv[4] if len(sys.argv) > 4 else "all"
    print(f"m = {M}, delta = {DELTA}, geometric prior (0.85); budget {big:g} s (N = 50)")
    print(f"{'set':22s} {'N':>3s} {'eps':>6s} {'time s':>8s} {'peak MB':>8s} "
          f"{'MI nats':>10s} {'gap':>9s} notes")
    warm_up()
    for n in ns if which != "only" else ():
        counts = geometric_counts(n)
        p = counts / counts.sum()
        secs = big if n >= 50 else big / 3
        for name, uset in sets_for(counts):
            if only != "all" and not name.startswith(only):
                continue
            for eps in EPSS:
                dt, peak, val, gap, w = design(uset, p, eps, secs)
                extra = f"outputs {w.shape[1]}"
                if n == 12:
                    t_old, v_old = old_enumeration(uset, p, eps)
                    extra += (f"; all-rays LP {t_old:.2f} s, {t_old / dt:.1f}x slower, "
                              f"value diff {v_old - val:+.1e}")
                elif n > 12:
                    v_fb = old_fallback(uset, p, eps)
                    extra += f"; old fallback {v_fb:.6f}, gain {val - v_fb:+.6f}"
                row(name, n, eps, dt, peak, val, gap, extra)
    if which != "noadult":
        adult(big, only)


def adult(secs: float, only: str = "all") -> None:
    try:
        from pmlkit.datasets import load_adult

        df = load_adult(split="data")
    except Exception as exc:
        print(f"Adult: skipped ({type(exc).__name__}: {exc})")
        return
    cols = {
        "native-country": df["native-country"].astype(str),
        "occupation x sex": df["occupation"].astype(str) + " | " + df["sex"].astype(str),
    }
    for name, col in cols.items():
        col = col[~col.str.contains(r"\?", regex=True)]
        counts = col.value_counts().to_numpy(dtype=np.float64)
        p = counts / counts.sum()
        for sname, uset in sets_for(counts):
            if only != "all" and not sname.startswith(only):
                continue
            eps = math.log(2)
            dt, peak, val, gap, w = design(uset, p, eps, secs)
            v_fb = old_fallback(uset, p, eps)
            row(f"Adult {name} {sname}"[:22], counts.size, eps, dt, peak, val, gap,
                f"outputs {w.shape[1]}; old fallback {v_fb:.6f}, gain {val - v_fb:+.6f}")


if __name__ == "__main__":
    main()
