import numpy as np
import pytest
from scipy.linalg import sqrtm

from fairpca.stiefel import (
    StiefelResult,
    minimize_lbfgs,
    minimize_trust_region,
    random_point,
    retract_polar,
    retract_qr,
    subspace_distance,
    tangent_projection,
)

RETRACTIONS = {"qr": retract_qr, "polar": retract_polar}


def _random_tangent(V, rng):
    return tangent_projection(V, rng.standard_normal(V.shape))


def _psd_with_spectrum(eigvals, seed):
    """Symmetric matrix with the given eigenvalues and a random eigenbasis."""
    p = len(eigvals)
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((p, p)))
    return (Q * eigvals) @ Q.T


def _assert_orthonormal(V, atol=1e-12):
    np.testing.assert_allclose(V.T @ V, np.eye(V.shape[1]), rtol=0, atol=atol)


def _trace_cost(A):
    def cost_and_grad(V):
        return -np.trace(V.T @ A @ V), -2.0 * A @ V

    return cost_and_grad


def _trace_squared_cost(A):
    def cost_and_grad(V):
        t = np.trace(V.T @ A @ V)
        return -(t**2), -4.0 * t * (A @ V)

    return cost_and_grad


def _log_cost(B):
    # f(V) = sum_ij log(1 + M_ij^2), M = V^T B V, B not symmetric
    def cost_and_grad(V):
        M = V.T @ B @ V
        H = 2.0 * M / (1.0 + M**2)
        return np.sum(np.log1p(M**2)), B @ V @ H.T + B.T @ V @ H

    return cost_and_grad


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


# --------------------------------------------------------------------------- L-BFGS

P, D = 30, 4


@pytest.fixture(scope="module")
def eigen_problem():
    rng = np.random.default_rng(12)
    B = rng.standard_normal((P, P))
    A = B @ B.T / P  # PSD, distinct eigenvalues almost surely
    w, U = np.linalg.eigh(A)
    assert np.min(np.diff(w)) > 1e-6
    return A, w, U


@pytest.mark.parametrize("retraction", ["qr", "polar"])
def test_lbfgs_finds_top_eigenspace(eigen_problem, retraction):
    A, w, U = eigen_problem
    V0 = random_point(P, D, random_state=13)
    res = minimize_lbfgs(_trace_cost(A), V0, gtol=1e-10, retraction=retraction)
    assert isinstance(res, StiefelResult)
    assert res.converged
    assert res.message == "gradient norm <= gtol"
    assert res.grad_norm <= 1e-10
    assert 0 < res.n_iter < 300
    _assert_orthonormal(res.point)
    assert subspace_distance(res.point, U[:, -D:]) < 1e-8
    assert res.cost == pytest.approx(-np.sum(w[-D:]), rel=1e-13)
    # reported numbers are consistent with the point
    assert res.cost == _trace_cost(A)(res.point)[0]
    rgrad = tangent_projection(res.point, _trace_cost(A)(res.point)[1])
    assert res.grad_norm == pytest.approx(np.linalg.norm(rgrad))
    # histories: one entry per step plus the start, cost non-increasing up to rounding
    assert res.cost_history.shape == res.grad_norm_history.shape == (res.n_iter + 1,)
    assert res.cost_history[0] == _trace_cost(A)(V0)[0]
    assert res.cost_history[-1] == res.cost
    assert np.all(np.diff(res.cost_history) <= 1e-13 * abs(res.cost))
    assert res.n_evals >= res.n_iter + 1


def test_lbfgs_is_deterministic(eigen_problem):
    A, _, _ = eigen_problem
    V0 = random_point(P, D, random_state=14)
    r1 = minimize_lbfgs(_trace_cost(A), V0)
    r2 = minimize_lbfgs(_trace_cost(A), V0)
    np.testing.assert_array_equal(r1.point, r2.point)
    assert r1.n_iter == r2.n_iter


