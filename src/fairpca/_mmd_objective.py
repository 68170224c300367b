"""The objective of MMDFairPCA: explained variance and the penalty of the MMD² constraints.

``Q(V) = f(V) + rho * penalty(V)`` of the Riemannian exact penalty method
(Liu & Boumal 2020) as Lee et al. (AAAI 2022) use it: :class:`_Penalty` sums
the MMD² of every constraint over the strata of rows (exact kernel sums or
random features, :mod:`fairpca._kernels`) and judges feasibility on the
largest, :class:`_CachedObjective` adds the explained variance and caches what
the sub-solvers of :mod:`fairpca.mmd` evaluate again.
"""

from collections import OrderedDict
from functools import cached_property

import numpy as np

from fairpca._kernels import (
    _constraint_values,
    _exact_hess_vec,
    _exact_hessian,
    _exact_terms,
    _products_per_dense_hessian,
    _rff_terms,
    _sampling_floors,
    _weighted_kernel,
)
from fairpca.riemannian.trust_region import apply_preconditioner, hessian_preconditioner

#: Exact Hessian products keep the weighted kernel matrix of the current point when the
#: constrained rows number at most this (8 m² bytes: 128 MiB at 4096); beyond, and with
#: random features, they are central differences of the gradient.
_HESS_CACHE_ROWS = 4096
#: The trust-region preconditioner is rebuilt once the Hessian products spent since the
#: last build cost this fraction of a new one (see _CachedObjective.preconditioner).
_REBUILD_FRACTION = 0.5
_FD_STEP = 2.0**-17  # central differences: truncation and rounding both ~1e-10 relative
#: Most constrained rows (per stratum, as sum of squares over them) mmd="exact" is run on.
#: An evaluation sums the kernel over every pair (about 1.5 ns a pair on one core) and a
#: fit takes from a hundred to a thousand evaluations: at 20,000 rows one evaluation took
#: 1.7 s on a busy core and an outer iteration a minute, with nothing printed at verbose=0.
EXACT_MAX_ROWS = 10_000


def check_exact_cost(method, row_counts, max_samples):
    """Refuse ``mmd="exact"`` on more rows than :data:`EXACT_MAX_ROWS`, before any is read.

    Parameters
    ----------
    method : {"auto", "exact", "rff"}
        The estimator's ``mmd``; only an explicit ``"exact"`` is checked
        (``"auto"`` chooses exact sums at this size only for a ``tau`` below
        what random features can certify, as documented).
    row_counts : list of int
        Constrained rows of each stratum (after the ``max_samples`` subsample).
    max_samples : int or None
        The estimator's ``max_samples``, for the message.
    """
    pairs = sum(float(m) ** 2 for m in row_counts)
    if method != "exact" or pairs <= float(EXACT_MAX_ROWS) ** 2:
        return
    rows = sum(int(m) for m in row_counts)
    raise ValueError(
        f"mmd='exact' sums the kernel over all {pairs / 2:.3g} pairs of the {rows} "
        f"constrained rows (max_samples={max_samples}) at every evaluation, and a fit "
        "takes hundreds of evaluations: that is beyond the "
        f"{EXACT_MAX_ROWS} rows exact sums are run on (minutes to hours). Use "
        "mmd='auto' (the default) or mmd='rff' (random features, linear in the rows), "
        f"or set max_samples={EXACT_MAX_ROWS} to optimise on a stratified subsample."
    )


