"""Choose a fair representation: trade-off curves with bootstrap intervals, and selection.

Every fair method has a knob that trades retained variance for fairness
(mean matching's ``mean_penalty``, MMD's ``tau``, RFPCA's ``lam``, FPCA's
``delta``, Pareto's ``disparity_ratio``). :func:`tradeoff_curve` fits each
method over a grid of its knob on a training part, evaluates every setting on
held-out rows and attaches bootstrap intervals (the held-out rows resampled
within each group, the fitted projections fixed), and marks the
non-dominated settings: those for which no other setting keeps at least as
much variance with every fairness metric at least as low, and is strictly
better somewhere. :func:`select` then returns the best-variance setting that
meets fairness limits, optionally with the interval's upper end below the
limit, as a configured, unfitted estimator.

The bootstrap measures the sampling noise of the evaluation rows, not the
variability of the fit itself: each setting is fitted once. The resamples are
*paired*: one draw of row indices per resample, the same for every setting of
a curve, so two settings with the same projection get the same interval and
differences between settings are measured on the same rows. The interval is
the symmetric (basic) bootstrap interval ``estimate ± c``, ``c`` the
``confidence`` quantile of ``|resampled value - estimate|``: centred on the
estimate, it always contains it (a percentile interval of a gap taken in
absolute value need not: the absolute value biases the resamples upwards).
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist

import fairpca._reports as _reports
from fairpca._curve import _GROUP_COLUMNS, QUALITY, frontier_mask, group_outcomes
from fairpca._fitting import as_input_for, failure_reason, fit_methods, takes_groups
from fairpca._group_outcomes import WORSE_OFF_COLUMN, group_scales, worse_off_groups
from fairpca._methods import make_methods
from fairpca._validation import (
    check_data,
    check_n_components,
    check_number,
    check_sensitive_features,
)
from fairpca._warnings import warn
from fairpca.datasets._split import make_split
from fairpca.metrics import group_reconstruction_error, marginal_loss, mmd_bandwidth
from fairpca.metrics._classifier import (
    _check_binary_y,
    downstream_baselines,
    held_out_predictions,
    resampled_prediction_gaps,
)
from fairpca.metrics._mmd import _check_bandwidth
from fairpca.metrics._projection import (
    _project,
    _representation,
    _resolve_projection,
    _row_errors,
    is_linear_projection,
)
from fairpca.metrics._registry import METRICS, Evaluation, bootstrap_metrics_names, row_flags

if TYPE_CHECKING:
    import pandas as pd
    from sklearn.base import BaseEstimator

    from fairpca._split import Split

__all__ = [
    "DEFAULT_GRIDS",
    "FAIRNESS_METRICS",
    "IndistinguishableFromPCAWarning",
    "bootstrap_metrics",
    "frontier_mask",
    "select",
    "tradeoff_curve",
    "tradeoff_curve_split",
    "write_report",
]

#: The knob of each method swept by default, from least to most constrained
#: (PCA, MinMaxLossFairPCA and settings not listed are fitted once).
DEFAULT_GRIDS = {
    "MeanMatchingFairPCA": {"mean_penalty": [0.0, 0.3, 1.0, 3.0, 10.0, np.inf]},
    "MMDFairPCA": {"tau": [1e-2, 1e-3, 1e-4, 1e-5]},
    "RobustFairPCA": {"lam": [0.0, 0.5, 2.0, 8.0]},
    "ConvexFairPCA": {"delta": [1.0, 0.3, 0.1, 0.0]},
    "ParetoFairPCA": {"disparity_ratio": [1.0, 0.5, 0.2, 0.1]},
    # Covariance-difference directions removed besides the mean differences; a rank
    # that leaves fewer than n_components features is recorded as infeasible.
    "StreamingFairPCA": {"unfair_rank": [0, 1, 2, 4, 8]},
}

#: Fairness metrics (lower is fairer) :func:`tradeoff_curve` evaluates: the rows of
#: the metric registry marked ``bootstrap`` (:mod:`fairpca.metrics._registry`). Those
#: that need a binary target (the downstream ones) score a classifier trained on the
#: training representation on the held-out rows.
FAIRNESS_METRICS = bootstrap_metrics_names()


def _needing(metrics, need):
    """The metrics among ``metrics`` whose registry row needs ``need``."""
    return [m for m in metrics if need in METRICS[m].needs]


def _check_metrics(metrics):
    """Refuse names that are not bootstrap metrics of the registry (read at call time)."""
    valid = bootstrap_metrics_names()
    unknown = [m for m in metrics if m not in valid]
    if unknown or not metrics:
        raise ValueError(f"metrics must name at least one of {list(valid)}; unknown: {unknown}.")


def _stratified_resamples(codes, n_bootstrap, rng):
    """Row indices of bootstrap resamples drawn with replacement within each group.

    The draw depends only on ``codes``, ``n_bootstrap`` and ``rng``: the same seed
    gives every setting of a curve the same resamples (paired).
    """
    members = [np.flatnonzero(codes == a) for a in range(codes.max() + 1)]
    for _ in range(n_bootstrap):
        yield np.concatenate([rng.choice(rows, size=len(rows)) for rows in members])


def _symmetric_interval(estimate, draws, confidence):
    """``estimate ± c``, ``c`` the ``confidence`` quantile of ``|draw - estimate|``.

    Contains ``estimate`` by construction. The metrics are non-negative (gaps,
    MMD², shares), so the lower end is clipped at 0 when the estimate is; the
    share of variance is at most 1.
    """
    draws = np.asarray(draws, dtype=float)
    if not np.isfinite(estimate) or not np.isfinite(draws).any():
        return estimate, np.nan, np.nan
    half = float(np.nanquantile(np.abs(draws - estimate), confidence))
    low, high = estimate - half, estimate + half
    if estimate >= 0:
        low = max(low, 0.0)
    return estimate, low, high


def _evaluate(projection, X, s, names, bandwidth, y=None, predicted=None):
    """The registry's metrics ``names`` of one fitted projection on rows ``X``."""
    evaluation = Evaluation(X, s, projection, y=y, predicted=predicted, bandwidth=bandwidth)
    return {name: METRICS[name].function(evaluation) for name in names}


