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

__all__ = ["positional_deprecated", "renamed_parameter", "warn_deprecated"]

F = TypeVar("F", bound=Callable[..., Any])


def warn_deprecated(message: str, *, stacklevel: int | None = None) -> None:
    """Issue a :class:`DeprecationWarning`.

    With ``stacklevel=None`` the warning points at the first frame outside pmlkit, so
    stacked renames (:func:`renamed_parameter` over :func:`positional_deprecated`) and
    checks inside a public function or a wrapper of its own still name the user's line;
    an explicit ``stacklevel`` is passed to :func:`warnings.warn`."""
    if stacklevel is None:
        import os
        import sys

        package = os.path.dirname(__file__) + os.sep
        stacklevel = 1
        frame = sys._getframe(0)
        while frame is not None and frame.f_code.co_filename.startswith(package):
            frame = frame.f_back  # type: ignore[assignment]
            stacklevel += 1
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


def positional_deprecated(*, version: str, allowed: int) -> Callable[[F], F]:
    """Decorator: parameters after the first ``allowed`` become keyword-only, softly.

    The decorated function is written with the keyword-only signature (``def f(a, *, eps)``);
    a call that still passes those parameters by position gets a :class:`DeprecationWarning`
    naming them and is mapped onto the keywords, for one release.

    Examples
    --------
    >>> import warnings
    >>> @positional_deprecated(version="0.2", allowed=1)
    ... def g(prior, *, eps, beta):
    ...     return prior, eps, beta
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     g([0.5, 0.5], 1.0, 0.1)
    ([0.5, 0.5], 1.0, 0.1)
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    g: passing eps, beta by position is deprecated since 0.2;
    pass them by keyword (eps=..., beta=...)
    """
    import inspect

    def decorate(func: F) -> F:
        name = getattr(func, "__qualname__", getattr(func, "__name__", "function"))
        params = list(inspect.signature(func).parameters.values())
        keyword_only = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > allowed:
                extra = args[allowed:]
                if len(extra) > len(keyword_only):
                    raise ValidationError(
                        f"{name} takes {allowed} positional argument(s) and "
                        f"{len(keyword_only)} keyword argument(s), got {len(args)} positional")
                moved = keyword_only[:len(extra)]
                dup = [k for k in moved if k in kwargs]
                if dup:
                    raise ValidationError(
                        f"{name}: got {', '.join(dup)} both by position and by keyword")
                warn_deprecated(
                    f"{name}: passing {', '.join(moved)} by position is deprecated since "
                    f"{version}; pass them by keyword ("
                    + ", ".join(f"{k}=..." for k in moved) + ")")
                kwargs.update(zip(moved, extra, strict=True))
                args = args[:allowed]
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
