"""The lazy start of pmlkit's compiled (numba) kernels (optional: ``pip install
'pmlkit[fast]'``), used by the designers' box kernels (:mod:`pmlkit.design`).

numba is imported only when a caller asks for its kernels (never by ``import pmlkit``),
and the machine code is cached on disk (``cache=True``). Without numba (or with the
environment variable ``PMLKIT_NO_NUMBA`` set to a non-empty value other than ``0``)
:func:`build_once` gives None and the callers keep their plain paths. The release draw
has no compiled kernel: :class:`pmlkit.sampler.AliasSampler`'s numpy draw is the one
implementation (loading a compiled draw cost more per process, about 0.7 s, than it saved
below 10^8 records).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

__all__: list[str] = []


def build_once(state: dict[str, Any], lock: threading.Lock,
               build: Callable[[], dict[str, Callable[..., Any]] | None]
               ) -> dict[str, Callable[..., Any]] | None:
    """The kernels ``build()`` returns, built once per process under ``lock`` and kept in
    ``state`` (``None``, never built, when the environment variable ``PMLKIT_NO_NUMBA``
    disables numba): the lazy start of every compiled module of the package.

    Examples
    --------
    >>> import threading
    >>> calls = []
    >>> state, lock = {}, threading.Lock()
    >>> k1 = build_once(state, lock, lambda: calls.append(1) or {"f": len})
    >>> k2 = build_once(state, lock, lambda: calls.append(1) or {"f": len})
    >>> calls == [1] and k1 is k2 or os.environ.get("PMLKIT_NO_NUMBA", "") not in ("", "0")
    True
    """
    if os.environ.get("PMLKIT_NO_NUMBA", "") not in ("", "0"):
        return None
    with lock:
        if "kernels" not in state:
            state["kernels"] = build()
    kernels: dict[str, Callable[..., Any]] | None = state["kernels"]
    return kernels


def njit_cached(numba: Any, fn: Callable[..., Any], *, boundscheck: bool | None
                ) -> Callable[..., Any]:
    """``fn`` compiled by ``numba.njit`` without the GIL, its machine code cached on disk
    (compiled in every process instead where no cache location is writable)."""
    try:
        out: Callable[..., Any] = numba.njit(cache=True, nogil=True,
                                             boundscheck=boundscheck)(fn)
    except RuntimeError:  # no writable cache location: compile per process
        out = numba.njit(nogil=True, boundscheck=boundscheck)(fn)
    return out
