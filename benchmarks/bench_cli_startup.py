"""Benchmark: wall time of ``pmlkit design`` on a 1,000-row CSV, and what it imports.

On such a file the command's own work (read, count, one small LP) takes a few milliseconds;
the rest is starting Python and importing modules. This script times the whole command in
fresh processes (median of ``--runs``), lists which heavy optional modules the command
loaded, and prints the ``python -X importtime`` top 10 (cumulative microseconds of the
top-level imports).

``--compare SRC`` runs the same command, interleaved run by run, with another checkout's
``src`` folder first on ``PYTHONPATH`` (e.g. ``git archive HEAD~3 src | tar -x -C /tmp/old``
then ``--compare /tmp/old/src``), so the two are measured side by side on the same load.

Run: ``.venv/bin/python benchmarks/bench_cli_startup.py [--runs 5] [--compare DIR]``.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("pandas", "pyarrow.compute", "scipy.stats", "matplotlib", "tqdm", "polars",
         "sklearn", "dask")

_PROBE = """
import sys
from pmlkit.cli.main import main
code = main(sys.argv[1:])
print(",".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def _csv(folder: Path) -> Path:
    rnd = random.Random(0)
    path = folder / "reference.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "edu"])
        for i in range(1000):
            w.writerow([i, rnd.choice(["lo", "mid", "hi", "phd"])])
    return path


def _env(src: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    return env


def _args(ref: Path, out: Path) -> list[str]:
    return ["design", "--reference", str(ref), "--column", "edu", "--eps", "0.693",
            "--delta", "1e-6", "--output", str(out)]


def _run(ref: Path, out: Path, src: str | None) -> tuple[float, str]:
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY),
                           *_args(ref, out)], env=_env(src), capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the command failed: {proc.stderr}")
    return took, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""


def _importtime(ref: Path, out: Path, src: str | None) -> list[tuple[int, str]]:
    out.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pmlkit.cli.main",
                           *_args(ref, out)], env=_env(src), capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cum, name = line.split("|")
        if not name[1:].startswith(" "):  # top level: imported by the command itself
            rows.append((int(cum), name.strip()))
    return sorted(rows, reverse=True)[:10]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--compare", metavar="SRC", default=None,
                    help="another checkout's src folder, measured side by side")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ref, out = _csv(folder), folder / "mech.json"
        sides: dict[str, str | None] = {"this tree": None}
        if opts.compare:
            sides = {"compared": opts.compare, "this tree": None}
        times: dict[str, list[float]] = {k: [] for k in sides}
        loaded: dict[str, str] = {}
        for _ in range(opts.runs):  # interleaved: both sides see the same machine load
            for name, src in sides.items():
                took, mods = _run(ref, out, src)
                times[name].append(took)
                loaded[name] = mods
        print(f"pmlkit design, 1,000-row CSV, {opts.runs} runs each (wall seconds)")
        for name in sides:
            ts = times[name]
            print(f"  {name:10s} median {statistics.median(ts):.3f}  "
                  f"runs {' '.join(f'{t:.3f}' for t in ts)}  heavy modules loaded: "
                  f"{loaded[name] or 'none'}")
        if opts.compare:
            ratio = statistics.median(times["this tree"]) / statistics.median(times["compared"])
            print(f"  ratio this tree / compared: {ratio:.2f}")
        for name, src in sides.items():
            print(f"\nimporttime top 10, {name} (cumulative ms, top-level imports)")
            for cum, mod in _importtime(ref, out, src):
                print(f"  {cum / 1000:8.1f}  {mod}")


if __name__ == "__main__":
    main()
