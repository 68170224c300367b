"""Timing helpers shared by the benchmark scripts (imported as a sibling module)."""

import importlib.util
import statistics
import subprocess
import time


def best_time(fn, repeat):
    """Smallest wall-clock time of ``repeat`` calls of ``fn`` and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def cpu_seconds(fn):
    """CPU seconds of this process (all its threads) for one call of ``fn``."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def wall_and_cpu_seconds(fn):
    """Wall-clock and CPU seconds (all threads of this process) of one call of ``fn``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def interleaved_medians(fits, repeat, timer=cpu_seconds):
    """Median time of each of ``fits`` (name -> callable), run in turn ``repeat`` times.

    Interleaving spreads a change in the machine's load over every fit alike.
    ``timer`` times one call (default CPU seconds); where it returns a tuple,
    as :func:`wall_and_cpu_seconds` does, each entry gets its own median.
    """
    times = {name: [] for name in fits}
    for _ in range(repeat):
        for name, fit in fits.items():
            times[name].append(timer(fit))
    return {name: _median(values) for name, values in times.items()}


def _median(values):
    if isinstance(values[0], tuple):
        return tuple(statistics.median(entry) for entry in zip(*values, strict=True))
    return statistics.median(values)


def code_commit():
    """Short commit of the ``fairpca`` code this process imports, for a figure's stamp.

    Read from the package's own directory, not the working directory: a run with
    ``PYTHONPATH`` pointing at another checkout is stamped with that checkout's
    commit (see :func:`checkout_commit`).
    """
    spec = importlib.util.find_spec("fairpca")  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        return "unknown"
    return checkout_commit(spec.submodule_search_locations[0])


def checkout_commit(directory):
    """Short commit of the git checkout holding ``directory`` (``unknown`` outside git).

    ``+changes`` marks uncommitted edits (or new files) under ``directory``; without
    git installed the answer is ``unknown`` too.
    """

    def git(*args):
        try:
            done = subprocess.run(
                ["git", "-C", str(directory), *args], capture_output=True, text=True, check=False
            )
        except OSError:  # no git on this machine
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "--", ".") else "")
