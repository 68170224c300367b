"""Fair PCA for data too wide for a p x p matrix: the fair (noisy) power method.

Implements the method of [Lee2023]_: estimate the "unfair subspace" -- the
directions of the group mean differences and the top ``m`` directions of the
group covariance differences -- by block power iterations over the rows, then
run a power method for PCA projected off that subspace. Only ``O(p (d + m) k)``
numbers are held besides one block of rows; ``fit`` makes several passes over
the data (NumPy, processed in blocks, or Dask), ``partial_fit`` one power step
per block (the single-pass noisy power method).

References
----------
.. [Lee2023] J. Lee, H. Cho, S.-Y. Yun and C. Yun. "Fair Streaming Principal
   Component Analysis: Statistical and Algorithmic Viewpoint." NeurIPS 2023.
"""

from __future__ import annotations

import logging
import numbers
import time
from typing import Literal, Self

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from fairpca._config import document_require_groups
from fairpca._dask import _is_dask_collection, lazy_rows
from fairpca._linalg import (
    block_power_iteration,
    flip_signs,
    power_block_width,
    power_stop_message,
)
from fairpca._mixins import FairpcaMixin
from fairpca._stream import (
    _Blocks,
    _difference_operator,
    _group_sums,
    _pooled_product,
    _Stream,
    unfair_directions,
)
from fairpca._validation import (
    check_data,
    check_estimator_data,
    check_largest_magnitude,
    check_number,
    check_sensitive_features,
    largest_magnitude,
)
from fairpca._warnings import warn
from fairpca.moments import GroupMoments

__all__ = ["StreamingFairPCA"]

logger = logging.getLogger(__name__)

#: Largest width for ``solver="exact"``, which holds k + 2 dense p x p matrices.
EXACT_MAX_FEATURES = 5000


def iterations_text(n_iter):
    """``n_iter_`` (phase 1, phase 2) in words, e.g. for a message.

    ``(3, 200)`` is "3 power iterations on the covariance differences, 200 on
    the projected covariance"; ``(0, 0)`` (solved exactly) "no power iterations".
    """
    unfair, pca = (int(n) for n in n_iter)
    if unfair == pca == 0:
        return "no power iterations"
    plural = "" if unfair == 1 else "s"
    return (
        f"{unfair} power iteration{plural} on the covariance differences, "
        f"{pca} on the projected covariance"
    )


class _Progress:
    """INFO lines on a long fit: one per phase, and one per iteration at most every second.

    Handlers are left to the caller (``verbose``, or ``fairpca compare``'s
    handler on the ``fairpca`` logger).
    """

    def __init__(self, phase, blocks, interval=1.0):
        self.phase, self.blocks, self.interval = phase, blocks, interval
        self.last = time.monotonic()

    def iteration(self, n_iter, error):
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            logger.info(
                "StreamingFairPCA %s: power iteration %d, estimated subspace error %.2g "
                "(%d passes over the data so far)",
                self.phase,
                n_iter,
                error,
                self.blocks.n_passes,
            )

    def done(self, result, tol):
        logger.info(
            "StreamingFairPCA %s: %s after %d power iterations, estimated subspace error %.2g "
            "(tol %g), relative eigengap %.3g (%d passes over the data so far)",
            self.phase,
            "converged" if result.error <= tol else "stopped",
            result.n_iter,
            result.error,
            tol,
            result.gap / result.largest,
            self.blocks.n_passes,
        )


# ---------------------------------------------------------------------------
# the exact reference
# ---------------------------------------------------------------------------


def _exact_solution(blocks, d, m):
    """Offline reference: exact group covariances (:class:`GroupMoments`) and ``eigh``.

    Same definitions as the power method; for small p only.
    """
    return _dense_solution(GroupMoments.from_chunks(blocks), d, m)


def _dense_solution(moments, d, m):
    """The fair power method's fixed point from dense moments, by two ``eigh``.

    ``eigh`` of ``A``, then of the projected covariance. Returns ``(diff_values, W, N, values, V)``.
    """
    covariances, weights = moments.second_moment(center="group"), moments.proportions
    within = np.tensordot(weights, covariances, axes=1)
    A = sum(w * (S @ S) for w, S in zip(weights, covariances, strict=True)) - within @ within
    diff_values, vectors = np.linalg.eigh(A)
    W = vectors[:, ::-1][:, :m]
    covariance = moments.covariance()
    scale = float(np.sqrt(max(float(np.trace(covariance)), 0.0)))
    N = unfair_directions(moments.means, weights, W, scale)
    complement = np.eye(moments.n_features) - N @ N.T
    values, vectors = np.linalg.eigh(complement @ covariance @ complement)
    return diff_values[::-1][:m], W, N, values[::-1][:d], vectors[:, ::-1][:, :d]


