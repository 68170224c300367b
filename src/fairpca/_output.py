"""Safe output folders: escaping per output language, staging, one rename and a lock.

The command line writes text that comes from the user's data (group labels,
column names, the ``--data`` path) into CSV, Markdown, HTML and plots. Each
language gets one escaping function here, so that a label is shown as text
and never acts as a formula, as HTML or as mathtext. (HTML is escaped by
:mod:`fairpca._html`.)

An output folder appears all at once: it is written completely in a staging
folder beside ``--output`` and then renamed into place (with ``--force`` the
old folder is renamed aside first and removed after). A lock file in the
parent, created with ``O_CREAT | O_EXCL`` and holding the owner's pid, keeps
two runs from writing the same folder; the leftovers of a killed run (its
lock, staging folder or the old folder set aside) are recognised by the dead
pid in their name or content and cleaned by the next run.

Only the standard library and NumPy are imported at module level:
:mod:`fairpca.plotting` uses :func:`plot_text` without the command line's
dependencies.
"""

import csv
import errno
import html
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

import numpy as np

__all__ = [
    "OutputLocked",
    "acquire_lock",
    "check_path",
    "clean_leftovers",
    "csv_safe",
    "escape_csv_cell",
    "escape_html",
    "escape_markdown",
    "html_safe",
    "lock_path",
    "markdown_table",
    "plot_text",
    "publish",
    "release_lock",
    "reserve",
    "stage",
    "visible_text",
    "write_csv",
    "write_text",
]

#: First characters that make a spreadsheet read a cell as a formula (OWASP's list).
CSV_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

#: Characters with a meaning in Markdown that a text cell must not have (``<``, ``>`` and
#: ``&`` become HTML entities instead, so that no ``<script`` is left even as text).
_MARKDOWN_SPECIAL = re.compile(r"([\\|\[\]*_`~$])")

#: The entities Markdown and HTML get for the characters that start markup.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}

#: Longest text drawn in a plot; a longer label is cut, with an ellipsis.
PLOT_TEXT_CHARACTERS = 60

#: Line breaks of any kind: each would end a Markdown table row.
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")

#: A lock file without a pid this old is a run killed between creating and writing it.
_EMPTY_LOCK_SECONDS = 60.0


