"""Per-group first and second moments, computed in one pass and mergeable.

Every covariance-based fair-PCA method (MinMaxLoss, Convex, Robust, Pareto)
needs only, for each group ``a``, the row count ``n_a``, the mean ``mu_a`` and
the centred scatter matrix ``S_a = sum_{i in a} (x_i - mu_a)(x_i - mu_a)^T``.
These are sums over rows, so they can be accumulated chunk by chunk and merged
with the pairwise update of Chan, Golub & LeVeque (1979), which stays accurate
for data with a large offset (unlike raw sums of squares). Within one array,
the pass sums cache-sized blocks of each group's rows around a common shift
and centres afterwards, falling back to a second pass around each group's own
mean when that would lose digits; it costs about one ``X^T X`` and no copy of X.

Continuous sensitive attributes ``Z`` (covariates) ride along in the same
pass: each group also keeps the mean of ``Z``, the cross-scatter
``sum (x_i - mu_a)(z_i - zeta_a)^T`` and the scatter of ``Z``, merged by the
same update, so ``Cov(X, Z)`` needs no second pass over the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike

from fairpca._array_api import (
    device_namespace,
    float_dtypes,
    held_namespace,
    like,
    namespace_of,
    to_host,
)
from fairpca._dask import (
    _dask_labels,
    _dask_rows,
    _import_dask,
    _merge_parts,
)
from fairpca._sparse import SPARSE_FORMATS, issparse, sparse_group_scatters
from fairpca._validation import (
    check_covariates,
    check_data,
    check_magnitude,
    check_sample_weight,
    check_sensitive_features,
)

if TYPE_CHECKING:
    from dask.array import Array as DaskArray
    from dask.dataframe import DataFrame as DaskDataFrame

__all__ = ["GroupMoments"]


@dataclass(frozen=True, eq=False)
class GroupMoments:
    """Row counts, means and centred scatter matrices of each group.

    Build with :meth:`from_arrays`, :meth:`from_chunks` or :meth:`from_dask`,
    combine with :meth:`merge`.

    Parameters
    ----------
    groups : ndarray of shape (n_groups,)
        Sorted distinct group labels.
    counts : ndarray of shape (n_groups,), dtype int64 or float64
        Rows in each group; with sample weights, the total weight of its rows
        (float), every sum below being weighted the same way.
    means : ndarray of shape (n_groups, n_features)
        Group means.
    scatters : ndarray of shape (n_groups, n_features, n_features)
        ``scatters[a] = sum_{i in a} (x_i - means[a]) (x_i - means[a])^T``.
    covariate_means : ndarray of shape (n_groups, n_covariates) or None
        Group means ``zeta_a`` of the covariates ``Z`` (continuous attributes),
        or None when there are none.
    cross_scatters : ndarray of shape (n_groups, n_features, n_covariates) or None
        ``sum_{i in a} (x_i - means[a]) (z_i - zeta_a)^T``.
    covariate_scatters : ndarray of shape (n_groups, n_covariates, n_covariates) or None
        ``sum_{i in a} (z_i - zeta_a) (z_i - zeta_a)^T``.
    """

    groups: np.ndarray
    counts: np.ndarray
    means: np.ndarray
    scatters: np.ndarray
    covariate_means: np.ndarray | None = None
    cross_scatters: np.ndarray | None = None
    covariate_scatters: np.ndarray | None = None

    # ------------------------------------------------------------------ build
    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        sensitive_features: ArrayLike | None,
        covariates: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> GroupMoments:
        """Compute the moments of in-memory data.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Numeric data without NaN or infinities. Sparse data (CSR or CSC;
            other formats are converted to CSR) are never densified: see
            :mod:`fairpca._sparse`.
        sensitive_features : array-like of shape (n_samples,) or None
            Group label of each row; None puts every row in one group (label 0).
        covariates : array-like of shape (n_samples, n_covariates), default=None
            Continuous attributes ``Z`` whose cross-moments with ``X`` are kept.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights: the moments are those of the data
            with each row repeated ``sample_weight[i]`` times (for integers).

        Returns
        -------
        moments : GroupMoments
        """
        on_device = device_namespace(X)
        if on_device is None:
            # NaN and infinities are caught by the pass itself: no separate scan.
            X = check_data(X, "X", ensure_all_finite=False, accept_sparse=SPARSE_FORMATS)
        else:
            X = _check_device_data(X, *on_device)
            sensitive_features, covariates = to_host(sensitive_features), to_host(covariates)
            sample_weight = to_host(sample_weight)
        if sensitive_features is None:
            groups, codes = np.array([0]), np.zeros(X.shape[0], dtype=np.intp)
        else:
            groups, codes = check_sensitive_features(sensitive_features, X.shape[0])
        if covariates is not None:
            covariates = check_covariates(covariates, X.shape[0])
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
        return cls._from_codes(X, codes, groups, covariates, sample_weight)

    @classmethod
    def _from_codes(cls, X, codes, groups, covariates=None, weights=None):
        """Moments of float data whose rows carry integer group codes.

        ``X`` may still hold NaN or infinities: the pass detects them and raises
        the same error as :func:`check_data`, so that callers need not scan ``X``
        for them beforehand. ``covariates`` are validated float columns,
        ``weights`` validated sample weights. ``X`` may be a CSR or CSC matrix:
        its moments are then taken from the non-zeros (:mod:`fairpca._sparse`).
        """
        if weights is None:
            counts = np.bincount(codes, minlength=len(groups)).astype(np.int64)
        else:
            counts = np.bincount(codes, weights=weights, minlength=len(groups))
        if device_namespace(X) is not None:
            means, scatters = _device_group_scatters(X, codes, counts, covariates, weights)
        elif issparse(X):
            means, scatters = sparse_group_scatters(
                X, codes, counts, covariates, weights, max_cancellation=_MAX_CANCELLATION
            )
            _check_scatters(X, scatters, counts)
        else:
            means, scatters = _group_scatters(X, codes, counts, covariates, weights)
        return cls._from_joint(groups, counts, means, scatters, X.shape[1])

    @classmethod
    def _from_joint(cls, groups, counts, means, scatters, n_features):
        """Split moments of the joint rows ``[x, z]`` into those of ``X`` and of ``Z``."""
        p = n_features
        if means.shape[1] == p:
            return cls(groups, counts, means, scatters)
        return cls(
            groups,
            counts,
            means[:, :p],
            scatters[:, :p, :p],
            means[:, p:],
            scatters[:, :p, p:],
            scatters[:, p:, p:],
        )

    def _joint(self):
        """Means and scatters of the joint rows ``[x, z]`` (those of ``X`` without covariates)."""
        if self.covariate_means is None:
            return self.means, self.scatters
        if self._device() is not None:
            return _device_joint(self)
        means = np.concatenate((self.means, self.covariate_means), axis=1)
        top = np.concatenate((self.scatters, self.cross_scatters), axis=2)
        bottom = np.concatenate(
            (self.cross_scatters.transpose(0, 2, 1), self.covariate_scatters), axis=2
        )
        return means, np.concatenate((top, bottom), axis=1)

    @classmethod
    def from_chunks(cls, chunks: Iterable[tuple[ArrayLike, ArrayLike | None]]) -> GroupMoments:
        """Accumulate moments over an iterable of ``(X_chunk, labels_chunk)`` pairs.

        Only one chunk is held at a time. Groups may appear in any chunk,
        including only in later ones.

        Parameters
        ----------
        chunks : iterable of (array-like, array-like)
            Row blocks of the data and their group labels; every block must
            have the same number of columns.

        Returns
        -------
        moments : GroupMoments
        """
        total = None
        for i, chunk in enumerate(chunks):
            try:
                X_chunk, s_chunk = chunk
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"chunks must yield (X, sensitive_features) pairs; item {i} does not."
                ) from exc
            part = cls.from_arrays(X_chunk, s_chunk)
            if total is not None and part.n_features != total.n_features:
                raise ValueError(
                    f"chunk {i} has {part.n_features} columns but earlier chunks have "
                    f"{total.n_features}."
                )
            total = part if total is None else total.merge(part)
        if total is None:
            raise ValueError("chunks is empty: no data to compute moments from.")
        return total

    @classmethod
    def from_dask(
        cls,
        X: DaskArray | DaskDataFrame,
        sensitive_features: ArrayLike | None,
        covariates: ArrayLike | None = None,
        *,
        transform: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> GroupMoments:
        """Compute the moments of a Dask collection in one distributed pass.

        Each row block is reduced to its own ``GroupMoments`` on the workers;
        the small per-block results are merged in a tree. The numbers equal
        those of :meth:`from_arrays` on the same data up to rounding. The
        computation runs on the current Dask scheduler (a ``distributed.Client``
        if one is active).

        Parameters
        ----------
        X : dask.array.Array or dask.dataframe.DataFrame of shape (n_samples, n_features)
            Numeric data. Array columns are rechunked to whole rows if needed.
        sensitive_features : Dask collection or array-like, (n_samples,) or (n_samples, n_attr)
            Group labels (one column per attribute: intersectional groups), or
            None for one group. With row blocks of unknown size (e.g. from a
            Dask DataFrame), pass a Dask collection with the same partitions,
            such as columns of the same DataFrame.
        covariates : Dask collection or array-like of shape (n_samples, n_covariates), default=None
            Continuous attributes, aligned with ``X`` as the labels are.
        transform : callable, default=None
            Applied to each row block (an ndarray) on the workers before its
            moments are taken: the moments are then those of ``transform(X)``
            (e.g. random features), never held whole.

        Returns
        -------
        moments : GroupMoments
            Only groups present in the data are listed.

        Notes
        -----
        Requires the ``dask`` extra (``pip install 'fairpca[dask]'``).
        """
        dask, da = _import_dask("GroupMoments.from_dask")
        X, _ = _dask_rows(X, da)
        x_blocks = X.to_delayed().ravel()
        n_blocks = len(x_blocks)
        s_blocks = z_blocks = [None] * n_blocks
        if sensitive_features is not None:
            s_blocks = _dask_labels(sensitive_features, X, da).to_delayed().ravel()
        if covariates is not None:
            z_blocks = _dask_labels(covariates, X, da).to_delayed().ravel()
        parts = [
            dask.delayed(_block_moments)(xb, sb, i, zb, transform)
            for i, (xb, sb, zb) in enumerate(zip(x_blocks, s_blocks, z_blocks, strict=True))
        ]
        while len(parts) > 1:
            parts = [
                dask.delayed(_merge_parts)(parts[i], parts[i + 1])
                if i + 1 < len(parts)
                else parts[i]
                for i in range(0, len(parts), 2)
            ]
        (result,) = dask.compute(parts[0])
        if result is None:
            raise ValueError("X has no rows: no data to compute moments from.")
        return result

    # ------------------------------------------------------------------ merge
    def merge(self, other: GroupMoments) -> GroupMoments:
        """Moments of the union of the rows behind ``self`` and ``other``.

        Parameters
        ----------
        other : GroupMoments
            Moments of disjoint rows with the same features.

        Returns
        -------
        moments : GroupMoments
            Groups are the sorted union of both label sets.
        """
        if not isinstance(other, GroupMoments):
            raise TypeError(f"other must be a GroupMoments, got {type(other).__name__}.")
        if other.n_features != self.n_features:
            raise ValueError(
                f"cannot merge moments over {self.n_features} and {other.n_features} features."
            )
        if self.n_covariates != other.n_covariates:
            raise ValueError(
                f"cannot merge moments with {self.n_covariates} and {other.n_covariates} "
                "continuous attributes."
            )
        if (self.groups.dtype.kind in "US") != (other.groups.dtype.kind in "US"):
            # numpy would silently turn the numbers into strings.
            raise TypeError(
                "cannot merge moments whose group labels have different types: "
                f"{self.groups.dtype} and {other.groups.dtype}."
            )
        groups = np.union1d(self.groups, other.groups)
        on_device = self._device(), other._device()
        if on_device != (None, None):
            return _device_merge(self, other, groups)
        width = self.n_features + self.n_covariates
        counts = np.zeros(len(groups), dtype=np.result_type(self.counts, other.counts))
        means = np.zeros((len(groups), width))
        scatters = np.zeros((len(groups), width, width))
        for src in (self, other):
            idx = np.searchsorted(groups, src.groups)
            src_means, src_scatters = src._joint()
            for j, a in enumerate(idx):
                if src.counts[j] == 0:
                    continue
                means[a], scatters[a] = _pairwise_update(
                    means[a], scatters[a], counts[a], src_means[j], src_scatters[j], src.counts[j]
                )
                counts[a] += src.counts[j]
        return GroupMoments._from_joint(groups, counts, means, scatters, self.n_features)

    # ------------------------------------------------------------ devices
    def _device(self):
        """``(xp, device)`` of moments held in an array-API namespace other than NumPy's."""
        return held_namespace(self.means)

    def to_numpy(self) -> GroupMoments:
        """These moments with every array a float64 NumPy array on the host.

        Moments of array-API input (torch, CuPy, ... under scikit-learn's
        ``array_api_dispatch``) are held in the input's namespace, on its
        device, where the quantities below are computed; this copies them
        (``k`` matrices ``p x p``) to the host, for the solvers that iterate
        in NumPy. NumPy moments are returned as they are.
        """
        if self._device() is None:
            return self
        fields = [
            None if a is None else np.asarray(to_host(a), dtype=np.float64)
            for a in (
                self.means,
                self.scatters,
                self.covariate_means,
                self.cross_scatters,
                self.covariate_scatters,
            )
        ]
        return GroupMoments(self.groups, self.counts, *fields)

    # ------------------------------------------------------------ quantities
    @property
    def n_groups(self) -> int:
        """Number of groups."""
        return len(self.groups)

    @property
    def n_features(self) -> int:
        """Number of features."""
        return self.means.shape[1]

    @property
    def n_covariates(self) -> int:
        """Number of continuous attributes (covariates) tracked; 0 without them."""
        return 0 if self.covariate_means is None else self.covariate_means.shape[1]

    @property
    def n_samples(self) -> int | float:
        """Total number of rows (total weight with sample weights)."""
        return self.counts.sum().item()

    @property
    def proportions(self) -> np.ndarray:
        """Group masses ``n_a / n``, shape (n_groups,)."""
        return self.counts / self.n_samples

    @property
    def pooled_mean(self) -> np.ndarray:
        """Mean of all rows, shape (n_features,)."""
        return like(self.proportions, self.means) @ self.means

    def second_moment(
        self, center: Literal["pooled", "group"] | ArrayLike | None = "pooled"
    ) -> np.ndarray:
        """Per-group second moments ``M_a = (1/n_a) sum_{i in a} (x_i - c)(x_i - c)^T``.

        Parameters
        ----------
        center : {"pooled", "group"} or None or array-like of shape (n_features,)
            The point ``c``: the pooled mean of all rows (the papers' convention,
            default), each group's own mean (giving group covariances), the
            origin (``None``), or a given vector.

        Returns
        -------
        M : ndarray of shape (n_groups, n_features, n_features)
            In the namespace and on the device of the moments (as every
            quantity below; the counts and proportions stay NumPy arrays).
        """
        xp, device = namespace_of(self.scatters)
        counts = like(np.where(self.counts > 0, self.counts, 1), self.scatters)
        covariances = self.scatters / counts[:, None, None]
        if isinstance(center, str):
            if center == "group":
                return covariances
            if center != "pooled":
                raise ValueError(
                    f"center must be 'pooled', 'group', None or a vector, got {center!r}."
                )
            c = self.pooled_mean
        elif center is None:
            c = xp.zeros(self.n_features, dtype=self.means.dtype, device=device)
        else:
            c = np.asarray(to_host(center), dtype=np.float64)
            if c.shape != (self.n_features,):
                raise ValueError(f"center must have shape ({self.n_features},), got {c.shape}.")
            c = like(c, self.means)
        shift = self.means - c
        return covariances + shift[:, :, None] * shift[:, None, :]

    @property
    def variances(self) -> np.ndarray:
        """Pooled variance of each column (divisor n), the diagonal of :meth:`covariance`.

        ``(sum_a diag(S_a) + n_a (mu_a - mu)^2) / n``, shape (n_features,), in
        O(n_groups n_features) without forming a p x p matrix.
        """
        xp, _ = namespace_of(self.scatters)
        spread = xp.sum(xp.linalg.diagonal(self.scatters), axis=0)
        between = like(self.counts, self.means) @ (self.means - self.pooled_mean) ** 2
        return (spread + between) / self.n_samples

    def covariance(self) -> np.ndarray:
        """Covariance of all rows around the pooled mean (divisor n), shape (p, p)."""
        return weighted_sum(self.proportions, self.second_moment("pooled"))

    def cross_covariance(self) -> tuple[np.ndarray, np.ndarray]:
        """Pooled covariances of ``X`` with the covariates and of the covariates.

        Returns
        -------
        cov_xz : ndarray of shape (n_features, n_covariates)
            ``(1/n) sum_i (x_i - mu)(z_i - zeta)^T`` over all rows, ``zeta`` the
            pooled covariate mean.
        cov_zz : ndarray of shape (n_covariates, n_covariates)
            ``(1/n) sum_i (z_i - zeta)(z_i - zeta)^T``.
        """
        if self.covariate_means is None:
            raise ValueError("these moments track no continuous attributes (covariates).")
        xp, _ = namespace_of(self.means)
        w, n = like(self.proportions, self.means), self.n_samples
        dx = self.means - self.pooled_mean
        dz = self.covariate_means - w @ self.covariate_means
        cov_xz = xp.sum(self.cross_scatters, axis=0) / n + (dx * w[:, None]).T @ dz
        cov_zz = xp.sum(self.covariate_scatters, axis=0) / n + (dz * w[:, None]).T @ dz
        return cov_xz, cov_zz


