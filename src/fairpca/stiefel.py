"""Geometry of the Stiefel manifold and a Riemannian L-BFGS minimiser.

The Stiefel manifold ``St(p, d) = {V in R^{p x d} : V^T V = I_d}`` carries the
metric it inherits from ``R^{p x d}`` (the *embedded* metric,
``<A, B> = trace(A^T B)``).  This module provides the few pieces of geometry the
solvers need -- tangent projection, QR and polar retractions, uniformly
distributed random points, a distance between the spanned subspaces -- and
:func:`minimize_lbfgs`, a limited-memory Riemannian BFGS method with vector
transport by projection and an Armijo back-tracking line search along the
retraction (Absil, Mahony & Sepulchre, *Optimization Algorithms on Matrix
Manifolds*, 2008, ch. 4 and 8; Huang, Gallivan & Absil, SIAM J. Optim. 25(3),
2015), and :func:`minimize_trust_region`, the Riemannian trust-region Newton
method with a truncated conjugate-gradient inner solver (Absil, Baker &
Gallivan, Found. Comput. Math. 7, 2007) for ill-conditioned costs, where
L-BFGS stalls.

All computations are in ``float64``.  Points are ``(p, d)`` arrays with
orthonormal columns, tangent vectors at ``V`` are ``(p, d)`` arrays ``xi`` with
``V^T xi + xi^T V = 0``.
"""

import logging
import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from fairpca._validation import check_number

__all__ = [
    "StiefelResult",
    "minimize_lbfgs",
    "minimize_trust_region",
    "random_point",
    "retract_polar",
    "retract_qr",
    "subspace_distance",
    "tangent_projection",
]

logger = logging.getLogger(__name__)

#: Largest entry of ``|V^T V - I|`` accepted for a starting point.
ORTHONORMALITY_ATOL = 1e-8

_EPS = np.finfo(np.float64).eps
#: Conjugate-gradient directions (and their Hessian products) a trust-region step keeps
#: so that a retry in a smaller region needs no new products (a few MiB in practice).
_CG_PATH_BYTES = 2**27


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------


def _as_matrix(A, name):
    """Return ``A`` as a finite 2-D float64 array or raise naming ``name``."""
    A = np.asarray(A)
    if A.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {A.dtype}.")
    A = A.astype(np.float64, copy=False)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got an array of shape {A.shape}.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return A


def _check_point(V, name, atol=ORTHONORMALITY_ATOL):
    """Validate that ``V`` is a point of a Stiefel manifold."""
    V = _as_matrix(V, name)
    p, d = V.shape
    if d < 1 or d > p:
        raise ValueError(f"{name} must have shape (p, d) with 1 <= d <= p, got shape {V.shape}.")
    err = np.max(np.abs(V.T @ V - np.eye(d)))
    if err > atol:
        raise ValueError(
            f"{name} must have orthonormal columns (max |{name}^T {name} - I| <= {atol:g}), "
            f"got {err:.3g}."
        )
    return V


def _check_same_shape(V, xi, name_v, name_xi):
    if xi.shape != V.shape:
        raise ValueError(
            f"{name_xi} must have the same shape as {name_v} {V.shape}, got {xi.shape}."
        )


# ---------------------------------------------------------------------------
# geometry (unchecked kernels used in the inner loop, checked public wrappers)
# ---------------------------------------------------------------------------


def _inner(A, B):
    return float(np.vdot(A, B))


def _proj(V, G):
    VtG = V.T @ G
    return G - V @ (0.5 * (VtG + VtG.T))


def _retract_qr(V, xi):
    Q, R = np.linalg.qr(V + xi)
    signs = np.sign(np.diag(R))
    signs[signs == 0] = 1.0
    return Q * signs


def _retract_polar(V, xi):
    U, _, Wt = np.linalg.svd(V + xi, full_matrices=False)
    return U @ Wt


_RETRACTIONS = {"qr": _retract_qr, "polar": _retract_polar}


