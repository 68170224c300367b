import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
import sklearn.base
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import fairpca
from answers import assert_same_answer
from fairpca._base import FairPCABase
from fairpca.datasets import make_gaussian_groups
from transform_groups import transform_kwargs


class GroupBalancedPCA(FairPCABase):
    """Test-only method: top eigenvectors of the unweighted mean of group second moments."""

    def __init__(self, n_components=1, extra_scaled=False):
        self.n_components = n_components
        self.extra_scaled = extra_scaled

    def _fit_components(self, X, codes, moments, y, d):
        GroupBalancedPCA.calls += 1
        M = moments.second_moment().mean(axis=0)
        _, vectors = np.linalg.eigh(M)
        r = d + (1 if self.extra_scaled else 0)
        components = vectors[:, ::-1][:, :r].T
        scales = None
        if self.extra_scaled:
            scales = np.ones(r)
            scales[-1] = 0.25
        return components, scales

    calls = 0


#: Checks of scikit-learn that an estimator of the package cannot pass, and why. The
#: checks call fit(X) without groups, which every estimator answers with its
#: group-blind fit (GroupBlindFitWarning): none fails for being fair. So they also
#: call transform(X) without groups after such a fit, which QuadraticErasure (whose
#: transform needs the groups after a grouped fit) accepts: its group-blind fit is
#: the identity edit. Its grouped transform is checked in tests/test_fair_path_checks.py.
EXPECTED_FAILED_CHECKS = {
    "QuadraticErasure": {
        "check_transformer_n_iter": (
            "max_iter bounds the barycenter's fixed point, which only a fit with groups "
            "runs (n_barycenter_iter_); the check's fit(X) without groups fits the "
            "identity edit with no iteration, so there is no n_iter_ >= 1 to report"
        ),
    },
    "StreamingFairPCA": {
        "check_transformer_n_iter": (
            "n_iter_ is a pair (power iterations on the covariance difference, then on "
            "the projected covariance), one per phase of the fair power method; the check "
            "compares it with an int"
        ),
    },
}

#: The FairPCABase projections (the ten estimators less the four beside the base).
# FairPLS (supervised: fit needs y) has these checks in tests/test_fair_pls.py.
PROJECTIONS = [
    cls for cls in fairpca.all_estimators(supervised=False) if issubclass(cls, FairPCABase)
]


def _checked(cls):
    """``cls`` as scikit-learn's common checks run it: one component where it has them."""
    return cls(n_components=1) if "n_components" in cls().get_params() else cls()


def _absent_device(check):
    """Why an array-API check cannot run here (its torch device is absent), or None.

    scikit-learn skips a torch CUDA check only when torch was built without
    CUDA; ``pip install torch`` gives a CUDA build, which fails on a machine
    without a GPU instead of skipping.
    """
    keywords = getattr(check, "keywords", {})
    wanted = [(keywords.get("array_namespace"), keywords.get("device_name"))]
    for key in ("X_ns_and_device", "other_ns_and_device"):
        if key in keywords:
            wanted.append(tuple(keywords[key]))
    for namespace, device in wanted:
        if namespace != "torch" or device in (None, "cpu"):
            continue
        try:
            import torch
        except ImportError:
            return None  # scikit-learn skips it with its reason
        backend = getattr(torch, device, None) if device != "mps" else torch.backends.mps
        if backend is None or not backend.is_available():
            return f"torch device {device!r} is not available on this machine"
    return None


@parametrize_with_checks(
    [GroupBalancedPCA()] + [_checked(cls) for cls in fairpca.all_estimators()],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {}),
)
def test_sklearn_compatible(estimator, check):
    absent = _absent_device(check)
    if absent:
        pytest.skip(absent)
    # The checks call fit(X): the group-blind fit and its warning are what they test.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fairpca.GroupBlindFitWarning)
        check(estimator)


@pytest.fixture
def grouped():
    rng = np.random.default_rng(0)
    n = 300
    s = np.where(rng.random(n) < 0.7, "major", "minor")
    X = rng.normal(size=(n, 5))
    X[s == "major", 0] *= 4.0
    X[s == "minor", 1] *= 3.0
    X += np.arange(5.0)
    return X, s


