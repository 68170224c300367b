r"""ADMM over the Fantope for the FPCA semidefinite program (Olfat & Aswani, 2019).

The SDP of :class:`fairpca.ConvexFairPCA`, in its working coordinates, is

.. math::

    \max_{P \in \mathcal F_d}\ \langle S, P\rangle
        - \mu \sum_k \|F_k P\|_2^2
    \quad\text{s.t.}\quad g_j^T P g_j \le \delta^2,

with the Fantope :math:`\mathcal F_d = \{0 \preceq P \preceq I,\ \mathrm{tr}\,P = d\}`
and :math:`\|F_k P\|_2^2 = \lambda_{\max}(P G_k P)` the covariance LMIs
written as squared spectral norms. The alternating direction method of
multipliers [Boyd2011]_ splits it as ``P = X`` (``X`` in the Fantope, projected
by one eigendecomposition [Vu2013]_), ``F_k P = Z_k`` (the proximal map of
``mu ||Z||_2^2`` clips the top singular values of ``Z`` to a common level) and
``g_j^T P g_j = w_j`` (``w_j <= delta^2``). The ``P``-step is a linear system
that is diagonal in the eigenbasis of ``I + sum_k F_k^T F_k`` (plus a rank-``J``
correction for the mean constraints), formed once.

The stopping rule is a certified duality gap: every few iterations the current
``X`` is made feasible (mixed with a point that meets the mean constraints) and
its objective is compared with the Lagrangian upper bound built from the
multipliers ``y_k, beta_j``:

.. math::

    \sum_{i \le d} \lambda_i\Big(S - \mathrm{sym}\sum_k F_k^T y_k
        - \sum_j \beta_j g_j g_j^T\Big)
    + \delta^2 \sum_j \beta_j + \sum_k \frac{\|y_k\|_*^2}{4\mu},

valid for any ``y_k`` and ``beta_j >= 0`` (the Fantope's support function is
the sum of the ``d`` largest eigenvalues; the conjugate of ``mu ||.||_2^2`` is
``||.||_*^2 / (4 mu)``).

One iteration maps ``t = (X + U, Z_k + V_k, w + u)`` (the blocks plus their
scaled multipliers) to the next; the iterates are read off ``t`` by the three
projections, and Anderson acceleration [Walker2011]_ extrapolates ``t``, half
the size of all iterates together. With many coordinates
:mod:`fairpca._fantope_subspaces` runs it on growing subspaces.

References
----------
.. [Boyd2011] S. Boyd, N. Parikh, E. Chu, B. Peleato and J. Eckstein.
   "Distributed Optimization and Statistical Learning via the Alternating
   Direction Method of Multipliers." Foundations and Trends in Machine
   Learning 3(1), 2011.
.. [Vu2013] V. Q. Vu, J. Cho, J. Lei and K. Rohe. "Fantope Projection and
   Selection: A near-optimal convex relaxation of sparse PCA." NeurIPS 2013.
.. [Walker2011] H. F. Walker and P. Ni. "Anderson acceleration for
   fixed-point iterations." SIAM J. Numer. Anal. 49(4), 2011.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import eigh, eigvalsh

from fairpca._fantope_feasible import certified_infeasible, feasible_point, restoration_point
from fairpca._fantope_prox import _gram, _sym, fantope_projection, squared_spectral_prox
from fairpca._linalg import top_eigh

__all__ = [
    "FantopeADMMResult",
    "NoFeasiblePointError",
    "fantope_projection",
    "solve_fantope_admm",
    "squared_spectral_prox",
]

logger = logging.getLogger(__name__)

_INFEASIBLE = (
    "infeasible: no P in the Fantope of trace {d} keeps every pairwise mean difference within delta"
)
#: Anderson acceleration: residual differences kept, most bytes they may take
#: (beyond, the iteration runs without it), and the residual growth that resets it.
_ANDERSON_MEMORY = 24
_ANDERSON_MAX_BYTES = 256 * 2**20
_ANDERSON_SAFEGUARD = 10.0
#: Iterations between certificates (each costs about one ADMM iteration).
_CHECK_EVERY = 10
#: First penalty parameter, in units of ``||S||_2`` (S / rho of order 10 converged in
#: fewer iterations than of order 1 or 3: ``benchmarks/convex_admm.py --suite``).
_RHO_START = 0.1
#: Residual imbalance that triggers a change of the penalty parameter.
_RHO_IMBALANCE = 5.0
#: Fewest columns at which a mostly-zero LMI factor is kept sparse (below, the
#: dense product is faster than scipy.sparse's per-call overhead).
_SPARSE_FROM = 64
#: Largest ``J x J x q`` array of the mean constraints' coupling formed in one product
#: (beyond, row by row).
_COUPLING_AT_ONCE = 2**22
#: Eigenvalues beyond the d-th looked at for a tie when the SDP has no constraints.
_TIE_SEARCH = 8
#: Least seconds between two INFO lines on a solve's certificates.
_PROGRESS_SECONDS = 5.0


class NoFeasiblePointError(ValueError):
    """The ADMM met no feasible point and cannot certify the mean constraints infeasible."""


@dataclass
class FantopeADMMResult:
    """Outcome of :func:`solve_fantope_admm`.

    Attributes
    ----------
    P : ndarray of shape (q, q)
        Feasible point of the SDP with the best certified objective.
    objective : float
        Objective of ``P``: ``<S, P> - mu sum_k ||F_k P||_2^2``.
    upper_bound : float
        Smallest Lagrangian upper bound on the optimum found.
    gap : float
        ``upper_bound - objective`` (``>= 0`` up to rounding): ``P`` is optimal
        within ``gap``.
    bounds : ndarray of shape (n_pairs, 2)
        ``||F_k P||_2^2 = lambda_max(P G_k P)`` of each pair's two LMIs.
    n_iter : int
        ADMM iterations run.
    converged : bool
        Whether ``gap <= tol * max(|objective|, |upper_bound|)``.
    multipliers : list of ndarray
        Final ``y_k`` of the LMI blocks (in the order of the non-None factors;
        empty when ``mu = 0``).
    mean_multipliers : ndarray of shape (J,) or None
        Final ``beta_j >= 0`` of the mean constraints.
    state : _ADMMState or None
        Final iterates, to resume from.
    """

    P: np.ndarray
    objective: float
    upper_bound: float
    gap: float
    bounds: np.ndarray
    n_iter: int
    converged: bool
    multipliers: list
    mean_multipliers: np.ndarray | None
    state: object = None


# ---------------------------------------------------------------------------
# the ADMM
# ---------------------------------------------------------------------------


class _Factor:
    """An LMI factor ``F``, for the products ``F @ A`` and ``F.adjoint(B) = F^T B``.

    A mostly-zero factor (the diagonal ones of the first pair) with at least
    ``_SPARSE_FROM`` columns stays sparse, with its transpose formed once
    (scipy.sparse builds a new matrix at every ``.T``); others are dense arrays.
    """

    def __init__(self, F):
        rows, columns = F.shape
        if sparse.issparse(F) and (columns < _SPARSE_FROM or F.nnz > 0.1 * rows * columns):
            F = F.toarray()
        self.matrix = F.tocsr() if sparse.issparse(F) else np.asarray(F)
        self.transpose = self.matrix.T.tocsr() if sparse.issparse(F) else self.matrix.T
        self.shape = F.shape

    def __matmul__(self, A):
        return np.asarray(self.matrix @ A)

    def adjoint(self, B):
        return np.asarray(self.transpose @ B)

    def gram(self):
        """``F^T F`` as a dense array."""
        product = self.transpose @ self.matrix
        return product.toarray() if sparse.issparse(product) else product


def _lmi_blocks(factors, mu):
    """The non-empty LMI factors, where they sit, and those the ADMM splits off.

    Returns
    -------
    slots : list of (int, int)
        ``(pair, sign)`` of each non-None factor of ``factors``.
    operators : list
        Those factors as :class:`_Factor`, for the reported bounds.
    lmis : list
        The same, or empty when ``mu = 0`` (the penalty then plays no part).
    """
    slots = [(a, b) for a, pair in enumerate(factors) for b, F in enumerate(pair) if F is not None]
    operators = [_Factor(factors[a][b]) for a, b in slots]
    return slots, operators, (operators if mu > 0 else [])


def _covariance_bounds(slots, operators, n_pairs, W, core):
    """``||F P||_2^2 = lambda_max(P G P)`` of each pair's two LMIs at ``P = W core W^T``."""
    bounds = np.zeros((n_pairs, 2))
    for (a, b), value in zip(slots, _penalties(operators, W, core), strict=True):
        bounds[a, b] = value
    return bounds


