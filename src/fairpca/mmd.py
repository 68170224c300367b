"""MMD-constrained fair PCA on the Stiefel manifold (MbF-PCA).

Lee, Kim, Olfat, Hasegawa-Johnson and Yoo ask for the loading matrix that keeps
the most variance among those whose projected groups are (almost)
indistinguishable in maximum mean discrepancy, and solve the constrained
problem with the Riemannian exact penalty method REPMS (Liu & Boumal, 2019):
a sequence of smooth penalised problems on the Stiefel manifold, each solved
by a Riemannian quasi-Newton method warm-started at the previous solution.

This module holds the objective (variance plus the weighted sum of pairwise
MMD², :class:`_Penalty` and :class:`_CachedObjective`) and the algorithm:
Algorithm 1 of Lee et al. is :func:`_repms`, first in the "Algorithm 1"
section below, with its sub-solver :func:`_solve_subproblem`; the estimator
:class:`MMDFairPCA` prepares the data and calls it. The MMD² maths (exact
tiled kernel sums, random features, gradient, Hessian) are in
:mod:`fairpca._kernels`, the Riemannian solvers in :mod:`fairpca.riemannian`.

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
from collections import OrderedDict
from dataclasses import replace
from functools import cached_property
from typing import Literal

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from fairpca._base import FairPCABase, _check_target
from fairpca._dask import _gather_rows
from fairpca._kernels import (
    _bandwidth_rows,
    _exact_hess_vec,
    _exact_hessian,
    _exact_terms,
    _median_bandwidth,
    _products_per_dense_hessian,
    _qmc_frequencies,
    _rff_terms,
    _Stratum,
    _subsample,
    _subsample_positions,
    _weighted_kernel,
)
from fairpca._linalg import top_eigh
from fairpca._validation import _plain, check_number, check_sensitive_features
from fairpca._warnings import warn
from fairpca.riemannian import minimize_lbfgs, minimize_trust_region, random_point
from fairpca.riemannian.geometry import _reduction_basis
from fairpca.riemannian.trust_region import apply_preconditioner, hessian_preconditioner

__all__ = ["MMDFairPCA"]

logger = logging.getLogger(__name__)

# REPMS settings of Lee et al. (section 8 and their scripts).
_EPS_START = 1e-1  # sub-problem gradient tolerance of the first outer iteration
_EPS_MIN = 1e-6  # final sub-problem gradient tolerance
#: Final tolerance with random features: their single-precision rounding makes the cost
#: noisy at ~1e-8, below which Armijo line searches fail after 40 halvings each.
_EPS_MIN_RFF = 1e-5
_EPS_DECAY = 0.1  # (eps_min / eps_start) ** (1 / 5)
_RHO_GROWTH = 2.0
_RHO_MAX = 1e10
_STEP_MIN = 1e-6  # d_min: smallest ||V_{k+1} - V_k||_F that counts as movement
_INNER_MAX_ITER = 300  # iterations of each sub-solve (the authors' RBFGS limit)
#: Truncated-CG stopping exponent of the trust-region sub-solver: with 1 the Newton
#: systems of a tight tau take up to the dimension in CG products each; 0.5 needs far
#: fewer for the same result.
_CG_THETA = 0.5
#: Exact Hessian products keep the weighted kernel matrix of the current point when the
#: constrained rows number at most this (8 m² bytes: 128 MiB at 4096); beyond, and with
#: random features, they are central differences of the gradient.
_HESS_CACHE_ROWS = 4096
#: The trust-region preconditioner is rebuilt once the Hessian products spent since the
#: last build cost this fraction of a new one (see _CachedObjective.preconditioner).
_REBUILD_FRACTION = 0.5
_FD_STEP = 2.0**-17  # central differences: truncation and rounding both ~1e-10 relative
_N_RANDOM_STARTS = 11  # random orthonormal matrices tried by init="random"

#: mmd="auto" uses exact kernel sums when the constrained rows number at most this.
AUTO_EXACT_MAX_ROWS = 5000
#: With random features, constraint_value_ is the exact MMD² on at most this many rows.
CERTIFY_MAX_ROWS = 20000
#: Rows of the median heuristic (the default of ``fairpca.metrics.mmd_bandwidth``).
_BANDWIDTH_ROWS = 2000


# --------------------------------------------------------------------------
# Algorithm 1 of Lee et al.: REPMS
# --------------------------------------------------------------------------


def _repms(objective, V, rho, tau, max_iter, log):
    """Outer loop of Algorithm 1 (REPMS, [Liu2019]_ as in [Lee2022]_).

    From ``V`` and the penalty weight ``rho``, solve ``min f + rho * penalty``
    to gradient norm ``eps`` (:func:`_solve_subproblem`), then shrink ``eps``
    by ``_EPS_DECAY`` (down to ``_EPS_MIN``, ``_EPS_MIN_RFF`` with random
    features) and, while the largest pairwise MMD² ``h`` exceeds ``tau``,
    multiply ``rho`` by ``_RHO_GROWTH`` (up to ``_RHO_MAX``). Stop when the
    step ``||V_{k+1} - V_k||_F`` is at most ``_STEP_MIN`` at the final
    tolerance with ``h <= tau``, when the sub-solver cannot move while ``rho``
    stays the same, or after ``max_iter`` outer iterations. ``log`` receives
    one message per outer iteration.

    Returns ``(V, stopped, n_iter, records)``: the last iterate, whether the
    stopping rule was met, the outer iterations run and, for each, ``(rho,
    eps, h, variance, step, inner steps, gradient norm)`` (see :func:`_history`).
    """
    eps = _EPS_START
    eps_min = _EPS_MIN_RFF if objective.penalty.method == "rff" else _EPS_MIN
    records = []
    stopped = False
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
        if step <= _STEP_MIN and eps <= eps_min and h <= tau:
            stopped = True
            break
        stuck = result.message == "trust region collapsed" or eps <= eps_min
        if step == 0.0 and stuck and (h <= tau or rho >= _RHO_MAX):
            # The sub-solver could not move (rounding-level line search failure) and
            # rho stays: every later iteration would repeat this one exactly.
            stopped = h <= tau
            log(f"no further progress possible (MMD² {h:.3g}, tau {tau:g})")
            break
        eps = max(eps_min, _EPS_DECAY * eps)
        if h > tau:
            rho = min(_RHO_GROWTH * rho, _RHO_MAX)
    return V, stopped, it, records


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
        result = minimize_lbfgs(objective, V, gtol=eps, max_iter=_INNER_MAX_ITER)
        if result.converged or objective.penalty.method == "rff":
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
# The objective: explained variance and the MMD² penalty
# --------------------------------------------------------------------------


class _Penalty:
    """Sum over strata and pairs of groups of MMD², with its gradient.

    Parameters
    ----------
    strata : list of _Stratum
    bandwidth : float
    method : {"exact", "rff"}
    frequencies : ndarray of shape (d, D) or None
        Random frequencies (``method="rff"``).
    """

    def __init__(self, strata, bandwidth, method, frequencies=None):
        self.strata = strata
        self.gamma = 0.5 / bandwidth**2
        self.method = method
        self.frequencies = frequencies
        # (key of V, [_WeightedKernel per stratum], dense Hessian or None, products before it pays)
        self._kernels = (None, None, None, 0)

    @property
    def exact_hessian(self):
        """Whether Hessian products are exact (cached kernels) rather than differences."""
        return self.method == "exact" and all(
            st.X.shape[0] <= _HESS_CACHE_ROWS for st in self.strata
        )

    def dense_budget(self, shape, factorised=False):
        """Products that cost as much as forming the dense Hessian (and factorising it)."""
        return max(
            _products_per_dense_hessian(st.X.shape[0], *shape, factorised) for st in self.strata
        )

    def _at(self, V):
        """The cached ``(key, kernels, dense Hessian or None, products left)`` at ``V``."""
        key = V.tobytes()
        if self._kernels[0] != key:
            kernels = [_weighted_kernel(V, st, self.gamma) for st in self.strata]
            # A trust-region step takes from a few to over a hundred products at one
            # point (many at the rho of a tight tau). Forming the matrix
            # once the products spent there cost as much (rent, then buy) is never
            # more than twice the better of the two choices made in hindsight.
            self._kernels = (key, kernels, None, self.dense_budget(V.shape))
        return self._kernels

    def dense_hessian(self, V):
        """The exact Euclidean Hessian of the penalty at ``V``, shape (p d, p d) (cached)."""
        key, kernels, dense, _ = self._at(V)
        if dense is None:
            dense = sum(
                _exact_hessian(kernel, st, self.gamma)
                for st, kernel in zip(self.strata, kernels, strict=True)
            )
            self._kernels = (key, kernels, dense, 0)
        return dense

    def formed_dense(self, shape):
        """``(key, V, dense Hessian)`` of the cached point if its matrix was formed, else None."""
        key, _, dense, _ = self._kernels
        if dense is None:
            return None
        return key, np.frombuffer(key).reshape(shape), dense

    def hess_vec(self, V, Xi):
        """Euclidean Hessian of the penalty at ``V`` applied to ``Xi``, shape (p, d).

        Exact (cached weighted kernel matrices, reused by every product at the
        same ``V``, and the whole ``(p d, p d)`` matrix when that is cheaper
        than a few dozen products) when each stratum has at most
        ``_HESS_CACHE_ROWS`` rows and ``method="exact"``; otherwise a central
        difference of the gradient.
        """
        if self.exact_hessian:
            key, kernels, dense, products_left = self._at(V)
            if dense is not None:
                return (dense @ Xi.ravel()).reshape(V.shape)
            out = np.zeros_like(V)
            for st, kernel in zip(self.strata, kernels, strict=True):
                out += _exact_hess_vec(kernel, st, self.gamma, Xi)
            products_left -= 1
            self._kernels = (key, kernels, None, products_left)
            if products_left <= 0:
                self.dense_hessian(V)
            return out
        norm = np.linalg.norm(Xi)
        if norm == 0.0:
            return np.zeros_like(V)
        t = _FD_STEP / norm
        return (self(V + t * Xi)[2] - self(V - t * Xi)[2]) / (2.0 * t)

    def __call__(self, V, with_grad=True):
        """Return ``(penalty, largest pairwise MMD², gradient or None)``."""
        penalty, largest = 0.0, 0.0
        grad = np.zeros_like(V) if with_grad else None
        for stratum in self.strata:
            if self.method == "exact":
                pen, pairs, g = _exact_terms(V, stratum, self.gamma, with_grad)
            else:
                pen, pairs, _, g = _rff_terms(V, stratum, self.frequencies, with_grad)
            penalty += pen
            largest = max(largest, float(pairs.max()))
            if with_grad:
                grad += g
        return penalty, largest, grad


class _CachedObjective:
    """``Q(V) = f(V) + rho * penalty(V)`` for the sub-solvers.

    ``f(V) = -tr(V^T Sigma V) / tr(Sigma)`` with ``Sigma = X^T X / n``; when
    ``n < p``, ``Sigma V = X^T (X V) / n`` is cheaper than the ``p x p`` product
    (``X`` may be None: then ``Sigma`` is used).
    The last few evaluations are kept so that the penalty at an accepted
    iterate is never recomputed.
    """

    def __init__(self, X, sigma, penalty):
        total = np.trace(sigma)
        if X is not None and X.shape[0] < X.shape[1]:
            self._factor = X / np.sqrt(X.shape[0] * total)
            self._sigma = None
        else:
            self._factor = None
            self._sigma = sigma / total
        self.penalty = penalty
        self.n_features = sigma.shape[0]
        self.rho = 1.0
        self._memo = OrderedDict()
        self.n_evals = 0
        # (key of the point, M^{-1} or None) of the last preconditioner built.
        self._preconditioner = (None, None)
        self._products_since_build = 0
        self._shift = 0  # index in riemannian.trust_region._SHIFTS of the last shift

    def terms(self, V):
        """Return ``(variance ratio, penalty, largest pairwise MMD², penalty gradient)``."""
        key = V.tobytes()
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        self.n_evals += 1
        SV = self.sigma_times(V)
        variance = float(np.sum(V * SV))
        pen, largest, pen_grad = self.penalty(V)
        value = (variance, pen, largest, pen_grad, SV)
        self._memo[key] = value
        if len(self._memo) > 8:
            self._memo.popitem(last=False)
        return value

    @cached_property
    def sigma_matrix(self):
        """``Sigma / tr(Sigma)``, shape (p, p)."""
        return self._sigma if self._sigma is not None else self._factor.T @ self._factor

    def sigma_times(self, V):
        """``Sigma V / tr(Sigma)``."""
        if self._sigma is not None:
            return self._sigma @ V
        return self._factor.T @ (self._factor @ V)

    def __call__(self, V):
        variance, pen, _, pen_grad, SV = self.terms(V)
        if self.penalty.method == "rff":
            # MMD² depends on V only through the subspace (V -> VQ leaves it unchanged), but
            # its random-feature estimate at fixed frequencies does not: its gradient has a
            # vertical part V skew(V^T G), a rotation within the subspace, of the size of the
            # approximation error, which L-BFGS would chase without moving the subspace.
            # Dropping it keeps the gradient exact along every horizontal direction.
            VtG = V.T @ pen_grad
            pen_grad = pen_grad - V @ (0.5 * (VtG - VtG.T))
        return -variance + self.rho * pen, -2.0 * SV + self.rho * pen_grad

    def hess_vec(self, V, Xi):
        """Euclidean Hessian of ``Q`` at ``V`` applied to ``Xi``."""
        self._products_since_build += 1
        return -2.0 * self.sigma_times(Xi) + self.rho * self.penalty.hess_vec(V, Xi)

    def preconditioner(self, V, egrad):
        """``M^{-1}`` for the trust-region CG at ``V``, or None (see ``minimize_trust_region``).

        ``M`` is the Riemannian Hessian of ``Q`` (shifted to be positive definite)
        at a recent point; ``M^{-1} r`` is projected onto the tangent space at
        ``V``, which keeps the operator symmetric positive definite there. It is
        rebuilt where the penalty's dense Hessian has just been formed (a CG solve
        needed many products at one point), or once the products spent since it
        was built cost ``_REBUILD_FRACTION`` of a new one (dense Hessian,
        Cholesky factor and inverse: rent or buy again, across points; less than
        the whole, because a fresh preconditioner also shortens the solves to
        come). None with random features (no exact Hessian) or before the first build.
        """
        penalty = self.penalty
        if not penalty.exact_hessian:
            return None
        formed = penalty.formed_dense(V.shape)
        if formed is not None and formed[0] != self._preconditioner[0]:
            _, point, dense = formed
            self._build_preconditioner(point, self(point)[1], dense)
        elif self._products_since_build >= _REBUILD_FRACTION * penalty.dense_budget(V.shape, True):
            self._build_preconditioner(V, egrad, penalty.dense_hessian(V))
        if self._preconditioner[1] is None:
            return None
        return apply_preconditioner(self._preconditioner[1], V)

    def euclidean_hessian(self, penalty_hessian):
        """The Euclidean Hessian of ``Q`` as a ``(p d, p d)`` matrix, from the penalty's.

        ``rho`` times the penalty's minus ``2 I (x) Sigma / tr(Sigma)`` (row-major
        ``vec`` of ``p x d`` matrices); a new array.
        """
        A = self.rho * penalty_hessian
        p = self.n_features
        d = A.shape[0] // p
        blocks = A.reshape(p, d, p, d)
        for b in range(d):
            blocks[:, b, :, b] -= 2.0 * self.sigma_matrix
        return A

    def _build_preconditioner(self, V, egrad, penalty_hessian):
        # Start one shift below the last one that worked: nearby points need similar
        # shifts, and each failed Cholesky attempt costs up to a whole factorisation.
        inverse, self._shift = hessian_preconditioner(
            V, egrad, self.euclidean_hessian(penalty_hessian), max(self._shift - 1, 0)
        )
        self._preconditioner = (V.tobytes(), inverse)
        self._products_since_build = 0


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------


class MMDFairPCA(FairPCABase):
    r"""Fair PCA whose projected groups are close in maximum mean discrepancy (MbF-PCA).

    Solves, over loading matrices ``V`` with orthonormal columns (the Stiefel
    manifold ``St(p, d)``),

    .. math::

        \min_{V \in St(p, d)} \; -\frac{\mathrm{tr}(V^T \Sigma V)}{\mathrm{tr}\,\Sigma}
        \quad \text{subject to} \quad
        h(V) = \max_{a < b} \widehat{\mathrm{MMD}}^2(V^T x \mid a,\; V^T x \mid b) \le \tau,

    with ``Sigma`` the training covariance and ``MMD²`` the biased V-statistic
    with RBF kernel ``exp(-||u - v||² / (2 sigma²))`` between the projected rows
    of groups ``a`` and ``b`` ([Lee2022]_). For ``k > 2`` groups every pair
    ``a < b`` is a constraint; the exact penalty of that set of constraints is
    the *sum* of the pairwise MMD² values (each is non-negative, so
    ``max(0, h_ab) = h_ab``), which is smooth, so the sub-solvers see a
    smooth function. Feasibility (``h <= tau``) is judged on the largest pairwise
    value, which is what ``constraint_value_`` and :func:`fairpca.metrics.mmd2`
    report. With two groups sum and maximum coincide.

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
    ``||V_{k+1} - V_k||_F <= 1e-6``, ``eps_k = 1e-6`` and ``h <= tau``, or
    after ``max_iter`` outer iterations (:func:`_repms`). The authors used a
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
        Fairness tolerance on the largest pairwise MMD² (>= 0). The paper uses
        1e-3 (relaxed) and 1e-6 (strict). The biased estimate is positive for
        any finite sample, so ``tau=0`` is never reached.
    fairness : {"DP", "EOP", "EOD"}, default="DP"
        Which conditional distributions must match. ``"DP"`` (demographic
        parity): the projected groups over all rows. ``"EOP"`` (equal
        opportunity): the rows with positive ``y`` only. ``"EOD"`` (equalised
        odds): separately the rows with positive and with negative ``y`` (one
        family of constraints each). ``y`` must then be passed to ``fit`` and be
        binary; its larger label (after sorting) is the positive class.
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
        m = 20000 needs about 0.1 GiB). ``"rff"``: random Fourier features
        ``[cos(w^T z), sin(w^T z)]`` at ``D = n_random_features`` frequencies
        ``w`` (a scrambled Sobol' sequence mapped to ``N(0, I / sigma²)``,
        [Avron2016]_), ``O(m D d)`` time per evaluation, trigonometric
        functions in single precision. Their MMD² estimate is least accurate
        (relatively) near a fair projection: it cannot certify ``tau`` by itself,
        so ``constraint_value_`` is always recomputed exactly. ``"auto"``:
        ``"exact"`` when at most 5000 rows are constrained
        (``AUTO_EXACT_MAX_ROWS``), ``"rff"`` otherwise.
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
        (``benchmarks/reproduce_mmd.py``).
    max_iter : int, default=100
        Maximum number of outer (penalty) iterations.
    random_state : int, RandomState instance or None, default=None
        Seeds the bandwidth subsample, the random frequencies, the subsample
        used for ``constraint_value_`` and the random initialisation. Same
        seed and data give identical results.
    verbose : bool, default=False
        Log every outer iteration (``rho``, MMD², explained variance,
        ``||V_{k+1} - V_k||_F``) at INFO level on the ``fairpca.mmd`` logger
        (configure :mod:`logging` to see them).

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
    constraint_value_ : float
        Largest pairwise exact MMD² of the training groups under
        ``components_`` (over both classes of ``y`` for ``"EOD"``), equal to
        ``fairpca.metrics.mmd2(X, s, self, bandwidth=self.bandwidth_)`` for
        ``"DP"`` (on ``X[y == positive]`` for ``"EOP"``). Computed on the rows
        the fit used: all of them unless there are more than ``max_samples``
        (then on that subsample, whose bias is described there); with
        ``mmd="rff"`` on at most 20000 of them (``CERTIFY_MAX_ROWS``).
    converged_ : bool
        True when the REPMS stopping rule was met and ``constraint_value_ <= tau``.
    n_iter_ : int
        Outer iterations run (0 when PCA was already fair).
    history_ : dict of ndarray
        One entry per outer iteration: ``"rho"`` (penalty weight used),
        ``"tolerance"`` (``eps_k``), ``"mmd2"`` (largest pairwise MMD² as
        optimised: exact or random-feature), ``"explained_variance_ratio"``,
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

    def __init__(
        self,
        n_components: int | float = 2,
        *,
        tau: float = 1e-3,
        fairness: Literal["DP", "EOP", "EOD"] = "DP",
        bandwidth: Literal["median"] | float = "median",
        mmd: Literal["auto", "exact", "rff"] = "auto",
        n_random_features: int = 1024,
        max_samples: int | None = 20000,
        init: Literal["pca", "random"] = "pca",
        max_iter: int = 100,
        random_state: int | np.random.RandomState | None = None,
        verbose: bool = False,
    ) -> None:
        self.n_components = n_components
        self.tau = tau
        self.fairness = fairness
        self.bandwidth = bandwidth
        self.mmd = mmd
        self.n_random_features = n_random_features
        self.max_samples = max_samples
        self.init = init
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ validation
    def _check_params(self):
        tau = check_number(self.tau, "tau", numbers.Real, minimum=0)
        for name, options in (
            ("fairness", ("DP", "EOP", "EOD")),
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
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(
                f"fairness={self.fairness!r} needs a binary y (exactly two classes); "
                f"found {classes.size}: {classes[:10].tolist()}."
            )
        positive, negative = classes[1], classes[0]
        masks = [(f"y={_plain(positive)!r}", y == positive)]
        if self.fairness == "EOD":
            masks.append((f"y={_plain(negative)!r}", y == negative))
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
    def _fit_dask(self, X, y, sensitive_features):
        """Reject what the moment pass cannot fix before it runs, then fit."""
        if sensitive_features is not None:
            if self.max_samples is None:
                raise ValueError(
                    "max_samples=None asks for MMD² on every row, which would load all of the "
                    "Dask input into memory; set max_samples (rows kept for MMD², default "
                    "20000), or compute X into memory first (X.compute())."
                )
            self._require_target(y)
        return super()._fit_dask(X, y, sensitive_features)

    def _fit_components(self, X, codes, moments, y, d):
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
        sigma = moments.covariance()
        wanted = [rows for _, rows, _ in selected]
        median = isinstance(self.bandwidth, str)  # "median", checked by _check_params
        if median:
            # The rows mmd_bandwidth would pick with the same seed.
            wanted.append(_bandwidth_rows(moments.n_samples, _BANDWIDTH_ROWS, seeds[0]))
        taken = read(wanted)
        strata = [
            _Stratum(rows, counts, moments.groups, name)
            for (name, _, counts), rows in zip(selected, taken[: len(selected)], strict=True)
        ]
        bandwidth_rows = taken[-1] if median else None
        # Every product here is small or skinny (p x p eigenproblems, n x d projections,
        # tiles x k(1 + d)): BLAS threads only add synchronisation cost to them.
        with threadpool_limits(limits=1, user_api="blas"):
            V, stopped = self._solve(X, strata, bandwidth_rows, sigma, tau, seeds, d)
        self.converged_ = bool(stopped and self.constraint_value_ <= tau)
        self._log(
            f"finished after {self.n_iter_} outer iterations: exact MMD² "
            f"{self.constraint_value_:.3g} (tau {tau:g}), converged={self.converged_}"
        )
        if not self.converged_:
            reason = (
                f"the largest pairwise MMD² is {self.constraint_value_:.3g} > tau={tau:g}"
                if self.constraint_value_ > tau
                else "the REPMS stopping rule (||V_k+1 - V_k|| <= 1e-6) was not met"
            )
            warn(
                f"MMDFairPCA did not converge in {self.n_iter_} outer iterations "
                f"(max_iter={self.max_iter}): {reason}. Increase max_iter or tau.",
                ConvergenceWarning,
            )
        return V.T, None

    def _solve(self, X, strata, bandwidth_rows, sigma, tau, seeds, d):
        """Bandwidth, MMD² evaluator, start and REPMS; return ``(V, stopped)``.

        ``strata`` hold the (subsampled) rows of the MMD² terms, ``bandwidth_rows``
        those of the median heuristic (None with a given bandwidth); ``d`` is the
        target dimension.
        """
        # Columns in increasing order of eigenvalue, the start REPMS has always used: the
        # subspace found does not depend on the order, but its last digits do.
        V_pca = top_eigh(sigma, d)[1][:, ::-1]
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
            n_rows = sum(st.X.shape[0] for st in fit_strata)
            method = "exact" if n_rows <= AUTO_EXACT_MAX_ROWS else "rff"
        self.mmd_method_ = method
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

        _, pen_pca, h_pca, _, _ = objective.terms(V_pca)
        if h_pca <= tau:
            V, self.n_iter_, stopped = V_pca, 0, True
            self.history_ = _history([])
            self._log(f"PCA is already fair (MMD² {h_pca:.3g} <= tau {tau:g}).")
        else:
            V0 = V_pca if self.init == "pca" else self._random_start(objective, seeds[3], d)
            V, stopped, self.n_iter_, records = _repms(
                objective, V0, 1.0 / pen_pca, tau, self.max_iter, self._log
            )
            self.history_ = _history(records)
        if method == "exact":
            self.constraint_value_ = objective.terms(V)[2]
        else:
            rows = _subsample(fit_strata, CERTIFY_MAX_ROWS, np.random.RandomState(seeds[4]))
            self.constraint_value_ = _Penalty(rows, bandwidth, "exact")(V, False)[1]
        if basis is not None:
            V = basis @ V
        return V, stopped

    def _log(self, message):
        (logger.info if self.verbose else logger.debug)(message)

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
