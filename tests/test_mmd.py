import logging
import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning

from fairpca import ConvexFairPCA, MMDFairPCA
from fairpca._kernels import _exact_hess_vec, _exact_hessian, _qmc_frequencies, _weighted_kernel
from fairpca._mmd_objective import _REBUILD_FRACTION, _CachedObjective, _Penalty
from fairpca.datasets import make_gaussian_groups, make_mmd_synthetic1
from fairpca.experiments import lee2022
from fairpca.metrics import explained_variance_ratio, mmd2
from fairpca.riemannian import random_point, retract_qr, subspace_distance, tangent_projection
from fairpca.riemannian.trust_region import (
    _SHIFTS,
    _hessian,
    _hessian_factor,
    _riemannian_hessian_matrix,
)
from test_kernels import _stratum, _three_groups


@pytest.fixture
def three_groups():
    return _three_groups()


# --------------------------------------------------------------------------
# MMD² and its gradient
# --------------------------------------------------------------------------


def test_penalty_is_sum_of_pairwise_mmd2_and_max_matches_metrics(three_groups):
    X, codes = three_groups
    V = random_point(6, 2, random_state=0)
    bandwidth = 1.3
    penalty, largest, _ = _Penalty([_stratum(X, codes)], bandwidth, "exact")(V)
    pairs = [
        mmd2(X[np.isin(codes, pair)], codes[np.isin(codes, pair)], V.T, bandwidth=bandwidth)
        for pair in ((0, 1), (0, 2), (1, 2))
    ]
    np.testing.assert_allclose(penalty, sum(pairs), rtol=1e-10)
    np.testing.assert_allclose(largest, max(pairs), rtol=1e-10)
    np.testing.assert_allclose(largest, mmd2(X, codes, V.T, bandwidth=bandwidth), rtol=1e-10)


def test_exact_hessian_product_matches_finite_differences_of_the_gradient(three_groups):
    X, codes = three_groups
    half = np.arange(len(codes)) % 2 == 0
    strata = [_stratum(X[half], codes[half], "y=1"), _stratum(X[~half], codes[~half], "y=0")]
    penalty = _Penalty(strata, 1.1, "exact")
    V = random_point(6, 3, random_state=5)
    rng = np.random.default_rng(6)
    for _ in range(3):
        Xi = rng.standard_normal(V.shape)
        t = 1e-5
        fd = (penalty(V + t * Xi)[2] - penalty(V - t * Xi)[2]) / (2 * t)
        np.testing.assert_allclose(penalty.hess_vec(V, Xi), fd, rtol=0, atol=1e-8)
    # Linear in Xi and the cached kernel is refreshed when V changes.
    Xi1, Xi2 = rng.standard_normal((2, *V.shape))
    np.testing.assert_allclose(
        penalty.hess_vec(V, Xi1 + 2 * Xi2),
        penalty.hess_vec(V, Xi1) + 2 * penalty.hess_vec(V, Xi2),
        atol=1e-12,
    )
    W = random_point(6, 3, random_state=7)
    fd = (penalty(W + 1e-5 * Xi1)[2] - penalty(W - 1e-5 * Xi1)[2]) / 2e-5
    np.testing.assert_allclose(penalty.hess_vec(W, Xi1), fd, rtol=0, atol=1e-8)


def test_penalty_switches_to_the_dense_hessian_with_the_same_values(three_groups):
    # Penalty.hess_vec switches to the matrix after a few products at one point, with
    # the same values (test_kernels checks the products and the matrix).
    X, codes = three_groups
    stratum = _stratum(X, codes, "all rows")
    penalty = _Penalty([stratum], 1.1, "exact")
    V = random_point(X.shape[1], 2, random_state=8)
    Xis = np.random.default_rng(9).standard_normal((40, *V.shape))
    values = [penalty.hess_vec(V, Xi) for Xi in Xis]
    assert penalty._kernels[2] is not None
    kernel = _weighted_kernel(V, stratum, penalty.gamma)
    for Xi, value in zip(Xis, values, strict=True):
        np.testing.assert_allclose(
            value, _exact_hess_vec(kernel, stratum, penalty.gamma, Xi), rtol=0, atol=1e-12
        )


