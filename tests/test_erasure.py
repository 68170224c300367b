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


# ------------------------------------------------------- the options of issue 44
def _anisotropic(n=400, p=6, k=3, seed=7):
    X, s = make_gaussian_groups(n_samples=n, n_features=p, n_groups=k, random_state=seed)
    scales = np.geomspace(5.0, 0.2, p)
    return X @ (np.random.default_rng(seed).normal(size=(p, p)) * scales) + 3.0, s


def _leace_reference(cov, cross, tol=None):
    """W^+ P W from NumPy's eigendecomposition and SVD (independent of fairpca)."""
    values, vectors = np.linalg.eigh(cov)
    W = vectors @ np.diag(values**-0.5) @ vectors.T
    W_inv = vectors @ np.diag(values**0.5) @ vectors.T
    U, singular, _ = np.linalg.svd(W @ cross, full_matrices=False)
    r = np.linalg.matrix_rank(cross)
    if tol is not None:  # at most the rank of the cross-covariance (not its rounding)
        r = min(r, int(np.sum(singular > tol)))
    return W_inv @ U[:, :r] @ U[:, :r].T @ W


def _cross_one_hot(X, s):
    Z = _one_hot(s)
    return (X - X.mean(0)).T @ (Z - Z.mean(0)) / len(X)


def _assert_erases(Y, s, scale):
    np.testing.assert_allclose(_cross_one_hot(Y, s), 0, atol=1e-10 * scale)