def _adjoint(lmis, G, blocks, weights):
    """``sym(sum_k F_k^T B_k) + sum_j w_j g_j g_j^T``: the constraints' adjoint without ``X``."""
    out = 0.0
    if lmis:
        out = _sym(sum(F.adjoint(B) for F, B in zip(lmis, blocks, strict=True)))
    if G is not None:
        out = out + (G.T * weights) @ G
    return out


class _NormalEquations:
    """Solver of the ``P``-step: ``sym(M P) + sum_j <h_j, P> h_j = R`` for symmetric ``P``.

    ``M = I + sum_k F_k^T F_k`` and ``h_j = g_j g_j^T``. In the eigenbasis
    ``E`` of ``M`` the first term is ``D * P~`` with
    ``D_ab = (m_a + m_b) / 2``; the rank-``J`` term is removed by the
    Sherman-Morrison-Woodbury identity with a ``J x J`` system.
    """

    def __init__(self, factors, mean_vectors, q):
        M = np.eye(q)
        for F in factors:
            M += F.gram()
        off_diagonal = M - np.diag(np.diag(M))
        if not off_diagonal.any():
            m, self.basis = np.diag(M).copy(), None
        else:
            m, self.basis = eigh(M)
        self.inverse = 2.0 / (m[:, None] + m[None, :])
        self.vectors = None
        if mean_vectors is not None and len(mean_vectors):
            g = mean_vectors if self.basis is None else mean_vectors @ self.basis
            self.vectors = g
            J, q = g.shape
            if J * J * q <= _COUPLING_AT_ONCE:
                products = g[:, None, :] * g[None, :, :]  # (J, J, q): g_i * g_j
                coupling = np.einsum("ija,ab,ijb->ij", products, self.inverse, products)
            else:
                # Row by row: J x q at a time instead of J x J x q (many groups).
                coupling = np.empty((J, J))
                for i in range(J):
                    products = g * g[i]
                    coupling[i] = np.sum((products @ self.inverse) * products, axis=1)
            self.system = np.eye(len(g)) + coupling

    def solve(self, R):
        R = R if self.basis is None else self.basis.T @ R @ self.basis
        P = R * self.inverse
        if self.vectors is not None:
            g = self.vectors
            rhs = np.einsum("ja,ab,jb->j", g, P, g)
            c = np.linalg.solve(self.system, rhs)
            P -= (g.T * c) @ g * self.inverse
        return P if self.basis is None else self.basis @ P @ self.basis.T