def tangent_projection(V, G):
    """Orthogonal projection onto the tangent space of the Stiefel manifold.

    With the embedded metric the projection of an ambient matrix ``G`` onto
    ``T_V St = {xi : V^T xi + xi^T V = 0}`` is ``G - V sym(V^T G)``, where
    ``sym(A) = (A + A^T) / 2``.  Applied to a Euclidean gradient it gives the
    Riemannian gradient.

    Parameters
    ----------
    V : array-like of shape (p, d)
        Point of ``St(p, d)`` (orthonormal columns; not re-checked).
    G : array-like of shape (p, d)
        Ambient matrix, e.g. a Euclidean gradient.

    Returns
    -------
    xi : ndarray of shape (p, d)
        Tangent vector at ``V``.
    """
    V = _as_matrix(V, "V")
    G = _as_matrix(G, "G")
    _check_same_shape(V, G, "V", "G")
    return _proj(V, G)


def retract_qr(V, xi):
    """QR retraction ``R_V(xi) = qf(V + xi)``.

    ``qf`` is the Q factor of the thin QR decomposition normalised so that the
    diagonal of R is positive; this makes the map unique, continuous and
    deterministic (it does not depend on the sign convention of LAPACK).

    Parameters
    ----------
    V : array-like of shape (p, d)
        Point of ``St(p, d)``.
    xi : array-like of shape (p, d)
        Tangent vector at ``V``.

    Returns
    -------
    W : ndarray of shape (p, d)
        New point with orthonormal columns.
    """
    V = _as_matrix(V, "V")
    xi = _as_matrix(xi, "xi")
    _check_same_shape(V, xi, "V", "xi")
    return _retract_qr(V, xi)


def retract_polar(V, xi):
    """Polar retraction ``R_V(xi) = (V + xi)(I + xi^T xi)^{-1/2}``.

    Computed as the orthogonal polar factor ``U W^T`` of the thin SVD
    ``V + xi = U S W^T``, which is numerically stable and equals the formula
    above whenever ``xi`` is tangent at ``V`` (then
    ``(V + xi)^T (V + xi) = I + xi^T xi``).  It is the point of ``St(p, d)``
    closest to ``V + xi`` in Frobenius norm.

    Parameters
    ----------
    V : array-like of shape (p, d)
        Point of ``St(p, d)``.
    xi : array-like of shape (p, d)
        Tangent vector at ``V``.

    Returns
    -------
    W : ndarray of shape (p, d)
        New point with orthonormal columns.
    """
    V = _as_matrix(V, "V")
    xi = _as_matrix(xi, "xi")
    _check_same_shape(V, xi, "V", "xi")
    return _retract_polar(V, xi)


def random_point(n_features, n_components, random_state=None):
    """Draw a point uniformly distributed on ``St(n_features, n_components)``.

    The Q factor (with positive diagonal of R) of a matrix of independent
    standard normal entries is Haar distributed.

    Parameters
    ----------
    n_features : int
        Number of rows ``p``.
    n_components : int
        Number of columns ``d``, ``1 <= d <= p``.
    random_state : int, RandomState instance or None, default=None
        Seed or generator, passed to :func:`sklearn.utils.check_random_state`
        (as everywhere in scikit-learn, None means numpy's global RandomState
        singleton; pass an int for reproducible output).

    Returns
    -------
    V : ndarray of shape (n_features, n_components)
        Matrix with orthonormal columns.
    """
    p = check_number(n_features, "n_features", minimum=1)
    d = check_number(n_components, "n_components", minimum=1)
    if d > p:
        raise ValueError(f"n_components must be <= n_features={p}, got {d}.")
    rng = check_random_state(random_state)
    G = rng.standard_normal((p, d))
    return _retract_qr(np.zeros((p, d)), G)


