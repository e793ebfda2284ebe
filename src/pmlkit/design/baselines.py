"""Baselines and fixed-prior closed forms (the paper's section on extremal mechanisms).

- :func:`randomized_response`: k-ary randomized response, eps-LDP (Warner's for k = 2).
- :func:`identity_mechanism`: ``Y = X`` (no privacy; ``eps_min = eps_max(p)``).
- :func:`extremal_high_privacy`: the optimal fixed-prior mechanism in the first privacy
  region ``eps <= log(1/(1 - p_min))`` (grosse2023extremal, Thm 2; paper Example
  boundExtrMech is an instance).
- :func:`extremal_binary`: the optimal fixed-prior binary mechanism for every eps.
- :func:`k_singular`: the k-singular mechanism, optimal for the uniform prior at
  ``eps = log(N/k)`` (grosse2023extremal, Thm 4; paper Example boundksingular).
- :func:`extremal_mechanism`: dispatches to whichever closed form applies.

Derivation (used by the docstrings below). For a fixed prior ``p`` a column ``w`` is
eps-PML iff ``w_i <= e^eps (p . w)`` for all ``i``; normalised to ``p . w = 1`` the
extreme columns have every entry in ``{0, e^eps}`` but one. In region 1 the column with
all entries ``e^eps`` except entry ``j``, ``(1 - e^eps (1 - p_j)) / p_j``, is feasible for
every ``j``; weighting it by ``theta_j = p_j`` makes the rows sum to 1 (solve
``e^eps (T - theta_i) + theta_i r_i = 1``: ``theta_i = p_i``), which gives the closed form.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import as_distribution, check_count, check_eps, fmt
from ..errors import ValidationError
from ..mechanism import Mechanism
from ._common import certify, closed_form_eps

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

__all__ = [
    "extremal_binary",
    "extremal_high_privacy",
    "extremal_mechanism",
    "identity_mechanism",
    "k_singular",
    "randomized_response",
]


def _point_set(p: np.ndarray) -> Any:
    from ..sets import L1Ball

    return L1Ball(p, 0.0)


def randomized_response(n: int, eps: float) -> Mechanism:
    """k-ary randomized response with ``k = n``: eps-LDP.

    ``W[i, i] = e^eps / (e^eps + n - 1)``, ``W[i, j] = 1 / (e^eps + n - 1)`` for ``i != j``;
    for ``n = 2`` it is Warner's mechanism ``[[e^eps, 1], [1, e^eps]] / (1 + e^eps)``
    (paper Remark binarymechisRR). eps-LDP is eps-PML for every prior, so its guarantee has
    basis ``"all"``: it is certified over the whole simplex (the l1-ball of radius 2 around
    the uniform distribution), where its worst case is exactly ``eps`` (computed, not
    assumed: ``min(eps, 700)``, see below).

    Parameters
    ----------
    n
        Number of categories, integer ``>= 2``.
    eps
        Privacy parameter ``>= 0``.

    Examples
    --------
    With ``eps = log 3`` Warner's mechanism answers truthfully with probability 3/4:

    >>> import math
    >>> from pmlkit import randomized_response
    >>> rr = randomized_response(2, math.log(3))
    >>> rr.matrix.round(4).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    >>> rr.guarantee.basis, round(rr.certified_eps, 6), round(math.log(3), 6)
    ('all', 1.098612, 1.098612)
    """
    from ..sets import L1Ball

    n = check_count(n, "n", minimum=2)
    eps = check_eps(eps)
    # divide by e^eps to stay finite for large eps; beyond eps = 700 the off-diagonal would
    # underflow to 0 (the identity, not LDP at all), so eps > 700 is built at 700
    e = math.exp(-min(closed_form_eps(eps, n), 700.0))  # tight: a rounding margin below
    off = e / (1.0 + (n - 1) * e)
    diag = 1.0 / (1.0 + (n - 1) * e)
    w = np.full((n, n), off)
    np.fill_diagonal(w, diag)
    uset = L1Ball(np.full(n, 1.0 / n), 2.0)
    return certify(w, uset, eps, designer="randomized_response",
                   parameters={"eps": eps, "n": n, "ldp": True}, basis="all",
                   statement="eps-LDP: eps-PML for every distribution")


def identity_mechanism(n: int, *, prior: ArrayLike | None = None) -> Mechanism:
    """The identity ``Y = X`` (``n x n``): full utility, no privacy.

    Its PML under a prior ``p`` is ``eps_max(p) = -log p_min``, which grows without bound
    as ``p_min -> 0``: over all distributions it guarantees nothing, so without ``prior``
    it carries no guarantee (``guarantee is None``). With ``prior`` (full support) it
    carries the guarantee for that one distribution (basis ``"prior"``), with the certified
    eps computed as the worst case over that point, ``-log p_min``.

    Examples
    --------
    >>> from pmlkit.design import identity_mechanism
    >>> identity_mechanism(3).guarantee is None
    True
    >>> round(identity_mechanism(2, prior=[0.25, 0.75]).certified_eps, 6)  # -log 0.25
    1.386294
    """
    n = check_count(n, "n", minimum=1)
    if prior is None:
        return Mechanism(np.eye(n), designer="identity", parameters={"n": n})
    p = _check_prior(prior)
    if p.size != n:
        raise ValidationError(f"prior must have n = {n} entries, got {p.size}")
    if float(p.min()) <= 0:
        raise ValidationError(
            f"prior must have full support (the identity's leakage is -log p_min), got "
            f"{fmt(p)}")
    from ..worstcase import certified_bound

    # it states its own worst case -log p_min, raised by its rounding margin (a tie with
    # the computed value cannot certify it)
    cert = certified_bound(np.eye(n), _point_set(p))
    return certify(np.eye(n), _point_set(p), cert, designer="identity",
                   parameters={"eps": cert, "n": n, "prior": p.tolist(), "beta": 0.0},
                   basis="prior", statement="the distribution is taken as known")


_PRIOR_STATEMENT = "the distribution is taken as known"


def _check_prior(prior: Any) -> np.ndarray:
    return as_distribution(prior, "prior")


def extremal_high_privacy(prior: ArrayLike, eps: float) -> Mechanism:
    """Optimal fixed-prior mechanism in the first privacy region (grosse2023extremal Thm 2).

    For ``0 <= eps <= log(1 / (1 - p_min))`` (Def. privacyregions, region 1):

        W[i, j] = e^eps p_j            (i != j)
        W[j, j] = 1 - e^eps (1 - p_j)

    Every output has PML exactly eps; it maximises every sub-convex utility over
    ``M(eps, p)``. Certified over the single distribution ``p`` (basis ``"prior"``).

    Raises
    ------
    ValidationError
        If ``eps`` is above ``log(1/(1 - p_min))`` (outside region 1) or ``p_min = 0``.

    Examples
    --------
    For ``p = (1/2, 1/4, 1/4)`` region 1 ends at ``log 4/3``; at ``eps = log 1.2`` each
    off-diagonal entry is ``1.2 p_j``:

    >>> import math
    >>> from pmlkit.design import extremal_high_privacy
    >>> mech = extremal_high_privacy([0.5, 0.25, 0.25], math.log(1.2))
    >>> mech.matrix.round(4).tolist()
    [[0.4, 0.3, 0.3], [0.6, 0.1, 0.3], [0.6, 0.3, 0.1]]
    >>> mech.guarantee.basis, round(mech.certified_eps, 6) == round(math.log(1.2), 6)
    ('prior', True)
    """
    p = _check_prior(prior)
    eps = check_eps(eps)
    pmin = float(p.min())
    if pmin <= 0:
        raise ValidationError(
            f"prior must have full support for the high-privacy closed form, got {fmt(p)}")
    limit = -math.log1p(-pmin) if pmin < 1 else math.inf
    if eps > limit + 1e-12:
        raise ValidationError(
            f"eps must be <= log(1/(1 - p_min)) = {limit!r} (first privacy region) for the "
            f"high-privacy closed form, got {eps!r}")
    # tight at eps: built a rounding margin below it; no overflow (exact for eps <= 700)
    e = math.exp(min(closed_form_eps(eps, p.size), 700.0))
    w = np.tile(e * p, (p.size, 1))
    np.fill_diagonal(w, np.clip(1.0 - e * (1.0 - p), 0.0, None))
    w = w / w.sum(axis=1, keepdims=True)  # exact up to rounding
    if e == 1.0:  # eps = 0: identical rows (in floats too), so the leakage is exactly 0
        w = np.tile(w[0], (p.size, 1))
    return certify(w, _point_set(p), eps, designer="extremal_high_privacy",
                   parameters={"eps": eps, "prior": p.tolist(), "beta": 0.0},
                   basis="prior", statement=_PRIOR_STATEMENT)


def extremal_binary(prior: ArrayLike, eps: float) -> Mechanism:
    """Optimal fixed-prior binary mechanism for every eps (N = 2).

    Order the prior so that ``p1 >= p2``. Region 1 (``eps <= -log p1``): the high-privacy
    form :func:`extremal_high_privacy`, i.e. Thm optimalbinary with ``beta = 0``
    ``[[e^eps p2, 1 - e^eps p2], [1 - e^eps p1, e^eps p1]]``. Region 2
    (``eps > -log p1``): ``[[1 - x, x], [0, 1]]`` with ``x = max(0, (e^-eps - p2) / p1)``
    (the second column is tight: ``1 = e^eps (p1 x + p2)``; the first has PML
    ``-log p1 < eps``); it is the identity once ``eps >= -log p2 = eps_max``. Rows and columns
    are permuted back to the caller's order. Certified over the single distribution ``p``
    (basis ``"prior"``).

    Examples
    --------
    For ``p = (0.8, 0.2)`` and ``eps = log 2 > -log 0.8`` (region 2),
    ``x = (1/2 - 0.2) / 0.8 = 0.375``:

    >>> import math
    >>> from pmlkit.design import extremal_binary
    >>> extremal_binary([0.8, 0.2], math.log(2)).matrix.round(6).tolist()
    [[0.625, 0.375], [0.0, 1.0]]
    """
    p = _check_prior(prior)
    eps = check_eps(eps)
    if p.size != 2:
        raise ValidationError(f"prior must have 2 entries for extremal_binary, got {p.size}")
    order = np.array([0, 1]) if p[0] >= p[1] else np.array([1, 0])
    p1, p2 = float(p[order[0]]), float(p[order[1]])
    ed = closed_form_eps(eps, 2)  # tight at eps: built a rounding margin below it
    if ed <= -math.log(p1):
        e = math.exp(ed)
        w = np.array([[e * p2, 1.0 - e * p2], [max(1.0 - e * p1, 0.0), e * p1]])
    else:
        x = max(0.0, (math.exp(-ed) - p2) / p1)
        w = np.array([[1.0 - x, x], [0.0, 1.0]])
    w = w / w.sum(axis=1, keepdims=True)
    if ed == 0.0:  # eps = 0: identical rows (in floats too), so the leakage is exactly 0
        w = np.tile(w[0], (2, 1))
    inv = np.argsort(order)
    w = w[np.ix_(inv, inv)]
    return certify(w, _point_set(p), eps, designer="extremal_binary",
                   parameters={"eps": eps, "prior": p.tolist(), "beta": 0.0},
                   basis="prior", statement=_PRIOR_STATEMENT)


def k_singular(n: int, k: int) -> Mechanism:
    """The circulant k-singular mechanism: ``W[i, j] = 1/k`` for ``j - i mod n < k``.

    Doubly stochastic with entries in ``{0, 1/k}`` (paper Example boundksingular); optimal
    for the uniform prior at ``eps = log(n/k)`` (grosse2023extremal Thm 4), where
    ``I(X;Y) = log(n/k) = eps``. Certified over the uniform distribution at that eps
    (basis ``"prior"``).

    Examples
    --------
    >>> import math
    >>> from pmlkit.design import k_singular
    >>> mech = k_singular(4, 2)
    >>> mech.matrix.tolist()[0], round(mech.certified_eps, 6) == round(math.log(2), 6)
    ([0.5, 0.5, 0.0, 0.0], True)
    """
    n = check_count(n, "n", minimum=1)
    k = check_count(k, "k", minimum=1)
    if k > n:
        raise ValidationError(f"k must be in [1, n] = [1, {n}], got {k}")
    i = np.arange(n)
    w = (((i[None, :] - i[:, None]) % n) < k) / k
    from ..worstcase import certified_bound

    # a fixed matrix tight at log(n/k): it states log(n/k) if that certifies, else its
    # computed worst case raised by its rounding margin
    eps = max(math.log(n / k), certified_bound(w, _point_set(np.full(n, 1.0 / n))))
    return certify(w.astype(np.float64), _point_set(np.full(n, 1.0 / n)), eps,
                   designer="k_singular",
                   # the prior as numbers (the string "uniform" made the file unloadable)
                   parameters={"eps": eps, "n": n, "k": k,
                               "prior": np.full(n, 1.0 / n).tolist(), "beta": 0.0},
                   basis="prior", statement=_PRIOR_STATEMENT)


def extremal_mechanism(prior: ArrayLike, eps: float) -> Mechanism | None:
    """The fixed-prior optimal mechanism in closed form, when one applies, else ``None``.

    In order: binary priors (:func:`extremal_binary`); the first privacy region
    (:func:`extremal_high_privacy`); the uniform prior at ``eps = log(N/k)`` for an integer
    k (:func:`k_singular`, matched within 1e-12). Each maximises every sub-convex utility
    over ``M(eps, p)``.

    Examples
    --------
    >>> import math
    >>> from pmlkit.design import extremal_mechanism
    >>> extremal_mechanism([0.25] * 4, math.log(2)).designer
    'k_singular'
    >>> extremal_mechanism([0.5, 0.3, 0.2], 5.0) is None  # no closed form applies
    True
    """
    p = _check_prior(prior)
    eps = check_eps(eps)
    n = p.size
    if n == 2:
        return extremal_binary(p, eps)
    pmin = float(p.min())
    if pmin > 0 and eps <= -math.log1p(-pmin):
        return extremal_high_privacy(p, eps)
    if np.allclose(p, 1.0 / n, rtol=0, atol=1e-15):
        k = n * math.exp(-eps)
        kr = round(k)
        if 1 <= kr <= n and abs(k - kr) <= 1e-12 * n:
            return k_singular(n, kr)
    return None
