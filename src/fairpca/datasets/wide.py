"""Wide synthetic data, generated block by block: rows of smooth "images" by group.

No data set of the width that needs :class:`fairpca.StreamingFairPCA` (tens of
thousands of columns) ships with fairpca, so this generator stands in for one:
each row is a smooth 1-D signal of ``n_features`` samples (a flattened image)
built from a few cosine patterns, with a group-dependent mean and
group-dependent pattern variances, plus white noise. Only ``O(n_features *
n_patterns)`` numbers are held besides the current block, and the exact group
means and covariances are known in closed form (:func:`wide_groups_moments`).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator

import numpy as np

__all__ = ["iter_wide_groups", "make_wide_groups", "wide_groups_moments"]

#: Pattern standard deviations of group 0; pattern j has variance ``1 / (j + 1)``.
_N_PATTERNS = 8


def _patterns(n_features):
    """Orthonormal smooth patterns (DCT-II basis vectors 1..8), shape (n_features, 8)."""
    t = (np.arange(n_features) + 0.5) / n_features
    basis = np.cos(np.pi * np.outer(t, np.arange(1, _N_PATTERNS + 1)))
    return basis / np.linalg.norm(basis, axis=0)


def _group_parameters(n_groups, mean_shift, covariance_shift):
    """Pattern means (k, 8) and variances (k, 8) of each group.

    Every group has variances ``1 / (j + 1)`` on pattern ``j``; group ``a``
    multiplies those of patterns ``2a + 1`` and ``2a + 2`` (mod 8) by
    ``1 + covariance_shift``, and its mean is ``mean_shift * a`` times pattern 0
    plus ``mean_shift / 2`` times pattern 3 for odd ``a``.
    """
    variances = np.tile(1.0 / np.arange(1, _N_PATTERNS + 1), (n_groups, 1))
    means = np.zeros((n_groups, _N_PATTERNS))
    for a in range(n_groups):
        variances[a, [(2 * a + 1) % _N_PATTERNS, (2 * a + 2) % _N_PATTERNS]] *= 1 + covariance_shift
        means[a, 0] = mean_shift * a
        means[a, 3] = mean_shift / 2 * (a % 2)
    return means, variances


def _check_sizes(n_samples, n_features, n_groups, block_size):
    for value, name, low in (
        (n_samples, "n_samples", 1),
        (n_features, "n_features", _N_PATTERNS + 1),
        (n_groups, "n_groups", 2),
        (block_size, "block_size", 1),
    ):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"{name} must be an integer, got {value!r}.")
        if value < low:
            raise ValueError(f"{name} must be at least {low}, got {value}.")


def iter_wide_groups(
    n_samples: int = 10_000,
    n_features: int = 40_000,
    n_groups: int = 2,
    *,
    block_size: int = 1000,
    mean_shift: float = 1.0,
    covariance_shift: float = 2.0,
    noise: float = 0.1,
    random_state: int | None = 0,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield blocks ``(X_block, s_block)`` of wide data with group-dependent moments.

    Row ``i`` belongs to group ``i mod n_groups`` and is
    ``x = Phi (m_a + sqrt(v_a) * z) + noise * e`` with ``Phi`` the 8 smooth
    orthonormal patterns (:func:`wide_groups_moments` gives ``m_a``, ``v_a``),
    ``z`` and ``e`` standard normal. So the group means differ along two
    patterns and the group covariances ``Phi diag(v_a) Phi^T + noise^2 I``
    differ in rank at most ``2 n_groups``. Block ``b`` is drawn from its own
    seed ``(random_state, b)``: the data are reproducible block by block.

    Parameters
    ----------
    n_samples, n_features, n_groups : int
        Rows, columns (at least 9) and groups (at least 2).
    block_size : int, default=1000
        Rows per block (the last may be shorter).
    mean_shift, covariance_shift, noise : float
        Size of the mean differences, relative increase of the varied pattern
        variances, standard deviation of the white noise.
    random_state : int or None, default=0

    Yields
    ------
    X_block : ndarray of shape (rows, n_features)
    s_block : ndarray of shape (rows,), dtype int
    """
    _check_sizes(n_samples, n_features, n_groups, block_size)
    patterns = _patterns(n_features)
    means, variances = _group_parameters(n_groups, mean_shift, covariance_shift)
    for b, start in enumerate(range(0, n_samples, block_size)):
        rows = np.arange(start, min(start + block_size, n_samples))
        yield _block(b, rows, patterns, means, variances, noise, random_state)


def _block(b, rows, patterns, means, variances, noise, random_state):
    """Block ``b`` (rows ``rows``) of :func:`iter_wide_groups`, from its own seed."""
    rng = np.random.default_rng([0 if random_state is None else random_state, b])
    s = rows % means.shape[0]
    z = means[s] + np.sqrt(variances[s]) * rng.standard_normal((rows.size, _N_PATTERNS))
    X = rng.standard_normal((rows.size, patterns.shape[0]))
    X *= noise  # in place: one block-sized array at a time
    X += z @ patterns.T
    return X, s


def make_wide_groups(
    n_samples: int = 2000,
    n_features: int = 2000,
    n_groups: int = 2,
    *,
    mean_shift: float = 1.0,
    covariance_shift: float = 2.0,
    noise: float = 0.1,
    random_state: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """All rows of :func:`iter_wide_groups` (block size 1000) as one array.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    s : ndarray of shape (n_samples,), dtype int
    """
    blocks = list(
        iter_wide_groups(
            n_samples,
            n_features,
            n_groups,
            mean_shift=mean_shift,
            covariance_shift=covariance_shift,
            noise=noise,
            random_state=random_state,
        )
    )
    return np.vstack([X for X, _ in blocks]), np.concatenate([s for _, s in blocks])


def wide_groups_moments(
    n_features: int,
    n_groups: int = 2,
    *,
    mean_shift: float = 1.0,
    covariance_shift: float = 2.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The generator's patterns and each group's pattern means and variances.

    Group ``a``'s mean is ``patterns @ means[a]`` and its covariance
    ``patterns @ diag(variances[a]) @ patterns.T + noise^2 I``.

    Returns
    -------
    patterns : ndarray of shape (n_features, 8)
    means : ndarray of shape (n_groups, 8)
    variances : ndarray of shape (n_groups, 8)
    """
    return _patterns(n_features), *_group_parameters(n_groups, mean_shift, covariance_shift)
