"""Distributionally robust fair PCA (RFPCA) by Riemannian subgradient descent.

Implements the method of

    H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally Robust Fair
    Principal Components via Geodesic Descents." ICLR 2022.

For every group ``a`` (mass ``p_a = n_a / n``, second moment ``M_a`` about the
pooled training mean, radius ``eps_a``) the conditional distribution may move
within a Gelbrich (Wasserstein-type) ball of radius ``eps_a``; the projection
minimises the worst case of the total reconstruction error plus ``lam`` times
the largest gap between group reconstruction errors. Theorem 3.2 and appendix
B of the paper turn this into a finite maximum of functions of the numbers
``m_b = <I - V V^T, M_b>`` (each group's nominal reconstruction error), which is
minimised over the Stiefel manifold by Algorithm 1 (Riemannian subgradient
descent with constant step ``1 / sqrt(T + 1)``) from several starting points.
A run stops before step ``T`` once it can no longer lower the best objective
found (Notes of :class:`RobustFairPCA`), which leaves the returned objective as
the full budget gives it.

The module also provides :func:`robust_objective` (the objective at given
components). Model selection lives elsewhere: the scorer ``-(ARE + ABDiff)``
is :class:`fairpca.metrics.ReconstructionScorer`, and the paper's 3-fold
selection of ``alpha`` and ``lam`` is :func:`fairpca.experiments.robust_fair_pca_cv`.
"""

from __future__ import annotations

import contextlib
import logging
import numbers
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike
from scipy.linalg.blas import dtrsm
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from fairpca._base import FairPCABase
from fairpca._config import document_require_groups
from fairpca._linalg import top_eigh
from fairpca._validation import _plain, check_allocation, check_number
from fairpca._warnings import warn
from fairpca.riemannian.geometry import (
    _CHOLESKY_QR_MAX_STEP2,
    _orthonormal_complement,
    _qr_factor,
    _retract_rows,
    _tangent_rows,
)

__all__ = [
    "RobustFairPCA",
    "robust_objective",
]

logger = logging.getLogger(__name__)

_RETRACTIONS = ("qr", "polar")
_PARAMETRIZATIONS = ("complement", "direct")

#: Relative size below which a group's complement second moment ``m_b`` counts as zero.
_ZERO_MOMENT_RTOL = 1e-12

#: Fewest steps over which a stalled best objective counts as converged.
_MIN_CONVERGENCE_WINDOW = 10

#: Multiply-adds of a matrix product below which OpenBLAS computes it on one thread
#: (its GEMM threshold, 4 x 65536): see _single_blas_thread.
_SINGLE_THREAD_PRODUCT_SIZE = 4 * 65536

#: Stop runs that can no longer lower the returned objective (see _lowest_reachable).
#: Private switch: False runs every start for all n_iter steps (the tests compare both).
_STOP_EARLY = True

#: Steps between two applications of the stopping rule.
_STOP_CHECK_EVERY = 8

#: Longest cycle of objective values the stopping rule recognises (see _lowest_reachable).
_STOP_MAX_PERIOD = 8

#: Steps over which a run's largest change per cycle is measured.
_STOP_WINDOW = 32

#: Factor applied to that change when it is extrapolated to the remaining steps.
_STOP_SAFETY = 2.0

#: Largest relative improvement of the best objective a stop may forgo.
_STOP_RTOL = 1e-10

#: Largest r solved row by row across the batch in the Cholesky QR; above it, start by start.
_ROW_SUBSTITUTION_MAX_RANK = 8


