"""QuadraticErasure against the defining properties of the Gaussian transport maps."""

import numpy as np
import pytest
import scipy.linalg
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import fairpca
from fairpca.quadratic_erasure import QuadraticErasure


def _groups(n=1200, p=4, k=3, seed=0):
    """Groups with different means and covariances."""
    rng = np.random.default_rng(seed)
    s = rng.choice(k, size=n, p=np.linspace(1.0, 2.0, k) / np.linspace(1.0, 2.0, k).sum())
    X = np.empty((n, p))
    for a in range(k):
        rows = s == a
        L = rng.normal(size=(p, p)) * np.geomspace(3.0, 0.3, p)
        X[rows] = rng.normal(size=(rows.sum(), p)) @ L + rng.normal(size=p) * 2
    return X, s


def _cov(X):
    return np.cov(X, rowvar=False, bias=True)


def test_every_group_gets_the_target_mean_and_covariance():
    X, s = _groups()
    est = QuadraticErasure().fit(X, sensitive_features=s)
    Y = est.transform(X, sensitive_features=s)
    scale = np.abs(_cov(X)).max()
    for a in range(3):
        np.testing.assert_allclose(Y[s == a].mean(0), est.mean_, atol=1e-10 * np.abs(X).max())
        np.testing.assert_allclose(_cov(Y[s == a]), est.covariance_, atol=1e-9 * scale)
    np.testing.assert_allclose(est.mean_, X.mean(0), rtol=1e-12)


def test_maps_are_the_transport_maps_to_the_barycenter():
    X, s = _groups(seed=1)
    est = QuadraticErasure().fit(X, sensitive_features=s)
    w = np.bincount(s) / len(s)
    covs = [_cov(X[s == a]) for a in range(3)]
    target = est.covariance_
    # The barycenter's fixed-point equation, with SciPy's matrix square roots.
    root = scipy.linalg.sqrtm(target).real
    fixed = sum(
        wa * scipy.linalg.sqrtm(root @ C @ root).real for wa, C in zip(w, covs, strict=True)
    )
    np.testing.assert_allclose(fixed, target, atol=1e-8 * np.abs(target).max())
    # At the barycenter the maps from it to the groups (the inverses) average to I.
    inverses = np.linalg.inv(est.transport_)
    np.testing.assert_allclose(np.einsum("a,aij->ij", w, inverses), np.eye(4), atol=1e-8)
    for A, C in zip(est.transport_, covs, strict=True):
        # Symmetric positive semidefinite (the gradient of a convex function) and
        # pushing C to the target: the Gaussian optimal-transport (Monge) map.
        np.testing.assert_allclose(A, A.T, atol=1e-12)
        assert np.linalg.eigvalsh(A).min() > 0
        np.testing.assert_allclose(A @ C @ A, target, atol=1e-9 * np.abs(target).max())
        # The closed form, computed with SciPy.
        r = scipy.linalg.sqrtm(C).real
        ri = np.linalg.inv(r)
        np.testing.assert_allclose(A, ri @ scipy.linalg.sqrtm(r @ target @ r).real @ ri, atol=1e-8)


def test_transport_moves_less_than_any_other_map_to_the_target():
    # Among maps B with B C B^T = T the OT map minimises E||B y - y||^2.
    X, s = _groups(seed=2)
    est = QuadraticErasure().fit(X, sensitive_features=s)
    C, A, T = _cov(X[s == 0]), est.transport_[0], est.covariance_
    rng = np.random.default_rng(3)
    cost = np.trace((A - np.eye(4)) @ C @ (A - np.eye(4)))
    rc, rt = scipy.linalg.sqrtm(C).real, scipy.linalg.sqrtm(T).real
    for _ in range(20):
        R = np.linalg.qr(rng.normal(size=(4, 4)))[0]  # other maps: rt R rc^{-1}
        B = rt @ R @ np.linalg.inv(rc)
        np.testing.assert_allclose(B @ C @ B.T, T, atol=1e-8 * np.abs(T).max())
        assert cost <= np.trace((B - np.eye(4)) @ C @ (B - np.eye(4)).T) + 1e-9


def test_partial_fit_and_weights_equal_fit():
    X, s = _groups(seed=4)
    ref = QuadraticErasure().fit(X, sensitive_features=s)
    streamed = QuadraticErasure()
    for start in range(0, len(X), 400):
        streamed.partial_fit(X[start : start + 400], sensitive_features=s[start : start + 400])
    np.testing.assert_allclose(streamed.transport_, ref.transport_, atol=1e-9)
    w = np.random.default_rng(5).integers(1, 3, size=len(X))
    weighted = QuadraticErasure().fit(X, sensitive_features=s, sample_weight=w)
    rows = np.repeat(np.arange(len(X)), w)
    repeated = QuadraticErasure().fit(X[rows], sensitive_features=s[rows])
    np.testing.assert_allclose(weighted.transport_, repeated.transport_, atol=1e-9)


def test_transform_needs_the_groups_and_known_labels():
    X, s = _groups(n=300)
    est = QuadraticErasure().fit(X, sensitive_features=s)
    with pytest.raises(ValueError, match="needs sensitive_features"):
        est.transform(X)
    with pytest.raises(ValueError, match=r"group\(s\) \[9\]"):
        est.transform(X[:2], sensitive_features=[0, 9])
    with pytest.warns(fairpca.GroupBlindFitWarning, match="identity edit"):
        blind = QuadraticErasure().fit(X)
    np.testing.assert_array_equal(blind.transform(X), X)
    with pytest.raises(ValueError, match="fitted without sensitive_features"):
        blind.transform(X, sensitive_features=s)
    # compact keeps what transform needs.
    Y = est.transform(X, sensitive_features=s)
    np.testing.assert_array_equal(est.compact().transform(X, sensitive_features=s), Y)
    with pytest.raises(ValueError, match="compact"):
        est.partial_fit(X, sensitive_features=s)


@pytest.mark.parametrize(
    ("params", "error"),
    [({"max_iter": 0}, ValueError), ({"max_iter": 2.5}, TypeError), ({"tol": -1.0}, ValueError)],
)
def test_parameters_checked_before_any_work(params, error):
    X, s = _groups(n=200)
    est = QuadraticErasure().fit(X, sensitive_features=s)
    before = est.transport_.copy()
    with pytest.raises(error):
        est.set_params(**params).fit(X[:100], sensitive_features=s[:100])
    np.testing.assert_array_equal(est.transport_, before)


def test_convergence_warning():
    X, s = _groups(n=400, seed=6)
    with pytest.warns(ConvergenceWarning, match="did not reach"):
        est = QuadraticErasure(max_iter=1).fit(X, sensitive_features=s)
    assert est.n_barycenter_iter_ == 1


def test_pipeline_routes_the_groups_to_transform():
    X, s = _groups(n=600, seed=7)
    y = (X[:, 0] > 0).astype(int)
    with sklearn.config_context(enable_metadata_routing=True):
        eraser = QuadraticErasure().set_fit_request(sensitive_features=True)
        eraser.set_transform_request(sensitive_features=True)
        pipe = make_pipeline(eraser, LogisticRegression()).fit(X, y, sensitive_features=s)
        scores = pipe.decision_function(X, sensitive_features=s)
    Y = pipe[0].transform(X, sensitive_features=s)
    np.testing.assert_allclose(scores, pipe[1].decision_function(Y), atol=1e-10)
