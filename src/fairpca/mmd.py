"""MMD-constrained fair PCA on the Stiefel manifold (MbF-PCA).

Lee, Kim, Olfat, Hasegawa-Johnson and Yoo ask for the loading matrix that keeps
the most variance among those whose projected groups are (almost)
indistinguishable in maximum mean discrepancy, and solve the constrained
problem with the Riemannian exact penalty method REPMS (Liu & Boumal, 2019):
a sequence of smooth penalised problems on the Stiefel manifold, each solved
by a Riemannian quasi-Newton method warm-started at the previous solution.

The MMD² and its gradient with respect to the loadings are computed in closed
form (the paper's appendix G), rearranged so that all pairwise work happens in
the projected d-dimensional space, in tiles of rows (memory ``O(tile² + n d)``),
or with random Fourier features at quasi-random frequencies (``O(n D)`` per
evaluation).

References
----------
.. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
   "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
   Manifold." AAAI 2022.
.. [Liu2019] C. Liu and N. Boumal. "Simple Algorithms for Optimization on
   Riemannian Manifolds with Constraints." Applied Mathematics and
   Optimization 82, 2020.
.. [Rahimi2007] A. Rahimi and B. Recht. "Random Features for Large-Scale
   Kernel Machines." NeurIPS 2007.
.. [Avron2016] H. Avron, V. Sindhwani, J. Yang and M. W. Mahoney.
   "Quasi-Monte Carlo Feature Maps for Shift-Invariant Kernels." JMLR 17, 2016.
"""

import logging
import numbers
import warnings
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, eigh
from scipy.linalg.blas import ssymv
from scipy.linalg.lapack import dpotri
from scipy.spatial.distance import cdist
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from fairpca._base import FairPCABase, _check_target
from fairpca._validation import _plain, check_number, check_sensitive_features
from fairpca.metrics import _bandwidth_rows, _median_bandwidth
from fairpca.stiefel import _proj, minimize_lbfgs, minimize_trust_region, random_point

__all__ = ["MMDFairPCA"]

logger = logging.getLogger(__name__)

# REPMS settings of Lee et al. (section 8 and their scripts).
_EPS_START = 1e-1  # sub-problem gradient tolerance of the first outer iteration
_EPS_MIN = 1e-6  # final sub-problem gradient tolerance
#: Final tolerance with random features: their single-precision rounding makes the cost
#: noisy at ~1e-8, below which Armijo line searches fail after 40 halvings each (at
#: n = 1e5 the eps = 1e-6 sub-problem took 300 s of back-tracking and moved nowhere).
_EPS_MIN_RFF = 1e-5
_EPS_DECAY = 0.1  # (eps_min / eps_start) ** (1 / 5)
_RHO_GROWTH = 2.0
_RHO_MAX = 1e10
_STEP_MIN = 1e-6  # d_min: smallest ||V_{k+1} - V_k||_F that counts as movement
_INNER_MAX_ITER = 300  # iterations of each sub-solve (the authors' RBFGS limit)
# Truncated-CG stopping exponent of the trust-region sub-solver: with 1, the Newton
# systems of a tight tau took hundreds to 1685 (the dimension) CG products each;
# 0.5 cut synthetic #2 at p = 1000, tau = 1e-6 from 22079 to 7432 products (same result).
_CG_THETA = 0.5
#: Exact Hessian products keep the weighted kernel matrix of the current point when the
#: constrained rows number at most this (8 m² bytes: 128 MiB at 4096); beyond, and with
#: random features, they are central differences of the gradient.
_HESS_CACHE_ROWS = 4096
#: The trust-region preconditioner is rebuilt once the Hessian products spent since the
#: last build cost this fraction of a new one (see _CachedObjective.preconditioner).
_REBUILD_FRACTION = 0.5
#: Shifts of the preconditioner's Hessian, relative to its largest diagonal entry.
_SHIFTS = (0.0,) + tuple(10.0**k for k in range(-6, 3))
_FD_STEP = 2.0**-17  # central differences: truncation and rounding both ~1e-10 relative
_N_RANDOM_STARTS = 11  # random orthonormal matrices tried by init="random"

#: mmd="auto" uses exact kernel sums when the constrained rows number at most this.
AUTO_EXACT_MAX_ROWS = 5000
#: With random features, constraint_value_ is the exact MMD² on at most this many rows.
CERTIFY_MAX_ROWS = 20000

_TILE_ROWS = 1024  # exact kernel sums in tiles of 1024 x 1024 (8 MiB: stays in cache)
_RFF_CHUNK_BYTES = 2**20  # 1 MiB of single-precision features per chunk: stays in cache


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
    """

    X: np.ndarray
    counts: np.ndarray
    groups: np.ndarray
    name: str

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
        return (self.pair_weights / np.outer(self.counts, self.counts))[self.codes]

    @cached_property
    def pair_weights(self):
        """``C`` with ``sum_{a<b} MMD²_ab = sum_ab C_ab S_ab / (n_a n_b)``, S = kernel sums.

        ``C = k I - 1 1^T``: each self term appears in the ``k - 1`` pairs of its
        group, each cross term with weight -2 split over ``(a, b)`` and ``(b, a)``.
        """
        k = len(self.counts)
        return k * np.eye(k) - np.ones((k, k))


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


def _exact_terms(V, stratum, gamma, with_grad=True):
    """Exact biased MMD² terms of one stratum projected by ``V``.

    Returns the sum over pairs of groups of MMD² (the penalty), every pairwise
    value, and the Euclidean gradient of the penalty with respect to ``V``.

    With ``M_ij = C_{g_i g_j} / (n_{g_i} n_{g_j})`` (see ``_Stratum.pair_weights``)
    the penalty is ``sum_ij M_ij k_ij``, and since
    ``d k_ij / dV = -2 gamma k_ij (x_i - x_j)(z_i - z_j)^T`` and ``M`` is symmetric,

    ``grad = -4 gamma X^T G``,  ``G_i = sum_j M_ij k_ij (z_i - z_j)``,

    the appendix-G formula with the ``p x p`` products replaced by
    ``d``-dimensional ones.
    """
    counts = stratum.counts
    Z = stratum.X @ V
    U, T = _kernel_group_sums(Z, stratum.onehot, gamma, with_moments=with_grad)
    sums = np.add.reduceat(U, stratum.starts, axis=0)  # S_ab = sum_{i in a, j in b} k_ij
    gram = (sums + sums.T) / (2.0 * np.outer(counts, counts))  # <embedding a, embedding b>
    penalty = float(np.sum(stratum.pair_weights * gram))
    pairwise = _pairwise_from_gram(gram)
    if not with_grad:
        return penalty, pairwise, None
    W = stratum.row_weights
    G = Z * np.einsum("ib,ib->i", W, U)[:, None] - np.einsum("ib,ibd->id", W, T)
    return penalty, pairwise, -4.0 * gamma * (stratum.X.T @ G)


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


def _weighted_kernel(V, stratum, gamma):
    """The :class:`_WeightedKernel` of ``stratum`` at ``V``."""
    Z = stratum.X @ V
    m, d = Z.shape
    K = cdist(Z, Z, "sqeuclidean")
    K *= -gamma
    np.exp(K, out=K)
    weights = stratum.pair_weights / np.outer(stratum.counts, stratum.counts)
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
    at ``m = 336``, ``d = 5`` by pairs takes 60 ms against 193 ms by rows at
    ``p = 341``; at ``m = 3000``, ``p = 20`` by rows 101 ms against 730 ms.
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
    leave the cache. Timed on one thread: 205, 54, 6.4, 11.7, 27.5, 6.7, 1.0
    and 1.4 products at ``(m, p, d)`` = (336, 341, 5), (336, 100, 5),
    (336, 20, 5), (700, 50, 5), (1582, 97, 10), (1582, 97, 2), (1727, 11, 2)
    and (3000, 20, 5), where this says 232, 46, 4.6, 12.6, 19.2, 8.2, 0.8 and
    1.6. With ``factorised``, add the Cholesky factor and inverse of a
    ``(p d, p d)`` matrix, ``(p d)³ / 2`` multiply-adds at the same speed
    (timed: 149 ms for both at ``p d = 1705``, the matrix 60 ms).
    """
    cost = min(_hessian_costs(m, p, d)) + (0.5 * (p * d) ** 3 if factorised else 0.0)
    return cost / (m * m * (3 * d + 3)) / (4.5 if m > _TILE_ROWS else 2.5)


