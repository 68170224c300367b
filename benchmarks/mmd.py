"""Speed of MMDFairPCA (MbF-PCA) relative to scikit-learn's PCA.

Part 1, Lee et al.'s synthetic data #2 (``make_mmd_synthetic2``, 240 rows per
group, 70/30 split so 336 training rows, standardised with training
statistics), d = 5, the exact MMD² on all rows, for p = 20..100 and 200..1000
and tau = 1e-1 .. 1e-7. For each setting: fit time, its ratio to
``PCA(n_components=5).fit`` on the same training data in the same run, the
outer iterations, whether REPMS converged, the training MMD² and %VAR. The
authors' MATLAB/ROPTLIB runs recorded about 1-190 s of CPU time per fit
depending on tau (paper, Figure 3). ConvexFairPCA (FPCA, mu = 0.01, delta = 0,
the paper's setting for this data; SCS) is timed once per p up to 100.

Part 2, rows: ``make_gaussian_groups`` with 20 features, n = 1e3 .. 1e6,
tau = 1e-3, ``mmd="rff"`` (random Fourier features) with the default
``max_samples=20000`` (MMD² on a 20000-row subsample, the variance on every
row) and, up to n = 1e5, ``max_samples=None`` (MMD² on every row, linear in n).

Part 3, memory: n = 1e5 and 1e6 (1e5 only with ``--quick``), 20 features,
d = 2, ``mmd="rff"`` with the defaults, each fit in a fresh subprocess that
generates its own data, so that its peak resident size (``ru_maxrss``) and
the ``tracemalloc`` peak during ``fit`` (numpy reports its buffers to
tracemalloc) belong to that fit alone. Printed: the input array's size, the
traced peak beyond it, and the process's peak RSS before and after ``fit``.
Then the same fit on Dask input, n = 1e7 (1e6 with ``--quick``), 20 features:
``benchmarks/run.py``'s lazily generated data (two groups, 30/70, blocks of
32 MiB made from a seed on demand, so the rows never exist all at once), the
local threaded scheduler, in a fresh subprocess. Printed: the fit's time, the
time of one moment pass alone (``GroupMoments.from_dask``, the floor of any
Dask fit: the fit makes that pass, reads the labels and gathers its subsample
in a second pass over the blocks), the size the rows would take in memory, and
the process's peak RSS before and after ``fit``.

Timings are wall-clock on whatever else the machine is running; ratios to PCA
are measured in the same run (PCA: best of 5 fits with the default BLAS
threads and of 5 with one thread).

Usage::

    python benchmarks/mmd.py            # full grid (long: the tight-tau fits take minutes)
    python benchmarks/mmd.py --quick    # p in {20, 100, 1000}, tau in {1e-1, 1e-3, 1e-5}, n <= 1e5
    python benchmarks/mmd.py --part 3   # only the memory measurements (n = 1e5, 1e6; Dask 1e7)
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from fairpca import ConvexFairPCA, MMDFairPCA
from fairpca.datasets import make_gaussian_groups, make_mmd_synthetic2
from fairpca.metrics import explained_variance_ratio

P_FULL = list(range(20, 101, 10)) + list(range(200, 1001, 100))
P_QUICK = [20, 100, 1000]
TAU_FULL = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7]
TAU_QUICK = [1e-1, 1e-3, 1e-5]
N_FULL = [10**3, 10**4, 10**5, 10**6]
N_QUICK = [10**3, 10**4, 10**5]


def pca_seconds(X, d, repeats=5):
    """Best of a few PCA fits, with the default BLAS threads and with one thread.

    A single fit is too short to time reliably, and on a busy machine
    multi-threaded BLAS can be many times slower than one thread (MMDFairPCA
    limits itself to one BLAS thread for that reason).
    """
    best = np.inf
    for limit in (None, 1):
        with threadpool_limits(limits=limit, user_api="blas"):
            for _ in range(repeats):
                start = time.perf_counter()
                PCA(n_components=d).fit(X)
                best = min(best, time.perf_counter() - start)
    return best


def timed_fit(est, X, s):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, sensitive_features=s)
    return time.perf_counter() - start


def synthetic2_split(p):
    X, s = make_mmd_synthetic2(n_features=p, random_state=0)
    X_train, _, s_train, _ = train_test_split(X, s, test_size=0.3, random_state=0)
    mean, sd = X_train.mean(axis=0), X_train.std(axis=0)
    return (X_train - mean) / sd, s_train


def part1(ps, taus):
    d = 5
    print("Part 1: synthetic data #2, n_train = 336, d = 5, exact MMD²")
    print(
        f"{'p':>5} {'tau':>7} {'seconds':>8} {'x PCA':>8} {'outer':>5} {'conv':>5} "
        f"{'MMD²':>9} {'%VAR':>6}"
    )
    worst = 0.0
    for p in ps:
        X, s = synthetic2_split(p)
        t_pca = pca_seconds(X, d)
        for tau in taus:
            est = MMDFairPCA(n_components=d, tau=tau, random_state=0)
            seconds = timed_fit(est, X, s)
            worst = max(worst, seconds)
            print(
                f"{p:5d} {tau:7.0e} {seconds:8.2f} {seconds / t_pca:8.0f} {est.n_iter_:5d} "
                f"{str(est.converged_):>5} {est.constraint_value_:9.2e} "
                f"{100 * explained_variance_ratio(X, est):6.2f}",
                flush=True,
            )
        if p <= 100:
            convex = ConvexFairPCA(n_components=d, mu=0.01, delta=0.0)
            seconds = timed_fit(convex, X, s)
            print(f"{p:5d}  ConvexFairPCA {seconds:8.2f} s ({seconds / t_pca:.0f} x PCA)")
        print(f"{p:5d}  PCA {t_pca * 1e3:.2f} ms", flush=True)
    print(f"slowest synthetic #2 fit: {worst:.1f} s (target: every setting under 10 s)")


def part2(ns):
    d, tau = 2, 1e-3
    print("\nPart 2: rows, make_gaussian_groups(n, 20 features), d = 2, tau = 1e-3, mmd='rff'")
    print(
        f"{'n':>9} {'seconds':>8} {'x PCA':>8} {'PCA s':>7} {'outer':>5} {'conv':>5} "
        f"{'MMD²':>9} {'%VAR':>6}"
    )
    for n in ns:
        X, s = make_gaussian_groups(n_samples=n, n_features=20, random_state=0)
        t_pca = pca_seconds(X, d, repeats=5 if n <= 10**5 else 2)
        # Default: MMD² on a 20000-row subsample; max_samples=None: on every row (linear in n).
        for max_samples in (20000, None) if n <= 10**5 else (20000,):
            est = MMDFairPCA(
                n_components=d, tau=tau, mmd="rff", max_samples=max_samples, random_state=0
            )
            seconds = timed_fit(est, X, s)
            print(
                f"{n:9d} {seconds:8.2f} {seconds / t_pca:8.0f} {t_pca:7.3f} {est.n_iter_:5d} "
                f"{str(est.converged_):>5} {est.constraint_value_:9.2e} "
                f"{100 * est.explained_variance_ratio_.sum():6.2f}  max_samples={max_samples}",
                flush=True,
            )
    print("(target: n = 1e6 under 60 s)")


N_MEMORY = [10**5, 10**6]
N_DASK_MEMORY, N_DASK_MEMORY_QUICK = 10**7, 10**6


def memory_child(n):
    """Fit once on freshly generated data; print time and memory as JSON (subprocess)."""
    X, s = make_gaussian_groups(n_samples=n, n_features=20, random_state=0)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    est = MMDFairPCA(n_components=2, tau=1e-3, mmd="rff", random_state=0)
    seconds = timed_fit(est, X, s)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    record = {
        "n": n,
        "seconds": seconds,
        "input_mib": X.nbytes / 2**20,
        "traced_peak_mib": peak / 2**20,
        "rss_before_mib": rss_before / 1024,  # ru_maxrss is in KiB on Linux
        "rss_after_mib": rss_after / 1024,
        "converged": est.converged_,
        "mmd2": est.constraint_value_,
    }
    print(json.dumps(record))


def dask_memory_child(n):
    """Fit once on Dask input generated block by block; print time and memory as JSON."""
    import dask

    # benchmarks/run.py, next to this script (its directory is sys.path[0]).
    from run import _dask_data

    from fairpca import GroupMoments

    p = 20
    X, s = _dask_data(n, p, seed=0)
    with dask.config.set(scheduler="threads"):
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        est = MMDFairPCA(n_components=2, tau=1e-3, mmd="rff", random_state=0)
        seconds = timed_fit(est, X, s)
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        GroupMoments.from_dask(X, s)
        pass_seconds = time.perf_counter() - start
    record = {
        "n": n,
        "seconds": seconds,
        "pass_seconds": pass_seconds,
        "rows_mib": n * p * 8 / 2**20,
        "rss_before_mib": rss_before / 1024,
        "rss_after_mib": rss_after / 1024,
        "converged": est.converged_,
        "mmd2": est.constraint_value_,
    }
    print(json.dumps(record))


def _child_record(flag, n):
    """Run this script with ``flag n`` in a fresh process and return the JSON it prints."""
    out = subprocess.run(
        [sys.executable, __file__, flag, str(n)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def part3(ns, n_dask):
    print("\nPart 3: peak memory, make_gaussian_groups(n, 20 features), d = 2, mmd='rff'")
    print(
        f"{'n':>9} {'seconds':>8} {'input MiB':>10} {'fit peak MiB':>13} {'x input':>8} "
        f"{'RSS before':>11} {'RSS after':>10} {'conv':>5}"
    )
    for n in ns:
        r = _child_record("--memory-child", n)
        print(
            f"{n:9d} {r['seconds']:8.2f} {r['input_mib']:10.1f} {r['traced_peak_mib']:13.1f} "
            f"{r['traced_peak_mib'] / r['input_mib']:8.2f} {r['rss_before_mib']:11.1f} "
            f"{r['rss_after_mib']:10.1f} {str(r['converged']):>5}",
            flush=True,
        )
    print("(fit peak: tracemalloc peak during fit, beyond the input array; target n = 1e6 < 60 s)")
    print(
        f"\nDask input: benchmarks/run.py's lazy blocks, n = {n_dask:.0e}, 20 features, d = 2, "
        f"mmd='rff', threaded scheduler, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}"
    )
    print(
        f"{'n':>9} {'seconds':>8} {'1 pass s':>9} {'rows MiB':>9} {'RSS before':>11} "
        f"{'RSS after':>10} {'conv':>5} {'MMD²':>9}"
    )
    r = _child_record("--dask-memory-child", n_dask)
    print(
        f"{n_dask:9d} {r['seconds']:8.2f} {r['pass_seconds']:9.2f} {r['rows_mib']:9.1f} "
        f"{r['rss_before_mib']:11.1f} {r['rss_after_mib']:10.1f} {str(r['converged']):>5} "
        f"{r['mmd2']:9.2e}",
        flush=True,
    )
    print("(RSS: peak resident size of the process; target: far below the rows' size, < 1 GiB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grid, n up to 1e5")
    parser.add_argument("--part", type=int, choices=(1, 2, 3), help="run only this part")
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dask-memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child is not None:
        memory_child(args.memory_child)
        return
    if args.dask_memory_child is not None:
        dask_memory_child(args.dask_memory_child)
        return
    if args.part in (None, 1):
        part1(P_QUICK if args.quick else P_FULL, TAU_QUICK if args.quick else TAU_FULL)
    if args.part in (None, 2):
        part2(N_QUICK if args.quick else N_FULL)
    if args.part in (None, 3):
        part3(
            N_MEMORY[:1] if args.quick else N_MEMORY,
            N_DASK_MEMORY_QUICK if args.quick else N_DASK_MEMORY,
        )


if __name__ == "__main__":
    main()
