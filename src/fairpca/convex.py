"""Fair PCA as a semidefinite program (Olfat & Aswani, 2019), solved with open-source solvers.

Implements FPCA of [Olfat2019]_ in the form the MMD fair-PCA paper ran it as
its baseline ([Lee2022]_, supplementary appendix B): a convex relaxation of
PCA over ``P = V V^T`` whose constraints ask the projected groups to have
(nearly) equal means and covariances. The authors' code needed a commercial
MOSEK licence; here the SDP goes through cvxpy to SCS (default) or Clarabel.

Two reformulations make it fast without changing the problem: every matrix
is written in the eigenbasis of the (first pair's) covariance difference,
where its LMIs couple each entry of ``P`` to a single entry of the block (so
the solver's linear system stays sparse), and with ``delta = 0`` the mean constraint is
imposed exactly by solving in the orthogonal complement of the group mean
differences.

References
----------
.. [Olfat2019] M. Olfat and A. Aswani. "Convex Formulations for Fair Principal
   Component Analysis." AAAI 2019, 663-670.
.. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
   "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
   Manifold." AAAI 2022, supplementary appendix B.
"""

from __future__ import annotations

import logging
import numbers
import time
import warnings
from typing import Literal

import numpy as np
from scipy import sparse
from sklearn.exceptions import ConvergenceWarning

from fairpca._base import FairPCABase
from fairpca._config import document_require_groups
from fairpca._fantope_admm import NoFeasiblePointError
from fairpca._fantope_constraints import _ADMM_COPIES as _ADMM_COPIES  # the budget's count
from fairpca._fantope_constraints import CovarianceLMIs, MeanConstraints
from fairpca._fantope_subspaces import solve_fpca_sdp
from fairpca._linalg import row_space
from fairpca._validation import MAX_DENSE_MOMENT_BYTES, check_number
from fairpca._warnings import warn

__all__ = ["ConvexFairPCA"]

logger = logging.getLogger(__name__)

#: cvxpy solvers accepted, and how ``tol`` and ``max_iter`` map to their options.
_SOLVER_OPTIONS = {
    "ADMM": None,
    "SCS": lambda tol, max_iter: {"eps_abs": tol, "eps_rel": tol, "max_iters": max_iter},
    "CLARABEL": lambda tol, max_iter: {
        "tol_gap_abs": tol,
        "tol_gap_rel": tol,
        "tol_feas": tol,
        "max_iter": max_iter,
    },
}


def _lmi_sizes(q, factors):
    """Sizes of the LMI blocks of the SDP in ``q`` coordinates: ``q`` plus each factor's rows."""
    return CovarianceLMIs.block_sizes(q, factors)


def _check_lmi_work(q, factors, max_features, n_groups):
    """Refuse an SDP whose LMI blocks cost more per iteration than two groups at ``max_features``.

    Each iteration eigendecomposes every LMI block (``k (k - 1)`` of them for
    ``k`` groups, of size ``q`` plus the rank of a covariance difference), so
    its cost is about ``sum_b size_b^3``. ``max_features`` bounds ``p`` for two
    groups; with more groups the same bound applies to the equivalent
    two-group size ``(sum_b size_b^3 / 2)^(1/3)``.
    """
    sizes = _lmi_sizes(q, factors)
    if max_features is None or len(sizes) <= 2:
        return
    equivalent = (sum(float(b) ** 3 for b in sizes) / 2) ** (1 / 3)
    if equivalent > max_features:
        raise ValueError(
            f"ConvexFairPCA: {n_groups} groups give {len(sizes)} covariance LMI blocks of up to "
            f"{max(sizes)} x {max(sizes)}; each solver iteration costs as much as two groups at "
            f"{equivalent:.0f} features, more than max_features={max_features}. Use fewer "
            "features, constraints='mean' (no covariance blocks), or max_features=None to run "
            "anyway."
        )


#: Accuracy of the eigenvalues of the solution P*, per unit of the solver's relative
#: tolerance r. Measured against P* at tol / 1000 or below: the ADMM's eigenvalues
#: (and P* itself, in spectral norm) moved by at most 2 r on the 20 splits of Lee et
#: al.'s German credit and COMPAS protocols (d = 2, delta = 0.1); SCS's by at most 16 r
#: (German credit splits 0-2, delta = 0, r = 1e-5 and 1e-6; P* itself up to 420 r,
#: within near-tied eigenspaces).
_EIGEN_ACCURACY = 50


def _memory_needs(n_features, n_groups, covariances, mean_constraints):
    """Bytes of each array of the fit that grows with the number of groups, at most.

    Parameters
    ----------
    n_features : int
        ``p``.
    n_groups : int
        ``k``; the constraints are pairwise, for ``k (k - 1) / 2`` pairs.
    covariances : bool
        Whether the covariance LMIs are built (``constraints="both"``).
    mean_constraints : bool
        Whether the mean differences are constraints of the solver (``delta > 0``)
        rather than removed from the coordinates.

    Returns
    -------
    needs : list of (str, int)
        What is allocated and its size in bytes, counted before any of it is:
        the pair indices and mean differences (``n_pairs x p``); with
        ``mean_constraints`` the ``n_pairs x n_pairs`` system of the ADMM's
        normal equations; with ``covariances`` the group covariances
        (``k p^2``), their pairwise differences (``n_pairs p^2``) and the two
        LMI factors of each pair with the solver's iterates of their size
        (:data:`_ADMM_COPIES` ``x 2 n_pairs p^2``: a factor has at most ``p``
        rows).
    """
    p, k = int(n_features), int(n_groups)
    pairs = k * (k - 1) // 2
    needs = [("pairwise mean differences", 8 * pairs * (p + 2))]
    if mean_constraints:
        needs += MeanConstraints.memory_needs(p, pairs)
    if covariances:
        needs += [("group covariances", 8 * k * p * p)]
        needs += CovarianceLMIs.memory_needs(p, pairs)
    return needs


