"""Direction, step search and stopping rule of the Pareto descent (fairpca._pareto_descent)."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import fairpca._pareto_descent as descent
import fairpca._pareto_objectives as _pareto_objectives
import fairpca.pareto as pareto
from fairpca import ParetoFairPCA
from fairpca.datasets import make_gaussian_groups
from fairpca.riemannian import random_point, retract_polar

# ----------------------------------------------------------------- helpers


def scaled_groups(n, p, seed):
    """Two groups (30 % / 70 %) that differ in column scales and means.

    The scatter matrices have many close eigenvalues, so the descent is badly
    conditioned: the case the Barzilai-Borwein first trials are for.
    """
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.3).astype(int)
    scales = rng.uniform(0.5, 2.0, size=(2, p))
    means = rng.normal(size=(2, p))
    return rng.standard_normal((n, p)) * scales[s] + means[s], s


def three_groups(seed=5, n=600, p=8):
    return make_gaussian_groups(
        n_samples=n, n_features=p, n_groups=3, group_weights=[0.5, 0.3, 0.2], random_state=seed
    )


def rayleigh_objective(A):
    """The single objective ``1 - tr(U^T A U)`` as an ``_Objectives``."""
    return _pareto_objectives._Objectives(
        A[None], np.ones((1, 1)), np.ones(1), np.ones(1), ("linear",), 0.0, ("loss",), (0,)
    )


def fit(X, s, d, *, spectral=True, guard=True, monkeypatch=None, **params):
    """Fit with the Pareto descent's first trials and the stagnation guard switched.

    Returns the estimator, the Pareto descent's number of line-search trials and
    the warnings issued.
    """
    original = descent._pareto_descent
    runs = []

    def patched(*args, **kwargs):
        if kwargs.get("steer") is None:
            kwargs["spectral"] = spectral
        run = original(*args, **kwargs)
        runs.append(run)
        return run

    monkeypatch.setattr(pareto, "_pareto_descent", patched)
    if not guard:
        monkeypatch.setattr(descent, "_STALL_RTOL", -np.inf)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = ParetoFairPCA(d, **params).fit(X, sensitive_features=s)
    monkeypatch.undo()
    trials = runs[-1].trials if runs else 0
    return est, trials, [w for w in caught if issubclass(w.category, ConvergenceWarning)]


def final_values(est):
    return est.history_["objectives"][-1] - est.alpha_ * est.n_components_


# ----------------------------------------------------------- the direction


def brute_force_min_norm(gram, steps):
    """Smallest lam^T gram lam over a grid of the simplex (m = 2 or 3)."""
    t = np.linspace(0.0, 1.0, steps + 1)
    if gram.shape[0] == 2:
        lam = np.stack([t, 1 - t], axis=1)
    else:
        a, b = np.meshgrid(t, t)
        keep = a + b <= 1
        lam = np.stack([a[keep], b[keep], 1 - a[keep] - b[keep]], axis=1)
    return float(np.min(np.einsum("ni,ij,nj->n", lam, gram, lam)))


def cvxpy_min_norm(gradients):
    flat = gradients.reshape(len(gradients), -1)
    lam = cp.Variable(len(flat))
    problem = cp.Problem(cp.Minimize(cp.sum_squares(flat.T @ lam)), [lam >= 0, cp.sum(lam) == 1])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return -(flat.T @ lam.value).reshape(gradients.shape[1:])


def random_gradients(rng, m, shape=(7, 3)):
    G = rng.standard_normal((m, *shape)) * rng.uniform(0.1, 3.0, size=(m, 1, 1))
    kind = rng.integers(3)
    if kind == 1 and m >= 2:  # two nearly opposite gradients: D close to 0
        G[1] = -G[0] * rng.uniform(0.5, 2.0) + 1e-3 * rng.standard_normal(shape)
    if kind == 2 and m >= 3:  # affinely dependent gradients
        G[2] = 0.3 * G[0] + 0.7 * G[1]
    return G


@pytest.mark.parametrize("seed", range(40))
def test_direction_lemma1_and_independent_qp(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 8))
    G = random_gradients(rng, m)
    D, lam = descent._pareto_direction(G)
    assert np.all(lam >= 0) and lam.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(D, -np.tensordot(lam, G, axes=1), atol=1e-12)
    # Lemma 1: <D, G_i> <= -|D|^2 for every objective.
    norm2 = np.sum(D * D)
    slopes = np.einsum("ipd,pd->i", G, D)
    assert np.all(slopes <= -norm2 + 1e-10 * np.max(np.sum(G * G, axis=(1, 2))))
    # The min-norm point is unique: compare with an interior-point solution,
    # which is accurate to about 1e-6 when the gradients nearly cancel; ours
    # is never longer than it.
    D_cvx = cvxpy_min_norm(G)
    np.testing.assert_allclose(D, D_cvx, atol=1e-5 * np.abs(G).max())
    assert norm2 <= np.sum(D_cvx * D_cvx) + 1e-12 * np.abs(G).max() ** 2


@pytest.mark.parametrize("seed", range(10))
def test_min_norm_weights_against_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    for m, steps in ((2, 20000), (3, 600)):
        flat = random_gradients(rng, m).reshape(m, -1)
        gram = flat @ flat.T
        lam = descent._min_norm_weights(gram)
        ours = lam @ gram @ lam
        brute = brute_force_min_norm(gram, steps)
        assert ours <= brute + 1e-12 * gram.max()
        assert brute - ours <= 8.0 * np.abs(gram).max() / steps**2 + 1e-12


@pytest.mark.parametrize("seed", range(10))
def test_two_objective_closed_form_matches_qp(seed):
    rng = np.random.default_rng(200 + seed)
    flat = random_gradients(rng, 2).reshape(2, -1)
    gram = flat @ flat.T
    closed = descent._min_norm_weights(gram)
    qp = descent._min_norm_weights_qp(gram)
    np.testing.assert_allclose(closed @ flat, qp @ flat, atol=1e-10 * np.abs(flat).max())


def test_three_objective_closed_form_matches_qp():
    # Edge minima come from the closed form, interior ones from the QP: both branches
    # must give the QP's point (unique, though the weights need not be).
    rng = np.random.default_rng(300)
    interior = 0
    for _ in range(60):
        flat = random_gradients(rng, 3).reshape(3, -1)
        gram = flat @ flat.T
        closed = descent._min_norm_weights(gram)
        qp = descent._min_norm_weights_qp(gram)
        assert np.all(closed >= 0) and closed.sum() == pytest.approx(1.0, abs=1e-15)
        np.testing.assert_allclose(closed @ flat, qp @ flat, atol=1e-10 * np.abs(flat).max())
        interior += bool(np.all(closed > 0))
    assert 0 < interior < 60
    # All gradients zero: uniform weights, as the QP gives.
    np.testing.assert_array_equal(descent._min_norm_weights(np.zeros((3, 3))), np.full(3, 1 / 3))


def test_every_direction_of_a_fit_satisfies_lemma1(monkeypatch):
    """Spy on the directions computed during real fits (with their normalised gradients)."""
    calls = []
    original = descent._pareto_direction

    def spy(gradients, start=None):
        D, lam = original(gradients, start)
        calls.append((gradients, D))
        return D, lam

    monkeypatch.setattr(descent, "_pareto_direction", spy)
    X2, s2 = make_gaussian_groups(n_samples=400, n_features=8, random_state=3)
    X3, s3 = three_groups(seed=4)
    for X, s, kind in ((X2, s2, "pairwise"), (X3, s3, "pairwise"), (X3, s3, "single")):
        ParetoFairPCA(2, disparity=kind, max_iter=200).fit(X, sensitive_features=s)
    assert len(calls) > 20
    for G, D in calls:
        norm2 = np.sum(D * D)
        slopes = np.einsum("ipd,pd->i", G, D)
        active = np.sum(G * G, axis=(1, 2)) > 0
        assert np.all(slopes[active] <= -norm2 + 1e-10)


# ------------------------------------------------------ the first trial


def test_spectral_steps_are_inverse_curvatures_of_the_hessian():
    # f(U) = 1 - tr(U^T A U): at its minimiser (A's top-d eigenvectors) the
    # Riemannian Hessian's eigenvalues are 2 (a_i - a_j), a_i kept, a_j left out.
    rng = np.random.default_rng(0)
    p, d = 9, 3
    a = np.sort(rng.uniform(1.0, 10.0, size=p))[::-1]
    Q, _ = np.linalg.qr(rng.standard_normal((p, p)))
    A = (Q * a) @ Q.T
    objective = rayleigh_objective(A)
    U_star = Q[:, :d]
    lowest, highest = 2 * (a[d - 1] - a[d]), 2 * (a[0] - a[-1])
    for _ in range(5):
        V = rng.standard_normal((p, d))
        U_prev = retract_polar(U_star, 1e-5 * descent._horizontal(U_star, V))
        U = retract_polar(U_prev, 1e-5 * descent._horizontal(U_prev, rng.standard_normal((p, d))))
        G_prev = objective.evaluate(U_prev)[2]
        G = objective.evaluate(U)[2]
        weights = np.ones(1)
        long = descent._spectral_step(U, (U_prev, G_prev), G, weights, True)
        short = descent._spectral_step(U, (U_prev, G_prev), G, weights, False)
        assert short <= long * (1 + 1e-12)
        assert 1 / highest * (1 - 1e-3) <= short and long <= 1 / lowest * (1 + 1e-3)


def test_spectral_step_is_undefined_without_positive_curvature():
    U = random_point(6, 2, random_state=0)
    G = np.random.default_rng(1).standard_normal((2, 6, 2))
    G = np.stack([descent._horizontal(U, g) for g in G])
    weights = np.array([0.5, 0.5])
    # No move at all.
    assert descent._spectral_step(U, (U, G), G, weights, True) is None
    # A move along which the weighted gradient fell: y = -s (negative curvature).
    step = descent._horizontal(U, np.random.default_rng(2).standard_normal((6, 2)))
    U_new = retract_polar(U, 1e-3 * step)
    s = descent._horizontal(U_new, U_new - U)
    G_prev = np.stack([descent._horizontal(U_new, g) for g in G])  # transport leaves it
    assert descent._spectral_step(U_new, (U, G_prev), G_prev - s, weights, True) is None
    assert descent._spectral_step(U_new, (U, G_prev), G_prev + s, weights, True) > 0


def test_first_trial_alternates_long_and_short_estimates(monkeypatch):
    run = descent._Run(None, "max_iter", 0, [], [], [], [])
    U = random_point(5, 2, random_state=0)
    G = np.zeros((1, 5, 2))
    # First step: no previous step and no estimate, the cap decides.
    assert descent._first_trial(run, U, None, G, np.ones(1), True) == np.inf
    run.step.append(0.25)
    run.n_steps = 1
    assert descent._first_trial(run, U, None, G, np.ones(1), True) == 0.5
    assert descent._first_trial(run, U, (U, G), G, np.ones(1), False) == 0.5
    asked = []
    estimates = {True: 0.75, False: 0.2}

    def fake(U, previous, gradients, weights, long):
        asked.append(long)
        return estimates[long]

    monkeypatch.setattr(descent, "_spectral_step", fake)
    assert descent._first_trial(run, U, (U, G), G, np.ones(1), True) == 0.2  # short, odd count
    run.n_steps = 2
    assert descent._first_trial(run, U, (U, G), G, np.ones(1), True) == 0.75  # long, even count
    assert asked == [False, True]
    # Clipped to [1/2, 4] times the previous step (0.25).
    estimates.update({True: 30.0, False: 1e-3})
    assert descent._first_trial(run, U, (U, G), G, np.ones(1), True) == 1.0
    run.n_steps = 3
    assert descent._first_trial(run, U, (U, G), G, np.ones(1), True) == 0.125
    monkeypatch.setattr(descent, "_spectral_step", lambda *args: None)
    assert descent._first_trial(run, U, (U, G), G, np.ones(1), True) == 0.5


@pytest.mark.parametrize("seed", [1, 2])
def test_spectral_first_trials_cut_steps_and_evaluations(monkeypatch, seed):
    # Badly conditioned data: the doubling first trial (twice the previous step)
    # zigzags; the Barzilai-Borwein estimates reach the same tolerance in about
    # half the steps and line-search trials or fewer (0.5 and 0.42 for seed 1,
    # 0.30 and 0.27 for seed 2 when written).
    X, s = scaled_groups(20000, 20, seed)
    fast, fast_trials, fast_warnings = fit(X, s, 10, monkeypatch=monkeypatch)
    slow, slow_trials, slow_warnings = fit(X, s, 10, spectral=False, monkeypatch=monkeypatch)
    assert fast.converged_ and slow.converged_ and not fast_warnings and not slow_warnings
    assert fast.direction_norm_ <= fast.tol
    fast_steps = len(fast.history_["step"]) - 1
    slow_steps = len(slow.history_["step"]) - 1
    assert fast_steps <= 0.6 * slow_steps and fast_trials <= 0.6 * slow_trials
    # The start search is unchanged.
    for key, value in slow.start_history_.items():
        np.testing.assert_array_equal(fast.start_history_[key], value)
    # The Armijo test still holds for every objective: nothing increases.
    f = fast.history_["objectives"]
    assert np.all(np.diff(f, axis=0) <= 1e-12 * np.abs(f[:-1]))
    # Both stop at Pareto-critical points of the same quality; the point on the
    # front depends on the path, so the two differ slightly.
    a, b = final_values(fast), final_values(slow)
    assert abs(a[0] - b[0]) <= 1e-3 * b[0]
    assert np.max(np.abs(np.sqrt(2 * a[1:]) - np.sqrt(2 * b[1:]))) <= 1e-2


# ------------------------------------------------------ the stopping rule


def test_stalled_needs_flat_values_and_no_new_low_of_the_direction():
    flat = [np.array([1.0, 0.5, 0.0])] * 11
    falling = [np.array([1.0, 0.5, 0.0]) * (1 - 1e-9 * k) for k in range(11)]
    norms_flat = [1e-3] * 11
    norms_falling = [1e-3 * 0.9**k for k in range(11)]
    assert not descent._stalled(flat[:10], norms_flat[:10], 10, 1e-13)  # window not full
    assert descent._stalled(flat, norms_flat, 10, 1e-13)
    assert not descent._stalled(falling, norms_flat, 10, 1e-13)
    assert not descent._stalled(flat, norms_falling, 10, 1e-13)
    # Rounding-level rises count as no decrease.
    wobbly = flat[:-1] + [np.array([1.0 + 1e-16, 0.5, 0.0])]
    assert descent._stalled(wobbly, norms_flat, 10, 1e-13)


def guard_cases():
    X2, s2 = make_gaussian_groups(n_samples=800, n_features=10, random_state=7)
    X3, s3 = three_groups()
    Xs, ss = scaled_groups(20000, 20, 0)
    return {
        "binary": (X2, s2, 3),
        "three groups": (X3, s3, 2),
        "scaled groups": (Xs, ss, 5),
    }


@pytest.mark.parametrize("case", list(guard_cases()))
@pytest.mark.parametrize("params", [{}, {"disparity": "single"}, {"psi": "exp"}])
def test_stagnation_rule_leaves_converging_fits_unchanged(monkeypatch, case, params):
    X, s, d = guard_cases()[case]
    with_rule, _, caught = fit(X, s, d, monkeypatch=monkeypatch, **params)
    without, _, _ = fit(X, s, d, guard=False, monkeypatch=monkeypatch, **params)
    assert with_rule.converged_ and not caught
    assert with_rule.direction_norm_ <= with_rule.tol
    np.testing.assert_array_equal(with_rule.components_, without.components_)
    assert with_rule.n_iter_ == without.n_iter_


@pytest.mark.parametrize("case", list(guard_cases()))
@pytest.mark.parametrize("params", [{}, {"disparity": "single"}])
def test_full_budget_reaches_no_more_stationarity_than_the_rule(monkeypatch, case, params):
    # tol = 0: the descent runs until something else stops it. Without the
    # stagnation rule it spends the fixed budget or fails its line search;
    # with it, it may stop sooner, but at the same values and |D|.
    X, s, d = guard_cases()[case]
    ruled, _, caught = fit(X, s, d, tol=0.0, monkeypatch=monkeypatch, **params)
    full, _, _ = fit(X, s, d, tol=0.0, guard=False, monkeypatch=monkeypatch, **params)
    assert ruled.n_iter_ <= full.n_iter_
    a, b = final_values(ruled), final_values(full)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    best_ruled = ruled.history_["direction_norm"].min()
    best_full = full.history_["direction_norm"].min()
    assert best_ruled <= 10 * best_full + 1e-14
    assert best_ruled < 1e-6
    if not ruled.converged_:
        assert len(caught) == 1
        assert f"|D| = {ruled.direction_norm_:.3g} > tol = 0" in str(caught[0].message)


class FlatObjectives:
    """Two objectives whose values and gradients never change: no step can make progress.

    Every Armijo trial fails until ``beta eta |<G_i, D>|`` is below the test's
    rounding allowance (10 units of rounding of ``|f_i|``), then passes: the
    steps of a descent at a kink, or at the rounding floor of the values.
    """

    alpha_d = 0.0
    family = (0, 1)

    def __init__(self, p=6, d=2):
        rng = np.random.default_rng(0)
        self.G = rng.standard_normal((2, p, d))
        self.f = np.array([1.0, 0.5])

    def arguments(self, U):
        return self.f, None

    def penalties(self, z):
        return self.f.copy()

    def evaluate(self, U, arguments=None):
        return self.f.copy(), self.f, self.G

    def gradient_floors(self, z, d):
        return np.zeros(2)


def test_stagnation_stops_a_descent_that_cannot_progress(monkeypatch):
    U = random_point(6, 2, random_state=0)
    objectives = FlatObjectives()
    kwargs = {"tol": 1e-4, "max_iter": 1000, "spectral": True}
    run = descent._pareto_descent(objectives, U, **kwargs)
    assert run.status == "stalled" and run.n_steps == descent._STALL_WINDOW
    assert np.all(np.array(run.step[:-1]) < 1e-10)  # accepted on the rounding allowance
    monkeypatch.setattr(descent, "_STALL_RTOL", -np.inf)
    full = descent._pareto_descent(objectives, U, **kwargs)
    assert full.status == "max_iter" and full.n_steps == 1000
    assert full.direction_norm[-1] == run.direction_norm[-1]  # nothing gained


def test_stagnation_warning_names_the_reason_and_the_budgets(monkeypatch):
    X, s = three_groups()
    calls = []

    def stall_after_three(values, norms, window, rtol):
        calls.append(len(values))
        return len(values) > 3

    monkeypatch.setattr(descent, "_stalled", stall_after_three)
    with pytest.warns(ConvergenceWarning) as caught:
        est = ParetoFairPCA(2, disparity="single").fit(X, sensitive_features=s)
    assert not est.converged_ and len(caught) == 1
    message = str(caught[0].message)
    assert "(stalled)" in message and "kink" in message
    assert f"|D| = {est.direction_norm_:.3g} > tol = 0.0001" in message
    start_steps = len(est.start_history_["step"]) - 1
    assert f"after 3 Pareto-descent steps ({start_steps} more in the start search" in message
    assert "max_iter = 1000 applies to each" in message


def test_admissible_stops_before_the_first_inadmissible_step():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((8, 8))
    objective = rayleigh_objective(B @ B.T / np.trace(B @ B.T))
    U0 = random_point(8, 2, random_state=0)
    free = descent._pareto_descent(objective, U0, tol=1e-6, max_iter=50)
    assert free.n_steps > 3
    seen = []

    def admissible(V):
        seen.append(V)
        return len(seen) <= 3

    run = descent._pareto_descent(objective, U0, tol=1e-6, max_iter=50, admissible=admissible)
    assert run.status == "bound" and run.n_steps == 3 and len(seen) == 4
    np.testing.assert_array_equal(run.point, seen[2])  # the last admissible point
    assert len(run.step) == len(run.objectives) == 4 and run.step[-1] == 0
