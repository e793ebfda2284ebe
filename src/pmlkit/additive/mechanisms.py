"""The Laplace and Gaussian mechanisms on binary data as objects that answer for themselves.

A :class:`LaplaceMechanism` or :class:`GaussianMechanism` is the release ``Y = X + noise``
of a binary secret ``X in {-1, +1}`` *as pmlkit performs it*: on the grid ``g Z`` with
discrete Laplace or discrete Gaussian noise drawn exactly (:mod:`pmlkit.additive.grid`).
Each object carries

* its :attr:`guarantee` (a :class:`pmlkit.guarantee.PMLGuarantee` whose set is a set of
  binary distributions ``(P(-1), P(+1))``, and whose numbers pmlkit computed for the grid
  that is released, never for the real-valued mechanism of the paper);
* its :attr:`provenance` (:class:`pmlkit.guarantee.Provenance`);
* :meth:`apply` (also ``mechanism(values)``): the secure, exact grid release;
* :meth:`leakage_under` (one prior) and :meth:`worst_case_over` (a set of priors);
* :meth:`binarized`: the discrete 2 x 2 :class:`pmlkit.Mechanism` of the output
  thresholded at 0, whose flip probability is the one of
  :func:`pmlkit.additive.laplace_flip_probability` /
  :func:`pmlkit.additive.gaussian_flip_probability`.

Both implement the :class:`pmlkit.guarantee.PrivacyMechanism` protocol.

What the guarantee says
-----------------------
Every set of binary distributions reduces to the interval ``[q_low, q_high]`` of
``q = P(+1)`` it allows (its exact ``coordinate_bounds()``), and to the smallest
``p_min = min(q_low, 1 - q_high)`` over it.

* **Laplace** (pure eps-PML). On the grid, the largest per-outcome leakage for a prior with
  smaller mass ``p_min`` is attained at the outputs ``+-1`` and equals
  ``-log(p_min + (1 - p_min) e^{-2 / b_released})``, which decreases in ``p_min``: the
  worst case over a set is that value at the set's smallest ``p_min``
  (:func:`pmlkit.additive.laplace_grid_eps`). It is the guarantee's ``certified_eps``.
* **Gaussian** ((eps, delta)-PML). The per-outcome leakage is unbounded in the noise
  (its supremum over outputs is ``-log p_min``, the leakage of releasing ``X`` itself), so
  the guarantee is a pair: ``eps`` and ``output_delta``, the largest probability over the
  set that the released value leaks more than ``eps``, computed exactly for the grid
  (:func:`pmlkit.additive.gaussian_grid_delta1_interval`). pmlkit certifies that pair,
  so ``certified_eps`` is ``eps`` itself.

The guarantee is recomputed from the set whenever a mechanism is built (also when it is
unpickled): a mechanism whose stated guarantee is better than its computed one is
refused with a :class:`~pmlkit.errors.ValidationError`.

Examples
--------
>>> from pmlkit.additive import LaplaceMechanism
>>> mech = LaplaceMechanism.from_scale(2.0)   # every prior: the LDP value 2 / b
>>> round(mech.guarantee.certified_eps, 6)
1.0
>>> mech.apply([1, -1, 1], rng=0).shape
(3,)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import check_eps, exceeds, fmt, safe_upper, surely_exceeds
from ..errors import PMLError, ValidationError
from ..guarantee import PMLGuarantee, Provenance
from ..sets import UncertaintySet
from ..worstcase import CERTIFY_TOL
from ._args import as_binary_prior, check_scale

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike, NDArray

    from ..confidence import ConfidenceSet
    from ..envelope import EnvelopeBound
    from ..mechanism import Mechanism
    from .grid import GridNoise

__all__ = ["GaussianMechanism", "LaplaceMechanism"]

#: Slack allowed between a stated ``output_delta`` and the one recomputed from the set.
OUTPUT_DELTA_TOL = 1e-12


# --------------------------------------------------------------------------- sets

def prior_interval(uset: UncertaintySet) -> tuple[float, float]:
    """The interval ``[q_low, q_high]`` of ``q = P(+1)`` over a set of binary distributions.

    Both coordinates' exact bounds are used and the wider of the two readings kept (they
    agree up to rounding, and a wider interval never understates a worst case).
    """
    lows, highs = uset.coordinate_bounds()
    lo = min(float(lows[1]), 1.0 - float(highs[0]))
    hi = max(float(highs[1]), 1.0 - float(lows[0]))
    return max(lo, 0.0), min(hi, 1.0)


def smallest_p_min(uset: UncertaintySet) -> float:
    """``min over the set of min(P(-1), P(+1))``, in ``[0, 1/2]``."""
    lo, hi = prior_interval(uset)
    return min(max(min(lo, 1.0 - hi), 0.0), 0.5)


def _check_binary_set(uset: Any) -> UncertaintySet:
    from ..worstcase import check_uncertainty_set

    return check_uncertainty_set(uset, 2, inputs="the mechanism's secret is binary (N = {n})")


def _claimed_set(guarantee: PMLGuarantee) -> UncertaintySet:
    """The set a guarantee's claim is checked over: its set, or for basis ``"all"`` the
    whole simplex itself (a set that merely passes the tolerant membership test of the
    corners may stop short of them, where the leakage is largest)."""
    from ..sets import VertexSet

    uset = _check_binary_set(guarantee.set)
    return VertexSet(np.eye(2)) if guarantee.basis == "all" else uset



def _check_typed(guarantee: object, provenance: object) -> None:
    """The typed guarantee and provenance of an additive mechanism (one check for both)."""
    if not isinstance(guarantee, PMLGuarantee):
        raise ValidationError(
            f"guarantee must be a pmlkit.guarantee.PMLGuarantee, got "
            f"{type(guarantee).__name__}")
    if not isinstance(provenance, Provenance):
        raise ValidationError(
            f"provenance must be a pmlkit.guarantee.Provenance, got "
            f"{type(provenance).__name__}")

@dataclass(frozen=True)
class Over:
    """What a guarantee is stated over: the set, its basis and (sample) its coverage."""

    set: UncertaintySet
    basis: str
    delta: float = 0.0
    method: str | None = None
    m: int | None = None
    statement: str = ""
    estimate: tuple[float, ...] | None = None

    def guarantee(self, *, eps: float, certified_eps: float,
                  output_delta: float = 0.0) -> PMLGuarantee:
        if self.basis == "all":
            return PMLGuarantee.for_all_distributions(
                2, eps=eps, certified_eps=certified_eps, output_delta=output_delta)
        if self.basis == "prior":
            assert self.estimate is not None
            return PMLGuarantee.for_prior(self.estimate, eps=eps, certified_eps=certified_eps,
                                          output_delta=output_delta)
        return PMLGuarantee(eps=eps, set=self.set, certified_eps=certified_eps,
                            basis=self.basis, delta=self.delta, method=self.method, m=self.m,
                            statement=self.statement, output_delta=output_delta)


def read_over(over: Any) -> Over:
    """Read ``over=``: ``None`` (every prior), a ConfidenceSet, an UncertaintySet, or a prior."""
    from ..confidence import ConfidenceSet
    from ..sets import Box, VertexSet

    if over is None:
        return Over(VertexSet(np.eye(2)), "all")
    if isinstance(over, ConfidenceSet):
        return Over(_check_binary_set(over.set), "sample", delta=over.delta,
                     method=over.method, m=over.m, statement=over.description,
                     estimate=tuple(float(x) for x in over.p_hat))
    if isinstance(over, UncertaintySet):
        return Over(_check_binary_set(over), "given",
                     statement="a set of binary priors supplied by the user")
    if isinstance(over, str | bytes) or np.ndim(over) != 1:
        raise ValidationError(
            "over must be None (every prior), a pmlkit.confidence.ConfidenceSet, a "
            "pmlkit.sets.UncertaintySet on 2 categories, or a binary prior (P(-1), P(+1)), "
            f"got {fmt(over)}")
    prior = as_binary_prior(over, "over")
    p = np.array(prior)
    return Over(Box(p, p), "prior", estimate=prior)


def over_confidence_set(confidence: ConfidenceSet) -> Over:
    """:class:`Over` for a confidence set (the calibrations' path)."""
    return read_over(confidence)


def _over_of(guarantee: PMLGuarantee, provenance: Provenance) -> Over:
    """The :class:`Over` a guarantee was stated over (to restate it at another eps)."""
    estimate = provenance.estimate
    if guarantee.basis == "prior":
        lows, _ = guarantee.set.coordinate_bounds()
        estimate = (float(lows[0]), float(lows[1]))
    return Over(guarantee.set, guarantee.basis, delta=guarantee.delta,
                 method=guarantee.method, m=guarantee.m, statement=guarantee.statement,
                 estimate=estimate)


# --------------------------------------------------------------------------- Laplace

@dataclass(frozen=True, eq=False)
class LaplaceMechanism:
    """``Y = X + L`` on binary ``X in {-1, +1}``, released on a grid with discrete Laplace noise.

    Build it with :meth:`from_scale` (a given scale ``b``), :meth:`for_eps` (the smallest
    scale meeting an eps over a set of priors) or
    :func:`pmlkit.additive.calibrate_laplace` (from a reference sample; its result's
    ``.mechanism``). The constructor itself checks a given guarantee against the one
    pmlkit computes.

    Parameters
    ----------
    b
        The requested Laplace scale, ``> 0``. The released noise has scale
        :attr:`released_b` ``= ceil(b / g) g >= b``.
    granularity
        The grid step ``g = 2^-j`` (``0 <= j <= 30``); ``None`` picks the default of
        :func:`pmlkit.additive.laplace_grid`. Stored resolved.
    guarantee
        The eps-PML guarantee over a set of binary priors; its ``certified_eps`` must be at
        least the worst case pmlkit computes over the set (up to ``1e-9``).
    provenance
        How the mechanism was made.

    Examples
    --------
    The smallest scale meeting eps = 0.5 when ``P(+1)`` lies in ``[0.2, 0.4]``:

    >>> import pmlkit
    >>> from pmlkit.additive import LaplaceMechanism
    >>> box = pmlkit.Box([0.6, 0.2], [0.8, 0.4])
    >>> mech = LaplaceMechanism.for_eps(0.5, over=box)
    >>> # b = 2 / log((1 - 0.2) / (e^{-0.5} - 0.2)) at the smallest p_min = 0.2
    >>> round(mech.b, 4), mech.guarantee.eps
    (2.9544, 0.5)
    >>> mech.guarantee.certified_eps <= 0.5
    True
    >>> # a prior inside the set leaks less: -log(0.3 + 0.7 e^{-2/b})
    >>> round(mech.leakage_under([0.7, 0.3]), 4)
    0.422
    """

    b: float
    granularity: float | None
    guarantee: PMLGuarantee = field(repr=False)
    provenance: Provenance = field(repr=False)

    def __post_init__(self) -> None:
        grid = _laplace_grid(self.b, self.granularity)
        object.__setattr__(self, "b", grid.requested_scale)
        object.__setattr__(self, "granularity", grid.granularity)
        _check_typed(self.guarantee, self.provenance)
        uset = _claimed_set(self.guarantee)
        actual = self.worst_case_over(uset)
        if actual > self.guarantee.certified_eps + CERTIFY_TOL:
            raise ValidationError(
                f"guarantee.certified_eps = {self.guarantee.certified_eps!r} is below the "
                f"worst case {actual!r} of this Laplace mechanism (b = {self.b!r}, "
                f"granularity {self.granularity!r}) over its set: the guarantee does not hold")
        if surely_exceeds(actual, self.guarantee.eps):
            raise ValidationError(
                f"guarantee.eps = {self.guarantee.eps!r} is below the worst case {actual!r} "
                f"of this Laplace mechanism (b = {self.b!r}, granularity "
                f"{self.granularity!r}) over its set by more than rounding: the guarantee "
                "does not hold")

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_scale(cls, b: float, *, over: Any = None,
                   granularity: float | None = None) -> LaplaceMechanism:
        """The mechanism of scale ``b``, with its exact guarantee over ``over``.

        Parameters
        ----------
        b
            Laplace scale, ``> 0``.
        over
            ``None``: every prior (the guarantee is the LDP value ``2 / b_released``); a
            :class:`pmlkit.confidence.ConfidenceSet` (an (eps, delta) guarantee from a
            sample); a :class:`pmlkit.sets.UncertaintySet` on 2 categories; or one prior
            ``(P(-1), P(+1))``.
        granularity
            The release grid (default: :func:`pmlkit.additive.laplace_grid`'s).

        Examples
        --------
        >>> from pmlkit.additive import LaplaceMechanism
        >>> m = LaplaceMechanism.from_scale(1.0, over=[0.5, 0.5])
        >>> # -log(1/2 + 1/2 e^{-2}) at the released scale (here exactly 1)
        >>> round(m.guarantee.eps, 6), m.released_b
        (0.566219, 1.0)
        """
        return laplace_mechanism(check_scale(b, "b"), granularity, read_over(over), None,
                        "LaplaceMechanism.from_scale")

    @classmethod
    def for_eps(cls, eps: float, *, over: Any = None,
                granularity: float | None = None) -> LaplaceMechanism:
        """The smallest scale ``b`` whose released mechanism is eps-PML over ``over``.

        ``b = laplace_scale(eps, p_min)`` at the set's smallest ``p_min``
        (:func:`pmlkit.additive.laplace_scale`); the released scale ``ceil(b/g) g >= b``
        leaks no more, so ``certified_eps <= eps``.

        Parameters
        ----------
        eps
            Target, ``> 0`` and below ``-log p_min`` (at or above it no noise is needed).
        over, granularity
            As for :meth:`from_scale`.

        Raises
        ------
        ValidationError
            ``eps = 0`` (only infinite noise), ``eps >= -log p_min`` over the set (no
            noise needed: release the labels), or a scale the exact sampler cannot draw.

        Examples
        --------
        >>> from pmlkit.additive import LaplaceMechanism
        >>> m = LaplaceMechanism.for_eps(1.0)   # every prior: the LDP scale 2 / eps
        >>> round(m.b, 12)
        2.0
        """
        from .laplace import laplace_scale

        e = check_eps(eps)
        where = read_over(over)
        p = smallest_p_min(where.set)
        b = laplace_scale(e, p)
        if b == 0.0:
            raise ValidationError(
                f"eps={fmt(e)} needs no noise over this set (eps >= -log p_min = "
                f"{-math.log(p) if p > 0 else math.inf!r}); choose a smaller eps")
        if math.isinf(b):
            raise ValidationError(f"eps must be > 0 for a finite Laplace scale, got {fmt(e)}")
        return laplace_mechanism(b, granularity, where, e, "LaplaceMechanism.for_eps")

    # -- the release --------------------------------------------------------------------
    @property
    def grid(self) -> GridNoise:
        """The released grid (:func:`pmlkit.additive.laplace_grid`).

        Examples
        --------
        >>> from pmlkit.additive import LaplaceMechanism
        >>> LaplaceMechanism.from_scale(1.3, granularity=0.25).grid.units   # ceil(1.3 * 4)
        6
        """
        return _laplace_grid(self.b, self.granularity)

    @property
    def released_b(self) -> float:
        """The scale of the released discrete Laplace noise, ``ceil(b/g) g``.

        Examples
        --------
        >>> from pmlkit.additive import LaplaceMechanism
        >>> LaplaceMechanism.from_scale(1.3, granularity=0.25).released_b      # 6 / 4
        1.5
        """
        return self.grid.scale

    def apply(self, values: ArrayLike, *, rng: Any = None) -> NDArray[np.float64]:
        """Release ``values`` (an array of -1/+1): :func:`pmlkit.additive.laplace_noise`.

        Secure randomness unless ``rng`` is given (an int seed or a
        ``numpy.random.Generator``, for research only).

        Examples
        --------
        >>> from pmlkit.additive import LaplaceMechanism, laplace_noise
        >>> m = LaplaceMechanism.from_scale(1.0)
        >>> bool((m.apply([1, -1], rng=5) == laplace_noise([1, -1], 1.0, rng=5)).all())
        True
        """
        from .sampling import laplace_noise

        return laplace_noise(values, self.b, granularity=self.granularity, rng=rng)

    def __call__(self, values: ArrayLike, *, rng: Any = None) -> NDArray[np.float64]:
        """Same as :meth:`apply`."""
        return self.apply(values, rng=rng)

    # -- privacy questions --------------------------------------------------------------
    def leakage_under(self, prior: ArrayLike) -> float:
        """The largest PML over the released grid for the prior ``(P(-1), P(+1))``.

        Attained at the outputs ``+-1``: ``-log(p_min + (1 - p_min) e^{-2/b_released})``
        (:func:`pmlkit.additive.laplace_grid_eps`).

        Examples
        --------
        >>> from pmlkit.additive import LaplaceMechanism
        >>> m = LaplaceMechanism.from_scale(1.0)
        >>> round(m.leakage_under([0.0, 1.0]), 6)   # a degenerate prior: 2 / b
        2.0
        """
        from .grid import laplace_grid_eps

        r, q = as_binary_prior(prior)
        return laplace_grid_eps(self.b, min(r, q), self.granularity)

    def worst_case_over(self, uncertainty_set: UncertaintySet) -> float:
        """The exact worst case of :meth:`leakage_under` over a set of binary priors.

        :meth:`leakage_under` decreases in ``p_min``, so the worst case is at the set's
        smallest ``p_min``.

        Examples
        --------
        >>> import pmlkit
        >>> from pmlkit.additive import LaplaceMechanism
        >>> m = LaplaceMechanism.from_scale(1.0)
        >>> ball = pmlkit.L1Ball([0.5, 0.5], 0.2)   # p_min >= 0.4
        >>> round(m.worst_case_over(ball), 6) == round(m.leakage_under([0.4, 0.6]), 6)
        True
        """
        from .grid import laplace_grid_eps

        uset = _check_binary_set(uncertainty_set)
        return laplace_grid_eps(self.b, smallest_p_min(uset), self.granularity)

    def binarized(self) -> Mechanism:
        """The 2 x 2 :class:`pmlkit.Mechanism` of ``sign(X + L)``, ``L ~ Laplace(0, b)``.

        The flip probability is :func:`pmlkit.additive.laplace_flip_probability` ``(b)``
        ``= e^{-1/b} / 2`` (through :func:`pmlkit.additive.laplace_binarized_channel`);
        the bit is sampled exactly by :func:`pmlkit.additive.laplace_binarized`. The
        result carries this mechanism's set and its own exact worst case over it as
        ``certified_eps`` (and ``parameters["eps"]``).

        Examples
        --------
        >>> import math
        >>> from pmlkit.additive import LaplaceMechanism
        >>> w = LaplaceMechanism.from_scale(1.0).binarized().matrix
        >>> bool(w[1, 0] == 0.5 * math.exp(-1.0))   # P(bit = -1 | X = +1)
        True
        """
        from .laplace import laplace_binarized_channel

        return _binarized(laplace_binarized_channel(self.b), self.guarantee,
                          self.provenance, {"b": self.b, "threshold": 0.0})

    # -- pickle / equality ----------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle as plain data; unpickling re-validates and recomputes the guarantee."""
        return (_rebuild, ("laplace", self.b, self.granularity, self.guarantee.to_dict(),
                           self.provenance.to_dict()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LaplaceMechanism):
            return NotImplemented
        return (self.b == other.b and self.granularity == other.granularity
                and self.guarantee == other.guarantee and self.provenance == other.provenance)

    __hash__ = None  # type: ignore[assignment]


def _laplace_grid(b: Any, granularity: Any) -> GridNoise:
    from .grid import laplace_grid

    return laplace_grid(b, granularity)


def laplace_mechanism(b: float, granularity: Any, where: Over, eps: float | None, designer: str,
             details: dict[str, Any] | None = None) -> LaplaceMechanism:
    """Build a LaplaceMechanism: its certified eps computed from the set."""
    from .grid import laplace_grid_eps

    grid = _laplace_grid(b, granularity)
    cert = laplace_grid_eps(b, smallest_p_min(where.set), grid.granularity)
    # rounding counts against the guarantee: without a target the mechanism promises its
    # computed eps raised by its rounding margin; a target must be safely above it
    if eps is None:
        eps = safe_upper(cert)
    elif exceeds(cert, eps):
        raise ValidationError(
            f"eps={fmt(eps)} is not above the worst case {cert!r} of the Laplace mechanism "
            f"of scale b={fmt(b)} over the set by more than its rounding margin; choose a "
            f"larger b or eps")
    g = where.guarantee(eps=eps, certified_eps=cert)
    prov = Provenance(designer=designer, method=where.method, estimate=where.estimate,
                      details={"b": grid.requested_scale, "granularity": grid.granularity,
                               "released_b": grid.scale, **(details or {})})
    return LaplaceMechanism(grid.requested_scale, grid.granularity, g, prov)


# --------------------------------------------------------------------------- Gaussian

@dataclass(frozen=True, eq=False)
class GaussianMechanism:
    """``Y = X + G`` on binary ``X in {-1, +1}``, released on a grid with discrete Gaussian noise.

    Its guarantee is (eps, delta)-PML: with probability ``>= 1 - guarantee.delta`` (over the
    reference sample) the prior lies in the set, and then the released value leaks more than
    ``guarantee.eps`` with probability at most ``guarantee.output_delta``, computed exactly
    for the grid. Build it with :meth:`from_scale` or
    :func:`pmlkit.additive.calibrate_gaussian` (its result's ``.mechanism``);
    :meth:`with_eps` states the guarantee at another eps, :meth:`curve` gives the whole
    (eps, delta) curve.

    Parameters
    ----------
    sigma
        The requested standard deviation, ``> 0`` (released: :attr:`released_sigma`).
    granularity
        The grid step (``None``: the default of :func:`pmlkit.additive.gaussian_grid`).
    guarantee
        Its ``output_delta`` must be at least the violation probability pmlkit computes at
        ``guarantee.eps`` over the set.
    provenance
        How the mechanism was made.

    Examples
    --------
    >>> import pmlkit
    >>> from pmlkit.additive import GaussianMechanism
    >>> box = pmlkit.Box([0.5, 0.3], [0.7, 0.5])
    >>> mech = GaussianMechanism.from_scale(2.0, eps=1.0, over=box)
    >>> round(mech.guarantee.output_delta, 4)     # P(leak > 1) at the worst prior
    0.0115
    >>> mech.leakage_under([0.5, 0.5])            # sup over outputs: log 2, not attained
    0.6931471805599453
    """

    sigma: float
    granularity: float | None
    guarantee: PMLGuarantee = field(repr=False)
    provenance: Provenance = field(repr=False)

    def __post_init__(self) -> None:
        grid = _gaussian_grid(self.sigma, self.granularity)
        object.__setattr__(self, "sigma", grid.requested_scale)
        object.__setattr__(self, "granularity", grid.granularity)
        _check_typed(self.guarantee, self.provenance)
        if self.guarantee.certified_eps < self.guarantee.eps - CERTIFY_TOL:
            raise ValidationError(
                f"guarantee.certified_eps = {self.guarantee.certified_eps!r} must equal eps = "
                f"{self.guarantee.eps!r} for a Gaussian mechanism: its leakage is unbounded in "
                f"the noise, what pmlkit certifies is the pair (eps, output_delta)")
        uset = _claimed_set(self.guarantee)
        actual = float(self._delta1(uset, np.array([self.guarantee.eps]))[0])
        if actual > self.guarantee.output_delta + OUTPUT_DELTA_TOL:
            raise ValidationError(
                f"guarantee.output_delta = {self.guarantee.output_delta!r} is below the "
                f"probability {actual!r} that this Gaussian mechanism (sigma = "
                f"{self.sigma!r}, granularity {self.granularity!r}) leaks more than eps = "
                f"{self.guarantee.eps!r} over its set: the guarantee does not hold")

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_scale(cls, sigma: float, *, eps: float, over: Any = None,
                   granularity: float | None = None) -> GaussianMechanism:
        """The mechanism of standard deviation ``sigma`` with its guarantee at ``eps``.

        ``output_delta = sup over the set of P[pml(Y) > eps]`` for the released grid
        (:func:`pmlkit.additive.gaussian_grid_delta1_interval`).

        Parameters
        ----------
        sigma
            ``> 0``.
        eps
            The eps the guarantee is stated at, ``>= 0``.
        over
            As for :meth:`LaplaceMechanism.from_scale` (``None``: every prior).
        granularity
            The release grid (default: :func:`pmlkit.additive.gaussian_grid`'s).

        Raises
        ------
        ValidationError
            When every output may leak more than ``eps`` (``output_delta`` would be 1).

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism
        >>> m = GaussianMechanism.from_scale(1.0, eps=2.0, over=[0.5, 0.5])
        >>> m.guarantee.output_delta   # -log(1/2 + ...) < log 2 < 2: never exceeded
        0.0
        """
        return gaussian_mechanism(check_scale(sigma, "sigma"), granularity, read_over(over),
                         check_eps(eps), "GaussianMechanism.from_scale")

    def with_eps(self, eps: float) -> GaussianMechanism:
        """The same mechanism, its guarantee stated at another ``eps`` over the same set.

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism
        >>> m = GaussianMechanism.from_scale(1.0, eps=0.5)
        >>> m.with_eps(1.0).guarantee.output_delta < m.guarantee.output_delta
        True
        """
        return gaussian_mechanism(self.sigma, self.granularity,
                                  _over_of(self.guarantee, self.provenance), check_eps(eps),
                                  self.provenance.designer, dict(self.provenance.details))

    # -- the release --------------------------------------------------------------------
    @property
    def grid(self) -> GridNoise:
        """The released grid (:func:`pmlkit.additive.gaussian_grid`).

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism
        >>> GaussianMechanism.from_scale(1.1, eps=1.0, granularity=0.5).grid.units
        3
        """
        return _gaussian_grid(self.sigma, self.granularity)

    @property
    def released_sigma(self) -> float:
        """The sigma of the released discrete Gaussian noise, ``ceil(sigma/g) g``.

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism
        >>> GaussianMechanism.from_scale(1.1, eps=1.0, granularity=0.5).released_sigma
        1.5
        """
        return self.grid.scale

    def apply(self, values: ArrayLike, *, rng: Any = None) -> NDArray[np.float64]:
        """Release ``values`` (an array of -1/+1): :func:`pmlkit.additive.gaussian_noise`.

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism, gaussian_noise
        >>> m = GaussianMechanism.from_scale(1.0, eps=1.0)
        >>> bool((m([1, -1], rng=5) == gaussian_noise([1, -1], 1.0, rng=5)).all())
        True
        """
        from .sampling import gaussian_noise

        return gaussian_noise(values, self.sigma, granularity=self.granularity, rng=rng)

    def __call__(self, values: ArrayLike, *, rng: Any = None) -> NDArray[np.float64]:
        """Same as :meth:`apply`."""
        return self.apply(values, rng=rng)

    # -- privacy questions --------------------------------------------------------------
    def leakage_under(self, prior: ArrayLike) -> float:
        """The supremum over released values of the PML under ``prior``: ``-log p_min``.

        Far out on the grid one input is (almost) certain, so the per-outcome PML tends to
        ``-log P(x)`` of the less likely input; it is never attained, and ``inf`` for a
        degenerate prior. This is why the Gaussian's guarantee is stated with
        ``output_delta`` (see :meth:`violation_probability`).

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism
        >>> m = GaussianMechanism.from_scale(1.0, eps=1.0)
        >>> round(m.leakage_under([0.25, 0.75]), 6)   # -log 0.25
        1.386294
        """
        r, q = as_binary_prior(prior)
        p = min(r, q)
        return -math.log(p) if p > 0 else math.inf

    def worst_case_over(self, uncertainty_set: UncertaintySet) -> float:
        """The supremum of :meth:`leakage_under` over a set: ``-log`` of its smallest ``p_min``.

        Examples
        --------
        >>> import pmlkit
        >>> from pmlkit.additive import GaussianMechanism
        >>> m = GaussianMechanism.from_scale(1.0, eps=1.0)
        >>> round(m.worst_case_over(pmlkit.L1Ball([0.5, 0.5], 0.5)), 6)   # -log 0.25
        1.386294
        """
        p = smallest_p_min(_check_binary_set(uncertainty_set))
        return -math.log(p) if p > 0 else math.inf

    def violation_probability(self, prior: ArrayLike, eps: float) -> float:
        """``P[pml(Y) > eps]`` of the released grid mechanism for one prior.

        :func:`pmlkit.additive.gaussian_grid_violation_probability`.

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism
        >>> m = GaussianMechanism.from_scale(1.0, eps=1.0)
        >>> m.violation_probability([0.5, 0.5], 0.7)   # no output leaks more than log 2
        0.0
        """
        from .grid import gaussian_grid_violation_probability

        return gaussian_grid_violation_probability(self.sigma, prior, eps, self.granularity)

    def curve(self, eps: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The (eps, delta) curve over the guarantee's set: ``delta = d1 + d2 - d1 d2``.

        ``d1(eps)`` is the largest violation probability over the set (for the grid) and
        ``d2`` the set's own failure probability ``guarantee.delta`` (the "direct" curve of
        :func:`pmlkit.additive.calibrate_gaussian`).

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism
        >>> m = GaussianMechanism.from_scale(1.0, eps=1.0, over=[0.5, 0.5])
        >>> e, d = m.curve([0.1, 0.8])
        >>> # eps = 0.1: |Y| > 0.1056 violates, Phi(0.894) + Phi(-1.106) = 0.949;
        >>> # eps = 0.8 > log 2: no output ever leaks that much
        >>> d.round(3).tolist()
        [0.949, 0.0]
        """
        from .gaussian import as_eps_array

        e, _ = as_eps_array(eps)
        d1 = self._delta1(self.guarantee.set, e)
        d2 = self.guarantee.delta
        from .._validation import readonly

        return readonly(e), readonly(d1 + d2 - d1 * d2)

    def envelope(self, delta: float | None = None) -> EnvelopeBound:
        """The post-processing-robust level of the released grid mechanism over the
        guarantee's set, and whether the guarantee's own tail statement survives.

        The guarantee says ``P[pml(Y) > eps] <= output_delta`` for the released value
        ``Y``; that is not a statement about functions of ``Y`` (merging a violating output
        with its neighbour can move mass above ``eps``). This computes, for exactly the
        released grid channel (:func:`pmlkit.additive.grid.gaussian_grid_channel`) and
        every prior of the guarantee's set, :func:`pmlkit.envelope.envelope_bound` at
        ``delta`` (default ``output_delta``): a level ``t`` with ``P[pml(Z) > t] <= delta``
        for every post-processing ``Z``, the smaller of the fractional-knapsack level and
        ``ML + log(1/delta)`` (its ``method`` says which), and checks the statement at
        ``guarantee.eps`` (``survives_post_processing``).

        Raises
        ------
        TooLargeError
            When the grid puts the inputs more than ``2^22`` steps apart (the channel is
            not tabulated; as for the exact violation probability over an interval).

        Examples
        --------
        Every output but 0 leaks more than 0.3 (``output_delta = 1 - e^{-1/2} / sum_k
        e^{-k^2/8} = 0.879``); after post-processing, 0.879 of the mass can be made to leak
        up to 0.5682 (``tests/test_envelope_gaussian.py`` checks this level against the exact
        LP envelope of the tabulated channel):

        >>> from pmlkit.additive import GaussianMechanism
        >>> m = GaussianMechanism.from_scale(1.0, eps=0.3, over=[0.5, 0.5], granularity=0.5)
        >>> env = m.envelope()
        >>> round(m.guarantee.output_delta, 4), round(env.eps, 4), env.method
        (0.879, 0.5682, 'fractional knapsack')
        >>> env.survives_post_processing      # the level after post-processing is above 0.3
        False
        >>> round(m.envelope(0.0).eps, 4)     # delta = 0: the pure worst case, log 2
        0.6931
        """
        from ..envelope import envelope_bound
        from .grid import gaussian_grid_channel

        d = self.guarantee.output_delta if delta is None else delta
        _, w = gaussian_grid_channel(self.grid)
        return envelope_bound(w, self.guarantee.set, d, eps=self.guarantee.eps)

    def __repr__(self) -> str:
        g = self.guarantee
        try:
            env = self.envelope()
            post = (f", envelope={env.eps:.6g} ({env.method}), survives_post_processing="
                    f"{env.survives_post_processing}")
        except PMLError:  # pragma: no cover - a grid too fine to tabulate
            post = ""
        return (f"GaussianMechanism(sigma={self.sigma!r}, granularity={self.granularity!r}, "
                f"eps={g.eps!r}, output_delta={g.output_delta:.6g}{post})")

    def _delta1(self, uset: UncertaintySet, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        from .grid import grid_delta1_over_interval

        lo, hi = prior_interval(uset)
        return np.asarray(grid_delta1_over_interval(self.grid, lo, hi, eps), dtype=np.float64)

    def binarized(self) -> Mechanism:
        """The 2 x 2 :class:`pmlkit.Mechanism` of ``sign(X + G)``, ``G ~ N(0, sigma^2)``.

        Flip probability :func:`pmlkit.additive.gaussian_flip_probability` ``(sigma)``
        ``= Phi(-1/sigma)``; sampled exactly by :func:`pmlkit.additive.gaussian_binarized`.
        Unlike the Gaussian itself the bit is pure eps-PML: the result carries the set and
        its exact worst case over it.

        Examples
        --------
        >>> from pmlkit.additive import GaussianMechanism
        >>> w = GaussianMechanism.from_scale(1.0, eps=1.0).binarized().matrix
        >>> round(float(w[1, 0]), 6)      # Phi(-1)
        0.158655
        """
        from .gaussian import gaussian_binarized_channel

        return _binarized(gaussian_binarized_channel(self.sigma), self.guarantee,
                          self.provenance, {"sigma": self.sigma, "threshold": 0.0})

    # -- pickle / equality ----------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle as plain data; unpickling re-validates and recomputes the guarantee."""
        return (_rebuild, ("gaussian", self.sigma, self.granularity,
                           self.guarantee.to_dict(), self.provenance.to_dict()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GaussianMechanism):
            return NotImplemented
        return (self.sigma == other.sigma and self.granularity == other.granularity
                and self.guarantee == other.guarantee and self.provenance == other.provenance)

    __hash__ = None  # type: ignore[assignment]


def _gaussian_grid(sigma: Any, granularity: Any) -> GridNoise:
    from .grid import gaussian_grid

    return gaussian_grid(sigma, granularity)


def gaussian_mechanism(sigma: float, granularity: Any, where: Over, eps: float, designer: str,
              details: dict[str, Any] | None = None) -> GaussianMechanism:
    """Build a GaussianMechanism: its output delta computed for the grid over the set."""
    from .grid import grid_delta1_over_interval

    grid = _gaussian_grid(sigma, granularity)
    lo, hi = prior_interval(where.set)
    d1 = float(grid_delta1_over_interval(grid, lo, hi, np.array([eps]))[0])
    if d1 >= 1.0:
        raise ValidationError(
            f"eps={fmt(eps)}: every released value may leak more than eps under some prior "
            f"of the set (violation probability 1); choose a larger eps")
    g = where.guarantee(eps=eps, certified_eps=eps, output_delta=d1)
    base = {"sigma": grid.requested_scale, "granularity": grid.granularity,
            "released_sigma": grid.scale}
    prov = Provenance(designer=designer, method=where.method, estimate=where.estimate,
                      details={**(details or {}), **base})
    return GaussianMechanism(grid.requested_scale, grid.granularity, g, prov)


# --------------------------------------------------------------------------- shared

def _binarized(channel: Mechanism, guarantee: PMLGuarantee, provenance: Provenance,
               parameters: dict[str, Any]) -> Mechanism:
    """The thresholded channel as an old-style :class:`pmlkit.Mechanism` with the set and
    its exact worst case over it."""
    from ..mechanism import Mechanism
    from ..worstcase import leakage_capacity

    cert = leakage_capacity(channel.matrix, guarantee.set)
    params: dict[str, Any] = {**parameters, "eps": cert}
    if guarantee.basis == "sample" and provenance.estimate is not None:
        # what a mechanism file needs to rebuild the sample-based set and re-check it
        params.update(delta=guarantee.delta, m=guarantee.m, confidence=guarantee.method,
                      prior=list(provenance.estimate))
    return Mechanism(channel.matrix, input_labels=channel.input_labels,
                     output_labels=channel.output_labels, designer=channel.designer,
                     parameters=params, uncertainty_set=guarantee.set.to_dict(),
                     certified_eps=cert)


def _rebuild(kind: str, scale: float, granularity: float, guarantee: dict[str, Any],
             provenance: dict[str, Any]) -> LaplaceMechanism | GaussianMechanism:
    """Unpickle (strict: every field validated again, the guarantee recomputed)."""
    g = PMLGuarantee.from_dict(guarantee)
    p = Provenance.from_dict(provenance)
    if kind == "laplace":
        return LaplaceMechanism(scale, granularity, g, p)
    if kind == "gaussian":
        return GaussianMechanism(scale, granularity, g, p)
    raise ValidationError(f"unknown additive mechanism kind {kind!r}")
