"""Tests of fairpca.metrics against independent computations."""

import dataclasses
import itertools
import subprocess
import sys

import numpy as np
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import BaseEstimator
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, cross_val_predict
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from fairpca import RobustFairPCA
from fairpca import metrics as M
from fairpca._kernels import _max_pairwise_mmd2
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import ReconstructionScorer, reconstruction_error, reconstruction_error_gap
from fairpca.metrics._classifier import _import_fairlearn_metrics
from fairpca.metrics._report import _import_pandas

SEED = 0


class StubProjection(BaseEstimator):
    """Duck-typed fitted estimator with the attributes of a fairpca estimator."""

    def __init__(self, n_components=2, components=None, scales=None):
        self.n_components = n_components
        self.components = components
        self.scales = scales

    def fit(self, X, y=None, *, sensitive_features=None):
        X = np.asarray(X, dtype=float)
        self.mean_ = X.mean(axis=0)
        self.components_ = np.asarray(self.components, dtype=float)
        if self.scales is not None:
            self.component_scales_ = np.asarray(self.scales, dtype=float)
        return self


@pytest.fixture
def data2():
    rng = np.random.default_rng(SEED)
    n, p = 120, 5
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, p)) * np.array([3.0, 2.0, 1.5, 1.0, 0.5])
    X[s == 1] = X[s == 1] @ np.diag([0.5, 2.0, 1.0, 1.0, 1.0]) + np.array([1.0, 0, 0, 0.5, 0])
    return X, s


@pytest.fixture
def data3():
    rng = np.random.default_rng(SEED + 1)
    n, p = 150, 4
    labels = np.array(["a", "b", "c"])
    s = labels[rng.integers(0, 3, n)]
    X = rng.normal(size=(n, p)) * np.array([2.0, 1.5, 1.0, 0.5])
    X[s == "b"] += np.array([0.8, 0.0, 0.0, 0.0])
    X[s == "c"] *= np.array([1.0, 0.3, 2.0, 1.0])
    return X, s


def random_orthonormal(r, p, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(p, r)))
    return q.T


# ----------------------------------------------------------------------------
# independent oracles
# ----------------------------------------------------------------------------


def loop_group_errors(X, s, U, scales, mean):
    """Mean ||(x - m) - (x - m) P||^2 per group with an explicit loop over rows."""
    P = U.T @ np.diag(scales) @ U
    sums, counts = {}, {}
    for x, g in zip(X, s, strict=True):
        a = x - mean
        r = a - a @ P
        sums[g] = sums.get(g, 0.0) + float(r @ r)
        counts[g] = counts.get(g, 0) + 1
    return {g: sums[g] / counts[g] for g in sorted(sums)}


def own_optimum(X, s, g, mean, d):
    """Group g's own rank-d error: eigenvalues of B_g beyond the top d."""
    A = X[s == g] - mean
    lam = np.sort(np.linalg.eigvalsh(A.T @ A / A.shape[0]))[::-1]
    return float(lam[d:].sum())


def brute_mmd2(A, B, sigma):
    def k(u, v):
        return np.exp(-np.sum((u - v) ** 2) / (2 * sigma**2))

    kaa = sum(k(u, v) for u in A for v in A) / len(A) ** 2
    kbb = sum(k(u, v) for u in B for v in B) / len(B) ** 2
    kab = sum(k(u, v) for u in A for v in B) / (len(A) * len(B))
    return kaa + kbb - 2 * kab


# ----------------------------------------------------------------------------
# reconstruction errors
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["data2", "data3"])
def test_group_errors_match_row_loop(fixture, request):
    X, s = request.getfixturevalue(fixture)
    pca = PCA(2).fit(X)
    ours = M.group_reconstruction_error(X, s, pca)
    expected = loop_group_errors(X, s, pca.components_, np.ones(2), pca.mean_)
    assert list(ours) == sorted(set(s.tolist()))
    for g in expected:
        assert ours[g] == pytest.approx(expected[g], rel=1e-10)
    # ARE: mean over all rows
    P = pca.components_.T @ pca.components_
    total = np.mean([np.sum(((x - pca.mean_) @ (np.eye(X.shape[1]) - P)) ** 2) for x in X])
    assert M.reconstruction_error(X, pca) == pytest.approx(total, rel=1e-10)
    # ABDiff: largest pairwise gap
    gap = max(abs(expected[a] - expected[b]) for a, b in itertools.combinations(expected, 2))
    assert M.reconstruction_error_gap(X, s, pca) == pytest.approx(gap, rel=1e-10)


def test_three_projection_forms_agree(data3):
    X, s = data3
    pca = PCA(2).fit(X)
    stub = StubProjection(2, pca.components_).fit(X)
    arr = pca.components_.copy()
    bw = M.mmd_bandwidth(X, 2)
    results = []
    for proj in (pca, stub, arr):
        results.append(
            [
                M.group_reconstruction_error(X, s, proj),
                M.reconstruction_error(X, proj),
                M.reconstruction_error_gap(X, s, proj),
                M.marginal_loss(X, s, proj),
                M.disparity_error(X, s, proj),
                M.pairwise_disparity_error(X, s, proj),
                M.explained_variance_ratio(X, proj),
                M.mmd2(X, s, proj, bandwidth=bw),
                M.mmd2(X, s, proj, bandwidth=bw, method="rff", random_state=3),
                M.group_separability(X, s, proj, random_state=SEED),
                M.communality(proj).tolist(),
            ]
        )
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            if isinstance(a, dict):
                assert a.keys() == b.keys()
                assert list(a.values()) == pytest.approx(list(b.values()), rel=1e-9, abs=1e-12)
            else:
                assert a == pytest.approx(b, rel=1e-9, abs=1e-12)


