"""The simulated families of :func:`run_audit` (design, laplace, gaussian, coverage,
release) and :func:`run_audit` itself, which runs them and the exact family
(:mod:`~pmlkit.audit._exact`); the method is in :mod:`pmlkit.audit`."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._deprecation import renamed_parameter
from .._optional import require
from .._progress import report
from .._validation import check_count, check_delta, check_real, exceeds, fmt
from ..errors import PMLError, ValidationError
from ._exact import EXACT_M_BINARY, EXACT_M_MULTI, audit_exact
from ._results import CONCENTRATIONS, DEFAULT_DELTAS, FAMILIES, AuditResult, Tally

_DESIGN_SIZES = (5, 30, 100, 1_000, 10_000)
_DESIGN_MAX_N = 12
_HARD_SIZES = (5, 10, 20, 30, 50)
_DESIGN_EPS = (0.5, 1.0, 2.0)
_EXACT_MAX_N = 6            # the exact robust designer enumerates 2^N extreme rays
_MI_MAX_N = 8               # beyond, design_from_samples runs with the (linear) accuracy
#: Confidence sets of design_from_samples audited: the paper's ball, the nearly tight
#: Clopper-Pearson box, and the automatic choice.
_DESIGN_CONFIDENCE = ("l1", "box-cp", "auto")
_ADDITIVE_SIZES = (50, 200, 1_000, 5_000)
_LAPLACE_EPS = (0.1, 0.5, 1.0, 2.0)
_GAUSS_SIGMAS = (1.5, 2.0)
_GAUSS_CONFIDENCE = ("box-cp",)   # beyond the paper's ball (calibrate_gaussian)
_GAUSS_GRID = np.concatenate([np.geomspace(0.01, 1.0, 25), np.geomspace(1.1, 12.0, 20)])


# --------------------------------------------------------------------------------------
# drawing the truth
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Truth:
    p: np.ndarray        # true distribution
    counts: np.ndarray   # multinomial counts of the m samples
    m: int
    concentration: str

    @property
    def p_hat(self) -> np.ndarray:
        return self.counts / self.m

    def samples(self) -> np.ndarray:
        return np.repeat(np.arange(self.p.size), self.counts)


def _draw_truths(gen: np.random.Generator, trials: int, sizes: Sequence[int],
                 n_low: int, n_high: int) -> list[_Truth]:
    """``trials`` true distributions (N uniform in ``[n_low, n_high]``, a concentration and a
    sample size cycled so that each appears equally often) with their sample counts."""
    names = [*CONCENTRATIONS, "edge"]
    out = []
    for t in range(trials):
        n = int(gen.integers(n_low, n_high + 1))
        name = names[t % len(names)]
        m = int(sizes[(t // len(names)) % len(sizes)])
        if name == "edge":
            p = _edge_truth(gen, n, m)
        else:
            p = gen.dirichlet(np.full(n, CONCENTRATIONS[name]))
        p = np.maximum(p, 0.0)
        p = p / p.sum()
        out.append(_Truth(p, gen.multinomial(m, p), m, name))
    return out


# --------------------------------------------------------------------------------------
# the families
# --------------------------------------------------------------------------------------

def _shrunk(uset: Any, center: np.ndarray, s: float) -> Any:
    """The deliberately broken variant of a set: shrunk towards the estimate ``center`` by
    ``s`` (an l1 radius times ``s``; a box's bounds pulled towards the estimate by ``s``)."""
    from ..sets import Box, L1Ball, L1BoxSet

    if s == 1.0:
        return uset
    c = np.asarray(center, dtype=np.float64)
    if isinstance(uset, L1Ball):
        return L1Ball(uset.center, uset.radius * s)
    if isinstance(uset, Box):
        return Box(np.clip(c + s * (uset.lower - c), 0, 1), np.clip(c + s * (uset.upper - c), 0, 1))
    if isinstance(uset, L1BoxSet):
        return L1BoxSet(uset.center, uset.radius * s, np.clip(c + s * (uset.lower - c), 0, 1),
                        np.clip(c + s * (uset.upper - c), 0, 1))
    raise ValidationError(f"cannot shrink a set of kind {uset.kind!r}")  # pragma: no cover


def _lp_worst_case(w: np.ndarray, uset: Any, inner: np.ndarray) -> tuple[float, np.ndarray]:
    """The largest PML over the set, found independently of the library's greedy
    minimisers: for every output column ``y`` a generic HiGHS LP gives a distribution
    ``Q_y`` of the set minimising ``P_Y(y) = Q . W[:, y]`` (a worst-case true distribution,
    on the set's boundary), pulled towards the interior point ``inner`` until the set
    contains it to within 1e-12 (LP tolerances), and the library's :func:`pmlkit.pml` is
    evaluated there. Returns the largest value (``inf`` when some column can have
    ``P_Y(y) = 0``) and the distribution that attains it."""
    from scipy.optimize import linprog
    from scipy.sparse import block_diag, csr_matrix, hstack, identity, vstack

    from ..leakage import pml
    from ..sets import Box, L1Ball, L1BoxSet, VertexSet

    n, m_out = w.shape
    if isinstance(uset, VertexSet):
        verts = np.asarray(uset.vertices)
        vals = [float(np.nanmax(np.where(np.isnan(pq := pml(w, q)), -np.inf, pq)))
                for q in verts]
        j = int(np.argmax(vals))
        return vals[j], verts[j]
    ball = isinstance(uset, L1Ball | L1BoxSet)
    lo = np.asarray(getattr(uset, "lower", np.zeros(n)), dtype=np.float64)
    hi = np.asarray(getattr(uset, "upper", np.ones(n)), dtype=np.float64)
    if not isinstance(uset, L1Ball | Box | L1BoxSet):  # pragma: no cover
        raise ValidationError(f"no LP for a set of kind {uset.kind!r}")
    eye = identity(n, format="csr")
    if ball:  # variables (Q, t): |Q - c| <= t, sum t <= r
        u: Any = uset
        c = np.asarray(u.center, dtype=np.float64)
        a_ub = vstack([hstack([eye, -eye]), hstack([-eye, -eye]),
                       csr_matrix(np.concatenate([np.zeros(n), np.ones(n)])[None, :])])
        b_ub = np.concatenate([c, -c, [float(u.radius)]])
        a_eq = csr_matrix(np.concatenate([np.ones(n), np.zeros(n)])[None, :])
        bnds = [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)] + [(0, 2)] * n
        width = 2 * n
    else:
        a_ub, b_ub = None, None
        a_eq = csr_matrix(np.ones((1, n)))
        bnds = [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]
        width = n
    cols = [y for y in range(m_out) if w[:, y].max() > 0]
    k = len(cols)
    obj = np.concatenate([np.concatenate([w[:, y], np.zeros(width - n)]) for y in cols])
    res = linprog(obj, A_ub=None if a_ub is None else block_diag([a_ub] * k),
                  b_ub=None if b_ub is None else np.tile(b_ub, k),
                  A_eq=block_diag([a_eq] * k), b_eq=np.ones(k), bounds=bnds * k,
                  method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                           "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:  # pragma: no cover - the set is non-empty by construction
        raise PMLError(f"the worst-case LP failed: {res.message}")
    best, arg = -math.inf, np.asarray(inner, dtype=np.float64)
    for i, y in enumerate(cols):
        q = np.clip(res.x[i * width:i * width + n], 0.0, None)
        q = q / q.sum()
        for lam in (1.0, 1 - 1e-9, 1 - 1e-7, 1 - 1e-5, 1 - 1e-3, 0.0):
            cand = inner + lam * (q - inner)
            if uset.contains(cand, tol=1e-12):
                break
        py = float(cand @ w[:, y])
        v = math.inf if py <= 0 else float(pml(w, cand)[y])
        if v > best:
            best, arg = v, cand
    return best, arg


def _edge_truth(gen: np.random.Generator, n: int, m: int) -> np.ndarray:
    """A true distribution on the edge of what ``m`` samples can see: about half of the
    categories get a probability of ``u / m`` with ``u`` uniform in ``[0.2, 3]`` (so they are
    seen 0-3 times: where the confidence sets' lower ends, the Laplace scale and the
    worst cases sit), the others share the rest."""
    k = max(1, n // 2)
    small = gen.uniform(0.2, 3.0, k) / m
    if small.sum() >= 0.5:
        small *= 0.5 / small.sum()
    p = np.full(n, (1.0 - small.sum()) / (n - k))
    idx = gen.permutation(n)[:k]
    p[idx] = small
    out: np.ndarray = p / p.sum()
    return out


def _inside(uset_dict: Any, p: np.ndarray) -> bool:
    from ..sets import set_from_dict

    return bool(set_from_dict(dict(uset_dict)).contains(p))


def _try(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, or ``None`` when the library refuses with a PMLError (a refusal
    is not a violation; it is counted as ``refused``)."""
    try:
        return fn(*args, **kwargs)
    except PMLError:
        return None


def _design_one(truth: _Truth, eps: float, delta: float, conf: str, radius_scale: float
                ) -> tuple[Any, float, Any]:
    """The mechanism, its certified eps and its set: ``design_from_samples`` as shipped, or
    (``radius_scale != 1``) the same design over the shrunk set."""
    from .. import design
    from ..confidence import confidence_set
    from ..estimation import EmpiricalDistribution
    from ..sets import set_from_dict

    n = truth.p.size
    util = "mutual_information" if n <= _MI_MAX_N else "accuracy"
    if radius_scale == 1.0:
        res = design.design_from_samples(EmpiricalDistribution.from_counts(truth.counts),
                                         eps, delta, confidence=conf, utility=util)
        return (res.mechanism, float(res.guarantee.certified_eps),
                set_from_dict(res.guarantee.set))
    cs = confidence_set(truth.counts, delta, confidence=conf)
    uset = _shrunk(cs.set, truth.p_hat, radius_scale)
    mech = design.optimal_mechanism_for_set(uset, eps, prior=truth.p_hat, utility=util)
    assert mech.certified_eps is not None  # every designer certifies
    return mech, float(mech.certified_eps), uset


def _audit_design(truths: list[_Truth], small: list[_Truth], eps_of: Sequence[float],
                  deltas: Sequence[float], radius_scale: float, tallies: list[Tally],
                  hard: Sequence[_Truth] = ()) -> None:
    """``truths`` (N in 2..12) feed ``design_from_samples`` with every confidence method (a
    quarter of the trials each, shifted so that the methods see different truths), and so do
    ``hard`` ones (N = 7..12 from 5 to 50 samples: wide sets over many categories, where
    worst cases are hardest to certify; a twelfth of the trials per method); ``small``
    (N <= _EXACT_MAX_N) the exact robust design and the paper's fixed-prior design at eps'.

    Besides the true P, every design is checked at its own worst case: a generic LP finds
    the distribution of the certified set that leaks most (:func:`_lp_worst_case`); leaking
    more than the certified eps there is a false certificate (a conditional exception). A
    :class:`~pmlkit.errors.CertificationError` or a crash on valid input is one too."""
    import warnings

    from .. import design
    from ..confidence import METHODS
    from ..errors import CertificationError, PMLWarning
    from ..estimation import l1_radius
    from ..leakage import eps_min
    from ..sets import L1Ball

    per = max(1, -(-len(truths) // 4))
    for delta in deltas:
        robust = Tally("design", "exact robust", delta,
                        "true eps_min(W, P) > eps for optimal_mechanism(p_hat, eps, "
                        "beta=beta*(delta))")
        fixed = Tally("design", "fixed prior at eps'", delta,
                       "true eps_min(W, P) > eps for optimal_mechanism(p_hat, eps') "
                       "(eq. LPsubset; refused unless beta < 2 min p_hat and eps' >= 0)")
        fulls = []
        with warnings.catch_warnings():
            # "certified lower bound" notices: the guarantee is still certified, audit it
            warnings.simplefilter("ignore", PMLWarning)
            for j, conf in enumerate(METHODS):
                full = Tally("design", "design_from_samples" + (
                    "" if conf == "l1" else f"[{conf}]"), delta,
                    "true eps_min(W, P) > eps for the mechanism of design_from_samples("
                    f"confidence={conf!r}) (mutual information for N <= {_MI_MAX_N}, "
                    "accuracy above); conditional exceptions also count a false certificate "
                    "at the LP worst case of the set, and a CertificationError or crash")
                n_hard = max(1, len(hard) // len(METHODS)) if hard else 0
                cases = [(truths[(j * per + i) % len(truths)], float(eps_of[(j * per + i)
                                                                             % len(truths)]))
                         for i in range(per if truths else 0)]
                cases += [(hard[(j * n_hard + i) % len(hard)], _DESIGN_EPS[i % 3])
                          for i in range(n_hard)]
                for truth, eps in cases:
                    where = f"N={truth.p.size}, m={truth.m}, eps={eps:g}"
                    try:
                        w, cert, uset = _design_one(truth, eps, delta, conf, radius_scale)
                    except CertificationError as exc:
                        full.add(False, False, True, f"{where}: CertificationError {exc}")
                        continue
                    except PMLError:
                        full.refused += 1
                        continue
                    except Exception as exc:  # a crash on valid input is a failure
                        full.add(False, False, True, f"{where}: {type(exc).__name__} {exc}")
                        continue
                    mat = np.asarray(getattr(w, "matrix", w), dtype=np.float64)
                    true_eps = eps_min(mat, truth.p)
                    ins = bool(uset.contains(truth.p))
                    lp_eps, q_star = _lp_worst_case(mat, uset, truth.p_hat)
                    note = ""
                    if lp_eps > cert + 1e-7:
                        note = (f"{where}: leaks {lp_eps:.6g} at {fmt(np.round(q_star, 7))} "
                                f"in the set, certified {cert:.6g}")
                    elif ins and exceeds(true_eps, cert):
                        note = f"{where}: true eps {true_eps:.6g} > certified {cert:.6g}"
                    elif exceeds(cert, eps):
                        note = f"{where}: certified {cert:.6g} > target {eps:g}"
                    full.add(exceeds(true_eps, eps), ins, bool(note), note)
                fulls.append(full)
            for t, truth in enumerate(small):
                eps = float(eps_of[t])
                beta = radius_scale * l1_radius(delta, m=truth.m, n=truth.p.size)
                inside = L1Ball(truth.p_hat, beta).contains(truth.p)
                w = _try(design.optimal_mechanism, truth.p_hat, eps, beta=beta)
                if w is None:
                    robust.refused += 1
                else:
                    true_eps = eps_min(w, truth.p)
                    robust.add(exceeds(true_eps, eps), inside,
                               inside and exceeds(true_eps, eps))
                ep = design.eps_prime(eps, beta)  # eq. optimalepsdash
                w = None
                if ep >= 0 and beta < 2 * truth.p_hat.min():
                    w = _try(design.optimal_mechanism, truth.p_hat, ep)
                if w is None:
                    fixed.refused += 1
                else:
                    true_eps = eps_min(w, truth.p)
                    fixed.add(exceeds(true_eps, eps), inside,
                              inside and exceeds(true_eps, eps))
        tallies += [x for x in (*fulls, robust, fixed) if x.trials or x.refused]


def _binary_truths(gen: np.random.Generator, trials: int) -> list[_Truth]:
    """Binary true priors ``(P(-1), P(+1))`` from Beta(a, a) with the same concentrations,
    and "edge" priors whose smaller probability is ``u / m``, ``u`` uniform in
    ``[0.2, 3]`` (where the lower confidence bound on ``p_min``, and so the Laplace scale,
    is most fragile)."""
    names = [*CONCENTRATIONS, "edge"]
    out = []
    for t in range(trials):
        name = names[t % len(names)]
        m = int(_ADDITIVE_SIZES[(t // len(names)) % len(_ADDITIVE_SIZES)])
        if name == "edge":
            q = _edge_truth(gen, 2, m)[1]
        else:
            q = float(gen.beta(CONCENTRATIONS[name], CONCENTRATIONS[name]))
        p = np.array([1.0 - q, q])
        out.append(_Truth(p, gen.multinomial(m, p), m, name))
    return out


def _labels(truth: _Truth) -> np.ndarray:
    """The sample as labels ``-1`` / ``+1`` (``+1`` is the positive label)."""
    return np.repeat(np.array([-1, 1]), truth.counts)


def _audit_laplace(truths: list[_Truth], eps_of: Sequence[float], deltas: Sequence[float],
                   radius_scale: float, tallies: list[Tally]) -> None:
    from ..additive import calibrate_laplace, laplace_eps, laplace_scale, laplace_scale_uncertain
    from ..confidence import METHODS, confidence_set
    from ..estimation import l1_radius
    from ..leakage import eps_min
    from ..sets import L1Ball

    for delta in deltas:
        methods = METHODS
        if delta >= 1:
            continue
        for method in methods:
            tally = Tally("laplace", f"calibrate_laplace[{method}]", delta,
                           "true laplace_eps(b, min P) > eps for the scale b calibrated "
                           f"from the sample ({method} set)")
            for t, truth in enumerate(truths):
                eps = float(eps_of[t])
                if radius_scale == 1.0:
                    try:
                        cal = calibrate_laplace(_labels(truth), eps, delta, positive=1,
                                                confidence=method)
                    except PMLError:  # e.g. a sample holding one label only
                        tally.refused += 1
                        continue
                    b, uset = cal.b, cal.uncertainty_set
                    ins = _inside(uset, truth.p)
                elif method == "l1":
                    beta = radius_scale * l1_radius(delta, m=truth.m, n=2)
                    b = laplace_scale_uncertain(eps, float(truth.p_hat.min()), beta=beta)
                    ins = L1Ball(truth.p_hat, beta).contains(truth.p)
                else:  # the variant: calibrate_laplace's rule over the shrunk set
                    cs = _try(confidence_set, truth.counts, delta, confidence=method)
                    if cs is None:
                        tally.refused += 1
                        continue
                    uset = _shrunk(cs.set, truth.p_hat, radius_scale)
                    lo, _ = uset.coordinate_bounds()
                    b = laplace_scale(eps, max(0.0, min(float(np.min(lo)), 0.5)))
                    ins = bool(uset.contains(truth.p))
                if b == 0.0:  # no noise needed: the mechanism releases X itself
                    true_eps = eps_min(np.eye(2), truth.p)
                else:
                    true_eps = laplace_eps(b, float(truth.p.min()))
                bad = exceeds(true_eps, eps)
                tally.add(bad, ins, ins and bad)
            tallies.append(tally)


def _audit_gaussian(truths: list[_Truth], gen: np.random.Generator, deltas: Sequence[float],
                    radius_scale: float, tallies: list[Tally]) -> None:
    from ..additive import (
        calibrate_gaussian,
        gaussian_delta1,
        gaussian_grid_violation_probability,
        gaussian_tradeoff,
        gaussian_tradeoff_interval,
        gaussian_violation_probability,
    )
    from ..estimation import l1_radius
    from ..sets import L1Ball

    grid = _GAUSS_GRID
    u = gen.random((len(deltas), len(truths)))
    sigmas = [(_GAUSS_SIGMAS[t % len(_GAUSS_SIGMAS)]) for t in range(len(truths))]
    for d_i, delta in enumerate(deltas):
        if delta >= 1:
            continue
        delta2 = delta / 2.0
        for method in ("paper", "direct"):
            tally = Tally("gaussian", f"gaussian_tradeoff[{method}]", delta,
                           "{P outside the l1-ball} or {Y in E_eps_out(P)} (drawn exactly as "
                           "U < P_Y(E_eps_out(P))), for the smallest grid eps whose claimed "
                           f"delta <= {delta:g} (delta2 = delta/2, method {method!r})")
            tally.tail = True
            for t, truth in enumerate(truths):
                sigma = sigmas[t]
                beta = l1_radius(delta2, m=truth.m, n=2)
                if radius_scale == 1.0:
                    res = _try(gaussian_tradeoff, sigma, truth.p_hat, m=truth.m,
                               delta2=delta2, eps=grid, curve=method)
                else:
                    beta *= radius_scale
                    q = float(truth.p_hat[1])
                    lows, highs = L1Ball(np.array([1.0 - q, q]), beta).coordinate_bounds()
                    res = _try(gaussian_tradeoff_interval, sigma, truth.p_hat,
                               float(lows[1]), float(highs[1]), delta2=delta2, eps=grid,
                               curve=method)
                if res is None:
                    tally.refused += 1
                    continue
                eps_out, delta_out = res
                ok = np.flatnonzero((np.asarray(delta_out) <= delta)
                                    & np.isfinite(np.asarray(eps_out)))
                if ok.size == 0:
                    tally.refused += 1
                    continue
                k = int(ok[0])
                e_out = float(np.asarray(eps_out)[k])
                ins = L1Ball(truth.p_hat, beta).contains(truth.p)
                out_prob = gaussian_violation_probability(sigma, tuple(truth.p), e_out)
                violated = (not ins) or bool(u[d_i, t] < out_prob)
                # conditional check: inside the ball, the output tail is at most delta1
                d1 = float(gaussian_delta1(sigma, truth.p_hat, beta=beta, eps=grid[k]))
                tally.add(violated, ins, ins and out_prob > d1 + 1e-12)
            tallies.append(tally)
        if radius_scale != 1.0:
            continue
        for conf in _GAUSS_CONFIDENCE:
            pair = {c: Tally("gaussian", f"calibrate_gaussian[{conf}, {c}]", delta,
                              "{P outside the set} or {Y in E_eps_out(P)} (as above) for "
                              f"calibrate_gaussian(confidence={conf!r}), curve {c!r}")
                    for c in ("paper", "direct")}
            for tl in pair.values():
                tl.tail = True
            for t, truth in enumerate(truths):
                sigma = sigmas[t]
                cal = _try(calibrate_gaussian, _labels(truth), sigma, delta2, positive=1,
                           eps=grid, confidence=conf)
                for curve, tally in pair.items():
                    if cal is None:
                        tally.refused += 1
                        continue
                    eps_out = np.asarray(getattr(cal, f"{curve}_eps"))
                    delta_out = np.asarray(getattr(cal, f"{curve}_delta"))
                    ok = np.flatnonzero((delta_out <= delta) & np.isfinite(eps_out))
                    if ok.size == 0:
                        tally.refused += 1
                        continue
                    k = int(ok[0])
                    env = np.asarray(cal.envelope_eps)
                    if env.size == eps_out.size and math.isfinite(float(env[k])):
                        tally.envelopes.append(float(env[k]))
                        tally.survives.append(bool(np.asarray(
                            cal.survives_post_processing)[k]))
                    ins = _inside(cal.uncertainty_set, truth.p)
                    # the calibration states the guarantee of the released grid mechanism
                    # (what gaussian_noise outputs), so its true tail is the grid's
                    out_prob = gaussian_grid_violation_probability(
                        sigma, tuple(truth.p), float(eps_out[k]), cal.granularity)
                    violated = (not ins) or bool(u[d_i, t] < out_prob)
                    tally.add(violated, ins, ins and out_prob > float(cal.delta1[k]) + 1e-12)
            tallies.extend(pair.values())


def _audit_coverage(truths: list[_Truth], deltas: Sequence[float], radius_scale: float,
                    tallies: list[Tally]) -> None:
    from ..confidence import METHODS, confidence_set

    for delta in deltas:
        for method in METHODS:
            tally = Tally("coverage", method, delta,
                           f"true P not in confidence_set(counts, delta, confidence={method!r})")
            for truth in truths:
                cs = _try(confidence_set, truth.counts, delta, confidence=method)
                if cs is None:
                    tally.refused += 1
                    continue
                ins = bool(_shrunk(cs.set, cs.p_hat, radius_scale).contains(truth.p))
                tally.add(not ins, ins, False)
            tallies.append(tally)


_RELEASE_SIZES = (30, 300, 3_000)
_RELEASE_ROWS = 400
_RELEASE_MAX_N = 8


def _release_one(truth: _Truth, eps: float, delta: float, conf: str, folder: Any,
                 gen: np.random.Generator) -> tuple[float, float, bool, str]:
    """One end-to-end release: design from the reference counts, save the mechanism file,
    load it back, privatise a CSV of fresh records (disjoint from the reference sample)
    with :func:`pmlkit.privatize_file`, read the output back. Returns the true eps of the
    mechanism read back from the file, its certified eps, whether the truth lies in the
    set the file records, and a description of anything wrong with the release."""
    from .. import design
    from ..estimation import EmpiricalDistribution

    n = truth.p.size
    labels = [f"c{i}" for i in range(n)]
    res = design.design_from_samples(
        EmpiricalDistribution.from_counts(truth.counts, categories=labels), eps, delta,
        confidence=conf, utility="mutual_information" if n <= _MI_MAX_N else "accuracy")
    try:  # from here on, a refusal is the release path refusing its own valid design
        return _release_rest(truth, res, labels, folder, gen)
    except PMLError as exc:
        return 0.0, float(res.guarantee.certified_eps), False, (
            f"the release path refused its own design: {type(exc).__name__}: {exc}")


def _pooled_chi_square(table: np.ndarray, w: np.ndarray) -> tuple[float, int]:
    """Pearson's statistic of the released pairs ``table[x, y]`` against ``n_x W[x, y]``
    and its degrees of freedom, row by row. A cell expected fewer than 5 times is merged
    into its row's largest cell: Pearson's chi-square law does not hold for such cells
    (one draw where 0.07 were expected alone gives a statistic of 13), and merging cells
    keeps the test valid. Impossible pairs (``W = 0``) are left out: they are checked
    exactly apart.

    Examples
    --------
    >>> w = np.array([[0.9995, 0.0005], [0.5, 0.5]])
    >>> stat, dof = _pooled_chi_square(np.array([[98.0, 2.0], [40.0, 60.0]]), w)
    >>> dof, round(stat, 3)  # row 0's rare cell merged: one cell, no degree of freedom
    (1, 4.0)
    """
    stat, dof = 0.0, 0
    for t_row, w_row in zip(table, w, strict=True):
        n_x = float(t_row.sum())
        if n_x == 0:
            continue
        expected = n_x * w_row
        use = expected > 0
        obs, exp = t_row[use].astype(np.float64), expected[use]
        small = exp < 5
        if small.any() and not small.all():
            big = int(np.argmax(exp))
            obs[big] += obs[small].sum()
            exp[big] += exp[small].sum()
            obs, exp = obs[~small], exp[~small]
        elif small.all():
            obs, exp = np.array([obs.sum()]), np.array([exp.sum()])
        stat += float(((obs - exp) ** 2 / exp).sum())
        dof += obs.size - 1
    return stat, dof


def _release_rest(truth: _Truth, res: Any, labels: list[str], folder: Any,
                  gen: np.random.Generator) -> tuple[float, float, bool, str]:
    """:func:`_release_one` after the design: file, privatisation, read back, checks."""
    pd = require("pandas", "the audit's tables")

    from ..mechanism import Mechanism
    from ..privatization import privatize_file
    from ..sets import set_from_dict

    n = truth.p.size
    path = folder / "mechanism.json"
    res.mechanism.save(path)
    mech = Mechanism.load(path)
    w = np.asarray(mech.matrix, dtype=np.float64)
    cert = float(mech.certified_eps) if mech.certified_eps is not None else np.inf
    problems = []
    if not (np.array_equal(w, np.asarray(res.mechanism.matrix))
            and cert == res.guarantee.certified_eps):
        problems.append("the file does not give back the designed mechanism")
    x = gen.choice(n, size=_RELEASE_ROWS, p=truth.p)
    src, out = folder / "records.csv", folder / "released.csv"
    pd.DataFrame({"id": np.arange(x.size), "x": np.asarray(labels)[x]}).to_csv(src,
                                                                               index=False)
    if out.exists():
        out.unlink()
    privatize_file(mech, src, out, "x", into="y", manifest=False, keep_raw=True)
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    if list(got["id"]) != [str(i) for i in range(x.size)] or \
            list(got["x"]) != list(np.asarray(labels)[x]):
        problems.append("the released file changed or reordered the records")
    outs = [str(v) for v in mech.output_labels]
    y = np.array([outs.index(v) if v in outs else -1 for v in got["y"]])
    if (y < 0).any():
        problems.append(f"released values outside the mechanism's outputs: "
                        f"{sorted(set(got['y'][y < 0]))[:3]}")
    else:
        table = np.zeros_like(w)
        np.add.at(table, (x, y), 1.0)
        if (table[w == 0] > 0).any():
            problems.append("a released (input, output) pair the mechanism cannot produce")
        from scipy.stats import chi2

        stat, dof = _pooled_chi_square(table, w)
        if dof and chi2.sf(stat, dof) < 1e-6:
            problems.append(f"the released column does not follow the mechanism "
                            f"(chi-square {stat:.4g} on {dof} degrees of freedom)")
    uset = set_from_dict(res.guarantee.set)
    lp_eps, q = _lp_worst_case(w, uset, truth.p_hat)
    if lp_eps > cert + 1e-7:
        problems.append(f"leaks {lp_eps:.6g} at {fmt(np.round(q, 7))} in the recorded set, "
                        f"certified {cert:.6g}")
    from ..leakage import eps_min

    return eps_min(w, truth.p), cert, bool(uset.contains(truth.p)), "; ".join(problems)


def _audit_release(truths: list[_Truth], eps_of: Sequence[float], gen: np.random.Generator,
                   deltas: Sequence[float], tallies: list[Tally]) -> None:
    """The end-to-end release path (design -> mechanism file -> file privatisation ->
    true leakage of the released column), the confidence method cycled over the trials."""
    import tempfile
    import warnings
    from pathlib import Path

    from ..confidence import METHODS
    from ..errors import CertificationError, PMLWarning

    with tempfile.TemporaryDirectory(prefix="pmlkit-audit-") as tmp:
        folder = Path(tmp)
        for delta in deltas:
            tally = Tally("release", "design -> file -> privatize_file", delta,
                           "true eps_min(W, P) > eps for the mechanism read back from its "
                           "file, released by privatize_file on a CSV of fresh records; "
                           "conditional exceptions: a released column that the certified "
                           "mechanism cannot explain, altered records, a false certificate")
            for t, truth in enumerate(truths):
                eps, conf = float(eps_of[t]), METHODS[t % len(METHODS)]
                where = f"N={truth.p.size}, m={truth.m}, eps={eps:g}, {conf}"
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", PMLWarning)
                        true_eps, cert, ins, problem = _release_one(truth, eps, delta, conf,
                                                                     folder, gen)
                except CertificationError as exc:
                    tally.add(False, False, True, f"{where}: CertificationError {exc}")
                    continue
                except PMLError:
                    tally.refused += 1
                    continue
                except Exception as exc:  # a crash on valid input is a failure
                    tally.add(False, False, True, f"{where}: {type(exc).__name__} {exc}")
                    continue
                if not problem and ins and exceeds(true_eps, cert):
                    problem = f"true eps {true_eps:.6g} > certified {cert:.6g}"
                tally.add(exceeds(true_eps, eps), ins, bool(problem),
                          f"{where}: {problem}" if problem else "")
            tallies.append(tally)


# --------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------

@renamed_parameter(version="0.2", seed="rng")
def run_audit(*, trials: int = 60, rng: int | None = 0,
              deltas: Sequence[float] = DEFAULT_DELTAS,
              families: Sequence[str] = FAMILIES, alpha: float = 1e-3,
              radius_scale: float = 1.0,
              progress: Callable[[str], None] | None = None) -> AuditResult:
    """Audit pmlkit's (eps, delta) guarantees by simulation (see the module docstring).

    Parameters
    ----------
    trials
        Trials per delta of the design family (a quarter per confidence method, plus
        ``trials // 12`` hard cases each); the cheaper families use more (Laplace 3x,
        coverage and Gaussian 2x), the release path ``trials // 4``. The ``exact`` family
        does not depend on it. Each trial draws a fresh true distribution and sample.
    rng
        Integer seed of the simulation (research reproducibility; the audit protects no
        one, so a seeded PCG64 via :func:`pmlkit.rng.resolve_rng` is appropriate). ``None``
        draws a fresh secure seed. Formerly ``seed`` (still accepted, with a
        DeprecationWarning).
    deltas
        Claimed failure probabilities to audit, each in ``(0, 1)``.
    families
        A subset of :data:`FAMILIES`.
    alpha
        Level of the one-sided binomial test and of the Clopper-Pearson bound.
    radius_scale
        Shrinks every confidence set towards its estimate (``1`` = the library as
        shipped): l1 radii times the factor, box bounds pulled towards the estimate.
        Values ``< 1`` build deliberately broken variants that the audit must reject (the
        Gaussian rows shrink the l1 ball only; the release path is skipped).
    progress
        Optional callback receiving one line per finished family.

    Returns
    -------
    AuditResult
        With ``.table`` (pandas), ``.passed`` and a printable summary.

    Examples
    --------
    A small design audit (the suite and ``pmlkit audit`` run far more trials):

    >>> res = run_audit(trials=2, rng=0, families=("design",), deltas=(0.3,))
    >>> res.passed, {row.family for row in res.rows}
    (True, {'design'})

    Notes
    -----
    Beyond the paper: the paper proves its guarantees but reports no audit. Violations are
    computed exactly from the true distribution (no Monte Carlo over outputs except the one
    uniform draw that realises the Gaussian output event, and the released file of the
    release path); the ``exact`` family has no Monte Carlo at all.
    """
    from ..rng import resolve_rng

    t = check_count(trials, "trials", minimum=1)
    a = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    scale = check_real(radius_scale, "radius_scale", low=0.0, low_open=True)
    try:
        ds = [check_delta(d, "deltas", allow_one=False) for d in deltas]
    except TypeError:
        raise ValidationError(f"deltas must be a sequence of numbers, got {fmt(deltas)}") \
            from None
    if not ds:
        raise ValidationError("deltas must not be empty")
    fams = list(families) if not isinstance(families, str) else [families]
    unknown = [f for f in fams if f not in FAMILIES]
    if unknown or not fams:
        raise ValidationError(
            f"families must be a non-empty subset of {', '.join(FAMILIES)}, got {fmt(families)}")
    if rng is None:
        seed_value: int | None = None
        source = resolve_rng(None)
    else:
        if isinstance(rng, bool) or not isinstance(rng, int | np.integer) or rng < 0:
            raise ValidationError(
                f"rng must be an integer seed >= 0 or None, got {fmt(rng)}")
        seed_value = int(rng)
        source = resolve_rng(seed_value)
    streams = [s.generator for s in source.spawn(6)]  # one per family: independent of the rest

    tallies: list[Tally] = []
    say = progress or (lambda _msg: None)
    running = [f for f in FAMILIES if f in fams and (f != "release" or scale == 1.0)]

    def start(family: str) -> None:
        report("audit.family", family=family, index=running.index(family) + 1,
               total=len(running))

    if "design" in fams:
        start("design")
        truths = _draw_truths(streams[0], t, _DESIGN_SIZES, 2, _DESIGN_MAX_N)
        small = _draw_truths(streams[0], t, _DESIGN_SIZES, 2, _EXACT_MAX_N)
        hard = _draw_truths(streams[0], max(1, t // 12) * 7, _HARD_SIZES, 7, _DESIGN_MAX_N)
        eps_of = [_DESIGN_EPS[i % len(_DESIGN_EPS)] for i in range(t)]
        _audit_design(truths, small, eps_of, ds, scale, tallies, hard)
        say(f"design: {t} trials per delta")
    if "laplace" in fams:
        start("laplace")
        truths = _binary_truths(streams[1], 3 * t)
        eps_of = [_LAPLACE_EPS[i % len(_LAPLACE_EPS)] for i in range(3 * t)]
        _audit_laplace(truths, eps_of, ds, scale, tallies)
        say(f"laplace: {3 * t} trials per delta")
    if "gaussian" in fams:
        start("gaussian")
        truths = _binary_truths(streams[2], 2 * t)
        _audit_gaussian(truths, streams[2], ds, scale, tallies)
        say(f"gaussian: {2 * t} trials per delta")
    if "coverage" in fams:
        start("coverage")
        truths = _draw_truths(streams[3], 2 * t, _ADDITIVE_SIZES, 2, 10)
        _audit_coverage(truths, ds, scale, tallies)
        say(f"coverage: {2 * t} trials per delta")
    if "exact" in fams:
        start("exact")
        audit_exact(streams[4], ds, scale, tallies)
        say("exact: every confidence method, exact sums")
    if "release" in fams and scale == 1.0:
        start("release")
        r_trials = max(1, t // 4)
        truths = _draw_truths(streams[5], r_trials, _RELEASE_SIZES, 2, _RELEASE_MAX_N)
        eps_of = [_DESIGN_EPS[i % len(_DESIGN_EPS)] for i in range(r_trials)]
        _audit_release(truths, eps_of, streams[5], ds, tallies)
        say(f"release: {r_trials} trials per delta")

    settings = {
        "families": fams, "deltas": ds, "concentrations": dict(CONCENTRATIONS),
        "truths": [*CONCENTRATIONS, "edge"],
        "design": {"m": list(_DESIGN_SIZES), "eps": list(_DESIGN_EPS), "N": [2, _DESIGN_MAX_N],
                   "hard": {"m": list(_HARD_SIZES), "N": [7, _DESIGN_MAX_N],
                            "trials": max(1, t // 12)},
                   "exact_max_N": _EXACT_MAX_N, "mutual_information_max_N": _MI_MAX_N,
                   "confidence": "every method of pmlkit.confidence.METHODS",
                   "trials": t, "worst_case": "HiGHS LP over the certified set"},
        "laplace": {"m": list(_ADDITIVE_SIZES), "eps": list(_LAPLACE_EPS),
                    "confidence": "every method of pmlkit.confidence.METHODS",
                    "trials": 3 * t},
        "gaussian": {"m": list(_ADDITIVE_SIZES), "sigma": list(_GAUSS_SIGMAS),
                     "confidence": ["l1", *_GAUSS_CONFIDENCE],
                     "eps_grid": [float(_GAUSS_GRID[0]), float(_GAUSS_GRID[-1]),
                                  int(_GAUSS_GRID.size)], "trials": 2 * t},
        "coverage": {"m": list(_ADDITIVE_SIZES), "N": [2, 10], "trials": 2 * t},
        "exact": {"binary_m": list(EXACT_M_BINARY),
                  "multinomial": {str(n): list(ms) for n, ms in EXACT_M_MULTI}},
        "release": {"m": list(_RELEASE_SIZES), "N": [2, _RELEASE_MAX_N],
                    "records": _RELEASE_ROWS, "trials": max(1, t // 4),
                    "run": scale == 1.0},
    }
    return AuditResult(rows=tuple(x.row(a) for x in tallies), trials=t, seed=seed_value,
                       alpha=a, radius_scale=scale, rng=source.description,
                       settings=settings)
