r"""Least-change linear erasure of a group attribute (LEACE, Belrose et al., 2023).

For data ``X`` and a categorical attribute with one-hot encoding ``Z``, the
following are equivalent [Belrose2023]_: every group has the same mean; the
cross-covariance ``Sigma_XZ`` is zero; no linear classifier does better than
a constant at predicting ``Z`` from ``X`` (linear guardedness). LEACE is the
affine edit that achieves this while moving the data least:

.. math::

    r(x) = x - W^{+} P\, W (x - \mu),

with ``W = Sigma_XX^{-1/2}`` the whitening (a pseudo-inverse square root when
``Sigma_XX`` is singular), ``W^+`` its pseudo-inverse and ``P`` the orthogonal
projection onto the column space of ``W Sigma_XZ``. Among affine edits whose
output has zero cross-covariance with ``Z`` it minimises the expected squared
change ``E ||r(X) - X||^2_M`` (Belrose et al., Theorem 4.3).

Mean matching (:class:`~fairpca.MeanMatchingFairPCA`) instead drops dimensions:
use it for a low-dimensional representation; use :class:`LinearErasure` to keep
all ``p`` features (e.g. before a downstream model that needs them) while
removing what a linear model could learn about the groups.

For a categorical attribute with proportions ``w_a`` and group means ``mu_a``,
``Sigma_XZ`` has columns ``w_a (mu_a - mu)``, so the eraser needs only the
per-group moments (:class:`~fairpca.GroupMoments`): it fits on Dask collections
in one pass and streams chunks through ``partial_fit``. A continuous attribute
enters ``Z`` as its own values; its ``Sigma_XZ`` column is accumulated with
the moments in the same pass.

References
----------
.. [Belrose2023] N. Belrose, D. Schneider-Joseph, S. Ravfogel, R. Cotterell,
   E. Raff and S. Biderman. "LEACE: Perfect linear concept erasure in closed
   form." NeurIPS 2023.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Self

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from fairpca._config import document_require_groups
from fairpca._dask import _is_dask_collection, lazy_rows
from fairpca._mixins import FairpcaMixin
from fairpca._sparse import SPARSE_FORMATS, add_sparse, centred_product, issparse
from fairpca._validation import check_estimator_data
from fairpca.mean_matching import (
    _ATTRIBUTE_MODES,
    check_continuous_attributes,
    constraint_bases,
    constraint_columns,
    moments_constraint_bases,
)
from fairpca.moments import _MAX_CANCELLATION

__all__ = ["LinearErasure", "leace_map"]

#: Eigenvalues of the covariance below this fraction of the largest are treated
#: as zero (directions without variance are left unchanged).
_RANK_RTOL = 1e-12


def leace_map(moments, attributes="intersectional"):
    """The linear part ``A = W^+ P W`` of the LEACE eraser ``x - A (x - mu)``.

    The rank of ``P`` (how many directions are erased) is decided in the
    units of the data, by the rule of
    :func:`~fairpca.mean_matching.moments_constraint_bases`: singular values
    of ``Sigma_XZ``'s columns above ``1e-10 sqrt(trace Sigma)`` and above the
    rounding of the stored group means (which grows with the data's offset),
    at most ``k - 1`` (plus one per continuous attribute). ``P`` projects on
    the top ``r`` left singular vectors of ``W Sigma_XZ`` (fewer if some
    whitened singular values are below ``1e-10``: the whitened columns have
    norm at most one). A common offset of the rows thus leaves the map
    unchanged up to the rounding of the offset data.

    Parameters
    ----------
    moments : GroupMoments
        Per-group counts, means and scatter matrices.
    attributes : {"intersectional", "separate"}, default="intersectional"
        With several attributes, erase the intersections or each attribute on
        its own (see :func:`fairpca.mean_matching.attribute_mean_shifts`).

    Returns
    -------
    A : ndarray of shape (p, p)
        The oblique projection removed from the centred data.
    rank : int
        Rank of ``A``: the number of independent group-mean differences.
    """
    covariance = moments.covariance()
    values, vectors = np.linalg.eigh(covariance)
    keep = values > _RANK_RTOL * max(values[-1], 0.0)
    V, root = vectors[:, keep], np.sqrt(values[keep])
    whiten = (V / root) @ V.T
    unwhiten = (V * root) @ V.T
    # Columns spanning Sigma_XZ (scaled per column, which leaves the span unchanged).
    cross = constraint_columns(moments, attributes)
    rank = moments_constraint_bases(moments, attributes, cross)[0].shape[1]
    # In whitened coordinates the data have unit variance: scale 1 sets the rank tolerance.
    Q, _ = constraint_bases(whiten @ cross, scale=1.0, max_rank=rank)
    return unwhiten @ Q @ (Q.T @ whiten), Q.shape[1]


@document_require_groups
class LinearErasure(FairpcaMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Remove every linear trace of a group attribute with the smallest edit (LEACE).

    ``transform(X) = X - (X - mean_) @ erasure_.T`` where ``erasure_`` is the
    LEACE map of the training moments (see the module docstring). After the
    edit every group has the same mean on the training data, so the cross-
    covariance with the one-hot groups is zero and no linear classifier can
    predict the group better than a constant; the output keeps the input's
    shape.

    Without ``sensitive_features`` there is nothing to erase: by default
    ``fit`` then fits the identity edit (``erasure_`` zero, ``rank_ == 0``,
    ``groups_ is None``) with a :class:`~fairpca.GroupBlindFitWarning`, as
    every estimator of the package falls back to its group-blind answer; with
    ``require_groups=True`` it raises ``ValueError`` instead.

    Parameters
    ----------
    attributes : {"intersectional", "separate"}, default="intersectional"
        With several sensitive attributes (``sensitive_features`` of shape
        ``(n_samples, n_attributes)``): erase every intersection's mean
        difference, or only each attribute's (fewer directions). Ignored with
        one attribute.
    continuous_attributes : None, bool or list of str or int, default=None
        Which sensitive attributes are continuous: ``True`` for all, or column
        names (DataFrame) or positions (array) of ``sensitive_features``. Their
        values enter ``Z`` as they are (instead of one-hot), so the output has
        zero covariance with them; the other columns give the groups, or all
        rows form one group (``groups_ == [0]``) when there are none.
    %(require_groups)s

    Attributes
    ----------
    erasure_ : ndarray of shape (n_features, n_features)
        The map ``W^+ P W`` subtracted from the centred data.
    rank_ : int
        Its rank: the number of independent directions of ``Sigma_XZ`` removed
        (group-mean differences and continuous attributes).
    mean_ : ndarray of shape (n_features,)
        Pooled training mean.
    groups_ : ndarray of shape (n_groups,) or None
        Sorted group labels (None when fitted without groups).
    moments_ : GroupMoments
        Training moments; ``partial_fit`` merges into them.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    MeanMatchingFairPCA : Fair PCA with the same guarantee in ``d`` dimensions.

    References
    ----------
    .. [Belrose2023] N. Belrose et al. "LEACE: Perfect linear concept erasure
       in closed form." NeurIPS 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from fairpca import LinearErasure
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(n_samples=500, n_features=5, random_state=0)
    >>> X_erased = LinearErasure().fit_transform(X, sensitive_features=s)
    >>> bool(np.allclose(X_erased[s == 0].mean(0), X_erased[s == 1].mean(0)))
    True
    """

    def __init__(
        self,
        *,
        attributes: Literal["intersectional", "separate"] = "intersectional",
        continuous_attributes: bool | Sequence[str | int] | None = None,
        require_groups: bool = False,
    ) -> None:
        self.attributes = attributes
        self.continuous_attributes = continuous_attributes
        self.require_groups = require_groups

    # What the front door (fairpca._front_door) reads: the eraser needs only the
    # group moments; a group of one row is a group.
    _supports_dask = True
    _supports_sparse = True
    _supports_sample_weight = True
    _supports_partial_fit = True
    _supports_array_api = True
    _fit_min_samples = 1
    _min_group_size = 1
    _group_blind_fit = "the identity edit (nothing to erase)"
    _partial_fit_waits = (
        "{name}.partial_fit cannot erase from the rows so far: {problem} "
        "The eraser is the identity until more chunks arrive."
    )

    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> Self:
        """Fit the eraser from the group moments of ``X``.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or DataFrame of shape (n_samples, n_features)
            Training data (numeric, finite). Sparse ``X`` (CSR, CSC) is never
            densified: its moments come from sparse products.
        y : ignored
        sensitive_features : array-like or Dask collection, (n_samples,) or (n_samples, n_attr)
            Group label of each row (at least two groups), or one column per
            attribute (categorical ones give intersectional groups; see
            ``continuous_attributes``). If omitted, the identity edit is
            fitted with a :class:`~fairpca.GroupBlindFitWarning`, or a
            ``ValueError`` is raised when groups are required (see
            ``require_groups``).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights of the rows (weighted moments; not on
            Dask input).

        Returns
        -------
        self : LinearErasure
        """
        self._enter_fit(X, y, sensitive_features, sample_weight)
        return self

    def partial_fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> Self:
        """Merge one more chunk of rows into the moments and refit the eraser.

        After the last chunk the eraser equals :meth:`fit` on all rows up to
        rounding. ``sensitive_features`` is given in every call or in none
        (the identity edit, with the rule of :meth:`fit`).
        """
        self._enter_partial_fit(X, y, sensitive_features, sample_weight)
        return self

    def _check_params(self):
        """Validate the parameters before any data is read."""
        if self.attributes not in _ATTRIBUTE_MODES:
            raise ValueError(
                f"attributes must be one of {_ATTRIBUTE_MODES}, got {self.attributes!r}."
            )
        check_continuous_attributes(self.continuous_attributes)

    def _continuous_columns(self):
        return check_continuous_attributes(self.continuous_attributes)

    def _fit_from_moments(self, moments, *, grouped, fair):
        self._fit_moments(moments, identity=not fair, grouped=grouped)

    def _fit_moments(self, moments, identity=False, grouped=True):
        if identity:
            erasure, rank = np.zeros((moments.n_features,) * 2), 0
        else:
            erasure, rank = leace_map(moments, self.attributes)
        self.erasure_, self.rank_ = erasure, rank
        self.mean_ = moments.pooled_mean
        self.groups_ = moments.groups if grouped else None
        self.moments_ = moments

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Erase the attribute from ``X``.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or DataFrame of shape (n_samples, n_features)
            Dask input gives a lazy result of the same kind (Dask array: ``X``'s
            row chunks; Dask DataFrame: its index, divisions and columns).

        Returns
        -------
        X_erased : ndarray of shape (n_samples, n_features)
            Dense also for sparse ``X`` (the edit moves every row along the
            erased directions); ``X`` itself is not densified: the edit
            ``(X - mean_) A^T`` is ``X A^T - mean_ A^T`` and X's non-zeros are
            added to it.
        """
        check_is_fitted(self, "erasure_")
        if _is_dask_collection(X):
            names = self.get_feature_names_out()
            return lazy_rows(self, "transform", X, self.n_features_in_, names)
        rows = self._device_rows(X, "transform")
        if rows is not None:  # fitted on array-API input: X's namespace and device
            return rows - (rows - self.mean_) @ self.erasure_.mT
        X = check_estimator_data(self, X, reset=False, accept_sparse=SPARSE_FORMATS)
        removed = centred_product(X, self.mean_, self.erasure_.T, self._spread(), _MAX_CANCELLATION)
        if issparse(X):
            return add_sparse(-removed, X)
        return X - removed
