"""Reconstruction-based metrics: group errors, ARE and ABDiff, marginal loss, disparity.

See :mod:`fairpca.metrics` for the accepted ``projection`` arguments and the
references.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from fairpca._validation import check_data, check_sensitive_features
from fairpca.metrics._projection import (
    _group_means,
    _labels,
    _resolve_projection,
    _row_errors,
)

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator


def _optimal_group_errors(X, codes, n_groups, mean, d):
    """Mean rank-``d`` PCA error of each group on its own rows (centred on ``mean``).

    It is the sum of the eigenvalues of ``B_a = A_a.T A_a / n_a`` beyond the
    top ``d``, computed from singular values of ``A_a`` (no cancellation).
    """
    out = np.empty(n_groups)
    for a in range(n_groups):
        A = X[codes == a] - mean
        sv = np.linalg.svd(A, compute_uv=False)
        out[a] = np.sum(sv[d:] ** 2) / A.shape[0]
    return out


def group_reconstruction_error(
    X: ArrayLike, sensitive_features: ArrayLike, projection: BaseEstimator | ArrayLike
) -> dict[Any, float]:
    r"""Average reconstruction error of each group.

    For group ``a`` with rows ``x_i``, ``i in a``:

    .. math:: \mathrm{err}_a = \frac{1}{n_a} \sum_{i \in a}
              \| (x_i - m) - (x_i - m) P \|^2, \qquad P = U^T \mathrm{diag}(s) U,

    with ``m`` the projection's mean. This is the per-population average
    reconstruction error of [Samadi2018]_ (their Figure 3) and the group term
    of the ABDiff / ARE metrics of [Vu2022]_.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row (at least two groups).
    projection : estimator or array-like of shape (n_components, n_features)
        Fitted fairpca estimator, fitted sklearn PCA, or components array with
        orthonormal rows (then centred on the pooled mean of ``X``).

    Returns
    -------
    errors : dict
        ``{group label: mean squared residual norm}``, sorted by label.
    """
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    components, scales, mean, _ = _resolve_projection(projection, X)
    errs, _ = _group_means(_row_errors(X, components, scales, mean), codes, len(groups))
    return dict(zip(_labels(groups), errs.tolist(), strict=True))


def reconstruction_error(X: ArrayLike, projection: BaseEstimator | ArrayLike) -> float:
    r"""Average reconstruction error over all rows (the ARE of [Vu2022]_).

    .. math:: \mathrm{ARE} = \frac{1}{n} \sum_{i=1}^n \| (x_i - m)(I - P) \|^2

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.

    Returns
    -------
    error : float
    """
    X = check_data(X, "X")
    components, scales, mean, _ = _resolve_projection(projection, X)
    return float(np.mean(_row_errors(X, components, scales, mean)))


def reconstruction_error_gap(
    X: ArrayLike, sensitive_features: ArrayLike, projection: BaseEstimator | ArrayLike
) -> float:
    """Absolute gap between group reconstruction errors (the ABDiff of [Vu2022]_).

    For two groups ``|err_0 - err_1|``; for ``k > 2`` groups the largest
    pairwise gap ``max_{a,b} |err_a - err_b| = max_a err_a - min_a err_a``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.

    Returns
    -------
    gap : float
    """
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    components, scales, mean, _ = _resolve_projection(projection, X)
    return _abdiff_are(X, codes, len(groups), components, scales, mean)[0]


def _abdiff_are(X, codes, n_groups, components, scales, mean, group_means=None):
    """ABDiff and ARE of [Vu2022]_ with a choice of centring for the groups.

    ARE is the mean squared residual norm of all rows of ``X`` centred on
    ``mean``; ABDiff is the largest gap between the groups' mean squared
    residual norms, where the rows of group ``a`` are centred on ``mean``
    (:func:`reconstruction_error_gap`) or, when given, on ``group_means[a]``:
    their own mean in ``X`` (``ReconstructionScorer(center="group")``) or their
    training mean (the authors' evaluation code,
    :func:`fairpca.experiments.vu2022_errors`, and
    ``ReconstructionScorer(center="train_group")``).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Validated data.
    codes : ndarray of shape (n_samples,)
        Group index of each row in ``range(n_groups)`` (with ``group_means``,
        rows with any other code count in ARE only).
    n_groups : int
        Number of groups.
    components, scales, mean : ndarray
        The projection, as returned by ``_resolve_projection``.
    group_means : sequence of ndarray of shape (n_features,) or None, default=None
        Centre of each group's rows; ``None`` centres every group on ``mean``.

    Returns
    -------
    abdiff, are : float
    """
    row_errors = _row_errors(X, components, scales, mean)
    if group_means is None:
        errors, _ = _group_means(row_errors, codes, n_groups)
    else:
        errors = [
            np.mean(_row_errors(X[codes == a], components, scales, centre))
            for a, centre in enumerate(group_means)
        ]
    return float(max(errors) - min(errors)), float(np.mean(row_errors))


def _group_losses(X, sensitive_features, projection, n_components):
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    components, scales, mean, d = _resolve_projection(projection, X, n_components=n_components)
    errs, counts = _group_means(_row_errors(X, components, scales, mean), codes, len(groups))
    best = _optimal_group_errors(X, codes, len(groups), mean, d)
    return groups, errs - best, counts


def marginal_loss(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    projection: BaseEstimator | ArrayLike,
    *,
    n_components: int | None = None,
) -> dict[Any, float]:
    r"""Average marginal loss of each group ([Samadi2018]_, Definition 4.3 divided by n_a).

    .. math:: \mathrm{loss}_a = \mathrm{err}_a(P) - \sum_{j > d} \lambda_j(B_a),
              \qquad B_a = A_a^T A_a / n_a,

    where ``A_a`` holds group ``a``'s rows centred on the projection's mean,
    ``err_a`` is :func:`group_reconstruction_error` and the subtracted term is
    group ``a``'s own optimal rank-``d`` error. For an orthogonal projector
    ``P`` of rank ``d`` this equals ``beta_a - <B_a, P>`` with ``beta_a`` the
    sum of the top ``d`` eigenvalues of ``B_a``; it is non-negative for any
    rank-``d`` projector and zero for group ``a``'s own PCA. For a scaled
    projection (MinMaxLossFairPCA) the actual residual is used, which equals
    ``beta_a - <B_a, I - (I - P)^2>``, the loss of the fractional solution.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.
    n_components : int, default=None
        Target dimension ``d`` of the groups' own optimum. By default the
        estimator's integer ``n_components`` hyper-parameter (so that
        MinMaxLossFairPCA's ``d + k - 1`` scaled components are compared with
        rank-``d`` optima), else the number of components.

    Returns
    -------
    losses : dict
        ``{group label: loss_a}``, sorted by label.
    """
    groups, losses, _ = _group_losses(X, sensitive_features, projection, n_components)
    return dict(zip(_labels(groups), losses.tolist(), strict=True))


def disparity_error(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    projection: BaseEstimator | ArrayLike,
    *,
    n_components: int | None = None,
) -> dict[Any, float]:
    r"""Disparity error of each group ([Kamani]_, Definition 2, eq. (4)).

    .. math:: \mathcal{E}_a = \mathcal{L}_a(P) - \mathcal{L}_a(U_a^*), \qquad
              \mathcal{L}_a(P) = \| A_a - A_a P \|_F^2,

    with ``A_a`` group ``a``'s rows centred on the projection's mean and
    ``U_a^*`` group ``a``'s own rank-``d`` PCA. Kamani et al. use the
    **squared Frobenius norm, summed over the group's rows, without dividing
    by** ``n_a`` (eqs. (2)-(4)); this function keeps that normalisation, so
    ``E_a = n_a * marginal_loss_a`` and larger groups have larger values. Use
    :func:`marginal_loss` for the per-row average of [Samadi2018]_. Kamani et
    al.'s figures report the average of ``E_a`` over groups.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.
    n_components : int, default=None
        Target dimension ``d``; see :func:`marginal_loss`.

    Returns
    -------
    errors : dict
        ``{group label: E_a}``, sorted by label.
    """
    groups, losses, counts = _group_losses(X, sensitive_features, projection, n_components)
    return dict(zip(_labels(groups), (losses * counts).tolist(), strict=True))


def pairwise_disparity_error(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    projection: BaseEstimator | ArrayLike,
    *,
    n_components: int | None = None,
) -> dict[tuple[Any, Any], float]:
    r"""Pairwise disparity errors ([Kamani]_, Definition 6, eq. (11)).

    .. math:: \Delta_{a,b} = \mathcal{E}_a - \mathcal{E}_b

    for every pair of groups ``a < b`` (sorted labels), with ``E`` from
    :func:`disparity_error` (un-normalised sums). A projection is fair in
    Kamani et al.'s sense when every ``Delta`` is zero.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.
    n_components : int, default=None
        Target dimension ``d``; see :func:`marginal_loss`.

    Returns
    -------
    deltas : dict
        ``{(label_a, label_b): E_a - E_b}`` for ``a < b``.
    """
    errs = disparity_error(X, sensitive_features, projection, n_components=n_components)
    return {(a, b): errs[a] - errs[b] for a, b in combinations(errs, 2)}


def explained_variance_ratio(
    X: ArrayLike,
    projection: BaseEstimator | ArrayLike,
    *,
    center: Literal["projection", "data"] = "projection",
) -> float:
    r"""Fraction of the variance of ``X`` kept by the projection (%VAR of [Lee2022]_).

    .. math:: \frac{\mathrm{tr}(V^T \Sigma V)}{\mathrm{tr}\,\Sigma} =
              \frac{\sum_j s_j\, u_j^T \Sigma u_j}{\mathrm{tr}\,\Sigma}
              = \frac{\langle \Sigma, P \rangle}{\mathrm{tr}\,\Sigma},

    with ``Sigma`` the covariance of ``X`` around the projection's mean (or
    around the mean of ``X``, ``center="data"``) and components weighted by
    their scales ``s_j`` (the variance of the representation ``Z``). For a
    sklearn PCA fitted on ``X`` this equals ``explained_variance_ratio_.sum()``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.
    center : {"projection", "data"}, default="projection"
        Where ``Sigma`` is centred: the projection's mean (the training mean
        of a fitted estimator: held-out rows are scored as the estimator maps
        them) or the mean of ``X`` itself (Lee et al.'s %VAR, the covariance
        of the test rows).

    Returns
    -------
    ratio : float
        In ``[0, 1]``.
    """
    X = check_data(X, "X")
    if center not in ("projection", "data"):
        raise ValueError(f"center must be 'projection' or 'data', got {center!r}.")
    components, scales, mean, _ = _resolve_projection(projection, X)
    A = X - (X.mean(axis=0) if center == "data" else mean)
    total = np.einsum("ij,ij->", A, A)
    if total == 0:
        raise ValueError("X has zero variance around the projection's mean.")
    kept = np.sum(scales * np.sum((A @ components.T) ** 2, axis=0))
    return float(kept / total)


def communality(projection: BaseEstimator | ArrayLike) -> np.ndarray:
    r"""Communality of each original feature.

    .. math:: h_k = \sum_j s_j\, U_{jk}^2,

    the (scale-weighted) sum of squared loadings of feature ``k``; it is the
    diagonal of ``P``, lies in ``[0, 1]`` and sums to ``sum_j s_j``.

    Parameters
    ----------
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.

    Returns
    -------
    communality : ndarray of shape (n_features,)
    """
    components, scales, _, _ = _resolve_projection(projection)
    return scales @ components**2
