import warnings
from itertools import combinations

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning

import fairpca._pareto_objectives as _pareto_objectives
import fairpca.pareto as pareto
from fairpca._linalg import top_eigh
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import (
    marginal_loss,
    pairwise_disparity_error,
    reconstruction_error,
)
from fairpca.pareto import ParetoFairPCA
from fairpca.riemannian import random_point, retract_polar, subspace_distance

# ----------------------------------------------------------------- helpers


def fit_quiet(est, X, s):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        # The paper's summed losses level groups down (tested on its own below).
        warnings.filterwarnings("ignore", "ParetoFairPCA leaves", UserWarning)
        return est.fit(X, sensitive_features=s)


def paper(n_components, **params):
    """Kamani et al.'s ParetoFairPCA: disparity errors summed over each group's rows."""
    return ParetoFairPCA(n_components, group_loss="summed", **params)


def mean_abs_gap(X, s, projection, d=None):
    gaps = pairwise_disparity_error(X, s, projection, n_components=d)
    return float(np.mean(np.abs(list(gaps.values()))))


def pca_basis(X, d):
    return PCA(n_components=d).fit(X).components_.T


def three_groups(seed=0, n=600, p=8):
    """Three groups with different covariance directions and sizes."""
    X, s = make_gaussian_groups(
        n_samples=n, n_features=p, n_groups=3, group_weights=[0.5, 0.3, 0.2], random_state=seed
    )
    return X, s


def reference_values(X, s, U, d, psi, kind="pairwise"):
    """Objectives of eq. (19) without alpha, computed from the raw rows (no moments)."""
    Xc = X - X.mean(axis=0)
    total = np.sum(Xc**2)

    def errors(V):
        out = []
        for g in np.unique(s):
            A = Xc[s == g]
            own = np.sum(np.linalg.svd(A, compute_uv=False)[d:] ** 2)
            out.append(np.sum((A - A @ V @ V.T) ** 2) - own)
        return np.array(out)

    def raw(V):
        e = errors(V)
        if kind == "pairwise":
            return np.array([e[a] - e[b] for a, b in combinations(range(len(e)), 2)])
        return e

    at_pca = raw(pca_basis(X, d))
    scale = np.max(np.abs(at_pca)) if kind == "pairwise" else np.max(at_pca)
    z = raw(U) / scale
    penalty = {"square": 0.5 * z**2, "abs": np.abs(z), "exp": np.cosh(z) - 1}[psi]
    loss = np.sum((Xc - Xc @ U @ U.T) ** 2) / total
    return np.concatenate([[loss], penalty])


def module_objectives(X, s, d, psi, kind="pairwise"):
    """The module's objective vector, built from the scatter matrices as fit does."""
    Xc = X - X.mean(axis=0)
    groups = np.unique(s)
    scatters = np.array([Xc[s == g].T @ Xc[s == g] for g in groups])
    U0 = top_eigh(scatters.sum(axis=0), d)[1]
    total = np.trace(scatters.sum(axis=0))
    labels = [str(g) for g in groups]
    normalised = scatters / total
    spectra = np.linalg.eigvalsh(normalised)
    objectives, start, _ = pareto._objective_vectors(
        normalised, spectra, U0, kind, psi, 0.0, labels
    )
    return objectives, start


def random_tangent(U, rng):
    V = rng.standard_normal(U.shape)
    return V - U @ (U.T @ V + V.T @ U) / 2


# ------------------------------------------------------- objectives and gradients


@pytest.mark.parametrize("psi", ["square", "abs", "exp"])
@pytest.mark.parametrize("kind", ["pairwise", "single"])
def test_objective_values_match_raw_definitions(psi, kind):
    X, s = three_groups(seed=1)
    d = 3
    objectives, _ = module_objectives(X, s, d, psi, kind)
    for U in (pca_basis(X, d), random_point(X.shape[1], d, random_state=0)):
        np.testing.assert_allclose(
            objectives.values(U), reference_values(X, s, U, d, psi, kind), rtol=1e-9, atol=1e-12
        )


def test_penalties_of_interleaved_kinds_match_each_objectives_own():
    # The penalties are computed one kind at a time: every objective must still get its own.
    kinds = ("linear", "exp", "square", "linear", "abs", "exp")
    m = len(kinds)
    objectives = _pareto_objectives._Objectives(
        np.eye(3)[None], np.ones((m, 1)), np.ones(m), np.ones(m), kinds, 0.0, kinds, (0,) * m
    )
    z = np.array([-0.7, 1.3, -2.1, 0.4, -0.9, -0.2])
    by_hand = {
        "linear": (lambda x: x, lambda x: 1.0),
        "square": (lambda x: x * x / 2, lambda x: x),
        "abs": (abs, lambda x: 1.0 if x > 0 else -1.0),
        "exp": (lambda x: np.cosh(x) - 1, np.sinh),
    }
    values, slopes = objectives._penalised(z)
    np.testing.assert_allclose(
        values, [by_hand[k][0](x) for k, x in zip(kinds, z, strict=True)], rtol=1e-15
    )
    np.testing.assert_allclose(
        slopes, [by_hand[k][1](x) for k, x in zip(kinds, z, strict=True)], rtol=1e-15
    )
    np.testing.assert_array_equal(objectives.penalties(z), values)


