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


def test_attribute_table_on_dask_and_partial_fit_equals_fit():
    da = pytest.importorskip("dask.array")
    X, attrs = _two_attributes(n=1200)
    ref = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=attrs)
    lazy = MeanMatchingFairPCA(n_components=2).fit(
        da.from_array(X, chunks=(250, 8)), sensitive_features=attrs.to_numpy()
    )
    assert list(lazy.groups_) == list(ref.groups_)
    streamed = MeanMatchingFairPCA(n_components=2)
    for start in range(0, 1200, 500):
        streamed.partial_fit(
            X[start : start + 500], sensitive_features=attrs.iloc[start : start + 500]
        )
    for est in (lazy, streamed):
        np.testing.assert_allclose(
            _projector(est.components_), _projector(ref.components_), atol=1e-10
        )


def _with_continuous(seed=0, n=1500, p=7):
    """X driven by two continuous attributes (age, income) and a binary sex."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    attrs = pd.DataFrame(
        {
            "age": rng.uniform(18, 80, size=n),
            "sex": rng.choice(["F", "M"], size=n),
            "income": rng.lognormal(10, 0.5, size=n),
        }
    )
    X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p))
    X += np.outer((attrs["age"] - 50) / 15, 2 * rng.normal(size=p))
    X += np.outer(np.log(attrs["income"]) - 10, rng.normal(size=p))
    X += (attrs["sex"] == "F").to_numpy()[:, None] * rng.normal(size=p)
    return X, attrs


def _independent_cross_covariance_solution(X, Z, d):
    """scipy's null space of Cov(X, Z)^T, then PCA of the pooled data there."""
    cross = np.cov(np.column_stack([X, Z]), rowvar=False, bias=True)[: X.shape[1], X.shape[1] :]
    N = scipy.linalg.null_space(cross.T)
    cov = np.cov(X, rowvar=False, bias=True)
    return (N @ np.linalg.eigh(N.T @ cov @ N)[1][:, ::-1][:, :d]).T


def test_continuous_attributes_have_zero_cross_covariance():
    X, attrs = _with_continuous()
    Z = attrs[["age", "income"]].to_numpy()
    est = MeanMatchingFairPCA(n_components=3, continuous_attributes=True).fit(
        X, sensitive_features=Z
    )
    assert list(est.groups_) == [0] and est.n_constraints_ == 2
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(3), atol=1e-12)
    R = est.transform(X)
    cross = (R - R.mean(0)).T @ (Z - Z.mean(0)) / len(X)
    scale = np.sqrt(np.var(R, axis=0).max() * np.var(Z, axis=0))
    np.testing.assert_allclose(cross / scale, 0, atol=1e-10)
    assert est.covariance_gap_ < 1e-10 * np.sqrt(np.trace(np.cov(X, rowvar=False)))
    expected = _independent_cross_covariance_solution(X, Z, 3)
    np.testing.assert_allclose(_projector(est.components_), _projector(expected), atol=1e-10)


def test_groups_and_continuous_attribute_together():
    X, attrs = _with_continuous(seed=1)
    est = MeanMatchingFairPCA(n_components=3, continuous_attributes=["age"]).fit(
        X, sensitive_features=attrs[["sex", "age"]]
    )
    assert list(est.groups_) == ["F", "M"] and est.n_constraints_ == 2
    R = est.transform(X)
    female = (attrs["sex"] == "F").to_numpy()
    np.testing.assert_allclose(R[female].mean(0), R[~female].mean(0), atol=1e-10 * np.abs(R).max())
    Z = np.column_stack([female, attrs["age"]]).astype(float)
    expected = _independent_cross_covariance_solution(X, Z, 3)
    np.testing.assert_allclose(_projector(est.components_), _projector(expected), atol=1e-10)
    # Collinear continuous attributes constrain nothing more than one of them.
    doubled = attrs.assign(age2=2 * attrs["age"] + 1)[["sex", "age", "age2"]]
    again = MeanMatchingFairPCA(n_components=3, continuous_attributes=["age", "age2"]).fit(
        X, sensitive_features=doubled
    )
    assert again.n_constraints_ == 2
    np.testing.assert_allclose(
        _projector(again.components_), _projector(est.components_), atol=1e-10
    )


