"""A user's table as it comes: a CSV read into features, groups and a target.

:func:`read_table` (exported as :func:`fairpca.datasets.read_table`) is what
``fairpca compare`` and ``fairpca tradeoff`` call on ``--data``, and what a
Python user calls on a CSV; :func:`choose_columns` applies its column rules to
any DataFrame. Every refusal is a ``ValueError`` whose message names the
columns and the parameter that changes it.
A raw table holds columns that are not features in any useful sense — row
numbers, names, case numbers, time stamps, free text with a value per row,
columns that are empty or constant — and one-hot encoding them would give tens
of thousands of columns of noise. The rules, in order, each reported once in
one line that names the columns and says how to keep them:

1. ``features`` keeps only the named columns (no rule below removes them,
   except 5); ``drop`` removes columns.
2. **Dates and times**: text columns whose values mostly parse as dates
   (``pandas.to_datetime``; at least :data:`DATE_SHARE` of the non-missing
   values, each with a digit) and datetime columns. Left out by default;
   named in ``features`` they become numbers (days since 1970-01-01).
   They come before identifiers because a time stamp is nearly always
   unique and would otherwise be called one.
3. **Identifiers**: integer columns whose values are all different (row
   numbers) and text columns of which at least :data:`IDENTIFIER_SHARE` of
   the non-missing values are distinct (names, case numbers).
4. **High-cardinality text**: text columns with more distinct values than
   ``max(MIN_TEXT_LEVELS, TEXT_LEVEL_SHARE * n_rows)``: one-hot encoded they
   would give a column per near-unique value.
5. **Empty and constant columns**: every value missing, or one distinct value.

Finally the one-hot width (the categories of the text columns kept) is
capped at ``max_encoded_features`` before any fit: past it the call is
refused, naming the widest columns.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fairpca._validation import check_number

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DATE_SHARE",
    "IDENTIFIER_SHARE",
    "MAX_ENCODED_FEATURES",
    "MAX_GROUPS_WITHOUT_BINS",
    "MIN_TEXT_LEVELS",
    "TEXT_LEVEL_SHARE",
    "UserTable",
    "choose_columns",
    "is_numeric_column",
    "read_table",
]

#: Share of a text column's non-missing values that must parse as dates.
DATE_SHARE = 0.9
#: Share of distinct values among the non-missing ones that makes a text column an identifier.
IDENTIFIER_SHARE = 0.95
#: A text column with more levels than ``max(MIN_TEXT_LEVELS, TEXT_LEVEL_SHARE * rows)``
#: is left out as high-cardinality: this many levels are always allowed...
MIN_TEXT_LEVELS = 50
#: ...and this share of the rows, when larger.
TEXT_LEVEL_SHARE = 0.05
#: Default cap on the number of one-hot columns the text columns may produce.
MAX_ENCODED_FEATURES = 1000
#: A numeric sensitive column with more distinct values than this needs ``bins``.
MAX_GROUPS_WITHOUT_BINS = 20
#: Values a CSV may use for a missing cell besides an empty one.
MISSING_MARKERS = ("?",)
#: Text values sampled to decide whether a column holds dates.
_DATE_SAMPLE = 500
#: What a written date looks like: 2013-08-14, 08/14/2013, 14.8.2013, Aug 14, 2013, 14 Aug 2013.
_DATE_SHAPE = (
    r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|\d{4}-\d{2}"
    r"|[A-Za-z]{3,9}\.? \d{1,2},? \d{4}|\d{1,2} [A-Za-z]{3,9}\.? \d{4}"
)


@dataclass
class UserTable:
    """A table read by :func:`read_table`.

    Attributes
    ----------
    features : pandas.DataFrame of shape (n_rows, n_kept)
        The kept feature columns: numbers, text (categories, to be one-hot
        encoded) and dates named in ``features`` converted to days since
        1970-01-01.
    groups : ndarray of shape (n_rows,)
        The protected group of each row.
    target : ndarray of shape (n_rows,) of {0, 1}, or None
        The binary target, 1 for ``positive_class``.
    positive_class : object or None
        The target value coded as 1 (the larger of the two, as sorted).
    notes : list of str
        One line per rule that changed the columns (what was left out and
        how to keep it).
    """

    features: Any
    groups: np.ndarray
    target: np.ndarray | None = None
    positive_class: Any = None
    notes: list[str] = field(default_factory=list)


def read_table(
    path: str | Path,
    sensitive: str | list[str],
    target: str | None = None,
    *,
    features: list[str] | None = None,
    drop: list[str] | tuple[str, ...] | None = None,
    bins: int | None = None,
    column_names: list[str] | None = None,
    max_encoded_features: int = MAX_ENCODED_FEATURES,
) -> UserTable:
    """Read a CSV into features, groups and a binary target by :func:`choose_columns`'s rules.

    Parameters
    ----------
    path : str or Path
        A CSV file with a header row (or without one, given ``column_names``).
        Empty cells and ``?`` are missing values; spaces after a separator are
        ignored.
    sensitive : str or list of str
        Column holding the protected group. It must have no missing values.
        Several columns (a list, or one string of comma-separated names that
        is not itself a column, e.g. ``"sex,race"``): the groups are the
        combinations of their values (intersectional groups, labelled
        ``"Male/White"``).
    target : str, default=None
        Column with exactly two values, coded 0/1 (the larger value, as
        sorted, is 1).
    features : list of str, default=None
        Columns to use as features (default: every other column, by the
        rules of the module docstring; named ones are kept, dates among them
        converted to days since 1970-01-01).
    drop : list of str, default=None
        Columns to leave out.
    bins : int, default=None
        Cut a numeric ``sensitive`` column into this many quantile bins.
        A numeric column with more than :data:`MAX_GROUPS_WITHOUT_BINS`
        values is refused without it (its groups would be mostly tiny).
    column_names : list of str, default=None
        The file has no header row; these are its columns, in order.
    max_encoded_features : int, default=1000
        Most one-hot columns the kept text columns may produce.

    Returns
    -------
    UserTable
        Its ``notes`` say, one line per rule, what was left out and how to keep it.

    Raises
    ------
    ValueError
        A file that is not CSV, a named column that is not in it, missing
        groups or targets, a target without exactly two values, a one-hot
        width past the cap, or no feature left.

    Notes
    -----
    Missing feature values are kept: :func:`fairpca.datasets.make_split`
    refuses, fills (with training statistics) or drops them (``impute``).

    Examples
    --------
    >>> from fairpca.datasets import make_split, read_table
    >>> table = read_table("people.csv", "sex", "income")  # doctest: +SKIP
    >>> split = make_split(table.features, table.groups, table.target)  # doctest: +SKIP
    """
    path = Path(path)
    drop = () if drop is None else list(drop)
    frame = _read_csv(path, column_names)
    sensitive = _sensitive_columns(sensitive, frame.columns)
    if target is not None and target in sensitive:
        raise ValueError(
            f"the target column {target!r} is also a sensitive column: the groups and the "
            "target must be different columns."
        )
    named = [("sensitive", c) for c in sensitive] + [("target", target)]
    named += [("features", c) for c in features or ()] + [("drop", c) for c in drop]
    for option, column in named:
        if column is not None and column not in frame.columns:
            raise ValueError(
                f"{option} column {column!r} is not in {path.name}; its columns are: "
                + ", ".join(map(str, frame.columns))
            )
    for column in sensitive:
        if frame[column].isna().any():
            raise ValueError(f"sensitive column {column!r} has missing values.")
    if len(sensitive) == 1:
        groups, notes = _sensitive_groups(frame[sensitive[0]], bins)
    else:
        groups, notes = _intersectional_groups(frame[sensitive], bins)
    y, positive = None, None
    if target is not None:
        y, positive = _binary_target(frame[target])
        notes.append(f"target: {target!r} == {positive!r} is the positive class")
    candidates = frame.drop(columns=[c for c in (*sensitive, target) if c is not None])
    kept, rule_notes = choose_columns(
        candidates, features=features, drop=drop, max_encoded_features=max_encoded_features
    )
    if kept.shape[1] == 0:
        raise ValueError(f"{path.name} has no feature columns besides the named ones.")
    return UserTable(kept, groups, y, positive, notes + rule_notes)


def _sensitive_columns(sensitive, columns):
    """The sensitive columns as a list: a column name, or comma-separated names, or a list."""
    if isinstance(sensitive, str):
        if sensitive in columns or "," not in sensitive:
            return [sensitive]
        sensitive = [name.strip() for name in sensitive.split(",")]
    sensitive = list(sensitive)
    if not sensitive or len(set(sensitive)) != len(sensitive):
        raise ValueError(f"sensitive columns must be distinct and at least one: {sensitive}.")
    return sensitive


def _intersectional_groups(frame, bins):
    """Groups that are the combinations of several sensitive columns' values."""
    import pandas as pd

    parts, notes = [], []
    for column in frame.columns:
        numeric = pd.api.types.is_numeric_dtype(frame[column].dtype)
        labels, column_notes = _sensitive_groups(frame[column], bins if numeric else None)
        parts.append(pd.Series(labels, index=frame.index).astype(str))
        notes += column_notes
    groups = parts[0].str.cat(parts[1:], sep="/").to_numpy()
    names = " x ".join(repr(c) for c in frame.columns)
    notes.append(f"groups: the combinations of {names} ({len(np.unique(groups))} groups)")
    return groups, notes