@pytest.mark.parametrize("psi", ["square", "abs", "exp"])
@pytest.mark.parametrize("kind", ["pairwise", "single"])
def test_riemannian_gradients_match_finite_differences(psi, kind):
    X, s = three_groups(seed=2)
    d = 2
    objectives, start = module_objectives(X, s, d, psi, kind)
    rng = np.random.default_rng(1)
    h = 1e-6
    for seed in range(3):
        U = random_point(X.shape[1], d, random_state=seed)
        for objs in (objectives, start):
            _, _, G = objs.evaluate(U)
            # Gradients are tangent: U^T G is skew (here zero: horizontal).
            np.testing.assert_allclose(np.einsum("pd,ope->ode", U, G), 0, atol=1e-12)
            V = random_tangent(U, rng)
            plus = objs.values(retract_polar(U, h * V))
            minus = objs.values(retract_polar(U, -h * V))
            np.testing.assert_allclose(
                (plus - minus) / (2 * h), np.einsum("opd,pd->o", G, V), rtol=1e-5, atol=1e-8
            )


# --------------------------------------------------------------- the descent


@pytest.fixture(scope="module")
def binary():
    return make_gaussian_groups(n_samples=800, n_features=10, random_state=7)


def best_fair_loss(X, s, d, n_starts=0):
    """Smallest total loss with Delta = 0 found by SLSQP over U = polar(W) (independent).

    Started from PCA (and ``n_starts`` random points, which found nothing better here).
    """
    Xc = X - X.mean(axis=0)
    total = np.sum(Xc**2)
    parts = [Xc[s == g] for g in np.unique(s)]
    scatters = [A.T @ A for A in parts]
    own = [np.sum(np.linalg.svd(A, compute_uv=False)[d:] ** 2) for A in parts]
    traces = [np.trace(S) for S in scatters]

    def polar(w):
        u, _, vt = np.linalg.svd(w.reshape(X.shape[1], d), full_matrices=False)
        return u @ vt

    def errors(w):
        U = polar(w)
        return [t - np.sum(U * (S @ U)) - o for S, t, o in zip(scatters, traces, own, strict=True)]

    def gap(w):
        e = errors(w)
        return (e[0] - e[1]) / total

    def loss(w):
        U = polar(w)
        return 1.0 - sum(np.sum(U * (S @ U)) for S in scatters) / total

    rng = np.random.default_rng(0)
    starts = [pca_basis(X, d)] + [rng.standard_normal((X.shape[1], d)) for _ in range(n_starts)]
    best = np.inf
    for w0 in starts:
        result = minimize(
            loss,
            w0.ravel(),
            method="SLSQP",
            constraints=[{"type": "eq", "fun": gap}],
            options={"maxiter": 500, "ftol": 1e-12},
        )
        if abs(gap(result.x)) < 1e-9:
            best = min(best, loss(result.x))
    return best * total / X.shape[0]


def test_binary_fit_is_fair_and_nearly_as_cheap_as_the_best_fair_subspace(binary):
    X, s = binary
    d = 3
    est = fit_quiet(paper(d), X, s)
    pca = PCA(n_components=d).fit(X)
    assert est.converged_ and est.direction_norm_ <= est.tol
    assert est.history_["direction_norm"][-1] == est.direction_norm_
    assert mean_abs_gap(X, s, est) <= 0.2 * mean_abs_gap(X, s, pca)
    # On these groups fairness is costly (about 12 % of the loss): compare with
    # the best exactly fair subspace an independent solver finds.
    best = best_fair_loss(X, s, d)
    assert reconstruction_error(X, pca) < best <= 1.2 * reconstruction_error(X, pca)
    assert reconstruction_error(X, est) <= 1.05 * best
    Z = est.transform(X)
    assert Z.shape == (X.shape[0], d) and np.all(np.isfinite(Z))
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(d), atol=1e-10)


def test_objectives_never_increase_and_history_is_consistent(binary):
    X, s = binary
    for kind in ("pairwise", "single"):
        est = fit_quiet(paper(3, disparity=kind), X, s)
        for record in (est.history_, est.start_history_):
            f = record["objectives"]
            n = len(f)
            assert record["direction_norm"].shape == record["step"].shape == (n,)
            assert record["weights"].shape == f.shape
            np.testing.assert_allclose(record["weights"].sum(axis=1), 1.0)
            assert np.all(np.diff(f, axis=0) <= 1e-12 * np.abs(f[:-1]))
            assert np.all(record["step"][:-1] > 0) and record["step"][-1] == 0
        assert len(est.history_["step"]) + len(est.start_history_["step"]) - 2 == est.n_iter_
        # The last recorded values are the objectives of the returned subspace.
        U = est.components_.T
        expected = reference_values(X, s, U, 3, "square", kind) + est.alpha_ * 3
        np.testing.assert_allclose(est.history_["objectives"][-1], expected, rtol=1e-8)
        names = est.objective_names_
        assert names[0] == "loss" and len(names) == est.history_["objectives"].shape[1]
        # The start search records the loss it steers by; it may rise there.
        start = est.start_history_
        assert start["loss"].shape == start["steered"].shape == start["step"].shape
        first = est.history_["objectives"][0, 0] - est.alpha_ * 3
        assert start["loss"][-1] == pytest.approx(first, rel=1e-12)


def test_nonconvergence_warns_with_the_achieved_norm(binary):
    X, s = binary
    with pytest.warns(ConvergenceWarning, match=r"\|D\| = [0-9.e+-]+ > tol = 1e-12"):
        est = ParetoFairPCA(3, tol=1e-12, max_iter=2).fit(X, sensitive_features=s)
    assert not est.converged_ and est.direction_norm_ > 1e-12
    assert np.all(np.isfinite(est.components_))


