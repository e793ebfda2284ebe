"""The estimate a designer works from (private to :mod:`pmlkit.design`; the public names
are re-exported by :mod:`pmlkit.design.pipeline`): missing samples handled as
``missing=`` says, counted over the declared categories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._encoding import MISSING_LABEL, refuse_missing_label_text
from .._validation import fmt
from ..errors import DataError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from ..estimation import EmpiricalDistribution

__all__ = ["MISSING_LABEL", "apply_missing", "estimate_for_design", "fill_missing"]


def fill_missing(samples: Any, missing: str) -> Any:
    """Missing samples as the label ``"(missing)"`` (category) or left out (keep); a
    sample holding that text itself is refused under category
    (:func:`pmlkit._encoding.refuse_missing_label_text`)."""
    from .._optional import loaded

    if missing == "category":
        refuse_missing_label_text(samples, "the sample")

    pa = loaded("pyarrow")
    if pa is not None and isinstance(samples, pa.Array | pa.ChunkedArray):
        if samples.null_count == 0:
            return samples
        if missing == "keep":
            return samples.drop_null()
        try:
            return samples.fill_null(pa.scalar(MISSING_LABEL, type=samples.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            # (as Python objects: a list of ints and None would become floats and NaN)
            samples = np.asarray([*samples.to_pylist(), None], dtype=object)[:-1]
    import pandas as pd

    s = samples if isinstance(samples, pd.Series) else pd.Series(
        list(samples) if not isinstance(samples, np.ndarray) else samples)
    mask = s.isna().to_numpy()
    if not mask.any():
        return samples
    if missing == "keep":
        return s[~mask].reset_index(drop=True)
    out = s.astype(object)
    out[mask] = MISSING_LABEL
    return out


def apply_missing(samples: Any, missing: str, categories: Sequence[Any] | None = None
                  ) -> tuple[Any, list[Any] | None]:
    """``(samples, categories)`` with the missing (null/NaN) samples handled as
    :func:`design_from_samples` does for ``missing=``: ``"error"`` leaves them (the
    estimate then refuses them with their count), ``"category"`` makes them the label
    :data:`MISSING_LABEL` (added to ``categories`` if those are given), ``"keep"`` leaves
    them out of the estimate. For designers that estimate the column themselves (the
    coarsening of :mod:`pmlkit.design.bucketing`).

    Examples
    --------
    >>> samples, cats = apply_missing(["a", None, "b"], "category", ["a", "b"])
    >>> list(samples), cats
    (['a', '(missing)', 'b'], ['a', 'b', '(missing)'])
    >>> list(apply_missing(["a", None, "b"], "keep")[0])
    ['a', 'b']
    """
    if missing not in ("error", "category", "keep"):
        raise ValidationError(f"missing must be 'error', 'category' or 'keep', got "
                              f"{fmt(missing)}")
    cats = None if categories is None else list(categories)
    if missing == "error":
        return samples, cats
    samples = fill_missing(samples, missing)
    if missing == "category" and cats is not None and MISSING_LABEL not in cats:
        cats.append(MISSING_LABEL)
    return samples, cats


def estimate_for_design(samples: Any, *, categories: Sequence[Any] | None = None,
                        missing: str = "error") -> EmpiricalDistribution:
    """The estimate a designer works from: ``samples`` with their missing values handled
    as ``missing=`` says (:func:`apply_missing`), counted over ``categories``, or an
    :class:`~pmlkit.estimation.EmpiricalDistribution` used as is (``categories`` must then be
    omitted or equal its own). At least two categories are needed. A pandas categorical
    declares its categories: those no sample uses count 0 (``categories`` defaults to
    them).

    Examples
    --------
    >>> est = estimate_for_design(["a", None, "b", "b"], missing="category")
    >>> list(est.categories), est.counts.tolist()
    (['(missing)', 'a', 'b'], [1, 1, 2])
    """
    from ..estimation import EmpiricalDistribution, empirical_distribution

    if categories is None:
        # a pandas categorical declares its alphabet: unused categories count 0 (they are
        # not dropped), as with ``categories=``
        dtype: Any = getattr(samples, "dtype", None)
        if type(dtype).__name__ == "CategoricalDtype":
            categories = list(dtype.categories)
    if not isinstance(samples, EmpiricalDistribution):
        samples, categories = apply_missing(samples, missing, categories)
    else:  # an estimate has no missing samples left; ``missing`` is only validated
        apply_missing([], missing)
    if isinstance(samples, EmpiricalDistribution):
        if categories is not None and tuple(categories) != tuple(samples.categories):
            raise ValidationError(
                "categories must be omitted (or equal the distribution's) when samples is "
                "an EmpiricalDistribution")
        est = samples
    else:
        try:
            est = empirical_distribution(samples, categories=categories)
        except DataError as exc:
            if missing != "error" or "null" not in str(exc):
                raise
            raise DataError(f"{exc}: pass missing='category' (the label {MISSING_LABEL!r}) "
                            "or missing='keep' (left out of the estimate) (command line: "
                            "--missing category / --missing keep)") from exc
    if est.n < 2:
        raise ValidationError(f"need at least 2 categories to design a mechanism, got {est.n}")
    return est
