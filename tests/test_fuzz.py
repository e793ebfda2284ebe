"""Property-based fuzzing of the entry points that read untrusted input.

* the mechanism JSON loader (:meth:`pmlkit.Mechanism.load` / ``from_dict``): random byte
  mutations of a valid file, and structural mutations of a valid document (a field replaced
  by arbitrary JSON) with the SHA-256 digest recomputed so that the deeper checks are
  reached. Only :class:`~pmlkit.errors.MechanismFileError` may come out, and whatever loads
  must be a valid mechanism;
* the CSV/Parquet column reader (:func:`pmlkit.io.read_column`): arbitrary bytes and
  arbitrary column names give a column or a :class:`~pmlkit.errors.DataError`;
* the numeric entry points: random floats including NaN, inf, huge and tiny values give a
  finite (or documented ``inf``) number or a :class:`~pmlkit.errors.PMLError`, never NaN and
  never a foreign exception.

Every example run is counted in ``EXAMPLES``; a module fixture prints the total at the end,
which is quoted in the issue's closing note.
"""

from __future__ import annotations

import collections
import importlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmlkit.errors import DataError, MechanismFileError, PMLError
from pmlkit.mechanism import Mechanism

F = TypeVar("F", bound=Callable[..., Any])

EXAMPLES: collections.Counter[str] = collections.Counter()

#: Examples per fuzz test. CI runs a fixed (derandomized) set so that it never turns red on
#: a newly drawn input; ``PMLKIT_FUZZ_EXAMPLES=5000`` explores new random inputs locally.
FUZZ_EXAMPLES = int(os.environ.get("PMLKIT_FUZZ_EXAMPLES", "0")) or 150
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                derandomize="PMLKIT_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])


def _has(module: str, *names: str) -> bool:
    """pmlkit's own public names: a missing one is an error (the suite fails), never a
    skip; returns True so callers read as before."""
    mod = importlib.import_module(module)
    for n in names:
        getattr(mod, n)
    return True


def _needs(module: str, *names: str) -> Callable[[F], F]:
    _has(module, *names)
    return lambda fn: fn


# --------------------------------------------------------------------------------------
# the mechanism JSON loader
# --------------------------------------------------------------------------------------

def _valid_docs() -> list[dict[str, Any]]:
    docs = [
        Mechanism([[0.8, 0.2], [0.3, 0.7]], ("Female", "Male"), ("F", "M"), "user",
                  {"eps": 0.69, "delta": 1e-9, "m": 1000}).to_dict(),
        Mechanism([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]],
                  (1, 2, 3)).to_dict(),
    ]
    if _has("pmlkit.sets", "L1Ball") and _has("pmlkit.worstcase", "leakage_capacity"):
        from pmlkit.sets import L1Ball
        from pmlkit.worstcase import leakage_capacity

        w = np.array([[0.6, 0.4], [0.35, 0.65]])
        ball = L1Ball([0.45, 0.55], 0.05)
        docs.append(Mechanism(w, designer="user", uncertainty_set=ball.to_dict(),
                              certified_eps=leakage_capacity(w, ball)).to_dict())
    return docs


DOCS = _valid_docs()


def _redigest(doc: dict[str, Any]) -> dict[str, Any]:
    content = {k: v for k, v in doc.items() if k != "sha256"}
    try:
        doc["sha256"] = Mechanism._digest(content)
    except (TypeError, ValueError):
        pass  # not representable as strict JSON: the loader must reject it anyway
    return doc


