"""FairPLS: fit cost against scikit-learn's PLSRegression and PCA at one size.

Data: ``n`` rows of ``p`` Gaussian features in three groups with shifted means
(``fairpca.datasets.make_gaussian_groups``) and a target ``y = X b + noise``
(``b`` Gaussian, seed 0). Fits: ``FairPLS(n_components=d)`` (constrained),
``FairPLS(n_components=d, mean_penalty=1.0)`` (penalised),
``sklearn.cross_decomposition.PLSRegression(n_components=d, scale=False)``
and ``sklearn.decomposition.PCA(n_components=d)``. CPU seconds of this
process with BLAS on one thread (threadpoolctl), the four fits interleaved
``--repeat`` times, medians, and ratios to PLSRegression's and PCA's medians
from the same run. The load average is printed with the figures.

Usage::

    python benchmarks/fair_pls.py            # n = 10^5, p = 100, d = 5, 7 repeats
    python benchmarks/fair_pls.py --quick    # n = 2 * 10^4, p = 50, 3 repeats
"""

import argparse
import os
import warnings

import numpy as np
from _timing import code_commit, interleaved_medians
from sklearn.cross_decomposition import PLSRegression
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from fairpca import FairPLS
from fairpca.datasets import make_gaussian_groups


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args()
    n, p, d = (20_000, 50, 5) if args.quick else (100_000, 100, 5)
    repeat = args.repeat or (3 if args.quick else 7)
    X, s = make_gaussian_groups(n_samples=n, n_features=p, n_groups=3, random_state=0)
    rng = np.random.default_rng(0)
    y = X @ rng.normal(size=p) + rng.normal(size=n)
    fits = {
        "FairPLS (constrained)": lambda: FairPLS(n_components=d).fit(X, y, sensitive_features=s),
        "FairPLS (mean_penalty=1)": lambda: FairPLS(n_components=d, mean_penalty=1.0).fit(
            X, y, sensitive_features=s
        ),
        "PLSRegression": lambda: PLSRegression(n_components=d, scale=False).fit(X, y),
        "PCA": lambda: PCA(n_components=d).fit(X),
    }
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        medians = interleaved_medians(fits, repeat)
    print(f"n = {n}, p = {p}, d = {d}, 3 groups; {repeat} interleaved runs, one BLAS thread")
    print(f"commit {code_commit()}, load average {os.getloadavg()}")
    pls, pca = medians["PLSRegression"], medians["PCA"]
    print(f"{'method':26s} {'median CPU s':>12s} {'/ PLSRegression':>16s} {'/ PCA':>8s}")
    for name, median in medians.items():
        print(f"{name:26s} {median:12.3f} {median / pls:16.2f} {median / pca:8.2f}")


if __name__ == "__main__":
    main()
