"""MMDFairPCA with many groups: one-vs-rest constraints, small groups, the method chosen."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from fairpca import MMDFairPCA
from fairpca._kernels import _exact_terms, _qmc_frequencies, _rff_terms, _Stratum
from fairpca._mmd_objective import _Penalty
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import mmd2
from fairpca.mmd import _cheaper_method
from fairpca.riemannian import random_point
from test_kernels import _directional_derivative


def _stratum(X, codes, constraint, min_group_size=0):
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    return _Stratum(
        X[order], counts, np.arange(len(counts)), "all rows", constraint, min_group_size
    )


def _four_groups():
    """Centred rows of four groups of unequal sizes and shapes, and their codes."""
    rng = np.random.default_rng(10)
    codes = np.repeat([0, 1, 2, 3], [60, 25, 45, 12])
    X = rng.standard_normal((len(codes), 6))
    X[codes == 1, 0] += 1.0
    X[codes == 2] *= 1.4
    X[codes == 3, 1] -= 0.8
    return X - X.mean(axis=0), codes


@pytest.mark.parametrize("constraint", ["one-vs-rest", "pairwise"])
def test_constraint_values_equal_the_metric_on_each_comparison(constraint):
    # Each constraint's MMD² against fairpca.metrics.mmd2 on the two sides it compares
    # (a vs the other rows, or a vs b), and the penalty against their sum.
    X, codes = _four_groups()
    V = random_point(6, 2, random_state=0)
    penalty = _Penalty([_stratum(X, codes, constraint)], 1.3, "exact")
    labels, values, allowances, _ = penalty.report(V)
    direct = []
    if constraint == "one-vs-rest":
        for a in range(4):
            direct.append(mmd2(X, codes == a, V.T, bandwidth=1.3))
        assert labels == [f"{a} vs rest" for a in range(4)]
    else:
        for a, b in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)):
            rows = np.isin(codes, (a, b))
            direct.append(mmd2(X[rows], codes[rows], V.T, bandwidth=1.3))
        assert labels[2] == "0 vs 3"
    np.testing.assert_allclose(values, direct, rtol=1e-10)
    np.testing.assert_array_equal(allowances, 0.0)
    total, largest, _ = penalty(V)
    np.testing.assert_allclose(total, sum(direct), rtol=1e-10)
    np.testing.assert_allclose(largest, max(direct), rtol=1e-10)


@pytest.mark.parametrize("method", ["exact", "rff"])
@pytest.mark.parametrize(
    ("constraint", "min_group_size"),
    # No small constraint; the 12- and 25-row groups small (a smooth hinge above their
    # sampling floor); every pair small.
    [("one-vs-rest", 0), ("one-vs-rest", 30), ("pairwise", 1000)],
)
def test_penalty_gradient_matches_finite_differences(method, constraint, min_group_size):
    X, codes = _four_groups()
    stratum = _stratum(X, codes, constraint, min_group_size)
    frequencies = _qmc_frequencies(3, 256, 1.1, 0)

    def penalty(W, with_grad=True):
        if method == "exact":
            pen, _, grad = _exact_terms(W, stratum, 0.5 / 1.1**2, with_grad)
        else:
            pen, _, grad = _rff_terms(W, stratum, frequencies, with_grad)
        return pen, grad

    V = random_point(6, 3, random_state=1)
    grad = penalty(V)[1]
    step, rtol = (1e-5, 1e-6) if method == "exact" else (1e-3, 2e-3)
    rng = np.random.default_rng(2)
    for _ in range(4):
        E = rng.standard_normal(V.shape)
        fd = _directional_derivative(lambda W: penalty(W, False)[0], V, E, step)
        np.testing.assert_allclose(np.sum(grad * E), fd, rtol=rtol)


def test_one_vs_rest_bounds_the_pairwise_maximum():
    # mu_a - mu_b = (1 - w_a) delta_a - (1 - w_b) delta_b with delta_a the one-vs-rest
    # difference and w_a = n_a / m: so max one-vs-rest <= max pairwise and each pair is at
    # most ((1 - w_a) sqrt(h_a) + (1 - w_b) sqrt(h_b))², at most 4 max one-vs-rest.
    X, codes = _four_groups()
    w = np.bincount(codes) / len(codes)
    for seed in range(5):
        V = random_point(6, 2, random_state=seed)
        _, rest, _, _ = _Penalty([_stratum(X, codes, "one-vs-rest")], 1.0, "exact").report(V)
        _, pairs, _, _ = _Penalty([_stratum(X, codes, "pairwise")], 1.0, "exact").report(V)
        assert rest.max() <= pairs.max() + 1e-15
        rows, cols = np.triu_indices(4, k=1)
        bound = ((1 - w[rows]) * np.sqrt(rest[rows]) + (1 - w[cols]) * np.sqrt(rest[cols])) ** 2
        assert np.all(pairs <= bound * (1 + 1e-12))
        assert pairs.max() <= 4 * rest.max()


@pytest.mark.slow
@pytest.mark.parametrize("constraint", ["one-vs-rest", "pairwise"])
def test_sampling_floor_is_the_mean_mmd2_of_random_splits(constraint):
    # The allowance of each (small) constraint against the Monte Carlo mean of its MMD²
    # when the rows it compares are split at random into sides of the same sizes.
    rng = np.random.default_rng(3)
    codes = np.repeat([0, 1, 2], [150, 40, 10])
    X = rng.standard_normal((200, 4))
    V = random_point(4, 2, random_state=4)
    stratum = _stratum(X, codes, constraint, min_group_size=1000)  # every constraint small
    _, _, allowances, floors = _Penalty([stratum], 1.5, "exact").report(V)
    np.testing.assert_array_equal(allowances, floors)  # every constraint is small here
    comparisons = [(0, 1), (0, 2), (1, 2)] if constraint == "pairwise" else [0, 1, 2]
    for floor, compared in zip(floors, comparisons, strict=True):
        if constraint == "pairwise":
            rows = np.isin(codes, compared)
            Xc, side = X[rows], codes[rows] == compared[0]
        else:
            Xc, side = X, codes == compared
        draws = [mmd2(Xc, rng.permutation(side), V.T, bandwidth=1.5) for _ in range(3000)]
        se = np.std(draws) / np.sqrt(len(draws))
        assert floor > 0 and abs(floor - np.mean(draws)) <= 4 * se


def _small_group_data():
    """Two large groups that differ along feature 0, and a 12-row group like the others."""
    rng = np.random.default_rng(5)
    codes = np.repeat([0, 1, 2], [200, 200, 12])
    X = rng.standard_normal((len(codes), 5)) * [3.0, 1.0, 2.0, 1.0, 0.5]
    X[codes == 1, 0] += 2.0
    return X, np.array(["a", "b", "tiny"])[codes]


def test_small_group_warns_and_is_held_within_tau_of_its_floor():
    X, s = _small_group_data()
    tau = 1e-3
    with pytest.warns(UserWarning, match=r"'tiny' \(12 rows\) below min_group_size=50"):
        est = MMDFairPCA(n_components=2, tau=tau, random_state=0).fit(X, sensitive_features=s)
    assert est.converged_
    allowance = est.constraint_allowances_
    assert allowance["'tiny' vs rest"] > 10 * tau  # the floor of 12 rows
    assert allowance["'a' vs rest"] == allowance["'b' vs rest"] == 0.0
    excess = {k: v - allowance[k] for k, v in est.constraint_values_.items()}
    assert max(excess.values()) <= tau
    assert est.active_constraint_ == max(excess, key=excess.get)
    # The raw constraint on 12 rows (min_group_size=0) costs far more variance.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        raw = MMDFairPCA(n_components=2, tau=tau, min_group_size=0, random_state=0)
        raw.fit(X, sensitive_features=s)
    assert not raw.constraint_allowances_["'tiny' vs rest"]
    assert est.explained_variance_ratio_.sum() > raw.explained_variance_ratio_.sum() + 0.05


def test_no_warning_without_small_groups():
    X, s = make_gaussian_groups(n_samples=600, n_features=4, n_groups=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est = MMDFairPCA(n_components=1, tau=0.5).fit(X, sensitive_features=s)
    assert set(est.constraint_allowances_.values()) == {0.0}


def test_labels_name_the_class_with_equalised_odds():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((360, 4))
    s = np.tile(["u", "v", "w"], 120)
    y = np.repeat([0, 1], 180)
    est = MMDFairPCA(n_components=1, tau=0.5, fairness="EOD").fit(X, y, sensitive_features=s)
    assert sorted(est.constraint_values_) == sorted(
        f"y={c}: '{g}' vs rest" for c in (1, 0) for g in "uvw"
    )
    assert est.active_constraint_ in est.constraint_values_
    assert est.constraint_value_ == max(est.constraint_values_.values())


def test_auto_method_follows_the_cost_model():
    def stratum(m, k):
        counts = np.full(k, m // k)
        counts[0] += m - counts.sum()
        return _Stratum(np.zeros((m, 3)), counts, np.arange(k), "all rows")

    # Exact up to about 2,800 rows with two groups and d = 2, random features beyond
    # (unless tau < 1e-3, where they cannot certify), sooner with more groups and
    # dimensions (more columns per kernel tile) and later with more frequencies.
    assert _cheaper_method([stratum(1727, 2)], 2, 1024, 1e-3) == "exact"  # Lee et al.'s COMPAS
    assert _cheaper_method([stratum(7214, 2)], 2, 1024, 1e-3) == "rff"
    assert _cheaper_method([stratum(7214, 2)], 2, 1024, 1e-4) == "exact"
    assert _cheaper_method([stratum(1300, 10)], 5, 1024, 1e-3) == "rff"
    assert _cheaper_method([stratum(1300, 10)], 5, 4096, 1e-3) == "exact"
    assert _cheaper_method([stratum(1500, 2), stratum(1500, 2)], 2, 1024, 1e-3) == "exact"


def test_fitted_attributes_say_which_method_and_rows():
    X, s = make_gaussian_groups(n_samples=1200, n_features=4, random_state=1)
    est = MMDFairPCA(n_components=1, tau=0.5, max_samples=500).fit(X, sensitive_features=s)
    assert est.mmd_method_ == "exact" and est.mmd_rows_ == 500


@pytest.mark.parametrize(
    ("params", "match"),
    [({"constraint": "all pairs"}, "constraint"), ({"min_group_size": -1}, "min_group_size")],
)
def test_bad_parameters(params, match):
    X, s = make_gaussian_groups(n_samples=100, n_features=3, random_state=0)
    with pytest.raises(ValueError, match=match):
        MMDFairPCA(**params).fit(X, sensitive_features=s)


def test_reweight_halves_the_weights_of_the_constraints_that_hold():
    X, codes = _four_groups()
    V = random_point(6, 2, random_state=7)
    penalty = _Penalty([_stratum(X, codes, "one-vs-rest")], 1.3, "exact")
    _, values, _, _ = penalty.report(V)
    tau = float(np.median(values))
    assert not penalty.reweight(V, values.max())  # all hold: nothing changes
    assert penalty.weights == [None]
    assert penalty.reweight(V, tau)
    np.testing.assert_array_equal(penalty.weights[0], np.where(values <= tau, 0.5, 1.0))
    # The weighted penalty and its gradient: sum_c w_c h_c, against finite differences.
    total, _, grad = penalty(V)
    np.testing.assert_allclose(total, penalty.weights[0] @ values, rtol=1e-10)
    E = np.random.default_rng(8).standard_normal(V.shape)
    fd = _directional_derivative(lambda W: penalty(W, False)[0], V, E, 1e-5)
    np.testing.assert_allclose(np.sum(grad * E), fd, rtol=1e-6)


def test_two_groups_keep_equal_weights():
    # "a vs rest" and "b vs rest" are the same MMD²: both hold or neither does.
    X, codes = _four_groups()
    two = (codes > 1).astype(int)
    penalty = _Penalty([_stratum(X, two, "one-vs-rest")], 1.3, "exact")
    V = random_point(6, 2, random_state=9)
    assert not penalty.reweight(V, 0.0) and penalty.weights == [None]


def test_one_vs_rest_fit_holds_every_group_and_bounds_the_pairs():
    X, s = make_gaussian_groups(
        n_samples=450, n_features=10, n_groups=3, mean_shift=0.0, random_state=2
    )
    tau = 1e-3
    est = MMDFairPCA(n_components=2, tau=tau, random_state=0).fit(X, sensitive_features=s)
    assert est.converged_ and est.mmd_method_ == "exact"
    for a in range(3):
        h = mmd2(X, s == a, est, bandwidth=est.bandwidth_)
        np.testing.assert_allclose(h, est.constraint_values_[f"{a} vs rest"], rtol=1e-9)
        assert h <= tau
    assert mmd2(X, s, est, bandwidth=est.bandwidth_) <= 4 * tau


def test_fit_stops_when_no_step_is_possible_while_rho_grows(monkeypatch):
    # A sub-solver that cannot move: once the tolerance schedule is at its floor (1e-6 from
    # the 7th outer iteration: 0.1 times five rounded tenths is a hair above it), 4 outer
    # iterations without a step end the fit, unconverged, instead of doubling rho to 1e10.
    from fairpca import mmd as mmd_module
    from fairpca.riemannian._common import StiefelResult

    def no_step(objective, V, eps, newton):
        cost = objective(V)[0]
        history = np.array([cost])
        result = StiefelResult(V, cost, 1.0, 0, False, "line search failed", 1, history, history)
        return result, newton

    monkeypatch.setattr(mmd_module, "_solve_subproblem", no_step)
    X, s = make_gaussian_groups(n_samples=400, n_features=5, random_state=3)
    with pytest.warns(ConvergenceWarning, match="could not move while the penalty grew"):
        est = MMDFairPCA(n_components=2, tau=0.0, mmd="exact").fit(X, sensitive_features=s)
    assert not est.converged_ and est.n_iter_ == 7 + 3
    np.testing.assert_array_equal(est.history_["step"], 0.0)


def test_small_group_fit_is_invariant_to_row_order_translation_and_labels():
    # The hinge path (small groups) stops where L-BFGS meets the gradient tolerance 1e-6
    # (no exact Hessian for Newton steps to polish it): the same point to 1e-5 (3.6e-6
    # seen after reordering the rows; the smooth path is checked to 1e-7 in
    # test_properties).
    X, s = _small_group_data()

    def projector(X, s):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            est = MMDFairPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
        return est.components_.T @ est.components_

    P = projector(X, s)
    order = np.random.default_rng(11).permutation(len(s))
    renamed = np.array([{"a": "z", "b": "y", "tiny": "x"}[g] for g in s])
    for Xv, sv in ((X[order], s[order]), (X + 1000.0 * np.arange(1, 6), s), (X, renamed)):
        np.testing.assert_allclose(projector(Xv, sv), P, atol=1e-5)


@pytest.mark.slow
def test_many_groups_of_two_rows_finish():
    """100 groups of 2 rows on 200 x 8 ran for over 300 s (issue 41, item 9): a few now.

    The profile showed three-operand einsums over the k x k Gram matrix of the mean
    embeddings taking three quarters of the time; the fit itself levels off as the
    sampling floors allow.
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 8))
    s = np.repeat(np.arange(100), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MMDFairPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    assert est.n_iter_ < est.max_iter
    assert len(est.constraint_values_) == 100
