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
the moments in the same pass. The map is computed in the namespace of the
moments (NumPy, or torch, CuPy, ... on their device: :mod:`fairpca._array_api`),
with the standard's ``eigh``, ``svd`` and ``qr``.

References
----------
.. [Belrose2023] N. Belrose, D. Schneider-Joseph, S. Ravfogel, R. Cotterell,
   E. Raff and S. Biderman. "LEACE: Perfect linear concept erasure in closed
   form." NeurIPS 2023.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Literal, Self

import numpy as np
import sklearn
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.metadata_routing import UNCHANGED, UNUSED
from sklearn.utils.validation import check_is_fitted

from fairpca._array_api import float_dtypes, held_namespace, like, namespace_of, to_host
from fairpca._config import document_require_groups
from fairpca._dask import _is_dask_collection, lazy_rows
from fairpca._mixins import FairpcaMixin
from fairpca._sparse import SPARSE_FORMATS, add_sparse, centred_product, issparse
from fairpca._validation import (
    check_covariates,
    check_estimator_data,
    check_sensitive_features,
    split_sensitive_features,
)
from fairpca.mean_matching import (
    _ATTRIBUTE_MODES,
    attribute_mean_shifts,
    check_continuous_attributes,
    constraint_bases,
    constraint_columns,
    moments_constraint_bases,
)
from fairpca.moments import _MAX_CANCELLATION

__all__ = ["LinearErasure", "leace_map", "oracle_coefficients", "shrinkage_coefficient"]

#: Eigenvalues of the covariance below this fraction of the largest are treated
#: as zero (directions without variance are left unchanged).
_RANK_RTOL = 1e-12
_METHODS = ("leace", "orthogonal")
_SHRINKAGE_NAMES = ("ledoit-wolf", "oas")
#: Rows per block of the fourth-moment pass of the Ledoit-Wolf coefficient.
_BLOCK_ROWS = 8192


# ----------------------------------------------------------------- shrinkage
def oas_coefficient(covariance, n_samples):
    r"""The oracle-approximating shrinkage coefficient of a covariance (Chen et al., 2010).

    With ``S`` the covariance (divisor ``n``) of ``p`` features,
    ``m = tr(S) / p`` and ``a = ||S||_F^2 / p^2``,

    .. math::

        \rho = \min\left(1, \frac{a + m^2}{(n + 1)(a - m^2 / p)}\right),

    (1 when the denominator is zero), the formula of
    :func:`sklearn.covariance.oas`; it needs only ``S`` and ``n``.
    """
    xp, _ = namespace_of(covariance)
    p = covariance.shape[0]
    if p == 1:
        return 0.0
    a = float(xp.mean(covariance**2))
    m = float(xp.linalg.trace(covariance)) / p
    den = (n_samples + 1) * (a - m * m / p)
    return 1.0 if den <= 0 else min((a + m * m) / den, 1.0)


def ledoit_wolf_coefficient(covariance, n_samples, fourth):
    r"""The Ledoit-Wolf (2004) shrinkage coefficient from the moments up to the fourth.

    With ``S`` the covariance (divisor ``n``) of ``p`` features and
    ``q = sum_i ||x_i - mu||^4`` (the one statistic beyond ``S`` it needs),

    .. math::

        \beta = \frac{q / n - ||S||_F^2}{n p}, \qquad
        \delta = \frac{||S||_F^2 - (\mathrm{tr}\, S)^2 / p}{p}, \qquad
        \rho = \min(\beta, \delta) / \delta

    (0 when ``beta`` is 0), as :func:`sklearn.covariance.ledoit_wolf_shrinkage`
    computes it from the rows.
    """
    xp, _ = namespace_of(covariance)
    p = covariance.shape[0]
    if p == 1:
        return 0.0
    frob = float(xp.sum(covariance**2))
    beta = (fourth / n_samples - frob) / (p * n_samples)
    delta = (frob - float(xp.linalg.trace(covariance)) ** 2 / p) / p
    beta = min(beta, delta)
    return 0.0 if beta == 0 or delta <= 0 else max(beta / delta, 0.0)


def shrinkage_coefficient(shrinkage, covariance, n_samples, fourth=None):
    """The coefficient ``rho`` in ``(1 - rho) S + rho tr(S)/p I`` for a ``shrinkage`` parameter."""
    if shrinkage is None:
        return 0.0
    if shrinkage == "oas":
        return oas_coefficient(covariance, n_samples)
    if shrinkage == "ledoit-wolf":
        return ledoit_wolf_coefficient(covariance, n_samples, fourth)
    return float(shrinkage)


