import logging
import warnings

import numpy as np
import pytest
from scipy.linalg import sqrtm
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import fairpca._robust_descent as descent
import fairpca.robust as robust
from fairpca import RobustFairPCA
from fairpca._robust_descent import _objective_and_gradient_rows, _Problem
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import reconstruction_error, reconstruction_error_gap
from fairpca.moments import GroupMoments
from fairpca.riemannian import subspace_distance
from fairpca.riemannian.geometry import _tangent_rows
from fairpca.robust import robust_objective

# ----------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def data():
    X, s = make_gaussian_groups(n_samples=400, n_features=6, random_state=0)
    return StandardScaler().fit_transform(X), s


def _random_moments(rng, k, p):
    A = rng.standard_normal((k, 3 * p, p)) * rng.uniform(0.3, 2.0, size=(k, 1, p))
    return np.einsum("bni,bnj->bij", A, A) / (3 * p)


def _orthonormal(rng, p, r):
    return np.linalg.qr(rng.standard_normal((p, r)))[0]


def _binary_objective(V, M, prop, eps, lam):
    """max(J_0, J_1) written out from Theorem 3.2 (DESIGN.md section 4)."""
    P = np.eye(V.shape[0]) - V @ V.T
    m = [np.trace(P @ M[a]) for a in range(2)]
    J = []
    for a, b in ((0, 1), (1, 0)):
        kappa = (prop[a] + lam) * eps[a] + (prop[b] - lam) * eps[b]
        theta = 2 * abs(prop[a] + lam) * np.sqrt(eps[a])
        vartheta = 2 * abs(prop[b] - lam) * np.sqrt(eps[b])
        C = (prop[a] + lam) * M[a] + (prop[b] - lam) * M[b]
        J.append(kappa + theta * np.sqrt(m[a]) + vartheta * np.sqrt(m[b]) + np.trace(P @ C))
    return max(J)


def _pair_values(m, prop, eps, lam):
    """Theorem B.2's function of every ordered pair (a, a'), by brute force."""
    k = len(prop)
    values = []
    for a in range(k):
        for a2 in range(k):
            if a == a2:
                continue
            c = np.array(prop, dtype=float)
            c[a] = prop[a] + lam
            c[a2] = abs(prop[a2] - lam)
            values.append(
                np.sum(prop * (m + eps))
                + np.sum(2 * c * np.sqrt(eps * m))
                + lam * (m[a] - m[a2] + eps[a] - eps[a2])
            )
    return np.array(values)


def _k_group_objective(V, M, prop, eps, lam):
    """Theorem B.2: max over ordered pairs, m_b = <I - V V^T, M_b>."""
    P = np.eye(V.shape[0]) - V @ V.T
    m = np.array([np.trace(P @ Mb) for Mb in M])
    return _pair_values(m, prop, eps, lam).max()


def _gelbrich(mu1, S1, mu2, S2):
    root = np.real(sqrtm(S2))
    cross = np.real(sqrtm(root @ S1 @ root))
    return float(np.sum((mu1 - mu2) ** 2) + np.trace(S1 + S2 - 2 * cross))


# ----------------------------------------------------------------------------- the objective


def test_binary_objective_matches_theorem_3_2():
    rng = np.random.default_rng(0)
    p, d = 6, 2
    M = _random_moments(rng, 2, p)
    prop, eps = np.array([0.65, 0.35]), np.array([0.04, 0.09])
    for lam in (0.0, 0.2, 0.5, 1.3):
        for _ in range(5):
            V = _orthonormal(rng, p, d)
            expected = _binary_objective(V, M, prop, eps, lam)
            assert robust_objective(V.T, M, prop, eps, lam) == pytest.approx(expected, rel=1e-12)


def test_k_group_objective_matches_appendix_b_and_reduces_to_binary():
    rng = np.random.default_rng(1)
    p, d = 5, 2
    M = _random_moments(rng, 3, p)
    prop, eps = np.array([0.5, 0.3, 0.2]), np.array([0.02, 0.05, 0.1])
    for lam in (0.0, 0.25, 0.9):
        V = _orthonormal(rng, p, d)
        expected = _k_group_objective(V, M, prop, eps, lam)
        assert robust_objective(V.T, M, prop, eps, lam) == pytest.approx(expected, rel=1e-12)
        two = np.array([0.6, 0.4])
        assert _k_group_objective(V, M[:2], two, eps[:2], lam) == pytest.approx(
            _binary_objective(V, M[:2], two, eps[:2], lam), rel=1e-12
        )


