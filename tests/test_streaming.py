"""StreamingFairPCA against independent computations.

Oracles: the unfair subspace and the projected PCA computed from scratch with
numpy (dense covariances, ``eigh``) on the same rows; the population solution
from the generator's closed-form moments; tracemalloc for the memory claim.
"""

import logging
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
@pytest.mark.parametrize(
    "solver",
    ["power", pytest.param("exact", marks=pytest.mark.slow)],  # exact: 6 s of CPU
)
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


@pytest.mark.slow  # 4.5 s of CPU (two groups, power and exact: the tests above)
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


@pytest.mark.slow  # 48,000 x 400 rows streamed (the cut of the stream: test below)
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
    with pytest.raises(NotFittedError, match="consumed so far hold 1 group"):
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = StreamingFairPCA(2, unfair_rank=3, max_iter=1, random_state=0).fit(
            X, sensitive_features=s
        )
    assert not est.converged_ and est.n_iter_ == (1, 1)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    # One line per phase that stopped early, saying why and what would help.
    assert len(messages) == 2 and all("\n" not in m for m in messages)
    assert "phase 1" in messages[0] and "phase 2" in messages[1]
    assert all("estimated subspace error of" in m and "max_iter reached" in m for m in messages)
    assert all("more iterations would reach tol" in m for m in messages)


def test_iteration_counts_are_words_not_a_tuple(small, caplog):
    """Issue 47: "stopped after (3, 200) power iterations" printed ``n_iter_``'s tuple."""
    import logging
    import re

    from fairpca.streaming import iterations_text

    assert iterations_text((3, 200)) == (
        "3 power iterations on the covariance differences, 200 on the projected covariance"
    )
    assert iterations_text((1, 4)).startswith("1 power iteration on ")
    assert iterations_text((0, 0)) == "no power iterations"
    X, s = small
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG):
        warnings.simplefilter("always")
        est = StreamingFairPCA(2, unfair_rank=3, max_iter=2, random_state=0).fit(
            X, sensitive_features=s
        )
    texts = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [t for t in texts if re.search(r"\(\d+, \d+\)", t)]
    assert any(iterations_text(est.n_iter_) in t for t in texts)
    stops = [t for t in texts if "stopped after" in t]
    assert stops and all(re.search(r"stopped after \d+ power iterations", t) for t in stops)


# --------------------------------------------------------------------------- small eigengaps
def compas_like(n=3000, p=15, duplicates=2, ratio=0.97, seed=0):
    """Rows like COMPAS's standardised numeric columns, with a known hard structure.

    Six groups of very unequal sizes (51 % down to 0.25 %), a geometric
    spectrum whose neighbouring eigenvalues differ by ``1 - ratio`` (small
    eigengaps), group-specific shifts and scales, and ``duplicates`` columns
    repeated (COMPAS has ``decile_score.1`` and ``priors_count.1``): the
    covariance is rank-deficient, and with ``p - (k - 1) - m`` as small as
    the power block the block spans the whole complement of the unfair
    subspace.
    """
    rng = np.random.default_rng(seed)
    shares = np.array([0.51, 0.005, 0.34, 0.09, 0.0025, 0.05])
    s = rng.choice(len(shares), size=n, p=shares / shares.sum())
    spectrum = 1.5 * ratio ** np.arange(p)
    Q = np.linalg.qr(rng.standard_normal((p, p)))[0]
    X = rng.standard_normal((n, p)) * np.sqrt(spectrum) @ Q.T
    X = (
        X * (1 + 0.5 * rng.random((len(shares), p)))[s]
        + 0.3 * rng.standard_normal((len(shares), p))[s]
    )
    X = np.hstack([X, X[:, :duplicates]])
    return (X - X.mean(axis=0)) / X.std(axis=0), s


def distance(U, V):
    """Frobenius distance between the projectors, as the stopping rule measures it."""
    return np.linalg.norm(U @ U.T - V @ V.T)


@pytest.mark.parametrize(
    "shape",
    [
        {},  # 17 columns, rank 15: the block is the whole complement of N
        # 302 columns, small gaps throughout; gaps of 0.1 % (10-25 s of CPU each)
        pytest.param({"p": 300, "ratio": 0.99}, marks=pytest.mark.slow),
        pytest.param({"p": 300, "ratio": 0.999, "n": 6000}, marks=pytest.mark.slow),
    ],
)
def test_converges_at_defaults_with_small_gaps_and_matches_exact(shape):
    X, s = compas_like(**shape)
    exact = StreamingFairPCA(2, solver="exact").fit(X, sensitive_features=s)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        power = StreamingFairPCA(2, random_state=0).fit(X, sensitive_features=s)
    assert power.converged_ and max(power.n_iter_) < 100
    # The stopping rule bounds each phase's distance to its exact subspace by tol.
    tol = power.tol
    assert distance(power.covariance_directions_, exact.covariance_directions_) <= tol
    assert distance(power.components_.T, exact.components_.T) <= tol
    np.testing.assert_allclose(power.explained_variance_, exact.explained_variance_, rtol=tol)
    # The components stay in the complement of the unfair subspace (the fair
    # constraint), also when the covariance is rank-deficient.
    assert np.abs(power.components_ @ power.unfair_subspace_).max() <= 1e-12
    assert np.abs(power.components_ @ exact.unfair_subspace_).max() <= tol


