"""Designing the release of several columns for an overall (eps, delta) on the record: one
mechanism on the joint alphabet, or one per column with a certified split of eps."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._progress import report
from .._validation import check_count, check_delta, check_eps, exceeds, fmt
from ..errors import PMLWarning, ValidationError
from ..mechanism import Mechanism
from .guarantee import (
    JointGuarantee,
    bound_guarantee,
    chain_rule_bound,
    check_confidence,
    joint_counts,
    make_joint_guarantee,
    marginal_counts,
    reference_columns,
)
from .product import DENSE_MAX, ProductMechanism, joint_capacity

__all__ = [
    "EXACT_WORK_MAX",
    "JOINT_DESIGN_MAX_N",
    "JointDesign",
    "JointRelease",
    "constant_mechanism",
    "design_joint",
    "joint_release",
]

#: Joint alphabets up to this size are designed directly (exact sub-convex designer).
JOINT_DESIGN_MAX_N = 12
#: Work (N x M of the product) up to which :func:`design_joint` certifies the split exactly.
EXACT_WORK_MAX = 4 * 10**8


def constant_mechanism(categories: Sequence[Any], *, value: Any = None) -> Mechanism:
    """The mechanism that releases nothing (one output): it leaks nothing about any
    distribution, so its guarantee is eps = 0 for every distribution (basis ``"all"``), the
    certified eps computed over the simplex.

    Its one output is published as ``value``, a value of the column (default: the first
    category; :func:`design_joint` gives the most common one, which maximises
    ``P[released = true]``), so the released column keeps its domain and type.

    Examples
    --------
    >>> m = constant_mechanism(["a", "b", "c"], value="b")
    >>> m.matrix.tolist(), m.output_labels, m.certified_eps
    ([[1.0], [1.0], [1.0]], ('b',), 0.0)
    """
    from ..guarantee import PMLGuarantee, Provenance
    from ..worstcase import leakage_capacity

    cats = list(categories)
    if value is None and cats:
        value = cats[0]
    elif value is not None and value not in cats:
        raise ValidationError(f"value must be one of the categories {cats!r}, got "
                              f"{fmt(value)}")
    w = np.ones((len(categories), 1))
    simplex = PMLGuarantee.for_all_distributions(len(categories), eps=0.0,
                                                 certified_eps=0.0).set
    cert = float(leakage_capacity(w, simplex))
    g = PMLGuarantee.for_all_distributions(len(categories), eps=cert, certified_eps=cert)
    return Mechanism(w, tuple(categories), (value,), guarantee=g,
                     provenance=Provenance(designer="design_joint",
                                           method="release nothing (no split certified)"))


@dataclass(frozen=True, eq=False)
class JointRelease:
    """The release of a tuple of columns through one mechanism on their joint alphabet.

    Row ``i`` of :attr:`mechanism` is the tuple ``itertools.product(*column_labels)[i]``
    (row-major); its output ``j`` is written into the columns as the tuple
    ``output_tuples[j]``, whose ``k``-th entry is a label of column ``k``: released values
    stay in each column's domain. Writing output ``j`` as a tuple is a fixed
    post-processing of the designed mechanism (see :func:`joint_release`), and
    :attr:`mechanism` is the released channel itself (merged where two outputs are written
    as the same tuple), so its guarantee is the one of exactly what is released.

    Examples
    --------
    >>> import numpy as np
    >>> import pmlkit
    >>> w = np.array([[0.7, 0.3], [0.3, 0.7], [0.5, 0.5], [0.5, 0.5]])
    >>> rel = joint_release(("x", "y"), (("a", "b"), (0, 1)), w, [0.4, 0.3, 0.2, 0.1])
    >>> rel.output_tuples
    (('a', 0), ('a', 1))
    """

    SCHEMA: ClassVar[str] = "pmlkit-joint-release"
    VERSION: ClassVar[int] = 1

    columns: tuple[str, ...]
    column_labels: tuple[tuple[Any, ...], ...]
    mechanism: Mechanism
    output_tuples: tuple[tuple[Any, ...], ...]

    def __post_init__(self) -> None:
        cols = self.columns
        if isinstance(cols, str) or not isinstance(cols, Sequence) or len(cols) < 2 or \
                not all(isinstance(c, str) and c for c in cols) or len(set(cols)) != len(cols):
            raise ValidationError(
                f"columns must be at least 2 distinct column names, got {fmt(cols)}")
        object.__setattr__(self, "columns", tuple(cols))
        labs = tuple(tuple(x) for x in self.column_labels)
        if len(labs) != len(cols) or any(not x or len(set(x)) != len(x) for x in labs):
            raise ValidationError(
                f"column_labels must hold one non-empty alphabet of distinct labels per "
                f"column, got {fmt(self.column_labels)}")
        object.__setattr__(self, "column_labels", labs)
        if not isinstance(self.mechanism, Mechanism):
            raise ValidationError(
                f"mechanism must be a pmlkit.Mechanism, got {type(self.mechanism).__name__}")
        n = math.prod(len(x) for x in labs)
        if self.mechanism.n_inputs != n:
            raise ValidationError(
                f"mechanism has {self.mechanism.n_inputs} rows but the joint alphabet has "
                f"{n} tuples")
        outs = tuple(tuple(t) for t in self.output_tuples)
        if len(outs) != self.mechanism.n_outputs or any(
                len(t) != len(cols) or any(v not in x for v, x in zip(t, labs, strict=True))
                for t in outs):
            raise ValidationError(
                "output_tuples must give, for each output of the mechanism, one label of "
                "each column's alphabet")
        object.__setattr__(self, "output_tuples", outs)

    @property
    def categories(self) -> tuple[tuple[Any, ...], ...]:
        """The joint alphabet (row-major tuples), the rows of :attr:`mechanism`."""
        return tuple(itertools.product(*self.column_labels))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able record: the columns, their alphabets, the output tuples and the
        mechanism file's document."""
        return {"schema": self.SCHEMA, "version": self.VERSION,
                "columns": list(self.columns),
                "column_labels": [list(x) for x in self.column_labels],
                "output_tuples": [list(t) for t in self.output_tuples],
                "mechanism": self.mechanism.to_dict()}

    @classmethod
    def from_dict(cls, d: Any, *, allow_uncertified: bool = False) -> JointRelease:
        """Read :meth:`to_dict` strictly; the mechanism is verified as a mechanism file."""
        keys = {"schema", "version", "columns", "column_labels", "output_tuples", "mechanism"}
        if not isinstance(d, Mapping) or set(d) != keys or d.get("schema") != cls.SCHEMA \
                or d.get("version") != cls.VERSION or isinstance(d.get("version"), bool):
            raise ValidationError(
                f"joint release must be a {cls.SCHEMA!r} record of version {cls.VERSION} "
                f"with fields {sorted(keys)}")
        for k in ("columns", "column_labels", "output_tuples"):
            if not isinstance(d[k], list) or (k != "columns" and not all(
                    isinstance(x, list) for x in d[k])):
                raise ValidationError(f"joint release {k!r} must be a list")
        mech = Mechanism.from_dict(d["mechanism"], allow_uncertified=allow_uncertified)
        return cls(tuple(d["columns"]), tuple(tuple(x) for x in d["column_labels"]), mech,
                   tuple(tuple(t) for t in d["output_tuples"]))


