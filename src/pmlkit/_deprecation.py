"""Safe renames of public parameters: the old name keeps working for one release.

A renamed keyword is declared once with :func:`renamed_parameter`; a call that uses the old
name gets a :class:`DeprecationWarning` that names both, and the value is passed on under
the new name. Passing both names is ambiguous and refused with a
:class:`~pmlkit.errors.ValidationError`. Positional calls are not affected, so renaming a
positional parameter never breaks a caller that did not name it.

Examples
--------
>>> import warnings
>>> @renamed_parameter(version="0.3", p_hat="prior")
... def f(prior):
...     return prior
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     f(p_hat=0.5)
0.5
>>> str(caught[0].message)
"f: parameter 'p_hat' is deprecated since 0.3 and will be removed; use 'prior' instead"
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import ValidationError

__all__ = ["renamed_parameter", "warn_deprecated"]

F = TypeVar("F", bound=Callable[..., Any])


def warn_deprecated(message: str, *, stacklevel: int = 3) -> None:
    """Issue a :class:`DeprecationWarning` pointing at the caller's caller."""
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)


def renamed_parameter(*, version: str, **renames: str) -> Callable[[F], F]:
    """Decorator: accept each ``old=new`` keyword under its old name, with a warning.

    Parameters
    ----------
    version
        The release in which the old name was deprecated (quoted in the warning).
    **renames
        ``old_name="new_name"`` pairs.
    """

    def decorate(func: F) -> F:
        name = getattr(func, "__qualname__", getattr(func, "__name__", "function"))

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise ValidationError(
                            f"{name}: got both {new!r} and its deprecated name {old!r}; "
                            f"pass only {new!r}")
                    warn_deprecated(
                        f"{name}: parameter {old!r} is deprecated since {version} and will "
                        f"be removed; use {new!r} instead")
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        wrapper.__deprecated_parameters__ = dict(renames)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
