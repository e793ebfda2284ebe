"""The missing-value and unknown-label policies of a release (``missing=``, ``unknown_as=``),
one set of words and rules for files and memory: :class:`Policy` applies them to Arrow
arrays, for :func:`~pmlkit.privatization.files.privatize_file` (with the CSV parsing
policy of the privatised column) and for :func:`pmlkit.privatize`.

Each privatised column is read as an Arrow array, the policies are applied (``missing=
"category"``: a null becomes the label ``(missing)``; ``"keep"``: a null stays null in
the output, which releases whether a value is missing without protection;
``unknown_as=LABEL``: a value that is not an input label is released as ``LABEL``), the
column is privatised through the local engine and converted back to its container: a
numpy array, a list, a pandas Series (or DataFrame columns), a pyarrow Array or
ChunkedArray, a polars Series. Other containers are refused (files:
:func:`privatize_file`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._encoding import MISSING_LABEL, plain_layout, refuse_missing_label_text
from .._validation import fmt
from ..errors import DataError, ValidationError
from ..io import CsvOptions, file_format
from ..mechanism import Mechanism
from ..rng import RandomSource
from ..sampler import Encoder, label_kind

__all__ = ["MISSING_LABEL", "MISSING_POLICIES", "Policy", "arrow_type_for",
           "check_missing_policy", "check_unknown_as", "csv_options_for", "policy_error",
           "privatize_with_policies", "with_policy_hint"]

#: What to do with a missing value in a privatised column.
MISSING_POLICIES = ("error", "category", "keep")


def check_missing_policy(missing: Any) -> str:
    """``missing`` checked against :data:`MISSING_POLICIES`."""
    if missing not in MISSING_POLICIES:
        raise ValidationError(f"missing must be one of {', '.join(map(repr, MISSING_POLICIES))}"
                              f", got {missing!r}")
    return str(missing)


def check_unknown_as(unknown_as: Any, mechs: Mapping[str, Any]) -> dict[str, Any]:
    """``unknown_as`` per column: one label for every column, or a mapping column -> label
    (columns it does not name stop on unknown values)."""
    per = ({str(k): v for k, v in unknown_as.items()} if isinstance(unknown_as, Mapping)
           else {c: unknown_as for c in mechs})
    for c, lab in per.items():
        if c not in mechs:
            raise ValidationError(f"unknown_as names column {c!r}, which is not privatised "
                                  f"(columns: {list(mechs)!r})")
        if lab is not None and lab not in mechs[c].input_labels:
            raise ValidationError(f"unknown_as must be an input label of the mechanism of "
                                  f"column {c!r}, got {lab!r} (input labels: "
                                  f"{', '.join(map(repr, mechs[c].input_labels[:20]))})")
    return {c: per.get(c) for c in mechs}


def arrow_type_for(labels: Sequence[Any]) -> Any:
    """The Arrow type of a label tuple's kind (``None`` for mixed or other labels)."""
    import pyarrow as pa

    return {"str": pa.string(), "int": pa.int64(), "bool": pa.bool_(),
            "float": pa.float64()}.get(label_kind(labels))


