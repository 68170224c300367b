r"""Quadratic erasure: equal group means *and* covariances by optimal transport.

:class:`~fairpca.LinearErasure` removes what a linear model can learn about the
groups (their means differ no more). A quadratic model can still read the
groups from their covariances. Following the quadratic variant of LEACE
[Belrose2023]_, :class:`QuadraticErasure` moves each group's Gaussian
approximation ``N(mu_a, Sigma_a)`` onto one common Gaussian ``N(mu*, Sigma*)``
with the optimal-transport (Monge) map between Gaussians:

.. math::

    x \mapsto \mu^* + A_a (x - \mu_a), \qquad
    A_a = \Sigma_a^{-1/2} \left(\Sigma_a^{1/2} \Sigma^* \Sigma_a^{1/2}\right)^{1/2}
          \Sigma_a^{-1/2},

the symmetric positive semidefinite map with ``A_a Sigma_a A_a = Sigma*`` that
moves the rows least in expected squared distance (the 2-Wasserstein map).
The target is the Wasserstein barycenter of the groups' Gaussians with weights
``w_a`` (their proportions): ``mu* = sum_a w_a mu_a`` (the pooled mean) and
``Sigma*`` the fixed point of

.. math::

    \Sigma^* = \sum_a w_a \left(\Sigma^{*1/2} \Sigma_a \Sigma^{*1/2}\right)^{1/2},

found by the iteration of Álvarez-Esteban et al. (2016),
``S <- S^{-1/2} (sum_a w_a (S^{1/2} Sigma_a S^{1/2})^{1/2})^2 S^{-1/2}`` from
``S = sum_a w_a Sigma_a``; at the fixed point the maps from the barycenter
to the groups, ``A_a^{-1}``, average to the identity: ``sum_a w_a A_a^{-1} = I``. The
barycenter is the common target that moves the data least in total.

After the edit every group has mean ``mu*`` and covariance ``Sigma*`` on the
training rows (``Sigma_a`` of full rank): no quadratic function of ``x`` has
a group-dependent mean. The map depends on the row's group, so
:meth:`QuadraticErasure.transform` needs ``sensitive_features`` (the oracle
setting): it is for data whose groups are known, e.g. to build training sets.
The fit needs only the group moments (:class:`~fairpca.GroupMoments`).

References
----------
.. [Belrose2023] N. Belrose, D. Schneider-Joseph, S. Ravfogel, R. Cotterell,
   E. Raff and S. Biderman. "LEACE: Perfect linear concept erasure in closed
   form." NeurIPS 2023.
.. [AlvarezEsteban2016] P. C. Álvarez-Esteban, E. del Barrio, J. A.
   Cuesta-Albertos and C. Matrán. "A fixed-point approach to barycenters in
   Wasserstein space." J. Math. Anal. Appl. 441 (2016).
"""

from __future__ import annotations

import numbers
from typing import Self

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.metadata_routing import UNUSED
from sklearn.utils.validation import check_is_fitted

from fairpca._config import document_require_groups
from fairpca._dask import _is_dask_collection
from fairpca._mixins import FairpcaMixin
from fairpca._validation import check_estimator_data
from fairpca._warnings import warn
from fairpca.erasure import LinearErasure, training_group_codes

__all__ = ["QuadraticErasure", "gaussian_transport_map", "wasserstein_barycenter"]

#: Eigenvalues below this fraction of the largest count as zero in the square roots.
_RANK_RTOL = 1e-12


def _sqrt_psd(S, inverse=False):
    """Symmetric square root (or pseudo-inverse square root) of a PSD matrix."""
    values, vectors = np.linalg.eigh((S + S.T) / 2)
    keep = values > _RANK_RTOL * max(values[-1], 0.0)
    root = np.zeros_like(values)
    root[keep] = values[keep] ** (-0.5 if inverse else 0.5)
    return (vectors * root) @ vectors.T


def gaussian_transport_map(source, target):
    r"""The optimal-transport map ``A`` from ``N(0, source)`` to ``N(0, target)``.

    ``A = S^{-1/2} (S^{1/2} T S^{1/2})^{1/2} S^{-1/2}`` (pseudo-inverse roots
    when ``S`` is singular): symmetric positive semidefinite, and
    ``A S A = T`` when ``S`` has full rank.
    """
    root, inv_root = _sqrt_psd(source), _sqrt_psd(source, inverse=True)
    A = inv_root @ _sqrt_psd(root @ target @ root) @ inv_root
    return (A + A.T) / 2


