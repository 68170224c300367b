"""The RBF kernel and MMD² between groups: exact, by random features, and derivatives.

The one implementation of the biased MMD² (V-statistic) with the RBF kernel
``k(u, v) = exp(-gamma ||u - v||²)``, ``gamma = 1 / (2 sigma²)``, between
groups of projected rows ``z_i = V^T x_i`` (Gretton et al., JMLR 13, 2012), as
used by :func:`fairpca.metrics.mmd2` and :class:`fairpca.MMDFairPCA`:

* exact kernel sums of every row against every group, in symmetric tiles
  (memory ``O(tile² + n k d)``), and from them the Gram matrix of the groups'
  mean embeddings, which gives every constraint's MMD² (pairwise or one group
  against the rest) and its sampling floor;
* the gradient with respect to ``V`` in closed form (Lee et al., AAAI 2022,
  appendix G), written with ``d``-dimensional projected rows;
* Hessian-vector products and the dense ``(p d, p d)`` Hessian, with a cost
  model choosing between them;
* random Fourier features (Rahimi & Recht, NeurIPS 2007) at quasi-random
  frequencies (Avron et al., JMLR 17, 2016), with their gradient;
* the median bandwidth rule of Lee et al.

References
----------
.. [Gretton2012] A. Gretton, K. M. Borgwardt, M. J. Rasch, B. Schölkopf and
   A. Smola. "A Kernel Two-Sample Test." JMLR 13, 2012.
.. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
   "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
   Manifold." AAAI 2022.
.. [Rahimi2007] A. Rahimi and B. Recht. "Random Features for Large-Scale
   Kernel Machines." NeurIPS 2007.
.. [Avron2016] H. Avron, V. Sindhwani, J. Yang and M. W. Mahoney.
   "Quasi-Monte Carlo Feature Maps for Shift-Invariant Kernels." JMLR 17, 2016.
"""

from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np
from scipy.spatial.distance import cdist, pdist
from sklearn.utils import check_random_state

from fairpca._validation import _plain, check_allocation, check_width

_TILE_ROWS = 1024  # exact kernel sums in tiles of 1024 x 1024 (8 MiB: stays in cache)
_RFF_CHUNK_BYTES = 2**20  # 1 MiB of single-precision features per chunk: stays in cache
#: An evaluation with gradient keeps its features (8 m D bytes) for the gradient pass up to
#: this size instead of computing the sines and cosines again: they are most of its cost
#: (COMPAS, 5049 rows, D = 1024: 41 MB kept, and the trigonometric time halved).
_RFF_KEEP_BYTES = 2**26


# --------------------------------------------------------------------------
# Strata: the sets of rows whose groups must look alike
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Stratum:
    """Rows compared by one family of MMD constraints, sorted by group.

    Attributes
    ----------
    X : ndarray of shape (m, p)
        Centred rows, group by group.
    counts : ndarray of shape (k,)
        Rows of each group present (each at least 2).
    groups : ndarray of shape (k,)
        Their labels.
    name : str
        ``"all rows"``, ``"y=1"`` or ``"y=0"`` (for messages and logs).
    constraint : {"pairwise", "one-vs-rest"}, default="pairwise"
        ``"pairwise"``: one constraint per pair of groups, MMD² between them.
        ``"one-vs-rest"``: one per group, MMD² between it and all other rows
        of the stratum. With two groups both are the same single MMD².
    min_group_size : int, default=0
        Constraints with fewer rows than this on either side are *small*: they
        are judged on MMD² above its sampling floor (:func:`_sampling_floors`).
    """

    X: np.ndarray
    counts: np.ndarray
    groups: np.ndarray
    name: str
    constraint: str = "pairwise"
    min_group_size: int = 0

    @cached_property
    def codes(self):
        """Group index of each row, shape (m,)."""
        return np.repeat(np.arange(len(self.counts)), self.counts)

    @cached_property
    def onehot(self):
        """Group indicator matrix, shape (m, k)."""
        return (self.codes[:, None] == np.arange(len(self.counts))).astype(np.float64)

    @cached_property
    def starts(self):
        """Index of the first row of each group."""
        return np.concatenate([[0], np.cumsum(self.counts)[:-1]])

    @cached_property
    def row_weights(self):
        """``M[i, b] = C[g_i, b] / (n_{g_i} n_b)``: weight of the pairs (row i, group b)."""
        return _row_weights(self.pair_weights, self)

    @cached_property
    def mixtures(self):
        """The two sides of each constraint as mixtures of the groups' mean embeddings.

        Row ``c`` is ``r_c = u_c - v_c`` with ``u_c`` and ``v_c`` the row-count
        weights of the two sides (each sums to one), so that the constraint's
        MMD² is ``r_c^T G r_c`` for the Gram matrix ``G`` of the groups' mean
        embeddings. Pairwise: ``e_a - e_b`` for ``a < b``; one-vs-rest:
        ``e_a - v_a`` with ``v_ab = n_b / (m - n_a)`` for ``b != a``.
        """
        k = len(self.counts)
        if self.constraint == "pairwise":
            rows, cols = np.triu_indices(k, k=1)
            R = np.zeros((len(rows), k))
            R[np.arange(len(rows)), rows] = 1.0
            R[np.arange(len(rows)), cols] = -1.0
            return R
        rest = np.tile(self.counts.astype(np.float64), (k, 1))
        np.fill_diagonal(rest, 0.0)
        rest /= rest.sum(axis=1, keepdims=True)
        return np.eye(k) - rest

    @cached_property
    def pair_weights(self):
        """``C = R^T R`` with ``penalty = sum_ab C_ab S_ab / (n_a n_b)``, S = kernel sums.

        The penalty is the sum over constraints of MMD² (``R`` is
        :attr:`mixtures`); for pairwise constraints ``C = k I - 1 1^T``.
        """
        return self.mixtures.T @ self.mixtures

    @cached_property
    def labels(self):
        """A name for each constraint: ``"a vs b"`` or ``"a vs rest"``."""
        names = [repr(_plain(g)) for g in self.groups]
        if self.constraint == "pairwise":
            rows, cols = np.triu_indices(len(names), k=1)
            return [f"{names[a]} vs {names[b]}" for a, b in zip(rows, cols, strict=True)]
        return [f"{name} vs rest" for name in names]

    @cached_property
    def sides(self):
        """Rows on the two sides of each constraint, shape (constraints, 2)."""
        R = self.mixtures
        return np.column_stack([(R > 0) @ self.counts, (R < 0) @ self.counts])

    @cached_property
    def floor_terms(self):
        """``(m, N, coef)`` of each constraint's sampling floor (:func:`_sampling_floors`).

        ``m_c`` holds the row counts of the groups on either side of constraint
        ``c`` (0 elsewhere), ``N_c = sum m_c`` its rows and
        ``coef_c = 1 / n_A + 1 / n_B``; the floor is
        ``coef_c (1 - (m_c^T G m_c - N_c) / (N_c (N_c - 1)))``.
        """
        m = (self.mixtures != 0) * self.counts.astype(np.float64)
        n_a, n_b = self.sides.T
        return m, m.sum(axis=1), 1.0 / n_a + 1.0 / n_b

    @cached_property
    def small(self):
        """Whether each constraint has fewer than ``min_group_size`` rows on a side."""
        return self.sides.min(axis=1) < self.min_group_size


