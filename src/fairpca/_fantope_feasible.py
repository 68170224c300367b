r"""Feasible points of the FPCA SDP's mean constraints, for the Fantope ADMM.

The mean constraints of :mod:`fairpca._fantope_admm` are ``g_j^T P g_j <=
limits_j`` over the Fantope :math:`\mathcal F_d`. Whenever the directions
orthogonal to every ``g_j`` number at least ``d`` (with ``k`` groups the
``g_j`` span at most ``k - 1`` of them, so whenever ``d <= q - (k - 1)``),
any Fantope point supported on that complement meets every constraint with
``g_j^T P g_j = 0``: PCA restricted to it is the first feasible point (the
restoration point), and the ADMM's iterates are made feasible by moving them
onto it (:func:`feasible_point`). Only when the complement is too small can
the constraints be infeasible, and :func:`certified_infeasible` then checks a
Lagrangian certificate.
"""

import numpy as np
from scipy.linalg import eigh

from fairpca._fantope_prox import _sym, fantope_projection
from fairpca._linalg import row_space, top_eigh

__all__ = ["certified_infeasible", "feasible_point", "restoration_point"]


def feasible_point(W, values, restore, mean_vectors, limits):
    """A feasible point near the Fantope point ``X = W diag(values) W^T``.

    ``X`` mixed with a feasible point ``R`` just enough that
    ``(1 - s) g_j^T X g_j + s g_j^T R g_j <= limits_j`` for every ``j``
    (the objective is concave, so the mixture loses at most ``s`` times the
    difference of the two objectives).

    Parameters
    ----------
    W : ndarray of shape (q, r)
    values : ndarray of shape (r,)
    restore : tuple
        The first feasible point, as :func:`restoration_point` returns it.
    mean_vectors : ndarray of shape (J, q) or None
    limits : ndarray of shape (J,)

    Returns
    -------
    point : tuple (W', C) or None
        Orthonormal ``W'`` and a symmetric core ``C`` with ``P = W' C W'^T``;
        None when no mixture meets the constraints.
    """
    core = np.diag(values)
    if mean_vectors is None:
        return W, core
    gW = mean_vectors @ W
    excess = np.einsum("ja,a,ja->j", gW, values, gW) - limits
    if excess.max() <= 0:
        return W, core
    R, r_core, r_products = _nearby_restoration(W, values, restore, mean_vectors)
    r_excess = r_products - limits
    violated = excess > 0
    if np.any(r_excess[violated] >= 0):
        return None
    weight = float(np.max(excess[violated] / (excess[violated] - r_excess[violated])))
    if np.any((1 - weight) * excess + weight * r_excess > 1e-12 * limits):
        return None
    basis, triangle = np.linalg.qr(np.hstack((W, R)))
    left, right = triangle[:, : W.shape[1]], triangle[:, W.shape[1] :]
    core = (1 - weight) * (left * values) @ left.T + weight * right @ r_core @ right.T
    return basis, _sym(core)


def _nearby_restoration(W, values, restore, mean_vectors):
    """A feasible point near ``X = W diag(values) W^T``: ``X`` kept off the ``g_j``, on the Fantope.

    ``Pi X Pi`` (``Pi`` the projector onto the directions orthogonal to every
    ``g_j``) meets ``g_j^T P g_j = 0`` but has lost trace; projecting it onto the
    Fantope within the span of ``Pi W`` and of the first restoration point's
    directions (which lie in the complement too) restores the trace and keeps
    the constraints. When the complement has fewer than ``d`` directions the
    first restoration point is used as it is.

    Returns
    -------
    restore : tuple
        As :func:`restoration_point` returns it.
    """
    first, _, products, free = restore
    if free is None:
        return restore[:3]
    d = first.shape[1]
    # Everything happens in the complement's coordinates ``free^T x``: whatever basis is
    # chosen there, mapped back by ``free`` it stays orthogonal to every g_j. (A basis
    # built in the full space from a rank-deficient Pi W takes arbitrary directions,
    # the g_j among them, and the Fantope projection then puts trace on them.)
    inner = free.T @ W
    if W.shape[1] + d < free.shape[1]:
        basis, _ = np.linalg.qr(np.hstack((inner, free.T @ first)))
        inner = basis.T @ inner
    else:
        basis = None
    vectors, core_values = fantope_projection(_sym((inner * values) @ inner.T), d)
    R = free @ (vectors if basis is None else basis @ vectors)
    gR = mean_vectors @ R
    return R, np.diag(core_values), np.einsum("ja,a,ja->j", gR, core_values, gR)


def restoration_point(S, mean_vectors, d):
    """A first feasible point: PCA on the directions orthogonal to every ``g_j``.

    Where those leave fewer than ``d`` directions, the bottom-``d``
    eigenprojector of ``sum_j g_j g_j^T`` (the Fantope point with the smallest
    ``sum_j g_j^T P g_j``; it may violate a constraint, and then no point is
    certified until the iterates give one).

    Returns
    -------
    restore : tuple (W, core, products, free)
        ``P = W core W^T``, its ``g_j^T P g_j``, and an orthonormal basis of the
        complement of the span of the ``g_j`` (None when it has fewer than ``d``
        directions).
    """
    _, free = row_space(mean_vectors)
    if free.shape[1] >= d:
        _, inner = top_eigh(_sym(free.T @ S @ free), d)
        W = free @ inner
    else:
        _, W = eigh(mean_vectors.T @ mean_vectors, subset_by_index=[0, d - 1])
        free = None
    gW = mean_vectors @ W
    return W, np.eye(d), np.einsum("ja,ja->j", gW, gW), free


def certified_infeasible(mean_vectors, weights, d, limits):
    """Whether ``weights >= 0`` prove that no Fantope point meets ``g_j^T P g_j <= limits_j``.

    For any ``beta >= 0``, ``min_{P in F_d} sum_j beta_j g_j^T P g_j`` is the sum
    of the ``d`` smallest eigenvalues of ``sum_j beta_j g_j g_j^T``; if it exceeds
    ``sum_j beta_j limits_j`` some constraint fails at every ``P``.
    """
    beta = np.clip(weights, 0.0, None)
    if not beta.any():
        return False
    H = (mean_vectors.T * beta) @ mean_vectors
    low = np.linalg.eigvalsh(H)[:d].sum()  # all of them: see _top_sum
    return bool(low > (beta @ limits) * (1 + 1e-9))
