r"""Proximal maps of the Fantope ADMM (:mod:`fairpca._fantope_admm`).

The Euclidean projection onto the Fantope
:math:`\mathcal F_d = \{0 \preceq P \preceq I,\ \mathrm{tr}\,P = d\}` is one
eigendecomposition and a one-dimensional search for a shift [Vu2013]_; the
proximal map of :math:`w \|Z\|_2^2` (squared spectral norm) lowers the
largest singular values of its argument to a common level.

References
----------
.. [Vu2013] V. Q. Vu, J. Cho, J. Lei and K. Rohe. "Fantope Projection and
   Selection: A near-optimal convex relaxation of sparse PCA." NeurIPS 2013.
"""

import numpy as np
from scipy.linalg import lapack

from fairpca._linalg import _FULL_EIGH_MAX, full_eigh, top_eigh

__all__ = [
    "bottom_route_size",
    "fantope_projection",
    "fantope_projection_from_bottom",
    "squared_spectral_prox",
]

#: Share of the spectrum above which a full eigendecomposition is cheaper than a subset
#: (LAPACK's subset driver, bisection and inverse iteration, already costs as much as a
#: full decomposition for about a tenth of the eigenpairs).
_FULL_SHARE = 0.1


def _sym(A):
    """The symmetric part ``(A + A^T) / 2``."""
    return 0.5 * (A + A.T)


def _gram(Y):
    """The smaller of ``Y Y^T`` and ``Y^T Y``."""
    return Y @ Y.T if Y.shape[0] <= Y.shape[1] else Y.T @ Y


def _fantope_shift(values, d):
    """The ``theta`` with ``sum_i clip(values_i - theta, 0, 1) = d``.

    The left side is continuous, non-increasing and piecewise linear in
    ``theta`` with breakpoints at ``values_i`` and ``values_i - 1``; it is
    evaluated at every breakpoint and interpolated.

    Parameters
    ----------
    values : ndarray of shape (r,)
        Eigenvalues, ``r > d``.
    d : int

    Returns
    -------
    theta : float
    """
    breaks = np.sort(np.concatenate((values, values - 1.0)))
    # The ufuncs, not np.clip: its Python wrapper costs more than the work here.
    mass = np.minimum(np.maximum(values[None, :] - breaks[:, None], 0.0), 1.0).sum(axis=1)
    # mass decreases along breaks; np.interp wants increasing abscissae.
    return float(np.interp(d, mass[::-1], breaks[::-1]))


def _leading_eigh(A, r):
    """The ``r`` largest eigenpairs of the symmetric ``A``, largest first.

    All of them when ``r`` is a large share of the size: a full decomposition
    (:func:`fairpca._linalg.full_eigh`) is then cheaper than LAPACK's subset driver.
    """
    if r >= _FULL_SHARE * A.shape[0]:
        values, vectors = full_eigh(A)
        return values[::-1], vectors[:, ::-1]
    return top_eigh(A, r)


def fantope_projection(A, d, rank=None):
    """Euclidean projection of a symmetric matrix onto the Fantope ``F_d``.

    With ``A = W diag(a) W^T``, the projection is ``W diag(clip(a - theta, 0, 1)) W^T``
    with ``theta`` such that the trace is ``d`` [Vu2013]_. Only eigenvalues
    above ``theta`` matter, so the top ``rank`` eigenpairs are computed, and
    more only if the smallest of them is still above ``theta``.

    Parameters
    ----------
    A : ndarray of shape (q, q)
        Symmetric matrix, ``q >= d``.
    d : int
        Trace of the projection.
    rank : int, optional
        How many eigenpairs to try first (default ``2 d + 2``).

    Returns
    -------
    vectors : ndarray of shape (q, r)
        Orthonormal eigenvectors of the projection's non-zero eigenvalues.
    values : ndarray of shape (r,)
        Those eigenvalues, in ``(0, 1]``.
    """
    q = A.shape[0]
    if q == d:
        return np.eye(q), np.ones(q)
    r = min(q, max(d + 1, 2 * d + 2 if rank is None else rank))
    while True:
        a, W = _leading_eigh(A, r)
        r = a.size
        theta = _fantope_shift(a, d)
        # Eigenvalues not computed are below a[-1]; at or below theta they contribute nothing.
        if r == q or a[-1] <= theta:
            break
        r = min(q, 2 * r)
    values = np.minimum(np.maximum(a - theta, 0.0), 1.0)
    keep = values > 0
    return W[:, keep], values[keep]


