"""Fit time and traced memory of FairKernelPCA's approximate method at large n.

Data: ``make_gaussian_groups`` (two groups, 70/30) with ``--p`` features
(default 20), ``--n`` rows (default 1e5), and the largest exact fit
(``--exact-n`` rows, default 5000) for comparison. Each setting reports the
best wall-clock fit time of ``--repeat`` fits, the ``tracemalloc`` peak
during one further fit (numpy reports its buffers to tracemalloc) beyond the
input array, the input's size and the training mean gap. The approximate
method holds one block of features and the group moments of the features
(``k (2 n_random_features)^2`` doubles), so its memory does not grow with n;
the exact method holds ``n x n`` matrices.

Usage::

    python benchmarks/kernel_pca.py
    python benchmarks/kernel_pca.py --n 1000000 --exact-n 0
"""

import argparse
import shlex
import sys
import tracemalloc

from _timing import best_time

from fairpca import FairKernelPCA
from fairpca.datasets import make_gaussian_groups


def measure(n, p, method, n_components, n_random_features, repeat):
    """Best fit time, traced peak beyond the input, input bytes and mean gap of one setting."""
    X, s = make_gaussian_groups(n_samples=n, n_features=p, random_state=0)
    est = FairKernelPCA(
        n_components=n_components,
        method=method,
        max_exact_samples=max(n, 2),
        n_random_features=n_random_features,
        random_state=0,
    )
    seconds, _ = best_time(lambda: est.fit(X, sensitive_features=s), repeat)
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    est.fit(X, sensitive_features=s)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return seconds, peak, X.nbytes, est.mean_gap_


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="rows of the approximate fit")
    parser.add_argument("--exact-n", type=int, default=5000, help="rows of the exact fit (0: none)")
    parser.add_argument("--p", type=int, default=20, help="features")
    parser.add_argument("--n-components", type=int, default=5)
    parser.add_argument("--n-random-features", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=2, help="timed fits per setting")
    args = parser.parse_args()
    print("command: python " + shlex.join(sys.argv))
    settings = [("approx", args.n)] + ([("exact", args.exact_n)] if args.exact_n else [])
    print(
        f"p={args.p}, n_components={args.n_components}, "
        f"n_random_features={args.n_random_features} ({2 * args.n_random_features} features)"
    )
    print(
        f"{'method':>7} {'n':>9} {'fit (s)':>8} {'traced peak (MiB)':>18} "
        f"{'input (MiB)':>12} {'mean gap':>9}"
    )
    for method, n in settings:
        seconds, peak, nbytes, gap = measure(
            n, args.p, method, args.n_components, args.n_random_features, args.repeat
        )
        print(
            f"{method:>7} {n:>9} {seconds:>8.2f} {peak / 2**20:>18.1f} "
            f"{nbytes / 2**20:>12.1f} {gap:>9.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
