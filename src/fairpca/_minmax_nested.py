r"""Nested min-max components for any number of groups (Matakos et al., 2025).

Fair principal components one at a time, as in [Matakos2025]_: with the first
``r - 1`` components ``U`` fixed, the ``r``-th is a unit vector ``u``
orthogonal to them that minimises the largest group loss of the prefix,

.. math:: \min_{\|u\| = 1,\ U^T u = 0}\ \max_a\ \big(c_a - u^T B_a u\big),
          \qquad c_a = \beta_a(r) - \langle B_a, U U^T\rangle,

with ``B_a`` the group second moments and ``beta_a(r)`` the offset of group
``a``'s loss at rank ``r`` (its own top-``r`` captured second moment, or zero for
max-min variance). Writing ``B'_a = (I - U U^T) B_a (I - U U^T)``, the problem
is relaxed to the rank-one Fantope,

.. math:: L_r = \min_{0 \preceq P \preceq I,\ \operatorname{tr} P \le 1}\
          \max_a\ \big(c_a - \langle B'_a, P\rangle\big)
          = \max_{w \in \Delta_k}\ \sum_a w_a c_a
          - \lambda_{\max}\Big(\sum_a w_a B'_a\Big),

(the right-hand side is its Lagrangian dual; strong duality holds as both sets
are compact and convex). The relaxation's solver (passed in by the estimator)
returns a fractional ``P_hat`` and a dual point ``w`` whose value ``g(w) <=
L_r`` is a certified lower bound on every unit vector's objective.

**Rounding.** The extreme-point rounding of
:func:`fairpca._minmax_rounding.round_extreme_point` moves ``P_hat`` to an
extreme point ``P_bar`` of its optimal face without raising the objective:
``P_bar = sum_j lam_j q_j q_j^T`` with ``s`` fractional eigenvalues,
``s (s + 1) / 2 <= k`` -- rank one (``s = 0``) for two groups, ``s <= 2`` for
up to five groups, ``s <= 3`` for up to nine. A rank-one ``P_bar`` is the
component. Otherwise a unit vector is sought in the span of ``P_bar``
(:func:`best_in_span`): on a plane (``s = 2``) the objective of
``v = cos(t) q_1 + sin(t) q_2`` is the upper envelope of ``k`` sinusoids in
``2 t``, minimised exactly by enumerating its candidate minimisers (each
sinusoid's minimum and each pair's crossings); for ``s >= 3`` the search takes
``q_1``, the eigenvector of the largest eigenvalue. Since the relaxation need
not be tight, the best unit vector can lie outside that span: a local descent
over the unit sphere of the complement (:func:`refine_direction`) then starts
from the span's vector, and where it ends is the component.

**Guarantee.** For each prefix, with ``value_r`` the returned vector's largest
loss, ``OPT_r`` the best unit vector's and ``lam_1 >= 1/s`` the largest
eigenvalue of ``P_bar``:

- ``0 <= value_r - OPT_r <= value_r - g(w)``: the reported gap certifies how
  far the component can be from the best one given the earlier components;
- ``value_r <= max_a loss_a(P_hat) + (1 - lam_1) max_a lambda_max(C_a)``
  with ``C_a = Q^T B'_a Q`` and ``Q`` the eigenvectors of ``P_bar`` (``q_1``
  in place of ``P_bar`` raises loss ``a`` by ``sum_{j > 1} lam_j (C_{a,jj} -
  C_{a,11})``), and ``value_r`` is at most the best unit vector of that span
  when ``s <= 2``: the descent never rises;
- for two groups ``s = 0``: ``value_r <= max_a loss_a(P_hat)``, so the gap is
  the solver's duality gap and the component is optimal to the solver's
  tolerance, as it is whenever the rounding reaches rank one.

For three or more groups the rank-one problem is not convex and its relaxation
need not be tight (three groups each spread along its own line of a plane, the
lines 60 degrees apart, already leave a gap), so the gap is a property of the data as well as of
the solver; it is reported per prefix rather than driven to zero.

References
----------
.. [Matakos2025] A. Matakos, M. Ciaperoni and H. Mannila. "Fair PCA, One
   Component at a Time." arXiv:2503.21563, 2025.
"""