@pytest.mark.parametrize("n_rows", [130, 4])  # n > p (Sigma) and n < p (X^T X / n)
def test_riemannian_hessian_matrix_and_preconditioner(three_groups, n_rows):
    # The (p d, p d) matrix of the trust-region preconditioner must be the Riemannian
    # Hessian that the solver applies matrix-free (trust_region._hessian of the objective's
    # products) on tangent vectors, vanish on normal ones; the preconditioner built
    # from it must map tangent vectors to tangent vectors and be symmetric positive
    # definite there, and invert the Hessian where that is positive definite.
    X, codes = three_groups
    X, codes = X[:n_rows], codes[:n_rows] if n_rows > 4 else np.array([0, 0, 1, 1])
    sigma = X.T @ X / len(X)
    penalty = _Penalty([_stratum(X, codes)], 1.2, "exact")
    objective = _CachedObjective(X, sigma, penalty)
    assert (objective._sigma is None) == (n_rows == 4)
    objective.rho = 30.0
    V = random_point(6, 2, random_state=11)
    _, egrad = objective(V)
    kernel = _weighted_kernel(V, penalty.strata[0], penalty.gamma)
    dense = _exact_hessian(kernel, penalty.strata[0], penalty.gamma)
    B, W = _riemannian_hessian_matrix(V, egrad, objective.euclidean_hessian(dense))
    rng = np.random.default_rng(12)
    for _ in range(3):
        xi = tangent_projection(V, rng.standard_normal(V.shape))
        reference = _hessian(V, egrad, objective.hess_vec(V, xi), xi)
        np.testing.assert_allclose((B @ xi.ravel()).reshape(V.shape), reference, atol=1e-10)
    normal = V @ np.array([[1.0, 0.3], [0.3, -2.0]])  # V Omega, Omega symmetric
    np.testing.assert_allclose(B @ normal.ravel(), 0.0, atol=1e-10)
    np.testing.assert_allclose(W.T @ W, np.eye(3), atol=1e-12)

    # Force the dense Hessian at V, then ask for the preconditioner at V and nearby.
    for _ in range(200):
        penalty.hess_vec(V, rng.standard_normal(V.shape))
    assert penalty._kernels[2] is not None
    for point in (V, retract_qr(V, 0.1 * tangent_projection(V, rng.standard_normal(V.shape)))):
        apply = objective.preconditioner(point, objective(point)[1])
        r1, r2 = (tangent_projection(point, rng.standard_normal(V.shape)) for _ in range(2))
        z1, z2 = apply(r1), apply(r2)
        np.testing.assert_allclose(z1, tangent_projection(point, z1), atol=1e-12)
        assert np.sum(r1 * z1) > 0
        # M^{-1} is one triangle in single precision (_single_precision): apply is the
        # projected product with that symmetric matrix, up to single-precision rounding.
        stored, lower = objective._preconditioner[1]
        triangle = np.tril(stored) if lower else np.triu(stored)
        F = triangle.astype(np.float64) + np.tril(triangle, -1).T + np.triu(triangle, 1).T
        for r, z in ((r1, z1), (r2, z2)):
            expected = tangent_projection(point, (F @ r.ravel()).reshape(r.shape))
            tolerance = 1e-6 * np.abs(F).sum(axis=1).max() * np.abs(r).max()
            np.testing.assert_allclose(z, expected, rtol=0, atol=tolerance)
    # At V, M = B + mu P on the tangent space for one mu >= 0 (0 if B is positive
    # definite there, which it is not at this random point): M^{-1} (B xi + mu xi) = xi,
    # to single precision.
    apply = objective.preconditioner(V, egrad)
    xi1, xi2 = (tangent_projection(V, rng.standard_normal(V.shape)) for _ in range(2))
    a1, b1 = apply((B @ xi1.ravel()).reshape(V.shape)), apply(xi1)
    mu = np.sum((xi1 - a1) * b1) / np.sum(b1 * b1)
    tangent_eigs = np.linalg.eigvalsh(B + 1e6 * (W @ W.T))[: B.shape[0] - W.shape[1]]
    assert tangent_eigs.min() < 0 and mu + tangent_eigs.min() > 0
    # The shift search starts where asked (later builds start one below the last shift).
    _, shift = _hessian_factor(V, egrad, objective.euclidean_hessian(dense))
    assert shift >= 1
    assert mu == pytest.approx(_SHIFTS[shift] * np.abs(np.diag(B)).max(), rel=1e-3)
    ehess = objective.euclidean_hessian(dense)
    assert _hessian_factor(V, egrad, ehess, first_shift=shift + 1)[1] == shift + 1
    np.testing.assert_allclose(a1 + mu * b1, xi1, rtol=0, atol=1e-4 * np.abs(xi1).max())
    a2, b2 = apply((B @ xi2.ravel()).reshape(V.shape)), apply(xi2)
    np.testing.assert_allclose(a2 + mu * b2, xi2, rtol=0, atol=1e-4 * np.abs(xi2).max())


def test_preconditioner_is_rebuilt_after_products_at_other_points(three_groups):
    # No preconditioner before any dense Hessian; single products at many points
    # (never enough at one point to form the dense Hessian there) add up, and once
    # they cost _REBUILD_FRACTION of a factorised dense Hessian the next request builds
    # a preconditioner at its own point.
    _, codes = three_groups
    rng = np.random.default_rng(13)
    X = rng.standard_normal((len(codes), 30))  # p d = 60: a dense Hessian is worth 6 products
    penalty = _Penalty([_stratum(X, codes)], 1.2, "exact")
    objective = _CachedObjective(X, X.T @ X / len(X), penalty)
    V = random_point(30, 2, random_state=14)
    assert objective.preconditioner(V, objective(V)[1]) is None
    budget = _REBUILD_FRACTION * penalty.dense_budget(V.shape, factorised=True)
    assert budget > penalty.dense_budget(V.shape) * _REBUILD_FRACTION > 2
    for k in range(int(np.ceil(budget))):
        W = random_point(30, 2, random_state=100 + k)
        assert objective.preconditioner(W, objective(W)[1]) is None
        objective.hess_vec(W, rng.standard_normal(W.shape))
        assert penalty._kernels[2] is None
    assert objective.preconditioner(V, objective(V)[1]) is not None
    assert objective._preconditioner[0] == V.tobytes()
    assert objective._products_since_build == 0


def test_riemannian_gradient_is_tangent_horizontal_and_matches_the_retraction(three_groups):
    X, codes = three_groups
    sigma = X.T @ X / len(X)
    objective = _CachedObjective(X, sigma, _Penalty([_stratum(X, codes)], 1.2, "exact"))
    objective.rho = 5.0
    V = random_point(6, 2, random_state=3)
    cost, egrad = objective(V)
    grad = tangent_projection(V, egrad)
    # Tangent: V^T grad is skew. The cost depends only on span(V), so the gradient is
    # also horizontal (V^T grad = 0): this fails if the Euclidean gradient is wrong.
    np.testing.assert_allclose(V.T @ grad + grad.T @ V, 0.0, atol=1e-12)
    np.testing.assert_allclose(V.T @ grad, 0.0, atol=1e-10)
    rng = np.random.default_rng(4)
    for _ in range(3):
        xi = tangent_projection(V, rng.standard_normal(V.shape))
        t = 1e-6
        slope = (objective(retract_qr(V, t * xi))[0] - objective(retract_qr(V, -t * xi))[0]) / (
            2 * t
        )
        np.testing.assert_allclose(np.sum(grad * xi), slope, rtol=1e-5)