@pytest.mark.parametrize("upsilon", [0.7, -0.4])
def test_proposition_3_3_worst_case(upsilon):
    """The closed form is attained inside the Gelbrich ball and not exceeded by sampled members."""
    rng = np.random.default_rng(2)
    p, d, eps = 4, 1, 0.05
    Z = rng.standard_normal((200, p)) * np.array([1.5, 1.0, 0.5, 0.3]) + 0.2
    mu, S = Z.mean(axis=0), np.cov(Z.T, bias=True)
    V = _orthonormal(rng, p, d)
    P = np.eye(p) - V @ V.T
    m = np.trace(P @ (S + np.outer(mu, mu)))
    assert m > eps
    sign = 1.0 if upsilon >= 0 else -1.0
    closed = upsilon * (np.sqrt(m) + sign * np.sqrt(eps)) ** 2
    # Attained: move every point along the complement, x -> (I + t P) x, |t| = sqrt(eps / m).
    A = np.eye(p) + sign * np.sqrt(eps / m) * P
    mu_star, S_star = A @ mu, A @ S @ A
    assert _gelbrich(mu_star, S_star, mu, S) <= eps * (1 + 1e-8)
    attained = upsilon * np.trace(P @ (S_star + np.outer(mu_star, mu_star)))
    assert attained == pytest.approx(closed, rel=1e-10)
    # Not exceeded by random members of the ball (random moments shrunk towards the
    # empirical ones until inside; some perturbations act along the complement only).
    for trial in range(300):
        D = rng.standard_normal((p, p))
        if trial % 2:
            D = P @ D
        delta = rng.standard_normal(p)
        t = 1.0
        while (
            _gelbrich(mu + t * delta, (np.eye(p) + t * D) @ S @ (np.eye(p) + t * D).T, mu, S) > eps
        ):
            t *= 0.7
        B = np.eye(p) + t * D
        value = upsilon * np.trace(P @ (B @ S @ B.T + np.outer(mu + t * delta, mu + t * delta)))
        assert value <= closed + 1e-10
    # With lam = 0 the objective is the sum of these terms with upsilon = p_b (here 1/2 each).
    M = S + np.outer(mu, mu)
    value = robust_objective(V.T, np.stack([M, M]), [0.5, 0.5], [eps, eps], 0.0)
    assert value == pytest.approx(0.5 * 2 * (np.sqrt(m) + np.sqrt(eps)) ** 2, rel=1e-12)


@pytest.mark.parametrize("parametrization", ["direct", "complement"])
@pytest.mark.parametrize("k", [2, 3])
def test_subgradient_matches_finite_differences(parametrization, k):
    """Where one pair attains the max, the gradient is that of an independent formula."""
    rng = np.random.default_rng(3)
    p, d = 6, 2
    M = _random_moments(rng, k, p)
    prop = np.arange(1.0, k + 1) / np.sum(np.arange(1.0, k + 1))
    eps = rng.uniform(0.02, 0.1, k)
    lam = 0.6
    problem = _Problem(M, prop, eps, lam)

    def reference(X):
        # m_b from U directly (complement) or from V (direct); brute-force max over pairs.
        if parametrization == "complement":
            m = np.array([np.trace(X.T @ Mb @ X) for Mb in M])
        else:
            m = np.array([np.trace(Mb) - np.trace(X.T @ Mb @ X) for Mb in M])
        return _pair_values(m, prop, eps, lam)

    tested = 0
    while tested < 3:
        V = _orthonormal(rng, p, d)
        X = V if parametrization == "direct" else np.linalg.qr(V, mode="complete")[0][:, d:]
        top, second = np.sort(reference(X))[::-1][:2]
        if top - second < 1e-2:
            continue  # a kink is too close for finite differences
        tested += 1
        value, gradient_t = _objective_and_gradient_rows(X.T[None], problem, parametrization)
        gradient = gradient_t.transpose(0, 2, 1)
        assert value[0] == pytest.approx(top, rel=1e-12)
        h = 1e-6
        numeric = np.zeros_like(X)
        for i in range(X.shape[0]):
            for j in range(X.shape[1]):
                E = np.zeros_like(X)
                E[i, j] = h
                numeric[i, j] = (reference(X + E).max() - reference(X - E).max()) / (2 * h)
        np.testing.assert_allclose(gradient[0], numeric, rtol=1e-6, atol=1e-7)


