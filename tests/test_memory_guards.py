"""Allocations that grow with a parameter or with k p² are refused before they happen.

Nothing here allocates much: either the parameters are huge and the data tiny, or
the budget ``MAX_DENSE_MOMENT_BYTES`` is monkeypatched down to a few kilobytes.
"""

import numpy as np
import pytest

import fairpca
import fairpca._base
import fairpca._validation
import fairpca.minmax_loss as minmax_module
from fairpca._kernels import _qmc_frequencies, check_feature_moments
from fairpca._validation import DataTooWideError, MemoryBudgetError, check_allocation, check_width


def _groups(n_groups, n_features, rows_per_group=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_groups * rows_per_group, n_features))
    return X, np.repeat(np.arange(n_groups), rows_per_group)


def _forbid_moment_pass(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the moment pass ran before the width check")

    monkeypatch.setattr(fairpca._base.GroupMoments, "_from_codes", fail)


def _budget(monkeypatch, n_bytes):
    monkeypatch.setattr(fairpca._validation, "MAX_DENSE_MOMENT_BYTES", n_bytes)


# ------------------------------------------------------------------ width with k groups
def test_check_width_counts_one_matrix_per_group_and_the_pooled_one(monkeypatch):
    p = 30
    _budget(monkeypatch, 3 * 8 * p**2)
    check_width(p, "Est")  # labels unknown: three matrices, the old rule
    check_width(p, "Est", n_groups=2)
    with pytest.raises(DataTooWideError, match=r"Est holds 9 \(one per group of the 8"):
        check_width(p, "Est", n_groups=8)


def test_fit_with_many_groups_is_refused_before_the_moment_pass(monkeypatch):
    p, k = 30, 8
    X, s = _groups(k, p)
    # Three p x p matrices fit (the old check passed), k + 1 do not.
    _budget(monkeypatch, 3 * 8 * p**2)
    est = fairpca.MinMaxLossFairPCA(n_components=2)
    before = dict(vars(est))
    _forbid_moment_pass(monkeypatch)
    with pytest.raises(DataTooWideError, match=r"MinMaxLossFairPCA holds 9 .* 30 x 30"):
        est.fit(X, sensitive_features=s)
    assert vars(est) == before


def test_partial_fit_counts_the_groups_already_held(monkeypatch):
    p = 20
    X, s = _groups(4, p)
    est = fairpca.MeanMatchingFairPCA(n_components=2).partial_fit(X, sensitive_features=s)
    moments = est.moments_
    # The next chunk's 4 groups beside the 4 held: 9 matrices, over a budget of 8.
    _budget(monkeypatch, 8 * 8 * p**2)
    with pytest.raises(DataTooWideError, match="holds 9"):
        est.partial_fit(X, sensitive_features=s + 4)
    assert est.moments_ is moments


def test_check_allocation_names_what_and_how_much(monkeypatch):
    check_allocation(8 * 2**30, "the limit itself")
    with pytest.raises(MemoryBudgetError, match=r"thing of n=9 would need 16 GiB.*Lower n\."):
        check_allocation(16.0 * 2**30, "thing of n=9", "Lower n.")
    assert issubclass(DataTooWideError, MemoryBudgetError)
    assert issubclass(MemoryBudgetError, ValueError)


# ------------------------------------------------------------------ RobustFairPCA
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_iter": 10**9}, "n_iter=1000000000"),
        ({"n_restarts": 10**9}, "1000000001 starts"),
        ({"n_iter": 10**12, "n_components": 4}, "n_iter=1000000000000"),
    ],
)
def test_robust_refuses_huge_iteration_and_restart_counts(params, match):
    X, s = _groups(2, 4, rows_per_group=20)
    est = fairpca.RobustFairPCA(**params)
    with pytest.raises(MemoryBudgetError, match=match):
        est.fit(X, sensitive_features=s)
    assert not hasattr(est, "components_")


@pytest.mark.parametrize("value", [1e9, 2.5, "10"])
def test_robust_checks_types_first(value):
    X, s = _groups(2, 4, rows_per_group=20)
    with pytest.raises(TypeError, match="n_iter"):
        fairpca.RobustFairPCA(n_iter=value).fit(X, sensitive_features=s)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_robust_descent_memory_grows_with_p_squared_in_the_complement(monkeypatch):
    X, s = _groups(2, 40, rows_per_group=30)
    # The history fits (21 x 11 floats), the (p - d) x p points of 21 starts do not.
    _budget(monkeypatch, 200_000)
    est = fairpca.RobustFairPCA(n_components=2, n_iter=10, parametrization="complement")
    with pytest.raises(MemoryBudgetError, match="parametrization='direct'"):
        est.fit(X, sensitive_features=s)
    fairpca.RobustFairPCA(n_components=2, n_iter=10, parametrization="direct").fit(
        X, sensitive_features=s
    )


