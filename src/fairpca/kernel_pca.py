r"""Fair kernel PCA: the best kernel-PCA subspace on which every group has the same mean.

Kleindessner, Donini, Russell and Zafar [Kleindessner2023]_ (Section 4) carry
their mean-matching fair PCA (:class:`~fairpca.MeanMatchingFairPCA`) to the
reproducing-kernel Hilbert space ``H`` of a kernel ``k``. With ``phi_c`` the
feature map centred on the training rows, ``m_a`` the mean embedding of group
``a`` and ``m`` the pooled one, the ``d`` directions ``v_j`` of ``H`` solve

.. math::

    \max_{v_1..v_d \text{ orthonormal in } H} \sum_j \frac{1}{n} \sum_i
    \langle v_j, \phi_c(x_i) \rangle^2
    \quad \text{s.t.} \quad \langle v_j, m_a - m \rangle = 0 \text{ for every group } a,

so that every group has the same mean on the representation
``z(x) = (<v_j, phi_c(x)>)_j``: no function that is linear in it separates the
groups on average.

**Exact solution** (``method="exact"``). The directions lie in the span of the
``phi_c(x_i)``: ``v_j = sum_i alpha_ij phi_c(x_i)``. With the centred Gram
matrix ``K = U Lambda U^T`` and ``beta = Lambda^{1/2} U^T alpha`` the problem is
linear PCA in the ``beta`` coordinates: variance ``beta^T Lambda beta / n``,
norm ``beta^T beta``, constraints ``(Lambda^{1/2} U^T c_a)^T beta = 0`` with
``c_a = 1_a / n_a - 1 / n``. Its solution is PCA restricted to the null
space of the ``k - 1`` independent constraints. That route needs the whole
spectrum of ``K`` (an ``O(n^3)`` decomposition); we solve the same problem in one
step that needs only ``d`` eigenpairs. The constraint directions
``t_a = m_a - m = Phi_c^T c_a`` span a subspace ``T`` of ``H`` of dimension
``q <= k - 1``; with ``G = C^T K C`` (``C = [c_a]``) and
``R = V_+ S_+^{-1/2}`` from its nonzero eigenpairs, ``T R`` is an orthonormal
basis of it and ``P = I - T R R^T T^T`` the projector onto its complement.
The constrained optimum is kernel PCA of the projected features
``P phi_c(x_i)``, whose Gram matrix is the rank-``q`` downdate

.. math::

    \tilde K = K - W W^T, \qquad W = K C R .

Its top eigenpairs ``(mu_j, u_j)`` give ``v_j = P Phi_c^T u_j / sqrt(mu_j)``,
i.e. ``alpha_j = (u_j - C R W^T u_j) / sqrt(mu_j)``, and the training
representation ``Z = K alpha = U_d mu^{1/2}``. Every ``v_j`` lies in the
complement of ``T`` by construction, so the group means agree to rounding.
Memory is ``O(n^2)``; a Lanczos solver (ARPACK) finds the ``d`` eigenpairs in
``O(n^2 d)`` per sweep.

**Approximate solution** (``method="approx"``). An explicit ``D``-dimensional
feature map ``psi`` with ``psi(x)^T psi(x') ~ k(x, x')`` turns the problem into
the linear one, solved by :class:`~fairpca.MeanMatchingFairPCA` (null space of
the feature mean differences, then the top eigenvectors of the feature
covariance there) from the group moments of ``psi`` accumulated over chunks of
rows: memory ``O(chunk D + k D^2)``, whatever ``n``. For the RBF kernel ``psi``
is the library's paired random Fourier features at quasi-random frequencies
(:mod:`fairpca._kernels`, ``D = 2 n_random_features``); for the other kernels
it is scikit-learn's :class:`~sklearn.kernel_approximation.Nystroem` map
(``D = n_random_features`` landmark rows).

References
----------
.. [Kleindessner2023] M. Kleindessner, M. Donini, C. Russell and M. B. Zafar.
   "Efficient fair PCA for fair representation learning." AISTATS 2023.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Literal, Self

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import eigh
from scipy.sparse.linalg import eigsh
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from fairpca._config import document_require_groups
from fairpca._dask import _dask_labels, _gather_rows, _is_dask_collection, lazy_rows
from fairpca._front_door import transactional
from fairpca._kernels import (
    _bandwidth_rows,
    _median_bandwidth,
    _qmc_frequencies,
    _rff_features,
    check_feature_moments,
)
from fairpca._linalg import top_eigh
from fairpca._mixins import FairpcaMixin
from fairpca._validation import (
    _check_group_sizes,
    _check_n_groups,
    check_estimator_data,
    check_magnitude,
    check_number,
    check_sensitive_features,
)
from fairpca.mean_matching import mean_matching_components
from fairpca.moments import GroupMoments

__all__ = ["FairKernelPCA"]

#: Kernels of :func:`sklearn.metrics.pairwise.pairwise_kernels` accepted, with
#: the parameters each reads.
_KERNEL_PARAMS = {
    "rbf": ("gamma",),
    "laplacian": ("gamma",),
    "poly": ("gamma", "degree", "coef0"),
    "sigmoid": ("gamma", "coef0"),
    "linear": (),
    "cosine": (),
}
_METHODS = ("auto", "exact", "approx")

#: Kernels whose centred feature map does not change when a constant is added to
#: every row: the rows are centred on the training mean before the kernel is
#: evaluated, so that the kernel never sees the offset's magnitude.
_TRANSLATION_INVARIANT = ("rbf", "laplacian", "linear")

#: Rows of the median bandwidth rule (as in :class:`~fairpca.MMDFairPCA`).
_BANDWIDTH_ROWS = 2000

#: Eigenvalues of the constraint Gram matrix ``G`` below this fraction of its
#: largest are rounding noise (a squared norm: directions of ``T`` shorter than
#: about 3e-6 of the longest). ``G`` always has one exact zero (the weighted
#: sum of the ``c_a`` vanishes).
_GRAM_RTOL = 1e-11

#: Eigenvalues of the projected Gram matrix below this fraction of the largest
#: carry no variance: their directions cannot be normalised.
_SPECTRUM_RTOL = 1e-10

#: Up to this many training rows (or when ``d`` is a sizeable fraction of
#: them) the top eigenpairs come from a dense subset ``eigh``, else from ARPACK.
_DENSE_ROWS = 1000

#: Bytes of one block of kernel values or features in ``fit`` and ``transform``.
_BLOCK_BYTES = 16 * 2**20


@dataclass(frozen=True)
class _FourierFeatures:
    """The random-feature map ``x -> psi(x - shift)`` of the RBF kernel.

    ``frequencies`` has shape (p, D); :func:`fairpca._kernels._rff_features`
    gives ``2 D`` features.
    """

    shift: np.ndarray
    frequencies: np.ndarray

    def transform(self, X):
        return _rff_features(X - self.shift, self.frequencies)


@dataclass(frozen=True)
class _ShiftedMap:
    """A fitted feature map applied to ``X - shift`` (translation-invariant kernels)."""

    shift: np.ndarray
    feature_map: object

    def transform(self, X):
        return self.feature_map.transform(X - self.shift)


def _blocks(n_rows, row_bytes):
    """``(lo, hi)`` row ranges of about ``_BLOCK_BYTES`` each for rows of ``row_bytes``."""
    step = max(1, _BLOCK_BYTES // max(int(row_bytes), 1))
    for lo in range(0, n_rows, step):
        yield lo, min(lo + step, n_rows)


def _constraint_columns(codes, counts):
    """``C = [c_a]`` with ``c_a = 1_a / n_a - 1 / n``, shape (n, k)."""
    n = len(codes)
    C = (codes[:, None] == np.arange(len(counts))).astype(np.float64)
    C /= counts
    C -= 1.0 / n
    return C


def _centre_gram(K):
    """Centre a symmetric Gram matrix in place; return its column means and grand mean."""
    col_means = K.mean(axis=0)
    grand = float(col_means.mean())
    K -= col_means
    K -= col_means[:, None]
    K += grand
    return col_means, grand


def _top_eigenpairs(K, d, seed):
    """The ``d`` largest eigenpairs of a symmetric ``K``, largest first (dense or ARPACK)."""
    n = K.shape[0]
    if n <= _DENSE_ROWS or 5 * d >= n:
        return top_eigh(K, d)
    v0 = check_random_state(seed).uniform(-1.0, 1.0, n)
    values, vectors = eigsh(K, k=d, which="LA", tol=0.0, v0=v0)
    order = np.argsort(-values)
    return values[order], vectors[:, order]


def _exact_dual(K, codes, counts, d, seed):
    """Solve the exact problem from the Gram matrix ``K`` (overwritten).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Uncentred Gram matrix of the training rows; used as workspace.
    codes : ndarray of shape (n,)
        Group code of each row.
    counts : ndarray of shape (k,)
        Rows per group.
    d : int
        Number of directions.
    seed : int
        Start vector of ARPACK.

    Returns
    -------
    alpha : ndarray of shape (n, d)
        Dual coefficients of the directions, columns summing to 0, with
        ``alpha^T K_c alpha = I`` (``K_c`` the centred Gram matrix).
    Z : ndarray of shape (n, d)
        Training representation ``K_c alpha``.
    col_means : ndarray of shape (n,)
        Column means of the uncentred ``K``, for centring test kernels.
    n_constraints : int
        Independent group-mean differences ``q``.
    """
    col_means, _ = _centre_gram(K)
    C = _constraint_columns(codes, counts)
    KC = K @ C
    G = C.T @ KC
    s, V = eigh((G + G.T) / 2.0)
    keep = s > _GRAM_RTOL * max(s.max(), 0.0)
    R = V[:, keep] / np.sqrt(s[keep])
    W = KC @ R
    K -= W @ W.T  # the projected Gram matrix K - W W^T
    mu, u = _top_eigenpairs(K, d, seed)
    if not mu[-1] > _SPECTRUM_RTOL * max(mu[0], 0.0):
        positive = int(np.sum(mu > _SPECTRUM_RTOL * max(mu[0], 0.0)))
        raise ValueError(
            f"n_components={d} is larger than the number of directions of the kernel's "
            f"feature space that keep training variance once the {int(keep.sum())} group-mean "
            f"differences are removed (only {positive} of the top {d} do); "
            f"use n_components <= {positive} or a richer kernel."
        )
    root = np.sqrt(mu)
    alpha = (u - C @ (R @ (W.T @ u))) / root
    alpha -= alpha.mean(axis=0)  # K_c 1 = 0: no change to the directions
    return alpha, u * root, col_means, int(keep.sum())


def _largest_mean_gap(Z, codes, counts):
    """Largest ``||mean_a(Z) - mean(Z)||`` over the groups."""
    means = np.zeros((len(counts), Z.shape[1]))
    np.add.at(means, codes, Z)
    means /= counts[:, None]
    return float(np.max(np.linalg.norm(means - Z.mean(axis=0), axis=1)))


@document_require_groups
class FairKernelPCA(FairpcaMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Fair kernel PCA with equal projected group means (Kleindessner et al., 2023, Sec. 4).

    Finds ``d`` orthonormal directions ``v_j`` of the RKHS of ``kernel`` that
    keep the most variance of the centred feature map among those on which
    every group has the same mean (``<v_j, m_a - m> = 0``, ``m_a`` the group
    mean embeddings, ``m`` the pooled one); see the module docstring for the
    mathematics. The representation of a row ``x`` is

    .. math::

        z_j(x) = \langle v_j, \phi_c(x) \rangle
        = \sum_i \alpha_{ij} \, k_c(x, x_i)

    (exact), with ``k_c`` the kernel centred on the training rows as in kernel
    PCA, or ``z(x) = V^T (psi(x) - mean psi)`` on an explicit feature map
    ``psi`` (approximate). It is not linear in ``x``, so this is not a
    :class:`~fairpca.FairPCABase` (no ``components_`` nor ``inverse_transform``).

    Parameters
    ----------
    n_components : int, default=2
        Number ``d`` of directions. Exact: at most ``n - k`` for ``n`` training
        rows in ``k`` groups, and at most the number of directions that keep
        training variance once the mean differences are removed. Approximate:
        at most ``D - (k - 1)`` for ``D`` features.
    kernel : {"rbf", "laplacian", "poly", "sigmoid", "linear", "cosine"}, default="rbf"
        Kernel, as in :func:`sklearn.metrics.pairwise.pairwise_kernels`;
        ``"rbf"`` is ``exp(-gamma ||x - x'||^2)``.
    gamma : float or None, default=None
        Kernel coefficient of ``"rbf"``, ``"laplacian"``, ``"poly"`` and
        ``"sigmoid"``. ``None``: for ``"rbf"`` the median rule
        ``gamma = 1 / median_{i<j} ||x_i - x_j||^2`` over at most 2000 training
        rows (a ``random_state``-seeded subsample), i.e. bandwidth
        ``sigma = sqrt(median / 2)`` as :func:`fairpca._kernels._median_bandwidth`;
        for the others scikit-learn's ``1 / n_features``.
    degree : int, default=3
        Degree of ``"poly"``.
    coef0 : float, default=1.0
        Offset of ``"poly"`` and ``"sigmoid"``.
    method : {"auto", "exact", "approx"}, default="auto"
        ``"exact"``: the ``n x n`` Gram matrix (memory ``O(n^2)``; refused
        above ``max_exact_samples`` rows). ``"approx"``: the linear problem on
        an explicit feature map, in memory ``O(D^2 k)`` whatever ``n``.
        ``"auto"``: exact up to ``max_exact_samples`` rows, approximate above,
        and always approximate on Dask input (a Dask array or DataFrame, with
        labels aligned as for the other estimators): two passes over the
        blocks (counts and mean, then the group moments of the features) and
        the few thousand rows of the median rule or the landmarks are read.
        There is no ``partial_fit``: the feature map (bandwidth, landmarks,
        centre) depends on all rows, so a streamed fit would depend on the
        chunk order.
    max_exact_samples : int, default=5000
        Most training rows of the exact method (5000 rows take 200 MB per
        ``n x n`` matrix).
    n_random_features : int, default=512
        Approximate method: for ``"rbf"`` the number of random frequencies
        (``2 n_random_features`` cos/sin features); for the other kernels the
        number of Nystroem landmark rows.
    random_state : int, RandomState instance or None, default=None
        Seeds the bandwidth subsample, the random frequencies or landmarks,
        and the ARPACK start vector.
    copy_X : bool, default=True
        Exact method: keep a copy of the training rows in ``X_fit_`` (as
        scikit-learn's :class:`~sklearn.decomposition.KernelPCA`). ``False``
        keeps a reference to the caller's array when no conversion was
        needed: cheaper, but changing that array afterwards changes
        :meth:`transform`.
    %(require_groups)s

    Attributes
    ----------
    n_components_ : int
        Number of output coordinates ``d``.
    method_ : {"exact", "approx"}
        Method used.
    gamma_ : float or None
        Kernel coefficient used (None for ``"linear"`` and ``"cosine"``).
    kernel_ : str
        Kernel used.
    kernel_params_ : dict
        The parameters passed to the kernel (``gamma``, ``degree``,
        ``coef0``: those it reads), resolved at fit. :meth:`transform` reads
        only these fitted values, so ``set_params`` after ``fit`` does not
        change it (refit to use new values).
    centre_ : ndarray of shape (n_features_in_,) or None
        For the translation-invariant kernels (``"rbf"``, ``"laplacian"``,
        ``"linear"``: their centred feature map is unchanged by a common
        offset of the rows), the training mean, subtracted from every row
        before the kernel is evaluated so that an offset's magnitude never
        enters the kernel's rounding; None for the others.
    groups_ : ndarray of shape (n_groups,) or None
        Sorted group labels seen in ``fit`` (None when fitted without groups).
    group_counts_ : ndarray of shape (n_groups,) or None
        Training rows per group.
    n_constraints_ : int
        Independent group-mean differences removed.
    mean_gap_ : float
        Largest norm of a projected training group-mean difference
        ``||mean_a(z) - mean(z)||`` (0 up to rounding).
    explained_variance_ : ndarray of shape (n_components_,)
        Training variance of each output coordinate (divisor ``n``), decreasing.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of ``X`` when it was a DataFrame with string column names.
    X_fit_ : ndarray of shape (n_samples, n_features_in_)
        Exact method: the training rows.
    dual_coef_ : ndarray of shape (n_samples, n_components_)
        Exact method: ``alpha``, with ``alpha^T K_c alpha = I``.
    feature_map_ : object
        Approximate method: the fitted feature map (its ``transform`` gives ``psi``).
    feature_mean_ : ndarray of shape (D,)
        Approximate method: mean of ``psi`` over the training rows.
    components_ : ndarray of shape (n_components_, D)
        Approximate method: orthonormal directions ``V^T`` in feature space.

    See Also
    --------
    MeanMatchingFairPCA : The linear method (this one with a linear kernel).

    Notes
    -----
    Section 4 of [Kleindessner2023]_ (cited in full in the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from fairpca import FairKernelPCA
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(n_samples=400, n_features=5, random_state=0)
    >>> est = FairKernelPCA(n_components=3, random_state=0).fit(X, sensitive_features=s)
    >>> Z = est.transform(X)
    >>> bool(np.allclose(Z[s == 0].mean(axis=0), Z[s == 1].mean(axis=0)))
    True
    """

    #: Dropped by compact(). The exact method's transform reads the training
    #: rows ``X_fit_`` themselves; the approximate one keeps none.
    _group_attributes = ("groups_", "group_counts_")

    # What the front door (fairpca._front_door) reads: the rows themselves,
    # dense; the approximate method on Dask input.
    _supports_dask = True
    _holds_moments = False
    _group_blind_fit = "group-blind kernel PCA"

    def __init__(
        self,
        n_components: int = 2,
        *,
        kernel: Literal["rbf", "laplacian", "poly", "sigmoid", "linear", "cosine"] = "rbf",
        gamma: float | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        method: Literal["auto", "exact", "approx"] = "auto",
        max_exact_samples: int = 5000,
        n_random_features: int = 512,
        random_state: int | np.random.RandomState | None = None,
        copy_X: bool = True,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.method = method
        self.max_exact_samples = max_exact_samples
        self.n_random_features = n_random_features
        self.random_state = random_state
        self.copy_X = copy_X
        self.require_groups = require_groups

    # ------------------------------------------------------------ validation
    def _check_params(self):
        """Validate the hyper-parameters before any data is read; return ``d``."""
        if not isinstance(self.kernel, str) or self.kernel not in _KERNEL_PARAMS:
            raise ValueError(
                f"kernel must be one of {sorted(_KERNEL_PARAMS)}, got {self.kernel!r}."
            )
        if not isinstance(self.method, str) or self.method not in _METHODS:
            raise ValueError(f"method must be one of {list(_METHODS)}, got {self.method!r}.")
        if self.gamma is not None:
            check_number(
                self.gamma, "gamma", numbers.Real, minimum=0.0, include_boundaries="neither"
            )
        check_number(self.degree, "degree", minimum=1)
        check_number(self.coef0, "coef0", numbers.Real)
        check_number(self.max_exact_samples, "max_exact_samples", minimum=2)
        check_number(self.n_random_features, "n_random_features", minimum=1)
        if not isinstance(self.copy_X, bool | np.bool_):
            raise TypeError(f"copy_X must be a bool, got {self.copy_X!r}.")
        return check_number(self.n_components, "n_components", minimum=1)

    def _resolve_method(self, n):
        if self.method == "auto":
            return "exact" if n <= self.max_exact_samples else "approx"
        if self.method == "exact" and n > self.max_exact_samples:
            raise ValueError(
                f'method="exact" needs an n x n Gram matrix; X has {n} rows, more than '
                f'max_exact_samples={self.max_exact_samples}. Use method="approx" (bounded '
                "memory) or raise max_exact_samples."
            )
        return self.method

    def _check_dimension(self, d, method, n, k):
        if method == "exact":
            limit, what = n - k, f"{n} training rows in {k} group(s) (n - k)"
        else:
            width = (
                2 * self.n_random_features
                if self.kernel == "rbf"
                else min(self.n_random_features, n)
            )
            limit, what = width - (k - 1), f"{width} approximate features less {k - 1} constraints"
        if d > limit:
            raise ValueError(f"n_components={d} must be at most {limit}: {what}.")

    def _validate_test_X(self, X):
        """``X`` for ``transform``: numeric, finite, with the fitted features and names."""
        return check_estimator_data(self, X, reset=False)

    def _kernel_gamma(self, n_samples, n_features, read_rows, seed):
        """The kernel coefficient: given, the median rule (RBF) or sklearn's default.

        ``read_rows(indices)`` returns those rows of the training data (the
        median rule reads at most ``_BANDWIDTH_ROWS`` of them).
        """
        if "gamma" not in _KERNEL_PARAMS[self.kernel]:
            return None
        if self.gamma is not None:
            return float(self.gamma)
        if self.kernel != "rbf":
            return 1.0 / n_features
        rows = read_rows(_bandwidth_rows(n_samples, _BANDWIDTH_ROWS, seed))
        try:
            sigma = _median_bandwidth(rows)
        except ValueError:
            raise ValueError(
                "X: the median pairwise squared distance of the rows is 0 (many duplicate "
                "rows), so the median rule gives no RBF gamma; pass gamma explicitly."
            ) from None
        return 0.5 / sigma**2

    def _resolve_kernel(self, gamma, mean):
        """Record the kernel, its parameters and the centre used from now on (fit only)."""
        self.gamma_ = gamma
        self.kernel_ = self.kernel
        params = {"gamma": gamma, "degree": int(self.degree), "coef0": float(self.coef0)}
        self.kernel_params_ = {name: params[name] for name in _KERNEL_PARAMS[self.kernel]}
        invariant = self.kernel in _TRANSLATION_INVARIANT
        self.centre_ = np.array(mean, dtype=np.float64) if invariant else None

    def _pairwise(self, A, B=None):
        """The fitted kernel between rows of ``A`` and ``B`` (already centred by ``centre_``)."""
        return pairwise_kernels(A, B, metric=self.kernel_, **self.kernel_params_)

    def _centred(self, X):
        """``X - centre_`` (a new array), or ``X`` itself for kernels without a centre."""
        return X if self.centre_ is None else X - self.centre_

    # ------------------------------------------------------------------- fit
    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
    ) -> Self:
        """Fit the fair kernel projection.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN, infinities and non-numeric columns are rejected.
        y : None
            Ignored.
        sensitive_features : array-like of shape (n_samples,)
            Protected group of each row (numbers, strings or booleans; at least
            two groups of two rows). If omitted, group-blind kernel PCA is
            fitted with a :class:`~fairpca.GroupBlindFitWarning`, or a
            ``ValueError`` is raised when groups are required (see
            ``require_groups``).

        Returns
        -------
        self : object
            The fitted estimator. A failed fit leaves it as it was.
        """
        self._enter_fit(X, y, sensitive_features)
        return self

    @transactional
    def fit_transform(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
    ) -> np.ndarray:
        """Fit and return the training representation, shape (n_samples, n_components_).

        Exact method: ``K_c alpha`` from the fit itself, equal to
        ``fit(X).transform(X)`` up to rounding.
        """
        Z = self._enter_fit(X, y, sensitive_features)
        return Z if Z is not None else self.transform(X)

    def _fit_in_memory(self, X, y, sensitive_features, weights):
        """Fit on validated ``X``; return the training representation (exact) or None."""
        d = int(self.n_components)
        check_magnitude(X)
        n = X.shape[0]
        if sensitive_features is None:
            groups, codes = None, np.zeros(n, dtype=np.intp)
        else:
            groups, codes = check_sensitive_features(
                sensitive_features, n, min_groups=2, min_group_size=2
            )
        k = 1 if groups is None else len(groups)
        method = self._resolve_method(n)
        self._check_dimension(d, method, n, k)
        counts = np.bincount(codes, minlength=k)
        seeds = check_random_state(self.random_state).randint(np.iinfo(np.int32).max, size=3)
        self.method_, self.n_components_ = method, d
        self.groups_ = groups
        self.group_counts_ = None if groups is None else counts
        gamma = self._kernel_gamma(n, X.shape[1], X.__getitem__, seeds[0])
        self._resolve_kernel(gamma, X.mean(axis=0))
        if method == "exact":
            return self._fit_exact(X, codes, counts, d, seeds[2])
        self._check_feature_moments(n, k)
        fmap = self._feature_map(n, self.centre_, X.__getitem__, seeds[1])
        label_set = np.zeros(1, dtype=np.intp) if groups is None else np.arange(len(groups))
        moments = None
        for lo, hi in _blocks(X.shape[0], 8 * self._n_approx_features(n)):
            part = GroupMoments._from_codes(fmap.transform(X[lo:hi]), codes[lo:hi], label_set)
            moments = part if moments is None else moments.merge(part)
        self._solve_approx(fmap, moments, d)
        return None

    def _fit_dask(self, X, y, sensitive_features, da):
        """Approximate fit on Dask input: two passes over the blocks, a few thousand rows read.

        The first pass gives the group counts and the pooled mean; the rows of
        the median rule (and Nystroem's landmarks) are then read as in memory,
        and the second pass accumulates the group moments of the features
        block by block on the workers.
        """
        import dask

        d = int(self.n_components)
        if self.method == "exact":
            raise ValueError(
                'method="exact" needs the n x n Gram matrix in memory; for Dask input use '
                'method="approx" (or "auto", which chooses it).'
            )
        X = self._dask_features(X, da)
        labels = None
        if sensitive_features is not None:
            labels = _dask_labels(sensitive_features, X, da)
        moments = GroupMoments.from_dask(X, labels)
        n = moments.n_samples
        if labels is not None:
            _check_n_groups(moments.groups)
            _check_group_sizes(moments.groups, moments.counts, 2)
        self._check_dimension(d, "approx", n, moments.n_groups)
        sizes = (labels if labels is not None else X[:, 0]).to_delayed().ravel()
        counts = dask.compute([dask.delayed(len)(block) for block in sizes])[0]
        bounds = np.concatenate([[0], np.cumsum(counts)])

        def read_rows(rows):
            order = np.argsort(rows)
            taken = _gather_rows(X, bounds, rows[order])
            return taken[np.argsort(order)]

        seeds = check_random_state(self.random_state).randint(np.iinfo(np.int32).max, size=3)
        self.method_, self.n_components_ = "approx", d
        self.groups_ = moments.groups if labels is not None else None
        self.group_counts_ = moments.counts if labels is not None else None
        gamma = self._kernel_gamma(n, X.shape[1], read_rows, seeds[0])
        self._resolve_kernel(gamma, moments.pooled_mean)
        self._check_feature_moments(n, moments.n_groups)
        fmap = self._feature_map(n, moments.pooled_mean, read_rows, seeds[1])
        features = GroupMoments.from_dask(X, labels, transform=fmap.transform)
        self._solve_approx(fmap, features, d)

    def _fit_exact(self, X, codes, counts, d, seed):
        K = self._pairwise(self._centred(X))
        alpha, Z, col_means, rank = _exact_dual(K, codes, counts, d, seed)
        del K
        self.X_fit_ = X.copy() if self.copy_X else X
        self.dual_coef_ = alpha
        self._offset = col_means @ alpha
        self.n_constraints_ = rank
        self.mean_gap_ = _largest_mean_gap(Z, codes, counts)
        self.explained_variance_ = (Z**2).mean(axis=0)
        return Z

    def _n_approx_features(self, n):
        return (
            2 * self.n_random_features if self.kernel == "rbf" else min(self.n_random_features, n)
        )

    def _check_feature_moments(self, n, k):
        """Refuse, before any allocation, a feature map whose moments exceed the budget."""
        check_feature_moments(
            self._n_approx_features(n),
            k,
            "FairKernelPCA",
            f"n_random_features={self.n_random_features}",
        )

    def _feature_map(self, n, mean, read_rows, seed):
        """The approximate feature map: random Fourier features (RBF) or Nystroem.

        ``mean`` centres the Fourier features (which only changes their phases);
        Nystroem's landmarks are the rows ``read_rows`` returns for its own
        random choice.
        """
        if self.kernel == "rbf":
            bandwidth = np.sqrt(0.5 / self.gamma_)
            frequencies = _qmc_frequencies(len(mean), self.n_random_features, bandwidth, seed)
            return _FourierFeatures(mean, frequencies)
        from sklearn.kernel_approximation import Nystroem

        width = self._n_approx_features(n)
        # The rows Nystroem picks from all n rows with this seed.
        landmarks = read_rows(np.sort(check_random_state(seed).permutation(n)[:width]))
        nystroem = Nystroem(
            kernel=self.kernel_, n_components=width, random_state=seed, **self.kernel_params_
        )
        if self.centre_ is None:
            return nystroem.fit(landmarks)
        return _ShiftedMap(self.centre_, nystroem.fit(landmarks - self.centre_))

    def _solve_approx(self, fmap, moments, d):
        """Mean-matching PCA of the feature moments; sets the fitted attributes."""
        # With one group (a group-blind fit) there is no constraint: kernel PCA.
        components, self.n_constraints_, gaps = mean_matching_components(moments, d)
        self.mean_gap_ = gaps["mean_gap"]
        variance = np.einsum("rp,pq,rq->r", components, moments.covariance(), components)
        order = np.argsort(-variance, kind="stable")
        self.feature_map_ = fmap
        self.feature_mean_ = moments.pooled_mean
        self.components_ = components[order]
        self.explained_variance_ = variance[order]

    # ------------------------------------------------------------- transform
    def transform(self, X: ArrayLike) -> np.ndarray:
        """The fair representation of ``X``.

        Parameters
        ----------
        X : array-like, Dask array or DataFrame of shape (n_samples, n_features)
            Rows with the features seen in ``fit``. Dask input gives a lazy
            result: each block of rows is mapped with the fitted state (the
            training rows ``X_fit_`` or the feature map), held once in the graph.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components_)
            Exact: ``k_c(X, X_fit_) alpha``, the test kernel centred with the
            training kernel's means (``alpha``'s columns sum to 0, which leaves
            ``k(X, X_fit_) alpha - k_bar^T alpha``, ``k_bar`` the training
            column means). Approximate: ``(psi(X) - feature_mean_) V``.
        """
        check_is_fitted(self)
        if _is_dask_collection(X):
            names = self.get_feature_names_out()
            return lazy_rows(self, "transform", X, self.n_components_, names)
        X = self._validate_test_X(X)
        Z = np.empty((X.shape[0], self.n_components_))
        if self.method_ == "exact":
            X_fit = self._centred(self.X_fit_)
            for lo, hi in _blocks(X.shape[0], 8 * self.X_fit_.shape[0]):
                Kt = self._pairwise(self._centred(X[lo:hi]), X_fit)
                Z[lo:hi] = Kt @ self.dual_coef_ - self._offset
        else:
            for lo, hi in _blocks(X.shape[0], 8 * self.components_.shape[1]):
                F = self.feature_map_.transform(X[lo:hi])
                F -= self.feature_mean_
                Z[lo:hi] = F @ self.components_.T
        return Z

    @property
    def _n_features_out(self):
        """Number of output features, used by ``get_feature_names_out``."""
        return self.n_components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
