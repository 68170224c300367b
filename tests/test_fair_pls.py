"""FairPLS against independent solves of its problem, and the package's invariants for it.

The independent answers are computed here from the data rows with numpy
(covariances by ``np.cov``-style sums, ``eigh``/``svd``, NIPALS deflation of
the data matrix by hand) and from scikit-learn's ``PLSRegression``; none reads
the estimator's moments. FairPLS needs ``y``, so the registry-wide tests leave
it out (their filter ``supervised=False``) and its versions of them are here.
"""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.cross_decomposition import PLSRegression

import fairpca
from fairpca import FairPLS

RNG = np.random.default_rng(45)


def _data(n=240, p=6, n_groups=2, n_targets=1, seed=0):
    """Correlated features, shifted group means, a target driven by a few features."""
    rng = np.random.default_rng(seed)
    s = rng.permutation(np.arange(n) % n_groups)
    X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p)) + rng.normal(size=(n_groups, p))[s]
    Y = X @ rng.normal(size=(p, n_targets)) + rng.normal(size=(n, n_targets)) + 2.0 * s[:, None]
    return X, s, (Y[:, 0] if n_targets == 1 else Y)


def _fit(est, X, y, s=None, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fairpca.GroupBlindFitWarning)
        return est.fit(X, y, sensitive_features=s, **kwargs)


def _cosines(A, B):
    """Cosines of the principal angles between the column spans of A and B."""
    qa, qb = np.linalg.qr(A)[0], np.linalg.qr(B)[0]
    return np.linalg.svd(qa.T @ qb, compute_uv=False)


def _null_basis(X, s):
    """Orthonormal basis of the directions orthogonal to every group-mean difference."""
    shifts = np.array([X[s == a].mean(axis=0) - X.mean(axis=0) for a in np.unique(s)])
    U, singular, _ = np.linalg.svd(shifts.T, full_matrices=True)
    rank = int(np.sum(singular > 1e-10 * singular[0]))
    return U[:, rank:]


def _nipals_by_hand(Xc, Yc, d):
    """PLS weights by deflating the data matrix row-wise (exact top singular vectors)."""
    E = Xc.copy()
    weights = []
    for _ in range(d):
        w = np.linalg.svd(E.T @ Yc, full_matrices=False)[0][:, 0]
        t = E @ w
        E = E - np.outer(t, E.T @ t / (t @ t))
        weights.append(w)
    return np.array(weights).T


# --------------------------------------------------------------- the problem solved
@pytest.mark.parametrize("n_groups", [2, 3])
def test_first_component_is_the_top_eigenvector_on_the_constraint_null_space(n_groups):
    X, s, y = _data(n_groups=n_groups, seed=n_groups)
    est = FairPLS(n_components=1).fit(X, y, sensitive_features=s)
    N = _null_basis(X, s)
    c = (X - X.mean(0)).T @ (y - y.mean()) / len(y)
    values, vectors = np.linalg.eigh(N.T @ np.outer(c, c) @ N)
    expected = N @ vectors[:, -1]
    assert abs(est.components_[0] @ expected) == pytest.approx(1.0, abs=1e-10)
    assert est.target_covariance_[0] == pytest.approx(values[-1], rel=1e-10)


def test_no_random_feasible_direction_beats_the_first_component():
    X, s, y = _data(n_groups=3, seed=7)
    est = FairPLS(n_components=1).fit(X, y, sensitive_features=s)
    N = _null_basis(X, s)
    Xc, yc = X - X.mean(0), y - y.mean()
    U = N @ RNG.normal(size=(N.shape[1], 5000))
    U /= np.linalg.norm(U, axis=0)
    covariances = ((Xc @ U).T @ yc / len(y)) ** 2
    best = ((Xc @ est.components_[0]) @ yc / len(y)) ** 2
    assert covariances.max() <= best * (1 + 1e-12)
    assert best == pytest.approx(est.target_covariance_[0], rel=1e-10)