import numpy as np
from scipy.optimize import minimize

from fairpca._linalg import row_space
from fairpca._minmax_rounding import diagonal_captures, round_extreme_point

__all__ = [
    "best_in_span",
    "best_on_circle",
    "complement_moments",
    "fit_nested",
    "refine_direction",
]

#: A descent step must lower the unit-scale objective by this much to count.
_IMPROVEMENT = 1e-13

#: Steps of :func:`refine_direction`, the columns of its subspace, and SLSQP iterations per step.
_MAX_STEPS = 100
_MAX_BASIS = 60
_STEP_ITER = 200

#: Norm (unit-scale problem) below which a gradient direction counts as inside the subspace.
_RESIDUAL = 1e-10


def complement_moments(B, U):
    """``(I - U U^T) B_a (I - U U^T)`` for every group, in O(k p^2 r) rather than O(k p^3).

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
    U : ndarray of shape (p, r)
        Orthonormal columns.

    Returns
    -------
    ndarray of shape (k, p, p)
    """
    BU = B @ U
    UBU = np.einsum("pi,apj->aij", U, BU)
    return (
        B
        - np.einsum("api,qi->apq", BU, U)
        - np.einsum("pi,aqi->apq", U, BU)
        + np.einsum("pi,aij,qj->apq", U, UBU, U, optimize=True)
    )


def _envelope(offsets, C, v):
    """Group losses ``offsets_a - v^T C_a v`` of unit vectors ``v`` (columns), shape (k, m)."""
    return offsets[:, None] - np.einsum("im,aij,jm->am", v, C, v)


def best_on_circle(offsets, C):
    r"""Exact minimiser of the largest loss over the unit circle of a plane.

    For ``v = (cos t, sin t)`` and ``phi = 2 t``,

    .. math:: c_a - v^T C_a v = m_a - x_a \cos\varphi - y_a \sin\varphi,
              \quad m_a = c_a - \tfrac{C_{a,11} + C_{a,22}}{2},\
              x_a = \tfrac{C_{a,11} - C_{a,22}}{2},\ y_a = C_{a,12}.

    A minimiser of the upper envelope of these sinusoids is either the minimum
    of one of them (``phi = atan2(y_a, x_a)``), where only that one is active,
    or a point where two are equal: ``(x_a - x_b) cos phi + (y_a - y_b) sin phi
    = m_a - m_b``, at most two angles per pair. All candidates (and ``t = 0``,
    the plane's first axis) are evaluated; O(k^3) work.

    Parameters
    ----------
    offsets : ndarray of shape (k,)
    C : ndarray of shape (k, 2, 2)
        Each group's second moment in the plane's orthonormal basis.

    Returns
    -------
    v : ndarray of shape (2,)
        Unit vector (in the plane's basis).
    value : float
        ``max_a (offsets_a - v^T C_a v)``.
    """
    m = offsets - (C[:, 0, 0] + C[:, 1, 1]) / 2
    x, y = (C[:, 0, 0] - C[:, 1, 1]) / 2, C[:, 0, 1]
    a, b = np.triu_indices(offsets.size, 1)
    dx, dy, dm = x[a] - x[b], y[a] - y[b], m[a] - m[b]
    radius = np.hypot(dx, dy)
    crossing = radius >= np.abs(dm)
    psi = np.arctan2(dy[crossing], dx[crossing])
    delta = np.arccos(np.clip(dm[crossing] / radius[crossing], -1.0, 1.0))
    phi = np.concatenate([[0.0], np.arctan2(y, x), psi + delta, psi - delta])
    v = np.vstack([np.cos(phi / 2), np.sin(phi / 2)])
    worst = _envelope(offsets, C, v).max(axis=0)
    best = int(np.argmin(worst))
    return v[:, best], float(worst[best])