def _top_sum(C, d):
    """Sum of the ``d`` largest eigenvalues of the symmetric ``C`` (LAPACK, certified).

    All eigenvalues are computed: LAPACK's subset driver fails ("Internal Error")
    when the ``d``-th largest lies inside a cluster of nearly equal ones, which the
    certificate's matrices have at the optimum, and at these sizes it is no faster.
    """
    return float(np.linalg.eigvalsh(C)[C.shape[0] - d :].sum())


def _nuclear_norm(Y):
    """Sum of the singular values of ``Y``, from the eigenvalues of its smaller Gram matrix."""
    return float(np.sqrt(np.clip(eigvalsh(_gram(Y), check_finite=False), 0.0, None)).sum())


def _penalties(factors, W, core):
    """``||F_k P||_2^2`` for ``P = W core W^T``, orthonormal ``W``, via ``F_k W core``.

    The largest eigenvalue of the smaller Gram matrix of ``F_k W core``.
    """
    out = []
    for F in factors:
        small = np.asarray(F @ W) @ core
        out.append(_top_sum(_gram(small), 1) if small.size else 0.0)
    return np.array(out)


@dataclass
class _Iterates:
    """The ADMM's blocks ``X, Z_k, w`` and their scaled multipliers ``U, V_k, u``."""

    X: np.ndarray
    Z: list
    w: np.ndarray | None
    U: np.ndarray
    V: list
    u: np.ndarray | None


