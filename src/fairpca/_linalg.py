"""Dense linear-algebra helpers shared by the estimators and the metrics."""

import functools
from typing import NamedTuple

import numpy as np
from scipy.linalg import eigh, lapack
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh
from threadpoolctl import ThreadpoolController

from fairpca._array_api import held_namespace, namespace_of

__all__ = [
    "PowerResult",
    "block_power_iteration",
    "flip_signs",
    "full_eigh",
    "one_blas_thread",
    "orthonormal_block",
    "power_block_width",
    "power_stop_message",
    "rayleigh_ritz",
    "ritz_subspace_error",
    "row_space",
    "top_eigh",
    "top_eigh_fast",
]

#: From this size on, and for at most a tenth of the spectrum, ARPACK's Lanczos
#: iteration is cheaper than LAPACK's reduction to tridiagonal form.
_LANCZOS_MIN = 400

#: Up to this size a full decomposition is faster than LAPACK's subset driver (its
#: fixed costs dominate), and calling ``dsyevd`` directly than through numpy's wrapper.
_FULL_EIGH_MAX = 32


@functools.cache
def _blas_libraries():
    """The BLAS libraries of this process, scanned once (``threadpool_limits`` rescans per call)."""
    return ThreadpoolController()


def one_blas_thread():
    """Context in which BLAS runs on one thread, restoring the previous limits on exit.

    For solvers' loops of small dense products and eigendecompositions, where
    BLAS threads save little and, on a busy machine, wait for each other at
    every call. The libraries are scanned at the first call only, so entering
    the context costs little next to one such step. That scan sees NumPy's and
    SciPy's BLAS, loaded by this module's imports, which are the ones these
    loops call; a library loaded later (torch's, a solver's own) is not limited.
    """
    return _blas_libraries().limit(limits=1, user_api="blas")


def full_eigh(matrix):
    """All eigenpairs of a symmetric matrix (lower triangle read), increasing.

    LAPACK's divide-and-conquer ``dsyevd``, the routine of
    :func:`numpy.linalg.eigh`; called directly up to ``_FULL_EIGH_MAX`` rows,
    where numpy's wrapper costs more than the work.

    Parameters
    ----------
    matrix : ndarray of shape (p, p)

    Returns
    -------
    values : ndarray of shape (p,)
    vectors : ndarray of shape (p, p)
        Orthonormal eigenvectors as columns, in the order of ``values``.
    """
    if matrix.shape[0] > _FULL_EIGH_MAX:
        return np.linalg.eigh(matrix)
    values, vectors, info = lapack.dsyevd(matrix, compute_v=1, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dsyevd did not converge (info {info})")
    return values, vectors


def top_eigh(matrix, n_components):
    """The ``n_components`` largest eigenpairs of a symmetric matrix, largest first.

    Only the wanted eigenpairs are computed (LAPACK's subset drivers), which is
    cheaper than a full decomposition when ``n_components`` is small; up to
    ``_FULL_EIGH_MAX`` rows the full :func:`full_eigh` is cheaper still. A
    matrix of another array-API namespace (a moment-based fit on a device,
    :mod:`fairpca._array_api`) is decomposed there by the standard's full
    ``eigh``, which has no subset.

    Parameters
    ----------
    matrix : ndarray of shape (p, p)
        Symmetric; only its lower triangle is read.
    n_components : int
        How many eigenpairs, ``1 <= n_components <= p``.

    Returns
    -------
    values : ndarray of shape (n_components,)
        Eigenvalues in decreasing order.
    vectors : ndarray of shape (p, n_components)
        Orthonormal eigenvectors as columns, in the order of ``values``.
    """
    p = matrix.shape[0]
    held = held_namespace(matrix)
    if held is not None:
        xp = held[0]
        values, vectors = xp.linalg.eigh(matrix)
        return xp.flip(values[p - n_components :]), xp.flip(vectors[:, p - n_components :], axis=1)
    if p <= _FULL_EIGH_MAX:
        values, vectors = full_eigh(matrix)
        values, vectors = values[p - n_components :], vectors[:, p - n_components :]
    else:
        values, vectors = eigh(matrix, subset_by_index=[p - n_components, p - 1])
    return values[::-1], vectors[:, ::-1]


def top_eigh_fast(matrix, n_components):
    """:func:`top_eigh` by the fastest method for the size, for solvers' inner loops.

    Large matrices with few eigenpairs:
    ARPACK's implicitly restarted Lanczos method (``scipy.sparse.linalg.eigsh``
    to machine precision, ``tol=0``, from a fixed seeded start so that results
    are deterministic), a few dozen products with the matrix instead of its
    ``O(p^3)`` reduction. Otherwise, or if Lanczos does not converge,
    :func:`top_eigh`. The eigenpairs agree with :func:`top_eigh` to rounding,
    but rounding differs and Lanczos can in principle miss an eigenvalue:
    callers that certify a bound with the result recompute it once with
    :func:`top_eigh`.

    Parameters and returns as :func:`top_eigh`.
    """
    p = matrix.shape[0]
    if p < _LANCZOS_MIN or 10 * n_components > p:
        return top_eigh(matrix, n_components)
    start = np.random.default_rng(0).standard_normal(p)
    try:
        values, vectors = eigsh(matrix, k=n_components, which="LA", tol=0, v0=start)
    except (ArpackNoConvergence, ArpackError):
        return top_eigh(matrix, n_components)
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order]