def test_partial_fit_stays_in_the_complement_when_blocks_are_rank_deficient():
    # 17 columns, rank 15, unfair subspace of rank 7: the 12-column block is wider
    # than the 10-dimensional complement (it loaded 0.02 on N before).
    X, s = compas_like()
    est = StreamingFairPCA(2, block_size=1000, random_state=0)
    for start in range(0, X.shape[0], 500):
        est.partial_fit(X[start : start + 500], sensitive_features=s[start : start + 500])
    assert np.abs(est.components_ @ est.unfair_subspace_).max() <= 1e-12


def test_too_few_dimensions_left_for_the_components_is_an_error():
    rng = np.random.default_rng(0)
    s = np.arange(400) % 4
    X = rng.standard_normal((400, 6)) + s[:, None] * rng.standard_normal(6)
    with pytest.raises(ValueError, match="more than the 1 dimension"):
        StreamingFairPCA(2, unfair_rank=2, random_state=0).fit(X, sensitive_features=s)


def test_near_tied_eigenvalues_stop_early_and_say_why():
    from fairpca._linalg import block_power_iteration

    rng = np.random.RandomState(0)
    p = 200
    Q = np.linalg.qr(rng.standard_normal((p, p)))[0]
    values = np.concatenate([[3.0, 1.0, 1.0, 0.5], np.linspace(0.4, 0.01, p - 4)])
    A = (Q * values) @ Q.T
    tied = block_power_iteration(lambda B: A @ B, rng.standard_normal((p, 12)), 2, 1e-6, 200, rng)
    assert tied.stalled and tied.n_iter < 50 and tied.error > 1e-6
    # The top-2 subspace is undetermined; the captured variance is exact.
    np.testing.assert_allclose(tied.values, [3.0, 1.0], rtol=1e-12)
    values[2] = 0.99  # a 1 % gap: certified
    A = (Q * values) @ Q.T
    gap = block_power_iteration(lambda B: A @ B, rng.standard_normal((p, 12)), 2, 1e-6, 200, rng)
    assert not gap.stalled and gap.error <= 1e-6
    assert distance(gap.vectors, Q[:, :2]) <= 1e-6


def test_logs_one_line_per_phase_at_info(small, caplog):
    X, s = small
    with caplog.at_level(logging.INFO, logger="fairpca.streaming"):
        StreamingFairPCA(2, unfair_rank=3, random_state=0).fit(X, sensitive_features=s)
    lines = [r.getMessage() for r in caplog.records if r.name == "fairpca.streaming"]
    assert any("means of 1200 rows in 2 groups" in line for line in lines)
    assert any(
        line.startswith("StreamingFairPCA phase 1") and "converged" in line for line in lines
    )
    assert any(
        line.startswith("StreamingFairPCA phase 2") and "converged" in line for line in lines
    )
    assert len(lines) <= 10  # a fit of well under a second: no per-iteration lines


def test_progress_lines_are_throttled(small, caplog, monkeypatch):
    import fairpca.streaming as streaming

    clock = iter(np.arange(0.0, 1e4, 0.3))  # every reading 0.3 s after the last
    monkeypatch.setattr(streaming.time, "monotonic", lambda: next(clock))
    X, s = small
    with caplog.at_level(logging.INFO, logger="fairpca.streaming"):
        est = StreamingFairPCA(2, unfair_rank=3, tol=1e-12, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, sensitive_features=s)
    lines = [r.getMessage() for r in caplog.records if "power iteration " in r.getMessage()]
    iterations = sum(est.n_iter_)
    assert 1 <= len(lines) <= iterations / 3 + 2  # at most one line per second
    assert all("estimated subspace error" in line for line in lines)


@pytest.mark.requires_data("compas")
def test_compas_numeric_columns_converge_at_defaults(fairpca_data_home):
    """The case of issue 38: COMPAS's numeric columns, standardised, six race groups."""
    import pandas as pd

    frame = pd.read_csv(fairpca_data_home / "compas" / "compas-scores-two-years.csv")
    numeric = frame.select_dtypes("number").drop(columns=["id", "two_year_recid"])
    numeric = numeric.loc[:, numeric.notna().any()]
    numeric = numeric.fillna(numeric.median())
    numeric = numeric.loc[:, numeric.std() > 0].to_numpy(float)
    X = (numeric - numeric.mean(axis=0)) / numeric.std(axis=0)
    s = frame["race"].to_numpy()
    exact = StreamingFairPCA(2, solver="exact").fit(X, sensitive_features=s)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        power = StreamingFairPCA(2, random_state=0).fit(X, sensitive_features=s)
    assert power.converged_ and max(power.n_iter_) <= 20
    assert distance(power.components_.T, exact.components_.T) <= power.tol
    np.testing.assert_allclose(power.explained_variance_, exact.explained_variance_, rtol=power.tol)


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