def _row_space_solution(X, codes, groups, d, m):
    """The exact solution for a short, wide ``X`` (n < p): in the span of its centred rows.

    Every group mean difference and every group covariance lives in the span
    ``R`` of the rows of ``X - mean`` (dimension ``r <= n - 1``): with ``Q``
    an orthonormal basis of ``R`` (thin SVD, ``O(n^2 p)``), the problem is
    the same in the coordinates ``Y = (X - mean) Q`` (``n x r``) and its
    solution, lifted by ``Q``, is the exact one. Returns None when ``R``
    is too narrow for ``m`` covariance directions and ``d`` components
    outside the unfair subspace (the rest of the answer would be directions
    without variance, which only the power method picks).

    Returns
    -------
    (diff_values, W, N, values, V) or None
    """
    centred = X - X.mean(axis=0)
    U, singular, Vt = np.linalg.svd(centred, full_matrices=False)
    rank = int(np.sum(singular > singular[0] * max(X.shape) * np.finfo(float).eps))
    if rank < m or rank < d + m + len(groups) - 1:
        return None
    Q = Vt[:rank].T
    moments = GroupMoments._from_codes(U[:, :rank] * singular[:rank], codes, groups)
    diff_values, W, N, values, V = _dense_solution(moments, d, m)
    if rank - N.shape[1] < d:
        return None
    return diff_values, Q @ W, Q @ N, values, Q @ V


# ---------------------------------------------------------------------------
# estimator
# ---------------------------------------------------------------------------


