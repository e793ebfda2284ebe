"""Additive noise released on a binary grid: exact samplers and the guarantee of what is released.

Why a grid
----------
A float ``x + noise`` computed in IEEE arithmetic is not the real-valued mechanism that
Prop. Laplaceleakage and Section "gauss" analyse. For ``x`` in ``{-1, +1}`` the doubles
reachable from ``-1 + L`` and from ``+1 + L`` differ in their low-order bits (in ``[1, 2)``,
``-1 + L`` is a multiple of ``2^-51`` where ``1 + L`` is rounded to ``2^-52``), so one
released value can identify ``x`` with certainty (Mironov 2012). pmlkit therefore releases
only values of the grid ``g Z`` with ``g = 2^-j`` (``0 <= j <= 30``, exact in binary, and
``+-1`` lie on it):

    Y = (x / g + K) * g,

where the integer ``K`` is drawn from an exactly known discrete law that does not depend on
``x``, by a sampler that only uses exact integer arithmetic on uniform integers (no float
noise is ever added to ``x``). ``x / g = +-2^j`` is an integer, the sum is an exact integer
and the product by ``2^-j`` is exact in float64 (``|x/g + K| < 2^53``; with ``j <= 30``
and at most ``2^32`` grid steps per unit of scale, a larger ``|K|`` has probability below
``exp(-2^20)``). So the law of every released float is known exactly,
and the set of reachable outputs is the same lattice ``g Z`` for both inputs: a value
reachable from one input is reachable from the other.

The noise laws (scale in grid units ``n``, a positive integer)
---------------------------------------------------------------
- Discrete Laplace: ``P(K = k) = tanh(1/(2n)) e^{-|k|/n}``. The released scale is
  ``b_released = n g`` with ``n = ceil(b / g)``, so ``b_released >= b`` (at most one grid
  step more).
- Discrete Gaussian: ``P(K = k) = e^{-k^2/(2n^2)} / Z``, ``Z = sum_k e^{-k^2/(2n^2)}``,
  ``sigma_released = n g`` with ``n = ceil(sigma / g)``.

Both are sampled with the exact rejection samplers of Canonne, Kamath and Steinke (2020,
"The discrete Gaussian for differential privacy", Algorithms 1-3): Bernoulli(``e^{-gamma}``)
for rational ``gamma`` from Bernoulli(``gamma/k``) trials, the discrete Laplace from a
uniform integer and a geometric count, the discrete Gaussian by rejection from a discrete
Laplace proposal. Every Bernoulli(``a/d``) is a comparison of an exactly uniform integer in
``[0, d)`` (numpy's ``Generator.integers``, unbiased) with ``a``; the code here is pmlkit's
own, vectorised over the batch (a loop over rounds of rejection, never over records).

Default granularity: ``g`` = the largest power of two ``<= b 2^-20`` (Laplace) or
``<= sigma 2^-10`` (Gaussian), clipped to ``[2^-30, 1]``. The Gaussian's coarser default
keeps the exact acceptance test in 64-bit integers (``n <= 2^14``).

What the guarantee covers
-------------------------
The leakage of the released grid mechanism, computed from its exact cell probabilities,
with ``i = y / g`` the released index and ``N = 2^j = 1/g``:

    pml(i) = log( max_x P(i | x) / sum_x P(x) P(i | x) ),
    P(i | +1) = P(K = i - N),   P(i | -1) = P(K = i + N).

- Laplace: ``P(i|+1) / P(i|-1) = e^{(|i+N| - |i-N|)/n}`` grows with ``|i|`` up to ``|i| = N``
  and is constant beyond, so the largest pml is attained at ``i = +-N`` (the outputs
  ``+-1``) and equals ``-log(p_min + (1 - p_min) e^{-2/b_released})``: Prop.
  Laplaceleakage at the released scale. A grid therefore costs nothing in eps and,
  since ``b_released >= b``, a scale calibrated for the continuous mechanism stays valid.
- Gaussian: ``P(i|+1) / P(i|-1) = e^{2 i N / n^2} = e^{2 y / sigma_released^2}``, the same
  per-outcome leakage as the continuous mechanism, but the violation set
  ``E_eps = {i : pml(i) > eps}`` is a set of grid points and its probability is a sum of
  discrete Gaussian tails, not of normal tails. An (eps, delta) tail statement does not
  survive rounding in general, so delta is recomputed for the grid
  (:func:`gaussian_grid_violation_probability`, :func:`gaussian_grid_delta1_interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._deprecation import positional_deprecated
from .._validation import check_eps, check_real, exceeds, fmt
from ..errors import TooLargeError, ValidationError
from ._args import as_binary_prior, check_interval, check_p_min, check_scale
from .gaussian import as_eps_array, neg_log_mix

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

    from ._args import FloatArray

__all__ = [
    "GridNoise",
    "gaussian_grid",
    "gaussian_grid_delta1_interval",
    "gaussian_grid_pml",
    "gaussian_grid_violation_probability",
    "laplace_grid",
    "laplace_grid_eps",
    "laplace_grid_pml",
]

#: Smallest and largest exponent j of the granularity g = 2^-j.
MIN_EXPONENT, MAX_EXPONENT = 0, 30
#: Default granularity relative to the scale: 2^-20 (Laplace), 2^-10 (Gaussian).
LAPLACE_RELATIVE_BITS, GAUSSIAN_RELATIVE_BITS = 20, 10
#: Largest scale in grid units: the samplers' integers stay far inside int64.
MAX_LAPLACE_UNITS, MAX_GAUSSIAN_UNITS = 2**32, 2**14


@dataclass(frozen=True)
class GridNoise:
    """The released grid of :func:`laplace_noise` / :func:`gaussian_noise` for one scale.

    Attributes
    ----------
    kind
        ``"laplace"`` or ``"gaussian"``.
    requested_scale
        The ``b`` or ``sigma`` asked for.
    granularity
        ``g = 2^-exponent``: every released value is an integer multiple of ``g``.
    exponent
        ``j`` with ``g = 2^-j``; the inputs ``+-1`` are the grid indices ``+-2^j``.
    units
        The scale in grid units, ``n = ceil(requested_scale / g)`` (an integer).
    scale
        The scale of the released noise, ``n g >= requested_scale`` (exact).

    Examples
    --------
    >>> from pmlkit.additive import laplace_grid
    >>> grid = laplace_grid(1.3, granularity=0.25)   # ceil(1.3 / 0.25) = 6 steps
    >>> grid.units, grid.scale, grid.exponent
    (6, 1.5, 2)
    """

    kind: str
    requested_scale: float
    granularity: float
    exponent: int
    units: int
    scale: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-able record.

        Examples
        --------
        >>> from pmlkit.additive import laplace_grid
        >>> laplace_grid(1.3, granularity=0.25).to_dict()["scale"]
        1.5
        """
        return {"kind": self.kind, "requested_scale": self.requested_scale,
                "granularity": self.granularity, "exponent": self.exponent,
                "units": self.units, "scale": self.scale}