@pytest.mark.parametrize(
    ("shrinkage", "reference"),
    [("ledoit-wolf", "LedoitWolf"), ("oas", "OAS")],
)
def test_shrinkage_matches_sklearn_covariance(shrinkage, reference):
    import sklearn.covariance

    X, s = _anisotropic()
    ref = getattr(sklearn.covariance, reference)().fit(X)
    est = LinearErasure(shrinkage=shrinkage).fit(X, sensitive_features=s)
    assert est.shrinkage_ == pytest.approx(ref.shrinkage_, rel=1e-10)
    A = _leace_reference(ref.covariance_, _cross_one_hot(X, s))
    np.testing.assert_allclose(est.erasure_, A, atol=1e-9)
    _assert_erases(est.transform(X), s, np.abs(X).max())
    # A float is the same coefficient given by hand.
    fixed = LinearErasure(shrinkage=ref.shrinkage_).fit(X, sensitive_features=s)
    np.testing.assert_allclose(fixed.erasure_, est.erasure_, atol=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_ledoit_wolf_streams_like_fit(weighted):
    X, s = _anisotropic(n=500)
    w = np.random.default_rng(0).integers(1, 4, size=500).astype(float) if weighted else None
    ref = LinearErasure(shrinkage="ledoit-wolf").fit(X, sensitive_features=s, sample_weight=w)
    if weighted:  # frequency weights are repeated rows
        rows = np.repeat(np.arange(500), w.astype(int))
        import sklearn.covariance

        lw = sklearn.covariance.LedoitWolf().fit(X[rows])
        assert ref.shrinkage_ == pytest.approx(lw.shrinkage_, rel=1e-10)
    streamed = LinearErasure(shrinkage="ledoit-wolf")
    for start in range(0, 500, 130):
        part = slice(start, start + 130)
        streamed.partial_fit(
            X[part], sensitive_features=s[part], sample_weight=None if w is None else w[part]
        )
    assert streamed.shrinkage_ == pytest.approx(ref.shrinkage_, rel=1e-10)
    np.testing.assert_allclose(streamed.erasure_, ref.erasure_, atol=1e-10)


def test_ledoit_wolf_refuses_dask_and_a_stream_begun_without_it():
    da = pytest.importorskip("dask.array")
    X, s = _anisotropic()
    est = LinearErasure(shrinkage="ledoit-wolf")
    with pytest.raises(TypeError, match="shrinkage='oas' or a float"):
        est.fit(da.from_array(X, chunks=(100, 6)), sensitive_features=s)
    assert not hasattr(est, "erasure_")
    oas = LinearErasure(shrinkage="oas").fit(
        da.from_array(X, chunks=(100, 6)), sensitive_features=s
    )
    ref = LinearErasure(shrinkage="oas").fit(X, sensitive_features=s)
    np.testing.assert_allclose(oas.erasure_, ref.erasure_, atol=1e-10)
    started = LinearErasure().partial_fit(X[:200], sensitive_features=s[:200])
    started.set_params(shrinkage="ledoit-wolf")
    with pytest.raises(ValueError, match="fit again from the first chunk"):
        started.partial_fit(X[200:], sensitive_features=s[200:])


def test_orthogonal_method_is_the_projector_off_the_cross_covariance():
    X, s = _anisotropic()
    est = LinearErasure(method="orthogonal").fit(X, sensitive_features=s)
    U = np.linalg.qr(_cross_one_hot(X, s)[:, :2])[0]  # k - 1 = 2 independent columns
    np.testing.assert_allclose(est.erasure_, U @ U.T, atol=1e-10)
    assert est.rank_ == 2 and est.shrinkage_ == 0.0
    Y = est.transform(X)
    _assert_erases(Y, s, np.abs(X).max())
    # An orthogonal projection of the centred data never increases the total variance,
    # and LEACE moves the data more than it in the Euclidean norm only if ... it is
    # the least change in the whitened norm instead:
    leace = LinearErasure().fit(X, sensitive_features=s)
    cov = np.cov(X, rowvar=False, bias=True)
    inv = np.linalg.inv(cov)

    def moved(A, M):
        return np.trace(M @ A @ cov @ A.T)

    assert moved(leace.erasure_, inv) <= moved(est.erasure_, inv) + 1e-12
    assert np.trace(np.cov(Y, rowvar=False)) <= np.trace(np.cov(X, rowvar=False))


@pytest.mark.parametrize("shrinkage", [None, 0.05, 0.5, 0.95, "oas", "ledoit-wolf"])
def test_leace_never_increases_the_covariance_trace(shrinkage):
    # Why the trace constraint does not bind with these shrinkages (leace_map's docstring).
    X, s = _anisotropic(n=60, p=8, k=4, seed=3)
    cov = np.cov(X, rowvar=False, bias=True)
    est = LinearErasure(shrinkage=shrinkage).fit(X, sensitive_features=s)
    M = np.eye(8) - est.erasure_
    assert np.trace(M @ cov @ M.T) <= np.trace(cov) * (1 + 1e-12)
    bound = LinearErasure(shrinkage=shrinkage, constrain_cov_trace=True)
    np.testing.assert_allclose(
        bound.fit(X, sensitive_features=s).erasure_, est.erasure_, atol=1e-12
    )


def test_trace_mixture_solves_for_the_trace():
    """The mixture of an oblique eraser with the orthogonal one, against root finding."""
    from scipy.optimize import brentq

    from fairpca.erasure import _trace_mix

    rng = np.random.default_rng(8)
    p = 5
    cov = np.cov(rng.normal(size=(200, p)) @ rng.normal(size=(p, p)), rowvar=False)
    U = np.linalg.qr(rng.normal(size=(p, 2)))[0]
    Q = np.eye(p) - U @ U.T
    # An oblique eraser of the same directions, far from orthogonal: it adds variance.
    P = np.eye(p) - U @ np.linalg.solve(U.T @ U, U.T) - 3.0 * U @ U.T @ rng.normal(size=(p, p))
    trace = np.trace(cov)

    def after(alpha):
        M = Q + alpha * (P - Q)
        return np.trace(M @ cov @ M.T)

    assert after(1.0) > trace
    alpha = _trace_mix(P, Q, cov)
    assert alpha == pytest.approx(brentq(lambda a: after(a) - trace, 0.0, 1.0, xtol=1e-15))
    assert after(alpha) == pytest.approx(trace, rel=1e-10)
    assert _trace_mix(Q, Q, cov) == 1.0  # nothing to correct


def test_svd_tol_is_concept_erasures_rank_rule():
    rng = np.random.default_rng(11)
    n, p = 3000, 5
    s = rng.choice(4, size=n, p=[0.55, 0.3, 0.1, 0.05])
    X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p))
    X += np.outer(s == 1, [2.0, 0, 0, 0, 0]) + np.outer(s == 3, [0, 0, 0.3, 0, 0])
    cov, cross = np.cov(X, rowvar=False, bias=True), _cross_one_hot(X, s)
    for tol in (0.0, 0.01, 0.05):
        est = LinearErasure(svd_tol=tol).fit(X, sensitive_features=s)
        A = _leace_reference(cov, cross, tol=tol)
        np.testing.assert_allclose(est.erasure_, A, atol=1e-9)
        assert est.rank_ == np.linalg.matrix_rank(A, tol=1e-8)
    kept = LinearErasure(svd_tol=0.05).fit(X, sensitive_features=s)
    assert kept.rank_ < 3  # a small group's direction is left: its mean gap stays
    means = _group_means(kept.transform(X), s)
    assert np.abs(means - means.mean(0)).max() > 0.01


def _oracle_reference(X, Z):
    """x - (fit of x on z) + mean: the least-squares residual, from NumPy's lstsq."""
    design = np.column_stack([np.ones(len(X)), Z])
    coef = np.linalg.lstsq(design, X, rcond=None)[0]
    return X - design @ coef + X.mean(0)


