"""The moment pass of ``GroupMoments.from_arrays`` against scikit-learn's covariance route.

Data: ``n`` rows of ``p`` standard Gaussian features plus ``--offsets`` (0 and
2: the pass sums around zero, 2 being within ``sqrt(_ZERO_SHIFT_BELOW)``
spreads; 10: the first rows reveal the offset and the pass sums around their
mean, a shifted copy of each block), two groups of 30 / 70 % with the rows
interleaved at random.
Timed, in CPU seconds of this process (``time.process_time``) with BLAS on one
thread, interleaved ``--repeat`` times, medians reported:

- ``X.T @ X``, the bare Gram matrix (the floor of any one-pass method);
- ``PCA(n_components=5, svd_solver="covariance_eigh").fit(X)`` (scikit-learn's
  covariance route: a mean, ``X.T @ X`` and a ``p x p`` eigendecomposition);
- ``GroupMoments.from_arrays(X, s)``, and with one group (``s=None``, as the
  group-blind fits use it).

The ratios, not the seconds, compare across runs of a shared machine. To compare
two versions of ``fairpca`` on the same machine, run the script under each, e.g.
the current checkout and ``HEAD`` in a worktree::

    git worktree add /tmp/moments_old HEAD
    PYTHONPATH=/tmp/moments_old/src python benchmarks/moments_pass.py

Usage::

    python benchmarks/moments_pass.py                    # n = 10^6, p = 20 and 100
    python benchmarks/moments_pass.py --n 100000 --repeat 5 --p 20
"""

import argparse

import numpy as np
from _timing import interleaved_medians
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

import fairpca
from fairpca import GroupMoments


def measure(n, p, offset, repeat, seed):
    """Median CPU seconds of each timed call on one data set."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) + offset
    s = rng.permutation(np.repeat([0, 1], [int(0.3 * n), n - int(0.3 * n)]))
    calls = {
        "XtX": lambda: X.T @ X,
        "PCA": lambda: PCA(n_components=5, svd_solver="covariance_eigh").fit(X),
        "moments": lambda: GroupMoments.from_arrays(X, s),
        "one group": lambda: GroupMoments.from_arrays(X, None),
    }
    for call in calls.values():  # warm-up: first-touch and import costs
        call()
    return interleaved_medians(calls, repeat)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--p", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--offsets", type=float, nargs="+", default=[0.0, 2.0, 10.0])
    parser.add_argument("--repeat", type=int, default=7, help="interleaved runs (>= 5)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    print(f"fairpca from {fairpca.__file__}")
    print(f"n = {args.n}, two groups 30 / 70 %, one BLAS thread, median of {args.repeat}")
    print()
    print(
        "| p | offset | X^T X s | PCA s | moments s | one group s "
        "| moments / PCA | moments / X^T X | one group / X^T X | PCA / X^T X |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    with threadpool_limits(1):
        for p in args.p:
            for offset in args.offsets:
                t = measure(args.n, p, offset, args.repeat, args.seed)
                print(
                    f"| {p} | {offset:g} | {t['XtX']:.4f} | {t['PCA']:.4f} | {t['moments']:.4f} "
                    f"| {t['one group']:.4f} | {t['moments'] / t['PCA']:.2f} "
                    f"| {t['moments'] / t['XtX']:.2f} | {t['one group'] / t['XtX']:.2f} "
                    f"| {t['PCA'] / t['XtX']:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
