"""Fair PCA minimising the largest per-group marginal loss (Samadi et al., 2018).

Implements the method of [Samadi2018]_ for ``k >= 2`` groups: the semidefinite
relaxation of "minimise the largest average marginal loss over the groups",
solved exactly through its Lagrangian dual (default), by the authors'
multiplicative weights, or by a generic SDP solver, followed by the paper's
extreme-point LP rounding, which returns a projection of rank at most
``d + k - 1`` whose objective is no worse than the relaxation's (their
Algorithm 1 and Theorem 5.2).

References
----------
.. [Samadi2018] S. Samadi, U. Tantipongpipat, J. Morgenstern, M. Singh and
   S. Vempala. "The Price of Fair PCA: One Extra Dimension." NeurIPS 2018.
"""

import logging
import numbers

import numpy as np
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning

from fairpca._base import FairPCABase
from fairpca._linalg import top_eigh
from fairpca._validation import check_number
from fairpca._warnings import warn

__all__ = ["MinMaxLossFairPCA"]

logger = logging.getLogger(__name__)

#: Fraction of the largest group variance below which an objective counts as zero
#: when the duality gap is made relative (rounding noise in the losses is far smaller).
_SCALE_FLOOR = 1e-6

#: LP entries closer than this to 0 or 1 are set to 0 or 1.
_INTEGRALITY_TOL = 1e-10


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
    return beta - np.array([np.sum(V * (Ba @ V)) for Ba in B])


def _matrix_losses(B, beta, P):
    """Losses ``beta_a - <B_a, P>`` of a symmetric matrix ``P``, shape (k,)."""
    return beta - np.einsum("apq,pq->a", B, P)


def _dual_value(B, beta, w, d):
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

    Returns
    -------
    g : float
        Dual value.
    V : ndarray of shape (p, d)
        Top ``d`` eigenvectors of ``sum_a w_a B_a``; ``V V^T`` attains the minimum.
    losses : ndarray of shape (k,)
        Group losses of ``V V^T``: a supergradient of ``g`` at ``w``.
    """
    values, V = top_eigh(np.tensordot(w, B, axes=1), d)
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
    function over the simplex, and its value is that model's maximum.

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


def _solve_cutting_plane(B, beta, bases, d, tol, max_iter, log_level):
    """Maximise the dual function by Kelley's cutting planes (column generation).

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
    # At the vertex e_a of the simplex the minimiser is group a's own PCA (and g = 0).
    columns = list(bases)
    L = np.column_stack([_basis_losses(B, beta, V) for V in columns])
    w_best, g_best = np.full(k, 1.0 / k), 0.0
    unit = max(float(np.max(np.abs(L))), np.finfo(float).tiny)
    converged = False
    for n_iter in range(1, max_iter + 1):
        mu, w, upper = _master_problem(L, g_best, unit)
        if _gap_closed(B, upper, g_best, tol, n_iter, log_level):
            converged = True
            break
        unit = max(upper - g_best, np.finfo(float).tiny)
        g, V, losses = _dual_value(B, beta, w, d)
        if g > g_best:
            w_best, g_best = w, g
        columns.append(V)
        L = np.column_stack([L, losses])
    else:
        mu, _, _ = _master_problem(L, g_best, unit)
    return columns, mu, w_best, g_best, n_iter, converged


def _solve_multiplicative_weights(B, beta, d, eta, tol, max_iter, log_level):
    """The authors' multiplicative weights, with a duality-gap stop.

    ``w_a <- w_a exp(eta * loss_a(P_t))`` with ``P_t`` the top-``d`` projector of
    ``sum_a w_a B_a``; the fractional solution is the average of the ``P_t``.

    Returns
    -------
    Same as :func:`_solve_cutting_plane`.
    """
    k = B.shape[0]
    log_w = np.zeros(k)
    columns, loss_sum = [], np.zeros(k)
    w_best, g_best = np.full(k, 1.0 / k), -np.inf
    converged = False
    for n_iter in range(1, max_iter + 1):
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        g, V, losses = _dual_value(B, beta, w, d)
        if g > g_best:
            w_best, g_best = w, g
        columns.append(V)
        loss_sum += losses
        upper = float(np.max(loss_sum / n_iter))
        if _gap_closed(B, upper, g_best, tol, n_iter, log_level):
            converged = True
            break
        log_w += eta * losses
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
# rounding
# ---------------------------------------------------------------------------


