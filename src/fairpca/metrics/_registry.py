"""The metric registry: every reported column, its function, definition, direction and needs.

:data:`METRICS` drives :func:`fairpca.metrics.report` (its columns, in this
order), the report's legend (:func:`legend`, :func:`describe_metric`), the
metrics :func:`fairpca.tradeoff_curve` can bootstrap (rows with
``bootstrap=True``) and the check of a method against its own criterion
(``optimised_by``, read by :func:`fairpca.compare.result_flags`).
:data:`COLUMNS` describes the columns the workflows add beside the metrics
(fit time, convergence, flags).

Adding a metric is: its function of an :class:`Evaluation` (the rows, groups
and projection, with what the metrics share computed once), its row here, and
its test (``tests/test_metrics.py`` calls every row's function).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from itertools import combinations
from typing import Any, Literal

import numpy as np

from fairpca._validation import check_sensitive_features
from fairpca.metrics._classifier import (
    downstream_fairness,
    group_separability,
    prediction_scores,
)
from fairpca.metrics._mmd import mmd2
from fairpca.metrics._projection import (
    _group_means,
    _labels,
    _representation,
    _resolve_projection,
    _row_errors,
    is_linear_projection,
)
from fairpca.metrics._reconstruction import _optimal_group_errors, explained_variance_ratio
from fairpca.pareto import _WORSE_OFF_FACTOR, _WORSE_OFF_FLOOR

__all__ = [
    "COLUMNS",
    "METRICS",
    "Evaluation",
    "Metric",
    "bootstrap_metrics_names",
    "describe_metric",
    "legend",
    "metric_family",
    "own_criterion",
    "FLAGS",
    "LOW_VARIANCE_FRACTION",
    "NEAR_SINGLE_CLASS",
    "row_flags",
]

#: What a metric may need besides the rows and their groups.
NEEDS = ("y", "linear_projection", "bandwidth")


@dataclasses.dataclass(frozen=True)
class Metric:
    """One column of the report: how it is computed and how to read it.

    Attributes
    ----------
    name : str
        The column (``name[g]`` per group when ``per_group``).
    function : callable or None
        ``function(evaluation) -> float`` (``{group: float}`` when
        ``per_group``); None for a column a workflow fills (:data:`COLUMNS`).
    definition : str
        One line: what it measures (the report's legend).
    direction : {"lower", "higher"} or None
        Which values are better; None for a descriptive column.
    scale : str
        Its unit or range.
    needs : frozenset of str
        ``"y"`` (a binary target: the downstream classifier), ``"linear_projection"``
        (a rank-d reconstruction: NaN for other transformers), ``"bandwidth"``
        (an MMD bandwidth shared by every row of a table or resample).
    fairness : bool
        Measures a difference between groups (lower is fairer).
    bootstrap : bool
        Cheap enough to evaluate on each bootstrap resample: offered by
        :func:`fairpca.tradeoff_curve`.
    per_group : bool
        One value per group.
    optimised_by : tuple of str
        The methods whose own criterion it is (a fair method doing worse than
        PCA on it is flagged).
    reading : str
        How to read the direction, when not the default ("lower is fairer",
        "lower is better", "higher is better").
    """

    name: str
    function: Callable[[Evaluation], Any] | None
    definition: str
    direction: Literal["lower", "higher"] | None
    scale: str
    needs: frozenset = frozenset()
    fairness: bool = False
    bootstrap: bool = False
    per_group: bool = False
    optimised_by: tuple = ()
    reading: str = ""

    def __post_init__(self):
        unknown = set(self.needs) - set(NEEDS)
        if unknown:
            raise ValueError(f"{self.name}: unknown needs {sorted(unknown)}; choose from {NEEDS}.")

    @property
    def key(self) -> str:
        """Its key in the legend: ``name[g]`` for a per-group metric."""
        return f"{self.name}[g]" if self.per_group else self.name

    @property
    def direction_text(self) -> str:
        """How to read its values ("lower is fairer", ...; "" for a descriptive column)."""
        if self.reading or self.direction is None:
            return self.reading
        if self.direction == "higher":
            return "higher is better"
        return "lower is fairer" if self.fairness else "lower is better"

    def worse(self, value: float, reference: float) -> bool:
        """Whether ``value`` is worse than ``reference`` in this metric's direction."""
        return value < reference if self.direction == "higher" else value > reference


class Evaluation:
    """The rows one projection is scored on, and what several metrics share, computed once.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Validated rows.
    sensitive_features : array-like of shape (n_samples,)
        Their groups (at least two).
    projection : projection or fitted transformer
        As in :mod:`fairpca.metrics`.
    y : ndarray or None
        Binary target of the rows (for the downstream metrics).
    predicted : ndarray or None
        A held-out classifier's predictions of ``y`` on these rows
        (:func:`~fairpca.metrics._classifier.held_out_predictions`); without
        them, the downstream metrics cross-validate a classifier on the rows
        (:func:`fairpca.metrics.downstream_fairness`).
    bandwidth : float or None
        RBF bandwidth of the MMD.
    random_state, classifier, cv
        Of the cross-validated classifier metrics.
    optimal : dict or None
        Cache of the groups' own optimal errors by ``(d, centre)``, shared by
        the evaluations of projections fitted on the same data.
    resolved, dimension : optional
        The resolved linear projection and the representation's dimension,
        when the caller has them.
    """

    def __init__(
        self,
        X,
        sensitive_features,
        projection,
        *,
        y=None,
        predicted=None,
        bandwidth=None,
        random_state=None,
        classifier="rbf_svm",
        cv=5,
        optimal=None,
        resolved=None,
        dimension=None,
    ):
        self.X, self.s, self.projection = X, sensitive_features, projection
        self.y, self.predicted, self.bandwidth = y, predicted, bandwidth
        self.random_state, self.classifier, self.cv = random_state, classifier, cv
        self.optimal = {} if optimal is None else optimal
        # Already known to the caller (report validates every projection first).
        if resolved is not None:
            self.resolved = resolved
        if dimension is not None:
            self.dimension = dimension

    @functools.cached_property
    def groups(self):
        return check_sensitive_features(self.s, self.X.shape[0], min_groups=2)

    @property
    def codes(self) -> np.ndarray:
        return self.groups[1]

    @property
    def labels(self) -> list:
        return _labels(self.groups[0])

    @functools.cached_property
    def linear(self) -> bool:
        return is_linear_projection(self.projection)

    @functools.cached_property
    def resolved(self):
        """``(components, scales, mean, d)`` of a linear projection."""
        return _resolve_projection(self.projection, self.X)

    @functools.cached_property
    def dimension(self) -> int:
        if self.linear:
            return self.resolved[3]
        return _representation(self.projection, self.X)[1]

    @functools.cached_property
    def row_errors(self) -> np.ndarray:
        components, scales, mean, _ = self.resolved
        return _row_errors(self.X, components, scales, mean)

    @functools.cached_property
    def _group_errors(self):
        return _group_means(self.row_errors, self.codes, len(self.labels))

    @property
    def group_errors(self) -> np.ndarray:
        return self._group_errors[0]

    @functools.cached_property
    def losses(self) -> np.ndarray:
        """Each group's marginal loss: its error minus that of its own best rank-d projection."""
        _, _, mean, d = self.resolved
        key = (d, mean.tobytes())
        if key not in self.optimal:
            self.optimal[key] = _optimal_group_errors(self.X, self.codes, len(self.labels), mean, d)
        return self.group_errors - self.optimal[key]

    @functools.cached_property
    def disparities(self) -> np.ndarray:
        """Each group's disparity error (its marginal loss times its rows)."""
        return self.losses * self._group_errors[1]

    @functools.cached_property
    def downstream(self) -> dict:
        """The downstream classifier's scores: held out when ``predicted`` is given, else CV."""
        if self.predicted is not None:
            return prediction_scores(self.y, self.predicted, self.s)
        return downstream_fairness(
            self.X,
            self.y,
            self.s,
            self.projection,
            classifier=self.classifier,
            cv=self.cv,
            random_state=self.random_state,
        )


def _per_group(values):
    return lambda ev: dict(zip(ev.labels, getattr(ev, values).tolist(), strict=True))


def _downstream(name):
    return lambda ev: ev.downstream[name]


def _max_abs_pairwise(ev):
    disp = dict(zip(ev.labels, ev.disparities.tolist(), strict=True))
    return max(abs(disp[a] - disp[b]) for a, b in combinations(ev.labels, 2))


_LINEAR = frozenset({"linear_projection"})
_Y = frozenset({"y"})
_UNITS = "mean per row, units of X squared"

#: Every metric of the report, in the order of its columns.
#: Keyed by :attr:`Metric.key` (``name[g]`` for a per-group metric).
METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric(
            "n_components",
            lambda ev: ev.dimension,
            "target dimension d asked for (the fitted columns: n_components_)",
            None,
            "count",
        ),
        Metric(
            "explained_variance_ratio",
            lambda ev: explained_variance_ratio(ev.X, ev.projection),
            "share of the held-out variance the projection keeps",
            "higher",
            "fraction",
            needs=_LINEAR,
            reading="higher keeps more",
        ),
        Metric(
            "reconstruction_error",
            lambda ev: float(ev.row_errors.mean()),
            "squared distance between a held-out row and its reconstruction (ARE)",
            "lower",
            _UNITS,
            needs=_LINEAR,
        ),
        Metric(
            "reconstruction_error_gap",
            lambda ev: max(ev.group_errors.tolist()) - min(ev.group_errors.tolist()),
            "largest minus smallest group reconstruction error (ABDiff)",
            "lower",
            _UNITS,
            needs=_LINEAR,
            fairness=True,
            bootstrap=True,
            optimised_by=("RobustFairPCA",),
        ),
        Metric(
            "max_marginal_loss",
            lambda ev: max(ev.losses.tolist()),
            "largest group marginal loss: the group's reconstruction error minus that "
            "of its own best rank-d projection",
            "lower",
            _UNITS,
            needs=_LINEAR,
            fairness=True,
            bootstrap=True,
            optimised_by=("MinMaxLossFairPCA",),
        ),
        Metric(
            "max_disparity_error",
            lambda ev: max(ev.disparities.tolist()),
            "largest group disparity error (marginal loss times the group's rows, Kamani et al.)",
            "lower",
            "sum over the group's rows",
            needs=_LINEAR,
            fairness=True,
        ),
        Metric(
            "mean_disparity_error",
            lambda ev: float(np.mean(ev.disparities.tolist())),
            "mean of the groups' disparity errors",
            "lower",
            "sum over the group's rows",
            needs=_LINEAR,
            fairness=True,
        ),
        Metric(
            "max_abs_pairwise_disparity_error",
            _max_abs_pairwise,
            "largest difference between two groups' disparity errors",
            "lower",
            "sum over rows",
            needs=_LINEAR,
            fairness=True,
            optimised_by=("ParetoFairPCA",),
        ),
        Metric(
            "mmd2",
            lambda ev: mmd2(ev.X, ev.s, ev.projection, bandwidth=ev.bandwidth),
            "largest squared MMD between two groups' representations (RBF kernel, one bandwidth)",
            "lower",
            "0 for equal distributions",
            needs=frozenset({"bandwidth"}),
            fairness=True,
            bootstrap=True,
            optimised_by=("MMDFairPCA", "ConvexFairPCA"),
        ),
        Metric(
            "group_separability",
            lambda ev: group_separability(
                ev.X, ev.s, ev.projection, cv=ev.cv, random_state=ev.random_state
            ),
            "largest KS distance between two groups' out-of-fold scores of a linear classifier "
            "of the group",
            "lower",
            "0 (inseparable) to 1",
            fairness=True,
            # Not LinearErasure's: its guarantee is linear (no covariance between the
            # representation and the groups), which a flexible classifier may still read.
            optimised_by=("MeanMatchingFairPCA", "FairKernelPCA"),
        ),
        Metric(
            "reconstruction_error",
            _per_group("group_errors"),
            "group g's reconstruction error",
            "lower",
            "mean per row",
            needs=_LINEAR,
            per_group=True,
        ),
        Metric(
            "marginal_loss",
            _per_group("losses"),
            "group g's marginal loss",
            "lower",
            "mean per row",
            needs=_LINEAR,
            per_group=True,
        ),
        Metric(
            "disparity_error",
            _per_group("disparities"),
            "group g's disparity error",
            "lower",
            "sum over its rows",
            needs=_LINEAR,
            per_group=True,
        ),
        Metric(
            "accuracy",
            _downstream("accuracy"),
            "cross-validated accuracy of the downstream classifier of the target",
            "higher",
            "fraction",
            needs=_Y,
        ),
        Metric(
            "demographic_parity_difference",
            _downstream("demographic_parity_difference"),
            "largest gap between groups' rates of positive predictions (ΔDP)",
            "lower",
            "fraction",
            needs=_Y,
            fairness=True,
            bootstrap=True,
        ),
        Metric(
            "equal_opportunity_difference",
            _downstream("equal_opportunity_difference"),
            "largest gap between groups' true-positive rates",
            "lower",
            "fraction",
            needs=_Y,
            fairness=True,
            bootstrap=True,
        ),
        Metric(
            "equalized_odds_difference",
            _downstream("equalized_odds_difference"),
            "largest gap between groups' true- or false-positive rates (ΔEO)",
            "lower",
            "fraction",
            needs=_Y,
            fairness=True,
            bootstrap=True,
        ),
        Metric(
            "positive_rate",
            _downstream("positive_rate"),
            "share of rows the downstream classifier predicts positive (0 or 1: one class only)",
            None,
            "fraction",
            needs=_Y,
        ),
    )
}