def test_converged_fits_do_not_warn(binary):
    X, s = binary
    for d in (1, 2, 4):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = ParetoFairPCA(d).fit(X, sensitive_features=s)
        assert est.converged_ == (est.direction_norm_ <= est.tol)
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught) != est.converged_


def test_disparity_ratio_bounds_the_result_and_one_returns_pca(binary):
    X, s = binary
    d = 3
    pca = PCA(n_components=d).fit(X)
    for ratio in (0.5, 0.2):
        est = fit_quiet(paper(d, disparity_ratio=ratio), X, s)
        assert mean_abs_gap(X, s, est) <= ratio * mean_abs_gap(X, s, pca) * (1 + 1e-9)
    est = fit_quiet(paper(d, disparity_ratio=1.0), X, s)
    assert subspace_distance(est.components_.T, pca.components_.T) < 1e-8
    assert est.n_iter_ == 0


def test_alpha_does_not_change_the_iterates(binary):
    X, s = binary
    fits = [fit_quiet(ParetoFairPCA(3, alpha=a), X, s) for a in (0.0, 7.5, "auto")]
    for est in fits[1:]:
        np.testing.assert_array_equal(est.components_, fits[0].components_)
        shift = (est.alpha_ - fits[0].alpha_) * 3
        np.testing.assert_allclose(
            est.history_["objectives"], fits[0].history_["objectives"] + shift, rtol=1e-12
        )
    assert fits[2].alpha_ > 0  # the groups' scatter matrices differ


def test_auto_alpha_is_appendix_c_bound(binary):
    X, s = binary
    est = fit_quiet(paper(2), X, s)
    Xc = X - X.mean(axis=0)
    S = [Xc[s == g].T @ Xc[s == g] for g in np.unique(s)]
    # gamma_max(X_a^T X_a) - gamma_min(X_b^T X_b), largest over a != b.
    top = [np.linalg.svd(Xc[s == g], compute_uv=False)[0] ** 2 for g in np.unique(s)]
    low = [np.linalg.eigvalsh(M)[0] for M in S]
    expected = max(top[0] - low[1], top[1] - low[0])
    assert est.alpha_ == pytest.approx(expected / np.sum(Xc**2), rel=1e-10)
    # It bounds the largest eigenvalue of each difference (what convexity needs).
    for a, b in ((0, 1), (1, 0)):
        assert np.linalg.eigvalsh(S[a] - S[b])[-1] <= expected


def test_scale_and_row_repetition_invariance(binary):
    X, s = binary
    base = fit_quiet(ParetoFairPCA(3), X, s)
    scaled = fit_quiet(ParetoFairPCA(3), 1e3 * X + 5.0, s)
    repeated = fit_quiet(ParetoFairPCA(3), np.repeat(X, 3, axis=0), np.repeat(s, 3))
    for other in (scaled, repeated):
        assert subspace_distance(base.components_.T, other.components_.T) < 1e-6


def test_deterministic(binary):
    X, s = binary
    a = ParetoFairPCA(2).fit(X, sensitive_features=s)
    b = ParetoFairPCA(2).fit(X, sensitive_features=s)
    np.testing.assert_array_equal(a.components_, b.components_)


def test_identical_groups_give_pca():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((200, 6)) @ np.diag([3, 2, 1.5, 1, 0.5, 0.2])
    X = np.vstack([A, A])
    s = np.repeat(["a", "b"], 200)
    est = fit_quiet(ParetoFairPCA(2), X, s)
    assert subspace_distance(est.components_.T, pca_basis(X, 2)) < 1e-10
    assert est.n_iter_ == 0 and est.converged_
    assert np.all(np.isfinite(est.components_))


@pytest.mark.parametrize("kind", ["pairwise", "single"])
def test_three_groups(kind):
    X, s = three_groups(seed=5)
    d = 2
    est = fit_quiet(paper(d, disparity=kind), X, s)
    pca = PCA(n_components=d).fit(X)
    assert est.converged_ and len(est.objective_names_) == 4
    fair = pairwise_disparity_error(X, s, est)
    base = pairwise_disparity_error(X, s, pca)
    if kind == "pairwise":
        # Every pairwise objective was lowered from PCA on: every gap shrinks.
        assert all(abs(fair[key]) < abs(base[key]) for key in base)
    assert reconstruction_error(X, est) <= 1.1 * reconstruction_error(X, pca)


# ---------------------------------------------- many groups: one large, several small


def race_like(seed):
    """One group with 85 % of the rows and three of 5 % each, in R^3.

    As on Adult / race, the disparity errors (sums over rows) of the small
    groups are small and nearly equal at PCA, the large group's is large.
    """
    return make_gaussian_groups(
        n_samples=1000,
        n_features=3,
        n_groups=4,
        group_weights=[0.85, 0.05, 0.05, 0.05],
        random_state=seed,
    )


