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

The loop knows the constraints only through the interface of
:class:`fairpca._fantope_constraints.ConstraintFamily`: in general it solves
``max <S, P> - sum_f h_f(A_f(P))`` over the Fantope, splitting ``A_f(P) = Z_f``
for each family ``f`` (its map ``A_f`` and adjoint, the proximal map of
``h_f``, its conjugate in the bound, and for a hard family a way to make a
point feasible). The two families above are
:class:`~fairpca._fantope_constraints.CovarianceLMIs` and
:class:`~fairpca._fantope_constraints.MeanConstraints`; a new family is a new
subclass, not a change here.

One iteration maps ``t = (X + U, Z_f + V_f)`` (the blocks plus their scaled
multipliers) to the next; the iterates are read off ``t`` by the projections
and proximal maps, and Anderson acceleration [Walker2011]_ extrapolates ``t``,
half the size of all iterates together. With many coordinates
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

import contextlib
import logging
import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import eigh, lapack

from fairpca._fantope_prox import (
    _sym,
    _top_sum,
    bottom_route_size,
    fantope_projection,
    fantope_projection_from_bottom,
    squared_spectral_prox,
)
from fairpca._linalg import one_blas_thread, top_eigh

__all__ = [
    "FantopeADMMResult",
    "NoFeasiblePointError",
    "fantope_projection",
    "solve_fantope_admm",
    "squared_spectral_prox",
]

logger = logging.getLogger(__name__)

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
#: Eigenvalues beyond the d-th looked at for a tie when the SDP has no constraints.
_TIE_SEARCH = 8
#: Size of ``S`` from which the iterations run BLAS on its threads. Below it they run on
#: one: on an idle machine the eigendecompositions then take up to about a third
#: longer, and on a busy one threads wait for each other at every call and take two to
#: three times longer (``benchmarks/blas_threads.py``).
_THREADED_FROM = 300
#: Least seconds between two INFO lines on a solve's certificates.
_PROGRESS_SECONDS = 5.0


class NoFeasiblePointError(ValueError):
    """The ADMM met no feasible point and cannot certify the hard constraints infeasible."""


@dataclass
class FantopeADMMResult:
    """Outcome of :func:`solve_fantope_admm`.

    Attributes
    ----------
    P : ndarray of shape (q, q)
        Feasible point of the SDP with the best certified objective.
    objective : float
        Objective of ``P``: ``<S, P> - sum_f h_f(A_f(P))`` (for the FPCA SDP
        ``<S, P> - mu sum_k ||F_k P||_2^2``).
    upper_bound : float
        Smallest Lagrangian upper bound on the optimum found.
    gap : float
        ``upper_bound - objective`` (``>= 0`` up to rounding): ``P`` is optimal
        within ``gap``.
    values : list
        Each family's :meth:`~ConstraintFamily.value` at ``P``, in the order
        of the constraints.
    n_iter : int
        ADMM iterations run.
    converged : bool
        Whether ``gap <= tol * max(|objective|, |upper_bound|)``.
    multipliers : list
        Each family's final multiplier ``y_f`` (a list of blocks), in the order
        of the constraints; None for a family not split off (or none run).
    state : _ADMMState or None
        Final iterates, to resume from.
    bounds : ndarray of shape (n_pairs, 2) or None
        For the FPCA SDP (:func:`fairpca._fantope_subspaces.solve_fpca_sdp`):
        ``||F_k P||_2^2 = lambda_max(P G_k P)`` of each pair's two LMIs.
    """

    P: np.ndarray
    objective: float
    upper_bound: float
    gap: float
    values: list
    n_iter: int
    converged: bool
    multipliers: list
    state: object = None
    bounds: np.ndarray | None = None


# ---------------------------------------------------------------------------
# the ADMM
# ---------------------------------------------------------------------------


def _adjoint(families, ys):
    """``sum_f A_f^T(y_f)``: the constraints' adjoint at the multipliers ``ys``."""
    out = 0.0
    for family, y in zip(families, ys, strict=True):
        out = out + family.adjoint(y)
    return out


