"""Time ParetoFairPCA against vanilla PCA, and compare it with MinMaxLossFairPCA.

1. Kamani et al.'s data (``fairpca.experiments.kamani``, training split):
   Adult and Default credit with sex (two groups), Adult race (5 groups) and
   credit marriage (3 groups), at d = 2, 5, 10 (10 is the dimension the paper
   states). For each: fit time of ``ParetoFairPCA(d)`` (start search and
   Pareto descent), the time of ``sklearn.decomposition.PCA(d).fit`` on the same
   data in the same run, their ratio, the steps taken, whether the descent
   converged, the average absolute pairwise disparity error and the total
   reconstruction loss, both relative to PCA's.
2. Synthetic data, ``make_gaussian_groups(n_samples=20000, n_features=p)``,
   two groups, p = 20 ... 500, d = 5: the same timings.
3. At d = 10 on Adult (sex) and credit (sex): the objectives of PCA,
   ``MinMaxLossFairPCA`` and ``ParetoFairPCA`` side by side -- Samadi's largest
   average marginal loss, Kamani's average |pairwise disparity error| and the
   total loss (mean squared residual per row).

PCA times are the best of 10 runs, fair-PCA times the best of ``--repeat``
(default 3). The machine may be shared: timings are noisy, ratios less so.

Usage::

    python benchmarks/pareto.py            # everything
    python benchmarks/pareto.py --quick    # d = 10 only, p <= 100, one repeat
"""

import argparse
import warnings

import numpy as np
from _timing import best_time
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning

from fairpca import MinMaxLossFairPCA, ParetoFairPCA
from fairpca.datasets import make_gaussian_groups
from fairpca.experiments import kamani
from fairpca.metrics import marginal_loss, pairwise_disparity_error, reconstruction_error

REAL = (("adult", "sex"), ("default_credit", "sex"), ("adult", "race"))
REAL += (("default_credit", "marriage"),)
SIZES = (20, 50, 100, 200, 500)
QUICK_SIZES = (20, 50, 100)


def mean_abs_gap(X, s, projection, d):
    gaps = pairwise_disparity_error(X, s, projection, n_components=d)
    return float(np.mean(np.abs(list(gaps.values()))))


def max_marginal(X, s, projection, d):
    return max(marginal_loss(X, s, projection, n_components=d).values())


def timing_row(name, X, s, d, repeat):
    t_pca, pca = best_time(lambda: PCA(n_components=d).fit(X), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t_fair, fair = best_time(
            lambda: ParetoFairPCA(n_components=d).fit(X, sensitive_features=s), repeat
        )
    gap = mean_abs_gap(X, s, fair, d) / mean_abs_gap(X, s, pca, d)
    loss = reconstruction_error(X, fair) / reconstruction_error(X, pca)
    print(
        f"{name:<26} {X.shape[0]:>6} {X.shape[1]:>4} {d:>3} {t_fair:>9.3f} {t_pca:>9.4f} "
        f"{t_fair / t_pca:>7.1f} {fair.n_iter_:>6} {str(fair.converged_):>6} "
        f"{gap:>9.2e} {100 * (loss - 1):>+8.3f}%"
    )


def header(title):
    print(f"\n{title}")
    print(
        f"{'data':<26} {'n':>6} {'p':>4} {'d':>3} {'fair (s)':>9} {'PCA (s)':>9} "
        f"{'ratio':>7} {'steps':>6} {'conv':>6} {'gap/PCA':>9} {'loss':>9}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run")
    parser.add_argument("--repeat", type=int, default=3, help="fair-PCA repetitions")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    dims = (10,) if args.quick else (2, 5, 10)

    splits = {case: kamani(*case) for case in REAL}
    header("Kamani et al.'s data (training split); gap/PCA = mean |Delta| relative to PCA's")
    for case, split in splits.items():
        for d in dims:
            timing_row(f"{case[0]} ({case[1]})", split.X_train, split.s_train, d, repeat)

    header("Synthetic: make_gaussian_groups(n_samples=20000, n_features=p), 2 groups")
    for p in QUICK_SIZES if args.quick else SIZES:
        X, s = make_gaussian_groups(n_samples=20000, n_features=p, random_state=0)
        timing_row("gaussian groups", X, s, 5, repeat)

    d = 10
    print(f"\nObjectives at d = {d} (training split)")
    print(
        f"{'data':<22} {'method':<18} {'max marginal loss':>18} {'mean |Delta|':>13} "
        f"{'loss/row':>9} {'rank':>5} {'fit (s)':>8}"
    )
    for case in REAL[:2]:
        X, s = splits[case].X_train, splits[case].s_train
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            methods = {
                "PCA": lambda X=X: PCA(n_components=d).fit(X),
                "MinMaxLossFairPCA": lambda X=X, s=s: MinMaxLossFairPCA(n_components=d).fit(
                    X, sensitive_features=s
                ),
                "ParetoFairPCA": lambda X=X, s=s: ParetoFairPCA(n_components=d).fit(
                    X, sensitive_features=s
                ),
            }
            for name, fit in methods.items():
                seconds, est = best_time(fit, 1)
                rank = getattr(est, "n_components_", d)
                print(
                    f"{case[0] + ' (' + case[1] + ')':<22} {name:<18} "
                    f"{max_marginal(X, s, est, d):>18.5f} {mean_abs_gap(X, s, est, d):>13.2f} "
                    f"{reconstruction_error(X, est):>9.5f} {rank:>5} {seconds:>8.3f}"
                )


if __name__ == "__main__":
    main()
