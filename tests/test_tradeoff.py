"""Trade-off curves: the frontier, selection, bootstrap coverage and the held-out numbers."""

import dataclasses
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import PCA

import fairpca
from fairpca import MeanMatchingFairPCA, ParetoFairPCA
from fairpca.compare import make_split
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import explained_variance_ratio, reconstruction_error_gap
from fairpca.tradeoff import bootstrap_metrics, frontier_mask, select, tradeoff_curve


def _brute_force_frontier(quality, costs):
    keep = []
    for i in range(len(quality)):
        if np.isnan(quality[i]) or np.isnan(costs[i]).any():
            keep.append(False)
            continue
        dominated = False
        for j in range(len(quality)):
            if j == i or np.isnan(quality[j]) or np.isnan(costs[j]).any():
                continue
            no_worse = quality[j] >= quality[i] and all(costs[j] <= costs[i])
            better = quality[j] > quality[i] or any(costs[j] < costs[i])
            dominated |= no_worse and better
        keep.append(not dominated)
    return np.array(keep)


@pytest.mark.parametrize("seed", range(5))
def test_frontier_is_exactly_the_non_dominated_set(seed):
    rng = np.random.default_rng(seed)
    quality = rng.integers(0, 5, size=40).astype(float)  # ties on purpose
    costs = rng.integers(0, 5, size=(40, 2)).astype(float)
    quality[3] = np.nan
    costs[7, 1] = np.nan
    np.testing.assert_array_equal(
        frontier_mask(quality, costs), _brute_force_frontier(quality, costs)
    )


def _constructed_curve():
    rows = [
        ("a", 0.90, 0.20, 0.30),
        ("b", 0.80, 0.04, 0.06),
        ("c", 0.70, 0.03, 0.04),
        ("d", 0.85, 0.049, 0.051),
    ]
    curve = pd.DataFrame(
        rows,
        columns=[
            "method",
            "explained_variance_ratio",
            "demographic_parity_difference",
            "demographic_parity_difference_high",
        ],
    )
    curve["estimator"] = [MeanMatchingFairPCA(mean_penalty=float(i)) for i in range(4)]
    return curve


def test_select_returns_the_best_variance_setting_within_the_limit():
    curve = _constructed_curve()
    by_estimate = select(curve, {"demographic_parity_difference": 0.05}, bound="estimate")
    assert by_estimate.mean_penalty == 3.0  # d: 0.85 with estimate 0.049
    by_upper = select(curve, {"demographic_parity_difference": 0.05})
    assert by_upper.mean_penalty == 2.0  # d's upper end 0.051 is over: c
    assert not hasattr(by_upper, "components_")  # a configured, unfitted clone
    assert by_upper is not curve.loc[2, "estimator"]
    with pytest.raises(
        ValueError, match=r"lowest upper values: demographic_parity_difference 0.04"
    ):
        select(curve, {"demographic_parity_difference": 0.01})
    with pytest.raises(ValueError, match="no column 'mmd2_high'"):
        select(curve, {"mmd2": 0.01})
    with pytest.raises(ValueError, match="bound must be"):
        select(curve, {"demographic_parity_difference": 0.05}, bound="lower")


def test_select_breaks_ties_toward_the_fairer_then_the_simpler_setting():
    # PCA, its copy under a fair method's name and a fairer setting of the same variance.
    curve = pd.DataFrame(
        {
            "method": ["PCA", "MeanMatchingFairPCA", "ParetoFairPCA", "MeanMatchingFairPCA"],
            "explained_variance_ratio": [0.5, 0.5 * (1 + 1e-12), 0.5, 0.4],
            "demographic_parity_difference": [0.2, 0.2, 0.2, 0.05],
            "demographic_parity_difference_low": [0.1, 0.1, 0.1, 0.02],
            "demographic_parity_difference_high": [0.29, 0.29, 0.29, 0.08],
        }
    )
    curve["estimator"] = [
        PCA(2),
        MeanMatchingFairPCA(mean_penalty=0.0),
        ParetoFairPCA(disparity_ratio=1.0),
        MeanMatchingFairPCA(mean_penalty=np.inf),
    ]
    from fairpca.tradeoff import IndistinguishableFromPCAWarning

    # A three-way tie on variance and fairness: the simpler (group-blind) PCA, said to be PCA.
    with pytest.warns(IndistinguishableFromPCAWarning, match=r"\(PCA\) is not shown to differ"):
        assert isinstance(select(curve, {"demographic_parity_difference": 0.3}), PCA)
    # Without PCA: the first of the tied fair settings in the curve's order.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chosen = select(curve.iloc[1:], {"demographic_parity_difference": 0.3})
    assert isinstance(chosen, MeanMatchingFairPCA) and chosen.mean_penalty == 0.0
    # A fairer estimate wins a tie on variance.
    tied = curve.copy()
    tied.loc[2, "demographic_parity_difference"] = 0.19
    with pytest.warns(IndistinguishableFromPCAWarning, match="ParetoFairPCA"):
        chosen = select(tied, {"demographic_parity_difference": 0.3}, bound="estimate")
    assert isinstance(chosen, ParetoFairPCA)
    # A setting whose interval is clear of PCA's is chosen without the warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chosen = select(curve, {"demographic_parity_difference": 0.2})
    assert chosen.mean_penalty == np.inf


