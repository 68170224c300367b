"""Per-group first and second moments, computed in one pass and mergeable.

Every covariance-based fair-PCA method (MinMaxLoss, Convex, Robust, Pareto)
needs only, for each group ``a``, the row count ``n_a``, the mean ``mu_a`` and
the centred scatter matrix ``S_a = sum_{i in a} (x_i - mu_a)(x_i - mu_a)^T``.
These are sums over rows, so they can be accumulated chunk by chunk and merged
with the pairwise update of Chan, Golub & LeVeque (1979), which stays accurate
for data with a large offset (unlike raw sums of squares).
"""

from dataclasses import dataclass

import numpy as np

from fairpca._validation import check_data, check_sensitive_features

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
    counts : ndarray of shape (n_groups,), dtype int64
        Rows in each group.
    means : ndarray of shape (n_groups, n_features)
        Group means.
    scatters : ndarray of shape (n_groups, n_features, n_features)
        ``scatters[a] = sum_{i in a} (x_i - means[a]) (x_i - means[a])^T``.
    """

    groups: np.ndarray
    counts: np.ndarray
    means: np.ndarray
    scatters: np.ndarray

    # ------------------------------------------------------------------ build
    @classmethod
    def from_arrays(cls, X, sensitive_features):
        """Compute the moments of in-memory data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric data without NaN or infinities.
        sensitive_features : array-like of shape (n_samples,)
            Group label of each row.

        Returns
        -------
        moments : GroupMoments
        """
        X = check_data(X, "X")
        groups, codes = check_sensitive_features(sensitive_features, X.shape[0])
        return cls._from_codes(X, codes, groups)

    @classmethod
    def _from_codes(cls, X, codes, groups):
        """Moments of validated float data whose rows carry integer group codes."""
        n_groups, n_features = len(groups), X.shape[1]
        counts = np.bincount(codes, minlength=n_groups).astype(np.int64)
        means = np.zeros((n_groups, n_features))
        scatters = np.zeros((n_groups, n_features, n_features))
        for a in range(n_groups):
            rows = X[codes == a]
            if rows.shape[0] == 0:
                continue
            means[a] = rows.mean(axis=0)
            # Centre before forming the product: exact for large offsets.
            centred = rows - means[a]
            with np.errstate(over="ignore", invalid="ignore"):
                scatters[a] = centred.T @ centred
        if not np.isfinite(scatters).all():
            raise ValueError(
                "X is too large in magnitude: its second moments overflow float64. "
                "Rescale it first (e.g. with sklearn.preprocessing.StandardScaler)."
            )
        return cls(groups, counts, means, scatters)

    @classmethod
    def from_chunks(cls, chunks):
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
    def from_dask(cls, X, sensitive_features):
        """Compute the moments of a Dask array in one distributed pass.

        Each row block is reduced to its own ``GroupMoments`` on the workers;
        the small per-block results are merged in a tree. The numbers equal
        those of :meth:`from_arrays` on the same data up to rounding.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features)
            Numeric data (rechunked to whole rows if needed).
        sensitive_features : dask.array.Array or array-like of shape (n_samples,)
            Group labels, chunked like ``X`` along the rows.

        Returns
        -------
        moments : GroupMoments

        Notes
        -----
        Requires the ``dask`` extra (``pip install "fairpca[dask]"``).
        """
        try:
            import dask
            import dask.array as da
        except ImportError as exc:  # pragma: no cover - depends on environment
            raise ImportError(
                'GroupMoments.from_dask needs dask: pip install "fairpca[dask]"'
            ) from exc
        X = da.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s).")
        X = X.rechunk({1: -1})
        if not isinstance(sensitive_features, da.Array):
            sensitive_features = da.from_array(np.asarray(sensitive_features))
        if sensitive_features.ndim != 1 or sensitive_features.shape[0] != X.shape[0]:
            raise ValueError(
                f"sensitive_features has shape {sensitive_features.shape} but X has "
                f"{X.shape[0]} rows; they must have the same length."
            )
        sensitive_features = sensitive_features.rechunk((X.chunks[0],))
        parts = [
            dask.delayed(cls.from_arrays)(xb, sb)
            for xb, sb in zip(
                X.to_delayed().ravel(), sensitive_features.to_delayed().ravel(), strict=True
            )
        ]
        while len(parts) > 1:
            parts = [
                dask.delayed(cls.merge)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                for i in range(0, len(parts), 2)
            ]
        (result,) = dask.compute(parts[0])
        return result

    # ------------------------------------------------------------------ merge
    def merge(self, other):
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
        if (self.groups.dtype.kind in "US") != (other.groups.dtype.kind in "US"):
            # numpy would silently turn the numbers into strings.
            raise TypeError(
                "cannot merge moments whose group labels have different types: "
                f"{self.groups.dtype} and {other.groups.dtype}."
            )
        groups = np.union1d(self.groups, other.groups)
        p = self.n_features
        counts = np.zeros(len(groups), dtype=np.int64)
        means = np.zeros((len(groups), p))
        scatters = np.zeros((len(groups), p, p))
        for src in (self, other):
            idx = np.searchsorted(groups, src.groups)
            for j, a in enumerate(idx):
                n1, n2 = counts[a], src.counts[j]
                if n2 == 0:
                    continue
                n = n1 + n2
                delta = src.means[j] - means[a]
                # Chan et al.'s pairwise update of mean and scatter.
                means[a] = means[a] + delta * (n2 / n)
                scatters[a] = scatters[a] + src.scatters[j] + np.outer(delta, delta) * (n1 * n2 / n)
                counts[a] = n
        return GroupMoments(groups, counts, means, scatters)

    # ------------------------------------------------------------ quantities
    @property
    def n_groups(self):
        """Number of groups."""
        return len(self.groups)

    @property
    def n_features(self):
        """Number of features."""
        return self.means.shape[1]

    @property
    def n_samples(self):
        """Total number of rows."""
        return int(self.counts.sum())

    @property
    def proportions(self):
        """Group masses ``n_a / n``, shape (n_groups,)."""
        return self.counts / self.n_samples

    @property
    def pooled_mean(self):
        """Mean of all rows, shape (n_features,)."""
        return self.proportions @ self.means

    def second_moment(self, center="pooled"):
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
        """
        counts = np.maximum(self.counts, 1)[:, None, None]
        covariances = self.scatters / counts
        if isinstance(center, str):
            if center == "group":
                return covariances
            if center != "pooled":
                raise ValueError(
                    f"center must be 'pooled', 'group', None or a vector, got {center!r}."
                )
            c = self.pooled_mean
        elif center is None:
            c = np.zeros(self.n_features)
        else:
            c = np.asarray(center, dtype=np.float64)
            if c.shape != (self.n_features,):
                raise ValueError(f"center must have shape ({self.n_features},), got {c.shape}.")
        shift = self.means - c
        return covariances + shift[:, :, None] * shift[:, None, :]

    def covariance(self):
        """Covariance of all rows around the pooled mean (divisor n), shape (p, p)."""
        return np.einsum("a,aij->ij", self.proportions, self.second_moment("pooled"))
