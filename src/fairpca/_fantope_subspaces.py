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

from fairpca._fantope_admm import (
    FantopeADMMResult,
    _covariance_bounds,
    _lmi_blocks,
    _nuclear_norm,
    solve_fantope_admm,
)
from fairpca._fantope_feasible import restoration_point
from fairpca._fantope_prox import _sym
from fairpca._linalg import top_eigh

__all__ = ["solve_fpca_sdp"]

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
#: Longest row ``c g`` of a scaled mean constraint (see :func:`_mean_constraints`).
_ROW_NORM_CAP = 3.0
#: Share of the coordinates beyond which the full problem is solved directly.
_MAX_SHARE = 0.3


def _restricted_problem(S, lmis, G, B):
    """The SDP restricted to ``P = B P' B^T``: ``B^T S B``, ``Q_k, R_k`` of ``F_k B``, ``G B``.

    ``||F_k B P' B^T||_2 = ||R_k P'||_2``, so the restricted problem is the
    same SDP in ``B.shape[1]`` coordinates with square factors.
    """
    Qs, Rs = [], []
    for F in lmis:
        Qk, Rk = np.linalg.qr(np.asarray(F @ B))
        Qs.append(Qk)
        Rs.append(Rk)
    return _sym(B.T @ S @ B), Qs, Rs, (None if G is None else G @ B)


def _full_bound(S, lmis, G, limits, B, Qs, result, mu, d, n_vectors):
    """Lagrangian upper bound of the full SDP from a restricted solve's multipliers.

    The restricted multiplier ``y'_k`` of ``R_k P' = Z'_k`` is the full
    ``y_k = Q_k y'_k B^T`` (same nuclear norm), so the bound of
    :mod:`fairpca._fantope_admm` applies with ``sym(sum_k F_k^T y_k) = sym(T B^T)``,
    ``T = sum_k (F_k^T Q_k) y'_k``.

    Returns
    -------
    bound : float
    vectors : ndarray of shape (q, n_vectors)
        Top eigenvectors of the bound's matrix: the directions the full
        problem would use.
    """
    C = S.copy()
    bound = 0.0
    if lmis:
        T = sum(F.adjoint(Qk) @ yk for F, Qk, yk in zip(lmis, Qs, result.multipliers, strict=True))
        C -= _sym(T @ B.T)
        bound += sum(_nuclear_norm(yk) ** 2 for yk in result.multipliers) / (4 * mu)
    if G is not None:
        beta = result.mean_multipliers
        C -= (G.T * beta) @ G
        bound += beta @ limits
    values, vectors = top_eigh(_sym(C), n_vectors)
    return float(values[:d].sum()) + bound, vectors


def _mean_constraints(mean_vectors, delta):
    """The constraints ``g^T P g <= delta^2`` as ``(c g)^T P (c g) <= (c delta)^2``.

    On the Fantope ``g^T P g <= ||g||^2``, so those with ``delta >= ||g||``
    never bind and are dropped. The scale is ``c = min(1 / delta,
    _ROW_NORM_CAP / ||g||)``: a unit limit, unless the row would then be
    longer than ``_ROW_NORM_CAP``. Unit limits converged in fewer ADMM
    iterations than unit rows (``benchmarks/convex_admm.py`` data, p = 60 and
    100); but the rows are the ADMM's coefficients of ``P`` in the splitting
    ``g^T P g = w``, and with long ones that block dwarfs the others: on
    COMPAS's 17 numeric columns (standardised, six groups; ``||g|| / delta``
    from 3 to 27) unit limits left a certified gap of 0.2 after 10,000
    iterations, rows capped at 2-4 converged in 1,400-1,600.
    """
    if mean_vectors is None or not len(mean_vectors):
        return None, None
    norms = np.linalg.norm(mean_vectors, axis=1)
    keep = norms > delta
    if not keep.any():
        return None, None
    scale = np.minimum(1.0 / delta, _ROW_NORM_CAP / norms[keep])
    return mean_vectors[keep] * scale[:, None], (scale * delta) ** 2


def solve_fpca_sdp(S, factors, mean_vectors, d, mu, delta, tol, max_iter):
    """Solve the FPCA SDP of the module docstring, to a certified relative gap ``tol``.

    The ADMM of :func:`solve_fantope_admm`, on growing subspaces beyond
    ``_SUBSPACE_FROM`` coordinates (:func:`_solve_on_subspaces`).

    Parameters and returns as :func:`solve_fantope_admm`, with the mean
    constraints given as ``mean_vectors`` and ``delta``.
    """
    G, limits = _mean_constraints(mean_vectors, delta)
    if S.shape[0] <= _SUBSPACE_FROM:
        return solve_fantope_admm(S, factors, G, limits, d, mu, tol, max_iter)
    return _solve_on_subspaces(S, factors, G, limits, d, mu, tol, max_iter)


def _solve_on_subspaces(S, factors, G, limits, d, mu, tol, max_iter):
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
    slots, operators, lmis = _lmi_blocks(factors, mu)
    n_vectors = min(q, d + _SUBSPACE_STEP)
    _, B = top_eigh(S, min(q, _SUBSPACE_START + d))
    if G is not None:
        # The restoration point's directions keep every restricted problem feasible.
        B, _ = np.linalg.qr(np.hstack((B, restoration_point(S, G, d)[0])))
    state, total, upper, inner_tol = None, 0, np.inf, max(tol, _FIRST_ROUND_TOL)
    settled = False  # whether the last round added no direction
    previous_gap = np.inf
    while True:
        S_r, Qs, Rs, G_r = _restricted_problem(S, lmis, G, B)
        if state is not None:
            state = state.padded(B.shape[1], [Rk.shape[0] for Rk in Rs])
        budget = max_iter - total if settled else min(max_iter - total, _ROUND_ITERATIONS)
        result = solve_fantope_admm(
            S_r, [[Rk] for Rk in Rs], G_r, limits, d, mu, inner_tol, budget, state
        )
        total += result.n_iter
        state = result.state
        bound, vectors = _full_bound(S, lmis, G, limits, B, Qs, result, mu, d, n_vectors)
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
            return solve_fantope_admm(S, factors, G, limits, d, mu, tol, max_iter - total)
        new, _ = np.linalg.qr(outside - B @ (B.T @ outside))
        new, _ = np.linalg.qr(new - B @ (B.T @ new))  # once more, for orthogonality to rounding
        B = np.hstack((B, new))
    return FantopeADMMResult(
        _sym(B @ result.P @ B.T),
        result.objective,
        upper,
        max(upper - result.objective, 0.0),
        _covariance_bounds(slots, operators, len(factors), B, result.P),
        total,
        bool(converged),
        [],
        None,
    )