def test_scaled_projection_matches_explicit_P(data2):
    X, s = data2
    U = random_orthonormal(3, X.shape[1], seed=5)
    scales = np.array([1.0, 0.35, 0.8])
    stub = StubProjection(2, U, scales).fit(X)
    m = stub.mean_
    ours = M.group_reconstruction_error(X, s, stub)
    expected = loop_group_errors(X, s, U, scales, m)
    for g in expected:
        assert ours[g] == pytest.approx(expected[g], rel=1e-10)
    # the same residual through the documented transform / inverse transform
    Z = ((X - m) @ U.T) * np.sqrt(scales)
    X_hat = (Z * np.sqrt(scales)) @ U + m
    assert M.reconstruction_error(X, stub) == pytest.approx(
        np.mean(np.sum((X - X_hat) ** 2, axis=1)), rel=1e-10
    )
    # explained variance: <Sigma, P> / tr Sigma with Sigma around mean_
    Sigma = (X - m).T @ (X - m) / X.shape[0]
    P = U.T @ np.diag(scales) @ U
    assert M.explained_variance_ratio(X, stub) == pytest.approx(
        np.trace(Sigma @ P) / np.trace(Sigma), rel=1e-10
    )
    # marginal loss at d = n_components = 2 (not r = 3), and Samadi's closed form
    # beta_a - <B_a, I - (I - P)^2> for the scaled map
    losses = M.marginal_loss(X, s, stub)
    eye = np.eye(X.shape[1])
    for g in (0, 1):
        A = X[s == g] - m
        B = A.T @ A / A.shape[0]
        lam = np.sort(np.linalg.eigvalsh(B))[::-1]
        closed = lam[:2].sum() - np.trace(B @ (eye - (eye - P) @ (eye - P)))
        assert losses[g] == pytest.approx(closed, rel=1e-8, abs=1e-10)
        assert losses[g] == pytest.approx(expected[g] - own_optimum(X, s, g, m, 2), rel=1e-8)
    # communality = diagonal of P
    np.testing.assert_allclose(M.communality(stub), np.diag(P), rtol=1e-12)
    assert M.communality(stub).sum() == pytest.approx(scales.sum())


# ----------------------------------------------------------------------------
# marginal loss and disparity error
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3])
def test_marginal_loss_zero_for_group_own_pca(data2, d):
    X, s = data2
    mean = X.mean(axis=0)
    for g in (0, 1):
        A = X[s == g] - mean
        _, vecs = np.linalg.eigh(A.T @ A / A.shape[0])
        own = vecs[:, ::-1][:, :d].T  # group g's top-d directions, centred on pooled mean
        losses = M.marginal_loss(X, s, own)
        assert abs(losses[g]) < 1e-10
        assert losses[1 - g] > 1e-3


@pytest.mark.parametrize("d", [1, 3])
def test_marginal_loss_closed_form_for_pca(data3, d):
    X, s = data3
    pca = PCA(d).fit(X)
    V = pca.components_
    losses = M.marginal_loss(X, s, pca)
    for g in ("a", "b", "c"):
        A = X[s == g] - pca.mean_
        B = A.T @ A / A.shape[0]
        lam = np.sort(np.linalg.eigvalsh(B))[::-1]
        assert losses[g] == pytest.approx(lam[:d].sum() - np.trace(V @ B @ V.T), rel=1e-9)
        assert losses[g] >= -1e-12


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 4))
def test_marginal_loss_nonnegative_for_any_projector(seed, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 5)) * rng.uniform(0.2, 3, size=5)
    s = np.repeat([0, 1], 20)
    losses = M.marginal_loss(X, s, random_orthonormal(d, 5, seed))
    assert min(losses.values()) >= -1e-10


def test_disparity_error_is_kamani_unnormalised_sum(data3):
    X, s = data3
    pca = PCA(2).fit(X)
    V = pca.components_
    errs = M.disparity_error(X, s, pca)
    losses = M.marginal_loss(X, s, pca)
    for g in ("a", "b", "c"):
        A = X[s == g] - pca.mean_
        frob = sum(float(np.sum((a - a @ V.T @ V) ** 2)) for a in A)  # ||A - A U U^T||_F^2
        lam = np.sort(np.linalg.eigvalsh(A.T @ A))[::-1]  # un-normalised: no 1 / n_a
        assert errs[g] == pytest.approx(frob - lam[2:].sum(), rel=1e-8)
        assert errs[g] == pytest.approx(A.shape[0] * losses[g], rel=1e-10)
    pairs = M.pairwise_disparity_error(X, s, pca)
    assert list(pairs) == [("a", "b"), ("a", "c"), ("b", "c")]
    for (a, b), delta in pairs.items():
        assert delta == pytest.approx(errs[a] - errs[b], rel=1e-12)


def test_target_dimension_resolution(data2):
    X, s = data2
    U = random_orthonormal(3, X.shape[1], seed=2)
    stub = StubProjection(2, U).fit(X)
    m = stub.mean_
    err = loop_group_errors(X, s, U, np.ones(3), m)
    by_hyper = M.marginal_loss(X, s, stub)  # d = 2 from the hyper-parameter
    by_override = M.marginal_loss(X, s, stub, n_components=3)
    by_rows = M.marginal_loss(X, s, U)  # array: d = r = 3
    for g in (0, 1):
        assert by_hyper[g] == pytest.approx(err[g] - own_optimum(X, s, g, m, 2), rel=1e-9)
        assert by_override[g] == pytest.approx(err[g] - own_optimum(X, s, g, m, 3), rel=1e-9)
        assert by_rows[g] == pytest.approx(by_override[g], rel=1e-9)
    # PCA with a float n_components: d falls back to the number of components
    pca = PCA(0.8).fit(X)
    r = pca.components_.shape[0]
    losses = M.marginal_loss(X, s, pca)
    err = loop_group_errors(X, s, pca.components_, np.ones(r), pca.mean_)
    for g in (0, 1):
        assert losses[g] == pytest.approx(err[g] - own_optimum(X, s, g, pca.mean_, r), rel=1e-9)


