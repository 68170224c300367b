"""MeanMatchingFairPCA against independent constructions of Kleindessner et al.'s solution."""

import numpy as np
import pytest
import scipy.linalg
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score

from fairpca import MeanMatchingFairPCA
from fairpca.datasets import make_gaussian_groups


def _projector(C):
    return C.T @ C


def _group_data(k, p=8, n=900, seed=0):
    return make_gaussian_groups(n_samples=n, n_features=p, n_groups=k, random_state=seed)


def _independent_solution(X, s, d):
    """Null space of the mean differences (scipy), then PCA of the pooled data there."""
    mu = X.mean(axis=0)
    diffs = np.array([X[s == g].mean(axis=0) - mu for g in np.unique(s)])
    N = scipy.linalg.null_space(diffs)
    cov = np.cov(X, rowvar=False, bias=True)
    values, vectors = np.linalg.eigh(N.T @ cov @ N)
    return (N @ vectors[:, ::-1][:, :d]).T


@pytest.mark.parametrize("k", [2, 3, 5])
def test_projected_group_means_are_equal_and_components_orthonormal(k):
    X, s = _group_data(k)
    est = MeanMatchingFairPCA(n_components=3).fit(X, sensitive_features=s)
    Z = est.transform(X)
    means = np.array([Z[s == g].mean(axis=0) for g in np.unique(s)])
    scale = np.abs(Z).max()
    np.testing.assert_allclose(means - means.mean(axis=0), 0, atol=1e-10 * scale)
    # Zero cross-covariance with the one-hot groups.
    onehot = (s[:, None] == np.unique(s)[None, :]).astype(float)
    cross = (Z - Z.mean(0)).T @ (onehot - onehot.mean(0)) / len(s)
    np.testing.assert_allclose(cross, 0, atol=1e-10 * scale)
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(3), atol=1e-12)
    assert est.n_constraints_ == k - 1 and est.mean_gap_ < 1e-10 * scale


@pytest.mark.parametrize("k", [2, 4])
def test_same_subspace_as_an_independent_construction(k):
    X, s = _group_data(k, seed=k)
    est = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=s)
    expected = _independent_solution(X, s, 2)
    np.testing.assert_allclose(_projector(est.components_), _projector(expected), atol=1e-10)


def test_optimal_among_feasible_subspaces():
    X, s = _group_data(3, seed=7)
    est = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=s)
    cov = np.cov(X, rowvar=False, bias=True)
    best = np.trace(est.components_ @ cov @ est.components_.T)
    N = scipy.linalg.null_space(np.array([X[s == g].mean(0) - X.mean(0) for g in np.unique(s)]))
    rng = np.random.default_rng(0)
    for _ in range(200):
        Q, _ = np.linalg.qr(N @ rng.normal(size=(N.shape[1], 2)))
        assert np.trace(Q.T @ cov @ Q) <= best + 1e-12


def test_mean_penalty_moves_from_pca_to_mean_matching():
    X, s = _group_data(2, seed=3)
    pca = PCA(n_components=2).fit(X)
    plain = MeanMatchingFairPCA(n_components=2, mean_penalty=0.0).fit(X, sensitive_features=s)
    np.testing.assert_allclose(
        _projector(plain.components_), _projector(pca.components_), atol=1e-10
    )
    fair = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=s)
    gaps, variances = [], []
    for penalty in (0.0, 0.1, 1.0, 10.0, 1e3, 1e6):
        est = MeanMatchingFairPCA(n_components=2, mean_penalty=penalty).fit(X, sensitive_features=s)
        gaps.append(est.mean_gap_)
        variances.append(est.explained_variance_ratio_.sum())
    assert np.all(np.diff(gaps) <= 1e-12) and np.all(np.diff(variances) <= 1e-12)
    assert gaps[0] > 1e4 * gaps[-1] > 0
    np.testing.assert_allclose(_projector(est.components_), _projector(fair.components_), atol=1e-5)