def _check_memory(n_features, n_groups, covariances, mean_constraints):
    """Refuse, before allocating them, pairwise arrays beyond :data:`MAX_DENSE_MOMENT_BYTES`.

    Raises
    ------
    ValueError
        Naming the number of groups and pairs, the largest array and the total
        memory, if :func:`_memory_needs` sum to more than the budget.
    """
    needs = _memory_needs(n_features, n_groups, covariances, mean_constraints)
    total = sum(size for _, size in needs)
    if total <= MAX_DENSE_MOMENT_BYTES:
        return
    what, largest = max(needs, key=lambda need: need[1])
    pairs = n_groups * (n_groups - 1) // 2
    raise ValueError(
        f"ConvexFairPCA: {n_groups} groups (n_groups) give {pairs} pairs of groups, each "
        f"with its own constraints; at {n_features} features the arrays of those pairs "
        f"would need up to {total / 2**30:.3g} GiB ({what}: {largest / 2**30:.3g} GiB), more "
        f"than the budget of {MAX_DENSE_MOMENT_BYTES / 2**30:.3g} GiB "
        "(fairpca._validation.MAX_DENSE_MOMENT_BYTES). Merge small groups, use fewer "
        "features, or constraints='mean' with delta=0 (no covariance blocks, no pairwise "
        "constraints in the solver)."
    )


#: Largest SDP (matrix entries of P and of every LMI block) handed to SCS when the
#: ADMM stops short of its tolerance.
_MAX_SCS_FALLBACK_SIZE = 200_000


def _sdp_size(q, factors):
    """Matrix entries of the SDP in ``q`` coordinates: ``P`` and each LMI block."""
    return q * q + sum(b * b for b in _lmi_sizes(q, factors))


def _import_cvxpy():
    try:
        import cvxpy
    except ImportError as exc:
        raise ImportError("ConvexFairPCA requires cvxpy: pip install 'fairpca[sdp]'") from exc
    return cvxpy


# ---------------------------------------------------------------------------
# the problem data
# ---------------------------------------------------------------------------


def _scaled_covariance(moments, objective_scale="paper", scale=1.0):
    """Objective matrix: the original code's ``X^T X / (n ||X||_F)``, or its size-free form.

    Parameters
    ----------
    moments : GroupMoments
        Group moments of the training data.
    objective_scale : {"paper", "size_free"}, default="paper"
        See :class:`ConvexFairPCA`.
    scale : float, default=1.0
        The data's scale ``c`` (:func:`_data_scale`): the matrix is that of
        ``X / c``, i.e. ``S / c``.

    Returns
    -------
    S : ndarray of shape (n_features, n_features)
        ``Sigma / sqrt(n tr Sigma)`` with ``Sigma`` the pooled covariance
        (divisor ``n``) of ``X / c``, since ``||X||_F^2 = n tr Sigma``;
        ``Sigma / sqrt(tr Sigma)`` for ``"size_free"``. Zero for constant data.
    """
    sigma = moments.covariance() / scale**2
    rows = moments.n_samples if objective_scale == "paper" else 1.0
    norm = np.sqrt(rows * np.trace(sigma))
    return sigma / norm if norm > 0 else sigma


def _data_scale(moments):
    r"""The power of two ``c`` nearest to the data's RMS spread ``sqrt(tr Sigma / p)``.

    The SDP is homogeneous in the data: for ``X / c`` the objective matrix is
    ``S / c``, the mean differences ``f / c`` and the covariance differences
    ``Q / c^2``, so that

    .. math::

        \langle S, P\rangle - \mu \sum \lambda_{\max}(P G P)
        = c \Big(\langle S/c, P\rangle - (\mu c) \sum \lambda_{\max}(P\, G/c^2\, P)\Big),
        \qquad f^T P f \le \delta^2 \iff (f/c)^T P (f/c) \le (\delta / c)^2 :

    the problem of ``X`` with ``(mu, delta)`` has the same solutions ``P`` as
    that of ``X / c`` with ``(mu c, delta / c)``, and ``c`` times its
    objective. Solving the latter keeps every product of the solvers (the
    squares of the LMI factors, ``F^T F`` of order ``Q``) near 1, where
    ``X * 1e100`` overflowed. A power of two divides exactly, and it is 1 for
    standardised data (spread between ``2^-1/2`` and ``2^1/2``), whose
    problem is then unchanged to the last bit.
    """
    spread = np.trace(moments.covariance()) / moments.n_features
    if not np.isfinite(spread) or spread <= 0:
        return 1.0
    return float(2.0 ** np.round(0.5 * np.log2(spread)))


def _pairwise_differences(moments, covariances, scale=1.0):
    """Mean and covariance differences of every pair of groups, of ``X / scale``.

    Parameters
    ----------
    moments : GroupMoments
        Group moments.
    covariances : bool
        Whether to compute the covariance differences.
    scale : float, default=1.0
        The data's scale ``c`` (:func:`_data_scale`).

    Returns
    -------
    mean_diffs : ndarray of shape (n_pairs, n_features)
        ``(mu_b - mu_a) / c`` for the pairs ``a < b`` in
        :func:`itertools.combinations` order.
    cov_diffs : list of ndarray of shape (n_features, n_features)
        ``(Sigma_b - Sigma_a) / c^2``, each group's covariance about its own
        mean (divisor ``n_a``); empty when ``covariances`` is False.
    """
    # Row-major upper triangle: the pairs in combinations order, as two index arrays.
    first, second = np.triu_indices(moments.n_groups, 1)
    means = moments.means / scale
    mean_diffs = means[second] - means[first]
    # Differences at rounding level of the data's spread are no difference: with
    # delta = 0 they would otherwise remove a direction for nothing.
    spread = np.sqrt(np.trace(moments.covariance()) / scale**2)
    mean_diffs[np.linalg.norm(mean_diffs, axis=1) <= 1e-12 * spread] = 0.0
    if not covariances:
        return mean_diffs, []
    covs = moments.second_moment(center="group") / scale**2
    return mean_diffs, [covs[b] - covs[a] for a, b in zip(first, second, strict=True)]


