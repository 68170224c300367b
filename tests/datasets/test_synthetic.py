import numpy as np
import pytest
from scipy import stats
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

import fairpca.datasets as datasets
from fairpca.datasets import (
    make_gaussian_groups,
    make_mmd_synthetic1,
    make_mmd_synthetic2,
    make_robust_toy,
)

# (generator, keyword arguments, expected X shape, expected group sizes)
CASES = [
    (make_mmd_synthetic1, {}, (300, 3), [150, 150]),
    (make_mmd_synthetic1, {"n_per_group": 7}, (14, 3), [7, 7]),
    (make_mmd_synthetic2, {}, (480, 20), [240, 240]),
    (make_mmd_synthetic2, {"n_features": 35, "n_per_group": 10}, (20, 35), [10, 10]),
    (make_robust_toy, {}, (300, 2), [200, 100]),
    (make_robust_toy, {"n_per_group": 50}, (100, 2), [50, 50]),
    (make_robust_toy, {"n_per_group": (8000, 4000)}, (12000, 2), [8000, 4000]),
    (make_gaussian_groups, {}, (1000, 10), [700, 300]),
    (make_gaussian_groups, {"n_samples": 200, "n_features": 5, "n_groups": 3}, (200, 5), None),
]
IDS = [f"{f.__name__}-{i}" for i, (f, *_) in enumerate(CASES)]


def _cov(X):
    return np.cov(X, rowvar=False, bias=False)


def _pca_group_errors(X, s, n_components=2):
    pca = PCA(n_components=n_components).fit(X)
    residual = X - pca.inverse_transform(pca.transform(X))
    sq = np.sum(residual**2, axis=1)
    return np.array([sq[s == a].mean() for a in np.unique(s)])


def test_public_names():
    generators = {"make_gaussian_groups", "make_mmd_synthetic1", "make_mmd_synthetic2"}
    assert generators | {"make_robust_toy"} <= set(datasets.__all__)
    assert all(callable(getattr(datasets, name)) for name in datasets.__all__)
    for name in datasets.__all__:
        assert callable(getattr(datasets, name))


@pytest.mark.parametrize(("func", "kwargs", "shape", "sizes"), CASES, ids=IDS)
def test_shapes_dtypes_labels(func, kwargs, shape, sizes):
    X, s = func(**kwargs, random_state=0)
    assert X.shape == shape
    assert X.dtype == np.float64
    assert X.flags.c_contiguous
    assert np.all(np.isfinite(X))
    assert s.shape == (shape[0],)
    assert s.dtype == np.int64
    n_groups = kwargs.get("n_groups", 2)
    assert set(np.unique(s).tolist()) == set(range(n_groups))
    if sizes is not None:
        assert np.bincount(s).tolist() == sizes


@pytest.mark.parametrize(("func", "kwargs", "shape", "sizes"), CASES, ids=IDS)
def test_seeded_determinism(func, kwargs, shape, sizes):
    global_state = np.random.get_state()[1].copy()  # noqa: NPY002 (legacy global RNG on purpose)
    X1, s1 = func(**kwargs, random_state=3)
    X2, s2 = func(**kwargs, random_state=3)
    X3, _ = func(**kwargs, random_state=np.random.RandomState(3))
    X4, _ = func(**kwargs, random_state=4)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(X1, X3)
    assert not np.allclose(X1, X4)
    # a seeded call never advances numpy's global generator
    np.testing.assert_array_equal(np.random.get_state()[1], global_state)  # noqa: NPY002


# ---------------------------------------------------------------- synthetic #1


def test_synthetic1_same_moments_different_distributions():
    n = 20_000
    X, s = make_mmd_synthetic1(n_per_group=n, random_state=1)
    target_cov = 0.1 * np.eye(3) + np.ones((3, 3))
    for a in (0, 1):
        Xa = X[s == a]
        # mean 0, within 5 standard errors (variance 1.1 per coordinate)
        assert np.all(np.abs(Xa.mean(axis=0)) < 5 * np.sqrt(1.1 / n))
        # covariance 0.1 I + 1 1^T; entry-wise standard errors are below 0.012
        np.testing.assert_allclose(_cov(Xa), target_cov, atol=0.06)
    # group 1 is exactly balanced between its two components
    assert np.sum(X[s == 1].sum(axis=1) > 0) == n // 2

    # ...yet the distributions differ: a marginal at large n
    assert stats.ks_2samp(X[s == 0, 0], X[s == 1, 0]).pvalue < 1e-10
    # and the squared norms already at the paper's n = 150
    X, s = make_mmd_synthetic1(random_state=2)
    norms = np.sum(X**2, axis=1)
    assert stats.ks_2samp(norms[s == 0], norms[s == 1]).pvalue < 1e-6


