"""The fair power method's passes and state: row blocks, group sums, the noisy stream.

Private machinery of :class:`fairpca.streaming.StreamingFairPCA` (J. Lee,
H. Cho, S.-Y. Yun and C. Yun, "Fair Streaming Principal Component Analysis",
NeurIPS 2023): orthonormalisation and Rayleigh-Ritz helpers, the
unfair-subspace basis (:func:`unfair_directions`), re-iterable row blocks with
the one-pass group sums and the covariance products over them, and the
single-pass noisy power method's state (:class:`_Stream`) behind
``partial_fit``.
"""

from __future__ import annotations

import copy

import numpy as np

from fairpca._dask import _is_dask_collection
from fairpca._linalg import orthonormal_block, rayleigh_ritz
from fairpca._validation import largest_magnitude

#: Mean-difference directions shorter than this fraction of the centred data's
#: scale (or, without one, of the largest difference) are dropped.
_RANK_TOL = 1e-10

#: Unit roundoffs of the largest group-mean entry that a mean difference may be off
#: by per coordinate (as :func:`fairpca.mean_matching.mean_rounding`).
_MEAN_ROUNDING_ULPS = 8.0


# ---------------------------------------------------------------------------
# small pure helpers
# ---------------------------------------------------------------------------


def _orth(M):
    """Orthonormal basis of the columns of ``M`` (thin QR; columns of any rank)."""
    return np.linalg.qr(M)[0]


def _ritz(basis, image, n_keep):
    """Rayleigh-Ritz: the top ``n_keep`` Ritz pairs of an operator from ``image = A @ basis``.

    Returns
    -------
    values : ndarray of shape (n_keep,)
    vectors : ndarray of shape (p, n_keep)
    """
    values, small = rayleigh_ritz(basis, image)
    return values[:n_keep], basis @ small[:, :n_keep]


def unfair_directions(group_means, weights, covariance_directions, scale=None):
    r"""Orthonormal basis ``N`` of the unfair subspace.

    The mean differences ``mu_a - mu`` and the covariance-difference
    directions, orthonormalised together. The rank of the mean differences
    counts singular values above

    .. math::

        \max\bigl(10^{-10} s,\; 8 \varepsilon \sqrt{p} \max_a \|\mu_a\|_\infty\bigr),

    ``s`` the centred data's scale (``sqrt(trace Sigma)``; the largest singular
    value when not given) and the second term the rounding of the stored
    means, which grows with the data's offset; and it is at most ``k - 1``
    (the weighted differences sum to zero). A common offset of the rows thus
    adds no direction.

    Parameters
    ----------
    group_means : ndarray of shape (k, p)
    weights : ndarray of shape (k,)
        Group proportions.
    covariance_directions : ndarray of shape (p, m)
    scale : float or None, default=None
        ``sqrt(trace Sigma)`` of the data, in the units of ``group_means``.

    Returns
    -------
    N : ndarray of shape (p, r)
    """
    pooled = weights @ group_means
    differences = (group_means - pooled).T
    U, sv, _ = np.linalg.svd(differences, full_matrices=False)
    largest = float(sv.max(initial=0.0)) if scale is None else float(scale)
    noise = _MEAN_ROUNDING_ULPS * np.finfo(float).eps * np.sqrt(group_means.shape[1])
    noise *= float(np.abs(group_means).max(initial=0.0))
    threshold = max(_RANK_TOL * largest, noise, np.finfo(float).tiny)
    rank = min(int(np.sum(sv > threshold)), max(group_means.shape[0] - 1, 0))
    return _orth(np.hstack([U[:, :rank], covariance_directions]))


# ---------------------------------------------------------------------------
# passes over the rows
# ---------------------------------------------------------------------------


class _Blocks:
    """Re-iterable row blocks ``(X_block / scale, codes_block)`` of a NumPy or Dask array.

    ``scale`` is a power of two (division by it is exact): the power iterations
    form fourth moments, which would leave the float64 range for data far
    from unit size.
    """

    def __init__(self, X, codes, block_size):
        self.X, self.codes, self.block_size = X, codes, block_size
        self.n_passes, self.scale = 0, 1.0

    def __iter__(self):
        self.n_passes += 1
        if _is_dask_collection(self.X):
            start = 0
            for i in range(self.X.numblocks[0]):
                block = np.array(self.X.blocks[i, 0].compute(), dtype=np.float64)
                if not np.isfinite(block).all():
                    raise ValueError(f"X contains NaN or infinity (in row block {i}).")
                block /= self.scale  # our own copy: scaled in place
                yield block, self.codes[start : start + block.shape[0]]
                start += block.shape[0]
            return
        for start in range(0, self.X.shape[0], self.block_size):
            stop = start + self.block_size
            block = self.X[start:stop]
            yield (block if self.scale == 1 else block / self.scale), self.codes[start:stop]