def wasserstein_barycenter(covariances, weights, *, max_iter=100, tol=1e-10):
    r"""Covariance of the 2-Wasserstein barycenter of centred Gaussians, by fixed point.

    Iterates ``S <- S^{-1/2} (sum_a w_a (S^{1/2} C_a S^{1/2})^{1/2})^2 S^{-1/2}``
    from ``S = sum_a w_a C_a`` until ``||S_new - S||_F <= tol ||S||_F``.

    Returns
    -------
    S : ndarray of shape (p, p)
    n_iter : int
    converged : bool
    """
    S = np.einsum("a,aij->ij", weights, covariances)
    for iteration in range(1, max_iter + 1):
        root, inv_root = _sqrt_psd(S), _sqrt_psd(S, inverse=True)
        mean_root = sum(
            w * _sqrt_psd(root @ C @ root) for w, C in zip(weights, covariances, strict=True)
        )
        new = inv_root @ mean_root @ mean_root @ inv_root
        new = (new + new.T) / 2
        step = np.linalg.norm(new - S)
        S = new
        if step <= tol * np.linalg.norm(S):
            return S, iteration, True
    return S, max_iter, False


@document_require_groups
class QuadraticErasure(FairpcaMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Equalise the groups' means and covariances with the least-moving transport map.

    Each row of group ``a`` becomes ``mean_ + transport_[a] (x - group_means_[a])``
    (see the module docstring for the maps and the barycenter). After the
    edit on the training rows every group has mean ``mean_`` and covariance
    ``covariance_`` (divisor ``n_a``; exactly when the group's covariance has
    full rank, else only on its span), so neither a linear nor a quadratic
    model can tell the groups apart by their first two moments.

    :meth:`transform` needs the group of each row (``sensitive_features``):
    the map is per group. Without ``sensitive_features`` ``fit`` fits the
    identity edit with a :class:`~fairpca.GroupBlindFitWarning` (or raises
    with ``require_groups=True``), whose :meth:`transform` takes ``X`` alone.

    Parameters
    ----------
    max_iter : int, default=100
        Most iterations of the barycenter's fixed point.
    tol : float, default=1e-10
        Stop when the relative change of the barycenter covariance in the
        Frobenius norm is at most ``tol`` (a :class:`~sklearn.exceptions.ConvergenceWarning`
        when ``max_iter`` is reached first).
    %(require_groups)s

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The common target mean ``mu*``: the pooled training mean.
    covariance_ : ndarray of shape (n_features, n_features)
        The common target covariance ``Sigma*``: the barycenter of the group
        covariances (the pooled covariance when fitted without groups).
    transport_ : ndarray of shape (n_groups, n_features, n_features)
        The symmetric positive semidefinite maps ``A_a`` (the identity once
        when fitted without groups).
    group_means_ : ndarray of shape (n_groups, n_features)
        The group means ``mu_a`` the maps start from.
    groups_ : ndarray of shape (n_groups,) or None
        Sorted group labels (None when fitted without groups).
    n_barycenter_iter_ : int
        Iterations of the barycenter's fixed point (0 without groups).
    moments_ : GroupMoments
        Training moments; ``partial_fit`` merges into them (``compact`` drops
        them; ``transform`` needs the maps, the group means and labels).
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    LinearErasure : Equal group means only, with one map for every row (no groups
        needed at transform).

    References
    ----------
    .. [Belrose2023] N. Belrose et al. "LEACE: Perfect linear concept erasure
       in closed form." NeurIPS 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from fairpca.quadratic_erasure import QuadraticErasure
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(n_samples=500, n_features=3, random_state=0)
    >>> eraser = QuadraticErasure().fit(X, sensitive_features=s)
    >>> Y = eraser.transform(X, sensitive_features=s)
    >>> cov = [np.cov(Y[s == g], rowvar=False, bias=True) for g in (0, 1)]
    >>> bool(np.allclose(cov[0], cov[1]))
    True
    """

    # transform consumes sensitive_features only once asked for (as LinearErasure:
    # fit_transform needs fit and transform requested alike).
    __metadata_request__transform = {"sensitive_features": UNUSED}

    def __init__(
        self, *, max_iter: int = 100, tol: float = 1e-10, require_groups: bool = False
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.require_groups = require_groups

    _supports_dask = False
    _supports_sparse = False
    _supports_sample_weight = True
    _supports_partial_fit = True
    _transform_needs_groups = True
    _fit_min_samples = 2
    _min_group_size = 2
    _group_blind_fit = "the identity edit (nothing to erase)"
    _partial_fit_waits = (
        "{name}.partial_fit cannot erase from the rows so far: {problem} "
        "The eraser is the identity until more chunks arrive."
    )
    #: transform needs the maps, the group means and their labels: compact keeps them.
    _group_attributes = ("moments_",)

    set_transform_request = LinearErasure.set_transform_request

    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> Self:
        """Fit the per-group transport maps from the group moments of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (numeric, finite).
        y : ignored
        sensitive_features : array-like, (n_samples,) or (n_samples, n_attr)
            Group label of each row (at least two groups of two rows), or one
            column per attribute (intersectional groups). If omitted, the
            identity edit is fitted with a :class:`~fairpca.GroupBlindFitWarning`.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights of the rows (weighted moments).

        Returns
        -------
        self : QuadraticErasure
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
        """Merge one more chunk into the moments and refit the maps (equal to :meth:`fit`)."""
        self._enter_partial_fit(X, y, sensitive_features, sample_weight)
        return self

    def _check_params(self):
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral):
            raise TypeError(f"max_iter must be an int >= 1, got {self.max_iter!r}.")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be an int >= 1, got {self.max_iter!r}.")
        if isinstance(self.tol, bool) or not isinstance(self.tol, numbers.Real):
            raise TypeError(f"tol must be a float > 0, got {self.tol!r}.")
        if not (np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be a finite float > 0, got {self.tol!r}.")

    def _fit_from_moments(self, moments, *, grouped, fair):
        p = moments.n_features
        if fair:
            weights = moments.proportions
            counts = np.where(moments.counts > 0, moments.counts, 1)[:, None, None]
            covariances = moments.scatters / counts
            target, n_iter, converged = wasserstein_barycenter(
                covariances, weights, max_iter=self.max_iter, tol=self.tol
            )
            if not converged:
                warn(
                    f"QuadraticErasure: the barycenter's fixed point did not reach tol={self.tol} "
                    f"in max_iter={self.max_iter} iterations; the groups' covariances are "
                    "matched to the last iterate.",
                    ConvergenceWarning,
                )
            transport = np.stack([gaussian_transport_map(C, target) for C in covariances])
            group_means = moments.means
        else:
            target, n_iter = moments.covariance(), 0
            transport, group_means = np.eye(p)[None], moments.pooled_mean[None]
        self.mean_ = moments.pooled_mean
        self.covariance_ = target
        self.transport_ = transport
        self.group_means_ = group_means
        self.groups_ = moments.groups if grouped else None
        self.n_barycenter_iter_ = n_iter
        self.moments_ = moments

    def transform(self, X: ArrayLike, sensitive_features: ArrayLike | None = None) -> np.ndarray:
        """Move each row with its group's map: ``mean_ + A_a (x - mu_a)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attr)
            Group of each row, among the fitted ones; required after a fit
            with groups. In a pipeline with metadata routing, ask for it with
            ``set_transform_request(sensitive_features=True)`` (and
            ``set_fit_request`` alike).

        Returns
        -------
        X_erased : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "transport_")
        name = type(self).__name__
        if _is_dask_collection(X) or _is_dask_collection(sensitive_features):
            raise TypeError(f"{name}.transform takes in-memory X and sensitive_features.")
        X = check_estimator_data(self, X, reset=False)
        if self.groups_ is None:
            if sensitive_features is not None:
                raise ValueError(
                    f"{name} was fitted without sensitive_features: there is nothing to "
                    "erase; call transform(X) without them."
                )
            return X.copy()
        if sensitive_features is None:
            raise ValueError(
                f"{name}.transform needs sensitive_features: each group has its own map "
                "(the oracle setting). Use LinearErasure for one map without the groups."
            )
        codes = training_group_codes(self.groups_, sensitive_features, X.shape[0], name)
        out = np.empty_like(X, dtype=np.float64)
        for a in np.unique(codes):
            rows = codes == a
            out[rows] = self.mean_ + (X[rows] - self.group_means_[a]) @ self.transport_[a]
        return out

    def fit_transform(self, X: ArrayLike, y: ArrayLike | None = None, **fit_params) -> np.ndarray:
        """``fit(X, y, **fit_params)``, then :meth:`transform` with the same groups."""
        self.fit(X, y, **fit_params)
        return self.transform(X, sensitive_features=fit_params.get("sensitive_features"))
