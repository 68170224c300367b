"""Fair PCA minimising the largest per-group marginal loss (Samadi et al., 2018).

Implements the method of [Samadi2018]_ for ``k >= 2`` groups: the semidefinite
relaxation of "minimise the largest average marginal loss over the groups",
solved exactly through its Lagrangian dual (default), by the authors'
multiplicative weights, or by a generic SDP solver, then rounded without
raising the objective: by default to an extreme point of the optimal set
([Tantipongpipat2019]_, rank exactly ``d`` for two groups), or by the paper's
LP (rank at most ``d + k - 1``, their Algorithm 1 and Theorem 5.2). Nested
components and the max-min variance objective use the same machinery.

References
----------
.. [Samadi2018] S. Samadi, U. Tantipongpipat, J. Morgenstern, M. Singh and
   S. Vempala. "The Price of Fair PCA: One Extra Dimension." NeurIPS 2018.
.. [Tantipongpipat2019] U. Tantipongpipat, S. Samadi, M. Singh, J. Morgenstern and
   S. Vempala. "Multi-criteria Dimensionality Reduction with Applications to
   Fairness." NeurIPS 2019.
"""

import logging
import numbers
from typing import Literal

import numpy as np
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning

from fairpca._base import FairPCABase
from fairpca._config import document_require_groups
from fairpca._linalg import top_eigh, top_eigh_fast
from fairpca._minmax_nested import fit_nested
from fairpca._minmax_rounding import diagonal_captures, round_extreme_point, round_lp
from fairpca._validation import check_allocation, check_number
from fairpca._warnings import warn

__all__ = ["MinMaxLossFairPCA"]

logger = logging.getLogger(__name__)

#: Fraction of the largest group variance below which an objective counts as zero
#: when the duality gap is made relative (rounding noise in the losses is far smaller).
_SCALE_FLOOR = 1e-6


# ---------------------------------------------------------------------------
# the problem: targets, losses, dual function
# ---------------------------------------------------------------------------


def _group_targets(B, d):
    """Each group's own best captured second moment and its rank-``d`` PCA basis.

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
        Group second moments about the pooled mean.
    d : int
        Target dimension.

    Returns
    -------
    beta : ndarray of shape (k,)
        Sum of the top ``d`` eigenvalues of each ``B[a]``.
    bases : list of ndarray of shape (p, d)
        Top ``d`` eigenvectors of each ``B[a]``, as columns.
    """
    beta, bases = np.empty(B.shape[0]), []
    for a, Ba in enumerate(B):
        values, vectors = top_eigh(Ba, d)
        beta[a] = values.sum()
        bases.append(vectors)
    return beta, bases


def _basis_losses(B, beta, V):
    """Losses ``beta_a - <B_a, V V^T>`` of the projector onto the columns of ``V``, shape (k,)."""
    return beta - diagonal_captures(B, V).sum(axis=1)


def _matrix_losses(B, beta, P):
    """Losses ``beta_a - <B_a, P>`` of a symmetric matrix ``P``, shape (k,)."""
    return beta - np.einsum("apq,pq->a", B, P)


def _dual_value(B, beta, w, d, exact=True):
    r"""Lagrangian dual function of the relaxation and a minimising projector.

    .. math:: g(w) = \sum_a w_a \beta_a - \sum_{j \le d} \lambda_j\Big(\sum_a w_a B_a\Big)
              = \min_{0 \preceq P \preceq I,\ \operatorname{tr} P \le d}
                \sum_a w_a \operatorname{loss}_a(P)

    (Ky Fan's maximum principle). For ``w`` in the simplex, ``g(w)`` is a lower
    bound on the relaxation's optimum (weak duality).

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
    beta : ndarray of shape (k,)
    w : ndarray of shape (k,)
        Point of the simplex.
    d : int
    exact : bool, default=True
        ``False`` inside the solvers' loops: the eigenpairs by the fastest
        method for the size (:func:`fairpca._linalg.top_eigh_fast`, Lanczos on
        large matrices); the bound that is reported is recomputed with
        ``exact=True``.

    Returns
    -------
    g : float
        Dual value.
    V : ndarray of shape (p, d)
        Top ``d`` eigenvectors of ``sum_a w_a B_a``; ``V V^T`` attains the minimum.
    losses : ndarray of shape (k,)
        Group losses of ``V V^T``: a supergradient of ``g`` at ``w``.
    """
    k, p, _ = B.shape
    weighted = (w @ B.reshape(k, p * p)).reshape(p, p)  # sum_a w_a B_a
    values, V = (top_eigh if exact else top_eigh_fast)(weighted, d)
    return float(w @ beta - values.sum()), V, _basis_losses(B, beta, V)


def _gap_scale(B, objective):
    """Denominator of the relative gap: the objective, floored at a fraction of the variance."""
    return max(abs(objective), _SCALE_FLOOR * float(np.max(np.trace(B, axis1=1, axis2=2))))


# ---------------------------------------------------------------------------
# solvers of the relaxation; each returns the fractional P as a weighted sum of
# projectors (or its eigen-decomposition) and the best dual point
# ---------------------------------------------------------------------------


def _gap_closed(B, upper, lower, tol, n_iter, log_level):
    """Log one solver iteration and tell whether its relative duality gap is within ``tol``."""
    gap = upper - lower
    logger.log(
        log_level, "iteration %d: primal %.12g, dual %.12g, gap %.3g", n_iter, upper, lower, gap
    )
    return gap <= tol * _gap_scale(B, upper)


