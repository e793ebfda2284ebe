"""Column generation for the sub-convex design, with a certified optimality gap.

The sub-convex design is the LP over the extreme rays ``v`` of
``K_1 = {w in K : p . w = 1}`` (see :mod:`pmlkit.design.subconvex`)::

    OPT = max sum_k theta_k mu(v_k)   s.t.  sum_k theta_k v_k = 1_N,  theta >= 0.

Instead of listing every ray, a *restricted master* LP over a few columns is solved (HiGHS)
and its duals ``y`` priced: a column ``v`` of ``K_1`` improves the master iff
``mu(v) - y . v > 0``. Since ``p . v = 1`` for every column, ``sum_k theta_k = 1`` at every
feasible point, and weak duality gives, for ANY ``y`` returned by a restricted master,

    OPT  <=  1 . y  +  max(0, max_{v in K_1} [mu(v) - y . v]).

Any valid upper bound on the inner maximum (the *pricing* problem) therefore certifies how
far the restricted value is from the optimum: ``gap = (bound - value) / bound``. The loop
adds the most improving columns until the gap is at most the requested one (or the time
budget is spent, in which case the gap actually reached is reported). The bound is valid
for any ``y`` whatsoever, so rounds may skip it (cheap partial pricing) as long as the
reported gap comes from a full pricing pass. The master is one HiGHS model for the whole
run: new columns are added to it and its simplex restarts from the last optimal basis.

Pricing, three oracles:

- **Enumeration** (small alphabets): the candidate rays of the set are generated once
  (``N 2^(N-1)``, ``~N 2^N`` or ``3^N`` of them), their utilities computed once; a full
  round is one matrix-vector product, and the rounds in between price only the rays that
  were best in the last full round. The master LP stays small, which is where the old
  designer spent 95% of its time.
- **Spatial branch and bound** (mutual information, any N, every set including vertex sets):
  on ``K_1`` the mutual-information term is separable,
  ``mu(w) = sum_x p_x w_x log w_x`` (``p . w = 1``), so the pricing objective is
  ``G(w) = sum_x g_x(w_x)``, ``g_x(a) = p_x a log a - y_x a``, convex in each coordinate.
  On a box ``l <= w <= u`` each ``g_x`` lies below its chord, so the LP
  ``max sum_x chord_x(w_x)`` over ``K_1`` (written exactly with
  :func:`~pmlkit.design.linear.mechanism_polytope` for one output column, plus
  ``p . w = 1``) bounds ``G`` from above, and its solution ``w*`` is a point of ``K_1`` whose
  exact ``G(w*)`` is a lower bound (and a candidate column). A node is split at ``w*_x`` on
  the coordinate with the largest chord error; the largest bound over the open nodes is a
  valid upper bound at every moment, so stopping early still certifies a (larger) gap.
- **Dynamic programming over masses** (mutual information over an l1-ball centred at the
  prior, prior on a grid ``p = k / m`` with integer ``k``, e.g. an estimate from counts; any
  N): exact, see :mod:`~pmlkit.design.colgen._l1`.
- **Streamed block assignments** (mutual information over a box, moderate N): exact, every
  three-level assignment evaluated from block sums of the two halves of the alphabet
  (:class:`BoxOracle`).
- **Block pairs** (mutual information over a box, N = 16 to 24, with numba): the same
  pairs of half-assignments, searched by branch and bound over pairs of blocks
  (:class:`BoxTreeOracle`, method in
  :mod:`~pmlkit.design.colgen._box`): exact when the search finishes, a valid bound when it
  is stopped.
- **Level cells** (mutual information over a box, any N, with numba): a branch and bound
  over (mode of the worst case, cell of the top and middle levels, allowed levels of each
  entry) with a Lagrangian bound in each node (:class:`BoxLagrangeOracle`, method in
  :mod:`~pmlkit.design.colgen._level_cells`): a
  valid bound whenever it stops, and exact three-level candidates as columns.

The package holds one concept per module: ``_work`` (the work budget :class:`Work` and its
rates), ``_master`` (the restricted master LP and the loop :func:`column_generation`),
``_oracles`` (the enumeration and the spatial branch and bound), ``_l1`` (the l1-ball's
dynamic programme), ``_box`` (the box's block assignments and block pairs, kernels in
``_boxtree``) and ``_level_cells`` (the box's level-cell search, kernels in
``_boxlagrange``). Every name is imported from this package.
"""

from __future__ import annotations

# The names of pmlkit.design.colgen before it became a package; those outside __all__
# are the designer's internals (imported by pmlkit.design.pipeline and the tests).
from ._box import BOX_MAX_N as BOX_MAX_N
from ._box import BOX_TREE_MAX_N as BOX_TREE_MAX_N
from ._box import BoxOracle
from ._box import BoxTreeOracle as BoxTreeOracle
from ._l1 import DP_MAX_STEPS as DP_MAX_STEPS
from ._l1 import GRID_MAX as GRID_MAX
from ._l1 import L1BallOracle, prior_grid
from ._level_cells import BOX_LAGRANGE_MIN_EPS as BOX_LAGRANGE_MIN_EPS
from ._level_cells import BoxLagrangeOracle as BoxLagrangeOracle
from ._master import GAP_ABS_TOL as GAP_ABS_TOL
from ._master import SMOOTHING as SMOOTHING
from ._master import SMOOTHING_ROUNDS as SMOOTHING_ROUNDS
from ._master import SOLVER_ABS_TOL as SOLVER_ABS_TOL
from ._master import ColgenResult, column_generation
from ._master import relative_gap as relative_gap
from ._oracles import MAX_ENUMERATED as MAX_ENUMERATED
from ._oracles import MAX_THREE_LEVEL_N as MAX_THREE_LEVEL_N
from ._oracles import BranchAndBoundOracle as BranchAndBoundOracle
from ._oracles import EnumerationOracle as EnumerationOracle
from ._work import BOX_RATE as BOX_RATE
from ._work import DP_RATE as DP_RATE
from ._work import ENUMERATION_RATE as ENUMERATION_RATE
from ._work import EVAL_RATE as EVAL_RATE
from ._work import HEURISTIC_RATE as HEURISTIC_RATE
from ._work import LP_RATE as LP_RATE
from ._work import MASTER_RATE as MASTER_RATE
from ._work import NODE_RATE as NODE_RATE
from ._work import TREE_RATE as TREE_RATE
from ._work import Work

__all__ = ["BoxOracle", "ColgenResult", "L1BallOracle", "Work", "column_generation", "prior_grid"]