def _fourth_moments(X, centre, weights=None):
    """``(q, t)``: ``sum_i w_i ||x_i - c||^4`` and ``sum_i w_i ||x_i - c||^2 (x_i - c)``.

    One pass in blocks of rows (sparse blocks are densified one at a time), in
    the namespace and on the device of ``centre`` (``X``'s); ``weights`` are
    a NumPy array.
    """
    xp, device = namespace_of(centre)
    q, t = 0.0, xp.zeros(X.shape[1], dtype=centre.dtype, device=device)
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, X.shape[0])
        block = X[start:stop].toarray() if issparse(X) else X[start:stop, ...]
        block = block - centre
        squares = xp.sum(block * block, axis=1)
        squares_w = squares if weights is None else squares * like(weights[start:stop], centre)
        q += float(squares_w @ squares)
        t = t + squares_w @ block
    return q, t


def _row_mean(X, weights):
    """Mean of the rows of ``X`` (dense, sparse or on a device), weighted by ``weights``."""
    held = held_namespace(X)
    n = float(X.shape[0] if weights is None else np.sum(weights))
    if held is None:
        if weights is None:
            return np.asarray(X.mean(axis=0)).ravel()
        return np.asarray(weights @ X).ravel() / max(n, np.finfo(float).tiny)
    xp, device = held
    dtype = float_dtypes(xp, device)[0]
    rows = xp.astype(X, dtype, copy=False)
    if weights is None:
        return xp.mean(rows, axis=0)
    return (like(weights, rows) @ rows) / max(n, np.finfo(float).tiny)


def _shift_fourth(q, t, n_samples, scatter, d):
    """Move ``(q, t)`` of rows with mean ``m`` and scatter ``S`` to the centre ``m - d``.

    With ``y_i = x_i - m`` (``sum y_i = 0``) and ``x_i - c = y_i + d``:
    ``q' = q + 4 d^T t + 4 d^T S d + 2 ||d||^2 tr S + n ||d||^4`` and
    ``t' = t + 2 S d + (tr S) d + n ||d||^2 d``.
    """
    xp, _ = namespace_of(scatter)
    Sd, trace, dd = scatter @ d, float(xp.linalg.trace(scatter)), float(d @ d)
    q = q + 4 * float(d @ t) + 4 * float(d @ Sd) + 2 * dd * trace + n_samples * dd * dd
    t = t + 2 * Sd + trace * d + n_samples * dd * d
    return q, t


def _shrunk(covariance, rho):
    """``(1 - rho) S + rho (tr S / p) I``."""
    if rho == 0:
        return covariance
    xp, device = namespace_of(covariance)
    p = covariance.shape[0]
    eye = xp.eye(p, dtype=covariance.dtype, device=device)
    return (1 - rho) * covariance + rho * (float(xp.linalg.trace(covariance)) / p) * eye


# --------------------------------------------------------------- the maps
def _one_hot_cross_covariance(moments, attributes):
    """``Cov(X, Z)`` with ``Z`` the one-hot groups (and the continuous attributes as given)."""
    xp, _ = namespace_of(moments.means)
    shifts, proportions = attribute_mean_shifts(moments, attributes)
    columns = [(shifts * like(proportions, shifts)[:, None]).T]
    if moments.n_covariates:
        columns.append(moments.cross_covariance()[0])
    return xp.concat(columns, axis=1)


def _trace_mix(P, Q, covariance):
    r"""The largest ``alpha`` in [0, 1] with ``tr(M S M^T) <= tr S``, ``M = Q + alpha (P - Q)``.

    ``f(alpha) = c + b alpha + a alpha^2`` with ``D = P - Q``, ``a = tr(D S D^T)``,
    ``b = 2 tr(D S Q^T)``, ``c = tr(Q S Q^T)``: convex, ``f(0) <= tr S`` for an
    orthogonal projector ``Q``; if ``f(1) > tr S`` the answer is the larger root
    of ``f(alpha) = tr S``.
    """
    xp, _ = namespace_of(covariance)
    total = float(xp.linalg.trace(covariance))
    D = P - Q
    a = float(xp.sum((D @ covariance) * D))
    b = 2 * float(xp.sum((D @ covariance) * Q))
    c = float(xp.sum((Q @ covariance) * Q))
    if a + b + c <= total or a <= 0:
        return 1.0
    disc = max(b * b - 4 * a * (c - total), 0.0)
    return float(np.clip((-b + np.sqrt(disc)) / (2 * a), 0.0, 1.0))


