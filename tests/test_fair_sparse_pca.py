"""FairSparsePCA and fair_sparse_pca_path against exhaustive search over supports.

The brute force here is independent of the module's batched closed form: for
every support of size s it takes scipy's null space of the mean-difference rows
on the support and numpy's eigvalsh of the covariance restricted there.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning

from fairpca import FairSparsePCA, GroupMoments, MeanMatchingFairPCA, MinMaxLossFairPCA, sparse_pca
from fairpca.sparse_pca import fair_sparse_pca_path


def _instance(seed, n=400, p=7, k=2):
    """Correlated features, groups with different means."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, k, size=n)
    mixing = rng.normal(size=(p, p))
    X = rng.normal(size=(n, p)) @ mixing + rng.normal(size=(k, p))[s]
    return X, s


def _problem(X, s):
    moments = GroupMoments.from_arrays(X, s)
    covariance = moments.covariance()
    shifts = (moments.means - moments.pooled_mean) * np.sqrt(moments.proportions)[:, None]
    return covariance, shifts.T


def _value(covariance, B, support, orthogonal_to=None):
    """Best u^T Sigma u on ``support`` with B^T u = 0 (and u orthogonal to given rows), or -inf."""
    support = list(support)
    rows = B[support].T
    if orthogonal_to is not None:
        rows = np.vstack((rows / np.linalg.norm(B), orthogonal_to[:, support]))
    null = scipy.linalg.null_space(rows, rcond=1e-9)
    if null.shape[1] == 0:
        return -np.inf
    return np.linalg.eigvalsh(null.T @ covariance[np.ix_(support, support)] @ null)[-1]


def _brute_force(covariance, B, size, orthogonal_to=None):
    p = covariance.shape[0]
    return max(
        _value(covariance, B, support, orthogonal_to)
        for support in itertools.combinations(range(p), size)
    )


def _captured(covariance, u):
    return float(u @ covariance @ u)


@pytest.fixture(params=["greedy", "exhaustive"])
def search(request, monkeypatch):
    """Both support searches: the greedy one forced by a zero budget of supports."""
    if request.param == "greedy":
        monkeypatch.setattr(sparse_pca, "EXHAUSTIVE_SUPPORTS", 0)
    return request.param


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("size", [2, 3, 5])
def test_never_better_than_brute_force_and_exchange_optimal(seed, size, search):
    X, s = _instance(seed)
    covariance, B = _problem(X, s)
    est = FairSparsePCA(fairness="mean-matching", n_components=1, n_nonzero=size)
    u = est.fit(X, sensitive_features=s).components_[0]
    assert est.support_search_ == search
    found = _captured(covariance, u)
    best = _brute_force(covariance, B, size)
    assert found <= best * (1 + 1e-9)
    if search == "exhaustive":
        assert found >= best * (1 - 1e-9)
    # The search's guarantee: no single exchange of a feature improves the support.
    support = np.flatnonzero(u)
    assert support.size <= size
    for i, j in itertools.product(support, np.setdiff1d(np.arange(X.shape[1]), support)):
        swapped = np.where(support == i, j, support)
        assert _value(covariance, B, swapped) <= found * (1 + 1e-9)


def test_reaches_the_optimum_on_an_easy_instance():
    # One strong sparse fair direction (features 0, 1) and group means differing on feature 2.
    rng = np.random.default_rng(0)
    n, p = 2000, 8
    s = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, p))
    X[:, 1] = X[:, 0] + 0.1 * rng.normal(size=n)
    X[:, 0] *= 3.0
    X[:, 1] *= 3.0
    X[:, 2] += 4.0 * s
    covariance, B = _problem(X, s)
    est = FairSparsePCA(fairness="mean-matching", n_components=1, n_nonzero=3).fit(
        X, sensitive_features=s
    )
    np.testing.assert_allclose(
        _captured(covariance, est.components_[0]), _brute_force(covariance, B, 3), rtol=1e-9
    )


