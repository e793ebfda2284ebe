"""The exact coverage family of :func:`~pmlkit.audit.run_audit`: failure probabilities
of the confidence sets summed over every sample outcome at worst-case true distributions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ValidationError
from ._results import AuditRow

# --------------------------------------------------------------------------------------
# exact coverage: sums over every sample outcome at worst-case true distributions
# --------------------------------------------------------------------------------------

#: Sample sizes of the exact binary (N = 2) coverage sums: every m up to 20, then up to 10^4.
EXACT_M_BINARY: tuple[int, ...] = (*range(1, 21), 25, 30, 40, 50, 70, 100, 150, 200, 300,
                                   500, 1_000, 10_000)
#: (N, sample sizes) of the exact multinomial coverage sums (every outcome enumerated).
EXACT_M_MULTI: tuple[tuple[int, tuple[int, ...]], ...] = (
    (3, (1, 3, 8, 16)), (4, (2, 6)), (5, (4,)))
_ETA = 1e-11            # a candidate worst case sits this far outside a set's boundary
_BIN_KEEP = 300         # m > 1000: endpoints of the 300 smallest / largest counts, ...
_BIN_SPREAD = 700       # ... and of this many counts spread over the rest
_MULTI_EDGE = 800        # at most this many boundary candidates per (N, m)
_MULTI_RANDOM = 100     # random candidate distributions per (N, m) besides the boundary ones


@dataclass(frozen=True)
class _Rep:
    """A batch of confidence sets, one per row, in one form that covers every kind of
    :mod:`pmlkit.sets` they use: ``{Q : ||Q - center||_1 <= radius, lo <= Q <= hi}``
    (``radius = inf`` for a box, ``lo = 0, hi = 1`` for a ball)."""

    center: np.ndarray
    radius: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    kind: np.ndarray                   # per row: 0 ball, 1 box, 2 ball and box
    chosen: np.ndarray | None = None   # "auto": index of the chosen candidate per row

    def scaled(self, s: float) -> _Rep:
        """Every set shrunk towards its center by ``s`` (the radius and the box)."""
        if s == 1.0:
            return self
        c = self.center
        box = (self.kind != _BALL)[:, None]  # a ball's [0, 1] "box" is no constraint
        return _Rep(c, self.radius * s, np.where(box, c + s * (self.lo - c), self.lo),
                    np.where(box, c + s * (self.hi - c), self.hi), self.kind, self.chosen)

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """N = 2: the set as an interval ``[a, b]`` of ``Q(x1)`` (``Q(x2) = 1 - Q(x1)``)."""
        c, r = self.center[:, 0], self.radius
        a = np.maximum.reduce([self.lo[:, 0], 1.0 - self.hi[:, 1], c - r / 2, np.zeros_like(c)])
        b = np.minimum.reduce([self.hi[:, 0], 1.0 - self.lo[:, 1], c + r / 2, np.ones_like(c)])
        return a, b

    def member(self, q: np.ndarray) -> np.ndarray:
        """``(C, K)``: whether candidate ``q[c]`` lies in set ``k`` (exact comparisons, no
        tolerance: the guarantee is about the set as released)."""
        inbox = ((q[:, None, :] >= self.lo[None]) & (q[:, None, :] <= self.hi[None])).all(-1)
        dist = np.abs(q[:, None, :] - self.center[None]).sum(-1)
        member: np.ndarray = inbox & (dist <= self.radius[None])
        return member


_BALL, _BOX, _BALL_BOX = 0, 1, 2


def _rep_of(counts: np.ndarray, delta: float, method: str) -> _Rep:
    """The confidence sets of ``method`` for every row of ``counts`` (equal ``m``), built
    with the batched constructions of :mod:`pmlkit.confidence` (the ones its public
    functions call); :func:`_spot_check` compares them with :func:`confidence_set`."""
    from .. import confidence as cf
    from ..estimation import l1_radius

    k, n = counts.shape
    m = int(counts[0].sum())
    p = counts / m
    inf, zero, one = np.full(k, np.inf), np.zeros((k, n)), np.ones((k, n))
    if method == "l1":
        return _Rep(p, np.full(k, l1_radius(delta, m=m, n=n)), zero, one, np.full(k, _BALL))
    if method == "box-lower" and n == 2 and k > 2 and (counts[::-1] == counts[:, ::-1]).all():
        # the folded bound depends on min(count) only: compute one half, mirror the other
        half = _rep_of(counts[: k // 2 + 1], delta, method)
        idx = np.minimum(np.arange(k), k - 1 - np.arange(k))
        return _Rep(p, inf, half.lo[idx], half.hi[idx], np.full(k, _BOX))
    if method in ("box-cp", "box-kl", "box-lower"):
        fn = {"box-cp": cf.batch_box_cp, "box-kl": cf.batch_box_kl,
              "box-lower": cf.batch_box_lower}[method]
        lo, hi = fn(counts, delta)
        return _Rep(p, inf, np.asarray(lo, float), np.asarray(hi, float), np.full(k, _BOX))
    if method == "l1-kappa":
        radius, _ = cf.batch_l1_kappa(counts, delta)
        return _Rep(p, np.asarray(radius, float), zero, one, np.full(k, _BALL))
    if method == "l1-box":  # l1_box_set with its default split 1/2
        lo, hi = cf.batch_box_cp(counts, 0.5 * delta)
        return _Rep(p, np.full(k, l1_radius(0.5 * delta, m=m, n=n)), np.minimum(lo, p),
                    np.maximum(hi, p), np.full(k, _BALL_BOX))
    if method == "auto":
        names = cf.AUTO_CANDIDATES
        reps = [_rep_of(counts, delta / len(names), x) for x in names]
        scores = np.stack([_score(r) for r in reps])
        best = np.argmin(scores, axis=0)  # the first candidate on ties, as auto_set
        rows = np.arange(k)

        def pick(attr: str) -> np.ndarray:
            picked: np.ndarray = np.stack([getattr(r, attr) for r in reps])[best, rows]
            return picked

        return _Rep(p, pick("radius"), pick("lo"), pick("hi"), pick("kind"), best)
    raise ValidationError(f"unknown confidence method {method!r}")  # pragma: no cover


def _coordinate_bounds(rep: _Rep) -> tuple[np.ndarray, np.ndarray]:
    """The exact coordinate bounds of every set of a batch, as each set kind's
    ``coordinate_bounds`` computes them (for ``auto_set``'s criterion)."""
    c, lo, hi = rep.center, rep.lo, rep.hi
    r = np.where(np.isfinite(rep.radius), rep.radius, 4.0)[:, None] / 2.0
    ball = (np.clip(c - r, 0.0, 1.0), np.clip(c + r, 0.0, 1.0))
    tlo = np.clip(np.maximum(lo, 1.0 - hi.sum(1, keepdims=True) + hi), 0.0, 1.0)
    thi = np.clip(np.minimum(hi, 1.0 - lo.sum(1, keepdims=True) + lo), 0.0, 1.0)
    box = (tlo, np.maximum(thi, tlo))
    up, dn = hi - c, c - lo
    d = np.minimum(np.minimum(dn, r), up.sum(1, keepdims=True) - up)
    u = np.minimum(np.minimum(up, r), dn.sum(1, keepdims=True) - dn)
    both = (np.clip(c - np.maximum(d, 0), 0, 1), np.clip(c + np.maximum(u, 0), 0, 1))
    kind = rep.kind[:, None]
    return tuple(np.where(kind == _BALL, x, np.where(kind == _BOX, y, z))  # type: ignore
                 for x, y, z in zip(ball, box, both, strict=True))


def _score(rep: _Rep) -> np.ndarray:
    """``auto_set``'s default criterion: the total width of the coordinate bounds."""
    lo, hi = _coordinate_bounds(rep)
    width: np.ndarray = np.sum(hi - lo, axis=1)
    return width


def _set_of(rep: _Rep, i: int) -> Any:
    """Row ``i`` of a batch as a :mod:`pmlkit.sets` object."""
    from ..sets import Box, L1Ball, L1BoxSet

    kind = int(rep.kind[i])
    if kind == _BALL:
        return L1Ball(rep.center[i], float(rep.radius[i]))
    if kind == _BOX:
        return Box(rep.lo[i], rep.hi[i])
    return L1BoxSet(rep.center[i], float(rep.radius[i]), rep.lo[i], rep.hi[i])


def _spot_check(counts: np.ndarray, rep: _Rep, delta: float, method: str,
                rows: Sequence[int]) -> list[str]:
    """Compare the batched sets with :func:`pmlkit.confidence.confidence_set` on ``rows``:
    the exact sums are only as good as this agreement. Returns the mismatches."""
    from ..confidence import AUTO_CANDIDATES, confidence_set
    from ..sets import set_from_dict

    bad = []
    for i in rows:
        cs = confidence_set(counts[i], delta, confidence=method)
        mine = _set_of(rep, i)
        ref = set_from_dict(cs.set.to_dict())
        if method == "auto" and rep.chosen is not None:
            if cs.details["chosen"] != AUTO_CANDIDATES[int(rep.chosen[i])]:
                mine_name = AUTO_CANDIDATES[int(rep.chosen[i])]
                bad.append(f"counts {counts[i].tolist()}: auto chose "
                           f"{cs.details['chosen']!r}, the batch {mine_name!r}")
                continue
        lo_a, hi_a = mine.coordinate_bounds()
        lo_b, hi_b = ref.coordinate_bounds()
        probe = np.eye(counts.shape[1])
        same = (np.allclose(lo_a, lo_b, rtol=0, atol=1e-12)
                and np.allclose(hi_a, hi_b, rtol=0, atol=1e-12)
                and np.allclose(mine.min_linear(probe - probe.mean(0)),
                                ref.min_linear(probe - probe.mean(0)), rtol=0, atol=1e-12))
        if not same:
            bad.append(f"counts {counts[i].tolist()}: batch set {mine!r} != {ref!r}")
    return bad


def _binary_failure(q: np.ndarray, a: np.ndarray, b: np.ndarray, m: int) -> np.ndarray:
    """``P_q[q not in [a_X, b_X]]`` for ``X ~ Bin(m, q)``, every candidate ``q`` (exact: a
    sum of binomial probabilities over the runs of uncovered counts, by the CDF).

    When both ends are non-decreasing in the count (every method but the folded
    ``"box-lower"`` and possibly ``"auto"``) the covered counts are one run
    ``[k_lo, k_hi]`` found by bisection; otherwise every count is tested."""
    from scipy.stats import binom

    if (np.diff(a) >= 0).all() and (np.diff(b) >= 0).all():
        k_lo = np.searchsorted(b, q, side="left")        # first count with b_k >= q
        k_hi = np.searchsorted(a, q, side="right") - 1   # last count with a_k <= q
        out = binom.cdf(k_lo - 1, m, q) + binom.sf(k_hi, m, q)
        return np.where(k_lo > k_hi, 1.0, np.minimum(out, 1.0))
    out = (q[:, None] < a[None, :]) | (q[:, None] > b[None, :])       # (C, m + 1)
    pad = np.zeros((q.size, 1), dtype=np.int8)
    step = np.diff(np.concatenate([pad, out.astype(np.int8), pad], axis=1), axis=1)
    row, start = np.nonzero(step == 1)     # first uncovered count of each run
    _, stop = np.nonzero(step == -1)       # one past its last (same row-major order)
    qq = q[row]
    lower = binom.cdf(start - 1, m, qq)
    upper = binom.cdf(stop - 1, m, qq)
    mass = np.where(stop == m + 1, binom.sf(start - 1, m, qq), upper - lower)
    fail = np.zeros(q.size)
    np.add.at(fail, row, np.maximum(mass, 0.0))
    return np.minimum(fail, 1.0)


def _binary_candidates(a: np.ndarray, b: np.ndarray, m: int) -> np.ndarray:
    """Worst-case candidates for N = 2: just outside every set's ends (where the failure
    probability jumps up), plus a grid; for m > 1000 the ends of the smallest and largest
    counts and of a spread of the others."""
    ks = np.arange(m + 1)
    monotone = (np.diff(a) >= 0).all() and (np.diff(b) >= 0).all()
    keep, spread = (_BIN_KEEP, _BIN_SPREAD) if monotone else (_BIN_KEEP // 3, _BIN_SPREAD // 3)
    if m > 2 * keep + spread:
        ks = np.unique(np.concatenate([ks[:keep], ks[-keep:],
                                       np.linspace(0, m, spread).round().astype(int)]))
    q = np.concatenate([a[ks] - _ETA, b[ks] + _ETA, np.linspace(0.0, 1.0, 201)])
    return np.unique(q[(q >= 0.0) & (q <= 1.0)])


def _compositions(m: int, n: int) -> np.ndarray:
    """Every count vector of ``m`` samples over ``n`` categories, ``(C(m+n-1, n-1), n)``."""
    from itertools import combinations

    bars = np.array(list(combinations(range(m + n - 1), n - 1)), dtype=np.int64)
    bars = bars.reshape(-1, n - 1)
    ext = np.concatenate([np.full((bars.shape[0], 1), -1), bars,
                          np.full((bars.shape[0], 1), m + n - 1)], axis=1)
    return np.diff(ext, axis=1) - 1


def _multi_failure(q: np.ndarray, counts: np.ndarray, rep: _Rep) -> np.ndarray:
    """``P_q[q not in S(X)]`` for ``X ~ Multinomial(m, q)``: the exact sum over every outcome."""
    from scipy.special import gammaln

    m = int(counts[0].sum())
    logq = np.log(np.maximum(q, 1e-300))
    logc = gammaln(m + 1.0) - gammaln(counts + 1.0).sum(axis=1)
    pmf = np.exp(logq @ counts.T + logc[None, :])
    zero = (q == 0).astype(np.int64) @ (counts > 0).T.astype(np.int64) > 0
    pmf[zero] = 0.0
    miss: np.ndarray = (pmf * ~rep.member(q)).sum(axis=1)
    return miss


def _multi_candidates(counts: np.ndarray, rep: _Rep, gen: np.random.Generator
                      ) -> np.ndarray:
    """Worst-case candidates for N > 2: for every outcome's set and category ``x``, a
    distribution whose ``Q(x)`` lies just beyond the set's bound on ``Q(x)`` (the rest of
    the mass spread like the outcome's counts), the uniform distribution and random
    Dirichlet draws (concentrations 1 and 0.3)."""
    n = counts.shape[1]
    lo, hi = _coordinate_bounds(rep)
    rest = counts + 0.5
    out = [np.full((1, n), 1.0 / n), gen.dirichlet(np.ones(n), _MULTI_RANDOM),
           gen.dirichlet(np.full(n, 0.3), _MULTI_RANDOM // 2)]
    edge = []
    for x in range(n):
        for val in (hi[:, x] + _ETA, lo[:, x] - _ETA):
            ok = (val >= 0.0) & (val <= 1.0)
            w = rest[ok].copy()
            w[:, x] = 0.0
            q = w / w.sum(axis=1, keepdims=True) * (1.0 - val[ok])[:, None]
            q[:, x] = val[ok]
            edge.append(q)
    near = np.unique(np.concatenate(edge), axis=0)
    if near.shape[0] > _MULTI_EDGE:
        near = near[gen.choice(near.shape[0], _MULTI_EDGE, replace=False)]
    return np.concatenate([*out, near])


def _refine(q0: np.ndarray, fail: Callable[[np.ndarray], np.ndarray],
            gen: np.random.Generator, rounds: int = 3, width: int = 40) -> tuple[np.ndarray,
                                                                                 float]:
    """Local random search around the best candidates (the failure probability is piecewise
    smooth; its largest values sit at set boundaries). Returns the best point and value."""
    vals = fail(q0)
    order = np.argsort(vals)[-5:]
    top, top_v = q0[order], vals[order]
    step = 0.02
    for _ in range(rounds):
        noise = gen.standard_normal((top.shape[0], width, q0.shape[1])) * step
        noise -= noise.mean(axis=-1, keepdims=True)
        q = np.clip(top[:, None, :] + noise, 0.0, None).reshape(-1, q0.shape[1])
        q /= q.sum(axis=1, keepdims=True)
        allq, allv = np.concatenate([top, q]), np.concatenate([top_v, fail(q)])
        order = np.argsort(allv)[-5:]
        top, top_v = allq[order], allv[order]
        step /= 3.0
    return top[-1], float(top_v[-1])


class _ExactTally:
    """The exact cases of one row: the largest failure probability found, and where."""

    def __init__(self, family: str, method: str, delta: float, event: str) -> None:
        self.family, self.method, self.delta, self.event = family, method, delta, event
        self.cases = self.violations = 0
        self.worst, self.where = 0.0, ""
        self.mismatches: list[str] = []

    def add(self, value: float, where: str) -> None:
        self.cases += 1
        self.violations += bool(value > self.delta * (1.0 + 1e-9))
        if value > self.worst or not self.where:
            self.worst, self.where = value, where

    def row(self, alpha: float) -> AuditRow:
        rejected = self.violations > 0
        bad = len(self.mismatches)
        event = self.event + ("" if not bad else
                              "; batch/library MISMATCH: " + "; ".join(self.mismatches[:3]))
        return AuditRow(
            family=self.family, method=self.method, delta=self.delta, trials=self.cases,
            refused=0, violations=self.violations, rate=self.worst, upper=self.worst,
            p_value=0.0 if rejected else 1.0, rejected=rejected,
            inside=self.cases - self.violations, conditional_exceptions=bad,
            passed=not rejected and bad == 0, event=event, exact=True,
            worst_case=self.where)


def _spot_rows(k: int, salt: int) -> list[int]:
    """Which outcome of a batch of ``k`` is compared with the public constructor (one per
    batch, moving along the batches: the ends and the middle all get checked)."""
    return [(salt * 7919) % k]


def audit_exact(gen: np.random.Generator, deltas: Sequence[float], radius_scale: float,
                 tallies: list[Any], methods: Sequence[str] | None = None) -> None:
    """Exact coverage of every confidence method: the largest ``P[P not in S]`` over
    worst-case candidates ``P``, summed exactly over every sample outcome."""
    from ..confidence import METHODS

    comps = {(n, m): _compositions(m, n) for n, sizes in EXACT_M_MULTI for m in sizes}
    for d_i, delta in enumerate(deltas):
        check = d_i == 0  # the batched sets are compared with the library at one delta
        for method in (METHODS if methods is None else methods):
            tally = _ExactTally(
                "exact", method, delta,
                f"largest exact P[P not in confidence_set(counts, delta, {method!r})] over "
                "worst-case true distributions P exceeds delta (N = 2: binomial sums for m = "
                f"{EXACT_M_BINARY[0]}..{EXACT_M_BINARY[-1]}; N = 3..5: every multinomial "
                "outcome enumerated)")
            for m in EXACT_M_BINARY:
                ks = np.arange(m + 1)
                counts = np.stack([ks, m - ks], axis=1)
                rep = _rep_of(counts, delta, method)
                if check:
                    tally.mismatches += _spot_check(counts, rep, delta, method,
                                                    _spot_rows(m + 1, m))
                a, b = rep.scaled(radius_scale).interval()
                q = _binary_candidates(a, b, m)
                f = _binary_failure(q, a, b, m)
                j = int(np.argmax(f))
                tally.add(float(f[j]), f"N=2, m={m}, P=({float(q[j])!r}, {float(1 - q[j])!r})")
            for n, sizes in EXACT_M_MULTI:
                for m in sizes:
                    counts = comps[n, m]
                    rep = _rep_of(counts, delta, method)
                    if check:
                        tally.mismatches += _spot_check(counts, rep, delta, method,
                                                        _spot_rows(counts.shape[0], m + n))
                    small = rep.scaled(radius_scale)
                    q0 = _multi_candidates(counts, small, gen)
                    def fail(q: np.ndarray, c: np.ndarray = counts, r: _Rep = small
                             ) -> np.ndarray:
                        return _multi_failure(q, c, r)

                    best_q, best_v = _refine(q0, fail, gen)
                    tally.add(best_v, f"N={n}, m={m}, P={[float(x) for x in best_q]!r}")
            tallies.append(tally)
