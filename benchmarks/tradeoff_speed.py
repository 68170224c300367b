"""CPU time of the trade-off curve at its defaults, and of its bootstrap, per code version.

Each measurement runs in a child process with one BLAS thread and the code of
one source folder first on ``PYTHONPATH`` (``--src LABEL=DIR``, ``DIR`` the
folder holding the ``fairpca`` package; default: this checkout's ``src``). The
child imports everything first, then reports the CPU time
(``time.process_time``) of the curve and, within it, of
``fairpca.tradeoff.bootstrap_metrics`` (the resamples' evaluation; the rest is
the fits and the held-out classifier). Rounds are interleaved across the
sources (A B A B ...) and the median of ``--rounds`` is printed.

Cases:

- ``builtin``: ``tradeoff_curve(X, s, y, n_bootstrap=200)`` on
  ``make_gaussian_groups(random_state=0, return_target=True)`` (the README's
  data; default grids and metrics: ``reconstruction_error_gap`` and ``mmd2``);
- ``german``, ``compas``: ``fairpca tradeoff --dataset german_credit|compas``
  (the command's defaults: 200 resamples, and ``demographic_parity_difference``
  besides, the data having a target); need ``$FAIRPCA_DATA``.

Usage::

    git archive <commit> src | tar -x -C /tmp/before
    python benchmarks/tradeoff_speed.py --src before=/tmp/before/src --src after=src \\
        --cases builtin german --rounds 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import fairpca, fairpca.tradeoff as tradeoff
from fairpca import cli
from fairpca.datasets import make_gaussian_groups

spent = [0.0]
inner = tradeoff.bootstrap_metrics

def timed(*args, **kwargs):
    start = time.process_time()
    try:
        return inner(*args, **kwargs)
    finally:
        spent[0] += time.process_time() - start

tradeoff.bootstrap_metrics = timed
case = sys.argv[1]
if case == "builtin":
    X, s, y = make_gaussian_groups(random_state=0, return_target=True)
    run = lambda: tradeoff.tradeoff_curve(X, s, y, n_bootstrap=200)
else:
    dataset = {"german": "german_credit", "compas": "compas"}[case]
    run = lambda: cli.main(["tradeoff", "--dataset", dataset])
start = time.process_time()
run()
total = time.process_time() - start
print(json.dumps({"total": total, "bootstrap": spent[0], "module": fairpca.__file__}))
"""

_ONE_THREAD = {
    name: "1"
    for name in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    )
}


def measure(case, src):
    env = {**os.environ, **_ONE_THREAD, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, case], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = Path(__file__).resolve().parents[1] / "src"
    parser.add_argument("--src", action="append", metavar="LABEL=DIR", help="repeatable")
    parser.add_argument("--cases", nargs="+", default=["builtin"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sources = dict(item.split("=", 1) for item in (args.src or [f"this={here}"]))
    print(f"load average at start: {os.getloadavg()}", flush=True)
    print("| case | code | CPU s (median) | bootstrap CPU s (median) | rounds: total s |")
    print("|---|---|---|---|---|")
    for case in args.cases:
        results = {label: [] for label in sources}
        for _ in range(args.rounds):
            for label, src in sources.items():
                results[label].append(measure(case, src))
        for label, runs in results.items():
            totals = [r["total"] for r in runs]
            boots = [r["bootstrap"] for r in runs]
            print(
                f"| {case} | {label} | {statistics.median(totals):.1f} | "
                f"{statistics.median(boots):.2f} | {', '.join(f'{t:.1f}' for t in totals)} |",
                flush=True,
            )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