class _NormalEquations:
    """Solver of the ``P``-step: ``sym(M P) + sum_f A_f^T A_f (P) = R`` for symmetric ``P``.

    ``M = I + sum_k F_k^T F_k`` gathers the ``"multiplier"`` families
    (``A(P) = F_k P``). In the eigenbasis ``E`` of ``M`` that term is
    ``D * P~`` with ``D_ab = (m_a + m_b) / 2``; the ``"functional"`` families
    (a few functionals ``<C_j, P>``) add a low-rank term, removed by the
    Sherman-Morrison-Woodbury identity with a system of their total size.
    """

    def __init__(self, families, q):
        M = np.eye(q)
        for family in families:
            if family.kind == "multiplier":
                for gram in family.grams():
                    M += gram
        off_diagonal = M - np.diag(np.diag(M))
        if not off_diagonal.any():
            m, self.basis = np.diag(M).copy(), None
        else:
            m, self.basis = eigh(M)
        self.inverse = 2.0 / (m[:, None] + m[None, :])
        # The functionals in the eigenbasis: the families restricted to E (P = E P~ E^T).
        self.functionals = [
            family if self.basis is None else family.restrict(self.basis)
            for family in families
            if family.kind == "functional"
        ]
        if self.functionals:
            self.sizes = [family.shapes()[0][0] for family in self.functionals]
            coupling = np.block(
                [
                    [f.coupling(self.inverse, None if g is f else g) for g in self.functionals]
                    for f in self.functionals
                ]
            )
            # Inverted once: the system is small and well-conditioned (identity plus a
            # Gram matrix), and a product costs less than a solve at every iteration.
            self.system = np.linalg.inv(np.eye(sum(self.sizes)) + coupling)

    def solve(self, R):
        R = R if self.basis is None else self.basis.T @ R @ self.basis
        P = R * self.inverse
        if self.functionals:
            rhs = [family.apply(P)[0] for family in self.functionals]
            c = self.system @ (rhs[0] if len(rhs) == 1 else np.concatenate(rhs))
            at = 0
            for family, size in zip(self.functionals, self.sizes, strict=True):
                P -= family.adjoint([c[at : at + size]]) * self.inverse
                at += size
        return P if self.basis is None else self.basis @ P @ self.basis.T


@dataclass
class _Iterates:
    """The ADMM's blocks ``X, Z_f`` and their scaled multipliers ``U, V_f``.

    ``Z`` and ``V`` hold one list of blocks per family split off.
    """

    X: np.ndarray
    Z: list
    U: np.ndarray
    V: list


def _pad(A, shape):
    out = np.zeros(shape)
    out[tuple(slice(0, n) for n in A.shape)] = A
    return out


@dataclass
class _ADMMState(_Iterates):
    """The iterates and ``rho``, to resume the ADMM (on a larger subspace, padded with zeros)."""

    rho: float

    def padded(self, size, shapes):
        """The state in ``size`` coordinates whose first ones are the current ones.

        ``shapes`` are the new shapes of each family's blocks (``family.shapes()``).
        """
        square = (size, size)

        def blocks(parts):
            return [
                [_pad(block, shape) for block, shape in zip(family, new, strict=True)]
                for family, new in zip(parts, shapes, strict=True)
            ]

        return _ADMMState(
            _pad(self.X, square), blocks(self.Z), _pad(self.U, square), blocks(self.V), self.rho
        )


class _Layout:
    """Packs the governing sequence ``t = (T, T_f)`` into one vector and back.

    ``T`` is ``q x q``, ``T_f`` the blocks of each family (the shapes of ``A_f(P)``).
    """

    def __init__(self, shapes, counts):
        self.shapes = shapes
        self.sizes = [int(np.prod(shape)) for shape in shapes]
        self.counts = counts

    def pack(self, parts):
        return np.concatenate([np.ravel(part) for part in parts])

    def unpack(self, vector):
        """``T`` and the list of each family's blocks."""
        out, at = [], 0
        for shape, size in zip(self.shapes, self.sizes, strict=True):
            out.append(vector[at : at + size].reshape(shape))
            at += size
        blocks, at = [], 1
        for count in self.counts:
            blocks.append(out[at : at + count])
            at += count
        return out[0], blocks


