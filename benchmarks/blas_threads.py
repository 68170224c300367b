"""BLAS threads in the solvers' loops: where they pay, and what limiting them to one does.

Part 1 (the size gate of ``fairpca._fantope_admm._THREADED_FROM``): one ADMM-like
step at size q, a symmetric eigendecomposition and a q x q product, with BLAS on
its default threads and on one.

Part 2 (the fits): ``ConvexFairPCA`` (its ADMM) and ``RobustFairPCA`` (its descent)
as shipped, which keep BLAS on one thread in their loops
(``fairpca._linalg.one_blas_thread``), against the same fits with that limit
replaced by a no-op; BLAS otherwise on its default threads. Data: the scale grid
of ``benchmarks/run.py`` (two groups, 30 / 70 %, seed 0), d = 5.

Wall and CPU seconds (``time.perf_counter``, ``time.process_time``: all threads of
this process) per call, medians of interleaved rounds. ``--busy K`` keeps K other
processes spinning meanwhile (a busy machine, reproducibly).

Usage::

    python benchmarks/blas_threads.py               # idle machine
    python benchmarks/blas_threads.py --busy 1      # one core taken by another process
"""

import argparse
import contextlib
import functools
import os
import subprocess
import sys

import numpy as np
from _timing import code_commit, interleaved_medians, wall_and_cpu_seconds
from run import _memory_data

import fairpca
from fairpca import _fantope_admm, robust
from fairpca._linalg import one_blas_thread


def _medians(cases, rounds):
    """Median (wall, CPU) seconds per call of each case, rounds interleaved.

    ``cases``: name -> (callable, calls per timing, context the calls run in).
    """

    def timing(fn, calls, context):
        with context():
            for _ in range(calls):
                fn()

    for fn, _, context in cases.values():
        timing(fn, 1, context)  # warm-up
    medians = interleaved_medians(
        {name: functools.partial(timing, *case) for name, case in cases.items()},
        rounds,
        timer=wall_and_cpu_seconds,
    )
    return {
        name: tuple(seconds / cases[name][1] for seconds in pair) for name, pair in medians.items()
    }


def _step(A):
    np.linalg.eigh(A)
    A @ A


def _kernel_table(sizes, rounds):
    print("Part 1: eigh + product at size q; ms per call (wall / CPU), median of", rounds)
    print(
        f"{'q':>6s} {'default wall':>13s} {'one wall':>9s} {'one/default':>12s} "
        f"{'default CPU':>12s} {'one CPU':>8s}"
    )
    rng = np.random.default_rng(0)
    for q in sizes:
        A = rng.standard_normal((q, q))
        A = A + A.T
        calls = max(1, int(2e8 / q**3))
        step = functools.partial(_step, A)
        cases = {
            "default": (step, calls, contextlib.nullcontext),
            "one": (step, calls, one_blas_thread),
        }
        med = _medians(cases, rounds)
        (dw, dc), (ow, oc) = med["default"], med["one"]
        print(
            f"{q:6d} {1e3 * dw:13.2f} {1e3 * ow:9.2f} {ow / dw:12.2f} "
            f"{1e3 * dc:12.2f} {1e3 * oc:8.2f}"
        )


@contextlib.contextmanager
def _unlimited():
    """The fits with their one-thread limit replaced by a no-op."""
    saved = _fantope_admm.one_blas_thread, robust.one_blas_thread
    _fantope_admm.one_blas_thread = robust.one_blas_thread = contextlib.nullcontext
    try:
        yield
    finally:
        _fantope_admm.one_blas_thread, robust.one_blas_thread = saved


def _fit_table(n, widths, rounds):
    print()
    print(f"Part 2: fits at n = {n}, d = 5; s per call (wall / CPU), median of {rounds}")
    print(
        f"{'fit':24s} {'p':>4s} {'shipped wall':>13s} {'no-limit wall':>14s} "
        f"{'ratio':>6s} {'shipped CPU':>12s} {'no-limit CPU':>13s}"
    )
    for p in widths:
        X, s = _memory_data(n, p, 0)
        for name in ("ConvexFairPCA", "RobustFairPCA"):
            kwargs = {"random_state": 0} if name == "RobustFairPCA" else {}
            estimator = getattr(fairpca, name)

            def fit(estimator=estimator, kwargs=kwargs, X=X, s=s):
                estimator(n_components=5, **kwargs).fit(X, sensitive_features=s)

            cases = {
                "shipped": (fit, 1, contextlib.nullcontext),
                "unlimited": (fit, 1, _unlimited),
            }
            med = _medians(cases, rounds)
            (sw, sc), (uw, uc) = med["shipped"], med["unlimited"]
            print(f"{name:24s} {p:4d} {sw:13.3f} {uw:14.3f} {uw / sw:6.2f} {sc:12.3f} {uc:13.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--busy", type=int, default=0, help="spinning processes beside the run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)
    ]
    try:
        print(f"fairpca {code_commit()}; {os.cpu_count()} cores; {args.busy} spinning processes")
        _kernel_table([100, 200, 300, 400, 700, 1000], args.rounds)
        _fit_table(args.n, [20, 100], args.rounds)
    finally:
        for spinner in spinners:
            spinner.kill()
    print("load average (1, 5, 15 min):", " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