def leace_map(
    moments,
    attributes="intersectional",
    *,
    method="leace",
    shrinkage=0.0,
    constrain_cov_trace=False,
    svd_tol=None,
):
    r"""The linear part ``A`` of the eraser ``x - A (x - mu)``, and its rank.

    ``method="leace"``: ``A = W^+ P W`` with ``W = (Sigma_s)^{-1/2}`` (a
    pseudo-inverse square root), ``Sigma_s = (1 - rho) Sigma + rho tr(Sigma)/p I``
    the covariance shrunk by ``rho = shrinkage`` and ``P`` the orthogonal
    projector onto the top ``r`` left singular vectors of ``W Sigma_XZ``.
    ``method="orthogonal"``: ``A = U U^T``, ``U`` the top ``r`` left singular
    vectors of ``Sigma_XZ`` (``W = I``).

    The rank ``r`` (how many directions are erased) is decided in the units
    of the data, by the rule of
    :func:`~fairpca.mean_matching.moments_constraint_bases`: singular values
    of ``Sigma_XZ``'s columns above ``1e-10 sqrt(trace Sigma)`` and above the
    rounding of the stored group means (which grows with the data's offset),
    at most ``k - 1`` (plus one per continuous attribute). ``P`` projects on
    the top ``r`` left singular vectors of ``W Sigma_XZ`` (fewer if some
    whitened singular values are below ``1e-10``: the whitened columns have
    norm at most one). A common offset of the rows thus leaves the map
    unchanged up to the rounding of the offset data. With ``svd_tol`` (the
    rule of concept-erasure), the vectors are those of ``W C`` with ``C`` the
    cross-covariance with the one-hot groups (columns ``w_a (mu_a - mu)``) and
    the continuous attributes, and only singular values above ``svd_tol`` are
    kept (at most ``r``).

    With ``constrain_cov_trace`` and ``method="leace"``, when the edited
    covariance ``(I - A) Sigma (I - A)^T`` has a larger trace than ``Sigma``
    (without shrinkage ``(I - A) Sigma (I - A)^T = Sigma^{1/2} (I - P)
    Sigma^{1/2} <= Sigma``, so it never is; nor with shrinkage towards
    ``tr(Sigma)/p I``, which commutes with ``Sigma``: for one erased direction
    ``u`` the increase is ``E_u[d] E_u[m] - 2 E_u[d m]`` over the eigenvalues,
    ``m`` those of ``Sigma_s`` and ``d`` of ``Sigma Sigma_s^{-1}``, both
    increasing in ``Sigma``'s, so negative by Chebyshev's sum inequality; a
    random search found no case with more directions either: the option
    guards against rounding and keeps concept-erasure's parameter), ``I - A`` is replaced by
    ``Q + alpha (I - A - Q)``, ``Q = I - U U^T`` the orthogonal eraser, with
    the largest ``alpha`` in [0, 1] whose edited trace is ``tr Sigma``. Both
    maps remove ``Sigma_XZ``, and so does every such mixture.

    Parameters
    ----------
    moments : GroupMoments
        Per-group counts, means and scatter matrices.
    attributes : {"intersectional", "separate"}, default="intersectional"
        With several attributes, erase the intersections or each attribute on
        its own (see :func:`fairpca.mean_matching.attribute_mean_shifts`).
    method : {"leace", "orthogonal"}, default="leace"
    shrinkage : float, default=0.0
        The coefficient ``rho`` in [0, 1].
    constrain_cov_trace : bool, default=False
    svd_tol : float or None, default=None

    Returns
    -------
    A : ndarray of shape (p, p)
        The (oblique, for LEACE) projection removed from the centred data.
    rank : int
        Rank of ``A``: the number of independent directions erased.
    """
    xp, device = namespace_of(moments.means)
    covariance = moments.covariance()
    p = covariance.shape[0]
    eye = xp.eye(p, dtype=covariance.dtype, device=device)
    # Columns spanning Sigma_XZ (scaled per column, which leaves the span unchanged).
    cross = constraint_columns(moments, attributes)
    span = moments_constraint_bases(moments, attributes, cross)[0]
    rank = span.shape[1]
    if method == "orthogonal":
        whiten = unwhiten = None
    else:
        values, vectors = xp.linalg.eigh(_shrunk(covariance, shrinkage))
        # Ascending eigenvalues: those kept are the last ones.
        first = p - int(xp.count_nonzero(values > _RANK_RTOL * max(float(values[-1]), 0.0)))
        V, root = vectors[:, first:], xp.sqrt(values[first:])
        whiten = (V / root) @ V.T
        unwhiten = (V * root) @ V.T
    if svd_tol is None and whiten is None:
        Q = span
    elif svd_tol is None:
        # Whitened columns have norm at most one: scale 1 sets the rank tolerance.
        Q, _ = constraint_bases(whiten @ cross, scale=1.0, max_rank=rank)
    else:
        one_hot = _one_hot_cross_covariance(moments, attributes)
        target = one_hot if whiten is None else whiten @ one_hot
        U, singular, _ = xp.linalg.svd(target, full_matrices=False)
        Q = U[:, : min(int(xp.count_nonzero(singular > svd_tol)), rank)]
    if whiten is None:
        return Q @ Q.T, Q.shape[1]
    A = unwhiten @ Q @ (Q.T @ whiten)
    if constrain_cov_trace and Q.shape[1]:
        # The orthogonal eraser of the same directions: the image of A (span Sigma_XZ).
        U = xp.linalg.qr(unwhiten @ Q)[0]
        orthogonal = eye - U @ U.T
        alpha = _trace_mix(eye - A, orthogonal, covariance)
        if alpha < 1.0:
            A = eye - (orthogonal + alpha * (eye - A - orthogonal))
    return A, Q.shape[1]