#: Entries of the resamples' count matrix (resamples x rows) held at once.
_COUNT_ENTRIES = 2**22

#: Rows per side of a block of the kernel matrix (:func:`_resampled_mmd2`).
_KERNEL_BLOCK = 1024

#: The downstream gaps :func:`resampled_prediction_gaps` computes on every resample at once.
_RESAMPLED_GAPS = (
    "demographic_parity_difference",
    "equal_opportunity_difference",
    "equalized_odds_difference",
)


def _resample_counts(rows, n_samples):
    """``(R, n)`` matrix: how many times each resample (a row of ``rows``) takes each row."""
    n_resamples = rows.shape[0]
    flat = (np.arange(n_resamples)[:, None] * n_samples + rows).ravel()
    return np.bincount(flat, minlength=n_resamples * n_samples).reshape(n_resamples, -1)


def _onehot(codes):
    onehot = np.zeros((len(codes), int(codes.max()) + 1))
    onehot[np.arange(len(codes)), codes] = 1.0
    return onehot


def _resampled_mmd2(Z, codes, counts, bandwidth):
    """:func:`fairpca.metrics.mmd2` (exact) of the representations ``Z`` on every resample.

    The biased MMD² of groups ``a`` and ``b`` is ``G_aa + G_bb - 2 G_ab`` with
    ``G_ab = sum_{i in a, j in b} c_i c_j k(z_i, z_j) / (n_a n_b)`` (``c`` the
    resample's counts of the rows): one kernel matrix, evaluated once in
    blocks, serves every resample through matrix products.
    """
    block = _KERNEL_BLOCK
    onehot = _onehot(codes)
    sizes = counts @ onehot
    gamma = 0.5 / bandwidth**2
    n_resamples, n = counts.shape
    n_groups = onehot.shape[1]
    gram = np.zeros((n_resamples, n_groups, n_groups))
    for i0 in range(0, n, block):
        rows_i = slice(i0, min(i0 + block, n))
        for j0 in range(i0, n, block):
            rows_j = slice(j0, min(j0 + block, n))
            K = cdist(Z[rows_i], Z[rows_j], "sqeuclidean")
            K *= -gamma
            np.exp(K, out=K)
            paired = counts[:, rows_j]
            for a in range(n_groups):
                weighted = (counts[:, rows_i] * onehot[rows_i, a]) @ K
                sums = (weighted * paired) @ onehot[rows_j]  # pairs i in a (block i), j in b
                gram[:, a, :] += sums
                if j0 != i0:  # the mirrored block: i in b (block j), j in a (block i)
                    gram[:, :, a] += sums
    gram /= sizes[:, :, None] * sizes[:, None, :]
    first, second = np.triu_indices(n_groups, k=1)
    pairwise = gram[:, first, first] + gram[:, second, second] - 2.0 * gram[:, first, second]
    return np.maximum(pairwise, 0.0).max(axis=1)