@dataclass
class _ADMMState(_Iterates):
    """The iterates and ``rho``, to resume the ADMM (on a larger subspace, padded with zeros)."""

    rho: float

    def padded(self, size, rows):
        """The state in ``size`` coordinates whose first ones are the current ones.

        ``rows`` are the new row counts of the LMI factors.
        """

        def pad(A, shape):
            out = np.zeros(shape)
            out[: A.shape[0], : A.shape[1]] = A
            return out

        square = (size, size)
        return _ADMMState(
            pad(self.X, square),
            [pad(z, (m, size)) for z, m in zip(self.Z, rows, strict=True)],
            self.w,
            pad(self.U, square),
            [pad(v, (m, size)) for v, m in zip(self.V, rows, strict=True)],
            self.u,
            self.rho,
        )


class _Layout:
    """Packs the governing sequence ``t = (T, T_k, t_w)`` into one vector and back.

    ``T`` is ``q x q``, ``T_k`` has the shape of ``F_k P`` and ``t_w`` one entry
    per mean constraint.
    """

    def __init__(self, shapes):
        self.shapes = shapes
        self.sizes = [int(np.prod(shape)) for shape in shapes]

    def pack(self, parts):
        return np.concatenate([np.ravel(part) for part in parts])

    def unpack(self, vector):
        out, at = [], 0
        for shape, size in zip(self.shapes, self.sizes, strict=True):
            out.append(vector[at : at + size].reshape(shape))
            at += size
        return out


@dataclass
class _Decoded(_Iterates):
    """The iterates read off ``t``, with the Fantope eigenpairs of ``X`` and ``||V_k||_*``."""

    Xw: np.ndarray
    Xv: np.ndarray
    V_nuclear: list  # ||V_k||_*, from the proximal maps

    def scale_duals(self, factor):
        """The same iterates for ``rho * factor``: scaled duals divided by ``factor``.

        ``U`` stays in the Fantope's normal cone at ``X`` (a cone), and likewise
        for the other blocks, so the projections of the new ``t`` are unchanged.
        """
        self.U = self.U / factor
        self.V = [v / factor for v in self.V]
        self.V_nuclear = [value / factor for value in self.V_nuclear]
        if self.u is not None:
            self.u = self.u / factor


def _decode(layout, t, has_mean, limits, weight, d, ranks):
    """The iterates of ``t``: the projections of its blocks and the residues (scaled duals).

    ``X = Pi_F(T)`` (Fantope), ``Z_k = prox_{weight ||.||_2^2}(T_k)``,
    ``w = min(t_w, limits)``; ``U = T - X`` and so on. ``ranks`` (updated in
    place) carries the eigenpair counts to try first.
    """
    parts = layout.unpack(t)
    T, t_w = parts[0], (parts[-1] if has_mean else None)
    blocks = parts[1 : len(parts) - has_mean]
    Xw, Xv = fantope_projection(T, d, ranks["fantope"])
    ranks["fantope"] = Xv.size + d + 2
    X = (Xw * Xv) @ Xw.T
    Z, V, V_nuclear = [], [], []
    for i, block in enumerate(blocks):
        z, ranks["prox"][i], removed = squared_spectral_prox(block, weight, ranks["prox"][i] + 2)
        Z.append(z)
        V.append(block - z)
        V_nuclear.append(removed)
    w = u = None
    if has_mean:
        w = np.minimum(t_w, limits)
        u = t_w - w
    return _Decoded(X, Z, w, T - X, V, u, Xw, Xv, V_nuclear)


def _p_step(it, S, rho, normal, lmis, G):
    """The ``P``-step from the iterates, and the next ``t`` parts with ``F_k P``, ``g^T P g``.

    ``P`` solves the normal equations of the augmented Lagrangian; the next
    ``t`` is ``(P + U, F_k P + V_k, g^T P g + u)``: one ADMM iteration is
    ``t -> _p_step(_decode(t))``, a fixed-point map that Anderson acceleration
    extrapolates.
    """
    blocks = [z - v for z, v in zip(it.Z, it.V, strict=True)]
    R = S / rho + it.X - it.U + _adjoint(lmis, G, blocks, None if G is None else it.w - it.u)
    P = _sym(normal.solve(R))
    FP = [np.asarray(F @ P) for F in lmis]
    parts = [P + it.U] + [fp + v for fp, v in zip(FP, it.V, strict=True)]
    gP = None
    if G is not None:
        gP = np.einsum("ja,ab,jb->j", G, P, G)
        parts.append(gP + it.u)
    return parts, P, FP, gP