@dataclass
class _Decoded(_Iterates):
    """The iterates read off ``t``, with the Fantope eigenpairs of ``X`` and each prox's ``aux``."""

    Xw: np.ndarray | None  # None where not asked for (_decode's factors)
    Xv: np.ndarray | None
    aux: list  # per family, from its prox (e.g. ||V_k||_* of the LMI blocks)

    def scale_duals(self, factor, families):
        """The same iterates for ``rho * factor``: scaled duals divided by ``factor``.

        ``U`` stays in the Fantope's normal cone at ``X`` (a cone), and likewise
        for the other blocks, so the projections of the new ``t`` are unchanged.
        """
        self.U = self.U / factor
        self.V = [[v / factor for v in V] for V in self.V]
        self.aux = [
            family.scale_aux(aux, factor) for family, aux in zip(families, self.aux, strict=True)
        ]


def _project_fantope(T, d, ranks, factors):
    """``X = Pi_F(T)``, with its eigenpairs ``(Xw, Xv)`` if ``factors`` (else None, None).

    Where the last projection dropped few eigenvalues and clipped none at 1
    (:func:`bottom_route_size`), the next is tried from the smallest eigenpairs
    (:func:`fantope_projection_from_bottom`) unless the eigenpairs are wanted;
    otherwise, or if that fails, from the largest (:func:`fantope_projection`).
    ``ranks`` (updated in place) carries both routes' eigenpair counts.
    """
    q = T.shape[0]
    if not factors and ranks["low"] is not None:
        X, dropped = fantope_projection_from_bottom(T, d, ranks["low"])
        if X is not None:
            ranks["low"] = bottom_route_size(q, dropped)
            return X, None, None
    Xw, Xv = fantope_projection(T, d, ranks["fantope"])
    ranks["fantope"] = Xv.size + d + 2
    ranks["low"] = bottom_route_size(q, q - Xv.size) if Xv[0] < 1.0 else None
    return (Xw * Xv) @ Xw.T, Xw, Xv


def _decode(layout, t, families, rho, d, ranks, factors):
    """The iterates of ``t``: the projections of its blocks and the residues (scaled duals).

    ``X = Pi_F(T)`` (Fantope), ``Z_f = prox_{h_f / rho}(T_f)``; ``U = T - X``
    and so on. ``ranks`` (updated in place) carries the eigenpair counts of the
    Fantope projection and each family's hint to try first; ``factors`` asks
    for the eigenpairs of ``X`` (``Xw, Xv``, else None).
    """
    T, blocks = layout.unpack(t)
    X, Xw, Xv = _project_fantope(T, d, ranks, factors)
    Z, V, aux = [], [], []
    for i, (family, parts) in enumerate(zip(families, blocks, strict=True)):
        z, extra, ranks["hints"][i] = family.prox(parts, rho, ranks["hints"][i])
        Z.append(z)
        V.append([part - block for part, block in zip(parts, z, strict=True)])
        aux.append(extra)
    return _Decoded(X, Z, T - X, V, Xw, Xv, aux)


def _p_step(it, S, rho, normal, families):
    """The ``P``-step from the iterates, and the next ``t`` parts with ``A_f(P)``.

    ``P`` solves the normal equations of the augmented Lagrangian; the next
    ``t`` is ``(P + U, A_f(P) + V_f)``: one ADMM iteration is
    ``t -> _p_step(_decode(t))``, a fixed-point map that Anderson acceleration
    extrapolates.
    """
    targets = [[z - v for z, v in zip(Z, V, strict=True)] for Z, V in zip(it.Z, it.V, strict=True)]
    R = S / rho + it.X - it.U + _adjoint(families, targets)
    P = _sym(normal.solve(R))
    AP = [family.apply(P) for family in families]
    parts = [P + it.U] + [
        a + v for A, V in zip(AP, it.V, strict=True) for a, v in zip(A, V, strict=True)
    ]
    return parts, P, AP


