"""All metrics of several projections in one table (:func:`report`, needs pandas).

The columns are the rows of the metric registry (:mod:`fairpca.metrics._registry`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike

from fairpca._validation import check_data, check_sensitive_features
from fairpca.metrics._classifier import _check_binary_y
from fairpca.metrics._mmd import _check_bandwidth, mmd_bandwidth
from fairpca.metrics._projection import (
    _labels,
    _representation,
    _resolve_projection,
    is_linear_projection,
)
from fairpca.metrics._registry import (
    COLUMNS,
    METRICS,
    Evaluation,
)

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
#: ``(definition, direction, scale)``, read from the metric registry
#: (:data:`fairpca.metrics._registry.METRICS` and ``COLUMNS``). Per-group columns
#: ``name[g]`` share their base name's entry.
METRIC_DEFINITIONS = {
    key: (row.definition, row.direction_text, row.scale)
    for key, row in (*METRICS.items(), *COLUMNS.items())
}


def _row(evaluation, linear, labels):
    """One row of :func:`report`: every registry metric whose needs the evaluation meets.

    A metric that needs the target is left out without one; a metric that
    needs a linear projection is NaN for any other transformer.
    """
    row = {}
    for metric in METRICS.values():
        if "y" in metric.needs and evaluation.y is None:
            continue
        if "linear_projection" in metric.needs and not linear:
            value = dict.fromkeys(labels, np.nan) if metric.per_group else np.nan
        else:
            value = metric.function(evaluation)
        if metric.per_group:
            row.update({f"{metric.name}[{g}]": v for g, v in value.items()})
        else:
            row[metric.name] = value
    return row


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
        evaluation = Evaluation(
            X,
            sensitive_features,
            proj,
            y=y,
            bandwidth=bandwidth,
            random_state=random_state,
            classifier=classifier,
            cv=cv,
            optimal=optimal,
            resolved=resolved.get(name),
            dimension=dims[name],
        )
        rows[name] = _row(evaluation, name in resolved, labels)
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "method"
    return table