def test_bootstrap_intervals_contain_their_estimate():
    # Two groups of equal law: the absolute gaps are near 0, where percentile intervals
    # of the resampled absolute values lie above the estimate.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    s = np.repeat([0, 1], 60)
    y = (X[:, 0] > 0).astype(int)
    pca = PCA(n_components=2).fit(X)
    predicted = (pca.transform(X)[:, 0] > 0).astype(int)
    metrics = ["reconstruction_error_gap", "max_marginal_loss", "demographic_parity_difference"]
    for seed in range(5):
        values = bootstrap_metrics(
            pca, X, s, metrics, y=y, predicted=predicted, n_bootstrap=30, random_state=seed
        )
        for name, (estimate, low, high) in values.items():
            assert low <= estimate <= high, (name, estimate, low, high)
            assert low >= 0


class _SamePCA(PCA):
    """PCA under another name: the same projection as a second setting of a curve."""


def test_settings_with_the_same_projection_get_the_same_intervals():
    X, s, y = make_gaussian_groups(n_samples=300, random_state=2, return_target=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = tradeoff_curve(
            X,
            s,
            y,
            estimators={
                "PCA": PCA(n_components=2),
                "copy": _SamePCA(n_components=2),
                "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=2),
            },
            param_grids={"MeanMatchingFairPCA": {"mean_penalty": [0.0]}},
            metrics=["reconstruction_error_gap", "demographic_parity_difference"],
            n_bootstrap=20,
            random_state=0,
        )
    columns = [c for c in curve if c.endswith(("_low", "_high"))]
    assert len(columns) == 6
    # The same projection: the same resamples give exactly the same interval.
    pd.testing.assert_series_equal(curve.loc[0, columns], curve.loc[1, columns], check_names=False)
    # mean_penalty=0 is PCA's projection, to rounding: the same intervals, to rounding.
    np.testing.assert_allclose(
        curve.loc[2, columns].to_numpy(float), curve.loc[0, columns].to_numpy(float), rtol=1e-8
    )


@pytest.mark.slow  # 29 settings of the README's example (about 15 s)
def test_select_on_the_readme_example_picks_a_fair_setting_or_says_it_is_pca():
    from fairpca.tradeoff import IndistinguishableFromPCAWarning

    X, s, y = make_gaussian_groups(random_state=0, return_target=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = tradeoff_curve(
            X, s, y, metrics=["mmd2", "demographic_parity_difference"], n_bootstrap=50
        )
    pca_like = curve["method"].isin(["PCA"]) | (curve["setting"] == "mean_penalty=0")
    pca_like |= curve["setting"] == "disparity_ratio=1"
    columns = ["demographic_parity_difference_low", "demographic_parity_difference_high"]
    np.testing.assert_allclose(
        curve.loc[pca_like, columns].to_numpy(float),
        np.tile(curve.loc[0, columns].to_numpy(float), (3, 1)),
        rtol=1e-8,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        best = select(curve, {"demographic_parity_difference": 0.3})
    said = [w for w in caught if issubclass(w.category, IndistinguishableFromPCAWarning)]
    row = curve[curve["estimator"].map(lambda e: e.get_params() == best.get_params())]
    fair = (
        not isinstance(best, PCA)
        and row["demographic_parity_difference"].iloc[0]
        < (curve.loc[0, "demographic_parity_difference"])
    )
    assert fair or said
    assert not (isinstance(best, PCA) and not said)


@pytest.mark.slow  # 200 trials of 200 bootstrap resamples
def test_bootstrap_intervals_cover_the_true_gap():
    """Known Gaussian groups and a fixed projection: the gap has a closed form."""
    rng = np.random.default_rng(0)
    p, n_per_group = 4, 300
    means = [np.zeros(p), np.array([1.0, -0.5, 0.5, 0.0])]
    scales = [np.diag([2.0, 1.0, 0.5, 0.3]), np.diag([1.0, 1.5, 1.0, 0.8])]
    pca = PCA(n_components=2).fit(rng.normal(size=(500, p)) @ np.diag([2, 1.5, 1, 0.5]))
    P = pca.components_.T @ pca.components_
    residual = np.eye(p) - P

    def true_error(mean, scale):
        cov = scale @ scale.T
        shift = mean - pca.mean_
        return np.trace(residual @ (cov + np.outer(shift, shift)) @ residual)

    truth = abs(true_error(means[0], scales[0]) - true_error(means[1], scales[1]))
    covered, trials = 0, 200
    for _ in range(trials):
        X = np.vstack(
            [
                m + rng.normal(size=(n_per_group, p)) @ S.T
                for m, S in zip(means, scales, strict=True)
            ]
        )
        s = np.repeat([0, 1], n_per_group)
        values = bootstrap_metrics(
            pca, X, s, ["reconstruction_error_gap"], n_bootstrap=200, random_state=rng
        )
        _, low, high = values["reconstruction_error_gap"]
        covered += low <= truth <= high
    assert covered / trials >= 0.90, covered / trials


@pytest.fixture(scope="module")
def small_curve():
    X, s, y = make_gaussian_groups(n_samples=600, random_state=1, return_target=True)
    estimators = {
        "PCA": PCA(n_components=2),
        "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=2),
        "ParetoFairPCA": ParetoFairPCA(n_components=2),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = tradeoff_curve(
            X,
            s,
            y,
            estimators=estimators,
            param_grids={"ParetoFairPCA": {"disparity_ratio": [1.0, 0.2]}},
            metrics=["reconstruction_error_gap", "mmd2", "demographic_parity_difference"],
            n_bootstrap=30,
            random_state=3,
        )
    return X, s, y, curve


def test_curve_rows_are_the_held_out_metrics_of_each_setting(small_curve):
    X, s, y, curve = small_curve
    assert list(curve["method"]) == ["PCA"] + ["MeanMatchingFairPCA"] * 6 + ["ParetoFairPCA"] * 2
    assert curve.attrs["n_bootstrap"] == 30 and curve.attrs["confidence"] == 0.95
    split = make_split(X, s, y, random_state=3)
    for i in (0, 4, 8):
        est = fairpca_clone_fit(curve.loc[i, "estimator"], split)
        assert curve.loc[i, "explained_variance_ratio"] == pytest.approx(
            explained_variance_ratio(split.X_test, est), rel=1e-10
        )
        assert curve.loc[i, "reconstruction_error_gap"] == pytest.approx(
            reconstruction_error_gap(split.X_test, split.s_test, est), rel=1e-10
        )
        # The downstream gap, by hand: a logistic regression of the training representation.
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(max_iter=1000).fit(est.transform(split.X_train), split.y_train)
        predicted = model.predict(est.transform(split.X_test))
        rates = [predicted[split.s_test == g].mean() for g in np.unique(split.s_test)]
        assert curve.loc[i, "demographic_parity_difference"] == pytest.approx(
            max(rates) - min(rates), abs=1e-12
        )
    for metric in ("explained_variance_ratio", "mmd2", "demographic_parity_difference"):
        assert (curve[f"{metric}_low"] <= curve[f"{metric}_high"]).all()
    costs = curve[["reconstruction_error_gap", "mmd2", "demographic_parity_difference"]]
    np.testing.assert_array_equal(
        curve["on_frontier"],
        _brute_force_frontier(curve["explained_variance_ratio"].to_numpy(), costs.to_numpy()),
    )
    # The mean-matching sweep moves from PCA to exact mean matching.
    penalties = [e.mean_penalty for e in curve.loc[1:6, "estimator"]]
    assert penalties == [0.0, 0.3, 1.0, 3.0, 10.0, np.inf]
    assert curve.loc[1, "explained_variance_ratio"] == pytest.approx(
        curve.loc[0, "explained_variance_ratio"], rel=1e-8
    )


def fairpca_clone_fit(estimator, split):
    from sklearn.base import clone

    est = clone(estimator)
    if isinstance(est, PCA):
        return est.fit(split.X_train)
    return est.fit(split.X_train, sensitive_features=split.s_train)


def test_curve_is_reproducible_and_parallel_gives_the_same(small_curve):
    X, s, y, curve = small_curve
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = tradeoff_curve(
            X,
            s,
            y,
            estimators={"PCA": PCA(n_components=2), "MeanMatchingFairPCA": MeanMatchingFairPCA()},
            metrics=["reconstruction_error_gap", "mmd2", "demographic_parity_difference"],
            n_bootstrap=30,
            random_state=3,
            n_jobs=2,
        )
    numeric = [c for c in again.columns if c.endswith(("_low", "_high", "ratio"))]
    pd.testing.assert_frame_equal(again.loc[:6, numeric], curve.loc[:6, numeric])


def test_bad_requests_are_refused():
    X, s = make_gaussian_groups(n_samples=200, random_state=0)
    with pytest.raises(ValueError, match="need a binary target"):
        tradeoff_curve(X, s, metrics=["demographic_parity_difference"])
    with pytest.raises(ValueError, match="unknown"):
        tradeoff_curve(X, s, metrics=["accuracy"])
    with pytest.raises(ValueError, match="not in estimators"):
        tradeoff_curve(X, s, estimators={"PCA": PCA(2)}, param_grids={"MMD": {"tau": [1]}})
    with pytest.raises(TypeError, match="not a linear projection"):
        tradeoff_curve(X, s, estimators={"erasure": fairpca.LinearErasure()}, n_bootstrap=2)


def test_default_grid_names_every_method_knob():
    from fairpca.tradeoff import DEFAULT_GRIDS

    for name, grid in DEFAULT_GRIDS.items():
        cls = getattr(fairpca, name)
        assert set(grid) <= set(cls().get_params()), name
    assert list(itertools.chain(*DEFAULT_GRIDS["MeanMatchingFairPCA"].values()))[-1] == np.inf


def test_tradeoff_panel_marks_the_setting_that_serves_a_group_worse(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from fairpca.cli import cli
    from fairpca.compare import WORSE_OFF_COLUMN
    from test_compare import _ServesTheLargestGroup, _small_group_data, _use_methods

    _use_methods(monkeypatch, [_ServesTheLargestGroup])
    X, s = _small_group_data()
    pd.DataFrame(X, columns=list("abcd")).assign(group=s).to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "curve"
    args = ["tradeoff", "--data", str(tmp_path / "d.csv"), "--sensitive", "group", "-d", "2"]
    args += ["--n-bootstrap", "5", "--metric", "reconstruction_error_gap", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    curve = pd.read_csv(out / "tradeoff.csv", keep_default_na=False)
    assert dict(zip(curve["method"], curve[WORSE_OFF_COLUMN], strict=True)) == {
        "PCA": "none",
        "_ServesTheLargestGroup": "small",
    }
    losses = pd.read_csv(out / "group_losses.csv", keep_default_na=False)
    assert losses.loc[losses["worse_off"], "group"].tolist() == ["small"]
    html = (out / "report.html").read_text()
    assert "Groups against PCA, per setting" in html
    panel = html.split('<table class="group-panel">')[1].split("</table>")[0]
    row = panel.split("<th>_ServesTheLargestGroup</th>")[1].split("</tr>")[0]
    assert row.count('class="worse-off"') == 1 and row.split("<td")[2].count("▲") == 1


def test_a_metric_added_to_the_registry_is_swept_by_the_curve(monkeypatch):
    # Adding a metric is its function and its row: the curve offers and bootstraps it.
    from fairpca.metrics._registry import METRICS, Metric

    def toy(evaluation):  # the share of rows of the first group: needs only the rows
        return float(np.mean(evaluation.codes == 0))

    row = Metric(
        "toy_share",
        toy,
        "share of the first group",
        "lower",
        "fraction",
        fairness=True,
        bootstrap=True,
    )
    monkeypatch.setitem(METRICS, "toy_share", row)
    X, s, y = make_gaussian_groups(n_samples=200, random_state=0, return_target=True)
    curve = tradeoff_curve(
        X, s, estimators={"PCA": PCA(2)}, metrics=["toy_share"], n_bootstrap=5, random_state=0
    )
    for column in ("toy_share", "toy_share_low", "toy_share_high"):
        assert column in curve
    assert curve.loc[0, "toy_share"] == pytest.approx(np.mean(make_split(X, s).s_test == s.min()))
    # A registry row that needs the target is refused without one, by its needs.
    monkeypatch.setitem(METRICS, "toy_share", dataclasses.replace(row, needs=frozenset({"y"})))
    with pytest.raises(ValueError, match="need a binary target"):
        tradeoff_curve(X, s, estimators={"PCA": PCA(2)}, metrics=["toy_share"], n_bootstrap=5)
    # Rows not marked for the bootstrap are not offered.
    monkeypatch.setitem(METRICS, "toy_share", dataclasses.replace(row, bootstrap=False))
    with pytest.raises(ValueError, match="toy_share"):
        tradeoff_curve(X, s, estimators={"PCA": PCA(2)}, metrics=["toy_share"], n_bootstrap=5)


class _KeepsTheLeastVariance(PCA):
    """A projection on the last principal components, saying its components are tied."""

    def fit(self, X, y=None):
        full = PCA().fit(X)
        self.mean_, self.components_ = full.mean_, full.components_[-self.n_components :]
        self.n_components_ = self.n_components
        self.ambiguous_ = True
        return self


def test_curve_flags_near_single_class_undetermined_and_low_variance_settings():
    X, s = make_gaussian_groups(n_samples=400, random_state=0)
    y = (np.arange(len(s)) % 20 == 0).astype(int)  # 5 % positives, unrelated to X: all negative
    curve = tradeoff_curve(
        X,
        s,
        y,
        estimators={"PCA": PCA(n_components=2), "last": _KeepsTheLeastVariance(n_components=2)},
        metrics=["demographic_parity_difference"],
        n_bootstrap=5,
        random_state=0,
    )
    assert (curve["positive_rate"] < 0.02).all()
    assert curve.set_index("method")["flags"].to_dict() == {
        "PCA": "near-single-class",
        "last": "near-single-class undetermined low-variance",
    }
    from fairpca._reports import curve_text

    assert "low-variance" in curve_text(curve)


def _per_resample_intervals(projection, X, s, metrics, y, predicted, bandwidth, seed, n):
    """The intervals of the per-resample code: every registry function on each resample."""
    from fairpca._validation import check_sensitive_features
    from fairpca.metrics._registry import METRICS, Evaluation
    from fairpca.tradeoff import _stratified_resamples, _symmetric_interval

    names = ["explained_variance_ratio", *metrics]

    def evaluate(rows):
        ev = Evaluation(
            X[rows], s[rows], projection, y=y[rows], predicted=predicted[rows], bandwidth=bandwidth
        )
        return {name: METRICS[name].function(ev) for name in names}

    codes = check_sensitive_features(s, len(s), min_groups=2)[1]
    rng = np.random.default_rng(seed)
    draws = [evaluate(rows) for rows in _stratified_resamples(codes, n, rng)]
    estimate = evaluate(np.arange(len(s)))
    return {
        name: _symmetric_interval(estimate[name], [d[name] for d in draws], 0.95) for name in names
    }


@pytest.mark.parametrize("as_array", [False, True])
def test_resampled_metrics_equal_the_per_resample_registry_functions(monkeypatch, as_array):
    # The bootstrap computes most metrics on every resample at once (count-weighted sums,
    # one kernel matrix); its intervals are those of the registry's functions evaluated
    # on each resample's rows, to rounding. Three groups, small blocks and chunks so
    # that the kernel's off-diagonal blocks and several chunks of resamples are used.
    import fairpca.tradeoff as tradeoff

    monkeypatch.setattr(tradeoff, "_KERNEL_BLOCK", 17)
    monkeypatch.setattr(tradeoff, "_COUNT_ENTRIES", 7 * 90)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 5)) + np.repeat([0.0, 0.5, 1.0], 30)[:, None]
    s = np.repeat(["a", "b", "c"], 30)
    y = (X[:, 0] + rng.normal(size=90) > 0.5).astype(int)
    pca = PCA(n_components=2).fit(X[::2])
    predicted = (pca.transform(X)[:, 0] > 0).astype(int)
    metrics = list(tradeoff.FAIRNESS_METRICS)
    projection = pca.components_ if as_array else pca
    values = bootstrap_metrics(
        projection,
        X,
        s,
        metrics,
        y=y,
        predicted=predicted,
        bandwidth=1.3,
        n_bootstrap=25,
        random_state=4,
    )
    expected = _per_resample_intervals(projection, X, s, metrics, y, predicted, 1.3, 4, 25)
    assert set(values) == set(expected)
    for name, interval in expected.items():
        np.testing.assert_allclose(values[name], interval, rtol=1e-9, atol=1e-12, err_msg=name)


def test_tiny_curve_has_the_intervals_of_the_per_resample_code(monkeypatch):
    # The same curve with every metric evaluated resample by resample (the code before
    # the counts: nothing left to _resampled_metrics) has the same intervals.
    import fairpca.tradeoff as tradeoff

    X, s, y = make_gaussian_groups(n_samples=200, random_state=3, return_target=True)
    metrics = ["reconstruction_error_gap", "mmd2", "demographic_parity_difference"]
    options = {
        "estimators": {"PCA": PCA(n_components=2), "mean": MeanMatchingFairPCA(n_components=2)},
        "param_grids": {"mean": {"mean_penalty": [0.0, 1.0]}},
        "metrics": metrics,
        "n_bootstrap": 20,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = tradeoff_curve(X, s, y, **options)
        monkeypatch.setattr(tradeoff, "_resampled_metrics", lambda *args: (None, []))
        looped = tradeoff_curve(X, s, y, **options)
    columns = [
        f"{m}{end}" for m in ["explained_variance_ratio", *metrics] for end in ("", "_low", "_high")
    ]
    np.testing.assert_allclose(
        curve[columns].to_numpy(float), looped[columns].to_numpy(float), rtol=1e-9, atol=1e-12
    )


def test_downstream_baselines_are_reference_rows_of_the_report(tmp_path):
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    from fairpca import _reports
    from fairpca.metrics._classifier import BASELINES

    X, s, y = make_gaussian_groups(n_samples=300, random_state=2, return_target=True)
    y = (X[:, 0] > np.quantile(X[:, 0], 0.7)).astype(int)  # majority rate about 0.7
    metrics = ["reconstruction_error_gap", "demographic_parity_difference"]
    curve = tradeoff_curve(
        X,
        s,
        y,
        estimators={"PCA": PCA(2), "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=2)},
        param_grids={"MeanMatchingFairPCA": {"mean_penalty": [0.0, 10.0]}},
        metrics=metrics,
        n_bootstrap=20,
        random_state=0,
    )
    # The returned frame keeps only settings; the baselines ride in attrs.
    assert not set(curve["method"]) & set(BASELINES)
    baselines = curve.attrs["baselines"]
    assert set(baselines) == set(BASELINES)

    split = make_split(X, s, y, test_size=0.3, random_state=0)
    y_test = np.asarray(split.y_test)
    majority = max(y_test.mean(), 1 - y_test.mean())
    assert baselines[BASELINES[0]]["accuracy"] == pytest.approx(majority)
    assert baselines[BASELINES[0]]["demographic_parity_difference"] == pytest.approx(0.0)
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    direct = cross_val_predict(
        clone(LogisticRegression(max_iter=1000)), split.X_test, y_test, cv=folds
    )
    assert baselines[BASELINES[1]]["accuracy"] == pytest.approx(np.mean(direct == y_test))

    table = _reports.curve_table(curve)
    rows = table[table["status"] == "baseline"]
    assert list(rows.index) == [(name, "") for name in BASELINES]
    assert not rows["on_frontier"].astype(bool).any()
    assert (rows["note"] == _reports.BASELINE_NOTE).all()
    assert "baseline: majority class" in _reports.curve_text(curve)

    settings = [repr(est) for est in curve["estimator"]]
    for limit in (0.0, 0.05, 1.0, 10.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                chosen = select(curve, {"demographic_parity_difference": limit}, bound="estimate")
            except ValueError:
                continue
        assert repr(chosen) in settings  # a setting's estimator, never a baseline

    _reports.write_tradeoff_files(curve, tmp_path, source="synthetic")
    written = pd.read_csv(tmp_path / "tradeoff.csv")
    assert set(BASELINES) <= set(written["method"])
    assert not written.loc[written["method"].isin(BASELINES), "on_frontier"].astype(bool).any()
    html = (tmp_path / "report.html").read_text()
    assert "baseline: majority class" in html and "baseline: all features" in html
    assert _reports.BASELINE_NOTE in html
