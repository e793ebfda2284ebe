"""The README and the user guide are checked like code.

* every ```` ```pycon ```` block (``>>>`` examples) is a doctest (NORMALIZE_WHITESPACE,
  ELLIPSIS): the numbers shown are checked;
* every ```` ```python ```` block runs as written;
* every ``pmlkit ...`` command of a ```` ```bash ```` block names a real subcommand and
  only options that subcommand has (not hidden, deprecated spellings), and every
  ``make TARGET`` is a target of the Makefile.
"""

from __future__ import annotations

import doctest
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "docs" / "guide.md"]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)


def _blocks(kind: str) -> list[tuple[str, int, str]]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == kind:
                line = text[:m.start()].count("\n") + 2
                out.append((f"{page.relative_to(ROOT)}:{line}", line, m.group(2)))
    return out


def test_the_pages_have_checked_blocks() -> None:
    assert len(_blocks("pycon")) >= 3
    assert len(_blocks("python")) >= 2
    for page in PAGES:  # no block in a language the checks below would not see
        kinds = {m.group(1) for m in FENCE.finditer(page.read_text(encoding="utf-8"))}
        assert kinds <= {"pycon", "python", "bash", "text", "json"}, (page, kinds)


@pytest.fixture
def _sandbox(tmp_path, monkeypatch):
    import matplotlib  # the test extras install it (and scikit-learn, polars): no skip

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here


@pytest.mark.usefixtures("_sandbox")
@pytest.mark.parametrize("page", [p.name for p in PAGES])
def test_doctest_blocks(page: str) -> None:
    """A page's ``>>>`` blocks run in order in one namespace, like one doctest file."""
    blocks = [b for b in _blocks("pycon") if b[0].split(":")[0].endswith(page)]
    assert blocks, page
    parser = doctest.DocTestParser()
    # the stdlib runner (pytest's NUMBER flag is not available here): the pages print
    # rounded numbers
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE
                                   | doctest.ELLIPSIS)
    globs: dict[str, object] = {"__name__": "readme"}
    for where, line, code in blocks:
        test = parser.get_doctest(code, globs, where, page, line)
        assert test.examples, where
        runner.run(test, clear_globs=False)
        globs = test.globs  # DocTest copies its globals: carry them to the next block
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{page}: {result.failed} example(s) failed (see stdout)"


@pytest.mark.usefixtures("_sandbox")
@pytest.mark.parametrize(("where", "line", "code"), _blocks("python"),
                         ids=[b[0] for b in _blocks("python")])
def test_python_block_runs(where: str, line: int, code: str) -> None:
    exec(compile(code, where, "exec"), {"__name__": "readme"})


def _commands() -> list[tuple[str, list[str]]]:
    out = []
    for where, _, code in _blocks("bash"):
        joined = re.sub(r"\\\n\s*", " ", code)
        for raw in joined.splitlines():
            line = raw.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line)
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]  # VAR=value prefixes
            out.append((where, words))
    return out


def test_every_shell_command_shown_is_real() -> None:
    import click

    from pmlkit.cli.main import cli

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))
    seen = 0
    for where, words in _commands():
        assert words[0] in ("pmlkit", "make"), (where, words)
        if words[0] == "make":
            for target in words[1:]:
                assert target in targets, (where, target)
            seen += 1
            continue
        cmd: click.Command = cli
        rest = words[1:]
        ctx = click.Context(cli)
        while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
            sub = cmd.get_command(ctx, rest[0])
            assert sub is not None, (where, f"no subcommand {rest[0]!r}", words)
            cmd, rest = sub, rest[1:]
        options = {opt for p in cmd.params if isinstance(p, click.Option) and not p.hidden
                   for opt in (*p.opts, *p.secondary_opts)} | {"--help", "-h"}
        for word in rest:
            if word.startswith("--"):
                flag = word.split("=", 1)[0]
                assert flag in options, (where, f"{cmd.name} has no option {flag}", words)
        seen += 1
    assert seen >= 10
