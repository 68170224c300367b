"""Time RobustFairPCA (T = 1000 steps, PCA start + 20 random starts) against vanilla PCA.

Data: 4000 LFW faces (2000 per sex, as in appendix D of Vu et al. 2022) from
``fairpca.experiments.samadi2018("lfw")``, resized from 49 x 36 pixels to
grids of p = 10 ... 576 pixels (24 x 24 is the paper's size), standardised.
Synthetic Gaussian groups are used if the LFW files are not available.

For every p the script prints the time of ``sklearn.decomposition.PCA(3).fit``
and of ``RobustFairPCA(n_components=3).fit`` in both parametrisations, as
ratios to PCA measured in the same run, and the relative difference of the
objectives the two parametrisations reach. The complement parametrisation
costs O(p^2 (p - d)) a step (about an hour per fit at p = 576); above
``--complement-max-p`` its time is extrapolated from two short runs
(``fit time = a + b T``, marked ``*``), and the objectives are compared on
those short runs. Since runs stop once they can no longer improve the answer,
that extrapolation (every start taking all T steps) is an upper bound.

BLAS is limited to ``--threads`` threads (default 1) for PCA and RFPCA alike,
so that the ratio is not an artefact of thread contention on a shared machine.

With ``--scale`` it instead times whole fits at scale, on the two-group data
of ``benchmarks/run.py`` (n = 10^6 rows by default, p in 20 and 100, d = 5):
scikit-learn's ``PCA(n_components=5, svd_solver="covariance_eigh").fit``,
``RobustFairPCA(n_components=5, random_state=0).fit``, and the same fit with
every start run for the full budget (the private switch
``fairpca.robust._STOP_EARLY`` off: the answer early stopping must reproduce).
It prints median CPU times (one BLAS thread, ``--repeats`` interleaved runs),
the ratios to PCA and between the two RobustFairPCA fits, the steps taken and
the relative difference of their objectives.

Usage::

    python benchmarks/robust.py            # p in 10, 24, 48, 96, 192, 384, 576
    python benchmarks/robust.py --quick    # p in 10, 48, 192, 576
    python benchmarks/robust.py --scale    # n = 10^6, p in 20, 100 (--n, --repeats)
"""

import argparse
import time
import warnings

import numpy as np
from _timing import best_time
from scipy.ndimage import zoom
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import fairpca.robust
from fairpca.robust import RobustFairPCA

GRIDS = {
    10: (2, 5),
    24: (4, 6),
    48: (6, 8),
    96: (8, 12),
    192: (12, 16),
    384: (16, 24),
    576: (24, 24),
}
QUICK_SIZES = (10, 48, 192, 576)
D = 3
SHORT = (2, 6)  # steps of the short complement runs used for extrapolation


def load_faces(n_per_group=2000, seed=0):
    """4000 LFW images of shape (49, 36) and their sex labels, or ``None`` if unavailable."""
    try:
        from fairpca.experiments import samadi2018

        split = samadi2018("lfw")
    except (ImportError, OSError, ValueError) as exc:
        print(f"LFW not available ({exc}); using synthetic data.")
        return None
    rng = np.random.default_rng(seed)
    rows = np.concatenate(
        [
            rng.choice(np.flatnonzero(split.s_train == g), n_per_group, replace=False)
            for g in np.unique(split.s_train)
        ]
    )
    return split.X_train[rows].reshape(-1, 49, 36), split.s_train[rows]


def data_for(p, faces, seed=0):
    if faces is None:
        from fairpca.datasets import make_gaussian_groups

        X, s = make_gaussian_groups(n_samples=4000, n_features=p, random_state=seed)
    else:
        images, s = faces
        h, w = GRIDS[p]
        X = zoom(images, (1, h / images.shape[1], w / images.shape[2]), order=1)
        X = X.reshape(len(images), -1)
    return StandardScaler().fit_transform(X), s


def timed_fit(X, s, n_iter, parametrization, repeat=1):
    """Best fit time of RobustFairPCA and the fitted estimator."""

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = RobustFairPCA(
                n_components=D, n_iter=n_iter, parametrization=parametrization, random_state=0
            )
            return est.fit(X, sensitive_features=s)

    return best_time(fit, repeat)


def robust_fit(X, s, stop_early):
    """``RobustFairPCA(n_components=5).fit``, its runs stopped early or not."""
    default = fairpca.robust._STOP_EARLY
    fairpca.robust._STOP_EARLY = stop_early
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return RobustFairPCA(n_components=5, random_state=0).fit(X, sensitive_features=s)
    finally:
        fairpca.robust._STOP_EARLY = default


