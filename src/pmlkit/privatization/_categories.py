"""The categories of a released pandas categorical: a function of the mechanism and of
a declared (ordered) dtype only, never of the raw values.

An ordered categorical's categories and their order are declared by its owner: they
are kept for the output when every output label is one of them. An unordered one's may
be built from the raw values (``pd.Categorical(values)``, a Parquet dictionary page,
``dictionary_encode``): its entries, unused ones included, and their order would disclose
raw values the mechanism's guarantee does not cover, so its output gets the output
labels, in the mechanism's order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..mechanism import Mechanism
from ..sampler import label_kind

__all__ = ["category_code_dtype", "from_codes", "in_categories", "output_categorical",
           "output_categories"]


def output_categorical(mech: Mechanism, dtype: Any = None, *,
                       without_missing: bool = False) -> Any:
    """The pandas dtype of a categorical released by ``mech`` from a categorical of
    ``dtype``: ``dtype`` itself when it is ordered (declared) and every output label is
    one of its categories, else the output labels as the categories, in the mechanism's
    order (unordered). ``without_missing``: the output ``(missing)`` is released as a
    missing value (``missing="category"``), so it is not a category.

    Examples
    --------
    >>> import pandas as pd
    >>> import pmlkit
    >>> m = pmlkit.Mechanism([[0.5, 0.5], [0.5, 0.5]], ("a", "b"), ("a", "b"))
    >>> list(output_categorical(m, pd.CategoricalDtype(["b", "a", "c"])).categories)
    ['a', 'b']
    >>> output_categorical(m, pd.CategoricalDtype(["b", "a"], ordered=True)).ordered
    True
    """
    import pandas as pd

    from .._encoding import MISSING_LABEL

    labels = [o for o in mech.output_labels
              if not (without_missing and isinstance(o, str) and o == MISSING_LABEL)]
    if dtype is not None and dtype.ordered \
            and label_kind(mech.output_labels) == label_kind(mech.input_labels):
        cats = dtype.categories
        where = cats.get_indexer(pd.Index(labels, dtype=object) if cats.dtype == object
                                 else labels)
        if not (len(where) and where.min() < 0):
            return dtype
    return pd.CategoricalDtype(pd.Index(labels, dtype=object if label_kind(labels)
                                        == "bool" else None))


def output_categories(mech: Mechanism, dtype: Any) -> NDArray[np.int64] | None:
    """The position of every output label among the categories of the categorical
    ``dtype`` when it is ordered and each is one of them (of the input labels' kind),
    else None.

    Only an ordered categorical's categories are kept for the output: they and their
    order are declared. An unordered one's may be built from the raw values (pandas'
    ``Categorical(values)``, a Parquet dictionary page, ``dictionary_encode``): its
    entries, unused ones included, and their order would disclose raw values that the
    mechanism's guarantee does not cover, so its output gets the output labels."""
    import pandas as pd

    cats = dtype.categories
    if not dtype.ordered or label_kind(mech.output_labels) != label_kind(mech.input_labels):
        return None
    where = np.asarray(cats.get_indexer(pd.Index(list(mech.output_labels), dtype=object)
                                        if cats.dtype == object
                                        else list(mech.output_labels)), dtype=np.int64)
    if where.size and where.min() < 0:
        return None
    return where


def in_categories(mech: Mechanism, dtype: Any, idx: NDArray[Any]) -> Any:
    """The released outputs ``idx`` as a categorical of the input's own ``dtype`` (its
    categories, in their order) when it is ordered and every output label is one of its
    categories (of the input labels' kind); else None (the output labels become the
    categories: :func:`output_categories`)."""
    cats = dtype.categories
    where = output_categories(mech, dtype)
    if where is None:
        return None
    # (indexing, not take: take converts a narrow index array to 8-byte indices whole)
    codes = where.astype(category_code_dtype(len(cats)), copy=False)[idx]
    return from_codes(codes, dtype=dtype)


def from_codes(codes: NDArray[Any], **kw: Any) -> Any:
    """``pd.Categorical.from_codes(codes, **kw)`` without pandas' range pass over codes
    the draw wrote (each is a category's)."""
    import pandas as pd

    return pd.Categorical.from_codes(codes, validate=False, **kw)


def category_code_dtype(n_categories: int) -> np.dtype[Any]:
    """The dtype pandas keeps the codes of ``n_categories`` categories in (the
    narrowest signed integer holding ``n_categories`` and the null code -1)."""
    for t in (np.int8, np.int16, np.int32):
        if n_categories < np.iinfo(t).max:
            return np.dtype(t)
    return np.dtype(np.int64)
