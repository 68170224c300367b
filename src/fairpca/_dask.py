"""Dask helpers: recognising Dask input, aligning labels, per-block moments, row gathering.

Used by :class:`fairpca.moments.GroupMoments` (one distributed pass over the
rows for the group moments, merged pairwise with the update of Chan, Golub &
LeVeque, 1979) and by
the estimators that read a bounded sample of rows (:mod:`fairpca.mmd`).
Dask itself is imported only when Dask input is met.
"""

import warnings

import numpy as np


def _import_dask(caller):
    """``dask`` and ``dask.array``, or an ImportError naming the extra."""
    try:
        import dask
        import dask.array as da
    except ImportError as exc:
        raise ImportError(
            f"{caller} needs dask for Dask input: pip install 'fairpca[dask]'"
        ) from exc
    return dask, da


def _is_dask_collection(obj):
    """Whether ``obj`` is a Dask collection, decided without importing dask."""
    return type(obj).__module__.split(".")[0] == "dask" and hasattr(obj, "__dask_graph__")


def _dask_rows(X, da):
    """A Dask array of ``X`` with whole rows per block, and its column names (or None)."""
    columns = None
    if hasattr(X, "to_dask_array"):  # Dask DataFrame: one block per partition
        columns = list(X.columns)
        X = _frame_array(X)
    elif not isinstance(X, da.Array):
        X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s).")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"X must be numeric; got a Dask collection of dtype {X.dtype}.")
    return X.rechunk({1: -1}), columns


def _frame_array(frame):
    """A Dask DataFrame's (or Series') values as a Dask array, columns matched by name.

    A partition's values come in its own column order, which Dask does not
    check against the meta (e.g. CSV files whose headers list the columns
    differently): each partition is put in the meta's order first.
    """
    if frame.ndim == 2:
        frame = frame.map_partitions(_aligned_partition, list(frame.columns), meta=frame._meta)
    return frame.to_dask_array()


def _aligned_partition(part, columns):
    """``part`` (a pandas DataFrame) with its columns in the order ``columns``.

    Raises a ``ValueError`` when its columns are not those names, or when the
    names repeat, so that columns cannot be matched by name.
    """
    own = list(part.columns)
    if own == columns:
        return part
    if sorted(map(repr, own)) != sorted(map(repr, columns)) or len(set(columns)) < len(columns):
        raise ValueError(
            f"a partition of X has the columns {own[:20]!r}, but X (its first partition or "
            f"meta) has {columns[:20]!r}: every partition needs the same column names, "
            "which are matched by name (repeated names cannot be)."
        )
    return part[columns]


def _dask_labels(sensitive_features, X, da):
    """Labels (1-D, or 2-D with one column per attribute) as a Dask array in ``X``'s row blocks.

    Also used for the continuous attributes, which must line up the same way.
    """
    if sensitive_features is None:
        raise ValueError("sensitive_features is required: pass one group label per row of X.")
    labels = sensitive_features
    if hasattr(labels, "to_dask_array"):
        with warnings.catch_warnings():
            # String columns become object arrays, which is what the labels need.
            warnings.filterwarnings("ignore", "Dask currently has limited support", UserWarning)
            labels = _frame_array(labels)
    elif not isinstance(labels, da.Array):
        labels = np.asarray(labels)
        if np.isnan(X.shape[0]):
            raise ValueError(
                "X has row blocks of unknown size (e.g. a Dask DataFrame); pass "
                "sensitive_features as a Dask collection partitioned like X, such as a "
                "column of the same DataFrame."
            )
        _check_label_length(labels.shape, X.shape[0])
        labels = da.from_array(labels, chunks=(X.chunks[0],) + labels.shape[1:])
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim not in (1, 2):
        raise ValueError(
            "sensitive_features must be 1-D (one label per row) or 2-D (one column per "
            f"attribute), got shape {labels.shape}."
        )
    known = not (np.isnan(X.shape[0]) or np.isnan(labels.shape[0]))
    if known:
        _check_label_length(labels.shape, X.shape[0])
        return labels.rechunk((X.chunks[0],) + ((-1,) if labels.ndim == 2 else ()))
    if labels.numblocks[0] != X.numblocks[0]:
        raise ValueError(
            f"X has {X.numblocks[0]} row blocks of unknown size but sensitive_features has "
            f"{labels.numblocks[0]}; partition them alike (e.g. take both from one DataFrame)."
        )
    return labels.rechunk({1: -1}) if labels.ndim == 2 else labels


