"""Metrics for auditing a (fair) PCA projection.

Every representation metric takes ``projection``, which may be

* a fitted fair-PCA estimator of this package (``components_`` of shape
  ``(r, p)`` with orthonormal rows, ``mean_`` of shape ``(p,)``, optional
  ``component_scales_`` of shape ``(r,)`` in ``(0, 1]`` and the
  hyper-parameter ``n_components``);
* a fitted :class:`sklearn.decomposition.PCA` (scales of one);
* an array of shape ``(n_components, n_features)`` with orthonormal rows, in
  which case the data passed to the metric are centred on their own pooled
  mean.

With ``U = components_`` and ``s = component_scales_`` the representation is
``Z = ((X - mean) @ U.T) * sqrt(s)`` and the reconstruction is
``X_hat = (Z * sqrt(s)) @ U + mean``, i.e. ``X_hat - mean = (X - mean) P``
with ``P = U.T @ diag(s) @ U``. When every scale is one, ``P`` is the
orthogonal projector onto the span of the components.

Per-group results are returned as dictionaries ``{group label: value}`` in
the sorted order of the labels.

References
----------
.. [Samadi2018] S. Samadi, U. Tantipongpipat, J. Morgenstern, M. Singh and
   S. Vempala. "The Price of Fair PCA: One Extra Dimension." NeurIPS 2018.
.. [Olfat2019] M. Olfat and A. Aswani. "Convex Formulations for Fair
   Principal Component Analysis." AAAI 2019.
.. [Kamani] M. M. Kamani, F. Haddadpour, R. Forsati and M. Mahdavi.
   "Efficient Fair Principal Component Analysis." arXiv:1911.04931.
.. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
   "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
   Manifold." AAAI 2022.
.. [Vu2022] H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally
   Robust Fair Principal Components via Geodesic Descents." ICLR 2022.
.. [Rahimi2007] A. Rahimi and B. Recht. "Random Features for Large-Scale
   Kernel Machines." NeurIPS 2007.
.. [Avron2016] H. Avron, V. Sindhwani, J. Yang and M. W. Mahoney.
   "Quasi-Monte Carlo Feature Maps for Shift-Invariant Kernels." JMLR 17, 2016.
"""

import numbers
from itertools import combinations

import numpy as np
from scipy.stats import ks_2samp
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from fairpca._kernels import _bandwidth_rows, _max_pairwise_mmd2, _median_bandwidth
from fairpca._linalg import top_eigh
from fairpca._validation import (
    check_data,
    check_n_components,
    check_number,
    check_sensitive_features,
)

__all__ = [
    "communality",
    "disparity_error",
    "downstream_fairness",
    "explained_variance_ratio",
    "group_reconstruction_error",
    "group_separability",
    "marginal_loss",
    "mmd2",
    "mmd_bandwidth",
    "pairwise_disparity_error",
    "reconstruction_error",
    "reconstruction_error_gap",
    "report",
]

#: Largest deviation of ``U @ U.T`` from the identity accepted for component arrays.
_ORTHONORMAL_TOL = 1e-6


# --------------------------------------------------------------------------
# Optional dependencies
# --------------------------------------------------------------------------


def _import_pandas():
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            'fairpca.metrics.report needs pandas; install it with pip install "fairpca[datasets]".'
        ) from exc
    return pd


def _import_fairlearn_metrics():
    try:
        import fairlearn.metrics as flm
    except ImportError as exc:
        raise ImportError(
            "fairpca.metrics.downstream_fairness needs fairlearn; install it with "
            'pip install "fairpca[fairness]".'
        ) from exc
    return flm


# --------------------------------------------------------------------------
# Resolving the projection argument
# --------------------------------------------------------------------------


