"""A short end-to-end example (``python -m pmlkit.demo``, ``make demo``, ``pmlkit demo``).

1. Estimate a distribution from a built-in deterministic sample of 1,000 records with four
   labels (eq. empiricaldistribution).
2. Report the PML of k-ary randomized response under that estimate (SPEC section 2).
3. Take the l1 radius for ``delta = 1e-6`` (eq. betastar): with probability ``1 - delta``
   the true distribution lies in the ball ``B_beta(p_hat)``.
4. Compute the exact worst case over the ball (Def. localcap, exact greedy, beyond the
   paper) next to the paper's closed-form bounds (eq. epsmax, Thm l1gamma).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["SAMPLE_COUNTS", "format_report", "main", "run", "sample"]

#: The built-in sample: label -> number of records (m = 1,000).
SAMPLE_COUNTS: dict[str, int] = {"private": 412, "self-employed": 293, "government": 187,
                                 "unemployed": 108}


def sample() -> np.ndarray:
    """The built-in raw sample, a deterministic interleaving of :data:`SAMPLE_COUNTS`."""
    labels = np.repeat(np.array(list(SAMPLE_COUNTS)), list(SAMPLE_COUNTS.values()))
    order = (np.arange(labels.size) * 7919) % labels.size  # a fixed permutation (gcd = 1)
    return labels[order]


def _randomized_response(n: int, eps: float) -> np.ndarray:
    """k-ary randomized response ``((e^eps - 1) I + 1)`` with rows normalised (eps-LDP)."""
    w = np.expm1(eps) * np.eye(n) + 1.0
    return w / w.sum(axis=1, keepdims=True)


def run(eps: float = math.log(3), delta: float = 1e-6) -> dict[str, Any]:
    """Compute the demo's numbers; returns a JSON-able dict (see :func:`format_report`)."""
    from ._validation import check_delta, check_eps
    from .bounds import eps_bound, sensitivity_bound
    from .estimation import empirical_distribution, l1_radius
    from .leakage import eps_min, ldp_epsilon, pml, privacy_region
    from .sets import L1Ball
    from .worstcase import leakage_capacity, worst_case_distribution

    eps = check_eps(eps)
    delta = check_delta(delta)
    est = empirical_distribution(sample())
    w = _randomized_response(est.n, eps)
    e_hat = eps_min(w, est.p)
    beta = l1_radius(delta, est.m, est.n)
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
        "paper_bound_epsmax": eps_bound(e_hat, beta),
        "paper_bound_l1gamma": e_hat + sensitivity_bound(e_hat, est.p, beta),
    }


def format_report(doc: dict[str, Any]) -> str:
    """Human-readable text of :func:`run`'s result."""
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
        f"  paper bound, eq. epsmax:       {doc['paper_bound_epsmax']:.4f}",
        f"  paper bound, Thm l1gamma:      {doc['paper_bound_l1gamma']:.4f}",
        "  attained at Q* = " + ", ".join(f"{v:.4f}" for v in doc["worst_case_distribution"]),
    ]
    return "\n".join(lines)


def main() -> None:
    """Print the demo report."""
    print(format_report(run()))


if __name__ == "__main__":
    main()