# ----------------------------------------------------------------------------
# explained variance, communality
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 4, 5])
def test_explained_variance_ratio_matches_sklearn(data2, d):
    X, _ = data2
    pca = PCA(d).fit(X)
    assert M.explained_variance_ratio(X, pca) == pytest.approx(
        pca.explained_variance_ratio_.sum(), rel=1e-10
    )


def test_explained_variance_ratio_centred_on_the_data(data2):
    # Lee et al.'s %VAR of held-out rows: tr(V^T C V) / tr(C), C = np.cov of those rows.
    X, _ = data2
    pca = PCA(2).fit(X[:100])
    held_out = X[100:] + 3.0  # a shift moves the projection-centred value, not this one
    V = pca.components_.T
    C = np.cov(held_out, rowvar=False)
    expected = np.trace(V.T @ C @ V) / np.trace(C)
    assert M.explained_variance_ratio(held_out, pca, center="data") == pytest.approx(
        expected, rel=1e-12
    )
    assert abs(M.explained_variance_ratio(held_out, pca) - expected) > 1e-3
    with pytest.raises(ValueError, match="center must be"):
        M.explained_variance_ratio(X, pca, center="test")


def test_communality_sum_of_squared_loadings(data2):
    X, _ = data2
    pca = PCA(3).fit(X)
    expected = [sum(pca.components_[j, k] ** 2 for j in range(3)) for k in range(X.shape[1])]
    np.testing.assert_allclose(M.communality(pca), expected, rtol=1e-12)
    np.testing.assert_allclose(M.communality(pca.components_), expected, rtol=1e-12)


# ----------------------------------------------------------------------------
# MMD
# ----------------------------------------------------------------------------


def test_bandwidth_matches_brute_force_median(data2):
    X, _ = data2
    X = X[:70]
    V = PCA(2).fit(X).components_
    sq = []
    for i in range(len(X)):
        for j in range(i + 1, len(X)):
            diff = V @ (X[i] - X[j])
            sq.append(float(diff @ diff))
    expected = np.sqrt(np.median(sq) / 2)
    assert M.mmd_bandwidth(X, 2) == pytest.approx(expected, rel=1e-10)


def test_bandwidth_over_several_row_blocks_uses_the_pca_of_all_rows():
    # More rows than one accumulation block (65536), with an offset of 1e6 that a
    # cancelling scatter formula (X^T X - n mean mean^T) gets wrong by about 2e-4 here.
    rng = np.random.default_rng(3)
    X = rng.standard_normal((150_000, 4)) * [3.0, 2.0, 1.0, 0.5] + 1e6
    centred = X - X.mean(axis=0)
    V = np.linalg.svd(centred, full_matrices=False)[2][:2]
    rows = centred[np.random.RandomState(0).choice(len(X), size=300, replace=False)]
    z = rows @ V.T
    sq = ((z[:, None, :] - z[None, :, :]) ** 2).sum(-1)[np.triu_indices(len(z), 1)]
    expected = np.sqrt(np.median(sq) / 2)
    assert M.mmd_bandwidth(X, 2, max_samples=300, random_state=0) == pytest.approx(
        expected, rel=1e-8
    )


def test_bandwidth_subsample_is_seeded_and_close(data2):
    X, _ = data2
    full = M.mmd_bandwidth(X, 2)
    a = M.mmd_bandwidth(X, 2, max_samples=60, random_state=1)
    b = M.mmd_bandwidth(X, 2, max_samples=60, random_state=1)
    c = M.mmd_bandwidth(X, 2, max_samples=60, random_state=2)
    assert a == b
    assert a != c
    assert a == pytest.approx(full, rel=0.25)


def test_mmd2_exact_matches_brute_force(data2):
    X, s = data2
    X, s = X[:50], s[:50]
    pca = PCA(2).fit(X)
    Z = pca.transform(X)
    sigma = 1.7
    expected = brute_mmd2(Z[s == 0], Z[s == 1], sigma)
    for block in (1, 7, 1024):
        assert M.mmd2(X, s, pca, bandwidth=sigma, block_size=block) == pytest.approx(
            expected, rel=1e-10
        )
        assert _max_pairwise_mmd2([Z[s == 0], Z[s == 1]], sigma, block_size=block) == pytest.approx(
            expected, rel=1e-10
        )
    # default bandwidth = median heuristic at the projection's d
    bw = M.mmd_bandwidth(X, 2)
    assert M.mmd2(X, s, pca) == pytest.approx(brute_mmd2(Z[s == 0], Z[s == 1], bw), rel=1e-10)


def test_mmd2_k_groups_is_max_over_pairs():
    rng = np.random.default_rng(11)
    s = np.repeat(["a", "b", "c"], 20)
    X = rng.normal(size=(60, 4))
    X[s == "a"] += np.array([2.0, 0.0, 1.0, 0.0])  # "a" differs; "b" and "c" do not
    pca = PCA(2).fit(X)
    Z = pca.transform(X)
    sigma = 1.3
    pairs = [brute_mmd2(Z[s == a], Z[s == b], sigma) for a, b in itertools.combinations("abc", 2)]
    assert np.argmax(pairs) != len(pairs) - 1  # the maximum is not the last pair visited
    assert M.mmd2(X, s, pca, bandwidth=sigma, block_size=16) == pytest.approx(max(pairs), rel=1e-10)
    rff = M.mmd2(X, s, pca, bandwidth=sigma, method="rff", n_random_features=2**15, random_state=0)
    assert rff == pytest.approx(max(pairs), rel=0.05)