def _to_vertex(C, beta, d, lam):
    """Move an optimal LP point to a vertex without raising its objective.

    The LP is ``min_{lam, z} z`` subject to ``z >= beta_a - C[a] @ lam``,
    ``sum(lam) <= d`` and ``0 <= lam <= 1``. While the fractional entries and
    ``z`` have more degrees of freedom than the tight constraints fix, a null
    direction exists; following it (in the sense that does not raise ``z``)
    until another constraint becomes tight fixes one more entry at 0 or 1 or
    tightens one more row. At the end at most ``k`` entries are fractional. A
    vertex returned by the simplex method is left unchanged.

    Parameters
    ----------
    C : ndarray of shape (k, r)
        ``C[a, j] = u_j^T B_a u_j``.
    beta : ndarray of shape (k,)
    d : int
    lam : ndarray of shape (r,)
        An optimal (or nearly optimal) feasible point.

    Returns
    -------
    lam : ndarray of shape (r,)
        Entries exactly 0 or 1 except at most ``k``.
    """
    lam = np.clip(lam, 0.0, 1.0)
    # Losses in units of the largest C entry: the null directions below mix C with the
    # unit coefficients of z and of the trace, so both must be of order one.
    scale = max(float(np.max(np.abs(C))), np.finfo(float).tiny)
    C, beta = C / scale, beta / scale
    for _ in range(2 * lam.size + C.shape[0] + 1):
        lam[lam < _INTEGRALITY_TOL] = 0.0
        lam[lam > 1 - _INTEGRALITY_TOL] = 1.0
        free = np.flatnonzero((lam > 0) & (lam < 1))
        losses = beta - C @ lam
        z = losses.max()
        tight = losses >= z - 1e-12 * max(1.0, lam.sum())
        trace_tight = lam.sum() >= d - 1e-12 * d
        # Unknowns (delta_free, delta_z); rows keep tight loss rows tight and the trace.
        rows = [np.append(-C[a, free], -1.0) for a in np.flatnonzero(tight)]
        if trace_tight:
            rows.append(np.append(np.ones(free.size), 0.0))
        if free.size + 1 <= len(rows):
            return lam
        _, _, vt = np.linalg.svd(np.array(rows).reshape(len(rows), free.size + 1))
        direction = vt[-1]
        if direction[-1] > 0:
            direction = -direction
        step_free, step_z = direction[:-1], direction[-1]
        # Largest step keeping bounds, slack rows and a slack trace feasible.
        with np.errstate(divide="ignore", invalid="ignore"):
            to_upper = np.where(step_free > 0, (1 - lam[free]) / step_free, np.inf)
            to_lower = np.where(step_free < 0, -lam[free] / step_free, np.inf)
            slack_rate = -C[:, free] @ step_free - step_z
            to_rows = np.where(~tight & (slack_rate > 0), (z - losses) / slack_rate, np.inf)
            trace_rate = step_free.sum()
            to_trace = (
                (d - lam.sum()) / trace_rate if not trace_tight and trace_rate > 0 else np.inf
            )
        step = min(
            to_upper.min(initial=np.inf),
            to_lower.min(initial=np.inf),
            to_rows.min(initial=np.inf),
            to_trace,
        )
        if not np.isfinite(step):  # pragma: no cover - the feasible set is bounded
            return lam
        lam[free] = np.clip(lam[free] + step * step_free, 0.0, 1.0)
    return lam  # pragma: no cover - each pass tightens one more constraint


def _round_exact(B, beta, d, U, lam_hat):
    """The paper's LP rounding of a fractional solution ``U diag(lam_hat) U^T``.

    Returns
    -------
    lam_bar : ndarray of shape (r,)
        Extreme point of the LP; at most ``k`` entries strictly inside (0, 1).
    C : ndarray of shape (k, r)
        ``C[a, j] = u_j^T B_a u_j``; the group losses are ``beta - C @ lam_bar``.
    """
    k, r = B.shape[0], U.shape[1]
    C = np.array([np.sum(U * (Ba @ U), axis=0) for Ba in B])
    relaxed = float(np.max(beta - C @ lam_hat))
    unit = _gap_scale(B, relaxed)
    # Rows divided by the objective's scale: HiGHS's tolerances are absolute.
    res = linprog(
        np.append(np.zeros(r), 1.0),
        A_ub=np.vstack([np.hstack([-C / unit, -np.ones((k, 1))]), np.append(np.ones(r), 0.0)]),
        b_ub=np.append(-beta / unit, d),
        bounds=[(0.0, 1.0)] * r + [(None, None)],
        method="highs-ds",
    )
    if res.status != 0:  # pragma: no cover - lam_hat is feasible, the LP is bounded
        raise RuntimeError(f"the rounding LP failed: {res.message}")
    lam_bar = _to_vertex(C, beta, d, res.x[:r])
    if np.max(beta - C @ lam_bar) > relaxed:
        # Only possible through the LP's tolerances; lam_hat itself is feasible.
        lam_bar = _to_vertex(C, beta, d, lam_hat.copy())
    return lam_bar, C


