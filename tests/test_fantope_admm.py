"""Tests of the ADMM solver of the FPCA SDP (``ConvexFairPCA(solver="ADMM")``).

Oracles: cvxpy with Clarabel for the proximal maps and for the SDP itself (the
independent formulation of ``test_convex.py``, written from the raw rows), and
the closed forms where there are some.
"""

import logging
import sys
import warnings
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import fairpca._fantope_admm as admm
import fairpca._fantope_feasible as feasible
import fairpca._fantope_prox as prox
import fairpca._fantope_subspaces as subspaces
import fairpca.convex as convex
from fairpca import ConvexFairPCA
from fairpca.datasets import make_mmd_synthetic2

sys.path.insert(0, str(Path(__file__).parent))
from conftest import data_home  # noqa: E402
from test_convex import _data, _objective_at, _oracle, _problem_data  # noqa: E402


def _projector(components):
    return components.T @ components


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("d", [1, 3])
def test_fantope_projection_against_clarabel(seed, d):
    rng = np.random.default_rng(seed)
    q = 7
    A = rng.standard_normal((q, q))
    A = A + A.T
    W, values = admm.fantope_projection(A, d, rank=d + 1)  # forces the growing search
    ours = (W * values) @ W.T
    X = cp.Variable((q, q), symmetric=True)
    problem = cp.Problem(
        cp.Minimize(cp.sum_squares(X - A)), [X >> 0, np.eye(q) - X >> 0, cp.trace(X) == d]
    )
    problem.solve(solver="CLARABEL")
    np.testing.assert_allclose(ours, X.value, atol=1e-6)
    assert np.trace(ours) == pytest.approx(d)


def _spectrum_matrix(kept, dropped, seed):
    """A symmetric matrix with eigenvalues ``kept`` and ``dropped`` in a random basis."""
    values = np.concatenate((dropped, kept))
    basis, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((values.size,) * 2))
    return (basis * values) @ basis.T


@pytest.mark.parametrize(("q", "n_dropped"), [(9, 0), (9, 2), (60, 1), (60, 4)])
def test_fantope_projection_from_bottom_is_the_projection(q, n_dropped):
    rng = np.random.default_rng(q + n_dropped)
    kept = rng.uniform(0.1, 0.9, q - n_dropped)  # within (theta, theta + 1) for |theta| < 0.1
    d = int(round(kept.sum()))
    A = _spectrum_matrix(kept, rng.uniform(-3.0, -1.0, n_dropped), seed=q)
    X, dropped = admm.fantope_projection_from_bottom(A, d, n_dropped + 2)
    assert dropped == n_dropped
    W, values = admm.fantope_projection(A, d)
    np.testing.assert_allclose(X, (W * values) @ W.T, atol=1e-12 * q)
    if q < 10:  # and against the interior-point solution of the projection problem
        P = cp.Variable((q, q), symmetric=True)
        constraints = [P >> 0, np.eye(q) - P >> 0, cp.trace(P) == d]
        cp.Problem(cp.Minimize(cp.sum_squares(P - A)), constraints).solve(solver="CLARABEL")
        np.testing.assert_allclose(X, P.value, atol=1e-6)


def test_bottom_route_size_stays_where_the_route_pays():
    share = int(prox._FULL_SHARE * 100)
    assert prox.bottom_route_size(100, 0) == 2
    assert prox.bottom_route_size(100, share - 2) == share
    assert prox.bottom_route_size(100, share - 1) is None  # a full decomposition, then
    assert prox.bottom_route_size(prox._FULL_EIGH_MAX, 0) is None  # as cheap in full


def test_admm_projection_leaves_the_bottom_route_once_it_drops_too_many():
    # Nine of 100 eigenvalues dropped from eleven computed: right, but the next
    # projection is cheaper in full, so no bottom route is scheduled.
    rng = np.random.default_rng(3)
    kept = rng.uniform(0.1, 0.9, 91)
    d = int(round(kept.sum()))
    T = _spectrum_matrix(kept, rng.uniform(-3.0, -1.0, 9), seed=4)
    ranks = {"fantope": 2 * d + 2, "low": 11}
    X, Xw, Xv = admm._project_fantope(T, d, ranks, factors=False)
    assert Xw is None and ranks["low"] is None
    W, values = admm.fantope_projection(T, d)
    np.testing.assert_allclose(X, (W * values) @ W.T, atol=1e-10)