def test_lbfgs_beats_steepest_descent():
    pymanopt = pytest.importorskip("pymanopt")
    from pymanopt.manifolds import Stiefel
    from pymanopt.optimizers import SteepestDescent

    # ill-conditioned spectrum: steepest descent converges slowly
    eigvals = np.concatenate([np.linspace(0.1, 1.0, P - D), np.linspace(1.2, 20.0, D)])
    A = _psd_with_spectrum(eigvals, seed=15)
    V0 = random_point(P, D, random_state=16)

    manifold = Stiefel(P, D)

    @pymanopt.function.numpy(manifold)
    def cost(V):
        return -np.trace(V.T @ A @ V)

    @pymanopt.function.numpy(manifold)
    def euclidean_gradient(V):
        return -2.0 * A @ V

    problem = pymanopt.Problem(manifold, cost, euclidean_gradient=euclidean_gradient)
    sd = SteepestDescent(verbosity=0, min_gradient_norm=1e-6, max_iterations=5000).run(
        problem, initial_point=V0
    )
    ours = minimize_lbfgs(_trace_cost(A), V0, gtol=1e-6, max_iter=5000)
    ours_sd = minimize_lbfgs(_trace_cost(A), V0, gtol=1e-6, max_iter=5000, memory=0)
    assert ours.converged and ours_sd.converged
    assert sd.gradient_norm <= 1e-6  # the oracle converged too
    # same optimum as the independent optimiser (and as the eigenvalues)
    assert ours.cost == pytest.approx(sd.cost, rel=1e-9)
    assert ours.cost == pytest.approx(-np.sum(eigvals[-D:]), rel=1e-9)
    # fewer iterations than steepest descent, pymanopt's and ours (memory=0)
    assert ours.n_iter < sd.iterations
    assert ours.n_iter < ours_sd.n_iter


def test_lbfgs_brockett_cost_recovers_ordered_eigenvectors():
    # f(V) = tr(V^T A V N), N = diag(d, ..., 1): minimisers are the eigenvectors of
    # the d smallest eigenvalues, ordered, up to column signs (not subspace invariant).
    p, d = 12, 3
    eigvals = np.arange(1.0, p + 1.0)
    A = _psd_with_spectrum(eigvals, seed=17)
    N = np.diag(np.arange(d, 0, -1.0))

    def cost_and_grad(V):
        AV = A @ V
        return np.trace(V.T @ AV @ N), 2.0 * AV @ N

    res = minimize_lbfgs(
        cost_and_grad, random_point(p, d, random_state=18), gtol=1e-10, retraction="polar"
    )
    assert res.converged
    _, U = np.linalg.eigh(A)
    np.testing.assert_allclose(np.abs(np.sum(res.point * U[:, :d], axis=0)), 1.0, atol=1e-12)
    assert res.cost == pytest.approx(np.sum(np.diag(N) * eigvals[:d]), rel=1e-12)


def test_lbfgs_nonlinear_cost_converges_to_stationary_point(eigen_problem):
    A, w, U = eigen_problem
    res = minimize_lbfgs(_trace_squared_cost(A), random_point(P, D, random_state=19), gtol=1e-8)
    assert res.converged
    # -tr(V^T A V)^2 is minimised on the same top-d eigenspace
    assert subspace_distance(res.point, U[:, -D:]) < 1e-8


def test_lbfgs_max_iter_reached(eigen_problem):
    A, _, _ = eigen_problem
    V0 = random_point(P, D, random_state=20)
    res = minimize_lbfgs(_trace_cost(A), V0, max_iter=3, gtol=1e-12)
    assert res.n_iter == 3
    assert not res.converged
    assert res.message == "max_iter reached"
    assert res.grad_norm > 1e-12
    assert res.cost < res.cost_history[0]
    res0 = minimize_lbfgs(_trace_cost(A), V0, max_iter=0)
    assert res0.n_iter == 0 and not res0.converged
    np.testing.assert_array_equal(res0.point, V0)


def test_lbfgs_starting_at_optimum_returns_immediately(eigen_problem):
    A, _, U = eigen_problem
    res = minimize_lbfgs(_trace_cost(A), U[:, -D:], gtol=1e-8)
    assert res.converged and res.n_iter == 0 and res.n_evals == 1


def test_lbfgs_callback(eigen_problem):
    A, _, _ = eigen_problem
    V0 = random_point(P, D, random_state=21)
    calls = []

    def record(k, V, cost, grad_norm):
        calls.append((k, cost, grad_norm))
        _assert_orthonormal(V)

    res = minimize_lbfgs(_trace_cost(A), V0, callback=record)
    assert [c[0] for c in calls] == list(range(1, res.n_iter + 1))
    np.testing.assert_array_equal([c[1] for c in calls], res.cost_history[1:])
    stopped = minimize_lbfgs(_trace_cost(A), V0, callback=lambda *args: True)
    assert stopped.n_iter == 1 and not stopped.converged
    assert stopped.message == "stopped by callback"


