import time
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from fairpca._base import FairPCABase
from fairpca.cli import cli
from fairpca.compare import compare_methods, every_method_table
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import group_reconstruction_error


class _Balanced(FairPCABase):
    """Test-only method: top eigenvectors of the average of the group second moments."""

    def __init__(self, n_components=2):
        self.n_components = n_components

    def _fit_components(self, X, codes, moments, y, d):
        _, vectors = np.linalg.eigh(moments.second_moment().mean(axis=0))
        return vectors[:, ::-1][:, :d].T, None


class _Slow(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        time.sleep(60)
        return super()._fit_components(X, codes, moments, y, d)


class _Warns(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        warnings.warn("stopped early (tolerance 0.1)", ConvergenceWarning, stacklevel=2)
        return super()._fit_components(X, codes, moments, y, d)


class _Fails(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        raise np.linalg.LinAlgError("solver broke")


class _NeedsExtra(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        raise ImportError('needs cvxpy: pip install "fairpca[sdp]"')


class _StopsEarly(_Balanced):
    """Test-only method whose solver reports that it stopped before converging."""

    def _fit_components(self, X, codes, moments, y, d):
        self.n_iter_, self.converged_ = 3, False
        warnings.warn("stopped after 3 iterations (gap 0.1)", ConvergenceWarning, stacklevel=2)
        return super()._fit_components(X, codes, moments, y, d)


def _use_methods(monkeypatch, classes):
    """Compare only ``classes`` (besides PCA)."""
    monkeypatch.setattr(
        "fairpca._methods.all_estimators",
        lambda linear_projection: list(classes) if linear_projection else [],
    )


@pytest.fixture
def data():
    return make_gaussian_groups(n_samples=300, random_state=3, return_target=True)


def test_budget_stops_a_slow_method_and_keeps_the_others(monkeypatch, data):
    _use_methods(monkeypatch, [_Slow, _Balanced])
    X, s, y = data
    messages = []
    start = time.perf_counter()
    comparison = compare_methods(X, s, y, time_budget=1.5, progress=messages.append)
    # The 60-second fit was cut off (not waited for).
    assert time.perf_counter() - start < 30
    assert comparison.stopped == {"_Slow": 1.5}
    assert list(comparison.table.index) == ["PCA", "_Balanced"]
    assert "[2/3] _Slow stopped at the time budget of 1.5 s" in messages
    # A fit in a child process gives the same estimator as one in this process.
    _use_methods(monkeypatch, [_Balanced])
    plain = compare_methods(X, s, y)
    np.testing.assert_array_equal(
        comparison.estimators["_Balanced"].components_, plain.estimators["_Balanced"].components_
    )


def test_budget_child_reissues_warnings_and_reraises_errors(monkeypatch, data):
    X, s, y = data
    _use_methods(monkeypatch, [_Warns])
    with pytest.warns(ConvergenceWarning, match="stopped early"):
        comparison = compare_methods(X, s, y, time_budget=60)
    assert "_Warns" in comparison.estimators
    # An error in the child is the method's recorded failure, as in this process.
    _use_methods(monkeypatch, [_Fails, _Balanced])
    comparison = compare_methods(X, s, y, time_budget=60)
    assert comparison.failed == {"_Fails": "LinAlgError: solver broke"}
    assert list(comparison.table.index) == ["PCA", "_Balanced"]


class _Crashes(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        raise RuntimeError("ADMM found no point\nsecond line of detail")


@pytest.mark.parametrize("budget", [None, 60])
def test_a_failing_method_is_recorded_and_the_others_go_on(monkeypatch, data, budget):
    _use_methods(monkeypatch, [_Crashes, _Balanced, _NeedsExtra])
    X, s, y = data
    messages = []
    comparison = compare_methods(X, s, y, time_budget=budget, progress=messages.append)
    assert list(comparison.table.index) == ["PCA", "_Balanced"]
    assert comparison.failed == {"_Crashes": "RuntimeError: ADMM found no point"}
    assert any("[2/4] _Crashes FAILED after" in m for m in messages)
    every = every_method_table(comparison)
    # Every method asked for, then the downstream baselines (majority class, all features).
    baselines = ["baseline: majority class", "baseline: all features"]
    assert list(every.index) == ["PCA", "_Crashes", "_Balanced", "_NeedsExtra", *baselines]
    assert every["status"].to_dict() == {
        "PCA": "fitted",
        "_Crashes": "failed",
        "_Balanced": "fitted",
        "_NeedsExtra": "unavailable",
        **dict.fromkeys(baselines, "baseline"),
    }
    majority = every.loc["baseline: majority class"]
    assert majority["demographic_parity_difference"] == 0
    assert majority["accuracy"] == pytest.approx(
        max(np.mean(comparison.split.y_test), 1 - np.mean(comparison.split.y_test)), abs=0.02
    )
    assert np.isnan(float(every.loc["baseline: all features", "explained_variance_ratio"]))
    assert np.isnan(float(every.loc["_Crashes", "explained_variance_ratio"]))
    assert every.loc["_Balanced", "explained_variance_ratio"] == pytest.approx(
        comparison.table.loc["_Balanced", "explained_variance_ratio"]
    )


def test_cli_writes_failures_into_every_output_and_exits_zero(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Crashes, _Balanced])
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["compare", "-d", "1", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "Failed: _Crashes: RuntimeError: ADMM found no point" in result.output
    table = pd.read_csv(out / "comparison.csv", index_col="method")
    assert table.loc["_Crashes", "status"] == "failed"
    assert table.loc["_Crashes", "reason"] == "RuntimeError: ADMM found no point"
    for name in ("comparison.md", "report.html"):
        text = (out / name).read_text()
        assert "_Crashes" in text and "ADMM found no point" in text, name


def test_cli_exits_non_zero_with_the_reasons_when_no_fair_method_finished(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Crashes, _NeedsExtra])
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["compare", "-d", "1", "--output", str(out)])
    assert result.exit_code == 1
    assert "no fair method could be fitted" in result.output
    assert "_Crashes: RuntimeError: ADMM found no point" in result.output
    assert "_NeedsExtra: needs cvxpy" in result.output
    assert not out.exists()


@pytest.mark.parametrize("budget", [0, -1.0, float("nan"), float("inf"), "10", True])
def test_bad_budget_is_refused_before_any_fit(monkeypatch, data, budget):
    _use_methods(monkeypatch, [_Slow])
    X, s, y = data
    with pytest.raises((ValueError, TypeError), match="time_budget"):
        compare_methods(X, s, y, time_budget=budget)


def test_cli_reports_progress_times_and_the_stopped_method(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Balanced, _Slow])
    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli, ["compare", "--time-budget", "1", "-d", "1", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    for line in ("[1/3] PCA fitting ...", "[2/3] _Balanced done in ", "[3/3] _Slow stopped"):
        assert line in result.output
    assert "Stopped at the time budget of 1 s per method: _Slow" in result.output
    assert (
        "Stopped at the time budget of 1 s per method: \\_Slow"  # Markdown-escaped
        in (out / "comparison.md").read_text()
    )
    table = pd.read_csv(out / "comparison.csv", index_col="method")
    assert list(table.columns[-5:]) == ["converged", "fit_seconds", "flags", "status", "reason"]
    assert table.loc["_Slow", "status"] == "stopped"
    assert table.loc["_Slow", "reason"] == "stopped at the time budget of 1 s"
    result = CliRunner().invoke(cli, ["compare", "--time-budget", "0"])
    assert result.exit_code == 2 and "--time-budget" in result.output


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_compare_reports_methods_that_did_not_converge(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Balanced, _StopsEarly])
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["compare", "--output", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "comparison.csv", index_col="method")
    table = table[table["status"] != "baseline"]
    assert table["converged"].to_dict() == {"PCA": True, "_Balanced": True, "_StopsEarly": False}
    assert "converged: PCA yes, _Balanced yes, _StopsEarly NO" in result.output
    assert "Did not converge: _StopsEarly (" in result.output
    md = (out / "comparison.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| method |"))
    assert header.endswith("| converged | fit\\_seconds | flags | status | reason |")
    assert md.count("Did not converge: \\_StopsEarly (") == 1
    # Without such a method there is no note.
    _use_methods(monkeypatch, [_Balanced])
    result = CliRunner().invoke(cli, ["compare"])
    assert result.exit_code == 0, result.output
    assert "converged: PCA yes, _Balanced yes" in result.output
    assert "Did not converge" not in result.output


def test_compare_fits_every_fair_estimator(monkeypatch):
    _use_methods(monkeypatch, [_Balanced, _NeedsExtra])
    X, s, y = make_gaussian_groups(n_samples=400, random_state=2, return_target=True)
    comparison = compare_methods(X, s, y, n_components=2, random_state=0)
    table, unavailable = comparison.table, comparison.unavailable
    assert list(table.index) == ["PCA", "_Balanced"]
    assert unavailable == {"_NeedsExtra": 'needs cvxpy: pip install "fairpca[sdp]"'}
    # The fair row is the metric of an estimator fitted with the groups of the training split.
    X_tr, X_te, s_tr, s_te = train_test_split(X, s, test_size=0.3, stratify=s, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    est = _Balanced(n_components=2).fit(scaler.transform(X_tr), sensitive_features=s_tr)
    expected = group_reconstruction_error(scaler.transform(X_te), s_te, est)
    for g, value in expected.items():
        assert table.loc["_Balanced", f"reconstruction_error[{g}]"] == pytest.approx(value)

    result = CliRunner().invoke(cli, ["compare"])
    assert result.exit_code == 0, result.output
    assert "Not available: _NeedsExtra: needs cvxpy" in result.output


def test_cli_output_is_checked_before_computing_and_written_whole(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Balanced])
    fits = []
    original = _Balanced._fit_components
    monkeypatch.setattr(
        _Balanced, "_fit_components", lambda self, *a: fits.append(1) or original(self, *a)
    )
    out = tmp_path / "report"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    # A non-empty folder needs --force, and nothing is fitted before saying so.
    result = CliRunner().invoke(cli, ["compare", "-d", "1", "--output", str(out)])
    assert result.exit_code == 2 and "pass --force" in result.output and fits == []
    # A path below a file cannot be created: refused before computing.
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = CliRunner().invoke(cli, ["compare", "--output", str(blocker / "out")])
    assert result.exit_code == 2 and "is a file" in result.output and fits == []
    # A failure while writing leaves the folder as it was: no partial report.
    monkeypatch.setattr("fairpca.plotting.plot_communality", _raise_disk_full)
    result = CliRunner().invoke(cli, ["compare", "-d", "1", "--force", "--output", str(out)])
    assert result.exit_code == 1 and "could not write to" in result.output
    assert "Traceback" not in result.output
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    monkeypatch.undo()
    _use_methods(monkeypatch, [_Balanced])
    result = CliRunner().invoke(cli, ["compare", "-d", "1", "--force", "--output", str(out)])
    assert result.exit_code == 0, result.output
    # --force replaces the folder whole: the earlier file is gone.
    written = {p.name for p in out.iterdir()}
    assert {"comparison.csv", "comparison.md", "communality.png"} <= written
    assert "mine.txt" not in written


def _raise_disk_full(*args, **kwargs):
    raise OSError(28, "No space left on device (injected by the test)")


def test_warnings_are_one_plain_line_and_refits_report_convergence(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Balanced, _StopsEarly])
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["compare", "--output", str(out)])
    assert result.exit_code == 0, result.output
    # The command line formats every warning as one plain line (pytest records them here).
    from fairpca.cli import _one_line_warning

    assert warnings.formatwarning is _one_line_warning
    line = warnings.formatwarning("stopped (gap 0.1)", ConvergenceWarning, "/x/mmd.py", 12, "code")
    assert line == "ConvergenceWarning: stopped (gap 0.1)\n"
    by_d = pd.read_csv(out / "group_errors_by_d.csv")
    assert not by_d.loc[by_d["method"] == "_StopsEarly", "converged"].any()
    assert by_d.loc[by_d["method"] == "_Balanced", "converged"].all()
    assert "Refits for the plot against d that did not converge: _StopsEarly (d = 1)" in (
        result.output
    )
    assert "Refits for the plot against d" in (out / "comparison.md").read_text()


