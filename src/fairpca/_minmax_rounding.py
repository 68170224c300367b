r"""Rounding a solution of the min-max loss relaxation to a low-rank projection.

Two roundings of a fractional ``P = U diag(lam) U^T`` of the relaxation

.. math:: \min_{P, z}\ z \quad\text{s.t.}\quad z \ge \beta_a - \langle B_a, P\rangle
          \ (a = 1..k), \qquad 0 \preceq P \preceq I, \quad \operatorname{tr} P \le d,

neither of which raises the objective:

- :func:`round_lp`, the LP rounding of Samadi et al. (2018), Algorithm 1: the
  eigenvectors of ``P`` stay fixed and only the eigenvalues move, to a vertex of
  an LP with at most ``k`` fractional entries (rank at most ``d + k - 1``);
- :func:`round_extreme_point`, the iterative rounding of Tantipongpipat et al.
  (2019), Theorem 1.5: ``P`` moves inside the face of the Fantope that contains
  it (the fractional eigenspace rotates too) until it is an extreme point of the
  set of optimal solutions, which has at most ``s`` fractional eigenvalues with
  ``s (s + 1) / 2 <= k``: rank at most ``d + floor(sqrt(2k + 1/4) - 3/2)``,
  exactly ``d`` for two groups.

References
----------
.. [Samadi2018] S. Samadi, U. Tantipongpipat, J. Morgenstern, M. Singh and
   S. Vempala. "The Price of Fair PCA: One Extra Dimension." NeurIPS 2018.
.. [Tantipongpipat2019] U. Tantipongpipat, S. Samadi, M. Singh, J. Morgenstern
   and S. Vempala. "Multi-criteria Dimensionality Reduction with Applications to
   Fairness." NeurIPS 2019.
"""

import functools
import math

import numpy as np
from scipy.optimize import linprog

__all__ = ["rank_bound", "round_extreme_point", "round_lp"]

#: Eigenvalues (or LP entries) closer than this to 0 or 1 are set to 0 or 1.
_INTEGRALITY_TOL = 1e-10

#: Loss rows within this fraction of the largest entry of ``C`` count as tight.
_TIGHT_TOL = 1e-12


def rank_bound(n_components, n_groups):
    """Largest rank :func:`round_extreme_point` can return.

    ``d - 1 + s`` with ``s`` the largest integer with ``s (s + 1) / 2 <= k``
    (``s >= 2``: a single fractional eigenvalue cannot occur when the trace is
    the integer ``d``), i.e. ``d + floor(sqrt(2k + 1/4) - 3/2)``.
    """
    # s (s + 1) / 2 <= k  <=>  s <= (sqrt(8k + 1) - 1) / 2, in integers.
    s = (math.isqrt(8 * n_groups + 1) - 1) // 2
    return n_components + max(s - 1, 0)


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
        z, total = losses.max(), lam.sum()
        tight = losses >= z - _TIGHT_TOL * max(1.0, total)
        trace_tight = total >= d - _TIGHT_TOL * d
        # Unknowns (delta_free, delta_z); rows keep tight loss rows tight and the trace.
        tight_rows = np.flatnonzero(tight)
        n_rows = tight_rows.size + trace_tight
        if free.size + 1 <= n_rows:
            return lam
        rows = np.zeros((n_rows, free.size + 1))
        rows[: tight_rows.size, :-1] = -C[np.ix_(tight_rows, free)]
        rows[: tight_rows.size, -1] = -1.0
        if trace_tight:
            rows[-1, :-1] = 1.0
        direction = np.linalg.svd(rows)[2][-1]
        if direction[-1] > 0:
            direction = -direction
        step_free, step_z = direction[:-1], direction[-1]
        # Largest step keeping bounds, slack rows and a slack trace feasible.
        lam_free = lam[free]
        to_bounds = np.full(free.size, np.inf)
        up, down = step_free > 0, step_free < 0
        to_bounds[up] = (1 - lam_free[up]) / step_free[up]
        to_bounds[down] = -lam_free[down] / step_free[down]
        slack_rate = -C[:, free] @ step_free - step_z
        closing = ~tight & (slack_rate > 0)
        step = to_bounds.min(initial=np.inf)
        if closing.any():
            step = min(step, ((z - losses[closing]) / slack_rate[closing]).min())
        trace_rate = step_free.sum()
        if not trace_tight and trace_rate > 0:
            step = min(step, (d - total) / trace_rate)
        if not np.isfinite(step):  # pragma: no cover - the feasible set is bounded
            return lam
        lam[free] = np.clip(lam_free + step * step_free, 0.0, 1.0)
    return lam  # pragma: no cover - each pass tightens one more constraint