class Policy:
    """How the privatised column is read: CSV text to labels, missing values, unknowns."""

    def __init__(self, mech: Any, csv: CsvOptions | None, missing: str,
                 unknown_as: Any) -> None:
        self.mech = mech
        self.csv = csv
        self.missing = missing
        self.unknown_as = unknown_as
        self.in_type = arrow_type_for(mech.input_labels)
        self.unknown_rows = 0
        self._label_set: Any = None

    @property
    def label_set(self) -> Any:
        """The input labels as an Arrow array of :attr:`in_type` (None: no such type)."""
        import pyarrow as pa

        if self._label_set is None and self.in_type is not None:
            self._label_set = pa.array(list(self.mech.input_labels), type=self.in_type)
        return self._label_set

    def from_text(self, arr: Any) -> Any:
        """CSV text of a privatised column, stripped and with its missing texts null.

        The texts stay texts: a number label is matched by the text pmlkit writes for it
        (:attr:`pmlkit.sampler.Encoder.text_labels`, the spelling
        :func:`pmlkit.io.read_labels` reads as that number), so ``007`` or ``1e3`` is not
        the label 7 or 1000 but an unknown value (refused, or ``unknown_as``)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        opts = self.csv or CsvOptions()
        if opts.strip_whitespace:
            arr = pc.utf8_trim_whitespace(arr)
        if opts.missing_texts:  # the empty cell and --na texts (io.CsvOptions)
            is_null = pc.is_in(arr, value_set=pa.array(list(opts.missing_texts), arr.type))
            arr = pc.if_else(is_null, pa.scalar(None, arr.type), arr)
        return arr

    def _label(self, label: Any, typ: Any) -> Any:
        """``label`` as a scalar of the type ``typ`` of the values (its text for text)."""
        import pyarrow as pa

        if self.in_type is not None and typ != self.in_type:
            return pa.scalar(label, type=self.in_type).cast(typ)
        return pa.scalar(label, type=typ)

    def prepare(self, arr: Any) -> tuple[Any, Any]:
        """Apply the missing-value and unknown-label policies; returns (values to encode,
        mask of rows whose output must be missing, or None)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_dictionary(arr.type):
            if self.missing == "error" and self.unknown_as is None:
                return arr, None
            arr = arr.dictionary_decode()
        if pa.types.is_null(arr.type) and self.in_type is not None:
            arr = arr.cast(self.in_type)  # (nothing but missing values: the labels' type)
        keep_mask = None
        if self.missing == "category":
            refuse_missing_label_text(arr, "the column to privatise")
        if self.missing == "category" and arr.null_count:
            try:
                arr = arr.fill_null(pa.scalar(MISSING_LABEL, type=arr.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise DataError(f"missing='category' needs a text column, this one is "
                                f"{arr.type}") from exc
        elif self.missing == "keep" and arr.null_count:
            keep_mask = arr.is_null()
            arr = arr.fill_null(self._label(self.mech.input_labels[0], arr.type)) \
                if self.label_set is not None else arr
        if self.unknown_as is not None and self.label_set is not None:
            try:
                known = pc.is_in(arr, value_set=self.label_set.cast(arr.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                known = None
            if known is not None:
                unknown = pc.and_(pc.invert(known), arr.is_valid())
                n = pc.sum(unknown).as_py() or 0
                if n:
                    self.unknown_rows += int(n)
                    arr = pc.if_else(unknown, self._label(self.unknown_as, arr.type), arr)
        return arr, keep_mask


def csv_options_for(inp: Path, csv: CsvOptions | None) -> CsvOptions | None:
    """The options that read a CSV input as pure text (no null markers, no stripping)."""
    if file_format(inp) != "csv":
        return csv
    base = csv if csv is not None else CsvOptions()
    return dataclasses.replace(base, strip_whitespace=False, null_values=(),
                               delimiter=base.delimiter_for(inp))


def policy_error(encoder: Encoder, mech: Any, what: str) -> DataError:
    """The encoder's error (:meth:`pmlkit.sampler.Encoder.error`: the null and unknown
    values found, with their counts) followed by the options of :func:`privatize_file`
    (and of ``pmlkit privatize``) that release such rows: ``missing`` for nulls,
    ``unknown_as`` for values that are not input labels.

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> from pmlkit.sampler import Encoder
    >>> enc = Encoder(["a", "b"])
    >>> enc.encode_numpy(np.array(["a", None], dtype=object)) is None
    True
    >>> m = pmlkit.Mechanism(np.eye(2), ("a", "b"), ("a", "b"))
    >>> print(policy_error(enc, m, "column 'x'"))  # doctest: +NORMALIZE_WHITESPACE
    column 'x': 1 row holds a null/missing value (None/NaN/NA), which cannot be privatised;
    drop or impute them explicitly first; or, to release them, pass missing='keep' (command
    line: --missing keep; whether a value is missing is then released unprotected), or
    design the mechanism with missing='category' (pmlkit design --missing category) and
    pass missing='category'; nothing was privatised
    """
    base = str(encoder.error(what)).removesuffix("; nothing was privatised")
    hints = []
    if encoder.nulls:
        keep = ("missing='keep' (command line: --missing keep; whether a value is missing "
                "is then released unprotected)")
        if MISSING_LABEL in mech.input_labels:
            hints.append(f"or, to release them, pass missing='category' (command line: --missing "
                         f"category: the mechanism has the label {MISSING_LABEL!r}) or {keep}")
        else:
            hints.append(f"or, to release them, pass {keep}, or design the mechanism with "
                         "missing='category' (pmlkit design --missing category) and pass "
                         "missing='category'")
    if encoder.unknown:
        hints.append("to release a value the mechanism does not know as one of its input "
                     "labels, pass unknown_as=LABEL (command line: --unknown-as LABEL)")
    return DataError("; ".join([base, *hints, "nothing was privatised"]))


def with_policy_hint(exc: DataError, *, missing: str = "error", unknown_as: Any = None,
                     what: str | None = None) -> DataError:
    """A refusal of :func:`pmlkit.privatize` (nulls or values that are not input labels)
    with the options that release such rows, ``missing=`` and ``unknown_as=``, named
    (those already in use are not suggested again).

    Examples
    --------
    >>> msg = with_policy_hint(DataError("values: value 'x' appears in 1 row but is not "
    ...                                  "an input label; nothing was privatised"))
    >>> for part in str(msg).split("; ")[1:]:
    ...     print(part)
    pass unknown_as=LABEL to release such values as one of the input labels
    nothing was privatised
    """
    msg = str(exc)
    if what is not None:
        msg = msg.replace("values:", f"{what}:")
    hints = []
    if "null/missing" in msg and missing == "error":
        hints.append("or pass missing='keep' (left missing: whether a value is missing is "
                     "then released unprotected) or missing='category' (the label "
                     "'(missing)', with a mechanism designed with missing='category')")
    if "not an input label" in msg and unknown_as is None:
        hints.append("pass unknown_as=LABEL to release such values as one of the input "
                     "labels")
    tail = "; nothing was privatised"
    if hints and msg.endswith(tail):
        msg = msg[:-len(tail)] + "; " + "; ".join(hints) + tail
    return DataError(msg)


def missing_by_column(missing: str | Mapping[str, str], mechs: Mapping[str, Mechanism]
                      ) -> dict[str, str]:
    """The missing-value policy of each released column.

    ``missing`` is one policy for every column, or a mapping from column names to their
    own policies (a column it does not name takes ``"error"``; a column it gives
    ``"category"`` must have the label). One ``"category"`` for all releases a missing
    value as the label ``"(missing)"`` in the columns whose mechanism has that label; a
    column designed without it (its reference had no missing value, as in a plan designed
    with ``--missing category`` over several columns) takes ``"error"``: a missing value
    there is refused, naming the column. Refused when no column has the label. Other
    policies apply to every column.

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> sex = pmlkit.Mechanism(np.eye(2), ("F", "M"), ("F", "M"))
    >>> lang = pmlkit.Mechanism(np.eye(3), ("(missing)", "en", "fr"), ("(missing)", "en",
    ...                                                                  "fr"))
    >>> missing_by_column("category", {"sex": sex, "language": lang})
    {'sex': 'error', 'language': 'category'}
    >>> missing_by_column({"sex": "keep"}, {"sex": sex, "language": lang})
    {'sex': 'keep', 'language': 'error'}
    """
    if isinstance(missing, Mapping):
        extra = [c for c in missing if c not in mechs]
        if extra:
            raise ValidationError(f"missing names column {extra[0]!r}, which is not "
                                  f"released; allowed: {list(mechs)!r}")
        out = {c: check_missing_policy(missing.get(c, "error")) for c in mechs}
        for c, pol in out.items():
            if pol == "category" and MISSING_LABEL not in mechs[c].input_labels:
                raise ValidationError(
                    f"missing['{c}'] = 'category' needs a mechanism with the input label "
                    f"{MISSING_LABEL!r}; design column {c!r} from data whose missing "
                    "values are a category (missing='category')")
        return out
    missing = check_missing_policy(missing)
    if missing != "category":
        return {c: missing for c in mechs}
    has = {c: MISSING_LABEL in m.input_labels for c, m in mechs.items()}
    if not any(has.values()):
        raise ValidationError(
            f"missing='category' needs a mechanism with the input label {MISSING_LABEL!r}; "
            f"none of columns {list(mechs)!r} has it: design from data whose missing values "
            "are a category (missing='category', pmlkit design --missing category)")
    return {c: "category" if h else "error" for c, h in has.items()}


def checked_policies(mech: Mechanism, missing: Any, unknown_as: Any) -> tuple[str, Any]:
    """``(missing, unknown_as)`` checked for one column released through ``mech``.

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> swap = pmlkit.Mechanism(np.eye(2)[::-1], ("no", "yes"), ("no", "yes"))
    >>> checked_policies(swap, "keep", "no")
    ('keep', 'no')
    >>> checked_policies(swap, "category", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: missing='category' needs a mechanism with the input ...
    """
    missing = check_missing_policy(missing)
    unknown = check_unknown_as(unknown_as, {"values": mech})["values"]
    if missing == "category" and MISSING_LABEL not in mech.input_labels:
        raise ValidationError(
            f"missing='category' needs a mechanism with the input label {MISSING_LABEL!r}; "
            "design it from data whose missing values are a category (missing='category', "
            "pmlkit design --missing category)")
    return missing, unknown


def privatize_with_policies(mech: Mechanism, values: Any, source: RandomSource, *,
                            columns: str | Sequence[str] | None,
                            into: str | Sequence[str] | None, missing: str,
                            unknown_as: Any) -> Any:
    """``values`` privatised through ``mech`` under the policies (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> from pmlkit.rng import resolve_rng
    >>> swap = pmlkit.Mechanism(np.array([[0.0, 1.0], [1.0, 0.0]]), ("no", "yes"),
    ...                         ("no", "yes"))
    >>> privatize_with_policies(swap, ["yes", None, "maybe"], resolve_rng(None),
    ...                         columns=None, into=None, missing="keep", unknown_as="no")
    ['no', None, 'yes']
    """
    from ._core import columns_into

    missing, unknown = checked_policies(mech, missing, unknown_as)
    policy = Policy(mech, None, missing, unknown)
    kind = _container(values)
    if kind == "pandas-frame":
        cols, targets = columns_into(values, columns, into)
        out = values.copy()
        for c, t in zip(cols, targets, strict=True):
            out[t] = _one(mech, values[c], "pandas", source, policy, f"column {c!r}").array
        return out
    if columns is not None or into is not None:
        raise ValidationError("columns= and into= apply to DataFrames only; got a "
                              f"{type(values).__name__}")
    return _one(mech, values, kind, source, policy, "values")


def _container(values: Any) -> str:
    """Which container ``values`` is (refused with the supported ones listed)."""
    import sys

    mod = type(values).__module__.split(".")[0]
    if mod == "pandas":
        pd = sys.modules["pandas"]
        if isinstance(values, pd.DataFrame):
            return "pandas-frame"
        if isinstance(values, pd.Series):
            return "pandas"
    if mod == "pyarrow":
        pa = sys.modules["pyarrow"]
        if isinstance(values, pa.Array | pa.ChunkedArray):
            return "arrow"
    if mod == "polars":
        pl = sys.modules["polars"]
        if isinstance(values, pl.Series):
            return "polars"
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return "numpy"
    if isinstance(values, list | tuple):
        return "list"
    raise ValidationError(
        f"missing= and unknown_as= apply to 1-D numpy arrays, lists, pandas and dask Series "
        f"and DataFrames, pyarrow arrays and polars Series, got {type(values).__name__}; "
        "for files use privatize_file (pmlkit privatize --missing / --unknown-as)")


def _one(mech: Mechanism, values: Any, kind: str, source: RandomSource, policy: Any,
         what: str) -> Any:
    """One column: to Arrow, the policies, the release, back to its container."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._core import run_local

    if kind == "arrow":
        arr = values
    elif kind == "polars":
        arr = values.to_arrow()
    else:
        data = values if kind != "list" else np.asarray(values, dtype=object)
        try:
            arr = pa.array(data, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise DataError(f"{what}: missing= and unknown_as= need values of one type "
                            f"(text, integers, ...): {exc}") from None
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    view = pa.types.is_string_view(arr.type)
    if view:  # the policies' compute kernels take plain strings; the result goes back
        arr = plain_layout(arr, what)
    prepared, keep = policy.prepare(arr)
    try:
        out = run_local(mech, prepared, source, columns=None, into=None, counts=False)[0]
    except DataError as exc:
        raise with_policy_hint(exc, missing=policy.missing, unknown_as=policy.unknown_as,
                               what=what) from None
    except (pa.ArrowTypeError, pa.ArrowInvalid) as exc:
        raise DataError(f"{what}: missing= and unknown_as= release through Arrow, which "
                        f"needs output labels of one type; the mechanism's are "
                        f"{fmt(list(mech.output_labels))} ({exc})") from None
    if policy.missing == "category" and MISSING_LABEL in mech.output_labels:
        # the output "(missing)" is released as a missing value, as the files have it
        try:
            drawn_missing = pc.fill_null(pc.equal(out, pa.scalar(MISSING_LABEL, out.type)),
                                         False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            drawn_missing = None
        if drawn_missing is not None:
            keep = drawn_missing if keep is None else pc.or_(keep, drawn_missing)
    if keep is not None and pc.any(keep).as_py():
        out = pc.if_else(keep, pa.nulls(1, out.type)[0], out)
    if view:
        try:
            out = out.cast(values.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
    if kind == "arrow":
        return out if not isinstance(values, pa.ChunkedArray) else pa.chunked_array([out])
    if kind == "polars":
        import polars as pl

        series = pl.from_arrow(out)
        assert isinstance(series, pl.Series)
        if isinstance(values.dtype, pl.Categorical | pl.Enum):
            try:  # the column's own type where the released labels fit it
                series = series.cast(values.dtype)
            except pl.exceptions.PolarsError:
                pass
        return series.rename(values.name)
    if kind == "pandas":
        return _as_pandas(out, values, keep is not None, mech,
                          missing_as_null=policy.missing == "category")
    if kind == "list":
        return out.to_pylist()
    res = out.to_numpy(zero_copy_only=False)
    if keep is None and values.dtype.kind != "O":
        res = _lossless_cast(res, values.dtype)
    return res


def _lossless_cast(res: np.ndarray, dtype: Any) -> np.ndarray:
    """``res`` in ``dtype`` when every value survives the cast unchanged (a fixed-width
    text type would cut longer labels, an integer type would truncate fractions), else
    ``res`` as it is."""
    try:
        cast = res.astype(dtype)
    except (TypeError, ValueError, OverflowError):
        return res
    try:
        same = bool(np.array_equal(cast.astype(object), res.astype(object)))
    except (TypeError, ValueError):
        return res
    return cast if same else res


def _as_pandas(out: Any, values: Any, kept_nulls: bool, mech: Mechanism,
               missing_as_null: bool = False) -> Any:
    """The released Arrow column as a pandas Series shaped like ``values``.

    Positional: the released values in the input's row order, under its own index and name
    (``pd.Series(series, index=...)`` would align on labels and lose every row of an index
    other than 0..n-1). The column's dtype is kept where the released values fit it: an
    ordered categorical keeps its categories when every output label is one of them, any
    other categorical gets the output labels as its categories (as the file engine gives
    it: an unordered one's may be built from the raw values), a pandas
    extension dtype (``Int64``, ``string``, ...) also when missing values were kept, a numpy
    dtype only when no missing value was kept (NaN does not fit an integer).
    """
    import pandas as pd

    res = out.to_pandas().set_axis(values.index).rename(values.name)
    dtype = values.dtype
    try:
        if isinstance(dtype, pd.CategoricalDtype):
            from ._categories import output_categorical

            # (the output "(missing)" under missing="category" is a missing value)
            return res.astype(output_categorical(mech, dtype,
                                                 without_missing=missing_as_null))
        if isinstance(dtype, pd.api.extensions.ExtensionDtype):
            return res.astype(dtype)  # refuses what does not fit (caught below)
        if not kept_nulls:
            return pd.Series(_lossless_cast(res.to_numpy(), dtype), index=res.index,
                             name=res.name)
    except (TypeError, ValueError):
        pass
    return res