def subspace_distance(V, W):
    """Frobenius distance between the column spaces of ``V`` and ``W``.

    Returns ``||V V^T - W W^T||_F``, computed without cancellation as
    ``sqrt(||W - V V^T W||_F^2 + ||V - W W^T V||_F^2)``.  For subspaces of the
    same dimension it equals ``sqrt(2) * ||sin(theta)||_2`` with ``theta`` the
    principal angles, so it is 0 for equal subspaces and at most
    ``sqrt(2 d)``.  It does not depend on the basis chosen for either subspace.

    Parameters
    ----------
    V : array-like of shape (p, d1)
        Matrix with orthonormal columns.
    W : array-like of shape (p, d2)
        Matrix with orthonormal columns.

    Returns
    -------
    distance : float
        ``||V V^T - W W^T||_F``.
    """
    V = _check_point(V, "V", atol=1e-6)
    W = _check_point(W, "W", atol=1e-6)
    if V.shape[0] != W.shape[0]:
        raise ValueError(
            f"V and W must have the same number of rows, got {V.shape[0]} and {W.shape[0]}."
        )
    r1 = W - V @ (V.T @ W)
    r2 = V - W @ (W.T @ V)
    return float(np.sqrt(np.sum(r1 * r1) + np.sum(r2 * r2)))


# ---------------------------------------------------------------------------
# Riemannian L-BFGS
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StiefelResult:
    """Outcome of :func:`minimize_lbfgs` and :func:`minimize_trust_region`.

    Attributes
    ----------
    point : ndarray of shape (p, d)
        Final iterate (orthonormal columns).
    cost : float
        Cost at ``point``.
    grad_norm : float
        Frobenius norm of the Riemannian gradient at ``point``.
    n_iter : int
        Number of accepted steps.
    converged : bool
        True when ``grad_norm <= gtol``.
    message : str
        Why the iteration stopped.
    n_evals : int
        Number of calls to ``cost_and_grad``.
    cost_history : ndarray of shape (n_iter + 1,)
        Cost at the starting point and after every step.
    grad_norm_history : ndarray of shape (n_iter + 1,)
        Riemannian gradient norm at the starting point and after every step.
    """

    point: np.ndarray
    cost: float
    grad_norm: float
    n_iter: int
    converged: bool
    message: str
    n_evals: int
    cost_history: np.ndarray
    grad_norm_history: np.ndarray


def _retraction(name):
    """The retraction called ``name``, or a ValueError listing the valid ones."""
    if not isinstance(name, str) or name not in _RETRACTIONS:
        options = ", ".join(repr(k) for k in _RETRACTIONS)
        raise ValueError(f"retraction must be one of {options}; got {name!r}.")
    return _RETRACTIONS[name]


def _start(cost_and_grad, V0):
    """Checked objective and the start: ``(objective, V, cost, egrad, grad, grad_norm)``."""
    objective = _Objective(cost_and_grad, V0.shape)
    V = V0.copy()
    cost, egrad = objective(V, "at V0")
    grad = _proj(V, egrad)
    return objective, V, cost, egrad, grad, np.sqrt(_inner(grad, grad))


def _result(V, cost, grad_norm, gtol, n_iter, message, objective, costs, grad_norms):
    """The :class:`StiefelResult` of a finished run; converged when ``grad_norm <= gtol``."""
    return StiefelResult(
        point=V,
        cost=cost,
        grad_norm=float(grad_norm),
        n_iter=n_iter,
        converged=bool(grad_norm <= gtol),
        message=message,
        n_evals=objective.n_evals,
        cost_history=np.asarray(costs),
        grad_norm_history=np.asarray(grad_norms),
    )


class _Objective:
    """Wrap ``cost_and_grad``: check its output and count evaluations."""

    def __init__(self, fun, shape):
        self.fun = fun
        self.shape = shape
        self.n_evals = 0

    def __call__(self, V, where):
        self.n_evals += 1
        cost, egrad = self.fun(V)
        cost = np.asarray(cost, dtype=np.float64)
        if cost.size != 1:
            raise ValueError(
                f"cost_and_grad must return a scalar cost, got shape {cost.shape} {where}."
            )
        cost = float(cost.reshape(()))
        if not np.isfinite(cost):
            raise ValueError(f"cost_and_grad returned a non-finite cost ({cost}) {where}.")
        egrad = np.asarray(egrad, dtype=np.float64)
        if egrad.shape != self.shape:
            raise ValueError(
                f"cost_and_grad must return a gradient of shape {self.shape}, "
                f"got {egrad.shape} {where}."
            )
        if not np.all(np.isfinite(egrad)):
            raise ValueError(f"cost_and_grad returned a non-finite gradient {where}.")
        return cost, egrad