# ------------------------------------------------------------ the row pass
# Rows per block of the pass: blocks of about 2 MiB keep the copies in cache,
# and at least 1024 rows amortise each p x p update at large p.
_BLOCK_BYTES = 2 * 2**20
_MIN_BLOCK_ROWS = 1024
# Largest accepted ratio of the diagonal a group's Gram matrix was read from
# (its own, or a block's pooled Gram it was subtracted from) to its centred
# scatter diagonal. Centring after summing, S = G - n delta delta^T, multiplies
# the relative rounding error of G by this ratio, and so does subtraction from
# a pooled Gram; groups above it are summed again around their own mean.
_MAX_CANCELLATION = 100.0
# A block's largest group is obtained as its pooled Gram minus the other
# groups' when those hold at most this fraction times 1/width of its rows. That
# route multiplies the other rows twice but copies only them; the per-group
# route copies every row. Copying a row costs O(width), multiplying it
# O(width^2): measured single-threaded, the pooled route wins below this bound.
_POOLED_BELOW = 10.0
# Rows are summed around zero, without a shifted copy of each block, while
# no column's squared offset exceeds this times the largest column variance
# (in the first rows): centring afterwards then multiplies the rounding error
# by at most about 1 + this, a tenth of the accepted _MAX_CANCELLATION, and
# the copy (as costly as the Gram matrix at small width) is saved.
_ZERO_SHIFT_BELOW = 10.0