@pytest.mark.parametrize("k", [2, 3])
def test_fair_sparse_orthonormal(k):
    X, s = _instance(1, p=9, k=k)
    est = FairSparsePCA(fairness="mean-matching", n_components=3, n_nonzero=4).fit(
        X, sensitive_features=s
    )
    V = est.components_
    assert np.all((V != 0).sum(axis=1) <= 4)
    np.testing.assert_allclose(V @ V.T, np.eye(3), atol=1e-12)
    Z = est.transform(X)
    means = np.array([Z[s == g].mean(axis=0) for g in range(k)])
    scale = np.sqrt(X.var(axis=0).sum())
    np.testing.assert_allclose(means - Z.mean(axis=0), 0.0, atol=1e-12 * scale)
    assert est.mean_gap_ <= 1e-12 * scale


def test_second_component_never_better_than_brute_force(search):
    X, s = _instance(3, p=7)
    covariance, B = _problem(X, s)
    est = FairSparsePCA(fairness="mean-matching", n_components=2, n_nonzero=3).fit(
        X, sensitive_features=s
    )
    # The fitted rows are sorted by variance: recompute the order of the search.
    first = fair_sparse_pca_path(X, s, [3]).loadings
    second = est.components_[np.argmin(np.abs(est.components_ @ first[0]) > 0.5)]
    assert abs(abs(est.components_ @ first[0]).max() - 1) < 1e-9
    found = _captured(covariance, second)
    assert found <= _brute_force(covariance, B, 3, orthogonal_to=first) * (1 + 1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_dense_bound_is_mean_matching(k):
    X, s = _instance(2, p=6, k=k)
    sparse = FairSparsePCA(fairness="mean-matching", n_components=2, n_nonzero=6).fit(
        X, sensitive_features=s
    )
    dense = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=s)
    # Same subspace (the projections agree), and the same first component.
    P_sparse = sparse.components_.T @ sparse.components_
    P_dense = dense.components_.T @ dense.components_
    np.testing.assert_allclose(P_sparse, P_dense, atol=1e-9)
    assert abs(sparse.components_[0] @ dense.components_[0]) == pytest.approx(1.0, abs=1e-12)
    larger = FairSparsePCA(fairness="mean-matching", n_components=2, n_nonzero=50).fit(
        X, sensitive_features=s
    )
    np.testing.assert_allclose(larger.components_, sparse.components_, atol=1e-12)


@pytest.mark.parametrize("budget", [0, 60, 2000])
def test_path_monotone_fair_and_equal_to_the_estimator(budget, monkeypatch):
    # Budget 60: sizes 1, 2, 6, 8 exhaustive (C(8, s) <= 60), 3 and 4 greedy.
    monkeypatch.setattr(sparse_pca, "EXHAUSTIVE_SUPPORTS", budget)
    X, s = _instance(4, p=8)
    covariance, B = _problem(X, s)
    sizes = [1, 2, 3, 4, 6, 8]
    path = fair_sparse_pca_path(X, s, sizes[::-1])
    np.testing.assert_array_equal(path.n_nonzero, sizes)
    expected = ["exhaustive" if math.comb(8, t) <= budget else "greedy" for t in sizes]
    np.testing.assert_array_equal(path.search, expected)
    # One feature cannot have equal group means unless its mean difference is 0.
    assert not path.feasible[0] and np.isnan(path.explained_variance_ratio[0])
    ratios = path.explained_variance_ratio[1:]
    assert np.all(np.diff(ratios) >= -1e-12)
    assert np.all((path.loadings != 0).sum(axis=1) <= path.n_nonzero)
    assert np.all(path.mean_gap[1:] <= 1e-12 * np.sqrt(np.trace(covariance)))
    for size, u, ratio in zip(sizes[1:], path.loadings[1:], ratios, strict=True):
        np.testing.assert_allclose(ratio, _captured(covariance, u) / np.trace(covariance))
        assert ratio * np.trace(covariance) <= _brute_force(covariance, B, size) * (1 + 1e-9)
        est = FairSparsePCA(fairness="mean-matching", n_components=1, n_nonzero=size).fit(
            X, sensitive_features=s
        )
        np.testing.assert_allclose(est.components_[0], u, atol=1e-12)


