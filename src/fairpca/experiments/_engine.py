"""The engine that re-runs a paper's experiment and compares our numbers with the paper's.

It knows no paper: a :class:`Reproductions` is given the targets (name → :class:`Target`,
assembled in :mod:`fairpca.experiments`), plans each target's units of work, runs them (in
parallel processes with joblib if asked), summarises the measurements against the papers'
numbers and writes the report.

The papers' numbers live in ``reference.csv`` next to this module, one row per
cell with its citation; the values the authors recorded for each of their own
splits, where they published them, in ``authors_splits.csv`` (one row per cell
and split, with the file it was read from). A run on the authors' splits
(``splits="authors"``) is compared with those split by split as well. Tables
become rows ``ours (mean ± SD over splits)`` against ``paper (mean ± SD)`` with
a mark: *within* when our mean is inside the paper's mean ± one SD (when the
paper gives no SD, as Vu et al.'s Table 1: when the paper's mean is inside
ours ± one SD). Figures only show shapes, so their
rows are claims read off the figure, each with the measured statistic and a
criterion that decides whether it holds.
"""

from __future__ import annotations

import functools
import math
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import fairpca._html as _html
import fairpca._output as _output
from fairpca._fitting import fit_methods
from fairpca._registry import ESTIMATORS
from fairpca.plotting import plot_reproduction

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Reproduction",
    "Reproductions",
    "Target",
    "estimator",
    "execute",
    "fit_models",
    "markdown_report_html",
    "printed_half_unit",
    "record",
    "setting_value",
]

_REFERENCE_FILE = "reference.csv"
_AUTHORS_SPLITS_FILE = "authors_splits.csv"
_KEYS = ["dataset", "method", "setting", "d", "metric"]


@dataclass(frozen=True)
class Target:
    """One reproduction target: what it reproduces, how it runs and how it is judged.

    Attributes
    ----------
    title : str
        What the target reproduces (table or figure of which paper).
    citation : str
        The paper.
    full_minutes : float or dict
        Measured duration of the full run in one process (shared 2-core
        machine); for a target whose units differ much in cost between data
        sets, ``{data set: minutes}`` (see :meth:`minutes`).
    quick_description, full_description : str
        What the reduced (``--quick``) and the full run cover.
    jobs : callable
        ``jobs(quick, data_home, unavailable)`` returns the units of work: a list of
        ``(label, function)``, each function returning a list of :func:`record` dicts
        and noting in ``unavailable`` the methods that could not run.
    checks : callable, default=None
        For targets reproducing figures: ``checks(details)`` returns the claims
        measured, tuples ``(dataset, method, metric, value, holds, rule)``. None:
        a table, compared cell by cell with the paper's mean ± SD.
    figure : callable, default=None
        ``figure(details)`` returns the target's matplotlib Figure. None: our
        numbers relative to the paper's (:func:`fairpca.plotting.plot_reproduction`).
    split_modes : tuple of str, default=("ours",)
        The split modes the target can run in; when there is more than one,
        ``jobs`` takes a ``splits`` keyword (``"ours"``: this library's seeded
        splits; ``"authors"``: the splits the authors used).
    datasets : tuple of str, default=()
        The data sets a run can be restricted to; when not empty, ``jobs``
        takes a ``datasets`` keyword (a tuple of them, or None for all).
    """

    title: str
    citation: str
    full_minutes: float | Mapping[str, float]
    quick_description: str
    full_description: str
    jobs: object
    checks: object = None
    figure: object = None
    split_modes: tuple = ("ours",)
    datasets: tuple = ()

    def minutes(self, datasets: Iterable[str] | None = None) -> float:
        """Expected minutes of the full run in one process, over ``datasets`` (None: all).

        With a single duration for the target, a subset of data sets is
        charged its share of the data sets.
        """
        chosen = list(self.datasets) if datasets is None else list(datasets)
        if isinstance(self.full_minutes, Mapping):
            return float(sum(self.full_minutes[name] for name in chosen))
        share = len(chosen) / len(self.datasets) if self.datasets else 1.0
        return float(self.full_minutes) * share


