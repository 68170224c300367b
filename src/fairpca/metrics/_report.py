"""All metrics of several projections in one table (:func:`report`, needs pandas)."""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike

from fairpca._validation import check_data, check_sensitive_features
from fairpca.metrics._classifier import _check_binary_y, downstream_fairness, group_separability
from fairpca.metrics._mmd import _check_bandwidth, mmd2, mmd_bandwidth
from fairpca.metrics._projection import (
    _group_means,
    _labels,
    _representation,
    _resolve_projection,
    _row_errors,
    is_linear_projection,
)
from fairpca.metrics._reconstruction import _optimal_group_errors, explained_variance_ratio
from fairpca.pareto import _WORSE_OFF_FACTOR, _WORSE_OFF_FLOOR

if TYPE_CHECKING:
    import pandas as pd
    from sklearn.base import BaseEstimator
    from sklearn.model_selection import BaseCrossValidator, BaseShuffleSplit


def _import_pandas():
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            'fairpca.metrics.report needs pandas; install it with pip install "fairpca[datasets]".'
        ) from exc
    return pd


#: What each column of :func:`report` (and of a comparison table) measures:
#: ``(definition, direction, scale)``. Per-group columns ``name[g]`` share
#: their base name's entry.
METRIC_DEFINITIONS = {
    "n_components": ("target dimension d (columns of the representation)", "", "count"),
    "explained_variance_ratio": (
        "share of the held-out variance the projection keeps",
        "higher keeps more",
        "fraction",
    ),
    "reconstruction_error": (
        "squared distance between a held-out row and its reconstruction (ARE)",
        "lower is better",
        "mean per row, units of X squared",
    ),
    "reconstruction_error_gap": (
        "largest minus smallest group reconstruction error (ABDiff)",
        "lower is fairer",
        "mean per row, units of X squared",
    ),
    "max_marginal_loss": (
        "largest group marginal loss: the group's reconstruction error minus that "
        "of its own best rank-d projection",
        "lower is fairer",
        "mean per row, units of X squared",
    ),
    "max_disparity_error": (
        "largest group disparity error (marginal loss times the group's rows, Kamani et al.)",
        "lower is fairer",
        "sum over the group's rows",
    ),
    "mean_disparity_error": (
        "mean of the groups' disparity errors",
        "lower is fairer",
        "sum over the group's rows",
    ),
    "max_abs_pairwise_disparity_error": (
        "largest difference between two groups' disparity errors",
        "lower is fairer",
        "sum over rows",
    ),
    "mmd2": (
        "largest squared MMD between two groups' representations (RBF kernel, one bandwidth)",
        "lower is fairer",
        "0 for equal distributions",
    ),
    "group_separability": (
        "largest KS distance between two groups' out-of-fold scores of a linear classifier "
        "of the group",
        "lower is fairer",
        "0 (inseparable) to 1",
    ),
    "reconstruction_error[g]": (
        "group g's reconstruction error",
        "lower is better",
        "mean per row",
    ),
    "marginal_loss[g]": ("group g's marginal loss", "lower is better", "mean per row"),
    "disparity_error[g]": ("group g's disparity error", "lower is better", "sum over its rows"),
    "accuracy": (
        "cross-validated accuracy of the downstream classifier of the target",
        "higher is better",
        "fraction",
    ),
    "demographic_parity_difference": (
        "largest gap between groups' rates of positive predictions (ΔDP)",
        "lower is fairer",
        "fraction",
    ),
    "equal_opportunity_difference": (
        "largest gap between groups' true-positive rates",
        "lower is fairer",
        "fraction",
    ),
    "equalized_odds_difference": (
        "largest gap between groups' true- or false-positive rates (ΔEO)",
        "lower is fairer",
        "fraction",
    ),
    "positive_rate": (
        "share of rows the downstream classifier predicts positive (0 or 1: one class only)",
        "",
        "fraction",
    ),
    "converged": ("whether the method's solver met its stopping rule", "", "yes/no"),
    "fit_seconds": ("wall-clock time of the fit", "", "seconds"),
    "flags": ("reasons not to read the row at face value (see the notes)", "", ""),
    "groups_worse_off_than_PCA": (
        "the groups this method serves worse than PCA does, on the held-out rows: a group's "
        f"per-row marginal loss above {_WORSE_OFF_FACTOR:g} x the larger of its PCA loss and "
        f"{_WORSE_OFF_FLOOR:g} x the groups' mean PCA loss (ParetoFairPCA's rule); 'none' "
        "when no group is; empty for a method "
        "that is not a linear projection (FairKernelPCA, LinearErasure: no rank-d "
        "reconstruction, so no marginal loss); per group: group_losses.csv",
        "",
        "",
    ),
}