class _Penalty:
    """Sum over strata and constraints of MMD², with its gradient.

    Feasibility is judged on the largest *excess* over the strata's
    constraints: MMD² itself, less its sampling floor for the small
    constraints (:func:`fairpca._kernels._sampling_floors`).

    Each constraint ``c`` has its own weight: the penalty is
    ``sum_c w_c h_c``, and ``rho w_c`` is the constraint's own penalty
    parameter. All weights start at 1; after an outer iteration that leaves
    some constraint violated, :meth:`reweight` halves the weights of those
    that hold while ``rho`` doubles, so each violated constraint's parameter
    doubles and each satisfied one's stays (the rule of [Liu2019]_ per
    constraint). With a common weight, the limit of large ``rho`` would
    minimise the *sum* of the MMD² values, whose minimiser can leave the
    largest above ``tau`` when a point with all of them below it exists. With
    two groups both one-vs-rest values are the one MMD², so the weights
    stay 1.

    Parameters
    ----------
    strata : list of _Stratum
    bandwidth : float
    method : {"exact", "rff"}
    frequencies : ndarray of shape (d, D) or None
        Random frequencies (``method="rff"``).
    """

    def __init__(self, strata, bandwidth, method, frequencies=None):
        self.strata = strata
        self.gamma = 0.5 / bandwidth**2
        self.method = method
        self.frequencies = frequencies
        self.weights = [None] * len(strata)  # per stratum: None (all 1) or (constraints,)
        self._last_excess = (None, None)  # (key of V, excess per stratum) of the last call
        # (key of V, [_WeightedKernel per stratum], dense Hessian or None, products before it pays)
        self._kernels = (None, None, None, 0)

    @property
    def exact_hessian(self):
        """Whether Hessian products are exact (cached kernels) rather than differences.

        Not with small constraints: their smooth hinge makes the penalty's
        weights depend on ``V``, which the cached kernels do not follow.
        """
        return self.method == "exact" and all(
            st.X.shape[0] <= _HESS_CACHE_ROWS and not st.small.any() for st in self.strata
        )

    def dense_budget(self, shape, factorised=False):
        """Products that cost as much as forming the dense Hessian (and factorising it)."""
        return max(
            _products_per_dense_hessian(st.X.shape[0], *shape, factorised) for st in self.strata
        )

    def _at(self, V):
        """The cached ``(key, kernels, dense Hessian or None, products left)`` at ``V``."""
        key = V.tobytes()
        if self._kernels[0] != key:
            kernels = [
                _weighted_kernel(
                    V, st, self.gamma, None if w is None else (st.mixtures.T * w) @ st.mixtures
                )
                for st, w in zip(self.strata, self.weights, strict=True)
            ]
            # A trust-region step takes from a few to over a hundred products at one
            # point (many at the rho of a tight tau). Forming the matrix
            # once the products spent there cost as much (rent, then buy) is never
            # more than twice the better of the two choices made in hindsight.
            self._kernels = (key, kernels, None, self.dense_budget(V.shape))
        return self._kernels

    def dense_hessian(self, V):
        """The exact Euclidean Hessian of the penalty at ``V``, shape (p d, p d) (cached)."""
        key, kernels, dense, _ = self._at(V)
        if dense is None:
            dense = sum(
                _exact_hessian(kernel, st, self.gamma)
                for st, kernel in zip(self.strata, kernels, strict=True)
            )
            self._kernels = (key, kernels, dense, 0)
        return dense

    def formed_dense(self, shape):
        """``(key, V, dense Hessian)`` of the cached point if its matrix was formed, else None."""
        key, _, dense, _ = self._kernels
        if dense is None:
            return None
        return key, np.frombuffer(key).reshape(shape), dense

    def hess_vec(self, V, Xi):
        """Euclidean Hessian of the penalty at ``V`` applied to ``Xi``, shape (p, d).

        Exact (cached weighted kernel matrices, reused by every product at the
        same ``V``, and the whole ``(p d, p d)`` matrix when that is cheaper
        than a few dozen products) when each stratum has at most
        ``_HESS_CACHE_ROWS`` rows and ``method="exact"``; otherwise a central
        difference of the gradient.
        """
        if self.exact_hessian:
            key, kernels, dense, products_left = self._at(V)
            if dense is not None:
                return (dense @ Xi.ravel()).reshape(V.shape)
            out = np.zeros_like(V)
            for st, kernel in zip(self.strata, kernels, strict=True):
                out += _exact_hess_vec(kernel, st, self.gamma, Xi)
            products_left -= 1
            self._kernels = (key, kernels, None, products_left)
            if products_left <= 0:
                self.dense_hessian(V)
            return out
        norm = np.linalg.norm(Xi)
        if norm == 0.0:
            return np.zeros_like(V)
        t = _FD_STEP / norm
        return (self(V + t * Xi)[2] - self(V - t * Xi)[2]) / (2.0 * t)

    def __call__(self, V, with_grad=True):
        """Return ``(penalty, largest excess, gradient or None)``."""
        penalty, excess = 0.0, []
        grad = np.zeros_like(V) if with_grad else None
        for stratum, weights in zip(self.strata, self.weights, strict=True):
            if self.method == "exact":
                pen, gram, g = _exact_terms(V, stratum, self.gamma, with_grad, weights)
            else:
                pen, gram, g = _rff_terms(V, stratum, self.frequencies, with_grad, weights)
            penalty += pen
            excess.append(_excess(gram, stratum))
            if with_grad:
                grad += g
        self._last_excess = (V.tobytes(), excess)  # for reweight at an accepted iterate
        return penalty, max(float(e.max()) for e in excess), grad

    def reweight(self, V, tau):
        """Halve the weights of the constraints that hold at ``V`` if any is violated.

        Returns whether any weight changed (the penalty is then a new function,
        and every cache of it stale). Weights stop at ``2^-60``.
        """
        key, excess = self._last_excess
        if key != V.tobytes():
            excess = [_excess(self._gram(V, st), st) for st in self.strata]
        if max(float(e.max()) for e in excess) <= tau:
            return False
        changed = False
        for i, e in enumerate(excess):
            w = np.ones(len(e)) if self.weights[i] is None else self.weights[i]
            holds = (e <= tau) & (w > 2.0**-60)
            if holds.any():
                self.weights[i] = np.where(holds, 0.5 * w, w)
                changed = True
        if changed:
            self._kernels = (None, None, None, 0)
        return changed

    def _gram(self, V, stratum):
        if self.method == "exact":
            return _exact_terms(V, stratum, self.gamma, False)[1]
        return _rff_terms(V, stratum, self.frequencies, False)[1]

    def report(self, V):
        """Every constraint at ``V``: ``(labels, MMD² values, allowances, sampling floors)``.

        The allowance is the sampling floor of a small constraint and 0 for
        the others; labels carry the stratum's name when there are several.
        """
        labels, values, floors, small = [], [], [], []
        for stratum in self.strata:
            gram = self._gram(V, stratum)
            prefix = f"{stratum.name}: " if len(self.strata) > 1 else ""
            labels += [prefix + label for label in stratum.labels]
            values.append(_constraint_values(gram, stratum))
            floors.append(_sampling_floors(gram, stratum))
            small.append(stratum.small)
        floors = np.concatenate(floors)
        allowances = np.where(np.concatenate(small), floors, 0.0)
        return labels, np.concatenate(values), allowances, floors


