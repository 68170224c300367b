"""Data sets for fair PCA: synthetic generators, loaders of real data sets, a user's CSV.

The synthetic generators return the data matrix ``X`` together with the group
label (sensitive attribute) of each row. The real-data loaders (which need
pandas: ``pip install 'fairpca[datasets]'``) return a :class:`sklearn.utils.Bunch`
with ``data``, ``sensitive``, ``target``, ``feature_names`` and ``DESCR``; their
files are read from the ``data_home`` argument, else the ``FAIRPCA_DATA``
environment variable, else ``~/scikit_learn_data/fairpca``, and are verified
against pinned SHA-256 checksums.

:func:`read_table` reads a user's CSV into features, groups and a binary
target by documented column rules (:func:`choose_columns`: dates,
identifiers, wide text, empty and constant columns are left out, each named);
:func:`make_split` turns features and groups into the :class:`Split` every
workflow takes (encoded, stratified, standardised with training statistics).
"""

from fairpca.datasets._fetch import get_data_home
from fairpca.datasets._real import (
    load_adult,
    load_compas,
    load_default_credit,
    load_fairml,
    load_german_credit,
    load_lfw,
)
from fairpca.datasets._split import Split, make_split
from fairpca.datasets._table import UserTable, choose_columns, read_table
from fairpca.datasets.synthetic import (
    make_gaussian_groups,
    make_mmd_synthetic1,
    make_mmd_synthetic2,
    make_robust_toy,
)
from fairpca.datasets.wide import iter_wide_groups, make_wide_groups, wide_groups_moments

__all__ = [
    "Split",
    "UserTable",
    "choose_columns",
    "get_data_home",
    "iter_wide_groups",
    "load_adult",
    "load_compas",
    "load_default_credit",
    "load_fairml",
    "load_german_credit",
    "load_lfw",
    "make_gaussian_groups",
    "make_mmd_synthetic1",
    "make_mmd_synthetic2",
    "make_robust_toy",
    "make_split",
    "make_wide_groups",
    "read_table",
    "wide_groups_moments",
]