def test_zero_radii_objective_is_are_plus_lam_abdiff(data):
    X, s = data
    est = RobustFairPCA(n_components=2, lam=0.7, alpha=0.0, n_iter=200, random_state=0)
    est.fit(X, sensitive_features=s)
    expected = reconstruction_error(X, est) + 0.7 * reconstruction_error_gap(X, s, est)
    assert est.objective_ == pytest.approx(expected, rel=1e-10)


# ----------------------------------------------------------------------------- the descent


def _active_weights(m, prop, eps, lam):
    """dF/dm_b of the first maximising pair of Theorem B.2, written out."""
    k = len(prop)
    values = _pair_values(m, prop, eps, lam)
    pairs = [(a, a2) for a in range(k) for a2 in range(k) if a != a2]
    a, a2 = pairs[int(np.argmax(values))]
    c = np.array(prop, dtype=float)
    c[a] = prop[a] + lam
    c[a2] = abs(prop[a2] - lam)
    linear = np.array(prop, dtype=float)
    linear[a] += lam
    linear[a2] -= lam
    return values.max(), linear + c * np.sqrt(eps) / np.sqrt(m)


def _reference_descent(V0, M, prop, eps, lam, n_iter, parametrization):
    """Algorithm 1 for one start, step by step with plain matrices and a Householder QR."""
    step = 1.0 / np.sqrt(n_iter + 1.0)
    X, history, best = V0.copy(), [], (np.inf, None)
    for t in range(n_iter + 1):
        quad = np.array([np.trace(X.T @ Mb @ X) for Mb in M])
        m = quad if parametrization == "complement" else np.trace(M, axis1=1, axis2=2) - quad
        value, w = _active_weights(m, prop, eps, lam)
        history.append(value)
        if value < best[0]:
            best = (value, X.copy())
        if t == n_iter:
            break
        sign = 2.0 if parametrization == "complement" else -2.0
        G = sign * sum(wb * Mb @ X for wb, Mb in zip(w, M, strict=True))
        xi = G - X @ (0.5 * (X.T @ G + G.T @ X))
        Q, R = np.linalg.qr(X - step * xi)
        X = Q * np.where(np.diag(R) < 0, -1.0, 1.0)
    return best[1], best[0], np.array(history)


@pytest.mark.parametrize(
    ("parametrization", "k", "scale"),
    [("direct", 2, 1.0), ("direct", 3, 1.0), ("complement", 2, 1.0), ("direct", 2, 30.0)],
)
def test_batched_descent_equals_step_by_step_reference(parametrization, k, scale):
    """Every start of the vectorised descent follows Algorithm 1 written out plainly.

    ``scale = 30`` makes steps large enough for the Householder branch of the
    retraction; the others use its Cholesky branch.
    """
    rng = np.random.default_rng(11)
    p, d, n_iter = 7, 3, 60
    M = scale * _random_moments(rng, k, p)
    prop = rng.dirichlet(np.ones(k))
    eps, lam = rng.uniform(0.01, 0.1, k), 0.4
    problem = _Problem(M, prop, eps, lam)
    r = d if parametrization == "direct" else p - d
    starts = np.stack([_orthonormal(rng, p, r) for _ in range(3)])
    points, values, history, n_steps = descent._subgradient_descent(
        starts, problem, parametrization, "qr", n_iter, stop_early=False
    )
    np.testing.assert_array_equal(n_steps, n_iter)
    for i in range(len(starts)):
        point, value, steps = _reference_descent(
            starts[i], M, prop, eps, lam, n_iter, parametrization
        )
        np.testing.assert_allclose(history[i], steps, rtol=1e-12)
        assert values[i] == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(points[i], point, rtol=0, atol=1e-11)
    # Stopping early only truncates runs: what each run did compute is the same.
    _, _, stopped, n_stopped = descent._subgradient_descent(
        starts, problem, parametrization, "qr", n_iter
    )
    for i in range(len(starts)):
        np.testing.assert_allclose(
            stopped[i, : n_stopped[i] + 1], history[i, : n_stopped[i] + 1], rtol=1e-12
        )
        assert np.all(np.isnan(stopped[i, n_stopped[i] + 1 :]))


# ----------------------------------------------------------------------------- stopping early


def _shifted_groups(n, p, seed):
    """Unstandardised groups with their own column scales and means (as benchmarks/run.py)."""
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.3).astype(int)
    scales, means = rng.uniform(0.5, 2.0, size=(2, p)), rng.normal(size=(2, p))
    return rng.standard_normal((n, p)) * scales[s] + means[s], s


