"""MinMaxLossFairPCA without the extra dimension, nested components, max-min variance.

Oracles: the relaxation written afresh in cvxpy and solved by Clarabel (also on
the orthogonal complement for the nested prefixes, and for max-min variance);
the two-group dual maximised by scipy's bounded scalar minimiser (LFW, where an
SDP solver cannot hold a 1764 x 1764 matrix); Kelley's method with its master LP
solved by scipy's ``linprog``; the rank bound's formula evaluated in integers.
"""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.linalg import eigh
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning

from fairpca import MinMaxLossFairPCA
from fairpca._minmax_rounding import rank_bound, round_extreme_point, round_lp
from fairpca.experiments import samadi2018
from fairpca.minmax_loss import _group_targets, _solve_cutting_plane, _solve_two_groups
from test_minmax_loss import group_moments, make_groups, reconstruction_losses


def clarabel_optimum(B, beta, d, complement=None, sense="min-max"):
    """min_P max_a (beta_a - <B_a, P>) over 0 <= P <= I, tr P <= d (P inside ``complement``)."""
    k, p, _ = B.shape
    basis = np.eye(p) if complement is None else complement
    P = cp.Variable((basis.shape[1],) * 2, PSD=True)
    z = cp.Variable()
    reduced = [basis.T @ Ba @ basis for Ba in B]
    constraints = [z >= beta[a] - cp.trace(reduced[a] @ P) for a in range(k)]
    constraints += [np.eye(basis.shape[1]) - P >> 0, cp.trace(P) <= d]
    problem = cp.Problem(cp.Minimize(z), constraints)
    problem.solve(solver="CLARABEL")
    return problem.value


def fit(X, s, d, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return MinMaxLossFairPCA(n_components=d, **params).fit(X, sensitive_features=s)


def certified_gap(est):
    """Objective of the returned map minus the solver's dual bound (relative)."""
    lower = est.relaxed_objective_ - est.gap_
    return (est.objective_ - lower) / est.objective_


# --------------------------------------------------------------------------- rank bound
def test_rank_bound_formula():
    for k in range(1, 200):
        s = 0
        while (s + 1) * (s + 2) // 2 <= k:
            s += 1
        assert rank_bound(4, k) == 4 + max(s - 1, 0)
        assert rank_bound(4, k) == 4 + int(np.floor(np.sqrt(2 * k + 0.25) - 1.5))
    assert [rank_bound(3, k) - 3 for k in (2, 3, 6, 16)] == [0, 1, 2, 4]


# --------------------------------------------------------------------------- two groups
@pytest.mark.parametrize("seed", range(8))
def test_two_groups_rank_d_at_the_sdp_optimum(seed):
    p, d = 5 + seed, 1 + seed % 4
    X, s = make_groups(2, p, seed)
    B, beta = group_moments(X, s, d)
    est = fit(X, s, d)
    assert est.n_components_ == d and est.component_scales_ is not None
    np.testing.assert_array_equal(est.component_scales_, np.ones(d))
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(d), atol=1e-12)
    losses = reconstruction_losses(est, X, s, d)
    np.testing.assert_allclose(est.group_losses_, losses, rtol=1e-9, atol=1e-12)
    assert est.objective_ == pytest.approx(clarabel_optimum(B, beta, d), rel=1e-6)
    assert certified_gap(est) <= 1e-6


def test_a_kink_needs_a_rotated_direction():
    """B_1 = diag(1, .9, .1), B_2 = diag(.9, 1, .1), d = 1: e_1 and e_2 each leave one
    group a loss of 0.1, their mixture is rank two, and only (e_1 + e_2) / sqrt 2 reaches
    the optimum 0.05 with rank one. The LP rounding keeps e_1, e_2 and returns rank two."""
    B = np.array([np.diag([1.0, 0.9, 0.1]), np.diag([0.9, 1.0, 0.1])])
    beta = np.ones(2)
    V, lam = round_extreme_point(B, beta, 1, np.eye(3)[:, :2], np.array([0.5, 0.5]))
    assert V.shape == (3, 1) and lam == pytest.approx([1.0])
    np.testing.assert_allclose(np.abs(V[:, 0]), [2**-0.5, 2**-0.5, 0.0], atol=1e-12)
    assert np.max(beta - np.einsum("apq,pq->a", B, V @ V.T)) == pytest.approx(0.05)
    lam_bar, _ = round_lp(B, beta, 1, np.eye(3)[:, :2], np.array([0.5, 0.5]), 1.0)
    np.testing.assert_allclose(lam_bar, [0.5, 0.5], atol=1e-12)