def test_covariance_matching_two_groups_is_kleindessners_construction():
    X, s = _group_data(2, p=8, seed=5)
    X[s == 1, :3] *= 2.0  # group covariances differ in some directions
    d, rank = 2, 4
    est = MeanMatchingFairPCA(n_components=d, covariance_rank=rank).fit(X, sensitive_features=s)
    # Independent: null space of the mean difference; there, the eigenvectors of the
    # covariance difference with the smallest |eigenvalue|; then PCA of the pooled data.
    N = scipy.linalg.null_space((X[s == 1].mean(0) - X[s == 0].mean(0))[None])
    diff = np.cov(X[s == 1], rowvar=False, bias=True) - np.cov(X[s == 0], rowvar=False, bias=True)
    values, vectors = np.linalg.eigh(N.T @ diff @ N)
    keep = N @ vectors[:, np.argsort(np.abs(values))[:rank]]
    cov = np.cov(X, rowvar=False, bias=True)
    w, v = np.linalg.eigh(keep.T @ cov @ keep)
    expected = (keep @ v[:, ::-1][:, :d]).T
    np.testing.assert_allclose(_projector(est.components_), _projector(expected), atol=1e-9)
    # Keeping every direction of the null space is plain mean matching.
    full = MeanMatchingFairPCA(n_components=d, covariance_rank=7).fit(X, sensitive_features=s)
    plain = MeanMatchingFairPCA(n_components=d).fit(X, sensitive_features=s)
    np.testing.assert_allclose(
        _projector(full.components_), _projector(plain.components_), atol=1e-10
    )


def test_vanishing_constraint_is_dropped():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5)) * [3, 2, 1, 1, 0.5]
    s = np.repeat([0, 1, 2], 200)
    X[s == 1] += [0, 2, 0, 0, 0]
    X[s == 2] -= [0, 2, 0, 0, 0]
    X -= X.mean(0)
    X[s == 0] -= X[s == 0].mean(0)  # group 0's mean equals the pooled mean
    X[s == 1] -= X[s == 1].mean(0) - [0, 2, 0, 0, 0]
    X[s == 2] -= X[s == 2].mean(0) + [0, 2, 0, 0, 0]
    est = MeanMatchingFairPCA(n_components=4).fit(X, sensitive_features=s)
    assert est.n_constraints_ == 1  # groups 1 and 2 are mirror images: one direction
    with pytest.raises(ValueError, match=r"larger than the 4 dimensions left .* 1 independent"):
        MeanMatchingFairPCA(n_components=5).fit(X, sensitive_features=s)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"mean_penalty": -1.0}, ValueError, "mean_penalty"),
        ({"mean_penalty": float("nan")}, ValueError, "mean_penalty"),
        ({"mean_penalty": "big"}, TypeError, "mean_penalty"),
        ({"covariance_rank": 0}, ValueError, "covariance_rank"),
        ({"covariance_rank": 2.5}, TypeError, "covariance_rank"),
        ({"covariance_rank": 3, "mean_penalty": 1.0}, ValueError, "mean_penalty=inf"),
        ({"covariance_rank": 1}, ValueError, "between n_components=2"),
    ],
)
def test_bad_parameters_are_refused(params, error, match):
    X, s = _group_data(2)
    est = MeanMatchingFairPCA(n_components=2, **params)
    with pytest.raises(error, match=match):
        est.fit(X, sensitive_features=s)
    assert not hasattr(est, "components_")


def _balanced_accuracy_of_group(Z_train, s_train, Z_test, s_test):
    clf = LogisticRegression(max_iter=2000).fit(Z_train, s_train)
    return balanced_accuracy_score(s_test, clf.predict(Z_test))


@pytest.mark.requires_data
@pytest.mark.parametrize("dataset", ["adult", "compas"])
def test_held_out_groups_not_linearly_predictable_on_real_data(dataset):
    from fairpca.experiments import lee2022

    split = lee2022(dataset, split=0)
    d = 10
    fair = MeanMatchingFairPCA(n_components=d).fit(split.X_train, sensitive_features=split.s_train)
    pca = PCA(n_components=d).fit(split.X_train)
    fair_acc = _balanced_accuracy_of_group(
        fair.transform(split.X_train), split.s_train, fair.transform(split.X_test), split.s_test
    )
    pca_acc = _balanced_accuracy_of_group(
        pca.transform(split.X_train), split.s_train, pca.transform(split.X_test), split.s_test
    )
    assert abs(fair_acc - 0.5) <= 0.02, fair_acc
    assert pca_acc > 0.6, pca_acc


