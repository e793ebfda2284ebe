"""Ctrl-C at random moments of releases: never a hang, nothing half-drawn or half-written.

A fresh interpreter (so that a hang is bounded by the subprocess timeout, and so that a
pytest run as a background job, where SIGINT is ignored, still gets its interrupts: the
probe installs its handler explicitly) runs releases of every kind -- object strings,
pandas categorical, Arrow strings, polars String, CSV and Parquet files -- and sends
itself SIGINT (``os.kill`` from a timer thread) at a random moment of each, 200 times.
After every attempt, whether the interrupt landed in the release or not:

* a shared generator stands either where it stood (the release stopped) or exactly one
  word per record further on (it finished): a release's words are taken as one piece;
* the next seeded release equals the reference release (nothing left wedged or cached
  wrongly), and a finished in-memory release equals it too;
* a file release leaves the folder holding the input, plus the finished output only if
  the call returned; that output is the reference output (CSV byte for byte, Parquet
  its table), and no temporary file is left;
* no thread is left running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("polars")

_PROBE = textwrap.dedent(r"""
    import json, os, signal, sys, tempfile, threading, time
    from pathlib import Path
    import numpy as np, pandas as pd, polars as pl, pyarrow as pa
    import pmlkit

    armed = [False]
    landed = [0]

    def on_sigint(signum, frame):
        # raises only while a release is attempted: an interrupt arriving after the
        # attempt is dropped instead of escaping into the checks
        if armed[0]:
            armed[0] = False
            landed[0] += 1
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)  # (explicitly: SIG_IGN in background jobs)

    k, n = 16, 60_000
    names = tuple(f"v{i:02d}" for i in range(k))
    w = np.full((k, k), 1.0) + (np.e - 1.0) * np.eye(k)
    mech = pmlkit.Mechanism(w / w.sum(axis=1, keepdims=True), names, names)
    x = np.random.default_rng(0).integers(0, k, n)
    pool = np.array(names, dtype=object)
    inputs = {
        "object": pool[x],
        "categorical": pd.Series(pd.Categorical(pool[x], categories=list(names))),
        "arrow": pa.array(pool[x].tolist()),
        "polars": pl.Series("s", pool[x].tolist()),
    }

    def as_list(v):
        if isinstance(v, pa.Array):
            return v.to_pylist()
        if isinstance(v, pl.Series):
            return v.to_list()
        return [str(u) for u in v.tolist()]

    reference = as_list(pmlkit.privatize(mech, pool[x], rng=5))
    folder = Path(tempfile.mkdtemp())
    src = {"csv": folder / "in.csv", "parquet": folder / "in.parquet"}
    frame = pd.DataFrame({"id": np.arange(20_000), "s": pool[x[:20_000]]})
    frame.to_csv(src["csv"], index=False)
    frame.to_parquet(src["parquet"], index=False)
    def content(path):
        # CSV: the bytes; Parquet: the table (its footer records the release's time)
        if path.suffix == ".csv":
            return path.read_bytes()
        import pyarrow.parquet as pq
        return pq.read_table(path).to_pydict()

    ref_file = {}
    for ext, path in src.items():
        out = folder / f"ref.{ext}"
        pmlkit.privatize_file(mech, path, out, "s", rng=5)
        ref_file[ext] = content(out)
        for p in folder.iterdir():
            if p.name.startswith("ref."):
                p.unlink()
    expected_files = {p.name for p in folder.iterdir()}

    def state_word(g):
        return g.bit_generator.state["state"]["state"]

    words_after = {}  # the state one word per record on, from a fixed start
    probe = np.random.Generator(np.random.PCG64(11))
    start_state = state_word(probe)
    probe.bit_generator.advance(n)
    words_after = state_word(probe)

    kinds = [*inputs, "csv", "parquet"]
    durations = {}
    for kind in kinds * 3:  # each release's usual length (the shortest of three runs)
        t0 = time.perf_counter()
        if kind in inputs:
            pmlkit.privatize(mech, inputs[kind], rng=5)
        else:
            out = folder / f"out.{kind}"
            pmlkit.privatize_file(mech, src[kind], out, "s", rng=5, overwrite=True)
            for p in folder.iterdir():
                if p.name.startswith("out."):
                    p.unlink()
        durations[kind] = min(durations.get(kind, 1e9), time.perf_counter() - t0)

    rng = np.random.default_rng(int(sys.argv[1]))
    threads_before = threading.active_count()
    finished = stopped = late = 0
    for attempt in range(200):
        kind = kinds[attempt % len(kinds)]
        # (a moment over the release and up to half its usual length past it: a release
        # slowed by the load of other processes still finishes often enough)
        delay = float(rng.uniform(0.0, 1.5 * durations[kind]))
        timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
        gen = np.random.Generator(np.random.PCG64(11))
        result = None
        out = folder / f"out.{kind}"
        try:
            armed[0] = True
            timer.start()
            if kind in inputs:
                result = pmlkit.privatize(mech, inputs[kind], rng=gen)
            else:
                pmlkit.privatize_file(mech, src[kind], out, "s", rng=5)
                result = True
            armed[0] = False
        except KeyboardInterrupt:
            armed[0] = False
            # (an interrupt between the call's return and the disarming: it landed, the
            # release had finished)
            late += result is not None
        timer.join()
        time.sleep(0.002)  # (an interrupt sent at the very end is handled, disarmed)
        if result is None:
            stopped += 1
        else:
            finished += 1
        if kind in inputs:
            # (an interrupt just after the call returned, before its result was stored,
            # finds the release done: the generator moved on)
            moved = state_word(gen)
            assert moved in (start_state, words_after), (kind, attempt)
            assert result is None or moved == words_after, (kind, attempt)
            if result is not None:
                again = pmlkit.privatize(mech, inputs[kind],
                                         rng=np.random.Generator(np.random.PCG64(11)))
                assert as_list(result) == as_list(again), (kind, attempt)
            assert as_list(pmlkit.privatize(mech, inputs[kind], rng=5)) == reference, kind
        else:
            names_now = {p.name for p in folder.iterdir()}
            extra = names_now - expected_files
            if result is None:
                # nothing, or (an interrupt just after the call returned) all of it
                assert extra in (set(), {out.name, out.name + ".pmlkit.json"}), \
                    (kind, attempt, sorted(extra))
                assert not extra or content(out) == ref_file[kind], (kind, attempt)
            else:
                assert extra == {out.name, out.name + ".pmlkit.json"}, (kind, sorted(extra))
                assert content(out) == ref_file[kind], (kind, attempt)
            for p in folder.iterdir():
                if p.name.startswith("out."):
                    p.unlink()
        assert threading.active_count() <= threads_before, \
            (kind, attempt, [t.name for t in threading.enumerate()])
    print(json.dumps({"finished": finished, "stopped": stopped, "landed": landed[0],
                      "late": late}))