# ---------------------------------------------------------------------------
# estimator
# ---------------------------------------------------------------------------


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

    and rounds its solution ``P_hat = sum_j lam_hat_j u_j u_j^T`` by the
    paper's LP (Algorithm 1, Theorem 5.2): an extreme point ``lam_bar`` of

    .. math:: \min_{\lambda, z}\ z \quad\text{s.t.}\quad z \ge \beta_a -
              \sum_j \lambda_j\, u_j^T B_a u_j, \quad \sum_j \lambda_j \le d,
              \quad 0 \le \lambda \le 1

    has at most ``k`` fractional entries, so the output has rank at most
    ``d + k - 1`` and an objective no larger than the relaxation's (hence
    no larger than the best rank-``d`` projection's). With ``k = 2`` the two
    group losses are then equal (the paper's Theorem 4.5) unless a rank-``d``
    projection is optimal.

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
      mixture of projectors, the rank ``d + 1`` case), and on smooth optima
      the gap still shrinks geometrically, where subgradient methods need
      ``O(1 / gap^2)`` steps.
    - ``"mw"``: the authors' multiplicative weights
      ``w_a <- w_a exp(eta loss_a(P_t))`` with ``P_t`` the top-``d`` projector
      of ``sum_a w_a B_a``; ``P_hat`` is the average of the ``P_t``. The
      authors used ``eta = 1`` and 10 iterations on Default credit and
      ``eta = 20 / d`` and 5 iterations on LFW, which leaves gaps far above
      1e-6; a ``ConvergenceWarning`` says so.
    - ``"sdp"``: the relaxation in cvxpy (extra ``sdp``), solved by
      ``sdp_solver``; the dual point is taken from the solver's multipliers
      and ``g`` is evaluated exactly there. Practical up to ``p`` of about
      100 (SCS) or 50 (Clarabel).

    Parameters
    ----------
    n_components : int, default=2
        Target dimension ``d``. ``d = n_features`` is allowed: then ``P = I``
        is optimal and every loss is zero.
    solver : {"auto", "mw", "sdp"}, default="auto"
        Solver of the relaxation, see above.
    rounding : {"exact", "top-d"}, default="exact"
        ``"exact"``: the LP rounding (rank at most ``d + k - 1``, objective at
        most the relaxation's). ``"top-d"``: the top ``d`` eigenvectors of
        ``P_hat`` with scales one, an orthonormal rank-``d`` projection
        **without any guarantee** on its objective.
    tol : float, default=1e-6
        Relative duality gap at which the solver stops.
    max_iter : int, default=100
        Iterations of ``"auto"`` (dual evaluations) or ``"mw"`` (``T``);
        ignored by ``"sdp"``.
    eta : float, default=1.0
        Step of the multiplicative weights (``"mw"`` only).
    sdp_solver : str, default="SCS"
        cvxpy solver name for ``solver="sdp"``, e.g. ``"SCS"`` or
        ``"CLARABEL"``. SCS is run with ``eps_abs = eps_rel = tol / 100``.
    verbose : int, default=0
        If positive, progress is logged at INFO level (logger
        ``fairpca.minmax_loss``), otherwise at DEBUG.

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        Orthonormal rows ``u_j``, at most ``n_components + k - 1`` of them.
    component_scales_ : ndarray of shape (n_components_,)
        ``lam*_j = 1 - sqrt(1 - lam_bar_j)`` in (0, 1].
    relaxed_projection_ : ndarray of shape (n_features, n_features)
        The fractional solution ``P_hat`` of the relaxation.
    relaxed_objective_ : float
        ``max_a loss_a(P_hat)``.
    dual_weights_ : ndarray of shape (n_groups,)
        Best dual point ``w`` found (in the order of ``groups_``).
    gap_ : float
        ``relaxed_objective_ - g(dual_weights_)``; non-negative up to rounding.
    group_losses_ : ndarray of shape (n_groups,)
        Average marginal loss of each group under the returned map.
    objective_ : float
        ``max(group_losses_)``; at most ``relaxed_objective_`` with
        ``rounding="exact"``.
    n_iter_ : int
        Iterations of the solver.
    converged_ : bool
        Whether ``gap_`` reached ``tol``.

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

    Examples
    --------
    >>> from fairpca import MinMaxLossFairPCA
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(n_samples=500, n_features=6, random_state=0)
    >>> est = MinMaxLossFairPCA(n_components=2).fit(X, sensitive_features=s)
    >>> est.n_components_ <= 3, bool(est.converged_)
    (True, True)
    """

    #: Needs only the group moments: fits Dask input and has partial_fit.
    _moments_only = True

    def __init__(
        self,
        n_components=2,
        *,
        solver="auto",
        rounding="exact",
        tol=1e-6,
        max_iter=100,
        eta=1.0,
        sdp_solver="SCS",
        verbose=0,
    ):
        self.n_components = n_components
        self.solver = solver
        self.rounding = rounding
        self.tol = tol
        self.max_iter = max_iter
        self.eta = eta
        self.sdp_solver = sdp_solver
        self.verbose = verbose

    def _check_params(self):
        if self.solver not in ("auto", "mw", "sdp"):
            raise ValueError(f"solver must be 'auto', 'mw' or 'sdp', got {self.solver!r}.")
        if self.rounding not in ("exact", "top-d"):
            raise ValueError(f"rounding must be 'exact' or 'top-d', got {self.rounding!r}.")
        check_number(self.tol, "tol", numbers.Real, minimum=0, include_boundaries="neither")
        check_number(self.max_iter, "max_iter", minimum=1)
        check_number(self.eta, "eta", numbers.Real, minimum=0, include_boundaries="neither")
        if not isinstance(self.sdp_solver, str):
            raise TypeError(f"sdp_solver must be a cvxpy solver name, got {self.sdp_solver!r}.")
        check_number(self.verbose, "verbose", minimum=0)

    def _fit_components(self, X, codes, moments, y, d):
        p = moments.n_features
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
        B = moments.second_moment(center="pooled")
        beta, bases = _group_targets(B, d)

        if self.solver == "sdp":
            U, lam_hat, w, n_iter = _solve_sdp(B, beta, d, self.tol, self.sdp_solver)
            g = _dual_value(B, beta, w, d)[0]
        else:
            if self.solver == "auto":
                columns, mu, w, g, n_iter, _ = _solve_cutting_plane(
                    B, beta, bases, d, self.tol, self.max_iter, log_level
                )
            else:
                columns, mu, w, g, n_iter, _ = _solve_multiplicative_weights(
                    B, beta, d, self.eta, self.tol, self.max_iter, log_level
                )
            U, lam_hat = _mixture_eigen(columns, mu, p)
        P_hat = (U * lam_hat) @ U.T
        self.relaxed_projection_ = P_hat
        self.relaxed_objective_ = float(np.max(_matrix_losses(B, beta, P_hat)))
        self.dual_weights_ = w
        self.gap_ = self.relaxed_objective_ - g
        self.n_iter_ = n_iter
        self.converged_ = bool(self.gap_ <= self.tol * _gap_scale(B, self.relaxed_objective_))
        if not self.converged_:
            warn(
                f"MinMaxLossFairPCA(solver={self.solver!r}) stopped after {n_iter} iteration(s) "
                f"with duality gap {self.gap_:.3g} (relative "
                f"{self.gap_ / _gap_scale(B, self.relaxed_objective_):.3g} > tol={self.tol:g}); "
                "increase max_iter" + (" or tune eta" if self.solver == "mw" else "") + ".",
                ConvergenceWarning,
            )

        if self.rounding == "exact":
            lam_bar, C = _round_exact(B, beta, d, U, lam_hat)
            keep = lam_bar > 0
            # 1 - sqrt(1 - x) written without cancellation, so tiny lam_bar stay > 0.
            components, scales = U[:, keep].T, lam_bar[keep] / (1.0 + np.sqrt(1.0 - lam_bar[keep]))
            self.group_losses_ = beta - C @ lam_bar
        else:
            components, scales = U[:, :d].T, None
            if components.shape[0] < d:
                # P_hat has fewer than d non-zero eigenvalues: complete the basis.
                components = _complete_basis(components, d)
            self.group_losses_ = _basis_losses(B, beta, components.T)
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


def _complete_basis(rows, d):
    """Extend orthonormal rows (r, p) to ``d`` orthonormal rows."""
    p = rows.shape[1]
    q, _ = np.linalg.qr(np.vstack([rows, np.eye(p)]).T)
    return q[:, :d].T
