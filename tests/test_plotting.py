import itertools

import numpy as np
import pandas as pd
import pytest

from fairpca.plotting import _pareto_mask, plot_group_errors, plot_tradeoff


def test_pareto_mask_matches_brute_force():
    rng = np.random.default_rng(0)
    quality, unfairness = rng.random(30), rng.random(30)
    quality[5], unfairness[5] = quality[4], unfairness[4]  # a tie stays on the front
    expected = np.ones(30, dtype=bool)
    for i, j in itertools.permutations(range(30), 2):
        if (
            quality[j] >= quality[i]
            and unfairness[j] <= unfairness[i]
            and (quality[j] > quality[i] or unfairness[j] < unfairness[i])
        ):
            expected[i] = False
    np.testing.assert_array_equal(_pareto_mask(quality, unfairness), expected)


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
