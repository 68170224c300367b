import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from fairpca.cli import cli
from fairpca.compare import compare_methods
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import group_reconstruction_error, group_separability

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # every method (the metrics' own tests: test_metrics.py)
def test_compare_numbers_are_the_metrics_of_the_split():
    X, s, y = make_gaussian_groups(random_state=0, return_target=True)
    comparison = compare_methods(X, s, y, n_components=2, random_state=0)
    table = comparison.table
    assert comparison.unavailable == {} and comparison.stopped == {}
    assert list(table.index) == list(comparison.estimators)
    assert (table["fit_seconds"] > 0).all()
    # The converged column is each fitted estimator's converged_; the closed-form
    # methods without one count as converged.
    closed_form = {"PCA", "FairKernelPCA", "LinearErasure"}
    assert closed_form <= set(table.index)
    for name, est in comparison.estimators.items():
        assert table.loc[name, "converged"] == getattr(est, "converged_", name in closed_form)
    # Representation-only methods: the metrics of transform(X), no reconstruction.
    Xt_all = comparison.split.X_test
    for name in ("FairKernelPCA", "LinearErasure"):
        assert np.isnan(table.loc[name, "reconstruction_error"])
        assert (
            table.loc[name, "n_components"]
            == comparison.estimators[name].transform(Xt_all).shape[1]
        )
    assert table.loc["LinearErasure", "n_components"] == X.shape[1]
    assert table.loc["LinearErasure", "group_separability"] == pytest.approx(
        group_separability(
            Xt_all, comparison.split.s_test, comparison.estimators["LinearErasure"], random_state=0
        )
    )
    # Recompute PCA's row independently from the same split.
    X_tr, X_te, s_tr, s_te = train_test_split(X, s, test_size=0.3, stratify=s, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    pca = PCA(n_components=2).fit(scaler.transform(X_tr))
    Xt = scaler.transform(X_te)
    residual = Xt - pca.inverse_transform(pca.transform(Xt))
    expected = {g: np.mean(np.sum(residual[s_te == g] ** 2, axis=1)) for g in np.unique(s_te)}
    for g, value in expected.items():
        assert table.loc["PCA", f"reconstruction_error[{g}]"] == pytest.approx(value, rel=1e-10)
    assert group_reconstruction_error(Xt, s_te, pca) == pytest.approx(expected, rel=1e-10)
    assert table.loc["PCA", "reconstruction_error_gap"] == pytest.approx(
        abs(expected[0] - expected[1]), rel=1e-10
    )


def _check_html_report(path, data_text):
    """One parseable HTML file: every image embedded, no outside reference; the facts stated."""
    import base64
    from html.parser import HTMLParser

    import numpy

    class Collector(HTMLParser):
        def __init__(self):
            super().__init__()
            self.images, self.references, self.text = [], [], []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "img":
                self.images.append(attrs["src"])
            for key in ("src", "href"):
                if key in attrs and not attrs[key].startswith("data:"):
                    self.references.append(attrs[key])

        def handle_data(self, data):
            self.text.append(data)

    document = path.read_text()
    assert document.startswith("<!DOCTYPE html>") and document.rstrip().endswith("</html>")
    parser = Collector()
    parser.feed(document)
    parser.close()
    assert parser.references == []
    for src in parser.images:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        assert base64.b64decode(src[len(prefix) :])[:8] == b"\x89PNG\r\n\x1a\n"
    text = " ".join(parser.text)
    for fact in ("data", "seed", "target dimension d", data_text, f"numpy {numpy.__version__}"):
        assert fact in text, fact
    return parser.images


@pytest.fixture
def csv_file(tmp_path):
    X, s, y = make_gaussian_groups(n_samples=300, n_features=5, random_state=1, return_target=True)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(5)])
    frame["sex"] = np.where(s == 0, "male", "female")
    frame["label"] = np.where(y == 1, "yes", "no")
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path, frame