class _Anderson:
    """Type-II Anderson acceleration of a fixed-point iteration ``x -> g(x)``, safeguarded.

    The next point is ``g_k - dG gamma`` with ``gamma`` the regularised
    least-squares fit of the residual ``f_k = g_k - x_k`` by the recent residual
    differences ``dF`` [Walker2011]_. When the residual grows more than
    ``_ANDERSON_SAFEGUARD`` times over the last accepted one, the memory is
    cleared and the plain step ``g_k`` is taken.

    The differences sit in preallocated rows, the newest overwriting the
    oldest. Their Gram matrix and the products ``dF f_k`` of the fit are
    updated one row per step: the new row ``dF_j = f_k - f_{k-1}`` gives
    ``dF_i . f_k = dF_i . f_{k-1} + dF_i . dF_j``, so a step costs two passes
    over the ``memory x size`` rows (the Gram row and ``dG gamma``) instead of
    three. Each product gathers at most ``memory`` updates before its row is
    overwritten, so its rounding stays that of a few dot products.
    """

    def __init__(self, memory, size):
        self.dG = np.empty((memory, size))
        self.dF = np.empty((memory, size))
        self.gram = np.empty((memory, memory))
        self.fit = np.empty(memory)  # dF f of the last step, row by row
        self.reset()

    def reset(self):
        self.previous = None  # (g, f) of the last step
        self.count = 0  # rows of dG, dF in use
        self.slot = 0  # row the next difference overwrites
        self.accepted_norm = np.inf

    def next(self, x, g):
        f = g - x
        norm = float(np.sqrt(f @ f))
        if norm > _ANDERSON_SAFEGUARD * self.accepted_norm:
            self.reset()
            self.accepted_norm = norm
            return g
        self.accepted_norm = norm
        if self.previous is None:
            self.previous = (g, f)
            return g
        g_old, f_old = self.previous
        self.previous = (g, f)
        j = self.slot
        np.subtract(g, g_old, out=self.dG[j])
        np.subtract(f, f_old, out=self.dF[j])
        k = self.count = min(self.count + 1, len(self.dF))
        self.slot = (j + 1) % len(self.dF)
        row = self.dF[:k] @ self.dF[j]
        self.gram[j, :k] = row
        self.gram[:k, j] = row
        # The other rows were in use at the last step, against f_old.
        self.fit[:k] += row
        self.fit[j] = self.dF[j] @ f
        gram = self.gram[:k, :k].copy()
        gram.flat[:: k + 1] += 1e-10 * np.trace(gram) + 1e-300
        # Cholesky through LAPACK directly: the regularised Gram matrix is positive
        # definite, and numpy's solve wrapper costs more than the solve at these sizes.
        _, gamma, info = lapack.dposv(gram, self.fit[:k])
        if info != 0:
            gamma = np.linalg.solve(gram, self.fit[:k])
        return g - gamma @ self.dG[:k]


def solve_fantope_admm(S, constraints, d, tol, max_iter, state=None):
    """Solve ``max <S, P> - sum_f h_f(A_f(P))`` over the Fantope by ADMM, to a relative gap ``tol``.

    Every certificate is logged at DEBUG level on this module's logger, and at
    INFO level at most every ``_PROGRESS_SECONDS`` (progress of long fits).

    Parameters
    ----------
    S : ndarray of shape (q, q)
        Symmetric objective matrix.
    constraints : list of ConstraintFamily
        The families of constraints (:mod:`fairpca._fantope_constraints`);
        those not ``active`` are only reported.
    d : int
        Trace of ``P``, ``1 <= d <= q``.
    tol : float
        Relative duality gap at which to stop.
    max_iter : int
        Iteration limit.
    state : _ADMMState, optional
        Iterates to resume from (default: :func:`_first_iterates`).

    Returns
    -------
    FantopeADMMResult
        Its ``P`` is feasible for every hard family. (For the mean
        constraints: when the directions orthogonal to the ``g_j`` number at
        least ``d``, PCA on them, the restoration point, is the first
        certified point, so there always is one.)

    Raises
    ------
    ValueError
        If a hard family is certified infeasible (the message starts with
        "infeasible").
    NoFeasiblePointError
        If no iterate could be made feasible within ``max_iter`` iterations
        (the constraints then may or may not be feasible).
    """
    small = S.shape[0] < _THREADED_FROM
    with one_blas_thread() if small else contextlib.nullcontext():
        return _admm(S, constraints, d, tol, max_iter, state)