def _group_sums(blocks, n_groups):
    """Counts, means, largest ``|x|``, largest deviation from the first row, ``trace Sigma``.

    One pass; the sums are shifted by the first row (no cancellation for data
    far from the origin).
    """
    counts, sums, shift, largest, spread = np.zeros(n_groups), None, None, 0.0, 0.0
    squares = 0.0
    for X, codes in blocks:
        if shift is None:
            shift = X[0].copy()
            sums = np.zeros((n_groups, X.shape[1]))
        largest = max(largest, largest_magnitude(X))
        np.add.at(counts, codes, 1.0)
        for a in np.unique(codes):
            deviations = X[codes == a] - shift
            spread = max(spread, float(deviations.max()), -float(deviations.min()))
            sums[a] += deviations.sum(axis=0)
            with np.errstate(over="ignore", invalid="ignore"):  # refused after the pass
                squares += float(np.einsum("ij,ij->", deviations, deviations))
    n = counts.sum()
    mean_deviation = sums.sum(axis=0) / n
    with np.errstate(over="ignore", invalid="ignore"):
        variance = max(squares / n - float(mean_deviation @ mean_deviation), 0.0)
    return counts, sums / counts[:, None] + shift, largest, spread, variance


def _group_products(blocks, group_means, inputs):
    """``Sigma_a @ U`` for every group ``a`` and every input block ``U`` in one pass.

    ``Sigma_a`` is group ``a``'s covariance about its mean (divided by its count).

    Parameters
    ----------
    blocks : _Blocks
    group_means : ndarray of shape (k, p)
    inputs : list of (list of ndarray of shape (p, q))
        ``inputs[a]``: the blocks ``U`` that ``Sigma_a`` multiplies.

    Returns
    -------
    outputs : list of (list of ndarray of shape (p, q))
    """
    outputs = [[np.zeros_like(U) for U in group] for group in inputs]
    counts = np.zeros(len(inputs))
    for X, codes in blocks:
        for a in np.unique(codes):
            centred = X[codes == a]  # a copy (boolean indexing), centred in place
            centred -= group_means[a]
            counts[a] += centred.shape[0]
            for U, out in zip(inputs[a], outputs[a], strict=True):
                out += centred.T @ (centred @ U)
    return [[out / counts[a] for out in group] for a, group in enumerate(outputs)]


def _pooled_product(blocks, mean, U):
    """``Sigma @ U`` with ``Sigma`` the covariance of all rows about ``mean`` (divided by n)."""
    out, n = np.zeros_like(U), 0
    for X, _ in blocks:
        centred = X - mean
        out += centred.T @ (centred @ U)
        n += centred.shape[0]
    return out / n


def _difference_operator(blocks, group_means, weights, W):
    """``A @ W`` with ``A = sum_a w_a (Sigma_a - Sigma_w)^2`` in two passes.

    ``Sigma_w = sum_a w_a Sigma_a``; expanding the square,
    ``A = sum_a w_a Sigma_a^2 - Sigma_w^2``: the first pass gives
    ``G_a = Sigma_a W`` and ``H = Sigma_w W``, the second ``Sigma_a G_a`` and
    ``Sigma_a H`` for every group.
    """
    k = len(weights)
    G = [out[0] for out in _group_products(blocks, group_means, [[W]] * k)]
    H = sum(w * G_a for w, G_a in zip(weights, G, strict=True))
    second = _group_products(blocks, group_means, [[G_a, H] for G_a in G])
    return sum(w * (SG - SH) for w, (SG, SH) in zip(weights, second, strict=True))


