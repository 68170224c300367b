"""The command line's output folders: checked and locked first, written staged.

:func:`check_output` runs before any computation (every check of
``--output`` that can be made then is made then, as a usage error);
:func:`staged` gives the folder the files are written in and puts it in
place with one rename; :func:`write_compare` and :func:`write_tradeoff` write
the files of ``fairpca compare`` and ``fairpca tradeoff``, every text of the
user's data escaped by :mod:`fairpca._output`'s helper for its language.
"""

import contextlib
import os
import shutil
from pathlib import Path

import click

__all__ = ["check_output", "say", "staged", "write_compare", "write_tradeoff"]


def say(text, err=False):
    """Print a line that holds the user's text (a file name, a label) on the terminal.

    Parameters
    ----------
    text : str
    err : bool, default=False
        Standard error instead of standard output.

    Notes
    -----
    Invisible characters are shown as escapes (:func:`fairpca._output.visible_text`):
    a terminal control sequence in a label is not run, and a file name that is
    not valid UTF-8 does not make a strict UTF-8 stream raise.
    """
    from fairpca._output import visible_text

    click.echo(visible_text(text), err=err)


#: The output folders this process has locked (absolute path -> (lock file, --force)),
#: from :func:`check_output` until the command ends.
_RESERVED = {}


def _absolute(output):
    """``output`` as an absolute path without symbolic links (the folder really written)."""
    return Path(os.path.realpath(output))


def check_output(output, force, protected=()):
    """Refuse, before any computation, an --output that cannot or must not be written.

    Takes the output's lock (:func:`fairpca._output.reserve`) until the command
    ends, so that a second run on the same folder fails now rather than mixing
    its files with this one's, and cleans what killed runs left beside it.

    Parameters
    ----------
    output : pathlib.Path or None
        ``--output`` as given; None: nothing to check.
    force : bool
        ``--force``.
    protected : sequence of path-like, default=()
        Input files ``--force`` must not remove (the current folder is always
        protected).

    Raises
    ------
    click.UsageError
        ``output`` cannot be written or must not be replaced (the message says why).
    click.ClickException
        Another run holds the lock.
    """
    from fairpca._output import OutputLocked, release_lock, reserve

    if output is None:
        return
    path = _absolute(output)
    try:
        lock, notes = reserve(path, force, given=output, protected=[os.getcwd(), *protected])
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    except OutputLocked as exc:
        raise click.ClickException(str(exc)) from exc
    for note in notes:
        say(note, err=True)
    _RESERVED[path] = (lock, force)

    def release():
        _RESERVED.pop(path, None)
        release_lock(lock)

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(release)
    else:  # called outside a command: the process's end releases it
        import atexit

        atexit.register(release)


