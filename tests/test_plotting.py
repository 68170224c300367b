import numpy as np
import pandas as pd
import pytest

from fairpca.plotting import (
    plot_communality,
    plot_group_errors,
    plot_group_errors_by_d,
    plot_projections,
    plot_protected_biplot,
    plot_reproduction,
    plot_tradeoff,
    plot_tradeoff_curve,
    protected_loadings,
)


@pytest.fixture
def table():
    return pd.DataFrame(
        {
            "explained_variance_ratio": [0.5, 0.45, 0.3],
            "mmd2": [0.1, 0.02, 0.05],
            "reconstruction_error[a]": [1.0, 1.2, 2.0],
            "reconstruction_error[b]": [3.0, 1.5, 2.1],
        },
        index=["PCA", "Fair", "Dominated"],
    )


def test_tradeoff_plot_is_labelled(table):
    fig = plot_tradeoff(table, ["mmd2", "absent"])
    (ax,) = fig.axes
    assert ax.get_xlabel().startswith("mmd2") and "explained_variance_ratio" in ax.get_ylabel()
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["PCA", "Fair", "Dominated", "Pareto front"]
    front_line = [line for line in ax.get_lines() if line.get_label() == "Pareto front"][0]
    np.testing.assert_allclose(front_line.get_xdata(), [0.02, 0.1])  # "Dominated" is off it
    with pytest.raises(ValueError, match="none of fairness_columns"):
        plot_tradeoff(table, ["absent"])


def test_group_error_plot(table):
    fig = plot_group_errors(table)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == sorted([1.0, 1.2, 2.0, 3.0, 1.5, 2.1])
    with pytest.raises(ValueError, match="no per-group columns"):
        plot_group_errors(table[["mmd2"]])


def test_plots_leave_pyplot_state_alone(table):
    import matplotlib
    import matplotlib.pyplot as plt

    backend = matplotlib.get_backend()
    plot_tradeoff(table, ["mmd2"])
    plot_group_errors(table)
    assert plt.get_fignums() == [] and matplotlib.get_backend() == backend


def test_protected_loadings_are_correlations():
    rng = np.random.default_rng(1)
    s = rng.choice(["a", "b", "c"], size=200)
    scores = rng.normal(size=(200, 3)) + (s == "b")[:, None] * [2.0, 0.0, -1.0]
    scores[:, 1] = 5.0  # a constant component has zero loading, not NaN
    groups, loadings = protected_loadings(scores, s)
    assert list(groups) == ["a", "b", "c"]
    for i, g in enumerate(groups):
        for k in (0, 2):
            expected = np.corrcoef(scores[:, k], s == g)[0, 1]
            assert loadings[i, k] == pytest.approx(expected)
        assert loadings[i, 1] == 0.0


def test_biplot_and_communality():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(2)
    s = np.repeat([0, 1], 100)
    X = rng.normal(size=(200, 4)) + s[:, None] * [3.0, 0, 0, 0]
    models = {"PCA": PCA(2).fit(X), "PCA-3": PCA(3).fit(X)}
    fig = plot_protected_biplot(models, X, s, n_features_shown=0)  # group arrows only
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["PCA", "PCA-3"]
    arrow_tips = np.array([a.xy for a in axes[0].texts])
    _, loadings = protected_loadings(models["PCA"].transform(X), s)
    assert np.abs(loadings).max() > 0.5  # strong signal: drawn unmagnified
    np.testing.assert_allclose(arrow_tips, loadings[:, :2])
    fig = plot_communality(models, X, s)
    (ax,) = fig.axes
    stacked = {}
    for patch in ax.patches:
        stacked[round(patch.get_x() + patch.get_width() / 2)] = patch.get_y() + patch.get_height()
    for j, model in enumerate(models.values()):
        scores = model.transform(X)
        expected = sum(np.corrcoef(scores[:, k], s == 0)[0, 1] ** 2 for k in range(scores.shape[1]))
        assert stacked[j] == pytest.approx(expected)
    assert "communality" in ax.get_ylabel()