def _group_scatters(X, codes, counts, covariates=None, weights=None):
    """Means and centred scatter matrices of each group, in one pass over ``X`` as a rule.

    Block by block, each group's sum and Gram matrix around a common shift
    ``c`` are accumulated (see :func:`_block_sums`: in blocks mostly of one
    group, that group's Gram is the block's pooled one minus the others', so
    that its rows are not copied). Centring is exact algebra afterwards:
    ``S_a = G_a - n_a delta_a delta_a^T`` with ``delta_a = mu_a - c``. That
    subtraction loses digits when a group's offset from ``c`` dwarfs its
    spread, and the pooled subtraction when the other groups' Gram matrices
    dwarf the group's scatter; such groups are summed a second time around
    their own mean, known by then, with their own rows copied.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype float64
        Data; NaN or infinities raise a ``ValueError``.
    codes : ndarray of shape (n_samples,), dtype intp
        Group code of each row.
    counts : ndarray of shape (n_groups,)
        Rows per code.
    covariates : ndarray of shape (n_samples, n_covariates) or None
        Finite continuous attributes ``Z``; the moments are then those of the
        joint rows ``[x_i, z_i]`` (``Z`` is appended block by block, not copied
        whole).
    weights : ndarray of shape (n_samples,) or None
        Sample weights: every sum is weighted (``counts`` are then the groups'
        total weights).

    Returns
    -------
    means : ndarray of shape (n_groups, n_features + n_covariates)
    scatters : ndarray of shape (n_groups, n_features + n_covariates, n_features + n_covariates)
        Zero for groups without rows.
    """
    n_groups = len(counts)
    present = np.flatnonzero(counts)
    shift = _rough_shift(X)
    if covariates is not None:
        shift = np.concatenate((shift, _rough_shift(covariates)))
    grams, sums, scales = _block_sums(X, codes, present, shift, covariates, weights)
    if len(present) < n_groups:
        # Zero rows for the empty groups; the common case keeps the one k p^2 array.
        grams, sums, scales = (_scatter_rows(a, present, n_groups) for a in (grams, sums, scales))
    # A non-finite value of X, or an overflow, reaches a diagonal of G_a (also
    # through the pooled subtraction: inf - inf is NaN).
    if not np.isfinite(np.diagonal(grams, axis1=1, axis2=2)).all():
        _raise_non_finite(X)
    sizes = np.where(counts > 0, counts, 1)[:, None]
    delta = sums / sizes
    means = shift + delta
    # In place, one group at a time: the pass peaks at one k p^2 array, not four.
    scatters = grams
    for a in range(n_groups):
        scatters[a] -= (sizes[a, 0] * delta[a])[:, None] * delta[a][None, :]

    # The rounding error of G_a is about eps * max(scales[a]).
    with np.errstate(divide="ignore", invalid="ignore"):
        cancellation = scales.max(axis=1) / np.diagonal(scatters, axis1=1, axis2=2).max(axis=1)
    redo = np.array([a for a in present if not cancellation[a] <= _MAX_CANCELLATION], np.intp)
    if len(redo):
        grams, sums, _ = _block_sums(X, codes, redo, means[redo], covariates, weights)
        delta = sums / counts[redo][:, None]
        means[redo] += delta
        scatters[redo] = grams - counts[redo][:, None, None] * delta[:, :, None] * delta[:, None, :]
    _check_scatters(X, scatters, counts)
    return means, scatters