def minimize_lbfgs(
    cost_and_grad,
    V0,
    *,
    memory=10,
    max_iter=300,
    gtol=1e-6,
    retraction="qr",
    armijo=1e-4,
    max_backtracks=40,
    callback=None,
):
    """Minimise a smooth function on ``St(p, d)`` with Riemannian L-BFGS.

    At each iterate ``V`` the Riemannian gradient is the tangent projection of
    the Euclidean gradient.  The search direction ``-H grad`` comes from the
    L-BFGS two-loop recursion on the stored pairs ``(s_i, y_i)`` of tangent
    vectors, with initial scaling ``gamma = s^T y / y^T y`` of the newest pair.
    After a step all stored pairs are moved to the new tangent space by
    orthogonal projection (vector transport by projection); a new pair is
    ``s = P(t xi)``, ``y = grad_new - P(grad_old)`` and is skipped when
    ``s^T y`` is not (numerically) positive.  If the direction is not a
    descent direction the memory is cleared and the scaled negative gradient
    is used.  The step ``t`` along ``R_V(t xi)`` is found by halving from
    ``t = 1`` until the Armijo condition
    ``f(R_V(t xi)) <= f(V) + armijo * t * <grad, xi> + 10 eps |f(V)|`` holds;
    the last term only absorbs rounding in ``f`` near a minimiser.

    Parameters
    ----------
    cost_and_grad : callable
        ``cost_and_grad(V) -> (cost, euclidean_gradient)`` with ``V`` of shape
        (p, d), ``cost`` a finite float and ``euclidean_gradient`` an array of
        shape (p, d) (gradient of any smooth extension of the cost to
        ``R^{p x d}``).
    V0 : array-like of shape (p, d)
        Starting point; its columns must be orthonormal within
        ``ORTHONORMALITY_ATOL`` (1e-8, largest entry of ``|V0^T V0 - I|``).
    memory : int, default=10
        Number of curvature pairs kept; 0 gives steepest descent with the
        Barzilai-Borwein initial step.
    max_iter : int, default=300
        Maximum number of steps.
    gtol : float, default=1e-6
        Stop when the Frobenius norm of the Riemannian gradient is ``<= gtol``.
    retraction : {"qr", "polar"}, default="qr"
        Retraction used for the steps, see :func:`retract_qr` and
        :func:`retract_polar`.
    armijo : float, default=1e-4
        Sufficient-decrease constant of the Armijo condition, in (0, 1).
    max_backtracks : int, default=40
        Maximum number of step halvings per line search.  If the line search
        fails along an L-BFGS direction it is retried once along the negative
        gradient; if that fails too, the iteration stops unconverged.
    callback : callable or None, default=None
        Called after every step as ``callback(n_iter, V, cost, grad_norm)``;
        if it returns True the iteration stops (unconverged unless the
        gradient test holds).

    Returns
    -------
    result : StiefelResult
        Final point, cost, gradient norm, iteration count, convergence flag
        and histories.  Reaching ``max_iter`` gives ``converged=False``; no
        warning is emitted here, callers decide.

    Raises
    ------
    ValueError
        If ``V0`` is not a finite 2-D array with orthonormal columns, an option
        is out of range or unknown, or ``cost_and_grad`` returns a non-finite
        cost or gradient (or one of the wrong shape).
    """
    V = _check_point(V0, "V0")
    memory = check_number(memory, "memory", minimum=0)
    max_iter = check_number(max_iter, "max_iter", minimum=0)
    max_backtracks = check_number(max_backtracks, "max_backtracks", minimum=1)
    gtol = check_number(gtol, "gtol", numbers.Real, minimum=0)
    armijo = check_number(
        armijo, "armijo", numbers.Real, minimum=0, maximum=1, include_boundaries="neither"
    )
    retract = _retraction(retraction)
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None, got {callback!r}.")
    objective, V, cost, _, grad, grad_norm = _start(cost_and_grad, V)
    costs, grad_norms = [cost], [grad_norm]
    pairs = []  # (s, y, rho) tangent at the current iterate, oldest first
    gamma = None  # initial inverse-Hessian scaling from the newest pair
    n_iter = 0
    message = "max_iter reached"

    while True:
        if grad_norm <= gtol:
            message = "gradient norm <= gtol"
            break
        if n_iter >= max_iter:
            break

        direction, slope = _lbfgs_direction(grad, pairs, gamma, grad_norm)
        step = None
        if direction is None:
            logger.debug("iteration %d: not a descent direction, memory reset", n_iter)
        else:
            step = _armijo_search(
                objective, retract, V, cost, direction, slope, armijo, max_backtracks, n_iter
            )
        if step is None and pairs:
            # The L-BFGS direction is unusable: forget the pairs, retry along -grad.
            logger.debug("iteration %d: L-BFGS step rejected, memory reset", n_iter)
            pairs.clear()
            direction, slope = _lbfgs_direction(grad, pairs, gamma, grad_norm)
            step = _armijo_search(
                objective, retract, V, cost, direction, slope, armijo, max_backtracks, n_iter
            )
        if step is None:
            message = "line search failed"
            logger.debug("iteration %d: line search failed, stopping", n_iter)
            break
        t, V_new, cost_new, egrad_new = step

        grad_new = _proj(V_new, egrad_new)
        s = _proj(V_new, t * direction)
        y = grad_new - _proj(V_new, grad)
        transported = []
        for s_i, y_i, _ in pairs:
            s_i, y_i = _proj(V_new, s_i), _proj(V_new, y_i)
            sy = _inner(s_i, y_i)
            if sy > 0:
                transported.append((s_i, y_i, 1.0 / sy))
        pairs = transported
        sy, yy = _inner(s, y), _inner(y, y)
        if sy > 1e-10 * np.sqrt(_inner(s, s) * yy):
            gamma = sy / yy
            if memory > 0:
                pairs.append((s, y, 1.0 / sy))
                if len(pairs) > memory:
                    pairs.pop(0)
        else:
            logger.debug("iteration %d: curvature pair skipped (s^T y = %.3g)", n_iter, sy)

        V, cost, grad = V_new, cost_new, grad_new
        grad_norm = np.sqrt(_inner(grad, grad))
        n_iter += 1
        costs.append(cost)
        grad_norms.append(grad_norm)
        if callback is not None and callback(n_iter, V, cost, grad_norm) is True:
            message = "stopped by callback"
            if grad_norm <= gtol:
                message = "gradient norm <= gtol"
            break

    return _result(V, cost, grad_norm, gtol, n_iter, message, objective, costs, grad_norms)