class _Anderson:
    """Type-II Anderson acceleration of a fixed-point iteration ``x -> g(x)``, safeguarded.

    The next point is ``g_k - dG gamma`` with ``gamma`` the regularised
    least-squares fit of the residual ``f_k = g_k - x_k`` by the recent residual
    differences ``dF`` [Walker2011]_. When the residual grows more than
    ``_ANDERSON_SAFEGUARD`` times over the last accepted one, the memory is
    cleared and the plain step ``g_k`` is taken.

    The differences sit in preallocated rows, the newest overwriting the
    oldest, and their Gram matrix is updated one row per step, so that a step
    costs three passes over the ``memory x size`` rows.
    """

    def __init__(self, memory, size):
        self.dG = np.empty((memory, size))
        self.dF = np.empty((memory, size))
        self.gram = np.empty((memory, memory))
        self.reset()

    def reset(self):
        self.previous = None  # (g, f) of the last step
        self.count = 0  # rows of dG, dF in use
        self.slot = 0  # row the next difference overwrites
        self.accepted_norm = np.inf

    def next(self, x, g):
        f = g - x
        norm = float(np.linalg.norm(f))
        if norm > _ANDERSON_SAFEGUARD * self.accepted_norm:
            self.reset()
            self.accepted_norm = norm
            return g
        self.accepted_norm = norm
        if self.previous is not None:
            g_old, f_old = self.previous
            j = self.slot
            np.subtract(g, g_old, out=self.dG[j])
            np.subtract(f, f_old, out=self.dF[j])
            self.count = min(self.count + 1, len(self.dF))
            self.slot = (j + 1) % len(self.dF)
            row = self.dF[: self.count] @ self.dF[j]
            self.gram[j, : self.count] = row
            self.gram[: self.count, j] = row
        self.previous = (g, f)
        if not self.count:
            return g
        k = self.count
        gram = self.gram[:k, :k].copy()
        gram[np.diag_indices_from(gram)] += 1e-10 * np.trace(gram) + 1e-300
        gamma = np.linalg.solve(gram, self.dF[:k] @ f)
        return g - gamma @ self.dG[:k]