def test_lowest_reachable_on_model_sequences():
    memory = descent._STOP_WINDOW + descent._STOP_MAX_PERIOD
    kappa, remaining = descent._STOP_SAFETY, 500
    steps = np.arange(memory, dtype=float)
    recent = np.stack(
        [
            np.full(memory, 2.0),  # a fixed point
            np.resize([3.0, 1.0, 2.0], memory),  # a cycle of three steps
            10.0 - 1e-3 * steps,  # a steady descent
            np.resize([5.0, 1.0, 4.0, 2.0, 3.0, 6.0, 7.0, 8.0, 9.0], memory),  # period 9 > P_max
        ]
    )
    floor = descent._lowest_reachable(recent, remaining)
    assert floor[0] == 2.0
    assert floor[1] == 1.0
    # Best bound for a steady descent: one step at a time, the pace extrapolated.
    assert floor[2] == pytest.approx(recent[2, -1] - kappa * 1e-3 * remaining, rel=1e-12)
    assert floor[3] < 1.0 - 10.0  # not recognised as a cycle: no useful bound
    # Fewer remaining steps, higher bound; none left: the current low.
    assert descent._lowest_reachable(recent, 10)[2] > floor[2]
    assert descent._lowest_reachable(recent, 0)[2] == recent[2, -1]


def test_quick_bound_never_rules_out_a_run_the_full_rule_would_stop():
    rng = np.random.default_rng(4)
    memory = descent._STOP_WINDOW + descent._STOP_MAX_PERIOD
    for _ in range(300):
        period = int(rng.integers(1, 12))
        cycles = np.tile(rng.standard_normal((5, period)), memory)[:, :memory]
        noise = 10.0 ** rng.uniform(-12, 0) * rng.standard_normal((5, memory)).cumsum(axis=1)
        recent = cycles + noise
        remaining = int(rng.integers(0, 2000))
        upper = descent._reachable_upper_bound(recent, remaining)
        assert np.all(upper >= descent._lowest_reachable(recent, remaining))


def test_hopeless_stalls_the_leader_and_prunes_followers_that_cannot_catch_up():
    memory = descent._STOP_WINDOW + descent._STOP_MAX_PERIOD
    rng = np.random.default_rng(0)
    leader = 1.0
    recent = np.stack(
        [
            np.full(memory, leader),  # the leader, at a fixed point: stalled
            np.resize([1.5, 1.2], memory),  # a 2-cycle above the leader
            1.0 + np.abs(rng.normal(0.0, 0.2, memory)),  # zigzagging: it may yet win
            1.2 - 1e-6 * np.arange(memory),  # creeping down, far behind
            1.0 + 1e-3 - 1e-6 * np.arange(memory),  # creeping down, close enough to win
        ]
    )
    stop = descent._hopeless(recent, 900, leader)
    np.testing.assert_array_equal(stop, [True, True, False, True, False])
    # A leader still improving is not stalled.
    assert not descent._hopeless(recent[3:4] - 0.2 - 1e-6 * 40, 900, recent[3, -1] - 0.2)[0]