def _lbfgs_direction(grad, pairs, gamma, grad_norm):
    """Two-loop recursion; return ``(direction, slope)`` or ``(None, None)``."""
    if not pairs:
        scale = gamma if gamma is not None else 1.0 / grad_norm
        return -scale * grad, -scale * grad_norm**2
    q = grad.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        alpha = rho * _inner(s, q)
        q -= alpha * y
        alphas.append(alpha)
    r = gamma * q
    for (s, y, rho), alpha in zip(pairs, reversed(alphas), strict=True):
        beta = rho * _inner(y, r)
        r += (alpha - beta) * s
    direction = -r
    slope = _inner(grad, direction)
    norm = np.sqrt(_inner(direction, direction))
    if not np.isfinite(slope) or slope >= -1e-10 * grad_norm * norm:
        return None, None
    return direction, slope


def _armijo_search(objective, retract, V, cost, direction, slope, c, max_backtracks, it):
    """Back-track from ``t = 1``; return ``(t, V_new, cost_new, egrad_new)`` or None."""
    slack = 10.0 * _EPS * abs(cost)
    t = 1.0
    for _ in range(max_backtracks + 1):
        V_new = retract(V, t * direction)
        cost_new, egrad_new = objective(V_new, f"in the line search of iteration {it}")
        if cost_new <= cost + c * t * slope + slack:
            return t, V_new, cost_new, egrad_new
        t *= 0.5
    return None


