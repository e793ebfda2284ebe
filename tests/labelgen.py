"""Shared generators for the tests of string label matching: label strategies, the strings
an encoder must not confuse with a label, sliced Arrow arrays, the dictionary-lookup
oracle, and a loader of the optional compiled kernels."""

from __future__ import annotations

import importlib
from typing import Any

from hypothesis import strategies as st

# characters of 1 to 4 UTF-8 bytes, NUL among them
CHARS = st.sampled_from(["a", "b", "\x00", "x", "é", "€", "𝄞", "7"])
LABEL = st.text(CHARS, min_size=0, max_size=9)


def oracle(labels: list[str], values: list[str | None]) -> list[int]:
    """The input index of each value by a plain dictionary lookup (-1: no label)."""
    table = {lab: i for i, lab in enumerate(labels)}
    return [-1 if v is None else table.get(v, -1) for v in values]


def near_misses(labels: list[str]) -> list[str]:
    """Strings an encoder must not confuse with a label: prefixes, extensions by a NUL or a
    character, longer strings sharing the label's first and last 8 bytes, and a change
    past the first 16 bytes."""
    out = []
    for lab in labels:
        out += [lab[:-1], lab + "\x00", lab + "a", "\x00" + lab,
                lab[:8] + "MIDDLE" + lab[-8:], lab + lab, lab[:16] + "z" + lab[16:]]
    return out


@st.composite
def label_values(draw: st.DrawFn) -> tuple[list[str], list[str | None]]:
    """Up to 8 distinct labels and up to 60 values drawn from the labels, their near
    misses and None."""
    labels = draw(st.lists(LABEL, min_size=1, max_size=8, unique=True))
    pool = labels + near_misses(labels) + [None]
    values = draw(st.lists(st.sampled_from(pool), min_size=0, max_size=60))
    return labels, values


def arrow(values: list[str | None], t: Any, offset: int) -> Any:
    """An Arrow array of ``values`` whose buffers start ``offset`` records earlier (a
    slice), so offsets/views do not start at 0."""
    import pyarrow as pa

    pad = ["pad", "\x00\x00"] * offset
    return pa.array(pad[:offset] + values, type=t).slice(offset)


def load_kernels() -> None:
    """Load the optional compiled kernels now if this version has them (they may otherwise
    load only after many records), so that the fast paths are the ones exercised."""
    try:
        kernels = importlib.import_module("pmlkit._kernels")
    except ImportError:
        return
    load = getattr(kernels, "compiled", None)
    if callable(load):
        load()


def as_list(out: Any) -> list[Any]:
    """The values of any release container as a Python list."""
    import numpy as np
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    if isinstance(out, pa.Array | pa.ChunkedArray):
        return list(out.to_pylist())
    if isinstance(out, pl.Series):
        return list(out.to_list())
    if isinstance(out, pd.Series):
        return list(out.tolist())
    if isinstance(out, np.ndarray):
        return list(out.tolist())
    if isinstance(out, pd.Categorical | pd.api.extensions.ExtensionArray):
        return list(out.tolist())
    return list(out)
