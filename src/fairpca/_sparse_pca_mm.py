r"""Max-min fair (sparse) PCA by minorization-maximization (Babu and Stoica).

Babu and Stoica [Babu2025]_ solve the max-min fair PCA of Samadi et al.: with
``B_a`` group ``a``'s second moment about the pooled mean (``k`` groups),

.. math::

    \max_{U \in \mathbb{R}^{p \times d},\ U^T U = I}\ F(U), \qquad
    F(U) = \min_a \operatorname{tr}(U^T B_a U) - \rho\, \Phi(U),

with ``Phi = 0`` for fair PCA and a sparsity penalty for fair sparse PCA.
The paper lets the user choose the penalty weight; this module's penalty is
a smoothed count of the non-zero loadings (our choice of surrogate, written
from the mathematics below),

.. math::

    \Phi(U) = \sum_{ij} \phi(U_{ij}), \qquad
    \phi(x) = \kappa \log(1 + x^2 / \varepsilon^2), \qquad
    \kappa = 1 / \log(1 + 1 / \varepsilon^2),

so that ``phi(0) = 0``, ``phi(+-1) = 1`` and ``phi(x)`` is close to 1 once
``|x| >> eps``: ``rho`` is the variance a non-zero loading must earn.

**Minorizer.** ``U -> tr(U^T B_a U)`` is convex, so it lies above its
tangent at the current ``U_t``: ``tr(U^T B_a U) >= 2 <B_a U_t, U> -
tr(U_t^T B_a U_t)``, with equality at ``U_t``. ``phi`` is concave in
``x^2``, so it lies below its tangent in ``x^2``:
``phi(x) <= phi(x_t) + omega (x^2 - x_t^2)`` with
``omega = kappa / (eps^2 + x_t^2)``. The weighted square sum is
``sum omega_ij U_ij^2 = sum (omega_ij - m_j) U_ij^2 + sum_j m_j ||u_j||^2``
with ``m_j = max_i omega_ij``: the first part is concave, below its tangent
at ``U_t``, and ``||u_j||^2 <= 1`` on the set ``U^T U <= I``, with equality
on orthonormal ``U``. Together, on ``U^T U <= I``,

.. math::

    F(U) \ge S_t(U) = \min_a \langle G_a, U\rangle + c_a + \text{const},
    \quad G_a = 2 B_a U_t + 2\rho\,(M - \Omega) \circ U_t,
    \quad c_a = -\operatorname{tr}(U_t^T B_a U_t),

(``M`` the matrix of the column maxima ``m_j``), with equality at ``U_t``.

**The surrogate step.** Maximise ``S_t`` over the convex set ``U^T U <= I``
(operator norm at most one). Its Lagrangian dual over the simplex of group
weights ``w`` is

.. math:: \min_{w \ge 0,\ \sum_a w_a = 1}\ \|G_w\|_* + \sum_a w_a c_a,
    \qquad G_w = \sum_a w_a G_a,

(``max`` of ``<G, U>`` over the unit operator-norm ball is the nuclear norm
of ``G``, attained at the polar factor of ``G``). The maximiser is the polar
factor of ``G_w`` at the optimal ``w``, which has orthonormal columns when
``G_w`` has full column rank: the relaxation is tight and the step stays on
the constraint set. The dual is a convex problem in ``k`` weights: a bounded
scalar search for two groups, SLSQP with the gradient
``(<G_a, polar(G_w)> + c_a)_a`` for more.

**Monotonicity.** ``F(U_{t+1}) >= S_t(U_{t+1}) >= S_t(U_t) = F(U_t)``: the
design objective never decreases. The dual is solved to rounding, so a step
that would lower ``F`` (an inexact dual) is refused and the iteration stops.
It stops on the relative change of ``F`` (``tol``).

**Zeros.** The smoothed penalty drives unused loadings to ``O(eps^2)`` but
not to zero; the returned components set the entries below ``eps`` to zero
and rescale each column to unit norm. The columns are orthogonal up to the
size of the dropped entries (and exactly with ``rho = 0``, where nothing is
dropped).

References
----------
.. [Babu2025] P. Babu and P. Stoica. "Fair principal component analysis (PCA):
   minorization-maximization algorithms for fair PCA, fair robust PCA and fair
   sparse PCA." TMLR 2025 (arXiv:2305.05963).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from sklearn.utils import Bunch

from fairpca._linalg import top_eigh
from fairpca._minmax_rounding import diagonal_captures

__all__ = ["max_min_sparse_pca", "max_min_objective", "smoothed_count"]

#: Scale of the smoothed count: loadings well above it cost about one unit of
#: ``rho``; smaller ones cost little and are set to zero at the end.
EPSILON = 0.03


def smoothed_count(U, eps=EPSILON):
    """``Phi(U) = sum_ij kappa log(1 + U_ij^2 / eps^2)``, ``kappa = 1 / log(1 + 1/eps^2)``.

    Parameters
    ----------
    U : ndarray of shape (p, d)
        Loadings.
    eps : float, default=EPSILON
        Scale below which a loading costs little.

    Returns
    -------
    float
        The smoothed number of non-zero entries (``phi(+-1) = 1``, ``phi(0) = 0``).
    """
    return float(np.log1p(U**2 / eps**2).sum() / np.log1p(1.0 / eps**2))


def max_min_objective(B, U, rho, eps=EPSILON):
    """``F(U) = min_a tr(U^T B_a U) - rho Phi(U)``.

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
        Group second moments about the pooled mean.
    U : ndarray of shape (p, d)
        Loadings (orthonormal columns for the problem's feasible set).
    rho : float
        Penalty weight, in the units of ``B``.
    eps : float, default=EPSILON
        Scale of the smoothed count.

    Returns
    -------
    float
    """
    # Each group's captured second moment tr(U^T B_a U): the sum of its per-column captures.
    value = float(diagonal_captures(B, U).sum(axis=1).min())
    return value - rho * smoothed_count(U, eps) if rho else value


def _polar(G):
    """Polar factor ``W V^T`` of ``G = W diag(s) V^T`` and the nuclear norm ``sum(s)``."""
    W, s, Vt = np.linalg.svd(G, full_matrices=False)
    return W @ Vt, float(s.sum())


def _dual(G, c, w0):
    """Minimise ``||sum_a w_a G_a||_* + w^T c`` over the simplex: the optimal ``w``.

    ``G`` has shape (k, p, d), ``c`` shape (k,), ``w0`` the starting weights.
    """

    def value_and_gradient(w):
        polar, nuclear = _polar(np.tensordot(w, G, axes=1))
        return nuclear + w @ c, np.einsum("apd,pd->a", G, polar) + c

    k = c.size
    if k == 2:
        # One weight: a bounded scalar search; the ends are compared too (a kink there).
        result = minimize_scalar(
            lambda t: value_and_gradient(np.array([t, 1.0 - t]))[0],
            bounds=(0.0, 1.0),
            method="bounded",
            options={"xatol": 1e-13},
        )
        candidates = [np.array([result.x, 1.0 - result.x]), np.eye(2)[0], np.eye(2)[1]]
        return min(candidates, key=lambda w: value_and_gradient(w)[0])
    result = minimize(
        value_and_gradient,
        w0,
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * k,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones(k)}],
        options={"ftol": 1e-15, "maxiter": 500},
    )
    w = np.clip(result.x, 0.0, None)
    return w / w.sum()


def _surrogate_terms(B, U, rho, eps):
    """The minorizer at ``U``: ``G`` (k, p, d) and ``c`` (k,) (module docstring)."""
    BU = B @ U
    G = 2.0 * BU
    c = -np.einsum("apd,pd->a", BU, U)
    if rho:
        omega = 1.0 / ((eps**2 + U**2) * np.log1p(1.0 / eps**2))
        G = G + 2.0 * rho * (omega.max(axis=0) - omega) * U
    return G, c


def _sparsify(U, eps):
    """Entries below ``eps`` set to zero, columns rescaled to unit norm."""
    V = np.where(np.abs(U) < eps, 0.0, U)
    norms = np.linalg.norm(V, axis=0)
    return V / np.where(norms > 0, norms, 1.0)


def max_min_sparse_pca(B, d, rho, *, tol=1e-8, max_iter=1000, eps=EPSILON, start=None):
    """Maximise ``min_a tr(U^T B_a U) - rho Phi(U)`` over orthonormal ``U`` by MM.

    Parameters
    ----------
    B : ndarray of shape (k, p, p)
        Group second moments about the pooled mean (``k >= 2``).
    d : int
        Number of columns of ``U``.
    rho : float
        Penalty weight ``>= 0`` (0: fair PCA, dense).
    tol : float, default=1e-8
        Stop when ``|F_{t+1} - F_t| <= tol * max(|F_{t+1}|, tiny)``.
    max_iter : int, default=1000
        Most MM steps.
    eps : float, default=EPSILON
        Scale of the smoothed count.
    start : ndarray of shape (p, d), optional
        Orthonormal starting loadings; default the top ``d`` eigenvectors of
        the mean of the ``B_a``.

    Returns
    -------
    result : Bunch
        ``loadings`` (p, d): the returned loadings (entries below ``eps`` set
        to zero when ``rho > 0``, unit columns); ``iterate`` (p, d): the last
        MM iterate (orthonormal); ``objective_path`` (t + 1,): ``F`` at
        ``U_0 .. U_t``, non-decreasing; ``weights`` (k,): the last dual
        weights; ``n_iter``; ``converged``: whether the stopping rule was met;
        ``change``: the last relative change of ``F``.
    """
    k = B.shape[0]
    U = top_eigh(B.mean(axis=0), d)[1] if start is None else start
    w = np.full(k, 1.0 / k)
    path = [max_min_objective(B, U, rho, eps)]
    converged, change, n_iter, push = False, np.inf, 0, 1.0
    for n_iter in range(1, max_iter + 1):
        G, c = _surrogate_terms(B, U, rho, eps)
        w = _dual(G, c, w)
        candidate = _polar(np.tensordot(w, G, axes=1))[0]
        value = max_min_objective(B, candidate, rho, eps)
        scale = max(abs(value), np.finfo(float).tiny)
        change = (value - path[-1]) / scale
        if value < path[-1]:
            # Only an inexact dual can lower F: keep U_t, which is then stationary to rounding.
            converged = abs(change) <= tol
            n_iter -= 1
            break
        # Extrapolation along the last step, kept only where it raises F: still monotone.
        trial = _polar(candidate + push * (candidate - U))[0]
        trial_value = max_min_objective(B, trial, rho, eps)
        if trial_value > value:
            candidate, value, push = trial, trial_value, 2.0 * push
        else:
            push = 1.0
        change = (value - path[-1]) / max(abs(value), np.finfo(float).tiny)
        U = candidate
        path.append(value)
        if change <= tol:
            converged = True
            break
    loadings = _sparsify(U, eps) if rho else U
    return Bunch(
        loadings=loadings,
        iterate=U,
        objective_path=np.array(path),
        weights=w,
        n_iter=n_iter,
        converged=converged,
        change=float(abs(change)),
    )
