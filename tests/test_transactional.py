"""A fit or partial_fit that raises leaves the estimator exactly as it was before the call."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import fairpca
from fairpca import FairKernelPCA, MMDFairPCA, RobustFairPCA
from fairpca.datasets import make_gaussian_groups
from transform_groups import transform_kwargs

X, S = make_gaussian_groups(n_samples=300, n_features=5, random_state=0)
X_NAN = X.copy()
X_NAN[7, 2] = np.nan


def _small(cls):
    if cls is MMDFairPCA:
        return cls(n_components=2, max_iter=5, random_state=0)
    if cls is RobustFairPCA:
        return cls(n_components=2, n_iter=20, n_restarts=1, random_state=0)
    if cls is FairKernelPCA:
        return cls(n_components=2, random_state=0)
    if cls is fairpca.StreamingFairPCA:
        return cls(2, unfair_rank=1, block_size=50, random_state=0)
    if "n_components" not in cls().get_params():
        return cls()
    return cls(n_components=2)


#: Every estimator of the registry.
# FairPLS (supervised: fit needs y) has these checks in tests/test_fair_pls.py.
ESTIMATORS = [
    pytest.param(lambda c=c: _small(c), id=c.__name__)
    for c in fairpca.all_estimators(supervised=False)
]


def _state(est):
    return dict(vars(est))


def _assert_same_state(est, before):
    after = vars(est)
    assert set(after) == set(before)
    for name, value in before.items():
        assert after[name] is value, name  # the very objects, not copies


@pytest.mark.parametrize("make", ESTIMATORS)
def test_failed_fit_keeps_the_previous_fit(make):
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, sensitive_features=S)
    before, output = _state(est), est.transform(X, **transform_kwargs(est, S))
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X_NAN, sensitive_features=S)
    _assert_same_state(est, before)
    np.testing.assert_array_equal(est.transform(X, **transform_kwargs(est, S)), output)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_failed_first_fit_leaves_an_unfitted_estimator(make):
    est = make()
    params = est.get_params()
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X_NAN, sensitive_features=S)
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]
    assert est.get_params() == params
    with pytest.raises(NotFittedError):
        est.transform(X)


def _failing_solver(*args, **kwargs):
    raise RuntimeError("solver failure injected by the test")


@pytest.mark.parametrize("make", ESTIMATORS)
def test_failed_partial_fit_keeps_the_chunks_before_it(make, monkeypatch):
    est = make()
    if not hasattr(est, "partial_fit"):
        pytest.skip(f"{type(est).__name__} has no partial_fit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.partial_fit(X[:150], sensitive_features=S[:150])
    before, output = _state(est), est.transform(X, **transform_kwargs(est, S))
    if isinstance(est, fairpca.StreamingFairPCA):  # fails inside its next power step
        monkeypatch.setattr("fairpca.streaming._Stream._step", _failing_solver)
    else:
        # The method's solve: FairPCABase's, LinearErasure's, or the front door's hook.
        hooks = ("_fit_components", "_fit_moments", "_fit_from_moments")
        target = next(hook for hook in hooks if hasattr(est, hook))
        monkeypatch.setattr(type(est), target, _failing_solver)
    with pytest.raises(RuntimeError, match="injected"):
        est.partial_fit(X[150:], sensitive_features=S[150:])
    monkeypatch.undo()
    _assert_same_state(est, before)
    np.testing.assert_array_equal(est.transform(X, **transform_kwargs(est, S)), output)


def _raise_in_block(block):
    raise OSError("a block could not be read (injected by the test)")


def test_dask_block_that_raises_keeps_the_previous_fit():
    da = pytest.importorskip("dask.array")
    est = fairpca.ParetoFairPCA(n_components=2).fit(X, sensitive_features=S)
    before, output = _state(est), est.transform(X, **transform_kwargs(est, S))
    lazy = da.from_array(X, chunks=(100, 5)).map_blocks(_raise_in_block, dtype=float)
    with pytest.raises(OSError, match="injected"):
        est.fit(lazy, sensitive_features=S)
    _assert_same_state(est, before)
    np.testing.assert_array_equal(est.transform(X, **transform_kwargs(est, S)), output)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_solver_failure_in_fit_keeps_the_previous_fit(make, monkeypatch):
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, sensitive_features=S)
    before, output = _state(est), est.transform(X, **transform_kwargs(est, S))
    # The innermost step every estimator's fit reaches: its solver, or the moments.
    if hasattr(est, "_fit_components"):
        monkeypatch.setattr(type(est), "_fit_components", _failing_solver)
    elif isinstance(est, FairKernelPCA):
        monkeypatch.setattr("fairpca.kernel_pca._exact_dual", _failing_solver)
    elif isinstance(est, fairpca.StreamingFairPCA):
        monkeypatch.setattr("fairpca.streaming.block_power_iteration", _failing_solver)
    else:
        monkeypatch.setattr("fairpca.moments._group_scatters", _failing_solver)
    with pytest.raises(RuntimeError, match="injected"):
        est.fit(X[::-1], sensitive_features=S[::-1])
    monkeypatch.undo()
    _assert_same_state(est, before)
    np.testing.assert_array_equal(est.transform(X, **transform_kwargs(est, S)), output)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: fairpca.MeanMatchingFairPCA(n_components=2), id="MeanMatching"),
        pytest.param(lambda: fairpca.MinMaxLossFairPCA(n_components=2), id="MinMaxLoss"),
        pytest.param(lambda: fairpca.MMDFairPCA(n_components=2, max_iter=3), id="MMD"),
        pytest.param(fairpca.LinearErasure, id="LinearErasure"),
        pytest.param(
            lambda: fairpca.FairKernelPCA(n_components=2, method="approx", random_state=0),
            id="FairKernelPCA",
            marks=pytest.mark.slow,  # 7 s of CPU; the same fault path as the others
        ),
    ],
)
def test_dask_block_fault_keeps_every_dask_estimator_as_it_was(make):
    da = pytest.importorskip("dask.array")
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, sensitive_features=S)
    before, output = _state(est), est.transform(X, **transform_kwargs(est, S))
    lazy = da.from_array(X, chunks=(100, 5)).map_blocks(_raise_in_block, dtype=float)
    with pytest.raises(OSError, match="injected"):
        est.fit(lazy, sensitive_features=S)
    _assert_same_state(est, before)
    np.testing.assert_array_equal(est.transform(X, **transform_kwargs(est, S)), output)