def _resampled_metrics(projection, X, codes, names, bandwidth, y, predicted):
    """Those of ``names`` computed on many resamples at once, as a function of their counts.

    Returns ``(function, computed names)``; ``function(counts)`` gives ``{name:
    values of shape (R,)}``. A linear projection with its own mean (a fitted
    estimator: the rows' transformation does not depend on the resample) has
    its explained variance ratio and reconstruction-error gap computed from
    count-weighted sums of per-row values; the MMD² from one kernel matrix; the
    downstream gaps from count-weighted group rates. The others (e.g. the
    marginal loss, one eigendecomposition per group and resample) are left to
    the registry's functions on each resample.
    """
    fixed_mean = is_linear_projection(projection) and hasattr(projection, "mean_")
    parts = {}
    if fixed_mean and QUALITY in names:
        components, scales, mean, _ = _resolve_projection(projection, X)
        Z = _project(X, components, np.ones_like(scales), mean)
        kept, total = (Z**2) @ scales, np.einsum("ij,ij->i", X - mean, X - mean)

        def ratio(counts):
            totals = counts @ total
            if np.any(totals == 0):
                raise ValueError("X has zero variance around the projection's mean.")
            return (counts @ kept) / totals

        parts[QUALITY] = ratio
    if fixed_mean and "reconstruction_error_gap" in names:
        errors = _row_errors(X, *_resolve_projection(projection, X)[:3])
        onehot = _onehot(codes)

        def gap(counts):
            means = (counts @ (onehot * errors[:, None])) / (counts @ onehot)
            return means.max(axis=1) - means.min(axis=1)

        parts["reconstruction_error_gap"] = gap
    if "mmd2" in names and bandwidth is not None:
        Z = _representation(projection, X)[0]
        width = _check_bandwidth(bandwidth)
        parts["mmd2"] = lambda counts: _resampled_mmd2(Z, codes, counts, width)
    downstream = [name for name in _RESAMPLED_GAPS if name in names]
    if downstream and y is not None and predicted is not None:

        def gaps(counts):
            values = resampled_prediction_gaps(y, predicted, codes, counts)
            return {name: values[name] for name in downstream}

    def function(counts):
        counts = counts.astype(float)
        values = {name: part(counts) for name, part in parts.items()}
        if downstream and y is not None and predicted is not None:
            values.update(gaps(counts))
        return values

    computed = [*parts, *(downstream if y is not None and predicted is not None else [])]
    return function, computed


