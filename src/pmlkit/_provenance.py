"""What a mechanism file discloses about its reference sample, and the warning when the
data released looks like that sample.

A mechanism designed from a reference sample is only protective for records that are not
in that sample, or whose reference counts are as public as the release itself (see
``docs/threat_model.md``): the mechanism file discloses the reference estimate and its size
``m``, that is the reference sample's label **counts**. It discloses nothing else about the
sample: no digest, and nothing that depends on the order of the records or on the bytes of
the file they were read from (pmlkit 0.1 recorded a SHA-256 of the labels in their original
order; with the counts known, whoever knows the order of the records recovers every label
by trying the orderings that fit the counts. :data:`LEGACY_FINGERPRINT_KEYS` lists those
fields; files that hold them still load, and the fields are dropped on reading).

Reuse of the reference is therefore detected from the counts alone
(:func:`reuse_test`): Pearson's chi-square statistic of the ``2 x K`` table of the
reference counts ``r`` (size ``m``) and the released column's counts ``c`` (size ``n``)
over the ``K`` labels seen in either,

.. math::

    S = \\sum_x \\frac{(n r_x - m c_x)^2}{m\\, n\\, (r_x + c_x)},

is compared with its distribution for two *independent* samples of one population,
chi-square with ``K - 1`` degrees of freedom. pmlkit warns when the counts agree **better**
than that: when the lower-tail probability ``P(chi2_{K-1} <= S)`` is at most
:data:`REUSE_ALPHA` (0.05), i.e. when fewer than 1 in 20 independent samples would come
this close (Fisher's "too good to be true" test). An exact copy, shuffled or reversed,
gives ``S = 0``; a copy with a few rows dropped or added gives ``S`` near 0; a random
part of the reference of ``n`` records gives ``S`` about ``(m - n) / (m + n)`` times a
chi-square variable, so it is caught most of the time when it holds most of the reference
or when the column has many labels (a half: about 9% of the time with 2 labels, 89% with
16, at the 5% level). The test runs only when the two sizes are within a factor
:data:`REUSE_SIZE_RATIO` (3) of each other; outside that range a part of the reference
and an independent sample give the same distribution of ``S`` and the test could only
raise spurious warnings.

Its limits, stated plainly: it is a guard rail, not a guarantee. Counts cannot tell a
random part of the reference from an independent sample of the same size and population
(their ``S`` distributions overlap), so a small part is missed; and about 1 in 20
independent samples of similar size from exactly the reference's population is flagged
(fewer when the populations differ even slightly; more for tiny samples, where the
chi-square law is rough: two samples of 10 records have the same counts by chance about
1 time in 6). A mechanism that records no counts (a :meth:`minimal record
<pmlkit.Mechanism.minimal_record>`, a hand-made matrix) is never compared.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LEGACY_FINGERPRINT_KEYS", "REFERENCE_WARNING", "REUSE_ALPHA", "REUSE_SIZE_RATIO",
           "ReuseTest", "drop_legacy_fingerprint", "reference_counts", "reuse_test",
           "warn_if_reference_counts"]

#: The fields of the reference fingerprint pmlkit 0.1 wrote under ``reference``: a digest
#: of the labels in record order, the file's size and digest, the record count. Read only
#: to drop them (see the module docstring).
LEGACY_FINGERPRINT_KEYS = frozenset({"records", "sample_sha256", "file_size", "file_sha256"})

#: Level of the reuse test: the warning fires on about this fraction of independent samples
#: of the reference's population (of a size within :data:`REUSE_SIZE_RATIO`).
REUSE_ALPHA = 0.05

#: The test runs only when ``max(n, m) / min(n, m)`` is at most this.
REUSE_SIZE_RATIO = 3.0

REFERENCE_WARNING = (
    "the released labels' counts are closer to the reference sample's counts (which the "
    "mechanism file discloses) than independent samples come: the data may be the "
    "reference sample or a copy of it (reordered, trimmed or extended), whose records are "
    "not protected by the stated guarantee against anyone holding the file; use a "
    "reference disjoint from (or as public as) the released records")


def drop_legacy_fingerprint(details: Mapping[str, Any]) -> dict[str, Any]:
    """``details`` without a pmlkit 0.1 reference fingerprint (``reference`` holding only
    :data:`LEGACY_FINGERPRINT_KEYS`); anything else is kept as it is.

    Examples
    --------
    >>> drop_legacy_fingerprint({"beta": 0.1, "reference": {"records": 3,
    ...                                                     "sample_sha256": "ab" * 32}})
    {'beta': 0.1}
    >>> drop_legacy_fingerprint({"reference": "a public survey"})
    {'reference': 'a public survey'}
    """
    out = dict(details)
    ref = out.get("reference")
    if isinstance(ref, Mapping) and set(ref) <= LEGACY_FINGERPRINT_KEYS:
        del out["reference"]
    return out


def reference_counts(mech: Any) -> np.ndarray | None:
    """The reference sample's label counts a mechanism records (int64, in input-label
    order), or ``None``: they are ``estimate * m`` for a sample-based guarantee whose
    recorded estimate times ``m`` gives integers (as every design from samples records).

    Examples
    --------
    >>> from pmlkit import design_from_samples
    >>> mech = design_from_samples(["a"] * 6 + ["b"] * 4, 1.0, 0.1).mechanism
    >>> reference_counts(mech).tolist()
    [6, 4]
    >>> reference_counts(mech.minimal_record()) is None
    True
    """
    g = getattr(mech, "guarantee", None)
    prov = getattr(mech, "provenance", None)
    m = getattr(g, "m", None)
    est = getattr(prov, "estimate", None)
    if getattr(g, "basis", None) != "sample" or not isinstance(m, int) or est is None:
        return None
    x = np.asarray(est, dtype=np.float64) * m
    counts = np.rint(x)
    if x.ndim != 1 or x.size != getattr(mech, "n_inputs", x.size) \
            or not np.all(np.abs(x - counts) <= 1e-6 * max(1.0, float(m))) \
            or int(counts.sum()) != m:
        return None
    return counts.astype(np.int64)


@dataclass(frozen=True)
class ReuseTest:
    """The outcome of :func:`reuse_test`.

    Attributes
    ----------
    statistic
        Pearson's chi-square ``S`` of the 2 x K table (module docstring).
    df
        ``K - 1``.
    p_lower
        ``P(chi2_df <= S)``: the fraction of independent samples whose counts would agree
        at least this well.
    reference_size, released_size
        ``m`` and ``n``.
    warn
        Whether pmlkit warns: ``p_lower <= REUSE_ALPHA`` (and the sizes within
        :data:`REUSE_SIZE_RATIO`, else no test is made).
    """

    statistic: float
    df: int
    p_lower: float
    reference_size: int
    released_size: int
    warn: bool


def reuse_test(reference: Any, released: Any) -> ReuseTest | None:
    """Are the released counts closer to the reference counts than an independent sample?
    (the module docstring states the test). ``None`` when no test is made: sizes more than
    :data:`REUSE_SIZE_RATIO` apart, an empty sample, or fewer than two labels seen.

    Examples
    --------
    A shuffled copy has the same counts; a copy less one row nearly the same; an
    independent sample of the population differs by about its standard deviation:

    >>> reuse_test([300, 500, 200], [300, 500, 200]).warn
    True
    >>> reuse_test([300, 500, 200], [300, 499, 200]).warn
    True
    >>> reuse_test([300, 500, 200], [322, 470, 208]).warn
    False
    >>> reuse_test([300, 500, 200], [30, 50, 20]) is None  # sizes 10x apart: no test
    True
    """
    r = np.asarray(reference, dtype=np.int64)
    c = np.asarray(released, dtype=np.int64)
    if r.shape != c.shape or r.ndim != 1:
        return None
    m, n = int(r.sum()), int(c.sum())
    if m <= 0 or n <= 0 or max(m, n) > REUSE_SIZE_RATIO * min(m, n):
        return None
    seen = (r + c) > 0
    k = int(seen.sum())
    if k < 2:
        return None
    # exact integers for the differences (n r_x - m c_x is 0 for a copy, not a rounding)
    diff = [n * int(a) - m * int(b) for a, b in zip(r[seen].tolist(), c[seen].tolist(),
                                                      strict=True)]
    tot = (r + c)[seen].tolist()
    stat = math.fsum(d * d / t for d, t in zip(diff, tot, strict=True)) / (m * n)
    from scipy.special import gammainc

    df = k - 1
    p = float(gammainc(df / 2.0, stat / 2.0))
    return ReuseTest(statistic=float(stat), df=df, p_lower=p, reference_size=m,
                     released_size=n, warn=p <= REUSE_ALPHA)


def warn_if_reference_counts(mech: Any, counts: Any, what: str | None = None) -> bool:
    """Warn (:class:`~pmlkit.errors.PMLWarning`) when the released column's input-label
    counts pass :func:`reuse_test` against the counts the mechanism records; returns
    whether it warned. ``what`` names the column or file in the message.

    Examples
    --------
    >>> import warnings
    >>> from pmlkit import design_from_samples
    >>> mech = design_from_samples(["F"] * 400 + ["M"] * 600, 1.0, 0.05).mechanism
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_reference_counts(mech, [600, 400]), warn_if_reference_counts(mech,
    ...                                                                          [400, 599])
    (False, True)
    >>> caught[0].category.__name__
    'PMLWarning'
    """
    from .errors import PMLWarning

    ref = reference_counts(mech)
    if ref is None:
        return False
    got = np.asarray(counts, dtype=np.int64)
    res = reuse_test(ref, got)
    if res is None or not res.warn:
        return False
    where = f"{what}: " if what else ""
    warnings.warn(
        f"{where}{REFERENCE_WARNING} (chi-square {res.statistic:.3g} on {res.df} df over "
        f"{res.released_size} released and {res.reference_size} reference records; "
        f"independent samples come this close with probability {res.p_lower:.2g} <= "
        f"{REUSE_ALPHA})", PMLWarning, stacklevel=3)
    return True