def best_in_span(offsets, C):
    """Unit vector of ``R^s`` minimising ``max_a (offsets_a - v^T C_a v)``, exact for ``s <= 2``.

    ``s = 1``: the only direction; ``s = 2``: :func:`best_on_circle`. For
    ``s >= 3`` the first axis, which :func:`refine_direction` then improves.

    Parameters
    ----------
    offsets : ndarray of shape (k,)
    C : ndarray of shape (k, s, s)
        Symmetric.

    Returns
    -------
    v : ndarray of shape (s,)
        Unit vector.
    value : float
    """
    if C.shape[1] == 2:
        return best_on_circle(offsets, C)
    v = np.zeros(C.shape[1])
    v[0] = 1.0
    return v, float(np.max(offsets - C[:, 0, 0]))


def _epigraph_step(offsets, C, x0):
    """Local solution of ``min t`` s.t. ``t >= c_a - x^T C_a x``, ``x^T x = 1``, from ``x0``.

    SLSQP on ``m + 1`` variables (``m`` small: the subspace of
    :func:`refine_direction`) with the constraints' exact Jacobians. Returns the
    unit vector it ends at; the caller keeps it only if it is better.
    """
    m = x0.size

    def loss_rows(y):
        return y[-1] - (offsets - np.einsum("i,aij,j->a", y[:-1], C, y[:-1]))

    def loss_jacobian(y):
        return np.column_stack([2.0 * np.einsum("aij,j->ai", C, y[:-1]), np.ones(len(C))])

    result = minimize(
        lambda y: y[-1],
        np.append(x0, np.max(offsets - np.einsum("i,aij,j->a", x0, C, x0))),
        jac=lambda y: np.append(np.zeros(m), 1.0),
        constraints=[
            {"type": "ineq", "fun": loss_rows, "jac": loss_jacobian},
            {
                "type": "eq",
                "fun": lambda y: np.array([y[:-1] @ y[:-1] - 1.0]),
                "jac": lambda y: np.append(2.0 * y[:-1], 0.0)[None, :],
            },
        ],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": _STEP_ITER},
    )
    x = result.x[:-1]
    norm = np.linalg.norm(x)
    return x / norm if np.all(np.isfinite(x)) and norm > 0 else x0


def refine_direction(B, offsets, u):
    """Local descent of ``max_a (offsets_a - u^T B_a u)`` over unit vectors, from ``u``.

    A growing-subspace method: the problem is solved locally (by
    :func:`_epigraph_step`) on the span ``S`` of ``u`` and of the groups'
    gradient directions ``B_a u`` met so far; each step adds the parts of the
    new ``B_a u`` outside ``S``. When those parts vanish, every group's
    gradient at ``u`` lies in ``S``, so a local solution on ``S`` satisfies the
    first-order conditions on the whole sphere; a step that lowers nothing
    also ends the descent. ``S`` restarts from ``u`` when it would exceed
    ``_MAX_BASIS`` columns. The iterates stay in the span of ``u`` and the
    ranges of the ``B_a``: inside the complement of the earlier components
    when the ``B_a`` are projected on it.

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
    offsets : ndarray of shape (k,)
    u : ndarray of shape (p,)
        Unit start.

    Returns
    -------
    u : ndarray of shape (p,)
    value : float
        ``max_a (offsets_a - u^T B_a u)``, never above the start's.
    """
    # Unit-scale problem: SLSQP's tolerances are absolute.
    scale = max(float(np.max(np.abs(offsets))), float(np.max(np.trace(B, axis1=1, axis2=2))))
    scale = max(scale, np.finfo(float).tiny)
    B, offsets = B / scale, offsets / scale
    k, p = B.shape[0], B.shape[1]
    value = float(np.max(offsets - np.einsum("p,apq,q->a", u, B, u)))
    S, BS = np.zeros((p, 0)), np.zeros((k, p, 0))
    for _ in range(_MAX_STEPS):
        if S.shape[1] + k + 1 > min(_MAX_BASIS, p):
            S, BS = np.zeros((p, 0)), np.zeros((k, p, 0))
        new = np.column_stack([u, np.einsum("apq,q->pa", B, u)])
        new -= S @ (S.T @ new)
        if S.shape[1] and np.max(np.linalg.norm(new[:, 1:], axis=0)) <= _RESIDUAL:
            break
        new -= S @ (S.T @ new)  # twice is enough for orthogonality to S
        N = row_space(new.T)[0]
        S, BS = np.column_stack([S, N]), np.concatenate([BS, B @ N], axis=2)
        x = _epigraph_step(offsets, np.einsum("pi,apj->aij", S, BS), S.T @ u)
        step = S @ x
        step /= np.linalg.norm(step)
        step_value = float(np.max(offsets - np.einsum("p,apq,q->a", step, B, step)))
        if not step_value < value - _IMPROVEMENT:
            break
        u, value = step, step_value
    return u, value * scale