def joint_release(columns: Sequence[str], column_labels: Sequence[Sequence[Any]],
                  matrix: Any, estimate: Any, *, guarantee: Any = None,
                  provenance: Any = None) -> JointRelease:
    """Publish each output of a mechanism on a joint alphabet as a tuple of the columns'
    own values.

    The outputs are assigned distinct tuples so as to maximise the probability that the
    written tuple equals the true one under the estimate, ``sum_j estimate(x_j) W[x_j, j]``
    (a linear assignment, solved exactly); with more outputs than tuples, each output is
    written as its most probable tuple ``argmax_x estimate(x) W[x, j]`` when that keeps the
    rank of ``W``, else by the rank-keeping map of
    :func:`pmlkit.utility.publish_assignment` (``keep_rank=True``), so a mechanism from
    which the joint distribution can be estimated keeps that property. The map from
    outputs to tuples is fixed before any record is released and does not depend on the
    data, so it is a post-processing: no output's leakage can grow. Outputs written as the
    same tuple are merged (their columns added), and the result is the channel from the
    true tuple to the written one.

    Parameters
    ----------
    columns, column_labels
        The columns and each column's alphabet; the rows of ``matrix`` are the tuples of
        their product in row-major order.
    matrix
        The designed mechanism (``N x M``, row-stochastic).
    estimate
        The reference estimate of the joint distribution (length ``N``).
    guarantee, provenance
        Given to the released :class:`~pmlkit.Mechanism` (the caller certifies it).

    Examples
    --------
    >>> import numpy as np
    >>> rel = joint_release(("x", "y"), (("a", "b"), (0, 1)), np.eye(4), [0.4, 0.3, 0.2, 0.1])
    >>> rel.output_tuples  # the identity writes every tuple as itself
    (('a', 0), ('a', 1), ('b', 0), ('b', 1))
    """
    from ..mechanism import as_matrix

    w = as_matrix(matrix, "matrix")
    p = np.asarray(estimate, dtype=np.float64)
    labs = [tuple(x) for x in column_labels]
    sizes = tuple(len(x) for x in labs)
    if p.shape != (w.shape[0],) or math.prod(sizes) != w.shape[0]:
        raise ValidationError(
            f"estimate and matrix must have one entry per tuple of the joint alphabet "
            f"({math.prod(sizes)}), got {p.shape[0] if p.ndim == 1 else p.shape} and "
            f"{w.shape[0]} rows")
    # the one publishing rule (utility.publish_assignment): distinct tuples by a linear
    # assignment maximising P(written = true), or with more outputs than tuples each
    # output's most probable tuple as far as the rank allows, outputs written alike merged
    from ..utility import publish_assignment, published_channel

    used, eff = published_channel(w, publish_assignment(w, p, keep_rank=True))
    cols = np.unravel_index(used, sizes)
    tuples = tuple(tuple(labs[k][int(cols[k][i])] for k in range(len(labs)))
                   for i in range(used.size))
    mech = Mechanism(eff, tuple(range(w.shape[0])), tuple(range(used.size)),
                     guarantee=guarantee, provenance=provenance)
    return JointRelease(tuple(columns), tuple(labs), mech, tuples)