def test_fantope_projection_from_bottom_declines_what_it_cannot_certify():
    rng = np.random.default_rng(0)
    kept = rng.uniform(0.1, 0.9, 30)
    d = int(round(kept.sum()))
    # Three eigenvalues dropped, two computed: no shift is consistent with them.
    A = _spectrum_matrix(kept, [-3.0, -2.0, -1.0], seed=1)
    assert admm.fantope_projection_from_bottom(A, d, 2) == (None, 0)
    assert admm.fantope_projection_from_bottom(A, d, 4)[1] == 3
    # One eigenvalue above theta + 1 is clipped at 1: the Cholesky test refuses it.
    spread = np.concatenate((kept[:-1], [5.0]))
    A = _spectrum_matrix(spread, [-2.0], seed=2)
    assert admm.fantope_projection_from_bottom(A, int(round(spread.sum())) - 4, 3) == (None, 0)


def test_admm_from_the_bottom_eigenpairs_reaches_the_same_certified_optimum(monkeypatch):
    # Groups with their own column scales and means (as benchmarks/run.py's scale grid),
    # whose projections drop only a few eigenvalues.
    rng = np.random.default_rng(0)
    s = (rng.random(100_000) < 0.3).astype(int)
    scales, means = rng.uniform(0.5, 2.0, size=(2, 40)), rng.normal(size=(2, 40))
    X = rng.standard_normal((s.size, 40)) * scales[s] + means[s]
    settings = {"n_components": 5, "solver": "ADMM", "tol": 1e-7}
    calls = []
    original = admm.fantope_projection_from_bottom

    def counting(T, d, n_low):
        out = original(T, d, n_low)
        calls.append((out[0] is not None, n_low / T.shape[0]))
        return out

    monkeypatch.setattr(admm, "fantope_projection_from_bottom", counting)
    bottom = ConvexFairPCA(**settings).fit(X, sensitive_features=s)
    assert sum(ok for ok, _ in calls) >= 10  # the route ran, and succeeded
    assert max(share for _, share in calls) <= prox._FULL_SHARE  # only where it pays
    monkeypatch.setattr(admm, "fantope_projection_from_bottom", lambda *args: (None, 0))
    full = ConvexFairPCA(**settings).fit(X, sensitive_features=s)
    for est in (bottom, full):
        assert est.converged_ and est.duality_gap_ <= 1e-7 * abs(est.objective_)
    # Both certified within tol of the same optimum.
    assert bottom.objective_ == pytest.approx(full.objective_, rel=2e-7)


@pytest.mark.parametrize(("shape", "weight"), [((5, 8), 0.3), ((8, 5), 2.0), ((6, 6), 50.0)])
def test_squared_spectral_prox_against_clarabel(shape, weight):
    Y = np.random.default_rng(1).standard_normal(shape)
    Z, clipped, removed = admm.squared_spectral_prox(Y, weight, rank=1)
    V = cp.Variable(shape)
    cp.Problem(
        cp.Minimize(weight * cp.square(cp.sigma_max(V)) + 0.5 * cp.sum_squares(V - Y))
    ).solve(solver="CLARABEL")

    def objective(M):
        return weight * np.linalg.norm(M, 2) ** 2 + 0.5 * np.sum((M - Y) ** 2)

    # The closed form is exact: no worse than the interior-point answer, and near it.
    assert objective(Z) <= objective(V.value) + 1e-9
    np.testing.assert_allclose(Z, V.value, atol=1e-4)
    assert clipped >= 1
    assert removed == pytest.approx(np.linalg.svd(Y - Z, compute_uv=False).sum(), rel=1e-10)


CASES = [
    # (n_features, n_groups, mu, delta, constraints)
    (6, 2, 0.01, 0.1, "both"),
    (6, 2, 0.05, 0.0, "both"),
    (6, 2, 0.02, 0.3, "mean"),
    (6, 2, 0.05, 0.05, "both"),
    (8, 2, 1.0, 0.1, "both"),
    (7, 3, 0.05, 0.0, "both"),
    (6, 2, 0.0, 0.1, "both"),  # no covariance penalty: the LMI blocks drop out
]


