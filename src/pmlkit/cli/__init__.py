"""The ``pmlkit`` command line (click). Entry point: :func:`pmlkit.cli.main.main`."""