@pytest.mark.slow
def test_compare_user_csv_writes_outputs(csv_file, tmp_path):
    path, _ = csv_file
    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli,
        [
            "compare",
            "--data",
            str(path),
            "--sensitive",
            "sex",
            "--target",
            "label",
            "-d",
            "2",
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "biplot.png",
        "communality.png",
        "comparison.csv",
        "comparison.md",
        "group_errors.png",
        "group_errors_by_d.csv",
        "group_errors_by_d.png",
        "group_losses.csv",
        "report.html",
        "tradeoff.png",
    ]
    images = _check_html_report(out / "report.html", str(path))
    assert len(images) == len(list(out.glob("*.png")))
    table = pd.read_csv(out / "comparison.csv", index_col="method")
    assert "PCA" in table.index
    assert {"reconstruction_error[female]", "reconstruction_error[male]"} <= set(table.columns)
    md = (out / "comparison.md").read_text()
    assert md.startswith("# fairpca compare") and "\n| method |" in md and "| PCA |" in md
    assert "## What the columns mean" in md and "[biplot.png](biplot.png)" in md
    for png in ("group_errors.png", "tradeoff.png", "biplot.png", "communality.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Nothing was written beside the input file.
    assert sorted(p.name for p in path.parent.iterdir()) == ["data.csv", "report"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "missing.csv", "--sensitive", "sex"], "does not exist"),
        (["--sensitive", "sex"], "need --data"),
        (["--data", "{csv}"], "--data needs --sensitive"),
        (["--data", "{csv}", "--sensitive", "gender"], "'gender' is not in data.csv"),
        (["--data", "{csv}", "--sensitive", "sex", "--target", "x0"], "exactly two values"),
        (["--data", "{csv}", "--sensitive", "x0"], "--bins N"),
        (["--data", "{csv}", "--sensitive", "sex", "--bins", "3"], "bins needs a numeric"),
        (["--data", "{csv}", "--sensitive", "sex", "--features", "x9"], "'x9' is not in"),
        (["--data", "{csv}", "--sensitive", "sex", "--methods", "Foo"], "unknown method"),
        (["--sensitive", "sex", "--impute", "median"], "need --data"),
        (["--data", "{gaps}", "--sensitive", "sex"], "'x1' have missing values"),
        (
            ["--data", "{csv}", "--sensitive", "sex", "--target", "label", "-d", "9"],
            "n_components=9",
        ),
        (["--data", "{csv}", "--sensitive", "sex", "-d", "0"], "0 is not in the range"),
        (["--data", "{small}", "--sensitive", "sex", "--target", "label"], "at least 10 rows"),
        (
            ["--data", "{one}", "--sensitive", "sex", "--target", "label"],
            "at least 2 distinct groups",
        ),
        (
            ["--data", "{huge}", "--sensitive", "sex", "--target", "label"],
            "feature column\\(s\\) 'x3' exceed",
        ),
    ],
)
def test_compare_errors(csv_file, tmp_path, args, message):
    path, frame = csv_file
    bad = frame.assign(colour="red")
    bad.to_csv(tmp_path / "bad.csv", index=False)
    small = pd.concat([frame[frame.sex == "male"], frame[frame.sex == "female"].iloc[:4]])
    small.to_csv(tmp_path / "small.csv", index=False)
    frame.assign(sex="male").to_csv(tmp_path / "one.csv", index=False)
    frame.assign(x3=frame["x3"] * 1e200).to_csv(tmp_path / "huge.csv", index=False)
    frame.assign(x1=frame["x1"].where(frame.index % 7 > 0)).to_csv(
        tmp_path / "gaps.csv", index=False
    )
    files = {
        "csv": path,
        "bad": tmp_path / "bad.csv",
        "small": tmp_path / "small.csv",
        "one": tmp_path / "one.csv",
        "huge": tmp_path / "huge.csv",
        "gaps": tmp_path / "gaps.csv",
    }
    args = [a.format(**files) for a in args]
    result = CliRunner().invoke(cli, ["compare", *args])
    assert result.exit_code != 0
    assert re.search(message, result.output), result.output
    assert "Traceback" not in result.output