def bootstrap_metrics(
    projection: BaseEstimator | ArrayLike,
    X: ArrayLike,
    sensitive_features: ArrayLike,
    metrics: Sequence[str] = ("reconstruction_error_gap",),
    *,
    y: ArrayLike | None = None,
    predicted: ArrayLike | None = None,
    bandwidth: float | None = None,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    random_state: int | np.random.SeedSequence | np.random.Generator | None = None,
) -> dict[str, tuple[float, float, float]]:
    """Metrics of a fitted projection on rows ``X`` with symmetric bootstrap intervals.

    The rows are resampled with replacement within each group (so every
    resample keeps the group sizes) ``n_bootstrap`` times; the projection is
    not refitted. The resamples depend only on the groups and ``random_state``:
    two projections evaluated with the same seed are scored on the same
    resamples (paired), and the same projection gets the same interval.

    The interval is the symmetric basic bootstrap interval
    ``estimate ± c``, where ``c`` is the ``confidence`` quantile of the
    distances ``|resampled value - estimate|`` (clipped at 0 below for a
    non-negative estimate). It is centred on the estimate, so it always
    contains it; the percentile interval it replaces did not for gaps taken
    in absolute value, whose resamples are biased upwards (a gap of 0.063
    with the interval [0.10, 6.7]).

    Parameters
    ----------
    projection : fitted estimator or components array
        As in :mod:`fairpca.metrics`.
    X : ndarray of shape (n_samples, n_features)
        Evaluation rows (held out from the fit).
    sensitive_features : ndarray of shape (n_samples,)
        Their groups.
    metrics : sequence of str, default=("reconstruction_error_gap",)
        Names from :data:`FAIRNESS_METRICS`; ``explained_variance_ratio`` is
        always included.
    y, predicted : ndarray of shape (n_samples,), default=None
        Binary target and a classifier's predictions on these rows, for the
        downstream metrics.
    bandwidth : float, default=None
        RBF bandwidth of ``mmd2`` (required for it, so that every resample
        uses the same kernel).
    n_bootstrap : int, default=200
    confidence : float, default=0.95
    random_state : int, SeedSequence, Generator or None, default=None
        Seed of the resamples; pass the same int or SeedSequence to pair the
        resamples of several projections.

    Returns
    -------
    values : dict
        ``{name: (estimate, low, high)}`` for ``explained_variance_ratio`` and
        every metric; the estimate is the value on ``X`` itself.
    """
    valid = bootstrap_metrics_names()
    unknown = [m for m in metrics if m not in valid]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; choose from {list(valid)}.")
    if _needing(metrics, "y") and (y is None or predicted is None):
        raise ValueError("downstream metrics need y and a classifier's predictions.")
    for name in _needing(metrics, "bandwidth"):
        if bandwidth is None:
            raise ValueError(f"{name} needs a bandwidth shared by every resample.")
    check_number(n_bootstrap, "n_bootstrap", minimum=1)
    confidence = check_number(
        confidence,
        "confidence",
        numbers.Real,
        minimum=0.0,
        maximum=1.0,
        include_boundaries="neither",
    )
    X = check_data(X, "X")
    s = np.asarray(sensitive_features)
    codes = check_sensitive_features(s, X.shape[0], min_groups=2)[1]
    y = None if y is None else np.asarray(y)
    predicted = None if predicted is None else np.asarray(predicted)
    names = (QUALITY, *metrics)
    estimate = _evaluate(projection, X, s, names, bandwidth, y, predicted)
    rng = np.random.default_rng(random_state)
    draws = {name: [] for name in estimate}
    # Most metrics are computed on every resample at once from the resamples' counts of
    # the rows; the others by their registry function on each resample's rows.
    resampled, computed = _resampled_metrics(projection, X, codes, names, bandwidth, y, predicted)
    looped = [name for name in names if name not in computed]
    resamples = _stratified_resamples(codes, n_bootstrap, rng)
    per_chunk = max(1, _COUNT_ENTRIES // X.shape[0])
    while chunk := list(itertools.islice(resamples, per_chunk)):
        if computed:
            for name, values in resampled(_resample_counts(np.stack(chunk), X.shape[0])).items():
                draws[name].extend(values.tolist())
        for rows in chunk if looped else ():
            sample = _evaluate(
                projection,
                X[rows],
                s[rows],
                looped,
                bandwidth,
                None if y is None else y[rows],
                None if predicted is None else predicted[rows],
            )
            for name, value in sample.items():
                draws[name].append(value)
    return {
        name: _symmetric_interval(value, draws[name], confidence)
        for name, value in estimate.items()
    }


def _settings(estimators, param_grids):
    """``(method, setting label, configured estimator)`` for every grid point."""
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    settings = []
    for name, estimator in estimators.items():
        grid = param_grids.get(name, DEFAULT_GRIDS.get(type(estimator).__name__, {}))
        for params in ParameterGrid(grid):
            label = ", ".join(
                f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
            )
            settings.append((name, label, clone(estimator).set_params(**params)))
    return settings


def _fit_and_evaluate(method, label, estimator, split, metrics, bandwidth, options, seed):
    """One row of the curve: fit on the training part, bootstrap on the test part."""
    from sklearn.base import clone

    row = {"method": method, "setting": label, "estimator": estimator}
    # A setting that raises (infeasible, a solver failure, memory) is a row with its reason.
    outcome = fit_methods({method: clone(estimator)}, split)[method]
    row["fit_seconds"], row["fit_cpu_seconds"] = outcome.seconds, outcome.cpu_seconds
    if outcome.status != "fitted":
        row["error"] = outcome.reason
        return row
    fitted = outcome.estimator
    row["converged"] = bool(getattr(fitted, "converged_", True))
    if not is_linear_projection(fitted):
        raise TypeError(
            f"{method} is not a linear projection (no components_ and mean_): the trade-off "
            "curve measures retained variance, which needs one."
        )
    # The flags that need the fitted estimator; the others are set on the whole curve.
    row["flags"] = " ".join(row_flags({}, estimator=fitted))
    try:
        values, row["positive_rate"] = _held_out_values(
            fitted, split, metrics, bandwidth, options, seed
        )
        per_group = _held_out_groups(fitted, split)
    except Exception as exc:  # noqa: BLE001 - one setting's failure never ends the curve
        row["error"] = failure_reason(exc)
        return row
    for name, (value, low, high) in values.items():
        row[name], row[f"{name}_low"], row[f"{name}_high"] = value, low, high
    row.update(per_group)
    return row


def _held_out_groups(fitted, split):
    """Per-row reconstruction error and marginal loss of each group on the test part."""
    values = {}
    metrics = (group_reconstruction_error, marginal_loss)
    for prefix, metric in zip(_GROUP_COLUMNS, metrics, strict=True):
        values.update(
            {f"{prefix}[{g}]": v for g, v in metric(split.X_test, split.s_test, fitted).items()}
        )
    return values


def _held_out_values(fitted, split, metrics, bandwidth, options, seed):
    """Bootstrap values of ``metrics`` on the test part (downstream: a classifier's).

    Also returns the classifier's held-out positive rate (NaN without one).
    """
    predicted = None
    if _needing(metrics, "y"):
        predicted = held_out_predictions(
            fitted,
            as_input_for(fitted, split.X_train),
            split.y_train,
            split.X_test,
            options["classifier"],
        )
    values = bootstrap_metrics(
        fitted,
        split.X_test,
        split.s_test,
        metrics,
        y=split.y_test,
        predicted=predicted,
        bandwidth=bandwidth,
        n_bootstrap=options["n_bootstrap"],
        confidence=options["confidence"],
        random_state=seed,
    )
    return values, np.nan if predicted is None else float(np.mean(predicted))


def _curve_flags(curve):
    """Each setting's flags (the metric registry's), against the curve's PCA row if any."""
    if "flags" not in curve:
        curve["flags"] = ""
    blind = [
        i
        for i, est in curve["estimator"].items()
        if not takes_groups(est) and _notna(curve.loc[i, QUALITY])
    ]
    reference = curve.loc[blind[0]] if blind else None
    flags = []
    for i, row in curve.iterrows():
        own = str(row["flags"]).split() if isinstance(row["flags"], str) else []
        found = row_flags(row, None if i in blind[:1] else reference)
        flags.append(" ".join(dict.fromkeys([*found[:1], *own, *found[1:]])))
    return flags


def _notna(value):
    """Whether ``value`` is a number that is not NaN."""
    try:
        return not np.isnan(float(value))
    except (TypeError, ValueError):
        return False


def tradeoff_curve_split(
    split: Split,
    *,
    estimators: dict[str, BaseEstimator] | None = None,
    param_grids: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
    metrics: Sequence[str] = ("reconstruction_error_gap", "mmd2"),
    n_components: int = 2,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    classifier: BaseEstimator | None = None,
    random_state: int = 0,
    n_jobs: int | None = None,
    progress: Callable[[str], object] | None = None,
) -> pd.DataFrame:
    """The fairness-variance trade-off of every method and setting on a prepared split.

    See :func:`tradeoff_curve`, which splits the data first; this takes a
    :class:`fairpca.experiments.Split` (e.g. a paper's protocol).

    Returns
    -------
    curve : pandas.DataFrame
        One row per setting: ``method``, ``setting`` (the swept parameters),
        ``estimator`` (configured, unfitted), ``explained_variance_ratio`` and
        every metric with ``_low`` and ``_high`` interval ends, ``fit_seconds`` and
        ``fit_cpu_seconds`` (wall-clock and CPU time of the fit),
        ``converged``, ``error`` (why a setting could not be fitted, else NaN),
        ``positive_rate`` (the downstream classifier's held-out share of
        positive predictions; NaN without a downstream metric), ``flags`` (the
        metric registry's: ``near-single-class`` below 2 % or above 98 %,
        ``undetermined`` for an estimator whose ``ambiguous_`` is True,
        ``low-variance`` below 0.5 x the PCA row's explained variance ratio),
        the held-out per-row ``reconstruction_error[g]`` and ``marginal_loss[g]``
        of every group ``g``, ``on_frontier`` and ``groups_worse_off_than_PCA``
        (the groups the setting serves worse than PCA, or ``"none"``:
        :func:`group_outcomes`). ``curve.attrs`` records the metrics,
        confidence, number of resamples, d, seed, split description, the
        groups and their scales (``group_scales``, for the rounding allowance).
    """
    import pandas as pd
    from joblib import Parallel, delayed
    from sklearn.linear_model import LogisticRegression

    metrics = list(metrics)
    _check_metrics(metrics)
    if split.y_train is None and _needing(metrics, "y"):
        raise ValueError(f"metrics {_needing(metrics, 'y')} need a binary target y.")
    check_n_components(n_components, split.X_train.shape[1])
    check_number(n_bootstrap, "n_bootstrap", minimum=1)
    if split.y_train is not None:
        # Downstream rates are means of 0/1 predictions.
        split = dataclasses.replace(
            split,
            y_train=_check_binary_y(split.y_train, len(split.y_train), None),
            y_test=_check_binary_y(split.y_test, len(split.y_test), None),
        )
    if estimators is None:
        estimators = make_methods(n_components, random_state, projections_only=True)
    if not isinstance(estimators, dict) or not estimators:
        raise TypeError("estimators must be a non-empty dict {name: unfitted estimator}.")
    param_grids = {} if param_grids is None else dict(param_grids)
    unknown = sorted(set(param_grids) - set(estimators))
    if unknown:
        raise ValueError(f"param_grids names {unknown}, which are not in estimators.")
    settings = _settings(estimators, param_grids)
    bandwidth = mmd_bandwidth(split.X_train, n_components, random_state=random_state)
    options = {
        "n_bootstrap": n_bootstrap,
        "confidence": confidence,
        "classifier": LogisticRegression(max_iter=1000) if classifier is None else classifier,
    }
    # Paired resamples: every setting draws the same row indices from one seed.
    seed = np.random.SeedSequence(random_state).spawn(1)[0]
    tasks = (
        delayed(_fit_and_evaluate)(*setting, split, metrics, bandwidth, options, seed)
        for setting in settings
    )
    rows = []
    for i, row in enumerate(Parallel(n_jobs=n_jobs, return_as="generator")(tasks), start=1):
        rows.append(row)
        if progress is not None:
            done = (
                f"FAILED ({row['error']})"
                if "error" in row
                else f"done in {row['fit_seconds']:.2f} s ({row['fit_cpu_seconds']:.2f} s CPU)"
            )
            progress(f"[{i}/{len(settings)}] {row['method']} {row['setting']} {done}".strip())
    curve = pd.DataFrame(rows)
    for column in ("error", "fit_seconds", "fit_cpu_seconds", "converged", "positive_rate"):
        if column not in curve:
            curve[column] = np.nan
    curve["flags"] = _curve_flags(curve)
    curve["on_frontier"] = frontier_mask(
        curve[QUALITY].to_numpy(dtype=float), curve[metrics].to_numpy(dtype=float)
    )
    scales = group_scales(split.X_test, split.s_test)
    curve.attrs.update(
        metrics=metrics,
        confidence=confidence,
        n_bootstrap=n_bootstrap,
        n_components=n_components,
        random_state=random_state,
        split=split.description,
        groups=list(scales),
        group_scales=list(scales.values()),
    )
    worse = worse_off_groups(group_outcomes(curve), by=["method", "setting"])
    curve[WORSE_OFF_COLUMN] = [
        worse.get((m, s), "") for m, s in zip(curve["method"], curve["setting"], strict=True)
    ]
    curve.attrs["baselines"] = _downstream_baselines(split, metrics, options, random_state)
    return curve


def _downstream_baselines(split, metrics, options, random_state):
    """The downstream metrics' reference rows on the held-out rows, or None.

    :func:`fairpca.metrics._classifier.downstream_baselines` (majority class,
    the curve's classifier on all features; out-of-fold predictions, 5
    stratified folds seeded by ``random_state``) on the test part. A table
    ``{name: {metric: value}}``, never a setting: not on the frontier and
    never chosen by :func:`select`.
    """
    if split.y_test is None or not _needing(metrics, "y"):
        return None
    try:
        found = downstream_baselines(
            split.X_test,
            split.y_test,
            split.s_test,
            classifier=options["classifier"],
            random_state=random_state,
        )
    except Exception:  # noqa: BLE001 - a reference row never ends the curve
        return None
    return {name: {k: float(v) for k, v in values.items()} for name, values in found.items()}


def tradeoff_curve(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    y: ArrayLike | None = None,
    *,
    test_size: float = 0.3,
    random_state: int = 0,
    **options: Any,
) -> pd.DataFrame:
    """The fairness-variance trade-off of every method over a grid of its knob.

    The rows are split (stratified by group, ``test_size`` held out) and
    standardised with training statistics, as :func:`fairpca.compare_methods`
    does. Each method of ``estimators`` is fitted on the training part at every
    point of its grid; each fit is evaluated on the held-out part: the share
    of variance it keeps (``explained_variance_ratio``) and the ``metrics``
    (lower is fairer), each with a symmetric bootstrap interval over
    resamples of the held-out rows within each group, the same resamples for
    every setting (:func:`bootstrap_metrics`). ``on_frontier`` marks the settings no other
    setting dominates (:func:`frontier_mask`, on the estimates).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    sensitive_features : array-like of shape (n_samples,)
    y : array-like of shape (n_samples,), default=None
        Binary target: needed by the downstream metrics.
    test_size : float, default=0.3
    random_state : int, default=0
        Seed of the split, of the randomised methods, of the bandwidth
        subsample and of the resamples.
    estimators : dict of str to estimator, default=None
        Unfitted linear projections to sweep; default: PCA and every
        fair-PCA estimator (:func:`fairpca.compare.make_methods`).
    param_grids : dict of str to dict, default=None
        Grid (as :class:`sklearn.model_selection.ParameterGrid`) per name of
        ``estimators``; default: :data:`DEFAULT_GRIDS` by class name, a single
        setting otherwise.
    metrics : sequence of str, default=("reconstruction_error_gap", "mmd2")
        From :data:`FAIRNESS_METRICS`.
    n_components : int, default=2
    n_bootstrap : int, default=200
    confidence : float, default=0.95
    classifier : estimator, default=None
        Downstream classifier trained on the training representation
        (default ``LogisticRegression(max_iter=1000)``).
    n_jobs : int, default=None
        Settings fitted in parallel (joblib).
    progress : callable, default=None
        Called with one line per finished setting.

    Returns
    -------
    curve : pandas.DataFrame
        See :func:`tradeoff_curve_split`.
    """
    split = make_split(X, sensitive_features, y, test_size=test_size, random_state=random_state)
    return tradeoff_curve_split(split, random_state=random_state, **options)


def _fairness_key(row, metrics):
    """The constrained metrics' estimates, to 10 significant digits (rounding is a tie)."""
    return tuple(float(f"{float(row[m]):.10g}") for m in metrics)


def _indistinguishable_from_pca(curve, chosen, metrics):
    """Whether the chosen row's intervals overlap the PCA row's on every metric in ``metrics``.

    The PCA row is the curve's first group-blind setting (:func:`takes_groups`);
    False when the curve has none or lacks the interval columns.
    """
    blind = [i for i, est in curve["estimator"].items() if not takes_groups(est)]
    columns = [c for m in metrics for c in (f"{m}_low", f"{m}_high")]
    if not blind or any(c not in curve for c in columns):
        return False
    pca = curve.loc[blind[0]]
    if chosen == blind[0]:
        return True
    row = curve.loc[chosen]
    return all(
        row[f"{m}_low"] <= pca[f"{m}_high"] and pca[f"{m}_low"] <= row[f"{m}_high"] for m in metrics
    )


class IndistinguishableFromPCAWarning(UserWarning):
    """:func:`select` chose a setting whose intervals overlap PCA's on every limited metric."""


def select(
    curve: pd.DataFrame,
    constraints: dict[str, float],
    *,
    bound: Literal["upper", "estimate"] = "upper",
) -> BaseEstimator:
    """The best-variance setting of ``curve`` that meets every fairness limit.

    Among the settings that meet the limits, the one keeping the most
    held-out variance; settings that keep the same variance (to rounding, e.g.
    PCA and ``MeanMatchingFairPCA(mean_penalty=0)``) are tied, and a tie goes
    to the fairer setting (lower estimates of the constrained metrics, in the
    order of ``constraints``), then to the simpler one: a group-blind setting
    (PCA) before a fair method, then the curve's order (each knob from least
    to most constrained).

    When the chosen setting's bootstrap interval overlaps the PCA row's on
    every constrained metric (or the chosen setting is PCA), a
    :class:`IndistinguishableFromPCAWarning` says that the curve does not show
    it to be fairer than PCA on these rows.

    Parameters
    ----------
    curve : pandas.DataFrame
        From :func:`tradeoff_curve`.
    constraints : dict of str to float
        ``{metric: largest accepted value}``, e.g.
        ``{"demographic_parity_difference": 0.05}``.
    bound : {"upper", "estimate"}, default="upper"
        ``"upper"``: the upper end of the metric's bootstrap interval must be
        within the limit (with a two-sided 95 % interval, the metric is within
        it with one-sided confidence 97.5 %); ``"estimate"``: the held-out
        estimate must be.

    Returns
    -------
    estimator : estimator
        A clone of the chosen setting's configured estimator, unfitted.

    Raises
    ------
    ValueError
        If no setting meets the limits; the message gives the best value
        reached for each constrained metric.
    """
    from sklearn.base import clone

    if bound not in ("upper", "estimate"):
        raise ValueError(f"bound must be 'upper' or 'estimate', got {bound!r}.")
    if not isinstance(constraints, dict) or not constraints:
        raise TypeError("constraints must be a non-empty dict {metric: largest value}.")
    ok = curve[QUALITY].notna().to_numpy().copy()
    for metric, limit in constraints.items():
        column = f"{metric}_high" if bound == "upper" else metric
        if column not in curve:
            raise ValueError(
                f"the curve has no column {column!r}; its metrics are {curve.attrs.get('metrics')}."
            )
        ok &= (curve[column] <= limit).to_numpy()
    if not ok.any():
        reached = ", ".join(
            f"{m} {curve[f'{m}_high' if bound == 'upper' else m].min():.4g} (limit {v:g})"
            for m, v in constraints.items()
        )
        raise ValueError(f"no setting meets the limits; the lowest {bound} values: {reached}.")
    candidates = curve[ok]
    quality = candidates[QUALITY].to_numpy(dtype=float)
    tied = candidates[np.isclose(quality, quality.max(), rtol=1e-9, atol=1e-12)]
    metrics = list(constraints)
    position = {index: i for i, index in enumerate(curve.index)}
    best = min(
        tied.index,
        key=lambda i: (
            _fairness_key(curve.loc[i], metrics),
            takes_groups(curve.loc[i, "estimator"]),
            position[i],
        ),
    )
    if _indistinguishable_from_pca(curve, best, metrics):
        chosen = curve.loc[best]
        what = f"{chosen['method']} {chosen.get('setting', '')}".strip()
        warn(
            f"the chosen setting ({what}) is not shown to differ from PCA: its "
            f"{curve.attrs.get('confidence', 0.95):.0%} intervals overlap PCA's on "
            f"{', '.join(metrics)}; no setting under the limits is shown fairer than PCA "
            "on these rows, or a fairer one keeps less variance.",
            IndistinguishableFromPCAWarning,
        )
    return clone(curve.loc[best, "estimator"])


def write_report(
    curve: pd.DataFrame, path: str | os.PathLike, *, source: str = "", force: bool = False
) -> list[str]:
    """Write a trade-off curve's report into the folder ``path``, which appears whole.

    The files of ``fairpca tradeoff --output``: ``tradeoff.csv`` (one row per
    setting), ``group_losses.csv`` (how each group fares against PCA), the
    frontier plot (``tradeoff.png``, ``tradeoff.svg``) and ``report.html`` (one
    self-contained file). Everything is written in a staging folder beside
    ``path`` and renamed into place once complete; ``path`` is locked meanwhile.

    Parameters
    ----------
    curve : pandas.DataFrame
        :func:`tradeoff_curve`'s or :func:`tradeoff_curve_split`'s result.
    path : path-like
        The folder (created if needed).
    source : str, default=""
        What the data are, for the report.
    force : bool, default=False
        Replace a non-empty ``path`` (all of it, once the new one is complete).

    Returns
    -------
    written : list of str
        The files' names.

    Raises
    ------
    ValueError
        ``path`` cannot be written, or is not empty without ``force``.
    RuntimeError
        Another run is writing ``path`` (it holds the lock).
    OSError
        Writing failed; ``path`` is left as it was.
    """
    return _reports.write_tradeoff_report(curve, path, source=source, force=force)
