"""ConvexFairPCA's ADMM solver against SCS on Lee et al.'s synthetic data #2.

Data as in ``convex.py`` (``make_mmd_synthetic2``, ``max(240, p)`` rows per
group, standardised), ``d = 5``, ``mu = 0.01``, ``delta`` in ``--deltas``.
For each p: CPU seconds (one BLAS thread) of ``solver="ADMM"`` (``tol=1e-6``,
a certified relative duality gap) and, up to ``--scs-max-p``, of SCS
(``tol=1e-6``), the ADMM iterations, whether it converged, its certified gap
and the relative difference of the two objectives. One run each: the SCS and
ADMM fits of one p follow each other.

Usage::

    python benchmarks/convex_admm.py                          # p = 40, 100, 300, 1000
    python benchmarks/convex_admm.py --p 40 100 --deltas 0 0.1
"""

import argparse
import time
import warnings

from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from fairpca import ConvexFairPCA
from fairpca.datasets import make_mmd_synthetic2


def fit(X, s, solver, delta):
    est = ConvexFairPCA(
        n_components=5,
        mu=0.01,
        delta=delta,
        solver=solver,
        tol=1e-6,
        max_iter=20000,
        max_features=None,
    )
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, sensitive_features=s)
    return time.process_time() - start, est


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, nargs="+", default=[40, 100, 300, 1000])
    parser.add_argument("--deltas", type=float, nargs="+", default=[0.0, 0.1])
    parser.add_argument("--scs-max-p", type=int, default=100)
    args = parser.parse_args()
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