def weighted_sum(weights, stack):
    """``sum_a weights[a] stack[a]`` in the order of ``a``, in the namespace of ``stack``.

    ``weights`` are host numbers (counts, proportions). Summed in order, as
    ``np.einsum("a,aij->ij", ...)`` does, so that NumPy fits keep their last
    bits (a ``tensordot`` rounds differently, and the iterative solvers
    amplify that).
    """
    total = float(weights[0]) * stack[0, ...]
    for a in range(1, len(weights)):
        total = total + float(weights[a]) * stack[a, ...]
    return total


def _pairwise_update(mean, scatter, n1, other_mean, other_scatter, n2):
    """Mean and scatter of two merged row sets (Chan et al.'s pairwise update).

    With ``delta = other_mean - mean`` and ``n = n1 + n2``: the merged mean is
    ``mean + delta n2 / n`` and the merged scatter is
    ``scatter + other_scatter + delta delta^T n1 n2 / n``. Written with
    broadcasting only, so it serves NumPy and any array-API namespace alike.
    """
    n = n1 + n2
    delta = other_mean - mean
    outer = delta[:, None] * delta[None, :]
    return mean + delta * float(n2 / n), scatter + other_scatter + outer * float(n1 * n2 / n)


def _scatter_rows(values, rows, n_rows):
    """``values`` placed at ``rows`` of a zero array with ``n_rows`` rows."""
    out = np.zeros((n_rows, *values.shape[1:]))
    out[rows] = values
    return out


