"""Plots of a comparison table: fairness/quality trade-offs and per-group errors.

Requires the ``plot`` extra (matplotlib). Every function returns a new
:class:`matplotlib.figure.Figure` built without pyplot, so it neither changes
the user's backend nor accumulates open figures; save it with ``fig.savefig``
or display it in a notebook.
"""

import numpy as np

__all__ = ["plot_group_errors", "plot_tradeoff"]


def _figure(**kwargs):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise ImportError('plotting needs matplotlib: pip install "fairpca[plot]"') from exc
    return Figure(**kwargs)


def _pareto_mask(quality, unfairness):
    """Rows not dominated by another (higher quality and lower unfairness)."""
    keep = np.ones(len(quality), dtype=bool)
    for i in range(len(quality)):
        better = (quality >= quality[i]) & (unfairness <= unfairness[i])
        strictly = (quality > quality[i]) | (unfairness < unfairness[i])
        keep[i] = not np.any(better & strictly)
    return keep


def plot_tradeoff(table, fairness_columns, quality_column="explained_variance_ratio"):
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
        Non-dominated methods (the Pareto front) are ringed and joined.
    """
    columns = [c for c in fairness_columns if c in table.columns]
    if not columns:
        raise ValueError(f"none of fairness_columns {list(fairness_columns)} is in the table.")
    fig = _figure(figsize=(4.8 * len(columns), 4.2), layout="tight")
    axes = fig.subplots(1, len(columns), squeeze=False)
    quality = table[quality_column].to_numpy(dtype=float)
    markers = "osD^vP*Xh<>"
    for ax, column in zip(axes[0], columns, strict=True):
        unfairness = table[column].to_numpy(dtype=float)
        for i, name in enumerate(table.index):
            ax.scatter(
                unfairness[i], quality[i], marker=markers[i % len(markers)], s=60, label=name
            )
        front = _pareto_mask(quality, unfairness)
        order = np.argsort(unfairness[front])
        ax.plot(unfairness[front][order], quality[front][order], "k--", lw=1, label="Pareto front")
        ax.scatter(
            unfairness[front], quality[front], s=180, facecolors="none", edgecolors="k", lw=1
        )
        ax.set_xlabel(f"{column} (lower is fairer)")
        ax.set_ylabel(f"{quality_column} (fraction)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize="small", loc="best")
    fig.suptitle("Quality against fairness, one marker per method")
    return fig


def plot_group_errors(table, prefix="reconstruction_error["):
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
    labels = [c[len(prefix) : -1] for c in columns]
    n_methods = len(table.index)
    width = 0.8 / n_methods
    x = np.arange(len(columns))
    fig = _figure(figsize=(max(5.0, 1.6 * len(columns) + 2), 4.2), layout="tight")
    ax = fig.subplots()
    for i, name in enumerate(table.index):
        ax.bar(x + (i - (n_methods - 1) / 2) * width, table.loc[name, columns], width, label=name)
    ax.set_xticks(x, labels)
    ax.set_xlabel("group")
    ax.set_ylabel("mean squared reconstruction error")
    ax.set_title("Reconstruction error of each group")
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    return fig
