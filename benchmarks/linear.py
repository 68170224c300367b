"""Fit time of MeanMatchingFairPCA and LinearErasure as a ratio to scikit-learn's PCA.

Data: ``n`` rows of ``p`` Gaussian features in three groups of 50 / 30 / 20 %
with shifted means (``fairpca.datasets.make_gaussian_groups``). Baseline:
``sklearn.decomposition.PCA(n_components=5, svd_solver="covariance_eigh")``, the
same one pass over the rows plus a ``p x p`` eigendecomposition. Each method is
timed in CPU seconds of this process (``time.process_time``) with BLAS on one
thread; the three fits are interleaved ``--repeat`` times and the median of each
is reported with the ratio to PCA's median from the same run.

Usage::

    python benchmarks/linear.py                 # n = 10^6, p = 100 (the issue's target)
    python benchmarks/linear.py --quick         # n = 10^5, p = 50
"""

import argparse
import statistics

from _timing import cpu_seconds
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from fairpca import LinearErasure, MeanMatchingFairPCA
from fairpca.datasets import make_gaussian_groups


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 10^5, p = 50")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--p", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved runs per method")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n = args.n or (100_000 if args.quick else 1_000_000)
    p = args.p or (50 if args.quick else 100)
    X, s = make_gaussian_groups(
        n_samples=n, n_features=p, n_groups=3, group_weights=[0.5, 0.3, 0.2], random_state=args.seed
    )
    fits = {
        "PCA(covariance_eigh)": lambda: PCA(n_components=5, svd_solver="covariance_eigh").fit(X),
        "MeanMatchingFairPCA": lambda: MeanMatchingFairPCA(n_components=5).fit(
            X, sensitive_features=s
        ),
        "LinearErasure": lambda: LinearErasure().fit(X, sensitive_features=s),
    }
    times = {name: [] for name in fits}
    with threadpool_limits(limits=1):
        for _ in range(args.repeat):
            for name, fit in fits.items():
                times[name].append(cpu_seconds(fit))
    base = statistics.median(times["PCA(covariance_eigh)"])
    print(f"n = {n}, p = {p}, 3 groups, d = 5; CPU s, one BLAS thread, median of {args.repeat}")
    print(f"{'method':<22} {'median (s)':>11} {'min (s)':>8} {'max (s)':>8} {'ratio':>6}")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:<22} {median:11.3f} {min(values):8.3f} {max(values):8.3f} {median / base:6.2f}"
        )


if __name__ == "__main__":
    main()