def median_cpu_times(fits, repeats):
    """Median CPU time of each fit over ``repeats`` interleaved rounds, and its last result."""
    times, results = {name: [] for name in fits}, {}
    for _ in range(repeats):
        for name, fit in fits.items():
            start = time.process_time()
            results[name] = fit()
            times[name].append(time.process_time() - start)
    return {name: float(np.median(t)) for name, t in times.items()}, results


def scale_main(n, repeats):
    """Whole fits at n rows, p in (20, 100): RobustFairPCA against PCA, with and without stops."""
    from run import _memory_data  # the scale grid's data (sibling module)

    print(
        f"n = {n:.0e}, d = 5, two groups (benchmarks/run.py data, seed 0); CPU time, one BLAS "
        f"thread, median of {repeats} interleaved runs"
    )
    print(
        f"{'p':>4s} {'PCA s':>8s} {'RFPCA s':>8s} {'ratio':>6s} {'full-budget s':>14s} "
        f"{'ratio':>6s} {'speed-up':>9s} {'steps':>13s} {'rel. objective diff':>20s}"
    )
    with threadpool_limits(limits=1, user_api="blas"):
        for p in (20, 100):
            X, s = _memory_data(n, p, 0)
            fits = {
                "pca": lambda X=X: PCA(n_components=5, svd_solver="covariance_eigh").fit(X),
                "stopped": lambda X=X, s=s: robust_fit(X, s, True),
                "full": lambda X=X, s=s: robust_fit(X, s, False),
            }
            med, fitted = median_cpu_times(fits, repeats)
            stopped, full = fitted["stopped"], fitted["full"]
            steps = stopped.n_iter_per_start_
            diff = abs(stopped.objective_ - full.objective_) / abs(full.objective_)
            print(
                f"{p:4d} {med['pca']:8.3f} {med['stopped']:8.3f} "
                f"{med['stopped'] / med['pca']:6.2f} {med['full']:14.3f} "
                f"{med['full'] / med['pca']:6.2f} {med['full'] / med['stopped']:8.2f}x "
                f"{f'{steps.sum()}/{steps.size * stopped.n_iter}':>13s} {diff:20.1e}",
                flush=True,
            )
            del X, s, fits, fitted


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 sizes only")
    parser.add_argument("--scale", action="store_true", help="fits at n rows, p in 20 and 100")
    parser.add_argument("--n", type=float, default=1e6, help="rows for --scale")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved runs for --scale")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (0: no limit)")
    parser.add_argument("--n-iter", type=int, default=1000)
    parser.add_argument(
        "--complement-max-p",
        type=int,
        default=None,
        help="largest p fitted in full with the complement form (default 96, quick 48)",
    )
    args = parser.parse_args()
    if args.scale:
        scale_main(int(args.n), args.repeats)
        return
    sizes = QUICK_SIZES if args.quick else tuple(GRIDS)
    complement_max_p = args.complement_max_p or (48 if args.quick else 96)
    faces = load_faces()
    limits = threadpool_limits(limits=args.threads) if args.threads > 0 else None
    print(
        f"RobustFairPCA(n_components={D}, n_iter={args.n_iter}, n_restarts=20) vs "
        f"PCA({D}).fit on {'LFW faces' if faces else 'synthetic data'}, n = 4000; "
        f"BLAS threads: {args.threads or 'unlimited'}"
    )
    print(
        f"{'p':>4s} {'PCA s':>8s} {'direct s':>9s} {'ratio':>7s} "
        f"{'complement s':>13s} {'ratio':>8s} {'rel. objective diff':>20s}"
    )
    for p in sizes:
        X, s = data_for(p, faces)
        pca_time, _ = best_time(lambda X=X: PCA(n_components=D).fit(X), 5)
        repeat = 3 if p <= 96 else 1
        direct_time, direct = timed_fit(X, s, args.n_iter, "direct", repeat)
        if p <= complement_max_p:
            comp_time, comp = timed_fit(X, s, args.n_iter, "complement", repeat)
            mark = " "
        else:
            t1, _ = timed_fit(X, s, SHORT[0], "complement")
            t2, comp = timed_fit(X, s, SHORT[1], "complement")
            comp_time = t1 + (t2 - t1) / (SHORT[1] - SHORT[0]) * (args.n_iter - SHORT[0])
            mark = "*"
            _, direct = timed_fit(X, s, SHORT[1], "direct")
        diff = abs(comp.objective_ - direct.objective_) / abs(direct.objective_)
        print(
            f"{p:4d} {pca_time:8.3f} {direct_time:9.2f} {direct_time / pca_time:7.1f} "
            f"{comp_time:12.1f}{mark} {comp_time / pca_time:8.0f} {diff:20.2e}",
            flush=True,
        )
    if limits is not None:
        limits.restore_original_limits()
    print("* extrapolated from runs of 2 and 6 steps; objectives compared after 6 steps.")


if __name__ == "__main__":
    main()