def _check_orthonormal_rows(components, name):
    r, p = components.shape
    if r == 0:
        raise ValueError(f"{name} has no components (shape {components.shape}).")
    if r > p:
        raise ValueError(
            f"{name} has shape {components.shape}: expected (n_components, n_features) "
            f"with n_components <= n_features and orthonormal rows; did you pass the "
            f"transposed (n_features, n_components) matrix?"
        )
    deviation = np.max(np.abs(components @ components.T - np.eye(r)))
    if deviation > _ORTHONORMAL_TOL:
        raise ValueError(
            f"{name} must have orthonormal rows (U @ U.T = I) in the layout "
            f"(n_components, n_features), like sklearn PCA.components_; the largest "
            f"deviation of U @ U.T from the identity is {deviation:.3g} "
            f"(tolerance {_ORTHONORMAL_TOL:g}). If your matrix holds the components "
            "as columns, pass its transpose; otherwise orthonormalise it (e.g. with "
            "numpy.linalg.qr)."
        )


def _as_float_array(value, name, ndim):
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array: {exc}") from exc
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return arr


def _resolve_projection(projection, X=None, *, n_components=None, name="projection"):
    """Turn any accepted ``projection`` into plain arrays.

    Parameters
    ----------
    projection : estimator or array-like
        A fitted estimator with ``components_`` and ``mean_`` (optionally
        ``component_scales_``), or a components array of shape
        ``(n_components, n_features)`` with orthonormal rows.
    X : ndarray of shape (n_samples, n_features) or None
        Validated data; its pooled mean centres an array projection, and its
        number of columns must match. ``None`` when only the components are
        needed (then ``mean`` is ``None`` for arrays).
    n_components : int or None
        Target dimension ``d`` overriding the one read from ``projection``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    components : ndarray of shape (r, p)
    scales : ndarray of shape (r,)
    mean : ndarray of shape (p,) or None
    d : int
        ``n_components`` if given, else the estimator's integer
        ``n_components`` hyper-parameter, else ``r``.
    """
    if projection is None:
        raise TypeError(
            f"{name} is required: pass a fitted estimator (fairpca or sklearn PCA) or an "
            "array of shape (n_components, n_features) with orthonormal rows."
        )
    is_estimator = hasattr(projection, "fit") or hasattr(projection, "components_")
    if is_estimator:
        if hasattr(projection, "fit"):
            try:
                check_is_fitted(projection)
            except NotFittedError as exc:
                raise NotFittedError(
                    f"{name} ({type(projection).__name__}) is not fitted yet; call "
                    "fit(X, sensitive_features=...) before computing metrics."
                ) from exc
        missing = [a for a in ("components_", "mean_") if not hasattr(projection, a)]
        if missing:
            raise TypeError(
                f"{name} ({type(projection).__name__}) has no attribute(s) "
                f"{', '.join(missing)}; pass a fitted fairpca estimator, a fitted "
                "sklearn.decomposition.PCA or a components array."
            )
        components = _as_float_array(projection.components_, f"{name}.components_", 2)
        _check_orthonormal_rows(components, f"{name}.components_")
        r, p = components.shape
        mean = _as_float_array(projection.mean_, f"{name}.mean_", 1)
        if mean.shape[0] != p:
            raise ValueError(
                f"{name}.mean_ has {mean.shape[0]} entries but {name}.components_ has {p} features."
            )
        raw_scales = getattr(projection, "component_scales_", None)
        if raw_scales is None:
            scales = np.ones(r)
        else:
            scales = _as_float_array(raw_scales, f"{name}.component_scales_", 1)
            if scales.shape[0] != r:
                raise ValueError(
                    f"{name}.component_scales_ has {scales.shape[0]} entries but "
                    f"{name}.components_ has {r} rows."
                )
            if np.any(scales <= 0) or np.any(scales > 1 + 1e-12):
                raise ValueError(f"{name}.component_scales_ must lie in (0, 1].")
        hyper = getattr(projection, "n_components", None)
        default_d = r
        if isinstance(hyper, numbers.Integral) and not isinstance(hyper, (bool, np.bool_)):
            default_d = int(hyper)
    else:
        arr = np.asarray(projection)
        if arr.dtype.kind not in "biuf":
            raise TypeError(
                f"{name} must be a fitted estimator or a numeric array of shape "
                f"(n_components, n_features); got {type(projection).__name__} "
                f"with dtype {arr.dtype}."
            )
        if arr.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D of shape (n_components, n_features) with "
                f"orthonormal rows, got shape {arr.shape}; for a single component "
                "use shape (1, n_features)."
            )
        components = _as_float_array(arr, name, 2)
        if X is not None and components.shape[1] != X.shape[1]:
            raise ValueError(
                f"{name} has shape {components.shape}, i.e. {components.shape[1]} "
                f"feature columns, but X has {X.shape[1]} features: expected "
                "(n_components, n_features)"
                + (
                    "; it looks transposed, pass its transpose."
                    if components.shape[0] == X.shape[1]
                    else "."
                )
            )
        _check_orthonormal_rows(components, name)
        r, p = components.shape
        scales = np.ones(r)
        mean = None if X is None else X.mean(axis=0)
        default_d = r
    if X is not None and X.shape[1] != p:
        raise ValueError(f"X has {X.shape[1]} features but {name} was fitted with {p} features.")
    if n_components is None:
        d = check_n_components(default_d, p, name=f"{name}.n_components")
    else:
        d = check_n_components(n_components, p)
    return components, scales, mean, d