# --------------------------------------------------------------------------
# Random Fourier features
# --------------------------------------------------------------------------


def _rff_terms(V, stratum, frequencies, with_grad=True):
    """MMD² terms of one stratum with paired random Fourier features.

    With frequencies ``w_1..w_D ~ N(0, I / sigma²)`` the features
    ``phi(z) = [cos(w_l^T z), sin(w_l^T z)]_l / sqrt(D)`` satisfy
    ``phi(z)^T phi(z') = mean_l cos(w_l^T (z - z'))``, an unbiased estimate of
    the RBF kernel. The MMD² of a pair of groups becomes the squared distance
    ``||e_a - e_b||² / D`` of the groups' mean feature vectors ``e_a``, which is
    the mean over frequencies of ``|psi_a(w_l) - psi_b(w_l)|²`` (``psi`` the
    empirical characteristic functions): an unbiased estimate of the exact
    V-statistic with standard error ``std_l(...) / sqrt(D)``, returned too.

    Trigonometric functions are evaluated in single precision (rounding
    ~1e-7, far below the random-feature error) and accumulated in double.

    Returns
    -------
    penalty : float
    pairwise : ndarray of shape (k (k - 1) / 2,)
    pairwise_se : ndarray of shape (k (k - 1) / 2,)
    grad : ndarray of shape (p, d) or None
    """
    counts = stratum.counts
    k = len(counts)
    D = frequencies.shape[1]
    X = stratum.X
    Z = (X @ V).astype(np.float32)
    freq = frequencies.astype(np.float32)
    chunk = max(1, _RFF_CHUNK_BYTES // (4 * D))
    bounds = np.concatenate([[0], np.cumsum(counts)])

    def blocks(a):
        """Row ranges of group ``a`` with the cos and sin features of its rows."""
        for lo in range(bounds[a], bounds[a + 1], chunk):
            hi = min(lo + chunk, bounds[a + 1])
            cos = Z[lo:hi] @ freq
            sin = np.sin(cos)
            np.cos(cos, out=cos)
            yield lo, hi, cos, sin

    means = np.zeros((k, 2, D))  # e_a: mean cos and sin features of group a
    for a in range(k):
        for _, _, cos, sin in blocks(a):
            means[a, 0] += cos.sum(axis=0, dtype=np.float64)
            means[a, 1] += sin.sum(axis=0, dtype=np.float64)
        means[a] /= counts[a]
    C = stratum.pair_weights
    flat = means.reshape(k, 2 * D)
    penalty = float(np.sum(C * (flat @ flat.T))) / D
    rows, cols = np.triu_indices(k, k=1)
    per_freq = ((means[rows] - means[cols]) ** 2).sum(axis=1)  # (pairs, D)
    pairwise = per_freq.mean(axis=1)
    pairwise_se = per_freq.std(axis=1, ddof=1) / np.sqrt(D)
    if not with_grad:
        return penalty, pairwise, pairwise_se, None
    # d penalty / d e_a = (2 / D) sum_b C_ab e_b; chain rule through
    # d cos(w^T z) / dz = -sin(w^T z) w and d sin(w^T z) / dz = cos(w^T z) w.
    coef = ((2.0 / D) * np.einsum("ab,bsl->asl", C, means)).astype(np.float32)
    grad = np.zeros_like(V)
    for a in range(k):
        for lo, hi, cos, sin in blocks(a):
            cos *= coef[a, 1]
            sin *= coef[a, 0]
            cos -= sin  # n_a * (d penalty / d z_i) = cos @ freq^T
            grad += X[lo:hi].T @ ((cos @ freq.T).astype(np.float64) / counts[a])
    return penalty, pairwise, pairwise_se, grad


class _Penalty:
    """Sum over strata and pairs of groups of MMD², with its gradient.

    Parameters
    ----------
    strata : list of _Stratum
    bandwidth : float
    method : {"exact", "rff"}
    frequencies : ndarray of shape (d, D) or None
        Random frequencies (``method="rff"``).
    """

    def __init__(self, strata, bandwidth, method, frequencies=None):
        self.strata = strata
        self.gamma = 0.5 / bandwidth**2
        self.method = method
        self.frequencies = frequencies
        # (key of V, [_WeightedKernel per stratum], dense Hessian or None, products before it pays)
        self._kernels = (None, None, None, 0)

    @property
    def exact_hessian(self):
        """Whether Hessian products are exact (cached kernels) rather than differences."""
        return self.method == "exact" and all(
            st.X.shape[0] <= _HESS_CACHE_ROWS for st in self.strata
        )

    def dense_budget(self, shape, factorised=False):
        """Products that cost as much as forming the dense Hessian (and factorising it)."""
        return max(
            _products_per_dense_hessian(st.X.shape[0], *shape, factorised) for st in self.strata
        )

    def _at(self, V):
        """The cached ``(key, kernels, dense Hessian or None, products left)`` at ``V``."""
        key = V.tobytes()
        if self._kernels[0] != key:
            kernels = [_weighted_kernel(V, st, self.gamma) for st in self.strata]
            # A trust-region step takes from a few to over a hundred products at one
            # point (30-130 measured at the rho of a tight tau). Forming the matrix
            # once the products spent there cost as much (rent, then buy) is never
            # more than twice the better of the two choices made in hindsight.
            self._kernels = (key, kernels, None, self.dense_budget(V.shape))
        return self._kernels

    def dense_hessian(self, V):
        """The exact Euclidean Hessian of the penalty at ``V``, shape (p d, p d) (cached)."""
        key, kernels, dense, _ = self._at(V)
        if dense is None:
            dense = sum(
                _exact_hessian(kernel, st, self.gamma)
                for st, kernel in zip(self.strata, kernels, strict=True)
            )
            self._kernels = (key, kernels, dense, 0)
        return dense

    def formed_dense(self, shape):
        """``(key, V, dense Hessian)`` of the cached point if its matrix was formed, else None."""
        key, _, dense, _ = self._kernels
        if dense is None:
            return None
        return key, np.frombuffer(key).reshape(shape), dense

    def hess_vec(self, V, Xi):
        """Euclidean Hessian of the penalty at ``V`` applied to ``Xi``, shape (p, d).

        Exact (cached weighted kernel matrices, reused by every product at the
        same ``V``, and the whole ``(p d, p d)`` matrix when that is cheaper
        than a few dozen products) when each stratum has at most
        ``_HESS_CACHE_ROWS`` rows and ``method="exact"``; otherwise a central
        difference of the gradient.
        """
        if self.exact_hessian:
            key, kernels, dense, products_left = self._at(V)
            if dense is not None:
                return (dense @ Xi.ravel()).reshape(V.shape)
            out = np.zeros_like(V)
            for st, kernel in zip(self.strata, kernels, strict=True):
                out += _exact_hess_vec(kernel, st, self.gamma, Xi)
            products_left -= 1
            self._kernels = (key, kernels, None, products_left)
            if products_left <= 0:
                self.dense_hessian(V)
            return out
        norm = np.linalg.norm(Xi)
        if norm == 0.0:
            return np.zeros_like(V)
        t = _FD_STEP / norm
        return (self(V + t * Xi)[2] - self(V - t * Xi)[2]) / (2.0 * t)

    def __call__(self, V, with_grad=True):
        """Return ``(penalty, largest pairwise MMD², gradient or None)``."""
        penalty, largest = 0.0, 0.0
        grad = np.zeros_like(V) if with_grad else None
        for stratum in self.strata:
            if self.method == "exact":
                pen, pairs, g = _exact_terms(V, stratum, self.gamma, with_grad)
            else:
                pen, pairs, _, g = _rff_terms(V, stratum, self.frequencies, with_grad)
            penalty += pen
            largest = max(largest, float(pairs.max()))
            if with_grad:
                grad += g
        return penalty, largest, grad


class _CachedObjective:
    """``Q(V) = f(V) + rho * penalty(V)`` for the sub-solvers.

    ``f(V) = -tr(V^T Sigma V) / tr(Sigma)`` with ``Sigma = X^T X / n``; when
    ``n < p``, ``Sigma V = X^T (X V) / n`` is cheaper than the ``p x p`` product
    (``X`` may be None: then ``Sigma`` is used).
    The last few evaluations are kept so that the penalty at an accepted
    iterate is never recomputed.
    """

    def __init__(self, X, sigma, penalty):
        total = np.trace(sigma)
        if X is not None and X.shape[0] < X.shape[1]:
            self._factor = X / np.sqrt(X.shape[0] * total)
            self._sigma = None
        else:
            self._factor = None
            self._sigma = sigma / total
        self.penalty = penalty
        self.n_features = sigma.shape[0]
        self.rho = 1.0
        self._memo = OrderedDict()
        self.n_evals = 0
        # (key of the point, M^{-1} or None) of the last preconditioner built.
        self._preconditioner = (None, None)
        self._products_since_build = 0
        self._shift = 0  # index in _SHIFTS of the last preconditioner's shift

    def terms(self, V):
        """Return ``(variance ratio, penalty, largest pairwise MMD², penalty gradient)``."""
        key = V.tobytes()
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        self.n_evals += 1
        SV = self.sigma_times(V)
        variance = float(np.sum(V * SV))
        pen, largest, pen_grad = self.penalty(V)
        value = (variance, pen, largest, pen_grad, SV)
        self._memo[key] = value
        if len(self._memo) > 8:
            self._memo.popitem(last=False)
        return value

    @cached_property
    def sigma_matrix(self):
        """``Sigma / tr(Sigma)``, shape (p, p)."""
        return self._sigma if self._sigma is not None else self._factor.T @ self._factor

    def sigma_times(self, V):
        """``Sigma V / tr(Sigma)``."""
        if self._sigma is not None:
            return self._sigma @ V
        return self._factor.T @ (self._factor @ V)

    def __call__(self, V):
        variance, pen, _, pen_grad, SV = self.terms(V)
        if self.penalty.method == "rff":
            # MMD² depends on V only through the subspace (V -> VQ leaves it unchanged), but
            # its random-feature estimate at fixed frequencies does not: its gradient has a
            # vertical part V skew(V^T G), a rotation within the subspace, of the size of the
            # approximation error. L-BFGS chased it for its whole step budget without moving
            # the subspace (d = 5, 10^4 rows: 139 s; without it 19 s, same result). Dropping
            # it keeps the gradient exact along every horizontal direction.
            VtG = V.T @ pen_grad
            pen_grad = pen_grad - V @ (0.5 * (VtG - VtG.T))
        return -variance + self.rho * pen, -2.0 * SV + self.rho * pen_grad

    def hess_vec(self, V, Xi):
        """Euclidean Hessian of ``Q`` at ``V`` applied to ``Xi``."""
        self._products_since_build += 1
        return -2.0 * self.sigma_times(Xi) + self.rho * self.penalty.hess_vec(V, Xi)

    def preconditioner(self, V, egrad):
        """``M^{-1}`` for the trust-region CG at ``V``, or None (see ``minimize_trust_region``).

        ``M`` is the Riemannian Hessian of ``Q`` (shifted to be positive definite)
        at a recent point; ``M^{-1} r`` is projected onto the tangent space at
        ``V``, which keeps the operator symmetric positive definite there. It is
        rebuilt where the penalty's dense Hessian has just been formed (a CG solve
        needed many products at one point), or once the products spent since it
        was built cost ``_REBUILD_FRACTION`` of a new one (dense Hessian,
        Cholesky factor and inverse: rent or buy again, across points; less than
        the whole, because a fresh preconditioner also shortens the solves to
        come). Synthetic #2 at tau = 1e-7 took 7.1, 8.8 and 5.3 s with a half
        at p = 500, 600 and 1000, and 7.8, 8.9 and 6.3 s with the whole cost.
        None with random features (no exact Hessian) or before the first build.
        """
        penalty = self.penalty
        if not penalty.exact_hessian:
            return None
        formed = penalty.formed_dense(V.shape)
        if formed is not None and formed[0] != self._preconditioner[0]:
            _, point, dense = formed
            self._build_preconditioner(point, self(point)[1], dense)
        elif self._products_since_build >= _REBUILD_FRACTION * penalty.dense_budget(V.shape, True):
            self._build_preconditioner(V, egrad, penalty.dense_hessian(V))
        if self._preconditioner[1] is None:
            return None
        inverse, lower = self._preconditioner[1]

        def apply(r):
            z = ssymv(1.0, inverse, r.ravel().astype(np.float32), lower=int(lower))
            return _proj(V, z.astype(np.float64).reshape(r.shape))

        return apply

    def _build_preconditioner(self, V, egrad, penalty_hessian):
        # Start one shift below the last one that worked: nearby points need similar
        # shifts, and each failed Cholesky attempt costs up to a whole factorisation.
        factor, self._shift = _hessian_factor(
            V, egrad, self, penalty_hessian, max(self._shift - 1, 0)
        )
        inverse = None
        if factor is not None:
            # An explicit inverse (LAPACK potri fills the factor's triangle), applied by
            # BLAS symv, which reads only that triangle: 10 times faster than two
            # triangular solves at p d = 1705 (0.34 ms against 4.2 ms, one thread).
            inverse, info = dpotri(*factor)
            inverse = None if info != 0 else (_single_precision(inverse, factor[1]), factor[1])
        self._preconditioner = (V.tobytes(), inverse)
        self._products_since_build = 0


def _single_precision(inverse, lower):
    """``S + delta I`` in single precision, still positive definite, for the preconditioner.

    ``S`` is symmetric positive definite, stored in the lower (or upper)
    triangle of ``inverse`` (the other triangle is ignored). Each CG iteration
    reads the whole triangle (11.6 MB at ``p d = 1705``, beyond the cache):
    in single precision, 0.28 ms per application at p = 600 against 0.67-0.79
    ms. A plain cast can lose definiteness (the matrix reached condition
    numbers of 3e7 on synthetic #2 at p = 90, where the cast's error had
    2-norm half the smallest eigenvalue). So the off-diagonal rounding error
    ``E`` is measured exactly and ``delta = 1.01 (||E||_inf + 2^-24 max |S_ii|)``,
    which exceeds the 2-norm of the stored matrix's whole error (the diagonal
    ``S_ii + delta`` is rounded too): by Weyl's inequality the result's
    eigenvalues are at least those of ``S``.

    Returns
    -------
    ndarray of shape (n, n), float32, Fortran order
        The same triangle holds ``S + delta I``, rounded.
    """
    # Fortran order, as LAPACK left it: BLAS then reads it in place, not a copy per call.
    single = np.asfortranarray(inverse, dtype=np.float32)
    error = np.abs(single - inverse)  # exact: a float32 rounding error is a float64 number
    error = np.tril(error, -1) if lower else np.triu(error, 1)
    diagonal = np.diag(inverse)
    delta = 1.01 * (
        np.max(error.sum(axis=0) + error.sum(axis=1)) + 2.0**-24 * np.abs(diagonal).max()
    )
    single[np.diag_indices_from(single)] = diagonal + delta
    return single


def _riemannian_hessian_matrix(V, egrad, objective, penalty_hessian):
    """The Riemannian Hessian of ``Q`` at ``V`` as a ``(p d, p d)`` matrix, and ``W``.

    ``P A P`` (row-major ``vec`` of ``p x d`` matrices), where ``A`` is the
    Euclidean Hessian of ``Q`` minus ``I (x) sym(V^T egrad)`` and ``P`` the
    projection onto the tangent space. ``P = I - W W^T``, with ``W`` of shape
    (p d, d (d + 1) / 2) the orthonormal normal directions ``V Omega``
    (``Omega`` symmetric). With ``C = A W - W (W^T A W) / 2``,
    ``P A P = A - W C^T - C W^T``: one rank-``d (d + 1)`` update of ``A``.
    Symmetric up to rounding (a Cholesky factorisation reads one triangle).
    """
    p, d = V.shape
    S = V.T @ egrad
    A = objective.rho * penalty_hessian
    blocks = A.reshape(p, d, p, d)
    for b in range(d):
        blocks[:, b, :, b] -= 2.0 * objective.sigma_matrix
    diagonal = np.arange(p)
    blocks[diagonal, :, diagonal, :] -= 0.5 * (S + S.T)
    rows, cols = np.triu_indices(d)
    W = np.zeros((len(rows), p, d))
    for k, (i, j) in enumerate(zip(rows, cols, strict=True)):
        if i == j:
            W[k, :, i] = V[:, i]
        else:
            W[k, :, j] = V[:, i] * np.sqrt(0.5)
            W[k, :, i] = V[:, j] * np.sqrt(0.5)
    W = W.reshape(len(rows), p * d).T
    AW = A @ W
    C = AW - 0.5 * W @ (W.T @ AW)
    A -= np.hstack([W, C]) @ np.hstack([C, W]).T
    return A, W


def _hessian_factor(V, egrad, objective, penalty_hessian, first_shift=0):
    """Cholesky factor of ``P A P + mu P + (I - P)`` (see ``_riemannian_hessian_matrix``).

    The normal space gets the identity, and the smallest ``mu`` tried, from
    ``_SHIFTS[first_shift:]`` times the largest diagonal entry, that makes the
    whole positive definite shifts the tangent part where the Hessian is
    indefinite.

    Returns
    -------
    factor : tuple or None
        As from ``scipy.linalg.cho_factor``; None if no shift works.
    shift : int
        Index in ``_SHIFTS`` of the shift used (0 if none works).
    """
    base, W = _riemannian_hessian_matrix(V, egrad, objective, penalty_hessian)
    top = np.max(np.abs(np.diag(base)))
    normal = W @ W.T  # I - P
    base += normal
    for k in range(first_shift, len(_SHIFTS)):
        mu = _SHIFTS[k] * top
        # P A P + mu P + (I - P) = (P A P + W W^T) + mu (I - W W^T)
        shifted = base if mu == 0.0 else base - mu * normal
        if mu != 0.0:
            shifted[np.diag_indices_from(shifted)] += mu
        try:
            return cho_factor(shifted, check_finite=False), k
        except LinAlgError:
            continue
    return None, 0


class MMDFairPCA(FairPCABase):
    r"""Fair PCA whose projected groups are close in maximum mean discrepancy (MbF-PCA).

    Solves, over loading matrices ``V`` with orthonormal columns (the Stiefel
    manifold ``St(p, d)``),

    .. math::

        \min_{V \in St(p, d)} \; -\frac{\mathrm{tr}(V^T \Sigma V)}{\mathrm{tr}\,\Sigma}
        \quad \text{subject to} \quad
        h(V) = \max_{a < b} \widehat{\mathrm{MMD}}^2(V^T x \mid a,\; V^T x \mid b) \le \tau,

    with ``Sigma`` the training covariance and ``MMD²`` the biased V-statistic
    with RBF kernel ``exp(-||u - v||² / (2 sigma²))`` between the projected rows
    of groups ``a`` and ``b`` ([Lee2022]_). For ``k > 2`` groups every pair
    ``a < b`` is a constraint; the exact penalty of that set of constraints is
    the *sum* of the pairwise MMD² values (each is non-negative, so
    ``max(0, h_ab) = h_ab``), which is smooth, so the sub-solvers see a
    smooth function. Feasibility (``h <= tau``) is judged on the largest pairwise
    value, which is what ``constraint_value_`` and :func:`fairpca.metrics.mmd2`
    report. With two groups sum and maximum coincide.

    The solver is the Riemannian exact penalty method of [Liu2019]_ as in the
    paper's Algorithm 1, with the authors' settings except the sub-solver:
    sub-problems ``min f + rho_k * penalty`` are solved, warm-started at the
    previous solution, until the Riemannian gradient norm is at most
    ``eps_k``, by Riemannian L-BFGS (at most 300 steps) and, once L-BFGS has
    failed to get there, by Riemannian trust regions from then on
    (:func:`fairpca.stiefel.minimize_trust_region`, truncated CG with the
    exact Hessian of the penalty, stopping exponent ``theta = 0.5`` and,
    as preconditioner, the Riemannian Hessian formed as a matrix at a recent
    point and inverted, its inverse kept in single precision; at most 300
    steps; exact mode only);
    ``eps_0 = 0.1``, ``eps_{k+1} = max(1e-6, eps_k / 10)`` (floor 1e-5 with
    random features, whose single-precision cost is noisy below it);
    ``rho_0 = 1 / penalty(V_PCA)``, doubled (up to ``1e10``) after every outer
    iteration that ends with ``h > tau``; stop when
    ``||V_{k+1} - V_k||_F <= 1e-6``, ``eps_k = 1e-6`` and ``h <= tau``, or
    after ``max_iter`` outer iterations. The authors used a quasi-Newton
    method (RBFGS); so did earlier versions of this class (L-BFGS), but the
    penalty is a squared distance, so the ``h`` reached at weight ``rho``
    falls like ``1 / rho`` and a tight ``tau`` needs ``rho`` ~ 1e4-1e5: the
    sub-problem's Hessian then spans seven orders of magnitude (measured on
    Lee et al.'s synthetic data #2, p = 50, tau = 1e-6) and L-BFGS stalled at
    gradient norms ~0.1 for thousands of steps, never meeting the stopping
    rule; Newton steps do, but cost 5-10 times as much where L-BFGS
    suffices. With more features than rows (``p > n``) the cost depends on
    ``V`` only through ``X V``, and the problem is solved exactly on
    ``St(r + d, d)``, ``r`` the rank of the centred training ``X``: its row
    space plus ``d`` slack directions (``_reduction_basis`` has the proof);
    on synthetic data #2 (p = 1000, n = 336, tau = 1e-5) this took 7 s
    instead of 29 s for the same point. Two shortcuts return the same point sooner: if PCA
    itself satisfies ``h <= tau`` it is the solution (it maximises the
    variance) and is returned at once; and when a sub-solve cannot move at
    all (its trust region collapses at rounding level) while ``rho`` would
    stay the same, the loop stops there (converged if ``h <= tau``).

    Dask input. ``fit`` also accepts a ``dask.array`` or Dask DataFrame ``X``
    (labels and ``y`` as Dask or NumPy arrays), of any length: the fit needs
    only the covariance, which one distributed pass computes from the group
    moments (as for the covariance-based methods), and the rows it reads in
    memory anyway: the ``max_samples`` subsample of the MMD² terms and the
    2000 rows of the median bandwidth. The labels (and ``y`` for ``"EOP"``
    and ``"EOD"``) are then loaded, n entries each, the subsample is drawn
    from the group sizes alone, and a second pass reads just those rows.
    Memory is therefore independent of n apart from n-length vectors: the
    labels, their 8-byte group codes and, while the subsample is drawn, the
    8-byte row indices of one group. The rows drawn are those of the
    in-memory fit with the same ``random_state``, so the two fits agree up to
    rounding (tested: subspace distance below 1e-8 in exact mode; with
    ``mmd="rff"`` the single-precision features can magnify last-bit
    differences of the merged moments to about 1e-4). Measured
    (``benchmarks/mmd.py --part 3``): n = 1e7 rows of 20 features (1.5 GiB in
    float64) generated block by block, d = 2, ``mmd="rff"``, threaded
    scheduler: 31 s, of which one moment pass takes 3.7 s, and a peak
    resident size of 574 MiB (207 MiB before ``fit``: interpreter and
    libraries; the moment pass alone, in a separate process, peaked at
    361 MiB), on a shared 2-core machine.
    ``max_samples=None`` is refused on Dask input: it would load every row.

    Parameters
    ----------
    n_components : int, default=2
        Target dimension ``d``.
    tau : float, default=1e-3
        Fairness tolerance on the largest pairwise MMD² (>= 0). The paper uses
        1e-3 (relaxed) and 1e-6 (strict). The biased estimate is positive for
        any finite sample, so ``tau=0`` is never reached.
    fairness : {"DP", "EOP", "EOD"}, default="DP"
        Which conditional distributions must match. ``"DP"`` (demographic
        parity): the projected groups over all rows. ``"EOP"`` (equal
        opportunity): the rows with positive ``y`` only. ``"EOD"`` (equalised
        odds): separately the rows with positive and with negative ``y`` (one
        family of constraints each). ``y`` must then be passed to ``fit`` and be
        binary; its larger label (after sorting) is the positive class.
    bandwidth : "median" or float, default="median"
        RBF bandwidth ``sigma``. ``"median"``: the authors' rule
        ``sigma = sqrt(median_{i<j} ||V_PCA^T (x_i - x_j)||² / 2)`` over all
        training rows (:func:`fairpca.metrics.mmd_bandwidth`, pairs of a seeded
        subsample of 2000 rows when there are more; computed from the
        covariance and those rows only), computed once and stored
        in ``bandwidth_``; pass it to :func:`fairpca.metrics.mmd2` to evaluate
        on other data with the same kernel.
    mmd : {"auto", "exact", "rff"}, default="auto"
        How MMD² and its gradient are computed while optimising. ``"exact"``:
        all pairs of rows, ``O(m² d)`` time per evaluation for ``m``
        constrained rows and ``O(m (k d + p))`` memory (tiles of 1024 rows:
        m = 20000 needs about 0.1 GiB). ``"rff"``: random Fourier features
        ``[cos(w^T z), sin(w^T z)]`` at ``D = n_random_features`` frequencies
        ``w`` (a scrambled Sobol' sequence mapped to ``N(0, I / sigma²)``,
        [Avron2016]_), ``O(m D d)`` time per evaluation, trigonometric
        functions in single precision. Their MMD² estimate, measured against
        the exact value at ``D = 1024`` on German credit and COMPAS (d = 2
        and 10), is off by 0.1-1 % when MMD² is above 1e-2 and by 3-6 % (at
        most 11 %) near a fair projection: it cannot certify ``tau`` by itself,
        so ``constraint_value_`` is always recomputed exactly. ``"auto"``:
        ``"exact"`` when at most 5000 rows are constrained
        (``AUTO_EXACT_MAX_ROWS``), ``"rff"`` otherwise.
    n_random_features : int, default=1024
        Number ``D`` of frequencies for ``mmd="rff"`` (2 D features).
    max_samples : int or None, default=20000
        Largest number of constrained rows on which MMD² is optimised and
        reported; beyond it a seeded random subsample keeps the same fraction
        of every group (at least 2 rows each). The variance term always uses
        every row. ``None``: all rows (with ``mmd="rff"`` the time per
        evaluation then grows linearly in n). A V-statistic on ``m_a`` rows
        per group is biased upward by about ``(1/m_a + 1/m_b)(1 - kbar)``,
        ``kbar`` the mean kernel value within a group: about 1e-4 at 10000 rows
        per group, so a ``tau`` below that needs more rows.

        Memory at large n: the subsample's row indices are drawn first and
        only those rows are copied, so beyond the input a fit holds one centred
        copy of X (base class), vectors of length n (group codes, the n x d
        projection that orders the components) and a part independent of n:
        the subsample, the median heuristic's distances between 2000 rows
        (16 MiB) and random features in blocks of 1 MiB. Measured
        (``benchmarks/mmd.py --part 3``, 20 features, d = 2, ``mmd="rff"``,
        peak traced during ``fit`` beyond the input array): n = 1e5: 39 MiB
        (input 15 MiB), 10 s; n = 1e6: 193 MiB (1.26 x the 153 MiB input;
        346 MiB when all rows were copied sorted by group), 9 s, on a shared
        2-core machine. Dask input needs no copy of X (see above).
    init : {"pca", "random"}, default="pca"
        Starting point. ``"pca"``: the top ``d`` principal loadings.
        ``"random"``: the authors' code: the best of 11 random orthonormal
        matrices by explained variance, then MMD² alone minimised from there.
        On Lee et al.'s COMPAS splits (d = 2, tau = 1e-3) the PCA start kept
        more training variance on 8 of 10 splits (up to 3.6 points of %VAR, the
        same on the other 2); on German credit the random start kept slightly
        more on 6 of 10 (at most 0.21 points). The random start costs 2-4
        times as much (``benchmarks/reproduce_mmd.py``).
    max_iter : int, default=100
        Maximum number of outer (penalty) iterations.
    random_state : int, RandomState instance or None, default=None
        Seeds the bandwidth subsample, the random frequencies, the subsample
        used for ``constraint_value_`` and the random initialisation. Same
        seed and data give identical results.
    verbose : bool, default=False
        Log every outer iteration (``rho``, MMD², explained variance,
        ``||V_{k+1} - V_k||_F``) at INFO level on the ``fairpca.mmd`` logger
        (configure :mod:`logging` to see them).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal loadings, sorted by explained variance.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Variance of each output coordinate over the total (%VAR of the paper
        is the sum).
    bandwidth_ : float
        RBF bandwidth ``sigma`` used.
    mmd_method_ : {"exact", "rff"}
        How MMD² was computed while optimising.
    constraint_value_ : float
        Largest pairwise exact MMD² of the training groups under
        ``components_`` (over both classes of ``y`` for ``"EOD"``), equal to
        ``fairpca.metrics.mmd2(X, s, self, bandwidth=self.bandwidth_)`` for
        ``"DP"`` (on ``X[y == positive]`` for ``"EOP"``). Computed on the rows
        the fit used: all of them unless there are more than ``max_samples``
        (then on that subsample, whose bias is described there); with
        ``mmd="rff"`` on at most 20000 of them (``CERTIFY_MAX_ROWS``).
    converged_ : bool
        True when the REPMS stopping rule was met and ``constraint_value_ <= tau``.
    n_iter_ : int
        Outer iterations run (0 when PCA was already fair).
    history_ : dict of ndarray
        One entry per outer iteration: ``"rho"`` (penalty weight used),
        ``"tolerance"`` (``eps_k``), ``"mmd2"`` (largest pairwise MMD² as
        optimised: exact or random-feature), ``"explained_variance_ratio"``,
        ``"step"`` (``||V_{k+1} - V_k||_F``), ``"inner_iterations"``,
        ``"grad_norm"`` (final Riemannian gradient norm of the sub-problem).

    See Also
    --------
    fairpca.metrics.mmd2 : the fairness metric this estimator constrains.

    Notes
    -----
    The gradient of MMD² with respect to ``V`` is the closed form of the
    paper's appendix G written with projected rows ``z_i = V^T x_i``:
    ``-(2 / sigma²) X^T G`` with ``G_i = sum_j M_ij k_ij (z_i - z_j)``, where
    ``M_ij`` is the weight of the pair (``1/n_a²``, ``1/n_b²`` or
    ``-1/(n_a n_b)``), so pairwise work is ``O(d)`` instead of ``O(p)``.

    References
    ----------
    .. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
       "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
       Manifold." AAAI 2022.
    .. [Liu2019] C. Liu and N. Boumal. "Simple Algorithms for Optimization on
       Riemannian Manifolds with Constraints." Appl. Math. Optim. 82, 2020.

    Examples
    --------
    >>> from sklearn.decomposition import PCA
    >>> from fairpca import MMDFairPCA
    >>> from fairpca.datasets import make_mmd_synthetic1
    >>> from fairpca.metrics import mmd2
    >>> X, s = make_mmd_synthetic1(random_state=0)
    >>> est = MMDFairPCA(n_components=2, tau=1e-3).fit(X, sensitive_features=s)
    >>> bool(mmd2(X, s, est, bandwidth=est.bandwidth_) <= 1e-3)
    True
    >>> pca = PCA(n_components=2).fit(X)
    >>> bool(mmd2(X, s, pca, bandwidth=est.bandwidth_) > 0.05)
    True
    """

    def __init__(
        self,
        n_components=2,
        *,
        tau=1e-3,
        fairness="DP",
        bandwidth="median",
        mmd="auto",
        n_random_features=1024,
        max_samples=20000,
        init="pca",
        max_iter=100,
        random_state=None,
        verbose=False,
    ):
        self.n_components = n_components
        self.tau = tau
        self.fairness = fairness
        self.bandwidth = bandwidth
        self.mmd = mmd
        self.n_random_features = n_random_features
        self.max_samples = max_samples
        self.init = init
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ validation
    def _check_params(self):
        tau = check_number(self.tau, "tau", numbers.Real, minimum=0)
        for name, options in (
            ("fairness", ("DP", "EOP", "EOD")),
            ("mmd", ("auto", "exact", "rff")),
            ("init", ("pca", "random")),
        ):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in options:
                raise ValueError(
                    f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}."
                )
        if isinstance(self.bandwidth, str):
            if self.bandwidth != "median":
                raise ValueError(
                    f"bandwidth must be 'median' or a positive number; got {self.bandwidth!r}."
                )
        else:
            check_number(
                self.bandwidth, "bandwidth", numbers.Real, minimum=0, include_boundaries="neither"
            )
        check_number(self.n_random_features, "n_random_features", minimum=2)
        check_number(self.max_iter, "max_iter", minimum=1)
        if self.max_samples is not None:
            check_number(self.max_samples, "max_samples", minimum=4)
        return tau

    def _require_target(self, y):
        """Complain early when ``fairness`` needs a ``y`` that was not given."""
        if self.fairness != "DP" and y is None:
            raise ValueError(
                f"fairness={self.fairness!r} compares groups within classes of y: "
                "pass the binary target as fit(X, y, sensitive_features=...)."
            )

    def _class_masks(self, y):
        """``(name, rows mask or None for all rows)`` of each family of constraints."""
        if self.fairness == "DP":
            return [("all rows", None)]
        self._require_target(y)
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(
                f"fairness={self.fairness!r} needs a binary y (exactly two classes); "
                f"found {classes.size}: {classes[:10].tolist()}."
            )
        positive, negative = classes[1], classes[0]
        masks = [(f"y={_plain(positive)!r}", y == positive)]
        if self.fairness == "EOD":
            masks.append((f"y={_plain(negative)!r}", y == negative))
        return masks

    def _select_rows(self, codes, groups, y, rng):
        """Which rows enter the MMD² terms, with the group size checks.

        Returns, for each family of constraints, ``(name, rows, counts)``:
        indices of its rows group by group (in each group in the order of ``X``),
        at most ``max_samples`` rows in all (:func:`_subsample_positions`), and
        the number kept of each group. Only these rows are ever copied.
        """
        masks = self._class_masks(y)
        all_counts = []
        for name, mask in masks:
            counts = np.bincount(codes if mask is None else codes[mask], minlength=len(groups))
            small = [
                f"{_plain(g)!r} ({c} rows)" for g, c in zip(groups, counts, strict=True) if c < 2
            ]
            if small:
                raise ValueError(
                    f"fairness={self.fairness!r}: every group needs at least 2 rows with "
                    f"{name}; too small: {', '.join(small)}."
                )
            all_counts.append(counts)
        picks = _subsample_positions(all_counts, self.max_samples, rng)
        selected = []
        for i, ((name, mask), counts) in enumerate(zip(masks, all_counts, strict=True)):
            rows = []
            for a in range(len(groups)):
                in_group = codes == a
                members = np.flatnonzero(in_group if mask is None else in_group & mask)
                rows.append(members if picks is None else members[picks[i][a]])
            kept = counts if picks is None else np.array([len(pos) for pos in picks[i]])
            selected.append((name, np.concatenate(rows), kept))
        return selected

    # ------------------------------------------------------------------- fit
    def _fit_dask(self, X, y, sensitive_features):
        """Reject what the moment pass cannot fix before it runs, then fit."""
        if sensitive_features is not None:
            if self.max_samples is None:
                raise ValueError(
                    "max_samples=None asks for MMD² on every row, which would load all of the "
                    "Dask input into memory; set max_samples (rows kept for MMD², default "
                    "20000), or compute X into memory first (X.compute())."
                )
            self._require_target(y)
        return super()._fit_dask(X, y, sensitive_features)

    def _fit_components(self, X, codes, moments, y):
        # Called by fit, called by the user: stacklevel 4 from _fit_rows.
        return self._fit_rows(lambda rows: [X[r] for r in rows], X, codes, moments, y, 4)

    def _fit_components_dask(self, X, labels, y, moments):
        """Gather the rows the fit reads (at most ``max_samples`` + 2000) from Dask input.

        The labels (and ``y`` for ``"EOP"``/``"EOD"``) are brought into memory,
        n entries each; the rows are then read in one computation.
        """
        import dask

        if self.fairness == "DP":
            y = None
        label_blocks, y = dask.compute(list(labels.to_delayed().ravel()), y)
        n_samples = moments.n_samples
        _, codes = check_sensitive_features(np.concatenate(label_blocks), n_samples)
        if y is not None:
            y = _check_target(y, n_samples)
        bounds = np.concatenate([[0], np.cumsum([len(block) for block in label_blocks])])

        def read(rows):
            # One computation for every requested set: each row is read once.
            needed = np.unique(np.concatenate(rows))
            block = _gather_rows(X, bounds, needed)
            block -= moments.pooled_mean
            return [block[np.searchsorted(needed, r)] for r in rows]

        # Via FairPCABase._fit_moments, FairPCABase._fit_dask, _fit_dask and fit.
        return self._fit_rows(read, None, codes, moments, y, 7)

    def _fit_rows(self, read, X, codes, moments, y, stacklevel):
        """Select the rows, read them with ``read`` and solve.

        ``read`` maps a list of index arrays to the centred rows at those
        indices; ``X`` is every centred row, or None on Dask input (then there
        is no reduction to the row space when p > n, an exact shortcut only).
        ``stacklevel`` points a ConvergenceWarning at the caller of ``fit``.
        """
        tau = self._check_params()
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=5)
        selected = self._select_rows(codes, moments.groups, y, np.random.RandomState(seeds[1]))
        sigma = moments.covariance()
        if not np.trace(sigma) > 0:
            raise ValueError(
                "X has zero variance (every row is the same): all projected points are equal, "
                "so neither the median bandwidth nor a fair projection is defined."
            )
        wanted = [rows for _, rows, _ in selected]
        median = isinstance(self.bandwidth, str)  # "median", checked by _check_params
        if median:
            # The rows mmd_bandwidth would pick with the same seed.
            wanted.append(_bandwidth_rows(moments.n_samples, _BANDWIDTH_ROWS, seeds[0]))
        taken = read(wanted)
        strata = [
            _Stratum(rows, counts, moments.groups, name)
            for (name, _, counts), rows in zip(selected, taken[: len(selected)], strict=True)
        ]
        bandwidth_rows = taken[-1] if median else None
        # Every product here is small or skinny (p x p eigenproblems, n x d projections,
        # tiles x k(1 + d)): BLAS threads only add synchronisation cost to them, which
        # on a busy machine multiplied the time of a 1000 x 1000 eigh by 20.
        with threadpool_limits(limits=1, user_api="blas"):
            V, stopped = self._solve(X, strata, bandwidth_rows, sigma, tau, seeds)
        self.converged_ = bool(stopped and self.constraint_value_ <= tau)
        self._log(
            f"finished after {self.n_iter_} outer iterations: exact MMD² "
            f"{self.constraint_value_:.3g} (tau {tau:g}), converged={self.converged_}"
        )
        if not self.converged_:
            reason = (
                f"the largest pairwise MMD² is {self.constraint_value_:.3g} > tau={tau:g}"
                if self.constraint_value_ > tau
                else "the REPMS stopping rule (||V_k+1 - V_k|| <= 1e-6) was not met"
            )
            warnings.warn(
                f"MMDFairPCA did not converge in {self.n_iter_} outer iterations "
                f"(max_iter={self.max_iter}): {reason}. Increase max_iter or tau.",
                ConvergenceWarning,
                stacklevel=stacklevel,
            )
        return V.T, None

    def _solve(self, X, strata, bandwidth_rows, sigma, tau, seeds):
        """Bandwidth, MMD² evaluator, start and REPMS; return ``(V, stopped)``.

        ``strata`` hold the (subsampled) rows of the MMD² terms, ``bandwidth_rows``
        those of the median heuristic (None with a given bandwidth).
        """
        d = self.n_components
        p = sigma.shape[0]
        V_pca = eigh(sigma, subset_by_index=[p - d, p - 1])[1]
        if bandwidth_rows is not None:
            try:
                bandwidth = _median_bandwidth(bandwidth_rows @ V_pca)
            except ValueError as exc:
                raise ValueError(
                    "bandwidth='median' gives a zero bandwidth: the median pairwise distance "
                    "of the PCA-projected rows is 0 (most projected rows are equal); pass "
                    "bandwidth=<positive float>."
                ) from exc
        else:
            bandwidth = float(self.bandwidth)
        self.bandwidth_ = bandwidth

        fit_strata = strata
        method = self.mmd
        if method == "auto":
            n_rows = sum(st.X.shape[0] for st in fit_strata)
            method = "exact" if n_rows <= AUTO_EXACT_MAX_ROWS else "rff"
        self.mmd_method_ = method
        frequencies = None
        if method == "rff":
            frequencies = _qmc_frequencies(d, self.n_random_features, bandwidth, seeds[2])
        basis = None if X is None else _reduction_basis(X, d)
        if basis is not None:  # p > n: solve in the row space of X plus d slack directions
            X, sigma, p = X @ basis, basis.T @ sigma @ basis, basis.shape[1]
            fit_strata = [replace(st, X=st.X @ basis) for st in fit_strata]
            V_pca = eigh(sigma, subset_by_index=[p - d, p - 1])[1]
        penalty = _Penalty(fit_strata, bandwidth, method, frequencies)
        objective = _CachedObjective(X, sigma, penalty)

        _, pen_pca, h_pca, _, _ = objective.terms(V_pca)
        if h_pca <= tau:
            V, self.n_iter_, stopped = V_pca, 0, True
            self.history_ = _history([])
            self._log(f"PCA is already fair (MMD² {h_pca:.3g} <= tau {tau:g}).")
        else:
            V0 = V_pca if self.init == "pca" else self._random_start(objective, seeds[3])
            V, stopped = self._repms(objective, V0, 1.0 / pen_pca, tau)
        if method == "exact":
            self.constraint_value_ = objective.terms(V)[2]
        else:
            rows = _subsample(fit_strata, CERTIFY_MAX_ROWS, np.random.RandomState(seeds[4]))
            self.constraint_value_ = _Penalty(rows, bandwidth, "exact")(V, False)[1]
        if basis is not None:
            V = basis @ V
        return V, stopped

    def _log(self, message):
        (logger.info if self.verbose else logger.debug)(message)

    def _random_start(self, objective, seed):
        """The authors' start: best of 11 random points by variance, then MMD² minimised."""
        rng = np.random.RandomState(seed)
        p, d = objective.n_features, self.n_components
        candidates = [random_point(p, d, rng) for _ in range(_N_RANDOM_STARTS)]
        V = max(candidates, key=lambda W: float(np.sum(W * objective.sigma_times(W))))

        def penalty_only(W):
            _, pen, _, grad, _ = objective.terms(W)
            return pen, grad

        return minimize_lbfgs(penalty_only, V, gtol=_EPS_MIN, max_iter=_INNER_MAX_ITER).point

    def _repms(self, objective, V, rho, tau):
        """Outer loop of Algorithm 1; return the last iterate and whether it stopped."""
        eps = _EPS_START
        eps_min = _EPS_MIN_RFF if objective.penalty.method == "rff" else _EPS_MIN
        records = []
        stopped = False
        newton = False
        for it in range(1, self.max_iter + 1):
            objective.rho = rho
            result, newton = _solve_subproblem(objective, V, eps, newton)
            V_new = result.point
            variance, _, h, _, _ = objective.terms(V_new)
            step = float(np.linalg.norm(V_new - V))
            records.append((rho, eps, h, variance, step, result.n_iter, result.grad_norm))
            self._log(
                f"iteration {it}: rho={rho:.3g}, MMD²={h:.3g}, explained variance={variance:.4f}, "
                f"||dV||={step:.2g}, {result.n_iter} steps ({result.message})"
            )
            V = V_new
            if step <= _STEP_MIN and eps <= eps_min and h <= tau:
                stopped = True
                break
            stuck = result.message == "trust region collapsed" or eps <= eps_min
            if step == 0.0 and stuck and (h <= tau or rho >= _RHO_MAX):
                # The sub-solver could not move (rounding-level line search failure) and
                # rho stays: every later iteration would repeat this one exactly.
                stopped = h <= tau
                self._log(f"no further progress possible (MMD² {h:.3g}, tau {tau:g})")
                break
            eps = max(eps_min, _EPS_DECAY * eps)
            if h > tau:
                rho = min(_RHO_GROWTH * rho, _RHO_MAX)
        self.n_iter_ = it
        self.history_ = _history(records)
        return V, stopped


