"""ConvexFairPCA's ADMM solver against SCS on Lee et al.'s synthetic data #2.

Data as in ``convex.py`` (``make_mmd_synthetic2``, ``max(240, p)`` rows per
group, standardised), ``d = 5``, ``mu = 0.01``, ``delta`` in ``--deltas``.
For each p: CPU seconds (one BLAS thread) of ``solver="ADMM"`` (``tol=1e-6``,
a certified relative duality gap) and, up to ``--scs-max-p``, of SCS
(``tol=1e-6``), the ADMM iterations, whether it converged, its certified gap
and the relative difference of the two objectives. One run each: the SCS and
ADMM fits of one p follow each other.

``--suite`` instead fits a fixed set of problems (the scale grid's data of
``run.py`` at n = 10^6, synthetic #2, Gaussian groups, and Lee et al.'s German
credit and COMPAS split 0 where the data are found) with the solver's defaults
and with each ``--set`` of its module constants, and prints the ADMM iterations
and CPU seconds of every fit: the evidence behind those constants.

Usage::

    python benchmarks/convex_admm.py                          # p = 40, 100, 300, 1000
    python benchmarks/convex_admm.py --p 40 100 --deltas 0 0.1
    python benchmarks/convex_admm.py --suite --set _RHO_START=1 --set _ANDERSON_MEMORY=8
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import fairpca._fantope_admm as admm_module
import fairpca._fantope_constraints as constraints_module
import fairpca._fantope_prox as prox_module
import fairpca._fantope_subspaces as subspaces_module
from fairpca import ConvexFairPCA
from fairpca.datasets import make_gaussian_groups, make_mmd_synthetic2


def fit(X, s, solver, delta):
    est = ConvexFairPCA(
        n_components=5,
        mu=0.01,
        delta=delta,
        solver=solver,
        tol=1e-6,
        # Twice the slowest count seen (p = 1000, delta = 0.1, which moves between about
        # 10,000 and 21,500 with rounding alone): a miss here is news, not chance.
        max_iter=40000,
        max_features=None,
    )
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, sensitive_features=s)
    return time.process_time() - start, est


def _standardised(X, s):
    return StandardScaler().fit_transform(X), s


def suite_problems():
    """``name -> (X, s, settings)`` of the suite; Lee et al.'s splits only where found."""
    sys.path.insert(0, str(Path(__file__).parent))
    from run import _memory_data

    problems = {}
    for p in (20, 100):
        problems[f"scale grid p={p} n=1e6"] = (*_memory_data(10**6, p, 0), {})
    problems["scale grid p=50 n=1e5 seed 1"] = (*_memory_data(10**5, 50, 1), {})
    for p, seed in ((40, 0), (60, 3), (100, 0), (300, 0)):
        data = _standardised(
            *make_mmd_synthetic2(n_features=p, n_per_group=max(240, p), random_state=seed)
        )
        for delta in (0.0, 0.1):
            problems[f"synthetic #2 p={p} seed {seed} delta={delta:g}"] = (*data, {"delta": delta})
    for seed, p, k in ((1, 30, 3), (2, 15, 2), (3, 25, 2), (4, 50, 4)):
        data = _standardised(
            *make_gaussian_groups(n_samples=800, n_features=p, n_groups=k, random_state=seed)
        )
        problems[f"Gaussian groups p={p} k={k} seed {seed}"] = (*data, {})
    try:
        from fairpca.experiments import lee2022

        splits = {name: lee2022(name, split=0) for name in ("german_credit", "compas")}
    except (FileNotFoundError, OSError) as exc:
        print(f"Lee et al.'s splits left out: {exc}", file=sys.stderr)
        splits = {}
    for name, split in splits.items():
        for d in (2, 5):
            for delta in (0.0, 0.1):
                problems[f"{name} split 0 d={d} delta={delta:g}"] = (
                    split.X_train,
                    split.s_train,
                    {"n_components": d, "delta": delta},
                )
    return problems


def _assign(text):
    """``NAME=VALUE`` -> ``(module, NAME, value)`` for a constant of the solver's modules."""
    name, _, value = text.partition("=")
    for module in (admm_module, constraints_module, prox_module, subspaces_module):
        if hasattr(module, name):
            current = getattr(module, name)
            return module, name, type(current)(float(value))
    raise SystemExit(f"--set: no constant {name!r} in the Fantope ADMM's modules")


def run_suite(sets):
    """Fit every suite problem under the defaults and each of ``sets``; print a table."""
    configurations = [("defaults", [])] + [
        (" ".join(group), [_assign(item) for item in group]) for group in sets
    ]
    problems = suite_problems()
    print("| problem | " + " | ".join(label for label, _ in configurations) + " |")
    print("|---" * (len(configurations) + 1) + "|")
    totals = [0.0] * len(configurations)
    for name, (X, s, settings) in problems.items():
        cells = []
        for i, (_, assignments) in enumerate(configurations):
            saved = [(module, key, getattr(module, key)) for module, key, _ in assignments]
            for module, key, value in assignments:
                setattr(module, key, value)
            try:
                est = ConvexFairPCA(**{"n_components": 5, "solver": "ADMM", **settings})
                with threadpool_limits(1), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.process_time()
                    est.fit(X, sensitive_features=s)
                    seconds = time.process_time() - start
            finally:
                for module, key, value in saved:
                    setattr(module, key, value)
            totals[i] += seconds
            mark = "" if est.converged_ else " (not converged)"
            cells.append(f"{est.n_iter_}{mark}, {seconds:.2f} s")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print("| total CPU s | " + " | ".join(f"{t:.2f}" for t in totals) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, nargs="+", default=[40, 100, 300, 1000])
    parser.add_argument("--deltas", type=float, nargs="+", default=[0.0, 0.1])
    parser.add_argument("--scs-max-p", type=int, default=100)
    parser.add_argument("--suite", action="store_true", help="the fixed problem set instead")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE[,NAME=VALUE]",
        help="a configuration of the solver's module constants to compare (--suite)",
    )
    args = parser.parse_args()
    if args.suite:
        run_suite([item.split(",") for item in args.set])
        return
    print(
        "| p | delta | ADMM s | iterations | converged | relative gap | SCS s | objective diff. |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for p in args.p:
        X, s = make_mmd_synthetic2(n_features=p, n_per_group=max(240, p), random_state=0)
        X = StandardScaler().fit_transform(X)
        for delta in args.deltas:
            with threadpool_limits(1):
                seconds, admm = fit(X, s, "ADMM", delta)
                scs_cell, diff_cell = "-", "-"
                if p <= args.scs_max_p:
                    scs_seconds, scs = fit(X, s, "SCS", delta)
                    scs_cell = f"{scs_seconds:.2f}"
                    diff_cell = f"{(admm.objective_ - scs.objective_) / abs(scs.objective_):.1e}"
            gap = admm.duality_gap_ / abs(admm.objective_)
            print(
                f"| {p} | {delta:g} | {seconds:.2f} | {admm.n_iter_} | {admm.converged_} | "
                f"{gap:.1e} | {scs_cell} | {diff_cell} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
