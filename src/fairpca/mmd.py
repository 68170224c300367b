"""MMD-constrained fair PCA on the Stiefel manifold (MbF-PCA).

Lee, Kim, Olfat, Hasegawa-Johnson and Yoo ask for the loading matrix that keeps
the most variance among those whose projected groups are (almost)
indistinguishable in maximum mean discrepancy, and solve the constrained
problem with the Riemannian exact penalty method REPMS (Liu & Boumal, 2019):
a sequence of smooth penalised problems on the Stiefel manifold, each solved
by a Riemannian quasi-Newton method warm-started at the previous solution.

This module holds the algorithm: Algorithm 1 of Lee et al. is :func:`_repms`,
first in the "Algorithm 1" section below, with its sub-solver
:func:`_solve_subproblem`; the estimator :class:`MMDFairPCA` prepares the data
and calls it. The objective (variance plus the sum of the constraints' MMD²)
is in :mod:`fairpca._mmd_objective`, the MMD² maths (exact tiled kernel sums,
random features, gradient, Hessian) in :mod:`fairpca._kernels`, the
Riemannian solvers in :mod:`fairpca.riemannian`.

References
----------
.. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
   "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
   Manifold." AAAI 2022.
.. [Liu2019] C. Liu and N. Boumal. "Simple Algorithms for Optimization on
   Riemannian Manifolds with Constraints." Applied Mathematics and
   Optimization 82, 2020.
.. [Avron2016] H. Avron, V. Sindhwani, J. Yang and M. W. Mahoney.
   "Quasi-Monte Carlo Feature Maps for Shift-Invariant Kernels." JMLR 17, 2016.
"""

from __future__ import annotations

import logging
import numbers
from dataclasses import replace
from typing import Literal

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from fairpca._base import FairPCABase, _check_target
from fairpca._config import document_require_groups
from fairpca._dask import _gather_rows
from fairpca._kernels import (
    _bandwidth_rows,
    _median_bandwidth,
    _qmc_frequencies,
    _Stratum,
    _subsample,
    _subsample_positions,
)
from fairpca._linalg import one_blas_thread, top_eigh
from fairpca._mmd_objective import _CachedObjective, _Penalty, check_exact_cost
from fairpca._sparse import issparse
from fairpca._validation import _plain, check_number, check_sensitive_features
from fairpca._warnings import warn
from fairpca.riemannian import minimize_lbfgs, minimize_trust_region, random_point
from fairpca.riemannian.geometry import _reduction_basis

__all__ = ["MMDFairPCA"]

logger = logging.getLogger(__name__)

# REPMS settings of Lee et al. (section 8 and their scripts).
_EPS_START = 1e-1  # sub-problem gradient tolerance of the first outer iteration
_EPS_MIN = 1e-6  # final sub-problem gradient tolerance
#: Final tolerance with random features: their single-precision rounding makes the cost
#: noisy at ~1e-8, below which Armijo line searches fail after 40 halvings each.
_EPS_MIN_RFF = 1e-5
#: Step halvings of a line search with random features. Their cost is noisy at ~1e-7
#: relative, so a direction whose Armijo test still fails at 2^-12 of its first step is
#: lost in that noise; halving on only ends at steps too short to change the
#: single-precision features, accepted at the price of dozens of evaluations each.
_RFF_MAX_HALVINGS = 12
#: Outer iterations without a step (at the final tolerance, h > tau) before giving up:
#: rho has then grown 16-fold with no effect.
_STALLED_ITERATIONS = 4
_EPS_DECAY = 0.1  # (eps_min / eps_start) ** (1 / 5)
_RHO_GROWTH = 2.0
_RHO_MAX = 1e10
_STEP_MIN = 1e-6  # d_min: smallest ||V_{k+1} - V_k||_F that counts as movement
_INNER_MAX_ITER = 300  # iterations of each sub-solve (the authors' RBFGS limit)
#: Truncated-CG stopping exponent of the trust-region sub-solver: with 1 the Newton
#: systems of a tight tau take up to the dimension in CG products each; 0.5 needs far
#: fewer for the same result.
_CG_THETA = 0.5
_N_RANDOM_STARTS = 11  # random orthonormal matrices tried by init="random"

# Cost model of mmd="auto" (the measurements are in benchmarks/results.md, "MMDFairPCA
# with many groups"): exact kernel sums cost (1.3 + 0.04 k (1 + d)) ns per pair of rows
# (the exp, then the tile products with k (1 + d) columns), random features 3 ns per row
# and frequency (the single-precision sin and cos), and random-feature fits take about
# 0.7 times the evaluations of exact ones (they stop at a gradient of 1e-5, not 1e-6).
# Exact sums are kept unless random features are predicted twice as fast, for their
# exact certificate and Newton steps.
_EXACT_NS_PER_PAIR = 1.3
_EXACT_NS_PER_PAIR_COLUMN = 0.04
_RFF_NS_PER_ROW_FREQUENCY = 3.0
_RFF_EVALUATIONS_FACTOR = 0.7
_EXACT_PREFERENCE = 2.0
#: Below this tau mmd="auto" always sums exactly: the random-feature estimate errs by
#: ~10 % near the constraint and is noisy below ~1e-5, so tighter fits end above tau.
_RFF_MIN_TAU = 1e-3
#: With random features, constraint_value_ is the exact MMD² on at most this many rows.
CERTIFY_MAX_ROWS = 20000
#: Rows of the median heuristic (the default of ``fairpca.metrics.mmd_bandwidth``).
_BANDWIDTH_ROWS = 2000


# --------------------------------------------------------------------------
# Algorithm 1 of Lee et al.: REPMS
# --------------------------------------------------------------------------


