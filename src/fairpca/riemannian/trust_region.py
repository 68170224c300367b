"""Riemannian trust regions on the Stiefel manifold, with a dense preconditioner.

The Riemannian trust-region Newton method with the truncated conjugate-gradient
inner solver of Steihaug and Toint (Absil, Baker & Gallivan, Found. Comput.
Math. 7, 2007; Absil, Mahony & Sepulchre, *Optimization Algorithms on Matrix
Manifolds*, 2008, ch. 7; Conn, Gould & Toint, *Trust-Region Methods*, 2000,
section 7.5 for the preconditioned form), for ill-conditioned costs, where
L-BFGS stalls. The preconditioner machinery forms the Riemannian Hessian as a
``(p d, p d)`` matrix from a Euclidean one, shifts it to be positive definite
on the tangent space, and keeps its inverse in single precision.
"""

import numbers

import numpy as np
from scipy.linalg import LinAlgError, cho_factor
from scipy.linalg.blas import ssymv
from scipy.linalg.lapack import dpotri

from fairpca._validation import check_number
from fairpca.riemannian._common import _result, _start, _stop_message
from fairpca.riemannian.geometry import _check_point, _inner, _proj, _retraction

__all__ = ["minimize_trust_region"]

_EPS = np.finfo(np.float64).eps
#: Conjugate-gradient directions (and their Hessian products) a trust-region step keeps
#: so that a retry in a smaller region needs no new products (a few MiB in practice).
_CG_PATH_BYTES = 2**27
#: Shifts of the preconditioner's Hessian, relative to its largest diagonal entry.
_SHIFTS = (0.0,) + tuple(10.0**k for k in range(-6, 3))


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
    cg = None
    while True:
        message = _stop_message(grad_norm, gtol, n_iter, max_iter)
        if message is not None:
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


# ---------------------------------------------------------------------------
# A dense preconditioner: the shifted Riemannian Hessian, inverted
# ---------------------------------------------------------------------------


def hessian_preconditioner(V, egrad, ehess, first_shift=0):
    """``M^{-1}`` of the Riemannian Hessian at ``V``, shifted to be positive definite.

    ``M = P A P + mu P + (I - P)`` (see :func:`_hessian_factor`), inverted by its
    Cholesky factor (LAPACK potri fills the factor's triangle) and kept in
    single precision (:func:`_single_precision`), to be applied by BLAS symv,
    which reads only that triangle: much faster than two triangular solves.

    Parameters
    ----------
    V : ndarray of shape (p, d)
        Point of ``St(p, d)``.
    egrad : ndarray of shape (p, d)
        Euclidean gradient at ``V``.
    ehess : ndarray of shape (p d, p d)
        Euclidean Hessian at ``V`` (row-major ``vec`` of ``p x d`` matrices),
        C-contiguous; it is overwritten.
    first_shift : int, default=0
        Index in ``_SHIFTS`` of the first shift tried.

    Returns
    -------
    inverse : (ndarray, bool) or None
        The single-precision triangle and whether it is the lower one (for
        :func:`apply_preconditioner`); None when no shift gives a factor.
    shift : int
        Index in ``_SHIFTS`` of the shift used.
    """
    factor, shift = _hessian_factor(V, egrad, ehess, first_shift)
    inverse = None
    if factor is not None:
        inverse, info = dpotri(*factor)
        inverse = None if info != 0 else (_single_precision(inverse, factor[1]), factor[1])
    return inverse, shift


def apply_preconditioner(inverse, V):
    """``r -> P_V(M^{-1} r)`` for the ``inverse`` of :func:`hessian_preconditioner`.

    The projection onto the tangent space at ``V`` keeps the operator symmetric
    positive definite there, also at points near the one ``M`` was formed at.
    """
    single, lower = inverse

    def apply(r):
        z = ssymv(1.0, single, r.ravel().astype(np.float32), lower=int(lower))
        return _proj(V, z.astype(np.float64).reshape(r.shape))

    return apply


