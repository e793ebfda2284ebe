"""Numeric and ordinal columns: a declared grid, additive noise on it with its exact PML,
the PML-optimal ordinal mechanisms and the analyst's estimates (beyond the paper; the
derivations are in ``docs/numeric.md``).

==================================  ==========================================================
:mod:`pmlkit.numeric.grid`          ``NumericGrid``: values <-> codes, clamp/round policy
:mod:`pmlkit.numeric.laplace`       discrete Laplace (two-sided geometric) on the grid:
                                    clamped channel, exact unclamped supremum, calibration
:mod:`pmlkit.numeric.gaussian`      Gaussian on the grid: per-output PML, its limit, exact
                                    violation probability, the clamped channel
:mod:`pmlkit.numeric.tails`         (eps, delta) statements that survive post-processing
:mod:`pmlkit.numeric.design`        certified mechanisms (:class:`pmlkit.Mechanism` over the
                                    grid): ordinal LP, calibrated Laplace, Gaussian, best one
:mod:`pmlkit.numeric.estimate`      EM estimate of the grid distribution from released
                                    values; mean, quantiles, shares with intervals
==================================  ==========================================================

The package imports nothing itself (its modules sit in different layers of
``docs/architecture.md``): import the submodule you need.
"""

from __future__ import annotations