def _solve_subproblem(objective, V, eps, newton):
    """Minimise ``Q = f + rho * penalty`` from ``V`` to gradient norm ``eps``.

    L-BFGS first: its steps cost one gradient each, while a trust-region step
    costs a conjugate-gradient solve with Hessian products (central differences
    of the gradient with random features), so at loose tau, where L-BFGS meets
    ``eps`` in a few dozen steps, it is 5-10 times faster. At the ``rho`` a
    tight tau needs, the sub-problem's Hessian spans many orders of magnitude
    (condition ~1e7 measured at tau = 1e-6) and L-BFGS stalls far above
    ``eps``: the trust-region Newton method then continues from where it
    stopped. Since ``rho`` only grows and ``eps`` only shrinks, later
    sub-problems are at least as hard, so after the first failure (``newton``
    True) every later one goes straight to trust regions.

    With random features there is no switch: their trigonometric functions are
    in single precision, so the gradient carries rounding errors ~1e-7 relative
    that a difference quotient of it (the only Hessian product available)
    magnifies to ~1e-2; trust regions then spent their 300 steps without
    reaching ``eps = 1e-6`` (minutes at n = 1e5), where L-BFGS stops at once
    with a failed line search.

    Returns
    -------
    result : StiefelResult
        ``n_iter`` counts the steps of both methods.
    newton : bool
        Whether trust regions are to be used from now on.
    """
    n_lbfgs = 0
    if not newton:
        result = minimize_lbfgs(objective, V, gtol=eps, max_iter=_INNER_MAX_ITER)
        if result.converged or objective.penalty.method == "rff":
            return result, False
        V, n_lbfgs = result.point, result.n_iter
    result = minimize_trust_region(
        objective,
        objective.hess_vec,
        V,
        gtol=eps,
        max_iter=_INNER_MAX_ITER,
        theta=_CG_THETA,
        preconditioner=objective.preconditioner,
    )
    return replace(result, n_iter=result.n_iter + n_lbfgs), True