#: A downstream classifier predicting positive for fewer than this share of the
#: held-out rows, or more than ``1 -`` it, is flagged ``near-single-class``.
NEAR_SINGLE_CLASS = 0.02

#: A projection keeping less than this multiple of PCA's held-out explained variance
#: ratio is flagged ``low-variance``.
LOW_VARIANCE_FRACTION = 0.5

#: The flags of a report's row (``compare``'s table, ``tradeoff``'s curve) and what each
#: says; :func:`row_flags` sets them.
FLAGS = {
    "near-single-class": (
        f"the downstream classifier predicts positive for under {NEAR_SINGLE_CLASS:.0%} or "
        f"over {1 - NEAR_SINGLE_CLASS:.0%} of the held-out rows, so its parity gaps (near 0) "
        "say little about fairness"
    ),
    "undetermined": (
        "the components are not determined by the problem (tied eigenvalues at the cut, "
        "the estimator's ambiguous_): an equally optimal projection could give other numbers"
    ),
    "low-variance": (
        f"it keeps less than {LOW_VARIANCE_FRACTION:g} x PCA's share of the held-out variance"
    ),
    "worse-than-PCA": "on the held-out rows it does worse than PCA on its own criterion",
}


def row_flags(
    values: Any,
    reference: Any = None,
    *,
    method: str | None = None,
    estimator: Any = None,
) -> list[str]:
    """The :data:`FLAGS` of one row of a report.

    Parameters
    ----------
    values : mapping
        The row's columns (``positive_rate``, ``explained_variance_ratio``, the
        method's own criterion), missing or NaN when not measured.
    reference : mapping, default=None
        PCA's row, for ``low-variance`` and ``worse-than-PCA`` (None: not judged).
    method : str, default=None
        The method's name, whose own criterion (:func:`own_criterion`) is checked.
    estimator : fitted estimator, default=None
        Read for ``ambiguous_`` (any estimator that sets it True is ``undetermined``).

    Returns
    -------
    flags : list of str
        ``near-single-class``, ``undetermined``, ``low-variance``,
        ``worse-than-PCA:<column>``, in that order.
    """

    def value(row, column):
        try:
            return float(row[column])
        except (KeyError, TypeError, ValueError):
            return np.nan

    flags = []
    rate = value(values, "positive_rate")
    if rate < NEAR_SINGLE_CLASS or rate > 1 - NEAR_SINGLE_CLASS:
        flags.append("near-single-class")
    if getattr(estimator, "ambiguous_", False) is True:
        flags.append("undetermined")
    if reference is not None:
        kept, pca = (
            value(values, "explained_variance_ratio"),
            value(reference, "explained_variance_ratio"),
        )
        if kept < LOW_VARIANCE_FRACTION * pca:
            flags.append("low-variance")
        criterion = None if method is None else own_criterion(str(method))
        if criterion is not None:
            mine, theirs = value(values, criterion.name), value(reference, criterion.name)
            if criterion.worse(mine, theirs):
                flags.append(f"worse-than-PCA:{criterion.name}")
    return flags


