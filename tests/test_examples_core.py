"""Every public function and class of pmlkit (the ``__all__`` of every public module, all
layers) carries a numpydoc ``Examples`` section with at least one doctest (pytest runs them
through ``--doctest-modules``), so a reader always has a checked example to start from."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest


def _public_modules() -> list[str]:
    """Every module of pmlkit whose dotted path has no private part (plus ``_validation``,
    whose helpers the other layers build on)."""
    import pkgutil

    import pmlkit

    names = [m.name for m in pkgutil.walk_packages(pmlkit.__path__, "pmlkit.")
             if not any(part.startswith("_") for part in m.name.split(".")[1:])]
    return sorted(["pmlkit._validation", *names])


MODULES = _public_modules()
_SEEN: set[int] = set()


def _public(module: str) -> list[tuple[str, object]]:
    mod = importlib.import_module(module)
    out = []
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        home = getattr(obj, "__module__", None) or ""
        # defined here, or in a private module and exported here (privatization._core)
        ours = home == module or (home.startswith("pmlkit.") and any(
            part.startswith("_") for part in home.split(".")[1:]))
        if ours and (inspect.isclass(obj) or inspect.isfunction(obj)) and id(obj) not in _SEEN:
            _SEEN.add(id(obj))
            out.append((name, obj))
    return out


CASES = [(m, name, obj) for m in MODULES for name, obj in _public(m)]


@pytest.mark.parametrize(("module", "name", "obj"), CASES,
                         ids=[f"{m}.{n}" for m, n, _ in CASES])
def test_public_name_has_a_doctested_example(module, name, obj):
    doc = inspect.getdoc(obj) or ""
    assert re.search(r"^Examples\n--------\n", doc, re.M), f"{module}.{name}: no Examples"
    section = doc.split("Examples\n--------\n", 1)[1]
    assert ">>> " in section, f"{module}.{name}: Examples has no doctest"
