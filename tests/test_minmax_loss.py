"""Tests of MinMaxLossFairPCA against independent computations.

Oracles: the relaxation written afresh in cvxpy and solved by Clarabel; the dual
function evaluated with numpy's ``eigvalsh``; the rounding LP solved afresh by
scipy's default ``linprog``; group losses from the residuals of
``inverse_transform(transform(X))`` and each group's own SVD; scikit-learn's PCA.
"""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning

from fairpca import MinMaxLossFairPCA
from fairpca._minmax_rounding import _to_vertex
from fairpca.experiments import samadi2018
from fairpca.metrics import marginal_loss


# --------------------------------------------------------------------------- helpers
def make_groups(k, p, seed, sizes=None):
    """Groups with different anisotropic covariances and shifted means."""
    rng = np.random.default_rng(seed)
    blocks, labels = [], []
    for a in range(k):
        n_a = int(rng.integers(40, 120)) if sizes is None else sizes[a]
        blocks.append(rng.normal(size=(n_a, p)) * rng.gamma(1.0, size=p) + 0.5 * rng.normal(size=p))
        labels += [f"g{a}"] * n_a
    return np.vstack(blocks), np.array(labels)


def group_moments(X, s, d):
    """B_a about the pooled mean and beta_a = sum of its top-d eigenvalues, from scratch."""
    mean = X.mean(axis=0)
    B = np.array([(X[s == g] - mean).T @ (X[s == g] - mean) / np.sum(s == g) for g in np.unique(s)])
    beta = np.array([np.linalg.eigvalsh(Ba)[::-1][:d].sum() for Ba in B])
    return B, beta


def sdp_optimum(B, beta, d):
    """Optimal value of the relaxation by cvxpy + Clarabel (high accuracy)."""
    k, p, _ = B.shape
    P, z = cp.Variable((p, p), PSD=True), cp.Variable()
    constraints = [z >= beta[a] - cp.trace(B[a] @ P) for a in range(k)]
    constraints += [np.eye(p) - P >> 0, cp.trace(P) <= d]
    problem = cp.Problem(cp.Minimize(z), constraints)
    problem.solve(solver="CLARABEL")
    return problem.value


def dual_function(B, beta, w, d):
    """g(w) = sum_a w_a beta_a - sum of the top-d eigenvalues of sum_a w_a B_a."""
    return w @ beta - np.linalg.eigvalsh(np.tensordot(w, B, axes=1))[::-1][:d].sum()


def reconstruction_losses(est, X, s, d):
    """Average marginal loss per group from the actual reconstructions of the estimator."""
    residual = X - est.inverse_transform(est.transform(X))
    losses = []
    for g in np.unique(s):
        rows = s == g
        own = np.linalg.svd(X[rows] - est.mean_, compute_uv=False)
        losses.append(
            np.mean(np.sum(residual[rows] ** 2, axis=1)) - np.sum(own[d:] ** 2) / rows.sum()
        )
    return np.array(losses)