def test_random_feature_objective_gradient_is_horizontal_and_exact_along_the_subspace(
    three_groups,
):
    X, codes = three_groups
    sigma = X.T @ X / len(X)
    bandwidth = 1.2
    penalty = _Penalty(
        [_stratum(X, codes)], bandwidth, "rff", _qmc_frequencies(2, 64, bandwidth, 0)
    )
    objective = _CachedObjective(X, sigma, penalty)
    objective.rho = 5.0
    V = random_point(6, 2, random_state=3)
    # The estimate itself changes under a rotation within span(V) (its gradient has a
    # vertical part) ...
    _, _, raw = penalty(V)
    assert np.abs(V.T @ raw - raw.T @ V).max() > 1e-4
    # ... but the objective's gradient has none: its Riemannian gradient is horizontal.
    _, egrad = objective(V)
    grad = tangent_projection(V, egrad)
    np.testing.assert_allclose(V.T @ grad, 0.0, atol=1e-10)
    # Along directions that move the subspace it is the estimate's exact derivative.
    rng = np.random.default_rng(4)
    for _ in range(3):
        xi = rng.standard_normal(V.shape)
        xi -= V @ (V.T @ xi)  # horizontal
        t = 1e-3  # single-precision features: a larger step
        slope = (objective(retract_qr(V, t * xi))[0] - objective(retract_qr(V, -t * xi))[0]) / (
            2 * t
        )
        np.testing.assert_allclose(np.sum(grad * xi), slope, rtol=2e-3)


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------


def test_synthetic1_reaches_tau_far_below_pca():
    X, s = make_mmd_synthetic1(random_state=0)
    est = MMDFairPCA(n_components=2, tau=1e-3, random_state=0).fit(X, sensitive_features=s)
    assert est.converged_
    h = mmd2(X, s, est, bandwidth=est.bandwidth_)
    np.testing.assert_allclose(h, est.constraint_value_, rtol=1e-9)
    assert h <= 1e-3
    assert mmd2(X, s, PCA(n_components=2).fit(X), bandwidth=est.bandwidth_) >= 50 * h


def _synthetic1_with_matched_moments(random_state):
    """Synthetic #1 with group 1 linearly recoloured to group 0's sample mean and covariance."""
    X, s = make_mmd_synthetic1(random_state=random_state)
    A, B = X[s == 0], X[s == 1]
    chol_a = np.linalg.cholesky(np.cov(A.T, bias=True))
    chol_b = np.linalg.cholesky(np.cov(B.T, bias=True))
    B = A.mean(axis=0) + (B - B.mean(axis=0)) @ np.linalg.solve(chol_b.T, chol_a.T)
    return np.vstack([A, B]), s


