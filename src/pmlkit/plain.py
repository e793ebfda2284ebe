"""eps in plain words, and the eps a stated precision needs.

**What eps-PML means for a person.** Pointwise maximal leakage is the largest factor by
which one released value can raise an adversary's chance of guessing *any* property of the
person's value: for every function ``U`` of ``X`` (randomised ones included: "is the value
``a``?", "is it one of ``a, b``?", the value itself), and every output ``y``,

    max_u P(U = u | Y = y)  <=  e^eps  max_u P(U = u).

So a guess that succeeds with probability ``P`` without the release succeeds with
probability at most ``min(1, e^eps P)`` after seeing it. A guarantee over a set of
distributions says this for every distribution in the set, in particular for the worst
one. It applies per released column (about that column's value) and, with the joint
guarantee of the whole release, about the whole record.

**The eps a precision needs.** The inverse question: which eps lets an analyst estimate the
frequency of each category to within ``+- h`` (normal-approximation interval at confidence
``1 - alpha``) from ``n`` released rows? With k-ary randomized response at ``eps`` (a
mechanism that is eps-PML for every distribution, so the answer holds whatever the data),
the unbiased estimate of a frequency is ``(f - b) / (a - b)`` with ``a = e^eps / (e^eps + k
- 1)``, ``b = 1 / (e^eps + k - 1)`` and ``f`` the released frequency, whose variance is at
most ``1 / (4 n (a - b)^2)``. The half-width ``z / (2 sqrt(n) (a - b))`` is at most ``h``
iff ``a - b = (e^eps - 1) / (e^eps + k - 1) >= r`` with ``r = z / (2 h sqrt(n))``, that is

    eps  =  log( (1 + (k - 1) r) / (1 - r) ),    (infinite when r >= 1).

A mechanism designed for the data's own distribution can reach the same precision at a
smaller eps; this is the eps that suffices for every distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from ._deprecation import renamed_parameter
from ._validation import check_count, check_eps, fmt
from .errors import ValidationError

__all__ = ["PlainReading", "eps_for_precision", "plain_reading", "plain_sentence"]

#: Prior guessing probabilities used in the examples of a reading.
EXAMPLES = (0.01, 0.1, 0.5)


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def plain_sentence(eps: float, *, subject: str = "any property of a person's value",
                   where: str = "worst distribution in the set") -> str:
    """One sentence: what an adversary gains from one released value at ``eps`` (``where``:
    the distribution(s) the eps is for).

    Examples
    --------
    >>> print(plain_sentence(math.log(2)))  # doctest: +NORMALIZE_WHITESPACE
    in plain words: seeing one released value raises the chance of guessing any property
    of a person's value at most 2x (worst distribution in the set):
    1% -> 2%, 10% -> 20%, 50% -> 100%
    """
    if isinstance(eps, int | float) and eps == math.inf:
        return (f"in plain words: no bound ({where}): one released value can make a guess "
                f"about {subject} certain")
    e = check_eps(eps)
    factor = math.exp(min(e, 700.0))
    ex = ", ".join(f"{_pct(p)} -> {_pct(min(1.0, factor * p))}" for p in EXAMPLES)
    return (f"in plain words: seeing one released value raises the chance of guessing "
            f"{subject} at most {factor:.3g}x ({where}): {ex}")


@dataclass(frozen=True)
class PlainReading:
    """What an eps means for the people in the data (module docstring).

    Attributes
    ----------
    eps
        The PML guarantee (nats).
    factor
        ``e^eps``: the largest factor on any guessing probability.
    subject
        What is guessed ("any property of a person's value", a column, the whole record).

    Examples
    --------
    >>> r = PlainReading(math.log(3), 3.0, "the value of column 'sex'")
    >>> r.posterior(0.2), r.posterior(0.5)
    (0.6000000000000001, 1.0)
    """

    eps: float
    factor: float
    subject: str

    def posterior(self, prior_probability: float) -> float:
        """The largest chance of a guess that succeeds with ``prior_probability`` without
        the release: ``min(1, e^eps P)``."""
        if not 0.0 <= float(prior_probability) <= 1.0:
            raise ValidationError(
                f"prior_probability must be in [0, 1], got {fmt(prior_probability)}")
        return min(1.0, self.factor * float(prior_probability))

    def __str__(self) -> str:
        return plain_sentence(self.eps, subject=self.subject)


def plain_reading(eps: float, *, subject: str = "any property of a person's value"
                  ) -> PlainReading:
    """eps in plain words (module docstring).

    Parameters
    ----------
    eps
        A PML guarantee (natural log).
    subject
        What the guarantee is about, e.g. ``"the value of column 'sex'"`` or ``"anything
        about the whole record"``.

    Examples
    --------
    >>> r = plain_reading(1.0)
    >>> round(r.factor, 4), round(r.posterior(0.05), 4), r.posterior(0.9)
    (2.7183, 0.1359, 1.0)
    """
    e = check_eps(eps)
    return PlainReading(e, math.exp(min(e, 700.0)), str(subject))


@renamed_parameter(version="0.2", confidence="confidence_level")
def eps_for_precision(half_width: float, rows: int, *, categories: int = 2,
                      confidence_level: float = 0.95) -> float:
    """The eps at which k-ary randomized response lets an analyst estimate every category's
    frequency to within ``+- half_width`` (normal interval at ``confidence_level``) from
    ``rows`` released rows, for any data (module docstring); ``inf`` if no eps suffices.

    ``confidence_level`` was called ``confidence`` before 0.2 (still accepted, with a
    :class:`DeprecationWarning`): ``confidence`` names the method of a confidence set
    elsewhere in pmlkit, ``confidence_level`` an interval's level.

    Examples
    --------
    Binary data, 10,000 rows, +- 2 percentage points at 95%:
    ``r = 1.96 / (2 * 0.02 * 100) = 0.49``, ``eps = log(1.49 / 0.51)``:

    >>> round(eps_for_precision(0.02, 10_000), 4), round(math.log(1.49 / 0.51), 4)
    (1.0721, 1.0721)
    """
    try:
        h = float(half_width)
    except (TypeError, ValueError):
        raise ValidationError(f"half_width must be a number in (0, 1), got "
                              f"{fmt(half_width)}") from None
    if not (math.isfinite(h) and 0.0 < h < 1.0):
        raise ValidationError(f"half_width must be in (0, 1), got {fmt(half_width)}")
    n = check_count(rows, "rows")
    k = check_count(categories, "categories", minimum=2)
    try:
        conf = float(confidence_level)
    except (TypeError, ValueError):
        raise ValidationError(f"confidence_level must be in (0, 1), got "
                              f"{fmt(confidence_level)}") from None
    if not 0.0 < conf < 1.0:
        raise ValidationError(f"confidence_level must be in (0, 1), got "
                              f"{fmt(confidence_level)}")
    z = NormalDist().inv_cdf(0.5 + conf / 2.0)
    r = z / (2.0 * h * math.sqrt(n))
    if r >= 1.0:
        return math.inf
    return math.log((1.0 + (k - 1) * r) / (1.0 - r))