def test_mmd2_rff_approximates_exact(data2):
    X, s = data2
    pca = PCA(2).fit(X)
    bw = M.mmd_bandwidth(X, 2)
    exact = M.mmd2(X, s, pca, bandwidth=bw)
    assert exact > 0.02  # the groups differ, so a relative tolerance is meaningful
    approx = M.mmd2(X, s, pca, bandwidth=bw, method="rff", n_random_features=2**16, random_state=1)
    # unbiased, standard error O(1/sqrt(D)): at D = 65536 within 3 % here
    assert approx == pytest.approx(exact, rel=0.03)
    # Paired cos/sin features at quasi-random frequencies: within 1 % of the exact
    # value already at the default D = 1024, whatever the seed.
    for seed in range(5):
        default = M.mmd2(X, s, pca, bandwidth=bw, method="rff", random_state=seed)
        assert default == pytest.approx(exact, rel=0.01)
    # deterministic given the seed
    assert M.mmd2(X, s, pca, bandwidth=bw, method="rff", random_state=4) == M.mmd2(
        X, s, pca, bandwidth=bw, method="rff", random_state=4
    )


def test_mmd2_zero_for_identical_groups(data2):
    X, _ = data2
    Xd = np.vstack([X[:40], X[:40][::-1]])
    s = np.repeat(["x", "y"], 40)
    pca = PCA(2).fit(Xd)
    assert M.mmd2(Xd, s, pca) == pytest.approx(0.0, abs=1e-12)
    assert M.mmd2(Xd, s, pca, method="rff", random_state=0) == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    Za=arrays(np.float64, st.tuples(st.integers(1, 12), st.just(2)), elements=st.floats(-5, 5)),
    Zb=arrays(np.float64, st.tuples(st.integers(1, 12), st.just(2)), elements=st.floats(-5, 5)),
    sigma=st.floats(0.1, 10),
)
def test_mmd2_nonnegative_and_zero_on_permutation(Za, Zb, sigma):
    value = _max_pairwise_mmd2([Za, Zb], sigma, block_size=5)
    assert value >= 0
    assert value == pytest.approx(max(brute_mmd2(Za, Zb, sigma), 0.0), abs=1e-10)
    assert _max_pairwise_mmd2([Za, Za[::-1]], sigma) == pytest.approx(0.0, abs=1e-12)
    rff = _max_pairwise_mmd2([Za, Zb], sigma, method="rff", n_random_features=64, random_state=0)
    assert rff >= 0


# ----------------------------------------------------------------------------
# classifier-based metrics
# ----------------------------------------------------------------------------


def test_group_separability_matches_ks_of_oof_scores(data2):
    X, s = data2
    pca = PCA(2).fit(X)
    Z = pca.transform(X)
    scores = cross_val_predict(
        LogisticRegression(max_iter=1000),
        Z,
        s,
        cv=StratifiedKFold(5, shuffle=True, random_state=SEED),
        method="decision_function",
    )
    # Brute force over every threshold: the largest gap between the groups' CDFs.
    expected = max(abs(np.mean(scores[s == 0] <= t) - np.mean(scores[s == 1] <= t)) for t in scores)
    assert M.group_separability(X, s, pca, random_state=SEED) == pytest.approx(expected)


def test_group_separability_extremes():
    rng = np.random.default_rng(3)
    s = np.repeat([0, 1], 100)
    X = rng.normal(size=(200, 3))
    separable = X.copy()
    separable[:, 0] += 20 * s
    U = np.eye(3)[:2]
    assert M.group_separability(separable, s, U, random_state=0) == pytest.approx(1.0)
    assert M.group_separability(X, s, U, random_state=0) < 0.25
    # k groups: the max over pairs; one well separated group dominates
    s3 = np.repeat([0, 1, 2], [70, 70, 60])
    X3 = rng.normal(size=(200, 3))
    X3[s3 == 0, 1] += 20  # the separated group is in the first pairs, not the last
    assert M.group_separability(X3, s3, U, random_state=0, classifier="linear_svm") == (
        pytest.approx(1.0)
    )


def _explicit_rates(y, pred, g):
    groups = sorted(set(g.tolist()))
    sel = [np.mean(pred[g == a]) for a in groups]
    tpr = [np.sum((pred == 1) & (y == 1) & (g == a)) / np.sum((y == 1) & (g == a)) for a in groups]
    fpr = [np.sum((pred == 1) & (y == 0) & (g == a)) / np.sum((y == 0) & (g == a)) for a in groups]
    return {
        "accuracy": np.mean(pred == y),
        "demographic_parity_difference": max(sel) - min(sel),
        "equal_opportunity_difference": max(tpr) - min(tpr),
        "equalized_odds_difference": max(max(tpr) - min(tpr), max(fpr) - min(fpr)),
        "positive_rate": np.mean(pred),
    }


