"""Issue 33: the release path is memory-safe by construction. No module of it may reach
into CPython's object internals (the GIL state API, ``ctypes.pythonapi``, numpy's C-API
table, reference counts) or compile a kernel with numba's bounds checks switched off.
A source scan: a regression that brings such code back fails here, whatever path runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pmlkit

SRC = Path(pmlkit.__file__).parent
RELEASE_PATH = sorted([SRC / "sampler.py", SRC / "_kernels.py", SRC / "_encoding.py",
                       SRC / "rng.py", SRC / "io.py",
                       *(SRC / "privatization").glob("*.py")])
FORBIDDEN = {
    "the GIL state API": r"PyGILState",
    "ctypes.pythonapi": r"pythonapi",
    "ctypes": r"^\s*(import ctypes|from ctypes)",
    "a C-API table": r"_ARRAY_API|PyArray_API|PyArray_NewFromDescr",
    "reference counts": r"Py_(INC|DEC|X?INC|X?DEC)REF|ob_refcnt",
    "numba intrinsics": r"numba\.extending|@intrinsic",
    "bounds checks off": r"boundscheck\s*=\s*False",
}


@pytest.mark.parametrize("path", RELEASE_PATH, ids=lambda p: p.name)
def test_release_module_holds_no_unsafe_machinery(path: Path) -> None:
    text = path.read_text()
    found = [what for what, pat in FORBIDDEN.items()
             if re.search(pat, text, flags=re.MULTILINE)]
    assert not found, f"{path.name}: {found}"


def test_the_scan_finds_what_it_forbids() -> None:
    # the patterns are live: each matches a line that would bring the machinery back
    samples = {"the GIL state API": "fn = PyGILState_Ensure", "ctypes.pythonapi":
               "ctypes.pythonapi.Py_IncRef", "ctypes": "import ctypes",
               "a C-API table": "api = np.core.multiarray._ARRAY_API",
               "reference counts": "Py_INCREF(obj)", "numba intrinsics":
               "from numba.extending import intrinsic", "bounds checks off":
               "numba.njit(boundscheck=False)"}
    for what, line in samples.items():
        assert re.search(FORBIDDEN[what], line, flags=re.MULTILINE), what
    assert len(RELEASE_PATH) >= 10 and all(p.exists() for p in RELEASE_PATH)