def test_synthetic1_odd_group_size():
    X, s = make_mmd_synthetic1(n_per_group=5, random_state=0)
    assert np.sum(X[s == 1].sum(axis=1) > 0) == 2


# ---------------------------------------------------------------- synthetic #2


@pytest.fixture(scope="module")
def syn2_full():
    # p = p0 = 1000: the projection is invertible, so the latent rows can be recovered
    return make_mmd_synthetic2(
        n_features=1000, n_per_group=1500, random_state=5, return_params=True
    )


def _ar1(r, m):
    lag = np.abs(np.subtract.outer(np.arange(m), np.arange(m)))
    return r**lag / (1 - r**2)


def test_synthetic2_population_parameters_match_section_h(syn2_full):
    _, _, params = syn2_full
    mu = params["latent_means"]
    sig = params["latent_covariances"]
    assert mu.shape == (2, 1000)
    assert sig.shape == (2, 1000, 1000)
    # mu0 = 0, f = mu1 - mu0 is a multiple of the ones vector with norm 2
    np.testing.assert_array_equal(mu[0], 0.0)
    f = mu[1] - mu[0]
    np.testing.assert_allclose(f, np.full(1000, 2 / np.sqrt(1000)))
    assert np.linalg.norm(f) == pytest.approx(2.0)
    # Q = Sigma1 - Sigma0 has spectral norm 1 and lives in the last 200 x 200 block
    Q = sig[1] - sig[0]
    assert np.count_nonzero(Q[:800]) == 0 and np.count_nonzero(Q[:, :800]) == 0
    assert np.max(np.abs(np.linalg.eigvalsh(Q[800:, 800:]))) == pytest.approx(1.0)
    # block-diagonal AR(1) covariances with the coefficients of section H, one scale
    scale = _ar1(0.99, 200)[0, 0] / sig[0, 0, 0]
    coefs = [(0.99, 0.98, 0.97, 0.98, 0.95), (0.99, 0.98, 0.97, 0.98, 0.99)]
    for g in (0, 1):
        for b, r in enumerate(coefs[g]):
            rows = slice(200 * b, 200 * (b + 1))
            np.testing.assert_allclose(sig[g][rows, rows] * scale, _ar1(r, 200), rtol=1e-12)
        off_block = sig[g].copy()
        for b in range(5):
            off_block[200 * b : 200 * (b + 1), 200 * b : 200 * (b + 1)] = 0
        assert np.count_nonzero(off_block) == 0
    # projected parameters are the linear images of the latent ones
    R = params["projection"]
    assert R.shape == (1000, 1000)
    np.testing.assert_allclose(params["means"], mu @ R)
    cols = slice(0, 60)  # a corner is enough, and keeps the test fast
    np.testing.assert_allclose(
        params["covariances"][1][cols, cols],
        R[:, cols].T @ sig[1] @ R[:, cols],
        rtol=1e-9,
        atol=1e-9,
    )


def test_synthetic2_latent_samples_follow_section_h(syn2_full):
    X, s, params = syn2_full
    latent = np.linalg.solve(params["projection"].T, X.T).T
    n = 1500
    scale = _ar1(0.99, 200)[0, 0] / params["latent_covariances"][0, 0, 0]
    # mean shift: all-ones direction with norm 2 (per coordinate 2 / sqrt(1000))
    diff = latent[s == 1].mean(axis=0) - latent[s == 0].mean(axis=0)
    assert diff.mean() == pytest.approx(2 / np.sqrt(1000), abs=0.01)
    assert abs(latent[s == 0].mean()) < 0.01
    # each block is a stationary AR(1) with the stated coefficient and variance
    coefs = [(0.99, 0.98, 0.97, 0.98, 0.95), (0.99, 0.98, 0.97, 0.98, 0.99)]
    for g in (0, 1):
        Z = latent[s == g] - latent[s == g].mean(axis=0)
        assert Z.shape[0] == n
        for b, r in enumerate(coefs[g]):
            block = Z[:, 200 * b : 200 * (b + 1)]
            lag1 = np.sum(block[:, 1:] * block[:, :-1]) / np.sum(block[:, :-1] ** 2)
            assert lag1 == pytest.approx(r, abs=0.004)
            variance = np.mean(block**2) * scale
            assert variance == pytest.approx(1 / (1 - r**2), rel=0.12)


