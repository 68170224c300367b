"""StreamingFairPCA and FairKernelPCA at their defaults on COMPAS (issue 38).

COMPAS's numeric columns (7,214 rows, 17 columns after dropping the id, the
target, the all-missing and constant columns; two pairs of duplicated
columns, so the covariance has rank 15), standardised, six race groups; and
the same with one-hot ``c_charge_degree``, ``sex``, ``age_cat`` and
``c_charge_desc`` (461 columns). For StreamingFairPCA (d = 2, defaults): CPU
time, power iterations per phase, passes over the data, whether it
converged, the subspace distance ``||V V^T - V* V*^T||_F`` of its components
to ``solver="exact"`` and the largest loading of a component on the exact
unfair subspace (0 for a fair map). For FairKernelPCA (d = 2, defaults): CPU
time of the default fit on all rows (random features, above
``max_exact_samples``) and of the exact fit of the first 5,000 rows. One BLAS
thread.

Usage::

    FAIRPCA_DATA=../shared/data python benchmarks/streaming_compas.py
"""

import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from fairpca import FairKernelPCA, StreamingFairPCA

ONE_HOT = ["c_charge_degree", "sex", "age_cat", "c_charge_desc"]


def load(one_hot):
    """Standardised COMPAS features (numeric, optionally with one-hot columns) and race."""
    home = Path(os.environ.get("FAIRPCA_DATA", Path(__file__).parents[2] / "shared" / "data"))
    frame = pd.read_csv(home / "compas" / "compas-scores-two-years.csv")
    numeric = frame.select_dtypes("number").drop(columns=["id", "two_year_recid"])
    numeric = numeric.loc[:, numeric.notna().any()]
    numeric = numeric.fillna(numeric.median())
    X = numeric.loc[:, numeric.std() > 0].to_numpy(float)
    if one_hot:
        X = np.hstack([X, pd.get_dummies(frame[ONE_HOT].astype(str)).to_numpy(float)])
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, frame["race"].to_numpy()


def streaming_row(X, s):
    exact = StreamingFairPCA(2, solver="exact").fit(X, sensitive_features=s)
    start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = StreamingFairPCA(2, random_state=0).fit(X, sensitive_features=s)
    seconds = time.process_time() - start
    V, V_exact = est.components_.T, exact.components_.T
    distance = np.linalg.norm(V @ V.T - V_exact @ V_exact.T)
    leak = np.abs(est.components_ @ exact.unfair_subspace_).max()
    return (
        f"StreamingFairPCA  {seconds:6.2f} s  iterations {est.n_iter_}  passes {est.n_passes_}  "
        f"converged {est.converged_}  distance to exact {distance:.1e}  loading on N {leak:.1e}"
        f"  warnings {len(caught)}"
    )


def kernel_rows(X, s):
    rows = []
    for n in (len(X), 5000):
        start = time.process_time()
        est = FairKernelPCA(random_state=0).fit(X[:n], sensitive_features=s[:n])
        seconds = time.process_time() - start
        rows.append(f"FairKernelPCA     {seconds:6.2f} s  {n} rows, method {est.method_}")
    return rows


def main():
    with threadpool_limits(1):
        for one_hot in (False, True):
            X, s = load(one_hot)
            print(f"COMPAS {'numeric + one-hot' if one_hot else 'numeric'}: {X.shape}")
            print("  " + streaming_row(X, s))
            for row in kernel_rows(X, s):
                print("  " + row)


if __name__ == "__main__":
    main()