def escape_csv_cell(value):
    """A CSV cell that no spreadsheet evaluates as a formula.

    Parameters
    ----------
    value : object
        The cell. Only text is changed: a number (even a negative one) stays a
        number.

    Returns
    -------
    object
        ``value`` with a leading ``'`` when it is text beginning with one of
        ``= + - @``, a tab or a carriage return (OWASP's rule against CSV
        injection); any other value unchanged.
    """
    if isinstance(value, str) and value.startswith(CSV_FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_safe(frame):
    """A copy of a DataFrame whose text cells, index and column names are escaped.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    pandas.DataFrame
        The same numbers; every text cell and label passed through
        :func:`escape_csv_cell` (a group label can be a column name, e.g.
        ``reconstruction_error[=1+1]``, or an index entry).
    """
    return _map_text(frame, escape_csv_cell)


def _map_text(frame, function):
    """A copy of ``frame`` with ``function`` applied to its text cells and labels."""
    import pandas as pd

    def text_only(value):
        return function(value) if isinstance(value, str) else value

    def labels(index):
        if isinstance(index, pd.MultiIndex):
            return index.set_levels([level.map(text_only) for level in index.levels])
        return index.map(text_only)

    safe = frame.copy()
    for column in safe.columns:
        if not (pd.api.types.is_numeric_dtype(safe[column]) or safe[column].dtype == bool):
            safe[column] = safe[column].map(text_only)
    safe.index = labels(safe.index)
    safe.columns = labels(safe.columns)
    return safe


def visible_text(text):
    r"""Text with every invisible or direction-changing character shown as an escape.

    Parameters
    ----------
    text : object
        Converted with ``str``.

    Returns
    -------
    str
        Control characters other than line breaks (NUL, tab, escape, ...),
        format characters (the right-to-left override ``\u202e`` and the
        other bidirectional controls, zero-width characters) and lone
        surrogates (the undecodable bytes of a file name, as
        :func:`os.fsdecode` gives them) replaced by ``\xNN``, ``\uNNNN`` or
        ``\UNNNNNNNN``: a reader sees them instead of text that reads
        differently from what it is.
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(
        _escaped(char)
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn")
        and not _LINE_BREAK.fullmatch(char)
        else char
        for char in text
    )


def _escaped(char):
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_markdown(text):
    r"""Text that Markdown shows as it is, on one line, inside a table cell.

    Parameters
    ----------
    text : object
        Converted with ``str``.

    Returns
    -------
    str
        ``&``, ``<`` and ``>`` as HTML entities (so ``<script>`` is shown, not
        run, and no ``<script`` is left in the file); every ``\ | [ ] * _ ~ $``
        and backtick preceded by a backslash (no link, emphasis, math, and no
        ``|`` that splits a cell); line breaks replaced by spaces (a newline
        would end the table row); invisible characters shown
        (:func:`visible_text`).
    """
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", _LINE_BREAK.sub(" ", visible_text(text)))
    return re.sub("[&<>]", lambda match: _ENTITIES[match.group()], text)


def escape_html(text):
    """Text for an HTML element or attribute: markup characters as entities.

    Parameters
    ----------
    text : object
        Converted with ``str``.

    Returns
    -------
    str
        :func:`html.escape` (quotes included) of :func:`visible_text`.
    """
    return html.escape(visible_text(text), quote=True)


def html_safe(frame):
    """A copy of a DataFrame for ``to_html(escape=True)``: invisible characters shown.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    pandas.DataFrame
        Text cells, index and column names passed through :func:`visible_text`
        (pandas escapes the markup characters itself).
    """
    return _map_text(frame, visible_text)


def markdown_table(table, floatfmt=".4g"):
    """A pandas DataFrame as a GitHub Markdown table, every text escaped.

    Parameters
    ----------
    table : pandas.DataFrame
        Its index is the first column, headed "method".
    floatfmt : str, default=".4g"
        Format of the floating-point cells.

    Returns
    -------
    str
        The table's lines. Text cells, the index and the column names (which
        hold group labels) go through :func:`escape_markdown`.
    """

    def cell(value):
        if isinstance(value, float | np.floating):
            return "nan" if math.isnan(value) else format(value, floatfmt)
        return escape_markdown(value)

    header = ["method", *map(escape_markdown, table.columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, row in table.iterrows():
        lines.append("| " + " | ".join([escape_markdown(name), *map(cell, row.to_list())]) + " |")
    return "\n".join(lines) + "\n"


def plot_text(text, max_characters=PLOT_TEXT_CHARACTERS):
    r"""Text that matplotlib draws literally, without reading it as mathtext.

    Parameters
    ----------
    text : object
        A label, a column or method name (any object: its ``str`` is drawn).
    max_characters : int, default=PLOT_TEXT_CHARACTERS
        A longer text is cut to this many characters, the last one ``…`` (a
        10,000-character label would leave no room for the axes).

    Returns
    -------
    label : str
        ``text`` on one line, with every ``$`` escaped (two of them would
        start a formula, and a malformed one, ``$\frac{x}{$``, makes saving
        the figure fail) and invisible characters shown
        (:func:`visible_text`; a font has no glyph for them).
    """
    text = _LINE_BREAK.sub(" ", visible_text(text))
    if len(text) > max_characters:
        text = text[: max_characters - 1] + "…"
    return text.replace("$", r"\$")


def write_csv(frame, path, **kwargs):
    """Write a DataFrame as CSV that no spreadsheet reads as formulas.

    Parameters
    ----------
    frame : pandas.DataFrame
    path : path-like
    **kwargs
        Passed to :meth:`pandas.DataFrame.to_csv` (``index``, ``index_label``).

    Notes
    -----
    The cells go through :func:`csv_safe`; every text cell is quoted (so a
    carriage return or a line break inside a label stays in its cell:
    Python's CSV writer does not quote a lone carriage return otherwise);
    the file is UTF-8, with text a file name brings that is not valid UTF-8
    written as backslash escapes.
    """
    csv_safe(frame).to_csv(
        path,
        quoting=csv.QUOTE_NONNUMERIC,
        encoding="utf-8",
        errors="backslashreplace",
        **kwargs,
    )


def write_text(path, text):
    """Write ``text`` to ``path`` as UTF-8, whatever characters it holds.

    Parameters
    ----------
    path : path-like
    text : str
        May name files whose names are not valid UTF-8 (Python holds their
        bytes as lone surrogates): those are written as backslash escapes
        instead of failing.
    """
    Path(path).write_text(text, encoding="utf-8", errors="backslashreplace")


def lock_path(output):
    """The lock file that guards ``output``: a hidden file beside it.

    Parameters
    ----------
    output : pathlib.Path
        The output folder, as an absolute path.

    Returns
    -------
    lock : pathlib.Path
        ``.NAME.fairpca-lock`` in ``output``'s parent.
    """
    return output.parent / f".{output.name}.fairpca-lock"


class OutputLocked(RuntimeError):
    """Another live process holds the lock of an output folder."""


def _owner():
    return f"{os.getpid()} {socket.gethostname()}"


def _pid_alive(pid):
    """Whether process ``pid`` exists (on this host)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    except OSError as exc:
        return exc.errno != errno.ESRCH
    return True


def _lock_holder(lock):
    """The pid holding ``lock`` when that process may be alive, else None (stale lock)."""
    try:
        text = lock.read_text(encoding="utf-8", errors="replace").split()
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return None
    if not text:
        # Created but not yet written, or its writer killed in between.
        return -1 if age < _EMPTY_LOCK_SECONDS else None
    try:
        pid = int(text[0])
    except ValueError:
        return -1  # not ours to judge: treat as held
    host = text[1] if len(text) > 1 else socket.gethostname()
    if host != socket.gethostname():
        return pid  # another machine's process cannot be checked from here
    return pid if _pid_alive(pid) else None


def acquire_lock(output):
    """Create ``output``'s lock file exclusively, replacing a stale one.

    Parameters
    ----------
    output : pathlib.Path
        Absolute path of the output folder; its parent must exist.

    Returns
    -------
    pathlib.Path
        The lock file, holding this process's pid and host name; remove it
        with :func:`release_lock`.

    Raises
    ------
    OutputLocked
        A live process (pid in the message) holds the lock.
    """
    lock = lock_path(output)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _lock_holder(lock)
            if holder is not None:
                who = f"pid {holder}" if holder > 0 else "a process that did not record its pid"
                raise OutputLocked(
                    f"another fairpca run ({who}) is writing {output}: it holds the lock "
                    f"{lock}. Wait for it to finish, or remove the lock if no such run is "
                    "going on."
                ) from None
            # The holder is dead: its lock is stale. (Two runs breaking the same stale
            # lock at once can both go on; the window is one unlink and one open.)
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(_owner() + "\n")
        return lock
    raise OutputLocked(f"could not take the lock {lock} of {output}; try again.")


def release_lock(lock):
    """Remove a lock taken by :func:`acquire_lock` if it is still this process's.

    Parameters
    ----------
    lock : pathlib.Path
    """
    try:
        if lock.read_text(encoding="utf-8").strip() == _owner():
            lock.unlink()
    except FileNotFoundError:
        pass


def _leftover_pattern(output):
    # ".NAME.staging-PID-XXXX" and ".NAME.old-PID-XXXX"; the pid says whose they are.
    return re.compile(rf"^\.{re.escape(output.name)}\.(staging|old)-(\d+)-")


def clean_leftovers(output):
    """Remove what killed runs left beside ``output``; call it holding the lock.

    A staging folder of a dead process is removed. An old folder set aside by
    a ``--force`` run killed between its two renames is put back when
    ``output`` is missing (the folder is then exactly as before that run),
    removed otherwise.

    Parameters
    ----------
    output : pathlib.Path
        Absolute path of the output folder.

    Returns
    -------
    list of str
        One sentence per leftover handled, for the user.
    """
    pattern = _leftover_pattern(output)
    done = []
    for path in sorted(output.parent.iterdir()):
        match = pattern.match(path.name)
        if match is None or _pid_alive(int(match.group(2))):
            continue
        if match.group(1) == "old" and not output.exists():
            os.rename(path, output)
            done.append(f"restored {output} from {path.name}, left by a killed run")
        else:
            shutil.rmtree(path, ignore_errors=True)
            done.append(f"removed {path}, left by a killed run")
    return done


def stage(output):
    """A new, empty staging folder beside ``output`` (same file system, so renames work).

    Parameters
    ----------
    output : pathlib.Path
        The output folder (absolute); the staging folder is made in its
        parent, which must exist.

    Returns
    -------
    staging : pathlib.Path
    """
    prefix = f".{output.name}.staging-{os.getpid()}-"
    staging = Path(tempfile.mkdtemp(prefix=prefix, dir=output.parent))
    # mkdtemp makes a private folder (0700); the published one gets the usual mode.
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)
    return staging


def publish(staging, output, force):
    """Put the complete ``staging`` folder in place of ``output``.

    One rename when ``output`` is missing or an empty folder. With ``force``
    and a non-empty ``output``: the two folders are swapped in one atomic
    step where the system can (Linux's ``renameat2``), else the old folder
    is renamed aside and the new one renamed in (if that fails or is
    interrupted the old folder is put back; a run killed in between leaves
    it aside, and :func:`clean_leftovers` puts it back); then the old folder
    is removed, so nothing of the earlier run stays.

    Parameters
    ----------
    staging : pathlib.Path
        Made by :func:`stage` and completely written.
    output : pathlib.Path
        Absolute path of the output folder.
    force : bool
        Whether a non-empty ``output`` may be replaced.

    Raises
    ------
    FileExistsError
        ``output`` is not empty and ``force`` is false.
    """
    if output.is_dir() and not any(output.iterdir()):
        # Renaming over an empty directory is atomic on POSIX; elsewhere remove it first.
        try:
            os.replace(staging, output)
            return
        except OSError:
            output.rmdir()
    if not os.path.lexists(output):
        os.rename(staging, output)
        return
    if not force:
        raise FileExistsError(f"{output} exists and is not empty; pass --force to replace it.")
    if _exchange(staging, output):
        # One atomic step: output is the new folder, staging holds the old one.
        shutil.rmtree(staging, ignore_errors=True)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{output.name}.old-{os.getpid()}-", dir=output.parent))
    # mkdtemp only reserves a unique name; the old folder takes its place.
    os.rmdir(aside)
    try:
        os.rename(output, aside)
        os.rename(staging, output)
    except BaseException:
        # Also for a Ctrl-C between the renames: put the old folder back.
        if os.path.lexists(aside) and not os.path.lexists(output):
            os.rename(aside, output)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _exchange(first, second):
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``).

    Returns
    -------
    bool
        Whether they were swapped; False where the system or the file system
        cannot (then nothing changed).
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    result = renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))


