"""MinMaxLossFairPCA against its baselines: speed, rank, and what nesting costs.

Three measurements, each printed with the command-line that produced it:

1. **Speed at n = 10^4, p = 20** (``make_gaussian_groups``, two groups 70/30,
   d = 5): CPU time (``time.process_time``) of scikit-learn's
   ``PCA(n_components=d).fit`` and of ``MinMaxLossFairPCA(d).fit`` with the
   default rounding (rank d), Samadi et al.'s LP rounding, ``nested=True`` and
   ``solver="mw"`` at its defaults; the fits are interleaved ``--repeat`` times
   and the median of each is reported with its ratio to PCA's median.
2. **Speed on LFW** (Samadi et al.'s preparation, 13232 x 1764, groups by sex,
   d = 5) against the covariance floor: centring, ``X^T X`` and ``eigh`` of the
   result (what any covariance-based PCA must do), interleaved as above
   (``--lfw-repeat`` runs). Skipped when LFW is not in the data home.
3. **The relaxation solver** for two groups (the cutting-plane model in closed
   form) against Kelley's method with its master LP solved by HiGHS
   (``scipy.optimize.linprog``): same iterates, median CPU time.
4. **The price of nesting** on Default credit (Samadi et al.'s preparation),
   d = 1..10: the largest group loss of the nested fit's prefix of each rank
   against the joint optimum of that rank (both certified by duality gaps).

BLAS runs on one thread throughout. Usage::

    python benchmarks/minmax_loss.py                      # everything
    python benchmarks/minmax_loss.py --quick              # 3 repeats, no LFW
    python benchmarks/minmax_loss.py --quick --repeat 15  # 15 repeats, no LFW
    python benchmarks/minmax_loss.py --data-home ../shared/data
"""

import argparse
import logging
import sys
import warnings

import numpy as np
from _timing import interleaved_medians
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from fairpca import MinMaxLossFairPCA
from fairpca.datasets import make_gaussian_groups


def report(title, medians, base, extra):
    print(f"\n{title}")
    print(f"  {'fit':<34} {'median CPU s':>12} {'ratio':>7}  {'rank':>4}  rel. gap")
    for name, seconds in medians.items():
        rank, gap = extra.get(name, ("", ""))
        print(f"  {name:<34} {seconds:12.4f} {seconds / medians[base]:7.2f}  {rank:>4}  {gap}")


def estimator_summary(make, X, s):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = make().fit(X, sensitive_features=s)
    if est.nested:
        return est.n_components_, f"{np.max(est.prefix_gaps_ / est.prefix_objectives_):.1e}"
    return est.n_components_, f"{est.gap_ / abs(est.relaxed_objective_):.1e}"


