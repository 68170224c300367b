"""What a trade-off curve is: its quality axis, its frontier, how its groups fare.

The pieces of :mod:`fairpca.tradeoff` that drawing and reporting a curve read
(:mod:`fairpca.plotting`, :mod:`fairpca._reports`), below all three so that
none imports another to reach them; :mod:`fairpca.tradeoff` re-exports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from fairpca._group_outcomes import judge_against_reference

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["QUALITY", "frontier_mask", "group_outcomes"]

#: The quality axis of every curve (higher keeps more).
QUALITY = "explained_variance_ratio"


#: The per-group columns of a curve, ``name[g]`` for every group ``g`` (as in a comparison).
_GROUP_COLUMNS = ("reconstruction_error", "marginal_loss")


def frontier_mask(quality: ArrayLike, costs: ArrayLike) -> np.ndarray:
    """Points not dominated by another: higher ``quality`` is better, lower ``costs``.

    Point ``i`` is dominated when some ``j`` has ``quality[j] >= quality[i]`` and
    ``costs[j] <= costs[i]`` in every column, with at least one strict
    inequality. Points with a NaN are neither on the frontier nor dominate.

    Parameters
    ----------
    quality : array-like of shape (n_points,)
    costs : array-like of shape (n_points,) or (n_points, n_costs)

    Returns
    -------
    mask : ndarray of shape (n_points,), dtype bool
    """
    quality = np.asarray(quality, dtype=float)
    costs = np.asarray(costs, dtype=float).reshape(len(quality), -1)
    values = np.column_stack([-quality, costs])  # all minimised
    valid = ~np.isnan(values).any(axis=1)
    mask = np.zeros(len(quality), dtype=bool)
    for i in np.flatnonzero(valid):
        others = values[valid]
        dominated = np.all(others <= values[i], axis=1) & np.any(others < values[i], axis=1)
        mask[i] = not dominated.any()
    return mask


def group_outcomes(curve: pd.DataFrame, reference: str = "PCA") -> pd.DataFrame:
    """How each group fares under each setting of ``curve``, against PCA's setting.

    The long form of the curve's per-group columns (``reconstruction_error[g]``
    and ``marginal_loss[g]``, held-out rows), judged as
    :func:`fairpca.compare.group_outcomes` judges a comparison: a group is
    worse off when its per-row marginal loss exceeds 1.5 x the larger of its
    PCA loss and 0.1 x the groups' mean PCA loss (ParetoFairPCA's rule).

    Parameters
    ----------
    curve : pandas.DataFrame
        :func:`tradeoff_curve_split`'s result (its ``attrs`` name the groups).
    reference : str, default="PCA"
        The method whose (first) setting is the baseline.

    Returns
    -------
    pandas.DataFrame
        One row per (method, setting, group) of the settings that were
        fitted: ``method``, ``setting``, ``group`` and
        :data:`fairpca._group_outcomes.GROUP_OUTCOME_COLUMNS`.
    """
    import pandas as pd

    groups = curve.attrs.get("groups", [])
    scales = dict(zip(groups, curve.attrs.get("group_scales", []), strict=True))
    rows = []
    for _, setting in curve.iterrows():
        values = [
            [setting.get(f"{prefix}[{g}]", np.nan) for prefix in _GROUP_COLUMNS] for g in groups
        ]
        if np.isnan(np.asarray(values, dtype=float)).any():
            continue  # not fitted (its error says why)
        rows += [
            {
                "method": setting["method"],
                "setting": setting["setting"],
                "group": g,
                "reconstruction_error": error,
                "marginal_loss": loss,
            }
            for g, (error, loss) in zip(groups, values, strict=True)
        ]
    columns = ["method", "setting", "group", "reconstruction_error", "marginal_loss"]
    frame = pd.DataFrame(rows, columns=columns)
    is_reference = (frame["method"] == reference).to_numpy()
    if is_reference.any():  # the first setting of the reference only
        first = frame.loc[is_reference, "setting"].iloc[0]
        is_reference = is_reference & (frame["setting"] == first).to_numpy()
    return judge_against_reference(frame, is_reference, scales)