def _exponent(granularity: Any, scale: float, relative_bits: int) -> int:
    if granularity is None:
        _, e = math.frexp(scale)  # scale = f 2^e, f in [0.5, 1): floor(log2 scale) = e - 1
        return min(max(relative_bits - (e - 1), MIN_EXPONENT), MAX_EXPONENT)
    g = check_real(granularity, "granularity", low=0.0, low_open=True)
    f, e = math.frexp(g)
    j = 1 - e
    if f != 0.5 or not MIN_EXPONENT <= j <= MAX_EXPONENT:
        raise ValidationError(
            f"granularity must be a power of two 2^-j with {MIN_EXPONENT} <= j <= "
            f"{MAX_EXPONENT} (so that the grid holds -1 and +1 exactly), got {fmt(g)}")
    return j


def _grid(kind: str, scale: Any, granularity: Any, name: str, bits: int,
          max_units: int) -> GridNoise:
    s = check_scale(scale, name)
    j = _exponent(granularity, s, bits)
    units = math.ceil(math.ldexp(s, j))  # s * 2^j is exact
    if units > max_units:
        raise ValidationError(
            f"{name}={fmt(s)} is {units} grid steps of {math.ldexp(1.0, -j)!r}; the exact "
            f"{kind} sampler allows at most {max_units} (choose a coarser granularity, or a "
            f"smaller {name}: this much noise hides a binary label entirely)")
    return GridNoise(kind, s, math.ldexp(1.0, -j), j, int(units), math.ldexp(float(units), -j))


def laplace_grid(b: float, granularity: float | None = None) -> GridNoise:
    """The grid and released scale of :func:`pmlkit.additive.laplace_noise` for scale ``b``.

    ``granularity=None`` gives the largest power of two ``<= b 2^-20`` (clipped to
    ``[2^-30, 1]``); otherwise it must be ``2^-j`` with ``0 <= j <= 30``. The released scale
    is ``ceil(b / g) g``.

    Examples
    --------
    >>> from pmlkit.additive import laplace_grid
    >>> grid = laplace_grid(1.0)                     # default step 2^-20
    >>> grid.granularity == 2.0**-20, grid.scale
    (True, 1.0)
    """
    return _grid("laplace", b, granularity, "b", LAPLACE_RELATIVE_BITS, MAX_LAPLACE_UNITS)


def gaussian_grid(sigma: float, granularity: float | None = None) -> GridNoise:
    """The grid and released sigma of :func:`pmlkit.additive.gaussian_noise`.

    ``granularity=None`` gives the largest power of two ``<= sigma 2^-10`` (clipped to
    ``[2^-30, 1]``); the scale in grid units must be at most ``2^14``.

    Examples
    --------
    >>> from pmlkit.additive import gaussian_grid
    >>> grid = gaussian_grid(2.0)                    # step 2^-9 <= 2 * 2^-10
    >>> grid.granularity == 2.0**-9, grid.units, grid.scale
    (True, 1024, 2.0)
    """
    return _grid("gaussian", sigma, granularity, "sigma", GAUSSIAN_RELATIVE_BITS,
                 MAX_GAUSSIAN_UNITS)


# --------------------------------------------------------------------------- exact samplers