def test_lbfgs_wrong_gradient_fails_line_search(eigen_problem):
    A, _, _ = eigen_problem

    def wrong_sign(V):
        return -np.trace(V.T @ A @ V), 2.0 * A @ V

    res = minimize_lbfgs(wrong_sign, random_point(P, D, random_state=22))
    assert not res.converged
    assert res.message == "line search failed"
    assert res.n_iter == 0


def test_lbfgs_input_validation(eigen_problem):
    A, _, _ = eigen_problem
    fun = _trace_cost(A)
    V0 = random_point(P, D, random_state=23)
    with pytest.raises(ValueError, match="V0 must have orthonormal columns"):
        minimize_lbfgs(fun, V0 + 1e-6)
    with pytest.raises(ValueError, match="V0 must have orthonormal columns"):
        minimize_lbfgs(fun, 2.0 * V0)
    bad = V0.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="V0 contains NaN"):
        minimize_lbfgs(fun, bad)
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="V0 contains NaN or infinite"):
        minimize_lbfgs(fun, bad)
    with pytest.raises(ValueError, match="V0 must be a 2-D array"):
        minimize_lbfgs(fun, V0[:, 0])
    with pytest.raises(ValueError, match="V0 must have shape"):
        minimize_lbfgs(fun, np.eye(3, 4))
    with pytest.raises(ValueError, match="retraction must be one of 'qr', 'polar'"):
        minimize_lbfgs(fun, V0, retraction="cayley")
    for kwargs, error, name in [
        ({"memory": -1}, ValueError, "memory"),
        ({"max_iter": 1.5}, TypeError, "max_iter"),
        ({"max_backtracks": 0}, ValueError, "max_backtracks"),
        ({"gtol": -1.0}, ValueError, "gtol"),
        ({"gtol": np.nan}, ValueError, "gtol"),
        ({"armijo": 1.0}, ValueError, "armijo"),
        ({"callback": 3}, ValueError, "callback"),
    ]:
        with pytest.raises(error, match=name):
            minimize_lbfgs(fun, V0, **kwargs)
    # a point orthonormal within the tolerance is accepted
    assert minimize_lbfgs(fun, V0 + 1e-10, max_iter=1).n_iter == 1


def test_lbfgs_non_finite_cost_or_bad_gradient(eigen_problem):
    A, _, _ = eigen_problem
    V0 = random_point(P, D, random_state=24)
    calls = []

    def nan_after_first(V):
        calls.append(1)
        cost = -np.trace(V.T @ A @ V) if len(calls) == 1 else np.nan
        return cost, -2.0 * A @ V

    with pytest.raises(ValueError, match="non-finite cost .* line search of iteration 0"):
        minimize_lbfgs(nan_after_first, V0)
    with pytest.raises(ValueError, match="non-finite cost .* at V0"):
        minimize_lbfgs(lambda V: (np.inf, V), V0)
    with pytest.raises(ValueError, match="gradient of shape"):
        minimize_lbfgs(lambda V: (0.0, V[:, :1]), V0)
    with pytest.raises(ValueError, match="non-finite gradient"):
        minimize_lbfgs(lambda V: (0.0, np.full_like(V, np.nan)), V0)


def test_two_loop_recursion_matches_explicit_bfgs_inverse_update():
    # The two-loop recursion must equal -H g with H built from gamma * I by the
    # BFGS inverse updates H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T.
    from fairpca.stiefel import _lbfgs_direction

    rng = np.random.default_rng(25)
    shape, n = (4, 2), 8
    C = rng.standard_normal((n, n))
    hess = C @ C.T + n * np.eye(n)  # SPD, so s^T y > 0
    pairs = []
    for _ in range(3):
        s = rng.standard_normal(shape)
        y = (hess @ s.ravel()).reshape(shape)
        pairs.append((s, y, 1.0 / np.vdot(s, y)))
    s, y, _ = pairs[-1]
    gamma = np.vdot(s, y) / np.vdot(y, y)
    H = gamma * np.eye(n)
    for s_i, y_i, rho in pairs:
        left = np.eye(n) - rho * np.outer(s_i.ravel(), y_i.ravel())
        H = left @ H @ left.T + rho * np.outer(s_i.ravel(), s_i.ravel())
    g = rng.standard_normal(shape)
    direction, slope = _lbfgs_direction(g, pairs, gamma, np.linalg.norm(g))
    np.testing.assert_allclose(direction.ravel(), -H @ g.ravel(), rtol=1e-12)
    assert slope == pytest.approx(np.vdot(g, direction), rel=1e-12)
    # secant condition for the newest pair: H y = s
    direction_y, _ = _lbfgs_direction(y, pairs, gamma, np.linalg.norm(y))
    np.testing.assert_allclose(-direction_y, s, rtol=1e-10, atol=1e-12)