def lines_grid(X, s, steps=400):
    """Pairwise gaps and total loss of every line on a grid of the unit hemisphere.

    Brute force, independent of the module: with d = 1 a subspace is a unit
    vector ``u``, ``E_a(u) = |A_a|^2 - |A_a u|^2 - (own best rank-1 loss)``
    from the raw rows ``A_a`` centred on the pooled mean.

    Returns
    -------
    gaps : ndarray of shape (n_lines, n_pairs)
    loss : ndarray of shape (n_lines,)
    at : callable
        ``at(u)``: the gaps and loss of one unit vector, by the same formulas.
    """
    Xc = X - X.mean(axis=0)
    parts = [Xc[s == g] for g in np.unique(s)]
    scatters = np.array([A.T @ A for A in parts])
    own = np.array([np.sum(np.linalg.svd(A, compute_uv=False)[1:] ** 2) for A in parts])
    pairs = list(combinations(range(len(parts)), 2))

    def evaluate(u):
        kept = np.einsum("np,kpq,nq->nk", u, scatters, u)
        errors = np.trace(scatters, axis1=1, axis2=2) - kept - own
        gaps = np.stack([errors[:, a] - errors[:, b] for a, b in pairs], axis=1)
        return gaps, np.sum(Xc**2) - kept.sum(axis=1)

    theta, phi = np.meshgrid(
        np.linspace(0.0, np.pi / 2, steps + 1), np.linspace(0.0, 2 * np.pi, 2 * steps)
    )
    u = np.stack(
        [np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], axis=-1
    ).reshape(-1, 3)
    gaps, loss = evaluate(u)

    def at(v):
        g, value = evaluate(np.reshape(v, (1, 3)))
        return g[0], value[0]

    return gaps, loss, at


def test_many_groups_reach_the_disparity_ratio_at_the_grid_cost():
    """PCA's small groups have nearly equal disparity errors; the fit must still be fair.

    A Pareto descent on the six pairwise objectives cannot start here (its
    direction is no longer than the tiny gradient of the nearly equal pairs):
    it returned PCA. A brute-force grid of lines shows that the default
    ``disparity_ratio`` (every gap at most 0.1 times PCA's largest) can be
    met at 5.2 % more loss than PCA.
    """
    X, s = race_like(8)
    gaps, loss, at = lines_grid(X, s)
    gaps_pca, loss_pca = at(pca_basis(X, 1))
    est = fit_quiet(paper(1), X, s)
    gaps_fit, loss_fit = at(est.components_)
    largest = np.max(np.abs(gaps_pca))
    assert np.max(np.abs(gaps_fit)) <= 0.1 * largest * (1 + 1e-9)
    assert np.mean(np.abs(gaps_fit)) <= 0.2 * np.mean(np.abs(gaps_pca))
    # Independent: the cheapest line on the grid that meets the same bound.
    feasible = np.max(np.abs(gaps), axis=1) <= 0.1 * largest
    assert loss_pca < loss[feasible].min() <= 1.06 * loss_pca
    assert loss_fit <= 1.01 * loss[feasible].min()


def test_many_groups_unreachable_ratio_stops_at_the_least_spread():
    """When no line meets the ratio, the start is the minimum of the spread of the gaps.

    The start search descends the sum of the pairwise penalties,
    ``sum_(a<b) Delta_ab^2 / 2`` (normalised); the brute-force grid's
    smallest sum must not be below the fit's by more than the grid's
    resolution.
    """
    X, s = race_like(6)
    gaps, _, at = lines_grid(X, s)
    gaps_pca, _ = at(pca_basis(X, 1))
    largest = np.max(np.abs(gaps_pca))
    assert np.min(np.max(np.abs(gaps), axis=1)) > 0.15 * largest  # 0.1 is out of reach
    est = fit_quiet(paper(1), X, s)
    gaps_fit, _ = at(est.components_)
    spread_grid = np.min(np.sum(gaps**2, axis=1))
    assert np.sum(gaps_fit**2) <= 1.01 * spread_grid
    assert np.sum(gaps_fit**2) <= 0.05 * np.sum(gaps_pca**2)
    assert np.mean(np.abs(gaps_fit)) <= 0.25 * np.mean(np.abs(gaps_pca))


def test_group_smaller_than_n_components():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((150, 6)) @ np.diag([3, 2, 1.5, 1, 0.5, 0.2])
    X = np.vstack([X, rng.standard_normal((2, 6))])
    s = np.array([0] * 150 + [1] * 2)
    d = 3
    objectives, _ = module_objectives(X, s, d, "square", "single")
    # The 2-row group's own rank-3 optimum is exact: its disparity error is its loss.
    Xc = X - X.mean(axis=0)
    U = pca_basis(X, d)
    small = Xc[s == 1]
    loss_small = np.sum((small - small @ U @ U.T) ** 2)
    scale = objectives.scale[2] * np.sum(Xc**2)
    z_small = np.sqrt(2 * objectives.values(U)[2])
    assert z_small * scale == pytest.approx(loss_small, rel=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = paper(d).fit(X, sensitive_features=s)
    assert np.all(np.isfinite(est.components_))
    assert mean_abs_gap(X, s, est) < mean_abs_gap(X, s, PCA(n_components=d).fit(X))


def test_abs_and_exp_penalties_run(binary):
    X, s = binary
    pca = PCA(n_components=3).fit(X)
    for psi in ("abs", "exp"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = paper(3, psi=psi).fit(X, sensitive_features=s)
        assert mean_abs_gap(X, s, est) <= 0.2 * mean_abs_gap(X, s, pca)
        f = est.history_["objectives"]
        assert np.all(np.diff(f, axis=0) <= 1e-12 * np.abs(f[:-1]))


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"disparity": "both"}, ValueError, "disparity"),
        ({"group_loss": "mean"}, ValueError, "group_loss must be one of 'per_row', 'summed'"),
        ({"group_loss": None}, ValueError, "group_loss"),
        ({"psi": "cube"}, ValueError, "psi"),
        ({"disparity_ratio": 0.0}, ValueError, "disparity_ratio"),
        ({"disparity_ratio": 1.5}, ValueError, "disparity_ratio"),
        ({"alpha": -1.0}, ValueError, "alpha"),
        ({"alpha": "big"}, ValueError, "alpha"),
        ({"tol": -1e-3}, ValueError, "tol"),
        ({"max_iter": 2.5}, TypeError, "max_iter"),
        ({"max_iter": True}, TypeError, "max_iter"),
        ({"verbose": -1}, ValueError, "verbose"),
    ],
)
def test_bad_parameters(binary, params, error, match):
    X, s = binary
    with pytest.raises(error, match=match):
        ParetoFairPCA(2, **params).fit(X, sensitive_features=s)


