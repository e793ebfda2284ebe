"""Benchmark of pmlkit.privatize. Run: ``.venv/bin/python benchmarks/bench_privatize.py``.

In one run, on this machine:

1. records/s for k = 2, 4, 50 (k-ary randomized response at eps = log 3, integer labels)
   with the secure default (AESCounter keyed from os.urandom) and with seeded PCG64,
   against
   * a plain numpy inverse-CDF sampler (loop-free: one uniform per record, a
     ``searchsorted`` over the rows' cumulative sums offset by the row index), PCG64;
   * diffprivlib's randomised response applied record by record (``Binary`` for k = 2,
     ``ExponentialCategorical`` with the Hamming utility, i.e. k-RR, for k > 2), when it
     can be imported (diffprivlib 0.6 imports scikit-learn internals that recent
     scikit-learn removed; only its ``mechanisms`` subpackage is needed, so the broken
     ``diffprivlib.models`` import is stubbed out).
2. peak resident memory of a child process (Linux ``VmHWM``, reset after the imports via
   ``/proc/self/clear_refs``, because ``ru_maxrss`` survives fork+exec and can report the
   parent's peak; ``ru_maxrss`` is printed too) while privatising a Parquet column of
   ``--rows`` rows (default 10^8) written in row groups of 2^20 to a temporary folder,
   deleted afterwards.

Targets: secure >= 10 M records/s for k = 4, >= 100x diffprivlib, peak memory
< 2 GB for 10^8 rows. Time is the best of ``--repeat`` runs (wall clock, perf_counter).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import types

import numpy as np


def rr_matrix(k: int, eps: float) -> np.ndarray:
    w = np.expm1(eps) * np.eye(k) + 1.0
    return w / w.sum(axis=1, keepdims=True)


def numpy_inverse_cdf(w: np.ndarray, x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Loop-free inverse-CDF baseline: y = #{j : x + u >= offset cumsum} - x * k."""
    k = w.shape[1]
    cum = np.cumsum(w, axis=1)
    cum[:, -1] = 1.0
    flat = (np.arange(w.shape[0])[:, None] + cum).ravel()
    u = gen.random(x.shape[0])
    return np.searchsorted(flat, x + u, side="right") - x * k