def _compare_too_wide(n_features):
    from fairpca.compare import compare_split, make_split

    X, s = make_wide_groups(n_samples=80, n_features=n_features, random_state=2)
    y = (np.arange(len(s)) // 2) % 2  # both classes in every group (s alternates)
    split = make_split(X, s, y, test_size=0.3, random_state=0)
    messages = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comparison = compare_split(
            split, methods=["MinMaxLossFairPCA", "StreamingFairPCA"], progress=messages.append
        )
    assert list(comparison.table.index) == ["PCA", "StreamingFairPCA"]
    assert "use fairpca.StreamingFairPCA" in comparison.unavailable["MinMaxLossFairPCA"]
    assert any("MinMaxLossFairPCA not available" in m for m in messages)


def test_compare_routes_data_too_wide_for_the_others(monkeypatch):
    # The routing on the smallest input: the memory limit lowered so that 200 features
    # are "too wide" for three dense p x p moments.
    import fairpca._validation

    monkeypatch.setattr(fairpca._validation, "MAX_DENSE_MOMENT_BYTES", 3 * 8 * 200**2 - 1)
    _compare_too_wide(200)


@pytest.mark.slow
def test_compare_on_data_too_wide_for_the_others():
    # The real limit (8 GiB of moments): 19,000 features.
    _compare_too_wide(19_000)


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


# --------------------------------------------------------------------------- state rules
def test_partial_fit_after_fit_continues_and_checks_the_width(small):
    X, s = small
    est = StreamingFairPCA(2, unfair_rank=2, block_size=200, random_state=0)
    est.fit(X, sensitive_features=s)
    fitted = est.components_.copy()
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(X[:, :50], sensitive_features=s)
    assert est.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(est.components_, fitted)  # the failed call changed nothing
    est.partial_fit(X[:200], sensitive_features=s[:200])
    assert est.n_features_in_ == X.shape[1]
    # Continued from the fit: counts include the fit's rows, and one step stays close.
    assert est.group_counts_.sum() == X.shape[0] + 200
    _, _, V, _, _ = from_scratch(X, s, 2, 2)
    assert sin_theta(V, est.components_.T) <= 0.2
    # fit starts afresh: no stream left, the same answer as a fresh fit.
    est.fit(X, sensitive_features=s)
    assert not hasattr(est, "_stream")
    np.testing.assert_array_equal(est.components_, fitted)


def test_partial_fit_on_constant_rows_warns_and_gives_no_components():
    X = np.ones((40, 6))
    s = np.arange(40) % 2
    est = StreamingFairPCA(2, unfair_rank=1, block_size=20, random_state=0)
    with pytest.warns(UserWarning, match="constant"):
        est.partial_fit(X, sensitive_features=s)
    with pytest.raises(NotFittedError, match="all the same"):
        est.transform(X)
    with pytest.raises(ValueError, match="constant"):  # fit refuses the same data
        StreamingFairPCA(2, unfair_rank=1).fit(X, sensitive_features=s)


def test_buffered_rows_are_the_reason_given(small):
    X, s = small
    est = StreamingFairPCA(2, unfair_rank=1, block_size=100, random_state=0)
    est.partial_fit(X[:50], sensitive_features=s[:50])  # both groups, but only buffered
    with pytest.raises(NotFittedError, match=r"buffered 50 row\(s\), fewer than block_size=100"):
        est.transform(X)
    est.partial_fit(X[50:100], sensitive_features=s[50:100])
    assert est.transform(X).shape == (X.shape[0], 2)


def test_short_wide_fit_is_exact_in_the_row_space():
    """n <= block_size < p: no power iterations, the dense answer to rounding."""
    X, s = make_wide_groups(n_samples=40, n_features=400, random_state=2)
    d, m = 2, 2
    W, N, V, _, _ = from_scratch(X, s, d, m)
    est = StreamingFairPCA(d, unfair_rank=m, random_state=0).fit(X, sensitive_features=s)
    assert est.n_iter_ == (0, 0) and est.converged_
    assert np.linalg.norm(N - est.unfair_subspace_ @ (est.unfair_subspace_.T @ N), 2) <= 1e-8
    assert np.linalg.norm(V - est.components_.T @ (est.components_ @ V), 2) <= 1e-8
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(d), atol=1e-12)
