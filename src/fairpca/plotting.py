"""Plots of comparisons: trade-offs, per-group errors, loadings and paper reproductions.

Requires the ``plot`` extra (matplotlib). Every function returns a new
:class:`matplotlib.figure.Figure` built without pyplot, so it neither changes
the user's backend nor accumulates open figures; save it with ``fig.savefig``
or display it in a notebook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from fairpca._curve import QUALITY, frontier_mask
from fairpca._output import plot_text
from fairpca._validation import check_sensitive_features

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure
    from sklearn.base import BaseEstimator

__all__ = [
    "plot_communality",
    "plot_group_errors",
    "plot_group_errors_by_d",
    "plot_projections",
    "plot_protected_biplot",
    "plot_reproduction",
    "plot_tradeoff",
    "plot_tradeoff_curve",
    "protected_loadings",
]


def _figure(**kwargs):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise ImportError('plotting needs matplotlib: pip install "fairpca[plot]"') from exc
    return Figure(**kwargs)


def _renderer(figure):
    """A renderer of ``figure`` with its layout done (an Agg canvas if it has none)."""
    if not hasattr(figure.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure)
    figure.draw_without_rendering()
    return figure.canvas.get_renderer()


#: Where a point's label may go, tried in order: the directions (in points, and the
#: alignment that keeps the text on that side of the point), at growing distances.
_DIRECTIONS = (
    (1, 0, "left", "center"),
    (0, 1, "center", "bottom"),
    (-1, 0, "right", "center"),
    (0, -1, "center", "top"),
    (1, 1, "left", "bottom"),
    (-1, 1, "right", "bottom"),
    (1, -1, "left", "top"),
    (-1, -1, "right", "top"),
)
_DISTANCES = (7, 12, 18, 25, 33, 42)
#: Half the side of the square around each marker that no label may cover, in points.
_MARKER_HALF = 4.5


def _label_points(ax, xs, ys, labels, fontsize="small"):
    """Write ``labels[i]`` beside the point ``(xs[i], ys[i])``, none over another.

    Each label takes the first place (right, above, left, below, the diagonals, then
    the same further away) where it stays inside the axes and meets no marker and no
    label already placed; a label with no free place goes to the first. The labels are left out of
    the layout (placed after it, they cannot move it).

    Returns
    -------
    texts : list of matplotlib.text.Annotation
    """
    figure = ax.figure
    renderer = _renderer(figure)
    inside = ax.get_window_extent(renderer)
    from matplotlib.transforms import Bbox

    half = _MARKER_HALF * figure.dpi / 72
    finite = np.isfinite(xs) & np.isfinite(ys)
    centres = ax.transData.transform(np.column_stack([xs, ys])[finite])
    placed = [Bbox([[cx - half, cy - half], [cx + half, cy + half]]) for cx, cy in centres]
    texts = []
    for x, y, label in zip(xs, ys, labels, strict=True):
        if not (np.isfinite(x) and np.isfinite(y)):
            continue
        text = ax.annotate(
            label, (x, y), xytext=(0, 0), textcoords="offset points", fontsize=fontsize
        )
        text.set_in_layout(False)
        chosen = None
        for distance in _DISTANCES:
            for dx, dy, ha, va in _DIRECTIONS:
                text.xyann = (dx * distance, dy * distance)
                text.set_horizontalalignment(ha)
                text.set_verticalalignment(va)
                box = text.get_window_extent(renderer)
                fits = (
                    box.x0 >= inside.x0
                    and box.x1 <= inside.x1
                    and box.y0 >= inside.y0
                    and box.y1 <= inside.y1
                )
                if fits and not any(box.overlaps(other) for other in placed):
                    chosen = (dx * distance, dy * distance, ha, va)
                    break
            if chosen:
                break
        dx, dy, ha, va = chosen or (_DISTANCES[0], 0, "left", "center")
        text.xyann = (dx, dy)
        text.set_horizontalalignment(ha)
        text.set_verticalalignment(va)
        placed.append(text.get_window_extent(renderer))
        texts.append(text)
    return texts


def _key_legend(figure, labels, *, loc="outside lower center", ncols=1):
    """A legend of numbered labels ("1  PCA") without marks: the key of the numbers."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], ls="", marker="") for _ in labels]
    return figure.legend(
        handles,
        labels,
        loc=loc,
        ncols=ncols,
        fontsize="small",
        handlelength=0,
        handletextpad=0,
        title="points",
        title_fontsize="small",
    )