@contextlib.contextmanager
def staged(output):
    """A staging folder beside ``output`` that replaces ``output`` as a whole at the end.

    Nothing reaches ``output`` unless the block completes: an error or an
    interruption while writing leaves ``output`` as it was (see
    :func:`fairpca._output.publish`). ``output`` must have been checked and
    locked by :func:`check_output`, which also recorded ``--force``.

    Parameters
    ----------
    output : pathlib.Path
        ``--output`` as given.

    Yields
    ------
    staging : pathlib.Path
        The folder to write the files in.
    """
    from fairpca._output import publish, stage

    path = _absolute(output)
    if path not in _RESERVED:
        check_output(output, force=False)
    force = _RESERVED[path][1]
    staging = None
    try:
        staging = stage(path)
        yield staging
        publish(staging, path, force)
    except OSError as exc:
        raise click.ClickException(f"could not write to {output}: {exc}") from exc
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def write_compare(comparison, output, fairness_columns, progress, source, notes):
    """Write the files of ``fairpca compare`` into the (staging) folder ``output``.

    Parameters
    ----------
    comparison : fairpca.compare.Comparison
    output : pathlib.Path
        The staging folder (:func:`staged`).
    fairness_columns : list of str
        The columns of the trade-off plot.
    progress : callable
        Called with a line per refit for the plot against d.
    source : str
        The data's description (it may hold the user's file name).
    notes : list of str
        Sentences on the results (the command line's notes); the refits' are added.

    Returns
    -------
    written : list of str
        The files' names.
    """
    from fairpca._html import html_report
    from fairpca._output import escape_markdown, markdown_table, write_csv, write_text
    from fairpca.compare import REFIT_SECONDS, every_method_table, group_errors_by_d
    from fairpca.metrics import describe_metric, metric_family
    from fairpca.plotting import (
        plot_communality,
        plot_group_errors,
        plot_group_errors_by_d,
        plot_protected_biplot,
        plot_tradeoff,
    )

    table, split = comparison.table, comparison.split
    every_method = every_method_table(comparison)
    output.mkdir(parents=True, exist_ok=True)
    write_csv(every_method, output / "comparison.csv", index_label="method")
    outcomes = comparison.group_outcomes
    not_linear = {
        name: "not a linear projection: no rank-d reconstruction, so no marginal loss"
        for name in table.index
        if outcomes is None or name not in set(outcomes["method"])
    }
    by_d = group_errors_by_d(comparison, progress=progress)
    notes = list(notes)
    if by_d.attrs["not_refitted"]:
        slow = ", ".join(f"{m} ({t:.0f} s)" for m, t in by_d.attrs["not_refitted"].items())
        notes.append(
            f"Not refitted at other d for the plot against d (their fit took longer than "
            f"{REFIT_SECONDS:g} s): {slow}; they have a point at d = {comparison.n_components} "
            "only."
        )
        say(notes[-1], err=True)
    unconverged = by_d.loc[~by_d["converged"].astype(bool), ["method", "d"]].drop_duplicates()
    if len(unconverged):
        refits = ", ".join(f"{m} (d = {d})" for m, d in unconverged.itertuples(index=False))
        notes.append(
            f"Refits for the plot against d that did not converge: {refits}; their points "
            "describe the last iterate."
        )
        say(notes[-1], err=True)
    legend = list(dict.fromkeys(describe_metric(metric_family(c)) for c in table.columns))
    # The biplot and the communality are about components; LinearErasure keeps
    # every feature and has none.
    fitted = {
        name: est
        for name, est in comparison.estimators.items()
        if "n_components" in est.get_params()
    }
    figures = [
        ("tradeoff.png", lambda: plot_tradeoff(table, fairness_columns)),
        ("group_errors.png", lambda: plot_group_errors(table)),
        ("group_errors_by_d.png", lambda: plot_group_errors_by_d(by_d)),
    ]
    if comparison.n_components >= 2:
        figures.append(
            (
                "biplot.png",
                lambda: plot_protected_biplot(
                    fitted, split.X_test, split.s_test, feature_names=split.feature_names
                ),
            )
        )
    figures.append(
        ("communality.png", lambda: plot_communality(fitted, split.X_test, split.s_test))
    )
    write_text(
        output / "comparison.md",
        f"# fairpca compare\n\nData: {escape_markdown(source)}. Target dimension "
        f"d = {comparison.n_components}; seed {comparison.random_state}; every number is "
        "computed on the held-out rows.\n\n"
        + markdown_table(every_method)
        + "".join(f"\n{escape_markdown(note)}\n" for note in notes)
        + "\n## Groups against PCA\n\n"
        + _group_markdown(outcomes, ["method"], not_linear)
        + "\n## What the columns mean\n\n"
        + "".join(f"- {escape_markdown(line)}\n" for line in legend)
        + "\n## Plots\n\n"
        + "".join(f"- [{name}]({name})\n" for name, _ in figures),
    )
    written = ["comparison.csv", "comparison.md"]
    write_csv(by_d, output / "group_errors_by_d.csv", index=False)
    written.append("group_errors_by_d.csv")
    if outcomes is not None:
        write_csv(outcomes, output / "group_losses.csv", index=False)
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
    write_text(output / "report.html", html_report("fairpca compare", facts, sections))
    written.append("report.html")
    return written


