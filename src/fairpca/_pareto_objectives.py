r"""The objectives of :class:`fairpca.ParetoFairPCA`: penalties, objective vectors, rules.

From M. M. Kamani, F. Haddadpour, R. Forsati and M. Mahdavi, *Efficient Fair
Principal Component Analysis*, arXiv:1911.04931: the penalties ``psi``, the
objective vectors of eqs. (9) and (12) with the regulariser of eq. (19) and
Appendix C's regularisation weight (:class:`_Objectives`,
:func:`_objective_vectors`, :func:`_auto_alpha`), the start search's sum of
penalties (:class:`_PenaltySum`), the groups' weights and appended per-group
losses, and the worse-off rule (:func:`_worse_off_limits`). The estimator is in
:mod:`fairpca.pareto`, the descent in :mod:`fairpca._pareto_descent`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

import numpy as np

#: A projected gradient below this fraction of its largest possible size is rounding noise.
_GRAD_RTOL = 1e-10
#: Disparities (or differences of scatter matrices) below this fraction of the total
#: sum of squares are rounding noise: the groups are treated as equally served.
_FAIR_RTOL = 1e-12


def _psi(kind, z):
    """Value and derivative of the penalty ``psi`` at ``z`` (same shape).

    ``"linear"`` (the identity) is used for the total loss.
    """
    if kind == "linear":
        return z, np.ones_like(z)
    if kind == "square":
        return 0.5 * z * z, z
    if kind == "abs":
        return np.abs(z), np.sign(z)
    if kind == "exp":
        return np.cosh(z) - 1.0, np.sinh(z)
    raise ValueError(f"unknown penalty {kind!r}")  # pragma: no cover - internal


@dataclass(frozen=True)
class _Objectives:
    """A vector of objectives ``f_o(U) = psi_o(z_o(U)) + alpha * d`` on St(p, d).

    Every objective of the paper is a penalty of an affine function of the
    projector ``U U^T``: with ``t_a(U) = tr(U^T S_a U)`` (``S_a`` group ``a``'s
    scatter matrix around the pooled mean, divided by the total sum of squares),
    ``z_o(U) = (offset_o - coef_o . t(U)) / scale_o``.

    Parameters
    ----------
    scatters : ndarray of shape (k, p, p)
        Normalised group scatter matrices ``S_a``.
    coef : ndarray of shape (m, k)
        Weight of each group's ``t_a`` in each objective.
    offset : ndarray of shape (m,)
        Constant part of each objective.
    scale : ndarray of shape (m,)
        Positive divisor of each objective's argument.
    psi : tuple of str
        Penalty of each objective (``"linear"``, ``"square"``, ``"abs"``, ``"exp"``).
    alpha_d : float
        ``alpha * ||U||_F^2 = alpha * d``, the regulariser of eq. (19) on St(p, d).
    names : tuple of str
        Name of each objective.
    family : tuple of int
        Objectives of one family (the loss; the disparities) share one
        gradient normalisation.
    """

    scatters: np.ndarray
    coef: np.ndarray
    offset: np.ndarray
    scale: np.ndarray
    psi: tuple
    alpha_d: float
    names: tuple
    family: tuple

    def arguments(self, U):
        """``z(U)`` and the products ``S_a U``, shapes (m,) and (k, p, d)."""
        W = self.scatters @ U
        t = np.einsum("pd,kpd->k", U, W)
        return (self.offset - self.coef @ t) / self.scale, W

    @cached_property
    def _kinds(self):
        """``(kind, indices)`` for each penalty in ``psi``: one ``_psi`` call per kind."""
        psi = np.array(self.psi)
        return tuple((kind, np.flatnonzero(psi == kind)) for kind in dict.fromkeys(self.psi))

    def _penalised(self, z):
        """Values ``psi_o(z_o)`` and slopes ``psi_o'(z_o)``, shapes (m,) and (m,)."""
        values, slopes = np.empty_like(z), np.empty_like(z)
        for kind, indices in self._kinds:
            values[indices], slopes[indices] = _psi(kind, z[indices])
        return values, slopes

    def penalties(self, z):
        """Penalised values ``psi_o(z_o)`` for arguments ``z``, shape (m,)."""
        return self._penalised(z)[0]

    def values(self, U):
        """Penalised values ``psi_o(z_o(U))`` at ``U``, shape (m,), without ``alpha * d``.

        The regulariser is the same constant in every objective; leaving it out
        of the comparisons of the line search keeps the iterates exactly
        independent of ``alpha``.
        """
        return self.penalties(self.arguments(U)[0])

    def evaluate(self, U, arguments=None):
        """Values, arguments ``z`` and Riemannian gradients at ``U``.

        Parameters
        ----------
        U : ndarray of shape (p, d)
        arguments : (ndarray, ndarray) or None
            :meth:`arguments` at ``U`` if already computed (the line search's
            accepted trial), so that the products ``S_a U`` are formed once.

        Returns
        -------
        values : ndarray of shape (m,)
            As :meth:`values`.
        z : ndarray of shape (m,)
        gradients : ndarray of shape (m, p, d)
            ``(I - U U^T) nabla f_o(U)``: the objectives depend on ``U U^T`` only,
            so ``U^T nabla f_o`` is symmetric and this is the tangent projection.
        """
        z, W = self.arguments(U) if arguments is None else arguments
        values, slopes = self._penalised(z)
        factor = -2.0 * slopes / self.scale
        G = np.einsum("ok,kpd->opd", self.coef * factor[:, None], W)
        G -= U @ (U.T @ G)
        return values, z, G

    def gradient_floors(self, z, d):
        """Size below which each gradient norm is rounding noise, shape (m,).

        ``|(I - UU^T) A_o U|_F <= |A_o|_F sqrt(d)`` with
        ``A_o = sum_a coef[o, a] S_a``; a gradient below ``_GRAD_RTOL`` times its
        largest possible size is treated as zero.
        """
        slopes = self._penalised(z)[1]
        sizes = np.linalg.norm(np.einsum("ok,kpq->opq", self.coef, self.scatters), axis=(1, 2))
        return _GRAD_RTOL * np.abs(2.0 * slopes / self.scale) * sizes * np.sqrt(d)


