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
    "PlanFileError",
    "TooLargeError",
    "ValidationError",
]


class PMLError(Exception):
    """Base class of every error pmlkit raises on purpose.

    Examples
    --------
    One ``except`` clause catches every refusal of the library:

    >>> import pmlkit
    >>> try:
    ...     pmlkit.l1_radius(1.5, m=10, n=2)
    ... except PMLError as exc:
    ...     print(type(exc).__name__ + ":", exc)
    ValidationError: delta must be in (0, 1], got 1.5
    """


class ValidationError(PMLError, ValueError):
    """An argument is outside its documented domain (NaN, negative, wrong shape, ...).

    Examples
    --------
    It is also a :class:`ValueError`, so numpy-style ``except ValueError`` code keeps
    working; the message names the parameter, quotes the value and says what is allowed:

    >>> import pmlkit
    >>> try:
    ...     pmlkit.eps_max([0.5, 0.6])
    ... except ValueError as exc:
    ...     print(exc)
    prior must sum to 1 (tolerance 1e-09), got sum 1.1 for [0.5, 0.6]
    """


class InfeasibleError(PMLError, ValueError):
    """The requested set, guarantee or design problem has no solution.

    Examples
    --------
    Lower bounds that sum to more than 1 admit no distribution:

    >>> import pmlkit
    >>> try:
    ...     pmlkit.Box([0.6, 0.6], [1.0, 1.0])
    ... except InfeasibleError as exc:
    ...     print(exc)
    box contains no distribution: sum(lower) = 1.2 > 1 (the lower bounds must sum to at most 1)
    """


class TooLargeError(PMLError, ValueError):
    """An exact method was asked for beyond the size it can solve; the message names the
    limit and the fallback that can be requested instead.

    Examples
    --------
    The exact ``kappa`` of a flat distribution over 50 categories is a partition problem
    too large to enumerate:

    >>> from pmlkit.estimation import kappa
    >>> try:
    ...     kappa([1 / 50] * 50)
    ... except TooLargeError as exc:
    ...     print(str(exc).split(" (")[0])
    kappa is computed exactly only for up to 40 non-zero entries
    """


class CertificationError(PMLError, RuntimeError):
    """A designed mechanism failed its own certification (worst-case eps above target).

    Raised instead of returning a mechanism whose guarantee does not hold.

    Examples
    --------
    It is a :class:`RuntimeError` (a failure of the library's own numerics, not of the
    caller's arguments):

    >>> issubclass(CertificationError, RuntimeError)
    True
    >>> issubclass(CertificationError, ValueError)
    False
    """


class DataError(PMLError, ValueError):
    """Input data cannot be used as given: unknown labels, nulls, a missing column, a
    missing or unreadable file. Nothing is ever silently dropped or mapped.

    Examples
    --------
    A missing value is refused, never dropped:

    >>> import pmlkit
    >>> try:
    ...     pmlkit.empirical_distribution(["a", None, "b"])
    ... except DataError as exc:
    ...     print(str(exc).split(";")[0])
    samples contain 1 null/NaN value(s)
    """


class MechanismFileError(DataError):
    """A mechanism JSON file is missing, malformed, of an unknown version, or tampered.

    Examples
    --------
    >>> issubclass(MechanismFileError, DataError)
    True
    """


class PlanFileError(DataError):
    """A release plan (``release-plan.json``) is missing, malformed, of an unknown version,
    or does not re-check: an edited or forged plan is refused, never believed.

    Examples
    --------
    >>> issubclass(PlanFileError, DataError)
    True
    """


class PMLWarning(UserWarning):
    """Warnings pmlkit emits (for example: a result is a lower bound, not an optimum).

    Examples
    --------
    A warning, not an error: filter it like any :class:`UserWarning`.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("the design is a lower bound", PMLWarning)
    >>> caught[0].category.__name__
    'PMLWarning'
    """