def test_group_errors_by_d_plot():
    rows = [
        {"method": m, "d": d, "group": g, "error": 1.0 / d + (g == "b")}
        for m in ("PCA", "Fair")
        for d in (1, 2, 3)
        for g in ("a", "b")
    ]
    fig = plot_group_errors_by_d(pd.DataFrame(rows))
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["PCA", "Fair"]
    assert axes[0].get_xlabel() == "target dimension d"
    np.testing.assert_allclose(axes[0].get_lines()[1].get_ydata(), [2.0, 1.5, 1 + 1 / 3])
    with pytest.raises(ValueError, match="lacks column"):
        plot_group_errors_by_d(pd.DataFrame(rows).drop(columns="error"))


def test_reproduction_plot_shows_ratio_to_paper():
    table = pd.DataFrame(
        {
            "dataset": ["x", "x"],
            "method": ["PCA", "PCA"],
            "setting": ["", ""],
            "d": [2, 2],
            "metric": ["%VAR", "%VAR"],
            "ours_mean": [10.0, 30.0],
            "ours_std": [1.0, 2.0],
            "paper_mean": [10.0, 20.0],
            "paper_std": [0.5, 1.0],
            "status": ["within", "outside"],
        }
    )
    fig = plot_reproduction(table)
    (ax,) = fig.axes
    xs = sorted(float(x) for line in ax.get_lines() for x in line.get_xdata() if x != 1.0)
    assert 1.5 in xs and "ours / paper" in ax.get_xlabel()


def test_reproduction_plot_keeps_a_wide_log_axis_legible():
    # A cell 800x the paper's with an SD larger than its mean (SkillCraft in the
    # full Vu et al. run) next to ordinary cells.
    table = pd.DataFrame(
        {
            "dataset": ["a", "b", "c"],
            "method": "PCA",
            "setting": "",
            "d": 3,
            "metric": "ABDiff",
            "ours_mean": [800.0, 1.0, 0.5],
            "ours_std": [1200.0, 0.1, 0.2],
            "paper_mean": [1.0, 1.0, 1.0],
            "paper_std": np.nan,
            "status": ["within", "within", "outside"],
        }
    )
    fig = plot_reproduction(table)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    # The lower error bar stops at the floor instead of reaching zero.
    assert ax.get_xlim()[0] >= 1e-4
    fig.canvas.draw()
    low, high = ax.get_xlim()
    shown = [
        (label.get_position()[0], label.get_text())
        for label in ax.get_xticklabels()
        if low <= label.get_position()[0] <= high
    ]
    assert 3 <= len(shown) <= 10
    for position, text in shown:
        assert text and float(text) == pytest.approx(position)


def test_projection_plot_shows_each_methods_scores():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    s = np.repeat(["a", "b"], 30)
    models = {"first": PCA(2).fit(X), "last two": PCA(2).fit(X[:, 2:] @ np.eye(2, 4))}
    fig = plot_projections(models, X, s, titles={"first": "PCA\nMMD² = 0.1"}, suptitle="T")
    assert [ax.get_title() for ax in fig.axes] == ["PCA\nMMD² = 0.1", "last two"]
    for ax, est in zip(fig.axes, models.values(), strict=True):
        scores = est.transform(X)
        offsets = [c.get_offsets() for c in ax.collections]
        np.testing.assert_allclose(offsets[0], scores[s == "a"])
        np.testing.assert_allclose(offsets[1], scores[s == "b"])
        assert "component 1" in ax.get_xlabel()
    assert "component 2" in fig.axes[0].get_ylabel()
    assert fig.axes[0].get_legend() is not None
    with pytest.raises(ValueError, match="fewer than 2 components"):
        plot_projections({"one": PCA(1).fit(X)}, X, s)