def fit(X, s, d, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return MinMaxLossFairPCA(n_components=d, **params).fit(X, sensitive_features=s)


# --------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("k, p, d, seed", [(2, 6, 1, 0), (2, 8, 2, 1), (3, 7, 2, 2), (4, 6, 3, 3)])
def test_auto_and_sdp_match_clarabel_optimum(k, p, d, seed):
    X, s = make_groups(k, p, seed)
    B, beta = group_moments(X, s, d)
    optimum = sdp_optimum(B, beta, d)
    auto = fit(X, s, d)
    assert auto.relaxed_objective_ == pytest.approx(optimum, rel=1e-6)
    # The relaxed solution is feasible: 0 <= P <= I, trace <= d.
    eig = np.linalg.eigvalsh(auto.relaxed_projection_)
    assert eig.min() >= -1e-12 and eig.max() <= 1 + 1e-12 and eig.sum() <= d + 1e-9
    sdp = fit(X, s, d, solver="sdp", sdp_solver="CLARABEL")
    assert sdp.relaxed_objective_ == pytest.approx(optimum, rel=1e-6)
    assert sdp.converged_


def test_mw_approaches_optimum_as_iterations_grow():
    X, s = make_groups(2, 7, 1)
    d = 2
    B, beta = group_moments(X, s, d)
    optimum = sdp_optimum(B, beta, d)
    errors = []
    for T in (10, 100, 1000):
        with pytest.warns(ConvergenceWarning, match="duality gap"):
            est = MinMaxLossFairPCA(d, solver="mw", max_iter=T, tol=1e-9).fit(
                X, sensitive_features=s
            )
        assert est.n_iter_ == T and not est.converged_
        errors.append((est.relaxed_objective_ - optimum) / optimum)
        # The reported gap bounds the distance to the optimum (weak duality).
        assert est.gap_ >= est.relaxed_objective_ - optimum - 1e-7 * optimum
    assert errors[0] > errors[1] > errors[2] > 0
    assert errors[2] < 5e-3


def test_mw_stops_on_gap():
    X, s = make_groups(2, 6, 4)
    est = MinMaxLossFairPCA(1, solver="mw", max_iter=5000, eta=0.5, tol=1e-2).fit(
        X, sensitive_features=s
    )
    assert est.converged_ and est.n_iter_ < 5000
    assert est.gap_ <= 1e-2 * est.relaxed_objective_


def test_dual_value_against_brute_force_grid():
    X, s = make_groups(2, 6, 5)
    d = 2
    B, beta = group_moments(X, s, d)
    est = fit(X, s, d, tol=1e-9)
    w = est.dual_weights_
    assert w.shape == (2,) and np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    g_star = est.relaxed_objective_ - est.gap_
    assert g_star == pytest.approx(dual_function(B, beta, w, d), abs=1e-12)
    grid = np.linspace(0.0, 1.0, 2001)
    values = np.array([dual_function(B, beta, np.array([t, 1 - t]), d) for t in grid])
    # Weak duality everywhere on the grid, and the solver's point is the grid's best.
    assert np.all(values <= est.relaxed_objective_ + 1e-12)
    assert values.max() <= g_star + 1e-12
    assert values.max() >= g_star - 1e-3 * g_star
    assert abs(grid[values.argmax()] - w[0]) <= 2e-3


@pytest.mark.parametrize("solver", ["auto", "mw", "sdp"])
def test_gap_is_nonnegative(solver):
    X, s = make_groups(3, 6, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = MinMaxLossFairPCA(2, solver=solver, max_iter=20).fit(X, sensitive_features=s)
    assert est.gap_ >= -1e-6 * est.relaxed_objective_


# --------------------------------------------------------------------------- rounding
@pytest.mark.parametrize("seed", range(6))
def test_two_groups_equal_losses_and_rank(seed):
    p, d = 5 + seed, 1 + seed % 3
    X, s = make_groups(2, p, seed)
    est = fit(X, s, d, tol=1e-8)
    losses = np.array(list(marginal_loss(X, s, est).values()))
    assert losses.max() - losses.min() <= 1e-6 * losses.max()
    assert est.n_components_ == d
    np.testing.assert_allclose(est.group_losses_, losses, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("k, seed", [(3, 0), (3, 1), (4, 2), (4, 3)])
def test_k_groups_rank_and_objective(k, seed):
    p, d = 7, 2
    X, s = make_groups(k, p, seed)
    B, beta = group_moments(X, s, d)
    est = fit(X, s, d, rounding="lp")
    assert est.n_components_ <= d + k - 1
    # Extreme point: at most k fractional LP entries, i.e. scales below one.
    assert np.sum(est.component_scales_ < 1 - 1e-9) <= k
    losses = reconstruction_losses(est, X, s, d)
    assert losses.max() <= est.relaxed_objective_ * (1 + 1e-9)
    assert est.relaxed_objective_ == pytest.approx(sdp_optimum(B, beta, d), rel=1e-6)


def test_output_map_loss_equals_rounding_lp_value():
    X, s = make_groups(3, 8, 7)
    d = 2
    B, beta = group_moments(X, s, d)
    est = fit(X, s, d, tol=1e-10, rounding="lp")
    # The LP of the paper on the eigenvectors of the relaxed solution, solved afresh.
    lam_hat, U = np.linalg.eigh(est.relaxed_projection_)
    C = np.einsum("pj,apq,qj->aj", U, B, U)
    r, k = U.shape[1], B.shape[0]
    res = linprog(
        np.append(np.zeros(r), 1.0),
        A_ub=np.vstack([np.hstack([-C, -np.ones((k, 1))]), np.append(np.ones(r), 0.0)]),
        b_ub=np.append(-beta, d),
        bounds=[(0, 1)] * r + [(None, None)],
    )
    losses = reconstruction_losses(est, X, s, d)
    # Both LPs lie between the optimum and the relaxed objective (1e-10 apart).
    assert losses.max() == pytest.approx(res.fun, rel=1e-8)
    assert losses.max() <= est.relaxed_objective_ * (1 + 1e-9)
    np.testing.assert_allclose(est.group_losses_, losses, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(list(marginal_loss(X, s, est).values()), losses, rtol=1e-9)
    # Reconstruction is (X - mean) P* + mean with P* = sum_j scale_j u_j u_j^T.
    P_star = est.components_.T @ np.diag(est.component_scales_) @ est.components_
    np.testing.assert_allclose(
        est.inverse_transform(est.transform(X)), (X - est.mean_) @ P_star + est.mean_, atol=1e-10
    )
    # And (I - P*)^2 = I - P_bar: the fractional LP point is 2 P* - P*^2.
    lam_bar = 2 * est.component_scales_ - est.component_scales_**2
    assert np.all(lam_bar > 0) and lam_bar.sum() <= d + 1e-9


@pytest.mark.parametrize("k, seed", [(3, 17), (4, 18), (5, 19)])
def test_vertex_step_from_fractional_points(k, seed):
    X, s = make_groups(k, 9, seed)
    d = 3
    B, beta = group_moments(X, s, d)
    est = fit(X, s, d)
    _, U = np.linalg.eigh(est.relaxed_projection_)
    C = np.einsum("pj,apq,qj->aj", U, B, U)
    rng = np.random.default_rng(seed)
    # Feasible starts with every entry fractional and trace d: uniform, and perturbed.
    noise = rng.uniform(-0.1, 0.1, size=9)
    for start in (np.full(9, d / 9), d / 9 + noise - noise.mean()):
        lam = _to_vertex(C, beta, d, start.copy())
        assert np.all((lam >= 0) & (lam <= 1)) and lam.sum() <= d + 1e-9
        assert np.sum((lam > 0) & (lam < 1)) <= k
        assert np.max(beta - C @ lam) <= np.max(beta - C @ start) + 1e-12


def test_top_d_rounding():
    X, s = make_groups(3, 7, 8)
    d = 2
    est = fit(X, s, d, rounding="top-d")
    assert est.n_components_ == d
    np.testing.assert_array_equal(est.component_scales_, np.ones(d))
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(d), atol=1e-12)
    # Top-d eigenvectors of the relaxed solution span the components.
    top = np.linalg.eigh(est.relaxed_projection_)[1][:, -d:]
    np.testing.assert_allclose(top @ top.T, est.components_.T @ est.components_, atol=1e-8)
    np.testing.assert_allclose(
        est.group_losses_, list(marginal_loss(X, s, est).values()), rtol=1e-9
    )


# --------------------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def credit():
    split = samadi2018("default_credit")
    return split.X_train, split.s_train


@pytest.mark.parametrize("d", [1, 3, 8, 12])
@pytest.mark.requires_data
def test_default_credit_figure4_shape(credit, d):
    X, s = credit
    pca = marginal_loss(X, s, PCA(n_components=d).fit(X))
    est = fit(X, s, d)
    fair = marginal_loss(X, s, est)
    assert max(fair.values()) < max(pca.values())
    assert max(fair.values()) - min(fair.values()) <= 1e-6 * max(fair.values())
    assert min(pca.values()) < fair["low"] < max(pca.values())
    assert est.n_components_ == d


# --------------------------------------------------------------------------- special inputs
def test_identical_groups_give_pca():
    rng = np.random.default_rng(9)
    X0 = rng.normal(size=(80, 6)) * np.array([5.0, 3.0, 2.0, 1.0, 0.5, 0.2])
    X = np.vstack([X0, X0])
    s = np.repeat(["a", "b"], 80)
    est = fit(X, s, 2)
    pca = PCA(n_components=2).fit(X)
    np.testing.assert_allclose(
        est.components_.T @ np.diag(est.component_scales_) @ est.components_,
        pca.components_.T @ pca.components_,
        atol=1e-8,
    )
    assert est.objective_ == pytest.approx(0.0, abs=1e-10)


def test_singular_group_covariance():
    rng = np.random.default_rng(10)
    p = 6
    # Group "flat" lives in a 2-D subspace; a constant column for everyone.
    flat = rng.normal(size=(60, 2)) @ rng.normal(size=(2, p))
    wide = rng.normal(size=(90, p)) * np.arange(1.0, p + 1)
    X = np.vstack([flat, wide])
    X[:, 0] = 3.0
    s = np.array(["flat"] * 60 + ["wide"] * 90)
    B, beta = group_moments(X, s, 2)
    assert np.linalg.matrix_rank(B[0]) <= 3
    est = fit(X, s, 2)
    assert np.all(np.isfinite(est.components_)) and est.converged_
    assert est.relaxed_objective_ == pytest.approx(sdp_optimum(B, beta, 2), rel=1e-6)


def test_group_smaller_than_n_components_warns_and_has_zero_own_error():
    X, s = make_groups(2, 6, 11, sizes=[50, 3])
    d = 3
    with pytest.warns(UserWarning, match="at most n_components=3 rows"):
        est = MinMaxLossFairPCA(d).fit(X, sensitive_features=s)
    # The small group's own rank-3 error is zero: its loss is its whole error.
    rows = s == "g1"
    residual = X[rows] - est.inverse_transform(est.transform(X[rows]))
    err = np.mean(np.sum(residual**2, axis=1))
    assert marginal_loss(X, s, est)["g1"] == pytest.approx(err, rel=1e-9)
    assert est.group_losses_[1] == pytest.approx(err, rel=1e-9)


def test_full_dimension_is_identity():
    X, s = make_groups(2, 5, 12)
    est = fit(X, s, 5)
    np.testing.assert_allclose(est.inverse_transform(est.transform(X)), X, atol=1e-9)
    np.testing.assert_allclose(est.group_losses_, 0.0, atol=1e-10)


def test_n_components_above_n_features():
    X, s = make_groups(2, 4, 13)
    with pytest.raises(ValueError, match="n_components=5"):
        MinMaxLossFairPCA(5).fit(X, sensitive_features=s)


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"solver": "newton"}, ValueError, "solver"),
        ({"rounding": "nearest"}, ValueError, "rounding"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"eta": -1.0}, ValueError, "eta"),
        ({"sdp_solver": 3}, TypeError, "sdp_solver"),
        ({"solver": "sdp", "sdp_solver": "NOPE"}, ValueError, "sdp_solver"),
        ({"verbose": -1}, ValueError, "verbose"),
    ],
)
def test_bad_parameters(params, error, match):
    X, s = make_groups(2, 4, 14)
    with pytest.raises(error, match=match):
        MinMaxLossFairPCA(1, **params).fit(X, sensitive_features=s)