def _labels(groups):
    """Group labels as plain Python scalars (nicer dictionary keys)."""
    return [g.item() if hasattr(g, "item") else g for g in groups]


def _project(X, components, scales, mean):
    """Representation ``Z = ((X - mean) @ U.T) * sqrt(scales)``, shape (n, r)."""
    return ((X - mean) @ components.T) * np.sqrt(scales)


def _row_errors(X, components, scales, mean):
    """Squared norm of each row's residual ``(x - mean)(I - P)``, shape (n,)."""
    A = X - mean
    coef = (A @ components.T) * scales
    residual = A - coef @ components
    return np.einsum("ij,ij->i", residual, residual)


def _group_means(values, codes, n_groups):
    counts = np.bincount(codes, minlength=n_groups)
    return np.bincount(codes, weights=values, minlength=n_groups) / counts, counts


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


# --------------------------------------------------------------------------
# Reconstruction-based metrics
# --------------------------------------------------------------------------


def group_reconstruction_error(X, sensitive_features, projection):
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


def reconstruction_error(X, projection):
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


def reconstruction_error_gap(X, sensitive_features, projection):
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
    errs = np.array(list(group_reconstruction_error(X, sensitive_features, projection).values()))
    return float(errs.max() - errs.min())


def _group_losses(X, sensitive_features, projection, n_components):
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    components, scales, mean, d = _resolve_projection(projection, X, n_components=n_components)
    errs, counts = _group_means(_row_errors(X, components, scales, mean), codes, len(groups))
    best = _optimal_group_errors(X, codes, len(groups), mean, d)
    return groups, errs - best, counts


def marginal_loss(X, sensitive_features, projection, *, n_components=None):
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


def disparity_error(X, sensitive_features, projection, *, n_components=None):
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


def pairwise_disparity_error(X, sensitive_features, projection, *, n_components=None):
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


def explained_variance_ratio(X, projection):
    r"""Fraction of the variance of ``X`` kept by the projection (%VAR of [Lee2022]_).

    .. math:: \frac{\mathrm{tr}(V^T \Sigma V)}{\mathrm{tr}\,\Sigma} =
              \frac{\sum_j s_j\, u_j^T \Sigma u_j}{\mathrm{tr}\,\Sigma}
              = \frac{\langle \Sigma, P \rangle}{\mathrm{tr}\,\Sigma},

    with ``Sigma`` the covariance of ``X`` around the projection's mean and
    components weighted by their scales ``s_j`` (the variance of the
    representation ``Z``). For a sklearn PCA fitted on ``X`` this equals
    ``explained_variance_ratio_.sum()``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.

    Returns
    -------
    ratio : float
        In ``[0, 1]``.
    """
    X = check_data(X, "X")
    components, scales, mean, _ = _resolve_projection(projection, X)
    A = X - mean
    total = np.einsum("ij,ij->", A, A)
    if total == 0:
        raise ValueError("X has zero variance around the projection's mean.")
    kept = np.sum(scales * np.sum((A @ components.T) ** 2, axis=0))
    return float(kept / total)