@dataclass(frozen=True, eq=False)
class JointDesign:
    """Result of :func:`design_joint`.

    Attributes
    ----------
    mode
        ``"joint alphabet"`` (one mechanism on the tuples) or ``"per-column"``.
    mechanisms
        Per-column mechanisms (``mode == "per-column"``), labels = each column's categories.
    joint_mechanism
        The designed mechanism on the joint alphabet (``mode == "joint alphabet"``); its
        input label ``i`` is the tuple ``categories[i]``.
    release
        What is released in joint mode (:class:`JointRelease`): the channel from the true
        tuple to the written tuple of column values, whose worst case the guarantee
        certifies; ``None`` in per-column mode.
    categories
        The joint alphabet (tuples, row-major).
    split
        The per-column eps each design was made for (``()`` in joint mode); they do not
        add up to the guarantee, which is ``guarantee.certified_eps``.
    guarantee
        The certified joint guarantee (exact, or a chain-rule bound for large alphabets).
    utility
        Summed per-column mutual information (nats) at the estimate in per-column mode;
        the mutual information between the record and the output in joint mode.
    joint_mutual_information
        ``I(X; Y)`` between the whole record and the released tuple at the estimate
        (comparable across modes; ``None`` when the product is too large to evaluate).
    tried
        Every split evaluated: ``{"split", "certified_eps", "utility", "feasible"}``.

    Examples
    --------
    >>> import pmlkit
    >>> ref = {"x": ["a", "b"] * 50, "y": ["u"] * 60 + ["v"] * 40}
    >>> jd = pmlkit.design_joint(ref, 1.5, 0.05)
    >>> jd.mode, jd.guarantee.certified_eps <= 1.5 + 1e-9
    ('joint alphabet', True)
    """

    mode: str
    mechanisms: tuple[Mechanism, ...]
    joint_mechanism: Mechanism | None
    categories: tuple[tuple[Any, ...], ...] = field(repr=False)
    split: tuple[float, ...]
    guarantee: JointGuarantee
    utility: float
    joint_mutual_information: float | None
    tried: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)
    release: JointRelease | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "split": list(self.split),
            "release": None if self.release is None else self.release.to_dict(),
            "utility": self.utility,
            "joint_mutual_information": self.joint_mutual_information,
            "guarantee": self.guarantee.to_dict(),
            "mechanisms": [m.to_dict() for m in self.mechanisms],
            "joint_mechanism": (None if self.joint_mechanism is None
                                else self.joint_mechanism.to_dict()),
            "tried": [dict(t) for t in self.tried],
        }


