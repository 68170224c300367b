import numpy as np
import pytest
from _costs import (
    D,
    P,
    _assert_orthonormal,
    _eigen_problem,
    _psd_with_spectrum,
    _trace_cost,
    _trace_squared_cost,
)

from fairpca.riemannian import (
    StiefelResult,
    minimize_lbfgs,
    random_point,
    subspace_distance,
    tangent_projection,
)


@pytest.fixture(scope="module")
def eigen_problem():
    return _eigen_problem()


# --------------------------------------------------------------------------- L-BFGS


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
    from fairpca.riemannian.lbfgs import _lbfgs_direction

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
