"""The end-to-end demonstration (``python -m pmlkit.demo``, ``make demo``, ``pmlkit demo``).

Part 1, the whole path on real data (:func:`adult_pipeline`), on the UCI Adult "sex"
column:

1. Load Adult (both splits, 48,842 people) with :func:`pmlkit.datasets.load_adult` from
   ``PMLKIT_DATA``, else the user cache; SHA-256 checked. Without the data, fall back to
   :func:`pmlkit.datasets.synthetic_adult` (same sex marginal) and say so.
2. Split off a random 10% as the reference sample (the split is seeded: it only decides
   who is in the reference, it is not the privatisation's randomness).
3. Design the optimal mechanism for mutual information with
   :func:`pmlkit.design.design_from_samples` at ``eps = log 2``, ``delta = 1e-6``: with
   probability ``>= 1 - delta`` the true distribution is in the l1-ball around the
   estimate (Thm weissman) and the mechanism is eps-PML for all of it (certified exactly).
4. Privatise everybody else with :func:`pmlkit.privatize` (cryptographically secure
   randomness), and the same people with eps-LDP randomized response for comparison.
5. Print the guarantee and the utility of both at the held-out distribution (exact, with
   :mod:`pmlkit.utility`) and measured on the privatised records: mutual information, the
   accuracy of the best guess of X from Y (``sum_y max_x p(x) W[x, y]``, which does not
   depend on how outputs are named) and ``P[Y = X]`` (outputs are named after the inputs
   they most likely come from, see :func:`pmlkit.design.optimal_mechanism`).

Part 2, a worst-case tour on a built-in sample (:func:`run`):

1. Estimate a distribution from a built-in deterministic sample of 1,000 records with four
   labels (eq. empiricaldistribution).
2. Report the PML of k-ary randomized response (:func:`pmlkit.design.randomized_response`)
   under that estimate (math §2).
3. Take the l1 radius for ``delta = 1e-6`` (eq. betastar): with probability ``1 - delta``
   the true distribution lies in the ball ``B_beta(p_hat)``.
4. Compute the exact worst case over the ball (Def. localcap, exact greedy, beyond the
   paper) next to the paper's closed-form bounds (eq. epsmax, Thm l1gamma).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SAMPLE_COUNTS", "adult_pipeline", "format_pipeline", "format_report", "main",
           "run", "sample"]

#: The built-in sample: label -> number of records (m = 1,000).
SAMPLE_COUNTS: dict[str, int] = {"private": 412, "self-employed": 293, "government": 187,
                                 "unemployed": 108}


def sample() -> np.ndarray:
    """The built-in raw sample, a deterministic interleaving of :data:`SAMPLE_COUNTS`.

    Examples
    --------
    Record ``i`` is entry ``7919 i mod 1000`` of the labels in blocks (412 private, then 293
    self-employed, 187 government, 108 unemployed): record 1 is entry 919, "unemployed".

    >>> s = sample()
    >>> len(s), int((s == "private").sum()), s[:2].tolist()
    (1000, 412, ['private', 'unemployed'])
    """
    labels = np.repeat(np.array(list(SAMPLE_COUNTS)), list(SAMPLE_COUNTS.values()))
    order = (np.arange(labels.size) * 7919) % labels.size  # a fixed permutation (gcd = 1)
    return labels[order]


def run(eps: float = math.log(3), delta: float = 1e-6) -> dict[str, Any]:
    """Compute the demo's numbers; returns a JSON-able dict (see :func:`format_report`).

    Examples
    --------
    Randomized response on 4 labels at ``eps = log 3`` keeps a label with probability
    ``3 / (3 + 3) = 0.5``; "unemployed" (``p_hat = 0.108``) is then released with
    probability ``0.5 * 0.108 + 0.892 / 6``, so its PML is
    ``log(0.5 / 0.20267) = 0.9030``, the largest of the four:

    >>> doc = run()
    >>> doc["categories"][3], round(doc["pml_per_outcome"][3], 4), round(doc["eps_min_at_p_hat"], 4)
    ('unemployed', 0.903, 0.903)
    >>> doc["exact_worst_case_eps"] <= doc["paper_bound_epsmax"]  # exact vs the paper's bound
    True
    """
    from ._validation import check_delta, check_eps
    from .bounds import eps_bound, sensitivity_bound
    from .design import randomized_response
    from .estimation import empirical_distribution, l1_radius
    from .leakage import eps_min, ldp_epsilon, pml, privacy_region
    from .sets import L1Ball
    from .worstcase import leakage_capacity, worst_case_distribution

    eps = check_eps(eps)
    delta = check_delta(delta)
    est = empirical_distribution(sample())
    w = randomized_response(est.n, eps).matrix
    e_hat = eps_min(w, est.p)
    beta = l1_radius(delta, m=est.m, n=est.n)
    ball = L1Ball(est.p, beta)
    exact = leakage_capacity(w, ball)
    q_star = worst_case_distribution(w, ball)
    return {
        "categories": list(est.categories), "counts": est.counts.tolist(), "m": est.m,
        "p_hat": est.p.tolist(), "mechanism": "k-ary randomized response",
        "ldp_eps": ldp_epsilon(w), "pml_per_outcome": pml(w, est.p).tolist(),
        "eps_min_at_p_hat": e_hat, "privacy_region": privacy_region(e_hat, est.p),
        "delta": delta, "beta": beta,
        "exact_worst_case_eps": exact, "worst_case_distribution": q_star.tolist(),
        "paper_bound_epsmax": eps_bound(eps=e_hat, beta=beta),
        "paper_bound_l1gamma": e_hat + sensitivity_bound(est.p, eps=e_hat, beta=beta),
    }


def format_report(doc: dict[str, Any]) -> str:
    """Human-readable text of :func:`run`'s result.

    Examples
    --------
    >>> print(format_report(run()).splitlines()[0])
    Built-in sample: m = 1000 records, 4 categories
    """
    lines = [f"Built-in sample: m = {doc['m']} records, {len(doc['categories'])} categories",
             "  category           count   p_hat"]
    lines += [f"  {c:<16} {n:>7}   {p:.4f}" for c, n, p in
              zip(doc["categories"], doc["counts"], doc["p_hat"], strict=True)]
    lines += [
        "",
        f"{doc['mechanism']} with LDP eps = {doc['ldp_eps']:.4f}:",
        "  PML per outcome under p_hat: "
        + ", ".join(f"{v:.4f}" for v in doc["pml_per_outcome"]),
        f"  eps_min(W, p_hat) = {doc['eps_min_at_p_hat']:.4f} "
        f"(privacy region {doc['privacy_region']})",
        "",
        f"Weissman l1 radius for delta = {doc['delta']:g}: beta = {doc['beta']:.4f}",
        "Worst case over the ball B_beta(p_hat) (holds with probability >= 1 - delta):",
        f"  exact (greedy, pmlkit):        {doc['exact_worst_case_eps']:.4f}",
        f"  paper bound (Section 4.4):     {doc['paper_bound_epsmax']:.4f}",
        f"  paper bound (Theorem 4):       {doc['paper_bound_l1gamma']:.4f}",
        "  attained at Q* = " + ", ".join(f"{v:.4f}" for v in doc["worst_case_distribution"]),
    ]
    return "\n".join(lines)


def _load_sex(data: str | os.PathLike[str] | None) -> tuple[Any, str, bool]:
    """The Adult ``sex`` column (both splits), where it came from, and whether synthetic."""
    from .datasets import load_adult, synthetic_adult
    from .errors import DataError

    candidates: list[tuple[Any, str]] = []
    if data is not None:
        candidates.append((Path(data), "data argument"))
    elif os.environ.get("PMLKIT_DATA"):
        candidates.append((None, "PMLKIT_DATA"))
    else:
        candidates.append((None, "user cache"))
    reasons = []
    for path, where in candidates:
        try:
            df = load_adult(path, split="both")
            return df["sex"], f"UCI Adult, both splits, from {where}", False
        except DataError as exc:
            reasons.append(str(exc))
    df = synthetic_adult(48842, rng=0)
    return (df["sex"], "SYNTHETIC sample with Adult's sex marginal (the UCI Adult data was "
            f"not found: {reasons[-1]})", True)


def adult_pipeline(eps: float = math.log(2), delta: float = 1e-6, *,
                   data: str | os.PathLike[str] | None = None,
                   reference_fraction: float = 0.1, split_seed: int = 0,
                   rng: Any = None) -> dict[str, Any]:
    """Design on a reference split of Adult "sex", privatise the rest, compare with LDP.

    Returns a JSON-able dict (see :func:`format_pipeline`). ``rng`` is the privatisation's
    randomness (default: secure); ``split_seed`` only chooses the reference rows.

    Examples
    --------
    On Adult (or, without the data, a synthetic sample of the same size and marginal):

    >>> doc = adult_pipeline(rng=0)
    >>> doc["n_total"], doc["n_reference"] + doc["n_privatised"] == doc["n_total"]
    (48842, True)
    >>> doc["guarantee"]["certified_eps"] <= math.log(2) + 1e-9
    True
    >>> u = doc["utility"]  # mutual information (nats): the design against eps-LDP
    >>> u["designed"]["mutual_information"] > 5 * u["randomized_response"]["mutual_information"]
    True
    """
    import numpy as np

    from ._validation import check_delta, check_eps, check_real
    from .design import design_from_samples, randomized_response
    from .estimation import empirical_distribution
    from .leakage import eps_min
    from .privatization import privatize, privatize_with_report
    from .utility import accuracy, mutual_information

    eps = check_eps(eps)
    delta = check_delta(delta)
    frac = check_real(reference_fraction, "reference_fraction", low=0.0, high=1.0,
                      low_open=True, high_open=True)
    sex, source, synthetic = _load_sex(data)
    values = sex.to_numpy(dtype=object)
    # entropy (split_seed, 1): a stream independent of synthetic_adult(rng=0)'s
    in_ref = np.random.default_rng([split_seed, 1]).random(values.shape[0]) < frac
    ref, rest = values[in_ref], values[~in_ref]
    result = design_from_samples(ref, eps, delta, utility="mutual_information")
    mech = result.mechanism
    rr = randomized_response(mech.n_inputs, eps).with_labels(mech.input_labels)
    private, report = privatize_with_report(mech, rest, rng=rng)
    private_rr = privatize(rr, rest, rng=rng)
    held_out = empirical_distribution(rest, categories=mech.input_labels)
    p = np.asarray(held_out.p)
    labels = list(mech.input_labels)

    def measured(out: np.ndarray) -> dict[str, float]:
        # empirical channel from the records: rows = true label, columns = released label
        codes_x = np.searchsorted(np.asarray(labels, dtype=object), rest)
        codes_y = np.searchsorted(np.asarray(labels, dtype=object), out)
        joint = np.zeros((len(labels), len(labels)))
        np.add.at(joint, (codes_x, codes_y), 1.0)
        channel = joint / joint.sum(axis=1, keepdims=True)
        return {"accuracy": float(np.mean(out == rest)),
                "best_guess_accuracy": float(joint.max(axis=0).sum() / joint.sum()),
                "mutual_information": mutual_information(channel, p)}

    def best_guess(w: Any) -> float:
        # P[argmax_x P(x | y) = X] = sum_y max_x p(x) W[x, y] (MAP guess of X from Y)
        return float((p[:, None] * np.asarray(w)).max(axis=0).sum())

    g = result.guarantee
    return {
        "source": source, "synthetic": synthetic, "n_total": int(values.shape[0]),
        "n_reference": int(in_ref.sum()), "n_privatised": int(rest.shape[0]),
        "eps": eps, "delta": delta, "guarantee": g.to_dict(), "guarantee_text": str(g),
        "mechanism": {"labels": labels, "matrix": mech.matrix.tolist()},
        "randomness": report.to_dict(),
        "held_out_distribution": dict(zip(map(str, labels), p.tolist(), strict=True)),
        "pml_held_out": {"designed": eps_min(mech, p), "randomized_response": eps_min(rr, p)},
        "utility": {
            "designed": {"mutual_information": mutual_information(mech, p),
                         "accuracy": accuracy(mech, p), "best_guess_accuracy": best_guess(mech),
                         "measured": measured(private)},
            "randomized_response": {"mutual_information": mutual_information(rr, p),
                                    "accuracy": accuracy(rr, p),
                                    "best_guess_accuracy": best_guess(rr),
                                    "measured": measured(private_rr)},
            "trivial_guess_accuracy": float(p.max()),
        },
    }


def format_pipeline(doc: dict[str, Any]) -> str:
    """Human-readable text of :func:`adult_pipeline`'s result.

    Examples
    --------
    >>> text = format_pipeline(adult_pipeline(rng=0))
    >>> text.startswith("Data: ")
    True
    """
    u = doc["utility"]
    d, r = u["designed"], u["randomized_response"]
    lines = [
        f"Data: {doc['source']}",
        f"  {doc['n_total']} people: {doc['n_reference']} in the reference split (design), "
        f"{doc['n_privatised']} privatised",
    ]
    if doc["synthetic"]:
        lines.append("  NOTE: these are SYNTHETIC records, not the real Adult data.")
    lines += [
        "",
        "Mechanism designed from the reference split (pmlkit.design.design_from_samples):",
        "  " + doc["guarantee_text"].replace("\n", "\n  "),
        "",
        f"Privatised {doc['n_privatised']} records with {doc['randomness']['rng']}.",
        f"PML at the held-out distribution: designed {doc['pml_held_out']['designed']:.4f}, "
        f"eps-LDP randomized response {doc['pml_held_out']['randomized_response']:.4f} "
        f"(target eps = {doc['eps']:.4f})",
        "",
        "Utility on the privatised people       designed PML   eps-LDP RR   ratio",
        f"  mutual information (nats), exact      {d['mutual_information']:10.4f}   "
        f"{r['mutual_information']:10.4f}   {_ratio(d['mutual_information'], r['mutual_information'])}",  # noqa: E501
        f"  mutual information (nats), measured   {d['measured']['mutual_information']:10.4f}   "
        f"{r['measured']['mutual_information']:10.4f}",
        f"  best guess of X from Y, exact         {d['best_guess_accuracy']:10.4f}   "
        f"{r['best_guess_accuracy']:10.4f}   (guessing without Y: "
        f"{u['trivial_guess_accuracy']:.4f})",
        f"  best guess of X from Y, measured      {d['measured']['best_guess_accuracy']:10.4f}   "
        f"{r['measured']['best_guess_accuracy']:10.4f}",
        f"  P[Y = X] (label match), exact         {d['accuracy']:10.4f}   {r['accuracy']:10.4f}"
        "   (outputs named after their most likely input)",
    ]
    return "\n".join(lines)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:6.2f}x" if b > 0 else "   n/a"


def main() -> None:
    """Print the demo report: the Adult pipeline, then the worst-case tour.

    Examples
    --------
    ``python -m pmlkit.demo``, ``make demo`` and ``pmlkit demo`` run it:

    >>> main()  # doctest: +SKIP
    === Part 1: privatise the Adult 'sex' column with a PML mechanism ===
    ...
    """
    print("=== Part 1: privatise the Adult 'sex' column with a PML mechanism ===")
    print(format_pipeline(adult_pipeline()))
    print()
    print("=== Part 2: worst case over the confidence set, on a built-in sample ===")
    print(format_report(run()))


if __name__ == "__main__":
    main()
