"""StreamingFairPCA against independent computations.

Oracles: the unfair subspace and the projected PCA computed from scratch with
numpy (dense covariances, ``eigh``) on the same rows; the population solution
from the generator's closed-form moments; tracemalloc for the memory claim.
"""

import pickle
import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from fairpca import MinMaxLossFairPCA, StreamingFairPCA
from fairpca.datasets import iter_wide_groups, make_wide_groups, wide_groups_moments
from fairpca.streaming import unfair_directions


def sin_theta(U, V):
    """Largest principal-angle sine between the column spans of U and V (orthonormal)."""
    cosines = np.linalg.svd(U.T @ V, compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - cosines.min() ** 2)))


def from_scratch(X, s, d, m):
    """Unfair subspace and components by dense linear algebra, written afresh."""
    groups = np.unique(s)
    weights = np.array([np.mean(s == g) for g in groups])
    means = np.array([X[s == g].mean(axis=0) for g in groups])
    covs = [np.cov(X[s == g], rowvar=False, bias=True) for g in groups]
    within = sum(w * C for w, C in zip(weights, covs, strict=True))
    A = sum(w * (C - within) @ (C - within) for w, C in zip(weights, covs, strict=True))
    W = np.linalg.eigh(A)[1][:, ::-1][:, :m]
    diffs = (means - weights @ means).T
    basis = np.linalg.qr(np.hstack([np.linalg.svd(diffs, full_matrices=False)[0][:, :-1], W]))[0]
    complement = np.eye(X.shape[1]) - basis @ basis.T
    total = np.cov(X, rowvar=False, bias=True)
    V = np.linalg.eigh(complement @ total @ complement)[1][:, ::-1][:, :d]
    return W, basis, V, covs, means


def gaps(est, covs, means):
    """Projected group-mean gap and covariance gap (Frobenius) of a fitted estimator."""
    C = est.components_
    mean_gap = np.linalg.norm(C @ (means[0] - means[1]))
    cov_gap = np.linalg.norm(C @ (covs[0] - covs[1]) @ C.T)
    return mean_gap, cov_gap


@pytest.fixture(scope="module")
def small():
    return make_wide_groups(n_samples=1200, n_features=300, random_state=1)


# --------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("solver", ["power", "exact"])
def test_matches_a_from_scratch_computation(small, solver):
    X, s = small
    d, m = 3, 4
    W, N, V, covs, means = from_scratch(X, s, d, m)
    est = StreamingFairPCA(d, unfair_rank=m, solver=solver, random_state=0).fit(
        X, sensitive_features=s
    )
    assert est.converged_
    assert sin_theta(W, est.covariance_directions_) <= 1e-6
    assert sin_theta(N, est.unfair_subspace_) <= 1e-6
    assert sin_theta(V, est.components_.T) <= 1e-6
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(d), atol=1e-10)
    assert np.abs(est.components_ @ est.unfair_subspace_).max() <= 1e-10
    # Every projected group mean is the same.
    Z = est.transform(X)
    assert np.abs(Z[s == 0].mean(axis=0) - Z[s == 1].mean(axis=0)).max() <= 1e-10
    # Explained variance: the variance of the scores (n - 1 convention).
    np.testing.assert_allclose(est.explained_variance_, Z.var(axis=0, ddof=1), rtol=1e-8)