@dataclass(frozen=True)
class _PenaltySum:
    r"""The single objective :math:`\sum_o \psi_o(z_o(U))` of an :class:`_Objectives`.

    The start search's objective: with the pairwise disparities and
    :math:`\psi(z) = z^2/2` it is :math:`\tfrac12 \sum_{a<b} \Delta_{ab}^2 / c^2
    = \tfrac{k}{2c^2} \sum_a (\mathcal{E}_a - \bar{\mathcal{E}})^2`, ``k`` times
    the spread of the groups' disparity errors, which is zero exactly at the
    fair subspaces of Definition 3. It offers the interface
    :func:`fairpca._pareto_descent._pareto_descent` uses; ``arguments`` still
    returns every ``z_o``, so that the descent's ``target`` applies to each
    pair.

    Parameters
    ----------
    terms : _Objectives
        The summed objectives.
    """

    terms: _Objectives

    @property
    def alpha_d(self):
        """The regulariser's constant ``alpha * d``, counted once."""
        return self.terms.alpha_d

    @property
    def family(self):
        """One objective, so one gradient normalisation."""
        return (1,)

    @property
    def names(self):
        """The objective's name."""
        return ("sum of " + ", ".join(self.terms.names),)

    def arguments(self, U):
        """Every term's ``z`` and the products ``S_a U``, as :meth:`_Objectives.arguments`."""
        return self.terms.arguments(U)

    def penalties(self, z):
        """The sum of the terms' penalties, shape (1,)."""
        return np.array([np.sum(self.terms.penalties(z))])

    def values(self, U):
        """The sum at ``U``, shape (1,), without ``alpha * d``."""
        return self.penalties(self.arguments(U)[0])

    def evaluate(self, U, arguments=None):
        """Value, the terms' ``z`` and the Riemannian gradient, shapes (1,), (m,), (1, p, d)."""
        values, z, G = self.terms.evaluate(U, arguments)
        return np.array([np.sum(values)]), z, G.sum(axis=0, keepdims=True)

    def gradient_floors(self, z, d):
        """The sum of the terms' rounding floors, shape (1,)."""
        return np.array([np.sum(self.terms.gradient_floors(z, d))])


