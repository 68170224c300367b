r"""Fair partial least squares: components that predict a target and carry no group means.

Partial least squares (PLS) reduces ``X`` to directions chosen for predicting
a target ``Y`` rather than for variance. De-Diego, Perez-Suay, Gordaliza and
Loubes [DeDiego2025]_ add a group-fairness requirement to the construction of
the PLS components. This module states the problem as follows (our notation,
implemented from the mathematics below).

With ``Sigma = Cov(X)`` (p x p), ``C = Cov(X, Y)`` (p x q, ``q`` outputs) and
the constraint columns ``B`` of :func:`fairpca.mean_matching.constraint_columns`
(``B B^T = sum_a w_a (mu_a - mu)(mu_a - mu)^T``, the between-group covariance),
component ``j`` is the unit direction

.. math::

    w_j = \arg\max_{\|w\| = 1} \|C_j^T w\|^2 - \lambda \|B_j^T w\|^2,

where ``C_j = Cov(X_j, Y)`` and ``B_j`` are those of the deflated data
``X_j``: ``X_1 = X`` and ``X_{j+1} = X_j (I - w_j p_j^T)`` with the loading
``p_j = Sigma_j w_j / (w_j^T Sigma_j w_j)``, so that the next score
``X_{j+1} w`` is uncorrelated with the score ``t_j = X_j w_j`` (the PLS1 / PLS2
deflation of ``X``; deflating ``Y`` too would not change ``C_j``). The first
term is the PLS criterion ``sum_k Cov(X_j w, y_k)^2``; the second is the
fairness regulariser the paper subtracts from it, taken here as the
between-group variance of the score (for two groups, the squared covariance of
the score with the group indicator divided by ``pi_0 pi_1``, the group
proportions; the paper's kernel (HSIC) regularisers are not implemented). As ``lambda -> inf`` the
solution tends to the constrained problem

.. math::

    \max_{\|w\| = 1} \|C_j^T w\|^2 \quad \text{s.t.} \quad
    w^T (\mu_a - \mu) = 0 \text{ for every group } a,

which is PLS of ``X`` projected off the span of the mean differences (the
:class:`~fairpca.MeanMatchingFairPCA` constraint): every later ``B_j^T w``
equals ``B^T w`` on that null space, and both routes deflate alike there.
``lambda = 0`` is plain PLS. Each step is one small eigenproblem:
``C_j C_j^T - lambda B_j B_j^T`` has rank at most ``q + k``, so its top
eigenvector is found in the span of ``[C_j, B_j]``, and deflation is a rank-one
update of ``Sigma_j``, ``C_j`` and ``B_j``: after the moments, a fit costs
``O(p^2 d)`` (plus ``O(p^2 k)`` for the constraint basis), no ``p x p``
eigen-decomposition.

Every quantity is a moment: group counts and means, ``X^T X`` and ``X^T Y``.
The target rides in :class:`~fairpca.GroupMoments` as its covariates, so the
estimator fits on Dask collections and streams chunks with ``partial_fit``.

References
----------
.. [DeDiego2025] E. M. De-Diego, A. Perez-Suay, P. Gordaliza and J.-M. Loubes.
   "PLS-based approach for fair representation learning." arXiv:2502.16263, 2025.
"""

from __future__ import annotations

from typing import Literal, Self

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from fairpca._base import FairPCABase
from fairpca._config import document_require_groups
from fairpca._dask import _dask_labels
from fairpca._front_door import _has_partial_fit, moments_problem
from fairpca._linalg import row_space, top_eigh
from fairpca._validation import (
    check_n_components,
    check_number,
    check_sensitive_features,
    check_width,
    raise_if_non_numeric,
)
from fairpca._warnings import warn
from fairpca.mean_matching import (
    attribute_mean_shifts,
    check_mean_penalty,
    constraint_columns,
    constraint_gaps,
    moments_constraint_bases,
)
from fairpca.moments import GroupMoments

__all__ = ["FairPLS", "fair_pls_components", "pls_coefficients", "pls_weights", "split_target"]

#: A step's criterion at or below this fraction of ``trace Sigma trace Cov(Y)`` (a
#: bound on its largest value) is rounding: the target has nothing left to say there.
_FLAT_RTOL = 1e-16

#: Unit roundoffs of the target's mean below which its spread is rounding.
_TARGET_ROUNDING_ULPS = 8.0


