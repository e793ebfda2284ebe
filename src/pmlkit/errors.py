"""The project's exceptions: one base class, :class:`PMLError`.

Every error pmlkit raises on purpose derives from :class:`PMLError`, so a caller can catch
all of them with one clause, and the command line turns each into one line on stderr and a
non-zero exit code. Errors about bad arguments also derive from :class:`ValueError`, so
code written against numpy/scipy conventions keeps working.

Messages follow one pattern: the parameter's name, the offending value, and what is
allowed, e.g. ``delta must be in (0, 1], got 1.5``.
"""

from __future__ import annotations

__all__ = [
    "CertificationError",
    "DataError",
    "InfeasibleError",
    "MechanismFileError",
    "PMLError",
    "PMLWarning",
    "TooLargeError",
    "ValidationError",
]


class PMLError(Exception):
    """Base class of every error pmlkit raises on purpose."""


class ValidationError(PMLError, ValueError):
    """An argument is outside its documented domain (NaN, negative, wrong shape, ...)."""


class InfeasibleError(PMLError, ValueError):
    """The requested set, guarantee or design problem has no solution."""


class TooLargeError(PMLError, ValueError):
    """An exact method was asked for beyond the size it can solve; the message names the
    limit and the fallback that can be requested instead."""


class CertificationError(PMLError, RuntimeError):
    """A designed mechanism failed its own certification (worst-case eps above target).

    Raised instead of returning a mechanism whose guarantee does not hold."""


class DataError(PMLError, ValueError):
    """Input data cannot be used as given: unknown labels, nulls, a missing column, a
    missing or unreadable file. Nothing is ever silently dropped or mapped."""


class MechanismFileError(DataError):
    """A mechanism JSON file is missing, malformed, of an unknown version, or tampered."""


class PMLWarning(UserWarning):
    """Warnings pmlkit emits (for example: a result is a lower bound, not an optimum)."""
