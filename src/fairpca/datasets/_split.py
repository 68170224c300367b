"""The train/test split every workflow passes around, and its preparation from a table.

:class:`Split` lives here, below the papers' protocols (:mod:`fairpca.experiments`)
and :mod:`fairpca.compare` / :mod:`fairpca.tradeoff`, which take one, so that
none of them imports another for it. :func:`make_split` prepares one from a
user's array or DataFrame (encoding, stratified split, standardisation with
the training rows' statistics). Both are exported by :mod:`fairpca.datasets`;
``fairpca._split.Split``, ``fairpca.experiments.Split`` and
``fairpca.compare.make_split`` are the same objects under their former names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from fairpca._validation import _LARGEST_MAGNITUDE, check_data, check_sensitive_features
from fairpca.datasets._table import is_numeric_column as _is_numeric

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MIN_GROUP_ROWS", "Split", "make_split"]

#: Fewest rows each group must have for a train/test comparison to mean anything.
MIN_GROUP_ROWS = 10


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


_IMPUTE = ("none", "median", "drop-rows")


def make_split(
    X: ArrayLike | pd.DataFrame,
    sensitive_features: ArrayLike,
    y: ArrayLike | None = None,
    *,
    test_size: float = 0.3,
    random_state: int = 0,
    impute: Literal["none", "median", "drop-rows"] = "none",
) -> Split:
    """A train/test split stratified by group, encoded and standardised with training statistics.

    A DataFrame may hold categorical (non-numeric) columns and missing values:
    the categorical columns are one-hot encoded (one column per category seen
    in the training rows; an unseen category encodes as zeros), and every
    column is then standardised, all by scikit-learn transformers fitted on
    the training rows only.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features)
        Features (a DataFrame's column names, after encoding, become the
        split's ``feature_names``; numeric columns beyond about 1e150 in
        magnitude are refused by name, their variance overflowing).
    sensitive_features : array-like of shape (n_samples,)
        Group labels; every group needs at least ``MIN_GROUP_ROWS`` rows.
    y : array-like of shape (n_samples,), default=None
        Target, split alongside.
    test_size : float, default=0.3
        Share of rows held out.
    random_state : int, default=0
        Seed of the split.
    impute : {"none", "median", "drop-rows"}, default="none"
        Missing values in a DataFrame: refused, naming the columns
        (``"none"``); filled with the training median (numeric) or most
        frequent category (``"median"``); or their rows dropped before the
        split (``"drop-rows"``).

    Returns
    -------
    split : Split
    """
    if impute not in _IMPUTE:
        raise ValueError(f"impute must be one of {_IMPUTE}, got {impute!r}.")
    frame, n_dropped = _as_frame(X, impute)
    s = np.asarray(sensitive_features)
    y = None if y is None else np.asarray(y)
    if n_dropped:
        kept = frame.index.to_numpy()
        s, y = s[kept], None if y is None else y[kept]
        frame = frame.reset_index(drop=True)
    groups, codes = check_sensitive_features(
        s, len(frame), min_groups=2, min_group_size=MIN_GROUP_ROWS
    )
    s = groups[codes]
    train, test = train_test_split(
        np.arange(len(frame)), test_size=test_size, stratify=codes, random_state=random_state
    )
    X_train, X_test, names = _encode(frame, train, test)
    dropped = f", {n_dropped} rows with missing values dropped first" if n_dropped else ""
    encoded = (
        "categorical columns one-hot encoded, "
        if any(not _is_numeric(frame[c]) for c in frame.columns)
        else ""
    )
    if sparse.issparse(X_train):
        encoded += "the training rows kept sparse (scaled, not centred), "
    return Split(
        X_train=X_train,
        X_test=X_test,
        s_train=s[train],
        s_test=s[test],
        y_train=None if y is None else y[train],
        y_test=None if y is None else y[test],
        feature_names=names,
        n_dropped=n_dropped,
        description=(
            f"stratified {1 - test_size:.0%}/{test_size:.0%} train/test split "
            f"(seed {random_state}){dropped}; {encoded}every column standardised with "
            "the training rows' statistics"
        ),
    )


def _as_frame(X, impute):
    """``X`` as a DataFrame of validated columns, and the rows ``"drop-rows"`` removed."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        X = check_data(X, "X")
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    else:
        frame = X.copy()
        frame.columns = [str(c) for c in frame.columns]
        if frame.shape[1] == 0 or len(frame) == 0:
            raise ValueError(f"X has shape {frame.shape}: no features or no rows.")
    missing = [c for c in frame.columns if frame[c].isna().any()]
    n_dropped = 0
    if missing and impute == "none":
        raise ValueError(
            f"feature column(s) {', '.join(map(repr, missing))} have missing values; drop "
            "those rows or fill them (impute='drop-rows' or 'median'; on the command line "
            "--impute drop-rows or --impute median)."
        )
    if missing and impute == "drop-rows":
        complete = frame.notna().all(axis=1)
        n_dropped = int((~complete).sum())
        frame = frame[complete]
    numeric = [c for c in frame.columns if _is_numeric(frame[c])]
    values = frame[numeric].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        huge = np.nanmax(np.abs(values), axis=0, initial=0.0) > _LARGEST_MAGNITUDE
    if huge.any():
        listed = ", ".join(repr(n) for n, h in zip(numeric, huge, strict=True) if h)
        raise ValueError(
            f"feature column(s) {listed} exceed {_LARGEST_MAGNITUDE:.3g} in magnitude: their "
            "variance overflows float64, so they cannot be standardised; rescale them "
            "(e.g. divide by a power of ten) or drop them."
        )
    if np.isinf(values).any():
        raise ValueError("X contains infinity; replace or drop those values.")
    return frame, n_dropped


def _encode(frame, train, test):
    """Training and test matrices of ``frame``'s rows, and the encoded column names.

    Numeric columns are imputed with the training median, text columns with
    the most frequent training category and one-hot encoded (a category
    unseen in training encodes as zeros), then every column is standardised
    with the training statistics. When the one-hot blocks make the encoded
    training matrix sparse (under 30 % non-zeros, scikit-learn's
    ``ColumnTransformer`` rule), it stays a CSR matrix, scaled but not
    centred, which would fill it: every method centres on its own training
    mean, and the moment-based ones read it without densifying. The test
    part, which the metrics read row by row, is then dense (and uncentred
    alike).
    """
    numeric = [c for c in frame.columns if _is_numeric(frame[c])]
    categorical = [c for c in frame.columns if c not in numeric]
    parts = []
    if numeric:
        parts.append(("num", SimpleImputer(strategy="median"), numeric))
    if categorical:
        one_hot = make_pipeline(
            SimpleImputer(strategy="most_frequent"),
            OneHotEncoder(handle_unknown="ignore", sparse_output=True),
        )
        parts.append(("cat", one_hot, categorical))
    columns = ColumnTransformer(parts)
    X_train = columns.fit_transform(frame.iloc[train])
    X_test = columns.transform(frame.iloc[test])
    names = [str(n).split("__", 1)[-1] for n in columns.get_feature_names_out()]
    stays_sparse = sparse.issparse(X_train)
    scaler = StandardScaler(with_mean=not stays_sparse)
    X_train = scaler.fit_transform(X_train)
    X_test = _dense(scaler.transform(X_test))
    return (sparse.csr_matrix(X_train) if stays_sparse else X_train), X_test, names


def _dense(X):
    return X.toarray() if sparse.issparse(X) else np.asarray(X)
