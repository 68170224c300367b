"""What ``fairpca reproduce`` tells the terminal while it plans and runs a target.

:func:`target_lines` lists the targets (``--list``); :func:`nothing_to_run` says
why a ``--dataset`` choice leaves no unit of work; :func:`expected_time` the
full run's expected minutes; :func:`run_units` runs the units of work
(:func:`fairpca.experiments.execute`'s) with a line per finished unit;
:func:`terminal_text` is the report's Markdown without its figure links.
"""

from __future__ import annotations

import time

__all__ = ["expected_time", "nothing_to_run", "run_units", "target_lines", "terminal_text"]


def target_lines(targets):
    """Three lines per target: its name and title, the full run and the ``--quick`` one."""
    lines = []
    for name, info in targets.items():
        lines.append(f"{name:20s} {info.title}")
        lines.append(f"{'':20s}   full: {info.full_description} (~{info.minutes():g} min)")
        lines.append(f"{'':20s}   --quick: {info.quick_description}")
    return lines


def nothing_to_run(target, info, datasets, quick):
    """Why the ``--dataset`` choice leaves ``target`` nothing to run, and what the run covers."""
    covers = info.quick_description if quick else info.full_description
    return (
        f"{target}: nothing to run for --dataset {', '.join(datasets)} "
        f"(the {'--quick' if quick else 'full'} run covers: {covers})."
    )


def expected_time(target, info, n_units, n_jobs, datasets=None):
    """The full run's expected minutes with the processes it will use."""
    from joblib import effective_n_jobs

    # full_minutes was measured in one process; units are independent.
    workers = min(effective_n_jobs(n_jobs), max(n_units, 1))
    minutes = info.minutes(datasets) / workers
    return (
        f"{target}: full run, expected to take about {minutes:.3g} min "
        f"with {workers} process{'es' if workers > 1 else ''} (use --quick for a short one)"
    )


def run_units(units, n_units, progress=None):
    """Run the units of work, calling ``progress`` with a line per finished unit.

    ``units`` is :func:`fairpca.experiments.execute`'s iterator of ``n_units``
    units; the line names the unit, the seconds since the start and each fit's time.

    Returns
    -------
    records : list of dict
    times : dict
        ``fit_seconds`` (``(method, setting, seconds)`` of every fit) and
        ``seconds`` (wall-clock seconds of the run), as
        :func:`fairpca.experiments.summarise` takes them.
    """
    records, fit_seconds = [], []
    start = time.perf_counter()
    for i, (label, unit_records, unit_seconds) in enumerate(units, start=1):
        records += unit_records
        fit_seconds += unit_seconds
        elapsed = time.perf_counter() - start
        times = ", ".join(
            f"{method}{f' {setting}' if setting else ''} {seconds:.2f} s"
            for method, setting, seconds in unit_seconds
        )
        if progress is not None:
            progress(
                f"[{i}/{n_units}] {label} done ({elapsed:.0f} s)" + (f": {times}" if times else "")
            )
    return records, {"fit_seconds": fit_seconds, "seconds": time.perf_counter() - start}


def terminal_text(markdown):
    """The report's Markdown for a terminal: without its figure links (``![...](...)``)."""
    return "\n".join(line for line in markdown.splitlines() if not line.startswith("!["))