def _next_component(B_r, offsets, V, lam_hat, U):
    """The rank-one rounding of one prefix's fractional solution, orthogonal to ``U``.

    Returns
    -------
    u : ndarray of shape (p,)
        Unit vector orthogonal to the columns of ``U``.
    span : int
        Number of fractional eigenvalues the extreme-point rounding left.
    """
    Q, lam = round_extreme_point(B_r, offsets, 1, V, lam_hat)
    span = int(np.sum(lam < 1))
    u = np.zeros(B_r.shape[1])
    if Q.shape[1]:
        order = np.argsort(-lam, kind="stable")  # the span search starts at the largest
        Q = Q[:, order]
        u = Q @ best_in_span(offsets, np.einsum("pi,apq,qj->aij", Q, B_r, Q))[0]
        if span >= 2:
            # The relaxation may not be tight: the best unit vector can lie outside the span.
            u = refine_direction(B_r, offsets, u)[0]
    # B_r vanishes on range(U): removing that part and renormalising only adds capture.
    u = u - U @ (U.T @ u)
    norm = np.linalg.norm(u)
    if norm <= 1e-8:
        # Nothing captures anything on the complement: every direction there is as good.
        return row_space(U.T)[1][:, 0], span
    return u / norm, span


def fit_nested(B, targets, solve):
    """Nested min-max components, one rank-one problem per prefix (``k >= 2`` groups).

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
        Group second moments.
    targets : ndarray of shape (d, k)
        ``targets[r - 1, a]``: the offset of group ``a``'s loss at rank ``r``.
    solve : callable
        ``solve(B_r, offsets) -> (V, lam_hat, w, g, n_iter)``: the relaxation's
        solver at ``d = 1`` (eigen-decomposition ``V diag(lam_hat) V^T`` of the
        fractional solution, dual point, its dual value, iterations).

    Returns
    -------
    components : ndarray of shape (d, p)
        Orthonormal rows, the ``r``-th solving prefix ``r``'s rank-one problem.
    prefix_losses : ndarray of shape (d, k)
        Group losses of each prefix.
    relaxed : ndarray of shape (d,)
        ``max_a loss_a(P_hat)`` of each prefix's fractional solution.
    bounds : ndarray of shape (d,)
        Dual bound ``g(w)`` of each prefix's problem (given the earlier rows).
    spans : ndarray of shape (d,)
        Fractional eigenvalues left by each prefix's extreme-point rounding
        (0 for two groups).
    n_iter : int
        Solver iterations over all prefixes.
    """
    d, p = targets.shape[0], B.shape[1]
    U = np.zeros((p, 0))
    captured = np.zeros(B.shape[0])
    prefix_losses, relaxed, bounds, spans, n_iter = [], [], [], [], 0
    for r in range(d):
        B_r = complement_moments(B, U)
        offsets = targets[r] - captured
        V, lam_hat, _, g, iterations = solve(B_r, offsets)
        relaxed.append(float(np.max(offsets - diagonal_captures(B_r, V) @ lam_hat)))
        u, span = _next_component(B_r, offsets, V, lam_hat, U)
        U = np.column_stack([U, u])
        captured = captured + np.einsum("p,apq,q->a", u, B, u)
        prefix_losses.append(targets[r] - captured)
        bounds.append(g)
        spans.append(span)
        n_iter += iterations
    return (
        U.T,
        np.array(prefix_losses),
        np.array(relaxed),
        np.array(bounds),
        np.array(spans),
        n_iter,
    )
