"""The FPCA semidefinite program on growing subspaces, for many features.

Solves the SDP of :mod:`fairpca._fantope_admm` (Olfat & Aswani, 2019) with
``q`` coordinates by restricting it to ``P = B P' B^T`` for an orthonormal
``B`` with ``q' << q`` columns, first the top eigenvectors of ``S``. The
restricted problem is the same SDP in ``q'`` coordinates (``F_k B = Q_k R_k``,
``||F_k B P' B^T||_2 = ||R_k P'||_2``), solved by the ADMM at ``O(q'^3)`` per
iteration; its solution is feasible for the full problem, and its multipliers,
mapped back (``y_k = Q_k y'_k B^T``), give the Lagrangian upper bound of the
full problem. A small gap certifies the solution; otherwise the top
eigenvectors of the bound's matrix outside ``span(B)`` are added to ``B`` (a
column-generation step: the directions whose Lagrangian value exceeds the
restricted one) and the ADMM resumes from its padded iterates.
"""

import logging

import numpy as np

from fairpca._fantope_admm import FantopeADMMResult, solve_fantope_admm
from fairpca._fantope_constraints import CovarianceLMIs, MeanConstraints
from fairpca._fantope_prox import _sym
from fairpca._linalg import top_eigh

__all__ = ["solve_fantope_sdp", "solve_fpca_sdp"]

logger = logging.getLogger(__name__)

#: From this many coordinates on, the SDP is solved on growing subspaces.
_SUBSPACE_FROM = 120
#: Eigenvectors of S (beyond d) in the first subspace, and directions added per round.
_SUBSPACE_START = 40
_SUBSPACE_STEP = 20
#: Smallest part of a new direction outside the current subspace that is added, and
#: the smaller one used once a round with no new direction did not halve the gap.
_NEW_DIRECTION = 1e-3
_STALLED_DIRECTION = 1e-8
#: Relative gap to which the first subspace is solved, and most ADMM iterations
#: of a round while the subspace is still growing.
_FIRST_ROUND_TOL = 1e-3
_ROUND_ITERATIONS = 500
#: Share of the coordinates beyond which the full problem is solved directly.
_MAX_SHARE = 0.3


def _restricted_problem(S, constraints, B):
    """The SDP restricted to ``P = B P' B^T``: ``B^T S B`` and each family's restriction.

    For the covariance LMIs ``F_k B = Q_k R_k`` and ``||F_k B P' B^T||_2 =
    ||R_k P'||_2``, for the mean constraints the rows ``G B``: the restricted
    problem is the same SDP in ``B.shape[1]`` coordinates.
    """
    return _sym(B.T @ S @ B), [family.restrict(B) for family in constraints]


def _full_bound(S, restricted, result, d, n_vectors):
    """Lagrangian upper bound of the full SDP from a restricted solve's multipliers.

    Each restricted family lifts its multiplier to the full problem
    (:meth:`~fairpca._fantope_constraints.ConstraintFamily.lifted_adjoint`;
    for the LMIs ``y_k = Q_k y'_k B^T``, of the same nuclear norm), so the
    bound of :mod:`fairpca._fantope_admm` applies.

    Returns
    -------
    bound : float
    vectors : ndarray of shape (q, n_vectors)
        Top eigenvectors of the bound's matrix: the directions the full
        problem would use.
    """
    C = S.copy()
    bound = 0.0
    for family, y in zip(restricted, result.multipliers, strict=True):
        if family.active:
            C -= family.lifted_adjoint(y)
            bound += family.support(y)
    values, vectors = top_eigh(_sym(C), n_vectors)
    return float(values[:d].sum()) + bound, vectors


def solve_fpca_sdp(S, factors, mean_vectors, d, mu, delta, tol, max_iter):
    """Solve the FPCA SDP of the module docstring, to a certified relative gap ``tol``.

    The constraint families (:class:`CovarianceLMIs` of ``factors`` with
    weight ``mu``, :class:`MeanConstraints` of ``mean_vectors`` within
    ``delta``) solved by :func:`solve_fantope_sdp`.

    Parameters and returns as :func:`solve_fantope_admm`, with the covariance
    LMIs given as ``factors`` (``[F+, F-]`` of each pair) and ``mu``, the mean
    constraints as ``mean_vectors`` and ``delta``; ``bounds`` of the result are
    the LMIs' values.
    """
    constraints = [CovarianceLMIs(factors, mu)]
    mean = MeanConstraints.scaled(mean_vectors, delta)
    if mean is not None:
        constraints.append(mean)
    result = solve_fantope_sdp(S, constraints, d, tol, max_iter)
    result.bounds = result.values[0]
    return result