def metric_family(column: str) -> str:
    """The key of a column in :data:`METRIC_DEFINITIONS`: ``name[g]`` for any ``name[...]``."""
    return column.split("[", 1)[0] + "[g]" if "[" in column else column


def describe_metric(column: str) -> str:
    """One line saying what a report column measures, its direction and scale."""
    definition, direction, scale = METRIC_DEFINITIONS.get(metric_family(column), ("", "", ""))
    extras = "; ".join(part for part in (direction, scale) if part)
    return f"{column}: {definition}" + (f" ({extras})" if extras else "")


_RECONSTRUCTION_COLUMNS = (
    "explained_variance_ratio",
    "reconstruction_error",
    "reconstruction_error_gap",
    "max_marginal_loss",
    "max_disparity_error",
    "mean_disparity_error",
    "max_abs_pairwise_disparity_error",
)


def _reconstruction_columns(X, codes, labels, projection, resolved, optimal):
    """The reconstruction-based columns of one linear projection.

    ``optimal`` caches the groups' own optimal errors by ``(d, centre)``;
    the per-group columns come back under the key ``"_per_group"``.
    """
    components, scales, mean, d = resolved
    row_err = _row_errors(X, components, scales, mean)
    group_err, counts = _group_means(row_err, codes, len(labels))
    key = (d, mean.tobytes())
    if key not in optimal:
        optimal[key] = _optimal_group_errors(X, codes, len(labels), mean, d)
    loss_values = group_err - optimal[key]
    group_err = dict(zip(labels, group_err.tolist(), strict=True))
    losses = dict(zip(labels, loss_values.tolist(), strict=True))
    disp = dict(zip(labels, (loss_values * counts).tolist(), strict=True))
    pairs = [disp[a] - disp[b] for a, b in combinations(labels, 2)]
    per_group = {}
    for prefix, values in (
        ("reconstruction_error", group_err),
        ("marginal_loss", losses),
        ("disparity_error", disp),
    ):
        per_group.update({f"{prefix}[{g}]": v for g, v in values.items()})
    return {
        "explained_variance_ratio": explained_variance_ratio(X, projection),
        "reconstruction_error": float(row_err.mean()),
        "reconstruction_error_gap": max(group_err.values()) - min(group_err.values()),
        "max_marginal_loss": max(losses.values()),
        "max_disparity_error": max(disp.values()),
        "mean_disparity_error": float(np.mean(list(disp.values()))),
        "max_abs_pairwise_disparity_error": max(abs(v) for v in pairs),
        "_per_group": per_group,
    }


