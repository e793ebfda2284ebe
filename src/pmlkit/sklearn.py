"""A scikit-learn transformer that privatises categorical columns with PML guarantees.

:class:`PMLPrivatizer` designs one mechanism per column from a reference sample (the data
given to ``fit``, or ``reference=``) with :func:`pmlkit.design_from_samples`, and
``transform`` replaces each record's label by an output drawn from the mechanism's row
with :func:`pmlkit.privatize` (cryptographically secure randomness unless ``rng`` is a
seed). It works on 2-D numpy arrays, pandas, polars DataFrames and Arrow Tables, inside
``Pipeline`` and ``ColumnTransformer``, and it clones, pickles and grid-searches.

What the guarantee is, honestly:

* Each privatised column ``k`` is ``(eps, delta)``-PML about that column: with probability
  at least ``1 - delta`` over the reference sample, its mechanism is eps-PML for the true
  distribution of that column (``guarantees_[k]``).
* The columns are privatised independently, but a record's columns are not independent of
  each other: per-column eps do **not** add up to a guarantee about the whole record, and
  the failure probabilities add up to ``K delta``. For the whole record use
  :meth:`PMLPrivatizer.joint_guarantee` (:func:`pmlkit.joint_guarantee` on the fitted
  mechanisms), or design the columns together with :func:`pmlkit.design_joint`.
* The fitted mechanisms record the reference counts. Privatising the reference records
  themselves puts those people's labels in the counts outside any mechanism. Without
  ``reference=``, ``fit_transform`` (and so a ``Pipeline`` fit, which privatises its
  training data) designs from the very data it releases: it warns
  (:class:`~pmlkit.errors.PMLWarning`) unless ``allow_self_reference=True`` says that those
  counts are as public as the release. ``fit(A)`` then ``transform(B)`` designs from ``A``
  and releases ``B``; ``transform`` warns when ``B``'s counts are those of ``A`` or of a
  copy of it (shuffled, trimmed, extended: :mod:`pmlkit._provenance`), the way
  :func:`pmlkit.privatize` does. Design from a disjoint or public sample with
  ``reference=``.

scikit-learn is imported only by this module (install ``pmlkit[sklearn]``).
"""

from __future__ import annotations

import numbers
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._optional import require
from ._provenance import REFERENCE_WARNING
from ._validation import check_delta, check_eps, fmt
from .errors import DataError, PMLWarning, ValidationError

# a clear error naming the extra instead of a bare ModuleNotFoundError
require("sklearn", "pmlkit.sklearn (the scikit-learn transformer)")

from sklearn.base import BaseEstimator, TransformerMixin  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

__all__ = ["SELF_REFERENCE_WARNING", "PMLPrivatizer"]

#: The warning of ``fit_transform`` without ``reference=``.
SELF_REFERENCE_WARNING = (
    "PMLPrivatizer.fit_transform without reference= designs each column's mechanism from "
    "the data it releases: the mechanisms disclose those records' label counts, so the "
    "released records are not protected by the stated guarantee against anyone holding "
    "the mechanisms; pass reference= (a sample disjoint from the released records, or as "
    "public as they are), or allow_self_reference=True if the counts are public")

#: What the reuse warning of :func:`pmlkit.privatize` starts with (for a 1-D column).
_REUSE_PATTERN = re.escape(REFERENCE_WARNING[:60])


def _kind(X: Any) -> str:
    mod = type(X).__module__.split(".")[0]
    if mod == "pandas" and getattr(X, "ndim", 0) == 2:
        return "pandas"
    if mod == "polars" and type(X).__name__ == "DataFrame":
        return "polars"
    if mod == "polars" and type(X).__name__ == "LazyFrame":
        raise ValidationError(
            "X is a polars LazyFrame: PMLPrivatizer needs the rows, call X.collect() first")
    if mod == "pyarrow" and type(X).__name__ == "Table":
        return "arrow"
    return "numpy"