#: The longest suffix :func:`lock_path`, :func:`stage` and :func:`publish` add to a name.
_LONGEST_SUFFIX = len(".fairpca-lock") + len(".staging-4294967296-") + 8 + 1


def check_path(given, output, force, protected=()):
    """Refuse an output folder that cannot be written or must not be replaced.

    Every check that can be made before the computation: the caller runs it
    first, so that a run is not lost at its end.

    Parameters
    ----------
    given : path-like
        ``--output`` as the user wrote it (a symbolic link is checked as such).
    output : pathlib.Path
        Its absolute path without symbolic links (the folder really written).
    force : bool
        Whether a non-empty ``output`` may be replaced.
    protected : sequence of path-like, default=()
        Paths ``--force`` must not remove (the current folder, the input
        data): an ``output`` that holds one of them is refused.

    Raises
    ------
    ValueError
        With a sentence saying what is wrong and what to do.
    """
    if os.path.islink(given) and not os.path.exists(given):
        raise ValueError(
            f"--output {given} is a symbolic link to {os.readlink(given)}, which does not exist."
        )
    try:
        os.fsencode(output)
    except (UnicodeError, ValueError) as exc:
        raise ValueError(
            f"--output {visible_text(given)} cannot be a file name here: {exc}."
        ) from None
    if output.exists() and not output.is_dir():
        raise ValueError(f"--output {output} is a file, not a folder.")
    if os.path.ismount(output):
        raise ValueError(
            f"--output {output} is a mount point: the output folder is replaced by renaming "
            "it, which a mount point does not allow. Write to a folder inside it."
        )
    ancestor = output.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"cannot create --output {output}: {ancestor} is a file.")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"cannot create --output {output}: {ancestor} is not writable.")
    try:
        name_max = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    if len(os.fsencode(output.name)) + _LONGEST_SUFFIX > name_max:
        raise ValueError(
            f"--output's name is too long: {len(os.fsencode(output.name))} bytes; the "
            f"staging folder beside it adds up to {_LONGEST_SUFFIX} to it and this file "
            f"system allows {name_max}. Choose a shorter name."
        )
    if force:
        for path in protected:
            path = Path(os.path.realpath(path))
            if path == output or output in path.parents:
                raise ValueError(
                    f"--force would remove {output}, which holds {path}; choose another --output."
                )


