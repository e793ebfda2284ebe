"""A committed snapshot of pmlkit's public API (``tests/public_api.txt``): every public name of
``pmlkit`` and of each public module and subpackage (the names in their ``__all__``), with
the signature of each function, class and public method. A name that is removed or renamed,
or a signature that changes, FAILS here; so does a new public name that the snapshot does not
list yet (a name missing from the snapshot would not be protected later).

Changing the public API on purpose: run ``python tests/test_public_api.py --write`` and
commit the new ``tests/public_api.txt`` with the change (the diff shows reviewers exactly
what changed). Removing a name that users had is a breaking change: prefer a deprecation
(``pmlkit._deprecation``) for one release.

``tests/test_public_names.py`` checks that every name in an ``__all__`` exists; this file
checks that the lists and the signatures themselves do not change unnoticed.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import sys
from typing import Any

SNAPSHOT = pathlib.Path(__file__).resolve().with_name("public_api.txt")
SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "pmlkit"
HOW_TO_UPDATE = ("if the change is intended, run `python tests/test_public_api.py --write` "
                 "and commit tests/public_api.txt with it")


def public_modules() -> list[str]:
    """``pmlkit`` and every module or package under it with an ``__all__`` whose dotted
    path has no private part (a leading underscore)."""
    import ast

    out = []
    for f in sorted(SRC.rglob("*.py")):
        parts = list(f.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Assign | ast.AnnAssign)
               and "__all__" in ast.unparse(n).split("=", 1)[0] for n in tree.body):
            out.append(".".join(parts))
    return sorted(out)


def _signature(obj: Any) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    # object reprs in defaults carry addresses that change from run to run
    return re.sub(r" at 0x[0-9a-fA-F]+", "", sig)


def _class_members(cls: type) -> list[str]:
    """Public methods, properties and class attributes that pmlkit defines on ``cls`` (or
    on a pmlkit base class)."""
    out = []
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("pmlkit"):
            continue
        raw = vars(owner)[name]
        if isinstance(raw, property):
            out.append(f".{name}: property")
        elif isinstance(raw, staticmethod | classmethod):
            kind = type(raw).__name__
            out.append(f".{name}: {kind}{_signature(getattr(cls, name))}")
        elif inspect.isfunction(raw):
            out.append(f".{name}: method{_signature(raw)}")
        else:
            out.append(f".{name}: attribute {type(raw).__name__}")
    return out


def _describe(qualname: str, obj: Any) -> list[str]:
    if inspect.ismodule(obj):
        return [f"{qualname}: module"]
    if inspect.isclass(obj):
        lines = [f"{qualname}: class{_signature(obj)}"]
        return lines + [qualname + m for m in _class_members(obj)]
    if callable(obj):
        return [f"{qualname}: function{_signature(obj)}"]
    return [f"{qualname}: constant {type(obj).__name__}"]


def current_api() -> list[str]:
    """The snapshot's lines for the code as it is now."""
    lines = []
    for module in public_modules():
        mod = importlib.import_module(module)
        for name in sorted(mod.__all__):
            lines += _describe(f"{module}.{name}", getattr(mod, name))
    return lines


def _key(line: str) -> str:
    return line.split(": ", 1)[0]


def test_public_api_matches_the_snapshot() -> None:
    assert SNAPSHOT.exists(), f"{SNAPSHOT.name} is missing: {HOW_TO_UPDATE}"
    recorded = [x for x in SNAPSHOT.read_text(encoding="utf-8").splitlines()
                if x and not x.startswith("#")]
    now = current_api()
    old, new = {_key(x): x for x in recorded}, {_key(x): x for x in now}
    removed = sorted(k for k in old if k not in new)
    changed = sorted(f"  was: {old[k]}\n  now: {new[k]}" for k in old
                     if k in new and old[k] != new[k])
    added = sorted(k for k in new if k not in old)
    problems = []
    if removed:
        problems.append("public names removed or renamed:\n" + "\n".join(
            f"  {k}" for k in removed))
    if changed:
        problems.append("signatures changed:\n" + "\n".join(changed))
    if added:
        problems.append("public names not in the snapshot yet:\n" + "\n".join(
            f"  {k}" for k in added))
    assert not problems, "\n".join(problems) + f"\n{HOW_TO_UPDATE}"


def test_the_snapshot_sees_a_removal_a_rename_and_a_new_signature(monkeypatch) -> None:
    """The comparison is not vacuous: a removed name, a renamed parameter and a new name
    each change the lines it compares."""
    import pmlkit.leakage as leakage

    before = current_api()
    assert "pmlkit.leakage.pml: function" in "\n".join(before)

    def pml(mechanism: Any, distribution: Any, renamed: int = 0) -> None: ...

    monkeypatch.setattr(leakage, "pml", pml)
    line = next(x for x in current_api() if _key(x) == "pmlkit.leakage.pml")
    assert line not in before and "renamed" in line
    monkeypatch.setattr(leakage, "__all__", [n for n in leakage.__all__ if n != "pml"]
                        + ["pml_renamed"])
    monkeypatch.setattr(leakage, "pml_renamed", pml, raising=False)
    keys = {_key(x) for x in current_api()}
    assert "pmlkit.leakage.pml" not in keys and "pmlkit.leakage.pml_renamed" in keys


def write() -> None:
    header = ["# The public API of pmlkit, checked by tests/test_public_api.py.",
              "# Regenerate on purpose with: python tests/test_public_api.py --write"]
    SNAPSHOT.write_text("\n".join([*header, *current_api()]) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(__doc__)
        sys.exit(2)