def test_trust_region_solves_an_ill_conditioned_problem_where_lbfgs_stalls():
    # Top-3 eigenspace of a matrix with eigenvalues spread over eight orders of magnitude.
    eigvals = np.concatenate([np.logspace(-4, 4, 27), [2e4, 3e4, 5e4]])
    A = _psd_with_spectrum(eigvals, 21)
    U = np.linalg.eigh(A)[1]
    V0 = random_point(30, 3, random_state=22)
    res = minimize_trust_region(_trace_cost(A), lambda V, xi: -2.0 * A @ xi, V0, gtol=1e-8)
    assert res.converged and res.message == "gradient norm <= gtol"
    _assert_orthonormal(res.point)
    assert subspace_distance(res.point, U[:, -3:]) < 1e-9
    assert res.cost == pytest.approx(-np.sum(eigvals[-3:]), rel=1e-12)
    assert np.all(np.diff(res.cost_history) <= 1e-12 * abs(res.cost))
    lbfgs = minimize_lbfgs(_trace_cost(A), V0, gtol=1e-8, max_iter=res.n_evals)
    assert res.n_iter < 100 and not lbfgs.converged


def test_trust_region_nonlinear_cost_reaches_a_stationary_point(eigen_problem):
    A, _, _ = eigen_problem

    def hess_vec(V, xi):  # of f(V) = -tr(V^T A V)^2
        t = np.trace(V.T @ A @ V)
        return -4.0 * (t * A @ xi + 2.0 * np.trace(xi.T @ A @ V) * (A @ V))

    V0 = random_point(P, D, random_state=23)
    res = minimize_trust_region(_trace_squared_cost(A), hess_vec, V0, gtol=1e-9)
    assert res.converged
    cost, egrad = _trace_squared_cost(A)(res.point)
    assert np.linalg.norm(tangent_projection(res.point, egrad)) <= 1e-9
    with pytest.raises(ValueError, match="hess_vec must be callable"):
        minimize_trust_region(_trace_cost(A), None, V0)


@pytest.mark.parametrize("theta", [1.0, 0.5])
def test_truncated_cg_stops_at_the_forcing_residual(theta):
    # Interior solves of an SPD model: the residual g + H eta must meet
    # ||g|| min(||g||^theta, 0.1), and the looser exponent needs fewer products.
    from fairpca.stiefel import _SteihaugCG

    rng = np.random.default_rng(31)
    H = _psd_with_spectrum(np.logspace(0, 3, 12), 32)
    grad = 1e-3 * rng.standard_normal((4, 3))
    grad_norm = np.linalg.norm(grad)
    counts = {}
    for exponent in (1.0, theta):
        calls = []

        def hess(xi, calls=calls):
            calls.append(1)
            return (H @ xi.ravel()).reshape(xi.shape)

        cg = _SteihaugCG(grad, grad_norm, hess, 100, exponent)
        eta, H_eta, at_boundary, eta_norm = cg.solve(1e6)
        # the norm comes from the CG recurrences, exact up to their rounding
        assert not at_boundary and eta_norm == pytest.approx(np.linalg.norm(eta), rel=1e-6)
        np.testing.assert_allclose(H_eta.ravel(), H @ eta.ravel(), rtol=1e-10, atol=1e-18)
        residual = np.linalg.norm(grad + H_eta)
        assert residual <= grad_norm * min(grad_norm**exponent, 0.1)
        counts[exponent] = len(calls)
    if theta < 1:
        assert counts[theta] < counts[1.0]


def test_trust_region_rejected_step_is_not_tried_again_nor_solved_again():
    # A cost with rounding-like noise (1e-8, deterministic in V) and an exact
    # gradient: once the predicted decreases fall below the noise, steps are
    # rejected whatever their length. Shrinking the radius by a factor only
    # would solve the same model again and evaluate the same trial point (3
    # times here); the radius must drop below the rejected step. And the retry
    # follows the kept CG path: no Hessian product at a point comes after a
    # trial step from it was evaluated.
    A = _psd_with_spectrum(np.linspace(1.0, 3.0, 8), 33)
    R = np.random.default_rng(37).standard_normal((8, 2))
    V0 = random_point(8, 2, random_state=34)
    trials, events = [], []

    def noisy_cost(V):
        trials.append(V.copy())
        events.append(None)
        noise = 1e-8 * np.sin(1e7 * np.sum(V * R))
        return np.trace(V.T @ A @ V) + noise, 2.0 * A @ V

    def hess_vec(V, xi):
        events.append(V.tobytes())
        return 2.0 * A @ xi

    res = minimize_trust_region(noisy_cost, hess_vec, V0, gtol=1e-12, max_iter=300)
    assert len(trials) > len(res.cost_history) + 1  # some trial steps were rejected
    for previous, current in zip(trials[1:-1], trials[2:], strict=True):
        assert not np.array_equal(previous, current)
    done, current = set(), None
    for event in events:
        if event is None:
            done.add(current)
        else:
            assert event not in done
            current = event


