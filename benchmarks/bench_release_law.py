"""The law of a release, per label kind: chi-square of the released pairs against W.

For each label kind pmlkit releases (``int64``, pandas categorical, pandas
``string[pyarrow]``, ``pa.Array``, polars String, Python-object strings) and for a
two-column Parquet file released through :func:`pmlkit.privatize_file`, ``--rows``
records (default 10^7) with input labels drawn uniformly (numpy, seed 33: the inputs only)
are privatised with the **secure default** randomness through a fixed random ``k x k``
mechanism (rows Dirichlet(1), seed 34; default ``k = 16``). The released pairs
(input, output) are counted and compared with their expectation ``n_x W[x, y]`` by
Pearson's chi-square, one statistic per kind summed over the rows of W (degrees of freedom
``k (k - 1)``; cells with an expectation below 5 pooled per row). A p-value below 1e-3 is
printed as ``SUSPECT``. This is the check that the release draws exactly W whatever the
container, not a timing.

Run: ``.venv/bin/python benchmarks/bench_release_law.py [--rows N] [--k K]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import pmlkit


def _chi_square(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, int]:
    k, m = w.shape
    counts = np.bincount(x * m + y, minlength=k * m).reshape(k, m).astype(np.float64)
    n_x = counts.sum(axis=1)
    stat, df = 0.0, 0
    for i in range(k):
        exp = n_x[i] * w[i]
        small = exp < 5
        obs_i, exp_i = counts[i][~small], exp[~small]
        if small.any():  # pool the small cells of this row into one
            obs_i = np.append(obs_i, counts[i][small].sum())
            exp_i = np.append(exp_i, exp[small].sum())
        keep = exp_i > 0
        stat += float(np.sum((obs_i[keep] - exp_i[keep]) ** 2 / exp_i[keep]))
        df += int(keep.sum()) - 1
    return stat, df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--k", type=int, default=16)
    args = ap.parse_args()
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, k = args.rows, args.k
    w = np.random.default_rng(34).dirichlet(np.ones(k), size=k)
    names = [f"v{i:04d}" for i in range(k)]
    m_int = pmlkit.Mechanism(w, tuple(range(k)), tuple(range(k)))
    m_str = pmlkit.Mechanism(w, tuple(names), tuple(names))
    x = np.random.default_rng(33).integers(0, k, n)
    labels = np.array(names, dtype=object)

    def codes_of(out: Any) -> np.ndarray:
        if isinstance(out, pl.Series):
            out = out.to_arrow()
        if isinstance(out, pa.ChunkedArray | pa.Array):
            out = out.to_pandas()
        cat = pd.Categorical(np.asarray(out, dtype=object), categories=names)
        codes = np.asarray(cat.codes, dtype=np.int64)
        assert (codes >= 0).all(), "a released value is not an output label"
        return codes

    kinds: list[tuple[str, Callable[[], np.ndarray]]] = [
        ("int64", lambda: np.asarray(pmlkit.privatize(m_int, x), dtype=np.int64)),
        ("categorical", lambda: codes_of(pmlkit.privatize(
            m_str, pd.Series(pd.Categorical.from_codes(x, names))))),
        ("string[pyarrow]", lambda: codes_of(pmlkit.privatize(
            m_str, pd.Series(labels[x], dtype="string[pyarrow]")))),
        ("pa.Array", lambda: codes_of(pmlkit.privatize(m_str, pa.array(labels[x],
                                                                         pa.string())))),
        ("polars String", lambda: codes_of(pmlkit.privatize(
            m_str, pl.Series("s", labels[x], dtype=pl.String)))),
        ("object str", lambda: codes_of(pmlkit.privatize(m_str, labels[x]))),
    ]
    print(f"{n:,} records, k = {k}, secure default randomness; df = k (k - 1) = "
          f"{k * (k - 1)} unless cells were pooled")
    # seconds: the whole row (building the input container, the release, decoding the
    # output to codes), not the release's speed (bench_throughput.py times that)
    print(f"{'kind':<28} {'chi-square':>12} {'df':>5} {'p-value':>9}  {'row s':>7}")

    def show(kind: str, y: np.ndarray, xs: np.ndarray, t: float,
             law: np.ndarray | None = None) -> None:
        stat, df = _chi_square(xs, y, w if law is None else law)
        p = float(stats.chi2.sf(stat, df))
        flag = "  SUSPECT" if p < 1e-3 else ""
        print(f"{kind:<28} {stat:>12.1f} {df:>5} {p:>9.3f}  {t:>7.1f}{flag}", flush=True)

    for kind, run in kinds:
        t0 = time.perf_counter()
        y = run()
        show(kind, y, x, time.perf_counter() - t0)
        if kind == "int64":
            # control: the same release against a W moved by 0.002 in one row (two entries)
            # must be flagged, so a pass above means something
            moved = w.copy()
            j, l = int(np.argmax(moved[0])), int(np.argmin(moved[0]))
            step = min(0.002, float(moved[0, j]))
            moved[0, j] -= step
            moved[0, l] += step
            show("  control: W moved by 0.002", y, x, 0.0, moved)
    # a two-column Parquet file through privatize_file (one mechanism per column; the
    # second column's inputs are the first's shifted by one, so the columns are dependent)
    x2 = (x + 1) % k
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.parquet", Path(tmp) / "out.parquet"
        pq.write_table(pa.table({"a": pa.array(labels[x], pa.string()),
                                 "b": pa.array(labels[x2], pa.string())}), src)
        t0 = time.perf_counter()
        pmlkit.privatize_file({"a": m_str, "b": m_str}, src, dst, ["a", "b"])
        t = time.perf_counter() - t0
        out = pq.read_table(dst)
        ya = codes_of(out.column("a"))
        yb = codes_of(out.column("b"))
    show("Parquet file, column a", ya, x, t)
    show("Parquet file, column b", yb, x2, t)
    # independence of the two columns' draws given the inputs: the pair (y_a, y_b) given
    # (x_a, x_b) must follow W[x_a] (x) W[x_b]; x_b is a function of x_a here, so the joint
    # law given x_a is the outer product of two rows of W
    joint = np.einsum("ij,ik->ijk", w, w[(np.arange(k) + 1) % k]).reshape(k, k * k)
    show("Parquet file, (a, b) jointly", ya * k + yb, x, t, joint)


if __name__ == "__main__":
    main()