def _master_problem(L, shift, unit):
    """Best mixture of the projectors found so far and the matching dual point.

    Solves ``min_{mu in simplex} max_a (L mu)_a``. By LP duality its multipliers
    maximise the cutting-plane model ``w -> min_i w . L[:, i]`` of the dual
    function over the simplex, and its value is that model's maximum (HiGHS;
    two groups need no LP, see :func:`_solve_two_groups`).

    Parameters
    ----------
    L : ndarray of shape (k, N)
        ``L[a, i]`` is group ``a``'s loss under the ``i``-th projector.
    shift, unit : float
        The LP is posed for ``(L - shift) / unit``: HiGHS's tolerances are
        absolute (1e-7), so the values near the optimum must be of order one.

    Returns
    -------
    mu : ndarray of shape (N,)
        Mixture weights (a basic solution: at most ``k`` non-zero).
    w : ndarray of shape (k,)
        Maximiser of the cutting-plane model over the simplex.
    value : float
        ``max_a (L mu)_a``.
    """
    k, N = L.shape
    c = np.zeros(N + 1)
    c[-1] = 1.0
    A_eq = np.ones((1, N + 1))
    A_eq[0, -1] = 0.0
    res = linprog(
        c,
        A_ub=np.hstack([(L - shift) / unit, -np.ones((k, 1))]),
        b_ub=np.zeros(k),
        A_eq=A_eq,
        b_eq=[1.0],
        bounds=[(0, None)] * N + [(None, None)],
        method="highs-ds",
    )
    if res.status != 0:  # pragma: no cover - the LP is feasible and bounded
        raise RuntimeError(f"the cutting-plane master LP failed: {res.message}")
    mu = np.clip(res.x[:N], 0.0, None)
    mu /= mu.sum()
    w = np.clip(-res.ineqlin.marginals, 0.0, None)
    w = w / w.sum() if w.sum() > 0 else np.full(k, 1.0 / k)
    return mu, w, float(np.max(L @ mu))


def _solve_cutting_plane(B, beta, own, bases, d, tol, max_iter, log_level):
    """Maximise the dual function by Kelley's cutting planes (column generation).

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
    beta : ndarray of shape (k,)
        Offsets of the losses ``beta_a - <B_a, P>``.
    own, bases
        Each group's own top-``d`` captured second moment and basis
        (:func:`_group_targets`): the minimiser of the dual function at the
        vertex ``e_a`` of the simplex, where ``g(e_a) = beta_a - own_a``.
    d, tol, max_iter, log_level

    Returns
    -------
    columns : list of ndarray of shape (p, d)
        Orthonormal bases of the projectors generated.
    mu : ndarray of shape (len(columns),)
        Weights of the best mixture ``sum_i mu_i V_i V_i^T``.
    w_best : ndarray of shape (k,)
    g_best : float
    n_iter : int
    converged : bool
    """
    k = B.shape[0]
    columns = list(bases)
    L = np.column_stack([_basis_losses(B, beta, V) for V in columns])
    vertex = int(np.argmax(beta - own))
    w_best, g_best = np.eye(k)[vertex], float(beta[vertex] - own[vertex])
    unit = max(float(np.max(np.abs(L))), np.finfo(float).tiny)
    converged = False
    for n_iter in range(1, max_iter + 1):
        mu, w, upper = _master_problem(L, g_best, unit)
        if _gap_closed(B, upper, g_best, tol, n_iter, log_level):
            converged = True
            break
        unit = max(upper - g_best, np.finfo(float).tiny)
        g, V, losses = _dual_value(B, beta, w, d, exact=False)
        if g > g_best:
            w_best, g_best = w, g
        columns.append(V)
        L = np.column_stack([L, losses])
    else:
        mu, _, _ = _master_problem(L, g_best, unit)
    return columns, mu, w_best, g_best, n_iter, converged


