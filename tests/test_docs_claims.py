"""Numbers the pages under docs/ state in prose, recomputed.

Where a page quotes a measured number (not a timing), the computation is repeated here:
independently of pmlkit where it is cheap to do so (numpy by hand), else through the
public functions the page names, on the data it names (the Adult training file; those
tests skip without it, like every Adult test).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pmlkit as pk

ROOT = Path(__file__).resolve().parents[1]


def _eps_min(w: np.ndarray, p: np.ndarray) -> float:
    """max_y log(max_x W[x, y] / P_Y(y)) over the outputs with P_Y(y) > 0 (numpy only)."""
    py = p @ w
    used = py > 0
    return float(np.max(np.log(w.max(axis=0)[used] / py[used])))


def test_joint_page_random_pairs_exceed_the_sum_of_their_columns() -> None:
    """docs/joint.md: "3,000 random correlated 3 x 3 data sets, each column through a random
    mechanism, the pair exceeded the sum of the per-column values in 58.2% of cases, by up
    to 1.69 nats" (the draws of benchmarks/bench_joint.py, section 3). The pair's PML is
    computed by hand on the Kronecker product, not with pmlkit.joint."""
    text = (ROOT / "docs" / "joint.md").read_text(encoding="utf-8")
    assert "in 58.2% of cases, by up to 1.69 nats" in " ".join(text.split())
    rng = np.random.default_rng(2026)
    exceeded, worst = 0, 0.0
    for _ in range(3000):
        p = rng.dirichlet(np.full(9, 0.5)).reshape(3, 3)
        wa, wb = rng.dirichlet(np.ones(3), size=3), rng.dirichlet(np.ones(3), size=3)
        pair = _eps_min(np.kron(wa, wb), p.ravel())
        total = _eps_min(wa, p.sum(axis=1)) + _eps_min(wb, p.sum(axis=0))
        exceeded += pair > total + 1e-12
        worst = max(worst, pair - total)
    assert f"{exceeded / 3000:.1%}" == "58.2%"
    assert round(worst, 2) == 1.69
    # and the library agrees with the hand computation on the last draw
    assert pk.joint_leakage([wa, wb], p) == pytest.approx(pair, rel=1e-12)


@pytest.fixture(scope="module")
def adult_train(adult_dir: Path) -> Any:
    from pmlkit.datasets import load_adult

    return load_adult(adult_dir, split="data").fillna({"native-country": "?"})


def _rr_for(df: Any, col: str) -> pk.Mechanism:
    cats = sorted(df[col].unique().tolist())
    w = np.asarray(pk.randomized_response(len(cats), 1.0).matrix)
    return pk.Mechanism(w, tuple(cats), tuple(cats))


@pytest.mark.parametrize(("cols", "row"), [
    (("sex", "race", "income"), (20, "2.3157", "0.566 / 1.000 / 0.672", "2.238", "2.903")),
    (("native-country", "education", "sex"),
     (1344, "2.6902", "1.000 / 1.000 / 0.566", "2.566", "3.000")),
])
def test_joint_page_adult_table(adult_train: Any, cols: tuple[str, ...],
                                row: tuple[Any, ...]) -> None:
    """docs/joint.md "Measured on Adult": every column through eps = 1 randomized response,
    delta = 1e-6, the l1 set: joint N, exact joint eps, per-column eps, their sum, the
    chain-rule bound."""
    text = (ROOT / "docs" / "joint.md").read_text(encoding="utf-8")
    n, joint, per, total, bound = row
    assert f"| {', '.join(cols)} | {n:,} | {joint} |" in text
    assert f"| {per} | {total} | {bound} |" in text
    mechs = [_rr_for(adult_train, c) for c in cols]
    g = pk.joint_guarantee(mechs, adult_train, 1e-6, columns=list(cols))
    b = pk.marginal_bound(mechs, adult_train, 1e-6, columns=list(cols))
    assert g.n == n == math.prod(adult_train[c].nunique() for c in cols)
    assert f"{g.certified_eps:.4f}" == joint
    assert " / ".join(f"{e:.3f}" for e in g.column_eps) == per
    assert f"{g.sum_of_column_eps:.3f}" == total and f"{b.certified_eps:.3f}" == bound
    assert g.certified_eps > g.sum_of_column_eps or g.certified_eps == pytest.approx(
        g.sum_of_column_eps)
    # sex by hand: binary RR at eps = 1 over the l1 ball of the Weissman radius for N = 2
    # (phi >= 2: beta = sqrt(2 (log(2^2 - 2) - log delta) / m)); the worst distribution
    # moves beta / 2 of mass away from the output's own label
    sex = adult_train["sex"].value_counts()
    m, e = int(sex.sum()), math.e
    beta = math.sqrt(2 * (math.log(2) - math.log(1e-6)) / m)
    hand = max(math.log(e / (e * (q - beta / 2) + 1 - (q - beta / 2)))
               for q in (sex / m).tolist())
    assert g.column_eps[cols.index("sex")] == pytest.approx(hand, rel=1e-9)


def test_joint_page_largest_alphabet_size(adult_train: Any) -> None:
    """docs/joint.md: native-country x education x race is "3,360 tuples" (42 x 16 x 5 with
    the missing country kept as its own label); its joint guarantee takes seconds and is
    measured by benchmarks/bench_joint.py, not here."""
    text = (ROOT / "docs" / "joint.md").read_text(encoding="utf-8")
    assert "| native-country, education, race | 3,360 | 3.0000 |" in text
    sizes = [adult_train[c].nunique() for c in ("native-country", "education", "race")]
    assert sizes == [42, 16, 5] and math.prod(sizes) == 3360


def test_joint_page_design_numbers(adult_train: Any) -> None:
    """docs/joint.md "Designing a joint release": for (sex, income) at eps = 1, delta = 1e-6
    the naive release at eps / 2 per column is certified at 1.043 jointly; at that joint
    eps the searched split (0.81 / 0.20) raises the summed mutual information from 0.351 to
    0.393 nats, and the joint-alphabet design reaches 0.764 nats against 0.349."""
    from pmlkit.design import design_from_samples

    cols = ["sex", "income"]
    naive = [design_from_samples(adult_train[c].to_numpy(), 0.5, 1e-6) for c in cols]
    g = pk.joint_guarantee([r.mechanism for r in naive], adult_train, 1e-6, columns=cols)
    assert round(g.certified_eps, 3) == 1.043
    assert round(sum(r.guarantee.utility_value for r in naive), 3) == 0.351
    # I(record; released pair) of the naive release, by hand from the product matrix
    prod = np.kron(*[np.asarray(r.mechanism.matrix) for r in naive])
    labels = [list(r.mechanism.input_labels) for r in naive]
    p = np.zeros((len(labels[0]), len(labels[1])))
    for (a, b), k in adult_train.groupby(cols).size().items():
        p[labels[0].index(a), labels[1].index(b)] = k
    p = p.ravel() / p.sum()
    py = p @ prod
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(prod > 0, prod * np.log(prod / py), 0.0)
    assert round(float(p @ terms.sum(axis=1)), 3) == 0.349
    per = pk.design_joint(adult_train, g.certified_eps, 1e-6, columns=cols,
                          mode="per-column")
    assert [round(s, 2) for s in per.split] == [0.81, 0.20]
    assert per.guarantee.certified_eps <= g.certified_eps + 1e-9
    assert round(per.utility, 3) == 0.393
    joint = pk.design_joint(adult_train, g.certified_eps, 1e-6, columns=cols, mode="joint")
    assert joint.guarantee.certified_eps <= g.certified_eps + 1e-9
    assert joint.joint_mutual_information is not None
    assert round(joint.joint_mutual_information, 3) == 0.764


def test_estimation_page_sex_row_asymptotic_errors(adult_train: Any) -> None:
    """docs/estimation.md, the Adult table, sex row (eps = 1, delta = 1e-6, n = 10^4), the
    asymptotic errors in brackets: k-RR calibrated to the guarantee 6.21e-5, the MI-optimal
    and the estimation design 5.53e-5, ratio 0.891. By hand: for N = 2 the inversion
    error is ``2 q (1 - q) / (n (W[1, 1] - W[0, 1])^2)``, and binary RR at LDP level ``a``
    has worst case ``log(e^a / (1 + (e^a - 1) q'))`` over the l1-ball, ``q'`` the smaller
    probability minus beta / 2, so the calibrated ``e^a = e (1 - q') / (1 - e q')``."""
    from pmlkit.design.estimation import EstimationError

    counts = adult_train["sex"].value_counts().sort_index()
    m, n = int(counts.sum()), 10_000
    p = (counts / m).to_numpy()
    beta = math.sqrt(2 * (math.log(2) - math.log(1e-6)) / m)
    q_low = p.min() - beta / 2
    ea = math.e * (1 - q_low) / (1 - math.e * q_low)
    krr = np.array([[ea, 1.0], [1.0, ea]]) / (1 + ea)
    assert pk.leakage_capacity(krr, pk.L1Ball(p, beta)) == pytest.approx(1.0, rel=1e-12)

    def error(w: np.ndarray) -> float:
        q = float(p @ w[:, 1])
        return 2 * q * (1 - q) / (n * float(w[1, 1] - w[0, 1]) ** 2)

    sex = adult_train["sex"].to_numpy()
    mi = pk.design_from_samples(sex, 1.0, 1e-6).mechanism
    est = pk.design_from_samples(sex, 1.0, 1e-6, utility=EstimationError(n=n)).mechanism
    assert list(mi.input_labels) == list(est.input_labels) == counts.index.tolist()
    assert f"{error(krr):.2e}" == "6.21e-05"
    assert f"{error(np.asarray(mi.matrix)):.2e}" == "5.53e-05"
    assert f"{error(np.asarray(est.matrix)):.2e}" == "5.53e-05"
    assert round(error(np.asarray(est.matrix)) / error(krr), 3) == 0.891
    text = " ".join((ROOT / "docs" / "estimation.md").read_text(encoding="utf-8").split())
    assert "| sex | 2 | 6.21e-5 (6.21e-5) | 5.56e-5 (5.53e-5) | 5.58e-5 (5.53e-5) | " \
        "0.899 +- 0.013 (0.891) |" in text


@pytest.mark.slow  # about 3 s: 1000 shuffles of two sets at two sample sizes
def test_readme_tighter_sets_gains(adult_dir: Path) -> None:
    """README "Reproducing the paper": "with 1000 shuffles the best set (box-lower) gives
    +15.9% (income) and +26.0% (sex) more MI than the paper's ball at m = 100, and +9.4%
    and +7.1% at m = 1000" (exact MI of the released channels, mi_channel_mean; the figure's
    default seed 0). Only the two sets compared are simulated (same shuffles and noise)."""
    from pmlkit.experiments import tighter_sets as ts
    from pmlkit.experiments.base import adult_codes, research_generator
    from pmlkit.experiments.laplace_adult import simulate

    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert ("with 1000 shuffles the best set (`box-lower`) gives +15.9% (income) and +26.0% "
            "(sex) more MI than the paper's ball at m = 100, and +9.4% and +7.1% at m = 1000"
            ) in text
    cols = adult_codes(adult_dir, ("income", "sex"))
    gains = {}
    for feature in ("income", "sex"):
        mi = {}
        for name in ("l1", "box-lower"):
            recs = simulate(cols[feature][0], (100, 1000), [(ts.EPS_ADULT, ts.DELTA_ADULT)],
                            1000, research_generator(0), scale=ts.laplace_scale_for(name))
            mi[name] = {r["m"]: r["mi_channel_mean"] for r in recs}
        gains[feature] = {m: f"{mi['box-lower'][m] / mi['l1'][m] - 1:+.1%}" for m in (100, 1000)}
    assert gains == {"income": {100: "+15.9%", 1000: "+9.4%"},
                     "sex": {100: "+26.0%", 1000: "+7.1%"}}


def test_readme_quickstart_numbers_by_hand() -> None:
    """The README's first doctest block prints numbers that only the library computes;
    here they are derived by hand. 3-ary randomized response at eps = log 3 keeps the
    value with probability 3 / 5 (else 1 / 5 each), so ``P_Y(y) = 1/5 + 2/5 p_y``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    p = [0.5, 0.3, 0.2]
    pml = [math.log(0.6 / (0.2 + 0.4 * q)) for q in p]
    assert "array([0.405, 0.629, 0.762])" in text
    assert [round(v, 3) for v in pml] == [0.405, 0.629, 0.762]
    # Weissman radius, N = 3, m = 1000, delta = 1e-6 (phi >= 2): 0.1767
    beta = math.sqrt(2 / 1000 * (math.log(2**3 - 2) - math.log(1e-6)))
    assert round(beta, 4) == 0.1767 and ">>> round(beta, 4)\n0.1767" in text
    # exact worst case over the ball: the mass of y drops by beta / 2 (all p_y > beta / 2)
    worst = max(math.log(0.6 / (0.2 + 0.4 * (q - beta / 2))) for q in p)
    assert round(worst, 3) == 0.897 and "# exact\n0.897" in text
    # the paper's bound (Section 4.4): eps - log(1 - beta e^eps / 2) at eps = eps_min
    bound = max(pml) - math.log(1 - beta * math.exp(max(pml)) / 2)
    assert round(bound, 3) == 0.972 and "# a bound\n0.972" in text
    # eps = log 2 randomized response on 3 labels: mutual information under p_hat
    w = np.full((3, 3), 0.25) + np.eye(3) * 0.25
    py = np.array(p) @ w
    mi = float(sum(p[x] * w[x, y] * math.log(w[x, y] / py[y])
                   for x in range(3) for y in range(3)))
    assert round(mi, 3) == 0.055 and "(0.34, 0.055)" in text
    # Laplace scale for eps = log 2 at the l1-ball's lower bound on p_min (m = 1000, N = 2,
    # delta = 1e-9): e^(2/b) = e^eps (1 - p) / (1 - e^eps p) from eps = 2/b -
    # log(e^(2/b) p + 1 - p); LDP needs b = 2 / eps
    b1 = math.sqrt(2 / 1000 * (math.log(2) - math.log(1e-9)))
    lo = 0.33 - b1 / 2
    b = 2 / math.log(2 * (1 - lo) / (1 - 2 * lo))
    assert (round(b, 2), round(2 / math.log(2), 2)) == (1.92, 2.89)
    assert "(1.92, 2.89)" in text


def test_guide_researcher_path_numbers_by_hand() -> None:
    """docs/guide.md, the researcher path, by hand: p = (0.1, 0.6, 0.25, 0.05), m = 1000;
    4-ary randomized response at eps = 1 keeps the value with probability e / (e + 3), so
    ``PML_y = log(e / (1 + (e - 1) p_y))``; "six times the information"."""
    text = " ".join((ROOT / "docs" / "guide.md").read_text(encoding="utf-8").split())
    p = [0.1, 0.6, 0.25, 0.05]
    e = math.e
    beta = math.sqrt(2 / 1000 * (math.log(2**4 - 2) - math.log(1e-6)))
    assert round(beta, 4) == 0.1814 and ">>> round(beta, 4) 0.1814" in text
    pml = [math.log(e / (1 + (e - 1) * q)) for q in p]
    assert round(max(pml), 4) == 0.9176 and "# under the estimate 0.9176" in text
    # unemployed can lose all its mass (0.05 < beta / 2): its output's own input is then
    # impossible and P_Y = 1 / (e + 3), the LDP value 1
    assert p[3] < beta / 2
    assert math.log((e / (e + 3)) / (1 / (e + 3))) == pytest.approx(1.0, rel=1e-15)
    q = [0.15, 0.6, 0.25, 0.0]  # the worst distribution shown: in the ball, unemployed at 0
    assert sum(abs(a - b) for a, b in zip(q, p, strict=True)) <= beta
    assert "[0.15, 0.6, 0.25, 0.0]" in text
    bound = max(pml) - math.log(1 - beta * math.exp(max(pml)) / 2)
    assert round(bound, 4) == 1.1751 and "# a bound 1.1751" in text
    # randomized response's mutual information under p: 0.086; the design's 0.514 is six
    # times that
    w = np.full((4, 4), 1 / (e + 3)) + np.eye(4) * (e - 1) / (e + 3)
    py = np.array(p) @ w
    mi = float(sum(p[x] * w[x, y] * math.log(w[x, y] / py[y])
                   for x in range(4) for y in range(4)))
    assert round(mi, 3) == 0.086 and "(1.0, 0.514, 0.086)" in text
    assert round(0.514 / mi) == 6 and "gives six times the information" in text
