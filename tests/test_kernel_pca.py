"""Tests of FairKernelPCA (fair kernel PCA by mean matching, Kleindessner et al. 2023, Sec. 4)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg
import sklearn
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from fairpca import FairKernelPCA, MeanMatchingFairPCA
from fairpca import kernel_pca as kernel_pca_module
from fairpca.datasets import make_gaussian_groups


def _data(n=300, p=5, k=2, seed=0):
    X, s = make_gaussian_groups(n_samples=n, n_features=p, n_groups=k, random_state=seed)
    return X, s


def _centred_gram(X, **kernel):
    K = pairwise_kernels(X, **kernel)
    H = np.eye(len(X)) - 1.0 / len(X)
    return H @ K @ H


def _group_mean_gaps(Z, s):
    return np.array([np.linalg.norm(Z[s == a].mean(axis=0) - Z.mean(axis=0)) for a in np.unique(s)])


def _same_subspace(A, B):
    """Cosines of the principal angles between the column spans of A and B."""
    return scipy.linalg.subspace_angles(A, B)


# --------------------------------------------------------------------- exact


@pytest.mark.parametrize("k", [2, 3])
def test_exact_group_means_equal_and_components_orthonormal(k):
    X, s = _data(n=240, k=k)
    est = FairKernelPCA(n_components=4, method="exact", random_state=0)
    Z = est.fit_transform(X, sensitive_features=s)
    scale = np.sqrt((Z**2).mean())
    assert _group_mean_gaps(Z, s).max() <= 1e-10 * scale
    assert est.mean_gap_ <= 1e-10 * scale
    assert est.n_constraints_ == k - 1
    Kc = _centred_gram(X, metric="rbf", gamma=est.gamma_)
    alpha = est.dual_coef_
    np.testing.assert_allclose(alpha.T @ Kc @ alpha, np.eye(4), atol=1e-10)
    np.testing.assert_allclose(Kc @ alpha, Z, atol=1e-10)
    np.testing.assert_allclose(est.transform(X), Z, atol=1e-10)
    assert np.all(np.diff(est.explained_variance_) <= 0)
    np.testing.assert_allclose(est.explained_variance_, (Z**2).mean(axis=0))


def test_exact_matches_generalised_eigenproblem_in_alpha_space():
    # Independent construction: alpha must satisfy c_a^T K_c alpha = 0 (equal
    # projected means) and may be taken orthogonal to 1 (K_c 1 = 0). On the null
    # space N of those rows, maximise alpha^T K_c^2 alpha subject to
    # alpha^T K_c alpha = I: a generalised symmetric eigenproblem.
    X, s = _data(n=90, p=4, k=3, seed=3)
    gamma = 0.5  # a well-conditioned Gram matrix
    d = 3
    Kc = _centred_gram(X, metric="rbf", gamma=gamma)
    n = len(X)
    C = np.stack([(s == a) / np.sum(s == a) - 1.0 / n for a in np.unique(s)], axis=1)
    rows = np.vstack([C.T @ Kc, np.ones((1, n))])
    N = scipy.linalg.null_space(rows)
    A, B = N.T @ Kc @ Kc @ N, N.T @ Kc @ N
    _, vectors = scipy.linalg.eigh(A, B, subset_by_index=[N.shape[1] - d, N.shape[1] - 1])
    Z_ref = Kc @ (N @ vectors)
    est = FairKernelPCA(n_components=d, gamma=gamma, method="exact").fit(X, sensitive_features=s)
    Z = est.transform(X)
    assert np.max(_same_subspace(Z, Z_ref)) < 1e-6
    # Same variances, not only the same span.
    np.testing.assert_allclose(
        np.sort(np.linalg.svd(Z, compute_uv=False)),
        np.sort(np.linalg.svd(Z_ref, compute_uv=False)),
        rtol=1e-7,
    )


def test_linear_kernel_equals_mean_matching_fair_pca():
    X, s = _data(n=400, p=8, k=3, seed=1)
    ours = FairKernelPCA(n_components=4, kernel="linear", method="exact").fit(
        X, sensitive_features=s
    )
    linear = MeanMatchingFairPCA(n_components=4).fit(X, sensitive_features=s)
    Z, Z_lin = ours.transform(X), linear.transform(X)
    # Same representation up to an orthogonal transform: Z = Z_lin Q.
    Q, *_ = np.linalg.lstsq(Z_lin, Z, rcond=None)
    np.testing.assert_allclose(Q.T @ Q, np.eye(4), atol=1e-8)
    np.testing.assert_allclose(Z_lin @ Q, Z, atol=1e-8 * np.abs(Z).max())
    X_new = np.random.default_rng(0).standard_normal((50, 8))
    np.testing.assert_allclose(
        linear.transform(X_new) @ Q, ours.transform(X_new), atol=1e-8 * np.abs(Z).max()
    )
    assert ours.gamma_ is None


@pytest.mark.slow  # 8 s of CPU
def test_dense_and_arpack_eigensolvers_agree(monkeypatch):
    X, s = _data(n=1200, p=5)
    est = FairKernelPCA(n_components=3, method="exact", random_state=0)
    Z_arpack = est.fit_transform(X, sensitive_features=s)
    monkeypatch.setattr(kernel_pca_module, "_DENSE_ROWS", 10**6)
    Z_dense = clone(est).fit_transform(X, sensitive_features=s)
    # Same directions up to sign.
    signs = np.sign(np.sum(Z_arpack * Z_dense, axis=0))
    np.testing.assert_allclose(Z_arpack * signs, Z_dense, atol=1e-8 * np.abs(Z_dense).max())


def test_median_rule_and_given_gamma():
    X, s = _data(n=200)
    est = FairKernelPCA(n_components=2).fit(X, sensitive_features=s)
    distances = scipy.spatial.distance.pdist(X, "sqeuclidean")
    assert est.gamma_ == pytest.approx(1.0 / np.median(distances), rel=1e-12)
    assert FairKernelPCA(gamma=0.3).fit(X, sensitive_features=s).gamma_ == 0.3
    assert FairKernelPCA(kernel="poly").fit(X, sensitive_features=s).gamma_ == 1.0 / X.shape[1]


def test_method_auto_and_max_exact_samples():
    X, s = _data(n=300)
    assert FairKernelPCA().fit(X, sensitive_features=s).method_ == "exact"
    est = FairKernelPCA(max_exact_samples=200, n_random_features=64, random_state=0)
    assert est.fit(X, sensitive_features=s).method_ == "approx"
    with pytest.raises(ValueError, match='method="approx"'):
        FairKernelPCA(method="exact", max_exact_samples=200).fit(X, sensitive_features=s)


def test_string_labels_and_group_attributes():
    X, s = _data(n=150, k=3)
    labels = np.array(["a", "b", "c"])[s]
    est = FairKernelPCA(n_components=2).fit(X, sensitive_features=labels)
    assert est.groups_.tolist() == ["a", "b", "c"]
    assert est.group_counts_.tolist() == [int(np.sum(s == a)) for a in range(3)]
    assert est.n_features_in_ == X.shape[1] and est.n_components_ == 2


def test_group_blind_fit_warns_and_is_kernel_pca():
    X, _ = _data(n=150)
    with pytest.warns(UserWarning, match="without sensitive_features"):
        est = FairKernelPCA(n_components=2, gamma=0.2).fit(X)
    assert est.groups_ is None and est.n_constraints_ == 0
    Kc = _centred_gram(X, metric="rbf", gamma=0.2)
    top = np.linalg.eigh(Kc)[1][:, -2:]
    assert np.max(_same_subspace(est.transform(X), top)) < 1e-8


# -------------------------------------------------------------------- approx


@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian"])
def test_approx_group_means_equal_on_training_rows(kernel):
    X, s = _data(n=600, k=3, seed=2)
    est = FairKernelPCA(
        n_components=3, kernel=kernel, method="approx", n_random_features=128, random_state=0
    )
    Z = est.fit_transform(X, sensitive_features=s)
    scale = np.sqrt((Z**2).mean())
    assert _group_mean_gaps(Z, s).max() <= 1e-9 * scale
    assert est.mean_gap_ <= 1e-9 * scale
    assert est.method_ == "approx" and est.n_constraints_ == 2
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(est.explained_variance_, (Z**2).mean(axis=0), rtol=1e-8)


@pytest.mark.slow  # 10 s of CPU
def test_approx_is_reproducible_and_close_to_exact():
    X, s = _data(n=800, seed=4)
    approx = FairKernelPCA(n_components=2, method="approx", n_random_features=512, random_state=1)
    Z1 = approx.fit_transform(X, sensitive_features=s)
    np.testing.assert_array_equal(clone(approx).fit_transform(X, sensitive_features=s), Z1)
    exact = FairKernelPCA(n_components=2, method="exact").fit(X, sensitive_features=s)
    # The top fair directions agree closely in span on the training rows.
    assert np.max(_same_subspace(Z1, exact.transform(X))) < 0.1


def _demographic_parity_gap(pred, s):
    rates = [np.mean(pred[s == a]) for a in np.unique(s)]
    return max(rates) - min(rates)


def _ring_groups(n, seed):
    """Groups that differ only in spread (no linear mean difference), a target tied to it.

    Two features are N(0, I) in group 0 and N(0, 4 I) in group 1 (40 % of rows);
    the target depends on a group-free feature and on the squared radius of
    those two, so a classifier of the raw rows has a large parity gap.
    """
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.4).astype(int)
    ring = rng.standard_normal((n, 2)) * np.where(s == 1, 2.0, 1.0)[:, None]
    t = rng.standard_normal(n)
    r2 = (ring**2).sum(axis=1)
    y = (t + 0.5 * (r2 - r2.mean()) / r2.std() + 0.3 * rng.standard_normal(n) > 0).astype(int)
    X = np.column_stack([ring, t, 0.5 * rng.standard_normal((n, 3))])
    return X, s, y


@pytest.mark.slow  # exact and approximate fits and SVMs on 5000 rows
def test_approx_svm_parity_gap_no_worse_than_exact_at_5000_rows():
    X, s, y = _ring_groups(10000, seed=0)
    train, test = slice(0, 5000), slice(5000, None)
    gaps = {}
    for method in ("exact", "approx"):
        est = FairKernelPCA(n_components=3, method=method, random_state=0)
        Z_train = est.fit_transform(X[train], sensitive_features=s[train])
        assert est.method_ == method
        svm = SVC(kernel="rbf").fit(Z_train, y[train])
        gaps[method] = _demographic_parity_gap(svm.predict(est.transform(X[test])), s[test])
    assert gaps["approx"] <= gaps["exact"] + 0.02, gaps
    # The comparison means something: on the raw rows the gap is large.
    blind = SVC(kernel="rbf").fit(X[train], y[train]).predict(X[test])
    assert gaps["exact"] < _demographic_parity_gap(blind, s[test]) - 0.05, gaps


@pytest.mark.slow
@pytest.mark.requires_data("compas")
def test_defaults_at_compas_size_converge_in_seconds(fairpca_data_home):
    """Issue 38: a default fit on COMPAS's 7,214 rows, and the largest default exact fit.

    Measured at one BLAS thread: about 1.6 s of CPU for the default fit (7,214 rows are
    above ``max_exact_samples``: random Fourier features) and 1.0-1.3 s for the exact
    fit of 5,000 rows (ARPACK on the 5,000 x 5,000 Gram matrix); the bound below leaves
    a wide margin for slower machines.
    """
    import time

    import pandas as pd

    frame = pd.read_csv(fairpca_data_home / "compas" / "compas-scores-two-years.csv")
    numeric = frame.select_dtypes("number").drop(columns=["id", "two_year_recid"])
    numeric = numeric.loc[:, numeric.notna().any()]
    numeric = numeric.fillna(numeric.median())
    X = StandardScaler().fit_transform(numeric.loc[:, numeric.std() > 0].to_numpy(float))
    s = frame["race"].to_numpy()
    for rows, method in ((len(X), "approx"), (5000, "exact")):
        start = time.process_time()
        est = FairKernelPCA(random_state=0)
        Z = est.fit_transform(X[:rows], sensitive_features=s[:rows])
        seconds = time.process_time() - start
        assert est.method_ == method
        assert seconds < 30, (method, seconds)
        # Converged: every group's mean representation is the pooled one.
        assert _group_mean_gaps(Z, s[:rows]).max() <= 1e-8 * np.abs(Z).max()
        assert np.all(est.explained_variance_ > 0)


# ---------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"method": "fast"}, ValueError, "method must be one of"),
        ({"kernel": "chi2"}, ValueError, "kernel must be one of"),
        ({"n_components": 0}, ValueError, "n_components"),
        ({"n_components": 2.0}, TypeError, "n_components"),
        ({"n_components": True}, TypeError, "n_components"),
        ({"n_components": 299}, ValueError, "n_components=299 must be at most 298"),
        ({"gamma": -1.0}, ValueError, "gamma"),
        ({"gamma": np.inf}, ValueError, "gamma"),
        ({"n_random_features": 0}, ValueError, "n_random_features"),
        ({"max_exact_samples": 1}, ValueError, "max_exact_samples"),
        (
            {"method": "approx", "n_random_features": 2, "n_components": 4},
            ValueError,
            "at most 3",
        ),
    ],
)
def test_bad_parameters(params, error, match):
    X, s = _data(n=300)
    with pytest.raises(error, match=match):
        FairKernelPCA(**params).fit(X, sensitive_features=s)


def test_bad_data():
    X, s = _data(n=100)
    est = FairKernelPCA()
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X_nan, sensitive_features=s)
    with pytest.raises(ValueError, match="at least 2 distinct groups"):
        est.fit(X, sensitive_features=np.zeros(100))
    with pytest.raises(ValueError, match="same length"):
        est.fit(X, sensitive_features=s[:-1])
    with pytest.raises(TypeError, match="numeric"):
        est.fit(np.array([["a", "b"], ["c", "d"]]), sensitive_features=[0, 1])
    with pytest.raises(ValueError, match="pass gamma"):
        est.fit(np.ones((10, 2)), sensitive_features=np.arange(10) % 2)


def test_rank_deficient_request_is_refused():
    X, s = _data(n=100, p=3)
    with pytest.raises(ValueError, match="keep training variance"):
        FairKernelPCA(n_components=3, kernel="linear").fit(X, sensitive_features=s)


def test_failed_fit_leaves_estimator_unchanged():
    X, s = _data(n=200)
    est = FairKernelPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    before = {key: value for key, value in vars(est).items() if key.endswith("_")}
    Z = est.transform(X)
    for bad in (np.zeros(200), s[:-1]):
        with pytest.raises(ValueError):
            est.fit(X, sensitive_features=bad)
    with pytest.raises(ValueError):
        est.set_params(n_components=3, kernel="linear").fit(X[:, :2], sensitive_features=s)
    est.set_params(n_components=2, kernel="rbf")
    assert {key for key in vars(est) if key.endswith("_")} == set(before)
    np.testing.assert_array_equal(est.transform(X), Z)


def test_transform_checks():
    X, s = _data(n=100)
    est = FairKernelPCA()
    with pytest.raises(sklearn.exceptions.NotFittedError):
        est.transform(X)
    est.fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :3])
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.transform(X_nan)


# ----------------------------------------------------------- scikit-learn API


def test_params_clone_pickle_and_feature_names():
    X, s = _data(n=120)
    est = FairKernelPCA(n_components=3, gamma=0.1, method="exact")
    assert est.get_params()["gamma"] == 0.1
    assert est.set_params(degree=2) is est and est.degree == 2
    fitted = clone(est).fit(X, sensitive_features=s)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.transform(X), fitted.transform(X))
    assert fitted.get_feature_names_out().tolist() == [
        "fairkernelpca0",
        "fairkernelpca1",
        "fairkernelpca2",
    ]


def test_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    X, s = _data(n=120)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    est = FairKernelPCA().fit(frame, sensitive_features=pd.Series(s))
    assert est.feature_names_in_.tolist() == list(frame.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.transform(frame)
    with pytest.warns(UserWarning, match="feature names"):
        est.transform(X)


def test_pipeline_with_metadata_routing():
    X, s, y = make_gaussian_groups(n_samples=300, n_features=5, random_state=0, return_target=True)
    with sklearn.config_context(enable_metadata_routing=True):
        fair = FairKernelPCA(n_components=3, random_state=0).set_fit_request(
            sensitive_features=True
        )
        pipe = make_pipeline(StandardScaler(), fair, LogisticRegression())
        pipe.fit(X, y, sensitive_features=s)
        assert pipe.predict(X).shape == (300,)
        Z = pipe[:-1].transform(X)
    direct = FairKernelPCA(n_components=3, random_state=0).fit(
        StandardScaler().fit_transform(X), sensitive_features=s
    )
    np.testing.assert_allclose(Z, direct.transform(StandardScaler().fit_transform(X)), atol=1e-12)
    assert _group_mean_gaps(Z, s).max() < 1e-10 * np.abs(Z).max()


# ---------------------------------------------------------------------- Dask


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_dask_input_equals_the_in_memory_approximate_fit(kernel):
    da = pytest.importorskip("dask.array")
    X, s = _data(n=1500, k=3, seed=4)
    params = {"n_components": 3, "kernel": kernel, "method": "approx", "random_state": 0}
    ref = FairKernelPCA(n_random_features=100, **params).fit(X, sensitive_features=s)
    lazy = FairKernelPCA(n_random_features=100, **{**params, "method": "auto"}).fit(
        da.from_array(X, chunks=(400, 5)), sensitive_features=da.from_array(s, chunks=400)
    )
    assert lazy.method_ == "approx" and list(lazy.groups_) == list(ref.groups_)
    assert lazy.gamma_ == pytest.approx(ref.gamma_, rel=1e-12)
    Z_ref, Z_lazy = ref.transform(X), lazy.transform(X)
    # Equal up to the sign of each column (eigenvector signs are arbitrary).
    signs = np.sign(np.sum(Z_ref * Z_lazy, axis=0))
    np.testing.assert_allclose(Z_lazy * signs, Z_ref, atol=1e-10 * np.abs(Z_ref).max())
    np.testing.assert_allclose(lazy.explained_variance_, ref.explained_variance_, rtol=1e-10)


def test_dask_dataframe_with_two_attributes():
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    X, s = _data(n=1200, k=2, seed=5)
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)])
    frame["sex"], frame["site"] = s, rng.choice(["a", "b"], size=len(s))
    lazy_frame = dd.from_pandas(frame, npartitions=3)
    columns = [f"x{j}" for j in range(5)]
    est = FairKernelPCA(n_components=2, n_random_features=64, random_state=0)
    est.fit(lazy_frame[columns], sensitive_features=lazy_frame[["sex", "site"]])
    assert list(est.feature_names_in_) == columns and len(est.groups_) == 4
    Z = est.transform(frame[columns])
    cells = frame["sex"].astype(str) + frame["site"]
    means = np.array([Z[(cells == c).to_numpy()].mean(0) for c in cells.unique()])
    np.testing.assert_allclose(means - means.mean(0), 0, atol=1e-9 * np.abs(Z).max())


def test_dask_exact_is_refused_before_any_pass():
    da = pytest.importorskip("dask.array")
    X, s = _data(n=200)
    est = FairKernelPCA(method="exact")
    with pytest.raises(ValueError, match='for Dask input use method="approx"'):
        est.fit(da.from_array(X, chunks=50), sensitive_features=s)
    assert not hasattr(est, "n_features_in_")


# --------------------------------------------------------------------------- state rules
def test_training_rows_are_copied_unless_copy_X_is_false():
    X, s = make_gaussian_groups(n_samples=120, n_features=4, random_state=0)
    est = FairKernelPCA(n_components=2, method="exact", random_state=0)
    Z = est.fit(X, sensitive_features=s).transform(X)
    assert est.X_fit_ is not X and not np.shares_memory(est.X_fit_, X)
    X_before = X.copy()
    X += 10.0  # the caller changes its array: the fitted model does not move
    np.testing.assert_array_equal(est.transform(X_before), Z)
    shared = FairKernelPCA(n_components=2, method="exact", copy_X=False, random_state=0)
    shared.fit(X, sensitive_features=s)
    assert shared.X_fit_ is X


@pytest.mark.parametrize("kernel", ["poly", "rbf"])
def test_set_params_after_fit_does_not_change_transform(kernel):
    X, s = make_gaussian_groups(n_samples=120, n_features=4, random_state=1)
    est = FairKernelPCA(n_components=2, kernel=kernel, gamma=0.3, method="exact", random_state=0)
    Z = est.fit(X, sensitive_features=s).transform(X)
    est.set_params(kernel="sigmoid", gamma=2.0, degree=5, coef0=-3.0)
    np.testing.assert_array_equal(est.transform(X), Z)
    assert est.kernel_ == kernel and est.kernel_params_["gamma"] == 0.3
