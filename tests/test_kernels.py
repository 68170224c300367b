"""Oracles of the RBF kernel maths: kernel sums, MMD², gradients, Hessians, random features."""

from functools import partial

import numpy as np
import pytest

import fairpca._kernels as kernels
from fairpca._kernels import (
    _constraint_values,
    _exact_hess_vec,
    _exact_hessian,
    _exact_terms,
    _hessian_by_pairs,
    _hessian_by_rows,
    _hessian_costs,
    _kernel_group_sums,
    _qmc_frequencies,
    _rff_terms,
    _Stratum,
    _subsample,
    _weighted_kernel,
)
from fairpca.datasets import make_gaussian_groups
from fairpca.riemannian import random_point


def _stratum(X, codes, name="all rows"):
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    return _Stratum(X[order], counts, np.arange(len(counts)), name)


def _three_groups():
    """Centred rows of three groups of different sizes, and their codes."""
    rng = np.random.default_rng(0)
    codes = np.repeat([0, 1, 2], [40, 55, 35])
    X = rng.standard_normal((130, 6))
    X[codes == 1, 0] += 1.0
    X[codes == 2] *= 1.5
    return X - X.mean(axis=0), codes


@pytest.fixture
def three_groups():
    return _three_groups()


def _directional_derivative(fun, V, E, step):
    return (fun(V + step * E) - fun(V - step * E)) / (2 * step)


def test_kernel_group_sums_match_full_kernel_matrix():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((50, 3))
    codes = rng.integers(0, 3, size=50)
    onehot = np.eye(3)[codes]
    gamma = 0.7
    K = np.exp(-gamma * ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2))
    U_ref = K @ onehot
    T_ref = np.einsum("ij,jb,jd->ibd", K, onehot, Z)
    for tile_rows in (7, 50, 1024):  # several tiles, one exact tile, one large tile
        U, T = _kernel_group_sums(Z, onehot, gamma, tile_rows=tile_rows)
        np.testing.assert_allclose(U, U_ref, rtol=1e-12)
        np.testing.assert_allclose(T, T_ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["exact", "rff"])
def test_mmd2_gradient_matches_finite_differences(three_groups, method):
    X, codes = three_groups
    # Two strata (as with fairness="EOD") and three groups: a sum of six pairwise terms.
    half = np.arange(len(codes)) % 2 == 0
    strata = [_stratum(X[half], codes[half], "y=1"), _stratum(X[~half], codes[~half], "y=0")]
    bandwidth = 1.1
    frequencies = _qmc_frequencies(3, 256, bandwidth, 0) if method == "rff" else None
    gamma = 0.5 / bandwidth**2

    def penalty(W, with_grad=True):
        """Sum over the strata of the penalty and of its gradient."""
        total, grad = 0.0, np.zeros_like(W)
        for stratum in strata:
            if method == "exact":
                pen, _, g = _exact_terms(W, stratum, gamma, with_grad)
            else:
                pen, _, g = _rff_terms(W, stratum, frequencies, with_grad)
            total += pen
            grad = grad + g if with_grad else None
        return total, grad

    V = random_point(6, 3, random_state=1)
    _, grad = penalty(V)
    rng = np.random.default_rng(2)
    # Random features are evaluated in single precision: larger step, looser tolerance.
    step, rtol = (1e-5, 1e-6) if method == "exact" else (1e-3, 2e-3)
    for _ in range(4):
        E = rng.standard_normal(V.shape)
        fd = _directional_derivative(lambda W: penalty(W, False)[0], V, E, step)
        np.testing.assert_allclose(np.sum(grad * E), fd, rtol=rtol)


@pytest.mark.parametrize(
    "form",
    [
        _hessian_by_rows,
        _hessian_by_pairs,
        partial(_hessian_by_pairs, tile_rows=7),  # tiles of 7 rows, the last one of 4
        _exact_hessian,
    ],
)
def test_dense_hessian_equals_the_hessian_products(three_groups, form):
    # The (p d, p d) matrix, formed each way, against its products with every basis
    # matrix, for a stratum of three groups (pair weights of both signs) and d = 1, 3.
    X, codes = three_groups
    stratum = _stratum(X, codes, "all rows")
    for d, seed in ((1, 3), (3, 4)):
        V = random_point(X.shape[1], d, random_state=seed)
        kernel = _weighted_kernel(V, stratum, 0.4)
        dense = form(kernel, stratum, 0.4)
        assert np.allclose(dense, dense.T, atol=1e-12)
        columns = []
        for k in range(V.size):
            E = np.zeros(V.size)
            E[k] = 1.0
            columns.append(_exact_hess_vec(kernel, stratum, 0.4, E.reshape(V.shape)).ravel())
        np.testing.assert_allclose(dense, np.column_stack(columns), rtol=0, atol=1e-12)