def best_time(fn, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def diffprivlib_rate(k: int, eps: float, n: int, repeat: int) -> tuple[float | None, str]:
    try:
        sys.modules.setdefault("diffprivlib.models", types.ModuleType("diffprivlib.models"))
        import diffprivlib
        from diffprivlib.mechanisms import Binary, ExponentialCategorical
    except Exception as exc:
        return None, f"diffprivlib not importable: {type(exc).__name__}: {exc}"
    labels = [str(i) for i in range(k)]
    if k == 2:
        mech = Binary(epsilon=eps, value0="0", value1="1")
    else:
        util = [[a, b, 0.0 if a == b else 1.0] for i, a in enumerate(labels)
                for b in labels[i + 1:]]
        # the exponential mechanism with a 0/1 utility and sensitivity 1 is k-RR at eps
        mech = ExponentialCategorical(epsilon=eps, utility_list=util)
    x = [labels[i] for i in np.random.default_rng(0).integers(0, k, n)]

    def run() -> None:
        for v in x:  # record by record, as the library is used
            mech.randomise(v)

    return n / best_time(run, repeat), f"diffprivlib {diffprivlib.__version__}"


def rates(n: int, repeat: int, dp_n: int) -> list[dict]:
    import pmlkit

    eps = math.log(3)
    out = []
    for k in (2, 4, 50):
        w = rr_matrix(k, eps)
        x = np.random.default_rng(1).integers(0, k, n)
        pmlkit.privatize(w, x[:1000])  # warm imports
        secure = n / best_time(lambda w=w, x=x: pmlkit.privatize(w, x), repeat)
        seeded = n / best_time(lambda w=w, x=x: pmlkit.privatize(w, x, rng=42), repeat)
        base = n / best_time(lambda w=w, x=x: numpy_inverse_cdf(
            w, x, np.random.default_rng(42)), repeat)
        dp, dp_note = diffprivlib_rate(k, eps, dp_n, repeat)
        out.append({"k": k, "secure": secure, "seeded_pcg64": seeded,
                    "numpy_inverse_cdf": base, "diffprivlib": dp, "diffprivlib_note": dp_note})
    return out


CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import numpy as np
    from pmlkit import Mechanism
    from pmlkit.privatization import privatize_file
    src, dst = sys.argv[1], sys.argv[2]
    m = Mechanism(np.array([[0.8, 0.2], [0.3, 0.7]]), ("Female", "Male"), ("Female", "Male"))
    def hwm():
        with open("/proc/self/status") as fh:
            return int(next(l for l in fh if l.startswith("VmHWM")).split()[1])
    try:  # ru_maxrss survives fork+exec (it may hold the parent's peak): reset VmHWM
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        reset = True
    except OSError:
        reset = False
    base = hwm()
    t = time.perf_counter()
    rep = privatize_file(m, src, dst, "sex")
    dt = time.perf_counter() - t
    print(json.dumps({"rows": rep.rows, "seconds": dt, "peak_kib": hwm(), "reset": reset,
                      "after_imports_kib": base,
                      "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
""")


def memory(rows: int, folder: str) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = os.path.join(folder, "big.parquet")
    dst = os.path.join(folder, "big_private.parquet")
    group = 1 << 20
    labels = pa.array(["Female", "Male"])
    g = np.random.default_rng(0)
    t = time.perf_counter()
    with pq.ParquetWriter(src, pa.schema([("id", pa.int64()), ("sex", pa.string())])) as wr:
        for start in range(0, rows, group):
            n = min(group, rows - start)
            sex = labels.take(pa.array((g.random(n) < 0.67).astype(np.int8)))
            wr.write_table(pa.table({"id": pa.array(np.arange(start, start + n)),
                                     "sex": sex}))
    gen_s = time.perf_counter() - t
    size = os.path.getsize(src)
    res = subprocess.run([sys.executable, "-c", CHILD, src, dst], capture_output=True,
                         text=True, check=True)
    doc = json.loads(res.stdout)
    doc.update({"input_bytes": size, "output_bytes": os.path.getsize(dst),
                "generate_seconds": gen_s})
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**7, help="records per rate measurement")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dp-n", type=int, default=50_000, help="records for diffprivlib")
    ap.add_argument("--rows", type=int, default=10**8, help="rows of the Parquet column")
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    print(f"records/s, n = {args.n:,} per measurement, best of {args.repeat} "
          f"(diffprivlib: {args.dp_n:,} records)")
    print(f"{'k':>3} {'secure':>12} {'PCG64':>12} {'np inv-CDF':>12} {'diffprivlib':>12} "
          f"{'secure/dpl':>11} {'secure/np':>10}")
    res = rates(args.n, args.repeat, args.dp_n)
    for r in res:
        dp = r["diffprivlib"]
        ratio = f"{r['secure'] / dp:11.0f}" if dp else f"{'n/a':>11}"
        dps = f"{dp / 1e6:11.4f}M" if dp else f"{'n/a':>12}"
        print(f"{r['k']:>3} {r['secure'] / 1e6:11.2f}M {r['seeded_pcg64'] / 1e6:11.2f}M "
              f"{r['numpy_inverse_cdf'] / 1e6:11.2f}M {dps} {ratio} "
              f"{r['secure'] / r['numpy_inverse_cdf']:10.2f}")
    print(f"({res[0]['diffprivlib_note']})")
    if not args.skip_memory:
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as folder:
            mem = memory(args.rows, folder)
        print(f"privatize_file on a {mem['rows']:,}-row Parquet column "
              f"({mem['input_bytes'] / 1e6:.0f} MB in, {mem['output_bytes'] / 1e6:.0f} MB out): "
              f"{mem['seconds']:.1f} s ({mem['rows'] / mem['seconds'] / 1e6:.2f} M rows/s), "
              f"peak RSS {mem['peak_kib'] / 1024:.0f} MiB (VmHWM, reset after imports: "
              f"{mem['reset']}; at start {mem['after_imports_kib'] / 1024:.0f} MiB; "
              f"ru_maxrss {mem['ru_maxrss_kib'] / 1024:.0f} MiB); target < 2048 MiB")


if __name__ == "__main__":
    main()