def write_tradeoff(curve, table, output, source):
    """Write the files of ``fairpca tradeoff`` into the (staging) folder ``output``.

    Parameters
    ----------
    curve : pandas.DataFrame
        :func:`fairpca.tradeoff.tradeoff_curve_split`'s result.
    table : pandas.DataFrame
        The curve without its estimators, one row per setting.
    output : pathlib.Path
        The staging folder (:func:`staged`).
    source : str
        The data's description.

    Returns
    -------
    written : list of str
        The files' names.
    """
    from fairpca._html import html_report
    from fairpca._output import write_csv, write_text
    from fairpca.plotting import plot_tradeoff_curve
    from fairpca.tradeoff import group_outcomes

    write_csv(table, output / "tradeoff.csv")
    outcomes = group_outcomes(curve)
    write_csv(outcomes, output / "group_losses.csv", index=False)
    figure = plot_tradeoff_curve(curve)
    figure.savefig(output / "tradeoff.png", dpi=120)
    figure.savefig(output / "tradeoff.svg")
    attrs = curve.attrs
    facts = {
        "data": source,
        "target dimension d": attrs["n_components"],
        "seed": attrs["random_state"],
        "intervals": (
            f"{attrs['confidence']:.0%} percentile bootstrap, {attrs['n_bootstrap']} resamples "
            "of the held-out rows within each group (fits not repeated)"
        ),
    }
    # The per-group columns are in the panel (and in the CSV files).
    table = table[[c for c in table.columns if "[" not in str(c)]]
    frontier = table[table["on_frontier"]]
    sections = [
        ("Frontier: settings no other setting beats on every measure", [frontier]),
        ("Fairness against retained variance", [figure]),
        ("Groups against PCA, per setting", _group_blocks(outcomes, ["method", "setting"])),
        ("Every setting", [table]),
    ]
    write_text(output / "report.html", html_report("fairpca tradeoff", facts, sections))
    return ["tradeoff.csv", "group_losses.csv", "tradeoff.png", "tradeoff.svg", "report.html"]


def _group_legend(html=True):
    """What the per-group panel shows, and the rule that marks a group worse off."""
    from fairpca._html import WORSE_OFF_MARK
    from fairpca.pareto import _WORSE_OFF_FACTOR, _WORSE_OFF_FLOOR

    return (
        "For each group: its per-row marginal loss on the held-out rows (Samadi et al.: "
        "its mean squared reconstruction error minus that of its own best rank-d "
        "projection; lower is better), in brackets its ratio to the group's reference"
        + (", and below its per-row reconstruction error with PCA's (context). " if html else ". ")
        + f"{WORSE_OFF_MARK} marks a group served worse than under PCA: its marginal loss "
        f"exceeds {_WORSE_OFF_FACTOR:g} x its reference, the larger of its PCA loss and "
        f"{_WORSE_OFF_FLOOR:g} x the groups' mean PCA loss (the rule of ParetoFairPCA's "
        "warning), i.e. a ratio above "
        f"{_WORSE_OFF_FACTOR:g}. Every value (with the per-row reconstruction errors) is in "
        "group_losses.csv."
    )


def _group_blocks(outcomes, by, others=None):
    """The HTML blocks of the per-group panel: the legend and the table."""
    from fairpca._html import group_panel

    if outcomes is None or outcomes.empty:
        return ["No method with per-group values (PCA or every linear projection failed)."]
    if outcomes["pca_marginal_loss"].isna().all():
        return ["PCA, the reference, was not fitted: no group is judged."]
    return [_group_legend(), group_panel(outcomes, by, others)]


def _group_markdown(outcomes, by, others=None):
    """The per-group panel in Markdown: its legend and one line per method (or setting).

    A list, not a table: ``comparison.md`` holds one table, the comparison's.
    Every text is escaped.
    """
    from fairpca._html import WORSE_OFF_MARK
    from fairpca._output import escape_markdown

    if outcomes is None or outcomes.empty or outcomes["pca_marginal_loss"].isna().all():
        return "No group is judged (PCA or every linear projection was not fitted).\n"
    lines = [escape_markdown(_group_legend(html=False)), ""]
    for key, rows in outcomes.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        label = " ".join(str(part) for part in key if str(part))
        cells = "; ".join(
            f"{escape_markdown(row.group)} {row.marginal_loss:.4g} (×{row.ratio:.2f})"
            + (f" {WORSE_OFF_MARK}" if row.worse_off == True else "")  # noqa: E712
            for row in rows.itertuples(index=False)
        )
        lines.append(f"- {escape_markdown(label)}: {cells}")
    for label, why in (others or {}).items():
        lines.append(f"- {escape_markdown(label)}: {escape_markdown(why)}")
    return "\n".join(lines) + "\n"