def diagonal_captures(B, U):
    """``C[a, j] = u_j^T B_a u_j``, shape (k, r): what each direction captures per group."""
    return np.einsum("pj,apj->aj", U, B @ U)


def round_lp(B, beta, d, U, lam_hat, unit):
    """The LP rounding of Samadi et al. of a fractional solution ``U diag(lam_hat) U^T``.

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
    beta : ndarray of shape (k,)
    d : int
    U : ndarray of shape (p, r)
        Orthonormal eigenvectors of the fractional solution.
    lam_hat : ndarray of shape (r,)
        Its eigenvalues, in [0, 1], summing to at most ``d``.
    unit : float
        Scale of the objective; HiGHS's tolerances are absolute, so the LP's
        rows are divided by it.

    Returns
    -------
    lam_bar : ndarray of shape (r,)
        Extreme point of the LP; at most ``k`` entries strictly inside (0, 1).
    C : ndarray of shape (k, r)
        ``C[a, j] = u_j^T B_a u_j``; the group losses are ``beta - C @ lam_bar``.
    """
    k, r = B.shape[0], U.shape[1]
    C = diagonal_captures(B, U)
    relaxed = float(np.max(beta - C @ lam_hat))
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


@functools.cache
def _symmetric_basis(s):
    """Index pairs ``(i, j), i <= j``, weights 1 (diagonal) or 2, and the unpacking map.

    ``<C, S> = sum_{i <= j} weight_ij C_ij S_ij`` for symmetric ``C`` and ``S``, and
    ``S = v[unpack]`` for ``v`` the entries ``S_ij, i <= j``, in that order.
    Cached (read-only): ``np.triu_indices`` costs more than a rounding step's arithmetic.
    """
    i, j = np.triu_indices(s)
    unpack = np.empty((s, s), dtype=np.intp)
    unpack[i, j] = unpack[j, i] = np.arange(i.size)
    basis = (i, j, np.where(i == j, 1.0, 2.0), unpack)
    for array in basis:
        array.setflags(write=False)
    return basis


def _largest_feasible_step(lam, S):
    """Largest ``t >= 0`` with ``0 <= diag(lam) + t S <= I`` (``lam`` strictly inside (0, 1)).

    ``diag(lam) + t S >= 0`` iff ``I + t D^{-1/2} S D^{-1/2} >= 0`` with
    ``D = diag(lam)``, and likewise for ``I - diag(lam) - t S`` with ``I - D``.
    A trace-free ``S != 0`` has eigenvalues of both signs, so both limits are finite.
    """
    inv = 1.0 / np.sqrt(np.array([lam, 1.0 - lam]))
    # Both scaled matrices in one batched call: a rounding step is dominated by call overhead.
    eigenvalues = np.linalg.eigvalsh(S * (inv[:, :, None] * inv[:, None, :]))
    to_zero, to_one = eigenvalues[0, 0], eigenvalues[1, -1]
    return min(-1.0 / to_zero if to_zero < 0 else np.inf, 1.0 / to_one if to_one > 0 else np.inf)