def _auto_alpha(spectra):
    """Appendix C's regularisation weight ``max_{a != b} gamma_max(S_a) - gamma_min(S_b)``.

    It bounds ``lambda_max(S_a - S_b)`` (Weyl), so every
    ``Delta_ab(U) + alpha |U|_F^2`` is convex on ``R^{p x d}`` (the Hessian of
    ``Delta_ab`` is ``-2 (S_a - S_b)``). At least 0.

    Parameters
    ----------
    spectra : ndarray of shape (k, p)
        Ascending eigenvalues of each group's scatter matrix.
    """
    k = len(spectra)
    gaps = [spectra[a, -1] - spectra[b, 0] for a in range(k) for b in range(k) if a != b]
    return max(0.0, float(max(gaps)))


def _worse_off_limits(pca_losses, factor, floor, allowance=0.0):
    r"""Largest per-row loss of each group that does not leave it worse off, shape (k,).

    ``factor * max(l_a, floor * mean_b l_b) + allowance``, with ``l_a`` group
    ``a``'s per-row marginal loss under PCA: the reference of a group is its PCA
    loss, but at least ``floor`` times the groups' mean PCA loss, so that a group
    PCA serves almost perfectly (``l_a`` near 0) is judged on a small common scale
    rather than on a near-zero one. The rule of both the ``UserWarning`` and the
    per-row start search's stop.

    Parameters
    ----------
    pca_losses : ndarray of shape (k,)
        Per-row marginal losses under PCA (each >= 0 up to rounding).
    factor : float
        ``_WORSE_OFF_FACTOR`` (``1.0`` gives the references themselves).
    floor : float
        ``_WORSE_OFF_FLOOR``, a fraction of the mean PCA loss.
    allowance : float or ndarray of shape (k,), default=0.0
        Added to each limit (rounding of the losses).
    """
    pca_losses = np.asarray(pca_losses, dtype=np.float64)
    reference = np.maximum(pca_losses, floor * float(np.mean(pca_losses)))
    return factor * reference + allowance