def _row_weights(C, stratum):
    """``M[i, b] = C[g_i, b] / (n_{g_i} n_b)`` for group weights ``C`` (k, k)."""
    return (C / np.outer(stratum.counts, stratum.counts))[stratum.codes]


def _constraint_values(gram, stratum):
    """MMD² of each constraint of ``stratum`` from the Gram matrix of mean embeddings.

    ``||mu_A - mu_B||² = G_AA + G_BB - 2 G_AB`` with the two sides' embeddings
    mixtures of the groups' (:attr:`_Stratum.mixtures`); clipped at 0, where
    rounding can push it to about -1e-16.
    """
    if stratum.constraint == "pairwise":
        return _pairwise_from_gram(gram)
    rest = np.eye(len(gram)) - stratum.mixtures
    # Row by row r_a^T G r_a, as one matrix product: a three-operand einsum loops k³ in C.
    rest_gram = np.einsum("ab,ab->a", rest @ gram, rest)
    values = np.diag(gram) + rest_gram - 2.0 * np.einsum("ab,ab->a", gram, rest)
    return np.maximum(values, 0.0)


def _sampling_floors(gram, stratum):
    """MMD² each constraint has on average when its rows are split at random.

    For sides of ``n_A`` and ``n_B`` rows, a uniformly random split of those
    ``N = n_A + n_B`` rows gives a biased MMD² of mean
    ``(1 / n_A + 1 / n_B) (1 - kbar)``, ``kbar`` the mean kernel value
    between distinct rows among the ``N``: the self-pairs ``k(x, x) = 1``
    of the V-statistic do not cancel. This floor is what the statistic
    shows between two samples of one distribution, so a ``tau`` below it can
    only be met by a projection on which all rows look alike.
    """
    m, n_rows, coef = stratum.floor_terms
    # m_c^T G m_c is the sum of the kernel over all pairs of the N_c rows, self-pairs included.
    pair_sums = np.einsum("cb,cb->c", m @ gram, m)
    kbar = (pair_sums - n_rows) / (n_rows * (n_rows - 1.0))
    return coef * (1.0 - kbar)


def _smooth_hinge(x, width):
    """``max(0, x)`` smoothed over ``[0, width]`` (Huber), and its derivatives in x and width."""
    inside = np.clip(x, 0.0, width)
    value = np.where(x > width, x - 0.5 * width, 0.5 * inside**2 / width)
    return value, inside / width, -0.5 * (inside / width) ** 2


