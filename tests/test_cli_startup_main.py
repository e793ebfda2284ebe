"""``python -m pmlkit`` runs the command line like the installed script."""

from __future__ import annotations

import subprocess
import sys

import pmlkit


def test_python_dash_m_pmlkit_runs_the_command_line():
    r = subprocess.run([sys.executable, "-m", "pmlkit", "--version"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert pmlkit.__version__ in r.stdout
    bad = subprocess.run([sys.executable, "-m", "pmlkit", "design", "--eps", "-1"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "pmlkit: error: Missing option '--reference'."