@document_require_groups
class StreamingFairPCA(
    FairpcaMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    r"""Fair PCA by the fair noisy power method, in ``O(p (d + m))`` memory [Lee2023]_.

    With group means ``mu_a``, proportions ``w_a`` and covariances ``Sigma_a``
    (about their own means), the **unfair subspace** is spanned by

    - the mean differences ``mu_a - mu`` (at most ``k - 1`` directions), and
    - the top ``m`` eigenvectors ``W`` of
      ``A = sum_a w_a (Sigma_a - Sigma_w)^2``, ``Sigma_w = sum_a w_a Sigma_a``.
      For two groups ``A = w_0 w_1 (Sigma_1 - Sigma_0)^2``: its top
      eigenvectors are those of the covariance difference with the largest
      absolute eigenvalues, as in the paper; for ``k`` groups ``A`` adds each
      group's squared deviation from the pooled within-group covariance, so a
      direction counts as unfair when any group's variance along it differs.

    With ``N`` an orthonormal basis of that subspace, the components are the
    top ``d`` eigenvectors of ``(I - N N^T) Sigma (I - N N^T)``, ``Sigma`` the
    covariance of all rows about the pooled mean: every projected group mean
    is the same, and the projected covariances differ only through what the
    top ``m`` directions did not capture.

    **Solvers.** ``solver="power"`` (default) never forms a ``p x p`` matrix:
    one pass for the group means, then block power iterations with
    Rayleigh-Ritz on ``A`` (two passes per iteration: ``A W`` expands to
    ``sum_a w_a Sigma_a (Sigma_a W) - Sigma_w (Sigma_w W)``) and on the
    projected ``Sigma`` (one pass per iteration), each on ``q = m + oversampling``
    (resp. ``d + oversampling``) columns from a seeded Gaussian start, kept
    orthonormal inside the operator's domain (the complement of ``N`` for
    the projected ``Sigma``; rank-deficient blocks, e.g. from duplicated
    features, are refilled with random directions there). The top ``d``
    Ritz subspace approaches the exact one by a factor of about
    ``lambda_(q+1) / lambda_d`` per iteration, so oversampling is what makes
    small eigengaps ``lambda_d - lambda_(d+1)`` cheap. Each stops when the
    Davis-Kahan bound ``sqrt(2) ||R||_F / (theta_d - theta_(d+1))`` -- the
    Ritz residual ``R = A V - V Theta`` over the estimated eigengap -- is at
    most ``tol``: an estimate of the distance ``||V V^T - V* V*^T||_F``
    (:func:`~fairpca.riemannian.subspace_distance`, ``sqrt(2)`` times the
    Frobenius norm of the principal-angle sines) to the exact top subspace
    ``V*`` of that phase's operator, not merely of the last step's change.
    When eigenvalues ``d`` and ``d + 1`` nearly tie, so that the bound cannot
    reach ``tol`` at working precision, the iteration stops early with a
    ``ConvergenceWarning`` saying so. Progress goes to this module's logger
    at INFO level: one line per phase, and at most one per second inside it.
    ``solver="exact"`` is the offline reference: the same definitions with
    dense covariances and ``eigh`` (at most
    :data:`EXACT_MAX_FEATURES` features).

    **Short, wide data.** When a NumPy ``X`` fits in one block (``n <=
    block_size``) and has fewer rows than features, ``fit`` solves the same
    problem exactly and without iterations in the span of the centred rows,
    where every mean difference and group covariance lives: a thin SVD of
    the ``n x p`` block (``O(n^2 p)``, memory of a few blocks), then the
    dense solution in ``r <= n - 1`` coordinates, lifted back
    (``n_iter_ == (0, 0)``). The power iterations would need hundreds of
    passes there, as the ``n - 1`` non-zero eigenvalues of a short sample's
    covariance nearly tie (measured: 20 rows x 10,000 features took 2.9 s of
    CPU and 524 passes, now 0.02 s).

    **Offsets.** The group means are summed around the first row, and the
    rank of the mean differences counts singular values above both
    ``1e-10 sqrt(trace Sigma)`` and the rounding of the stored means
    (``8 eps sqrt(p) max |mu_a|``), at most ``k - 1``: adding a constant to
    every row changes the fit only by the rounding of the offset data.

    **partial_fit** is the single-pass (noisy) power method of the paper for a
    stream: each block updates the running group means and counts and makes
    one power step on each subspace with that block's covariance estimates
    (centred by the running means). Its accuracy is limited by the block
    size -- the power steps see each block once -- so it approaches the
    ``fit`` solution statistically, not exactly; ``fit`` is the method of
    choice whenever the data can be read more than once.

    **Without groups.** ``fit`` and ``partial_fit`` without
    ``sensitive_features`` follow the package's rule: by default they fit
    streaming PCA with no unfair directions (the same power method with all
    rows in one group and ``unfair_rank`` unused, so ``unfair_subspace_`` is
    empty and ``groups_`` is None) with a :class:`~fairpca.GroupBlindFitWarning`;
    with ``require_groups=True`` they raise ``ValueError`` instead.

    Parameters
    ----------
    n_components : int, default=2
        Target dimension ``d``.
    unfair_rank : int, default=2
        ``m``, the number of covariance-difference directions removed.
    block_size : int, default=1000
        Rows per block when ``fit`` reads a NumPy array (Dask arrays use
        their own row chunks).
    solver : {"power", "exact"}, default="power"
    oversampling : int, default=10
        Extra columns of the power iterations (faster, surer convergence); at
        least one is used whenever the domain allows, as its Ritz value
        estimates the eigengap of the stopping rule.
    tol : float, default=1e-6
        Stop when the estimated :func:`~fairpca.riemannian.subspace_distance`
        from each phase's top Ritz subspace to its exact top subspace (the
        Davis-Kahan bound above) is at most this.
    max_iter : int, default=200
        Power iterations per subspace.
    random_state : int, RandomState or None, default=None
        Seed of the Gaussian starts.
    verbose : int, default=0
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal rows, orthogonal to ``unfair_subspace_``.
    explained_variance_ : ndarray of shape (n_components,)
        Variance of all training rows along each component.
    mean_ : ndarray of shape (n_features,)
        Pooled mean.
    group_means_ : ndarray of shape (n_groups, n_features)
        One row (the pooled mean) when fitted without groups.
    group_counts_ : ndarray of shape (n_groups,)
        One entry (all rows) when fitted without groups.
    groups_ : ndarray of shape (n_groups,) or None
        Sorted group labels (None when fitted without groups).
    unfair_subspace_ : ndarray of shape (n_features, r)
        Orthonormal basis ``N`` (``r <= n_groups - 1 + unfair_rank``).
    covariance_directions_ : ndarray of shape (n_features, unfair_rank)
        The top ``m`` eigenvectors ``W`` of ``A``.
    covariance_difference_ : ndarray of shape (unfair_rank,)
        Their eigenvalues (of ``A``, in squared covariance units: ``inf`` or 0
        for data far from unit size, whose fourth powers leave the float64
        range; the fit itself works on the data divided by a power of two).
    n_iter_ : tuple of (int, int)
        Power iterations on ``A`` and on the projected covariance (0, 0 for
        ``solver="exact"``; for ``partial_fit``, the number of power steps).
    n_passes_ : int
        Passes over the data made by ``fit``.
    converged_ : bool
        Whether both power iterations' estimated subspace errors reached ``tol``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Examples
    --------
    >>> from fairpca import StreamingFairPCA
    >>> from fairpca.datasets import make_wide_groups
    >>> X, s = make_wide_groups(n_samples=600, n_features=300, random_state=0)
    >>> est = StreamingFairPCA(n_components=2, unfair_rank=4, random_state=0)
    >>> Z = est.fit(X, sensitive_features=s).transform(X)
    >>> Z.shape, bool(est.converged_)
    ((600, 2), True)
    """

    #: Dropped by compact(): the groups, their means, and the unfair subspace with
    #: the covariance-difference directions and values found from the groups'
    #: moments (transform reads only ``components_`` and ``mean_``); ``_stream``
    #: is partial_fit's state (running group means, buffered rows).
    _group_attributes = (
        "groups_",
        "group_counts_",
        "group_means_",
        "unfair_subspace_",
        "covariance_directions_",
        "covariance_difference_",
        "_stream",
    )

    # What the front door (fairpca._front_door) reads: dense rows, read in
    # blocks (NumPy) or by Dask; partial_fit is the noisy power method.
    _supports_dask = True
    _supports_partial_fit = True
    _linear_projection = True
    _holds_moments = False
    _partial_fit_state = "group_means_"
    _group_blind_fit = "streaming PCA with no unfair directions"

    def __init__(
        self,
        n_components: int = 2,
        *,
        unfair_rank: int = 2,
        block_size: int = 1000,
        solver: Literal["power", "exact"] = "power",
        oversampling: int = 10,
        tol: float = 1e-6,
        max_iter: int = 200,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.unfair_rank = unfair_rank
        self.block_size = block_size
        self.solver = solver
        self.oversampling = oversampling
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.require_groups = require_groups

    # ------------------------------------------------------------- validation
    def _check_params(self):
        """Validate the parameters before any data is read."""
        check_number(self.n_components, "n_components", minimum=1)
        check_number(self.unfair_rank, "unfair_rank", minimum=0)
        check_number(self.block_size, "block_size", minimum=1)
        check_number(self.oversampling, "oversampling", minimum=0)
        check_number(self.tol, "tol", numbers.Real, minimum=0, include_boundaries="neither")
        check_number(self.max_iter, "max_iter", minimum=1)
        check_number(self.verbose, "verbose", minimum=0)
        if self.solver not in ("power", "exact"):
            raise ValueError(f"solver must be 'power' or 'exact', got {self.solver!r}.")

    def _check_width_params(self, n_features, grouped=True):
        """The parameters bounded by the width; ``unfair_rank`` is not used by a group-blind fit."""
        if not grouped and self.n_components >= n_features:
            raise ValueError(
                f"n_components must be below n_features={n_features}, got {self.n_components}."
            )
        if grouped and self.n_components + self.unfair_rank >= n_features:
            raise ValueError(
                f"n_components + unfair_rank must be below n_features={n_features}, got "
                f"{self.n_components} + {self.unfair_rank}."
            )
        if self.solver == "exact" and n_features > EXACT_MAX_FEATURES:
            raise ValueError(
                f"solver='exact' holds dense {n_features} x {n_features} matrices; it is the "
                f"offline reference for at most {EXACT_MAX_FEATURES} features. Use "
                "solver='power'."
            )

    def _forget_fit(self):
        super()._forget_fit()
        self.__dict__.pop("_stream", None)  # a fit replaces any partial_fit stream

    def _check_not_compacted(self, fitted="mean_", needed=None):
        if not hasattr(self, "_stream"):  # a stream carries its own state
            super()._check_not_compacted(fitted, needed)

    @staticmethod
    def _groups(sensitive_features, n_samples):
        """Groups and codes of a fit (None and zeros without ``sensitive_features``)."""
        if sensitive_features is None:
            return None, np.zeros(n_samples, dtype=np.intp)
        if _is_dask_collection(sensitive_features):
            sensitive_features = sensitive_features.compute()
        return check_sensitive_features(
            sensitive_features, n_samples, min_groups=2, min_group_size=2
        )

    # ------------------------------------------------------------- fit
    def fit(
        self, X: ArrayLike, y: ArrayLike | None = None, *, sensitive_features: ArrayLike = None
    ) -> Self:
        """Fit on a NumPy array (read in blocks) or a Dask array (one pass per step).

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
        y : ignored
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Group labels (at least two groups). If omitted, streaming PCA with
            no unfair directions is fitted with a
            :class:`~fairpca.GroupBlindFitWarning`, or a ``ValueError`` is
            raised when groups are required (see ``require_groups``).

        Returns
        -------
        self : StreamingFairPCA
        """
        self._enter_fit(X, y, sensitive_features)
        return self

    def _fit_in_memory(self, X, y, sensitive_features, weights):
        groups, codes = self._groups(sensitive_features, X.shape[0])
        self._fit_blocks(X, groups, codes, sensitive_features is not None)

    def _fit_dask(self, X, y, sensitive_features, da):
        """Dask ``X`` with one column chunk; the labels are brought into memory."""
        X = da.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s).")
        if not np.issubdtype(X.dtype, np.number):
            raise TypeError(f"X must be numeric, got dtype {X.dtype}.")
        X = X.rechunk({1: -1})
        self.n_features_in_ = X.shape[1]
        groups, codes = self._groups(sensitive_features, X.shape[0])
        self._fit_blocks(X, groups, codes, sensitive_features is not None)

    def _fit_blocks(self, X, groups, codes, grouped):
        """The fair power method (or the exact solutions) over blocks of ``X``."""
        n, p = X.shape
        self._check_width_params(p, grouped)
        d, m = self.n_components, self.unfair_rank if grouped else 0
        blocks = _Blocks(X, codes, self.block_size)
        n_groups = len(groups) if grouped else 1
        counts, group_means, largest, spread, variance = _group_sums(blocks, n_groups)
        if spread == 0:
            raise ValueError("X is constant (every row the same): there is no variance to project.")
        check_largest_magnitude(largest)
        blocks.scale = 2.0 ** np.round(np.log2(largest))
        group_means = group_means / blocks.scale
        weights = counts / counts.sum()
        solution = None
        if self.solver == "exact":
            solution = _exact_solution(blocks, d, m)
        elif n <= self.block_size and n < p and not _is_dask_collection(X):
            solution = _row_space_solution(
                np.asarray(X, dtype=np.float64) / blocks.scale,
                codes,
                groups if grouped else np.zeros(1),
                d,
                m,
            )
            if solution is not None:
                logger.info(
                    "StreamingFairPCA: %d rows < %d features: solved exactly in the span of "
                    "the centred rows (no power iterations)",
                    n,
                    p,
                )
        if solution is not None:
            diff_values, W, N, values, V = solution
            n_iter, converged = (0, 0), True
        else:
            logger.info(
                "StreamingFairPCA: means of %d rows in %d groups (1 pass); power iterations next",
                n,
                n_groups,
            )
            rng = check_random_state(self.random_state)
            diff_values, W, N, values, V, n_iter, converged = self._fit_power(
                blocks, group_means, weights, rng, np.sqrt(variance) / blocks.scale, m
            )
        logger.log(
            logging.INFO if self.verbose else logging.DEBUG,
            "unfair subspace of rank %d; %s; %d passes over the data",
            N.shape[1],
            iterations_text(n_iter),
            blocks.n_passes,
        )
        scale = blocks.scale
        with np.errstate(over="ignore", under="ignore"):  # a fourth-power scale
            diff_values = diff_values * scale**4
        self._set_fitted(
            groups,
            counts,
            group_means * scale,
            W,
            diff_values,
            N,
            V,
            values * scale**2,
            n,
        )
        self.n_iter_, self.n_passes_, self.converged_ = n_iter, blocks.n_passes, bool(converged)
        return self

    def _fit_power(self, blocks, group_means, weights, rng, scale, m):
        """Phases 1 and 2 of the fair power method; warns (one line) if a phase stops early.

        ``scale`` is ``sqrt(trace Sigma)`` in the units of the scaled blocks; ``m``
        the number of covariance-difference directions (0 for a group-blind fit).
        """
        p = group_means.shape[1]
        d, tol = self.n_components, self.tol
        phases = []
        W, diff_values = np.zeros((p, 0)), np.zeros(0)
        if m:
            unfair = block_power_iteration(
                lambda B: _difference_operator(blocks, group_means, weights, B),
                rng.standard_normal((p, power_block_width(m, self.oversampling, p))),
                m,
                tol,
                self.max_iter,
                rng,
                progress=_Progress("phase 1 (covariance differences)", blocks),
            )
            diff_values, W = unfair.values, unfair.vectors
            phases.append(("phase 1 (covariance differences)", unfair, m))
        N = unfair_directions(group_means, weights, W, scale)
        if p - N.shape[1] < d:
            raise ValueError(
                f"n_components={d} is more than the {p - N.shape[1]} dimension(s) left once the "
                f"unfair subspace of rank {N.shape[1]} ({N.shape[1] - W.shape[1]} group-mean "
                f"differences and unfair_rank={m}) is removed; lower n_components or unfair_rank."
            )
        mean = weights @ group_means

        def project(B):
            return B - N @ (N.T @ B)

        # The operator (I - N N^T) Sigma (I - N N^T) on the complement of N: the
        # basis lies there, so one projection of Sigma @ basis applies it.
        pca = block_power_iteration(
            lambda B: project(_pooled_product(blocks, mean, B)),
            rng.standard_normal((p, power_block_width(d, self.oversampling, p - N.shape[1]))),
            d,
            tol,
            self.max_iter,
            rng,
            project=project,
            progress=_Progress("phase 2 (projected covariance)", blocks),
        )
        phases.append(("phase 2 (projected covariance)", pca, d))
        n_iter = (unfair.n_iter if m else 0, pca.n_iter)
        converged = True
        for phase, result, n_keep in phases:
            if result.error > tol:
                converged = False
                warn(
                    power_stop_message(
                        f"StreamingFairPCA {phase}", result, tol, n_keep, self.oversampling
                    ),
                    ConvergenceWarning,
                )
        return diff_values, W, N, pca.values, pca.vectors, n_iter, converged

    def _set_fitted(self, groups, counts, group_means, W, diff_values, N, V, values, n):
        """Set the fitted attributes; ``groups`` is None for a group-blind fit."""
        weights = counts / counts.sum()
        self.groups_, self.group_counts_, self.group_means_ = groups, counts, group_means
        self.mean_ = weights @ group_means
        self.covariance_directions_, self.covariance_difference_ = W, diff_values
        self.unfair_subspace_ = N
        self.components_ = flip_signs(V.T)
        self.explained_variance_ = values * n / max(n - 1, 1)
        self._n_features_out = self.components_.shape[0]

    # ------------------------------------------------------------- partial_fit
    def partial_fit(
        self, X: ArrayLike, y: ArrayLike | None = None, *, sensitive_features: ArrayLike = None
    ) -> Self:
        """One step of the noisy power method per ``block_size`` rows of a stream.

        Rows are buffered until ``block_size`` of them have arrived (the
        first call's rows included), then consumed in arrival order, one power
        step per block. Components exist once the consumed blocks hold two
        groups and rows that are not all the same; until then
        :meth:`transform` raises a ``NotFittedError`` saying which of these is
        missing.

        After :meth:`fit`, ``partial_fit`` continues from the fitted model
        (as scikit-learn's incremental estimators do): the running group
        means and counts start at the fit's and the power blocks at its
        components and covariance directions; ``X`` must have the fitted
        features (else a ``ValueError``). :meth:`fit` always starts afresh,
        discarding any stream.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of the stream (any number).
        y : ignored
        sensitive_features : array-like of shape (n_samples,)
            Group labels of the rows; a block may hold one group, and groups
            may appear in later blocks. Give it in every call or in none
            (streaming PCA with no unfair directions, with the rule of :meth:`fit`).

        Returns
        -------
        self : StreamingFairPCA
        """
        self._enter_partial_fit(X, y, sensitive_features)
        return self

    def _partial_fit_chunk(self, X, y, sensitive_features, weights):
        grouped = sensitive_features is not None
        first = not hasattr(self, "_stream")
        if first and self.solver != "power":
            raise ValueError("partial_fit is the power method; use solver='power'.")
        warm = first and hasattr(self, "components_")  # after fit: continue from it
        if first:
            self._check_width_params(X.shape[1], grouped)
        if grouped:
            labels, codes = check_sensitive_features(sensitive_features, X.shape[0])
        else:
            labels, codes = np.zeros(1, dtype=np.intp), np.zeros(X.shape[0], dtype=np.intp)
        largest = largest_magnitude(X)
        check_largest_magnitude(largest)
        if first:
            rng = check_random_state(self.random_state)
            if warm:
                self._stream = _Stream.from_fit(self, rng)
            else:
                self._stream = _Stream(
                    X.shape[1],
                    self.n_components,
                    self.unfair_rank if grouped else 0,
                    self.oversampling,
                    self.block_size,
                    rng,
                    # A power of two near the first block's size: the steps form fourth powers.
                    2.0 ** np.round(np.log2(largest)) if largest > 0 else 1.0,
                )
                self._stream.grouped = grouped
        # On a copy: a failure inside a step must leave the stream as it was.
        stream = self._stream.copy()
        stream.update(X / stream.scale, labels, codes)
        self._stream = stream
        if stream.components is not None and not stream.varied:
            warn(
                "StreamingFairPCA.partial_fit: every row so far is the same (X is constant): "
                "there is no variance to project, so there are no components until rows "
                "that differ arrive (fit refuses such data).",
                UserWarning,
            )
        elif stream.components is not None and stream.n_steps:
            order = sorted(
                (a for a in range(len(stream.groups)) if stream.counts[a] > 0),
                key=lambda a: stream.groups[a],
            )
            counts = np.array(stream.counts)[order]
            with np.errstate(over="ignore", under="ignore"):  # a fourth-power scale
                diff_values = stream.diff_values * stream.scale**4
            self._set_fitted(
                np.array([stream.groups[a] for a in order]) if grouped else None,
                counts,
                np.array(stream.means)[order] * stream.scale,
                stream.covariance_directions,
                diff_values,
                stream.N,
                stream.components,
                stream.values * stream.scale**2,
                int(counts.sum()),
            )
            self.n_iter_ = (stream.n_unfair_steps, stream.n_steps)
            self.n_passes_, self.converged_ = 1, False
        if not hasattr(self, "components_"):
            logger.info("StreamingFairPCA.partial_fit: %s", stream.why_no_components())
        return self

    # ------------------------------------------------------------- transform
    def _check_fitted(self):
        if hasattr(self, "_stream") and not hasattr(self, "components_"):
            raise NotFittedError(
                f"StreamingFairPCA has no components yet: {self._stream.why_no_components()}"
            )
        check_is_fitted(self, "components_")

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Project ``X``: ``(X - mean_) @ components_.T``, without a centred copy of ``X``.

        Parameters
        ----------
        X : array-like, Dask array or DataFrame of shape (n_samples, n_features)
            Dask input gives a lazy result of the same kind.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        self._check_fitted()
        if _is_dask_collection(X):
            names = self.get_feature_names_out()
            return lazy_rows(self, "transform", X, self.components_.shape[0], names)
        X = check_estimator_data(self, X, reset=False)
        return X @ self.components_.T - self.mean_ @ self.components_.T

    def inverse_transform(self, Z: ArrayLike) -> np.ndarray:
        """Map scores back: ``Z @ components_ + mean_``.

        Parameters
        ----------
        Z : array-like, Dask array or DataFrame of shape (n_samples, n_components)
            Dask input gives a lazy result of the same kind.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        """
        self._check_fitted()
        if _is_dask_collection(Z):
            names = getattr(self, "feature_names_in_", None)
            return lazy_rows(self, "inverse_transform", Z, self.n_features_in_, names)
        Z = check_data(Z, "Z")
        if Z.shape[1] != self.components_.shape[0]:
            raise ValueError(
                f"Z has {Z.shape[1]} columns, expected n_components={self.components_.shape[0]}."
            )
        return Z @ self.components_ + self.mean_
