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
    assert labels == ["1  PCA", "2  Fair", "3  Dominated", "Pareto front"]
    assert sorted(t.get_text() for t in ax.texts) == ["1", "2", "3"]
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
    for patch in ax.patches:  # two groups: bars at j - 0.2 (group 0) and j + 0.2
        key = round(patch.get_y() + patch.get_height() / 2, 6)
        stacked[key] = max(stacked.get(key, 0.0), patch.get_x() + patch.get_width())
    for j, model in enumerate(models.values()):
        scores = model.transform(X)
        expected = sum(np.corrcoef(scores[:, k], s == 0)[0, 1] ** 2 for k in range(scores.shape[1]))
        assert stacked[round(j - 0.2, 6)] == pytest.approx(expected)
        assert stacked[round(j + 0.2, 6)] == pytest.approx(expected)  # the complement
    assert "communality" in ax.get_xlabel()


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
    assert not any("LinearErasure" in label for label in labels)
    assert {"1  PCA", "2  Fair"} <= set(labels)


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


def _text_boxes(fig):
    """Window extents of every shown title, axis label, tick label, point label and legend."""
    from fairpca.plotting import _renderer

    renderer = _renderer(fig)
    boxes = []

    def add(artist, what):
        if artist is not None and artist.get_visible():
            if hasattr(artist, "get_text") and not artist.get_text().strip():
                return
            boxes.append((what, artist.get_window_extent(renderer)))

    add(fig._suptitle, "suptitle")
    for legend in fig.legends:
        add(legend, "legend")
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        add(ax.title, "title")
        add(ax.xaxis.label, "xlabel")
        add(ax.yaxis.label, "ylabel")
        add(ax.get_legend(), "legend")
        for axis, shown in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            low, high = sorted(shown)
            for tick in axis.get_major_ticks():
                if low <= tick.get_loc() <= high:
                    add(tick.label1, "tick")
        for text in ax.texts:
            add(text, f"point {text.get_text()}")
    return boxes


def _assert_nothing_overlaps(fig):
    boxes = _text_boxes(fig)
    page = fig.bbox
    for what, box in boxes:
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, (what, box, page)
        assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, (what, box, page)
    for i, (what, box) in enumerate(boxes):
        for other, other_box in boxes[i + 1 :]:
            assert not box.overlaps(other_box), (what, other, box, other_box)
    return boxes


def _crowded_table(n_methods=10, n_groups=6):
    rng = np.random.default_rng(0)
    names = ["PCA", "MeanMatchingFairPCA", "MinMaxLossFairPCA", "ConvexFairPCA"]
    names += ["RobustFairPCA", "ParetoFairPCA", "MMDFairPCA", "StreamingFairPCA"]
    names += ["LinearErasure", "QuadraticErasure"]
    table = pd.DataFrame(index=names[:n_methods])
    # Three methods at one point (identical projections), the rest close together.
    table["explained_variance_ratio"] = np.r_[[0.4] * 3, 0.39 + 0.01 * rng.random(n_methods - 3)]
    table["demographic_parity_difference"] = np.r_[
        [0.2] * 3, 0.19 + 0.02 * rng.random(n_methods - 3)
    ]
    table["mmd2"] = np.r_[[0.1] * 3, 0.09 + 0.02 * rng.random(n_methods - 3)]
    for g in range(n_groups):
        table[f"reconstruction_error[a long group name {g}]"] = 1 + rng.random(n_methods)
    return table


def test_tradeoff_plot_numbers_every_point_without_overlaps():
    table = _crowded_table()
    fig = plot_tradeoff(table, ["demographic_parity_difference", "mmd2"])
    boxes = _assert_nothing_overlaps(fig)
    for ax in fig.axes:
        assert sorted(int(t.get_text()) for t in ax.texts) == list(range(1, 11))
    labels = fig.legends[0].get_texts()
    assert [t.get_text() for t in labels][:3] == [
        "1  PCA",
        "2  MeanMatchingFairPCA",
        "3  MinMaxLossFairPCA",
    ]
    assert sum(what == "legend" for what, _ in boxes) == 1


def test_group_errors_legend_is_beside_the_bars():
    fig = plot_group_errors(_crowded_table())
    _assert_nothing_overlaps(fig)
    (ax,) = fig.axes
    (legend,) = fig.legends
    renderer = fig.canvas.get_renderer()
    assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


