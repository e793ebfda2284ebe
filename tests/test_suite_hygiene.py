"""The test suite itself: no test that cannot fail, no skip that could hide a removed name.

The rules, checked on the source of every ``tests/*.py`` (AST, no test is run):

* every ``test_*`` function checks something: an ``assert``, ``pytest.raises`` /
  ``pytest.warns`` / ``pytest.fail``, an ``assert_*`` call (numpy, pandas), or a call to a
  helper defined in the test files that does one of these (followed through helpers);
* no ``assert`` of a truthy constant, and no comparison of an expression with itself;
* no ``pytest.importorskip`` of a pmlkit module and no ``skipif`` that names pmlkit (a
  removed public name must fail, never skip); ``importorskip`` only of packages that the
  ``test`` extra installs, so that ``make test`` skips nothing but the Adult data tests;
* every ``xfail`` is ``strict=True`` (an expected failure that starts passing is news),
  none is imperative (``pytest.xfail()`` cannot be strict), and scikit-learn's expected
  failed checks are strict too.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FILES = sorted(TESTS.glob("*.py"))

#: tests whose check is done by code this file cannot follow, with the reason
DELEGATED = {
    # runs each README ```python block; those blocks assert their claims themselves
    ("test_readme.py", "test_python_block_runs"),
    # scikit-learn's estimator checks (the parametrized `check`) raise on failure
    ("test_sklearn.py", "test_sklearn_estimator_checks"),
}

#: what ``importorskip`` may name: packages of the test extra (pyproject.toml)
OPTIONAL = {"pyarrow", "pandas", "polars", "dask", "distributed", "numba", "qif", "joblib",
            "matplotlib", "sklearn"}

CHECK_CALLS = {"raises", "warns", "deprecated_call", "fail"}


def _trees() -> dict[Path, ast.Module]:
    return {f: _parse(f) for f in FILES}


@functools.cache
def _parse(f: Path) -> ast.Module:
    return ast.parse(f.read_text(encoding="utf-8"), filename=str(f))


def _called(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name):
                out.add(f.id)
            elif isinstance(f, ast.Attribute):
                out.add(f.attr)
    return out


def _checks_directly(fn: ast.AST) -> bool:
    if any(isinstance(n, ast.Assert) for n in ast.walk(fn)):
        return True
    names = _called(fn)
    return bool(names & CHECK_CALLS) or any(n.startswith("assert") for n in names)


def _helpers(trees: dict[Path, ast.Module]) -> dict[str, list[ast.AST]]:
    table: dict[str, list[ast.AST]] = {}
    for tree in trees.values():
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                table.setdefault(n.name, []).append(n)
    return table


def _checks(fn: ast.AST, table: dict[str, list[ast.AST]], seen: set[int]) -> bool:
    if id(fn) in seen:
        return False
    seen.add(id(fn))
    if _checks_directly(fn):
        return True
    return any(_checks(h, table, seen) for name in _called(fn) for h in table.get(name, ()))


def _tests(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.name.startswith("test")]


def test_every_test_checks_something() -> None:
    trees = _trees()
    table = _helpers(trees)
    silent = [f"{f.name}::{fn.name}" for f, tree in trees.items() for fn in _tests(tree)
              if (f.name, fn.name) not in DELEGATED and not _checks(fn, table, set())]
    assert not silent, f"tests that check nothing: {silent}"
    assert sum(len(_tests(t)) for t in trees.values()) > 500  # the walk sees the suite


def test_delegated_checks_still_exist() -> None:
    trees = _trees()
    for file, name in DELEGATED:
        assert any(fn.name == name for fn in _tests(trees[TESTS / file])), (file, name)


def test_no_assert_that_cannot_fail() -> None:
    bad = []
    for f, tree in _trees().items():
        for n in ast.walk(tree):
            if not isinstance(n, ast.Assert):
                continue
            t = n.test
            if isinstance(t, ast.Constant) and t.value:
                bad.append(f"{f.name}:{n.lineno}: {ast.unparse(t)}")
            if (isinstance(t, ast.Compare) and len(t.comparators) == 1
                    and isinstance(t.ops[0], ast.Eq | ast.Is | ast.LtE | ast.GtE)
                    and ast.unparse(t.left) == ast.unparse(t.comparators[0])
                    and not isinstance(t.left, ast.Call)):  # f() == f(): determinism checks
                bad.append(f"{f.name}:{n.lineno}: {ast.unparse(t)}")
    assert not bad, bad


def _mark_calls(tree: ast.Module, mark: str) -> list[ast.expr]:
    """``pytest.mark.<mark>`` as a call or a bare attribute (decorators, marks=...)."""
    called = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return [called.get(id(n), n) for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr == mark
            and ast.unparse(n).endswith(f"mark.{mark}")]


def test_no_skip_can_hide_a_pmlkit_name() -> None:
    bad = []
    for f, tree in _trees().items():
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "importorskip":
                target = n.args[0] if n.args else None
                name = target.value if isinstance(target, ast.Constant) else None
                if not isinstance(name, str) or name.split(".")[0] not in OPTIONAL:
                    bad.append(f"{f.name}:{n.lineno}: {ast.unparse(n)}")
        for m in _mark_calls(tree, "skipif"):
            if "pmlkit" in ast.unparse(m):
                bad.append(f"{f.name}:{m.lineno}: {ast.unparse(m)}")
    assert not bad, bad


def test_every_xfail_is_strict() -> None:
    bad = []
    for f, tree in _trees().items():
        for m in _mark_calls(tree, "xfail"):
            strict = isinstance(m, ast.Call) and any(
                k.arg == "strict" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in m.keywords)
            if not strict:
                bad.append(f"{f.name}:{m.lineno}: {ast.unparse(m)}")
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "xfail" \
                    and ast.unparse(n.func) == "pytest.xfail":
                bad.append(f"{f.name}:{n.lineno}: imperative {ast.unparse(n)}")
            # scikit-learn marks its expected failed checks xfail, non-strict unless asked
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith(
                    "parametrize_with_checks") and any(
                    k.arg == "expected_failed_checks" for k in n.keywords) and not any(
                    (k.arg == "xfail_strict" and ast.unparse(k.value) == "True")
                    or (k.arg is None and "STRICT" in ast.unparse(k.value))
                    for k in n.keywords):
                bad.append(f"{f.name}:{n.lineno}: non-strict {ast.unparse(n.func)}")
    assert not bad, bad


@pytest.mark.parametrize("source, rule", [
    ("def test_a():\n    x = 1\n", test_every_test_checks_something),
    ("def test_a():\n    assert True\n", test_no_assert_that_cannot_fail),
    ("def test_a(x):\n    assert x == x\n", test_no_assert_that_cannot_fail),
    ("import pytest\npytest.importorskip('pmlkit.joint')\n", test_no_skip_can_hide_a_pmlkit_name),
    ("import pytest\npytest.importorskip('multi_freq_ldpy')\n",
     test_no_skip_can_hide_a_pmlkit_name),
    ("import pytest\n@pytest.mark.skipif(not hasattr(pmlkit, 'x'), reason='')\n"
     "def test_a():\n    assert 1\n", test_no_skip_can_hide_a_pmlkit_name),
    ("import pytest\n@pytest.mark.xfail(reason='r')\ndef test_a():\n    assert 0\n",
     test_every_xfail_is_strict),
    ("import pytest\n@pytest.mark.xfail\ndef test_a():\n    assert 0\n",
     test_every_xfail_is_strict),
    ("@parametrize_with_checks([E()], expected_failed_checks=f)\n"
     "def test_a(estimator, check):\n    check(estimator)\n", test_every_xfail_is_strict),
])
def test_each_rule_catches_its_defect(source: str, rule: object, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rule fails on a file holding the defect it is about (so the rules can fail)."""
    bad = tmp_path / "test_bad.py"
    bad.write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "FILES", [bad])
    with pytest.raises(AssertionError, match="test_bad"):
        rule()  # type: ignore[operator]


def test_every_test_runs_under_a_timeout(pytestconfig: pytest.Config) -> None:
    """pytest-timeout is active with the per-test limit of pyproject.toml, by a method that
    also stops a hang inside compiled code: a hang ends the run with every thread's stack
    instead of holding it until CI's limit."""
    assert pytestconfig.pluginmanager.hasplugin("timeout")
    assert 0 < float(pytestconfig.getini("timeout")) <= 600
    assert pytestconfig.getini("timeout_method") == "thread"