def reserve(output, force, given=None, protected=()):
    """Check an output folder before any computation, lock it and clean leftovers.

    Parameters
    ----------
    output : pathlib.Path
        Absolute path of the output folder.
    force : bool
        Whether a non-empty ``output`` may be replaced.
    given : path-like, default=None
        ``--output`` as written (default: ``output``); see :func:`check_path`.
    protected : sequence of path-like, default=()
        Paths ``--force`` must not remove; see :func:`check_path`.

    Returns
    -------
    lock : pathlib.Path
        The lock taken (:func:`acquire_lock`); the caller releases it.
    notes : list of str
        What was cleaned (:func:`clean_leftovers`).

    Raises
    ------
    ValueError
        ``output`` cannot be written (:func:`check_path`: a file, a mount
        point, a dangling link, a read-only folder, ...) or is not empty
        without ``force``.
    OutputLocked
        Another run holds the lock.
    """
    check_path(output if given is None else given, output, force, protected)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        lock = acquire_lock(output)
    except OSError as exc:
        # The lock is the first file written beside the output: a read-only file
        # system, a full disk or a permission os.access did not see show up here.
        raise ValueError(
            f"cannot write --output {output}: {exc.strerror or exc} ({output.parent})."
        ) from exc
    try:
        notes = clean_leftovers(output)
        if output.is_dir() and any(output.iterdir()) and not force:
            raise ValueError(f"{output} exists and is not empty; pass --force to replace it.")
    except BaseException:
        release_lock(lock)
        raise
    return lock, notes