def _single_precision(inverse, lower):
    """``S + delta I`` in single precision, still positive definite, for the preconditioner.

    ``S`` is symmetric positive definite, stored in the lower (or upper)
    triangle of ``inverse`` (the other triangle is ignored). Each CG iteration
    reads the whole triangle, which at large ``p d`` is beyond the cache: in
    single precision it is read about twice as fast. A plain cast can lose
    definiteness when ``S`` is ill-conditioned. So the off-diagonal rounding error
    ``E`` is measured exactly and ``delta = 1.01 (||E||_inf + 2^-24 max |S_ii|)``,
    which exceeds the 2-norm of the stored matrix's whole error (the diagonal
    ``S_ii + delta`` is rounded too): by Weyl's inequality the result's
    eigenvalues are at least those of ``S``.

    Returns
    -------
    ndarray of shape (n, n), float32, Fortran order
        The same triangle holds ``S + delta I``, rounded.
    """
    # Fortran order, as LAPACK left it: BLAS then reads it in place, not a copy per call.
    single = np.asfortranarray(inverse, dtype=np.float32)
    error = np.abs(single - inverse)  # exact: a float32 rounding error is a float64 number
    error = np.tril(error, -1) if lower else np.triu(error, 1)
    diagonal = np.diag(inverse)
    delta = 1.01 * (
        np.max(error.sum(axis=0) + error.sum(axis=1)) + 2.0**-24 * np.abs(diagonal).max()
    )
    single[np.diag_indices_from(single)] = diagonal + delta
    return single


def _riemannian_hessian_matrix(V, egrad, ehess):
    """The Riemannian Hessian at ``V`` as a ``(p d, p d)`` matrix, and ``W``.

    ``P A P`` (row-major ``vec`` of ``p x d`` matrices), where ``A`` is the
    Euclidean Hessian ``ehess`` (overwritten) minus ``I (x) sym(V^T egrad)`` and
    ``P`` the projection onto the tangent space. ``P = I - W W^T``, with ``W``
    of shape (p d, d (d + 1) / 2) the orthonormal normal directions ``V Omega``
    (``Omega`` symmetric). With ``C = A W - W (W^T A W) / 2``,
    ``P A P = A - W C^T - C W^T``: one rank-``d (d + 1)`` update of ``A``.
    Symmetric up to rounding (a Cholesky factorisation reads one triangle).
    """
    p, d = V.shape
    S = V.T @ egrad
    A = ehess
    blocks = A.reshape(p, d, p, d)
    diagonal = np.arange(p)
    blocks[diagonal, :, diagonal, :] -= 0.5 * (S + S.T)
    rows, cols = np.triu_indices(d)
    W = np.zeros((len(rows), p, d))
    for k, (i, j) in enumerate(zip(rows, cols, strict=True)):
        if i == j:
            W[k, :, i] = V[:, i]
        else:
            W[k, :, j] = V[:, i] * np.sqrt(0.5)
            W[k, :, i] = V[:, j] * np.sqrt(0.5)
    W = W.reshape(len(rows), p * d).T
    AW = A @ W
    C = AW - 0.5 * W @ (W.T @ AW)
    A -= np.hstack([W, C]) @ np.hstack([C, W]).T
    return A, W


def _hessian_factor(V, egrad, ehess, first_shift=0):
    """Cholesky factor of ``P A P + mu P + (I - P)`` (see ``_riemannian_hessian_matrix``).

    The normal space gets the identity, and the smallest ``mu`` tried, from
    ``_SHIFTS[first_shift:]`` times the largest diagonal entry, that makes the
    whole positive definite shifts the tangent part where the Hessian is
    indefinite.

    Returns
    -------
    factor : tuple or None
        As from ``scipy.linalg.cho_factor``; None if no shift works.
    shift : int
        Index in ``_SHIFTS`` of the shift used (0 if none works).
    """
    base, W = _riemannian_hessian_matrix(V, egrad, ehess)
    top = np.max(np.abs(np.diag(base)))
    normal = W @ W.T  # I - P
    base += normal
    for k in range(first_shift, len(_SHIFTS)):
        mu = _SHIFTS[k] * top
        # P A P + mu P + (I - P) = (P A P + W W^T) + mu (I - W W^T)
        shifted = base if mu == 0.0 else base - mu * normal
        if mu != 0.0:
            shifted[np.diag_indices_from(shifted)] += mu
        try:
            return cho_factor(shifted, check_finite=False), k
        except LinAlgError:
            continue
    return None, 0
