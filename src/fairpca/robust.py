"""Distributionally robust fair PCA (RFPCA) by Riemannian subgradient descent.

Implements the method of

    H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally Robust Fair
    Principal Components via Geodesic Descents." ICLR 2022.

For every group ``a`` (mass ``p_a = n_a / n``, second moment ``M_a`` about the
pooled training mean, radius ``eps_a``) the conditional distribution may move
within a Gelbrich (Wasserstein-type) ball of radius ``eps_a``; the projection
minimises the worst case of the total reconstruction error plus ``lam`` times
the largest gap between group reconstruction errors. Theorem 3.2 and appendix
B of the paper turn this into a finite maximum of functions of the numbers
``m_b = <I - V V^T, M_b>`` (each group's nominal reconstruction error), which is
minimised over the Stiefel manifold by Algorithm 1 (Riemannian subgradient
descent with constant step ``1 / sqrt(T + 1)``) from several starting points.
A run stops before step ``T`` once it can no longer lower the best objective
found (Notes of :class:`RobustFairPCA`), which leaves the returned objective as
the full budget gives it.

The module also provides :func:`robust_objective` (the objective at given
components). Model selection lives elsewhere: the scorer ``-(ARE + ABDiff)``
is :class:`fairpca.metrics.ReconstructionScorer`, and the paper's 3-fold
selection of ``alpha`` and ``lam`` is :func:`fairpca.experiments.robust_fair_pca_cv`.
"""

from __future__ import annotations

import logging
import numbers
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from fairpca._base import FairPCABase
from fairpca._config import document_require_groups
from fairpca._linalg import one_blas_thread, top_eigh
from fairpca._robust_descent import _objective_and_gradient_rows, _Problem, _subgradient_descent
from fairpca._validation import _plain, check_allocation, check_number
from fairpca._warnings import warn
from fairpca.riemannian.geometry import _orthonormal_complement, _qr_factor

__all__ = [
    "RobustFairPCA",
    "robust_objective",
]

logger = logging.getLogger(__name__)

_RETRACTIONS = ("qr", "polar")
_PARAMETRIZATIONS = ("complement", "direct")

#: Fewest steps over which a stalled best objective counts as converged.
_MIN_CONVERGENCE_WINDOW = 10

#: Stop runs that can no longer lower the returned objective (_robust_descent._hopeless).
#: Private switch: False runs every start for all n_iter steps (the tests compare both).
_STOP_EARLY = True


def _check_descent_memory(n_restarts, n_iter, p, d, k, parametrization):
    """Refuse a descent whose arrays exceed the memory budget, before allocating them.

    Per run (``n_restarts + 1``) of points ``r = d`` or ``p - d`` columns wide: the
    products ``X^T M_b`` (``r k p``), about six ``r p`` arrays (starts, iterate,
    best iterate, gradient, retraction) and the history (``n_iter + 1``), held
    twice (the loop's step-major copy and the returned one).
    """
    r = d if parametrization == "direct" else p - d
    runs = float(n_restarts) + 1.0
    check_allocation(
        8.0 * runs * (r * p * (k + 6.0) + 2.0 * (n_iter + 1.0)),
        f"RobustFairPCA's descent from n_restarts + 1 = {int(runs)} starts (points of "
        f"{p} x {r} with parametrization={parametrization!r}, {k} groups, n_iter={n_iter})",
        "Lower n_restarts"
        + (" or use parametrization='direct'." if parametrization == "complement" else "."),
    )


def _invalid_groups(problem, n_components):
    """Groups for which neither condition of Theorem 3.2 holds.

    Returns
    -------
    failures : list of (int, float)
        Group index and the sum of the ``p - d`` smallest eigenvalues of its
        ``M_b``, for each group with ``lam > p_b`` and that sum ``< eps_b``.
    """
    failures = []
    q = problem.n_features - n_components
    for b in range(problem.n_groups):
        if problem.lam <= problem.proportions[b]:
            continue
        tail = float(np.sum(np.linalg.eigvalsh(problem.second_moments[b])[:q]))
        if tail < problem.radii[b]:
            failures.append((b, tail))
    return failures


