"""Synthetic data sets with a sensitive attribute.

Three generators reproduce the synthetic settings of the papers implemented in
fairpca; the fourth, :func:`make_gaussian_groups`, is the library's own demo data
set (used by ``fairpca compare``).

Every generator draws from ``sklearn.utils.check_random_state(random_state)``
only, so the same seed always gives the same arrays, and returns
``(X, sensitive)`` with ``X`` a float64 array of shape (n_samples, n_features)
and ``sensitive`` an int64 array of group labels ``0, 1, ...``.

References
----------
.. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
   "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
   Manifold." AAAI 2022.
.. [Vu2022] H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally
   Robust Fair Principal Components via Geodesic Descents." ICLR 2022.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike
from scipy.signal import lfilter
from scipy.special import expit
from sklearn.utils import check_random_state

from fairpca._validation import check_number

__all__ = [
    "make_gaussian_groups",
    "make_mmd_synthetic1",
    "make_mmd_synthetic2",
    "make_robust_toy",
]


# --------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}.")
    return bool(value)


def _check_random_state(random_state):
    """``check_random_state`` with errors that name ``random_state``."""
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError("random_state must be None, an int or a numpy RandomState, got a bool.")
    try:
        return check_random_state(random_state)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            "random_state must be None, an int in [0, 2**32 - 1] or a "
            f"numpy.random.RandomState instance, got {random_state!r}."
        ) from exc


def _labels(counts):
    """Group labels 0, 1, ... repeated ``counts[a]`` times, as int64."""
    return np.repeat(np.arange(len(counts), dtype=np.int64), counts)


# --------------------------------------------------------------------------
# Lee et al. (2022), synthetic data #1
# --------------------------------------------------------------------------


def make_mmd_synthetic1(
    n_per_group: int = 150, random_state: int | np.random.RandomState | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Two groups with equal mean and covariance but different distributions.

    The "synthetic data #1" of Lee et al. (2022), section 8.1, used there to show
    that matching the first two moments of the projected groups (as the convex
    fair PCA of Olfat & Aswani does) does not make them indistinguishable:

    - group 0 ~ N_3(0, 0.1 I + 1 1^T);
    - group 1 ~ the balanced mixture of N_3(+1, 0.1 I) and N_3(-1, 0.1 I).

    Both groups have mean 0 and covariance ``0.1 I + 1 1^T``, yet group 0 is
    unimodal and group 1 has two well separated modes.

    Parameters
    ----------
    n_per_group : int, default=150
        Number of rows of each group (at least 2). The paper uses 150.
    random_state : int, RandomState instance or None, default=None
        Seed or generator, passed to ``sklearn.utils.check_random_state``
        (``None`` uses numpy's global ``RandomState``, as in scikit-learn).

    Returns
    -------
    X : ndarray of shape (2 * n_per_group, 3), dtype float64
        Rows of group 0 first, then rows of group 1.
    sensitive : ndarray of shape (2 * n_per_group,), dtype int64
        Group label of each row, 0 or 1.

    Notes
    -----
    "Balanced" is taken literally: exactly ``n_per_group // 2`` rows of group 1
    come from the component centred at +1 and the others from the component at
    -1 (as in the paper's figure), in random order within the group. Group 0 is
    drawn as ``c 1 + sqrt(0.1) z`` with ``c ~ N(0, 1)`` and ``z ~ N_3(0, I)``,
    which has exactly the stated covariance.

    References
    ----------
    J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo. "Fast and
    Efficient MMD-based Fair PCA via Optimization over Stiefel Manifold."
    AAAI 2022, section 8.1.

    Examples
    --------
    >>> from fairpca.datasets import make_mmd_synthetic1
    >>> X, s = make_mmd_synthetic1(random_state=0)
    >>> X.shape, s.shape
    ((300, 3), (300,))
    """
    n = check_number(n_per_group, "n_per_group", minimum=2)
    rng = _check_random_state(random_state)
    noise_sd = np.sqrt(0.1)

    common = rng.standard_normal((n, 1))
    group0 = common + noise_sd * rng.standard_normal((n, 3))

    signs = np.where(np.arange(n) < n // 2, 1.0, -1.0)
    signs = rng.permutation(signs)[:, None]
    group1 = signs + noise_sd * rng.standard_normal((n, 3))

    X = np.ascontiguousarray(np.vstack([group0, group1]), dtype=np.float64)
    return X, _labels([n, n])


# --------------------------------------------------------------------------
# Lee et al. (2022), synthetic data #2 (supplementary section H)
# --------------------------------------------------------------------------

_SYN2_LATENT_DIM = 1000
_SYN2_BLOCK_AR = (
    (0.99, 0.98, 0.97, 0.98, 0.95),  # group 0
    (0.99, 0.98, 0.97, 0.98, 0.99),  # group 1
)
_SYN2_MEAN_SHIFT_NORM = 2.0


def _ar1_covariance(r, size):
    """Stationary AR(1) covariance with unit innovations: r^|i-j| / (1 - r^2)."""
    lag = np.abs(np.subtract.outer(np.arange(size), np.arange(size)))
    return r**lag / (1.0 - r**2)


def _syn2_covariance_scale():
    """Spectral norm of the raw covariance difference A^(1) - A^(0).

    Both raw covariances are block diagonal with the same blocks, so the norm
    of the difference is the largest norm over the blocks' differences.
    """
    size = _SYN2_LATENT_DIM // len(_SYN2_BLOCK_AR[0])
    norms = [
        np.max(np.abs(np.linalg.eigvalsh(_ar1_covariance(r1, size) - _ar1_covariance(r0, size))))
        for r0, r1 in zip(*_SYN2_BLOCK_AR, strict=True)
        if r0 != r1
    ]
    return max(norms)


def _syn2_latent_mean_shift():
    """Mean difference f = 2 * 1 / ||1|| in the latent space."""
    return np.full(
        _SYN2_LATENT_DIM, _SYN2_MEAN_SHIFT_NORM / np.sqrt(_SYN2_LATENT_DIM), dtype=np.float64
    )


def _syn2_sample_latent(rng, group, n, scale):
    """Draw n rows of the latent zero-mean Gaussian of ``group``.

    Each AR(1) block is simulated exactly by its recursion
    x_1 = e_1 / sqrt(1 - r^2), x_t = r x_{t-1} + e_t (stationary start), which
    has covariance r^|i-j| / (1 - r^2) and costs O(n p0) instead of a Cholesky
    factorisation.
    """
    size = _SYN2_LATENT_DIM // len(_SYN2_BLOCK_AR[group])
    blocks = []
    for r in _SYN2_BLOCK_AR[group]:
        innovations = rng.standard_normal((n, size))
        innovations[:, 0] /= np.sqrt(1.0 - r**2)
        blocks.append(lfilter([1.0], [1.0, -r], innovations, axis=1))
    return np.hstack(blocks) / np.sqrt(scale)


@overload
def make_mmd_synthetic2(
    n_features: int = ...,
    n_per_group: int = ...,
    random_state: int | np.random.RandomState | None = ...,
    *,
    return_params: Literal[False] = ...,
) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def make_mmd_synthetic2(
    n_features: int = ...,
    n_per_group: int = ...,
    random_state: int | np.random.RandomState | None = ...,
    *,
    return_params: Literal[True],
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]: ...
@overload
def make_mmd_synthetic2(
    n_features: int = ...,
    n_per_group: int = ...,
    random_state: int | np.random.RandomState | None = ...,
    *,
    return_params: bool,
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]: ...
def make_mmd_synthetic2(
    n_features: int = 20,
    n_per_group: int = 240,
    random_state: int | np.random.RandomState | None = None,
    *,
    return_params: bool = False,
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Two Gaussian groups in 1000 dimensions, randomly projected to ``n_features``.

    The "synthetic data #2" of Lee et al. (2022), section 8.2, built as described
    in their supplementary section H, on which they vary the dimension p from 20
    to 1000:

    1. In p0 = 1000 dimensions, group s in {0, 1} is N(mu^(s), Sigma^(s)) with
       mu^(0) = 0, mu^(1) = f = 2 * 1 / ||1|| (so ||f|| = 2), and
       Sigma^(s) = A^(s) / ||A^(1) - A^(0)||_2, where A^(s) is block diagonal
       with five 200 x 200 AR(1) blocks, (AR_m(r))_ij = r^|i-j| / (1 - r^2),
       of coefficients (0.99, 0.98, 0.97, 0.98, 0.95) for group 0 and
       (0.99, 0.98, 0.97, 0.98, 0.99) for group 1. Hence the covariance
       difference Q = Sigma^(1) - Sigma^(0) has spectral norm 1 and lives in the
       last block only.
    2. ``n_per_group`` rows are drawn from each group and all rows are multiplied
       by one Gaussian random matrix R of shape (1000, n_features) with i.i.d.
       N(0, 1) entries.

    The groups of ``X`` are thus N(R^T mu^(s), R^T Sigma^(s) R).

    Parameters
    ----------
    n_features : int, default=20
        Dimension p of the returned data (at least 1). The paper uses
        p in {20, 30, ..., 100} in the main text and up to 1000 in its
        supplementary material. Above 1000 the data are rank-deficient.
    n_per_group : int, default=240
        Number of rows of each group (at least 2).
    random_state : int, RandomState instance or None, default=None
        Seed or generator, passed to ``sklearn.utils.check_random_state``
        (``None`` uses numpy's global ``RandomState``, as in scikit-learn).
        It determines both the projection R and the samples.
    return_params : bool, default=False
        If True, also return the population parameters (see below).

    Returns
    -------
    X : ndarray of shape (2 * n_per_group, n_features), dtype float64
        Rows of group 0 first, then rows of group 1.
    sensitive : ndarray of shape (2 * n_per_group,), dtype int64
        Group label of each row, 0 or 1.
    params : dict, only if ``return_params=True``
        ``"projection"``: R, shape (1000, n_features);
        ``"means"``: shape (2, n_features), the group means R^T mu^(s);
        ``"covariances"``: shape (2, n_features, n_features), R^T Sigma^(s) R;
        ``"latent_means"``: shape (2, 1000); ``"latent_covariances"``: shape
        (2, 1000, 1000), the parameters before projection.

    Notes
    -----
    Choices made where section H is ambiguous or inconsistent:

    - Group size: section H says n = 250, section 8.2 says 240 per group; the
      default follows section 8.2 (the experiment the figures report).
    - Section H writes the covariances with a subscript p and blocks of size
      p/5, but builds the distributions in p0 = 1000 dimensions before
      projecting; here they are built in 1000 dimensions (blocks of 200), so
      the stated normalisations ||f|| = 2 and ||Q||_2 = 1 hold exactly for the
      latent distributions. After projection by R with N(0, 1) entries they do
      not: E||R^T f||^2 = 4 p. Standardise the features if a fixed scale is
      needed.
    - The text says the covariance normalisation "Sigma_p^(0) is set as
      A_p^(s) / ||Q_p||"; this is read as Sigma^(s) = A^(s) / ||A^(1) - A^(0)||_2
      for both groups, the only reading under which ||Q||_2 = 1 as stated.
    - The block coefficients are those printed in section H (the two groups
      differ in the last block only, 0.95 against 0.99).
    - "A Gaussian random matrix": one matrix with i.i.d. standard normal
      entries, shared by both groups, so the groups live in the same feature
      space. (A shared fixed linear map keeps each group Gaussian, despite the
      remark in section H about non-Gaussian groups.)
    - ``n_features`` need not be one of the paper's values.

    References
    ----------
    J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo. "Fast and
    Efficient MMD-based Fair PCA via Optimization over Stiefel Manifold."
    AAAI 2022, section 8.2 and supplementary section H.

    Examples
    --------
    >>> from fairpca.datasets import make_mmd_synthetic2
    >>> X, s = make_mmd_synthetic2(n_features=30, random_state=0)
    >>> X.shape
    (480, 30)
    """
    p = check_number(n_features, "n_features", minimum=1)
    n = check_number(n_per_group, "n_per_group", minimum=2)
    return_params = _check_bool(return_params, "return_params")
    rng = _check_random_state(random_state)

    scale = _syn2_covariance_scale()
    shift = _syn2_latent_mean_shift()
    projection = rng.standard_normal((_SYN2_LATENT_DIM, p))

    latent0 = _syn2_sample_latent(rng, 0, n, scale)
    latent1 = _syn2_sample_latent(rng, 1, n, scale) + shift
    X = np.vstack([latent0 @ projection, latent1 @ projection])
    X = np.ascontiguousarray(X, dtype=np.float64)
    sensitive = _labels([n, n])
    if not return_params:
        return X, sensitive

    size = _SYN2_LATENT_DIM // len(_SYN2_BLOCK_AR[0])
    latent_means = np.vstack([np.zeros(_SYN2_LATENT_DIM), shift])
    latent_covs = np.zeros((2, _SYN2_LATENT_DIM, _SYN2_LATENT_DIM))
    covs = np.zeros((2, p, p))
    for s, coefs in enumerate(_SYN2_BLOCK_AR):
        for b, r in enumerate(coefs):
            rows = slice(b * size, (b + 1) * size)
            block = _ar1_covariance(r, size) / scale
            latent_covs[s, rows, rows] = block
            covs[s] += projection[rows].T @ block @ projection[rows]
    covs = 0.5 * (covs + covs.transpose(0, 2, 1))
    params = {
        "projection": projection,
        "means": latent_means @ projection,
        "covariances": covs,
        "latent_means": latent_means,
        "latent_covariances": latent_covs,
    }
    return X, sensitive, params


# --------------------------------------------------------------------------
# Vu et al. (2022), 2-D toy example
# --------------------------------------------------------------------------

_TOY_COVARIANCES = np.array(
    [
        [[4.0, 0.0], [0.0, 0.2]],  # group 0: spread along the horizontal axis
        [[0.2, 0.4], [0.4, 3.0]],  # group 1: spread along a slanted vertical axis
    ]
)


def make_robust_toy(
    n_per_group: int | Sequence[int] = (200, 100),
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The 2-D two-Gaussian toy example of Vu et al. (2022).

    Both groups are centred at the origin; group 0 (the majority) has
    covariance ``[[4.0, 0.0], [0.0, 0.2]]`` and group 1 (the minority)
    ``[[0.2, 0.4], [0.4, 3.0]]``, as in appendix D.2.1 of the paper, where this
    data set is used for Figure 1 and for the study of the ambiguity-set radius
    (Figure 4). Vanilla PCA picks the majority's horizontal direction, a min-max
    fair PCA a diagonal one.

    Parameters
    ----------
    n_per_group : int or pair of int, default=(200, 100)
        Number of rows of group 0 and of group 1 (each at least 2); an int gives
        both groups that many rows. The default is the paper's training set;
        its test set is ``(8000, 4000)``.
    random_state : int, RandomState instance or None, default=None
        Seed or generator, passed to ``sklearn.utils.check_random_state``
        (``None`` uses numpy's global ``RandomState``, as in scikit-learn).

    Returns
    -------
    X : ndarray of shape (n_per_group[0] + n_per_group[1], 2), dtype float64
        Rows of group 0 first, then rows of group 1.
    sensitive : ndarray of shape (n_per_group[0] + n_per_group[1],), dtype int64
        Group label of each row, 0 or 1.

    References
    ----------
    H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally Robust Fair
    Principal Components via Geodesic Descents." ICLR 2022, Figure 1 and
    appendix D.2.1.

    Examples
    --------
    >>> from fairpca.datasets import make_robust_toy
    >>> X, s = make_robust_toy(random_state=0)
    >>> X.shape, int((s == 1).sum())
    ((300, 2), 100)
    """
    if isinstance(n_per_group, numbers.Integral) and not isinstance(n_per_group, bool):
        counts = [check_number(n_per_group, "n_per_group", minimum=2)] * 2
    else:
        try:
            items = list(n_per_group)
        except TypeError:
            raise TypeError(
                "n_per_group must be an int or a pair of ints, got "
                f"{type(n_per_group).__name__} {n_per_group!r}."
            ) from None
        if len(items) != 2:
            raise ValueError(
                f"n_per_group must be an int or a pair of ints, got {len(items)} values."
            )
        counts = [check_number(c, "n_per_group", minimum=2) for c in items]
    rng = _check_random_state(random_state)

    parts = []
    for count, cov in zip(counts, _TOY_COVARIANCES, strict=True):
        factor = np.linalg.cholesky(cov)
        parts.append(rng.standard_normal((count, 2)) @ factor.T)
    X = np.ascontiguousarray(np.vstack(parts), dtype=np.float64)
    return X, _labels(counts)


# --------------------------------------------------------------------------
# fairpca's demo data set
# --------------------------------------------------------------------------

_DOMINANT_VARIANCES = (4.0, 2.5)
_NOISE_VARIANCE = 0.25
_TARGET_SLOPE = 2.0
_TARGET_GROUP_OFFSET = 0.5


def _group_counts(n_samples, weights):
    """Split ``n_samples`` by ``weights`` (summing to 1), largest remainders first."""
    exact = weights * n_samples
    counts = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: n_samples - counts.sum()]] += 1
    return counts


def _random_orthogonal(rng, p):
    """A Haar-distributed p x p orthogonal matrix (QR of a Gaussian, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((p, p)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


@overload
def make_gaussian_groups(
    n_samples: int = ...,
    n_features: int = ...,
    n_groups: int = ...,
    *,
    group_weights: ArrayLike | None = ...,
    mean_shift: float = ...,
    random_state: int | np.random.RandomState | None = ...,
    return_target: Literal[False] = ...,
) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def make_gaussian_groups(
    n_samples: int = ...,
    n_features: int = ...,
    n_groups: int = ...,
    *,
    group_weights: ArrayLike | None = ...,
    mean_shift: float = ...,
    random_state: int | np.random.RandomState | None = ...,
    return_target: Literal[True],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
@overload
def make_gaussian_groups(
    n_samples: int = ...,
    n_features: int = ...,
    n_groups: int = ...,
    *,
    group_weights: ArrayLike | None = ...,
    mean_shift: float = ...,
    random_state: int | np.random.RandomState | None = ...,
    return_target: bool,
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]: ...
def make_gaussian_groups(
    n_samples: int = 1000,
    n_features: int = 10,
    n_groups: int = 2,
    *,
    group_weights: ArrayLike | None = None,
    mean_shift: float = 1.0,
    random_state: int | np.random.RandomState | None = None,
    return_target: bool = False,
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian groups whose covariances point in different directions.

    fairpca's demo data set. Every group has the same covariance spectrum,
    variances 4 and 2.5 along two dominant directions and 0.25 along all
    others, but each group has its own randomly drawn dominant directions. The
    pooled covariance is dominated by the largest group, so vanilla PCA serves
    it better than the others, although every group would be reconstructed
    equally well by its own best subspace.

    Parameters
    ----------
    n_samples : int, default=1000
        Total number of rows. Every group must receive at least 2 rows.
    n_features : int, default=10
        Number of features (at least 2).
    n_groups : int, default=2
        Number of groups k (at least 2).
    group_weights : array-like of shape (n_groups,) or None, default=None
        Positive group proportions (normalised to sum to 1). The default gives
        group 0 (the majority) 70 % of the rows and splits the remaining 30 %
        equally among the other groups (70/30 for two groups). Group sizes are
        ``n_samples * weights`` rounded by largest remainders, so they are
        exact up to one row.
    mean_shift : float, default=1.0
        Distance of each group mean from the origin (>= 0): group a has mean
        ``mean_shift * u_a`` with ``u_a`` a random unit vector, so two group
        means are about ``sqrt(2) * mean_shift`` apart when n_features is large.
        Use 0 for equal means.
    random_state : int, RandomState instance or None, default=None
        Seed or generator, passed to ``sklearn.utils.check_random_state``
        (``None`` uses numpy's global ``RandomState``, as in scikit-learn).
    return_target : bool, default=False
        If True, also return a binary target ``y`` (see Notes).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
        The rows of all groups, in random order.
    sensitive : ndarray of shape (n_samples,), dtype int64
        Group label of each row, in ``0, ..., n_groups - 1``.
    y : ndarray of shape (n_samples,), dtype int64, only if ``return_target=True``
        Binary target in {0, 1}.

    Notes
    -----
    Group a is N(mean_shift * u_a, 0.25 I + D_a diag(3.75, 2.25) D_a^T), where
    D_a (n_features x 2) holds the group's dominant directions. When
    ``2 * n_groups <= n_features`` the D_a are disjoint column blocks of one
    Haar-random orthogonal matrix, so the groups' dominant subspaces are
    mutually orthogonal, and the mean directions u_a are random unit vectors
    in the orthogonal complement of all of them (when it is not empty), so
    that the mean differences do not compete with the dominant directions for
    the leading principal components. When ``2 * n_groups > n_features`` each
    D_a is drawn independently (the subspaces then overlap) and the u_a are
    uniform on the sphere.

    The target follows a logistic model,
    ``P(y = 1 | x, a) = expit(2 t(x) - 0.5 [a != 0])``, with
    ``t(x) = b^T (x - m) / sqrt(b^T S b)`` where m and S are the population
    mean and covariance of the mixture and b is the normalised weighted sum of
    the groups' leading directions. So y depends strongly on X, through a
    direction a 2-component projection can keep, and weakly on the group
    (the majority has higher odds of y = 1).

    The values of ``X`` and ``sensitive`` do not depend on ``return_target``.

    At the defaults, 2-component vanilla PCA (fitted on all rows) has a mean
    squared reconstruction error on the minority group about four times that
    on the majority group (median about 9 against 2.2 over seeds; the ratio was
    above 3.5 for each of 300 seeds checked), whereas each group's own best
    2-D subspace leaves 8 * 0.25 = 2 (about its own mean). The gap shrinks as
    the group weights become equal.

    Examples
    --------
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s, y = make_gaussian_groups(random_state=0, return_target=True)
    >>> X.shape, [int((s == a).sum()) for a in (0, 1)]
    ((1000, 10), [700, 300])
    """
    n_samples = check_number(n_samples, "n_samples", minimum=1)
    p = check_number(n_features, "n_features", minimum=2)
    k = check_number(n_groups, "n_groups", minimum=2)
    mean_shift = check_number(mean_shift, "mean_shift", numbers.Real, minimum=0.0)
    return_target = _check_bool(return_target, "return_target")

    if group_weights is None:
        weights = np.full(k, 0.3 / (k - 1))
        weights[0] = 0.7
    else:
        if isinstance(group_weights, (str, bytes)):
            raise TypeError("group_weights must be an array-like of numbers, got a string.")
        try:
            weights = np.asarray(group_weights, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"group_weights must be an array-like of numbers, got {group_weights!r}."
            ) from exc
        if weights.shape != (k,):
            raise ValueError(
                f"group_weights must have shape (n_groups,) = ({k},), got shape {weights.shape}."
            )
        if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            raise ValueError(f"group_weights must be finite and positive, got {weights.tolist()}.")
        weights = weights / weights.sum()

    counts = _group_counts(n_samples, weights)
    if counts.min() < 2:
        raise ValueError(
            f"n_samples={n_samples} with group_weights={np.round(weights, 4).tolist()} "
            f"gives group sizes {counts.tolist()}; every group needs at least 2 rows: "
            "increase n_samples or the smallest group weights."
        )
    rng = _check_random_state(random_state)

    n_dominant = min(len(_DOMINANT_VARIANCES), p)
    excess = np.asarray(_DOMINANT_VARIANCES[:n_dominant]) - _NOISE_VARIANCE
    basis = _random_orthogonal(rng, p)
    if k * n_dominant <= p:
        # Mutually orthogonal dominant subspaces, one random block of columns each.
        dominant = [basis[:, a * n_dominant : (a + 1) * n_dominant] for a in range(k)]
        free = basis[:, k * n_dominant :]
    else:
        dominant = [_random_orthogonal(rng, p)[:, :n_dominant] for _ in range(k)]
        free = basis[:, :0]
    if free.shape[1] == 0:
        free = basis
    directions = rng.standard_normal((k, free.shape[1])) @ free.T
    means = mean_shift * directions / np.linalg.norm(directions, axis=1, keepdims=True)

    noise_sd = np.sqrt(_NOISE_VARIANCE)
    parts = [
        means[a]
        + noise_sd * rng.standard_normal((counts[a], p))
        + (rng.standard_normal((counts[a], n_dominant)) * np.sqrt(excess)) @ dominant[a].T
        for a in range(k)
    ]
    X = np.vstack(parts)
    sensitive = _labels(counts)
    order = rng.permutation(n_samples)
    X = np.ascontiguousarray(X[order], dtype=np.float64)
    sensitive = sensitive[order]
    if not return_target:
        return X, sensitive

    # Population moments of the mixture (with the realised group proportions).
    props = counts / n_samples
    pooled_mean = props @ means
    pooled_cov = sum(
        props[a]
        * (
            _NOISE_VARIANCE * np.eye(p)
            + (dominant[a] * excess) @ dominant[a].T
            + np.outer(means[a] - pooled_mean, means[a] - pooled_mean)
        )
        for a in range(k)
    )
    b = sum(props[a] * dominant[a][:, 0] for a in range(k))
    b /= np.linalg.norm(b)
    score = (X - pooled_mean) @ b / np.sqrt(b @ pooled_cov @ b)
    logit = _TARGET_SLOPE * score - _TARGET_GROUP_OFFSET * (sensitive != 0)
    y = (rng.uniform(size=n_samples) < expit(logit)).astype(np.int64)
    return X, sensitive, y