@pytest.mark.requires_data
@pytest.mark.slow
def test_compare_real_dataset_uses_the_protocol_split(tmp_path):
    from fairpca.experiments import lee2022

    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli, ["compare", "--dataset", "german", "--split", "3", "-d", "2", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "Lee et al. (2022) preparation of german_credit" in result.output
    assert "1000 rows, 57 features" in result.output
    table = pd.read_csv(out / "comparison.csv", index_col="method")
    # Independent recomputation of PCA's row on split 3 of Lee et al.'s German credit.
    split = lee2022("german_credit", split=3)
    pca = PCA(n_components=2).fit(split.X_train)
    residual = split.X_test - pca.inverse_transform(pca.transform(split.X_test))
    for group in ("25+", "<25"):
        rows = split.s_test == group
        expected = np.mean(np.sum(residual[rows] ** 2, axis=1))
        assert table.loc["PCA", f"reconstruction_error[{group}]"] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "compas", "--data", "{csv}"], "mutually exclusive"),
        (["--dataset", "compas", "--sensitive", "sex"], "need --data"),
        (["--dataset", "compas", "--test-size", "0.5"], "--test-size does not apply"),
        (["--split", "2"], "--split needs --dataset"),
        (["--dataset", "iris"], "Invalid value for '--dataset'"),
        (["--dataset", "compas"], "compas/compas-scores-two-years.csv' not found"),
    ],
)
def test_compare_real_dataset_errors(csv_file, tmp_path, args, message):
    path, _ = csv_file
    args = [a.format(csv=path) for a in args]
    empty = tmp_path / "no-data"
    result = CliRunner().invoke(cli, ["compare", *args], env={"FAIRPCA_DATA": str(empty)})
    assert result.exit_code != 0
    assert re.search(message, result.output), result.output
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_compare_group_errors_against_d(csv_file, tmp_path):
    path, frame = csv_file
    out = tmp_path / "report"
    args = ["compare", "--data", str(path), "--sensitive", "sex", "--target", "label"]
    result = CliRunner().invoke(cli, [*args, "-d", "2", "--output", str(out)])
    assert result.exit_code == 0, result.output
    by_d = pd.read_csv(out / "group_errors_by_d.csv")
    assert sorted(by_d["d"].unique()) == [1, 2, 3, 4]  # d < number of features
    written = pd.read_csv(out / "comparison.csv")
    compared = set(written.loc[written["status"] != "baseline", "method"])
    # The non-projections have no reconstruction error to plot against d.
    assert set(by_d["method"]) == compared - {"FairKernelPCA", "LinearErasure"}
    # At the requested d the rows are the comparison table's per-group errors.
    table = pd.read_csv(out / "comparison.csv", index_col="method")
    at_d = by_d[by_d["d"] == 2].set_index(["method", "group"])["error"]
    for (method, group), error in at_d.items():
        assert table.loc[method, f"reconstruction_error[{group}]"] == pytest.approx(error)
    # PCA's rows recomputed on the same split with scikit-learn at every d.
    X = frame[[f"x{i}" for i in range(5)]].to_numpy()
    X_tr, X_te, s_tr, s_te = train_test_split(
        X, frame["sex"].to_numpy(), test_size=0.3, stratify=frame["sex"], random_state=0
    )
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    for d in range(1, 5):
        pca = PCA(n_components=d).fit(X_tr)
        residual = X_te - pca.inverse_transform(pca.transform(X_te))
        for group in ("female", "male"):
            expected = np.mean(np.sum(residual[s_te == group] ** 2, axis=1))
            got = by_d.query("method == 'PCA' and d == @d and group == @group")["error"].item()
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_tradeoff_writes_csv_plots_and_one_html_report(csv_file, tmp_path):
    path, _ = csv_file
    out = tmp_path / "curve"
    args = ["tradeoff", "--data", str(path), "--sensitive", "sex", "--target", "label"]
    args += ["--methods", "MeanMatchingFairPCA"]  # every method: [tradeoff-all] below (slow)
    args += ["--n-bootstrap", "20", "--metric", "reconstruction_error_gap", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "group_losses.csv",
        "report.html",
        "tradeoff.csv",
        "tradeoff.png",
        "tradeoff.svg",
    ]
    curve = pd.read_csv(out / "tradeoff.csv")
    assert set(curve["method"]) == {"PCA", "MeanMatchingFairPCA"}
    assert {"reconstruction_error_gap_low", "on_frontier"} <= set(curve.columns)
    assert "mmd2" not in curve.columns  # only the metric asked for
    assert curve["on_frontier"].any()
    images = _check_html_report(out / "report.html", str(path))
    assert len(images) == 1 and "95% symmetric bootstrap" in (out / "report.html").read_text()
    assert (out / "tradeoff.svg").read_text().lstrip().startswith("<?xml")
    # A downstream metric without a target is refused before any fit.
    no_target = tmp_path / "no_target.csv"
    pd.read_csv(path).drop(columns="label").to_csv(no_target, index=False)
    args = ["tradeoff", "--metric", "equalized_odds_difference", "--data", str(no_target)]
    result = CliRunner().invoke(cli, [*args, "--sensitive", "sex"])
    assert result.exit_code == 2 and "need a binary target" in result.output