@pytest.mark.parametrize("fixture", ["data2", "data3"])
def test_downstream_fairness_matches_explicit_rates(fixture, request):
    X, s = request.getfixturevalue(fixture)
    rng = np.random.default_rng(7)
    y01 = (X[:, 0] + 0.5 * rng.normal(size=len(X)) > 0.3).astype(int)
    y = np.where(y01 == 1, "yes", "no")  # string labels; "yes" is the larger one
    pca = PCA(2).fit(X)
    pred = cross_val_predict(
        SVC(kernel="rbf"),
        pca.transform(X),
        y01,
        cv=StratifiedKFold(5, shuffle=True, random_state=SEED),
    )
    expected = _explicit_rates(y01, pred, s)
    ours = M.downstream_fairness(X, y, s, pca, random_state=SEED)
    assert ours.keys() == expected.keys()
    for key in expected:
        assert ours[key] == pytest.approx(expected[key], abs=1e-12)
    # pos_label flips the positive class: TPR becomes 1 - FNR of the other class etc.
    flipped = M.downstream_fairness(X, y, s, pca, random_state=SEED, pos_label="no")
    expected_flip = _explicit_rates(1 - y01, 1 - pred, s)
    for key in expected:
        assert flipped[key] == pytest.approx(expected_flip[key], abs=1e-12)


def test_downstream_fairness_linear_svm_runs(data2):
    X, s = data2
    y = (X[:, 1] > 0).astype(int)
    out = M.downstream_fairness(X, y, s, PCA(2).fit(X), classifier="linear_svm", random_state=0)
    assert 0.5 < out["accuracy"] <= 1
    assert all(0 <= out[k] <= 1 for k in out)


# ----------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------


def test_report_columns_and_values(data3):
    X, s = data3
    y = (X[:, 0] > 0).astype(int)
    pca2 = PCA(2).fit(X)
    pca3 = PCA(3).fit(X)
    table = M.report(X, s, {"pca2": pca2, "pca3": pca3.components_}, y, random_state=SEED)
    assert list(table.index) == ["pca2", "pca3"]
    for col in [
        "explained_variance_ratio",
        "reconstruction_error",
        "reconstruction_error_gap",
        "max_marginal_loss",
        "max_disparity_error",
        "mmd2",
        "group_separability",
        "reconstruction_error[a]",
        "marginal_loss[c]",
        "disparity_error[b]",
        "accuracy",
        "demographic_parity_difference",
        "equal_opportunity_difference",
        "equalized_odds_difference",
    ]:
        assert col in table.columns
    bw = M.mmd_bandwidth(X, 2, random_state=SEED)  # shared: first projection's d
    row = table.loc["pca3"]
    assert row["mmd2"] == pytest.approx(M.mmd2(X, s, pca3, bandwidth=bw), rel=1e-12)
    assert row["mmd2"] != pytest.approx(M.mmd2(X, s, pca3), rel=1e-6)  # not its own d=3 σ
    assert row["explained_variance_ratio"] == pytest.approx(
        pca3.explained_variance_ratio_.sum(), rel=1e-10
    )
    assert row["max_marginal_loss"] == pytest.approx(
        max(M.marginal_loss(X, s, pca3).values()), rel=1e-12
    )
    assert row["reconstruction_error[b]"] == pytest.approx(
        M.group_reconstruction_error(X, s, pca3)["b"], rel=1e-12
    )
    assert row["reconstruction_error"] == pytest.approx(M.reconstruction_error(X, pca3), rel=1e-12)
    assert row["reconstruction_error_gap"] == pytest.approx(
        M.reconstruction_error_gap(X, s, pca3), rel=1e-12
    )
    # pca2 shares pca3's centre but not its d: its losses must use d = 2.
    assert table.loc["pca2", "max_marginal_loss"] == pytest.approx(
        max(M.marginal_loss(X, s, pca2).values()), rel=1e-12
    )
    disp = M.disparity_error(X, s, pca3)
    assert row["disparity_error[b]"] == pytest.approx(disp["b"], rel=1e-12)
    assert row["mean_disparity_error"] == pytest.approx(np.mean(list(disp.values())), rel=1e-12)
    assert row["max_abs_pairwise_disparity_error"] == pytest.approx(
        max(abs(v) for v in M.pairwise_disparity_error(X, s, pca3).values()), rel=1e-12
    )
    assert row["group_separability"] == pytest.approx(
        M.group_separability(X, s, pca3, random_state=SEED)
    )
    assert row["accuracy"] == pytest.approx(
        M.downstream_fairness(X, y, s, pca3, random_state=SEED)["accuracy"]
    )
    no_y = M.report(X, s, {"pca2": pca2}, bandwidth=1.0, random_state=SEED)
    assert "accuracy" not in no_y.columns
    assert no_y.loc["pca2", "mmd2"] == pytest.approx(M.mmd2(X, s, pca2, bandwidth=1.0))


# ----------------------------------------------------------------------------
# model-selection scorer
# ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    X, s = make_gaussian_groups(n_samples=400, n_features=6, random_state=0)
    return StandardScaler().fit_transform(X), s


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_scorer_matches_metrics(data):
    X, s = data
    est = RobustFairPCA(n_components=2, n_iter=50, random_state=0).fit(X, sensitive_features=s)
    pooled = ReconstructionScorer()(est, X, sensitive_features=s)
    assert pooled == pytest.approx(
        -(reconstruction_error(X, est) + reconstruction_error_gap(X, s, est)), rel=1e-12
    )
    grouped = ReconstructionScorer(center="group")(est, X, sensitive_features=s)
    P = np.eye(X.shape[1]) - est.components_.T @ est.components_
    errors = []
    for g in np.unique(s):
        A = X[s == g] - X[s == g].mean(axis=0)
        errors.append(np.mean(np.sum((A @ P) ** 2, axis=1)))
    are = np.mean(np.sum(((X - est.mean_) @ P) ** 2, axis=1))
    assert grouped == pytest.approx(-(are + max(errors) - min(errors)), rel=1e-12)
    # Held-out rows centred on each group's training mean (the authors' CV code).
    X_new, s_new = X[::2] + 0.3, s[::2]
    trained = ReconstructionScorer(center="train_group")(est, X_new, sensitive_features=s_new)
    errors = [
        np.mean(np.sum(((X_new[s_new == g] - X[s == g].mean(axis=0)) @ P) ** 2, axis=1))
        for g in np.unique(s)
    ]
    are = np.mean(np.sum(((X_new - est.mean_) @ P) ** 2, axis=1))
    assert trained == pytest.approx(-(are + max(errors) - min(errors)), rel=1e-12)
    with pytest.raises(ValueError, match="train_group' needs a fair-PCA estimator"):
        ReconstructionScorer(center="train_group")(PCA(2).fit(X), X, sensitive_features=s)
    with pytest.raises(ValueError, match="sensitive_features"):
        ReconstructionScorer()(est, X)
    with pytest.raises(ValueError, match="center"):
        ReconstructionScorer(center="median")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_scorer_in_gridsearch_with_routing(data):
    X, s = data
    with sklearn.config_context(enable_metadata_routing=True):
        est = RobustFairPCA(n_components=2, n_iter=20, n_restarts=1, random_state=0)
        est.set_fit_request(sensitive_features=True)
        search = GridSearchCV(
            est,
            {"lam": [0.0, 0.5]},
            scoring=ReconstructionScorer(),
            cv=KFold(3, shuffle=True, random_state=0),
        )
        search.fit(X, sensitive_features=s)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert np.all(search.cv_results_["mean_test_score"] < 0)