def test_fit_attributes(grouped):
    X, s = grouped
    est = GroupBalancedPCA(n_components=2).fit(X, sensitive_features=s)
    assert list(est.groups_) == ["major", "minor"]
    assert list(est.group_counts_) == [np.sum(s == "major"), np.sum(s == "minor")]
    np.testing.assert_allclose(est.mean_, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(2), atol=1e-12)
    Z = est.transform(X)
    np.testing.assert_allclose(est.explained_variance_, Z.var(axis=0, ddof=1), rtol=1e-10)
    assert np.all(np.diff(est.explained_variance_) <= 0)
    total = X.var(axis=0, ddof=1).sum()
    np.testing.assert_allclose(est.explained_variance_ratio_, est.explained_variance_ / total)
    rows = np.arange(2)
    assert np.all(est.components_[rows, np.abs(est.components_).argmax(axis=1)] > 0)


def test_scaled_components_transform_round_trip(grouped):
    X, s = grouped
    est = GroupBalancedPCA(n_components=2, extra_scaled=True).fit(X, sensitive_features=s)
    assert est.n_components_ == 3
    P = est.components_.T @ np.diag(est.component_scales_) @ est.components_
    expected = (X - est.mean_) @ P + est.mean_
    np.testing.assert_allclose(est.inverse_transform(est.transform(X)), expected, atol=1e-10)
    np.testing.assert_allclose(sorted(est.component_scales_), [0.25, 1, 1])


def test_without_groups_is_pca_with_warning(grouped):
    X, _ = grouped
    with pytest.warns(UserWarning, match="without sensitive_features"):
        est = GroupBalancedPCA(n_components=3).fit(X)
    pca = PCA(n_components=3).fit(X)
    np.testing.assert_allclose(est.components_, pca.components_, atol=1e-8)
    np.testing.assert_allclose(est.explained_variance_, pca.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(est.transform(X), pca.transform(X), atol=1e-8)
    assert est.groups_ is None


def test_invariant_to_row_order_and_labels(grouped):
    X, s = grouped
    ref = GroupBalancedPCA(n_components=2).fit(X, sensitive_features=s)
    perm = np.random.default_rng(1).permutation(len(X))
    relabelled = np.where(s == "major", 1, 0)[perm]
    other = GroupBalancedPCA(n_components=2).fit(X[perm], sensitive_features=relabelled)
    np.testing.assert_allclose(other.components_, ref.components_, atol=1e-10)


def test_feature_names_and_pandas_output(grouped):
    X, s = grouped
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    est = GroupBalancedPCA(n_components=2).fit(df, sensitive_features=pd.Series(s))
    assert list(est.feature_names_in_) == list(df.columns)
    names = est.get_feature_names_out()
    assert list(names) == ["groupbalancedpca0", "groupbalancedpca1"]
    out = est.set_output(transform="pandas").transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(names)
    with pytest.raises(ValueError, match="feature names"):
        est.transform(df.rename(columns={"f0": "other"}))


def test_metadata_routing_pipeline_and_cross_validate(grouped):
    X, s = grouped
    y = (X[:, 0] + X[:, 1] > 2).astype(int)
    direct = GroupBalancedPCA(n_components=2).fit(
        StandardScaler().fit_transform(X), sensitive_features=s
    )

    def accuracy_gap(y_true, y_pred, *, sensitive_features):
        acc = [
            np.mean(y_true[sensitive_features == g] == y_pred[sensitive_features == g])
            for g in np.unique(sensitive_features)
        ]
        return max(acc) - min(acc)

    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(
            StandardScaler(),
            GroupBalancedPCA(n_components=2).set_fit_request(sensitive_features=True),
        )
        pipe.fit(X, sensitive_features=s)
        np.testing.assert_allclose(pipe[-1].components_, direct.components_, atol=1e-10)

        model = make_pipeline(
            GroupBalancedPCA(n_components=2).set_fit_request(sensitive_features=True),
            LogisticRegression(),
        )
        scorer = make_scorer(accuracy_gap, greater_is_better=False).set_score_request(
            sensitive_features=True
        )
        res = cross_validate(
            model,
            X,
            y,
            cv=3,
            scoring=scorer,
            params={"sensitive_features": s},
            return_estimator=True,
        )
        assert np.all(np.isfinite(res["test_score"]))
        for fitted in res["estimator"]:
            # Each fold's fit saw groups: routing delivered the labels.
            assert list(fitted[0].groups_) == ["major", "minor"]
            assert fitted[0].group_counts_.sum() == 200

        search = GridSearchCV(model, {"groupbalancedpca__n_components": [1, 2]}, cv=3)
        search.fit(X, y, sensitive_features=s)
        assert search.best_estimator_[0].groups_ is not None


def test_legacy_pipeline_params(grouped):
    X, s = grouped
    pipe = make_pipeline(StandardScaler(), GroupBalancedPCA(n_components=2))
    pipe.fit(X, groupbalancedpca__sensitive_features=s)
    assert pipe[-1].groups_ is not None


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda X, s: (np.where(X > 3, np.nan, X), s), ValueError, "NaN"),
        (lambda X, s: (np.where(X > 3, np.inf, X), s), ValueError, "infinity"),
        (lambda X, s: (X.astype(str), s), TypeError, "X must be numeric"),
        (lambda X, s: (pd.DataFrame({"a": X[:, 0], "b": ["x"] * len(X)}), s), TypeError, "'b'"),
        (lambda X, s: (X[:0], s[:0]), ValueError, "0 sample"),
        (lambda X, s: (X, s[:-1]), ValueError, "sensitive_features has 299 labels"),
        (lambda X, s: (X, np.full(len(X), "one")), ValueError, "at least 2 distinct groups"),
        (
            lambda X, s: (X, np.where(np.arange(len(X)) == 0, "tiny", s)),
            ValueError,
            "'tiny' \\(1 rows\\)",
        ),
        (lambda X, s: (X, np.array([1, "a"] * 150, dtype=object)), TypeError, "mixes label types"),
        (lambda X, s: (X, np.where(np.arange(len(X)) < 5, np.nan, 1.0)), ValueError, "NaN"),
        (lambda X, s: (X, np.stack([s, s], axis=1)[:, :, None]), ValueError, "one column per"),
    ],
)
def test_bad_input_fails_before_solving(grouped, change, error, match):
    X, s = change(*grouped)
    GroupBalancedPCA.calls = 0
    with pytest.raises(error, match=match):
        GroupBalancedPCA(n_components=2).fit(X, sensitive_features=s)
    assert GroupBalancedPCA.calls == 0


