"""Attacks on the object outputs of an in-memory release (labels' pointers written by a
compiled loop, each label's reference count raised once by its count).

A released object array must hold exactly one counted reference per record, whatever
happens: every output label's reference count (``sys.getrefcount``) is its count before
the release plus the number of records that got it while the output lives, and comes back
to its count before once the output is dropped -- also when the release fails half way (an
unknown label in a later chunk, a value whose ``__hash__``/``__eq__`` raises, a
``KeyboardInterrupt`` raised from inside the encoding) and after many releases. Under one
seed the labels released are those of the integer-code release of the same matrix
(``labels[idx]``), in the same order, on every input layout (reversed, strided,
read-only, a pandas Series with its index); the same holds with the compiled kernels
disabled (``PMLKIT_NO_NUMBA=1`` in a fresh interpreter). Integer labels ``0..N-1`` with a
value outside them (negative, ``N``, huge; first, last or in a later chunk) are refused
with the error naming that value and nothing is returned.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pmlkit
from labelgen import load_kernels
from pmlkit import Mechanism
from pmlkit.errors import DataError

#: records per chunk of an in-memory release (the object gather works chunk by chunk)
CHUNK = 1 << 20
#: the smallest release the compiled object gather takes
SMALL = 1 << 16


@pytest.fixture(autouse=True, scope="module")
def _kernels_loaded() -> None:
    load_kernels()


def _tag() -> str:
    # labels built at run time: no other code holds references to them (short strings and
    # small ints are shared by the whole interpreter, so their counts move on their own)
    return f"{id(object()):x}"


def _matrix(n_in: int, n_out: int, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    w = g.random((n_in, n_out)) ** 3 + 1e-3
    out: np.ndarray = w / w.sum(axis=1, keepdims=True)
    return out


def _mech(ins: list[Any], outs: list[Any], seed: int = 0) -> Mechanism:
    return Mechanism(_matrix(len(ins), len(outs), seed), input_labels=ins,
                     output_labels=outs)


def _objects(labels: list[Any], codes: np.ndarray) -> np.ndarray:
    arr = np.empty(len(labels), dtype=object)
    arr[:] = labels
    out: np.ndarray = arr[codes]
    return out


def _counts(objs: list[Any]) -> list[int]:
    return [sys.getrefcount(o) for o in objs]


def _held(res: np.ndarray, objs: list[Any]) -> list[int]:
    """How many slots of ``res`` hold each object of ``objs`` (by identity)."""
    by_id = Counter(map(id, res.tolist()))
    return [by_id.get(id(o), 0) for o in objs]


def _label_sets(tag: str) -> dict[str, tuple[list[Any], list[Any] | None]]:
    return {
        "str": ([f"in{i}_{tag}" for i in range(3)], [f"out{j}_{tag}" for j in range(4)]),
        "same": ([f"s{i}_{tag}" for i in range(3)], None),  # outputs = the input labels
        "int": ([10**12 + i for i in range(3)], [2 * 10**12 + j for j in range(2)]),
        "float": ([0.5 + i + 1e-9 for i in range(2)], [7.25 + j + 1e-9 for j in range(3)]),
        "k1": ([f"a{i}_{tag}" for i in range(2)], [f"only_{tag}"]),
        "k1000": ([f"b{i}_{tag}" for i in range(2)], [f"m{j}_{tag}" for j in range(1000)]),
    }


@pytest.mark.parametrize("kind", ["str", "same", "int", "float", "k1", "k1000"])
@pytest.mark.parametrize("n", [0, 1, SMALL - 1, SMALL, CHUNK + 1])
def test_reference_counts_exact(kind: str, n: int) -> None:
    ins, outs = _label_sets(_tag())[kind]
    mech = _mech(ins, outs if outs is not None else ins, seed=n % 7)
    outs_held = list(mech.output_labels)
    ins_held = list(mech.input_labels)
    values = _objects(ins_held, np.random.default_rng(n).integers(0, len(ins_held), n))
    gc.collect()
    before_out, before_in = _counts(outs_held), _counts(ins_held)
    res = pmlkit.privatize(mech, values, rng=3)
    got = _held(res, outs_held)
    assert sum(got) == n  # every record holds one of the mechanism's output objects
    # (for "same" the outputs are the input objects: the input array's references are
    # in both counts, and unchanged)
    assert _counts(outs_held) == [b + c for b, c in zip(before_out, got, strict=True)]
    if kind != "same":
        assert _counts(ins_held) == before_in
    del res
    gc.collect()
    assert _counts(outs_held) == before_out
    assert _counts(ins_held) == before_in


class _HashBoom(str):
    def __hash__(self) -> int:
        raise RuntimeError("hash boom")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq boom")


class _Interrupt(str):
    def __hash__(self) -> int:
        raise KeyboardInterrupt

    def __eq__(self, other: object) -> bool:
        raise KeyboardInterrupt


class _Opaque:
    def __hash__(self) -> int:
        raise RuntimeError("opaque hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("opaque eq")


@pytest.mark.parametrize("bad_kind", ["unknown", "hash", "interrupt", "opaque", "nan", "int"])
@pytest.mark.parametrize("n,where", [(CHUNK + 5, CHUNK + 4), (SMALL + 10, 0),
                                     (SMALL + 10, SMALL + 9)])
def test_failure_half_way_restores_counts(bad_kind: str, n: int, where: int) -> None:
    tag = _tag()
    mech = _mech([f"in{i}_{tag}" for i in range(3)], [f"out{j}_{tag}" for j in range(4)])
    outs, ins = list(mech.output_labels), list(mech.input_labels)
    bad: Any = {"unknown": f"zz_{tag}", "hash": _HashBoom(f"h_{tag}"),
                "interrupt": _Interrupt(f"k_{tag}"), "opaque": _Opaque(),
                "nan": float("nan"), "int": 10**15}[bad_kind]
    values = _objects(ins, np.arange(n) % 3)
    values[where] = bad
    gc.collect()
    before_out, before_bad = _counts(outs), sys.getrefcount(bad)
    with pytest.raises(BaseException) as info:
        pmlkit.privatize(mech, values, rng=1)
    if bad_kind in ("unknown", "nan", "int"):
        assert info.type is DataError
        assert "nothing was privatised" in str(info.value)
    elif bad_kind == "interrupt":
        assert info.type is KeyboardInterrupt
    else:
        assert info.type is RuntimeError
    del info
    gc.collect()
    assert _counts(outs) == before_out
    assert sys.getrefcount(bad) == before_bad


def test_many_releases_return_every_count() -> None:
    tag = _tag()
    mech = _mech([f"in{i}_{tag}" for i in range(3)], [f"out{j}_{tag}" for j in range(5)])
    outs, ins = list(mech.output_labels), list(mech.input_labels)
    values = _objects(ins, np.random.default_rng(0).integers(0, 3, SMALL + 3))
    gc.collect()
    before = _counts(outs)
    kept = [pmlkit.privatize(mech, values, rng=i) for i in range(60)]
    total = np.zeros(len(outs), dtype=np.int64)
    for res in kept:
        total += _held(res, outs)
    del res
    assert _counts(outs) == [b + int(t) for b, t in zip(before, total, strict=True)]
    for i in range(60):  # dropped in another order than made
        kept[(37 * i) % 60] = None
    del kept
    for i in range(140):  # and released-and-dropped at once
        pmlkit.privatize(mech, values[::-1], rng=i)
    gc.collect()
    assert _counts(outs) == before


def _int_release(w: np.ndarray, codes: np.ndarray, seed: int) -> np.ndarray:
    out: np.ndarray = np.asarray(pmlkit.privatize(w, codes, rng=seed))
    return out


@pytest.mark.parametrize("k", [1, 2, 1000])
def test_same_labels_as_integer_release_every_layout(k: int) -> None:
    ins = [f"i{i}" for i in range(3)]
    outs: list[Any] = [f"o{j}" for j in range(k)]
    if k == 1000:  # mixed output kinds
        outs = [j if j % 3 == 0 else (f"s{j}" if j % 3 == 1 else j + 0.5) for j in range(k)]
    w = _matrix(3, k, k)
    mech = Mechanism(w, input_labels=ins, output_labels=outs)
    out_arr = np.empty(k, dtype=object)
    out_arr[:] = outs
    codes = np.random.default_rng(k).integers(0, 3, CHUNK + 7)
    values = _objects(ins, codes)
    ro = values.copy()
    ro.flags.writeable = False
    for name, v, c in (("plain", values, codes), ("reversed", values[::-1], codes[::-1]),
                       ("strided", values[::3], codes[::3]), ("read-only", ro, codes),
                       ("one", values[:1], codes[:1]), ("chunk", values[:CHUNK], codes[:CHUNK])):
        got = pmlkit.privatize(mech, v, rng=11)
        exp = out_arr[_int_release(w, np.ascontiguousarray(c), 11)]
        assert got.dtype == object, name
        assert got.tolist() == exp.tolist(), name
        assert [type(x) for x in got[:50].tolist()] == [type(x) for x in exp[:50].tolist()]
    assert values.tolist() == _objects(ins, codes).tolist()  # the input untouched
    index = np.arange(SMALL + 5)[::-1] * 7
    s = pd.Series(values[:SMALL + 5], index=index, dtype=object, name="col")
    got_s = pmlkit.privatize(mech, s, rng=13)
    assert got_s.index.tolist() == index.tolist()
    assert got_s.tolist() == out_arr[_int_release(w, codes[:SMALL + 5], 13)].tolist()


_CHILD = r"""
import json, sys
import numpy as np, pmlkit
from pmlkit import Mechanism
g = np.random.default_rng(5)
w = g.random((4, 6)) ** 3 + 1e-3
w /= w.sum(axis=1, keepdims=True)
mech = Mechanism(w, input_labels=list("abcd"), output_labels=[f"o{j}" for j in range(6)])
labs = np.empty(4, dtype=object)
labs[:] = list("abcd")
v = labs[g.integers(0, 4, (1 << 20) + 9)]
out = pmlkit.privatize(mech, v, rng=21)
json.dump(out[::997].tolist() + out[-50:].tolist(), sys.stdout)
"""


def test_compiled_and_numpy_paths_release_the_same_labels() -> None:
    outs = []
    src = str(Path(pmlkit.__file__).resolve().parents[1])
    for no_numba in ("0", "1"):
        env = dict(os.environ, PMLKIT_NO_NUMBA=no_numba,
                   PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                              text=True, timeout=120, check=True)
        outs.append(json.loads(done.stdout))
    assert outs[0] == outs[1]
    assert len(outs[0]) > 1000


_OUT_OF_RANGE = [
    (dtype, n, bad, where)
    for dtype in (np.int64, np.int32, np.int8, np.uint16)
    for n in (SMALL + 3, CHUNK + 3)
    for bad, where in ((-1, "last"), (5, "last"), (5, "first"), (127, "later chunk"),
                       (2**40, "last"))
    if np.iinfo(dtype).min <= bad <= np.iinfo(dtype).max
    and not (where == "later chunk" and n <= CHUNK)] + [
    (np.uint64, SMALL + 3, 2**64 - 1, "last"), (np.uint64, CHUNK + 3, 2**63, "later chunk"),
    (np.int64, SMALL + 3, -2**63, "last")]


@pytest.mark.parametrize("dtype,n,bad,where", _OUT_OF_RANGE)
def test_integer_labels_out_of_range_refused(dtype: Any, n: int, bad: int,
                                             where: str) -> None:
    w = _matrix(5, 3, 0)
    codes = (np.arange(n) % 5).astype(dtype)
    pos = {"last": n - 1, "first": 0, "later chunk": CHUNK + 1}[where]
    codes[pos] = bad
    mech = Mechanism(w, input_labels=list(range(5)), output_labels=list(range(3)))
    for m in (w, mech):
        with pytest.raises(DataError) as err:
            pmlkit.privatize(m, codes, rng=2)
        msg = str(err.value)
        assert f"value {bad} appears in 1 row" in msg
        assert "nothing was privatised" in msg


_THREADS_CHILD = r"""
import threading
import numpy as np, pmlkit
mech = pmlkit.Mechanism(np.array([[0.7, 0.3], [0.4, 0.6]]), ["a", "b"], ["x", "y"])
labs = np.empty(2, dtype=object)
labs[:] = ["a", "b"]
v = labs[np.arange(200_000) % 2]
errors = []
def release():
    try:
        for _ in range(3):
            pmlkit.privatize(mech, v)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
threads = [threading.Thread(target=release) for _ in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors)
assert not errors, errors
"""


def test_first_releases_from_several_threads() -> None:
    src = str(Path(pmlkit.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _THREADS_CHILD], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-600:] + done.stderr[-600:]
