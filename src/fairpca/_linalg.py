"""Dense linear-algebra helpers shared by the estimators and the metrics."""

from scipy.linalg import eigh

__all__ = ["top_eigh"]


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