@dataclass
class Reproduction:
    """The outcome of one target.

    Attributes
    ----------
    target : str
        Target name, a key of the targets run.
    quick : bool
        Whether the reduced run was made.
    table : pandas.DataFrame
        One row per compared cell: keys ``dataset, method, setting, d, metric``,
        ``ours_mean, ours_std, n_runs, paper_mean, paper_std, paper_claim,
        status, rule, citation``. ``status`` is ``"within"``, ``"outside"``,
        ``"holds"``, ``"fails"`` or ``"not available"``.
    details : pandas.DataFrame
        Every measurement (one row per split and metric).
    figures : dict
        ``{file name: matplotlib Figure}``.
    seconds : float
        Wall-clock duration.
    fit_seconds : pandas.DataFrame or None
        Fit time per method and setting: columns ``method, setting, fits,
        seconds`` (total wall-clock seconds of its fits) and ``mean_seconds``.
    splits : str
        The split mode run (``"ours"`` or ``"authors"``).
    per_split : pandas.DataFrame or None
        On the authors' splits, where they recorded values per split: one row
        per cell and split, keys and ``split, ours, authors, difference,
        same`` (``same``: ``|difference|`` at most half a unit of the paper's
        last printed digit). None otherwise.
    """

    target: str
    quick: bool
    table: object
    details: object
    figures: dict = field(default_factory=dict)
    seconds: float = 0.0
    fit_seconds: object = None
    splits: str = "ours"
    per_split: object = None


def estimator(name, **params):
    """A fairpca estimator by class name, or None when it is not in this installation."""
    cls = ESTIMATORS.get(name)
    return None if cls is None else cls(**params)


def split_jobs(cases, splits, run):
    """The units of work of :attr:`Target.jobs`: one per case and split.

    Parameters
    ----------
    cases : dict
        Label of each case (a data set, its attribute, a setting) -> the
        arguments that select it, a tuple.
    splits : iterable of int
    run : callable
        ``run(*arguments, split)`` returns the unit's list of :func:`record`.

    Returns
    -------
    list of (label, function)
        Labelled ``"<case label> split <split>"``, cases outermost.
    """
    return [
        (f"{label} split {split}", functools.partial(run, *arguments, split))
        for label, arguments in cases.items()
        for split in splits
    ]


def record(dataset, method, setting, d, split, metric, value):
    """One measurement: the value of ``metric`` for a method's setting at ``d`` on one split."""
    return {
        "dataset": dataset,
        "method": method,
        "setting": setting,
        "d": d,
        "split": split,
        "metric": metric,
        "value": float(value),
    }


#: ``(method, setting, seconds)`` of every fit of the unit of work running in this
#: context: :func:`_run_unit` gives each unit its own list (None outside a unit).
_UNIT_FITS: ContextVar[list | None] = ContextVar("_UNIT_FITS", default=None)


def fit_models(models, data, unavailable, seconds=None):
    """Fit each ``(*key, estimator)`` entry on ``data``'s training part and yield those that ran.

    Each entry is fitted by :func:`fairpca._fitting.fit_methods` (a fair method
    with the groups, PCA without), one at a time as the caller asks for the
    next. A method missing from this installation (``None``) or lacking an
    optional dependency is recorded in ``unavailable`` and skipped; any other
    exception of a fit is raised (a reproduction does not hide a failure).
    The solvers' ``ConvergenceWarning`` is silenced: reduced iteration budgets
    are expected to stop early in quick mode. The wall-clock duration of each
    fit is reported with the unit's records (see :func:`execute`); when
    ``seconds`` is a dict it is also stored there under the entry's key.
    """
    for *key, est in models:
        method = key[0]
        if est is None:
            unavailable.setdefault(method, "not in this installation of fairpca")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            outcome = fit_methods({tuple(key): est}, data)[tuple(key)]
        if outcome.status == "unavailable" and isinstance(outcome.error, ImportError):
            unavailable.setdefault(method, str(outcome.error))
            continue
        if outcome.error is not None:
            raise outcome.error
        fits = _UNIT_FITS.get()
        if fits is not None:
            fits.append((method, key[1] if len(key) > 1 else "", outcome.seconds))
        if seconds is not None:
            seconds[tuple(key)] = outcome.seconds
        yield (*key, outcome.estimator)