def communality(projection):
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


# --------------------------------------------------------------------------
# MMD
# --------------------------------------------------------------------------


def _check_bandwidth(bandwidth):
    return check_number(
        bandwidth, "bandwidth", numbers.Real, minimum=0, include_boundaries="neither"
    )


def mmd_bandwidth(X, n_components, *, max_samples=2000, random_state=None):
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
    X = check_data(X, "X", min_samples=2)
    d = check_n_components(n_components, X.shape[1])
    max_samples = check_number(max_samples, "max_samples", minimum=2)
    # Scatter matrix accumulated over blocks of centred rows: no centred copy of X
    # (at 10^6 rows that copy was the largest allocation of an MMDFairPCA fit).
    mean = X.mean(axis=0)
    scatter = np.zeros((X.shape[1], X.shape[1]))
    for start in range(0, X.shape[0], 65536):
        block = X[start : start + 65536] - mean
        scatter += block.T @ block
    V = top_eigh(scatter, d)[1]
    if X.shape[0] > max_samples:
        X = X[_bandwidth_rows(X.shape[0], max_samples, random_state)]
    return _median_bandwidth(X @ V)


def mmd2(
    X,
    sensitive_features,
    projection,
    *,
    bandwidth=None,
    method="exact",
    n_random_features=1024,
    random_state=None,
    block_size=1024,
):
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
        See :func:`group_reconstruction_error`.
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
    components, scales, mean, d = _resolve_projection(projection, X)
    block_size = check_number(block_size, "block_size", minimum=1)
    if bandwidth is None:
        bandwidth = mmd_bandwidth(X, d, random_state=random_state)
    bandwidth = _check_bandwidth(bandwidth)
    D = check_number(n_random_features, "n_random_features", minimum=1)
    Z = _project(X, components, scales, mean)
    parts = [Z[codes == a] for a in range(len(groups))]
    return _max_pairwise_mmd2(
        parts,
        bandwidth,
        method=method,
        block_size=block_size,
        n_random_features=D,
        random_state=random_state,
    )


# --------------------------------------------------------------------------
# Classifier-based metrics
# --------------------------------------------------------------------------


def _make_cv(cv, random_state):
    from sklearn.model_selection import StratifiedKFold

    if isinstance(cv, numbers.Integral) and not isinstance(cv, (bool, np.bool_)):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}.")
        return StratifiedKFold(n_splits=int(cv), shuffle=True, random_state=random_state), int(cv)
    if hasattr(cv, "split"):
        n_splits = cv.get_n_splits() if hasattr(cv, "get_n_splits") else None
        return cv, n_splits
    raise TypeError(f"cv must be an int >= 2 or a cross-validation splitter, got {cv!r}.")


def _classifier(classifier, builtin, method):
    """A fresh classifier: a named built-in, or a clone of an estimator with ``method``.

    ``builtin`` maps names to zero-argument factories.
    """
    from sklearn.base import clone

    names = " or ".join(repr(name) for name in builtin)
    if isinstance(classifier, str):
        if classifier not in builtin:
            raise ValueError(
                f"classifier must be {names} or a classifier instance, got {classifier!r}."
            )
        return builtin[classifier]()
    if hasattr(classifier, "fit") and hasattr(classifier, method):
        return clone(classifier)
    raise TypeError(
        f"classifier must be {names} or an estimator with fit and {method}, "
        f"got {type(classifier).__name__}."
    )


