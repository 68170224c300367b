import numpy as np
import pytest
from _costs import _assert_orthonormal, _log_cost, _trace_cost, _trace_squared_cost
from scipy.linalg import sqrtm

from fairpca.riemannian import (
    geometry,
    random_point,
    retract_polar,
    retract_qr,
    subspace_distance,
    tangent_projection,
)

RETRACTIONS = {"qr": retract_qr, "polar": retract_polar}


def _random_tangent(V, rng):
    return tangent_projection(V, rng.standard_normal(V.shape))


# --------------------------------------------------------------------------- geometry


@pytest.mark.parametrize(("p", "d"), [(6, 1), (7, 3), (5, 5)])
def test_tangent_projection_is_a_projection_onto_the_tangent_space(p, d):
    rng = np.random.default_rng(0)
    V = random_point(p, d, random_state=1)
    G = rng.standard_normal((p, d))
    xi = tangent_projection(V, G)
    # tangent: V^T xi is skew-symmetric
    np.testing.assert_allclose(V.T @ xi + xi.T @ V, 0.0, atol=1e-13)
    # idempotent
    np.testing.assert_allclose(tangent_projection(V, xi), xi, atol=1e-13)
    # tangent vectors V Omega + V_perp K (Omega skew) are left unchanged
    Omega = rng.standard_normal((d, d))
    Omega -= Omega.T
    K = rng.standard_normal((p, d))
    eta = V @ Omega + (K - V @ (V.T @ K))
    np.testing.assert_allclose(tangent_projection(V, eta), eta, atol=1e-13)
    # orthogonal: the residual G - xi is orthogonal to every tangent vector
    assert abs(np.vdot(G - xi, eta)) < 1e-12 * np.linalg.norm(G) * np.linalg.norm(eta)
    # normal vectors V S (S symmetric) are sent to zero
    S = rng.standard_normal((d, d))
    np.testing.assert_allclose(tangent_projection(V, V @ (S + S.T)), 0.0, atol=1e-13)


def test_tangent_projection_rejects_shape_mismatch_and_nan():
    V = random_point(5, 2, random_state=0)
    with pytest.raises(ValueError, match="G must have the same shape as V"):
        tangent_projection(V, np.zeros((5, 3)))
    G = np.zeros((5, 2))
    G[0, 0] = np.nan
    with pytest.raises(ValueError, match="G contains NaN"):
        tangent_projection(V, G)


@pytest.mark.parametrize("name", ["qr", "polar"])
def test_retraction_gives_orthonormal_columns_and_fixes_V(name):
    retract = RETRACTIONS[name]
    rng = np.random.default_rng(2)
    V = random_point(8, 3, random_state=3)
    for scale in (1e-3, 1.0, 10.0):
        W = retract(V, scale * _random_tangent(V, rng))
        assert W.shape == V.shape
        _assert_orthonormal(W)
    # R(V, 0) = V, also for points whose columns have arbitrary signs
    for signs in ([1, 1, 1], [-1, 1, -1], [-1, -1, -1]):
        Vs = V * np.array(signs, dtype=float)
        np.testing.assert_allclose(retract(Vs, np.zeros_like(Vs)), Vs, atol=1e-14)


@pytest.mark.parametrize("name", ["qr", "polar"])
def test_retraction_is_first_order(name):
    retract = RETRACTIONS[name]
    rng = np.random.default_rng(4)
    V = random_point(9, 4, random_state=5)
    xi = _random_tangent(V, rng)
    t = 1e-6
    derivative = (retract(V, t * xi) - retract(V, -t * xi)) / (2 * t)
    np.testing.assert_allclose(derivative, xi, rtol=0, atol=1e-8)


def test_qr_retraction_sign_fix_and_determinism():
    rng = np.random.default_rng(6)
    V = random_point(7, 3, random_state=7)
    xi = 2.0 * _random_tangent(V, rng)
    W = retract_qr(V, xi)
    # V + xi = W R with R upper triangular and positive diagonal
    R = W.T @ (V + xi)
    np.testing.assert_allclose(W @ R, V + xi, atol=1e-12)
    np.testing.assert_allclose(np.tril(R, -1), 0.0, atol=1e-12)
    assert np.all(np.diag(R) > 0)
    np.testing.assert_array_equal(retract_qr(V, xi), W)
    # the column signs follow the input continuously: negating a column of V + xi
    # (through V and xi) negates the same column of the result
    flip = np.array([1.0, -1.0, 1.0])
    np.testing.assert_allclose(retract_qr(V * flip, xi * flip), W * flip, atol=1e-12)