def _two_attributes(seed=0, n=1200, p=8):
    rng = np.random.default_rng(seed)
    sex = rng.choice(np.array(["F", "M"]), size=n, p=[0.4, 0.6])
    race = rng.choice(np.array(["a", "b", "c"]), size=n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p))
    X += (sex == "F")[:, None] * rng.normal(size=p) + (race == "b")[:, None] * rng.normal(size=p)
    X += ((sex == "F") & (race == "c"))[:, None] * 2 * rng.normal(size=p)  # an interaction
    import pandas as pd

    return X, pd.DataFrame({"sex": sex, "race": race})


def test_intersectional_groups_have_equal_projected_means():
    X, attrs = _two_attributes()
    est = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=attrs)
    assert set(est.groups_) == {(s, r) for s in "FM" for r in "abc"}
    assert est.n_constraints_ == 5
    Z = est.transform(X)
    cells = attrs["sex"] + attrs["race"]
    means = np.array([Z[cells == c].mean(0) for c in np.unique(cells)])
    np.testing.assert_allclose(means - means.mean(0), 0, atol=1e-10 * np.abs(Z).max())
    # The same as one label per intersection, built by hand.
    by_hand = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=cells.to_numpy())
    np.testing.assert_allclose(
        _projector(est.components_), _projector(by_hand.components_), atol=1e-10
    )


def test_separate_attributes_equalise_each_attribute_only():
    X, attrs = _two_attributes(seed=1)
    est = MeanMatchingFairPCA(n_components=3, attributes="separate").fit(
        X, sensitive_features=attrs
    )
    assert est.n_constraints_ == 1 + 2
    Z = est.transform(X)
    scale = np.abs(Z).max()
    for column in ("sex", "race"):
        means = np.array([Z[attrs[column] == v].mean(0) for v in np.unique(attrs[column])])
        np.testing.assert_allclose(means - means.mean(0), 0, atol=1e-10 * scale)
    # The interaction cell is not constrained: its mean differs.
    cell = ((attrs["sex"] == "F") & (attrs["race"] == "c")).to_numpy()
    assert np.abs(Z[cell].mean(0) - Z.mean(0)).max() > 1e-3 * scale
    # Independent: null space of every attribute value's mean difference, then PCA.
    diffs = [
        X[(attrs[c] == v).to_numpy()].mean(0) - X.mean(0)
        for c in ("sex", "race")
        for v in np.unique(attrs[c])
    ]
    N = scipy.linalg.null_space(np.array(diffs))
    cov = np.cov(X, rowvar=False, bias=True)
    expected = (N @ np.linalg.eigh(N.T @ cov @ N)[1][:, ::-1][:, :3]).T
    np.testing.assert_allclose(_projector(est.components_), _projector(expected), atol=1e-10)


def test_attribute_table_errors_name_the_problem():
    X, attrs = _two_attributes(n=300)
    attrs.loc[0, "race"] = "z"  # a one-row intersection
    with pytest.raises(ValueError, match=r"\('F', 'z'\) \(1 rows\)|\('M', 'z'\) \(1 rows\)"):
        MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=attrs)
    attrs.loc[0, "race"] = None
    with pytest.raises(ValueError, match="column race contains missing labels"):
        MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=attrs)
    with pytest.raises(ValueError, match="attributes must be one of"):
        MeanMatchingFairPCA(attributes="both").fit(X, sensitive_features=attrs)


def test_attribute_table_on_dask_input_is_refused_with_a_way_out():
    da = pytest.importorskip("dask.array")
    X, attrs = _two_attributes(n=400)
    with pytest.raises(ValueError, match="one combined label per row"):
        MeanMatchingFairPCA().fit(da.from_array(X, chunks=100), sensitive_features=attrs.to_numpy())
    # partial_fit accepts the table: chunk by chunk it equals fit.
    ref = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=attrs)
    est = MeanMatchingFairPCA(n_components=2)
    for start in range(0, 400, 200):
        est.partial_fit(X[start : start + 200], sensitive_features=attrs.iloc[start : start + 200])
    np.testing.assert_allclose(_projector(est.components_), _projector(ref.components_), atol=1e-10)