def _check_scatters(X, scatters, counts):
    """Raise for non-finite data or overflow, and for data whose moments underflow."""
    if not np.isfinite(scatters).all():
        _raise_non_finite(X)
    _check_no_underflow(X, scatters, counts)


#: Smallest mean square of a column around its mean that needs no second look
#: (2^-960, about 1e-289): below it the data may be too small for float64.
_MIN_SPREAD = 2.0**-960


def _check_no_underflow(X, scatters, counts):
    """Refuse data so small in magnitude that their second moments underflow.

    The spread is read off the scatter diagonals (free); only when it is tiny
    or zero is ``X`` scanned once more (:func:`check_magnitude`), to tell
    constant data, which the methods handle, from values whose squares vanished.
    """
    present = counts > 0
    # Only X's block: the joint scatters of [x, z] also hold covariates (or y) of normal size.
    diagonal = np.diagonal(scatters, axis1=1, axis2=2)[present, : X.shape[1]]
    spread = np.max(diagonal / counts[present][:, None], initial=0.0)
    if spread < _MIN_SPREAD:
        check_magnitude(X)


def _rough_shift(X):
    """Zero if ``X`` looks nearly centred, else the mean of its first rows.

    Sums around zero need no subtracted copy of the rows, and lose at most
    about one digit when no column's offset exceeds ``sqrt(_ZERO_SHIFT_BELOW)``
    times the largest spread; the first rows tell cheaply. A wrong guess only
    costs the second pass of :func:`_group_scatters`.
    """
    sample = X[:_MIN_BLOCK_ROWS]
    with np.errstate(over="ignore", invalid="ignore"):
        mean = sample.mean(axis=0)
        spread = sample.var(axis=0).max()
        centred = np.isfinite(mean).all() and (mean**2).max() <= _ZERO_SHIFT_BELOW * spread
    if centred or not np.isfinite(mean).all():
        return np.zeros(X.shape[1])
    return mean


