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
import time
import warnings
from pathlib import Path

try:
    import click
except ImportError as exc:  # pragma: no cover - depends on environment
    raise ImportError('the fairpca command line needs click: pip install "fairpca[cli]"') from exc

from fairpca import _reports
from fairpca import experiments as rep
from fairpca._cli_output import SHOWN, check_output, say, show_once, staged
from fairpca._cli_output import one_line_warning as _one_line_warning
from fairpca.compare import compare_split, make_methods
from fairpca.datasets import get_data_home, make_gaussian_groups, make_split, read_table
from fairpca.datasets._table import MAX_ENCODED_FEATURES
from fairpca.experiments import LEE2022_DATASETS, VU2022_DATASETS
from fairpca.tradeoff import FAIRNESS_METRICS, tradeoff_curve_split

__all__ = ["DATASETS", "main"]

#: ``--dataset`` name -> (protocol, its dataset argument): a paper that used the set.
#: Lee et al.'s preparation wins for the sets both papers used (German credit).
DATASETS = {
    **{name: ("vu2022", name) for name in VU2022_DATASETS},
    **{name: ("lee2022", name) for name in LEE2022_DATASETS},
    "german": ("lee2022", "german_credit"),
}


def _check_output(output, force, inputs):
    """:func:`check_output`, the inputs (``--data``, the data home) kept from ``--force``."""
    keep = [get_data_home(inputs.get("data_home"))]
    if inputs.get("data") is not None:
        keep.append(inputs["data"])
    check_output(output, force, keep)


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
            help=(
                "A real data set, prepared by a paper's protocol (fairpca.experiments): "
                "german or german_credit (groups: age >= 25), compas (Caucasian or not) and adult "
                "(sex) as Lee et al. 2022 (70/30 split, 57 / 11 / 97 features); default_credit "
                "(education low/high, 9000 training rows) and the FairML sets "
                + ", ".join(
                    name
                    for name, (protocol, _) in DATASETS.items()
                    if protocol == "vu2022" and name != "default_credit"
                )
                + " (groups: the file's last column) as Vu et al. 2022 (stratified 30/70 "
                "split). Files are read from $FAIRPCA_DATA (else ~/scikit_learn_data/fairpca). "
                "Not with --data."
            ),
        ),
        click.option(
            "--split",
            "split_index",
            type=click.IntRange(0, 9),
            help="Which of the protocol's 10 train/test splits to use with --dataset [default: 0].",
        ),
        click.option("--sensitive", help="Column of --data holding the protected group."),
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fairpca")
def cli():
    """Fair principal component analysis: compare methods and audit projections."""
    # One plain line per warning: the category and the message, no library source;
    # a message repeated (by the refits at other d, say) is shown once.
    warnings.formatwarning = _one_line_warning
    warnings.showwarning = show_once
    SHOWN.clear()


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
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help=(
        "Directory for comparison.csv, comparison.md and PNG plots: trade-off, per-group "
        "error (at d and against d), biplot and communality of the protected attribute "
        "(created if needed; written only once everything is computed)."
    ),
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace a non-empty --output folder (all of it, once the new one is complete).",
)
def compare(time_budget, output, force, **data_options):
    """Fit every method and print a table of quality and fairness metrics.

    Without --data or --dataset the built-in synthetic set is used (1000 rows,
    10 features, two groups of 70 % and 30 %, a binary target). Features are
    standardised on the training split; metrics are computed on the held-out
    split. A line on standard error names each method as it runs and its time.
    """
    _check_output(output, force, data_options)
    split, source, methods = _resolve_split(**data_options)
    try:
        comparison = compare_split(
            split,
            n_components=data_options["n_components"],
            random_state=data_options["random_state"],
            time_budget=time_budget,
            progress=_progress,
            methods=methods,
        )
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from exc
    _print_and_write(comparison, output, source)


