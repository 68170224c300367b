"""The solvers' loops keep BLAS on one thread (fairpca._linalg.one_blas_thread)."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from fairpca import ConvexFairPCA, MMDFairPCA, RobustFairPCA, _fantope_admm, robust
from fairpca._linalg import one_blas_thread


def _blas_threads():
    return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})


@pytest.fixture
def two_threads():
    """BLAS on two threads around the test, or a skip where it cannot have two."""
    with threadpool_limits(limits=2, user_api="blas"):
        if _blas_threads() != [2]:
            pytest.skip(f"BLAS cannot run two threads here (it has {_blas_threads()})")
        yield


def _recording(function, seen):
    def wrapper(*args, **kwargs):
        seen.append(_blas_threads())
        return function(*args, **kwargs)

    return wrapper


def _data(seed=0, n=300, p=8):
    rng = np.random.default_rng(seed)
    s = np.repeat([0, 1], n // 2)
    X = rng.standard_normal((n, p)) * np.linspace(0.5, 2.0, p) + s[:, None]
    return X, s


def test_one_blas_thread_limits_and_restores(two_threads):
    with one_blas_thread():
        assert _blas_threads() == [1]
        with one_blas_thread():
            assert _blas_threads() == [1]
        assert _blas_threads() == [1]
    assert _blas_threads() == [2]


def test_convex_admm_runs_on_one_thread_below_the_size_gate(two_threads, monkeypatch):
    seen = []
    monkeypatch.setattr(_fantope_admm, "_admm", _recording(_fantope_admm._admm, seen))
    X, s = _data()
    assert X.shape[1] < _fantope_admm._THREADED_FROM
    ConvexFairPCA(n_components=2).fit(X, sensitive_features=s)
    assert seen and all(threads == [1] for threads in seen)
    assert _blas_threads() == [2]


def test_convex_admm_keeps_the_threads_from_the_size_gate(two_threads, monkeypatch):
    seen = []
    monkeypatch.setattr(_fantope_admm, "_admm", _recording(_fantope_admm._admm, seen))
    monkeypatch.setattr(_fantope_admm, "_THREADED_FROM", 8)
    X, s = _data(p=8)
    ConvexFairPCA(n_components=2).fit(X, sensitive_features=s)
    assert seen and all(threads == [2] for threads in seen)


def test_robust_descent_runs_on_one_thread(two_threads, monkeypatch):
    seen = []
    monkeypatch.setattr(
        robust, "_subgradient_descent", _recording(robust._subgradient_descent, seen)
    )
    X, s = _data()
    RobustFairPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    assert seen == [[1]]
    assert _blas_threads() == [2]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=5
def test_mmd_solve_runs_on_one_thread(two_threads, monkeypatch):
    seen = []
    monkeypatch.setattr(MMDFairPCA, "_solve", _recording(MMDFairPCA._solve, seen))
    X, s = _data(n=120, p=5)
    MMDFairPCA(n_components=2, random_state=0, max_iter=5).fit(X, sensitive_features=s)
    assert seen == [[1]]
    assert _blas_threads() == [2]