def _block_sums(X, codes, groups, shifts, covariates=None, weights=None):
    """Shifted sums and Gram matrices of the rows of some groups, block by block.

    Each group's rows of a block are copied (a cache-sized copy), shifted and
    multiplied, except on the pooled route: with one common shift, no
    weights, a block of at least ``_MIN_BLOCK_ROWS`` rows and few rows
    outside its largest group (at most a fraction ``_POOLED_BELOW / width``),
    the Gram matrix of the whole shifted block is formed (without a copy when
    the shift is zero and ``X`` is C-ordered) and that group's is obtained by
    subtracting the others'. Its rounding error is then that of the pooled
    Gram, which ``scales`` records for the cancellation check. Weighted sums
    always take the per-group route.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    codes : ndarray of shape (n_samples,)
    groups : ndarray of shape (n_listed,)
        Codes of the groups to sum.
    shifts : ndarray of shape (width,) or (n_listed, width)
        The point ``s`` subtracted from the rows: common, or one per listed group.
    covariates : ndarray of shape (n_samples, n_covariates) or None
        Columns appended to each block of ``X``: the rows summed are then
        ``[x_i, z_i]`` and ``width = n_features + n_covariates``.
    weights : ndarray of shape (n_samples,) or None
        Weight of each row in both sums.

    Returns
    -------
    grams : ndarray of shape (n_listed, width, width)
        ``sum (x_i - s)(x_i - s)^T`` over the rows of each listed group.
    sums : ndarray of shape (n_listed, width)
        ``sum (x_i - s)`` over the same rows.
    scales : ndarray of shape (n_listed, width)
        Sum over blocks of the diagonal each group's Gram matrix was read
        from: its own, or the block's pooled Gram where it was subtracted.
        Equal to the diagonal of ``grams`` when no group was subtracted.
    """
    n = X.shape[0]
    p = X.shape[1] + (0 if covariates is None else covariates.shape[1])
    rows = max(_BLOCK_BYTES // (8 * p), _MIN_BLOCK_ROWS)
    ones = np.ones(min(rows, n))
    grams, sums = np.zeros((len(groups), p, p)), np.zeros((len(groups), p))
    scales = np.zeros((len(groups), p))
    pooled_allowed = weights is None and np.ndim(shifts) == 1
    shifts = [row if row.any() else None for row in np.broadcast_to(shifts, (len(groups), p))]
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, n, rows):
            block, block_codes = X[start : start + rows], codes[start : start + rows]
            if covariates is not None:
                block = np.concatenate((block, covariates[start : start + rows]), axis=1)
            m = block.shape[0]
            masks = [block_codes == a for a in groups]
            in_block = np.array([np.count_nonzero(mask) for mask in masks])
            largest = int(np.argmax(in_block))
            others = m - in_block[largest]
            # The pooled Gram must hold only listed rows (all of them, in the first pass).
            # Short blocks (small inputs, the tail) take the per-group route: cheap either
            # way, and small problems keep bit for bit the moments their recorded fits used.
            pooled = None
            if (
                pooled_allowed
                and m >= _MIN_BLOCK_ROWS
                and in_block.sum() == m
                and others * p <= _POOLED_BELOW * m
            ):
                # A copy only for a shift or strided rows (BLAS wants a contiguous block).
                if shifts[0] is None:
                    block = np.ascontiguousarray(block)
                else:
                    block = block - shifts[0]
                pooled, pooled_sum = block.T @ block, ones[:m] @ block
                scales[largest] += np.diagonal(pooled)
            for j in np.flatnonzero(in_block):
                if pooled is not None and j == largest:
                    continue
                rows_of_a = np.flatnonzero(masks[j])
                selected = block.take(rows_of_a, axis=0)
                if pooled is None and shifts[j] is not None:
                    selected -= shifts[j]
                if weights is None:
                    gram, total = selected.T @ selected, ones[: len(rows_of_a)] @ selected
                else:
                    w = weights[start + rows_of_a]
                    gram, total = (selected * w[:, None]).T @ selected, w @ selected
                grams[j] += gram
                sums[j] += total
                scales[j] += np.diagonal(gram)
                if pooled is not None:
                    pooled -= gram
                    pooled_sum -= total
            if pooled is not None:
                grams[largest] += pooled
                sums[largest] += pooled_sum
    return grams, sums, scales