def test_reproduction_plot_puts_four_metrics_on_a_grid():
    metrics = ["%VAR", "%ACC", "MMD2", "ΔDP"]
    table = pd.DataFrame(
        {
            "dataset": "x",
            "method": "PCA",
            "setting": "",
            "d": 2,
            "metric": metrics,
            "ours_mean": [1.0, 2.0, 3.0, 4.0],
            "ours_std": 0.1,
            "paper_mean": [1.0, 1.0, 1.0, 1.0],
            "paper_std": 0.5,
            "status": "within",
        }
    )
    fig = plot_reproduction(table)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_xlabel().split(":")[0] for ax in axes] == metrics
    positions = {(round(ax.get_position().x0, 2), round(ax.get_position().y0, 2)) for ax in axes}
    assert len(positions) == 4 and len({x for x, _ in positions}) == 2


def test_tradeoff_leaves_out_and_names_methods_without_quality():
    import pandas as pd

    table = pd.DataFrame(
        {"explained_variance_ratio": [0.5, 0.4, np.nan], "mmd2": [0.3, 0.1, 0.01]},
        index=["PCA", "Fair", "LinearErasure"],
    )
    fig = plot_tradeoff(table, ["mmd2"])
    (ax,) = fig.axes
    assert "not shown" in fig._suptitle.get_text() and "LinearErasure" in fig._suptitle.get_text()
    labels = ax.get_legend_handles_labels()[1]
    assert "LinearErasure" not in labels and {"PCA", "Fair"} <= set(labels)


def test_tradeoff_curve_plot_has_intervals_and_frontier():
    from sklearn.decomposition import PCA

    from fairpca import MeanMatchingFairPCA
    from fairpca.datasets import make_gaussian_groups
    from fairpca.tradeoff import tradeoff_curve

    X, s = make_gaussian_groups(n_samples=300, random_state=2)

    curve = tradeoff_curve(
        X,
        s,
        estimators={"PCA": PCA(n_components=2), "MM": MeanMatchingFairPCA()},
        param_grids={"MM": {"mean_penalty": [0.0, 1.0, np.inf]}},
        n_bootstrap=10,
    )
    fig = plot_tradeoff_curve(curve)
    axes = fig.axes
    assert len(axes) == 2  # one panel per metric of the curve
    labels = axes[0].get_legend_handles_labels()[1]
    assert {"PCA", "MM", "frontier"} <= set(labels)
    assert "95% bootstrap intervals" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="not columns"):
        plot_tradeoff_curve(curve, ["max_marginal_loss"])
    # A percentile interval that misses its estimate (few resamples) is still drawn.
    odd = curve.copy()
    odd.loc[0, "mmd2_high"] = odd.loc[0, "mmd2"] / 2
    odd.loc[0, "explained_variance_ratio_low"] = odd.loc[0, "explained_variance_ratio"] * 1.1
    assert len(plot_tradeoff_curve(odd).axes) == 2


def test_biplot_draws_the_largest_feature_loadings_with_their_names():
    from fairpca import MeanMatchingFairPCA
    from fairpca.datasets import make_gaussian_groups
    from fairpca.plotting import _feature_loadings, plot_protected_biplot

    X, s = make_gaussian_groups(n_samples=300, n_features=6, random_state=4)
    est = MeanMatchingFairPCA().fit(X, sensitive_features=s)
    scores = est.transform(X)
    loadings = _feature_loadings(X, scores)
    expected = np.array(
        [[np.corrcoef(X[:, j], scores[:, k])[0, 1] for k in (0, 1)] for j in range(6)]
    )
    np.testing.assert_allclose(loadings, expected, atol=1e-12)
    names = [f"feature {j}" for j in range(6)]
    fig = plot_protected_biplot({"MM": est}, X, s, feature_names=names, n_features_shown=2)
    labelled = {t.get_text() for t in fig.axes[0].texts if t.get_text()}  # arrows have none
    top = {names[j] for j in np.argsort(-np.linalg.norm(expected, axis=1))[:2]}
    assert labelled == top
