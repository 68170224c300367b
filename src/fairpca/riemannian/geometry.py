"""Geometry of the Stiefel manifold, for one point and for a batch of points.

The Stiefel manifold ``St(p, d) = {V in R^{p x d} : V^T V = I_d}`` carries the
metric it inherits from ``R^{p x d}`` (the *embedded* metric,
``<A, B> = trace(A^T B)``). This module holds the pieces of geometry the
solvers need: tangent projection, QR and polar retractions, uniformly
distributed random points and a distance between the spanned subspaces
(Absil, Mahony & Sepulchre, *Optimization Algorithms on Matrix Manifolds*,
2008, ch. 3 and 4; Edelman, Arias & Smith, SIAM J. Matrix Anal. Appl. 20(2),
1998). The batched forms act on ``R`` stacked points stored as transposes
``(R, d, p)``, as the subgradient descent of :mod:`fairpca.robust` uses them.

All computations are in ``float64``. Points are ``(p, d)`` arrays with
orthonormal columns, tangent vectors at ``V`` are ``(p, d)`` arrays ``xi`` with
``V^T xi + xi^T V = 0``.
"""

import numpy as np
from sklearn.utils import check_random_state

from fairpca._validation import check_number

__all__ = [
    "random_point",
    "retract_polar",
    "retract_qr",
    "subspace_distance",
    "tangent_projection",
]

#: Largest entry of ``|V^T V - I|`` accepted for a starting point.
ORTHONORMALITY_ATOL = 1e-8


#: Largest squared step norm ``||xi||_F^2`` (a bound on ``cond(X + xi)^2 - 1``) for which
#: the QR retraction uses Cholesky QR; its Q then carries at most about 100 units of
#: rounding more than a Householder QR's (see _qr_factor_rows).
_CHOLESKY_QR_MAX_STEP2 = 100.0

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


def _check_step(V, xi):
    """``V`` and a step ``xi`` from it as float64 arrays of the same shape, or raise."""
    V = _as_matrix(V, "V")
    xi = _as_matrix(xi, "xi")
    _check_same_shape(V, xi, "V", "xi")
    return V, xi


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
    return _retract_qr(*_check_step(V, xi))


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
    return _retract_polar(*_check_step(V, xi))


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


def _retraction(name):
    """The retraction called ``name``, or a ValueError listing the valid ones."""
    if not isinstance(name, str) or name not in _RETRACTIONS:
        options = ", ".join(repr(k) for k in _RETRACTIONS)
        raise ValueError(f"retraction must be one of {options}; got {name!r}.")
    return _RETRACTIONS[name]


def _reduction_basis(X, n_components):
    """Orthonormal ``Q`` (p, r + d) with the same optimisation problem on ``St(r + d, d)``.

    ``r`` is the rank of the centred ``X`` (n, p); None when ``r + d >= p``
    (nothing to gain). ``Q = [B, E]``: ``B`` spans the row space of ``X`` and
    ``E`` is any ``d`` orthonormal directions orthogonal to it.

    Why the reduction is exact, for a cost that depends on ``V`` only through
    ``X V`` (as :class:`fairpca.MMDFairPCA`'s: variance ``||X V||² / (n tr Sigma)``
    and the kernel values of the rows ``V^T x_i``). Write ``V = B A + C`` with
    ``B^T C = 0``; then ``X V = X B A`` and ``V^T V = A^T A + C^T C = I``. So the attainable costs
    are those of the matrices ``A`` (r, d) with ``A^T A <= I`` (the ``C`` part
    absorbs the rest: with ``p - r >= d`` any PSD ``I - A^T A`` equals
    ``C^T C`` for ``C = E (I - A^T A)^{1/2}``). These are exactly the
    ``A``-blocks of ``W = [A; D]`` in ``St(r + d, d)``, ``D = (I - A^T A)^{1/2}``.
    Hence ``min over St(p, d)`` equals ``min over St(r + d, d)`` of the cost of
    ``Q W`` (whose product with ``X`` is ``X B A``), and ``V = Q W`` maps back.
    The slack block matters: an optimum may shrink the projection (``A^T A < I``)
    to lower MMD², which the plain row space ``St(r, d)`` would forbid. Moreover,
    from a start ``V_0 = Q W_0`` every Euclidean gradient ``X^T (...)``, tangent
    projection and QR retraction stays in the range of ``Q`` (``qf(Q M) = Q qf(M)``),
    so the iterates are those of the full problem, up to rounding.
    """
    n, p = X.shape
    if n + n_components >= p:
        return None
    _, singular, Wt = np.linalg.svd(X, full_matrices=False)
    rank = int(np.sum(singular > singular[0] * max(n, p) * np.finfo(float).eps))
    if rank + n_components >= p:
        return None
    B = Wt[:rank].T
    # Deterministic slack directions: any orthonormal ones outside the row space will do.
    G = np.random.RandomState(0).standard_normal((p, n_components))
    for _ in range(2):  # twice: one Gram-Schmidt pass loses orthogonality to rounding
        G -= B @ (B.T @ G)
    E = np.linalg.qr(G)[0]
    return np.hstack([B, E])