def _admm(S, constraints, d, tol, max_iter, state):
    """The loop of :func:`solve_fantope_admm` (same parameters and result)."""
    q = S.shape[0]
    splits = [family for family in constraints if family.active]
    hard = [family for family in splits if family.hard]

    def finish(W, core, objective, upper, n_iter, converged, ys=None, state=None):
        multipliers = [None] * len(constraints)
        if ys is not None:
            where = [i for i, family in enumerate(constraints) if family.active]
            for i, y in zip(where, ys, strict=True):
                multipliers[i] = y
        return FantopeADMMResult(
            _sym((W @ core) @ W.T),
            objective,
            upper,
            max(upper - objective, 0.0),
            [family.value(W, core) for family in constraints],
            n_iter,
            converged,
            multipliers,
            state,
        )

    if not splits:
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

    best = None  # (objective, W, core) of the best feasible point
    for family in hard:
        family.prepare(S, d)
    for family in hard:
        point = family.first_point()
        if point is not None and all(
            other.satisfied(*point) for other in hard if other is not family
        ):
            # Feasible from the start: the gap is certified against it from the first check.
            best = (_objective(S, splits, *point), *point)
            break

    normal = _NormalEquations(splits, q)
    parts, rho = _first_iterates(S, splits, d, state)
    layout = _Layout([part.shape for part in parts], [len(family.shapes()) for family in splits])
    t = layout.pack(parts)
    ranks = {"fantope": 2 * d + 2, "low": None, "hints": [None] * len(splits)}
    fits = 2 * _ANDERSON_MEMORY * t.nbytes <= _ANDERSON_MAX_BYTES
    anderson = _Anderson(_ANDERSON_MEMORY, t.size) if fits else None
    progress = _Progress()
    upper = np.inf
    converged = False
    previous = None  # iterates of the last iteration, for the dual residual
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        check = n_iter % _CHECK_EVERY == 0 or n_iter == max_iter
        it = _decode(layout, t, splits, rho, d, ranks, factors=check)
        if check:
            # Certificate: a feasible point's objective against the Lagrangian bound.
            point = _feasible_point(hard, it.Xw, it.Xv)
            if point is not None:
                objective = _objective(S, splits, *point)
                if best is None or objective > best[0]:
                    best = (objective, *point)
            ys = [family.multiplier(V, rho) for family, V in zip(splits, it.V, strict=True)]
            bound = 0.0
            for family, y, aux in zip(splits, ys, it.aux, strict=True):
                if family.certified_infeasible(y, d):
                    raise ValueError(family.infeasible_message(d))
                bound += family.support(y, aux, rho)
            upper = min(upper, _top_sum(_sym(S - _adjoint(splits, ys)), d) + bound)
            if best is not None:
                scale = max(abs(best[0]), abs(upper), np.finfo(float).tiny)
                gap = upper - best[0]
                converged = gap <= tol * scale
                progress.report(n_iter, best[0], upper, gap / scale, rho, converged)
                if converged:
                    break
        parts, P, AP = _p_step(it, S, rho, normal, splits)
        if check and previous is not None:
            factor = _rho_factor(it, previous, P, AP, splits)
            if factor != 1.0:
                rho *= factor
                it.scale_duals(factor, splits)
                parts, *_ = _p_step(it, S, rho, normal, splits)
                if anderson is not None:
                    anderson.reset()
        t_next = layout.pack(parts)
        t = t_next if anderson is None else anderson.next(t, t_next)
        previous = it
    if best is None:
        raise NoFeasiblePointError(
            f"the ADMM found no point meeting "
            f"{' and '.join(family.description for family in hard)} in {n_iter} iterations"
            + "".join(family.no_point_reason(d) for family in hard)
        )
    objective, Wf, core = best
    ys = [family.multiplier(V, rho) for family, V in zip(splits, it.V, strict=True)]
    state = _ADMMState(it.X, it.Z, it.U, it.V, rho)
    return finish(Wf, core, objective, upper, n_iter, converged, ys, state)