def _repms(objective, V, rho, tau, max_iter, log):
    r"""Outer loop of Algorithm 1 (REPMS, [Liu2019]_ as in [Lee2022]_).

    From ``V`` and the penalty weight ``rho``, solve ``min f + rho * penalty``
    to gradient norm ``eps`` (:func:`_solve_subproblem`), then shrink ``eps``
    by ``_EPS_DECAY`` (down to ``_EPS_MIN``, ``_EPS_MIN_RFF`` with random
    features) and, while the largest constraint ``h`` (MMD² less its
    allowance, see ``min_group_size``) exceeds ``tau``,
    multiply ``rho`` by ``_RHO_GROWTH`` (up to ``_RHO_MAX``) and halve the
    weights of the constraints that hold (:meth:`_Penalty.reweight`).

    Stopping rules, checked in this order after each outer iteration ``k``
    (``||dV|| = ||V_{k+1} - V_k||_F``, "final" meaning ``eps`` at its floor):

    ``"met"``
        ``||dV|| <= _STEP_MIN`` at the final tolerance with ``h <= tau``.
    ``"levelled"``
        ``||dV|| <= _STEP_MIN`` at the final tolerance, the sub-problem solved
        to ``eps``, but ``h > tau``: Liu & Boumal's own rule (which does not
        ask for feasibility). ``rho`` has just doubled without moving ``V``,
        so ``V`` is a stationary point of the penalty (the constraint
        violation) itself: at a solution of the sub-problem
        ``||grad f + rho grad penalty|| <= eps``, so ``||grad penalty|| <=
        (||grad f|| + eps) / rho``. Near such a point ``h`` exceeds its limit
        along the path by ``O(||dV||^2)``, so doubling ``rho`` on would not
        bring it to ``tau``; the authors' code stops here too.
    ``"stuck"``
        The sub-solver could not move at all (``||dV|| = 0``) while ``rho``
        stays the same (``h <= tau``, or ``rho`` at ``_RHO_MAX``).
    ``"stalled"``
        No step in ``_STALLED_ITERATIONS`` consecutive outer iterations at the
        final tolerance although ``rho`` doubled each time.
    ``"capped"``
        ``rho`` has reached ``_RHO_MAX`` at the final tolerance with
        ``h > tau``: every later sub-problem would be this one again.
    ``"max_iter"``
        ``max_iter`` outer iterations.

    ``log`` receives one message per outer iteration.

    Returns ``(V, outcome, n_iter, records)``: the last iterate, the rule that
    stopped the loop (above), the outer iterations run and, for each, ``(rho,
    eps, h, variance, step, inner steps, gradient norm)`` (see :func:`_history`).
    """
    eps = _EPS_START
    eps_min = _EPS_MIN_RFF if objective.penalty.method == "rff" else _EPS_MIN
    records = []
    outcome = "max_iter"
    stalled = 0  # consecutive outer iterations without a step while h > tau
    newton = False
    for it in range(1, max_iter + 1):
        objective.rho = rho
        result, newton = _solve_subproblem(objective, V, eps, newton)
        V_new = result.point
        variance, _, h, _, _ = objective.terms(V_new)
        step = float(np.linalg.norm(V_new - V))
        records.append((rho, eps, h, variance, step, result.n_iter, result.grad_norm))
        log(
            f"iteration {it}: rho={rho:.3g}, MMD²={h:.3g}, explained variance={variance:.4f}, "
            f"||dV||={step:.2g}, {result.n_iter} steps ({result.message})"
        )
        V = V_new
        final = eps <= eps_min
        if step <= _STEP_MIN and final and (h <= tau or result.converged):
            outcome = "met" if h <= tau else "levelled"
            if h > tau:
                log(f"MMD² levelled off at {h:.3g} > tau {tau:g} (rho {rho:.3g})")
            break
        stuck = result.message == "trust region collapsed" or final
        if step == 0.0 and stuck and (h <= tau or rho >= _RHO_MAX):
            # The sub-solver could not move (rounding-level line search failure) and
            # rho stays: every later iteration would repeat this one exactly.
            outcome = "stuck"
            log(f"no further progress possible (MMD² {h:.3g}, tau {tau:g})")
            break
        stalled = stalled + 1 if step == 0.0 and stuck and h > tau else 0
        if stalled == _STALLED_ITERATIONS:
            outcome = "stalled"
            log(f"no step in {stalled} outer iterations while rho grew (MMD² {h:.3g}, tau {tau:g})")
            break
        if final and h > tau and rho >= _RHO_MAX:
            outcome = "capped"
            log(f"rho at its cap {_RHO_MAX:g} with MMD² {h:.3g} > tau {tau:g}")
            break
        eps = max(eps_min, _EPS_DECAY * eps)
        if h > tau:
            rho = min(_RHO_GROWTH * rho, _RHO_MAX)
            objective.reweight(V, tau)
    return V, outcome, it, records


def _solve_subproblem(objective, V, eps, newton):
    """Minimise ``Q = f + rho * penalty`` from ``V`` to gradient norm ``eps``.

    L-BFGS first: its steps cost one gradient each, while a trust-region step
    costs a conjugate-gradient solve with Hessian products (central differences
    of the gradient with random features), so at loose tau, where L-BFGS meets
    ``eps`` in a few dozen steps, it is much faster. At the ``rho`` a
    tight tau needs, the sub-problem's Hessian spans many orders of magnitude
    and L-BFGS stalls far above ``eps``: the trust-region Newton method then
    continues from where it stopped. Since ``rho`` only grows and ``eps`` only
    shrinks, later sub-problems are at least as hard, so after the first
    failure (``newton`` True) every later one goes straight to trust regions.

    With random features there is no switch: their trigonometric functions are
    in single precision, so the gradient carries rounding errors ~1e-7 relative
    that a difference quotient of it (the only Hessian product available)
    magnifies to ~1e-2; trust regions then cannot reach a tight ``eps``, where
    L-BFGS stops at once with a failed line search.

    Returns
    -------
    result : StiefelResult
        ``n_iter`` counts the steps of both methods.
    newton : bool
        Whether trust regions are to be used from now on.
    """
    n_lbfgs = 0
    if not newton:
        rff = objective.penalty.method == "rff"
        result = minimize_lbfgs(
            objective,
            V,
            gtol=eps,
            max_iter=_INNER_MAX_ITER,
            max_backtracks=_RFF_MAX_HALVINGS if rff else 40,
        )
        if result.converged or rff:
            return result, False
        V, n_lbfgs = result.point, result.n_iter
    result = minimize_trust_region(
        objective,
        objective.hess_vec,
        V,
        gtol=eps,
        max_iter=_INNER_MAX_ITER,
        theta=_CG_THETA,
        preconditioner=objective.preconditioner,
    )
    return replace(result, n_iter=result.n_iter + n_lbfgs), True


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------


