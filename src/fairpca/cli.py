"""The ``fairpca`` command line.

``fairpca compare`` fits every available method on a training split of a data
set (the built-in synthetic one, a real data set prepared by a paper's
protocol, or a user's CSV), evaluates every metric of :mod:`fairpca.metrics` on
the held-out split, prints the table and, with ``--output``, writes it as CSV,
Markdown and one HTML report with plots. ``fairpca tradeoff`` sweeps each
method's fairness knob on the same kind of split (:mod:`fairpca.tradeoff`) and
writes the frontier with bootstrap intervals. Requires the ``cli`` extra
(click, pandas, matplotlib).
"""

import sys
from pathlib import Path

try:
    import click
except ImportError as exc:  # pragma: no cover - depends on environment
    raise ImportError('the fairpca command line needs click: pip install "fairpca[cli]"') from exc

import fairpca._cli_output as term
import fairpca.experiments as rep
from fairpca._cli_output import interrupted, names, progress_line, say
from fairpca._cli_output import one_line_warning as _one_line_warning  # noqa: F401 (old path)
from fairpca._sources import DATASETS, SourceError, dataset_help, load_split
from fairpca.compare import compare_split, make_methods
from fairpca.experiments import _progress
from fairpca.tradeoff import FAIRNESS_METRICS, tradeoff_curve_split

__all__ = ["DATASETS", "main"]