def row_space(vectors):
    """Orthonormal bases of the span of the rows of ``vectors`` and of its complement.

    The rank counts the singular values above ``max(m, p) eps`` times the
    largest (numpy's ``matrix_rank`` rule).

    Parameters
    ----------
    vectors : ndarray of shape (m, p)

    Returns
    -------
    span : ndarray of shape (p, rank)
    complement : ndarray of shape (p, p - rank)
    """
    _, singular, vt = np.linalg.svd(vectors, full_matrices=True)
    if singular.size == 0 or singular[0] == 0:
        return np.zeros((vectors.shape[1], 0)), np.eye(vectors.shape[1])
    rank = int(np.sum(singular > singular[0] * max(vectors.shape) * np.finfo(float).eps))
    return vt[:rank].T, vt[rank:].T


def flip_signs(components):
    """Rows with a deterministic sign: each row's largest ``|loading|`` positive.

    The convention of scikit-learn's ``svd_flip``, so that a fitted basis does
    not depend on the eigen-solver's arbitrary signs.

    Parameters
    ----------
    components : ndarray of shape (r, p)

    Returns
    -------
    components : ndarray of shape (r, p)
    """
    xp, device = namespace_of(components)
    # The entry at each row's pivot, picked without fancy indexing (not in the standard).
    pivot = xp.argmax(xp.abs(components), axis=1)
    at_pivot = pivot[:, None] == xp.arange(components.shape[1], device=device)[None, :]
    picked = xp.sum(xp.where(at_pivot, components, xp.zeros_like(components)), axis=1)
    ones = xp.ones_like(picked)
    return components * xp.where(picked < 0, -ones, ones)[:, None]


# ---------------------------------------------------------------------------
# block power iteration with Rayleigh-Ritz (StreamingFairPCA)
# ---------------------------------------------------------------------------

#: A power block's column whose new part (``|R_jj|`` of its QR) is below this
#: fraction of the largest is rounding: the operator's range is narrower there.
_BLOCK_RTOL = 1e-10

#: Ritz residuals below this many unit roundoffs of the largest Ritz value (per
#: column) are rounding: the block is invariant to working precision.
_ROUNDING = 1000 * np.finfo(float).eps

#: Iterations over which a power iteration's error estimate must halve (when
#: its estimated convergence factor promises that) before it is called stalled.
_STALL_ITER = 20


def rayleigh_ritz(basis, image):
    """Ritz values (decreasing) and coefficients of a symmetric ``A`` from ``image = A @ basis``.

    The eigenpairs ``(theta_i, y_i)`` of ``T = basis^T A basis`` (symmetrised
    against rounding); the Ritz vectors are ``basis @ y_i``.

    Returns
    -------
    values : ndarray of shape (q,)
    small : ndarray of shape (q, q)
    """
    T = basis.T @ image
    values, small = np.linalg.eigh((T + T.T) / 2)
    return values[::-1], small[:, ::-1]


