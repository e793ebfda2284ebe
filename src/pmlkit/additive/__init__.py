"""Laplace and Gaussian noise on binary data ``X in {-1, +1}`` (paper Section "examples";
beyond the paper: releases on an exact grid).

==================================  ==========================================================
``laplace_eps(b, p_min)``           Prop. Laplaceleakage
``laplace_scale(eps, p_min)``       its inverse in closed form (smallest b meeting eps)
``laplace_eps_uncertain``           eq. uncertainlaplace (``p_min -> p_hat_min - beta/2``)
``laplace_binarized_channel(b)``    2 x 2 channel of the output thresholded at 0
``gaussian_pml``                    per-outcome PML of ``X + N(0, sigma^2)``
``gaussian_violation_probability``  ``P_Y(E_eps(P))`` in closed form
``gaussian_delta1``                 eq. gaussianopt, exact 1-D maximisation over the set
``gaussian_tradeoff``               the paper's ``(eps*, delta*)`` and the "direct" curve
``pldp_sigma`` / ``pldp_eps``       the pLDP baseline (Zhao et al. 2019, Thm 8), Delta = 2
``laplace_noise`` ...               samplers releasing on a grid ``g Z`` (exact integer
                                    samplers, secure randomness by default)
``laplace_grid_eps`` ...            the guarantee of the released grid mechanism
                                    (Laplace eps; Gaussian delta recomputed for the grid)
``calibrate_laplace`` ...           from a reference sample to a scale / a curve
``LaplaceMechanism`` ...            the released mechanisms as objects carrying their
                                    typed guarantee (``apply``, ``leakage_under``,
                                    ``worst_case_over``, ``binarized``)
==================================  ==========================================================

scipy is imported only inside the functions that need it.
"""

from __future__ import annotations

from .calibrate import (
    DEFAULT_GAUSSIAN_EPS,
    GaussianCalibration,
    LaplaceCalibration,
    calibrate_gaussian,
    calibrate_laplace,
)
from .gaussian import (
    METHODS,
    gaussian_binarized_channel,
    gaussian_delta1,
    gaussian_delta1_interval,
    gaussian_flip_probability,
    gaussian_pml,
    gaussian_tradeoff,
    gaussian_tradeoff_interval,
    gaussian_violation_probability,
    gaussian_violation_thresholds,
)
from .grid import (
    GridNoise,
    gaussian_grid,
    gaussian_grid_delta1_interval,
    gaussian_grid_pml,
    gaussian_grid_violation_probability,
    laplace_grid,
    laplace_grid_eps,
    laplace_grid_pml,
)
from .laplace import (
    laplace_binarized_channel,
    laplace_eps,
    laplace_eps_uncertain,
    laplace_flip_probability,
    laplace_scale,
    laplace_scale_uncertain,
    worst_case_p_min,
)
from .mechanisms import GaussianMechanism, LaplaceMechanism
from .pldp import pldp_eps, pldp_sigma
from .sampling import gaussian_binarized, gaussian_noise, laplace_binarized, laplace_noise

__all__ = [
    "DEFAULT_GAUSSIAN_EPS",
    "METHODS",
    "GaussianCalibration",
    "GaussianMechanism",
    "GridNoise",
    "LaplaceCalibration",
    "LaplaceMechanism",
    "calibrate_gaussian",
    "calibrate_laplace",
    "gaussian_binarized",
    "gaussian_binarized_channel",
    "gaussian_delta1",
    "gaussian_delta1_interval",
    "gaussian_flip_probability",
    "gaussian_grid",
    "gaussian_grid_delta1_interval",
    "gaussian_grid_pml",
    "gaussian_grid_violation_probability",
    "gaussian_noise",
    "gaussian_pml",
    "gaussian_tradeoff",
    "gaussian_tradeoff_interval",
    "gaussian_violation_probability",
    "gaussian_violation_thresholds",
    "laplace_binarized",
    "laplace_binarized_channel",
    "laplace_eps",
    "laplace_eps_uncertain",
    "laplace_flip_probability",
    "laplace_grid",
    "laplace_grid_eps",
    "laplace_grid_pml",
    "laplace_noise",
    "laplace_scale",
    "laplace_scale_uncertain",
    "pldp_eps",
    "pldp_sigma",
    "worst_case_p_min",
]