def test_continuous_attributes_on_dask_and_partial_fit_equal_fit():
    da = pytest.importorskip("dask.array")
    X, attrs = _with_continuous(seed=2, n=1200)
    table = attrs[["sex", "age"]]
    make = lambda: MeanMatchingFairPCA(n_components=2, continuous_attributes=[1])  # noqa: E731
    ref = make().fit(X, sensitive_features=table.to_numpy())
    lazy = make().fit(da.from_array(X, chunks=(250, 7)), sensitive_features=table.to_numpy())
    streamed = make()
    for start in range(0, 1200, 500):
        streamed.partial_fit(
            X[start : start + 500], sensitive_features=table.to_numpy()[start : start + 500]
        )
    for est in (lazy, streamed):
        np.testing.assert_allclose(
            _projector(est.components_), _projector(ref.components_), atol=1e-10
        )
        np.testing.assert_allclose(est.mean_, ref.mean_, rtol=1e-12)


def test_mean_penalty_trades_variance_for_cross_covariance():
    X, attrs = _with_continuous(seed=3)
    age = attrs["age"].to_numpy()
    fits = [
        MeanMatchingFairPCA(n_components=2, mean_penalty=t, continuous_attributes=True).fit(
            X, sensitive_features=age
        )
        for t in (0.0, 1.0, 100.0, np.inf)
    ]
    gaps = [f.covariance_gap_ for f in fits]
    kept = [f.explained_variance_.sum() for f in fits]
    assert all(a > b for a, b in zip(gaps, gaps[1:], strict=False)) and gaps[-1] < 1e-10
    assert all(a >= b for a, b in zip(kept, kept[1:], strict=False))
    pca = PCA(n_components=2).fit(X)
    np.testing.assert_allclose(
        _projector(fits[0].components_), _projector(pca.components_), atol=1e-8
    )


def test_held_out_continuous_attribute_not_linearly_predictable():
    from sklearn.linear_model import LinearRegression

    X, attrs = _with_continuous(seed=4, n=4000)
    age = attrs["age"].to_numpy()
    train, test = slice(0, 3000), slice(3000, None)
    fair = MeanMatchingFairPCA(n_components=3, continuous_attributes=True).fit(
        X[train], sensitive_features=age[train]
    )
    pca = PCA(n_components=3).fit(X[train])

    def held_out_r2(transform):
        model = LinearRegression().fit(transform(X[train]), age[train])
        return model.score(transform(X[test]), age[test])

    assert abs(held_out_r2(fair.transform)) < 0.01
    assert held_out_r2(pca.transform) > 0.3


@pytest.mark.parametrize(
    ("params", "table", "match"),
    [
        ({"continuous_attributes": True, "covariance_rank": 3}, "age", "at least two groups"),
        ({"continuous_attributes": ["age"]}, "constant", "'age' are constant"),
        ({"continuous_attributes": ["age"]}, "nan", "'age' contain NaN"),
        ({"continuous_attributes": ["height"]}, "both", "must list distinct columns"),
        ({"continuous_attributes": ["age", "age"]}, "both", "must list distinct columns"),
        ({"continuous_attributes": ["height"]}, "age", "does not name the single"),
    ],
)
def test_continuous_attribute_errors(params, table, match):
    X, attrs = _with_continuous(n=300)
    sensitive = {
        "age": attrs["age"],
        "constant": attrs[["sex", "age"]].assign(age=3.0),
        "nan": attrs[["sex", "age"]].assign(age=attrs["age"].where(attrs.index != 5)),
        "both": attrs[["sex", "age"]],
    }[table]
    est = MeanMatchingFairPCA(n_components=3, **params)
    with pytest.raises(ValueError, match=match):
        est.fit(X, sensitive_features=sensitive)
    assert not hasattr(est, "components_")