def fantope_projection_from_bottom(A, d, n_low):
    r"""The Fantope projection of ``A`` from its smallest eigenpairs, when they suffice.

    When at most ``n_low - 1`` eigenvalues of ``A`` fall to ``theta`` or below and
    none rises above ``theta + 1``, the projection keeps all other eigenpairs,
    shifted by ``-theta``:

    .. math::

        \Pi_{\mathcal F_d}(A) = A - \theta I - \sum_{i \le j} (a_i - \theta) w_i w_i^T,
        \qquad \theta = \frac{\mathrm{tr} A - \sum_{i \le j} a_i - d}{q - j},

    with ``a_1 <= ... <= a_j <= theta < a_{j+1}`` the ``j`` eigenvalues dropped.
    Only the ``n_low`` smallest eigenpairs are computed (LAPACK's ``dsyevr``);
    ``theta`` follows from the trace, and a Cholesky factorisation of
    ``(theta + 1) I - A`` certifies that no eigenvalue exceeds ``theta + 1``.
    Where the projection keeps most of the spectrum this costs a fraction of
    the full decomposition of :func:`fantope_projection`.

    Parameters
    ----------
    A : ndarray of shape (q, q)
        Symmetric matrix (lower triangle read).
    d : int
        Trace of the projection, ``d < q``.
    n_low : int
        How many of the smallest eigenpairs to compute, ``1 <= n_low < q``.

    Returns
    -------
    X : ndarray of shape (q, q) or None
        The projection, or None where the conditions above fail (more
        eigenvalues dropped, or one clipped at 1): then use
        :func:`fantope_projection`.
    n_dropped : int
        ``j``, the eigenvalues dropped (0 with None).
    """
    q = A.shape[0]
    a, W, _, _, info = lapack.dsyevr(A, compute_v=1, range="I", il=1, iu=n_low, lower=1)
    if info != 0:
        return None, 0
    a, W = a[:n_low], W[:, :n_low]
    # theta if the j smallest are dropped (j = 0, ..., n_low - 1), valid when it lies
    # in [a_j, a_{j+1}); the eigenvalues not computed are at least a[-1].
    dropped_sums = np.concatenate(([0.0], np.cumsum(a[:-1])))
    thetas = (np.trace(A) - dropped_sums - d) / (q - np.arange(n_low))
    below = np.concatenate(([-np.inf], a[:-1]))
    valid = np.flatnonzero((below <= thetas) & (thetas < a))
    if not valid.size:
        return None, 0
    j = int(valid[0])
    theta = float(thetas[j])
    shifted = -A
    shifted.flat[:: q + 1] += theta + 1.0
    if lapack.dpotrf(shifted, lower=1, clean=0, overwrite_a=1)[1] != 0:
        return None, 0  # an eigenvalue at or above theta + 1: clipped at 1
    X = A - (W[:, :j] * (a[:j] - theta)) @ W[:, :j].T
    X.flat[:: q + 1] -= theta
    return X, j


def bottom_route_size(q, n_dropped):
    """The ``n_low`` of the next :func:`fantope_projection_from_bottom`, or None.

    After a projection of a ``q x q`` matrix that dropped ``n_dropped``
    eigenvalues: two more eigenpairs than were dropped, so that one more can be;
    None where that route does not pay: beyond ``_FULL_SHARE`` of the spectrum
    (a full decomposition costs as much) or up to ``_FULL_EIGH_MAX`` rows (where
    it costs as little).
    """
    n_low = n_dropped + 2
    return n_low if q > _FULL_EIGH_MAX and n_low <= _FULL_SHARE * q else None


def _clip_level(sigma, weight):
    """Level ``c`` to which ``argmin weight ||Z||_2^2 + ||Z - Y||_F^2 / 2`` clips ``sigma``.

    The optimal singular values are ``min(sigma_i, c)`` with
    ``2 weight c = sum_i (sigma_i - c)_+``.

    Parameters
    ----------
    sigma : ndarray of shape (r,)
        The largest singular values of ``Y``, decreasing.
    weight : float
        ``mu / rho > 0``.

    Returns
    -------
    level : float
    n_clipped : int
        How many of ``sigma`` exceed ``level``; ``len(sigma)`` means the
        level is not determined by these values alone (more are needed)
        unless they are all the singular values.
    """
    levels = np.cumsum(sigma) / (np.arange(1, sigma.size + 1) + 2.0 * weight)
    # The first k with sigma_{k+1} <= level_k; past the computed values sigma is taken
    # as 0, which every level meets.
    valid = np.flatnonzero(sigma[1:] <= levels[:-1])
    first = int(valid[0]) if valid.size else sigma.size - 1
    return float(levels[first]), first + 1


def squared_spectral_prox(Y, weight, rank=4):
    """Proximal map of ``weight ||.||_2^2`` (squared spectral norm) at ``Y``.

    ``argmin_Z weight ||Z||_2^2 + ||Z - Y||_F^2 / 2``: the singular values of
    ``Y`` above a level ``c`` are lowered to ``c``. Only the top singular
    triplets are computed, from the smaller Gram matrix of ``Y``.

    Parameters
    ----------
    Y : ndarray of shape (m, q)
    weight : float
        ``> 0``.
    rank : int, default=4
        How many singular values to try first.

    Returns
    -------
    Z : ndarray of shape (m, q)
    n_clipped : int
        Singular values lowered (a good first ``rank`` for the next call).
    removed : float
        ``||Y - Z||_*``: the sum of the amounts ``sigma_i - c`` taken off.
    """
    wide = Y.shape[0] <= Y.shape[1]
    gram = _gram(Y)
    size = gram.shape[0]
    r = min(size, max(1, rank))
    while True:
        values, vectors = _leading_eigh(gram, r)
        r = values.size
        sigma = np.sqrt(np.maximum(values, 0.0))
        level, k = _clip_level(sigma, weight)
        if k < r or r == size:
            break
        r = min(size, 2 * r)
    if k == 0 or sigma[0] <= 0:
        return Y.copy(), 0, 0.0
    shrink = 1.0 - level / sigma[:k]
    U = vectors[:, :k]
    removed = float(np.sum(sigma[:k] - level))
    if wide:
        return Y - (U * shrink) @ (U.T @ Y), k, removed
    return Y - (Y @ U) * shrink @ U.T, k, removed


def _top_sum(C, d):
    """Sum of the ``d`` largest eigenvalues of the symmetric ``C`` (LAPACK, certified).

    All eigenvalues are computed: LAPACK's subset driver fails ("Internal Error")
    when the ``d``-th largest lies inside a cluster of nearly equal ones, which the
    certificate's matrices have at the optimum, and at these sizes it is no faster.
    """
    return float(np.linalg.eigvalsh(C)[C.shape[0] - d :].sum())