def split_target(moments):
    """The moments of ``X`` alone and ``(Cov(X, Y), Cov(Y, Y))`` from joint moments.

    Parameters
    ----------
    moments : GroupMoments
        Group moments of ``X`` with the target ``Y`` as covariates.

    Returns
    -------
    features : GroupMoments
        The same groups, counts, means and scatters of ``X``, without ``Y``.
    cov_xy : ndarray of shape (p, q)
    cov_yy : ndarray of shape (q, q)
    """
    features = GroupMoments(moments.groups, moments.counts, moments.means, moments.scatters)
    cov_xy, cov_yy = moments.cross_covariance()
    return features, cov_xy, cov_yy


def _top_direction(blocks, signs, tol):
    """Top eigenvector of ``G diag(signs) G^T`` (``G = blocks``, p x s), found in its range.

    Returns ``(vector, basis)``: ``vector`` is None when the top eigenvalue is
    at most ``tol`` (every unit vector outside the range of ``G`` then does
    at least as well: the criterion is flat); ``basis`` spans the range of
    ``G`` (singular values above ``sqrt(tol)`` and the rounding of ``G``).
    """
    U, singular, Vt = np.linalg.svd(blocks, full_matrices=False)
    largest = singular.max(initial=0.0)
    floor = max(np.sqrt(max(tol, 0.0)), np.finfo(float).eps * max(blocks.shape) * largest)
    keep = singular > floor
    if not keep.any():
        return None, U[:, keep]
    half = singular[keep, None] * Vt[keep]
    small = (half * signs) @ half.T
    value, vector = top_eigh((small + small.T) / 2, 1)
    if value[0] <= tol:
        return None, U[:, keep]
    return U[:, keep] @ vector[:, 0], U[:, keep]


def _residual_direction(covariance, avoid, taken):
    """Direction of largest residual variance orthogonal to ``avoid`` and ``taken``.

    Where the criterion is flat it does not choose; this picks the direction
    the deflated data vary most along, and when they no longer vary (``d``
    above their rank) a unit vector orthogonal to ``taken``.
    """
    complement = row_space(np.concatenate((avoid, taken), axis=1).T)[1]
    if complement.shape[1] == 0:
        complement = row_space(taken.T)[1]
    reduced = complement.T @ covariance @ complement
    return complement @ top_eigh((reduced + reduced.T) / 2, 1)[1][:, 0]


def pls_weights(covariance, cross, d, *, target_variance, constraints=None, penalty=0.0, span=None):
    """Orthonormal PLS weights under the fairness penalty or constraint, with deflation.

    Parameters
    ----------
    covariance : ndarray of shape (p, p)
        ``Sigma = Cov(X)``.
    cross : ndarray of shape (p, q)
        ``C = Cov(X, Y)``.
    d : int
        Number of components.
    target_variance : float
        ``trace Cov(Y)``: with ``trace Sigma``, the scale of the criterion
        (``||C^T w||^2 <= trace Sigma trace Cov(Y)``); a step whose criterion
        is below ``1e-16`` of it is flat (rounding).
    constraints : ndarray of shape (p, m) or None
        Columns ``B`` whose projected norm ``||B_j^T w||^2`` is penalised.
    penalty : float, default=0.0
        ``lambda`` of the module docstring (finite).
    span : ndarray of shape (p, r) or None
        Orthonormal basis of the forbidden directions: ``X`` is projected off
        it first (the constrained problem; then leave ``constraints`` None).

    Returns
    -------
    weights : ndarray of shape (p, d)
        Orthonormal columns ``w_j`` in the order of the deflation.
    criteria : ndarray of shape (d,)
        ``||C_j^T w_j||^2`` of each component (0 where the criterion was flat
        and the component is the direction of largest residual variance).
    """
    p = covariance.shape[0]
    sigma, cross = covariance.copy(), cross.copy()
    span = np.zeros((p, 0)) if span is None else span
    if span.shape[1]:
        # P Sigma P and P C with P = I - S S^T, without forming P.
        sigma_s = sigma @ span
        sigma = sigma - span @ sigma_s.T - sigma_s @ span.T + span @ (span.T @ sigma_s) @ span.T
        cross = cross - span @ (span.T @ cross)
    bound = np.zeros((p, 0)) if constraints is None or penalty == 0 else constraints.copy()
    signs = np.concatenate((np.ones(cross.shape[1]), np.full(bound.shape[1], -penalty)))
    tol = _FLAT_RTOL * float(np.trace(covariance)) * target_variance
    weights, criteria = np.zeros((p, d)), np.zeros(d)
    for j in range(d):
        w, basis = _top_direction(np.concatenate((cross, bound), axis=1), signs, tol)
        taken = np.concatenate((weights[:, :j], span), axis=1)
        if w is None:
            w = _residual_direction(sigma, basis, taken)
        # Exact in theory (earlier weights are null vectors of the deflated
        # problem); one projection keeps rounding from accumulating.
        w = w - taken @ (taken.T @ w)
        w /= np.linalg.norm(w)
        weights[:, j] = w
        criteria[j] = float(np.sum((cross.T @ w) ** 2))
        image = sigma @ w
        variance = float(w @ image)
        if variance > 0:
            loading = image / variance
            sigma = sigma - variance * np.outer(loading, loading)
            cross = cross - np.outer(loading, w @ cross)
            bound = bound - np.outer(loading, w @ bound)
    return weights, criteria


