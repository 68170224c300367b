"""Base class shared by every fair-PCA estimator.

It owns what all methods have in common: input validation, centring on the
pooled training mean, the per-group moments, ordering and sign of the
components, and the scikit-learn transformer plumbing (``transform``,
``inverse_transform``, feature names, ``set_output``, metadata routing of
``sensitive_features``). A method only implements :meth:`FairPCABase._fit_components`.
"""

import inspect
import warnings
from abc import ABCMeta, abstractmethod

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted, validate_data

from fairpca._validation import (
    _reraise_conversion_error,
    check_n_components,
    check_sensitive_features,
    raise_if_non_numeric,
)
from fairpca.moments import GroupMoments

__all__ = ["FairPCABase", "public_estimators"]


def _top_eigenvectors(matrix, n_components):
    """Top ``n_components`` eigenvectors of a symmetric matrix as rows, shape (d, p)."""
    p = matrix.shape[0]
    _, vectors = np.linalg.eigh(matrix)
    return vectors[:, p - n_components :][:, ::-1].T


class FairPCABase(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator, metaclass=ABCMeta
):
    """Common machinery of the fair-PCA estimators.

    Subclasses store their hyper-parameters in ``__init__`` (``n_components``
    among them) and implement ``_fit_components``; this class does the rest.

    The fitted map is ``transform(X) = ((X - mean_) @ components_.T) * sqrt(component_scales_)``
    and ``inverse_transform(Z) = (Z * sqrt(component_scales_)) @ components_ + mean_``,
    so that reconstruction equals ``(X - mean_) P + mean_`` with
    ``P = components_.T @ diag(component_scales_) @ components_``. Every method
    except MinMaxLossFairPCA's exact rounding has all scales equal to 1.

    Fitting without ``sensitive_features`` issues a ``UserWarning`` and fits
    group-blind PCA (the top eigenvectors of the training covariance): there is
    nothing to be fair about without groups, and this keeps the estimator
    usable by generic scikit-learn tooling.

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        Orthonormal rows, sorted by the variance they explain on the training data.
    component_scales_ : ndarray of shape (n_components_,)
        Weights in (0, 1] of the components in the projection.
    n_components_ : int
        Number of rows of ``components_``.
    mean_ : ndarray of shape (n_features,)
        Pooled training mean.
    explained_variance_ : ndarray of shape (n_components_,)
        Training variance along each output coordinate (divisor n - 1, as
        :class:`sklearn.decomposition.PCA`).
    explained_variance_ratio_ : ndarray of shape (n_components_,)
        ``explained_variance_`` over the total training variance.
    groups_ : ndarray of shape (n_groups,) or None
        Sorted group labels seen in ``fit`` (``None`` when fitted without groups).
    group_counts_ : ndarray of shape (n_groups,) or None
        Training rows per group.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of ``X`` when it was a DataFrame with string column names.
    """

    #: Fewest rows a group may have; methods needing more override it.
    _min_group_size = 2

    @abstractmethod
    def _fit_components(self, X, codes, moments, y):
        """Solve the method's problem.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Training data centred on the pooled mean.
        codes : ndarray of shape (n_samples,)
            Integer group code of each row, in ``range(moments.n_groups)``.
        moments : GroupMoments
            Group moments of the uncentred data.
        y : ndarray of shape (n_samples,) or None
            Target, for methods whose fairness notion conditions on it.

        Returns
        -------
        components : ndarray of shape (r, n_features)
            Orthonormal rows (any order and sign).
        scales : ndarray of shape (r,) or None
            Component weights in (0, 1]; ``None`` means all ones.
        """

    # ------------------------------------------------------------ validation
    def _validate_X(self, X, *, reset):
        raise_if_non_numeric(X, "X")
        try:
            return validate_data(
                self,
                X,
                reset=reset,
                dtype=np.float64,
                ensure_all_finite=True,
                ensure_min_samples=2 if reset else 1,
            )
        except (ValueError, TypeError) as exc:
            _reraise_conversion_error(exc, "X")

    # ------------------------------------------------------------------- fit
    def fit(self, X, y=None, *, sensitive_features=None):
        """Fit the fair projection.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN, infinities and non-numeric columns are rejected.
        y : array-like of shape (n_samples,), default=None
            Target. Used only by methods whose fairness notion depends on it;
            ignored otherwise.
        sensitive_features : array-like of shape (n_samples,)
            Protected group of each row: numbers, strings or booleans, at least
            two distinct values. If omitted, a ``UserWarning`` is issued and
            group-blind PCA is fitted.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X = self._validate_X(X, reset=True)
        n_samples, n_features = X.shape
        d = check_n_components(self.n_components, n_features)
        if sensitive_features is None:
            warnings.warn(
                f"{type(self).__name__}.fit was called without sensitive_features; "
                "fitting group-blind PCA. Pass sensitive_features=... to fit a fair projection.",
                UserWarning,
                stacklevel=2,
            )
            self.mean_ = X.mean(axis=0)
            Xc = X - self.mean_
            components, scales = _top_eigenvectors(Xc.T @ Xc, d), None
            self.groups_ = self.group_counts_ = None
        else:
            groups, codes = check_sensitive_features(
                sensitive_features, n_samples, min_groups=2, min_group_size=self._min_group_size
            )
            counts = np.bincount(codes)
            if y is not None:
                y = check_array(y, ensure_2d=False, dtype=None, input_name="y")
                if y.ndim != 1 or y.shape[0] != n_samples:
                    raise ValueError(
                        f"y must be 1-D with one entry per row of X ({n_samples}), "
                        f"got shape {y.shape}."
                    )
            moments = GroupMoments._from_codes(X, codes, groups)
            self.mean_ = moments.pooled_mean
            self.groups_, self.group_counts_ = groups, counts
            Xc = X - self.mean_
            components, scales = self._fit_components(Xc, codes, moments, y)
        self._set_components(components, scales, Xc)
        return self

    def _set_components(self, components, scales, Xc):
        """Store components sorted by explained variance with a deterministic sign."""
        components = np.atleast_2d(np.asarray(components, dtype=np.float64))
        r = components.shape[0]
        scales = np.ones(r) if scales is None else np.asarray(scales, dtype=np.float64)
        scores = (Xc @ components.T) * np.sqrt(scales)
        n = max(Xc.shape[0] - 1, 1)
        variance = (scores**2).sum(axis=0) / n
        order = np.argsort(-variance, kind="stable")
        components, scales, variance = components[order], scales[order], variance[order]
        # Same convention as sklearn's svd_flip: largest |loading| positive.
        pivot = np.abs(components).argmax(axis=1)
        signs = np.sign(components[np.arange(r), pivot])
        signs[signs == 0] = 1.0
        self.components_ = components * signs[:, None]
        self.component_scales_ = scales
        self.n_components_ = r
        self.explained_variance_ = variance
        total = (Xc**2).sum() / n
        self.explained_variance_ratio_ = variance / total if total > 0 else np.zeros(r)

    # ------------------------------------------------------------- transform
    def transform(self, X):
        """Project ``X`` onto the fitted components.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data with the features seen in ``fit``.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components_)
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        return ((X - self.mean_) @ self.components_.T) * np.sqrt(self.component_scales_)

    def inverse_transform(self, X):
        """Map projected data back to the original space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components_)
            Projected data, e.g. the output of :meth:`transform`.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            ``(X - mean_) P + mean_`` for data that went through :meth:`transform`.
        """
        check_is_fitted(self)
        raise_if_non_numeric(X, "X")
        try:
            Z = check_array(X, dtype=np.float64, input_name="X")
        except (ValueError, TypeError) as exc:
            _reraise_conversion_error(exc, "X")
        if Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {Z.shape[1]} columns but inverse_transform expects "
                f"n_components_={self.n_components_}."
            )
        return (Z * np.sqrt(self.component_scales_)) @ self.components_ + self.mean_

    @property
    def _n_features_out(self):
        """Number of output features, used by ``get_feature_names_out``."""
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


def public_estimators():
    """The concrete fair-PCA estimator classes exported by :mod:`fairpca`.

    Returns
    -------
    classes : list of type
        In the order of ``fairpca.__all__``.
    """
    import fairpca

    return [
        obj
        for name in fairpca.__all__
        if inspect.isclass(obj := getattr(fairpca, name))
        and issubclass(obj, FairPCABase)
        and not inspect.isabstract(obj)
    ]
