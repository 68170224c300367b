"""LinearErasure (LEACE) against its defining properties and a general-purpose solver."""

import numpy as np
import pytest
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import fairpca
from fairpca import LinearErasure
from fairpca.datasets import make_gaussian_groups


def _group_means(X, s):
    return np.array([X[s == g].mean(axis=0) for g in np.unique(s)])


@pytest.mark.parametrize("k", [2, 3, 4])
def test_group_means_equal_and_cross_covariance_zero(k):
    X, s = make_gaussian_groups(n_samples=800, n_features=6, n_groups=k, random_state=k)
    est = LinearErasure().fit(X, sensitive_features=s)
    Y = est.transform(X)
    assert Y.shape == X.shape and est.rank_ == k - 1
    means = _group_means(Y, s)
    np.testing.assert_allclose(means - means.mean(0), 0, atol=1e-10 * np.abs(X).max())
    onehot = (s[:, None] == np.unique(s)[None, :]).astype(float)
    cross = (Y - Y.mean(0)).T @ (onehot - onehot.mean(0)) / len(s)
    np.testing.assert_allclose(cross, 0, atol=1e-10 * np.abs(X).max())
    # The pooled mean is kept and a second erasure changes nothing.
    np.testing.assert_allclose(Y.mean(0), X.mean(0), atol=1e-12 * np.abs(X).max())
    again = LinearErasure().fit(Y, sensitive_features=s)
    assert again.rank_ == 0
    np.testing.assert_allclose(again.transform(Y), Y, atol=1e-10)


def _one_hot(s):
    return (s[:, None] == np.unique(s)[None, :]).astype(float)


def _constrained_least_squares(X, Z, M):
    """min_A E||A (x - mu)||_M^2 s.t. (I - A) Sigma_XZ = 0, from its KKT system.

    With a = vec(A) (column-major) the cost is a^T (Sigma kron M) a and the
    constraint (Sigma_XZ^T kron I) a = vec(Sigma_XZ): a generic equality-
    constrained quadratic program, solved by least squares on its KKT matrix.
    """
    p = X.shape[1]
    Xc = X - X.mean(0)
    cov = Xc.T @ Xc / len(X)
    cross = Xc.T @ (Z - Z.mean(0)) / len(X)
    H = np.kron(cov, M)
    G = np.kron(cross.T, np.eye(p))
    m = G.shape[0]
    kkt = np.block([[2 * H, G.T], [G, np.zeros((m, m))]])
    rhs = np.concatenate([np.zeros(p * p), cross.ravel(order="F")])
    solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
    A = solution[: p * p].reshape(p, p, order="F")
    np.testing.assert_allclose(A @ cross, cross, atol=1e-10)
    return np.trace(M @ A @ cov @ A.T), A


@pytest.mark.parametrize("norm", ["whitened", "euclidean"])
def test_edit_is_the_smallest_among_erasers(norm):
    X, s = make_gaussian_groups(n_samples=400, n_features=3, n_groups=3, random_state=1)
    X = X @ np.array([[2.0, 0.3, 0.0], [0.0, 1.0, 0.5], [0.0, 0.0, 0.7]])
    est = LinearErasure().fit(X, sensitive_features=s)
    cov = np.cov(X, rowvar=False, bias=True)
    M = np.linalg.inv(cov) if norm == "whitened" else np.eye(3)
    ours = np.trace(M @ est.erasure_ @ cov @ est.erasure_.T)
    best, A = _constrained_least_squares(X, _one_hot(s), M)
    assert ours == pytest.approx(best, rel=1e-9)
    np.testing.assert_allclose(est.erasure_, A, atol=1e-8)  # the optimum is unique


def test_partial_fit_and_dask_equal_fit():
    da = pytest.importorskip("dask.array")
    X, s = make_gaussian_groups(n_samples=1500, n_features=5, n_groups=3, random_state=2)
    ref = LinearErasure().fit(X, sensitive_features=s)
    streamed = LinearErasure()
    for start in range(0, 1500, 400):
        streamed.partial_fit(X[start : start + 400], sensitive_features=s[start : start + 400])
    lazy = LinearErasure().fit(da.from_array(X, chunks=(300, 5)), sensitive_features=s)
    for est in (streamed, lazy):
        np.testing.assert_allclose(est.erasure_, ref.erasure_, atol=1e-10)
        np.testing.assert_allclose(est.mean_, ref.mean_, rtol=1e-10)


def test_pipeline_with_metadata_routing():
    X, s = make_gaussian_groups(n_samples=600, n_features=5, random_state=3)
    y = (X[:, 0] + (s == 1) > 0.5).astype(int)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(
            LinearErasure().set_fit_request(sensitive_features=True), LogisticRegression()
        )
        pipe.fit(X, y, sensitive_features=s)
        scores = pipe.decision_function(X)
    gap = abs(scores[s == 0].mean() - scores[s == 1].mean())
    assert gap < 1e-8  # a linear model of erased data has equal mean score per group