def _resolve_split(
    data,
    dataset,
    split_index,
    sensitive,
    target,
    n_components,
    test_size,
    random_state,
    features,
    drop,
    impute,
    bins,
    column_names,
    max_encoded_features,
    methods,
    data_home,
    download,
):
    """The train/test split the options name, a one-line description, the methods asked for.

    ``--dataset``: the paper protocol's split; ``--data``: the CSV (categorical
    columns encoded, see :func:`fairpca.datasets.make_split`); neither: the
    built-in synthetic set.
    """
    methods = _names(methods)
    if data_home is not None and dataset is None:
        raise click.UsageError("--data-home needs --dataset (it is where the data sets are).")
    if download and dataset is None:
        raise click.UsageError("--download needs --dataset (it fetches that data set's files).")
    csv_only = {
        "--features": features,
        "--drop": drop,
        "--impute": impute,
        "--bins": bins,
        "--column-names": column_names,
        "--max-encoded-features": max_encoded_features,
    }
    if data is None and any(v is not None for v in csv_only.values()):
        given = [k for k, v in csv_only.items() if v is not None]
        raise click.UsageError(f"{', '.join(given)} need --data (a CSV file).")
    if dataset is not None:
        if data is not None:
            raise click.UsageError("--data and --dataset are mutually exclusive.")
        if sensitive is not None or target is not None:
            raise click.UsageError(
                "--sensitive and --target need --data; --dataset fixes the groups and target."
            )
        if test_size is not None:
            raise click.UsageError(
                "--test-size does not apply to --dataset: the protocol fixes it."
            )
        split = _load_dataset(
            dataset, 0 if split_index is None else split_index, data_home, download
        )
        source = f"{dataset} ({split.description})"
        n_rows, n_features = split.X_train.shape[0] + split.X_test.shape[0], split.X_train.shape[1]
        _echo_data(source, n_rows, n_features, n_components)
        return split, source, methods
    if split_index is not None:
        raise click.UsageError("--split needs --dataset.")
    if data is None:
        if sensitive is not None or target is not None:
            raise click.UsageError("--sensitive and --target need --data.")
        X, s, y = make_gaussian_groups(random_state=random_state, return_target=True)
        source = "built-in synthetic data (make_gaussian_groups)"
    else:
        if sensitive is None:
            raise click.UsageError("--data needs --sensitive COLUMN naming the protected group.")
        try:
            table = read_table(
                data,
                sensitive,
                target,
                features=_names(features),
                drop=_names(drop),
                bins=bins,
                column_names=_names(column_names),
                max_encoded_features=max_encoded_features or MAX_ENCODED_FEATURES,
            )
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        for note in table.notes:
            say(note, err=True)
        X, s, y = table.features, table.groups, table.target
        source = str(data)
    try:
        split = make_split(
            X,
            s,
            y,
            test_size=0.3 if test_size is None else test_size,
            random_state=random_state,
            impute=impute or "none",
        )
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from exc
    n_rows = split.X_train.shape[0] + split.X_test.shape[0]
    _echo_data(source, n_rows, split.X_train.shape[1], n_components)
    return split, f"{source}; {split.description}", methods


def _names(text):
    """A comma-separated option as a list of names (None when not given)."""
    return None if text is None else [name.strip() for name in text.split(",") if name.strip()]


def _jobs_option(what):
    """The ``--jobs`` option (checked by :func:`_check_jobs`)."""
    return click.option(
        "--jobs",
        "n_jobs",
        type=int,
        default=1,
        show_default=True,
        help=f"{what} (-1: one per core).",
    )


def _check_jobs(n_jobs):
    """``--jobs``: a positive number of processes, or -1 for one per core."""
    if n_jobs == 0 or n_jobs < -1:
        raise click.UsageError(f"--jobs must be a positive number or -1, got {n_jobs}.")


def _progress(message):
    click.echo(message, err=True)


def _echo_data(source, n_rows, n_features, n_components):
    say(f"data: {source}; {n_rows} rows, {n_features} features; d = {n_components}")


def _load_dataset(name, split_index, data_home=None, download=False):
    """The protocol's split of a real data set; missing or corrupt files end the command."""
    protocol, dataset = DATASETS[name]
    try:
        return getattr(rep, protocol)(
            dataset, split=split_index, data_home=data_home, download=download
        )
    except ImportError as exc:
        raise click.ClickException(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot load data set {name!r}: {exc}") from exc


def _print_and_write(comparison, output, source):
    """Print the table, the notes and the legend; write the files; end by what finished."""
    if text := _reports.comparison_text(comparison):
        click.echo(text)
    notes = _reports.comparison_notes(comparison)
    for note in notes:
        say(note, err=True)
    click.echo(_reports.columns_text(comparison))
    if reason := _reports.unfinished(comparison.outcomes):
        raise click.ClickException(reason)
    if output is not None:
        with staged(output) as staging:
            written = _reports.write_comparison_files(
                comparison,
                staging,
                source=source,
                notes=notes,
                progress=_progress,
                notify=lambda note: say(note, err=True),
            )
        say(f"wrote {', '.join(written)} to {output}")


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
@_jobs_option("Settings fitted at once")
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help=(
        "Directory for tradeoff.csv, the frontier plot (tradeoff.png, tradeoff.svg) and "
        "report.html, one self-contained file (written only once everything is computed)."
    ),
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace a non-empty --output folder (all of it, once the new one is complete).",
)
def tradeoff(metrics, n_bootstrap, n_jobs, output, force, **data_options):
    """Sweep every method's fairness knob and show the fairness-variance frontier.

    Each method is fitted on the training split at every setting of its grid
    (fairpca.tradeoff.DEFAULT_GRIDS); retained variance and the fairness
    metrics are measured on the held-out split with 95 % bootstrap intervals,
    and the settings no other setting beats on every measure are marked.
    """
    _check_output(output, force, data_options)
    _check_jobs(n_jobs)
    split, source, methods = _resolve_split(**data_options)
    n_components, random_state = data_options["n_components"], data_options["random_state"]
    try:
        estimators = make_methods(n_components, random_state, projections_only=True, names=methods)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if not metrics:
        metrics = ["reconstruction_error_gap", "mmd2"]
        if split.y_train is not None:
            metrics.append("demographic_parity_difference")
    try:
        curve = tradeoff_curve_split(
            split,
            estimators=estimators,
            metrics=list(metrics),
            n_components=n_components,
            n_bootstrap=n_bootstrap,
            random_state=random_state,
            n_jobs=n_jobs,
            progress=_progress,
        )
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from exc
    say(_reports.curve_text(curve))
    for line in _reports.curve_failures(curve):
        click.echo(line, err=True)
    if reason := _reports.curve_unfinished(curve):
        raise click.ClickException(reason)
    if output is not None:
        with staged(output) as staging:
            written = _reports.write_tradeoff_files(curve, staging, source=source)
        say(f"wrote {', '.join(written)} to {output}")