def _group_weights(counts, group_loss):
    """Weight of each group's disparity error in the objectives, shape (k,).

    ``"summed"``: 1, Kamani et al.'s sums over rows (eqs. (2)-(4)).
    ``"per_row"``: ``n / n_a`` (``n_a`` the group's row count or total sample
    weight, ``n`` their sum), so that ``E_a n / n_a`` is ``n`` times Samadi et
    al.'s per-row marginal loss: a group's weight no longer grows with its size.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if group_loss == "summed":
        return np.ones(len(counts))
    return counts.sum() / counts


def _with_group_losses(objectives, spectra, d, groups, labels):
    """``objectives`` with the loss of each selected group appended, each linear.

    Group ``a``'s objective is ``best_a - t_a(U)``, its per-row marginal loss
    times ``n_a / ||X||_F^2``; the appended objectives form a family of their
    own (one gradient normalisation). With them in the Pareto descent, no
    selected group's loss increases.

    Parameters
    ----------
    objectives : _Objectives
    spectra : ndarray of shape (k, p)
        Ascending eigenvalues of the normalised scatter matrices.
    d : int
    groups : ndarray of bool, shape (k,)
        The groups to append.
    labels : sequence
        Group labels, for the names.
    """
    chosen = np.flatnonzero(groups)
    if chosen.size == 0:
        return objectives
    k = len(groups)
    best = spectra[:, ::-1][:, :d].sum(axis=1)
    return _Objectives(
        objectives.scatters,
        np.vstack([objectives.coef, np.eye(k)[chosen]]),
        np.concatenate([objectives.offset, best[chosen]]),
        np.concatenate([objectives.scale, np.ones(chosen.size)]),
        objectives.psi + ("linear",) * chosen.size,
        objectives.alpha_d,
        objectives.names + tuple(f"loss[{labels[a]}]" for a in chosen),
        objectives.family + (2,) * chosen.size,
    )


def _objective_vectors(scatters, spectra, U, disparity, psi, alpha, labels, weights=None):
    """The objective vectors of the Pareto descent and of the start search, and the loss.

    Parameters
    ----------
    scatters : ndarray of shape (k, p, p)
        Group scatter matrices around the pooled mean, divided by the total
        sum of squares.
    spectra : ndarray of shape (k, p)
        Their ascending eigenvalues.
    U : ndarray of shape (p, d)
        PCA's basis (the top ``d`` eigenvectors of ``scatters.sum(0)``).
    disparity, psi : str
        As in :class:`ParetoFairPCA`.
    alpha : float
        Regularisation weight.
    labels : list of str
        Group names, for the objective names.
    weights : ndarray of shape (k,) or None
        Weight ``w_a`` of each group's disparity error (:func:`_group_weights`):
        the disparities are those of ``w_a E_a``; ``None`` means 1 (sums over rows).

    Returns
    -------
    vectors : (_Objectives, _PenaltySum, _Objectives) or None
        The objectives of eq. (19), the start search's sum of the pairwise
        penalties and the loss; ``None`` when PCA's disparities are all zero
        up to rounding.
    """
    k, d = scatters.shape[0], U.shape[1]
    weights = np.ones(k) if weights is None else np.asarray(weights, dtype=np.float64)
    # Each group's own best rank-d loss, via the sum of its top-d eigenvalues
    # (all of them when the group has fewer than d rows: its optimum is exact),
    # weighted as the disparity errors.
    best = weights * spectra[:, ::-1][:, :d].sum(axis=1)
    errors_pca = best - weights * np.einsum("pd,kpq,qd->k", U, scatters, U)
    eye = np.diag(weights)
    # Equal weighted scatter matrices give a constant disparity: leave such pairs out.
    pairs = [
        (a, b)
        for a, b in combinations(range(k), 2)
        if np.linalg.norm(weights[a] * scatters[a] - weights[b] * scatters[b]) > _FAIR_RTOL
    ]
    gaps_pca = np.array([errors_pca[a] - errors_pca[b] for a, b in pairs])
    largest_gap = float(np.max(np.abs(gaps_pca))) if pairs else 0.0
    if largest_gap <= _FAIR_RTOL:
        return None
    pair_coef = np.array([eye[a] - eye[b] for a, b in pairs])
    pair_offset = np.array([best[a] - best[b] for a, b in pairs])
    pair_names = [f"psi(Delta[{labels[a]}, {labels[b]}])" for a, b in pairs]
    if disparity == "pairwise":
        fair_coef, fair_offset, fair_names, fair_scale = (
            pair_coef,
            pair_offset,
            pair_names,
            largest_gap,
        )
    else:
        fair_coef, fair_offset, fair_scale = eye, best, float(np.max(errors_pca))
        fair_names = [f"psi(E[{label}])" for label in labels]
    m = 1 + len(fair_coef)
    objectives = _Objectives(
        scatters,
        np.vstack([np.ones((1, k)), fair_coef]),
        np.concatenate([[1.0], fair_offset]),
        np.concatenate([[1.0], np.full(m - 1, fair_scale)]),
        ("linear",) + (psi,) * (m - 1),
        alpha * d,
        ("loss", *fair_names),
        (0,) + (1,) * (m - 1),
    )
    start_objectives = _PenaltySum(
        _Objectives(
            scatters,
            pair_coef,
            pair_offset,
            np.full(len(pairs), largest_gap),
            (psi,) * len(pairs),
            alpha * d,
            tuple(pair_names),
            (1,) * len(pairs),
        )
    )
    loss = _Objectives(
        scatters, np.ones((1, k)), np.ones(1), np.ones(1), ("linear",), 0.0, ("loss",), (0,)
    )
    return objectives, start_objectives, loss