@pytest.mark.parametrize(
    ("n_components", "error", "match"),
    [
        (0, ValueError, "between 1 and n_features=5"),
        (6, ValueError, "n_components=6"),
        (2.5, ValueError, "must be an int between 1 and n_features=5, or a fraction"),
        ("2", TypeError, "must be an int"),
        (True, TypeError, "must be an int"),
    ],
)
def test_bad_n_components(grouped, n_components, error, match):
    X, s = grouped
    with pytest.raises(error, match=match):
        GroupBalancedPCA(n_components=n_components).fit(X, sensitive_features=s)


def test_transform_errors(grouped):
    X, s = grouped
    with pytest.raises(NotFittedError):
        GroupBalancedPCA().transform(X)
    est = GroupBalancedPCA(n_components=2).fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="5 features"):
        est.transform(X[:, :4])
    with pytest.raises(ValueError, match="n_components_=2"):
        est.inverse_transform(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="y must be 1-D"):
        GroupBalancedPCA(n_components=2).fit(X, y=np.zeros(3), sensitive_features=s)


def test_metrics_read_fitted_estimators(grouped):
    from fairpca.metrics import explained_variance_ratio, group_reconstruction_error

    X, s = grouped
    est = GroupBalancedPCA(n_components=2, extra_scaled=True).fit(X, sensitive_features=s)
    residual = X - est.inverse_transform(est.transform(X))
    errors = group_reconstruction_error(X, s, est)
    for g in ("major", "minor"):
        assert errors[g] == pytest.approx(np.mean(np.sum(residual[s == g] ** 2, axis=1)), rel=1e-10)
    Xc = X - est.mean_
    P = est.components_.T @ np.diag(est.component_scales_) @ est.components_
    assert explained_variance_ratio(X, est) == pytest.approx(
        np.trace(Xc.T @ Xc @ P) / np.trace(Xc.T @ Xc), rel=1e-10
    )


def test_all_estimators_lists_concrete_registered_classes(monkeypatch):
    import inspect

    from fairpca._registry import ESTIMATORS

    monkeypatch.setitem(ESTIMATORS, "GroupBalancedPCA", GroupBalancedPCA)
    monkeypatch.setitem(ESTIMATORS, "FairPCABase", FairPCABase)
    found = fairpca.all_estimators()
    assert GroupBalancedPCA in found and FairPCABase not in found
    monkeypatch.undo()
    # The registry holds exactly the estimator classes the package exports.
    exported = {
        name
        for name in fairpca.__all__
        if inspect.isclass(obj := getattr(fairpca, name))
        and issubclass(obj, sklearn.base.BaseEstimator)
        and not inspect.isabstract(obj)
    }
    assert exported == set(ESTIMATORS)


