"""Resolving the ``projection`` argument of every metric, and shared helpers.

A projection is a fitted fair-PCA estimator, a fitted sklearn PCA or a
components array with orthonormal rows (see :mod:`fairpca.metrics`);
:func:`_resolve_projection` turns any of them into plain arrays, and the
helpers compute representations, residuals and per-group means from those.
Metrics of the representation alone (MMD², group separability, downstream
fairness) also accept any other fitted transformer, such as
:class:`~fairpca.FairKernelPCA` or :class:`~fairpca.LinearErasure`, through
:func:`_representation`.
"""

import numbers

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from fairpca._validation import check_n_components

#: Largest deviation of ``U @ U.T`` from the identity accepted for component arrays.
_ORTHONORMAL_TOL = 1e-6


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


def is_linear_projection(projection):
    """Whether ``projection`` is a linear projection the reconstruction metrics can read.

    True for component arrays and for estimators with ``components_`` and
    ``mean_`` (fair-PCA estimators, sklearn PCA, fitted or not); False for a
    fitted transformer without them (e.g. FairKernelPCA, whose components live
    in a feature space, or LinearErasure, which keeps every feature), whose
    representation is whatever ``transform`` returns.
    """
    if not (hasattr(projection, "fit") and hasattr(projection, "transform")):
        return True
    if hasattr(projection, "components_") and hasattr(projection, "mean_"):
        return True
    try:
        check_is_fitted(projection)
    except NotFittedError:
        return True  # _resolve_projection reports it
    return False


def _representation(projection, X, name="projection"):
    """The representation of ``X`` and its dimension: ``(Z, d)``.

    A linear projection gives ``((X - mean) @ U.T) * sqrt(scales)`` and its
    target dimension; any other fitted transformer gives ``transform(X)`` and
    its number of columns.
    """
    if is_linear_projection(projection):
        components, scales, mean, d = _resolve_projection(projection, X, name=name)
        return _project(X, components, scales, mean), d
    Z = np.asarray(projection.transform(X), dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] != X.shape[0] or not np.all(np.isfinite(Z)):
        raise ValueError(
            f"{name} ({type(projection).__name__}).transform must return a finite 2-D array "
            f"with one row per row of X; got shape {Z.shape}."
        )
    return Z, Z.shape[1]


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
