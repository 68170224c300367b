r"""Fair sparse PCA: loadings with few non-zero entries, fair to every group.

Babu and Stoica [Babu2025]_ ask for principal components that are both fair
and sparse, so that a reader can name the features each component uses.
:class:`FairSparsePCA` offers two fairness notions:

- ``fairness="max-min"``, the paper's: maximise the smallest group
  variance captured minus a sparsity penalty, by minorization-maximization
  (:mod:`fairpca._sparse_pca_mm`, where the formulation, the surrogate and
  the monotonicity guarantee are written out);
- ``fairness="mean-matching"`` (default): a cardinality bound with the linear fairness
  constraint of :class:`~fairpca.MeanMatchingFairPCA` (Kleindessner et al.),
  solved over supports as below. For the first component,

.. math::

    \max_{u \in \mathbb{R}^p} u^T \Sigma u \quad \text{s.t.} \quad
    \|u\|_2 = 1,\ \|u\|_0 \le s,\ B^T u = 0,

with ``Sigma`` the pooled covariance and ``B`` the columns
``sqrt(w_a) (mu_a - mu)`` (group proportions ``w_a``, group means ``mu_a``,
pooled mean ``mu``): every group has the same mean along ``u``.

**Closed form on a support.** For a fixed support ``S`` (``|S| <= s``) the
problem is an eigenproblem: with ``N_S`` an orthonormal basis of the null
space of ``B_S^T`` (the rows of ``B`` on ``S``), the best ``u`` is
``N_S w`` with ``w`` the top eigenvector of ``N_S^T Sigma_SS N_S``, and the
optimal value ``lambda(S)`` its eigenvalue. ``S`` is *feasible* when that
null space is not empty (generically ``|S| > k - 1`` for ``k`` groups). The
problem is thus a search over supports.

**Support search.** When there are at most ``EXHAUSTIVE_SUPPORTS`` supports
of ``s`` features, all of them (one batched closed form): the exact optimum.
Otherwise forward selection with exchanges: starting from the empty
support, add the feature whose addition gives the largest ``lambda`` (while no
candidate is feasible, the one leaving the fewest features still needed, then
the most unconstrained variance; see :func:`support_values`); after
each addition, exchange one feature of the support for one outside while an
exchange raises ``lambda`` (best exchange first). The result is *exchange
optimal*: no single swap improves it, which the tests check against brute
force. Each level starts from the previous level's support, so ``lambda`` is
non-decreasing in ``s`` along :func:`fair_sparse_pca_path` (feasible sets
grow with ``s``). Exhaustive search is exponential; the benchmark
(``benchmarks/fair_sparse_pca.py``) reports how often this search reaches it.

The constraint is imposed through an orthonormal basis ``Q`` of ``span(B)``
(``Q_S^T u = 0`` has the null space of ``B_S^T u = 0``), with
:class:`~fairpca.MeanMatchingFairPCA`'s rank rule.

**Later components.** Component ``j`` solves the same problem with the
earlier components added to the constraint columns, ``[Q, u_1, ..., u_{j-1}]``
(orthonormal, since fair components are orthogonal to ``span(B)``):
the loadings are orthonormal and ``u_j^T Sigma u_j`` equals its value under
projection deflation ``(I - u u^T) Sigma (I - u u^T)`` (the two agree on
vectors orthogonal to the earlier components).

With ``s >= p`` the cardinality bound is inactive and the components are
those of :class:`~fairpca.MeanMatchingFairPCA`. Everything is computed from
:class:`~fairpca.GroupMoments`: the method fits Dask collections and streams
chunks through ``partial_fit``.

References
----------
.. [Babu2025] P. Babu and P. Stoica. "Fair principal component analysis (PCA):
   minorization-maximization algorithms for fair PCA, fair robust PCA and fair
   sparse PCA." TMLR 2025 (arXiv:2305.05963).
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import Bunch

from fairpca._base import FairPCABase
from fairpca._config import document_require_groups
from fairpca._linalg import flip_signs, top_eigh
from fairpca._sparse_pca_mm import max_min_objective, max_min_sparse_pca
from fairpca._validation import check_number
from fairpca.mean_matching import attribute_mean_shifts, constraint_gaps, moments_constraint_bases
from fairpca.moments import GroupMoments

__all__ = [
    "FairSparsePCA",
    "fair_sparse_pca_path",
    "fair_sparse_components",
    "support_values",
]

#: Singular values of the orthonormal constraint columns restricted to a support
#: below this count as zero.
_RANK_RTOL = 1e-10

#: An exchange must raise ``lambda`` by this fraction of it: no cycling on ties.
_GAIN_RTOL = 1e-12

#: The fairness notions of :class:`FairSparsePCA`.
_FAIRNESS = ("max-min", "mean-matching")

#: Largest number of float64 entries of one batch of support matrices.
_BATCH_ENTRIES = 1 << 22

#: Sizes with at most this many supports are searched exhaustively (all of them).
EXHAUSTIVE_SUPPORTS = 2000


def support_values(covariance, constraints, supports, tol=_RANK_RTOL):
    """The closed-form solution on each of a batch of supports, and a search score.

    For each support ``S`` (a row of ``supports``), the unit vector ``u`` on
    ``S`` maximising ``u^T Sigma u`` subject to ``C_S^T u = 0``, where the
    singular values of ``C_S`` (the rows of ``constraints`` on ``S``) below
    ``tol`` count as zero. With ``Q`` the kept left singular vectors,
    ``P = I - Q Q^T`` and ``c > lambda_max(Sigma_SS)``, the top eigenpair of
    ``P Sigma_SS P - c Q Q^T`` is the answer: the shift pushes the constraint
    span below every eigenvalue of the null space.

    Parameters
    ----------
    covariance : ndarray of shape (p, p)
        ``Sigma``, symmetric positive semi-definite.
    constraints : ndarray of shape (p, c)
        Constraint columns ``C``, orthonormal (``c`` may be 0).
    supports : ndarray of int, shape (m, t)
        ``m`` supports of ``t`` distinct features each.
    tol : float, default=1e-10
        Rank threshold on the singular values of ``C_S``.

    Returns
    -------
    feasible : ndarray of bool, shape (m,)
        Whether the null space of ``C_S^T`` is not empty.
    needed : ndarray of int, shape (m,)
        0 where feasible; elsewhere ``a + 1 - t`` with ``a`` the number of
        columns of ``C`` not zero on ``S``: the features a feasible superset
        needs at least, if the new ones touch no other column (the search's
        guide while no support is feasible).
    values : ndarray of shape (m,)
        ``lambda(S)`` where feasible; elsewhere ``lambda_max(Sigma_SS)`` without
        the constraints.
    vectors : ndarray of shape (m, t)
        The maximiser on ``S`` where feasible (unit norm, ``C_S^T u = 0`` to
        rounding); the unconstrained top eigenvector elsewhere.
    """
    supports = np.asarray(supports, dtype=np.intp)
    m, t = supports.shape
    block = covariance[supports[:, :, None], supports[:, None, :]]
    C = constraints[supports]
    eye = np.eye(t)
    projector = np.broadcast_to(eye, (m, t, t))
    feasible, needed = np.ones(m, dtype=bool), np.zeros(m, dtype=np.intp)
    matrix = block
    if C.shape[2]:
        left, singular, _ = np.linalg.svd(C, full_matrices=True)
        keep = singular > tol
        Q = left[:, :, : keep.shape[1]] * keep[:, None, :]
        span = Q @ np.swapaxes(Q, 1, 2)
        projector = eye - span
        shift = np.trace(block, axis1=1, axis2=2) + 1.0
        matrix = projector @ block @ projector - shift[:, None, None] * span
        feasible = keep.sum(axis=1) < t
        active = (np.linalg.norm(C, axis=1) > tol).sum(axis=1)
        needed = np.where(feasible, 0, np.maximum(active + 1 - t, 1))
    eigenvalues, eigenvectors = np.linalg.eigh(matrix)
    values, vectors = eigenvalues[:, -1].copy(), eigenvectors[:, :, -1].copy()
    # Back into the null space exactly, up to rounding (the shift leaves eps-sized leaks).
    vectors = np.einsum("mij,mj->mi", projector, vectors)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.finfo(float).tiny)
    if not feasible.all():
        plain_values, plain_vectors = np.linalg.eigh(block[~feasible])
        values[~feasible] = plain_values[:, -1]
        vectors[~feasible] = plain_vectors[:, :, -1]
    return feasible, needed, values, vectors


def _best(covariance, constraints, supports):
    """The best of ``supports``: ``(key, index, vector)``, key ``(feasible, -needed, value)``."""
    supports = np.asarray(supports, dtype=np.intp)
    t = max(supports.shape[1], 1)
    step = max(1, _BATCH_ENTRIES // (t * t))
    best = None
    for start in range(0, supports.shape[0], step):
        feasible, needed, values, vectors = support_values(
            covariance, constraints, supports[start : start + step]
        )
        # Feasible first, then fewest features still needed, then value; ties to the first.
        i = int(np.lexsort((-np.arange(len(values)), values, -needed, feasible))[-1])
        key = (bool(feasible[i]), -int(needed[i]), float(values[i]))
        if best is None or key > best[0]:
            best = (key, start + i, vectors[i])
    return best


def _better(candidate, current):
    """Whether key ``candidate`` beats ``current``, values by more than rounding."""
    if candidate[:2] != current[:2]:
        return candidate[:2] > current[:2]
    return candidate[2] > current[2] + _GAIN_RTOL * abs(current[2])


def _exchange(covariance, constraints, support, state, max_passes):
    """Best-first single exchanges while one improves: (support, state, passes, ended)."""
    p = covariance.shape[0]
    for n_pass in range(max_passes):
        outside = np.setdiff1d(np.arange(p), support)
        if outside.size == 0:
            return support, state, n_pass, True
        trials = np.repeat(support[None, :], support.size * outside.size, axis=0)
        rows = np.arange(trials.shape[0])
        trials[rows, np.repeat(np.arange(support.size), outside.size)] = np.tile(
            outside, support.size
        )
        key, index, vector = _best(covariance, constraints, trials)
        if not _better(key, state[0]):
            return support, state, n_pass + 1, True
        support, state = trials[index], (key, vector)
    return support, state, max_passes, False


def _exhaustive(covariance, constraints, size):
    """The best of all ``C(p, size)`` supports: ``(support, state)`` as in :func:`_search`."""
    supports = np.array(list(itertools.combinations(range(covariance.shape[0]), size)))
    key, index, vector = _best(covariance, constraints, supports)
    return supports[index], (key, vector)


def _exhaustive_sizes(p, top):
    """For ``t = 0 .. top + 1``: whether ``C(p, t) <= EXHAUSTIVE_SUPPORTS``."""
    return [math.comb(p, t) <= EXHAUSTIVE_SUPPORTS for t in range(top + 2)]


def _search(covariance, constraints, levels, max_passes):
    """The best support at each size in ``levels``: all supports, or forward selection.

    A size with at most ``EXHAUSTIVE_SUPPORTS`` supports is searched
    exhaustively; another is reached by a forward step from the support of
    the size below, then exchanges. Each forward step only adds a feature, so
    ``lambda`` is non-decreasing in the size either way.

    Returns a list of ``(support, feasible, value, vector, search)`` (one per
    level, ascending; ``search`` is ``"exhaustive"`` or ``"greedy"``), the
    number of search steps and whether every exchange phase ended on its own
    (not at ``max_passes``).
    """
    p = covariance.shape[0]
    exact = _exhaustive_sizes(p, max(levels))
    support = np.zeros(0, dtype=np.intp)
    state = ((False, -p, -np.inf), np.zeros(0))
    found, steps, converged = [], 0, True
    for size in range(1, max(levels) + 1):
        if exact[size]:
            if size not in levels and exact[size + 1]:
                continue  # the next size is searched exhaustively too
            support, state = _exhaustive(covariance, constraints, size)
            steps += 1
        else:
            outside = np.setdiff1d(np.arange(p), support)
            trials = np.column_stack((np.repeat(support[None, :], outside.size, axis=0), outside))
            key, index, vector = _best(covariance, constraints, trials)
            support, state = trials[index], (key, vector)
            support, state, passes, ended = _exchange(
                covariance, constraints, support, state, max_passes
            )
            steps += 1 + passes
            converged &= ended
        if size in levels:
            (feasible, _, value), vector = state
            search = "exhaustive" if exact[size] else "greedy"
            found.append((support.copy(), feasible, value, vector, search))
    return found, steps, converged


def _loadings(support, vector, p):
    """The dense loading vector with ``vector`` on ``support``."""
    u = np.zeros(p)
    u[support] = vector
    return u


def _problem(moments):
    """``Sigma`` and an orthonormal basis of the mean differences.

    The basis and its rank rule are :class:`~fairpca.MeanMatchingFairPCA`'s, so
    that ``s >= p`` gives its components.
    """
    covariance = moments.covariance()
    return covariance, moments_constraint_bases(moments)[0]


def _infeasible(s, n_earlier):
    """The error for a component that no support of ``s`` features found can satisfy."""
    earlier = f" orthogonal to the {n_earlier} earlier component(s)" if n_earlier else ""
    return ValueError(
        f"no support of n_nonzero={s} features found that admits equal projected group "
        f"means{earlier}: "
        "with k groups a support needs more than k - 1 features (plus one per earlier "
        "component it overlaps); increase n_nonzero."
    )


def fair_sparse_components(moments, d, n_nonzero, max_iter=100):
    """``d`` orthonormal sparse fair components by forward selection with exchanges.

    Parameters
    ----------
    moments : GroupMoments
        Group moments of the data.
    d : int
        Number of components, at most ``p``.
    n_nonzero : int
        Cardinality bound ``s >= 1`` per component (``min(s, p)`` is used).
    max_iter : int, default=100
        Most exchange passes after each forward step.

    Returns
    -------
    components : ndarray of shape (d, p)
        Orthonormal rows with at most ``s`` non-zero entries each.
    steps : int
        Forward steps plus exchange passes, summed over the components.
    converged : bool
        False when an exchange phase stopped at ``max_iter``.
    search : {"exhaustive", "greedy"}
        Whether every support of ``s`` features was tried (at most
        ``EXHAUSTIVE_SUPPORTS`` of them) or forward selection with exchanges ran.

    Raises
    ------
    ValueError
        When the search finds no support that admits a feasible component.
    """
    covariance, fairness = _problem(moments)
    p = covariance.shape[0]
    s = min(n_nonzero, p)
    components = np.zeros((0, p))
    steps, converged, search = 0, True, "exhaustive"
    for j in range(d):
        constraints = np.column_stack((fairness, components.T))
        found, n_steps, ended = _search(covariance, constraints, [s], max_iter)
        support, feasible, _, vector, search = found[0]
        if not feasible:
            raise _infeasible(s, j)
        components = np.vstack((components, _loadings(support, vector, p)))
        steps, converged = steps + n_steps, converged and ended
    return components, steps, converged, search


def _check_n_nonzero(value, name="n_nonzero"):
    return int(check_number(value, name, minimum=1))


def _warn_exchanges(max_iter):
    warnings.warn(
        f"the exchange search stopped at max_iter={max_iter} passes with an exchange still "
        "raising the captured variance: the support is not exchange-optimal; raise max_iter.",
        ConvergenceWarning,
        stacklevel=4,
    )


def fair_sparse_pca_path(X, sensitive_features, n_nonzero_values, *, max_iter=100):
    """The first fair sparse component against its number of non-zero loadings.

    One forward-selection-with-exchanges run (see the module docstring)
    recorded at each requested size, so that the supports are found in order
    and the captured variance is non-decreasing in ``s``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training data.
    sensitive_features : array-like of shape (n_samples,)
        Group of each row (at least two groups).
    n_nonzero_values : sequence of int
        Sizes ``s >= 1`` to report; values above ``n_features`` count as
        ``n_features`` (the bound is then inactive).
    max_iter : int, default=100
        Most exchange passes after each forward step.

    Returns
    -------
    path : Bunch
        ``n_nonzero`` (m,): the sorted distinct sizes; ``feasible`` (m,):
        whether a support of that size admitting equal means was found (with
        ``k`` groups, in general ``s > k - 1``); ``loadings`` (m, p): unit
        loading vectors (largest ``|loading|`` positive; zero where not
        feasible);
        ``explained_variance_ratio`` (m,): ``u^T Sigma u / tr Sigma``;
        ``mean_gap`` (m,): largest ``|u^T (mu_a - mu)|`` over the groups (0
        up to rounding); both NaN where not feasible; ``search`` (m,):
        ``"exhaustive"`` where every support of that size was tried (at most
        ``EXHAUSTIVE_SUPPORTS``), ``"greedy"`` where forward selection with
        exchanges ran.

    Examples
    --------
    >>> from fairpca.datasets import make_gaussian_groups
    >>> from fairpca.sparse_pca import fair_sparse_pca_path
    >>> X, s = make_gaussian_groups(n_samples=400, n_features=8, random_state=0)
    >>> path = fair_sparse_pca_path(X, s, [2, 4, 8])
    >>> path.loadings.shape
    (3, 8)
    >>> (path.loadings != 0).sum(axis=1).tolist()
    [2, 4, 8]
    """
    values = np.atleast_1d(np.asarray(n_nonzero_values, dtype=object))
    if values.ndim != 1 or values.size == 0:
        raise ValueError("n_nonzero_values must be a non-empty sequence of ints.")
    sizes = sorted({_check_n_nonzero(v, "each of n_nonzero_values") for v in values})
    max_iter = check_number(max_iter, "max_iter", minimum=1)
    moments = GroupMoments.from_arrays(X, sensitive_features)
    if moments.n_groups < 2:
        raise ValueError("sensitive_features must hold at least two groups.")
    covariance, constraints = _problem(moments)
    p = covariance.shape[0]
    levels = sorted({min(s, p) for s in sizes})
    found, _, converged = _search(covariance, constraints, levels, max_iter)
    if not converged:
        _warn_exchanges(max_iter)
    by_level = dict(zip(levels, found, strict=True))
    loadings = np.zeros((len(sizes), p))
    feasible = np.array([by_level[min(s, p)][1] for s in sizes])
    for i, s in enumerate(sizes):
        if feasible[i]:
            support, _, _, vector, _ = by_level[min(s, p)]
            loadings[i] = flip_signs(_loadings(support, vector, p)[None, :])[0]
    variance = np.einsum("ip,pq,iq->i", loadings, covariance, loadings)
    total = np.trace(covariance)
    shifts = attribute_mean_shifts(moments)[0]
    gap = np.max(np.abs(shifts @ loadings.T), axis=0)
    return Bunch(
        n_nonzero=np.array(sizes),
        feasible=feasible,
        loadings=loadings,
        explained_variance_ratio=np.where(feasible, variance / total if total > 0 else 0.0, np.nan),
        mean_gap=np.where(feasible, gap, np.nan),
        search=np.array([by_level[min(s, p)][4] for s in sizes]),
    )


@document_require_groups
class FairSparsePCA(FairPCABase):
    r"""Sparse principal components fair to every group (Babu & Stoica, 2025).

    ``fairness="max-min"`` (the paper's problem): with ``B_a`` group
    ``a``'s second moment about the pooled mean, the loadings ``U`` (``p x d``,
    orthonormal columns) maximise

    .. math::

        \min_a \operatorname{tr}(U^T B_a U) - \rho \sum_{ij} \phi(U_{ij}),
        \qquad \phi(x) = \frac{\log(1 + x^2/\varepsilon^2)}{\log(1 + 1/\varepsilon^2)},

    the smallest group variance captured minus ``rho`` per (smoothed) non-zero
    loading, ``rho = penalty * lambda_max(sum_a pi_a B_a)`` (``pi_a`` the group
    proportions, ``eps = 0.03``). Minorization-maximization: each step
    maximises a minorizer (tangent planes of the convex captured variances and
    of the concave penalty) whose maximiser over ``U^T U <= I`` is orthonormal,
    through a dual over the group weights; the objective never decreases
    (``objective_path_``). Loadings below ``eps`` are then set to zero. With
    ``penalty=0`` this is the paper's fair PCA (dense). Derivation in
    :mod:`fairpca._sparse_pca_mm`.

    ``fairness="mean-matching"``: each component maximises the captured
    variance over unit loading vectors with at most ``n_nonzero`` non-zero
    entries on which every group has the same mean, orthogonal to the earlier
    components:

    .. math::

        u_j = \arg\max_u u^T \Sigma u \quad \text{s.t.} \quad \|u\|_2 = 1,\
        \|u\|_0 \le s,\ u^T (\mu_a - \mu) = 0\ \forall a,\
        u^T u_i = 0\ (i < j).

    For a fixed support the answer is an eigenvector (closed form); with at
    most ``EXHAUSTIVE_SUPPORTS`` supports all are tried (exact), otherwise
    forward selection with single exchanges returns a support no single
    exchange improves (not necessarily the global optimum). See the module
    docstring and :func:`~fairpca.sparse_pca.fair_sparse_pca_path` for the
    loadings against ``s``.

    Parameters
    ----------
    n_components : int or float, default=2
        Number of components ``d`` (a float in (0, 1): a share of variance,
        as in :class:`~fairpca.FairPCABase`).
    fairness : {"max-min", "mean-matching"}, default="mean-matching"
        The fairness notion (above). ``"max-min"`` is the paper's.
    penalty : float, default=0.1
        ``"max-min"`` only: the price of a non-zero loading as a share of the
        top pooled variance; 0 gives dense fair PCA, larger values sparser
        loadings (all zero once no loading earns its price).
    n_nonzero : int, default=5
        ``"mean-matching"`` only: largest number ``s`` of non-zero loadings
        per component; ``s >= p`` leaves the loadings dense (the components
        of :class:`~fairpca.MeanMatchingFairPCA`). With ``k`` groups a
        component needs ``s > k - 1`` in general.
    tol : float, default=1e-8
        ``"max-min"`` only: stop when the objective changes by at most this
        fraction of itself.
    max_iter : int, default=1000
        Most MM steps (``"max-min"``) or exchange passes after each forward
        step (``"mean-matching"``); reaching it issues a ``ConvergenceWarning``.
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Unit rows sorted by the training variance they explain. Orthogonal
        for ``"mean-matching"`` and for ``"max-min"`` with ``penalty=0``;
        with a penalty, orthogonal up to the dropped loadings (below 0.03).
    objective_ : float
        ``"max-min"``: the penalised objective at ``components_``; None otherwise.
    objective_path_ : ndarray of shape (n_iter_ + 1,)
        ``"max-min"``: the objective at each MM iterate (non-decreasing);
        None otherwise.
    support_search_ : {"exhaustive", "greedy"} or None
        ``"mean-matching"``: whether all supports were tried; None otherwise.
    mean_gap_ : float
        Largest ``|u_j^T (mu_a - mu)|`` over components and groups on the
        training data (0 up to rounding for ``"mean-matching"``); absent
        after a fit without groups.
    n_iter_ : int
        MM steps, or forward steps plus exchange passes summed over the components.
    converged_ : bool
        False when ``max_iter`` stopped the MM or an exchange phase.
    mean_, groups_, group_counts_, moments_, explained_variance_,
    explained_variance_ratio_, component_scales_, n_components_, n_features_in_
        As in :class:`~fairpca.FairPCABase`.

    Notes
    -----
    Without ``sensitive_features`` the fit follows the package's rule: dense
    group-blind PCA with a :class:`~fairpca.GroupBlindFitWarning` (or an
    error under ``require_groups``), not sparse PCA.

    See Also
    --------
    MinMaxLossFairPCA : Dense max-min fair PCA by its SDP relaxation
        (``objective="variance"``).
    MeanMatchingFairPCA : The dense mean-matching components.
    sklearn.decomposition.SparsePCA : Group-blind sparse PCA by an l1 penalty.

    References
    ----------
    .. [Babu2025] P. Babu and P. Stoica. "Fair principal component analysis
       (PCA): minorization-maximization algorithms for fair PCA, fair robust
       PCA and fair sparse PCA." TMLR 2025 (arXiv:2305.05963).

    Examples
    --------
    >>> import numpy as np
    >>> from fairpca import FairSparsePCA
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(n_samples=500, n_features=8, random_state=0)
    >>> est = FairSparsePCA(n_components=1, fairness="max-min", penalty=0.2, tol=1e-6)
    >>> est = est.fit(X, sensitive_features=s)
    >>> bool((np.diff(est.objective_path_) >= 0).all())
    True
    >>> est = FairSparsePCA(n_components=2, fairness="mean-matching", n_nonzero=3)
    >>> est = est.fit(X, sensitive_features=s)
    >>> (est.components_ != 0).sum(axis=1).tolist(), est.support_search_
    ([3, 3], 'exhaustive')
    >>> Z = est.transform(X)
    >>> bool(np.allclose(Z[s == 0].mean(axis=0), Z[s == 1].mean(axis=0)))
    True
    """

    _moments_only = True

    def __init__(
        self,
        n_components: int | float = 2,
        *,
        fairness: str = "mean-matching",
        penalty: float = 0.1,
        n_nonzero: int = 5,
        tol: float = 1e-8,
        max_iter: int = 1000,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.fairness = fairness
        self.penalty = penalty
        self.n_nonzero = n_nonzero
        self.tol = tol
        self.max_iter = max_iter
        self.require_groups = require_groups

    def _check_params(self):
        if self.fairness not in _FAIRNESS:
            raise ValueError(
                f"fairness must be one of {', '.join(map(repr, _FAIRNESS))}, got {self.fairness!r}."
            )
        check_number(self.penalty, "penalty", numbers.Real, minimum=0)
        _check_n_nonzero(self.n_nonzero)
        check_number(self.tol, "tol", numbers.Real, minimum=0, include_boundaries="neither")
        check_number(self.max_iter, "max_iter", minimum=1)

    def _fit_components(self, X, codes, moments, y, d):
        self.objective_ = self.objective_path_ = None
        self.support_search_ = None
        if self.fairness == "max-min":
            components = self._fit_max_min(moments, d)
        else:
            components, self.n_iter_, self.converged_, self.support_search_ = (
                fair_sparse_components(moments, d, int(self.n_nonzero), int(self.max_iter))
            )
            if not self.converged_:
                _warn_exchanges(self.max_iter)
        shifts = attribute_mean_shifts(moments)[0]
        self.mean_gap_ = constraint_gaps(moments, shifts, components)["mean_gap"]
        return components, None

    def _fit_max_min(self, moments, d):
        B = moments.second_moment(center="pooled")
        pooled = np.tensordot(moments.proportions, B, axes=1)
        rho = float(self.penalty) * top_eigh(pooled, 1)[0][0]
        result = max_min_sparse_pca(B, d, rho, tol=float(self.tol), max_iter=int(self.max_iter))
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        if not self.converged_:
            warnings.warn(
                f"the MM iteration stopped after {result.n_iter} steps with a relative "
                f"objective change of {result.change:.3g} > tol={self.tol:g}; raise max_iter.",
                ConvergenceWarning,
                stacklevel=4,
            )
        U = result.loadings
        self.objective_path_ = result.objective_path
        self.objective_ = max_min_objective(B, U, rho)
        return U.T
