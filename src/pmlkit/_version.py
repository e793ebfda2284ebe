"""The version of pmlkit, in one place (read by the build and re-exported as
``pmlkit.__version__``)."""

__version__ = "0.2.0"