# ----------------------------------------------------------------- oracle
def _group_design(moments, attributes):
    """Rows ``G_a``: the encoding ``z`` of each group.

    The one-hot of the intersection, or the concatenated one-hots of each
    attribute's value with ``"separate"``.
    """
    groups = moments.groups
    if attributes == "intersectional" or not len(groups) or not isinstance(groups[0], tuple):
        return np.eye(len(groups))
    blocks = []
    for j in range(len(groups[0])):
        values = [g[j] for g in groups]
        levels = list(dict.fromkeys(values))
        blocks.append(np.array([[v == level for level in levels] for v in values], dtype=float))
    return np.concatenate(blocks, axis=1)


def oracle_coefficients(moments, attributes="intersectional"):
    r"""Oracle LEACE's regression of ``X`` on the concept: per-group offsets and covariate slopes.

    With ``z = [g(a), c]`` (``g(a)`` the one-hot encoding of the row's group,
    ``c`` its continuous attributes), ``Sigma_ZZ`` and ``Sigma_XZ`` the
    pooled covariances and ``B = Sigma_XZ Sigma_ZZ^+``, the oracle edit is
    ``x - B (z - E z)`` = ``x - o_a - B_c (c - E c)`` with ``o_a = B_g (g(a) - E g)``.
    Computed from the group moments alone (within a group ``g`` is constant).

    Returns
    -------
    offsets : ndarray of shape (n_groups, p)
    slopes : ndarray of shape (p, n_covariates)
    """
    xp, _ = namespace_of(moments.means)
    w = moments.proportions
    G = _group_design(moments, attributes)
    Gc = G - w @ G
    shift = moments.means - moments.pooled_mean
    cov_xz = (shift * like(w, shift)[:, None]).T @ like(Gc, shift)
    cov_zz = (Gc * w[:, None]).T @ Gc
    q = moments.n_covariates
    if q:
        cov_xc, cov_cc = moments.cross_covariance()
        dz = to_host(moments.covariate_means - like(w, shift) @ moments.covariate_means)
        cov_gc = (Gc * w[:, None]).T @ dz
        cov_xz = xp.concat((cov_xz, cov_xc), axis=1)
        cov_zz = np.block([[cov_zz, cov_gc], [cov_gc.T, to_host(cov_cc)]])
    # Sigma_ZZ has one row per group and attribute: its pseudo-inverse is taken on the host.
    B = cov_xz @ like(np.linalg.pinv(cov_zz, rtol=1e-12, hermitian=True), cov_xz)
    m = G.shape[1]
    return like(Gc, B) @ B[:, :m].T, B[:, m:]


