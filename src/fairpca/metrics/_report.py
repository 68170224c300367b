"""All metrics of several projections in one table (:func:`report`, needs pandas)."""

from itertools import combinations

import numpy as np

from fairpca._validation import check_data, check_sensitive_features
from fairpca.metrics._classifier import _check_binary_y, downstream_fairness, group_separability
from fairpca.metrics._mmd import _check_bandwidth, mmd2, mmd_bandwidth
from fairpca.metrics._projection import _group_means, _labels, _resolve_projection, _row_errors
from fairpca.metrics._reconstruction import _optimal_group_errors, explained_variance_ratio


def _import_pandas():
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            'fairpca.metrics.report needs pandas; install it with pip install "fairpca[datasets]".'
        ) from exc
    return pd


def report(
    X,
    sensitive_features,
    projections,
    y=None,
    *,
    bandwidth=None,
    random_state=None,
    classifier="rbf_svm",
    cv=5,
):
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
        ``equalized_odds_difference``.
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
    resolved = {}
    for name, proj in projections.items():
        resolved[name] = _resolve_projection(proj, X, name=f"projections[{name!r}]")
    if y is not None:
        _check_binary_y(y, X.shape[0], None)
    if bandwidth is None:
        first_d = next(iter(resolved.values()))[3]
        bandwidth = mmd_bandwidth(X, first_d, random_state=random_state)
    bandwidth = _check_bandwidth(bandwidth)

    # The groups' own optimal errors depend only on the centre and d, which
    # projections fitted on the same data share: compute each once.
    optimal = {}
    rows = {}
    for name, proj in projections.items():
        components, scales, mean, d = resolved[name]
        row_err = _row_errors(X, components, scales, mean)
        group_err, counts = _group_means(row_err, codes, len(groups))
        key = (d, mean.tobytes())
        if key not in optimal:
            optimal[key] = _optimal_group_errors(X, codes, len(groups), mean, d)
        loss_values = group_err - optimal[key]
        group_err = dict(zip(labels, group_err.tolist(), strict=True))
        losses = dict(zip(labels, loss_values.tolist(), strict=True))
        disp = dict(zip(labels, (loss_values * counts).tolist(), strict=True))
        pairs = [disp[a] - disp[b] for a, b in combinations(labels, 2)]
        row = {
            "n_components": d,
            "explained_variance_ratio": explained_variance_ratio(X, proj),
            "reconstruction_error": float(row_err.mean()),
            "reconstruction_error_gap": max(group_err.values()) - min(group_err.values()),
            "max_marginal_loss": max(losses.values()),
            "max_disparity_error": max(disp.values()),
            "mean_disparity_error": float(np.mean(list(disp.values()))),
            "max_abs_pairwise_disparity_error": max(abs(v) for v in pairs),
            "mmd2": mmd2(X, sensitive_features, proj, bandwidth=bandwidth),
            "group_separability": group_separability(
                X, sensitive_features, proj, cv=cv, random_state=random_state
            ),
        }
        for g, v in group_err.items():
            row[f"reconstruction_error[{g}]"] = v
        for g, v in losses.items():
            row[f"marginal_loss[{g}]"] = v
        for g, v in disp.items():
            row[f"disparity_error[{g}]"] = v
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