def _penalty_weights(gram, stratum, weights=None):
    """The stratum's penalty and the weights ``C`` of its gradient, from the Gram matrix.

    The penalty is ``sum_c w_c h_c = sum_ab C_ab G_ab`` over the constraints
    ``c``, with ``C = R^T diag(w) R`` (``R`` is :attr:`_Stratum.mixtures`;
    ``w = 1``, None, gives the fixed :attr:`_Stratum.pair_weights`). A small
    constraint contributes instead ``w_c phi(h_c - floor_c)``, ``phi`` the
    smooth hinge over ``[0, floor_c / 10]`` (:func:`_smooth_hinge`; the
    floor moves with ``V``, so the derivative follows it through the width
    too): only MMD² above its sampling floor is penalised, as pushing a few
    rows' MMD² below chance would fit their noise at the cost of variance.
    Both ``h_c`` and the floor are linear in ``G`` (``h_c = r_c^T G r_c``; the
    floor through ``kbar``), so the gradient is that of ``sum_ab C_ab G_ab``
    with ``C`` the slopes' combination of their weight matrices, and the
    kernel-sum formulas apply unchanged.
    """
    small = stratum.small
    if weights is None and not small.any():
        return float(np.sum(stratum.pair_weights * gram)), stratum.pair_weights
    R = stratum.mixtures
    w = np.ones(len(R)) if weights is None else weights
    values = _constraint_values(gram, stratum)
    if not small.any():
        C = (R.T * w) @ R
        return float(np.sum(C * gram)), C
    floors = _sampling_floors(gram, stratum)
    width = 0.1 * floors + np.finfo(np.float64).tiny
    hinge, slope, width_slope = _smooth_hinge(values - floors, width)
    penalty = float(w[~small] @ values[~small] + w[small] @ hinge[small])
    # h_c = r_c^T G r_c and d floor_c / dG = -coef_c m_c m_c^T / (N_c (N_c - 1)); the floor
    # enters the hinge as -floor_c in its argument and 0.1 floor_c as its width.
    m, n_rows, coef = stratum.floor_terms
    h_weight = np.where(small, w * slope, w)
    floor_weight = np.where(small, w * (slope - 0.1 * width_slope), 0.0)
    floor_weight *= coef / (n_rows * (n_rows - 1.0))
    C = (R.T * h_weight) @ R + (m.T * floor_weight) @ m
    return penalty, C


def _subsample_positions(all_counts, max_rows, rng):
    """A stratified random subsample of about ``max_rows`` rows in all.

    Every group of every family keeps the same fraction of its rows (at least
    2 of them); the draws depend only on the group sizes and ``rng``, so in-memory
    and Dask fits pick the same rows.

    Parameters
    ----------
    all_counts : list of ndarray of shape (k,)
        Rows of each group, per family of constraints.
    max_rows : int or None
        Rows to keep in all; None keeps every row.
    rng : RandomState

    Returns
    -------
    positions : list of list of ndarray, or None
        ``positions[i][a]``: sorted positions, among the rows of group ``a`` of
        family ``i`` in their order, of the rows kept; None when every row is kept.
    """
    total = sum(int(counts.sum()) for counts in all_counts)
    if max_rows is None or total <= max_rows:
        return None
    fraction = max_rows / total
    positions = []
    for counts in all_counts:
        keep = np.minimum(counts, np.maximum(2, np.floor(fraction * counts))).astype(int)
        positions.append(
            [
                np.sort(rng.choice(n, size=m, replace=False))
                for n, m in zip(counts, keep, strict=True)
            ]
        )
    return positions


def _subsample(strata, max_rows, rng):
    """Keep about ``max_rows`` rows in all: the same random fraction of every group.

    Every group keeps at least 2 rows; strata are returned unchanged when they
    hold at most ``max_rows`` rows.
    """
    picks = _subsample_positions([stratum.counts for stratum in strata], max_rows, rng)
    if picks is None:
        return strata
    subsets = []
    for stratum, positions in zip(strata, picks, strict=True):
        rows = np.concatenate(
            [start + pos for start, pos in zip(stratum.starts, positions, strict=True)]
        )
        kept = np.array([len(pos) for pos in positions])
        subsets.append(replace(stratum, X=stratum.X[rows], counts=kept))
    return subsets


def _mean_embedding_gram(sums, counts):
    """``<embedding a, embedding b>`` from the kernel sums ``S_ab`` of pairs of groups."""
    return (sums + sums.T) / (2.0 * np.outer(counts, counts))


def _pairwise_from_gram(gram):
    """Pairwise squared distances ``G_aa + G_bb - 2 G_ab`` of mean embeddings (a < b)."""
    rows, cols = np.triu_indices(len(gram), k=1)
    values = gram[rows, rows] + gram[cols, cols] - 2.0 * gram[rows, cols]
    return np.maximum(values, 0.0)


# --------------------------------------------------------------------------
# Exact MMD² and its gradient
# --------------------------------------------------------------------------