# --------------------------------------------------------------------------- covariance_ddof
def _fpca_s_from_scratch(X, s, d, rank, ddof):
    """Kleindessner's FPCA-S for two groups, written afresh with ``np.cov(..., ddof=ddof)``."""
    g0, g1 = np.unique(s)
    N = scipy.linalg.null_space((X[s == g1].mean(0) - X[s == g0].mean(0))[None])
    C0 = np.cov(X[s == g0], rowvar=False, ddof=ddof)
    C1 = np.cov(X[s == g1], rowvar=False, ddof=ddof)
    values, vectors = np.linalg.eigh(N.T @ (C1 - C0) @ N)
    R = N @ vectors[:, np.argsort(np.abs(values))[:rank]]
    total = np.cov(X, rowvar=False)
    return R @ np.linalg.eigh(R.T @ total @ R)[1][:, ::-1][:, :d]


def _largest_sine(U, V):
    """Largest principal-angle sine, as ``||(I - U U^T) V||_2`` (accurate near zero)."""
    return float(np.linalg.norm(V - U @ (U.T @ V), 2))


@pytest.mark.parametrize("ddof", [0, 1])
def test_covariance_ddof_matches_np_cov(ddof):
    # Small groups of unequal sizes: n_a / (n_a - 1) differs between them.
    rng = np.random.default_rng(3)
    s = np.repeat([0, 1], [9, 40])
    X = rng.standard_normal((49, 6)) @ rng.standard_normal((6, 6)) + np.outer(s, rng.normal(size=6))
    est = MeanMatchingFairPCA(n_components=2, covariance_rank=3, covariance_ddof=ddof)
    est.fit(X, sensitive_features=s)
    expected = _fpca_s_from_scratch(X, s, 2, 3, ddof)
    assert _largest_sine(expected, est.components_.T) <= 1e-8
    other = _fpca_s_from_scratch(X, s, 2, 3, 1 - ddof)
    assert _largest_sine(other, est.components_.T) > 1e-3  # the convention matters here


@pytest.mark.parametrize("bad", [2, -1, 0.5, True, "1", None])
def test_covariance_ddof_is_validated(bad):
    X = np.random.default_rng(0).normal(size=(30, 4))
    s = np.arange(30) % 2
    with pytest.raises(ValueError, match="covariance_ddof must be 0"):
        MeanMatchingFairPCA(covariance_ddof=bad).fit(X, sensitive_features=s)


@pytest.mark.requires_data("authors")
def test_covariance_ddof_one_matches_np_cov_on_german_credit():
    from fairpca.experiments import lee2022

    split = lee2022("german_credit", split=0)  # the authors' processed German credit
    X, s = split.X_train, split.s_train
    # 12 directions have no variance in either group (dependent one-hot columns): the
    # covariance differences' smallest |eigenvalues| are 12 zeros, then 2.9e-2 (3.8e-2
    # with ddof=1), 6.8e-2 (6.4e-2), 1.0e-1 (9.6e-2): rank 14 ends at a clear gap.
    d, rank = 2, 14
    fits = {
        ddof: MeanMatchingFairPCA(n_components=d, covariance_rank=rank, covariance_ddof=ddof)
        .fit(X, sensitive_features=s)
        .components_.T
        for ddof in (0, 1)
    }
    for ddof, V in fits.items():
        assert _largest_sine(_fpca_s_from_scratch(X, s, d, rank, ddof), V) <= 1e-6
    # The two conventions give different subspaces on these data.
    assert _largest_sine(fits[0], fits[1]) > 1e-2


def test_continuous_attributes_type_is_checked():
    X = np.random.default_rng(0).normal(size=(30, 4))
    s = np.arange(30) % 2
    with pytest.raises(TypeError, match="continuous_attributes must be None, True/False"):
        MeanMatchingFairPCA(continuous_attributes=3.5).fit(X, sensitive_features=s)