def _reduction_basis(X, n_components):
    """Orthonormal ``Q`` (p, r + d) with the same optimisation problem on ``St(r + d, d)``.

    ``r`` is the rank of the centred ``X`` (n, p); None when ``r + d >= p``
    (nothing to gain). ``Q = [B, E]``: ``B`` spans the row space of ``X`` and
    ``E`` is any ``d`` orthonormal directions orthogonal to it.

    Why the reduction is exact. The cost depends on ``V`` only through
    ``X V`` (variance ``||X V||² / (n tr Sigma)`` and the kernel values of the
    rows ``V^T x_i``). Write ``V = B A + C`` with ``B^T C = 0``; then
    ``X V = X B A`` and ``V^T V = A^T A + C^T C = I``. So the attainable costs
    are those of the matrices ``A`` (r, d) with ``A^T A <= I`` (the ``C`` part
    absorbs the rest: with ``p - r >= d`` any PSD ``I - A^T A`` equals
    ``C^T C`` for ``C = E (I - A^T A)^{1/2}``). These are exactly the
    ``A``-blocks of ``W = [A; D]`` in ``St(r + d, d)``, ``D = (I - A^T A)^{1/2}``.
    Hence ``min over St(p, d)`` equals ``min over St(r + d, d)`` of the cost of
    ``Q W`` (whose product with ``X`` is ``X B A``), and ``V = Q W`` maps back.
    The slack block matters: an optimum may shrink the projection (``A^T A < I``)
    to lower MMD², which the plain row space ``St(r, d)`` would forbid. Moreover,
    from a start ``V_0 = Q W_0`` every Euclidean gradient ``X^T (...)``, tangent
    projection and QR retraction stays in the range of ``Q`` (``qf(Q M) = Q qf(M)``),
    so the iterates are those of the full problem, up to rounding.
    """
    n, p = X.shape
    if n + n_components >= p:
        return None
    _, singular, Wt = np.linalg.svd(X, full_matrices=False)
    rank = int(np.sum(singular > singular[0] * max(n, p) * np.finfo(float).eps))
    if rank + n_components >= p:
        return None
    B = Wt[:rank].T
    # Deterministic slack directions: any orthonormal ones outside the row space will do.
    G = np.random.RandomState(0).standard_normal((p, n_components))
    for _ in range(2):  # twice: one Gram-Schmidt pass loses orthogonality to rounding
        G -= B @ (B.T @ G)
    E = np.linalg.qr(G)[0]
    return np.hstack([B, E])