@pytest.mark.parametrize("r", [1, 3, descent._BANDED_MAX_RANK])
def test_banded_cholesky_inverts_every_block(r):
    """One banded factorisation of the batch gives each point's inverse Cholesky factor."""
    from scipy.linalg import block_diag

    rng = np.random.default_rng(12)
    Yt = rng.standard_normal((4, r, 9))
    grams = Yt @ Yt.transpose(0, 2, 1)
    index, identities = descent._band_layout(4, r)
    # The band layout picks the lower band of the block-diagonal matrix of the grams.
    full = block_diag(*grams)
    flat = np.append(grams.reshape(-1), 0.0)
    for j, offset in np.ndindex(4 * r, r):
        expected = full[j + offset, j] if j + offset < 4 * r else 0.0
        assert flat[index[j, offset]] == expected
    np.testing.assert_array_equal(identities, np.tile(np.eye(r), (4, 1)))
    inverse, largest_trace = descent._inverse_cholesky_factors(Yt)
    expected = np.stack([np.linalg.inv(np.linalg.cholesky(g)) for g in grams])
    np.testing.assert_allclose(inverse, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert largest_trace == pytest.approx(np.trace(grams, axis1=1, axis2=2).max(), rel=1e-14)
    # A singular Y^T Y (a zero row) has no Cholesky factor.
    Yt[2, -1] = 0.0
    assert descent._inverse_cholesky_factors(Yt)[0] is None


@pytest.mark.parametrize("r", [1, 2, 5, descent._BANDED_MAX_RANK + 3])
def test_cholesky_qr_equals_householder_qr_with_positive_r(r, monkeypatch):
    rng = np.random.default_rng(13)
    p = 2 * r + 3
    Xt = np.stack([_orthonormal(rng, p, r).T for _ in range(3)])
    G = rng.standard_normal(Xt.shape)
    xi_t = _tangent_rows(Xt, G)
    xi_t /= np.linalg.norm(xi_t, axis=(1, 2), keepdims=True)
    calls = []
    householder = descent._qr_factor

    def spy(Y):
        calls.append(Y.shape)
        return householder(Y)

    monkeypatch.setattr(descent, "_qr_factor", spy)
    for size, householder_used in ((0.05, False), (3.0, False), (20.0, True)):
        calls.clear()
        Yt = Xt + size * xi_t
        Qt = descent._cholesky_qr_rows(Yt)
        assert bool(calls) == householder_used
        expected = householder(Yt.transpose(0, 2, 1)).transpose(0, 2, 1)
        np.testing.assert_allclose(Qt, expected, rtol=0, atol=1e-13)
        gram = Qt @ Qt.transpose(0, 2, 1)
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(r), gram.shape), atol=1e-13)


def _test_problems():
    """Problems of the tests and of the regression anchor, plus benchmark-like data."""
    from fairpca.datasets import make_mmd_synthetic1

    X, s = make_gaussian_groups(n_samples=400, n_features=6, random_state=0)
    X = StandardScaler().fit_transform(X)
    X3, s3 = make_gaussian_groups(n_samples=450, n_features=6, n_groups=3, random_state=1)
    X3 = StandardScaler().fit_transform(X3)
    return {
        "gaussian lam=0": (X, s, {"lam": 0.0, "alpha": 0.0}),
        "gaussian lam=0.5": (X, s, {}),
        "gaussian lam=1": (X, s, {"lam": 1.0}),
        "three groups": (X3, s3, {"lam": 0.3}),
        "regression two_groups": (
            *make_gaussian_groups(n_samples=300, n_features=6, random_state=0),
            {},
        ),
        "regression three_groups": (
            *make_gaussian_groups(n_samples=360, n_features=8, n_groups=3, random_state=1),
            {},
        ),
        "regression mmd_synthetic1": (*make_mmd_synthetic1(n_per_group=60, random_state=2), {}),
        "shifted groups p=40": (*_shifted_groups(3000, 40, 0), {"n_components": 5}),
        "shifted groups p=100": (*_shifted_groups(3000, 100, 0), {"n_components": 5}),
    }


PROBLEMS = _test_problems()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", list(PROBLEMS))
@pytest.mark.parametrize("n_iter", [100, 1000])
def test_stopping_early_leaves_the_answer_unchanged(name, n_iter, monkeypatch):
    X, s, params = PROBLEMS[name]
    params = {"n_components": 2, **params, "n_iter": n_iter, "random_state": 0}
    stopped = RobustFairPCA(**params).fit(X, sensitive_features=s)
    monkeypatch.setattr(robust, "_STOP_EARLY", False)
    full = RobustFairPCA(**params).fit(X, sensitive_features=s)
    np.testing.assert_array_equal(full.n_iter_per_start_, n_iter)
    assert stopped.objective_ == pytest.approx(full.objective_, rel=1e-8)
    assert stopped.converged_ == full.converged_
    # The same run wins, and what it computed before stopping is what it computes in full.
    np.testing.assert_allclose(
        stopped.history_, full.history_[: stopped.n_iter_ + 1], rtol=1e-12, atol=0
    )
    assert stopped.n_iter_ <= n_iter and stopped.history_.shape == (stopped.n_iter_ + 1,)
    assert stopped.objective_ == pytest.approx(stopped.history_.min(), rel=1e-12)
    if name.startswith("shifted") and n_iter == 1000:
        # Where the descent drifts away from its best point, nearly every step is saved.
        assert stopped.n_iter_per_start_.sum() < 0.2 * full.n_iter_per_start_.sum()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_short_budgets_and_a_single_start(monkeypatch):
    X, s = _shifted_groups(3000, 40, 0)
    # The rule needs the last 40 values: a shorter budget runs in full.
    short = RobustFairPCA(n_components=5, n_iter=39, random_state=0).fit(X, sensitive_features=s)
    np.testing.assert_array_equal(short.n_iter_per_start_, 39)
    # One run: only the stall test applies to it.
    alone = RobustFairPCA(n_components=5, n_restarts=0).fit(X, sensitive_features=s)
    monkeypatch.setattr(robust, "_STOP_EARLY", False)
    full = RobustFairPCA(n_components=5, n_restarts=0).fit(X, sensitive_features=s)
    assert alone.n_iter_per_start_.shape == (1,) and alone.n_iter_ < 1000
    assert alone.objective_ == pytest.approx(full.objective_, rel=1e-8)