def solve_fantope_admm(S, factors, mean_vectors, limits, d, mu, tol, max_iter, state=None):
    """Solve the FPCA SDP by ADMM over the Fantope, to a certified relative gap ``tol``.

    Every certificate is logged at DEBUG level on this module's logger, and at
    INFO level at most every ``_PROGRESS_SECONDS`` (progress of long fits).

    Parameters
    ----------
    S : ndarray of shape (q, q)
        Symmetric objective matrix.
    factors : list of list of (sparse matrix or None)
        ``[F+, F-]`` of each pair of groups (``None``: that LMI holds with
        ``t = 0``); empty without covariance constraints.
    mean_vectors : ndarray of shape (J, q) or None
        ``g_j`` of the constraints ``g_j^T P g_j <= limits_j``; None when the
        coordinates already make them exact.
    limits : ndarray of shape (J,) or None
        Upper bounds of the mean constraints.
    d : int
        Trace of ``P``, ``1 <= d <= q``.
    mu : float
        Covariance penalty.
    tol : float
        Relative duality gap at which to stop.
    max_iter : int
        Iteration limit.
    state : _ADMMState, optional
        Iterates to resume from (default: :func:`_first_iterates`).

    Returns
    -------
    FantopeADMMResult
        Its ``P`` is feasible: when the directions orthogonal to the ``g_j``
        number at least ``d``, PCA on them (the restoration point) is the
        first certified point, so there always is one.

    Raises
    ------
    ValueError
        If the mean constraints are certified infeasible (the message starts
        with "infeasible").
    NoFeasiblePointError
        If fewer than ``d`` directions are orthogonal to the ``g_j`` and no
        iterate could be made feasible within ``max_iter`` iterations (the
        constraints then may or may not be feasible).
    """
    q = S.shape[0]
    slots, operators, lmis = _lmi_blocks(factors, mu)
    G = mean_vectors if mean_vectors is not None and len(mean_vectors) else None

    def finish(W, core, objective, upper, n_iter, converged, y=(), beta=None, state=None):
        return FantopeADMMResult(
            _sym((W @ core) @ W.T),
            objective,
            upper,
            max(upper - objective, 0.0),
            _covariance_bounds(slots, operators, len(factors), W, core),
            n_iter,
            converged,
            list(y),
            beta,
            state,
        )

    if not lmis and G is None:
        # max <S, P> over the Fantope is the sum of the top d eigenvalues (Ky Fan). With
        # the d-th tied, every mixture of the tied eigenvectors is optimal; the one with
        # equal weights on them (the interior-point solvers' answer) shows the tie.
        values, vectors = top_eigh(S, min(q, d + _TIE_SEARCH))
        scale = max(abs(values[0]), np.finfo(float).tiny)
        tied = np.abs(values - values[d - 1]) <= tol * scale
        weights = np.where(values > values[d - 1] + tol * scale, 1.0, 0.0)
        weights[tied] = (d - weights.sum()) / tied.sum()
        keep = weights > 0
        value = float(values[:d].sum())
        return finish(vectors[:, keep], np.diag(weights[keep]), value, value, 0, True)

    restore = best = None  # best: (objective, W, core) of the best feasible point
    if G is not None:
        if certified_infeasible(G, np.ones(len(G)), d, limits):
            raise ValueError(_INFEASIBLE.format(d=d))
        restore = restoration_point(S, G, d)
        if np.all(restore[2] <= limits):
            # Feasible from the start: the gap is certified against it from the first check.
            best = (_objective(S, lmis, mu, restore[0], restore[1]), *restore[:2])

    normal = _NormalEquations(lmis, G, q)
    parts, rho = _first_iterates(S, lmis, G, limits, d, state)
    layout = _Layout([part.shape for part in parts])
    t = layout.pack(parts)
    ranks = {"fantope": 2 * d + 2, "prox": [4] * len(lmis)}
    fits = 2 * _ANDERSON_MEMORY * t.nbytes <= _ANDERSON_MAX_BYTES
    anderson = _Anderson(_ANDERSON_MEMORY, t.size) if fits else None
    progress = _Progress()
    upper = np.inf
    converged = False
    previous = None  # iterates of the last iteration, for the dual residual
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        it = _decode(layout, t, G is not None, limits, mu / rho, d, ranks)
        check = n_iter % _CHECK_EVERY == 0 or n_iter == max_iter
        if check:
            # Certificate: a feasible point's objective against the Lagrangian bound.
            point = feasible_point(it.Xw, it.Xv, restore, G, limits)
            if point is not None:
                objective = _objective(S, lmis, mu, *point)
                if best is None or objective > best[0]:
                    best = (objective, *point)
            y = [rho * v for v in it.V]
            bound = sum((rho * value) ** 2 for value in it.V_nuclear) / (4 * mu) if lmis else 0.0
            beta = None
            if G is not None:
                beta = np.clip(rho * it.u, 0.0, None)
                if certified_infeasible(G, beta, d, limits):
                    raise ValueError(_INFEASIBLE.format(d=d))
                bound += beta @ limits
            upper = min(upper, _top_sum(_sym(S - _adjoint(lmis, G, y, beta)), d) + bound)
            if best is not None:
                scale = max(abs(best[0]), abs(upper), np.finfo(float).tiny)
                gap = upper - best[0]
                converged = gap <= tol * scale
                progress.report(n_iter, best[0], upper, gap / scale, rho, converged)
                if converged:
                    break
        parts, P, FP, gP = _p_step(it, S, rho, normal, lmis, G)
        if check and previous is not None:
            factor = _rho_factor(it, previous, P, FP, gP, lmis, G)
            if factor != 1.0:
                rho *= factor
                it.scale_duals(factor)
                parts, *_ = _p_step(it, S, rho, normal, lmis, G)
                if anderson is not None:
                    anderson.reset()
        t_next = layout.pack(parts)
        t = t_next if anderson is None else anderson.next(t, t_next)
        previous = it
    if best is None:
        raise NoFeasiblePointError(
            f"the ADMM found no point meeting the mean constraints in {n_iter} iterations, "
            f"and fewer than d={d} directions are orthogonal to every mean difference: the "
            "constraints may be infeasible"
        )
    objective, Wf, core = best
    y = [rho * v for v in it.V]
    beta = None if G is None else np.clip(rho * it.u, 0.0, None)
    state = _ADMMState(it.X, it.Z, it.w, it.U, it.V, it.u, rho)
    return finish(Wf, core, objective, upper, n_iter, converged, y, beta, state)