def test_dense_hessian_is_formed_the_cheaper_way(monkeypatch):
    # By rows when the rows outnumber the features, by pairs of output dimensions when
    # the features are many (the reduced problem of p >= n); the cost model decides.
    calls = []
    for name in ("_hessian_by_rows", "_hessian_by_pairs"):
        monkeypatch.setattr(kernels, name, lambda *args, name=name: calls.append(name))
    rng = np.random.default_rng(15)
    for m, p in ((130, 6), (20, 40)):
        stratum = _stratum(rng.standard_normal((m, p)), np.arange(m) % 2)
        V = random_point(p, 2, random_state=16)
        _exact_hessian(_weighted_kernel(V, stratum, 0.4), stratum, 0.4)
        by_rows, by_pairs = _hessian_costs(m, p, 2)
        assert calls[-1] == ("_hessian_by_pairs" if by_pairs < by_rows else "_hessian_by_rows")
    assert calls == ["_hessian_by_rows", "_hessian_by_pairs"]


def test_random_features_in_blocks_equal_one_block(three_groups, monkeypatch):
    X, codes = three_groups
    stratum = _stratum(X, codes)
    frequencies = _qmc_frequencies(3, 128, 1.3, 0)
    V = random_point(6, 3, random_state=8)
    monkeypatch.setattr(kernels, "_RFF_CHUNK_BYTES", 10**9)  # every group in one block
    whole = _rff_terms(V, stratum, frequencies)
    monkeypatch.setattr(kernels, "_RFF_CHUNK_BYTES", 4 * 128 * 7)  # blocks of 7 rows
    blocked = _rff_terms(V, stratum, frequencies)
    assert blocked[0] == pytest.approx(whole[0], rel=1e-6)
    np.testing.assert_allclose(blocked[1], whole[1], rtol=1e-6)
    np.testing.assert_allclose(blocked[2], whole[2], rtol=1e-5, atol=1e-9)


def test_qmc_frequencies_reproduce_the_rbf_kernel():
    bandwidth = 0.8
    W = _qmc_frequencies(2, 1024, bandwidth, seed=5)
    assert W.shape == (2, 1024)
    rng = np.random.default_rng(6)
    for u in rng.standard_normal((5, 2)):
        estimate = np.mean(np.cos(u @ W))
        exact = np.exp(-(u @ u) / (2 * bandwidth**2))
        # Independent draws would err by about sqrt(0.5 / 1024) = 0.02.
        assert abs(estimate - exact) < 5e-3


def test_random_feature_mmd2_is_close_to_exact():
    X, s = make_gaussian_groups(n_samples=1500, n_features=8, random_state=0)
    X = X - X.mean(axis=0)
    stratum = _stratum(X, s)
    bandwidth = 2.0
    frequencies = _qmc_frequencies(2, 1024, bandwidth, 0)
    for seed in range(3):
        V = random_point(8, 2, random_state=seed)
        exact = _constraint_values(_exact_terms(V, stratum, 0.5 / bandwidth**2, False)[1], stratum)
        approx = _constraint_values(_rff_terms(V, stratum, frequencies, False)[1], stratum)
        exact, approx = exact.max(), approx.max()
        assert abs(approx - exact) <= 0.02 * exact


def test_subsample_keeps_group_proportions_and_rows():
    rng = np.random.default_rng(7)
    codes = np.repeat([0, 1, 2], [600, 300, 3])
    X = rng.standard_normal((903, 4))
    stratum = _stratum(X, codes)
    (sub,) = _subsample([stratum], 300, np.random.RandomState(0))
    np.testing.assert_array_equal(sub.counts, [199, 99, 2])  # floor(fraction * n_a), >= 2
    original = {row.tobytes() for row in stratum.X}
    assert all(row.tobytes() in original for row in sub.X)
    for a in range(3):  # rows stay in their group
        rows = sub.X[sub.codes == a]
        group_rows = {row.tobytes() for row in stratum.X[stratum.codes == a]}
        assert all(row.tobytes() in group_rows for row in rows)
    assert _subsample([stratum], 1000, np.random.RandomState(0))[0] is stratum


@pytest.mark.parametrize("constraint", ["one-vs-rest", "pairwise"])
def test_constraint_values_and_floors_are_the_quadratic_forms(constraint):
    """``r_c^T G r_c`` and ``m_c^T G m_c`` row by row, as matrix products (issue 41, item 9).

    Written as three-operand einsums they cost k³ scalar loops per evaluation: with 100
    groups of 2 rows that made a 200-row fit run for minutes.
    """
    rng = np.random.default_rng(0)
    counts = np.array([2, 3, 5, 2, 4, 6, 3])
    stratum = kernels._Stratum(
        np.zeros((counts.sum(), 2)), counts, np.arange(7), "all rows", constraint
    )
    A = rng.normal(size=(7, 7))
    gram = A @ A.T
    R = stratum.mixtures
    expected = np.maximum([r @ gram @ r for r in R], 0.0)
    np.testing.assert_allclose(kernels._constraint_values(gram, stratum), expected, rtol=1e-12)
    m, n_rows, coef = stratum.floor_terms
    kbar = (np.array([row @ gram @ row for row in m]) - n_rows) / (n_rows * (n_rows - 1.0))
    np.testing.assert_allclose(
        kernels._sampling_floors(gram, stratum), coef * (1.0 - kbar), rtol=1e-12
    )