# ----------------------------------------------------------------------------
# invariances
# ----------------------------------------------------------------------------


def test_invariant_to_row_order_and_relabelling(data2):
    X, s = data2
    pca = PCA(2).fit(X)
    perm = np.random.default_rng(1).permutation(len(X))
    names = np.where(s == 0, "zeta", "alpha")
    base = M.group_reconstruction_error(X, s, pca)
    permuted = M.group_reconstruction_error(X[perm], names[perm], pca)
    assert list(permuted) == ["alpha", "zeta"]
    assert permuted["zeta"] == pytest.approx(base[0], rel=1e-12)
    assert permuted["alpha"] == pytest.approx(base[1], rel=1e-12)
    bw = 2.0
    assert M.mmd2(X[perm], names[perm], pca, bandwidth=bw) == pytest.approx(
        M.mmd2(X, s, pca, bandwidth=bw), rel=1e-10
    )


# ----------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------


def _bad_cases(X, s, pca):
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    Xinf = X.copy()
    Xinf[1, 1] = np.inf
    skew = pca.components_.copy()
    skew[1] += 0.1 * skew[0]
    return [
        (lambda: M.group_reconstruction_error(Xnan, s, pca), ValueError, "X"),
        (lambda: M.reconstruction_error(Xinf, pca), ValueError, "X"),
        (lambda: M.reconstruction_error(X.astype(str).astype(object) + "a", pca), TypeError, "X"),
        (lambda: M.group_reconstruction_error(X, np.zeros(len(X)), pca), ValueError, "sensitive"),
        (lambda: M.group_reconstruction_error(X, s[:-1], pca), ValueError, "sensitive_features"),
        (lambda: M.marginal_loss(X, s, skew), ValueError, "projection.*orthonormal"),
        (lambda: M.marginal_loss(X, s, pca.components_[:, :-1]), ValueError, "projection"),
        (lambda: M.marginal_loss(X, s, pca.components_.T), ValueError, "projection"),
        (lambda: M.reconstruction_error(X, pca.components_[0]), ValueError, "projection"),
        (lambda: M.reconstruction_error(X, "pca"), TypeError, "projection"),
        (lambda: M.reconstruction_error(X, None), TypeError, "projection"),
        (lambda: M.reconstruction_error(X, PCA(2)), NotFittedError, "projection"),
        (lambda: M.reconstruction_error(X, StubProjection()), NotFittedError, "projection"),
        (lambda: M.reconstruction_error(X, StandardScaler().fit(X)), TypeError, "components_"),
        (lambda: M.reconstruction_error(X[:, :-1], pca), ValueError, "X has"),
        (
            lambda: M.reconstruction_error(X, StubProjection(1, pca.components_[:1], [1.5]).fit(X)),
            ValueError,
            "component_scales_",
        ),
        (lambda: M.marginal_loss(X, s, pca, n_components=99), ValueError, "n_components"),
        (lambda: M.marginal_loss(X, s, pca, n_components=1.5), TypeError, "n_components"),
        (lambda: M.mmd2(X, s, pca, method="fast"), ValueError, "method"),
        (lambda: M.mmd2(X, s, pca, bandwidth=-1.0), ValueError, "bandwidth"),
        (lambda: M.mmd2(X, s, pca, bandwidth="auto"), TypeError, "bandwidth"),
        (lambda: M.mmd2(X, s, pca, block_size=0), ValueError, "block_size"),
        (lambda: M.mmd2(X, s, pca, method="rff", n_random_features=0), ValueError, "n_random"),
        (lambda: M.mmd_bandwidth(X, 0), ValueError, "n_components"),
        (lambda: M.mmd_bandwidth(np.ones((10, 3)), 1), ValueError, "bandwidth explicitly"),
        (lambda: M.downstream_fairness(X, s * 0 + np.arange(len(s)) % 3, s, pca), ValueError, "y"),
        (lambda: M.downstream_fairness(X, s[:-1], s, pca), ValueError, "y"),
        (
            lambda: M.downstream_fairness(X, np.where(s == 0, "no", None), s, pca),
            ValueError,
            "y contains missing labels",
        ),
        (
            lambda: M.downstream_fairness(X, np.where(s == 0, "no", object()), s, pca),
            TypeError,
            "y mixes label types",
        ),
        (
            lambda: M.downstream_fairness(X, np.where(s == 0, 0.0, np.nan), s, pca),
            ValueError,
            "y contains NaN",
        ),
        (lambda: M.downstream_fairness(X, s, s, pca), ValueError, "only one class"),
        (
            lambda: M.downstream_fairness(X, X[:, 0] > 0, s, pca, classifier="forest"),
            ValueError,
            "classifier",
        ),
        (
            lambda: M.downstream_fairness(X, X[:, 0] > 0, s, pca, classifier=PCA()),
            TypeError,
            "classifier",
        ),
        (lambda: M.downstream_fairness(X, X[:, 0] > 0, s, pca, cv=1), ValueError, "cv"),
        (
            lambda: M.downstream_fairness(X, X[:, 0] > 0, s, pca, pos_label=7),
            ValueError,
            "pos_label",
        ),
        (lambda: M.group_separability(X, s, pca, classifier="svm"), ValueError, "classifier"),
        (lambda: M.group_separability(X, s, pca, cv="five"), TypeError, "cv"),
        (lambda: M.report(X, s, [pca]), TypeError, "projections"),
        (lambda: M.report(X, s, {"bad": skew}), ValueError, "projections\\['bad'\\]"),
    ]


