"""Optional dependencies: one place that imports them and says which extra to install.

``pip install pmlkit`` installs only what the mathematics needs (numpy, scipy and randomgen,
the secure generator's AES stream). Everything else comes with an extra:

============  ==========================================  ==================================
extra         installs                                    needed for
============  ==========================================  ==================================
``files``     pandas, pyarrow                             CSV/Parquet files, data frames,
                                                          the Adult loader, the experiments
``cli``       click, tqdm (and ``files``)                 the ``pmlkit`` command
``plot``      matplotlib                                  :mod:`pmlkit.plotting`, figures
``polars``    polars                                      polars frames in ``privatize``
``dask``      dask[dataframe], distributed                the Dask engine
``sklearn``   scikit-learn                                :mod:`pmlkit.sklearn`
``all``       every extra above
============  ==========================================  ==================================

Code that needs one of these imports it through :func:`require` (inside the function that
uses it, so ``import pmlkit`` stays light); a missing package raises
:class:`MissingDependencyError`, which is both a :class:`pmlkit.errors.PMLError` (the
command line prints it as one line) and an :class:`ImportError` (code that tests for an
optional package with ``except ImportError`` keeps working).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from .errors import PMLError

__all__ = ["EXTRAS", "MissingDependencyError", "loaded", "require"]

#: top-level import name -> (distribution to install, pmlkit extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "pandas": ("pandas", "files"),
    "pyarrow": ("pyarrow", "files"),
    "click": ("click", "cli"),
    "tqdm": ("tqdm", "cli"),
    "matplotlib": ("matplotlib", "plot"),
    "polars": ("polars", "polars"),
    "dask": ("dask", "dask"),
    "distributed": ("distributed", "dask"),
    "sklearn": ("scikit-learn", "sklearn"),
}


class MissingDependencyError(PMLError, ImportError):
    """An optional package that a feature needs is not installed; the message names the
    package and the ``pip install 'pmlkit[extra]'`` command that installs it.

    Examples
    --------
    >>> err = MissingDependencyError("pyarrow", "reading Parquet")
    >>> print(err)
    reading Parquet needs pyarrow: pip install 'pmlkit[files]'
    >>> isinstance(err, ImportError), err.extra
    (True, 'files')
    """

    def __init__(self, module: str, purpose: str) -> None:
        top = module.split(".")[0]
        dist, extra = EXTRAS.get(top, (top, "all"))
        self.module = module
        self.distribution = dist
        self.extra = extra
        super().__init__(f"{purpose} needs {dist}: pip install 'pmlkit[{extra}]'")
        self.name = top  # ImportError's attribute: the module that could not be found


def require(module: str, purpose: str) -> ModuleType:
    """Import the optional ``module`` (dotted names allowed) or raise
    :class:`MissingDependencyError` naming the extra that installs it.

    Only a missing ``module`` (or its top-level package) is translated; an error raised
    while importing an installed package propagates unchanged, so a broken installation is
    never reported as a missing one.

    Parameters
    ----------
    module : str
        Import name, e.g. ``"pyarrow.parquet"``.
    purpose : str
        What needs it, in the user's terms, e.g. ``"reading Parquet"``; it starts the message.

    Returns
    -------
    types.ModuleType
        The imported module.

    Raises
    ------
    MissingDependencyError
        The package is not installed.

    Examples
    --------
    >>> require("json", "this example").dumps([1])
    '[1]'
    >>> require("pmlkit_no_such_package", "plotting")
    Traceback (most recent call last):
    ...
    pmlkit._optional.MissingDependencyError: plotting needs pmlkit_no_such_package: ...
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        missing = exc.name or ""
        if missing == top or missing == module or module.startswith(missing + "."):
            raise MissingDependencyError(module, purpose) from None
        raise


def loaded(module: str) -> ModuleType | None:
    """The optional ``module`` if this process has imported it already, else None (it is
    never imported here: a value of one of its types can only exist once it is).

    Unlike ``sys.modules.get``, a module that another thread is importing at that moment
    is waited for (the import system's module lock) instead of returned half initialised
    (a release started while another thread's first release imports pandas would
    otherwise find ``pandas`` without ``DataFrame``).

    Examples
    --------
    >>> import json
    >>> loaded("json") is json
    True
    >>> loaded("a_module_nobody_imported") is None
    True
    """
    if module not in sys.modules:
        return None
    return importlib.import_module(module)