def pls_coefficients(covariance, cross, weights):
    """Least-squares coefficients of ``Y`` on the scores ``X W``, in the units of ``X``.

    ``beta = W (W^T Sigma W)^+ W^T C``: the PLS regression (the scores
    ``X_j w_j`` span the same columns as ``X W``).

    Returns
    -------
    coef : ndarray of shape (p, q)
    """
    gram = weights.T @ covariance @ weights
    return weights @ np.linalg.pinv(gram, hermitian=True) @ (weights.T @ cross)


def fair_pls_components(moments, d, *, mean_penalty=np.inf, attributes="intersectional"):
    """Solve :class:`FairPLS`'s problem from the joint moments of ``X`` and ``Y``.

    Parameters
    ----------
    moments : GroupMoments
        Group moments of ``X`` with the target as covariates (:func:`split_target`).
    d : int
        Number of components.
    mean_penalty : float, default=inf
        ``lambda`` of the module docstring; ``inf`` imposes the constraint.
    attributes : {"intersectional", "separate"}, default="intersectional"
        Which group means are equalised (see :class:`~fairpca.MeanMatchingFairPCA`).

    Returns
    -------
    result : dict
        ``weights`` (p, d), ``criteria`` (d,), ``coef`` (p, q), ``n_constraints``,
        ``mean_gap``.
    """
    features, cov_xy, cov_yy = split_target(moments)
    covariance = features.covariance()
    target_variance = float(np.trace(cov_yy))
    y_mean = moments.proportions @ moments.covariate_means
    rounding = _TARGET_ROUNDING_ULPS * np.finfo(float).eps * float(np.max(np.abs(y_mean)))
    if target_variance <= cov_yy.shape[0] * rounding**2:
        # A constant target: its covariances with X are rounding of its mean.
        cov_xy = np.zeros_like(cov_xy)
    constraints = constraint_columns(features, attributes)
    span = None
    if np.isinf(mean_penalty):
        span = moments_constraint_bases(features, attributes, constraints)[0]
        free = features.n_features - span.shape[1]
        if d > free:
            raise ValueError(
                f"n_components={d} is larger than the {free} dimensions left once the "
                f"{span.shape[1]} independent directions of the group-mean differences are "
                f"removed from the {features.n_features} features; use n_components <= {free}."
            )
        constraints = None
    weights, criteria = pls_weights(
        covariance,
        cov_xy,
        d,
        target_variance=target_variance,
        constraints=constraints,
        penalty=0.0 if span is not None else float(mean_penalty),
        span=span,
    )
    shifts = attribute_mean_shifts(features, attributes)[0]
    return {
        "weights": weights,
        "criteria": criteria,
        "coef": pls_coefficients(covariance, cov_xy, weights),
        "n_constraints": 0 if span is None else span.shape[1],
        "mean_gap": constraint_gaps(features, shifts, weights.T)["mean_gap"],
    }