def _bernoulli(gen: np.random.Generator, num: Any, den: Any, size: int) -> np.ndarray:
    """Exact Bernoulli(num/den) for integers ``0 <= num <= den`` (arrays broadcast)."""
    out: np.ndarray = gen.integers(0, den, size=size, dtype=np.int64) < num
    return out


def _bernoulli_exp_frac(gen: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for ``0 <= num <= den`` (CKS Algorithm 1, gamma <= 1).

    Draw ``A_k ~ Bernoulli(gamma/k)`` for ``k = 1, 2, ...`` until the first failure; the
    answer is whether that ``k`` is odd. ``Bernoulli(gamma/k)`` is the conjunction of the
    independent ``Bernoulli(gamma)`` and ``Bernoulli(1/k)`` (no products of integers).
    """
    size = num.size
    out = np.zeros(size, dtype=bool)
    active = np.arange(size)
    k = 1
    while active.size:
        a = _bernoulli(gen, num[active], den, active.size)
        if k > 1:
            a &= gen.integers(0, k, size=active.size, dtype=np.int64) == 0
        stopped = active[~a]
        out[stopped] = k % 2 == 1
        active = active[a]
        k += 1
    return out


def _bernoulli_exp(gen: np.random.Generator, whole: np.ndarray, num: np.ndarray,
                   den: int) -> np.ndarray:
    """Exact Bernoulli(exp(-(whole + num/den))), ``whole >= 0``, ``0 <= num < den``.

    ``exp(-gamma) = exp(-1)^whole exp(-num/den)``: ``whole`` independent Bernoulli(e^-1)
    trials and one Bernoulli(exp(-num/den)), all of which must succeed.
    """
    alive = np.ones(whole.size, dtype=bool)
    left = whole.astype(np.int64).copy()
    todo = np.nonzero(left > 0)[0]
    while todo.size:
        ok = _bernoulli_exp_frac(gen, np.ones(todo.size, dtype=np.int64), 1)
        alive[todo[~ok]] = False
        left[todo] -= 1
        todo = todo[ok & (left[todo] > 0)]
    idx = np.nonzero(alive)[0]
    if idx.size:
        alive[idx] = _bernoulli_exp_frac(gen, num[idx], den)
    return alive


def _geometric_exp1(gen: np.random.Generator, size: int) -> np.ndarray:
    """``V`` with ``P(V = v) = (1 - e^-1) e^{-v}``: count of Bernoulli(e^-1) successes."""
    v = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        ok = _bernoulli_exp_frac(gen, np.ones(active.size, dtype=np.int64), 1)
        active = active[ok]
        v[active] += 1
    return v


def _discrete_laplace(gen: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``K`` with ``P(K = k) = tanh(1/(2n)) e^{-|k|/n}`` exactly (CKS Algorithm 2, s = 1, t = n).

    ``U`` uniform on ``{0, ..., n-1}`` kept with probability ``e^{-U/n}`` and ``V`` geometric
    give ``X = U + n V`` with ``P(X = x) ∝ e^{-x/n}``; a fair sign, rejecting ``-0``.
    """
    out = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        m = todo.size
        u = gen.integers(0, n, size=m, dtype=np.int64)
        keep = _bernoulli_exp_frac(gen, u, n)
        u, idx = u[keep], todo[keep]
        x = u + n * _geometric_exp1(gen, idx.size)
        neg = gen.integers(0, 2, size=idx.size, dtype=np.int64) == 1
        good = ~(neg & (x == 0))
        out[idx[good]] = np.where(neg[good], -x[good], x[good])
        done = np.zeros(m, dtype=bool)
        done[np.nonzero(keep)[0][good]] = True
        todo = todo[~done]
    return out


_INT64_SQRT = 3_037_000_499  # largest a with a * a < 2^63


def _discrete_gaussian(gen: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``K`` with ``P(K = k) ∝ e^{-k^2/(2 n^2)}`` exactly (CKS Algorithm 3, sigma = n).

    Proposal ``Y`` discrete Laplace of scale ``t = n + 1``, accepted with probability
    ``exp(-(|Y| - n^2/t)^2 / (2 n^2)) = exp(-A^2 / D)`` with ``A = t|Y| - n^2``,
    ``D = 2 n^2 t^2`` (integers; ``D < 2^63`` for ``n <= 2^14``).
    """
    t = n + 1
    den = 2 * n * n * t * t
    out = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        y = _discrete_laplace(gen, t, todo.size)
        a = np.abs(t * np.abs(y) - n * n)
        whole = np.zeros(y.size, dtype=np.int64)
        frac = np.zeros(y.size, dtype=np.int64)
        small = a <= _INT64_SQRT
        sq = a[small] * a[small]
        whole[small], frac[small] = sq // den, sq % den
        for i in np.nonzero(~small)[0]:  # |Y| > 11 sigma at n = 2^14: Python integers
            w, f = divmod(int(a[i]) ** 2, den)
            # capping changes an acceptance probability below e^{-2^62} by less than that
            whole[i] = min(w, 2**62)
            frac[i] = f
        acc = _bernoulli_exp(gen, whole, frac, den)
        out[todo[acc]] = y[acc]
        todo = todo[~acc]
    return out


def sample_grid_indices(x: np.ndarray, grid: GridNoise, gen: np.random.Generator) -> np.ndarray:
    """``x / g + K`` as int64 (``x`` int8 of -1/+1), ``K`` from the grid's exact noise law."""
    size = x.size
    if grid.kind == "laplace":
        k = _discrete_laplace(gen, grid.units, size)
    else:
        k = _discrete_gaussian(gen, grid.units, size)
    out: np.ndarray = (x.reshape(-1).astype(np.int64) << grid.exponent) + k
    return out


def indices_to_values(idx: np.ndarray, grid: GridNoise, shape: tuple[int, ...]) -> np.ndarray:
    """``idx * 2^-j`` as float64, exact for ``|idx| < 2^53``."""
    return np.ldexp(idx.astype(np.float64), -grid.exponent).reshape(shape)


# --------------------------------------------------------------------------- grid leakage

def _indices(y: Any, grid: GridNoise) -> np.ndarray:
    """Grid indices ``y / g`` of released values (refusing values off the grid)."""
    yy = np.asarray(y, dtype=np.float64)
    if not np.isfinite(yy).all():
        raise ValidationError("y must be finite (no NaN or inf)")
    i = np.ldexp(yy, grid.exponent)
    if not (np.floor(i) == i).all() or (np.abs(i) >= 2.0**53).any():
        bad = yy[(np.floor(i) != i) | (np.abs(i) >= 2.0**53)].flat[0]
        raise ValidationError(
            f"y must be released values, multiples of the granularity "
            f"{grid.granularity!r}, got {bad!r}")
    return i


def _log_mix_pml(log_p_plus: np.ndarray, log_p_minus: np.ndarray, q: float,
                 r: float) -> np.ndarray:
    """``log max(P+, P-) - log(q P+ + r P-)`` from log cell probabilities."""
    with np.errstate(divide="ignore"):
        lq, lr = np.log(q), np.log(r)
    top = np.maximum(log_p_plus, log_p_minus)
    out: np.ndarray = -np.logaddexp(lq + log_p_plus - top, lr + log_p_minus - top)
    return out


def laplace_grid_pml(y: ArrayLike, b: float, prior: ArrayLike,
                     granularity: float | None = None) -> Any:
    """Per-outcome PML of the released Laplace grid mechanism, from its cell probabilities.

    ``log P(i | x) = log tanh(1/(2n)) - |i - x N| / n`` (the normaliser cancels), ``i = y/g``,
    ``N = 1/g``; ``pml = log max_x P(i|x) - log sum_x P(x) P(i|x)``.

    Parameters
    ----------
    y
        Released values (multiples of the granularity).
    b, granularity
        As given to :func:`pmlkit.additive.laplace_noise`.
    prior
        ``(P(-1), P(+1))``.

    Examples
    --------
    With ``b = 1`` on the grid of step ``1/4`` (``n = N = 4``), the likelihood ratio at
    ``y = 1/2`` is ``e^{(6 - 2)/4} = e``, so ``pml = -log((1 + e^{-1})/2) = 0.379885``; the
    leakage grows up to the outputs ``+-1`` and stays at ``-log((1 + e^{-2})/2)`` beyond.

    >>> from pmlkit.additive import laplace_grid_pml
    >>> laplace_grid_pml([0.0, 0.5, 1.0, 3.0], 1.0, [0.5, 0.5], 0.25).round(6).tolist()
    [0.0, 0.379885, 0.566219, 0.566219]
    """
    grid = laplace_grid(b, granularity)
    r, q = as_binary_prior(prior)
    i = _indices(y, grid)
    big_n = float(1 << grid.exponent)
    out = _log_mix_pml(-np.abs(i - big_n) / grid.units, -np.abs(i + big_n) / grid.units, q, r)
    return float(out) if out.ndim == 0 else out


def laplace_grid_eps(b: float, p_min: float, granularity: float | None = None) -> float:
    """eps of the released Laplace grid mechanism: the largest per-outcome PML over the grid.

    The likelihood ratio ``e^{(|i+N| - |i-N|)/n}`` is monotone in ``|i|`` up to ``|i| = N``
    and constant beyond, and the mixture puts the larger input's weight in the denominator,
    so the maximum over all grid points is attained at ``i = +-N`` (the outputs ``+-1``);
    it is the maximum of :func:`laplace_grid_pml` there for the prior ``(p_min, 1 - p_min)``,
    which equals Prop. Laplaceleakage at the released scale ``b_released = n g >= b``.

    Examples
    --------
    >>> from pmlkit.additive import laplace_eps, laplace_grid_eps
    >>> # b = 1.3 is released at scale 1.5 on the grid of step 1/4: the eps of b = 1.5
    >>> round(laplace_grid_eps(1.3, 0.5, 0.25), 12) == round(laplace_eps(1.5, 0.5), 12)
    True
    """
    p = check_p_min(p_min)
    grid = laplace_grid(b, granularity)
    pts = np.array([-1.0, 1.0])
    vals = laplace_grid_pml(pts, grid.requested_scale, (p, 1.0 - p), grid.granularity)
    return float(max(float(np.max(vals)), 0.0))


def gaussian_grid_pml(y: ArrayLike, sigma: float, prior: ArrayLike,
                      granularity: float | None = None) -> Any:
    """Per-outcome PML of the released Gaussian grid mechanism, from its cell probabilities.

    ``log P(i | +1) - log P(i | -1) = ((i + N)^2 - (i - N)^2) / (2 n^2) = 2 i N / n^2 =: u``,
    so for ``i >= 0`` ``pml = -log(P(+1) + P(-1) e^{-u})`` and for ``i < 0``
    ``pml = -log(P(-1) + P(+1) e^{u})`` (the normaliser ``Z`` cancels).

    Examples
    --------
    >>> from pmlkit.additive import gaussian_grid_pml
    >>> # y = 0.5, sigma = 1: u = 2 y / sigma^2 = 1, pml = -log((1 + e^{-1}) / 2)
    >>> round(gaussian_grid_pml(0.5, 1.0, [0.5, 0.5], 0.5), 6)
    0.379885
    """
    grid = gaussian_grid(sigma, granularity)
    r, q = as_binary_prior(prior)
    i = _indices(y, grid)
    u = np.abs(i) * _kappa(grid)
    front = np.where(i >= 0, q, r)
    out = neg_log_mix(front, 1.0 - front, u)
    return float(out) if out.ndim == 0 else out


def _kappa(grid: GridNoise) -> float:
    """``u`` per grid index: ``2 N / n^2`` (exact ratio of the squared-exponent difference)."""
    return 2.0 * float(1 << grid.exponent) / (float(grid.units) ** 2)


def _tail_cap(n: int) -> int:
    """``L`` of :class:`_GaussTails`: past it the weight ``e^{-k^2/(2n^2)}`` underflows."""
    return math.ceil(38.7 * n) + 2


class _GaussTails:
    """``S(c) = P(K >= c)`` for the discrete Gaussian of scale ``n`` (any integer ``c``).

    The cell weights ``e^{-k^2/(2n^2)}`` are tabulated for ``0 <= k <= L``, ``L`` the first
    ``k`` whose weight underflows double precision (``k > 38.6 n``; the neglected mass is
    below ``1e-300``), and the tails summed from the far end (small terms first).
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.cap = _tail_cap(n)
        k = np.arange(self.cap + 1, dtype=np.float64)
        w = np.exp(-(k * k) / (2.0 * float(n) * float(n)))
        z = 2.0 * float(np.sum(w[::-1])) - 1.0
        tail = np.cumsum(w[::-1])[::-1] / z  # tail[c] = P(K >= c), c = 0..cap
        self.tail = np.append(tail, 0.0)

    def __call__(self, c: np.ndarray) -> np.ndarray:
        c = np.asarray(c, dtype=np.int64)
        pos = np.minimum(np.maximum(c, 0), self.cap + 1)
        neg = np.minimum(np.maximum(1 - c, 0), self.cap + 1)
        out: np.ndarray = np.where(c >= 0, self.tail[pos], 1.0 - self.tail[neg])
        return out


def _first_violation(front: Any, back: Any, eps: Any, kappa: float, cap: int) -> np.ndarray:
    """Smallest index ``i >= 1`` with ``-log(front + back e^{-i kappa}) > eps`` (``cap``: none).

    Arrays broadcast. A guess from the closed-form threshold, checked and corrected by a
    vectorised binary search over the integers with the same floating-point predicate
    (monotone in ``i``).

    Rounding counts against the guarantee: ``i`` violates when its computed leakage
    :func:`pmlkit._validation.exceeds` eps, so an output whose computed leakage ties eps
    (or is below it by less than ``2^-44`` relative) is in the violation set. The computed
    leakage is within about 10 ulps of the exact one: ``kappa = 2N/n^2`` and ``u = i kappa``
    are one rounding each (``N`` a power of two, ``n^2 < 2^53`` and ``i < 2^53`` exact),
    ``expm1`` and the product by ``back`` add about two more, and :func:`neg_log_mix`
    evaluates ``-log1p(a)`` only for ``a > -1/2`` (condition number below 1.5, else
    ``-logaddexp`` of the two log terms, whose error is relative to the result).
    """
    front_b, back_b, eps_b = np.broadcast_arrays(np.asarray(front, dtype=np.float64),
                                                 np.asarray(back, dtype=np.float64),
                                                 np.asarray(eps, dtype=np.float64))
    shape = front_b.shape
    front_f, back_f, eps_f = front_b.ravel(), back_b.ravel(), eps_b.ravel()

    def viol(i: np.ndarray, at: np.ndarray | None = None) -> np.ndarray:
        """The predicate at indices ``i`` of the entries ``at`` (``None``: all)."""
        if at is None:
            f, b, t = front_f, back_f, eps_f
        else:
            f, b, t = front_f[at], back_f[at], eps_f[at]
        out: np.ndarray = exceeds(neg_log_mix(f, b, i.astype(np.float64) * kappa), t)
        return out

    e = np.expm1(-eps_f)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = -np.log1p(e / back_f) / kappa
    t = np.where((back_f + e > 0) & np.isfinite(t), t, float(cap))
    guess = np.clip(np.floor(t), 1, cap).astype(np.int64)
    lo = np.maximum(guess - 2, 0)          # want viol(lo) False (i = 0 never violates)
    hi = np.minimum(guess + 2, cap)        # want viol(hi) True (cap counts as violating)
    bad_lo = (lo > 0) & viol(lo)
    lo = np.where(bad_lo, 0, lo)
    bad_hi = (hi < cap) & ~viol(hi)
    hi = np.where(bad_hi, cap, hi)
    # bisect only the entries whose bracket is still open (each entry on its own)
    active = np.flatnonzero(hi - lo > 1)
    while active.size:
        a_lo, a_hi = lo[active], hi[active]
        mid = (a_lo + a_hi) // 2
        v = viol(mid, active)
        a_hi = np.where(v, mid, a_hi)
        a_lo = np.where(v, a_lo, mid)
        hi[active] = a_hi
        lo[active] = a_lo
        active = active[a_hi - a_lo > 1]
    return hi.reshape(shape)


def _grid_violation(tails: _GaussTails, grid: GridNoise, q: Any, eps: Any,
                    a_pos: np.ndarray | None = None,
                    a_neg: np.ndarray | None = None) -> np.ndarray:
    """``P_Y(E_eps)`` on the grid for ``P(+1) = q``; ``a_pos``/``a_neg`` override thresholds.

    Violating indices are ``i >= a_pos`` and ``i <= -a_neg``; with ``K = i - x N``:
    ``q [S(a_pos - N) + S(a_neg + N)] + r [S(a_pos + N) + S(a_neg - N)]``.
    """
    big_n = 1 << grid.exponent
    cap = big_n + tails.cap + 2  # beyond: no mass under either input
    kappa = _kappa(grid)
    q = np.asarray(q, dtype=np.float64)
    r = 1.0 - q
    if a_pos is None:
        a_pos = _first_violation(q, r, eps, kappa, cap)
    if a_neg is None:
        a_neg = _first_violation(r, q, eps, kappa, cap)
    total = (q * (tails(a_pos - big_n) + tails(a_neg + big_n))
             + r * (tails(a_pos + big_n) + tails(a_neg - big_n)))
    return np.asarray(np.clip(total, 0.0, 1.0), dtype=np.float64)


def gaussian_grid_violation_probability(sigma: float, prior: ArrayLike, eps: float,
                                        granularity: float | None = None) -> float:
    """``P_Y[pml(Y) > eps]`` of the released Gaussian grid mechanism for a known prior.

    Sums of exact discrete Gaussian tails over the grid points whose per-outcome PML
    (:func:`gaussian_grid_pml`) exceeds eps. The output ``0`` never leaks (``pml = 0``).

    Examples
    --------
    On the grid of step ``1/2`` with ``sigma = 1`` (2 steps), every output but ``0``
    leaks more than ``0.1`` under the uniform prior, so the answer is
    ``1 - P(K = 2) = 1 - e^{-1/2} / sum_k e^{-k^2/8} = 1 - e^{-1/2} / sqrt(8 pi)``:

    >>> from pmlkit.additive import gaussian_grid_violation_probability
    >>> round(gaussian_grid_violation_probability(1.0, [0.5, 0.5], 0.1, 0.5), 6)
    0.879015
    """
    grid = gaussian_grid(sigma, granularity)
    _, q = as_binary_prior(prior)
    e = check_eps(eps)
    tails = _GaussTails(grid.units)
    return float(_grid_violation(tails, grid, np.array([q]), e)[0])


#: Tail mass below which breakpoints are not enumerated (their effect is added as a bound).
_PRUNE_TAIL = 2.0**-60


#: Largest ``2^j`` (grid steps from 0 to an input) for the exact sup over an interval.
MAX_INTERVAL_STEPS = 1 << 21


def grid_delta1_over_interval(grid: GridNoise, lo: float, hi: float,
                              eps: FloatArray) -> FloatArray:
    """``sup_{q in [lo, hi]} P_Y(E_eps(P_q))`` on the grid (see the public doc)."""
    tails = _GaussTails(grid.units)
    big_n = 1 << grid.exponent
    if hi > lo and big_n > MAX_INTERVAL_STEPS:
        # the breakpoint search walks the grid between the inputs +-1, 2^(j+1) steps:
        # beyond this it needs gigabytes (a sigma of 1e-5 was killed for lack of memory)
        raise TooLargeError(
            f"sigma={fmt(grid.requested_scale)} on a grid of step 2^-{grid.exponent} puts "
            f"the inputs +-1 {2 * big_n} steps apart; the exact violation probability over "
            f"an interval of priors is computed only up to 2^-21 steps: choose "
            f"granularity >= 2^-21 (or a larger sigma)")
    cap = big_n + tails.cap + 2
    kappa = _kappa(grid)
    # i0: first index whose whole tail beyond it, under either input, is <= _PRUNE_TAIL
    far = np.nonzero(tails.tail <= _PRUNE_TAIL)[0]
    i0 = big_n + int(far[0]) if far.size else cap
    ends = np.array([lo, hi])[None, :]
    col = eps[:, None]
    # all eps at once at the two ends of the interval (strict thresholds)
    ap_all = _first_violation(ends, 1.0 - ends, col, kappa, cap)
    an_all = _first_violation(1.0 - ends, ends, col, kappa, cap)
    end_vals = _grid_violation(tails, grid, ends, col, a_pos=ap_all, a_neg=an_all)
    out = end_vals.max(axis=1)
    # breakpoints only where a threshold moves inside the interval
    moving = np.nonzero((ap_all[:, 1] > ap_all[:, 0]) | (an_all[:, 0] > an_all[:, 1]))[0]
    if hi > lo and moving.size:
        _breakpoints(tails, grid, lo, hi, eps, moving, ap_all, an_all, i0, cap, kappa, out)
    return np.asarray(np.minimum(out, 1.0), dtype=np.float64)


#: Breakpoints evaluated per batch of :func:`_breakpoints` (bounds its temporaries).
_BREAKPOINT_BATCH = 1 << 20


def _breakpoints(tails: _GaussTails, grid: GridNoise, lo: float, hi: float,
                 eps: FloatArray, moving: np.ndarray, ap_all: np.ndarray,
                 an_all: np.ndarray, i0: int, cap: int, kappa: float,
                 out: FloatArray) -> None:
    """Raise ``out[k]`` for every ``k`` of ``moving`` to the largest value at its
    breakpoints inside ``[lo, hi]`` (plus the pruning slack), as
    :func:`grid_delta1_over_interval` describes.

    The breakpoints of all eps are evaluated together, in batches of about
    :data:`_BREAKPOINT_BATCH` grid points: every step is elementwise (the threshold
    search of :func:`_first_violation` included), so each breakpoint's value is the one a
    separate evaluation per eps gives, and the per-eps maxima are taken as before."""
    # per eps: the breakpoint ranges [start, stop) of both sides and the pruning slack
    spans: list[tuple[int, float, tuple[int, int], tuple[int, int], float]] = []
    for k in moving:
        ap, an = ap_all[k], an_all[k]
        slack = 0.0
        # positive side: i violates for q below q_i = (e^-eps - e^-u)/(1 - e^-u)
        top = min(int(ap[1]), i0 + 1)
        slack += _PRUNE_TAIL if top < ap[1] else 0.0
        pos = (int(ap[0]), top)
        # negative side: -i violates for q above q_i = (1 - e^-eps)/(1 - e^-u)
        top = min(int(an[0]), i0 + 1)
        slack += _PRUNE_TAIL if top < an[0] else 0.0
        spans.append((int(k), float(eps[k]), pos, (int(an[1]), top), slack))
    side_max: tuple[dict[int, float], dict[int, float]] = ({}, {})
    for side, store in enumerate(side_max):
        batch: list[tuple[int, float, int, int]] = []
        size = 0
        for k, e, pos, neg, _ in spans:
            start, stop = neg if side else pos
            if stop > start:
                batch.append((k, e, start, stop))
                size += stop - start
            if size >= _BREAKPOINT_BATCH:
                _breakpoint_batch(tails, grid, lo, hi, batch, side == 0, cap, kappa, store)
                batch, size = [], 0
        if batch:
            _breakpoint_batch(tails, grid, lo, hi, batch, side == 0, cap, kappa, store)
    for k, _, _, _, slack in spans:
        best = float(out[k])
        for store in side_max:
            if k in store:
                best = max(best, store[k])
        out[k] = best + slack


def _breakpoint_batch(tails: _GaussTails, grid: GridNoise, lo: float, hi: float,
                      batch: list[tuple[int, float, int, int]], positive: bool, cap: int,
                      kappa: float, store: dict[int, float]) -> None:
    """Largest violation probability at the breakpoints of one side, per eps of ``batch``
    (``(k, eps_k, start, stop)``: the grid indices ``start <= i < stop``), into
    ``store[k]``."""
    idx = np.concatenate([np.arange(a, b, dtype=np.int64) for _, _, a, b in batch])
    counts = np.array([b - a for _, _, a, b in batch], dtype=np.int64)
    e = np.repeat(np.array([x[1] for x in batch], dtype=np.float64), counts)
    em = np.repeat(np.array([math.expm1(-x[1]) for x in batch], dtype=np.float64), counts)
    u = idx.astype(np.float64) * kappa
    if positive:
        qb = np.clip((em - np.expm1(-u)) / -np.expm1(-u), lo, hi)
        an_b = _first_violation(1.0 - qb, qb, e, kappa, cap)
        vals = _grid_violation(tails, grid, qb, e, a_pos=idx, a_neg=an_b)
    else:
        qb = np.clip(em / np.expm1(-u), lo, hi)
        ap_b = _first_violation(qb, 1.0 - qb, e, kappa, cap)
        vals = _grid_violation(tails, grid, qb, e, a_pos=ap_b, a_neg=idx)
    starts = np.cumsum(counts) - counts
    tops = np.maximum.reduceat(vals, starts)
    for x, v in zip(batch, tops, strict=True):
        store[x[0]] = float(v)


@positional_deprecated(version="0.2", allowed=3)
def gaussian_grid_delta1_interval(sigma: float, q_low: float, q_high: float, *,
                                  eps: ArrayLike, granularity: float | None = None) -> Any:
    """``delta_1(eps) = sup_{P(+1) in [q_low, q_high]} P_Y(E_eps(P))`` of the released grid.

    The grid counterpart of :func:`pmlkit.additive.gaussian_delta1_interval`, computed for
    what :func:`pmlkit.additive.gaussian_noise` releases, not inherited from the continuous
    mechanism.

    Method (exact up to floating point): for fixed eps the violation set is
    ``{i >= a_+} u {i <= -a_-}`` and, as long as the thresholds ``a_+-`` stay fixed, the
    violation probability ``q A + (1 - q) B`` is linear in ``q``. Per-outcome PML on the
    positive side decreases in ``q`` and on the negative side increases, so ``a_+`` and
    ``a_-`` change only at the breakpoints ``q_i`` where some grid point's PML equals eps:
    ``q_i = (e^{-eps} - e^{-u_i}) / (1 - e^{-u_i})`` (positive side, ``u_i = 2 i N / n^2``)
    and ``q_i = (1 - e^{-eps}) / (1 - e^{-u_i})`` (negative side). The supremum of a
    piecewise-linear function is attained at (or approached towards) a piece's end, so the
    result is the largest of: the two interval ends, and at every breakpoint inside the
    interval, the value of the adjacent piece in which the tied point still violates.
    Breakpoints of grid points ``i`` whose tail mass beyond ``|i|`` is at most ``2^-60``
    under either input are not enumerated: past the first of them, the violation
    probability exceeds that of the other side (whose breakpoints are all evaluated) by
    at most ``2^-60``, which is then added to the result (an upper bound, never less).

    ``eps`` and ``granularity`` are keyword-only (by position they still work, with a
    :class:`DeprecationWarning`).

    Parameters
    ----------
    sigma, granularity
        As given to :func:`pmlkit.additive.gaussian_noise`.
    q_low, q_high
        The interval of ``P(+1)``.
    eps
        A scalar or 1-D array of values ``>= 0``.

    Examples
    --------
    >>> from pmlkit.additive import gaussian_grid_delta1_interval
    >>> # one prior: the violation probability (see gaussian_grid_violation_probability)
    >>> round(gaussian_grid_delta1_interval(1.0, 0.5, 0.5, eps=0.1, granularity=0.5), 6)
    0.879015
    """
    grid = gaussian_grid(sigma, granularity)
    lo, hi = check_interval(q_low, q_high)
    e, scalar = as_eps_array(eps)
    out = grid_delta1_over_interval(grid, lo, hi, e)
    return float(out[0]) if scalar else out


def gaussian_grid_channel(grid: GridNoise) -> tuple[np.ndarray, np.ndarray]:
    """The released Gaussian grid mechanism as a ``2 x M`` matrix: rows ``X = -1, +1``,
    columns the grid values ``i g`` for ``|i| <= 2^j + L`` (``L`` the last offset whose
    discrete Gaussian weight is a normal double, as in ``_GaussTails``; the mass beyond is
    below ``1e-300`` per row and is dropped).

    ``P(i | x) = e^{-(i - x N)^2 / (2 n^2)} / Z`` with ``N = 2^j`` and ``n`` the scale in
    grid units. Used to compute post-processing-robust levels of exactly what is released
    (:meth:`pmlkit.additive.GaussianMechanism.envelope`).

    Returns
    -------
    (values, matrix)
        The ``M`` released values and the row-stochastic ``2 x M`` matrix.

    Examples
    --------
    ``sigma = 1`` on the grid of step ``1/2``: ``n = N = 2`` and ``L = ceil(38.7 n) + 2 =
    80``, so ``2 (N + L) + 1 = 165`` values from ``-41`` to ``41``:

    >>> from pmlkit.additive import gaussian_grid
    >>> vals, w = gaussian_grid_channel(gaussian_grid(1.0, 0.5))
    >>> vals[:2].tolist(), w.shape, bool(abs(w.sum(axis=1) - 1).max() < 1e-15)
    ([-41.0, -40.5], (2, 165), True)
    """
    big_n = 1 << grid.exponent
    if big_n > MAX_INTERVAL_STEPS:
        raise TooLargeError(
            f"sigma={fmt(grid.requested_scale)} on a grid of step 2^-{grid.exponent} puts "
            f"the inputs +-1 {2 * big_n} steps apart; the released channel is tabulated only "
            f"up to 2^-21 steps: choose granularity >= 2^-21 (or a larger sigma)")
    cap = _tail_cap(grid.units)  # the table's length, without building the table
    k = np.arange(-cap, cap + 1, dtype=np.float64)
    n = float(grid.units)
    pmf = np.exp(-(k * k) / (2.0 * n * n))
    pmf /= float(np.sum(np.sort(pmf)))
    m = 2 * (big_n + cap) + 1
    w = np.zeros((2, m))
    w[0, : pmf.size] = pmf          # X = -1: offsets centred at index -N
    w[1, 2 * big_n:] = pmf          # X = +1: centred at +N
    idx = np.arange(m, dtype=np.float64) - float(big_n + cap)
    return idx * grid.granularity, w
