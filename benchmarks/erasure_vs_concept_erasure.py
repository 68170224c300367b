"""LinearErasure against concept-erasure's LEACE fitter: agreement, time, and svd_tol on COMPAS.

Run with one BLAS thread (CPU-time ratios, CONTRIBUTING.md "Benchmarks")::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 FAIRPCA_DATA=/path/to/data \\
        python benchmarks/erasure_vs_concept_erasure.py [--rows 1000000] [--repeat 5]

concept-erasure (``pip install concept-erasure``, which brings PyTorch) is a
benchmark-only comparison: without it the script says so and exits. Three parts:

1. COMPAS with its six race groups (features: sex, age, age category, the
   three juvenile counts, priors and charge degree, one-hot encoded and
   standardised on the training rows by ``fairpca.datasets.make_split``): the
   largest distance between two group means after each eraser, as a share of
   the largest before.
2. The edits at matched settings (concept-erasure without shrinkage and with a
   negligible ``svd_tol``; LinearErasure's defaults), and at concept-erasure's
   defaults against ``LinearErasure(shrinkage=rho, svd_tol=...)`` with its
   effective shrinkage coefficient and tolerance.
3. CPU time of the fit (moments and map) on Gaussian groups at ``--rows`` x 100,
   four groups: median of ``--repeat`` interleaved runs (A, B, A, B, ...).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from fairpca import LinearErasure


def _import_concept_erasure():
    try:
        import torch
        from concept_erasure import LeaceFitter
    except ImportError:
        print("concept-erasure is not installed (pip install concept-erasure): skipped.")
        sys.exit(0)
    torch.set_num_threads(1)
    return torch, LeaceFitter


def _one_hot(codes, k):
    Z = np.zeros((len(codes), k))
    Z[np.arange(len(codes)), codes] = 1.0
    return Z


def _ce_fit(torch, LeaceFitter, X, codes, k, **kwargs):
    x = torch.from_numpy(X)
    z = torch.from_numpy(_one_hot(codes, k))
    fitter = LeaceFitter(X.shape[1], k, dtype=torch.float64, **kwargs)
    fitter.update(x, z)
    return fitter, fitter.eraser


def _ce_apply(torch, eraser, X):
    return eraser(torch.from_numpy(X)).numpy()


def _largest_gap(X, codes, k):
    means = np.array([X[codes == a].mean(0) for a in range(k)])
    return max(np.linalg.norm(means[a] - means[b]) for a in range(k) for b in range(a))


def _effective_settings(torch, fitter, X, svd_tol=0.01):
    """concept-erasure's ``a S + b tr(S)/p I`` (S: divisor n) as fairpca's (rho, svd_tol)."""
    n, p = X.shape
    S = np.cov(X, rowvar=False, bias=True)
    shrunk = fitter.sigma_xx.numpy()
    off = ~np.eye(p, dtype=bool)
    a = float(np.sum(shrunk[off] * S[off]) / np.sum(S[off] ** 2))
    b = float((np.trace(shrunk) - a * np.trace(S)) / np.trace(S))
    # Its singular values are those of fairpca's times n/(n - 1)/sqrt(a + b).
    return b / (a + b), svd_tol * np.sqrt(a + b) * (n - 1) / n


def compas(torch, LeaceFitter):
    from fairpca.datasets import load_compas, make_split

    bunch = load_compas(sensitive="race")
    keep = ["sex", "age", "age_cat", "juv_fel_count", "juv_misd_count", "juv_other_count"]
    frame = bunch.data[[*keep, "priors_count", "c_charge_degree"]]
    split = make_split(frame, bunch.sensitive.to_numpy(), test_size=0.3, random_state=0)
    X = np.asarray(split.X_train, dtype=np.float64)
    groups, codes = np.unique(np.asarray(split.s_train), return_inverse=True)
    k = len(groups)
    before = _largest_gap(X, codes, k)
    sizes = {str(g): int(np.sum(codes == a)) for a, g in enumerate(groups)}
    print(f"COMPAS training rows {X.shape}, {k} race groups: {sizes}")
    fitter, eraser = _ce_fit(torch, LeaceFitter, X, codes, k)
    rows = {
        "concept-erasure defaults (shrinkage, svd_tol=0.01)": _ce_apply(torch, eraser, X),
        "LinearErasure() (fairpca default)": LinearErasure()
        .fit(X, sensitive_features=codes)
        .transform(X),
    }
    rho, tol = _effective_settings(torch, fitter, X)
    matched = LinearErasure(shrinkage=rho, svd_tol=tol).fit(X, sensitive_features=codes)
    rows[f"LinearErasure(shrinkage={rho:.4f}, svd_tol={tol:.5f})"] = matched.transform(X)
    print(f"  largest gap between two group means before: {before:.4f}")
    for name, Y in rows.items():
        print(f"  {name}: {100 * _largest_gap(Y, codes, k) / before:.1f} % of it left")
    print(
        "  concept-erasure defaults vs the matched LinearErasure: max |difference| "
        f"{np.abs(rows[list(rows)[0]] - rows[list(rows)[2]]).max():.2e}"
    )


def agreement(torch, LeaceFitter, n=20000, p=30, k=4, seed=0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, k, n)
    X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p)) + rng.normal(size=(k, p))[codes]
    _, eraser = _ce_fit(
        torch, LeaceFitter, X, codes, k, shrinkage=False, svd_tol=1e-12, constrain_cov_trace=False
    )
    ours = LinearErasure().fit(X, sensitive_features=codes).transform(X)
    scale = np.abs(X).max()
    print(
        f"Matched settings, {n} x {p}, {k} groups: max |difference| of the edits "
        f"{np.abs(_ce_apply(torch, eraser, X) - ours).max() / scale:.1e} (relative to max |X|)"
    )
    fitter, eraser = _ce_fit(torch, LeaceFitter, X, codes, k)
    rho, tol = _effective_settings(torch, fitter, X)
    ours = LinearErasure(shrinkage=rho, svd_tol=tol).fit(X, sensitive_features=codes)
    print(
        f"concept-erasure defaults vs LinearErasure(shrinkage={rho:.2e}, svd_tol={tol:.4f}): "
        f"{np.abs(_ce_apply(torch, eraser, X) - ours.transform(X)).max() / scale:.1e}"
    )


def timing(torch, LeaceFitter, n, p=100, k=4, repeat=5, seed=1):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, k, n)
    X = rng.normal(size=(n, p)) + rng.normal(size=(k, p))[codes]

    def ours():
        return LinearErasure().fit(X, sensitive_features=codes).erasure_

    def theirs():
        return _ce_fit(torch, LeaceFitter, X, codes, k, shrinkage=False, svd_tol=1e-12)[1]

    times = {"fairpca": [], "concept-erasure": []}
    for _ in range(repeat):
        for name, fn in (("fairpca", ours), ("concept-erasure", theirs)):
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    med = {name: float(np.median(t)) for name, t in times.items()}
    print(
        f"Fit at {n} x {p}, {k} groups, CPU seconds (median of {repeat} interleaved): "
        f"LinearErasure {med['fairpca']:.2f}, concept-erasure {med['concept-erasure']:.2f}; "
        f"ratio concept-erasure / fairpca = {med['concept-erasure'] / med['fairpca']:.2f}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-compas", action="store_true")
    args = parser.parse_args()
    torch, LeaceFitter = _import_concept_erasure()
    if not args.skip_compas:
        compas(torch, LeaceFitter)
    agreement(torch, LeaceFitter)
    timing(torch, LeaceFitter, args.rows, repeat=args.repeat)


if __name__ == "__main__":
    main()