def test_bad_parameters_are_rejected_before_the_data_is_read():
    with pytest.raises(ValueError, match="psi"):
        ParetoFairPCA(2, psi="cube").fit("not even an array", sensitive_features=None)


def test_overflowing_data_is_a_clear_error():
    X = np.array([[1e200, 0.0], [-1e200, 1.0], [1e200, 2.0], [-1e200, 3.0]])
    with pytest.raises(ValueError, match="overflow"):
        ParetoFairPCA(1).fit(X, sensitive_features=[0, 0, 1, 1])


def test_verbose_logs(binary, caplog):
    X, s = binary
    with caplog.at_level("INFO", logger="fairpca.pareto"):
        ParetoFairPCA(2, verbose=1).fit(X, sensitive_features=s)
    assert any("Pareto descent" in r.message for r in caplog.records)


# ------------------------------------------ per-row or summed group losses (issue 43)


def per_row_reference(X, s, U, d):
    """Pairwise disparities of ``E_a / n_a`` at ``U`` over their largest size at PCA.

    From the raw rows (SVD of each group's rows), independent of the module:
    Kamani et al.'s summed errors with each group re-weighted by ``1 / n_a``.
    """
    Xc = X - X.mean(axis=0)

    def per_row(V):
        out = []
        for g in np.unique(s):
            A = Xc[s == g]
            own = np.sum(np.linalg.svd(A, compute_uv=False)[d:] ** 2)
            out.append((np.sum((A - A @ V @ V.T) ** 2) - own) / len(A))
        return np.array([a - b for a, b in combinations(out, 2)])

    return per_row(U) / np.max(np.abs(per_row(pca_basis(X, d))))


@pytest.mark.parametrize("seed", [0, 1])
def test_per_row_objectives_are_summed_ones_reweighted_by_group_size(seed):
    X, s = three_groups(seed=seed)
    d = 2
    Xc = X - X.mean(axis=0)
    groups = np.unique(s)
    counts = np.array([np.sum(s == g) for g in groups])
    scatters = np.array([Xc[s == g].T @ Xc[s == g] for g in groups]) / np.sum(Xc**2)
    spectra = np.linalg.eigvalsh(scatters)
    U0 = pca_basis(X, d)
    weights = pareto._group_weights(counts, "per_row")
    np.testing.assert_allclose(weights, len(X) / counts, rtol=1e-15)
    np.testing.assert_array_equal(pareto._group_weights(counts, "summed"), 1.0)
    labels = [str(g) for g in groups]
    per_row, _, _ = pareto._objective_vectors(
        scatters, spectra, U0, "pairwise", "abs", 0.0, labels, weights
    )
    summed, _, _ = pareto._objective_vectors(scatters, spectra, U0, "pairwise", "abs", 0.0, labels)
    for U in (U0, random_point(X.shape[1], d, random_state=seed)):
        # psi = "abs": the values are |z|, the normalised pairwise gaps.
        np.testing.assert_allclose(
            per_row.values(U)[1:], np.abs(per_row_reference(X, s, U, d)), rtol=1e-9
        )
        assert per_row.values(U)[0] == pytest.approx(summed.values(U)[0], rel=1e-12)  # loss
    # The groups differ in size, so the two normalisations are different problems ...
    assert not np.allclose(per_row.values(U)[1:], summed.values(U)[1:], rtol=1e-3)
    # ... with equal sizes, n / n_a is one constant and the objectives are the same.
    equal, _, _ = pareto._objective_vectors(
        scatters, spectra, U0, "pairwise", "abs", 0.0, labels, np.full(len(groups), 3.0)
    )
    np.testing.assert_allclose(equal.values(U), summed.values(U), rtol=1e-12)


