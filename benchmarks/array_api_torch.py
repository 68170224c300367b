"""MeanMatchingFairPCA fit + transform on torch (CPU) against NumPy, one thread (issue 44).

Run::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/array_api_torch.py [--rows 1000000] [--cols 100] [--repeat 5]

Both fits read the same float64 data (two groups) and give one answer; the
torch fit runs under ``array_api_dispatch=True`` (moment pass, the p x p
solve and transform in torch). Reported: CPU time (``time.process_time``,
one BLAS and torch thread) of each, median of ``--repeat`` interleaved runs
(NumPy, torch, NumPy, ...), the ratio torch / NumPy and the load average.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
import torch  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from fairpca import MeanMatchingFairPCA  # noqa: E402


def cpu_time(fn):
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.rows, args.cols))
    s = rng.integers(0, 2, size=args.rows)
    X[s == 1, 0] += 1.0
    X_t = torch.from_numpy(X)  # shares the memory: no copy in the timing

    def numpy_run():
        return MeanMatchingFairPCA(n_components=10).fit(X, sensitive_features=s).transform(X)

    def torch_run():
        with sklearn.config_context(array_api_dispatch=True):
            est = MeanMatchingFairPCA(n_components=10).fit(X_t, sensitive_features=s)
            return est.transform(X_t)

    times = {"numpy": [], "torch": []}
    with threadpool_limits(limits=1):
        for _ in range(args.repeat):
            t, Z_np = cpu_time(numpy_run)
            times["numpy"].append(t)
            t, Z_t = cpu_time(torch_run)
            times["torch"].append(t)
    diff = float(np.abs(Z_t.numpy() - Z_np).max())
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"X: {args.rows} x {args.cols} float64, two groups, n_components=10, one thread")
    print(f"torch {torch.__version__}, numpy {np.__version__}, sklearn {sklearn.__version__}")
    print(f"NumPy fit+transform: {med['numpy']:.2f} s CPU (median of {args.repeat})")
    print(f"torch fit+transform: {med['torch']:.2f} s CPU (median of {args.repeat})")
    print(f"ratio torch / NumPy: {med['torch'] / med['numpy']:.2f}")
    print(f"largest difference of the outputs: {diff:.1e}")
    print(f"load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