def setting_value(setting):
    """The number in a ``"name=value"`` setting label (``"p=20"`` → 20.0)."""
    return float(setting.split("=", 1)[1])


def execute(
    jobs: Sequence[tuple[str, Callable[[], list[dict[str, Any]]]]],
    unavailable: dict[str, str],
    n_jobs: int = 1,
) -> Iterator[tuple[str, list[dict[str, Any]], list[tuple[str, str, float]]]]:
    """Run the units of work of :func:`plan`, yielding their records in plan order.

    Parameters
    ----------
    jobs : list of (str, callable)
        The first value :func:`plan` returns.
    unavailable : dict
        The second value :func:`plan` returns; updated with what the units
        found missing, also when they ran in other processes.
    n_jobs : int, default=1
        Processes running units at once (joblib's convention: -1 for one per
        core). Each unit seeds itself, so the records do not depend on it.
        joblib gives each worker ``cores // n_jobs`` BLAS threads.

    Yields
    ------
    label : str
        The unit's label.
    records : list of dict
        Its measurement records.
    fit_seconds : list of (str, str, float)
        ``(method, setting, seconds)`` of each fit the unit made.
    """
    if n_jobs == 1:
        for label, job in jobs:
            records, _, fit_seconds = _run_unit(job, {})
            yield label, records, fit_seconds
        return
    from joblib import Parallel, delayed

    # Each task pickles the job together with ``unavailable`` (the dict its
    # closure fills), so the worker fills the copy it then sends back.
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_run_unit)(job, unavailable) for _, job in jobs
    )
    for (label, _), (records, missing, fit_seconds) in zip(jobs, results, strict=True):
        unavailable.update(missing)
        yield label, records, fit_seconds


def _run_unit(job, unavailable):
    fits = []
    token = _UNIT_FITS.set(fits)
    try:
        records = job()
    finally:
        _UNIT_FITS.reset(token)
    return records, dict(unavailable), fits


#: Decimals the papers print a metric with, where not 2 (Lee et al.'s MMD²).
_PRINTED_DECIMALS = {"MMD2": 3}


def printed_half_unit(metric: str) -> float:
    """Half a unit of the last digit a paper's table prints ``metric`` with.

    A mean that rounds to the printed value matches it: with a printed SD of
    0 (PCA keeps 100.00 ± 0.00 % of COMPAS's variance at d = 10, its 11
    features having one exact linear dependency) only this slack separates
    rounding from a difference.
    """
    return 0.5 * 10.0 ** -_PRINTED_DECIMALS.get(metric, 2)


def _values_table(ref, details):
    import pandas as pd

    if len(details):
        stats = details.groupby(_KEYS, sort=False)["value"].agg(["mean", "std", "count"])
        stats["std"] = stats["std"].fillna(0.0)
        stats = stats.rename(columns={"mean": "ours_mean", "std": "ours_std", "count": "n_runs"})
        stats = stats.reset_index()
    else:
        stats = pd.DataFrame(columns=[*_KEYS, "ours_mean", "ours_std", "n_runs"])
    stats["d"] = stats["d"].astype("Int64")
    paper = ref.rename(columns={"mean": "paper_mean", "std": "paper_std", "claim": "paper_claim"})
    ran = set(zip(stats["dataset"], stats["d"], strict=True))
    paper = paper[[(ds, d) in ran for ds, d in zip(paper["dataset"], paper["d"], strict=True)]]
    table = paper.drop(columns="target").merge(stats, on=_KEYS, how="outer")
    status, rule = [], []
    for row in table.itertuples():
        if pd.isna(row.ours_mean):
            status.append("not run")
            rule.append("")
        elif pd.isna(row.paper_mean):
            status.append("no paper value")
            rule.append("")
        elif not pd.isna(row.paper_std):
            inside = abs(row.ours_mean - row.paper_mean) <= row.paper_std + printed_half_unit(
                row.metric
            )
            status.append("within" if inside else "outside")
            rule.append("|ours - paper| <= paper SD + half a unit of the paper's last digit")
        else:
            inside = abs(row.ours_mean - row.paper_mean) <= row.ours_std
            status.append("within" if inside else "outside")
            rule.append("|ours - paper| <= our SD (paper gives no SD)")
    table["status"], table["rule"] = status, rule
    table["citation"] = table["citation"].fillna("")
    table["paper_claim"] = table["paper_claim"].fillna("")
    return table[_columns()]