# ---------------------------------------------------------------------------
# batches of points, stored as transposes (R, d, p)
# ---------------------------------------------------------------------------


def _tangent_rows(Xt, Gt):
    """Transposed projection of stacked ``G`` onto the Stiefel tangent spaces at ``X``.

    ``G - X sym(X^T G)``, written for the transposes: ``G^T - sym(X^T G) X^T``.
    """
    XtG = Xt @ Gt.transpose(0, 2, 1)
    return Gt - (0.5 * (XtG + XtG.transpose(0, 2, 1))) @ Xt


def _qr_factor(Y):
    """Stacked Q factors of ``Y`` (R, p, r) with positive diagonal of R (Householder)."""
    Q, Rf = np.linalg.qr(Y)
    signs = np.sign(np.diagonal(Rf, axis1=1, axis2=2))
    signs[signs == 0] = 1.0
    return Q * signs[:, None, :]


def _qr_factor_rows(Yt):
    """Transposed Q factors of ``Y`` with positive diagonal of R, from ``Y^T`` (R, r, p).

    The Q factor with positive diagonal of R is unique, and so is the Cholesky
    factor: ``Y^T Y = R^T R`` with ``R = L^T``, ``L = cholesky(Y^T Y)``, so
    ``Q^T = L^{-1} Y^T``: for the small blocks of a batch this is cheaper than
    the stacked Householder QR (mostly numpy overhead). Forming ``Y^T Y``
    squares the condition number, which costs about ``cond(Y)^2`` units of
    rounding in ``Q``. After a step ``Y = X + xi`` with ``X^T xi`` skew (a
    tangent step), ``Y^T Y = I + xi^T xi``, so ``tr(Y^T Y) - r = ||xi||_F^2``
    bounds ``cond(Y)^2 - 1``: when it exceeds ``_CHOLESKY_QR_MAX_STEP2``
    anywhere (very large steps, as on unscaled data), or the factorisation
    fails, the Householder QR is used instead.
    """
    r = Yt.shape[1]
    gram = Yt @ Yt.transpose(0, 2, 1)
    if gram.diagonal(axis1=1, axis2=2).sum(axis=1).max() - r <= _CHOLESKY_QR_MAX_STEP2:
        try:
            return np.linalg.inv(np.linalg.cholesky(gram)) @ Yt
        except np.linalg.LinAlgError:
            pass
    return _qr_factor(Yt.transpose(0, 2, 1)).transpose(0, 2, 1)


def _retract_rows(Xt, xi_t, retraction):
    """Stacked QR (positive diagonal of R) or polar retraction, on transposes.

    Returns the transpose of the retraction of ``X + xi``; the polar factor of
    a transpose is the transpose of the polar factor.
    """
    Yt = Xt + xi_t
    if retraction == "qr":
        return _qr_factor_rows(Yt)
    W, _, Zt = np.linalg.svd(Yt, full_matrices=False)
    return W @ Zt


def _orthonormal_complement(X):
    """Orthonormal bases of the complements of the column spans of stacked ``X`` (R, p, r)."""
    Q, _ = np.linalg.qr(X, mode="complete")
    return Q[:, :, X.shape[2] :]