def plot_tradeoff(
    table: pd.DataFrame,
    fairness_columns: Sequence[str],
    quality_column: str = "explained_variance_ratio",
) -> Figure:
    """Scatter explained variance against each fairness measure, one marker per method.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per method (index = method name), e.g. from :func:`fairpca.metrics.report`.
    fairness_columns : list of str
        Columns of ``table`` where lower is fairer; one panel each.
    quality_column : str, default="explained_variance_ratio"
        Column where higher is better, plotted on the y-axis.

    Returns
    -------
    fig : matplotlib.figure.Figure
        Non-dominated methods (the Pareto front) are ringed and joined. Methods
        whose ``quality_column`` is NaN are left out and named in the title.
    """
    columns = [c for c in fairness_columns if c in table.columns]
    if not columns:
        raise ValueError(f"none of fairness_columns {list(fairness_columns)} is in the table.")
    # Methods without the quality measure (e.g. no reconstruction) cannot be placed.
    missing = table.index[table[quality_column].isna()]
    table = table.drop(index=missing)
    fig = _figure(figsize=(4.8 * len(columns) + 2.8, 4.4), layout="constrained")
    axes = fig.subplots(1, len(columns), squeeze=False)
    quality = table[quality_column].to_numpy(dtype=float)
    markers = "osD^vP*Xh<>"
    numbers = [str(i + 1) for i in range(len(table.index))]
    for ax, column in zip(axes[0], columns, strict=True):
        unfairness = table[column].to_numpy(dtype=float)
        for i, name in enumerate(table.index):
            ax.scatter(
                unfairness[i],
                quality[i],
                marker=markers[i % len(markers)],
                s=60,
                label=f"{numbers[i]}  {plot_text(name)}",
            )
        front = frontier_mask(quality, unfairness)
        order = np.argsort(unfairness[front])
        ax.plot(unfairness[front][order], quality[front][order], "k--", lw=1, label="Pareto front")
        ax.scatter(
            unfairness[front], quality[front], s=180, facecolors="none", edgecolors="k", lw=1
        )
        ax.set_xlabel(f"{column} (lower is fairer)")
        ax.set_ylabel(f"{quality_column} (fraction)")
        ax.locator_params(axis="x", nbins=5)
        ax.margins(0.15)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    # The legend names every numbered point: methods at one place stay identifiable.
    fig.legend(handles, labels, loc="outside right center", fontsize="small")
    title = "Quality against fairness, one numbered marker per method"
    if len(missing):
        title += f"\n(not shown, no {quality_column}: {', '.join(map(plot_text, missing))})"
    fig.suptitle(title)
    for ax, column in zip(axes[0], columns, strict=True):
        _label_points(ax, table[column].to_numpy(dtype=float), quality, numbers)
    return fig


