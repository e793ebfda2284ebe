"""The ``pmlkit`` command line (click): :func:`pmlkit.cli.main.main` runs it.

The console script is :func:`run`, which needs nothing beyond the core install to start:
without click (``pip install pmlkit`` without the ``cli`` extra) it prints one line saying
which extra to install and exits with status 1 instead of a traceback.
"""

from __future__ import annotations

import sys


def run() -> None:
    """Console-script entry point: run the command line, or say how to install it.

    Examples
    --------
    The installed ``pmlkit`` script calls this function; from Python, call
    :func:`pmlkit.cli.main.main` with an argument list instead (it returns the exit code):

    >>> from pmlkit.cli.main import main
    >>> main(["--version"])  # doctest: +ELLIPSIS
    pmlkit, version ...
    0
    """
    from .._optional import MissingDependencyError, require

    try:
        require("click", "the pmlkit command line")
    except MissingDependencyError as exc:
        sys.stderr.write(f"pmlkit: error: {exc}\n")
        sys.exit(1)
    from .main import main

    main()
