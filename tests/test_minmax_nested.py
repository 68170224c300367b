"""MinMaxLossFairPCA(nested=True) for any number of groups (Matakos et al. 2025).

Oracles: each prefix's rank-one relaxation written afresh in cvxpy on the
orthogonal complement of the earlier components and solved by Clarabel; a
closed-form three-group instance whose relaxation is not tight; dense grids of
unit vectors (the circle for the exact plane search, the sphere of R^3 for the
whole rank-one problem); for two groups, the earlier code path (relaxation,
then the extreme-point rounding's rank-one vector) composed from its parts.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from fairpca import MinMaxLossFairPCA
from fairpca._minmax_nested import best_on_circle, fit_nested
from fairpca._minmax_rounding import round_extreme_point
from fairpca.minmax_loss import _solve_relaxation
from test_minmax_loss import group_moments, make_groups
from test_minmax_rank import clarabel_optimum, fit

PARAMS = {"solver": "auto", "tol": 1e-6, "max_iter": 100, "eta": 1.0, "sdp_solver": "SCS"}


def prefix_problem(X, s, U, r, objective="loss"):
    """Group moments, offsets and a complement basis of prefix ``r`` given ``U[:, :r-1]``."""
    B, beta = group_moments(X, s, r)
    if objective == "variance":
        beta = np.zeros_like(beta)
    earlier = U[:, : r - 1]
    offsets = beta - np.einsum("pj,apq,qj->a", earlier, B, earlier)
    complement = np.linalg.svd(np.eye(B.shape[1]) - earlier @ earlier.T)[0][:, : B.shape[1] - r + 1]
    return B, beta, offsets, complement


def worst_loss(B, beta, V):
    """Largest group loss ``beta_a - <B_a, V V^T>``."""
    return float(np.max(beta - np.einsum("pj,apq,qj->a", V, B, V)))


# --------------------------------------------------------------------------- prefixes vs SDP
@pytest.mark.parametrize("objective", ["loss", "variance"])
@pytest.mark.parametrize("k, p, seed", [(3, 6, 1), (3, 8, 2), (4, 7, 3), (4, 8, 4), (5, 8, 5)])
def test_each_prefix_against_clarabel(k, p, seed, objective):
    d = 3
    X, s = make_groups(k, p, seed)
    est = fit(X, s, d, nested=True, objective=objective)
    U = est.components_.T
    assert est.prefix_gaps_.shape == est.prefix_bounds_.shape == (d,)
    np.testing.assert_allclose(U.T @ U, np.eye(d), atol=1e-10)
    for r in range(1, d + 1):
        B, beta, offsets, complement = prefix_problem(X, s, U, r, objective)
        sdp = clarabel_optimum(B, offsets, 1, complement=complement)
        scale = max(abs(sdp), 1e-6 * np.max(np.trace(B, axis1=1, axis2=2)))
        # The dual bound is the relaxation's optimum to the solver's relative tolerance.
        assert est.prefix_bounds_[r - 1] == pytest.approx(sdp, abs=2e-6 * scale)
        # The component's own worst loss, recomputed: above the SDP bound, within the gap.
        value = worst_loss(B, beta, U[:, :r])
        assert value == pytest.approx(est.prefix_objectives_[r - 1], rel=1e-10, abs=1e-12)
        assert value >= sdp - 1e-7 * scale
        assert value <= sdp + est.prefix_gaps_[r - 1] + 1e-7 * scale
    assert np.all(est.prefix_gaps_ >= -1e-7 * np.abs(est.prefix_objectives_))


def test_some_prefix_needs_the_search():
    """The parametrised instances above include prefixes the extreme point leaves rank two."""
    spans = []
    for k, p, seed in [(3, 6, 1), (3, 8, 2), (4, 7, 3), (4, 8, 4), (5, 8, 5)]:
        X, s = make_groups(k, p, seed)
        B, _ = group_moments(X, s, 1)
        targets = np.cumsum(-np.sort(-np.linalg.eigvalsh(B), axis=1), axis=1)[:, :3].T
        spans.append(
            fit_nested(B, targets, lambda Br, c: _solve_relaxation(Br, c, 1, PARAMS, 0))[4]
        )
    assert np.any(np.concatenate(spans) == 2)


# --------------------------------------------------------------------------- closed form
def three_lines(x=2.0, sigma=0.5, copies=3):
    """Three groups on lines at 0, 60 and 120 degrees of a plane, plus a shared third axis.

    Group ``a`` has rows ``+-x e_a`` and ``+-sigma e_3``: ``B_a = (x^2 e_a e_a^T
    + sigma^2 e_3 e_3^T) / 2`` about the pooled mean 0 and ``beta_a(1) = x^2/2``.
    The relaxation puts ``P = I_2 / 2`` on the plane (every loss ``x^2/4``); a
    unit vector along one line captures ``x^2/2`` of its group and a quarter of
    that of the two others (``cos^2 60 = 1/4``), and no unit vector does better
    while ``sigma^2 < x^2/4``: the best loss is ``3 x^2 / 8``.
    """
    rows, labels = [], []
    for a, angle in enumerate(np.deg2rad([0.0, 60.0, 120.0])):
        e = np.array([np.cos(angle), np.sin(angle), 0.0])
        for sign in (1.0, -1.0):
            rows += [sign * x * e, sign * sigma * np.array([0.0, 0.0, 1.0])] * copies
        labels += [f"g{a}"] * (4 * copies)
    return np.array(rows), np.array(labels)


def test_closed_form_instance_where_the_relaxation_is_not_tight():
    x = 2.0
    X, s = three_lines(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = MinMaxLossFairPCA(1, nested=True).fit(X, sensitive_features=s)
    assert est.converged_  # the solver converged; the gap is the relaxation's, not its
    assert est.prefix_bounds_[0] == pytest.approx(x**2 / 4, rel=1e-6)
    assert est.prefix_objectives_[0] == pytest.approx(3 * x**2 / 8, rel=1e-9)
    assert est.prefix_gaps_[0] == pytest.approx(x**2 / 8, rel=1e-5)
    u = est.components_[0]
    lines = np.array([[np.cos(t), np.sin(t), 0.0] for t in np.deg2rad([0.0, 60.0, 120.0])])
    assert np.max(np.abs(lines @ u)) == pytest.approx(1.0, abs=1e-6)


# --------------------------------------------------------------------------- search oracles
def sphere_grid(n):
    """Unit vectors of R^3 on an (n x 2n) latitude-longitude grid (one hemisphere suffices)."""
    theta, phi = np.meshgrid(np.linspace(0, np.pi / 2, n), np.linspace(0, 2 * np.pi, 2 * n))
    return np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)])


@pytest.mark.parametrize("seed", range(6))
def test_plane_search_is_exact(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    A = rng.normal(size=(k, 2, 2))
    C, offsets = A @ A.transpose(0, 2, 1), rng.normal(size=k)
    v, value = best_on_circle(offsets, C)
    assert np.linalg.norm(v) == pytest.approx(1.0)
    assert value == pytest.approx(np.max(offsets - np.einsum("i,aij,j->a", v, C, v)), rel=1e-12)
    t = np.linspace(0, np.pi, 200_001)
    grid = np.vstack([np.cos(t), np.sin(t)])
    grid_best = np.min(np.max(offsets[:, None] - np.einsum("im,aij,jm->am", grid, C, grid), axis=0))
    norm = np.max(np.linalg.norm(C, ord=2, axis=(1, 2)))
    assert value <= grid_best + 1e-12 * norm  # no unit vector of the grid beats it
    # Each loss moves by at most 2 ||C_a|| per radian: the grid is within half a step of it.
    assert value >= grid_best - norm * (t[1] - t[0])


# Instances where the best vector of the extreme point's span is beaten by the grid:
# without the descent over the whole sphere the test fails.
@pytest.mark.parametrize(
    "k, seed", [(3, 101), (3, 104), (4, 125), (5, 101), (5, 118), (6, 117), (9, 114), (9, 118)]
)
def test_first_component_against_a_sphere_grid(k, seed):
    """p = 3: the first component is at least as good as every unit vector of a fine grid."""
    X, s = make_groups(k, 3, seed)
    est = fit(X, s, 1, nested=True)
    B, beta = group_moments(X, s, 1)
    grid = sphere_grid(400).reshape(3, -1)
    grid_best = np.min(np.max(beta[:, None] - np.einsum("im,aij,jm->am", grid, B, grid), axis=0))
    assert est.prefix_objectives_[0] <= grid_best + 1e-10 * np.max(beta)


# --------------------------------------------------------------------------- nesting
@pytest.mark.parametrize("k", [3, 5])
def test_fits_extend_each_other(k):
    X, s = make_groups(k, 8, 40 + k)
    short, long = fit(X, s, 2, nested=True), fit(X, s, 5, nested=True)
    assert long.prefix_gaps_.shape == (5,) and short.prefix_gaps_.shape == (2,)
    np.testing.assert_allclose(long.components_ @ long.components_.T, np.eye(5), atol=1e-10)
    np.testing.assert_allclose(
        np.abs(np.sum(short.components_ * long.components_[:2], axis=1)), 1.0, atol=1e-8
    )
    np.testing.assert_allclose(short.prefix_objectives_, long.prefix_objectives_[:2], rtol=1e-8)
    assert long.gap_ == pytest.approx(np.max(long.prefix_gaps_))


def test_no_variance_left_on_the_complement():
    """Every group on one axis: later prefixes capture nothing, any orthogonal row will do."""
    rng = np.random.default_rng(70)
    X = np.zeros((30, 4))
    X[:, 0] = rng.normal(size=30)
    est = fit(X, np.repeat(["a", "b", "c"], 10), 3, nested=True)
    assert np.all(np.isfinite(est.components_))
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(3), atol=1e-12)
    assert abs(est.components_[0, 0]) == pytest.approx(1.0)


def test_partial_fit_equals_fit():
    X, s = make_groups(3, 6, 71)
    order = np.random.default_rng(71).permutation(len(X))
    X, s = X[order], s[order]
    whole = fit(X, s, 3, nested=True)
    chunked = MinMaxLossFairPCA(3, nested=True)
    for start in range(0, len(X), 60):
        chunked.partial_fit(X[start : start + 60], sensitive_features=s[start : start + 60])
    np.testing.assert_allclose(
        np.abs(np.sum(whole.components_ * chunked.components_, axis=1)), 1.0, atol=1e-8
    )
    np.testing.assert_allclose(chunked.prefix_gaps_, whole.prefix_gaps_, rtol=1e-6, atol=1e-12)


# --------------------------------------------------------------------------- two groups
@pytest.mark.parametrize("objective", ["loss", "variance"])
@pytest.mark.parametrize("seed", range(3))
def test_two_groups_follow_the_earlier_code_path(seed, objective):
    """Two groups: the rounding is rank one, so no search runs and the old path is unchanged."""
    d = 4
    X, s = make_groups(2, 8, 50 + seed)
    est = fit(X, s, d, nested=True, objective=objective)
    B, _ = group_moments(X, s, 1)
    own = np.cumsum(-np.sort(-np.linalg.eigvalsh(B), axis=1), axis=1)[:, :d].T
    targets = own if objective == "loss" else np.zeros_like(own)
    # The earlier path: relaxation on the complement, extreme point, its single direction.
    U, captured = np.zeros((8, 0)), np.zeros(2)
    for r in range(d):
        P = np.eye(8) - U @ U.T
        B_r = P @ B @ P
        offsets = targets[r] - captured
        V, lam, _, _, _ = _solve_relaxation(B_r, offsets, 1, PARAMS, 0)
        V, lam = round_extreme_point(B_r, offsets, 1, V, lam)
        assert V.shape[1] == 1 and lam[0] == 1.0
        u = P @ V[:, 0]
        U = np.column_stack([U, u / np.linalg.norm(u)])
        captured = np.einsum("pj,apq,qj->a", U, B, U)
    np.testing.assert_allclose(np.abs(np.sum(est.components_ * U.T, axis=1)), 1.0, atol=1e-8)
    assert np.all(est.prefix_gaps_ <= 1e-6 * np.abs(est.prefix_objectives_))


# --------------------------------------------------------------------------- bad input
def test_bad_input_leaves_the_estimator_as_it_was():
    X, s = make_groups(3, 6, 60)
    est = fit(X, s, 2, nested=True)
    before = est.components_.copy()
    with pytest.raises(ValueError, match="at least 2 distinct groups"):
        est.fit(X, sensitive_features=np.zeros(len(X)))
    np.testing.assert_array_equal(est.components_, before)
    with pytest.raises(ValueError, match="rounding='lp' does not apply"):
        MinMaxLossFairPCA(2, nested=True, rounding="lp").fit(X, sensitive_features=s)
    with pytest.raises(TypeError, match="nested must be True or False"):
        MinMaxLossFairPCA(2, nested="yes").fit(X, sensitive_features=s)
