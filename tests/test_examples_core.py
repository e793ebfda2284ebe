"""Every public function and class of the core, analysis and confidence layers carries a
numpydoc ``Examples`` section with at least one doctest (pytest runs them through
``--doctest-modules``), so a reader always has a checked example to start from."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

MODULES = [
    "pmlkit.errors",
    "pmlkit._validation",
    "pmlkit.rng",
    "pmlkit.sets",
    "pmlkit.leakage",
    "pmlkit.worstcase",
    "pmlkit.bounds",
    "pmlkit.utility",
    "pmlkit.estimation",
    "pmlkit.confidence",
]


def _public(module: str) -> list[tuple[str, object]]:
    mod = importlib.import_module(module)
    return [(name, getattr(mod, name)) for name in mod.__all__
            if inspect.isclass(getattr(mod, name)) or inspect.isfunction(getattr(mod, name))]


CASES = [(m, name, obj) for m in MODULES for name, obj in _public(m)]


@pytest.mark.parametrize(("module", "name", "obj"), CASES,
                         ids=[f"{m}.{n}" for m, n, _ in CASES])
def test_public_name_has_a_doctested_example(module, name, obj):
    doc = inspect.getdoc(obj) or ""
    assert re.search(r"^Examples\n--------\n", doc, re.M), f"{module}.{name}: no Examples"
    section = doc.split("Examples\n--------\n", 1)[1]
    assert ">>> " in section, f"{module}.{name}: Examples has no doctest"