class PowerResult(NamedTuple):
    """Top Ritz pairs of a block power iteration and what its stopping rule measured."""

    values: np.ndarray  # (n_keep,) top Ritz values
    vectors: np.ndarray  # (p, n_keep) their Ritz vectors
    n_iter: int
    error: float  # Davis-Kahan estimate of the subspace distance to the exact top subspace
    gap: float  # theta_keep - theta_(keep+1), the estimated eigengap
    ratio: float  # theta_q / theta_keep, the estimated convergence factor per iteration
    stalled: bool  # the estimate stopped decreasing: the gap is too small for tol
    largest: float  # theta_1


def orthonormal_block(M, rng, project=None):
    """Orthonormal basis of the columns of ``M`` inside the domain (the range of ``project``).

    Where ``project(M)`` is rank-deficient -- the operator's range in the
    domain is narrower than the block, e.g. duplicated features, or a block as
    wide as the domain -- thin QR returns columns made of rounding, which lie
    anywhere (also in the unfair subspace); they are replaced by projected
    Gaussian columns. A second projection and QR removes the rounding that QR
    leaves outside the domain ("twice is enough"); columns still weak then
    exceed the domain's dimension and are dropped.

    Parameters
    ----------
    M : ndarray of shape (p, q)
    rng : numpy.random.RandomState
    project : callable or None
        Orthogonal projector onto the domain; None for all of ``R^p``.

    Returns
    -------
    Q : ndarray of shape (p, r)
        ``r = q`` unless the domain has fewer dimensions.
    """
    project = _identity if project is None else project
    Q, weak = _weak_qr(project(M))
    if weak.any():
        Q[:, weak] = project(rng.standard_normal((M.shape[0], int(weak.sum()))))
    elif project is _identity:
        return Q
    Q, weak = _weak_qr(project(Q))
    return Q[:, ~weak]


def _weak_qr(M):
    """Thin QR's ``Q`` and which of its columns are rounding (``|R_jj|`` relatively tiny)."""
    Q, R = np.linalg.qr(M)
    strength = np.abs(np.diagonal(R))
    return Q, strength <= _BLOCK_RTOL * max(float(strength.max(initial=0.0)), np.finfo(float).tiny)


def _identity(B):
    return B


def ritz_subspace_error(values, small, image, basis, n_keep):
    """Davis-Kahan estimate of the distance of the top ``n_keep`` Ritz subspace to the exact one.

    With Ritz pairs ``(theta_i, v_i)``, ``V = basis @ small[:, :n_keep]`` and
    the residual ``R = A V - V Theta`` (``A V = image @ small``: no extra
    pass), the sin-theta theorem bounds
    ``||sin Theta||_F <= ||R||_F / delta``, ``delta`` the distance from
    ``theta_1..theta_keep`` to the rest of the spectrum, estimated by
    ``theta_keep - theta_(keep+1)`` (exact as the block converges).
    :func:`~fairpca.riemannian.subspace_distance` is ``sqrt(2)`` times
    ``||sin Theta||_F``.

    Returns
    -------
    error, gap, residual : float
    """
    top = small[:, :n_keep]
    residual = float(np.linalg.norm(image @ top - (basis @ top) * values[:n_keep]))
    if len(values) == n_keep:  # the block is the whole domain
        return np.sqrt(2.0) * residual / max(abs(values[0]), np.finfo(float).tiny), np.inf, residual
    gap = float(values[n_keep - 1] - values[n_keep])
    error = np.sqrt(2.0) * residual / gap if gap > 0 else np.inf
    return error, gap, residual