def plot_tradeoff_curve(curve: pd.DataFrame, metrics: Sequence[str] | None = None) -> Figure:
    """The fairness-variance trade-off of :func:`fairpca.tradeoff_curve`, with intervals.

    One panel per fairness metric: every setting at (metric, retained
    variance) with its bootstrap intervals as segments, one marker per
    method, each method's settings joined in grid order, and the settings
    no other setting beats on that panel's two measures ringed and joined
    (dashed).

    Parameters
    ----------
    curve : pandas.DataFrame
        From :func:`fairpca.tradeoff_curve`.
    metrics : list of str, default=None
        Metrics to plot (default: the curve's).

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    metrics = list(curve.attrs.get("metrics", [])) if metrics is None else list(metrics)
    missing = [m for m in metrics if m not in curve.columns]
    if not metrics or missing:
        raise ValueError(f"metrics {missing or metrics} are not columns of the curve.")
    curve = curve[curve[QUALITY].notna()]
    names = [
        plot_text(f"{method} {setting}".strip() if setting == setting else str(method))
        for method, setting in zip(
            curve["method"], curve.get("setting", [""] * len(curve)), strict=True
        )
    ]
    numbers = [str(i + 1) for i in range(len(curve))]
    ncols = max(1, min(len(metrics) + 1, 4))
    key_rows = -(-len(names) // ncols)
    fig = _figure(
        figsize=(5.2 * len(metrics) + 2.4, 4.8 + 0.2 * key_rows + 0.4), layout="constrained"
    )
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    markers = "osD^vP*Xh<>"
    quality = curve[QUALITY].to_numpy(dtype=float)
    for ax, metric in zip(axes, metrics, strict=True):
        for i, (method, part) in enumerate(curve.groupby("method", sort=False)):
            x, y = part[metric].to_numpy(float), part[QUALITY].to_numpy(float)
            (line,) = ax.plot(
                x, y, marker=markers[i % len(markers)], ms=6, lw=1, label=plot_text(method)
            )
            # The intervals as drawn segments (symmetric bootstrap intervals, which
            # contain the estimate; clipped at 0 below).
            color = line.get_color()
            ax.hlines(y, part[f"{metric}_low"], part[f"{metric}_high"], colors=color, lw=0.8)
            ax.vlines(x, part[f"{QUALITY}_low"], part[f"{QUALITY}_high"], colors=color, lw=0.8)
        cost = curve[metric].to_numpy(dtype=float)
        front = frontier_mask(quality, cost)
        order = np.argsort(cost[front])
        ax.plot(cost[front][order], quality[front][order], "k--", lw=1, label="frontier")
        ax.scatter(cost[front], quality[front], s=160, facecolors="none", edgecolors="k")
        ax.set_xlabel(f"{metric} (held out; lower is fairer)")
        ax.set_ylabel(f"{QUALITY} (held out)")
        ax.locator_params(axis="x", nbins=5)
        ax.margins(0.12)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize="small")
    # Every point is numbered on the panels; the key below names its method and setting.
    _key_legend(fig, [f"{n}  {name}" for n, name in zip(numbers, names, strict=True)], ncols=ncols)
    level = curve.attrs.get("confidence")
    fig.suptitle(
        "Fairness against retained variance"
        + (f", {level:.0%} bootstrap intervals" if level else "")
    )
    for ax, metric in zip(axes, metrics, strict=True):
        _label_points(ax, curve[metric].to_numpy(dtype=float), quality, numbers)
    return fig


def plot_group_errors(table: pd.DataFrame, prefix: str = "reconstruction_error[") -> Figure:
    """Grouped bars of each group's reconstruction error for every method.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per method with per-group columns named ``prefix + label + "]"``.
    prefix : str, default="reconstruction_error["
        Prefix of the per-group columns.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    columns = [c for c in table.columns if c.startswith(prefix) and c.endswith("]")]
    if not columns:
        raise ValueError(f"the table has no per-group columns starting with {prefix!r}.")
    labels = [plot_text(c[len(prefix) : -1]) for c in columns]
    n_methods = len(table.index)
    width = 0.8 / n_methods
    x = np.arange(len(columns))
    fig = _figure(figsize=(max(5.0, 1.6 * len(columns) + 2) + 2.4, 4.2), layout="constrained")
    ax = fig.subplots()
    for i, name in enumerate(table.index):
        ax.bar(
            x + (i - (n_methods - 1) / 2) * width,
            table.loc[name, columns],
            width,
            label=plot_text(name),
        )
    ax.set_xticks(x, labels)
    ax.set_xlabel("group")
    ax.set_ylabel("mean squared reconstruction error")
    ax.set_title("Reconstruction error of each group")
    # Beside the axes, never over a bar.
    fig.legend(loc="outside right upper", fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    return fig


def plot_group_errors_by_d(table: pd.DataFrame) -> Figure:
    """Each group's reconstruction error against the target dimension, one panel per method.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``method``, ``d``, ``group`` and ``error`` (mean squared
        reconstruction error of the group's rows).

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    missing = {"method", "d", "group", "error"} - set(table.columns)
    if missing:
        raise ValueError(f"table lacks column(s) {sorted(missing)}.")
    methods = list(dict.fromkeys(table["method"]))
    n_cols = min(3, len(methods))
    n_rows = -(-len(methods) // n_cols)
    # Wide enough for the title and the legend beside the panels, even with one panel.
    fig = _figure(figsize=(max(4.2 * n_cols + 1.8, 7.5), 3.4 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False, sharey=True)
    for ax, method in zip(axes.flat, methods, strict=False):
        part = table[table["method"] == method]
        for group, rows in part.groupby("group", sort=True):
            rows = rows.sort_values("d")
            ax.plot(rows["d"], rows["error"], marker="o", label=plot_text(f"group {group}"))
        ax.set_title(plot_text(method), fontsize="medium")
        ax.set_xlabel("target dimension d")
        ax.set_xticks(sorted(part["d"].unique()))
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("mean squared reconstruction error")
    for ax in axes.flat[len(methods) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize="small")
    fig.suptitle("Reconstruction error of each group against d (held-out rows)")
    return fig


def protected_loadings(
    scores: ArrayLike, sensitive_features: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """Correlation of each component's scores with each group's indicator.

    The protected attribute is treated as a supplementary variable: its
    "loading" on component ``k`` is the correlation between the scores on
    ``k`` and the indicator of group ``g``; the sum of squares over components
    (its *communality*) is the share of the indicator's variance that the
    projection carries (the R² of regressing it on the scores when these are
    uncorrelated).

    Parameters
    ----------
    scores : ndarray of shape (n_samples, n_components)
    sensitive_features : ndarray of shape (n_samples,)

    Returns
    -------
    groups : ndarray of shape (n_groups,)
    loadings : ndarray of shape (n_groups, n_components)
        Zero for a component with constant scores.
    """
    scores = np.asarray(scores, dtype=float)
    groups, codes = check_sensitive_features(sensitive_features, scores.shape[0])
    centred = scores - scores.mean(axis=0)
    norms = np.linalg.norm(centred, axis=0)
    loadings = np.zeros((len(groups), scores.shape[1]))
    for i in range(len(groups)):
        indicator = (codes == i).astype(float)
        indicator -= indicator.mean()
        denominator = norms * np.linalg.norm(indicator)
        ok = denominator > 0
        loadings[i, ok] = (indicator @ centred[:, ok]) / denominator[ok]
    return groups, loadings


def plot_protected_biplot(
    projections: Mapping[str, BaseEstimator],
    X: ArrayLike,
    sensitive_features: ArrayLike,
    *,
    max_points: int = 400,
    random_state: int = 0,
    feature_names: Sequence[str] | None = None,
    n_features_shown: int = 4,
) -> Figure:
    """Biplot of the first two components of each method with the protected attribute.

    Rows (a subsample) are drawn as points coloured by group; coloured arrows
    show the correlation loadings of each group's indicator (see
    :func:`protected_loadings`), grey arrows those of the ``n_features_shown``
    features most correlated with the two scores, labelled. A fair projection
    has short coloured arrows and mixed colours.

    Parameters
    ----------
    projections : dict
        ``{method name: fitted estimator with transform}``, at least 2 components.
    X : ndarray of shape (n_samples, n_features)
    sensitive_features : ndarray of shape (n_samples,)
    max_points : int, default=400
        Points drawn per panel.
    random_state : int, default=0
        Seed of the subsample.
    feature_names : list of str, default=None
        Labels of the features (default ``x0, x1, ...``).
    n_features_shown : int, default=4
        Feature loadings drawn per panel.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    X = np.asarray(X, dtype=float)
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0])
    if feature_names is None:
        feature_names = [f"x{j}" for j in range(X.shape[1])]
    rng = np.random.default_rng(random_state)
    shown = rng.permutation(len(codes))[:max_points]
    names = list(projections)
    n_cols = min(3, len(names))
    n_rows = -(-len(names) // n_cols)
    # The legend below: a column per panel (its two explanations are long), and the
    # figure taller by its rows; wide enough for the title even with one panel.
    legend_cols = n_cols
    legend_rows = -(-(len(groups) + 2) // legend_cols)
    fig = _figure(
        figsize=(max(4.2 * n_cols, 7.5), 4.0 * n_rows + 0.22 * legend_rows),
        layout="constrained",
    )
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    panels = {}
    for name in names:
        scores = projections[name].transform(X)
        if scores.shape[1] < 2:
            raise ValueError(f"{name} has fewer than 2 components: no biplot.")
        panels[name] = (
            scores[:, :2],
            protected_loadings(scores[:, :2], codes)[1],
            _feature_loadings(X, scores[:, :2]),
        )
    # Correlations of a fair projection are small: one magnification for every
    # panel keeps the arrows visible and comparable between methods.
    largest = max(np.abs(loadings).max() for _, loadings, _ in panels.values())
    magnify = 1.0 if largest >= 0.5 else float(np.floor(0.8 / max(largest, 1e-3)))
    feature_labels = {}
    for ax, name in zip(axes.flat, names, strict=False):
        scores, loadings, features = panels[name]
        scale = np.abs(scores[shown]).max()
        for j in np.argsort(-np.linalg.norm(features, axis=1))[:n_features_shown]:
            ax.annotate(
                "",
                xy=tuple(features[j]),
                xytext=(0, 0),
                arrowprops={"arrowstyle": "->", "lw": 1.0, "color": "0.45", "shrinkA": 0},
            )
            feature_labels.setdefault(name, []).append((*features[j], feature_names[j]))
        for i in range(len(groups)):
            rows = shown[codes[shown] == i]
            ax.scatter(scores[rows, 0] / scale, scores[rows, 1] / scale, s=8, alpha=0.35)
        for i in range(len(groups)):
            ax.annotate(
                "",
                xy=(magnify * loadings[i, 0], magnify * loadings[i, 1]),
                xytext=(0, 0),
                arrowprops={"arrowstyle": "-|>", "lw": 2.5, "color": f"C{i}", "shrinkA": 0},
            )
        ax.set_xlim(-1.05, 1.05)
        ax.set_ylim(-1.05, 1.05)
        # A square box with equal limits: equal scales, and a box the layout can place
        # (an adjustable aspect let the titles run into the figure's title).
        ax.set_box_aspect(1)
        ax.axhline(0, color="0.7", lw=0.5)
        ax.axvline(0, color="0.7", lw=0.5)
        ax.set_title(plot_text(name), fontsize="medium")
        ax.set_xlabel("component 1 (scaled)")
        ax.set_ylabel("component 2 (scaled)")
    for ax in axes.flat[len(names) :]:
        ax.set_visible(False)
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], marker="o", ls="", color=f"C{i}", label=plot_text(f"group {g}"))
        for i, g in enumerate(groups)
    ]
    handles.append(
        Line2D([], [], color="0.45", lw=1.0, label="grey: correlation of a feature with the scores")
    )
    arrow = "arrow: correlation of each group's indicator with the scores"
    handles.append(
        Line2D([], [], color="k", lw=2.5, label=arrow + (f" (x{magnify:g})" if magnify > 1 else ""))
    )
    fig.legend(handles=handles, loc="outside lower center", ncols=legend_cols, fontsize="small")
    fig.suptitle("Biplot: held-out rows and the protected attribute's loadings")
    # The features' names at their arrows' tips, after the layout, none over another.
    for ax, name in zip(axes.flat, names, strict=False):
        tips = feature_labels.get(name, [])
        if tips:
            xs, ys, labels = zip(*tips, strict=True)
            texts = _label_points(
                ax, np.array(xs), np.array(ys), list(map(plot_text, labels)), fontsize="x-small"
            )
            for text in texts:
                text.set_color("0.3")
    return fig