def _qmc_frequencies(n_components, n_frequencies, bandwidth, seed):
    """Quasi-random frequencies of the RBF kernel, shape (n_components, n_frequencies).

    The spectral measure of ``exp(-||u||² / (2 sigma²))`` is ``N(0, I / sigma²)``;
    its quantile transform of a scrambled Sobol' sequence covers it more evenly
    than independent draws (Avron et al., JMLR 17, 2016). Measured on the
    German credit and COMPAS data (d = 2 and 10) this divides the error of the
    MMD² estimate by 2 to 30 at the same number of features.
    """
    from scipy.stats import norm, qmc

    try:
        sampler = qmc.Sobol(n_components, scramble=True, rng=seed)
    except TypeError:  # scipy < 1.15 names it seed
        sampler = qmc.Sobol(n_components, scramble=True, seed=seed)
    points = sampler.random_base2(int(np.ceil(np.log2(n_frequencies))))[:n_frequencies]
    points = np.clip(points, 2.0**-53, 1.0 - 2.0**-53)
    return norm.ppf(points).T / bandwidth


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
        subsets.append(_Stratum(stratum.X[rows], kept, stratum.groups, stratum.name))
    return subsets


#: Rows of the median heuristic (the default of ``fairpca.metrics.mmd_bandwidth``).
_BANDWIDTH_ROWS = 2000