def _lmi_factors(Q, basis, eigen=None):
    """Factors ``F`` of the two covariance LMIs of one pair, in ``basis`` coordinates.

    With ``c+ = max(0, -lambda_min(Q))`` and ``c- = max(0, lambda_max(Q))``
    (eigenvalues of the full ``Q``), returns ``F+`` and ``F-`` with
    ``F+^T F+ = B^T (Q + c+ I) B`` and ``F-^T F- = B^T (c- I - Q) B``,
    ``F = diag(sqrt(weights)) W^T`` from ``B^T Q B = W diag(L) W^T``. Rows of
    zero weight are dropped: they add nothing to ``F^T F`` and each costs a
    row and column of the LMI.

    Parameters
    ----------
    Q : ndarray of shape (p, p)
        Covariance difference.
    basis : ndarray of shape (p, q)
        Orthonormal columns ``B``.
    eigen : tuple (L, None), optional
        Eigenvalues of ``B^T Q B`` when it is already diagonal, so that ``W = I``
        and the factors are diagonal (sparse).

    Returns
    -------
    factors : list of (scipy.sparse.csr_matrix of shape (m, q), m <= q, or None)
        ``[F+, F-]``; None for a factor without rows (its LMI holds with ``t = 0``).
    """
    spectrum = np.linalg.eigvalsh(Q)
    c_plus, c_minus = max(0.0, -spectrum[0]), max(0.0, spectrum[-1])
    if eigen is None:
        L, W = np.linalg.eigh(basis.T @ Q @ basis)
    else:
        L, W = eigen[0], None
    # Below this a weight is rounding noise of the shift by c+ or c-.
    floor = 1e-12 * max(np.abs(spectrum).max(), np.finfo(float).tiny)
    factors = []
    for weights in (L + c_plus, c_minus - L):
        keep = np.flatnonzero(weights > floor)
        if keep.size == 0:
            factors.append(None)
            continue
        root = np.sqrt(weights[keep])
        if W is None:
            F = sparse.csr_matrix((root, (np.arange(keep.size), keep)), shape=(keep.size, L.size))
        else:
            F = sparse.csr_matrix(root[:, None] * W[:, keep].T)
        factors.append(F)
    return factors


def _working_basis(mean_diffs, cov_diffs, delta):
    """Coordinates in which the SDP is solved, and the LMI factors in them.

    With ``delta = 0`` the columns span the orthogonal complement of the mean
    differences (so ``P f = 0`` holds exactly for ``P = B P' B^T``); with
    covariance constraints they are also eigenvectors of the first pair's
    projected covariance difference, so its LMI factors are diagonal.

    Returns
    -------
    basis : ndarray of shape (p, q)
        Orthonormal columns ``B``.
    factors : list of list of (scipy.sparse.csr_matrix or None)
        For each pair, its LMI factors ``[F+, F-]`` in ``B`` coordinates.
    """
    p = mean_diffs.shape[1]
    basis = row_space(mean_diffs)[1] if delta == 0 else np.eye(p)
    if not cov_diffs:
        return basis, []
    first, rest = cov_diffs[0], cov_diffs[1:]
    L, W = np.linalg.eigh(basis.T @ first @ basis)
    basis = basis @ W
    factors = [_lmi_factors(first, basis, eigen=(L, None))]
    factors += [_lmi_factors(Q, basis) for Q in rest]
    return basis, factors


# ---------------------------------------------------------------------------
# the SDP
# ---------------------------------------------------------------------------


def _solve_sdp(S, mean_vectors, factors, d, mu, delta, solver, tol, max_iter, verbose):
    """Solve the FPCA SDP in working coordinates.

    Parameters
    ----------
    S : ndarray of shape (q, q)
        Objective matrix.
    mean_vectors : ndarray of shape (n_pairs, q) or None
        Mean differences for the constraints ``g^T P g <= delta^2`` (None when
        the mean constraint is already exact by the choice of coordinates).
    factors : list of list of (sparse matrix or None)
        ``[F+, F-]`` of each pair (empty without covariance constraints).
    d : int
        Trace of ``P``.
    mu, delta : float
        Covariance penalty and mean tolerance.
    solver : {"SCS", "CLARABEL"}
        cvxpy solver.
    tol : float
        Solver tolerance.
    max_iter : int
        Solver iteration limit.
    verbose : bool
        Let cvxpy and the solver print their logs.

    Returns
    -------
    P : ndarray of shape (q, q) or None
        Solution (None when the solver returned none).
    bounds : ndarray of shape (n_pairs, 2)
        Optimal ``t`` of each LMI (0 where a factor is None).
    problem : cvxpy.Problem
        The solved problem (status, value, solver statistics).
    """
    cp = _import_cvxpy()
    q = S.shape[0]
    P = cp.Variable((q, q), PSD=True)
    constraints = [cp.trace(P) == d, np.eye(q) - P >> 0]
    if mean_vectors is not None:
        constraints += [cp.sum(cp.multiply(np.outer(g, g), P)) <= delta**2 for g in mean_vectors]
    t = cp.Variable((len(factors), 2), nonneg=True) if factors else None
    for a, pair in enumerate(factors):
        for b, F in enumerate(pair):
            if F is None:
                constraints.append(t[a, b] == 0)
                continue
            FP = F @ P
            block = cp.bmat([[t[a, b] * sparse.eye(q), FP.T], [FP, np.eye(F.shape[0])]])
            constraints.append(block >> 0)
    objective = cp.sum(cp.multiply(S, P))
    if t is not None:
        objective = objective - mu * cp.sum(t)
    problem = cp.Problem(cp.Maximize(objective), constraints)
    try:
        with warnings.catch_warnings():
            # cvxpy's generic note; the caller warns with the solver's residuals instead.
            warnings.filterwarnings(
                "ignore", message="Solution may be inaccurate", category=UserWarning
            )
            problem.solve(solver=solver, verbose=verbose, **_SOLVER_OPTIONS[solver](tol, max_iter))
    except cp.SolverError as exc:
        raise RuntimeError(
            f"ConvexFairPCA: the SDP solver {solver} failed ({exc}); "
            f"try solver={'CLARABEL' if solver == 'SCS' else 'SCS'!r}."
        ) from exc
    bounds = np.zeros((len(factors), 2))
    if t is not None and t.value is not None:
        bounds = np.asarray(t.value, dtype=np.float64).reshape(len(factors), 2)
    value = None if P.value is None else 0.5 * (P.value + P.value.T)
    return value, bounds, problem


