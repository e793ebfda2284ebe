"""Several columns of one person, and repeated releases: a guarantee for the whole record.

PML depends on the data distribution, so guarantees computed column by column do **not**
add up: with a correlated joint distribution each column's mechanism can be eps_i-PML for
its own marginal while the pair of outputs leaks more than ``sum_i eps_i`` (see
``docs/joint.md`` for a two-bit example where ``log 2 + log 2`` becomes ``log(16/3)``).
This module computes what the whole release leaks.

- :func:`product_mechanism`: the mechanism on the record ``X = (A, B, ...)`` when each column
  goes through its own mechanism with independent randomness: the Kronecker product
  ``W[(a, b), (y_a, y_b)] = W_A[a, y_a] W_B[b, y_b]``, labels as tuples.
- :func:`joint_capacity`, :func:`joint_leakage`: its exact worst-case PML over a set of joint
  distributions, or at one joint distribution, computed block by block from the factors
  (the dense ``N x M`` product is never built; joint alphabets of a few thousand work).
- :func:`joint_guarantee`: joint reference sample -> confidence set on the joint alphabet
  -> exact (eps, delta)-PML guarantee for the record (:class:`JointGuarantee`: a
  :class:`pmlkit.guarantee.PMLGuarantee` over the joint alphabet plus the joint-only facts).
- :func:`chain_rule_bound`, :func:`marginal_bound`: an upper bound from the marginal sets
  alone (chain rule for PML, derived in ``docs/joint.md``), labelled as a bound.
- :func:`design_joint`: given an overall (eps, delta) for the record, design on the joint
  alphabet when it is small, else per-column designs whose eps are searched so that the
  exact joint guarantee meets the target (:class:`JointDesign` reports the split).
- :class:`ReleasePlan`: the typed, versioned release plan ``pmlkit joint design`` writes
  and ``pmlkit privatize --plan`` reads (strictly, re-checked in the model).
- :func:`release_leakage`, :func:`repeated_leakage`: the same column released several times
  with fresh randomness (the same mechanism k times, or re-runs with other mechanisms),
  exactly, over type classes.
- :func:`pmlkit.audit.audit_joint` (formerly ``pmlkit.joint.audit_joint``): a statistical
  audit of the joint guarantee and the bound.

Everything here goes beyond the paper, which treats one column released once.

The package holds one concept per module: :mod:`~pmlkit.joint.product` (the product
mechanism and its exact worst case), :mod:`~pmlkit.joint.guarantee` (the guarantee and the
chain-rule bound), :mod:`~pmlkit.joint.repeat` (repeated releases),
:mod:`~pmlkit.joint.design` (joint designs and the release of a tuple through one
mechanism) and :mod:`~pmlkit.joint.plan` (the release plan file).
"""

from __future__ import annotations

from typing import Any

from .design import (
    EXACT_WORK_MAX,
    JOINT_DESIGN_MAX_N,
    JointDesign,
    JointRelease,
    design_joint,
    joint_release,
)
from .guarantee import (
    NOT_ADDITIVE,
    JointGuarantee,
    chain_rule_bound,
    joint_guarantee,
    marginal_bound,
)
from .plan import ReleasePlan
from .product import DENSE_MAX, ProductMechanism, joint_capacity, joint_leakage, product_mechanism
from .repeat import MAX_RELEASE_CLASSES, release_leakage, repeated_leakage

__all__ = [
    "DENSE_MAX",
    "EXACT_WORK_MAX",
    "JOINT_DESIGN_MAX_N",
    "MAX_RELEASE_CLASSES",
    "NOT_ADDITIVE",
    "JointDesign",
    "JointGuarantee",
    "JointRelease",
    "ProductMechanism",
    "ReleasePlan",
    "chain_rule_bound",
    "design_joint",
    "joint_capacity",
    "joint_guarantee",
    "joint_leakage",
    "joint_release",
    "marginal_bound",
    "product_mechanism",
    "release_leakage",
    "repeated_leakage",
]


def __getattr__(name: str) -> Any:
    # ``pmlkit.joint.audit_joint`` moved to :func:`pmlkit.audit.audit_joint` (an audit is an
    # application of the joint guarantee, one layer up); importing it from here would go up
    # the layers, so the old name only says where the function is now.
    if name == "audit_joint":
        raise AttributeError(
            "pmlkit.joint.audit_joint moved to pmlkit.audit.audit_joint: "
            "use `from pmlkit.audit import audit_joint`")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