def _kernel_group_sums(Z, onehot, gamma, tile_rows=_TILE_ROWS, with_moments=True):
    """Kernel sums of every row against every group, in symmetric tiles.

    With ``k_ij = exp(-gamma ||z_i - z_j||^2)`` this returns, for each row ``i``
    and group ``b``, ``U[i, b] = sum_{j in b} k_ij`` and (if ``with_moments``)
    ``T[i, b] = sum_{j in b} k_ij z_j``. Only tiles on and above the diagonal
    are evaluated (the kernel matrix is symmetric), so each pair costs one
    ``exp``; memory is ``O(tile_rows² + n k d)``.

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        Projected rows.
    onehot : ndarray of shape (m, k)
        Group indicator of each row.
    gamma : float
        ``1 / (2 sigma²)``.
    tile_rows : int, default=1024
        Rows per tile.
    with_moments : bool, default=True
        Whether to compute ``T``.

    Returns
    -------
    U : ndarray of shape (m, k)
    T : ndarray of shape (m, k, d) or None
    """
    m, d = Z.shape
    n_groups = onehot.shape[1]
    if with_moments:
        E = np.hstack([onehot, (onehot[:, :, None] * Z[:, None, :]).reshape(m, n_groups * d)])
    else:
        E = onehot
    R = np.zeros_like(E)
    for i0 in range(0, m, tile_rows):
        i1 = min(i0 + tile_rows, m)
        for j0 in range(i0, m, tile_rows):
            j1 = min(j0 + tile_rows, m)
            K = cdist(Z[i0:i1], Z[j0:j1], "sqeuclidean")
            K *= -gamma
            np.exp(K, out=K)
            R[i0:i1] += K @ E[j0:j1]
            if j0 != i0:
                R[j0:j1] += K.T @ E[i0:i1]
    U = R[:, :n_groups]
    T = R[:, n_groups:].reshape(m, n_groups, d) if with_moments else None
    return U, T


def _exact_terms(V, stratum, gamma, with_grad=True, weights=None):
    """Exact biased MMD² terms of one stratum projected by ``V``.

    Returns the penalty (the sum over the stratum's constraints of MMD²), the
    Gram matrix ``G`` of the groups' mean embeddings (every constraint's MMD²
    follows from it, :func:`_constraint_values`) and the Euclidean gradient of
    the penalty with respect to ``V``.

    With ``M_ij = C_{g_i g_j} / (n_{g_i} n_{g_j})`` (see ``_Stratum.pair_weights``)
    the penalty is ``sum_ij M_ij k_ij``, and since
    ``d k_ij / dV = -2 gamma k_ij (x_i - x_j)(z_i - z_j)^T`` and ``M`` is symmetric,

    ``grad = -4 gamma X^T G``,  ``G_i = sum_j M_ij k_ij (z_i - z_j)``,

    the appendix-G formula with the ``p x p`` products replaced by
    ``d``-dimensional ones (``weights``: the constraints' weights, see
    :func:`_penalty_weights`). One tiled pass over the pairs of rows serves every
    group and constraint: its cost grows with ``k`` only through the
    ``k (1 + d)`` columns the kernel tiles multiply.
    """
    counts = stratum.counts
    Z = stratum.X @ V
    U, T = _kernel_group_sums(Z, stratum.onehot, gamma, with_moments=with_grad)
    sums = np.add.reduceat(U, stratum.starts, axis=0)  # S_ab = sum_{i in a, j in b} k_ij
    gram = _mean_embedding_gram(sums, counts)
    penalty, C = _penalty_weights(gram, stratum, weights)
    if not with_grad:
        return penalty, gram, None
    W = stratum.row_weights if C is stratum.pair_weights else _row_weights(C, stratum)
    G = Z * np.einsum("ib,ib->i", W, U)[:, None] - np.einsum("ib,ibd->id", W, T)
    return penalty, gram, -4.0 * gamma * (stratum.X.T @ G)


class _WeightedKernel(NamedTuple):
    """What every Hessian product of one stratum's penalty at ``V`` shares (``m`` rows).

    Attributes
    ----------
    Z : ndarray of shape (m, d)
        Projected rows ``X V``.
    Kw : ndarray of shape (m, m)
        ``Kw_ij = M_ij k_ij``, the pair weights times the kernel.
    row_sums : ndarray of shape (m,)
        ``Kw 1``.
    KZ : ndarray of shape (m, d)
        ``Kw Z``.
    KZZ : ndarray of shape (m, d, d)
        ``sum_j Kw_ij z_j z_j^T``.
    """

    Z: np.ndarray
    Kw: np.ndarray
    row_sums: np.ndarray
    KZ: np.ndarray
    KZZ: np.ndarray


def _weighted_kernel(V, stratum, gamma, C=None):
    """The :class:`_WeightedKernel` of ``stratum`` at ``V`` for group weights ``C``.

    ``C`` defaults to :attr:`_Stratum.pair_weights` (every constraint weighted 1).
    """
    Z = stratum.X @ V
    m, d = Z.shape
    K = cdist(Z, Z, "sqeuclidean")
    K *= -gamma
    np.exp(K, out=K)
    C = stratum.pair_weights if C is None else C
    weights = C / np.outer(stratum.counts, stratum.counts)
    K *= weights[np.ix_(stratum.codes, stratum.codes)]
    KZ = K @ np.column_stack([np.ones(m), Z, (Z[:, :, None] * Z[:, None, :]).reshape(m, d * d)])
    return _WeightedKernel(Z, K, KZ[:, 0], KZ[:, 1 : 1 + d], KZ[:, 1 + d :].reshape(m, d, d))