def training_group_codes(groups, sensitive_features, n_samples, name):
    """Codes into the training ``groups`` of labels given at transform time.

    Raises ``ValueError`` for a label not seen in training (it has no fitted edit).
    """
    found, codes = check_sensitive_features(sensitive_features, n_samples)
    index = {_key(g): i for i, g in enumerate(groups)}
    unseen = [_key(g) for g in found if _key(g) not in index]
    if unseen:
        raise ValueError(
            f"sensitive_features holds group(s) {unseen[:5]!r} that {name} was not fitted "
            f"on; the fitted groups are {[_key(g) for g in groups]!r}."
        )
    return np.array([index[_key(g)] for g in found], dtype=np.intp)[codes]


def _key(label):
    return tuple(_key(v) for v in label) if isinstance(label, tuple) else np.asarray(label).item()


def _check_shrinkage(value):
    if value is None:
        return
    if isinstance(value, str):
        if value not in _SHRINKAGE_NAMES:
            raise ValueError(
                f"shrinkage must be None, 'ledoit-wolf', 'oas' or a float in [0, 1], got {value!r}."
            )
        return
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"shrinkage must be None, 'ledoit-wolf', 'oas' or a float in [0, 1], got "
            f"{type(value).__name__} {value!r}."
        )
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"shrinkage must be in [0, 1], got {value!r}.")


