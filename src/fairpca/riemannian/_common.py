"""What the Riemannian solvers share: the checked objective and the result.

Used by :mod:`fairpca.riemannian.lbfgs` and :mod:`fairpca.riemannian.trust_region`
(Absil, Mahony & Sepulchre, *Optimization Algorithms on Matrix Manifolds*, 2008).
"""

from dataclasses import dataclass

import numpy as np

from fairpca.riemannian.geometry import _inner, _proj

__all__ = ["StiefelResult"]


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


def _stop_message(grad_norm, gtol, n_iter, max_iter):
    """Why a solver stops before another step (gradient test, then step budget), or None."""
    if grad_norm <= gtol:
        return "gradient norm <= gtol"
    if n_iter >= max_iter:
        return "max_iter reached"
    return None
