"""Reproduce the FPCA rows for German credit in Table 1 of Lee et al. (2022).

Protocol: ``fairpca.experiments.lee2022("german_credit", split=i)`` for the ten
splits (its module, ``fairpca.experiments.papers.lee2022``, lists every choice).
For each setting, ``ConvexFairPCA(n_components=d, mu=mu, delta=delta)`` is
fitted on the training split and evaluated on the test split:

- %VAR: ``100 * fairpca.metrics.explained_variance_ratio(X_test, est)``;
- MMD²: ``fairpca.metrics.mmd2(X_test, s_test, est, bandwidth=sigma)`` with
  ``sigma = fairpca.metrics.mmd_bandwidth(X_train, d)``, the median heuristic
  on the training split's top-``d`` PCA projections (DESIGN.md §4, MMDFairPCA).

The table prints mean and standard deviation over the splits next to the
paper's. Table 1 writes FPCA's pair as (delta, mu); the settings below are
given as (mu, delta). Its d = 10 row labelled "(0, 0.1)" is compared with
mu = 0.1, delta = 0 (the label) and with mu = 0.01, delta = 0 (the authors'
script for d = 10, ``spca(dimPCA=10, d=0, mu=0.01)``). The splits are drawn
with fixed seeds, not the authors' (unseeded) ones, so single splits cannot
be compared, only the spread.

Usage::

    python benchmarks/reproduce_convex.py           # 5 settings x 10 splits
    python benchmarks/reproduce_convex.py --quick   # d = 2, (0.01, 0.1), splits 0-2
"""

import argparse
import time

import numpy as np
from sklearn.decomposition import PCA

from fairpca import ConvexFairPCA
from fairpca.experiments import lee2022, reference
from fairpca.metrics import explained_variance_ratio, mmd2, mmd_bandwidth

_CELLS = reference("lee2022-table1").query("dataset == 'german_credit'")
_CELLS = _CELLS.set_index(["method", "setting", "d", "metric"])


def _paper(method, setting, d):
    """Table 1 of Lee et al., German credit: (%VAR mean, sd, MMD² mean, sd)."""
    return tuple(
        _CELLS.loc[(method, setting, d, metric), column]
        for metric in ("%VAR", "MMD2")
        for column in ("mean", "std")
    )


#: (d, mu, delta) -> Table 1 of Lee et al., German credit: (%VAR mean, sd, MMD² mean, sd).
#: The d = 10 row labelled "(0, 0.1)" is compared with both readings of its label:
#: mu = 0.1 as printed, and mu = 0.01 as in the authors' run script for d = 10.
PAPER = {
    (2, 0.01, 0.1): _paper("ConvexFairPCA", "mu=0.01 delta=0.1", 2),
    (2, 0.01, 0.0): _paper("ConvexFairPCA", "mu=0.01 delta=0", 2),
    (10, 0.01, 0.1): _paper("ConvexFairPCA", "mu=0.01 delta=0.1", 10),
    (10, 0.01, 0.0): _paper("ConvexFairPCA", "mu=0.01 delta=0", 10),
    (10, 0.1, 0.0): _paper("ConvexFairPCA", "mu=0.01 delta=0", 10),
}
#: Table 1, PCA rows: d -> (%VAR mean, sd, MMD² mean, sd).
PAPER_PCA = {d: _paper("PCA", "", d) for d in (2, 10)}


def evaluate(split, d, mu, delta, bandwidth):
    """Fit one setting on one split; return (%VAR, MMD², seconds, status, top eigenvalues of P*)."""
    start = time.perf_counter()
    est = ConvexFairPCA(n_components=d, mu=mu, delta=delta).fit(
        split.X_train, sensitive_features=split.s_train
    )
    seconds = time.perf_counter() - start
    var = 100 * explained_variance_ratio(split.X_test, est)
    mmd = mmd2(split.X_test, split.s_test, est, bandwidth=bandwidth)
    eig = np.linalg.eigvalsh(est.relaxed_projection_)[::-1][: d + 2]
    return var, mmd, seconds, est.solver_status_, eig


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one setting, three splits")
    parser.add_argument("--data-home", default=None, help="folder of the data sets")
    args = parser.parse_args()
    settings = [(2, 0.01, 0.1)] if args.quick else list(PAPER)
    splits = range(3) if args.quick else range(10)

    data = [lee2022("german_credit", split=i, data_home=args.data_home) for i in splits]
    rows = []
    for d in sorted({d for d, _, _ in settings}):
        bandwidths = [mmd_bandwidth(s.X_train, d) for s in data]
        pca = [
            (
                100 * explained_variance_ratio(s.X_test, PCA(d).fit(s.X_train)),
                mmd2(s.X_test, s.s_test, PCA(d).fit(s.X_train), bandwidth=b),
            )
            for s, b in zip(data, bandwidths, strict=True)
        ]
        rows.append((f"PCA d={d}", np.array(pca), None, PAPER_PCA[d]))
        for setting in [s for s in settings if s[0] == d]:
            _, mu, delta = setting
            print(f"d={d}, mu={mu}, delta={delta}:")
            results = []
            for i, split, bandwidth in zip(splits, data, bandwidths, strict=True):
                var, mmd, seconds, status, eig = evaluate(split, d, mu, delta, bandwidth)
                results.append((var, mmd, seconds))
                print(
                    f"  split {i}: %VAR {var:6.2f}  MMD² {mmd:.4f}  {seconds:5.1f} s  {status}  "
                    f"top eigenvalues of P*: {np.array2string(eig, precision=4)}"
                )
            rows.append((f"FPCA d={d} mu={mu} delta={delta}", np.array(results), setting, None))

    print()
    print(
        f"{'method':<34} {'%VAR (ours)':>14} {'%VAR (paper)':>14} {'MMD² (ours)':>16} "
        f"{'MMD² (paper)':>16} {'within':>7} {'s/split':>8}"
    )
    for name, values, setting, paper_pca in rows:
        paper = PAPER[setting] if setting else paper_pca
        var, mmd = values[:, 0], values[:, 1]
        sd = (lambda x: x.std(ddof=1)) if len(values) > 1 else (lambda x: 0.0)
        inside = abs(var.mean() - paper[0]) <= paper[1] and abs(mmd.mean() - paper[2]) <= paper[3]
        seconds = f"{values[:, 2].mean():8.1f}" if values.shape[1] > 2 else f"{'':>8}"
        print(
            f"{name:<34} {var.mean():7.2f} ± {sd(var):4.2f} {paper[0]:7.2f} ± {paper[1]:4.2f} "
            f"{mmd.mean():8.4f} ± {sd(mmd):.3f} {paper[2]:8.3f} ± {paper[3]:.3f} "
            f"{'yes' if inside else 'no':>7} {seconds}"
        )
    print(
        "\n'within': both means inside the paper's mean ± one standard deviation. "
        "Timings are wall-clock on this machine (noisy when it is shared)."
    )


if __name__ == "__main__":
    main()