def test_synthetic1_moment_matching_cannot_separate_what_mmd_can():
    # Lee et al., Figure 1: equal means and covariances but different distributions.
    X, s = _synthetic1_with_matched_moments(random_state=0)
    A, B = X[s == 0], X[s == 1]
    np.testing.assert_allclose(A.mean(axis=0), B.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(np.cov(A.T), np.cov(B.T), atol=1e-12)
    pca = PCA(n_components=2).fit(X)
    fair = MMDFairPCA(n_components=2, tau=1e-3, random_state=0).fit(X, sensitive_features=s)
    bandwidth = fair.bandwidth_
    h_pca = mmd2(X, s, pca, bandwidth=bandwidth)
    assert mmd2(X, s, fair, bandwidth=bandwidth) <= 1e-3 <= h_pca / 50
    # With the first two moments already equal, FPCA's constraints are inactive: it is PCA.
    for mu in (0.01, 1.0):
        convex = ConvexFairPCA(n_components=2, mu=mu, delta=0.1, solver="CLARABEL")
        convex.fit(X, sensitive_features=s)
        assert subspace_distance(convex.components_.T, pca.components_.T) < 1e-3
        assert mmd2(X, s, convex, bandwidth=bandwidth) >= 0.9 * h_pca


def test_history_follows_the_repms_schedule():
    X, s = make_mmd_synthetic1(random_state=1)
    tau = 1e-3
    est = MMDFairPCA(n_components=2, tau=tau).fit(X, sensitive_features=s)
    hist = est.history_
    assert len(hist["rho"]) == est.n_iter_ >= 2
    # rho_0 = 1 / penalty(PCA), computed independently with sklearn's PCA: with two
    # groups the one-vs-rest penalty counts the one MMD² twice (group 0 and group 1).
    h_pca = mmd2(X, s, PCA(n_components=2).fit(X), bandwidth=est.bandwidth_)
    np.testing.assert_allclose(hist["rho"][0] * 2 * h_pca, 1.0, rtol=1e-8)
    for k in range(est.n_iter_ - 1):
        grows = hist["mmd2"][k] > tau
        expected = min(2 * hist["rho"][k], 1e10) if grows else hist["rho"][k]
        np.testing.assert_allclose(hist["rho"][k + 1], expected, rtol=1e-12)
        np.testing.assert_allclose(hist["tolerance"][k + 1], max(1e-6, hist["tolerance"][k] / 10))
    np.testing.assert_allclose(hist["mmd2"][-1], est.constraint_value_, rtol=1e-12)
    np.testing.assert_allclose(
        hist["explained_variance_ratio"][-1], explained_variance_ratio(X, est), rtol=1e-10
    )


def test_fair_pca_is_returned_when_pca_satisfies_tau():
    X, s = make_mmd_synthetic1(random_state=0)
    est = MMDFairPCA(n_components=2, tau=2.0).fit(X, sensitive_features=s)  # MMD² <= 2 always
    pca = PCA(n_components=2).fit(X)
    assert est.n_iter_ == 0 and est.converged_
    assert subspace_distance(est.components_.T, pca.components_.T) < 1e-10


def test_three_groups_every_pair_within_tau():
    # Each group has its own two dominant directions (6 of the 10); the other 4 are fair.
    X, s = make_gaussian_groups(
        n_samples=450, n_features=10, n_groups=3, mean_shift=0.0, random_state=2
    )
    tau = 1e-3
    est = MMDFairPCA(n_components=2, tau=tau, constraint="pairwise", random_state=0)
    est.fit(X, sensitive_features=s)
    assert est.converged_
    h = mmd2(X, s, est, bandwidth=est.bandwidth_)  # largest pairwise value
    np.testing.assert_allclose(h, est.constraint_value_, rtol=1e-9)
    assert h <= tau
    assert mmd2(X, s, PCA(n_components=2).fit(X), bandwidth=est.bandwidth_) > 20 * tau


def _labelled_data():
    """Group 1 is shifted along feature 1 among y = 1 rows and along feature 2 among y = 0."""
    rng = np.random.default_rng(3)
    n = 100
    y = np.repeat([0, 1, 0, 1], n)
    s = np.repeat([0, 0, 1, 1], n)
    X = rng.standard_normal((4 * n, 4)) * [3.0, 2.5, 2.5, 0.5]
    X[(s == 1) & (y == 1), 1] += 3.0
    X[(s == 1) & (y == 0), 2] += 3.0
    return X, s, y


def test_equal_opportunity_and_equalised_odds():
    X, s, y = _labelled_data()
    tau = 1e-2  # above the finite-sample floor of MMD² with 100 rows per group and class
    pos, neg = y == 1, y == 0
    eop = MMDFairPCA(n_components=2, tau=tau, fairness="EOP").fit(X, y, sensitive_features=s)
    eod = MMDFairPCA(n_components=2, tau=tau, fairness="EOD").fit(X, y, sensitive_features=s)
    bw = eop.bandwidth_
    assert eod.bandwidth_ == bw
    pca = PCA(n_components=2).fit(X)
    assert mmd2(X[pos], s[pos], pca, bandwidth=bw) > 5 * tau

    h_eop = mmd2(X[pos], s[pos], eop, bandwidth=bw)
    np.testing.assert_allclose(h_eop, eop.constraint_value_, rtol=1e-9)
    assert eop.converged_ and h_eop <= tau
    # Equal opportunity leaves the y = 0 rows free: their groups stay apart.
    assert mmd2(X[neg], s[neg], eop, bandwidth=bw) > 5 * tau

    h_eod = [mmd2(X[rows], s[rows], eod, bandwidth=bw) for rows in (pos, neg)]
    np.testing.assert_allclose(max(h_eod), eod.constraint_value_, rtol=1e-9)
    assert eod.converged_ and max(h_eod) <= tau
    # The stronger constraint costs variance.
    assert explained_variance_ratio(X, eod) < explained_variance_ratio(X, eop) - 0.05


def test_positive_class_is_the_larger_label():
    X, s, y = _labelled_data()
    labels = np.where(y == 1, "yes", "no")
    params = dict(n_components=2, tau=1e-2, fairness="EOP")
    a = MMDFairPCA(**params).fit(X, labels, sensitive_features=s)
    b = MMDFairPCA(**params).fit(X, y, sensitive_features=s)
    assert a.converged_
    np.testing.assert_array_equal(a.components_, b.components_)


@pytest.mark.slow
def test_rff_mode_agrees_with_exact_mode():
    X, s = make_gaussian_groups(n_samples=2000, n_features=8, random_state=1)
    tau = 1e-3
    exact = MMDFairPCA(n_components=2, tau=tau, mmd="exact", random_state=0)
    rff = MMDFairPCA(n_components=2, tau=tau, mmd="rff", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        exact.fit(X, sensitive_features=s)
        rff.fit(X, sensitive_features=s)
    assert exact.mmd_method_ == "exact" and rff.mmd_method_ == "rff"
    # constraint_value_ is the exact MMD² (all 2000 rows) at the random-feature solution.
    np.testing.assert_allclose(
        rff.constraint_value_, mmd2(X, s, rff, bandwidth=rff.bandwidth_), rtol=1e-9
    )
    # Stated error: a few per cent of MMD² near the constraint (10 % at most).
    estimate = rff.history_["mmd2"][-1]
    assert abs(estimate - rff.constraint_value_) <= 0.1 * rff.constraint_value_
    assert rff.constraint_value_ <= 1.1 * tau
    assert abs(explained_variance_ratio(X, rff) - explained_variance_ratio(X, exact)) < 0.01


def test_auto_mode_switches_on_the_number_of_rows():
    # The cost model's crossover for two groups and d = 1: about 2,950 rows.
    X, s = make_gaussian_groups(n_samples=2800, n_features=4, random_state=0)
    est = MMDFairPCA(n_components=1, tau=0.5).fit(X, sensitive_features=s)
    assert est.mmd_method_ == "exact"
    X, s = make_gaussian_groups(n_samples=3100, n_features=4, random_state=0)
    est = MMDFairPCA(n_components=1, tau=0.5).fit(X, sensitive_features=s)
    assert est.mmd_method_ == "rff"


def test_same_seed_same_output():
    X, s = make_gaussian_groups(n_samples=2500, n_features=5, random_state=4)
    # Random start, random frequencies and the bandwidth subsample (> 2000 rows) all draw.
    params = dict(n_components=2, tau=1e-3, mmd="rff", init="random", n_random_features=128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = MMDFairPCA(**params, random_state=3).fit(X, sensitive_features=s)
        b = MMDFairPCA(**params, random_state=3).fit(X, sensitive_features=s)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.bandwidth_ == b.bandwidth_ and a.constraint_value_ == b.constraint_value_


def test_convergence_warning_when_tau_is_out_of_reach():
    X, s = make_mmd_synthetic1(random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"MMD² of 0 vs rest exceeds tau=0 by [0-9.e-]+"):
        est = MMDFairPCA(n_components=2, tau=0.0, max_iter=3).fit(X, sensitive_features=s)
    assert not est.converged_ and est.n_iter_ == 3
    assert np.all(np.isfinite(est.components_)) and est.constraint_value_ > 0


def test_small_groups_that_level_off_below_their_floor_converge_quickly():
    # Groups of 280, 60 and 60 rows in 6 features (tests/experiments/test_vu2022.py): no
    # projection brings every one-vs-rest MMD² to tau = 1e-3 (the least largest value is
    # about 4.6e-3), while a random split of the same rows shows about 8e-3. REPMS levels
    # off (its step falls below 1e-6 as rho doubles) in about 20 outer iterations, below
    # each floor: judged against it, as for groups under min_group_size. It used to double
    # rho to 1e10 and run 300-step sub-solves there: 76 outer iterations, about a minute.
    X, s = make_gaussian_groups(n_samples=400, n_features=6, n_groups=3, random_state=0)
    with pytest.warns(UserWarning, match="levelled off above tau=0.001 but each within tau"):
        est = MMDFairPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    assert est.converged_ and est.n_iter_ <= 30
    hist = est.history_
    assert hist["step"][-1] <= 1e-6 and hist["tolerance"][-1] <= 1e-6
    # What the stopping rule guarantees: every constraint within tau of its allowance,
    # and an allowance only where tau itself is not met.
    Z = (X - X.mean(axis=0)) @ est.components_.T
    K = np.exp(-0.5 / est.bandwidth_**2 * ((Z[:, None] - Z[None]) ** 2).sum(axis=-1))
    kbar = (K.sum() - len(s)) / (len(s) * (len(s) - 1))  # distinct pairs
    for a in range(3):
        label = f"{a} vs rest"
        h = mmd2(X, s == a, est, bandwidth=est.bandwidth_)
        np.testing.assert_allclose(h, est.constraint_values_[label], rtol=1e-9)
        allowance = est.constraint_allowances_[label]
        assert h <= allowance + 1e-3
        n_a = np.sum(s == a)
        floor = (1 / n_a + 1 / (len(s) - n_a)) * (1 - kbar)  # mean MMD² of random splits
        assert allowance == pytest.approx(floor, rel=1e-9) if h > 1e-3 else allowance == 0
    assert max(est.constraint_values_.values()) > 1e-3  # tau itself is out of reach


def test_repms_levelled_off_above_the_floor_says_why():
    # One direction out of two, two large groups unlike along every direction (spreads
    # 1 and (0.3, 2)): the MMD² levels off near 0.019, far above tau and above the floor
    # of a random split (about 0.003). REPMS stops as soon as rho no longer moves V.
    rng = np.random.default_rng(0)
    X = np.r_[rng.standard_normal((200, 2)), rng.standard_normal((200, 2)) * [0.3, 2.0] + 3]
    s = np.repeat([0, 1], 200)
    match = r"exceeds tau=0.001 by [0-9.e-]+ \(a random split .*\) and stopped falling as rho"
    with pytest.warns(ConvergenceWarning, match=match):
        est = MMDFairPCA(n_components=1).fit(X, sensitive_features=s)
    assert not est.converged_ and est.n_iter_ < 30
    assert est.history_["step"][-1] <= 1e-6 and est.history_["rho"][-1] < 1e10
    assert est.constraint_allowances_ == {"0 vs rest": 0.0, "1 vs rest": 0.0}


def test_repms_stops_once_rho_is_at_its_cap(monkeypatch):
    # A sub-solver that keeps moving without converging (it flips a column's sign: a step
    # of 2, the same subspace) and a cap at 8 rho_0: the first outer iteration at the cap
    # and the final tolerance (the 7th) ends the fit, as every later one would repeat it.
    from fairpca import mmd as mmd_module
    from fairpca.riemannian._common import StiefelResult

    def flip(objective, V, eps, newton):
        W = V * np.r_[-1.0, np.ones(V.shape[1] - 1)]
        cost = objective(W)[0]
        history = np.array([cost])
        return StiefelResult(W, cost, 1.0, 300, False, "max_iter reached", 1, history, history), 0

    monkeypatch.setattr(mmd_module, "_solve_subproblem", flip)
    X, s = make_gaussian_groups(n_samples=200, n_features=5, random_state=3)
    est = MMDFairPCA(n_components=2, tau=0.0, mmd="exact")
    with pytest.warns(ConvergenceWarning):
        rho_0 = est.set_params(max_iter=1).fit(X, sensitive_features=s).history_["rho"][0]
    monkeypatch.setattr(mmd_module, "_RHO_MAX", 8.0 * rho_0)
    with pytest.warns(ConvergenceWarning, match="with rho at its cap"):
        est.set_params(max_iter=100).fit(X, sensitive_features=s)
    assert not est.converged_ and est.n_iter_ == 7


def test_every_outer_iteration_is_logged_at_info(caplog):
    # One INFO line per outer iteration whatever verbose is: fairpca compare follows long
    # fits through a handler on the "fairpca" logger (verbose only adds a printing one).
    X, s = make_mmd_synthetic1(random_state=0)
    with caplog.at_level(logging.INFO, logger="fairpca.mmd"):
        est = MMDFairPCA(n_components=2).fit(X, sensitive_features=s)
    lines = [r.getMessage() for r in caplog.records if "rho=" in r.getMessage()]
    assert len(lines) == est.n_iter_ >= 2
    assert all("MMD²=" in m and "explained variance=" in m and "||dV||=" in m for m in lines)
    assert "finished after" in caplog.records[-1].getMessage()
    assert {r.levelno for r in caplog.records} == {logging.INFO}


def test_fit_without_groups_is_pca_and_drops_fair_attributes():
    X, s = make_mmd_synthetic1(random_state=0)
    est = MMDFairPCA(n_components=2).fit(X, sensitive_features=s)
    with pytest.warns(UserWarning, match="without sensitive_features"):
        est.fit(X)
    pca = PCA(n_components=2).fit(X)
    assert subspace_distance(est.components_.T, pca.components_.T) < 1e-10
    assert est.n_iter_ == 1 and est.converged_
    assert not hasattr(est, "constraint_value_") and not hasattr(est, "bandwidth_")
    assert not hasattr(est, "constraint_values_") and not hasattr(est, "active_constraint_")


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"tau": -1e-3}, "tau"),
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"bandwidth": "scott"}, "bandwidth"),
        ({"fairness": "DPP"}, "fairness"),
        ({"mmd": "fast"}, "mmd"),
        ({"init": "zeros"}, "init"),
        ({"n_random_features": 1}, "n_random_features"),
        ({"max_samples": 1}, "max_samples"),
        ({"max_iter": 0}, "max_iter"),
    ],
)
def test_bad_parameters(params, match):
    X, s = make_mmd_synthetic1(n_per_group=10, random_state=0)
    with pytest.raises(ValueError, match=match):
        MMDFairPCA(n_components=2, **params).fit(X, sensitive_features=s)