@pytest.mark.parametrize(("p", "k", "mu", "delta", "constraints"), CASES)
def test_admm_equals_clarabel_and_certifies_its_gap(p, k, mu, delta, constraints):
    X, s = _data(n_features=p, n_groups=k)
    d = 2
    est = ConvexFairPCA(
        n_components=d,
        mu=mu,
        delta=delta,
        constraints=constraints,
        solver="ADMM",
        tol=1e-8,
        max_iter=50000,
    ).fit(X, sensitive_features=s)
    assert est.converged_ and est.solver_status_ == "optimal"
    S, fs, Gs = _problem_data(X, s, constraints)
    # Clarabel on the same SDP (in the estimator's working coordinates, where delta = 0
    # is exact) and on the independent formulation from the raw rows (where it is an
    # equality met to Clarabel's tolerance, which lets its optimum rise by about 1e-6).
    clarabel = ConvexFairPCA(
        n_components=d, mu=mu, delta=delta, constraints=constraints, solver="CLARABEL", tol=1e-9
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clarabel.fit(X, sensitive_features=s)
    reference = clarabel.objective_
    assert est.objective_ == pytest.approx(reference, rel=1e-6, abs=1e-9)
    assert est.objective_ == pytest.approx(_oracle(S, fs, Gs, d, mu, delta), rel=1e-5)
    # The returned P is feasible and has the reported objective.
    P = est.relaxed_projection_
    eig = np.linalg.eigvalsh(P)
    assert eig[0] >= -1e-10 and eig[-1] <= 1 + 1e-10 and np.trace(P) == pytest.approx(d)
    for f in fs:
        assert f @ P @ f <= delta**2 * (1 + 1e-9) + 1e-12
    assert _objective_at(S, Gs, mu, P) == pytest.approx(est.objective_, rel=1e-9, abs=1e-12)
    # The certified gap brackets the optimum: objective <= optimum <= objective + gap.
    assert 0 <= est.duality_gap_ <= 1e-8 * abs(est.objective_) + 1e-15
    assert reference <= est.objective_ + est.duality_gap_ + 1e-7 * abs(reference)
    # Same top-d subspace as Clarabel (the mean-only case differs by 1.2e-4).
    gap = np.linalg.norm(_projector(est.components_) - _projector(clarabel.components_), 2)
    assert gap <= 2e-4


@pytest.mark.slow
def test_growing_subspaces_reach_the_full_problem_optimum(monkeypatch):
    X, s = make_mmd_synthetic2(n_features=40, n_per_group=240, random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    settings = {"n_components": 5, "mu": 0.01, "delta": 0.0, "solver": "ADMM", "tol": 1e-7}
    direct = ConvexFairPCA(**settings).fit(X, sensitive_features=s)
    monkeypatch.setattr(subspaces, "_SUBSPACE_FROM", 10)
    monkeypatch.setattr(subspaces, "_SUBSPACE_START", 0)
    monkeypatch.setattr(subspaces, "_SUBSPACE_STEP", 2)
    monkeypatch.setattr(subspaces, "_MAX_SHARE", 0.9)  # no fall-back to the full problem
    rounds = []
    original = subspaces._full_bound

    def counting(S, restricted, result, *args):
        rounds.append(result.P.shape[0])  # the subspace's dimension
        return original(S, restricted, result, *args)

    monkeypatch.setattr(subspaces, "_full_bound", counting)
    grown = ConvexFairPCA(**settings).fit(X, sensitive_features=s)
    assert len(rounds) >= 2 and rounds[0] < rounds[-1] < 39  # it grew, and stayed small
    assert grown.converged_ and grown.duality_gap_ <= 1e-7 * abs(grown.objective_)
    assert grown.objective_ == pytest.approx(direct.objective_, rel=2e-7)
    scs = ConvexFairPCA(**{**settings, "solver": "SCS", "tol": 1e-8}).fit(X, sensitive_features=s)
    assert grown.objective_ == pytest.approx(scs.objective_, rel=1e-5)
    diff = np.linalg.norm(_projector(grown.components_) - _projector(scs.components_), 2)
    assert diff <= 1e-3


def test_unconstrained_sdp_is_pca_in_closed_form_and_ties_are_split_evenly():
    base = np.array([[2, 0, 0], [-2, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    X, s = np.vstack([base, base]), np.repeat([0, 1], 6)
    with pytest.warns(UserWarning, match="eigenvalues 2 and 3 of the SDP solution"):
        est = ConvexFairPCA(n_components=2, solver="ADMM").fit(X, sensitive_features=s)
    assert est.n_iter_ == 0 and est.duality_gap_ == 0
    np.testing.assert_allclose(np.linalg.eigvalsh(est.relaxed_projection_), [0.5, 0.5, 1.0])


def test_infeasible_mean_constraints_raise():
    rng = np.random.default_rng(0)
    centres = 3.0 * np.vstack([np.eye(3), np.zeros(3)])
    s = np.repeat(np.arange(4), 40)
    X = centres[s] + rng.standard_normal((160, 3))
    est = ConvexFairPCA(n_components=2, delta=1e-3, solver="ADMM")
    with pytest.raises(ValueError, match="ADMM solver reports the SDP infeasible"):
        est.fit(X, sensitive_features=s)
    assert not hasattr(est, "components_")


def test_iteration_limit_warns_with_the_gap_and_returns_a_feasible_point():
    X, s = _data()
    est = ConvexFairPCA(n_components=2, mu=0.05, delta=0.05, solver="ADMM", max_iter=20)
    with pytest.warns(ConvergenceWarning, match=r"after 20 iterations with relative duality gap"):
        est.fit(X, sensitive_features=s)
    assert not est.converged_ and est.solver_status_ == "optimal_inaccurate"
    assert est.duality_gap_ > 1e-6 * abs(est.objective_)
    S, fs, Gs = _problem_data(X, s)
    assert est.objective_ <= _oracle(S, fs, Gs, 2, 0.05, 0.05) + 1e-9
    for f in fs:
        assert f @ est.relaxed_projection_ @ f <= 0.05**2 * (1 + 1e-9)


# A Gram matrix met in a certificate (CASES[3] at tol=1e-11): its three largest
# eigenvalues agree to 1e-14, the clipped singular values of an LMI block.
# LAPACK's subset driver raised "Internal Error" when asked for the largest alone.
_TIED_TOP = np.array(
    [
        [0.197685913630368, 0.00844809390692107, 0.028664791641057917, -0.019514649680843973,
         -0.0011599588417497229],
        [0.00844809390692107, 0.5402088979293355, -0.1584393666234927, 0.007648905226630949,
         0.008801901431687163],
        [0.028664791641057917, -0.1584393666234927, 0.054833531788728934, 0.025720668932454116,
         0.029582951112349456],
        [-0.019514649680843973, 0.007648905226630949, 0.025720668932454116, 0.5852601371502721,
         -0.0014086636918317064],
        [-0.0011599588417497229, 0.008801901431687163, 0.029582951112349456,
         -0.0014086636918317064, 0.5857054502282841],
    ]
)  # fmt: skip


@pytest.mark.parametrize("d", range(1, 6))
def test_top_sum_inside_a_cluster_of_tied_eigenvalues(d):
    expected = np.sort(np.linalg.svd(_TIED_TOP, compute_uv=False))[::-1][:d].sum()  # PSD
    assert admm._top_sum(_TIED_TOP, d) == pytest.approx(expected, rel=1e-13)


def _linear_map(size, radius, seed):
    """``x -> A x + b`` with ``A`` symmetric of spectral radius ``radius``, and its fixed point."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((size, size)))
    A = (basis * np.linspace(-radius, radius, size)) @ basis.T
    b = rng.standard_normal(size)
    return (lambda x: A @ x + b), np.linalg.solve(np.eye(size) - A, b)


def test_anderson_solves_a_linear_fixed_point_in_size_plus_one_steps():
    # On a linear map, type-II Anderson acceleration with enough memory is GMRES in
    # disguise: exact after size + 1 steps, where the plain iteration (radius 0.95)
    # is still 0.95^8 = 0.66 of the way from the solution.
    size = 6
    step, fixed = _linear_map(size, 0.95, 0)
    anderson, x = admm._Anderson(memory=10, size=size), np.zeros(size)
    for _ in range(size + 2):
        x = anderson.next(x, step(x))
    assert np.linalg.norm(x - fixed) <= 1e-8 * np.linalg.norm(fixed)


def test_anderson_keeps_the_gram_matrix_of_its_newest_differences():
    # The differences overwrite the oldest row once the memory is full; the Gram
    # matrix updated row by row must stay that of the stored rows.
    step, _ = _linear_map(10, 0.9, 1)
    anderson, x = admm._Anderson(memory=3, size=10), np.zeros(10)
    history = []
    for _ in range(9):
        g = step(x)
        history.append((g, g - x))
        x = anderson.next(x, g)
    newest = [history[i][1] - history[i - 1][1] for i in range(6, 9)]
    stored = anderson.dF[: anderson.count]
    assert anderson.count == 3
    np.testing.assert_allclose(sorted(map(tuple, stored)), sorted(map(tuple, newest)))
    np.testing.assert_allclose(anderson.gram, stored @ stored.T, rtol=1e-12, atol=1e-14)
    # The fit's right side, updated row by row, against the last residual.
    np.testing.assert_allclose(anderson.fit[:3], stored @ history[-1][1], rtol=1e-10, atol=1e-12)


def test_admm_needs_no_cvxpy(monkeypatch):
    X, s = _data()
    monkeypatch.setitem(sys.modules, "cvxpy", None)
    est = ConvexFairPCA(n_components=2, delta=0.0, solver="ADMM").fit(X, sensitive_features=s)
    assert est.converged_


@pytest.mark.requires_data
def test_admm_on_a_lee2022_compas_split_against_clarabel():
    from fairpca.experiments import lee2022

    split = lee2022("compas", split=0)
    settings = {"n_components": 2, "mu": 0.01, "delta": 0.0}
    ours = ConvexFairPCA(**settings, solver="ADMM", tol=1e-8, max_iter=50000)
    ours.fit(split.X_train, sensitive_features=split.s_train)
    reference = ConvexFairPCA(**settings, solver="CLARABEL", tol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference.fit(split.X_train, sensitive_features=split.s_train)
    assert ours.converged_
    assert ours.objective_ == pytest.approx(reference.objective_, rel=1e-6)
    diff = np.linalg.norm(_projector(ours.components_) - _projector(reference.components_), 2)
    assert diff <= 1e-4


# ---------------------------------------------------------------------------
# feasible points, fall-backs and progress (issue 38)
# ---------------------------------------------------------------------------


def _compas_numeric():
    """COMPAS's numeric columns as a user would pass them: imputed, standardised; race."""
    import pandas as pd
    from sklearn.preprocessing import StandardScaler

    frame = pd.read_csv(data_home() / "compas" / "compas-scores-two-years.csv")
    numeric = frame.select_dtypes("number").drop(columns=["id", "two_year_recid"])
    numeric = numeric.loc[:, numeric.notna().any()]
    numeric = numeric.fillna(numeric.median())
    numeric = numeric.loc[:, numeric.std() > 0]
    return StandardScaler().fit_transform(numeric.to_numpy(float)), frame["race"].to_numpy()


def _mean_products(est, X, s):
    """``f^T P f`` of every pairwise mean difference ``f`` at the fitted ``P``."""
    means = np.array([X[s == g].mean(axis=0) for g in np.unique(s)])
    diffs = np.array([means[b] - means[a] for a in range(len(means)) for b in range(a)])
    return np.einsum("ja,ab,jb->j", diffs, est.relaxed_projection_, diffs)


@pytest.mark.slow
@pytest.mark.requires_data("compas")
def test_compas_numeric_columns_in_six_groups_at_the_defaults():
    # Issue 38: 10,000 iterations and "found no point meeting the mean constraints" (the
    # restoration point mixed in put trace on the mean differences), then a gap of 0.2
    # after 10,000 iterations (mean-constraint rows |g| / delta up to 27). Now about
    # 1,500 iterations, 7 s of CPU.
    X, s = _compas_numeric()
    est = ConvexFairPCA(n_components=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # P*'s eigenvalues 2 and 3 tie
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(X, sensitive_features=s)
    assert est.converged_ and est.n_iter_ < 5000
    scale = max(abs(est.objective_), abs(est.objective_ + est.duality_gap_))
    assert est.duality_gap_ <= est.tol * scale
    assert np.all(_mean_products(est, X, s) <= est.delta**2 * (1 + 1e-9))
    reference = ConvexFairPCA(n_components=2, solver="CLARABEL", tol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference.fit(X, sensitive_features=s)
    # objective <= optimum <= objective + gap, with Clarabel's optimum to its accuracy.
    slack = 1e-7 * abs(reference.objective_)
    assert (
        est.objective_ - slack <= reference.objective_ <= est.objective_ + est.duality_gap_ + slack
    )


def _random_groups(p, k, seed):
    """``make_gaussian_groups`` data in ``k`` groups, standardised."""
    return _data(n_features=p, n_groups=k, n_samples=40 * k, seed=seed)


RANDOM_CASES = [
    # (p, k, d, delta, constraints): d <= p - (k - 1) in every case. Many groups with a
    # covariance penalty make slow problems for every first-order solver (k = 6:
    # 5,000-8,000 ADMM iterations, SCS 66,000 or unconverged at 100,000).
    (6, 2, 2, 0.05, "both"),
    (8, 3, 3, 0.0, "both"),
    (8, 4, 2, 0.02, "mean"),
    (10, 6, 4, 0.1, "mean"),
    pytest.param(12, 8, 2, 0.03, "mean", marks=pytest.mark.slow),  # 2,000+ iterations
    (12, 10, 3, 0.0, "mean"),
    (10, 10, 1, 0.05, "mean"),
]


@pytest.mark.parametrize(("p", "k", "d", "delta", "constraints"), RANDOM_CASES)
def test_random_groups_fit_feasibly_within_the_gap_of_scs(p, k, d, delta, constraints):
    X, s = _random_groups(p, k, seed=k)
    settings = {"n_components": d, "delta": delta, "constraints": constraints}
    est = ConvexFairPCA(**settings, tol=1e-5, max_iter=20000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ties of P*'s eigenvalues
        est.fit(X, sensitive_features=s)
    assert est.duality_gap_ is not None  # the ADMM's own answer, not the fall-back's
    scale = max(abs(est.objective_), abs(est.objective_ + est.duality_gap_))
    assert est.converged_ and est.duality_gap_ <= est.tol * scale
    if delta == 0:
        # Exact by the choice of coordinates: the projected means agree to rounding.
        means = np.array([X[s == g].mean(axis=0) for g in range(k)]) @ est.components_.T
        assert np.ptp(means, axis=0).max() <= 1e-10 * np.abs(X).max()
    else:
        assert np.all(_mean_products(est, X, s) <= delta**2 * (1 + 1e-9))
    scs = ConvexFairPCA(**settings, solver="SCS", tol=1e-7, max_iter=100000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scs.fit(X, sensitive_features=s)
    # SCS meets the constraints only to its tolerance, so its value may exceed the
    # optimum by about that much; within that, it lies in [objective, objective + gap].
    slack = 1e-5 * scale
    assert est.objective_ - slack <= scs.objective_ <= est.objective_ + est.duality_gap_ + slack


def test_restoration_near_a_full_rank_iterate_stays_off_the_mean_differences():
    # The ADMM's iterates have full rank early on. Built in the full space, the basis of
    # the projected iterate took arbitrary directions (the mean differences among them)
    # for its missing rank, and the Fantope projection put trace on them: on COMPAS
    # every certificate failed. The complement's coordinates rule that out.
    rng = np.random.default_rng(0)
    q, d = 9, 2
    G = rng.standard_normal((4, q)) * 20
    S = np.cov(rng.standard_normal((50, q)), rowvar=False)
    restore = feasible.restoration_point(S, G, d)
    W, _ = np.linalg.qr(rng.standard_normal((q, q)))
    values = np.full(q, d / q)  # trace d spread over every direction
    R, core, products = feasible._nearby_restoration(W, values, restore, G)
    assert np.trace(core) == pytest.approx(d)
    assert np.all(np.abs(products) <= 1e-10)
    limits = np.ones(len(G))
    Wf, core_f = feasible.feasible_point(W, values, restore, G, limits)
    gW = G @ Wf
    assert np.all(np.einsum("ja,ab,jb->j", gW, core_f, gW) <= limits * (1 + 1e-9))


def test_unconverged_admm_falls_back_to_scs(monkeypatch):
    X, s = _data(n_groups=3)
    real = convex.solve_fpca_sdp

    def short(S, factors, mean_vectors, d, mu, delta, tol, max_iter):
        return real(S, factors, mean_vectors, d, mu, delta, tol, 5)

    monkeypatch.setattr(convex, "solve_fpca_sdp", short)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = ConvexFairPCA(n_components=2, delta=0.05).fit(X, sensitive_features=s)
    assert est.converged_ and est.solver_status_ == "optimal" and est.duality_gap_ is None
    monkeypatch.undo()
    admm = ConvexFairPCA(n_components=2, delta=0.05).fit(X, sensitive_features=s)
    assert est.objective_ == pytest.approx(admm.objective_, rel=1e-4)


@pytest.mark.parametrize("with_cvxpy", [True, False])
def test_iteration_limit_returns_the_certified_point_with_its_gap(monkeypatch, with_cvxpy):
    # SCS gets the same iteration limit and does not reach "optimal" either; without
    # cvxpy the ADMM's point is returned directly. Both warn with the certified gap.
    X, s = _data(n_groups=4)
    if not with_cvxpy:
        monkeypatch.setitem(sys.modules, "cvxpy", None)
    est = ConvexFairPCA(n_components=2, delta=0.02, max_iter=10)
    with pytest.warns(ConvergenceWarning, match=r"relative duality gap \d\.\d\de[+-]\d\d"):
        est.fit(X, sensitive_features=s)
    assert not est.converged_ and est.solver_status_ == "optimal_inaccurate"
    assert est.duality_gap_ > est.tol * abs(est.objective_)
    assert np.all(_mean_products(est, X, s) <= 0.02**2 * (1 + 1e-9))


def test_scs_fallback_is_skipped_for_an_sdp_too_large_for_it(monkeypatch):
    # At 380 features and six groups cvxpy compiled the fallback SDP for many minutes.
    pytest.importorskip("cvxpy")
    X, s = _data(n_groups=4)
    monkeypatch.setattr(convex, "_MAX_SCS_FALLBACK_SIZE", 10)

    def never(*args, **kwargs):
        raise AssertionError("SCS must not be called")

    monkeypatch.setattr(convex, "_solve_sdp", never)
    est = ConvexFairPCA(n_components=2, delta=0.02, max_iter=10)
    with pytest.warns(ConvergenceWarning, match=r"SCS not tried: its SDP would have \d+ matrix"):
        est.fit(X, sensitive_features=s)
    assert not est.converged_ and est.solver_status_ == "optimal_inaccurate"


def test_sdp_size_counts_p_and_every_lmi_block():
    F = np.ones((3, 5))
    assert convex._sdp_size(5, [(F, None), (F, F)]) == 25 + 3 * 64


def test_progress_is_logged_once_per_certificate_at_most(monkeypatch, caplog):
    X, s = _data(n_groups=3)
    monkeypatch.setattr(admm, "_PROGRESS_SECONDS", 0.0)
    with caplog.at_level(logging.INFO, logger="fairpca"):
        est = ConvexFairPCA(n_components=2, delta=0.05).fit(X, sensitive_features=s)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("ADMM iteration")]
    assert len(lines) == est.n_iter_ // admm._CHECK_EVERY
    assert "relative gap" in lines[-1]
    monkeypatch.setattr(admm, "_PROGRESS_SECONDS", 3600.0)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fairpca"):
        ConvexFairPCA(n_components=2, delta=0.05).fit(X, sensitive_features=s)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("ADMM iteration")]
    assert len(lines) == 2  # the first certificate and the converged one