@pytest.mark.parametrize(("n_groups", "n_targets"), [(2, 1), (3, 1), (3, 2)])
def test_later_components_follow_the_deflation_done_by_hand(n_groups, n_targets):
    X, s, Y = _data(n_groups=n_groups, n_targets=n_targets, seed=11)
    d = 3
    est = FairPLS(n_components=d).fit(X, Y, sensitive_features=s)
    N = _null_basis(X, s)
    Xc = (X - X.mean(0)) @ N @ N.T  # X projected off the mean differences
    Yc = (Y - Y.mean(0)).reshape(len(X), -1)
    expected = _nipals_by_hand(Xc, Yc, d)
    for j in range(d):
        assert abs(est.components_[j] @ expected[:, j]) == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(d), atol=1e-12)


@pytest.mark.parametrize("n_groups", [2, 3])
def test_projected_group_means_are_equal(n_groups):
    X, s, y = _data(n_groups=n_groups, seed=5)
    est = FairPLS(n_components=3).fit(X, y, sensitive_features=s)
    Z = est.transform(X)
    means = np.array([Z[s == a].mean(axis=0) for a in range(n_groups)])
    np.testing.assert_allclose(means - Z.mean(axis=0), 0.0, atol=1e-12 * np.abs(Z).max())
    assert est.mean_gap_ < 1e-12 * np.linalg.norm(X.std(0))
    assert est.n_constraints_ == n_groups - 1
    # Plain PLS on these data does not have equal means: the constraint did something.
    plain = FairPLS(n_components=3, mean_penalty=0.0).fit(X, y, sensitive_features=s)
    assert plain.mean_gap_ > 0.1


@pytest.mark.parametrize("n_targets", [1, 3])
def test_without_groups_or_penalty_it_is_scikit_learn_pls(n_targets):
    X, s, Y = _data(n_targets=n_targets, seed=13)
    d = 3
    ref = PLSRegression(n_components=d, scale=False, max_iter=5000, tol=1e-15).fit(X, Y)
    with pytest.warns(fairpca.GroupBlindFitWarning):
        blind = FairPLS(n_components=d).fit(X, Y)
    unpenalised = FairPLS(n_components=d, mean_penalty=0.0).fit(X, Y, sensitive_features=s)
    for est in (blind, unpenalised):
        np.testing.assert_allclose(_cosines(est.components_.T, ref.x_rotations_), 1.0, atol=1e-9)
        # scikit-learn's NIPALS iterates for PLS2: agreement to its stopping rule's level.
        np.testing.assert_allclose(
            est.predict(X),
            ref.predict(X).reshape(est.predict(X).shape),
            atol=1e-7 * np.abs(Y).max(),
        )
    assert blind.groups_ is None and blind.predict(X).ndim == (1 if n_targets == 1 else 2)


def test_penalised_first_component_and_the_limit_of_the_penalty():
    X, s, y = _data(n_groups=3, seed=17)
    Xc, yc = X - X.mean(0), y - y.mean()
    c = Xc.T @ yc / len(y)
    w = np.bincount(s) / len(s)
    B = np.array([np.sqrt(w[a]) * (X[s == a].mean(0) - X.mean(0)) for a in range(3)]).T
    gaps = []
    for penalty in (0.5, 5.0, 50.0):
        est = FairPLS(n_components=1, mean_penalty=penalty).fit(X, y, sensitive_features=s)
        expected = np.linalg.eigh(np.outer(c, c) - penalty * B @ B.T)[1][:, -1]
        assert abs(est.components_[0] @ expected) == pytest.approx(1.0, abs=1e-10)
        gaps.append(est.mean_gap_)
    assert gaps[0] > gaps[1] > gaps[2]
    constrained = FairPLS(n_components=3).fit(X, y, sensitive_features=s)
    large = FairPLS(n_components=3, mean_penalty=1e10).fit(X, y, sensitive_features=s)
    np.testing.assert_allclose(
        _cosines(large.components_.T, constrained.components_.T), 1.0, atol=1e-6
    )


