"""The robust objective and its batched Riemannian subgradient descent.

Pure functions behind :class:`fairpca.RobustFairPCA`, the method of

    H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally Robust Fair
    Principal Components via Geodesic Descents." ICLR 2022.

They are the closed-form objective of Theorem 3.2 / appendix B as a function of the
group reconstruction errors ``m_b`` (:class:`_Problem`,
:func:`_objective_from_moments`), its subgradient at stacked points of the
Stiefel manifold, and Algorithm 1 run from every start at once
(:func:`_subgradient_descent`) with its QR retraction and the rule that stops
runs which can no longer lower the best objective (:func:`_hopeless`).

The loop's cost at small ``p`` is its number of numpy calls, not arithmetic:
the products of every point and group come out of one matrix product, and the
QR retraction factors the whole batch in two LAPACK calls.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.linalg.blas import dtrsm
from scipy.linalg.lapack import dpbtrf, dtbtrs

from fairpca.riemannian.geometry import _CHOLESKY_QR_MAX_STEP2, _qr_factor, _retract_rows

# The estimator's verbose log (RobustFairPCA documents this logger).
logger = logging.getLogger("fairpca.robust")

#: Relative size below which a group's complement second moment ``m_b`` counts as zero.
_ZERO_MOMENT_RTOL = 1e-12

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

#: Largest r for which the Cholesky QR factors the whole batch as one banded matrix
#: (see _inverse_cholesky_factors); above it, point by point.
_BANDED_MAX_RANK = 8


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
    interleaved : ndarray of shape (p, p k)
        Column ``q k + b`` is column ``q`` of ``M_b``: one matrix product applies
        every ``M_b``, and gives ``X^T M_b`` with the group index last (see
        :func:`_moments_and_products`).
    traces : ndarray of shape (k,)
        ``tr M_b``.
    zero_moment : ndarray of shape (k,)
        Values of ``m_b`` at or below which ``m_b`` counts as zero.
    pair_linear, pair_sqrt : ndarray of shape (k k, k)
        For the ordered pair ``(a, a')`` in row ``a k + a'``: the coefficients
        of ``m_b + eps_b`` and of ``2 s_b`` in its function (see
        :func:`_objective_from_moments`).
    pair_matrix : ndarray of shape (2 k, k k)
        ``[pair_linear, 2 diag(sqrt(eps)) pair_sqrt]^T``: with ``pair_offset``,
        one product of ``[m, sqrt(m)]`` gives every pair's value.
    pair_offset : ndarray of shape (k k,)
        ``pair_linear @ eps``, and ``-inf`` for the pairs ``a = a'`` (excluded
        from the maximum).
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
        sqrt_radii = np.sqrt(self.radii)
        derived = {
            "interleaved": np.ascontiguousarray(
                self.second_moments.transpose(1, 2, 0).reshape(p, p * k)
            ),
            "traces": traces,
            "zero_moment": _ZERO_MOMENT_RTOL * np.maximum(traces, np.finfo(float).tiny),
            "sqrt_radii": sqrt_radii,
            "pair_linear": pair_linear,
            "pair_sqrt": pair_sqrt,
            "pair_matrix": np.vstack([pair_linear.T, 2.0 * sqrt_radii[:, None] * pair_sqrt.T]),
            "pair_offset": pair_linear @ self.radii
            + np.where(np.eye(k, dtype=bool), -np.inf, 0.0).reshape(k * k),
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
    pair = np.concatenate([m, root_m], axis=1) @ problem.pair_matrix + problem.pair_offset
    active = pair.argmax(axis=1)
    # d(2 c s_b)/d m_b = c sqrt(eps_b) / sqrt(m_b); zero by convention where m_b is 0.
    ratio = problem.sqrt_radii / np.where(m > problem.zero_moment, root_m, np.inf)
    weights = problem.pair_linear[active] + problem.pair_sqrt[active] * ratio
    return pair.max(axis=1), weights


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
    XM : ndarray of shape (R, r p, k)
        ``XM[i, :, b]`` is ``Xt[i] @ M_b`` flattened: with the group index last,
        ``tr(X_i^T M_b X_i)`` and any weighted sum over ``b`` are one stacked
        matrix-vector product each.
    """
    R, r, p = Xt.shape
    # One matrix product for every point and group.
    XM = (Xt.reshape(R * r, p) @ problem.interleaved).reshape(R, r * p, problem.n_groups)
    quad = (Xt.reshape(R, 1, r * p) @ XM)[:, 0]  # tr(X_i^T M_b X_i)
    m = quad if parametrization == "complement" else problem.traces - quad
    return m, XM