def _take_rows(block, local):
    return np.asarray(block)[local]


def _gather_rows(X, bounds, rows):
    """Rows ``rows`` (sorted, distinct) of the Dask array ``X``, in one computation.

    ``bounds`` are the first row of each block of ``X`` and the row count; they
    come from the label blocks, since blocks from a Dask DataFrame have unknown
    sizes and cannot be fancy-indexed. Only blocks holding wanted rows are read.

    Returns
    -------
    rows : ndarray of shape (len(rows), n_features), float64
    """
    import dask

    cuts = np.searchsorted(rows, bounds)
    parts = [
        dask.delayed(_take_rows)(block, rows[lo:hi] - first)
        for block, first, lo, hi in zip(
            X.to_delayed().ravel(), bounds[:-1], cuts[:-1], cuts[1:], strict=True
        )
        if hi > lo
    ]
    taken = dask.compute(*parts)
    if not taken:
        return np.empty((0, X.shape[1]))
    return np.concatenate(taken).astype(np.float64, copy=False)


def _history(records):
    keys = (
        "rho",
        "tolerance",
        "mmd2",
        "explained_variance_ratio",
        "step",
        "inner_iterations",
        "grad_norm",
    )
    columns = list(zip(*records, strict=True)) if records else [()] * len(keys)
    return {
        key: np.asarray(col, dtype=int if key == "inner_iterations" else float)
        for key, col in zip(keys, columns, strict=True)
    }