def _read_csv(path, column_names):
    import pandas as pd

    options = {"skipinitialspace": True, "na_values": list(MISSING_MARKERS)}
    try:
        if column_names is None:
            return pd.read_csv(path, **options)
        frame = pd.read_csv(path, header=None, **options)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"could not read {path} as CSV: {exc}") from exc
    if frame.shape[1] != len(column_names):
        raise ValueError(
            f"{path.name} has {frame.shape[1]} columns but {len(column_names)} column names "
            "were given."
        )
    if len(set(column_names)) != len(column_names):
        raise ValueError("column names must be distinct.")
    frame.columns = list(column_names)
    return frame


def _binary_target(values):
    """0/1 codes of a two-valued column and the value coded 1."""
    if values.isna().any():
        raise ValueError(f"target column {values.name!r} has missing values.")
    levels = np.unique(values.to_numpy())
    if len(levels) != 2:
        raise ValueError(
            f"target column {values.name!r} must have exactly two values, found {len(levels)}."
        )
    positive = levels[1].item() if hasattr(levels[1], "item") else levels[1]
    return (values.to_numpy() == levels[1]).astype(int), positive


def _sensitive_groups(column: pd.Series, bins: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Group labels of a sensitive column, cut into quantile bins when asked.

    Returns the labels and a note (a line naming the bins, when cut).
    """
    import pandas as pd

    numeric = pd.api.types.is_numeric_dtype(column.dtype)
    if bins is not None:
        if not numeric:
            raise ValueError(f"bins needs a numeric sensitive column; {column.name!r} is not.")
        cut = pd.qcut(column, q=bins, duplicates="drop")
        note = f"groups: {column.name!r} cut into {cut.cat.categories.size} quantile bins"
        return cut.astype(str).to_numpy(), [note]
    if numeric and column.nunique() > MAX_GROUPS_WITHOUT_BINS:
        raise ValueError(
            f"sensitive column {column.name!r} is numeric with {column.nunique()} distinct "
            "values: as groups they would be mostly tiny. Cut it into groups with bins=N "
            "(--bins N on the command line, e.g. --bins 4 for quartiles)."
        )
    return column.to_numpy(), []


def choose_columns(
    frame: pd.DataFrame,
    *,
    features: list[str] | None = None,
    drop: list[str] | tuple[str, ...] = (),
    max_encoded_features: int = MAX_ENCODED_FEATURES,
) -> tuple[pd.DataFrame, list[str]]:
    """The feature columns of a raw table, by the rules of the module docstring.

    Parameters
    ----------
    frame : pandas.DataFrame
        Candidate columns (the sensitive and target columns already removed).
    features : list of str, default=None
        Keep exactly these columns (dates among them become days since
        1970-01-01); only empty and constant ones are still removed.
    drop : list of str, default=()
        Columns to leave out.
    max_encoded_features : int, default=1000
        Most one-hot columns the kept text columns may produce.

    Returns
    -------
    kept : pandas.DataFrame
        The chosen columns (a copy).
    notes : list of str
        One line per rule that removed or converted columns.

    Raises
    ------
    ValueError
        When the kept text columns would one-hot encode to more than
        ``max_encoded_features`` columns (the widest are named).
    """
    check_number(max_encoded_features, "max_encoded_features", minimum=1)
    explicit = features is not None
    columns = list(features) if explicit else [c for c in frame.columns if c not in drop]
    kept = frame[columns].copy()
    notes = []
    dates = [c for c in kept.columns if _looks_like_dates(kept[c])]
    if dates and explicit:
        for c in dates:
            kept[c] = _days_since_epoch(kept[c])
        notes.append(
            "dates converted to days since 1970-01-01: " + ", ".join(map(str, dates)) + "."
        )
    elif not explicit:
        kept = kept.drop(columns=dates)
        identifiers = [c for c in kept.columns if _looks_like_identifier(kept[c])]
        kept = kept.drop(columns=identifiers)
        limit = max(MIN_TEXT_LEVELS, TEXT_LEVEL_SHARE * len(kept))
        wide = [
            c for c in kept.columns if not is_numeric_column(kept[c]) and kept[c].nunique() > limit
        ]
        kept = kept.drop(columns=wide)
        removed_by_rule = {
            "dates or times": dates,
            "identifiers (nearly every value different)": identifiers,
            f"text with more than {limit:.0f} distinct values": wide,
        }
        notes += [
            f"left out as {what}: {', '.join(map(str, removed))}; name them in "
            "--features (features=[...]) to keep them."
            for what, removed in removed_by_rule.items()
            if removed
        ]
    empty = [c for c in kept.columns if kept[c].isna().all()]
    constant = [c for c in kept.columns if c not in empty and kept[c].nunique() <= 1]
    if empty or constant:
        parts = [f"every value missing: {', '.join(map(str, empty))}"] if empty else []
        parts += [f"one value only: {', '.join(map(str, constant))}"] if constant else []
        notes.append("left out (no information): " + "; ".join(parts) + ".")
        kept = kept.drop(columns=empty + constant)
    _check_encoded_width(kept, max_encoded_features)
    return kept, notes


def _check_encoded_width(frame, cap):
    """Refuse text columns that would one-hot encode to more than ``cap`` columns."""
    levels = {c: int(frame[c].nunique()) for c in frame.columns if not is_numeric_column(frame[c])}
    width = sum(levels.values())
    if width <= cap:
        return
    widest = sorted(levels.items(), key=lambda item: -item[1])[:5]
    raise ValueError(
        f"one-hot encoding the text columns would give {width} features, more than the cap "
        f"of {cap}; the widest: "
        + ", ".join(f"{c!r} ({n} values)" for c, n in widest)
        + ". Leave them out (--drop / drop=[...]) or raise the cap (--max-encoded-features / "
        "max_encoded_features=...)."
    )


def is_numeric_column(column: pd.Series) -> bool:
    """Whether a column holds numbers or booleans (not text or categories)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return is_numeric_dtype(column.dtype) or is_bool_dtype(column.dtype)


def _looks_like_identifier(column):
    """Integers all different (a row number), or text nearly all different (a name)."""
    values = column.dropna()
    if len(values) < 2:
        return False
    if column.dtype.kind in "iu":
        return values.nunique() == len(values)
    if is_numeric_column(column):
        return False  # real numbers are all different by nature
    return values.nunique() >= IDENTIFIER_SHARE * len(values)


def _looks_like_dates(column):
    """A datetime column, or text of which most values parse as dates."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(column.dtype):
        return True
    if is_numeric_column(column):
        return False
    values = column.dropna().astype(str)
    if values.empty:
        return False
    sample = values.sample(min(len(values), _DATE_SAMPLE), random_state=0)
    # dateutil parses much that is not a date ("May", "t5"): ask for a date's shape first.
    if not sample.str.contains(_DATE_SHAPE).mean() >= DATE_SHARE:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas warns when it infers the format per value
        parsed = pd.to_datetime(sample, errors="coerce", format="mixed")
    return parsed.notna().mean() >= DATE_SHARE


def _days_since_epoch(column):
    """Dates as days since 1970-01-01 (float; unparsed values become missing)."""
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = pd.to_datetime(column, errors="coerce", format="mixed")
    return (parsed - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)