def test_group_with_one_row():
    X, s = make_mmd_synthetic1(n_per_group=10, random_state=0)
    s = s.copy()
    s[0] = 7
    with pytest.raises(ValueError, match="at least 2 rows"):
        MMDFairPCA(n_components=2).fit(X, sensitive_features=s)


def test_zero_median_bandwidth():
    rng = np.random.default_rng(0)
    X = np.zeros((40, 3))
    X[:6] = rng.standard_normal((6, 3))  # most pairs of rows are equal
    s = np.arange(40) % 2
    with pytest.raises(ValueError, match="zero bandwidth"):
        MMDFairPCA(n_components=2).fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="zero variance"):
        MMDFairPCA(n_components=2).fit(np.ones((40, 3)), sensitive_features=s)
    # An explicit bandwidth works on the data with a few distinct rows.
    est = MMDFairPCA(n_components=2, tau=2.0, bandwidth=1.0).fit(X, sensitive_features=s)
    assert est.bandwidth_ == 1.0


def test_equal_opportunity_needs_a_binary_y():
    X, s, y = _labelled_data()
    with pytest.raises(ValueError, match="pass the binary target"):
        MMDFairPCA(n_components=2, fairness="EOP").fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="binary y"):
        MMDFairPCA(n_components=2, fairness="EOD").fit(X, y % 3 + s, sensitive_features=s)
    y_few = np.zeros_like(y)
    y_few[s == 0] = 1
    y_few[np.flatnonzero(s == 1)[0]] = 1  # one positive row in group 1
    with pytest.raises(ValueError, match=r"at least 2 rows with y=1; too small: 1 \(1 rows\)"):
        MMDFairPCA(n_components=2, fairness="EOP").fit(X, y_few, sensitive_features=s)


