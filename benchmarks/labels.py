"""Cost of string group labels against the same labels as integers, on Adult.

Data: the numeric columns of UCI Adult (48,842 rows, 6 features;
``fairpca.datasets.load_adult``, files under ``FAIRPCA_DATA``), the group
label ``sex`` (or ``race``) as loaded (a pandas string column), as NumPy
object and fixed-width ``str`` arrays, and as integer codes (the baseline).
Tasks: ``LinearErasure().fit``, ``MinMaxLossFairPCA(n_components=2).fit``,
``reconstruction_error_gap`` of a fitted PCA, and the encoder alone
(``check_sensitive_features``). CPU seconds of this process
(``time.process_time``) with BLAS on one thread; every (task, labels) pair is
timed once per round, rounds interleaved, and the median per call is reported
with its ratio to the integer labels' median of the same run (target: at most
1.2 for every task).

Usage::

    python benchmarks/labels.py                  # sex, 9 rounds
    python benchmarks/labels.py --sensitive race --rounds 15
"""

import argparse
import os
import statistics
import time

import numpy as np
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from fairpca import LinearErasure, MinMaxLossFairPCA
from fairpca._validation import check_sensitive_features
from fairpca.datasets import load_adult
from fairpca.metrics import reconstruction_error_gap


def cpu_seconds_per_call(fn, labels, calls):
    start = time.process_time()
    for _ in range(calls):
        fn(labels)
    return (time.process_time() - start) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sensitive", choices=["sex", "race"], default="sex")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (>= 7)")
    args = parser.parse_args()
    adult = load_adult(sensitive=args.sensitive)
    X = adult.data.select_dtypes("number").to_numpy(dtype=float)
    series = adult.sensitive
    strings = series.to_numpy(dtype=object)
    _, integers = np.unique(strings, return_inverse=True)
    labels = {
        "int (NumPy)": integers,
        "str (pandas, as loaded)": series,
        "str (NumPy object)": strings,
        "str (NumPy <U)": strings.astype(str),
    }
    pca = PCA(n_components=2).fit(X)
    n = X.shape[0]
    # (task, calls per timing): quick tasks are repeated so one timing is ~10 ms.
    tasks = {
        "LinearErasure.fit": (lambda s: LinearErasure().fit(X, sensitive_features=s), 3),
        "MinMaxLossFairPCA.fit": (
            lambda s: MinMaxLossFairPCA(n_components=2).fit(X, sensitive_features=s),
            1,
        ),
        "reconstruction_error_gap": (lambda s: reconstruction_error_gap(X, s, pca), 5),
        "encoder alone": (lambda s: check_sensitive_features(s, n), 20),
    }
    times = {(task, kind): [] for task in tasks for kind in labels}
    with threadpool_limits(limits=1):
        for fn, _ in tasks.values():  # warm-up: imports, caches
            for s in labels.values():
                fn(s)
        for _ in range(args.rounds):
            for task, (fn, calls) in tasks.items():
                for kind, s in labels.items():
                    times[task, kind].append(cpu_seconds_per_call(fn, s, calls))
    groups = check_sensitive_features(series, n)[0]
    print(
        f"Adult, X {X.shape[0]} x {X.shape[1]}, labels {args.sensitive} "
        f"({len(groups)} groups); CPU ms per call, one BLAS thread, "
        f"median of {args.rounds} interleaved rounds; ratio to int labels (target <= 1.2)"
    )
    print(f"{'task':26s} {'labels':24s} {'ms':>8s} {'ratio':>6s}")
    for task in tasks:
        base = statistics.median(times[task, "int (NumPy)"])
        for kind in labels:
            med = statistics.median(times[task, kind])
            print(f"{task:26s} {kind:24s} {1e3 * med:8.3f} {med / base:6.2f}")
    print("load average (1, 5, 15 min):", " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