@pytest.mark.parametrize("preconditioned", [False, True])
def test_cg_path_gives_every_smaller_region_without_new_products(preconditioned):
    # One CG path at one point, asked for a region, then smaller ones (as after rejected
    # steps), then a larger one: each answer equals a fresh solve at that radius; the
    # smaller regions cost no Hessian product. An indefinite model (the path ends at
    # negative curvature) and an SPD one whose path ends inside the largest region.
    from fairpca.stiefel import _SteihaugCG

    rng = np.random.default_rng(40)
    grad = rng.standard_normal((5, 3))
    grad_norm = np.linalg.norm(grad)
    for H in (
        _psd_with_spectrum(np.logspace(0, 3, 15), 41),
        _psd_with_spectrum(np.linspace(-1.0, 5.0, 15), 42),
    ):
        H_inv = np.linalg.inv(H + 2.0 * np.eye(15))  # SPD for both
        calls = []

        def hess(xi, H=H, calls=calls):
            calls.append(1)
            return (H @ xi.ravel()).reshape(xi.shape)

        def precondition(r, H_inv=H_inv):
            return (H_inv @ r.ravel()).reshape(r.shape)

        M = precondition if preconditioned else None
        cg = _SteihaugCG(grad, grad_norm, hess, 15, 1.0, M)
        cg.solve(3.0)
        at_boundary = []
        for radius in (1.0, 0.3, 0.01, 3.0, 100.0):
            before = len(calls)
            kept = cg.solve(radius)
            at_boundary.append(kept[2])
            if radius <= 3.0:
                assert len(calls) == before
            fresh = _SteihaugCG(grad, grad_norm, hess, 15, 1.0, M).solve(radius)
            np.testing.assert_allclose(kept[0], fresh[0], rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(kept[1], fresh[1], rtol=1e-13, atol=1e-15)
            assert kept[2:] == pytest.approx(fresh[2:], rel=1e-13)
        negative_curvature = np.linalg.eigvalsh(H).min() < 0
        assert at_boundary[2] and at_boundary[-1] == negative_curvature


def test_cg_survives_a_preconditioner_that_is_not_positive_definite():
    # Negative definite along the gradient: plain CG instead (the same steps). Indefinite
    # further on: the solve stops at the last iterate, which decreases the model.
    from fairpca.stiefel import _SteihaugCG

    rng = np.random.default_rng(43)
    H = _psd_with_spectrum(np.logspace(0, 2, 12), 44)
    grad = rng.standard_normal((4, 3))
    grad_norm = np.linalg.norm(grad)

    def hess(xi):
        return (H @ xi.ravel()).reshape(xi.shape)

    plain = _SteihaugCG(grad, grad_norm, hess, 12, 1.0).solve(1e3)
    negated = _SteihaugCG(grad, grad_norm, hess, 12, 1.0, lambda r: -r).solve(1e3)
    for a, b in zip(plain, negated, strict=True):
        np.testing.assert_array_equal(a, b)

    signs = np.ones(12)
    signs[:3] = -1.0  # M^{-1} = diag(signs): indefinite, positive along the gradient
    grad = np.zeros(12)
    grad[3:] = 1.0
    grad = grad.reshape(4, 3)
    values = []

    def indefinite(r):
        z = signs.reshape(4, 3) * r
        values.append(np.vdot(r, z))
        return z

    cg = _SteihaugCG(grad, np.linalg.norm(grad), hess, 12, 1.0, indefinite)
    eta, H_eta, at_boundary, _ = cg.solve(1e3)
    assert np.all(np.isfinite(eta)) and not at_boundary
    assert np.vdot(grad, eta) + 0.5 * np.vdot(eta, H_eta) < 0
    first_bad = next(k for k, value in enumerate(values) if value <= 0)
    assert first_bad >= 2 and len(values) == first_bad + 1 and len(cg._steps) == first_bad


def test_trust_region_theta_is_validated():
    A = _psd_with_spectrum(np.linspace(1.0, 3.0, 6), 35)
    V0 = random_point(6, 2, random_state=36)
    for bad in (0.0, 1.5, -1.0):
        with pytest.raises(ValueError, match="theta"):
            minimize_trust_region(_trace_cost(A), lambda V, xi: -2.0 * A @ xi, V0, theta=bad)


def test_preconditioned_truncated_cg_measures_the_region_in_the_m_norm():
    # With M = H (SPD) preconditioned CG solves the Newton system in one iteration;
    # when the region is smaller, the step lies on the ellipsoid ||eta||_M = radius
    # and still decreases the model.
    from fairpca.stiefel import _SteihaugCG

    rng = np.random.default_rng(38)
    H = _psd_with_spectrum(np.logspace(0, 4, 12), 39)
    H_inv = np.linalg.inv(H)
    grad = rng.standard_normal((4, 3))
    grad_norm = np.linalg.norm(grad)
    calls = []

    def hess(xi):
        calls.append(1)
        return (H @ xi.ravel()).reshape(xi.shape)

    def precondition(r):
        return (H_inv @ r.ravel()).reshape(r.shape)

    newton = -(H_inv @ grad.ravel()).reshape(grad.shape)
    newton_norm = np.sqrt(newton.ravel() @ H @ newton.ravel())
    eta, H_eta, at_boundary, eta_norm = _SteihaugCG(
        grad, grad_norm, hess, 50, 1.0, precondition
    ).solve(2 * newton_norm)
    assert not at_boundary and len(calls) == 1
    np.testing.assert_allclose(eta, newton, rtol=1e-8)
    assert eta_norm == pytest.approx(newton_norm, rel=1e-10)

    radius = 0.3 * newton_norm
    eta, H_eta, at_boundary, eta_norm = _SteihaugCG(
        grad, grad_norm, hess, 50, 1.0, precondition
    ).solve(radius)
    assert at_boundary and eta_norm == radius
    assert np.sqrt(eta.ravel() @ H @ eta.ravel()) == pytest.approx(radius, rel=1e-10)
    np.testing.assert_allclose(H_eta.ravel(), H @ eta.ravel(), rtol=1e-10)
    assert np.vdot(grad, eta) + 0.5 * np.vdot(eta, H_eta) < 0


def test_trust_region_with_a_preconditioner_reaches_the_same_minimiser():
    # The ill-conditioned eigenproblem, preconditioned by |Hess| at the solution (the
    # Riemannian Hessian there as a matrix, eigenvalues made positive, the zero ones of
    # the rotations within the subspace lifted to 1 % of the largest), scaled to a
    # largest eigenvalue of 1 (the region is measured in the M-norm) and projected
    # onto the current tangent space: the same subspace, with fewer Hessian products.
    eigvals = np.concatenate([np.logspace(-4, 4, 27), [2e4, 3e4, 5e4]])
    A = _psd_with_spectrum(eigvals, 21)
    p, d = 30, 3
    U = np.linalg.eigh(A)[1]
    V_star = U[:, -d:]
    basis = np.eye(p * d).reshape(p * d, p, d)
    hess_star = np.array(
        [
            tangent_projection(V_star, -2.0 * A @ tangent_projection(V_star, E))
            - tangent_projection(
                V_star, tangent_projection(V_star, E) @ (-2.0 * V_star.T @ A @ V_star)
            )
            for E in basis
        ]
    ).reshape(p * d, p * d)
    values, vectors = np.linalg.eigh(0.5 * (hess_star + hess_star.T))
    top = np.abs(values).max()
    M = (vectors * np.maximum(np.abs(values), 1e-2 * top)) @ vectors.T / top
    M_inv = np.linalg.inv(M)

    def preconditioner(V, egrad):
        return lambda r: tangent_projection(V, (M_inv @ r.ravel()).reshape(r.shape))

    V0 = random_point(p, d, random_state=22)
    counts = {}
    for name, precon in (("plain", None), ("preconditioned", preconditioner)):
        calls = []

        def hess_vec(V, xi, calls=calls):
            calls.append(1)
            return -2.0 * A @ xi

        res = minimize_trust_region(_trace_cost(A), hess_vec, V0, gtol=1e-8, preconditioner=precon)
        assert res.converged
        assert subspace_distance(res.point, V_star) < 1e-9
        counts[name] = len(calls)
    assert counts["preconditioned"] < counts["plain"]