# ------------------------------------------------------------------ MinMaxLossFairPCA
def test_minmax_cutting_planes_refuse_a_huge_max_iter():
    X, s = _groups(3, 5, rows_per_group=20)
    with pytest.raises(MemoryBudgetError, match="max_iter=1000000000000"):
        fairpca.MinMaxLossFairPCA(max_iter=10**12).fit(X, sensitive_features=s)


def test_multiplicative_weights_memory_does_not_grow_with_max_iter(monkeypatch):
    """Past p columns the bases are summed into one p x p matrix: same average projector."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 8, 4))
    B = np.einsum("aij,aik->ajk", A, A) / 8
    beta = np.zeros(3)
    seen = []
    dual_value = minmax_module._dual_value

    def recording(*args, **kwargs):
        g, V, losses = dual_value(*args, **kwargs)
        seen.append(V)
        return g, V, losses

    monkeypatch.setattr(minmax_module, "_dual_value", recording)
    columns, mu, *_ = minmax_module._solve_multiplicative_weights(
        B, beta, 2, eta=1.0, tol=0.0, max_iter=25, log_level=10
    )
    assert len(seen) == 25
    assert len(columns) == 1 and columns[0].shape[0] == 4 and columns[0].shape[1] <= 4
    expected = sum(V @ V.T for V in seen) / len(seen)
    F = columns[0] * np.sqrt(mu[0])
    np.testing.assert_allclose(F @ F.T, expected, atol=1e-12)


# ------------------------------------------------------------------ random features
def test_random_frequencies_are_checked_before_they_are_drawn():
    with pytest.raises(MemoryBudgetError, match="n_random_features=10000000000"):
        _qmc_frequencies(2, 10**10, 1.0, 0)
    assert _qmc_frequencies(2, 5, 1.0, 0).shape == (2, 5)


def test_mmd_rff_refuses_a_huge_number_of_features():
    X, s = _groups(2, 4, rows_per_group=20)
    est = fairpca.MMDFairPCA(mmd="rff", tau=1e-2, n_random_features=10**10, min_group_size=0)
    with pytest.raises(MemoryBudgetError, match="n_random_features"):
        est.fit(X, sensitive_features=s)
    assert not hasattr(est, "components_")


def test_feature_moments_of_a_wide_feature_map_are_refused():
    check_feature_moments(1024, 2, "FairKernelPCA", "n_random_features=512")
    with pytest.raises(DataTooWideError, match=r"n_random_features=100000: 200000 features"):
        check_feature_moments(200_000, 2, "FairKernelPCA", "n_random_features=100000")


def test_kernel_pca_refuses_a_huge_random_feature_map_before_building_it(monkeypatch):
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    import fairpca.kernel_pca as kernel_pca

    def fail(*args, **kwargs):
        raise AssertionError("the frequencies were drawn before the moment check")

    X, s = _groups(2, 4, rows_per_group=20)
    est = fairpca.FairKernelPCA(n_components=2, method="approx", n_random_features=10**5)
    with monkeypatch.context() as patch:
        patch.setattr(kernel_pca, "_qmc_frequencies", fail)
        with pytest.raises(ValueError, match="n_random_features=100000") as info:
            est.fit(X, sensitive_features=s)
    assert isinstance(info.value, DataTooWideError)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    assert not hasattr(est, "method_")
    # The exact solution builds no feature map: the same setting fits.
    exact = fairpca.FairKernelPCA(n_components=2, method="exact", n_random_features=10**5)
    assert exact.fit(X, sensitive_features=s).transform(X).shape == (40, 2)


def test_kernel_pca_on_dask_refuses_a_huge_random_feature_map():
    da = pytest.importorskip("dask.array")
    X, s = _groups(2, 4, rows_per_group=20)
    est = fairpca.FairKernelPCA(n_components=2, n_random_features=10**5)
    with pytest.raises(ValueError, match="n_random_features=100000"):
        est.fit(da.from_array(X, chunks=10), sensitive_features=da.from_array(s, chunks=10))
    assert not hasattr(est, "method_")


# ------------------------------------------------------------------ exact MMD²
def test_exact_mmd_on_too_many_rows_is_refused_with_the_alternatives(monkeypatch):
    import fairpca._mmd_objective as objective

    monkeypatch.setattr(objective, "EXACT_MAX_ROWS", 30)
    X, s = _groups(2, 3, rows_per_group=40)
    est = fairpca.MMDFairPCA(mmd="exact")
    with pytest.raises(ValueError, match=r"80 constrained rows.*mmd='rff'.*max_samples=30"):
        est.fit(X, sensitive_features=s)
    assert not hasattr(est, "components_")
    # A subsample within the limit is accepted; so is "auto", which documents its choice.
    objective.check_exact_cost("exact", [30], 30)
    objective.check_exact_cost("auto", [80], 20000)