def report(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    projections: dict[str, BaseEstimator | ArrayLike],
    y: ArrayLike | None = None,
    *,
    bandwidth: float | None = None,
    random_state: int | None = None,
    classifier: Literal["rbf_svm", "linear_svm"] | BaseEstimator = "rbf_svm",
    cv: int | BaseCrossValidator | BaseShuffleSplit = 5,
) -> pd.DataFrame:
    """All metrics for several projections in one table.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data (typically a held-out split).
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projections : dict
        ``{method name: projection}``; each projection as in
        :func:`group_reconstruction_error`.
    y : array-like of shape (n_samples,), default=None
        Binary target; when given, the :func:`downstream_fairness` columns are
        added (needs fairlearn).
    bandwidth : float, default=None
        RBF bandwidth shared by every row so that MMD² values are comparable;
        by default computed once with :func:`mmd_bandwidth` on ``X`` at the
        first projection's target dimension.
    random_state : int or None, default=None
        Seed of the bandwidth subsample, the cross-validation folds and
        ``LinearSVC``.
    classifier : str or estimator, default="rbf_svm"
        Downstream classifier, see :func:`downstream_fairness`.
    cv : int or splitter, default=5
        Folds for :func:`downstream_fairness` and :func:`group_separability`.

    Returns
    -------
    table : pandas.DataFrame
        One row per method (index = name). Columns: ``n_components``,
        ``explained_variance_ratio``, ``reconstruction_error`` (ARE),
        ``reconstruction_error_gap`` (ABDiff), ``max_marginal_loss``,
        ``max_disparity_error``, ``mean_disparity_error``,
        ``max_abs_pairwise_disparity_error``, ``mmd2``, ``group_separability``,
        per-group ``reconstruction_error[g]``, ``marginal_loss[g]`` and
        ``disparity_error[g]``, and with ``y`` ``accuracy``,
        ``demographic_parity_difference``, ``equal_opportunity_difference``,
        ``equalized_odds_difference``. For a transformer that is not a linear
        projection of ``X`` (FairKernelPCA, LinearErasure) the reconstruction
        columns (from ``explained_variance_ratio`` to the per-group
        ``disparity_error[g]``) are NaN: there is no rank-``d`` reconstruction
        to measure; ``n_components`` is its number of output columns.
    """
    pd = _import_pandas()
    if not isinstance(projections, dict) or not projections:
        raise TypeError(
            "projections must be a non-empty dict {method name: projection}, got "
            f"{type(projections).__name__}."
        )
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    labels = _labels(groups)
    resolved, dims = {}, {}
    for name, proj in projections.items():
        label = f"projections[{name!r}]"
        if is_linear_projection(proj):
            resolved[name] = _resolve_projection(proj, X, name=label)
            dims[name] = resolved[name][3]
        else:
            dims[name] = _representation(proj, X, name=label)[1]
    if y is not None:
        _check_binary_y(y, X.shape[0], None)
    if bandwidth is None:
        first_d = next(iter(r[3] for r in resolved.values()), min(*dims.values(), X.shape[1]))
        bandwidth = mmd_bandwidth(X, first_d, random_state=random_state)
    bandwidth = _check_bandwidth(bandwidth)

    # The groups' own optimal errors depend only on the centre and d, which
    # projections fitted on the same data share: compute each once.
    optimal = {}
    rows = {}
    for name, proj in projections.items():
        row = {"n_components": dims[name]}
        if name in resolved:
            row.update(_reconstruction_columns(X, codes, labels, proj, resolved[name], optimal))
        else:
            row.update(dict.fromkeys(_RECONSTRUCTION_COLUMNS, np.nan))
        row.update(
            {
                "mmd2": mmd2(X, sensitive_features, proj, bandwidth=bandwidth),
                "group_separability": group_separability(
                    X, sensitive_features, proj, cv=cv, random_state=random_state
                ),
            }
        )
        if name in resolved:
            row.update(row.pop("_per_group"))
        else:
            for prefix in ("reconstruction_error", "marginal_loss", "disparity_error"):
                row.update({f"{prefix}[{g}]": np.nan for g in labels})
        if y is not None:
            row.update(
                downstream_fairness(
                    X,
                    y,
                    sensitive_features,
                    proj,
                    classifier=classifier,
                    cv=cv,
                    random_state=random_state,
                )
            )
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "method"
    return table