@cli.command()
@click.argument("target", required=False)
@click.option("--list", "list_targets", is_flag=True, help="List the targets and exit.")
@click.option(
    "--quick", is_flag=True, help="Reduced run (fewer data sets, splits, settings) for CI."
)
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for the comparison CSV, the per-split CSV, report.md and a PNG plot.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing --output folder (all of it, once the new one is complete).",
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
@_jobs_option("Units of work run at once in separate processes")
def reproduce(target, list_targets, quick, output, force, data_home, splits, datasets, n_jobs):
    """Re-run a paper's experiment and print our numbers next to the paper's.

    Each cell is marked within / outside the paper's spread (mean ± one SD);
    claims read off the papers' figures are marked holds / fails. The paper
    numbers and their citations are in fairpca/experiments/reference.csv; the
    authors' per-split values in fairpca/experiments/authors_splits.csv.
    """
    if list_targets:
        for name, info in rep.TARGETS.items():
            click.echo(f"{name:20s} {info.title}")
            click.echo(f"{'':20s}   full: {info.full_description} (~{info.minutes():g} min)")
            click.echo(f"{'':20s}   --quick: {info.quick_description}")
        return
    if target is None:
        raise click.UsageError("give a TARGET or --list; targets: " + ", ".join(rep.TARGETS))
    if target not in rep.TARGETS:
        raise click.UsageError(
            f"unknown target {target!r}; valid targets: {', '.join(rep.TARGETS)}."
        )
    _check_output(output, force, {"data_home": data_home})
    _check_jobs(n_jobs)
    info = rep.TARGETS[target]
    try:
        jobs, unavailable = rep.plan(
            target,
            quick=quick,
            data_home=data_home,
            splits=splits,
            datasets=datasets or None,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if not jobs:
        covers = info.quick_description if quick else info.full_description
        raise click.UsageError(
            f"{target}: nothing to run for --dataset {', '.join(datasets)} "
            f"(the {'--quick' if quick else 'full'} run covers: {covers})."
        )
    if not quick:
        from joblib import effective_n_jobs

        # full_minutes was measured in one process; units are independent.
        workers = min(effective_n_jobs(n_jobs), max(len(jobs), 1))
        minutes = info.minutes(datasets or None) / workers
        click.echo(
            f"{target}: full run, expected to take about {minutes:.3g} min "
            f"with {workers} process{'es' if workers > 1 else ''} (use --quick for a short one)",
            err=True,
        )
    records, fit_seconds = [], []
    start = time.perf_counter()
    units = rep.execute(jobs, unavailable, n_jobs)
    try:
        # One line per unit of work: which methods it fitted and how long each took.
        for i, (label, unit_records, unit_seconds) in enumerate(units, start=1):
            records += unit_records
            fit_seconds += unit_seconds
            elapsed = time.perf_counter() - start
            times = ", ".join(
                f"{method}{f' {setting}' if setting else ''} {seconds:.2f} s"
                for method, setting, seconds in unit_seconds
            )
            click.echo(
                f"[{i}/{len(jobs)}] {label} done ({elapsed:.0f} s)"
                + (f": {times}" if times else ""),
                err=True,
            )
    except ImportError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot load the data of {target}: {exc}") from exc
    result = rep.summarise(
        target,
        records,
        unavailable,
        quick=quick,
        seconds=time.perf_counter() - start,
        fit_seconds=fit_seconds,
        splits=splits,
    )
    text = rep.to_markdown(result)
    click.echo("\n".join(line for line in text.splitlines() if not line.startswith("![")))
    for method, reason in unavailable.items():
        click.echo(f"{method}: not available ({reason})", err=True)
    if output is not None:
        with staged(output) as staging:
            written = rep.write_report(result, staging, force=True)
        say(f"wrote {', '.join(written)} to {output}")


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


def interrupted():
    """Say that the command was interrupted; the exit status of a SIGINT, 130."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: no traceback either
    click.echo("fairpca: interrupted.", err=True)
    return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
