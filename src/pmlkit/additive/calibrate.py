"""Calibrating Laplace and Gaussian noise on binary data from a reference sample
(paper Section "examples"; the meaning of delta is spelled out in each result).

The two labels of the data are mapped to ``-1``/``+1`` explicitly (``positive`` names the
label that becomes ``+1``); the estimate ``p_hat = (P(-1), P(+1))`` comes from the ``m``
samples, and an uncertainty set containing the true prior with probability
``>= 1 - delta`` (the paper's l1-ball with ``beta*(delta)`` of eq. binarybeta by default,
any :func:`pmlkit.confidence.confidence_set` method otherwise) turns it into a guarantee.
The core computations only need a lower bound on ``p_min`` (Laplace) or the interval of
``P(+1)`` (Gaussian), which every set provides exactly via ``coordinate_bounds()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import check_delta, check_eps, readonly
from ..errors import DataError, ValidationError
from ._args import check_scale
from .gaussian import as_eps_array, delta1_over_interval, paper_eps
from .laplace import laplace_scale, worst_case_p_min
from .mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    gaussian_mechanism,
    laplace_mechanism,
    over_confidence_set,
)
from .pldp import pldp_eps

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

__all__ = [
    "DEFAULT_GAUSSIAN_EPS",
    "GaussianCalibration",
    "LaplaceCalibration",
    "calibrate_gaussian",
    "calibrate_laplace",
]

#: eps grid of :func:`calibrate_gaussian` when none is given: 60 points in [0.05, 3].
DEFAULT_GAUSSIAN_EPS = np.linspace(0.05, 3.0, 60)


@dataclass(frozen=True)
class _Binary:
    labels: tuple[Any, Any]  # (label mapped to -1, label mapped to +1)
    counts: tuple[int, int]
    m: int

    @property
    def p_hat(self) -> tuple[float, float]:
        return self.counts[0] / self.m, self.counts[1] / self.m


def _same_label(a: Any, b: Any) -> bool:
    """Equal labels; strings and bools only match their own type ("1" != 1, True != 1)."""
    if isinstance(a, str | bool) or isinstance(b, str | bool):
        return type(a) is type(b) and a == b
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _binary_sample(samples: Any, positive: Any) -> _Binary:
    """Count a sample with exactly two labels, ``positive`` mapped to ``+1``."""
    from ..estimation import empirical_distribution

    dist = empirical_distribution(samples)
    cats = dist.categories
    if len(cats) != 2:
        shown = ", ".join(repr(c) for c in cats[:6]) + (", ..." if len(cats) > 6 else "")
        raise DataError(
            f"samples must contain exactly two distinct labels (binary data), found "
            f"{len(cats)}: {shown}")
    if isinstance(positive, np.generic):
        positive = positive.item()
    matches = [i for i, c in enumerate(cats) if _same_label(c, positive)]
    if len(matches) != 1:
        raise DataError(
            f"positive={positive!r} is not one of the two labels of the samples "
            f"({cats[0]!r}, {cats[1]!r})")
    i = matches[0]
    counts = (int(dist.counts[1 - i]), int(dist.counts[i]))
    return _Binary((cats[1 - i], cats[i]), counts, dist.m)


def _confidence(data: _Binary, delta: float, method: Any) -> Any:
    from ..confidence import METHODS, confidence_set

    if not isinstance(method, str) or method not in METHODS:
        raise ValidationError(
            f"confidence must be one of {', '.join(METHODS)}, got {method!r}")
    return confidence_set(np.array(data.counts), delta, confidence=method)


def _meaning(delta: float, m: int, set_text: str, extra: str = "") -> str:
    return (f"delta={delta:g} is the probability, over the draw of the m={m} reference "
            f"samples, that the true distribution lies outside the set ({set_text}){extra}")


@dataclass(frozen=True)
class LaplaceCalibration:
    """The Laplace scale for an (eps, delta)-PML guarantee on binary data.

    Attributes
    ----------
    b
        Smallest scale meeting eps for every prior in the set (``0.0``: no noise needed,
        see :func:`pmlkit.additive.laplace_scale`).
    eps, delta
        The target: eps-PML with probability ``>= 1 - delta`` over the reference sample.
    m, labels, counts, p_hat
        The reference sample: ``labels = (label -> -1, label -> +1)``, counts and estimate
        in that order.
    confidence
        Confidence-set method (``"l1"`` is the paper's ball).
    beta
        The l1 radius ``beta*(delta)`` of eq. binarybeta for ``"l1"``; ``None`` otherwise.
    p_min_lower
        Smallest ``p_min`` over the set (eq. uncertainlaplace: ``p_hat_min - beta/2``,
        clipped at 0).
    uncertainty_set, set_description
        The set (``to_dict()``) and the theorem its coverage rests on.
    ldp_scale
        The eps-LDP scale ``2/eps`` (Remark laplacereducestoldp), for comparison.
    meaning
        What ``delta`` means, in words.
    granularity, released_b
        The grid :func:`pmlkit.additive.laplace_noise` releases on for scale ``b`` (its
        default for ``b``, or the ``granularity`` asked for) and the scale of the noise it
        actually adds, ``ceil(b/g) g >= b``. ``None`` when no grid release exists for
        ``b`` (``b = 0``: no noise needed; ``b = inf``; or more than ``2^32`` grid steps).
    grid_eps
        The guarantee of what is released: the exact eps of the grid mechanism at
        ``released_b`` over the set (:func:`pmlkit.additive.laplace_grid_eps` at
        ``p_min_lower``), never above ``eps`` (a larger scale leaks less). For ``b = 0``
        the eps of releasing ``X`` itself, ``-log p_min_lower``; ``0`` for ``b = inf``.
    mechanism
        The :class:`pmlkit.additive.LaplaceMechanism` of scale ``b`` on that grid, carrying
        its typed guarantee (eps over the confidence set, ``delta``, the method, ``m``, and
        the ``certified_eps`` pmlkit computed for the grid); ``None`` when no grid release
        exists (``released_b`` is ``None``).

    Examples
    --------
    See :func:`calibrate_laplace`; the record as JSON:

    >>> from pmlkit.additive import calibrate_laplace
    >>> cal = calibrate_laplace(["F"] * 300 + ["M"] * 700, 1.0, 1e-6, positive="M")
    >>> d = cal.to_dict()
    >>> d["mechanism"], d["counts"], d["labels"]
    ('laplace', [300, 700], {'-1': 'F', '+1': 'M'})
    """

    b: float
    eps: float
    delta: float
    m: int
    labels: tuple[Any, Any]
    counts: tuple[int, int]
    p_hat: tuple[float, float]
    confidence: str
    beta: float | None
    p_min_lower: float
    uncertainty_set: dict[str, Any] = field(repr=False)
    set_description: str = field(repr=False)
    ldp_scale: float = 0.0
    meaning: str = field(default="", repr=False)
    granularity: float | None = None
    released_b: float | None = None
    grid_eps: float | None = None
    mechanism: LaplaceMechanism | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (``inf`` written as the string ``"inf"``).

        Examples
        --------
        >>> from pmlkit.additive import calibrate_laplace
        >>> calibrate_laplace(["F", "M"] * 50, 0.0, 0.1, positive="M").to_dict()["b"]
        'inf'
        """
        def num(x: float | None) -> Any:
            return "inf" if x is not None and np.isinf(x) else x
        return {
            "mechanism": "laplace", "b": num(self.b), "eps": self.eps, "delta": self.delta,
            "m": self.m, "labels": {"-1": self.labels[0], "+1": self.labels[1]},
            "counts": list(self.counts), "p_hat": list(self.p_hat),
            "confidence": self.confidence, "beta": self.beta,
            "p_min_lower": self.p_min_lower, "uncertainty_set": self.uncertainty_set,
            "set_description": self.set_description, "ldp_scale": num(self.ldp_scale),
            "meaning": self.meaning, "granularity": self.granularity,
            "released_b": self.released_b, "grid_eps": self.grid_eps,
        }


def _laplace_release(b: float, p_lower: float, granularity: Any,
                     ) -> tuple[float | None, float | None, float | None]:
    """``(granularity, released_b, grid_eps)`` of the grid release of scale ``b``."""
    from .grid import laplace_grid, laplace_grid_eps

    if b == 0.0:
        return None, None, (-math.log(p_lower) if p_lower > 0 else math.inf)
    if math.isinf(b):
        return None, None, 0.0
    try:
        grid = laplace_grid(b, granularity)
    except ValidationError:
        if granularity is not None:
            raise
        return None, None, None
    return grid.granularity, grid.scale, laplace_grid_eps(b, p_lower, grid.granularity)


def calibrate_laplace(samples: Any, eps: float, delta: float, *, positive: Any,
                      confidence: str = "l1",
                      granularity: float | None = None) -> LaplaceCalibration:
    """Laplace scale ``b`` so that ``Y = X + Laplace(b)`` is eps-PML w.p. ``>= 1 - delta``.

    With the l1-ball (default, the paper's procedure): ``beta = beta*(delta)`` (eq.
    binarybeta), ``p_lower = max(p_hat_min - beta/2, 0)`` and ``b`` is the smallest scale
    with ``eps(b, delta) <= eps`` (eq. uncertainlaplace inverted in closed form,
    :func:`pmlkit.additive.laplace_scale`). With another ``confidence`` method, ``p_lower`` is
    the smallest per-category lower bound of that set (exact ``coordinate_bounds()``),
    which is the smallest ``p_min`` over the set since Prop. Laplaceleakage only depends on
    ``p_min``.

    Parameters
    ----------
    samples
        Reference sample with exactly two distinct labels (list, numpy, pandas, pyarrow).
    eps
        Target eps, ``>= 0``.
    delta
        Failure probability over the reference sample, in ``(0, 1)``.
    positive
        The label mapped to ``+1`` (the other one becomes ``-1``).
    confidence
        A method of :data:`pmlkit.confidence.METHODS` (``"l1"``: the paper's ball).
    granularity
        The grid of the release (see :func:`pmlkit.additive.laplace_noise`); ``None``: the
        sampler's default for ``b``. The result reports the released scale and the exact
        eps of the grid mechanism (``grid_eps <= eps``).

    Raises
    ------
    DataError
        Samples with other than two labels, nulls, or ``positive`` not among them.
    ValidationError
        eps or delta out of range, unknown confidence method.

    Examples
    --------
    1000 samples, 30% ``"F"``: the l1 radius is ``beta = sqrt(2 (log 2 - log 1e-6) / 1000)
    = 0.17034``, so ``p_min >= 0.3 - beta/2 = 0.21483`` over the set and
    ``b = 2 / log((1 - 0.21483) / (e^{-1} - 0.21483)) = 1.2231``:

    >>> from pmlkit.additive import calibrate_laplace
    >>> cal = calibrate_laplace(["F"] * 300 + ["M"] * 700, 1.0, 1e-6, positive="M")
    >>> round(cal.beta, 5), round(cal.p_min_lower, 5), round(cal.b, 4)
    (0.17034, 0.21483, 1.2231)
    >>> g = cal.mechanism.guarantee           # what the released grid mechanism promises
    >>> g.eps, g.delta, g.m, g.certified_eps <= g.eps
    (1.0, 1e-06, 1000, True)
    """
    from ..estimation import l1_radius

    e = check_eps(eps)
    d = check_delta(delta, allow_one=False)
    data = _binary_sample(samples, positive)
    cs = _confidence(data, d, confidence)
    p_hat_min = min(data.p_hat)
    if confidence == "l1":
        radius = l1_radius(d, m=data.m, n=2)
        beta: float | None = radius
        p_lower = worst_case_p_min(p_hat_min, beta=radius)
    else:
        beta = None
        lo, _ = cs.set.coordinate_bounds()
        p_lower = max(0.0, min(float(np.min(lo)), 0.5))
    b = laplace_scale(e, p_lower)
    ldp = 2.0 / e if e > 0 else float("inf")
    g, released, grid_eps = _laplace_release(b, p_lower, granularity)
    mech = None if released is None else laplace_mechanism(
        b, g, over_confidence_set(cs), e, "calibrate_laplace")
    return LaplaceCalibration(
        b=b, eps=e, delta=d, m=data.m, labels=data.labels, counts=data.counts,
        p_hat=data.p_hat, confidence=cs.method, beta=beta, p_min_lower=p_lower,
        uncertainty_set=cs.set.to_dict(), set_description=cs.description, ldp_scale=ldp,
        meaning=_meaning(d, data.m, cs.method + " set"),
        granularity=g, released_b=released, grid_eps=grid_eps, mechanism=mech,
    )


@dataclass(frozen=True)
class GaussianCalibration:
    """The achievable (eps, delta)-PML curves of the binary Gaussian mechanism.

    Attributes
    ----------
    sigma, delta2
        Noise standard deviation; probability that the true prior is outside the set.
    m, labels, counts, p_hat
        The reference sample (``labels = (label -> -1, label -> +1)``).
    confidence, beta, q_interval, uncertainty_set, set_description
        The set: method, l1 radius (``beta*(delta2)`` for ``"l1"``; for other sets the
        smallest l1 radius around ``p_hat`` containing it, used only by the paper's
        curve), and its exact interval of ``P(+1)``.
    eps
        The inner eps grid; ``delta1[k] = sup_set P_Y(E_eps[k](P))`` (eq. gaussianopt).
    paper_eps, paper_delta
        The paper's curve: ``eps* = eps - log(1 - beta e^eps / 2)`` (``inf`` when vacuous),
        ``delta* = delta1 + delta2 - delta1 delta2``. Label: "paper".
    direct_eps, direct_delta
        The direct curve ``(eps, delta1 + delta2 - delta1 delta2)``, valid because
        ``delta1`` is already a sup over the set. Label: "direct".
    pldp_eps
        Baseline: the eps of the (eps, delta)-pLDP Gaussian mechanism with the same sigma at
        ``delta = direct_delta`` (``0`` where that delta is ``>= 1``: vacuous).
    meaning
        What the deltas mean, in words.
    granularity, released_sigma
        The grid :func:`pmlkit.additive.gaussian_noise` releases on for this sigma and the
        sigma of its discrete Gaussian noise, ``ceil(sigma/g) g``.
    continuous_delta1
        ``delta_1`` of the continuous mechanism ``X + N(0, sigma^2)`` (the paper's
        quantity), for comparison only: ``delta1`` and both curves are those of the grid
        mechanism that is released (:func:`pmlkit.additive.gaussian_grid_delta1_interval`);
        rounding to a grid can raise the tail probability, so it is recomputed, not
        inherited.
    mechanism
        The :class:`pmlkit.additive.GaussianMechanism` that is released, carrying its typed
        guarantee over the confidence set, stated at the largest inner eps (the scalar
        ``eps`` when one was given; :meth:`~pmlkit.additive.GaussianMechanism.with_eps`
        restates it at another); ``None`` if at that eps every output may violate.
    envelope_eps, envelope_method, survives_post_processing
        Post-processing. ``delta1[k]`` bounds the probability that the released value
        itself leaks more than ``eps[k]``; a function of it (rounding, thresholding,
        binning) can leak more than ``eps[k]`` with a larger probability. ``envelope_eps[k]``
        is a level that every post-processing of the released grid mechanism exceeds with
        probability at most ``delta1[k]``, for every prior of the set
        (:func:`pmlkit.envelope.envelope_bound` on the tabulated grid channel: the smaller
        of the fractional-knapsack level and ``ML + log(1/delta1)``, named in
        ``envelope_method``); so ``(envelope_eps[k], direct_delta[k])`` is a tail
        guarantee that survives post-processing. ``survives_post_processing[k]`` says
        whether the plain statement at ``eps[k]`` itself is certified to survive (it is
        when ``delta1[k] = 0``, a pure guarantee).
    continuous_envelope_ml
        For comparison only: ``ML + log(1/delta1)`` of the continuous mechanism
        (:func:`pmlkit.envelope.gaussian_envelope_bound`; ``inf`` where ``delta1 = 0``).

    Examples
    --------
    See :func:`calibrate_gaussian`; one row per curve and point:

    >>> from pmlkit.additive import calibrate_gaussian
    >>> cal = calibrate_gaussian(["F"] * 300 + ["M"] * 700, 2.0, 1e-6, positive="M",
    ...                          eps=[0.5, 1.0])
    >>> [(r["curve"], r["inner_eps"]) for r in cal.curves()]
    [('paper', 0.5), ('paper', 1.0), ('direct', 0.5), ('direct', 1.0)]
    """

    sigma: float
    delta2: float
    m: int
    labels: tuple[Any, Any]
    counts: tuple[int, int]
    p_hat: tuple[float, float]
    confidence: str
    beta: float
    q_interval: tuple[float, float]
    uncertainty_set: dict[str, Any] = field(repr=False)
    set_description: str = field(repr=False)
    eps: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    delta1: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    paper_eps: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    paper_delta: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    direct_eps: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    direct_delta: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    pldp_eps: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    meaning: str = field(default="", repr=False)
    granularity: float = 0.0
    released_sigma: float = 0.0
    continuous_delta1: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    mechanism: GaussianMechanism | None = field(default=None, repr=False)
    envelope_eps: np.ndarray = field(repr=False, default_factory=lambda: readonly([]))
    envelope_method: tuple[str, ...] = field(repr=False, default=())
    survives_post_processing: np.ndarray = field(
        repr=False, default_factory=lambda: readonly(np.zeros(0, dtype=bool)))
    continuous_envelope_ml: np.ndarray = field(repr=False,
                                               default_factory=lambda: readonly([]))

    def curves(self) -> list[dict[str, Any]]:
        """One row per (curve, point): ``{"curve": "paper"|"direct", "eps", "delta", ...}``.

        Examples
        --------
        >>> from pmlkit.additive import calibrate_gaussian
        >>> cal = calibrate_gaussian(["F", "M"] * 50, 1.0, 0.1, positive="M", eps=2.0)
        >>> sorted(cal.curves()[0])
        ['curve', 'delta', 'delta1', 'envelope_eps', 'eps', 'inner_eps', 'survives_post_processing']
        """
        rows = []
        for name, ee, dd in (("paper", self.paper_eps, self.paper_delta),
                             ("direct", self.direct_eps, self.direct_delta)):
            for k in range(self.eps.size):
                env: Any = None
                ok: Any = None
                if self.envelope_eps.size == self.eps.size:
                    env = float(self.envelope_eps[k])
                    env = "inf" if math.isinf(env) else env
                    ok = bool(self.survives_post_processing[k])
                rows.append({"curve": name, "inner_eps": float(self.eps[k]),
                             "eps": "inf" if np.isinf(ee[k]) else float(ee[k]),
                             "delta": float(dd[k]), "delta1": float(self.delta1[k]),
                             "envelope_eps": env, "survives_post_processing": ok})
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary with both labelled curves.

        Examples
        --------
        >>> from pmlkit.additive import calibrate_gaussian
        >>> d = calibrate_gaussian(["F", "M"] * 50, 1.0, 0.1, positive="M", eps=2.0).to_dict()
        >>> d["mechanism"], d["counts"], len(d["curves"])
        ('gaussian', [50, 50], 2)
        """
        return {
            "mechanism": "gaussian", "sigma": self.sigma, "delta2": self.delta2,
            "m": self.m, "labels": {"-1": self.labels[0], "+1": self.labels[1]},
            "counts": list(self.counts), "p_hat": list(self.p_hat),
            "confidence": self.confidence, "beta": self.beta,
            "q_interval": list(self.q_interval), "uncertainty_set": self.uncertainty_set,
            "set_description": self.set_description, "meaning": self.meaning,
            "granularity": self.granularity, "released_sigma": self.released_sigma,
            "curves": self.curves(),
            "post_processing": {
                "meaning": POST_PROCESSING_MEANING,
                "envelope_method": list(self.envelope_method),
                "continuous_envelope_ml": [
                    "inf" if math.isinf(float(x)) else float(x)
                    for x in self.continuous_envelope_ml]},
            "pldp": [{"delta": float(d), "eps": float(e)}
                     for d, e in zip(self.direct_delta, self.pldp_eps, strict=True)],
        }


def calibrate_gaussian(samples: Any, sigma: float, delta2: float, *, positive: Any,
                       eps: ArrayLike | None = None, confidence: str = "l1",
                       granularity: float | None = None) -> GaussianCalibration:
    """Both (eps, delta)-PML curves of the released Gaussian mechanism from a reference sample.

    What is released is :func:`pmlkit.additive.gaussian_noise`: ``X`` plus discrete
    Gaussian noise on the grid ``g Z``. ``delta1(eps)`` is that grid mechanism's violation
    probability maximised over the set's exact interval of ``P(+1)``
    (:func:`pmlkit.additive.gaussian_grid_delta1_interval`); the "paper" and "direct"
    curves are formed from it as in :func:`pmlkit.additive.gaussian_tradeoff`. The
    continuous mechanism's ``delta1`` is kept as ``continuous_delta1`` for comparison.

    Parameters
    ----------
    samples
        Reference sample with exactly two distinct labels.
    sigma
        ``> 0``.
    delta2
        Failure probability of the set, in ``(0, 1)``.
    positive
        The label mapped to ``+1``.
    eps
        Inner eps grid (scalar or 1-D, values ``>= 0``); default
        :data:`DEFAULT_GAUSSIAN_EPS`.
    confidence
        A method of :data:`pmlkit.confidence.METHODS`.
    granularity
        The release grid (see :func:`pmlkit.additive.gaussian_noise`); ``None``: the
        sampler's default for ``sigma``.

    Examples
    --------
    >>> from pmlkit.additive import calibrate_gaussian
    >>> cal = calibrate_gaussian(["F"] * 300 + ["M"] * 700, 2.0, 1e-6, positive="M",
    ...                          eps=[0.5, 1.0])
    >>> d1, d2 = cal.delta1, cal.delta2               # the union bound of both failures
    >>> bool(abs(cal.direct_delta - (d1 + d2 - d1 * d2)).max() < 1e-15)
    True
    >>> bool((cal.paper_eps > cal.direct_eps).all())  # the paper's curve pays in eps
    True
    >>> m = cal.mechanism                               # stated at the largest eps
    >>> m.guarantee.eps, abs(m.guarantee.output_delta - float(cal.delta1[-1])) < 1e-12
    (1.0, True)
    """
    from ..estimation import l1_radius
    from ..sets import L1Ball
    from .grid import gaussian_grid, grid_delta1_over_interval

    s = check_scale(sigma, "sigma")
    release = gaussian_grid(s, granularity)
    d2 = check_delta(delta2, "delta2", allow_one=False)
    grid, _ = as_eps_array(DEFAULT_GAUSSIAN_EPS if eps is None else eps)
    data = _binary_sample(samples, positive)
    cs = _confidence(data, d2, confidence)
    q_hat = data.p_hat[1]
    if confidence == "l1":
        beta = l1_radius(d2, m=data.m, n=2)
        lows, highs = L1Ball(np.array([1.0 - q_hat, q_hat]), beta).coordinate_bounds()
        lo, hi = float(lows[1]), float(highs[1])
    else:
        lows, highs = cs.set.coordinate_bounds()
        lo, hi = float(lows[1]), float(highs[1])
        lo, hi = max(0.0, min(lo, q_hat)), min(1.0, max(hi, q_hat))
        beta = 2.0 * max(q_hat - lo, hi - q_hat)
    d1 = grid_delta1_over_interval(release, lo, hi, grid)
    d1_cont = delta1_over_interval(s, lo, hi, grid)
    delta = d1 + d2 - d1 * d2
    paper = paper_eps(grid, beta)
    pl = np.array([pldp_eps(s, x) if x < 1.0 else 0.0 for x in delta])
    env_eps, env_method, survives, cont = _gaussian_envelopes(release, lo, hi, grid, d1, s)
    try:
        mech: GaussianMechanism | None = gaussian_mechanism(
            s, release.granularity, over_confidence_set(cs), float(np.max(grid)),
            "calibrate_gaussian")
    except ValidationError:  # every output may violate at the largest eps asked for
        mech = None
    return GaussianCalibration(
        sigma=s, delta2=d2, m=data.m, labels=data.labels, counts=data.counts,
        p_hat=data.p_hat, confidence=cs.method, beta=beta, q_interval=(lo, hi),
        uncertainty_set=cs.set.to_dict(), set_description=cs.description,
        eps=readonly(grid), delta1=readonly(d1), paper_eps=readonly(paper),
        paper_delta=readonly(delta),
        direct_eps=readonly(grid), direct_delta=readonly(delta), pldp_eps=readonly(pl),
        meaning=_meaning(d2, data.m, cs.method + " set",
                         "; each curve's delta adds the probability over the noise that the "
                         "realised output leaks more than eps (delta1), by the union bound"),
        granularity=release.granularity, released_sigma=release.scale,
        continuous_delta1=readonly(d1_cont), mechanism=mech,
        envelope_eps=readonly(env_eps), envelope_method=env_method,
        survives_post_processing=readonly(survives), continuous_envelope_ml=readonly(cont),
    )


#: What the post-processing columns of a Gaussian calibration mean (reports and JSON).
POST_PROCESSING_MEANING = (
    "delta_1 bounds the probability that the released value itself leaks more than eps; "
    "a function of it (rounding, binning, thresholding) can leak more than eps with a "
    "larger probability. envelope_eps is a level that every post-processing of the "
    "released grid mechanism exceeds with probability at most delta_1, for every prior "
    "of the set (pmlkit.envelope.envelope_bound: fractional knapsack or maximal leakage, "
    "whichever is smaller), so (envelope_eps, delta*) survives post-processing; "
    "survives_post_processing says whether (eps, delta*) itself does")


def _gaussian_envelopes(release: Any, lo: float, hi: float, eps: np.ndarray, d1: np.ndarray,
                        sigma: float) -> tuple[np.ndarray, tuple[str, ...], np.ndarray,
                                               np.ndarray]:
    """Per inner eps: the envelope bound of the released grid channel at ``delta1`` over
    the set, its method, whether the plain statement survives, and the continuous
    mechanism's maximal-leakage level (comparison)."""
    from ..envelope import envelope_bounds, gaussian_envelope_bound
    from ..sets import Box
    from .grid import gaussian_grid_channel

    box = Box(np.array([1.0 - hi, lo]), np.array([1.0 - lo, hi]))
    _, w = gaussian_grid_channel(release)
    bounds = envelope_bounds(w, box, d1, eps=eps)
    env = np.array([b.eps for b in bounds], dtype=np.float64)
    ok = np.array([bool(b.survives_post_processing) for b in bounds], dtype=bool)
    methods = [b.method for b in bounds]
    cont = np.array([gaussian_envelope_bound(sigma, float(x)) if x > 0 else math.inf
                     for x in d1])
    return env, tuple(methods), ok, cont
