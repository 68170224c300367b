r"""The descent of :class:`fairpca.ParetoFairPCA`: direction, step and stopping rule.

Algorithm 1 of Kamani et al. on St(p, d): at each iterate the Pareto descent
direction :math:`D = -\sum_i \lambda_i \hat G_i`, with :math:`\lambda` the
minimum-norm point of the convex hull of the normalised Riemannian gradients
:math:`\hat G_i` (eq. (17); Fliege & Svaiter, 2000), and an Armijo step
(eq. (16)) along the polar retraction that every objective must pass. The
objectives themselves (values, gradients, rounding floors) live in
:mod:`fairpca._pareto_objectives`; this module only needs their ``arguments``,
``penalties``, ``evaluate`` and ``gradient_floors`` methods and their
``alpha_d`` and ``family`` attributes. The texts of the estimator's warnings are at the end.

First trial of the step search. The Pareto descent uses Barzilai-Borwein
estimates of the step (Barzilai & Borwein, IMA J. Numer. Anal. 8, 1988) for
the weighted sum :math:`\sum_i \lambda_i \hat f_i`, whose gradient is :math:`-D`:
with :math:`s` the last move and :math:`y` the change of that gradient, both
projected onto the current horizontal space,

.. math::
    \eta^{\mathrm{long}} = \frac{\langle s, s\rangle}{\langle s, y\rangle},
    \qquad
    \eta^{\mathrm{short}} = \frac{\langle s, y\rangle}{\langle y, y\rangle},

the inverses of two Rayleigh quotients of the averaged Hessian along
:math:`s`, taken in turn and clipped to :math:`[\eta_{k-1}/2, 4\eta_{k-1}]`
(:math:`\eta_{k-1}` the previous step). Of the first trials tried on the test
problems (either estimate alone, the two in turn, their geometric mean, with
and without clipping, twice the previous step) this needed nearly the fewest
objective evaluations in all, and on no single problem many more than twice
the previous step; unclipped, it needed up to four times more on some:
where :math:`s` and :math:`y` are far from parallel the long estimate
overshoots by :math:`2^5` and more and the short one undershoots tenfold.
Back-tracking still halves from there until every objective passes the
Armijo test, so no objective ever increases.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from fairpca.riemannian.geometry import _retract_polar
from fairpca.riemannian.line_search import backtrack

logger = logging.getLogger("fairpca.pareto")

#: Sufficient-decrease constant beta of the Armijo test (16).
_ARMIJO = 1e-4
#: Most step halvings per line search (eta >= 2**-60 times the first trial).
_MAX_HALVINGS = 60
#: Longest move |eta D|_F of one step: 1 in the Pareto descent; 2**-5 in the start
#: search, which then follows the disparity sum's descent path from PCA closely
#: instead of jumping far from it (a jump can cost many percent of the loss).
_MAX_MOVE = 1.0
_START_MAX_MOVE = 2.0**-5
#: The start search steers by the loss while that keeps at least this fraction of
#: the disparities-only direction's length (so 1 % of its rate of decrease).
_STEER_MIN = 0.1
#: A Barzilai-Borwein estimate needs <s, y> above this fraction of |s| |y|:
#: below it the curvature along s is not measurably positive.
_BB_MIN_COSINE = 1e-8
#: The estimate is clipped to [_BB_LOW, _BB_HIGH] times the previous step: where
#: s and y are far from parallel the long estimate overshoots by a factor of
#: 2^5 or more (as many wasted halvings) and the short one undershoots tenfold.
_BB_LOW = 0.5
_BB_HIGH = 4.0
#: Stagnation: stop when, over this many steps, |D| reached no new low and ...
_STALL_WINDOW = 10
#: ... no objective decreased by more than this fraction of its value: a few
#: hundred units of rounding, i.e. the steps pass the Armijo test on its
#: rounding allowance alone.
_STALL_RTOL = 1e-13


# ---------------------------------------------------------------------------
# the direction
# ---------------------------------------------------------------------------


def _min_norm_weights_qp(gram, start=None):
    """Minimise ``lam^T gram lam`` over the simplex exactly (primal active-set method).

    The iterates stay feasible; each solves the KKT conditions
    ``(gram lam)_i = mu`` on the current support, drops a weight that would
    turn negative, or adds the vertex with the smallest ``(gram lam)_i`` while
    that is below ``mu = lam^T gram lam``. At the end ``(gram lam)_i >= mu``
    for every ``i`` up to rounding, which is what Lemma 1 needs.

    Parameters
    ----------
    gram : ndarray of shape (m, m)
        Gram matrix ``<g_i, g_j>`` of the gradients.
    start : ndarray of shape (m,) or None
        Feasible starting weights (e.g. the previous iteration's); by default
        the vertex of the shortest gradient.

    Returns
    -------
    weights : ndarray of shape (m,)
        Non-negative, summing to one.
    """
    m = gram.shape[0]
    top = np.max(np.diag(gram))
    if top <= 0:
        return np.full(m, 1.0 / m)
    K = gram / top
    if start is None:
        lam = np.zeros(m)
        lam[np.argmin(np.diag(K))] = 1.0
    else:
        lam = np.clip(start, 0.0, None)
        lam /= lam.sum()
    support = lam > 0
    for _ in range(4 * m + 20):
        j = np.flatnonzero(support)
        # Minimiser on the face spanned by the support: K_JJ lam_J = mu 1, sum(lam_J) = 1.
        kkt = np.zeros((len(j) + 1, len(j) + 1))
        kkt[:-1, :-1] = K[np.ix_(j, j)]
        kkt[:-1, -1] = -1.0
        kkt[-1, :-1] = 1.0
        rhs = np.zeros(len(j) + 1)
        rhs[-1] = 1.0
        face = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:-1]
        if np.any(face <= 0):
            # Walk towards the face's minimiser until the first weight hits zero.
            falling = face < lam[j]
            ratios = lam[j][falling] / (lam[j][falling] - face[falling])
            ratios = ratios[face[falling] <= 0]
            step = min(1.0, float(np.min(ratios))) if ratios.size else 1.0
            lam = lam.copy()
            lam[j] += step * (face - lam[j])
            lam[j[np.argmin(np.where(face <= 0, lam[j], np.inf))]] = 0.0
            lam = np.clip(lam, 0.0, None)
            lam /= lam.sum()
            support = lam > 0
            continue
        lam = np.zeros(m)
        lam[j] = face / face.sum()
        rates = K @ lam
        outside = np.flatnonzero(~support)
        if outside.size == 0:
            break
        worst = outside[np.argmin(rates[outside])]
        if rates[worst] >= lam @ rates - 1e-14:
            break
        support[worst] = True
    return lam


def _segment_weight(g00, g11, g01):
    """Weight ``t`` of ``g0`` at the minimum-norm point ``t g0 + (1 - t) g1`` of a segment.

    ``|t g0 + (1 - t) g1|^2`` is least at ``t = <g1 - g0, g1> / |g0 - g1|^2``,
    clipped to [0, 1]; any ``t`` when the ends coincide (1/2 then). Plain floats:
    this runs at every step, where numpy's per-call overhead would dominate.
    """
    gap = g00 + g11 - 2.0 * g01
    return 0.5 if gap <= 0 else min(max((g11 - g01) / gap, 0.0), 1.0)


def _min_norm_weights_three(gram):
    """:func:`_min_norm_weights` for three gradients: the best edge, or the QP.

    The minimum over the triangle is the best point of an edge unless the
    third vertex lowers it, i.e. unless ``(gram lam)_o < lam^T gram lam`` there
    (the optimality test of :func:`_min_norm_weights_qp`, same tolerance); then
    the minimum is interior and the QP finds it, started from that edge.
    """
    g = gram.tolist()
    top = max(g[0][0], g[1][1], g[2][2])
    if top <= 0:
        return _min_norm_weights_qp(gram)
    best = None
    for i, j, o in ((0, 1, 2), (1, 2, 0), (0, 2, 1)):
        t = _segment_weight(g[i][i], g[j][j], g[i][j])
        size = t * t * g[i][i] + 2.0 * t * (1.0 - t) * g[i][j] + (1.0 - t) ** 2 * g[j][j]
        if best is None or size < best[0]:
            best = (size, i, j, o, t)
    size, i, j, o, t = best
    lam = np.zeros(3)
    lam[i], lam[j] = t, 1.0 - t
    if t * g[o][i] + (1.0 - t) * g[o][j] >= size - 1e-14 * top:
        return lam
    return _min_norm_weights_qp(gram, lam)


def _min_norm_weights(gram, start=None):
    """Weights of the minimum-norm point of the convex hull of the gradients (eq. (37)).

    Closed forms for up to three objectives (:func:`_segment_weight`,
    :func:`_min_norm_weights_three`), :func:`_min_norm_weights_qp` beyond.

    Parameters
    ----------
    gram : ndarray of shape (m, m)
        Gram matrix of the gradients.
    start : ndarray of shape (m,) or None
        Warm start for :func:`_min_norm_weights_qp`.

    Returns
    -------
    weights : ndarray of shape (m,)
    """
    m = gram.shape[0]
    if m == 1:
        return np.ones(1)
    if m == 2:
        lam = _segment_weight(*gram[[0, 1, 0], [0, 1, 1]].tolist())
        return np.array([lam, 1.0 - lam])
    if m == 3:
        return _min_norm_weights_three(gram)
    return _min_norm_weights_qp(gram, start)


def _pareto_direction(gradients, start=None):
    """The Pareto descent direction of eq. (17) and its weights.

    ``D = -sum_i lam_i g_i`` with ``lam`` the minimum-norm point of the convex
    hull of the ``g_i``; then ``<D, g_i> <= -|D|^2`` for every ``i`` (Lemma 1).

    Parameters
    ----------
    gradients : ndarray of shape (m, p, d)
        The gradients ``g_i`` (here: normalised Riemannian gradients).
    start : ndarray of shape (m,) or None
        Warm start for the weights (the previous iteration's).

    Returns
    -------
    direction : ndarray of shape (p, d)
    weights : ndarray of shape (m,)
    """
    flat = gradients.reshape(gradients.shape[0], -1)
    weights = _min_norm_weights(flat @ flat.T, start)
    return -(weights @ flat).reshape(gradients.shape[1:]), weights


def _steered_direction(gradients, direction, loss_gradient, loss_floor):
    """The start search's step direction (see ``steer`` in :func:`_pareto_descent`).

    Returns
    -------
    direction : ndarray of shape (p, d)
    steered : bool
        Whether the loss took part.
    """
    size = np.linalg.norm(loss_gradient)
    if size <= loss_floor:
        return direction, False
    mixed, _ = _pareto_direction(np.concatenate([gradients, loss_gradient[None] / size]))
    if np.linalg.norm(mixed) < _STEER_MIN * np.linalg.norm(direction):
        return direction, False
    return mixed, True


def _normalisation(gradients, floors, family):
    """Fixed divisors of the gradients (Remark 1), as inverses, shape (m,).

    Each family's gradients are divided by the largest norm in the family at
    the start, so the loss and the disparities weigh the same while the
    disparities keep their relative sizes (they are in the same units). A
    gradient below its rounding floor gets 0: that objective is stationary,
    and so is the start.
    """
    norms = np.linalg.norm(gradients.reshape(len(gradients), -1), axis=1)
    alive = norms > floors
    family = np.asarray(family)
    inverse = np.zeros(len(norms))
    for f in np.unique(family):
        members = (family == f) & alive
        if np.any(members):
            inverse[members] = 1.0 / np.max(norms[members])
    return inverse


# ---------------------------------------------------------------------------
# the step and the stopping rule
# ---------------------------------------------------------------------------


def _horizontal(U, V):
    """``(I - U U^T) V``: the part of ``V`` that moves the subspace spanned by ``U``.

    The objectives depend on ``U U^T`` only, so their gradients are horizontal
    (``U^T G = 0``); projecting there is the vector transport used to compare
    vectors from the previous iterate with those of the current one.
    """
    return V - U @ (U.T @ V)


def _spectral_step(U, previous, gradients, weights, long):
    r"""Barzilai-Borwein estimate of the step for the weighted sum of the objectives.

    With the current weights :math:`\lambda` (so :math:`-D = \sum_i \lambda_i \hat G_i`),
    :math:`s = P_U(U - U_{\mathrm{prev}})` and
    :math:`y = \sum_i \lambda_i \big(\hat G_i - P_U \hat G_i^{\mathrm{prev}}\big)`,
    :math:`P_U = I - UU^\top`, the long estimate is :math:`\langle s, s\rangle /
    \langle s, y\rangle` and the short one :math:`\langle s, y\rangle / \langle y,
    y\rangle` (the short one is never longer, by Cauchy-Schwarz). Both are
    inverses of Rayleigh quotients of the Hessian of
    :math:`\sum_i \lambda_i \hat f_i` averaged along the last move.

    Parameters
    ----------
    U : ndarray of shape (p, d)
        Current iterate.
    previous : (ndarray of shape (p, d), ndarray of shape (m, p, d))
        The previous iterate and its normalised gradients.
    gradients : ndarray of shape (m, p, d)
        Normalised gradients at ``U``.
    weights : ndarray of shape (m,)
        Current weights of the Pareto direction.
    long : bool
        Return the long (``True``) or the short estimate.

    Returns
    -------
    eta : float or None
        None when :math:`\langle s, y\rangle \le 10^{-8}\,|s|\,|y|`: no positive
        curvature was measured along the move, and the estimate means nothing.
    """
    U_prev, gradients_prev = previous
    s = _horizontal(U, U - U_prev)
    change = gradients - _horizontal(U, gradients_prev)
    y = (weights @ change.reshape(len(weights), -1)).reshape(U.shape)
    ss, sy, yy = float(np.vdot(s, s)), float(np.vdot(s, y)), float(np.vdot(y, y))
    if not sy > _BB_MIN_COSINE * np.sqrt(ss * yy):
        return None
    return ss / sy if long else sy / yy


def _stalled(values, norms, window, rtol):
    """Whether the last ``window`` steps made no measurable progress.

    No progress: no objective decreased by more than ``rtol`` of its value,
    and ``|D|`` did not go below its smallest value before the window. Both
    are needed: the values alone stop changing once ``|D|`` is small enough
    that ``eta |D|^2`` is below their rounding, while ``|D|`` may still be
    falling; and ``|D|`` alone can stay flat for hundreds of steps while a
    disparity keeps falling.

    Parameters
    ----------
    values : list of ndarray of shape (m,)
        Objective values (without the constant ``alpha * d``), one per iterate.
    norms : list of float
        ``|D|`` at each iterate.
    window : int
        Steps looked back.
    rtol : float
        Largest decrease, as a fraction of ``|f_i|`` at the start of the window,
        that still counts as none.
    """
    if len(values) <= window:
        return False
    old, new = values[-1 - window], values[-1]
    if not np.all(old - new <= rtol * np.abs(old)):
        return False
    return min(norms[-window:]) >= min(norms[:-window])


def _armijo_step(objectives, U, values, gradients, direction, max_move, first=np.inf):
    """Back-tracking of eq. (16) along the polar retraction.

    The first trial is the largest power of two with ``|eta D|_F <= max_move``,
    or ``first`` if smaller (twice the previous step, or a Barzilai-Borwein
    estimate): a step is only ever halved from there.

    Returns
    -------
    step : (float, ndarray of shape (p, d), tuple, int) or None
        The accepted ``eta``, the new point, its ``objectives.arguments`` (reused
        for the gradients there) and the number of trials, or None after
        ``_MAX_HALVINGS`` halvings.
    """
    slopes = np.einsum("opd,pd->o", gradients, direction)
    # Absorbs rounding in the values when the descent is nearly over.
    slack = 10.0 * np.finfo(np.float64).eps * np.abs(values)
    eta = min(2.0 ** np.floor(np.log2(max_move / np.linalg.norm(direction))), first)
    trials = [0]

    def evaluate(eta):
        trials[0] += 1
        # The unchecked polar retraction (as the package's L-BFGS uses): U and D
        # are the descent's own finite arrays, and the checks cost a fifth of a trial.
        U_new = _retract_polar(U, eta * direction)
        arguments = objectives.arguments(U_new)
        return U_new, objectives.penalties(arguments[0]), arguments

    def sufficient(eta, trial):
        # NaN or inf fails the test, so non-finite trial values are backed off.
        return np.all(trial[1] <= values + _ARMIJO * eta * slopes + slack)

    step = backtrack(evaluate, sufficient, eta, _MAX_HALVINGS)
    return None if step is None else (step[0], step[1][0], step[1][2], trials[0])


# ---------------------------------------------------------------------------
# one run of Algorithm 1
# ---------------------------------------------------------------------------


@dataclass
class _Run:
    """Outcome and record of one run of Algorithm 1."""

    point: np.ndarray
    status: str
    n_steps: int
    objectives: list
    direction_norm: list
    step: list
    weights: list
    loss: list = field(default_factory=list)
    steered: list = field(default_factory=list)
    trials: int = 0


def _first_trial(run, U, previous, gradients, weights, spectral):
    """First step tried from ``U``: a Barzilai-Borwein estimate or twice the last step.

    With ``spectral`` the long and the short estimate of :func:`_spectral_step`
    alternate (long at even step counts), clipped to ``[_BB_LOW, _BB_HIGH]``
    times the previous step; without it, or when the estimate is undefined,
    twice the previous step (infinite at the first step: the cap of
    :func:`_armijo_step` decides).
    """
    last = run.step[-1] if run.step else np.inf
    if spectral and previous is not None:
        eta = _spectral_step(U, previous, gradients, weights, run.n_steps % 2 == 0)
        if eta is not None:
            return min(max(eta, _BB_LOW * last), _BB_HIGH * last)
    return 2.0 * last


def _pareto_descent(
    objectives,
    U,
    *,
    tol,
    max_iter,
    target=None,
    max_move=_MAX_MOVE,
    steer=None,
    admissible=None,
    spectral=False,
    label="",
    verbose=0,
):
    """Algorithm 1 on St(p, d) from ``U``.

    Each iteration: Riemannian gradients ``G_i``; normalised gradients
    ``G_i / s_i``, with ``s_i`` fixed at the start of the run
    (:func:`_normalisation`, Remark 1); the direction ``D`` of
    :func:`_pareto_direction`; stop if ``|D| <= tol`` (or on the other rules
    below); otherwise the step of :func:`_armijo_step` (eq. (16) for every
    objective, polar retraction) from the first trial of :func:`_first_trial`.

    Parameters
    ----------
    objectives : _Objectives
        The objective vector.
    U : ndarray of shape (p, d)
        Starting point (orthonormal columns).
    tol : float
        Stop when the direction's Frobenius norm is at most ``tol``.
    max_iter : int
        Most steps.
    target : float or None
        Also stop once every ``|z_i| <= target``.
    max_move : float
        Longest move ``|eta D|_F`` of a step.
    steer : _Objectives or None
        The loss, for the start search: the step then follows the Pareto
        direction of ``objectives`` and the loss (gradient normalised at each
        iterate, since it is 0 at PCA), unless that direction is shorter than
        ``_STEER_MIN`` times the direction of ``objectives`` alone. Only
        ``objectives`` take part in the Armijo test and the stopping rule.
    admissible : callable or None
        ``admissible(U) -> bool``: when the point a step reaches is not
        admissible, the run stops before that step, at the last admissible
        iterate (status ``"bound"``). The start point is not tested.
    spectral : bool
        First trials from Barzilai-Borwein estimates (see :func:`_first_trial`).
    label : str
        Prefix of the log messages.
    verbose : int
        0: log at DEBUG level; 1: summary at INFO; 2: every step at INFO.

    Returns
    -------
    run : _Run
        ``status`` is ``"converged"``, ``"target"``, ``"max_iter"``,
        ``"stalled"`` (:func:`_stalled`: no objective decreased by more than
        ``_STALL_RTOL`` of its value and ``|D|`` reached no new low over the
        last ``_STALL_WINDOW`` steps), ``"line search failed"`` or ``"bound"``
        (see ``admissible``).
    """
    values, z, G = objectives.evaluate(U)
    floors = objectives.gradient_floors(z, U.shape[1])
    inverse_scale = _normalisation(G, floors, objectives.family)
    run = _Run(U, "max_iter", 0, [], [], [], [])
    history = []  # the values without alpha * d, for the stagnation test
    previous = None
    while True:
        normalised = G * inverse_scale[:, None, None]
        D, weights = _pareto_direction(normalised, run.weights[-1] if run.weights else None)
        norm = float(np.linalg.norm(D))
        run.objectives.append(values + objectives.alpha_d)
        run.direction_norm.append(norm)
        run.weights.append(weights)
        history.append(values)
        if steer is not None:
            loss, z_loss, G_loss = steer.evaluate(U)
            loss_floor = steer.gradient_floors(z_loss, U.shape[1])
            run.loss.append(float(loss[0]))
        if norm <= tol:
            run.status = "converged"
            break
        # (1 + 1e-9): PCA's largest |z| is 1 up to rounding, and target 1 means PCA.
        if target is not None and np.all(np.abs(z) <= target * (1 + 1e-9)):
            run.status = "target"
            break
        if run.n_steps >= max_iter:
            run.status = "max_iter"
            break
        if _stalled(history, run.direction_norm, _STALL_WINDOW, _STALL_RTOL):
            run.status = "stalled"
            break
        if steer is not None:
            D, steered = _steered_direction(normalised, D, G_loss[0], loss_floor[0])
            run.steered.append(steered)
        first = _first_trial(run, U, previous, normalised, weights, spectral)
        step = _armijo_step(objectives, U, values, G, D, max_move, first)
        if step is None:
            run.status = "line search failed"
            break
        if admissible is not None and not admissible(step[1]):
            run.status = "bound"
            break
        previous = (U, normalised)
        eta, U, arguments, trials = step
        values, z, G = objectives.evaluate(U, arguments)
        run.step.append(eta)
        run.n_steps += 1
        run.trials += trials
        logger.log(
            logging.INFO if verbose > 1 else logging.DEBUG,
            "%sstep %d: eta = %.3g (first trial %.3g), |D| = %.3g",
            label,
            run.n_steps,
            eta,
            first,
            norm,
        )
    run.step.append(0.0)
    if steer is not None:
        run.steered.append(False)
    run.point = U
    logger.log(
        logging.INFO if verbose else logging.DEBUG,
        "%s%s after %d steps (%d objective evaluations in the line searches), |D| = %.3g",
        label,
        run.status,
        run.n_steps,
        run.trials,
        norm,
    )
    return run


# ---------------------------------------------------------------------------
# the estimator's warnings
# ---------------------------------------------------------------------------


def _convergence_message(run, start_steps, tol, max_iter):
    """The ``ConvergenceWarning`` of a Pareto descent that stopped with ``|D| > tol``."""
    where = (
        f"after {run.n_steps} Pareto-descent steps ({start_steps} more in the start search; "
        f"max_iter = {max_iter} applies to each)"
    )
    advice = {
        "max_iter": "Increase max_iter or tol.",
        "stalled": (
            f"Over the last {_STALL_WINDOW} steps no objective decreased by more than "
            f"{_STALL_RTOL:g} of its value and |D| reached no new low: the descent is at a "
            "kink of psi='abs' or at the rounding floor of the objectives; increase tol."
        ),
        "line search failed": (
            "No step lowered every objective: the descent is at the rounding floor of the "
            "objectives, or at a kink of psi='abs'; increase tol."
        ),
    }[run.status]
    return (
        f"ParetoFairPCA did not converge ({run.status}): |D| = {run.direction_norm[-1]:.3g} "
        f"> tol = {tol:g} {where}. {advice}"
    )


def _worse_off_message(est, worse, references, factor, floor):
    """The ``UserWarning`` naming the groups whose per-row loss rose beyond the factor.

    ``references``: each group's PCA loss, raised to at least ``floor`` times the
    groups' mean PCA loss (``fairpca._pareto_objectives._worse_off_limits``).
    """
    parts = []
    for a in np.flatnonzero(worse):
        fit, pca, ref = est.group_losses_[a], est.pca_group_losses_[a], references[a]
        times = f"{fit / ref:.3g}x" if ref > 0 else "from 0"
        if ref > pca:
            times += f" the floor {ref:.4g}"
        parts.append(f"{str(est.groups_[a])!r} {pca:.4g} -> {fit:.4g} ({times})")
    advice = (
        " group_loss='per_row' weighs every group by its rows' average loss instead of its "
        "sum over rows."
        if est.group_loss == "summed"
        else " A larger disparity_ratio keeps the fit closer to PCA."
    )
    return (
        f"ParetoFairPCA leaves {len(parts)} group(s) worse off than PCA by more than "
        f"{factor:g}x in per-row marginal loss (group_losses_ vs pca_group_losses_, each "
        f"PCA loss taken as at least {floor:g} times their mean): {'; '.join(parts)}."
        f"{advice}"
    )
