"""The command outputs the README shows are the outputs the commands print.

A ```` ```text ```` block that follows a ```` ```bash ```` block in README.md is the output
of those commands on the UCI Adult files: the commands run here (in a scratch folder that
links to the Adult files), and every line shown, except ``...``, must be a line of what
they print (stdout and stderr), numbers included.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
from pathlib import Path

import pytest

from pmlkit.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\n", re.S | re.M)


def _pairs() -> list[tuple[int, list[list[str]], list[str]]]:
    """(line, commands of the bash block, lines of the text block right after it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = list(FENCE.finditer(text))
    out = []
    for a, b in itertools.pairwise(blocks):
        if (a.group(1), b.group(1)) != ("bash", "text") or text[a.end():b.start()].strip():
            continue
        commands = []
        for raw in re.sub(r"\\\n\s*", " ", a.group(2)).splitlines():
            line = raw.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                words = shlex.split(line)
                assert words[0] == "pmlkit", line
                commands.append(words[1:])
        shown = [ln.strip() for ln in b.group(2).splitlines()
                 if ln.strip() and ln.strip() != "..."]
        out.append((text[:a.start()].count("\n") + 1, commands, shown))
    return out


def test_the_readme_shows_command_outputs() -> None:
    assert len(_pairs()) >= 2  # the joint design / assess and the planned release


@pytest.mark.parametrize(("line", "commands", "shown"), _pairs(),
                         ids=[f"README.md:{p[0]}" for p in _pairs()])
def test_shown_output_is_printed(line: int, commands: list[list[str]], shown: list[str],
                                 adult_dir: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("adult.data", "adult.test"):
        os.symlink(adult_dir / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    printed: list[str] = []
    for args in commands:
        code = cli_main(args)
        out = capsys.readouterr()
        assert code == 0, (args, out.err)
        printed += [ln.strip() for ln in (out.out + out.err).splitlines()]
    missing = [ln for ln in shown if ln not in printed]
    assert not missing, f"README.md:{line}: shown but not printed: {missing}\n" + \
        "\n".join(printed)