def test_tradeoff_records_a_failing_setting_and_exits_by_what_finished(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Crashes, _Balanced])
    out = tmp_path / "curve"
    args = ["tradeoff", "-d", "1", "--n-bootstrap", "5", "--metric", "reconstruction_error_gap"]
    result = CliRunner().invoke(cli, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "Failed: _Crashes: RuntimeError: ADMM found no point" in result.output
    curve = pd.read_csv(out / "tradeoff.csv", index_col="method")
    assert curve.loc["_Crashes", "error"] == "RuntimeError: ADMM found no point"
    assert np.isnan(curve.loc["_Crashes", "explained_variance_ratio"])
    assert not curve.loc["_Crashes", "on_frontier"]
    assert np.isfinite(curve.loc["_Balanced", "explained_variance_ratio"])
    _use_methods(monkeypatch, [_Crashes])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and "no fair setting could be fitted" in result.output


class _Logs(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        import logging

        logging.getLogger("fairpca.some_solver").info("round 1: gap 0.5")
        logging.getLogger("fairpca.some_solver").debug("not progress")
        return super()._fit_components(X, codes, moments, y, d)


@pytest.mark.parametrize("budget", [None, 60])
def test_solver_progress_lines_reach_the_progress_callback(monkeypatch, data, budget):
    import logging

    _use_methods(monkeypatch, [_Logs])
    X, s, y = data
    messages = []
    compare_methods(X, s, y, time_budget=budget, progress=messages.append)
    assert "[2/2] _Logs round 1: gap 0.5" in messages
    assert not any("not progress" in m for m in messages)
    # The handler is gone afterwards: nothing is attached to the package logger.
    assert logging.getLogger("fairpca").handlers == []


def test_cli_shows_a_warning_repeated_by_the_refits_once(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Warns])
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # even so, a repeated line is shown once
        result = CliRunner().invoke(cli, ["compare", "-d", "2", "--output", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    # Fitted at d = 2 and refitted at four other d for the plot against d.
    assert result.output.count("_Warns (d = ") == 8
    assert result.output.count("ConvergenceWarning: stopped early (tolerance 0.1)\n") == 1


def _mixed_frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n) + (s == "a"),
            "z": rng.normal(size=n) * 3,
            "kind": rng.choice([f"k{i}" for i in range(30)], n),
            "place": rng.choice([f"p{i}" for i in range(20)], n),
        }
    )
    y = (frame["x"] + rng.normal(size=n) > 0.5).astype(int).to_numpy()
    return frame, s, y


