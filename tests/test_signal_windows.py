"""Signals at the worst moment of a file release leave no temporary file and no thread.

Python runs a signal handler in the main thread between any two bytecodes, so SIGINT
(KeyboardInterrupt) or SIGTERM (SystemExit, while a release runs) can surface at any line
of the calling thread: between a function
returning the finished temporary file and the caller recording it, or in the middle of
the clean-up of a first interrupt (Ctrl-C pressed twice). These tests deliver a real
signal (``signal.raise_signal``, so the handler in place decides what it does) when the
calling thread reaches a given line of the release code, found by its text so that the
tests survive edits, and check that the folder holds only the input afterwards and that
no pipeline thread is left running.
"""

from __future__ import annotations

import linecache
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

import pmlkit
import pmlkit.privatization._engine as engine_mod
from pmlkit.privatization._publish import deferred_signals

MECH = pmlkit.Mechanism(np.array([[0.75, 0.25], [0.25, 0.75]]), ("F", "M"), ("F", "M"))
_HERE = os.path.dirname(engine_mod.__file__)


@pytest.fixture(autouse=True)
def _sigint_raises() -> Any:
    """SIGINT raises KeyboardInterrupt in these tests also when pytest runs as a
    background job (where the shell leaves SIGINT ignored, and ``raise_signal`` would do
    nothing)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _input(folder: Path, n: int = 3000) -> Path:
    src = folder / "in.csv"
    src.write_text("id,sex\n" + "".join(f"{i},{'FM'[i % 3 == 0]}\n" for i in range(n)))
    return src


def _run_with_signal(folder: Path, out: str, at: Callable[[str], bool], *, after: int = 0,
                     sig: int = signal.SIGINT, engine: str = "pyarrow",
                     first: BaseException | None = None) -> tuple[str, list[str]]:
    """Release ``folder/in.csv`` to ``folder/out``; when the calling thread reaches a line
    of the privatization package whose stripped text satisfies ``at`` (then ``after`` more
    line events), send ``sig`` to this process. Returns the exception's name and the
    names of the pipeline threads still running."""
    src = _input(folder)
    seen = {"hit": False, "left": after}

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event != "line" or seen["left"] < 0:
            return local
        text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        if not seen["hit"] and at(text):
            seen["hit"] = True
        if seen["hit"]:
            seen["left"] -= 1
            if seen["left"] < 0:
                signal.raise_signal(sig)
        return local

    def glob(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(_HERE) else None

    result = "none"
    sys.settrace(glob)
    try:
        pmlkit.privatize_file(MECH, src, folder / out, "sex", batch_rows=700, rng=1,
                              engine=engine)
    except (KeyboardInterrupt, SystemExit) as exc:
        result = type(exc).__name__
    finally:
        sys.settrace(None)
    assert seen["hit"], "the line was never reached: the test no longer tests anything"
    return result, _pipeline_threads()


def _pipeline_threads() -> list[str]:
    """Threads of pmlkit's still running (a release starts none: always empty)."""
    return [t.name for t in threading.enumerate() if t.name.startswith("pmlkit")]


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("sig,exc", [(signal.SIGINT, "KeyboardInterrupt"),
                                     (signal.SIGTERM, "SystemExit")])
def test_signal_between_the_finished_file_and_its_record(tmp_path, sig, exc):
    """The temporary output is finished and returned, and the signal arrives before the
    caller has recorded it among the files to publish: it is removed all the same."""
    result, threads = _run_with_signal(tmp_path, "out.parquet",
                                       lambda t: t == "staged.append(st)", sig=sig)
    assert result == exc and threads == []
    assert _files(tmp_path) == ["in.csv"]


@pytest.mark.parametrize("line", ["arrived: list[int] = []", "steps[done]()"])
def test_second_interrupt_during_the_clean_up(tmp_path, monkeypatch, line):
    """Ctrl-C twice: the first interrupt (here raised by the drawing of the first batch)
    starts the clean-up, the second arrives in the middle of it: while the clean-up sets
    up holding signals back (the attempt is made again) or once they are held back. The
    clean-up still finishes (the second interrupt is raised after it): no temporary file
    and no thread is left."""
    real = engine_mod.privatize_batch
    calls = {"n": 0}

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(engine_mod, "privatize_batch", interrupted)
    result, threads = _run_with_signal(tmp_path, "out.csv", lambda t: t == line)
    assert result == "KeyboardInterrupt" and threads == []
    assert _files(tmp_path) == ["in.csv"]


def test_deferred_signals_hold_back_then_deliver():
    """A signal arriving inside the block is delivered once, after it, to the handler
    that was in place; outside the block signals act at once."""
    order = []
    old = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with deferred_signals():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            order.append("block done")
    assert order == ["block done"]
    assert signal.getsignal(signal.SIGINT) is old
    with deferred_signals():  # nothing arrived: nothing raised
        order.append("quiet")
    assert order == ["block done", "quiet"]


@pytest.mark.parametrize("nth,sig", [(1, signal.SIGINT), (2, signal.SIGINT), (2, signal.SIGTERM)])
def test_signal_just_after_a_commit_undoes_it(tmp_path, nth, sig):
    """The signal arrives at the first line after the data file (``nth=1``) or its
    manifest (``nth=2``) was published: what was published is removed again, so the
    folder never holds data without its manifest or a manifest without its data."""
    src = _input(tmp_path)
    state = {"returns": 0, "armed": False, "fired": False}

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return" and frame.f_code.co_name == "commit":
            state["returns"] += 1
            state["armed"] = state["returns"] == nth
        elif event == "line" and state["armed"] and not state["fired"]:
            state["fired"] = True
            signal.raise_signal(sig)
        return local

    def glob(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(_HERE) else None

    sys.settrace(glob)
    try:
        with pytest.raises((KeyboardInterrupt, SystemExit)):
            pmlkit.privatize_file(MECH, src, tmp_path / "out.csv", "sex", batch_rows=700,
                                  rng=1)
    finally:
        sys.settrace(None)
    assert state["fired"]
    assert _files(tmp_path) == ["in.csv"]