def _observed_columns(reference: Any, columns: Sequence[Any] | None
                      ) -> tuple[list[str], list[Any], list[np.ndarray]]:
    """Names, per-column categories (observed, sorted when comparable) and codes."""
    from ..estimation import empirical_distribution

    k = len(columns) if columns is not None else None
    if k is None:
        import pandas as pd

        if isinstance(reference, pd.DataFrame):
            k = reference.shape[1]
        elif isinstance(reference, np.ndarray) and reference.ndim == 2:
            k = reference.shape[1]
        elif isinstance(reference, Mapping | Sequence) and not isinstance(reference, str):
            k = len(reference)
        else:
            k = 0
    names, data = reference_columns(reference, columns, k)
    cats = [list(empirical_distribution(d).categories) for d in data]
    return names, cats, data


def _numeric_grids(numeric: Mapping[Any, Any] | None, names: Sequence[str]) -> dict[int, Any]:
    """``numeric=`` of :func:`design_joint` as {column position: NumericGrid}."""
    from ..numeric.grid import NumericGrid

    if numeric is None:
        return {}
    if not isinstance(numeric, Mapping):
        raise ValidationError(f"numeric must map columns to grids, got {fmt(numeric)}")
    out = {}
    for col, g in numeric.items():
        if col not in names:
            raise ValidationError(f"numeric names column {col!r}, which is not one of the "
                                  f"columns {list(names)!r}")
        out[list(names).index(col)] = g if isinstance(g, NumericGrid) else \
            NumericGrid.parse(g)
    return out


def _numeric_upgrade(grids: Mapping[int, Any], mechs: Sequence[Mechanism],
                     split: Sequence[float], margs: Sequence[Any], d: float, conf: str,
                     utility: str, params: Any, certify: Any, eps: float, cert: float,
                     estimable: bool = False) -> tuple[list[Mechanism], float]:
    """At the split found, each numeric column's best certified design by ``utility``
    (:func:`pmlkit.numeric.design.design_numeric`) in place of the calibrated Laplace of
    the search, kept only if the joint guarantee still holds (certified again). With
    ``estimable``, the best among the candidates of full rank (every grid point's share
    identified from the release); none: the search's mechanism stays."""
    from ..confidence import confidence_set
    from ..design.estimation import mechanism_rank
    from ..numeric.design import design_numeric

    out = list(mechs)
    for i, grid in grids.items():
        if split[i] <= 0:
            continue
        cs_i = confidence_set(margs[i], d, confidence=conf)
        nd = design_numeric(grid, cs_i, split[i], prior=margs[i] / margs[i].sum(),
                            utility=utility, parameters=params(i))
        best = nd.best
        if estimable:
            ok = [k for k in sorted(nd.candidates, key=lambda k: nd.losses[k])
                  if mechanism_rank(nd.candidates[k]) == grid.n]
            if not ok:
                continue
            best = nd.candidates[ok[0]]
        trial = [*out[:i], best, *out[i + 1:]]
        c = certify(trial)
        if not exceeds(c, eps):
            out, cert = trial, c
    return out, cert


def _full_rank(mech: Mechanism, n: int) -> bool:
    from ..design.estimation import mechanism_rank

    return mechanism_rank(mech.matrix) == n


def g_utility(res: Any) -> float:
    """The utility value a design reports (its mutual information at the estimate)."""
    return float(res.guarantee.utility_value)


def _mi(w: np.ndarray, p: np.ndarray) -> float:
    from ..utility import mutual_information

    return float(mutual_information(w, p))