def _per_split_table(recorded, details):
    """Our value next to the authors' recorded one, for every cell and split both have."""
    keys = [*_KEYS, "split"]
    ours = details.rename(columns={"value": "ours"})
    ours = ours.astype({"d": "Int64", "split": "int64"})
    table = recorded[[*keys, "value"]].rename(columns={"value": "authors"})
    table = table.merge(ours[[*keys, "ours"]], on=keys, how="inner")
    table["difference"] = table["ours"] - table["authors"]
    half = table["metric"].map(printed_half_unit)
    table["same"] = table["difference"].abs() <= half
    return table[[*keys, "ours", "authors", "difference", "same"]].reset_index(drop=True)


#: Per-split 0/1 record of a fit whose answer the problem does not determine (a relaxed
#: solution's eigenvalues d and d + 1 tied to solver accuracy: ``ambiguous_``).
AMBIGUOUS = "ambiguous"


def _ambiguous_counts(details):
    """Splits with an ambiguous fit per (dataset, method, setting, d): columns and ``ambiguous``."""
    keys = _KEYS[:4]
    flagged = details[details["metric"] == AMBIGUOUS]
    counts = flagged.groupby(keys, sort=False)["value"].sum().astype(int)
    return counts.rename(AMBIGUOUS).reset_index().astype({"d": "Int64"})


def _per_split_summary(per_split, details=None):
    """One row per cell: splits compared, how many agree, median and largest |difference|.

    With ``details``, also ``ambiguous``: how many of the cell's splits had a fit
    whose top-``d`` subspace the relaxed problem left undetermined (NA for
    methods that do not report it).
    """
    absolute = per_split.assign(abs_difference=per_split["difference"].abs())
    summary = (
        absolute.groupby(_KEYS, sort=False)
        .agg(
            splits=("split", "count"),
            same=("same", "sum"),
            median_abs_difference=("abs_difference", "median"),
            max_abs_difference=("abs_difference", "max"),
        )
        .reset_index()
    )
    if details is not None:
        summary = summary.astype({"d": "Int64"})
        summary = summary.merge(_ambiguous_counts(details), on=_KEYS[:4], how="left")
        summary[AMBIGUOUS] = summary[AMBIGUOUS].astype("Int64")
    return summary


