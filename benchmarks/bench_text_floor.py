"""The libraries' own cost of matching and taking text labels: the floor of a safe release.

Run: ``.venv/bin/python benchmarks/bench_text_floor.py [--rows N] [--repeat R]
[--ks 2,16,1000]``.

A release of text labels must match every value to a label and write every output label.
pmlkit does both with the libraries' own calls (plus :class:`pmlkit._encoding.ViewKeys` on
Arrow string views), so their time is a floor under the time of ``pmlkit.privatize`` for
each label kind, whatever the draw costs. For ``--rows`` values drawn uniformly from ``k``
labels ``label0, label1, ...``, the best of ``--repeat`` wall times, in ms, of

* ``index_in``: ``pyarrow.compute.index_in`` of a ``string`` array (``pa.Array`` and pandas
  ``string[pyarrow]`` input);
* ``take``: Arrow's ``take`` of the ``k`` labels by ``int64`` indices (their output);
* ``view keys``: :meth:`pmlkit._encoding.ViewKeys.codes` of a ``string_view`` array
  (polars String input, handed over without a copy);
* ``to_arrow``: a polars String Series to ``large_string`` (the copy the view keys avoid);
* ``polars gather``: polars' ``gather`` of the labels (polars output);
* ``get_indexer``: pandas ``Index.get_indexer`` of an object array of Python strings (object
  input), and ``object take``: numpy's ``take`` of the labels as Python objects (its output).

Compare the sums with ``benchmarks/bench_release_paths.py``: a kind whose target time is below
the sum of its two calls cannot meet it on one thread.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from bench_label_kinds import best_time  # the same timing as the other tables


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The best of ``repeat`` wall times of ``fn()``, in ms."""
    return best_time(fn, repeat) * 1e3


def row(k: int, rows: int, repeat: int) -> dict[str, float]:
    """The calls' times for ``rows`` values of ``k`` labels."""
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute as pc

    from pmlkit._encoding import ViewKeys

    names = [f"label{i}" for i in range(k)]
    idx = np.random.default_rng(k).integers(0, k, rows)
    pool = np.array(names, dtype=object)
    obj = pool[idx]
    arr = pa.array(obj, type=pa.string())
    labels = pa.array(names, type=pa.string())
    series = pl.Series("s", obj, dtype=pl.String)
    views = series.to_arrow(compat_level=pl.CompatLevel.newest())
    keys = ViewKeys.build(names)
    assert keys is not None
    index = pd.Index(names, dtype=object)
    plabels = pl.Series("", names)
    return {
        "index_in": best(lambda: pc.index_in(arr, value_set=labels), repeat),
        "take": best(lambda: labels.take(idx), repeat),
        "view keys": best(lambda: keys.codes(views), repeat),
        "to_arrow": best(lambda: series.to_arrow(compat_level=pl.CompatLevel.oldest()),
                         repeat),
        "polars gather": best(lambda: plabels.gather(idx), repeat),
        "get_indexer": best(lambda: index.get_indexer(pd.Index(obj, dtype=object,
                                                               copy=False)), repeat),
        "object take": best(lambda: pool.take(idx), repeat),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ks", default="2,16,1000")
    args = ap.parse_args()
    cols = ["index_in", "take", "view keys", "to_arrow", "polars gather", "get_indexer",
            "object take"]
    print(f"{args.rows:,} values, best of {args.repeat}, ms")
    print(f"{'k':>5} " + " ".join(f"{c:>13}" for c in cols))
    for k in (int(x) for x in args.ks.split(",")):
        times = row(k, args.rows, args.repeat)
        print(f"{k:>5} " + " ".join(f"{times[c]:>13.1f}" for c in cols), flush=True)


if __name__ == "__main__":
    main()
