"""The PML envelope (pmlkit.envelope) against independent computations: an exhaustive
search over set partitions written here (itertools-free recursion), explicit randomised
post-processings, random post-processing kernels, and the Markov bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pmlkit as pk
from pmlkit.envelope import (
    leakage_envelope,
    merge_tail_probability,
    tail_probability,
    worst_tail_probability,
)
from pmlkit.errors import ValidationError

K = np.array([[.003, .18, .809, .008], [.127, .014, .842, .017]])
UNIFORM = np.array([0.5, 0.5])


def set_partitions(items: list[int]) -> list[list[list[int]]]:
    """Every partition of ``items`` (recursive: the first item joins a block of a
    partition of the rest, or stands alone)."""
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    out: list[list[list[int]]] = []
    for part in set_partitions(rest):
        out.append([[first], *part])
        for i in range(len(part)):
            out.append([*part[:i], [first, *part[i]], *part[i + 1:]])
    return out


def direct_pml(w: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(leakage, mass) of each column, by the definition (loops, no pmlkit)."""
    ell, mass = [], []
    for j in range(w.shape[1]):
        py = sum(p[i] * w[i, j] for i in range(w.shape[0]))
        mass.append(py)
        ell.append(math.log(max(w[:, j]) / py) if py > 0 else -math.inf)
    return np.array(ell), np.array(mass)


def quantile(ell: np.ndarray, mass: np.ndarray, delta: float) -> float:
    """Smallest t with sum_{ell > t} mass <= delta, by trying every candidate t."""
    best = math.inf
    for t in sorted(set(ell.tolist()) | {0.0}):
        if t == -math.inf:
            continue
        if mass[ell > t].sum() <= delta and t >= 0:
            best = min(best, t)
    return best


def brute_merges(w: np.ndarray, p: np.ndarray, delta: float) -> float:
    best = 0.0
    for part in set_partitions(list(range(w.shape[1]))):
        merged = np.stack([w[:, b].sum(axis=1) for b in part], axis=1)
        ell, mass = direct_pml(merged, p)
        best = max(best, quantile(ell, mass, delta))
    return best


def test_partition_count_is_bell() -> None:
    assert [len(set_partitions(list(range(k)))) for k in range(1, 8)] == \
        [1, 2, 5, 15, 52, 203, 877]


def test_counterexample() -> None:
    # P[pml(Y) > t] from the definition
    ell, mass = direct_pml(K, UNIFORM)
    assert abs(mass[ell > 0.0758].sum() - 0.1745) < 1e-12
    assert abs(tail_probability(K, UNIFORM, 0.0758) - 0.1745) < 1e-12
    merged = np.stack([K[:, 0] + K[:, 2], K[:, 1], K[:, 3]], axis=1)
    ell2, mass2 = direct_pml(merged, UNIFORM)
    assert (ell2 > 0.0758).all() and abs(mass2.sum() - 1.0) < 1e-12
    assert merge_tail_probability(K, UNIFORM, 0.0758) == pytest.approx(1.0, abs=1e-12)
    assert worst_tail_probability(K, UNIFORM, 0.0758) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("seed", range(24))
def test_merges_equal_exhaustive_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 4))
    m = int(rng.integers(2, 8))
    w = rng.dirichlet(np.full(m, 0.6), size=n)
    p = rng.dirichlet(np.ones(n))
    delta = float(rng.uniform(0.02, 0.7))
    env = leakage_envelope(w, p, delta)
    exhaustive = brute_merges(w, p, delta)
    assert env.merges == pytest.approx(exhaustive, abs=1e-9)
    assert env.eps >= exhaustive - 1e-9  # never below the exhaustive search
    ml = math.log(sum(max(w[:, j]) for j in range(m)))
    assert env.ml_bound == pytest.approx(ml + math.log(1 / delta), abs=1e-12)
    assert env.eps <= env.ml_bound + 1e-12  # never above the maximal-leakage bound
    ell, mass = direct_pml(w, p)
    assert env.no_post_processing == pytest.approx(quantile(ell, mass, delta), abs=1e-12)


def test_randomised_post_processing_beats_merges() -> None:
    """At t = 0.5 the deterministic merges of K exceed t with probability < 0.2, but the
    randomised post-processing below (hand-built: output 2 is split a little into two
    groups that each have surplus) exceeds it with probability ~0.23."""
    t = 0.5
    e = math.exp(t)
    q = UNIFORM @ K
    assert merge_tail_probability(K, UNIFORM, t) < 0.2
    # group A = {y1} + a fraction a of y2 (leaks through x0); group B = {y0, y3} + b of y2
    a = (K[0, 1] - e * q[1]) / (e * q[2] - K[0, 2])
    b = (K[1, 0] + K[1, 3] - e * (q[0] + q[3])) / (e * q[2] - K[1, 2])
    assert 0 < a and 0 < b and a + b < 1
    shrink = 1 - 1e-9  # strictly above t
    kern = np.zeros((4, 3))
    kern[1, 0] = 1.0
    kern[2] = [a * shrink, b * shrink, 1 - (a + b) * shrink]
    kern[0, 1] = kern[3, 1] = 1.0
    z = K @ kern
    ell, mass = direct_pml(z, UNIFORM)
    over = mass[ell > t].sum()
    assert over > 0.2
    assert worst_tail_probability(K, UNIFORM, t) >= over - 1e-9
    env = leakage_envelope(K, UNIFORM, 0.2)
    assert env.eps > t > env.merges