@pytest.mark.slow  # every method, sparse and dense (sparse fits alone: test_sparse.py)
def test_one_hot_blocks_stay_sparse_and_compare_equals_the_dense_split():
    import dataclasses

    from scipy import sparse

    from fairpca.compare import compare_split, make_split
    from fairpca.metrics import mmd_bandwidth

    frame, s, y = _mixed_frame()
    split = make_split(frame, s, y, random_state=0)
    assert sparse.isspmatrix_csr(split.X_train) and isinstance(split.X_test, np.ndarray)
    assert split.X_train.nnz == 4 * split.X_train.shape[0]  # 2 numbers + 2 categories a row
    assert "kept sparse" in split.description
    # Scaled like StandardScaler on the dense one-hot matrix, up to the centring.
    dense = split.X_train.toarray()
    np.testing.assert_allclose(dense.std(axis=0), 1.0, rtol=1e-12)
    centre = dense.mean(axis=0)
    centred = dataclasses.replace(split, X_train=dense - centre, X_test=split.X_test - centre)
    assert mmd_bandwidth(split.X_train, 2, random_state=0) == pytest.approx(
        mmd_bandwidth(centred.X_train, 2, random_state=0), rel=1e-10
    )
    # Closed-form methods (and one that refuses sparse input, densified for it):
    # the table is the same as on the centred dense split.
    names = ["MeanMatchingFairPCA", "LinearErasure", "StreamingFairPCA", "MinMaxLossFairPCA"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_sparse = compare_split(split, methods=names, random_state=0)
        on_dense = compare_split(centred, methods=names, random_state=0)
    assert on_sparse.failed == {} and set(on_sparse.table.index) == {"PCA", *names}
    columns = ["explained_variance_ratio", "reconstruction_error_gap", "max_marginal_loss"]
    for column in columns:
        np.testing.assert_allclose(
            on_sparse.table[column].astype(float),
            on_dense.table[column].astype(float),
            rtol=1e-6,
            atol=1e-9,
            err_msg=column,
        )


class _Slowish(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        time.sleep(0.5)
        return super()._fit_components(X, codes, moments, y, d)


def test_slow_methods_are_not_refitted_for_the_plot_against_d(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Slowish, _Balanced])
    monkeypatch.setattr("fairpca._methods.REFIT_SECONDS", 0.3)
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["compare", "-d", "2", "--output", str(out)])
    assert result.exit_code == 0, result.output
    by_d = pd.read_csv(out / "group_errors_by_d.csv")
    assert sorted(set(by_d.loc[by_d["method"] == "_Slowish", "d"])) == [2]
    assert sorted(set(by_d.loc[by_d["method"] == "_Balanced", "d"])) == [1, 2, 3, 4, 5]
    assert sorted(set(by_d.loc[by_d["method"] == "PCA", "d"])) == [1, 2, 3, 4, 5]
    assert "Not refitted at other d for the plot against d" in result.output
    assert "_Slowish (" in (out / "comparison.md").read_text()
    assert result.output.count("_Slowish fitting") == 1