@pytest.fixture(scope="module")
def credit():
    split = samadi2018("default_credit")
    return split.X_train, split.s_train


@pytest.mark.requires_data("default_credit")
@pytest.mark.parametrize("d", range(1, 11))
def test_default_credit_rank_d_at_clarabel_optimum(credit, d):
    X, s = credit
    B, beta = group_moments(X, s, d)
    est = fit(X, s, d)
    lp = fit(X, s, d, rounding="lp")
    assert est.n_components_ == d and lp.n_components_ <= d + 1
    assert est.objective_ == pytest.approx(clarabel_optimum(B, beta, d), rel=1e-6)
    assert est.objective_ <= lp.objective_ * (1 + 1e-9)
    assert certified_gap(est) <= 1e-6
    # Samadi's Theorem 4.5: equal losses at the optimum of two groups.
    assert np.ptp(est.group_losses_) <= 1e-6 * est.objective_


@pytest.mark.slow
@pytest.mark.requires_data("lfw")
def test_lfw_rank_d_at_the_dual_optimum():
    split = samadi2018("lfw")
    X, s, d = split.X_train, split.s_train, 5
    est = fit(X, s, d)
    assert est.n_components_ == d
    B, beta = group_moments(X, s, d)

    def minus_dual(w):
        p = B.shape[1]
        values = eigh(w * B[0] + (1 - w) * B[1], eigvals_only=True, subset_by_index=[p - d, p - 1])
        return -(w * beta[0] + (1 - w) * beta[1] - values.sum())

    best = minimize_scalar(minus_dual, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-9})
    # Strong duality: the SDP optimum is the dual maximum.
    assert est.objective_ == pytest.approx(-best.fun, rel=1e-6)
    assert est.objective_ >= -best.fun * (1 - 1e-9)  # weak duality
    np.testing.assert_allclose(est.group_losses_, reconstruction_losses(est, X, s, d), rtol=1e-8)


# --------------------------------------------------------------------------- k groups
@pytest.mark.parametrize(
    "k, p, d, seed", [(3, 7, 2, 0), (3, 9, 3, 1), (4, 6, 3, 3), (4, 8, 2, 4), (6, 12, 3, 4)]
)
def test_k_groups_rank_bound_at_clarabel_optimum(k, p, d, seed):
    X, s = make_groups(k, p, seed)
    B, beta = group_moments(X, s, d)
    est = fit(X, s, d)
    assert est.n_components_ <= rank_bound(d, k)
    assert est.objective_ == pytest.approx(clarabel_optimum(B, beta, d), rel=1e-6)
    assert est.objective_ <= est.relaxed_objective_ * (1 + 1e-9)
    np.testing.assert_allclose(est.group_losses_, reconstruction_losses(est, X, s, d), rtol=1e-8)


@pytest.mark.parametrize("k, seed", [(3, 5), (4, 6), (6, 7), (10, 8)])
def test_extreme_point_rounding_from_random_fractional_points(k, seed):
    """Any feasible start (eigenvalues spread over many directions) ends within the rank
    bound, with eigenvalues in [0, 1], trace at most d and no larger objective."""
    rng = np.random.default_rng(seed)
    p, d = 9, 3
    X, s = make_groups(k, p, seed)
    B, beta = group_moments(X, s, d)
    U = np.linalg.qr(rng.normal(size=(p, p)))[0]
    lam = rng.uniform(0.05, 0.95, size=p)
    lam *= d / lam.sum()
    V, out = round_extreme_point(B, beta, d, U, lam)
    start = np.max(beta - np.einsum("apq,pq->a", B, (U * lam) @ U.T))
    end = np.max(beta - np.einsum("apq,pq->a", B, (V * out) @ V.T))
    assert end <= start + 1e-12 * abs(start)
    assert np.all((out > 0) & (out <= 1)) and out.sum() <= d + 1e-9
    assert V.shape[1] <= rank_bound(d, k)
    s_fractional = int(np.sum(out < 1 - 1e-9))
    assert s_fractional * (s_fractional + 1) // 2 <= k
    np.testing.assert_allclose(V.T @ V, np.eye(V.shape[1]), atol=1e-12)