@document_require_groups
class LinearErasure(FairpcaMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Remove every linear trace of a group attribute with the smallest edit (LEACE).

    ``transform(X) = X - (X - mean_) @ erasure_.T`` where ``erasure_`` is the
    LEACE map of the training moments (see the module docstring). After the
    edit every group has the same mean on the training data, so the cross-
    covariance with the one-hot groups is zero and no linear classifier can
    predict the group better than a constant; the output keeps the input's
    shape.

    Options (defaults: exact LEACE of the empirical covariance, every
    group's direction erased):

    - ``shrinkage``: whiten with ``Sigma_s = (1 - rho) Sigma + rho tr(Sigma)/p I``
      (Ledoit-Wolf or OAS ``rho``, or a given one) instead of ``Sigma``. The
      edit still removes ``Sigma_XZ`` exactly; it is least-change in the norm
      of ``Sigma_s^{-1}``, which is better conditioned when ``n`` is not much
      larger than ``p``.
    - ``method="orthogonal"``: ``A = U U^T`` with ``U`` an orthonormal basis of
      ``span(Sigma_XZ)``: the least Euclidean change among orthogonal
      projections that remove ``Sigma_XZ`` (it moves the data more than
      LEACE in the whitened norm; the edited covariance ``Q Sigma Q`` never
      has a larger trace).
    - ``constrain_cov_trace``: if the LEACE edit would increase the trace of
      the training covariance (it does not with the shrinkages offered, see
      :func:`leace_map`: the option is concept-erasure's, kept for parity), mix it with the
      orthogonal eraser ``Q = I - U U^T``: ``I - A = Q + alpha (I - A_leace - Q)``
      with the largest ``alpha`` in [0, 1] giving ``tr((I - A) Sigma (I - A)^T)
      = tr Sigma`` (the root of a convex quadratic in ``alpha``). Still an
      eraser: both ends remove ``Sigma_XZ``.
    - ``svd_tol``: concept-erasure's rank rule (keep only singular values of
      ``W Sigma_XZ`` above it, ``Sigma_XZ`` the cross-covariance with the
      one-hot groups, divisor ``n``). Directions below it are *not* erased.
    - Oracle LEACE: ``transform(X, sensitive_features=z)`` (see :meth:`transform`).

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
    method : {"leace", "orthogonal"}, default="leace"
        The oblique least-change projection in the whitened norm, or the
        orthogonal projection off ``span(Sigma_XZ)``.
    shrinkage : None, "ledoit-wolf", "oas" or float in [0, 1], default=None
        Shrinkage of the covariance that whitens (``method="leace"``; ignored
        by ``"orthogonal"``). ``"ledoit-wolf"`` needs the fourth moment
        ``sum_i ||x_i - mu||^4`` beside the group moments: one more pass over
        the rows in ``fit`` and ``partial_fit``, not available on Dask input;
        ``"oas"`` and a float need only the moments.
    constrain_cov_trace : bool, default=False
        Keep the trace of the training covariance from increasing (see above;
        ``method="leace"`` only).
    svd_tol : None or float >= 0, default=None
        None: the package's rank rule (every direction of ``Sigma_XZ`` above
        rounding is erased). A float: concept-erasure's rule, which leaves the
        directions whose singular value of ``W Sigma_XZ`` is at most ``svd_tol``.
    %(require_groups)s

    Attributes
    ----------
    erasure_ : ndarray of shape (n_features, n_features)
        The map ``W^+ P W`` subtracted from the centred data.
    rank_ : int
        Its rank: the number of independent directions of ``Sigma_XZ`` removed
        (group-mean differences and continuous attributes).
    shrinkage_ : float
        The shrinkage coefficient ``rho`` used (0 without shrinkage, with
        ``method="orthogonal"`` or for the identity edit).
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
    QuadraticErasure : Also equalise the groups' covariances (needs the groups at transform).

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

    # transform(X, sensitive_features=z) is Oracle LEACE. scikit-learn requires a
    # metadata name that fit and transform both consume to be requested alike for
    # fit_transform; so that set_fit_request(sensitive_features=True) alone keeps
    # working (the ordinary edit), transform consumes them only once asked for with
    # set_transform_request.
    __metadata_request__transform = {"sensitive_features": UNUSED}

    def set_transform_request(self, *, sensitive_features: bool | None | str = UNCHANGED) -> Self:
        """Route ``sensitive_features`` to :meth:`transform` (Oracle LEACE) in meta-estimators.

        Only with metadata routing enabled
        (``sklearn.set_config(enable_metadata_routing=True)``). scikit-learn's
        rule for ``fit_transform``: a name both ``fit`` and ``transform``
        consume must be requested alike, so request it for both
        (``set_fit_request(sensitive_features=True)`` too); a pipeline's
        ``fit`` then erases its training rows with the oracle edit, and its
        ``predict``/``transform`` with the labels passed to them. By default
        ``transform`` does not consume them (the ordinary edit).

        Parameters
        ----------
        sensitive_features : bool, None or str, default=sklearn.utils.metadata_routing.UNCHANGED
            True: pass them to ``transform``; False: do not; None: error if
            given; a str: an alias. ``UNCHANGED`` keeps the current request.

        Returns
        -------
        self : object
            The estimator.
        """
        if not sklearn.get_config().get("enable_metadata_routing", False):
            raise RuntimeError(
                "set_transform_request is only available when metadata routing is enabled: "
                "sklearn.set_config(enable_metadata_routing=True)."
            )
        requests = self._get_metadata_request()
        if sensitive_features is not UNCHANGED:
            requests.transform.add_request(param="sensitive_features", alias=sensitive_features)
        self._metadata_request = requests
        return self

    def fit_transform(self, X: ArrayLike, y: ArrayLike | None = None, **fit_params) -> np.ndarray:
        """Fit, then erase from ``X``: ``fit(X, y, **fit_params).transform(X)``.

        The ordinary edit, unless metadata routing is enabled and ``transform``
        requests ``sensitive_features`` (:meth:`set_transform_request`): then
        the training rows are erased with Oracle LEACE, as in a pipeline.
        """
        labels = fit_params.get("sensitive_features")
        self.fit(X, y, **fit_params)
        if labels is not None and self._transform_requests_labels():
            return self.transform(X, sensitive_features=labels)
        return self.transform(X)

    def _transform_requests_labels(self):
        if not sklearn.get_config().get("enable_metadata_routing", False):
            return False
        requests = self._get_metadata_request().transform.requests
        return requests.get("sensitive_features") is True

    def __init__(
        self,
        *,
        attributes: Literal["intersectional", "separate"] = "intersectional",
        continuous_attributes: bool | Sequence[str | int] | None = None,
        method: Literal["leace", "orthogonal"] = "leace",
        shrinkage: Literal["ledoit-wolf", "oas"] | float | None = None,
        constrain_cov_trace: bool = False,
        svd_tol: float | None = None,
        require_groups: bool = False,
    ) -> None:
        self.attributes = attributes
        self.continuous_attributes = continuous_attributes
        self.method = method
        self.shrinkage = shrinkage
        self.constrain_cov_trace = constrain_cov_trace
        self.svd_tol = svd_tol
        self.require_groups = require_groups

    # What the front door (fairpca._front_door) reads: the eraser needs only the
    # group moments; a group of one row is a group.
    _supports_dask = True
    _supports_sparse = True
    _supports_sample_weight = True
    _supports_partial_fit = True
    _supports_array_api = True
    _solves_in_namespace = True
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
        if not isinstance(self.method, str) or self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}.")
        _check_shrinkage(self.shrinkage)
        if not isinstance(self.constrain_cov_trace, bool | np.bool_):
            raise TypeError(
                f"constrain_cov_trace must be True or False, got {self.constrain_cov_trace!r}."
            )
        if self.svd_tol is not None:
            if isinstance(self.svd_tol, bool | np.bool_) or not isinstance(
                self.svd_tol, numbers.Real
            ):
                raise TypeError(f"svd_tol must be None or a float >= 0, got {self.svd_tol!r}.")
            if not (float(self.svd_tol) >= 0 and np.isfinite(self.svd_tol)):
                raise ValueError(f"svd_tol must be a finite float >= 0, got {self.svd_tol!r}.")

    def _continuous_columns(self):
        return check_continuous_attributes(self.continuous_attributes)

    def _needs_fourth_moment(self):
        return self.shrinkage == "ledoit-wolf" and self.method == "leace"

    # ---------------------------------------------------------------- hooks
    def _fit_in_memory(self, X, y, sensitive_features, weights):
        moments, _, _ = self._memory_moments(X, sensitive_features, weights)
        self.__dict__.pop("_fourth", None)
        if self._needs_fourth_moment():
            self._fourth = (moments.n_samples, *_fourth_moments(X, moments.pooled_mean, weights))
        grouped = sensitive_features is not None
        self._solve_moments(moments, grouped=grouped, fair=grouped)

    def _fit_on_device(self, X, y, sensitive_features, weights):
        # As in memory: the fourth moment's pass, if any, runs in X's namespace too.
        self._fit_in_memory(X, y, sensitive_features, weights)

    def _fit_dask(self, X, y, sensitive_features, da):
        if self._needs_fourth_moment():
            raise TypeError(
                "shrinkage='ledoit-wolf' needs a second pass over the rows (their fourth "
                "moment), which a Dask fit does not make; use shrinkage='oas' or a float, "
                "which need only the moments, or fit chunk by chunk with partial_fit."
            )
        self.__dict__.pop("_fourth", None)
        return super()._fit_dask(X, y, sensitive_features, da)

    def _partial_fit_chunk(self, X, y, sensitive_features, weights):
        held = getattr(self, "moments_", None)
        if not self._needs_fourth_moment():
            self.__dict__.pop("_fourth", None)
            return super()._partial_fit_chunk(X, y, sensitive_features, weights)
        n_new = float(X.shape[0] if weights is None else np.sum(weights))
        new_mean = _row_mean(X, weights)
        if held is None:
            q, t = _fourth_moments(X, new_mean, weights)
        else:
            n_held = float(held.n_samples)
            n_fourth, q, t = getattr(self, "_fourth", (None, 0.0, 0.0))
            if n_fourth is None or not np.isclose(n_fourth, held.n_samples, rtol=1e-12, atol=0):
                raise ValueError(
                    "shrinkage='ledoit-wolf' needs the fourth moment of every row, and the "
                    "earlier chunks were fitted without it; fit again from the first chunk."
                )
            centre = (n_held * held.pooled_mean + n_new * new_mean) / (n_held + n_new)
            d = held.pooled_mean - centre
            q, t = _shift_fourth(q, t, n_held, held.covariance() * n_held, d)
            q_new, t_new = _fourth_moments(X, centre, weights)
            q, t = q + q_new, t + t_new
        self._fourth = (n_new + (0.0 if held is None else float(held.n_samples)), q, t)
        return super()._partial_fit_chunk(X, y, sensitive_features, weights)

    def _fit_from_moments(self, moments, *, grouped, fair):
        self._fit_moments(moments, identity=not fair, grouped=grouped)

    def _fit_moments(self, moments, identity=False, grouped=True):
        rho = 0.0
        if identity:
            xp, device = namespace_of(moments.means)
            p = moments.n_features
            erasure, rank = xp.zeros((p, p), dtype=moments.means.dtype, device=device), 0
        else:
            if self.method == "leace":
                covariance = moments.covariance()
                fourth = getattr(self, "_fourth", (None, None))[1]
                rho = shrinkage_coefficient(self.shrinkage, covariance, moments.n_samples, fourth)
            erasure, rank = leace_map(
                moments,
                self.attributes,
                method=self.method,
                shrinkage=rho,
                constrain_cov_trace=bool(self.constrain_cov_trace),
                svd_tol=None if self.svd_tol is None else float(self.svd_tol),
            )
        self.erasure_, self.rank_, self.shrinkage_ = erasure, rank, rho
        self.mean_ = moments.pooled_mean
        self.groups_ = moments.groups if grouped else None
        self.moments_ = moments

    def transform(self, X: ArrayLike, sensitive_features: ArrayLike | None = None) -> np.ndarray:
        r"""Erase the attribute from ``X``; with ``sensitive_features``, Oracle LEACE.

        Without ``sensitive_features``: ``x - A (x - mean_)`` with the fitted
        map ``A = erasure_``.

        With ``sensitive_features`` (the concept ``z`` of each row, in the
        encoding of ``fit``: one-hot groups, continuous attributes as they
        are), Oracle LEACE [Belrose2023]_ replaces each row by its residual
        on the concept:

        .. math::

            x' = x - \Sigma_{XZ} \Sigma_{ZZ}^{+} (z - \mathrm{E} z),

        with the training covariances. On the training rows ``Cov(X', Z) =
        Sigma_XZ - Sigma_XZ Sigma_ZZ^+ Sigma_ZZ = 0``, and among all edits
        ``x - f(z)`` with that property it moves each row least on average,
        in every norm at once (it is the least-squares regression of ``x`` on
        ``z``). For categorical groups alone the edit subtracts the group's
        mean difference: ``x' = x - (mu_a - mu)``. It uses ``z``, so it is for
        data whose concept is known; the map of the options (``method``,
        ``shrinkage``) does not enter it.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or DataFrame of shape (n_samples, n_features)
            Dask input gives a lazy result of the same kind (Dask array: ``X``'s
            row chunks; Dask DataFrame: its index, divisions and columns);
            Oracle LEACE takes in-memory ``X``.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attr), default=None
            The concept of each row, as in ``fit`` (only groups seen there).
            In a pipeline with metadata routing, ask for it with
            ``set_transform_request(sensitive_features=True)``.

        Returns
        -------
        X_erased : ndarray of shape (n_samples, n_features)
            Dense also for sparse ``X`` (the edit moves every row along the
            erased directions); ``X`` itself is not densified: the edit
            ``(X - mean_) A^T`` is ``X A^T - mean_ A^T`` and X's non-zeros are
            added to it.
        """
        check_is_fitted(self, "erasure_")
        if sensitive_features is not None:
            return self._oracle_transform(X, sensitive_features)
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

    def _oracle_transform(self, X, sensitive_features):
        name = type(self).__name__
        if _is_dask_collection(X) or _is_dask_collection(sensitive_features):
            raise TypeError(
                f"{name}.transform with sensitive_features (Oracle LEACE) takes in-memory X "
                "and labels; compute them first, or map it over the blocks yourself."
            )
        moments = getattr(self, "moments_", None)
        if moments is None:
            raise ValueError(
                f"{name}.transform with sensitive_features needs the group moments, which "
                "compact() dropped; refit, or compact only after the last oracle transform."
            )
        if self.groups_ is None:
            raise ValueError(
                f"{name} was fitted without sensitive_features: there is no concept to "
                "erase with; call transform(X) without them."
            )
        rows = self._device_rows(X, "transform")
        if rows is None:
            X = check_estimator_data(self, X, reset=False, accept_sparse=SPARSE_FORMATS)
        else:  # fitted on array-API input: the edit in X's namespace, on its device
            X, sensitive_features = rows, to_host(sensitive_features)
        n = X.shape[0]
        categorical, covariates, names = split_sensitive_features(
            sensitive_features, self._continuous_columns()
        )
        offsets, slopes = oracle_coefficients(moments, self.attributes)
        xp, device = namespace_of(offsets)
        if categorical is None:
            edit = xp.broadcast_to(offsets, (n, offsets.shape[1]))
        else:
            codes = training_group_codes(self.groups_, categorical, n, name)
            edit = xp.take(offsets, xp.asarray(codes, device=device), axis=0)
        if covariates is not None:
            Z = check_covariates(covariates, n, names)
            if Z.shape[1] != slopes.shape[1]:
                raise ValueError(
                    f"sensitive_features has {Z.shape[1]} continuous column(s); {name} was "
                    f"fitted with {slopes.shape[1]}."
                )
            zeta = like(moments.proportions, slopes) @ moments.covariate_means
            edit = edit + (like(Z, slopes) - zeta) @ slopes.T
        if issparse(X):
            return add_sparse(-edit, X)
        return X - edit