# ---------------------------------------------------------------------------
# Riemannian trust regions
# ---------------------------------------------------------------------------


def _hessian(V, egrad, ehess_xi, xi):
    """Riemannian Hessian ``P_V(D egrad[xi] - xi sym(V^T egrad))`` of the embedded metric."""
    VtG = V.T @ egrad
    return _proj(V, ehess_xi - xi @ (0.5 * (VtG + VtG.T)))


def minimize_trust_region(
    cost_and_grad,
    hess_vec,
    V0,
    *,
    max_iter=1000,
    gtol=1e-6,
    max_inner=None,
    theta=1.0,
    preconditioner=None,
    retraction="qr",
    callback=None,
):
    """Minimise a smooth function on ``St(p, d)`` by Riemannian trust regions.

    Each step minimises, approximately, the second-order model
    ``m(eta) = f(V) + <grad, eta> + <eta, Hess[eta]> / 2`` over tangent
    vectors with ``||eta|| <= Delta`` by the truncated conjugate-gradient
    method of Steihaug and Toint (stopped at the boundary, at negative
    curvature, or when the model residual is below
    ``||grad|| min(||grad||^theta, 0.1)``, which gives local convergence of
    order ``1 + theta``), and accepts ``R_V(eta)`` when the actual decrease is at
    least a tenth of the predicted one; the radius is divided by 4 after a
    poor prediction (ratio < 1/4) and doubled after a good one (> 3/4) that
    reached the boundary (Absil, Baker & Gallivan, 2007; Absil, Mahony &
    Sepulchre, 2008, ch. 7). A retry after a rejected step follows the same
    CG iterations into the smaller region, so it costs no Hessian products.
    Unlike L-BFGS, whose rate degrades with the condition number of the
    Hessian, the Newton model resolves stiff and soft directions alike: use
    it when the cost is badly conditioned (a penalty with a large weight, for
    instance).

    The Riemannian Hessian is ``P_V(D egrad(V)[xi] - xi sym(V^T egrad))``,
    built from the Euclidean Hessian-vector product ``hess_vec``; a small
    relative constant regularises the ratio test so that decreases at
    rounding level are not judged as failures (as in Manopt).

    Parameters
    ----------
    cost_and_grad : callable
        ``cost_and_grad(V) -> (cost, euclidean_gradient)``, as in
        :func:`minimize_lbfgs`.
    hess_vec : callable
        ``hess_vec(V, xi) -> D euclidean_gradient(V)[xi]``, the Euclidean
        Hessian of the same smooth extension applied to the tangent vector
        ``xi``, shape (p, d). An accurate finite difference of the gradient
        is acceptable.
    V0 : array-like of shape (p, d)
        Starting point with orthonormal columns (within ``ORTHONORMALITY_ATOL``).
    max_iter : int, default=1000
        Maximum number of trust-region steps (accepted or not).
    gtol : float, default=1e-6
        Stop when the Frobenius norm of the Riemannian gradient is ``<= gtol``.
    max_inner : int or None, default=None
        Maximum conjugate-gradient iterations per step; None: the dimension
        ``p d - d (d + 1) / 2`` of the manifold.
    theta : float, default=1.0
        Exponent of the conjugate-gradient stopping rule, in ``(0, 1]``:
        1 (quadratic local convergence) solves each Newton system more
        accurately; smaller values stop the inner iterations earlier, at
        the price of more trust-region steps near the solution. Worth it
        when the Hessian is badly conditioned and its products dominate.
    preconditioner : callable or None, default=None
        ``preconditioner(V, egrad) -> apply or None``, called before each
        step: for a tangent vector ``r`` at ``V``, ``apply(r)`` returns the
        tangent vector ``M^{-1} r``, with ``M`` symmetric positive definite on
        the tangent space. The trust region is then ``||eta||_M <= Delta``
        (same initial and largest ``Delta``, so ``M`` should be scaled like
        the Hessian), and an ``M`` close to the Hessian makes each step a few
        CG iterations.
    retraction : {"qr", "polar"}, default="qr"
        Retraction used for the steps.
    callback : callable or None, default=None
        Called after every accepted step as ``callback(n_iter, V, cost, grad_norm)``;
        returning True stops the iteration.

    Returns
    -------
    result : StiefelResult
        As for :func:`minimize_lbfgs`; ``n_iter`` counts trust-region steps
        and ``n_evals`` the calls of ``cost_and_grad`` (Hessian-vector
        products are not counted).

    Raises
    ------
    ValueError
        If ``V0`` is not a point of the manifold, an option is out of range,
        or ``cost_and_grad`` returns a non-finite value.
    """
    V = _check_point(V0, "V0")
    p, d = V.shape
    max_iter = check_number(max_iter, "max_iter", minimum=0)
    gtol = check_number(gtol, "gtol", numbers.Real, minimum=0)
    dim = p * d - d * (d + 1) // 2
    max_inner = dim if max_inner is None else check_number(max_inner, "max_inner", minimum=1)
    theta = check_number(
        theta, "theta", numbers.Real, minimum=0, maximum=1, include_boundaries="right"
    )
    retract = _retraction(retraction)
    if not callable(hess_vec):
        raise ValueError(f"hess_vec must be callable, got {hess_vec!r}.")
    objective, V, cost, egrad, grad, grad_norm = _start(cost_and_grad, V)
    costs, grad_norms = [cost], [grad_norm]
    max_radius = np.pi / 2 * np.sqrt(d)  # a quarter turn of every column
    radius = max_radius / 8
    n_iter = 0
    message = "max_iter reached"
    cg = None
    while True:
        if grad_norm <= gtol:
            message = "gradient norm <= gtol"
            break
        if n_iter >= max_iter:
            break
        n_iter += 1

        if cg is None:  # a new point

            def hess(xi, V=V, egrad=egrad):
                return _hessian(V, egrad, hess_vec(V, xi), xi)

            precondition = None if preconditioner is None else preconditioner(V, egrad)
            cg = _SteihaugCG(grad, grad_norm, hess, max_inner, theta, precondition)
        eta, H_eta, at_boundary, eta_norm = cg.solve(radius)
        V_new = retract(V, eta)
        cost_new, egrad_new = objective(V_new, f"at trust-region step {n_iter}")
        model_decrease = -(_inner(grad, eta) + 0.5 * _inner(eta, H_eta))
        # Regularise both sides: near a minimiser both are at rounding level.
        slack = max(1.0, abs(cost)) * _EPS * 1e3
        ratio = (cost - cost_new + slack) / (model_decrease + slack)
        if ratio < 0.25:
            # An interior step shorter than the radius would be found again: shrink below it.
            radius = min(radius, eta_norm) / 4.0
        elif ratio > 0.75 and at_boundary:
            radius = min(2.0 * radius, max_radius)
        if ratio > 0.1 and model_decrease >= 0:
            V, cost, egrad = V_new, cost_new, egrad_new
            grad = _proj(V, egrad)
            grad_norm = np.sqrt(_inner(grad, grad))
            costs.append(cost)
            grad_norms.append(grad_norm)
            cg = None
            if callback is not None and callback(n_iter, V, cost, grad_norm) is True:
                message = "stopped by callback" if grad_norm > gtol else "gradient norm <= gtol"
                break
        elif radius < 1e-14 * max_radius:
            message = "trust region collapsed"
            break
        elif not cg.replayable:
            cg = None

    return _result(V, cost, grad_norm, gtol, n_iter, message, objective, costs, grad_norms)


