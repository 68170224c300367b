"""Riemannian L-BFGS on the Stiefel manifold.

A limited-memory Riemannian BFGS method with vector transport by projection and
an Armijo back-tracking line search along the retraction (Absil, Mahony &
Sepulchre, *Optimization Algorithms on Matrix Manifolds*, 2008, ch. 4 and 8;
Huang, Gallivan & Absil, SIAM J. Optim. 25(3), 2015).
"""

import logging
import numbers

import numpy as np

from fairpca._validation import check_number
from fairpca.riemannian._common import _result, _start, _stop_message
from fairpca.riemannian.geometry import _check_point, _inner, _proj, _retraction
from fairpca.riemannian.line_search import backtrack

__all__ = ["minimize_lbfgs"]

logger = logging.getLogger(__name__)

_EPS = np.finfo(np.float64).eps


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

    while True:
        message = _stop_message(grad_norm, gtol, n_iter, max_iter)
        if message is not None:
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

    def evaluate(t):
        V_new = retract(V, t * direction)
        return (V_new, *objective(V_new, f"in the line search of iteration {it}"))

    step = backtrack(
        evaluate, lambda t, trial: trial[1] <= cost + c * t * slope + slack, 1.0, max_backtracks
    )
    return None if step is None else (step[0], *step[1])