def _solve_two_groups(B, beta, own, bases, d, tol, max_iter, log_level):
    """Kelley's cutting planes for two groups, where the model needs no LP.

    With ``w`` the weight of the first group, every projector ``P_i`` found at
    ``w_i`` gives the line ``l_i(w) = w L[0, i] + (1 - w) L[1, i]``, tangent to
    the concave dual function ``g`` at ``w_i`` with slope ``h_i = L[0, i] -
    L[1, i]``. For a concave function, a tangent at a point left of ``w_lo``
    lies above the tangent at ``w_lo`` everywhere right of ``w_lo`` (and
    symmetrically), so between the largest evaluated ``w_lo`` with ``h > 0``
    and the smallest ``w_hi`` with ``h < 0`` the cutting-plane model is
    ``min(l_lo, l_hi)``: its maximiser is the crossing of those two lines,
    and the best mixture is ``P_lo`` and ``P_hi`` weighted so that both groups
    lose the same -- the LP of :func:`_master_problem` in closed form. The
    iterates are those of :func:`_solve_cutting_plane`.

    Returns
    -------
    Same as :func:`_solve_cutting_plane`.
    """
    # w = 0 weights only the second group: its own PCA is the minimiser there.
    lo = (0.0, bases[1], _basis_losses(B, beta, bases[1]), float(beta[1] - own[1]))
    hi = (1.0, bases[0], _basis_losses(B, beta, bases[0]), float(beta[0] - own[0]))
    best = max((lo, hi), key=lambda point: point[3])
    converged = False
    for n_iter in range(1, max_iter + 1):
        slope_lo, slope_hi = lo[2][0] - lo[2][1], hi[2][0] - hi[2][1]
        if slope_lo <= 0 or slope_hi >= 0:
            # The maximum of g is at an end of [0, 1]: that end's projector alone.
            end = lo if slope_lo <= 0 else hi
            columns, mu, upper = [end[1]], np.ones(1), float(np.max(end[2]))
        else:
            # Crossing of l_lo(w) = L_lo[1] + w h_lo and l_hi(w) = L_hi[1] + w h_hi.
            w = (hi[2][1] - lo[2][1]) / (slope_lo - slope_hi)
            t = -slope_hi / (slope_lo - slope_hi)  # weight of P_lo equalising the losses
            columns, mu = [lo[1], hi[1]], np.array([t, 1.0 - t])
            upper = float(lo[2][1] + w * slope_lo)
        if _gap_closed(B, upper, best[3], tol, n_iter, log_level):
            converged = True
            break
        if len(columns) == 1:
            break  # pragma: no cover - an end's gap is zero up to rounding
        g, V, losses = _dual_value(B, beta, np.array([w, 1.0 - w]), d, exact=False)
        point = (w, V, losses, g)
        if g > best[3]:
            best = point
        if losses[0] - losses[1] > 0:
            lo = point
        else:
            hi = point
    return columns, mu, np.array([best[0], 1.0 - best[0]]), best[3], n_iter, converged


def _solve_multiplicative_weights(B, beta, d, eta, tol, max_iter, log_level):
    """The authors' multiplicative weights with a scale-free step and a duality-gap stop.

    ``w_a <- w_a exp(eta_t loss_a(P_t))`` with ``P_t`` the top-``d`` projector of
    ``sum_a w_a B_a`` and the anytime Hedge step
    ``eta_t = eta sqrt((ln k + 1) / t) / rho_t``, ``rho_t`` the largest
    ``|loss_a(P_s)|`` seen up to step ``t``: the step no longer depends on the
    units of the data. The fractional solution is the average of the ``P_t``.

    Memory does not grow with ``max_iter``: the bases ``V_t`` (p x d each) are
    kept until they hold ``p`` columns, then summed into the dense ``p x p``
    matrix ``sum_t V_t V_t^T`` (no larger than them), returned as one factor.

    Returns
    -------
    Same as :func:`_solve_cutting_plane`.
    """
    k, p = B.shape[0], B.shape[1]
    log_w = np.zeros(k)
    columns, loss_sum = [], np.zeros(k)
    projector_sum = None  # sum_t V_t V_t^T, once the columns would outgrow it
    w_best, g_best = np.full(k, 1.0 / k), -np.inf
    converged, rho = False, np.finfo(float).tiny
    for n_iter in range(1, max_iter + 1):
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        g, V, losses = _dual_value(B, beta, w, d, exact=False)
        if g > g_best:
            w_best, g_best = w, g
        if projector_sum is None and (len(columns) + 1) * d > p:
            stacked = np.hstack(columns) if columns else np.zeros((p, 0))
            projector_sum, columns = stacked @ stacked.T, []
        if projector_sum is None:
            columns.append(V)
        else:
            projector_sum += V @ V.T
        loss_sum += losses
        upper = float(np.max(loss_sum / n_iter))
        if _gap_closed(B, upper, g_best, tol, n_iter, log_level):
            converged = True
            break
        rho = max(rho, float(np.max(np.abs(losses))))
        log_w += eta * np.sqrt((np.log(k) + 1.0) / n_iter) * losses / rho
    if projector_sum is not None:
        # The average projector as one factor F (F F^T = sum_t V_t V_t^T / T).
        lam, U = np.linalg.eigh(projector_sum / n_iter)
        keep = lam > 0
        return [U[:, keep] * np.sqrt(lam[keep])], np.ones(1), w_best, g_best, n_iter, converged
    mu = np.full(len(columns), 1.0 / len(columns))
    return columns, mu, w_best, g_best, n_iter, converged


def _mixture_eigen(columns, mu, p):
    """Eigen-decomposition of ``sum_i mu_i V_i V_i^T`` without forming it when it is low rank.

    Returns
    -------
    U : ndarray of shape (p, r)
        Orthonormal eigenvectors with non-zero eigenvalue.
    lam : ndarray of shape (r,)
        Their eigenvalues, in [0, 1], decreasing.
    """
    W = np.hstack([np.sqrt(m) * V for m, V in zip(mu, columns, strict=True) if m > 0])
    if W.shape[1] < p:
        U, sv, _ = np.linalg.svd(W, full_matrices=False)
        lam = sv**2
    else:
        lam, U = np.linalg.eigh(W @ W.T)
        lam, U = lam[::-1], U[:, ::-1]
    # Only rounding-level eigenvalues are dropped: each moves a loss by at most lam * ||B_a||.
    keep = lam > 1e-13
    return U[:, keep], np.clip(lam[keep], 0.0, 1.0)