# --------------------------------------------------------------------------
# Real data: Lee et al. (2022), Table 1, d = 2, tau = 1e-3, the paper's ten
# splits (the same cells as `fairpca reproduce lee2022-table1`). The mean
# over the splits must be within the paper's mean ± SD.
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dataset", "var", "var_sd", "mmd", "mmd_sd"),
    [("german_credit", 10.17, 0.57, 0.018, 0.014), ("compas", 33.95, 5.01, 0.005, 0.002)],
)
@pytest.mark.requires_data
@pytest.mark.slow
def test_lee2022_table1_mean_over_ten_splits(dataset, var, var_sd, mmd, mmd_sd):
    test_var, test_mmd = [], []
    for split in range(10):
        data = lee2022(dataset, split=split)
        est = MMDFairPCA(n_components=2, tau=1e-3, random_state=split)
        est.fit(data.X_train, sensitive_features=data.s_train)
        assert est.converged_ and est.constraint_value_ <= 1e-3
        test_var.append(100 * explained_variance_ratio(data.X_test, est))
        # The bandwidth of the evaluation: the median heuristic on the training rows.
        test_mmd.append(mmd2(data.X_test, data.s_test, est, bandwidth=est.bandwidth_))
    assert abs(np.mean(test_var) - var) <= var_sd
    assert abs(np.mean(test_mmd) - mmd) <= mmd_sd


def test_reduction_to_the_row_space_gives_the_unreduced_solution(monkeypatch):
    # p > n: the fit runs on St(r + d, d) (row space of X plus d slack directions);
    # the solve without the reduction must find the same point and costs.
    from fairpca import mmd as mmd_module
    from fairpca.riemannian.geometry import _reduction_basis

    rng = np.random.default_rng(3)
    codes = np.repeat([0, 1], [20, 25])
    X = rng.standard_normal((45, 80))
    X[codes == 1, :3] += 1.0
    Xc = X - X.mean(axis=0)
    Q = _reduction_basis(Xc, 2)
    assert Q.shape == (80, 44 + 2)  # centred 45 rows have rank 44
    np.testing.assert_allclose(Q.T @ Q, np.eye(46), atol=1e-12)
    np.testing.assert_allclose(Xc @ Q[:, -2:], 0.0, atol=1e-12)  # slack: outside the rows
    np.testing.assert_allclose(Xc @ Q @ Q.T, Xc, atol=1e-12)  # the rest spans them

    # Groups of 20 and 25 rows, held to tau itself (min_group_size=0).
    params = dict(n_components=2, tau=1e-3, min_group_size=0, random_state=0)
    reduced = MMDFairPCA(**params).fit(X, sensitive_features=codes)
    monkeypatch.setattr(mmd_module, "_reduction_basis", lambda X, d: None)
    full = MMDFairPCA(**params).fit(X, sensitive_features=codes)
    assert reduced.converged_ and full.converged_
    assert subspace_distance(reduced.components_.T, full.components_.T) < 1e-4
    np.testing.assert_allclose(
        explained_variance_ratio(X, reduced), explained_variance_ratio(X, full), rtol=1e-6
    )
    np.testing.assert_allclose(reduced.constraint_value_, full.constraint_value_, rtol=1e-4)
    np.testing.assert_allclose(
        mmd2(X, codes, reduced, bandwidth=reduced.bandwidth_), reduced.constraint_value_, rtol=1e-8
    )


# --------------------------------------------------------------------------
# Dask input and the row subsample: the fit reads at most max_samples rows for
# MMD² (plus 2000 for the bandwidth); the rest comes from the group moments.
# --------------------------------------------------------------------------


