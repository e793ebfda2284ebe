"""Label kinds for the attack tests on the privatisation of labels: one release under
one research seed, as a plain list of output labels, for every kind of input column that
pmlkit accepts (shared by tests/test_attack7_kinds.py and its subprocess runs).

The reference is the release of the integer codes through the same matrix (outputs mapped
to the output labels by hand): a label kind only changes how labels are read and written,
never which output a record gets.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

import pmlkit


class Sub(str):
    """A str subclass (equal to its value, hashed like it)."""


class ConstHash(str):
    """A str subclass whose instances all hash alike (every dictionary probe collides)."""

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


def fresh(s: str) -> str:
    """An equal string that is a different object (never interned)."""
    out = "".join([s, "\x00"])[:-1] if s else "".join([])
    return out


def names(k: int, tag: str = "") -> list[str]:
    """``k`` labels: empty, non-ASCII, longer than 8 and than 255 bytes, prefixes of each
    other, labels equal but for the last byte."""
    base = ["", "a", "ab", "abc" * 3, "é", "ü" * 200, "x" * 300, "日本語", "a\x00b",
            "label-with-a-long-common-prefix-0", "label-with-a-long-common-prefix-1"]
    out = [tag + s for s in base][:k]
    i = 0
    while len(out) < k:
        out.append(f"{tag}v{i:04d}-" + "é" * (i % 7))
        i += 1
    return out


def matrix(k: int, m: int, seed: int) -> np.ndarray:
    """A random ``k x m`` matrix heavier on the diagonal; from a million entries on, a
    shared random background plus the diagonal (its tables are quick to build)."""
    g = np.random.default_rng(seed)
    if k * m >= 1 << 20:
        w = np.tile(g.gamma(0.7, size=m) + 1e-3, (k, 1))
    else:
        w = g.gamma(0.7, size=(k, m)) + 1e-3
    w += 3.0 * np.eye(k, m)
    out: np.ndarray = w / w.sum(axis=1, keepdims=True)
    return out


def column(kind: str, labels: list[str], codes: np.ndarray,
           extra: list[str] | None = None) -> Any:
    """The records ``labels[codes]`` as a column of ``kind`` (``extra``: the output labels,
    which an Enum's categories include)."""
    pool = np.array(labels, dtype=object)
    vals = pool[codes]
    if kind == "object":
        # half the records hold the mechanism's own label objects, half equal copies
        out = vals.copy()
        out[::2] = [fresh(s) for s in vals[::2].tolist()]
        return out
    if kind == "object-sub":
        return np.array([Sub(s) for s in vals.tolist()] or [], dtype=object)
    if kind == "object-consthash":
        return np.array([ConstHash(s) for s in vals.tolist()] or [], dtype=object)
    if kind == "list":
        return vals.tolist()
    if kind == "numpy-unicode":  # fixed-width numpy strings (<U), trailing NULs stripped
        if any(v.endswith("\x00") for v in labels):
            raise AssertionError("labels ending in NUL cannot be <U")
        return np.array(vals.tolist(), dtype=str) if len(vals) else np.array([], dtype="<U1")
    import pandas as pd
    if kind == "pandas-object":
        return pd.Series(vals, dtype=object)
    if kind == "pandas-arrow":
        return pd.Series(vals, dtype="string[pyarrow]")
    if kind == "pandas-arrow-sliced":  # a slice of a longer column, with its own index
        pre = labels[:1] * 3
        full = pd.Series(pre + vals.tolist(), dtype="string[pyarrow]")
        return full.iloc[3:]
    if kind == "pandas-string":
        return pd.Series(vals, dtype="string[python]")
    if kind == "categorical":  # unordered, unused categories, another order
        cats = ["unused-1", *labels[::-1], "unused-2"]
        return pd.Series(pd.Categorical(vals, categories=cats))
    if kind == "categorical-ordered":
        cats = [*labels[1:], "unused", labels[0]]
        return pd.Series(pd.Categorical(vals, categories=cats, ordered=True))
    import pyarrow as pa
    if kind == "arrow":
        return pa.array(vals.tolist(), pa.string())
    if kind == "arrow-large":
        return pa.array(vals.tolist(), pa.large_string())
    if kind == "arrow-chunked":  # empty chunks around and between
        cut = len(vals) // 3
        empty = pa.array([], pa.string())
        return pa.chunked_array([empty, pa.array(vals[:cut].tolist(), pa.string()), empty,
                                 pa.array(vals[cut:].tolist(), pa.string()), empty],
                                pa.string())
    if kind == "arrow-sliced":  # a slice: the buffers start before the first record
        pre = labels[:1] * 5
        return pa.array(pre + vals.tolist() + pre, pa.string()).slice(5, len(vals))
    if kind == "arrow-view":
        return pa.array(vals.tolist(), pa.string_view())
    if kind == "arrow-dict":
        return pa.array(vals.tolist(), pa.string()).dictionary_encode()
    import polars as pl
    if kind == "polars":
        return pl.Series("s", vals.tolist(), dtype=pl.String)
    if kind == "polars-sliced":
        pre = labels[:1] * 4
        return pl.Series("s", pre + vals.tolist() + pre, dtype=pl.String).slice(4, len(vals))
    if kind == "polars-cat":
        return pl.Series("s", vals.tolist(), dtype=pl.Categorical)
    if kind.startswith("polars-enum"):  # an Enum holding the outputs too (and unused ones)
        outs = (extra or []) if kind == "polars-enum" else []
        cats = list(dict.fromkeys(["unused", *labels[::-1], *outs]))
        return pl.Series("s", vals.tolist(), dtype=pl.Enum(cats))
    raise AssertionError(kind)


KINDS = ["object", "object-sub", "object-consthash", "list", "numpy-unicode",
         "pandas-object", "pandas-arrow", "pandas-arrow-sliced", "pandas-string",
         "categorical", "categorical-ordered", "arrow",
         "arrow-large", "arrow-chunked", "arrow-sliced", "arrow-view", "arrow-dict", "polars",
         "polars-sliced", "polars-cat", "polars-enum", "polars-enum-inputs-only"]


def as_list(out: Any) -> list[Any]:
    """A release of any kind as a list of Python strings (None for a null)."""
    if isinstance(out, np.ndarray):
        return [None if v is None else str(v) for v in out.tolist()]
    if isinstance(out, list):
        return [None if v is None else str(v) for v in out]
    mod = type(out).__module__
    if mod.startswith("pandas"):
        return [None if v is None else str(v) for v in out.astype(object).tolist()]
    if mod.startswith("pyarrow"):
        if hasattr(out, "dictionary_decode"):
            out = out.dictionary_decode()
        return [None if v is None else str(v) for v in out.to_pylist()]
    if mod.startswith("polars"):
        return [None if v is None else str(v) for v in out.to_list()]
    raise AssertionError(type(out))


def reference(w: np.ndarray, outs: list[str], codes: np.ndarray, seed: int) -> list[str]:
    """The release of the integer codes, mapped to the output labels."""
    o = pmlkit.privatize(pmlkit.Mechanism(w), codes, rng=seed)
    return np.array(outs, dtype=object)[np.asarray(o)].tolist()


def digest(values: list[Any]) -> str:
    return hashlib.sha256(json.dumps(values).encode()).hexdigest()


def release_digests(k: int, m: int, n: int, seed: int, kinds: list[str],
                    same: bool = False) -> dict[str, str]:
    """sha256 of the release of every kind (and of the integer reference, key "int");
    ``same``: the output labels are the input labels (the same objects)."""
    ins = names(k)
    outs = list(ins) if same else names(m, "o:")
    w = matrix(k, m, seed)
    mech = pmlkit.Mechanism(w, ins, outs)
    codes = np.random.default_rng(seed + 1).integers(0, k, n)
    res = {"int": digest(reference(w, outs, codes, seed + 2))}
    for kind in kinds:
        res[kind] = digest(as_list(pmlkit.privatize(mech, column(kind, ins, codes, outs),
                                                    rng=seed + 2)))
    return res


if __name__ == "__main__":  # (run in a subprocess: python kindsgen.py k m n seed)
    import sys

    k_, m_, n_, s_ = (int(a) for a in sys.argv[1:5])
    print(json.dumps(release_digests(k_, m_, n_, s_, sys.argv[5].split(","))))