def _gradient_sign(parametrization):
    """``dm_b/dX = sign M_b X``: ``m_b = tr(U^T M_b U)`` or ``tr M_b - tr(V^T M_b V)``."""
    return 2.0 if parametrization == "complement" else -2.0


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
    scale = _gradient_sign(parametrization) * weights
    return values, (XM @ scale[:, :, None]).reshape(Xt.shape)


def _objective_and_step_rows(Xt, problem, parametrization, step):
    r"""Objective at ``R`` stacked points and the transposed steps ``-step xi``.

    With ``G = sign sum_b w_b M_b X`` (:func:`_objective_and_gradient_rows`) the
    Riemannian (sub)gradient is the tangent projection ``xi = G - X sym(X^T G)``,
    and ``X^T G = sign sum_b w_b X^T M_b X`` is symmetric, so

    .. math:: -\gamma\, \xi^T = H - (H X) X^T, \qquad
              H = -\gamma\, G^T = \sum_b c_b X^T M_b, \quad
              c_b = -\gamma\, \mathrm{sign}\, w_b:

    one weighted sum of the products of :func:`_moments_and_products` and two
    small products per point (the loop's cost is its number of numpy calls).

    Parameters
    ----------
    Xt : ndarray of shape (R, r, p)
    problem : _Problem
    parametrization : {"complement", "direct"}
    step : float

    Returns
    -------
    values : ndarray of shape (R,)
    step_t : ndarray of shape (R, r, p)
        ``-step xi^T``.
    """
    m, XM = _moments_and_products(Xt, problem, parametrization)
    values, weights = _objective_from_moments(m, problem)
    c = -step * _gradient_sign(parametrization) * weights
    H = (XM @ c[:, :, None]).reshape(Xt.shape)
    return values, H - (H @ Xt.transpose(0, 2, 1)) @ Xt


# --------------------------------------------------------------------------
# The descent (pure functions)
# --------------------------------------------------------------------------


@functools.cache
def _band_layout(n_blocks, r):
    """Where the lower band of a block-diagonal matrix sits in its flattened blocks.

    For ``n_blocks`` blocks of ``r x r`` stored as ``(n_blocks, r, r)`` and
    flattened with one zero appended, ``index[j, l]`` is the position of entry
    ``(j + l, j)`` of the ``n x n`` block-diagonal matrix (``n = n_blocks r``),
    the appended zero where that entry lies outside the blocks; so
    ``flat[index].T`` is LAPACK's lower band storage with ``r - 1``
    subdiagonals. ``identities`` stacks ``n_blocks`` identities ``(n, r)``.
    """
    rows = np.arange(n_blocks * r)
    block, within = np.divmod(rows, r)
    offset = np.arange(r)
    index = np.where(
        within[:, None] + offset < r,
        block[:, None] * r * r + (within[:, None] + offset) * r + within[:, None],
        n_blocks * r * r,
    )
    identities = np.asfortranarray(np.tile(np.eye(r), (n_blocks, 1)))
    for array in (index, identities):
        array.setflags(write=False)
    return index, identities


def _inverse_cholesky_factors(Yt):
    """``L^{-1}`` for ``L = cholesky(Y^T Y)`` at stacked ``Y^T`` (R, r, p), and ``max tr(Y^T Y)``.

    The Gram matrices are the blocks of one block-diagonal matrix with ``r - 1``
    subdiagonals: one banded Cholesky (LAPACK ``dpbtrf``) and one banded triangular
    solve against stacked identities (``dtbtrs``) factor and invert every block in
    two calls, where a call per point, or a row-by-row solve, would cost more than
    the arithmetic. Returns None for the inverse when some ``Y^T Y`` is not
    numerically positive definite.
    """
    R, r, _ = Yt.shape
    index, identities = _band_layout(R, r)
    flat = np.zeros(R * r * r + 1)
    np.matmul(Yt, Yt.transpose(0, 2, 1), out=flat[:-1].reshape(R, r, r))
    band = flat[index].T  # Fortran-ordered: LAPACK reads it in place
    largest_trace = band[0].reshape(R, r).sum(axis=1).max()
    factor, info = dpbtrf(band, lower=1, overwrite_ab=1)
    if info != 0:
        return None, largest_trace
    inverse, info = dtbtrs(factor, identities, uplo="L")
    return (inverse.reshape(R, r, r) if info == 0 else None), largest_trace


