"""Test costs on the Stiefel manifold with known gradients and minimisers."""

import numpy as np

#: Size of the eigenvalue problem of the ``eigen_problem`` fixture.
P, D = 30, 4


def _psd_with_spectrum(eigvals, seed):
    """Symmetric matrix with the given eigenvalues and a random eigenbasis."""
    p = len(eigvals)
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((p, p)))
    return (Q * eigvals) @ Q.T


def _assert_orthonormal(V, atol=1e-12):
    np.testing.assert_allclose(V.T @ V, np.eye(V.shape[1]), rtol=0, atol=atol)


def _trace_cost(A):
    def cost_and_grad(V):
        return -np.trace(V.T @ A @ V), -2.0 * A @ V

    return cost_and_grad


def _trace_squared_cost(A):
    def cost_and_grad(V):
        t = np.trace(V.T @ A @ V)
        return -(t**2), -4.0 * t * (A @ V)

    return cost_and_grad


def _log_cost(B):
    # f(V) = sum_ij log(1 + M_ij^2), M = V^T B V, B not symmetric
    def cost_and_grad(V):
        M = V.T @ B @ V
        H = 2.0 * M / (1.0 + M**2)
        return np.sum(np.log1p(M**2)), B @ V @ H.T + B.T @ V @ H

    return cost_and_grad


def _eigen_problem():
    """A PSD matrix with distinct eigenvalues, its eigenvalues and eigenvectors."""
    rng = np.random.default_rng(12)
    B = rng.standard_normal((P, P))
    A = B @ B.T / P  # PSD, distinct eigenvalues almost surely
    w, U = np.linalg.eigh(A)
    assert np.min(np.diff(w)) > 1e-6
    return A, w, U
