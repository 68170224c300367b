"""Cost of nested min-max components for k groups, as a ratio to PCA.

Data: ``make_gaussian_groups(n_samples=10_000, n_features=50, n_groups=k)``
for k = 2, 3, 6, d = 5. For each k the fits below run in turn ``--repeat``
times (interleaved) and the median CPU time (``time.process_time``) of each is
printed with its ratio to the median of scikit-learn's ``PCA(d).fit`` on the
same data in the same run:

- ``MinMaxLossFairPCA(d, nested=True)``: one rank-one relaxation per prefix,
  its extreme-point rounding and, where that leaves a span, the search for a
  unit vector (``fairpca._minmax_nested``);
- ``MinMaxLossFairPCA(d)``: the joint rank-``d`` problem, for reference.

Besides the times: the largest relative gap of the nested prefixes
(``prefix_gaps_ / prefix_objectives_``: how far a component can be from the
best unit vector given the earlier ones), and the excess of the nested rank-d
prefix's objective over the joint optimum's (what nesting costs). BLAS runs
on one thread; the load average is printed with the figures.

Usage::

    python benchmarks/nested_minmax.py              # 7 repeats
    python benchmarks/nested_minmax.py --repeat 3
"""

import argparse
import os
import warnings

import numpy as np
from _timing import interleaved_medians
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from fairpca import MinMaxLossFairPCA
from fairpca.datasets import make_gaussian_groups

N_SAMPLES, N_FEATURES, D = 10_000, 50, 5


def measure(k, repeat):
    X, s = make_gaussian_groups(N_SAMPLES, N_FEATURES, n_groups=k, random_state=k)
    fits = {
        "PCA": lambda: PCA(D).fit(X),
        "nested": lambda: MinMaxLossFairPCA(D, nested=True).fit(X, sensitive_features=s),
        "joint": lambda: MinMaxLossFairPCA(D).fit(X, sensitive_features=s),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        medians = interleaved_medians(fits, repeat)
        nested = MinMaxLossFairPCA(D, nested=True).fit(X, sensitive_features=s)
        joint = MinMaxLossFairPCA(D).fit(X, sensitive_features=s)
    gap = float(np.max(nested.prefix_gaps_ / np.abs(nested.prefix_objectives_)))
    excess = nested.prefix_objectives_[-1] / joint.objective_ - 1.0
    return medians, gap, excess, nested.converged_


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(
        f"n = {N_SAMPLES}, p = {N_FEATURES}, d = {D}; median CPU s of {args.repeat} "
        f"interleaved runs, one BLAS thread; load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'k':>2} {'PCA s':>8} {'nested s':>9} {'ratio':>7} {'joint s':>8} {'ratio':>7}"
        f" {'max prefix gap':>15} {'nesting excess':>15}"
    )
    with threadpool_limits(1):
        for k in (2, 3, 6):
            medians, gap, excess, converged = measure(k, args.repeat)
            base = medians["PCA"]
            print(
                f"{k:>2} {base:8.4f} {medians['nested']:9.4f} {medians['nested'] / base:7.1f}"
                f" {medians['joint']:8.4f} {medians['joint'] / base:7.1f}"
                f" {gap:15.1e} {excess:15.2%}" + ("" if converged else "  (not converged)")
            )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
