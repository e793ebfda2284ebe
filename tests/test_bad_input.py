"""Bad input, everywhere: one table, tested row by row and rendered into
``docs/bad_input.md``.

Each :class:`Case` is one public entry point fed one bad input; it states the exact error
type (a :mod:`pmlkit.errors` class, or for the command line the exit status with a one-line
``pmlkit: error: ...`` on stderr and no traceback) and a regular expression the message must
match (it names the parameter and the offending value). ``CASES`` is the single source:

* ``test_bad_input`` runs every row;
* ``test_doc_table_is_current`` checks that ``docs/bad_input.md`` holds exactly the table
  rendered from ``CASES`` (regenerate with ``python tests/test_bad_input.py --write``).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pmlkit
from pmlkit._optional import MissingDependencyError
from pmlkit.errors import (
    CertificationError,
    DataError,
    MechanismFileError,
    PMLError,
    TooLargeError,
    ValidationError,
)

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "bad_input.md"
BEGIN, END = "<!-- BEGIN GENERATED TABLE -->", "<!-- END GENERATED TABLE -->"

W = [[0.8, 0.2], [0.3, 0.7]]
P = [0.4, 0.6]
NAN, INF = math.nan, math.inf


@dataclass(frozen=True)
class Case:
    """One row of the table: ``call(tmp)`` must fail with ``error`` matching ``match``."""

    entry: str                      # the public entry point, as a user writes it
    bad: str                        # the bad input, in words
    call: Callable[[Path], Any]     # receives a fresh temporary folder
    error: type[PMLError] | int     # exception class, or CLI exit status
    match: str                      # regex the message (or stderr) must match

    @property
    def id(self) -> str:
        return f"{self.entry} | {self.bad}"

    @property
    def error_text(self) -> str:
        if isinstance(self.error, int):
            return f"exit {self.error}, `pmlkit: error: ...`"
        return f"`{self.error.__name__}`"


# --------------------------------------------------------------------------------------
# files used by the rows
# --------------------------------------------------------------------------------------

def csv_file(tmp: Path, text: str = "sex,income\nMale,>50K\nFemale,<=50K\nMale,<=50K\n",
             name: str = "data.csv") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def bytes_file(tmp: Path, data: bytes, name: str = "data.csv") -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def mech_file(tmp: Path, tamper: Callable[[dict], None] | None = None) -> Path:
    ball = pmlkit.L1Ball(P, 0.1)  # certified: uncertified files need --allow-uncertified
    doc = pmlkit.Mechanism(W, ("Female", "Male"), ("Female", "Male"),
                           uncertainty_set=ball.to_dict(),
                           certified_eps=pmlkit.leakage_capacity(W, ball)).to_dict()
    if tamper is not None:
        tamper(doc)
    path = tmp / "mech.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def forged_certificate(tmp: Path) -> Path:
    """A certified mechanism whose certified eps was lowered and whose digest was recomputed
    (a deliberate forgery the digest cannot catch; the certificate re-check must)."""
    ball = pmlkit.L1Ball(P, 0.1)
    mech = pmlkit.Mechanism(W, uncertainty_set=ball.to_dict(),
                            certified_eps=pmlkit.leakage_capacity(W, ball))
    doc = mech.to_dict()
    doc["guarantee"]["certified_eps"] = doc["guarantee"]["certified_eps"] / 2
    doc.pop("sha256")
    doc["sha256"] = pmlkit.Mechanism._digest(doc)
    path = tmp / "forged.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def forged_file(tmp: Path, edit: Callable[[dict], None], *, designed: bool = False,
                text_edit: Callable[[str], str] | None = None, version: int = 1) -> Path:
    """A mechanism file (format ``version``) edited by ``edit`` with its digest recomputed
    (anyone can): a hand-made uncertified matrix, or (``designed``) a design from counts
    [40, 25, 35]."""
    if designed:
        est = pmlkit.EmpiricalDistribution.from_counts([40, 25, 35])
        mech = pmlkit.design_from_samples(est, 1.0, 1e-3).mechanism
    else:
        mech = pmlkit.Mechanism(np.eye(2), designer="design_from_samples",
                                parameters={"eps": 0.69, "delta": 1e-6})
    doc = mech.to_dict(format_version=version)
    edit(doc)
    doc.pop("sha256")
    doc["sha256"] = pmlkit.Mechanism._digest(doc)
    text = json.dumps(doc)
    path = tmp / "forged.json"
    path.write_text(text if text_edit is None else text_edit(text), encoding="utf-8")
    return path
def _df(data: dict) -> Any:
    import pandas as pd

    return pd.DataFrame(data)


def _set(key: str, value: Any) -> Callable[[dict], None]:
    def f(doc: dict) -> None:
        doc[key] = value
    return f


def cli(*args: Any) -> Callable[[Path], Any]:
    """A CLI row: arguments may be callables of the temporary folder (for files)."""
    def run(tmp: Path) -> Any:
        from pmlkit.cli.main import main

        argv = [str(a(tmp)) if callable(a) else str(a) for a in args]
        return main(argv)
    return run


def _guarantee_for_prior(eps: float) -> Any:
    from pmlkit.guarantee import PMLGuarantee

    return PMLGuarantee.for_prior([0.5, 0.5], eps=eps, certified_eps=eps)


def _provenance() -> Any:
    from pmlkit.guarantee import Provenance

    return Provenance()


def _without(module: str, fn: Callable[[Path], Any]) -> Callable[[Path], Any]:
    """``fn`` run as if the optional ``module`` were not installed."""
    def call(tmp: Path) -> Any:
        saved = sys.modules.get(module, ...)
        sys.modules[module] = None  # type: ignore[assignment]  # import then fails
        try:
            return fn(tmp)
        finally:
            if saved is ...:
                del sys.modules[module]
            else:
                sys.modules[module] = saved  # type: ignore[assignment]
    return call


def _d(mod: str, name: str) -> Callable[..., Any]:
    """A late-bound function of a submodule (so a missing module skips, not errors)."""
    def f(*args: Any, **kwargs: Any) -> Any:
        import importlib

        obj: Any = importlib.import_module(mod)
        for part in name.split("."):  # "Class.method" reaches a classmethod
            obj = getattr(obj, part)
        return obj(*args, **kwargs)
    f.__name__ = name
    return f


design = "pmlkit.design"
additive = "pmlkit.additive"
io = "pmlkit.io"
conf = "pmlkit.confidence"
rng = "pmlkit.rng"

samples_ok = ["a", "b", "a", "a", "b"]


def _arrow(values: list[Any]) -> Any:
    import pyarrow as pa

    return pa.array(values)


def _arrow_take_bad() -> Any:
    pa = pytest.importorskip("pyarrow")
    from pmlkit.sampler import arrow_take

    return arrow_take(pa.array(["F", "M"]), np.array([0, 2, 1], dtype=np.intp))


def _sampler_draw(codes: list[Any], out_len: int | None = None) -> Any:
    import numpy as np

    from pmlkit.sampler import AliasSampler

    out = None if out_len is None else np.empty(out_len, dtype=np.intp)
    return AliasSampler(W).draw(np.array(codes), np.random.default_rng(0), out=out)


def _background(matrix: Any, **kwargs: Any) -> Any:
    from pmlkit.sampler import background_tables

    return background_tables(matrix, **kwargs)


def _spec_file(t: Any, epsilon_line: str) -> Any:
    """A release spec (TOML) in ``t`` with the given epsilon line."""
    path = t / "release.toml"
    path.write_text('reference = "r.csv"\ninput = "i.csv"\noutput = "o.csv"\n'
                    f'{epsilon_line}\ndelta = 1e-6\n[columns.sex]\ntype = "categorical"\n')
    return path


def _sk(**kwargs: Any) -> Any:
    from pmlkit.sklearn import PMLPrivatizer

    return PMLPrivatizer(**kwargs)


# --------------------------------------------------------------------------------------
# THE TABLE
# --------------------------------------------------------------------------------------

CASES: list[Case] = [
    # ---- pmlkit top level: leakage
    Case("pmlkit.pml(W, prior)", "prior with NaN", lambda t: pmlkit.pml(W, [NAN, 1.0]),
         ValidationError, r"prior must not contain NaN"),
    Case("pmlkit.pml(W, prior)", "prior not summing to 1", lambda t: pmlkit.pml(W, [0.5, 0.4]),
         ValidationError, r"prior must sum to 1.*0\.9"),
    Case("pmlkit.pml(W, prior)", "negative prior entry", lambda t: pmlkit.pml(W, [1.5, -0.5]),
         ValidationError, r"prior entries must be >= 0, got -0\.5"),
    Case("pmlkit.pml(W, prior)", "prior length != rows of W",
         lambda t: pmlkit.pml(W, [0.2, 0.3, 0.5]), ValidationError,
         r"prior has 3 entries but mechanism has 2 rows"),
    Case("pmlkit.eps_min(W, prior)", "W rows not summing to 1",
         lambda t: pmlkit.eps_min([[0.5, 0.4], [0.3, 0.7]], P), ValidationError,
         r"mechanism rows must sum to 1.*row 0 sums to 0\.9"),
    Case("pmlkit.eps_min(W, prior)", "W with inf", lambda t: pmlkit.eps_min([[INF, 0], [0, 1]], P),
         ValidationError, r"mechanism must not contain inf"),
    Case("pmlkit.eps_min(W, prior)", "W 1-D (wrong shape)",
         lambda t: pmlkit.eps_min([0.5, 0.5], P), ValidationError,
         r"mechanism must be 2-D, got an array of shape \(2,\)"),
    Case("pmlkit.eps_min(W, prior)", "empty W", lambda t: pmlkit.eps_min(np.zeros((0, 2)), []),
         ValidationError, r"mechanism must not be empty"),
    Case("pmlkit.eps_min(W, prior)", "W of strings",
         lambda t: pmlkit.eps_min([["a", "b"], ["c", "d"]], P), ValidationError,
         r"mechanism must be a 2-D array of real numbers"),
    Case("pmlkit.eps_max(prior)", "empty prior", lambda t: pmlkit.eps_max([]),
         ValidationError, r"prior must not be empty"),
    Case("pmlkit.privacy_region(eps, prior)", "eps < 0",
         lambda t: pmlkit.privacy_region(-0.1, P), ValidationError,
         r"eps must be in \[0, inf\), got -0\.1"),
    Case("pmlkit.privacy_region(eps, prior)", "eps NaN",
         lambda t: pmlkit.privacy_region(NAN, P), ValidationError, r"eps .*nan"),
    Case("pmlkit.maximal_leakage(W)", "W with negative entry",
         lambda t: pmlkit.maximal_leakage([[1.2, -0.2], [0.3, 0.7]]), ValidationError,
         r"mechanism entries must be >= 0, got -0\.2"),
    Case("pmlkit.ldp_epsilon(W)", "W 3-D", lambda t: pmlkit.ldp_epsilon(np.ones((2, 2, 2)) / 2),
         ValidationError, r"mechanism must be 2-D"),
    # ---- envelope, c-interior, plain words (issue 36)
    Case("pmlkit.leakage_envelope(W, prior, delta)", "delta 0",
         lambda t: pmlkit.leakage_envelope(W, P, 0.0), ValidationError, r"delta .*0"),
    Case("pmlkit.leakage_envelope(W, prior, delta)", "prior length != rows of W",
         lambda t: pmlkit.leakage_envelope(W, [0.2, 0.3, 0.5], 0.1), ValidationError,
         r"prior"),
    Case("pmlkit.LeakageEnvelope", "built by leakage_envelope: delta above 1",
         lambda t: pmlkit.leakage_envelope(W, P, 1.5), ValidationError, r"delta .*1\.5"),
    Case("pmlkit.envelope.envelope_bound(W, over, delta)", "delta above 1",
         lambda t: _d("pmlkit.envelope", "envelope_bound")(W, P, 1.5), ValidationError,
         r"delta must be in \[0, 1\], got 1\.5"),
    Case("pmlkit.envelope.envelope_bound(W, over, delta)", "over length != rows of W",
         lambda t: _d("pmlkit.envelope", "envelope_bound")(W, [0.2, 0.3, 0.5], 0.1),
         ValidationError, r"over"),
    Case("pmlkit.envelope.EnvelopeBound", "built by envelope_bound: stated eps negative",
         lambda t: _d("pmlkit.envelope", "envelope_bound")(W, P, 0.1, eps=-1.0),
         ValidationError, r"eps .*-1\.0"),
    Case("pmlkit.envelope.envelope_bounds(W, over, delta)", "eps length != delta length",
         lambda t: _d("pmlkit.envelope", "envelope_bounds")(W, P, [0.1, 0.2], eps=[0.1]),
         ValidationError, r"eps must have the length of delta \(2\)"),
    Case("pmlkit.envelope.knapsack_level(caps, ratio, delta)", "negative cap",
         lambda t: _d("pmlkit.envelope", "knapsack_level")([0.1, -0.1], [1.0, 2.0], 0.1),
         ValidationError, r"caps must be finite and >= 0, got -0\.1 at index 1"),
    Case("pmlkit.envelope.knapsack_mass(caps, ratio, eps)", "NaN ratio",
         lambda t: _d("pmlkit.envelope", "knapsack_mass")([0.1, 0.1], [1.0, NAN], 0.1),
         ValidationError, r"ratio must be >= 0 .*nan at index 1"),
    Case("pmlkit.additive.GaussianMechanism.envelope(delta)", "delta above 1",
         lambda t: _d(additive, "GaussianMechanism.from_scale")(
             1.0, eps=1.0, granularity=0.5).envelope(2.0), ValidationError,
         r"delta must be in \[0, 1\], got 2\.0"),
    Case("pmlkit.interior_eps(W, c)", "c above 1/N",
         lambda t: pmlkit.interior_eps(W, 0.6), ValidationError, r"c must be in \[0, 1/N\]"),
    Case("pmlkit.interior.interior_contraction_bound(n, eps, c)", "c above 1/n",
         lambda t: _d("pmlkit.interior", "interior_contraction_bound")(3, 1.0, 0.5),
         ValidationError, r"c must be in \[0, 1/N\] = \[0, 0\.333333\] for N = 3 inputs, "
         r"got 0\.5"),
    Case("pmlkit.interior.interior_contraction_bound(n, eps, c)", "gamma below 1",
         lambda t: _d("pmlkit.interior", "interior_contraction_bound")(3, 1.0, 0.1, gamma=0.5),
         ValidationError, r"gamma must be finite and >= 1, got 0\.5"),
    Case("pmlkit.interior.distinguishing_samples(W, p, q, error)", "error 1",
         lambda t: _d("pmlkit.interior", "distinguishing_samples")(W, P, [0.5, 0.5], 1.0),
         ValidationError, r"error must be in \(0, 1\), got 1\.0"),
    Case("pmlkit.interior.SampleSizePlan", "built by distinguishing_samples: eta above 1",
         lambda t: _d("pmlkit.interior", "distinguishing_samples")(W, P, [0.5, 0.5], 0.1,
                                                                  eta=2.0),
         ValidationError, r"eta must be in \[0, 1\], got 2\.0"),
    Case("pmlkit.dobrushin_coefficient(W)", "W rows not summing to 1",
         lambda t: pmlkit.dobrushin_coefficient([[0.5, 0.2], [0.3, 0.7]]), ValidationError,
         r"sum"),
    Case("pmlkit.plain_reading(eps)", "eps negative",
         lambda t: pmlkit.plain_reading(-1.0), ValidationError, r"eps"),
    Case("pmlkit.plain_sentence(eps)", "eps NaN",
         lambda t: pmlkit.plain_sentence(NAN), ValidationError, r"eps"),
    Case("pmlkit.eps_for_precision(half_width, rows)", "half_width 0",
         lambda t: pmlkit.eps_for_precision(0.0, 100), ValidationError, r"half_width"),
    Case("pmlkit.design.maxmin_mechanism(utility, prior, eps)", "utility rows != prior",
         lambda t: _d(design, "maxmin_mechanism")(np.eye(3), P, 1.0), ValidationError,
         r"utility has 3 rows"),
    Case("pmlkit.mutual_information(W, prior)", "prior with inf",
         lambda t: pmlkit.mutual_information(W, [INF, 0.0]), ValidationError,
         r"prior must not contain inf"),
    # ---- estimation
    Case("pmlkit.estimation.empirical_from_counts(labels, counts, categories, nulls)",
         "nulls > 0", lambda t: _d("pmlkit.estimation", "empirical_from_counts")(
             ["a"], [3], nulls=2), DataError, r"samples contain 2 null/NaN value\(s\)"),
    Case("pmlkit.estimation.empirical_from_counts(labels, counts, categories, nulls)",
         "label not in categories", lambda t: _d("pmlkit.estimation", "empirical_from_counts")(
             ["a", "z"], [3, 4], ["a", "b"]), DataError, r"'z' \(4 row\(s\)\)"),
    Case("pmlkit.empirical_distribution(samples)", "empty samples",
         lambda t: pmlkit.empirical_distribution([]), ValidationError,
         r"samples must not be empty"),
    Case("pmlkit.empirical_distribution(samples)", "null (None) in samples",
         lambda t: pmlkit.empirical_distribution(["a", None, "b"]), DataError,
         r"(?i)null|missing|None"),
    Case("pmlkit.empirical_distribution(samples)", "NaN in numeric samples",
         lambda t: pmlkit.empirical_distribution([1.0, NAN, 2.0]), DataError,
         r"(?i)null|missing|nan"),
    Case("pmlkit.empirical_distribution(samples, categories)", "label not in categories",
         lambda t: pmlkit.empirical_distribution(["a", "c"], categories=["a", "b"]), DataError,
         r"sample value 'c'.*not in categories"),
    Case("pmlkit.empirical_distribution(samples)", "2-D samples (numpy)",
         lambda t: pmlkit.empirical_distribution(np.array([[1, 2], [3, 4]])), ValidationError,
         r"samples must be 1-D, got an array of shape \(2, 2\)"),
    Case("pmlkit.empirical_distribution(samples)", "2-D samples (nested list)",
         lambda t: pmlkit.empirical_distribution([[1, 2], [3, 4]]), ValidationError,
         r"samples must be 1-D"),
    Case("pmlkit.EmpiricalDistribution.from_counts(counts)", "negative count",
         lambda t: pmlkit.EmpiricalDistribution.from_counts([3, -1]), ValidationError,
         r"counts.*-1"),
    Case("pmlkit.EmpiricalDistribution.from_counts(counts)", "non-integer count",
         lambda t: pmlkit.EmpiricalDistribution.from_counts([2.5, 1]), ValidationError,
         r"counts.*2\.5"),
    Case("pmlkit.EmpiricalDistribution.from_counts(counts)", "all counts zero",
         lambda t: pmlkit.EmpiricalDistribution.from_counts([0, 0]), PMLError,
         r"(?i)counts.*(sample|zero|>= 1|positive)"),
    Case("pmlkit.l1_radius(delta, m, n)", "delta = 0", lambda t: pmlkit.l1_radius(0.0, m=10, n=2),
         ValidationError, r"delta must be in \(0, 1\], got 0\.0"),
    Case("pmlkit.l1_radius(delta, m, n)", "delta > 1", lambda t: pmlkit.l1_radius(1.5, m=10, n=2),
         ValidationError, r"delta must be in \(0, 1\], got 1\.5"),
    Case("pmlkit.l1_radius(delta, m, n)", "m = 0", lambda t: pmlkit.l1_radius(0.1, m=0, n=2),
         ValidationError, r"m must be an integer >= 1, got 0"),
    Case("pmlkit.l1_radius(delta, m, n)", "m not an integer",
         lambda t: pmlkit.l1_radius(0.1, m=10.5, n=2), ValidationError,
         r"m must be an integer >= 1, got 10\.5"),
    Case("pmlkit.l1_radius(delta, m, n)", "n = 1", lambda t: pmlkit.l1_radius(0.1, m=10, n=1),
         ValidationError, r"n must be an integer >= 2, got 1"),
    Case("pmlkit.l1_failure_probability(beta, m, n)", "beta < 0",
         lambda t: pmlkit.l1_failure_probability(-0.1, m=10, n=2), ValidationError,
         r"beta must be in \[0, inf\), got -0\.1"),
    Case("pmlkit.l1_failure_probability(beta, m, n)", "beta inf",
         lambda t: pmlkit.l1_failure_probability(INF, m=10, n=2), ValidationError,
         r"beta must be .*finite, got inf"),
    # ---- bounds
    Case("pmlkit.eps_bound(*, eps, beta)", "eps < 0",
         lambda t: pmlkit.eps_bound(eps=-1.0, beta=0.1),
         ValidationError, r"eps must be in \[0, inf\), got -1\.0"),
    Case("pmlkit.eps_bound(*, eps, beta)", "beta NaN",
         lambda t: pmlkit.eps_bound(eps=1.0, beta=NAN),
         ValidationError, r"beta .*(nan|NaN)"),
    Case("pmlkit.delta_min(*, eps, eps_target, m, n)", "eps_target < eps",
         lambda t: pmlkit.delta_min(eps=1.0, eps_target=0.5, m=100, n=2), ValidationError,
         r"eps_target must be >= eps = 1\.0, got 0\.5"),
    Case("pmlkit.sensitivity_bound(prior, *, eps, beta)", "unnormalised prior",
         lambda t: pmlkit.sensitivity_bound([0.5, 0.6], eps=0.5, beta=0.1), ValidationError,
         r"prior must sum to 1"),
    Case("pmlkit.lipschitz_bound(*, capacity, distance)", "negative distance",
         lambda t: pmlkit.lipschitz_bound(capacity=1.0, distance=-0.1), ValidationError,
         r"distance.*-0\.1"),
    Case("pmlkit.leakage_bound(*, eps, distance)", "eps NaN",
         lambda t: pmlkit.leakage_bound(eps=NAN, distance=0.1), ValidationError,
         r"eps .*(nan|NaN)"),
    # ---- sets and worst case
    Case("pmlkit.L1Ball(center, radius)", "radius < 0", lambda t: pmlkit.L1Ball(P, -0.1),
         ValidationError, r"radius must be in \[0, inf\), got -0\.1"),
    Case("pmlkit.L1Ball(center, radius)", "center not a distribution",
         lambda t: pmlkit.L1Ball([0.5, 0.6], 0.1), ValidationError, r"center must sum to 1"),
    Case("pmlkit.Box(lower, upper)", "lower > upper",
         lambda t: pmlkit.Box([0.6, 0.1], [0.5, 0.9]), PMLError, r"(?i)lower.*upper"),
    Case("pmlkit.Box(lower, upper)", "box misses the simplex",
         lambda t: pmlkit.Box([0.0, 0.0], [0.2, 0.2]), PMLError,
         r"(?i)(empty|simplex|sum)"),
    Case("pmlkit.sets.L1BoxSet(center, radius, lower, upper)", "center outside the box",
         lambda t: _d("pmlkit.sets", "L1BoxSet")(P, 0.1, [0.5, 0.0], [1.0, 1.0]),
         ValidationError, r"center must lie in the box, got center\[0\] = 0\.4"),
    Case("pmlkit.VertexSet(vertices)", "vertex not a distribution",
         lambda t: pmlkit.VertexSet([[0.5, 0.6]]), ValidationError, r"(?i)vert.*sum to 1"),
    Case("pmlkit.leakage_capacity(W, set)", "set is not an UncertaintySet",
         lambda t: pmlkit.leakage_capacity(W, [0.4, 0.6]), ValidationError,
         r"(?i)uncertainty.?set"),
    Case("pmlkit.leakage_capacity(W, set)", "set dimension != rows of W",
         lambda t: pmlkit.leakage_capacity(W, pmlkit.L1Ball([0.2, 0.3, 0.5], 0.1)),
         ValidationError, r"(?i)3.*2|2.*3"),
    Case("pmlkit.leakage_sensitivity(W, prior, set)", "prior NaN",
         lambda t: pmlkit.leakage_sensitivity(W, [NAN, 1.0], pmlkit.L1Ball(P, 0.1)),
         ValidationError, r"prior must not contain NaN"),
    # ---- Mechanism object and file
    Case("pmlkit.Mechanism(matrix, labels)", "duplicate labels",
         lambda t: pmlkit.Mechanism(W, ("a", "a")), ValidationError,
         r"input_labels must be unique, 'a' appears more than once"),
    Case("pmlkit.Mechanism(matrix, labels)", "wrong number of labels",
         lambda t: pmlkit.Mechanism(W, ("a", "b", "c")), ValidationError,
         r"input_labels has 3 labels but the matrix needs 2"),
    Case("pmlkit.PMLGuarantee(eps, set, certified_eps)", "certified eps above eps",
         lambda t: pmlkit.PMLGuarantee(eps=0.5, set=pmlkit.L1Ball(P, 0.1), certified_eps=0.9),
         ValidationError, r"certified_eps must not exceed eps .*got certified_eps = 0\.9"),
    Case("pmlkit.PMLGuarantee(eps, set, certified_eps)", "basis 'all' with delta > 0",
         lambda t: pmlkit.PMLGuarantee(eps=1.0, set=pmlkit.L1Ball(P, 2.0), certified_eps=0.5,
                                       basis="all", delta=0.1),
         ValidationError, r"delta must be 0 when basis is 'all'.*got 0\.1"),
    Case("pmlkit.Provenance(designer, ...)", "empty designer",
         lambda t: pmlkit.Provenance(designer=""), ValidationError,
         r"designer must be a non-empty str, got ''"),
    Case("pmlkit.Mechanism(matrix, guarantee=...)", "guarantee on another alphabet size",
         lambda t: pmlkit.Mechanism(W, guarantee=pmlkit.PMLGuarantee.for_prior(
             [0.2, 0.3, 0.5], eps=1.0, certified_eps=0.5)), ValidationError,
         r"guarantee is over a set on N = 3 categories but the matrix has 2 inputs"),
    Case("pmlkit.Mechanism.load(path)", "missing file",
         lambda t: pmlkit.Mechanism.load(t / "nope.json"), MechanismFileError,
         r"mechanism file '.*nope\.json' does not exist"),
    Case("pmlkit.Mechanism.load(path)", "corrupt file (not JSON)",
         lambda t: pmlkit.Mechanism.load(csv_file(t, "{not json", "m.json")),
         MechanismFileError, r"is not valid JSON"),
    Case("pmlkit.Mechanism.load(path)", "tampered matrix (digest mismatch)",
         lambda t: pmlkit.Mechanism.load(mech_file(t, _set("matrix", [[0.9, 0.1], [0.3, 0.7]]))),
         MechanismFileError, r"'sha256' does not match its content"),
    Case("pmlkit.Mechanism.load(path)", "certified eps understated, digest recomputed",
         lambda t: pmlkit.Mechanism.load(forged_certificate(t)), MechanismFileError,
         r"certifies eps .* but its worst case .* the guarantee does not hold"),
    Case("pmlkit.Mechanism.load(path)", "unknown format version",
         lambda t: pmlkit.Mechanism.load(mech_file(t, _set("format_version", 99))),
         MechanismFileError, r"'format_version' must be one of \[1, 2\], got 99"),
    Case("pmlkit.Mechanism.load(path)", "JSON array instead of object",
         lambda t: pmlkit.Mechanism.load(csv_file(t, "[1, 2]", "m.json")),
         MechanismFileError, r"must hold a JSON object, got list"),
    Case("pmlkit.Mechanism.load(path)", "binary garbage",
         lambda t: (t / "m.json").write_bytes(b"\xff\xfe\x00garbage")
         and pmlkit.Mechanism.load(t / "m.json"), MechanismFileError, r"cannot be read|not valid"),
    Case("pmlkit.Mechanism.load(path)", "no set and no certificate (uncertified)",
         lambda t: pmlkit.Mechanism.load(forged_file(t, lambda d: None)), MechanismFileError,
         r"records no uncertainty_set, so it is UNCERTIFIED.*allow_uncertified=True"),
    Case("pmlkit.Mechanism.load(path)", "duplicate \"matrix\" key",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: None, designed=True,
             text_edit=lambda x: x[:-1] + ', "matrix": [[1.0, 0.0], [0.0, 1.0]]}')),
         MechanismFileError, r"has the key 'matrix' twice"),
    Case("pmlkit.Mechanism.load(path)", "v2: no guarantee (uncertified)",
         lambda t: pmlkit.Mechanism.load(forged_file(t, lambda d: None, version=2)),
         MechanismFileError, r"records no guarantee, so it is UNCERTIFIED"),
    Case("pmlkit.Mechanism.load(path)", "v2: guarantee.certified_eps a string",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: d["guarantee"].update(certified_eps="0.5"), designed=True,
             version=2)),
         MechanismFileError, r"'guarantee\.certified_eps' must be a JSON number, got '0\.5'"),
    Case("pmlkit.Mechanism.load(path)", "v2: guarantee.delta edited",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: d["guarantee"].update(delta=0.5), designed=True, version=2)),
         MechanismFileError, r"'uncertainty_set' is not the set the 'l1' confidence method"),
    Case("pmlkit.Mechanism.load(path)", "v2: sample set shrunk (radius and beta edited)",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: (d["guarantee"]["set"].update(radius=0.01),
                           d["provenance"]["details"].update(beta=0.01)),
             designed=True, version=2)),
         MechanismFileError, r"'uncertainty_set' is not the set the 'l1' confidence method"),
    Case("pmlkit.Mechanism.load(path)", "v2: basis 'all' over a set that is not the simplex",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: d["guarantee"].update(basis="all", delta=0.0, m=None, method=None),
             designed=True, version=2)),
         MechanismFileError, r"basis 'all' \(every distribution\) but its set is not the whole"),
    Case("pmlkit.Mechanism.load(path)", "v2: unknown guarantee schema version",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: d["guarantee"].update(version=9), designed=True, version=2)),
         MechanismFileError, r"guarantee 'version' must be 1, got 9"),
    Case("pmlkit.Mechanism.load(path)", "certified_eps a string, digest recomputed",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: d.update(certified_eps="0.5"), designed=True)),
         MechanismFileError, r"'certified_eps' must be a JSON number, got '0\.5'"),
    Case("pmlkit.Mechanism.load(path)", "parameters.eps a string, digest recomputed",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: d["parameters"].update(eps="1.0"), designed=True)),
         MechanismFileError, r"'parameters\.eps' must be a JSON number"),
    Case("pmlkit.Mechanism.load(path)", "set radius edited to 0, digest recomputed",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: (d["uncertainty_set"].update(radius=0.0),
                           d["parameters"].update(beta=0.0)), designed=True)),
         MechanismFileError, r"'uncertainty_set' is not the set the 'l1' confidence method"),
    Case("pmlkit.Mechanism.load(path)", "one-vertex set, digest recomputed",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: (d.update(uncertainty_set={"kind": "vertex_set", "vertices": [
                 d["parameters"]["prior"]]}), d["parameters"].update(beta=None)),
             designed=True)),
         MechanismFileError, r"'uncertainty_set' is not the set"),
    Case("pmlkit.Mechanism.load(path)", "delta recorded without m and confidence",
         lambda t: pmlkit.Mechanism.load(forged_file(
             t, lambda d: [d["parameters"].pop(k) for k in ("m", "confidence")],
             designed=True)),
         MechanismFileError, r"records \['delta'\] but not \['m', 'confidence'\]"),
    Case("pmlkit.rng.seed_commitment(seed, salt)", "salt not hexadecimal",
         lambda t: _d("pmlkit.rng", "seed_commitment")(7, "not hex"), ValidationError,
         r"salt must be bytes or a hex string, got 'not hex'"),
    Case("pmlkit.rng.RandomSource(generator, seeded=False, ...)",
         "a seeded generator labelled secure",
         lambda t: _d("pmlkit.rng", "RandomSource")(np.random.default_rng(0), False, "x"),
         ValidationError, r"seeded must be True .*got seeded=False"),
    # ---- design
    Case("pmlkit.summarize_mechanism(mechanism, prior)", "prior of the wrong length",
         lambda t: pmlkit.summarize_mechanism(W, [0.2, 0.3, 0.5]), ValidationError,
         r"prior"),
    Case("pmlkit.summarize_mechanism(mechanism, prior, n=)", "n = 0 released rows",
         lambda t: pmlkit.summarize_mechanism(W, [0.5, 0.5], n=0), ValidationError,
         r"n must be an integer >= 1, got 0"),
    Case("pmlkit.propose_coarsening(samples, eps, delta)", "eps < 0",
         lambda t: pmlkit.propose_coarsening(samples_ok, -1.0, 0.1), ValidationError,
         r"eps must be in \[0, inf\), got -1\.0"),
    Case("pmlkit.design_coarsened(samples, eps, delta, k)", "k above the number of "
         "categories", lambda t: pmlkit.design_coarsened(samples_ok, 1.0, 0.1, 50),
         ValidationError, r"k must be in \[1, \d+\] \(the number of categories\), got 50"),
    Case("pmlkit.merged_set(uncertainty_set, groups)", "an empty group",
         lambda t: pmlkit.merged_set(_d("pmlkit.sets", "Box")([0.1] * 3, [0.7] * 3),
                                     [0, 0, 2]),
         ValidationError, r"groups must use every group number from 0 to 2 .*group 1 is "
         "empty"),
    Case("pmlkit.design_from_samples(samples, eps, delta)", "eps < 0",
         lambda t: pmlkit.design_from_samples(samples_ok, -1.0, 0.1), ValidationError,
         r"eps must be in \[0, inf\), got -1\.0"),
    Case("pmlkit.design_from_samples(samples, eps, delta)", "delta = 0",
         lambda t: pmlkit.design_from_samples(samples_ok, 1.0, 0.0), ValidationError,
         r"delta must be in \(0, 1\], got 0\.0"),
    Case("pmlkit.design_from_samples(samples, eps, delta)", "estimable not a bool",
         lambda t: pmlkit.design_from_samples(samples_ok, 1.0, 0.1, estimable="yes"),
         ValidationError, r"estimable must be True or False, got 'yes'"),
    Case("pmlkit.design_from_samples(samples, eps, delta)", "empty samples",
         lambda t: pmlkit.design_from_samples([], 1.0, 0.1), ValidationError,
         r"samples must not be empty"),
    Case("pmlkit.design_from_samples(samples, eps, delta)", "null in samples",
         lambda t: pmlkit.design_from_samples(["a", None, "b"], 1.0, 0.1), DataError,
         r"(?i)null|missing|None"),
    Case("pmlkit.design_from_samples(samples, eps, delta, categories)", "unknown label",
         lambda t: pmlkit.design_from_samples(["a", "z"], 1.0, 0.1, categories=["a", "b"]),
         DataError, r"'z'.*not in categories"),
    Case("pmlkit.design_from_samples(samples, eps, delta)", "only one category",
         lambda t: pmlkit.design_from_samples(["a", "a"], 1.0, 0.1), ValidationError,
         r"at least 2 categories"),
    Case("pmlkit.design_from_samples(..., confidence)", "unknown confidence method",
         lambda t: pmlkit.design_from_samples(samples_ok, 1.0, 0.1, confidence="nope"),
         ValidationError, r"confidence must be one of .*got 'nope'"),
    Case("pmlkit.optimal_mechanism(prior, eps, beta)", "beta < 0",
         lambda t: pmlkit.optimal_mechanism(P, 1.0, beta=-0.1), ValidationError,
         r"beta must be in \[0, inf\), got -0\.1"),
    Case("pmlkit.optimal_mechanism(prior, eps, beta)", "unknown utility",
         lambda t: pmlkit.optimal_mechanism(P, 1.0, utility="nope"), ValidationError,
         r"utility.*'nope'"),
    Case("pmlkit.optimal_mechanism(prior, eps, max_seconds=...)", "max_seconds <= 0",
         lambda t: pmlkit.optimal_mechanism(P, 1.0, max_seconds=0), ValidationError,
         r"max_seconds must be a number of seconds > 0.*got 0"),
    Case("pmlkit.optimal_mechanism(prior, eps, max_work=...)", "max_work <= 0",
         lambda t: pmlkit.optimal_mechanism(P, 1.0, max_work=-1), ValidationError,
         r"max_work must be a number of work units > 0.*got -1"),
    Case("pmlkit.optimal_mechanism(prior, eps, gap=...)", "gap outside [0, 1)",
         lambda t: pmlkit.optimal_mechanism(P, 1.0, gap=1.5), ValidationError,
         r"gap must be a relative optimality gap in \[0, 1\).*got 1\.5"),
    Case("pmlkit.optimal_binary(prior, *, beta, eps)", "prior of 3 entries",
         lambda t: pmlkit.optimal_binary([0.2, 0.3, 0.5], beta=0.1, eps=1.0), ValidationError,
         r"(?i)binary|2 entries|length 2"),
    Case("pmlkit.randomized_response(n, eps)", "n = 1",
         lambda t: pmlkit.randomized_response(1, 1.0), ValidationError,
         r"n must be an integer >= 2, got 1"),
    Case("pmlkit.randomized_response(n, eps)", "eps inf",
         lambda t: pmlkit.randomized_response(3, INF), ValidationError,
         r"eps must be .*finite, got inf"),
    Case("pmlkit.design.optimal_mechanism_for_set(set, eps)", "not a set",
         lambda t: _d(design, "optimal_mechanism_for_set")([0.5, 0.5], 1.0), ValidationError,
         r"uncertainty_set must be a pmlkit.sets set"),
    Case("pmlkit.design.k_singular(n, k)", "k > n",
         lambda t: _d(design, "k_singular")(3, 5), ValidationError, r"k.*5"),
    Case("pmlkit.design.identity_mechanism(n)", "n = 0",
         lambda t: _d(design, "identity_mechanism")(0), ValidationError, r"n.*0"),
    Case("pmlkit.design.identity_mechanism(n, *, prior)", "prior with a zero entry",
         lambda t: _d(design, "identity_mechanism")(2, prior=[1.0, 0.0]), ValidationError,
         r"prior must have full support .*-log p_min"),
    Case("pmlkit.design.identity_mechanism(n, *, prior)", "prior of another size",
         lambda t: _d(design, "identity_mechanism")(3, prior=[0.5, 0.5]), ValidationError,
         r"prior must have n = 3 entries, got 2"),
    Case("pmlkit.design.extremal_binary(prior, eps)", "prior of 3 entries",
         lambda t: _d(design, "extremal_binary")([0.2, 0.3, 0.5], 1.0), ValidationError,
         r"prior"),
    Case("pmlkit.design.extremal_high_privacy(prior, eps)", "eps < 0",
         lambda t: _d(design, "extremal_high_privacy")(P, -1.0), ValidationError,
         r"eps must be in \[0, inf\), got -1\.0"),
    Case("pmlkit.design.extremal_mechanism(prior, eps)", "prior with NaN",
         lambda t: _d(design, "extremal_mechanism")([NAN, 1.0], 1.0), ValidationError,
         r"prior must not contain NaN"),
    Case("pmlkit.design.robust_polytope(prior, eps=, beta=)", "beta NaN",
         lambda t: _d(design, "robust_polytope")(P, eps=1.0, beta=NAN), ValidationError,
         r"beta .*nan"),
    Case("pmlkit.design.certify(matrix, set, eps, ...)", "the matrix leaks more than eps",
         lambda t: _d(design, "certify")(np.eye(2), pmlkit.sets.L1Ball([0.5, 0.5], 0.1), 0.5,
                                         designer="mine", parameters={}),
         CertificationError, r"mine: .*worst-case eps over the set is .*above the target eps 0\.5"),
    Case("pmlkit.design.exact_polytope(set, eps)", "not a set",
         lambda t: _d(design, "exact_polytope")(P, 1.0), ValidationError, r"(?i)set"),
    Case("pmlkit.design.eps_prime(eps, beta)", "eps < 0",
         lambda t: _d(design, "eps_prime")(-1.0, 0.1), ValidationError, r"eps.*-1"),
    # ---- confidence sets
    Case("pmlkit.confidence_set(counts, delta, confidence)", "unknown method",
         lambda t: pmlkit.confidence_set([3, 4], 0.1, confidence="nope"), ValidationError,
         r"confidence must be one of .*got 'nope'"),
    Case("pmlkit.confidence_set(counts, delta)", "delta > 1",
         lambda t: pmlkit.confidence_set([3, 4], 2.0), ValidationError,
         r"delta must be in \(0, 1\], got 2\.0"),
    Case("pmlkit.confidence_set(counts, delta)", "negative count",
         lambda t: pmlkit.confidence_set([3, -4], 0.1), ValidationError, r"counts.*-4"),
    Case("pmlkit.confidence_set(counts, delta)", "one category",
         lambda t: pmlkit.confidence_set([3], 0.1), ValidationError, r"(?i)at least 2"),
    Case("pmlkit.confidence.l1_set(counts, delta)", "counts with NaN",
         lambda t: _d(conf, "l1_set")([3, NAN], 0.1), ValidationError, r"counts.*nan"),
    Case("pmlkit.confidence.box_cp_set(counts, delta)", "delta = 0",
         lambda t: _d(conf, "box_cp_set")([3, 4], 0.0), ValidationError,
         r"delta must be in \(0, 1\], got 0\.0"),
    Case("pmlkit.confidence.box_kl_set(counts, delta)", "no samples",
         lambda t: _d(conf, "box_kl_set")([0, 0], 0.1), PMLError, r"counts"),
    Case("pmlkit.confidence.box_lower_set(counts, delta)", "2-D counts",
         lambda t: _d(conf, "box_lower_set")([[1, 2], [3, 4]], 0.1), ValidationError,
         r"counts.*1-D"),
    Case("pmlkit.confidence.l1_kappa_set(counts, delta, split)", "split outside (0, 1)",
         lambda t: _d(conf, "l1_kappa_set")([3, 4], 0.1, split=1.5), ValidationError,
         r"split.*1\.5"),
    Case("pmlkit.confidence.l1_box_set(counts, delta, split)", "split outside (0, 1)",
         lambda t: _d(conf, "l1_box_set")([3, 4], 0.1, split=0.0), ValidationError,
         r"split.*0"),
    # ---- additive
    Case("pmlkit.additive.laplace_eps(b, p_min)", "b = 0",
         lambda t: _d(additive, "laplace_eps")(0.0, 0.3), ValidationError,
         r"b must be in \(0, inf\), got 0\.0"),
    Case("pmlkit.additive.laplace_eps(b, p_min)", "p_min > 1/2",
         lambda t: _d(additive, "laplace_eps")(1.0, 0.7), ValidationError,
         r"p_min must be in \[0, 0\.5\], got 0\.7"),
    Case("pmlkit.additive.laplace_scale(eps, p_min)", "eps < 0",
         lambda t: _d(additive, "laplace_scale")(-1.0, 0.3), ValidationError,
         r"eps must be in \[0, inf\), got -1\.0"),
    Case("pmlkit.additive.laplace_eps_uncertain(b, p_hat_min, *, beta)", "beta NaN",
         lambda t: _d(additive, "laplace_eps_uncertain")(1.0, 0.3, beta=NAN), ValidationError,
         r"beta .*nan"),
    Case("pmlkit.additive.gaussian_violation_probability(sigma, prior, eps)", "sigma < 0",
         lambda t: _d(additive, "gaussian_violation_probability")(-1.0, (0.5, 0.5), 0.1),
         ValidationError, r"sigma must be .*got -1\.0"),
    Case("pmlkit.additive.gaussian_violation_probability(sigma, prior, eps)",
         "prior not binary", lambda t: _d(additive, "gaussian_violation_probability")(
             1.0, (0.2, 0.3, 0.5), 0.1), ValidationError, r"prior"),
    Case("pmlkit.additive.GaussianMechanism.from_scale(sigma, *, eps, over)",
         "sigma = 1e-5 over every prior (grid 2^-27)",
         lambda t: __import__("pmlkit.additive", fromlist=["x"]).GaussianMechanism.from_scale(
             1e-5, eps=1.0),
         TooLargeError,
         r"sigma=1e-05 on a grid of step 2\^-27 .*granularity >= 2\^-21"),
    Case("pmlkit.additive.gaussian_tradeoff(sigma, prior, *, m, delta2, eps)", "delta2 = 1",
         lambda t: _d(additive, "gaussian_tradeoff")(1.5, (0.5, 0.5), m=100, delta2=1.0,
                                                     eps=0.5),
         ValidationError, r"delta2 must be in \(0, 1\), got 1\.0"),
    Case("pmlkit.additive.gaussian_tradeoff(sigma, prior, *, m, delta2, eps)", "m = 0",
         lambda t: _d(additive, "gaussian_tradeoff")(1.5, (0.5, 0.5), m=0, delta2=0.1,
                                                     eps=0.5),
         ValidationError, r"m must be an integer >= 1, got 0"),
    Case("pmlkit.additive.gaussian_tradeoff(..., curve)", "unknown curve",
         lambda t: _d(additive, "gaussian_tradeoff")(1.5, (0.5, 0.5), m=100, delta2=0.1,
                                                     eps=0.5, curve="nope"),
         ValidationError, r"curve must be one of .*'nope'"),
    Case("pmlkit.additive.pldp_sigma(eps, delta)", "eps < 0",
         lambda t: _d(additive, "pldp_sigma")(-1.0, 0.1), ValidationError,
         r"eps must be in \[0, inf\), got -1\.0"),
    Case("pmlkit.additive.laplace_scale_uncertain(eps, p_hat_min, *, beta)", "beta < 0",
         lambda t: _d(additive, "laplace_scale_uncertain")(1.0, 0.3, beta=-0.1),
         ValidationError,
         r"beta must be in \[0, inf\), got -0\.1"),
    Case("pmlkit.additive.worst_case_p_min(p_hat_min, *, beta)", "p_hat_min > 1/2",
         lambda t: _d(additive, "worst_case_p_min")(0.7, beta=0.1), ValidationError,
         r"p_hat_min must be in \[0, 0\.5\], got 0\.7"),
    Case("pmlkit.additive.laplace_binarized_channel(b)", "b inf",
         lambda t: _d(additive, "laplace_binarized_channel")(-INF), ValidationError, r"b"),
    Case("pmlkit.additive.gaussian_binarized_channel(sigma)", "sigma = 0",
         lambda t: _d(additive, "gaussian_binarized_channel")(0.0), ValidationError,
         r"sigma.*0"),
    Case("pmlkit.additive.laplace_flip_probability(b)", "b = 0",
         lambda t: _d(additive, "laplace_flip_probability")(0.0), ValidationError,
         r"b must be in \(0, inf\), got 0\.0"),
    Case("pmlkit.additive.gaussian_flip_probability(sigma)", "sigma nan",
         lambda t: _d(additive, "gaussian_flip_probability")(float("nan")), ValidationError,
         r"sigma"),
    Case("pmlkit.additive.gaussian_pml(y, sigma, prior)", "y with NaN",
         lambda t: _d(additive, "gaussian_pml")([0.0, NAN], 1.0, (0.5, 0.5)),
         ValidationError, r"y.*(nan|NaN)"),
    Case("pmlkit.additive.gaussian_violation_thresholds(sigma, prior, eps)",
         "prior not summing to 1", lambda t: _d(additive, "gaussian_violation_thresholds")(
             1.0, (0.5, 0.6), 0.1), ValidationError, r"prior"),
    Case("pmlkit.additive.gaussian_delta1(sigma, prior, *, beta, eps)", "eps < 0",
         lambda t: _d(additive, "gaussian_delta1")(1.5, (0.5, 0.5), beta=0.1, eps=-1.0),
         ValidationError, r"eps.*-1"),
    Case("pmlkit.additive.gaussian_delta1_interval(sigma, q_low, q_high, *, eps)",
         "q_low > q_high", lambda t: _d(additive, "gaussian_delta1_interval")(
             1.5, 0.6, 0.4, eps=0.5), ValidationError, r"0\.6.*0\.4|q_low|interval"),
    Case("pmlkit.additive.gaussian_tradeoff_interval(sigma, prior, q_low, q_high, ...)",
         "prior outside the interval", lambda t: _d(additive, "gaussian_tradeoff_interval")(
             1.5, (0.5, 0.5), 0.6, 0.7, delta2=0.1, eps=0.5), ValidationError,
         r"prior\(\+1\)=0\.5 must lie in the interval"),
    Case("pmlkit.additive.pldp_eps(sigma, delta)", "sigma < 0",
         lambda t: _d(additive, "pldp_eps")(-1.0, 0.1), ValidationError, r"sigma.*-1"),
    Case("pmlkit.additive.gaussian_noise(labels, sigma)", "labels with NaN",
         lambda t: _d(additive, "gaussian_noise")([1.0, NAN], 1.0, rng=0), PMLError,
         r"(?i)nan|null|labels"),
    Case("pmlkit.additive.laplace_binarized(labels, b)", "b NaN",
         lambda t: _d(additive, "laplace_binarized")([1, -1], NAN, rng=0), ValidationError,
         r"b .*nan"),
    Case("pmlkit.additive.gaussian_binarized(labels, sigma)", "labels not in {-1, +1}",
         lambda t: _d(additive, "gaussian_binarized")(["a", "b"], 1.0, rng=0), PMLError,
         r"(?i)-1.*\+?1"),
    Case("pmlkit.additive.pldp_sigma(eps, delta)", "delta = 0",
         lambda t: _d(additive, "pldp_sigma")(1.0, 0.0), ValidationError, r"delta.*0\.0"),
    Case("pmlkit.additive.calibrate_laplace(samples, eps, delta, positive)",
         "three labels", lambda t: _d(additive, "calibrate_laplace")(
             ["a", "b", "c"], 1.0, 0.1, positive="a"), DataError,
         r"exactly two distinct labels"),
    Case("pmlkit.additive.calibrate_laplace(samples, eps, delta, positive)",
         "positive label absent", lambda t: _d(additive, "calibrate_laplace")(
             ["a", "b", "a"], 1.0, 0.1, positive="z"), DataError, r"'z'"),
    Case("pmlkit.additive.calibrate_laplace(samples, eps, delta, positive)",
         "null in samples", lambda t: _d(additive, "calibrate_laplace")(
             ["a", None, "b"], 1.0, 0.1, positive="a"), DataError, r"(?i)null|missing"),
    Case("pmlkit.additive.calibrate_gaussian(samples, sigma, delta2, positive)",
         "sigma NaN", lambda t: _d(additive, "calibrate_gaussian")(
             ["a", "b", "a"], NAN, 0.1, positive="a"), ValidationError, r"sigma .*nan"),
    Case("pmlkit.additive.laplace_noise(labels, b)", "labels not in {-1, +1}",
         lambda t: _d(additive, "laplace_noise")([0, 1, 2], 1.0, rng=0), PMLError,
         r"(?i)-1.*\+?1"),
    Case("pmlkit.additive.laplace_noise(labels, b, granularity)",
         "granularity not a power of two", lambda t: _d(additive, "laplace_noise")(
             [1, -1], 1.0, granularity=0.3, rng=0), ValidationError,
         r"granularity must be a power of two.*0\.3"),
    Case("pmlkit.additive.gaussian_noise(labels, sigma, granularity)",
         "sigma more than 2^14 grid steps", lambda t: _d(additive, "gaussian_noise")(
             [1, -1], 1.0, granularity=2.0**-20, rng=0), ValidationError,
         r"sigma=1\.0 is 1048576 grid steps"),
    Case("pmlkit.additive.laplace_grid(b, granularity)", "b = 0",
         lambda t: _d(additive, "laplace_grid")(0.0), ValidationError, r"b .*0\.0"),
    Case("pmlkit.additive.gaussian_grid(sigma, granularity)", "granularity 2^-31",
         lambda t: _d(additive, "gaussian_grid")(1.0, 2.0**-31), ValidationError,
         r"granularity .*2\^-j.*4\.6"),
    Case("pmlkit.additive.laplace_grid_eps(b, p_min, granularity)", "p_min > 1/2",
         lambda t: _d(additive, "laplace_grid_eps")(1.0, 0.7), ValidationError,
         r"p_min.*0\.7"),
    Case("pmlkit.additive.laplace_grid_pml(y, b, prior, granularity)", "y NaN",
         lambda t: _d(additive, "laplace_grid_pml")(NAN, 1.0, (0.5, 0.5)), ValidationError,
         r"y must be finite"),
    Case("pmlkit.additive.gaussian_grid_pml(y, sigma, prior, granularity)", "y off the grid",
         lambda t: _d(additive, "gaussian_grid_pml")(0.1, 1.0, (0.5, 0.5), 0.25),
         ValidationError, r"y must be released values.*0\.25.*0\.1"),
    Case("pmlkit.additive.gaussian_grid_violation_probability(sigma, prior, eps)",
         "eps < 0", lambda t: _d(additive, "gaussian_grid_violation_probability")(
             1.0, (0.5, 0.5), -1.0), ValidationError, r"eps.*-1"),
    Case("pmlkit.additive.gaussian_grid_delta1_interval(sigma, q_low, q_high, *, eps)",
         "q_low > q_high", lambda t: _d(additive, "gaussian_grid_delta1_interval")(
             1.0, 0.7, 0.3, eps=1.0), ValidationError, r"lower <= upper.*0\.7"),
    Case("pmlkit.additive.LaplaceMechanism.for_eps(eps, *, over)", "eps = 0",
         lambda t: _d(additive, "LaplaceMechanism.for_eps")(0.0), ValidationError,
         r"eps must be > 0 .*got 0\.0"),
    Case("pmlkit.additive.LaplaceMechanism.for_eps(eps, *, over)",
         "eps >= -log p_min (no noise needed)",
         lambda t: _d(additive, "LaplaceMechanism.for_eps")(1.0, over=[0.5, 0.5]),
         ValidationError, r"eps=1\.0 needs no noise .*0\.69"),
    Case("pmlkit.additive.LaplaceMechanism.from_scale(b, *, over)", "over a string",
         lambda t: _d(additive, "LaplaceMechanism.from_scale")(1.0, over="l1"),
         ValidationError, r"over must be .*'l1'"),
    Case("pmlkit.additive.LaplaceMechanism.from_scale(b, *, over)", "over on 3 categories",
         lambda t: _d(additive, "LaplaceMechanism.from_scale")(
             1.0, over=pmlkit.L1Ball([0.2, 0.3, 0.5], 0.1)), ValidationError,
         r"uncertainty_set is over 3 categories"),
    Case("pmlkit.additive.LaplaceMechanism(b, granularity, guarantee, provenance)",
         "guarantee below the computed worst case",
         lambda t: _d(additive, "LaplaceMechanism")(
             1.0, None, _guarantee_for_prior(0.1), _provenance()), ValidationError,
         r"certified_eps = 0\.1 is below the worst case 0\.56.*does not hold"),
    Case("pmlkit.additive.GaussianMechanism(sigma, granularity, guarantee, provenance)",
         "output_delta below the computed one",
         lambda t: _d(additive, "GaussianMechanism")(
             1.0, None, _guarantee_for_prior(0.1), _provenance()), ValidationError,
         r"output_delta = 0\.0 is below the probability 0\.9.*does not hold"),
    Case("pmlkit.additive.GaussianMechanism.from_scale(sigma, *, eps)",
         "every output violates", lambda t: _d(additive, "GaussianMechanism.from_scale")(
             1e-3, eps=0.1, granularity=2.0**-20), ValidationError,
         r"eps=0\.1: every released value may leak more than eps"),
    # ---- privatisation and files
    Case("pmlkit.release_table(spec)", "epsilon <= 0 in the spec",
         lambda t: pmlkit.release_table(_spec_file(t, "epsilon = -1")), ValidationError,
         r"release spec: epsilon must be a number > 0, got -1"),
    Case("pmlkit.release_table(spec)", "spec file missing",
         lambda t: pmlkit.release_table(t / "nope.toml"), DataError,
         r"cannot read the release spec .*nope\.toml.*: No such file"),
    Case("pmlkit.privatize(mechanism, values)", "value not an input label",
         lambda t: pmlkit.privatize(pmlkit.Mechanism(W, ("F", "M")), ["F", "X"], rng=0),
         DataError, r"'X'"),
    Case("pmlkit.privatize(mechanism, values)", "a mapping of columns to mechanisms",
         lambda t: pmlkit.privatize({"sex": pmlkit.Mechanism(W, ("F", "M"))}, ["F"], rng=0),
         ValidationError, r"mechanism must be one pmlkit\.Mechanism .*got a mapping of 1 "
         r"column\(s\).*privatize_file"),
    Case("pmlkit.privatize(mechanism, values)", "null value",
         lambda t: pmlkit.privatize(pmlkit.Mechanism(W, ("F", "M")), ["F", None], rng=0),
         DataError, r"(?i)null|missing"),
    Case("pmlkit.sampler.AliasSampler(matrix).draw(codes, generator)",
         "a code outside 0..N-1", lambda t: _sampler_draw([0, 2]), ValidationError,
         r"codes must be input indices in 0\.\.1, got 2"),
    Case("pmlkit.sampler.AliasSampler(matrix).draw(codes, generator)", "float codes",
         lambda t: _sampler_draw([0.0, 1.0]), ValidationError,
         r"codes must be a 1-D array of integer.*float64"),
    Case("pmlkit.sampler.AliasSampler(matrix).draw(codes, generator, out)",
         "out of the wrong length", lambda t: _sampler_draw([0, 1], out_len=3),
         ValidationError, r"out must be .*shape \(2,\).*shape \(3,\)"),
    Case("pmlkit.sampler.background_tables(matrix, bits)", "2**bits below the columns",
         lambda t: _background([[0.2, 0.3, 0.5]], bits=1), ValidationError,
         r"bits must be an integer in 1\.\.32 with 2\*\*bits >= 3 \(the columns\), got 1"),
    Case("pmlkit.sampler.background_tables(matrix, max_row_cells)", "a negative cap",
         lambda t: _background(W, max_row_cells=-1), ValidationError,
         r"max_row_cells must be a non-negative integer, got -1"),
    Case("pmlkit.sampler.arrow_take(labels, idx)", "an index outside the labels",
         lambda t: _arrow_take_bad(), ValidationError,
         r"idx must hold indices of the labels in 0\.\.1, got 2"),
    Case("pmlkit.privatize(mechanism, values, rng)", "rng a float",
         lambda t: pmlkit.privatize(pmlkit.Mechanism(W, ("F", "M")), ["F"], rng=1.5),
         ValidationError, r"rng.*1\.5"),
    Case("pmlkit.privatize(mechanism, values, columns)", "columns= with a polars Series",
         lambda t: pmlkit.privatize(pmlkit.Mechanism(W, ("F", "M")),
                                    __import__("polars").Series("sex", ["F"]), columns="sex"),
         ValidationError, r"columns= and into= apply to DataFrames only.*polars Series"),
    Case("pmlkit.privatize(mechanism, values, columns)",
         "polars LazyFrame with a value not an input label (raised on collect)",
         lambda t: pmlkit.privatize(pmlkit.Mechanism(W, ("F", "M")),
                                    __import__("polars").LazyFrame({"sex": ["F", "X"]}),
                                    columns="sex", rng=0).collect(),
         DataError, r"column 'sex': value 'X' appears in 1 row"),
    Case("pmlkit.privatize(mechanism, values, columns)", "Arrow Table without the column",
         lambda t: pmlkit.privatize(pmlkit.Mechanism(W, ("F", "M")),
                                    __import__("pyarrow").table({"sex": ["F"]}),
                                    columns="race", rng=0),
         DataError, r"'race' not found; available columns: 'sex'"),
    Case("pmlkit.privatize(mechanism, values, rng)",
         "a text output label UTF-8 cannot encode, Arrow strings in",
         lambda t: pmlkit.privatize(
             pmlkit.Mechanism(W, ("F", "M"), ("ok", "\ud800")), _arrow(["F", "M"]), rng=1),
         ValidationError, r"output label '\\ud800' cannot be encoded as UTF-8"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)",
         "a text output label UTF-8 cannot encode",
         lambda t: pmlkit.privatize_file(
             pmlkit.Mechanism(W, ("Female", "Male"), ("ok", "\ud800")), csv_file(t),
             t / "o.csv", "sex", rng=1),
         ValidationError, r"column 'sex': output label '\\ud800' cannot be encoded"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)", "missing input file",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         t / "nope.csv", t / "out.csv", columns=["sex"]),
         DataError, r"nope\.csv"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)", "CSV without the column",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         csv_file(t), t / "out.csv", columns=["race"]),
         DataError, r"'race'.*(sex|available)"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)",
         "duplicate column names in the file",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         csv_file(t, "sex,sex\nMale,Male\n"), t / "o.csv",
                                         columns=["sex"]),
         DataError, r"column name 'sex' appears 2 times"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)",
         "a CSV cell that is not UTF-8",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         bytes_file(t, b"sex,c\nMale,ok\nFemale,b\xc3(\n"),
                                         t / "o.csv", columns=["sex"]),
         DataError, r"column 'c' holds text that is not valid UTF-8 \(data row 2"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)", "into= an existing column",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         csv_file(t), t / "o.csv", columns=["sex"],
                                         into=["income"], keep_raw=True),
         DataError, r"into column 'income' already exists"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)",
         "mechanism mapping without a column",
         lambda t: pmlkit.privatize_file({"sex": pmlkit.Mechanism(W, ("Female", "Male"))},
                                         csv_file(t), t / "o.csv", columns=["sex", "income"]),
         ValidationError, r"mapping has no mechanism for column 'income'"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)",
         "column privatised by an earlier pass (repeat=False)",
         lambda t: pmlkit.privatize_file(
             pmlkit.Mechanism(W, ("Female", "Male")),
             pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")), csv_file(t),
                                   t / "p.parquet", "sex").files[0][1],
             t / "o.parquet", "sex", into="sex2", keep_raw=True),
         DataError, r"already privatised by an earlier pass.*pmlkit joint repeat"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)", "output is the input",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         csv_file(t), t / "." / "data.csv", columns=["sex"],
                                         overwrite=True),
         DataError, r"is the input file"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)", "unknown missing policy",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         csv_file(t), t / "o.csv", columns=["sex"],
                                         missing="drop"),
         ValidationError, r"missing must be one of .*'drop'"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)",
         "missing='category' without a '(missing)' label",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         csv_file(t), t / "o.csv", columns=["sex"],
                                         missing="category"),
         ValidationError, r"input label '\(missing\)'"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)",
         "unknown_as not an input label",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         csv_file(t), t / "o.csv", columns=["sex"],
                                         unknown_as="Other"),
         ValidationError, r"unknown_as must be an input label.*'Other'"),
    Case("pmlkit.privatize_file(mechanism, input, output, columns)", "unknown engine",
         lambda t: pmlkit.privatize_file(pmlkit.Mechanism(W, ("Female", "Male")),
                                         csv_file(t), t / "o.csv", columns=["sex"],
                                         engine="duckdb"),
         ValidationError, r"engine must be one of .*'duckdb'"),
    Case("pmlkit.privatize(mechanism, values, rng)", "DataFrame, into= an existing column",
         lambda t: pmlkit.privatize(pmlkit.Mechanism(W, ("F", "M")),
                                    _df({"s": ["F"], "keep": ["x"]}), columns="s",
                                    into="keep"),
         DataError, r"into column 'keep' already exists"),
    Case("pmlkit.design_from_samples(samples, eps, delta)", "more than 150 categories",
         lambda t: pmlkit.design_from_samples([str(i) for i in range(151)], 1.0, 0.1),
         TooLargeError, r"151 distinct values.*coarser"),
    Case("pmlkit.design_from_samples(samples, eps, delta)", "unknown missing policy",
         lambda t: pmlkit.design_from_samples(["a", "b"], 1.0, 0.1, missing="drop"),
         ValidationError, r"missing must be .*'drop'"),
    Case("pmlkit.io.unique_columns(path)", "duplicate column names",
         lambda t: _d(io, "unique_columns")(csv_file(t, "a,b,a\n1,2,3\n")), DataError,
         r"column name 'a' appears 2 times"),
    Case("pmlkit.privatize_with_report(mechanism, values)", "values 2-D",
         lambda t: _d("pmlkit.privatization", "privatize_with_report")(
             pmlkit.Mechanism(W, ("F", "M")), np.array([["F", "M"]]), rng=0), PMLError,
         r"(?i)1-D|shape|dimension"),
    Case("pmlkit.estimate_distribution(released, mechanism)", "value not an output label",
         lambda t: pmlkit.estimate_distribution(
             ["Female", "Other"], pmlkit.Mechanism(W, ("Female", "Male"), ("Female", "Male"))),
         DataError, r"'Other' appears in 1 row but is not an output label"),
    Case("pmlkit.estimate_distribution(released, mechanism)", "null in the released column",
         lambda t: pmlkit.estimate_distribution(
             ["Female", None], pmlkit.Mechanism(W, ("Female", "Male"), ("Female", "Male"))),
         DataError, r"1 row holds a null"),
    Case("pmlkit.estimate_distribution(released, mechanism, method)", "unknown method",
         lambda t: pmlkit.estimate_distribution([0, 1], W, method="em"), ValidationError,
         r"method must be one of 'mle', 'inversion', got 'em'"),
    Case("pmlkit.estimate_distribution(released, mechanism, confidence)", "confidence = 1",
         lambda t: pmlkit.estimate_distribution([0, 1], W, confidence=1.0), ValidationError,
         r"confidence must be in \(0, 1\), got 1\.0"),
    Case("pmlkit.estimate_distribution(released, mechanism, method)",
         "inversion on a rank-deficient mechanism",
         lambda t: pmlkit.estimate_distribution([0, 1], [[0.5, 0.5], [0.5, 0.5]],
                                                method="inversion"), ValidationError,
         r"method='inversion' needs a mechanism of rank N = 2, but this one has rank 1"),
    Case("pmlkit.estimate_distribution(counts, mechanism)", "negative count",
         lambda t: pmlkit.estimate_distribution({0: -1}, W), ValidationError,
         r"counts must be non-negative integers, got -1"),
    Case("pmlkit.estimate_distribution(released, mechanism, by)", "by of another length",
         lambda t: pmlkit.estimate_distribution([0, 1], W, by=["a"]), ValidationError,
         r"by has 1 values but the released column has 2 rows"),
    Case("pmlkit.io.read_table(path, columns)", "missing column",
         lambda t: _d(io, "read_table")(csv_file(t), ["race"]), DataError, r"'race'"),
    Case("pmlkit.io.list_columns(path)", "missing file",
         lambda t: _d(io, "list_columns")(t / "nope.parquet"), DataError, r"nope\.parquet"),
    Case("pmlkit.io.iter_batches(path, columns)", "missing column",
         lambda t: list(_d(io, "iter_batches")(csv_file(t), ["race"])), DataError, r"'race'"),
    Case("pmlkit.io.expand_inputs(pattern)", "glob matching nothing",
         lambda t: _d(io, "expand_inputs")(str(t / "none*.csv")), DataError, r"none\*\.csv"),
    Case("pmlkit.io.read_table(path)", "Parquet without pyarrow installed",
         _without("pyarrow.parquet",
                  lambda t: _d(io, "read_table")(csv_file(t, "x", "x.parquet"))),
         MissingDependencyError, r"needs pyarrow: pip install 'pmlkit\[files\]'"),
    Case("pmlkit.io.file_format(path)", "unknown extension",
         lambda t: _d(io, "file_format")(t / "x.xlsx"), DataError, r"x\.xlsx"),
    Case("pmlkit.datasets.load_adult(path)", "folder without the files",
         lambda t: _d("pmlkit.datasets", "load_adult")(t), DataError,
         r"adult\.data.*not found"),
    Case("pmlkit.datasets.load_adult(path, split)", "unknown split",
         lambda t: _d("pmlkit.datasets", "load_adult")(t, split="nope"), ValidationError,
         r"split.*'nope'"),
    Case("pmlkit.datasets.synthetic_adult(n)", "n = 0",
         lambda t: _d("pmlkit.datasets", "synthetic_adult")(0, rng=0), ValidationError,
         r"n.*0"),
    Case("pmlkit.io.read_column(path, column)", "missing file",
         lambda t: _d(io, "read_column")(t / "nope.csv", "sex"), DataError, r"nope\.csv"),
    Case("pmlkit.io.read_column(path, column)", "wrong column (lists the available ones)",
         lambda t: _d(io, "read_column")(csv_file(t), "race"), DataError,
         r"'race'.*sex.*income|'race'.*income.*sex"),
    Case("pmlkit.io.read_column(path, column)", "corrupt Parquet file",
         lambda t: _d(io, "read_column")(csv_file(t, "not parquet", "d.parquet"), "sex"),
         DataError, r"d\.parquet"),
    Case("pmlkit.io.read_column(path, column)", "unsupported extension",
         lambda t: _d(io, "read_column")(csv_file(t, "x", "d.xlsx"), "sex"), DataError,
         r"(?i)\.xlsx|extension|format"),
    Case("pmlkit.io.read_labels(path, column)", "missing file",
         lambda t: _d(io, "read_labels")(t / "nope.csv", "sex"), DataError, r"nope\.csv"),
    Case("pmlkit.io.read_labels(path, column)", "wrong column (lists the available ones)",
         lambda t: _d(io, "read_labels")(csv_file(t), "race"), DataError,
         r"'race'.*sex.*income|'race'.*income.*sex"),
    Case("pmlkit.io.read_label_table(path, columns)", "wrong column",
         lambda t: _d(io, "read_label_table")(csv_file(t), ["sex", "race"]), DataError,
         r"'race'"),
    Case("pmlkit.rng.resolve_rng(rng)", "negative seed",
         lambda t: _d(rng, "resolve_rng")(-1), ValidationError, r"-1"),
    Case("pmlkit.rng.resolve_rng(rng)", "legacy RandomState",
         lambda t: _d(rng, "resolve_rng")(np.random.RandomState(0)), ValidationError,
         r"RandomState"),
    Case("pmlkit.sets.set_from_dict(d)", "unknown kind",
         lambda t: _d("pmlkit.sets", "set_from_dict")({"kind": "ellipse"}), ValidationError,
         r"'kind' must be one of .*'ellipse'"),
    Case("pmlkit.worstcase.worst_case_distribution(W, set)", "W with NaN",
         lambda t: _d("pmlkit.worstcase", "worst_case_distribution")(
             [[NAN, 1.0], [0.5, 0.5]], pmlkit.L1Ball(P, 0.1)), ValidationError,
         r"mechanism must not contain NaN"),
    Case("pmlkit.worstcase.certifies(W, set, eps)", "eps NaN",
         lambda t: _d("pmlkit.worstcase", "certifies")(W, pmlkit.L1Ball(P, 0.1), NAN),
         ValidationError, r"eps .*nan"),
    Case("pmlkit.worstcase.refutes(W, set, eps)", "negative eps",
         lambda t: _d("pmlkit.worstcase", "refutes")(W, pmlkit.L1Ball(P, 0.1), -1.0),
         ValidationError, r"eps .*-1"),
    Case("pmlkit.worstcase.certified_bound(W, set)", "not a set",
         lambda t: _d("pmlkit.worstcase", "certified_bound")(W, [0.5, 0.5]),
         ValidationError, r"uncertainty_set must be a pmlkit.sets.UncertaintySet"),
    Case("pmlkit.utility.accuracy(W, prior)", "non-square W",
         lambda t: _d("pmlkit.utility", "accuracy")([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]], P),
         ValidationError, r"(?i)square|3"),
    Case("pmlkit.utility.expected_gain(W, prior, gain)", "gain of wrong shape",
         lambda t: _d("pmlkit.utility", "expected_gain")(W, P, [[1.0]]), ValidationError,
         r"gain"),
    Case("pmlkit.utility.check_gain(gain, n, n_outputs)", "unknown gain name",
         lambda t: _d("pmlkit.utility", "check_gain")("hamming", 2), ValidationError,
         r"gain must be 'accuracy' or an N x M array, got 'hamming'"),
    Case("pmlkit.utility.publish_assignment(W, prior)", "prior of the wrong length",
         lambda t: _d("pmlkit.utility", "publish_assignment")(W, [0.2, 0.3, 0.5]),
         ValidationError, r"prior"),
    Case("pmlkit.utility.publish_assignment(W, prior, keep_rank=...)", "keep_rank not a bool",
         lambda t: _d("pmlkit.utility", "publish_assignment")(W, P, keep_rank="yes"),
         ValidationError, r"keep_rank must be True or False, got 'yes'"),
    Case("pmlkit.joint.design.constant_mechanism(categories, value=...)",
         "value not a category",
         lambda t: _d("pmlkit.joint.design", "constant_mechanism")(["a", "b"], value="c"),
         ValidationError, r"value must be one of the categories \['a', 'b'\], got 'c'"),
    Case("pmlkit.utility.published_channel(W, assignment)", "input index out of range",
         lambda t: _d("pmlkit.utility", "published_channel")(W, [0, 2]), ValidationError,
         r"assignment must give one input index in 0\.\.1 per output \(2\), got"),
    Case("pmlkit.utility.mutual_information_columns(columns, prior)", "prior NaN",
         lambda t: _d("pmlkit.utility", "mutual_information_columns")(W, [NAN, 1.0]),
         ValidationError, r"prior"),
    Case("pmlkit.estimation.phi(p)", "p > 1/2",
         lambda t: _d("pmlkit.estimation", "phi")(0.7), ValidationError,
         r"p must be in \[0, 0\.5\], got 0\.7"),
    Case("pmlkit.estimation.kappa(prior)", "prior not a distribution",
         lambda t: _d("pmlkit.estimation", "kappa")([0.5, 0.6]), ValidationError,
         r"prior must sum to 1"),
    Case("pmlkit.l1_radius_known_kappa(delta, m, n, kappa)", "kappa > 1/2",
         lambda t: pmlkit.l1_radius_known_kappa(0.1, m=100, n=2, kappa=0.7), ValidationError,
         r"kappa.*0\.7"),
    Case("pmlkit.estimation.log_num_subsets(n)", "n = 0",
         lambda t: _d("pmlkit.estimation", "log_num_subsets")(0), ValidationError,
         r"n must be an integer >= 1, got 0"),
    Case("pmlkit.privacy_region_thresholds(prior)", "prior with inf",
         lambda t: pmlkit.privacy_region_thresholds([INF, 0.0]), ValidationError,
         r"prior must not contain inf"),
    # ---- the audit
    Case("pmlkit.audit.run_audit(trials, deltas)", "delta outside (0, 1)",
         lambda t: _d("pmlkit.audit", "run_audit")(deltas=(1.5,)), ValidationError,
         r"deltas must be in \(0, 1\), got 1\.5"),
    # ---- several columns of a record, repeated releases (pmlkit.joint)
    Case("pmlkit.product_mechanism(*mechanisms)", "no mechanism",
         lambda t: pmlkit.product_mechanism(), ValidationError, r"at least 1 mechanism"),
    Case("pmlkit.ProductMechanism(factors)", "a factor that is not a Mechanism",
         lambda t: pmlkit.ProductMechanism((W,)), ValidationError,
         r"factors\[0\] must be a pmlkit\.Mechanism"),
    Case("pmlkit.joint_capacity(mechanisms, set)", "set on the wrong alphabet",
         lambda t: pmlkit.joint_capacity([W, W], pmlkit.L1Ball(P, 0.1)), ValidationError,
         r"over 2 categories but the product mechanism has 4 inputs"),
    Case("pmlkit.joint_leakage(mechanisms, prior)", "prior of the wrong shape",
         lambda t: pmlkit.joint_leakage([W, W], np.full((3, 2), 1 / 6)), ValidationError,
         r"prior has shape \(3, 2\)"),
    Case("pmlkit.joint_guarantee(mechanisms, reference, delta)",
         "a value that is not a label of its mechanism",
         lambda t: pmlkit.joint_guarantee([W, W], {"a": [0, 1], "b": [0, 7]}, 0.1),
         DataError, r"column 'b' has value 7"),
    Case("pmlkit.marginal_bound(mechanisms, reference, delta)", "null in a column",
         lambda t: pmlkit.marginal_bound([W, W], {"a": [0, None], "b": [0, 1]}, 0.1),
         DataError, r"column 'a' has 1 null"),
    Case("pmlkit.chain_rule_bound(mechanisms, marginal_sets)", "one set for two columns",
         lambda t: pmlkit.chain_rule_bound([W, W], [pmlkit.L1Ball(P, 0.1)]),
         ValidationError, r"marginal_sets has 1 sets but there are 2 mechanisms"),
    Case("pmlkit.design_joint(reference, eps, delta)", "unknown mode",
         lambda t: pmlkit.design_joint({"a": [0, 1], "b": [0, 1]}, 1.0, 0.1, mode="x"),
         ValidationError, r"mode must be 'auto', 'joint' or 'per-column', got 'x'"),
    Case("pmlkit.release_leakage(mechanisms, prior)", "releases on different columns",
         lambda t: pmlkit.release_leakage([W, [[1.0], [1.0], [1.0]]], P), ValidationError,
         r"mechanisms\[1\] has input labels \[0, 1, 2\], mechanisms\[0\] has \[0, 1\]"),
    Case("pmlkit.joint.joint_release(columns, column_labels, matrix, estimate)",
         "estimate of the wrong length",
         lambda t: pmlkit.joint.joint_release(("a", "b"), (("x", "y"), (0, 1)), np.eye(4),
                                              [0.5, 0.5]), ValidationError,
         r"estimate and matrix must have one entry per tuple of the joint alphabet \(4\)"),
    Case("pmlkit.repeated_leakage(mechanism, k, prior)", "k = 0",
         lambda t: pmlkit.repeated_leakage(W, 0, P), ValidationError,
         r"k must be an integer >= 1, got 0"),
    Case("pmlkit.audit.audit_joint(trials)", "trials = 0",
         lambda t: _d("pmlkit.audit", "audit_joint")(trials=0), ValidationError,
         r"trials must be an integer >= 1, got 0"),
    # ---- scikit-learn transformer and pictures (pmlkit.sklearn, pmlkit.plotting)
    Case("pmlkit.sklearn.PMLPrivatizer.fit(X)", "eps < 0",
         lambda t: _sk(eps=-1).fit([["a"], ["b"]]), ValidationError, r"eps must be .*-1"),
    Case("pmlkit.sklearn.PMLPrivatizer.fit(X)", "1-D X",
         lambda t: _sk().fit(["a", "b"]), ValidationError, r"must be 2-D.*Reshape"),
    Case("pmlkit.sklearn.PMLPrivatizer.fit(X)", "more distinct labels than max_categories",
         lambda t: _sk(max_categories=2).fit([["a"], ["b"], ["c"]]), ValidationError,
         r"column 0 has 3 distinct labels, more than max_categories = 2"),
    Case("pmlkit.sklearn.PMLPrivatizer.fit(X)", "columns= naming no column",
         lambda t: _sk(columns=[5]).fit([["a"], ["b"]]), ValidationError,
         r"columns entry 5 is out of range"),
    Case("pmlkit.sklearn.PMLPrivatizer.fit(X)", "allow_unestimable not a bool",
         lambda t: _sk(allow_unestimable="yes").fit([["a"], ["b"]]), ValidationError,
         r"allow_unestimable must be True or False, got 'yes'"),
    Case("pmlkit.sklearn.PMLPrivatizer.fit(X)", "allow_self_reference not a bool",
         lambda t: _sk(allow_self_reference="yes").fit([["a"], ["b"]]), ValidationError,
         r"allow_self_reference must be True or False, got 'yes'"),
    Case("pmlkit.sklearn.PMLPrivatizer.fit(X)", "missing not a policy",
         lambda t: _sk(missing="drop").fit([["a"], ["b"]]), ValidationError,
         r"missing must be one of 'error', 'category', 'keep', got 'drop'"),
    Case("pmlkit.sklearn.PMLPrivatizer.fit(X)", "unknown_as not a label of the column",
         lambda t: _sk(delta=0.5, unknown_as="z").fit([["a"], ["b"]]), ValidationError,
         r"unknown_as='z' is not a label of column 0 .*categories="),
    Case("pmlkit.sklearn.PMLPrivatizer.transform(X)", "label not seen in the reference",
         lambda t: _sk(delta=0.5).fit([["a"], ["b"]]).transform([["z"]]), DataError, r"'z'"),
    Case("pmlkit.sklearn.PMLPrivatizer.transform(X)", "other number of columns than fit",
         lambda t: _sk(delta=0.5).fit([["a"], ["b"]]).transform([["a", "b"]]),
         ValidationError, r"X has 2 features, but PMLPrivatizer is expecting 1"),
    Case("pmlkit.plotting.plot_mechanism(mech)", "rows not summing to 1",
         lambda t: _d("pmlkit.plotting", "plot_mechanism")([[0.5, 0.4], [0.3, 0.7]]),
         ValidationError, r"mech rows must sum to 1"),
    Case("pmlkit.plotting.plot_pml(mech, prior)", "no prior and none recorded",
         lambda t: _d("pmlkit.plotting", "plot_pml")(W), ValidationError,
         r"prior must be given"),
    Case("pmlkit.plotting.plot_gaussian_curve(calibration)", "not a GaussianCalibration",
         lambda t: _d("pmlkit.plotting", "plot_gaussian_curve")({"sigma": 1}),
         ValidationError, r"calibration must be a GaussianCalibration.*got dict"),
    # ---- the command line: one line on stderr, no traceback, non-zero exit
    Case("pmlkit design", "missing reference file",
         cli("design", "--reference", lambda t: t / "nope.csv", "--column", "sex",
             "--epsilon", "1", "--delta", "0.1", "--output", lambda t: t / "m.json"),
         1, r"nope\.csv"),
    Case("pmlkit design", "CSV without the column",
         cli("design", "--reference", csv_file, "--column", "race", "--epsilon", "1",
             "--delta", "0.1", "--output", lambda t: t / "m.json"), 1, r"'race'"),
    Case("pmlkit design", "eps < 0",
         cli("design", "--reference", csv_file, "--column", "sex", "--epsilon", "-1",
             "--delta", "0.1", "--output", lambda t: t / "m.json"), 1, r"eps.*-1"),
    Case("pmlkit design", "delta NaN",
         cli("design", "--reference", csv_file, "--column", "sex", "--epsilon", "1",
             "--delta", "nan", "--output", lambda t: t / "m.json"), 1, r"delta.*nan"),
    Case("pmlkit design", "eps not a number",
         cli("design", "--reference", csv_file, "--column", "sex", "--epsilon", "abc",
             "--delta", "0.1", "--output", lambda t: t / "m.json"), 2, r"epsilon.*abc"),
    Case("pmlkit assess", "tampered mechanism JSON",
         cli("assess", "--mechanism",
             lambda t: mech_file(t, _set("matrix", [[0.9, 0.1], [0.3, 0.7]])),
             "--prior", "0.4,0.6"), 1, r"sha256"),
    Case("pmlkit assess", "forged certificate (digest recomputed)",
         cli("assess", "--mechanism", forged_certificate, "--prior", "0.4,0.6"), 1,
         r"guarantee does not hold"),
    Case("pmlkit assess", "missing mechanism file",
         cli("assess", "--mechanism", lambda t: t / "nope.json", "--prior", "0.4,0.6"),
         1, r"nope\.json"),
    Case("pmlkit assess", "prior not summing to 1",
         cli("assess", "--mechanism", mech_file, "--prior", "0.5,0.6"), 1, r"prior.*sum"),
    Case("pmlkit privatize", "CSV without the column",
         cli("privatize", "--mechanism", mech_file, "--input", csv_file, "--column", "race",
             "--output", lambda t: t / "out.csv"), 1, r"'race'"),
    Case("pmlkit privatize", "unknown label in the data",
         cli("privatize", "--mechanism", mech_file, "--input",
             lambda t: csv_file(t, "sex\nMale\nOther\n"), "--column", "sex",
             "--output", lambda t: t / "out.csv"), 1, r"'Other'"),
    Case("pmlkit privatize", "uncertified mechanism file without --allow-uncertified",
         cli("privatize", "--mechanism", lambda t: forged_file(t, lambda d: None), "--input",
             csv_file, "--column", "sex", "--output", lambda t: t / "out.csv"),
         1, r"is UNCERTIFIED .*pass --allow-uncertified"),
    Case("pmlkit privatize", "corrupt mechanism JSON",
         cli("privatize", "--mechanism", lambda t: csv_file(t, "{", "m.json"), "--input",
             csv_file, "--column", "sex", "--output", lambda t: t / "out.csv"),
         1, r"not valid JSON"),
    Case("pmlkit privatize", "duplicate column names",
         cli("privatize", "--mechanism", mech_file, "--input",
             lambda t: csv_file(t, "sex,sex\nMale,Male\n"), "--column", "sex",
             "--output", lambda t: t / "out.csv"), 1, r"'sex' appears 2 times"),
    Case("pmlkit privatize", "--delimiter of two characters",
         cli("privatize", "--mechanism", mech_file, "--input", csv_file, "--column", "sex",
             "--delimiter", ";;", "--output", lambda t: t / "out.csv"), 2,
         r"--delimiter.*one character"),
    Case("pmlkit privatize", "--unknown-as not an input label",
         cli("privatize", "--mechanism", mech_file, "--input", csv_file, "--column", "sex",
             "--unknown-as", "Other", "--output", lambda t: t / "out.csv"), 2,
         r"--unknown-as.*'Other' is not an input label"),
    Case("pmlkit privatize", "--missing category without a '(missing)' label",
         cli("privatize", "--mechanism", mech_file, "--input", csv_file, "--column", "sex",
             "--missing", "category", "--output", lambda t: t / "out.csv"), 2,
         r"--missing category needs .*'\(missing\)'"),
    Case("pmlkit privatize", "--engine dask --overwrite of a folder pmlkit did not write",
         cli("privatize", "--mechanism", mech_file, "--input", csv_file, "--column", "sex",
             "--engine", "dask", "--overwrite", "--output",
             lambda t: csv_file(t / "docs", "mine", "thesis.tex").parent
             if (t / "docs").mkdir() is None else None), 1,
         r"not a previous pmlkit output"),
    Case("pmlkit privatize", "--compression with a CSV output",
         cli("privatize", "--mechanism", mech_file, "--input", csv_file, "--column", "sex",
             "--compression", "gzip", "--output", lambda t: t / "out.csv"), 1,
         r"compression applies to Parquet outputs"),
    Case("pmlkit privatize", "several --column without a joint guarantee",
         cli("privatize", "--mechanism", mech_file, "--input", csv_file, "--column", "sex",
             "--column", "income", "--output", lambda t: t / "out.csv"), 2,
         r"no joint guarantee was computed.*--plan FILE.*--no-joint-guarantee"),
    Case("pmlkit privatize", "two plain --mechanism FILE",
         cli("privatize", "--mechanism", mech_file, "--mechanism", mech_file, "--input",
             csv_file, "--column", "sex", "--output", lambda t: t / "out.csv"), 2,
         r"--mechanism.*2 plain mechanism files given"),
    Case("pmlkit privatize", "--mechanism COL=FILE whose COL is not a --column",
         cli("privatize", "--mechanism", lambda t: f"race={mech_file(t)}", "--input",
             csv_file, "--column", "sex", "--output", lambda t: t / "out.csv"), 2,
         r"--mechanism.*names column 'race', which is not a --column"),
    Case("pmlkit privatize", "--plan that is not a release plan",
         cli("privatize", "--plan", mech_file, "--input", csv_file, "--column", "sex",
             "--column", "income", "--output", lambda t: t / "out.csv"), 1,
         r"is not a release plan"),
    Case("pmlkit assess", "several --mechanism on different input labels",
         cli("assess", "--mechanism", mech_file, "--mechanism",
             lambda t: (pmlkit.Mechanism(W, ("a", "b")).save(t / "ab.json"), t / "ab.json")[1],
             "--prior", "0.4,0.6"), 2, r"--mechanism.*releases of the same column"),
    Case("pmlkit design", "--output is the --reference file",
         cli("design", "--reference", csv_file, "--column", "sex", "--epsilon", "1",
             "--delta", "0.1", "--output", csv_file, "--overwrite"), 1,
         r"is the --reference file"),
    Case("pmlkit design", "--output an existing file that is not a mechanism",
         cli("design", "--reference", csv_file, "--column", "sex", "--epsilon", "1",
             "--delta", "0.1", "--output", lambda t: csv_file(t, "{}", "notes.json"),
             "--overwrite"), 1, r"not a pmlkit mechanism file"),
    Case("pmlkit design", "a column with too many distinct values",
         cli("design", "--reference",
             lambda t: csv_file(t, "id\n" + "\n".join(map(str, range(200))) + "\n"),
             "--column", "id", "--epsilon", "1", "--delta", "0.1",
             "--output", lambda t: t / "m.json"), 1, r"200 distinct values.*--categories"),
    Case("pmlkit design", "--coarsen not 'auto' nor a count >= 1",
         cli("design", "--reference", csv_file, "--column", "sex", "--epsilon", "1",
             "--delta", "0.1", "--coarsen", "0", "--output", lambda t: t / "m.json"),
         2, r"--coarsen.*'auto' or a number of categories to keep >= 1, got '0'"),
    Case("pmlkit design", "--coarsen with --utility estimation",
         cli("design", "--reference", csv_file, "--column", "sex", "--epsilon", "1",
             "--delta", "0.1", "--coarsen", "auto", "--utility", "estimation",
             "--output", lambda t: t / "m.json"),
         2, r"--coarsen.*--utility mutual_information or accuracy, got 'estimation'"),
    Case("pmlkit design", "--categories with a repeated label",
         cli("design", "--reference", csv_file, "--column", "sex", "--epsilon", "1",
             "--delta", "0.1", "--categories", "Male,Male", "--output", lambda t: t / "m.json"),
         2, r"--categories.*distinct labels"),
    Case("pmlkit privatize", "null in the column (no --missing)",
         cli("privatize", "--mechanism", mech_file, "--input",
             lambda t: csv_file(t, "id,sex\n1,Male\n2,\n"), "--column", "sex",
             "--output", lambda t: t / "out.csv"), 1, r"1 row holds a null"),
    Case("pmlkit estimate", "no --mechanism and no record of it",
         cli("estimate", "--input", csv_file, "--column", "sex"), 1,
         r"no mechanism recorded for .*data\.csv.*--mechanism FILE"),
    Case("pmlkit estimate", "released value not an output label",
         cli("estimate", "--mechanism", mech_file, "--input",
             lambda t: csv_file(t, "sex\nMale\nOther\n"), "--column", "sex"), 1,
         r"'Other' appears in 1 row but is not an output label"),
    Case("pmlkit estimate", "confidence outside (0, 1)",
         cli("estimate", "--mechanism", mech_file, "--input", csv_file, "--column", "sex",
             "--confidence", "1.5"), 2, r"--confidence"),
    Case("pmlkit calibrate laplace", "three labels in the column",
         cli("calibrate", "laplace", "--reference",
             lambda t: csv_file(t, "c\na\nb\nc\n"), "--column", "c", "--positive", "a",
             "--epsilon", "1", "--delta", "0.1"), 1, r"two distinct labels"),
    Case("pmlkit calibrate gaussian", "sigma <= 0",
         cli("calibrate", "gaussian", "--reference", csv_file, "--column", "sex",
             "--positive", "Male", "--sigma", "0", "--delta", "0.1"), 1, r"sigma"),
    Case("pmlkit audit", "delta outside (0, 1)", cli("audit", "--delta", "1.5"), 1,
         r"deltas must be in \(0, 1\), got 1\.5"),
    Case("pmlkit audit", "trials = 0", cli("audit", "--trials", "0"), 2, r"--trials"),
    Case("pmlkit reproduce", "unknown figure", cli("reproduce", "--figure", "nope"), 2,
         r"--figure"),
    Case("pmlkit reproduce", "--data folder that does not exist",
         cli("reproduce", "--figure", "laplace_adult", "--data", lambda t: t / "nowhere",
             "--output", lambda t: t / "figs", "--iterations", "1"), 1, r"nowhere"),
    Case("pmlkit demo", "eps NaN", cli("demo", "--eps", "nan"), 1,
         r"eps must be in \[0, inf\), got nan"),
    Case("pmlkit demo", "delta > 1", cli("demo", "--delta", "2"), 1,
         r"delta must be in \(0, 1\], got 2\.0"),
    Case("pmlkit nope", "unknown command", cli("nope"), 2, r"(?i)no such command"),
]


# --------------------------------------------------------------------------------------
# the tests
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if isinstance(case.error, int):
        code = case.call(tmp_path)
        err = capsys.readouterr().err
        assert code == case.error, err
        assert "Traceback" not in err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("pmlkit: error: "), err
        assert re.search(case.match, lines[0]), lines[0]
        return
    with pytest.raises(case.error) as info:
        case.call(tmp_path)
    assert isinstance(info.value, PMLError)
    assert re.search(case.match, str(info.value)), str(info.value)


def render_table() -> str:
    """The Markdown table of ``CASES`` (the generated part of docs/bad_input.md)."""
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| Entry point | Bad input | Error | Message matches (regex) |",
             "|---|---|---|---|"]
    for c in CASES:
        lines.append(f"| `{esc(c.entry)}` | {esc(c.bad)} | {c.error_text} | "
                     f"`{esc(c.match)}` |")
    return "\n".join(lines)


def test_doc_table_is_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"{DOC} lacks the generated-table markers"
    current = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert current == render_table(), (
        "docs/bad_input.md is out of date: run `python tests/test_bad_input.py --write`")


def test_every_public_name_has_a_row() -> None:
    """The table covers the public API: every callable re-exported by ``pmlkit`` appears."""
    entries = " ".join(c.entry for c in CASES)
    skip = {"UncertaintySet", "ConfidenceSet", "l1_radius_known_kappa", "privacy_region_thresholds",
            "privatize_with_report",  # abstract/result classes; share a listed row's checks
            "MechanismSummary",  # a result of summarize_mechanism, which has a row
            "PrivacyMechanism"}  # a Protocol (an interface), nothing to call
    missing = [n for n in pmlkit.__all__
               if n not in skip and n[0].islower() and not n.startswith("__")
               and f"{n}(" not in entries and f"pmlkit.{n}." not in entries]
    classes = [n for n in pmlkit.__all__ if n[0].isupper() and not n.endswith(("Error",
               "Warning")) and n not in skip and f"pmlkit.{n}" not in entries]
    assert not missing and not classes, (missing, classes)


SUBMODULES = ["pmlkit.design", "pmlkit.additive", "pmlkit.confidence", "pmlkit.io",
              "pmlkit.rng", "pmlkit.datasets", "pmlkit.sets", "pmlkit.worstcase",
              "pmlkit.utility", "pmlkit.estimation", "pmlkit.bounds", "pmlkit.leakage",
              "pmlkit.joint", "pmlkit.plotting"]
# functions that take no user input or only a cache location
NO_BAD_INPUT = {"secure_generator", "adult_cache_dir", "download_adult", "find_adult",
                "dask_empirical_distribution"}


@pytest.mark.parametrize("module", SUBMODULES)
def test_every_public_function_of_submodules_has_a_row(module: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    entries = " ".join(c.entry for c in CASES)
    missing = [n for n in getattr(mod, "__all__", []) if n[0].islower()
               and callable(getattr(mod, n)) and n not in NO_BAD_INPUT
               and f"{n}(" not in entries and f"{n}." not in entries]
    assert not missing, f"{module}: no bad-input row for {missing}"


def _write() -> None:
    text = DOC.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(f"{head}{BEGIN}\n{render_table()}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":  # regenerate the doc table
    if "--write" in sys.argv:
        _write()
    else:
        print(render_table())


# --------------------------------------------------------------------------------------
# the converse: numpy scalar types are good input, and give the same answers
# --------------------------------------------------------------------------------------

NUMPY_SCALAR_CALLS: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
    ("l1_radius", lambda d, m, n: pmlkit.l1_radius(d, m=m, n=n), (0.05, 1000, 4)),
    ("l1_failure_probability", lambda r, m, n: pmlkit.l1_failure_probability(r, m=m, n=n),
     (0.1, 1000, 4)),
    ("eps_bound", lambda e, b: pmlkit.eps_bound(eps=e, beta=b), (0.5, 0.1)),
    ("delta_min", lambda e, t, m, n: pmlkit.delta_min(eps=e, eps_target=t, m=m, n=n),
     (0.5, 0.7, 1000, 4)),
    ("privacy_region", lambda e: pmlkit.privacy_region(e, P), (0.3,)),
    ("randomized_response", lambda n, e: np.asarray(pmlkit.randomized_response(n, e)),
     (3, 1.0)),
    ("laplace_eps", _d(additive, "laplace_eps"), (1.5, 0.3)),
    ("laplace_scale", _d(additive, "laplace_scale"), (0.5, 0.3)),
    ("pldp_sigma", _d(additive, "pldp_sigma"), (1.0, 1e-5)),
    ("gaussian_violation_probability",
     lambda s, q, e: _d(additive, "gaussian_violation_probability")(s, (1 - q, q), e),
     (1.5, 0.3, 0.2)),
]


@pytest.mark.parametrize("name,fn,args", NUMPY_SCALAR_CALLS,
                         ids=[c[0] for c in NUMPY_SCALAR_CALLS])
def test_numpy_scalars_are_accepted(name: str, fn: Callable[..., Any],
                                    args: tuple[Any, ...]) -> None:
    """np.float64 / np.float32 / np.int64 / 0-d arrays behave as the Python numbers."""
    expected = np.asarray(fn(*args), dtype=float)
    for conv in (np.float64, lambda x: np.asarray(x)[()], lambda x: np.array(x)):
        np_args = tuple(conv(a) if isinstance(a, float) else np.int64(a) for a in args)
        np.testing.assert_allclose(np.asarray(fn(*np_args), dtype=float), expected,
                                   rtol=1e-15)
    f32 = tuple(np.float32(a) if isinstance(a, float) else a for a in args)
    np.testing.assert_allclose(np.asarray(fn(*f32), dtype=float), expected, rtol=1e-5)