# --------------------------------------------------------------------------
# The objective (pure functions)
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Problem:
    """Data of the robust objective, with ``k`` groups in ``p`` features.

    Parameters
    ----------
    second_moments : ndarray of shape (k, p, p)
        ``M_b``, each group's second moment about the pooled mean.
    proportions : ndarray of shape (k,)
        Group masses ``p_b``.
    radii : ndarray of shape (k,)
        Ball radii ``eps_b``.
    lam : float
        Weight of the error gap.

    Attributes
    ----------
    side_by_side : ndarray of shape (p, k p)
        ``[M_0, M_1, ...]``: one matrix product applies every ``M_b``.
    traces : ndarray of shape (k,)
        ``tr M_b``.
    zero_moment : ndarray of shape (k,)
        Values of ``m_b`` at or below which ``m_b`` counts as zero.
    pair_linear, pair_sqrt : ndarray of shape (k k, k)
        For the ordered pair ``(a, a')`` in row ``a k + a'``: the coefficients
        of ``m_b + eps_b`` and of ``2 s_b`` in its function (see
        :func:`_objective_from_moments`).
    pair_matrix : ndarray of shape (2 k, k k)
        ``[pair_linear, 2 pair_sqrt]^T``: one product gives every pair's value.
    pair_mask : ndarray of shape (k k,)
        ``-inf`` for the pairs ``a = a'`` (excluded from the maximum), else 0.
    """

    second_moments: np.ndarray
    proportions: np.ndarray
    radii: np.ndarray
    lam: float

    def __post_init__(self):
        k, p, _ = self.second_moments.shape
        traces = np.trace(self.second_moments, axis1=1, axis2=2)
        prop, lam = self.proportions, self.lam
        # Ordered pair (a, a') in row a k + a', as np.divmod(row, k) recovers it.
        one_a, one_a2 = np.repeat(np.eye(k), k, axis=0), np.tile(np.eye(k), (k, 1))
        pair_linear = prop + lam * (one_a - one_a2)
        pair_sqrt = prop + lam * one_a + (np.abs(prop - lam) - prop) * one_a2
        derived = {
            "side_by_side": np.ascontiguousarray(
                self.second_moments.transpose(1, 0, 2).reshape(p, k * p)
            ),
            "traces": traces,
            "zero_moment": _ZERO_MOMENT_RTOL * np.maximum(traces, np.finfo(float).tiny),
            "sqrt_radii": np.sqrt(self.radii),
            "pair_linear": pair_linear,
            "pair_sqrt": pair_sqrt,
            "pair_matrix": np.ascontiguousarray(np.hstack([pair_linear, 2.0 * pair_sqrt]).T),
            "pair_mask": np.where(np.eye(k, dtype=bool), -np.inf, 0.0).reshape(k * k),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def n_groups(self):
        return self.proportions.shape[0]

    @property
    def n_features(self):
        return self.second_moments.shape[1]


def _objective_from_moments(m, problem):
    r"""Robust objective and its derivative in ``m`` (appendix B of Vu et al.).

    With ``s_b = sqrt(eps_b m_b)`` the objective is

    .. math:: F = \max_{a \neq a'} \sum_b p_b (m_b + \varepsilon_b)
              + 2 \sum_b c_{a a' b}\, s_b
              + \lambda (m_a - m_{a'} + \varepsilon_a - \varepsilon_{a'}),

    ``c = p_a + lam`` for ``b = a``, ``|p_a' - lam|`` for ``b = a'``, ``p_b``
    otherwise. Each pair's function is linear in ``(m_b + eps_b, s_b)``: with
    ``e_a`` the ``a``-th unit vector its coefficients are
    ``p + lam (e_a - e_a')`` and ``2 c``, rows of ``problem.pair_linear`` and
    ``problem.pair_sqrt``, so one matrix product evaluates every pair (the
    iterations are dominated by the number of numpy calls, not by arithmetic).
    For two groups it is ``max(J_0, J_1)`` of Theorem 3.2.

    Where ``m_b`` is (numerically) zero, ``sqrt`` is not differentiable; the
    derivative of ``2 c s_b`` is then taken as 0. In the complement
    parametrisation ``s_b`` is ``sqrt(eps_b)`` times the norm
    ``||M_b^{1/2} U||_F``, whose subdifferential at 0 contains 0, so this is a
    valid subgradient there.

    Parameters
    ----------
    m : ndarray of shape (R, k)
        ``m_b`` for ``R`` points.
    problem : _Problem

    Returns
    -------
    values : ndarray of shape (R,)
    weights : ndarray of shape (R, k)
        ``dF / dm_b`` of the active pair (the first maximiser in row-major
        order of ``(a, a')`` when several attain the maximum).
    """
    m = np.maximum(m, 0.0)  # rounding can make tr M - tr(V^T M V) slightly negative
    root_m = np.sqrt(m)
    terms = np.concatenate([m + problem.radii, problem.sqrt_radii * root_m], axis=1)
    pair = terms @ problem.pair_matrix + problem.pair_mask
    active = pair.argmax(axis=1)
    values = pair[np.arange(m.shape[0]), active]
    # d(2 c s_b)/d m_b = c sqrt(eps_b) / sqrt(m_b); zero by convention where m_b is 0.
    ratio = np.divide(
        problem.sqrt_radii, root_m, out=np.zeros_like(m), where=m > problem.zero_moment
    )
    return values, problem.pair_linear[active] + problem.pair_sqrt[active] * ratio


def _moments_and_products(Xt, problem, parametrization):
    """``m_b`` at ``R`` stacked points and the products ``X^T M_b``.

    Parameters
    ----------
    Xt : ndarray of shape (R, r, p)
        Transposes of points with orthonormal columns: ``U^T`` (r = p - d) or
        ``V^T`` (r = d).
    problem : _Problem
    parametrization : {"complement", "direct"}

    Returns
    -------
    m : ndarray of shape (R, k)
    XM : ndarray of shape (R, r, k, p)
        ``XM[i, :, b] = Xt[i] @ M_b``.
    """
    R, r, p = Xt.shape
    # One matrix product for every point and group.
    XM = (Xt.reshape(R * r, p) @ problem.side_by_side).reshape(R, r, problem.n_groups, p)
    quad = np.einsum("ijp,ijbp->ib", Xt, XM)  # tr(X_i^T M_b X_i)
    m = quad if parametrization == "complement" else problem.traces - quad
    return m, XM


def _objective_and_gradient_rows(Xt, problem, parametrization):
    """Objective and transposed Euclidean (sub)gradient at ``R`` stacked points.

    In the complement form ``m_b = tr(U^T M_b U)``, so ``dm_b/dU = 2 M_b U``;
    in the direct form ``m_b = tr M_b - tr(V^T M_b V)``, so ``dm_b/dV = -2 M_b V``.
    The iterations work on transposes ``X^T`` (rows): the products ``X^T M_b``
    then come out of one matrix product, and the gradient is their weighted
    sum without any transposition.

    Parameters
    ----------
    Xt : ndarray of shape (R, r, p)
    problem : _Problem
    parametrization : {"complement", "direct"}

    Returns
    -------
    values : ndarray of shape (R,)
    gradient_t : ndarray of shape (R, r, p)
        Transposed gradients ``G^T``.
    """
    m, XM = _moments_and_products(Xt, problem, parametrization)
    values, weights = _objective_from_moments(m, problem)
    sign = 2.0 if parametrization == "complement" else -2.0
    # (R, 1, 1, k) @ (R, r, k, p): G_i^T = sign * sum_b w_ib X_i^T M_b.
    gradient_t = ((sign * weights)[:, None, None, :] @ XM)[:, :, 0, :]
    return values, gradient_t


# --------------------------------------------------------------------------
# The descent (pure functions)
# --------------------------------------------------------------------------


def _solve_lower(L, B):
    """Solve ``L X = B`` for stacked lower-triangular ``L`` (R, r, r) and ``B`` (R, r, p).

    Forward substitution, ``x_i = (b_i - sum_{j < i} L_ij x_j) / L_ii`` (rows of
    ``X``), vectorised over the batch: for the small ``r`` of the direct
    parametrisation this is a few array operations, where a call per point would
    cost more than the arithmetic. For larger ``r`` (the complement
    parametrisation) each point gets one BLAS triangular solve instead.
    """
    r = L.shape[1]
    if r <= _ROW_SUBSTITUTION_MAX_RANK:
        X = np.empty_like(B)
        for i in range(r):
            rhs = B[:, i] if i == 0 else B[:, i] - (L[:, i, None, :i] @ X[:, :i])[:, 0]
            X[:, i] = rhs / L[:, i, i, None]
        return X
    # L X = B is X^T L^T = B^T: a right-side solve with the upper factor L^T, on the
    # Fortran-ordered views B[k].T and L[k].T (no copies).
    return np.stack(
        [dtrsm(1.0, L[k].T, B[k].T, side=1, lower=0, trans_a=0).T for k in range(L.shape[0])]
    )


def _cholesky_qr_rows(Yt):
    """Transposed Q factors of ``Y`` with positive diagonal of R, from ``Y^T`` (R, r, p).

    ``Y^T Y = R^T R`` with ``R = L^T``, ``L = cholesky(Y^T Y)``, so ``Q^T = L^{-1} Y^T``,
    obtained by a triangular solve (:func:`_solve_lower`) rather than by forming
    ``L^{-1}``. Forming ``Y^T Y`` squares the condition number of ``Y``; after a
    tangent step ``Y = X + xi``, ``Y^T Y = I + xi^T xi``, so
    ``tr(Y^T Y) - r = ||xi||_F^2`` bounds ``cond(Y)^2 - 1``. When it exceeds
    ``_CHOLESKY_QR_MAX_STEP2`` for some point, or the factorisation fails, the
    Householder QR is used instead (as in :mod:`fairpca.riemannian.geometry`).
    """
    r = Yt.shape[1]
    gram = Yt @ Yt.transpose(0, 2, 1)
    if gram.diagonal(axis1=1, axis2=2).sum(axis=1).max() - r <= _CHOLESKY_QR_MAX_STEP2:
        try:
            return _solve_lower(np.linalg.cholesky(gram), Yt)
        except np.linalg.LinAlgError:
            pass
    return _qr_factor(Yt.transpose(0, 2, 1)).transpose(0, 2, 1)


def _retract(Xt, xi_t, retraction):
    """Stacked QR (positive diagonal of R) or polar retraction of ``X + xi``, on transposes."""
    if retraction == "qr":
        return _cholesky_qr_rows(Xt + xi_t)
    return _retract_rows(Xt, xi_t, retraction)


def _lowest_reachable(recent, remaining):
    r"""Lowest objective each run could reach in ``remaining`` more steps at its recent pace.

    A subgradient method with a constant step does not settle like a descent method:
    a run converges to a fixed point, or settles on a short cycle bouncing across a
    kink of the maximum, or keeps zigzagging along it. With ``F_s`` a run's objective
    after ``s`` steps, ``t`` the current step and a period ``P``, let

    .. math:: \delta_P = \max_{t - W < s \le t} |F_s - F_{s-P}|

    be its largest change over ``P`` steps in the last ``W`` (the columns of
    ``recent`` after the first ``P_max``). If it keeps changing by at most
    ``kappa delta_P`` per ``P`` steps, each later value is at least the value
    one period earlier minus ``kappa delta_P``, hence, chaining back to the last
    period,

    .. math:: F_{t+j} \ge \min_{t - P < s \le t} F_s
              - \kappa \, \delta_P \lceil j / P \rceil, \qquad 1 \le j \le
              \text{remaining}.

    The bound at ``j = remaining`` holds for every ``j``; the highest over
    ``P = 1 ... P_max`` is returned (the period the run is actually following
    gives the tightest bound). A run at a fixed point (``P = 1``) or on a cycle
    has ``delta_P`` at rounding level, so its bound is its current low; a run
    still zigzagging has a large ``delta_P`` for every ``P`` and so a bound far
    below any value it could matter for. ``P_max``, ``W`` and ``kappa`` are
    ``_STOP_MAX_PERIOD``, ``_STOP_WINDOW`` and ``_STOP_SAFETY``.

    Parameters
    ----------
    recent : ndarray of shape (R, _STOP_WINDOW + _STOP_MAX_PERIOD)
        The last objective values of ``R`` runs, the current one last.
    remaining : int
        Steps left in the budget.

    Returns
    -------
    floor : ndarray of shape (R,)
    """
    periods = np.arange(1, _STOP_MAX_PERIOD + 1)
    # windows[:, j] = recent[:, j : j + W]; the last one ends at the current step.
    windows = sliding_window_view(recent, _STOP_WINDOW, axis=1)
    # The window P steps earlier is windows[:, P_max - P], i.e. column P - 1 once reversed.
    drift = np.abs(windows[:, -1:] - windows[:, -2::-1]).max(axis=2)
    low = np.minimum.accumulate(recent[:, : -_STOP_MAX_PERIOD - 1 : -1], axis=1)
    cycles = -(-remaining // periods)
    return (low - _STOP_SAFETY * cycles * drift).max(axis=1)


def _reachable_upper_bound(recent, remaining):
    """A cheap upper bound on :func:`_lowest_reachable`, from the last ``P_max + 1`` values.

    ``delta_P`` is at least ``|F_t - F_{t-P}|`` (its last term), so replacing it by
    that difference can only raise each period's bound: a run whose bound is too low
    here needs no closer look (zigzagging runs, the common case, are ruled out so).
    """
    periods = np.arange(1, _STOP_MAX_PERIOD + 1)
    last_change = np.abs(recent[:, -1:] - recent[:, -2 : -_STOP_MAX_PERIOD - 2 : -1])
    low = np.minimum.accumulate(recent[:, : -_STOP_MAX_PERIOD - 1 : -1], axis=1)
    cycles = -(-remaining // periods)
    return (low - _STOP_SAFETY * cycles * last_change).max(axis=1)


def _hopeless(recent, remaining, leader):
    """Runs that can no longer lower the best objective ``leader`` by more than ``_STOP_RTOL``.

    For the run holding ``leader`` this is a stall test (it cannot improve on its
    own best); for the others a pruning test (they cannot overtake it).
    """
    threshold = leader - _STOP_RTOL * abs(leader)
    stop = np.zeros(recent.shape[0], dtype=bool)
    maybe = _reachable_upper_bound(recent, remaining) >= threshold
    if maybe.any():
        stop[maybe] = _lowest_reachable(recent[maybe], remaining) >= threshold
    return stop


def _subgradient_descent(
    starts, problem, parametrization, retraction, n_iter, verbose=False, stop_early=True
):
    """Algorithm 1 of Vu et al. from every start at once, keeping each run's best iterate.

    All runs take the same constant step ``1 / sqrt(T + 1)``. With ``stop_early``,
    every ``_STOP_CHECK_EVERY`` steps the runs that :func:`_hopeless` finds unable
    to lower the best objective of all runs (by more than ``_STOP_RTOL``,
    relative) within the remaining budget are stopped and dropped from the
    batch; the others go on exactly as before.

    Parameters
    ----------
    starts : ndarray of shape (R, p, r)
        Starting points (orthonormal columns).
    problem : _Problem
    parametrization : {"complement", "direct"}
    retraction : {"qr", "polar"}
    n_iter : int
        Number of steps ``T``; the step size is ``1 / sqrt(T + 1)``.
    verbose : bool, default=False
        Log the best objective every tenth of the run, and the runs stopped.
    stop_early : bool, default=True
        Stop runs as above; False runs every start for ``T`` steps.

    Returns
    -------
    best_points : ndarray of shape (R, p, r)
        Best iterate of each run.
    best_values : ndarray of shape (R,)
    history : ndarray of shape (R, n_iter + 1)
        Objective at the start and after every step; NaN after a run's last step.
    n_steps : ndarray of shape (R,)
        Steps taken by each run.
    """
    step = 1.0 / np.sqrt(n_iter + 1.0)
    # Iterate on the transposes (see _objective_and_gradient_rows).
    Xt = np.ascontiguousarray(starts.transpose(0, 2, 1))
    n_runs = Xt.shape[0]
    history = np.full((n_runs, n_iter + 1), np.nan)
    best_points = Xt.copy()
    best_values = np.full(n_runs, np.inf)
    n_steps = np.full(n_runs, n_iter)
    active = np.arange(n_runs)  # runs still in the batch, in the order of Xt's rows
    report_every = max(n_iter // 10, 1)
    memory = _STOP_WINDOW + _STOP_MAX_PERIOD
    for t in range(n_iter + 1):
        values, gradient_t = _objective_and_gradient_rows(Xt, problem, parametrization)
        history[active, t] = values
        better = values < best_values[active]
        best_values[active] = np.where(better, values, best_values[active])
        best_points[active[better]] = Xt[better]
        if verbose and t % report_every == 0:
            logger.info("iteration %d: best objective %.8g", t, best_values.min())
        if t == n_iter:
            break
        if stop_early and t >= memory and t % _STOP_CHECK_EVERY == 0:
            stop = _hopeless(history[active, t - memory + 1 : t + 1], n_iter - t, best_values.min())
            if stop.any():
                n_steps[active[stop]] = t
                if verbose:
                    logger.info(
                        "iteration %d: stopped %d run(s) that can no longer improve the best "
                        "objective; %d left",
                        t,
                        int(stop.sum()),
                        int((~stop).sum()),
                    )
                keep = ~stop
                active, Xt, gradient_t = active[keep], Xt[keep], gradient_t[keep]
                if active.size == 0:
                    break
        Xt = _retract(Xt, -step * _tangent_rows(Xt, gradient_t), retraction)
    return best_points.transpose(0, 2, 1), best_values, history, n_steps


def _check_descent_memory(n_restarts, n_iter, p, d, k, parametrization):
    """Refuse a descent whose arrays exceed the memory budget, before allocating them.

    Per run (``n_restarts + 1``) of points ``r = d`` or ``p - d`` columns wide: the
    products ``X^T M_b`` (``r k p``), about six ``r p`` arrays (starts, iterate,
    best iterate, gradient, retraction) and the history (``n_iter + 1``).
    """
    r = d if parametrization == "direct" else p - d
    runs = float(n_restarts) + 1.0
    check_allocation(
        8.0 * runs * (r * p * (k + 6.0) + n_iter + 1.0),
        f"RobustFairPCA's descent from n_restarts + 1 = {int(runs)} starts (points of "
        f"{p} x {r} with parametrization={parametrization!r}, {k} groups, n_iter={n_iter})",
        "Lower n_restarts"
        + (" or use parametrization='direct'." if parametrization == "complement" else "."),
    )


def _single_blas_thread(starts, n_groups):
    """Context keeping BLAS on one thread during the descent from ``starts`` (R, p, r).

    The iterations are batches of small products (restarts x p x d): BLAS threads only
    add synchronisation to them, which on a busy machine makes the fit's time erratic.
    Setting the limit has a fixed cost at its first use in a process (threadpoolctl
    scans the loaded libraries), so it is skipped when the largest product of a step,
    ``(R r x p) @ (p x k p)``, is below ``_SINGLE_THREAD_PRODUCT_SIZE`` multiply-adds,
    which BLAS runs on one thread anyway.
    """
    R, p, r = starts.shape
    if R * r * p * n_groups * p < _SINGLE_THREAD_PRODUCT_SIZE:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _invalid_groups(problem, n_components):
    """Groups for which neither condition of Theorem 3.2 holds.

    Returns
    -------
    failures : list of (int, float)
        Group index and the sum of the ``p - d`` smallest eigenvalues of its
        ``M_b``, for each group with ``lam > p_b`` and that sum ``< eps_b``.
    """
    failures = []
    q = problem.n_features - n_components
    for b in range(problem.n_groups):
        if problem.lam <= problem.proportions[b]:
            continue
        tail = float(np.sum(np.linalg.eigvalsh(problem.second_moments[b])[:q]))
        if tail < problem.radii[b]:
            failures.append((b, tail))
    return failures


def _late_improvement(history, n_iter):
    """Relative fall of the best objective over the second half of an ``n_iter``-step run.

    ``history`` holds the objective at the start and after each step the run took; a
    run stopped early (see :func:`_hopeless`) could not have improved its best any
    more, so its best is taken as constant over the steps it did not take, which
    makes the result that of the full run.

    Returns
    -------
    change : float
        ``(b_{T - w} - b_T) / |b_T|`` with ``b`` the running best and ``w`` the window.
    window : int
        ``w = max(T // 2, 1)`` steps.
    """
    running_best = np.minimum.accumulate(history)
    running_best = np.concatenate(
        [running_best, np.full(n_iter + 1 - running_best.size, running_best[-1])]
    )
    window = max(n_iter // 2, 1)
    tail_start = running_best[-(window + 1)]
    change = (tail_start - running_best[-1]) / max(abs(running_best[-1]), np.finfo(float).tiny)
    return float(change), window


def robust_objective(components, second_moments, proportions, radii, lam):
    """Robust fair objective of Vu et al. (2022) at given components.

    The worst case, over distributions whose group conditionals lie within
    the Gelbrich balls of radii ``radii`` around the empirical ones, of the
    total reconstruction error plus ``lam`` times the largest gap between
    group reconstruction errors; closed form of Theorem 3.2 (two groups) and
    Theorem B.2 (k groups). It equals that worst case when, for every group,
    ``lam <= proportions[b]`` or the sum of the ``p - d`` smallest eigenvalues
    of ``second_moments[b]`` is at least ``radii[b]``; otherwise it is a lower
    bound of it.

    Parameters
    ----------
    components : array-like of shape (d, p)
        Orthonormal rows spanning the subspace (like ``components_``).
    second_moments : array-like of shape (k, p, p)
        Each group's second moment about the centre used for reconstruction
        (the pooled mean for a fitted :class:`RobustFairPCA`).
    proportions : array-like of shape (k,)
        Group masses, summing to one.
    radii : array-like of shape (k,)
        Non-negative ball radii.
    lam : float
        Non-negative weight of the error gap.

    Returns
    -------
    value : float
    """
    V = np.atleast_2d(np.asarray(components, dtype=np.float64)).T
    M = np.asarray(second_moments, dtype=np.float64)
    proportions = np.asarray(proportions, dtype=np.float64)
    radii = np.asarray(radii, dtype=np.float64)
    lam = check_number(lam, "lam", numbers.Real, minimum=0)
    if M.ndim != 3 or M.shape[1:] != (V.shape[0],) * 2:
        raise ValueError(
            f"second_moments must have shape (k, {V.shape[0]}, {V.shape[0]}) to match "
            f"components of shape {V.T.shape}, got {M.shape}."
        )
    for name, value in (("proportions", proportions), ("radii", radii)):
        if value.shape != (M.shape[0],):
            raise ValueError(f"{name} must have shape ({M.shape[0]},), got {value.shape}.")
    if np.any(radii < 0):
        raise ValueError("radii must be non-negative.")
    problem = _Problem(M, proportions, radii, lam)
    values, _ = _objective_and_gradient_rows(V.T[None], problem, "direct")
    return float(values[0])


# --------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------


@document_require_groups
class RobustFairPCA(FairPCABase):
    r"""Distributionally robust fair PCA (RFPCA) of Vu et al. (2022).

    Finds the ``d``-dimensional subspace (orthonormal ``V``, ``p x d``) solving

    .. math:: \min_{V^T V = I_d} \; \sup_{Q \in \mathcal{B}(\hat P)}
              \mathbb{E}_Q[\ell(V, X)] + \lambda \max_{a, a'}
              \big| \mathbb{E}_Q[\ell(V, X) | A = a] - \mathbb{E}_Q[\ell(V, X) | A = a'] \big|,

    with ``l(V, x) = ||x - V V^T x||^2`` (x centred on the pooled training
    mean) and the ambiguity set of joint distributions whose group masses are
    the empirical ``p_a = n_a / n`` and whose group conditionals lie within
    Gelbrich distance ``eps_a`` of the empirical ones. With
    ``m_a = <I - V V^T, M_a>``, ``M_a`` group ``a``'s second moment about the
    pooled mean, the problem equals (Theorem 3.2; appendix B for k groups)

    .. math:: \min_V \max_{a \neq a'} \sum_b p_b (m_b + \varepsilon_b)
              + 2 \sum_b c_{a a' b} \sqrt{\varepsilon_b m_b}
              + \lambda (m_a - m_{a'} + \varepsilon_a - \varepsilon_{a'}),

    ``c = p_a + lam`` for ``b = a``, ``|p_a' - lam|`` for ``b = a'``, ``p_b``
    otherwise; for two groups this is ``max(J_0, J_1)`` with
    ``J_a = kappa_a + theta_a sqrt(m_a) + vartheta_a' sqrt(m_a') + <I - V V^T, C_a>``.
    The reformulation is exact when, for every group, ``lam <= p_a`` or the sum
    of the ``p - d`` smallest eigenvalues of ``M_a`` is at least ``eps_a``; a
    ``UserWarning`` names the groups where both fail (the objective minimised
    is then a lower bound of the robust one). With ``lam = 0`` and all radii 0
    it is the total reconstruction error, minimised by vanilla PCA (Remark 3.4).

    The problem is solved by Riemannian subgradient descent (Algorithm 1):
    up to ``T = n_iter`` steps of constant size ``1 / sqrt(T + 1)`` along the
    negative Riemannian subgradient of the active pair, followed by a QR or
    polar retraction, from the PCA solution and from ``n_restarts`` random
    subspaces (all runs are vectorised together). The best iterate over all
    runs is returned. Runs that can no longer lower the best objective found
    within the budget are stopped early (see Notes).

    Parameters
    ----------
    n_components : int, default=2
        Dimension ``d`` of the subspace.
    lam : float, default=0.5
        Weight ``lambda >= 0`` of the gap between group reconstruction errors.
    alpha : float, default=0.15
        Radius scale: ``eps_a = alpha / sqrt(n_a)`` with ``n_a`` the training
        rows of group ``a`` (the paper's choice). Ignored when ``radii`` is given.
    radii : array-like of shape (n_groups,), default=None
        Explicit non-negative radii ``eps_a``, in the order of ``groups_`` (the
        sorted group labels).
    n_iter : int, default=1000
        Step budget ``T`` of each run; it also sets the step size
        ``1 / sqrt(T + 1)``. A run may stop earlier (see Notes).
    n_restarts : int, default=20
        Number of random starting subspaces (uniformly distributed), in
        addition to the PCA start.
    retraction : {"qr", "polar"}, default="qr"
        Retraction after each step. Both return an orthonormal basis of the
        span of the stepped point, and the objective depends on the span only,
        so they give the same sequence of subspaces up to rounding.
    parametrization : {"direct", "complement"}, default="direct"
        ``"complement"`` iterates on ``U`` (``p x (p - d)``, the complement of
        ``V``) as in the paper, where the objective is convex in the
        Euclidean sense; each step costs ``O(p^2 (p - d))``. ``"direct"`` iterates
        on ``V`` (``p x d``) using ``<I - V V^T, M> = tr M - tr(V^T M V)``, at
        ``O(p^2 d)`` a step. The two generate the same subspaces: the step in
        ``U``, ``U - gamma (I - U U^T) 2 W U``, spans the complement of
        ``V + gamma (I - V V^T) 2 W V``, the step in ``V`` (``W = sum_b w_b M_b``),
        and random starts are drawn as a subspace and its complement. Use
        ``"complement"`` only when ``p - d < d``.
    random_state : int, RandomState instance or None, default=None
        Seed of the random starting points.
    verbose : bool, default=False
        Log progress (``logging.getLogger("fairpca.robust")``, level INFO).
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal rows spanning the robust fair subspace, sorted by
        explained training variance.
    objective_ : float
        Robust objective at the returned subspace.
    history_ : ndarray of shape (n_iter_ + 1,)
        Objective at the start and after each step of the run that produced
        the returned subspace, up to where that run stopped.
    radii_ : ndarray of shape (n_groups,)
        Radii ``eps_a`` used.
    n_iter_ : int
        Number of steps taken by the run that produced the returned subspace
        (at most ``n_iter``).
    n_iter_per_start_ : ndarray of shape (n_restarts + 1,)
        Number of steps taken by each run: the PCA start first, then the
        random starts. Their sum is the work done, out of
        ``(n_restarts + 1) * n_iter``.
    converged_ : bool
        Whether the best objective of the returned run changed by at most
        ``1e-3`` relative over the second half of the budget of ``n_iter``
        steps (a run stopped early counts as keeping its best to the end, as
        it could not improve it). A subgradient
        method with a fixed step has no exact stopping test; this flags runs
        still improving at the end (then a ``ConvergenceWarning`` is issued;
        increase ``n_iter``). The window is half the budget, and at least
        ``10`` steps (so a run of fewer than 20 steps is never called
        converged): a short run whose best point is still falling must not
        pass because its last few steps happened not to improve it.
    mean_, explained_variance_, explained_variance_ratio_, groups_, group_counts_
        See :class:`fairpca.FairPCABase`.
    n_components_, component_scales_, n_features_in_, feature_names_in_
        See :class:`fairpca.FairPCABase`.

    See Also
    --------
    robust_objective : The objective at given components.
    fairpca.experiments.robust_fair_pca_cv : The paper's cross-validated choice of
        ``alpha`` and ``lam``.

    Notes
    -----
    ``M_a`` is the second moment about the pooled training mean (the papers'
    data are centred as a whole), so with zero radii the nominal terms are the
    group reconstruction errors of :func:`fairpca.metrics.group_reconstruction_error`
    and the gap term is :func:`fairpca.metrics.reconstruction_error_gap` on
    the training data. Where ``m_b = 0`` the square-root terms are not
    differentiable; their subgradient is taken as 0 there (no NaN).

    Stopping early. The step size is fixed by ``n_iter`` and the answer is the
    best iterate of all runs, so a run is worth continuing only while it could
    still lower the best objective ``L`` found so far. Such a method does not
    settle like a descent method: a run converges to a fixed point, settles
    on a short cycle (bouncing across a kink of the maximum), drifts slowly,
    or keeps zigzagging, and in the last case new best points keep coming
    late in the run (up to step 881 of 1000, after 553 steps without one,
    in the measurements behind this rule). Every 8 steps, with ``F_s`` a
    run's objective after ``s`` steps and ``t`` the current step, the run's
    largest change over ``P`` steps in the last ``W = 32``,
    ``delta_P = max_{t-W < s <= t} |F_s - F_{s-P}|``, is extrapolated (twice
    over) to the ``T - t`` remaining steps:

    .. math:: \phi = \max_{1 \le P \le 8} \Big( \min_{t-P < s \le t} F_s
              - 2 \delta_P \lceil (T - t) / P \rceil \Big).

    A run with ``phi >= L - 1e-10 |L|`` is stopped: the run holding ``L``
    has stalled, and any other run has fallen too far behind to overtake it.
    A run at a fixed point or on a cycle of up to 8 steps, or drifting well
    above ``L``, is stopped; a zigzagging run (large ``delta_P``) runs on to
    ``T``. On the problems measured (109 problems, budgets of 100, 300 and
    1,000 steps) the returned objective was unchanged to ``3e-11`` (relative)
    against running every start for the full budget, while the factor 2 could
    be lowered to 1 with no change and first changed an answer at 0.5.

    The objective depends on the data only through the group second moments
    and counts, so ``fit`` also accepts Dask collections (one distributed pass
    over the rows) and ``partial_fit`` merges each chunk's moments exactly and
    solves again (the default radii ``alpha / sqrt(n_a)`` use the counts seen so
    far); after the last chunk the estimator equals ``fit`` on all rows.

    References
    ----------
    H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally Robust Fair
    Principal Components via Geodesic Descents." ICLR 2022.

    Examples
    --------
    >>> from fairpca import RobustFairPCA
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(random_state=0)
    >>> est = RobustFairPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    >>> est.components_.shape
    (2, 10)
    """

    #: Relative change of the best objective over the second half of a run deemed converged.
    _convergence_rtol = 1e-3

    #: Needs only the group moments: fits Dask input and has partial_fit.
    _moments_only = True
    #: Dropped by compact() besides the groups' labels, counts and moments.
    _group_attributes = (*FairPCABase._group_attributes, "radii_")

    def __init__(
        self,
        n_components: int | float = 2,
        *,
        lam: float = 0.5,
        alpha: float = 0.15,
        radii: ArrayLike | None = None,
        n_iter: int = 1000,
        n_restarts: int = 20,
        retraction: Literal["qr", "polar"] = "qr",
        parametrization: Literal["direct", "complement"] = "direct",
        random_state: int | np.random.RandomState | None = None,
        verbose: bool = False,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.lam = lam
        self.alpha = alpha
        self.radii = radii
        self.n_iter = n_iter
        self.n_restarts = n_restarts
        self.retraction = retraction
        self.parametrization = parametrization
        self.random_state = random_state
        self.verbose = verbose
        self.require_groups = require_groups

    def _check_params(self):
        check_number(self.lam, "lam", numbers.Real, minimum=0)
        check_number(self.alpha, "alpha", numbers.Real, minimum=0)
        n_iter = check_number(self.n_iter, "n_iter", minimum=1)
        runs = check_number(self.n_restarts, "n_restarts", minimum=0) + 1
        # Known before any data: the objective history of every run.
        check_allocation(
            8.0 * runs * (n_iter + 1),
            f"the objective history of n_iter={n_iter} steps from n_restarts + 1 = {runs} starts",
            "Lower n_iter or n_restarts.",
        )
        for name, value, options in (
            ("retraction", self.retraction, _RETRACTIONS),
            ("parametrization", self.parametrization, _PARAMETRIZATIONS),
        ):
            if not isinstance(value, str) or value not in options:
                listed = ", ".join(repr(o) for o in options)
                raise ValueError(f"{name} must be one of {listed}; got {value!r}.")
        if self.radii is not None:
            radii = np.asarray(self.radii)
            if radii.dtype.kind not in "iuf" or radii.ndim != 1:
                raise ValueError(
                    f"radii must be a 1-D array of non-negative numbers (one per group), "
                    f"got {self.radii!r}."
                )
            if not np.all(np.isfinite(radii)) or np.any(radii < 0):
                raise ValueError(f"radii must be finite and non-negative, got {self.radii!r}.")

    def _radii(self, counts):
        if self.radii is None:
            return float(self.alpha) / np.sqrt(counts)
        radii = np.asarray(self.radii, dtype=np.float64)
        if radii.shape[0] != counts.shape[0]:
            raise ValueError(
                f"radii has {radii.shape[0]} entries but sensitive_features has "
                f"{counts.shape[0]} groups ({', '.join(map(repr, self.groups_.tolist()))}); "
                "give one radius per group, in the order of the sorted group labels."
            )
        return radii

    def _fit_components(self, X, codes, moments, y, d):
        p = moments.n_features
        counts = moments.counts.astype(np.float64)
        problem = _Problem(
            moments.second_moment("pooled"),
            moments.proportions,
            self._radii(counts),
            float(self.lam),
        )
        self.radii_ = problem.radii
        if d == p:
            # Nothing to reconstruct: every m_b is 0 and the subspace is all of R^p.
            values, _ = _objective_and_gradient_rows(np.eye(p)[None], problem, "direct")
            self.objective_ = float(values[0])
            self.history_ = np.full(self.n_iter + 1, self.objective_)
            self.n_iter_, self.converged_ = int(self.n_iter), True
            self.n_iter_per_start_ = np.full(int(self.n_restarts) + 1, int(self.n_iter))
            return np.eye(p), None

        failures = _invalid_groups(problem, d)
        if failures:
            detail = "; ".join(
                f"group {_plain(self.groups_[b])!r}: lam={problem.lam:g} > proportion "
                f"{problem.proportions[b]:.4g} and the sum of its {p - d} smallest "
                f"second-moment eigenvalues {tail:.4g} < radius {problem.radii[b]:.4g}"
                for b, tail in failures
            )
            warn(
                "The reformulation of Vu et al. (2022, Theorem 3.2) needs, for every group, "
                "lam <= its proportion or the sum of the p - d smallest eigenvalues of its "
                f"second moment >= its radius; both fail for {detail}. The objective minimised "
                "is then a lower bound of the robust objective.",
                UserWarning,
            )

        _check_descent_memory(
            self.n_restarts, self.n_iter, p, d, problem.n_groups, self.parametrization
        )
        # PCA start (top-d eigenvectors of the pooled covariance) plus random subspaces.
        covariance = np.einsum("b,bij->ij", problem.proportions, problem.second_moments)
        pca = top_eigh(covariance, d)[1][None]
        rng = check_random_state(self.random_state)
        gaussian = rng.standard_normal((self.n_restarts, p, d))
        random_V = _qr_factor(gaussian)
        if self.parametrization == "direct":
            starts = np.concatenate([pca, random_V])
        else:
            starts = _orthonormal_complement(np.concatenate([pca, random_V]))

        with _single_blas_thread(starts, problem.n_groups):
            points, values, history, n_steps = _subgradient_descent(
                starts,
                problem,
                self.parametrization,
                self.retraction,
                int(self.n_iter),
                verbose=bool(self.verbose),
                stop_early=_STOP_EARLY,
            )
        best = int(np.argmin(values))
        if self.verbose:
            logger.info(
                "best objective %.8g from %s start (PCA start: %.8g); %d of %d steps taken",
                values[best],
                "the PCA" if best == 0 else f"random start {best}",
                values[0],
                int(n_steps.sum()),
                n_steps.size * int(self.n_iter),
            )
        V = points[best] if self.parametrization == "direct" else None
        if V is None:
            V = _orthonormal_complement(points[best][None])[0]
        self.objective_ = float(values[best])
        self.n_iter_per_start_ = n_steps
        self.n_iter_ = int(n_steps[best])
        self.history_ = history[best, : self.n_iter_ + 1]
        change, window = _late_improvement(self.history_, int(self.n_iter))
        self.converged_ = bool(
            window >= _MIN_CONVERGENCE_WINDOW and change <= self._convergence_rtol
        )
        if not self.converged_:
            warn(
                f"RobustFairPCA: the best objective still decreased by {change:.3g} (relative) "
                f"over the last {window} of {self.n_iter} iterations (tolerance "
                f"{self._convergence_rtol:g}, judged over at least {_MIN_CONVERGENCE_WINDOW} "
                "iterations); consider increasing n_iter.",
                ConvergenceWarning,
            )
        return V.T, None