def block_power_iteration(apply, start, n_keep, tol, max_iter, rng, project=None, progress=None):
    """Block power iteration with Rayleigh-Ritz on a symmetric operator, to a residual bound.

    ``apply(B)`` is ``A @ B`` for a symmetric positive semi-definite ``A`` on
    the domain (the range of ``project``; all of ``R^p`` when None). Each
    iteration orthonormalises the block inside the domain
    (:func:`orthonormal_block`), applies ``A`` once and takes the Ritz pairs of
    ``basis^T A basis``. The top subspace converges like
    ``(lambda_(q+1) / lambda_keep)^t`` for a block of ``q`` columns
    (oversampling is the remedy for small gaps). It stops when

    - the Davis-Kahan estimate (:func:`ritz_subspace_error`) of the distance to
      the exact top ``n_keep`` subspace is at most ``tol`` (converged), or
    - the estimate stalls (``stalled``): the residual is at rounding level of
      ``theta_1``, or it has not halved in ``_STALL_ITER`` iterations although
      the estimated factor ``theta_q / theta_keep`` promised it -- the
      eigengap is too small for ``tol`` at working precision, and more
      iterations cannot help; or
    - ``max_iter`` is reached.

    Returns
    -------
    PowerResult
    """
    basis = orthonormal_block(start, rng, project)
    checkpoint, checkpoint_error = 0, np.inf
    for n_iter in range(1, max_iter + 1):
        image = apply(basis)
        values, small = rayleigh_ritz(basis, image)
        error, gap, residual = ritz_subspace_error(values, small, image, basis, n_keep)
        largest = max(abs(float(values[0])), np.finfo(float).tiny)
        ratio = max(float(values[-1]), 0.0) / values[n_keep - 1] if values[n_keep - 1] > 0 else 1.0
        stalled = error > tol and (
            residual <= _ROUNDING * largest * np.sqrt(basis.shape[1])
            or (
                n_iter - checkpoint >= _STALL_ITER
                and error > checkpoint_error / 2
                and ratio**_STALL_ITER < 0.5
            )
        )
        if error <= tol or stalled or n_iter == max_iter:
            break
        if n_iter - checkpoint >= _STALL_ITER:
            checkpoint, checkpoint_error = n_iter, error
        if progress is not None:
            progress.iteration(n_iter, error)
        basis = orthonormal_block(image, rng, project)
    result = PowerResult(
        values[:n_keep], basis @ small[:, :n_keep], n_iter, error, gap, ratio, stalled, largest
    )
    if progress is not None:
        progress.done(result, tol)
    return result


def power_block_width(n_keep, oversampling, dimension):
    """Columns of the power block: ``n_keep + oversampling``, at least one extra, at most all.

    The extra column's Ritz value estimates the eigengap of the stopping rule;
    a block as wide as the domain (``dimension``) makes the Ritz pairs exact.
    """
    return min(n_keep + max(oversampling, 1), dimension)


def power_stop_message(phase, result, tol, n_keep, oversampling):
    """One line: which phase stopped, its estimated error, and why.

    Either the estimate stalled (eigenvalues ``n_keep`` and ``n_keep + 1``
    too close for ``tol`` at working precision), or ``max_iter`` ran
    out: the error shrinks by about ``ratio`` per iteration, so about
    ``log(tol / error) / log(ratio)`` more would be needed.
    """
    head = (
        f"{phase} stopped after {result.n_iter} power iterations with an "
        f"estimated subspace error of {result.error:.3g} > tol={tol:g}"
    )
    relative_gap = result.gap / result.largest
    if result.stalled:
        return (
            f"{head}: the estimate stopped decreasing at rounding level, as eigenvalues "
            f"{n_keep} and {n_keep + 1} nearly tie (relative eigengap {relative_gap:.2g}); the "
            f"top-{n_keep} subspace is not determined to tol at working precision (its "
            "captured variance is)."
        )
    more = np.log(tol / result.error) / np.log(result.ratio) if 0 < result.ratio < 1 else np.inf
    return (
        f"{head}: max_iter reached; at the estimated convergence factor {result.ratio:.4g} "
        f"per iteration (relative eigengap {relative_gap:.2g}) about {more:.3g} more "
        f"iterations would reach tol: raise max_iter, or oversampling (now {oversampling}) "
        "for a smaller factor."
    )