def _data_options(command):
    """The options of every command that reads a data set and splits it."""
    options = [
        click.option(
            "--data",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="CSV file with a header row; default: the built-in synthetic data set.",
        ),
        click.option(
            "--dataset",
            type=click.Choice(sorted(DATASETS)),
            metavar="NAME",
            help=dataset_help(),
        ),
        click.option(
            "--split",
            "split_index",
            type=click.IntRange(0, 9),
            help="Which of the protocol's 10 train/test splits to use with --dataset [default: 0].",
        ),
        click.option("--sensitive", help="Group column of --data; a,b: their combinations."),
        click.option(
            "--target", help="Binary column of --data for the downstream classifier metrics."
        ),
        click.option(
            "--n-components",
            "-d",
            type=click.IntRange(min=1),
            default=2,
            show_default=True,
            help="Target dimension.",
        ),
        click.option(
            "--test-size",
            type=click.FloatRange(0, 1, min_open=True, max_open=True),
            help="Share of rows held out for evaluation [default: 0.3]; not with --dataset.",
        ),
        click.option("--random-state", type=int, default=0, show_default=True, help="Seed."),
        click.option(
            "--features",
            metavar="COL,COL...",
            help="Columns of --data to use as features (default: every other column).",
        ),
        click.option("--drop", metavar="COL,COL...", help="Columns of --data to leave out."),
        click.option(
            "--impute",
            type=click.Choice(["none", "median", "drop-rows"]),
            help=(
                "Missing values in --data (a '?' or an empty cell): refuse, naming the columns "
                "[default: none]; fill with the training median or most frequent category; "
                "or drop those rows."
            ),
        ),
        click.option(
            "--bins",
            type=click.IntRange(min=2),
            help="Cut a numeric --sensitive column into this many quantile bins (groups).",
        ),
        click.option(
            "--column-names",
            metavar="COL,COL...",
            help="The --data file has no header row; these are its columns, in order.",
        ),
        click.option(
            "--max-encoded-features",
            type=click.IntRange(min=1),
            help=(
                "Most one-hot columns the text columns of --data may produce; past it the "
                "command stops before any fit and names the widest [default: 1000]."
            ),
        ),
        click.option(
            "--methods",
            metavar="NAME,NAME...",
            help="Methods to run (PCA, the reference, always runs) [default: every method].",
        ),
        click.option(
            "--data-home",
            type=click.Path(file_okay=False, path_type=Path),
            help=(
                "Folder of the data sets for --dataset [default: $FAIRPCA_DATA, else "
                "~/scikit_learn_data/fairpca]."
            ),
        ),
        click.option(
            "--download",
            is_flag=True,
            help=(
                "With --dataset: fetch missing files from their publishers into the data home "
                "(SHA-256 verified; needs a network)."
            ),
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _output_options(help, replaced="a non-empty"):
    """The ``--output`` folder (``help`` says what is written in it) and ``--force``."""

    def add(command):
        force = f"Replace {replaced} --output folder (all of it, once the new one is complete)."
        command = click.option("--force", is_flag=True, help=force)(command)
        folder = click.Path(file_okay=False, path_type=Path)
        return click.option("--output", type=folder, help=help)(command)

    return add


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fairpca")
def cli():
    """Fair principal component analysis: compare methods and audit projections."""
    term.plain_warnings()


@cli.command()
@_data_options
@click.option(
    "--time-budget",
    type=click.FloatRange(min=0, min_open=True),
    help=(
        "Seconds each method may take to fit; a method that needs longer is stopped and "
        "reported as such (fits then run in child processes) [default: no limit]."
    ),
)
@click.option(
    "--by-d/--no-by-d",
    default=True,
    show_default=True,
    help="With --output: refit the methods at d = 1..5 for the plot of the per-group error "
    "against d (methods stopped, failed or slow at d are not refitted).",
)
@_output_options(
    "Directory for report.html (one self-contained file), comparison.csv, comparison.md "
    "and PNG plots: trade-off, per-group error (at d and against d), biplot, communality "
    "(created if needed; written only once everything is computed)."
)
def compare(time_budget, by_d, output, force, **data_options):
    """Fit every method and print a table of quality and fairness metrics.

    Without --data or --dataset the built-in synthetic set is used (1000 rows,
    10 features, two groups of 70 % and 30 %, a binary target). Features are
    standardised on the training split; metrics are computed on the held-out
    split. A line on standard error names each method as it runs and its time.
    """
    term.check_output(output, force, term.inputs(**data_options))
    split, source, methods = _resolve_split(**data_options)
    try:
        comparison = compare_split(
            split,
            n_components=data_options["n_components"],
            random_state=data_options["random_state"],
            time_budget=time_budget,
            progress=progress_line,
            methods=methods,
        )
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from exc
    term.show_comparison(comparison, output, source, by_d=by_d)


def _resolve_split(n_components, methods, **options):
    """The train/test split the options name, a one-line description, the methods asked for.

    ``--dataset``: the paper protocol's split; ``--data``: the CSV (categorical
    columns encoded, see :func:`fairpca.datasets.make_split`); neither: the
    built-in synthetic set (:func:`fairpca._sources.load_split`).
    """
    data, dataset = options["data"], options["dataset"]
    sensitive, target = options["sensitive"], options["target"]
    if options["data_home"] is not None and dataset is None:
        raise click.UsageError("--data-home needs --dataset (it is where the data sets are).")
    if options["download"] and dataset is None:
        raise click.UsageError("--download needs --dataset (it fetches that data set's files).")
    csv_only = ["features", "drop", "impute", "bins", "column_names", "max_encoded_features"]
    if data is None and (given := [n for n in csv_only if options[n] is not None]):
        given = ", ".join("--" + name.replace("_", "-") for name in given)
        raise click.UsageError(f"{given} need --data (a CSV file).")
    if dataset is not None:
        if data is not None:
            raise click.UsageError("--data and --dataset are mutually exclusive.")
        if sensitive is not None or target is not None:
            raise click.UsageError(
                "--sensitive and --target need --data; --dataset fixes the groups and target."
            )
        if options["test_size"] is not None:
            raise click.UsageError(
                "--test-size does not apply to --dataset: the protocol fixes it."
            )
    elif options["split_index"] is not None:
        raise click.UsageError("--split needs --dataset.")
    elif data is None and (sensitive is not None or target is not None):
        raise click.UsageError("--sensitive and --target need --data.")
    elif data is not None and sensitive is None:
        raise click.UsageError("--data needs --sensitive COLUMN naming the protected group.")
    for name in ("features", "drop", "column_names"):
        options[name] = names(options[name])
    try:
        loaded = load_split(**options, notify=lambda note: say(note, err=True))
    except SourceError as exc:
        raise click.ClickException(str(exc)) from exc
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from exc
    say(loaded.data_line(n_components))
    return loaded.split, loaded.source, names(methods)


@cli.command()
@_data_options
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    type=click.Choice(FAIRNESS_METRICS),
    help=(
        "Fairness metric (lower is fairer), repeatable [default: reconstruction_error_gap "
        "and mmd2, and demographic_parity_difference with --target]."
    ),
)
@click.option(
    "--n-bootstrap",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Bootstrap resamples of the held-out rows for the intervals.",
)
@term.jobs_option("Settings fitted at once")
@_output_options(
    "Directory for tradeoff.csv, the frontier plot (tradeoff.png, tradeoff.svg) and "
    "report.html, one self-contained file (written only once everything is computed)."
)
def tradeoff(metrics, n_bootstrap, n_jobs, output, force, **data_options):
    """Sweep every method's fairness knob and show the fairness-variance frontier.

    Each method is fitted on the training split at every setting of its grid
    (fairpca.tradeoff.DEFAULT_GRIDS); retained variance and the fairness
    metrics are measured on the held-out split with 95 % bootstrap intervals,
    and the settings no other setting beats on every measure are marked.
    """
    term.check_output(output, force, term.inputs(**data_options))
    term.check_jobs(n_jobs)
    split, source, methods = _resolve_split(**data_options)
    n_components, random_state = data_options["n_components"], data_options["random_state"]
    try:
        estimators = make_methods(n_components, random_state, projections_only=True, names=methods)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    metrics = term.curve_metrics(metrics, split)
    try:
        curve = tradeoff_curve_split(
            split,
            estimators=estimators,
            metrics=metrics,
            n_components=n_components,
            n_bootstrap=n_bootstrap,
            random_state=random_state,
            n_jobs=n_jobs,
            progress=progress_line,
        )
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from exc
    term.show_curve(curve, output, source)


@cli.command()
@click.argument("target", required=False)
@click.option("--list", "list_targets", is_flag=True, help="List the targets and exit.")
@click.option(
    "--quick", is_flag=True, help="Reduced run (fewer data sets, splits, settings) for CI."
)
@_output_options(
    "Directory for the comparison CSV, the per-split CSV, report.md, report.html (the "
    "same report as one self-contained page) and a PNG plot.",
    replaced="an existing",
)
@click.option(
    "--data-home",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the data files [default: $FAIRPCA_DATA, else ~/scikit_learn_data/fairpca].",
)
@click.option(
    "--splits",
    type=click.Choice(["ours", "authors"]),
    default="ours",
    show_default=True,
    help="Train/test splits: this library's seeded ones, or the authors' own "
    "(lee2022-table1, vu2022-table1); on the authors' splits the report also "
    "compares split by split where the authors recorded per-split values.",
)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    help="Run only this data set (repeat for several; lee2022-table1, vu2022-table1).",
)
@term.jobs_option("Units of work run at once in separate processes")
def reproduce(target, list_targets, quick, output, force, data_home, splits, datasets, n_jobs):
    """Re-run a paper's experiment and print our numbers next to the paper's.

    Each cell is marked within / outside the paper's spread (mean ± one SD);
    claims read off the papers' figures are marked holds / fails. The paper
    numbers and their citations are in fairpca/experiments/reference.csv; the
    authors' per-split values in fairpca/experiments/authors_splits.csv.
    """
    if list_targets:
        click.echo("\n".join(_progress.target_lines(rep.TARGETS)))
        return
    if target is None:
        raise click.UsageError("give a TARGET or --list; targets: " + ", ".join(rep.TARGETS))
    if target not in rep.TARGETS:
        raise click.UsageError(
            f"unknown target {target!r}; valid targets: {', '.join(rep.TARGETS)}."
        )
    term.check_output(output, force, term.inputs(data_home=data_home))
    term.check_jobs(n_jobs)
    info = rep.TARGETS[target]
    try:
        jobs, unavailable = rep.plan(
            target, quick=quick, data_home=data_home, splits=splits, datasets=datasets or None
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if not jobs:
        raise click.UsageError(_progress.nothing_to_run(target, info, datasets, quick))
    if not quick:
        progress_line(_progress.expected_time(target, info, len(jobs), n_jobs, datasets or None))
    units = rep.execute(jobs, unavailable, n_jobs)
    try:
        # One line per unit of work: which methods it fitted and how long each took.
        records, times = _progress.run_units(units, len(jobs), progress_line)
    except ImportError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot load the data of {target}: {exc}") from exc
    result = rep.summarise(target, records, unavailable, quick=quick, splits=splits, **times)
    click.echo(_progress.terminal_text(rep.to_markdown(result)))
    for method, reason in unavailable.items():
        click.echo(f"{method}: not available ({reason})", err=True)
    term.write_output(output, lambda staging: rep.write_report(result, staging, force=True))


def main(argv=None):
    """Entry point of the ``fairpca`` console script.

    Ctrl-C (SIGINT) ends the command with one line and status 130, the shell's
    convention, without a traceback; what the command had staged is removed
    and ``--output`` is left as it was (or complete, if it was already in place).
    """
    try:
        return cli.main(args=argv, prog_name="fairpca", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        return interrupted()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