def test_stopping_is_logged(caplog):
    X, s = _shifted_groups(3000, 40, 0)
    with caplog.at_level(logging.INFO, logger="fairpca.robust"):
        est = RobustFairPCA(n_components=5, verbose=True, random_state=0).fit(
            X, sensitive_features=s
        )
    assert any("stopped" in r.message for r in caplog.records)
    total = f"{est.n_iter_per_start_.sum()} of {21 * 1000} steps taken"
    assert any(total in r.message for r in caplog.records)


# ----------------------------------------------------------------------------- the estimator


def test_remark_3_4_gives_vanilla_pca(data):
    X, s = data
    est = RobustFairPCA(n_components=2, lam=0.0, alpha=0.0, random_state=0).fit(
        X, sensitive_features=s
    )
    pca = PCA(n_components=2).fit(X)
    assert subspace_distance(est.components_.T, pca.components_.T) < 1e-8
    # Also from random starts alone: the descent itself reaches the PCA subspace.
    moments = GroupMoments.from_arrays(X, s)
    problem = _Problem(moments.second_moment(), moments.proportions, np.zeros(2), 0.0)
    rng = np.random.default_rng(0)
    starts = np.stack([_orthonormal(rng, X.shape[1], 2) for _ in range(3)])
    # (The eigengap of this data is small, 1.148 vs 1.055: convergence is slow.)
    # Every run to the end (pruning would stop the runs that cannot overtake the leader).
    points, values, _, _ = descent._subgradient_descent(
        starts, problem, "direct", "qr", 3000, stop_early=False
    )
    optimum = np.sum(np.linalg.eigvalsh(np.cov(X.T, bias=True))[:-2])
    for V, value in zip(points, values, strict=True):
        assert subspace_distance(V, pca.components_.T) < 1e-3
        assert value == pytest.approx(optimum, rel=1e-8)


def test_objective_not_worse_than_pca_and_improves_on_it(data):
    X, s = data
    est = RobustFairPCA(n_components=2, lam=1.0, random_state=0).fit(X, sensitive_features=s)
    moments = GroupMoments.from_arrays(X, s)
    pca = PCA(n_components=2).fit(X).components_
    at_pca = robust_objective(
        pca, moments.second_moment(), moments.proportions, est.radii_, est.lam
    )
    at_est = robust_objective(
        est.components_, moments.second_moment(), moments.proportions, est.radii_, est.lam
    )
    assert at_est == pytest.approx(est.objective_, rel=1e-10)
    assert est.objective_ < at_pca - 1e-3
    assert est.objective_ == pytest.approx(est.history_.min(), rel=1e-12)
    assert est.history_.shape == (est.n_iter_ + 1,)
    assert est.n_iter_per_start_.shape == (est.n_restarts + 1,)
    assert est.n_iter_ in est.n_iter_per_start_ and est.n_iter_per_start_.max() <= est.n_iter
    np.testing.assert_allclose(
        est.radii_, 0.15 / np.sqrt(np.bincount(np.unique(s, return_inverse=True)[1]))
    )


def test_fairer_than_pca(data):
    X, s = data
    pca = PCA(n_components=2).fit(X)
    est = RobustFairPCA(n_components=2, lam=2.0, random_state=0).fit(X, sensitive_features=s)
    assert reconstruction_error_gap(X, s, est) < 0.5 * reconstruction_error_gap(X, s, pca)


def test_three_groups():
    X, s = make_gaussian_groups(n_samples=450, n_features=6, n_groups=3, random_state=1)
    X = StandardScaler().fit_transform(X)
    est = RobustFairPCA(n_components=2, lam=0.3, n_iter=300, random_state=0).fit(
        X, sensitive_features=s
    )
    moments = GroupMoments.from_arrays(X, s)
    pca = PCA(n_components=2).fit(X).components_
    args = (moments.second_moment(), moments.proportions, est.radii_, 0.3)
    assert est.objective_ < robust_objective(pca, *args)
    assert est.objective_ == pytest.approx(_k_group_objective(est.components_.T, *args), rel=1e-10)


