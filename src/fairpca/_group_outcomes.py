"""How each group fares under each method against PCA: the per-group outcome tables.

:func:`group_outcomes` computes, per method and group, the reconstruction error
and the marginal loss of Samadi et al. ("The Price of Fair PCA: One Extra
Dimension", NeurIPS 2018) next to PCA's, and judges whether the group is worse
off by the rule of ParetoFairPCA's warning (:func:`judge_against_reference`,
with :func:`group_scales` for the rounding allowance); :func:`worse_off_groups`
summarises the judgement per method as the text of :data:`WORSE_OFF_COLUMN`.
Used by :mod:`fairpca.compare` and :mod:`fairpca.tradeoff`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from fairpca._validation import check_data, check_sensitive_features
from fairpca.metrics import group_reconstruction_error, marginal_loss
from fairpca.metrics._projection import _labels, is_linear_projection
from fairpca.pareto import _FAIR_RTOL, _WORSE_OFF_FACTOR, _WORSE_OFF_FLOOR, _worse_off_limits

if TYPE_CHECKING:
    import pandas as pd

#: Column of a comparison (and of a trade-off curve) naming, for each method (setting),
#: the groups it serves worse than PCA does (:func:`group_outcomes`); ``"none"`` when
#: there are none, empty for a method that is not a linear projection.
WORSE_OFF_COLUMN = "groups_worse_off_than_PCA"

#: The columns of :func:`group_outcomes` after the method (and setting) and the group.
GROUP_OUTCOME_COLUMNS = (
    "reconstruction_error",
    "marginal_loss",
    "pca_reconstruction_error",
    "pca_marginal_loss",
    "reference_loss",
    "ratio",
    "worse_off",
)


def group_outcomes(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    projections: dict[str, Any],
    *,
    reference: str = "PCA",
) -> pd.DataFrame:
    """How each group fares under each projection, against ``projections[reference]``.

    Per method and group, on the rows ``X`` (a comparison passes its held-out
    rows, which every metric of its table is computed on): the per-row
    reconstruction error (:func:`fairpca.metrics.group_reconstruction_error`)
    and the per-row marginal loss of Samadi et al.
    (:func:`fairpca.metrics.marginal_loss`: the group's error minus that of
    its own best rank-d projection), PCA's values, and whether the group is
    *worse off* than under PCA by the rule of ParetoFairPCA's warning
    (:func:`fairpca.pareto._worse_off_limits`): its marginal loss exceeds
    1.5 x its reference, the larger of its PCA loss and 0.1 x the groups' mean
    PCA loss. The reconstruction error is context: the one rule reads the
    marginal loss.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    sensitive_features : array-like of shape (n_samples,)
    projections : dict
        ``{method name: fitted projection}``; those that are not linear
        projections (FairKernelPCA, LinearErasure: no rank-d reconstruction,
        so no marginal loss) are left out.
    reference : str, default="PCA"
        The name of the baseline in ``projections``; without it the PCA
        columns are NaN and no group is judged.

    Returns
    -------
    pandas.DataFrame
        One row per (method, group), groups in sorted order: ``method``,
        ``group`` and :data:`GROUP_OUTCOME_COLUMNS` (``reference_loss`` the
        reference above, ``ratio`` = ``marginal_loss / reference_loss``, so a
        group is worse off when its ratio exceeds 1.5, up to rounding).
    """
    import pandas as pd

    rows = []
    for name, projection in projections.items():
        if not is_linear_projection(projection):
            continue
        errors = group_reconstruction_error(X, sensitive_features, projection)
        losses = marginal_loss(X, sensitive_features, projection)
        rows += [
            {
                "method": name,
                "group": group,
                "reconstruction_error": errors[group],
                "marginal_loss": loss,
            }
            for group, loss in losses.items()
        ]
    frame = pd.DataFrame(rows, columns=["method", "group", "reconstruction_error", "marginal_loss"])
    return judge_against_reference(
        frame, (frame["method"] == reference).to_numpy(), group_scales(X, sensitive_features)
    )


def group_scales(X: ArrayLike, sensitive_features: ArrayLike) -> dict[Any, float]:
    """Mean squared norm of each group's rows around the pooled mean: the scale of rounding.

    :func:`judge_against_reference` allows ``fairpca.pareto._FAIR_RTOL`` times
    it for the rounding of a marginal loss, as ParetoFairPCA's warning does.
    """
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    norms = np.einsum("ij,ij->i", X - X.mean(axis=0), X - X.mean(axis=0))
    scales = np.bincount(codes, weights=norms, minlength=len(groups)) / np.bincount(codes)
    return dict(zip(_labels(groups), scales.tolist(), strict=True))


def judge_against_reference(
    frame: pd.DataFrame, is_reference: ArrayLike, scales: dict[Any, float]
) -> pd.DataFrame:
    """``frame`` with the reference's values per group and the worse-off judgement.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per (method or setting, group) with ``group``,
        ``reconstruction_error`` and ``marginal_loss``.
    is_reference : array-like of bool
        The rows of the reference (PCA), one per group; none: not judged (NaN).
    scales : dict
        :func:`group_scales`, for the rounding allowance.

    Returns
    -------
    pandas.DataFrame
        A copy with :data:`GROUP_OUTCOME_COLUMNS` filled (see :func:`group_outcomes`).
    """
    out = frame.copy()
    reference = frame[np.asarray(is_reference, dtype=bool)]
    if reference.empty or reference["marginal_loss"].isna().any():
        for column in GROUP_OUTCOME_COLUMNS[2:]:
            out[column] = np.nan
        out["worse_off"] = out["worse_off"].astype(object)
        return out
    groups = list(reference["group"])
    pca_loss = reference["marginal_loss"].to_numpy(dtype=float)
    references = _worse_off_limits(pca_loss, 1.0, _WORSE_OFF_FLOOR)
    allowance = _FAIR_RTOL * np.array([scales[g] for g in groups])
    limits = _worse_off_limits(pca_loss, _WORSE_OFF_FACTOR, _WORSE_OFF_FLOOR, allowance)
    at = np.array([groups.index(g) for g in out["group"]], dtype=int)
    loss = out["marginal_loss"].to_numpy(dtype=float)
    out["pca_reconstruction_error"] = reference["reconstruction_error"].to_numpy(float)[at]
    out["pca_marginal_loss"] = pca_loss[at]
    out["reference_loss"] = references[at]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(references[at] > 0, loss / references[at], np.nan)
    out["worse_off"] = np.where(np.isnan(loss), None, loss > limits[at]).astype(object)
    return out


def worse_off_groups(outcomes: pd.DataFrame | None, by: str | list[str] = "method") -> dict:
    """The groups each method (or setting) serves worse than PCA, as one text.

    Parameters
    ----------
    outcomes : pandas.DataFrame or None
        :func:`group_outcomes` (or the trade-off's).
    by : str or list of str, default="method"
        The columns that identify a row of the report.

    Returns
    -------
    dict
        Key -> the worse-off groups' labels joined by ``", "``, or ``"none"``;
        empty when nothing was judged (no PCA). A method that is not a linear
        projection has no key.
    """
    if outcomes is None or outcomes.empty or outcomes["pca_marginal_loss"].isna().all():
        return {}
    result = {}
    for key, rows in outcomes.groupby(by, sort=False):
        if rows["worse_off"].isna().all():
            continue
        worse = rows.loc[rows["worse_off"].eq(True).to_numpy(), "group"]
        result[key] = ", ".join(map(str, worse)) if len(worse) else "none"
    return result