def test_moments_routes_agree():
    X, s = _instance(5, p=6)
    est = FairSparsePCA(fairness="mean-matching", n_components=2, n_nonzero=3)
    full = est.fit(X, sensitive_features=s).components_.copy()
    streamed = FairSparsePCA(fairness="mean-matching", n_components=2, n_nonzero=3)
    for rows in np.array_split(np.arange(len(s)), 3):
        streamed.partial_fit(X[rows], sensitive_features=s[rows])
    np.testing.assert_allclose(streamed.components_, full, atol=1e-9)
    weights = np.ones(len(s))
    weights[:50] = 2.0
    repeated = np.concatenate((np.arange(len(s)), np.arange(50)))
    weighted = FairSparsePCA(fairness="mean-matching", n_components=2, n_nonzero=3)
    weighted.fit(X, sensitive_features=s, sample_weight=weights)
    plain = FairSparsePCA(fairness="mean-matching", n_components=2, n_nonzero=3).fit(
        X[repeated], sensitive_features=s[repeated]
    )
    np.testing.assert_allclose(weighted.components_, plain.components_, atol=1e-9)


def test_without_groups_follows_the_package_rule():
    X, _ = _instance(6, p=6)
    with pytest.raises(ValueError, match="sensitive_features"):
        FairSparsePCA(fairness="mean-matching", n_nonzero=2, require_groups=True).fit(X)


def test_infeasible_support_is_a_clear_error_and_leaves_the_estimator():
    X, s = _instance(7, p=5, k=4)  # 3 independent mean differences: s = 3 is too few
    est = FairSparsePCA(fairness="mean-matching", n_components=1, n_nonzero=4).fit(
        X, sensitive_features=s
    )
    before = est.components_.copy()
    with pytest.raises(ValueError, match="increase n_nonzero"):
        est.set_params(n_nonzero=3).fit(X, sensitive_features=s)
    np.testing.assert_array_equal(est.components_, before)


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"n_nonzero": 0}, ValueError),
        ({"n_nonzero": 2.5}, TypeError),
        ({"n_nonzero": True}, TypeError),
        ({"max_iter": 0}, ValueError),
    ],
)
def test_bad_parameters(params, error):
    X, s = _instance(0, p=4)
    with pytest.raises(error):
        FairSparsePCA(fairness="mean-matching", **params).fit(X, sensitive_features=s)
    with pytest.raises((ValueError, TypeError)):
        fair_sparse_pca_path(X, s, [params.get("n_nonzero", 0)])


def test_path_rejects_empty_and_single_group():
    X, s = _instance(0, p=4)
    with pytest.raises(ValueError, match="non-empty"):
        fair_sparse_pca_path(X, s, [])
    with pytest.raises(ValueError, match="two groups"):
        fair_sparse_pca_path(X, np.zeros(len(s)), [2])


