"""Data sets for fair PCA: synthetic generators (real-data loaders to come).

Every function returns the data matrix ``X`` together with the group label
(sensitive attribute) of each row.
"""

from fairpca.datasets.synthetic import (
    make_gaussian_groups,
    make_mmd_synthetic1,
    make_mmd_synthetic2,
    make_robust_toy,
)

__all__ = [
    "make_gaussian_groups",
    "make_mmd_synthetic1",
    "make_mmd_synthetic2",
    "make_robust_toy",
]