def test_communality_shows_every_group_without_overlaps():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(3)
    s = np.repeat(["a", "b", "c", "d", "e", "f"], 40)
    X = rng.normal(size=(240, 5)) + (s == "c")[:, None] * [2.0, 0, 0, 0, 0]
    models = {"PCA": PCA(2).fit(X), "MeanMatchingFairPCA": PCA(3).fit(X)}
    fig = plot_communality(models, X, s)
    _assert_nothing_overlaps(fig)
    (ax,) = fig.axes
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [f"group {g}" for g in "abcdef"]
    colours = {tuple(p.get_facecolor()) for p in ax.patches}
    assert len(colours) == 6  # one bar set per group
    # Each (method, group) bar's length is the group's communality.
    ends = {}
    for patch in ax.patches:
        key = round(patch.get_y() + patch.get_height() / 2, 6)
        ends[key] = max(ends.get(key, 0.0), patch.get_x() + patch.get_width())
    assert len(ends) == 2 * 6
    for j, model in enumerate(models.values()):
        scores = model.transform(X)
        for i, g in enumerate("abcdef"):
            y = round(j + (i - 2.5) * 0.8 / 6, 6)
            expected = sum(
                np.corrcoef(scores[:, k], s == g)[0, 1] ** 2 for k in range(scores.shape[1])
            )
            assert ends[y] == pytest.approx(expected)


def test_group_errors_by_d_legend_is_outside():
    rows = [
        {"method": m, "d": d, "group": g, "error": 1.0 / d + (g == "b")}
        for m in ("PCA", "Fair", "Other", "Fourth")
        for d in (1, 2, 3)
        for g in ("a", "b", "c")
    ]
    fig = plot_group_errors_by_d(pd.DataFrame(rows))
    _assert_nothing_overlaps(fig)
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)


def test_tradeoff_curve_names_every_point_without_overlaps():
    from fairpca._curve import QUALITY

    rows = []
    settings = [("PCA", "")] + [("MeanMatchingFairPCA", f"mean_penalty={p}") for p in (0, 1, 10)]
    settings += [("ParetoFairPCA", f"disparity_ratio={r}") for r in (1, 2, 4, 8)]
    for i, (method, setting) in enumerate(settings):
        # The first two and the Pareto ratio 1 at PCA's point, as in the README's example.
        same = method == "PCA" or setting in ("mean_penalty=0", "disparity_ratio=1")
        dp = 0.2095 if same else 0.2 - 0.01 * i
        q = 0.4 if same else 0.39 - 0.004 * i
        rows.append(
            {
                "method": method,
                "setting": setting,
                "demographic_parity_difference": dp,
                "demographic_parity_difference_low": dp - 0.05,
                "demographic_parity_difference_high": dp + 0.05,
                QUALITY: q,
                f"{QUALITY}_low": q - 0.01,
                f"{QUALITY}_high": q + 0.01,
            }
        )
    curve = pd.DataFrame(rows)
    curve.attrs.update(metrics=["demographic_parity_difference"], confidence=0.95)
    fig = plot_tradeoff_curve(curve)
    _assert_nothing_overlaps(fig)
    (ax,) = fig.axes
    assert sorted(int(t.get_text()) for t in ax.texts) == list(range(1, len(settings) + 1))
    key = [t.get_text() for t in fig.legends[1].get_texts()]
    assert key[0] == "1  PCA" and key[2] == "3  MeanMatchingFairPCA mean_penalty=1"


def test_one_panel_figures_keep_their_title_and_legend_inside():
    from sklearn.decomposition import PCA

    rows = [
        {"method": "PCA", "d": d, "group": g, "error": 1.0 / d + g}
        for d in (1, 2, 3)
        for g in range(8)
    ]
    _assert_nothing_overlaps(plot_group_errors_by_d(pd.DataFrame(rows)))
    rng = np.random.default_rng(5)
    s = np.repeat([f"group with a long name {g}" for g in range(8)], 25)
    X = rng.normal(size=(200, 4))
    fig = plot_protected_biplot({"PCA": PCA(2).fit(X)}, X, s, n_features_shown=0)
    _assert_nothing_overlaps(fig)
    # Two panels (their titles under the figure's), two features at one arrow tip.
    X[:, 1] = X[:, 0] + 0.01 * rng.normal(size=200)
    models = {"PCA": PCA(2).fit(X), "PCA again": PCA(2).fit(X)}
    names = ["feature_0", "feature_1", "feature_2", "feature_3"]
    fig = plot_protected_biplot(models, X, s, feature_names=names)
    boxes = _assert_nothing_overlaps(fig)
    assert sum(what == "point feature_1" for what, _ in boxes) == 2