def test_synthetic2_projected_moments_match_population():
    n = 4000
    X, s, params = make_mmd_synthetic2(
        n_features=20, n_per_group=n, random_state=6, return_params=True
    )
    assert params["projection"].shape == (1000, 20)
    for g in (0, 1):
        Xg = X[s == g]
        mean, cov = params["means"][g], params["covariances"][g]
        se = np.sqrt(np.diag(cov) / n)
        assert np.all(np.abs(Xg.mean(axis=0) - mean) < 5 * se)
        # Gaussian: E||S - Sigma||_F^2 ~ (tr(Sigma)^2 + tr(Sigma^2)) / n
        expected = np.sqrt((np.trace(cov) ** 2 + np.trace(cov @ cov)) / n)
        assert np.linalg.norm(_cov(Xg) - cov) < 3 * expected
    # the groups do differ: their population covariances are far apart
    gap = np.linalg.norm(params["covariances"][1] - params["covariances"][0])
    assert gap > 4 * expected
    # same seed without the parameters gives the same data
    X2, s2 = make_mmd_synthetic2(n_features=20, n_per_group=n, random_state=6)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(s, s2)


# ---------------------------------------------------------------- Vu et al. toy


def test_robust_toy_matches_paper_parameters():
    n0, n1 = 40_000, 20_000
    X, s = make_robust_toy(n_per_group=(n0, n1), random_state=7)
    paper_covs = {0: np.array([[4.0, 0.0], [0.0, 0.2]]), 1: np.array([[0.2, 0.4], [0.4, 3.0]])}
    for a, n in ((0, n0), (1, n1)):
        Xa = X[s == a]
        cov = paper_covs[a]
        assert np.all(np.abs(Xa.mean(axis=0)) < 5 * np.sqrt(np.diag(cov) / n))
        # entry-wise Gaussian standard error sqrt((s_ii s_jj + s_ij^2) / n)
        se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
        assert np.all(np.abs(_cov(Xa) - cov) < 5 * se)


def test_robust_toy_pca_picks_majority_direction():
    X, s = make_robust_toy(random_state=0)
    direction = PCA(n_components=1).fit(X).components_[0]
    assert abs(direction[0]) > 0.9
    errors = _pca_group_errors(X, s, n_components=1)
    assert errors[1] > 2 * errors[0]


# ---------------------------------------------------------------- demo data


def test_gaussian_groups_proportions():
    _, s = make_gaussian_groups(n_samples=1001, group_weights=[5, 3, 2], n_groups=3)
    counts = np.bincount(s)
    assert counts.sum() == 1001
    np.testing.assert_allclose(counts, [500.5, 300.3, 200.2], atol=1)
    _, s = make_gaussian_groups(n_samples=1000, n_groups=4, random_state=0)
    assert np.bincount(s).tolist() == [700, 100, 100, 100]
    # rows are shuffled, not sorted by group
    assert np.any(np.diff(s) < 0)


@pytest.mark.parametrize("seed", range(5))
def test_gaussian_groups_pca_serves_majority_better(seed):
    X, s = make_gaussian_groups(random_state=seed)
    errors = _pca_group_errors(X, s)
    assert errors[1] > 3 * errors[0]
    # ...although each group's own best 2-D subspace does about equally well
    own_best = [_pca_group_errors(X[s == a], s[s == a])[0] for a in (0, 1)]
    assert own_best[1] == pytest.approx(own_best[0], rel=0.2)


def test_gaussian_groups_k_groups_and_means():
    X, s = make_gaussian_groups(n_samples=3000, n_groups=3, random_state=0)
    errors = _pca_group_errors(X, s)
    assert errors[1] > 2 * errors[0] and errors[2] > 2 * errors[0]
    # group means are mean_shift away from the origin
    X, s = make_gaussian_groups(n_samples=20_000, mean_shift=2.0, random_state=1)
    for a in (0, 1):
        assert np.linalg.norm(X[s == a].mean(axis=0)) == pytest.approx(2.0, abs=0.1)
    X, s = make_gaussian_groups(n_samples=20_000, mean_shift=0.0, random_state=1)
    for a in (0, 1):
        assert np.linalg.norm(X[s == a].mean(axis=0)) < 0.1


def test_gaussian_groups_small_dimension_fallback():
    # 2 * n_groups > n_features: dominant subspaces drawn independently
    X, s = make_gaussian_groups(n_samples=300, n_features=3, n_groups=2, random_state=0)
    assert X.shape == (300, 3)
    X, s = make_gaussian_groups(n_samples=300, n_features=2, n_groups=3, random_state=0)
    assert X.shape == (300, 2) and np.unique(s).tolist() == [0, 1, 2]