# ------------------------------------------------------ array API (devices)
#: Bytes of (float64) rows per block of the device pass: bounds its copies of group rows.
_DEVICE_BLOCK_BYTES = 2**27


def _check_device_data(X, xp, device, name="X"):
    """Array-API ``X`` checked as :func:`check_data` checks NumPy input; float, on its device."""
    from sklearn.utils.validation import check_array

    return check_array(
        X, dtype=list(float_dtypes(xp, device)), input_name=name, ensure_all_finite=True
    )


def _device_group_scatters(X, codes, counts, covariates=None, weights=None):
    """As :func:`_group_scatters` for an array-API ``X``: computed in its namespace, on its device.

    Two passes over row blocks of ``X`` (in the device's most precise float
    type, so a float32 ``X`` is never copied whole): the group sums, as one
    product of each block with its one-hot codes, then the Gram matrix of
    each group's rows centred on the group mean (summing centred rows, no
    cancellation to guard against). The codes were computed on the host;
    each block's rows of a group reach the device as an index array.
    ``counts``, ``covariates`` and ``weights`` are NumPy (host) arrays.

    Returns
    -------
    means : array of shape (n_groups, width)
    scatters : array of shape (n_groups, width, width)
        In ``X``'s namespace and on its device; zero for groups without rows.
    """
    xp, device = device_namespace(X)
    dtype = float_dtypes(xp, device)[0]
    n, p = X.shape
    k = len(counts)
    Z = None if covariates is None else xp.asarray(covariates, dtype=dtype, device=device)
    w = None if weights is None else xp.asarray(weights, dtype=dtype, device=device)
    width = p + (0 if Z is None else Z.shape[1])
    rows = max(_DEVICE_BLOCK_BYTES // (8 * width), _MIN_BLOCK_ROWS)
    starts = range(0, n, rows)
    codes_on_device = xp.asarray(codes, device=device)
    labels = xp.arange(k, device=device)

    def block(start):
        stop = min(start + rows, n)
        B = xp.astype(X[start:stop, ...], dtype, copy=False)
        if Z is not None:
            B = xp.concat((B, Z[start:stop, ...]), axis=1)
        return B, stop

    sums = xp.zeros((k, width), dtype=dtype, device=device)
    for start in starts:
        B, stop = block(start)
        onehot = xp.astype(codes_on_device[start:stop, None] == labels[None, :], dtype)
        if w is not None:
            onehot = onehot * w[start:stop, None]
        sums = sums + xp.permute_dims(onehot, (1, 0)) @ B
    sizes = np.where(counts > 0, counts, 1).astype(np.float64)
    means = sums / xp.asarray(sizes, dtype=dtype, device=device)[:, None]

    grams = [None] * k
    for start in starts:
        B, stop = block(start)
        block_codes = codes[start:stop]
        for a in np.unique(block_codes):
            index = xp.asarray(np.flatnonzero(block_codes == a), device=device)
            centred = xp.take(B, index, axis=0) - means[int(a), :]
            left = centred if w is None else centred * xp.take(w[start:stop], index)[:, None]
            gram = xp.permute_dims(left, (1, 0)) @ centred
            grams[a] = gram if grams[a] is None else grams[a] + gram
    zero = xp.zeros((width, width), dtype=dtype, device=device)
    scatters = xp.stack([zero if g is None else g for g in grams])
    if not bool(xp.all(xp.isfinite(scatters))):
        raise ValueError(
            "X is too large in magnitude: its second moments overflow. "
            "Rescale it first (e.g. with sklearn.preprocessing.StandardScaler)."
        )
    return means, scatters


def _device_joint(moments):
    """:meth:`GroupMoments._joint` of moments held on a device."""
    xp, _ = moments._device()
    means = xp.concat((moments.means, moments.covariate_means), axis=1)
    top = xp.concat((moments.scatters, moments.cross_scatters), axis=2)
    bottom = xp.concat(
        (xp.permute_dims(moments.cross_scatters, (0, 2, 1)), moments.covariate_scatters), axis=2
    )
    return means, xp.concat((top, bottom), axis=1)


def _device_merge(first, second, groups):
    """:meth:`GroupMoments.merge` of moments held on one device: the update runs there."""
    if first._device() is None or second._device() is None:
        raise ValueError(
            "cannot merge moments held in NumPy with moments held in another array "
            "namespace; compute both from arrays of one namespace and device."
        )
    xp, device = first._device()
    if second._device()[1] != device:
        raise ValueError(
            f"cannot merge moments held on different devices ({device}, {second._device()[1]})."
        )
    dtype = first.means.dtype
    width = first.n_features + first.n_covariates
    counts = np.zeros(len(groups), dtype=np.result_type(first.counts, second.counts))
    means = [xp.zeros(width, dtype=dtype, device=device) for _ in groups]
    scatters = [xp.zeros((width, width), dtype=dtype, device=device) for _ in groups]
    for src in (first, second):
        idx = np.searchsorted(groups, src.groups)
        src_means, src_scatters = src._joint()
        for j, a in enumerate(idx):
            if src.counts[j] == 0:
                continue
            means[a], scatters[a] = _pairwise_update(
                means[a],
                scatters[a],
                counts[a],
                src_means[j, :],
                src_scatters[j, ...],
                src.counts[j],
            )
            counts[a] += src.counts[j]
    return GroupMoments._from_joint(
        groups, counts, xp.stack(means), xp.stack(scatters), first.n_features
    )


def _raise_non_finite(X):
    """Raise the ``ValueError`` for sums that are not finite.

    Its cause is NaN or infinities in ``X`` (scikit-learn's message) or, if
    there are none, overflow.
    """
    check_data(X, "X", accept_sparse=SPARSE_FORMATS)
    raise ValueError(
        "X is too large in magnitude: its second moments overflow float64. "
        "Rescale it first (e.g. with sklearn.preprocessing.StandardScaler)."
    )


def _block_moments(X_block, s_block, index, z_block=None, transform=None):
    """Moments of one row block (``None`` for an empty block).

    ``s_block`` None puts every row in one group; ``z_block`` holds the
    block's continuous attributes, if any; ``transform`` maps the block first.
    """
    X_block = np.asarray(X_block)
    if X_block.shape[0] == 0:
        return None
    if transform is not None:
        X_block = transform(np.asarray(X_block, dtype=np.float64))
    try:
        return GroupMoments.from_arrays(X_block, s_block, z_block)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"row block {index}: {exc}") from exc