def group_separability(
    X, sensitive_features, projection, *, classifier="logistic", cv=5, random_state=None
):
    r"""Estimate of Olfat & Aswani's linear adversarial unfairness Δ_A(F_lin).

    [Olfat2019]_ (restated in appendix B of [Lee2022]_) call a projection
    ``Delta_A(F_lin)``-fair if no linear classifier ``h(z) = 1(w^T z <= t)``
    predicting the group from the representation ``z`` separates the groups
    by more than ``Delta``:

    .. math:: \Delta_A(\mathcal F_{lin}) = \sup_w \sup_t
              | P(w^T z \le t \mid a) - P(w^T z \le t \mid b) |,

    i.e. the largest Kolmogorov(-Smirnov) distance between the groups'
    distributions of a linear score. This function picks ``w`` by fitting a
    linear classifier of group membership on the representation, computes
    **out-of-fold** decision scores with ``cross_val_predict`` (stratified,
    shuffled, seeded folds) and returns the two-sample KS distance between
    the groups' scores (sup over all thresholds ``t``). Because ``w`` is
    fitted rather than maximised over and scores are out of sample, it is an
    honest estimate from below of the supremum. With ``k > 2`` groups a
    classifier is fitted for every pair of groups (on their rows only) and
    the maximum over pairs is returned. 0 means no linear direction
    separates the groups; 1 means perfectly separable.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.
    classifier : {"logistic", "linear_svm"} or estimator, default="logistic"
        ``"logistic"``: :class:`~sklearn.linear_model.LogisticRegression`;
        ``"linear_svm"``: :class:`~sklearn.svm.LinearSVC`; or any classifier
        with ``decision_function`` (cloned).
    cv : int or cross-validation splitter, default=5
        Folds; an int means ``StratifiedKFold(cv, shuffle=True)``.
    random_state : int, RandomState instance or None, default=None
        Seed of the folds (and of ``LinearSVC``).

    Returns
    -------
    separability : float
        In ``[0, 1]``.
    """
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.svm import LinearSVC

    model = _classifier(
        classifier,
        {
            "logistic": lambda: LogisticRegression(max_iter=1000),
            "linear_svm": lambda: LinearSVC(random_state=random_state),
        },
        "decision_function",
    )
    X = check_data(X, "X")
    splitter, n_splits = _make_cv(cv, random_state)
    groups, codes = check_sensitive_features(
        sensitive_features, X.shape[0], min_groups=2, min_group_size=n_splits or 1
    )
    components, scales, mean, _ = _resolve_projection(projection, X)
    Z = _project(X, components, scales, mean)
    best = 0.0
    for a, b in combinations(range(len(groups)), 2):
        mask = (codes == a) | (codes == b)
        target = (codes[mask] == b).astype(int)
        scores = cross_val_predict(
            clone(model), Z[mask], target, cv=splitter, method="decision_function"
        )
        gap = ks_2samp(scores[target == 0], scores[target == 1], method="asymp").statistic
        best = max(best, gap)
    return float(best)


def _check_binary_y(y, n_samples, pos_label):
    if y is None:
        raise ValueError("y is required: pass one binary label per row of X.")
    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    if y.shape[0] != n_samples:
        raise ValueError(
            f"y has {y.shape[0]} labels but X has {n_samples} rows; they must have the same length."
        )
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values.")
    if y.dtype.kind == "O" and any(v is None for v in y):
        raise ValueError("y contains missing values (None).")
    try:
        classes = np.unique(y)
    except TypeError as exc:
        raise TypeError(f"y mixes label types: {exc}") from exc
    if classes.size != 2:
        raise ValueError(
            f"y must be binary (exactly two classes), found {classes.size} class(es): "
            f"{classes[:10].tolist()}."
        )
    if pos_label is None:
        pos_label = classes[1]
    elif pos_label not in classes.tolist():
        raise ValueError(f"pos_label={pos_label!r} is not one of the classes of y {classes}.")
    return (y == pos_label).astype(int)