def test_polar_retraction_matches_formula_and_is_closest_point():
    rng = np.random.default_rng(8)
    V = random_point(10, 3, random_state=9)
    xi = 0.7 * _random_tangent(V, rng)
    W = retract_polar(V, xi)
    expected = (V + xi) @ np.linalg.inv(np.real(sqrtm(np.eye(3) + xi.T @ xi)))
    np.testing.assert_allclose(W, expected, atol=1e-12)
    # no other orthonormal matrix (here: QR factor, random points) is closer to V + xi
    dist = np.linalg.norm(W - (V + xi))
    assert dist <= np.linalg.norm(retract_qr(V, xi) - (V + xi)) + 1e-12
    for seed in range(5):
        assert dist < np.linalg.norm(random_point(10, 3, random_state=seed) - (V + xi))


# --------------------------------------------------------------------------- random_point


def test_random_point_orthonormal_and_reproducible():
    V = random_point(12, 4, random_state=0)
    assert V.shape == (12, 4)
    assert V.dtype == np.float64
    _assert_orthonormal(V)
    np.testing.assert_array_equal(V, random_point(12, 4, random_state=0))
    np.testing.assert_array_equal(V, random_point(12, 4, random_state=np.random.RandomState(0)))
    assert not np.allclose(V, random_point(12, 4, random_state=1))


def test_random_point_does_not_use_global_rng():
    np.random.seed(123)  # noqa: NPY002
    state = np.random.get_state()[1].copy()  # noqa: NPY002
    random_point(5, 2, random_state=0)
    random_point(5, 2, random_state=np.random.RandomState(1))
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_random_point_is_uniform():
    # Haar measure: E[V V^T] = (d / p) I and every entry is symmetric about 0
    # (without the sign fix, LAPACK's QR makes the first entry almost always one sign).
    rng = np.random.RandomState(0)
    samples = np.array([random_point(3, 2, random_state=rng) for _ in range(2000)])
    mean_proj = np.einsum("nij,nkj->ik", samples, samples) / len(samples)
    np.testing.assert_allclose(mean_proj, (2 / 3) * np.eye(3), atol=0.04)
    positive = np.mean(samples[:, 0, :] > 0, axis=0)
    assert np.all(np.abs(positive - 0.5) < 0.05)


def test_random_point_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_components must be <= n_features"):
        random_point(3, 4)
    with pytest.raises(ValueError, match="n_features"):
        random_point(0, 1)
    with pytest.raises(TypeError, match="n_components"):
        random_point(3, 1.5)


# --------------------------------------------------------------------------- distance


def test_subspace_distance():
    V = random_point(8, 3, random_state=0)
    W = random_point(8, 3, random_state=1)
    naive = np.linalg.norm(V @ V.T - W @ W.T)
    assert subspace_distance(V, W) == pytest.approx(naive, rel=1e-12)
    assert subspace_distance(W, V) == pytest.approx(naive, rel=1e-12)
    # basis independent: same subspace, rotated basis
    Q, _ = np.linalg.qr(np.random.default_rng(2).standard_normal((3, 3)))
    assert subspace_distance(V, V @ Q) < 1e-14
    # orthogonal subspaces are at the maximal distance sqrt(2 d)
    E = np.eye(8)
    assert subspace_distance(E[:, :3], E[:, 3:6]) == pytest.approx(np.sqrt(6))
    # different dimensions: E1 inside span(E1, E2): ||P1 - P12||_F = 1
    assert subspace_distance(E[:, :1], E[:, :2]) == pytest.approx(1.0)
    # accurate for tiny angles (no cancellation): rotate one column by 1e-10
    c, s = np.cos(1e-10), np.sin(1e-10)
    W2 = E[:, :2].copy()
    W2[:, 0] = c * E[:, 0] + s * E[:, 5]
    assert subspace_distance(E[:, :2], W2) == pytest.approx(np.sqrt(2) * 1e-10, rel=1e-6)


