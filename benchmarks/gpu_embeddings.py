"""LinearErasure and MeanMatchingFairPCA on GPU embeddings (torch CUDA, CuPy), issue 44.

Generates ``--n`` x ``--p`` float32 "embeddings" (Gaussian columns with a
decaying spectrum, each of ``--groups`` groups shifted by its own offset)
in chunks of ``--chunk`` rows on the device, from a seeded generator there,
and times under ``sklearn.set_config(array_api_dispatch=True)``:

- ``partial_fit`` of ``LinearErasure`` and ``MeanMatchingFairPCA`` over the
  chunks (labels as device arrays, the loop over a data loader);
- ``fit`` of both on the whole ``X``, and scikit-learn's
  ``PCA(svd_solver="covariance_eigh")`` on it, when ``X`` fits in half of
  the free device memory (``--whole auto``); the ratios fairpca / PCA
  are then printed. Otherwise each chunk is generated again for each
  ``partial_fit`` pass and a generation-only pass is timed beside them.

On CUDA the times are wall-clock with the device synchronised before and
after; on ``--device cpu`` (torch only) they are CPU times with one thread.
Each figure is the median of ``--repeat`` interleaved runs. fairpca's
moments and solve run in the device's most precise float type (float64 on
GPUs that have it, slower than float32 on most consumer GPUs); scikit-learn's
PCA computes in X's float32. The script also prints how far the
``partial_fit`` answers are from the ``fit`` ones (0 up to rounding).

The run this script is for (``X`` takes 30.7 GB: the ``fit`` and PCA rows
need a GPU with about 62 GB free, e.g. 80 GB; on a smaller one only the
``partial_fit`` rows are timed)::

    SCIPY_ARRAY_API=1 python benchmarks/gpu_embeddings.py --library torch --device cuda \\
        --n 10000000 --p 768 --chunk 100000 --repeat 3
    SCIPY_ARRAY_API=1 python benchmarks/gpu_embeddings.py --library cupy \\
        --n 10000000 --p 768 --chunk 100000 --repeat 3

Its figures are reported only from such a GPU run: the machine this was
written on has no GPU, and ran only the small CPU check
(``python benchmarks/gpu_embeddings.py --device cpu --n 20000 --chunk 5000``,
also run by ``tests/test_gpu_embeddings.py``), which says nothing of GPU speed.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.utils._array_api import move_to  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from fairpca import LinearErasure, MeanMatchingFairPCA  # noqa: E402


class Torch:
    """Generation, synchronisation and memory of torch on ``device``."""

    def __init__(self, device):
        import torch

        self.torch, self.device = torch, torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.name = f"torch {torch.__version__} on {self.device}"
        if not self.cuda:
            torch.set_num_threads(1)

    def chunk(self, index, rows, p, groups, seed):
        torch = self.torch
        gen = torch.Generator(device=self.device).manual_seed(seed * 1_000_003 + index)
        noise = torch.randn(rows, p, generator=gen, device=self.device, dtype=torch.float32)
        labels = torch.randint(0, groups, (rows,), generator=gen, device=self.device)
        return noise * self.scales + self.offsets[labels], labels

    def setup(self, p, groups, seed):
        torch = self.torch
        gen = torch.Generator(device=self.device).manual_seed(seed)
        self.scales = torch.linspace(2.0, 0.1, p, device=self.device)
        self.offsets = 0.5 * torch.randn(
            groups, p, generator=gen, device=self.device, dtype=torch.float32
        )

    def allocate(self, n, p):
        torch = self.torch
        X = torch.empty((n, p), dtype=torch.float32, device=self.device)
        return X, torch.empty(n, dtype=torch.int64, device=self.device)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def free_bytes(self):
        if self.cuda:
            return self.torch.cuda.mem_get_info()[0]
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class CuPy:
    """Generation, synchronisation and memory of CuPy on the current GPU."""

    def __init__(self, device):
        import cupy

        if device != "cuda":
            raise SystemExit("--library cupy runs on the GPU only (--device cuda).")
        self.cp, self.cuda = cupy, True
        self.name = f"cupy {cupy.__version__} on GPU {cupy.cuda.Device().id}"

    def chunk(self, index, rows, p, groups, seed):
        rng = self.cp.random.default_rng(seed * 1_000_003 + index)
        noise = rng.standard_normal((rows, p), dtype=self.cp.float32)
        labels = rng.integers(0, groups, rows)
        return noise * self.scales + self.offsets[labels], labels

    def setup(self, p, groups, seed):
        rng = self.cp.random.default_rng(seed)
        self.scales = self.cp.linspace(2.0, 0.1, p, dtype=self.cp.float32)
        self.offsets = 0.5 * rng.standard_normal((groups, p), dtype=self.cp.float32)

    def allocate(self, n, p):
        return self.cp.empty((n, p), dtype=self.cp.float32), self.cp.empty(n, dtype=self.cp.int64)

    def sync(self):
        self.cp.cuda.runtime.deviceSynchronize()

    def free_bytes(self):
        return self.cp.cuda.runtime.memGetInfo()[0]


def timed(lib, fn):
    """``(seconds, result)``: wall-clock between synchronisations on a GPU, else CPU time."""
    clock = time.perf_counter if lib.cuda else time.process_time
    lib.sync()
    start = clock()
    result = fn()
    lib.sync()
    return clock() - start, result


def host(a):
    return move_to(a, xp=np, device="cpu")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", choices=("torch", "cupy"), default="torch")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:1, ... or cpu (torch)")
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--p", type=int, default=768)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--n-components", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--whole", choices=("auto", "yes", "no"), default="auto")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    lib = (Torch if args.library == "torch" else CuPy)(args.device)
    lib.setup(args.p, args.groups, args.seed)
    n, p, c, d = args.n, args.p, min(args.chunk, args.n), args.n_components
    starts = range(0, n, c)
    whole = args.whole == "yes" or (args.whole == "auto" and 4 * n * p <= lib.free_bytes() // 2)

    def chunks():
        for i, start in enumerate(starts):
            yield lib.chunk(i, min(c, n - start), p, args.groups, args.seed)

    X = s = None
    if whole:  # filled chunk by chunk: no second copy of X
        X, s = lib.allocate(n, p)
        for start, (x, lab) in zip(starts, chunks(), strict=True):
            X[start : start + x.shape[0]], s[start : start + x.shape[0]] = x, lab

    def batches():
        if whole:
            return ((X[a : a + c], s[a : a + c]) for a in starts)
        return chunks()

    def streamed(cls, **params):
        def run():
            est = cls(**params)
            for x, lab in batches():
                est.partial_fit(x, sensitive_features=lab)
            return est

        return run

    runs = {
        "LinearErasure.partial_fit": streamed(LinearErasure),
        "MeanMatchingFairPCA.partial_fit": streamed(MeanMatchingFairPCA, n_components=d),
    }
    if whole:
        runs["LinearErasure.fit"] = lambda: LinearErasure().fit(X, sensitive_features=s)
        runs["MeanMatchingFairPCA.fit"] = lambda: MeanMatchingFairPCA(n_components=d).fit(
            X, sensitive_features=s
        )
        runs["PCA(covariance_eigh).fit"] = lambda: PCA(d, svd_solver="covariance_eigh").fit(X)
    else:
        runs["generation only"] = lambda: [x for x, _ in chunks()][-1]
    times = {name: [] for name in runs}
    fitted = {}
    with (
        threadpool_limits(limits=None if lib.cuda else 1),
        sklearn.config_context(array_api_dispatch=True),
    ):
        for _ in range(args.repeat):
            for name, run in runs.items():
                seconds, fitted[name] = timed(lib, run)
                times[name].append(seconds)
    med = {name: statistics.median(v) for name, v in times.items()}
    unit = "s wall (device synchronised)" if lib.cuda else "s CPU, one thread"
    print(f"{lib.name}; numpy {np.__version__}, scikit-learn {sklearn.__version__}")
    print(
        f"X: {n} x {p} float32 in chunks of {c}, {args.groups} groups, n_components={d}, "
        f"whole X held: {whole}; load average {os.getloadavg()[0]:.2f}"
    )
    for name, value in med.items():
        print(f"{name:34s} {value:9.3f} {unit} (median of {args.repeat})")
    if whole:
        for name in list(runs)[:4]:
            ratio = med[name] / med["PCA(covariance_eigh).fit"]
            print(f"ratio {name} / PCA: {ratio:.2f}")
        gap = np.abs(
            host(fitted["LinearErasure.partial_fit"].erasure_)
            - host(fitted["LinearErasure.fit"].erasure_)
        ).max()
        print(f"largest |erasure_ partial_fit - fit|: {gap:.1e}")
        V = host(fitted["MeanMatchingFairPCA.partial_fit"].components_)
        W = host(fitted["MeanMatchingFairPCA.fit"].components_)
        gap = np.abs(V.T @ V - W.T @ W).max()
        print(f"largest |projector partial_fit - fit| (MeanMatching): {gap:.1e}")


if __name__ == "__main__":
    main()