def _solve_sdp(B, beta, d, tol, sdp_solver):
    """The relaxation as an SDP in cvxpy; the multipliers give the dual point.

    Returns
    -------
    U : ndarray of shape (p, r)
    lam : ndarray of shape (r,)
        Eigen-decomposition of the solver's ``P`` made feasible (eigenvalues
        clipped to [0, 1], then scaled down if their sum exceeds ``d``).
    w : ndarray of shape (k,)
    n_iter : int
    """
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "MinMaxLossFairPCA(solver='sdp') requires cvxpy: pip install 'fairpca[sdp]'"
        ) from exc
    k, p, _ = B.shape
    # Unit-scale data: the solvers' tolerances are absolute.
    unit = max(float(np.max(np.trace(B, axis1=1, axis2=2))), np.finfo(float).tiny)
    P = cp.Variable((p, p), PSD=True)
    z = cp.Variable()
    loss_rows = [z >= (beta[a] - cp.sum(cp.multiply(B[a], P))) / unit for a in range(k)]
    problem = cp.Problem(cp.Minimize(z), [*loss_rows, P << np.eye(p), cp.trace(P) <= d])
    options = {"SCS": {"eps_abs": tol / 100, "eps_rel": tol / 100}}.get(sdp_solver.upper(), {})
    try:
        problem.solve(solver=sdp_solver.upper(), **options)
    except cp.error.SolverError as exc:
        raise ValueError(f"sdp_solver={sdp_solver!r} failed: {exc}") from exc
    if P.value is None:
        raise ValueError(
            f"sdp_solver={sdp_solver!r} returned no solution (status {problem.status})."
        )
    lam, U = np.linalg.eigh((P.value + P.value.T) / 2)
    lam, U = np.clip(lam[::-1], 0.0, 1.0), U[:, ::-1]
    if lam.sum() > d:
        lam *= d / lam.sum()
    w = np.array([max(float(np.asarray(row.dual_value).item()), 0.0) for row in loss_rows])
    w = w / w.sum() if w.sum() > 0 else np.full(k, 1.0 / k)
    n_iter = problem.solver_stats.num_iters or 0
    return U, lam, w, int(n_iter)


# ---------------------------------------------------------------------------
# the relaxation solved, rounded, and the nested variant
# ---------------------------------------------------------------------------


def _solve_relaxation(B, beta, d, params, log_level, targets=None):
    """Solve the relaxation with the estimator's solver.

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
    beta : ndarray of shape (k,)
        Offsets of the losses.
    d : int
    params : dict
        ``solver``, ``tol``, ``max_iter``, ``eta`` and ``sdp_solver`` of the estimator.
    log_level : int
    targets : tuple or None
        ``_group_targets(B, d)`` if already computed.

    Returns
    -------
    U : ndarray of shape (p, r)
    lam_hat : ndarray of shape (r,)
        Eigen-decomposition of the fractional solution ``P_hat``.
    w : ndarray of shape (k,)
        Dual point.
    g : float
        Dual value at ``w`` (a lower bound on the optimum).
    n_iter : int
    """
    if params["solver"] == "sdp":
        U, lam_hat, w, n_iter = _solve_sdp(B, beta, d, params["tol"], params["sdp_solver"])
        return U, lam_hat, w, _dual_value(B, beta, w, d)[0], n_iter
    if params["solver"] == "auto":
        own, bases = _group_targets(B, d) if targets is None else targets
        solve = _solve_two_groups if B.shape[0] == 2 else _solve_cutting_plane
        columns, mu, w, g, n_iter, _ = solve(
            B, beta, own, bases, d, params["tol"], params["max_iter"], log_level
        )
    else:
        columns, mu, w, g, n_iter, _ = _solve_multiplicative_weights(
            B, beta, d, params["eta"], params["tol"], params["max_iter"], log_level
        )
    U, lam_hat = _mixture_eigen(columns, mu, B.shape[1])
    # The reported bound from an exact eigen-decomposition (the loop may use Lanczos).
    return U, lam_hat, w, _dual_value(B, beta, w, d)[0], n_iter


def _round(B, beta, d, U, lam_hat, rounding):
    """The rounded map: components (rows), their scales (``None``: all one), group losses."""
    if rounding == "top-d":
        components = U[:, :d].T
        if components.shape[0] < d:
            # P_hat has fewer than d non-zero eigenvalues: complete the basis.
            components = _complete_basis(components, d)
        return components, None, _basis_losses(B, beta, components.T)
    if rounding == "lp":
        relaxed = float(np.max(_matrix_losses(B, beta, (U * lam_hat) @ U.T)))
        lam_bar, C = round_lp(B, beta, d, U, lam_hat, _gap_scale(B, relaxed))
        keep = lam_bar > 0
        U, lam_bar, losses = U[:, keep], lam_bar[keep], beta - C @ lam_bar
    else:
        U, lam_bar = round_extreme_point(B, beta, d, U, lam_hat)
        losses = beta - diagonal_captures(B, U) @ lam_bar
    # 1 - sqrt(1 - x) written without cancellation, so tiny lam_bar stay > 0.
    scales = lam_bar / (1.0 + np.sqrt(1.0 - lam_bar))
    return U.T, (None if np.all(scales == 1.0) else scales), losses


# ---------------------------------------------------------------------------
# estimator
# ---------------------------------------------------------------------------


