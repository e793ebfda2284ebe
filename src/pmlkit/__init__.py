"""pmlkit: privacy mechanisms with pointwise maximal leakage (PML) guarantees designed from
empirical distributions.

The public API is re-exported here and imported lazily, so ``import pmlkit`` stays cheap
(numpy, scipy, pandas and pyarrow are loaded only when a function that needs them is used).

Where the mathematics lives (paper labels in brackets):

==========================  ==============================================================
``pmlkit.leakage``          PML, eps_min, eps_max, privacy regions [Def. privacyregions],
                            maximal leakage, LDP epsilon
``pmlkit.estimation``       empirical distribution [eq. empiricaldistribution], Weissman
                            radius [Thm weissman, eq. betastar]
``pmlkit.sets``             l1-ball [eq. l1uncertaintyset], box, vertex set
``pmlkit.worstcase``        exact local leakage capacity / sensitivity [Def. localcap,
                            Def. leakagesensitivity]
``pmlkit.bounds``           [Thm lipschitz], [Thm l1gamma], [Cor. leakagebound],
                            [eq. epsmax], [Cor. deltamin]
``pmlkit.mechanism``        the immutable Mechanism object and its JSON file
``pmlkit.design``           optimal mechanisms [Thm optimalbinary, Prop. LCCP]
``pmlkit.additive``         Laplace and Gaussian noise on binary data [Section examples]
``pmlkit.confidence``       confidence sets for the true distribution (beyond the paper)
``pmlkit.privatize``        applying a mechanism to data (secure sampling, files, Dask)
``pmlkit.experiments``      the paper's figures
``pmlkit.audit``            statistical audit of the guarantees
``pmlkit.joint``            several columns of a record and repeated releases (beyond the
                            paper): product mechanism, joint guarantee, chain-rule bound
==========================  ==============================================================
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    CertificationError,
    DataError,
    InfeasibleError,
    MechanismFileError,
    PMLError,
    PMLWarning,
    TooLargeError,
    ValidationError,
)

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # leakage.py (paper: Preliminaries)
    "pml": "leakage",
    "eps_min": "leakage",
    "eps_max": "leakage",
    "privacy_region": "leakage",
    "privacy_region_thresholds": "leakage",
    "maximal_leakage": "leakage",
    "ldp_epsilon": "leakage",
    # utility.py
    "mutual_information": "utility",
    # estimation.py (paper: distest)
    "EmpiricalDistribution": "estimation",
    "empirical_distribution": "estimation",
    "l1_radius": "estimation",
    "l1_failure_probability": "estimation",
    "l1_radius_known_kappa": "estimation",
    # bounds.py (paper: PMLforsets)
    "delta_min": "bounds",
    "eps_bound": "bounds",
    "sensitivity_bound": "bounds",
    "lipschitz_bound": "bounds",
    "leakage_bound": "bounds",
    # sets.py / worstcase.py (paper: PMLforsets)
    "UncertaintySet": "sets",
    "L1Ball": "sets",
    "Box": "sets",
    "VertexSet": "sets",
    "leakage_capacity": "worstcase",
    "leakage_sensitivity": "worstcase",
    "worst_case_distribution": "worstcase",
    # mechanism.py, guarantee.py (the typed model)
    "Mechanism": "mechanism",
    "PMLGuarantee": "guarantee",
    "Provenance": "guarantee",
    "PrivacyMechanism": "guarantee",
    # design/ (paper: optimalbinary)
    "design_from_samples": "design",
    "optimal_mechanism": "design",
    "summarize_mechanism": "design.summary",
    "MechanismSummary": "design.summary",
    "propose_coarsening": "design.bucketing",
    "design_coarsened": "design.bucketing",
    "merged_set": "design.bucketing",
    "optimal_binary": "design",
    "randomized_response": "design",
    # confidence.py (beyond the paper: tighter confidence sets)
    "ConfidenceSet": "confidence",
    "confidence_set": "confidence",
    # privatize (privatise real data)
    "privatize": "privatization",
    "privatize_with_report": "privatization",
    "privatize_file": "privatization",
    # joint.py (several columns of a record, repeated releases)
    "ProductMechanism": "joint",
    "product_mechanism": "joint",
    "joint_capacity": "joint",
    "joint_leakage": "joint",
    "joint_guarantee": "joint",
    "chain_rule_bound": "joint",
    "marginal_bound": "joint",
    "design_joint": "joint",
    "release_leakage": "joint",
    "repeated_leakage": "joint",
    # inference.py (the analyst's side: estimating P from released data)
    "estimate_distribution": "inference",
    # _optional.py (an optional package is missing: the message names the extra)
    "MissingDependencyError": "_optional",
    # envelope.py (tail guarantees that survive post-processing)
    "leakage_envelope": "envelope",
    "LeakageEnvelope": "envelope",
    # interior.py (priors with a floor)
    "interior_eps": "interior",
    "dobrushin_coefficient": "interior",
    # plain.py (eps in plain words)
    "plain_reading": "plain",
    "eps_for_precision": "plain",
    "plain_sentence": "plain",
    # release/ (one command releases a whole table under one joint guarantee)
    "release_table": "release",
}

__all__ = [
    "Box",
    "CertificationError",
    "ConfidenceSet",
    "DataError",
    "EmpiricalDistribution",
    "InfeasibleError",
    "L1Ball",
    "LeakageEnvelope",
    "Mechanism",
    "MechanismFileError",
    "MechanismSummary",
    "MissingDependencyError",
    "PMLError",
    "PMLGuarantee",
    "PMLWarning",
    "PrivacyMechanism",
    "ProductMechanism",
    "Provenance",
    "TooLargeError",
    "UncertaintySet",
    "ValidationError",
    "VertexSet",
    "__version__",
    "chain_rule_bound",
    "confidence_set",
    "delta_min",
    "design_coarsened",
    "design_from_samples",
    "design_joint",
    "dobrushin_coefficient",
    "empirical_distribution",
    "eps_bound",
    "eps_for_precision",
    "eps_max",
    "eps_min",
    "estimate_distribution",
    "interior_eps",
    "joint_capacity",
    "joint_guarantee",
    "joint_leakage",
    "l1_failure_probability",
    "l1_radius",
    "l1_radius_known_kappa",
    "ldp_epsilon",
    "leakage_bound",
    "leakage_capacity",
    "leakage_envelope",
    "leakage_sensitivity",
    "lipschitz_bound",
    "marginal_bound",
    "maximal_leakage",
    "merged_set",
    "mutual_information",
    "optimal_binary",
    "optimal_mechanism",
    "plain_reading",
    "plain_sentence",
    "pml",
    "privacy_region",
    "privacy_region_thresholds",
    "privatize",
    "privatize_file",
    "privatize_with_report",
    "product_mechanism",
    "propose_coarsening",
    "randomized_response",
    "release_leakage",
    "release_table",
    "repeated_leakage",
    "sensitivity_bound",
    "summarize_mechanism",
    "worst_case_distribution",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pmlkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # pragma: no cover - for static type checkers only
    from ._optional import MissingDependencyError
    from .bounds import delta_min, eps_bound, leakage_bound, lipschitz_bound, sensitivity_bound
    from .confidence import ConfidenceSet, confidence_set
    from .design import (
        design_from_samples,
        optimal_binary,
        optimal_mechanism,
        randomized_response,
    )
    from .envelope import LeakageEnvelope, leakage_envelope
    from .estimation import (
        EmpiricalDistribution,
        empirical_distribution,
        l1_failure_probability,
        l1_radius,
        l1_radius_known_kappa,
    )
    from .guarantee import PMLGuarantee, PrivacyMechanism, Provenance
    from .interior import dobrushin_coefficient, interior_eps
    from .joint import (
        ProductMechanism,
        chain_rule_bound,
        design_joint,
        joint_capacity,
        joint_guarantee,
        joint_leakage,
        marginal_bound,
        product_mechanism,
        release_leakage,
        repeated_leakage,
    )
    from .leakage import (
        eps_max,
        eps_min,
        ldp_epsilon,
        maximal_leakage,
        pml,
        privacy_region,
        privacy_region_thresholds,
    )
    from .mechanism import Mechanism
    from .plain import eps_for_precision, plain_reading, plain_sentence
    from .privatization import privatize, privatize_file, privatize_with_report
    from .release import release_table
    from .sets import Box, L1Ball, UncertaintySet, VertexSet
    from .utility import mutual_information
    from .worstcase import leakage_capacity, leakage_sensitivity, worst_case_distribution
