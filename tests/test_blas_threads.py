"""The solvers' loops keep BLAS on one thread (fairpca._linalg.one_blas_thread)."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from fairpca import ConvexFairPCA, MMDFairPCA, RobustFairPCA, _fantope_admm, robust
from fairpca._linalg import one_blas_thread


def _blas_libraries():
    return [lib for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def threads():
    """BLAS on two threads around the test: a reader of the thread counts of its libraries.

    Only the libraries that take two threads are read (a solver's bundled
    single-threaded BLAS, such as SCS's, stays at one); without any, a skip.
    """
    with threadpool_limits(limits=2, user_api="blas"):
        paths = {lib["filepath"] for lib in _blas_libraries() if lib["num_threads"] == 2}
        if not paths:
            pytest.skip("no BLAS library here runs two threads")

        def read():
            return sorted(
                {lib["num_threads"] for lib in _blas_libraries() if lib["filepath"] in paths}
            )

        yield read


def _recording(function, seen, read):
    def wrapper(*args, **kwargs):
        seen.append(read())
        return function(*args, **kwargs)

    return wrapper


def _data(seed=0, n=300, p=8):
    rng = np.random.default_rng(seed)
    s = np.repeat([0, 1], n // 2)
    X = rng.standard_normal((n, p)) * np.linspace(0.5, 2.0, p) + s[:, None]
    return X, s


def test_one_blas_thread_limits_and_restores(threads):
    with one_blas_thread():
        assert threads() == [1]
        with one_blas_thread():
            assert threads() == [1]
        assert threads() == [1]
    assert threads() == [2]


def test_convex_admm_runs_on_one_thread_below_the_size_gate(threads, monkeypatch):
    seen = []
    monkeypatch.setattr(_fantope_admm, "_admm", _recording(_fantope_admm._admm, seen, threads))
    X, s = _data()
    assert X.shape[1] < _fantope_admm._THREADED_FROM
    ConvexFairPCA(n_components=2).fit(X, sensitive_features=s)
    assert seen and all(threads == [1] for threads in seen)
    assert threads() == [2]


def test_convex_admm_keeps_the_threads_from_the_size_gate(threads, monkeypatch):
    seen = []
    monkeypatch.setattr(_fantope_admm, "_admm", _recording(_fantope_admm._admm, seen, threads))
    monkeypatch.setattr(_fantope_admm, "_THREADED_FROM", 8)
    X, s = _data(p=8)
    ConvexFairPCA(n_components=2).fit(X, sensitive_features=s)
    assert seen and all(threads == [2] for threads in seen)


def test_robust_descent_runs_on_one_thread(threads, monkeypatch):
    seen = []
    monkeypatch.setattr(
        robust, "_subgradient_descent", _recording(robust._subgradient_descent, seen, threads)
    )
    X, s = _data()
    RobustFairPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    assert seen == [[1]]
    assert threads() == [2]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=5
def test_mmd_solve_runs_on_one_thread(threads, monkeypatch):
    seen = []
    monkeypatch.setattr(MMDFairPCA, "_solve", _recording(MMDFairPCA._solve, seen, threads))
    X, s = _data(n=120, p=5)
    MMDFairPCA(n_components=2, random_state=0, max_iter=5).fit(X, sensitive_features=s)
    assert seen == [[1]]
    assert threads() == [2]