def test_tradeoff_on_a_sparse_split_and_an_evaluation_failure_is_a_row(monkeypatch):
    from sklearn.decomposition import PCA

    from fairpca import MeanMatchingFairPCA, StreamingFairPCA
    from fairpca.compare import make_split
    from fairpca.tradeoff import tradeoff_curve_split

    frame, s, y = _mixed_frame()
    split = make_split(frame, s, y, random_state=0)
    estimators = {
        "PCA": PCA(n_components=2),
        "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=2),
        # Refuses sparse input: densified for its fit and for the classifier's rows.
        "StreamingFairPCA": StreamingFairPCA(n_components=2, random_state=0),
    }
    kwargs = dict(
        estimators=estimators,
        param_grids={"StreamingFairPCA": {"unfair_rank": [0]}},
        metrics=["demographic_parity_difference"],
        n_bootstrap=5,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = tradeoff_curve_split(split, **kwargs)
    assert curve["error"].isna().all(), curve["error"].tolist()

    import fairpca.tradeoff as tradeoff

    real = tradeoff.bootstrap_metrics

    def breaks_for_streaming(projection, *args, **kw):
        if type(projection).__name__ == "StreamingFairPCA":
            raise MemoryError("injected")
        return real(projection, *args, **kw)

    monkeypatch.setattr(tradeoff, "bootstrap_metrics", breaks_for_streaming)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = tradeoff_curve_split(split, **kwargs)
    errors = dict(zip(curve["method"], curve["error"], strict=True))
    assert errors["StreamingFairPCA"] == "MemoryError: injected"
    assert pd.isna(errors["PCA"]) and pd.isna(errors["MeanMatchingFairPCA"])


def test_a_multi_class_target_leaves_out_the_downstream_metrics(monkeypatch):
    import dataclasses

    from fairpca.compare import compare_split, make_split

    _use_methods(monkeypatch, [_Balanced])
    X, s, y = make_gaussian_groups(n_samples=300, random_state=3, return_target=True)
    split = make_split(X, s, y, random_state=0)
    three = dataclasses.replace(split, y_train=split.y_train + (split.s_train == 1))
    three = dataclasses.replace(three, y_test=split.y_test + (split.s_test == 1))
    messages = []
    comparison = compare_split(three, progress=messages.append)
    assert "demographic_parity_difference" not in comparison.table.columns
    assert any("the target has 3 classes" in m for m in messages)
    binary = compare_split(split)
    assert "demographic_parity_difference" in binary.table.columns


# --- per-group outcomes against PCA (issue 43) ---------------------------------------


class _ServesTheLargestGroup(FairPCABase):
    """Test-only method: the top eigenvectors of the largest group's second moment."""

    def __init__(self, n_components=2):
        self.n_components = n_components

    def _fit_components(self, X, codes, moments, y, d):
        _, vectors = np.linalg.eigh(moments.second_moment()[np.argmax(moments.counts)])
        return vectors[:, ::-1][:, :d].T, None


def _small_group_data(seed=0):
    """A large group spread along x0, x1 and a small one along x2: PCA keeps x0 and x2."""
    rng = np.random.default_rng(seed)
    large = rng.normal(size=(200, 4)) * np.sqrt([4.0, 1.5, 0.1, 0.1])
    small = rng.normal(size=(60, 4)) * np.sqrt([0.1, 0.1, 8.0, 1.0])
    return np.vstack([large, small]), np.array(["large"] * 200 + ["small"] * 60)


def _own_marginal_loss(X, components, mean, d):
    """Per-row marginal loss by NumPy: the error of ``P`` minus that of the group's best."""
    A = X - mean
    residual = A - A @ components.T @ components
    error = np.mean(np.sum(residual**2, axis=1))
    eigenvalues = np.linalg.eigh(A.T @ A / len(A))[0]  # ascending
    return error - eigenvalues[:-d].sum(), error


def test_group_outcomes_name_the_group_served_worse_than_by_pca(monkeypatch):
    from fairpca.compare import WORSE_OFF_COLUMN

    _use_methods(monkeypatch, [_ServesTheLargestGroup, _Balanced])
    X, s = _small_group_data()
    comparison = compare_methods(X, s, n_components=2)
    column = comparison.table[WORSE_OFF_COLUMN]
    assert column["_ServesTheLargestGroup"] == "small"
    assert column["PCA"] == "none"
    outcomes = comparison.group_outcomes
    split = comparison.split
    for row in outcomes.itertuples(index=False):
        est = comparison.estimators[row.method]
        rows = split.X_test[split.s_test == row.group]
        loss, error = _own_marginal_loss(rows, est.components_, est.mean_, 2)
        assert row.marginal_loss == pytest.approx(loss, rel=1e-9, abs=1e-12)
        assert row.reconstruction_error == pytest.approx(error, rel=1e-9)
    pca = outcomes[outcomes["method"] == "PCA"].set_index("group")["marginal_loss"]
    small = outcomes.set_index(["method", "group"]).loc[("_ServesTheLargestGroup", "small")]
    assert small["pca_marginal_loss"] == pca["small"]
    # The rule of ParetoFairPCA's warning: above 1.5 x max(PCA's loss, 0.1 x mean).
    reference = max(pca["small"], 0.1 * pca.mean())
    assert small["ratio"] == pytest.approx(small["marginal_loss"] / reference)
    assert small["worse_off"] and small["ratio"] > 1.5
    assert not outcomes.loc[outcomes["method"] == "PCA", "worse_off"].any()


def test_panel_marks_the_worse_off_cell_and_escapes_labels(monkeypatch):
    from fairpca._cli_output import _group_blocks, _group_markdown
    from fairpca._html import Markup, html_report

    _use_methods(monkeypatch, [_ServesTheLargestGroup])
    X, s = _small_group_data()
    s = np.where(s == "small", "<b>small</b>", s)
    comparison = compare_methods(X, s, n_components=2)
    blocks = _group_blocks(comparison.group_outcomes, ["method"], {"Erasure": "no loss"})
    assert isinstance(blocks[1], Markup)
    html = html_report("t", {}, [("Groups against PCA", blocks)])
    assert "<b>small" not in html and "&lt;b&gt;small&lt;/b&gt;" in html
    row = html.split("<th>_ServesTheLargestGroup</th>")[1].split("</tr>")[0]
    small, large = row.split("<td")[1:]  # "<" sorts before "l"
    assert "▲" not in large and small.startswith(' class="worse-off">') and "▲" in small
    assert '<th>Erasure</th><td class="not-judged" colspan="2">no loss</td>' in html
    md = _group_markdown(comparison.group_outcomes, ["method"])
    assert "&lt;b&gt;small&lt;/b&gt;" in md and "<b>" not in md
    assert md.count("▲") == 2  # the legend's and the one group's
    line = next(x for x in md.splitlines() if x.startswith(r"- \_ServesTheLargestGroup: "))
    assert "small&lt;/b&gt; " in line.split("▲")[0] and "large" in line.split("▲")[1]


@pytest.mark.slow
def test_cli_shows_the_worse_off_group_in_every_output(monkeypatch, tmp_path):
    from fairpca.compare import WORSE_OFF_COLUMN

    _use_methods(monkeypatch, [_ServesTheLargestGroup])
    X, s = _small_group_data()
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(group=s)
    frame.to_csv(tmp_path / "data.csv", index=False)
    out = tmp_path / "report"
    args = ["compare", "--data", str(tmp_path / "data.csv"), "--sensitive", "group"]
    result = CliRunner().invoke(cli, [*args, "-d", "2", "--output", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "comparison.csv", index_col="method")
    assert table[WORSE_OFF_COLUMN].to_dict() == {"PCA": "none", "_ServesTheLargestGroup": "small"}
    losses = pd.read_csv(out / "group_losses.csv")
    flagged = losses.loc[losses["worse_off"], ["method", "group"]]
    assert flagged.values.tolist() == [["_ServesTheLargestGroup", "small"]]
    md = (out / "comparison.md").read_text()
    assert "## Groups against PCA" in md and "▲" in md.split("## Groups against PCA")[1]
    html = (out / "report.html").read_text()
    panel = html.split('<table class="group-panel">')[1].split("</table>")[0]
    served = panel.split("<th>_ServesTheLargestGroup</th>")[1].split("</tr>")[0]
    cells = served.split("<td")[1:]
    assert "worse-off" not in cells[0] and "▲" not in cells[0]  # large
    assert cells[1].startswith(' class="worse-off">') and "▲" in cells[1]  # small
    assert "worse-off" not in panel.split("<th>PCA</th>")[1].split("</tr>")[0]
    assert "served worse than under PCA" in html


def test_a_metric_added_to_the_registry_is_a_column_of_the_comparison(monkeypatch, data):
    # Adding a metric is its function and its row: compare's table, its legend and
    # the own-criterion flag (in the metric's direction) follow the registry.
    from fairpca.compare import result_flags
    from fairpca.metrics import describe_metric
    from fairpca.metrics._registry import METRICS, Metric

    X, s, y = data
    _use_methods(monkeypatch, [_Balanced])
    row = Metric(
        "toy_kept",
        lambda evaluation: 1.0 if isinstance(evaluation.projection, _Balanced) else 2.0,
        "a test metric",
        "higher",
        "fraction",
        optimised_by=("_Balanced",),
    )
    monkeypatch.setitem(METRICS, "toy_kept", row)
    table = compare_methods(X, s, y).table
    assert table.loc["PCA", "toy_kept"] == 2.0 and table.loc["_Balanced", "toy_kept"] == 1.0
    assert describe_metric("toy_kept") == "toy_kept: a test metric (higher is better; fraction)"
    # Higher is better: 1 < PCA's 2 is worse than PCA.
    assert "worse-than-PCA:toy_kept" in result_flags(table)["_Balanced"]


class _OneMoreColumn(_Balanced):
    """Test-only method keeping one column more than asked (as a rank bound may allow)."""

    def _fit_components(self, X, codes, moments, y, d):
        return super()._fit_components(X, codes, moments, y, d + 1)


def test_table_reports_the_fitted_columns_beside_d(monkeypatch, data):
    _use_methods(monkeypatch, [_OneMoreColumn])
    X, s, y = data
    comparison = compare_methods(X, s, y, n_components=2)
    table = comparison.table
    assert comparison.estimators["_OneMoreColumn"].n_components_ == 3
    assert table["n_components_"].to_dict() == {"PCA": 2, "_OneMoreColumn": 3}
    columns = list(table.columns)
    assert columns.index("n_components_") == columns.index("n_components") + 1


class _FailsAtTwo(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        if d == 2:
            raise np.linalg.LinAlgError("no answer at d = 2")
        return super()._fit_components(X, codes, moments, y, d)


class _FailsAtOne(_Balanced):
    def _fit_components(self, X, codes, moments, y, d):
        if d == 1:
            raise np.linalg.LinAlgError("no answer at d = 1")
        return super()._fit_components(X, codes, moments, y, d)


def test_refits_for_the_plot_against_d_skip_failed_methods_and_say_what_they_are(
    monkeypatch, tmp_path
):
    _use_methods(monkeypatch, [_FailsAtTwo, _FailsAtOne, _Balanced])
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["compare", "-d", "2", "--output", str(out)])
    assert result.exit_code == 0, result.output
    # Failed at the main d: never refitted, no point.
    assert result.output.count("_FailsAtTwo fitting") == 1
    by_d = pd.read_csv(out / "group_errors_by_d.csv")
    assert "_FailsAtTwo" not in set(by_d["method"])
    # Failed at the first refit d (1): not tried at 3, 4, 5.
    assert result.output.count("_FailsAtOne (d = ") == 2  # "fitting ..." and "FAILED"
    assert sorted(set(by_d.loc[by_d["method"] == "_FailsAtOne", "d"])) == [2]
    assert sorted(set(by_d.loc[by_d["method"] == "_Balanced", "d"])) == [1, 2, 3, 4, 5]
    assert "given up (not tried at the following d): _FailsAtOne (failed at d = 1)" in (
        result.output
    )
    # Every refit line says what it is for; the metric phase has a line per method.
    refits = [line for line in result.output.splitlines() if "(d = " in line]
    assert refits and all(line.startswith("[refits for the plot against d] [") for line in refits)
    for i, name in enumerate(["PCA", "_FailsAtOne", "_Balanced"], start=1):
        assert f"[metrics {i}/3] {name} computing the metrics" in result.output
        assert f"[metrics {i}/3] {name} done in " in result.output


def test_no_by_d_refits_nothing_and_writes_no_by_d_files(monkeypatch, tmp_path):
    _use_methods(monkeypatch, [_Balanced])

    def no_refit(*args, **kwargs):
        raise AssertionError("refitted at other d with --no-by-d")

    monkeypatch.setattr("fairpca._methods.fit_all", no_refit)
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["compare", "--no-by-d", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "refits for the plot against d" not in result.output
    assert not list(out.glob("group_errors_by_d*"))
    assert (out / "group_errors.png").exists() and (out / "report.html").exists()
    for text in (result.output, (out / "comparison.md").read_text()):
        assert "against d was not requested (--no-by-d)" in text
    assert "against d was not requested" in (out / "report.html").read_text()


def test_metrics_method_by_method_give_the_one_call_table(monkeypatch, data):
    _use_methods(monkeypatch, [_Balanced])
    X, s, y = data
    quiet = compare_methods(X, s, y)
    lines = []
    told = compare_methods(X, s, y, progress=lines.append)
    pd.testing.assert_frame_equal(
        quiet.table.drop(columns="fit_seconds"), told.table.drop(columns="fit_seconds")
    )
    assert any(line.startswith("[metrics 2/2] _Balanced done in ") for line in lines)