def _feature_loadings(X, scores):
    """Correlation of each feature with each score column, shape (n_features, 2)."""
    Xc, Zc = X - X.mean(axis=0), scores - scores.mean(axis=0)
    norms = np.outer(np.linalg.norm(Xc, axis=0), np.linalg.norm(Zc, axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = (Xc.T @ Zc) / norms
    return np.nan_to_num(corr)


def plot_communality(
    projections: Mapping[str, BaseEstimator], X: ArrayLike, sensitive_features: ArrayLike
) -> Figure:
    """Communality of the protected attribute: how much of it each projection carries.

    One bar per (method, group), horizontal, a colour per group: the squared
    correlation loadings of the group's indicator on the components (see
    :func:`protected_loadings`), stacked component by component (white lines
    between them), so the bar's length is the share of the indicator's variance
    the projection carries. Every group is shown (with two groups both bars
    are equal: one indicator is the other's complement).

    Parameters
    ----------
    projections : dict
        ``{method name: fitted estimator with transform}``.
    X : ndarray of shape (n_samples, n_features)
    sensitive_features : ndarray of shape (n_samples,)

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    names = list(projections)
    loadings = {}
    groups, codes = check_sensitive_features(sensitive_features, np.shape(X)[0])
    for name in names:
        loadings[name] = protected_loadings(projections[name].transform(X), codes)[1]
    n_groups = len(groups)
    height = 0.8 / max(n_groups, 1)
    fig = _figure(
        figsize=(8.0, max(3.2, 0.09 * n_groups * len(names) + 0.2 * len(names) + 1.4)),
        layout="constrained",
    )
    ax = fig.subplots()
    for j, name in enumerate(names):
        for i in range(n_groups):
            y = j + (i - (n_groups - 1) / 2) * height
            left = 0.0
            for value in loadings[name][i] ** 2:
                ax.barh(
                    y,
                    value,
                    height=height,
                    left=left,
                    color=f"C{i % 10}",
                    edgecolor="white",
                    linewidth=0.8,
                    label=plot_text(f"group {groups[i]}"),
                )
                left += value
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    fig.legend(
        unique.values(),
        unique.keys(),
        fontsize="small",
        loc="outside right upper",
        title="group's indicator",
    )
    ax.set_yticks(range(len(names)), list(map(plot_text, names)))
    ax.invert_yaxis()  # the first method on top
    ax.set_xlabel("communality: sum over components of squared correlations (lower is fairer)")
    ax.set_title("How much of each group's indicator the components carry", fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    return fig


def plot_projections(
    projections: Mapping[str, BaseEstimator],
    X: ArrayLike,
    sensitive_features: ArrayLike,
    *,
    titles: Mapping[str, str] | None = None,
    suptitle: str | None = None,
) -> Figure:
    """Side-by-side scatter plots of the first two components, groups coloured.

    Parameters
    ----------
    projections : dict
        ``{method name: fitted estimator with transform}``, at least 2 components.
    X : ndarray of shape (n_samples, n_features)
        Rows to project (all are drawn).
    sensitive_features : ndarray of shape (n_samples,)
    titles : dict, default=None
        ``{method name: panel title}``; the method name by default.
    suptitle : str, default=None
        Title of the figure.

    Returns
    -------
    fig : matplotlib.figure.Figure
        One panel per method, with shared axes so the spreads compare.
    """
    groups, codes = check_sensitive_features(sensitive_features, np.shape(X)[0])
    names = list(projections)
    titles = {} if titles is None else titles
    fig = _figure(figsize=(3.9 * len(names), 4.3), layout="constrained")
    axes = fig.subplots(1, len(names), squeeze=False, sharex=True, sharey=True)[0]
    markers = "o^sDv"
    for ax, name in zip(axes, names, strict=True):
        scores = projections[name].transform(X)
        if scores.shape[1] < 2:
            raise ValueError(f"{name} has fewer than 2 components: nothing to scatter.")
        for i, g in enumerate(groups):
            rows = codes == i
            ax.scatter(
                scores[rows, 0],
                scores[rows, 1],
                s=10,
                alpha=0.6,
                marker=markers[i % len(markers)],
                label=plot_text(f"group {g}"),
            )
        # A title the caller chose may use mathtext; a method name is shown as text.
        ax.set_title(titles[name] if name in titles else plot_text(name), fontsize="medium")
        ax.set_xlabel("component 1 (standardised units)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("component 2 (standardised units)")
    axes[0].legend(fontsize="small", loc="best")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def plot_reproduction(table: pd.DataFrame) -> Figure:
    """Our results next to a paper's table, for :mod:`fairpca.experiments`.

    One panel per metric (two per row), one line per cell with a paper mean,
    our mean ± SD divided by the paper's mean (log scale unless the ratios
    span less than a factor 4) with the paper's spread shaded. A target whose
    paper shows figures instead (Samadi et al.'s loss against d, Kamani et
    al.'s disparity and loss bars, Lee et al.'s synthetic experiments, Vu et
    al.'s radius) has its own figure function (``Target.figure``, in its
    paper's module), which the engine calls instead of this one.

    Parameters
    ----------
    table : pandas.DataFrame
        ``Reproduction.table``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    rows = table[table["paper_mean"].notna() & table["ours_mean"].notna()]
    metrics = list(dict.fromkeys(rows["metric"]))
    n_cols = min(2, len(metrics))
    n_rows = -(-len(metrics) // n_cols)
    height = max(3.0, 0.28 * max((rows["metric"] == m).sum() for m in metrics) + 1.5)
    fig = _figure(figsize=(6.2 * n_cols, height * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    for ax, metric in zip(axes, metrics, strict=False):
        part = rows[rows["metric"] == metric].reset_index(drop=True)
        y = np.arange(len(part))[::-1]
        paper = part["paper_mean"].to_numpy(dtype=float)
        ratio = part["ours_mean"].to_numpy(dtype=float) / paper
        err = part["ours_std"].to_numpy(dtype=float) / paper
        spread = np.nan_to_num(part["paper_std"].to_numpy(dtype=float) / paper)
        tiny = 1e-3
        for yi, sp in zip(y, spread, strict=True):
            if sp > 0:
                ax.fill_betweenx([yi - 0.35, yi + 0.35], max(1 - sp, tiny), 1 + sp, color="0.85")
        inside = (part["status"] == "within").to_numpy()
        ratio = np.maximum(ratio, tiny)
        # The lower bar stops at the axis floor: a bar reaching zero or below would
        # stretch a log axis over many empty decades.
        xerr = np.vstack([np.minimum(err, ratio - tiny), err])
        for mask, fmt, color, label in (
            (inside, "o", "C2", "ours, within the spread"),
            (~inside, "s", "C3", "ours, outside the spread"),
        ):
            ax.errorbar(ratio[mask], y[mask], xerr=xerr[:, mask], fmt=fmt, color=color, label=label)
        ax.axvline(1.0, color="k", lw=1)
        labels = [f"{r.dataset} d={r.d} {r.method} {r.setting}".strip() for r in part.itertuples()]
        ax.set_yticks(y, labels, fontsize="small")
        low, high = ax.get_xlim()
        if high / max(low, tiny) < 4:
            # A narrow range: a log axis would show a single tick.
            ax.set_xlabel(f"{metric}: ours / paper")
        else:
            ax.set_xscale("log")
            # Plain numbers on the log axis; 1-2-5 ticks only while they cannot crowd.
            from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

            decades = np.log10(high / max(low, tiny))
            subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
            ax.xaxis.set_major_locator(LogLocator(subs=subs))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel(f"{metric}: ours / paper (log scale)")
        ax.grid(axis="x", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    from matplotlib.patches import Patch

    handles.append(Patch(color="0.85", label="paper's mean ± 1 SD"))
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize="small")
    fig.suptitle("Our mean ± SD over splits, relative to the paper's mean")
    return fig