#: The columns a workflow adds beside the metrics (no metric function).
COLUMNS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            "converged", None, "whether the method's solver met its stopping rule", None, "yes/no"
        ),
        Metric(
            "n_components_",
            None,
            "columns of the fitted representation (the estimator's n_components_, else the "
            "width of transform): can exceed d, e.g. MinMaxLossFairPCA's rank bound with more "
            "than two groups",
            None,
            "count",
        ),
        Metric("fit_seconds", None, "wall-clock time of the fit", None, "seconds"),
        Metric(
            "flags",
            None,
            "reasons not to read the row at face value: "
            + "; ".join(f"{name}: {meaning}" for name, meaning in FLAGS.items()),
            None,
            "",
        ),
        Metric(
            "groups_worse_off_than_PCA",
            None,
            "the groups this method serves worse than PCA does, on the held-out rows: a group's "
            f"per-row marginal loss above {_WORSE_OFF_FACTOR:g} x the larger of its PCA loss and "
            f"{_WORSE_OFF_FLOOR:g} x the groups' mean PCA loss (ParetoFairPCA's rule); 'none' "
            "when no group is; empty for a method "
            "that is not a linear projection (FairKernelPCA, LinearErasure: no rank-d "
            "reconstruction, so no marginal loss); per group: group_losses.csv",
            None,
            "",
        ),
    )
}


def metric_family(column: str) -> str:
    """The key of a column in the registry: ``name[g]`` for any ``name[...]``."""
    return column.split("[", 1)[0] + "[g]" if "[" in column else column


def _row(column):
    family = metric_family(column)
    return METRICS.get(family) or COLUMNS.get(family)


def describe_metric(column: str) -> str:
    """One line saying what a report column measures, its direction and scale."""
    row = _row(column)
    if row is None:
        return f"{column}: "
    extras = "; ".join(part for part in (row.direction_text, row.scale) if part)
    return f"{column}: {row.definition}" + (f" ({extras})" if extras else "")


def legend(columns: Iterable[str]) -> list[str]:
    """The report's legend: one :func:`describe_metric` line per column family, in order."""
    return list(dict.fromkeys(describe_metric(metric_family(str(c))) for c in columns))


def bootstrap_metrics_names() -> tuple[str, ...]:
    """The fairness metrics :func:`fairpca.tradeoff_curve` can bootstrap, in registry order."""
    return tuple(m.name for m in METRICS.values() if m.bootstrap)


def own_criterion(method: str) -> Metric | None:
    """The metric ``method`` optimises (``Metric.optimised_by``), or None."""
    return next((m for m in METRICS.values() if method in m.optimised_by), None)