def _check_loaded(mech: Mechanism) -> None:
    w = np.asarray(mech)
    assert w.ndim == 2 and np.isfinite(w).all() and (w >= 0).all()
    assert np.allclose(w.sum(axis=1), 1.0, atol=1e-8)
    assert len(mech.input_labels) == w.shape[0]
    assert len(mech.output_labels) == w.shape[1]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**500), max_value=10**500)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    | st.sampled_from(["inf", "-inf", "NaN", "Infinity", "l1_ball", "box", "vertices"]),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=8) | st.sampled_from(
        ["kind", "center", "radius", "lower", "upper", "vertices"]), children, max_size=5),
    max_leaves=20,
)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _set_at(obj: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    obj[head] = _set_at(obj[head], rest, value)
    return obj


@FUZZ
@given(base=st.sampled_from(range(len(DOCS))), data=st.data(), redigest=st.booleans())
def test_fuzz_loader_structural_mutations(base: int, data: st.DataObject,
                                          redigest: bool) -> None:
    EXAMPLES["mechanism loader (structural)"] += 1
    doc = json.loads(json.dumps(DOCS[base]))
    path = data.draw(st.sampled_from([p for p in _paths(doc) if p and p[0] != "sha256"]))
    action = data.draw(st.sampled_from(["replace", "delete"]))
    if action == "delete":
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        del parent[path[-1]]
    else:
        doc = _set_at(doc, path, data.draw(json_values))
    if redigest:
        doc = _redigest(doc)
    try:
        mech = Mechanism.from_dict(doc)
    except MechanismFileError:
        return
    _check_loaded(mech)


@FUZZ
@given(base=st.sampled_from(range(len(DOCS))), data=st.data())
def test_fuzz_loader_byte_mutations(base: int, data: st.DataObject) -> None:
    EXAMPLES["mechanism loader (bytes)"] += 1
    raw = bytearray(json.dumps(DOCS[base], indent=2).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        i = data.draw(st.integers(0, len(raw) - 1))
        if kind == "flip":
            raw[i] = data.draw(st.integers(0, 255))
        elif kind == "insert":
            raw[i:i] = data.draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del raw[i]
        else:
            del raw[i:]
        if not raw:
            break
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.json"
        path.write_bytes(bytes(raw))
        try:
            mech = Mechanism.load(path)
        except MechanismFileError:
            return
    _check_loaded(mech)


@pytest.mark.parametrize("text", [
    "[" * 100_000,                                   # nesting deeper than the recursion limit
    '{"a":' * 100_000,
], ids=["deep-list", "deep-object"])
def test_loader_deeply_nested_json(tmp_path: Path, text: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(MechanismFileError):
        Mechanism.load(path)


@pytest.mark.parametrize("field,value", [
    ("matrix", [[10**400, 0], [0, 1]]),             # a JSON integer too large for a float
    ("certified_eps", 10**400),
    ("uncertainty_set", {"kind": "l1_ball", "center": [10**400, 0], "radius": 0.1}),
], ids=["huge-int-matrix", "huge-int-certified-eps", "huge-int-set-center"])
def test_loader_huge_integers(tmp_path: Path, field: str, value: Any) -> None:
    base = DOCS[-1] if field == "uncertainty_set" else DOCS[0]
    doc = _redigest({**base, field: value})
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(MechanismFileError):
        Mechanism.load(path)


# --------------------------------------------------------------------------------------
# the CSV / Parquet column reader
# --------------------------------------------------------------------------------------

@_needs("pmlkit.io", "read_column")
@FUZZ
@given(content=st.binary(max_size=200) | st.text(max_size=200).map(str.encode),
       column=st.text(max_size=6), ext=st.sampled_from([".csv", ".parquet"]),
       header=st.booleans())
def test_fuzz_read_column_arbitrary_bytes(content: bytes, column: str, ext: str,
                                          header: bool) -> None:
    from pmlkit.io import read_column

    EXAMPLES["read_column (arbitrary bytes)"] += 1
    if header:  # the column's name on a first line: arbitrary bytes are then read as rows
        content = column.encode() + b"\n" + content
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"data{ext}"
        path.write_bytes(content)
        try:
            col = read_column(path, column)
        except DataError:
            return
    # what was read came from the bytes: no more rows than line terminators (the header
    # ends with one), and for CSV every text cell (str, or bytes where it is not UTF-8;
    # read_column infers numbers, as documented) is found verbatim in the file, or with its
    # quotes doubled as CSV escapes them inside a quoted field
    import pyarrow as pa

    assert isinstance(col, pa.ChunkedArray)
    assert len(col) <= content.count(b"\n") + content.count(b"\r")
    if ext == ".csv":
        assert column.encode() in content
        for v in col.to_pylist():
            if isinstance(v, (str, bytes)):
                b = v.encode() if isinstance(v, str) else v
                assert not b or b in content or b.replace(b'"', b'""') in content, (v, content)


@_needs("pmlkit.io", "read_column")
@FUZZ
@given(header=st.lists(st.text(st.characters(blacklist_categories=("Cs",),
                                             blacklist_characters=',"\r\n'),
                               min_size=1, max_size=5), min_size=1, max_size=4, unique=True),
       cells=st.lists(st.sampled_from(["a", "b", "", "1", "2.5", "NaN", "null"]),
                      min_size=4, max_size=4), nrows=st.integers(0, 6),
       column=st.text(max_size=5))
def test_fuzz_read_column_csv(header: list[str], cells: list[str], nrows: int,
                              column: str) -> None:
    """A well-formed CSV: the column comes back, or a DataError naming the missing column."""
    from pmlkit.io import read_column

    EXAMPLES["read_column (csv)"] += 1
    rows = [cells[: len(header)]] * nrows
    text = ",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        path.write_text(text, encoding="utf-8")
        try:
            col = read_column(path, column)
        except DataError as exc:
            if column not in header:
                assert repr(column) in str(exc) or column in str(exc)
            return
    assert column in header
    assert len(col) <= len(rows)


# --------------------------------------------------------------------------------------
# numeric entry points: random floats incl. NaN / inf / huge / tiny
# --------------------------------------------------------------------------------------

weird = (st.floats(allow_nan=True, allow_infinity=True)
         | st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-300, 5e-324, 1e300, -1e-12, 2.0,
                            math.nan, math.inf, -math.inf, 1 - 1e-16, 1e-16])
         | st.integers(-3, 10**6)
         | st.sampled_from([np.float32(0.3), np.int64(7), np.float64(0.1)]))


def _finite_or_inf(x: Any, what: str) -> None:
    arr = np.asarray(x, dtype=np.float64)
    assert not np.isnan(arr).any(), f"{what} returned NaN: {x!r}"


def _call(fn: Any, args: tuple[Any, ...], keywords: tuple[str, ...]) -> Any:
    """``fn(*args)``, with the last ``len(keywords)`` arguments passed by those names."""
    split = len(args) - len(keywords)
    return fn(*args[:split], **dict(zip(keywords, args[split:], strict=True)))


# (module, function, number of scalar arguments, names of the trailing arguments that
# are passed by keyword: the current spelling, which never warns)
SCALAR_ENTRY_POINTS: list[tuple[str, str, int, tuple[str, ...]]] = [
    ("pmlkit.estimation", "l1_radius", 3, ("m", "n")),
    ("pmlkit.estimation", "l1_failure_probability", 3, ("m", "n")),
    ("pmlkit.bounds", "delta_min", 4, ("eps", "eps_target", "m", "n")),
    ("pmlkit.bounds", "eps_bound", 2, ("eps", "beta")),
    ("pmlkit.additive", "laplace_eps", 2, ()),
    ("pmlkit.additive", "laplace_scale", 2, ()),
    ("pmlkit.additive", "laplace_eps_uncertain", 3, ("beta",)),
    ("pmlkit.additive", "pldp_sigma", 2, ()),
    ("pmlkit.additive", "pldp_eps", 2, ()),
    ("pmlkit.additive", "laplace_scale_uncertain", 3, ("beta",)),
    ("pmlkit.bounds", "lipschitz_bound", 2, ("capacity", "distance")),
    ("pmlkit.bounds", "leakage_bound", 2, ("eps", "distance")),
    ("pmlkit.estimation", "phi", 1, ()),
]


@pytest.mark.parametrize("module,func,nargs,keywords", SCALAR_ENTRY_POINTS,
                         ids=[f"{m.split('.')[-1]}.{f}" for m, f, _, _ in SCALAR_ENTRY_POINTS])
def test_fuzz_scalar_entry_points(module: str, func: str, nargs: int,
                                  keywords: tuple[str, ...]) -> None:
    _has(module, func)
    fn = getattr(importlib.import_module(module), func)

    @FUZZ
    @given(args=st.tuples(*[weird] * nargs))
    def run(args: tuple) -> None:
        EXAMPLES[f"{func}"] += 1
        try:
            out = _call(fn, args, keywords)
        except PMLError:
            return
        _finite_or_inf(out, f"{func}{args}")

    run()


prob_vectors = st.lists(weird, min_size=0, max_size=5)


@_needs("pmlkit.leakage", "eps_min", "pml", "maximal_leakage", "eps_max")
@FUZZ
@given(rows=st.lists(st.lists(weird | st.floats(0, 1), min_size=1, max_size=3),
                     min_size=1, max_size=3),
       prior=prob_vectors, normalise=st.booleans())
def test_fuzz_leakage_functions(rows: list[list[float]], prior: list[float],
                                normalise: bool) -> None:
    import pmlkit

    EXAMPLES["leakage functions"] += 1
    if normalise:  # give the validators valid-looking inputs half of the time
        with np.errstate(all="ignore"):
            w = np.abs(np.nan_to_num(np.array([r + [0.0] * (3 - len(r)) for r in rows],
                                              dtype=float), nan=0.5, posinf=1.0))
            s = w.sum(axis=1, keepdims=True)
            w = np.where(s > 0, w / np.where(s > 0, s, 1), 1 / 3)
            p = np.abs(np.nan_to_num(np.array(prior + [0.5] * (len(w) - len(prior)),
                                              dtype=float)[:len(w)], nan=0.5, posinf=1.0))
            p = p / p.sum() if p.sum() > 0 else np.full(len(w), 1 / len(w))
        args: tuple[Any, Any] = (w, p)
    else:
        args = (rows, prior)
    try:
        out = pmlkit.eps_min(*args)
    except PMLError:
        pass
    else:
        _finite_or_inf(out, "eps_min")
    try:
        values = pmlkit.pml(*args)
    except PMLError:
        pass
    else:  # documented: NaN exactly for the outcomes that never occur (P_Y = 0)
        # P_Y[j] > 0 exactly when some p_i > 0 has W[i, j] > 0 (no float underflow here)
        occurs = ((np.asarray(args[1], dtype=float)[:, None] > 0)
                  & (np.asarray(args[0], dtype=float) > 0)).any(axis=0)
        assert np.array_equal(np.isnan(values), ~occurs), (values, occurs)
    for fn1, a in ((pmlkit.maximal_leakage, args[0]), (pmlkit.eps_max, args[1])):
        try:
            out = fn1(a)
        except PMLError:
            continue
        _finite_or_inf(out, fn1.__name__)


@_needs("pmlkit.additive", "gaussian_violation_probability")
@FUZZ
@given(sigma=weird, p=weird, eps=weird)
def test_fuzz_gaussian_violation_probability(sigma: Any, p: Any, eps: Any) -> None:
    from pmlkit.additive import gaussian_violation_probability

    EXAMPLES["gaussian_violation_probability"] += 1
    try:
        q = float(p)
        prior: Any = (1 - q, q) if math.isfinite(q) else (p, p)
        out = gaussian_violation_probability(sigma, prior, eps)
    except PMLError:
        return
    _finite_or_inf(out, "gaussian_violation_probability")
    assert 0.0 <= out <= 1.0


@_needs("pmlkit.bounds", "sensitivity_bound")
@FUZZ
@given(eps=weird, prior=prob_vectors, beta=weird)
def test_fuzz_sensitivity_bound(eps: Any, prior: list[Any], beta: Any) -> None:
    from pmlkit.bounds import sensitivity_bound

    EXAMPLES["sensitivity_bound"] += 1
    try:
        out = sensitivity_bound(prior, eps=eps, beta=beta)
    except PMLError:
        return
    _finite_or_inf(out, "sensitivity_bound")
    assert out >= 0


@_needs("pmlkit.additive", "gaussian_tradeoff")
@FUZZ
@given(sigma=weird, q=weird, m=weird, delta2=weird, eps=weird,
       method=st.sampled_from(["paper", "direct"]))
def test_fuzz_gaussian_tradeoff(sigma: Any, q: Any, m: Any, delta2: Any, eps: Any,
                                method: str) -> None:
    from pmlkit.additive import gaussian_tradeoff

    EXAMPLES["gaussian_tradeoff"] += 1
    try:
        e_out, d_out = gaussian_tradeoff(sigma, q, m=m, delta2=delta2, eps=eps, curve=method)
    except PMLError:
        return
    _finite_or_inf(e_out, "gaussian_tradeoff eps")
    _finite_or_inf(d_out, "gaussian_tradeoff delta")
    assert 0.0 <= d_out <= 1.0


@_needs("pmlkit.confidence", "confidence_set", "METHODS")
@FUZZ
@given(counts=st.lists(weird, min_size=0, max_size=5), delta=weird,
       method=st.sampled_from(["l1", "box-cp", "box-kl", "box-lower", "l1-kappa", "auto"]))
def test_fuzz_confidence_set(counts: list[Any], delta: Any, method: str) -> None:
    from pmlkit.confidence import confidence_set

    EXAMPLES["confidence_set"] += 1
    try:
        cs = confidence_set(counts, delta, confidence=method)
    except PMLError:
        return
    lo, hi = cs.set.coordinate_bounds()
    assert np.isfinite(lo).all() and np.isfinite(hi).all()
    assert (lo <= hi + 1e-12).all()


@_needs("pmlkit.io", "read_column")
@FUZZ
@given(names=st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=3, unique=True),
       values=st.lists(st.none() | st.text(max_size=3) | st.integers(-5, 5), min_size=0,
                       max_size=6),
       column=st.text(max_size=4))