def test_bad_input():
    X, s = make_gaussian_groups(n_samples=200, n_features=4, random_state=0)
    # Without groups (the package's one rule): the identity edit, with the warning,
    # or a ValueError when groups are required.
    with pytest.warns(fairpca.GroupBlindFitWarning, match="identity edit"):
        assert LinearErasure().fit(X).rank_ == 0
    with pytest.raises(ValueError, match="groups are required"):
        LinearErasure(require_groups=True).fit(X)
    with pytest.raises(ValueError, match="at least 2 distinct groups"):
        LinearErasure().fit(X, sensitive_features=np.zeros(200))
    bad = X.copy()
    bad[3, 1] = np.nan
    est = LinearErasure()
    with pytest.raises(ValueError, match="NaN"):
        est.fit(bad, sensitive_features=s)
    assert not hasattr(est, "erasure_")
    est.fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="4 features"):
        est.transform(X[:, :3])


def test_separate_attributes_each_have_equal_means():
    import pandas as pd

    rng = np.random.default_rng(4)
    n = 900
    attrs = pd.DataFrame(
        {"a": rng.choice(["x", "y"], size=n), "b": rng.choice(["u", "v", "w"], size=n)}
    )
    X = rng.normal(size=(n, 6)) + (attrs["a"] == "x").to_numpy()[:, None] * 1.5
    X += (attrs["b"] == "w").to_numpy()[:, None] * rng.normal(size=6)
    est = LinearErasure(attributes="separate").fit(X, sensitive_features=attrs)
    assert est.rank_ == 1 + 2
    Y = est.transform(X)
    for column in ("a", "b"):
        means = np.array(
            [Y[(attrs[column] == v).to_numpy()].mean(0) for v in attrs[column].unique()]
        )
        np.testing.assert_allclose(means - means.mean(0), 0, atol=1e-10 * np.abs(X).max())
    inter = LinearErasure().fit(X, sensitive_features=attrs)
    assert inter.rank_ == 5


def _with_age(seed=5, n=1000, p=4):
    """Data whose columns depend on a continuous age and on a binary sex."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 80, size=n)
    sex = rng.choice(["F", "M"], size=n)
    X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p))
    X += np.outer((age - 50) / 15, rng.normal(size=p)) + (sex == "F")[:, None] * 0.8
    return X, pd.DataFrame({"sex": sex, "age": age})


@pytest.mark.parametrize("norm", ["whitened", "euclidean"])
def test_continuous_attribute_edit_is_the_smallest(norm):
    X, attrs = _with_age()
    est = LinearErasure(continuous_attributes=["age"]).fit(X, sensitive_features=attrs)
    assert est.rank_ == 2 and list(est.groups_) == ["F", "M"]
    Y = est.transform(X)
    Z = np.column_stack([_one_hot(attrs["sex"].to_numpy()), attrs["age"]])
    cross = (Y - Y.mean(0)).T @ (Z - Z.mean(0)) / len(Y)
    np.testing.assert_allclose(cross, 0, atol=1e-10 * np.abs(X).max() * attrs["age"].std())
    cov = np.cov(X, rowvar=False, bias=True)
    M = np.linalg.inv(cov) if norm == "whitened" else np.eye(X.shape[1])
    best, A = _constrained_least_squares(X, Z, M)
    ours = np.trace(M @ est.erasure_ @ cov @ est.erasure_.T)
    assert ours == pytest.approx(best, rel=1e-9)
    np.testing.assert_allclose(est.erasure_, A, atol=1e-8)


def test_continuous_attribute_only_on_dask_and_partial_fit():
    da = pytest.importorskip("dask.array")
    X, attrs = _with_age(seed=6, n=1200)
    age = attrs["age"].to_numpy()
    ref = LinearErasure(continuous_attributes=True).fit(X, sensitive_features=age)
    assert ref.rank_ == 1 and list(ref.groups_) == [0]
    Y = ref.transform(X)
    assert abs(np.corrcoef(Y @ np.ones(4), age)[0, 1]) < 1e-10
    lazy = LinearErasure(continuous_attributes=True).fit(
        da.from_array(X, chunks=(250, 4)), sensitive_features=da.from_array(age, chunks=250)
    )
    streamed = LinearErasure(continuous_attributes=True)
    for start in range(0, 1200, 500):
        streamed.partial_fit(X[start : start + 500], sensitive_features=age[start : start + 500])
    for est in (lazy, streamed):
        np.testing.assert_allclose(est.erasure_, ref.erasure_, atol=1e-10)


def test_continuous_attribute_bad_input():
    X, attrs = _with_age(n=300)
    constant = attrs.assign(age=42.0)
    with pytest.raises(ValueError, match="'age' are constant"):
        LinearErasure(continuous_attributes=["age"]).fit(X, sensitive_features=constant)
    missing = attrs.copy()
    missing.loc[7, "age"] = np.nan
    with pytest.raises(ValueError, match="'age' contain NaN"):
        LinearErasure(continuous_attributes=["age"]).fit(X, sensitive_features=missing)
    with pytest.raises(ValueError, match="must list distinct columns"):
        LinearErasure(continuous_attributes=["income"]).fit(X, sensitive_features=attrs)
    with pytest.raises(TypeError, match="list of column names"):
        LinearErasure(continuous_attributes="age").fit(X, sensitive_features=attrs)


@pytest.mark.parametrize("bad", [3.5, "age", [1.5]])
def test_continuous_attributes_type_is_checked(bad):
    X = np.random.default_rng(0).normal(size=(30, 4))
    s = np.arange(30) % 2
    with pytest.raises(
        TypeError, match=r"continuous_attributes must be None, True/False, or a list"
    ):
        LinearErasure(continuous_attributes=bad).fit(X, sensitive_features=s)
