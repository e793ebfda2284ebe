"""Overhead of the scikit-learn transformer and of pickling a certified mechanism.

Run: ``.venv/bin/python benchmarks/bench_sklearn.py [--rows N] [--repeat R]``.

In one run, side by side (best of ``--repeat`` wall-clock runs, perf_counter):

1. ``PMLPrivatizer.transform`` on a pandas DataFrame of ``--rows`` rows and two string
   columns (k = 2 and k = 4) against calling :func:`pmlkit.privatize` on each column
   directly, both with the secure default randomness. The ratio is the transformer's
   overhead (frame copy, validation, column reassembly); the sampling is shared.
2. The same on a 2-D numpy object array.
3. Round trips of a designed mechanism (N = 4): ``pickle.loads(pickle.dumps(m))`` (which
   re-verifies the certificate: one exact worst case over the set), ``copy.deepcopy``
   (carries the checked status over, no re-verification) and ``Mechanism.from_dict``
   of its JSON document (re-verifies the certificate and rebuilds the confidence set).
"""

from __future__ import annotations

import argparse
import copy
import pickle
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import pandas as pd

    import pmlkit
    from pmlkit.mechanism import Mechanism
    from pmlkit.sklearn import PMLPrivatizer

    rng = np.random.default_rng(0)
    ref = pd.DataFrame({"s": rng.choice(["F", "M"], 5000),
                        "e": rng.choice(["a", "b", "c", "d"], 5000)})
    n = args.rows
    data = pd.DataFrame({"s": rng.choice(["F", "M"], n), "e": rng.choice(["a", "b", "c", "d"], n)})
    priv = PMLPrivatizer(eps=1.0, delta=1e-6, reference=ref).fit(data.iloc[:10])
    mechs = priv.mechanisms_

    def direct_frame() -> None:
        out = data.copy()
        for j, m in enumerate(mechs):
            out.isetitem(j, pmlkit.privatize(m, data.iloc[:, j]))

    arr = data.to_numpy()
    priv_np = PMLPrivatizer(eps=1.0, delta=1e-6, reference=ref.to_numpy()).fit(arr[:10])

    def direct_array() -> None:
        np.column_stack([pmlkit.privatize(m, arr[:, j]) for j, m in enumerate(mechs)])

    rows = []
    for name, via, direct in (("pandas", lambda: priv.transform(data), direct_frame),
                              ("numpy object", lambda: priv_np.transform(arr), direct_array)):
        tv, td = best(via, args.repeat), best(direct, args.repeat)
        rows.append((name, n / tv, n / td, tv / td))
    print(f"transform of {n} rows x 2 string columns (k = 2, 4), secure randomness:")
    print(f"{'input':>14} {'transformer rec/s':>18} {'privatize rec/s':>16} {'ratio':>6}")
    for name, rv, rd, ratio in rows:
        print(f"{name:>14} {rv:18.3g} {rd:16.3g} {ratio:6.2f}")

    mech = mechs[1]
    doc = mech.to_dict()
    reps = 20
    t_pickle = best(lambda: [pickle.loads(pickle.dumps(mech)) for _ in range(reps)],
                    args.repeat) / reps
    t_deep = best(lambda: [copy.deepcopy(mech) for _ in range(reps)], args.repeat) / reps
    t_json = best(lambda: [Mechanism.from_dict(doc) for _ in range(reps)], args.repeat) / reps
    print(f"round trip of a certified {mech.n_inputs}x{mech.n_outputs} mechanism (ms):")
    print(f"  pickle (re-verifies) {1e3 * t_pickle:.3f}   deepcopy {1e3 * t_deep:.3f}   "
          f"JSON from_dict (re-verifies + rebuilds set) {1e3 * t_json:.3f}")


if __name__ == "__main__":
    main()
