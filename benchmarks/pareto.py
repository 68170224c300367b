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
4. Scale, n = 10^5, p = 50, d = 5: the two groups of ``benchmarks/run.py``'s
   scale grid (seeds 0 and 1; seed 0 is badly conditioned, its descent the
   longest) and ``make_gaussian_groups``. CPU time with one BLAS thread, median
   of ``--scale-repeat`` interleaved runs, against the covariance floor
   (centring, ``X^T X``, ``eigh``) and scikit-learn's
   ``PCA(n_components=5, svd_solver="covariance_eigh")``, with the steps of the
   start search and of the Pareto descent. ``--baseline SRC`` also times the
   ``fairpca`` found in the source directory ``SRC`` (e.g. a ``git worktree``
   of an older commit) in a worker process, interleaved with the rest.

Sections 1-3: PCA times are the best of 10 runs, fair-PCA times the best of
``--repeat`` (default 3). The machine may be shared: timings are noisy,
ratios less so.

Usage::

    python benchmarks/pareto.py            # everything
    python benchmarks/pareto.py --quick    # d = 10 only, p <= 100, one repeat
    python benchmarks/pareto.py --scale-only --baseline /tmp/old/src
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
from _timing import best_time
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from fairpca import MinMaxLossFairPCA, ParetoFairPCA
from fairpca.datasets import make_gaussian_groups
from fairpca.experiments import kamani
from fairpca.metrics import marginal_loss, pairwise_disparity_error, reconstruction_error

REAL = (("adult", "sex"), ("default_credit", "sex"), ("adult", "race"))
REAL += (("default_credit", "marriage"),)
SIZES = (20, 50, 100, 200, 500)
QUICK_SIZES = (20, 50, 100)
#: Section 4's data: name -> (generator, n, p, seed), all at d = 5.
SCALE = {
    "run.py groups, seed 0": ("run", 100_000, 50, 0),
    "run.py groups, seed 1": ("run", 100_000, 50, 1),
    "make_gaussian_groups": ("gaussian", 100_000, 50, 0),
}
SCALE_D = 5


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


# ------------------------------------------------------------ section 4: scale


def scale_data(generator, n, p, seed):
    if generator == "run":
        from run import _memory_data  # the scale grid's generator (sibling script)

        return _memory_data(n, p, seed)
    return make_gaussian_groups(n_samples=n, n_features=p, random_state=seed)


def covariance_floor(X, d):
    """What any covariance-based PCA must do: centre, ``X^T X``, ``eigh``."""
    Xc = X - X.mean(axis=0)
    np.linalg.eigh(Xc.T @ Xc)


def timed_fit(X, s, d):
    """CPU seconds of one ``ParetoFairPCA(d).fit`` and its steps (start search, descent)."""
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = ParetoFairPCA(n_components=d).fit(X, sensitive_features=s)
    seconds = time.process_time() - start
    descent = len(est.history_["step"]) - 1
    return seconds, {"start": est.n_iter_ - descent, "descent": descent, "conv": est.converged_}


def cpu_time(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def worker():
    """Serve ``timed_fit`` requests (one JSON case per line) for ``--baseline``."""
    data = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for line in sys.stdin:
            case = tuple(json.loads(line))
            if case not in data:
                data[case] = scale_data(*case)
            seconds, steps = timed_fit(*data[case], SCALE_D)
            print(json.dumps([seconds, {key: str(value) for key, value in steps.items()}]))
            sys.stdout.flush()


def start_worker(source):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(source))
    command = [sys.executable, os.path.abspath(__file__), "--worker"]
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


def ask(process, case):
    process.stdin.write(json.dumps(case) + "\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def scale(repeat, baseline):
    """Section 4: interleaved CPU-time medians, ratios to the floor and to PCA."""
    other = start_worker(baseline) if baseline else None
    print(
        f"\nScale: n = 10^5, p = 50, d = {SCALE_D}; CPU time, one BLAS thread, median of "
        f"{repeat} interleaved runs; steps = start search + Pareto descent"
    )
    names = ["floor", "PCA", "fit"] + (["baseline"] if other else [])
    title = f"{'data':<24} {'floor s':>8} {'PCA s':>8} {'fit s':>8} {'/floor':>7} {'/PCA':>6}"
    title += f" {'steps':>10}" + (
        f" {'baseline s':>11} {'/floor':>7} {'steps':>10}" if other else ""
    )
    print(title)
    with threadpool_limits(limits=1, user_api="blas"):
        for label, case in SCALE.items():
            X, s = scale_data(*case)
            tasks = {
                "floor": lambda X=X: cpu_time(lambda: covariance_floor(X, SCALE_D)),
                "PCA": lambda X=X: cpu_time(
                    lambda: PCA(n_components=SCALE_D, svd_solver="covariance_eigh").fit(X)
                ),
                "fit": lambda X=X, s=s: timed_fit(X, s, SCALE_D),
                "baseline": lambda case=case: ask(other, case),
            }
            for name in names:  # warm-up: imports, caches, the worker's data
                tasks[name]()
            times, steps = {name: [] for name in names}, {}
            for r in range(repeat):
                for name in names if r % 2 == 0 else names[::-1]:
                    result = tasks[name]()
                    if isinstance(result, (list, tuple)):
                        result, steps[name] = result
                    times[name].append(result)
            med = {name: statistics.median(values) for name, values in times.items()}

            def count(name, steps=steps):
                return f"{steps[name]['start']}+{steps[name]['descent']}"

            row = f"{label:<24} {med['floor']:>8.4f} {med['PCA']:>8.4f} {med['fit']:>8.4f}"
            row += f" {med['fit'] / med['floor']:>7.2f} {med['fit'] / med['PCA']:>6.2f}"
            row += f" {count('fit'):>10}"
            if other:
                row += f" {med['baseline']:>11.4f} {med['baseline'] / med['floor']:>7.2f}"
                row += f" {count('baseline'):>10}"
            print(row)
    if other:
        other.stdin.close()
        other.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run")
    parser.add_argument("--repeat", type=int, default=3, help="fair-PCA repetitions")
    parser.add_argument("--scale-repeat", type=int, default=11, help="section 4 repetitions")
    parser.add_argument("--scale-only", action="store_true", help="section 4 only")
    parser.add_argument("--baseline", help="also time the fairpca in this source directory")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    if args.scale_only:
        scale(args.scale_repeat, args.baseline)
        return
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

    scale(3 if args.quick else args.scale_repeat, args.baseline)


if __name__ == "__main__":
    main()
