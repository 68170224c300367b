"""Reports of a comparison and of a trade-off curve: notes, terminal text and files.

What ``fairpca compare`` and ``fairpca tradeoff`` print and write, as library
calls a Python user can make too:

- :func:`comparison_notes`, :func:`comparison_text`, :func:`columns_text`,
  :func:`unfinished` (the sentences and tables the command prints, and why a
  run did not produce a comparison); :func:`curve_table`, :func:`curve_text`,
  :func:`curve_failures`, :func:`curve_unfinished` for a trade-off curve.
- :func:`write_comparison_report` and :func:`write_tradeoff_report`: every file
  in one folder that appears whole (:func:`output_folder`: checked, locked,
  written in a staging folder beside it, renamed into place), every text of
  the user's data escaped by :mod:`fairpca._output`'s helper for its language.
  :func:`write_comparison_files` and :func:`write_tradeoff_files` write the
  same files into a folder the caller stages (the command line locks
  ``--output`` before computing, :mod:`fairpca._cli_output`).

Modules are looked up at call time (``plotting.plot_communality``,
``_html.html_report``, ``_output.write_text``, ``_methods.REFIT_SECONDS``) so that a
test may replace one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

import fairpca._curve as _curve
import fairpca._html as _html
import fairpca._methods as _methods
import fairpca._output as _output
import fairpca.plotting as plotting
from fairpca._group_outcomes import WORSE_OFF_COLUMN
from fairpca._validation import _plain, check_sensitive_features
from fairpca.metrics import describe_metric, metric_family
from fairpca.metrics._registry import FLAGS, legend
from fairpca.pareto import _WORSE_OFF_FACTOR, _WORSE_OFF_FLOOR

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "NOISY_GROUP_ROWS",
    "TRADEOFF_PLOT_COLUMNS",
    "by_d_notes",
    "columns_text",
    "comparison_notes",
    "comparison_text",
    "curve_failures",
    "curve_table",
    "curve_text",
    "curve_unfinished",
    "every_method_table",
    "noisy_groups",
    "output_folder",
    "staged_folder",
    "unfinished",
    "write_comparison_files",
    "write_comparison_report",
    "write_tradeoff_files",
    "write_tradeoff_report",
]

#: The fairness columns of the comparison's trade-off plot, those the table has.
TRADEOFF_PLOT_COLUMNS = ("reconstruction_error_gap", "mmd2")

#: Groups with fewer held-out rows than this make per-group numbers noisy.
NOISY_GROUP_ROWS = 30


def every_method_table(comparison: Any) -> pd.DataFrame:
    """The comparison's table with a row for every method asked for, fitted or not.

    Adds ``status`` (``"fitted"``, ``"failed"``, ``"stopped"`` or
    ``"unavailable"``) and ``reason`` (why it is not fitted, "" when it is);
    the metric columns of a method that was not fitted are missing (NaN).
    The downstream baselines (majority class, all features) follow as rows of
    status ``"baseline"``, with only the downstream columns.

    Parameters
    ----------
    comparison : fairpca.compare.Comparison
        Annotated ``Any``: ``compare`` imports this module, so naming the
        class here would close an import cycle.
    """
    import pandas as pd

    table = _with_baselines(comparison, comparison.table.assign(status="fitted", reason=""))
    others = pd.DataFrame(
        [
            {"status": o.status, "reason": o.reason, "fit_seconds": o.seconds}
            for o in comparison.outcomes.values()
            if o.status != "fitted"
        ],
        index=pd.Index(
            [n for n, o in comparison.outcomes.items() if o.status != "fitted"],
            name=table.index.name,
        ),
        columns=table.columns,
    )
    if others.empty:
        return table
    table = pd.concat([table.astype(object), others.astype(object)])
    order = [n for n in comparison.outcomes if n in table.index]
    return table.loc[order + [n for n in table.index if n not in order]]


def noisy_groups(s_test: ArrayLike, min_rows: int = NOISY_GROUP_ROWS) -> dict[Any, int]:
    """Held-out groups with fewer than ``min_rows`` rows: ``{group: rows}``."""
    labels, codes = check_sensitive_features(s_test, len(s_test), "s_test")
    counts = np.bincount(codes, minlength=len(labels))
    return {
        _plain(label): int(count)
        for label, count in zip(labels, counts, strict=True)
        if count < min_rows
    }


def _convergence_note(table):
    """A sentence naming the methods whose solver stopped before converging, or ''."""
    if "converged" not in table.columns or table["converged"].all():
        return ""
    names = ", ".join(map(str, table.index[~table["converged"].astype(bool)]))
    return (
        f"Did not converge: {names} (each one's ConvergenceWarning says why it stopped and "
        "what it reached). Their rows describe the last iterate, not the method's optimum."
    )


def _stopped_note(comparison):
    """A sentence naming the methods stopped at the time budget, or ''."""
    if not comparison.stopped:
        return ""
    budget = next(iter(comparison.stopped.values()))
    return (
        f"Stopped at the time budget of {budget:g} s per method: "
        + ", ".join(comparison.stopped)
        + " (no result; raise --time-budget to include them)."
    )


def comparison_notes(comparison):
    """Sentences on what in a comparison's table should not be read at face value.

    Parameters
    ----------
    comparison : fairpca.compare.Comparison

    Returns
    -------
    notes : list of str
        Methods that did not converge, were stopped, failed or were not
        available; flagged rows (a one-class downstream classifier, worse
        than PCA on the method's own criterion); groups with too few held-out
        rows for their numbers to be stable.
    """
    table = comparison.table
    notes = [_convergence_note(table), _stopped_note(comparison)]
    notes += [f"Failed: {name}: {reason}" for name, reason in comparison.failed.items()]
    notes += [f"Not available: {name}: {reason}" for name, reason in comparison.unavailable.items()]
    for name, flags in table["flags"].items():
        for flag in str(flags).split():
            kind, _, column = flag.partition(":")
            detail = f" ({column})" if column else ""
            notes.append(f"Flag {name}: {FLAGS[kind]}{detail}.")
    small = noisy_groups(comparison.split.s_test)
    if small:
        listed = ", ".join(f"{g!r} ({n} rows)" for g, n in small.items())
        notes.append(
            f"Noisy: groups with fewer than {NOISY_GROUP_ROWS} held-out rows: {listed}; "
            "their per-group numbers, and the gaps they enter, vary a lot with the split."
        )
    return [note for note in notes if note]


def _scalar_columns(table):
    return [c for c in table.columns if "[" not in c and c != "converged"]


def comparison_text(comparison):
    """The comparison's table for a terminal: one column per method, and who converged.

    Returns
    -------
    text : str
        Empty when no method was fitted.
    """
    import pandas as pd

    table = comparison.table
    if not len(table):
        return ""
    shown = _with_baselines(comparison, table[_scalar_columns(table)])
    with pd.option_context("display.width", 200, "display.max_columns", None):
        shown = shown.T.to_string(float_format=lambda v: f"{v:.4g}", na_rep="")
    converged = ", ".join(
        f"{name} {'yes' if ok else 'NO'}" for name, ok in table["converged"].items()
    )
    return f"{shown}\nconverged: {converged}"


def columns_text(comparison):
    """What each column of :func:`comparison_text` means, one indented line each."""
    return "\n".join(
        ["\nColumns:", *("  " + describe_metric(c) for c in _scalar_columns(comparison.table))]
    )


def unfinished(outcomes):
    """Why a comparison has no result to report (PCA or every fair method not fitted), or None.

    Parameters
    ----------
    outcomes : dict
        Method name -> :class:`fairpca.compare.FitOutcome`.
    """
    fitted = [name for name, outcome in outcomes.items() if outcome.status == "fitted"]
    if "PCA" in fitted and len(fitted) > 1:
        return None
    missing = "PCA, the reference, could not" if "PCA" not in fitted else "no fair method could"
    return f"{missing} be fitted: " + "; ".join(
        f"{name}: {o.reason}" for name, o in outcomes.items() if o.status != "fitted"
    )


#: The note on a trade-off table's baseline rows.
BASELINE_NOTE = "reference for the downstream columns, not a representation"


def curve_table(curve):
    """The curve without its estimator objects, one row per setting.

    With downstream metrics, the baselines of ``curve.attrs["baselines"]``
    (majority class, the classifier on all features) follow as rows of
    ``status`` ``"baseline"`` and an empty setting, never on the frontier.
    """
    import pandas as pd

    table = curve.drop(columns=["estimator"]).set_index(["method", "setting"])
    baselines = curve.attrs.get("baselines")
    if baselines is None or not len(baselines) or not len(table):
        return table
    table = table.assign(status="setting", note="")
    rows = pd.DataFrame.from_dict(baselines, orient="index")
    rows.index = pd.MultiIndex.from_tuples(
        [(name, "") for name in rows.index], names=table.index.names
    )
    rows = rows.assign(on_frontier=False, status="baseline", note=BASELINE_NOTE)
    rows = rows.assign(**{c: "" for c in ("flags", WORSE_OFF_COLUMN) if c in table})
    columns = list(table.columns) + [c for c in rows.columns if c not in table.columns]
    return pd.concat([table.astype(object), rows.astype(object)]).reindex(columns=columns)


def _with_intervals(table, columns):
    """Each column as ``estimate [low, high]`` text, and whether the row is on the frontier."""
    kept = ("on_frontier", WORSE_OFF_COLUMN, "flags", "status", "accuracy", "note")
    shown = table[[c for c in kept if c in table]].copy()
    baseline = table["status"] == "baseline" if "status" in table else np.zeros(len(table), bool)
    for column in columns:
        shown[column] = [
            _interval_text(v, lo, hi, b)
            for v, lo, hi, b in zip(
                table[column],
                table[f"{column}_low"],
                table[f"{column}_high"],
                baseline,
                strict=True,
            )
        ]
    return shown


def _interval_text(value, low, high, baseline):
    """``estimate [low, high]``; a baseline's bare estimate, or "" where it has none."""
    value, low, high = (float(x) for x in (value, low, high))
    if baseline:
        return "" if np.isnan(value) else f"{value:.4g}"
    return "failed" if np.isnan(value) else f"{value:.4g} [{low:.4g}, {high:.4g}]"


def curve_text(curve):
    """The curve for a terminal: each measure as ``estimate [low, high]``, the frontier marked."""
    columns = [_curve.QUALITY, *curve.attrs["metrics"]]
    return _with_intervals(curve_table(curve), columns).to_string()


def curve_failures(curve):
    """One ``Failed: <method> <setting>: <reason>`` line per setting that failed."""
    failed = curve[curve["error"].notna()]
    return [
        f"Failed: {f'{method} {setting}'.strip()}: {reason}"
        for method, setting, reason in failed[["method", "setting", "error"]].itertuples(
            index=False
        )
    ]


def curve_unfinished(curve):
    """Why a curve has nothing to compare (PCA or every fair setting failed), or None."""
    finished = curve.loc[curve["error"].isna(), "method"]
    if "PCA" in set(finished) and (finished != "PCA").any():
        return None
    missing = (
        "PCA, the reference, could not" if "PCA" not in set(finished) else "no fair setting could"
    )
    return f"{missing} be fitted (the reasons are above)."


def _absolute(output):
    """``output`` as an absolute path without symbolic links (the folder really written)."""
    return Path(os.path.realpath(output))


@contextlib.contextmanager
def staged_folder(output, force):
    """A staging folder beside ``output`` that replaces it as a whole when the block ends.

    Nothing reaches ``output`` unless the block completes (:func:`fairpca._output.publish`);
    the staging folder is removed in every case. The caller holds ``output``'s lock.

    Parameters
    ----------
    output : path-like
    force : bool
        Whether a non-empty ``output`` may be replaced.

    Yields
    ------
    staging : pathlib.Path
    """
    path = _absolute(output)
    staging = None
    try:
        staging = _output.stage(path)
        yield staging
        _output.publish(staging, path, force)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def output_folder(output, *, force=False, protected=()):
    """Check and lock ``output``, then give a staging folder that replaces it whole.

    Parameters
    ----------
    output : path-like
        The folder to write (created if needed).
    force : bool, default=False
        Replace a non-empty ``output`` (all of it, once the new one is complete).
    protected : sequence of path-like, default=()
        Paths ``force`` must not remove (the current folder always is).

    Yields
    ------
    staging : pathlib.Path

    Raises
    ------
    ValueError
        ``output`` cannot be written or is not empty without ``force``.
    fairpca._output.OutputLocked
        Another run is writing ``output``.
    OSError
        Writing failed; ``output`` is left as it was.
    """
    path = _absolute(output)
    lock, _ = _output.reserve(path, force, given=output, protected=[os.getcwd(), *protected])
    try:
        with staged_folder(path, force) as staging:
            yield staging
    finally:
        _output.release_lock(lock)


def write_comparison_report(
    comparison, output, *, source=None, force=False, progress=None, by_d=True
):
    """Write a comparison's report into the folder ``output``, which appears whole.

    The files of ``fairpca compare --output``: ``comparison.csv`` (every method
    asked for, with its status), ``comparison.md``, ``report.html`` (one
    self-contained file), ``group_errors_by_d.csv``, ``group_losses.csv`` and
    the PNG plots (trade-off, per-group error at d and against d, biplot,
    communality). Methods are refitted at other d for the plot against d
    (unless ``by_d`` is False).

    Parameters
    ----------
    comparison : fairpca.compare.Comparison
    output : path-like
        The folder (see :func:`output_folder` for how it is written).
    source : str, default=None
        What the data are, for the report (default: the split's description).
    force : bool, default=False
        Replace a non-empty ``output``.
    progress : callable, default=None
        Called with a line per refit.
    by_d : bool, default=True
        Refit at other d for the per-group error against d
        (``group_errors_by_d.csv`` and ``.png``); False: neither, and the
        report says the plot was not requested.

    Returns
    -------
    written : list of str
        The files' names.
    """
    source = comparison.split.description if source is None else source
    with output_folder(output, force=force) as staging:
        return write_comparison_files(
            comparison,
            staging,
            source=source,
            notes=comparison_notes(comparison),
            progress=progress,
            by_d=by_d,
        )


def write_tradeoff_report(curve, output, *, source="", force=False):
    """Write a trade-off curve's report into the folder ``output``, which appears whole.

    The files of ``fairpca tradeoff --output``: ``tradeoff.csv``,
    ``group_losses.csv``, the frontier plot (``tradeoff.png``, ``tradeoff.svg``)
    and ``report.html``.

    Parameters
    ----------
    curve : pandas.DataFrame
        :func:`fairpca.tradeoff.tradeoff_curve_split`'s result.
    output : path-like
        The folder (see :func:`output_folder`).
    source : str, default=""
        What the data are, for the report.
    force : bool, default=False
        Replace a non-empty ``output``.

    Returns
    -------
    written : list of str
    """
    with output_folder(output, force=force) as staging:
        return write_tradeoff_files(curve, staging, source=source)


def _with_baselines(comparison, table):
    """``table`` with the comparison's downstream baselines as rows at its end."""
    import pandas as pd

    baselines = getattr(comparison, "baselines", None)
    if baselines is None or not len(baselines) or not len(table):
        return table
    rows = baselines.reindex(columns=table.columns)
    if "status" not in table:
        return pd.concat([table, rows])
    rows["status"] = "baseline"
    rows["reason"] = "reference for the downstream columns, not a representation"
    return pd.concat([table.astype(object), rows.astype(object)])


def by_d_notes(by_d, n_components):
    """Sentences on the refits for the plot against d (``by_d``: None when not requested)."""
    if by_d is None:
        return [
            "The plot of the per-group error against d was not requested (--no-by-d): no "
            "method was refitted at other d."
        ]
    notes = []
    if by_d.attrs.get("not_refitted"):
        slow = ", ".join(f"{m} ({t:.0f} s)" for m, t in by_d.attrs["not_refitted"].items())
        notes.append(
            f"Not refitted at other d for the plot against d (their fit took longer than "
            f"{_methods.REFIT_SECONDS:g} s): {slow}; they have a point at "
            f"d = {n_components} only."
        )
    if by_d.attrs.get("given_up"):
        given_up = ", ".join(f"{m} ({how})" for m, how in by_d.attrs["given_up"].items())
        notes.append(
            f"Refits for the plot against d given up (not tried at the following d): {given_up}."
        )
    unconverged = by_d.loc[~by_d["converged"].astype(bool), ["method", "d"]].drop_duplicates()
    if len(unconverged):
        refits = ", ".join(f"{m} (d = {d})" for m, d in unconverged.itertuples(index=False))
        notes.append(
            f"Refits for the plot against d that did not converge: {refits}; their points "
            "describe the last iterate."
        )
    return notes


def write_comparison_files(
    comparison, output, *, source, notes, progress=None, notify=None, by_d=True
):
    """Write a comparison's files into the folder ``output``, as they come (not staged).

    :func:`write_comparison_report` stages and locks the folder around this.

    Parameters
    ----------
    comparison : fairpca.compare.Comparison
    output : pathlib.Path
        The folder (a staging folder, for the command line).
    source : str
        The data's description (it may hold the user's file name).
    notes : list of str
        Sentences on the results (:func:`comparison_notes`); the refits' are added.
    progress : callable, default=None
        Called with a line per refit for the plot against d.
    notify : callable, default=None
        Called with each note the refits add, as it is known.
    by_d : bool, default=True
        Refit at other d for the plot against d (:func:`by_d_notes`); False:
        no refit, no ``group_errors_by_d`` file, and a note saying so.

    Returns
    -------
    written : list of str
        The files' names.
    """
    table, split = comparison.table, comparison.split
    fairness = [c for c in TRADEOFF_PLOT_COLUMNS if c in table.columns]
    every_method = every_method_table(comparison)
    output.mkdir(parents=True, exist_ok=True)
    _output.write_csv(every_method, output / "comparison.csv", index_label="method")
    outcomes = comparison.group_outcomes
    not_linear = {
        name: "not a linear projection: no rank-d reconstruction, so no marginal loss"
        for name in table.index
        if outcomes is None or name not in set(outcomes["method"])
    }
    notes = list(notes)
    by_d_table = _methods.group_errors_by_d(comparison, progress=progress) if by_d else None
    for note in by_d_notes(by_d_table, comparison.n_components):
        notes.append(note)
        if notify is not None:
            notify(note)
    legend = list(dict.fromkeys(describe_metric(metric_family(c)) for c in table.columns))
    # The biplot and the communality are about components; LinearErasure keeps
    # every feature and has none.
    fitted = {
        name: est
        for name, est in comparison.estimators.items()
        if "n_components" in est.get_params()
    }
    figures = [
        ("tradeoff.png", lambda: plotting.plot_tradeoff(table, fairness)),
        ("group_errors.png", lambda: plotting.plot_group_errors(table)),
    ]
    if by_d_table is not None:
        figures.append(
            ("group_errors_by_d.png", lambda: plotting.plot_group_errors_by_d(by_d_table))
        )
    if comparison.n_components >= 2:
        figures.append(
            (
                "biplot.png",
                lambda: plotting.plot_protected_biplot(
                    fitted, split.X_test, split.s_test, feature_names=split.feature_names
                ),
            )
        )
    figures.append(
        ("communality.png", lambda: plotting.plot_communality(fitted, split.X_test, split.s_test))
    )
    _output.write_text(
        output / "comparison.md",
        f"# fairpca compare\n\nData: {_output.escape_markdown(source)}. Target dimension "
        f"d = {comparison.n_components}; seed {comparison.random_state}; every number is "
        "computed on the held-out rows.\n\n"
        + _output.markdown_table(every_method)
        + "".join(f"\n{_output.escape_markdown(note)}\n" for note in notes)
        + "\n## Groups against PCA\n\n"
        + _group_markdown(outcomes, ["method"], not_linear)
        + "\n## What the columns mean\n\n"
        + "".join(f"- {_output.escape_markdown(line)}\n" for line in legend)
        + "\n## Plots\n\n"
        + "".join(f"- [{name}]({name})\n" for name, _ in figures),
    )
    written = ["comparison.csv", "comparison.md"]
    if by_d_table is not None:
        _output.write_csv(by_d_table, output / "group_errors_by_d.csv", index=False)
        written.append("group_errors_by_d.csv")
    if outcomes is not None:
        _output.write_csv(outcomes, output / "group_losses.csv", index=False)
        written.append("group_losses.csv")
    made = []
    for filename, make in figures:
        figure = make()
        figure.savefig(output / filename, dpi=120)
        written.append(filename)
        made.append((filename, figure))
    facts = {
        "data": source,
        "target dimension d": comparison.n_components,
        "seed": comparison.random_state,
        "metrics": "computed on the held-out rows (fairpca.metrics.report)",
    }
    sections = [
        ("Comparison", [*notes, every_method]),
        ("Groups against PCA", _group_blocks(outcomes, ["method"], not_linear)),
        ("What the columns mean", legend),
    ]
    sections += [(filename.removesuffix(".png"), [figure]) for filename, figure in made]
    _output.write_text(
        output / "report.html", _html.html_report("fairpca compare", facts, sections)
    )
    written.append("report.html")
    return written


def write_tradeoff_files(curve, output, *, source):
    """Write a trade-off curve's files into the folder ``output``, as they come (not staged).

    :func:`write_tradeoff_report` stages and locks the folder around this.

    Parameters
    ----------
    curve : pandas.DataFrame
        :func:`fairpca.tradeoff.tradeoff_curve_split`'s result.
    output : pathlib.Path
        The folder (a staging folder, for the command line).
    source : str
        The data's description.

    Returns
    -------
    written : list of str
        The files' names.
    """
    table = curve_table(curve)
    _output.write_csv(table, output / "tradeoff.csv")
    outcomes = _curve.group_outcomes(curve)
    _output.write_csv(outcomes, output / "group_losses.csv", index=False)
    figure = plotting.plot_tradeoff_curve(curve)
    figure.savefig(output / "tradeoff.png", dpi=120)
    figure.savefig(output / "tradeoff.svg")
    attrs = curve.attrs
    facts = {
        "data": source,
        "target dimension d": attrs["n_components"],
        "seed": attrs["random_state"],
        "intervals": (
            f"{attrs['confidence']:.0%} symmetric bootstrap (estimate ± the quantile of the "
            f"resamples' distance to it), {attrs['n_bootstrap']} resamples of the held-out rows "
            "within each group, the same resamples for every setting (fits not repeated)"
        ),
    }
    # The per-group columns are in the panel (and in the CSV files).
    table = table[[c for c in table.columns if "[" not in str(c)]]
    frontier = table[table["on_frontier"] == True]  # noqa: E712 - object column
    sections = [
        ("Frontier: settings no other setting beats on every measure", [frontier]),
        ("Fairness against retained variance", [figure]),
        ("Groups against PCA, per setting", _group_blocks(outcomes, ["method", "setting"])),
        ("Every setting", [table]),
        ("What the columns mean", legend(table.columns)),
    ]
    _output.write_text(
        output / "report.html", _html.html_report("fairpca tradeoff", facts, sections)
    )
    return ["tradeoff.csv", "group_losses.csv", "tradeoff.png", "tradeoff.svg", "report.html"]


def _group_legend(html=True):
    """What the per-group panel shows, and the rule that marks a group worse off."""
    return (
        "For each group: its per-row marginal loss on the held-out rows (Samadi et al.: "
        "its mean squared reconstruction error minus that of its own best rank-d "
        "projection; lower is better), in brackets its ratio to the group's reference"
        + (", and below its per-row reconstruction error with PCA's (context). " if html else ". ")
        + f"{_html.WORSE_OFF_MARK} marks a group served worse than under PCA: its marginal loss "
        f"exceeds {_WORSE_OFF_FACTOR:g} x its reference, the larger of its PCA loss and "
        f"{_WORSE_OFF_FLOOR:g} x the groups' mean PCA loss (the rule of ParetoFairPCA's "
        "warning), i.e. a ratio above "
        f"{_WORSE_OFF_FACTOR:g}. Every value (with the per-row reconstruction errors) is in "
        "group_losses.csv."
    )


def _group_blocks(outcomes, by, others=None):
    """The HTML blocks of the per-group panel: the legend and the table."""
    if outcomes is None or outcomes.empty:
        return ["No method with per-group values (PCA or every linear projection failed)."]
    if outcomes["pca_marginal_loss"].isna().all():
        return ["PCA, the reference, was not fitted: no group is judged."]
    return [_group_legend(), _html.group_panel(outcomes, by, others)]


def _group_markdown(outcomes, by, others=None):
    """The per-group panel in Markdown: its legend and one line per method (or setting).

    A list, not a table: ``comparison.md`` holds one table, the comparison's.
    Every text is escaped.
    """
    if outcomes is None or outcomes.empty or outcomes["pca_marginal_loss"].isna().all():
        return "No group is judged (PCA or every linear projection was not fitted).\n"
    lines = [_output.escape_markdown(_group_legend(html=False)), ""]
    for key, rows in outcomes.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        label = " ".join(str(part) for part in key if str(part))
        cells = "; ".join(
            f"{_output.escape_markdown(row.group)} {row.marginal_loss:.4g} (×{row.ratio:.2f})"
            + (f" {_html.WORSE_OFF_MARK}" if row.worse_off == True else "")  # noqa: E712
            for row in rows.itertuples(index=False)
        )
        lines.append(f"- {_output.escape_markdown(label)}: {cells}")
    for label, why in (others or {}).items():
        lines.append(f"- {_output.escape_markdown(label)}: {_output.escape_markdown(why)}")
    return "\n".join(lines) + "\n"