def test_authors_mw_settings_warn_and_auto_does_not():
    X, s = make_groups(2, 6, 15)
    with pytest.warns(ConvergenceWarning, match="duality gap"):
        mw = MinMaxLossFairPCA(2, solver="mw", eta=1.0, max_iter=10).fit(X, sensitive_features=s)
    assert not mw.converged_
    auto = fit(X, s, 2)
    assert auto.converged_ and auto.gap_ <= 1e-6 * auto.relaxed_objective_
    assert auto.relaxed_objective_ < mw.relaxed_objective_


def test_deterministic_and_label_order_invariant():
    X, s = make_groups(3, 6, 16)
    a = fit(X, s, 2)
    b = fit(X, s, 2)
    np.testing.assert_array_equal(a.components_, b.components_)
    relabelled = np.array([{"g0": "z", "g1": "a", "g2": "m"}[g] for g in s])
    c = fit(X, relabelled, 2)
    assert c.relaxed_objective_ == pytest.approx(a.relaxed_objective_, rel=1e-6)


def test_verbose_logs_progress(caplog):
    X, s = make_groups(2, 5, 20)
    with caplog.at_level("INFO", logger="fairpca.minmax_loss"):
        est = MinMaxLossFairPCA(1, verbose=1).fit(X, sensitive_features=s)
    lines = [r.getMessage() for r in caplog.records if r.name == "fairpca.minmax_loss"]
    assert len(lines) == est.n_iter_ + 1
    assert lines[-1].startswith("relaxation")


def test_group_blind_fit_drops_stale_solution():
    X, s = make_groups(2, 5, 21)
    est = MinMaxLossFairPCA(2).fit(X, sensitive_features=s)
    assert hasattr(est, "relaxed_projection_")
    with pytest.warns(UserWarning, match="without sensitive_features"):
        est.fit(X)
    assert not hasattr(est, "relaxed_projection_") and not hasattr(est, "gap_")
    assert est.n_iter_ == 1 and est.converged_
    pca = PCA(2).fit(X)
    np.testing.assert_allclose(
        est.components_.T @ est.components_, pca.components_.T @ pca.components_, atol=1e-8
    )