def _cholesky_qr_rows(Yt):
    """Transposed Q factors of ``Y`` with positive diagonal of R, from ``Y^T`` (R, r, p).

    ``Y^T Y = R^T R`` with ``R = L^T``, ``L = cholesky(Y^T Y)``, so ``Q^T = L^{-1} Y^T``.
    Forming ``Y^T Y`` squares the condition number of ``Y``; after a tangent step
    ``Y = X + xi``, ``Y^T Y = I + xi^T xi``, so ``tr(Y^T Y) - r = ||xi||_F^2`` bounds
    ``cond(Y)^2 - 1``. When it exceeds ``_CHOLESKY_QR_MAX_STEP2`` for some point, or
    the factorisation fails, the Householder QR is used instead (as in
    :mod:`fairpca.riemannian.geometry`). Below it ``cond(L) = cond(Y) <= 11``, so
    applying the computed triangular inverse (:func:`_inverse_cholesky_factors`)
    costs at most about as many units of rounding as the Cholesky QR itself.
    For large ``r`` (the complement parametrisation) the banded route would do
    far more work than one BLAS triangular solve per point, which is used instead.
    """
    r = Yt.shape[1]
    if r <= _BANDED_MAX_RANK:
        inverse, largest_trace = _inverse_cholesky_factors(Yt)
        if inverse is not None and largest_trace - r <= _CHOLESKY_QR_MAX_STEP2:
            return inverse @ Yt
    else:
        gram = Yt @ Yt.transpose(0, 2, 1)
        if gram.diagonal(axis1=1, axis2=2).sum(axis=1).max() - r <= _CHOLESKY_QR_MAX_STEP2:
            with contextlib.suppress(np.linalg.LinAlgError):
                L = np.linalg.cholesky(gram)
                # L Q^T = Y^T is Q L^T = Y: a right-side solve with the upper factor L^T,
                # on the Fortran-ordered views Yt[k].T and L[k].T (no copies).
                return np.stack(
                    [
                        dtrsm(1.0, L[k].T, Yt[k].T, side=1, lower=0, trans_a=0).T
                        for k in range(L.shape[0])
                    ]
                )
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
    best_points = np.empty_like(Xt)
    best_values = np.full(n_runs, np.inf)
    n_steps = np.full(n_runs, n_iter)
    # The runs still in the batch (``active``, in the order of Xt's rows) keep their
    # objectives step by step (``trace``, one row a step) and their best iterates in
    # arrays of their own, so that a step writes whole rows; a run's are copied out
    # when it stops, and what remains at the end.
    active = np.arange(n_runs)
    trace = np.full((n_iter + 1, n_runs), np.nan)
    run_best_values, run_best_points = np.full(n_runs, np.inf), Xt.copy()

    def retire(runs, t):
        ids = active[runs]
        history[ids, : t + 1] = trace[: t + 1, runs].T
        best_values[ids], best_points[ids] = run_best_values[runs], run_best_points[runs]
        n_steps[ids] = t

    report_every = max(n_iter // 10, 1)
    memory = _STOP_WINDOW + _STOP_MAX_PERIOD
    for t in range(n_iter + 1):
        values, step_t = _objective_and_step_rows(Xt, problem, parametrization, step)
        trace[t] = values
        better = values < run_best_values
        if better.any():
            run_best_values[better], run_best_points[better] = values[better], Xt[better]
        if verbose and t % report_every == 0:
            leader = min(best_values.min(), run_best_values.min())
            logger.info("iteration %d: best objective %.8g", t, leader)
        if t == n_iter:
            break
        if stop_early and t >= memory and t % _STOP_CHECK_EVERY == 0:
            leader = min(best_values.min(), run_best_values.min())
            stop = _hopeless(trace[t - memory + 1 : t + 1].T, n_iter - t, leader)
            if stop.any():
                retire(stop, t)
                if verbose:
                    logger.info(
                        "iteration %d: stopped %d run(s) that can no longer improve the best "
                        "objective; %d left",
                        t,
                        int(stop.sum()),
                        int((~stop).sum()),
                    )
                keep = ~stop
                active, Xt, step_t = active[keep], Xt[keep], step_t[keep]
                trace = trace[:, keep]
                run_best_values, run_best_points = run_best_values[keep], run_best_points[keep]
                if active.size == 0:
                    break
        Xt = _retract(Xt, step_t, retraction)
    if active.size:
        retire(slice(None), n_iter)
    return best_points.transpose(0, 2, 1), best_values, history, n_steps
