"""Compare every fair-PCA method with PCA on one train/test split.

:func:`compare_methods` splits and standardises a data set, :func:`compare_split`
takes a split a paper's protocol prepared; both fit every available method at
its defaults on the training part, evaluate every metric of
:func:`fairpca.metrics.report` on the test part and return a :class:`Comparison`.
The ``fairpca compare`` command is a thin layer over them that writes files.

A method can be given a time budget: it is then fitted in a child process that
is stopped when the budget runs out, and the method is reported as stopped
rather than silently dropped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

import fairpca._reports as _reports
from fairpca._fitting import FitOutcome, as_input_for, failure_reason, fit_method
from fairpca._fitting import check_time_budget as _check_budget
from fairpca._fitting import fit_estimator as _fit  # noqa: F401 - the old private name
from fairpca._group_outcomes import WORSE_OFF_COLUMN, group_outcomes, worse_off_groups
from fairpca._methods import (  # noqa: F401 - MAX_D_VALUES, REFIT_SECONDS: their old home
    MAX_D_VALUES,
    REFIT_SECONDS,
    fit_all,
    group_errors_by_d,
    make_methods,
)
from fairpca._reports import (
    NOISY_GROUP_ROWS,  # noqa: F401 - its old home
    every_method_table,
    noisy_groups,
)
from fairpca._validation import check_n_components
from fairpca.datasets._split import MIN_GROUP_ROWS, Split, make_split
from fairpca.metrics import mmd_bandwidth, report
from fairpca.metrics._classifier import downstream_baselines
from fairpca.metrics._projection import _resolve_projection, is_linear_projection
from fairpca.metrics._registry import METRICS, row_flags

if TYPE_CHECKING:
    import pandas as pd
    from sklearn.base import BaseEstimator

__all__ = [
    "MIN_GROUP_ROWS",
    "Comparison",
    "FitOutcome",
    "as_input_for",
    "compare_methods",
    "compare_split",
    "every_method_table",
    "failure_reason",
    "fit_method",
    "make_methods",
    "make_split",
    "noisy_groups",
    "result_flags",
]


@dataclass
class Comparison:
    """What a comparison produced.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per fitted method (:func:`every_method_table` adds the others,
        with their status and reason): the columns of :func:`fairpca.metrics.report`
        on the test part, ``converged`` (the estimator's ``converged_``; True for
        PCA, solved in closed form) and ``fit_seconds`` (wall-clock time of the fit).
    estimators : dict
        Method name -> fitted estimator, in the order of ``table``.
    split : fairpca.experiments.Split
        The standardised train and test parts the methods saw.
    outcomes : dict
        Method name -> :class:`FitOutcome`, for every method asked for;
        ``unavailable``, ``stopped`` and ``failed`` read it.
    n_components : int
        Target dimension of every method.
    random_state : int
        Seed of every randomised method and metric.
    time_budget : float or None
        Seconds each method was allowed to fit (None: no limit).
    methods : list of str or None
        The methods asked for (None: every method).
    group_outcomes : pandas.DataFrame or None
        Per method and group, on the test part: per-row reconstruction error
        and marginal loss, PCA's, and whether the group is worse off than
        under PCA (:func:`group_outcomes`).
    baselines : pandas.DataFrame or None
        The downstream metrics of two references, by the same protocol: the
        majority class and the classifier on all features
        (:func:`fairpca.metrics._classifier.downstream_baselines`); None
        without a binary target. The reports show them as rows of the table.
    """

    table: object
    estimators: dict
    split: object
    outcomes: dict = field(default_factory=dict)
    n_components: int = 2
    random_state: int = 0
    time_budget: float | None = None
    methods: list | None = None
    group_outcomes: object = None
    baselines: object = None

    def _reasons(self, status):
        return {name: o.reason for name, o in self.outcomes.items() if o.status == status}

    @property
    def unavailable(self) -> dict:
        """Method name -> why it could not run (a missing extra, data too wide)."""
        return self._reasons("unavailable")

    @property
    def stopped(self) -> dict:
        """Method name -> the time budget in seconds at which its fit was stopped."""
        return dict.fromkeys(self._reasons("stopped"), self.time_budget)

    @property
    def failed(self) -> dict:
        """Method name -> why its fit raised (the exception's type and first line)."""
        return self._reasons("failed")

    def write_report(
        self,
        path: str | os.PathLike,
        *,
        source: str | None = None,
        force: bool = False,
        progress: Callable[[str], object] | None = None,
        by_d: bool = True,
    ) -> list[str]:
        """Write the comparison's report into the folder ``path``, which appears whole.

        The files of ``fairpca compare --output``: ``comparison.csv`` (every
        method asked for, with its status), ``comparison.md``, ``report.html``
        (one self-contained file), ``group_errors_by_d.csv``,
        ``group_losses.csv`` and the PNG plots (trade-off, per-group error at d
        and against d, biplot, communality). The methods are refitted at other
        d for the plot against d (unless ``by_d`` is False: then no refit, no
        ``group_errors_by_d`` file, and the report says so). Everything is
        written in a staging folder beside ``path`` and renamed into place once
        complete; ``path`` is locked meanwhile.

        Parameters
        ----------
        path : path-like
            The folder (created if needed).
        source : str, default=None
            What the data are, for the report (default: the split's description).
        force : bool, default=False
            Replace a non-empty ``path`` (all of it, once the new one is complete).
        progress : callable, default=None
            Called with a line per refit.
        by_d : bool, default=True
            Refit at other d for the per-group error against d.

        Returns
        -------
        written : list of str
            The files' names.

        Raises
        ------
        ValueError
            ``path`` cannot be written, or is not empty without ``force``.
        RuntimeError
            Another run is writing ``path`` (it holds the lock).
        OSError
            Writing failed; ``path`` is left as it was.
        """
        return _reports.write_comparison_report(
            self, path, source=source, force=force, progress=progress, by_d=by_d
        )


def fitted_columns(estimator: BaseEstimator, X: ArrayLike) -> int:
    """The columns of ``estimator``'s representation: its ``n_components_``, else its width.

    Can exceed the requested d: ``MinMaxLossFairPCA`` with more than two groups
    may keep up to its documented rank bound.
    """
    columns = getattr(estimator, "n_components_", None)
    if columns is None:
        columns = estimator.transform(as_input_for(estimator, X[:1])).shape[1]
    return int(columns)


def _binary_or_none(split, progress):
    """The test target for the downstream metrics, or None when it is not binary.

    A protocol's target may have more classes (Vu et al.'s FairML sets carry
    a multi-class label): the downstream classifier metrics need two, so they
    are left out, with a progress line, rather than ending the comparison.
    """
    if split.y_test is None:
        return None
    classes = np.unique(np.concatenate([np.asarray(split.y_train), np.asarray(split.y_test)]))
    if len(classes) == 2:
        return split.y_test
    if progress is not None:
        progress(
            f"the target has {len(classes)} classes: the downstream classifier metrics, "
            "which need two, are left out"
        )
    return None


def _metric_table(split, fitted, y_test, random_state, progress):
    """:func:`fairpca.metrics.report` of the fitted methods, with a progress line per method.

    Without ``progress``, one call. With it, one call per method, each with the
    MMD bandwidth the single call would use (from the first linear
    projection's d), so that the table is the same.
    """
    if progress is None:
        return report(split.X_test, split.s_test, fitted, y=y_test, random_state=random_state)
    import pandas as pd

    linear = [est for est in fitted.values() if is_linear_projection(est)]
    if linear:
        first_d = _resolve_projection(linear[0])[3]
    else:
        widths = [fitted_columns(est, split.X_test) for est in fitted.values()]
        first_d = min(*widths, split.X_test.shape[1])
    bandwidth = mmd_bandwidth(split.X_test, first_d, random_state=random_state)
    rows = []
    for i, (name, est) in enumerate(fitted.items(), start=1):
        step = f"[metrics {i}/{len(fitted)}] {name}"
        progress(f"{step} computing the metrics on the held-out rows ...")
        start = time.perf_counter()
        rows.append(
            report(
                split.X_test,
                split.s_test,
                {name: est},
                y=y_test,
                bandwidth=bandwidth,
                random_state=random_state,
            )
        )
        progress(f"{step} done in {time.perf_counter() - start:.2f} s")
    return pd.concat(rows)


def compare_split(
    split: Split,
    *,
    n_components: int = 2,
    random_state: int = 0,
    time_budget: float | None = None,
    progress: Callable[[str], object] | None = None,
    methods: list[str] | None = None,
) -> Comparison:
    """Fit every method on a prepared split and evaluate all metrics on its test part.

    Parameters
    ----------
    split : fairpca.experiments.Split
        Train and test parts, already standardised (as a paper's protocol
        prepares them, or :func:`compare_methods` does).
    n_components : int, default=2
        Target dimension of every method.
    random_state : int, default=0
        Seed of every randomised method and metric.
    time_budget : float or None, default=None
        Seconds each method may take to fit. A method that needs longer is
        stopped and listed in ``Comparison.stopped``. With a budget every fit
        runs in a child process (the estimators come back by pickling).
    progress : callable or None, default=None
        Called with a one-line message before and after each method's fit, and
        before and after each method's metrics (``"[metrics i/n] name ..."``).
    methods : list of str or None, default=None
        Names of the methods to compare (see :func:`make_methods`); PCA, the
        reference, is always included. None: every method.

    Returns
    -------
    Comparison
    """
    check_n_components(n_components, split.X_train.shape[1])
    time_budget = _check_budget(time_budget)
    # Unknown names (or a supervised method without a target): before any fit.
    make_methods(n_components, random_state, names=methods, supervised=split.y_train is not None)
    outcomes = fit_all(split, n_components, random_state, time_budget, progress, names=methods)
    fitted = {name: o.estimator for name, o in outcomes.items() if o.status == "fitted"}
    y_test = _binary_or_none(split, progress)
    if fitted:
        table = _metric_table(split, fitted, y_test, random_state, progress)
    else:  # every method failed: the outcomes say why
        import pandas as pd

        table = pd.DataFrame(index=pd.Index([], name="method"))
    # Per group, on the test part: the groups each method serves worse than PCA.
    outcomes_by_group = group_outcomes(split.X_test, split.s_test, fitted) if fitted else None
    worse = worse_off_groups(outcomes_by_group)
    table[WORSE_OFF_COLUMN] = [worse.get(name, "") for name in table.index]
    if "n_components" in table:  # the columns as fitted, beside the d asked for
        position = table.columns.get_loc("n_components") + 1
        widths = [fitted_columns(fitted[name], split.X_test) for name in table.index]
        table.insert(position, "n_components_", widths)
    # An iterative solver that stopped early sets converged_ = False; a method
    # without the attribute (PCA) is solved in closed form.
    table["converged"] = [bool(getattr(fitted[name], "converged_", True)) for name in table.index]
    table["fit_seconds"] = [outcomes[name].seconds for name in table.index]
    table["flags"] = [" ".join(flags) for flags in result_flags(table, fitted).values()]
    baselines = None
    if y_test is not None and fitted:
        import pandas as pd

        rows = downstream_baselines(split.X_test, y_test, split.s_test, random_state=random_state)
        baselines = pd.DataFrame.from_dict(rows, orient="index")
        baselines.index.name = table.index.name
        baselines["flags"] = [" ".join(row_flags(row)) for _, row in baselines.iterrows()]
    return Comparison(
        table=table,
        estimators=fitted,
        split=split,
        outcomes=outcomes,
        n_components=n_components,
        random_state=random_state,
        time_budget=time_budget,
        methods=methods,
        group_outcomes=outcomes_by_group,
        baselines=baselines,
    )


def compare_methods(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    y: ArrayLike | None = None,
    *,
    n_components: int = 2,
    test_size: float = 0.3,
    random_state: int = 0,
    time_budget: float | None = None,
    progress: Callable[[str], object] | None = None,
) -> Comparison:
    """Split ``X``, then fit every method on the training part and evaluate it on the rest.

    The split is stratified by group; features are standardised with the
    training mean and standard deviation (the papers' protocol).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Numeric features.
    sensitive_features : ndarray of shape (n_samples,)
        Group labels; every group needs at least ``MIN_GROUP_ROWS`` rows.
    y : ndarray of shape (n_samples,), default=None
        Binary target; enables the downstream classifier metrics.
    n_components : int, default=2
        Target dimension of every method.
    test_size : float, default=0.3
        Share of rows held out for evaluation.
    random_state : int, default=0
        Seed of the split and of every randomised method.
    time_budget, progress
        As in :func:`compare_split`.

    Returns
    -------
    Comparison
    """
    split = make_split(X, sensitive_features, y, test_size=test_size, random_state=random_state)
    return compare_split(
        split,
        n_components=n_components,
        random_state=random_state,
        time_budget=time_budget,
        progress=progress,
    )


#: The criterion each method optimises, as a column of the report: read from the
#: metric registry's ``optimised_by`` (:mod:`fairpca.metrics._registry`).
OWN_CRITERION = {
    method: metric.name for metric in METRICS.values() for method in metric.optimised_by
}


def result_flags(
    table: pd.DataFrame, estimators: Mapping[str, BaseEstimator] | None = None
) -> dict[str, list[str]]:
    """Why a row of a comparison table should not be read at face value.

    Parameters
    ----------
    table : pandas.DataFrame
        The comparison's table (one row per method, PCA's among them).
    estimators : dict, default=None
        The fitted estimators by name, read for ``ambiguous_``.

    Returns
    -------
    flags : dict of str to list of str
        Per method, the metric registry's flags (:func:`fairpca.metrics._registry.row_flags`):
        ``"near-single-class"`` when the downstream classifier predicts positive
        for under 2 % or over 98 % of the held-out rows
        (``NEAR_SINGLE_CLASS``: its parity gaps are near 0 without saying much
        about fairness), ``"undetermined"`` when the estimator's
        ``ambiguous_`` is True (tied eigenvalues: the components are arbitrary),
        ``"low-variance"`` when it keeps less than 0.5 x PCA's explained
        variance ratio (``LOW_VARIANCE_FRACTION``), ``"worse-than-PCA:<column>"``
        when a fair method does worse than PCA on the held-out value of its own
        criterion (the registry's ``optimised_by``, :data:`OWN_CRITERION`), in the
        metric's direction.
    """
    estimators = {} if estimators is None else estimators
    reference = table.loc["PCA"] if "PCA" in table.index else None
    return {
        name: row_flags(
            table.loc[name],
            None if name == "PCA" else reference,
            method=str(name),
            estimator=estimators.get(name),
        )
        for name in table.index
    }
