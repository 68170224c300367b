r"""Group moments and centred products of ``scipy.sparse`` data, without densifying it.

One-hot encoders and text vectorisers return CSR/CSC matrices whose dense
form would not fit in memory. Everything the moment-based methods read from
``X`` is a sum over rows, so it can be taken from the non-zeros alone: for
each group ``a`` (rows ``R_a``, weights ``w``, total weight ``n_a``)

.. math::

    G_a = X_a^T W X_a, \quad s_a = X_a^T w, \quad \mu_a = s_a / n_a, \quad
    S_a = G_a - n_a \mu_a \mu_a^T,

``G_a`` one sparse product (its non-zeros: at most ``p^2``). Centring after
summing is exact algebra but loses digits where a column's offset dwarfs its
spread: the rounding error of ``S_a[j, k]`` is about
``eps sqrt(G_a[j, j] G_a[k, k])``, so the entries of column ``j`` are accurate
relative to ``sqrt(S_a[j, j] S_a[k, k])`` while ``G_a[j, j] / S_a[j, j]`` is
below the cancellation bound (100, as in the dense pass). One-hot columns meet
it unless a category fills more than 99 % of a group. Columns past it are
summed again from their dense, centred values ``D = X_a[:, J] - mu_a[J]``,
which is cheap: by Cauchy–Schwarz, ``G_jj / S_jj > 100`` needs more than 99 %
of the column's entries in the group to be non-zero, so their dense copy is no
larger than their sparse storage. Their cross terms with the other columns,
``X_a^T W D - mu_a (w^T D)``, are then exact up to rounding. Continuous
sensitive attributes ``Z`` (dense) enter the same way as such columns.

``transform`` needs ``(X - mu) B`` for a small dense ``B``; for sparse ``X``
it is ``X B - mu B``, with the same guard for columns whose training offset
dwarfs their spread (:func:`centred_product`).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

__all__ = ["add_sparse", "centred_product", "issparse", "sparse_group_scatters"]

#: Sparse formats the estimators take without a conversion (others are
#: converted to CSR by the validation, a copy of the non-zeros only).
SPARSE_FORMATS = ("csr", "csc")


def issparse(X):
    """Whether ``X`` is a ``scipy.sparse`` matrix or array."""
    return sparse.issparse(X)


def sparse_group_scatters(X, codes, counts, covariates=None, weights=None, *, max_cancellation):
    """Means and centred scatter matrices of each group of sparse ``X``, never densified.

    Parameters
    ----------
    X : scipy.sparse matrix or array of shape (n_samples, n_features), CSR or CSC
        Data (NaN or infinities propagate into the sums, where the caller finds them).
    codes : ndarray of shape (n_samples,), dtype intp
        Group code of each row.
    counts : ndarray of shape (n_groups,)
        Rows (or total weight) per code.
    covariates : ndarray of shape (n_samples, n_covariates) or None
        Dense continuous attributes ``Z``: the moments are those of ``[x_i, z_i]``.
    weights : ndarray of shape (n_samples,) or None
        Sample weights of the rows.
    max_cancellation : float
        Largest accepted ratio ``G_a[j, j] / S_a[j, j]`` before column ``j`` is
        summed again around its group mean (see the module docstring).

    Returns
    -------
    means : ndarray of shape (n_groups, width)
    scatters : ndarray of shape (n_groups, width, width)
        ``width = n_features + n_covariates``; zero for groups without rows.
    """
    X = X.tocsr()  # row slices of CSC would copy every column
    width = X.shape[1] + (0 if covariates is None else covariates.shape[1])
    means = np.zeros((len(counts), width))
    scatters = np.zeros((len(counts), width, width))
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=len(counts)))))
    for a in np.flatnonzero(counts):
        rows = order[bounds[a] : bounds[a + 1]]
        Xa = X if len(rows) == X.shape[0] else X[rows]
        Za = None if covariates is None else covariates[rows]
        w = None if weights is None else weights[rows]
        means[a], scatters[a] = _group_scatter(Xa, Za, w, counts[a], max_cancellation)
    return means, scatters


def _scale_rows(X, w):
    """``diag(w) X`` for CSR ``X``, sharing its index arrays."""
    data = X.data * np.repeat(w, np.diff(X.indptr))
    return type(X)((data, X.indices, X.indptr), shape=X.shape)


def _group_scatter(Xa, Za, w, total, max_cancellation):
    """Mean ``(width,)`` and centred scatter ``(width, width)`` of one group's rows.

    ``Xa`` is CSR (n_a, p), ``Za`` dense (n_a, m) or None, ``w`` the rows'
    weights or None, ``total`` their sum (or n_a).
    """
    p = Xa.shape[1]
    wX = Xa if w is None else _scale_rows(Xa, w)
    # In place: at large p each p x p temporary counts.
    scatter = (Xa.T @ wX).toarray()
    scatter += scatter.T  # the two triangles are summed in different orders
    scatter *= 0.5
    gram_diagonal = np.diagonal(scatter).copy()
    mean = np.asarray(wX.sum(axis=0)).ravel() / total
    scatter -= np.outer(total * mean, mean)
    offset = _offset_columns(gram_diagonal, np.diagonal(scatter), max_cancellation)
    if not offset.size and Za is None:
        return mean, scatter
    # Dense columns, centred before multiplying: X's offset columns, then Z.
    shifts, dense, columns = [], [], []
    if offset.size:
        shifts, dense, columns = [mean[offset]], [Xa[:, offset].toarray()], [offset]
    if Za is not None:
        weighted = Za if w is None else Za * w[:, None]
        shifts.append(weighted.sum(axis=0) / total)
        dense.append(Za)
        columns.append(p + np.arange(Za.shape[1]))
    shift, columns = np.concatenate(shifts), np.concatenate(columns)
    D = np.concatenate(dense, axis=1) - shift
    wD = D if w is None else D * w[:, None]
    column_sums = wD.sum(axis=0)
    delta = column_sums / total  # what the first centring missed (the mean's rounding)
    # sum w (x_k - mu_k) d over the rows, for every column k: exact for any shift of d.
    cross = np.asarray(Xa.T @ wD) - np.outer(mean, column_sums)
    block = D.T @ wD
    block = 0.5 * (block + block.T) - total * np.outer(delta, delta)
    width = p + (0 if Za is None else Za.shape[1])
    joint_mean = np.concatenate((mean, np.zeros(width - p)))
    joint_mean[columns] = shift + delta
    joint = np.zeros((width, width))
    joint[:p, :p] = scatter
    joint[:p, columns] = cross
    joint[columns, :p] = cross.T
    joint[np.ix_(columns, columns)] = block
    return joint_mean, joint


def _offset_columns(gram_diagonal, scatter_diagonal, max_cancellation):
    """Columns whose centred scatter lost too many digits: ``G_jj > bound * S_jj``.

    Columns that are zero in the group (``G_jj = 0``) are exact and left out;
    a negative ``S_jj`` (rounding) is always redone.
    """
    with np.errstate(invalid="ignore"):
        bad = (gram_diagonal > 0) & (gram_diagonal > max_cancellation * scatter_diagonal)
    return np.flatnonzero(bad)


def centred_product(X, mean, B, spread=None, max_cancellation=None):
    """``(X - mean) @ B`` without forming ``X - mean`` when ``X`` is sparse.

    For sparse ``X`` it is ``X B - mean B``; columns ``j`` whose training
    offset dwarfs their spread (``mean_j^2 > max_cancellation * spread_j``, the
    bound of the moment pass) are taken dense and centred first, so that the
    result keeps the digits the dense formula would.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
    mean : ndarray of shape (n_features,)
    B : ndarray of shape (n_features, r)
    spread : ndarray of shape (n_features,), default=None
        Training variance of each column; None skips the guard.
    max_cancellation : float, default=None
        The guard's bound (required with ``spread``).

    Returns
    -------
    product : ndarray of shape (n_samples, r)
    """
    if not issparse(X):
        return (X - mean) @ B
    if spread is None:
        offset = np.array([], dtype=np.intp)
    else:
        offset = np.flatnonzero(mean**2 > max_cancellation * spread)
    sparse_part = np.ones(X.shape[1], dtype=bool)
    sparse_part[offset] = False
    # The offset columns' rows of B are zeroed here and added back centred below.
    product = np.asarray(X @ (B * sparse_part[:, None])) - (mean * sparse_part) @ B
    if offset.size:
        product += (X[:, offset].toarray() - mean[offset]) @ B[offset]
    return product


def add_sparse(out, X):
    """``out + X`` into ``out`` (dense, same shape as sparse ``X``), touching only X's non-zeros.

    Unlike ``X + out`` in scipy, no dense copy of ``X`` is made.

    Returns
    -------
    out : ndarray of shape (n_samples, n_features)
    """
    coo = sparse.coo_matrix(X)
    coo.sum_duplicates()  # fancy-index += would drop repeated positions
    out[coo.row, coo.col] += coo.data
    return out