def _exact_hess_vec(kernel, stratum, gamma, Xi):
    """Euclidean Hessian of the stratum's penalty at ``V`` applied to ``Xi`` (p, d).

    Differentiating ``grad = -4 gamma X^T G`` with ``G_i = sum_j Kw_ij (z_i - z_j)``
    along ``Xi`` (``w_i = Xi^T x_i``, ``d k_ij = -2 gamma k_ij (z_i - z_j).(w_i - w_j)``):

    ``dG_i = sum_j Kw_ij [(w_i - w_j) - 2 gamma ((z_i - z_j).(w_i - w_j)) (z_i - z_j)]``.

    With ``c_i = z_i.w_i`` and ``Kw`` symmetric, ``B_ij = Kw_ij (z_i - z_j).(w_i - w_j)``
    is ``T_ij + Kw_ij c_i - Kw_ji z_j.w_i`` with ``T_ij = Kw_ij (c_j - z_i.w_j)``.
    The parts that depend on ``V`` alone (``Kw 1``, ``Kw Z``,
    ``sum_j Kw_ij z_j z_j^T``) are in ``kernel``, so that ``sum_j B_ij`` and
    ``sum_j B_ij z_j`` need only ``T``, its row sums and ``T Z``: with
    ``Kw W`` about ``m² (3 d + 3)`` flops per product.

    Parameters
    ----------
    kernel : _WeightedKernel
        At ``V``.
    stratum : _Stratum
    gamma : float
    Xi : ndarray of shape (p, d)

    Returns
    -------
    ndarray of shape (p, d)
    """
    Z, Kw, row_sums, KZ, KZZ = kernel
    W = stratum.X @ Xi
    c = np.einsum("id,id->i", Z, W)
    T = Z @ W.T
    np.subtract(c, T, out=T)
    T *= Kw
    B_rows = c * row_sums + T.sum(axis=1) - np.einsum("id,id->i", W, KZ)
    BZ = c[:, None] * KZ + T @ Z - np.einsum("ide,ie->id", KZZ, W)
    dG = W * row_sums[:, None] - Kw @ W - 2.0 * gamma * (Z * B_rows[:, None] - BZ)
    return -4.0 * gamma * (stratum.X.T @ dG)


def _exact_hessian(kernel, stratum, gamma):
    """The Euclidean Hessian of the stratum's penalty as a ``(p d, p d)`` matrix.

    The operator of :func:`_exact_hess_vec` as a matrix (row-major ``vec`` of
    ``p x d`` matrices), formed the cheaper of two ways (:func:`_hessian_costs`):
    by rows when the rows outnumber the features, by pairs of output
    dimensions when the features are many.
    """
    m, p = stratum.X.shape
    by_rows, by_pairs = _hessian_costs(m, p, kernel.Z.shape[1])
    if by_pairs < by_rows:
        return _hessian_by_pairs(kernel, stratum, gamma)
    return _hessian_by_rows(kernel, stratum, gamma)


def _hessian_costs(m, p, d):
    """Multiply-adds of :func:`_hessian_by_rows` and :func:`_hessian_by_pairs`.

    Elementwise passes over ``m x m`` arrays count as 8 (they are not
    matrix-product flops); these counts order the two as timed.
    """
    by_rows = m * m * p * (d + 1) + 3.0 * m * (p * d) ** 2
    by_pairs = d * (d + 1) / 2 * (m * m * (p + 8) + m * p * p)
    return by_rows, by_pairs


def _hessian_by_rows(kernel, stratum, gamma):
    """:func:`_exact_hessian` from products of ``m x p d`` matrices (for ``m`` large against ``p``).

    Entry ``((a, b), (c, e))`` (row-major ``vec`` of ``p x d`` matrices) of the
    operator in :func:`_exact_hess_vec` is, with ``dx = x_i - x_j``,
    ``dz = z_i - z_j`` and sums over all ordered pairs,

    ``-2 gamma sum_ij Kw_ij dx_a dx_c (delta_be - 2 gamma dz_b dz_e)``.

    The first part is ``L (x) I`` with the Laplacian form
    ``L = sum_ij Kw_ij dx dx^T = 2 X^T (diag(Kw 1) - Kw) X``. For the second,
    ``dx (x) dz = Y_i + Y_j - P_ij - P_ji`` with ``Y_i = x_i (x) z_i`` and
    ``P_ij = x_i (x) z_j``; expanding the outer product and using the symmetry
    of ``Kw`` leaves six families of sums, each a product of ``m``-row
    matrices (``Y^T Kw Y`` and its index transpose, ``sum_i r_i Y_i Y_i^T``,
    ``sum_i x_i x_i^T (x) (Kw (z (x) z))_i`` and two ``Y^T``-products), so the
    matrix costs ``O(m² p d + m p² d²)``.
    """
    Z, Kw, r, KZ, KZZ = kernel
    X = stratum.X
    m, p = X.shape
    d = Z.shape[1]
    KX = Kw @ X
    laplacian = 2.0 * (X.T @ (X * r[:, None]) - X.T @ KX)
    Y = (X[:, :, None] * Z[:, None, :]).reshape(m, p * d)
    YKY = Y.T @ (Kw @ Y)
    XQ = (X.T @ (X[:, :, None] * KZZ.reshape(m, 1, d * d)).reshape(m, p * d * d)).reshape(
        p, p, d, d
    )
    cross = ((X[:, :, None] * KZ[:, None, :]) + (KX[:, :, None] * Z[:, None, :])).reshape(m, p * d)
    # sum_i r_i Y_i Y_i^T is symmetric, so it and the cross terms Y^T cross share one
    # product: (A - 2 B) + (A - 2 B)^T = 2 A - 2 (B + B^T).
    mixed = Y.T @ (Y * r[:, None] - 2.0 * cross)
    swapped = YKY.reshape(p, d, p, d).transpose(0, 3, 2, 1).reshape(p * d, p * d)
    second = (
        2.0 * (YKY + XQ.transpose(0, 2, 1, 3).reshape(p * d, p * d))
        + mixed
        + mixed.T
        + swapped
        + swapped.T
    )
    return -2.0 * gamma * np.kron(laplacian, np.eye(d)) + 4.0 * gamma**2 * second