def _old_selection(codes, mask, fraction, rng):
    """The selection before rows were chosen by index: sort the stratum's rows by
    group (stable), then draw sorted positions within each group in turn, keeping
    ``fraction`` of each group (at least 2 rows; all rows if ``fraction`` is None)."""
    rows = np.flatnonzero(mask)[np.argsort(codes[mask], kind="stable")]
    counts = np.bincount(codes[mask])
    if fraction is None:
        return rows
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    picked = []
    for start, n in zip(starts, counts, strict=True):
        m = int(min(n, max(2, np.floor(fraction * n))))
        picked.append(start + np.sort(rng.choice(n, size=m, replace=False)))
    return rows[np.concatenate(picked)]


def _fit_seeds(random_state):
    """The five seeds a fit draws from its random_state (bandwidth, subsample, ...)."""
    return np.random.RandomState(random_state).randint(np.iinfo(np.int32).max, size=5)


@pytest.mark.parametrize("max_samples", [None, 10**4, 500, 37])
def test_rows_chosen_by_index_equal_the_old_sorted_subsample(max_samples):
    rng = np.random.default_rng(5)
    codes = rng.choice(3, size=2000, p=[0.6, 0.3, 0.1])
    y = rng.integers(0, 2, size=2000)
    est = MMDFairPCA(fairness="EOD", max_samples=max_samples)
    selected = est._select_rows(codes, np.arange(3), y, np.random.RandomState(11))
    # EOD: the y = 1 rows first, then the y = 0 rows, drawing from one generator.
    # The fraction is the same for both classes: max_samples over all 2000 rows.
    fraction = None if max_samples is None or 2000 <= max_samples else max_samples / 2000
    reference_rng = np.random.RandomState(11)
    expected = [_old_selection(codes, y == c, fraction, reference_rng) for c in (1, 0)]
    assert [name for name, _, _ in selected] == ["y=1", "y=0"]
    for (_, rows, counts), want in zip(selected, expected, strict=True):
        np.testing.assert_array_equal(rows, want)
        np.testing.assert_array_equal(counts, np.bincount(codes[rows], minlength=3))
    if max_samples is not None and max_samples < 2000:
        total = sum(len(rows) for _, rows, _ in selected)
        assert total <= max_samples + 2 * 3 * 2  # floor, and at least 2 per group and class


def test_in_memory_fit_copies_only_the_subsample():
    # Beyond the input: the base class's centred copy of X, vectors of length n (group
    # codes, n x d scores) and the subsample (400 rows). A copy of the rows sorted by
    # group, or of Xc**2, would add another X. (A given bandwidth leaves out the median
    # heuristic's pairwise distances: 2000 rows, 16 MiB whatever n.)
    import tracemalloc

    n = 200_000
    X, s = make_gaussian_groups(n_samples=n, n_features=10, random_state=0)
    est = MMDFairPCA(n_components=2, tau=1e-2, max_samples=400, bandwidth=1.0, random_state=0)
    tracemalloc.start()
    try:
        est.fit(X, sensitive_features=s)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes + 6 * 8 * n  # 1.6 X here
    assert est.converged_ and est.constraint_value_ <= 1e-2


def test_bandwidth_is_the_median_heuristic_on_all_rows():
    from fairpca.metrics import mmd_bandwidth

    X, s = make_gaussian_groups(n_samples=2600, n_features=5, random_state=1)
    est = MMDFairPCA(n_components=2, tau=0.5, random_state=4).fit(X, sensitive_features=s)
    # The same 2000-row subsample of all rows (seeded as the fit seeds it), PCA of all rows.
    expected = mmd_bandwidth(X, 2, random_state=_fit_seeds(4)[0])
    np.testing.assert_allclose(est.bandwidth_, expected, rtol=1e-12)


@pytest.fixture
def da():
    """``dask.array``, with the local threaded scheduler for the test."""
    import dask
    import dask.array

    with dask.config.set(scheduler="threads"):
        yield dask.array


def _assert_same_solution(got, ref):
    # The inputs agree to rounding (Dask sums in another order): REPMS's paths may part
    # by rounding, so the answers are compared where its stopping rule leaves them.
    from answers import MMD_SUBSPACE_TOL, assert_same_answer

    assert_same_answer(got, ref)
    np.testing.assert_allclose(got.bandwidth_, ref.bandwidth_, rtol=1e-10)
    np.testing.assert_allclose(got.mean_, ref.mean_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        got.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=MMD_SUBSPACE_TOL
    )
    assert got.mmd_method_ == ref.mmd_method_
    np.testing.assert_array_equal(got.groups_, ref.groups_)


@pytest.mark.parametrize("container", ["array", pytest.param("dataframe", marks=pytest.mark.slow)])
def test_dask_fit_equals_in_memory_fit_on_every_row(container, da):
    X, codes = make_gaussian_groups(n_samples=1500, n_features=6, random_state=2)
    s = np.array(["north", "south"])[codes]  # string labels: object blocks in Dask
    params = dict(n_components=2, tau=1e-3, random_state=1)  # max_samples=20000 > n
    ref = MMDFairPCA(**params).fit(X, sensitive_features=s)
    assert ref.n_iter_ > 0 and ref.converged_  # PCA was not fair: REPMS ran
    if container == "array":
        Xd, sd = da.from_array(X, chunks=(400, 6)), da.from_array(s, chunks=400)
    else:
        import dask.dataframe as dd
        import pandas as pd

        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]).assign(group=s)
        ddf = dd.from_pandas(frame, npartitions=4)
        Xd, sd = ddf[[f"x{j}" for j in range(6)]], ddf["group"]
    est = MMDFairPCA(**params).fit(Xd, sensitive_features=sd)
    _assert_same_solution(est, ref)
    # The certificate is the exact MMD² of all rows.
    np.testing.assert_allclose(
        est.constraint_value_, mmd2(X, s, est, bandwidth=est.bandwidth_), rtol=1e-9
    )
    if container == "dataframe":
        np.testing.assert_array_equal(est.feature_names_in_, [f"x{j}" for j in range(6)])