#: The cheapest method to fit: enough for a test of a mechanism (staging, progress).
_ONE_METHOD = ["--methods", "MeanMatchingFairPCA"]


@pytest.mark.parametrize(
    "methods",
    [
        pytest.param(_ONE_METHOD, id="one_method"),
        pytest.param([], id="all", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("command", ["compare", "tradeoff"])
def test_failure_while_writing_leaves_no_partial_output(
    command, methods, csv_file, tmp_path, monkeypatch
):
    # The staging of the output folder does not depend on the methods: one cheap method
    # checks it in the fast loop, every method (as a user runs it) in the slow one.
    path, _ = csv_file
    out = tmp_path / "out"

    def broken_report(*args, **kwargs):
        raise OSError("disk full (injected by the test)")

    monkeypatch.setattr("fairpca._html.html_report", broken_report)
    args = [command, "--data", str(path), "--sensitive", "sex", "--target", "label", *methods]
    if command == "tradeoff":
        args += ["--n-bootstrap", "5", "--metric", "reconstruction_error_gap"]
    result = CliRunner().invoke(cli, [*args, "--output", str(out)])
    assert result.exit_code == 1 and "disk full" in result.output
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]  # no staging left


@pytest.mark.slow
@pytest.mark.requires_data("adult")
def test_raw_adult_csv_with_categoricals_and_missing_values(tmp_path):
    """Adult as a user has it: string categoricals, '?' for missing, an id column."""
    from fairpca.datasets import load_adult

    bunch = load_adult(subset="train")
    frame = bunch.data.assign(income=bunch.target).iloc[:3000]
    frame.insert(0, "id", np.arange(100000, 103000))
    path = tmp_path / "adult.csv"
    frame.to_csv(path, index=False, na_rep="?")
    args = ["compare", "--data", str(path), "--sensitive", "sex", "--target", "income"]
    args += ["--methods", "MeanMatchingFairPCA,MinMaxLossFairPCA", "-d", "2"]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2 and "have missing values" in refused.output
    assert "workclass" in refused.output  # the columns with '?' are named
    result = CliRunner().invoke(cli, [*args, "--impute", "drop-rows"])
    assert result.exit_code == 0, result.output
    assert "left out as identifiers (nearly every value different): id;" in result.output
    header = next(line for line in result.output.splitlines() if line.startswith("data:"))
    n_features = int(re.search(r"(\d+) features", header).group(1))
    assert n_features > 50  # the categoricals, one column per category of the training rows
    assert int(re.search(r"(\d+) rows", header).group(1)) < 3000  # rows with '?' dropped
    table = next(line for line in result.output.splitlines() if line.startswith("method"))
    assert "MeanMatchingFairPCA" in table and "MMDFairPCA" not in table


@pytest.mark.slow
@pytest.mark.requires_data("compas")
def test_published_compas_csv_with_chosen_features():
    """ProPublica's file as published: 53 columns, six race groups, chosen features."""
    from conftest import data_home

    path = data_home() / "compas" / "compas-scores-two-years.csv"
    args = ["compare", "--data", str(path), "--sensitive", "race", "--target", "two_year_recid"]
    features = "age,sex,priors_count,juv_fel_count,juv_misd_count,juv_other_count,c_charge_degree"
    args += ["--features", features, "--methods", "MeanMatchingFairPCA", "-d", "2"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if line.startswith("data:"))
    assert "7214 rows, 9 features" in header  # 5 numeric + sex (2) + charge degree (2)


def test_result_flags_on_a_constructed_table():
    from types import SimpleNamespace

    from fairpca.compare import result_flags

    table = pd.DataFrame(
        {
            "positive_rate": [0.4, 0.015, 0.03, 0.985, 0.5, 0.5],
            "explained_variance_ratio": [0.6, 0.5, 0.5, 0.5, 0.29, 0.31],
            "mmd2": [0.10, 0.05, 0.20, 0.01, 0.05, 0.05],
            "max_marginal_loss": [1.0, 2.0, 0.5, 3.0, 1.0, 1.0],
        },
        index=["PCA", "MMDFairPCA", "MMDFairPCA2", "MinMaxLossFairPCA", "Low", "ConvexFairPCA"],
    )
    flags = result_flags(table, {"ConvexFairPCA": SimpleNamespace(ambiguous_=True)})
    # Near one class: a positive rate under 2 % or over 98 % (NEAR_SINGLE_CLASS).
    assert flags["PCA"] == [] and flags["MMDFairPCA"] == ["near-single-class"]
    assert flags["MMDFairPCA2"] == []  # not a known method: no criterion to compare
    assert flags["MinMaxLossFairPCA"] == [
        "near-single-class",
        "worse-than-PCA:max_marginal_loss",
    ]
    # Less than half of PCA's variance (LOW_VARIANCE_FRACTION); components not determined.
    assert flags["Low"] == ["low-variance"]
    assert flags["ConvexFairPCA"] == ["undetermined"]
    # LinearErasure's guarantee is linear: group separability is not its own criterion.
    from fairpca.metrics._registry import own_criterion

    assert own_criterion("LinearErasure") is None
    assert own_criterion("MeanMatchingFairPCA").name == "group_separability"


def test_compare_flags_single_class_classifiers_and_noisy_groups(tmp_path):
    rng = np.random.default_rng(3)
    n = 400
    frame = pd.DataFrame(rng.normal(size=(n, 4)), columns=[f"x{j}" for j in range(4)])
    frame["group"] = np.where(np.arange(n) < 40, "small", "large")  # 12 held-out rows
    # Too rare to predict, and both classes in the small group's held-out rows.
    frame["label"] = ((rng.random(n) < 0.04) | (np.arange(n) < 40) & (np.arange(n) % 3 == 0)) * 1
    path = tmp_path / "rare.csv"
    frame.to_csv(path, index=False)
    args = ["compare", "--data", str(path), "--sensitive", "group", "--target", "label"]
    result = CliRunner().invoke(cli, [*args, "--methods", "MeanMatchingFairPCA"])
    assert result.exit_code == 0, result.output
    assert "Flag PCA: the downstream classifier predicts positive for under 2%" in result.output
    # The baselines of the downstream columns are rows of the table.
    assert "baseline: majority class" in result.output
    assert "baseline: all features" in result.output
    assert "Noisy: groups with fewer than 30 held-out rows: 'small' (12 rows)" in result.output
    assert "mmd2: largest squared MMD" in result.output  # the legend of the columns


@pytest.mark.requires_data("german_credit")
def test_dataset_read_from_data_home(tmp_path, monkeypatch):
    import shutil

    from conftest import data_home

    shutil.copytree(data_home() / "german_credit", tmp_path / "german_credit")
    monkeypatch.setenv("FAIRPCA_DATA", str(tmp_path / "nowhere"))
    args = ["compare", "--dataset", "german", "--methods", "MeanMatchingFairPCA"]
    missing = CliRunner().invoke(cli, args)
    assert missing.exit_code == 1 and "not found" in missing.output
    result = CliRunner().invoke(cli, [*args, "--data-home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    refused = CliRunner().invoke(cli, ["compare", "--data-home", str(tmp_path)])
    assert refused.exit_code == 2 and "--data-home needs --dataset" in refused.output


def test_tradeoff_refuses_zero_jobs():
    result = CliRunner().invoke(cli, ["tradeoff", "--jobs", "0"])
    assert result.exit_code == 2 and "--jobs must be a positive number or -1" in result.output


@pytest.mark.requires_data("german_credit")
def test_download_fetches_missing_files_into_data_home(tmp_path, monkeypatch):
    """--download goes through the real download path: the publisher's bytes are
    served by a stand-in for urlopen, verified by checksum and saved in the data home."""
    import urllib.request

    from conftest import data_home

    source = data_home() / "german_credit" / "german.data"
    opened = []

    def fake_urlopen(url, timeout):
        opened.append(url)
        return open(source, "rb")

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    args = ["compare", "--dataset", "german", "--methods", "MeanMatchingFairPCA"]
    home = ["--data-home", str(tmp_path)]
    missing = CliRunner().invoke(cli, [*args, *home])
    assert missing.exit_code == 1 and "not found" in missing.output and opened == []
    result = CliRunner().invoke(cli, [*args, *home, "--download"])
    assert result.exit_code == 0, result.output
    assert opened == [
        "https://archive.ics.uci.edu/ml/machine-learning-databases/statlog/german/german.data"
    ]
    assert (tmp_path / "german_credit" / "german.data").read_bytes() == source.read_bytes()


def test_download_failure_and_misuse_are_reported(tmp_path, monkeypatch):
    import urllib.error
    import urllib.request

    def offline(url, timeout):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    args = ["tradeoff", "--dataset", "german", "--data-home", str(tmp_path), "--download"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and "could not download data file german.data" in result.output
    assert not any(tmp_path.rglob("*.part"))  # nothing half-written is left behind
    refused = CliRunner().invoke(cli, ["compare", "--download"])
    assert refused.exit_code == 2 and "--download needs --dataset" in refused.output


def test_intersectional_groups_and_sensitive_equal_to_target_from_the_command_line(tmp_path):
    rng = np.random.default_rng(0)
    n = 240
    frame = pd.DataFrame(rng.normal(size=(n, 6)), columns=list("abcdef"))
    frame["sex"] = np.where(np.arange(n) % 2, "F", "M")
    frame["race"] = np.where(np.arange(n) % 3, "x", "y")
    frame["label"] = (frame["a"] + rng.normal(size=n) > 0).astype(int)
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    args = ["compare", "--data", str(path), "--target", "label", *_ONE_METHOD]
    result = CliRunner().invoke(cli, [*args, "--sensitive", "sex,race"])
    assert result.exit_code == 0, result.output
    assert "the combinations of 'sex' x 'race' (4 groups)" in result.output
    # The target as the groups: a usage error before any fit.
    for command in ("compare", "tradeoff"):
        base = [command, "--data", str(path), "--target", "label", "--sensitive", "label"]
        result = CliRunner().invoke(cli, base)
        assert result.exit_code == 2, result.output
        assert "is also a sensitive column" in result.output
        assert "[1/" not in result.output  # nothing was fitted


def test_output_help_names_the_report_and_missing_data_names_the_cli_options(tmp_path):
    result = CliRunner().invoke(cli, ["compare", "--help"])
    assert "report.html" in " ".join(result.output.split())
    from fairpca.datasets._fetch import FILES, fetch_file

    relpath = next(p for p, entry in FILES.items() if entry.url is not None)
    with pytest.raises(FileNotFoundError) as caught:
        fetch_file(relpath, data_home=tmp_path)
    assert "--download" in str(caught.value) and "--data-home" in str(caught.value)