def test_gaussian_groups_target():
    X, s, y = make_gaussian_groups(random_state=0, return_target=True)
    X2, s2 = make_gaussian_groups(random_state=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(s, s2)
    assert y.shape == (1000,) and y.dtype == np.int64
    assert set(np.unique(y).tolist()) == {0, 1}
    # y depends on X: a linear classifier beats the majority-class rate clearly
    baseline = max(y.mean(), 1 - y.mean())
    accuracy = cross_val_score(LogisticRegression(), X, y, cv=5).mean()
    assert accuracy > baseline + 0.15
    # ...and the dependence survives a 2-component PCA
    Z = PCA(n_components=2).fit_transform(X)
    assert cross_val_score(LogisticRegression(), Z, y, cv=5).mean() > baseline + 0.1
    # y depends (weakly) on the group: the majority has a higher positive rate
    _, s, y = make_gaussian_groups(n_samples=20_000, random_state=1, return_target=True)
    gap = y[s == 0].mean() - y[s == 1].mean()
    assert 0.04 < gap < 0.25


# ---------------------------------------------------------------- bad arguments

BAD = [
    (make_mmd_synthetic1, {"n_per_group": 1}, ValueError, "n_per_group"),
    (make_mmd_synthetic1, {"n_per_group": 10.0}, TypeError, "n_per_group"),
    (make_mmd_synthetic1, {"n_per_group": True}, TypeError, "n_per_group"),
    (make_mmd_synthetic1, {"random_state": "seed"}, ValueError, "random_state"),
    (make_mmd_synthetic1, {"random_state": -1}, ValueError, "random_state"),
    (make_mmd_synthetic1, {"random_state": True}, TypeError, "random_state"),
    (make_mmd_synthetic2, {"n_features": 0}, ValueError, "n_features"),
    (make_mmd_synthetic2, {"n_features": "20"}, TypeError, "n_features"),
    (make_mmd_synthetic2, {"n_per_group": -3}, ValueError, "n_per_group"),
    (make_mmd_synthetic2, {"return_params": 1}, TypeError, "return_params"),
    (make_mmd_synthetic2, {"random_state": 1.5}, ValueError, "random_state"),
    (make_robust_toy, {"n_per_group": (200, 100, 50)}, ValueError, "n_per_group"),
    (make_robust_toy, {"n_per_group": (200, 1)}, ValueError, "n_per_group"),
    (make_robust_toy, {"n_per_group": (200, 1.5)}, TypeError, "n_per_group"),
    (make_robust_toy, {"n_per_group": 2.5}, TypeError, "n_per_group"),
    (make_robust_toy, {"n_per_group": None}, TypeError, "n_per_group"),
    (make_gaussian_groups, {"n_samples": 0}, ValueError, "n_samples"),
    (make_gaussian_groups, {"n_samples": 5}, ValueError, "n_samples"),
    (make_gaussian_groups, {"n_samples": 1e3}, TypeError, "n_samples"),
    (make_gaussian_groups, {"n_features": 1}, ValueError, "n_features"),
    (make_gaussian_groups, {"n_groups": 1}, ValueError, "n_groups"),
    (make_gaussian_groups, {"n_groups": None}, TypeError, "n_groups"),
    (make_gaussian_groups, {"group_weights": [1.0]}, ValueError, "group_weights"),
    (make_gaussian_groups, {"group_weights": [0.5, -0.5]}, ValueError, "group_weights"),
    (make_gaussian_groups, {"group_weights": [0.5, np.nan]}, ValueError, "group_weights"),
    (make_gaussian_groups, {"group_weights": [0.5, 0.0]}, ValueError, "group_weights"),
    (make_gaussian_groups, {"group_weights": ["a", "b"]}, TypeError, "group_weights"),
    (make_gaussian_groups, {"group_weights": "ab"}, TypeError, "group_weights"),
    (
        make_gaussian_groups,
        {"n_samples": 100, "group_weights": [0.99, 0.01]},
        ValueError,
        "n_samples",
    ),
    (make_gaussian_groups, {"mean_shift": -1.0}, ValueError, "mean_shift"),
    (make_gaussian_groups, {"mean_shift": np.inf}, ValueError, "mean_shift"),
    (make_gaussian_groups, {"mean_shift": "1"}, TypeError, "mean_shift"),
    (make_gaussian_groups, {"return_target": "yes"}, TypeError, "return_target"),
    (make_gaussian_groups, {"random_state": [1, 2]}, ValueError, "random_state"),
]


@pytest.mark.parametrize(
    ("func", "kwargs", "error", "name"),
    BAD,
    ids=[f"{f.__name__}-{next(iter(k))}-{i}" for i, (f, k, *_) in enumerate(BAD)],
)
def test_bad_arguments_name_the_argument(func, kwargs, error, name):
    with pytest.raises(error, match=name):
        func(**kwargs)