def test_exchange_budget_warns():
    X, s = _instance(8, p=9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = FairSparsePCA(fairness="mean-matching", n_components=2, n_nonzero=4, max_iter=1).fit(
            X, sensitive_features=s
        )
    stopped = [w for w in caught if "max_iter=1" in str(w.message)]
    assert est.converged_ == (not stopped)


# --------------------------------------------------------------------------
# fairness="max-min": Babu and Stoica's MM for (sparse) max-min fair PCA
# --------------------------------------------------------------------------


def _second_moments(X, s):
    return GroupMoments.from_arrays(X, s).second_moment(center="pooled")


def _max_min_bound(B, d):
    """Samadi's relaxation: max t s.t. t <= <B_a, P>, 0 <= P <= I, tr P = d (cvxpy, Clarabel)."""
    cp = pytest.importorskip("cvxpy")
    p = B.shape[1]
    P, t = cp.Variable((p, p), symmetric=True), cp.Variable()
    constraints = [P >> 0, np.eye(p) - P >> 0, cp.trace(P) == d]
    constraints += [t <= cp.trace(Ba @ P) for Ba in B]
    cp.Problem(cp.Maximize(t), constraints).solve(solver="CLARABEL")
    return float(t.value)


def _group_minimum(B, U):
    return float(np.einsum("apd,pd->a", B @ U, U).min())


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("penalty", [0.0, 0.1])
def test_max_min_objective_never_decreases(k, d, penalty):
    X, s = _instance(10 + k, p=9, k=k)
    est = FairSparsePCA(fairness="max-min", n_components=d, penalty=penalty).fit(
        X, sensitive_features=s
    )
    path = est.objective_path_
    assert path.size == est.n_iter_ + 1 and est.converged_
    assert np.all(np.diff(path) >= 0)
    assert path[-1] > path[0] or np.isclose(path[-1], path[0])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("d", [1, 2])
def test_max_min_dense_within_and_at_the_sdp_bound(seed, k, d):
    X, s = _instance(20 + seed, p=7, k=k)
    B = _second_moments(X, s)
    est = FairSparsePCA(fairness="max-min", n_components=d, penalty=0.0).fit(
        X, sensitive_features=s
    )
    U = est.components_.T
    np.testing.assert_allclose(U.T @ U, np.eye(d), atol=1e-12)
    value = _group_minimum(B, U)
    assert value == pytest.approx(est.objective_, rel=1e-12)
    bound = _max_min_bound(B, d)
    assert value <= bound * (1 + 1e-7)  # Clarabel's own accuracy
    # Where a rank-d projection attains the bound (the extreme-point rounding of
    # MinMaxLossFairPCA returns d components), the MM reaches it: MM stops on a
    # relative change of 1e-8, so 1e-6 is the level it guarantees here.
    reference = MinMaxLossFairPCA(n_components=d, objective="variance", tol=1e-10)
    reference.fit(X, sensitive_features=s)
    if reference.n_components_ == d:
        assert value >= bound * (1 - 1e-6)
        assert value == pytest.approx(-reference.objective_, rel=1e-6)


def test_max_min_large_penalty_gives_sparse_loadings():
    X, s = _instance(30, p=12, k=2)
    B = _second_moments(X, s)
    dense = FairSparsePCA(fairness="max-min", n_components=2, penalty=0.0).fit(
        X, sensitive_features=s
    )
    sparse = FairSparsePCA(fairness="max-min", n_components=2, penalty=0.3).fit(
        X, sensitive_features=s
    )
    V = sparse.components_
    assert np.all((V != 0).sum(axis=1) <= 4)
    assert np.all((dense.components_ != 0).sum(axis=1) == 12)
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(V @ V.T, np.eye(2), atol=1e-2)  # up to the dropped loadings
    assert _group_minimum(B, V.T) <= _group_minimum(B, dense.components_.T) * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("k", [2, 3])
def test_max_min_sparse_never_beats_the_best_support(seed, k):
    # The best unit vector on any support T of the same size is at most the
    # relaxation on T: the MM answer can never exceed the largest of those.
    X, s = _instance(40 + seed, p=7, k=k)
    B = _second_moments(X, s)
    est = FairSparsePCA(fairness="max-min", n_components=1, penalty=0.15).fit(
        X, sensitive_features=s
    )
    u = est.components_[0]
    size = int((u != 0).sum())
    assert 1 <= size < 7
    best = max(
        _max_min_bound(B[:, list(T)][:, :, list(T)], 1)
        for T in itertools.combinations(range(7), size)
    )
    assert _group_minimum(B, u[:, None]) <= best * (1 + 1e-7)


def test_max_min_budget_warns_with_the_achieved_change():
    X, s = _instance(8, p=9)
    with pytest.warns(ConvergenceWarning, match="relative objective change of"):
        est = FairSparsePCA(fairness="max-min", n_components=2, max_iter=1).fit(
            X, sensitive_features=s
        )
    assert not est.converged_ and est.n_iter_ == 1


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"fairness": "max_min"}, ValueError),
        ({"penalty": -0.1}, ValueError),
        ({"penalty": "0.1"}, TypeError),
        ({"tol": 0.0}, ValueError),
    ],
)
def test_max_min_bad_parameters(params, error):
    X, s = _instance(0, p=4)
    est = FairSparsePCA(fairness="max-min", n_components=1).fit(X, sensitive_features=s)
    before = est.components_.copy()
    with pytest.raises(error):
        est.set_params(**params).fit(X, sensitive_features=s)
    np.testing.assert_array_equal(est.components_, before)