@pytest.mark.parametrize("k, seed", [(2, 0), (2, 1), (3, 2), (5, 3)])
def test_eigenvalues_are_rounded_before_the_eigenvectors_move(k, seed, monkeypatch):
    """A mixture of two nearby rank-d projectors (what the two-group solver returns near
    the optimum) has many eigenvalues a hair from 0 or 1. The eigenvalues alone reach an
    LP vertex first (at most k fractional), so the s x s block moves at most k - 1 times
    (the block's steps each remove a fractional eigenvalue); the result keeps every
    guarantee of the rounding."""
    import fairpca._minmax_rounding as rounding

    steps = []
    largest_step = rounding._largest_feasible_step
    monkeypatch.setattr(
        rounding,
        "_largest_feasible_step",
        lambda lam, S: steps.append(lam.size) or largest_step(lam, S),
    )
    rng = np.random.default_rng(seed)
    p, d = 12, 5
    X, s = make_groups(k, p, seed)
    B, beta = group_moments(X, s, d)
    V1 = np.linalg.qr(rng.normal(size=(p, d)))[0]
    V2 = np.linalg.qr(V1 + 1e-3 * rng.normal(size=(p, d)))[0]
    P = 0.3 * V1 @ V1.T + 0.7 * V2 @ V2.T
    lam, U = np.linalg.eigh(P)
    lam, U = np.clip(lam[::-1], 0.0, 1.0), U[:, ::-1]
    assert np.sum((lam > 1e-10) & (lam < 1 - 1e-10)) == 2 * d  # all near-integral
    V, out = round_extreme_point(B, beta, d, U, lam)
    assert len(steps) <= k - 1 and all(size <= k for size in steps)
    start = np.max(beta - np.einsum("apq,pq->a", B, P))
    end = np.max(beta - np.einsum("apq,pq->a", B, (V * out) @ V.T))
    assert end <= start + 1e-12 * abs(start)
    assert V.shape[1] <= rank_bound(d, k) and out.sum() <= d + 1e-9
    np.testing.assert_allclose(V.T @ V, np.eye(V.shape[1]), atol=1e-12)


# --------------------------------------------------------------------------- two-group solver
@pytest.mark.parametrize("seed", range(12))
def test_two_group_solver_equals_cutting_planes_with_an_lp_master(seed):
    """The closed-form two-group model gives the iterates of Kelley's method whose
    master problem HiGHS solves (scipy's linprog), and the same certificate."""
    import logging

    X, s = make_groups(2, 4 + seed, seed + 50)
    d = 1 + seed % 3
    B, beta = group_moments(X, s, d)
    own, bases = _group_targets(B, d)
    fast = _solve_two_groups(B, beta, own, bases, d, 1e-9, 200, logging.DEBUG)
    oracle = _solve_cutting_plane(B, beta, own, bases, d, 1e-9, 200, logging.DEBUG)
    assert fast[4] == oracle[4] and fast[5] and oracle[5]  # iterations, converged
    assert fast[3] == pytest.approx(oracle[3], rel=1e-12, abs=1e-14)  # dual bound
    np.testing.assert_allclose(fast[2], oracle[2], atol=1e-9)  # dual point

    def upper(columns, mu):
        P = sum(m * V @ V.T for m, V in zip(mu, columns, strict=True))
        return np.max(beta - np.einsum("apq,pq->a", B, P))

    assert upper(fast[0], fast[1]) == pytest.approx(upper(oracle[0], oracle[1]), rel=1e-9)