@pytest.mark.parametrize("cls", PROJECTIONS, ids=lambda c: c.__name__)
def test_group_blind_refit_keeps_no_attribute_of_the_fair_fit(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)) * [3.0, 2.0, 1.0, 0.5]
    s = np.repeat([0, 1], 30)
    X[s == 1] += [0.0, 1.0, 0.0, 0.0]
    est = cls(n_components=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence of the fair fit is not the point here
        fair_attributes = set(vars(est.fit(X, sensitive_features=s)))
    with pytest.warns(UserWarning, match="group-blind"):
        est.fit(X)
    blind = cls(n_components=2)
    with pytest.warns(UserWarning, match="group-blind"):
        blind.fit(X)
    # Refitting without groups leaves exactly what a fresh group-blind fit has.
    assert set(vars(est)) == set(vars(blind))
    assert fair_attributes - set(vars(est)), "the fair fit should have had its own attributes"
    assert est.n_iter_ == 1 and est.converged_
    np.testing.assert_allclose(est.components_, PCA(n_components=2).fit(X).components_, atol=1e-8)


@pytest.mark.parametrize("cls", PROJECTIONS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("fraction", [0.3, 0.8])
def test_fraction_n_components_fits_the_pca_number_of_components(cls, fraction):
    from sklearn.decomposition import PCA

    X, s = make_gaussian_groups(n_samples=400, n_features=7, random_state=2)
    d = PCA(n_components=fraction).fit(X).n_components_
    params = {"random_state": 0} if "random_state" in cls().get_params() else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_fraction = cls(n_components=fraction, **params).fit(X, sensitive_features=s)
        by_count = cls(n_components=d, **params).fit(X, sensitive_features=s)
    np.testing.assert_allclose(by_fraction.components_, by_count.components_, atol=1e-10)


def test_fraction_n_components_on_dask_and_partial_fit_and_bad_values():
    from sklearn.decomposition import PCA

    da = pytest.importorskip("dask.array")
    X, s = make_gaussian_groups(n_samples=600, n_features=6, random_state=3)
    d = PCA(n_components=0.7).fit(X).n_components_
    lazy = fairpca.MeanMatchingFairPCA(n_components=0.7).fit(
        da.from_array(X, chunks=(200, 6)), sensitive_features=s
    )
    streamed = fairpca.MeanMatchingFairPCA(n_components=0.7)
    for start in range(0, 600, 300):
        streamed.partial_fit(X[start : start + 300], sensitive_features=s[start : start + 300])
    assert lazy.n_components_ == streamed.n_components_ == d
    for bad in (0.0, 1.0, 1.5, -0.2, float("nan")):
        est = fairpca.MeanMatchingFairPCA(n_components=bad)
        with pytest.raises(ValueError, match="fraction of the variance in"):
            est.fit(X, sensitive_features=s)
        assert not hasattr(est, "components_")
    with pytest.raises(TypeError, match="must be an int or a fraction"):
        fairpca.MeanMatchingFairPCA(n_components="2").fit(X, sensitive_features=s)


@pytest.mark.parametrize("cls", PROJECTIONS, ids=lambda c: c.__name__)
def test_integer_sample_weight_equals_repeating_rows(cls):
    X, s = make_gaussian_groups(n_samples=300, n_features=6, random_state=4)
    w = np.random.default_rng(4).integers(0, 4, size=300)
    params = {"random_state": 0} if "random_state" in cls().get_params() else {}
    est = cls(n_components=2, **params)
    if not cls._moments_only:
        with pytest.raises(TypeError, match="does not support sample_weight"):
            est.fit(X, sensitive_features=s, sample_weight=w)
        assert not hasattr(est, "n_features_in_")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = est.fit(X, sensitive_features=s, sample_weight=w)
        repeated = cls(n_components=2, **params).fit(
            np.repeat(X, w, 0), sensitive_features=np.repeat(s, w)
        )
    # The moments agree to rounding: a direct solver's projection to 1e-10, an iterative
    # solver's answer at the level its stopping rule guarantees (answers.py).
    assert_same_answer(weighted, repeated)
    if cls is fairpca.MeanMatchingFairPCA:
        np.testing.assert_allclose(
            weighted.explained_variance_, repeated.explained_variance_, rtol=1e-10
        )
    np.testing.assert_allclose(weighted.group_counts_, repeated.group_counts_)


def test_sample_weight_in_partial_fit_and_bad_weights():
    da = pytest.importorskip("dask.array")
    X, s = make_gaussian_groups(n_samples=400, n_features=5, random_state=5)
    w = np.random.default_rng(5).uniform(0, 2, size=400)
    ref = fairpca.MeanMatchingFairPCA().fit(X, sensitive_features=s, sample_weight=w)
    streamed = fairpca.MeanMatchingFairPCA()
    for start in range(0, 400, 150):
        rows = slice(start, start + 150)
        streamed.partial_fit(X[rows], sensitive_features=s[rows], sample_weight=w[rows])
    np.testing.assert_allclose(streamed.components_, ref.components_, atol=1e-10)
    # Zero weights drop rows.
    keep = w > 0.5
    dropped = fairpca.MeanMatchingFairPCA().fit(X[keep], sensitive_features=s[keep])
    zeroed = fairpca.MeanMatchingFairPCA().fit(X, sensitive_features=s, sample_weight=keep * 1.0)
    np.testing.assert_allclose(zeroed.components_, dropped.components_, atol=1e-10)
    est = fairpca.MeanMatchingFairPCA()
    for bad, error in ((np.full(400, np.nan), ValueError), (-w, ValueError), (w[:5], ValueError)):
        with pytest.raises(error, match="sample_weight"):
            est.fit(X, sensitive_features=s, sample_weight=bad)
        assert not hasattr(est, "components_")
    with pytest.raises(TypeError, match="not supported on Dask input"):
        est.fit(da.from_array(X, chunks=100), sensitive_features=s, sample_weight=w)
    erased = fairpca.LinearErasure().fit(X, sensitive_features=s, sample_weight=np.repeat(2, 400))
    np.testing.assert_allclose(
        erased.erasure_, fairpca.LinearErasure().fit(X, sensitive_features=s).erasure_, atol=1e-12
    )


@pytest.mark.parametrize(
    "cls",
    [*PROJECTIONS, fairpca.FairKernelPCA, fairpca.LinearErasure],
    ids=lambda c: c.__name__,
)
def test_attribute_table_cell_too_small_is_named(cls):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(120, 5))
    table = pd.DataFrame({"sex": rng.choice(["F", "M"], 120), "race": rng.choice(["a", "b"], 120)})
    table.loc[7, "race"] = "c"  # the cell (sex of row 7, "c") has one row
    est = cls()
    if cls is fairpca.LinearErasure:  # a group mean needs one row: not too small for it
        assert len(est.fit(X, sensitive_features=table).groups_) == 5
        return
    with pytest.raises(ValueError, match=rf"\('{table.loc[7, 'sex']}', 'c'\) \(1 rows\)"):
        est.fit(X, sensitive_features=table)
    assert not hasattr(est, "n_features_in_")


@pytest.mark.parametrize("dtype", ["string", "boolean", "object"])
def test_pandas_missing_labels_are_called_missing(dtype):
    """``pd.NA`` in a nullable column is a missing label, not a second label type."""
    X, s = make_gaussian_groups(n_samples=40, n_features=3, random_state=0)
    values = (s == s[0]) if dtype == "boolean" else np.where(s == s[0], "a", "b")
    labels = pd.Series(values, dtype=dtype)
    labels[3] = pd.NA
    with pytest.raises(ValueError, match=r"missing labels \(None, NaN or pd.NA\)"):
        GroupBalancedPCA(n_components=2).fit(X, sensitive_features=labels)


def test_dask_partitions_with_permuted_columns_are_aligned_by_name(tmp_path):
    """CSV files listing the columns in another order: each partition is put in order."""
    dd = pytest.importorskip("dask.dataframe")
    X, s = make_gaussian_groups(n_samples=200, n_features=4, random_state=0)
    X = X * np.array([1.0, 2.0, 3.0, 4.0])
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame.iloc[:100].to_csv(tmp_path / "x0.csv", index=False)
    frame.iloc[100:][["c", "a", "d", "b"]].to_csv(tmp_path / "x1.csv", index=False)
    labels = pd.DataFrame({"s": s})
    labels.iloc[:100].to_csv(tmp_path / "s0.csv", index=False)
    labels.iloc[100:].to_csv(tmp_path / "s1.csv", index=False)
    lazy_X = dd.read_csv([str(tmp_path / "x0.csv"), str(tmp_path / "x1.csv")])
    lazy_s = dd.read_csv([str(tmp_path / "s0.csv"), str(tmp_path / "s1.csv")])["s"]
    lazy = fairpca.MeanMatchingFairPCA(n_components=2).fit(lazy_X, sensitive_features=lazy_s)
    eager = fairpca.MeanMatchingFairPCA(n_components=2).fit(frame, sensitive_features=s)
    assert list(lazy.feature_names_in_) == list("abcd")
    np.testing.assert_allclose(lazy.moments_.means, eager.moments_.means, rtol=1e-12)
    np.testing.assert_allclose(lazy.components_, eager.components_, atol=1e-10)

    frame.iloc[100:].rename(columns={"d": "e"}).to_csv(tmp_path / "x1.csv", index=False)
    renamed = dd.read_csv([str(tmp_path / "x0.csv"), str(tmp_path / "x1.csv")])
    est = fairpca.MeanMatchingFairPCA(n_components=2)
    with pytest.raises(
        ValueError, match=r"a partition of X has the columns \['a', 'b', 'c', 'e'\]"
    ):
        est.fit(renamed, sensitive_features=lazy_s)
    assert not hasattr(est, "components_")


# ------------------------------------------------------- registry and capabilities
def _small(cls, **params):
    """``cls`` with one component (where it has them) and a seed (where it takes one)."""
    defaults = cls().get_params()
    if "n_components" in defaults:
        params.setdefault("n_components", 1)
    if "random_state" in defaults:
        params.setdefault("random_state", 0)
    return cls(**params)


def _shifted_groups(n=120, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.linspace(3.0, 0.5, p)
    s = np.repeat([0, 1], n // 2)
    X[s == 1, 1] += 2.0
    return X, s


def test_all_estimators_lists_the_ten_and_filters_by_capability():
    from fairpca._registry import ESTIMATORS

    assert fairpca.all_estimators() == list(ESTIMATORS.values())
    assert len(ESTIMATORS) == 12
    # In the order of fairpca.__all__.
    assert list(ESTIMATORS) == [name for name in fairpca.__all__ if name in ESTIMATORS]
    assert fairpca.all_estimators(linear_projection=True) == [
        *PROJECTIONS[:1],
        fairpca.FairPLS,
        *PROJECTIONS[1:],
        fairpca.StreamingFairPCA,
    ]
    assert fairpca.all_estimators(supervised=True) == [fairpca.FairPLS]
    assert fairpca.all_estimators(linear_projection=False) == [
        fairpca.FairKernelPCA,
        fairpca.LinearErasure,
        fairpca.QuadraticErasure,
    ]
    assert fairpca.all_estimators(transform_needs_groups=True) == [fairpca.QuadraticErasure]
    assert fairpca.all_estimators(partial_fit=False) == [fairpca.FairKernelPCA, fairpca.MMDFairPCA]
    assert fairpca.all_estimators(fair=False) == []
    with pytest.raises(TypeError, match="unknown capabilities"):
        fairpca.all_estimators(linear=True)
    table = fairpca.estimator_capabilities()
    assert list(table) == list(ESTIMATORS)
    assert fairpca.estimator_capabilities(fairpca.LinearErasure) is table["LinearErasure"]
    assert fairpca.estimator_capabilities(fairpca.LinearErasure()) is table["LinearErasure"]
    with pytest.raises(ValueError, match="unknown estimator 'PCA'"):
        fairpca.estimator_capabilities("PCA")


@pytest.mark.filterwarnings("ignore::UserWarning")  # small groups: not the point here
@pytest.mark.parametrize("cls", fairpca.all_estimators(supervised=False), ids=lambda c: c.__name__)
def test_capabilities_agree_with_the_classes(cls):
    """Each row of the table, checked by doing what it promises (or failing to)."""
    import scipy.sparse

    caps = fairpca.estimator_capabilities(cls)
    X, s = _shifted_groups()
    assert caps.fair and caps.name == cls.__name__
    est = _small(cls).fit(X, sensitive_features=s)
    assert list(est.groups_) == [0, 1]
    assert hasattr(est, "partial_fit") == caps.partial_fit
    if caps.linear_projection:
        # components_ and a rank-d reconstruction (X - mean_) V^T V + mean_.
        V = est.components_
        np.testing.assert_allclose(V @ V.T, np.eye(V.shape[0]), atol=1e-10)
        back = est.inverse_transform(est.transform(X))
        assert np.linalg.matrix_rank(back - est.mean_, tol=1e-8) == V.shape[0]
    else:
        assert not (hasattr(est, "components_") and hasattr(est, "inverse_transform"))
    # transform needs the groups after a grouped fit exactly when declared so.
    assert est.transform(X, **transform_kwargs(est, s)).shape[0] == len(X)
    try:
        est.transform(X)
        took_x_alone = True
    except ValueError as error:
        assert "needs sensitive_features" in str(error)
        took_x_alone = False
    assert took_x_alone != caps.transform_needs_groups
    try:
        _small(cls).fit(scipy.sparse.csr_matrix(X), sensitive_features=s)
        took_sparse = True
    except TypeError:
        took_sparse = False
    assert took_sparse == caps.sparse
    try:
        _small(cls).fit(X, sensitive_features=s, sample_weight=np.ones(len(X)))
        took_weights = True
    except TypeError:
        took_weights = False
    assert took_weights == caps.sample_weight
    da = pytest.importorskip("dask.array")
    try:
        _small(cls).fit(da.from_array(X, chunks=(40, -1)), sensitive_features=s)
        took_dask = True
    except TypeError:
        took_dask = False
    assert took_dask == caps.dask


def test_compare_leaves_out_the_estimators_whose_transform_needs_groups():
    """fairpca compare transforms the test rows without groups: those would crash."""
    from fairpca._methods import make_methods

    needs = {cls.__name__ for cls in fairpca.all_estimators(transform_needs_groups=True)}
    takes_x = [
        cls.__name__
        for cls in fairpca.all_estimators(transform_needs_groups=False, supervised=False)
    ]
    assert needs == {"QuadraticErasure"}
    assert sorted(make_methods(2, 0)) == sorted(["PCA", *takes_x])
    with pytest.raises(ValueError, match="unknown method"):
        make_methods(2, 0, names=["QuadraticErasure"])


# --------------------------------------------------------- fitting without groups
def _state(est):
    """What an estimator holds, comparable before and after a failed call."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(est).items()}


def _assert_same_state(est, state):
    assert set(vars(est)) == set(state)
    for k, v in state.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(getattr(est, k), v)
        else:
            assert getattr(est, k) is v


@pytest.mark.parametrize("cls", fairpca.all_estimators(supervised=False), ids=lambda c: c.__name__)
def test_without_groups_one_policy_for_all_ten(cls):
    """fit(X) fits the group-blind answer with a GroupBlindFitWarning, the same for all."""
    X, s = _shifted_groups()
    est = _small(cls)
    with pytest.warns(fairpca.GroupBlindFitWarning, match=rf"{cls.__name__}\.fit was called"):
        est.fit(X)
    assert est.groups_ is None
    if cls is fairpca.LinearErasure:
        # Nothing to erase: the identity edit.
        assert est.rank_ == 0
        np.testing.assert_array_equal(est.transform(X), X)
    elif cls is fairpca.QuadraticErasure:
        # The identity edit, which takes X alone (no group to map from).
        assert est.n_barycenter_iter_ == 0
        np.testing.assert_array_equal(est.transform(X), X)
    elif cls is fairpca.FairKernelPCA:
        assert est.n_constraints_ == 0
    else:
        # Group-blind PCA (StreamingFairPCA: its power method, to its tolerance).
        pca = PCA(n_components=1).fit(X)
        assert abs(est.components_[0] @ pca.components_[0]) == pytest.approx(1.0, abs=1e-8)
    if fairpca.estimator_capabilities(cls).partial_fit:
        stream = _small(cls, **({"block_size": 60} if cls is fairpca.StreamingFairPCA else {}))
        with pytest.warns(fairpca.GroupBlindFitWarning, match=r"\.partial_fit was called"):
            stream.partial_fit(X[:60])
        with pytest.warns(fairpca.GroupBlindFitWarning):
            stream.partial_fit(X[60:])
        assert stream.groups_ is None
        with pytest.raises(ValueError, match="in every partial_fit call or in none"):
            stream.partial_fit(X[:40], sensitive_features=s[:40])


@pytest.mark.parametrize("cls", fairpca.all_estimators(supervised=False), ids=lambda c: c.__name__)
def test_without_groups_refused_when_required(cls):
    """require_groups (parameter, package setting, routed request): a ValueError, no change."""
    X, s = _shifted_groups()
    est = _small(cls, require_groups=True)
    fresh = _state(est)
    with pytest.raises(ValueError, match=rf"{cls.__name__}\(require_groups=True\)"):
        est.fit(X)
    _assert_same_state(est, fresh)
    # A fitted estimator keeps its fair fit.
    est.fit(X, sensitive_features=s)
    fitted = _state(est)
    with pytest.raises(ValueError, match="groups are required"):
        est.fit(X)
    _assert_same_state(est, fitted)
    assert sklearn.base.clone(est).require_groups is True
    if hasattr(est, "partial_fit"):
        with pytest.raises(ValueError, match=r"\.partial_fit was called without"):
            est.partial_fit(X)
        _assert_same_state(est, fitted)
    # The package setting, for the default parameter.
    est = _small(cls)
    with fairpca.config_context(require_groups=True), pytest.raises(ValueError, match="set_config"):
        est.fit(X)
    _assert_same_state(est, _state(_small(cls)))
    # A routed request that the router could not satisfy.
    with sklearn.config_context(enable_metadata_routing=True):
        routed = _small(cls).set_fit_request(sensitive_features=True)
        with pytest.raises(ValueError, match="metadata routing is enabled"):
            routed.fit(X)
        with pytest.raises(ValueError, match="metadata routing is enabled"):
            make_pipeline(routed).fit(X)
        make_pipeline(routed).fit(X, sensitive_features=s)
        # Not requested: the default policy.
        with pytest.warns(fairpca.GroupBlindFitWarning):
            make_pipeline(_small(cls).set_fit_request(sensitive_features=False)).fit(X)


@pytest.mark.parametrize("cls", fairpca.all_estimators(), ids=lambda c: c.__name__)
def test_require_groups_must_be_a_bool(cls):
    X, s = _shifted_groups()
    est = _small(cls, require_groups="yes")
    with pytest.raises(TypeError, match="require_groups must be True or False"):
        est.fit(X, sensitive_features=s)
    assert not hasattr(est, "n_features_in_")
    assert "require_groups : bool, default=False" in cls.__doc__


# ------------------------------------------------------------ the front door
class _GroupMeans(fairpca._mixins.FairpcaMixin, sklearn.base.BaseEstimator):
    """A new estimator as the front door lets one be written: declarations and a solve."""

    _supports_dask = _supports_sparse = _supports_sample_weight = _supports_partial_fit = True
    _group_blind_fit = "the pooled mean"

    def __init__(self, require_groups=False):
        self.require_groups = require_groups

    def _fit_from_moments(self, moments, *, grouped, fair):
        self.means_ = moments.means if fair else moments.pooled_mean[None]
        self.groups_ = moments.groups if grouped else None
        self.moments_ = moments


class _RowReader(_GroupMeans):
    """One that reads rows: the front door refuses what it does not declare."""

    _supports_dask = _supports_sparse = _supports_sample_weight = _supports_partial_fit = False

    def _fit_in_memory(self, X, y, sensitive_features, weights):
        self.n_rows_ = X.shape[0]


def test_a_new_estimator_writes_only_its_solve():
    import scipy.sparse

    X, s = _shifted_groups()
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    est = _GroupMeans().fit(frame, sensitive_features=s)
    np.testing.assert_allclose(est.means_, [X[s == 0].mean(0), X[s == 1].mean(0)])
    assert list(est.feature_names_in_) == list(frame.columns) and est.n_features_in_ == 5
    sparse = _GroupMeans().fit(scipy.sparse.csr_matrix(X), sensitive_features=s)
    np.testing.assert_allclose(sparse.means_, est.means_)
    w = np.random.default_rng(0).integers(0, 3, size=len(X))
    weighted = _GroupMeans().fit(X, sensitive_features=s, sample_weight=w)
    repeated = _GroupMeans().fit(np.repeat(X, w, 0), sensitive_features=np.repeat(s, w))
    np.testing.assert_allclose(weighted.means_, repeated.means_)
    stream = _GroupMeans().partial_fit(X[:70], sensitive_features=s[:70])
    stream.partial_fit(X[70:], sensitive_features=s[70:])
    np.testing.assert_allclose(stream.means_, est.means_)
    with (
        pytest.warns(fairpca.GroupBlindFitWarning),
        pytest.raises(ValueError, match="in every partial_fit call or in none"),
    ):
        stream.partial_fit(X)
    with pytest.warns(fairpca.GroupBlindFitWarning, match="fitting the pooled mean"):
        assert _GroupMeans().fit(X).groups_ is None
    refused = _GroupMeans(require_groups=True)
    with pytest.raises(ValueError, match="groups are required"):
        refused.fit(X)
    assert vars(refused) == {"require_groups": True}
    assert sklearn.base.clone(est).get_params() == {"require_groups": False}
    da = pytest.importorskip("dask.array")
    lazy = _GroupMeans().fit(da.from_array(X, chunks=(40, -1)), sensitive_features=s)
    np.testing.assert_allclose(lazy.means_, est.means_)


def test_the_front_door_refuses_what_an_estimator_does_not_declare():
    import scipy.sparse

    X, s = _shifted_groups()
    est = _RowReader().fit(X, sensitive_features=s)
    assert est.n_rows_ == len(X) and not hasattr(est, "partial_fit")
    with pytest.raises(TypeError, match="_RowReader does not accept sparse X"):
        _RowReader().fit(scipy.sparse.csr_matrix(X), sensitive_features=s)
    with pytest.raises(TypeError, match="_RowReader does not support sample_weight"):
        _RowReader().fit(X, sensitive_features=s, sample_weight=np.ones(len(X)))
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match="_RowReader needs the rows of X"):
        _RowReader().fit(da.from_array(X, chunks=(40, -1)), sensitive_features=s)
    # A failed fit leaves the earlier one.
    with pytest.raises(ValueError):
        est.fit(X[:1], sensitive_features=s[:1])
    assert est.n_rows_ == len(X)
