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
    minimize_lbfgs,
    minimize_trust_region,
    random_point,
    subspace_distance,
    tangent_projection,
)


@pytest.fixture(scope="module")
def eigen_problem():
    return _eigen_problem()


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
    from fairpca.riemannian.trust_region import _SteihaugCG

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
    from fairpca.riemannian.trust_region import _SteihaugCG

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
    from fairpca.riemannian.trust_region import _SteihaugCG

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
    from fairpca.riemannian.trust_region import _SteihaugCG

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


@pytest.mark.parametrize("lower", [True, False])
def test_single_precision_preconditioner_stays_positive_definite(lower):
    # S with condition number 1e10, stored in one triangle (the other holds garbage, as
    # LAPACK potri leaves it): a plain cast to single precision is indefinite, the
    # shifted one is not, its eigenvalues are at least those of S, and it is
    # S + delta I to single precision with delta far below the largest eigenvalue.
    from fairpca.riemannian.trust_region import _single_precision

    rng = np.random.default_rng(17)
    Q = np.linalg.qr(rng.standard_normal((300, 300)))[0]
    eigenvalues = np.logspace(-10, 0, 300)
    S = (Q * eigenvalues) @ Q.T
    S = 0.5 * (S + S.T)
    stored = np.tril(S) + np.triu(np.full_like(S, 1e30), 1)
    if not lower:
        stored = stored.T.copy()
    assert np.linalg.eigvalsh(S.astype(np.float32).astype(np.float64)).min() < 0
    single = _single_precision(stored, lower)
    assert single.dtype == np.float32 and single.flags.f_contiguous
    triangle = np.tril(single.astype(np.float64)) if lower else np.triu(single.astype(np.float64))
    full = triangle + triangle.T - np.diag(np.diag(triangle))
    shifted = np.linalg.eigvalsh(full)
    assert np.all(shifted >= eigenvalues)
    delta = np.mean(np.diag(full) - np.diag(S))
    assert 0 < delta < 1e-6
    np.testing.assert_allclose(full, S + delta * np.eye(300), rtol=2.0**-24, atol=1e-12 * delta)