@pytest.mark.parametrize(
    ("params", "chunk_rows"),
    [
        pytest.param(dict(mmd="exact"), 700, id="DP-exact"),
        pytest.param(dict(fairness="EOD", mmd="exact"), 700, id="EOD-dask-y"),
        # Random features are evaluated in single precision: the last-bit differences
        # of a mean merged over blocks flip roundings there, and the final sub-solves,
        # which stop on line-search failures at that noise level, then end 1e-4 apart
        # (measured: 7 blocks, subspace distance 8e-5, same MMD² to 5e-5). One block
        # gives the in-memory moments bit for bit, so the test can ask for equality.
        pytest.param(dict(mmd="rff", n_random_features=64), 3000, id="DP-rff-one-block"),
    ],
)
def test_dask_fit_picks_the_same_subsample_as_in_memory(params, chunk_rows, da, monkeypatch):
    from fairpca import mmd as mmd_module

    rng = np.random.default_rng(0)
    X, s = make_gaussian_groups(n_samples=3000, n_features=6, random_state=2)
    y = (rng.random(3000) < 0.4).astype(int)
    est_params = dict(n_components=2, tau=1e-3, max_samples=500, random_state=1, **params)
    ref = MMDFairPCA(**est_params).fit(X, y, sensitive_features=s)
    gathered = []
    original = mmd_module._gather_rows
    monkeypatch.setattr(
        mmd_module,
        "_gather_rows",
        lambda X, bounds, rows: gathered.append(len(rows)) or original(X, bounds, rows),
    )
    Xd, sd = da.from_array(X, chunks=(chunk_rows, 6)), da.from_array(s, chunks=chunk_rows)
    yd = da.from_array(y, chunks=1000)  # y's blocks need not match X's
    est = MMDFairPCA(**est_params).fit(Xd, yd, sensitive_features=sd)
    _assert_same_solution(est, ref)
    # One read, of the subsample and the bandwidth rows only.
    assert len(gathered) == 1 and gathered[0] <= 500 + 2 * 2 * 2 + 2000
    # The rows are those of the old in-memory selection: the certificate is their exact MMD².
    seeds = _fit_seeds(1)
    draws = np.random.RandomState(seeds[1])
    if params.get("fairness") == "EOD":
        strata = [_old_selection(s, y == c, 500 / 3000, draws) for c in (1, 0)]
    else:
        strata = [_old_selection(s, np.ones(3000, bool), 500 / 3000, draws)]
    if params["mmd"] == "rff":  # certified on at most 20000 of those rows: all 500 here
        assert est.mmd_method_ == "rff"
    largest = max(mmd2(X[rows], s[rows], est, bandwidth=est.bandwidth_) for rows in strata)
    np.testing.assert_allclose(est.constraint_value_, largest, rtol=1e-9)
    assert est.converged_ and est.constraint_value_ <= 1e-3


def test_dask_input_errors_come_before_the_pass(da, monkeypatch):
    from fairpca import GroupMoments

    X, s = make_gaussian_groups(n_samples=600, n_features=4, random_state=0)
    Xd = da.from_array(X, chunks=(200, 4))

    def no_pass(*args, **kwargs):
        raise AssertionError("the moment pass ran")

    with monkeypatch.context() as patch:
        patch.setattr(GroupMoments, "from_dask", no_pass)
        with pytest.raises(ValueError, match=r"max_samples=None .* load all of the Dask input"):
            MMDFairPCA(max_samples=None).fit(Xd, sensitive_features=s)
        with pytest.raises(ValueError, match="pass the binary target"):
            MMDFairPCA(fairness="EOP").fit(Xd, sensitive_features=s)
    with pytest.raises(ValueError, match=r"y must be 1-D with one entry per row of X \(600\)"):
        MMDFairPCA(fairness="EOP").fit(Xd, np.arange(599) % 2, sensitive_features=s)
    with pytest.raises(ValueError, match="binary y"):
        MMDFairPCA(fairness="EOD").fit(Xd, np.arange(600) % 3, sensitive_features=s)


def test_dask_fit_without_groups_is_pca(da):
    X, _ = make_gaussian_groups(n_samples=600, n_features=4, random_state=0)
    with pytest.warns(UserWarning, match="without sensitive_features"):
        # max_samples=None is fine here: a group-blind fit reads no rows.
        est = MMDFairPCA(n_components=2, max_samples=None).fit(da.from_array(X, chunks=150))
    pca = PCA(n_components=2).fit(X)
    assert subspace_distance(est.components_.T, pca.components_.T) < 1e-10
    assert not hasattr(est, "constraint_value_")


def test_pca_start_that_spans_the_data_is_not_kept():
    # Rank-3 data in 4 features, d = 3: the top 3 loadings span every row, so the PCA
    # start keeps all the variance and the data's own MMD²; no descent leaves it (an
    # exact stationary point). The fit must start elsewhere and meet tau = 0.05, as the
    # random start does (the same start here: identical components).
    rng = np.random.default_rng(0)
    n = 120
    a = rng.normal(size=(n, 3))
    b = np.c_[rng.normal(1.0, 0.5, size=(n, 1)), rng.exponential(size=(n, 2))]
    X = np.r_[a, b]
    X = np.c_[X, X[:, 0] - 2 * X[:, 1]]
    s = np.r_[np.zeros(n), np.ones(n)]
    assert np.linalg.matrix_rank(X - X.mean(0)) == 3
    pca_fit = MMDFairPCA(n_components=3, tau=0.05, random_state=0)
    pca_fit.fit(X, sensitive_features=s)
    random_fit = MMDFairPCA(n_components=3, tau=0.05, random_state=0, init="random")
    random_fit.fit(X, sensitive_features=s)
    whole = mmd2(X, s, np.linalg.svd(X - X.mean(0))[2][:3], bandwidth=pca_fit.bandwidth_)
    assert whole > 0.2
    assert pca_fit.constraint_value_ <= 0.05 * (1 + 1e-6)
    assert pca_fit.converged_
    np.testing.assert_allclose(pca_fit.components_, random_fit.components_, atol=1e-12)