def _residual_summary(problem):
    """Achieved accuracy reported by the solver, for warnings and logs."""
    info = (problem.solver_stats.extra_stats or {}).get("info", {})
    parts = [f"{key} {info[key]:.2e}" for key in ("res_pri", "res_dual", "gap") if key in info]
    return ", ".join(parts) if parts else "residuals not reported by the solver"


# ---------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------


@document_require_groups
class ConvexFairPCA(FairPCABase):
    r"""Fair PCA by semidefinite programming (FPCA of Olfat & Aswani, 2019).

    Solves the convex relaxation over ``P = V V^T`` used as the FPCA baseline
    by [Lee2022]_ (their appendix B and the authors' code), for groups
    ``a < b`` (all pairs when there are more than two groups):

    .. math::

        \max_{P,\,t}\ & \langle \tilde\Sigma, P\rangle
            - \mu \sum_{a<b} (t^+_{ab} + t^-_{ab}) \\
        \text{s.t. }\ & \mathrm{tr}\, P = d, \quad 0 \preceq P \preceq I, \\
        & f_{ab}^T P f_{ab} \le \delta^2 \quad
          (\text{with } \delta = 0:\ P f_{ab} = 0 \text{ exactly}), \\
        & \begin{bmatrix} t^\pm_{ab} I & (F^\pm_{ab} P)^T \\
          F^\pm_{ab} P & I \end{bmatrix} \succeq 0
          \iff t^\pm_{ab} \ge \lambda_{\max}(P\, G^\pm_{ab} P),

    with ``f_ab = mu_b - mu_a`` the difference of group means,
    ``Q_ab = Sigma_b - Sigma_a`` the difference of group covariances, each
    group's covariance taken about its **own** mean with divisor ``n_a`` (the
    groups are modelled as ``N(mu_s, Sigma_s)`` in appendix B, and the
    authors' code centres each group on its mean), and
    ``G+ = Q + c+ I = F+^T F+``, ``G- = c- I - Q = F-^T F-`` with
    ``c+ = max(0, -lambda_min(Q))``, ``c- = max(0, lambda_max(Q))``. At a
    projection ``P = V V^T`` the penalty is
    ``mu (lambda_max(V^T Q V) - lambda_min(V^T Q V) + c+ + c-)``: it pushes the
    projected covariance difference towards a multiple of the identity.

    **Scaling.** The objective matrix is the one of the original code,
    :math:`\tilde\Sigma = X^T X / (n \|X\|_F)` for the training data ``X``
    centred on the pooled mean, i.e. ``Sigma / sqrt(n tr Sigma)`` with
    ``Sigma`` the covariance (divisor ``n``), while ``f`` and ``Q`` are not
    scaled. The original standardised the features first (population standard
    deviation), so that ``Sigma~ = Corr / sqrt(n p)``; this class does not
    standardise (the components must live in the coordinates of ``X``), so
    standardise the training data first, as the papers' protocols do, for the
    published ``mu`` and ``delta`` to mean what they meant there.

    **Sample size.** The ``1 / sqrt(n)`` in the objective, and not in the
    constraints, makes the answer depend on the number of rows: the same
    data with every row repeated twice weighs the variance ``sqrt(2)`` times
    less against the covariance penalty (the components move). With
    ``objective_scale="size_free"`` the objective is ``Sigma / sqrt(tr Sigma)``
    and the answer depends on the distribution of the rows only; a published
    ``mu`` at ``n`` rows corresponds to ``mu * sqrt(n)`` there.

    **Trace.** ``tr P = d``, as the authors' code imposed it (appendix B writes
    ``tr P <= d``). The set ``{0 <= P <= I, tr P = d}`` is the convex hull of the
    rank-``d`` projections; with ``<=`` the quadratic penalty can be lowered by
    shrinking ``P`` towards 0, so a large ``mu`` rescales ``P`` instead of
    turning it (on the synthetic data #2 of [Lee2022]_ at ``p = 20``,
    ``mu = 0.1``: trace 2.9 instead of 5). The two agree whenever the trace
    bound is active, as on the German credit protocol of [Lee2022]_ with
    ``mu = 0.01`` (all ten splits, ``d = 2`` and ``d = 10``).

    The components are the top ``d`` eigenvectors of the solution ``P*``,
    sorted by the variance they explain. The relaxation is not tight in
    general: ``P*`` is usually far from a projection (appendix C of
    [Lee2022]_; on their German credit protocol at ``d = 2`` its top
    eigenvalues are all about 0.24).

    **Ambiguity.** When the ``d``-th and ``(d+1)``-th eigenvalues of ``P*``
    tie, the SDP does not determine the components: any ``d`` orthonormal
    vectors of the tied eigenspace completed by the eigenvectors above it are
    an equally valid answer, and their explained variance differs. The solver
    returns ``P*`` with an error ``E``, which moves every eigenvalue by at most
    ``||E||_2`` (Weyl's inequality): with eigenvalues accurate to ``eps``, two
    closer than ``2 eps`` may be in the other order in the exact solution.
    The rule is therefore

    .. math::

        \lambda_d(P^*) - \lambda_{d+1}(P^*) \le 2\,\varepsilon,
        \qquad \varepsilon = 50\, r,

    with ``r`` the solver's relative accuracy: ``tol`` (the ADMM's certified
    relative duality gap; SCS's and Clarabel's stopping tolerances), or the
    relative gap the ADMM reached when it stopped short of ``tol``. ``P*`` is
    dimensionless (eigenvalues in ``[0, 1]``), and ``50 r`` bounds the
    eigenvalue errors measured against solutions at ``tol / 1000`` or below on
    Lee et al.'s German credit and COMPAS splits: at most ``2 tol`` for the
    ADMM (``||P*(tol) - P*(tol / 1000)||_2`` too), ``16 tol`` for SCS. When
    ``eigengap_`` is at most ``100 r``, ``ambiguous_`` is True and a
    ``UserWarning`` gives the gap. On those splits genuine ties sit at
    ``0.1 tol`` or below (German credit d = 2, splits 0 and 4: three top
    eigenvalues equal) and the other gaps at ``600 tol`` or more.

    **Scale.** The problem is homogeneous in the data: ``X`` with
    ``(mu, delta)`` and ``X / c`` with ``(mu c, delta / c)`` have the same
    solutions ``P``. It is solved for ``c`` the power of two nearest to the
    root mean square spread of the features (1 for standardised data), so that
    ``X * 1e100`` and ``X`` give the same components with ``mu`` and ``delta``
    in the units of each.

    Parameters
    ----------
    n_components : int, default=2
        Number of components ``d``.
    mu : float, default=0.01
        Weight ``mu >= 0`` of the covariance penalty (ignored with
        ``constraints="mean"``).
    delta : float, default=0.1
        Tolerance ``delta >= 0`` of the mean constraint, in the units of ``X``.
        The default ``(mu, delta) = (0.01, 0.1)`` is the setting [Lee2022]_ ran
        on the UCI data at ``d = 2`` (their run script); they also report
        ``(0.01, 0)`` and, at ``d = 10``, a row labelled ``(0.1, 0)``. Their
        Table 1 writes the pair the other way round, ``delta`` first:
        "FPCA (0.1, 0.01)" is ``mu = 0.01, delta = 0.1``. The ``d = 10`` row
        labelled "(0, 0.1)" (German credit: 29.79 %VAR) is reproduced by
        ``mu = 0.01, delta = 0`` (29.2 %VAR over the ten splits; the authors'
        script for ``d = 10`` also reads ``mu=0.01``), not by ``mu = 0.1``
        (17-19 %VAR with either trace form): read that label as a misprint.
    constraints : {"both", "mean"}, default="both"
        ``"both"``: mean constraint and covariance penalty; ``"mean"``: mean
        constraint only.
    solver : {"ADMM", "SCS", "CLARABEL"}, default="ADMM"
        ``"ADMM"``: fairpca's solver specialised to this SDP (no cvxpy
        needed): ADMM over the Fantope, each iteration one eigendecomposition
        for the Fantope projection and one per covariance LMI for its proximal
        map, Anderson-accelerated (``fairpca._fantope_admm``), on
        growing subspaces beyond 120 coordinates
        (``fairpca._fantope_subspaces``), stopped on a certified duality
        gap (``duality_gap_``); where it does not certify ``tol`` within
        ``max_iter`` iterations, SCS solves the SDP when cvxpy is installed, and
        otherwise (or if SCS is not optimal either) the best certified feasible
        point is returned with a ``ConvergenceWarning``. The cvxpy solvers (extra ``sdp``): SCS
        (first-order) and Clarabel (interior point; more accurate, but dense
        systems of order ``p^2``: use it for small ``p``, up to about 30).
    tol : float, default=1e-6
        Solver tolerance: SCS ``eps_abs = eps_rel``; Clarabel ``tol_gap_abs``,
        ``tol_gap_rel`` and ``tol_feas``; ADMM the certified relative duality
        gap. The top eigenvalues of ``P*`` are often close together, so a
        loose tolerance can swap components: eigenvalues ``d`` and ``d + 1``
        within ``100 tol`` are reported as tied (see **Ambiguity**).
    max_iter : int, default=10000
        Iteration limit of the solver (SCS typically needs a few hundred to a
        thousand iterations).
    objective_scale : {"paper", "size_free"}, default="paper"
        ``"paper"``: the objective matrix of the original code,
        ``Sigma / sqrt(n tr Sigma)``; ``"size_free"``: ``Sigma / sqrt(tr Sigma)``,
        free of the number of rows (see **Sample size**).
    max_features : int or None, default=500
        Largest number of features accepted; beyond it ``fit`` raises a
        ``ValueError`` before solving. With ``k > 2`` groups the covariance
        constraints add ``k (k - 1)`` LMI blocks, each eigendecomposed at
        every iteration: the bound then applies to the two-group size of the
        same cost, ``(sum_b size_b^3 / 2)^(1/3)`` (COMPAS's six race groups at
        380 one-hot features: 30 blocks of up to 759, as costly as 1,872
        features). The SDP has ``O(p^2)`` variables. The
        ADMM solver's time depends on the rank of the solution: when it is
        small the growing subspaces keep every iteration small, when it is
        large (a strong covariance penalty spreads ``P*`` over many
        directions) each iteration costs ``O(p^3)``. Each SCS or Clarabel
        iteration costs ``O(p^3)`` or more. ``benchmarks/convex_admm.py`` and
        ``benchmarks/convex.py`` measure both. ``None`` removes the limit.
    verbose : int or bool, default=0
        ``>= 1`` (or True): log problem size, solver status, iterations, time and
        objective at INFO level on the ``fairpca.convex`` logger; ``>= 2``:
        also let cvxpy and the solver print their own logs.
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Top ``d`` eigenvectors of ``relaxed_projection_``, sorted by explained
        variance.
    relaxed_projection_ : ndarray of shape (n_features, n_features)
        The SDP solution ``P*``.
    objective_ : float
        Optimal value of the SDP reported by the solver.
    covariance_bounds_ : ndarray of shape (n_pairs, 2)
        Optimal ``(t+, t-)`` of each pair of groups (pairs ``a < b`` in the
        order of ``groups_``, as :func:`itertools.combinations`); upper bounds
        on ``lambda_max(P* G+- P*)``. Empty with ``constraints="mean"``.
    solver_status_ : str
        ``"optimal"`` or ``"optimal_inaccurate"`` (with a ``ConvergenceWarning``;
        ADMM: the gap is above ``tol`` after ``max_iter`` iterations);
        infeasible problems raise instead.
    converged_ : bool
        True when the solver reported ``"optimal"``.
    n_iter_ : int or None
        Solver iterations.
    duality_gap_ : float or None
        ADMM: certified bound on how far ``objective_`` is below the optimum
        (upper bound from the multipliers minus the objective of the returned
        feasible ``P*``); None for the cvxpy solvers.
    eigengap_ : float
        ``lambda_d(P*) - lambda_{d+1}(P*)`` of ``relaxed_projection_``
        (``lambda_d(P*)`` when ``d = n_features``).
    ambiguous_ : bool
        Whether ``eigengap_`` is within twice the accuracy of ``P*`` (see
        **Ambiguity**): then the SDP does not determine the components, and a
        ``UserWarning`` was issued.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Training variance of each component over the total.

    Raises
    ------
    ImportError
        If cvxpy (extra ``sdp``) is not installed.
    ValueError
        If ``n_features > max_features``; if the arrays of the pairs of groups
        (mean and covariance differences, LMI blocks, solver iterates) would
        exceed ``fairpca._validation.MAX_DENSE_MOMENT_BYTES``, before any is
        allocated; if ``delta = 0`` leaves fewer than
        ``d`` directions orthogonal to the mean differences; if the solver
        finds the problem infeasible (``delta`` too small for ``d`` with many
        groups).
    RuntimeError
        If the solver fails or returns no solution.

    See Also
    --------
    MMDFairPCA : matches the whole projected distributions, on the Stiefel manifold.

    References
    ----------
    .. [Olfat2019] M. Olfat and A. Aswani. "Convex Formulations for Fair
       Principal Component Analysis." AAAI 2019.
    .. [Lee2022] J. Lee et al. "Fast and Efficient MMD-based Fair PCA via
       Optimization over Stiefel Manifold." AAAI 2022, appendix B.

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from fairpca import ConvexFairPCA
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(n_samples=300, n_features=8, random_state=0)
    >>> X = StandardScaler().fit_transform(X)
    >>> est = ConvexFairPCA(n_components=2, delta=0.0).fit(X, sensitive_features=s)
    >>> est.components_.shape, est.solver_status_
    ((2, 8), 'optimal')
    """

    # Group means and covariances are all the SDP needs: Dask input and partial_fit work.
    _moments_only = True
    #: Dropped by compact() besides the groups' labels, counts and moments.
    _group_attributes = (
        *FairPCABase._group_attributes,
        "covariance_bounds_",
        "relaxed_projection_",
    )

    def __init__(
        self,
        n_components: int | float = 2,
        *,
        mu: float = 0.01,
        delta: float = 0.1,
        constraints: Literal["both", "mean"] = "both",
        solver: Literal["ADMM", "SCS", "CLARABEL"] = "ADMM",
        tol: float = 1e-6,
        max_iter: int = 10000,
        objective_scale: Literal["paper", "size_free"] = "paper",
        max_features: int | None = 500,
        verbose: int | bool = 0,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.mu = mu
        self.delta = delta
        self.constraints = constraints
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.objective_scale = objective_scale
        self.max_features = max_features
        self.verbose = verbose
        self.require_groups = require_groups

    def _check_params(self):
        check_number(self.mu, "mu", numbers.Real, minimum=0)
        check_number(self.delta, "delta", numbers.Real, minimum=0)
        if self.objective_scale not in ("paper", "size_free"):
            raise ValueError(
                f"objective_scale must be 'paper' or 'size_free', got {self.objective_scale!r}."
            )
        if self.constraints not in ("both", "mean"):
            raise ValueError(f"constraints must be 'both' or 'mean', got {self.constraints!r}.")
        if self.solver not in _SOLVER_OPTIONS:
            raise ValueError(
                f"solver must be one of {sorted(_SOLVER_OPTIONS)}, got {self.solver!r}."
            )
        check_number(self.tol, "tol", numbers.Real, minimum=0, include_boundaries="neither")
        check_number(self.max_iter, "max_iter", minimum=1)
        if self.max_features is not None:
            check_number(self.max_features, "max_features", minimum=1)
        if not isinstance(self.verbose, bool):
            check_number(self.verbose, "verbose", minimum=0)

    def _fit_components(self, X, codes, moments, y, d):
        p = moments.n_features
        if self.max_features is not None and p > self.max_features:
            raise ValueError(
                f"X has {p} features but ConvexFairPCA accepts at most max_features="
                f"{self.max_features}: the SDP has O(p^2) variables and each solver iteration "
                "costs up to O(p^3). Reduce the features or pass a larger max_features (or "
                "None) to run anyway."
            )
        if self.solver != "ADMM":
            _import_cvxpy()
        log = logger.info if self.verbose else logger.debug
        delta = float(self.delta)
        covariances = self.constraints == "both"
        _check_memory(p, moments.n_groups, covariances, delta > 0)
        # Solved for X / c with (mu c, delta / c): the same P (see _data_scale).
        scale = _data_scale(moments)
        mean_diffs, cov_diffs = _pairwise_differences(moments, covariances, scale)
        basis, factors = _working_basis(mean_diffs, cov_diffs, delta / scale)
        q = basis.shape[1]
        _check_lmi_work(q, factors, self.max_features, len(moments.counts))
        if q < d:
            raise ValueError(
                f"delta=0 forces the components to be orthogonal to the {p - q} independent "
                f"group mean difference(s), leaving {q} of {p} directions: fewer than "
                f"n_components={d}. Use delta > 0 or fewer components."
            )
        S = basis.T @ _scaled_covariance(moments, self.objective_scale, scale) @ basis
        mean_vectors = mean_diffs @ basis if delta > 0 else None
        log(
            "ConvexFairPCA: SDP in %d coordinates, %d mean constraint(s), LMIs of sizes %s, "
            "data scale %g, solver %s",
            q,
            0 if mean_vectors is None else len(mean_vectors),
            _lmi_sizes(q, factors),
            scale,
            self.solver,
        )
        start = time.perf_counter()
        args = (0.5 * (S + S.T), mean_vectors, factors, d, float(self.mu) * scale, delta / scale)
        if self.solver == "ADMM":
            P, bounds, accuracy = self._solve_admm(*args, log)
        else:
            P, bounds = self._solve_cvxpy(*args, log)
            accuracy = float(self.tol)
        # Back to the units of X: the objective scales as c, the LMI bounds as c^2.
        self.objective_ *= scale
        if self.duality_gap_ is not None:
            self.duality_gap_ *= scale
        log(
            "ConvexFairPCA: %s after %s iterations in %.2f s, objective %.10g",
            self.solver_status_,
            self.n_iter_,
            time.perf_counter() - start,
            self.objective_,
        )
        self.covariance_bounds_ = bounds * scale**2
        relaxed = basis @ P @ basis.T
        self.relaxed_projection_ = 0.5 * (relaxed + relaxed.T)
        eigenvalues, eigenvectors = np.linalg.eigh(self.relaxed_projection_)
        eigenvalues, eigenvectors = eigenvalues[::-1], eigenvectors[:, ::-1]
        self._check_eigengap(eigenvalues, d, accuracy)
        return eigenvectors[:, :d].T, None

    def _check_eigengap(self, eigenvalues, d, accuracy):
        """Set ``eigengap_`` and ``ambiguous_``; warn when the top-``d`` subspace is undetermined.

        The eigenvalues of the solution are accurate to about
        ``eps = _EIGEN_ACCURACY * accuracy`` (``accuracy``: the solver's
        relative tolerance, or the ADMM's achieved relative gap when larger);
        an error ``E`` of ``P*`` moves each eigenvalue by at most ``||E||_2``
        (Weyl), so eigenvalues ``d`` and ``d + 1`` closer than ``2 eps`` may be
        in the other order in the exact solution, and their eigenvectors
        swapped. See :class:`ConvexFairPCA`, **Ambiguity**.
        """
        p = eigenvalues.size
        below = eigenvalues[d] if d < p else 0.0
        self.eigengap_ = float(eigenvalues[d - 1] - below)
        threshold = 2 * _EIGEN_ACCURACY * accuracy
        self.ambiguous_ = d < p and self.eigengap_ <= threshold
        if self.ambiguous_:
            warn(
                f"ConvexFairPCA: eigenvalues {d} and {d + 1} of the SDP solution P* "
                f"({eigenvalues[d - 1]:.6g} and {eigenvalues[d]:.6g}) are tied to solver "
                f"accuracy: eigengap_={self.eigengap_:.2e} <= {threshold:.2e}, twice the "
                f"accuracy {_EIGEN_ACCURACY} x {accuracy:.2g} of its eigenvalues. The SDP does "
                f"not determine the top-{d} subspace, and the components are one choice among "
                "the tied eigenvectors (ambiguous_ is True).",
                UserWarning,
            )

    def _solve_admm(self, S, mean_vectors, factors, d, mu, delta, log):
        """Solve by ``fairpca._fantope_subspaces.solve_fpca_sdp``; set the solver attributes.

        Where the ADMM does not certify its gap within ``max_iter`` iterations,
        SCS (when cvxpy is installed) solves the SDP instead; if SCS does not
        report it optimal either, the ADMM's best feasible point is returned
        with a ``ConvergenceWarning`` stating the certified gap.
        """
        tol, max_iter = float(self.tol), int(self.max_iter)
        try:
            result = solve_fpca_sdp(S, factors, mean_vectors, d, mu, delta, tol, max_iter)
        except NoFeasiblePointError as exc:
            # Only possible with fewer than d directions off the mean differences.
            try:
                _import_cvxpy()
            except ImportError:
                raise ValueError(
                    f"ConvexFairPCA: {exc} (delta={self.delta:g}). Increase delta, use fewer "
                    "components, or install cvxpy (pip install 'fairpca[sdp]') to let SCS try."
                ) from exc
            log("ConvexFairPCA: %s; solving with SCS instead", exc)
            P, bounds = self._solve_cvxpy(S, mean_vectors, factors, d, mu, delta, log, "SCS")
            return P, bounds, float(self.tol)
        except ValueError as exc:
            if not str(exc).startswith("infeasible"):
                raise
            raise ValueError(
                f"ConvexFairPCA: the ADMM solver reports the SDP infeasible ({exc}; "
                f"delta={self.delta:g}). Increase delta or use fewer components."
            ) from exc
        scale = max(abs(result.objective), abs(result.upper_bound), np.finfo(float).tiny)
        note = ""
        if not result.converged:
            fallback, note = self._scs_fallback(S, mean_vectors, factors, d, mu, delta, result, log)
            if fallback is not None:
                return (*fallback, float(self.tol))
        self.converged_ = result.converged
        self.solver_status_ = "optimal" if result.converged else "optimal_inaccurate"
        self.objective_ = result.objective
        self.duality_gap_ = result.gap
        self.n_iter_ = result.n_iter
        if not result.converged:
            warn(
                f"ConvexFairPCA: the ADMM solver stopped after {result.n_iter} iterations with "
                f"relative duality gap {result.gap / scale:.2e} (tol={self.tol:g}), and no "
                f"other solver did better{'; ' + note if note else ''}; the components come "
                "from this feasible but inexact solution. Increase max_iter or tol.",
                ConvergenceWarning,
            )
        return result.P, result.bounds, max(float(self.tol), result.gap / scale)

    def _scs_fallback(self, S, mean_vectors, factors, d, mu, delta, result, log):
        """SCS's solution where the ADMM stopped short of ``tol``, if SCS reports it optimal.

        Returns ``((P, bounds), "")`` with the solver attributes set, or
        ``(None, why)`` to keep the ADMM's certified point: cvxpy missing, SCS
        not optimal, or an SDP larger than :data:`_MAX_SCS_FALLBACK_SIZE`
        matrix entries, where cvxpy's compilation alone takes minutes (met at
        380 features and six groups: 30 LMI blocks of about 400 x 400).
        """
        try:
            cp = _import_cvxpy()
        except ImportError:
            return None, "cvxpy (for SCS) is not installed"
        size = _sdp_size(S.shape[0], factors)
        if size > _MAX_SCS_FALLBACK_SIZE:
            return None, (
                f"SCS not tried: its SDP would have {size} matrix entries, more than "
                f"{_MAX_SCS_FALLBACK_SIZE}"
            )
        scale = max(abs(result.objective), abs(result.upper_bound), np.finfo(float).tiny)
        logger.info(
            "ConvexFairPCA: the ADMM stopped after %d iterations with relative duality gap "
            "%.2e (tol=%g); solving with SCS",
            result.n_iter,
            result.gap / scale,
            self.tol,
        )
        try:
            P, bounds, problem = _solve_sdp(
                S, mean_vectors, factors, d, mu, delta, "SCS", float(self.tol),
                int(self.max_iter), self.verbose >= 2,
            )  # fmt: skip
        except (RuntimeError, cp.SolverError) as exc:
            logger.info("ConvexFairPCA: SCS failed (%s); keeping the ADMM's point", exc)
            return None, f"SCS failed ({exc})"
        log("ConvexFairPCA: SCS reports %s, %s", problem.status, _residual_summary(problem))
        if problem.status != "optimal" or P is None:
            return None, f"SCS reported {problem.status}"
        n_iter = problem.solver_stats.num_iters
        self.converged_ = True
        self.solver_status_ = "optimal"
        self.objective_ = float(problem.value)
        self.duality_gap_ = None
        self.n_iter_ = result.n_iter + (0 if n_iter is None else int(n_iter))
        return (P, bounds), ""

    def _solve_cvxpy(self, S, mean_vectors, factors, d, mu, delta, log, solver=None):
        """Solve with cvxpy and ``solver`` (default ``self.solver``); set the solver attributes."""
        solver = self.solver if solver is None else solver
        P, bounds, problem = _solve_sdp(
            S,
            mean_vectors,
            factors,
            d,
            mu,
            delta,
            solver,
            float(self.tol),
            int(self.max_iter),
            self.verbose >= 2,
        )
        status = problem.status
        n_iter = problem.solver_stats.num_iters
        log("ConvexFairPCA: %s reports %s", solver, _residual_summary(problem))
        if status in ("infeasible", "infeasible_inaccurate"):
            raise ValueError(
                f"ConvexFairPCA: the solver {solver} reports the SDP {status}: no P with "
                f"trace n_components={d} keeps every pairwise mean difference within "
                f"delta={self.delta:g}. Increase delta or use fewer components."
            )
        if status not in ("optimal", "optimal_inaccurate", "user_limit") or P is None:
            raise RuntimeError(
                f"ConvexFairPCA: the solver {solver} ended with status {status!r} "
                f"and no usable solution ({_residual_summary(problem)})."
            )
        self.converged_ = status == "optimal"
        self.solver_status_ = status
        self.objective_ = float(problem.value)
        self.duality_gap_ = None
        self.n_iter_ = None if n_iter is None else int(n_iter)
        if not self.converged_:
            warn(
                f"ConvexFairPCA: the solver {solver} stopped with status {status!r} "
                f"after {n_iter} iterations ({_residual_summary(problem)}; tol={self.tol:g}); "
                "the components come from this inexact solution. Increase max_iter or tol.",
                ConvergenceWarning,
            )
        return P, bounds