def test_predict_is_least_squares_on_the_components():
    X, s, y = _data(n_groups=3, seed=19)
    est = FairPLS(n_components=2).fit(X, y, sensitive_features=s)
    Z = np.c_[np.ones(len(X)), est.transform(X)]
    coef = np.linalg.lstsq(Z, y, rcond=None)[0]
    np.testing.assert_allclose(est.predict(X), Z @ coef, atol=1e-9 * np.abs(y).max())


def test_class_labels_are_one_hot_encoded_and_predicted():
    X, s, y = _data(seed=23)
    labels = np.where(y > np.median(y), "high", "low")
    est = FairPLS(n_components=2).fit(X, labels, sensitive_features=s)
    numeric = FairPLS(n_components=2).fit(X, (labels == "high") * 1.0, sensitive_features=s)
    # Two classes: the indicator columns are minus each other once centred.
    np.testing.assert_allclose(np.abs(est.components_), np.abs(numeric.components_), atol=1e-10)
    assert list(est.classes_) == ["high", "low"]
    predicted = est.predict(X)
    assert set(predicted) <= {"high", "low"}
    expected = np.where(numeric.predict(X) > 0.5, "high", "low")
    np.testing.assert_array_equal(predicted, expected)


def test_constant_target_falls_back_to_fair_pca_with_a_warning():
    X, s, _ = _data(seed=29)
    with pytest.warns(UserWarning, match="no covariance with X"):
        est = FairPLS(n_components=2).fit(X, np.full(len(X), 3.0), sensitive_features=s)
    pca = fairpca.MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=s)
    np.testing.assert_allclose(_cosines(est.components_.T, pca.components_.T), 1.0, atol=1e-9)
    np.testing.assert_array_equal(est.target_covariance_, 0.0)


# ------------------------------------------------------------ moments, Dask, streams
def test_partial_fit_dask_sparse_and_weights_equal_the_fit():
    X, s, Y = _data(n=300, n_groups=3, n_targets=2, seed=31)
    ref = FairPLS(n_components=3).fit(X, Y, sensitive_features=s)
    streamed = FairPLS(n_components=3)
    for start in range(0, 300, 100):
        rows = slice(start, start + 100)
        streamed.partial_fit(X[rows], Y[rows], sensitive_features=s[rows])
    sparse = FairPLS(n_components=3).fit(scipy.sparse.csr_matrix(X), Y, sensitive_features=s)
    for other in (streamed, sparse):
        np.testing.assert_allclose(other.components_, ref.components_, atol=1e-10)
        np.testing.assert_allclose(other.coef_, ref.coef_, atol=1e-10)
    counts = RNG.integers(0, 3, size=300)
    weighted = FairPLS(n_components=3).fit(X, Y, sensitive_features=s, sample_weight=counts)
    repeated = FairPLS(n_components=3).fit(
        np.repeat(X, counts, 0), np.repeat(Y, counts, 0), sensitive_features=np.repeat(s, counts)
    )
    np.testing.assert_allclose(weighted.components_, repeated.components_, atol=1e-10)
    da = pytest.importorskip("dask.array")
    lazy = FairPLS(n_components=3).fit(
        da.from_array(X, chunks=(70, -1)), da.from_array(Y, chunks=(70, -1)), sensitive_features=s
    )
    np.testing.assert_allclose(lazy.components_, ref.components_, atol=1e-10)
    np.testing.assert_allclose(lazy.predict(X), ref.predict(X), atol=1e-9)


def test_common_offset_and_scale_of_the_target():
    X, s, y = _data(seed=37)
    ref = FairPLS(n_components=3).fit(X, y, sensitive_features=s)
    moved = FairPLS(n_components=3).fit(X + 1e3, 10.0 * y - 4.0, sensitive_features=s)
    np.testing.assert_allclose(moved.components_, ref.components_, atol=1e-9)
    np.testing.assert_allclose(moved.predict(X + 1e3), 10.0 * ref.predict(X) - 4.0, rtol=1e-8)