def test_explicit_radii_equal_alpha_radii(data):
    X, s = data
    counts = np.unique(s, return_counts=True)[1]
    a = RobustFairPCA(n_components=2, alpha=0.1, n_iter=100, random_state=0).fit(
        X, sensitive_features=s
    )
    b = RobustFairPCA(n_components=2, radii=0.1 / np.sqrt(counts), n_iter=100, random_state=0).fit(
        X, sensitive_features=s
    )
    np.testing.assert_array_equal(a.components_, b.components_)


@pytest.mark.parametrize("retraction", ["qr", "polar"])
def test_parametrizations_and_retractions_agree_synthetic(data, retraction):
    X, s = data
    ref = RobustFairPCA(n_components=2, lam=0.8, n_iter=300, random_state=0).fit(
        X, sensitive_features=s
    )
    other = RobustFairPCA(
        n_components=2,
        lam=0.8,
        n_iter=300,
        random_state=0,
        parametrization="complement",
        retraction=retraction,
    ).fit(X, sensitive_features=s)
    assert other.objective_ == pytest.approx(ref.objective_, rel=1e-8)
    assert subspace_distance(other.components_.T, ref.components_.T) < 1e-6


def test_deterministic(data):
    X, s = data
    a = RobustFairPCA(n_components=2, n_iter=200, random_state=7).fit(X, sensitive_features=s)
    b = RobustFairPCA(n_components=2, n_iter=200, random_state=7).fit(X, sensitive_features=s)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.history_, b.history_)
    assert a.objective_ == b.objective_


def test_validity_warning_names_group():
    rng = np.random.default_rng(5)
    p = 4
    big = rng.standard_normal((300, p))
    # The small group's rows lie on a line: its p - d smallest eigenvalues are 0.
    small = np.outer(rng.standard_normal(60), rng.standard_normal(p))
    X = np.vstack([big, small])
    s = np.array(["big"] * 300 + ["small"] * 60)
    with pytest.warns(UserWarning, match=r"group 'small': lam=0\.5 > proportion 0\.1667"):
        RobustFairPCA(n_components=1, lam=0.5, n_iter=200).fit(X, sensitive_features=s)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)  # a UserWarning subclass
        # lam <= every proportion: valid.
        RobustFairPCA(n_components=1, lam=0.1, n_iter=20).fit(X, sensitive_features=s)
        # Large lam but full-rank groups: the eigenvalue condition holds.
        X2 = np.vstack([big, rng.standard_normal((60, p))])
        RobustFairPCA(n_components=1, lam=2.5, n_iter=20).fit(X2, sensitive_features=s)