@pytest.mark.slow
def test_p2000_power_against_exact():
    X, s = make_wide_groups(n_samples=3000, n_features=2000, random_state=0)
    d, m = 3, 4
    power = StreamingFairPCA(d, unfair_rank=m, random_state=0).fit(X, sensitive_features=s)
    exact = StreamingFairPCA(d, unfair_rank=m, solver="exact").fit(X, sensitive_features=s)
    assert power.converged_
    assert sin_theta(exact.components_.T, power.components_.T) <= 0.05
    assert sin_theta(exact.components_.T, power.components_.T) <= 1e-5  # what it reaches
    covs = [np.cov(X[s == g], rowvar=False, bias=True) for g in (0, 1)]
    means = np.array([X[s == g].mean(axis=0) for g in (0, 1)])
    power_gaps, exact_gaps = gaps(power, covs, means), gaps(exact, covs, means)
    assert power_gaps[0] <= exact_gaps[0] + 1e-8
    assert power_gaps[1] <= exact_gaps[1] * (1 + 1e-4) + 1e-10
    # And the fair map does what it is for: PCA's projected covariance gap is larger.
    top = np.linalg.eigh(np.cov(X, rowvar=False, bias=True))[1][:, ::-1][:, :d]
    assert np.linalg.norm(top.T @ (covs[0] - covs[1]) @ top) > 2 * power_gaps[1]


def test_three_groups(small):
    X, _ = small
    s = np.arange(X.shape[0]) % 3
    W, N, V, _, _ = from_scratch(X, s, 2, 3)
    est = StreamingFairPCA(2, unfair_rank=3, random_state=0).fit(X, sensitive_features=s)
    assert est.unfair_subspace_.shape[1] == 2 + 3
    assert sin_theta(N, est.unfair_subspace_) <= 1e-6
    assert sin_theta(V, est.components_.T) <= 1e-6


# --------------------------------------------------------------------------- blocks and seeds
def test_block_size_row_order_and_dask_give_the_same_result(small):
    X, s = small
    reference = StreamingFairPCA(2, unfair_rank=3, random_state=0).fit(X, sensitive_features=s)
    order = np.random.default_rng(0).permutation(X.shape[0])
    variants = [
        StreamingFairPCA(2, unfair_rank=3, block_size=137, random_state=0).fit(
            X, sensitive_features=s
        ),
        StreamingFairPCA(2, unfair_rank=3, block_size=1, random_state=0).fit(
            X[:300], sensitive_features=s[:300]
        ),
        StreamingFairPCA(2, unfair_rank=3, random_state=0).fit(
            X[order], sensitive_features=s[order]
        ),
    ]
    da = pytest.importorskip("dask.array")
    variants.append(
        StreamingFairPCA(2, unfair_rank=3, random_state=0).fit(
            da.from_array(X, chunks=(250, 100)), sensitive_features=s
        )
    )
    for i, est in enumerate(variants):
        if i == 1:  # fewer rows: compare with the same rows in one block
            same = StreamingFairPCA(2, unfair_rank=3, random_state=0)
            same.fit(X[:300], sensitive_features=s[:300])
            assert sin_theta(same.components_.T, est.components_.T) <= 1e-6
        else:
            assert sin_theta(reference.components_.T, est.components_.T) <= 1e-6
            np.testing.assert_allclose(est.mean_, reference.mean_, atol=1e-12)


def test_deterministic_with_a_seed(small):
    X, s = small
    a = StreamingFairPCA(2, unfair_rank=2, random_state=3).fit(X, sensitive_features=s)
    b = StreamingFairPCA(2, unfair_rank=2, random_state=3).fit(X, sensitive_features=s)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.unfair_subspace_, b.unfair_subspace_)


# --------------------------------------------------------------------------- partial_fit
def population_solution(p, d, m, noise=0.1):
    """The generator's exact answer from its closed-form moments."""
    patterns, means, variances = wide_groups_moments(p)
    covs = [patterns @ np.diag(v) @ patterns.T + noise**2 * np.eye(p) for v in variances]
    weights = np.full(2, 0.5)
    within = sum(w * C for w, C in zip(weights, covs, strict=True))
    A = sum(w * (C - within) @ (C - within) for w, C in zip(weights, covs, strict=True))
    W = np.linalg.eigh(A)[1][:, ::-1][:, :m]
    mu = means @ patterns.T
    N = unfair_directions(mu, weights, W)
    between = ((mu - weights @ mu).T * weights) @ (mu - weights @ mu)
    complement = np.eye(p) - N @ N.T
    V = np.linalg.eigh(complement @ (within + between) @ complement)[1][:, ::-1][:, :d]
    return W, V