class _Stream:
    """State of the noisy power method: buffered rows, running group means, two bases."""

    def __init__(self, p, d, m, oversampling, block_size, rng, scale):
        self.d, self.m, self.block_size, self.scale = d, m, block_size, scale
        self.groups, self.counts, self.means = [], [], []
        self.buffer, self.buffer_codes = [], []
        self.rng = rng  # refills rank-deficient power blocks (orthonormal_block)
        self.W = _orth(rng.standard_normal((p, min(m + oversampling, p)))) if m else None
        self.V = _orth(rng.standard_normal((p, min(d + oversampling, p))))
        self.covariance_directions = np.zeros((p, 0))
        self.diff_values = np.zeros(0)
        self.components = self.N = self.values = None
        self.n_steps = self.n_unfair_steps = 0
        self.reference, self.varied = None, False  # the first row; whether any row differs
        self.grouped = True  # False: one group (label 0), no unfair directions (m == 0)

    @classmethod
    def from_fit(cls, est, rng):
        """A stream that continues from a fitted estimator (``partial_fit`` after ``fit``)."""
        grouped = est.groups_ is not None
        p, d = est.n_features_in_, est.n_components
        m = est.unfair_rank if grouped else 0
        largest = float(np.abs(est.group_means_).max(initial=0.0))
        scale = 2.0 ** np.round(np.log2(largest)) if largest > 0 else 1.0
        stream = cls(p, d, m, est.oversampling, est.block_size, rng, scale)
        stream.grouped = grouped
        labels = est.groups_ if grouped else [0]
        stream.groups = [g.item() if hasattr(g, "item") else g for g in labels]
        stream.counts = [float(c) for c in est.group_counts_]
        stream.means = list(est.group_means_ / scale)
        # The fitted bases lead the power blocks; the seeded columns fill them up.
        stream.V = _orth(np.hstack([est.components_.T, stream.V])[:, : stream.V.shape[1]])
        if m:
            W = est.covariance_directions_
            stream.W = _orth(np.hstack([W, stream.W])[:, : stream.W.shape[1]])
            stream.covariance_directions = W
            with np.errstate(over="ignore", under="ignore"):
                stream.diff_values = est.covariance_difference_ / scale**4
        n = float(np.sum(est.group_counts_))
        stream.components, stream.N = est.components_.T, est.unfair_subspace_
        stream.values = est.explained_variance_ * (max(n - 1, 1) / n) / scale**2
        stream.varied = True  # fit refuses constant data
        return stream

    def why_no_components(self):
        """Why no components exist yet (or that they do), in one sentence."""
        consumed = int(sum(self.counts))
        seen = sum(1 for c in self.counts if c > 0)
        buffered = self.n_buffered
        if consumed == 0:
            return (
                f"partial_fit has buffered {buffered} row(s), fewer than block_size="
                f"{self.block_size}: one power step is made per block_size rows and none "
                "has been made yet; pass more rows or set a smaller block_size."
            )
        waiting = (
            f" ({buffered} more row(s) are buffered until block_size={self.block_size} are reached)"
            if buffered
            else ""
        )
        if seen < self.min_groups:
            return (
                f"the {consumed} row(s) consumed so far hold {seen} group(s); components exist "
                f"once the consumed blocks hold two groups{waiting}."
            )
        if not self.varied:
            return (
                f"the {consumed} row(s) seen so far are all the same (X is constant): there "
                "is no variance to project."
            )
        return f"components exist ({consumed} rows consumed)."

    def _index(self, label):
        key = label.item() if hasattr(label, "item") else label
        if key not in self.groups:
            self.groups.append(key)
            self.counts.append(0.0)
            self.means.append(None)
        return self.groups.index(key)

    @property
    def min_groups(self):
        """Groups the consumed rows must hold before there are components."""
        return 2 if self.grouped else 1

    @property
    def n_buffered(self):
        return sum(rows.shape[0] for rows in self.buffer)

    def copy(self):
        """A copy that :meth:`update` can change without touching this one.

        Arrays are never changed in place (every update assigns new ones), so
        copying the lists that hold them is enough.
        """
        other = copy.copy(self)
        for name in ("groups", "counts", "means", "buffer", "buffer_codes"):
            setattr(other, name, list(getattr(self, name)))
        return other

    def update(self, X, labels, codes):
        """Buffer the rows; make one power step per ``block_size`` rows, in arrival order."""
        if self.reference is None:
            self.reference = X[0].copy()
        self.varied = self.varied or bool(np.any(X != self.reference))
        index = np.array([self._index(label) for label in labels])
        self.buffer.append(X)
        self.buffer_codes.append(index[codes])
        while self.n_buffered >= self.block_size:
            if len(self.buffer) == 1:
                rows, row_codes = self.buffer[0], self.buffer_codes[0]
            else:
                rows, row_codes = np.vstack(self.buffer), np.concatenate(self.buffer_codes)
            size = self.block_size
            # A copy of the remainder: a view would keep the whole consumed block alive.
            rest = slice(size, None)
            self.buffer = [rows[rest].copy()] if rows.shape[0] > size else []
            self.buffer_codes = [row_codes[rest]] if rows.shape[0] > size else []
            self._step(rows[:size], row_codes[:size])

    def _step(self, X, codes):
        """Running means over the consumed rows, then one noisy power step per subspace."""
        for a in np.unique(codes):
            rows = X[codes == a]
            # Sum deviations from the running mean (from the group's first row at the
            # start): no cancellation for data far from the origin.
            previous = rows[0] if self.means[a] is None else self.means[a]
            self.counts[a] += rows.shape[0]
            self.means[a] = previous + (rows - previous).sum(axis=0) / self.counts[a]
        seen = [a for a in range(len(self.groups)) if self.counts[a] > 0]
        if len(seen) < self.min_groups:
            return
        counts = np.array([self.counts[a] for a in seen])
        weights, means = counts / counts.sum(), np.array([self.means[a] for a in seen])
        local = np.searchsorted(seen, codes)
        if self.m and np.unique(codes).size == len(seen):
            # Every group has rows here: a noisy step on A = sum_a w_a Sigma_a^2 - Sigma_w^2.
            image = _difference_operator([(X, local)], means, weights, self.W)
            self.diff_values, self.covariance_directions = _ritz(self.W, image, self.m)
            self.W = _orth(image)
            self.n_unfair_steps += 1
        N = self.N = unfair_directions(means, weights, self.covariance_directions)
        # Inside the complement of N, also where the block is rank-deficient there.
        basis = orthonormal_block(self.V, self.rng, lambda B: B - N @ (N.T @ B))
        centred = X  # this block's rows are ours (a scaled copy) and used last here
        centred -= weights @ means
        image = centred.T @ (centred @ basis) / X.shape[0]
        image -= self.N @ (self.N.T @ image)
        self.values, self.components = _ritz(basis, image, self.d)
        self.V = _orth(image)
        self.n_steps += 1