def _check_target(y, n_samples):
    """``y`` as a float matrix (n, q), its class labels (None if numeric) and whether it is 1-D.

    Numeric ``y`` (1-D or one column per output) is used as it is; labels of
    another kind (strings, objects) are one-hot encoded, one column per class
    (PLS discriminant analysis).
    """
    if y is None:
        raise ValueError(
            "FairPLS requires y to be passed, but the target y is None: it is supervised "
            "(one target value per row of X, or one column per output)."
        )
    values = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    if values.ndim == 0 or values.ndim > 2 or values.shape[0] != n_samples:
        raise ValueError(
            f"y must have one entry (or one row of outputs) per row of X ({n_samples}), "
            f"got shape {values.shape}."
        )
    if values.dtype.kind in "biuf":
        Y = np.asarray(values, dtype=np.float64)
        if not np.isfinite(Y).all():
            raise ValueError("y contains NaN or infinite values; impute or drop those rows first.")
        return (Y[:, None] if Y.ndim == 1 else Y), None, Y.ndim == 1
    if values.ndim != 1:
        raise_if_non_numeric(values, "y")
    classes, codes = check_sensitive_features(values, n_samples, "y", min_groups=2)
    return np.eye(len(classes))[codes], classes, True


def _check_dask_target(y, X, da):
    """A numeric Dask target lined up with ``X``'s row blocks, as a float array."""
    if y is None:
        _check_target(None, 0)
    Y = _dask_labels(y, X, da)
    if Y.dtype.kind not in "biuf":
        raise TypeError(
            f"FairPLS on Dask input needs a numeric y, got dtype {Y.dtype}; encode the "
            "classes first (e.g. one column of 0/1 per class)."
        )
    return Y.astype(np.float64)