def test_partial_fit_approaches_the_population_solution():
    p, d, m = 400, 3, 4
    W, V = population_solution(p, d, m)
    est = StreamingFairPCA(d, unfair_rank=m, block_size=4000, random_state=0)
    for X, s in iter_wide_groups(48_000, p, block_size=700, random_state=5):
        est.partial_fit(X, sensitive_features=s)
    assert est.n_iter_ == (12, 12) and not est.converged_
    assert sin_theta(W, est.covariance_directions_) <= 0.15
    assert sin_theta(V, est.components_.T) <= 0.15
    # fit on the same rows does at least as well (it reads them many times).
    rows = list(iter_wide_groups(48_000, p, block_size=700, random_state=5))
    X, s = np.vstack([r[0] for r in rows]), np.concatenate([r[1] for r in rows])
    full = StreamingFairPCA(d, unfair_rank=m, random_state=0).fit(X, sensitive_features=s)
    assert sin_theta(V, full.components_.T) <= sin_theta(V, est.components_.T)


def test_partial_fit_does_not_depend_on_how_the_stream_is_cut(small):
    X, s = small
    one = StreamingFairPCA(2, unfair_rank=2, block_size=400, random_state=0)
    for i in range(X.shape[0]):  # single-row blocks are buffered
        one.partial_fit(X[i : i + 1], sensitive_features=s[i : i + 1])
    many = StreamingFairPCA(2, unfair_rank=2, block_size=400, random_state=0)
    for start in range(0, X.shape[0], 333):
        many.partial_fit(X[start : start + 333], sensitive_features=s[start : start + 333])
    np.testing.assert_allclose(one.components_, many.components_, atol=1e-10)
    assert one.n_iter_ == many.n_iter_ == (3, 3)


def test_partial_fit_needs_two_groups_before_transform(small):
    X, s = small
    est = StreamingFairPCA(2, block_size=100, random_state=0)
    est.partial_fit(X[s == 0][:300], sensitive_features=s[s == 0][:300])
    with pytest.raises(NotFittedError, match="has seen 1 group"):
        est.transform(X)
    est.partial_fit(X[:200], sensitive_features=s[:200])
    assert est.transform(X).shape == (X.shape[0], 2)


# --------------------------------------------------------------------------- memory
def peak_fit_bytes(p):
    X, s = make_wide_groups(n_samples=1000, n_features=p, random_state=0)
    est = StreamingFairPCA(2, unfair_rank=2, block_size=100, oversampling=4, max_iter=5)
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, sensitive_features=s)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_peak_memory_grows_linearly_in_p():
    small_peak, large_peak = peak_fit_bytes(1500), peak_fit_bytes(3000)
    assert 1.6 <= large_peak / small_peak <= 2.4
    # Far below a single p x p matrix (72 MB at p = 3000).
    assert large_peak < 8 * 3000**2 / 4


# --------------------------------------------------------------------------- bad input
def test_bad_input(small):
    X, s = small
    est = StreamingFairPCA(2, unfair_rank=2)
    with pytest.raises(ValueError, match="at least 2"):
        est.fit(X, sensitive_features=np.zeros(X.shape[0]))
    with pytest.raises(ValueError, match="n_components \\+ unfair_rank must be below"):
        StreamingFairPCA(5, unfair_rank=4).fit(X[:, :9], sensitive_features=s)
    with pytest.raises(ValueError, match="solver must be"):
        StreamingFairPCA(solver="eigh").fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="NaN"):
        bad = X.copy()
        bad[3, 4] = np.nan
        est.fit(bad, sensitive_features=s)
    assert not hasattr(est, "components_")  # failed calls leave it unfitted
    stream = StreamingFairPCA(2, block_size=100).partial_fit(X[:200], sensitive_features=s[:200])
    with pytest.raises(ValueError, match="300 features"):
        stream.partial_fit(X[:50, :250], sensitive_features=s[:50])
    fitted = StreamingFairPCA(2, random_state=0).fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="features"):
        fitted.transform(X[:, :10])