# --------------------------------------------------------------------------- nested
@pytest.mark.parametrize("seed", range(4))
def test_nested_prefixes_are_optimal_given_the_earlier_ones(seed):
    p, d = 7, 3
    X, s = make_groups(2, p, seed + 20)
    est = fit(X, s, d, nested=True)
    assert est.n_components_ == d and est.prefix_objectives_.shape == (d,)
    U = est.components_.T
    np.testing.assert_allclose(U.T @ U, np.eye(d), atol=1e-12)
    for r in range(1, d + 1):
        B, beta = group_moments(X, s, r)
        captured = np.einsum("pj,apq,qj->a", U[:, : r - 1], B, U[:, : r - 1])
        complement = np.linalg.svd(np.eye(p) - U[:, : r - 1] @ U[:, : r - 1].T)[0][:, : p - r + 1]
        conditional = clarabel_optimum(B, beta - captured, 1, complement=complement)
        assert est.prefix_objectives_[r - 1] == pytest.approx(conditional, rel=1e-6)
        # The prefix's own losses, recomputed, and never below the joint rank-r optimum.
        prefix = np.max(beta - np.einsum("pj,apq,qj->a", U[:, :r], B, U[:, :r]))
        assert est.prefix_objectives_[r - 1] == pytest.approx(prefix, rel=1e-10)
        assert prefix >= clarabel_optimum(B, beta, r) * (1 - 1e-6)
    # The first component is the jointly optimal rank-one fair projection.
    B1, beta1 = group_moments(X, s, 1)
    assert est.prefix_objectives_[0] == pytest.approx(clarabel_optimum(B1, beta1, 1), rel=1e-6)
    assert np.all(est.prefix_gaps_ <= 1e-6 * est.prefix_objectives_)


def test_nested_fits_extend_each_other():
    X, s = make_groups(2, 8, 30)
    short, long = fit(X, s, 2, nested=True), fit(X, s, 4, nested=True)
    np.testing.assert_allclose(
        np.abs(np.sum(short.components_ * long.components_[:2], axis=1)), 1.0, atol=1e-8
    )
    np.testing.assert_allclose(short.prefix_objectives_, long.prefix_objectives_[:2], rtol=1e-8)


def test_nested_refuses_other_roundings():
    X, s = make_groups(3, 6, 31)
    with pytest.raises(ValueError, match="rounding='lp' does not apply"):
        MinMaxLossFairPCA(2, nested=True, rounding="lp").fit(X, sensitive_features=s)


# --------------------------------------------------------------------------- max-min variance
@pytest.mark.parametrize("k, seed", [(2, 40), (3, 41), (4, 42)])
def test_max_min_variance_against_clarabel(k, seed):
    p, d = 7, 2
    X, s = make_groups(k, p, seed)
    B, _ = group_moments(X, s, d)
    est = fit(X, s, d, objective="variance")
    # min_P max_a -<B_a, P> = -(max_P min_a <B_a, P>).
    assert est.objective_ == pytest.approx(clarabel_optimum(B, np.zeros(k), d), rel=1e-6)
    if k == 2:
        assert est.n_components_ == d
        captured = np.einsum("apq,pq->a", B, est.components_.T @ est.components_)
        np.testing.assert_allclose(-est.group_losses_, captured, rtol=1e-9)
    assert est.n_components_ <= rank_bound(d, k)


# --------------------------------------------------------------------------- multiplicative weights
@pytest.mark.parametrize(
    "k, p, d, seed", [(3, 7, 2, 2), (3, 10, 3, 5), (4, 6, 3, 3), (3, 12, 2, 8)]
)
def test_mw_defaults_end_within_one_percent(k, p, d, seed):
    X, s = make_groups(k, p, seed)
    B, beta = group_moments(X, s, d)
    optimum = clarabel_optimum(B, beta, d)
    with pytest.warns(ConvergenceWarning):
        est = MinMaxLossFairPCA(d, solver="mw").fit(X, sensitive_features=s)
    assert est.n_iter_ == 100
    assert 0 <= (est.relaxed_objective_ - optimum) / optimum <= 1e-2
    # Multiplying the data by 1000 leaves the relative result unchanged (scale-free step).
    with pytest.warns(ConvergenceWarning):
        scaled = MinMaxLossFairPCA(d, solver="mw").fit(1000 * X, sensitive_features=s)
    assert scaled.relaxed_objective_ == pytest.approx(1e6 * est.relaxed_objective_, rel=1e-6)


@pytest.mark.requires_data("default_credit")
def test_mw_defaults_on_default_credit(credit):
    X, s = credit
    d = 5
    B, beta = group_moments(X, s, d)
    with pytest.warns(ConvergenceWarning):
        est = MinMaxLossFairPCA(d, solver="mw").fit(X, sensitive_features=s)
    optimum = clarabel_optimum(B, beta, d)
    assert 0 <= (est.relaxed_objective_ - optimum) / optimum <= 1e-2