def solve_fantope_sdp(S, constraints, d, tol, max_iter):
    """Solve ``max <S, P> - sum_f h_f(A_f(P))`` over the Fantope, to a relative gap ``tol``.

    The ADMM of :func:`solve_fantope_admm`, on growing subspaces beyond
    ``_SUBSPACE_FROM`` coordinates (:func:`_solve_on_subspaces`).
    """
    if S.shape[0] <= _SUBSPACE_FROM:
        return solve_fantope_admm(S, constraints, d, tol, max_iter)
    return _solve_on_subspaces(S, constraints, d, tol, max_iter)


def _solve_on_subspaces(S, constraints, d, tol, max_iter):
    """Solve the FPCA SDP on a growing subspace.

    The SDP is solved by ADMM restricted to ``P = B P' B^T`` for an
    orthonormal ``B`` (first the top eigenvectors of ``S``), and the restricted
    multipliers give an upper bound for the full problem (:func:`_full_bound`).
    The restricted solution is feasible for the full problem, so a small gap
    certifies it; otherwise ``B`` is extended by the top eigenvectors of the
    bound's matrix outside its span (the directions whose Lagrangian value
    exceeds the restricted one) and the restricted problem is solved again
    from the previous solution. Every iteration then costs ``O(q'^3)`` for
    ``q' = B.shape[1]`` instead of ``O(q^3)``, and the full space is touched
    once per round.

    When the subspace would exceed ``_MAX_SHARE`` of the coordinates, the full
    problem is solved directly instead.

    Parameters and returns as :func:`solve_fantope_admm`; ``n_iter`` counts the
    ADMM iterations of every round.
    """
    q = S.shape[0]
    n_vectors = min(q, d + _SUBSPACE_STEP)
    _, B = top_eigh(S, min(q, _SUBSPACE_START + d))
    # The restoration points' directions keep every restricted problem feasible.
    hard = [family for family in constraints if family.active and family.hard]
    directions = [family.restoration_directions(S, d) for family in hard]
    directions = [found for found in directions if found is not None]
    if directions:
        B, _ = np.linalg.qr(np.hstack((B, *directions)))
    state, total, upper, inner_tol = None, 0, np.inf, max(tol, _FIRST_ROUND_TOL)
    settled = False  # whether the last round added no direction
    previous_gap = np.inf
    while True:
        S_r, restricted = _restricted_problem(S, constraints, B)
        if state is not None:
            shapes = [family.shapes() for family in restricted if family.active]
            state = state.padded(B.shape[1], shapes)
        budget = max_iter - total if settled else min(max_iter - total, _ROUND_ITERATIONS)
        result = solve_fantope_admm(S_r, restricted, d, inner_tol, budget, state)
        total += result.n_iter
        state = result.state
        bound, vectors = _full_bound(S, restricted, result, d, n_vectors)
        upper = min(upper, bound)
        scale = max(abs(result.objective), abs(upper), np.finfo(float).tiny)
        gap = upper - result.objective
        logger.info(
            "subspace of %d coordinates: %d ADMM iterations, objective %.10g, full bound "
            "%.10g, relative gap %.2e",
            B.shape[1],
            result.n_iter,
            result.objective,
            upper,
            gap / scale,
        )
        converged = gap <= tol * scale
        if converged or total >= max_iter:
            break
        # The next round is solved a decade beyond the gap reached, down to tol.
        inner_tol = max(tol / 4, min(inner_tol, gap / scale) / 10)
        outside = vectors - B @ (B.T @ vectors)
        # A settled round that did not halve the gap has met the restricted problem's
        # accuracy: what is left comes from directions barely outside the subspace.
        stalled = settled and gap > 0.5 * previous_gap
        threshold = _STALLED_DIRECTION if stalled else _NEW_DIRECTION
        outside = outside[:, np.linalg.norm(outside, axis=0) > threshold]
        previous_gap = gap
        settled = outside.shape[1] == 0
        if settled:
            # The subspace holds the bound's directions: only accuracy is missing.
            continue
        if B.shape[1] + outside.shape[1] > _MAX_SHARE * q:
            return solve_fantope_admm(S, constraints, d, tol, max_iter - total)
        new, _ = np.linalg.qr(outside - B @ (B.T @ outside))
        new, _ = np.linalg.qr(new - B @ (B.T @ new))  # once more, for orthogonality to rounding
        B = np.hstack((B, new))
    return FantopeADMMResult(
        _sym(B @ result.P @ B.T),
        result.objective,
        upper,
        max(upper - result.objective, 0.0),
        [family.value(B, result.P) for family in constraints],
        total,
        bool(converged),
        [None] * len(constraints),
    )
