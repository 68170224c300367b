"""MMD² between the projected groups and the median-heuristic bandwidth ([Lee2022]_).

The kernel sums and random features are :mod:`fairpca._kernels`, shared with
:class:`fairpca.MMDFairPCA`.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike

from fairpca._kernels import _bandwidth_rows, _max_pairwise_mmd2, _median_bandwidth
from fairpca._linalg import top_eigh
from fairpca._sparse import issparse, sparse_group_scatters
from fairpca._validation import (
    check_data,
    check_n_components,
    check_number,
    check_sensitive_features,
)
from fairpca.metrics._projection import _representation
from fairpca.moments import _MAX_CANCELLATION

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator


def _check_bandwidth(bandwidth):
    return check_number(
        bandwidth, "bandwidth", numbers.Real, minimum=0, include_boundaries="neither"
    )


def mmd_bandwidth(
    X: ArrayLike,
    n_components: int,
    *,
    max_samples: int = 2000,
    random_state: int | np.random.RandomState | None = None,
) -> float:
    r"""Median-heuristic RBF bandwidth on vanilla-PCA projections ([Lee2022]_).

    .. math:: \sigma = \sqrt{\tfrac12\,\mathrm{median}_{i<j}
              \| V_{PCA}^T (x_i - x_j) \|^2 },

    with ``V_PCA`` the top ``n_components`` principal loadings of ``X``
    (computed from all rows), so that the kernel
    ``exp(-||a - b||^2 / (2 sigma^2))`` equals ``exp(-||a - b||^2 / median)``.
    When ``X`` has more than ``max_samples`` rows, the median runs over the
    pairs of a uniform random subsample of ``max_samples`` rows drawn without
    replacement (``max_samples (max_samples - 1) / 2`` pairs; the sample median
    of that many pairs is accurate to well under one per cent).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data (at least two rows).
    n_components : int
        Dimension ``d`` of the PCA projection.
    max_samples : int, default=2000
        Rows used for the pairwise median.
    random_state : int, RandomState instance or None, default=None
        Seed of the row subsample.

    Returns
    -------
    bandwidth : float
    """
    X = check_data(X, "X", min_samples=2, accept_sparse=True)
    d = check_n_components(n_components, X.shape[1])
    max_samples = check_number(max_samples, "max_samples", minimum=2)
    if issparse(X) and X.shape[0] < X.shape[1]:
        X = X.toarray()  # wide: n x p is no larger than the n x n Gram matrix's inputs
    if issparse(X):
        # The scatter from the sparse product (the moments' guarded centring), X never dense.
        one_group = np.zeros(X.shape[0], dtype=np.intp)
        scatter = sparse_group_scatters(
            X, one_group, np.array([X.shape[0]]), max_cancellation=_MAX_CANCELLATION
        )[1][0]
        V = top_eigh(scatter, d)[1]
        rows = _bandwidth_rows(X.shape[0], max_samples, random_state)
        return _median_bandwidth(X[rows].toarray() @ V)
    mean = X.mean(axis=0)
    if X.shape[0] < X.shape[1]:
        # Wide data: the top right singular vectors from the n x n Gram matrix.
        centred = X - mean
        values, U = top_eigh(centred @ centred.T, d)
        V = centred.T @ (U / np.sqrt(np.maximum(values, np.finfo(float).tiny)))
    else:
        # Scatter matrix accumulated over blocks of centred rows: no centred copy of X
        # (at 10^6 rows that copy was the largest allocation of an MMDFairPCA fit).
        scatter = np.zeros((X.shape[1], X.shape[1]))
        for start in range(0, X.shape[0], 65536):
            block = X[start : start + 65536] - mean
            scatter += block.T @ block
        V = top_eigh(scatter, d)[1]
    if X.shape[0] > max_samples:
        X = X[_bandwidth_rows(X.shape[0], max_samples, random_state)]
    return _median_bandwidth(X @ V)


def mmd2(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    projection: BaseEstimator | ArrayLike,
    *,
    bandwidth: float | None = None,
    method: Literal["exact", "rff"] = "exact",
    n_random_features: int = 1024,
    random_state: int | np.random.RandomState | None = None,
    block_size: int = 1024,
) -> float:
    r"""Squared MMD between the projected groups ([Lee2022]_, Definition 5).

    The biased V-statistic

    .. math:: \widehat{\mathrm{MMD}}^2 = \frac{1}{n_a^2}\sum k(z_i, z_{i'})
              + \frac{1}{n_b^2}\sum k(z_j, z_{j'}) - \frac{2}{n_a n_b}\sum k(z_i, z_j)

    with RBF kernel ``k(u, v) = exp(-||u - v||^2 / (2 sigma^2))`` between the
    representations ``Z`` (projection applied to ``X``) of two groups. With
    ``k > 2`` groups the maximum over all pairs of groups is returned.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`; any other fitted transformer
        (e.g. FairKernelPCA, LinearErasure) is also accepted, its
        representation being ``transform(X)``.
    bandwidth : float, default=None
        RBF bandwidth ``sigma``; by default ``mmd_bandwidth(X, d)`` with ``d``
        the projection's target dimension (the median heuristic of Lee et al.
        on vanilla PCA of ``X``). To compare several projections, compute it
        once (e.g. on training data) and pass it to every call.
    method : {"exact", "rff"}, default="exact"
        ``"exact"``: kernel sums over row blocks, ``O(n^2 r)`` time and
        ``O(block_size * n)`` memory. ``"rff"``: random Fourier features,
        ``O(n r D)``: a pair ``[cos(w^T z), sin(w^T z)]`` per frequency ``w``,
        the ``D`` frequencies a scrambled Sobol' sequence mapped to
        ``N(0, I / sigma^2)`` ([Rahimi2007]_, [Avron2016]_), trigonometric
        functions in single precision; the estimate is the mean over
        frequencies of the squared difference of the groups' empirical
        characteristic functions, unbiased for the exact V-statistic with
        standard error ``O(1 / sqrt(D))``. It is the estimate that
        :class:`fairpca.MMDFairPCA` optimises with ``mmd="rff"``. At
        ``D = 1024`` its relative error is typically well under one per cent
        away from a fair projection but can reach several per cent near one,
        so do not use it to certify a small MMD² (e.g. ``<= 1e-4``).
    n_random_features : int, default=1024
        Number ``D`` of random features (``method="rff"``).
    random_state : int, RandomState instance or None, default=None
        Seed of the random features and of the bandwidth subsample.
    block_size : int, default=1024
        Rows per block (``method="exact"``).

    Returns
    -------
    mmd2 : float
        Non-negative.
    """
    if method not in ("exact", "rff"):
        raise ValueError(f"method must be 'exact' or 'rff', got {method!r}.")
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    block_size = check_number(block_size, "block_size", minimum=1)
    D = check_number(n_random_features, "n_random_features", minimum=1)
    if bandwidth is not None:
        bandwidth = _check_bandwidth(bandwidth)
    Z, d = _representation(projection, X)
    if bandwidth is None:
        bandwidth = _check_bandwidth(
            mmd_bandwidth(X, min(d, X.shape[1]), random_state=random_state)
        )
    parts = [Z[codes == a] for a in range(len(groups))]
    return _max_pairwise_mmd2(
        parts,
        bandwidth,
        method=method,
        block_size=block_size,
        n_random_features=D,
        random_state=random_state,
    )
