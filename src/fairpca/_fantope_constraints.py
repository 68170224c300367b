r"""Constraint families of the Fantope ADMM (:mod:`fairpca._fantope_admm`).

The ADMM solves

.. math::

    \max_{P \in \mathcal F_d}\ \langle S, P\rangle - \sum_f h_f(A_f(P)),

with :math:`\mathcal F_d` the Fantope, :math:`A_f` a linear map per family of
constraints and :math:`h_f` either a penalty (finite everywhere) or the
indicator of a closed convex set :math:`K_f` (a "hard" constraint
:math:`A_f(P) \in K_f`). It splits ``A_f(P) = Z_f`` and needs of each family
only what :class:`ConstraintFamily` lists: the map and its adjoint, the
proximal map of :math:`h_f` (the projection onto :math:`K_f` for a hard
family), the conjugate of :math:`h_f` for the certified upper bound, the
restriction of the map to a subspace ``P = B P' B^T`` (the growing-subspace
solves of :mod:`fairpca._fantope_subspaces`), and, for a hard family, a way
to make a Fantope point feasible (the certificate needs a feasible point).

Two families make up the FPCA SDP of :class:`fairpca.ConvexFairPCA`:

- :class:`MeanConstraints`: ``g_j^T P g_j <= limits_j`` (the projected mean
  differences within ``delta``), a hard family of linear functionals;
- :class:`CovarianceLMIs`: ``mu ||F_k P||_2^2 = mu lambda_max(P G_k P)``, the
  covariance LMIs written as a penalty on the blocks ``F_k P``.

A new family is a subclass of :class:`ConstraintFamily` passed to
:func:`fairpca._fantope_admm.solve_fantope_admm` in the list of constraints;
the ADMM's loop does not change.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.linalg import eigvalsh

from fairpca._fantope_feasible import certified_infeasible, feasible_point, restoration_point
from fairpca._fantope_prox import _gram, _sym, _top_sum, squared_spectral_prox

__all__ = ["ConstraintFamily", "CovarianceLMIs", "MeanConstraints"]

#: Fewest columns at which a mostly-zero LMI factor is kept sparse (below, the
#: dense product is faster than scipy.sparse's per-call overhead).
_SPARSE_FROM = 64
#: Largest ``J x J x q`` array of the mean constraints' coupling formed in one product
#: (beyond, row by row).
_COUPLING_AT_ONCE = 2**22
#: Longest row ``c g`` of a scaled mean constraint (see :meth:`MeanConstraints.scaled`).
_ROW_NORM_CAP = 3.0
#: Arrays of the size of the LMI factors the ADMM holds at once: the factors, the
#: blocks ``Z_k`` and ``V_k``, their part of ``t`` and the products ``F_k P`` formed
#: in an iteration (counted generously: a refusal must come before the allocation).
_ADMM_COPIES = 8

_INFEASIBLE = (
    "infeasible: no P in the Fantope of trace {d} keeps every pairwise mean difference within delta"
)


class ConstraintFamily:
    r"""One family of constraints of the Fantope ADMM: ``h(A(P))`` for a linear map ``A``.

    The value ``A(P)`` is a list of arrays (the family's *blocks*); a
    multiplier ``y`` has the same shapes. A subclass defines the methods below;
    those with a default need overriding only where the default does not fit.

    Attributes
    ----------
    kind : {"multiplier", "functional"}
        How the map enters the ADMM's ``P``-step (the normal equations
        ``sym(M P) + A^T A (P) = R``): ``"multiplier"`` for ``A(P) = (F_k P)_k``,
        whose ``A^T A (P) = sym(sum_k F_k^T F_k P)`` joins ``M``
        (:meth:`grams`); ``"functional"`` for a few linear functionals
        ``A(P) = (<C_j, P>)_j``, a low-rank correction (:meth:`coupling`).
    hard : bool
        Whether ``h`` is the indicator of a set (the certified points must
        meet the constraint) rather than a finite penalty.
    active : bool
        Whether the ADMM splits the family off at all (a penalty of weight 0
        is not split, but its :meth:`value` is still reported).
    description : str
        What the constraints ask, for messages.
    """

    kind = "functional"
    hard = True
    active = True
    description = "the constraints"
    #: The family this one was restricted from (None for an unrestricted one).
    parent = None

    # -- the linear map ----------------------------------------------------------

    def shapes(self):
        """The shapes of the blocks of ``A(P)``."""
        raise NotImplementedError

    def apply(self, P):
        """``A(P)``: the list of blocks at the symmetric ``P``."""
        raise NotImplementedError

    def adjoint(self, y):
        """``A^T(y)``: the symmetric ``q x q`` matrix with ``<A(P), y> = <P, A^T(y)>``."""
        raise NotImplementedError

    def restrict(self, B):
        """The family on ``P'`` with ``P = B P' B^T`` (orthonormal ``B``): ``A(B P' B^T)``."""
        raise NotImplementedError

    def lifted_adjoint(self, y):
        """For a restricted family: ``A_full^T`` of the full multiplier its ``y`` stands for.

        The restricted problem's multipliers give the full problem's Lagrangian
        bound (:mod:`fairpca._fantope_subspaces`). The default: ``y`` is the
        full multiplier too (``A_full^T(y)`` by the family restricted from).
        """
        return self.parent.adjoint(y)

    # -- the P-step --------------------------------------------------------------

    def grams(self):
        """``F_k^T F_k`` of a ``"multiplier"`` family, one dense ``q x q`` array each."""
        raise NotImplementedError

    def coupling(self, inverse, other=None):
        """``<A_i, inverse * A_j>`` for the functionals ``A_i`` here and ``A_j`` of ``other``.

        For a ``"functional"`` family (one block: the vector of its ``J``
        functionals), ``A_i = A^T(e_i)``; ``inverse`` is the symmetric
        elementwise inverse of the ``P``-step's diagonal. The default forms
        each ``A^T(e_i)``; a family with structure may override it.
        """
        other = self if other is None else other
        (n_rows,) = self.shapes()[0]
        rows = []
        for i in range(n_rows):
            unit = np.zeros(n_rows)
            unit[i] = 1.0
            rows.append(other.apply(inverse * self.adjoint([unit]))[0])
        return np.array(rows)

    # -- the splitting -----------------------------------------------------------

    def first_blocks(self, X):
        """The blocks of the warm start at the Fantope point ``X``: ``prox(A(X))``."""
        return self.prox(self.apply(X), 1.0, None)[0]

    def prox(self, blocks, rho, hint):
        """The ADMM's ``Z``-step: the proximal map of ``h / rho`` at ``blocks``.

        For a hard family, the projection onto its set. ``hint`` is what the
        previous call returned (None at first), for warm starts.

        Returns
        -------
        Z : list of ndarray
            The projected blocks.
        aux : object
            Passed to :meth:`support` and :meth:`scale_aux` (e.g. norms
            computed on the way).
        hint : object
        """
        raise NotImplementedError

    def scale_aux(self, aux, factor):
        """``aux`` of :meth:`prox` after the scaled duals were divided by ``factor``."""
        return aux

    def multiplier(self, V, rho):
        """The dual variable ``y`` from the scaled one ``V``, where ``h``'s conjugate is finite."""
        return [rho * v for v in V]

    def support(self, y, aux=None, rho=None):
        """``h^*(y)``: the conjugate of ``h`` (for a set, its support function) at ``y``.

        The certified upper bound is
        ``sum_{i<=d} lambda_i(S - sum_f A_f^T(y_f)) + sum_f h_f^*(y_f)``.
        ``aux`` and ``rho`` (from the :meth:`prox` that gave ``y``) may save work.
        """
        raise NotImplementedError

    def certified_infeasible(self, y, d):
        """Whether ``y`` proves that no Fantope point meets a hard family (default: never)."""
        return False

    def infeasible_message(self, d):
        """The message of the ``ValueError`` raised when :meth:`certified_infeasible` holds."""
        return f"infeasible: no P in the Fantope of trace {d} meets {self.description}"

    # -- points ------------------------------------------------------------------

    def penalty(self, W, core):
        """``h(A(P))`` at ``P = W core W^T`` for a penalty family (0 for a hard one)."""
        return 0.0

    def value(self, W, core):
        """What the family reports at the solution ``P = W core W^T`` (default: ``A(P)``)."""
        return self.apply(_sym((W @ core) @ W.T))

    def prepare(self, S, d):
        """Set up the feasibility machinery of a hard family for a solve (default: none).

        Raises ``ValueError`` (message starting "infeasible") when the family
        is certified infeasible over the Fantope.
        """

    def first_point(self):
        """A feasible point ``(W, core)`` known before the iterations, or None."""
        return None

    def restoration_directions(self, S, d):
        """Directions that keep a restricted problem feasible (default: none)."""
        return None

    def make_feasible(self, W, values):
        """A point ``(W', core)`` meeting the family near ``X = W diag(values) W^T``, or None."""
        raise NotImplementedError

    def satisfied(self, W, core):
        """Whether ``P = W core W^T`` meets the family (to its rounding tolerance)."""
        return True

    def no_point_reason(self, d):
        """Why the ADMM may find no feasible point (appended to its error)."""
        return ""

    # -- size --------------------------------------------------------------------

    @classmethod
    def memory_needs(cls, n_features, n_pairs):
        """``(what, bytes)`` of the arrays the family takes, counted before building it."""
        return []


# ---------------------------------------------------------------------------
# the covariance LMIs
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


class CovarianceLMIs(ConstraintFamily):
    r"""The covariance LMIs as the penalty ``mu sum_k ||F_k P||_2^2``.

    ``||F_k P||_2^2 = lambda_max(P G_k P)`` with ``G_k = F_k^T F_k``: the
    smallest ``t`` of the LMI ``[[t I, (F_k P)^T], [F_k P, I]] >= 0``. The map
    is ``A(P) = (F_k P)_k``, its adjoint ``sym(sum_k F_k^T Y_k)``; the
    proximal map of ``mu ||.||_2^2 / rho`` clips the top singular values of a
    block to a common level; its conjugate is ``||Y||_*^2 / (4 mu)``.

    Parameters
    ----------
    factors : list of list of (sparse matrix, ndarray or None)
        ``[F+, F-]`` of each pair of groups (``None``: that LMI holds with
        ``t = 0``); empty without covariance constraints.
    mu : float
        Weight of the penalty; with 0 the ADMM does not split the family off
        (``active`` is False) and only reports its values.
    """

    kind = "multiplier"
    hard = False
    description = "the covariance LMIs"

    def __init__(self, factors, mu):
        self.factors = factors
        self.mu = mu
        #: ``(pair, sign)`` of each non-None factor, and the factors as _Factor.
        self.slots = [
            (a, b) for a, pair in enumerate(factors) for b, F in enumerate(pair) if F is not None
        ]
        self.operators = [_Factor(factors[a][b]) for a, b in self.slots]
        self.active = mu > 0 and bool(self.operators)

    def shapes(self):
        return [(F.shape[0], F.shape[1]) for F in self.operators]

    def apply(self, P):
        return [np.asarray(F @ P) for F in self.operators]

    def adjoint(self, y):
        return _sym(sum(F.adjoint(B) for F, B in zip(self.operators, y, strict=True)))

    def restrict(self, B):
        """``F_k B = Q_k R_k``: ``||F_k B P' B^T||_2 = ||R_k P'||_2``, square factors ``R_k``."""
        if not self.active:
            return _RestrictedLMIs([], self.mu, [], B, self)
        Qs, Rs = [], []
        for F in self.operators:
            Qk, Rk = np.linalg.qr(np.asarray(F @ B))
            Qs.append(Qk)
            Rs.append(Rk)
        return _RestrictedLMIs([[Rk] for Rk in Rs], self.mu, Qs, B, self)

    def grams(self):
        return [F.gram() for F in self.operators]

    def first_blocks(self, X):
        return [np.asarray(F @ X) for F in self.operators]

    def prox(self, blocks, rho, hint):
        """``prox_{(mu / rho) ||.||_2^2}`` of each block; ``aux``: ``||V_k||_*`` of the rest."""
        weight = self.mu / rho
        ranks = [4] * len(blocks) if hint is None else hint
        Z, removed = [], []
        for i, block in enumerate(blocks):
            z, ranks[i], amount = squared_spectral_prox(block, weight, ranks[i] + 2)
            Z.append(z)
            removed.append(amount)
        return Z, removed, ranks

    def scale_aux(self, aux, factor):
        return [value / factor for value in aux]

    def support(self, y, aux=None, rho=None):
        """``sum_k ||y_k||_*^2 / (4 mu)``; from ``||V_k||_*`` (``aux``) when given."""
        if aux is not None:
            return sum((rho * value) ** 2 for value in aux) / (4 * self.mu)
        return sum(_nuclear_norm(yk) ** 2 for yk in y) / (4 * self.mu)

    def penalty(self, W, core):
        return self.mu * _penalties(self.operators, W, core).sum()

    def value(self, W, core):
        """``||F P||_2^2 = lambda_max(P G P)`` of each pair's two LMIs, shape ``(n_pairs, 2)``."""
        bounds = np.zeros((len(self.factors), 2))
        for (a, b), value in zip(self.slots, _penalties(self.operators, W, core), strict=True):
            bounds[a, b] = value
        return bounds

    @staticmethod
    def block_sizes(q, factors):
        """Sizes of the LMI blocks in ``q`` coordinates: ``q`` plus each factor's rows."""
        return [q + F.shape[0] for pair in factors for F in pair if F is not None]

    @classmethod
    def memory_needs(cls, n_features, n_pairs):
        """The group covariances are the caller's; the pairs' differences, factors and iterates."""
        p = int(n_features)
        return [
            ("pairwise covariance differences", 8 * n_pairs * p * p),
            (
                "covariance LMI blocks and their solver iterates",
                8 * _ADMM_COPIES * 2 * n_pairs * p * p,
            ),
        ]


class _RestrictedLMIs(CovarianceLMIs):
    """:class:`CovarianceLMIs` on ``P = B P' B^T``: factors ``R_k`` of ``F_k B = Q_k R_k``.

    Its multiplier ``y'_k`` of ``R_k P' = Z'_k`` is the full ``y_k = Q_k y'_k B^T``
    (same nuclear norm), so ``sym(sum_k F_k^T y_k) = sym(T B^T)`` with
    ``T = sum_k (F_k^T Q_k) y'_k``.
    """

    def __init__(self, factors, mu, Qs, B, parent):
        super().__init__(factors, mu)
        self.Qs, self.B, self.parent = Qs, B, parent

    def lifted_adjoint(self, y):
        T = sum(
            F.adjoint(Qk) @ yk for F, Qk, yk in zip(self.parent.operators, self.Qs, y, strict=True)
        )
        return _sym(T @ self.B.T)


# ---------------------------------------------------------------------------
# the mean constraints
# ---------------------------------------------------------------------------


class MeanConstraints(ConstraintFamily):
    r"""``g_j^T P g_j <= limits_j``: the projected mean differences within ``delta``.

    The map is ``A(P) = (<g_j g_j^T, P>)_j`` (one block, a vector), its adjoint
    ``sum_j y_j g_j g_j^T``; the set is the box ``w <= limits`` (projection:
    ``min(w, limits)``; support function ``y @ limits`` for ``y >= 0``). A
    limit of 0 makes it the equality ``g_j^T P g_j = 0`` on the Fantope
    (``P >= 0``). Feasible points come from :mod:`fairpca._fantope_feasible`.

    Parameters
    ----------
    vectors : ndarray of shape (J, q)
        The ``g_j``.
    limits : ndarray of shape (J,)
    """

    kind = "functional"
    hard = True
    description = "the mean constraints"

    def __init__(self, vectors, limits):
        self.vectors = vectors
        self.limits = limits
        self.restore = None

    @classmethod
    def scaled(cls, mean_vectors, delta):
        """The constraints ``g^T P g <= delta^2`` as ``(c g)^T P (c g) <= (c delta)^2``, or None.

        On the Fantope ``g^T P g <= ||g||^2``, so those with ``delta >= ||g||``
        never bind and are dropped (None when none is left). The scale is
        ``c = min(1 / delta, _ROW_NORM_CAP / ||g||)``: a unit limit, unless the
        row would then be longer than ``_ROW_NORM_CAP``. Unit limits converged
        in fewer ADMM iterations than unit rows (``benchmarks/convex_admm.py``
        data, p = 60 and 100); but the rows are the ADMM's coefficients of
        ``P`` in the splitting ``g^T P g = w``, and with long ones that block
        dwarfs the others: on COMPAS's 17 numeric columns (standardised, six
        groups; ``||g|| / delta`` from 3 to 27) unit limits left a certified
        gap of 0.2 after 10,000 iterations, rows capped at 2-4 converged in
        1,400-1,600.
        """
        if mean_vectors is None or not len(mean_vectors):
            return None
        norms = np.linalg.norm(mean_vectors, axis=1)
        keep = norms > delta
        if not keep.any():
            return None
        scale = np.minimum(1.0 / delta, _ROW_NORM_CAP / norms[keep])
        return cls(mean_vectors[keep] * scale[:, None], (scale * delta) ** 2)

    def shapes(self):
        return [(len(self.vectors),)]

    def apply(self, P):
        G = self.vectors
        # Two plain products: einsum's three-operand path costs more on these sizes.
        return [np.sum((G @ P) * G, axis=1)]

    def adjoint(self, y):
        return (self.vectors.T * y[0]) @ self.vectors

    def restrict(self, B):
        restricted = MeanConstraints(self.vectors @ B, self.limits)
        restricted.parent = self
        return restricted

    def coupling(self, inverse, other=None):
        """``(g_i * g_j)^T inverse (g_i * g_j)``: ``<g_i g_i^T, inverse * g_j g_j^T>``."""
        if other is not None and other is not self:
            return super().coupling(inverse, other)
        g = self.vectors
        J, q = g.shape
        if J * J * q <= _COUPLING_AT_ONCE:
            products = g[:, None, :] * g[None, :, :]  # (J, J, q): g_i * g_j
            return np.einsum("ija,ab,ijb->ij", products, inverse, products)
        # Row by row: J x q at a time instead of J x J x q (many groups).
        coupling = np.empty((J, J))
        for i in range(J):
            products = g * g[i]
            coupling[i] = np.sum((products @ inverse) * products, axis=1)
        return coupling

    def first_blocks(self, X):
        return [np.minimum(self.apply(X)[0], self.limits)]

    def prox(self, blocks, rho, hint):
        return [np.minimum(blocks[0], self.limits)], None, None

    def multiplier(self, V, rho):
        return [np.clip(rho * V[0], 0.0, None)]

    def support(self, y, aux=None, rho=None):
        return y[0] @ self.limits

    def certified_infeasible(self, y, d):
        return certified_infeasible(self.vectors, y[0], d, self.limits)

    def infeasible_message(self, d):
        return _INFEASIBLE.format(d=d)

    def prepare(self, S, d):
        if certified_infeasible(self.vectors, np.ones(len(self.vectors)), d, self.limits):
            raise ValueError(_INFEASIBLE.format(d=d))
        self.restore = restoration_point(S, self.vectors, d)

    def first_point(self):
        if np.all(self.restore[2] <= self.limits):
            return self.restore[:2]
        return None

    def restoration_directions(self, S, d):
        return restoration_point(S, self.vectors, d)[0]

    def make_feasible(self, W, values):
        return feasible_point(W, values, self.restore, self.vectors, self.limits)

    def satisfied(self, W, core):
        gW = self.vectors @ W
        products = np.einsum("ja,ab,jb->j", gW, core, gW)
        return bool(np.all(products <= self.limits * (1 + 1e-9) + 1e-12 * self.limits))

    def no_point_reason(self, d):
        return (
            f", and fewer than d={d} directions are orthogonal to every mean difference: the "
            "constraints may be infeasible"
        )

    @classmethod
    def memory_needs(cls, n_features, n_pairs):
        """The ``n_pairs x n_pairs`` system of the ADMM's normal equations and its rows."""
        return [("mean constraints' normal equations", 8 * n_pairs * (n_pairs + 2 * n_features))]