def round_extreme_point(B, beta, d, U, lam):
    r"""Move a relaxed solution to an extreme point of the optimal face (Tantipongpipat et al.).

    Write ``P = U_1 U_1^T + Q diag(lam_f) Q^T`` with ``U_1`` the eigenvectors of
    eigenvalue one and ``Q`` the ``s`` fractional ones. Every ``P + Q S Q^T``
    with ``S`` symmetric (``s x s``) small enough stays in ``0 <= P <= I``; it
    keeps the trace if ``tr S = 0`` and group ``a``'s loss changes by
    ``-<Q^T B_a Q, S>``. The unknowns ``(S, delta_z)`` number ``s (s + 1) / 2 + 1``;
    the constraints that must hold with equality are one per tight loss row
    (``-<Q^T B_a Q, S> = delta_z``) and the trace when ``tr P = d``. While the
    unknowns outnumber them there is a non-zero solution, taken with
    ``delta_z <= 0`` so the objective ``z`` does not rise, and ``P`` moves along
    it until an eigenvalue of the fractional block reaches 0 or 1 (it leaves the
    block) or a slack loss row becomes tight. Each step removes a fractional
    eigenvalue or adds a tight row, so the loop ends with
    ``s (s + 1) / 2 <= (tight rows) <= k``.

    Since the eigenvalues sum to the integer ``d`` when the trace is tight, a
    single fractional eigenvalue cannot remain: for two groups the result is an
    orthogonal projection of rank ``d`` (or less, if the trace is slack); in
    general its rank is at most :func:`rank_bound`.

    The eigenvalues move first with the eigenvectors fixed (the vertex search
    of :func:`round_lp` started from ``lam``, no objective raised), which
    leaves at most ``k`` of them fractional: a mixture of two nearby
    projectors, the two-group solver's answer, has up to ``2 d`` eigenvalues a
    hair from 0 or 1, and each would otherwise cost a step of the block.

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
        Group second moments.
    beta : ndarray of shape (k,)
        Offsets of the losses ``beta_a - <B_a, P>``.
    d : int
        Bound on the trace.
    U : ndarray of shape (p, r)
        Orthonormal eigenvectors of the starting point.
    lam : ndarray of shape (r,)
        Its eigenvalues, in [0, 1], summing to at most ``d``.

    Returns
    -------
    V : ndarray of shape (p, m)
        Orthonormal eigenvectors of the rounded point with non-zero eigenvalue.
    lam : ndarray of shape (m,)
        Their eigenvalues in (0, 1]: ones first, then at most ``s`` fractional.
    """
    # First the eigenvalues alone, the eigenvectors fixed (the LP of round_lp, from lam):
    # a step there moves a vector, not an s x s block, and leaves at most k fractional.
    captures = diagonal_captures(B, U)
    lam = _to_vertex(captures, beta, d, np.clip(np.asarray(lam, float), 0.0, 1.0))
    ones = lam >= 1 - _INTEGRALITY_TOL
    fractional = (lam > _INTEGRALITY_TOL) & ~ones
    V1, Q, lam_f = U[:, ones], U[:, fractional], lam[fractional]
    # Losses and captures in units of the largest entry, as in _to_vertex.
    scale = max(float(np.max(np.abs(np.trace(B, axis1=1, axis2=2)))), np.finfo(float).tiny)
    fixed = (beta - captures[:, ones].sum(axis=1)) / scale
    C = Q.T @ B @ Q / scale
    n_ones = V1.shape[1]
    tight_margin = _TIGHT_TOL * max(1.0, d)
    for _ in range(2 * (lam_f.size + B.shape[0] + 2) + lam_f.size**2):
        s = lam_f.size
        if s == 0:
            break
        losses = fixed - np.einsum("aii,i->a", C, lam_f)
        z = losses.max()
        tight = losses >= z - tight_margin
        trace = n_ones + lam_f.sum()
        trace_tight = trace >= d - _TIGHT_TOL * d
        i, j, weight, unpack = _symmetric_basis(s)
        tight_rows = np.flatnonzero(tight)
        n_rows, n_unknowns = tight_rows.size + trace_tight, i.size + 1
        if n_unknowns <= n_rows:
            break
        # Tight loss rows (-<C_a, S> - delta_z = 0), then the trace row (tr S = 0).
        rows = np.empty((n_rows, n_unknowns))
        rows[: tight_rows.size, :-1] = -weight * C[tight_rows[:, None], i, j]
        rows[: tight_rows.size, -1] = -1.0
        if trace_tight:
            rows[-1, :-1] = weight == 1.0
            rows[-1, -1] = 0.0
        direction = np.linalg.svd(rows)[2][-1]
        if direction[-1] > 0:
            direction = -direction
        S, step_z = direction[unpack], direction[-1]
        step = _largest_feasible_step(lam_f, S)
        # Slack rows: loss_a - t <C_a, S> reaches z + t step_z.
        slack_rate = -np.einsum("aij,ij->a", C, S) - step_z
        closing = ~tight & (slack_rate > 0)
        if closing.any():
            step = min(step, ((z - losses[closing]) / slack_rate[closing]).min())
        trace_rate = S.trace()
        if not trace_tight and trace_rate > 0:
            step = min(step, (d - trace) / trace_rate)
        if not np.isfinite(step):  # pragma: no cover - the feasible set is bounded
            break
        # Re-diagonalise the moved block; eigenvalues at 0 or 1 leave it.
        moved = step * S
        moved.flat[:: s + 1] += lam_f
        new_lam, R = np.linalg.eigh(moved)
        Q, C = Q @ R, R.T @ C @ R
        leaving_one = new_lam >= 1 - _INTEGRALITY_TOL
        stay = (new_lam > _INTEGRALITY_TOL) & ~leaving_one
        if leaving_one.any():
            V1 = np.hstack([V1, Q[:, leaving_one]])
            fixed = fixed - np.einsum("aii->ai", C)[:, leaving_one].sum(axis=1)
            n_ones += int(leaving_one.sum())
        Q, C, lam_f = Q[:, stay], C[:, stay][:, :, stay], np.clip(new_lam[stay], 0.0, 1.0)
    return np.hstack([V1, Q]), np.concatenate([np.ones(n_ones), lam_f])