def _objective(S, lmis, mu, W, core):
    """The SDP objective ``<S, P> - mu sum_k ||F_k P||_2^2`` at ``P = W core W^T``."""
    objective = float(np.sum((W.T @ S @ W) * core))
    if lmis:
        objective -= mu * _penalties(lmis, W, core).sum()
    return objective


def _first_iterates(S, lmis, G, limits, d, state):
    """The first ``t = (X + U, Z_k + V_k, w + u)`` and ``rho``: from ``state`` or a warm start.

    The warm start is PCA, the top-``d`` eigenprojector of ``S``, with every
    multiplier zero. (Starting from the restoration point instead, which meets
    the mean constraints, took more iterations on most problems of
    ``benchmarks/convex_admm.py --suite``: 3100 against 1910 at p = 300; it
    serves as the first certified point instead.)
    """
    if state is not None:
        parts = [state.X + state.U] + [z + v for z, v in zip(state.Z, state.V, strict=True)]
        if state.w is not None:
            parts.append(state.w + state.u)
        return parts, state.rho
    _, vectors = top_eigh(S, d)
    X = vectors @ vectors.T
    parts = [X] + [np.asarray(F @ X) for F in lmis]
    if G is not None:
        parts.append(np.minimum(np.einsum("ja,ab,jb->j", G, X, G), limits))
    return parts, _RHO_START * max(np.linalg.norm(S, 2), np.finfo(float).tiny)


class _Progress:
    """Log lines of the certificates: each at DEBUG, at INFO every ``_PROGRESS_SECONDS``.

    The first certificate, the last (converged) one and one at least every
    ``_PROGRESS_SECONDS`` of a solve go to INFO: a long fit shows its
    progress without a line per certificate.
    """

    def __init__(self):
        self.last = None

    def report(self, n_iter, objective, upper, relative_gap, rho, final):
        now = time.monotonic()
        due = self.last is None or final or now - self.last >= _PROGRESS_SECONDS
        if due:
            self.last = now
        logger.log(
            logging.INFO if due else logging.DEBUG,
            "ADMM iteration %d: objective %.10g, bound %.10g, relative gap %.2e, rho %.3g",
            n_iter,
            objective,
            upper,
            relative_gap,
            rho,
        )


def _rho_factor(it, previous, P, FP, gP, lmis, G):
    """Factor by which residual balancing changes ``rho`` (1 when the residuals are balanced).

    The primal residual is ``t_next - t`` (``P - X``, ``F_k P - Z_k``,
    ``g^T P g - w``), the dual one the change of the projected blocks since the
    last iteration mapped through the constraints, each relative to its scale.
    """
    primal = [np.linalg.norm(P - it.X)] + [
        np.linalg.norm(f - z) for f, z in zip(FP, it.Z, strict=True)
    ]
    if G is not None:
        primal.append(np.linalg.norm(gP - it.w))
    changes = [z - zo for z, zo in zip(it.Z, previous.Z, strict=True)]
    dual_change = (
        it.X - previous.X + _adjoint(lmis, G, changes, None if G is None else it.w - previous.w)
    )
    scaled_dual = it.U + _adjoint(lmis, G, it.V, it.u)
    r_primal = np.linalg.norm(primal) / max(np.linalg.norm(P), np.linalg.norm(it.X), 1e-300)
    r_dual = np.linalg.norm(dual_change) / max(np.linalg.norm(scaled_dual), 1e-300)
    if r_primal > 0 and r_dual > 0:
        ratio = np.sqrt(r_primal / r_dual)
        if ratio > _RHO_IMBALANCE or ratio < 1 / _RHO_IMBALANCE:
            return float(np.clip(ratio, 1e-2, 1e2))
    return 1.0