@document_require_groups
class MMDFairPCA(FairPCABase):
    r"""Fair PCA whose projected groups are close in maximum mean discrepancy (MbF-PCA).

    Solves, over loading matrices ``V`` with orthonormal columns (the Stiefel
    manifold ``St(p, d)``),

    .. math::

        \min_{V \in St(p, d)} \; -\frac{\mathrm{tr}(V^T \Sigma V)}{\mathrm{tr}\,\Sigma}
        \quad \text{subject to} \quad
        h_a(V) = \widehat{\mathrm{MMD}}^2(V^T x \mid a,\; V^T x \mid \text{not } a)
        \le \tau \quad \text{for every group } a,

    with ``Sigma`` the training covariance and ``MMD²`` the biased V-statistic
    with RBF kernel ``exp(-||u - v||² / (2 sigma²))`` between projected rows
    ([Lee2022]_ state it for two groups, where this is their one constraint).
    With ``k`` groups there are ``k`` constraints (``constraint="one-vs-rest"``,
    the default) or, as ``constraint="pairwise"``, ``k (k - 1) / 2``:
    ``h_ab = MMD²(a, b)`` for every pair. The two are equivalent up to a
    factor: with ``delta_a`` the difference of mean embeddings of group ``a``
    and the other rows and ``w_a = n_a / n``, ``mu_a - mu_b = (1 - w_a) delta_a
    - (1 - w_b) delta_b``, so ``max_a h_a <= max_ab h_ab`` and
    ``h_ab <= ((1 - w_a) sqrt(h_a) + (1 - w_b) sqrt(h_b))² <= 4 max_a h_a``;
    with two groups both are the one MMD² and the fits are identical. Both
    cost the same per evaluation: one pass over the pairs of rows (or the
    random features of the rows) gives the kernel sums of every group, and
    every constraint follows from their ``k x k`` Gram matrix. The exact
    penalty of the set of constraints is the *sum* of their MMD² values (each
    is non-negative, so ``max(0, h) = h``), which is smooth. Feasibility
    (``h <= tau``) is judged on the largest; ``constraint_values_`` reports
    each and ``active_constraint_`` the largest. Groups with fewer than
    ``min_group_size`` rows are judged differently (see there).

    The solver is the Riemannian exact penalty method of [Liu2019]_ as in the
    paper's Algorithm 1, with the authors' settings except the sub-solver:
    sub-problems ``min f + rho_k * penalty`` are solved, warm-started at the
    previous solution, until the Riemannian gradient norm is at most
    ``eps_k``, by Riemannian L-BFGS (at most 300 steps) and, once L-BFGS has
    failed to get there, by Riemannian trust regions from then on
    (:func:`fairpca.riemannian.minimize_trust_region` with the exact Hessian
    of the penalty and a dense preconditioner; exact mode only);
    ``eps_0 = 0.1``, ``eps_{k+1} = max(1e-6, eps_k / 10)`` (floor 1e-5 with
    random features, whose single-precision cost is noisy below it);
    ``rho_0 = 1 / penalty(V_PCA)``, doubled (up to ``1e10``) after every outer
    iteration that ends with ``h > tau``; stop when
    ``||V_{k+1} - V_k||_F <= 1e-6`` at ``eps_k = 1e-6`` (Liu & Boumal's rule),
    or after ``max_iter`` outer iterations (:func:`_repms`). With ``h > tau``
    that rule means ``rho`` doubled without moving ``V``: the MMD² has
    levelled off at a local minimum of the violation, and doubling on to
    ``1e10`` would not bring it to ``tau`` (on 400 rows in groups of 280, 60
    and 60, it cost a minute for nothing). The fit is then unconverged, with
    a warning saying so, unless each constraint above ``tau`` is within
    ``tau`` of its sampling floor: its groups then differ no more than a
    random split of the same rows would, and it is judged against that
    floor, as groups under ``min_group_size`` are. The authors used a
    quasi-Newton method (RBFGS), but the penalty is a squared distance, so
    the ``h`` reached at weight ``rho`` falls like ``1 / rho`` and a tight
    ``tau`` needs a large ``rho``: the sub-problem's Hessian then spans many
    orders of magnitude and quasi-Newton steps stall far from the stopping
    rule; Newton steps meet it, but cost more where L-BFGS suffices. With
    more features than rows (``p > n``) the cost depends on ``V`` only
    through ``X V``, and the problem is solved exactly, and faster, on
    ``St(r + d, d)``, ``r`` the rank of the centred training ``X``: its row
    space plus ``d`` slack directions (``_reduction_basis`` has the proof).
    Two shortcuts return the same point sooner: if PCA
    itself satisfies ``h <= tau`` it is the solution (it maximises the
    variance) and is returned at once; and when a sub-solve cannot move at
    all (its trust region collapses at rounding level) while ``rho`` would
    stay the same, the loop stops there (converged if ``h <= tau``).

    Dask input. ``fit`` also accepts a ``dask.array`` or Dask DataFrame ``X``
    (labels and ``y`` as Dask or NumPy arrays), of any length: the fit needs
    only the covariance, which one distributed pass computes from the group
    moments (as for the covariance-based methods), and the rows it reads in
    memory anyway: the ``max_samples`` subsample of the MMD² terms and the
    2000 rows of the median bandwidth. The labels (and ``y`` for ``"EOP"``
    and ``"EOD"``) are then loaded, n entries each, the subsample is drawn
    from the group sizes alone, and a second pass reads just those rows.
    Memory is therefore independent of n apart from n-length vectors: the
    labels, their 8-byte group codes and, while the subsample is drawn, the
    8-byte row indices of one group. The rows drawn are those of the
    in-memory fit with the same ``random_state``, so the two fits agree up to
    rounding (tested: subspace distance below 1e-8 in exact mode; with
    ``mmd="rff"`` the single-precision features can magnify last-bit
    differences of the merged moments to about 1e-4).
    ``max_samples=None`` is refused on Dask input: it would load every row.

    Parameters
    ----------
    n_components : int, default=2
        Target dimension ``d``.
    tau : float, default=1e-3
        Fairness tolerance on the largest constraint's MMD² (>= 0). The paper uses
        1e-3 (relaxed) and 1e-6 (strict). The biased estimate is positive for
        any finite sample, so ``tau=0`` is never reached.
    fairness : {"DP", "EOP", "EOD"}, default="DP"
        Which conditional distributions must match. ``"DP"`` (demographic
        parity): the projected groups over all rows. ``"EOP"`` (equal
        opportunity): the rows with positive ``y`` only. ``"EOD"`` (equalised
        odds): separately the rows with positive and with negative ``y`` (one
        family of constraints each). ``y`` must then be passed to ``fit`` and be
        binary; its larger label (after sorting) is the positive class.
    constraint : {"one-vs-rest", "pairwise"}, default="one-vs-rest"
        The constraints with more than two groups: each group against all
        other rows (``k`` constraints), or each pair of groups
        (``k (k - 1) / 2``), see above. Identical with two groups.
    min_group_size : int, default=50
        Groups with fewer rows (among those the MMD² terms use) get a warning
        and a constraint judged above chance. A biased MMD² between two sides
        of ``n_A`` and ``n_B`` rows is, when the rows are split at random,
        ``(1 / n_A + 1 / n_B) (1 - kbar)`` on average (``kbar`` the mean kernel
        value between distinct rows): the self-pairs ``k(x, x) = 1`` do not
        cancel. For 18 rows that *sampling floor* is about 0.018 (COMPAS's
        Native American defendants, at the fitted projection), far above the
        default ``tau``; driving such a constraint below it fits the noise of
        a few rows at the cost of variance (on COMPAS's six race groups, 0.12
        of the variance kept instead of 0.20: ``benchmarks/mmd_groups.py
        --cases compas-race`` with and without ``--min-group-size 0``).
        A constraint with a side under ``min_group_size`` rows is therefore
        penalised only above its sampling floor at the current projection
        (a smooth hinge, ``max(0, h - floor)`` rounded over a tenth of the
        floor) and met when its MMD² is at most ``tau`` above the floor,
        reported in ``constraint_allowances_``. Hessian products are then
        differences of gradients. ``0`` holds every constraint to ``tau``
        itself.
    bandwidth : "median" or float, default="median"
        RBF bandwidth ``sigma``. ``"median"``: the authors' rule
        ``sigma = sqrt(median_{i<j} ||V_PCA^T (x_i - x_j)||² / 2)`` over all
        training rows (:func:`fairpca.metrics.mmd_bandwidth`, pairs of a seeded
        subsample of 2000 rows when there are more; computed from the
        covariance and those rows only), computed once and stored
        in ``bandwidth_``; pass it to :func:`fairpca.metrics.mmd2` to evaluate
        on other data with the same kernel.
    mmd : {"auto", "exact", "rff"}, default="auto"
        How MMD² and its gradient are computed while optimising. ``"exact"``:
        all pairs of rows, ``O(m² d)`` time per evaluation for ``m``
        constrained rows and ``O(m (k d + p))`` memory (tiles of 1024 rows:
        m = 20000 needs about 0.1 GiB); refused above m = 10000 rows (a
        minute or more per outer iteration): lower ``max_samples`` or use
        ``"auto"`` or ``"rff"``. ``"rff"``: random Fourier features
        ``[cos(w^T z), sin(w^T z)]`` at ``D = n_random_features`` frequencies
        ``w`` (a scrambled Sobol' sequence mapped to ``N(0, I / sigma²)``,
        [Avron2016]_), ``O(m D d)`` time per evaluation, trigonometric
        functions in single precision. Their MMD² estimate is least accurate
        (relatively) near a fair projection: it cannot certify ``tau`` by itself,
        so ``constraint_value_`` is always recomputed exactly. ``"auto"``:
        exact whenever ``tau < 1e-3`` (random features cannot certify a
        tighter one); otherwise by a cost model: per evaluation, exact sums
        cost ``(1.3 + 0.04 k (1 + d))`` ns per pair of rows and random
        features 3 ns per row and frequency (measured on one core,
        ``benchmarks/mmd_groups.py --costs``), a random-feature fit takes
        about 0.7 times as many evaluations, and exact sums are kept unless
        random features are predicted twice as fast. Exact up to about 2,800
        rows with two groups and ``d = 2``, about 1,200 with 10 groups and
        ``d = 5``; ``mmd_method_`` says which ran.
    n_random_features : int, default=1024
        Number ``D`` of frequencies for ``mmd="rff"`` (2 D features).
    max_samples : int or None, default=20000
        Largest number of constrained rows on which MMD² is optimised and
        reported; beyond it a seeded random subsample keeps the same fraction
        of every group (at least 2 rows each). The variance term always uses
        every row. ``None``: all rows (with ``mmd="rff"`` the time per
        evaluation then grows linearly in n). A V-statistic on ``m_a`` rows
        per group is biased upward by about ``(1/m_a + 1/m_b)(1 - kbar)``,
        ``kbar`` the mean kernel value within a group: about 1e-4 at 10000 rows
        per group, so a ``tau`` below that needs more rows.

        Memory at large n: only the subsample's rows are copied, so beyond the
        input a fit holds one centred copy of X, vectors of length n and a part
        independent of n. Dask input needs no copy of X (see above).
    init : {"pca", "random"}, default="pca"
        Starting point. ``"pca"``: the top ``d`` principal loadings.
        ``"random"``: the authors' code: the best of 11 random orthonormal
        matrices by explained variance, then MMD² alone minimised from there.
        The PCA start is the default: on Lee et al.'s data it usually keeps
        as much variance or more, at a fraction of the cost
        (``benchmarks/reproduce_mmd.py``). When ``d`` is at least the rank of
        the data (COMPAS's 11 features have rank 9), the top ``d`` loadings
        span every row, a stationary point no descent leaves; ``"pca"`` then
        starts as ``"random"``.
    max_iter : int, default=100
        Maximum number of outer (penalty) iterations.
    random_state : int, RandomState instance or None, default=None
        Seeds the bandwidth subsample, the random frequencies, the subsample
        used for ``constraint_value_`` and the random initialisation. Same
        seed and data give identical results.
    verbose : bool, default=False
        Print the progress lines to standard error during ``fit``. They are
        always logged at INFO level on the ``fairpca.mmd`` logger, one per
        outer iteration (``rho``, MMD², explained variance,
        ``||V_{k+1} - V_k||_F``, inner steps) and one at the end, so that a
        handler on the ``fairpca`` logger (as ``fairpca compare`` attaches)
        follows a long fit; ``verbose`` adds a handler printing them when
        logging is not configured.
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal loadings, sorted by explained variance.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Variance of each output coordinate over the total (%VAR of the paper
        is the sum).
    bandwidth_ : float
        RBF bandwidth ``sigma`` used.
    mmd_method_ : {"exact", "rff"}
        How MMD² was computed while optimising.
    mmd_rows_ : int
        Rows in the MMD² terms while optimising (over both classes of ``y``
        for ``"EOD"``): all of them, or the ``max_samples`` subsample.
    constraint_values_ : dict of str to float
        Exact MMD² of every constraint under ``components_``, by label
        (``"'a' vs rest"`` or ``"'a' vs 'b'"``, prefixed by ``"y=1: "`` and the
        like for ``"EOP"``/``"EOD"``). Computed on the rows the fit used:
        all of them unless there are more than ``max_samples`` (then on that
        subsample, whose bias is described there); with ``mmd="rff"`` on at
        most 20000 of them (``CERTIFY_MAX_ROWS``), once at the end.
    constraint_allowances_ : dict of str to float
        By label, the sampling floor a constraint may exceed ``tau`` by: that
        of a constraint with a group under ``min_group_size``, or of one whose
        MMD² levelled off above ``tau`` but within ``tau`` of its floor (see
        above); 0 for the others.
    active_constraint_ : str
        Label of the constraint with the largest MMD² less its allowance: the
        one that binds at the end.
    constraint_value_ : float
        Largest of ``constraint_values_``. With ``constraint="pairwise"`` and
        ``"DP"`` it equals
        ``fairpca.metrics.mmd2(X, s, self, bandwidth=self.bandwidth_)`` (on
        ``X[y == positive]`` for ``"EOP"``).
    converged_ : bool
        True when the REPMS stopping rule was met and the active constraint's
        MMD² is at most ``tau`` above its allowance.
    n_iter_ : int
        Outer iterations run (0 when PCA was already fair).
    history_ : dict of ndarray
        One entry per outer iteration: ``"rho"`` (penalty weight used),
        ``"tolerance"`` (``eps_k``), ``"mmd2"`` (largest constraint MMD², less
        its allowance, as optimised: exact or random-feature), ``"explained_variance_ratio"``,
        ``"step"`` (``||V_{k+1} - V_k||_F``), ``"inner_iterations"``,
        ``"grad_norm"`` (final Riemannian gradient norm of the sub-problem).

    See Also
    --------
    fairpca.metrics.mmd2 : the fairness metric this estimator constrains.

    Notes
    -----
    The gradient of MMD² with respect to ``V`` is the closed form of the
    paper's appendix G written with projected rows ``z_i = V^T x_i``, so that
    pairwise work is ``O(d)`` instead of ``O(p)`` (:mod:`fairpca._kernels`).

    References
    ----------
    .. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
       "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
       Manifold." AAAI 2022.
    .. [Liu2019] C. Liu and N. Boumal. "Simple Algorithms for Optimization on
       Riemannian Manifolds with Constraints." Appl. Math. Optim. 82, 2020.

    Examples
    --------
    >>> from sklearn.decomposition import PCA
    >>> from fairpca import MMDFairPCA
    >>> from fairpca.datasets import make_mmd_synthetic1
    >>> from fairpca.metrics import mmd2
    >>> X, s = make_mmd_synthetic1(random_state=0)
    >>> est = MMDFairPCA(n_components=2, tau=1e-3).fit(X, sensitive_features=s)
    >>> bool(mmd2(X, s, est, bandwidth=est.bandwidth_) <= 1e-3)
    True
    >>> pca = PCA(n_components=2).fit(X)
    >>> bool(mmd2(X, s, pca, bandwidth=est.bandwidth_) > 0.05)
    True
    """

    #: Dropped by compact() besides the groups' labels, counts and moments.
    _group_attributes = (
        *FairPCABase._group_attributes,
        "constraint_values_",
        "constraint_allowances_",
        "active_constraint_",
    )

    def __init__(
        self,
        n_components: int | float = 2,
        *,
        tau: float = 1e-3,
        fairness: Literal["DP", "EOP", "EOD"] = "DP",
        constraint: Literal["one-vs-rest", "pairwise"] = "one-vs-rest",
        min_group_size: int = 50,
        bandwidth: Literal["median"] | float = "median",
        mmd: Literal["auto", "exact", "rff"] = "auto",
        n_random_features: int = 1024,
        max_samples: int | None = 20000,
        init: Literal["pca", "random"] = "pca",
        max_iter: int = 100,
        random_state: int | np.random.RandomState | None = None,
        verbose: bool = False,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.tau = tau
        self.fairness = fairness
        self.constraint = constraint
        self.min_group_size = min_group_size
        self.bandwidth = bandwidth
        self.mmd = mmd
        self.n_random_features = n_random_features
        self.max_samples = max_samples
        self.init = init
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.require_groups = require_groups

    # ------------------------------------------------------------ validation
    def _check_params(self):
        tau = check_number(self.tau, "tau", numbers.Real, minimum=0)
        for name, options in (
            ("fairness", ("DP", "EOP", "EOD")),
            ("constraint", ("one-vs-rest", "pairwise")),
            ("mmd", ("auto", "exact", "rff")),
            ("init", ("pca", "random")),
        ):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in options:
                raise ValueError(
                    f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}."
                )
        if isinstance(self.bandwidth, str):
            if self.bandwidth != "median":
                raise ValueError(
                    f"bandwidth must be 'median' or a positive number; got {self.bandwidth!r}."
                )
        else:
            check_number(
                self.bandwidth, "bandwidth", numbers.Real, minimum=0, include_boundaries="neither"
            )
        check_number(self.n_random_features, "n_random_features", minimum=2)
        check_number(self.max_iter, "max_iter", minimum=1)
        check_number(self.min_group_size, "min_group_size", minimum=0)
        if self.max_samples is not None:
            check_number(self.max_samples, "max_samples", minimum=4)
        return tau

    def _require_target(self, y):
        """Complain early when ``fairness`` needs a ``y`` that was not given."""
        if self.fairness != "DP" and y is None:
            raise ValueError(
                f"fairness={self.fairness!r} compares groups within classes of y: "
                "pass the binary target as fit(X, y, sensitive_features=...)."
            )

    def _class_masks(self, y):
        """``(name, rows mask or None for all rows)`` of each family of constraints."""
        if self.fairness == "DP":
            return [("all rows", None)]
        self._require_target(y)
        classes, codes = check_sensitive_features(y, len(y), name="y")
        if classes.size != 2:
            raise ValueError(
                f"fairness={self.fairness!r} needs a binary y (exactly two classes); "
                f"found {classes.size}: {classes[:10].tolist()}."
            )
        positive, negative = classes[1], classes[0]
        masks = [(f"y={_plain(positive)!r}", codes == 1)]
        if self.fairness == "EOD":
            masks.append((f"y={_plain(negative)!r}", codes == 0))
        return masks

    def _select_rows(self, codes, groups, y, rng):
        """Which rows enter the MMD² terms, with the group size checks.

        Returns, for each family of constraints, ``(name, rows, counts)``:
        indices of its rows group by group (in each group in the order of ``X``),
        at most ``max_samples`` rows in all (:func:`_subsample_positions`), and
        the number kept of each group. Only these rows are ever copied.
        """
        masks = self._class_masks(y)
        all_counts = []
        for name, mask in masks:
            counts = np.bincount(codes if mask is None else codes[mask], minlength=len(groups))
            small = [
                f"{_plain(g)!r} ({c} rows)" for g, c in zip(groups, counts, strict=True) if c < 2
            ]
            if small:
                raise ValueError(
                    f"fairness={self.fairness!r}: every group needs at least 2 rows with "
                    f"{name}; too small: {', '.join(small)}."
                )
            all_counts.append(counts)
        picks = _subsample_positions(all_counts, self.max_samples, rng)
        selected = []
        for i, ((name, mask), counts) in enumerate(zip(masks, all_counts, strict=True)):
            rows = []
            for a in range(len(groups)):
                in_group = codes == a
                members = np.flatnonzero(in_group if mask is None else in_group & mask)
                rows.append(members if picks is None else members[picks[i][a]])
            kept = counts if picks is None else np.array([len(pos) for pos in picks[i]])
            selected.append((name, np.concatenate(rows), kept))
        return selected

    # ------------------------------------------------------------------- fit
    def _fit_dask(self, X, y, sensitive_features, da):
        """Reject what the moment pass cannot fix before it runs, then fit."""
        if sensitive_features is not None:
            if self.max_samples is None:
                raise ValueError(
                    "max_samples=None asks for MMD² on every row, which would load all of the "
                    "Dask input into memory; set max_samples (rows kept for MMD², default "
                    "20000), or compute X into memory first (X.compute())."
                )
            self._require_target(y)
        return super()._fit_dask(X, y, sensitive_features, da)

    #: Sparse X (only the rows the MMD² terms sample are densified, see _fit_components)
    #: and Dask input (the moments, and a bounded sample of rows: _fit_components_dask).
    _supports_sparse = _supports_dask = True

    def _fit_components(self, X, codes, moments, y, d):
        if issparse(X):  # uncentred; at most max_samples + 2000 rows are densified
            if self.max_samples is None:
                raise ValueError(
                    "max_samples=None asks for MMD² on every row, which would densify all of "
                    "the sparse X; set max_samples (rows kept for MMD², default 20000)."
                )
            X, mean = X.tocsr(), moments.pooled_mean
            return self._fit_rows(
                lambda rows: [X[r].toarray() - mean for r in rows], None, codes, moments, y, d
            )
        return self._fit_rows(lambda rows: [X[r] for r in rows], X, codes, moments, y, d)

    def _fit_components_dask(self, X, labels, y, moments, d):
        """Gather the rows the fit reads (at most ``max_samples`` + 2000) from Dask input.

        The labels (and ``y`` for ``"EOP"``/``"EOD"``) are brought into memory,
        n entries each; the rows are then read in one computation.
        """
        import dask

        if self.fairness == "DP":
            y = None
        label_blocks, y = dask.compute(list(labels.to_delayed().ravel()), y)
        n_samples = moments.n_samples
        _, codes = check_sensitive_features(np.concatenate(label_blocks), n_samples)
        if y is not None:
            y = _check_target(y, n_samples)
        bounds = np.concatenate([[0], np.cumsum([len(block) for block in label_blocks])])

        def read(rows):
            # One computation for every requested set: each row is read once.
            needed = np.unique(np.concatenate(rows))
            block = _gather_rows(X, bounds, needed)
            block -= moments.pooled_mean
            return [block[np.searchsorted(needed, r)] for r in rows]

        return self._fit_rows(read, None, codes, moments, y, d)

    def _fit_rows(self, read, X, codes, moments, y, d):
        """Select the rows, read them with ``read`` and solve.

        ``read`` maps a list of index arrays to the centred rows at those
        indices; ``X`` is every centred row, or None on Dask input (then there
        is no reduction to the row space when p > n, an exact shortcut only).
        ``d`` is the target dimension.
        """
        tau = self._check_params()
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=5)
        selected = self._select_rows(codes, moments.groups, y, np.random.RandomState(seeds[1]))
        check_exact_cost(self.mmd, [c.sum() for _, _, c in selected], self.max_samples)
        sigma = moments.covariance()
        wanted = [rows for _, rows, _ in selected]
        median = isinstance(self.bandwidth, str)  # "median", checked by _check_params
        if median:
            # The rows mmd_bandwidth would pick with the same seed.
            wanted.append(_bandwidth_rows(moments.n_samples, _BANDWIDTH_ROWS, seeds[0]))
        taken = read(wanted)
        strata = [
            _Stratum(rows, counts, moments.groups, name, self.constraint, self.min_group_size)
            for (name, _, counts), rows in zip(selected, taken[: len(selected)], strict=True)
        ]
        bandwidth_rows = taken[-1] if median else None
        self._warn_small_groups(strata, tau)
        # Every product here is small or skinny (p x p eigenproblems, n x d projections,
        # tiles x k(1 + d)): BLAS threads only add synchronisation cost to them.
        with one_blas_thread():
            V, outcome, active_floor, relaxed = self._solve(
                X, strata, bandwidth_rows, sigma, tau, seeds, d
            )
        active = self.active_constraint_
        excess = self.constraint_values_[active] - self.constraint_allowances_[active]
        self.converged_ = bool(outcome in _STOPPED and excess <= tau)
        self._log(
            f"finished after {self.n_iter_} outer iterations ({outcome}): exact MMD² "
            f"{self.constraint_value_:.3g}, active constraint {active} (tau {tau:g}), "
            f"converged={self.converged_}"
        )
        if relaxed:
            warn(
                f"MMDFairPCA: the MMD² of {', '.join(relaxed)} levelled off above tau={tau:g} "
                "but each within tau of its sampling floor (what a random split of the same "
                "rows shows): judged against that floor, as groups under min_group_size are "
                "(constraint_allowances_).",
                UserWarning,
            )
        if not self.converged_:
            rho = float(self.history_["rho"][-1]) if self.n_iter_ else 0.0
            reason = _nonconvergence_reason(
                outcome, active, excess, active_floor, tau, rho, self.max_iter
            )
            warn(
                f"MMDFairPCA did not converge in {self.n_iter_} outer iterations: {reason}",
                ConvergenceWarning,
            )
        return V.T, None

    def _solve(self, X, strata, bandwidth_rows, sigma, tau, seeds, d):
        """Bandwidth, MMD² evaluator, start and REPMS; return ``(V, outcome, floor, relaxed)``.

        ``strata`` hold the (subsampled) rows of the MMD² terms, ``bandwidth_rows``
        those of the median heuristic (None with a given bandwidth); ``d`` is the
        target dimension; ``floor`` is the sampling floor of the active constraint.
        """
        # Columns in increasing order of eigenvalue, the start REPMS has always used: the
        # subspace found does not depend on the order, but its last digits do. The matrix
        # is brought near unit size by a power of two (exact) first: LAPACK rescales tiny
        # matrices internally, which would make X * 2^-40 start from another rounding.
        V_pca = top_eigh(sigma * 2.0 ** -round(np.log2(np.trace(sigma))), d)[1][:, ::-1]
        if bandwidth_rows is not None:
            try:
                bandwidth = _median_bandwidth(bandwidth_rows @ V_pca)
            except ValueError as exc:
                raise ValueError(
                    "bandwidth='median' gives a zero bandwidth: the median pairwise distance "
                    "of the PCA-projected rows is 0 (most projected rows are equal); pass "
                    "bandwidth=<positive float>."
                ) from exc
        else:
            bandwidth = float(self.bandwidth)
        self.bandwidth_ = bandwidth
        # Rows in units of a power of two near the bandwidth: the kernel's gamma and its
        # square stay in range at any scale of X, and the rescaling is exact.
        unit = 2.0 ** round(np.log2(bandwidth))
        if unit != 1.0:
            bandwidth /= unit
            strata = [replace(st, X=st.X / unit) for st in strata]
            sigma = sigma / unit**2
            X = None if X is None else X / unit

        fit_strata = strata
        method = self.mmd
        if method == "auto":
            method = _cheaper_method(fit_strata, d, self.n_random_features, tau)
        self.mmd_method_ = method
        self.mmd_rows_ = sum(st.X.shape[0] for st in fit_strata)
        self._log(f"MMD² by {method} sums on {self.mmd_rows_} rows; one line per outer iteration")
        frequencies = None
        if method == "rff":
            frequencies = _qmc_frequencies(d, self.n_random_features, bandwidth, seeds[2])
        basis = None if X is None else _reduction_basis(X, d)
        if basis is not None:  # p > n: solve in the row space of X plus d slack directions
            X, sigma = X @ basis, basis.T @ sigma @ basis
            fit_strata = [replace(st, X=st.X @ basis) for st in fit_strata]
            V_pca = top_eigh(sigma, d)[1][:, ::-1]
        penalty = _Penalty(fit_strata, bandwidth, method, frequencies)
        objective = _CachedObjective(X, sigma, penalty)

        variance_pca, pen_pca, h_pca, _, _ = objective.terms(V_pca)
        if h_pca <= tau:
            V, self.n_iter_, outcome = V_pca, 0, "met"
            self.history_ = _history([])
            self._log(f"PCA is already fair (MMD² {h_pca:.3g} <= tau {tau:g}).")
        else:
            # With d at least the rank of the data the top d loadings keep all the
            # variance and span every row. Any other V is reached by turning them
            # towards directions without variance, which moves the projected rows only
            # at second order: PCA is then a stationary point no descent leaves.
            spans_the_data = variance_pca >= 1.0 - 1e-10
            start_from_pca = self.init == "pca" and not spans_the_data
            if self.init == "pca" and not start_from_pca:
                self._log("The top d loadings span the data: starting as init='random'.")
            V0 = V_pca if start_from_pca else self._random_start(objective, seeds[3], d)
            V, outcome, self.n_iter_, records = _repms(
                objective, V0, 1.0 / pen_pca, tau, self.max_iter, self._log
            )
            self.history_ = _history(records)
        if method == "exact":
            labels, values, allowances, floors = penalty.report(V)
        else:
            rows = _subsample(fit_strata, CERTIFY_MAX_ROWS, np.random.RandomState(seeds[4]))
            labels, values, allowances, floors = _Penalty(rows, bandwidth, "exact").report(V)
        relaxed = []
        if outcome == "levelled":
            allowances, newly = _levelled_allowances(values, allowances, floors, tau)
            relaxed = [label for label, new in zip(labels, newly, strict=True) if new]
        self.constraint_values_ = dict(zip(labels, values.tolist(), strict=True))
        self.constraint_allowances_ = dict(zip(labels, allowances.tolist(), strict=True))
        active = int(np.argmax(values - allowances))
        self.active_constraint_ = labels[active]

        self.constraint_value_ = float(values.max())
        if basis is not None:
            V = basis @ V
        return V, outcome, float(floors[active]), relaxed

    def _warn_small_groups(self, strata, tau):
        """Name the groups under ``min_group_size`` and how their constraints are judged."""
        small = []
        for stratum in strata:
            where = f" among {stratum.name}" if stratum.name != "all rows" else ""
            small += [
                f"{_plain(g)!r} ({c} rows{where})"
                for g, c in zip(stratum.groups, stratum.counts, strict=True)
                if c < self.min_group_size
            ]
        if small:
            warn(
                f"MMDFairPCA: {', '.join(small)} below min_group_size={self.min_group_size}. "
                "Even a random split of so few rows has an MMD² of about (1 - kbar) / rows "
                "(kbar the mean kernel value between rows), often far above tau="
                f"{tau:g}: only their MMD² above that sampling floor is penalised, and their "
                "constraints hold when it is within tau of the floor (constraint_allowances_ "
                "reports it). Set min_group_size=0 to hold them to tau itself.",
                UserWarning,
            )

    def _log(self, message):
        # INFO always: progress inside long fits reaches whoever listens on the "fairpca"
        # logger (fairpca compare); verbose=True prints it (FairPCABase.verbose_output).
        logger.info(message)

    def _random_start(self, objective, seed, d):
        """The authors' start: best of 11 random points by variance, then MMD² minimised."""
        rng = np.random.RandomState(seed)
        p = objective.n_features
        candidates = [random_point(p, d, rng) for _ in range(_N_RANDOM_STARTS)]
        V = max(candidates, key=lambda W: float(np.sum(W * objective.sigma_times(W))))

        def penalty_only(W):
            _, pen, _, grad, _ = objective.terms(W)
            return pen, grad

        return minimize_lbfgs(penalty_only, V, gtol=_EPS_MIN, max_iter=_INNER_MAX_ITER).point