def _allowances(gram, stratum):
    """The sampling floor of each small constraint of ``stratum``, 0 for the others."""
    if not stratum.small.any():
        return np.zeros(len(stratum.small))
    return np.where(stratum.small, _sampling_floors(gram, stratum), 0.0)


def _excess(gram, stratum):
    """MMD² of each constraint less its allowance; MMD² itself when none is small."""
    values = _constraint_values(gram, stratum)
    if stratum.small.any():
        values = values - _allowances(gram, stratum)
    return values


class _CachedObjective:
    """``Q(V) = f(V) + rho * penalty(V)`` for the sub-solvers.

    ``f(V) = -tr(V^T Sigma V) / tr(Sigma)`` with ``Sigma = X^T X / n``; when
    ``n < p``, ``Sigma V = X^T (X V) / n`` is cheaper than the ``p x p`` product
    (``X`` may be None: then ``Sigma`` is used).
    The last few evaluations are kept so that the penalty at an accepted
    iterate is never recomputed.
    """

    def __init__(self, X, sigma, penalty):
        total = np.trace(sigma)
        if X is not None and X.shape[0] < X.shape[1]:
            self._factor = X / np.sqrt(X.shape[0] * total)
            self._sigma = None
        else:
            self._factor = None
            self._sigma = sigma / total
        self.penalty = penalty
        self.n_features = sigma.shape[0]
        self.rho = 1.0
        self._memo = OrderedDict()
        self.n_evals = 0
        # (key of the point, M^{-1} or None) of the last preconditioner built.
        self._preconditioner = (None, None)
        self._products_since_build = 0
        self._shift = 0  # index in riemannian.trust_region._SHIFTS of the last shift

    def terms(self, V):
        """Return ``(variance ratio, penalty, largest excess, penalty gradient, Sigma V)``."""
        key = V.tobytes()
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        self.n_evals += 1
        SV = self.sigma_times(V)
        variance = float(np.sum(V * SV))
        pen, largest, pen_grad = self.penalty(V)
        value = (variance, pen, largest, pen_grad, SV)
        self._memo[key] = value
        if len(self._memo) > 8:
            self._memo.popitem(last=False)
        return value

    def reweight(self, V, tau):
        """:meth:`_Penalty.reweight` at ``V``, dropping what the old weights cached."""
        if self.penalty.reweight(V, tau):
            self._memo.clear()
            self._preconditioner = (None, None)
            self._products_since_build = 0

    @cached_property
    def sigma_matrix(self):
        """``Sigma / tr(Sigma)``, shape (p, p)."""
        return self._sigma if self._sigma is not None else self._factor.T @ self._factor

    def sigma_times(self, V):
        """``Sigma V / tr(Sigma)``."""
        if self._sigma is not None:
            return self._sigma @ V
        return self._factor.T @ (self._factor @ V)

    def __call__(self, V):
        variance, pen, _, pen_grad, SV = self.terms(V)
        if self.penalty.method == "rff":
            # MMD² depends on V only through the subspace (V -> VQ leaves it unchanged), but
            # its random-feature estimate at fixed frequencies does not: its gradient has a
            # vertical part V skew(V^T G), a rotation within the subspace, of the size of the
            # approximation error, which L-BFGS would chase without moving the subspace.
            # Dropping it keeps the gradient exact along every horizontal direction.
            VtG = V.T @ pen_grad
            pen_grad = pen_grad - V @ (0.5 * (VtG - VtG.T))
        return -variance + self.rho * pen, -2.0 * SV + self.rho * pen_grad

    def hess_vec(self, V, Xi):
        """Euclidean Hessian of ``Q`` at ``V`` applied to ``Xi``."""
        self._products_since_build += 1
        return -2.0 * self.sigma_times(Xi) + self.rho * self.penalty.hess_vec(V, Xi)

    def preconditioner(self, V, egrad):
        """``M^{-1}`` for the trust-region CG at ``V``, or None (see ``minimize_trust_region``).

        ``M`` is the Riemannian Hessian of ``Q`` (shifted to be positive definite)
        at a recent point; ``M^{-1} r`` is projected onto the tangent space at
        ``V``, which keeps the operator symmetric positive definite there. It is
        rebuilt where the penalty's dense Hessian has just been formed (a CG solve
        needed many products at one point), or once the products spent since it
        was built cost ``_REBUILD_FRACTION`` of a new one (dense Hessian,
        Cholesky factor and inverse: rent or buy again, across points; less than
        the whole, because a fresh preconditioner also shortens the solves to
        come). None with random features (no exact Hessian) or before the first build.
        """
        penalty = self.penalty
        if not penalty.exact_hessian:
            return None
        formed = penalty.formed_dense(V.shape)
        if formed is not None and formed[0] != self._preconditioner[0]:
            _, point, dense = formed
            self._build_preconditioner(point, self(point)[1], dense)
        elif self._products_since_build >= _REBUILD_FRACTION * penalty.dense_budget(V.shape, True):
            self._build_preconditioner(V, egrad, penalty.dense_hessian(V))
        if self._preconditioner[1] is None:
            return None
        return apply_preconditioner(self._preconditioner[1], V)

    def euclidean_hessian(self, penalty_hessian):
        """The Euclidean Hessian of ``Q`` as a ``(p d, p d)`` matrix, from the penalty's.

        ``rho`` times the penalty's minus ``2 I (x) Sigma / tr(Sigma)`` (row-major
        ``vec`` of ``p x d`` matrices); a new array.
        """
        A = self.rho * penalty_hessian
        p = self.n_features
        d = A.shape[0] // p
        blocks = A.reshape(p, d, p, d)
        for b in range(d):
            blocks[:, b, :, b] -= 2.0 * self.sigma_matrix
        return A

    def _build_preconditioner(self, V, egrad, penalty_hessian):
        # Start one shift below the last one that worked: nearby points need similar
        # shifts, and each failed Cholesky attempt costs up to a whole factorisation.
        inverse, self._shift = hessian_preconditioner(
            V, egrad, self.euclidean_hessian(penalty_hessian), max(self._shift - 1, 0)
        )
        self._preconditioner = (V.tobytes(), inverse)
        self._products_since_build = 0
