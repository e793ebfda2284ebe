"""Designing the columns of a table release together, for one (eps, delta) on the record.

Each column gets its own mechanism (categorical: :func:`pmlkit.design.design_from_samples`;
numeric: :func:`pmlkit.numeric.design.design_numeric_from_samples` on its grid, the
candidate with the smallest expected error among those of full rank, so that the analyst
can estimate the column's distribution, :func:`estimable_best`), designed
at ``delta / K`` so that its set is the one the chain-rule certificate uses for it. The
budget is split by weights: ``eps_k = lam * w_k / sum(w) * eps`` with ``w_k`` the
column's ``weight`` from the spec, by default ``log N_k`` (the log of its alphabet size:
a column with more values needs more budget for the same relative utility, and a binary
column gets ``log 2``). The scale ``lam`` in ``(0, 1]`` is the largest found by a
safeguarded regula falsi on the certified eps (a few evaluations, each a full design and
certificate) whose **certified joint guarantee** is at most ``eps`` (a value within its
rounding margin of ``eps`` counts against it, :func:`pmlkit._validation.exceeds`).

That search certifies the product through the chain-rule bound, whose terms for every
column but the first (the one with the largest alphabet) are worst cases over nearly the
whole simplex when several columns share one record: there a PML design at a share of the
budget is certified at about its local-DP value, and the scale can fall far below 1. So a
second split is always evaluated, the **chain split**: the first column of the chain keeps
its PML design at its full share ``w_k eps``, every other column gets an ``eps``-LDP design
at its full share (categorical: k-ary randomized response; numeric: the best estimable
design over the whole simplex, :func:`pmlkit.numeric.design.design_numeric`). Local DP
composes, and the chain's first term is at most the first column's own worst case, so the
chain split is within ``eps`` by construction; it is certified like every other split.
Of the certified splits, the one whose columns carry the most information about their
values at the reference (sum of the columns' mutual information) is released
(:attr:`ColumnsDesign.strategy` says which).

The joint guarantee is certified for exactly the product of the designed mechanisms,
over the reference's joint counts, as the better of two certificates of
:mod:`pmlkit.joint.guarantee`: the exact worst case over the joint confidence set (when the
product has at most :data:`EXACT_MAX` entries) and the chain-rule bound over one set per
column at ``delta / K`` (:class:`pmlkit.sets.MarginalSets`). Both are re-checked by
:meth:`pmlkit.joint.JointGuarantee.verify`.

Everything here goes beyond the paper (one column released once).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import exceeds, fmt
from ..errors import CertificationError, PMLWarning
from ..joint.guarantee import JointGuarantee, bound_guarantee, joint_guarantee
from ..joint.product import ProductMechanism, joint_capacity
from ..mechanism import Mechanism
from .spec import ColumnSpec

__all__ = ["EXACT_MAX", "ColumnsDesign", "budget_weights", "design_columns",
           "estimable_best"]

#: Products with at most this many entries (N x M) are also certified exactly (the exact
#: worst case of a 2560 x 23552 product over an l1 ball takes about 10 s on one core).
EXACT_MAX = 10**8


@dataclass(frozen=True)
class ColumnsDesign:
    """The designed mechanisms of a table release and their one joint guarantee.

    Attributes
    ----------
    columns
        The privatised columns, in order.
    mechanisms
        One certified :class:`~pmlkit.Mechanism` per column; a numeric column's labels are
        its grid points.
    split
        The eps each column was designed for (they do not add up to the guarantee).
    weights
        The budget weights (normalised to sum 1).
    guarantee
        The certified :class:`~pmlkit.joint.JointGuarantee` of the whole record.
    tried
        Every split evaluated: ``{"strategy", "scale", "split", "certified_eps", "kind",
        "feasible", "mutual_information"}``.
    strategy
        ``"scaled"`` (every column's PML design, the split scaled until certified) or
        ``"chain"`` (the chain's first column PML, the others local DP; module docstring).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np, pandas as pd
    >>> from pmlkit.release import ReleaseSpec, release_table
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> sex = np.random.default_rng(2).choice(["F", "M"], 2000)
    >>> pd.DataFrame({"sex": sex[:1000]}).to_csv(folder / "ref.csv", index=False)
    >>> pd.DataFrame({"sex": sex[1000:]}).to_csv(folder / "in.csv", index=False)
    >>> spec = ReleaseSpec.from_dict({
    ...     "reference": "ref.csv", "input": "in.csv", "output": "out.csv", "epsilon": 1.0,
    ...     "delta": 1e-6, "columns": {"sex": {"type": "categorical"}}}, base=folder)
    >>> rel = release_table(spec)
    >>> d = rel.design
    >>> d.columns, len(d.mechanisms), d.guarantee.certified_eps <= 1.0
    (('sex',), 1, True)
    """

    columns: tuple[str, ...]
    mechanisms: tuple[Mechanism, ...]
    split: tuple[float, ...]
    weights: tuple[float, ...]
    guarantee: JointGuarantee
    tried: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)
    strategy: str = "scaled"


def budget_weights(specs: Sequence[ColumnSpec], sizes: Sequence[int]) -> tuple[float, ...]:
    """The budget shares: each column's ``weight`` (spec) or ``log N_k``, normalised.

    Examples
    --------
    >>> from pmlkit.release.spec import ColumnSpec
    >>> w = budget_weights([ColumnSpec("a", "categorical"), ColumnSpec("b", "categorical")],
    ...                    [2, 4])
    >>> [round(x, 6) for x in w]  # log 2 : log 4 = 1 : 2
    [0.333333, 0.666667]
    """
    raw = [s.weight if s.weight is not None else math.log(max(n, 2))
           for s, n in zip(specs, sizes, strict=True)]
    top = max(raw)  # scaled first: weights near the float maximum must not sum to inf
    scaled = [float(r) / top for r in raw]
    tot = float(sum(scaled))
    return tuple(r / tot for r in scaled)


def estimable_best(candidates: Mapping[str, Mechanism], losses: Mapping[str, float],
                   n: int) -> Mechanism:
    """The candidate with the smallest loss among those the analyst can invert (rank
    ``n``: every grid point's share is identified from the released counts); the best
    overall only when none can be inverted. Every candidate is certified, so the choice
    does not touch the guarantee.

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit import Mechanism
    >>> lumpy = Mechanism(np.array([[1.0, 0.0], [1.0, 0.0]]))
    >>> noisy = Mechanism(np.array([[0.7, 0.3], [0.3, 0.7]]))
    >>> best = estimable_best({"lp": lumpy, "laplace": noisy}, {"lp": 0.1, "laplace": 0.3}, 2)
    >>> best is noisy
    True
    """
    ranked = sorted(candidates, key=lambda k: losses[k])
    for name in ranked:
        if np.linalg.matrix_rank(np.asarray(candidates[name].matrix)) == n:
            return candidates[name]
    return candidates[ranked[0]]


def _design_one(spec: ColumnSpec, labels: Sequence[Any], codes: np.ndarray, eps: float,
                delta: float, confidence: str) -> Mechanism:
    counts = np.bincount(codes, minlength=len(labels))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PMLWarning)
        if spec.type == "numeric":
            from ..numeric.design import design_numeric_from_samples

            grid = spec.grid
            d = design_numeric_from_samples(grid.decode(codes), grid, eps, delta=delta,
                                            confidence=confidence, utility=str(spec.utility))
            if not spec.estimable:
                return d.best
            return estimable_best(d.candidates, d.losses, grid.n)
        from ..design import design_from_samples
        from ..estimation import EmpiricalDistribution

        est = EmpiricalDistribution.from_counts(counts, list(labels))
        return design_from_samples(est, eps, delta, confidence=confidence,
                                   utility=spec.utility).mechanism


def _ldp_one(spec: ColumnSpec, labels: Sequence[Any], p: np.ndarray, eps: float
             ) -> Mechanism:
    """The column's ``eps``-LDP design (eps-PML for every distribution): k-ary randomized
    response on a categorical column, the best (estimable) design over the whole simplex
    on a numeric one."""
    from ..design import randomized_response
    from ..sets import L1Ball

    n = len(labels)
    if spec.type != "numeric":  # certified over the whole simplex (basis "all")
        return randomized_response(n, eps).with_labels(labels)
    from ..numeric.design import design_numeric

    grid = spec.grid
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PMLWarning)
        d = design_numeric(grid, L1Ball(np.full(n, 1.0 / n), 2.0), eps, prior=p,
                           utility=str(spec.utility))
    return estimable_best(d.candidates, d.losses, grid.n) if spec.estimable else d.best


def _information(mechs: Sequence[Mechanism], marginals: Sequence[np.ndarray]) -> float:
    from ..utility import mutual_information

    return float(sum(mutual_information(np.asarray(m.matrix), p)
                     for m, p in zip(mechs, marginals, strict=True)))


def _certificate(mechs: Sequence[Mechanism], names: Sequence[str], counts: np.ndarray,
                 reference: Mapping[str, Any], delta: float, confidence: str,
                 joint_set: Any, enough: float = -math.inf) -> tuple[float, str]:
    """The better of the chain-rule bound and (for products of at most
    :data:`EXACT_MAX` entries) the exact worst case; the exact one is skipped when the
    bound is already at most ``enough``."""
    prod = ProductMechanism(tuple(mechs))
    try:
        chain = bound_guarantee(prod, names, counts, delta, confidence).certified_eps
    except CertificationError:  # no finite bound: only the exact value can certify
        chain = math.inf
    if chain <= enough:
        return float(chain), "chain-rule bound"
    if joint_set is not None and prod.n_inputs * prod.n_outputs <= EXACT_MAX:
        exact = joint_capacity(prod, joint_set)
        if exact <= chain:
            return float(exact), "exact"
    return float(chain), "chain-rule bound"


def design_columns(specs: Sequence[ColumnSpec], labels: Sequence[Sequence[Any]],
                   codes: Sequence[np.ndarray], eps: float, delta: float, *,
                   confidence: str = "l1", steps: int = 5,
                   on_step: Callable[[Mapping[str, Any]], None] | None = None
                   ) -> ColumnsDesign:
    """Design one mechanism per column so that the whole record is (eps, delta)-PML
    (module docstring for the split, the search and the certificate).

    Parameters
    ----------
    specs
        The columns (:class:`~pmlkit.release.spec.ColumnSpec`).
    labels
        Each column's alphabet (a numeric column: its grid's labels).
    codes
        The reference records as indices into each column's alphabet (same length).
    eps, delta
        The guarantee for the whole record.
    confidence
        The confidence-set method.
    steps
        Evaluations of the scale after the full split fails (regula falsi on the
        certified eps, safeguarded to shrink the bracket by at least 10% each step).

    Raises
    ------
    CertificationError
        When no scale in the search certifies ``eps``.

    Examples
    --------
    >>> import numpy as np
    >>> from pmlkit.release.spec import ColumnSpec
    >>> rng = np.random.default_rng(0)
    >>> specs = [ColumnSpec("x", "categorical"), ColumnSpec("y", "categorical")]
    >>> codes = [rng.integers(0, 2, 2000), rng.integers(0, 3, 2000)]
    >>> d = design_columns(specs, [("a", "b"), ("u", "v", "w")], codes, 2.0, 1e-3)
    >>> d.guarantee.eps <= 2.0, d.guarantee.columns
    (True, ('x', 'y'))
    """
    from ..confidence import confidence_set

    names = [s.name for s in specs]
    sizes = [len(x) for x in labels]
    k = len(specs)
    flat = np.ravel_multi_index(tuple(np.asarray(c, dtype=np.int64) for c in codes), sizes)
    counts = np.bincount(flat, minlength=math.prod(sizes))
    reference = {n: np.asarray(list(lab), dtype=object)[np.asarray(c)]
                 for n, lab, c in zip(names, labels, codes, strict=True)}
    n_joint = math.prod(sizes)
    joint_set = (confidence_set(counts, delta, confidence=confidence).set
                 if n_joint <= EXACT_MAX // 2 else None)
    weights = budget_weights(specs, sizes)
    dk = delta / k
    cache: dict[tuple[int, float], Mechanism] = {}

    def design(i: int, e: float) -> Mechanism:
        key = (i, round(e, 12))
        if key not in cache:
            cache[key] = _design_one(specs[i], labels[i], np.asarray(codes[i]), e, dk,
                                     confidence)
        return cache[key]

    tried: list[dict[str, Any]] = []
    marginals = [np.bincount(np.asarray(c, dtype=np.int64), minlength=n) / len(c)
                 for c, n in zip(codes, sizes, strict=True)]

    def judge(strategy: str, lam: float, split: tuple[float, ...], mechs: list[Mechanism]
              ) -> tuple[bool, str]:
        # search: a chain-rule bound that certifies is enough; the final certificate
        # below is the better of the two for the chosen split
        cert, kind = _certificate(mechs, names, counts, reference, delta, confidence,
                                  joint_set, enough=eps * (1 - 1e-9))
        ok = not exceeds(cert, eps)
        tried.append({"strategy": strategy, "scale": lam, "split": list(split),
                      "certified_eps": cert, "kind": kind, "feasible": bool(ok),
                      "mutual_information": _information(mechs, marginals)})
        if on_step is not None:
            on_step(tried[-1])
        return ok, kind

    def evaluate(lam: float) -> tuple[bool, list[Mechanism], tuple[float, ...], str]:
        split = tuple(lam * w * eps for w in weights)
        mechs = [design(i, e) for i, e in enumerate(split)]
        ok, kind = judge("scaled", lam, split, mechs)
        return ok, mechs, split, kind

    best = None
    lo, c_lo = 0.0, 0.0  # a scale that certifies (0: release nothing) and its eps
    hi = 1.0
    ok, mechs, split, kind = evaluate(hi)
    if ok:
        best = (mechs, split, kind)
    else:
        c_hi = float(tried[-1]["certified_eps"])
        for _ in range(steps):
            # regula falsi towards just below eps, kept inside the middle 80% of the
            # bracket so that it shrinks every step (the bisection's guarantee)
            mid = 0.5 * (lo + hi)
            if math.isfinite(c_hi) and c_hi > c_lo:
                mid = lo + (hi - lo) * (0.995 * eps - c_lo) / (c_hi - c_lo)
            mid = min(max(mid, lo + 0.1 * (hi - lo)), hi - 0.1 * (hi - lo))
            ok, mechs, split, kind = evaluate(mid)
            cert = float(tried[-1]["certified_eps"])
            if ok:
                lo, c_lo, best = mid, cert, (mechs, split, kind)
            else:
                hi, c_hi = mid, cert
    strategy = "scaled"
    if k > 1 and (best is None or best[1] != tuple(w * eps for w in weights)):
        # the chain split (module docstring): the chain's first column (largest alphabet,
        # as in the bound) keeps its PML design at its full share, the others local DP
        first = min(range(k), key=lambda i: (-sizes[i], i))
        split = tuple(w * eps * (1 - 1e-6) for w in weights)
        mechs = [design(i, e) if i == first else _ldp_one(specs[i], labels[i], marginals[i], e)
                 for i, e in enumerate(split)]
        ok, kind = judge("chain", 1.0, split, mechs)
        if ok and (best is None or tried[-1]["mutual_information"]
                   > _information(best[0], marginals)):
            best, strategy = (mechs, split, kind), "chain"
    if best is None:
        raise CertificationError(
            f"no split of epsilon = {eps!r} over columns {fmt(names)} was certified for the "
            f"whole record (smallest scale tried {tried[-1]['scale']!r}, certified eps "
            f"{tried[-1]['certified_eps']!r}): raise epsilon or delta, or release fewer "
            "columns")
    mechs, split, kind = best
    if kind == "exact":
        jg = joint_guarantee(mechs, reference, delta, columns=names, confidence=confidence)
    else:
        jg = bound_guarantee(ProductMechanism(tuple(mechs)), names, counts, delta,
                             confidence,
                             column_eps=[float(m.certified_eps or 0.0) for m in mechs])
    if exceeds(jg.certified_eps, eps) or jg.eps > eps:
        raise CertificationError(
            f"the joint guarantee {jg.eps!r} of the chosen split exceeds epsilon = {eps!r}")
    return ColumnsDesign(tuple(names), tuple(mechs), tuple(float(x) for x in split),
                         weights, jg, tuple(tried), strategy)
