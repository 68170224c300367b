"""Dense linear-algebra helpers shared by the estimators and the metrics."""

import numpy as np
from scipy.linalg import eigh
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh

__all__ = ["flip_signs", "row_space", "top_eigh", "top_eigh_fast"]

#: From this size on, and for at most a tenth of the spectrum, ARPACK's Lanczos
#: iteration is cheaper than LAPACK's reduction to tridiagonal form.
_LANCZOS_MIN = 400

#: Up to this size numpy's full ``eigh`` is faster than LAPACK's subset driver
#: (its fixed costs dominate).
_FULL_EIGH_MAX = 32


def top_eigh(matrix, n_components):
    """The ``n_components`` largest eigenpairs of a symmetric matrix, largest first.

    Only the wanted eigenpairs are computed (LAPACK's subset drivers), which is
    cheaper than a full decomposition when ``n_components`` is small.

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
    values, vectors = eigh(matrix, subset_by_index=[p - n_components, p - 1])
    return values[::-1], vectors[:, ::-1]


def top_eigh_fast(matrix, n_components):
    """:func:`top_eigh` by the fastest method for the size, for solvers' inner loops.

    Tiny matrices: numpy's full ``eigh``. Large ones with few eigenpairs:
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
    if p <= _FULL_EIGH_MAX:
        values, vectors = np.linalg.eigh(matrix)
        return values[::-1][:n_components], vectors[:, ::-1][:, :n_components]
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
    pivot = np.abs(components).argmax(axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), pivot])
    signs[signs == 0] = 1.0
    return components * signs[:, None]
