"""Benchmark: the typed mechanism model (pmlkit.mechanism).

1. Construction: the older keywords (converted once into the typed guarantee and
   provenance) against ``guarantee=``/``provenance=`` directly, for N = 10 and N = 100.
2. Loading a designed mechanism file: format version 1 against version 2 (both verified:
   the set rebuilt from the counts and the worst case recomputed).
3. Release: ``Mechanism.apply`` against ``pmlkit.privatize`` on 10^6 string labels
   (same sampler; the ratio shows the cost of the container dispatch and the report).

Ratios are printed side by side from one run. Run:
``.venv/bin/python benchmarks/bench_model.py``.
"""

from __future__ import annotations

import time

import numpy as np

import pmlkit as pk
from pmlkit.estimation import EmpiricalDistribution
from pmlkit.mechanism import Mechanism


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def construction() -> None:
    print("1. construction (best of 5, ms)")
    print(f"{'N':>5} {'older keywords':>15} {'typed':>10} {'ratio':>7}")
    rng = np.random.default_rng(0)
    for n in (10, 100):
        w = rng.dirichlet(np.ones(n), size=n)
        ball = pk.L1Ball(np.full(n, 1.0 / n), 0.1)
        cap = pk.leakage_capacity(w, ball)
        params = {"eps": cap + 1.0, "utility": "mutual_information", "method": "bench"}
        ref = Mechanism(w, designer="bench", parameters=params,
                        uncertainty_set=ball.to_dict(), certified_eps=cap)
        old = best_of(lambda: Mechanism(w, designer="bench", parameters=params,  # noqa: B023
                                        uncertainty_set=ball.to_dict(),  # noqa: B023
                                        certified_eps=cap))  # noqa: B023
        new = best_of(lambda: Mechanism(w, guarantee=ref.guarantee,  # noqa: B023
                                        provenance=ref.provenance))  # noqa: B023
        print(f"{n:>5} {old * 1e3:>15.3f} {new * 1e3:>10.3f} {old / new:>7.2f}")


def loading() -> None:
    print("2. load a designed mechanism, verified (best of 5, ms)")
    est = EmpiricalDistribution.from_counts([400, 250, 350, 120, 80])
    mech = pk.design_from_samples(est, 1.0, 1e-3).mechanism
    v1, v2 = mech.to_dict(format_version=1), mech.to_dict()
    t1 = best_of(lambda: Mechanism.from_dict(v1))
    t2 = best_of(lambda: Mechanism.from_dict(v2))
    print(f"  v1 {t1 * 1e3:.3f}   v2 {t2 * 1e3:.3f}   v2/v1 {t2 / t1:.2f}")


def release() -> None:
    print("3. release 10^6 labels (best of 3, s)")
    labels = ("Female", "Male", "Other")
    mech = pk.randomized_response(3, 1.0).with_labels(labels)
    values = np.random.default_rng(1).choice(np.array(labels), 1_000_000)
    a = best_of(lambda: mech.apply(values, rng=0), repeat=3)
    b = best_of(lambda: pk.privatize(mech, values, rng=0), repeat=3)
    same = np.array_equal(mech.apply(values, rng=0), pk.privatize(mech, values, rng=0))
    print(f"  apply {a:.3f}   privatize {b:.3f}   apply/privatize {a / b:.2f}   "
          f"identical output: {same}")


if __name__ == "__main__":
    construction()
    loading()
    release()