def test_fuzz_read_column_parquet(names: list[str], values: list[Any], column: str) -> None:
    """A real Parquet file with random column names, nulls and mixed values."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pmlkit.io import read_column

    EXAMPLES["read_column (parquet)"] += 1
    strs = [None if v is None else str(v) for v in values]
    table = pa.table({n: pa.array(strs, type=pa.string()) for n in names})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.parquet"
        pq.write_table(table, path)
        try:
            col = read_column(path, column)
        except DataError as exc:
            assert column not in names, exc
            return
    assert column in names
    assert col.to_pylist() == strs


@_needs("pmlkit.sets", "L1Ball")
@_needs("pmlkit.worstcase", "leakage_capacity")
@FUZZ
@given(center=prob_vectors, radius=weird)
def test_fuzz_l1ball_and_capacity(center: list[Any], radius: Any) -> None:
    from pmlkit.sets import L1Ball
    from pmlkit.worstcase import leakage_capacity

    EXAMPLES["L1Ball + leakage_capacity"] += 1
    try:
        ball = L1Ball(center, radius)
    except PMLError:
        return
    n = len(center)
    w = np.full((n, 2), 0.5)
    out = leakage_capacity(w, ball)
    _finite_or_inf(out, "leakage_capacity")


@pytest.fixture(scope="module", autouse=True)
def _report_example_count(request: pytest.FixtureRequest) -> Any:
    """After the module: print how many fuzzing examples ran (quoted in the closing note)."""
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capman is not None and EXAMPLES:
        with capman.global_and_fixture_disabled():
            reporter.write_line(f"\nfuzzing examples run: {sum(EXAMPLES.values())} "
                                + json.dumps(dict(EXAMPLES)))


# --------------------------------------------------------------------------------------
# inputs the fuzzers found, pinned so that they stay fixed
# --------------------------------------------------------------------------------------

# (module, function, arguments, names of the trailing arguments passed by keyword)
FOUND: list[tuple[str, str, tuple[Any, ...], tuple[str, ...]]] = [
    ("pmlkit.additive", "pldp_eps", (1e-300, 0.5), ()),          # ZeroDivisionError
    ("pmlkit.additive", "pldp_eps", (1.2711610061536464e308, 0.5), ()),   # NaN
    ("pmlkit.additive", "gaussian_violation_probability",
     (1.3407807929942597e154, (1.0, 0.0), 0.0), ()),           # NaN (sigma^2 overflows)
    ("pmlkit.bounds", "sensitivity_bound", ([1.0], 710.0, 0.0),
     ("eps", "beta")),                                          # OverflowError
    ("pmlkit.bounds", "eps_bound", (710.0, 0.0), ("eps", "beta")),
    ("pmlkit.design", "exact_polytope", ("box", 710.0), ()),    # OverflowError in exp(eps)
    ("pmlkit.confidence", "l1_kappa_set", ([1, 1], 5e-324), ()),  # ValueError: log(0)
    ("pmlkit.leakage", "eps_max", ([10**400, 0],), ()),          # OverflowError (validator)
    ("pmlkit.bounds", "delta_min", (0.0, 0.0, 8.98846567431158e307, 2),
     ("eps", "eps_target", "m", "n")),                          # NaN: inf * 0
]


@pytest.mark.parametrize("module,func,args,keywords", FOUND,
                         ids=[f"{f}{a}"[:60] for _, f, a, _ in FOUND])
def test_fuzz_found(module: str, func: str, args: tuple[Any, ...],
                    keywords: tuple[str, ...]) -> None:
    _has(module, func)
    fn = getattr(importlib.import_module(module), func)
    if args and args[0] == "box":  # a set argument, built here
        from pmlkit.sets import Box

        args = (Box([0.2, 0.2], [0.8, 0.8]), *args[1:])
    try:
        out = _call(fn, args, keywords)
    except PMLError:
        return
    if hasattr(out, "set"):  # a ConfidenceSet
        out = np.concatenate(out.set.coordinate_bounds())
    if hasattr(out, "A_ub"):  # a MechanismPolytope: finite constraints, and non-empty
        from scipy.optimize import linprog

        assert np.isfinite(out.A_ub.toarray()).all() and np.isfinite(out.b_ub).all()
        res = linprog(np.zeros(out.n_vars), A_ub=out.A_ub, b_ub=out.b_ub, A_eq=out.A_eq,
                      b_eq=out.b_eq, bounds=out.bounds, method="highs")
        assert res.status == 0, res.message  # the uniform mechanism always satisfies it
    else:
        _finite_or_inf(out, f"{func}{args}")


# --------------------------------------------------------------------------------------
# the design paths: whatever comes back must meet its own certificate
# --------------------------------------------------------------------------------------

@_needs("pmlkit.design", "design_from_samples")
@settings(max_examples=max(60, FUZZ_EXAMPLES // 3), deadline=None,
          derandomize="PMLKIT_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow])
@given(counts=st.lists(st.integers(0, 40), min_size=1, max_size=5), eps=weird,
       delta=weird, conf=st.sampled_from(["l1", "box-cp", "box-kl", "l1-kappa", "auto"]),
       utility=st.sampled_from(["mutual_information", "accuracy"]))
def test_fuzz_design_from_samples(counts: list[int], eps: Any, delta: Any, conf: str,
                                  utility: str) -> None:
    """Random small samples and parameters: a PMLError, or a mechanism whose certificate
    holds (``certified_eps <= eps`` and the exact worst case over the recorded set is at
    most ``certified_eps``)."""
    import warnings

    from pmlkit.design import design_from_samples
    from pmlkit.errors import PMLWarning
    from pmlkit.sets import set_from_dict
    from pmlkit.worstcase import leakage_capacity

    EXAMPLES["design_from_samples"] += 1
    samples = np.repeat(np.arange(len(counts)), counts)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PMLWarning)
            res = design_from_samples(samples, eps, delta, confidence=conf, utility=utility)
    except PMLError:
        return
    mech = res.mechanism
    _check_loaded(mech)
    cert = res.guarantee.certified_eps
    assert cert <= float(eps) + 1e-9
    uset = set_from_dict(dict(mech.uncertainty_set))
    assert leakage_capacity(mech, uset) <= cert + 1e-9
    again = Mechanism.from_dict(json.loads(mech.to_json()))  # the file re-verifies it
    assert np.array_equal(np.asarray(again), np.asarray(mech))


@_needs("pmlkit.additive", "calibrate_laplace", "laplace_eps")
@FUZZ
@given(n_neg=st.integers(0, 60), n_pos=st.integers(0, 60), eps=weird, delta=weird,
       conf=st.sampled_from(["l1", "box-cp", "box-lower", "l1-kappa", "auto"]))
def test_fuzz_calibrate_laplace(n_neg: int, n_pos: int, eps: Any, delta: Any,
                                conf: str) -> None:
    """A PMLError, or a scale meeting eps for the smallest p_min of the returned set."""
    from pmlkit.additive import calibrate_laplace, laplace_eps

    EXAMPLES["calibrate_laplace"] += 1
    samples = ["no"] * n_neg + ["yes"] * n_pos
    try:
        cal = calibrate_laplace(samples, eps, delta, positive="yes", confidence=conf)
    except PMLError:
        return
    assert cal.b >= 0 and not math.isnan(cal.b)
    if 0 < cal.b < math.inf:
        assert laplace_eps(cal.b, cal.p_min_lower) <= cal.eps + 1e-12


# --------------------------------------------------------------------------------------
# privatisation: random values and random CSV files
# --------------------------------------------------------------------------------------

PRIV_VALUES = st.sampled_from(["F", "M", "X", "", " F", None, math.nan, 0, 1, 1.0, True,
                               "f", "nan", "None"])


@_needs("pmlkit.privatization", "privatize")
@FUZZ
@given(values=st.lists(PRIV_VALUES, max_size=8),
       container=st.sampled_from(["list", "numpy", "pandas", "pyarrow"]),
       int_labels=st.booleans())
def test_fuzz_privatize_values(values: list[Any], container: str, int_labels: bool) -> None:
    """A PMLError, or one output per record, each an output label of the mechanism, and
    every input a known label (nothing silently mapped or dropped)."""
    import pandas as pd
    import pyarrow as pa

    from pmlkit.privatization import privatize

    EXAMPLES["privatize (values)"] += 1
    labels = (0, 1) if int_labels else ("F", "M")
    mech = Mechanism([[0.8, 0.2], [0.3, 0.7]], labels, ("A", "B"))
    data: Any = values
    try:
        if container == "numpy":
            data = np.array(values, dtype=object)
        elif container == "pandas":
            data = pd.Series(values, dtype=object)
        elif container == "pyarrow":
            data = pa.array([None if isinstance(v, float) and math.isnan(v) else v
                             for v in values if not isinstance(v, bool)]
                            if all(isinstance(v, str) or v is None for v in values)
                            else [str(v) for v in values])
    except (pa.ArrowException, TypeError, ValueError):
        return  # the container itself refused the values
    try:
        out = privatize(mech, data, rng=0)
    except PMLError:
        return
    out_list = out.to_pylist() if hasattr(out, "to_pylist") else \
        list(np.asarray(out, dtype=object).ravel())
    assert len(out_list) == len(data)
    assert set(out_list) <= {"A", "B"}
    # nulls and unknown labels are never privatised silently
    assert not any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values)
    assert "X" not in values and "" not in values


@_needs("pmlkit.privatization", "privatize_file")
@FUZZ
@given(rows=st.lists(st.sampled_from(["F", "M", "X", "", "null", "NA", '"F"', "F,M", " M"]),
                     max_size=8),
       header=st.sampled_from(["sex", "sex,other", "other", ""]),
       out_ext=st.sampled_from([".csv", ".parquet"]))
def test_fuzz_privatize_file(rows: list[str], header: str, out_ext: str) -> None:
    """Random CSV files: a DataError (output untouched), or an output with one privatised
    row per input row, holding only output labels."""
    from pmlkit.io import read_column
    from pmlkit.privatization import privatize_file

    EXAMPLES["privatize_file"] += 1
    mech = Mechanism([[0.8, 0.2], [0.3, 0.7]], ("F", "M"), ("A", "B"))
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.csv"
        src.write_text(header + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
        out = Path(tmp) / f"out{out_ext}"
        try:
            privatize_file(mech, src, out, "sex", rng=0)
        except PMLError:
            assert not out.exists()
            return
        col = read_column(out, "sex").to_pylist()
    assert set(col) <= {"A", "B"}
    assert "sex" in header.split(",")
    assert "X" not in rows  # an unknown label is an error, never privatised
