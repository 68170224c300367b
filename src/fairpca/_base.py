"""Base class shared by every fair-PCA estimator.

It owns what all methods have in common: input validation, centring on the
pooled training mean, the per-group moments, ordering and sign of the
components, and the scikit-learn transformer plumbing (``transform``,
``inverse_transform``, feature names, ``set_output``, metadata routing of
``sensitive_features``). A method only implements :meth:`FairPCABase._fit_components`.

``fit`` and ``partial_fit`` go through the package's one front door
(:mod:`fairpca._front_door`): validation, Dask or memory, weights, sparse
input, the rule for a fit without groups and transactional calls. This class
implements its hooks once for every fair projection.

Methods that need only the per-group moments (class attribute
``_moments_only = True``) also fit on Dask collections, with one distributed
pass over the rows, accept sparse ``X`` and ``sample_weight``, and stream
chunks through ``partial_fit`` (the front door's ``_supports_*`` declarations
are set for them). A method that needs a bounded sample of rows besides the
moments declares ``_supports_dask`` and overrides ``_fit_components_dask``;
one that reads sparse rows uncentred declares ``_supports_sparse``. Others
refuse such input with a ``TypeError``. ``transform`` never densifies sparse ``X``.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import Self

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils._array_api import check_same_namespace
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from fairpca._array_api import float_dtypes, held_namespace, like, namespace_of, to_host
from fairpca._dask import _is_dask_collection, lazy_rows
from fairpca._front_door import _has_partial_fit
from fairpca._front_door import package_log_handler as package_log_handler
from fairpca._linalg import flip_signs, top_eigh
from fairpca._mixins import FairpcaMixin
from fairpca._sparse import SPARSE_FORMATS, centred_product, issparse
from fairpca._validation import check_data, check_n_components, components_for_fraction
from fairpca.moments import _MAX_CANCELLATION, weighted_sum
from fairpca.moments import GroupMoments as GroupMoments

__all__ = ["FairPCABase"]


def _resolve_fraction(d, moments):
    """``d``, or for a fraction of variance the number of PCA components that reach it."""
    if not isinstance(d, float):
        return d
    return components_for_fraction(d, np.asarray(to_host(moments.covariance())))


def _pooled_scatter(moments):
    """Scatter of all rows around the pooled mean, ``sum_a n_a M_a``, shape (p, p)."""
    return weighted_sum(moments.counts, moments.second_moment("pooled"))


#: The front door's declarations that reading the moments alone gives a method.
_MOMENT_ROUTE = (
    "_supports_dask",
    "_supports_sparse",
    "_supports_sample_weight",
    "_supports_partial_fit",
)


def _check_target(y, n_samples):
    """``y`` as a 1-D array with one entry per row."""
    y = check_array(y, ensure_2d=False, dtype=None, input_name="y")
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(
            f"y must be 1-D with one entry per row of X ({n_samples}), got shape {y.shape}."
        )
    return y


class FairPCABase(
    FairpcaMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    BaseEstimator,
    metaclass=ABCMeta,
):
    """Common machinery of the fair-PCA estimators.

    Subclasses store their hyper-parameters in ``__init__`` (``n_components``
    among them) and implement ``_fit_components``; this class does the rest.

    ``n_components`` may be an int, or a float in (0, 1) as in scikit-learn's
    PCA: the method then fits the smallest number ``d`` of components whose
    *PCA* components explain more than that share of the pooled training
    variance (:func:`~fairpca._validation.components_for_fraction`); the
    fair components themselves explain at most that much (see
    ``explained_variance_ratio_``), fairness costing variance.

    The fitted map is ``transform(X) = ((X - mean_) @ components_.T) * sqrt(component_scales_)``
    and ``inverse_transform(Z) = (Z * sqrt(component_scales_)) @ components_ + mean_``,
    so that reconstruction equals ``(X - mean_) P + mean_`` with
    ``P = components_.T @ diag(component_scales_) @ components_``. Every method
    has all scales equal to 1 except MinMaxLossFairPCA's rounding with more than
    two groups (or ``rounding="lp"``).

    Fitting without ``sensitive_features`` follows the package's one rule
    (:func:`fairpca._config.missing_groups`): by default it issues a
    :class:`~fairpca.GroupBlindFitWarning` and fits group-blind PCA (the top
    eigenvectors of the training covariance), which keeps the estimator usable
    by generic scikit-learn tooling; with ``require_groups=True`` (the
    estimator's parameter or :func:`fairpca.set_config`), or when metadata
    routing is enabled and ``fit`` requested ``sensitive_features``, it raises
    ``ValueError`` instead and leaves the estimator unchanged.

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        Orthonormal rows, sorted by the variance they explain on the training data
        (unless the method's order means something, e.g. nested components).
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
    moments_ : GroupMoments
        Counts, means and scatter matrices of the training rows per group (a
        single group when fitted without groups); ``partial_fit`` merges into it.
    group_counts_ : ndarray of shape (n_groups,) or None
        Training rows per group.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of ``X`` when it was a DataFrame with string column names.
    """

    #: Fewest rows a group may have; methods needing more override it.
    _min_group_size = 2

    #: True for methods whose ``_fit_components`` reads only ``moments`` (it is
    #: then called with ``X``, ``codes`` and ``y`` set to None on Dask input and
    #: in ``partial_fit``). Such methods fit on Dask collections, take sparse
    #: ``X`` and ``sample_weight``, and stream chunks.
    _moments_only = False
    _linear_projection = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_moments_only"):
            for name in _MOMENT_ROUTE:
                if name not in cls.__dict__:
                    setattr(cls, name, True)

    def _set_group_blind_state(self):
        """Attributes of a group-blind fit: an exact eigen-solve, one step."""
        self.n_iter_, self.converged_ = 1, True

    @abstractmethod
    def _fit_components(self, X, codes, moments, y, d):
        """Solve the method's problem.

        Parameters
        ----------
        X : ndarray or scipy.sparse matrix of shape (n_samples, n_features), or None
            Training data centred on the pooled mean; None for methods with
            ``_moments_only = True`` fitted on Dask input or by ``partial_fit``
            (a method that needs rows on Dask input gets them through
            :meth:`_fit_components_dask` instead). For methods that read rows
            and declare ``_supports_sparse``, sparse input arrives as the
            *uncentred* CSR or CSC matrix: subtract ``moments.pooled_mean`` from
            the rows read.
        codes : ndarray of shape (n_samples,) or None
            Integer group code of each row, in ``range(moments.n_groups)``
            (None when ``X`` is).
        moments : GroupMoments
            Group moments of the uncentred data.
        y : ndarray of shape (n_samples,) or None
            Target, for methods whose fairness notion conditions on it.
        d : int
            Target dimension: ``n_components``, validated once by the base
            against the number of features (methods read this, not
            ``self.n_components``).

        Returns
        -------
        components : ndarray of shape (r, n_features)
            Orthonormal rows (any order and sign).
        scales : ndarray of shape (r,) or None
            Component weights in (0, 1]; ``None`` means all ones.
        """

    def _fit_components_dask(self, X, labels, y, moments, d):
        """Solve a grouped fit on Dask input, after the moment pass over it.

        The default, for ``_moments_only`` methods, reads ``moments`` alone. A
        method that needs some rows too overrides it to gather a bounded number
        of them, and declares ``_supports_dask = True``.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features)
            Training data (not centred), whole rows per block.
        labels : dask.array.Array of shape (n_samples,)
            Group labels, in blocks that line up with those of ``X``.
        y : array-like, Dask collection or None
            The target as passed to ``fit``.
        moments : GroupMoments
            Group moments of ``X``.
        d : int
            Target dimension, as in :meth:`_fit_components`.

        Returns
        -------
        components, scales
            As from :meth:`_fit_components`.
        """
        return self._fit_components(None, None, moments, None, d)

    # ------------------------------------------------------------------- fit
    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> Self:
        """Fit the fair projection.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or DataFrame of shape (n_samples, n_features)
            Training data; NaN, infinities and non-numeric columns are rejected.
            Dask collections are accepted by the covariance-based methods and
            by MMDFairPCA: their group moments are computed in one pass on the
            current Dask scheduler, and only the small p x p problem (with
            MMDFairPCA, and a bounded subsample of rows) is solved locally.
            Sparse matrices (CSR, CSC; other formats are converted to CSR) are
            accepted by the same methods and never densified: the moments come
            from sparse products, and MMDFairPCA densifies only the rows it
            samples.
        y : array-like of shape (n_samples,), default=None
            Target. Used only by methods whose fairness notion depends on it;
            ignored otherwise.
        sensitive_features : array-like or Dask collection, (n_samples,) or (n_samples, n_attr)
            Protected group of each row: numbers, strings or booleans, at least
            two distinct values; or one column per attribute, the groups being
            their intersections (methods with ``continuous_attributes`` may
            declare some columns continuous). If omitted, group-blind PCA is
            fitted with a :class:`~fairpca.GroupBlindFitWarning`, or a
            ``ValueError`` is raised when groups are required (see
            ``require_groups``). With a Dask DataFrame ``X``,
            pass Dask columns partitioned like ``X`` (e.g. of the same DataFrame).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights: every moment is weighted, so integer
            weights give the fit on the rows repeated that many times. Only
            for the methods that read the moments alone (not MMDFairPCA's
            grouped fit), and not on Dask input.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._enter_fit(X, y, sensitive_features, sample_weight)
        return self

    @available_if(_has_partial_fit)
    def partial_fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> Self:
        """Update the fit with one more chunk of rows.

        The chunk's group moments are merged into ``moments_`` (exactly, by the
        pairwise update) and the method's small problem is solved again, so
        after the last chunk the estimator equals ``fit`` on all rows up to
        rounding. Each call costs one pass over the chunk plus one solve:
        prefer few large chunks. Only the covariance-based methods have it.

        A group may first appear in any chunk. While fewer than two groups (or
        a group with too few rows) have been seen, a ``UserWarning`` is issued
        and group-blind PCA of the rows so far is fitted. Calls without
        ``sensitive_features`` follow the rule of :meth:`fit` (a
        :class:`~fairpca.GroupBlindFitWarning`, or ``ValueError`` when groups
        are required).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_chunk, n_features)
            Rows of this chunk, with the columns of the earlier chunks.
        y : None
            Ignored.
        sensitive_features : array-like of shape (n_chunk,)
            Group of each row; give it in every call or in none (group-blind PCA,
            as in :meth:`fit`).
        sample_weight : array-like of shape (n_chunk,), default=None
            Frequency weights of this chunk's rows (as in :meth:`fit`).

        Returns
        -------
        self : object
            The updated estimator.
        """
        self._enter_partial_fit(X, y, sensitive_features, sample_weight)
        return self

    # ------------------------------------------------- the front door's hooks
    def _fit_in_memory(self, X, y, sensitive_features, weights):
        """Centre on the pooled mean, take the group moments, solve."""
        n_samples, n_features = X.shape
        d = check_n_components(self.n_components, n_features, allow_fraction=True)
        grouped = sensitive_features is not None
        if grouped and y is not None:
            y = _check_target(y, n_samples)
        moments, codes, _ = self._memory_moments(X, sensitive_features, weights)
        if not grouped or self._moments_only:
            # Same route as Dask input and partial_fit: no centred copy of X.
            self._fit_moments(moments, d, grouped)
            return
        self.mean_ = moments.pooled_mean
        self.groups_, self.group_counts_ = moments.groups, moments.counts
        d = _resolve_fraction(d, moments)
        if issparse(X):
            # Centring would densify X: the method reads it uncentred (see _supports_sparse).
            components, scales = self._fit_components(X, codes, moments, y, d)
            self.moments_ = moments
            scatter = _pooled_scatter(moments)
            self._set_components(components, scales, scatter=scatter, n_samples=moments.n_samples)
            return
        Xc = X - self.mean_
        components, scales = self._fit_components(Xc, codes, moments, y, d)
        self.moments_ = moments
        self._set_components(components, scales, Xc=Xc)

    def _fit_dask(self, X, y, sensitive_features, da):
        """Fit from the group moments of Dask collections, computed in one pass."""
        X = self._dask_features(X, da)
        d = check_n_components(self.n_components, self.n_features_in_, allow_fraction=True)
        moments, labels, _ = self._dask_moments(X, sensitive_features, da)
        self._fit_moments(moments, d, sensitive_features is not None, dask_input=(X, labels, y))

    def _fit_from_moments(self, moments, *, grouped, fair):
        """``partial_fit``'s solve: the fair problem when ``fair``, else group-blind PCA."""
        d = check_n_components(self.n_components, moments.n_features, allow_fraction=True)
        self._fit_moments(moments, d, fair)

    def _fit_moments(self, moments, d, grouped, dask_input=None):
        """Solve from ``moments`` and set every fitted attribute.

        ``dask_input`` is ``(X, labels, y)`` of a fit on Dask collections, passed
        on to :meth:`_fit_components_dask`; otherwise only ``moments`` is read.
        """
        d = _resolve_fraction(d, moments)
        self.mean_ = moments.pooled_mean
        scatter = _pooled_scatter(moments)
        if grouped:
            self.groups_, self.group_counts_ = moments.groups, moments.counts
            if dask_input is None:
                components, scales = self._fit_components(None, None, moments, None, d)
            else:
                components, scales = self._fit_components_dask(*dask_input, moments, d)
        else:
            self.groups_ = self.group_counts_ = None
            components, scales = top_eigh(scatter, d)[1].T, None
            self._set_group_blind_state()
        self._set_components(components, scales, scatter=scatter, n_samples=moments.n_samples)
        # Last, so that a failed solve leaves partial_fit's accumulated moments as they were.
        self.moments_ = moments

    def _ordered_components(self):
        """Whether the rows from ``_fit_components`` come in a meaningful order (kept)."""
        return False

    def _set_components(self, components, scales, *, Xc=None, scatter=None, n_samples=None):
        """Store components sorted by explained variance with a deterministic sign.

        Components whose order means something (:meth:`_ordered_components`)
        keep it.

        The variances come from the centred rows ``Xc`` or, equivalently, from
        their scatter matrix ``scatter = Xc.T @ Xc`` over ``n_samples`` rows.
        """
        xp, device = namespace_of(components)
        if xp is np:
            components = np.atleast_2d(np.asarray(components, dtype=np.float64))
        r = components.shape[0]
        if scales is None:
            scales = xp.ones(r, dtype=components.dtype, device=device)
        else:
            scales = like(np.asarray(to_host(scales), dtype=np.float64), components)
        if Xc is not None:
            scores = (Xc @ components.T) * np.sqrt(scales)
            n = max(Xc.shape[0] - 1, 1)
            variance = (scores**2).sum(axis=0) / n
            total = np.einsum("ij,ij->", Xc, Xc) / n  # without a squared copy of Xc
        else:
            n = max(n_samples - 1, 1)
            variance = scales * xp.sum((components @ scatter) * components, axis=1) / n
            total = float(xp.linalg.trace(scatter)) / n
        if not self._ordered_components():
            order = xp.argsort(-variance, stable=True)
            components, scales, variance = (
                xp.take(a, order, axis=0) for a in (components, scales, variance)
            )
        self.components_ = flip_signs(components)
        self.component_scales_ = scales
        self.n_components_ = r
        self.explained_variance_ = variance
        self.explained_variance_ratio_ = variance / total if total > 0 else np.zeros(r)

    # ------------------------------------------------------------- transform
    def transform(self, X: ArrayLike) -> np.ndarray:
        """Project ``X`` onto the fitted components.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Data with the features seen in ``fit``. Sparse ``X`` (for the
            methods that fit on it) is not densified: ``X V^T - mean_ V^T``
            (:func:`fairpca._sparse.centred_product`).

            A Dask array or DataFrame gives a lazy result (nothing is
            computed until asked; :func:`fairpca._dask.lazy_rows`).

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components_)
            For a Dask array, a Dask array with ``X``'s row chunks and one
            column chunk; for a Dask DataFrame, a Dask DataFrame with ``X``'s
            index and divisions and the columns ``get_feature_names_out()``.
        """
        check_is_fitted(self)
        if _is_dask_collection(X):
            names = self.get_feature_names_out()
            return lazy_rows(self, "transform", X, self.n_components_, names)
        rows = self._device_rows(X, "transform")
        if rows is not None:
            # In X's namespace, on its device (the fit was on array-API input).
            xp = held_namespace(rows)[0]
            centred = (rows - self.mean_) @ xp.permute_dims(self.components_, (1, 0))
            return centred * xp.sqrt(self.component_scales_)
        X = self._validate_X(X, reset=False)
        centred = centred_product(
            X, self.mean_, self.components_.T, self._spread(), _MAX_CANCELLATION
        )
        return centred * np.sqrt(self.component_scales_)

    def inverse_transform(self, X: ArrayLike) -> np.ndarray:
        """Map projected data back to the original space.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_components_)
            Projected data, e.g. the output of :meth:`transform`. A Dask
            array or DataFrame gives a lazy result, as in :meth:`transform`.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            ``(X - mean_) P + mean_`` for data that went through :meth:`transform`
            (dense: the mean makes every entry non-zero). Dask in, Dask out (the
            columns of a Dask DataFrame are ``feature_names_in_`` when fitted
            with names).
        """
        check_is_fitted(self)
        if _is_dask_collection(X):
            names = getattr(self, "feature_names_in_", None)
            return lazy_rows(self, "inverse_transform", X, self.n_features_in_, names)
        check_same_namespace(X, self, attribute="mean_", method="inverse_transform")
        on_device = held_namespace(self.mean_)
        if on_device is not None:
            xp, device = on_device
            Z = check_array(X, dtype=list(float_dtypes(xp, device)), input_name="X")
            Z = xp.astype(Z, self.mean_.dtype, copy=False)
        else:
            Z = check_data(X, "X", accept_sparse=SPARSE_FORMATS)
        if Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {Z.shape[1]} columns but inverse_transform expects "
                f"n_components_={self.n_components_}."
            )
        if on_device is not None:
            return (Z * xp.sqrt(self.component_scales_)) @ self.components_ + self.mean_
        if issparse(Z):
            scaled = np.sqrt(self.component_scales_)[:, None] * self.components_
            return np.asarray(Z @ scaled) + self.mean_
        return (Z * np.sqrt(self.component_scales_)) @ self.components_ + self.mean_

    @property
    def _n_features_out(self):
        """Number of output features, used by ``get_feature_names_out``."""
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
