"""The steps the papers' data protocols share: the :class:`Split` they return and its preparation.

Encoding, the seeded train/test split, standardisation with training statistics and the
seeded subsample; each paper's protocol (``fairpca.experiments.lee2022`` and the others)
combines them as its paper did.
"""

import numbers

import numpy as np
from sklearn.model_selection import train_test_split

from fairpca.datasets._split import Split, make_split

__all__ = ["N_SPLITS", "Split", "make_split"]

#: Number of train/test splits Lee et al. and Vu et al. average over: ``split`` in
#: ``range(N_SPLITS)``. Any larger ``split`` draws a further split by the same rules (it is the
#: seed), for measuring how much a mean over N_SPLITS splits itself varies.
N_SPLITS = 10


def check_dataset(dataset, allowed, protocol):
    """Raise a ValueError naming ``protocol`` unless ``dataset`` is one of ``allowed``."""
    if not isinstance(dataset, str) or dataset not in allowed:
        raise ValueError(f"{protocol}: dataset must be one of {list(allowed)}, got {dataset!r}.")


def check_split(split):
    """The split index as an int; a TypeError or ValueError unless it is in ``[0, 2**32)``."""
    if isinstance(split, bool) or not isinstance(split, numbers.Integral):
        raise TypeError(f"split must be a non-negative int, got {split!r}.")
    if not 0 <= split < 2**32:
        raise ValueError(
            f"split must be a non-negative int below 2**32 (the papers use range({N_SPLITS})), "
            f"got {split}."
        )
    return int(split)


def is_numeric(column):
    """Whether a pandas column has a numeric dtype."""
    from pandas.api.types import is_numeric_dtype

    return is_numeric_dtype(column.dtype)


def one_hot(frame, columns):
    """One indicator column ``name=level`` per level present (no level dropped, as AIF360)."""
    import pandas as pd

    return pd.get_dummies(frame, columns=columns, prefix_sep="=", dtype=np.float64)


def standardise(X_train, X_test, ddof=0):
    """Centre and scale both parts with the training mean and standard deviation.

    A column that is constant on the training rows keeps scale 1 (as Lee et
    al.'s and Vu et al.'s preprocessing scripts do) instead of producing NaN,
    or, where rounding leaves its computed SD at ~1e-16, test values of 1e15
    (E. coli's ``lip`` on Vu et al.'s split 3).
    """
    mean = X_train.mean(axis=0)
    scale = X_train.std(axis=0, ddof=ddof)
    scale[np.ptp(X_train, axis=0) == 0] = 1.0
    return (X_train - mean) / scale, (X_test - mean) / scale


def shuffle_split(X, s, y, *, train_size, stratify, seed):
    """Shuffle-split rows; ``train_size`` is a fraction, the count is its floor."""
    index = np.arange(X.shape[0])
    train, test = train_test_split(
        index, train_size=train_size, stratify=s if stratify else None, random_state=seed
    )
    y_parts = (None, None) if y is None else (y[train], y[test])
    return X[train], X[test], s[train], s[test], *y_parts


def finish(X, s, y, names, *, train_size, stratify, split, n_dropped, description, ddof=0):
    """Split the prepared rows (seeded by ``split``), standardise them and wrap them in a Split."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    s = np.asarray(s)
    y = None if y is None else np.asarray(y, dtype=np.int64)
    X_tr, X_te, s_tr, s_te, y_tr, y_te = shuffle_split(
        X, s, y, train_size=train_size, stratify=stratify, seed=split
    )
    X_tr, X_te = standardise(X_tr, X_te, ddof=ddof)
    return Split(X_tr, X_te, s_tr, s_te, y_tr, y_te, list(map(str, names)), n_dropped, description)


def subsample(n_rows, fraction, seed):
    """Sorted indices of ``floor(fraction * n_rows)`` rows drawn without replacement.

    ``seed`` is anything :func:`numpy.random.default_rng` takes (an int or a tuple of ints).
    """
    n_keep = int(fraction * n_rows)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_rows, size=n_keep, replace=False))
