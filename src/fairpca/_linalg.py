"""Dense linear-algebra helpers shared by the estimators and the metrics."""

import numpy as np
from scipy.linalg import eigh

__all__ = ["top_eigh"]

#: Up to this size numpy's full ``eigh`` is faster than LAPACK's subset driver
#: (measured crossover near 30 on one BLAS thread).
_FULL_EIGH_MAX = 32


def top_eigh(matrix, n_components):
    """The ``n_components`` largest eigenpairs of a symmetric matrix, largest first.

    Only the wanted eigenpairs are computed (LAPACK's subset drivers), which is
    cheaper than a full decomposition when ``n_components`` is small and the
    matrix is not tiny.

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
    if p <= _FULL_EIGH_MAX:
        values, vectors = np.linalg.eigh(matrix)
        return values[::-1][:n_components], vectors[:, ::-1][:, :n_components]
    values, vectors = eigh(matrix, subset_by_index=[p - n_components, p - 1])
    return values[::-1], vectors[:, ::-1]
