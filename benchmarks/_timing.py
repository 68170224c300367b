"""Timing helper shared by the benchmark scripts (imported as a sibling module)."""

import time


def best_time(fn, repeat):
    """Smallest wall-clock time of ``repeat`` calls of ``fn`` and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result