def _per_split_markdown(per_split, details):
    """The split-by-split comparison as Markdown lines: one row per cell."""
    import pandas as pd

    lines = [
        "Split by split against the values the authors recorded for their splits "
        "(same: |ours - authors'| at most half a unit of the paper's last printed digit; "
        "ambiguous splits: our fit's top-d subspace not determined by the problem, "
        "eigenvalues d and d + 1 of the relaxed solution tied to solver accuracy, so "
        "another equally valid answer may differ):",
        "",
        "| data set | d | method | setting | metric | splits | same | median abs. difference "
        "| largest abs. difference | ambiguous splits |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in _per_split_summary(per_split, details).itertuples():
        ambiguous = "" if pd.isna(row.ambiguous) else int(row.ambiguous)
        lines.append(
            f"| {row.dataset} | {row.d} | {row.method} | {row.setting} | {row.metric} | "
            f"{row.splits} | {row.same} | {row.median_abs_difference:.2g} | "
            f"{row.max_abs_difference:.2g} | {ambiguous} |"
        )
    return lines


def _ambiguous_markdown(details):
    """A note per cell with splits whose fit was ambiguous (none: no lines)."""
    counts = _ambiguous_counts(details)
    counts = counts[counts[AMBIGUOUS] > 0]
    if not len(counts):
        return []
    runs = details[details["metric"] == AMBIGUOUS].groupby(_KEYS[:4], sort=False)["split"]
    runs = runs.nunique().rename("runs").reset_index().astype({"d": "Int64"})
    counts = counts.merge(runs, on=_KEYS[:4])
    lines = [
        "Ambiguous splits (the relaxed solution's eigenvalues d and d + 1 tied to solver "
        "accuracy: the problem does not determine the components, and their metrics are "
        "those of one valid choice):",
        "",
    ]
    for row in counts.itertuples():
        lines.append(
            f"- {row.dataset}, d = {row.d}, {row.method} {row.setting}: "
            f"{row.ambiguous} of {row.runs} splits"
        )
    return lines


def _claims_table(ref, details, checks):
    import pandas as pd

    measured = pd.DataFrame(
        checks, columns=["dataset", "method", "metric", "ours_mean", "holds", "rule"]
    )
    ran = set(details["dataset"])
    table = ref[ref["dataset"].isin(ran)].drop(columns="target")
    table = table.rename(columns={"mean": "paper_mean", "std": "paper_std", "claim": "paper_claim"})
    table = table.merge(measured, on=["dataset", "method", "metric"], how="left")
    table["ours_std"] = np.nan
    table["n_runs"] = [
        details[details["dataset"] == ds]["split"].nunique() for ds in table["dataset"]
    ]
    table["status"] = [
        "not run" if pd.isna(h) else ("holds" if h else "fails") for h in table["holds"]
    ]
    table["rule"] = table["rule"].fillna("")
    return table[_columns()]


def _columns():
    return [
        *_KEYS,
        "ours_mean",
        "ours_std",
        "n_runs",
        "paper_mean",
        "paper_std",
        "paper_claim",
        "status",
        "rule",
        "citation",
    ]


def _fmt(mean, std):
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return ""
    digits = 2 if abs(mean) >= 1 else 4
    if std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


class Reproductions:
    """Plans, runs, summarises and reports the targets of a registry.

    Parameters
    ----------
    targets : dict
        Target name → :class:`Target`; the names are those of ``reference.csv``.

    Attributes
    ----------
    targets : dict
        As given.
    """

    def __init__(self, targets: Mapping[str, Target]) -> None:
        self.targets = targets

    def check(self, target: str) -> None:
        """Raise a ValueError naming the valid targets unless ``target`` is one of them."""
        if target not in self.targets:
            raise ValueError(
                f"unknown target {target!r}; valid targets: {', '.join(self.targets)}."
            )

    def reference(self, target: str | None = None) -> pd.DataFrame:
        """The papers' reference numbers and claims.

        Parameters
        ----------
        target : str, default=None
            Restrict to one target.

        Returns
        -------
        table : pandas.DataFrame
            Columns ``target, dataset, method, setting, d, metric, mean, std,
            claim, citation``; ``mean``/``std`` are NaN for claims read off a figure.
        """
        import pandas as pd

        with resources.files("fairpca.experiments").joinpath(_REFERENCE_FILE).open() as f:
            table = pd.read_csv(f, dtype={"setting": str, "claim": str}, keep_default_na=False)
        for column in ("mean", "std"):
            table[column] = pd.to_numeric(table[column].replace("", np.nan))
        table["d"] = pd.to_numeric(table["d"].replace("", np.nan)).astype("Int64")
        if target is not None:
            self.check(target)
            table = table[table["target"] == target].reset_index(drop=True)
        return table

    def authors_splits(self, target: str) -> pd.DataFrame:
        """The values the authors recorded for each of their splits (may be empty).

        Parameters
        ----------
        target : str
            A key of :attr:`targets`.

        Returns
        -------
        table : pandas.DataFrame
            Columns ``dataset, method, setting, d, metric, split, value,
            source`` (``source``: the authors' file, row and column).
        """
        import pandas as pd

        self.check(target)
        with resources.files("fairpca.experiments").joinpath(_AUTHORS_SPLITS_FILE).open() as f:
            table = pd.read_csv(f, dtype={"setting": str}, keep_default_na=False)
        table = table[table["target"] == target].drop(columns="target")
        return table.astype({"d": "Int64", "split": "int64", "value": float}).reset_index(drop=True)

    def _options(self, target, splits, datasets):
        """The keywords ``jobs`` takes for these choices, after checking them against the target."""
        info = self.targets[target]
        if splits not in info.split_modes:
            raise ValueError(
                f"{target} runs on splits {list(info.split_modes)}, got splits={splits!r}."
            )
        options = {"splits": splits} if len(info.split_modes) > 1 else {}
        if datasets is not None:
            if not info.datasets:
                raise ValueError(f"{target} cannot be restricted to data sets.")
            datasets = tuple(datasets)
            unknown = [name for name in datasets if name not in info.datasets]
            if unknown or not datasets:
                raise ValueError(
                    f"{target}: unknown data set(s) {unknown or '(none given)'}; "
                    f"valid: {list(info.datasets)}."
                )
        if info.datasets:
            options["datasets"] = datasets
        return options

    def plan(
        self,
        target: str,
        *,
        quick: bool = False,
        data_home: str | os.PathLike[str] | None = None,
        splits: str = "ours",
        datasets: Sequence[str] | None = None,
    ) -> tuple[list[tuple[str, Callable[[], list[dict[str, Any]]]]], dict[str, str]]:
        """The units of work of a target, to run one by one (e.g. behind a progress bar).

        Parameters
        ----------
        target : str
            A key of :attr:`targets`.
        quick : bool, default=False
            The reduced run (fewer data sets, splits and settings).
        data_home : str or path, default=None
            Folder of the data files (default: ``$FAIRPCA_DATA``).
        splits : str, default="ours"
            One of the target's ``split_modes``: ``"authors"`` runs on the
            splits the authors used.
        datasets : sequence of str, default=None
            Run only these of the target's ``datasets`` (None: all).

        Returns
        -------
        jobs : list of (str, callable)
            Label and a function returning a list of measurement records.
        unavailable : dict
            Filled while the jobs run: method name → why it could not run.
        """
        self.check(target)
        options = self._options(target, splits, datasets)
        unavailable = {}
        return self.targets[target].jobs(quick, data_home, unavailable, **options), unavailable

    def run(
        self,
        target: str,
        *,
        quick: bool = False,
        data_home: str | os.PathLike[str] | None = None,
        progress: Callable[[str], object] | None = None,
        n_jobs: int = 1,
        splits: str = "ours",
        datasets: Sequence[str] | None = None,
    ) -> Reproduction:
        """Run one target and compare with the paper.

        Parameters
        ----------
        target : str
            A key of :attr:`targets`.
        quick : bool, default=False
            The reduced run.
        data_home : str or path, default=None
            Folder of the data files (default: ``$FAIRPCA_DATA``).
        progress : callable, default=None
            Called as ``progress(label)`` after each unit of work.
        n_jobs : int, default=1
            Processes running units of work at once (see :func:`execute`).
        splits : str, default="ours"
            Split mode (see :meth:`plan`).
        datasets : sequence of str, default=None
            Data sets to run (see :meth:`plan`).

        Returns
        -------
        Reproduction
        """
        start = time.perf_counter()
        jobs, unavailable = self.plan(
            target, quick=quick, data_home=data_home, splits=splits, datasets=datasets
        )
        records, fit_seconds = [], []
        for label, unit_records, unit_seconds in execute(jobs, unavailable, n_jobs):
            records += unit_records
            fit_seconds += unit_seconds
            if progress is not None:
                progress(label)
        seconds = time.perf_counter() - start
        return self.summarise(
            target,
            records,
            unavailable,
            quick=quick,
            seconds=seconds,
            fit_seconds=fit_seconds,
            splits=splits,
        )

    def summarise(
        self,
        target: str,
        records: list[dict[str, Any]],
        unavailable: Mapping[str, str],
        *,
        quick: bool = False,
        seconds: float = 0.0,
        fit_seconds: Iterable[tuple[str, str, float]] = (),
        splits: str = "ours",
    ) -> Reproduction:
        """Turn measurement records into a :class:`Reproduction` (table and figures).

        Parameters
        ----------
        target : str
            A key of :attr:`targets`.
        records : list of dict
            Measurements as produced by the jobs of :func:`plan`.
        unavailable : dict
            Method name → reason it could not run.
        quick : bool, default=False
            Whether the records come from the reduced run.
        seconds : float, default=0.0
            Duration to store.
        fit_seconds : iterable of (str, str, float), default=()
            ``(method, setting, seconds)`` of every fit, as :func:`execute` yields them.
        splits : str, default="ours"
            The split mode the records come from; on ``"authors"`` they are also
            compared split by split with the authors' recorded values.

        Returns
        -------
        Reproduction
        """
        import pandas as pd

        self.check(target)
        self._options(target, splits, None)
        details = pd.DataFrame(records, columns=[*_KEYS[:4], "split", "metric", "value"])
        ref = self.reference(target)
        info = self.targets[target]
        if info.checks is not None:
            table = _claims_table(ref, details, info.checks(details) if len(details) else [])
        else:
            table = _values_table(ref, details)
        for method, reason in unavailable.items():
            mask = (table["method"] == method) & (table["status"] == "not run")
            table.loc[mask, "status"] = "not available"
            table.loc[mask, "rule"] = reason
        table = table[table["status"] != "not run"].reset_index(drop=True)

        figures = {}
        if len(details):
            make = info.figure or (lambda details: plot_reproduction(table))
            figures[f"{target}.png"] = make(details)
        times = pd.DataFrame(list(fit_seconds), columns=["method", "setting", "seconds"])
        times = (
            times.groupby(["method", "setting"], sort=False)["seconds"]
            .agg(fits="count", seconds="sum")
            .reset_index()
        )
        times["mean_seconds"] = times["seconds"] / times["fits"]
        per_split = None
        if splits == "authors":
            recorded = self.authors_splits(target)
            if len(recorded):
                per_split = _per_split_table(recorded, details)
        return Reproduction(
            target, quick, table, details, figures, seconds, times, splits, per_split
        )

    def to_markdown(self, reproduction: Reproduction) -> str:
        """The comparison as a Markdown report (tables and links to the plots).

        Parameters
        ----------
        reproduction : Reproduction

        Returns
        -------
        text : str
        """
        info = self.targets[reproduction.target]
        mode = "quick" if reproduction.quick else "full"
        lines = [
            f"# {info.title}",
            "",
            f"Paper: {info.citation}",
            "",
            f"Run: `{reproduction.target}`, {mode} mode "
            f"({info.quick_description if reproduction.quick else info.full_description}); "
            f"{reproduction.seconds:.0f} s.",
            "",
        ]
        if len(info.split_modes) > 1:
            which = "the authors' own" if reproduction.splits == "authors" else "this library's"
            lines += [f"Splits: {which} (`--splits {reproduction.splits}`).", ""]
        ran = list(dict.fromkeys(reproduction.details["dataset"]))
        if info.datasets and not reproduction.quick and set(ran) < set(info.datasets):
            lines += ["Data sets run: " + ", ".join(ran) + ".", ""]
        table = reproduction.table
        claims = table["paper_claim"].astype(bool).any()
        if claims:
            lines += [
                "| data set | method | check | paper's claim | measured | criterion | status |",
                "|---|---|---|---|---|---|---|",
            ]
            for row in table.itertuples():
                lines.append(
                    f"| {row.dataset} | {row.method} | {row.metric} | {row.paper_claim} | "
                    f"{_fmt(row.ours_mean, None)} | {row.rule} | {row.status} |"
                )
        else:
            lines += [
                "| data set | d | method | setting | metric | ours (mean ± SD) | runs "
                "| paper (mean ± SD) | status |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for row in table.itertuples():
                lines.append(
                    f"| {row.dataset} | {row.d} | {row.method} | {row.setting} | {row.metric} | "
                    f"{_fmt(row.ours_mean, row.ours_std)} | "
                    f"{'' if math.isnan(row.n_runs) else int(row.n_runs)} | "
                    f"{_fmt(row.paper_mean, row.paper_std)} | {row.status} |"
                )
            rules = sorted({r for r in table["rule"] if r})
            if rules:
                lines += ["", "Status rule: " + "; ".join(rules) + "."]
        cited = sorted({c for c in table["citation"] if c})
        lines += ["", "Sources: " + "; ".join(cited) + "."]
        details = reproduction.details
        if len(details):
            ambiguous = _ambiguous_markdown(details)
            if ambiguous:
                lines += ["", *ambiguous]
        if reproduction.per_split is not None and len(reproduction.per_split):
            lines += ["", *_per_split_markdown(reproduction.per_split, details)]
        times = reproduction.fit_seconds
        if times is not None and len(times):
            lines += [
                "",
                "Fit time per method (wall clock):",
                "",
                "| method | setting | fits | total (s) | mean per fit (s) |",
                "|---|---|---|---|---|",
            ]
            for row in times.itertuples():
                lines.append(
                    f"| {row.method} | {row.setting} | {row.fits} | {row.seconds:.3g} | "
                    f"{row.mean_seconds:.3g} |"
                )
        for name in reproduction.figures:
            lines += ["", f"![{reproduction.target}]({name})"]
        return "\n".join(lines) + "\n"

    def write_report(
        self, reproduction: Reproduction, output: str | os.PathLike[str], *, force: bool = False
    ) -> list[str]:
        """Write ``<target>.csv``, ``<target>-details.csv``, ``report.md``, ``report.html``, PNGs.

        ``report.html`` is ``report.md`` as one self-contained page (its tables
        as HTML tables, its plots embedded), as ``fairpca compare`` and
        ``fairpca tradeoff`` write (:func:`markdown_report_html`).

        Parameters
        ----------
        reproduction : Reproduction
        output : str or path
            Directory to create.
        force : bool, default=False
            Write into ``output`` even if it exists (files of the same names are replaced).

        Returns
        -------
        written : list of str
            File names written.
        """
        output = Path(output)
        if output.exists() and not force:
            raise FileExistsError(f"{output} exists; pass force=True (--force) to write into it.")
        output.mkdir(parents=True, exist_ok=True)
        name = reproduction.target
        reproduction.table.to_csv(output / f"{name}.csv", index=False)
        reproduction.details.to_csv(output / f"{name}-details.csv", index=False)
        markdown = self.to_markdown(reproduction)
        (output / "report.md").write_text(markdown)
        _output.write_text(
            output / "report.html", markdown_report_html(markdown, reproduction.figures)
        )
        written = [f"{name}.csv", f"{name}-details.csv", "report.md", "report.html"]
        if reproduction.per_split is not None:
            reproduction.per_split.to_csv(output / f"{name}-per-split.csv", index=False)
            written.append(f"{name}-per-split.csv")
        for filename, fig in reproduction.figures.items():
            fig.savefig(output / filename, dpi=120)
            written.append(filename)
        return written


def _markdown_cells(line):
    """The cells of a Markdown table row ``| a | b |``, stripped."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def markdown_report_html(markdown: str, figures: Mapping[str, Any] | None = None) -> str:
    """A reproduction's Markdown report (:meth:`Reproductions.to_markdown`) as one HTML page.

    Read line by line: the ``# title`` is the page's title, ``## heading`` starts
    a section, a run of ``| ... |`` lines is a table, ``![alt](file)`` embeds the
    figure of that file name from ``figures`` (else stays a paragraph), any
    other line is a paragraph. Every text goes through the HTML report's
    escaping (:func:`fairpca._html.html_report`).

    Parameters
    ----------
    markdown : str
    figures : dict of str to matplotlib Figure, default=None

    Returns
    -------
    document : str
    """
    import re

    import pandas as pd

    figures = {} if figures is None else figures
    title, heading, blocks, sections = "fairpca reproduce", "Results", [], []
    rows: list[list[str]] = []

    def flush_table():
        if rows:
            header, body = rows[0], [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]
            width = len(header)
            body = [(r + [""] * width)[:width] for r in body]
            table = pd.DataFrame(
                [r[1:] for r in body], index=[r[0] for r in body], columns=header[1:]
            )
            table.columns.name = header[0]  # one header row, the first column's name in it
            blocks.append(table)
            rows.clear()

    for line in markdown.splitlines():
        text = line.strip()
        if text.startswith("|"):
            rows.append(_markdown_cells(text))
            continue
        flush_table()
        if not text:
            continue
        if text.startswith("# "):
            title = text[2:].strip()
        elif text.startswith("#"):
            if blocks:
                sections.append((heading, blocks))
            heading, blocks = text.lstrip("#").strip(), []
        elif (image := re.fullmatch(r"!\[([^\]]*)\]\(([^)]*)\)", text)) and (
            image.group(2) in figures
        ):
            blocks.append(figures[image.group(2)])
        else:
            blocks.append(text.replace("`", ""))
    flush_table()
    if blocks:
        sections.append((heading, blocks))
    facts = {"report": "the same as report.md, with the plots embedded"}
    return _html.html_report(title, facts, sections)
