"""Fair PCA by mean matching: the best subspace on which every group has the same mean.

Kleindessner, Donini, Russell and Zafar [Kleindessner2023]_ ask for the rank-``d``
projection keeping the most variance among those under which all groups have
the same projected mean. Writing the pooled mean ``mu``, the group means
``mu_a`` and the proportions ``w_a = n_a / n``, the constraint is
``V^T (mu_a - mu) = 0`` for every group ``a``: the columns of ``V`` lie in the
null space ``N`` of the (at most ``k - 1``-dimensional) span of the mean
differences, and the best such ``V`` is PCA of the data restricted to ``N``.
On the representation no linear function separates the groups on average,
so every linear classifier of it has the same mean output in every group
(demographic parity of linear predictors) [Belrose2023]_.

The covariance-matching variant (Kleindessner's FPCA-S) further restricts
``N`` to the ``covariance_rank`` directions where the group covariances differ
least. For two groups these are the eigenvectors of ``N^T (C_1 - C_0) N`` with
the smallest absolute eigenvalues; for ``k`` groups we take the eigenvectors
with the smallest eigenvalues of ``sum_a w_a (N^T (C_a - C_w) N)^2`` (``C_w``
the proportion-weighted mean of the group covariances ``C_a``), which reduces
to Kleindessner's choice when ``k = 2``. The group covariances are
``C_a = S_a / (n_a - ddof)`` with ``S_a`` the scatter about the group mean:
``ddof = 0`` (default, the maximum-likelihood normalisation used throughout
the package) or ``ddof = 1`` (``numpy.cov``'s, as in the authors' code),
chosen by ``covariance_ddof``.

Rank decisions do not depend on where the data sit: the constraint columns
are built from mean differences, and their rank counts singular values above
both ``1e-10 sqrt(trace Sigma)`` (a size of the centred data) and the
rounding of the stored means (``8 eps sqrt(p) max |mu_a|``, which grows with
the offset; :func:`mean_rounding`), capped at ``k - 1`` (plus one per
continuous attribute). Adding a constant to every row changes the fit only by
the rounding of the offset data.

Continuous sensitive attributes ``Z`` (e.g. age) have no groups; the linear
notion of fairness is the same one LEACE uses for any attribute: zero
cross-covariance ``V^T Cov(X, Z) = 0``, so that no linear function of the
representation is correlated with ``Z`` [Belrose2023]_. For a one-hot
categorical attribute this is exactly equal group means, so both kinds of
attribute give constraint columns of one family: ``B = [B_groups, B_Z]`` with
``B_groups`` the columns ``sqrt(w_a) (mu_a - mu)`` and
``B_Z = Cov(X, Z) Cov(Z)^{-1/2}``. In both cases ``B B^T`` is the covariance
of ``X`` explained linearly by the attribute (the between-group covariance,
respectively the covariance of the least-squares fit of ``X`` on ``Z``).

Everything is computed from :class:`~fairpca.GroupMoments`: the method fits
on Dask collections and streams chunks with ``partial_fit``. The functions
below compute in the namespace of the moments (NumPy, or torch, CuPy, ... on
their device: :mod:`fairpca._array_api`), with the standard's ``svd`` and
``eigh``.

References
----------
.. [Kleindessner2023] M. Kleindessner, M. Donini, C. Russell and M. B. Zafar.
   "Efficient fair PCA for fair representation learning." AISTATS 2023.
.. [Belrose2023] N. Belrose, D. Schneider-Joseph, S. Ravfogel, R. Cotterell,
   E. Raff and S. Biderman. "LEACE: Perfect linear concept erasure in closed
   form." NeurIPS 2023.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Literal

import numpy as np

from fairpca._array_api import like, namespace_of
from fairpca._base import FairPCABase
from fairpca._config import document_require_groups
from fairpca._linalg import top_eigh
from fairpca._validation import check_number

__all__ = [
    "MeanMatchingFairPCA",
    "attribute_mean_shifts",
    "constraint_bases",
    "constraint_columns",
    "covariate_columns",
    "constraint_rank_cap",
    "mean_matching_components",
    "mean_rounding",
    "moments_constraint_bases",
    "null_space",
]

#: Singular values of the constraint matrix below this fraction of the data's scale
#: are rounding noise: the group mean they stand for equals the pooled mean.
_RANK_RTOL = 1e-10

#: Unit roundoffs of the largest mean entry that a stored mean difference may be off
#: by, per coordinate (see :func:`mean_rounding`).
_MEAN_ROUNDING_ULPS = 8.0

_COVARIANCE_DDOFS = (0, 1)


_ATTRIBUTE_MODES = ("intersectional", "separate")


def attribute_mean_shifts(moments, attributes="intersectional"):
    """Mean differences ``mu_g - mu`` of the groups to equalise, and their proportions.

    With one attribute (or ``attributes="intersectional"``) ``g`` runs over the
    groups of ``moments``; with several attributes, whose groups are tuples of
    one value per attribute, ``attributes="separate"`` makes ``g`` run over the
    values of each attribute on its own (``mu_g`` the mean of the rows with
    that value, whatever their other attributes): each attribute's groups get
    equal means, the intersections need not.

    Returns
    -------
    shifts : ndarray of shape (m, p)
        In the namespace and on the device of the moments.
    proportions : ndarray of shape (m,)
        On the host (NumPy), as the counts.
    """
    if attributes not in _ATTRIBUTE_MODES:
        raise ValueError(f"attributes must be one of {_ATTRIBUTE_MODES}, got {attributes!r}.")
    xp, device = namespace_of(moments.means)
    shift = moments.means - moments.pooled_mean
    w = moments.proportions
    groups = moments.groups
    if attributes == "intersectional" or not isinstance(groups[0], tuple):
        return shift, w
    shifts, proportions = [], []
    for j in range(len(groups[0])):
        values = [g[j] for g in groups]
        for value in dict.fromkeys(values):
            rows = np.flatnonzero([v == value for v in values])
            proportions.append(w[rows].sum())
            members = xp.take(shift, xp.asarray(rows, device=device), axis=0)
            shifts.append(like(w[rows], shift) @ members / float(proportions[-1]))
    return xp.stack(shifts), np.array(proportions)


def mean_rounding(moments):
    r"""Absolute rounding level of the mean differences ``mu_a - mu`` of ``moments``.

    The means are stored as float64 numbers of the size of the data's offset
    ``M = max_a ||mu_a||_inf``, not of its spread: each entry carries a
    rounding error of a few unit roundoffs ``eps`` of ``M``, and so does any
    difference of two of them (the data themselves, once offset, are only
    known to ``eps M / 2`` per entry). Column norms and singular values of the
    constraint matrix ``B`` below

    .. math::

        \tau_{round} = c \, \varepsilon \, \sqrt{p} \, M, \qquad c = 8,

    cannot be told from zero, whatever the spread of the data: ``sqrt(p) c eps M``
    bounds the Frobenius norm of the rounding of ``B``'s columns (weights
    ``sqrt(w_a)`` with ``sum_a w_a = 1``), hence its spectral norm.

    Parameters
    ----------
    moments : GroupMoments

    Returns
    -------
    tau : float
    """
    if 0 in moments.means.shape:
        return 0.0
    xp, _ = namespace_of(moments.means)
    largest = float(xp.max(xp.abs(moments.means)))
    eps = float(xp.finfo(moments.means.dtype).eps)  # float32 on devices without float64
    return _MEAN_ROUNDING_ULPS * eps * np.sqrt(moments.n_features) * largest


def constraint_rank_cap(moments, attributes="intersectional"):
    """Most independent constraint columns :func:`constraint_columns` can have in exact arithmetic.

    ``k - 1`` for ``k`` groups (the weighted mean differences sum to zero);
    with ``attributes="separate"``, the sum over attributes of their number of
    values less one; plus one per continuous attribute.
    """
    groups = moments.groups
    k = int(np.count_nonzero(np.asarray(moments.counts) > 0))
    if attributes == "separate" and len(groups) and isinstance(groups[0], tuple):
        cap = sum(len({g[j] for g in groups}) - 1 for j in range(len(groups[0])))
        cap = min(cap, max(k - 1, 0))
    else:
        cap = max(k - 1, 0)
    return cap + moments.n_covariates


def constraint_columns(moments, attributes="intersectional"):
    """The directions a linearly fair map must remove, as columns ``B``, shape (p, m + q).

    ``B = [B_groups, B_Z]``: the weighted mean differences ``sqrt(w_g) (mu_g - mu)``
    (``g`` as in :func:`attribute_mean_shifts`) and :func:`covariate_columns`.
    ``B B^T`` is the covariance of ``X`` explained linearly by the attributes
    (for groups the between-group covariance, summed over attributes when
    separate); ``span(B)`` is the span of ``Cov(X, [one-hot groups, Z])``.
    """
    xp, _ = namespace_of(moments.means)
    groups = _weighted_columns(*attribute_mean_shifts(moments, attributes))
    return xp.concat((groups, covariate_columns(moments)), axis=1)


def covariate_columns(moments):
    """``Cov(X, Z) Cov(Z)^{-1/2}`` for the continuous attributes ``Z``, shape (p, q).

    Columns in the units of ``X`` whatever the units of ``Z``; ``B_Z B_Z^T`` is
    the covariance of the least-squares fit of ``X`` on ``Z``. Directions of
    ``Z`` without variance (collinear attributes) are dropped, so ``q`` may be
    smaller than the number of attributes; no attributes give ``q = 0``.
    """
    xp, device = namespace_of(moments.means)
    if moments.n_covariates == 0:
        return xp.zeros((moments.n_features, 0), dtype=moments.means.dtype, device=device)
    cov_xz, cov_zz = moments.cross_covariance()
    values, vectors = xp.linalg.eigh(cov_zz)
    # Ascending eigenvalues: those kept are the last ones.
    first = cov_zz.shape[0] - int(xp.count_nonzero(values > _RANK_RTOL * values[-1]))
    return cov_xz @ (vectors[:, first:] / xp.sqrt(values[first:]))


def check_continuous_attributes(value):
    """Validate a ``continuous_attributes`` parameter before any data is read.

    Allowed: None, a bool, or a list (tuple, array) of column names (str) or
    positions (int) of ``sensitive_features``.

    Raises
    ------
    TypeError
        For anything else (e.g. a float), naming the parameter and what it allows.
    """
    if value is None or isinstance(value, bool | np.bool_):
        return value
    allowed = (
        "continuous_attributes must be None, True/False, or a list of column names (str) "
        "or positions (int) of sensitive_features"
    )
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise TypeError(f"{allowed}; got {type(value).__name__} {value!r}.")
    bad = [
        item
        for item in value
        if isinstance(item, bool | np.bool_) or not isinstance(item, str | numbers.Integral)
    ]
    if bad:
        raise TypeError(f"{allowed}; got a list holding {type(bad[0]).__name__} {bad[0]!r}.")
    return value


def check_mean_penalty(mean_penalty, attributes):
    """Validate ``mean_penalty`` (``inf`` or a finite number >= 0) and ``attributes``.

    Returns
    -------
    mean_penalty : float
    """
    if not (isinstance(mean_penalty, float | np.floating) and mean_penalty == np.inf):
        mean_penalty = check_number(mean_penalty, "mean_penalty", numbers.Real, minimum=0.0)
    if attributes not in _ATTRIBUTE_MODES:
        raise ValueError(f"attributes must be one of {_ATTRIBUTE_MODES}, got {attributes!r}.")
    return float(mean_penalty)


def _weighted_columns(shifts, proportions):
    """``sqrt(w_g) (mu_g - mu)`` as columns: ``B B^T`` is the between-group covariance."""
    return (shifts * like(np.sqrt(proportions), shifts)[:, None]).T


def constraint_bases(constraints, scale, rtol=_RANK_RTOL, *, noise=0.0, max_rank=None):
    """Orthonormal bases of the span of the constraint columns and of its complement.

    The rank ``r`` counts the singular values of ``constraints`` above
    ``max(rtol * scale, noise)``, at most ``max_rank``. Both thresholds are
    absolute, in the units of the columns: ``scale`` is a size of the centred
    data (so the rule does not move when the data are translated), ``noise``
    the rounding the columns carry (e.g. :func:`mean_rounding`, which grows
    with the data's offset).

    Parameters
    ----------
    constraints : ndarray of shape (p, m)
        Constraint directions (columns); they may be linearly dependent or zero.
    scale : float
        Size of the centred data (e.g. the square root of the total variance):
        singular values of ``constraints`` below ``rtol * scale`` count as zero,
        so a group whose mean equals the pooled mean adds no constraint.
    rtol : float, default=1e-10
        Relative rank tolerance.
    noise : float, default=0.0
        Absolute rounding level of the columns; singular values below it count
        as zero too.
    max_rank : int or None, default=None
        The rank in exact arithmetic is at most this (e.g. ``k - 1`` mean
        differences of ``k`` groups): rounding never adds a direction beyond it.

    Returns
    -------
    span : ndarray of shape (p, r)
        Orthonormal columns spanning the ``r`` independent constraint directions.
    complement : ndarray of shape (p, p - r)
        Orthonormal columns spanning the null space of ``constraints.T``.
    """
    xp, device = namespace_of(constraints)
    p = constraints.shape[0]
    if constraints.shape[1] == 0:
        dtype = constraints.dtype
        return xp.zeros((p, 0), dtype=dtype, device=device), xp.eye(p, dtype=dtype, device=device)
    U, singular, _ = xp.linalg.svd(constraints, full_matrices=True)
    rank = int(xp.count_nonzero(singular > max(rtol * scale, noise)))
    if max_rank is not None:
        rank = min(rank, int(max_rank))
    return U[:, :rank], U[:, rank:]


def null_space(constraints, scale, rtol=_RANK_RTOL, *, noise=0.0, max_rank=None):
    """Orthonormal basis of the directions orthogonal to every constraint column, and the rank.

    See :func:`constraint_bases` for the parameters; returns ``(complement, r)``.
    """
    span, complement = constraint_bases(constraints, scale, rtol, noise=noise, max_rank=max_rank)
    return complement, span.shape[1]


def moments_constraint_bases(moments, attributes="intersectional", constraints=None):
    """:func:`constraint_bases` of :func:`constraint_columns` with the rank rule of the package.

    Singular values count when above both ``1e-10 sqrt(trace Sigma)`` (the
    centred data's scale) and :func:`mean_rounding` (the rounding of the
    stored means, which grows with the data's offset), and at most
    :func:`constraint_rank_cap` of them: the fit does not change when a
    constant is added to every row, up to the rounding of the offset data.

    Returns
    -------
    span, complement : ndarray
        As in :func:`constraint_bases`.
    """
    if constraints is None:
        constraints = constraint_columns(moments, attributes)
    xp, _ = namespace_of(moments.means)
    scale = float(np.sqrt(max(float(xp.sum(moments.variances)), 0.0)))
    return constraint_bases(
        constraints,
        scale,
        noise=mean_rounding(moments),
        max_rank=constraint_rank_cap(moments, attributes),
    )


def group_covariances(moments, ddof=0):
    """Group covariances ``C_a = S_a / (n_a - ddof)`` from the scatter matrices ``S_a``.

    ``ddof=0`` divides by the group size (the maximum-likelihood estimate, the
    convention of :meth:`GroupMoments.second_moment`); ``ddof=1`` by
    ``n_a - 1`` (the unbiased estimate of ``numpy.cov``'s default).
    """
    if ddof == 0:
        return moments.second_moment("group")
    counts = np.asarray(moments.counts, dtype=np.float64)
    if np.any(counts <= ddof):
        raise ValueError(
            f"covariance_ddof={ddof} divides each group's scatter by n_a - {ddof}: every "
            f"group needs more than {ddof} row(s); the smallest has {counts.min():g}."
        )
    return moments.scatters / like(counts - ddof, moments.scatters)[:, None, None]


def _covariance_matching_basis(moments, basis, rank, ddof=0):
    """The ``rank`` directions of ``span(basis)`` where the group covariances differ least."""
    xp, device = namespace_of(basis)
    covariances = group_covariances(moments, ddof)
    weights = moments.proportions
    within = xp.tensordot(like(weights, basis), covariances, axes=1)
    spread = xp.zeros((basis.shape[1],) * 2, dtype=basis.dtype, device=device)
    for a, w in enumerate(weights):
        D = basis.T @ (covariances[a, ...] - within) @ basis
        spread = spread + float(w) * (D @ D)
    # Smallest eigenvalues of the PSD spread: top eigenpairs of its negative.
    return basis @ top_eigh(-spread, rank)[1]


def mean_matching_components(
    moments,
    d,
    *,
    mean_penalty=np.inf,
    covariance_rank=None,
    attributes="intersectional",
    covariance_ddof=0,
):
    """Solve the mean-matching problem of :class:`MeanMatchingFairPCA` from moments.

    Parameters
    ----------
    moments : GroupMoments
        Per-group counts, means and scatter matrices of the data.
    d : int
        Target dimension.
    mean_penalty, covariance_rank, attributes, covariance_ddof
        As in :class:`MeanMatchingFairPCA` (validated by the caller).

    Returns
    -------
    components : ndarray of shape (d, p)
        Orthonormal rows (in decreasing order of training variance).
    n_constraints : int
        Independent constraint directions removed (0 unless ``mean_penalty`` is inf):
        the rank of the constraint columns by :func:`moments_constraint_bases`.
    gaps : dict
        ``"mean_gap"``: largest norm of a projected group-mean difference;
        ``"covariance_gap"``: largest norm of ``V^T Cov(X, z_j) / sd(z_j)``
        over the continuous attributes (0 without them).
    """
    covariance = moments.covariance()
    shifts = attribute_mean_shifts(moments, attributes)[0]
    constraints = constraint_columns(moments, attributes)
    p = moments.n_features
    if np.isinf(mean_penalty):
        span, basis = moments_constraint_bases(moments, attributes, constraints)
        rank = span.shape[1]
        free = p - rank
        if d > free:
            removed = "group-mean differences" + (
                " and cross-covariances with continuous attributes" if moments.n_covariates else ""
            )
            raise ValueError(
                f"n_components={d} is larger than the {free} dimensions left once the "
                f"{rank} independent directions of the {removed} are removed from the "
                f"{p} features; use n_components <= {free}."
            )
        if covariance_rank is not None:
            if moments.n_groups < 2:
                raise ValueError(
                    "covariance_rank needs at least two groups: with only continuous "
                    "sensitive attributes there are no group covariances to match."
                )
            if not d <= covariance_rank <= free:
                raise ValueError(
                    f"covariance_rank={covariance_rank} must lie between "
                    f"n_components={d} and the {free} dimensions left by mean matching."
                )
            basis = _covariance_matching_basis(moments, basis, covariance_rank, covariance_ddof)
        components = (basis @ top_eigh(basis.T @ covariance @ basis, d)[1]).T
    else:
        rank = 0
        components = top_eigh(covariance - mean_penalty * (constraints @ constraints.T), d)[1].T
    return components, rank, constraint_gaps(moments, shifts, components)


def constraint_gaps(moments, shifts, components):
    """How far ``components`` are from the constraints; see :func:`mean_matching_components`."""
    xp, _ = namespace_of(components)
    mean_gap = float(xp.max(xp.linalg.vector_norm(shifts @ components.T, axis=1)))
    covariance_gap = 0.0
    if moments.n_covariates:
        cov_xz, cov_zz = moments.cross_covariance()
        per_unit = (components @ cov_xz) / xp.sqrt(xp.linalg.diagonal(cov_zz))
        covariance_gap = float(xp.max(xp.linalg.vector_norm(per_unit, axis=0)))
    return {"mean_gap": mean_gap, "covariance_gap": covariance_gap}


@document_require_groups
class MeanMatchingFairPCA(FairPCABase):
    r"""Fair PCA whose projected group means are all equal (Kleindessner et al., 2023).

    Finds the ``d``-dimensional projection that keeps the most variance among
    those under which every group has the same mean:

    .. math::

        \max_{V \in \mathbb{R}^{p \times d},\ V^T V = I} \operatorname{tr}(V^T \Sigma V)
        \quad \text{s.t.} \quad V^T (\mu_a - \mu) = 0 \text{ for every group } a,

    with ``Sigma`` the covariance of all rows around the pooled mean ``mu``.
    The solution is PCA restricted to the null space of the mean differences
    (at most ``k - 1`` constraints for ``k`` groups): one SVD and one ``eigh``
    of ``p x p`` matrices, as PCA. Any linear classifier of the representation
    then has equal mean output in every group.

    Parameters
    ----------
    n_components : int, default=2
        Target dimension ``d``; at most ``p - r`` for ``r`` independent mean
        differences.
    mean_penalty : float, default=inf
        Trade-off between PCA (0) and exact mean matching (``inf``): the
        components are the top eigenvectors of ``Sigma - mean_penalty * Sigma_B``
        with ``Sigma_B = sum_a w_a (mu_a - mu)(mu_a - mu)^T`` the between-group
        covariance (``w_a`` the group proportions), i.e. they maximise the
        variance minus ``mean_penalty`` times the projected between-group
        variance. ``inf`` imposes the constraint exactly (null-space route).
    covariance_rank : int or None, default=None
        Kleindessner's covariance-matching variant (FPCA-S): within the null
        space of the mean differences keep only the ``covariance_rank``
        directions where the group covariances differ least (see the module
        docstring for ``k > 2``), then take PCA there. Needs
        ``n_components <= covariance_rank <= p - r`` and ``mean_penalty=inf``.
        ``None``: mean matching only.
    covariance_ddof : {0, 1}, default=0
        Normalisation of the group covariances ``C_a = S_a / (n_a - ddof)``
        (``S_a`` the scatter about the group mean) compared by
        ``covariance_rank``: ``0`` divides by the group size ``n_a`` (the
        maximum-likelihood estimate, the convention of every covariance in
        this package), ``1`` by ``n_a - 1`` (``numpy.cov``'s default, the
        convention of Kleindessner et al.'s code). The two differ by the
        factor ``n_a / (n_a - 1)`` per group, which does not cancel in
        ``C_1 - C_0`` when the groups differ in size, so the chosen
        directions (and the subspace) can differ markedly on small groups.
        Ignored without ``covariance_rank``.
    attributes : {"intersectional", "separate"}, default="intersectional"
        With several categorical sensitive attributes (``sensitive_features``
        of shape ``(n_samples, n_attributes)``, the groups being the
        intersections): ``"intersectional"`` equalises the mean of every
        intersection (e.g. every sex x race cell); ``"separate"`` only the
        means of each attribute's groups (every sex, every race), which
        removes fewer dimensions. Ignored with one categorical attribute.
    continuous_attributes : None, bool or list of str or int, default=None
        Which sensitive attributes are continuous (e.g. age): ``True`` for all,
        or the column names (DataFrame) or positions (array) within
        ``sensitive_features``. For them the constraint is zero
        cross-covariance ``V^T Cov(X, z) = 0``: no linear function of the
        representation correlates with ``z``. The other columns give the
        groups as usual; with only continuous attributes all rows form one
        group (``groups_ == [0]``). The cross-moments are accumulated with the
        group moments, so Dask input and ``partial_fit`` work as with groups.
    %(require_groups)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal rows, sorted by the training variance they explain.
    n_constraints_ : int
        Independent constraint directions ``r`` removed: mean differences and
        cross-covariances with continuous attributes (0 with ``mean_penalty=0``).
    mean_gap_ : float
        Largest norm of a projected mean difference ``||V^T (mu_a - mu)||`` on
        the training data (0 up to rounding with ``mean_penalty=inf``).
    covariance_gap_ : float
        Largest ``||V^T Cov(X, z_j)|| / sd(z_j)`` over the continuous attributes
        on the training data, in the units of ``X`` (0 without them; 0 up to
        rounding with ``mean_penalty=inf``).
    n_iter_, converged_ : int, bool
        1 and True: the solution is closed form.
    mean_, groups_, group_counts_, moments_, explained_variance_,
    explained_variance_ratio_, component_scales_, n_components_, n_features_in_
        As in :class:`~fairpca.FairPCABase`.

    See Also
    --------
    LinearErasure : The least-change edit of the data itself that makes the
        group means equal, keeping all ``p`` dimensions.

    References
    ----------
    .. [Kleindessner2023] M. Kleindessner, M. Donini, C. Russell and M. B. Zafar.
       "Efficient fair PCA for fair representation learning." AISTATS 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from fairpca import MeanMatchingFairPCA
    >>> from fairpca.datasets import make_gaussian_groups
    >>> X, s = make_gaussian_groups(n_samples=500, n_features=6, random_state=0)
    >>> est = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=s)
    >>> Z = est.transform(X)
    >>> bool(np.allclose(Z[s == 0].mean(axis=0), Z[s == 1].mean(axis=0)))
    True
    """

    _moments_only = True
    _supports_array_api = True
    _solves_in_namespace = True

    def __init__(
        self,
        n_components: int | float = 2,
        *,
        mean_penalty: float = np.inf,
        covariance_rank: int | None = None,
        attributes: Literal["intersectional", "separate"] = "intersectional",
        continuous_attributes: bool | Sequence[str | int] | None = None,
        covariance_ddof: int = 0,
        require_groups: bool = False,
    ) -> None:
        self.n_components = n_components
        self.mean_penalty = mean_penalty
        self.covariance_rank = covariance_rank
        self.covariance_ddof = covariance_ddof
        self.attributes = attributes
        self.continuous_attributes = continuous_attributes
        self.require_groups = require_groups

    def _continuous_columns(self):
        return check_continuous_attributes(self.continuous_attributes)

    def _check_params(self):
        penalty = check_mean_penalty(self.mean_penalty, self.attributes)
        ddof = self.covariance_ddof
        if isinstance(ddof, bool | np.bool_) or not (
            isinstance(ddof, numbers.Integral) and int(ddof) in _COVARIANCE_DDOFS
        ):
            raise ValueError(
                f"covariance_ddof must be 0 (divide group covariances by n_a) or 1 (by "
                f"n_a - 1), got {ddof!r}."
            )
        if self.covariance_rank is not None:
            check_number(self.covariance_rank, "covariance_rank", minimum=1)
            if not np.isinf(penalty):
                raise ValueError(
                    "covariance_rank needs mean_penalty=inf: the covariance-matching variant "
                    "works inside the exact null space of the mean differences."
                )
        return penalty

    def _fit_components(self, X, codes, moments, y, d):
        penalty = self._check_params()
        components, self.n_constraints_, gaps = mean_matching_components(
            moments,
            d,
            mean_penalty=penalty,
            covariance_rank=self.covariance_rank,
            attributes=self.attributes,
            covariance_ddof=int(self.covariance_ddof),
        )
        self.mean_gap_, self.covariance_gap_ = gaps["mean_gap"], gaps["covariance_gap"]
        self.n_iter_, self.converged_ = 1, True
        return components, None