def test_subspace_distance_validates():
    V = random_point(6, 2, random_state=0)
    with pytest.raises(ValueError, match="same number of rows"):
        subspace_distance(V, random_point(5, 2, random_state=0))
    with pytest.raises(ValueError, match="W must have orthonormal columns"):
        subspace_distance(V, 2 * V)


# --------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("retraction", ["qr", "polar"])
@pytest.mark.parametrize("cost", ["trace", "trace_squared", "log"])
def test_riemannian_gradient_matches_finite_differences(cost, retraction):
    p, d = 6, 2
    rng = np.random.default_rng(10)
    B = rng.standard_normal((p, p))
    A = B @ B.T
    fun = {"trace": _trace_cost(A), "trace_squared": _trace_squared_cost(A), "log": _log_cost(B)}[
        cost
    ]
    retract = RETRACTIONS[retraction]
    V = random_point(p, d, random_state=11)
    grad = tangent_projection(V, fun(V)[1])
    np.testing.assert_allclose(V.T @ grad + grad.T @ V, 0.0, atol=1e-12)
    # the projected canonical basis spans the tangent space, so matching every
    # directional derivative identifies the Riemannian gradient
    t = 1e-6
    for i in range(p):
        for j in range(d):
            E = np.zeros((p, d))
            E[i, j] = 1.0
            xi = tangent_projection(V, E)
            fd = (fun(retract(V, t * xi))[0] - fun(retract(V, -t * xi))[0]) / (2 * t)
            assert fd == pytest.approx(np.vdot(grad, xi), rel=1e-6, abs=1e-7 * np.linalg.norm(grad))


# --------------------------------------------------------------------------- batches


def test_cholesky_qr_equals_householder_qr_and_falls_back():
    rng = np.random.default_rng(12)
    p, r = 9, 4
    X = np.stack([np.linalg.qr(rng.standard_normal((p, r)))[0] for _ in range(5)])

    def householder(Y):
        Q, R = np.linalg.qr(Y)
        return Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]

    def tangent_step(size):
        G = rng.standard_normal(X.shape)
        XtG = X.transpose(0, 2, 1) @ G
        xi = G - X @ (0.5 * (XtG + XtG.transpose(0, 2, 1)))
        return X + size * xi / np.linalg.norm(xi, axis=(1, 2), keepdims=True)

    calls = []
    original = geometry._qr_factor

    def spy(Y):
        calls.append(Y.shape)
        return original(Y)

    for size, householder_used in ((0.1, False), (3.0, False), (20.0, True)):
        calls.clear()
        Y = tangent_step(size)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(geometry, "_qr_factor", spy)
            Qt = geometry._qr_factor_rows(np.ascontiguousarray(Y.transpose(0, 2, 1)))
        assert bool(calls) == householder_used
        np.testing.assert_allclose(Qt.transpose(0, 2, 1), householder(Y), rtol=0, atol=1e-13)


@pytest.mark.parametrize("name", ["qr", "polar"])
def test_batched_geometry_equals_the_single_point_geometry(name):
    # The batched forms act on transposes (R, d, p): each slice must be the
    # single-point tangent projection and retraction of that point.
    rng = np.random.default_rng(30)
    V = np.stack([random_point(7, 3, random_state=k) for k in range(4)])
    G = rng.standard_normal(V.shape)
    Vt, Gt = V.transpose(0, 2, 1), G.transpose(0, 2, 1)
    xi_t = geometry._tangent_rows(Vt, Gt)
    for i in range(len(V)):
        np.testing.assert_allclose(xi_t[i].T, tangent_projection(V[i], G[i]), atol=1e-13)
    W_t = geometry._retract_rows(Vt, 0.3 * xi_t, name)
    for i in range(len(V)):
        expected = RETRACTIONS[name](V[i], 0.3 * xi_t[i].T)
        np.testing.assert_allclose(W_t[i].T, expected, atol=1e-12)
    complement = geometry._orthonormal_complement(V)
    np.testing.assert_allclose(np.swapaxes(complement, 1, 2) @ V, 0.0, atol=1e-13)
