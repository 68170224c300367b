"""StreamingFairPCA: memory and time per pass on wide data, and speed against the exact solve.

1. **Wide** (``--p``, default 40,000 features; ``--n``, default 200,000 rows,
   streamed from :func:`fairpca.datasets.iter_wide_groups` in blocks of 1,000
   rows, d = 10, unfair_rank = 4). Each measurement runs in its own child
   process, so its peak resident memory (``ru_maxrss``) is its own:

   - ``partial_fit`` over the whole stream once (the single-pass method,
     ``block_size=1000`` rows per power step);
   - ``fit`` on a Dask array whose blocks are generated on demand, with
     ``max_iter=--max-iter`` power iterations per subspace: the time per pass
     over the data (``n_passes_`` in total) is what a longer run multiplies.

   Times include generating the rows (each pass regenerates them), reported
   separately as the time of one generation pass.
2. **p = 2,000** (``make_wide_groups``, 3,000 rows, d = 3, unfair_rank = 4):
   CPU time of ``solver="power"`` against the exact offline solve
   (``solver="exact"``: dense covariances and ``eigh``), median of
   ``--repeat`` interleaved runs, one BLAS thread, and the largest
   principal-angle sine between their components.

Usage::

    python benchmarks/streaming.py                  # p = 40,000, n = 200,000 (about 30 min)
    python benchmarks/streaming.py --n 20000        # shorter
    python benchmarks/streaming.py --quick          # p = 10,000, n = 10,000
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

D, M, GENERATOR_BLOCK = 10, 4, 1000


def child(kind, n, p, max_iter):
    """One measurement, in this (child) process; prints a JSON line."""
    from sklearn.exceptions import ConvergenceWarning

    from fairpca import StreamingFairPCA
    from fairpca.datasets import iter_wide_groups

    start = time.perf_counter()
    if kind == "generate":
        for _ in iter_wide_groups(n, p, block_size=GENERATOR_BLOCK):
            pass
        result = {}
    elif kind == "partial_fit":
        est = StreamingFairPCA(D, unfair_rank=M, block_size=1000, random_state=0)
        for X, s in iter_wide_groups(n, p, block_size=GENERATOR_BLOCK):
            est.partial_fit(X, sensitive_features=s)
        result = {"power_steps": est.n_iter_[1]}
    else:
        import dask
        import dask.array as da

        from fairpca.datasets import wide as wide_module

        patterns = wide_module._patterns(p)
        means, variances = wide_module._group_parameters(2, 1.0, 2.0)
        blocks = []
        for b, first in enumerate(range(0, n, GENERATOR_BLOCK)):
            rows = np.arange(first, min(first + GENERATOR_BLOCK, n))
            made = dask.delayed(wide_module._block)(b, rows, patterns, means, variances, 0.1, 0)
            blocks.append(da.from_delayed(made[0], shape=(rows.size, p), dtype=float))
        X = da.concatenate(blocks)
        s = np.arange(n) % 2
        est = StreamingFairPCA(D, unfair_rank=M, max_iter=max_iter, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            with dask.config.set(scheduler="synchronous"):
                est.fit(X, sensitive_features=s)
        result = {"passes": est.n_passes_}
    result["seconds"] = time.perf_counter() - start
    result["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def measure(kind, n, p, max_iter):
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(n), str(p), str(max_iter)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def exact_comparison(repeat):
    from fairpca import StreamingFairPCA
    from fairpca.datasets import make_wide_groups

    X, s = make_wide_groups(n_samples=3000, n_features=2000, random_state=0)
    times = {"power": [], "exact": []}
    fitted = {}
    for _ in range(repeat):
        for solver in times:
            est = StreamingFairPCA(3, unfair_rank=4, solver=solver, random_state=0)
            start = time.process_time()
            est.fit(X, sensitive_features=s)
            times[solver].append(time.process_time() - start)
            fitted[solver] = est
    cosines = np.linalg.svd(fitted["power"].components_ @ fitted["exact"].components_.T)[1]
    sine = float(np.sqrt(max(0.0, 1 - cosines.min() ** 2)))
    power, exact = (statistics.median(times[k]) for k in ("power", "exact"))
    print(f"\np = 2000, n = 3000, d = 3, m = 4; CPU s, one BLAS thread, median of {repeat}:")
    print(f"  power  {power:8.2f} s  ({fitted['power'].n_passes_} passes)")
    print(f"  exact  {exact:8.2f} s  (ratio power / exact {power / exact:.2f})")
    print(f"  largest principal-angle sine between the two: {sine:.1e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--p", type=int, default=40_000)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--max-iter", type=int, default=3, help="power iterations in the Dask fit")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="p = 10,000, n = 10,000")
    args = parser.parse_args()
    if args.child:
        kind, n, p, max_iter = args.child
        with threadpool_limits(limits=1):
            child(kind, int(n), int(p), int(max_iter))
        return
    n, p = (10_000, 10_000) if args.quick else (args.n, args.p)
    print("python benchmarks/streaming.py " + " ".join(sys.argv[1:]))
    print(f"\nWide: p = {p}, n = {n}, d = {D}, unfair_rank = {M}; one BLAS thread, wall clock")
    rows = [("generating the rows once", measure("generate", n, p, args.max_iter), "")]
    stream = measure("partial_fit", n, p, args.max_iter)
    rows.append(("partial_fit, one pass", stream, f"{stream['power_steps']} power steps"))
    fit = measure("fit", n, p, args.max_iter)
    per_pass = fit["seconds"] / fit["passes"]
    rows.append(
        (
            f"fit on Dask, max_iter={args.max_iter}",
            fit,
            f"{fit['passes']} passes: {per_pass:.1f} s each",
        )
    )
    for label, result, note in rows:
        print(
            f"  {label:<28} {result['seconds']:8.1f} s, peak {result['peak_mib']:6.0f} MiB  {note}"
        )
    with threadpool_limits(limits=1):
        exact_comparison(args.repeat)


if __name__ == "__main__":
    main()
