"""Benchmark: the exact grid release of Laplace / Gaussian noise against the raw float one.

1. 10^6 labels: ``laplace_noise`` / ``gaussian_noise`` (integer-only exact samplers on the
   grid, secure generator) against ``unsafe_float_*`` (numpy's float samplers, same
   generator), side by side in one run.
2. delta_1 over an interval of P(+1) for 60 eps: the released grid
   (``gaussian_grid_delta1_interval``) against the continuous closed form.

Run: ``.venv/bin/python benchmarks/bench_additive_release.py``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from pmlkit.additive import (
    gaussian_delta1_interval,
    gaussian_grid_delta1_interval,
    gaussian_noise,
    laplace_noise,
)
from pmlkit.additive.sampling import unsafe_float_gaussian_noise, unsafe_float_laplace_noise
from pmlkit.rng import secure_generator


def best_of(fn, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    x = np.where(np.arange(1_000_000) % 3 == 0, 1, -1)
    b, sigma = 2.0 / math.log(2.0), 2.0
    rows = [
        ("laplace", lambda: laplace_noise(x, b, rng=secure_generator()),
         lambda: unsafe_float_laplace_noise(x, b, rng=secure_generator())),
        ("gaussian", lambda: gaussian_noise(x, sigma, rng=secure_generator()),
         lambda: unsafe_float_gaussian_noise(x, sigma, rng=secure_generator())),
    ]
    print("1. 10^6 labels, best of 3 (seconds)")
    for name, grid, raw in rows:
        tg, tr = best_of(grid, 3), best_of(raw, 3)
        print(f"   {name:9s} grid {tg:7.3f}   unsafe float {tr:7.3f}   ratio {tg / tr:6.1f}x")
    eps = np.linspace(0.05, 3.0, 60)
    print("2. delta_1 for 60 eps, best of 2 (seconds)")
    for lo, hi in [(0.4, 0.6), (0.2, 0.9), (0.0, 1.0)]:
        tg = best_of(lambda lo=lo, hi=hi: gaussian_grid_delta1_interval(1.5, lo, hi, eps), 2)
        tc = best_of(lambda lo=lo, hi=hi: gaussian_delta1_interval(1.5, lo, hi, eps), 2)
        d = np.max(np.abs(gaussian_grid_delta1_interval(1.5, lo, hi, eps)
                          - gaussian_delta1_interval(1.5, lo, hi, eps)))
        print(f"   sigma 1.5, P(+1) in [{lo}, {hi}]: grid {tg:6.3f}  continuous {tc:6.3f}  "
              f"ratio {tg / tc:6.1f}x  max |grid - continuous| {d:.2e}")


if __name__ == "__main__":
    main()