def speed(X, s, d, repeat, title, floor):
    makers = {
        "MinMaxLossFairPCA (default)": lambda: MinMaxLossFairPCA(d),
        "MinMaxLossFairPCA(rounding='lp')": lambda: MinMaxLossFairPCA(d, rounding="lp"),
        "MinMaxLossFairPCA(nested=True)": lambda: MinMaxLossFairPCA(d, nested=True),
        "MinMaxLossFairPCA(solver='mw')": lambda: MinMaxLossFairPCA(d, solver="mw"),
    }
    fits = {floor[0]: floor[1]}
    fits.update(
        {
            name: (lambda make=make: make().fit(X, sensitive_features=s))
            for name, make in makers.items()
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        medians = interleaved_medians(fits, repeat)
    extra = {name: estimator_summary(make, X, s) for name, make in makers.items()}
    report(title, medians, floor[0], extra)


def covariance_floor(X, d):
    Xc = X - X.mean(axis=0)
    np.linalg.eigh(Xc.T @ Xc)


def solver_timing(X, s, d, repeat):
    """The two-group solver against Kelley's method with its master LP solved by HiGHS."""
    import logging

    from fairpca.minmax_loss import _group_targets, _solve_cutting_plane, _solve_two_groups
    from fairpca.moments import GroupMoments

    B = GroupMoments.from_arrays(X, s).second_moment(center="pooled")
    own, bases = _group_targets(B, d)
    args = (B, own, own, bases, d, 1e-6, 100, logging.DEBUG)
    medians = interleaved_medians(
        {
            "closed-form model": lambda: _solve_two_groups(*args),
            "HiGHS master LP": lambda: _solve_cutting_plane(*args),
        },
        repeat,
    )
    fast, oracle = _solve_two_groups(*args), _solve_cutting_plane(*args)
    print(f"\nRelaxation solver alone (n = 10^4, p = 20, d = {d}), median CPU ms:")
    for name, value in medians.items():
        print(f"  {name:<18} {1e3 * value:7.3f} ms")
    print(
        f"  iterations {fast[4]} and {oracle[4]}; dual bounds differ by "
        f"{abs(fast[3] - oracle[3]) / abs(oracle[3]):.1e} (relative)"
    )


def price_of_nesting(data_home):
    try:
        from fairpca.experiments import samadi2018

        split = samadi2018("default_credit", data_home=data_home)
    except (OSError, ValueError) as exc:
        print(f"\nDefault credit not available ({exc}); nesting not measured.")
        return
    X, s = split.X_train, split.s_train
    nested = MinMaxLossFairPCA(10, nested=True).fit(X, sensitive_features=s)
    print("\nPrice of nesting, Default credit (Samadi et al.), groups by education:")
    print(f"  {'d':>2} {'joint optimum':>14} {'nested prefix':>14} {'excess':>8}")
    for d in range(1, 11):
        joint = MinMaxLossFairPCA(d).fit(X, sensitive_features=s).objective_
        prefix = nested.prefix_objectives_[d - 1]
        print(f"  {d:>2} {joint:14.6f} {prefix:14.6f} {100 * (prefix - joint) / joint:7.2f}%")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats, no LFW")
    parser.add_argument("-d", type=int, default=5, help="n_components (default 5)")
    parser.add_argument(
        "--repeat", type=int, default=None, help="interleaved runs (default 15, --quick 3)"
    )
    parser.add_argument("--lfw-repeat", type=int, default=5, help="interleaved LFW runs")
    parser.add_argument("--data-home", default=None, help="data home (default $FAIRPCA_DATA)")
    args = parser.parse_args()
    repeat = args.repeat or (3 if args.quick else 15)
    print("python benchmarks/minmax_loss.py " + " ".join(sys.argv[1:]))
    logging.getLogger("fairpca").setLevel(logging.WARNING)
    with threadpool_limits(limits=1):
        X, s = make_gaussian_groups(n_samples=10_000, n_features=20, random_state=0)
        floor = ("PCA(n_components=d).fit", lambda: PCA(n_components=args.d).fit(X))
        title = f"n = 10^4, p = 20, two groups, d = {args.d}; CPU time, one BLAS thread, "
        speed(X, s, args.d, repeat, title + f"median of {repeat} interleaved runs", floor)
        solver_timing(X, s, args.d, repeat)
        if not args.quick:
            try:
                from fairpca.experiments import samadi2018

                lfw = samadi2018("lfw", data_home=args.data_home)
            except (OSError, ValueError) as exc:
                print(f"\nLFW not available ({exc}); skipped.")
            else:
                X, s = lfw.X_train, lfw.s_train
                floor = (
                    "covariance floor (centre, X^T X, eigh)",
                    lambda: covariance_floor(X, args.d),
                )
                title = f"LFW (Samadi et al.), {X.shape[0]} x {X.shape[1]}, d = {args.d}; "
                title += f"median of {args.lfw_repeat} interleaved runs"
                speed(X, s, args.d, args.lfw_repeat, title, floor)
        price_of_nesting(args.data_home)


if __name__ == "__main__":
    main()