def test_bad_inputs_raise_clear_errors(data2):
    X, s = data2
    pca = PCA(2).fit(X)
    for call, exc, match in _bad_cases(X, s, pca):
        with pytest.raises(exc, match=match):
            call()


def test_small_group_for_cv_is_reported():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    s = np.array([0] * 27 + [1] * 3)
    with pytest.raises(ValueError, match="sensitive_features needs at least 5 rows"):
        M.group_separability(X, s, np.eye(3)[:2])


def test_optional_dependencies_not_imported_and_errors_name_extras(monkeypatch):
    code = (
        "import sys\n"
        "for m in ('pandas', 'fairlearn', 'matplotlib'):\n"
        "    sys.modules[m] = None\n"
        "import fairpca.metrics\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"fairpca\[datasets\]"):
        _import_pandas()
    monkeypatch.setitem(sys.modules, "fairlearn", None)
    monkeypatch.setitem(sys.modules, "fairlearn.metrics", None)
    with pytest.raises(ImportError, match=r"fairpca\[fairness\]"):
        _import_fairlearn_metrics()


def test_representation_metrics_accept_any_fitted_transformer():
    """mmd2, separability and the report read transform(X) of a non-projection."""
    from fairpca import FairKernelPCA, LinearErasure
    from fairpca.metrics import group_separability, mmd2, report

    X, s = make_gaussian_groups(n_samples=400, n_features=5, random_state=7)
    erasure = LinearErasure().fit(X, sensitive_features=s)
    kernel = FairKernelPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    for est in (erasure, kernel):
        Z = est.transform(X)
        # The same numbers through the array route, on the representation itself.
        identity = np.eye(Z.shape[1])
        assert mmd2(X, s, est, bandwidth=1.3) == pytest.approx(
            mmd2(Z, s, identity, bandwidth=1.3), rel=1e-12
        )
        assert group_separability(X, s, est, random_state=0) == pytest.approx(
            group_separability(Z, s, identity, random_state=0), rel=1e-12
        )
    table = report(X, s, {"kernel": kernel, "erasure": erasure}, random_state=0)
    assert table["reconstruction_error"].isna().all()
    assert table.loc["kernel", "n_components"] == 2 and table.loc["erasure", "n_components"] == 5
    with pytest.raises(NotFittedError):
        mmd2(X, s, LinearErasure())


@pytest.mark.parametrize("seed", range(4))
def test_downstream_gaps_equal_fairlearns(seed):
    import fairlearn.metrics as flm

    from fairpca.metrics._classifier import prediction_scores

    rng = np.random.default_rng(seed)
    n, k = 300, 2 + seed
    codes = rng.integers(0, k, n)
    y = rng.integers(0, 2, n)
    predicted = (rng.random(n) < 0.2 + 0.15 * codes).astype(int)
    scores = prediction_scores(y, predicted, codes)
    for metric in (
        "demographic_parity_difference",
        "equal_opportunity_difference",
        "equalized_odds_difference",
    ):
        expected = getattr(flm, metric)(y, predicted, sensitive_features=codes)
        assert scores[metric] == pytest.approx(expected, abs=1e-12)
    # A group without positives: the rates it needs are undefined.
    y[codes == 0] = 0
    scores = prediction_scores(y, predicted, codes)
    assert np.isnan(scores["equal_opportunity_difference"])
    assert np.isnan(scores["equalized_odds_difference"])
    assert np.isfinite(scores["demographic_parity_difference"])


def test_held_out_downstream_classifier_trains_on_the_training_representation():
    from fairpca.metrics._classifier import (
        group_prediction_rates,
        held_out_predictions,
        prediction_scores,
    )

    X, s, y = make_gaussian_groups(n_samples=400, random_state=1, return_target=True)
    pca = PCA(n_components=2).fit(X[:300])
    classifier = LogisticRegression()
    predicted = held_out_predictions(pca, X[:300], y[:300], X[300:], classifier)
    by_hand = LogisticRegression().fit(pca.transform(X[:300]), y[:300])
    np.testing.assert_array_equal(predicted, by_hand.predict(pca.transform(X[300:])))
    assert not hasattr(classifier, "coef_")  # cloned, not fitted in place
    scores = prediction_scores(y[300:], predicted, s[300:])
    assert scores["accuracy"] == np.mean(predicted == y[300:])
    assert scores["positive_rate"] == np.mean(predicted)
    rates = group_prediction_rates(y[300:], predicted, s[300:])
    for g in np.unique(s):
        rows = s[300:] == g
        assert rates["positive_rate"][g] == pytest.approx(np.mean(predicted[rows]), abs=1e-15)
        assert rates["accuracy"][g] == pytest.approx(
            np.mean(predicted[rows] == y[300:][rows]), abs=1e-15
        )
    gap = max(rates["positive_rate"].values()) - min(rates["positive_rate"].values())
    assert scores["demographic_parity_difference"] == pytest.approx(gap, abs=1e-15)


def _registry_evaluation(y=None, projection=None):
    from fairpca.metrics._registry import Evaluation

    X, s, target = make_gaussian_groups(n_samples=240, random_state=2, return_target=True)
    projection = PCA(n_components=2).fit(X) if projection is None else projection
    return Evaluation(
        X,
        s,
        projection,
        y=target if y else None,
        bandwidth=M.mmd_bandwidth(X, 2, random_state=0),
        random_state=0,
        cv=3,
    )


def test_every_registry_row_is_computed_on_tiny_data_as_its_direction_says():
    from fairpca.metrics._registry import COLUMNS, METRICS

    evaluation = _registry_evaluation(y=True)
    direct = {
        "explained_variance_ratio": M.explained_variance_ratio(evaluation.X, evaluation.projection),
        "reconstruction_error_gap": M.reconstruction_error_gap(
            evaluation.X, evaluation.s, evaluation.projection
        ),
        "max_marginal_loss": max(
            M.marginal_loss(evaluation.X, evaluation.s, evaluation.projection).values()
        ),
        "mmd2": M.mmd2(
            evaluation.X, evaluation.s, evaluation.projection, bandwidth=evaluation.bandwidth
        ),
    }
    for key, metric in METRICS.items():
        assert metric.key == key and metric.definition and metric.scale
        assert metric.direction in ("lower", "higher", None)
        value = metric.function(evaluation)
        values = list(value.values()) if metric.per_group else [value]
        assert values and np.all(np.isfinite(values)), key
        if key in direct:
            assert value == pytest.approx(direct[key], rel=1e-12)
        if metric.fairness:
            assert metric.direction == "lower" and metric.direction_text == "lower is fairer"
            assert metric.worse(1.0, 0.5) and not metric.worse(0.5, 1.0)
        if metric.bootstrap:
            assert metric.fairness and not metric.per_group
    assert METRICS["accuracy"].worse(0.5, 0.9)  # higher is better
    for column in COLUMNS.values():
        assert column.function is None and column.direction is None
    # Unknown needs are refused when the row is written.
    from fairpca.metrics._registry import Metric

    with pytest.raises(ValueError, match="unknown needs"):
        Metric("bad", None, "d", None, "", needs=frozenset({"labels"}))


def test_a_metric_added_to_the_registry_appears_in_the_report_with_its_needs(monkeypatch):
    from fairpca import LinearErasure
    from fairpca.metrics._registry import METRICS, Metric, legend

    X, s, y = make_gaussian_groups(n_samples=240, random_state=2, return_target=True)
    calls = []

    def toy(evaluation):
        calls.append(evaluation.y is not None)
        return 0.25

    projections = {"PCA": PCA(2).fit(X), "LE": LinearErasure().fit(X, sensitive_features=s)}
    linear = Metric(
        "toy", toy, "a test metric", "lower", "fraction", needs=frozenset({"linear_projection"})
    )
    monkeypatch.setitem(METRICS, "toy", linear)
    table = M.report(X, s, projections, random_state=0, cv=3)
    assert table.loc["PCA", "toy"] == 0.25 and np.isnan(table.loc["LE", "toy"])
    assert calls == [False]  # not called for a transformer that is not a linear projection
    assert "toy: a test metric (lower is better; fraction)" in legend(table.columns)
    # A row that needs the target is left out without one, present with one.
    monkeypatch.setitem(METRICS, "toy", dataclasses.replace(linear, needs=frozenset({"y"})))
    assert "toy" not in M.report(X, s, projections, random_state=0, cv=3)
    with_y = M.report(X, s, projections, y=y, random_state=0, cv=3)
    assert (with_y["toy"] == 0.25).all()


@pytest.mark.parametrize("n_groups", [2, 4])
def test_resampled_gaps_equal_fairlearns_on_each_resample(n_groups):
    # The bootstrap's downstream gaps, every resample at once from the resamples' counts,
    # equal fairlearn's on the resampled rows (a sample of the resamples).
    import fairlearn.metrics as flm

    from fairpca.metrics._classifier import resampled_prediction_gaps

    rng = np.random.default_rng(n_groups)
    n = 200
    codes = np.sort(rng.integers(0, n_groups, n))
    y = rng.integers(0, 2, n)
    predicted = (rng.random(n) < 0.2 + 0.15 * codes).astype(int)
    rows = np.stack(
        [
            np.concatenate(
                [
                    rng.choice(np.flatnonzero(codes == a), (codes == a).sum())
                    for a in range(n_groups)
                ]
            )
            for _ in range(12)
        ]
    )
    counts = np.stack([np.bincount(r, minlength=n) for r in rows])
    gaps = resampled_prediction_gaps(y, predicted, codes, counts)
    for r in range(0, 12, 3):
        for metric, values in gaps.items():
            expected = getattr(flm, metric)(
                y[rows[r]], predicted[rows[r]], sensitive_features=codes[rows[r]]
            )
            assert values[r] == pytest.approx(expected, abs=1e-12), (metric, r)
    # A resample in which a group has no positive: the rates it needs are undefined.
    y[codes == 0] = 0
    gaps = resampled_prediction_gaps(y, predicted, codes, counts)
    assert np.isnan(gaps["equal_opportunity_difference"]).all()
    assert np.isnan(gaps["equalized_odds_difference"]).all()
    assert np.isfinite(gaps["demographic_parity_difference"]).all()