def _hessian_by_pairs(kernel, stratum, gamma, tile_rows=_TILE_ROWS):
    """:func:`_exact_hessian` one pair of output dimensions at a time (for ``p`` large).

    The penalty depends on ``V`` only through ``Z = X V``. Its second
    derivatives in ``Z`` are, for ``j != i`` and output dimensions ``b, e``,
    ``N^{be}_ij = 4 gamma Kw_ij (delta_be - 2 gamma u_ijb u_ije)`` with
    ``u_ij = z_i - z_j``, and on the diagonal ``-sum_{j != i} N^{be}_ij``: for
    each ``(b, e)`` a graph Laplacian ``L^{be} = N^{be} - diag(N^{be} 1)``. So
    entry ``((a, b), (c, e))`` (row-major ``vec`` of ``p x d`` matrices) is
    ``(X^T L^{be} X)_{ac}``. Since ``L^{be} = L^{eb}``, ``d (d + 1) / 2``
    blocks are formed, each from two ``m``-row matrix products, in tiles of
    ``tile_rows`` rows of ``L`` (memory ``O(tile_rows m + (p d)²)``): about
    ``d² (m² p + m p²) / 2`` multiply-adds in all.
    """
    Z, Kw = kernel.Z, kernel.Kw
    X = stratum.X
    m, p = X.shape
    d = Z.shape[1]
    H = np.zeros((p, d, p, d))
    for b in range(d):
        for e in range(b, d):
            block = np.zeros((p, p))
            for i0 in range(0, m, tile_rows):
                i1 = min(i0 + tile_rows, m)
                L = Z[i0:i1, b, None] - Z[:, b]
                L *= Z[i0:i1, e, None] - Z[:, e]
                L *= -2.0 * gamma
                if b == e:
                    L += 1.0
                L *= Kw[i0:i1]
                rows = np.arange(i1 - i0)
                L[rows, i0 + rows] -= L.sum(axis=1)
                block += X[i0:i1].T @ (L @ X)
            block *= 4.0 * gamma
            H[:, b, :, e] = block
            if e != b:
                H[:, e, :, b] = block
    return H.reshape(p * d, p * d)


def _products_per_dense_hessian(m, p, d, factorised=False):
    """How many :func:`_exact_hess_vec` calls cost as much as one :func:`_exact_hessian`.

    The matrix costs the smaller count of :func:`_hessian_costs`, a product
    ``m² (3 d + 3)`` multiply-adds. A product makes elementwise passes over
    ``m x m`` arrays, so each of its flops costs about 2.5 times more, and
    about 4.5 times beyond ``_TILE_ROWS`` rows (8 MiB), where those arrays
    leave the cache. With ``factorised``, add the Cholesky factor and inverse
    of a ``(p d, p d)`` matrix, ``(p d)³ / 2`` multiply-adds at the same speed.
    """
    cost = min(_hessian_costs(m, p, d)) + (0.5 * (p * d) ** 3 if factorised else 0.0)
    return cost / (m * m * (3 * d + 3)) / (4.5 if m > _TILE_ROWS else 2.5)


# --------------------------------------------------------------------------
# Random Fourier features
# --------------------------------------------------------------------------


