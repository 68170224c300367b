"""The train/test split every workflow passes around.

It lives below both the papers' protocols (:mod:`fairpca.experiments`, which
re-export it) and :mod:`fairpca.compare` / :mod:`fairpca.tradeoff`, which take
one, so that neither imports the other for it.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["Split"]


@dataclass(frozen=True, eq=False)
class Split:
    """A prepared train/test split.

    Attributes
    ----------
    X_train : ndarray of shape (n_train, n_features), float64
    X_test : ndarray of shape (n_test, n_features), float64
    s_train : ndarray of shape (n_train,)
        Group label of each training row.
    s_test : ndarray of shape (n_test,)
    y_train : ndarray of shape (n_train,) or None
        Binary target (1 = the positive class named in ``description``).
    y_test : ndarray of shape (n_test,) or None
    feature_names : list of str
        Names of the columns of ``X_train`` and ``X_test``.
    n_dropped : int
        Rows of the source data the protocol left out (filters, rows with
        missing values, subsampling); the breakdown is in ``description``.
    description : str
        What was done, in one paragraph.
    """

    X_train: np.ndarray
    X_test: np.ndarray
    s_train: np.ndarray
    s_test: np.ndarray
    y_train: np.ndarray | None
    y_test: np.ndarray | None
    feature_names: list
    n_dropped: int
    description: str

    def __repr__(self):
        labels, counts = np.unique(self.s_train, return_counts=True)
        groups = dict(zip(labels.tolist(), counts.tolist(), strict=True))
        return (
            f"Split(X_train={self.X_train.shape}, X_test={self.X_test.shape}, "
            f"train groups={groups}, target={'yes' if self.y_train is not None else 'no'}, "
            f"n_dropped={self.n_dropped})"
        )