def _as_2d_numpy(X: Any, name: str = "X") -> np.ndarray:
    """A 2-D numpy array of ``X`` (lists, arrays), refusing sparse and 1-D input."""
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        raise ValidationError(
            f"{name} must be dense: PMLPrivatizer privatises categorical labels, got a "
            f"sparse {type(X).__name__}")
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValidationError(
            f"{name} must be 2-D (n_samples, n_features), got an array of shape {arr.shape}; "
            "Reshape your data: a single column with X.reshape(-1, 1)")
    if arr.dtype.kind == "c":
        raise ValidationError(f"{name} must hold labels: Complex data not supported")
    return arr


class PMLPrivatizer(TransformerMixin, BaseEstimator):  # type: ignore[misc]
    """Privatise categorical columns, one certified PML mechanism per column.

    Parameters
    ----------
    eps
        Target PML eps of each column's mechanism (``>= 0``).
    delta
        Failure probability of each column's confidence set, in ``(0, 1]``.
    confidence
        How the set of plausible distributions is built: ``"l1"`` (default; the l1-ball of
        the Weissman bound) or a :mod:`pmlkit.confidence` method name.
    utility
        ``"mutual_information"`` (alias ``"mi"``), ``"accuracy"``, or what
        :func:`pmlkit.design_from_samples` accepts.
    columns
        The columns to privatise: ``None`` (all), names (pandas/polars) or integer
        positions. Every other column is passed through unchanged.
    categories
        ``"auto"``: each column's categories are the labels seen in the reference sample.
        Or one list per privatised column: the full alphabet, so that labels absent from
        the reference can still be privatised (they get probability 0 in the estimate).
    reference
        ``None``: design from the data given to ``fit``. Otherwise a sample with the same
        columns to design from (keep it disjoint from the records you release); ``fit``
        then only records the columns of ``X``.
    allow_self_reference
        ``False`` (default): ``fit_transform`` without ``reference=`` (it designs from the
        data it releases) warns, and so does ``transform`` of data whose label counts
        match the reference's. ``True``: neither warns; say so only when the records'
        label counts are as public as the release (the mechanisms disclose them). Has no
        effect with ``reference=``.
    rng
        ``None`` (default): cryptographically secure randomness, fresh for every
        ``transform``. An int seed or numpy Generator: reproducible research runs only.
        One stream serves all columns of a call, so columns never share uniforms.
    max_categories
        Refuse columns with more distinct labels than this (a design's cost grows quickly
        with the alphabet; bin continuous columns first, e.g. with ``KBinsDiscretizer``).
    numeric
        ``None`` (default: every privatised column is categorical), one grid
        ``"LOWER:UPPER:STEP"`` (or :class:`pmlkit.numeric.grid.NumericGrid`) for every
        privatised column, or a mapping ``{column: grid}`` (names or positions): those
        columns are numeric, designed on their grid
        (:func:`pmlkit.numeric.design.design_numeric_from_samples`: of the certified
        candidates the best by ``utility`` ``"abs"`` (the default for them) or
        ``"squared"`` among those the analyst can invert, as ``pmlkit release`` does; with
        ``allow_unestimable=True`` the best regardless, which may merge grid points) and
        released as grid values in their own dtype; values outside the grid count at its
        ends and values between points go to the nearest one. ``max_categories`` does not
        apply to them.
    max_work, max_seconds
        Work budget (counted: the same data give the same mechanisms on any machine) and
        outer time cap (default none) of each column's design, passed to
        :func:`pmlkit.design_from_samples` (when the budget runs out the certified
        optimality gap reached is recorded).
    allow_unestimable
        ``False`` (default): a column whose design for ``utility`` merges categories gets
        the estimation design instead, so the analyst can estimate every category from
        the released column; ``True`` keeps the merging design (the analyst can then only
        bound the merged categories' shares).
    missing
        A missing value (None, NaN, NA) in a privatised column, the same words as
        :func:`pmlkit.design_from_samples` and :func:`pmlkit.privatize`: ``"error"``
        (default: refused, naming this parameter), ``"category"`` (designed and released
        as the label ``"(missing)"``, written back as a missing value; categorical columns
        only) or ``"keep"`` (left out of the design and left missing by ``transform``:
        whether a value is missing is then released unprotected).
    unknown_as
        ``None`` (default: a label the column's mechanism does not know is refused), one
        label for every privatised column, or a mapping ``{column: label}``: such values
        are released as that input label, which must be in the column's alphabet
        (declare it with ``categories=`` if the reference lacks it).

    Attributes
    ----------
    mechanisms_
        Tuple of fitted :class:`pmlkit.Mechanism`, one per privatised column.
    guarantees_
        Tuple of their :class:`pmlkit.design.Guarantee` (per column; see the module
        docstring for the whole record).
    columns_
        Integer positions of the privatised columns.
    n_features_in_, feature_names_in_
        As in scikit-learn.

    Examples
    --------
    Design from a public reference sample, release other records:

    >>> import numpy as np
    >>> gen = np.random.default_rng(0)
    >>> public = np.column_stack([gen.choice(["F", "M"], 1000),
    ...                           gen.choice(["lo", "hi"], 1000)])
    >>> records = np.array([["F", "hi"], ["M", "lo"], ["M", "hi"]])
    >>> priv = PMLPrivatizer(eps=1.0, delta=1e-6, reference=public).fit(records)
    >>> released = priv.transform(records)  # secure randomness, fresh on every call
    >>> released.shape, set(released[:, 1]) <= {"lo", "hi"}
    ((3, 2), True)
    >>> [g.certified_eps <= 1.0 + 1e-9 for g in priv.guarantees_]  # per column
    [True, True]
    """

    def __init__(self, eps: float = 1.0, delta: float = 1e-6, *, confidence: str = "l1",
                 utility: Any = "mutual_information", columns: Any = None,
                 categories: Any = "auto", reference: Any = None, rng: Any = None,
                 max_categories: int = 16, max_seconds: float | None = None,
                 max_work: float | None = 60.0, allow_self_reference: bool = False,
                 allow_unestimable: bool = False, numeric: Any = None,
                 missing: str = "error", unknown_as: Any = None) -> None:
        self.eps = eps
        self.delta = delta
        self.confidence = confidence
        self.utility = utility
        self.columns = columns
        self.categories = categories
        self.reference = reference
        self.rng = rng
        self.max_categories = max_categories
        self.max_seconds = max_seconds
        self.allow_self_reference = allow_self_reference
        self.max_work = max_work
        self.allow_unestimable = allow_unestimable
        self.numeric = numeric
        self.missing = missing
        self.unknown_as = unknown_as

    # -- scikit-learn metadata -----------------------------------------------------------
    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True   # labels, not measurements
        tags.input_tags.string = True        # string labels are fine
        # a null is not a label: refused, never guessed, unless missing= says what it is
        tags.input_tags.allow_nan = self.missing in ("category", "keep")
        # fresh randomness on every transform, unless seeded (research runs only)
        tags.non_deterministic = not isinstance(self.rng, numbers.Integral)
        tags.transformer_tags.preserves_dtype = []  # output dtype is the label type
        return tags

    def _more_tags(self) -> dict[str, Any]:  # scikit-learn < 1.6
        return {"X_types": ["categorical", "string", "2darray"],
                "non_deterministic": not isinstance(self.rng, numbers.Integral),
                "allow_nan": self.missing in ("category", "keep"), "preserves_dtype": []}

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _names(X: Any) -> list[Any] | None:
        kind = _kind(X)
        if kind == "pandas":
            return list(X.columns)
        if kind == "polars":
            return list(X.columns)
        if kind == "arrow":
            return list(X.column_names)
        return None

    @staticmethod
    def _column(X: Any, j: int) -> Any:
        kind = _kind(X)
        if kind == "pandas":
            return X.iloc[:, j]
        if kind == "polars":
            return X.to_series(j)
        if kind == "arrow":
            return X.column(j)
        return X[:, j]

    def _resolve_columns(self, names: list[Any] | None, n: int) -> list[int]:
        if self.columns is None:
            return list(range(n))
        cols = self.columns
        if isinstance(cols, str | numbers.Integral) or not isinstance(cols, Sequence | np.ndarray):
            cols = [cols]
        out: list[int] = []
        for c in cols:
            if isinstance(c, numbers.Integral) and not isinstance(c, bool):
                if not -n <= int(c) < n:
                    raise ValidationError(
                        f"columns entry {c!r} is out of range for X with {n} columns")
                out.append(int(c) % n)
            elif names is not None and c in names:
                out.append(names.index(c))
            else:
                raise ValidationError(
                    f"columns entry {c!r} is not a column of X"
                    + ("" if names is None else f" (columns: {fmt(names)})")
                    + "; give integer positions for arrays")
        if len(set(out)) != len(out):
            raise ValidationError(f"columns must not repeat a column, got {fmt(self.columns)}")
        return out

    def _check_X(self, X: Any, *, reset: bool) -> tuple[Any, list[Any] | None]:
        kind = _kind(X)
        if kind == "numpy":
            X = _as_2d_numpy(X)
        names = self._names(X)
        n_rows, n_cols = X.shape
        if n_cols == 0:
            raise ValidationError(
                f"X has 0 feature(s) (shape=({n_rows}, 0)) while a minimum of 1 is required.")
        if reset:
            if n_rows < 2:
                raise ValidationError(
                    f"X has {n_rows} sample(s) (n_samples = {n_rows}); a design needs a "
                    "reference sample with at least 2 categories per column")
            self.n_features_in_ = n_cols
            if names is not None and all(isinstance(c, str) for c in names):
                self.feature_names_in_ = np.asarray(names, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        else:
            if n_cols != self.n_features_in_:
                raise ValidationError(
                    f"X has {n_cols} features, but PMLPrivatizer is expecting "
                    f"{self.n_features_in_} features as input")
            fitted = getattr(self, "feature_names_in_", None)
            if fitted is not None and names is not None and list(fitted) != list(names):
                raise ValidationError(
                    "The feature names should match those that were passed during fit: "
                    f"fitted {fmt(list(fitted))}, got {fmt(names)}")
        return X, names

    # -- fit / transform -------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> PMLPrivatizer:
        """Design one certified mechanism per privatised column (``y`` is ignored)."""
        from .design import design_from_samples

        eps = check_eps(self.eps)
        delta = check_delta(self.delta)
        self._check_allow()
        if not isinstance(self.max_categories, numbers.Integral) or self.max_categories < 2:
            raise ValidationError(
                f"max_categories must be an integer >= 2, got {fmt(self.max_categories)}")
        utility = "mutual_information" if self.utility == "mi" else self.utility
        missing = self._check_missing()
        X, names = self._check_X(X, reset=True)
        cols = self._resolve_columns(names, X.shape[1])
        ref = X if self.reference is None else self.reference
        if ref is not X:
            if _kind(ref) == "numpy":
                ref = _as_2d_numpy(ref, "reference")
            ref_names = self._names(ref)
            if ref.shape[1] != X.shape[1] or (
                    names is not None and ref_names is not None and ref_names != names):
                raise ValidationError(
                    "reference must have the same columns as X: got "
                    f"{fmt(ref_names or ref.shape[1])}, expected {fmt(names or X.shape[1])}")
        cats = self.categories
        if isinstance(cats, str):
            if cats != "auto":
                raise ValidationError(f"categories must be 'auto' or one list per column, "
                                      f"got {cats!r}")
            cats = [None] * len(cols)
        elif len(cats) != len(cols):
            raise ValidationError(
                f"categories must hold one list per privatised column ({len(cols)}), got "
                f"{len(cats)}")
        mechs, guars = [], []
        grids = self._grids(cols, names)
        for j, c in zip(cols, cats, strict=True):
            col = self._column(ref, j)
            label = names[j] if names is not None else j
            if grids.get(j) is not None:  # a numeric column: designed on its grid
                from .numeric.design import design_numeric_from_samples

                vals = np.asarray(col)
                if vals.dtype == object:  # (numbers in a mixed object array)
                    vals = np.asarray(vals.tolist())
                if missing == "category":
                    raise ValidationError(
                        f"column {label!r} is numeric: missing='category' has no label "
                        "there (a grid has no '(missing)' point); use missing='keep' or "
                        "'error'")
                if missing == "keep" and vals.dtype.kind in "fc":
                    vals = vals[~np.isnan(vals)]  # left missing by transform
                try:
                    d = design_numeric_from_samples(
                        vals, grids[j], eps, delta=delta,
                        confidence=self.confidence,
                        utility=utility if utility in ("abs", "squared") else "abs")
                except (ValidationError, DataError) as exc:
                    raise ValidationError(f"column {label!r}: {exc}") from exc
                best = d.best
                if not self.allow_unestimable:  # the analyst can estimate the column
                    from .release.design import estimable_best

                    best = estimable_best(d.candidates, d.losses, grids[j].n)
                mechs.append(best)
                guars.append(best.guarantee)
                continue
            n_distinct = len(c) if c is not None else _distinct(col, label, missing)
            if n_distinct > self.max_categories:
                raise ValidationError(
                    f"column {label!r} has {n_distinct} distinct labels, more than "
                    f"max_categories = {self.max_categories}; PMLPrivatizer privatises "
                    "categorical columns: bin continuous ones first (e.g. KBinsDiscretizer) "
                    "or raise max_categories")
            try:
                res = design_from_samples(col, eps, delta, categories=c, utility=utility,
                                          confidence=self.confidence, missing=missing,
                                          max_seconds=self.max_seconds,
                                          max_work=self.max_work,
                                          estimable=not self.allow_unestimable)
            except ValidationError as exc:
                raise ValidationError(f"column {label!r}: {exc}") from exc
            except DataError as exc:
                raise _column_data_error(exc, label) from exc
            mechs.append(res.mechanism)
            guars.append(res.guarantee)
        unknown = self._unknown_labels(cols, names, mechs)
        self.columns_: tuple[int, ...] = tuple(cols)
        self.mechanisms_: tuple[Any, ...] = tuple(mechs)
        self.guarantees_: tuple[Any, ...] = tuple(guars)
        self.unknown_as_: tuple[Any, ...] = unknown
        return self

    def _check_missing(self) -> str:
        from .privatization.files import MISSING_POLICIES

        if not isinstance(self.missing, str) or self.missing not in MISSING_POLICIES:
            raise ValidationError(f"missing must be one of "
                                  f"{', '.join(map(repr, MISSING_POLICIES))}, got "
                                  f"{fmt(self.missing)}")
        return self.missing

    def _unknown_labels(self, cols: list[int], names: list[Any] | None,
                        mechs: list[Any]) -> tuple[Any, ...]:
        """``unknown_as`` resolved to one input label (or None) per privatised column,
        each checked against the column's alphabet."""
        spec = self.unknown_as
        if spec is None:
            return (None,) * len(cols)
        out: list[Any] = []
        for j, mech in zip(cols, mechs, strict=True):
            label = names[j] if names is not None else j
            if isinstance(spec, Mapping):
                keys = [k for k in spec if k == label or k == j]
                if not keys:
                    out.append(None)
                    continue
                want = spec[keys[0]]
            else:
                want = spec
            hits = [x for x in mech.input_labels if x == want or str(x) == str(want)]
            if not hits:
                raise ValidationError(
                    f"unknown_as={fmt(want)} is not a label of column {label!r} (labels: "
                    f"{fmt(list(mech.input_labels)[:20])}); declare it with categories= (a "
                    "label absent from the reference counts 0)")
            out.append(hits[0])
        if isinstance(spec, Mapping):
            known = {names[j] if names is not None else j for j in cols} | set(cols)
            extra = [k for k in spec if k not in known]
            if extra:
                raise ValidationError(f"unknown_as names column {extra[0]!r}, which is not "
                                      "privatised (see columns=)")
        return tuple(out)

    def _grids(self, cols: list[int], names: list[Any] | None) -> dict[int, Any]:
        """``numeric`` resolved: {column position: NumericGrid} of the numeric columns."""
        from .numeric.grid import NumericGrid

        def grid(g: Any) -> Any:
            return g if isinstance(g, NumericGrid) else NumericGrid.parse(g)

        spec = self.numeric
        if spec is None:
            return {}
        if isinstance(spec, str | NumericGrid):
            return {j: grid(spec) for j in cols}
        if not isinstance(spec, dict):
            raise ValidationError(f"numeric must be None, a grid 'LOWER:UPPER:STEP' or a "
                                  f"mapping {{column: grid}}, got {fmt(spec)}")
        out = {}
        for key, g in spec.items():
            if names is not None and key in names:
                j = names.index(key)
            elif isinstance(key, numbers.Integral) and not isinstance(key, bool):
                j = int(key)
            else:
                raise ValidationError(f"numeric names column {key!r}, which X does not have")
            if j not in cols:
                raise ValidationError(f"numeric names column {key!r}, which is not privatised "
                                      "(see columns=)")
            out[j] = grid(g)
        return out

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> Any:
        """``fit(X).transform(X)``. Without ``reference=`` this designs from the data it
        releases: a :class:`~pmlkit.errors.PMLWarning` says so, unless
        ``allow_self_reference=True`` (then the counts the mechanisms disclose must be as
        public as the release)."""
        if fit_params:
            raise ValidationError(f"fit_transform takes no fit parameters, got "
                                  f"{fmt(sorted(fit_params))}")
        self._check_allow()
        if self.reference is None and not self.allow_self_reference:
            warnings.warn(SELF_REFERENCE_WARNING, PMLWarning, stacklevel=2)
        # the one warning above says it; transform's count test would repeat it
        return self.fit(X, y)._transform(X, quiet_reuse=self.reference is None)

    def _check_allow(self) -> None:
        if not isinstance(self.allow_self_reference, bool | np.bool_):
            raise ValidationError(f"allow_self_reference must be True or False, got "
                                  f"{fmt(self.allow_self_reference)}")
        if not isinstance(self.allow_unestimable, bool | np.bool_):
            raise ValidationError(f"allow_unestimable must be True or False, got "
                                  f"{fmt(self.allow_unestimable)}")

    def transform(self, X: Any) -> Any:
        """Privatise the fitted columns of ``X``; returns the same kind of container with
        the same shape, order, index and column names (other columns unchanged).

        Warns (:class:`~pmlkit.errors.PMLWarning`) when a column's label counts are those
        of the reference the mechanisms were designed from (or of a copy of it; see the
        module docstring), unless ``allow_self_reference=True`` and no ``reference=``.

        Raises :class:`~pmlkit.errors.DataError` (a ``ValueError``) for a label the
        column's mechanism does not know (unless ``unknown_as``) or a null (unless
        ``missing``); nothing is returned then."""
        self._check_allow()
        return self._transform(X, quiet_reuse=self.reference is None
                               and bool(self.allow_self_reference))

    def _transform(self, X: Any, *, quiet_reuse: bool) -> Any:
        from .rng import resolve_rng

        check_is_fitted(self, "mechanisms_")
        X, names = self._check_X(X, reset=False)
        source = resolve_rng(self.rng)  # one stream for every column of this call
        kind = _kind(X)
        with warnings.catch_warnings():
            if quiet_reuse:
                warnings.filterwarnings("ignore", message=_REUSE_PATTERN,
                                        category=PMLWarning)
            unknown = getattr(self, "unknown_as_", (None,) * len(self.columns_))
            outs = [_release(m, self._column(X, j) if kind != "polars"
                             or m.provenance.details.get("grid") is None
                             else np.asarray(self._column(X, j)), source,
                             _column_policy(self.missing, m), u)
                    for j, m, u in zip(self.columns_, self.mechanisms_, unknown,
                                       strict=True)]
        if kind == "pandas":
            out = X.copy()
            for j, o in zip(self.columns_, outs, strict=True):
                out.isetitem(j, o)
            return out
        if kind == "polars":
            pl = require("polars", "polars input")

            # each output a polars Series of the column's own dtype where the labels fit
            # it (an Enum or Categorical column stays one), as pmlkit.privatize returns
            return X.with_columns([(o if isinstance(o, pl.Series) else pl.Series(
                np.asarray(o))).alias(names[j])  # type: ignore[index]
                for j, o in zip(self.columns_, outs, strict=True)])
        if kind == "arrow":
            for j, o in zip(self.columns_, outs, strict=True):
                X = X.set_column(j, names[j], o)  # type: ignore[index]
            return X
        cols = [X[:, j] for j in range(X.shape[1])]
        for j, o in zip(self.columns_, outs, strict=True):
            cols[j] = np.asarray(o)
        dtypes = {c.dtype for c in cols}
        if len(dtypes) == 1:
            return np.column_stack(cols)
        res = np.empty(X.shape, dtype=object)  # mixed label types: never coerce them
        for j, c in enumerate(cols):
            res[:, j] = c
        return res

    def joint_guarantee(self, reference: Any = None, delta: Any = None) -> Any:
        """The exact ``(eps, delta)``-PML guarantee of releasing all privatised columns of a
        record together (:func:`pmlkit.joint_guarantee`): what the per-column
        ``guarantees_`` do not give, since per-column eps do not add up.

        Parameters
        ----------
        reference
            The joint reference sample, with the columns of ``X`` (default: the
            ``reference`` given to the constructor). Required when the transformer was
            fitted on its own data: that data is not kept.
        delta
            Failure probability (default: the transformer's ``delta``).
        """
        from .joint import joint_guarantee

        check_is_fitted(self, "mechanisms_")
        ref = self.reference if reference is None else reference
        if ref is None:
            raise ValidationError(
                "reference must be given: the transformer keeps no copy of the data it was "
                "fitted on, got reference=None")
        if _kind(ref) == "numpy":
            ref = _as_2d_numpy(ref, "reference")
        if ref.shape[1] != self.n_features_in_:
            raise ValidationError(
                f"reference has {ref.shape[1]} columns, but PMLPrivatizer was fitted on "
                f"{self.n_features_in_}")
        names = self._names(ref)
        data = {str(names[j]) if names is not None else f"column {j}":
                np.asarray(self._column(ref, j)) for j in self.columns_}
        return joint_guarantee(self.mechanisms_, data,
                               self.delta if delta is None else delta,
                               confidence=self.confidence)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The input feature names: privatisation keeps every column in place."""
        from sklearn.utils.validation import _check_feature_names_in

        check_is_fitted(self, "mechanisms_")
        return np.asarray(_check_feature_names_in(self, input_features), dtype=object)


def _column_data_error(exc: Exception, label: Any) -> DataError:
    """A data error about a column's reference values, naming the column and the fix
    (:class:`PMLPrivatizer` has no missing-value policy: missing values are imputed
    before it, as a label of their own if they should be released)."""
    msg = f"column {label!r}: {exc}"
    if "null" in str(exc) and "PMLPrivatizer(missing=" not in msg:
        msg += (" (PMLPrivatizer(missing='category') designs and releases them as the "
                "label '(missing)', missing='keep' leaves them missing)")
    return DataError(msg)


def _release(mech: Any, col: Any, source: Any, missing: str, unknown: Any) -> Any:
    """One column privatised with its policies. A numeric column under ``"keep"``: its
    missing values stay missing and the others are released on the grid."""
    from .privatization import privatize

    if missing != "keep" or mech.provenance.details.get("grid") is None:
        return privatize(mech, col, rng=source, missing=missing, unknown_as=unknown)
    arr = np.asarray(col, dtype=np.float64)
    gone = np.isnan(arr)
    if not gone.any():
        return privatize(mech, col, rng=source, unknown_as=unknown)
    out = arr.copy()
    if not gone.all():
        out[~gone] = np.asarray(privatize(mech, arr[~gone], rng=source,
                                          unknown_as=unknown), dtype=np.float64)
    index = getattr(col, "index", None)
    if index is not None:  # a pandas column stays one, with its index and name
        import pandas as pd

        return pd.Series(out, index=index, name=getattr(col, "name", None))
    return out


def _column_policy(missing: str, mech: Any) -> str:
    """The missing-value policy one column is released with: ``"category"`` applies to a
    column whose mechanism has the label ``(missing)`` (its reference had missing
    values); a column without one refuses a missing value (``"error"``) as designed."""
    if missing == "category" and "(missing)" not in mech.input_labels:
        return "error"
    return missing


def _distinct(col: Any, label: Any, missing: str = "error") -> int:
    """The number of distinct labels of a column (missing values and labels numpy cannot
    order are counted by the estimate, whose error names what it refused; under
    ``missing`` "category" the missing values are one label, under "keep" none)."""
    try:
        return len(np.unique(np.asarray(col)))
    except TypeError:  # None or NaN among strings, or labels of several types
        from .design.pipeline import estimate_for_design

        try:
            return int(estimate_for_design(np.asarray(col, dtype=object),
                                           missing=missing).n)
        except DataError as exc:
            raise _column_data_error(exc, label) from exc