def _check_label_length(shape, n_samples):
    if shape[0] != n_samples:
        raise ValueError(
            f"sensitive_features has shape {shape} but X has {n_samples} rows; "
            "they must have the same length."
        )


def _merge_parts(left, right):
    """Merge two optional moments (``None`` stands for no rows)."""
    if left is None or right is None:
        return right if left is None else left
    return left.merge(right)


def _take_rows(block, local):
    """Rows ``local`` of one block, as an array."""
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


# ------------------------------------------------------------------ lazy output
def lazy_rows(estimator, method, X, n_out, names_out=None):
    """``estimator.<method>`` of a Dask collection, lazily, block by block of rows.

    The one place where the estimators' ``transform`` and ``inverse_transform``
    (and so ``fit_transform``) meet Dask input. Nothing is computed here: the
    input is first checked (its width, its column names, the fitted state) by
    calling the in-memory method on one row of zeros, which gives the output's
    dtype too; then every block of whole rows goes through the same in-memory
    method when the result is computed.

    The fitted state is a shallow copy of ``estimator`` (a refit rebinds its
    attributes, so the lazy result keeps the model it was made with), put in
    the graph once as a single key that every block reads.

    Parameters
    ----------
    estimator : fitted estimator
    method : str
        Name of the in-memory method, ``"transform"`` or ``"inverse_transform"``.
    X : dask.array.Array or dask.dataframe.DataFrame of shape (n_samples, n_in)
    n_out : int
        Width of the output.
    names_out : sequence of str or None
        Column names of the output for a Dask DataFrame (default: ``0 .. n_out - 1``).

    Returns
    -------
    dask.array.Array of shape (n_samples, n_out), or dask.dataframe.DataFrame
        A Dask array has the row chunks of ``X`` and one column chunk of
        ``n_out``: ``chunks == (X.chunks[0], (n_out,))``. A Dask DataFrame in
        gives a Dask DataFrame out, with ``X``'s index and divisions and the
        columns ``names_out``.
    """
    import copy

    dask, da = _import_dask(f"{type(estimator).__name__}.{method}")
    state = copy.copy(estimator)
    frame = hasattr(X, "map_partitions") and getattr(X, "ndim", 2) == 2
    if frame:
        import pandas as pd

        columns = list(X.columns)
        probe = pd.DataFrame(np.zeros((1, len(columns)), dtype=np.float64), columns=columns)
    else:
        X, _ = _dask_rows(X, da)
        probe = np.zeros((1, X.shape[1]), dtype=X.dtype)
    # Width, column names and fitted state are checked now, as for in-memory input.
    dtype = np.asarray(getattr(state, method)(probe)).dtype
    delayed_state = dask.delayed(state, pure=True, traverse=False)
    if frame:
        names = list(range(n_out)) if names_out is None else list(names_out)
        meta = pd.DataFrame(np.empty((0, n_out), dtype=dtype), columns=names)
        return X.map_partitions(
            _frame_block, delayed_state, method, columns, names, meta=meta, align_dataframes=False
        )
    return X.map_blocks(
        _array_block,
        delayed_state,
        method,
        chunks=(X.chunks[0], (n_out,)),
        dtype=dtype,
        meta=np.empty((0, n_out), dtype=dtype),
    )


def _quietly(state, method, block):
    """``state.<method>(block)`` as an ndarray, without repeating the feature-name warnings.

    Those were issued once, when the lazy result was made (:func:`lazy_rows`).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*feature names", UserWarning)
        return np.asarray(getattr(state, method)(block))


def _array_block(block, state, method):
    return _quietly(state, method, block)


def _frame_block(part, state, method, columns, names):
    import pandas as pd

    values = _quietly(state, method, _aligned_partition(part, columns))
    return pd.DataFrame(values, index=part.index, columns=names)