def downstream_fairness(
    X,
    y,
    sensitive_features,
    projection,
    *,
    classifier="rbf_svm",
    cv=5,
    random_state=None,
    pos_label=None,
):
    """Accuracy and group-fairness gaps of a classifier trained on the representation.

    The protocol of [Lee2022]_ (RBF SVM; ``Delta_DP``) and [Kamani]_ (linear
    SVM; ``DEO = |TPR_0 - TPR_1|``), with one correction: predictions are
    **out of fold** (``cross_val_predict`` with stratified, shuffled, seeded
    folds), so every row is scored by a classifier that did not see it.
    Gaps use fairlearn's metric functions with ``method="between_groups"``
    (largest minus smallest over groups):

    * ``demographic_parity_difference``: gap in ``P(yhat = 1 | group)``;
    * ``equal_opportunity_difference``: gap in ``P(yhat = 1 | y = 1, group)``;
    * ``equalized_odds_difference``: the larger of the true- and
      false-positive-rate gaps.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    y : array-like of shape (n_samples,)
        Binary target (exactly two classes).
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row; every group needs both classes of ``y``.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`.
    classifier : {"rbf_svm", "linear_svm"} or estimator, default="rbf_svm"
        ``"rbf_svm"``: ``sklearn.svm.SVC(kernel="rbf")``; ``"linear_svm"``:
        ``sklearn.svm.LinearSVC``; or any scikit-learn classifier (cloned).
    cv : int or cross-validation splitter, default=5
        Folds; an int means ``StratifiedKFold(cv, shuffle=True)`` on ``y``.
    random_state : int, RandomState instance or None, default=None
        Seed of the folds (and of ``LinearSVC``).
    pos_label : scalar, default=None
        The positive class; by default the larger of the two sorted labels.

    Returns
    -------
    result : dict
        Keys ``"accuracy"``, ``"demographic_parity_difference"``,
        ``"equal_opportunity_difference"``, ``"equalized_odds_difference"``.
    """
    from sklearn.model_selection import cross_val_predict
    from sklearn.svm import SVC, LinearSVC

    model = _classifier(
        classifier,
        {
            "rbf_svm": lambda: SVC(kernel="rbf"),
            "linear_svm": lambda: LinearSVC(random_state=random_state),
        },
        "predict",
    )
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    y01 = _check_binary_y(y, X.shape[0], pos_label)
    components, scales, mean, _ = _resolve_projection(projection, X)
    splitter, n_splits = _make_cv(cv, random_state)
    if n_splits is not None:
        class_counts = np.bincount(y01, minlength=2)
        if np.any(class_counts < n_splits):
            raise ValueError(
                f"y: each class needs at least cv={n_splits} rows, got {class_counts.tolist()} "
                "(negative, positive)."
            )
    for a, label in enumerate(_labels(groups)):
        present = np.unique(y01[codes == a])
        if present.size < 2:
            raise ValueError(
                f"sensitive_features: group {label!r} contains only one class of y; "
                "equal opportunity and equalised odds need both classes in every group."
            )
    flm = _import_fairlearn_metrics()
    Z = _project(X, components, scales, mean)
    pred = cross_val_predict(model, Z, y01, cv=splitter)
    return {
        "accuracy": float(np.mean(pred == y01)),
        "demographic_parity_difference": float(
            flm.demographic_parity_difference(y01, pred, sensitive_features=codes)
        ),
        "equal_opportunity_difference": float(
            flm.equal_opportunity_difference(y01, pred, sensitive_features=codes)
        ),
        "equalized_odds_difference": float(
            flm.equalized_odds_difference(y01, pred, sensitive_features=codes)
        ),
    }


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def report(
    X,
    sensitive_features,
    projections,
    y=None,
    *,
    bandwidth=None,
    random_state=None,
    classifier="rbf_svm",
    cv=5,
):
    """All metrics for several projections in one table.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data (typically a held-out split).
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projections : dict
        ``{method name: projection}``; each projection as in
        :func:`group_reconstruction_error`.
    y : array-like of shape (n_samples,), default=None
        Binary target; when given, the :func:`downstream_fairness` columns are
        added (needs fairlearn).
    bandwidth : float, default=None
        RBF bandwidth shared by every row so that MMD² values are comparable;
        by default computed once with :func:`mmd_bandwidth` on ``X`` at the
        first projection's target dimension.
    random_state : int or None, default=None
        Seed of the bandwidth subsample, the cross-validation folds and
        ``LinearSVC``.
    classifier : str or estimator, default="rbf_svm"
        Downstream classifier, see :func:`downstream_fairness`.
    cv : int or splitter, default=5
        Folds for :func:`downstream_fairness` and :func:`group_separability`.

    Returns
    -------
    table : pandas.DataFrame
        One row per method (index = name). Columns: ``n_components``,
        ``explained_variance_ratio``, ``reconstruction_error`` (ARE),
        ``reconstruction_error_gap`` (ABDiff), ``max_marginal_loss``,
        ``max_disparity_error``, ``mean_disparity_error``,
        ``max_abs_pairwise_disparity_error``, ``mmd2``, ``group_separability``,
        per-group ``reconstruction_error[g]``, ``marginal_loss[g]`` and
        ``disparity_error[g]``, and with ``y`` ``accuracy``,
        ``demographic_parity_difference``, ``equal_opportunity_difference``,
        ``equalized_odds_difference``.
    """
    pd = _import_pandas()
    if not isinstance(projections, dict) or not projections:
        raise TypeError(
            "projections must be a non-empty dict {method name: projection}, got "
            f"{type(projections).__name__}."
        )
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    labels = _labels(groups)
    resolved = {}
    for name, proj in projections.items():
        resolved[name] = _resolve_projection(proj, X, name=f"projections[{name!r}]")
    if y is not None:
        _check_binary_y(y, X.shape[0], None)
    if bandwidth is None:
        first_d = next(iter(resolved.values()))[3]
        bandwidth = mmd_bandwidth(X, first_d, random_state=random_state)
    bandwidth = _check_bandwidth(bandwidth)

    # The groups' own optimal errors depend only on the centre and d, which
    # projections fitted on the same data share: compute each once.
    optimal = {}
    rows = {}
    for name, proj in projections.items():
        components, scales, mean, d = resolved[name]
        row_err = _row_errors(X, components, scales, mean)
        group_err, counts = _group_means(row_err, codes, len(groups))
        key = (d, mean.tobytes())
        if key not in optimal:
            optimal[key] = _optimal_group_errors(X, codes, len(groups), mean, d)
        loss_values = group_err - optimal[key]
        group_err = dict(zip(labels, group_err.tolist(), strict=True))
        losses = dict(zip(labels, loss_values.tolist(), strict=True))
        disp = dict(zip(labels, (loss_values * counts).tolist(), strict=True))
        pairs = [disp[a] - disp[b] for a, b in combinations(labels, 2)]
        row = {
            "n_components": d,
            "explained_variance_ratio": explained_variance_ratio(X, proj),
            "reconstruction_error": float(row_err.mean()),
            "reconstruction_error_gap": max(group_err.values()) - min(group_err.values()),
            "max_marginal_loss": max(losses.values()),
            "max_disparity_error": max(disp.values()),
            "mean_disparity_error": float(np.mean(list(disp.values()))),
            "max_abs_pairwise_disparity_error": max(abs(v) for v in pairs),
            "mmd2": mmd2(X, sensitive_features, proj, bandwidth=bandwidth),
            "group_separability": group_separability(
                X, sensitive_features, proj, cv=cv, random_state=random_state
            ),
        }
        for g, v in group_err.items():
            row[f"reconstruction_error[{g}]"] = v
        for g, v in losses.items():
            row[f"marginal_loss[{g}]"] = v
        for g, v in disp.items():
            row[f"disparity_error[{g}]"] = v
        if y is not None:
            row.update(
                downstream_fairness(
                    X,
                    y,
                    sensitive_features,
                    proj,
                    classifier=classifier,
                    cv=cv,
                    random_state=random_state,
                )
            )
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "method"
    return table