@document_require_groups
class MinMaxLossFairPCA(FairPCABase):
    r"""Fair PCA minimising the largest average marginal loss over groups [Samadi2018]_.

    With the data centred on the pooled mean, group ``a``'s second moment
    ``B_a = A_a^T A_a / n_a`` and ``beta_a`` the sum of its top ``d``
    eigenvalues (what group ``a``'s own PCA would capture), the average
    marginal loss of a projection ``P`` is
    ``loss_a(P) = beta_a - <B_a, P>`` (:func:`fairpca.metrics.marginal_loss`).
    The method solves the relaxation

    .. math:: \min_{P, z}\ z \quad \text{s.t.}\quad z \ge \beta_a - \langle B_a, P\rangle
              \ (a = 1..k), \qquad 0 \preceq P \preceq I, \quad \operatorname{tr} P \le d,

    and rounds its solution ``P_hat = sum_j lam_hat_j u_j u_j^T`` without
    raising the objective, so the result is no worse than the best rank-``d``
    projection.

    **Rounding.** ``rounding="extreme-point"`` (default) is the iterative
    rounding of [Tantipongpipat2019]_ (their Theorem 1.5): ``P_hat`` moves
    inside the face of ``{0 <= P <= I}`` that contains it -- the fractional
    eigenspace may rotate, the eigenvalues 0 and 1 stay -- along directions
    that keep every tight loss row and the trace, lowering the objective
    where they can, until an eigenvalue reaches 0 or 1 or another row
    becomes tight. It stops at an extreme point of the optimal set, where
    ``s`` fractional eigenvalues leave ``s (s + 1) / 2`` degrees of freedom,
    at most the ``k`` rows that fix them: ``s (s + 1) / 2 <= k``. The
    eigenvalues sum to the integer ``d``, so ``s = 1`` cannot occur and the
    rank is at most ``d + floor(sqrt(2k + 1/4) - 3/2)``: **exactly ``d`` for
    two groups** (an orthogonal projection, scales all one), ``d + 1`` for
    three to five groups, ``d + 2`` for six to nine. ``rounding="lp"`` is the
    paper's LP (Algorithm 1, Theorem 5.2), kept to reproduce it: the
    eigenvectors ``u_j`` stay fixed and an extreme point ``lam_bar`` of

    .. math:: \min_{\lambda, z}\ z \quad\text{s.t.}\quad z \ge \beta_a -
              \sum_j \lambda_j\, u_j^T B_a u_j, \quad \sum_j \lambda_j \le d,
              \quad 0 \le \lambda \le 1

    has at most ``k`` fractional entries (rank at most ``d + k - 1``). With
    ``k = 2`` both give equal group losses (the paper's Theorem 4.5) unless a
    rank-``d`` projection with unequal losses is optimal.

    **Nested components** (``nested=True``, [Matakos2025]_). The ``r``-th
    component solves the rank-one problem left once the first ``r - 1`` are
    fixed: ``u_r`` minimises ``max_a [beta_a(r) - <B_a, U_{r-1} U_{r-1}^T> -
    u^T B_a u]`` over unit ``u`` orthogonal to ``U_{r-1}``, with
    ``beta_a(r)`` the sum of group ``a``'s top ``r`` eigenvalues: the same
    relaxation on the complement with trace one, rounded to an extreme point
    (:mod:`fairpca._minmax_nested`). For two groups that point has rank one,
    so the first component is the optimal rank-one fair projection and every
    prefix is optimal *given the earlier components* to the solver's
    tolerance. For ``k >= 3`` groups the rank-one problem is not convex and
    its relaxation need not be tight: the component is the best unit vector
    of the extreme point's span (at most two dimensions up to five groups,
    searched exactly), improved by a local descent over the unit sphere of
    the complement. Either way each prefix reports its objective
    (``prefix_objectives_``), the relaxation's certified lower bound
    (``prefix_bounds_``) and their difference (``prefix_gaps_``), which
    bounds how far the component is from the best unit vector. A prefix of
    ``r >= 2`` components is in general not the jointly optimal rank-``r``
    projection: ``prefix_objectives_`` is at least the joint optimum of each
    rank, and the difference is what nesting costs (measured in
    ``benchmarks/results.md``). As with PCA, fitting with
    ``n_components = r`` gives the first ``r`` rows of a larger fit.

    **Objective.** ``objective="variance"`` maximises the smallest group
    variance captured, ``min_a <B_a, P>`` (Tantipongpipat et al.'s max-min
    variance): the same machinery with ``beta_a = 0``, so ``group_losses_``
    and ``objective_`` then hold minus the captured variances.

    **The output map.** The returned map is ``x -> mean + (x - mean) P*`` with
    ``P* = sum_j lam*_j u_j u_j^T`` and ``lam*_j = 1 - sqrt(1 - lam_bar_j)``:
    ``components_`` are the ``u_j`` with ``lam_bar_j > 0`` and
    ``component_scales_`` the ``lam*_j``. The reconstruction error of a row is
    then ``<x x^T, (I - P*)^2>`` and ``(I - P*)^2 = I - sum_j lam_bar_j u_j
    u_j^T``, so each group's loss under the returned map equals its LP value
    ``beta_a - sum_j lam_bar_j u_j^T B_a u_j`` exactly: this is why the paper
    takes square roots, and why using ``lam_bar`` itself as scales would be
    wrong (it would give ``2 lam - lam^2`` instead of ``lam``). ``transform``
    gives the embedding ``((x - mean) u_j) sqrt(lam*_j)`` of the paper's proof.
    ``group_losses_`` and :func:`fairpca.metrics.marginal_loss` agree.

    **Solvers of the relaxation.** All of them report the duality gap
    ``gap_ = max_a loss_a(P_hat) - g(w)`` against the Lagrangian dual

    .. math:: g(w) = \sum_a w_a \beta_a - \sum_{j \le d}
              \lambda_j\Big(\sum_a w_a B_a\Big), \qquad w \in \Delta_k,

    which is a lower bound on the optimum for every ``w`` in the simplex
    (weak duality), so ``gap_ >= 0`` up to rounding and ``gap_`` bounds the
    distance of ``P_hat`` to optimality. They stop when ``gap_ <= tol *
    max(objective, 1e-6 * largest tr B_a)``.

    - ``"auto"`` (default): Kelley's cutting-plane method on the dual, i.e.
      column generation on the primal. Each iteration evaluates ``g`` at one
      ``w`` (one partial eigen-decomposition of ``sum_a w_a B_a``, giving the
      top-``d`` projector ``P_w`` whose losses are a supergradient) and solves
      a small LP over the projectors found so far; the LP's value is an upper
      bound (the max-loss of the mixture ``sum_i mu_i P_i``, a feasible
      ``P_hat``) and its multipliers the next ``w``. No SDP solver is needed
      and the certificate is exact. Chosen because the dual lives in ``k - 1``
      dimensions, where cutting planes are reliable: their model is exact on
      the kinks of ``g`` (which occur precisely when the optimum needs a
      mixture of projectors), and on smooth optima
      the gap still shrinks geometrically, where subgradient methods need
      ``O(1 / gap^2)`` steps.
    - ``"mw"``: the authors' multiplicative weights
      ``w_a <- w_a exp(eta_t loss_a(P_t))`` with ``P_t`` the top-``d``
      projector of ``sum_a w_a B_a``; ``P_hat`` is the average of the
      ``P_t``. The authors' step ``eta_t = eta`` depends on the units of the
      data (their ``eta = 1`` leaves the average tens of percent above the
      optimum after 100 steps on some problems); here
      ``eta_t = eta sqrt((ln k + 1) / t) / rho_t`` with ``rho_t`` the largest
      absolute loss seen so far (anytime Hedge), which at the defaults ends
      within 1 % of the optimum on the test problems. The gap still closes
      slowly (``O(1 / sqrt(T))``); a ``ConvergenceWarning`` says so.
    - ``"sdp"``: the relaxation in cvxpy (extra ``sdp``), solved by
      ``sdp_solver``; the dual point is taken from the solver's multipliers
      and ``g`` is evaluated exactly there. Practical up to ``p`` of about
      100 (SCS) or 50 (Clarabel).

    **Array-API input** (torch, CuPy under ``array_api_dispatch``). The moment
    pass runs on the input's device; the ``k`` moment matrices are then copied
    to the host once and solved in NumPy (the cutting planes need LAPACK's
    subset ``eigh`` and the rounding an LP, which the array API lacks), and
    the fitted arrays are moved back (:mod:`fairpca._array_api`).

    Parameters
    ----------
    n_components : int, default=2
        Target dimension ``d``. ``d = n_features`` is allowed: then ``P = I``
        is optimal and every loss is zero.
    objective : {"loss", "variance"}, default="loss"
        Minimise the largest marginal loss, or maximise the smallest captured
        variance; see above.
    solver : {"auto", "mw", "sdp"}, default="auto"
        Solver of the relaxation, see above.
    rounding : {"extreme-point", "lp", "top-d"}, default="extreme-point"
        ``"extreme-point"``: rank at most ``d + floor(sqrt(2k + 1/4) - 3/2)``
        (``d`` for two groups); ``"lp"``: the paper's rounding (rank at most
        ``d + k - 1``); both have an objective at most the relaxation's.
        ``"top-d"``: the top ``d`` eigenvectors of ``P_hat`` with scales one,
        an orthonormal rank-``d`` projection **without any guarantee** on its
        objective.
    nested : bool, default=False
        Build the components one at a time, see above.
    tol : float, default=1e-6
        Relative duality gap at which the solver stops.
    max_iter : int, default=100
        Iterations of ``"auto"`` (dual evaluations) or ``"mw"`` (``T``);
        ignored by ``"sdp"``.
    eta : float, default=1.0
        Multiplier of the scale-free step of the multiplicative weights
        (``"mw"`` only), see above.
    sdp_solver : str, default="SCS"
        cvxpy solver name for ``solver="sdp"``, e.g. ``"SCS"`` or
        ``"CLARABEL"``. SCS is run with ``eps_abs = eps_rel = tol / 100``.
    verbose : int, default=0
        If positive, progress is logged at INFO level (logger
        ``fairpca.minmax_loss``), otherwise at DEBUG.
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        Orthonormal rows ``u_j``: ``n_components`` of them for two groups
        (default rounding), at most the rank bound above otherwise. Sorted by
        explained variance, except with ``nested=True``: in prefix order.
    component_scales_ : ndarray of shape (n_components_,)
        ``lam*_j = 1 - sqrt(1 - lam_bar_j)`` in (0, 1] (all one when the
        rounding returns a projection).
    relaxed_projection_ : ndarray of shape (n_features, n_features) or None
        The fractional solution ``P_hat`` of the relaxation (``None`` with
        ``nested=True``).
    relaxed_objective_ : float or None
        ``max_a loss_a(P_hat)`` (``None`` with ``nested=True``).
    dual_weights_ : ndarray of shape (n_groups,) or None
        Best dual point ``w`` found (in the order of ``groups_``; ``None``
        with ``nested=True``).
    gap_ : float
        ``relaxed_objective_ - g(dual_weights_)``, non-negative up to rounding;
        with ``nested=True`` the largest of ``prefix_gaps_``.
    group_losses_ : ndarray of shape (n_groups,)
        Average marginal loss of each group under the returned map.
    objective_ : float
        ``max(group_losses_)``; at most ``relaxed_objective_`` unless
        ``rounding="top-d"``.
    prefix_objectives_ : ndarray of shape (n_components,) or None
        With ``nested=True``: the largest group loss of each prefix of the
        components; ``None`` otherwise.
    prefix_bounds_ : ndarray of shape (n_components,) or None
        With ``nested=True``: the dual lower bound of each prefix's rank-one
        problem (given the earlier components); ``None`` otherwise.
    prefix_gaps_ : ndarray of shape (n_components,) or None
        With ``nested=True``: ``prefix_objectives_ - prefix_bounds_``, how far
        each component can be from the best unit vector given the earlier
        ones (the solver's gap for two groups); ``None`` otherwise.
    n_iter_ : int
        Iterations of the solver.
    converged_ : bool
        Whether ``gap_`` reached ``tol`` (with ``nested=True``: whether every
        prefix's relaxation did; the rounding's part of ``prefix_gaps_`` is
        not the solver's).

    See :class:`fairpca.FairPCABase` for ``mean_``, ``explained_variance_``,
    ``groups_`` and the other common attributes.

    Notes
    -----
    A group with at most ``n_components`` rows spans at most that many
    dimensions around the pooled mean, so its own rank-``d`` error is zero and
    its loss is its whole reconstruction error: the method will spend
    dimensions on those few rows. A ``UserWarning`` says so. Singular group
    second moments need no special care (no matrix is inverted). If all groups
    have the same second moment, every loss of the common PCA is zero and
    PCA is returned.

    The problem depends on the data only through the group second moments
    ``B_a``, so ``fit`` also accepts Dask collections (one distributed pass over
    the rows) and ``partial_fit`` merges each chunk's moments exactly and solves
    again; after the last chunk the estimator equals ``fit`` on all rows.

    References
    ----------
    .. [Samadi2018] S. Samadi, U. Tantipongpipat, J. Morgenstern, M. Singh and
       S. Vempala. "The Price of Fair PCA: One Extra Dimension." NeurIPS 2018.
    .. [Tantipongpipat2019] U. Tantipongpipat, S. Samadi, M. Singh, J. Morgenstern
       and S. Vempala. "Multi-criteria Dimensionality Reduction with
       Applications to Fairness." NeurIPS 2019.
    .. [Matakos2025] A. Matakos, M. Ciaperoni and H. Mannila. "Fair PCA, One
       Component at a Time." arXiv:2503.21563, 2025.

    Examples
    --------
    >>> from fairpca import MinMaxLossFairPCA
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(n_samples=500, n_features=6, random_state=0)
    >>> est = MinMaxLossFairPCA(n_components=2).fit(X, sensitive_features=s)
    >>> est.n_components_, bool(est.converged_)
    (2, True)
    """

    #: Needs only the group moments: fits Dask input and has partial_fit.
    _moments_only = True
    _supports_array_api = True
    #: Dropped by compact() besides the groups' labels, counts and moments.
    _group_attributes = (
        *FairPCABase._group_attributes,
        "dual_weights_",
        "group_losses_",
        "relaxed_projection_",
    )

    def __init__(
        self,
        n_components: int | float = 2,
        *,
        objective: Literal["loss", "variance"] = "loss",
        solver: Literal["auto", "mw", "sdp"] = "auto",
        rounding: Literal["extreme-point", "lp", "top-d"] = "extreme-point",
        nested: bool = False,
        tol: float = 1e-6,
        max_iter: int = 100,
        eta: float = 1.0,
        sdp_solver: str = "SCS",
        verbose: int = 0,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.objective = objective
        self.solver = solver
        self.rounding = rounding
        self.nested = nested
        self.tol = tol
        self.max_iter = max_iter
        self.eta = eta
        self.sdp_solver = sdp_solver
        self.verbose = verbose
        self.require_groups = require_groups

    def _check_params(self):
        if self.objective not in ("loss", "variance"):
            raise ValueError(f"objective must be 'loss' or 'variance', got {self.objective!r}.")
        if self.solver not in ("auto", "mw", "sdp"):
            raise ValueError(f"solver must be 'auto', 'mw' or 'sdp', got {self.solver!r}.")
        if self.rounding not in ("extreme-point", "lp", "top-d"):
            raise ValueError(
                f"rounding must be 'extreme-point', 'lp' or 'top-d', got {self.rounding!r}."
            )
        if not isinstance(self.nested, bool | np.bool_):
            raise TypeError(f"nested must be True or False, got {self.nested!r}.")
        if self.nested and self.rounding != "extreme-point":
            raise ValueError(
                "nested=True builds each component by the extreme-point rounding of a rank-one "
                f"problem; rounding={self.rounding!r} does not apply (leave the default)."
            )
        check_number(self.tol, "tol", numbers.Real, minimum=0, include_boundaries="neither")
        check_number(self.max_iter, "max_iter", minimum=1)
        check_number(self.eta, "eta", numbers.Real, minimum=0, include_boundaries="neither")
        if not isinstance(self.sdp_solver, str):
            raise TypeError(f"sdp_solver must be a cvxpy solver name, got {self.sdp_solver!r}.")
        check_number(self.verbose, "verbose", minimum=0)

    def _fit_components(self, X, codes, moments, y, d):
        log_level = logging.INFO if self.verbose else logging.DEBUG
        small = [(g, int(c)) for g, c in zip(moments.groups, moments.counts, strict=True) if c <= d]
        if small:
            listed = ", ".join(f"{g!r} ({c} rows)" for g, c in small)
            warn(
                f"group(s) {listed} have at most n_components={d} rows: their own rank-{d} "
                "error is zero, so their loss is their whole reconstruction error and the "
                "fair projection will spend dimensions on fitting those rows exactly.",
                UserWarning,
            )
        k, p = len(moments.groups), moments.n_features
        if self.solver == "auto" and k > 2 and not self.nested:
            # Kelley's cutting planes keep every basis they generate (the LP mixes them).
            check_allocation(
                8.0 * p * d * (int(self.max_iter) + k),
                f"MinMaxLossFairPCA(solver='auto') with {k} groups keeps one {p} x {d} basis "
                f"per iteration: max_iter={self.max_iter} of them",
                "Lower max_iter (the solver usually stops on its duality gap far sooner).",
            )
        B = moments.second_moment(center="pooled")
        params = {
            "solver": self.solver,
            "tol": self.tol,
            "max_iter": self.max_iter,
            "eta": self.eta,
            "sdp_solver": self.sdp_solver,
        }
        if self.nested:
            return self._fit_nested(B, d, params, log_level)
        targets = _group_targets(B, d)
        beta = targets[0] if self.objective == "loss" else np.zeros(B.shape[0])
        U, lam_hat, w, g, n_iter = _solve_relaxation(B, beta, d, params, log_level, targets)
        P_hat = (U * lam_hat) @ U.T
        self.relaxed_projection_ = P_hat
        self.relaxed_objective_ = float(np.max(_matrix_losses(B, beta, P_hat)))
        self.dual_weights_ = w
        self.gap_ = self.relaxed_objective_ - g
        self.n_iter_ = n_iter
        self.converged_ = bool(self.gap_ <= self.tol * _gap_scale(B, self.relaxed_objective_))
        self.prefix_objectives_ = self.prefix_bounds_ = self.prefix_gaps_ = None
        if not self.converged_:
            self._warn_gap(self.gap_, _gap_scale(B, self.relaxed_objective_), n_iter)
        components, scales, self.group_losses_ = _round(B, beta, d, U, lam_hat, self.rounding)
        self.objective_ = float(np.max(self.group_losses_))
        logger.log(
            log_level,
            "relaxation %.10g (gap %.3g), rounded objective %.10g with %d components",
            self.relaxed_objective_,
            self.gap_,
            self.objective_,
            components.shape[0],
        )
        return components, scales

    def _ordered_components(self):
        # Nested components come prefix by prefix: sorting them would break the prefixes.
        return self.nested

    def _fit_nested(self, B, d, params, log_level):
        """``nested=True``: one rank-one min-max problem per prefix (:mod:`._minmax_nested`)."""
        own = np.array([np.cumsum(top_eigh(Ba, d)[0]) for Ba in B]).T
        targets = own if self.objective == "loss" else np.zeros_like(own)
        components, prefix_losses, relaxed, lower, _, n_iter = fit_nested(
            B, targets, lambda B_r, c: _solve_relaxation(B_r, c, 1, params, log_level)
        )
        self.prefix_objectives_ = prefix_losses.max(axis=1)
        self.prefix_bounds_ = lower
        self.prefix_gaps_ = self.prefix_objectives_ - lower
        self.group_losses_ = prefix_losses[-1]
        self.objective_ = float(self.prefix_objectives_[-1])
        self.relaxed_projection_ = self.relaxed_objective_ = self.dual_weights_ = None
        self.gap_ = float(np.max(self.prefix_gaps_))
        self.n_iter_ = n_iter
        # Converged: each relaxation solved to tol (with k >= 3 groups the rank-one rounding
        # may add a gap no solver can close; it stays in prefix_gaps_).
        solver_gaps = relaxed - lower
        scales = np.array([_gap_scale(B, value) for value in relaxed])
        worst = int(np.argmax(solver_gaps / scales))
        self.converged_ = bool(solver_gaps[worst] <= self.tol * scales[worst])
        if not self.converged_:
            self._warn_gap(solver_gaps[worst], scales[worst], n_iter)
        return components, None

    def _warn_gap(self, gap, scale, n_iter):
        warn(
            f"MinMaxLossFairPCA(solver={self.solver!r}) stopped after {n_iter} iteration(s) "
            f"with duality gap {gap:.3g} (relative {gap / scale:.3g} > tol={self.tol:g}); "
            "increase max_iter" + (" or tune eta" if self.solver == "mw" else "") + ".",
            ConvergenceWarning,
        )


def _complete_basis(rows, d):
    """Extend orthonormal rows (r, p) to ``d`` orthonormal rows."""
    p = rows.shape[1]
    q, _ = np.linalg.qr(np.vstack([rows, np.eye(p)]).T)
    return q[:, :d].T