@pytest.mark.parametrize("parametrization", ["direct", "complement"])
def test_zero_second_moment_in_complement_is_handled(parametrization):
    rng = np.random.default_rng(6)
    p = 4
    a = rng.standard_normal((200, p)) * np.array([3.0, 1.0, 0.8, 0.5])
    a[:, 1:] -= a[:, 1:].mean(axis=0)
    b = np.zeros((200, p))
    b[:, 0] = 3.0 * rng.standard_normal(200)
    X = np.vstack([a, b])
    s = np.repeat([0, 1], 200)
    # Group 1's centred rows lie on the first axis, the PCA direction: m_1 = 0 there.
    moments = GroupMoments.from_arrays(X, s)
    M = moments.second_moment()
    assert np.allclose(M[1][1:, :], 0) and np.allclose(M[1][:, 1:], 0)
    est = RobustFairPCA(n_components=1, lam=0.3, parametrization=parametrization, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est.fit(X, sensitive_features=s)
    assert np.all(np.isfinite(est.components_)) and np.all(np.isfinite(est.history_))
    assert np.isfinite(est.objective_)
    pca_value = robust_objective(np.eye(p)[:1], M, moments.proportions, est.radii_, 0.3)
    assert np.isfinite(pca_value) and est.objective_ <= pca_value + 1e-12


def test_convergence_warning_when_still_improving(data):
    X, s = data
    # One large step from the PCA start still lowers the objective by about 5 %.
    with pytest.warns(ConvergenceWarning, match=r"decreased by 0\.05\d* \(relative\).*0\.001"):
        est = RobustFairPCA(n_components=2, lam=0.5, alpha=0.0, n_iter=1, n_restarts=0).fit(
            X, sensitive_features=s
        )
    assert not est.converged_
    assert est.history_[1] < 0.96 * est.history_[0]
    est = RobustFairPCA(n_components=2, lam=0.5, alpha=0.0, random_state=0).fit(
        X, sensitive_features=s
    )
    assert est.converged_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_short_runs_far_from_the_optimum_are_not_called_converged(data):
    X, s = data
    long = RobustFairPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    assert long.converged_
    for n_iter in (1, 2, 3, 5, 10, 15, 20, 50):
        est = RobustFairPCA(n_components=2, n_iter=n_iter, random_state=0).fit(
            X, sensitive_features=s
        )
        if est.objective_ > long.objective_ * (1 + est._convergence_rtol):
            assert not est.converged_, (n_iter, est.objective_, long.objective_)


def test_all_components(data):
    X, s = data
    est = RobustFairPCA(n_components=X.shape[1], n_iter=5).fit(X, sensitive_features=s)
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(X.shape[1]), atol=1e-12)
    assert np.isfinite(est.objective_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_verbose_logs(data, caplog):
    X, s = data
    with caplog.at_level(logging.INFO, logger="fairpca.robust"):
        RobustFairPCA(n_components=2, n_iter=20, verbose=True, random_state=0).fit(
            X, sensitive_features=s
        )
    assert any("best objective" in r.message for r in caplog.records)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"lam": -0.1}, ValueError, "lam"),
        ({"alpha": -1.0}, ValueError, "alpha"),
        ({"lam": np.nan}, ValueError, "lam"),
        ({"n_iter": 0}, ValueError, "n_iter"),
        ({"n_restarts": -1}, ValueError, "n_restarts"),
        ({"retraction": "cayley"}, ValueError, "retraction"),
        ({"parametrization": "U"}, ValueError, "parametrization"),
        ({"radii": [0.1, 0.2, 0.3]}, ValueError, "radii has 3 entries but .* 2 groups"),
        ({"radii": [0.1, -0.2]}, ValueError, "radii"),
        ({"radii": [[0.1, 0.2]]}, ValueError, "radii"),
        ({"radii": ["a", "b"]}, ValueError, "radii"),
    ],
)
def test_bad_parameters_fail_before_solving(data, monkeypatch, params, error, match):
    X, s = data

    def forbidden(*args, **kwargs):
        raise AssertionError("the solver ran")

    monkeypatch.setattr(robust, "_subgradient_descent", forbidden)
    with pytest.raises(error, match=match):
        RobustFairPCA(n_components=2, **params).fit(X, sensitive_features=s)


def test_robust_objective_rejects_bad_input():
    M = np.stack([np.eye(3), 2 * np.eye(3)])
    V = np.eye(3)[:1]
    with pytest.raises(ValueError, match="lam"):
        robust_objective(V, M, [0.5, 0.5], [0.1, 0.1], -1.0)
    with pytest.raises(ValueError, match="second_moments must have shape"):
        robust_objective(V, M[:, :2, :2], [0.5, 0.5], [0.1, 0.1], 0.5)
    with pytest.raises(ValueError, match="radii must have shape"):
        robust_objective(V, M, [0.5, 0.5], [0.1], 0.5)
    with pytest.raises(ValueError, match="non-negative"):
        robust_objective(V, M, [0.5, 0.5], [0.1, -0.1], 0.5)


# ----------------------------------------------------------------------------- real data (last)


@pytest.mark.requires_data
def test_parametrizations_reach_same_objective_on_real_data():
    from fairpca.experiments import vu2022

    split = vu2022("ecoli", split=0)
    results = {}
    for parametrization in ("complement", "direct"):
        est = RobustFairPCA(n_components=3, parametrization=parametrization, random_state=0)
        est.fit(split.X_train, sensitive_features=split.s_train)
        results[parametrization] = est
    a, b = results["complement"], results["direct"]
    assert abs(a.objective_ - b.objective_) <= 1e-4 * abs(b.objective_)
    moments = GroupMoments.from_arrays(split.X_train, split.s_train)
    pca = PCA(n_components=3).fit(split.X_train).components_
    at_pca = robust_objective(pca, moments.second_moment(), moments.proportions, b.radii_, b.lam)
    assert b.objective_ < at_pca
