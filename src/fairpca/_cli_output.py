"""The command line's terminal and output folders (click's side of :mod:`fairpca._reports`).

:func:`say` prints the user's text safely; :func:`one_line_warning` and
:func:`show_once` print each warning as one plain line, once.
:func:`names` reads a comma-separated option. :func:`show_comparison` and
:func:`show_curve` print what a comparison or a curve found and write its
files. :func:`check_output` runs before any computation (every check of
``--output`` that can be made then is made then, as a usage error) and locks
the folder; :func:`staged` gives the folder the files are written in and puts
it in place with one rename (:func:`fairpca._reports.staged_folder`). What is
written, and the notes and tables printed, are :mod:`fairpca._reports`'s.
"""

import contextlib
import os
import sys
import warnings
from pathlib import Path

import click

import fairpca._reports as _reports
from fairpca._output import OutputLocked, release_lock, reserve, visible_text
from fairpca._reports import _group_blocks, _group_markdown  # noqa: F401 (their tests' path)
from fairpca.datasets import get_data_home

__all__ = [
    "check_jobs",
    "check_output",
    "curve_metrics",
    "inputs",
    "interrupted",
    "jobs_option",
    "names",
    "one_line_warning",
    "plain_warnings",
    "progress_line",
    "say",
    "show_comparison",
    "show_curve",
    "show_once",
    "staged",
    "write_output",
]


def one_line_warning(message, category, filename, lineno, line=None):
    """A warning as one plain line: its category and message, no library source."""
    return f"{category.__name__}: {message}\n"


#: The warning lines this command has shown (the ``once`` filter cannot do this: every
#: ``catch_warnings`` block inside a fit resets its registry).
SHOWN = set()


def show_once(message, category, filename, lineno, file=None, line=None):
    """Show a warning's line unless this command has shown it (refits at other d repeat them)."""
    text = one_line_warning(message, category, filename, lineno)
    if text not in SHOWN:
        SHOWN.add(text)
        (file or sys.stderr).write(text)


def plain_warnings():
    """Show each warning as one plain line (:func:`one_line_warning`), once per command.

    The category and the message, no library source; a message repeated (by
    the refits at other d, say) is shown once.
    """
    warnings.formatwarning = one_line_warning
    warnings.showwarning = show_once
    SHOWN.clear()


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
    click.echo(visible_text(text), err=err)


#: The output folders this process has locked (absolute path -> (lock file, --force)),
#: from :func:`check_output` until the command ends.
_RESERVED = {}


def _absolute(output):
    """``output`` as an absolute path without symbolic links (the folder really written)."""
    return Path(os.path.realpath(output))


def inputs(data=None, data_home=None, **_):
    """The input paths ``--force`` must not remove: ``--data`` and the data home.

    Takes a command's options (those it does not read are ignored).
    """
    return [get_data_home(data_home), *([] if data is None else [data])]


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
    path = _absolute(output)
    if path not in _RESERVED:
        check_output(output, force=False)
    try:
        with _reports.staged_folder(path, _RESERVED[path][1]) as staging:
            yield staging
    except OSError as exc:
        raise click.ClickException(f"could not write to {output}: {exc}") from exc


def write_output(output, write):
    """Call ``write`` on a staging folder that then replaces ``output``; say what it wrote.

    Parameters
    ----------
    output : pathlib.Path or None
        ``--output``, checked and locked by :func:`check_output`; None: nothing.
    write : callable
        Called with the staging folder; returns the names of the files written.
    """
    if output is None:
        return
    with staged(output) as staging:
        written = write(staging)
    say(f"wrote {', '.join(written)} to {output}")


def names(text):
    """A comma-separated option as a list of names (None when not given)."""
    return None if text is None else [name.strip() for name in text.split(",") if name.strip()]


def progress_line(message):
    """A progress line, on standard error."""
    click.echo(message, err=True)


def show_comparison(comparison, output, source, *, by_d=True):
    """Print the table, the notes and the legend; write the files; end by what finished.

    ``by_d`` (``--by-d``): refit at other d for the plot against d.

    Raises
    ------
    click.ClickException
        PCA or every fair method was not fitted (nothing is written).
    """
    if text := _reports.comparison_text(comparison):
        click.echo(text)
    notes = _reports.comparison_notes(comparison)
    for note in notes:
        say(note, err=True)
    click.echo(_reports.columns_text(comparison))
    if reason := _reports.unfinished(comparison.outcomes):
        raise click.ClickException(reason)
    write_output(
        output,
        lambda staging: _reports.write_comparison_files(
            comparison,
            staging,
            source=source,
            notes=notes,
            progress=progress_line,
            notify=lambda note: say(note, err=True),
            by_d=by_d,
        ),
    )


def show_curve(curve, output, source):
    """Print the curve and the settings that failed; write the files; end by what finished.

    Raises
    ------
    click.ClickException
        PCA or every fair setting failed (nothing is written).
    """
    say(_reports.curve_text(curve))
    for line in _reports.curve_failures(curve):
        click.echo(line, err=True)
    if reason := _reports.curve_unfinished(curve):
        raise click.ClickException(reason)
    write_output(
        output, lambda staging: _reports.write_tradeoff_files(curve, staging, source=source)
    )


def jobs_option(what):
    """The ``--jobs`` option (checked by :func:`check_jobs`)."""
    text = f"{what} (-1: one per core)."
    return click.option("--jobs", "n_jobs", type=int, default=1, show_default=True, help=text)


def check_jobs(n_jobs):
    """``--jobs``: a positive number of processes, or -1 for one per core."""
    if n_jobs == 0 or n_jobs < -1:
        raise click.UsageError(f"--jobs must be a positive number or -1, got {n_jobs}.")


def interrupted():
    """Say that the command was interrupted; the exit status of a SIGINT, 130."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: no traceback either
    click.echo("fairpca: interrupted.", err=True)
    return 130


def curve_metrics(metrics, split):
    """The ``--metric`` choices, or the default for ``split``.

    The default: ``reconstruction_error_gap`` and ``mmd2``, and
    ``demographic_parity_difference`` when the split has a target.
    """
    if metrics:
        return list(metrics)
    default = ["reconstruction_error_gap", "mmd2"]
    return default + (["demographic_parity_difference"] if split.y_train is not None else [])
