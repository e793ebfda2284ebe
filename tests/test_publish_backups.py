"""A previous output moved aside by a run that was then killed is never deleted later."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pmlkit.privatization._publish import remove_stale


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_remove_stale_keeps_a_killed_runs_backups(tmp_path: Path) -> None:
    # the Dask engine moves the previous output folder aside as .<name>.pmlkit-<pid>-*.old
    # and the local engine keeps a hard link .<name>.pmlkit-<pid>-*.bak; a run killed
    # (SIGKILL, OOM) before it put them back leaves the previous output only there
    pid = _dead_pid()
    old = tmp_path / f".out.csv.pmlkit-{pid}-abc.old"
    old.mkdir()
    (old / "part-00000.csv").write_text("x\n1\n")
    bak = tmp_path / f".r.csv.pmlkit-{pid}-def.bak"
    bak.write_text("x\n2\n")
    tmp = tmp_path / f".out.csv.pmlkit-{pid}-123.tmp"
    tmp.write_text("half")
    remove_stale(tmp_path / "out.csv")
    remove_stale(tmp_path / "r.csv")
    assert not tmp.exists()  # a temporary file is still removed
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert f"out.csv.previous-{pid}" in kept and f"r.csv.previous-{pid}" in kept, kept
    assert (tmp_path / f"out.csv.previous-{pid}" / "part-00000.csv").read_text() == "x\n1\n"
    assert (tmp_path / f"r.csv.previous-{pid}").read_text() == "x\n2\n"