def _feasible_point(hard, W, values):
    """A point ``(W', core)`` meeting every hard family near ``X = W diag(values) W^T``, or None.

    Each family in turn moves the point onto its set (:meth:`make_feasible`);
    with several, the earlier ones are checked again at the end.
    """
    if not hard:
        return W, np.diag(values)
    point = None
    for i, family in enumerate(hard):
        if i:
            inner_values, inner = eigh(point[1])
            W, values = point[0] @ inner, inner_values
        point = family.make_feasible(W, values)
        if point is None:
            return None
    if not all(family.satisfied(*point) for family in hard[:-1]):
        return None
    return point


def _objective(S, families, W, core):
    """The SDP objective ``<S, P> - sum_f h_f(A_f(P))`` at a feasible ``P = W core W^T``."""
    objective = float(np.sum((W.T @ S @ W) * core))
    for family in families:
        if not family.hard:
            objective -= family.penalty(W, core)
    return objective


def _first_iterates(S, families, d, state):
    """The first ``t = (X + U, Z_f + V_f)`` and ``rho``: from ``state`` or a warm start.

    The warm start is PCA, the top-``d`` eigenprojector of ``S``, with every
    multiplier zero and ``Z_f`` the family's prox of ``A_f(X)``. (Starting
    from the restoration point instead, which meets the mean constraints, took
    more iterations on most problems of ``benchmarks/convex_admm.py --suite``:
    3100 against 1910 at p = 300; it serves as the first certified point
    instead.)
    """
    if state is not None:
        parts = [state.X + state.U] + [
            z + v for Z, V in zip(state.Z, state.V, strict=True) for z, v in zip(Z, V, strict=True)
        ]
        return parts, state.rho
    _, vectors = top_eigh(S, d)
    X = vectors @ vectors.T
    parts = [X] + [block for family in families for block in family.first_blocks(X)]
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


def _rho_factor(it, previous, P, AP, families):
    """Factor by which residual balancing changes ``rho`` (1 when the residuals are balanced).

    The primal residual is ``t_next - t`` (``P - X``, ``A_f(P) - Z_f``), the
    dual one the change of the projected blocks since the last iteration
    mapped through the constraints, each relative to its scale.
    """
    primal = [np.linalg.norm(P - it.X)] + [
        np.linalg.norm(a - z)
        for A, Z in zip(AP, it.Z, strict=True)
        for a, z in zip(A, Z, strict=True)
    ]
    changes = [
        [z - zo for z, zo in zip(Z, Zo, strict=True)]
        for Z, Zo in zip(it.Z, previous.Z, strict=True)
    ]
    dual_change = it.X - previous.X + _adjoint(families, changes)
    scaled_dual = it.U + _adjoint(families, it.V)
    r_primal = np.linalg.norm(primal) / max(np.linalg.norm(P), np.linalg.norm(it.X), 1e-300)
    r_dual = np.linalg.norm(dual_change) / max(np.linalg.norm(scaled_dual), 1e-300)
    if r_primal > 0 and r_dual > 0:
        ratio = np.sqrt(r_primal / r_dual)
        if ratio > _RHO_IMBALANCE or ratio < 1 / _RHO_IMBALANCE:
            return float(np.clip(ratio, 1e-2, 1e2))
    return 1.0