class _SteihaugCG:
    """Steihaug-Toint CG on the trust-region model at one point.

    With a preconditioner ``M`` (``precondition(r) = M^{-1} r``, symmetric
    positive definite on the tangent space) the region is the ellipsoid
    ``||eta||_M <= radius``; the ``M``-inner products of the iterates and
    directions are carried by the usual recurrences, so ``M`` itself is never
    applied (Conn, Gould & Toint, 2000, section 7.5).

    The iterations do not depend on the radius until one of them leaves the
    region, so the directions are kept (up to ``_CG_PATH_BYTES``): after a
    rejected step, the solution in a smaller region lies on the same path and
    costs no Hessian product.

    Parameters
    ----------
    grad : ndarray of shape (p, d)
        The model's linear term (the Riemannian gradient).
    grad_norm : float
        Its norm.
    hess : callable
        Tangent vector -> the Riemannian Hessian applied to it.
    max_inner : int
        Most iterations.
    theta : float
        Stop inside the region once the residual is at most
        ``grad_norm min(grad_norm^theta, 0.1)``.
    precondition : callable or None, default=None
        ``r -> M^{-1} r``. Should ``r^T M^{-1} r <= 0`` occur (``M`` not
        positive definite, as rounding could make it), the solve stops at the
        current iterate, or at the start runs without the preconditioner.
    """

    def __init__(self, grad, grad_norm, hess, max_inner, theta, precondition=None):
        self._hess = hess
        self._precondition = precondition
        self._max_inner = max_inner
        self._target = grad_norm * min(grad_norm**theta, 0.1)
        self._keep = max(1, _CG_PATH_BYTES // (2 * grad.nbytes))
        self._r = grad.copy()
        self._z = self._r if precondition is None else precondition(self._r)
        self._rz = _inner(self._r, self._z)
        if not self._rz > 0:  # not positive definite along the gradient: plain CG
            self._precondition, self._z, self._rz = None, self._r, _inner(self._r, self._r)
        # (delta, H delta, alpha, <eta, eta>_M, <eta, delta>_M, <delta, delta>_M, and
        # <eta + alpha delta, eta + alpha delta>_M) of each iteration; None once dropped.
        self._steps = []
        self._final_ee = None  # set when the iterations stop inside every region
        #: Whether :meth:`solve` may still be called with a smaller radius.
        self.replayable = True

    def solve(self, radius):
        """The model's approximate minimiser in the region of this radius.

        Returns
        -------
        eta, H_eta : ndarray
            The step and ``Hess[eta]``.
        at_boundary : bool
        eta_norm : float
            ``||eta||_M`` (the Euclidean norm without a preconditioner).
        """
        eta = np.zeros_like(self._r)
        H_eta = np.zeros_like(self._r)
        k = 0
        while k < len(self._steps) or self._extend():
            delta, H_delta, alpha, ee, ed, dd, ee_new = self._steps[k]
            if ee_new >= radius**2:
                # Negative curvature or leaving the region: go to the boundary along delta.
                t = (-ed + np.sqrt(max(ed**2 + dd * (radius**2 - ee), 0.0))) / dd
                return eta + t * delta, H_eta + t * H_delta, True, radius
            eta = eta + alpha * delta
            H_eta = H_eta + alpha * H_delta
            k += 1
        return eta, H_eta, False, np.sqrt(self._final_ee)

    def _extend(self):
        """Compute the next iteration; False if the iterations have stopped inside."""
        if self._final_ee is not None:
            return False
        if self._steps:
            delta, H_delta, alpha, _, ed, dd, ee = self._steps[-1]
            self._r = self._r + alpha * H_delta
            if len(self._steps) >= self._max_inner or np.sqrt(_inner(self._r, self._r)) <= (
                self._target
            ):
                self._final_ee = ee
                return False
            z = self._r if self._precondition is None else self._precondition(self._r)
            rz = _inner(self._r, z)
            if not rz > 0:  # the preconditioner is not positive definite here: stop
                self._final_ee = ee
                return False
            beta = rz / self._rz
            delta = -z + beta * delta
            ed = beta * (ed + alpha * dd)
            dd = rz + beta**2 * dd
            self._rz = rz
        else:
            delta, ee, ed, dd = -self._z, 0.0, 0.0, self._rz
        H_delta = self._hess(delta)
        curvature = _inner(delta, H_delta)
        alpha = self._rz / curvature if curvature > 0 else np.inf
        ee_new = ee + 2.0 * alpha * ed + alpha**2 * dd if np.isfinite(alpha) else np.inf
        self._steps.append((delta, H_delta, alpha, ee, ed, dd, ee_new))
        if len(self._steps) > self._keep:
            self._steps[-1 - self._keep] = None
            self.replayable = False
        return True