@pytest.mark.parametrize("seed", range(6))
def test_no_random_post_processing_exceeds_the_envelope(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n, m = 2 + seed % 2, 4
    w = rng.dirichlet(np.full(m, 0.7), size=n)
    p = rng.dirichlet(np.ones(n))
    delta = 0.15
    env = leakage_envelope(w, p, delta)
    for _ in range(300):
        k = int(rng.integers(2, 6))
        kern = rng.dirichlet(np.full(k, 0.2), size=m)
        ell, mass = direct_pml(w @ kern, p)
        assert mass[ell > env.eps + 1e-9].sum() <= delta + 1e-9


def test_envelope_is_tight_from_above() -> None:
    """Just below the envelope, the worst tail probability exceeds delta."""
    env = leakage_envelope(K, UNIFORM, 0.2)
    assert worst_tail_probability(K, UNIFORM, env.eps - 1e-6) > 0.2
    assert worst_tail_probability(K, UNIFORM, env.eps + 1e-6) <= 0.2 + 1e-9


def test_public_and_errors() -> None:
    assert pk.leakage_envelope is leakage_envelope
    with pytest.raises(ValidationError, match="delta"):
        leakage_envelope(K, UNIFORM, 0.0)
    with pytest.raises(ValidationError, match="t must be finite"):
        tail_probability(K, UNIFORM, math.inf)
    with pytest.raises(ValidationError, match="outputs"):
        merge_tail_probability(np.full((2, 11), 1 / 11), UNIFORM, 0.1)
    big = leakage_envelope(np.full((2, 11), 1 / 11), UNIFORM, 0.1)
    assert big.merges is None and big.eps == pytest.approx(0.0, abs=1e-9)
    one = leakage_envelope(K, UNIFORM, 1.0)
    assert one.eps == 0.0


@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.5])
def test_gaussian_bound_by_quadrature(sigma: float) -> None:
    from scipy.integrate import quad
    from scipy.stats import norm

    from pmlkit.envelope import gaussian_envelope_bound

    def top(y: float) -> float:
        return float(max(norm.pdf(y, 1, sigma), norm.pdf(y, -1, sigma)))

    mass = quad(top, -np.inf, 0.0, limit=200)[0] + quad(top, 0.0, np.inf, limit=200)[0]
    assert gaussian_envelope_bound(sigma, 1e-3) == pytest.approx(
        math.log(mass) + math.log(1e3), abs=1e-8)
    # valid for a grid release: the exact envelope of a fine discretisation stays below it
    edges = np.concatenate([[-np.inf], np.linspace(-6, 6, 9), [np.inf]])
    w = np.stack([np.diff(norm.cdf(edges, loc=x, scale=sigma)) for x in (-1.0, 1.0)])
    env = leakage_envelope(w, [0.3, 0.7], 0.05)
    assert env.eps <= gaussian_envelope_bound(sigma, 0.05) + 1e-12


@pytest.mark.parametrize("eps", [0.1, 0.7, 2.0])
def test_closed_forms_when_every_output_is_tight(eps: float) -> None:
    """Binary randomized response at the uniform prior: every output leaks
    log(2 e^eps / (1 + e^eps)), so no post-processing can raise the tail level (a merge's
    ratio is at most its parts'), and the plain level is that value: envelope = it."""
    from pmlkit.design import extremal_high_privacy, randomized_response

    rr = np.asarray(randomized_response(2, eps).matrix)
    closed = math.log(2 * math.exp(eps) / (1 + math.exp(eps)))
    for delta in (0.01, 0.3, 0.9):
        env = leakage_envelope(rr, UNIFORM, delta)
        assert env.eps == pytest.approx(closed, abs=1e-9)
        # closed forms are built a rounding margin (~1.5e-11) below eps
        assert env.merges == pytest.approx(closed, abs=1e-9)
    p = np.array([0.4, 0.3, 0.2, 0.1])
    ext = np.asarray(extremal_high_privacy(p, eps / 20).matrix)
    assert leakage_envelope(ext, p, 0.05).eps == pytest.approx(eps / 20, abs=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_never_above_eps_min(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    w = rng.dirichlet(np.ones(5), size=3)
    p = rng.dirichlet(np.ones(3))
    assert leakage_envelope(w, p, 0.01).eps <= pk.eps_min(w, p) + 1e-12


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6), delta=st.floats(0.01, 0.99))
def test_envelope_order(seed: int, delta: float) -> None:
    """plain level <= merges <= envelope <= min(eps_min, ML + log(1/delta)), and the
    envelope does not grow as delta grows."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 4)), int(rng.integers(2, 6))
    w = rng.dirichlet(np.full(m, 0.5), size=n)
    p = rng.dirichlet(np.ones(n))
    env = leakage_envelope(w, p, delta)
    assert env.merges is not None
    assert env.no_post_processing <= env.merges + 1e-12 <= env.eps + 2e-9
    assert env.eps <= min(pk.eps_min(w, p), env.ml_bound) + 1e-12
    assert leakage_envelope(w, p, min(1.0, delta + 0.05)).eps <= env.eps + 1e-9


def test_calibrate_gaussian_says_tails_do_not_survive_post_processing(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from pmlkit.cli.main import cli

    ref = tmp_path / "ref.csv"
    ref.write_text("sex\n" + "Male\n" * 70 + "Female\n" * 30)
    args = ["calibrate", "gaussian", "--reference", str(ref), "--column", "sex",
            "--positive", "Male", "--sigma", "2", "--delta", "1e-6", "--eps-max", "1.0",
            "--points", "2"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "do not survive post-processing" in res.output
    doc = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert "leakage_envelope" in doc["post_processing"]["statement"]
