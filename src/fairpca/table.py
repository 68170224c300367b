"""Former home of :func:`read_table` and its column rules, kept as an alias.

Everything here is :mod:`fairpca.datasets`'s (``fairpca.datasets._table``):
:func:`fairpca.datasets.read_table`, :func:`fairpca.datasets.choose_columns`.
"""

from fairpca.datasets._table import (
    DATE_SHARE,
    IDENTIFIER_SHARE,
    MAX_ENCODED_FEATURES,
    MAX_GROUPS_WITHOUT_BINS,
    MIN_TEXT_LEVELS,
    TEXT_LEVEL_SHARE,
    UserTable,
    choose_columns,
    is_numeric_column,
    read_table,
)

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