# --------------------------------------------------------------------------
# Helpers of the estimator
# --------------------------------------------------------------------------


def _history(records):
    keys = (
        "rho",
        "tolerance",
        "mmd2",
        "explained_variance_ratio",
        "step",
        "inner_iterations",
        "grad_norm",
    )
    columns = list(zip(*records, strict=True)) if records else [()] * len(keys)
    return {
        key: np.asarray(col, dtype=int if key == "inner_iterations" else float)
        for key, col in zip(keys, columns, strict=True)
    }


#: Outcomes of :func:`_repms` in which its stopping rule was met.
_STOPPED = ("met", "levelled", "stuck")


def _levelled_allowances(values, allowances, floors, tau):
    """Allowances once REPMS has levelled off: ``(allowances, newly relaxed mask)``.

    A constraint still above ``tau`` whose MMD² ``h`` is within ``tau`` of its
    sampling floor ``F`` (``h - F <= tau``, ``F`` what a random split of the
    same rows shows on average) gets the allowance ``F``: the projected groups
    differ no more than random groups of their sizes would, and REPMS has
    stopped at a stationary point of the violation, so no nearby projection
    is fairer. The rule of the constraints under ``min_group_size``, applied
    where the data, not the group size alone, put ``tau`` below the floor.
    """
    newly = (values - allowances > tau) & (values - floors <= tau)
    return np.where(newly, floors, allowances), newly