@document_require_groups
class FairPLS(FairPCABase):
    r"""Partial least squares components with equal group means (fair PLS).

    Supervised fair components [DeDiego2025]_: each component maximises the
    squared covariance of its score with the target, ``sum_k Cov(X_j w, y_k)^2``
    on the deflated data ``X_j`` (PLS1 for one output, the PLS2 criterion for
    several), subject to the mean-matching constraint

    .. math::

        w^T (\mu_a - \mu) = 0 \quad \text{for every group } a,

    or, with a finite ``mean_penalty`` ``lambda``, minus ``lambda`` times the
    between-group variance of the score (see :mod:`fairpca.fair_pls`). With the
    constraint, every linear function of the representation has the same mean
    in every group (demographic parity of linear predictors), as for
    :class:`~fairpca.MeanMatchingFairPCA`, while the directions are chosen to
    predict ``y`` rather than to keep variance.

    ``components_`` holds the orthonormal PLS weights ``w_j`` in the order of
    the deflation. They span the same subspace as the rotations of
    :class:`sklearn.cross_decomposition.PLSRegression` (``scale=False``);
    ``transform`` projects on this orthonormal basis (scikit-learn's
    ``x_scores_`` are an invertible triangular recombination of these
    coordinates). :meth:`predict` is the PLS regression: least squares of
    ``y`` on the components.

    Parameters
    ----------
    n_components : int, default=2
        Number of components ``d``; at most ``p - r`` under the constraint
        (``r`` independent mean differences), at most ``p`` otherwise.
    mean_penalty : float, default=inf
        ``lambda``: 0 is plain PLS, larger values trade covariance with the
        target against the between-group variance of each score, ``inf``
        imposes equal group means exactly (the projection route).
    attributes : {"intersectional", "separate"}, default="intersectional"
        With several categorical sensitive attributes: equalise the mean of
        every intersection, or only each attribute's groups (as
        :class:`~fairpca.MeanMatchingFairPCA`).
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal PLS weights, in the order of the deflation (not sorted by
        variance).
    target_covariance_ : ndarray of shape (n_components,)
        ``||Cov(X_j w_j, Y)||^2`` of each component on the training data
        (non-increasing in ``j`` without a penalty). A component whose
        criterion was flat (the target explained by the earlier ones, or a
        constant target) is the direction of largest residual variance and
        has 0 here.
    coef_ : ndarray of shape (n_features, n_targets)
        Coefficients of the PLS regression on the centred features.
    intercept_ : ndarray of shape (n_targets,)
        ``y_mean - mean_ @ coef_``.
    classes_ : ndarray of shape (n_classes,) or None
        The classes of a non-numeric ``y`` (one-hot encoded for the fit; then
        :meth:`predict` returns the class of the largest fitted indicator).
    n_constraints_ : int
        Independent mean differences removed (0 with a finite ``mean_penalty``).
    mean_gap_ : float
        Largest norm of a projected group-mean difference on the training
        data (0 up to rounding under the constraint).
    n_iter_, converged_ : int, bool
        ``n_components`` deflation steps, and True: each step is closed form.
    mean_, groups_, group_counts_, moments_, explained_variance_,
    explained_variance_ratio_, component_scales_, n_components_, n_features_in_
        As in :class:`~fairpca.FairPCABase`; ``moments_`` carries the target
        as its covariates.

    See Also
    --------
    MeanMatchingFairPCA : The same constraint on unsupervised (variance) components.

    References
    ----------
    .. [DeDiego2025] E. M. De-Diego, A. Perez-Suay, P. Gordaliza and J.-M. Loubes.
       "PLS-based approach for fair representation learning." arXiv:2502.16263, 2025.

    Examples
    --------
    >>> import numpy as np
    >>> from fairpca import FairPLS
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s, y = make_gaussian_groups(n_samples=500, n_features=6, random_state=0,
    ...                                return_target=True)
    >>> est = FairPLS(n_components=2).fit(X, y, sensitive_features=s)
    >>> Z = est.transform(X)
    >>> bool(np.allclose(Z[s == 0].mean(axis=0), Z[s == 1].mean(axis=0)))
    True
    """

    _moments_only = True
    _supervised = True

    def __init__(
        self,
        n_components: int = 2,
        *,
        mean_penalty: float = np.inf,
        attributes: Literal["intersectional", "separate"] = "intersectional",
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.mean_penalty = mean_penalty
        self.attributes = attributes
        self.require_groups = require_groups

    def _check_params(self):
        check_number(self.n_components, "n_components", minimum=1)
        return check_mean_penalty(self.mean_penalty, self.attributes)

    def _ordered_components(self):
        return True

    # ------------------------------------------------------------------- fit
    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> Self:
        """Fit the fair PLS components.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or DataFrame of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Target: numbers (one column per output), or class labels, which
            are one-hot encoded. Required. On Dask input, numeric and lined
            up with ``X``'s row blocks.
        sensitive_features : array-like, (n_samples,) or (n_samples, n_attr), default=None
            Protected group of each row. If omitted, plain PLS is fitted with a
            :class:`~fairpca.GroupBlindFitWarning` (or a ``ValueError`` when
            groups are required).
        sample_weight : array-like of shape (n_samples,), default=None
            Frequency weights of the rows' moments (not on Dask input).

        Returns
        -------
        self : object
            The fitted estimator. A failed fit leaves it as it was.
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
        """Merge one more chunk of rows (and their targets) and solve again.

        After the last chunk the estimator equals :meth:`fit` on all rows up
        to rounding (the joint moments of ``X`` and ``y`` are merged exactly).
        A numeric ``y`` is required (class labels are not known in advance:
        one-hot encode them first).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_chunk, n_features)
        y : array-like of shape (n_chunk,) or (n_chunk, n_targets)
        sensitive_features : array-like of shape (n_chunk,), default=None
        sample_weight : array-like of shape (n_chunk,), default=None

        Returns
        -------
        self : object
        """
        self._enter_partial_fit(X, y, sensitive_features, sample_weight)
        return self

    def _joint_moments(self, X, y, sensitive_features, weights, *, min_groups, groups_held=0):
        """Group moments of ``X`` with the target as covariates; sets ``classes_``."""
        n_samples = X.shape[0]
        Y, classes, self._predict_1d = _check_target(y, n_samples)
        self.classes_ = classes
        if sensitive_features is None:
            groups, codes = np.array([0]), np.zeros(n_samples, dtype=np.intp)
        else:
            size = self._min_group_size if min_groups > 1 else 1
            groups, codes = check_sensitive_features(
                sensitive_features, n_samples, min_groups=min_groups, min_group_size=size
            )
        check_width(X.shape[1] + Y.shape[1], type(self).__name__, len(groups) + groups_held)
        return GroupMoments._from_codes(X, codes, groups, Y, weights)

    def _fit_in_memory(self, X, y, sensitive_features, weights):
        moments = self._joint_moments(X, y, sensitive_features, weights, min_groups=2)
        grouped = sensitive_features is not None
        if grouped:
            problem = moments_problem(split_target(moments)[0], None, self._min_group_size)
            if problem:
                raise ValueError(problem)
        self._fit_from_moments(moments, grouped=grouped, fair=grouped)

    def _fit_dask(self, X, y, sensitive_features, da):
        X = self._dask_features(X, da)
        labels = None if sensitive_features is None else _dask_labels(sensitive_features, X, da)
        Y = _check_dask_target(y, X, da)
        moments = GroupMoments.from_dask(X, labels, Y)
        self.classes_, self._predict_1d = None, Y.ndim == 1
        grouped = sensitive_features is not None
        problem = moments_problem(split_target(moments)[0], None, self._min_group_size)
        if problem and grouped:
            raise ValueError(problem)
        self._fit_from_moments(moments, grouped=grouped, fair=grouped)

    def _partial_fit_chunk(self, X, y, sensitive_features, weights):
        held = getattr(self, "moments_", None)
        grouped = sensitive_features is not None
        part = self._joint_moments(
            X,
            y,
            sensitive_features,
            weights,
            min_groups=1,
            groups_held=0 if held is None else held.n_groups,
        )
        if self.classes_ is not None:
            raise TypeError(
                "FairPLS.partial_fit needs a numeric y: one-hot encode class labels first "
                "(the classes of later chunks are not known yet)."
            )
        if held is not None:
            if held.n_covariates != part.n_covariates:
                raise ValueError(
                    f"y of this chunk has {part.n_covariates} output(s), earlier chunks had "
                    f"{held.n_covariates}."
                )
            part = held.merge(part)
        problem = None
        if grouped:
            problem = moments_problem(split_target(part)[0], None, self._min_group_size)
        if problem:
            warn(
                f"FairPLS.partial_fit cannot fit fair components from the rows so far: "
                f"{problem} Fitting plain PLS of the rows so far until more chunks arrive.",
                UserWarning,
            )
        self._fit_from_moments(part, grouped=grouped, fair=grouped and problem is None)

    def _fit_components(self, X, codes, moments, y, d):
        """Fair PLS from the joint moments (the base's hook; ``X``, ``codes``, ``y`` unused)."""
        return self._solve(moments, d, self._check_params()), None

    def _solve(self, moments, d, penalty):
        """Components of :func:`fair_pls_components`; sets the PLS attributes."""
        result = fair_pls_components(moments, d, mean_penalty=penalty, attributes=self.attributes)
        if not result["criteria"][0] > 0:
            warn(
                "y has no covariance with X in the directions FairPLS may use (a constant "
                "target, or one explained by the group means alone): the components are "
                "the directions of largest variance instead.",
                UserWarning,
            )
        self.target_covariance_ = result["criteria"]
        self.coef_ = result["coef"]
        y_mean = moments.proportions @ moments.covariate_means
        self.intercept_ = y_mean - moments.pooled_mean @ self.coef_
        self.n_constraints_, self.mean_gap_ = result["n_constraints"], result["mean_gap"]
        self.n_iter_, self.converged_ = d, True
        return result["weights"].T

    def _fit_from_moments(self, moments, *, grouped, fair):
        """Fair PLS when ``fair``, plain PLS otherwise; sets every fitted attribute."""
        d = check_n_components(self.n_components, moments.n_features)
        if fair:
            components, _ = self._fit_components(None, None, moments, None, d)
        else:
            components = self._solve(moments, d, 0.0)
        features = split_target(moments)[0]
        self.mean_ = features.pooled_mean
        if grouped:
            self.groups_, self.group_counts_ = features.groups, features.counts
        else:
            self.groups_ = self.group_counts_ = None
        scatter = features.covariance() * features.n_samples
        # Rows keep the deflation's order (_ordered_components); their signs are fixed.
        self._set_components(components, None, scatter=scatter, n_samples=features.n_samples)
        self.moments_ = moments

    # --------------------------------------------------------------- predict
    def predict(self, X: ArrayLike) -> np.ndarray:
        """The PLS regression's prediction of ``y`` from ``X``.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_targets)
            1-D for a 1-D numeric target; for class labels, the class whose
            fitted indicator is largest.
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        fitted = np.asarray(X @ self.coef_) + self.intercept_
        if self.classes_ is not None:
            return self.classes_[np.argmax(fitted, axis=1)]
        return fitted[:, 0] if self._predict_1d else fitted

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        return tags