def test_exact_solver_refuses_wide_data_and_others_name_the_streaming_estimator():
    X = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(4, 40_000), strides=(0, 0))
    s = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="solver='exact' holds dense"):
        StreamingFairPCA(solver="exact").fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="use fairpca.StreamingFairPCA"):
        MinMaxLossFairPCA(2).fit(X, sensitive_features=s)


def test_convergence_warning_and_flag(small):
    X, s = small
    with pytest.warns(ConvergenceWarning, match="subspace change of"):
        est = StreamingFairPCA(2, unfair_rank=3, max_iter=1, random_state=0).fit(
            X, sensitive_features=s
        )
    assert not est.converged_ and est.n_iter_ == (1, 1)


def test_clone_pickle_and_feature_names(small):
    X, s = small
    est = StreamingFairPCA(2, random_state=0).fit(X, sensitive_features=s)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.transform(X), est.transform(X))
    assert clone(est).get_params() == est.get_params()
    assert list(est.get_feature_names_out()) == ["streamingfairpca0", "streamingfairpca1"]
    np.testing.assert_allclose(
        est.inverse_transform(est.transform(X)) - est.mean_,
        (X - est.mean_) @ est.components_.T @ est.components_,
        atol=1e-10,
    )


def test_compare_on_data_too_wide_for_the_others():
    from fairpca.compare import compare_split, make_split

    X, s = make_wide_groups(n_samples=80, n_features=19_000, random_state=2)
    y = (X[:, 0] > 0).astype(int)
    split = make_split(X, s, y, test_size=0.3, random_state=0)
    messages = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comparison = compare_split(
            split, methods=["MinMaxLossFairPCA", "StreamingFairPCA"], progress=messages.append
        )
    assert list(comparison.table.index) == ["PCA", "StreamingFairPCA"]
    assert "use fairpca.StreamingFairPCA" in comparison.unavailable["MinMaxLossFairPCA"]
    assert any("MinMaxLossFairPCA left out" in m for m in messages)


def test_mmd_bandwidth_on_wide_data_uses_the_same_pca_subspace():
    from fairpca.metrics import mmd_bandwidth

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 120)) * np.linspace(3, 0.1, 120)
    # sqrt(median squared distance / 2) of the rows projected on the top-2 PCs, here
    # from numpy's SVD of the centred rows (the wide route uses the n x n Gram matrix).
    V = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)[2][:2].T
    Z = X @ V
    squared = ((Z[:, None] - Z[None]) ** 2).sum(-1)[np.triu_indices(40, 1)]
    assert mmd_bandwidth(X, 2) == pytest.approx(np.sqrt(np.median(squared) / 2), rel=1e-8)


def test_tradeoff_sweeps_the_unfair_rank():
    from fairpca import tradeoff_curve
    from fairpca.datasets import make_gaussian_groups

    X, s, y = make_gaussian_groups(n_samples=600, n_features=6, random_state=0, return_target=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = tradeoff_curve(
            X, s, y, estimators={"S": StreamingFairPCA(2, random_state=0)}, n_bootstrap=10
        )
    assert list(curve["setting"]) == [f"unfair_rank={m}" for m in (0, 1, 2, 4, 8)]
    feasible = curve["error"].isna()
    assert list(feasible) == [True, True, True, False, False]  # 2 + m must stay below 6
    assert "n_components + unfair_rank must be below" in curve["error"].iloc[3]
    # Removing more directions never explains more variance.
    variance = curve.loc[feasible, "explained_variance_ratio"].to_numpy()
    assert all(variance[:-1] >= variance[1:] - 1e-12)