def _nonconvergence_reason(outcome, active, excess, floor, tau, rho, max_iter):
    """Why the fit did not converge (``outcome`` of :func:`_repms`) and what to change."""
    if excess <= tau:
        return (
            f"the REPMS stopping rule (||V_k+1 - V_k|| <= {_STEP_MIN:g}) was not met in "
            f"max_iter={max_iter}. Increase max_iter."
        )
    above = f"the MMD² of {active} exceeds tau={tau:g} by {excess - tau:.3g}"
    if floor > tau:
        above += f" (a random split of the same rows shows about {floor:.3g})"
    if outcome == "levelled":
        return (
            f"{above} and stopped falling as rho grew to {rho:.3g} (a local minimum of the "
            "constraint violation). Increase tau."
        )
    if outcome == "capped":
        return f"{above} with rho at its cap {_RHO_MAX:g}. Increase tau."
    if outcome == "stalled":
        return (
            f"{above}, and the last {_STALLED_ITERATIONS} outer iterations could not move while "
            "the penalty grew. This tau may be out of reach for these groups: increase it."
        )
    return f"{above} after max_iter={max_iter}. Increase max_iter or tau."


def _cheaper_method(strata, d, n_frequencies, tau):
    """``"exact"`` or ``"rff"`` for ``mmd="auto"``, by predicted cost and ``tau``.

    Exact below ``_RFF_MIN_TAU``, where random features cannot certify. Else,
    per evaluation, exact kernel sums cost about ``m² / 2`` kernel values and
    tile products with ``k (1 + d)`` columns, random features ``m D`` sines
    and cosines, and random-feature fits take about
    ``_RFF_EVALUATIONS_FACTOR`` times as many evaluations; exact unless random
    features are predicted ``_EXACT_PREFERENCE`` times faster. Summed over the
    strata (``m`` rows, ``k`` groups each).
    """
    if tau < _RFF_MIN_TAU:
        return "exact"
    exact = rff = 0.0
    for stratum in strata:
        m, k = stratum.X.shape[0], len(stratum.counts)
        exact += m * m * (_EXACT_NS_PER_PAIR + _EXACT_NS_PER_PAIR_COLUMN * k * (1 + d))
        rff += _RFF_EVALUATIONS_FACTOR * _RFF_NS_PER_ROW_FREQUENCY * m * n_frequencies
    return "exact" if exact <= _EXACT_PREFERENCE * rff else "rff"