def test_summed_losses_level_the_best_served_group_down_per_row_ones_do_not():
    # Groups of 300, 180 and 120 rows; PCA serves the largest (0) best per row.
    X, s = three_groups(seed=1)
    d = 2
    base = marginal_loss(X, s, PCA(n_components=d).fit(X), n_components=d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        summed = fit_quiet(paper(d), X, s)
    per_row = fit_quiet(ParetoFairPCA(d), X, s)
    loss = {
        name: marginal_loss(X, s, est) for name, est in (("summed", summed), ("per_row", per_row))
    }
    assert base[0] < 0.1 * min(base[1], base[2])
    # Equalising the sums E_a = n_a l_a: the groups' per-row losses move towards
    # l_a proportional to 1 / n_a, and group 0's grows several fold.
    assert loss["summed"][0] > 4 * base[0]
    # Per row, with the start search's bound: no group above 1.5 times its
    # reference (group 0's is the floor, 0.1 times the mean PCA loss), and the
    # worst-served group is still better off than under PCA.
    limits = worse_off_limits(base)
    assert base[0] < 0.1 * np.mean(list(base.values())) == pytest.approx(limits[0] / 1.5)
    for g in base:
        assert loss["per_row"][g] <= limits[g]
    assert max(loss["per_row"].values()) < max(base.values())
    assert per_row.start_status_ == "bound"


def test_group_losses_match_the_marginal_loss_metric():
    X, s = three_groups(seed=1)
    d = 2
    est = fit_quiet(ParetoFairPCA(d), X, s)
    pca = PCA(n_components=d).fit(X)
    fit_losses = marginal_loss(X, s, est, n_components=d)
    pca_losses = marginal_loss(X, s, pca, n_components=d)
    np.testing.assert_allclose(est.group_losses_, [fit_losses[g] for g in est.groups_], rtol=1e-9)
    np.testing.assert_allclose(
        est.pca_group_losses_, [pca_losses[g] for g in est.groups_], rtol=1e-9
    )
    assert not np.allclose(est.group_losses_, est.pca_group_losses_, rtol=1e-3)
    # Integer sample weights: the group sizes are total weights, as repeated rows.
    w = np.where(s == 0, 3, 1)
    weighted = ParetoFairPCA(d).fit(X, sensitive_features=s, sample_weight=w)
    repeated = ParetoFairPCA(d).fit(np.repeat(X, w, axis=0), sensitive_features=np.repeat(s, w))
    assert subspace_distance(weighted.components_.T, repeated.components_.T) < 1e-6
    np.testing.assert_allclose(weighted.group_losses_, repeated.group_losses_, rtol=1e-6)


def worse_off_limits(base):
    """The module's worse-off limit of each group, ``{group: limit}``, from PCA's losses."""
    limits = pareto._worse_off_limits(
        np.array(list(base.values())), pareto._WORSE_OFF_FACTOR, pareto._WORSE_OFF_FLOOR
    )
    return dict(zip(base, limits, strict=True))


def test_worse_off_warning_names_the_groups_and_factors():
    X, s = three_groups(seed=1)
    d = 2
    with pytest.warns(UserWarning, match="worse off than PCA by more than 1.5x") as caught:
        est = paper(d).fit(X, sensitive_features=s)
    base = marginal_loss(X, s, PCA(n_components=d).fit(X), n_components=d)
    fit = marginal_loss(X, s, est, n_components=d)
    limits = worse_off_limits(base)
    assert [g for g in base if fit[g] > limits[g]] == [0]
    # Group 0, which PCA serves best, is judged against the floor.
    floor = pareto._WORSE_OFF_FLOOR * np.mean(list(base.values()))
    assert base[0] < floor and limits[0] == pytest.approx(1.5 * floor, rel=1e-12)
    messages = [str(w.message) for w in caught if "worse off" in str(w.message)]
    assert len(messages) == 1
    expected = f"'0' {base[0]:.4g} -> {fit[0]:.4g} ({fit[0] / floor:.3g}x the floor {floor:.4g})"
    assert expected in messages[0]
    assert "at least 0.1 times their mean" in messages[0]
    assert "group_loss='per_row'" in messages[0]


@pytest.mark.parametrize("params", [{}, {"group_loss": "summed", "disparity_ratio": 1.0}])
def test_no_worse_off_warning_when_no_group_is_worse_off(params):
    X, s = three_groups(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        est = ParetoFairPCA(2, **params).fit(X, sensitive_features=s)
    limits = pareto._worse_off_limits(
        est.pca_group_losses_, pareto._WORSE_OFF_FACTOR, pareto._WORSE_OFF_FLOOR
    )
    assert np.all(est.group_losses_ <= limits)
    if params:  # disparity_ratio = 1 returns PCA
        np.testing.assert_allclose(est.group_losses_, est.pca_group_losses_, rtol=1e-9)


def test_worse_off_factor_is_a_bound_of_the_per_row_start_search(monkeypatch):
    X, s = three_groups(seed=1)
    d = 2
    est = fit_quiet(ParetoFairPCA(d), X, s)
    # Without the bound, the per-row start search levels group 0 down further.
    monkeypatch.setattr(pareto, "_WORSE_OFF_FACTOR", np.inf)
    free = fit_quiet(ParetoFairPCA(d), X, s)
    base = marginal_loss(X, s, PCA(n_components=d).fit(X), n_components=d)
    unbounded = marginal_loss(X, s, free, n_components=d)
    bounded = marginal_loss(X, s, est, n_components=d)
    monkeypatch.undo()
    limit = worse_off_limits(base)[0]
    assert unbounded[0] > limit >= bounded[0]
    assert est.start_status_ == "bound" and free.start_status_ != "bound"
    # The Pareto descent kept group 0's loss from rising past the start's.
    assert "loss[0]" in est.objective_names_


def test_worse_off_limits_hand_computed():
    # All PCA losses above the floor (0.1 x mean 2 = 0.2): factor x each one.
    np.testing.assert_allclose(
        pareto._worse_off_limits(np.array([1.0, 2.0, 3.0]), 1.5, 0.1), [1.5, 3.0, 4.5]
    )
    # A group PCA serves perfectly is judged against 0.1 x mean(0, 2, 4) = 0.2.
    np.testing.assert_allclose(
        pareto._worse_off_limits(np.array([0.0, 2.0, 4.0]), 1.5, 0.1), [0.3, 3.0, 6.0]
    )
    # Two groups, one at ~0: floor 0.1 x (1e-6 + 2) / 2 = 0.10000005; plus the allowance.
    np.testing.assert_allclose(
        pareto._worse_off_limits(np.array([1e-6, 2.0]), 1.5, 0.1, allowance=1e-9),
        [1.5 * 0.10000005 + 1e-9, 3.0 + 1e-9],
        rtol=1e-15,
    )
    # floor = 0 is the bare relative rule; factor 1 gives the references.
    np.testing.assert_allclose(pareto._worse_off_limits(np.array([0.0, 2.0]), 1.5, 0.0), [0, 3])
    np.testing.assert_allclose(pareto._worse_off_limits(np.array([0.0, 2.0]), 1.0, 0.1), [0.1, 2])


def rows_with_second_moment(n, moment, rng):
    """``n`` rows (even) with mean exactly 0 and second moment (per row) exactly ``moment``."""
    Q = np.linalg.qr(rng.standard_normal((n // 2, len(moment))))[0] * np.sqrt(n / 2)
    w, V = np.linalg.eigh(moment)
    R = (Q * np.sqrt(np.clip(w, 0, None))) @ V.T
    return np.vstack([R, -R])


def test_a_group_pca_serves_almost_perfectly_is_judged_against_the_floor(monkeypatch):
    # PCA's plane is span(e1, e2), the plane of the minority (300 rows, tilted by
    # 0.005 rad towards e3 so that PCA is not a saddle point of every objective): its
    # per-row loss at PCA is ~4e-4. The majority's best plane is span(e1, e3): its
    # loss at PCA is ~2 (variance 3 on e3 lost, 1 on e2 kept).
    rng = np.random.default_rng(0)
    tilt = np.array([0.0, np.cos(0.005), np.sin(0.005), 0.0, 0.0])
    e1 = np.eye(5)[0]
    majority = rows_with_second_moment(700, np.diag([10.0, 1.0, 3.0, 0.5, 0.5]), rng)
    minority = rows_with_second_moment(300, 10 * np.outer(e1, e1) + 8 * np.outer(tilt, tilt), rng)
    X = np.vstack([majority, minority])
    s = np.array(["majority"] * 700 + ["minority"] * 300)
    d = 2
    pca = PCA(n_components=d).fit(X)
    base = marginal_loss(X, s, pca, n_components=d)
    assert base["minority"] < 1e-3 and base["majority"] > 1.9
    # Floor 0.1 x mean PCA loss ~ 0.1: the minority's limit is 1.5 x the floor.
    floor = 0.1 * (base["minority"] + base["majority"]) / 2
    limits = worse_off_limits(base)
    assert limits["minority"] == pytest.approx(1.5 * floor, rel=1e-12)
    assert limits["majority"] == pytest.approx(1.5 * base["majority"], rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # within the limits: no warning
        est = ParetoFairPCA(d).fit(X, sensitive_features=s)
    loss = marginal_loss(X, s, est, n_components=d)
    # The fit moves away from PCA and lowers the worst-served group's loss ...
    assert subspace_distance(est.components_.T, pca.components_.T) > 0.05
    assert loss["majority"] < base["majority"] - 0.02
    # ... while the minority stays within 1.5 times the floor (and far above its ~0).
    assert base["minority"] < 0.01 * loss["minority"]
    assert loss["minority"] <= limits["minority"]
    np.testing.assert_allclose(est.group_losses_, [loss[g] for g in est.groups_], rtol=1e-9)
    assert est.start_status_ == "bound"
    # Judged against its own PCA loss (no floor) the minority freezes the fit at PCA.
    monkeypatch.setattr(pareto, "_WORSE_OFF_FLOOR", 0.0)
    frozen = ParetoFairPCA(d).fit(X, sensitive_features=s)
    assert subspace_distance(frozen.components_.T, pca.components_.T) < 1e-8
    assert frozen.start_status_ == "bound" and frozen.n_iter_ == 0


# ------------------------------------------------------------ Kamani's data


@pytest.fixture(scope="module")
def kamani_splits():
    from fairpca.experiments import kamani

    cases = [("adult", "sex"), ("default_credit", "sex"), ("adult", "race")]
    cases.append(("default_credit", "marriage"))
    return {case: kamani(*case) for case in cases}


#: The dimension Kamani et al. state (their downstream experiment, section 6.3).
KAMANI_D = 10


@pytest.mark.parametrize("case", [("adult", "sex"), ("default_credit", "sex")])
@pytest.mark.requires_data
def test_kamani_binary(kamani_splits, case):
    split = kamani_splits[case]
    X, s = split.X_train, split.s_train
    est = fit_quiet(paper(KAMANI_D), X, s)
    pca = PCA(n_components=KAMANI_D).fit(X)
    assert est.converged_
    assert mean_abs_gap(X, s, est) <= 0.2 * mean_abs_gap(X, s, pca)
    assert reconstruction_error(X, est) <= 1.03 * reconstruction_error(X, pca)


@pytest.mark.parametrize("case", [("adult", "race"), ("default_credit", "marriage")])
@pytest.mark.requires_data
def test_kamani_multigroup_cuts_the_training_disparity(kamani_splits, case):
    split = kamani_splits[case]
    X, s = split.X_train, split.s_train
    est = fit_quiet(paper(KAMANI_D), X, s)
    pca = PCA(n_components=KAMANI_D).fit(X)
    fair = pairwise_disparity_error(X, s, est)
    base = pairwise_disparity_error(X, s, pca)
    assert len(base) == len(np.unique(s)) * (len(np.unique(s)) - 1) // 2
    # Kamani et al., Figures 6 and 8: the average disparity error falls far below PCA's.
    assert mean_abs_gap(X, s, est) <= 0.5 * mean_abs_gap(X, s, pca)
    assert max(map(abs, fair.values())) <= 0.5 * max(map(abs, base.values()))
    assert reconstruction_error(X, est) <= 1.05 * reconstruction_error(X, pca)
    if case == ("default_credit", "marriage"):
        # Here no pair of groups is nearly equal at PCA, and every gap shrinks.
        assert all(abs(fair[key]) < abs(base[key]) for key in base)


def least_spread_subspace(X, s, d, U0):
    """Minimise ``sum_(a<b) Delta_ab(U)^2`` over ``U = polar(W)`` with L-BFGS from ``U0``.

    Independent of the module: the scatter matrices and each group's own best
    rank-d loss come from the raw rows.
    """
    Xc = X - X.mean(axis=0)
    parts = [Xc[s == g] for g in np.unique(s)]
    scatters = np.array([A.T @ A for A in parts]) / np.sum(Xc**2)
    own = np.array([np.sort(np.linalg.eigvalsh(S))[::-1][:d].sum() for S in scatters])

    def polar(w):
        u, _, vt = np.linalg.svd(w.reshape(X.shape[1], d), full_matrices=False)
        return u @ vt

    def spread(w):
        errors = own - np.einsum("pd,kpq,qd->k", polar(w), scatters, polar(w))
        return len(errors) * np.sum((errors - errors.mean()) ** 2)  # = sum over pairs

    result = minimize(
        spread,
        U0.ravel(),
        method="L-BFGS-B",
        options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-12},
    )
    return polar(result.x)


@pytest.mark.slow
@pytest.mark.requires_data("adult")
def test_kamani_adult_race_training_disparity_far_below_pca():
    """Adult / race, split 0, d = 10: the fit that used to stay at PCA (0.2008 -> 0.2005).

    The four small groups' disparity errors are nearly equal at PCA, so no
    Pareto step on the ten pairwise objectives was possible; the start search
    now descends their sum. Its minimum (checked with an independent L-BFGS
    run) is where the default ``disparity_ratio = 0.1`` is out of reach: the
    average pairwise gap is then about 0.42 times PCA's.
    """
    from fairpca.experiments import kamani

    split = kamani("adult", "race", split=0)
    X, s = split.X_train, split.s_train
    est = fit_quiet(paper(KAMANI_D), X, s)
    pca = PCA(n_components=KAMANI_D).fit(X)
    assert mean_abs_gap(X, s, est) <= 0.5 * mean_abs_gap(X, s, pca)
    assert reconstruction_error(X, est) <= 1.05 * reconstruction_error(X, pca)
    best = least_spread_subspace(X, s, KAMANI_D, pca_basis(X, KAMANI_D))
    gaps = np.array(list(pairwise_disparity_error(X, s, est).values()))
    gaps_best = np.array(list(pairwise_disparity_error(X, s, best.T).values()))
    assert np.sum(gaps**2) <= 1.01 * np.sum(gaps_best**2)
    assert mean_abs_gap(X, s, est) <= 1.02 * mean_abs_gap(X, s, best.T)


@pytest.mark.requires_data
def test_minmax_and_pareto_each_beat_pca_on_their_own_criterion(kamani_splits):
    from fairpca.minmax_loss import MinMaxLossFairPCA

    split = kamani_splits[("default_credit", "sex")]
    X, s = split.X_train, split.s_train
    d = KAMANI_D
    pca = PCA(n_components=d).fit(X)
    minmax = MinMaxLossFairPCA(n_components=d).fit(X, sensitive_features=s)
    fair = fit_quiet(paper(d), X, s)

    def max_marginal(proj):
        return max(marginal_loss(X, s, proj, n_components=d).values())

    assert max_marginal(minmax) <= max_marginal(pca) + 1e-9
    assert mean_abs_gap(X, s, fair, d) <= mean_abs_gap(X, s, pca, d)


@pytest.mark.slow
@pytest.mark.requires_data("adult")
def test_adult_race_per_row_default_leaves_no_group_far_worse_off():
    """Issue 43: Adult / race, split 0, d = 10, per-row losses from the metric.

    PCA: 2.23, 0.72, 0.35, 0.78, 0.59 (Amer-Indian-Eskimo, Asian-Pac-Islander,
    Black, Other, White); summed (the paper): 14.4, 5.13, 2.05, 0.92, 0.22.
    """
    from fairpca.experiments import kamani

    split = kamani("adult", "race", split=0)
    X, s = split.X_train, split.s_train
    d = KAMANI_D
    base = marginal_loss(X, s, PCA(n_components=d).fit(X), n_components=d)
    est = fit_quiet(ParetoFairPCA(d), X, s)
    loss = marginal_loss(X, s, est, n_components=d)

    def gap(values):
        return np.mean([abs(a - b) for a, b in combinations(values.values(), 2)])

    # Every PCA loss is well above the floor (0.1 times their mean), so each limit
    # is 1.5 times the group's own PCA loss.
    assert min(base.values()) > 3 * pareto._WORSE_OFF_FLOOR * np.mean(list(base.values()))
    for g in base:
        assert loss[g] <= pareto._WORSE_OFF_FACTOR * base[g]
    assert gap(loss) < 0.7 * gap(base)
    assert max(loss.values()) < 0.75 * max(base.values())
    with pytest.warns(UserWarning, match="Amer-Indian-Eskimo.*Asian-Pac-Islander.*Black"):
        summed = paper(d).fit(X, sensitive_features=s)
    loss = marginal_loss(X, s, summed, n_components=d)
    assert gap(loss) > 5 * gap(base)
