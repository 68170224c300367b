"""Timing helper shared by the benchmark scripts (imported as a sibling module)."""

import statistics
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


def interleaved_medians(fits, repeat):
    """Median CPU seconds of each of ``fits`` (name -> callable), run in turn ``repeat`` times.

    Interleaving spreads a change in the machine's load over every fit alike.
    """
    times = {name: [] for name in fits}
    for _ in range(repeat):
        for name, fit in fits.items():
            times[name].append(cpu_seconds(fit))
    return {name: statistics.median(values) for name, values in times.items()}