def test_oracle_leace_is_the_regression_residual():
    X, attrs = _with_age()
    est = LinearErasure(continuous_attributes=["age"]).fit(X, sensitive_features=attrs)
    Y = est.transform(X, sensitive_features=attrs)
    Z = np.column_stack([_one_hot(attrs["sex"].to_numpy())[:, 1:], attrs["age"]])
    np.testing.assert_allclose(Y, _oracle_reference(X, Z), atol=1e-9 * np.abs(X).max())
    Zfull = np.column_stack([_one_hot(attrs["sex"].to_numpy()), attrs["age"]])
    cross = (Y - Y.mean(0)).T @ (Zfull - Zfull.mean(0)) / len(Y)
    np.testing.assert_allclose(cross, 0, atol=1e-9 * np.abs(X).max() * attrs["age"].std())
    # Groups alone: subtract the group's mean difference.
    X2, s = _anisotropic()
    est2 = LinearErasure(method="orthogonal", shrinkage="oas").fit(X2, sensitive_features=s)
    means = _group_means(X2, s)
    expected = X2 - (means - X2.mean(0))[np.searchsorted(np.unique(s), s)]
    np.testing.assert_allclose(est2.transform(X2, sensitive_features=s), expected, atol=1e-10)
    # New rows of known groups take the training edit.
    np.testing.assert_allclose(
        est2.transform(X2[:7], sensitive_features=s[:7]), expected[:7], atol=1e-10
    )


def test_oracle_leace_with_separate_attributes():
    import pandas as pd

    rng = np.random.default_rng(12)
    n = 800
    attrs = pd.DataFrame({"a": rng.choice(["x", "y"], n), "b": rng.choice(["u", "v", "w"], n)})
    X = rng.normal(size=(n, 4)) + (attrs["a"] == "x").to_numpy()[:, None]
    X += np.outer((attrs["a"] == "x") & (attrs["b"] == "w"), rng.normal(size=4))
    est = LinearErasure(attributes="separate").fit(X, sensitive_features=attrs)
    Y = est.transform(X, sensitive_features=attrs)
    Z = np.column_stack(
        [_one_hot(attrs["a"].to_numpy())[:, 1:], _one_hot(attrs["b"].to_numpy())[:, 1:]]
    )
    np.testing.assert_allclose(Y, _oracle_reference(X, Z), atol=1e-9 * np.abs(X).max())


def test_oracle_leace_refusals():
    X, s = _anisotropic(n=200)
    est = LinearErasure().fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match=r"group\(s\) \[7\].*not fitted on"):
        est.transform(X[:3], sensitive_features=[0, 7, 1])
    with pytest.warns(fairpca.GroupBlindFitWarning):
        blind = LinearErasure().fit(X)
    with pytest.raises(ValueError, match="fitted without sensitive_features"):
        blind.transform(X, sensitive_features=s)
    est.compact()
    with pytest.raises(ValueError, match="compact"):
        est.transform(X, sensitive_features=s)
    est.transform(X)  # the ordinary edit still works


def test_oracle_leace_through_metadata_routing():
    X, s = make_gaussian_groups(n_samples=600, n_features=5, random_state=3)
    y = (X[:, 0] + (s == 1) > 0.5).astype(int)
    with pytest.raises(RuntimeError, match="metadata routing is enabled"):
        LinearErasure().set_transform_request(sensitive_features=True)
    with sklearn.config_context(enable_metadata_routing=True):
        eraser = LinearErasure().set_fit_request(sensitive_features=True)
        eraser.set_transform_request(sensitive_features=True)
        pipe = make_pipeline(eraser, LogisticRegression()).fit(X, y, sensitive_features=s)
        fitted = pipe[0]
        np.testing.assert_allclose(
            pipe[0].fit_transform(X, sensitive_features=s),
            fitted.transform(X, sensitive_features=s),
        )
        scores = pipe.decision_function(X, sensitive_features=s)
        means = _group_means(X, s)
        oracle = X - (means - X.mean(0))[s]
        np.testing.assert_allclose(scores, pipe[1].decision_function(oracle), atol=1e-10)
        # Without the request, transform keeps the ordinary edit (and fit_transform too).
        plain = LinearErasure().set_fit_request(sensitive_features=True)
        np.testing.assert_allclose(
            plain.fit_transform(X, sensitive_features=s), plain.transform(X), atol=0
        )


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"method": "orth"}, ValueError, "method must be one of"),
        ({"shrinkage": "lw"}, ValueError, "shrinkage must be None"),
        ({"shrinkage": 1.5}, ValueError, r"shrinkage must be in \[0, 1\]"),
        ({"shrinkage": True}, TypeError, "shrinkage must be None"),
        ({"constrain_cov_trace": "yes"}, TypeError, "constrain_cov_trace must be True"),
        ({"svd_tol": -0.1}, ValueError, "svd_tol must be a finite float"),
        ({"svd_tol": "0.01"}, TypeError, "svd_tol must be None or a float"),
    ],
)
def test_new_parameters_are_checked_before_any_work(params, error, match):
    X, s = _anisotropic(n=100)
    est = LinearErasure().fit(X, sensitive_features=s)
    before = est.erasure_.copy()
    with pytest.raises(error, match=match):
        est.set_params(**params).fit(X[:50], sensitive_features=s[:50])
    np.testing.assert_array_equal(est.erasure_, before)
