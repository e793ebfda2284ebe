"""Privatise data with a mechanism: arrays, pandas, pyarrow, files and Dask.

* :func:`privatize` / :func:`privatize_with_report`: in-memory containers and Dask
  (:mod:`pmlkit.privatization.memory`; engines :mod:`pmlkit.privatization._core` and
  :mod:`pmlkit.privatization._dask`);
* :func:`privatize_file`: CSV/Parquet files, streamed, written atomically
  (:mod:`pmlkit.privatization.files`);
* :func:`privatize_file_dask`: the same for files, with Dask (the output is a folder);
* :func:`dask_empirical_distribution`: the empirical distribution of a dask column.

The module is deliberately not called ``privatize`` so that it never shadows the function
``pmlkit.privatize``. dask, pandas and pyarrow are imported only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..sampler import AliasSampler, Encoder
from ._core import CHUNK_ROWS, PrivatizationReport
from .memory import privatize, privatize_with_report

__all__ = [
    "CHUNK_ROWS",
    "AliasSampler",
    "Encoder",
    "FileReport",
    "PrivatizationReport",
    "dask_empirical_distribution",
    "privatize",
    "privatize_file",
    "privatize_file_dask",
    "privatize_with_report",
]

_LAZY = {
    "privatize_file": "files",
    "FileReport": "files",
    "dask_empirical_distribution": "_dask",
    "privatize_file_dask": "_dask",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pmlkit.privatization' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from ._dask import dask_empirical_distribution, privatize_file_dask
    from .files import FileReport, privatize_file