def design_joint(reference: Any, eps: float, delta: float, *,
                 columns: Sequence[Any] | None = None, confidence: str = "l1",
                 mode: str = "auto", splits: int = 5, steps: int = 8,
                 utility: Any = "mutual_information", estimable: bool = False,
                 numeric: Mapping[Any, Any] | None = None,
                 numeric_utility: str = "abs") -> JointDesign:
    """Design the release of several columns for an overall (eps, delta)-PML guarantee on
    the whole record.

    ``numeric`` maps columns to a :class:`pmlkit.numeric.grid.NumericGrid` (or its
    ``"LOWER:UPPER:STEP"``): such a column is read onto its grid (clamped and rounded),
    its alphabet is the whole grid, and it is designed per column (``mode="auto"`` or
    ``"per-column"``) by :func:`pmlkit.numeric.design.laplace_mechanism` during the
    search (its utility there: mutual information, as for the other columns); at the split
    found, the best certified numeric design by ``numeric_utility`` at the same eps
    (:func:`pmlkit.numeric.design.design_numeric`) replaces it when the joint guarantee
    still holds. Its mechanism records the grid, so ``pmlkit privatize`` releases it as
    numbers.

    - ``mode="joint"`` (``"auto"`` when the joint alphabet has at most
      :data:`JOINT_DESIGN_MAX_N` categories): one optimal mechanism on the joint alphabet
      (:func:`pmlkit.design.design_from_samples` on the tuples; mutual information with the
      record).
    - ``mode="per-column"``: one mechanism per column
      (:func:`pmlkit.design.design_from_samples` on each column, mutual information), with
      eps ``eps_k = lam f_k eps``: for each direction ``f`` (``splits`` fractions for two
      columns; equal and one-column-favoured directions for more) the largest scale
      ``lam`` in ``[0, 1 / max f]`` whose certified joint guarantee is ``<= eps`` is found
      by bisection (``steps`` halvings), and the split with the largest summed mutual
      information wins. Certification is the exact :func:`joint_capacity` over the joint
      set at ``delta`` when ``N M`` of the product is at most :data:`EXACT_WORK_MAX`, else
      the chain-rule bound over the marginal sets at ``delta / K``. Every returned
      split is certified; the search itself is a heuristic (the joint guarantee need not be
      monotone in ``lam``). If no split is certified, each column gets the constant
      mechanism (leaks nothing, releases nothing; its one output is the column's most
      common value).

    ``utility`` is what each design maximises (as in
    :func:`pmlkit.design.design_from_samples`; the per-column split search adds the
    columns' utility values), and ``estimable=True`` asks each design for a mechanism the
    analyst can estimate back (see there; a numeric column's final design is the best by
    ``numeric_utility`` among the candidates of full rank). In per-column mode the split
    search runs on the utility's own designs (each column designed once per eps); at the
    split found, each column whose design is not of full rank gets its estimable
    replacement at the same eps, the whole record is certified again, and if that fails
    the same direction is bisected again below that scale with the estimable designs.
    Every output of every column
    is published as a value of that column (an estimation design's surplus outputs
    merged, keeping its rank: :func:`pmlkit.design.pipeline.publish_as_values`).

    Returns
    -------
    JointDesign
        With the split and every split tried.

    Examples
    --------
    >>> import pmlkit
    >>> ref = {"x": ["a", "b"] * 50, "y": ["u"] * 60 + ["v"] * 40}
    >>> jd = pmlkit.design_joint(ref, 1.5, 0.05)
    >>> jd.joint_mechanism.guarantee.basis, jd.joint_mechanism.certified
    ('sample', True)
    """
    from ..confidence import confidence_set
    from ..design import design_from_samples
    from ..estimation import EmpiricalDistribution
    from ..guarantee import PMLGuarantee, Provenance
    from ..worstcase import leakage_capacity

    eps = check_eps(eps)
    d = check_delta(delta)
    conf = check_confidence(confidence)
    splits = check_count(splits, "splits")
    steps = check_count(steps, "steps", minimum=0)
    if mode not in ("auto", "joint", "per-column"):
        raise ValidationError(f"mode must be 'auto', 'joint' or 'per-column', got {fmt(mode)}")
    names, cats, data = _observed_columns(reference, columns)
    grids = _numeric_grids(numeric, names)
    for i, grid in grids.items():  # onto the grid; the alphabet is every grid point
        vals = np.asarray(data[i])
        if vals.dtype == object:
            vals = np.asarray(vals.tolist())
        data[i] = grid.decode(grid.encode(vals).codes)
        cats[i] = list(grid.labels)
    if grids:
        if mode == "joint":
            raise ValidationError(
                f"mode='joint' designs one mechanism on the tuples, which would not release "
                f"the numeric columns {[names[i] for i in grids]!r} as numbers: use "
                "mode='per-column' (or 'auto')")
        mode = "per-column"
    _, counts, m = joint_counts(cats, dict(zip(names, data, strict=True)), names)
    sizes = tuple(len(c) for c in cats)
    n_joint = math.prod(sizes)
    joint_cats = tuple(itertools.product(*cats))
    p_hat = counts / m
    if mode == "auto":
        mode = "joint" if n_joint <= JOINT_DESIGN_MAX_N else "per-column"
    if mode == "joint":
        if n_joint < 2:
            raise ValidationError("the joint alphabet must have at least 2 categories")
        est = EmpiricalDistribution.from_counts(counts, list(range(n_joint)))
        res = design_from_samples(est, eps, d, confidence=conf, utility=utility,
                                  estimable=estimable)
        designed = res.mechanism.guarantee
        assert designed is not None  # design_from_samples certifies what it returns
        # what is released: each output written as a tuple of column values (a
        # post-processing), certified again exactly over the same set
        draft = joint_release(names, cats, res.mechanism.matrix, p_hat)
        cert = float(leakage_capacity(draft.mechanism.matrix, designed.set))
        g = PMLGuarantee(eps=cert, set=designed.set, certified_eps=cert, basis="sample",
                         delta=designed.delta, method=designed.method, m=designed.m,
                         statement=designed.statement)
        prov = Provenance(designer="design_joint",
                          method="joint alphabet: " + (res.mechanism.provenance.method or
                                                       "design_from_samples")
                          + "; each output written as a tuple of column values",
                          estimate=tuple(float(x) for x in p_hat))
        release = joint_release(names, cats, res.mechanism.matrix, p_hat, guarantee=g,
                                provenance=prov)
        jg = make_joint_guarantee(
            columns=names, column_labels=cats, counts=counts, uset=designed.set, delta=d,
            method=str(designed.method), statement=designed.statement, certified_eps=cert,
            kind="exact",
            warning="one mechanism on the whole record: its guarantee is the joint one")
        return JointDesign(
            mode="joint alphabet", mechanisms=(), joint_mechanism=res.mechanism,
            categories=joint_cats, split=(), guarantee=jg, utility=g_utility(res),
            joint_mutual_information=_mi(np.asarray(release.mechanism.matrix), p_hat),
            tried=(), release=release)
    k = len(sizes)
    margs = marginal_counts(counts, sizes)
    if any(s < 2 for s in sizes):
        raise ValidationError(
            "every column needs at least 2 observed categories for a per-column design")
    work = n_joint * n_joint
    exact = work <= EXACT_WORK_MAX
    if exact:
        joint_set = confidence_set(counts, d, confidence=conf).set
    else:
        marg_sets = [confidence_set(c, d / k, confidence=conf).set for c in margs]
        order = sorted(range(k), key=lambda i: -sizes[i])
    # one design per (column, eps, estimable): the bisections revisit eps values, and the
    # search runs on the utility's own designs; the estimable replacement (a slower
    # design) is made only at the split found and for the columns whose design the
    # analyst could not invert
    cache: dict[tuple[int, float, bool], tuple[Mechanism, float]] = {}

    def numeric_params(i: int) -> dict[str, Any]:
        return {"delta": d, "m": int(margs[i].sum()), "confidence": conf}

    def design(i: int, e: float, est_ok: bool = False) -> tuple[Mechanism, float]:
        key = (i, round(e, 12), est_ok)
        if key in cache:
            return cache[key]
        if i in grids:
            from ..numeric.design import laplace_mechanism

            cs_i = confidence_set(margs[i], d, confidence=conf)
            p_i = margs[i] / margs[i].sum()
            lm = laplace_mechanism(grids[i], cs_i, e, prior=p_i,
                                   parameters=numeric_params(i))
            cache[key] = (lm, _mi(np.asarray(lm.matrix), p_i))
            return cache[key]
        plain = cache.get((i, round(e, 12), False))
        if est_ok and plain is not None and _full_rank(plain[0], sizes[i]):
            # design_from_samples(estimable=True) keeps a design of full rank as it is
            cache[key] = plain
            return plain
        est = EmpiricalDistribution.from_counts(margs[i], cats[i])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PMLWarning)
            r = design_from_samples(est, e, d, confidence=conf, utility=utility,
                                    estimable=est_ok)
        cache[key] = (r.mechanism, float(r.guarantee.utility_value))
        return cache[key]

    def certify(mechs: Sequence[Mechanism]) -> float:
        if exact:
            return joint_capacity(ProductMechanism(tuple(mechs)), joint_set)
        return chain_rule_bound(ProductMechanism(tuple(mechs[i] for i in order)),
                                [marg_sets[i] for i in order])

    dirs: list[tuple[float, ...]]
    if k == 2:
        fracs = np.linspace(0.2, 0.8, splits) if splits > 1 else np.array([0.5])
        dirs = [(float(f), float(1.0 - f)) for f in fracs]
    else:
        dirs = [tuple([1.0 / k] * k)]
        for i in range(k):
            w = [1.0] * k
            w[i] = 2.0
            dirs.append(tuple(x / sum(w) for x in w))
    tried: list[dict[str, Any]] = []
    best: Any = None

    def evaluate(fr: Sequence[float], lam: float, est_ok: bool = False
                 ) -> tuple[bool, Any]:
        split = tuple(float(lam * f * eps) for f in fr)
        report("joint.split", split=split, tried=len(tried) + 1)
        mechs, utils = zip(*(design(i, e, est_ok) for i, e in enumerate(split)),
                           strict=True)
        cert = certify(mechs)
        ok = not exceeds(cert, eps)  # a tie within rounding counts against the split
        tried.append({"split": list(split), "certified_eps": cert,
                      "utility": float(sum(utils)), "feasible": bool(ok)})
        return ok, (float(sum(utils)), split, list(mechs), cert, fr, lam)

    def search(fr: Sequence[float], lo: float, hi: float, est_ok: bool) -> Any:
        """The largest scale in ``[lo, hi]`` found to certify (``hi`` first, then
        ``steps`` halvings), with its candidate; None if none did."""
        ok, cand = evaluate(fr, hi, est_ok)
        if ok:
            return cand
        found = None
        for _ in range(steps):
            mid = 0.5 * (lo + hi)
            ok, cand = evaluate(fr, mid, est_ok)
            if ok:
                lo, found = mid, cand
            else:
                hi = mid
        return found

    for fr in dirs:
        found = search(fr, 0.0, 1.0 / max(fr), False)
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    if (estimable and best is not None
            and not all(_full_rank(f, n) for f, n in zip(best[2], sizes, strict=True))):
        # the estimable replacements at the split found (each certified at its column's
        # eps like the design it replaces), certified again for the whole record; if
        # the record's guarantee no longer holds, the same direction is searched again
        # below that scale with the estimable designs
        fr0, lam0 = best[4], best[5]
        ok, cand = evaluate(fr0, lam0, True)
        best = cand if ok else search(fr0, 0.0, lam0, True)
    if best is None:  # nothing certified: release nothing
        mechs0 = [constant_mechanism(c, value=c[int(np.argmax(mc))])
                  for c, mc in zip(cats, margs, strict=True)]
        best = (0.0, tuple(0.0 for _ in sizes), mechs0, certify(mechs0), (), 0.0)
    util, split, mechs, cert = best[:4]
    if grids and any(e > 0 for e in split):
        mechs, cert = _numeric_upgrade(grids, mechs, split, margs, d, conf, numeric_utility,
                                       numeric_params, certify, eps, cert,
                                       estimable=estimable)
        util = float(sum(_mi(np.asarray(f.matrix), c / c.sum())
                         for f, c in zip(mechs, margs, strict=True)))
    prod = ProductMechanism(tuple(mechs))
    col_eps = [float(leakage_capacity(f.matrix, confidence_set(c, d, confidence=conf).set))
               for f, c in zip(mechs, margs, strict=True)]
    if exact:
        cs = confidence_set(counts, d, confidence=conf)
        jg = make_joint_guarantee(
            columns=names, column_labels=cats, counts=counts, uset=cs.set, delta=d,
            method=cs.method, statement=cs.description, certified_eps=cert, kind="exact",
            column_eps=col_eps)
    else:
        jg = bound_guarantee(prod, names, counts, d, conf, column_eps=col_eps)
    jmi = None
    if prod.n_inputs * prod.n_outputs <= DENSE_MAX:
        jmi = _mi(prod.matrix, p_hat)
    return JointDesign(
        mode="per-column", mechanisms=tuple(mechs), joint_mechanism=None,
        categories=joint_cats, split=tuple(split), guarantee=jg, utility=util,
        joint_mutual_information=jmi, tried=tuple(tried))