def _late_improvement(history, n_iter):
    """Relative fall of the best objective over the second half of an ``n_iter``-step run.

    ``history`` holds the objective at the start and after each step the run took; a
    run stopped early (see :func:`fairpca._robust_descent._hopeless`) could not have
    improved its best any more, so its best is taken as constant over the steps it
    did not take, which makes the result that of the full run.

    Returns
    -------
    change : float
        ``(b_{T - w} - b_T) / |b_T|`` with ``b`` the running best and ``w`` the window.
    window : int
        ``w = max(T // 2, 1)`` steps.
    """
    running_best = np.minimum.accumulate(history)
    running_best = np.concatenate(
        [running_best, np.full(n_iter + 1 - running_best.size, running_best[-1])]
    )
    window = max(n_iter // 2, 1)
    tail_start = running_best[-(window + 1)]
    change = (tail_start - running_best[-1]) / max(abs(running_best[-1]), np.finfo(float).tiny)
    return float(change), window


def robust_objective(components, second_moments, proportions, radii, lam):
    """Robust fair objective of Vu et al. (2022) at given components.

    The worst case, over distributions whose group conditionals lie within
    the Gelbrich balls of radii ``radii`` around the empirical ones, of the
    total reconstruction error plus ``lam`` times the largest gap between
    group reconstruction errors; closed form of Theorem 3.2 (two groups) and
    Theorem B.2 (k groups). It equals that worst case when, for every group,
    ``lam <= proportions[b]`` or the sum of the ``p - d`` smallest eigenvalues
    of ``second_moments[b]`` is at least ``radii[b]``; otherwise it is a lower
    bound of it.

    Parameters
    ----------
    components : array-like of shape (d, p)
        Orthonormal rows spanning the subspace (like ``components_``).
    second_moments : array-like of shape (k, p, p)
        Each group's second moment about the centre used for reconstruction
        (the pooled mean for a fitted :class:`RobustFairPCA`).
    proportions : array-like of shape (k,)
        Group masses, summing to one.
    radii : array-like of shape (k,)
        Non-negative ball radii.
    lam : float
        Non-negative weight of the error gap.

    Returns
    -------
    value : float
    """
    V = np.atleast_2d(np.asarray(components, dtype=np.float64)).T
    M = np.asarray(second_moments, dtype=np.float64)
    proportions = np.asarray(proportions, dtype=np.float64)
    radii = np.asarray(radii, dtype=np.float64)
    lam = check_number(lam, "lam", numbers.Real, minimum=0)
    if M.ndim != 3 or M.shape[1:] != (V.shape[0],) * 2:
        raise ValueError(
            f"second_moments must have shape (k, {V.shape[0]}, {V.shape[0]}) to match "
            f"components of shape {V.T.shape}, got {M.shape}."
        )
    for name, value in (("proportions", proportions), ("radii", radii)):
        if value.shape != (M.shape[0],):
            raise ValueError(f"{name} must have shape ({M.shape[0]},), got {value.shape}.")
    if np.any(radii < 0):
        raise ValueError("radii must be non-negative.")
    problem = _Problem(M, proportions, radii, lam)
    values, _ = _objective_and_gradient_rows(V.T[None], problem, "direct")
    return float(values[0])


# --------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------


@document_require_groups
class RobustFairPCA(FairPCABase):
    r"""Distributionally robust fair PCA (RFPCA) of Vu et al. (2022).

    Finds the ``d``-dimensional subspace (orthonormal ``V``, ``p x d``) solving

    .. math:: \min_{V^T V = I_d} \; \sup_{Q \in \mathcal{B}(\hat P)}
              \mathbb{E}_Q[\ell(V, X)] + \lambda \max_{a, a'}
              \big| \mathbb{E}_Q[\ell(V, X) | A = a] - \mathbb{E}_Q[\ell(V, X) | A = a'] \big|,

    with ``l(V, x) = ||x - V V^T x||^2`` (x centred on the pooled training
    mean) and the ambiguity set of joint distributions whose group masses are
    the empirical ``p_a = n_a / n`` and whose group conditionals lie within
    Gelbrich distance ``eps_a`` of the empirical ones. With
    ``m_a = <I - V V^T, M_a>``, ``M_a`` group ``a``'s second moment about the
    pooled mean, the problem equals (Theorem 3.2; appendix B for k groups)

    .. math:: \min_V \max_{a \neq a'} \sum_b p_b (m_b + \varepsilon_b)
              + 2 \sum_b c_{a a' b} \sqrt{\varepsilon_b m_b}
              + \lambda (m_a - m_{a'} + \varepsilon_a - \varepsilon_{a'}),

    ``c = p_a + lam`` for ``b = a``, ``|p_a' - lam|`` for ``b = a'``, ``p_b``
    otherwise; for two groups this is ``max(J_0, J_1)`` with
    ``J_a = kappa_a + theta_a sqrt(m_a) + vartheta_a' sqrt(m_a') + <I - V V^T, C_a>``.
    The reformulation is exact when, for every group, ``lam <= p_a`` or the sum
    of the ``p - d`` smallest eigenvalues of ``M_a`` is at least ``eps_a``; a
    ``UserWarning`` names the groups where both fail (the objective minimised
    is then a lower bound of the robust one). With ``lam = 0`` and all radii 0
    it is the total reconstruction error, minimised by vanilla PCA (Remark 3.4).

    The problem is solved by Riemannian subgradient descent (Algorithm 1):
    up to ``T = n_iter`` steps of constant size ``1 / sqrt(T + 1)`` along the
    negative Riemannian subgradient of the active pair, followed by a QR or
    polar retraction, from the PCA solution and from ``n_restarts`` random
    subspaces (all runs are vectorised together). The best iterate over all
    runs is returned. Runs that can no longer lower the best objective found
    within the budget are stopped early (see Notes).

    Parameters
    ----------
    n_components : int, default=2
        Dimension ``d`` of the subspace.
    lam : float, default=0.5
        Weight ``lambda >= 0`` of the gap between group reconstruction errors.
    alpha : float, default=0.15
        Radius scale: ``eps_a = alpha / sqrt(n_a)`` with ``n_a`` the training
        rows of group ``a`` (the paper's choice). Ignored when ``radii`` is given.
    radii : array-like of shape (n_groups,), default=None
        Explicit non-negative radii ``eps_a``, in the order of ``groups_`` (the
        sorted group labels).
    n_iter : int, default=1000
        Step budget ``T`` of each run; it also sets the step size
        ``1 / sqrt(T + 1)``. A run may stop earlier (see Notes).
    n_restarts : int, default=20
        Number of random starting subspaces (uniformly distributed), in
        addition to the PCA start.
    retraction : {"qr", "polar"}, default="qr"
        Retraction after each step. Both return an orthonormal basis of the
        span of the stepped point, and the objective depends on the span only,
        so they give the same sequence of subspaces up to rounding.
    parametrization : {"direct", "complement"}, default="direct"
        ``"complement"`` iterates on ``U`` (``p x (p - d)``, the complement of
        ``V``) as in the paper, where the objective is convex in the
        Euclidean sense; each step costs ``O(p^2 (p - d))``. ``"direct"`` iterates
        on ``V`` (``p x d``) using ``<I - V V^T, M> = tr M - tr(V^T M V)``, at
        ``O(p^2 d)`` a step. The two generate the same subspaces: the step in
        ``U``, ``U - gamma (I - U U^T) 2 W U``, spans the complement of
        ``V + gamma (I - V V^T) 2 W V``, the step in ``V`` (``W = sum_b w_b M_b``),
        and random starts are drawn as a subspace and its complement. Use
        ``"complement"`` only when ``p - d < d``.
    random_state : int, RandomState instance or None, default=None
        Seed of the random starting points.
    verbose : bool, default=False
        Log progress (``logging.getLogger("fairpca.robust")``, level INFO).
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal rows spanning the robust fair subspace, sorted by
        explained training variance.
    objective_ : float
        Robust objective at the returned subspace.
    history_ : ndarray of shape (n_iter_ + 1,)
        Objective at the start and after each step of the run that produced
        the returned subspace, up to where that run stopped.
    radii_ : ndarray of shape (n_groups,)
        Radii ``eps_a`` used.
    n_iter_ : int
        Number of steps taken by the run that produced the returned subspace
        (at most ``n_iter``).
    n_iter_per_start_ : ndarray of shape (n_restarts + 1,)
        Number of steps taken by each run: the PCA start first, then the
        random starts. Their sum is the work done, out of
        ``(n_restarts + 1) * n_iter``.
    converged_ : bool
        Whether the best objective of the returned run changed by at most
        ``1e-3`` relative over the second half of the budget of ``n_iter``
        steps (a run stopped early counts as keeping its best to the end, as
        it could not improve it). A subgradient
        method with a fixed step has no exact stopping test; this flags runs
        still improving at the end (then a ``ConvergenceWarning`` is issued;
        increase ``n_iter``). The window is half the budget, and at least
        ``10`` steps (so a run of fewer than 20 steps is never called
        converged): a short run whose best point is still falling must not
        pass because its last few steps happened not to improve it.
    mean_, explained_variance_, explained_variance_ratio_, groups_, group_counts_
        See :class:`fairpca.FairPCABase`.
    n_components_, component_scales_, n_features_in_, feature_names_in_
        See :class:`fairpca.FairPCABase`.

    See Also
    --------
    robust_objective : The objective at given components.
    fairpca.experiments.robust_fair_pca_cv : The paper's cross-validated choice of
        ``alpha`` and ``lam``.

    Notes
    -----
    ``M_a`` is the second moment about the pooled training mean (the papers'
    data are centred as a whole), so with zero radii the nominal terms are the
    group reconstruction errors of :func:`fairpca.metrics.group_reconstruction_error`
    and the gap term is :func:`fairpca.metrics.reconstruction_error_gap` on
    the training data. Where ``m_b = 0`` the square-root terms are not
    differentiable; their subgradient is taken as 0 there (no NaN).

    Stopping early. The step size is fixed by ``n_iter`` and the answer is the
    best iterate of all runs, so a run is worth continuing only while it could
    still lower the best objective ``L`` found so far. Such a method does not
    settle like a descent method: a run converges to a fixed point, settles
    on a short cycle (bouncing across a kink of the maximum), drifts slowly,
    or keeps zigzagging, and in the last case new best points keep coming
    late in the run (up to step 881 of 1000, after 553 steps without one,
    in the measurements behind this rule). Every 8 steps, with ``F_s`` a
    run's objective after ``s`` steps and ``t`` the current step, the run's
    largest change over ``P`` steps in the last ``W = 32``,
    ``delta_P = max_{t-W < s <= t} |F_s - F_{s-P}|``, is extrapolated (twice
    over) to the ``T - t`` remaining steps:

    .. math:: \phi = \max_{1 \le P \le 8} \Big( \min_{t-P < s \le t} F_s
              - 2 \delta_P \lceil (T - t) / P \rceil \Big).

    A run with ``phi >= L - 1e-10 |L|`` is stopped: the run holding ``L``
    has stalled, and any other run has fallen too far behind to overtake it.
    A run at a fixed point or on a cycle of up to 8 steps, or drifting well
    above ``L``, is stopped; a zigzagging run (large ``delta_P``) runs on to
    ``T``. On the problems measured (109 problems, budgets of 100, 300 and
    1,000 steps) the returned objective was unchanged to ``3e-11`` (relative)
    against running every start for the full budget, while the factor 2 could
    be lowered to 1 with no change and first changed an answer at 0.5.

    The objective depends on the data only through the group second moments
    and counts, so ``fit`` also accepts Dask collections (one distributed pass
    over the rows) and ``partial_fit`` merges each chunk's moments exactly and
    solves again (the default radii ``alpha / sqrt(n_a)`` use the counts seen so
    far); after the last chunk the estimator equals ``fit`` on all rows.

    References
    ----------
    H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally Robust Fair
    Principal Components via Geodesic Descents." ICLR 2022.

    Examples
    --------
    >>> from fairpca import RobustFairPCA
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(random_state=0)
    >>> est = RobustFairPCA(n_components=2, random_state=0).fit(X, sensitive_features=s)
    >>> est.components_.shape
    (2, 10)
    """

    #: Relative change of the best objective over the second half of a run deemed converged.
    _convergence_rtol = 1e-3

    #: Needs only the group moments: fits Dask input and has partial_fit.
    _moments_only = True
    #: Dropped by compact() besides the groups' labels, counts and moments.
    _group_attributes = (*FairPCABase._group_attributes, "radii_")

    def __init__(
        self,
        n_components: int | float = 2,
        *,
        lam: float = 0.5,
        alpha: float = 0.15,
        radii: ArrayLike | None = None,
        n_iter: int = 1000,
        n_restarts: int = 20,
        retraction: Literal["qr", "polar"] = "qr",
        parametrization: Literal["direct", "complement"] = "direct",
        random_state: int | np.random.RandomState | None = None,
        verbose: bool = False,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.lam = lam
        self.alpha = alpha
        self.radii = radii
        self.n_iter = n_iter
        self.n_restarts = n_restarts
        self.retraction = retraction
        self.parametrization = parametrization
        self.random_state = random_state
        self.verbose = verbose
        self.require_groups = require_groups

    def _check_params(self):
        check_number(self.lam, "lam", numbers.Real, minimum=0)
        check_number(self.alpha, "alpha", numbers.Real, minimum=0)
        n_iter = check_number(self.n_iter, "n_iter", minimum=1)
        runs = check_number(self.n_restarts, "n_restarts", minimum=0) + 1
        # Known before any data: the objective history of every run.
        check_allocation(
            8.0 * runs * (n_iter + 1),
            f"the objective history of n_iter={n_iter} steps from n_restarts + 1 = {runs} starts",
            "Lower n_iter or n_restarts.",
        )
        for name, value, options in (
            ("retraction", self.retraction, _RETRACTIONS),
            ("parametrization", self.parametrization, _PARAMETRIZATIONS),
        ):
            if not isinstance(value, str) or value not in options:
                listed = ", ".join(repr(o) for o in options)
                raise ValueError(f"{name} must be one of {listed}; got {value!r}.")
        if self.radii is not None:
            radii = np.asarray(self.radii)
            if radii.dtype.kind not in "iuf" or radii.ndim != 1:
                raise ValueError(
                    f"radii must be a 1-D array of non-negative numbers (one per group), "
                    f"got {self.radii!r}."
                )
            if not np.all(np.isfinite(radii)) or np.any(radii < 0):
                raise ValueError(f"radii must be finite and non-negative, got {self.radii!r}.")

    def _radii(self, counts):
        if self.radii is None:
            return float(self.alpha) / np.sqrt(counts)
        radii = np.asarray(self.radii, dtype=np.float64)
        if radii.shape[0] != counts.shape[0]:
            raise ValueError(
                f"radii has {radii.shape[0]} entries but sensitive_features has "
                f"{counts.shape[0]} groups ({', '.join(map(repr, self.groups_.tolist()))}); "
                "give one radius per group, in the order of the sorted group labels."
            )
        return radii

    def _fit_components(self, X, codes, moments, y, d):
        p = moments.n_features
        counts = moments.counts.astype(np.float64)
        problem = _Problem(
            moments.second_moment("pooled"),
            moments.proportions,
            self._radii(counts),
            float(self.lam),
        )
        self.radii_ = problem.radii
        if d == p:
            # Nothing to reconstruct: every m_b is 0 and the subspace is all of R^p.
            values, _ = _objective_and_gradient_rows(np.eye(p)[None], problem, "direct")
            self.objective_ = float(values[0])
            self.history_ = np.full(self.n_iter + 1, self.objective_)
            self.n_iter_, self.converged_ = int(self.n_iter), True
            self.n_iter_per_start_ = np.full(int(self.n_restarts) + 1, int(self.n_iter))
            return np.eye(p), None

        failures = _invalid_groups(problem, d)
        if failures:
            detail = "; ".join(
                f"group {_plain(self.groups_[b])!r}: lam={problem.lam:g} > proportion "
                f"{problem.proportions[b]:.4g} and the sum of its {p - d} smallest "
                f"second-moment eigenvalues {tail:.4g} < radius {problem.radii[b]:.4g}"
                for b, tail in failures
            )
            warn(
                "The reformulation of Vu et al. (2022, Theorem 3.2) needs, for every group, "
                "lam <= its proportion or the sum of the p - d smallest eigenvalues of its "
                f"second moment >= its radius; both fail for {detail}. The objective minimised "
                "is then a lower bound of the robust objective.",
                UserWarning,
            )

        _check_descent_memory(
            self.n_restarts, self.n_iter, p, d, problem.n_groups, self.parametrization
        )
        # PCA start (top-d eigenvectors of the pooled covariance) plus random subspaces.
        covariance = np.einsum("b,bij->ij", problem.proportions, problem.second_moments)
        pca = top_eigh(covariance, d)[1][None]
        rng = check_random_state(self.random_state)
        gaussian = rng.standard_normal((self.n_restarts, p, d))
        random_V = _qr_factor(gaussian)
        if self.parametrization == "direct":
            starts = np.concatenate([pca, random_V])
        else:
            starts = _orthonormal_complement(np.concatenate([pca, random_V]))

        # Batches of small products (restarts x p x d): BLAS threads only add
        # synchronisation to them, which on a busy machine makes the fit's time erratic.
        with one_blas_thread():
            points, values, history, n_steps = _subgradient_descent(
                starts,
                problem,
                self.parametrization,
                self.retraction,
                int(self.n_iter),
                verbose=bool(self.verbose),
                stop_early=_STOP_EARLY,
            )
        best = int(np.argmin(values))
        if self.verbose:
            logger.info(
                "best objective %.8g from %s start (PCA start: %.8g); %d of %d steps taken",
                values[best],
                "the PCA" if best == 0 else f"random start {best}",
                values[0],
                int(n_steps.sum()),
                n_steps.size * int(self.n_iter),
            )
        V = points[best] if self.parametrization == "direct" else None
        if V is None:
            V = _orthonormal_complement(points[best][None])[0]
        self.objective_ = float(values[best])
        self.n_iter_per_start_ = n_steps
        self.n_iter_ = int(n_steps[best])
        self.history_ = history[best, : self.n_iter_ + 1]
        change, window = _late_improvement(self.history_, int(self.n_iter))
        self.converged_ = bool(
            window >= _MIN_CONVERGENCE_WINDOW and change <= self._convergence_rtol
        )
        if not self.converged_:
            warn(
                f"RobustFairPCA: the best objective still decreased by {change:.3g} (relative) "
                f"over the last {window} of {self.n_iter} iterations (tolerance "
                f"{self._convergence_rtol:g}, judged over at least {_MIN_CONVERGENCE_WINDOW} "
                "iterations); consider increasing n_iter.",
                ConvergenceWarning,
            )
        return V.T, None