def _rff_blocks(Z, freq, bounds, a):
    """Row ranges of group ``a`` with the cos and sin features of its rows, in chunks.

    ``Z`` and ``freq`` are single precision; each chunk holds about
    ``_RFF_CHUNK_BYTES`` of features (it stays in cache).
    """
    chunk = max(1, _RFF_CHUNK_BYTES // (4 * freq.shape[1]))
    for lo in range(bounds[a], bounds[a + 1], chunk):
        hi = min(lo + chunk, bounds[a + 1])
        cos = Z[lo:hi] @ freq
        sin = np.sin(cos)
        np.cos(cos, out=cos)
        yield lo, hi, cos, sin


def _rff_features(X, frequencies):
    """The paired random Fourier features of rows ``X`` as a matrix, shape (m, 2 D), in double.

    ``phi(x) = [cos(w_1^T x), ..., cos(w_D^T x), sin(w_1^T x), ..., sin(w_D^T x)] / sqrt(D)``
    for the ``D`` columns ``w_l`` of ``frequencies`` (shape (p, D), e.g. from
    :func:`_qmc_frequencies`): the construction of :func:`_rff_terms` as an
    explicit feature map, with ``phi(x)^T phi(x') = mean_l cos(w_l^T (x - x'))``
    an estimate of the RBF kernel. The kernel is shift-invariant: centre ``X``
    (on any fixed point) first when its offset is large, to keep the angles small.
    """
    D = frequencies.shape[1]
    angles = X @ frequencies
    features = np.empty((X.shape[0], 2 * D))
    np.cos(angles, out=features[:, :D])
    np.sin(angles, out=features[:, D:])
    features *= 1.0 / np.sqrt(D)
    return features


def _rff_means(Z, counts, freq, keep=False):
    """Mean cos and sin features ``e_a`` of each group, shape (k, 2, D), in double.

    With ``keep``, also the list of ``(a, lo, hi, cos, sin)`` chunks of
    :func:`_rff_blocks` (else None), for a gradient pass over the same features.
    """
    k = len(counts)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    means = np.zeros((k, 2, freq.shape[1]))
    kept = [] if keep else None
    for a in range(k):
        for lo, hi, cos, sin in _rff_blocks(Z, freq, bounds, a):
            means[a, 0] += cos.sum(axis=0, dtype=np.float64)
            means[a, 1] += sin.sum(axis=0, dtype=np.float64)
            if keep:
                kept.append((a, lo, hi, cos, sin))
        means[a] /= counts[a]
    return (means, kept) if keep else means


def _rff_pairwise(means):
    """Estimates of MMD² of each pair of groups (a < b) at each frequency, shape (pairs, D)."""
    rows, cols = np.triu_indices(len(means), k=1)
    return ((means[rows] - means[cols]) ** 2).sum(axis=1)


def _rff_terms(V, stratum, frequencies, with_grad=True, weights=None):
    """MMD² terms of one stratum with paired random Fourier features.

    With frequencies ``w_1..w_D ~ N(0, I / sigma²)`` the features
    ``phi(z) = [cos(w_l^T z), sin(w_l^T z)]_l / sqrt(D)`` satisfy
    ``phi(z)^T phi(z') = mean_l cos(w_l^T (z - z'))``, an unbiased estimate of
    the RBF kernel. The MMD² of a pair of groups becomes the squared distance
    ``||e_a - e_b||² / D`` of the groups' mean feature vectors ``e_a``, which is
    the mean over frequencies of ``|psi_a(w_l) - psi_b(w_l)|²`` (``psi`` the
    empirical characteristic functions): an unbiased estimate of the exact
    V-statistic. The Gram matrix ``e_a^T e_b / D`` of the mean features
    stands in for that of the mean embeddings (:func:`_exact_terms`).

    This is the one random-feature construction of the package: a cos/sin
    pair per frequency carries no random phase, whose extra term
    ``cos(w^T (z + z') + 2 b)`` the single-cosine features ``sqrt(2) cos(w^T z + b)``
    add to every kernel estimate, and quasi-random frequencies
    (:func:`_qmc_frequencies`) cover the spectral measure evenly; together
    they have a far lower variance at the same ``D``.

    Trigonometric functions are evaluated in single precision (rounding
    ~1e-7, far below the random-feature error) and accumulated in double.

    Returns
    -------
    penalty : float
    gram : ndarray of shape (k, k)
    grad : ndarray of shape (p, d) or None
    """
    counts = stratum.counts
    k = len(counts)
    D = frequencies.shape[1]
    X = stratum.X
    Z = (X @ V).astype(np.float32)
    freq = frequencies.astype(np.float32)
    keep = with_grad and 8 * Z.shape[0] * D <= _RFF_KEEP_BYTES
    means, kept = (
        _rff_means(Z, counts, freq, keep=True) if keep else (_rff_means(Z, counts, freq), None)
    )
    flat = means.reshape(k, 2 * D)
    gram = (flat @ flat.T) / D
    penalty, C = _penalty_weights(gram, stratum, weights)
    if not with_grad:
        return penalty, gram, None
    # d penalty / d e_a = (2 / D) sum_b C_ab e_b; chain rule through
    # d cos(w^T z) / dz = -sin(w^T z) w and d sin(w^T z) / dz = cos(w^T z) w.
    coef = ((2.0 / D) * np.einsum("ab,bsl->asl", C, means)).astype(np.float32)
    grad = np.zeros_like(V)
    if kept is None:
        bounds = np.concatenate([[0], np.cumsum(counts)])
        kept = ((a, *block) for a in range(k) for block in _rff_blocks(Z, freq, bounds, a))
    for a, lo, hi, cos, sin in kept:
        cos *= coef[a, 1]
        sin *= coef[a, 0]
        cos -= sin  # n_a * (d penalty / d z_i) = cos @ freq^T
        grad += X[lo:hi].T @ ((cos @ freq.T).astype(np.float64) / counts[a])
    return penalty, gram, grad


# --------------------------------------------------------------------------
# MMD² of given groups of rows (the metric)
# --------------------------------------------------------------------------


def _max_pairwise_mmd2(
    parts,
    bandwidth,
    *,
    method="exact",
    block_size=_TILE_ROWS,
    n_random_features=1024,
    random_state=None,
):
    """Largest biased MMD² over all pairs of groups of (projected) rows.

    Parameters
    ----------
    parts : list of ndarray of shape (n_a, r)
        The rows of each group (at least two groups).
    bandwidth : float
        RBF bandwidth ``sigma``.
    method : {"exact", "rff"}, default="exact"
        Kernel sums in tiles (:func:`_kernel_group_sums`), or the random
        features of :func:`_rff_terms` at ``n_random_features`` quasi-random
        frequencies.
    block_size : int, default=1024
        Rows per tile (``"exact"``).
    n_random_features : int, default=1024
        Number ``D`` of frequencies (``"rff"``).
    random_state : int, RandomState instance or None, default=None
        Seeds the scrambling of the frequencies (``"rff"``).

    Returns
    -------
    float
        Non-negative (the exact pairwise values are clipped at 0, where
        rounding can push them to about -1e-16).
    """
    counts = np.array([len(part) for part in parts])
    Z = np.concatenate(parts)
    if method == "rff":
        seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
        freq = _qmc_frequencies(Z.shape[1], n_random_features, bandwidth, seed).astype(np.float32)
        pairwise = _rff_pairwise(_rff_means(Z.astype(np.float32), counts, freq)).mean(axis=1)
        return float(max(pairwise.max(), 0.0))
    groups = _Stratum(Z, counts, np.arange(len(counts)), "groups")
    U, _ = _kernel_group_sums(Z, groups.onehot, 0.5 / bandwidth**2, block_size, False)
    sums = np.add.reduceat(U, groups.starts, axis=0)
    return float(_pairwise_from_gram(_mean_embedding_gram(sums, counts)).max())


def _qmc_frequencies(n_components, n_frequencies, bandwidth, seed):
    """Quasi-random frequencies of the RBF kernel, shape (n_components, n_frequencies).

    The spectral measure of ``exp(-||u||² / (2 sigma²))`` is ``N(0, I / sigma²)``;
    its quantile transform of a scrambled Sobol' sequence covers it more evenly
    than independent draws (Avron et al., JMLR 17, 2016), which lowers the
    error of the MMD² estimate at the same number of features.
    """
    from scipy.stats import norm, qmc

    # The Sobol' points (a power of two of them), their clipped copy and the quantiles.
    check_allocation(
        3 * 8.0 * n_components * 2.0 ** np.ceil(np.log2(n_frequencies)),
        f"the quasi-random frequencies of n_random_features={n_frequencies} "
        f"in {n_components} dimensions",
        "Lower n_random_features.",
    )
    try:
        sampler = qmc.Sobol(n_components, scramble=True, rng=seed)
    except TypeError:  # scipy < 1.15 names it seed
        sampler = qmc.Sobol(n_components, scramble=True, seed=seed)
    points = sampler.random_base2(int(np.ceil(np.log2(n_frequencies))))[:n_frequencies]
    points = np.clip(points, 2.0**-53, 1.0 - 2.0**-53)
    return norm.ppf(points).T / bandwidth


# --------------------------------------------------------------------------
# Bandwidth
# --------------------------------------------------------------------------


def check_feature_moments(n_features, n_groups, estimator_name, parameter):
    """Refuse a feature map too wide for the dense moments of its features.

    Moments of an explicit feature map (random Fourier features, Nystroem)
    hold one ``D x D`` matrix per group and the pooled one, ``D`` the number
    of features: checked like data of width ``D`` (:func:`check_width`), with
    the parameter that sets ``D`` named in the message.

    Parameters
    ----------
    n_features : int
        ``D``.
    n_groups : int
        Groups the moments hold.
    estimator_name : str
    parameter : str
        E.g. ``"n_random_features=100000"``.
    """
    check_width(n_features, f"{estimator_name} ({parameter}: {n_features} features)", n_groups)


def _bandwidth_rows(n_samples, max_samples, random_state):
    """Rows of the median heuristic: all, or a seeded uniform subsample of ``max_samples``."""
    if n_samples <= max_samples:
        return np.arange(n_samples)
    return check_random_state(random_state).choice(n_samples, size=max_samples, replace=False)


def _median_bandwidth(Z):
    """``sqrt(median_{i<j} ||z_i - z_j||² / 2)`` of projected rows ``Z`` (m, d)."""
    # The distances (16 MiB for 2000 rows) are ours: partition them in place.
    median = float(np.median(pdist(Z, "sqeuclidean"), overwrite_input=True))
    if not median > 0:
        raise ValueError(
            "X: the median pairwise squared distance after PCA projection is 0 "
            "(many duplicate rows); pass bandwidth explicitly."
        )
    return float(np.sqrt(median / 2.0))