# ------------------------------------------------------- the package's invariants
def test_bad_input_is_refused_before_the_fit_and_changes_nothing():
    X, s, y = _data(seed=41)
    est = FairPLS(n_components=2).fit(X, y, sensitive_features=s)
    before = est.components_.copy()
    cases = [
        ({"y": None}, ValueError, "requires y to be passed"),
        ({"y": y[:10]}, ValueError, "one entry"),
        ({"y": np.where(y > 0, np.nan, y)}, ValueError, "NaN"),
        ({"n_components": 6}, ValueError, "dimensions left"),
        ({"n_components": 1.5}, TypeError, "n_components"),
        ({"mean_penalty": -1.0}, ValueError, "mean_penalty"),
        ({"attributes": "both"}, ValueError, "attributes"),
    ]
    for change, error, match in cases:
        params = {k: v for k, v in change.items() if k != "y"}
        target = change.get("y", y)
        with pytest.raises(error, match=match):
            est.set_params(**params).fit(X, target, sensitive_features=s)
        np.testing.assert_array_equal(est.components_, before)
        est.set_params(n_components=2, mean_penalty=np.inf, attributes="intersectional")
    with pytest.raises(TypeError, match="numeric y"):
        est.partial_fit(X, np.where(y > 0, "a", "b"), sensitive_features=s)
    np.testing.assert_array_equal(est.components_, before)


def test_without_groups_warns_and_refuses_when_required():
    X, s, y = _data(seed=43)
    with pytest.warns(fairpca.GroupBlindFitWarning, match=r"FairPLS\.fit was called"):
        FairPLS().fit(X, y)
    est = FairPLS(require_groups=True)
    with pytest.raises(ValueError, match=r"FairPLS\(require_groups=True\)"):
        est.fit(X, y)
    assert not hasattr(est, "components_")


def test_clone_pickle_feature_names_and_compact():
    X, s, y = _data(seed=47)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    est = FairPLS(n_components=2).fit(frame, y, sensitive_features=s)
    assert list(est.get_feature_names_out()) == ["fairpls0", "fairpls1"]
    assert clone(est).get_params() == est.get_params()
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.transform(frame), est.transform(frame))
    predicted = est.predict(frame)
    est.compact()
    assert not hasattr(est, "moments_")
    np.testing.assert_array_equal(est.predict(frame), predicted)


def test_registry_lists_it_as_supervised_and_compare_only_with_a_target():
    from fairpca._methods import make_methods

    caps = fairpca.estimator_capabilities("FairPLS")
    assert caps.supervised and caps.linear_projection and caps.partial_fit and caps.dask
    assert fairpca.all_estimators(supervised=True) == [FairPLS]
    assert "FairPLS" not in make_methods(2, 0)
    assert "FairPLS" in make_methods(2, 0, supervised=True)
    with pytest.raises(ValueError, match="need.s. a target"):
        make_methods(2, 0, names=["FairPLS"])


def test_cli_compare_with_a_target_scores_it(tmp_path):
    from click.testing import CliRunner

    from fairpca.cli import cli

    X, s, y = _data(n=300, p=5, seed=53)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(5)])
    frame["sex"] = np.where(s == 0, "male", "female")
    frame["label"] = np.where(y > np.median(y), "yes", "no")
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "report"
    args = ["compare", "--data", str(path), "--sensitive", "sex", "--target", "label"]
    args += ["--methods", "FairPLS,MeanMatchingFairPCA", "-d", "2", "--no-by-d"]
    result = CliRunner().invoke(cli, [*args, "--output", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "comparison.csv", index_col="method")
    assert {"PCA", "FairPLS", "MeanMatchingFairPCA"} <= set(table.index)
    row = table.loc["FairPLS"]
    assert row["status"] == "fitted"
    assert np.isfinite(row["reconstruction_error"]) and np.isfinite(row["mmd2"])
    # The components chosen for the target predict it far better than the
    # variance components under the same constraint (0.86 against 0.58 here).
    assert row["accuracy"] > table.loc["MeanMatchingFairPCA", "accuracy"] + 0.1
    # Without a target the method is refused by name, before any fit.
    refused = CliRunner().invoke(
        cli, ["compare", "--data", str(path), "--sensitive", "sex", "--methods", "FairPLS"]
    )
    assert refused.exit_code == 2 and "need(s) a target" in refused.output