""")


def test_two_hundred_interrupts_at_random_moments() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", _PROBE, "2026"], capture_output=True,
                          text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["finished"] + got["stopped"] == 200
    # the interrupts landed inside releases often enough to test something, and some
    # releases finished (the moments spread over each release and a little past it)
    assert got["stopped"] >= 40 and got["finished"] >= 10, got
    # every interrupt that landed stopped its release, or came after the release returned
    assert got["landed"] == got["stopped"] + got["late"], got


def test_an_interrupt_while_the_parquet_writer_is_freed_stops_the_release(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C arriving while pyarrow's ``ParquetWriter.__del__`` ran (as the last
    reference to the closed writer went) was dropped by Python ("Exception ignored in
    __del__"), and the release published as if none came: seen about once in 800 random
    interrupts of a Parquet release. The signal is sent from inside ``__del__`` here: the
    release must stop and publish nothing."""
    import signal

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import pmlkit

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": ["a", "b"] * 500, "id": list(range(1000))}), src)
    mech = pmlkit.Mechanism(np.array([[0.75, 0.25], [0.25, 0.75]]), ("a", "b"), ("a", "b"))
    real = pq.ParquetWriter.__del__

    def deleting(self: object) -> None:
        signal.raise_signal(signal.SIGINT)
        real(self)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        monkeypatch.setattr(pq.ParquetWriter, "__del__", deleting)
        out = tmp_path / "out.parquet"
        with pytest.raises(KeyboardInterrupt):
            pmlkit.privatize_file(mech, src, out, "s", rng=5)
        monkeypatch.undo()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]
