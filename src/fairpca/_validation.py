"""Input checks shared by the estimators, the moments and the metrics.

Every check raises a ``ValueError`` or ``TypeError`` that names the offending
argument, before any heavy computation starts.
"""

import numbers
import sys

import numpy as np
from scipy import sparse
from sklearn.utils import check_array, check_scalar
from sklearn.utils.validation import validate_data

__all__ = [
    "check_covariates",
    "split_sensitive_features",
    "check_data",
    "check_magnitude",
    "check_estimator_data",
    "check_number",
    "check_sample_weight",
    "check_n_components",
    "components_for_fraction",
    "check_sensitive_features",
    "check_allocation",
    "check_width",
    "MAX_DENSE_MOMENT_BYTES",
    "MemoryBudgetError",
    "DataTooWideError",
]


def _non_numeric_columns(X):
    """Names of the non-numeric columns of a pandas DataFrame ``X`` (else ``[]``)."""
    if not type(X).__module__.startswith("pandas") or not hasattr(X, "columns"):
        return []
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return [
        str(col)
        for col, dtype in X.dtypes.items()
        if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype))
    ]


def raise_if_non_numeric(X, name="X"):
    """Raise a ``TypeError`` naming the columns of ``X`` that are not numeric.

    Parameters
    ----------
    X : array-like or DataFrame
        Candidate data matrix.
    name : str, default="X"
        Argument name used in the message.
    """
    bad = _non_numeric_columns(X)
    if bad:
        shown = ", ".join(repr(c) for c in bad[:10])
        more = "" if len(bad) <= 10 else f" and {len(bad) - 10} more"
        raise TypeError(
            f"{name} must be numeric, but column(s) {shown}{more} are not; "
            "encode categorical columns (e.g. with OneHotEncoder) first."
        )
    dtype = getattr(X, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "US":
        raise TypeError(f"{name} must be numeric, got an array of strings (dtype {dtype}).")


def _reraise_conversion_error(exc, name):
    msg = str(exc)
    if any(s in msg for s in ("could not convert", "bytes/strings")):
        raise TypeError(f"{name} must contain only real numbers: {msg}") from exc
    raise exc


def check_estimator_data(
    estimator, X, *, reset, ensure_all_finite=True, min_samples=1, accept_sparse=False
):
    """Validate ``X`` for an estimator with :func:`sklearn.utils.validation.validate_data`.

    As :func:`check_data`, plus the estimator bookkeeping of scikit-learn:
    ``reset=True`` records ``n_features_in_`` (and ``feature_names_in_``),
    ``reset=False`` checks ``X`` against them. Sparse ``X`` is accepted in the
    formats ``accept_sparse`` lists (others converted to the first) and
    refused otherwise with a ``TypeError`` naming the estimator, before any
    copy of it. Its non-zeros are always scanned for NaN and infinities (a
    cheap pass next to the sparse products).

    Returns
    -------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features), dtype float64
    """
    raise_if_non_numeric(X, "X")
    if sparse.issparse(X):
        if not accept_sparse:
            raise TypeError(
                f"{type(estimator).__name__} does not accept sparse X (a scipy.sparse "
                f"{X.format} matrix): it reads the rows themselves, and densifying them "
                "is left to you. Call X.toarray() if the dense matrix fits in memory, or "
                "use a moment-based method (MinMaxLossFairPCA, ConvexFairPCA, "
                "RobustFairPCA, ParetoFairPCA, MeanMatchingFairPCA, LinearErasure)."
            )
        ensure_all_finite = True
    try:
        return validate_data(
            estimator,
            X,
            reset=reset,
            accept_sparse=accept_sparse,
            dtype=np.float64,
            ensure_all_finite=ensure_all_finite,
            ensure_min_samples=min_samples,
        )
    except (ValueError, TypeError) as exc:
        _reraise_conversion_error(exc, "X")


def check_data(X, name="X", *, min_samples=1, ensure_all_finite=True, accept_sparse=False):
    """Validate a data matrix outside an estimator.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numeric data; NaN and infinities are rejected.
    name : str, default="X"
        Argument name used in error messages.
    min_samples : int, default=1
        Minimum number of rows.
    ensure_all_finite : bool, default=True
        Whether to scan for NaN and infinities. ``False`` is for callers whose
        next step detects them anyway (the moment pass), saving a scan.
    accept_sparse : False or tuple of str, default=False
        Sparse formats returned as they are (others converted to the first);
        False refuses sparse data with scikit-learn's ``TypeError``.

    Returns
    -------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features), dtype float64
    """
    raise_if_non_numeric(X, name)
    try:
        return check_array(
            X,
            accept_sparse=accept_sparse,
            dtype=np.float64,
            ensure_all_finite=ensure_all_finite,
            ensure_min_samples=min_samples,
            input_name=name,
        )
    except (ValueError, TypeError) as exc:
        _reraise_conversion_error(exc, name)


def _label_kind(label_type):
    if issubclass(label_type, (bool, np.bool_)):
        return "bool"
    if issubclass(label_type, numbers.Number):
        return "number"
    if issubclass(label_type, (str, bytes)):
        return "string"
    return label_type.__name__


def _is_pandas_missing(label_type):
    """Whether ``label_type`` is pandas' missing-value marker (``pd.NA``, ``pd.NaT``).

    Nullable pandas columns (``string``, ``boolean``, ``Int64``) hold ``pd.NA``
    for missing entries; decided by type, without importing pandas.
    """
    return label_type.__module__.startswith("pandas") and label_type.__name__ in (
        "NAType",
        "NaTType",
    )


def check_sensitive_features(
    sensitive_features, n_samples, name="sensitive_features", *, min_groups=1, min_group_size=1
):
    """Validate group labels and encode them as integers.

    Parameters
    ----------
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attributes)
        One hashable label per row (numbers, strings or booleans; not a mix),
        or one column per attribute: the groups are then the intersections,
        tuples of one value per column (only those with rows).
    n_samples : int
        Number of rows of the data the labels go with.
    name : str, default="sensitive_features"
        Argument name used in error messages.
    min_groups : int, default=1
        Fewest distinct labels accepted.
    min_group_size : int, default=1
        Fewest rows each group must have.

    Returns
    -------
    groups : ndarray of shape (n_groups,)
        The sorted distinct labels.
    codes : ndarray of shape (n_samples,), dtype intp
        ``groups[codes]`` recovers the labels.

    Raises
    ------
    ValueError
        If the labels are missing, of the wrong length or shape, contain
        missing values, or form too few or too small groups.
    TypeError
        If the labels mix kinds (e.g. strings and numbers) or are unhashable.
    """
    if sensitive_features is None:
        raise ValueError(f"{name} is required: pass one group label per row of X.")
    if _is_pandas(sensitive_features) and sensitive_features.ndim == 2:
        if sensitive_features.shape[1] == 1:
            sensitive_features = sensitive_features.iloc[:, 0]
    if _is_pandas(sensitive_features) and sensitive_features.ndim == 1:
        encoded = _encode_pandas_labels(sensitive_features, n_samples, name)
    else:
        if hasattr(sensitive_features, "to_numpy"):
            labels = sensitive_features.to_numpy()
        else:
            try:
                labels = np.asarray(sensitive_features)
            except ValueError as exc:
                raise ValueError(f"{name} could not be read as an array: {exc}") from exc
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim == 2 and labels.shape[1] > 1:
            encoded = _intersectional_groups(sensitive_features, labels, n_samples, name)
        else:
            encoded = _encode_1d_labels(labels, n_samples, name)
    groups, codes = encoded
    _check_n_groups(groups, min_groups, name)
    if min_group_size > 1:
        counts = np.bincount(codes, minlength=len(groups))
        _check_group_sizes(groups, counts, min_group_size, name)
    return groups, codes


def _is_pandas(obj):
    """Whether ``obj`` is a pandas Series, Index, array or DataFrame (without importing pandas)."""
    return type(obj).__module__.startswith("pandas") and hasattr(obj, "ndim")


def _check_label_count(n_labels, n_samples, name):
    if n_labels != n_samples:
        raise ValueError(
            f"{name} has {n_labels} labels but X has {n_samples} rows; "
            "they must have the same length."
        )
    if n_labels == 0:
        raise ValueError(f"{name} is empty.")


def _encode_pandas_labels(labels, n_samples, name):
    """Encode a pandas column by its own hash factorisation: ``(groups, codes)``.

    Only the distinct values are validated and sorted; a column with missing
    or unhashable entries takes the NumPy route, whose checks name them.
    """
    _check_label_count(len(labels), n_samples, name)
    try:
        codes, distinct = labels.factorize()
    except TypeError:  # unhashable labels
        codes = None
    if codes is None or codes.min() < 0:
        return _encode_1d_labels(labels.to_numpy(), n_samples, name)
    return _encode_distinct(np.asarray(distinct), codes, name, labels.to_numpy)


def _encode_1d_labels(labels, n_samples, name):
    """Validate one label per row and encode them: ``(groups, codes)``."""
    if labels.ndim != 1:
        raise ValueError(
            f"{name} must have one label per row (1-D), or one column per attribute "
            f"(2-D), got shape {labels.shape}."
        )
    _check_label_count(labels.shape[0], n_samples, name)
    if labels.dtype.kind not in "OUS":
        return _encode_labels(_typed_labels(labels, name))
    try:
        distinct, codes = _factorize(labels)
    except TypeError as exc:
        _typed_labels(labels, name)  # names the label type that cannot be hashed
        raise TypeError(f"{name} labels must be hashable: {exc}") from exc
    return _encode_distinct(distinct, codes, name, lambda: labels)


def _factorize(labels):
    """Distinct labels in order of first appearance and each row's index into them.

    One hash pass (linear time): sorting strings or Python objects, as
    :func:`numpy.unique` does, costs ``n log n`` slow comparisons. The hash
    table is pandas' when pandas is already loaded (about three times faster),
    else a dictionary; pandas is never imported for it.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,), dtype object, str or bytes

    Returns
    -------
    distinct : ndarray of shape (n_distinct,), dtype of ``labels``
    codes : ndarray of shape (n_samples,), dtype intp
        ``distinct[codes]`` recovers the labels.
    """
    pandas = sys.modules.get("pandas")
    if pandas is not None:
        codes, distinct = pandas.factorize(labels)
        if codes.min() >= 0:  # else missing labels: the dictionary keeps them to be named
            return distinct.astype(labels.dtype, copy=False), codes.astype(np.intp, copy=False)
    rows = labels.tolist()
    index = {label: i for i, label in enumerate(dict.fromkeys(rows))}
    codes = np.fromiter(map(index.__getitem__, rows), dtype=np.intp, count=len(rows))
    return np.fromiter(index, dtype=labels.dtype, count=len(index)), codes


def _encode_distinct(distinct, codes, name, rows):
    """Validate and sort the distinct labels of a factorisation, and renumber its codes.

    Parameters
    ----------
    distinct : ndarray of shape (n_distinct,)
        The distinct labels, in any order.
    codes : ndarray of shape (n_samples,), dtype intp
        ``distinct[codes]`` are the labels.
    name : str
        Argument name used in error messages.
    rows : callable
        Returns all labels as an array; called only for object labels that
        are numbers or booleans, whose types must be read row by row.

    Returns
    -------
    groups, codes
        As :func:`_encode_labels`.
    """
    typed = _typed_labels(distinct, name)
    if distinct.dtype.kind == "O" and typed.dtype.kind in "bif":
        # True and 1 are one dictionary key: a mix of both shows only in the rows.
        _typed_labels(np.asarray(rows()), name)
    groups, rank = _encode_labels(typed)
    return groups, rank[codes]


def _typed_labels(labels, name):
    """Check the label values and give object labels the dtype of their kind.

    Numbers become int64 (all integral) or float64, strings str and booleans
    bool; missing values, mixed kinds and other types are refused.
    """
    if labels.dtype.kind == "f":
        if not np.all(np.isfinite(labels)):
            raise ValueError(f"{name} contains NaN or infinite labels.")
    elif labels.dtype.kind == "c":
        raise TypeError(f"{name} must not be complex numbers.")
    elif labels.dtype.kind == "O":
        # Kinds are decided per distinct type, not per row: rows can be many.
        types = set(map(type, labels.tolist()))
        missing = (
            type(None) in types
            or any(_is_pandas_missing(t) for t in types)
            or any(issubclass(t, float) for t in types)
            and any(isinstance(v, float) and v != v for v in labels.tolist())
        )
        if missing:
            raise ValueError(f"{name} contains missing labels (None, NaN or pd.NA).")
        kinds = {_label_kind(t) for t in types}
        if len(kinds) > 1:
            raise TypeError(
                f"{name} mixes label types ({', '.join(sorted(kinds))}); use labels of one type."
            )
        kind = kinds.pop()
        if kind not in ("number", "string", "bool"):
            raise TypeError(f"{name} labels must be numbers, strings or booleans, got {kind}.")
        if kind == "number":
            labels = labels.astype(np.float64)
            if np.all(labels == np.round(labels)):
                labels = labels.astype(np.int64)
        else:
            labels = labels.astype(str if kind == "string" else bool)
    elif labels.dtype.kind not in "iubUS":
        raise TypeError(f"{name} has unsupported dtype {labels.dtype}.")
    return labels


def _intersectional_groups(sensitive_features, labels, n_samples, name):
    """Groups of a 2-D attribute table: every combination of values that occurs.

    Each column is validated as a 1-D attribute; a group is the tuple of one
    value per column (the intersection), in lexicographic order of the columns'
    sorted values. Combinations without rows are not groups.
    """
    columns = (
        [sensitive_features.iloc[:, j] for j in range(labels.shape[1])]
        if hasattr(sensitive_features, "iloc")
        else [labels[:, j] for j in range(labels.shape[1])]
    )
    names = (
        [str(c) for c in sensitive_features.columns]
        if hasattr(sensitive_features, "columns")
        else [str(j) for j in range(labels.shape[1])]
    )
    encoded = [
        check_sensitive_features(column, n_samples, f"{name} column {column_name}")
        for column, column_name in zip(columns, names, strict=True)
    ]
    # Column by column, (cell so far, value) -> one integer; ``cell * size + value``
    # keeps the lexicographic order and, renumbered at each step, stays below n^2.
    codes, cells = np.zeros(n_samples, dtype=np.intp), np.zeros((1, 0), dtype=np.intp)
    for values, column_codes in encoded:
        present, codes = _encode_labels(codes * len(values) + column_codes)
        cells = np.column_stack([cells[present // len(values)], present % len(values)])
    groups = np.empty(len(cells), dtype=object)
    groups[:] = [
        tuple(_plain(values[i]) for (values, _), i in zip(encoded, cell, strict=True))
        for cell in cells
    ]
    return groups, codes


def _encode_labels(labels):
    """Sorted distinct labels and the integer code of each row.

    Integer and boolean labels spanning a range no wider than the number of
    rows are counted into a table (linear time); other labels are sorted by
    :func:`numpy.unique`, which costs ``n log n``.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        Validated labels (not object dtype).

    Returns
    -------
    groups : ndarray of shape (n_groups,)
    codes : ndarray of shape (n_samples,), dtype intp
        ``groups[codes]`` recovers the labels.
    """
    # uint64 is left to np.unique: its values need not fit in intp.
    if labels.dtype.kind in "ib" or (labels.dtype.kind == "u" and labels.dtype.itemsize < 8):
        values = labels.view(np.uint8) if labels.dtype.kind == "b" else labels
        low, high = int(values.min()), int(values.max())
        if high - low < max(values.shape[0], 256):
            offsets = values.astype(np.intp)
            if low:
                offsets -= low
            table = np.bincount(offsets, minlength=high - low + 1)
            present = np.flatnonzero(table)
            if len(present) < len(table):
                lookup = np.zeros(len(table), dtype=np.intp)
                lookup[present] = np.arange(len(present))
                offsets = lookup[offsets]
            return (present + low).astype(labels.dtype), offsets
    groups, codes = np.unique(labels, return_inverse=True)
    return groups, codes.astype(np.intp, copy=False)


def split_sensitive_features(sensitive_features, continuous):
    """Split an attribute table into its categorical and its continuous columns.

    Parameters
    ----------
    sensitive_features : array-like, DataFrame, Series or Dask collection
        One attribute (1-D) or one column per attribute (2-D).
    continuous : None, bool or list of str or int
        The continuous columns: none (None or False), all (True), or the listed
        names (DataFrame) or positions (array).

    Returns
    -------
    categorical : same kind as ``sensitive_features``, or None
        The other columns (``sensitive_features`` itself when ``continuous`` is
        None), None when every column is continuous.
    covariates : same kind, or None
        The continuous columns.
    names : list of str or None
        Names of the continuous columns, for messages.
    """
    if continuous is None or continuous is False or sensitive_features is None:
        return sensitive_features, None, None
    table = sensitive_features
    if not hasattr(table, "ndim"):
        table = np.asarray(table)
    if table.ndim == 1:
        if continuous is not True and list(continuous) not in ([0], [getattr(table, "name", 0)]):
            raise ValueError(
                f"continuous_attributes={continuous!r} does not name the single sensitive "
                "attribute; use continuous_attributes=True."
            )
        return None, table, [str(getattr(table, "name", None) or 0)]
    frame = hasattr(table, "columns")
    columns = list(table.columns) if frame else list(range(table.shape[1]))
    if continuous is True:
        chosen = columns
    else:
        if isinstance(continuous, str | numbers.Integral) or not hasattr(continuous, "__iter__"):
            raise TypeError(
                "continuous_attributes must be None, True or a list of column "
                f"{'names' if frame else 'positions'}, got {continuous!r}."
            )
        chosen = list(continuous)
        unknown = [c for c in chosen if c not in columns]
        if unknown or len(set(chosen)) < len(chosen):
            raise ValueError(
                f"continuous_attributes={chosen!r} must list distinct columns of "
                f"sensitive_features, which are {columns!r}."
            )
    rest = [c for c in columns if c not in chosen]
    if frame:
        categorical = table[rest] if rest else None
        return categorical, table[chosen], [str(c) for c in chosen]
    categorical = table[:, rest] if rest else None
    return categorical, table[:, chosen], [str(c) for c in chosen]


def check_covariates(covariates, n_samples, names=None):
    """Validate continuous sensitive attributes: a finite float array, one row per sample.

    Parameters
    ----------
    covariates : array-like of shape (n_samples,) or (n_samples, n_covariates)
        Numeric values of the continuous attributes.
    n_samples : int
        Number of rows of the data they go with.
    names : list of str, default=None
        Attribute names for messages (default: column positions).

    Returns
    -------
    Z : ndarray of shape (n_samples, n_covariates), dtype float64
    """
    raise_if_non_numeric(covariates, "continuous sensitive features")
    try:
        Z = np.asarray(covariates, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise TypeError(f"continuous sensitive features must be real numbers: {exc}") from exc
    if Z.ndim == 1:
        Z = Z[:, None]
    if Z.ndim != 2:
        raise ValueError(f"continuous sensitive features must be 1-D or 2-D, got shape {Z.shape}.")
    if Z.shape[0] != n_samples:
        raise ValueError(
            f"continuous sensitive features have {Z.shape[0]} rows but X has {n_samples}; "
            "they must have the same length."
        )
    names = [str(j) for j in range(Z.shape[1])] if names is None else names
    finite = np.isfinite(Z).all(axis=0)
    if not finite.all():
        bad = ", ".join(repr(n) for n, ok in zip(names, finite, strict=True) if not ok)
        raise ValueError(
            f"continuous sensitive feature(s) {bad} contain NaN or infinite values; "
            "impute or drop those rows first."
        )
    return Z


#: Magnitudes of data whose squares (and sums of them) stay in the normal float64
#: range: below 2^-480 (about 3e-145) squares leave it, above 2^500 (about 3e150)
#: sums of squares over millions of rows overflow.
_SMALLEST_MAGNITUDE, _LARGEST_MAGNITUDE = 2.0**-480, 2.0**500


def check_magnitude(X, name="X"):
    """Refuse nonzero data too small or too large in magnitude for second moments in float64.

    Parameters
    ----------
    X : ndarray
        Finite data.
    name : str, default="X"
    """
    check_largest_magnitude(largest_magnitude(X), name)


def largest_magnitude(X):
    """``max |X|`` of a finite array, without an ``|X|`` temporary as large as ``X``."""
    return max(float(X.max()), -float(X.min()), 0.0) if X.size else 0.0


def check_largest_magnitude(largest, name="X"):
    """:func:`check_magnitude` from the largest absolute value, already known."""
    if 0 < largest < _SMALLEST_MAGNITUDE:
        raise ValueError(
            f"{name} is too small in magnitude (largest absolute value {largest:.3g}): its "
            "squares fall below the normal float64 range, so second moments lose their "
            "digits. Rescale it first (e.g. multiply by a power of ten, or standardise with "
            "sklearn.preprocessing.StandardScaler)."
        )
    if largest > _LARGEST_MAGNITUDE:
        raise ValueError(
            f"{name} is too large in magnitude (largest absolute value {largest:.3g}): its "
            "second moments overflow float64. Rescale it first (e.g. with "
            "sklearn.preprocessing.StandardScaler)."
        )


def check_sample_weight(sample_weight, n_samples):
    """Validate frequency weights: finite, non-negative, one per row, not all zero.

    Returns
    -------
    weights : ndarray of shape (n_samples,), dtype float64
    """
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sample_weight must be real numbers: {exc}") from exc
    if weights.ndim != 1 or weights.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight must be 1-D with one weight per row of X ({n_samples}), got "
            f"shape {weights.shape}."
        )
    if not np.all(np.isfinite(weights)):
        raise ValueError("sample_weight contains NaN or infinite values.")
    if np.any(weights < 0):
        raise ValueError("sample_weight must be non-negative.")
    if not weights.sum() > 0:
        raise ValueError("sample_weight sums to zero: there is nothing to fit.")
    return weights


def check_number(
    value, name, kind=numbers.Integral, *, minimum=None, maximum=None, include_boundaries="both"
):
    """Validate a scalar argument with :func:`sklearn.utils.check_scalar`.

    Unlike ``check_scalar`` alone, booleans are rejected (``True`` is not a
    count) and real numbers must be finite.

    Parameters
    ----------
    value : object
        The argument.
    name : str
        Its name, used in error messages.
    kind : {numbers.Integral, numbers.Real}, default=numbers.Integral
        Accepted type.
    minimum, maximum : float, default=None
        Bounds; ``None`` means unbounded.
    include_boundaries : {"both", "left", "right", "neither"}, default="both"
        Whether the bounds themselves are allowed.

    Returns
    -------
    value : int or float
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be {'an int' if kind is numbers.Integral else 'a number'}, "
            f"got the bool {value!r}."
        )
    check_scalar(
        value, name, kind, min_val=minimum, max_val=maximum, include_boundaries=include_boundaries
    )
    if kind is numbers.Integral:
        return int(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    return float(value)


def check_n_components(n_components, n_features, name="n_components", *, allow_fraction=False):
    """Check that ``1 <= n_components <= n_features`` and return it as ``int``.

    Parameters
    ----------
    n_components : int or float
        Requested target dimension; with ``allow_fraction`` also a float in
        (0, 1), a share of variance to keep, returned as a float for
        :func:`components_for_fraction` to resolve once the data are known.
    n_features : int
        Number of features of the data.
    name : str, default="n_components"
        Argument name used in error messages.
    allow_fraction : bool, default=False
        Whether a fraction is accepted.

    Returns
    -------
    n_components : int or float
    """
    integral = isinstance(n_components, numbers.Integral)
    if isinstance(n_components, (bool, np.bool_)) or not isinstance(n_components, numbers.Real):
        raise TypeError(
            f"{name} must be an int{' or a fraction in (0, 1)' if allow_fraction else ''}, "
            f"got {n_components!r} of type {type(n_components).__name__}."
        )
    if not integral:
        if not allow_fraction:
            raise TypeError(
                f"{name} must be an int, got {n_components!r} of type "
                f"{type(n_components).__name__}."
            )
        if not 0 < n_components < 1:
            raise ValueError(
                f"{name}={n_components!r} must be an int between 1 and n_features="
                f"{n_features}, or a fraction of the variance in (0, 1)."
            )
        return float(n_components)
    if not 1 <= n_components <= n_features:
        raise ValueError(f"{name}={n_components} must be between 1 and n_features={n_features}.")
    return int(n_components)


def components_for_fraction(fraction, covariance):
    """The smallest ``d`` whose principal components explain more than ``fraction``.

    The rule of :class:`sklearn.decomposition.PCA` for a float
    ``n_components``, applied to the pooled training covariance: the fair
    method then fits ``d`` components (which explain at most that much).

    Parameters
    ----------
    fraction : float in (0, 1)
    covariance : ndarray of shape (p, p)

    Returns
    -------
    d : int
    """
    values = np.clip(np.linalg.eigvalsh(covariance)[::-1], 0.0, None)
    if not values.sum() > 0:
        return 1
    ratio = np.cumsum(values) / values.sum()
    return int(min(np.searchsorted(ratio, fraction, side="right") + 1, len(values)))


def _plain(label):
    """A numpy scalar label as the Python value, so messages read ``'a'`` not ``np.str_('a')``."""
    return label.item() if isinstance(label, np.generic) else label


def _check_group_sizes(groups, counts, min_size, name="sensitive_features"):
    """Raise a ``ValueError`` naming every group with fewer than ``min_size`` rows.

    Parameters
    ----------
    groups : ndarray of shape (n_groups,)
        Group labels.
    counts : ndarray of shape (n_groups,)
        Rows per group.
    min_size : int
        Rows each group needs.
    name : str, default="sensitive_features"
        Argument name used in the message.
    """
    small = [(_plain(g), int(c)) for g, c in zip(groups, counts, strict=True) if c < min_size]
    if small:
        listed = ", ".join(f"{g!r} ({c} rows)" for g, c in small)
        raise ValueError(
            f"every group in {name} needs at least {min_size} rows; too small: {listed}."
        )


def _check_n_groups(groups, min_groups=2, name="sensitive_features"):
    """Raise a ``ValueError`` when fewer than ``min_groups`` distinct labels occur."""
    if len(groups) < min_groups:
        raise ValueError(
            f"{name} must contain at least {min_groups} distinct groups, found "
            f"{len(groups)} ({', '.join(repr(_plain(g)) for g in groups)})."
        )


#: Largest total size of the dense p x p moment matrices a covariance-based fit may
#: hold (one per group and the pooled scatter), and the budget every other allocation
#: that grows with a hyper-parameter (iterations, restarts, features) is checked
#: against before it happens (:func:`check_allocation`).
MAX_DENSE_MOMENT_BYTES = 8 * 2**30


class MemoryBudgetError(ValueError):
    """An allocation would exceed :data:`MAX_DENSE_MOMENT_BYTES` (see :func:`check_allocation`)."""


class DataTooWideError(MemoryBudgetError):
    """The data have too many features for dense ``p x p`` moments (see :func:`check_width`)."""


def _gib(n_bytes):
    """A size in GiB (MiB below one GiB), for messages."""
    if n_bytes < 2**30:
        return f"{n_bytes / 2**20:.3g} MiB"
    return f"{n_bytes / 2**30:.3g} GiB"


def check_allocation(n_bytes, what, advice=""):
    """Refuse an allocation larger than :data:`MAX_DENSE_MOMENT_BYTES`, before it happens.

    Parameters
    ----------
    n_bytes : int or float
        Bytes the allocation would take (a float, so that products of huge
        parameters do not overflow).
    what : str
        What would be allocated, naming the parameter it grows with, e.g.
        ``"the objective history of n_iter=1000000000 steps for 21 starts"``.
    advice : str, default=""
        What to change, appended to the message.

    Raises
    ------
    MemoryBudgetError
        A ``ValueError`` saying what would need how much memory.
    """
    budget = MAX_DENSE_MOMENT_BYTES
    if float(n_bytes) > budget:
        raise MemoryBudgetError(
            f"{what} would need {_gib(float(n_bytes))}, more than the {_gib(budget)} "
            f"budget (fairpca._validation.MAX_DENSE_MOMENT_BYTES). {advice}".rstrip()
        )


def check_width(n_features, estimator_name, n_groups=None):
    """Refuse data too wide for dense ``p x p`` moments, naming the estimator that fits it.

    Parameters
    ----------
    n_features : int
        Width ``p`` of the data (with any continuous attributes appended).
    estimator_name : str
        Named in the message.
    n_groups : int, default=None
        Number ``k`` of groups, when known: the moments hold one ``p x p``
        scatter per group and the fit the pooled one, ``k + 1`` matrices. None
        (labels not read yet) counts two groups, three matrices, the fewest a
        fair fit holds.

    Raises
    ------
    DataTooWideError
        A ``ValueError``, if ``k + 1`` ``n_features x n_features`` float64
        matrices exceed :data:`MAX_DENSE_MOMENT_BYTES`.
    """
    each = 8 * n_features**2
    matrices = 3 if n_groups is None else int(n_groups) + 1
    if matrices * each > MAX_DENSE_MOMENT_BYTES:
        held = (
            "at least three"
            if n_groups is None
            else f"{matrices} (one per group of the {n_groups} and the pooled scatter)"
        )
        raise DataTooWideError(
            f"X has {n_features} features: {estimator_name} holds {held} dense "
            f"{n_features} x {n_features} matrices ({each / 2**30:.1f} GiB each, "
            f"{_gib(matrices * each)} in all, more than the {_gib(MAX_DENSE_MOMENT_BYTES)} "
            "budget fairpca._validation.MAX_DENSE_MOMENT_BYTES). For data "
            "this wide use fairpca.StreamingFairPCA, which needs O(n_features * "
            "(n_components + unfair_rank)) memory."
        )
